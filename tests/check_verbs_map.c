/* SPDX-License-Identifier: MIT */
/*
 * vp/verbs/: the translations between libibverbs and RNICPI (statuses,
 * opcodes, events, flags, device and port attributes, names), the async
 * event path with a made-up device, and what the provider does on a host
 * without RDMA devices. None of it needs a device.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/verbs/verbs.h"

START_TEST(test_wc_status_one_to_one)
{
	int s;

	/* IBA 11.6.2 values on both sides, each its own. */
	for (s = IBV_WC_SUCCESS; s <= IBV_WC_GENERAL_ERR; s++)
		ck_assert_int_eq(verbs_wc_status(s), s);
	ck_assert_int_eq(verbs_wc_status(IBV_WC_WR_FLUSH_ERR),
			 RNICPI_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(verbs_wc_status(IBV_WC_REM_ACCESS_ERR),
			 RNICPI_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(verbs_wc_status(IBV_WC_RNR_RETRY_EXC_ERR),
			 RNICPI_WC_RNR_RETRY_EXC_ERR);
	/* Tag matching has no RNICPI status; nor has garbage. */
	ck_assert_int_eq(verbs_wc_status(IBV_WC_TM_ERR), RNICPI_WC_GENERAL_ERR);
	ck_assert_int_eq(verbs_wc_status(IBV_WC_TM_RNDV_INCOMPLETE),
			 RNICPI_WC_GENERAL_ERR);
	ck_assert_int_eq(verbs_wc_status(1000), RNICPI_WC_GENERAL_ERR);
}
END_TEST

START_TEST(test_wc_opcodes)
{
	static const struct {
		int ibv, rnicpi;
	} pairs[] = {
		{ IBV_WC_SEND, RNICPI_WC_SEND },
		{ IBV_WC_RDMA_WRITE, RNICPI_WC_RDMA_WRITE },
		{ IBV_WC_RDMA_READ, RNICPI_WC_RDMA_READ },
		{ IBV_WC_COMP_SWAP, RNICPI_WC_COMP_SWAP },
		{ IBV_WC_FETCH_ADD, RNICPI_WC_FETCH_ADD },
		{ IBV_WC_BIND_MW, RNICPI_WC_BIND_MW },
		{ IBV_WC_LOCAL_INV, RNICPI_WC_LOCAL_INV },
		{ IBV_WC_RECV, RNICPI_WC_RECV },
		{ IBV_WC_RECV_RDMA_WITH_IMM, RNICPI_WC_RECV_RDMA_WITH_IMM },
	};
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(pairs); i++)
		ck_assert_int_eq(verbs_wc_opcode(pairs[i].ibv),
				 pairs[i].rnicpi);
	/* The receive bit survives. */
	ck_assert(verbs_wc_opcode(IBV_WC_RECV_RDMA_WITH_IMM) & RNICPI_WC_RECV);
	/* What hostrdma never asks for has no counterpart. */
	ck_assert_int_eq(verbs_wc_opcode(IBV_WC_TSO), -1);
	ck_assert_int_eq(verbs_wc_opcode(IBV_WC_ATOMIC_WRITE), -1);
	ck_assert_int_eq(verbs_wc_opcode(IBV_WC_TM_RECV), -1);
	ck_assert_int_eq(verbs_wc_opcode(IBV_WC_DRIVER3), -1);
}
END_TEST

START_TEST(test_wr_opcodes)
{
	static const struct {
		int rnicpi, ibv;
	} pairs[] = {
		{ RNICPI_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE },
		{ RNICPI_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
		{ RNICPI_WR_SEND, IBV_WR_SEND },
		{ RNICPI_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
		{ RNICPI_WR_RDMA_READ, IBV_WR_RDMA_READ },
		{ RNICPI_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
		{ RNICPI_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
		{ RNICPI_WR_LOCAL_INV, IBV_WR_LOCAL_INV },
		{ RNICPI_WR_BIND_MW, IBV_WR_BIND_MW },
		{ RNICPI_WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
	};
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(pairs); i++)
		ck_assert_int_eq(verbs_wr_opcode(pairs[i].rnicpi),
				 pairs[i].ibv);
	ck_assert_int_eq(verbs_wr_opcode(RNICPI_WR_SEND_WITH_INV + 1), -1);
	ck_assert_int_eq(verbs_wr_opcode(-1), -1);
}
END_TEST

START_TEST(test_events_all_mapped)
{
	bool seen[RNICPI_EVENT_GID_CHANGE + 1] = { false };
	int t, r;

	for (t = IBV_EVENT_CQ_ERR; t <= IBV_EVENT_GID_CHANGE; t++) {
		r = verbs_event_type(t);
		ck_assert_msg(r >= 0 && r <= RNICPI_EVENT_GID_CHANGE,
			      "%s maps to %d", ibv_event_type_str(t), r);
		ck_assert_msg(!seen[r], "%s maps to a taken event",
			      ibv_event_type_str(t));
		seen[r] = true;
	}
	/* Every RNICPI event comes from one ibverbs event. */
	for (r = 0; r <= RNICPI_EVENT_GID_CHANGE; r++)
		ck_assert_msg(seen[r], "RNICPI event %d never produced", r);
	ck_assert_int_eq(verbs_event_type(IBV_EVENT_PORT_ACTIVE),
			 RNICPI_EVENT_PORT_ACTIVE);
	ck_assert_int_eq(verbs_event_type(IBV_EVENT_PORT_ERR),
			 RNICPI_EVENT_PORT_ERR);
	ck_assert_int_eq(verbs_event_type(IBV_EVENT_QP_LAST_WQE_REACHED),
			 RNICPI_EVENT_QP_LAST_WQE_REACHED);
	ck_assert_int_eq(verbs_event_type(IBV_EVENT_WQ_FATAL), -1);
	ck_assert_int_eq(verbs_event_type(500), -1);
}
END_TEST

START_TEST(test_transport_and_flags)
{
	ck_assert_int_eq(verbs_transport(IBV_NODE_RNIC, IBV_LINK_LAYER_ETHERNET),
			 RNICPI_TRANSPORT_IWARP);
	ck_assert_int_eq(verbs_transport(IBV_NODE_CA, IBV_LINK_LAYER_ETHERNET),
			 RNICPI_TRANSPORT_ROCE);
	ck_assert_int_eq(verbs_transport(IBV_NODE_CA, IBV_LINK_LAYER_INFINIBAND),
			 RNICPI_TRANSPORT_IB);
	ck_assert_int_eq(verbs_transport(IBV_NODE_CA, IBV_LINK_LAYER_UNSPECIFIED),
			 RNICPI_TRANSPORT_IB);
	ck_assert_int_eq(verbs_transport(IBV_NODE_SWITCH, IBV_LINK_LAYER_INFINIBAND),
			 0);
	ck_assert_int_eq(verbs_transport(IBV_NODE_USNIC_UDP, IBV_LINK_LAYER_ETHERNET),
			 0);

	ck_assert_uint_eq(verbs_access(RNICPI_ACCESS_LOCAL_WRITE |
				       RNICPI_ACCESS_REMOTE_WRITE |
				       RNICPI_ACCESS_REMOTE_READ |
				       RNICPI_ACCESS_REMOTE_ATOMIC |
				       RNICPI_ACCESS_MW_BIND),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	ck_assert_uint_eq(verbs_access(RNICPI_ACCESS_REMOTE_READ),
			  IBV_ACCESS_REMOTE_READ);
	ck_assert_uint_eq(verbs_access(RNICPI_ACCESS_ZERO_BASED), 0);

	ck_assert_uint_eq(verbs_send_flags(RNICPI_SEND_SIGNALED |
					   RNICPI_SEND_SOLICITED |
					   RNICPI_SEND_INLINE),
			  IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				  IBV_SEND_INLINE);
	ck_assert_uint_eq(verbs_send_flags(RNICPI_SEND_FENCE), IBV_SEND_FENCE);
	ck_assert_uint_eq(verbs_send_flags(RNICPI_SEND_LOCAL_FENCE),
			  IBV_SEND_FENCE);
	ck_assert_uint_eq(verbs_send_flags(RNICPI_SEND_MORE), 0);

	ck_assert_int_eq(verbs_port_state(IBV_PORT_ACTIVE), RNICPI_PORT_ACTIVE);
	ck_assert_int_eq(verbs_port_state(IBV_PORT_DOWN), RNICPI_PORT_DOWN);
	ck_assert_int_eq(verbs_port_state(IBV_PORT_ARMED), RNICPI_PORT_ARMED);
	ck_assert_int_eq(verbs_port_state(IBV_PORT_ACTIVE_DEFER),
			 RNICPI_PORT_ACTIVE);
	ck_assert_int_eq(verbs_mtu(IBV_MTU_1024), RNICPI_MTU_1024);
	ck_assert_int_eq(verbs_mtu(IBV_MTU_4096), RNICPI_MTU_4096);
	ck_assert_int_eq(verbs_mtu(0), 0);
	ck_assert_int_eq(verbs_mtu(9), 0);
}
END_TEST

static struct ibv_device_attr sample_attr(void)
{
	struct ibv_device_attr a;

	memset(&a, 0, sizeof(a));
	g_strlcpy(a.fw_ver, "16.35.2000", sizeof(a.fw_ver));
	a.node_guid = 0x1122334455667788ull;
	a.vendor_id = 0x02c9;
	a.vendor_part_id = 4119;
	a.max_mr_size = 1ull << 40;
	a.page_size_cap = 0xfffff000;
	a.max_qp = 262144;
	a.max_qp_wr = 32768;
	a.max_sge = 30;
	a.max_cq = 16777216;
	a.max_cqe = 4194303;
	a.max_mr = 16777216;
	a.max_pd = 16777216;
	a.max_qp_rd_atom = 16;
	a.max_qp_init_rd_atom = 16;
	a.max_srq = 8388608;
	a.max_srq_wr = 32767;
	a.max_srq_sge = 31;
	a.atomic_cap = IBV_ATOMIC_HCA;
	a.max_mw = 16777216;
	a.phys_port_cnt = 2;
	a.device_cap_flags = IBV_DEVICE_MEM_WINDOW |
			     IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			     IBV_DEVICE_MEM_MGT_EXTENSIONS;
	return a;
}

START_TEST(test_device_attr)
{
	struct ibv_device_attr a = sample_attr();
	struct rnicpi_device_attr r;

	verbs_fill_device_attr(&a, RNICPI_TRANSPORT_ROCE, &r);
	ck_assert_int_eq(r.transport, RNICPI_TRANSPORT_ROCE);
	ck_assert_str_eq(r.fw_ver, "16.35.2000");
	ck_assert_uint_eq(r.node_guid, 0x1122334455667788ull);
	ck_assert_uint_eq(r.vendor_id, 0x02c9);
	ck_assert_uint_eq(r.max_mr_size, 1ull << 40);
	ck_assert_uint_eq(r.max_qp, 262144);
	ck_assert_uint_eq(r.max_qp_wr, 32768);
	ck_assert_uint_eq(r.max_sge, 30);
	/* No separate READ SGE limit: the send one. */
	ck_assert_uint_eq(r.max_sge_rd, 30);
	ck_assert_uint_eq(r.max_cqe, 4194303);
	ck_assert_uint_eq(r.max_srq_sge, 31);
	ck_assert_uint_eq(r.max_qp_rd_atom, 16);
	ck_assert_uint_eq(r.max_private_data, 56);
	ck_assert_int_eq(r.atomic_cap, RNICPI_ATOMIC_HCA);
	ck_assert_uint_eq(r.phys_port_cnt, 2);
	ck_assert_uint_eq(r.caps,
			  RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_UD |
				  RNICPI_DEV_CAP_SRQ | RNICPI_DEV_CAP_ATOMIC |
				  RNICPI_DEV_CAP_IMM_DATA |
				  RNICPI_DEV_CAP_MW_TYPE_1 |
				  RNICPI_DEV_CAP_MW_TYPE_2 |
				  RNICPI_DEV_CAP_SEND_INV |
				  RNICPI_DEV_CAP_LOCAL_INV |
				  RNICPI_DEV_CAP_NATIVE_CM |
				  RNICPI_DEV_CAP_NATIVE_SIDR |
				  RNICPI_DEV_CAP_KERNEL_PINS);

	/* The kernel's siw: iWARP, no atomics, no SRQ limit set here, no
	 * MWs; what librdmacm carries in an MPA Request (8-bit length). */
	a.atomic_cap = IBV_ATOMIC_NONE;
	a.max_srq = 0;
	a.max_sge_rd = 1;
	a.device_cap_flags = IBV_DEVICE_MEM_MGT_EXTENSIONS;
	verbs_fill_device_attr(&a, RNICPI_TRANSPORT_IWARP, &r);
	ck_assert_uint_eq(r.max_sge_rd, 1);
	ck_assert_uint_eq(r.max_private_data, 255);
	ck_assert_int_eq(r.atomic_cap, RNICPI_ATOMIC_NONE);
	ck_assert_uint_eq(r.caps,
			  RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_SEND_INV |
				  RNICPI_DEV_CAP_LOCAL_INV |
				  RNICPI_DEV_CAP_NATIVE_CM |
				  RNICPI_DEV_CAP_KERNEL_PINS);

	/* SRQs that resize (IBV_DEVICE_SRQ_RESIZE: the kernel's rxe), on a
	 * device with SRQs. */
	a = sample_attr();
	a.device_cap_flags |= IBV_DEVICE_SRQ_RESIZE;
	verbs_fill_device_attr(&a, RNICPI_TRANSPORT_ROCE, &r);
	ck_assert(r.caps & RNICPI_DEV_CAP_RESIZE_SRQ);
	a.max_srq = 0;
	verbs_fill_device_attr(&a, RNICPI_TRANSPORT_ROCE, &r);
	ck_assert(!(r.caps & (RNICPI_DEV_CAP_RESIZE_SRQ | RNICPI_DEV_CAP_SRQ)));
}
END_TEST

START_TEST(test_port_attr_and_names)
{
	struct ibv_port_attr p;
	struct rnicpi_port_attr r;
	char name[RNICPI_DEVNAME_MAX];

	memset(&p, 0, sizeof(p));
	p.state = IBV_PORT_ACTIVE;
	p.max_mtu = IBV_MTU_4096;
	p.active_mtu = IBV_MTU_1024;
	p.link_layer = IBV_LINK_LAYER_ETHERNET;
	p.gid_tbl_len = 256;
	p.pkey_tbl_len = 1;
	p.max_msg_sz = 1u << 30;
	p.active_width = 2;   /* 4x */
	p.active_speed = 32;  /* 25 Gb/s per lane (EDR) */
	verbs_fill_port_attr(&p, &r);
	ck_assert_int_eq(r.state, RNICPI_PORT_ACTIVE);
	ck_assert_int_eq(r.max_mtu, RNICPI_MTU_4096);
	ck_assert_int_eq(r.active_mtu, RNICPI_MTU_1024);
	ck_assert_int_eq(r.link_layer, RNICPI_LINK_LAYER_ETHERNET);
	ck_assert_uint_eq(r.gid_tbl_len, 256);
	ck_assert_uint_eq(r.max_msg_sz, 1u << 30);
	ck_assert_uint_eq(r.speed_mbps, 100000);

	p.link_layer = IBV_LINK_LAYER_INFINIBAND;
	p.lid = 7;
	p.state = IBV_PORT_DOWN;
	p.active_width = 1;
	p.active_speed = 1; /* 1x SDR */
	verbs_fill_port_attr(&p, &r);
	ck_assert_int_eq(r.link_layer, RNICPI_LINK_LAYER_INFINIBAND);
	ck_assert_int_eq(r.state, RNICPI_PORT_DOWN);
	ck_assert_uint_eq(r.lid, 7);
	ck_assert_uint_eq(r.speed_mbps, 2500);
	ck_assert_uint_eq(verbs_port_speed_mbps(3, 32), 0);

	verbs_device_name("siw0", 1, 1, name, sizeof(name));
	ck_assert_str_eq(name, "siw0");
	verbs_device_name("mlx5_0", 1, 2, name, sizeof(name));
	ck_assert_str_eq(name, "mlx5_0:1");
	verbs_device_name("mlx5_0", 2, 2, name, sizeof(name));
	ck_assert_str_eq(name, "mlx5_0:2");
}
END_TEST

START_TEST(test_send_wr_translation)
{
	const struct rnicpi_sge sg[2] = { { 0x1000, 64, 0x11 },
					  { 0x2000, 32, 0x22 } };
	struct rnicpi_send_wr wr;
	struct ibv_send_wr iwr;
	struct ibv_sge isge[2];

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 77;
	wr.sg_list = sg;
	wr.num_sge = 2;
	wr.opcode = RNICPI_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = RNICPI_SEND_SIGNALED | RNICPI_SEND_FENCE;
	wr.ex.imm_data = 0x01020304;
	wr.wr.rdma.remote_addr = 0xabcdef00;
	wr.wr.rdma.rkey = 0x5566;
	ck_assert_ok(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2));
	ck_assert_uint_eq(iwr.wr_id, 77);
	ck_assert_int_eq(iwr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	ck_assert_uint_eq(iwr.send_flags, IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	/* Immediate data travels big-endian in ibverbs. */
	ck_assert_uint_eq(iwr.imm_data, htonl(0x01020304));
	ck_assert_uint_eq(iwr.wr.rdma.remote_addr, 0xabcdef00);
	ck_assert_uint_eq(iwr.wr.rdma.rkey, 0x5566);
	ck_assert_int_eq(iwr.num_sge, 2);
	ck_assert_ptr_eq(iwr.sg_list, isge);
	ck_assert_uint_eq(isge[1].addr, 0x2000);
	ck_assert_uint_eq(isge[1].length, 32);
	ck_assert_uint_eq(isge[1].lkey, 0x22);
	ck_assert_ptr_null(iwr.next);

	wr.opcode = RNICPI_WR_ATOMIC_CMP_AND_SWP;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = 0x8000;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 9;
	wr.wr.atomic.rkey = 0x77;
	ck_assert_ok(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2));
	ck_assert_int_eq(iwr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	ck_assert_uint_eq(iwr.wr.atomic.remote_addr, 0x8000);
	ck_assert_uint_eq(iwr.wr.atomic.compare_add, 5);
	ck_assert_uint_eq(iwr.wr.atomic.swap, 9);
	ck_assert_uint_eq(iwr.wr.atomic.rkey, 0x77);

	wr.opcode = RNICPI_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = 0x4242;
	wr.send_flags = RNICPI_SEND_INLINE | RNICPI_SEND_SOLICITED;
	ck_assert_ok(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2));
	ck_assert_int_eq(iwr.opcode, IBV_WR_SEND_WITH_INV);
	ck_assert_uint_eq(iwr.invalidate_rkey, 0x4242);
	ck_assert_uint_eq(iwr.send_flags, IBV_SEND_INLINE | IBV_SEND_SOLICITED);

	/* A zero-length segment is left out (the kernel's siw oopses on
	 * one); all of them zero: no segment. */
	{
		const struct rnicpi_sge z[2] = { { 0x3000, 0, 0x33 },
						 { 0x4000, 1, 0x44 } };

		wr.opcode = RNICPI_WR_RDMA_WRITE;
		wr.sg_list = z;
		wr.num_sge = 2;
		ck_assert_ok(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2));
		ck_assert_int_eq(iwr.num_sge, 1);
		ck_assert_uint_eq(isge[0].addr, 0x4000);
		ck_assert_uint_eq(isge[0].length, 1);
		ck_assert_uint_eq(isge[0].lkey, 0x44);
		wr.num_sge = 1;
		ck_assert_ok(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2));
		ck_assert_int_eq(iwr.num_sge, 0);
		ck_assert_ptr_null(iwr.sg_list);
		wr.sg_list = sg;
	}

	/* Too many SGEs, unknown opcodes, windows (not yet). */
	wr.num_sge = 2;
	ck_assert_errno(verbs_send_wr_to_ibv(&wr, &iwr, isge, 1), EINVAL);
	wr.opcode = 99;
	ck_assert_errno(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2), EINVAL);
	wr.opcode = RNICPI_WR_BIND_MW;
	wr.num_sge = 0;
	ck_assert_errno(verbs_send_wr_to_ibv(&wr, &iwr, isge, 2), EOPNOTSUPP);
}
END_TEST

/* An address handle's vector: every field where ibverbs has it, the
 * ibverbs port put in, the flow label cut to its 20 bits. */
START_TEST(test_ah_attr_translation)
{
	struct rnicpi_ah_attr a;
	struct ibv_ah_attr ia;

	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 16; i++)
		a.dgid.raw[i] = (uint8_t)(0xa0 + i);
	a.flow_label = 0xfff12345;
	a.sgid_index = 3;
	a.hop_limit = 64;
	a.traffic_class = 0x28;
	a.sl = 5;
	a.dlid = 0x1234;
	a.port_num = 1;
	a.is_global = 1;
	memset(&ia, 0x5a, sizeof(ia));
	verbs_ah_attr_to_ibv(&a, 2, &ia);
	ck_assert_int_eq(ia.is_global, 1);
	ck_assert_mem_eq(ia.grh.dgid.raw, a.dgid.raw, 16);
	ck_assert_uint_eq(ia.grh.flow_label, 0x12345);
	ck_assert_uint_eq(ia.grh.sgid_index, 3);
	ck_assert_uint_eq(ia.grh.hop_limit, 64);
	ck_assert_uint_eq(ia.grh.traffic_class, 0x28);
	ck_assert_uint_eq(ia.sl, 5);
	ck_assert_uint_eq(ia.dlid, 0x1234);
	ck_assert_uint_eq(ia.port_num, 2);
	ck_assert_uint_eq(ia.src_path_bits, 0);
	ck_assert_uint_eq(ia.static_rate, 0);
	a.is_global = 0;
	verbs_ah_attr_to_ibv(&a, 1, &ia);
	ck_assert_int_eq(ia.is_global, 0);
	ck_assert_uint_eq(ia.port_num, 1);
}
END_TEST

START_TEST(test_wc_translation)
{
	struct ibv_wc iwc;
	struct rnicpi_wc wc;

	memset(&iwc, 0, sizeof(iwc));
	iwc.wr_id = 5;
	iwc.status = IBV_WC_SUCCESS;
	iwc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	iwc.byte_len = 4096;
	iwc.qp_num = 0x11;
	iwc.imm_data = htonl(0xcafe);
	iwc.wc_flags = IBV_WC_WITH_IMM;
	verbs_wc_from_ibv(&iwc, &wc);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 4096);
	ck_assert_uint_eq(wc.qp_num, 0x11);
	ck_assert_uint_eq(wc.wc_flags, RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xcafe);

	iwc.opcode = IBV_WC_RECV;
	iwc.wc_flags = IBV_WC_WITH_INV | IBV_WC_GRH;
	iwc.invalidated_rkey = 0x99;
	verbs_wc_from_ibv(&iwc, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV);
	ck_assert_uint_eq(wc.wc_flags, RNICPI_WC_WITH_INV | RNICPI_WC_GRH);
	ck_assert_uint_eq(wc.invalidated_rkey, 0x99);

	/* An error: status and vendor error, no flags. */
	iwc.status = IBV_WC_REM_ACCESS_ERR;
	iwc.vendor_err = 0x32;
	verbs_wc_from_ibv(&iwc, &wc);
	ck_assert_int_eq(wc.status, RNICPI_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(wc.vendor_err, 0x32);
	ck_assert_uint_eq(wc.wc_flags, 0);
}
END_TEST

START_TEST(test_qp_states_and_attrs)
{
	struct rnicpi_qp_attr a;
	struct ibv_qp_attr ia;

	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_RESET), IBV_QPS_RESET);
	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_RTS), IBV_QPS_RTS);
	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_ERR), IBV_QPS_ERR);
	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_IDLE), IBV_QPS_INIT);
	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_CLOSING), IBV_QPS_SQD);
	ck_assert_int_eq(verbs_qp_state(RNICPI_QPS_TERMINATE), IBV_QPS_ERR);
	ck_assert_int_eq(verbs_qp_state(7), -1);
	ck_assert_int_eq(verbs_qp_state_from_ibv(IBV_QPS_INIT,
						 RNICPI_TRANSPORT_IWARP),
			 RNICPI_QPS_IDLE);
	ck_assert_int_eq(verbs_qp_state_from_ibv(IBV_QPS_INIT,
						 RNICPI_TRANSPORT_ROCE),
			 RNICPI_QPS_INIT);
	ck_assert_int_eq(verbs_qp_state_from_ibv(IBV_QPS_RTS,
						 RNICPI_TRANSPORT_IWARP),
			 RNICPI_QPS_RTS);

	ck_assert_uint_eq(verbs_qp_mask(RNICPI_QP_STATE | RNICPI_QP_AV |
					RNICPI_QP_DEST_QPN |
					RNICPI_QP_MAX_DEST_RD_ATOMIC),
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN |
				  IBV_QP_MAX_DEST_RD_ATOMIC);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = RNICPI_MTU_1024;
	a.dest_qp_num = 0x123;
	a.rq_psn = 77;
	a.max_dest_rd_atomic = 4;
	a.qp_access_flags = RNICPI_ACCESS_REMOTE_READ;
	a.ah_attr.is_global = 1;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.dgid.raw[15] = 9;
	ck_assert_ok(verbs_qp_attr_to_ibv(&a, RNICPI_QP_STATE, &ia));
	ck_assert_int_eq(ia.qp_state, IBV_QPS_RTR);
	ck_assert_int_eq(ia.path_mtu, IBV_MTU_1024);
	ck_assert_uint_eq(ia.dest_qp_num, 0x123);
	ck_assert_uint_eq(ia.rq_psn, 77);
	ck_assert_uint_eq(ia.max_dest_rd_atomic, 4);
	ck_assert_uint_eq(ia.qp_access_flags, IBV_ACCESS_REMOTE_READ);
	ck_assert_uint_eq(ia.ah_attr.is_global, 1);
	ck_assert_uint_eq(ia.ah_attr.grh.hop_limit, 64);
	ck_assert_uint_eq(ia.ah_attr.grh.dgid.raw[15], 9);
	a.qp_state = 12;
	ck_assert_errno(verbs_qp_attr_to_ibv(&a, RNICPI_QP_STATE, &ia), EINVAL);
}
END_TEST

START_TEST(test_cm_events)
{
	static const struct {
		enum rdma_cm_event_type t;
		int type, status;
	} want[] = {
		{ RDMA_CM_EVENT_ADDR_RESOLVED, VERBS_CM_STEP, 0 },
		{ RDMA_CM_EVENT_ADDR_ERROR, RNICPI_CONN_ERROR, -EHOSTUNREACH },
		{ RDMA_CM_EVENT_ROUTE_RESOLVED, VERBS_CM_STEP, 0 },
		{ RDMA_CM_EVENT_ROUTE_ERROR, RNICPI_CONN_ERROR, -ENETUNREACH },
		{ RDMA_CM_EVENT_CONNECT_REQUEST, RNICPI_CONN_REQUEST, 0 },
		{ RDMA_CM_EVENT_CONNECT_RESPONSE, VERBS_CM_STEP, 0 },
		{ RDMA_CM_EVENT_CONNECT_ERROR, RNICPI_CONN_ERROR, -ECONNRESET },
		{ RDMA_CM_EVENT_UNREACHABLE, RNICPI_CONN_ERROR, -ETIMEDOUT },
		{ RDMA_CM_EVENT_REJECTED, RNICPI_CONN_REJECTED, -ECONNREFUSED },
		{ RDMA_CM_EVENT_ESTABLISHED, RNICPI_CONN_ESTABLISHED, 0 },
		{ RDMA_CM_EVENT_DISCONNECTED, RNICPI_CONN_DISCONNECTED, 0 },
		{ RDMA_CM_EVENT_DEVICE_REMOVAL, RNICPI_CONN_DISCONNECTED,
		  -ENODEV },
		{ RDMA_CM_EVENT_MULTICAST_JOIN, VERBS_CM_IGNORE, 0 },
		{ RDMA_CM_EVENT_MULTICAST_ERROR, VERBS_CM_IGNORE, 0 },
		{ RDMA_CM_EVENT_ADDR_CHANGE, VERBS_CM_IGNORE, 0 },
		{ RDMA_CM_EVENT_TIMEWAIT_EXIT, VERBS_CM_IGNORE, 0 },
	};
	struct verbs_cm_map m;
	size_t i;

	/* Every rdma_cm event has its line above. */
	ck_assert_uint_eq(G_N_ELEMENTS(want), RDMA_CM_EVENT_TIMEWAIT_EXIT + 1);
	for (i = 0; i < G_N_ELEMENTS(want); i++) {
		m = verbs_cm_event(want[i].t);
		ck_assert_msg(m.type == want[i].type &&
				      m.status == want[i].status,
			      "%s: got %d/%d", rdma_event_str(want[i].t),
			      m.type, m.status);
	}
	m = verbs_cm_event(200);
	ck_assert_int_eq(m.type, VERBS_CM_IGNORE);
}
END_TEST

/* A UD service request's events (RDMA_PS_UDP id): the kernel's rdma_cm
 * reports a SIDR_REP "valid" as ESTABLISHED, another SIDR_REP status as
 * UNREACHABLE with that status (positive), no SIDR_REP as UNREACHABLE
 * with -ETIMEDOUT. */
START_TEST(test_sidr_events)
{
	static const struct {
		enum rdma_cm_event_type t;
		int ev_status;
		int type, status;
		uint8_t sidr_status;
	} want[] = {
		{ RDMA_CM_EVENT_ADDR_RESOLVED, 0, VERBS_CM_STEP, 0, 0 },
		{ RDMA_CM_EVENT_ROUTE_RESOLVED, 0, VERBS_CM_STEP, 0, 0 },
		{ RDMA_CM_EVENT_ESTABLISHED, 0, RNICPI_CONN_SIDR_REPLY, 0, 0 },
		{ RDMA_CM_EVENT_UNREACHABLE, 1, RNICPI_CONN_SIDR_REPLY, 0, 1 },
		{ RDMA_CM_EVENT_UNREACHABLE, 2, RNICPI_CONN_SIDR_REPLY, 0, 2 },
		{ RDMA_CM_EVENT_UNREACHABLE, 4, RNICPI_CONN_SIDR_REPLY, 0, 4 },
		{ RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, RNICPI_CONN_SIDR_REPLY,
		  -ETIMEDOUT, 0 },
		{ RDMA_CM_EVENT_UNREACHABLE, 0, RNICPI_CONN_SIDR_REPLY,
		  -ETIMEDOUT, 0 },
		{ RDMA_CM_EVENT_UNREACHABLE, 300, RNICPI_CONN_SIDR_REPLY,
		  -ETIMEDOUT, 0 },
		{ RDMA_CM_EVENT_ADDR_ERROR, -110, RNICPI_CONN_SIDR_REPLY,
		  -EHOSTUNREACH, 0 },
		{ RDMA_CM_EVENT_ROUTE_ERROR, -110, RNICPI_CONN_SIDR_REPLY,
		  -ENETUNREACH, 0 },
		{ RDMA_CM_EVENT_REJECTED, 28, RNICPI_CONN_SIDR_REPLY, 0, 2 },
		{ RDMA_CM_EVENT_DEVICE_REMOVAL, 0, RNICPI_CONN_SIDR_REPLY,
		  -ENODEV, 0 },
		{ RDMA_CM_EVENT_ADDR_CHANGE, 0, VERBS_CM_IGNORE, 0, 0 },
		{ RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, VERBS_CM_IGNORE, 0, 0 },
		{ RDMA_CM_EVENT_DISCONNECTED, 0, VERBS_CM_IGNORE, 0, 0 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
		struct verbs_sidr_map m =
			verbs_sidr_event(want[i].t, want[i].ev_status);

		ck_assert_msg(m.type == want[i].type &&
				      m.status == want[i].status &&
				      m.sidr_status == want[i].sidr_status,
			      "%s (%d): got %d/%d/%u", rdma_event_str(want[i].t),
			      want[i].ev_status, m.type, m.status,
			      m.sidr_status);
	}
}
END_TEST

/* rdma_cm's private data: the IB CM's REQ/REP/REJ less rdma_cm's header
 * on IB and RoCE, librdmacm's 8-bit length on iWARP. */
START_TEST(test_cm_pdata_max)
{
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_ROCE,
					     VERBS_PDATA_CONNECT), 56);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_IB,
					     VERBS_PDATA_ACCEPT), 196);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_ROCE,
					     VERBS_PDATA_REJECT), 148);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_IWARP,
					     VERBS_PDATA_CONNECT), 255);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_IWARP,
					     VERBS_PDATA_REJECT), 255);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_IWARP, 7), 0);
	ck_assert_uint_eq(verbs_cm_pdata_max(RNICPI_TRANSPORT_ROCE, -1), 0);
}
END_TEST

/* Async events of a made-up device on ibverbs port 2. */
static struct rnicpi_async_event got[8];
static int n_got;

static void record_async(struct rnicpi_device *dev,
			 const struct rnicpi_async_event *ev)
{
	(void)dev;
	if (n_got < (int)G_N_ELEMENTS(got))
		got[n_got] = *ev;
	n_got++;
}

START_TEST(test_async_events_reach_core)
{
	static const struct rnicpi_core_ops core = {
		.size = sizeof(core),
		.async_event = record_async,
	};
	struct verbs_dev vd;
	struct ibv_async_event ev;

	memset(&vd, 0, sizeof(vd));
	g_strlcpy(vd.rdev.name, "mlx5_0:2", sizeof(vd.rdev.name));
	vd.rdev.core = &core;
	vd.port = 2;
	n_got = 0;

	memset(&ev, 0, sizeof(ev));
	ev.event_type = IBV_EVENT_PORT_ERR;
	ev.element.port_num = 2;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 1);
	ck_assert_int_eq(got[0].type, RNICPI_EVENT_PORT_ERR);
	/* RNICPI devices have one port: the ibverbs port is 1 there. */
	ck_assert_uint_eq(got[0].element.port_num, 1);

	/* The other port's event belongs to the other device. */
	ev.event_type = IBV_EVENT_PORT_ACTIVE;
	ev.element.port_num = 1;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 1);
	ev.element.port_num = 2;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 2);
	ck_assert_int_eq(got[1].type, RNICPI_EVENT_PORT_ACTIVE);

	ev.event_type = IBV_EVENT_GID_CHANGE;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 3);
	ck_assert_int_eq(got[2].type, RNICPI_EVENT_GID_CHANGE);

	ev.event_type = IBV_EVENT_DEVICE_FATAL;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 4);
	ck_assert_int_eq(got[3].type, RNICPI_EVENT_DEVICE_FATAL);

	/* A QP event for a QP this provider did not make: nothing. */
	ev.event_type = IBV_EVENT_QP_FATAL;
	ev.element.qp = NULL;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 4);

	/* WQ_FATAL has no RNICPI counterpart: nothing goes up. */
	ev.event_type = IBV_EVENT_WQ_FATAL;
	verbs_handle_async(&vd, &ev);
	ck_assert_int_eq(n_got, 4);
}
END_TEST

/* On a host without RDMA devices (CI): no device on any interface, and
 * one log line saying so, however often the core asks. */
START_TEST(test_no_device_one_line)
{
	struct rnicpi_netdev lo = { .ifindex = 1, .ifname = "lo",
				    .flags = RNICPI_NETDEV_UP |
					     RNICPI_NETDEV_RUNNING |
					     RNICPI_NETDEV_LOOPBACK };
	struct tu_log_capture *cap = tu_log_capture_begin("hostrdma-verbs");
	struct ibv_device **list;
	char name[RNICPI_DEVNAME_MAX];
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (n > 0) {
		/* A host with devices: the line must not appear. */
		(void)verbs_provider.netdev_supported(&lo);
		ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
					       "no RDMA device"), 0);
		tu_log_capture_end(cap);
		return;
	}
	ck_assert_errno(verbs_provider.netdev_supported(&lo), ENODEV);
	ck_assert_errno(verbs_provider.device_name(&lo, name, sizeof(name)),
			ENODEV);
	ck_assert_errno(verbs_provider.netdev_supported(&lo), ENODEV);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK, "no RDMA device"),
			  1);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK, NULL), 1);
	tu_log_capture_end(cap);
}
END_TEST

START_TEST(test_provider_descriptor)
{
	ck_assert_uint_eq(verbs_provider.abi_version, RNICPI_ABI_VERSION);
	ck_assert_uint_eq(verbs_provider.size, sizeof(struct rnicpi_provider));
	ck_assert_str_eq(verbs_provider.name, "verbs");
	ck_assert_ptr_nonnull(verbs_provider.device_name);
	ck_assert_ptr_nonnull(verbs_provider.device_create);
}
END_TEST

Suite *suite_verbs_map(void)
{
	Suite *s = suite_create("verbs-map");
	TCase *tc = tcase_create("tables");

	tcase_add_test(tc, test_wc_status_one_to_one);
	tcase_add_test(tc, test_wc_opcodes);
	tcase_add_test(tc, test_wr_opcodes);
	tcase_add_test(tc, test_events_all_mapped);
	tcase_add_test(tc, test_transport_and_flags);
	tcase_add_test(tc, test_device_attr);
	tcase_add_test(tc, test_port_attr_and_names);
	tcase_add_test(tc, test_send_wr_translation);
	tcase_add_test(tc, test_wc_translation);
	tcase_add_test(tc, test_ah_attr_translation);
	tcase_add_test(tc, test_qp_states_and_attrs);
	tcase_add_test(tc, test_cm_events);
	tcase_add_test(tc, test_sidr_events);
	tcase_add_test(tc, test_cm_pdata_max);
	suite_add_tcase(s, tc);

	tc = tcase_create("provider");
	tcase_add_test(tc, test_async_events_reach_core);
	tcase_add_test(tc, test_no_device_one_line);
	tcase_add_test(tc, test_provider_descriptor);
	suite_add_tcase(s, tc);
	return s;
}
