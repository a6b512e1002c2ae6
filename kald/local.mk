# kald/: hostrdma-kald, the host service (docs/ARCHITECTURE.md): a program
# over kal/, which holds its protocol and the client side processes use.
sbin_PROGRAMS = kald/hostrdma-kald
kald_hostrdma_kald_SOURCES = kald/kald.c kald/kald.h kald/kald_port.c \
	kald/kald_gsi.c kald/kald_keeper.c
kald_hostrdma_kald_CPPFLAGS = $(AM_CPPFLAGS) -DG_LOG_DOMAIN=\"hostrdma-kald\"
kald_hostrdma_kald_LDADD = kal/libkal.la vp/rxe/librxe_icrc.la $(GLIB_LIBS)
man_MANS += man/hostrdma-kald.8
EXTRA_DIST += man/hostrdma-kald.8 kald/hostrdma-kald.service.in \
	kald/hostrdma-kald.socket

# The systemd units: a service and its socket activation. Installed where
# pkg-config's systemd names (under our prefix), or not at all
# (--with-systemdsystemunitdir=no; then see hostrdma-kald(8)).
kald/hostrdma-kald.service: kald/hostrdma-kald.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) kald && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' \
		$(srcdir)/kald/hostrdma-kald.service.in > $@
CLEANFILES += kald/hostrdma-kald.service
if HAVE_SYSTEMD_UNITDIR
systemdsystemunit_DATA = kald/hostrdma-kald.service \
	kald/hostrdma-kald.socket
endif
noinst_DATA = kald/hostrdma-kald.service
