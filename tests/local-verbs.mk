# tests/local-verbs.mk: the verbs provider's suite (verbs-map: its tables
# and what it does without a device) and the check that libhostrdma
# itself does not need libibverbs.
tests_check_all_SOURCES += tests/check_verbs_map.c
tests_check_all_CFLAGS += $(VERBS_CFLAGS)
tests_check_all_LDADD += vp/verbs/libverbs_core.la rnicpi/librnicpi_util.la

if PROV_VERBS_DL
TESTS += tests/check-verbs-nolink.sh
endif
EXTRA_DIST += tests/check-verbs-nolink.sh

# hostrdma inside the lab's guests, over the kernel's siw0 and rxe0
# (tests/interop/verbs.sh; root and qemu needed; exit 77 = skipped).
interop_scripts += verbs.sh
# IT-API objects on a verbs device, run inside the guest by verbs.sh.
noinst_PROGRAMS += tests/interop/it-verbs-objects
tests_interop_it_verbs_objects_SOURCES = tests/interop/it-verbs-objects.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_verbs_objects_LDADD = libhostrdma.la
interop_programs += tests/interop/it-verbs-objects$(EXEEXT)
# The IT-API connection functions and events, two guests (verbs.sh).
noinst_PROGRAMS += tests/interop/it-verbs-cm
tests_interop_it_verbs_cm_SOURCES = tests/interop/it-verbs-cm.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_verbs_cm_LDADD = libhostrdma.la
interop_programs += tests/interop/it-verbs-cm$(EXEEXT)
EXTRA_DIST += tests/interop/verbs.sh
check-interop-verbs:
	HOSTRDMA_BUILDDIR=$(abs_top_builddir) HOSTRDMA_SRCDIR=$(abs_top_srcdir) \
	$(SHELL) $(srcdir)/tests/interop/verbs.sh
# UD datagrams between two IT-API processes (verbs.sh, rxe0).
noinst_PROGRAMS += tests/interop/it-verbs-ud
tests_interop_it_verbs_ud_SOURCES = tests/interop/it-verbs-ud.c \
	tests/interop/it_util.c tests/interop/it_util.h
tests_interop_it_verbs_ud_LDADD = libhostrdma.la
interop_programs += tests/interop/it-verbs-ud$(EXEEXT)
