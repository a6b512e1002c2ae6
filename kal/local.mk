# kal/: kernel access layer (netlink through libnl-3, memory pinning).
noinst_LTLIBRARIES += kal/libkal.la
kal_libkal_la_SOURCES = kal/kal.h kal/kal_int.h kal/kal_pin.c \
	kal/kal_nl.c kal/kal_link.c kal/kal_route.c kal/kal_steer.c \
	kal/kal_hostsvc.c
kal_libkal_la_CPPFLAGS = $(AM_CPPFLAGS) -DG_LOG_DOMAIN=\"hostrdma-kal\"
kal_libkal_la_CFLAGS = $(AM_CFLAGS) $(LIBNL_CFLAGS)
kal_libkal_la_LIBADD = $(LIBNL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)
