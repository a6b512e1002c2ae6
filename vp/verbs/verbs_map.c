/* SPDX-License-Identifier: MIT */
/*
 * verbs_map.c - libibverbs' values in RNICPI's terms and back. Tables
 * indexed by the source value, so that a value missing from one shows up
 * as a hole the unit tests find (tests/check_verbs_map.c), not as a
 * default a switch statement quietly took.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vp/verbs/verbs.h"

#define N_ELEM(a) (sizeof(a) / sizeof((a)[0]))

enum rnicpi_transport verbs_transport(enum ibv_node_type node,
				      uint8_t link_layer)
{
	switch (node) {
	case IBV_NODE_RNIC:
		return RNICPI_TRANSPORT_IWARP;
	case IBV_NODE_CA:
		if (link_layer == IBV_LINK_LAYER_ETHERNET)
			return RNICPI_TRANSPORT_ROCE;
		/* UNSPECIFIED: kernels before link_layer reporting, IB. */
		return RNICPI_TRANSPORT_IB;
	default:
		return 0;
	}
}

const char *verbs_transport_name(enum rnicpi_transport t)
{
	switch (t) {
	case RNICPI_TRANSPORT_IWARP:
		return "iWARP";
	case RNICPI_TRANSPORT_ROCE:
		return "RoCE";
	case RNICPI_TRANSPORT_IB:
		return "InfiniBand";
	}
	return "unknown";
}

static const enum rnicpi_wc_status wc_status_map[] = {
	[IBV_WC_SUCCESS] = RNICPI_WC_SUCCESS,
	[IBV_WC_LOC_LEN_ERR] = RNICPI_WC_LOC_LEN_ERR,
	[IBV_WC_LOC_QP_OP_ERR] = RNICPI_WC_LOC_QP_OP_ERR,
	[IBV_WC_LOC_EEC_OP_ERR] = RNICPI_WC_LOC_EEC_OP_ERR,
	[IBV_WC_LOC_PROT_ERR] = RNICPI_WC_LOC_PROT_ERR,
	[IBV_WC_WR_FLUSH_ERR] = RNICPI_WC_WR_FLUSH_ERR,
	[IBV_WC_MW_BIND_ERR] = RNICPI_WC_MW_BIND_ERR,
	[IBV_WC_BAD_RESP_ERR] = RNICPI_WC_BAD_RESP_ERR,
	[IBV_WC_LOC_ACCESS_ERR] = RNICPI_WC_LOC_ACCESS_ERR,
	[IBV_WC_REM_INV_REQ_ERR] = RNICPI_WC_REM_INV_REQ_ERR,
	[IBV_WC_REM_ACCESS_ERR] = RNICPI_WC_REM_ACCESS_ERR,
	[IBV_WC_REM_OP_ERR] = RNICPI_WC_REM_OP_ERR,
	[IBV_WC_RETRY_EXC_ERR] = RNICPI_WC_RETRY_EXC_ERR,
	[IBV_WC_RNR_RETRY_EXC_ERR] = RNICPI_WC_RNR_RETRY_EXC_ERR,
	[IBV_WC_LOC_RDD_VIOL_ERR] = RNICPI_WC_LOC_RDD_VIOL_ERR,
	[IBV_WC_REM_INV_RD_REQ_ERR] = RNICPI_WC_REM_INV_RD_REQ_ERR,
	[IBV_WC_REM_ABORT_ERR] = RNICPI_WC_REM_ABORT_ERR,
	[IBV_WC_INV_EECN_ERR] = RNICPI_WC_INV_EECN_ERR,
	[IBV_WC_INV_EEC_STATE_ERR] = RNICPI_WC_INV_EEC_STATE_ERR,
	[IBV_WC_FATAL_ERR] = RNICPI_WC_FATAL_ERR,
	[IBV_WC_RESP_TIMEOUT_ERR] = RNICPI_WC_RESP_TIMEOUT_ERR,
	[IBV_WC_GENERAL_ERR] = RNICPI_WC_GENERAL_ERR,
	/* Tag matching: hostrdma posts no tagged receives. */
	[IBV_WC_TM_ERR] = RNICPI_WC_GENERAL_ERR,
	[IBV_WC_TM_RNDV_INCOMPLETE] = RNICPI_WC_GENERAL_ERR,
};

enum rnicpi_wc_status verbs_wc_status(enum ibv_wc_status s)
{
	if ((unsigned int)s >= N_ELEM(wc_status_map))
		return RNICPI_WC_GENERAL_ERR;
	return wc_status_map[s];
}

/* +1 so that 0 means "no counterpart". */
static const int wc_opcode_map[] = {
	[IBV_WC_SEND] = RNICPI_WC_SEND + 1,
	[IBV_WC_RDMA_WRITE] = RNICPI_WC_RDMA_WRITE + 1,
	[IBV_WC_RDMA_READ] = RNICPI_WC_RDMA_READ + 1,
	[IBV_WC_COMP_SWAP] = RNICPI_WC_COMP_SWAP + 1,
	[IBV_WC_FETCH_ADD] = RNICPI_WC_FETCH_ADD + 1,
	[IBV_WC_BIND_MW] = RNICPI_WC_BIND_MW + 1,
	[IBV_WC_LOCAL_INV] = RNICPI_WC_LOCAL_INV + 1,
	[IBV_WC_RECV] = RNICPI_WC_RECV + 1,
	[IBV_WC_RECV_RDMA_WITH_IMM] = RNICPI_WC_RECV_RDMA_WITH_IMM + 1,
};

int verbs_wc_opcode(enum ibv_wc_opcode op)
{
	if ((unsigned int)op >= N_ELEM(wc_opcode_map) || !wc_opcode_map[op])
		return -1;
	return wc_opcode_map[op] - 1;
}

static const int wr_opcode_map[] = {
	[RNICPI_WR_RDMA_WRITE] = IBV_WR_RDMA_WRITE + 1,
	[RNICPI_WR_RDMA_WRITE_WITH_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM + 1,
	[RNICPI_WR_SEND] = IBV_WR_SEND + 1,
	[RNICPI_WR_SEND_WITH_IMM] = IBV_WR_SEND_WITH_IMM + 1,
	[RNICPI_WR_RDMA_READ] = IBV_WR_RDMA_READ + 1,
	[RNICPI_WR_ATOMIC_CMP_AND_SWP] = IBV_WR_ATOMIC_CMP_AND_SWP + 1,
	[RNICPI_WR_ATOMIC_FETCH_AND_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD + 1,
	[RNICPI_WR_LOCAL_INV] = IBV_WR_LOCAL_INV + 1,
	[RNICPI_WR_BIND_MW] = IBV_WR_BIND_MW + 1,
	[RNICPI_WR_SEND_WITH_INV] = IBV_WR_SEND_WITH_INV + 1,
};

int verbs_wr_opcode(enum rnicpi_wr_opcode op)
{
	if ((unsigned int)op >= N_ELEM(wr_opcode_map) || !wr_opcode_map[op])
		return -1;
	return wr_opcode_map[op] - 1;
}

static const int event_map[] = {
	[IBV_EVENT_CQ_ERR] = RNICPI_EVENT_CQ_ERR + 1,
	[IBV_EVENT_QP_FATAL] = RNICPI_EVENT_QP_FATAL + 1,
	[IBV_EVENT_QP_REQ_ERR] = RNICPI_EVENT_QP_REQ_ERR + 1,
	[IBV_EVENT_QP_ACCESS_ERR] = RNICPI_EVENT_QP_ACCESS_ERR + 1,
	[IBV_EVENT_COMM_EST] = RNICPI_EVENT_COMM_EST + 1,
	[IBV_EVENT_SQ_DRAINED] = RNICPI_EVENT_SQ_DRAINED + 1,
	[IBV_EVENT_PATH_MIG] = RNICPI_EVENT_PATH_MIG + 1,
	[IBV_EVENT_PATH_MIG_ERR] = RNICPI_EVENT_PATH_MIG_ERR + 1,
	[IBV_EVENT_DEVICE_FATAL] = RNICPI_EVENT_DEVICE_FATAL + 1,
	[IBV_EVENT_PORT_ACTIVE] = RNICPI_EVENT_PORT_ACTIVE + 1,
	[IBV_EVENT_PORT_ERR] = RNICPI_EVENT_PORT_ERR + 1,
	[IBV_EVENT_LID_CHANGE] = RNICPI_EVENT_LID_CHANGE + 1,
	[IBV_EVENT_PKEY_CHANGE] = RNICPI_EVENT_PKEY_CHANGE + 1,
	[IBV_EVENT_SM_CHANGE] = RNICPI_EVENT_SM_CHANGE + 1,
	[IBV_EVENT_SRQ_ERR] = RNICPI_EVENT_SRQ_ERR + 1,
	[IBV_EVENT_SRQ_LIMIT_REACHED] = RNICPI_EVENT_SRQ_LIMIT_REACHED + 1,
	[IBV_EVENT_QP_LAST_WQE_REACHED] = RNICPI_EVENT_QP_LAST_WQE_REACHED + 1,
	[IBV_EVENT_CLIENT_REREGISTER] = RNICPI_EVENT_CLIENT_REREGISTER + 1,
	[IBV_EVENT_GID_CHANGE] = RNICPI_EVENT_GID_CHANGE + 1,
	[IBV_EVENT_WQ_FATAL] = 0,
};

int verbs_event_type(enum ibv_event_type t)
{
	if ((unsigned int)t >= N_ELEM(event_map) || !event_map[t])
		return -1;
	return event_map[t] - 1;
}

static const struct {
	unsigned int rnicpi, ibv;
} access_map[] = {
	{ RNICPI_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE },
	{ RNICPI_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE },
	{ RNICPI_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ },
	{ RNICPI_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC },
	{ RNICPI_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND },
}, send_flag_map[] = {
	{ RNICPI_SEND_SIGNALED, IBV_SEND_SIGNALED },
	{ RNICPI_SEND_FENCE, IBV_SEND_FENCE },
	{ RNICPI_SEND_SOLICITED, IBV_SEND_SOLICITED },
	{ RNICPI_SEND_INLINE, IBV_SEND_INLINE },
	{ RNICPI_SEND_LOCAL_FENCE, IBV_SEND_FENCE },
};

unsigned int verbs_access(unsigned int rnicpi_access)
{
	unsigned int out = 0;
	size_t i;

	for (i = 0; i < N_ELEM(access_map); i++)
		if (rnicpi_access & access_map[i].rnicpi)
			out |= access_map[i].ibv;
	return out;
}

unsigned int verbs_send_flags(unsigned int rnicpi_flags)
{
	unsigned int out = 0;
	size_t i;

	for (i = 0; i < N_ELEM(send_flag_map); i++)
		if (rnicpi_flags & send_flag_map[i].rnicpi)
			out |= send_flag_map[i].ibv;
	return out;
}

static const enum rnicpi_port_state port_state_map[] = {
	[IBV_PORT_NOP] = RNICPI_PORT_NOP,
	[IBV_PORT_DOWN] = RNICPI_PORT_DOWN,
	[IBV_PORT_INIT] = RNICPI_PORT_INIT,
	[IBV_PORT_ARMED] = RNICPI_PORT_ARMED,
	[IBV_PORT_ACTIVE] = RNICPI_PORT_ACTIVE,
	/* ACTIVE_DEFER: active, a transition to ACTIVE pending. */
	[IBV_PORT_ACTIVE_DEFER] = RNICPI_PORT_ACTIVE,
};

enum rnicpi_port_state verbs_port_state(enum ibv_port_state s)
{
	if ((unsigned int)s >= N_ELEM(port_state_map))
		return RNICPI_PORT_NOP;
	return port_state_map[s];
}

enum rnicpi_mtu verbs_mtu(enum ibv_mtu m)
{
	if (m < IBV_MTU_256 || m > IBV_MTU_4096)
		return 0;
	/* IBA 7.7.9 codes on both sides. */
	return (enum rnicpi_mtu)m;
}

uint64_t verbs_port_speed_mbps(uint8_t active_width, uint32_t active_speed)
{
	/* IBA 14.2.5.6: width codes, then per-lane rates in Mb/s. */
	static const struct {
		uint32_t code, value;
	} widths[] = { { 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 } },
	  speeds[] = { { 1, 2500 },   { 2, 5000 },   { 4, 10000 },
		       { 8, 10000 },  { 16, 14000 }, { 32, 25000 },
		       { 64, 50000 }, { 128, 100000 } };
	uint64_t lanes = 0, rate = 0;
	size_t i;

	for (i = 0; i < N_ELEM(widths); i++)
		if (widths[i].code == active_width)
			lanes = widths[i].value;
	for (i = 0; i < N_ELEM(speeds); i++)
		if (speeds[i].code == active_speed)
			rate = speeds[i].value;
	return lanes * rate;
}

void verbs_fill_device_attr(const struct ibv_device_attr *in,
			    enum rnicpi_transport transport,
			    struct rnicpi_device_attr *out)
{
	unsigned int f = in->device_cap_flags;

	memset(out, 0, sizeof(*out));
	out->transport = transport;
	snprintf(out->fw_ver, sizeof(out->fw_ver), "%s", in->fw_ver);
	/* ibverbs keeps the GUIDs in network order already. */
	out->node_guid = in->node_guid;
	out->sys_image_guid = in->sys_image_guid;
	out->vendor_id = in->vendor_id;
	out->vendor_part_id = in->vendor_part_id;
	out->hw_ver = in->hw_ver;
	out->max_mr_size = in->max_mr_size;
	out->page_size_cap = in->page_size_cap;
	out->max_qp = in->max_qp;
	out->max_qp_wr = in->max_qp_wr;
	out->max_sge = in->max_sge;
	out->max_sge_rd = in->max_sge_rd ? in->max_sge_rd : in->max_sge;
	out->max_cq = in->max_cq;
	out->max_cqe = in->max_cqe;
	out->max_mr = in->max_mr;
	out->max_mw = in->max_mw;
	out->max_pd = in->max_pd;
	out->max_ah = in->max_ah;
	out->max_srq = in->max_srq;
	out->max_srq_wr = in->max_srq_wr;
	out->max_srq_sge = in->max_srq_sge;
	out->max_qp_rd_atom = in->max_qp_rd_atom;
	out->max_qp_init_rd_atom = in->max_qp_init_rd_atom;
	out->max_res_rd_atom = in->max_res_rd_atom;
	out->max_pkeys = in->max_pkeys;
	out->phys_port_cnt = in->phys_port_cnt;
	/* rdma_cm's limits (verbs_cm_pdata_max): 56 bytes in an IB CM REQ
	 * after rdma_cm's own header; on iWARP 255, librdmacm's 8-bit
	 * private_data_len (the kernel's ucma takes RDMA_MAX_PRIVATE_DATA,
	 * 256), below MPA's own 512 (RFC 5044). */
	out->max_private_data =
		verbs_cm_pdata_max(transport, VERBS_PDATA_CONNECT);
	switch (in->atomic_cap) {
	case IBV_ATOMIC_HCA:
		out->atomic_cap = RNICPI_ATOMIC_HCA;
		break;
	case IBV_ATOMIC_GLOB:
		out->atomic_cap = RNICPI_ATOMIC_GLOB;
		break;
	default:
		out->atomic_cap = RNICPI_ATOMIC_NONE;
		break;
	}

	/* Connections run through librdmacm; every transport has RC,
	 * immediate data (iWARP devices refuse it at post time when they
	 * lack it, as the kernel's siw does). */
	out->caps = RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_NATIVE_CM |
		    RNICPI_DEV_CAP_KERNEL_PINS;
	/* UD, and service ID resolution in rdma_cm's UDP port space (the
	 * kernel's IB CM sends SIDR_REQ/SIDR_REP over QP1): IB and RoCE. */
	if (transport != RNICPI_TRANSPORT_IWARP)
		out->caps |= RNICPI_DEV_CAP_UD | RNICPI_DEV_CAP_IMM_DATA |
			     RNICPI_DEV_CAP_NATIVE_SIDR;
	if (in->max_srq)
		out->caps |= RNICPI_DEV_CAP_SRQ;
	/* ibv_modify_srq with IBV_SRQ_MAX_WR (the kernel's rxe; not siw). */
	if (in->max_srq && (f & IBV_DEVICE_SRQ_RESIZE))
		out->caps |= RNICPI_DEV_CAP_RESIZE_SRQ;
	if (out->atomic_cap != RNICPI_ATOMIC_NONE)
		out->caps |= RNICPI_DEV_CAP_ATOMIC;
	if (f & IBV_DEVICE_MEM_WINDOW)
		out->caps |= RNICPI_DEV_CAP_MW_TYPE_1;
	if (f & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		out->caps |= RNICPI_DEV_CAP_MW_TYPE_2;
	if (f & IBV_DEVICE_MEM_MGT_EXTENSIONS)
		out->caps |= RNICPI_DEV_CAP_SEND_INV | RNICPI_DEV_CAP_LOCAL_INV;
}

void verbs_fill_port_attr(const struct ibv_port_attr *in,
			  struct rnicpi_port_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->state = verbs_port_state(in->state);
	out->max_mtu = verbs_mtu(in->max_mtu);
	out->active_mtu = verbs_mtu(in->active_mtu);
	out->link_layer = in->link_layer == IBV_LINK_LAYER_ETHERNET ?
				  RNICPI_LINK_LAYER_ETHERNET :
				  RNICPI_LINK_LAYER_INFINIBAND;
	out->gid_tbl_len = in->gid_tbl_len;
	out->pkey_tbl_len = in->pkey_tbl_len;
	out->max_msg_sz = in->max_msg_sz;
	out->lid = in->lid;
	out->speed_mbps = verbs_port_speed_mbps(in->active_width,
						in->active_speed);
}

void verbs_device_name(const char *ibdev, uint8_t port, uint8_t n_ports,
		       char *buf, size_t len)
{
	if (n_ports > 1)
		snprintf(buf, len, "%s:%u", ibdev, port);
	else
		snprintf(buf, len, "%s", ibdev);
}

int verbs_send_wr_to_ibv(const struct rnicpi_send_wr *in,
			 struct ibv_send_wr *out, struct ibv_sge *sge,
			 uint32_t max_sge)
{
	int op = verbs_wr_opcode(in->opcode);
	uint32_t i, n = 0;

	if (op < 0 || in->num_sge > max_sge || (in->num_sge && !in->sg_list))
		return -EINVAL;
	/* Windows and datagrams need the provider's objects: not here. */
	if (in->opcode == RNICPI_WR_BIND_MW)
		return -EOPNOTSUPP;
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->opcode = (enum ibv_wr_opcode)op;
	out->send_flags = verbs_send_flags(in->send_flags);
	/* Zero-length segments carry nothing and are left out: the
	 * kernel's siw (6.1) follows a NULL region for one in a Write or
	 * Send of several segments and oopses (siw_tx_hdt), leaving the
	 * process unkillable. */
	for (i = 0; i < in->num_sge; i++) {
		if (!in->sg_list[i].length)
			continue;
		sge[n].addr = in->sg_list[i].addr;
		sge[n].length = in->sg_list[i].length;
		sge[n].lkey = in->sg_list[i].lkey;
		n++;
	}
	out->sg_list = n ? sge : NULL;
	out->num_sge = (int)n;
	switch (in->opcode) {
	case RNICPI_WR_SEND_WITH_IMM:
	case RNICPI_WR_RDMA_WRITE_WITH_IMM:
		/* ibverbs carries immediate data in network order. */
		out->imm_data = htonl(in->ex.imm_data);
		break;
	case RNICPI_WR_SEND_WITH_INV:
	case RNICPI_WR_LOCAL_INV:
		out->invalidate_rkey = in->ex.invalidate_rkey;
		break;
	default:
		break;
	}
	switch (in->opcode) {
	case RNICPI_WR_RDMA_WRITE:
	case RNICPI_WR_RDMA_WRITE_WITH_IMM:
	case RNICPI_WR_RDMA_READ:
		out->wr.rdma.remote_addr = in->wr.rdma.remote_addr;
		out->wr.rdma.rkey = in->wr.rdma.rkey;
		break;
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
	case RNICPI_WR_ATOMIC_FETCH_AND_ADD:
		out->wr.atomic.remote_addr = in->wr.atomic.remote_addr;
		out->wr.atomic.compare_add = in->wr.atomic.compare_add;
		out->wr.atomic.swap = in->wr.atomic.swap;
		out->wr.atomic.rkey = in->wr.atomic.rkey;
		break;
	default:
		break;
	}
	return 0;
}

void verbs_wc_from_ibv(const struct ibv_wc *in, struct rnicpi_wc *out)
{
	int op = verbs_wc_opcode(in->opcode);

	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->status = verbs_wc_status(in->status);
	/* The opcode of an error completion is undefined in ibverbs. */
	out->opcode = op < 0 || in->status != IBV_WC_SUCCESS ? RNICPI_WC_SEND :
							      (enum rnicpi_wc_opcode)op;
	out->vendor_err = in->vendor_err;
	out->byte_len = in->byte_len;
	out->qp_num = in->qp_num;
	out->src_qp = in->src_qp;
	out->pkey_index = in->pkey_index;
	out->slid = in->slid;
	out->sl = in->sl;
	out->dlid_path_bits = in->dlid_path_bits;
	if (in->status != IBV_WC_SUCCESS)
		return;
	if (in->wc_flags & IBV_WC_WITH_IMM) {
		out->wc_flags |= RNICPI_WC_WITH_IMM;
		out->imm_data = ntohl(in->imm_data);
	}
	if (in->wc_flags & IBV_WC_WITH_INV) {
		out->wc_flags |= RNICPI_WC_WITH_INV;
		out->invalidated_rkey = in->invalidated_rkey;
	}
	if (in->wc_flags & IBV_WC_GRH)
		out->wc_flags |= RNICPI_WC_GRH;
}

static const int qp_state_map[] = {
	[RNICPI_QPS_RESET] = IBV_QPS_RESET + 1,
	[RNICPI_QPS_INIT] = IBV_QPS_INIT + 1,
	[RNICPI_QPS_RTR] = IBV_QPS_RTR + 1,
	[RNICPI_QPS_RTS] = IBV_QPS_RTS + 1,
	[RNICPI_QPS_SQD] = IBV_QPS_SQD + 1,
	[RNICPI_QPS_SQE] = IBV_QPS_SQE + 1,
	[RNICPI_QPS_ERR] = IBV_QPS_ERR + 1,
	/* iWARP's RDMA verbs states as the kernel's iWARP drivers take
	 * them through ibverbs (siw_qp_modify: INIT is IDLE, SQD starts a
	 * graceful close, ERR an abortive one). */
	[RNICPI_QPS_IDLE] = IBV_QPS_INIT + 1,
	[RNICPI_QPS_CLOSING] = IBV_QPS_SQD + 1,
	[RNICPI_QPS_TERMINATE] = IBV_QPS_ERR + 1,
};

int verbs_qp_state(enum rnicpi_qp_state s)
{
	if ((unsigned int)s >= N_ELEM(qp_state_map) || !qp_state_map[s])
		return -1;
	return qp_state_map[s] - 1;
}

enum rnicpi_qp_state verbs_qp_state_from_ibv(enum ibv_qp_state s,
					      enum rnicpi_transport t)
{
	static const enum rnicpi_qp_state ib[] = {
		[IBV_QPS_RESET] = RNICPI_QPS_RESET,
		[IBV_QPS_INIT] = RNICPI_QPS_INIT,
		[IBV_QPS_RTR] = RNICPI_QPS_RTR,
		[IBV_QPS_RTS] = RNICPI_QPS_RTS,
		[IBV_QPS_SQD] = RNICPI_QPS_SQD,
		[IBV_QPS_SQE] = RNICPI_QPS_SQE,
		[IBV_QPS_ERR] = RNICPI_QPS_ERR,
	};

	if ((unsigned int)s >= N_ELEM(ib))
		return RNICPI_QPS_ERR;
	if (t == RNICPI_TRANSPORT_IWARP) {
		switch (s) {
		case IBV_QPS_RESET:
		case IBV_QPS_INIT:
		case IBV_QPS_RTR:
			return RNICPI_QPS_IDLE;
		case IBV_QPS_SQD:
			return RNICPI_QPS_CLOSING;
		default:
			break;
		}
	}
	return ib[s];
}

static const struct {
	unsigned int rnicpi, ibv;
} qp_mask_map[] = {
	{ RNICPI_QP_STATE, IBV_QP_STATE },
	{ RNICPI_QP_CUR_STATE, IBV_QP_CUR_STATE },
	{ RNICPI_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS },
	{ RNICPI_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX },
	{ RNICPI_QP_PORT, IBV_QP_PORT },
	{ RNICPI_QP_QKEY, IBV_QP_QKEY },
	{ RNICPI_QP_AV, IBV_QP_AV },
	{ RNICPI_QP_PATH_MTU, IBV_QP_PATH_MTU },
	{ RNICPI_QP_TIMEOUT, IBV_QP_TIMEOUT },
	{ RNICPI_QP_RETRY_CNT, IBV_QP_RETRY_CNT },
	{ RNICPI_QP_RNR_RETRY, IBV_QP_RNR_RETRY },
	{ RNICPI_QP_RQ_PSN, IBV_QP_RQ_PSN },
	{ RNICPI_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC },
	{ RNICPI_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER },
	{ RNICPI_QP_SQ_PSN, IBV_QP_SQ_PSN },
	{ RNICPI_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC },
	{ RNICPI_QP_CAP, IBV_QP_CAP },
	{ RNICPI_QP_DEST_QPN, IBV_QP_DEST_QPN },
};

unsigned int verbs_qp_mask(unsigned int rnicpi_mask)
{
	unsigned int out = 0;
	size_t i;

	for (i = 0; i < N_ELEM(qp_mask_map); i++)
		if (rnicpi_mask & qp_mask_map[i].rnicpi)
			out |= qp_mask_map[i].ibv;
	return out;
}

int verbs_qp_attr_to_ibv(const struct rnicpi_qp_attr *in, unsigned int mask,
			 struct ibv_qp_attr *out)
{
	int st;

	memset(out, 0, sizeof(*out));
	if (mask & RNICPI_QP_STATE) {
		st = verbs_qp_state(in->qp_state);
		if (st < 0)
			return -EINVAL;
		out->qp_state = (enum ibv_qp_state)st;
	}
	if (mask & RNICPI_QP_CUR_STATE) {
		st = verbs_qp_state(in->cur_qp_state);
		if (st < 0)
			return -EINVAL;
		out->cur_qp_state = (enum ibv_qp_state)st;
	}
	out->path_mtu = (enum ibv_mtu)in->path_mtu;
	out->qkey = in->qkey;
	out->rq_psn = in->rq_psn;
	out->sq_psn = in->sq_psn;
	out->dest_qp_num = in->dest_qp_num;
	out->qp_access_flags = verbs_access(in->qp_access_flags);
	out->cap.max_send_wr = in->cap.max_send_wr;
	out->cap.max_recv_wr = in->cap.max_recv_wr;
	out->cap.max_send_sge = in->cap.max_send_sge;
	out->cap.max_recv_sge = in->cap.max_recv_sge;
	out->cap.max_inline_data = in->cap.max_inline_data;
	memcpy(out->ah_attr.grh.dgid.raw, in->ah_attr.dgid.raw, 16);
	out->ah_attr.grh.flow_label = in->ah_attr.flow_label;
	out->ah_attr.grh.sgid_index = in->ah_attr.sgid_index;
	out->ah_attr.grh.hop_limit = in->ah_attr.hop_limit;
	out->ah_attr.grh.traffic_class = in->ah_attr.traffic_class;
	out->ah_attr.sl = in->ah_attr.sl;
	out->ah_attr.dlid = in->ah_attr.dlid;
	out->ah_attr.port_num = in->ah_attr.port_num;
	out->ah_attr.is_global = in->ah_attr.is_global;
	out->pkey_index = in->pkey_index;
	out->max_rd_atomic = in->max_rd_atomic;
	out->max_dest_rd_atomic = in->max_dest_rd_atomic;
	out->min_rnr_timer = in->min_rnr_timer;
	out->port_num = in->port_num;
	out->timeout = in->timeout;
	out->retry_cnt = in->retry_cnt;
	out->rnr_retry = in->rnr_retry;
	return 0;
}

/*
 * rdma_cm's events as RNICPI connection events. For the connection
 * set-up the next stage runs through librdmacm; kept here, beside the
 * other tables, so that it is tested before it is used.
 */
static const struct verbs_cm_map cm_event_map[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = { VERBS_CM_STEP, 0 },
	[RDMA_CM_EVENT_ADDR_ERROR] = { RNICPI_CONN_ERROR, -EHOSTUNREACH },
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = { VERBS_CM_STEP, 0 },
	[RDMA_CM_EVENT_ROUTE_ERROR] = { RNICPI_CONN_ERROR, -ENETUNREACH },
	[RDMA_CM_EVENT_CONNECT_REQUEST] = { RNICPI_CONN_REQUEST, 0 },
	/* Only without a QP of rdma_cm's making (ours): the active side
	 * moves its QP to RTS and answers with rdma_establish. */
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = { VERBS_CM_STEP, 0 },
	[RDMA_CM_EVENT_CONNECT_ERROR] = { RNICPI_CONN_ERROR, -ECONNRESET },
	[RDMA_CM_EVENT_UNREACHABLE] = { RNICPI_CONN_ERROR, -ETIMEDOUT },
	[RDMA_CM_EVENT_REJECTED] = { RNICPI_CONN_REJECTED, -ECONNREFUSED },
	[RDMA_CM_EVENT_ESTABLISHED] = { RNICPI_CONN_ESTABLISHED, 0 },
	[RDMA_CM_EVENT_DISCONNECTED] = { RNICPI_CONN_DISCONNECTED, 0 },
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = { RNICPI_CONN_DISCONNECTED, -ENODEV },
	/* No multicast groups; an address change and the end of time-wait
	 * change nothing a consumer sees. */
	[RDMA_CM_EVENT_MULTICAST_JOIN] = { VERBS_CM_IGNORE, 0 },
	[RDMA_CM_EVENT_MULTICAST_ERROR] = { VERBS_CM_IGNORE, 0 },
	[RDMA_CM_EVENT_ADDR_CHANGE] = { VERBS_CM_IGNORE, 0 },
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = { VERBS_CM_IGNORE, 0 },
};

struct verbs_cm_map verbs_cm_event(enum rdma_cm_event_type t)
{
	struct verbs_cm_map none = { VERBS_CM_IGNORE, 0 };

	if ((unsigned int)t >= N_ELEM(cm_event_map) || !cm_event_map[t].type)
		return none;
	return cm_event_map[t];
}

/*
 * A SIDR request through rdma_cm (kernel's cma.c): the answer comes as
 * ESTABLISHED (SIDR_REP "valid": QP and Q_Key in the event), or as
 * UNREACHABLE with the SIDR_REP's status (1..4, positive) or a negative
 * errno (-ETIMEDOUT: no SIDR_REP after the IB CM's retries).
 */
struct verbs_sidr_map verbs_sidr_event(enum rdma_cm_event_type t,
				       int ev_status)
{
	struct verbs_sidr_map m = { RNICPI_CONN_SIDR_REPLY, 0, 0 };

	switch (t) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		m.type = VERBS_CM_STEP;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
		if (ev_status > 0 && ev_status <= 255)
			m.sidr_status = (uint8_t)ev_status;
		else
			m.status = ev_status < 0 ? ev_status : -ETIMEDOUT;
		break;
	case RDMA_CM_EVENT_REJECTED:
		m.sidr_status = 2;	/* rejected */
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		m.status = -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		m.status = -ENETUNREACH;
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		m.status = -ECONNRESET;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		m.status = -ENODEV;
		break;
	default:
		m.type = VERBS_CM_IGNORE;
		break;
	}
	return m;
}

/*
 * Private data rdma_cm carries (RDMA_PS_TCP). IB and RoCE: the IB CM's
 * REQ, REP and REJ carry 92, 196 and 148 bytes, and rdma_cm's own
 * header takes 36 of the REQ's. iWARP: MPA would carry more, but
 * librdmacm's conn param has an 8-bit length.
 */
uint32_t verbs_cm_pdata_max(enum rnicpi_transport transport, int op)
{
	static const uint32_t ib[] = {
		[VERBS_PDATA_CONNECT] = 56,
		[VERBS_PDATA_ACCEPT] = 196,
		[VERBS_PDATA_REJECT] = 148,
	};

	if (op < VERBS_PDATA_CONNECT || op > VERBS_PDATA_REJECT)
		return 0;
	if (transport == RNICPI_TRANSPORT_IWARP)
		return 255;
	return ib[op];
}

void verbs_ah_attr_to_ibv(const struct rnicpi_ah_attr *in, uint8_t port,
			  struct ibv_ah_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->is_global = in->is_global ? 1 : 0;
	memcpy(out->grh.dgid.raw, in->dgid.raw, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = in->flow_label & 0xfffff;
	out->grh.sgid_index = in->sgid_index;
	out->grh.hop_limit = in->hop_limit;
	out->grh.traffic_class = in->traffic_class;
	out->dlid = in->dlid;
	out->sl = in->sl;
	out->port_num = port;
}
