# vp/siw: soft-iWARP provider (RDMAP/DDP/MPA over TCP sockets).
#
# The code is built once as a convenience library the tests link, then
# wrapped as a loadable module (exporting only rnicpi_provider_entry) or as
# a builtin library for the core, as configure chose.
siw_sources = vp/siw/iwarp.h vp/siw/siw.h vp/siw/siw_main.c \
	vp/siw/siw_verbs.c vp/siw/siw_qp_verbs.c vp/siw/siw_qp.c \
	vp/siw/siw_cm.c vp/siw/siw_cm_resp.c vp/siw/siw_tx.c vp/siw/siw_rx.c vp/siw/siw_crc.c
siw_cppflags = $(AM_CPPFLAGS) -DG_LOG_DOMAIN=\"hostrdma-siw\"

noinst_LTLIBRARIES += vp/siw/libsiw_test.la
vp_siw_libsiw_test_la_SOURCES = $(siw_sources)
vp_siw_libsiw_test_la_CPPFLAGS = $(siw_cppflags)
vp_siw_libsiw_test_la_LIBADD = rnicpi/librnicpi_util.la $(ISAL_LIBS) \
	$(GLIB_LIBS) $(PTHREAD_LIBS)

if PROV_SIW_DL
providers_LTLIBRARIES += vp/siw/siw.la
vp_siw_siw_la_SOURCES = $(siw_sources)
vp_siw_siw_la_CPPFLAGS = $(siw_cppflags)
vp_siw_siw_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
vp_siw_siw_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^rnicpi_provider_entry$$'
vp_siw_siw_la_LIBADD = rnicpi/librnicpi_util.la $(ISAL_LIBS) \
	$(GLIB_LIBS) $(PTHREAD_LIBS)
endif

if PROV_SIW_BUILTIN
noinst_LTLIBRARIES += vp/siw/libsiw_builtin.la
vp_siw_libsiw_builtin_la_SOURCES = $(siw_sources)
vp_siw_libsiw_builtin_la_CPPFLAGS = $(siw_cppflags) -DRNICPI_BUILTIN
vp_siw_libsiw_builtin_la_LIBADD = rnicpi/librnicpi_util.la $(ISAL_LIBS)
endif

man_MANS += man/hostrdma-siw.7
EXTRA_DIST += man/hostrdma-siw.7
