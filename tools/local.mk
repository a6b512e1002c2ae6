# tools/: command-line programs. They are IT-API programs: they link
# libhostrdma and include it_api.h only.
noinst_LTLIBRARIES += tools/libtools.la
tools_libtools_la_SOURCES = tools/tool_util.c tools/tool_util.h \
	tools/ping_wire.c tools/ping_wire.h tools/perf_wire.c \
	tools/perf.h tools/perf_priv.h tools/perf_conn.c tools/perf_loop.c \
	tools/perf_report.c tools/perf_rcm.c tools/perf_loopback.c
tools_libtools_la_CFLAGS = $(AM_CFLAGS) $(JSON_GLIB_CFLAGS)
tools_libtools_la_LIBADD = libhostrdma.la $(JSON_GLIB_LIBS) $(GLIB_LIBS) \
	$(PTHREAD_LIBS)

bin_PROGRAMS += tools/hostrdma-perf
tools_hostrdma_perf_SOURCES = tools/hostrdma-perf.c
tools_hostrdma_perf_LDADD = tools/libtools.la

bin_PROGRAMS += tools/hostrdma-info
tools_hostrdma_info_SOURCES = tools/hostrdma-info.c
tools_hostrdma_info_CFLAGS = $(AM_CFLAGS) $(JSON_GLIB_CFLAGS)
tools_hostrdma_info_LDADD = tools/libtools.la

bin_PROGRAMS += tools/hostrdma-ping
tools_hostrdma_ping_SOURCES = tools/hostrdma-ping.c
tools_hostrdma_ping_LDADD = tools/libtools.la

bin_PROGRAMS += tools/hostrdma-demo
tools_hostrdma_demo_SOURCES = tools/hostrdma-demo.c
tools_hostrdma_demo_LDADD = tools/libtools.la
tools_man = man/hostrdma-demo.1 man/hostrdma-info.1 man/hostrdma-perf.1 \
	man/hostrdma-ping.1 man/hostrdma.7
man_MANS += $(tools_man)
EXTRA_DIST += $(tools_man)
