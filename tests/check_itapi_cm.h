/* SPDX-License-Identifier: MIT */
/* What the files of the itapi-cm suite share: check_itapi_cm.c (the suite,
 * its fixture and these helpers) and check_itapi_cm_sockets.c. */
#ifndef TESTS_CHECK_ITAPI_CM_H
#define TESTS_CHECK_ITAPI_CM_H

#include "tests/testutil_itapi.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

/* The IA, PZ and EVDs of the running test (setup/teardown), called F in
 * the suite's files. */
extern struct it_fix itcm_fix;
#define F itcm_fix

/* Connection events taken for other endpoints while waiting for one; a
 * test that starts afresh sets the count to 0. */
extern int itcm_n_stash;

/* The next CM message event for @ep (others are stashed and returned
 * first by later calls). */
void itcm_conn_event_for(it_ep_handle_t ep, it_event_t *out);

/* The RC state of @ep, asserting that the query works. */
it_ep_state_rc_t itcm_ep_state(it_ep_handle_t ep);

#endif
