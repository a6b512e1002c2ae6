# vp/verbs/: the kernel's RDMA devices (rdma-core's libibverbs and
# librdmacm) as hostrdma devices. Built when configure finds both
# (--enable-verbs=auto, the default), as a module by default: libhostrdma
# itself never links libibverbs (check-verbs-nolink below), so a host
# without rdma-core still runs the soft providers. --enable-verbs=builtin
# links it into the core, and so libibverbs with it.
if PROV_VERBS
noinst_LTLIBRARIES += vp/verbs/libverbs_core.la
vp_verbs_libverbs_core_la_SOURCES = vp/verbs/verbs.h vp/verbs/verbs_map.c \
	vp/verbs/verbs_main.c vp/verbs/verbs_verbs.c vp/verbs/verbs_cm.c \
	vp/verbs/verbs_cm_ops.c
vp_verbs_libverbs_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(VERBS_CFLAGS) \
	-DG_LOG_DOMAIN=\"hostrdma-verbs\"
vp_verbs_libverbs_core_la_LIBADD = $(VERBS_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)
endif

if PROV_VERBS_DL
providers_LTLIBRARIES += vp/verbs/verbs.la
vp_verbs_verbs_la_SOURCES = vp/verbs/verbs_entry.c
vp_verbs_verbs_la_CPPFLAGS = $(AM_CPPFLAGS) $(VERBS_CFLAGS)
vp_verbs_verbs_la_LIBADD = vp/verbs/libverbs_core.la rnicpi/librnicpi_util.la
vp_verbs_verbs_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^rnicpi_provider_entry$$'
endif

if PROV_VERBS_BUILTIN
noinst_LTLIBRARIES += vp/verbs/libverbs_builtin.la
vp_verbs_libverbs_builtin_la_SOURCES = vp/verbs/verbs_entry.c
vp_verbs_libverbs_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) $(VERBS_CFLAGS) \
	-DRNICPI_BUILTIN
vp_verbs_libverbs_builtin_la_LIBADD = vp/verbs/libverbs_core.la
ual_libual_la_LIBADD += vp/verbs/libverbs_builtin.la
endif

man_MANS += man/hostrdma-verbs.7
EXTRA_DIST += man/hostrdma-verbs.7
