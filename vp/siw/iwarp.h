/* SPDX-License-Identifier: MIT */
/*
 * iwarp.h - the iWARP wire formats: MPA (RFC 5044, enhanced connection
 * set-up RFC 6581), DDP (RFC 5041) and RDMAP (RFC 5040).
 *
 * Every multi-byte field is big-endian on the wire and kept so in the
 * structures below; code reads and writes them only through the accessor
 * functions, which mask every sub-byte field. No bitfields, so the layout
 * does not depend on the compiler.
 */
#ifndef SIW_IWARP_H
#define SIW_IWARP_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* MPA Request / Reply frames (RFC 5044 §7.1, RFC 6581 §5)             */
/* ------------------------------------------------------------------ */

#define MPA_KEY_LEN 16
#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"
#define MPA_REV1 1
#define MPA_REV2 2
/* RFC 5044 §7.1: "PD_Length ... MUST NOT be larger than 512". */
#define MPA_MAX_PRIVATE_DATA 512

/* Byte 16 of the frame: M C R and, RFC 6581 §5 / Linux siw, the
 * "enhanced" flag that says the first 4 bytes of private data carry
 * IRD/ORD. 0x08 is Linux siw's "GSO_EXP" (I accept FPDUs larger than
 * the MSS); we give it that meaning too. */
#define MPA_FLAG_MARKERS 0x80u
#define MPA_FLAG_CRC 0x40u
#define MPA_FLAG_REJECT 0x20u
#define MPA_FLAG_ENHANCED 0x10u
#define MPA_FLAG_LARGE_FPDU 0x08u
/* hostrdma only: a responder that agreed to large FPDUs sets this in its
 * Reply. Linux siw echoes the Request's bits in its Reply, so a bit the
 * Request never carries proves that the responder is one of ours. */
#define MPA_FLAG_HOSTRDMA 0x04u

struct mpa_rr {
	uint8_t key[MPA_KEY_LEN];
	uint8_t flags;	    /* MPA_FLAG_* */
	uint8_t rev;	    /* MPA revision */
	uint16_t pd_len_be; /* private data length */
} __attribute__((packed));
_Static_assert(sizeof(struct mpa_rr) == 20, "MPA Req/Rep header is 20 bytes");

static inline uint16_t mpa_rr_pd_len(const struct mpa_rr *rr)
{
	return be16toh(rr->pd_len_be);
}

static inline void mpa_rr_set_pd_len(struct mpa_rr *rr, uint16_t len)
{
	rr->pd_len_be = htobe16(len);
}

static inline bool mpa_rr_is_request(const struct mpa_rr *rr)
{
	return memcmp(rr->key, MPA_KEY_REQ, MPA_KEY_LEN) == 0;
}

static inline bool mpa_rr_is_reply(const struct mpa_rr *rr)
{
	return memcmp(rr->key, MPA_KEY_REP, MPA_KEY_LEN) == 0;
}

/* Fill a frame header: @request chooses the key. */
static inline void mpa_rr_init(struct mpa_rr *rr, bool request, uint8_t rev,
			       uint8_t flags, uint16_t pd_len)
{
	memcpy(rr->key, request ? MPA_KEY_REQ : MPA_KEY_REP, MPA_KEY_LEN);
	rr->flags = flags;
	rr->rev = rev;
	mpa_rr_set_pd_len(rr, pd_len);
}

/*
 * RFC 6581 §5: the enhanced-mode private data starts with IRD and ORD,
 * 14 bits each. In the IRD word bit 15 is the peer-to-peer flag (A) and
 * bit 14 (B) asks for a zero-length Send as RTR (not supported here, nor
 * by Linux siw); in the ORD word bit 15 (C) is zero-length Write RTR and
 * bit 14 (D) zero-length Read RTR.
 */
#define MPA_V2_P2P 0x8000u
#define MPA_V2_SEND_RTR 0x4000u
#define MPA_V2_WRITE_RTR 0x8000u
#define MPA_V2_READ_RTR 0x4000u
#define MPA_V2_IRD_ORD_MASK 0x3fffu

struct mpa_v2_data {
	uint16_t ird_be;
	uint16_t ord_be;
} __attribute__((packed));
_Static_assert(sizeof(struct mpa_v2_data) == 4, "MPA v2 IRD/ORD is 4 bytes");

static inline uint16_t mpa_v2_ird(const struct mpa_v2_data *v)
{
	return be16toh(v->ird_be) & MPA_V2_IRD_ORD_MASK;
}

static inline uint16_t mpa_v2_ord(const struct mpa_v2_data *v)
{
	return be16toh(v->ord_be) & MPA_V2_IRD_ORD_MASK;
}

static inline bool mpa_v2_p2p(const struct mpa_v2_data *v)
{
	return be16toh(v->ird_be) & MPA_V2_P2P;
}

/* The RTR types (MPA_V2_WRITE_RTR / MPA_V2_READ_RTR) in the ORD word. */
static inline uint16_t mpa_v2_rtr(const struct mpa_v2_data *v)
{
	return be16toh(v->ord_be) & (MPA_V2_WRITE_RTR | MPA_V2_READ_RTR);
}

static inline void mpa_v2_set(struct mpa_v2_data *v, uint16_t ird,
			      uint16_t ord, bool p2p, uint16_t rtr)
{
	v->ird_be = htobe16((ird & MPA_V2_IRD_ORD_MASK) |
			    (p2p ? MPA_V2_P2P : 0));
	v->ord_be = htobe16((ord & MPA_V2_IRD_ORD_MASK) |
			    (rtr & (MPA_V2_WRITE_RTR | MPA_V2_READ_RTR)));
}

/* ------------------------------------------------------------------ */
/* FPDU framing (RFC 5044 §4)                                          */
/* ------------------------------------------------------------------ */

#define MPA_HDR_SIZE 2 /* ULPDU_Length */
#define MPA_CRC_SIZE 4

/* Pad bytes after a ULPDU of @ulpdu_len so that the MPA header, ULPDU and
 * pad are a multiple of 4 (RFC 5044 §4.1 "PAD"). */
static inline uint32_t mpa_pad_len(uint32_t ulpdu_len)
{
	return (4 - ((ulpdu_len + MPA_HDR_SIZE) & 3)) & 3;
}

/* Bytes of a whole FPDU on the wire (no markers). */
static inline uint32_t mpa_fpdu_len(uint32_t ulpdu_len)
{
	return MPA_HDR_SIZE + ulpdu_len + mpa_pad_len(ulpdu_len) +
	       MPA_CRC_SIZE;
}

/* The CRC32c goes on the wire least significant byte first, as iSCSI
 * sends it (RFC 5044 §4.1, RFC 3720 §12.1; what Linux siw sends). */
static inline void mpa_crc_put(uint8_t out[4], uint32_t crc)
{
	out[0] = crc & 0xff;
	out[1] = (crc >> 8) & 0xff;
	out[2] = (crc >> 16) & 0xff;
	out[3] = crc >> 24;
}

static inline uint32_t mpa_crc_get(const uint8_t in[4])
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 |
	       (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

/* ------------------------------------------------------------------ */
/* DDP and RDMAP control (RFC 5041 §4, RFC 5040 §4.2)                   */
/* ------------------------------------------------------------------ */

#define DDP_VERSION 1
#define RDMAP_VERSION 1

/* DDP control byte: T L Rsvd(4) DV(2). */
#define DDP_FLAG_TAGGED 0x80u
#define DDP_FLAG_LAST 0x40u
#define DDP_MASK_RSVD 0x3cu
#define DDP_MASK_VERSION 0x03u
/* RDMAP control byte: RV(2) Rsvd(2) Opcode(4). */
#define RDMAP_MASK_VERSION 0xc0u
#define RDMAP_MASK_RSVD 0x30u
#define RDMAP_MASK_OPCODE 0x0fu

/* RFC 5040 §4.2 Table 1. */
enum rdmap_opcode {
	RDMAP_RDMA_WRITE = 0x0,
	RDMAP_RDMA_READ_REQ = 0x1,
	RDMAP_RDMA_READ_RESP = 0x2,
	RDMAP_SEND = 0x3,
	RDMAP_SEND_INV = 0x4,
	RDMAP_SEND_SE = 0x5,
	RDMAP_SEND_SE_INV = 0x6,
	RDMAP_TERMINATE = 0x7,
	RDMAP_OPCODE_COUNT = 0x8,
};

/* RFC 5040 §5.1: untagged queues. */
enum ddp_queue {
	DDP_QN_SEND = 0,
	DDP_QN_READ_REQ = 1,
	DDP_QN_TERMINATE = 2,
	DDP_QN_COUNT = 3,
};

/*
 * What RFC 5040 and RFC 5041 say about each RDMAP opcode, in one table
 * (siw_opcode.c): every per-opcode decision of the transmit and receive
 * paths reads it rather than keeping a switch of its own.
 */
#define RDMAP_OPF_TAGGED 0x01u	   /* DDP tagged model (RFC 5040 §4.2) */
#define RDMAP_OPF_INVALIDATE 0x02u /* carries an STag to invalidate
				    * (RFC 5040 §4.3, §6.10) */
#define RDMAP_OPF_SOLICITED 0x04u  /* Solicited Event (RFC 5040 §5.4) */
#define RDMAP_OPF_RECV_WQE 0x08u   /* placed into an untagged buffer, a
				    * posted receive (RFC 5040 §5.2) */
#define RDMAP_OPF_READ_RESP 0x10u  /* answers one of our Read Requests:
				    * lands in that Read's sink (§4.5) */
#define RDMAP_OPF_READ_REQ 0x20u   /* asks for a Read Response; its RDMAP
				    * header follows the DDP header (§4.4) */

struct rdmap_opcode_info {
	const char *name;  /* RFC 5040 §4.2 Table 1, for log lines */
	uint8_t hdr_len;   /* bytes before the payload, MPA length included */
	uint8_t ddp_qn;	   /* enum ddp_queue when untagged (RFC 5040 §5.1) */
	uint8_t flags;	   /* RDMAP_OPF_* */
};

/* The facts of @opcode (the 4-bit field of the RDMAP control byte), or
 * NULL for one RFC 5040 does not define. Static storage. */
const struct rdmap_opcode_info *rdmap_opcode_info(uint8_t opcode);

static inline bool rdmap_opcode_tagged(const struct rdmap_opcode_info *op)
{
	return op->flags & RDMAP_OPF_TAGGED;
}

/* The first 4 bytes of every FPDU: MPA ULPDU length, DDP and RDMAP
 * control. */
struct iwarp_ctrl {
	uint16_t mpa_len_be;
	uint8_t ddp;
	uint8_t rdmap;
} __attribute__((packed));
_Static_assert(sizeof(struct iwarp_ctrl) == 4, "iWARP control is 4 bytes");

static inline uint16_t iwarp_mpa_len(const struct iwarp_ctrl *c)
{
	return be16toh(c->mpa_len_be);
}

static inline void iwarp_set_mpa_len(struct iwarp_ctrl *c, uint16_t len)
{
	c->mpa_len_be = htobe16(len);
}

static inline bool ddp_tagged(const struct iwarp_ctrl *c)
{
	return c->ddp & DDP_FLAG_TAGGED;
}

static inline bool ddp_last(const struct iwarp_ctrl *c)
{
	return c->ddp & DDP_FLAG_LAST;
}

static inline uint8_t ddp_version(const struct iwarp_ctrl *c)
{
	return c->ddp & DDP_MASK_VERSION;
}

static inline uint8_t rdmap_version(const struct iwarp_ctrl *c)
{
	return (c->rdmap & RDMAP_MASK_VERSION) >> 6;
}

static inline uint8_t rdmap_opcode(const struct iwarp_ctrl *c)
{
	return c->rdmap & RDMAP_MASK_OPCODE;
}

/* Control bytes for @opcode; tagged follows from the opcode (RFC 5040
 * §4.2: Write and Read Response are tagged, the rest untagged; an opcode
 * RFC 5040 does not define is sent untagged). */
static inline void iwarp_ctrl_init(struct iwarp_ctrl *c, uint8_t opcode,
				   bool last)
{
	const struct rdmap_opcode_info *op = rdmap_opcode_info(opcode);
	bool tagged = op && rdmap_opcode_tagged(op);

	c->ddp = (tagged ? DDP_FLAG_TAGGED : 0) | (last ? DDP_FLAG_LAST : 0) |
		 DDP_VERSION;
	c->rdmap = (RDMAP_VERSION << 6) | (opcode & RDMAP_MASK_OPCODE);
}

/* Tagged DDP header (RFC 5041 §4.3): STag and Tagged Offset. */
struct iwarp_tagged_hdr {
	struct iwarp_ctrl ctrl;
	uint32_t stag_be;
	uint64_t to_be;
} __attribute__((packed));
_Static_assert(sizeof(struct iwarp_tagged_hdr) == 16, "tagged hdr 2+14");

/* Untagged DDP header (RFC 5041 §4.4) with RDMAP's 32-bit field in front
 * of the QN (reserved for Send, Invalidate STag for Send with Invalidate,
 * RFC 5040 §4.3). */
struct iwarp_untagged_hdr {
	struct iwarp_ctrl ctrl;
	uint32_t inval_stag_be;
	uint32_t qn_be;
	uint32_t msn_be;
	uint32_t mo_be;
} __attribute__((packed));
_Static_assert(sizeof(struct iwarp_untagged_hdr) == 20, "untagged hdr 2+18");

/* RDMA Read Request header (RFC 5040 §4.4), after an untagged DDP
 * header on queue 1. */
struct rdmap_read_req {
	uint32_t sink_stag_be;
	uint64_t sink_to_be;
	uint32_t size_be;
	uint32_t src_stag_be;
	uint64_t src_to_be;
} __attribute__((packed));
_Static_assert(sizeof(struct rdmap_read_req) == 28, "Read Request is 28");

struct iwarp_read_req_hdr {
	struct iwarp_untagged_hdr u;
	struct rdmap_read_req rreq;
} __attribute__((packed));
_Static_assert(sizeof(struct iwarp_read_req_hdr) == 48, "RREQ FPDU hdr");

/* Terminate Control (RFC 5040 §4.8): Layer(4) EType(4) Error Code(8)
 * HdrCt M D R (3) Reserved(13). */
#define TERM_FLAG_M 0x8000u /* DDP Segment Length valid */
#define TERM_FLAG_D 0x4000u /* Terminated DDP Header included */
#define TERM_FLAG_R 0x2000u /* Terminated RDMA Header included */

struct rdmap_term {
	uint32_t ctrl_be;
} __attribute__((packed));
_Static_assert(sizeof(struct rdmap_term) == 4, "Terminate Control is 4");

static inline uint8_t rdmap_term_layer(const struct rdmap_term *t)
{
	return be32toh(t->ctrl_be) >> 28;
}

static inline uint8_t rdmap_term_etype(const struct rdmap_term *t)
{
	return (be32toh(t->ctrl_be) >> 24) & 0xf;
}

static inline uint8_t rdmap_term_ecode(const struct rdmap_term *t)
{
	return (be32toh(t->ctrl_be) >> 16) & 0xff;
}

static inline uint16_t rdmap_term_flags(const struct rdmap_term *t)
{
	return be32toh(t->ctrl_be) &
	       (TERM_FLAG_M | TERM_FLAG_D | TERM_FLAG_R);
}

static inline void rdmap_term_set(struct rdmap_term *t, uint8_t layer,
				  uint8_t etype, uint8_t ecode, uint16_t flags)
{
	t->ctrl_be = htobe32((uint32_t)(layer & 0xf) << 28 |
			     (uint32_t)(etype & 0xf) << 24 |
			     (uint32_t)ecode << 16 |
			     (flags & (TERM_FLAG_M | TERM_FLAG_D | TERM_FLAG_R)));
}

/* Longest header of any FPDU we receive: Read Request. Used for the
 * receive header buffer. */
#define IWARP_MAX_HDR sizeof(struct iwarp_read_req_hdr)

/*
 * The Terminate message body: control, then (M) the terminated FPDU's
 * DDP Segment Length = its MPA ULPDU length, (D) its DDP header, (R) its
 * RDMAP header when it was a Read Request. RFC 5040 §4.8. The terminated
 * DDP header is 14 bytes tagged, 18 untagged (without the 2-byte length).
 */
#define TERM_DDP_TAGGED_LEN 14
#define TERM_DDP_UNTAGGED_LEN 18
#define TERM_MAX_BODY (4 + 2 + TERM_DDP_UNTAGGED_LEN + \
		       sizeof(struct rdmap_read_req))

/* Terminate layers (RFC 5040 §7.4). */
enum term_layer {
	TERM_LAYER_RDMAP = 0x0,
	TERM_LAYER_DDP = 0x1,
	TERM_LAYER_LLP = 0x2, /* MPA */
};

/* RDMAP error types and codes (RFC 5040 §7.4.1). */
enum rdmap_etype {
	RDMAP_ETYPE_CATASTROPHIC = 0x0,
	RDMAP_ETYPE_REMOTE_PROT = 0x1,
	RDMAP_ETYPE_REMOTE_OP = 0x2,
};

enum rdmap_ecode {
	RDMAP_ECODE_INVALID_STAG = 0x00,
	RDMAP_ECODE_BASE_BOUNDS = 0x01,
	RDMAP_ECODE_ACCESS_RIGHTS = 0x02,
	RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	RDMAP_ECODE_TO_WRAP = 0x04,
	RDMAP_ECODE_VERSION = 0x05,
	RDMAP_ECODE_OPCODE = 0x06,
	RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
	RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
	RDMAP_ECODE_CANNOT_INVALIDATE = 0x09,
	RDMAP_ECODE_UNSPECIFIED = 0xff,
};

/* DDP error types and codes (RFC 5041 §7.2). */
enum ddp_etype {
	DDP_ETYPE_CATASTROPHIC = 0x0,
	DDP_ETYPE_TAGGED = 0x1,
	DDP_ETYPE_UNTAGGED = 0x2,
};

enum ddp_ecode {
	DDP_ECODE_CATASTROPHIC = 0x00,
	DDP_ECODE_T_INVALID_STAG = 0x00,
	DDP_ECODE_T_BASE_BOUNDS = 0x01,
	DDP_ECODE_T_STAG_NOT_ASSOC = 0x02,
	DDP_ECODE_T_TO_WRAP = 0x03,
	DDP_ECODE_T_VERSION = 0x04,
	DDP_ECODE_UT_INVALID_QN = 0x01,
	DDP_ECODE_UT_NO_BUFFER = 0x02,
	DDP_ECODE_UT_MSN_RANGE = 0x03,
	DDP_ECODE_UT_INVALID_MO = 0x04,
	DDP_ECODE_UT_TOO_LONG = 0x05,
	DDP_ECODE_UT_VERSION = 0x06,
};

/* MPA error codes (RFC 5044 §8, RFC 6581 §7); error type is 0. */
enum mpa_ecode {
	MPA_ECODE_TCP_LOST = 0x01,
	MPA_ECODE_CRC = 0x02,
	MPA_ECODE_MARKER = 0x03,
	MPA_ECODE_BAD_REQ_REP = 0x04,
	MPA_ECODE_LOCAL_CATASTROPHIC = 0x05,
	MPA_ECODE_INSUFFICIENT_IRD = 0x06,
	MPA_ECODE_NO_MATCHING_RTR = 0x07,
};

/* Header bytes (MPA length included) that an FPDU with @opcode starts
 * with; 0 for an unknown opcode. */
static inline uint32_t iwarp_hdr_len(uint8_t opcode)
{
	const struct rdmap_opcode_info *op = rdmap_opcode_info(opcode);

	return op ? op->hdr_len : 0;
}

#endif /* SIW_IWARP_H */
