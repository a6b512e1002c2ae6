# tests/interop: runs against the Linux kernel's RDMA stack in a VM
# (the lab in tests/interop/lab, rdmapeer). `make check-interop` runs every case and
# skips (77) when the lab cannot be had. Later issues add their cases to
# tests/interop/run.sh.
if PROV_SIW
noinst_PROGRAMS += tests/interop/siw-rping
tests_interop_siw_rping_SOURCES = tests/interop/siw-rping.c
tests_interop_siw_rping_LDADD = vp/siw/libsiw_core.la \
	rnicpi/librnicpi_util.la $(ISAL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)
interop_programs += tests/interop/siw-rping$(EXEEXT)

# rping's protocol over IT-API and libhostrdma only (the itapi cases).
noinst_PROGRAMS += tests/interop/it-rping
tests_interop_it_rping_SOURCES = tests/interop/it-rping.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_rping_LDADD = libhostrdma.la
interop_programs += tests/interop/it-rping$(EXEEXT)

# udaddy's exchange (SIDR, then UD datagrams) over IT-API (rxe.sh).
noinst_PROGRAMS += tests/interop/it-udaddy
tests_interop_it_udaddy_SOURCES = tests/interop/it-udaddy.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_udaddy_LDADD = libhostrdma.la
interop_programs += tests/interop/it-udaddy$(EXEEXT)

# Immediate data (hostrdma/it_ext.h) over RC: the kernel's rxe0 in a lab
# guest against our soft rxe (verbs.sh).
noinst_PROGRAMS += tests/interop/it-imm
tests_interop_it_imm_SOURCES = tests/interop/it-imm.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_imm_LDADD = libhostrdma.la
interop_programs += tests/interop/it-imm$(EXEEXT)
interop_scripts += run.sh
endif

EXTRA_DIST += tests/interop/run.sh tests/interop/check-interop.sh \
	tests/interop/labns.sh

# The lab itself: rdmapeer boots the kernel's siw and rdma_rxe in qemu
# guests (tests/interop/lab/README.md).
EXTRA_DIST += tests/interop/lab/README.md tests/interop/lab/rdmapeer \
	tests/interop/lab/selftest.sh \
	tests/interop/lab/guest/cmd-handler tests/interop/lab/guest/cmd-server \
	tests/interop/lab/guest/rc.sysinit tests/interop/lab/guest/siw-mode \
	tests/interop/lab/guest/wait-listen \
	tests/interop/lab/probes/icrc_check.py \
	tests/interop/lab/probes/mpa_probe.sh \
	tests/interop/lab/probes/roce_gsi_probe.py

# Every interop script, one lab each. Exit 77 from the driver means the lab
# cannot run on this machine (no qemu, not root): say
# so loudly and succeed, so that such a machine can still run the rest.
check-interop: $(interop_programs)
	@rc=0; HOSTRDMA_BUILDDIR="$(abs_top_builddir)" \
	INTEROP_SCRIPTS="$(interop_scripts)" \
	HOSTRDMA_SRCDIR="$(abs_top_srcdir)" \
	$(SHELL) $(top_srcdir)/tests/interop/check-interop.sh || rc=$$?; \
	if [ $$rc -eq 77 ]; then \
		echo "################################################"; \
		echo "# INTEROP TESTS SKIPPED: nothing could run here"; \
		echo "# (the SKIP lines above say why)."; \
		echo "################################################"; \
		exit 0; \
	fi; exit $$rc

.PHONY: check-interop
