# tests/provider/: the test provider "test" (in-memory, loopback only) and
# broken variants for the loader tests. Never installed. Good modules land
# in tests/provider/.libs, broken ones in tests/provider/bad/.libs, so a
# test chooses what the loader sees through HOSTRDMA_PROVIDER_PATH.
TP_MODULE_LDFLAGS = -module -avoid-version -rpath /nowhere \
	-export-symbols-regex '^rnicpi_provider_entry$$'

check_LTLIBRARIES += tests/provider/testprov.la
TP_SOURCES = tests/provider/testprov.c tests/provider/testprov.h \
	tests/provider/testprov_mem.c tests/provider/testprov_qp.c

tests_provider_testprov_la_SOURCES = $(TP_SOURCES)
tests_provider_testprov_la_LDFLAGS = $(AM_LDFLAGS) $(TP_MODULE_LDFLAGS)
tests_provider_testprov_la_LIBADD = rnicpi/librnicpi_util.la $(PTHREAD_LIBS)

# The same provider under the name of an existing one: a duplicate.
check_LTLIBRARIES += tests/provider/bad/testprov_dup.la
tests_provider_bad_testprov_dup_la_SOURCES = $(TP_SOURCES)
tests_provider_bad_testprov_dup_la_LDFLAGS = $(AM_LDFLAGS) $(TP_MODULE_LDFLAGS)
tests_provider_bad_testprov_dup_la_LIBADD = rnicpi/librnicpi_util.la \
	$(PTHREAD_LIBS)

# A second good provider, "test2", for tests that need two devices.
check_LTLIBRARIES += tests/provider/extra/testprov2.la
tests_provider_extra_testprov2_la_SOURCES = $(TP_SOURCES)
tests_provider_extra_testprov2_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTP_PROVIDER_NAME=\"test2\"
tests_provider_extra_testprov2_la_LDFLAGS = $(AM_LDFLAGS) $(TP_MODULE_LDFLAGS)
tests_provider_extra_testprov2_la_LIBADD = rnicpi/librnicpi_util.la \
	$(PTHREAD_LIBS)

check_LTLIBRARIES += tests/provider/bad/testprov_badabi.la \
	tests/provider/bad/testprov_small.la \
	tests/provider/bad/testprov_nocreate.la \
	tests/provider/bad/testprov_noentry.la
tests_provider_bad_testprov_badabi_la_SOURCES = tests/provider/testprov_bad.c
tests_provider_bad_testprov_badabi_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_BAD_ABI
tests_provider_bad_testprov_badabi_la_LDFLAGS = $(AM_LDFLAGS) \
	$(TP_MODULE_LDFLAGS)
tests_provider_bad_testprov_small_la_SOURCES = tests/provider/testprov_bad.c
tests_provider_bad_testprov_small_la_CPPFLAGS = $(AM_CPPFLAGS) -DTP_SMALL
tests_provider_bad_testprov_small_la_LDFLAGS = $(AM_LDFLAGS) \
	$(TP_MODULE_LDFLAGS)
tests_provider_bad_testprov_nocreate_la_SOURCES = tests/provider/testprov_bad.c
tests_provider_bad_testprov_nocreate_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTP_NO_CREATE
tests_provider_bad_testprov_nocreate_la_LDFLAGS = $(AM_LDFLAGS) \
	$(TP_MODULE_LDFLAGS)
tests_provider_bad_testprov_noentry_la_SOURCES = tests/provider/testprov_bad.c
tests_provider_bad_testprov_noentry_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTP_NO_ENTRY
tests_provider_bad_testprov_noentry_la_LDFLAGS = $(AM_LDFLAGS) \
	-module -avoid-version -rpath /nowhere

# Makes devices whose ops lack the mandatory query_device and query_port,
# in a directory of its own so the other loader tests do not see it.
check_LTLIBRARIES += tests/provider/noquery/testprov_noquery.la
tests_provider_noquery_testprov_noquery_la_SOURCES = \
	tests/provider/testprov_bad.c
tests_provider_noquery_testprov_noquery_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTP_NO_QUERY
tests_provider_noquery_testprov_noquery_la_LDFLAGS = $(AM_LDFLAGS) \
	-module -avoid-version -rpath /nowhere \
	-export-symbols-regex '^(rnicpi_provider_entry|testprov_noquery_live)$$'

# The provider compiled as a built-in (rnicpi_builtin_test()), linked into
# the runner to prove ual's built-in registration path.
check_LTLIBRARIES += tests/provider/libtestprov_builtin.la
tests_provider_libtestprov_builtin_la_SOURCES = $(TP_SOURCES)
tests_provider_libtestprov_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) \
	-DRNICPI_BUILTIN

# The ual suites.
tests_check_all_SOURCES += tests/check_ual_loader.c tests/check_ual_objects.c \
	tests/check_ual_events.c tests/check_ual_engine.c tests/testutil_ual.c \
	tests/testutil_ual.h
tests_check_all_CFLAGS += \
	-DTESTPROV_DIR=\"$(abs_top_builddir)/tests/provider/.libs\" \
	-DTESTPROV_BAD_DIR=\"$(abs_top_builddir)/tests/provider/bad/.libs\" \
	-DTESTPROV_EXTRA_DIR=\"$(abs_top_builddir)/tests/provider/extra/.libs\" \
	-DTESTPROV_NOQUERY_DIR=\"$(abs_top_builddir)/tests/provider/noquery/.libs\"
tests_check_all_LDADD += tests/provider/libtestprov_builtin.la ual/libual.la \
	kal/libkal.la rnicpi/librnicpi_util.la $(LIBNL_LIBS)
