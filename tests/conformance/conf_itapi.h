/* SPDX-License-Identifier: MIT */
/* The conformance runner's side of tests/testutil_itapi.h (conf_itapi.c). */
#ifndef TESTS_CONFORMANCE_CONF_ITAPI_H
#define TESTS_CONFORMANCE_CONF_ITAPI_H

#include <stdbool.h>
#include <netinet/in.h>

#include <check.h>

/* The tree's suites run against @device; their "loopback" is @addr.
 * With @peer (NULL: none), each case's fixture opens a second IA there
 * and the cases written for it (it_ep_new_peer) put their passive
 * endpoint on it. */
void conf_itapi_init(const char *device, const char *peer,
		     struct in_addr addr);
/* Whether @device's IA is iWARP (false when it does not open). */
bool conf_itapi_is_iwarp(const char *device);

/* Whether @device's IA has atomics (it_ia_query's atomic_support). */
bool conf_itapi_has_atomics(const char *device);

/* Whether @device's IA carries immediate data (it_ext.h). */
bool conf_itapi_has_imm(const char *device);

/* Whether @device's IA has the UD service (it_ia_query). */
bool conf_itapi_has_ud(const char *device);

/* Whether @device's IA has memory windows of both types. */
bool conf_itapi_has_windows(const char *device);

/* The tree's pure IT-API suites (tests/check_itapi_cm.c,
 * tests/check_itapi_atomic.c). */
Suite *suite_itapi_cm(void);
Suite *suite_itapi_cm_rxe(void);
Suite *suite_itapi_atomic(void);

#endif
