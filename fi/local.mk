# fi/: the libfabric provider "hostrdma" (libhostrdma-fi.so), an IT-API
# application: it includes it_api.h and libfabric's headers only.
# libfabric loads lib*-fi.so from $(libdir)/libfabric, or from
# FI_PROVIDER_PATH (build/fi/.libs in the build tree).
if BUILD_FI
fiprovdir = $(libdir)/libfabric
fiprov_LTLIBRARIES = fi/libhostrdma-fi.la
fi_libhostrdma_fi_la_SOURCES = fi/hfi.h fi/fi_prov.c fi/fi_domain.c \
	fi/fi_eq.c fi/fi_ep.c fi/fi_cntr.c
fi_libhostrdma_fi_la_CFLAGS = $(AM_CFLAGS) $(LIBFABRIC_CFLAGS)
fi_libhostrdma_fi_la_LIBADD = libhostrdma.la $(LIBFABRIC_LIBS) $(GLIB_LIBS)
fi_libhostrdma_fi_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-shared -export-symbols-regex '^fi_prov_ini$$'
man_MANS += man/fi_hostrdma.7
endif
EXTRA_DIST += man/fi_hostrdma.7
