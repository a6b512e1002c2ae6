# cm/: connection manager (transport neutral; iWARP: TCP then MPA in the
# provider). Linked into libhostrdma with ual/ and kal/. ual/ual_conn.c (the
# ual.h connection entry points) is built here: it only forwards to cm/.
noinst_LTLIBRARIES += cm/libcm.la
cm_libcm_la_SOURCES = cm/cm.h cm/cm.c cm/cm_conn.c cm/cm_req.c cm/cm_iwarp.c \
	cm/ib_mad.h cm/ib_mad.c cm/cm_ib.h cm/cm_ib.c cm/cm_ib_gsi.c \
	cm/cm_ib_active.c cm/cm_ib_passive.c cm/cm_ib_close.c cm/cm_ib_sidr.c \
	ual/ual_conn.c
cm_libcm_la_LIBADD = $(GLIB_LIBS) $(PTHREAD_LIBS)
