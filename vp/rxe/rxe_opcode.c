/* SPDX-License-Identifier: MIT */
/*
 * The IBA opcode table (IBA 9.2.1 table 39, header layouts of 9.3-9.5 and
 * annex A17): for every opcode we speak, which extension headers follow
 * the BTH and at which offsets. Offsets follow the IBA header order:
 * BTH, DETH, RETH or AtomicETH, AETH, AtomicAckETH, ImmDt, IETH.
 */
#include "config.h"

#include "vp/rxe/ib_hdr.h"

#define HAS(f, bit) (((f) & (bit)) ? 1u : 0u)
#define DETH_END(f) (IB_BTH_BYTES + HAS(f, IB_F_DETH) * IB_DETH_BYTES)
#define RETH_END(f) (DETH_END(f) + HAS(f, IB_F_RETH) * IB_RETH_BYTES + \
		     HAS(f, IB_F_ATMETH) * IB_ATMETH_BYTES)
#define AETH_END(f) (RETH_END(f) + HAS(f, IB_F_AETH) * IB_AETH_BYTES)
#define ATMACK_END(f) (AETH_END(f) + HAS(f, IB_F_ATMACK) * IB_ATMACK_BYTES)
#define IMMDT_END(f) (ATMACK_END(f) + HAS(f, IB_F_IMMDT) * IB_IMMDT_BYTES)
#define IETH_END(f) (IMMDT_END(f) + HAS(f, IB_F_IETH) * IB_IETH_BYTES)

#define OP(code, opname, f)                                                 \
	[code] = {                                                          \
		.name = opname,                                             \
		.flags = (f),                                               \
		.hdr_len = IETH_END(f),                                     \
		.deth_off = IB_BTH_BYTES,                                   \
		.reth_off = DETH_END(f),                                    \
		.atmeth_off = DETH_END(f),                                  \
		.aeth_off = RETH_END(f),                                    \
		.atmack_off = AETH_END(f),                                  \
		.immdt_off = ATMACK_END(f),                                 \
		.ieth_off = IMMDT_END(f),                                   \
	}

#define SREQ (IB_F_REQ | IB_F_SEND | IB_F_PAYLOAD | IB_F_RWR)
#define WREQ (IB_F_REQ | IB_F_WRITE | IB_F_PAYLOAD)

/* RC and UC share the SEND and WRITE rows (UC has no READ, atomics,
 * ACKs or invalidate); @base is 0x00 or 0x20. */
#define SEND_WRITE_ROWS(base, pfx)                                          \
	OP(base | IB_OP_SEND_FIRST, pfx "SEND_FIRST", SREQ | IB_F_FIRST),    \
	OP(base | IB_OP_SEND_MIDDLE, pfx "SEND_MIDDLE", SREQ | IB_F_MIDDLE), \
	OP(base | IB_OP_SEND_LAST, pfx "SEND_LAST",                          \
	   SREQ | IB_F_LAST | IB_F_COMP),                                    \
	OP(base | IB_OP_SEND_LAST_IMM, pfx "SEND_LAST_WITH_IMMEDIATE",       \
	   SREQ | IB_F_LAST | IB_F_COMP | IB_F_IMMDT),                       \
	OP(base | IB_OP_SEND_ONLY, pfx "SEND_ONLY",                          \
	   SREQ | IB_F_ONLY | IB_F_COMP),                                    \
	OP(base | IB_OP_SEND_ONLY_IMM, pfx "SEND_ONLY_WITH_IMMEDIATE",       \
	   SREQ | IB_F_ONLY | IB_F_COMP | IB_F_IMMDT),                       \
	OP(base | IB_OP_WRITE_FIRST, pfx "RDMA_WRITE_FIRST",                 \
	   WREQ | IB_F_FIRST | IB_F_RETH),                                   \
	OP(base | IB_OP_WRITE_MIDDLE, pfx "RDMA_WRITE_MIDDLE",               \
	   WREQ | IB_F_MIDDLE),                                              \
	OP(base | IB_OP_WRITE_LAST, pfx "RDMA_WRITE_LAST",                   \
	   WREQ | IB_F_LAST | IB_F_COMP),                                    \
	OP(base | IB_OP_WRITE_LAST_IMM, pfx "RDMA_WRITE_LAST_WITH_IMMEDIATE",\
	   WREQ | IB_F_LAST | IB_F_COMP | IB_F_IMMDT | IB_F_RWR),            \
	OP(base | IB_OP_WRITE_ONLY, pfx "RDMA_WRITE_ONLY",                   \
	   WREQ | IB_F_ONLY | IB_F_COMP | IB_F_RETH),                        \
	OP(base | IB_OP_WRITE_ONLY_IMM, pfx "RDMA_WRITE_ONLY_WITH_IMMEDIATE",\
	   WREQ | IB_F_ONLY | IB_F_COMP | IB_F_RETH | IB_F_IMMDT | IB_F_RWR)

const struct ib_opcode_info ib_opcode_table[IB_OPCODE_MAX] = {
	SEND_WRITE_ROWS(IB_OPC_RC, "RC_"),
	OP(IB_OP_READ_REQUEST, "RC_RDMA_READ_REQUEST",
	   IB_F_REQ | IB_F_READ | IB_F_ONLY | IB_F_COMP | IB_F_RETH),
	OP(IB_OP_READ_RESP_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
	   IB_F_RESP | IB_F_PAYLOAD | IB_F_FIRST | IB_F_AETH),
	OP(IB_OP_READ_RESP_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
	   IB_F_RESP | IB_F_PAYLOAD | IB_F_MIDDLE),
	OP(IB_OP_READ_RESP_LAST, "RC_RDMA_READ_RESPONSE_LAST",
	   IB_F_RESP | IB_F_PAYLOAD | IB_F_LAST | IB_F_AETH),
	OP(IB_OP_READ_RESP_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
	   IB_F_RESP | IB_F_PAYLOAD | IB_F_ONLY | IB_F_AETH),
	OP(IB_OP_ACK, "RC_ACKNOWLEDGE", IB_F_RESP | IB_F_ONLY | IB_F_AETH),
	OP(IB_OP_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE",
	   IB_F_RESP | IB_F_ONLY | IB_F_AETH | IB_F_ATMACK),
	OP(IB_OP_CMP_SWAP, "RC_COMPARE_SWAP",
	   IB_F_REQ | IB_F_ATOMIC | IB_F_ONLY | IB_F_COMP | IB_F_ATMETH),
	OP(IB_OP_FETCH_ADD, "RC_FETCH_ADD",
	   IB_F_REQ | IB_F_ATOMIC | IB_F_ONLY | IB_F_COMP | IB_F_ATMETH),
	OP(IB_OP_SEND_LAST_INV, "RC_SEND_LAST_WITH_INVALIDATE",
	   SREQ | IB_F_LAST | IB_F_COMP | IB_F_IETH),
	OP(IB_OP_SEND_ONLY_INV, "RC_SEND_ONLY_WITH_INVALIDATE",
	   SREQ | IB_F_ONLY | IB_F_COMP | IB_F_IETH),
	SEND_WRITE_ROWS(IB_OPC_UC, "UC_"),
	OP(IB_OPC_UD | IB_OP_SEND_ONLY, "UD_SEND_ONLY",
	   SREQ | IB_F_ONLY | IB_F_COMP | IB_F_DETH),
	OP(IB_OPC_UD | IB_OP_SEND_ONLY_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE",
	   SREQ | IB_F_ONLY | IB_F_COMP | IB_F_DETH | IB_F_IMMDT),
};
