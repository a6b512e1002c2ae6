/* SPDX-License-Identifier: MIT */
/*
 * Work-request errors the standard names, seen by an IT-API consumer over
 * soft-iWARP (itapi-dto-errors) and soft-RoCE (itapi-dto-errors-rxe): a
 * Send longer than the receive it lands in completes that receive with
 * IT_DTO_ERR_LOCAL_LENGTH on both transports (as a verbs RNIC reports
 * IBV_WC_LOC_LEN_ERR), the receives behind it come back flushed, and no
 * byte lands outside the receive buffer.
 */
#include "config.h"

#include <string.h>

#include "tests/testutil_itapi_pair.h"	/* F, A sends to B */
#include "tests/suites.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

/* The next receive completion of @ep, other endpoints' events skipped
 * (the sender's own completion, success or not, is not the point). */
static void recv_event_of(it_ep_handle_t ep, it_event_t *ev)
{
	for (int i = 0; i < 8; i++) {
		it_wait_event(F.dto, ev);
		if (ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
		    ev->dto_cmpl.ep == ep)
			return;
	}
	ck_abort_msg("no receive completion for the endpoint");
}

START_TEST(send_longer_than_receive)
{
	struct it_buf src, dst;
	it_lmr_triplet_t s, r;
	it_event_t ev;
	size_t i;

	it_buf_new(&F, &src, 3000, IT_PRIV_LOCAL);
	it_buf_new(&F, &dst, 4096, IT_PRIV_LOCAL);
	memset(src.mem, 0x5a, src.len);
	memset(dst.mem, 0xee, dst.len);
	/* 1000 bytes of room at offset 512, then a second receive behind
	 * it; the 3000-byte Send fits neither. */
	r = it_seg(&dst, 512, 1000);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 41, CN));
	r = it_seg(&dst, 2048, 1000);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 42, CN));
	s = it_seg(&src, 0, 3000);
	ck_assert_it_ok(it_post_send(A, &s, 1, 7, CN));

	recv_event_of(B, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 41);
	ck_assert_msg(ev.dto_cmpl.dto_status == IT_DTO_ERR_LOCAL_LENGTH,
		      "receive status %d, expected IT_DTO_ERR_LOCAL_LENGTH",
		      (int)ev.dto_cmpl.dto_status);
	recv_event_of(B, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 42);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_ERR_FLUSHED);
	/* Whatever reached the first receive stayed inside it. */
	for (i = 0; i < 512; i++)
		ck_assert_int_eq(dst.mem[i], 0xee);
	for (i = 1512; i < dst.len; i++)
		ck_assert_int_eq(dst.mem[i], 0xee);
	it_buf_free(&src);
	it_buf_free(&dst);
}
END_TEST

/* A Send that fits is unaffected by the check: the bytes, its length. */
START_TEST(send_that_fits)
{
	struct it_buf src, dst;
	it_lmr_triplet_t s, r;
	it_event_t ev;
	size_t i;

	it_buf_new(&F, &src, 1000, IT_PRIV_LOCAL);
	it_buf_new(&F, &dst, 4096, IT_PRIV_LOCAL);
	for (i = 0; i < src.len; i++)
		src.mem[i] = (unsigned char)(i * 7 + 1);
	memset(dst.mem, 0xee, dst.len);
	r = it_seg(&dst, 512, 1000);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 51, CN));
	s = it_seg(&src, 0, 1000);
	ck_assert_it_ok(it_post_send(A, &s, 1, 8, CN));
	recv_event_of(B, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 51);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 1000);
	ck_assert_int_eq(memcmp(dst.mem + 512, src.mem, 1000), 0);
	ck_assert_int_eq(dst.mem[511], 0xee);
	ck_assert_int_eq(dst.mem[1512], 0xee);
	it_buf_free(&src);
	it_buf_free(&dst);
}
END_TEST

static TCase *dto_errors_tcase(const char *name, void (*setup)(void),
			       void (*down)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, down);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, send_that_fits);
	tcase_add_test(tc, send_longer_than_receive);
	return tc;
}

Suite *suite_itapi_dto_errors(void)
{
	Suite *s = suite_create("itapi-dto-errors");

	suite_add_tcase(s, dto_errors_tcase("siw", tu_itapi_pair_setup_siw,
					    tu_itapi_pair_teardown));
	return s;
}

#ifdef HAVE_PROV_RXE
Suite *suite_itapi_dto_errors_rxe(void)
{
	Suite *s = suite_create("itapi-dto-errors-rxe");

	suite_add_tcase(s, dto_errors_tcase("rxe", tu_itapi_pair_setup_rxe,
					    tu_itapi_pair_teardown_rxe));
	return s;
}
#endif
