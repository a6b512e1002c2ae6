/* SPDX-License-Identifier: MIT */
/*
 * it_post_atomic over soft-RoCE (rxe_lo), two endpoints connected through
 * the InfiniBand CM: fetch-and-add and compare-and-swap land on the
 * target word and nowhere else, the original value comes back in the
 * result segment, a failed compare leaves the target alone, and a region
 * without IT_PRIV_ATOMIC is refused with a remote access error.
 * (The argument checks of it_post_atomic are in itapi-post, on the test
 * provider; siw has no atomics.)
 */
#include "config.h"

#include <string.h>

#include "tests/testutil_itapi.h"
#include "tests/suites.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define TLEN 64u		/* the target region; word 3 is the target */
#define TOFF 24u

static struct it_fix F;
static it_ep_handle_t A, B;
static struct it_buf T, Res;

static it_ep_handle_t ep_atomic(void)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;

	it_ep_attr_default(&F, &a, 32);
	a.srv.rc.atomics_enable = IT_TRUE;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg,
					IT_EP_NO_FLAG, &a, &ep));
	return ep;
}

static void setup(void)
{
	it_setup_rxe();
	it_fix_open(&F);
	A = ep_atomic();
	B = ep_atomic();
	it_connect_pair(&F, A, B);
	it_buf_new(&F, &T, TLEN,
		   IT_PRIV_LOCAL | IT_PRIV_REMOTE | IT_PRIV_ATOMIC);
	it_buf_new(&F, &Res, 16, IT_PRIV_LOCAL);
	memset(T.mem, 0x5a, T.len);
	memset(Res.mem, 0xcc, Res.len);
}

static void teardown(void)
{
	it_buf_free(&T);
	it_buf_free(&Res);
	it_fix_close(&F);
	it_teardown();
}

static uint64_t *target(void)
{
	return (uint64_t *)(void *)(T.mem + TOFF);
}

static void expect(it_event_type_t type, it_dto_cookie_t cookie,
		   it_dto_status_t status)
{
	it_event_t ev;

	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, type);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie);
	ck_assert_msg(ev.dto_cmpl.dto_status == status,
		      "DTO status %d, expected %d", ev.dto_cmpl.dto_status,
		      status);
}

/* Every byte of T outside the target word is still 0x5a. */
static void others_untouched(void)
{
	for (size_t i = 0; i < T.len; i++)
		if (i < TOFF || i >= TOFF + 8)
			ck_assert_msg(T.mem[i] == 0x5a, "byte %zu touched", i);
}

static uint64_t result(size_t off)
{
	uint64_t v;

	memcpy(&v, Res.mem + off, sizeof(v));
	return v;
}

START_TEST(fetch_and_add)
{
	it_lmr_triplet_t r = it_seg(&Res, 4, 8);

	*target() = 1000;
	ck_assert_it_ok(it_post_atomic(A, IT_FETCH_AND_ADD, 234, 0, &r, 1, CN,
				       (uintptr_t)target(), T.rkey));
	expect(IT_DTO_FETCH_ADD_CMPL_EVENT, 1, IT_DTO_SUCCESS);
	ck_assert_uint_eq(result(4), 1000);
	ck_assert_uint_eq(*target(), 1234);
	/* The result segment's neighbours are left alone. */
	ck_assert_uint_eq(Res.mem[3], 0xcc);
	ck_assert_uint_eq(Res.mem[12], 0xcc);
	/* Wraps modulo 2^64. */
	*target() = UINT64_MAX;
	ck_assert_it_ok(it_post_atomic(A, IT_FETCH_AND_ADD, 2, 0, &r, 2, CN,
				       (uintptr_t)target(), T.rkey));
	expect(IT_DTO_FETCH_ADD_CMPL_EVENT, 2, IT_DTO_SUCCESS);
	ck_assert_uint_eq(result(4), UINT64_MAX);
	ck_assert_uint_eq(*target(), 1);
	others_untouched();
}
END_TEST

START_TEST(compare_and_swap)
{
	it_lmr_triplet_t r = it_seg(&Res, 0, 8);

	*target() = 0x1122334455667788ull;
	/* Compare fails: the target keeps its value, which comes back. */
	ck_assert_it_ok(it_post_atomic(A, IT_COMPARE_AND_SWAP, 7, 8, &r, 3,
				       CN, (uintptr_t)target(), T.rkey));
	expect(IT_DTO_CMP_SWAP_CMPL_EVENT, 3, IT_DTO_SUCCESS);
	ck_assert_uint_eq(result(0), 0x1122334455667788ull);
	ck_assert_uint_eq(*target(), 0x1122334455667788ull);
	/* Compare matches: swapped. */
	ck_assert_it_ok(it_post_atomic(B, IT_COMPARE_AND_SWAP, 7,
				       0x1122334455667788ull, &r, 4, CN,
				       (uintptr_t)target(), T.rkey));
	expect(IT_DTO_CMP_SWAP_CMPL_EVENT, 4, IT_DTO_SUCCESS);
	ck_assert_uint_eq(result(0), 0x1122334455667788ull);
	ck_assert_uint_eq(*target(), 7);
	others_untouched();
}
END_TEST

/* A region registered without IT_PRIV_ATOMIC: the responder refuses
 * (NAK remote access error), the word is not changed. */
START_TEST(no_atomic_right)
{
	it_lmr_triplet_t r = it_seg(&Res, 0, 8);
	struct it_buf w;
	it_event_t ev;

	it_buf_new(&F, &w, 64, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
	memset(w.mem, 0x33, w.len);
	ck_assert_it_ok(it_post_atomic(A, IT_FETCH_AND_ADD, 1, 0, &r, 5, CN,
				       (uintptr_t)w.mem + 8, w.rkey));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_FETCH_ADD_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_ERR_REMOTE_ACCESS);
	for (size_t i = 0; i < w.len; i++)
		ck_assert_msg(w.mem[i] == 0x33, "byte %zu touched", i);
	ck_assert_uint_eq(result(0), 0xccccccccccccccccull);
	it_buf_free(&w);
}
END_TEST

/* Local checks before anything is sent. */
START_TEST(local_checks)
{
	it_lmr_triplet_t r = it_seg(&Res, 0, 8), r4 = it_seg(&Res, 0, 4);
	it_ep_handle_t plain = it_ep_new(&F);

	ck_assert_it(it_post_atomic(A, IT_FETCH_AND_ADD, 1, 0, &r4, 1, CN,
				    (uintptr_t)target(), T.rkey),
		     IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_post_atomic(A, IT_FETCH_AND_ADD, 1, 0, &r, 1, CN,
				    (uintptr_t)target() + 4, T.rkey),
		     IT_ERR_RANGE);
	/* An endpoint made without atomics_enable. */
	ck_assert_it(it_post_atomic(plain, IT_FETCH_AND_ADD, 1, 0, &r, 1, CN,
				    (uintptr_t)target(), T.rkey),
		     IT_ERR_INVALID_EP_STATE);
	ck_assert_it_ok(it_ep_free(plain));
}
END_TEST

Suite *suite_itapi_atomic(void)
{
	Suite *s = suite_create("itapi-atomic-rxe");
	TCase *tc = tcase_create("rxe-lo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fetch_and_add);
	tcase_add_test(tc, compare_and_swap);
	tcase_add_test(tc, no_atomic_right);
	tcase_add_test(tc, local_checks);
	suite_add_tcase(s, tc);
	return s;
}
