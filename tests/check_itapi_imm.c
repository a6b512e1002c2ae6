/* SPDX-License-Identifier: MIT */
/*
 * hostrdma's IT-API extension for immediate data (it_ext.h), two
 * connected endpoints in one process:
 * - over soft-RoCE (rxe_lo): an RDMA Write with immediate data places its
 *   bytes at the RDMA address and nowhere else, consumes one receive
 *   without touching its buffer, and that receive's event says "RDMA
 *   Write" with the value; a Send with immediate data lands in the
 *   receive's buffer with its value; a plain Send after them says
 *   "none";
 * - over soft-iWARP (siw_lo): the IA reports 0 bytes, both posts are
 *   refused with IT_ERR_OP_NOT_SUPPORTED and nothing reaches the peer.
 * hostrdma-conformance runs the one or the other on its device
 * (suite_itapi_imm_device).
 */
#include "config.h"

#include <string.h>

#include "it_ext.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define TLEN 256u

static struct it_fix F;
static it_ep_handle_t A, B;
static struct it_buf T, S, R;	/* target, source, receive buffer */

static void setup_common(void)
{
	it_fix_open(&F);
	A = it_ep_new(&F);
	B = it_ep_new(&F);
	it_connect_pair(&F, A, B);
	it_buf_new(&F, &T, TLEN, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
	it_buf_new(&F, &S, TLEN, IT_PRIV_LOCAL);
	it_buf_new(&F, &R, TLEN, IT_PRIV_LOCAL);
	memset(T.mem, 0x5a, T.len);
	for (size_t i = 0; i < S.len; i++)
		S.mem[i] = (unsigned char)(i * 7 + 1);
	memset(R.mem, 0xcc, R.len);
}

static void setup_rxe(void)
{
	it_setup_rxe();
	setup_common();
}

static void setup_siw(void)
{
	it_setup_siw();
	setup_common();
}

static void teardown(void)
{
	it_buf_free(&T);
	it_buf_free(&S);
	it_buf_free(&R);
	it_fix_close(&F);
	it_teardown();
}

/* Both ends share F.dto: the two events come in either order. */
static void two_events(it_dto_cookie_t send_cookie, it_event_type_t send_ev,
		       it_dto_cookie_t recv_cookie, it_event_t *recv)
{
	bool got_send = false, got_recv = false;

	while (!got_send || !got_recv) {
		it_event_t ev;

		it_wait_event(F.dto, &ev);
		ck_assert_msg(ev.dto_cmpl.dto_status == IT_DTO_SUCCESS,
			      "cookie %llu: DTO status %d",
			      (unsigned long long)ev.dto_cmpl.cookie,
			      ev.dto_cmpl.dto_status);
		if (ev.dto_cmpl.cookie == send_cookie) {
			ck_assert_event(&ev, send_ev);
			/* The initiator's own completion carries nothing. */
			ck_assert_int_eq(hostrdma_event_imm_data(&ev, NULL),
					 HOSTRDMA_IMM_NONE);
			got_send = true;
		} else {
			ck_assert_uint_eq(ev.dto_cmpl.cookie, recv_cookie);
			ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
			*recv = ev;
			got_recv = true;
		}
	}
}

START_TEST(rdma_write_imm)
{
	it_lmr_triplet_t src = it_seg(&S, 0, 100), r = it_seg(&R, 0, 64);
	uint32_t imm = 0;
	it_event_t ev;

	ck_assert_uint_eq(hostrdma_ia_imm_data_size(F.ia), 4);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 10, CN));
	ck_assert_it_ok(hostrdma_post_rdma_write_imm(A, &src, 1, 11, CN,
						     (uintptr_t)T.mem + 8,
						     T.rkey, 0xdeadbeefu));
	two_events(11, IT_DTO_RDMA_WRITE_CMPL_EVENT, 10, &ev);
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm),
			 HOSTRDMA_IMM_RDMA_WRITE);
	ck_assert_uint_eq(imm, 0xdeadbeefu);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 100);
	/* The bytes at the RDMA address, and nowhere else. */
	ck_assert_int_eq(memcmp(T.mem + 8, S.mem, 100), 0);
	for (size_t i = 0; i < T.len; i++)
		if (i < 8 || i >= 108)
			ck_assert_msg(T.mem[i] == 0x5a, "target byte %zu", i);
	/* The receive's buffer is untouched. */
	for (size_t i = 0; i < R.len; i++)
		ck_assert_msg(R.mem[i] == 0xcc, "receive byte %zu", i);
}
END_TEST

/* A zero-length Write with immediate data into a receive of no segments:
 * a notification only, as it_ext(3)'s example. */
START_TEST(rdma_write_imm_empty)
{
	uint32_t imm = 0;
	it_event_t ev;

	ck_assert_it_ok(it_post_recv(B, NULL, 0, 20, CN));
	ck_assert_it_ok(hostrdma_post_rdma_write_imm(A, NULL, 0, 21, CN,
						     (uintptr_t)T.mem, T.rkey,
						     1));
	two_events(21, IT_DTO_RDMA_WRITE_CMPL_EVENT, 20, &ev);
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm),
			 HOSTRDMA_IMM_RDMA_WRITE);
	ck_assert_uint_eq(imm, 1);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 0);
	for (size_t i = 0; i < T.len; i++)
		ck_assert_msg(T.mem[i] == 0x5a, "target byte %zu", i);
}
END_TEST

START_TEST(send_imm_then_plain)
{
	it_lmr_triplet_t src = it_seg(&S, 0, 40), r = it_seg(&R, 0, 64);
	uint32_t imm = 99;
	it_event_t ev;

	ck_assert_it_ok(it_post_recv(B, &r, 1, 30, CN));
	ck_assert_it_ok(hostrdma_post_send_imm(A, &src, 1, 31, CN, 7));
	two_events(31, IT_DTO_SEND_CMPL_EVENT, 30, &ev);
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm),
			 HOSTRDMA_IMM_SEND);
	ck_assert_uint_eq(imm, 7);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 40);
	ck_assert_int_eq(memcmp(R.mem, S.mem, 40), 0);
	ck_assert_uint_eq(R.mem[40], 0xcc);
	/* A plain Send into the next receive: no immediate data. */
	memset(R.mem, 0xcc, R.len);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 32, CN));
	ck_assert_it_ok(it_post_send(A, &src, 1, 33, CN));
	two_events(33, IT_DTO_SEND_CMPL_EVENT, 32, &ev);
	imm = 99;
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm),
			 HOSTRDMA_IMM_NONE);
	ck_assert_uint_eq(imm, 99);
	ck_assert_int_eq(memcmp(R.mem, S.mem, 40), 0);
}
END_TEST

/* Careless callers. */
START_TEST(careless)
{
	it_event_t ev;

	ck_assert_int_eq(hostrdma_event_imm_data(NULL, NULL),
			 HOSTRDMA_IMM_NONE);
	memset(&ev, 0, sizeof(ev));
	ev.event_number = IT_CM_MSG_CONN_ESTABLISHED_EVENT;
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, NULL),
			 HOSTRDMA_IMM_NONE);
	ck_assert_uint_eq(hostrdma_ia_imm_data_size(NULL), 0);
	ck_assert_uint_eq(hostrdma_ia_imm_data_size((it_ia_handle_t)F.pz), 0);
	ck_assert_it(hostrdma_post_send_imm(NULL, NULL, 0, 1, CN, 1),
		     IT_ERR_INVALID_EP);
}
END_TEST

/* A device without immediate data (soft-iWARP): refused, and nothing is
 * sent. */
START_TEST(no_imm_refuses)
{
	it_lmr_triplet_t src = it_seg(&S, 0, 16), r = it_seg(&R, 0, 64);
	it_event_t ev;

	ck_assert_uint_eq(hostrdma_ia_imm_data_size(F.ia), 0);
	ck_assert_it_ok(it_post_recv(B, &r, 1, 40, CN));
	ck_assert_it(hostrdma_post_send_imm(A, &src, 1, 41, CN, 5),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(hostrdma_post_rdma_write_imm(A, &src, 1, 42, CN,
						  (uintptr_t)T.mem, T.rkey, 5),
		     IT_ERR_OP_NOT_SUPPORTED);
	/* The receive is still there for the next plain Send. */
	ck_assert_it_ok(it_post_send(A, &src, 1, 43, CN));
	two_events(43, IT_DTO_SEND_CMPL_EVENT, 40, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 16);
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, NULL),
			 HOSTRDMA_IMM_NONE);
	for (size_t i = 0; i < T.len; i++)
		ck_assert_msg(T.mem[i] == 0x5a, "target byte %zu", i);
}
END_TEST

Suite *suite_itapi_imm(void)
{
	Suite *s = suite_create("itapi-imm");
	TCase *tc = tcase_create("rxe-lo");

	tcase_add_checked_fixture(tc, setup_rxe, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rdma_write_imm);
	tcase_add_test(tc, rdma_write_imm_empty);
	tcase_add_test(tc, send_imm_then_plain);
	tcase_add_test(tc, careless);
	suite_add_tcase(s, tc);
	tc = tcase_create("siw-lo");
	tcase_add_checked_fixture(tc, setup_siw, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, no_imm_refuses);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_itapi_imm_device(bool imm)
{
	Suite *s = suite_create("itapi-imm");
	TCase *tc = tcase_create("device");

	/* The runner's it_setup_* name its device either way. */
	tcase_add_checked_fixture(tc, imm ? setup_rxe : setup_siw, teardown);
	tcase_set_timeout(tc, 60);
	if (imm) {
		tcase_add_test(tc, rdma_write_imm);
		tcase_add_test(tc, rdma_write_imm_empty);
		tcase_add_test(tc, send_imm_then_plain);
		tcase_add_test(tc, careless);
	} else {
		tcase_add_test(tc, no_imm_refuses);
	}
	suite_add_tcase(s, tc);
	return s;
}
