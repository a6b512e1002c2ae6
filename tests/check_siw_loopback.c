/* SPDX-License-Identifier: MIT */
/*
 * siw-loopback: two soft-iWARP QPs connected over 127.0.0.1 through the
 * provider's own MPA hooks, every opcode at sizes from 0 to 16 MiB with
 * the bytes and the guard bytes around every target checked; SGE lists,
 * inline, SRQ, read fence, solicited events, ORD limits, MPA revisions,
 * CRC modes, peer-to-peer RTR, private data, reject. Close, peer death and
 * the progress thread are in check_siw_loopback_progress.c.
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

static const size_t sizes[] = { 0, 1, 4095, 4096, 65536, 1 << 20, 16 << 20 };

/* Send, Write and Read of each size, one connection per option set. */
static void all_opcodes_zc(const struct rnicpi_option *oa,
			   const struct rnicpi_option *ob, bool zc);

static void all_opcodes(const struct rnicpi_option *oa,
			const struct rnicpi_option *ob)
{
	all_opcodes_zc(oa, ob, false);
}

static void all_opcodes_zc(const struct rnicpi_option *oa,
			   const struct rnicpi_option *ob, bool zc)
{
	struct h_pair p;
	size_t i;

	h_pair_up_opts(&p, oa, ob, 0);
	h_pair_connect(&p);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		struct h_buf src, dst;
		uint32_t seed = (uint32_t)(i + 1) * 7919;

		h_buf_alloc(&src, n, GUARD);
		h_buf_alloc(&dst, n, GUARD);
		h_buf_reg(&src, &p.a, RW);
		h_buf_reg(&dst, &p.b, RW);

		/* Send a -> b */
		h_buf_fill(&src, seed);
		h_post_recv(&p.b, &dst, 0, n, 100 + i);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &src, 0, n,
					 200 + i, RNICPI_SEND_SIGNALED, 0, 0));
		h_expect_wc(&p.a, p.a.scq, 200 + i, RNICPI_WC_SUCCESS,
			  RNICPI_WC_SEND, (uint32_t)n);
		h_expect_wc(&p.b, p.b.rcq, 100 + i, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RECV, (uint32_t)n);
		ck_assert(h_buf_check(&dst, 0, n, seed, 0));
		ck_assert(h_buf_guards_ok(&dst));

		/* Write a -> b */
		h_buf_fill(&src, seed + 1);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &src, 0,
					 n, 300 + i, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)dst.p,
					 dst.mr->rkey));
		h_expect_wc(&p.a, p.a.scq, 300 + i, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RDMA_WRITE, (uint32_t)n);
		/* A Send behind the Write tells that it landed. */
		h_post_recv(&p.b, &dst, 0, 0, 400 + i);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0,
					 500 + i, 0, 0, 0));
		h_expect_wc(&p.b, p.b.rcq, 400 + i, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RECV, 0);
		ck_assert(h_buf_check(&dst, 0, n, seed + 1, 0));
		ck_assert(h_buf_guards_ok(&dst));

		/* Read: a reads b's dst into src. */
		h_buf_fill(&dst, seed + 2);
		memset(src.p, 0, n);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &src, 0,
					 n, 600 + i, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)dst.p,
					 dst.mr->rkey));
		h_expect_wc(&p.a, p.a.scq, 600 + i, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RDMA_READ, (uint32_t)n);
		ck_assert(h_buf_check(&src, 0, n, seed + 2, 0));
		ck_assert(h_buf_guards_ok(&src));

		ck_assert_ok(p.da->ops->dereg_mr(src.mr));
		ck_assert_ok(p.db->ops->dereg_mr(dst.mr));
		h_buf_free(&src);
		h_buf_free(&dst);
	}
	if (zc) {
		/* Provider internals: zero-copy sends were made on both
		 * sides, and every one was reported back by the kernel
		 * before its WR completed (nothing left pending). */
		struct siw_qp *qa = to_siw_qp(p.a.qp), *qb = to_siw_qp(p.b.qp);

		ck_assert(qa->zc_enabled && qb->zc_enabled);
		ck_assert_uint_gt(qa->zc_next, 0);
		ck_assert_uint_gt(qb->zc_next, 0);
		ck_assert_uint_eq(qa->zc_count, 0);
	}
	h_pair_down(&p);
}

START_TEST(test_opcodes_default)
{
	all_opcodes(NULL, NULL);
}
END_TEST

START_TEST(test_opcodes_crc)
{
	const struct rnicpi_option on[] = { { "mpa_crc", "on" }, { NULL } };

	all_opcodes(on, NULL);
}
END_TEST

START_TEST(test_opcodes_rev1_small_fpdu)
{
	const struct rnicpi_option o[] = { { "mpa_rev", "1" },
					   { "max_fpdu", "1460" },
					   { "mpa_crc", "required" },
					   { NULL } };
	const struct rnicpi_option r[] = { { "mpa_crc", "required" },
					   { NULL } };

	all_opcodes(o, r);
}
END_TEST
/* MSG_ZEROCOPY from 4 KiB: Send and Write WRs complete only after the
 * kernel's notification, Read Responses keep their region until then. */
START_TEST(test_opcodes_zerocopy)
{
	const struct rnicpi_option o[] = { { "zcopy_min", "4096" },
					   { NULL } };

	all_opcodes_zc(o, o, true);
}
END_TEST

/* The largest ULPDU @qp sends, and the MSS of its stream. */
static void fpdu_and_mss(struct h_side *s, uint32_t *ulpdu, int *mss)
{
	struct siw_qp *qp = to_siw_qp(s->qp);
	socklen_t len = sizeof(*mss);

	pthread_mutex_lock(&qp->lock);
	*ulpdu = qp->mss_payload;
	ck_assert_int_eq(getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, mss,
				    &len), 0);
	pthread_mutex_unlock(&qp->lock);
}

/* large_fpdu (the default): two hostrdma ends agree on FPDUs up to the
 * 65535-byte ULPDU, larger than the stream's MSS; with it off at either
 * end, an FPDU fits the MSS. */
START_TEST(test_opcodes_large_fpdu)
{
	const struct rnicpi_option off[] = { { "large_fpdu", "off" },
					     { NULL } };
	struct h_pair p;
	uint32_t ulpdu;
	int mss;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	fpdu_and_mss(&p.a, &ulpdu, &mss);
	ck_assert_uint_gt(ulpdu, (uint32_t)mss);
	ck_assert_uint_ge(ulpdu, 65000);
	fpdu_and_mss(&p.b, &ulpdu, &mss);
	ck_assert_uint_gt(ulpdu, (uint32_t)mss);
	h_pair_down(&p);

	h_pair_up_opts(&p, NULL, off, 0);
	h_pair_connect(&p);
	fpdu_and_mss(&p.a, &ulpdu, &mss);
	ck_assert_uint_lt(ulpdu, (uint32_t)mss);
	fpdu_and_mss(&p.b, &ulpdu, &mss);
	ck_assert_uint_lt(ulpdu, (uint32_t)mss);
	h_pair_down(&p);
	/* Every opcode and size with it: test_opcodes_default. */
}
END_TEST

/* What both sides negotiated for CRC, revision and RTR. */
static void negotiate(const struct rnicpi_option *oa,
		      const struct rnicpi_option *ob, unsigned int cflags,
		      unsigned int want_flags, int want_rc)
{
	struct h_pair p;
	struct h_buf b;
	int rc;

	h_pair_up_opts(&p, oa, ob, 0);
	p.c.ip.flags = cflags;
	if (want_rc) {
		struct rnicpi_conn *conn;
		struct h_conn_ev ev;
		int cfd, sfd;

		h_tcp_pair(&cfd, &sfd);
		ck_assert_ok(p.da->ops->iw_connect(p.a.qp, cfd, &p.c.ip));
		ck_assert_ok(p.db->ops->iw_take_request(p.db->dev, sfd, NULL,
							&conn));
		ck_assert(h_wait_conn(p.db, RNICPI_CONN_ERROR, conn, &ev,
				      H_WAIT_MS));
		ck_assert_int_eq(ev.ev.status, want_rc);
		ck_assert(h_wait_conn(p.da, RNICPI_CONN_REJECTED, p.a.qp, NULL,
				      H_WAIT_MS));
		h_pair_down(&p);
		return;
	}
	rc = h_connect(&p.a, &p.b, &p.c);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(p.c.est_a.ev.flags, want_flags);
	ck_assert_uint_eq(p.c.est_b.ev.flags, want_flags);
	/* And data flows. */
	h_buf_alloc(&b, 100000, GUARD);
	h_buf_reg(&b, &p.b, RW);
	h_buf_fill(&b, 5);
	{
		struct h_buf l;

		h_buf_alloc(&l, 100000, GUARD);
		h_buf_reg(&l, &p.a, RW);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &l, 0,
					 l.len, 1, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)b.p,
					 b.mr->rkey));
		h_expect_wc(&p.a, p.a.scq, 1, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RDMA_READ, (uint32_t)l.len);
		ck_assert(h_buf_check(&l, 0, l.len, 5, 0));
		ck_assert_ok(p.da->ops->dereg_mr(l.mr));
		h_buf_free(&l);
	}
	ck_assert_ok(p.db->ops->dereg_mr(b.mr));
	h_buf_free(&b);
	h_pair_down(&p);
}

START_TEST(test_negotiation)
{
	const struct rnicpi_option crc_on[] = { { "mpa_crc", "on" }, { NULL } };
	const struct rnicpi_option crc_req[] = { { "mpa_crc", "required" },
						 { NULL } };
	const struct rnicpi_option strict[] = { { "mpa_crc_strict", "on" },
						{ NULL } };
	const struct rnicpi_option rev1[] = { { "mpa_rev", "1" }, { NULL } };
	const struct rnicpi_option p2pw[] = { { "p2p", "write" }, { NULL } };
	const struct rnicpi_option p2pr[] = { { "p2p", "read" }, { NULL } };
	const struct rnicpi_option hold[] = { { "rts_delay_ms", "30" },
					      { "p2p", "write" }, { NULL } };

	negotiate(NULL, NULL, 0, 0, 0);
	negotiate(crc_on, NULL, 0, RNICPI_CONN_MPA_CRC, 0);
	negotiate(NULL, crc_on, 0, RNICPI_CONN_MPA_CRC, 0);
	negotiate(NULL, NULL, RNICPI_CONN_MPA_CRC, RNICPI_CONN_MPA_CRC, 0);
	negotiate(crc_req, crc_req, 0, RNICPI_CONN_MPA_CRC, 0);
	negotiate(rev1, NULL, 0, RNICPI_CONN_MPA_REV1, 0);
	negotiate(NULL, rev1, 0, RNICPI_CONN_MPA_REV1, 0);
	negotiate(NULL, NULL, RNICPI_CONN_MPA_REV1, RNICPI_CONN_MPA_REV1, 0);
	negotiate(p2pw, NULL, 0, RNICPI_CONN_P2P, 0);
	negotiate(p2pr, NULL, 0, RNICPI_CONN_P2P, 0);
	negotiate(NULL, NULL, RNICPI_CONN_P2P, RNICPI_CONN_P2P, 0);
	negotiate(p2pr, crc_req, 0, RNICPI_CONN_P2P | RNICPI_CONN_MPA_CRC, 0);
	negotiate(hold, NULL, 0, RNICPI_CONN_P2P, 0);
	/* Refusals: MPA Reject to the initiator, ERROR at the responder. */
	negotiate(NULL, crc_req, 0, RNICPI_CONN_MPA_CRC, 0);
	negotiate(crc_on, strict, 0, 0, -ECONNREFUSED);
}
END_TEST

START_TEST(test_private_data_and_reject)
{
	struct h_pair p;
	uint8_t req[508], rep[200];
	size_t i;

	for (i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(i ^ 0x5a);
	for (i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(i * 3);
	h_pair_up_opts(&p, NULL, NULL, 0);
	p.c.ip.private_data = req;
	p.c.ip.private_data_len = sizeof(req);
	p.c.ip.ird = 3;
	p.c.ip.ord = 5;
	p.c.rp.private_data = rep;
	p.c.rp.private_data_len = sizeof(rep);
	h_pair_connect(&p);
	ck_assert_uint_eq(p.c.req.ev.private_data_len, sizeof(req));
	ck_assert_mem_eq(p.c.req.pdata, req, sizeof(req));
	ck_assert_uint_eq(p.c.req.ev.ird, 3);
	ck_assert_uint_eq(p.c.req.ev.ord, 5);
	ck_assert_uint_eq(p.c.est_a.ev.private_data_len, sizeof(rep));
	ck_assert_mem_eq(p.c.est_a.pdata, rep, sizeof(rep));
	h_pair_down(&p);

	/* Too much private data is refused before anything is sent. */
	h_pair_up_opts(&p, NULL, NULL, 0);
	{
		uint8_t big[510] = { 0 };
		struct rnicpi_conn_param cp = { .private_data = big,
						.private_data_len = 510 };
		int cfd, sfd;

		h_tcp_pair(&cfd, &sfd);
		ck_assert_errno(p.da->ops->iw_connect(p.a.qp, cfd, &cp),
				EINVAL);
		close(cfd);
		close(sfd);
	}
	/* Reject with private data. */
	p.c.reject = true;
	p.c.rp.private_data = rep;
	p.c.rp.private_data_len = 17;
	ck_assert_ok(h_connect(&p.a, &p.b, &p.c));
	{
		struct h_conn_ev ev;

		ck_assert(h_wait_conn(p.da, RNICPI_CONN_REJECTED, p.a.qp, &ev,
				      H_WAIT_MS));
		ck_assert_uint_eq(ev.ev.private_data_len, 17);
		ck_assert_mem_eq(ev.pdata, rep, 17);
	}
	h_pair_down(&p);
}
END_TEST

/* Resource limits: the QP limit (option max_qp) is refused with -ENOSPC,
 * not as a lack of memory, and a freed QP makes room again. The read
 * queues are as long as the negotiated ORD and IRD (here 2 and 3 at the
 * initiator, 3 and 2 at the responder), not a fixed 128 entries each. */
START_TEST(test_qp_limit_and_read_queues)
{
	const struct rnicpi_option two[] = { { "max_qp", "2" }, { NULL } };
	struct rnicpi_qp_init_attr qa = { .qp_type = RNICPI_QPT_RC };
	struct rnicpi_device_attr da;
	struct rnicpi_qp *extra;
	struct h_pair p;

	h_pair_up_opts(&p, two, NULL, 0);
	ck_assert_ok(p.da->ops->query_device(p.da->dev, &da));
	ck_assert_uint_eq(da.max_qp, 2);
	qa.send_cq = p.a.scq;
	qa.recv_cq = p.a.rcq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	ck_assert_ok(p.da->ops->create_qp(p.a.pd, &qa, &extra));
	ck_assert_errno(p.da->ops->create_qp(p.a.pd, &qa, &extra), ENOSPC);
	ck_assert_ok(p.da->ops->destroy_qp(extra));
	ck_assert_ok(p.da->ops->create_qp(p.a.pd, &qa, &extra));
	ck_assert_ok(p.da->ops->destroy_qp(extra));
	/* The default is Linux rxe's 65536. */
	ck_assert_ok(p.db->ops->query_device(p.db->dev, &da));
	ck_assert_uint_eq(da.max_qp, 65536);

	p.c.ip.ird = 3;
	p.c.ip.ord = 2;
	p.c.rp.ird = 2;
	p.c.rp.ord = 8;
	h_pair_connect(&p);
	ck_assert_uint_eq(to_siw_qp(p.a.qp)->orq_size, 2);
	ck_assert_uint_eq(to_siw_qp(p.a.qp)->irq_size, 3);
	/* The responder issues no more Reads than the initiator takes. */
	ck_assert_uint_eq(to_siw_qp(p.b.qp)->orq_size, 3);
	ck_assert_uint_eq(to_siw_qp(p.b.qp)->irq_size, 2);
	h_pair_down(&p);
}
END_TEST

START_TEST(test_sge_lists_inline_srq)
{
	struct h_pair p;
	struct h_buf s, d;
	struct rnicpi_sge sg[3], rg[4];
	struct rnicpi_send_wr wr = { 0 };
	struct rnicpi_recv_wr rw = { 0 };
	int i;

	h_pair_up_opts(&p, NULL, NULL, 16);
	h_pair_connect(&p);
	h_buf_alloc(&s, 30000, GUARD);
	h_buf_alloc(&d, 40000, GUARD);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&d, &p.b, RW);
	h_buf_fill(&s, 77);

	/* 3 source pieces (10000 each, from scattered offsets) into an SRQ
	 * receive of 4 pieces of 7000, 3000, 15000, 15000. */
	for (i = 0; i < 3; i++) {
		sg[i].addr = (uint64_t)(uintptr_t)(s.p + (2 - i) * 10000);
		sg[i].length = 10000;
		sg[i].lkey = s.mr->lkey;
	}
	rg[0] = (struct rnicpi_sge){ (uint64_t)(uintptr_t)(d.p + 33000), 7000,
				     d.mr->lkey };
	rg[1] = (struct rnicpi_sge){ (uint64_t)(uintptr_t)d.p, 3000,
				     d.mr->lkey };
	rg[2] = (struct rnicpi_sge){ (uint64_t)(uintptr_t)(d.p + 3000), 15000,
				     d.mr->lkey };
	rg[3] = (struct rnicpi_sge){ (uint64_t)(uintptr_t)(d.p + 18000),
				     15000, d.mr->lkey };
	rw.wr_id = 9;
	rw.sg_list = rg;
	rw.num_sge = 4;
	ck_assert_ok(p.db->ops->post_srq_recv(p.b.srq, &rw, NULL));
	wr.wr_id = 8;
	wr.opcode = RNICPI_WR_SEND;
	wr.sg_list = sg;
	wr.num_sge = 3;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	ck_assert_ok(p.da->ops->post_send(p.a.qp, &wr, NULL));
	h_expect_wc(&p.a, p.a.scq, 8, RNICPI_WC_SUCCESS, RNICPI_WC_SEND, 30000);
	h_expect_wc(&p.b, p.b.rcq, 9, RNICPI_WC_SUCCESS, RNICPI_WC_RECV, 30000);
	/* message byte k is s[(2 - k/10000)*10000 + k%10000] */
	for (i = 0; i < 30000; i++) {
		size_t src = (size_t)(2 - i / 10000) * 10000 + i % 10000;
		size_t dst = i < 7000 ? 33000 + (size_t)i : (size_t)i - 7000;

		ck_assert_uint_eq(d.p[dst], s.p[src]);
	}
	ck_assert(h_buf_guards_ok(&d));

	/* Inline Send: the source may change right after posting. */
	memcpy(s.p, "inline-data-0123456789", 22);
	h_post_recv(&p.b, &d, 0, 100, 10);
	wr.wr_id = 11;
	sg[0].addr = (uint64_t)(uintptr_t)s.p;
	sg[0].length = 22;
	sg[0].lkey = 0; /* inline needs no key */
	wr.num_sge = 1;
	wr.send_flags = RNICPI_SEND_SIGNALED | RNICPI_SEND_INLINE;
	ck_assert_ok(p.da->ops->post_send(p.a.qp, &wr, NULL));
	memset(s.p, 'X', 22);
	h_expect_wc(&p.b, p.b.rcq, 10, RNICPI_WC_SUCCESS, RNICPI_WC_RECV, 22);
	h_expect_wc(&p.a, p.a.scq, 11, RNICPI_WC_SUCCESS, RNICPI_WC_SEND, 22);
	ck_assert_mem_eq(d.p, "inline-data-0123456789", 22);
	/* Inline over the limit is refused. */
	sg[0].length = 257;
	ck_assert_errno(p.da->ops->post_send(p.a.qp, &wr, NULL), EINVAL);

	/* Read into 3 SGEs. */
	h_buf_fill(&d, 1234);
	for (i = 0; i < 3; i++) {
		sg[i].addr = (uint64_t)(uintptr_t)(s.p + (size_t)i * 10000);
		sg[i].length = i == 1 ? 5 : 9000;
		sg[i].lkey = s.mr->lkey;
	}
	memset(s.p, 0, s.len);
	wr.wr_id = 12;
	wr.opcode = RNICPI_WR_RDMA_READ;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.num_sge = 3;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(d.p + 100);
	wr.wr.rdma.rkey = d.mr->rkey;
	ck_assert_ok(p.da->ops->post_send(p.a.qp, &wr, NULL));
	h_expect_wc(&p.a, p.a.scq, 12, RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_READ,
		  18005);
	ck_assert(h_buf_check(&s, 0, 9000, 1234, 100));
	ck_assert(h_buf_check(&s, 10000, 5, 1234, 9100));
	ck_assert(h_buf_check(&s, 20000, 9000, 1234, 9105));
	ck_assert_uint_eq(s.p[9000], 0);
	ck_assert_uint_eq(s.p[10005], 0);
	ck_assert(h_buf_guards_ok(&s));

	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/* RFC 5040 §5.1 read fence: a fenced Write that sends what a Read brought
 * in carries the Read's data, never stale bytes. ORD 1: Reads beyond it
 * wait in the send queue and still all complete. */
START_TEST(test_fence_and_ord)
{
	struct h_pair p;
	struct h_buf l, x, y;
	const size_t n = 1 << 20;
	int i;

	h_pair_up_opts(&p, NULL, NULL, 0);
	p.c.ip.ord = 1;
	h_pair_connect(&p);
	ck_assert_uint_eq(p.c.est_a.ev.ord, 1);
	h_buf_alloc(&l, n, GUARD);
	h_buf_alloc(&x, n, GUARD);
	h_buf_alloc(&y, n, GUARD);
	h_buf_reg(&l, &p.a, RW);
	h_buf_reg(&x, &p.b, RW);
	h_buf_reg(&y, &p.b, RW);
	for (i = 0; i < 3; i++) {
		h_buf_fill(&x, 40 + (uint32_t)i);
		memset(l.p, 0, n);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &l, 0, n,
					 1, 0, (uint64_t)(uintptr_t)x.p,
					 x.mr->rkey));
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &l, 0, n,
					 2, RNICPI_SEND_SIGNALED |
						    RNICPI_SEND_FENCE,
					 (uint64_t)(uintptr_t)y.p,
					 y.mr->rkey));
		h_expect_wc(&p.a, p.a.scq, 2, RNICPI_WC_SUCCESS,
			  RNICPI_WC_RDMA_WRITE, (uint32_t)n);
		h_post_recv(&p.b, &y, 0, 0, 3);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, NULL, 0, 0, 4,
					 0, 0, 0));
		h_expect_wc(&p.b, p.b.rcq, 3, RNICPI_WC_SUCCESS, RNICPI_WC_RECV,
			  0);
		ck_assert(h_buf_check(&y, 0, n, 40 + (uint32_t)i, 0));
	}
	/* 16 Reads with ORD 1: held, none dropped, in order. */
	h_buf_fill(&x, 99);
	memset(l.p, 0, n);
	for (i = 0; i < 16; i++)
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &l,
					 (size_t)i * 4096, 4096,
					 (uint64_t)(100 + i),
					 RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)(x.p + i * 4096),
					 x.mr->rkey));
	for (i = 0; i < 16; i++)
		h_expect_wc(&p.a, p.a.scq, (uint64_t)(100 + i),
			  RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_READ, 4096);
	ck_assert(h_buf_check(&l, 0, 16 * 4096, 99, 0));
	ck_assert_ok(p.da->ops->dereg_mr(l.mr));
	ck_assert_ok(p.db->ops->dereg_mr(x.mr));
	ck_assert_ok(p.db->ops->dereg_mr(y.mr));
	h_buf_free(&l);
	h_buf_free(&x);
	h_buf_free(&y);
	h_pair_down(&p);
}
END_TEST

static bool fd_readable(int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, ms) == 1;
}

START_TEST(test_solicited_and_invalidate)
{
	struct h_pair p;
	struct h_buf s, d, t, u;
	struct rnicpi_wc wc;
	struct h_conn_ev ev;
	struct rnicpi_async_event ae;

	h_pair_up_opts(&p, NULL, NULL, 0);
	h_pair_connect(&p);
	h_buf_alloc(&s, 64, GUARD);
	h_buf_alloc(&d, 64, GUARD);
	h_buf_alloc(&t, 4096, GUARD);
	h_buf_alloc(&u, 64, GUARD);
	h_buf_reg(&s, &p.a, RW);
	h_buf_reg(&d, &p.b, RW);
	h_buf_reg(&t, &p.b, RW);
	h_buf_reg(&u, &p.b, RW);

	/* Armed for solicited only: a plain Send does not wake, SE does. */
	ck_assert_ok(p.db->ops->req_notify_cq(p.b.rcq, 1));
	h_post_recv(&p.b, &d, 0, 64, 1);
	h_post_recv(&p.b, &d, 0, 64, 2);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, 8, 10, 0, 0, 0));
	ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.wc_flags & RNICPI_WC_SOLICITED, 0);
	ck_assert(!fd_readable(p.b.rcq->notify_fd, 0));
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, 0, 8, 11,
				 RNICPI_SEND_SOLICITED, 0, 0));
	ck_assert(fd_readable(p.b.rcq->notify_fd, H_WAIT_MS));
	ck_assert_ok(p.db->ops->ack_cq_event(p.b.rcq));
	ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert(wc.wc_flags & RNICPI_WC_SOLICITED);

	/* Send with Invalidate of t's STag: the receive reports it, and a
	 * later Write to it is refused with a Terminate. */
	h_post_recv(&p.b, &d, 0, 64, 3);
	/* Plain Send with Invalidate (RDMAP opcode 4) of u's STag. */
	h_post_recv(&p.b, &d, 0, 64, 4);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND_WITH_INV, &s, 0, 4, 14,
				 RNICPI_SEND_SIGNALED, 0, u.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 14, RNICPI_WC_SUCCESS, RNICPI_WC_SEND, 4);
	ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 3); /* receives complete in order */
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert(!(wc.wc_flags & RNICPI_WC_SOLICITED));
	ck_assert_uint_eq(wc.invalidated_rkey, u.mr->rkey);
	/* With SE too: RDMAP opcode 6, Send with SE and Invalidate. */
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND_WITH_INV, &s, 0, 4, 12,
				 RNICPI_SEND_SIGNALED | RNICPI_SEND_SOLICITED,
				 0, t.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 12, RNICPI_WC_SUCCESS, RNICPI_WC_SEND, 4);
	ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 4);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert(wc.wc_flags & RNICPI_WC_SOLICITED);
	ck_assert_uint_eq(wc.invalidated_rkey, t.mr->rkey);
	h_buf_fill(&s, 3);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &s, 0, 64, 13,
				 RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)t.p, t.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 13, RNICPI_WC_REM_ACCESS_ERR,
		  RNICPI_WC_RDMA_READ, 0);
	ck_assert(h_wait_async(p.db, RNICPI_EVENT_QP_ACCESS_ERR, p.b.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_layer, TERM_LAYER_RDMAP);
	ck_assert_uint_eq(ae.term_etype, 1);
	ck_assert_uint_eq(ae.term_ecode, 0);
	ck_assert_uint_eq(ae.term_remote, 0);
	ck_assert(h_wait_async(p.da, RNICPI_EVENT_QP_ACCESS_ERR, p.a.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_remote, 1);
	ck_assert(h_buf_check(&s, 0, 64, 3, 0)); /* nothing read */
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert(h_wait_conn(p.db, RNICPI_CONN_DISCONNECTED, p.b.qp, &ev,
			      H_WAIT_MS));
	ck_assert_ok(p.da->ops->dereg_mr(s.mr));
	ck_assert_ok(p.db->ops->dereg_mr(d.mr));
	ck_assert_ok(p.db->ops->dereg_mr(t.mr));
	ck_assert_ok(p.db->ops->dereg_mr(u.mr));
	h_buf_free(&s);
	h_buf_free(&d);
	h_buf_free(&t);
	h_buf_free(&u);
	h_pair_down(&p);
}
END_TEST

START_TEST(test_verbs_errors)
{
	struct h_dev *d;
	struct h_side s;
	struct rnicpi_qp_attr qa = { .qp_state = RNICPI_QPS_RTS };
	struct rnicpi_device_attr da;
	struct rnicpi_port_attr pa;
	struct rnicpi_mr *mr;
	const struct rnicpi_option bad[] = { { "bogus", "1" }, { NULL } };
	int err = 0;
	uint8_t buf[16];

	ck_assert_ptr_null(h_dev_create(bad, &err));
	ck_assert_int_eq(err, -EINVAL);
	d = h_dev_create(NULL, NULL);
	ck_assert_ptr_nonnull(d);
	ck_assert_ok(d->ops->query_device(d->dev, &da));
	ck_assert_int_eq(da.transport, RNICPI_TRANSPORT_IWARP);
	ck_assert_uint_eq(da.max_private_data, 508);
	ck_assert_ok(d->ops->query_port(d->dev, 1, &pa));
	ck_assert_errno(d->ops->query_port(d->dev, 2, &pa), EINVAL);
	h_side_init(&s, d, 0);
	ck_assert_errno(d->ops->modify_qp(s.qp, &qa, RNICPI_QP_STATE), EINVAL);
	ck_assert_errno(h_post_send(&s, RNICPI_WR_SEND, NULL, 0, 0, 1, 0, 0,
				    0), ENOTCONN);
	ck_assert_errno(d->ops->reg_mr(s.pd, buf, sizeof(buf),
				       (uint64_t)(uintptr_t)buf,
				       RNICPI_ACCESS_REMOTE_WRITE, &mr),
			EINVAL);
	/* IDLE -> ERR flushes pre-posted receives. */
	{
		struct h_buf b;

		h_buf_alloc(&b, 16, 0);
		h_buf_reg(&b, &s, RW);
		h_post_recv(&s, &b, 0, 16, 42);
		qa.qp_state = RNICPI_QPS_ERR;
		ck_assert_ok(d->ops->modify_qp(s.qp, &qa, RNICPI_QP_STATE));
		h_expect_wc(&s, s.rcq, 42, RNICPI_WC_WR_FLUSH_ERR,
			  RNICPI_WC_RECV, 0);
		qa.qp_state = RNICPI_QPS_IDLE;
		ck_assert_ok(d->ops->modify_qp(s.qp, &qa, RNICPI_QP_STATE));
		ck_assert_ok(d->ops->dereg_mr(b.mr));
		h_buf_free(&b);
	}
	h_side_fini(&s);
	h_dev_destroy(d);
}
END_TEST

/* @q's lazily allocated buffers: the receive stash and the ORQ */
static void lazy_state(struct siw_qp *q, bool *stash, bool *orq)
{
	pthread_mutex_lock(&q->lock);
	*stash = q->rx.stash != NULL;
	*orq = q->orq != NULL;
	pthread_mutex_unlock(&q->lock);
}

/*
 * A connected QP that has received nothing has no receive stash (8 KiB)
 * and one that has read nothing no ORQ (SIW_DEFAULT_ORD entries of 424
 * bytes): they were most of an idle QP's memory. Each comes with its
 * first use, and the data is right.
 */
START_TEST(test_idle_qp_lazy_buffers)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qa, *qb;
	bool stash, orq;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, 4096, 21);
	qa = to_siw_qp(p.a.qp);
	qb = to_siw_qp(p.b.qp);
	lazy_state(qa, &stash, &orq);
	ck_assert_msg(!stash && !orq, "a: stash %d ORQ %d", stash, orq);
	lazy_state(qb, &stash, &orq);
	ck_assert_msg(!stash && !orq, "b: stash %d ORQ %d", stash, orq);

	/* b receives a Send: its stash, nothing of a's */
	h_post_recv(&p.b, &sb, 0, 4096, 1);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &sa, 0, 4096, 2,
				 RNICPI_SEND_SIGNALED, 0, 0));
	h_expect_wc(&p.b, p.b.rcq, 1, RNICPI_WC_SUCCESS, RNICPI_WC_RECV,
		    4096);
	h_expect_wc(&p.a, p.a.scq, 2, RNICPI_WC_SUCCESS, RNICPI_WC_SEND,
		    4096);
	ck_assert(h_buf_check(&sb, 0, 4096, 21, 0));
	lazy_state(qb, &stash, &orq);
	ck_assert(stash && !orq);
	lazy_state(qa, &stash, &orq);
	ck_assert(!stash && !orq);

	/* a reads b's buffer back: a's ORQ and stash */
	h_buf_fill(&sb, 22);
	memset(sa.p, 0, 4096);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ, &sa, 0, 4096, 3,
				 RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)sb.p, sb.mr->rkey));
	h_expect_wc(&p.a, p.a.scq, 3, RNICPI_WC_SUCCESS, RNICPI_WC_RDMA_READ,
		    4096);
	ck_assert(h_buf_check(&sa, 0, 4096, 22, 0));
	ck_assert(h_buf_guards_ok(&sa));
	lazy_state(qa, &stash, &orq);
	ck_assert(stash && orq);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

Suite *suite_siw_loopback(void)
{
	Suite *s = suite_create("siw-loopback");
	TCase *tc = tcase_create("loopback");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_verbs_errors);
	tcase_add_test(tc, test_opcodes_default);
	tcase_add_test(tc, test_opcodes_crc);
	tcase_add_test(tc, test_opcodes_rev1_small_fpdu);
	tcase_add_test(tc, test_opcodes_large_fpdu);
	tcase_add_test(tc, test_opcodes_zerocopy);
	tcase_add_test(tc, test_negotiation);
	tcase_add_test(tc, test_idle_qp_lazy_buffers);
	tcase_add_test(tc, test_private_data_and_reject);
	tcase_add_test(tc, test_sge_lists_inline_srq);
	tcase_add_test(tc, test_qp_limit_and_read_queues);
	tcase_add_test(tc, test_fence_and_ord);
	tcase_add_test(tc, test_solicited_and_invalidate);
	siw_loopback_add_progress_tests(tc); /* check_siw_loopback_progress.c */
	suite_add_tcase(s, tc);

	tc = tcase_create("windows");
	tcase_set_timeout(tc, 60);
	siw_loopback_add_window_tests(tc); /* check_siw_windows.c */
	suite_add_tcase(s, tc);
	siw_loopback_add_rq_case(s);	/* check_siw_rq.c */
	return s;
}
