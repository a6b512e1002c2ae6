# vp/siw: soft-iWARP provider (RDMAP/DDP/MPA over TCP sockets).
#
# The code goes into a convenience library the tests link; the loadable
# module (exporting only rnicpi_provider_entry) or the builtin library wraps
# it with the entry point, per configure's --enable-siw=dl|builtin|no.
if PROV_SIW
noinst_LTLIBRARIES += vp/siw/libsiw_core.la
vp_siw_libsiw_core_la_SOURCES = vp/siw/iwarp.h vp/siw/siw.h \
	vp/siw/siw_main.c vp/siw/siw_verbs.c vp/siw/siw_qp_verbs.c \
	vp/siw/siw_qp.c vp/siw/siw_park.c vp/siw/siw_cm.c vp/siw/siw_cm_resp.c \
	vp/siw/siw_tx.h vp/siw/siw_tx.c vp/siw/siw_tx_fpdu.c vp/siw/siw_tx_zc.c \
	vp/siw/siw_tx_pack.c \
	vp/siw/siw_rx.h vp/siw/siw_rx.c vp/siw/siw_rx_hdr.c \
	vp/siw/siw_crc.c vp/siw/siw_opcode.c vp/siw/siw_mw.c
vp_siw_libsiw_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DG_LOG_DOMAIN=\"hostrdma-siw\"
# Without the provider helpers: whoever links the core adds them once
# (a builtin siw and rxe both in libual would define them twice).
vp_siw_libsiw_core_la_LIBADD = $(ISAL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)
endif

if PROV_SIW_DL
providers_LTLIBRARIES += vp/siw/siw.la
vp_siw_siw_la_SOURCES = vp/siw/siw_entry.c
vp_siw_siw_la_LIBADD = vp/siw/libsiw_core.la rnicpi/librnicpi_util.la
vp_siw_siw_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^rnicpi_provider_entry$$'
endif

if PROV_SIW_BUILTIN
noinst_LTLIBRARIES += vp/siw/libsiw_builtin.la
vp_siw_libsiw_builtin_la_SOURCES = vp/siw/siw_entry.c
vp_siw_libsiw_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) -DRNICPI_BUILTIN
vp_siw_libsiw_builtin_la_LIBADD = vp/siw/libsiw_core.la
# Linked into the core, which calls rnicpi_builtin_siw() (see ual_loader.c).
ual_libual_la_LIBADD += vp/siw/libsiw_builtin.la
endif

man_MANS += man/hostrdma-siw.7
EXTRA_DIST += man/hostrdma-siw.7
