# tests/local-tools.mk: the tools suite runs the programs of tools/ (built by
# `make all`): their command lines always, and with a provider built over
# soft-iWARP on lo, parsing their JSON with json-glib; and it links the
# tools' checks of their peer's messages, which need no IT-API.
tests_check_all_SOURCES += tests/check_tools.c tests/check_tools.h \
	tests/check_tools_siw.c tests/check_tools_rxe.c tests/check_tools_cli.c tools/ping_wire.c \
	tools/perf_wire.c
tests_check_all_CFLAGS += $(JSON_GLIB_CFLAGS) \
	-DTOOLS_DIR=\"$(abs_top_builddir)/tools\" \
	-DMAN_DIR=\"$(abs_top_srcdir)/man\" \
	-DSCALE_PROG=\"$(abs_top_builddir)/tests/scale/itapi-scale\"
tests_check_all_LDADD += $(JSON_GLIB_LIBS)

# The provider kit: make install, the installed rnicpi headers and helper
# library, the skeleton provider built out of tree (docs/PROVIDERS.md).
TESTS += tests/check-provider-kit.sh
EXTRA_DIST += tests/check-provider-kit.sh \
	examples/skeleton-provider/skel.c examples/skeleton-provider/Makefile

# The conformance runner for provider authors: an IT-API application,
# installed; Check is linked statically (Debian ships only libcheck*.a).
bin_PROGRAMS += tests/conformance/hostrdma-conformance
tests_conformance_hostrdma_conformance_SOURCES = \
	tests/conformance/hostrdma-conformance.c \
	tests/conformance/conf_itapi.c tests/conformance/conf_itapi.h \
	tests/check_itapi_cm.c tests/check_itapi_cm_sockets.c \
	tests/check_itapi_atomic.c tests/check_itapi_ep.c \
	tests/check_itapi_post.c tests/check_itapi_evd.c \
	tests/check_itapi_evd_dto.c tests/check_itapi_mem.c \
	tests/check_itapi_ud_rxe.c tests/check_itapi_imm.c tests/testutil.c
# HOSTRDMA_CONFORMANCE_RUNNER: what a suite's file keeps from the runner
# (check_itapi_ud_rxe.c's raw peer, which builds packets with vp/rxe's
# ICRC).
tests_conformance_hostrdma_conformance_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) \
	-DITAPI_ENABLE_V21_BINDINGS -DHOSTRDMA_CONFORMANCE_RUNNER
tests_conformance_hostrdma_conformance_LDADD = libhostrdma.la $(CHECK_LIBS) \
	$(GLIB_LIBS) $(PTHREAD_LIBS)
TESTS += tests/check-conformance.sh
# Its rxe_lo run binds UDP 4791 like check-all's soft-RoCE suites: after
# them (one process per host owns the port).
tests/check-conformance.log: tests/check-all.log
EXTRA_DIST += tests/check-conformance.sh docs/PROVIDERS.md
man_MANS += man/hostrdma-conformance.1
EXTRA_DIST += man/hostrdma-conformance.1
