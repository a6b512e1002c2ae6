# tests/interop: runs against the Linux kernel's RDMA stack in a VM
# (../shared/interop, rdmapeer). `make check-interop` runs every case and
# skips (77) when the lab cannot be had. Later issues add their cases to
# tests/interop/run.sh.
noinst_PROGRAMS += tests/interop/siw-rping
tests_interop_siw_rping_SOURCES = tests/interop/siw-rping.c
tests_interop_siw_rping_LDADD = vp/siw/libsiw_test.la \
	rnicpi/librnicpi_util.la $(ISAL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

# rping's protocol over IT-API and libhostrdma only (the itapi cases).
noinst_PROGRAMS += tests/interop/it-rping
tests_interop_it_rping_SOURCES = tests/interop/it-rping.c
tests_interop_it_rping_LDADD = libhostrdma.la

EXTRA_DIST += tests/interop/run.sh

check-interop: tests/interop/siw-rping tests/interop/it-rping
	HOSTRDMA_BUILDDIR="$(abs_top_builddir)" \
	HOSTRDMA_SRCDIR="$(abs_top_srcdir)" \
	$(SHELL) $(top_srcdir)/tests/interop/run.sh

.PHONY: check-interop
