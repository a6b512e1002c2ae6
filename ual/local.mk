# ual/: user access layer (providers, devices, objects, memory, events).
noinst_LTLIBRARIES += ual/libual.la
ual_libual_la_SOURCES = ual/ual.h ual/ual_private.h \
	ual/ual_context.c ual/ual_config.c ual/ual_loader.c ual/ual_device.c \
	ual/ual_objects.c ual/ual_mr.c ual/ual_cq.c ual/ual_events.c \
	ual/ual_enosys.c ual/ual_conn_ops.c ual/ual_engine_glib.c \
	ual/ual_hostsvc.c
ual_libual_la_LIBADD = kal/libkal.la $(GLIB_LIBS) $(PTHREAD_LIBS) $(LIBS)

# Builtin providers reach the helpers through the core library, once
# however many providers are built in.
# The provider helpers: for builtin providers, and for the IT-API event
# pump, which runs on the same progress engine (rnicpi_engine.h) as the
# providers. Loadable providers link their own copy and export nothing.
ual_libual_la_LIBADD += rnicpi/librnicpi_util.la
