# itapi/: IT-API v2.1, the application interface. it_api.h is installed as
# $(includedir)/it_api.h; libhostrdma is itapi + cm + ual + kal (and the
# built-in providers) exporting it_* only.
include_HEADERS += it_api.h

noinst_LTLIBRARIES += itapi/libitapi.la
itapi_libitapi_la_SOURCES = itapi/itapi_priv.h \
	itapi/itapi_status.c itapi/itapi_util.c itapi/itapi_ia.c \
	itapi/itapi_lmr.c itapi/itapi_rmr.c itapi/itapi_evq.c itapi/itapi_evd.c itapi/itapi_ep.c \
	itapi/itapi_cm.c itapi/itapi_listen.c itapi/itapi_post.c itapi/itapi_ud.c
# The library is written against the 2.1 names (it_rmr_param_t.linked).
itapi_libitapi_la_CPPFLAGS = $(AM_CPPFLAGS) -DITAPI_ENABLE_V21_BINDINGS
itapi_libitapi_la_LIBADD = $(GLIB_LIBS) $(PTHREAD_LIBS)

lib_LTLIBRARIES += libhostrdma.la
libhostrdma_la_SOURCES =
# An empty C source list: make automake link with the C compiler.
nodist_EXTRA_libhostrdma_la_SOURCES = itapi/dummy.c
# ual/libual.la carries kal/libkal.la already (a convenience library).
libhostrdma_la_LIBADD = itapi/libitapi.la cm/libcm.la ual/libual.la \
	$(GLIB_LIBS) $(LIBNL_LIBS) $(PTHREAD_LIBS) $(LIBS)
libhostrdma_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/itapi/libhostrdma.map
EXTRA_libhostrdma_la_DEPENDENCIES = itapi/libhostrdma.map
# Providers configured as built-ins come in through ual/libual.la (each
# provider's local.mk adds itself there).
EXTRA_DIST += itapi/libhostrdma.map

man_MANS += man/it_api.3
EXTRA_DIST += man/it_api.3 docs/IT-API.md

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = hostrdma.pc
EXTRA_DIST += hostrdma.pc.in
