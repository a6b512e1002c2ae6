/* SPDX-License-Identifier: MIT */
/* The Check suites the runner knows; one line per suite, by layer. */
#ifndef TESTS_SUITES_H
#define TESTS_SUITES_H

#include <stdbool.h>

#include <check.h>

/*
 * X(fn, "name"): a function `Suite *fn(void)` in tests/check_*.c whose
 * suite is called "name" (what `check-all NAME` selects). A provider's
 * suites exist only when configure builds that provider; the IT-API suites
 * run over soft-iWARP and come with it.
 */
#ifdef HAVE_PROV_SIW
#define HOSTRDMA_SUITES_SIW(X)                                              \
	X(suite_siw_wire, "siw-wire")                                       \
	X(suite_siw_loopback, "siw-loopback")                               \
	X(suite_siw_hostile, "siw-hostile")                                 \
	X(suite_siw_lifetime, "siw-lifetime")                               \
	X(suite_siw_coalesce, "siw-coalesce")                               \
	X(suite_siw_park, "siw-park")                                       \
	X(suite_itapi_ia, "itapi-ia")                                       \
	X(suite_itapi_evd, "itapi-evd")                                     \
	X(suite_itapi_mem, "itapi-mem")                                     \
	X(suite_itapi_keys, "itapi-keys")                                   \
	X(suite_itapi_ep, "itapi-ep")                                       \
	X(suite_itapi_post, "itapi-post")                                   \
	X(suite_itapi_dto_errors, "itapi-dto-errors")                       \
	X(suite_itapi_cm, "itapi-cm")                                       \
	X(suite_itapi_mp, "itapi-mp")
#else
#define HOSTRDMA_SUITES_SIW(X)
#endif

/* The IT-API suites again over soft-RoCE (they need siw's build too). */
#ifdef HAVE_PROV_SIW
#define HOSTRDMA_SUITES_ITAPI_RXE(X)                                        \
	X(suite_cm_mad, "cm-mad")                                           \
	X(suite_itapi_cm_rxe, "itapi-cm-rxe")                               \
	X(suite_itapi_cm_ib, "itapi-cm-ib")                                 \
	X(suite_itapi_atomic, "itapi-atomic-rxe")                           \
	X(suite_itapi_imm, "itapi-imm")                                     \
	X(suite_itapi_keys_rxe, "itapi-keys-rxe")                           \
	X(suite_itapi_ud_rxe, "itapi-ud-rxe")                               \
	X(suite_itapi_dto_errors_rxe, "itapi-dto-errors-rxe")               \
	X(suite_kald, "kald")
#else
#define HOSTRDMA_SUITES_ITAPI_RXE(X)
#endif

#ifdef HAVE_PROV_RXE
#define HOSTRDMA_SUITES_RXE(X)                                              \
	X(suite_rxe_wire, "rxe-wire")                                       \
	X(suite_rxe_loopback, "rxe-loopback")                               \
	X(suite_rxe_memory, "rxe-memory")                                   \
	X(suite_rxe_ud, "rxe-ud")                                           \
	X(suite_rxe_faults, "rxe-faults")                                   \
	X(suite_rxe_hostile, "rxe-hostile")                                 \
	HOSTRDMA_SUITES_ITAPI_RXE(X)
#else
#define HOSTRDMA_SUITES_RXE(X)
#endif

#ifdef HAVE_PROV_VERBS
#define HOSTRDMA_SUITES_VERBS(X) X(suite_verbs_map, "verbs-map")
#else
#define HOSTRDMA_SUITES_VERBS(X)
#endif

#define HOSTRDMA_SUITES(X)                                                  \
	X(suite_rnicpi_util, "rnicpi-util")                                 \
	X(suite_rnicpi_engine, "rnicpi-engine")                             \
	X(suite_kal_pin, "kal-pin")                                         \
	X(suite_kal_netlink, "kal-netlink")                                 \
	X(suite_kal_steer, "kal-steer")                                     \
	X(suite_ual_loader, "ual-loader")                                   \
	X(suite_ual_objects, "ual-objects")                                 \
	X(suite_ual_events, "ual-events")                                   \
	X(suite_ual_engine, "ual-engine")                                   \
	X(suite_tools, "tools")                                             \
	HOSTRDMA_SUITES_SIW(X)                                              \
	HOSTRDMA_SUITES_RXE(X)                                              \
	HOSTRDMA_SUITES_VERBS(X)

#define X(fn, name) Suite *fn(void);
HOSTRDMA_SUITES(X)
#undef X

/*
 * Suites spread over several files (tests/check_<area>_<subject>.c, see
 * docs/HACKING.md): the suite function calls these to add the cases of
 * its other files. Suite, test case and test names stay those above.
 */
void itapi_cm_add_socket_convert_tests(TCase *tc); /* check_itapi_cm_sockets.c */
void itapi_cm_add_emfile_case(Suite *s);	/* check_itapi_cm_sockets.c */
void itapi_cm_add_slow_mpa_case(Suite *s);	/* check_itapi_cm_sockets.c */
void itapi_cm_add_close_case(Suite *s);		/* check_itapi_cm_sockets.c */
void itapi_evd_add_dto_tests(TCase *tc);	/* check_itapi_evd_dto.c */
void rxe_loopback_add_rc_cases(Suite *s);	/* check_rxe_loopback_rc.c */
void rxe_loopback_add_poll_rx_cases(Suite *s); /* check_rxe_poll_rx.c */
void siw_hostile_add_read_tests(TCase *tc);	/* check_siw_hostile_read.c */
void siw_hostile_add_stream_tests(TCase *tc);	/* check_siw_hostile_stream.c */
void siw_loopback_add_progress_tests(TCase *tc); /* check_siw_loopback_progress.c */
void siw_loopback_add_window_tests(TCase *tc); /* check_siw_windows.c */
void siw_loopback_add_rq_case(Suite *s);	/* check_siw_rq.c */
void tools_add_siw_case(Suite *s);		/* check_tools_siw.c */
void tools_add_rxe_case(Suite *s);		/* check_tools_rxe.c */
void tools_add_habits_case(Suite *s);		/* check_tools_cli.c */
void tools_add_select_case(Suite *s);	/* check_tools_rxe.c */

/*
 * The conformance runner's suites (tests/conformance/): the cases of a
 * suite that use IT-API alone, on the runner's device (it_setup_siw names
 * it there). Each says which cases it leaves out and why.
 */
Suite *suite_itapi_evd_device(void);		/* check_itapi_evd.c */
Suite *suite_itapi_mem_device(bool windows);	/* check_itapi_mem.c */
Suite *suite_itapi_ep_device(bool iwarp);	/* check_itapi_ep.c */
Suite *suite_itapi_post_device(void);		/* check_itapi_post.c */
Suite *suite_itapi_ud_rxe_device(void);		/* check_itapi_ud_rxe.c */
Suite *suite_itapi_imm_device(bool imm);	/* check_itapi_imm.c */

#endif
