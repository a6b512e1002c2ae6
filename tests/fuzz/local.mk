# tests/fuzz: a fuzz target for every parser of remote bytes
# (docs/FUZZING.md). With --enable-fuzzing (clang) they are libFuzzer
# programs with ASan and UBSan, and `make check-fuzz` runs each for
# FUZZ_SECONDS seconds, failing on any crash, leak or UBSan report;
# without it they replay their corpus through a plain main.
# FUZZ_TARGETS="fuzz_siw_rx ..." picks some.
FUZZ_SECONDS = 10
fuzz_programs =
fuzz_common = tests/fuzz/fuzz.h tests/fuzz/fuzz_util.c tests/fuzz/fuzz_main.c
fuzz_ldflags = $(AM_LDFLAGS) $(FUZZ_LDFLAGS)

if PROV_SIW
fuzz_siw = $(fuzz_common) tests/fuzz/fuzz_siw.c tests/fuzz/fuzz_siw.h
fuzz_siw_ldadd = vp/siw/libsiw_core.la rnicpi/librnicpi_util.la \
	$(ISAL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

fuzz_programs += tests/fuzz/fuzz_siw_mpa
tests_fuzz_fuzz_siw_mpa_SOURCES = tests/fuzz/fuzz_siw_mpa.c $(fuzz_siw)
tests_fuzz_fuzz_siw_mpa_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_siw_mpa_LDADD = $(fuzz_siw_ldadd)

fuzz_programs += tests/fuzz/fuzz_siw_rx
tests_fuzz_fuzz_siw_rx_SOURCES = tests/fuzz/fuzz_siw_rx.c $(fuzz_siw)
tests_fuzz_fuzz_siw_rx_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_siw_rx_LDADD = $(fuzz_siw_ldadd)

fuzz_programs += tests/fuzz/fuzz_siw_term
tests_fuzz_fuzz_siw_term_SOURCES = tests/fuzz/fuzz_siw_term.c $(fuzz_siw)
tests_fuzz_fuzz_siw_term_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_siw_term_LDADD = $(fuzz_siw_ldadd)
endif

if PROV_RXE
fuzz_rxe = $(fuzz_common) tests/fuzz/fuzz_rxe.c tests/fuzz/fuzz_rxe.h
fuzz_rxe_ldadd = vp/rxe/librxe_core.la rnicpi/librnicpi_util.la \
	$(RXE_CRC_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)

fuzz_programs += tests/fuzz/fuzz_rxe_rcv
tests_fuzz_fuzz_rxe_rcv_SOURCES = tests/fuzz/fuzz_rxe_rcv.c $(fuzz_rxe)
tests_fuzz_fuzz_rxe_rcv_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_rxe_rcv_LDADD = $(fuzz_rxe_ldadd)

fuzz_programs += tests/fuzz/fuzz_rxe_direct
tests_fuzz_fuzz_rxe_direct_SOURCES = tests/fuzz/fuzz_rxe_direct.c $(fuzz_rxe)
tests_fuzz_fuzz_rxe_direct_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_rxe_direct_LDADD = $(fuzz_rxe_ldadd)
endif

fuzz_programs += tests/fuzz/fuzz_cm_mad
tests_fuzz_fuzz_cm_mad_SOURCES = tests/fuzz/fuzz_cm_mad.c cm/ib_mad.c \
	$(fuzz_common)
# (flags of its own: cm/ib_mad.c gets an object apart from libcm's)
tests_fuzz_fuzz_cm_mad_CFLAGS = $(AM_CFLAGS)
tests_fuzz_fuzz_cm_mad_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_cm_mad_LDADD = $(GLIB_LIBS)

# The CM over the whole stack: IT-API, ual, cm, and the soft-RoCE module
# loaded from the build tree.
if PROV_RXE
fuzz_programs += tests/fuzz/fuzz_cm_ib
tests_fuzz_fuzz_cm_ib_SOURCES = tests/fuzz/fuzz_cm_ib.c $(fuzz_common)
tests_fuzz_fuzz_cm_ib_CPPFLAGS = $(AM_CPPFLAGS) \
	-DFZ_RXE_PROVIDER_DIR=\"$(abs_top_builddir)/vp/rxe/.libs\"
tests_fuzz_fuzz_cm_ib_CFLAGS = $(AM_CFLAGS) $(LIBNL_CFLAGS)
tests_fuzz_fuzz_cm_ib_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_cm_ib_LDADD = itapi/libitapi.la cm/libcm.la ual/libual.la \
	$(LIBNL_LIBS) $(GLIB_LIBS) $(PTHREAD_LIBS)
if PROV_RXE_DL
EXTRA_tests_fuzz_fuzz_cm_ib_DEPENDENCIES = vp/rxe/rxe.la
endif
endif

fuzz_programs += tests/fuzz/fuzz_tools
tests_fuzz_fuzz_tools_SOURCES = tests/fuzz/fuzz_tools.c $(fuzz_common)
tests_fuzz_fuzz_tools_LDFLAGS = $(fuzz_ldflags)
tests_fuzz_fuzz_tools_LDADD = tools/libtools.la $(GLIB_LIBS)

# The seed corpus: `make fuzz-corpus` writes it again into the source
# tree from the Check vectors and tests/data (gen-corpus.c).
if PROV_SIW
if PROV_RXE
EXTRA_PROGRAMS += tests/fuzz/gen-corpus
tests_fuzz_gen_corpus_SOURCES = tests/fuzz/gen-corpus.c cm/ib_mad.c \
	tests/fuzz/fuzz_siw.c tests/fuzz/fuzz_util.c
tests_fuzz_gen_corpus_CFLAGS = $(AM_CFLAGS)
tests_fuzz_gen_corpus_LDADD = vp/siw/libsiw_core.la vp/rxe/librxe_core.la \
	rnicpi/librnicpi_util.la $(ISAL_LIBS) $(RXE_CRC_LIBS) $(GLIB_LIBS) \
	$(PTHREAD_LIBS)
CLEANFILES += tests/fuzz/gen-corpus
fuzz-corpus: tests/fuzz/gen-corpus$(EXEEXT)
	rm -rf $(srcdir)/tests/fuzz/corpus.new
	tests/fuzz/gen-corpus $(srcdir)/tests/fuzz/corpus.new
	for d in $(srcdir)/tests/fuzz/corpus.new/*; do \
		mkdir -p $(srcdir)/tests/fuzz/corpus/$${d##*/} && \
		cp $$d/* $(srcdir)/tests/fuzz/corpus/$${d##*/}/ || exit 1; \
	done
	rm -rf $(srcdir)/tests/fuzz/corpus.new
endif
endif

EXTRA_PROGRAMS += $(fuzz_programs)
CLEANFILES += $(fuzz_programs)
EXTRA_DIST += tests/fuzz/run-fuzz tests/fuzz/corpus tests/fuzz/options \
	docs/FUZZING.md

if ENABLE_FUZZING
fuzz_mode = fuzz
else
fuzz_mode = replay
endif

check-fuzz: $(fuzz_programs)
	$(AM_V_at)FUZZ_SECONDS='$(FUZZ_SECONDS)' FUZZ_TARGETS='$(FUZZ_TARGETS)' \
	$(SHELL) $(srcdir)/tests/fuzz/run-fuzz $(fuzz_mode) \
		$(abs_top_srcdir)/tests/fuzz $(abs_top_builddir)/tests/fuzz \
		$(fuzz_programs)

clean-local: clean-fuzz
clean-fuzz:
	-rm -rf tests/fuzz/work
.PHONY: check-fuzz clean-fuzz fuzz-corpus
