/* SPDX-License-Identifier: MIT */
/*
 * The fixture the itapi-keys and itapi-dto-errors suites share, over
 * soft-iWARP and (their -rxe twins) soft-RoCE: an IA with its PZ and EVDs,
 * called F in their files, and two endpoints of that IA connected to each
 * other on loopback, A the active side and B the passive one.
 */
#ifndef TESTS_TESTUTIL_ITAPI_PAIR_H
#define TESTS_TESTUTIL_ITAPI_PAIR_H

#include "tests/testutil_itapi.h"

extern struct it_fix tu_itapi_pair_fix;
extern it_ep_handle_t tu_itapi_pair_a, tu_itapi_pair_b;
#define F tu_itapi_pair_fix
#define A tu_itapi_pair_a
#define B tu_itapi_pair_b

/* siw_lo (it_setup_siw), then F open and A connected to B. */
void tu_itapi_pair_setup_siw(void);
/* F closed, the environment torn down (siw). */
void tu_itapi_pair_teardown(void);

#ifdef HAVE_PROV_RXE
/* The same over rxe_lo in a network namespace of the test's own, so that
 * UDP port 4791 on its lo is free whatever else runs on the machine. */
void tu_itapi_pair_setup_rxe(void);
void tu_itapi_pair_teardown_rxe(void);
#endif

#endif
