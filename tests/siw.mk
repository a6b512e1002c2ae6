# tests/siw.mk: the soft-iWARP provider's suites (siw-wire, siw-loopback,
# siw-hostile, siw-lifetime, siw-coalesce), driven through its rnicpi ops like the core,
# with a raw peer that speaks MPA by hand and then lies.
tests_check_all_SOURCES += tests/siw_harness.c tests/siw_harness.h \
	tests/siw_rawpeer.c tests/siw_rawpeer.h tests/check_siw_wire.c \
	tests/check_siw_loopback.c tests/check_siw_hostile.c \
	tests/check_siw_lifetime.c tests/check_siw_coalesce.c \
	tests/check_siw_park.c
tests_check_all_LDADD += vp/siw/libsiw_core.la rnicpi/librnicpi_util.la $(ISAL_LIBS)
