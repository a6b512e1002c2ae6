# examples/: a complete IT-API client and server (each under 200 lines),
# built by `make check` and run against each other by the itapi-mp suite.
check_PROGRAMS += examples/it_server examples/it_client
examples_it_server_SOURCES = examples/it_server.c
examples_it_server_LDADD = libhostrdma.la
examples_it_client_SOURCES = examples/it_client.c
examples_it_client_LDADD = libhostrdma.la
