/* SPDX-License-Identifier: MIT */
/*
 * siw-loopback, progress and ending: re-registration and local
 * invalidation under traffic, close and a peer that dies, the progress
 * thread reading and writing the socket and going to sleep, transmit
 * batching. The suite and the opcode, negotiation and queue cases are in
 * check_siw_loopback.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

#define GUARD H_GUARD
#define RW H_RW

/*
 * Option tx_batch: up to that many FPDUs of a message leave in one
 * sendmsg(). A 1 MiB Write cut into 1460-byte FPDUs arrives intact either
 * way; with batches of 16 it takes at most a quarter as many calls as
 * FPDUs (a full socket splits some batches), with tx_batch=1 at least one
 * call per FPDU.
 */
START_TEST(test_tx_batching)
{
	const struct rnicpi_option batched[] = { { "max_fpdu", "1460" },
						 { NULL } };
	const struct rnicpi_option single[] = { { "max_fpdu", "1460" },
						{ "tx_batch", "1" },
						{ NULL } };
	const size_t n = 1u << 20;
	bool batch = _i == 0;
	struct siw_qp *qa;
	struct h_buf src, dst;
	struct h_pair p;
	uint64_t fpdus, calls;

	h_pair_up_bufs(&p, batch ? batched : single, NULL, &src, &dst, n, 4242);
	qa = to_siw_qp(p.a.qp);
	pthread_mutex_lock(&qa->lock);
	fpdus = qa->tx_fpdus;
	calls = qa->tx_calls;
	pthread_mutex_unlock(&qa->lock);

	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &src, 0, n, 1,
				 RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)dst.p, dst.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 1, RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_WRITE,
		  (uint32_t)n);
	h_post_recv(&p.b, &dst, 0, 0, 2);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0, 3, 0, 0,
				 0));
	h_expect_wc(&p.b, p.b.rcq, 2, RNICPI_WC_SUCCESS, RNICPI_WC_RECV, 0);
	ck_assert(h_buf_check(&dst, 0, n, 4242, 0));
	ck_assert(h_buf_guards_ok(&dst));

	pthread_mutex_lock(&qa->lock);
	fpdus = qa->tx_fpdus - fpdus;
	calls = qa->tx_calls - calls;
	pthread_mutex_unlock(&qa->lock);
	/* 1 MiB in FPDUs of at most 1460 bytes, and the empty Send. */
	ck_assert_uint_ge(fpdus, n / 1460 + 1);
	if (batch)
		ck_assert_msg(calls * 4 <= fpdus, "%llu calls for %llu FPDUs",
			      (unsigned long long)calls,
			      (unsigned long long)fpdus);
	else
		ck_assert_uint_ge(calls, fpdus);
	h_pair_down_bufs(&p, &src, &dst);
}
END_TEST

/* A buffer of @len bytes at @page_off bytes into a page, between guards. */
static void buf_at(struct h_buf *b, size_t len, size_t page_off)
{
	size_t guard = 4096 + page_off;
	size_t total = (len + 2 * guard + 4095) & ~(size_t)4095;

	memset(b, 0, sizeof(*b));
	b->base = aligned_alloc(4096, total);
	ck_assert_ptr_nonnull(b->base);
	memset(b->base, 0xa5, total);
	b->p = b->base + guard;
	memset(b->p, 0, len);
	b->len = len;
	b->guard = guard;
}

/*
 * Option tx_realign: a message of more than 60 KiB whose payload the
 * kernel would copy less than 128 bytes past its source (mod 4 KiB), and
 * not a multiple of 32, is led by one FPDU of 4-32 bytes that makes the
 * distance a multiple of 32 (past 31 for a source not 4-byte aligned).
 * What a raw responder that agreed to large FPDUs reads: a lead of 28
 * bytes for a page-aligned Write (16-byte header: 16 + 48 = 64), 20 for a
 * page-aligned Send (20-byte header: 20 + 44), 8 for a Write 12 bytes
 * into its page (4 + 28 = 32), 28 for one 32 bytes before a page's end
 * (48 + 48), 12 for one 13 bytes in (3 + 32 = 35); then full FPDUs. None
 * for a Write 16 bytes into its page (distance 0) or 24 (distance
 * 4088), none with the option off, none for a message of 4 KiB, none to
 * a peer whose FPDUs keep to the MSS (Linux siw, an RNIC). Every FPDU's
 * offset follows on from the last, only the last is marked so, and the
 * bytes are the source's.
 */
START_TEST(test_tx_realign_wire)
{
	static const struct rnicpi_option no_lead[] = {
		{ "tx_realign", "off" }, { NULL, NULL },
	};
	static const struct {
		bool send, option_off, mss_fpdus;
		size_t len, page_off;
		size_t lead;	/* the leading FPDU's payload, 0: none */
	} c[] = {
		{ false, false, false, 100000, 0, 28 },
		{ false, true, false, 100000, 0, 0 },
		{ false, false, false, 100000, 16, 0 },
		{ false, false, false, 100000, 12, 8 },
		{ true, false, false, 100000, 0, 20 },
		{ false, false, false, 4096, 0, 0 },
		{ false, false, true, 100000, 0, 0 },
		{ false, false, false, 100000, 4064, 28 },
		{ false, false, false, 100000, 13, 12 },
		{ false, false, false, 100000, 24, 0 },
	};
	const size_t hdr = c[_i].send ? sizeof(struct iwarp_untagged_hdr)
				      : sizeof(struct iwarp_tagged_hdr);
	struct h_dev *d = h_dev_create(c[_i].option_off ? no_lead : NULL, NULL);
	uint8_t *buf = malloc(70000);
	size_t got = 0;
	unsigned int n = 0;
	struct rnicpi_wc wc;
	struct rawpeer r;
	struct h_side a;
	struct h_buf s;

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(buf);
	h_side_init(&a, d, 0);
	buf_at(&s, c[_i].len, c[_i].page_off);
	h_buf_fill(&s, 77);
	h_buf_reg(&s, &a, RW);
	if (c[_i].mss_fpdus)
		ck_assert_ok(raw_accept(&r, &a));
	else
		ck_assert_ok(raw_accept_large(&r, &a));
	ck_assert_ok(h_post_send(&a, c[_i].send ? RNICPI_WR_SEND
						 : RNICPI_WR_RDMA_WRITE,
				 &s, 0, s.len, 1, RNICPI_SEND_SIGNALED,
				 0x10000, 0x1234));
	while (got < s.len) {
		const struct iwarp_ctrl *ctl = (const void *)buf;
		int ulpdu = raw_recv_fpdu(&r, buf, 70000, H_WAIT_MS);
		size_t len, off;

		ck_assert_int_gt(ulpdu, 0);
		len = (size_t)ulpdu + MPA_HDR_SIZE - hdr;
		if (c[_i].send) {
			const struct iwarp_untagged_hdr *u = (const void *)buf;

			ck_assert_uint_eq(rdmap_opcode(ctl), RDMAP_SEND);
			off = be32toh(u->mo_be);
		} else {
			const struct iwarp_tagged_hdr *t = (const void *)buf;

			ck_assert_uint_eq(rdmap_opcode(ctl), RDMAP_RDMA_WRITE);
			off = (size_t)(be64toh(t->to_be) - 0x10000);
		}
		ck_assert_uint_eq(off, got);
		ck_assert_msg(!memcmp(buf + hdr, s.p + off, len),
			      "FPDU %u: bytes %zu-%zu are not the source's", n,
			      off, off + len);
		if (n == 0 && c[_i].lead)
			ck_assert_uint_eq(len, c[_i].lead);
		else
			ck_assert_uint_gt(len, 32);
		got += len;
		ck_assert(ddp_last(ctl) == (got == s.len));
		n++;
	}
	ck_assert_uint_eq(got, s.len);
	ck_assert_uint_ge(n, (c[_i].lead ? 1 : 0) + (s.len > 4096 ? 2 : 1));
	ck_assert(h_poll(&a, a.scq, &wc, H_WAIT_MS));
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	raw_close(&r);
	ck_assert_ok(d->ops->dereg_mr(s.mr));
	h_buf_free(&s);
	free(buf);
	h_side_fini(&a);
	h_dev_destroy(d);
}
END_TEST

/*
 * The same between two hostrdma ends: a Write, a Send and a Read (its
 * Read Response led by the responder) of 200000 bytes from and into
 * page-aligned buffers land whole, and nothing around them moves.
 */
START_TEST(test_tx_realign_lands)
{
	const size_t n = 200000;
	struct rnicpi_wc wc;
	struct h_buf src, dst;
	struct h_pair p;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	buf_at(&src, n, 0);
	buf_at(&dst, n, 0);
	h_buf_fill(&src, 99);
	switch (_i) {
	case 0: /* Write a -> b */
		h_buf_reg(&src, &p.a, RW);
		h_buf_reg(&dst, &p.b, RW);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &src, 0,
					 n, 1, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)dst.p,
					 dst.mr->rkey));
		h_expect_wc(&p.a, p.a.scq, 1, RNICPI_WC_SUCCESS,
			    RNICPI_WC_RDMA_WRITE, (uint32_t)n);
		/* a Send behind it: the Write has landed when it has */
		h_post_recv(&p.b, &dst, 0, 0, 2);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0, 3,
					 0, 0, 0));
		h_expect_wc(&p.b, p.b.rcq, 2, RNICPI_WC_SUCCESS,
			    RNICPI_WC_RECV, 0);
		break;
	case 1: /* Send a -> b */
		h_buf_reg(&src, &p.a, RW);
		h_buf_reg(&dst, &p.b, RW);
		h_post_recv(&p.b, &dst, 0, n, 2);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &src, 0, n, 1,
					 RNICPI_SEND_SIGNALED, 0, 0));
		h_expect_wc(&p.b, p.b.rcq, 2, RNICPI_WC_SUCCESS,
			    RNICPI_WC_RECV, (uint32_t)n);
		h_expect_wc(&p.a, p.a.scq, 1, RNICPI_WC_SUCCESS,
			    RNICPI_WC_SEND, (uint32_t)n);
		break;
	default: /* b reads from a: a's responder sends */
		h_buf_reg(&src, &p.a, RW);
		h_buf_reg(&dst, &p.b, RW);
		ck_assert_ok(h_post_send(&p.b, RNICPI_WR_RDMA_READ, &dst, 0, n,
					 1, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)src.p,
					 src.mr->rkey));
		ck_assert(h_poll(&p.b, p.b.scq, &wc, H_WAIT_MS));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		break;
	}
	ck_assert(h_buf_check(&dst, 0, n, 99, 0));
	ck_assert(h_buf_guards_ok(&dst));
	ck_assert(h_buf_guards_ok(&src));
	h_pair_down_bufs(&p, &src, &dst);
}
END_TEST

START_TEST(test_rereg_local_inv)
{
	struct h_pair p;
	struct h_buf s, t;
	uint32_t old;
	struct rnicpi_qp_attr qa;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	h_buf_alloc(&s, 64, GUARD);
	h_buf_alloc(&t, 64, GUARD);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&t, &p.b, RW);
	old = t.mr->rkey;
	ck_assert_ok(p.db->ops->rereg_mr(t.mr, RNICPI_REREG_ACCESS, NULL,
					 NULL, 0, 0, RW));
	ck_assert_uint_ne(t.mr->rkey, old);
	/* Local invalidate on b, then the (new) key is refused. */
	ck_assert_ok(h_post_send(&p.b, RNICPI_WR_LOCAL_INV, NULL, 0, 0, 1,
				 RNICPI_SEND_SIGNALED, 0, t.mr->rkey));
	h_expect_wc(&p.b, p.b.scq, 1, RNICPI_WC_SUCCESS, RNICPI_WC_LOCAL_INV, 0);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &s, 0, 8, 2,
				 RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)t.p, t.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 2, RNICPI_WC_REM_ACCESS_ERR,
		  RNICPI_WC_RDMA_READ, 0);
	/* Both QPs end in ERROR; what is posted now flushes (IBA
	 * 10.8.1.1), unsignalled or not. */
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, NULL,
			      H_WAIT_MS));
	ck_assert_ok(p.da->ops->query_qp(p.a.qp, &qa, RNICPI_QP_STATE, NULL));
	ck_assert_int_eq(qa.qp_state, RNICPI_QPS_ERR);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0, 3, 0, 0, 0));
	h_expect_wc(&p.a, p.a.scq, 3, RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_SEND, 0);
	ck_assert_ok(p.da->ops->dereg_mr(s.mr));
	ck_assert_ok(p.db->ops->dereg_mr(t.mr));
	h_buf_free(&s);
	h_buf_free(&t);
	h_pair_down(&p);
}
END_TEST

/* Graceful close: queued work finishes, both sides see DISCONNECTED 0,
 * posted receives flush. Abortive close flushes everything. */
START_TEST(test_close)
{
	struct h_pair p;
	struct h_buf s, d;
	struct rnicpi_qp_attr qa = { .qp_state = RNICPI_QPS_CLOSING };
	struct h_conn_ev ev;
	int i, rc;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	h_buf_alloc(&s, 1 << 20, GUARD);
	h_buf_alloc(&d, 1 << 20, GUARD);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&d, &p.b, RW);
	h_buf_fill(&s, 8);
	h_post_recv(&p.b, &d, 0, d.len, 1);
	h_post_recv(&p.b, &d, 0, d.len, 2);
	h_post_recv(&p.a, &s, 0, 16, 3);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, s.len, 4,
				 RNICPI_SEND_SIGNALED, 0, 0));
	ck_assert_ok(p.da->ops->modify_qp(p.a.qp, &qa, RNICPI_QP_STATE));
	/* Refused while CLOSING; once the close is through the QP is in
	 * ERROR, where a WR is taken and flushed (IBA 10.8.1.1). */
	rc = h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0, 5, 0, 0, 0);
	ck_assert_msg(rc == -EINVAL || rc == 0, "post_send: %d", rc);
	h_expect_wc(&p.a, p.a.scq, 4, RNICPI_WC_SUCCESS, RNICPI_WC_SEND,
		  (uint32_t)s.len);
	if (rc == 0)
		h_expect_wc(&p.a, p.a.scq, 5, RNICPI_WC_WR_FLUSH_ERR,
			    RNICPI_WC_SEND, 0);
	h_expect_wc(&p.b, p.b.rcq, 1, RNICPI_WC_SUCCESS, RNICPI_WC_RECV,
		  (uint32_t)s.len);
	ck_assert(h_buf_check(&d, 0, d.len, 8, 0));
	ck_assert(h_wait_conn(p.db, RNICPI_CONN_DISCONNECTED, p.b.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, 0);
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, 0);
	h_expect_wc(&p.b, p.b.rcq, 2, RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_RECV, 0);
	h_expect_wc(&p.a, p.a.rcq, 3, RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_RECV, 0);
	ck_assert_ok(p.da->ops->dereg_mr(s.mr));
	ck_assert_ok(p.db->ops->dereg_mr(d.mr));
	h_pair_down(&p);

	/* Abortive: ERR with work posted on both queues. */
	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&d, &p.b, RW);
	for (i = 0; i < 8; i++)
		h_post_recv(&p.a, &s, 0, 16, (uint64_t)(10 + i));
	for (i = 0; i < 8; i++)
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &s, 0,
					 s.len, (uint64_t)(20 + i),
					 RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)d.p,
					 d.mr->rkey));
	qa.qp_state = RNICPI_QPS_ERR;
	ck_assert_ok(p.da->ops->modify_qp(p.a.qp, &qa, RNICPI_QP_STATE));
	for (i = 0; i < 8; i++)
		h_expect_wc(&p.a, p.a.rcq, (uint64_t)(10 + i),
			  RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_RECV, 0);
	for (i = 0; i < 8; i++) {
		struct rnicpi_wc wc;

		ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
		ck_assert_uint_eq(wc.wr_id, (uint64_t)(20 + i));
		ck_assert(wc.status == RNICPI_WC_WR_FLUSH_ERR ||
			  wc.status == RNICPI_WC_SUCCESS);
	}
	/* IBA 10.8.1.1 / verbs: WRs posted to a QP in error are taken and
	 * flushed, signalled or not, in posting order. */
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &s, 0, 64, 30,
				 0, (uint64_t)(uintptr_t)d.p, d.mr->rkey));
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, 64, 31,
				 RNICPI_SEND_SIGNALED, 0, 0));
	h_expect_wc(&p.a, p.a.scq, 30, RNICPI_WC_WR_FLUSH_ERR,
		    RNICPI_WC_RDMA_WRITE, 0);
	h_expect_wc(&p.a, p.a.scq, 31, RNICPI_WC_WR_FLUSH_ERR, RNICPI_WC_SEND,
		    0);
	ck_assert_errno(h_post_send(&p.a, RNICPI_WR_ATOMIC_FETCH_AND_ADD, &s,
				    0, 8, 32, 0, 0, 0), EINVAL);
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -ECONNABORTED);
	ck_assert(h_wait_conn(p.db, RNICPI_CONN_DISCONNECTED, p.b.qp, &ev,
			      H_WAIT_MS));
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/* The responder dies mid-transfer: every outstanding WR completes
 * (flushed), nothing hangs. The responder is a raw peer that never reads,
 * so the transfer is still under way when it dies, however fast the
 * machine: 16 MiB Writes do not fit in the sockets' buffers, and Reads
 * wait for responses that never come. */
START_TEST(test_peer_dies)
{
	struct h_dev *d = h_dev_create(NULL, NULL);
	struct h_side a;
	struct h_buf s;
	struct rawpeer r;
	struct h_conn_ev ev;
	int i, flushed = 0;

	ck_assert_ptr_nonnull(d);
	h_side_init(&a, d, 0);
	h_buf_alloc(&s, 16 << 20, 0);
	h_buf_reg(&s, &a, RW);
	ck_assert_ok(raw_accept(&r, &a));
	for (i = 0; i < 32; i++)
		ck_assert_ok(h_post_send(&a, i % 2 ? RNICPI_WR_RDMA_WRITE
						   : RNICPI_WR_RDMA_READ,
					 &s, 0, s.len, (uint64_t)i,
					 RNICPI_SEND_SIGNALED, 0x10000, 0x1234));
	/* Die with unread bytes: the kernel resets the stream. */
	raw_close(&r);
	for (i = 0; i < 32; i++) {
		struct rnicpi_wc wc;

		ck_assert(h_poll(&a, a.scq, &wc, H_WAIT_MS));
		if (wc.status == RNICPI_WC_WR_FLUSH_ERR)
			flushed++;
		else
			ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	}
	/* At least every Read and the Writes behind the first. */
	ck_assert_int_ge(flushed, 31);
	ck_assert(h_wait_conn(d, RNICPI_CONN_DISCONNECTED, a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_ne(ev.ev.status, 0);
	ck_assert_ok(d->ops->dereg_mr(s.mr));
	h_buf_free(&s);
	h_side_fini(&a);
	h_dev_destroy(d);
}
END_TEST

/* Holds the delivering thread inside the upcall for @conn's ERROR. */
/*
 * Option poll_rx: polling an empty CQ reads the sockets of its QPs. The
 * receiver's progress thread is held in an upcall (a connection whose
 * peer never sends its MPA Request times out there); a Send then
 * completes at the receiver as soon as its CQ is polled (poll_rx=1), and
 * not before the progress thread is free again (poll_rx=0).
 */
START_TEST(test_poll_reads_socket)
{
	static const struct rnicpi_option on[] = {
		{ "mpa_timeout_ms", "100" }, { NULL, NULL },
	};
	static const struct rnicpi_option off[] = {
		{ "mpa_timeout_ms", "100" }, { "poll_rx", "0" }, { NULL, NULL },
	};
	bool poll_rx = _i == 0;
	struct h_park pk = { .lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER };
	struct rnicpi_wc wc;
	struct h_buf s, d;
	struct h_pair p;
	int cfd;

	h_pair_up_bufs(&p, NULL, poll_rx ? on : off, &s, &d, 100000, 42);
	h_post_recv(&p.b, &d, 0, d.len, 7);

	cfd = h_park_progress(p.db, &pk);

	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, s.len, 1,
				 RNICPI_SEND_SIGNALED, 0, 0));
	if (!poll_rx)
		ck_assert_msg(!h_poll(&p.b, p.b.rcq, &wc, 300),
			      "received with the progress thread held");
	else
		ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));

	h_unpark(&pk);
	if (!poll_rx)
		ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_uint_eq(wc.byte_len, s.len);
	ck_assert(h_buf_check(&d, 0, d.len, 42, 0));
	ck_assert(h_buf_guards_ok(&d));
	ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);

	close(cfd);
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/*
 * Option poll_tx: polling an empty CQ also writes what waits for room in
 * its QPs' sockets. Both progress threads are held; a 16 MiB Send fills
 * the socket buffers from the posting thread and stops. The receiver's
 * poller reads (poll_rx), and the sender's poller pushes the rest: the
 * Send completes on both sides with nothing but the two pollers
 * (poll_tx=1), and not before the progress threads are free (poll_tx=0).
 */
START_TEST(test_poll_writes_socket)
{
	static const struct rnicpi_option on[] = {
		{ "mpa_timeout_ms", "100" }, { NULL, NULL },
	};
	static const struct rnicpi_option off[] = {
		{ "mpa_timeout_ms", "100" }, { "poll_tx", "0" }, { NULL, NULL },
	};
	const size_t len = 16u << 20;
	bool poll_tx = _i == 0, sent = false, got = false;
	struct h_park pa = { .lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER };
	struct h_park pb = pa;
	struct rnicpi_wc wc;
	struct h_buf s, d;
	struct h_pair p;
	int cfa, cfb;

	h_pair_up_bufs(&p, poll_tx ? on : off, on, &s, &d, len, 77);
	h_post_recv(&p.b, &d, 0, d.len, 8);
	cfa = h_park_progress(p.da, &pa);
	cfb = h_park_progress(p.db, &pb);

	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, s.len, 9,
				 RNICPI_SEND_SIGNALED, 0, 0));
	/* Two pollers, up to 2 s (the whole Send takes milliseconds). */
	for (int i = 0; i < 2000 && !(sent && got); i++) {
		if (!got && h_poll(&p.b, p.b.rcq, &wc, 0)) {
			ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
			ck_assert_uint_eq(wc.wr_id, 8);
			got = true;
		}
		if (!sent && h_poll(&p.a, p.a.scq, &wc, 1)) {
			ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
			ck_assert_uint_eq(wc.wr_id, 9);
			sent = true;
		}
	}
	if (poll_tx) {
		ck_assert_msg(sent && got, "sent %d received %d", sent, got);
	} else {
		ck_assert_msg(!sent && !got, "the Send went out with both "
			      "progress threads held and poll_tx=0");
	}
	h_unpark(&pa);
	h_unpark(&pb);
	if (!got) {
		ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	}
	if (!sent) {
		ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	}
	ck_assert(h_buf_check(&d, 0, d.len, 77, 0));
	ck_assert(h_buf_guards_ok(&d));
	close(cfa);
	close(cfb);
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/*
 * poll_rx: a QP whose CQ was just polled has its socket left to the
 * poller. When the application stops polling and sleeps on the CQ's
 * completion channel instead, the progress thread takes the socket back
 * and the next message still completes and signals.
 */
START_TEST(test_poller_goes_to_sleep)
{
	struct rnicpi_wc wc;
	struct pollfd pfd;
	struct h_buf s, d;
	struct h_pair p;
	int i;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	h_buf_alloc(&s, 4096, GUARD);
	h_buf_alloc(&d, 4096, GUARD);
	h_buf_fill(&s, 9);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&d, &p.b, RW);
	for (i = 0; i < 50; i++) {
		h_post_recv(&p.b, &d, 0, d.len, (uint64_t)i);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, 100,
					 (uint64_t)i, RNICPI_SEND_SIGNALED, 0,
					 0));
		ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
	}
	ck_assert_ok(p.db->ops->req_notify_cq(p.b.rcq, 0));
	h_post_recv(&p.b, &d, 0, d.len, 100);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, 4096, 100,
				 RNICPI_SEND_SIGNALED, 0, 0));
	pfd.fd = p.b.rcq->notify_fd;
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, H_WAIT_MS), 1);
	ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 100);
	ck_assert(h_buf_check(&d, 0, 4096, 9, 0));
	ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/* The tests of suite_siw_loopback()'s "loopback" case that this file
 * holds, in the case's order. */
void siw_loopback_add_progress_tests(TCase *tc)
{
	tcase_add_test(tc, test_rereg_local_inv);
	tcase_add_test(tc, test_close);
	tcase_add_test(tc, test_peer_dies);
	tcase_add_loop_test(tc, test_poll_reads_socket, 0, 2);
	tcase_add_loop_test(tc, test_poll_writes_socket, 0, 2);
	tcase_add_loop_test(tc, test_tx_batching, 0, 2);
	tcase_add_loop_test(tc, test_tx_realign_wire, 0, 10);
	tcase_add_loop_test(tc, test_tx_realign_lands, 0, 3);
	tcase_add_test(tc, test_poller_goes_to_sleep);
}
