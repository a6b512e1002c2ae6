# examples/: a complete IT-API client and server (each under 200 lines),
# built by `make check` and run against each other by the itapi-mp suite.
check_PROGRAMS += examples/it_server examples/it_client
examples_it_server_SOURCES = examples/it_server.c
examples_it_server_LDADD = libhostrdma.la
examples_it_client_SOURCES = examples/it_client.c
examples_it_client_LDADD = libhostrdma.la

# Their sources are installed for the user of an installed hostrdma, as a
# Debian -doc package ships them: $(docdir)/examples, and the skeleton
# provider with its Makefile in examples/skeleton-provider there
# (docs/PROVIDERS.md); each builds against the installed headers with
# pkg-config, as its opening comment says.
examplesdocdir = $(docdir)/examples
dist_examplesdoc_DATA = examples/it_client.c examples/it_server.c
skeletondocdir = $(docdir)/examples/skeleton-provider
dist_skeletondoc_DATA = examples/skeleton-provider/skel.c \
	examples/skeleton-provider/Makefile
