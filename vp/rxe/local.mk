# vp/rxe/: the soft-RoCE verbs provider (InfiniBand transport over UDP
# port 4791, wire compatible with Linux rdma_rxe). The code goes into a
# convenience library the tests link; the module or the builtin library
# wraps it per configure's choice (--enable-rxe=dl|builtin|no).
# The ICRC (and the header accessors it reads) as a library of its own:
# the provider links it, and so does hostrdma-kald, which answers a REQ
# for a service ID nobody holds with a REJ it frames itself.
noinst_LTLIBRARIES += vp/rxe/librxe_icrc.la
vp_rxe_librxe_icrc_la_SOURCES = vp/rxe/ib_hdr.h vp/rxe/rxe_icrc.h \
	vp/rxe/rxe_icrc.c
vp_rxe_librxe_icrc_la_LIBADD = $(RXE_CRC_LIBS) $(PTHREAD_LIBS)

if PROV_RXE
noinst_LTLIBRARIES += vp/rxe/librxe_core.la
vp_rxe_librxe_core_la_SOURCES = \
	vp/rxe/ib_hdr.h vp/rxe/rxe.h vp/rxe/rxe_icrc.h \
	vp/rxe/rxe_opcode.c vp/rxe/rxe_main.c \
	vp/rxe/rxe_verbs.c vp/rxe/rxe_qp.c vp/rxe/rxe_net.c \
	vp/rxe/rxe_net.h vp/rxe/rxe_poll_rx.c vp/rxe/rxe_tx.c \
	vp/rxe/rxe_recv.c vp/rxe/rxe_req.c vp/rxe/rxe_comp.c \
	vp/rxe/rxe_resp.c vp/rxe/rxe_mw.c
vp_rxe_librxe_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DG_LOG_DOMAIN=\"hostrdma-rxe\"
# Without the provider helpers: whoever links the core adds them once.
vp_rxe_librxe_core_la_LIBADD = vp/rxe/librxe_icrc.la $(GLIB_LIBS) \
	$(PTHREAD_LIBS)
endif

if PROV_RXE_DL
providers_LTLIBRARIES += vp/rxe/rxe.la
vp_rxe_rxe_la_SOURCES = vp/rxe/rxe_entry.c
vp_rxe_rxe_la_LIBADD = vp/rxe/librxe_core.la rnicpi/librnicpi_util.la
vp_rxe_rxe_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-export-symbols-regex '^rnicpi_provider_entry$$'
endif

if PROV_RXE_BUILTIN
noinst_LTLIBRARIES += vp/rxe/librxe_builtin.la
vp_rxe_librxe_builtin_la_SOURCES = vp/rxe/rxe_entry.c
vp_rxe_librxe_builtin_la_CPPFLAGS = $(AM_CPPFLAGS) -DRNICPI_BUILTIN
vp_rxe_librxe_builtin_la_LIBADD = vp/rxe/librxe_core.la
# Linked into the core, which calls rnicpi_builtin_rxe() (see ual_loader.c).
ual_libual_la_LIBADD += vp/rxe/librxe_builtin.la
endif

man_MANS += man/hostrdma-rxe.7
EXTRA_DIST += man/hostrdma-rxe.7
