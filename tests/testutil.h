/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the Check suites. */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <string.h>

/* ck_assert on a 0-or-negative-errno call, printing the errno name. */
#define ck_assert_ok(expr)                                                  \
	do {                                                                \
		int ck_ok_rc_ = (expr);                                     \
		ck_assert_msg(ck_ok_rc_ == 0, "%s returned %d (%s)", #expr, \
			      ck_ok_rc_, strerror(-ck_ok_rc_));             \
	} while (0)

/* ck_assert that a call returned exactly -err. */
#define ck_assert_errno(expr, err)                                          \
	do {                                                                \
		int ck_err_rc_ = (expr);                                    \
		ck_assert_msg(ck_err_rc_ == -(err),                         \
			      "%s returned %d (%s), expected %d (%s)", #expr, \
			      ck_err_rc_, strerror(-ck_err_rc_), -(err),    \
			      strerror(err));                               \
	} while (0)

#endif
