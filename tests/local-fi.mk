# tests/local-fi.mk: the libfabric provider (fi/) through libfabric's
# API (check-fi, soft-iWARP on lo) and libfabric's own programs
# (check-fi-tools.sh: fi_info, fi_pingpong in two processes).
if BUILD_FI
if PROV_SIW
check_PROGRAMS += tests/check-fi
tests_check_fi_SOURCES = tests/check_fi.c
tests_check_fi_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBFABRIC_CFLAGS) \
	-DFI_PROVIDER_DIR=\"$(abs_top_builddir)/fi/.libs\" \
	-DSIW_PROVIDER_DIR=\"$(abs_top_builddir)/vp/siw/.libs\" \
	-DRXE_PROVIDER_DIR=\"$(abs_top_builddir)/vp/rxe/.libs\"
tests_check_fi_LDADD = $(CHECK_LIBS) $(LIBFABRIC_LIBS)
TESTS += tests/check-fi tests/check-fi-tools.sh
# Each may open soft-RoCE (UDP 4791, one process per host): one after the
# other, after check-all and the conformance runner.
tests/check-fi-tools.log: tests/check-conformance.log
if PROV_RXE
TESTS += tests/check-fi-rxe.sh
tests/check-fi-rxe.log: tests/check-fi-tools.log
# Open MPI between two network namespaces over siw and rxe (skips without
# mpicc/mpirun or root); last in the chain.
TESTS += tests/check-mpi.sh
tests/check-mpi.log: tests/check-fi-rxe.log
endif
endif
endif
EXTRA_DIST += tests/check-fi-tools.sh tests/check-fi-rxe.sh tests/check-mpi.sh \
	tests/mpi/mpi_pingpong.c tests/mpi/mpi_allreduce.c \
	tests/mpi/mpi_onesided.c
EXTRA_DIST += tests/check-fabtests.sh
