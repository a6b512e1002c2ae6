/* SPDX-License-Identifier: MIT */
/*
 * rxe-ud: datagrams over a soft-RoCE device on lo: UD over IPv4 and IPv6
 * and the GSI QP (QP1), Q_Key rules, the GRH in front of every receive,
 * the MTU limit.
 */
#include "config.h"

#include <check.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------------ */
/* UD and GSI                                                         */
/* ------------------------------------------------------------------ */

static void ud_ready(struct rxe_t_dev *t, struct rxe_t_side *s, uint32_t qkey)
{
	struct rnicpi_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	ck_assert_ok(t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE |
				       RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				       RNICPI_QP_QKEY));
	a.qp_state = RNICPI_QPS_RTR;
	ck_assert_ok(t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE));
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = 0x100;
	ck_assert_ok(t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE |
				       RNICPI_QP_SQ_PSN));
}

static void ud_send(struct rxe_t_dev *t, struct rxe_t_side *s,
		    struct rnicpi_ah *ah, uint32_t dqpn, uint32_t qkey,
		    struct rxe_t_buf *src, uint64_t wr_id)
{
	struct rnicpi_sge sge = { rxe_t_buf_va(src), (uint32_t)src->size,
				  src->mr->lkey };
	struct rnicpi_send_wr wr;
	const struct rnicpi_send_wr *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = RNICPI_WR_SEND_WITH_IMM;
	wr.ex.imm_data = 0x5a5a5a5a;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	ck_assert_ok(t->ops->post_send(s->qp, &wr, &bad));
}

static void check_ud(enum rnicpi_qp_type type, int sgid_index)
{
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	struct rnicpi_ah_attr aa;
	struct rnicpi_ah *ah;
	struct rxe_t_buf src, dst;
	struct rnicpi_wc wc;
	uint32_t qkey = type == RNICPI_QPT_GSI ? IB_GSI_QKEY : 0x11111111;
	struct rnicpi_recv_wr rw;
	struct rnicpi_sge sge;
	const struct rnicpi_recv_wr *rbad;
	int rounds;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &a, type, NULL));
	if (type == RNICPI_QPT_GSI) {
		/* One GSI QP per port: it talks to itself over lo. */
		struct rxe_t_side dup;

		ck_assert_uint_eq(a.qp->qp_num, 1);
		ck_assert_errno(rxe_t_side_create(&t, &dup, RNICPI_QPT_GSI,
						  NULL), EBUSY);
		rxe_t_side_destroy(&t, &dup);
		b = a;
	} else {
		ck_assert_ok(rxe_t_side_create(&t, &b, type, NULL));
	}
	ud_ready(&t, &a, qkey);
	if (b.qp != a.qp)
		ud_ready(&t, &b, qkey);

	memset(&aa, 0, sizeof(aa));
	if (sgid_index)
		rxe_t_gid_v6(&aa.dgid, "::1");
	else
		rxe_t_gid_v4(&aa.dgid, "127.0.0.1");
	aa.sgid_index = (uint8_t)sgid_index;
	aa.is_global = 1;
	aa.port_num = 1;
	ck_assert_ok(t.ops->create_ah(t.pd, &aa, &ah));

	rxe_t_buf_alloc(&t, &src, 256, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 9);
	rxe_t_buf_alloc(&t, &dst, IB_GRH_BYTES + 256, 0, RXE_T_ALL_ACCESS);
	sge.addr = rxe_t_buf_va(&dst);
	sge.length = (uint32_t)dst.size;
	sge.lkey = dst.mr->lkey;
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &sge;
	rw.num_sge = 1;
	rw.wr_id = 50;
	ck_assert_ok(t.ops->post_recv(b.qp, &rw, &rbad));

	/* A wrong Q_Key is dropped and counted; the right one lands. */
	ud_send(&t, &a, ah, b.qp->qp_num, 0x22222222, &src, 1);
	rxe_t_expect_wc(&t, a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	for (rounds = 0; rxe_dev_counter(t.dev, RXE_CNT_QKEY_ERR) == 0;
	     rounds++)
		usleep(100);
	ud_send(&t, &a, ah, b.qp->qp_num, qkey, &src, 2);
	rxe_t_expect_wc(&t, a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&t, b.rcq, 50, RNICPI_WC_SUCCESS, &wc);
	ck_assert_uint_eq(wc.byte_len, IB_GRH_BYTES + 256);
	ck_assert(wc.wc_flags & RNICPI_WC_GRH);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0x5a5a5a5a);
	ck_assert_uint_eq(wc.src_qp, a.qp->qp_num);
	ck_assert(memcmp(src.mem + RXE_T_GUARD,
			 dst.mem + RXE_T_GUARD + IB_GRH_BYTES, 256) == 0);
	if (sgid_index == 0) {
		/* IPv4 header in the GRH's last 20 bytes, from 127.0.0.1. */
		ck_assert_uint_eq(dst.mem[RXE_T_GUARD + 20], 0x45);
		ck_assert_uint_eq(dst.mem[RXE_T_GUARD + 20 + 12], 127);
		ck_assert_uint_eq(dst.mem[RXE_T_GUARD + 20 + 15], 1);
	} else {
		ck_assert_uint_eq(dst.mem[RXE_T_GUARD] >> 4, 6);
		ck_assert_uint_eq(dst.mem[RXE_T_GUARD + 8 + 15], 1);
	}
	rxe_t_assert_guards(&dst);
	ck_assert_uint_eq(rxe_dev_counter(t.dev, RXE_CNT_QKEY_ERR), 1);

	/* UD messages over the MTU are refused at post time. */
	{
		struct rxe_t_buf big;
		struct rnicpi_sge bs;
		struct rnicpi_send_wr wr;
		const struct rnicpi_send_wr *bad;

		rxe_t_buf_alloc(&t, &big, 8192, 0, RXE_T_ALL_ACCESS);
		bs.addr = rxe_t_buf_va(&big);
		bs.length = 8192;
		bs.lkey = big.mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = RNICPI_WR_SEND;
		wr.sg_list = &bs;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b.qp->qp_num;
		ck_assert_errno(t.ops->post_send(a.qp, &wr, &bad), EINVAL);
		rxe_t_buf_free(&t, &big);
	}

	ck_assert_ok(t.ops->destroy_ah(ah));
	rxe_t_buf_free(&t, &src);
	rxe_t_buf_free(&t, &dst);
	if (b.qp != a.qp)
		rxe_t_side_destroy(&t, &b);
	rxe_t_side_destroy(&t, &a);
	rxe_t_dev_close(&t);
}

START_TEST(test_ud_ipv4)
{
	check_ud(RNICPI_QPT_UD, 0);
}
END_TEST

START_TEST(test_ud_ipv6)
{
	check_ud(RNICPI_QPT_UD, 1);
}
END_TEST

START_TEST(test_gsi)
{
	check_ud(RNICPI_QPT_GSI, 0);
}
END_TEST

Suite *suite_rxe_ud(void)
{
	Suite *s = suite_create("rxe-ud");
	TCase *tc = tcase_create("ud");

	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ud_ipv4);
	tcase_add_test(tc, test_ud_ipv6);
	tcase_add_test(tc, test_gsi);
	suite_add_tcase(s, tc);
	return s;
}
