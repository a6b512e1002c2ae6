/* SPDX-License-Identifier: MIT */
/* What the files of the itapi-evd suite share: check_itapi_evd.c (the
 * suite, its fixture and these helpers) and check_itapi_evd_dto.c. */
#ifndef TESTS_CHECK_ITAPI_EVD_H
#define TESTS_CHECK_ITAPI_EVD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/testutil_itapi.h"

/* The IA, PZ and EVDs of the running test (setup/teardown), called F in
 * the suite's files. */
extern struct it_fix itevd_fix;
#define F itevd_fix

/* An EVD on @stream in F's IA, asserting that it_evd_create() works. */
it_evd_handle_t evd_new(it_event_type_t stream, it_evd_flags_t flags,
			size_t size, size_t threshold, it_evd_handle_t aevd,
			int *fd);

/* Whether @fd polls readable right now. */
bool readable(int fd);

/* Post a software event carrying @n as its data. */
void post_sw(it_evd_handle_t e, uintptr_t n);

/* A thread in it_evd_wait(): start wait_thread() on one, then
 * wait_until_waiting() returns once it sits in the wait. */
struct waiter {
	it_evd_handle_t evd;
	uint64_t timeout;
	it_status_t st;
	it_event_t ev;
	size_t nmore;
	volatile int done;
};

void *wait_thread(void *arg);
void wait_until_waiting(struct waiter *w);

#endif
