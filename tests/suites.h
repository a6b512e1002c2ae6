/* SPDX-License-Identifier: MIT */
/* The Check suites the runner knows; one line per suite, by layer. */
#ifndef TESTS_SUITES_H
#define TESTS_SUITES_H

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
	X(suite_itapi_keys_rxe, "itapi-keys-rxe")                           \
	X(suite_itapi_ud_rxe, "itapi-ud-rxe")
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

#define HOSTRDMA_SUITES(X)                                                  \
	X(suite_rnicpi_util, "rnicpi-util")                                 \
	X(suite_rnicpi_engine, "rnicpi-engine")                             \
	X(suite_kal_pin, "kal-pin")                                         \
	X(suite_kal_netlink, "kal-netlink")                                 \
	X(suite_ual_loader, "ual-loader")                                   \
	X(suite_ual_objects, "ual-objects")                                 \
	X(suite_ual_events, "ual-events")                                   \
	X(suite_tools, "tools")                                             \
	HOSTRDMA_SUITES_SIW(X)                                              \
	HOSTRDMA_SUITES_RXE(X)

#define X(fn, name) Suite *fn(void);
HOSTRDMA_SUITES(X)
#undef X

#endif
