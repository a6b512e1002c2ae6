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
	uint8_t byte;

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

	/* A freed slot waits behind the other free ones: the next key
	 * names another index, and the old key stays stale. */
	ck_assert_ok(rnicpi_key_free(&t, kb));
	ck_assert_errno(rnicpi_key_free(&t, kb), ENOENT);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, kb));
	ck_assert_ok(rnicpi_key_alloc(&t, &b, &kb2));
	ck_assert_uint_ne(rnicpi_key_index(kb2), rnicpi_key_index(kb));
	ck_assert_uint_ne(kb2, kb);
	ck_assert_ptr_null(rnicpi_key_lookup(&t, kb));

	/* Consumer-chosen key byte (MW type 2). */
	ck_assert_errno(rnicpi_key_set_byte(&t, kb2, (uint8_t)kb2, &kb),
			EINVAL);
	/* Another byte than the random one it has (setting the same byte
	 * is refused, as checked above). */
	byte = (uint8_t)kb2 == 0x5a ? 0xa5 : 0x5a;
	ck_assert_ok(rnicpi_key_set_byte(&t, kb2, byte, &kb));
	ck_assert_uint_eq(kb & 0xff, byte);
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

/* The header's bound: with at most @in_use keys live at once, no key is
 * handed out twice within this many allocations. */
static uint64_t key_repeat_bound(uint32_t max_entries, uint32_t in_use)
{
	uint64_t d = MIN(RNICPI_KEY_REUSE_DEPTH - 1, max_entries - in_use);

	return 256 * (d + 1);
}

/*
 * Register/free cycles on a table of @max_entries: @cycles allocations,
 * with @in_use keys live after each (before each allocation beyond the
 * first @in_use - 1, a live key is freed: the newest, or with @random one
 * picked at random). Asserts that
 * no index gets the key byte it had the time before, and returns the
 * shortest distance, in allocations, between two hand-outs of one key
 * (G_MAXUINT64 if none came back).
 */
static uint64_t key_cycles(uint32_t max_entries, uint32_t in_use,
			   bool random, uint64_t cycles)
{
	g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
	g_autoptr(GHashTable) last_byte = g_hash_table_new(NULL, NULL);
	g_autoptr(GRand) rand = g_rand_new_with_seed(11);
	g_autofree uint32_t *live = g_new0(uint32_t, in_use);
	struct rnicpi_key_table t;
	uint64_t shortest = G_MAXUINT64;
	uint32_t n_live = 0;
	int obj;

	ck_assert_ok(rnicpi_key_table_init(&t, max_entries, NULL));
	for (uint64_t n = 1; n <= cycles; n++) {
		uint32_t key, index;
		gpointer prev;

		if (n_live == in_use) {
			uint32_t i = random ? (uint32_t)g_rand_int_range(
						      rand, 0, (gint32)n_live) :
					      n_live - 1;

			ck_assert_ok(rnicpi_key_free(&t, live[i]));
			live[i] = live[--n_live];
		}
		ck_assert_ok(rnicpi_key_alloc(&t, &obj, &key));
		live[n_live++] = key;
		index = rnicpi_key_index(key);
		/* values are stored + 1, so that 0 means "never" */
		prev = g_hash_table_lookup(last_byte, GUINT_TO_POINTER(index));
		ck_assert_msg(GPOINTER_TO_UINT(prev) != (key & 0xff) + 1,
			      "index %u got key byte 0x%02x twice in a row",
			      index, key & 0xff);
		g_hash_table_insert(last_byte, GUINT_TO_POINTER(index),
				    GUINT_TO_POINTER((key & 0xff) + 1));
		prev = g_hash_table_lookup(seen, GUINT_TO_POINTER(key));
		if (prev && n - (GPOINTER_TO_SIZE(prev) - 1) < shortest)
			shortest = n - (GPOINTER_TO_SIZE(prev) - 1);
		g_hash_table_insert(seen, GUINT_TO_POINTER(key),
				    GSIZE_TO_POINTER((gsize)n + 1));
	}
	rnicpi_key_table_fini(&t);
	return shortest;
}

/*
 * Issue 11/3: a peer holding a freed key must not reach whatever is
 * registered next. A small table cycles through all its indices, so its
 * first repeat comes exactly at the bound (the bound is tight there); a
 * table the size the providers use keeps 1024 indices in its free queue.
 */
START_TEST(test_keys_no_repeat_within_bound)
{
	static const struct {
		uint32_t max_entries, in_use;
		bool random;	/* which live key goes: random, or the newest */
		bool tight;	/* the first repeat falls on the bound */
	} cases[] = {
		{ 16, 1, false, true },	     /* 256 * 16 = 4096 */
		{ 16, 16, false, true },     /* a full table, one index: 256 */
		{ 64, 8, true, false },	     /* 256 * 57 = 14592 */
		{ 65536, 1, false, false },  /* 256 * 1024 = 262144 */
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t bound = key_repeat_bound(cases[i].max_entries,
						  cases[i].in_use);
		uint64_t cycles = cases[i].tight ? 3 * bound : bound + 4096;
		uint64_t shortest = key_cycles(cases[i].max_entries,
					       cases[i].in_use,
					       cases[i].random, cycles);

		ck_assert_msg(shortest >= bound,
			      "table of %u, %u in use: a key came back after "
			      "%" G_GUINT64_FORMAT " allocations, bound %"
			      G_GUINT64_FORMAT, cases[i].max_entries,
			      cases[i].in_use, shortest, bound);
		if (cases[i].tight)
			ck_assert_uint_eq(shortest, bound);
	}
}
END_TEST

/* Re-keying one slot runs through all 256 bytes before one comes back, in
 * an order that differs between tables and indices. */
START_TEST(test_keys_rekey_cycle)
{
	struct rnicpi_key_table t1, t2;
	uint32_t k1, k2, a1, a2, first;
	bool seen[256] = { false }, differ = false;
	int obj;

	ck_assert_ok(rnicpi_key_table_init(&t1, 8, NULL));
	ck_assert_ok(rnicpi_key_table_init(&t2, 8, NULL));
	ck_assert_ok(rnicpi_key_alloc(&t1, &obj, &k1));
	ck_assert_ok(rnicpi_key_alloc(&t2, &obj, &k2));
	ck_assert_ok(rnicpi_key_alloc(&t1, &obj, &a1));
	ck_assert_ok(rnicpi_key_alloc(&t2, &obj, &a2));
	first = k1;
	seen[k1 & 0xff] = true;
	for (int i = 1; i < 256; i++) {
		uint32_t prev = k1;

		ck_assert_ok(rnicpi_key_rekey(&t1, k1, &k1));
		ck_assert_ok(rnicpi_key_rekey(&t2, k2, &k2));
		ck_assert_ok(rnicpi_key_rekey(&t1, a1, &a1));
		ck_assert_ok(rnicpi_key_rekey(&t2, a2, &a2));
		ck_assert_uint_ne(k1, prev);
		ck_assert_msg(!seen[k1 & 0xff], "byte 0x%02x again after %d",
			      k1 & 0xff, i);
		seen[k1 & 0xff] = true;
		/* two secrets of 64 random bits, two indices */
		differ |= (k1 & 0xff) != (k2 & 0xff);
		differ |= (k1 & 0xff) != (a1 & 0xff);
	}
	ck_assert(differ);
	/* all 256 bytes were handed out; the 257th key is the first again */
	ck_assert_ok(rnicpi_key_rekey(&t1, k1, &k1));
	ck_assert_uint_eq(k1, first);
	rnicpi_key_table_fini(&t1);
	rnicpi_key_table_fini(&t2);
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

/* One name per QP state, both the IBA and the iWARP set; "?" outside. */
START_TEST(test_qp_state_names)
{
	ck_assert_str_eq(rnicpi_qp_state_name(RNICPI_QPS_RESET), "RESET");
	ck_assert_str_eq(rnicpi_qp_state_name(RNICPI_QPS_RTS), "RTS");
	ck_assert_str_eq(rnicpi_qp_state_name(RNICPI_QPS_ERR), "ERR");
	ck_assert_str_eq(rnicpi_qp_state_name(RNICPI_QPS_IDLE), "IDLE");
	ck_assert_str_eq(rnicpi_qp_state_name(RNICPI_QPS_TERMINATE),
			 "TERMINATE");
	ck_assert_str_eq(rnicpi_qp_state_name((enum rnicpi_qp_state)7), "?");
	ck_assert_str_eq(rnicpi_qp_state_name((enum rnicpi_qp_state)19), "?");
	ck_assert_str_eq(rnicpi_qp_state_name((enum rnicpi_qp_state)-1), "?");
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
	tcase_add_test(tc, test_keys_no_repeat_within_bound);
	tcase_add_test(tc, test_keys_rekey_cycle);
	suite_add_tcase(s, tc);
	tc = tcase_create("debug-log");
	tcase_add_test(tc, test_debug_list);
	tcase_add_test(tc, test_debug_enabled_by_program);
	suite_add_tcase(s, tc);
	tc = tcase_create("qp-state-names");
	tcase_add_test(tc, test_qp_state_names);
	suite_add_tcase(s, tc);
	return s;
}
