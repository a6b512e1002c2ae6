/* SPDX-License-Identifier: MIT */
/*
 * ib_hdr.h - InfiniBand transport headers as RoCEv2 carries them (IBA
 * volume 1 chapter 9 "Transport layer", annex A17 "RoCEv2").
 *
 * Every header is a byte array in network order, read and written through
 * accessor functions with masks: no bitfields, no host-order structs on the
 * wire. Sizes are asserted. The opcode table (rxe_opcode.c) says which
 * extension headers follow the BTH for each opcode and where.
 */
#ifndef VP_RXE_IB_HDR_H
#define VP_RXE_IB_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ROCE_V2_UDP_PORT 4791 /* IANA, annex A17.2 */

#define IB_PSN_MASK 0xffffffu
#define IB_QPN_MASK 0xffffffu
#define IB_GSI_QPN 1u
#define IB_GSI_QKEY 0x80010000u /* IBA 13.5.3.2 well-known GSI Q_Key */
#define IB_DEFAULT_PKEY 0xffffu
#define IB_ICRC_BYTES 4u
#define IB_GRH_BYTES 40u /* what a UD receive buffer reserves (IBA 11.4.1.2) */

/* ---------------------------------------------------------------- */
/* Big-endian helpers                                                */
/* ---------------------------------------------------------------- */

static inline uint16_t ib_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t ib_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t ib_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t ib_get64(const uint8_t *p)
{
	return (uint64_t)ib_get32(p) << 32 | ib_get32(p + 4);
}

static inline void ib_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void ib_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void ib_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void ib_put64(uint8_t *p, uint64_t v)
{
	ib_put32(p, (uint32_t)(v >> 32));
	ib_put32(p + 4, (uint32_t)v);
}

/* ---------------------------------------------------------------- */
/* BTH, Base Transport Header (IBA 9.2), 12 bytes                     */
/*                                                                  */
/*  0: OpCode                                                       */
/*  1: SE(7) MigReq(6) PadCnt(5:4) TVer(3:0)                        */
/*  2: P_Key (16)                                                   */
/*  4: FECN(7) BECN(6) Resv6a   - masked to ones in the ICRC        */
/*  5: DestQP (24)                                                  */
/*  8: AckReq(7) Resv7                                              */
/*  9: PSN (24)                                                     */
/* ---------------------------------------------------------------- */

#define IB_BTH_BYTES 12u
struct ib_bth {
	uint8_t b[IB_BTH_BYTES];
};
_Static_assert(sizeof(struct ib_bth) == 12, "BTH is 12 bytes (IBA 9.2)");

#define IB_BTH_SE 0x80u
#define IB_BTH_MIG 0x40u
#define IB_BTH_PAD_MASK 0x30u
#define IB_BTH_PAD_SHIFT 4
#define IB_BTH_TVER_MASK 0x0fu
#define IB_BTH_ACKREQ 0x80u

static inline uint8_t bth_opcode(const struct ib_bth *h)
{
	return h->b[0];
}

static inline bool bth_se(const struct ib_bth *h)
{
	return h->b[1] & IB_BTH_SE;
}

static inline bool bth_mig(const struct ib_bth *h)
{
	return h->b[1] & IB_BTH_MIG;
}

static inline unsigned int bth_pad(const struct ib_bth *h)
{
	return (h->b[1] & IB_BTH_PAD_MASK) >> IB_BTH_PAD_SHIFT;
}
static inline unsigned int bth_tver(const struct ib_bth *h)
{
	return h->b[1] & IB_BTH_TVER_MASK;
}
static inline uint16_t bth_pkey(const struct ib_bth *h)
{
	return ib_get16(h->b + 2);
}

static inline uint32_t bth_qpn(const struct ib_bth *h)
{
	return ib_get24(h->b + 5);
}

static inline bool bth_ackreq(const struct ib_bth *h)
{
	return h->b[8] & IB_BTH_ACKREQ;
}

static inline uint32_t bth_psn(const struct ib_bth *h)
{
	return ib_get24(h->b + 9);
}

/* Fill a BTH; reserved fields zero, TVer 0 (IBA 9.2.5). */
static inline void bth_init(struct ib_bth *h, uint8_t opcode, bool se,
			    bool mig, unsigned int pad, uint16_t pkey,
			    uint32_t qpn, bool ackreq, uint32_t psn)
{
	memset(h, 0, sizeof(*h));
	h->b[0] = opcode;
	h->b[1] = (uint8_t)((se ? IB_BTH_SE : 0) | (mig ? IB_BTH_MIG : 0) |
			    ((pad << IB_BTH_PAD_SHIFT) & IB_BTH_PAD_MASK));
	ib_put16(h->b + 2, pkey);
	ib_put24(h->b + 5, qpn & IB_QPN_MASK);
	h->b[8] = ackreq ? IB_BTH_ACKREQ : 0;
	ib_put24(h->b + 9, psn & IB_PSN_MASK);
}

/* ---------------------------------------------------------------- */
/* RETH, RDMA Extended Transport Header (IBA 9.3.3), 16 bytes:       */
/* VA (64), R_Key (32), DMA Length (32)                              */
/* ---------------------------------------------------------------- */

#define IB_RETH_BYTES 16u
struct ib_reth {
	uint8_t b[IB_RETH_BYTES];
};
_Static_assert(sizeof(struct ib_reth) == 16, "RETH is 16 bytes (IBA 9.3.3)");

static inline uint64_t reth_va(const struct ib_reth *h)
{
	return ib_get64(h->b);
}

static inline uint32_t reth_rkey(const struct ib_reth *h)
{
	return ib_get32(h->b + 8);
}

static inline uint32_t reth_len(const struct ib_reth *h)
{
	return ib_get32(h->b + 12);
}

static inline void reth_set(struct ib_reth *h, uint64_t va, uint32_t rkey,
			    uint32_t len)
{
	ib_put64(h->b, va);
	ib_put32(h->b + 8, rkey);
	ib_put32(h->b + 12, len);
}

/* ---------------------------------------------------------------- */
/* AtomicETH (IBA 9.3.4), 28 bytes: VA (64), R_Key (32),             */
/* Swap (Add) Data (64), Compare Data (64)                          */
/* ---------------------------------------------------------------- */

#define IB_ATMETH_BYTES 28u
struct ib_atmeth {
	uint8_t b[IB_ATMETH_BYTES];
};
_Static_assert(sizeof(struct ib_atmeth) == 28,
	       "AtomicETH is 28 bytes (IBA 9.3.4)");

static inline uint64_t atmeth_va(const struct ib_atmeth *h)
{
	return ib_get64(h->b);
}

static inline uint32_t atmeth_rkey(const struct ib_atmeth *h)
{
	return ib_get32(h->b + 8);
}

static inline uint64_t atmeth_swap_add(const struct ib_atmeth *h)
{
	return ib_get64(h->b + 12);
}

static inline uint64_t atmeth_compare(const struct ib_atmeth *h)
{
	return ib_get64(h->b + 20);
}

static inline void atmeth_set(struct ib_atmeth *h, uint64_t va, uint32_t rkey,
			      uint64_t swap_add, uint64_t compare)
{
	ib_put64(h->b, va);
	ib_put32(h->b + 8, rkey);
	ib_put64(h->b + 12, swap_add);
	ib_put64(h->b + 20, compare);
}

/* ---------------------------------------------------------------- */
/* AETH, ACK Extended Transport Header (IBA 9.3.5), 4 bytes:         */
/* Syndrome (8), MSN (24). Syndrome bits 6:5 give the kind (table    */
/* 42): 00 ACK (low 5 bits = credit count), 01 RNR NAK (low 5 bits   */
/* = timer code, 9.7.5.2.8), 11 NAK (low 5 bits = NAK code).         */
/* ---------------------------------------------------------------- */

#define IB_AETH_BYTES 4u
struct ib_aeth {
	uint8_t b[IB_AETH_BYTES];
};
_Static_assert(sizeof(struct ib_aeth) == 4, "AETH is 4 bytes (IBA 9.3.5)");

#define AETH_TYPE_MASK 0x60u
#define AETH_TYPE_ACK 0x00u
#define AETH_TYPE_RNR 0x20u
#define AETH_TYPE_RSVD 0x40u
#define AETH_TYPE_NAK 0x60u
#define AETH_VALUE_MASK 0x1fu
#define AETH_CREDIT_INVALID 0x1fu /* "unlimited": credits not used */

enum ib_nak_code {
	AETH_NAK_PSN_SEQ_ERR = 0,
	AETH_NAK_INVALID_REQ = 1,
	AETH_NAK_REM_ACCESS_ERR = 2,
	AETH_NAK_REM_OP_ERR = 3,
	AETH_NAK_INVALID_RD_REQ = 4,
};

static inline uint8_t aeth_syndrome(const struct ib_aeth *h)
{
	return h->b[0];
}

static inline unsigned int aeth_type(const struct ib_aeth *h)
{
	return h->b[0] & AETH_TYPE_MASK;
}
static inline unsigned int aeth_value(const struct ib_aeth *h)
{
	return h->b[0] & AETH_VALUE_MASK;
}
static inline uint32_t aeth_msn(const struct ib_aeth *h)
{
	return ib_get24(h->b + 1);
}

static inline void aeth_set(struct ib_aeth *h, uint8_t syndrome, uint32_t msn)
{
	h->b[0] = syndrome;
	ib_put24(h->b + 1, msn & 0xffffffu);
}

/* ---------------------------------------------------------------- */
/* AtomicAckETH (IBA 9.5.3), 8 bytes: original remote data          */
/* ---------------------------------------------------------------- */

#define IB_ATMACK_BYTES 8u
struct ib_atmack {
	uint8_t b[IB_ATMACK_BYTES];
};
_Static_assert(sizeof(struct ib_atmack) == 8,
	       "AtomicAckETH is 8 bytes (IBA 9.5.3)");

static inline uint64_t atmack_orig(const struct ib_atmack *h)
{
	return ib_get64(h->b);
}

static inline void atmack_set(struct ib_atmack *h, uint64_t v)
{
	ib_put64(h->b, v);
}

/* ---------------------------------------------------------------- */
/* ImmDt (IBA 9.3.7) and IETH (IBA 9.3.8), 4 bytes each             */
/* ---------------------------------------------------------------- */

#define IB_IMMDT_BYTES 4u
#define IB_IETH_BYTES 4u
struct ib_immdt {
	uint8_t b[IB_IMMDT_BYTES];
};
struct ib_ieth {
	uint8_t b[IB_IETH_BYTES];
};
_Static_assert(sizeof(struct ib_immdt) == 4, "ImmDt is 4 bytes (IBA 9.3.7)");
_Static_assert(sizeof(struct ib_ieth) == 4, "IETH is 4 bytes (IBA 9.3.8)");

/* Immediate data: RNICPI's imm_data is a host-order number, carried
 * big-endian as every IBA header field (ibverbs users write htonl(n),
 * which puts the same bytes on the wire). */
static inline uint32_t immdt_get(const struct ib_immdt *h)
{
	return (uint32_t)h->b[0] << 24 | (uint32_t)h->b[1] << 16 |
	       (uint32_t)h->b[2] << 8 | h->b[3];
}
static inline void immdt_set(struct ib_immdt *h, uint32_t v)
{
	h->b[0] = (uint8_t)(v >> 24);
	h->b[1] = (uint8_t)(v >> 16);
	h->b[2] = (uint8_t)(v >> 8);
	h->b[3] = (uint8_t)v;
}

static inline uint32_t ieth_rkey(const struct ib_ieth *h)
{
	return ib_get32(h->b);
}

static inline void ieth_set(struct ib_ieth *h, uint32_t rkey)
{
	ib_put32(h->b, rkey);
}

/* ---------------------------------------------------------------- */
/* DETH, Datagram Extended Transport Header (IBA 9.3.2), 8 bytes:    */
/* Q_Key (32), Reserved (8), SrcQP (24)                             */
/* ---------------------------------------------------------------- */

#define IB_DETH_BYTES 8u
struct ib_deth {
	uint8_t b[IB_DETH_BYTES];
};
_Static_assert(sizeof(struct ib_deth) == 8, "DETH is 8 bytes (IBA 9.3.2)");

static inline uint32_t deth_qkey(const struct ib_deth *h)
{
	return ib_get32(h->b);
}

static inline uint32_t deth_sqpn(const struct ib_deth *h)
{
	return ib_get24(h->b + 5);
}

static inline void deth_set(struct ib_deth *h, uint32_t qkey, uint32_t sqpn)
{
	ib_put32(h->b, qkey);
	h->b[4] = 0;
	ib_put24(h->b + 5, sqpn & IB_QPN_MASK);
}

/* ---------------------------------------------------------------- */
/* GRH as a UD receive buffer shows it (IBA 8.3.1). On RoCEv2 over   */
/* IPv4 the 20-byte IPv4 header sits in the last 20 bytes of the 40  */
/* (as the kernel's rxe and rdma-core lay it out); over IPv6 the 40  */
/* bytes are the IPv6 header itself.                                 */
/* ---------------------------------------------------------------- */

struct ib_grh {
	uint8_t b[IB_GRH_BYTES];
};
_Static_assert(sizeof(struct ib_grh) == 40, "GRH is 40 bytes (IBA 8.3.1)");

/* ---------------------------------------------------------------- */
/* Opcodes (IBA 9.2.1, table 39). The top three bits give the        */
/* transport: RC 000, UC 001, RD 010, UD 011.                        */
/* ---------------------------------------------------------------- */

enum ib_opcode {
	IB_OPC_RC = 0x00,
	IB_OPC_UC = 0x20,
	IB_OPC_UD = 0x60,
	IB_OPC_TRANSPORT_MASK = 0xe0,

	IB_OP_SEND_FIRST = 0x00,
	IB_OP_SEND_MIDDLE = 0x01,
	IB_OP_SEND_LAST = 0x02,
	IB_OP_SEND_LAST_IMM = 0x03,
	IB_OP_SEND_ONLY = 0x04,
	IB_OP_SEND_ONLY_IMM = 0x05,
	IB_OP_WRITE_FIRST = 0x06,
	IB_OP_WRITE_MIDDLE = 0x07,
	IB_OP_WRITE_LAST = 0x08,
	IB_OP_WRITE_LAST_IMM = 0x09,
	IB_OP_WRITE_ONLY = 0x0a,
	IB_OP_WRITE_ONLY_IMM = 0x0b,
	IB_OP_READ_REQUEST = 0x0c,
	IB_OP_READ_RESP_FIRST = 0x0d,
	IB_OP_READ_RESP_MIDDLE = 0x0e,
	IB_OP_READ_RESP_LAST = 0x0f,
	IB_OP_READ_RESP_ONLY = 0x10,
	IB_OP_ACK = 0x11,
	IB_OP_ATOMIC_ACK = 0x12,
	IB_OP_CMP_SWAP = 0x13,
	IB_OP_FETCH_ADD = 0x14,
	IB_OP_SEND_LAST_INV = 0x16,
	IB_OP_SEND_ONLY_INV = 0x17,
};

#define IB_OPCODE_MAX 0x100

/* What an opcode carries and means; flags for struct ib_opcode_info. */
enum ib_op_flags {
	IB_F_RETH = 1u << 0,
	IB_F_AETH = 1u << 1,
	IB_F_ATMETH = 1u << 2,
	IB_F_ATMACK = 1u << 3,
	IB_F_IMMDT = 1u << 4,
	IB_F_IETH = 1u << 5,
	IB_F_DETH = 1u << 6,
	IB_F_PAYLOAD = 1u << 7, /* may carry payload */
	IB_F_REQ = 1u << 8,	/* request (requester -> responder) */
	IB_F_RESP = 1u << 9,	/* response (responder -> requester) */
	IB_F_SEND = 1u << 10,
	IB_F_WRITE = 1u << 11,
	IB_F_READ = 1u << 12,	/* READ request */
	IB_F_ATOMIC = 1u << 13, /* atomic request */
	IB_F_FIRST = 1u << 14,
	IB_F_MIDDLE = 1u << 15,
	IB_F_LAST = 1u << 16,
	IB_F_ONLY = IB_F_FIRST | IB_F_LAST,
	IB_F_COMP = 1u << 17,	/* completes a message at the responder */
	IB_F_RWR = 1u << 18,	/* consumes a receive WQE */
};

/*
 * One row of the opcode table: which headers follow the BTH, at which
 * offsets from the start of the BTH, and how long all headers are
 * together. A name of NULL marks an opcode we do not know (reserved, RD,
 * CNP, ...); such packets are dropped.
 */
struct ib_opcode_info {
	const char *name;
	uint32_t flags;
	uint8_t hdr_len;     /* BTH + extension headers */
	uint8_t reth_off;
	uint8_t aeth_off;
	uint8_t atmeth_off;
	uint8_t atmack_off;
	uint8_t immdt_off;
	uint8_t ieth_off;
	uint8_t deth_off;
};

extern const struct ib_opcode_info ib_opcode_table[IB_OPCODE_MAX];

/* The table row for @opcode, or NULL when the opcode is unknown. */
static inline const struct ib_opcode_info *ib_opcode(unsigned int opcode)
{
	if (opcode >= IB_OPCODE_MAX || !ib_opcode_table[opcode].name)
		return NULL;
	return &ib_opcode_table[opcode];
}

static inline const char *ib_opcode_name(unsigned int opcode)
{
	const struct ib_opcode_info *info = ib_opcode(opcode);

	return info ? info->name : "UNKNOWN";
}

/* ---------------------------------------------------------------- */
/* PSN arithmetic (IBA 9.7.1: 24-bit, modulo 2^24)                   */
/* ---------------------------------------------------------------- */

/* Signed distance a - b in the 24-bit PSN space: negative when a is
 * "before" b, i.e. within the half space behind it. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & IB_PSN_MASK;
}

#endif /* VP_RXE_IB_HDR_H */
