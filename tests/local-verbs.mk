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
