# tests/local-itapi.mk: the IT-API suites (itapi-ia ... itapi-mp), which
# run over soft-iWARP on lo and over the test provider, with the library's
# convenience parts linked in (the suites reach into itapi/ internals for
# the test provider's "connected" QPs), and the peer process of the
# two-process suite.
tests_check_all_SOURCES += tests/testutil_itapi.c tests/testutil_itapi.h \
	tests/testutil_itapi_pair.c tests/testutil_itapi_pair.h \
	tests/check_itapi_ia.c tests/check_itapi_evd.c \
	tests/check_itapi_evd_dto.c tests/check_itapi_evd.h tests/check_itapi_cm.c \
	tests/check_itapi_cm_sockets.c tests/check_itapi_cm.h \
	tests/check_itapi_mem.c tests/check_itapi_keys.c \
	tests/check_itapi_ep.c tests/check_itapi_post.c \
	tests/check_itapi_dto_errors.c \
	tests/check_itapi_mp.c tests/check_itapi_cm_ib.c tests/check_itapi_atomic.c \
	tests/check_itapi_ud_rxe.c tests/check_itapi_imm.c \
	tests/check_cm_mad.c tests/data/ib_cm_kernel_mads.h \
	tests/data/ib_cm_kernel_sidr.h
tests_check_all_CFLAGS += -DITAPI_ENABLE_V21_BINDINGS \
	-DSIW_PROVIDER_DIR=\"$(abs_top_builddir)/vp/siw/.libs\" \
	-DRXE_PROVIDER_DIR=\"$(abs_top_builddir)/vp/rxe/.libs\" \
	-DITAPI_PEER=\"$(abs_top_builddir)/tests/itapi-peer\" \
	-DEXAMPLES_DIR=\"$(abs_top_builddir)/examples\" \
	-DIT_RPING=\"$(abs_top_builddir)/tests/interop/it-rping\"
tests_check_all_LDADD += itapi/libitapi.la cm/libcm.la ual/libual.la

# The other process of the itapi-mp suite: only it_api.h and libhostrdma.
check_PROGRAMS += tests/itapi-peer
tests_itapi_peer_SOURCES = tests/itapi-peer.c
tests_itapi_peer_LDADD = libhostrdma.la
