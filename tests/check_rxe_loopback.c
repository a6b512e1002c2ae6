/* SPDX-License-Identifier: MIT */
/*
 * rxe-loopback: a soft-RoCE device on lo, two QPs talking over 127.0.0.1
 * or ::1 through the provider's ops, every opcode, message sizes from 0 B
 * to 16 MiB with guard bytes around every target, UD and GSI datagrams,
 * the QP state machine, RNR, flushing.
 */
#include "config.h"

#include <check.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/rxe_testlib.h"
#include "tests/suites.h"
#include "tests/testutil.h"

#define GUARD 64
#define GUARD_BYTE 0xee

static const uint32_t sizes[] = {
	0, 1, 255, 256, 4095, 4096, 65536, 1u << 20, 16u << 20,
};

/* A buffer with GUARD bytes before and after, registered whole. */
struct tbuf {
	uint8_t *mem;
	size_t size;
	struct rnicpi_mr *mr;
};

static void tbuf_alloc(struct rxe_t_dev *t, struct tbuf *b, size_t size,
		       uint8_t fill, unsigned int access)
{
	b->size = size;
	b->mem = g_malloc(size + 2 * GUARD);
	memset(b->mem, GUARD_BYTE, size + 2 * GUARD);
	memset(b->mem + GUARD, fill, size);
	ck_assert_ok(t->ops->reg_mr(t->pd, b->mem, size + 2 * GUARD,
				    (uint64_t)(uintptr_t)b->mem, access,
				    &b->mr));
}

static void tbuf_pattern(struct tbuf *b, uint32_t seed)
{
	size_t i;

	for (i = 0; i < b->size; i++)
		b->mem[GUARD + i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

static uint64_t tbuf_va(const struct tbuf *b)
{
	return (uint64_t)(uintptr_t)(b->mem + GUARD);
}

static void tbuf_free(struct rxe_t_dev *t, struct tbuf *b)
{
	if (b->mr)
		ck_assert_ok(t->ops->dereg_mr(b->mr));
	g_free(b->mem);
	memset(b, 0, sizeof(*b));
}

static void assert_guards(const struct tbuf *b)
{
	size_t i;

	for (i = 0; i < GUARD; i++) {
		ck_assert_uint_eq(b->mem[i], GUARD_BYTE);
		ck_assert_uint_eq(b->mem[GUARD + b->size + i], GUARD_BYTE);
	}
}

static const unsigned int all_access = RNICPI_ACCESS_LOCAL_WRITE |
	RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ |
	RNICPI_ACCESS_REMOTE_ATOMIC;

/* ------------------------------------------------------------------ */

START_TEST(test_device_queries)
{
	struct rxe_t_dev t;
	struct rnicpi_device_attr da;
	struct rnicpi_port_attr pa;
	struct rnicpi_gid_entry ge;
	union rnicpi_gid want;
	static const struct rnicpi_option bad[] = {
		{ "max_unacked", "0" }, { NULL, NULL },
	};
	static const struct rnicpi_option unknown[] = {
		{ "no_such_thing", "1" }, { NULL, NULL },
	};
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	struct rnicpi_device *d;

	rxe_t_lo_netdev(&nd, addrs);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", bad,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", unknown,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_ok(rxe_provider.netdev_supported(&nd));
	nd.n_addrs = 0;
	ck_assert_errno(rxe_provider.netdev_supported(&nd), EADDRNOTAVAIL);

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_str_eq(t.dev->name, "rxe_lo");
	ck_assert_ok(t.ops->query_device(t.dev, &da));
	ck_assert_int_eq(da.transport, RNICPI_TRANSPORT_ROCE);
	ck_assert(da.caps & RNICPI_DEV_CAP_GSI);
	ck_assert(da.caps & RNICPI_DEV_CAP_ATOMIC);
	ck_assert_ok(t.ops->query_port(t.dev, 1, &pa));
	ck_assert_int_eq(pa.state, RNICPI_PORT_ACTIVE);
	ck_assert_int_eq(pa.active_mtu, RNICPI_MTU_4096);
	ck_assert_int_eq(pa.link_layer, RNICPI_LINK_LAYER_ETHERNET);
	ck_assert_errno(t.ops->query_port(t.dev, 2, &pa), EINVAL);

	ck_assert_ok(t.ops->query_gid(t.dev, 1, 0, &ge));
	rxe_t_gid_v4(&want, "127.0.0.1");
	ck_assert_mem_eq(ge.gid.raw, want.raw, 16);
	ck_assert_int_eq(ge.type, RNICPI_GID_TYPE_ROCE_V2);
	ck_assert_ok(t.ops->query_gid(t.dev, 1, 1, &ge));
	rxe_t_gid_v6(&want, "::1");
	ck_assert_mem_eq(ge.gid.raw, want.raw, 16);
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 2, &ge), ENOENT);
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 99, &ge), EINVAL);

	/* Interface events: MTU and carrier change the port, addresses
	 * the GID table; each raises its event. */
	rxe_t_lo_netdev(&nd, addrs);
	nd.mtu = 1500;
	nd.flags &= ~RNICPI_NETDEV_RUNNING;
	nd.n_addrs = 1;
	t.ops->netdev_event(t.dev, &nd, RNICPI_NETDEV_CHANGE);
	ck_assert_ok(t.ops->query_port(t.dev, 1, &pa));
	ck_assert_int_eq(pa.state, RNICPI_PORT_DOWN);
	ck_assert_int_eq(pa.active_mtu, RNICPI_MTU_1024);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_PORT_ERR, NULL));
	ck_assert(rxe_t_has_event(RNICPI_EVENT_GID_CHANGE, NULL));
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 1, &ge), ENOENT);
	rxe_t_events_reset();
	rxe_t_lo_netdev(&nd, addrs);
	t.ops->netdev_event(t.dev, &nd, RNICPI_NETDEV_ADDR_ADD);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_PORT_ACTIVE, NULL));
	ck_assert_ok(t.ops->query_gid(t.dev, 1, 1, &ge));
	rxe_t_dev_close(&t);
}
END_TEST

START_TEST(test_mr_keys)
{
	struct rxe_t_dev t;
	struct rnicpi_mr *mr;
	uint8_t buf[256];
	uint32_t old;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_errno(t.ops->reg_mr(t.pd, buf, sizeof(buf), 0,
				      RNICPI_ACCESS_REMOTE_WRITE, &mr), EINVAL);
	ck_assert_errno(t.ops->reg_mr(t.pd, buf, sizeof(buf), 0,
				      RNICPI_ACCESS_REMOTE_ATOMIC, &mr), EINVAL);
	ck_assert_ok(t.ops->reg_mr(t.pd, buf, sizeof(buf),
				   (uint64_t)(uintptr_t)buf, all_access, &mr));
	ck_assert_uint_eq(mr->lkey, mr->rkey);
	ck_assert_uint_ne(mr->lkey >> 8, 0);
	old = mr->lkey;
	ck_assert_ok(t.ops->rereg_mr(mr, RNICPI_REREG_ACCESS, NULL, NULL, 0, 0,
				     RNICPI_ACCESS_LOCAL_WRITE));
	/* Same slot, new key byte: the old key is stale. */
	ck_assert_uint_eq(mr->lkey >> 8, old >> 8);
	ck_assert_uint_ne(mr->lkey, old);
	ck_assert_ok(t.ops->dereg_mr(mr));
	rxe_t_dev_close(&t);
}
END_TEST

START_TEST(test_qp_state_machine)
{
	struct rxe_t_dev t;
	struct rxe_t_side s;
	struct rnicpi_qp_attr a;
	struct rnicpi_send_wr wr;
	struct rnicpi_recv_wr rwr;
	const struct rnicpi_send_wr *bad;
	const struct rnicpi_recv_wr *rbad;
	struct rnicpi_wc wc;
	struct rnicpi_qp_init_attr ia;
	union rnicpi_gid gid;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &s, RNICPI_QPT_RC, NULL));
	ck_assert_uint_ge(s.qp->qp_num, 2);

	memset(&a, 0, sizeof(a));
	memset(&wr, 0, sizeof(wr));
	/* Posting before RTS is refused. */
	wr.opcode = RNICPI_WR_SEND;
	ck_assert_errno(t.ops->post_send(s.qp, &wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	/* RESET -> RTR skips INIT (IBA 10.3.1). */
	a.qp_state = RNICPI_QPS_RTR;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE), EINVAL);
	/* RESET -> INIT needs P_Key index, port and access. */
	a.qp_state = RNICPI_QPS_INIT;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX), EINVAL);
	/* ... and cannot set the SQ PSN. */
	a.port_num = 1;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
					 RNICPI_QP_ACCESS_FLAGS |
					 RNICPI_QP_SQ_PSN), EINVAL);
	a.port_num = 2;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
					 RNICPI_QP_ACCESS_FLAGS), EINVAL);
	a.port_num = 1;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
				      RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				      RNICPI_QP_ACCESS_FLAGS));
	ck_assert_ok(t.ops->query_qp(s.qp, &a, 0, &ia));
	ck_assert_int_eq(a.qp_state, RNICPI_QPS_INIT);
	ck_assert_int_eq(ia.qp_type, RNICPI_QPT_RC);
	ck_assert_uint_ge(ia.cap.max_send_wr, 256);

	/* INIT -> RTR without the AV. */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = RNICPI_MTU_1024;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PATH_MTU), EINVAL);
	/* An AV with an empty source GID slot. */
	rxe_t_gid_v4(&gid, "127.0.0.1");
	a.ah_attr.dgid = gid;
	a.ah_attr.sgid_index = 5;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_AV | RNICPI_QP_PATH_MTU |
					 RNICPI_QP_DEST_QPN | RNICPI_QP_RQ_PSN |
					 RNICPI_QP_MAX_DEST_RD_ATOMIC |
					 RNICPI_QP_MIN_RNR_TIMER), EINVAL);

	/* Receives posted in INIT are flushed by ERR. */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 77;
	ck_assert_ok(t.ops->post_recv(s.qp, &rwr, &rbad));
	a.qp_state = RNICPI_QPS_ERR;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE));
	ck_assert_int_eq(t.ops->poll_cq(s.rcq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	/* In ERR, posts complete at once with flush errors. */
	wr.wr_id = 78;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	ck_assert_ok(t.ops->post_send(s.qp, &wr, &bad));
	ck_assert_int_eq(t.ops->poll_cq(s.scq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	/* ERR -> RESET -> INIT again. */
	a.qp_state = RNICPI_QPS_RESET;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE));
	rxe_t_side_destroy(&t, &s);
	rxe_t_dev_close(&t);
}
END_TEST

/* ------------------------------------------------------------------ */

struct pair {
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
};

static void pair_open_opts(struct pair *p, const struct rxe_t_conn_opts *o,
			   const struct rnicpi_option *options)
{
	ck_assert_ok(rxe_t_dev_open(&p->t, options));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->a, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->b, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_connect(&p->t, &p->a, &p->b, o));
}

static void pair_open(struct pair *p, const struct rxe_t_conn_opts *o)
{
	pair_open_opts(p, o, NULL);
}

/* New QPs on the same device (the old ones are in ERR). */
static void pair_renew(struct pair *p, const struct rxe_t_conn_opts *o)
{
	rxe_t_side_destroy(&p->t, &p->a);
	rxe_t_side_destroy(&p->t, &p->b);
	ck_assert_ok(rxe_t_side_create(&p->t, &p->a, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->b, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_connect(&p->t, &p->a, &p->b, o));
}

static void pair_close(struct pair *p)
{
	rxe_t_side_destroy(&p->t, &p->a);
	rxe_t_side_destroy(&p->t, &p->b);
	rxe_t_dev_close(&p->t);
}

static void post_recv_buf(struct pair *p, struct rxe_t_side *s,
			  struct tbuf *b, uint64_t wr_id)
{
	struct rnicpi_sge sge = {
		.addr = tbuf_va(b), .length = (uint32_t)b->size,
		.lkey = b->mr->lkey,
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};
	const struct rnicpi_recv_wr *bad;

	ck_assert_ok(p->t.ops->post_recv(s->qp, &wr, &bad));
}

static void post_one(struct rxe_t_dev *t, struct rxe_t_side *s,
		     struct rnicpi_send_wr *wr, struct tbuf *src)
{
	struct rnicpi_sge sge;
	const struct rnicpi_send_wr *bad;

	if (src) {
		sge.addr = tbuf_va(src);
		sge.length = (uint32_t)src->size;
		sge.lkey = src->mr->lkey;
		wr->sg_list = &sge;
		wr->num_sge = 1;
	}
	wr->send_flags |= RNICPI_SEND_SIGNALED;
	ck_assert_ok(t->ops->post_send(s->qp, wr, &bad));
}

static void expect_wc(struct rxe_t_dev *t, struct rnicpi_cq *cq, uint64_t wr_id,
		      enum rnicpi_wc_status status, struct rnicpi_wc *out)
{
	struct rnicpi_wc wc;

	ck_assert_ok(rxe_t_wait_wc(t, cq, &wc));
	ck_assert_msg(wc.wr_id == wr_id && wc.status == status,
		      "completion wr_id %" PRIu64 " status %d, expected %"
		      PRIu64 " status %d", wc.wr_id, wc.status, wr_id, status);
	if (out)
		*out = wc;
}

START_TEST(test_rc_send_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0xfffff0, 0x123 } };
	uint32_t size = sizes[_i];
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct pair p;

	pair_open(&p, &o);
	tbuf_alloc(&p.t, &src, size, 0, all_access);
	tbuf_pattern(&src, 3);
	tbuf_alloc(&p.t, &dst, size, 0x55, all_access);
	post_recv_buf(&p, &p.b, &dst, 100);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND_WITH_IMM;
	wr.ex.imm_data = 0xa1b2c3d4;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_SEND);
	expect_wc(&p.t, p.b.rcq, 100, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xa1b2c3d4);
	ck_assert_uint_eq(wc.src_qp, p.a.qp->qp_num);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, size) == 0);
	assert_guards(&dst);

	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_write_read_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0x7ffff8, 0xfffffa } };
	uint32_t size = sizes[_i];
	struct tbuf src, dst, back, rbuf;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct pair p;

	pair_open(&p, &o);
	tbuf_alloc(&p.t, &src, size, 0, all_access);
	tbuf_pattern(&src, 11);
	tbuf_alloc(&p.t, &dst, size, 0x55, all_access);
	tbuf_alloc(&p.t, &back, size, 0x66, all_access);
	tbuf_alloc(&p.t, &rbuf, 16, 0, all_access);

	/* RDMA WRITE a -> b */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_WRITE);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, size) == 0);
	assert_guards(&dst);

	/* RDMA READ it back b -> a */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &back);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + GUARD, back.mem + GUARD, size) == 0);
	assert_guards(&back);

	/* RDMA WRITE with immediate consumes a receive at b. */
	memset(dst.mem + GUARD, 0, size);
	post_recv_buf(&p, &p.b, &rbuf, 300);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = RNICPI_WR_RDMA_WRITE_WITH_IMM;
	wr.ex.imm_data = 0x01020304;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 300, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0x01020304);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, size) == 0);
	assert_guards(&dst);
	assert_guards(&rbuf);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	/* Runs of full-MTU packets went out as UDP GSO datagrams. */
	if (size >= 4 * 4096)
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS), 0);

	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	tbuf_free(&p.t, &back);
	tbuf_free(&p.t, &rbuf);
	pair_close(&p);
}
END_TEST

/* Without GSO every datagram carries IPv4 ID 0 (DF, unconnected socket):
 * the receiver's first guess matches, nothing needs solving. With GSO the
 * kernel numbers the segments 0, 1, 2, ...: the ICRCs still match. */
START_TEST(test_ipv4_id_assumption)
{
	static const struct rnicpi_option no_gso[] = {
		{ "gso", "0" }, { NULL, NULL },
	};
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;
	struct pair p;
	int gso = _i;

	pair_open_opts(&p, NULL, gso ? NULL : no_gso);
	tbuf_alloc(&p.t, &src, 1u << 20, 0x11, all_access);
	tbuf_alloc(&p.t, &dst, 1u << 20, 0, all_access);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, 1u << 20) == 0);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	if (gso) {
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS), 0);
	} else {
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS), 0);
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev,
						  RXE_CNT_ICRC_ID_SOLVED), 0);
	}
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

/* Every path MTU (IBA 9.7.2 segmentation): a 70000-byte SEND and READ. */
START_TEST(test_rc_path_mtus)
{
	struct rxe_t_conn_opts o = { .mtu = (enum rnicpi_mtu)(RNICPI_MTU_256 + _i),
				     .psn = { 0xfffffe, 0xfffff0 } };
	struct tbuf src, dst, back;
	struct rnicpi_send_wr wr;
	struct rnicpi_qp_attr qa;
	struct pair p;

	pair_open(&p, &o);
	ck_assert_ok(p.t.ops->query_qp(p.a.qp, &qa, RNICPI_QP_PATH_MTU, NULL));
	ck_assert_int_eq(qa.path_mtu, o.mtu);
	tbuf_alloc(&p.t, &src, 70000, 0, all_access);
	tbuf_pattern(&src, 7);
	tbuf_alloc(&p.t, &dst, 70000, 0, all_access);
	tbuf_alloc(&p.t, &back, 70000, 0, all_access);
	post_recv_buf(&p, &p.b, &dst, 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 1, RNICPI_WC_SUCCESS, NULL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &back);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + GUARD, back.mem + GUARD, 70000) == 0);
	assert_guards(&dst);
	assert_guards(&back);
	/* ceil(70000 / MTU) packets each way plus the READ request. */
	ck_assert_uint_ge(rxe_dev_counter(p.t.dev, RXE_CNT_SENT_PKTS),
			  2 * ((70000 + (128u << o.mtu) - 1) / (128u << o.mtu)) + 1);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	tbuf_free(&p.t, &back);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_atomics)
{
	struct tbuf target, res;
	struct rnicpi_send_wr wr;
	struct pair p;
	uint64_t v;

	pair_open(&p, NULL);
	tbuf_alloc(&p.t, &target, 16, 0, all_access);
	tbuf_alloc(&p.t, &res, 8, 0, all_access);
	v = 1000;
	memcpy(target.mem + GUARD, &v, 8);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = tbuf_va(&target);
	wr.wr.atomic.rkey = target.mr->rkey;
	wr.wr.atomic.compare_add = 5;
	post_one(&p.t, &p.a, &wr, &res);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	memcpy(&v, res.mem + GUARD, 8);
	ck_assert_uint_eq(v, 1000);
	memcpy(&v, target.mem + GUARD, 8);
	ck_assert_uint_eq(v, 1005);

	/* CAS that fails: compare 7 != 1005, memory stays. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = tbuf_va(&target);
	wr.wr.atomic.rkey = target.mr->rkey;
	wr.wr.atomic.compare_add = 7;
	wr.wr.atomic.swap = 42;
	post_one(&p.t, &p.a, &wr, &res);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	memcpy(&v, res.mem + GUARD, 8);
	ck_assert_uint_eq(v, 1005);
	memcpy(&v, target.mem + GUARD, 8);
	ck_assert_uint_eq(v, 1005);

	/* CAS that succeeds, on the second word. */
	v = 9;
	memcpy(target.mem + GUARD + 8, &v, 8);
	wr.wr_id = 3;
	wr.send_flags = 0;
	wr.wr.atomic.remote_addr = tbuf_va(&target) + 8;
	wr.wr.atomic.compare_add = 9;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	post_one(&p.t, &p.a, &wr, &res);
	expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, NULL);
	memcpy(&v, res.mem + GUARD, 8);
	ck_assert_uint_eq(v, 9);
	memcpy(&v, target.mem + GUARD + 8, 8);
	ck_assert_uint_eq(v, 0x1122334455667788ull);
	memcpy(&v, target.mem + GUARD, 8);
	ck_assert_uint_eq(v, 1005);
	assert_guards(&target);

	/* Misaligned atomics are refused at post time. */
	{
		const struct rnicpi_send_wr *bad;
		struct rnicpi_sge sge = { tbuf_va(&res), 8, res.mr->lkey };

		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = tbuf_va(&target) + 3;
		ck_assert_errno(p.t.ops->post_send(p.a.qp, &wr, &bad), EINVAL);
	}
	tbuf_free(&p.t, &target);
	tbuf_free(&p.t, &res);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_invalidate)
{
	struct tbuf src, dst, victim, mine;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct pair p;

	pair_open(&p, NULL);
	tbuf_alloc(&p.t, &src, 100, 0x11, all_access);
	tbuf_alloc(&p.t, &dst, 100, 0, all_access);
	tbuf_alloc(&p.t, &victim, 100, 0, all_access);
	tbuf_alloc(&p.t, &mine, 100, 0x22, all_access);

	/* SEND with Invalidate: b's victim key dies. */
	post_recv_buf(&p, &p.b, &dst, 10);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = victim.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 10, RNICPI_WC_SUCCESS, &wc);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, victim.mr->rkey);

	/* A WRITE with the dead key: remote access error. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = tbuf_va(&victim);
	wr.wr.rdma.rkey = victim.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_REM_ACCESS_ERR, NULL);
	ck_assert_uint_eq(victim.mem[GUARD], 0);
	assert_guards(&victim);

	/* LOCAL_INV of our own key, then a send from it fails locally. */
	pair_renew(&p, NULL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = RNICPI_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = mine.mr->lkey;
	post_one(&p.t, &p.a, &wr, NULL);
	expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_LOCAL_INV);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = RNICPI_WR_SEND;
	post_one(&p.t, &p.a, &wr, &mine);
	expect_wc(&p.t, p.a.scq, 4, RNICPI_WC_LOC_PROT_ERR, NULL);
	/* Re-registering makes it usable again. */
	ck_assert_ok(p.t.ops->rereg_mr(mine.mr, RNICPI_REREG_ACCESS, NULL,
				       NULL, 0, 0, all_access));

	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	tbuf_free(&p.t, &victim);
	tbuf_free(&p.t, &mine);
	pair_close(&p);
}
END_TEST

static void post_bind(struct pair *p, struct rxe_t_side *s, uint64_t wr_id,
		      struct rnicpi_mw *mw, uint32_t rkey, struct tbuf *b,
		      uint64_t off, uint64_t len, unsigned int access)
{
	struct rnicpi_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = RNICPI_WR_BIND_MW;
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.rkey = rkey;
	wr.wr.bind_mw.bind_info.mr = b->mr;
	wr.wr.bind_mw.bind_info.addr = tbuf_va(b) + off;
	wr.wr.bind_mw.bind_info.length = len;
	wr.wr.bind_mw.bind_info.access = access;
	post_one(&p->t, s, &wr, NULL);
}

static void post_rdma(struct pair *p, struct rxe_t_side *s, uint64_t wr_id,
		      enum rnicpi_wr_opcode op, struct tbuf *local,
		      uint64_t remote, uint32_t rkey)
{
	struct rnicpi_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	post_one(&p->t, s, &wr, local);
}

/* IBA 10.6.7: windows onto a region that itself grants no remote right. */
START_TEST(test_memory_windows)
{
	struct tbuf win, src, dst;
	struct rnicpi_mw *mw1, *mw2;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct pair p;
	uint32_t key1;
	size_t i;

	pair_open(&p, NULL);
	tbuf_alloc(&p.t, &win, 4096, 0, RNICPI_ACCESS_LOCAL_WRITE |
		   RNICPI_ACCESS_MW_BIND);
	tbuf_alloc(&p.t, &src, 100, 0x5a, all_access);
	tbuf_alloc(&p.t, &dst, 100, 0, all_access);
	ck_assert_ok(p.t.ops->alloc_mw(p.t.pd, RNICPI_MW_TYPE_1, &mw1));
	ck_assert_ok(p.t.ops->alloc_mw(p.t.pd, RNICPI_MW_TYPE_2, &mw2));

	/* Type 1 over bytes 1024..2047, remote write and read. */
	key1 = mw1->rkey;
	post_bind(&p, &p.b, 1, mw1, 0, &win, 1024, 1024,
		  RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ);
	expect_wc(&p.t, p.b.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_BIND_MW);
	ck_assert_uint_ne(mw1->rkey, key1);
	ck_assert_errno(p.t.ops->dereg_mr(win.mr), EBUSY);
	post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_WRITE, &src,
		  tbuf_va(&win) + 1024, mw1->rkey);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(win.mem + GUARD + 1024, src.mem + GUARD, 100) == 0);
	post_rdma(&p, &p.a, 3, RNICPI_WR_RDMA_READ, &dst,
		  tbuf_va(&win) + 1024, mw1->rkey);
	expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(dst.mem + GUARD, src.mem + GUARD, 100) == 0);
	/* 100 bytes from 1000 into the window run past its end. */
	post_rdma(&p, &p.a, 4, RNICPI_WR_RDMA_WRITE, &src,
		  tbuf_va(&win) + 2024, mw1->rkey);
	expect_wc(&p.t, p.a.scq, 4, RNICPI_WC_REM_ACCESS_ERR, NULL);
	for (i = 2048; i < 4096; i++)
		ck_assert_uint_eq(win.mem[GUARD + i], 0);
	assert_guards(&win);

	/* The region's own key grants nothing remotely. */
	pair_renew(&p, NULL);
	post_rdma(&p, &p.a, 5, RNICPI_WR_RDMA_WRITE, &src,
		  tbuf_va(&win) + 1024, win.mr->rkey);
	expect_wc(&p.t, p.a.scq, 5, RNICPI_WC_REM_ACCESS_ERR, NULL);

	/* Type 1 unbound (length 0): its key is dead. */
	pair_renew(&p, NULL);
	post_bind(&p, &p.b, 6, mw1, 0, &win, 0, 0, 0);
	expect_wc(&p.t, p.b.scq, 6, RNICPI_WC_SUCCESS, NULL);
	post_rdma(&p, &p.a, 7, RNICPI_WR_RDMA_READ, &dst,
		  tbuf_va(&win) + 1024, mw1->rkey);
	expect_wc(&p.t, p.a.scq, 7, RNICPI_WC_REM_ACCESS_ERR, NULL);

	/* Type 2 bound to b's QP with our key byte 0x42; read through it,
	 * then SEND_WITH_INV kills it. */
	pair_renew(&p, NULL);
	post_bind(&p, &p.b, 8, mw2, (mw2->rkey & ~0xffu) | 0x42, &win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_READ);
	expect_wc(&p.t, p.b.scq, 8, RNICPI_WC_SUCCESS, NULL);
	ck_assert_uint_eq(mw2->rkey & 0xff, 0x42);
	post_rdma(&p, &p.a, 9, RNICPI_WR_RDMA_READ, &dst,
		  tbuf_va(&win) + 1024, mw2->rkey);
	expect_wc(&p.t, p.a.scq, 9, RNICPI_WC_SUCCESS, NULL);
	/* Binding a bound type 2 window again is refused. */
	post_bind(&p, &p.b, 10, mw2, (mw2->rkey & ~0xffu) | 0x43, &win, 0, 64,
		  RNICPI_ACCESS_REMOTE_READ);
	expect_wc(&p.t, p.b.scq, 10, RNICPI_WC_MW_BIND_ERR, NULL);
	pair_renew(&p, NULL);
	post_bind(&p, &p.b, 11, mw2, (mw2->rkey & ~0xffu) | 0x44, &win, 0,
		  4096, RNICPI_ACCESS_REMOTE_READ);
	expect_wc(&p.t, p.b.scq, 11, RNICPI_WC_MW_BIND_ERR, NULL);
	pair_renew(&p, NULL);
	post_recv_buf(&p, &p.b, &dst, 12);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 13;
	wr.opcode = RNICPI_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = mw2->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	/* The window is bound to the old b, not this one: refused. */
	expect_wc(&p.t, p.a.scq, 13, RNICPI_WC_REM_INV_REQ_ERR, NULL);
	pair_renew(&p, NULL);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 14;
	wr.opcode = RNICPI_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = mw2->rkey;
	post_one(&p.t, &p.b, &wr, NULL);
	expect_wc(&p.t, p.b.scq, 14, RNICPI_WC_SUCCESS, NULL);
	/* Bound to this b now: the peer's SEND_WITH_INV unbinds it. */
	post_bind(&p, &p.b, 15, mw2, (mw2->rkey & ~0xffu) | 0x45, &win, 0,
		  4096, RNICPI_ACCESS_REMOTE_READ);
	expect_wc(&p.t, p.b.scq, 15, RNICPI_WC_SUCCESS, NULL);
	post_recv_buf(&p, &p.b, &dst, 16);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 17;
	wr.opcode = RNICPI_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = mw2->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 17, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 16, RNICPI_WC_SUCCESS, &wc);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, mw2->rkey);
	post_rdma(&p, &p.a, 18, RNICPI_WR_RDMA_READ, &dst, tbuf_va(&win),
		  mw2->rkey);
	expect_wc(&p.t, p.a.scq, 18, RNICPI_WC_REM_ACCESS_ERR, NULL);
	ck_assert_ok(p.t.ops->dealloc_mw(mw1));
	ck_assert_ok(p.t.ops->dealloc_mw(mw2));
	tbuf_free(&p.t, &win);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_ipv6)
{
	struct rxe_t_conn_opts o = { .sgid_index = 1, .mtu = RNICPI_MTU_1024 };
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;
	struct pair p;

	pair_open(&p, &o);
	tbuf_alloc(&p.t, &src, 100000, 0, all_access);
	tbuf_pattern(&src, 5);
	tbuf_alloc(&p.t, &dst, 100000, 0, all_access);
	post_recv_buf(&p, &p.b, &dst, 9);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 9, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, 100000) == 0);
	assert_guards(&dst);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_rnr)
{
	struct rxe_t_conn_opts o = { .min_rnr_timer = 12 /* 0.64 ms */ };
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;
	struct pair p;

	pair_open(&p, &o);
	tbuf_alloc(&p.t, &src, 5000, 0x42, all_access);
	tbuf_alloc(&p.t, &dst, 5000, 0, all_access);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	post_one(&p.t, &p.a, &wr, &src);
	/* No receive yet: the responder answers RNR NAK, the requester
	 * waits and tries again (rnr_retry 7 = forever). */
	while (rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_RCVD) < 2)
		usleep(100);
	post_recv_buf(&p, &p.b, &dst, 5);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&p.t, p.b.rcq, 5, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, 5000) == 0);
	ck_assert_uint_ge(rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_SENT), 2);

	/* rnr_retry 0: the first RNR NAK ends it. */
	o.rnr_retry = 8;
	pair_renew(&p, &o);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_SEND;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_RNR_RETRY_EXC_ERR, NULL);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

START_TEST(test_rc_many_in_flight)
{
	/* 200 SENDs of 3000 bytes in a row, MTU 1024, ORD-limited READs
	 * in between: completions arrive in order. */
	struct rxe_t_conn_opts o = { .mtu = RNICPI_MTU_1024, .max_send_wr = 512,
				     .max_recv_wr = 512 };
	struct tbuf src, dst, rd;
	struct pair p;
	struct rnicpi_wc wc;
	unsigned int i;

	pair_open(&p, &o);
	tbuf_alloc(&p.t, &src, 3000, 0, all_access);
	tbuf_pattern(&src, 1);
	tbuf_alloc(&p.t, &dst, 200 * 3000, 0, all_access);
	tbuf_alloc(&p.t, &rd, 3000, 0, all_access);
	for (i = 0; i < 200; i++) {
		struct rnicpi_sge sge = { tbuf_va(&dst) + i * 3000, 3000,
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
			wr.wr.rdma.remote_addr = tbuf_va(&src);
			wr.wr.rdma.rkey = src.mr->rkey;
			post_one(&p.t, &p.a, &wr, &rd);
		} else {
			wr.opcode = RNICPI_WR_SEND;
			post_one(&p.t, &p.a, &wr, &src);
		}
	}
	for (i = 0; i < 200; i++)
		expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	for (i = 0; i < 180; i++) {
		expect_wc(&p.t, p.b.rcq, 1000 + i, RNICPI_WC_SUCCESS, &wc);
		ck_assert(memcmp(src.mem + GUARD,
				 dst.mem + GUARD + (size_t)i * 3000, 3000) == 0);
	}
	ck_assert(memcmp(src.mem + GUARD, rd.mem + GUARD, 3000) == 0);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	tbuf_free(&p.t, &rd);
	pair_close(&p);
}
END_TEST

/* IBA 10.3.1.6: RTS -> SQD stops new WQEs, reports SQ_DRAINED once the
 * outstanding ones are done; SQD -> RTS resumes. */
START_TEST(test_rc_sq_drain)
{
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;
	struct rnicpi_qp_attr a;
	struct rnicpi_wc wc;
	struct pair p;

	pair_open(&p, NULL);
	tbuf_alloc(&p.t, &src, 64, 0x12, all_access);
	tbuf_alloc(&p.t, &dst, 64, 0, all_access);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_SQD;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SQ_DRAINED, p.a.qp));
	/* Posted in SQD: held, not sent. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	ck_assert_int_eq(p.t.ops->poll_cq(p.a.scq, 1, &wc), 0);
	ck_assert_uint_eq(dst.mem[GUARD], 0);
	/* SQD -> RTS: it goes. */
	a.qp_state = RNICPI_QPS_RTS;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD, 64) == 0);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

/* Each QP sends from a UDP port of its own (flow entropy, A17.2.3). */
START_TEST(test_per_qp_source_port)
{
	struct pair p;
	struct tbuf src, dst;
	struct rnicpi_send_wr wr;

	pair_open(&p, NULL);
	tbuf_alloc(&p.t, &src, 8, 1, all_access);
	tbuf_alloc(&p.t, &dst, 8, 0, all_access);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = tbuf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	post_one(&p.t, &p.a, &wr, &src);
	expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	/* a sent the WRITE, b the ACK: both have a port, not the same,
	 * and neither is 4791. */
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.b.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0],
			  to_rxe_qp(p.b.qp)->tx_port[0]);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], ROCE_V2_UDP_PORT);
	tbuf_free(&p.t, &src);
	tbuf_free(&p.t, &dst);
	pair_close(&p);
}
END_TEST

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
		    struct tbuf *src, uint64_t wr_id)
{
	struct rnicpi_sge sge = { tbuf_va(src), (uint32_t)src->size,
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
	struct tbuf src, dst;
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

	tbuf_alloc(&t, &src, 256, 0, all_access);
	tbuf_pattern(&src, 9);
	tbuf_alloc(&t, &dst, IB_GRH_BYTES + 256, 0, all_access);
	sge.addr = tbuf_va(&dst);
	sge.length = (uint32_t)dst.size;
	sge.lkey = dst.mr->lkey;
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &sge;
	rw.num_sge = 1;
	rw.wr_id = 50;
	ck_assert_ok(t.ops->post_recv(b.qp, &rw, &rbad));

	/* A wrong Q_Key is dropped and counted; the right one lands. */
	ud_send(&t, &a, ah, b.qp->qp_num, 0x22222222, &src, 1);
	expect_wc(&t, a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	for (rounds = 0; rxe_dev_counter(t.dev, RXE_CNT_QKEY_ERR) == 0; rounds++)
		usleep(100);
	ud_send(&t, &a, ah, b.qp->qp_num, qkey, &src, 2);
	expect_wc(&t, a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	expect_wc(&t, b.rcq, 50, RNICPI_WC_SUCCESS, &wc);
	ck_assert_uint_eq(wc.byte_len, IB_GRH_BYTES + 256);
	ck_assert(wc.wc_flags & RNICPI_WC_GRH);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0x5a5a5a5a);
	ck_assert_uint_eq(wc.src_qp, a.qp->qp_num);
	ck_assert(memcmp(src.mem + GUARD, dst.mem + GUARD + IB_GRH_BYTES,
			 256) == 0);
	if (sgid_index == 0) {
		/* IPv4 header in the GRH's last 20 bytes, from 127.0.0.1. */
		ck_assert_uint_eq(dst.mem[GUARD + 20], 0x45);
		ck_assert_uint_eq(dst.mem[GUARD + 20 + 12], 127);
		ck_assert_uint_eq(dst.mem[GUARD + 20 + 15], 1);
	} else {
		ck_assert_uint_eq(dst.mem[GUARD] >> 4, 6);
		ck_assert_uint_eq(dst.mem[GUARD + 8 + 15], 1);
	}
	assert_guards(&dst);
	ck_assert_uint_eq(rxe_dev_counter(t.dev, RXE_CNT_QKEY_ERR), 1);

	/* UD messages over the MTU are refused at post time. */
	{
		struct tbuf big;
		struct rnicpi_sge bs;
		struct rnicpi_send_wr wr;
		const struct rnicpi_send_wr *bad;

		tbuf_alloc(&t, &big, 8192, 0, all_access);
		bs.addr = tbuf_va(&big);
		bs.length = 8192;
		bs.lkey = big.mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = RNICPI_WR_SEND;
		wr.sg_list = &bs;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b.qp->qp_num;
		ck_assert_errno(t.ops->post_send(a.qp, &wr, &bad), EINVAL);
		tbuf_free(&t, &big);
	}

	ck_assert_ok(t.ops->destroy_ah(ah));
	tbuf_free(&t, &src);
	tbuf_free(&t, &dst);
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

START_TEST(test_srq)
{
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	struct rnicpi_srq_attr sa = { .max_wr = 8, .max_sge = 1, .srq_limit = 2 };
	struct rnicpi_srq *srq;
	struct rnicpi_cq_init_attr ca = { .cqe = 64 };
	struct rnicpi_qp_init_attr qa;
	struct tbuf src, dst;
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

	tbuf_alloc(&t, &src, 64, 0x77, all_access);
	tbuf_alloc(&t, &dst, 4 * 64, 0, all_access);
	for (i = 0; i < 4; i++) {
		struct rnicpi_sge sge = { tbuf_va(&dst) + i * 64, 64,
					  dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, 40 + i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(t.ops->post_srq_recv(srq, &rw, &rbad));
	}
	for (i = 0; i < 3; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = RNICPI_WR_SEND;
		post_one(&t, &a, &wr, &src);
		expect_wc(&t, b.rcq, 40 + i, RNICPI_WC_SUCCESS,
			  NULL);
	}
	/* 4 posted, 3 used: one left, under the limit of 2. */
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SRQ_LIMIT_REACHED, NULL));
	rxe_t_side_destroy(&t, &a);
	rxe_t_side_destroy(&t, &b);
	ck_assert_ok(t.ops->destroy_srq(srq));
	tbuf_free(&t, &src);
	tbuf_free(&t, &dst);
	rxe_t_dev_close(&t);
}
END_TEST

Suite *suite_rxe_loopback(void)
{
	Suite *s = suite_create("rxe-loopback");
	TCase *tc = tcase_create("objects");

	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_add_test(tc, test_device_queries);
	tcase_add_test(tc, test_mr_keys);
	tcase_add_test(tc, test_qp_state_machine);
	suite_add_tcase(s, tc);

	tc = tcase_create("rc");
	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_path_mtus, 0, 5);
	tcase_add_loop_test(tc, test_ipv4_id_assumption, 0, 2);
	tcase_add_test(tc, test_rc_atomics);
	tcase_add_test(tc, test_rc_invalidate);
	tcase_add_test(tc, test_memory_windows);
	tcase_add_test(tc, test_rc_ipv6);
	tcase_add_test(tc, test_rc_rnr);
	tcase_add_test(tc, test_rc_many_in_flight);
	tcase_add_test(tc, test_srq);
	tcase_add_test(tc, test_rc_sq_drain);
	tcase_add_test(tc, test_per_qp_source_port);
	suite_add_tcase(s, tc);

	tc = tcase_create("ud");
	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ud_ipv4);
	tcase_add_test(tc, test_ud_ipv6);
	tcase_add_test(tc, test_gsi);
	suite_add_tcase(s, tc);
	return s;
}
