# rnicpi/: the provider interface (installed for vendors) and the helpers
# the software providers link statically.
pkginclude_HEADERS += rnicpi/rnicpi.h

noinst_LTLIBRARIES += rnicpi/librnicpi_util.la
rnicpi_librnicpi_util_la_SOURCES = rnicpi/rnicpi_util.c rnicpi/rnicpi_util.h \
	rnicpi/rnicpi_engine.c rnicpi/rnicpi_engine.h
