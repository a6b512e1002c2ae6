/* SPDX-License-Identifier: MIT */
/*
 * IT-API posting: argument checks of every it_post_*, unsignalled WRs and
 * the queue limit, completion statuses (local protection, remote access,
 * receiver not ready), RDMA Write and Read with the bytes checked on both
 * sides of the target, Send with Invalidate, flushes when an endpoint
 * goes, and what is not supported (atomics on these providers, RDMA Read
 * into an RMR).
 */
#include "config.h"

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"
#ifndef HOSTRDMA_CONFORMANCE_RUNNER
#include "vp/siw/siw.h"
#endif

/* Completions that wake a waiter: it_evd_wait sleeps through the others
 * (IT_NOTIFY_FLAG). */
#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

static struct it_fix F;
static it_ep_handle_t A, B;
static struct it_buf S, R;

static void setup_common(void)
{
	it_fix_open(&F);
	A = it_ep_new(&F);
	B = it_ep_new(&F);
	it_buf_new(&F, &S, 8192, IT_PRIV_LOCAL);
	it_buf_new(&F, &R, 8192,
		   IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE | IT_PRIV_REMOTE_READ);
}

static void setup(void)
{
	it_setup_testprov();
	setup_common();
	it_testprov_pair(A, B);
}

static void setup_siw(void)
{
	it_setup_siw();
	setup_common();
	it_connect_pair(&F, A, B);
}

#ifndef HOSTRDMA_CONFORMANCE_RUNNER
/* soft-RoCE: connections through the IB CM */
static void setup_rxe(void)
{
	it_setup_rxe();
	setup_common();
}
#endif

/* soft-iWARP sending large payloads with MSG_ZEROCOPY. */
static void setup_siw_zc(void)
{
	it_setup_siw();
	g_setenv("HOSTRDMA_OPTIONS", "siw.mpa_timeout_ms=1500,siw.zcopy_min=65536",
		 TRUE);
	setup_common();
	it_connect_pair(&F, A, B);
}

static void teardown(void)
{
	it_buf_free(&S);
	it_buf_free(&R);
	it_fix_close(&F);
	it_teardown();
}

static void expect(it_event_type_t type, it_dto_cookie_t cookie,
		   it_dto_status_t status, it_event_t *out)
{
	it_event_t ev;

	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, type);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie);
	ck_assert_msg(ev.dto_cmpl.dto_status == status,
		      "cookie %llu: DTO status %d, expected %d",
		      (unsigned long long)cookie, ev.dto_cmpl.dto_status,
		      status);
	if (out)
		*out = ev;
}

/* The next @n events in any order (different endpoints complete
 * independently): each must be the one in @want with its cookie. */
struct want {
	it_event_type_t type;
	it_dto_cookie_t cookie;
	it_dto_status_t status;
	it_event_t got;
};

static void expect_any_order(struct want *w, int n)
{
	for (int i = 0; i < n; i++) {
		it_event_t ev;
		int j;

		it_wait_event(F.dto, &ev);
		for (j = 0; j < n; j++)
			if (w[j].cookie == ev.dto_cmpl.cookie)
				break;
		ck_assert_msg(j < n, "unexpected cookie %llu",
			      (unsigned long long)ev.dto_cmpl.cookie);
		ck_assert_event(&ev, w[j].type);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, w[j].status);
		w[j].got = ev;
	}
}

START_TEST(argument_checks)
{
	it_ep_handle_t idle = it_ep_new(&F);
	it_lmr_triplet_t t[8];
	it_lmr_triplet_t bad;
	const it_dto_flags_t C = IT_COMPLETION_FLAG;

	for (int i = 0; i < 8; i++)
		t[i] = it_seg(&S, (size_t)i * 8, 8);
	ck_assert_it(it_post_send(idle, t, 1, 1, C), IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_post_rdma_write(idle, t, 1, 1, C, 0, R.rkey),
		     IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_post_send(NULL, t, 1, 1, C), IT_ERR_INVALID_EP);
	ck_assert_it(it_post_send(A, t, 5, 1, C), IT_ERR_INVALID_NUM_SEGMENTS);
	ck_assert_it(it_post_recv(B, t, 5, 1, C), IT_ERR_INVALID_NUM_SEGMENTS);
	ck_assert_it(it_post_rdma_write(A, t, 5, 1, C, 0, R.rkey),
		     IT_ERR_INVALID_NUM_SEGMENTS);
	ck_assert_it(it_post_rdma_read(A, t, 5, 1, C, 0, R.rkey),
		     IT_ERR_INVALID_NUM_SEGMENTS);
	ck_assert_it(it_post_send(A, NULL, 1, 1, C), IT_ERR_FAULT);
	bad = t[0];
	bad.lmr = (it_lmr_handle_t)&bad;
	ck_assert_it(it_post_send(A, &bad, 1, 1, C), IT_ERR_INVALID_LMR);
	ck_assert_it(it_post_recv(B, &bad, 1, 1, C), IT_ERR_INVALID_LMR);
	bad = t[0];
	bad.length = (it_length_t)1 << 33;
	ck_assert_it(it_post_send(A, &bad, 1, 1, C), IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_post_send(A, t, 1, 1, (it_dto_flags_t)0x100),
		     IT_ERR_INVALID_DTO_FLAGS);
	ck_assert_it(it_post_send(A, t, 1, 1, IT_UNLINK_LOCAL_SINK),
		     IT_ERR_INVALID_DTO_FLAGS);
	ck_assert_it(it_post_rdma_write(A, t, 1, 1, IT_SOLICITED_WAIT_FLAG, 0,
					R.rkey),
		     IT_ERR_INVALID_DTO_FLAGS);
	ck_assert_it(it_post_recv(B, t, 1, 1, IT_BARRIER_FENCE_FLAG),
		     IT_ERR_INVALID_DTO_FLAGS);
	/* STags and R_Keys have 32 bits. */
	ck_assert_it(it_post_rdma_write(A, t, 1, 1, C, 0,
					(it_rmr_context_t)1 << 32),
		     IT_ERR_RANGE);
	ck_assert_it(it_post_recv(NULL, t, 1, 1, C), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_post_recv(F.pz, t, 1, 1, C), IT_ERR_INVALID_HANDLE);
	ck_assert_it_ok(it_ep_free(idle));
}
END_TEST

START_TEST(payload_limit)
{
	it_ep_attributes_t a;
	it_ep_handle_t x, y;
	it_lmr_triplet_t t = it_seg(&S, 0, 101);

	it_ep_attr_default(&F, &a, 8);
	a.max_dto_payload_size = 100;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, 0, &a, &x));
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, 0, &a, &y));
	it_testprov_pair(x, y);
	ck_assert_it(it_post_send(x, &t, 1, 1, IT_COMPLETION_FLAG),
		     IT_ERR_PAYLOAD_SIZE);
	t.length = 100;
	ck_assert_it_ok(it_post_recv(y, &t, 1, 2, IT_COMPLETION_FLAG));
	ck_assert_it_ok(it_post_send(x, &t, 1, 3, IT_COMPLETION_FLAG));
	expect(IT_DTO_RC_RECV_CMPL_EVENT, 2, IT_DTO_SUCCESS, NULL);
	expect(IT_DTO_SEND_CMPL_EVENT, 3, IT_DTO_SUCCESS, NULL);
	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_ep_free(y));
}
END_TEST

/* Unsignalled sends hold their slots until a signalled one completes. */
START_TEST(unsignalled_and_queue_limit)
{
	it_lmr_triplet_t t = it_seg(&S, 0, 0);
	it_ep_param_t p;
	it_event_t ev;
	size_t n;

	ck_assert_it_ok(it_ep_query(A, IT_EP_PARAM_MAX_REQ_DTO, &p));
	n = p.attr.max_request_dtos;
	for (size_t i = 0; i < n; i++)
		ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 100 + i, 0,
						   (uintptr_t)R.mem, R.rkey));
	ck_assert_it(it_post_rdma_write(A, &t, 1, 999, IT_COMPLETION_FLAG,
					(uintptr_t)R.mem, R.rkey),
		     IT_ERR_TOO_MANY_POSTS);
	ck_assert_it(it_evd_dequeue(F.dto, &ev), IT_ERR_QUEUE_EMPTY);

	/* On a second pair: n-1 unsignalled, then one signalled retires
	 * them all with a single event. */
	{
		it_ep_handle_t c = it_ep_new(&F), d = it_ep_new(&F);

		it_testprov_pair(c, d);
		ck_assert_it_ok(it_ep_free(A));
		A = c;
	}
	for (size_t i = 0; i + 1 < n; i++)
		ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 100 + i, 0,
						   (uintptr_t)R.mem, R.rkey));
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 7, IT_COMPLETION_FLAG,
					   (uintptr_t)R.mem, R.rkey));
	expect(IT_DTO_RDMA_WRITE_CMPL_EVENT, 7, IT_DTO_SUCCESS, NULL);
	/* The whole queue is free again. */
	for (size_t i = 0; i < n; i++)
		ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 200 + i,
						   i + 1 == n ?
							   IT_COMPLETION_FLAG :
							   0,
						   (uintptr_t)R.mem, R.rkey));
	expect(IT_DTO_RDMA_WRITE_CMPL_EVENT, 200 + n - 1, IT_DTO_SUCCESS, NULL);
	ck_assert_it(it_evd_dequeue(F.dto, &ev), IT_ERR_QUEUE_EMPTY);
}
END_TEST

START_TEST(completion_errors)
{
	it_lmr_triplet_t t = it_seg(&S, 0, 16);
	it_event_t ev;

	/* A local segment outside its LMR: the provider refuses it in the
	 * completion, nothing is sent. */
	t.addr.abs = S.mem + S.len - 8;
	ck_assert_it_ok(it_post_send(A, &t, 1, 1, IT_COMPLETION_FLAG));
	expect(IT_DTO_SEND_CMPL_EVENT, 1, IT_DTO_ERR_LOCAL_PROTECTION, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 0);
	/* No receive posted on the test provider: receiver not ready. */
	t = it_seg(&S, 0, 16);
	ck_assert_it_ok(it_post_send(A, &t, 1, 2, IT_COMPLETION_FLAG));
	expect(IT_DTO_SEND_CMPL_EVENT, 2, IT_DTO_ERR_RECEIVER_NOT_READY, NULL);
	/* A write past the remote region. */
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 3, IT_COMPLETION_FLAG,
					   (uintptr_t)R.mem + R.len - 8,
					   R.rkey));
	expect(IT_DTO_RDMA_WRITE_CMPL_EVENT, 3, IT_DTO_ERR_REMOTE_ACCESS, NULL);
	ck_assert_uint_eq(R.mem[R.len - 8], 0);
	/* A wrong key. */
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 4, IT_COMPLETION_FLAG,
					   (uintptr_t)R.mem, R.rkey ^ 0xff));
	expect(IT_DTO_RDMA_WRITE_CMPL_EVENT, 4, IT_DTO_ERR_REMOTE_ACCESS, NULL);
	ck_assert_uint_eq(R.mem[0], 0);
}
END_TEST

/*
 * Write @len bytes at @off of R from S, then check exactly those changed.
 * The requester's completion says the data left (iWARP has no RDMA-level
 * acknowledgement); a Send after the Write, once received, says it was
 * placed (RFC 5040 §5.5: a Send is delivered after the Writes before it).
 */
static void write_and_check(size_t off, size_t len, it_dto_cookie_t c)
{
	struct it_buf msg;
	it_lmr_triplet_t t[2];

	it_buf_new(&F, &msg, 64, IT_PRIV_LOCAL);
	memset(R.mem, 0xee, R.len);
	for (size_t i = 0; i < len; i++)
		S.mem[i] = (unsigned char)(i * 13 + 5);
	t[0] = it_seg(&msg, 0, 64);
	ck_assert_it_ok(it_post_recv(B, t, 1, c + 1000, CN));
	/* Two segments, one write. */
	t[0] = it_seg(&S, 0, len / 2);
	t[1] = it_seg(&S, len / 2, len - len / 2);
	ck_assert_it_ok(it_post_rdma_write(A, t, 2, c,
					   IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
					   it_make_rdma_addr_absolute(R.mem +
								      off),
					   R.rkey));
	t[0] = it_seg(&msg, 0, 1);
	ck_assert_it_ok(it_post_send(A, t, 1, c + 2000, CN));
	{
		struct want w[] = {
			{ IT_DTO_RDMA_WRITE_CMPL_EVENT, c, IT_DTO_SUCCESS },
			{ IT_DTO_SEND_CMPL_EVENT, c + 2000, IT_DTO_SUCCESS },
			{ IT_DTO_RC_RECV_CMPL_EVENT, c + 1000,
			  IT_DTO_SUCCESS },
		};

		expect_any_order(w, 3);
		ck_assert_uint_eq(w[0].got.dto_cmpl.transferred_length, len);
		ck_assert_ptr_eq(w[0].got.dto_cmpl.ep, A);
	}
	ck_assert_int_eq(memcmp(R.mem + off, S.mem, len), 0);
	for (size_t i = 0; i < R.len; i++)
		if (i < off || i >= off + len)
			ck_assert_msg(R.mem[i] == 0xee, "byte %zu touched", i);
	it_buf_free(&msg);
}

START_TEST(rdma_write)
{
	write_and_check(100, 3000, 1);
	write_and_check(0, 8192, 2);
	write_and_check(8191, 1, 3);
}
END_TEST

/*
 * IT_COALESCE_WR_FLAG: ten Writes of 100 bytes, all but the last posted
 * with the flag, and a Send behind them. Every Write completes, each
 * landed at its offset, nothing else of R changed.
 */
START_TEST(coalesced_writes)
{
	struct it_buf msg;
	it_lmr_triplet_t t;
	struct want w[12];
	int i;

	it_buf_new(&F, &msg, 64, IT_PRIV_LOCAL);
	memset(R.mem, 0xee, R.len);
	for (i = 0; i < 1000; i++)
		S.mem[i] = (unsigned char)(i * 7 + 1);
	t = it_seg(&msg, 0, 64);
	ck_assert_it_ok(it_post_recv(B, &t, 1, 500, CN));
	for (i = 0; i < 10; i++) {
		it_dto_flags_t fl = CN | (i < 9 ? IT_COALESCE_WR_FLAG : 0);

		t = it_seg(&S, (size_t)i * 100, 100);
		ck_assert_it_ok(it_post_rdma_write(
			A, &t, 1, 400 + i, fl,
			it_make_rdma_addr_absolute(R.mem + 50 + i * 100),
			R.rkey));
		w[i] = (struct want){ IT_DTO_RDMA_WRITE_CMPL_EVENT,
				      400 + i, IT_DTO_SUCCESS };
	}
	t = it_seg(&msg, 0, 1);
	ck_assert_it_ok(it_post_send(A, &t, 1, 600, CN));
	w[10] = (struct want){ IT_DTO_SEND_CMPL_EVENT, 600, IT_DTO_SUCCESS };
	w[11] = (struct want){ IT_DTO_RC_RECV_CMPL_EVENT, 500,
			       IT_DTO_SUCCESS };
	expect_any_order(w, 12);
	for (i = 0; i < 10; i++)
		ck_assert_uint_eq(w[i].got.dto_cmpl.transferred_length, 100);
	ck_assert_int_eq(memcmp(R.mem + 50, S.mem, 1000), 0);
	for (size_t k = 0; k < R.len; k++)
		if (k < 50 || k >= 1050)
			ck_assert_msg(R.mem[k] == 0xee, "byte %zu touched", k);
	it_buf_free(&msg);
}
END_TEST

START_TEST(rdma_read)
{
	struct it_buf sink;
	it_lmr_triplet_t t;
	it_event_t ev;

	/* iWARP: the sink of a Read needs remote write rights. */
	it_buf_new(&F, &sink, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	for (size_t i = 0; i < R.len; i++)
		R.mem[i] = (unsigned char)(i ^ 0xa5);
	memset(sink.mem, 0x11, sink.len);
	t = it_seg(&sink, 10, 2000);
	ck_assert_it_ok(it_post_rdma_read(A, &t, 1, 21,
					  IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
					  (uintptr_t)R.mem + 500, R.rkey));
	expect(IT_DTO_RDMA_READ_CMPL_EVENT, 21, IT_DTO_SUCCESS, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 2000);
	ck_assert_int_eq(memcmp(sink.mem + 10, R.mem + 500, 2000), 0);
	ck_assert_uint_eq(sink.mem[9], 0x11);
	ck_assert_uint_eq(sink.mem[2010], 0x11);
	/* The remote region must allow reads: S does not. */
	ck_assert_it_ok(it_post_rdma_read(B, &t, 1, 22, IT_COMPLETION_FLAG,
					  (uintptr_t)S.mem, S.rkey));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_READ_CMPL_EVENT);
	ck_assert_int_ne(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	/* The failed read broke the connection: both ends learn. */
	it_wait_event(F.msg, &ev);
	ck_assert(ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT ||
		  ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT);
	/* ...and the affiliated async EVD names an endpoint and why. */
	it_wait_event(F.aff, &ev);
	ck_assert_msg((ev.event_number & IT_EVENT_STREAM_MASK) ==
				      IT_ASYNC_AFF_EVENT_STREAM &&
			      ev.event_number != IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE,
		      "event %s", itapi_event_name(ev.event_number));
	ck_assert(ev.aff_async.cause.ep == A || ev.aff_async.cause.ep == B);
	ck_assert_ptr_eq(ev.aff_async.evd, F.aff);
	it_buf_free(&sink);
}
END_TEST

/*
 * A send queue completes in posting order (it_api(3); IBA 10.8.5), also
 * when a later WR finishes first: a Write or Send posted behind a 1 MiB
 * Read is on the wire long before the Read's response is in, and a small
 * Write is copied out before the kernel lets go of an earlier zero-copy
 * one. Each round posts a Read, a Write, an unsignalled Write and a Send;
 * A's completions must come back as Read, Write, Send with every byte in
 * place, and no completion may be lost (before the provider kept them in
 * order, IT-API dropped the Read's as "names no outstanding request" and
 * the wait below timed out).
 */
static void posting_order_rounds(size_t big)
{
	struct it_buf src, sink, dst, rbuf;
	it_lmr_triplet_t t;

	it_buf_new(&F, &src, big, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
	it_buf_new(&F, &sink, big, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	it_buf_new(&F, &dst, big, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	it_buf_new(&F, &rbuf, 64, IT_PRIV_LOCAL);
	for (size_t i = 0; i < big; i++) {
		src.mem[i] = (unsigned char)(i * 7 + 3);
		S.mem[i % S.len] = (unsigned char)(i * 13 + 1);
	}
	for (int round = 0; round < 6; round++) {
		it_dto_cookie_t base = 1000 + 10 * (it_dto_cookie_t)round;
		it_dto_cookie_t order[3];
		int n_a = 0, n_recv = 0;

		memset(sink.mem, 0x5a, sink.len);
		memset(dst.mem, 0x5a, dst.len);
		t = it_seg(&rbuf, 0, 64);
		ck_assert_it_ok(it_post_recv(B, &t, 1, base + 9, CN));
		t = it_seg(&sink, 0, big);
		ck_assert_it_ok(it_post_rdma_read(A, &t, 1, base + 1, CN,
						  (uintptr_t)src.mem,
						  src.rkey));
		/* Even rounds: a Write as large as the Read (zero-copy when
		 * the fixture turned it on), odd: a small one. */
		t = round % 2 ? it_seg(&S, 0, 4096) : it_seg(&src, 0, big);
		ck_assert_it_ok(it_post_rdma_write(A, &t, 1, base + 2, CN,
						   (uintptr_t)dst.mem,
						   dst.rkey));
		t = it_seg(&S, 0, 100);
		ck_assert_it_ok(it_post_rdma_write(A, &t, 1, base + 3, 0,
						   (uintptr_t)dst.mem + big -
							   100,
						   dst.rkey));
		t = it_seg(&S, 0, 64);
		ck_assert_it_ok(it_post_send(A, &t, 1, base + 4, CN));
		while (n_a < 3 || n_recv < 1) {
			it_event_t ev;

			ck_assert_msg(it_wait_event_for(F.dto, IT_WAIT_US, &ev),
				      "round %d: %d of A's 3 completions and "
				      "%d of 1 receive came",
				      round, n_a, n_recv);
			ck_assert_msg(ev.dto_cmpl.dto_status == IT_DTO_SUCCESS,
				      "cookie %llu: status %d",
				      (unsigned long long)ev.dto_cmpl.cookie,
				      ev.dto_cmpl.dto_status);
			if (ev.dto_cmpl.ep == B) {
				ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
				ck_assert_uint_eq(ev.dto_cmpl.cookie, base + 9);
				n_recv++;
				continue;
			}
			ck_assert_ptr_eq(ev.dto_cmpl.ep, A);
			ck_assert_int_lt(n_a, 3);
			order[n_a++] = ev.dto_cmpl.cookie;
		}
		ck_assert_msg(order[0] == base + 1 && order[1] == base + 2 &&
				      order[2] == base + 4,
			      "round %d: completions %llu %llu %llu, posted "
			      "%llu %llu %llu",
			      round, (unsigned long long)order[0],
			      (unsigned long long)order[1],
			      (unsigned long long)order[2],
			      (unsigned long long)base + 1,
			      (unsigned long long)base + 2,
			      (unsigned long long)base + 4);
		ck_assert_int_eq(memcmp(sink.mem, src.mem, big), 0);
		ck_assert_int_eq(memcmp(rbuf.mem, S.mem, 64), 0);
		if (round % 2) {
			ck_assert_int_eq(memcmp(dst.mem, S.mem, 4096), 0);
			ck_assert_uint_eq(dst.mem[4096], 0x5a);
			ck_assert_uint_eq(dst.mem[big - 101], 0x5a);
		} else {
			ck_assert_int_eq(memcmp(dst.mem, src.mem, big - 100),
					 0);
		}
		ck_assert_int_eq(memcmp(dst.mem + big - 100, S.mem, 100), 0);
	}
	it_buf_free(&rbuf);
	it_buf_free(&dst);
	it_buf_free(&sink);
	it_buf_free(&src);
}

/*
 * IT_UNLINK_FENCE_FLAG on Sends, Writes and Reads (a local fence: the
 * request waits for earlier RMR unlinks; siw waits for earlier Reads as
 * well): taken, and the fenced requests complete with their data.
 */
START_TEST(unlink_fence_flag)
{
	const it_dto_flags_t CNF = IT_COMPLETION_FLAG | IT_NOTIFY_FLAG |
				   IT_UNLINK_FENCE_FLAG;
	struct it_buf sink, msg;
	it_lmr_triplet_t t, m;

	it_buf_new(&F, &sink, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	it_buf_new(&F, &msg, 64, IT_PRIV_LOCAL);
	for (size_t i = 0; i < R.len; i++)
		R.mem[i] = (unsigned char)(i ^ 0x5a);
	for (size_t i = 0; i < 100; i++)
		S.mem[i] = (unsigned char)(i + 1);
	m = it_seg(&msg, 0, 64);
	ck_assert_it_ok(it_post_recv(B, &m, 1, 40,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	t = it_seg(&sink, 0, 1000);
	ck_assert_it_ok(it_post_rdma_read(A, &t, 1, 41, CNF,
					  (uintptr_t)R.mem + 2000, R.rkey));
	t = it_seg(&S, 0, 100);
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 42, CNF,
					   (uintptr_t)R.mem, R.rkey));
	t = it_seg(&S, 0, 8);
	ck_assert_it_ok(it_post_send(A, &t, 1, 43, CNF));
	{
		/* A's complete in posting order; B's receive interleaves. */
		struct want w[] = {
			{ IT_DTO_RDMA_READ_CMPL_EVENT, 41, IT_DTO_SUCCESS },
			{ IT_DTO_RDMA_WRITE_CMPL_EVENT, 42, IT_DTO_SUCCESS },
			{ IT_DTO_SEND_CMPL_EVENT, 43, IT_DTO_SUCCESS },
			{ IT_DTO_RC_RECV_CMPL_EVENT, 40, IT_DTO_SUCCESS },
		};

		expect_any_order(w, 4);
		ck_assert_uint_eq(w[0].got.dto_cmpl.transferred_length, 1000);
	}
	for (size_t i = 0; i < 1000; i++)
		ck_assert_uint_eq(sink.mem[i],
				  (unsigned char)((2000 + i) ^ 0x5a));
	ck_assert_int_eq(memcmp(R.mem, S.mem, 100), 0);
	ck_assert_int_eq(memcmp(msg.mem, S.mem, 8), 0);
	it_buf_free(&msg);
	it_buf_free(&sink);
}
END_TEST

START_TEST(posting_order)
{
	posting_order_rounds(1 << 20);
}
END_TEST

/* A completion that names no outstanding request (here the test
 * provider completes every send WR twice) is not dropped in silence: the
 * endpoint's failure reaches the affiliated async EVD. */
static void setup_complete_twice(void)
{
	it_setup_testprov();
	g_setenv("HOSTRDMA_OPTIONS", "test.complete_twice=on", TRUE);
	setup_common();
	it_testprov_pair(A, B);
}

START_TEST(unplaceable_completion_reported)
{
	it_lmr_triplet_t t = it_seg(&S, 0, 16);
	it_event_t ev;

	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 7, CN,
					   (uintptr_t)R.mem, R.rkey));
	expect(IT_DTO_RDMA_WRITE_CMPL_EVENT, 7, IT_DTO_SUCCESS, NULL);
	it_wait_event(F.aff, &ev);
	ck_assert_event(&ev, IT_ASYNC_AFF_EP_FAILURE);
	ck_assert_ptr_eq(ev.aff_async.cause.ep, A);
	/* Nothing else was made up from the copy. */
	ck_assert(!it_wait_event_for(F.dto, 100 * 1000, &ev));
}
END_TEST

START_TEST(send_recv_siw_and_flush)
{
	it_lmr_triplet_t t = it_seg(&R, 0, 512);
	it_event_t ev;

	ck_assert_it_ok(it_post_recv(B, &t, 1, 31, IT_COMPLETION_FLAG));
	t = it_seg(&R, 512, 512);
	ck_assert_it_ok(it_post_recv(B, &t, 1, 32, IT_COMPLETION_FLAG));
	t = it_seg(&R, 1024, 512);
	ck_assert_it_ok(it_post_recv(B, &t, 1, 33, IT_COMPLETION_FLAG));
	memcpy(S.mem, "ping", 4);
	t = it_seg(&S, 0, 4);
	ck_assert_it_ok(it_post_send(A, &t, 1, 34,
				     CN | IT_SOLICITED_WAIT_FLAG));
	{
		struct want w[] = {
			{ IT_DTO_RC_RECV_CMPL_EVENT, 31, IT_DTO_SUCCESS },
			{ IT_DTO_SEND_CMPL_EVENT, 34, IT_DTO_SUCCESS },
		};

		expect_any_order(w, 2);
		ck_assert_uint_eq(w[0].got.dto_cmpl.transferred_length, 4);
	}
	ck_assert_int_eq(memcmp(R.mem, "ping", 4), 0);
	/* Freeing B flushes its two receives back, naming B. */
	ck_assert_it_ok(it_ep_free(B));
	expect(IT_DTO_RC_RECV_CMPL_EVENT, 32, IT_DTO_ERR_FLUSHED, &ev);
	ck_assert_ptr_eq(ev.dto_cmpl.ep, B);
	expect(IT_DTO_RC_RECV_CMPL_EVENT, 33, IT_DTO_ERR_FLUSHED, NULL);
	B = NULL;
}
END_TEST

#ifndef HOSTRDMA_CONFORMANCE_RUNNER	/* (soft-iWARP's insides) */
/*
 * A thread asleep in it_evd_wait on a soft-iWARP EVD watches the sockets
 * of the EVD's QPs and reads them itself when data comes, instead of the
 * provider's thread reading and then waking it (ual_cq_wait_begin). Each
 * message here is sent once the receiver's socket is left to the waiting
 * thread (or after 100 ms: a QP busy when the waiter went to sleep is
 * not left to it): every one so sent must be read by that thread's poll;
 * all complete with their own bytes in their own slot, nothing written
 * past the slots.
 */
#define WAIT_ROUNDS 48
#define WAIT_SLOT 16

struct waiting_sender {
	it_ep_handle_t x;
	it_evd_handle_t xsq;
	struct siw_qp *qy;
	GAsyncQueue *go;
	int watched;	/* messages sent while the waiter watched */
};

static gpointer send_when_watched(gpointer data)
{
	struct waiting_sender *w = data;

	for (int i = 0; i < WAIT_ROUNDS; i++) {
		gint64 end;
		it_lmr_triplet_t t;
		it_event_t ev;

		ck_assert_ptr_nonnull(g_async_queue_timeout_pop(w->go,
								IT_WAIT_US));
		/* A QP the progress thread held when the waiter went to
		 * sleep stays the progress thread's for that sleep: then
		 * this message is its to read. */
		end = g_get_monotonic_time() + 100000;
		while (!atomic_load(&w->qy->wait_cq) &&
		       g_get_monotonic_time() < end)
			g_usleep(50);
		w->watched += atomic_load(&w->qy->wait_cq) != NULL;
		memset(S.mem + i * WAIT_SLOT, 0x61 + i % 26, WAIT_SLOT);
		t = it_seg(&S, (size_t)i * WAIT_SLOT, WAIT_SLOT);
		ck_assert_it_ok(it_post_send(w->x, &t, 1, 500 + i, CN));
		it_wait_event(w->xsq, &ev);
		ck_assert_event(&ev, IT_DTO_SEND_CMPL_EVENT);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	}
	return NULL;
}

START_TEST(waiter_reads_the_socket)
{
	struct waiting_sender w = { .go = g_async_queue_new() };
	struct itapi_ep *ey;
	struct siw_device *dev;
	it_ep_attributes_t at;
	uint64_t rx0;
	it_ep_handle_t y;
	GThread *th;

	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 64, 0,
				      NULL, &w.xsq, NULL));
	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(it_ep_rc_create(F.pz, w.xsq, F.dto, F.msg,
					IT_EP_NO_FLAG, &at, &w.x));
	y = it_ep_new(&F);
	it_connect_pair(&F, w.x, y);
	ey = (struct itapi_ep *)y;
	w.qy = to_siw_qp(ual_qp_rnicpi(ey->qp));
	dev = to_siw_dev(ual_device_rnicpi(ey->obj.ia->dev));
	rx0 = atomic_load(&dev->counters.wait_rx);
	memset(R.mem, 0xee, R.len);
	th = g_thread_new("sender", send_when_watched, &w);
	for (int i = 0; i < WAIT_ROUNDS; i++) {
		it_lmr_triplet_t t = it_seg(&R, (size_t)i * WAIT_SLOT,
					    WAIT_SLOT);
		it_event_t ev;
		size_t nmore;

		ck_assert_it_ok(it_post_recv(y, &t, 1, 700 + i, CN));
		g_async_queue_push(w.go, GINT_TO_POINTER(1));
		ck_assert_it_ok(it_evd_wait(F.dto, IT_WAIT_US, &ev, &nmore));
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		ck_assert_uint_eq(ev.dto_cmpl.cookie, 700 + i);
		ck_assert_uint_eq(ev.dto_cmpl.transferred_length, WAIT_SLOT);
		for (int k = 0; k < WAIT_SLOT; k++)
			ck_assert_int_eq(R.mem[i * WAIT_SLOT + k],
					 0x61 + i % 26);
	}
	g_thread_join(th);
	for (size_t k = WAIT_ROUNDS * WAIT_SLOT; k < R.len; k++)
		ck_assert_int_eq(R.mem[k], 0xee);
	/* Each message that came while the waiter watched was read by its
	 * poll; and it watched nearly always */
	rx0 = atomic_load(&dev->counters.wait_rx) - rx0;
	ck_assert_msg(rx0 >= (uint64_t)w.watched,
		      "the waiting thread read %llu of the %d messages sent "
		      "while it watched", (unsigned long long)rx0, w.watched);
	ck_assert_int_ge(w.watched, WAIT_ROUNDS * 3 / 4);
	/* Between waits the socket is nobody's to watch */
	ck_assert_ptr_null(atomic_load(&w.qy->wait_cq));
	ck_assert_it_ok(it_ep_free(y));
	ck_assert_it_ok(it_ep_free(w.x));
	ck_assert_it_ok(it_evd_free(w.xsq));
	g_async_queue_unref(w.go);
}
END_TEST

/*
 * What a CQ's waiter is left is exactly what it is told to watch: with
 * more QPs than it may watch, and the polls between two sleeps moving
 * the CQ's list round (siw_cq_progress starts where the last stopped),
 * every claimed QP's socket is among the descriptors returned, and none
 * beyond them is claimed (one claimed but not watched was read by
 * nobody: a message to it waited for the wait's end). The end of the
 * wait leaves none claimed.
 */
#define MANY_QPS 20
#define WATCH_MAX 4

/* The QPs of @cq claimed by its waiter; each must be among @fds. */
static unsigned int claimed_by(struct siw_cq *cq, const int *fds, int n)
{
	struct siw_list *l;
	unsigned int c = 0;

	pthread_mutex_lock(&cq->qps_lock);
	for (l = cq->qps.next; l != &cq->qps; l = l->next) {
		struct siw_qp *q = container_of(l, struct siw_cq_link,
						node)->qp;
		bool found = false;

		if (atomic_load(&q->wait_cq) != cq)
			continue;
		c++;
		for (int k = 0; k < n; k++)
			found |= fds[k] == atomic_load(&q->wait_fd);
		ck_assert_msg(found, "QP %u is claimed and not watched",
			      q->base.qp_num);
	}
	pthread_mutex_unlock(&cq->qps_lock);
	return c;
}

START_TEST(waiter_watches_what_it_is_left)
{
	it_ep_handle_t x[MANY_QPS], y[MANY_QPS];
	struct siw_qp *qy[MANY_QPS];
	struct itapi_evd *dto = (struct itapi_evd *)F.dto;
	struct siw_cq *cq = NULL;
	it_evd_handle_t xev;
	it_ep_attributes_t at;
	struct rnicpi_wc wc[4];
	int fds[WATCH_MAX], n;

	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 64, 0,
				      NULL, &xev, NULL));
	it_ep_attr_default(&F, &at, 4);
	for (int i = 0; i < MANY_QPS; i++) {
		ck_assert_it_ok(it_ep_rc_create(F.pz, xev, xev, F.msg,
						IT_EP_NO_FLAG, &at, &x[i]));
		y[i] = it_ep_new(&F);
		it_connect_pair(&F, x[i], y[i]);
		qy[i] = to_siw_qp(ual_qp_rnicpi(((struct itapi_ep *)y[i])->qp));
		cq = qy[i]->rcq;
	}
	for (int round = 0; round < 6; round++) {
		n = ual_cq_wait_begin(dto->cq, fds, WATCH_MAX);
		/* (fewer if the progress thread held some just then) */
		ck_assert_int_gt(n, 0);
		ck_assert_int_le(n, WATCH_MAX);
		ck_assert_uint_eq(claimed_by(cq, fds, n), (unsigned)n);
		/* A poll between two sleeps: the list moves round */
		ck_assert_int_ge(ual_cq_poll(dto->cq, 4, wc), 0);
	}
	ual_cq_wait_end(dto->cq);
	ck_assert_uint_eq(claimed_by(cq, fds, 0), 0);
	for (int i = 0; i < MANY_QPS; i++) {
		ck_assert_it_ok(it_ep_free(y[i]));
		ck_assert_it_ok(it_ep_free(x[i]));
	}
	ck_assert_it_ok(it_evd_free(xev));
}
END_TEST

/* A connected pair for a waiter: @x's completions go to a new *@xev,
 * @y's receives to a new *@evd of @size events; @y's soft-iWARP QP. */
static struct siw_qp *waiter_pair(size_t size, it_evd_handle_t *xev,
				  it_evd_handle_t *evd, it_ep_handle_t *x,
				  it_ep_handle_t *y)
{
	it_ep_attributes_t at;

	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 64, 0,
				      NULL, xev, NULL));
	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, size, 0,
				      NULL, evd, NULL));
	it_ep_attr_default(&F, &at, 2);
	ck_assert_it_ok(it_ep_rc_create(F.pz, *xev, *xev, F.msg,
					IT_EP_NO_FLAG, &at, x));
	ck_assert_it_ok(it_ep_rc_create(F.pz, *xev, *evd, F.msg,
					IT_EP_NO_FLAG, &at, y));
	it_connect_pair(&F, *x, *y);
	return to_siw_qp(ual_qp_rnicpi(((struct itapi_ep *)*y)->qp));
}

/* Waits up to @us for @qy's socket to be left to a waiter (@claimed) or
 * given back; fails with @why. */
static void wait_claim(struct siw_qp *qy, bool claimed, gint64 us,
		       const char *why)
{
	for (gint64 end = g_get_monotonic_time() + us;
	     (atomic_load(&qy->wait_cq) != NULL) != claimed;) {
		ck_assert_msg(g_get_monotonic_time() < end, "%s", why);
		g_usleep(100);
	}
}

/* @x writes @len bytes of S at @soff into R at @roff, which completes
 * nothing at R's end; its own completion is taken from @xev. */
static void write_into_r(it_ep_handle_t x, it_evd_handle_t xev, size_t soff,
			 size_t roff, size_t len, uint64_t cookie)
{
	it_lmr_triplet_t t = it_seg(&S, soff, len);
	it_event_t ev;

	ck_assert_it_ok(it_post_rdma_write(x, &t, 1, cookie, CN,
					   it_make_rdma_addr_absolute(R.mem +
								      roff),
					   R.rkey));
	it_wait_event(xev, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_WRITE_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
}

/*
 * A full EVD takes nothing from its CQ, so a waiter on it cannot read a
 * socket: it is left none. Here the EVD fills while the waiter sleeps
 * (two receives completed without IT_NOTIFY_FLAG, which wake nobody);
 * then the peer writes into our buffer, which completes nothing here. The
 * progress thread places the Write, and the waiter sleeps on until its
 * time-out, instead of waking at once, again and again, for bytes it
 * could not take (a whole core for the wait before).
 */
struct full_waiter {
	it_evd_handle_t evd;
	it_status_t st;
	double cpu_s;
};

static gpointer wait_on_full(gpointer data)
{
	struct full_waiter *w = data;
	struct timespec a, b;
	it_event_t ev;
	size_t nmore;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	w->st = it_evd_wait(w->evd, 1000000, &ev, &nmore);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	w->cpu_s = (double)(b.tv_sec - a.tv_sec) +
		   (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	return NULL;
}

START_TEST(waiter_on_a_full_evd_sleeps)
{
	struct full_waiter w = { 0 };
	it_evd_handle_t xev;
	it_ep_handle_t x, y;
	it_lmr_triplet_t t;
	struct siw_qp *qy;
	it_event_t ev;
	GThread *th;

	qy = waiter_pair(2, &xev, &w.evd, &x, &y);
	memset(R.mem, 0xee, R.len);
	for (int i = 0; i < 2; i++) {
		t = it_seg(&R, (size_t)i * 16, 16);
		ck_assert_it_ok(it_post_recv(y, &t, 1, 800 + i,
					     IT_COMPLETION_FLAG));
	}
	th = g_thread_new("full-waiter", wait_on_full, &w);
	/* asleep, the socket its */
	wait_claim(qy, true, 500000, "the socket was not left to the waiter");
	memset(S.mem, 0x5d, 4096);
	for (int i = 0; i < 2; i++) {
		t = it_seg(&S, (size_t)i * 16, 16);
		ck_assert_it_ok(it_post_send(x, &t, 1, 900 + i, CN));
		it_wait_event(xev, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	}
	/* The waiter takes both and, full, lets the socket go */
	wait_claim(qy, false, 500000,
		   "the waiter keeps the socket with a full EVD");
	write_into_r(x, xev, 0, 4096, 4096, 950);
	g_thread_join(th);
	/* Two events that wake nobody: a time-out that says where */
	ck_assert_int_eq(w.st, IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_msg(w.cpu_s < 0.3, "the waiter used %.2f s of CPU in 1 s",
		      w.cpu_s);
	for (size_t k = 0; k < 4096; k++)
		ck_assert_int_eq(R.mem[4096 + k], 0x5d);
	for (int i = 0; i < 2; i++) {
		ck_assert_it_ok(it_evd_dequeue(w.evd, &ev));
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_uint_eq(ev.dto_cmpl.cookie, 800 + i);
		for (int k = 0; k < 16; k++)
			ck_assert_int_eq(R.mem[i * 16 + k], 0x5d);
	}
	ck_assert_it_ok(it_ep_free(y));
	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_evd_free(w.evd));
	ck_assert_it_ok(it_evd_free(xev));
}
END_TEST

/*
 * An AEVD bound to an EVD while a thread waits on it, then unbound: the
 * waiter sleeps on what is watched at each moment. Bound, the pump takes
 * the CQ's wake-ups, so the waiter gives back the socket it was left (it
 * kept it before, asleep, and with it a close's wake-up went to the
 * pump); unbound, nobody but the waiter watches the CQ, so it must watch
 * it again: the message sent then completes its wait at once, not at the
 * wait's time-out (20 s). The bytes of a Write and of the message are in
 * place, and nothing else changed.
 */
struct timed_waiter {
	it_evd_handle_t evd;
	it_status_t st;
	it_event_t ev;
	gint64 woke_us;
};

static gpointer wait_timed(gpointer data)
{
	struct timed_waiter *w = data;
	size_t nmore;

	w->st = it_evd_wait(w->evd, IT_WAIT_US, &w->ev, &nmore);
	w->woke_us = g_get_monotonic_time();
	return NULL;
}

START_TEST(waiter_follows_aevd_binding)
{
	struct timed_waiter w = { 0 };
	it_evd_handle_t xev, aevd;
	it_ep_handle_t x, y;
	it_evd_param_t p = { 0 };
	it_lmr_triplet_t t;
	struct siw_qp *qy;
	it_event_t ev;
	gint64 sent;
	GThread *th;

	ck_assert_it_ok(it_evd_create(F.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM,
				      0, 8, 0, NULL, &aevd, NULL));
	qy = waiter_pair(8, &xev, &w.evd, &x, &y);
	memset(R.mem, 0xee, 128);
	t = it_seg(&R, 0, 16);
	ck_assert_it_ok(it_post_recv(y, &t, 1, 1000, CN));
	th = g_thread_new("aevd-waiter", wait_timed, &w);
	/* asleep, the socket its */
	wait_claim(qy, true, 2000000, "the socket was not left to the waiter");
	p.aevd = aevd;
	ck_assert_it_ok(it_evd_modify(w.evd, IT_EVD_PARAM_AEVD_HANDLE, &p));
	wait_claim(qy, false, 2000000,
		   "an AEVD came and the waiter keeps the socket");
	/* The peer writes into our buffer, which completes nothing here:
	 * the waiter sleeps on (before, a waiter woken so while the AEVD
	 * was bound slept on the EVD's fd alone from then on, and the
	 * receive below woke it only at its time-out) */
	memset(S.mem + 64, 0x5a, 32);
	write_into_r(x, xev, 64, 64, 32, 1050);
	g_usleep(20000);
	ck_assert_int_eq(w.woke_us, 0);
	p.aevd = NULL;
	ck_assert_it_ok(it_evd_modify(w.evd, IT_EVD_PARAM_AEVD_HANDLE, &p));
	memset(S.mem, 0x3c, 16);
	t = it_seg(&S, 0, 16);
	sent = g_get_monotonic_time();
	ck_assert_it_ok(it_post_send(x, &t, 1, 1100, CN));
	it_wait_event(xev, &ev);
	ck_assert_event(&ev, IT_DTO_SEND_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	g_thread_join(th);
	ck_assert_it_ok(w.st);
	ck_assert_event(&w.ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_int_eq(w.ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(w.ev.dto_cmpl.cookie, 1000);
	ck_assert_uint_eq(w.ev.dto_cmpl.transferred_length, 16);
	ck_assert_msg(w.woke_us - sent < 5000000,
		      "the waiter woke %lld us after the send",
		      (long long)(w.woke_us - sent));
	for (int k = 0; k < 128; k++) {
		int want = 0xee;

		if (k < 16)
			want = 0x3c;
		else if (k >= 64 && k < 96)
			want = 0x5a;
		ck_assert_int_eq(R.mem[k], want);
	}
	/* The unbound AEVD was told of nothing */
	ck_assert_int_eq(it_evd_dequeue(aevd, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_it_ok(it_ep_free(y));
	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_evd_free(w.evd));
	ck_assert_it_ok(it_evd_free(aevd));
	ck_assert_it_ok(it_evd_free(xev));
}
END_TEST

/*
 * Both ends close in order at once, as a ping-pong's two ends do when
 * they are done: one end's QP may take the peer's close (and go to ERR)
 * before its own disconnect is asked for, with the DISCONNECTED not yet
 * come through; then there is no close of its own to start. Both ends
 * see the orderly disconnect every time, and nothing is logged as a
 * warning (before: "modify_qp mask 0x1 state 17: Invalid argument",
 * seen at the end of a hostrdma-ping run).
 */
#define CLOSE_ROUNDS 60

struct closer {
	it_ep_handle_t ep;
	GAsyncQueue *go;
	it_status_t st;
};

static gpointer close_when_told(gpointer data)
{
	struct closer *c = data;

	ck_assert_ptr_nonnull(g_async_queue_timeout_pop(c->go, IT_WAIT_US));
	c->st = it_ep_disconnect(c->ep, NULL, 0);
	return NULL;
}

/* The first warning or critical message captured, for a failure's text */
static char *first_warning(struct tu_log_capture *cap)
{
	g_autofree char *t = tu_log_text(cap);
	char *w = strstr(t, "WARNING: ");

	if (!w)
		w = strstr(t, "CRITICAL: ");
	if (!w)
		return g_strdup("");
	return g_strndup(w, strcspn(w, "\n"));
}

START_TEST(disconnect_both_at_once)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin(NULL);

	for (int round = 0; round < CLOSE_ROUNDS; round++) {
		it_ep_handle_t x = it_ep_new(&F), y = it_ep_new(&F);
		struct closer c = { .ep = x, .go = g_async_queue_new() };
		bool seen_x = false, seen_y = false;
		it_status_t st;
		GThread *th;

		it_connect_pair(&F, x, y);
		th = g_thread_new("closer", close_when_told, &c);
		g_async_queue_push(c.go, GINT_TO_POINTER(1));
		/* Now or a moment later, the other end's close first */
		if (round % 2)
			g_usleep((gulong)(round % 7) * 10);
		st = it_ep_disconnect(y, NULL, 0);
		g_thread_join(th);
		g_async_queue_unref(c.go);
		/* (one whose DISCONNECTED came through first: not connected) */
		ck_assert_msg(st == IT_SUCCESS || st == IT_ERR_INVALID_EP_STATE,
			      "round %d: it_ep_disconnect: %d", round, st);
		ck_assert_msg(c.st == IT_SUCCESS ||
				      c.st == IT_ERR_INVALID_EP_STATE,
			      "round %d: it_ep_disconnect: %d", round, c.st);
		while (!seen_x || !seen_y) {
			it_event_t ev;

			it_wait_event(F.msg, &ev);
			ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
			ck_assert(ev.conn.ep == x || ev.conn.ep == y);
			if (ev.conn.ep == x)
				seen_x = true;
			else
				seen_y = true;
		}
		ck_assert_it_ok(it_ep_free(x));
		ck_assert_it_ok(it_ep_free(y));
		if (tu_log_count(cap, G_LOG_LEVEL_WARNING |
					      G_LOG_LEVEL_CRITICAL, NULL)) {
			g_autofree char *w = first_warning(cap);

			ck_abort_msg("round %d: logged %s", round, w);
		}
	}
}
END_TEST
#endif /* HOSTRDMA_CONFORMANCE_RUNNER */

START_TEST(send_with_invalidate)
{
	struct it_buf target;
	it_lmr_triplet_t t;

	/* A Send naming a key of the peer to invalidate (RFC 5040 §6.5):
	 * delivered like a Send. Whether the provider invalidates a
	 * region's key is its rule; IT-API means it for RMRs. */
	it_buf_new(&F, &target, 1024, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	t = it_seg(&R, 0, 64);
	ck_assert_it_ok(it_post_recv(B, &t, 1, 41, CN));
	memcpy(S.mem, "unlink!!", 8);
	t = it_seg(&S, 0, 8);
	ck_assert_it(it_post_send_and_unlink(A, &t, 1, 42, IT_COMPLETION_FLAG,
					     (it_rmr_context_t)1 << 40),
		     IT_ERR_RANGE);
	ck_assert_it_ok(it_post_send_and_unlink(A, &t, 1, 42, CN,
						target.rkey));
	{
		struct want w[] = {
			{ IT_DTO_RC_RECV_CMPL_EVENT, 41, IT_DTO_SUCCESS },
			{ IT_DTO_SEND_CMPL_EVENT, 42, IT_DTO_SUCCESS },
		};

		expect_any_order(w, 2);
		ck_assert_uint_eq(w[0].got.dto_cmpl.transferred_length, 8);
	}
	ck_assert_int_eq(memcmp(R.mem, "unlink!!", 8), 0);
	it_buf_free(&target);
}
END_TEST

START_TEST(not_supported)
{
	it_lmr_triplet_t t = it_seg(&S, 0, 8);
	it_rmr_triplet_t rt = { 0 };
	it_ia_info_t *info = NULL;
	bool ext, atomics;

	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ext = info->rdma_read_local_extensions;
	atomics = info->atomic_support;
	it_ia_info_free(info);
	/* (An IA with atomics: itapi-atomic-rxe.) */
	if (!atomics)
		ck_assert_it(it_post_atomic(A, IT_FETCH_AND_ADD, 1, 0, &t, 1,
					    IT_COMPLETION_FLAG,
					    (uintptr_t)R.mem, R.rkey),
			     IT_ERR_OP_NOT_SUPPORTED);
	/* A window as the sink of a Read: siw has it (then a NULL RMR is
	 * no RMR; itapi-keys reads into one), the test provider not. */
	ck_assert_it(it_post_rdma_read_to_rmr(A, &rt, 1, 1,
					      IT_COMPLETION_FLAG, 0, 0),
		     ext ? IT_ERR_INVALID_RMR : IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(it_post_atomic(NULL, IT_FETCH_AND_ADD, 1, 0, &t, 1,
				    IT_COMPLETION_FLAG, 0, 0),
		     IT_ERR_INVALID_EP);
}
END_TEST

START_TEST(no_send_invalidate_here)
{
	it_lmr_triplet_t t = it_seg(&S, 0, 8);

	ck_assert_it(it_post_send_and_unlink(A, &t, 1, 1, IT_COMPLETION_FLAG,
					     R.rkey),
		     IT_ERR_OP_NOT_SUPPORTED);
}
END_TEST

Suite *suite_itapi_post(void)
{
	Suite *s = suite_create("itapi-post");
	TCase *tc = tcase_create("testprov");
	TCase *siw = tcase_create("siw");
	TCase *siw_zc = tcase_create("siw-zerocopy");
	TCase *twice = tcase_create("testprov-complete-twice");
#ifndef HOSTRDMA_CONFORMANCE_RUNNER
	TCase *rxe = tcase_create("rxe");
#endif

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, argument_checks);
	tcase_add_test(tc, payload_limit);
	tcase_add_test(tc, unsignalled_and_queue_limit);
	tcase_add_test(tc, completion_errors);
	tcase_add_test(tc, rdma_write);
	tcase_add_test(tc, coalesced_writes);
	tcase_add_test(tc, not_supported);
	tcase_add_test(tc, no_send_invalidate_here);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(siw, setup_siw, teardown);
	tcase_set_timeout(siw, 60);
	tcase_add_test(siw, argument_checks);
	tcase_add_test(siw, rdma_write);
	tcase_add_test(siw, coalesced_writes);
	tcase_add_test(siw, rdma_read);
	tcase_add_test(siw, unlink_fence_flag);
	tcase_add_test(siw, send_recv_siw_and_flush);
#ifndef HOSTRDMA_CONFORMANCE_RUNNER
	tcase_add_test(siw, waiter_reads_the_socket);
	tcase_add_test(siw, waiter_watches_what_it_is_left);
	tcase_add_test(siw, waiter_on_a_full_evd_sleeps);
	tcase_add_test(siw, waiter_follows_aevd_binding);
	tcase_add_test(siw, disconnect_both_at_once);
#endif
	tcase_add_test(siw, send_with_invalidate);
	tcase_add_test(siw, not_supported);
	tcase_add_test(siw, posting_order);
	suite_add_tcase(s, siw);

#ifndef HOSTRDMA_CONFORMANCE_RUNNER
	tcase_add_checked_fixture(rxe, setup_rxe, teardown);
	tcase_set_timeout(rxe, 60);
	tcase_add_test(rxe, disconnect_both_at_once);
	suite_add_tcase(s, rxe);
#endif

	tcase_add_checked_fixture(twice, setup_complete_twice, teardown);
	tcase_set_timeout(twice, 60);
	tcase_add_test(twice, unplaceable_completion_reported);
	suite_add_tcase(s, twice);

	tcase_add_checked_fixture(siw_zc, setup_siw_zc, teardown);
	tcase_set_timeout(siw_zc, 60);
	tcase_add_test(siw_zc, posting_order);
	suite_add_tcase(s, siw_zc);
	return s;
}

/*
 * The conformance runner's itapi-post: the "siw" test case's cases on the
 * device under test (it_setup_siw names it there), connected through its
 * connection manager. Left out: the "testprov" cases (their endpoints are
 * paired through the test provider's QP numbers, it_testprov_pair, and
 * no_send_invalidate_here asserts that provider's lack of Send with
 * Invalidate), "siw-zerocopy" (a soft-iWARP provider option,
 * siw.zcopy_min), "testprov-complete-twice" (the test provider's fault
 * injection, test.complete_twice).
 */
Suite *suite_itapi_post_device(void)
{
	Suite *s = suite_create("itapi-post");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup_siw, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, argument_checks);
	tcase_add_test(tc, rdma_write);
	tcase_add_test(tc, coalesced_writes);
	tcase_add_test(tc, rdma_read);
	tcase_add_test(tc, unlink_fence_flag);
	tcase_add_test(tc, send_recv_siw_and_flush);
	tcase_add_test(tc, send_with_invalidate);
	tcase_add_test(tc, not_supported);
	tcase_add_test(tc, posting_order);
	suite_add_tcase(s, tc);
	return s;
}
