# tests/: Check suites run by one runner, the test provider, header checks.
check_PROGRAMS += tests/check-all
tests_check_all_SOURCES = tests/check-all.c tests/suites.h tests/testutil.h \
	tests/testutil.c tests/nsutil.h tests/nsutil.c \
	tests/check_rnicpi_util.c \
	tests/check_kal_pin.c tests/kalnet.h tests/kalnet.c \
	tests/check_kal_nl.c tests/check_kal_route.c \
	tests/siw_harness.c tests/siw_harness.h tests/siw_rawpeer.c \
	tests/siw_rawpeer.h tests/check_siw_wire.c tests/check_siw_loopback.c \
	tests/check_siw_hostile.c
tests_check_all_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBNL_CFLAGS)
tests_check_all_LDADD = vp/siw/libsiw_test.la rnicpi/librnicpi_util.la \
	kal/libkal.la $(ISAL_LIBS) \
	$(CHECK_LIBS) $(LIBNL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

# Every public header compiles on its own, in C and in C++.
check_PROGRAMS += tests/header-c tests/header-cxx
tests_header_c_SOURCES = tests/header_c.c tests/header_c_it_api.c
tests_header_cxx_SOURCES = tests/header_cxx.cc tests/header_cxx_it_api.cc

# The IT-API suites: the library's convenience parts linked in (the suites
# reach into itapi/ internals for the test provider's "connected" QPs).
tests_check_all_SOURCES += tests/itapi_testutil.c tests/itapi_testutil.h \
	tests/check_itapi_ia.c tests/check_itapi_evd.c tests/check_itapi_cm.c \
	tests/check_itapi_mem.c tests/check_itapi_ep.c tests/check_itapi_post.c \
	tests/check_itapi_mp.c
tests_check_all_CFLAGS += -DITAPI_ENABLE_V21_BINDINGS \
	-DSIW_PROVIDER_DIR=\"$(abs_top_builddir)/vp/siw/.libs\" \
	-DITAPI_PEER=\"$(abs_top_builddir)/tests/itapi-peer\" \
	-DEXAMPLES_DIR=\"$(abs_top_builddir)/examples\" \
	-DIT_RPING=\"$(abs_top_builddir)/tests/interop/it-rping\"
tests_check_all_LDADD += itapi/libitapi.la cm/libcm.la ual/libual.la

# The other process of the itapi-mp suite: only it_api.h and libhostrdma.
check_PROGRAMS += tests/itapi-peer
tests_itapi_peer_SOURCES = tests/itapi_peer.c
tests_itapi_peer_LDADD = libhostrdma.la

TESTS += tests/check-all tests/header-c tests/header-cxx
EXTRA_DIST += tests/valgrind.supp
include tests/provider/local.mk
