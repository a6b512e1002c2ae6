# tests/: Check suites run by one runner, the test provider, header checks.
check_PROGRAMS += tests/check-all
tests_check_all_SOURCES = tests/check-all.c tests/suites.h tests/testutil.h \
	tests/testutil.c \
	tests/check_rnicpi_util.c \
	tests/check_kal_pin.c
tests_check_all_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_all_LDADD = rnicpi/librnicpi_util.la kal/libkal.la \
	$(CHECK_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

# Every public header compiles on its own, in C and in C++.
check_PROGRAMS += tests/header-c tests/header-cxx
tests_header_c_SOURCES = tests/header_c.c tests/header_c_it_api.c
tests_header_cxx_SOURCES = tests/header_cxx.cc tests/header_cxx_it_api.cc

TESTS += tests/check-all tests/header-c tests/header-cxx
include tests/provider/local.mk
