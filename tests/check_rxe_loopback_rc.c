/* SPDX-License-Identifier: MIT */
/*
 * rxe-loopback, RC traffic: SEND, WRITE (with immediate) and READ from 0 B
 * to 16 MiB with guard bytes around every target, over IPv4 and IPv6, with
 * and without direct placement; every path MTU, RNR, many WQEs in flight,
 * SQ drain, SRQ, busy polling, per-QP source ports. The suite and its
 * "objects" case are in check_rxe_loopback.c, the receive side read by
 * polling consumers (option poll_rx) in check_rxe_poll_rx.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

static const uint32_t sizes[] = {
	0, 1, 255, 256, 4095, 4096, 65536, 1u << 20, 16u << 20,
};

/* ------------------------------------------------------------------ */

START_TEST(test_rc_send_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0xfffff0, 0x123 } };
	uint32_t size = sizes[_i];
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 3);
	rxe_t_buf_alloc(&p.t, &dst, size, 0x55, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 100);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND_WITH_IMM;
	wr.ex.imm_data = 0xa1b2c3d4;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_SEND);
	rxe_t_expect_wc(&p.t, p.b.rcq, 100, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xa1b2c3d4);
	ck_assert_uint_eq(wc.src_qp, p.a.qp->qp_num);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);
	/* A SEND's first packet takes the receive WQE and is copied, and so
	 * are runs of its MIDDLE packets (UDP GRO datagrams: a run could
	 * carry the next message past this one's end); a packet that comes
	 * alone and has more than the 64 bytes peeked (the LAST of most
	 * sizes here) is read into the buffer directly. */
	if (rxe_t_direct && size > 4096 && size % 4096 > 64)
		ck_assert_uint_ge(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 1);
	else if (rxe_t_copy)
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);

	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_write_read_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0x7ffff8, 0xfffffa } };
	uint32_t size = sizes[_i];
	struct rxe_t_buf src, dst, back, rbuf;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 11);
	rxe_t_buf_alloc(&p.t, &dst, size, 0x55, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, size, 0x66, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &rbuf, 16, 0, RXE_T_ALL_ACCESS);

	/* RDMA WRITE a -> b */
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_WRITE);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);

	/* RDMA READ it back b -> a */
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&back);

	/* RDMA WRITE with immediate consumes a receive at b. */
	memset(dst.mem + RXE_T_GUARD, 0, size);
	rxe_t_post_recv(&p, &p.b, &rbuf, 300);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = RNICPI_WR_RDMA_WRITE_WITH_IMM;
	wr.ex.imm_data = 0x01020304;
	wr.wr.rdma.remote_addr = rxe_t_buf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 300, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0x01020304);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&rbuf);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	/* Every packet of the WRITE and of the READ's responses carrying
	 * payload (64-byte headers peeked: larger ones) went straight in. */
	if (rxe_t_direct && size > 64)
		ck_assert_uint_ge(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS),
				  2 * ((size + 4095) / 4096));
	else if (rxe_t_copy)
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);
	else if (size >= (16u << 20))
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);
	/* Runs of full-MTU packets went out as UDP GSO datagrams. */
	if (size >= 4 * 4096)
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS),
				  0);

	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_buf_free(&p.t, &rbuf);
	rxe_t_pair_close(&p);
}
END_TEST

/* A progress thread that keeps polling after it received (busy_poll_us)
 * moves the same bytes: a 1 MiB WRITE and a READ back, byte-exact. */
START_TEST(test_busy_poll)
{
	static const struct rnicpi_option poll50[] = {
		{ "busy_poll_us", "50" }, { NULL, NULL },
	};
	struct rxe_t_buf src, dst, back;
	struct rxe_t_pair p;

	rxe_t_pair_open_opts(&p, NULL, poll50);
	rxe_t_buf_alloc(&p.t, &src, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 77);
	rxe_t_buf_alloc(&p.t, &dst, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&back);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * The IPv4 IDs our ICRCs assume: without GSO every datagram carries ID 0
 * (DF, unconnected socket), the receiver's first guess, so nothing needs
 * solving. With GSO the kernel numbers the segments 0, 1, 2, ...: received
 * whole through UDP GRO, each segment's index is the receiver's guess and
 * still nothing needs solving; received one by one (GRO off), segments
 * after the first are found by the ID solver. No ICRC error either way.
 */
START_TEST(test_ipv4_id_assumption)
{
	static const struct rnicpi_option gso_off[] = {
		{ "gso", "0" }, { NULL, NULL },
	};
	static const struct rnicpi_option gro_off[] = {
		{ "gro", "0" }, { NULL, NULL },
	};
	const struct rnicpi_option *opts[] = { gso_off, NULL, gro_off };
	struct rxe_t_buf src, dst;
	struct rxe_t_pair p;
	uint64_t gso, gro, solved;

	rxe_t_pair_open_opts(&p, NULL, opts[_i]);
	rxe_t_buf_alloc(&p.t, &src, 1u << 20, 0x11, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	gso = rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS);
	gro = rxe_dev_counter(p.t.dev, RXE_CNT_GRO_BATCHES);
	solved = rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ID_SOLVED);
	switch (_i) {
	case 0:
		ck_assert_uint_eq(gso, 0);
		ck_assert_uint_eq(solved, 0);
		break;
	case 1:
		ck_assert_uint_gt(gso, 0);
		ck_assert_uint_gt(gro, 0);
		ck_assert_uint_eq(solved, 0);
		break;
	default:
		ck_assert_uint_gt(gso, 0);
		ck_assert_uint_eq(gro, 0);
		ck_assert_uint_gt(solved, 0);
		break;
	}
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* Every path MTU (IBA 9.7.2 segmentation): a 70000-byte SEND and READ. */
START_TEST(test_rc_path_mtus)
{
	struct rxe_t_conn_opts o = { .mtu = (enum rnicpi_mtu)(RNICPI_MTU_256 +
							      _i),
				     .psn = { 0xfffffe, 0xfffff0 } };
	struct rxe_t_buf src, dst, back;
	struct rnicpi_send_wr wr;
	struct rnicpi_qp_attr qa;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	ck_assert_ok(p.t.ops->query_qp(p.a.qp, &qa, RNICPI_QP_PATH_MTU, NULL));
	ck_assert_int_eq(qa.path_mtu, o.mtu);
	rxe_t_buf_alloc(&p.t, &src, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 7);
	rxe_t_buf_alloc(&p.t, &dst, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD,
			 70000) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&back);
	/* ceil(70000 / MTU) packets each way plus the READ request. */
	ck_assert_uint_ge(
		rxe_dev_counter(p.t.dev, RXE_CNT_SENT_PKTS),
		2 * ((70000 + (128u << o.mtu) - 1) / (128u << o.mtu)) + 1);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_ipv6)
{
	struct rxe_t_conn_opts o = { .sgid_index = 1, .mtu = RNICPI_MTU_1024 };
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 100000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 5);
	rxe_t_buf_alloc(&p.t, &dst, 100000, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 9);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 9, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 100000) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_rnr)
{
	struct rxe_t_conn_opts o = { .min_rnr_timer = 12 /* 0.64 ms */ };
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 5000, 0x42, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 5000, 0, RXE_T_ALL_ACCESS);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	/* No receive yet: the responder answers RNR NAK, the requester
	 * waits and tries again (rnr_retry 7 = forever). */
	while (rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_RCVD) < 2)
		usleep(100);
	rxe_t_post_recv(&p, &p.b, &dst, 5);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 5, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, 5000) ==
		  0);
	ck_assert_uint_ge(rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_SENT), 2);

	/* rnr_retry 0: the first RNR NAK ends it. */
	o.rnr_retry = 8;
	rxe_t_pair_renew(&p, &o);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_RNR_RETRY_EXC_ERR, NULL);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_many_in_flight)
{
	/* 200 SENDs of 3000 bytes in a row, MTU 1024, ORD-limited READs
	 * in between: completions arrive in order. */
	struct rxe_t_conn_opts o = { .mtu = RNICPI_MTU_1024, .max_send_wr = 512,
				     .max_recv_wr = 512 };
	struct rxe_t_buf src, dst, rd;
	struct rxe_t_pair p;
	struct rnicpi_wc wc;
	unsigned int i;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 3000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 1);
	rxe_t_buf_alloc(&p.t, &dst, 200 * 3000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &rd, 3000, 0, RXE_T_ALL_ACCESS);
	for (i = 0; i < 200; i++) {
		struct rnicpi_sge sge = { rxe_t_buf_va(&dst) + i * 3000, 3000,
					  dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, 1000 + i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(p.t.ops->post_recv(p.b.qp, &rw, &rbad));
	}
	for (i = 0; i < 200; i++) {
		struct rnicpi_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		if (i % 10 == 5) {
			wr.opcode = RNICPI_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = rxe_t_buf_va(&src);
			wr.wr.rdma.rkey = src.mr->rkey;
			rxe_t_post(&p.t, &p.a, &wr, &rd);
		} else {
			wr.opcode = RNICPI_WR_SEND;
			rxe_t_post(&p.t, &p.a, &wr, &src);
		}
	}
	for (i = 0; i < 200; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	for (i = 0; i < 180; i++) {
		rxe_t_expect_wc(&p.t, p.b.rcq, 1000 + i, RNICPI_WC_SUCCESS,
				&wc);
		ck_assert(memcmp(src.mem + RXE_T_GUARD,
				 dst.mem + RXE_T_GUARD + (size_t)i * 3000,
				 3000) == 0);
	}
	ck_assert(memcmp(src.mem + RXE_T_GUARD, rd.mem + RXE_T_GUARD, 3000) ==
		  0);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &rd);
	rxe_t_pair_close(&p);
}
END_TEST

/* IBA 10.3.1.6: RTS -> SQD stops new WQEs, reports SQ_DRAINED once the
 * outstanding ones are done; SQD -> RTS resumes. */
START_TEST(test_rc_sq_drain)
{
	struct rxe_t_buf src, dst;
	struct rnicpi_qp_attr a;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, NULL);
	rxe_t_buf_alloc(&p.t, &src, 64, 0x12, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 64, 0, RXE_T_ALL_ACCESS);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_SQD;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SQ_DRAINED, p.a.qp));
	/* Posted in SQD: held, not sent. */
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	ck_assert_int_eq(p.t.ops->poll_cq(p.a.scq, 1, &wc), 0);
	ck_assert_uint_eq(dst.mem[RXE_T_GUARD], 0);
	/* SQD -> RTS: it goes. */
	a.qp_state = RNICPI_QPS_RTS;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, 64) ==
		  0);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* Each QP sends from a UDP port of its own (flow entropy, A17.2.3). */
START_TEST(test_per_qp_source_port)
{
	struct rxe_t_pair p;
	struct rxe_t_buf src, dst;

	rxe_t_pair_open(&p, NULL);
	rxe_t_buf_alloc(&p.t, &src, 8, 1, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 8, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	/* a sent the WRITE, b the ACK: both have a port, not the same,
	 * and neither is 4791. */
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.b.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0],
			  to_rxe_qp(p.b.qp)->tx_port[0]);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], ROCE_V2_UDP_PORT);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_srq)
{
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	struct rnicpi_srq_attr sa = { .max_wr = 8,
				      .max_sge = 1,
				      .srq_limit = 2 };
	struct rnicpi_srq *srq;
	struct rnicpi_cq_init_attr ca = { .cqe = 64 };
	struct rnicpi_qp_init_attr qa;
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	unsigned int i;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(t.ops->create_srq(t.pd, &sa, &srq));
	ck_assert_ok(rxe_t_side_create(&t, &a, RNICPI_QPT_RC, NULL));
	memset(&b, 0, sizeof(b));
	ck_assert_ok(t.ops->create_cq(t.dev, &ca, &b.scq));
	ck_assert_ok(t.ops->create_cq(t.dev, &ca, &b.rcq));
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = b.scq;
	qa.recv_cq = b.rcq;
	qa.srq = srq;
	qa.cap.max_send_wr = 8;
	ck_assert_ok(t.ops->create_qp(t.pd, &qa, &b.qp));
	ck_assert_ok(rxe_t_connect(&t, &a, &b, NULL));
	ck_assert_errno(t.ops->destroy_srq(srq), EBUSY);

	rxe_t_buf_alloc(&t, &src, 64, 0x77, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&t, &dst, 4 * 64, 0, RXE_T_ALL_ACCESS);
	for (i = 0; i < 4; i++) {
		struct rnicpi_sge sge = { rxe_t_buf_va(&dst) + i * 64, 64,
					  dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, 40 + i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(t.ops->post_srq_recv(srq, &rw, &rbad));
	}
	for (i = 0; i < 3; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = RNICPI_WR_SEND;
		rxe_t_post(&t, &a, &wr, &src);
		rxe_t_expect_wc(&t, b.rcq, 40 + i, RNICPI_WC_SUCCESS,
			  NULL);
	}
	/* 4 posted, 3 used: one left, under the limit of 2. */
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SRQ_LIMIT_REACHED, NULL));
	rxe_t_side_destroy(&t, &a);
	rxe_t_side_destroy(&t, &b);
	ck_assert_ok(t.ops->destroy_srq(srq));
	rxe_t_buf_free(&t, &src);
	rxe_t_buf_free(&t, &dst);
	rxe_t_dev_close(&t);
}
END_TEST

/* Posts a 64-byte WRITE of @src's @i-th 64 bytes to @dst at @off. */
static void post_write64(struct rxe_t_pair *p, struct rxe_t_buf *src,
			 struct rxe_t_buf *dst, uint32_t i, uint64_t off,
			 unsigned int flags)
{
	struct rnicpi_sge sge = {
		.addr = rxe_t_buf_va(src) + i * 64,
		.length = 64,
		.lkey = src->mr->lkey,
	};
	struct rnicpi_send_wr wr = {
		.wr_id = i,
		.opcode = RNICPI_WR_RDMA_WRITE,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = RNICPI_SEND_SIGNALED | flags,
		.wr.rdma.remote_addr = rxe_t_buf_va(dst) + off,
		.wr.rdma.rkey = dst->mr->rkey,
	};
	const struct rnicpi_send_wr *bad;

	ck_assert_ok(p->t.ops->post_send(p->a.qp, &wr, &bad));
}

/* @dst holds @src's first @len bytes at @off, zeros elsewhere. */
static void assert_landed_only(const struct rxe_t_buf *dst,
			       const struct rxe_t_buf *src, size_t off,
			       size_t len)
{
	size_t i;

	ck_assert(memcmp(dst->mem + RXE_T_GUARD + off,
			 src->mem + RXE_T_GUARD, len) == 0);
	for (i = 0; i < dst->size; i++)
		if (i < off || i >= off + len)
			ck_assert_uint_eq(dst->mem[RXE_T_GUARD + i], 0);
	rxe_t_assert_guards(dst);
}

/*
 * RNICPI_SEND_MORE (IT_COALESCE_WR_FLAG): six 64-byte WRITEs posted with
 * it stay queued, no packet sent; a seventh without it starts them all,
 * and each lands at its offset with nothing else of the target touched.
 */
START_TEST(test_rc_coalesced_writes)
{
	struct rxe_t_buf src, dst;
	struct rxe_qp *qa;
	struct rxe_t_pair p;
	uint32_t wqe, i;

	rxe_t_pair_open(&p, NULL);
	qa = to_rxe_qp(p.a.qp);
	rxe_t_buf_alloc(&p.t, &src, 7 * 64, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 5);
	rxe_t_buf_alloc(&p.t, &dst, 1024, 0, RXE_T_ALL_ACCESS);
	rxe_qp_lock(qa);
	wqe = qa->req.wqe;
	rxe_qp_unlock(qa);
	for (i = 0; i < 7; i++) {
		post_write64(&p, &src, &dst, i, 100 + i * 64,
			     i < 6 ? RNICPI_SEND_MORE : 0);
		rxe_qp_lock(qa);
		ck_assert_uint_eq(qa->req.wqe - wqe, i < 6 ? 0 : 7);
		rxe_qp_unlock(qa);
	}
	for (i = 0; i < 7; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	assert_landed_only(&dst, &src, 100, 7 * 64);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * Option ack_clock (default 16): while the receive side is held (the
 * test takes rx_lock, so no ACK is read), 40 WRITEs of 64 bytes are
 * posted one by one. The first 16 go out as they are posted; from then
 * on 16 packets are unacknowledged and each post leaves its WRITE queued
 * (ack_clocked_posts; a post that made RXE_TX_BATCH wait would send
 * them). Once ACKs are read again the rest go out together, all 40
 * complete in order, and the bytes land at their offsets and nowhere
 * else. With ack_clock=0 every post sends at once.
 */
#define CLOCKED_WRITES 40

START_TEST(test_rc_ack_clocked)
{
	static const struct rnicpi_option off[] = {
		{ "ack_clock", "0" }, { NULL, NULL },
	};
	const struct rxe_t_conn_opts co = { .max_send_wr = 64 };
	const bool clocked = _i == 0;
	struct rxe_t_buf src, dst;
	struct rxe_qp *qa;
	struct rnicpi_device *dev;
	struct rxe_t_pair p;
	uint64_t sent0, held;
	uint32_t wqe, i;

	rxe_t_pair_open_opts(&p, &co, clocked ? NULL : off);
	dev = p.t.dev;
	qa = to_rxe_qp(p.a.qp);
	rxe_t_buf_alloc(&p.t, &src, CLOCKED_WRITES * 64, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 9);
	rxe_t_buf_alloc(&p.t, &dst, 4096, 0, RXE_T_ALL_ACCESS);
	rxe_qp_lock(qa);
	wqe = qa->req.wqe;
	rxe_qp_unlock(qa);
	sent0 = rxe_dev_counter(dev, RXE_CNT_SENT_PKTS);
	pthread_mutex_lock(&to_rxe_dev(dev)->rx_lock);
	for (i = 0; i < CLOCKED_WRITES; i++) {
		uint32_t want = i + 1;

		post_write64(&p, &src, &dst, i, 8 + i * 64, 0);
		/* Sent so far: all, or 16 then a batch at every 32nd. */
		if (clocked && want > 16)
			want = want - 16 >= RXE_TX_BATCH
				       ? 16 + RXE_TX_BATCH : 16;
		rxe_qp_lock(qa);
		ck_assert_msg(qa->req.wqe - wqe == want,
			      "post %u: %u WRITEs sent, %u expected", i + 1,
			      qa->req.wqe - wqe, want);
		rxe_qp_unlock(qa);
		ck_assert_uint_eq(rxe_dev_counter(dev, RXE_CNT_SENT_PKTS) -
				  sent0, want);
	}
	held = rxe_dev_counter(dev, RXE_CNT_ACK_CLOCKED);
	pthread_mutex_unlock(&to_rxe_dev(dev)->rx_lock);
	ck_assert_uint_eq(held, clocked ? CLOCKED_WRITES - 16 : 0);
	for (i = 0; i < CLOCKED_WRITES; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	assert_landed_only(&dst, &src, 8, CLOCKED_WRITES * 64);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* The "rc", "rc-copy" and "rc-direct" cases of suite_rxe_loopback(). */
/* RNICPI_QP_CAP on @side: the send and receive queue sizes. */
static int qp_resize(struct rxe_t_pair *p, struct rxe_t_side *side,
		     uint32_t sq, uint32_t rq)
{
	struct rnicpi_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = sq;
	attr.cap.max_recv_wr = rq;
	return p->t.ops->modify_qp(side->qp, &attr, RNICPI_QP_CAP);
}

/*
 * RNICPI_DEV_CAP_RESIZE_QP: b's receive queue grows from 2 to 4 around
 * two posted receives; a's send queue, holding two SENDs held back by
 * RNICPI_SEND_MORE, shrinks to 2 around them and grows to 8 again. Sizes
 * below what is queued or over the device's limit are -EINVAL. The four
 * messages complete and land in order.
 */
START_TEST(test_rc_resize)
{
	struct rxe_t_buf src[4], dst[4];
	const struct rnicpi_send_wr *bad;
	struct rnicpi_qp_attr qa;
	struct rnicpi_qp_init_attr qi;
	struct rnicpi_send_wr wr;
	struct rnicpi_sge sge;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;
	int i;

	rxe_t_pair_open(&p, NULL);
	ck_assert_ok(qp_resize(&p, &p.b, 0, 2));
	for (i = 0; i < 4; i++) {
		rxe_t_buf_alloc(&p.t, &src[i], 1000, 0, RXE_T_ALL_ACCESS);
		rxe_t_buf_pattern(&src[i], 40 + (uint32_t)i);
		rxe_t_buf_alloc(&p.t, &dst[i], 1000, 0x55, RXE_T_ALL_ACCESS);
	}
	for (i = 0; i < 2; i++)
		rxe_t_post_recv(&p, &p.b, &dst[i], 100 + (uint64_t)i);
	ck_assert_errno(qp_resize(&p, &p.b, 0, 1), EINVAL);
	ck_assert_errno(qp_resize(&p, &p.b, 0, 1u << 30), EINVAL);
	ck_assert_ok(qp_resize(&p, &p.b, 0, 4));
	ck_assert_ok(p.t.ops->query_qp(p.b.qp, &qa, RNICPI_QP_CAP, &qi));
	ck_assert_uint_eq(qa.cap.max_recv_wr, 4);
	for (i = 2; i < 4; i++)
		rxe_t_post_recv(&p, &p.b, &dst[i], 100 + (uint64_t)i);

	for (i = 0; i < 4; i++) {
		if (i == 2) {
			/* Two SENDs queued, not started. */
			ck_assert_errno(qp_resize(&p, &p.a, 1, 0), EINVAL);
			ck_assert_ok(qp_resize(&p, &p.a, 2, 0));
			ck_assert_ok(p.t.ops->query_qp(p.a.qp, &qa,
						       RNICPI_QP_CAP, &qi));
			ck_assert_uint_eq(qa.cap.max_send_wr, 2);
			ck_assert_ok(qp_resize(&p, &p.a, 8, 0));
		}
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 10 + (uint64_t)i;
		wr.opcode = RNICPI_WR_SEND;
		wr.send_flags = RNICPI_SEND_SIGNALED |
				(i < 2 ? RNICPI_SEND_MORE : 0);
		sge.addr = rxe_t_buf_va(&src[i]);
		sge.length = 1000;
		sge.lkey = src[i].mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ck_assert_ok(p.t.ops->post_send(p.a.qp, &wr, &bad));
	}
	for (i = 0; i < 4; i++) {
		rxe_t_expect_wc(&p.t, p.a.scq, 10 + (uint64_t)i,
				RNICPI_WC_SUCCESS, NULL);
		rxe_t_expect_wc(&p.t, p.b.rcq, 100 + (uint64_t)i,
				RNICPI_WC_SUCCESS, &wc);
		ck_assert_uint_eq(wc.byte_len, 1000);
		ck_assert(memcmp(dst[i].mem + RXE_T_GUARD,
				 src[i].mem + RXE_T_GUARD, 1000) == 0);
		rxe_t_assert_guards(&dst[i]);
	}
	for (i = 0; i < 4; i++) {
		rxe_t_buf_free(&p.t, &src[i]);
		rxe_t_buf_free(&p.t, &dst[i]);
	}
	rxe_t_pair_close(&p);
}
END_TEST

void rxe_loopback_add_rc_cases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("rc");
	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_path_mtus, 0, 5);
	tcase_add_loop_test(tc, test_ipv4_id_assumption, 0, 3);
	tcase_add_test(tc, test_busy_poll);
	tcase_add_test(tc, test_rc_ipv6);
	tcase_add_test(tc, test_rc_rnr);
	tcase_add_test(tc, test_rc_many_in_flight);
	tcase_add_test(tc, test_rc_coalesced_writes);
	tcase_add_loop_test(tc, test_rc_ack_clocked, 0, 2);
	tcase_add_test(tc, test_srq);
	tcase_add_test(tc, test_rc_sq_drain);
	tcase_add_test(tc, test_rc_resize);
	tcase_add_test(tc, test_per_qp_source_port);
	suite_add_tcase(s, tc);

	/* Again with every payload copied from the receive buffer
	 * (direct=0) ... */
	tc = tcase_create("rc-copy");
	tcase_add_checked_fixture(tc, rxe_t_copy_setup, rxe_t_copy_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	suite_add_tcase(s, tc);

	/* ... and with every datagram peeked at, payloads read straight
	 * into place (direct=2). */
	tc = tcase_create("rc-direct");
	tcase_add_checked_fixture(tc, rxe_t_direct_setup,
				  rxe_t_direct_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_path_mtus, 0, 5);
	tcase_add_test(tc, test_rc_ipv6);
	tcase_add_test(tc, test_srq);
	suite_add_tcase(s, tc);
}
