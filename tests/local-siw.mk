# tests/local-siw.mk: the soft-iWARP provider's suites (siw-wire, siw-loopback,
# siw-hostile, siw-lifetime, siw-coalesce, siw-park), driven through its rnicpi ops like the core,
# with a raw peer that speaks MPA by hand and then lies.
tests_check_all_SOURCES += tests/testutil_siw.c tests/testutil_siw.h \
	tests/testutil_siw_rawpeer.c tests/testutil_siw_rawpeer.h \
	tests/check_siw_wire.c tests/check_siw_loopback.c \
	tests/check_siw_loopback_progress.c tests/check_siw_windows.c tests/check_siw_hostile.c \
	tests/check_siw_hostile_read.c tests/check_siw_hostile_stream.c \
	tests/check_siw_hostile.h \
	tests/check_siw_lifetime.c tests/check_siw_coalesce.c \
	tests/check_siw_park.c tests/check_siw_rq.c
tests_check_all_LDADD += vp/siw/libsiw_core.la rnicpi/librnicpi_util.la $(ISAL_LIBS)
