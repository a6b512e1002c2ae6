/* SPDX-License-Identifier: MIT */
/* rnicpi/ helpers: completion ring notification rules, key table, the
 * debug-log test. */
#include "config.h"

#include <poll.h>

#include "rnicpi/rnicpi_util.h"
#include "tests/suites.h"
#include "tests/testutil.h"

static int fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static struct rnicpi_wc make_wc(uint64_t id, enum rnicpi_wc_status status)
{
	struct rnicpi_wc wc = { .wr_id = id, .status = status };

	return wc;
}

START_TEST(test_ring_fifo_and_overflow)
{
	struct rnicpi_cq_ring ring;
	struct rnicpi_wc wc = make_wc(0, RNICPI_WC_SUCCESS), out[4];
	uint64_t id;

	ck_assert_ok(rnicpi_cq_ring_init(&ring, 3));
	for (id = 1; id <= 3; id++) {
		wc.wr_id = id;
		ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	}
	wc.wr_id = 4;
	ck_assert_errno(rnicpi_cq_ring_push(&ring, &wc, false), ENOSPC);
	ck_assert(ring.overflowed);
	ck_assert_int_eq(rnicpi_cq_ring_poll(&ring, 2, out), 2);
	ck_assert_uint_eq(out[0].wr_id, 1);
	ck_assert_uint_eq(out[1].wr_id, 2);
	/* Wrap around the end of the array. */
	wc.wr_id = 5;
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	ck_assert_int_eq(rnicpi_cq_ring_poll(&ring, 4, out), 2);
	ck_assert_uint_eq(out[0].wr_id, 3);
	ck_assert_uint_eq(out[1].wr_id, 5);
	ck_assert_int_eq(rnicpi_cq_ring_poll(&ring, 4, out), 0);
	rnicpi_cq_ring_fini(&ring);
}
END_TEST

START_TEST(test_ring_notify_only_when_armed)
{
	struct rnicpi_cq_ring ring;
	struct rnicpi_wc wc = make_wc(1, RNICPI_WC_SUCCESS), out;

	ck_assert_ok(rnicpi_cq_ring_init(&ring, 8));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	ck_assert(!fd_readable(ring.efd));
	ck_assert_errno(rnicpi_cq_ring_ack(&ring), EAGAIN);

	ck_assert_ok(rnicpi_cq_ring_arm(&ring, 0));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	ck_assert(fd_readable(ring.efd));
	ck_assert_ok(rnicpi_cq_ring_ack(&ring));
	ck_assert(!fd_readable(ring.efd));

	/* One-shot: the next completion does not signal again. */
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	ck_assert(!fd_readable(ring.efd));
	while (rnicpi_cq_ring_poll(&ring, 1, &out) == 1)
		;
	rnicpi_cq_ring_fini(&ring);
}
END_TEST

START_TEST(test_ring_solicited_only)
{
	struct rnicpi_cq_ring ring;
	struct rnicpi_wc ok = make_wc(1, RNICPI_WC_SUCCESS);
	struct rnicpi_wc bad = make_wc(2, RNICPI_WC_REM_ACCESS_ERR);

	ck_assert_ok(rnicpi_cq_ring_init(&ring, 8));
	ck_assert_ok(rnicpi_cq_ring_arm(&ring, 1));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &ok, false));
	ck_assert(!fd_readable(ring.efd));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &ok, true));
	ck_assert(fd_readable(ring.efd));
	ck_assert_ok(rnicpi_cq_ring_ack(&ring));

	/* IBA 11.4.2.2: an error completion also wakes a solicited arm. */
	ck_assert_ok(rnicpi_cq_ring_arm(&ring, 1));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &bad, false));
	ck_assert(fd_readable(ring.efd));
	ck_assert_ok(rnicpi_cq_ring_ack(&ring));

	/* A later "any" arm widens a solicited one. */
	ck_assert_ok(rnicpi_cq_ring_arm(&ring, 1));
	ck_assert_ok(rnicpi_cq_ring_arm(&ring, 0));
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &ok, false));
	ck_assert(fd_readable(ring.efd));
	rnicpi_cq_ring_fini(&ring);
}
END_TEST

START_TEST(test_ring_resize_keeps_order)
{
	struct rnicpi_cq_ring ring;
	struct rnicpi_wc wc = make_wc(0, RNICPI_WC_SUCCESS), out[8];
	int i;

	ck_assert_ok(rnicpi_cq_ring_init(&ring, 4));
	for (i = 1; i <= 4; i++) {
		wc.wr_id = i;
		ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false));
	}
	ck_assert_int_eq(rnicpi_cq_ring_poll(&ring, 1, out), 1);
	wc.wr_id = 5;
	ck_assert_ok(rnicpi_cq_ring_push(&ring, &wc, false)); /* wrapped */
	ck_assert_errno(rnicpi_cq_ring_resize(&ring, 3), EINVAL);
	ck_assert_ok(rnicpi_cq_ring_resize(&ring, 8));
	ck_assert_uint_eq(rnicpi_cq_ring_count(&ring), 4);
	ck_assert_int_eq(rnicpi_cq_ring_poll(&ring, 8, out), 4);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(out[i].wr_id, (uint64_t)i + 2);
	rnicpi_cq_ring_fini(&ring);
}
END_TEST

static int get_calls;

static void count_get(void *obj)
{
	(void)obj;
	get_calls++;
}

START_TEST(test_keys_stale_and_rekey)
{
	struct rnicpi_key_table t;
	int a, b;
	uint32_t ka, kb, ka2, kb2;

	get_calls = 0;
	ck_assert_ok(rnicpi_key_table_init(&t, 16, count_get));
	ck_assert_ok(rnicpi_key_alloc(&t, &a, &ka));
	ck_assert_ok(rnicpi_key_alloc(&t, &b, &kb));
	ck_assert_uint_ne(ka, kb);
	ck_assert_uint_ne(rnicpi_key_index(ka), 0);
	ck_assert_ptr_eq(rnicpi_key_lookup(&t, ka), &a);
	ck_assert_ptr_eq(rnicpi_key_lookup(&t, kb), &b);
	ck_assert_int_eq(get_calls, 2);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, 0));
	ck_assert_ptr_null(rnicpi_key_lookup(&t, ka ^ 1));  /* wrong key byte */
	ck_assert_ptr_null(rnicpi_key_lookup(&t, 0xffff00)); /* no such index */

	/* Re-keying makes the old key stale. */
	ck_assert_ok(rnicpi_key_rekey(&t, ka, &ka2));
	ck_assert_uint_eq(rnicpi_key_index(ka2), rnicpi_key_index(ka));
	ck_assert_uint_ne(ka2, ka);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, ka));
	ck_assert_ptr_eq(rnicpi_key_lookup(&t, ka2), &a);
	ck_assert_errno(rnicpi_key_rekey(&t, ka, &ka2), ENOENT);

	/* A freed slot comes back with a different key. */
	ck_assert_ok(rnicpi_key_free(&t, kb));
	ck_assert_errno(rnicpi_key_free(&t, kb), ENOENT);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, kb));
	ck_assert_ok(rnicpi_key_alloc(&t, &b, &kb2));
	ck_assert_uint_eq(rnicpi_key_index(kb2), rnicpi_key_index(kb));
	ck_assert_uint_ne(kb2, kb);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, kb));

	/* Consumer-chosen key byte (MW type 2). */
	ck_assert_errno(rnicpi_key_set_byte(&t, kb2, (uint8_t)kb2, &kb),
			EINVAL);
	ck_assert_ok(rnicpi_key_set_byte(&t, kb2, 0x5a, &kb));
	ck_assert_uint_eq(kb & 0xff, 0x5a);
	ck_assert_ptr_eq(rnicpi_key_lookup(&t, kb), &b);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, kb2));
	rnicpi_key_table_fini(&t);
}
END_TEST

START_TEST(test_keys_table_full)
{
	struct rnicpi_key_table t;
	int objs[4];
	uint32_t keys[4], extra;
	int i;

	ck_assert_errno(rnicpi_key_table_init(&t, 0, NULL), EINVAL);
	ck_assert_ok(rnicpi_key_table_init(&t, 3, NULL));
	for (i = 0; i < 3; i++)
		ck_assert_ok(rnicpi_key_alloc(&t, &objs[i], &keys[i]));
	ck_assert_errno(rnicpi_key_alloc(&t, &objs[3], &extra), ENOSPC);
	ck_assert_errno(rnicpi_key_alloc(&t, NULL, &extra), EINVAL);
	ck_assert_ok(rnicpi_key_free(&t, keys[1]));
	ck_assert_ok(rnicpi_key_alloc(&t, &objs[3], &extra));
	ck_assert_ptr_eq(rnicpi_key_lookup(&t, extra), &objs[3]);
	rnicpi_key_table_fini(&t);
}
END_TEST

/* G_MESSAGES_DEBUG's syntax, as GLib reads it. */
START_TEST(test_debug_list)
{
	ck_assert(rnicpi_debug_list_names("hostrdma-rxe", "hostrdma-rxe"));
	ck_assert(rnicpi_debug_list_names("all", "hostrdma-siw"));
	ck_assert(rnicpi_debug_list_names("hostrdma-cm,hostrdma-siw",
					  "hostrdma-siw"));
	ck_assert(rnicpi_debug_list_names(" hostrdma-cm  hostrdma-rxe ",
					  "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names("hostrdma-rxe", "hostrdma-siw"));
	ck_assert(!rnicpi_debug_list_names("hostrdma-rxe-x", "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names("hostrdma", "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names("ball", "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names("", "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names(NULL, "hostrdma-rxe"));
	ck_assert(!rnicpi_debug_list_names(",,", ""));
}
END_TEST

/* A program that turns GLib's debug output on gets the providers' too,
 * whatever the environment said. */
START_TEST(test_debug_enabled_by_program)
{
	gboolean was = g_log_get_debug_enabled();

	g_log_set_debug_enabled(TRUE);
	ck_assert(rnicpi_debug_wanted("hostrdma-no-such-domain"));
	g_log_set_debug_enabled(FALSE);
	ck_assert(!rnicpi_debug_wanted("hostrdma-no-such-domain") ||
		  rnicpi_debug_list_names(g_getenv("G_MESSAGES_DEBUG"),
					  "hostrdma-no-such-domain"));
	g_log_set_debug_enabled(was);
}
END_TEST

Suite *suite_rnicpi_util(void)
{
	Suite *s = suite_create("rnicpi-util");
	TCase *tc = tcase_create("cq-ring");

	tcase_add_test(tc, test_ring_fifo_and_overflow);
	tcase_add_test(tc, test_ring_notify_only_when_armed);
	tcase_add_test(tc, test_ring_solicited_only);
	tcase_add_test(tc, test_ring_resize_keeps_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("key-table");
	tcase_add_test(tc, test_keys_stale_and_rekey);
	tcase_add_test(tc, test_keys_table_full);
	suite_add_tcase(s, tc);
	tc = tcase_create("debug-log");
	tcase_add_test(tc, test_debug_list);
	tcase_add_test(tc, test_debug_enabled_by_program);
	suite_add_tcase(s, tc);
	return s;
}
