/* SPDX-License-Identifier: MIT */
/*
 * siw-hostile: a raw peer does the MPA handshake by hand, then lies.
 * For each lie: the exact Terminate (checked byte by byte), the async
 * event at the provider's QP, and not one byte changed outside the
 * target region (nor inside one the peer had no right to). This file:
 * the raw-peer target, Writes, DDP headers, Sends, opcodes, invalidation;
 * RDMA Read is in check_siw_hostile_read.c, MPA and the FPDU stream in
 * check_siw_hostile_stream.c.
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

void target_up(struct target *t, const struct rnicpi_option *opts)
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

bool untouched(const struct h_buf *b)
{
	size_t i;

	for (i = 0; i < b->len; i++)
		if (b->p[i])
			return false;
	return h_buf_guards_ok(b);
}

void target_down(struct target *t)
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

void connect_raw(struct target *t, uint8_t flags)
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
void expect_terminate(struct target *t, uint8_t layer, uint8_t etype,
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

void tagged_hdr(struct iwarp_tagged_hdr *h, uint8_t opcode,
		uint32_t stag, uint64_t to)
{
	memset(h, 0, sizeof(*h));
	iwarp_ctrl_init(&h->ctrl, opcode, true);
	h->stag_be = htobe32(stag);
	h->to_be = htobe64(to);
}

void send_hdr(struct iwarp_untagged_hdr *h, uint8_t opcode,
	      uint32_t qn, uint32_t msn, uint32_t mo, bool last)
{
	memset(h, 0, sizeof(*h));
	iwarp_ctrl_init(&h->ctrl, opcode, last);
	h->qn_be = htobe32(qn);
	h->msn_be = htobe32(msn);
	h->mo_be = htobe32(mo);
}

uint8_t payload[LEN];

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
	/* The receive the Send took fails for its length. */
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_LOC_LEN_ERR);
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
	siw_hostile_add_read_tests(tc); /* check_siw_hostile_read.c */
	tcase_add_test(tc, test_invalidate_wrong_pd);
	tcase_add_test(tc, test_invalidate_region);
	siw_hostile_add_stream_tests(tc); /* check_siw_hostile_stream.c */
	suite_add_tcase(s, tc);
	return s;
}
