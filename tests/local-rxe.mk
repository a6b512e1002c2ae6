# tests/local-rxe.mk: the soft-RoCE provider's suites (rxe-wire, rxe-loopback,
# rxe-memory, rxe-ud, rxe-faults, rxe-hostile), driven through its rnicpi
# ops like the core.
tests_check_all_SOURCES += tests/check_rxe_wire.c \
	tests/data/rxe_kernel_frames.h tests/testutil_rxe.c tests/testutil_rxe.h \
	tests/check_rxe_loopback.c tests/check_rxe_loopback_rc.c \
	tests/check_rxe_poll_rx.c \
	tests/check_rxe_memory.c \
	tests/check_rxe_ud.c tests/check_rxe_faults.c \
	tests/check_rxe_hostile.c
tests_check_all_LDADD += vp/rxe/librxe_core.la rnicpi/librnicpi_util.la

# Our side of the interop tests against the kernel's rdma_rxe
# (tests/interop/rxe.sh).
noinst_PROGRAMS += tests/interop/rxe-peer
tests_interop_rxe_peer_SOURCES = tests/interop/rxe-peer.c \
	tests/interop/rxe-perftest.c tests/interop/rxe-gsi.c \
	tests/interop/rxe-peer.h
tests_interop_rxe_peer_LDADD = vp/rxe/librxe_core.la rnicpi/librnicpi_util.la $(GLIB_LIBS) \
	$(PTHREAD_LIBS)
interop_programs += tests/interop/rxe-peer$(EXEEXT)
interop_scripts += rxe.sh

# The interop cases against the kernel's rdma_rxe in a qemu guest (root
# and qemu needed; the lab is tests/interop/lab; exit 77 = skipped).
EXTRA_DIST += tests/interop/rxe.sh
check-interop-rxe: tests/interop/rxe-peer$(EXEEXT)
	HOSTRDMA_BUILDDIR=$(abs_top_builddir) HOSTRDMA_SRCDIR=$(abs_top_srcdir) \
	$(SHELL) $(srcdir)/tests/interop/rxe.sh

# The host service's suite (kald): hostrdma-kald and the tools it serves.
tests_check_all_SOURCES += tests/check_kald.c
tests_check_all_CFLAGS += \
	-DKALD_PROG=\"$(abs_top_builddir)/kald/hostrdma-kald$(EXEEXT)\"
