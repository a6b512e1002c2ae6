# tests/scale: many connections to one listener through IT-API
# (itapi-scale). `make check` runs a short pass on each soft device;
# `make check-scale` the long one (10 000 connections, 100 000 cycles),
# which prints the figures docs/SCALE.md keeps.
check_PROGRAMS += tests/scale/itapi-scale
tests_scale_itapi_scale_SOURCES = tests/scale/itapi_scale.c
tests_scale_itapi_scale_LDADD = libhostrdma.la
EXTRA_DIST += tests/scale/check-scale.sh docs/SCALE.md

check-scale: tests/scale/itapi-scale$(EXEEXT) all
	BUILD_DIR=$(abs_top_builddir) $(srcdir)/tests/scale/check-scale.sh
.PHONY: check-scale
