# rnicpi/: the provider interface (installed for vendors) and the helpers
# the software providers link statically.
pkginclude_HEADERS += rnicpi/rnicpi.h

noinst_LTLIBRARIES += rnicpi/librnicpi_util.la
rnicpi_librnicpi_util_la_SOURCES = rnicpi/rnicpi_util.c rnicpi/rnicpi_util.h \
	rnicpi/rnicpi_engine.c rnicpi/rnicpi_engine.h

# The helpers for out-of-tree providers (docs/PROVIDERS.md): a static
# library, position-independent so it links into a provider module, with
# hidden symbols so the module keeps exporting only its entry point. The
# progress engine (rnicpi_engine.h) stays internal.
pkginclude_HEADERS += rnicpi/rnicpi_util.h
lib_LIBRARIES = rnicpi/libhostrdma-rnicpi-util.a
rnicpi_libhostrdma_rnicpi_util_a_SOURCES = rnicpi/rnicpi_util.c \
	rnicpi/rnicpi_util.h
rnicpi_libhostrdma_rnicpi_util_a_CFLAGS = $(AM_CFLAGS) -fPIC \
	-fvisibility=hidden
