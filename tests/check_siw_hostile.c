/* SPDX-License-Identifier: MIT */
/*
 * siw-hostile: a raw peer does the MPA handshake by hand, then lies.
 * For each lie: the exact Terminate (checked byte by byte), the async
 * event at the provider's QP, and not one byte changed outside the
 * target region (nor inside one the peer had no right to). And a true
 * stream of FPDUs cut at every kind of place: all of it placed, exactly.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

#define GUARD 256
#define LEN 4096

struct target {
	struct h_dev *d;
	struct h_side s;
	struct rnicpi_pd *pd2;
	struct h_buf rw, ro, other, rbuf;
	struct rawpeer r;
};

static void target_up(struct target *t, const struct rnicpi_option *opts)
{
	memset(t, 0, sizeof(*t));
	t->d = h_dev_create(opts, NULL);
	ck_assert_ptr_nonnull(t->d);
	h_side_init(&t->s, t->d, 0);
	ck_assert_ok(t->d->ops->alloc_pd(t->d->dev, &t->pd2));
	h_buf_alloc(&t->rw, LEN, GUARD);
	h_buf_alloc(&t->ro, LEN, GUARD);
	h_buf_alloc(&t->other, LEN, GUARD);
	h_buf_alloc(&t->rbuf, 100, GUARD);
	h_buf_reg(&t->rw, &t->s, RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_WRITE |
				      RNICPI_ACCESS_REMOTE_READ);
	h_buf_reg(&t->ro, &t->s, RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_READ);
	h_buf_reg(&t->rbuf, &t->s, RNICPI_ACCESS_LOCAL_WRITE);
	ck_assert_ok(t->d->ops->reg_mr(t->pd2, t->other.p, LEN,
				       (uint64_t)(uintptr_t)t->other.p,
				       RNICPI_ACCESS_LOCAL_WRITE |
					       RNICPI_ACCESS_REMOTE_WRITE |
					       RNICPI_ACCESS_REMOTE_READ,
				       &t->other.mr));
	h_post_recv(&t->s, &t->rbuf, 0, 100, 777);
}

static bool untouched(const struct h_buf *b)
{
	size_t i;

	for (i = 0; i < b->len; i++)
		if (b->p[i])
			return false;
	return h_buf_guards_ok(b);
}

static void target_down(struct target *t)
{
	const struct rnicpi_device_ops *ops = t->d->ops;

	raw_close(&t->r);
	ck_assert_ok(ops->dereg_mr(t->rw.mr));
	ck_assert_ok(ops->dereg_mr(t->ro.mr));
	ck_assert_ok(ops->dereg_mr(t->other.mr));
	ck_assert_ok(ops->dereg_mr(t->rbuf.mr));
	h_side_fini(&t->s);
	ck_assert_ok(ops->dealloc_pd(t->pd2));
	h_dev_destroy(t->d);
	h_buf_free(&t->rw);
	h_buf_free(&t->ro);
	h_buf_free(&t->other);
	h_buf_free(&t->rbuf);
}

static void connect_raw(struct target *t, uint8_t flags)
{
	struct mpa_v2_data v2;

	mpa_v2_set(&v2, 4, 4, false, 0);
	ck_assert_ok(raw_connect(&t->r, &t->s, MPA_REV2,
				 MPA_FLAG_ENHANCED | flags, &v2, true));
	ck_assert(mpa_rr_is_reply(&t->r.reply));
	ck_assert(h_wait_conn(t->d, RNICPI_CONN_ESTABLISHED, t->s.qp, NULL,
			      H_WAIT_MS));
}

/*
 * Read the Terminate and check it byte by byte: untagged, last, DDP and
 * RDMAP version 1, opcode 7, QN 2, MSN 1, MO 0, the control word, and
 * (when @hdr) the offending FPDU's length and DDP header (+ RDMAP header
 * for a Read Request) copied back (RFC 5040 §4.8).
 */
static void expect_terminate(struct target *t, uint8_t layer, uint8_t etype,
			     uint8_t ecode, const uint8_t *hdr, size_t ddp_len,
			     bool rreq, enum rnicpi_event_type event)
{
	uint8_t buf[256];
	uint8_t want[20 + 4 + 2 + 18 + 28];
	size_t n = 0;
	uint16_t flags = 0;
	struct rnicpi_async_event ae;
	int ulpdu;

	memcpy(want + 2, "\x41\x47\0\0\0\0\0\0\0\x02\0\0\0\x01\0\0\0\0", 18);
	n = 20;
	if (hdr) {
		flags = TERM_FLAG_M | TERM_FLAG_D | (rreq ? TERM_FLAG_R : 0);
		rdmap_term_set((struct rdmap_term *)(want + n), layer, etype,
			       ecode, flags);
		n += 4;
		memcpy(want + n, hdr, 2 + ddp_len + (rreq ? 28 : 0));
		n += 2 + ddp_len + (rreq ? 28 : 0);
	} else {
		rdmap_term_set((struct rdmap_term *)(want + n), layer, etype,
			       ecode, 0);
		n += 4;
	}
	want[0] = (uint8_t)((n - 2) >> 8);
	want[1] = (uint8_t)(n - 2);
	ulpdu = raw_recv_fpdu(&t->r, buf, sizeof(buf), H_WAIT_MS);
	ck_assert_int_eq(ulpdu, (int)(n - 2));
	ck_assert_mem_eq(buf, want, n);
	ck_assert(raw_wait_close(&t->r, H_WAIT_MS));
	ck_assert(h_wait_async(t->d, event, t->s.qp, &ae, H_WAIT_MS));
	ck_assert_uint_eq(ae.term_layer, layer);
	ck_assert_uint_eq(ae.term_etype, etype);
	ck_assert_uint_eq(ae.term_ecode, ecode);
	ck_assert_uint_eq(ae.term_remote, 0);
}

static void tagged_hdr(struct iwarp_tagged_hdr *h, uint8_t opcode,
		       uint32_t stag, uint64_t to)
{
	memset(h, 0, sizeof(*h));
	iwarp_ctrl_init(&h->ctrl, opcode, true);
	h->stag_be = htobe32(stag);
	h->to_be = htobe64(to);
}

static void send_hdr(struct iwarp_untagged_hdr *h, uint8_t opcode,
		     uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	memset(h, 0, sizeof(*h));
	iwarp_ctrl_init(&h->ctrl, opcode, last);
	h->qn_be = htobe32(qn);
	h->msn_be = htobe32(msn);
	h->mo_be = htobe32(mo);
}

static uint8_t payload[LEN];

/* Write to @stag at @to: Terminate, nothing changed anywhere. */
static void bad_write(const char *what, uint32_t (*stag_of)(struct target *),
		      int64_t to_off, size_t len, uint8_t layer, uint8_t etype,
		      uint8_t ecode)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t copy[16];

	target_up(&t, NULL);
	connect_raw(&t, 0);
	memset(payload, 0x77, sizeof(payload));
	tagged_hdr(&h, RDMAP_RDMA_WRITE, stag_of(&t),
		   (uint64_t)((int64_t)(uintptr_t)t.rw.p + to_off));
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, len, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, layer, etype, ecode, copy, 14, false,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	ck_assert_msg(untouched(&t.rw) && untouched(&t.ro) &&
			      untouched(&t.other) && untouched(&t.rbuf),
		      "%s: memory changed", what);
	/* The posted receive was flushed. */
	{
		struct rnicpi_wc wc;

		ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
		ck_assert_uint_eq(wc.wr_id, 777);
		ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	}
	target_down(&t);
}

static uint32_t stag_unknown(struct target *t)
{
	return (t->rw.mr->rkey + 0x100000) ^ 0x55;
}

static uint32_t stag_rw(struct target *t)
{
	return t->rw.mr->rkey;
}

static uint32_t stag_ro(struct target *t)
{
	return t->ro.mr->rkey;
}

static uint32_t stag_other(struct target *t)
{
	return t->other.mr->rkey;
}

static uint32_t stag_stale(struct target *t)
{
	uint32_t old = t->rw.mr->rkey;

	ck_assert_ok(t->d->ops->rereg_mr(t->rw.mr, RNICPI_REREG_ACCESS, NULL,
					 NULL, 0, 0,
					 RNICPI_ACCESS_LOCAL_WRITE |
						 RNICPI_ACCESS_REMOTE_WRITE));
	return old;
}

START_TEST(test_write_unknown_stag)
{
	bad_write("unknown", stag_unknown, 0, 100, TERM_LAYER_DDP,
		  DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG);
	bad_write("stale", stag_stale, 0, 100, TERM_LAYER_DDP,
		  DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG);
}
END_TEST

START_TEST(test_write_out_of_bounds)
{
	bad_write("past end", stag_rw, LEN - 50, 100, TERM_LAYER_DDP,
		  DDP_ETYPE_TAGGED, DDP_ECODE_T_BASE_BOUNDS);
	bad_write("before start", stag_rw, -1, 10, TERM_LAYER_DDP,
		  DDP_ETYPE_TAGGED, DDP_ECODE_T_BASE_BOUNDS);
}
END_TEST

START_TEST(test_write_no_right)
{
	bad_write("read-only", stag_ro, 0, 100, TERM_LAYER_RDMAP,
		  RDMAP_ETYPE_REMOTE_PROT, RDMAP_ECODE_ACCESS_RIGHTS);
}
END_TEST

START_TEST(test_write_wrong_pd)
{
	bad_write("other PD", stag_other, 0, 100, TERM_LAYER_DDP,
		  DDP_ETYPE_TAGGED, DDP_ECODE_T_STAG_NOT_ASSOC);
}
END_TEST

START_TEST(test_bad_crc)
{
	const struct rnicpi_option crc[] = { { "mpa_crc", "on" }, { NULL } };
	struct target t;
	struct iwarp_tagged_hdr h;

	target_up(&t, crc);
	connect_raw(&t, MPA_FLAG_CRC);
	ck_assert(t.r.crc);
	/* A good Write first: placed. */
	memset(payload, 0x33, 64);
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 64, 0, false);
	/* Then one with a bad CRC: RFC 5044 §8, LLP layer, code 2. */
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p + 64);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 64, 0, true);
	expect_terminate(&t, TERM_LAYER_LLP, 0, MPA_ECODE_CRC, NULL, 0, false,
			 RNICPI_EVENT_QP_FATAL);
	ck_assert_uint_eq(t.rw.p[0], 0x33);
	ck_assert_uint_eq(t.rw.p[63], 0x33);
	ck_assert(h_buf_guards_ok(&t.rw));
	ck_assert(untouched(&t.ro) && untouched(&t.other));
	target_down(&t);
}
END_TEST

START_TEST(test_bad_ddp_version)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t copy[16];

	target_up(&t, NULL);
	connect_raw(&t, 0);
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	h.ctrl.ddp = (uint8_t)((h.ctrl.ddp & ~DDP_MASK_VERSION) | 2);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 32, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_VERSION, copy, 14, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

START_TEST(test_truncated_fpdu)
{
	struct target t;
	struct iwarp_tagged_hdr h;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	/* MPA says 6 bytes of ULPDU: less than the 14-byte tagged header. */
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 16, 6, false);
	/* Only the first 4 bytes were read: no DDP header to copy back. */
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC,
			 DDP_ECODE_CATASTROPHIC, NULL, 0, false,
			 RNICPI_EVENT_QP_FATAL);
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

START_TEST(test_send_too_long)
{
	struct target t;
	struct iwarp_untagged_hdr h;
	uint8_t copy[20];
	struct rnicpi_wc wc;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND, 0, 1, 0, true);
	memset(payload, 0x44, 200);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 200, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			 DDP_ECODE_UT_TOO_LONG, copy, 18, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(untouched(&t.rbuf));
	ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	target_down(&t);
}
END_TEST

START_TEST(test_send_bad_msn_qn)
{
	struct target t;
	struct iwarp_untagged_hdr h;
	uint8_t copy[20];

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND, 0, 5, 0, true);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 10, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			 DDP_ECODE_UT_MSN_RANGE, copy, 18, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	target_down(&t);

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND, 3, 1, 0, true);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 10, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			 DDP_ECODE_UT_INVALID_QN, copy, 18, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(untouched(&t.rbuf));
	target_down(&t);
}
END_TEST

START_TEST(test_read_request_bad_stag)
{
	struct target t;
	struct iwarp_read_req_hdr h;
	uint8_t copy[48];

	target_up(&t, NULL);
	connect_raw(&t, 0);
	memset(&h, 0, sizeof(h));
	iwarp_ctrl_init(&h.u.ctrl, RDMAP_RDMA_READ_REQ, true);
	h.u.qn_be = htobe32(1);
	h.u.msn_be = htobe32(1);
	h.rreq.sink_stag_be = htobe32(0x1234);
	h.rreq.size_be = htobe32(64);
	h.rreq.src_stag_be = htobe32(stag_unknown(&t));
	h.rreq.src_to_be = htobe64((uint64_t)(uintptr_t)t.rw.p);
	raw_send_fpdu(&t.r, &h, sizeof(h), NULL, 0, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			 RDMAP_ECODE_INVALID_STAG, copy, 18, true,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	target_down(&t);
}
END_TEST

START_TEST(test_unexpected_opcodes)
{
	struct target t;
	struct iwarp_tagged_hdr h;
	uint8_t copy[16];

	/* A Read Response nobody asked for. */
	target_up(&t, NULL);
	connect_raw(&t, 0);
	tagged_hdr(&h, RDMAP_RDMA_READ_RESP, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 16, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			 RDMAP_ECODE_OPCODE, copy, 14, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(untouched(&t.rw));
	target_down(&t);

	/* Opcode 12 (undefined). */
	target_up(&t, NULL);
	connect_raw(&t, 0);
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	h.ctrl.rdmap = (uint8_t)((h.ctrl.rdmap & ~RDMAP_MASK_OPCODE) | 12);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 16, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			 RDMAP_ECODE_OPCODE, copy, 14, false,
			 RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

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

/* RFC 5040 §6.10: Send with Invalidate naming an STag it may not
 * invalidate. The receive fails with REM_INV_REQ_ERR and the Terminate
 * says "STag cannot be invalidated" (§7.4 lists it under both Remote
 * Protection and Remote Operation); like Linux siw (siw_invalidate_stag):
 * another PD's STag is a protection error and stays valid, an unknown one
 * an operation error. */
static void bad_invalidate(uint32_t (*stag_of)(struct target *),
			   uint8_t etype)
{
	struct target t;
	struct iwarp_untagged_hdr h;
	uint8_t copy[20];
	struct rnicpi_wc wc;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND_INV, 0, 1, 0, true);
	h.inval_stag_be = htobe32(stag_of(&t));
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 8, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_RDMAP, etype,
			 RDMAP_ECODE_CANNOT_INVALIDATE, copy, 18, false,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_REM_INV_REQ_ERR);
	ck_assert(!(wc.wc_flags & RNICPI_WC_WITH_INV));
	/* The other PD's region was not invalidated (provider internals). */
	ck_assert(atomic_load(&to_siw_mr(t.other.mr)->valid));
	ck_assert(atomic_load(&to_siw_mr(t.rw.mr)->valid));
	target_down(&t);
}

START_TEST(test_invalidate_wrong_pd)
{
	bad_invalidate(stag_other, RDMAP_ETYPE_REMOTE_PROT);
	bad_invalidate(stag_unknown, RDMAP_ETYPE_REMOTE_OP);
}
END_TEST

/* RFC 5040 §6.10: Send with Invalidate of a plain memory region of this
 * PD (Linux siw invalidates any region or window of the QP's PD): the
 * receive reports the STag invalidated, and the next RDMA Write to it
 * meets the DDP invalid-STag Terminate with not a byte placed. */
START_TEST(test_invalidate_region)
{
	struct target t;
	struct iwarp_untagged_hdr u;
	struct iwarp_tagged_hdr h;
	uint8_t copy[16];
	struct rnicpi_wc wc;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	memset(payload, 0x77, sizeof(payload));
	send_hdr(&u, RDMAP_SEND_SE_INV, 0, 1, 0, true);
	u.inval_stag_be = htobe32(t.rw.mr->rkey);
	raw_send_fpdu(&t.r, &u, sizeof(u), payload, 8, 0, false);
	ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 8);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert(wc.wc_flags & RNICPI_WC_SOLICITED);
	ck_assert_uint_eq(wc.invalidated_rkey, t.rw.mr->rkey);
	ck_assert_mem_eq(t.rbuf.p, payload, 8);
	tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
		   (uint64_t)(uintptr_t)t.rw.p);
	raw_send_fpdu(&t.r, &h, sizeof(h), payload, 100, 0, false);
	memcpy(copy, &h, sizeof(copy));
	expect_terminate(&t, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_INVALID_STAG, copy, 14, false,
			 RNICPI_EVENT_QP_ACCESS_ERR);
	ck_assert(untouched(&t.rw));
	target_down(&t);
}
END_TEST

/* RFC 5044 §7.1 markers: refused with an MPA Reject. */
START_TEST(test_markers_refused)
{
	struct target t;
	struct mpa_v2_data v2;
	struct h_conn_ev ev;

	target_up(&t, NULL);
	mpa_v2_set(&v2, 4, 4, false, 0);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2,
				 MPA_FLAG_ENHANCED | MPA_FLAG_MARKERS, &v2,
				 false));
	ck_assert(mpa_rr_is_reply(&t.r.reply));
	ck_assert(t.r.reply.flags & MPA_FLAG_REJECT);
	ck_assert(!(t.r.reply.flags & MPA_FLAG_MARKERS));
	ck_assert(raw_wait_close(&t.r, H_WAIT_MS));
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ERROR, t.r.conn, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -EOPNOTSUPP);
	target_down(&t);
}
END_TEST

/* RFC 6581 §9.2: a responder in peer-to-peer mode echoes P2P, picks the
 * Write RTR, and refuses a first FPDU that is not that RTR. */
START_TEST(test_p2p_rtr)
{
	struct target t;
	struct mpa_v2_data v2;
	struct iwarp_tagged_hdr h;
	struct iwarp_untagged_hdr u;

	target_up(&t, NULL);
	mpa_v2_set(&v2, 4, 4, true, MPA_V2_WRITE_RTR | MPA_V2_READ_RTR);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2, MPA_FLAG_ENHANCED, &v2,
				 true));
	ck_assert(mpa_v2_p2p(&t.r.reply_v2));
	ck_assert_uint_eq(mpa_v2_rtr(&t.r.reply_v2), MPA_V2_WRITE_RTR);
	/* Not established before the RTR. */
	ck_assert(!h_wait_conn(t.d, RNICPI_CONN_ESTABLISHED, t.s.qp, NULL,
			       50));
	tagged_hdr(&h, RDMAP_RDMA_WRITE, 1, 0);
	raw_send_fpdu(&t.r, &h, sizeof(h), NULL, 0, 0, false);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ESTABLISHED, t.s.qp, NULL,
			      H_WAIT_MS));
	target_down(&t);

	target_up(&t, NULL);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2, MPA_FLAG_ENHANCED, &v2,
				 true));
	send_hdr(&u, RDMAP_SEND, 0, 1, 0, true);
	raw_send_fpdu(&t.r, &u, sizeof(u), payload, 4, 0, false);
	expect_terminate(&t, TERM_LAYER_LLP, 0, MPA_ECODE_NO_MATCHING_RTR,
			 NULL, 0, false, RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ERROR, t.s.qp, NULL,
			      H_WAIT_MS));
	ck_assert(untouched(&t.rbuf));
	target_down(&t);
}
END_TEST

/* The peer dies in the middle of a Send: the receive flushes, the
 * connection reports the loss, nothing hangs. */
START_TEST(test_peer_dies_mid_message)
{
	struct target t;
	struct iwarp_untagged_hdr h;
	struct rnicpi_wc wc;
	struct h_conn_ev ev;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND, 0, 1, 0, true);
	iwarp_set_mpa_len(&h.ctrl, 18 + 90);
	raw_send_bytes(&t.r, &h, sizeof(h));
	raw_send_bytes(&t.r, payload, 30);
	raw_close(&t.r);
	ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_DISCONNECTED, t.s.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -ECONNRESET);
	ck_assert(h_wait_async(t.d, RNICPI_EVENT_QP_FATAL, t.s.qp, NULL,
			       H_WAIT_MS));
	ck_assert(h_buf_guards_ok(&t.rbuf));
	target_down(&t);
}
END_TEST

/* xorshift32: the stream's sizes, offsets, bytes and cuts. */
static uint32_t stream_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

#define STREAM_FPDUS 400
#define STREAM_RECVS 128
#define STREAM_SLOT 256

/*
 * A stream of small and large FPDUs as a peer may send it: RDMA Writes of
 * 0 to 3000 bytes at scattered offsets of one region (later ones over
 * earlier ones) and Sends of 0 to 200 bytes into posted receives, written
 * in one piece or cut into pieces of 1 to 61 bytes. However the stream
 * is cut and however much of it one read takes, every byte lands where
 * its FPDU says and nowhere else, and every receive completes in order
 * with its length and bytes.
 */
static void fpdu_stream(bool crc, bool cut)
{
	const struct rnicpi_option crc_on[] = { { "mpa_crc", "on" },
						{ NULL } };
	static uint8_t shadow[LEN], body[3000], stream[1 << 20];
	uint32_t x = crc ? 0x9e3779b9u : 0x7f4a7c15u;
	uint32_t send_len[STREAM_RECVS + 1];
	uint8_t *send_first[STREAM_RECVS + 1];
	struct target t;
	struct h_buf rq;
	size_t used = 0, sent = 0;
	uint32_t n_send = 0, msn = 1, i;
	int one = 1;

	target_up(&t, crc ? crc_on : NULL);
	h_buf_alloc(&rq, STREAM_RECVS * STREAM_SLOT, GUARD);
	h_buf_reg(&rq, &t.s, RNICPI_ACCESS_LOCAL_WRITE);
	for (i = 0; i < STREAM_RECVS; i++)
		h_post_recv(&t.s, &rq, i * STREAM_SLOT, STREAM_SLOT, 1000 + i);
	connect_raw(&t, crc ? MPA_FLAG_CRC : 0);
	ck_assert(t.r.crc == crc);
	ck_assert_int_eq(setsockopt(t.r.fd, IPPROTO_TCP, TCP_NODELAY, &one,
				    sizeof(one)), 0);
	memset(shadow, 0, sizeof(shadow));

	for (i = 0; i < STREAM_FPDUS; i++) {
		/* The last FPDU is a Send: its completion says all is in. */
		bool is_send = i == STREAM_FPDUS - 1 ||
			       (stream_rand(&x) % 4 == 0 &&
				n_send < STREAM_RECVS);
		uint32_t len, k;

		if (is_send) {
			struct iwarp_untagged_hdr h;

			/* The first receive is target_up's 100 bytes. */
			len = stream_rand(&x) % (n_send ? 201 : 101);
			for (k = 0; k < len; k++)
				body[k] = (uint8_t)stream_rand(&x);
			send_hdr(&h, RDMAP_SEND, 0, msn++, 0, true);
			send_len[n_send] = len;
			send_first[n_send] = stream + used + sizeof(h);
			n_send++;
			used += raw_build_fpdu(&t.r, stream + used, &h,
					       sizeof(h), body, len, 0, false);
		} else {
			struct iwarp_tagged_hdr h;
			uint32_t sizes[] = { 0, 1, 3, 8, 15, 16, 17, 33, 64,
					     200, 1000, 2047, 2049, 3000 };
			uint32_t off;

			len = sizes[stream_rand(&x) % G_N_ELEMENTS(sizes)];
			off = stream_rand(&x) % (LEN - len + 1);
			for (k = 0; k < len; k++)
				body[k] = (uint8_t)stream_rand(&x);
			memcpy(shadow + off, body, len);
			tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
				   (uint64_t)(uintptr_t)t.rw.p + off);
			used += raw_build_fpdu(&t.r, stream + used, &h,
					       sizeof(h), body, len, 0, false);
		}
		ck_assert_uint_lt(used + 4096, sizeof(stream));
	}
	while (sent < used) {
		size_t piece = cut ? 1 + stream_rand(&x) % 61 : used - sent;

		if (piece > used - sent)
			piece = used - sent;
		raw_send_bytes(&t.r, stream + sent, piece);
		sent += piece;
		/* Let the receiver catch up now and then, so that its
		 * reads end inside headers, payloads and trailers. */
		if (cut && stream_rand(&x) % 8 == 0)
			g_usleep(50);
	}

	for (i = 0; i < n_send; i++) {
		struct rnicpi_wc wc;
		const uint8_t *slot = i ? rq.p + (i - 1) * STREAM_SLOT
					: t.rbuf.p;
		size_t slot_len = i ? STREAM_SLOT : 100;

		ck_assert_msg(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS),
			      "receive %u of %u did not complete", i, n_send);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, i ? 1000 + i - 1 : 777);
		ck_assert_uint_eq(wc.byte_len, send_len[i]);
		ck_assert_mem_eq(slot, send_first[i], send_len[i]);
		for (size_t k = send_len[i]; k < slot_len; k++)
			ck_assert_uint_eq(slot[k], 0);
	}
	ck_assert_mem_eq(t.rw.p, shadow, LEN);
	ck_assert(h_buf_guards_ok(&t.rw) && h_buf_guards_ok(&rq) &&
		  h_buf_guards_ok(&t.rbuf));
	ck_assert(untouched(&t.ro) && untouched(&t.other));
	ck_assert_ok(t.d->ops->dereg_mr(rq.mr));
	h_buf_free(&rq);
	target_down(&t);
}

START_TEST(test_stream_whole)
{
	fpdu_stream(false, false);
}
END_TEST

START_TEST(test_stream_cut)
{
	fpdu_stream(false, true);
}
END_TEST

START_TEST(test_stream_cut_crc)
{
	fpdu_stream(true, true);
}
END_TEST

Suite *suite_siw_hostile(void)
{
	Suite *s = suite_create("siw-hostile");
	TCase *tc = tcase_create("hostile");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_write_unknown_stag);
	tcase_add_test(tc, test_write_out_of_bounds);
	tcase_add_test(tc, test_write_no_right);
	tcase_add_test(tc, test_write_wrong_pd);
	tcase_add_test(tc, test_bad_crc);
	tcase_add_test(tc, test_bad_ddp_version);
	tcase_add_test(tc, test_truncated_fpdu);
	tcase_add_test(tc, test_send_too_long);
	tcase_add_test(tc, test_send_bad_msn_qn);
	tcase_add_test(tc, test_read_request_bad_stag);
	tcase_add_test(tc, test_unexpected_opcodes);
	tcase_add_test(tc, test_read_requests_beyond_ird);
	tcase_add_test(tc, test_read_response_out_of_bounds);
	tcase_add_test(tc, test_read_response_short);
	tcase_add_test(tc, test_peer_ird_zero);
	tcase_add_test(tc, test_read_timeout);
	tcase_add_test(tc, test_rereg_under_read);
	tcase_add_test(tc, test_read_response_overlap);
	tcase_add_test(tc, test_invalidate_wrong_pd);
	tcase_add_test(tc, test_invalidate_region);
	tcase_add_test(tc, test_markers_refused);
	tcase_add_test(tc, test_p2p_rtr);
	tcase_add_test(tc, test_peer_dies_mid_message);
	tcase_add_test(tc, test_stream_whole);
	tcase_add_test(tc, test_stream_cut);
	tcase_add_test(tc, test_stream_cut_crc);
	suite_add_tcase(s, tc);
	return s;
}
