# cm/: connection manager (transport neutral; iWARP: TCP then MPA in the
# provider), above ual/: itapi calls cm.h, cm calls ual.h and kal.h.
# Linked into libhostrdma with ual/ and kal/.
noinst_LTLIBRARIES += cm/libcm.la
cm_libcm_la_SOURCES = cm/cm.h cm/cm_private.h cm/cm.c cm/cm_conn.c cm/cm_req.c cm/cm_iwarp.c \
	cm/ib_mad.h cm/ib_mad.c cm/cm_ib.h cm/cm_ib.c cm/cm_ib_gsi.c \
	cm/cm_ib_active.c cm/cm_ib_passive.c cm/cm_ib_close.c cm/cm_ib_sidr.c \
	cm/cm_native.c cm/cm_native_sidr.c
cm_libcm_la_LIBADD = $(GLIB_LIBS) $(PTHREAD_LIBS)
