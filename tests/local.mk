# tests/: Check suites run by one runner, the test provider, header checks.
check_PROGRAMS += tests/check-all
tests_check_all_SOURCES = tests/check-all.c tests/suites.h tests/testutil.h \
	tests/testutil.c tests/testutil_ns.h tests/testutil_ns.c \
	tests/check_rnicpi_util.c tests/check_rnicpi_engine.c \
	tests/check_kal_pin.c tests/testutil_kal.h tests/testutil_kal.c \
	tests/check_kal_nl.c tests/check_kal_route.c tests/check_kal_steer.c
tests_check_all_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LIBNL_CFLAGS)
tests_check_all_LDADD = rnicpi/librnicpi_util.la kal/libkal.la \
	$(CHECK_LIBS) $(LIBNL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

# Every public header compiles on its own, in C and in C++.
check_PROGRAMS += tests/header-c tests/header-cxx
tests_header_c_SOURCES = tests/header_c.c tests/header_c_it_api.c
tests_header_cxx_SOURCES = tests/header_cxx.cc tests/header_cxx_it_api.cc

TESTS += tests/check-all tests/header-c tests/header-cxx

# The shape of the house: includes follow the layer arrows and
# docs/LAYERS.md draws them all (tests/layers.py, docs/ARCHITECTURE.md).
TESTS += tests/check-layers.sh
EXTRA_DIST += tests/check-layers.sh tests/layers.py tests/layers-allow.txt \
	docs/LAYERS.md

# Redraw docs/LAYERS.md from the includes after an arrow changed.
layers-picture:
	$(AM_V_GEN)python3 $(srcdir)/tests/layers.py --write-picture
.PHONY: layers-picture

# The unit tests under valgrind: in-process (CK_FORK=no) so memcheck sees
# every test, zero errors and zero leaks or the target fails.
VALGRIND_FLAGS = --tool=memcheck --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	--error-exitcode=1 --num-callers=30 \
	--suppressions=$(GLIB_VALGRIND_SUPP) \
	--suppressions=$(srcdir)/tests/valgrind.supp
EXTRA_DIST += tests/valgrind.supp

check-valgrind: $(check_PROGRAMS) $(check_LTLIBRARIES)
	$(AM_V_at)env CK_FORK=no CK_DEFAULT_TIMEOUT=1800 \
		G_SLICE=always-malloc G_DEBUG=gc-friendly \
		$(AM_TESTS_ENVIRONMENT) \
		$(LIBTOOL) --mode=execute valgrind $(VALGRIND_FLAGS) \
		tests/check-all
.PHONY: check-valgrind

include tests/provider/local.mk
if PROV_SIW
include tests/local-siw.mk
include tests/local-itapi.mk
endif
include tests/local-tools.mk
if PROV_RXE
include tests/local-rxe.mk
endif
if PROV_VERBS
include tests/local-verbs.mk
endif

# The same tests in a build configured with --enable-sanitizers (ASan and
# UBSan): any report fails the run. Leaks are left to check-valgrind
# (the helper programs the tests start exit without freeing); ASan's own
# SEGV handler stays off so that a test expecting a child killed by
# SIGSEGV (a MADV_DONTFORK page) sees exactly that.
# The packaging tests (check-install, check-provider-kit.sh) build
# programs outside this tree against the installed library, without the
# sanitizers' flags, and check-fi-tools.sh has libfabric's own programs
# (fi_info, fi_pingpong, built without ASan) load the sanitized provider,
# which ASan refuses, as do check-mpi.sh's MPI programs: they are the
# plain and clang builds' to run.
check-sanitizers:
	$(AM_V_at)env ASAN_OPTIONS=detect_leaks=0:handle_segv=0:abort_on_error=0 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(MAKE) $(AM_MAKEFLAGS) check \
		TESTS="$(filter-out tests/check-install tests/check-provider-kit.sh tests/check-fi-tools.sh tests/check-mpi.sh,$(TESTS))"
.PHONY: check-sanitizers

include tests/local-install.mk
