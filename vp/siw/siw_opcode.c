/* SPDX-License-Identifier: MIT */
/*
 * siw_opcode.c - the RDMAP opcodes (RFC 5040 §4.2 Table 1) and what the
 * RFCs say about each: DDP model and queue (RFC 5040 §5.1, RFC 5041
 * §4), header length, and how the Data Sink handles the message. The
 * transmit and receive paths look every per-opcode fact up here.
 */
#include "config.h"

#include "vp/siw/iwarp.h"

#define TAGGED_HDR ((uint8_t)sizeof(struct iwarp_tagged_hdr))
#define UNTAGGED_HDR ((uint8_t)sizeof(struct iwarp_untagged_hdr))
#define READ_REQ_HDR ((uint8_t)sizeof(struct iwarp_read_req_hdr))

/* A Send lands in the next posted receive, on untagged queue 0. */
#define SEND_FLAGS RDMAP_OPF_RECV_WQE

static const struct rdmap_opcode_info rdmap_opcodes[RDMAP_OPCODE_COUNT] = {
	[RDMAP_RDMA_WRITE] = {
		.name = "RDMA Write",
		.hdr_len = TAGGED_HDR,
		.flags = RDMAP_OPF_TAGGED,
	},
	[RDMAP_RDMA_READ_REQ] = {
		.name = "RDMA Read Request",
		.hdr_len = READ_REQ_HDR,
		.ddp_qn = DDP_QN_READ_REQ,
		.flags = RDMAP_OPF_READ_REQ,
	},
	[RDMAP_RDMA_READ_RESP] = {
		.name = "RDMA Read Response",
		.hdr_len = TAGGED_HDR,
		.flags = RDMAP_OPF_TAGGED | RDMAP_OPF_READ_RESP,
	},
	[RDMAP_SEND] = {
		.name = "Send",
		.hdr_len = UNTAGGED_HDR,
		.ddp_qn = DDP_QN_SEND,
		.flags = SEND_FLAGS,
	},
	[RDMAP_SEND_INV] = {
		.name = "Send with Invalidate",
		.hdr_len = UNTAGGED_HDR,
		.ddp_qn = DDP_QN_SEND,
		.flags = SEND_FLAGS | RDMAP_OPF_INVALIDATE,
	},
	[RDMAP_SEND_SE] = {
		.name = "Send with Solicited Event",
		.hdr_len = UNTAGGED_HDR,
		.ddp_qn = DDP_QN_SEND,
		.flags = SEND_FLAGS | RDMAP_OPF_SOLICITED,
	},
	[RDMAP_SEND_SE_INV] = {
		.name = "Send with Solicited Event and Invalidate",
		.hdr_len = UNTAGGED_HDR,
		.ddp_qn = DDP_QN_SEND,
		.flags = SEND_FLAGS | RDMAP_OPF_SOLICITED |
			 RDMAP_OPF_INVALIDATE,
	},
	[RDMAP_TERMINATE] = {
		.name = "Terminate",
		.hdr_len = UNTAGGED_HDR,
		.ddp_qn = DDP_QN_TERMINATE,
	},
};

const struct rdmap_opcode_info *rdmap_opcode_info(uint8_t opcode)
{
	return opcode < RDMAP_OPCODE_COUNT ? &rdmap_opcodes[opcode] : NULL;
}
