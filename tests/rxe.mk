# tests/rxe.mk: the soft-RoCE provider's suites (rxe-wire, rxe-loopback,
# rxe-faults, rxe-hostile), driven through its rnicpi ops like the core.
tests_check_all_SOURCES += tests/check_rxe_wire.c \
	tests/data/rxe_kernel_frames.h tests/rxe_testlib.c tests/rxe_testlib.h \
	tests/check_rxe_loopback.c tests/check_rxe_faults.c \
	tests/check_rxe_hostile.c
tests_check_all_LDADD += vp/rxe/librxe_core.la
