# tools/: command-line programs.
bin_PROGRAMS += tools/hostrdma-demo
tools_hostrdma_demo_SOURCES = tools/hostrdma-demo.c
tools_hostrdma_demo_CFLAGS = $(AM_CFLAGS) $(JSON_GLIB_CFLAGS)
tools_hostrdma_demo_LDADD = ual/libual.la kal/libkal.la $(JSON_GLIB_LIBS) \
	$(GLIB_LIBS)
man_MANS += man/hostrdma-demo.1 man/hostrdma.7
EXTRA_DIST += man/hostrdma-demo.1 man/hostrdma.7
