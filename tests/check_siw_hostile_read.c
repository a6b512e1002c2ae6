/* SPDX-License-Identifier: MIT */
/*
 * siw-hostile, RDMA Read: more Read Requests than our IRD, Read Responses
 * out of bounds, short or overlapping, a peer with IRD 0, a Read that times
 * out, a region re-registered under a Read. The suite and its raw-peer
 * target are in check_siw_hostile.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check_siw_hostile.h"
#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

/* RFC 5040 §6.3 / §7.4: more Read Requests in flight than our IRD. The
 * raw peer does not read, so responses pile up in the IRQ; the request
 * past IRD 16 gets RDMAP, Remote Operation Error, catastrophic for the
 * stream, with the terminated Read Request's headers (M, D, R). */
START_TEST(test_read_requests_beyond_ird)
{
	struct target t;
	struct h_buf big;
	struct iwarp_read_req_hdr h;
	uint8_t *buf = malloc(70000);
	struct rnicpi_async_event ae;
	int i, ulpdu, skipped = 0;
	const uint32_t size = 4 << 20;

	ck_assert_ptr_nonnull(buf);
	target_up(&t, NULL);
	h_buf_alloc(&big, size, 0);
	h_buf_reg(&big, &t.s, RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_READ);
	connect_raw(&t, 0);
	for (i = 0; i < 40; i++) {
		memset(&h, 0, sizeof(h));
		iwarp_ctrl_init(&h.u.ctrl, RDMAP_RDMA_READ_REQ, true);
		h.u.qn_be = htobe32(1);
		h.u.msn_be = htobe32((uint32_t)i + 1);
		h.rreq.sink_stag_be = htobe32(0x1234);
		h.rreq.size_be = htobe32(size);
		h.rreq.src_stag_be = htobe32(big.mr->rkey);
		h.rreq.src_to_be = htobe64((uint64_t)(uintptr_t)big.p);
		raw_send_fpdu(&t.r, &h, sizeof(h), NULL, 0, 0, false);
	}
	/* Nothing is read until the provider gave up: a responder that
	 * reads all 40 requests at once could otherwise serve them as fast
	 * as this thread drains the stream, and never exceed its IRD. */
	ck_assert(h_wait_async(t.d, RNICPI_EVENT_QP_REQ_ERR, t.s.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_ecode, RDMAP_ECODE_CATASTROPHIC_STREAM);
	/* Read Responses first (whole FPDUs, never a cut one), then the
	 * Terminate. */
	for (;;) {
		struct iwarp_ctrl *c = (struct iwarp_ctrl *)buf;

		ulpdu = raw_recv_fpdu(&t.r, buf, 70000, H_WAIT_MS);
		ck_assert_int_gt(ulpdu, 0);
		if (rdmap_opcode(c) != RDMAP_RDMA_READ_RESP)
			break;
		skipped++;
	}
	ck_assert_int_gt(skipped, 0);
	ck_assert_uint_eq(rdmap_opcode((struct iwarp_ctrl *)buf),
			  RDMAP_TERMINATE);
	{
		const struct rdmap_term *term = (const void *)(buf + 20);
		const struct iwarp_ctrl *copy = (const void *)(buf + 24 + 2);

		ck_assert_uint_eq(rdmap_term_layer(term), TERM_LAYER_RDMAP);
		ck_assert_uint_eq(rdmap_term_etype(term), RDMAP_ETYPE_REMOTE_OP);
		ck_assert_uint_eq(rdmap_term_ecode(term),
				  RDMAP_ECODE_CATASTROPHIC_STREAM);
		ck_assert_uint_eq(rdmap_term_flags(term),
				  TERM_FLAG_M | TERM_FLAG_D | TERM_FLAG_R);
		ck_assert_int_eq(ulpdu, 18 + 4 + 2 + 18 + 28);
		/* the copied header: ctrl bytes start after its length */
		ck_assert_uint_eq(((const uint8_t *)copy)[1] & 0x0f,
				  RDMAP_RDMA_READ_REQ);
	}
	ck_assert(raw_wait_close(&t.r, H_WAIT_MS));
	ck_assert_ok(t.d->ops->dereg_mr(big.mr));
	h_buf_free(&big);
	free(buf);
	target_down(&t);
}
END_TEST

/* The requester's side: a Read Response that reaches past what the Read
 * asked for. The Read fails with BAD_RESP_ERR, the Terminate is DDP
 * tagged base/bounds, and the sink stays untouched. */
START_TEST(test_read_response_out_of_bounds)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t buf[256], copy[16];
	const struct iwarp_read_req_hdr *rq = (const void *)buf;
	struct rnicpi_wc wc;
	int ulpdu;

	target_up(&t, NULL);
	ck_assert_ok(raw_accept(&t.r, &t.s));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				 55, RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ulpdu = raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS);
	ck_assert_int_eq(ulpdu, 46);
	ck_assert_uint_eq(rdmap_opcode(&rq->u.ctrl), RDMAP_RDMA_READ_REQ);
	ck_assert_uint_eq(be32toh(rq->rreq.size_be), 100);
	ck_assert_uint_eq(be32toh(rq->rreq.src_stag_be), 0x4242);
	ck_assert_uint_eq(be64toh(rq->rreq.src_to_be), 0x10000);
	ck_assert_uint_ne(be32toh(rq->rreq.sink_stag_be), 0);
	/* 60 bytes at offset 50 of a 100-byte Read. */
	memset(payload, 0x66, 60);
	tagged_hdr(&h, RDMAP_RDMA_READ_RESP, be32toh(rq->rreq.sink_stag_be),
		   be64toh(rq->rreq.sink_to_be) + 50);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 60, 0, false);
	memcpy(copy, &h, sizeof(copy));
	ck_assert(h_poll(&t.s, t.s.scq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 55);
	ck_assert_int_eq(wc.status, RNICPI_WC_BAD_RESP_ERR);
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_BASE_BOUNDS, copy, 14, false,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

/* RFC 6581 §8: a responder whose IRD is 0 takes no RDMA Read. The
 * initiator's ORD becomes 0 and a Read is refused at posting, instead of
 * being sent for the peer to Terminate. */
START_TEST(test_peer_ird_zero)
{
	struct target t;
	struct rnicpi_qp_attr qa;
	uint8_t buf[256];

	target_up(&t, NULL);
	ck_assert_ok(raw_accept_ird(&t.r, &t.s, 0));
	ck_assert_ok(t.d->ops->query_qp(t.s.qp, &qa, RNICPI_QP_MAX_QP_RD_ATOMIC,
					NULL));
	ck_assert_uint_eq(qa.max_rd_atomic, 0);
	ck_assert_errno(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				    57, RNICPI_SEND_SIGNALED, 0x10000, 0x4242),
			EINVAL);
	/* Writes still go. */
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_WRITE, &t.rw, 0, 8, 58,
				 0, 0x10000, 0x4242));
	ck_assert_int_gt(raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS), 0);
	ck_assert_uint_eq(rdmap_opcode((const struct iwarp_ctrl *)buf),
			  RDMAP_RDMA_WRITE);
	target_down(&t);
}
END_TEST

/* Option read_timeout_ms: a peer whose TCP is alive but who never answers
 * a Read. The Read completes with RESP_TIMEOUT_ERR, the Write posted
 * behind it completes after it (posting order), the stream is closed and
 * the QP reports the failure; without the option the Read would wait as
 * long as the stream lives. */
START_TEST(test_read_timeout)
{
	static const struct rnicpi_option opts[] = {
		{ "read_timeout_ms", "300" },
		{ NULL, NULL },
	};
	struct target t;
	struct rnicpi_async_event ae;
	uint8_t buf[256];

	target_up(&t, opts);
	ck_assert_ok(raw_accept(&t.r, &t.s));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				 60, RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_WRITE, &t.rw, 0, 8, 61,
				 RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ck_assert_int_eq(raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS), 46);
	h_expect_wc(&t.s, t.s.scq, 60, RNICPI_WC_RESP_TIMEOUT_ERR,
		    RNICPI_WC_RDMA_READ, 0);
	/* The Write went out long before the time-out: it completes after
	 * the Read (posting order) with its own outcome, which iWARP
	 * defines as its data being on the stream (RFC 5040 §5.3). */
	h_expect_wc(&t.s, t.s.scq, 61, RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_WRITE,
		    8);
	ck_assert(h_wait_async(t.d, RNICPI_EVENT_QP_FATAL, t.s.qp, &ae,
			       H_WAIT_MS));
	ck_assert_int_eq(ae.status, -ETIMEDOUT);
	ck_assert(raw_wait_close(&t.r, H_WAIT_MS));
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

/* rereg_mr moves a region to new memory while a Read into it is in
 * flight. Once rereg_mr returns the core unpins the old pages and the
 * application may free them, so the response, arriving later, must not
 * be placed there (nor in the new memory, which the Read never named):
 * the Read fails and the stream ends, as after dereg_mr. */
START_TEST(test_rereg_under_read)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	struct h_buf moved;
	uint8_t buf[256];
	const struct iwarp_read_req_hdr *rq = (const void *)buf;
	struct rnicpi_wc wc;
	struct rnicpi_async_event ae;

	target_up(&t, NULL);
	h_buf_alloc(&moved, LEN, GUARD);
	ck_assert_ok(raw_accept(&t.r, &t.s));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				 62, RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ck_assert_int_eq(raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS), 46);
	ck_assert_ok(t.d->ops->rereg_mr(t.rw.mr, RNICPI_REREG_TRANSLATION, NULL,
					moved.p, LEN,
					(uint64_t)(uintptr_t)moved.p,
					0));
	memset(payload, 0x77, 100);
	tagged_hdr(&h, RDMAP_RDMA_READ_RESP, be32toh(rq->rreq.sink_stag_be),
		   be64toh(rq->rreq.sink_to_be));
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 100, 0, false);
	ck_assert(h_poll(&t.s, t.s.scq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 62);
	ck_assert_int_ne(wc.status, RNICPI_WC_SUCCESS);
	ck_assert(h_wait_async(t.d, RNICPI_EVENT_QP_FATAL, t.s.qp, &ae,
			       H_WAIT_MS));
	ck_assert(raw_wait_close(&t.r, H_WAIT_MS));
	ck_assert(untouched(&t.rw));
	ck_assert(untouched(&moved));
	h_buf_free(&moved);
	target_down(&t);
}
END_TEST

/* RFC 5040 §4.4: a Read Response carries exactly the bytes the Read
 * asked for. One that ends (Last) after 60 of 100 bytes must not complete
 * the Read as a success with a hole in its sink: BAD_RESP_ERR, and a
 * Terminate (RDMAP, remote operation, catastrophic to the stream). */
START_TEST(test_read_response_short)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t buf[256], copy[16];
	const struct iwarp_read_req_hdr *rq = (const void *)buf;
	struct rnicpi_wc wc;

	target_up(&t, NULL);
	ck_assert_ok(raw_accept(&t.r, &t.s));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				 56, RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ck_assert_int_eq(raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS), 46);
	ck_assert_uint_eq(rdmap_opcode(&rq->u.ctrl), RDMAP_RDMA_READ_REQ);
	memset(payload, 0x66, 60);
	tagged_hdr(&h, RDMAP_RDMA_READ_RESP, be32toh(rq->rreq.sink_stag_be),
		   be64toh(rq->rreq.sink_to_be));
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 60, 0, false);
	memcpy(copy, &h, sizeof(copy));
	ck_assert(h_poll(&t.s, t.s.scq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 56);
	ck_assert_int_eq(wc.status, RNICPI_WC_BAD_RESP_ERR);
	expect_terminate(&t, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			 RDMAP_ECODE_CATASTROPHIC_STREAM, copy, 14, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	/* The 60 bytes that came are in place, nothing beyond them. */
	for (size_t i = 0; i < t.rw.len; i++)
		ck_assert_uint_eq(t.rw.p[i], i < 60 ? 0x66 : 0);
	ck_assert(h_buf_guards_ok(&t.rw));
	target_down(&t);
}
END_TEST

/* Found by fuzz_siw_rx: two Read Response segments over the same bytes
 * of a 100-byte Read, each in bounds, and the Read completed with
 * byte_len 120. A segment that does not continue where the last one
 * ended is out of bounds: the Read fails with BAD_RESP_ERR, the
 * Terminate is DDP tagged base/bounds with the second segment's header,
 * and nothing past the 60 bytes of the first segment was written. */
START_TEST(test_read_response_overlap)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t buf[256], copy[16];
	const struct iwarp_read_req_hdr *rq = (const void *)buf;
	struct rnicpi_wc wc;
	uint32_t sink;
	uint64_t to;
	size_t i;

	target_up(&t, NULL);
	ck_assert_ok(raw_accept(&t.r, &t.s));
	ck_assert_ok(h_post_send(&t.s, RNICPI_WR_RDMA_READ, &t.rw, 0, 100,
				 56, RNICPI_SEND_SIGNALED, 0x10000, 0x4242));
	ck_assert_int_eq(raw_recv_fpdu(&t.r, buf, sizeof(buf), H_WAIT_MS), 46);
	sink = be32toh(rq->rreq.sink_stag_be);
	to = be64toh(rq->rreq.sink_to_be);
	memset(payload, 0x66, 60);
	iwarp_ctrl_init(&h.ctrl, RDMAP_RDMA_READ_RESP, false);
	h.stag_be = htobe32(sink);
	h.to_be = htobe64(to);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 60, 0, false);
	memset(payload, 0x77, 60);
	tagged_hdr(&h, RDMAP_RDMA_READ_RESP, sink, to);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 60, 0, false);
	memcpy(copy, &h, sizeof(copy));
	ck_assert(h_poll(&t.s, t.s.scq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 56);
	ck_assert_int_eq(wc.status, RNICPI_WC_BAD_RESP_ERR);
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_BASE_BOUNDS, copy, 14, false,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	for (i = 0; i < 60; i++)
		ck_assert_uint_eq(t.rw.p[i], 0x66);
	for (i = 60; i < LEN; i++)
		ck_assert_uint_eq(t.rw.p[i], 0);
	ck_assert(h_buf_guards_ok(&t.rw));
	target_down(&t);
}
END_TEST

/* The RDMA Read tests of suite_siw_hostile()'s "hostile" case. */
void siw_hostile_add_read_tests(TCase *tc)
{
	tcase_add_test(tc, test_read_requests_beyond_ird);
	tcase_add_test(tc, test_read_response_out_of_bounds);
	tcase_add_test(tc, test_read_response_short);
	tcase_add_test(tc, test_peer_ird_zero);
	tcase_add_test(tc, test_read_timeout);
	tcase_add_test(tc, test_rereg_under_read);
	tcase_add_test(tc, test_read_response_overlap);
}
