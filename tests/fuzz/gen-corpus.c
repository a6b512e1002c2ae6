/* SPDX-License-Identifier: MIT */
/*
 * gen-corpus DIR: write the seed inputs of every fuzz target into
 * DIR/TARGET/ (`make fuzz-corpus` writes tests/fuzz/corpus). The seeds
 * are the byte-exact vectors of the Check suites and the captures of
 * tests/data (the Linux kernel's rdma_rxe frames and CM MADs), framed the
 * way each target reads its input (see the comment at the top of each
 * tests/fuzz/fuzz_*.c) and aimed at the harness's fixed STags, R_Keys,
 * PSNs and listeners.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cm/ib_mad.h"
#include "tests/data/ib_cm_kernel_mads.h"
#include "tests/data/ib_cm_kernel_sidr.h"
#include "tests/data/rxe_kernel_frames.h"
#include "tests/fuzz/fuzz_rxe.h"
#include "tests/fuzz/fuzz_siw.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"
#include "vp/rxe/ib_hdr.h"
#include "vp/rxe/rxe_icrc.h"
#include "vp/siw/iwarp.h"

uint32_t siw_crc32c(uint32_t crc, const void *buf, size_t len);

static const char *out_dir;

/* A seed being built. */
struct seed {
	uint8_t b[65536];
	size_t n;
};

static void put(struct seed *s, const void *p, size_t len)
{
	if (s->n + len > sizeof(s->b)) {
		fprintf(stderr, "gen-corpus: seed too long\n");
		exit(1);
	}
	if (len)
		memcpy(s->b + s->n, p, len);
	s->n += len;
}

static void put8(struct seed *s, uint8_t v)
{
	put(s, &v, 1);
}

static void put16(struct seed *s, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	put(s, b, 2);
}

static void save(const char *target, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* ------------------------------------------------------------------ */
/* iWARP                                                               */
/* ------------------------------------------------------------------ */

/* One FPDU: @hdr (@hdr_len bytes, its MPA length set here), @payload,
 * pad, and the CRC (right, or zero when !@crc). */
static void fpdu(struct seed *s, void *hdr, size_t hdr_len,
		 const void *payload, size_t len, bool crc)
{
	uint8_t trailer[8] = { 0 };
	uint32_t ulpdu = (uint32_t)(hdr_len - MPA_HDR_SIZE + len);
	uint32_t pad = mpa_pad_len(ulpdu), c;

	if (!payload)
		payload = "";
	iwarp_set_mpa_len(hdr, (uint16_t)ulpdu);
	c = siw_crc32c(0, hdr, hdr_len);
	c = siw_crc32c(c, payload, len);
	c = siw_crc32c(c, trailer, pad);
	if (crc)
		mpa_crc_put(trailer + pad, c);
	put(s, hdr, hdr_len);
	put(s, payload, len);
	put(s, trailer, pad + MPA_CRC_SIZE);
}

static void send_fpdu(struct seed *s, uint8_t op, bool last, uint32_t msn,
		      uint32_t mo, uint32_t inv, const void *p, size_t len,
		      bool crc)
{
	struct iwarp_untagged_hdr h;

	memset(&h, 0, sizeof(h));
	iwarp_ctrl_init(&h.ctrl, op, last);
	h.inval_stag_be = htobe32(inv);
	h.qn_be = htobe32(op == RDMAP_TERMINATE ? DDP_QN_TERMINATE
						: DDP_QN_SEND);
	h.msn_be = htobe32(msn);
	h.mo_be = htobe32(mo);
	fpdu(s, &h, sizeof(h), p, len, crc);
}

static void tagged_fpdu(struct seed *s, uint8_t op, bool last,
			uint32_t stag, uint64_t to, const void *p, size_t len,
			bool crc)
{
	struct iwarp_tagged_hdr h;

	iwarp_ctrl_init(&h.ctrl, op, last);
	h.stag_be = htobe32(stag);
	h.to_be = htobe64(to);
	fpdu(s, &h, sizeof(h), p, len, crc);
}

static void read_req_fpdu(struct seed *s, uint32_t msn, uint32_t src_stag,
			  uint64_t src_to, uint32_t size, bool crc)
{
	struct iwarp_read_req_hdr h;

	memset(&h, 0, sizeof(h));
	iwarp_ctrl_init(&h.u.ctrl, RDMAP_RDMA_READ_REQ, true);
	h.u.qn_be = htobe32(DDP_QN_READ_REQ);
	h.u.msn_be = htobe32(msn);
	h.rreq.sink_stag_be = htobe32(0x5000);
	h.rreq.sink_to_be = htobe64(0x7000);
	h.rreq.size_be = htobe32(size);
	h.rreq.src_stag_be = htobe32(src_stag);
	h.rreq.src_to_be = htobe64(src_to);
	fpdu(s, &h, sizeof(h), NULL, 0, crc);
}

/* Payload bytes: a sentence, again and again (text_init). */
static uint8_t text[512];

static void text_init(void)
{
	static const char line[] = "hostrdma fuzz seed: the quick brown fox "
				   "jumps over the lazy dog. ";

	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (uint8_t)line[i % (sizeof(line) - 1)];
}

/* The FPDUs a peer sends to a responder: Sends of each kind, a Send
 * in two segments, Writes (good and refused), a Read Request. */
static void responder_fpdus(struct seed *s, bool crc, bool bad)
{
	static uint8_t big[1500];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	send_fpdu(s, RDMAP_SEND, true, 1, 0, 0, text, 10, crc);
	send_fpdu(s, RDMAP_SEND_SE, false, 2, 0, 0, text, 100, crc);
	send_fpdu(s, RDMAP_SEND_SE, true, 2, 100, 0, text, 50, crc);
	tagged_fpdu(s, RDMAP_RDMA_WRITE, true, FZ_STAG_RW, FZ_TO_RW + 100,
		    big, sizeof(big), crc);
	read_req_fpdu(s, 1, FZ_STAG_RW, FZ_TO_RW, 512, crc);
	send_fpdu(s, RDMAP_SEND_INV, true, 3, 0, FZ_STAG_RW, text, 7, crc);
	if (bad) {
		tagged_fpdu(s, RDMAP_RDMA_WRITE, true, FZ_STAG_RO, FZ_TO_RO,
			    text, 16, crc);
	}
}

static void gen_siw(void)
{
	struct seed s;
	uint8_t frame[64], body[64];
	struct rdmap_term t;
	size_t n;

	/* fuzz_siw_mpa: cfg, ird, ord, pd_len (2), cut, stream */
#define MPA_PRE(cfg, cut)                                                   \
	do {                                                                \
		s.n = 0;                                                    \
		put8(&s, cfg);                                              \
		put8(&s, 4);                                                \
		put8(&s, 4);                                                \
		put16(&s, 8);                                               \
		put8(&s, cut);                                              \
	} while (0)
	/* The Request of the siw-wire vector: rev 2, CRC, IRD 16 ORD 8,
	 * peer-to-peer with a Read RTR. */
	MPA_PRE(FZ_SIW_PLAIN, 0);
	put(&s, "MPA ID Req Frame\x50\x02\x00\x04\x80\x10\x40\x08", 24);
	read_req_fpdu(&s, 1, FZ_STAG_RW, FZ_TO_RW, 0, true);
	responder_fpdus(&s, true, false);
	save("fuzz_siw_mpa", "req-v2-crc-p2p-read", &s);
	MPA_PRE(FZ_SIW_PLAIN, 0);
	n = fz_mpa_frame(frame, true, true, 0, 4, 4, 0);
	put(&s, frame, n);
	responder_fpdus(&s, false, true);
	save("fuzz_siw_mpa", "req-v2", &s);
	MPA_PRE(FZ_SIW_PLAIN, 7);
	n = fz_mpa_frame(frame, true, true, 0, 4, 4, 0);
	put(&s, frame, n);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_mpa", "req-v2-cut", &s);
	MPA_PRE(FZ_SIW_REV1, 0);
	n = fz_mpa_frame(frame, true, false, 0, 0, 0, 0);
	put(&s, frame, n);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_mpa", "req-v1", &s);
	MPA_PRE(FZ_SIW_CRC, 0);
	n = fz_mpa_frame(frame, true, true, MPA_FLAG_LARGE_FPDU, 16, 16, 0);
	put(&s, frame, n);
	responder_fpdus(&s, true, true);
	save("fuzz_siw_mpa", "req-v2-devcrc-large", &s);
	MPA_PRE(FZ_SIW_PLAIN, 0);
	n = fz_mpa_frame(frame, true, true, 0, 4, 4, MPA_V2_WRITE_RTR);
	put(&s, frame, n);
	tagged_fpdu(&s, RDMAP_RDMA_WRITE, true, 1, 0, NULL, 0, false);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_mpa", "req-p2p-write-rtr", &s);
	MPA_PRE(FZ_SIW_STRICT, 0);
	n = fz_mpa_frame(frame, true, true, MPA_FLAG_CRC, 4, 4, 0);
	put(&s, frame, n);
	save("fuzz_siw_mpa", "req-crc-strict", &s);
	MPA_PRE(FZ_SIW_PLAIN | 0x10, 0);
	{
		struct mpa_rr rr;
		struct mpa_v2_data v2;

		mpa_rr_init(&rr, true, MPA_REV2, MPA_FLAG_ENHANCED, 4 + 20);
		mpa_v2_set(&v2, 2, 2, false, 0);
		put(&s, &rr, sizeof(rr));
		put(&s, &v2, sizeof(v2));
		put(&s, text, 20);
	}
	save("fuzz_siw_mpa", "req-pdata-reject", &s);
	MPA_PRE(FZ_SIW_PLAIN, 0);
	n = fz_mpa_frame(frame, true, true, MPA_FLAG_MARKERS, 4, 4, 0);
	put(&s, frame, n);
	save("fuzz_siw_mpa", "req-markers", &s);
	/* Initiator: the Reply of the interop README (Linux siw, rev 1,
	 * CRC), then a Read Response to our Read and a Send. */
	MPA_PRE(0x08 | 0x40 | 0x80 | FZ_SIW_PLAIN, 0);
	put(&s, "MPA ID Rep Frame\x40\x01\x00\x00", 20);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, true, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF, text, 60, true);
	send_fpdu(&s, RDMAP_SEND, true, 1, 0, 0, text, 10, true);
	save("fuzz_siw_mpa", "rep-linux-v1-crc", &s);
	MPA_PRE(0x08 | FZ_SIW_PLAIN, 0);
	n = fz_mpa_frame(frame, false, true, 0, 4, 4, 0);
	put(&s, frame, n);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, false, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF, text, 40, false);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, true, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF + 40, text, 24, false);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_mpa", "rep-v2", &s);
	MPA_PRE(0x08 | 0x20 | FZ_SIW_PLAIN, 0);
	n = fz_mpa_frame(frame, false, true, 0, 4, 4, MPA_V2_WRITE_RTR);
	put(&s, frame, n);
	save("fuzz_siw_mpa", "rep-p2p", &s);
	MPA_PRE(0x08 | FZ_SIW_PLAIN, 0);
	{
		struct mpa_rr rr;
		struct mpa_v2_data v2;

		mpa_rr_init(&rr, false, MPA_REV2,
			    MPA_FLAG_ENHANCED | MPA_FLAG_REJECT, 4 + 12);
		mpa_v2_set(&v2, 0, 0, false, 0);
		put(&s, &rr, sizeof(rr));
		put(&s, &v2, sizeof(v2));
		put(&s, "go away, no", 12);
	}
	save("fuzz_siw_mpa", "rep-reject", &s);
	MPA_PRE(0x08 | FZ_SIW_P2P_READ, 0);
	n = fz_mpa_frame(frame, false, true, 0, 200, 200, MPA_V2_READ_RTR);
	put(&s, frame, n);
	save("fuzz_siw_mpa", "rep-ird-over", &s);

	/* fuzz_siw_rx: cfg, cut, FPDUs */
	s.n = 0;
	put8(&s, 0);
	put8(&s, 0);
	responder_fpdus(&s, false, true);
	save("fuzz_siw_rx", "responder", &s);
	s.n = 0;
	put8(&s, 0x08);
	put8(&s, 0x35);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_rx", "responder-srq-cut", &s);
	s.n = 0;
	put8(&s, 0x01 | 0x20);
	put8(&s, 0);
	responder_fpdus(&s, true, true);
	save("fuzz_siw_rx", "responder-crc", &s);
	s.n = 0;
	put8(&s, 0x02);
	put8(&s, 0);
	tagged_fpdu(&s, RDMAP_RDMA_WRITE, true, 1, 0, NULL, 0, false);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_rx", "responder-write-rtr", &s);
	s.n = 0;
	put8(&s, 0x03);
	put8(&s, 0);
	read_req_fpdu(&s, 1, 0, 0, 0, false);
	send_fpdu(&s, RDMAP_SEND, true, 1, 0, 0, text, 10, false);
	save("fuzz_siw_rx", "responder-read-rtr", &s);
	s.n = 0;
	put8(&s, 0x04 | 0x10);
	put8(&s, 0);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, false, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF, text, 40, false);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, true, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF + 40, text, 24, false);
	responder_fpdus(&s, false, false);
	save("fuzz_siw_rx", "initiator-read-response", &s);
	s.n = 0;
	put8(&s, 0x04 | 0x10 | 0x40 | 0x20);
	put8(&s, 0x11);
	tagged_fpdu(&s, RDMAP_RDMA_READ_RESP, true, FZ_STAG_LOCAL,
		    FZ_TO_LOCAL + FZ_READ_SINK_OFF, text, 64, true);
	responder_fpdus(&s, true, true);
	save("fuzz_siw_rx", "initiator-crc-cut", &s);
	/* A stream of many small FPDUs (siw-hostile's stream test). */
	s.n = 0;
	put8(&s, 0x80);
	put8(&s, 0x5);
	for (uint32_t i = 0; i < 40; i++)
		tagged_fpdu(&s, RDMAP_RDMA_WRITE, true, FZ_STAG_RW,
			    FZ_TO_RW + i * 97 % 3000, text, i % 61, false);
	save("fuzz_siw_rx", "write-stream", &s);

	/* fuzz_siw_term: cfg, MSN, body */
	s.n = 0;
	put8(&s, 0x04);
	put8(&s, 1);
	rdmap_term_set(&t, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
		       DDP_ECODE_T_BASE_BOUNDS, TERM_FLAG_M | TERM_FLAG_D);
	memcpy(body, &t, 4);
	body[4] = 0;
	body[5] = 30;
	{
		struct iwarp_tagged_hdr h;

		iwarp_ctrl_init(&h.ctrl, RDMAP_RDMA_WRITE, true);
		h.stag_be = htobe32(0x1234);
		h.to_be = htobe64(0x9000);
		memcpy(body + 4, &h, sizeof(h));
		iwarp_set_mpa_len((struct iwarp_ctrl *)(body + 4), 30);
	}
	put(&s, body, 4 + 16);
	save("fuzz_siw_term", "ddp-tagged-bounds", &s);
	s.n = 0;
	put8(&s, 0x05);
	put8(&s, 1);
	rdmap_term_set(&t, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
		       RDMAP_ECODE_INVALID_STAG,
		       TERM_FLAG_M | TERM_FLAG_D | TERM_FLAG_R);
	memcpy(body, &t, 4);
	{
		struct iwarp_read_req_hdr h;

		memset(&h, 0, sizeof(h));
		iwarp_ctrl_init(&h.u.ctrl, RDMAP_RDMA_READ_REQ, true);
		iwarp_set_mpa_len(&h.u.ctrl, 46);
		h.u.qn_be = htobe32(1);
		h.rreq.size_be = htobe32(FZ_READ_LEN);
		h.rreq.src_stag_be = htobe32(FZ_READ_RSTAG);
		memcpy(body + 4, &h, sizeof(h));
	}
	put(&s, body, 4 + 48);
	save("fuzz_siw_term", "rdmap-read-invalid-stag", &s);
	s.n = 0;
	put8(&s, 0x06 | 0x10);
	put8(&s, 1);
	rdmap_term_set(&t, TERM_LAYER_LLP, 0, MPA_ECODE_CRC, 0);
	put(&s, &t, 4);
	save("fuzz_siw_term", "llp-crc", &s);
	s.n = 0;
	put8(&s, 0x24);
	put8(&s, 7);
	rdmap_term_set(&t, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
		       DDP_ECODE_UT_NO_BUFFER, TERM_FLAG_M | TERM_FLAG_D);
	memcpy(body, &t, 4);
	memset(body + 4, 0, 20);
	iwarp_ctrl_init((struct iwarp_ctrl *)(body + 4), RDMAP_SEND, true);
	put(&s, body, 4 + 20);
	save("fuzz_siw_term", "ddp-untagged-no-buffer-cut", &s);
}

/* ------------------------------------------------------------------ */
/* RoCE                                                                */
/* ------------------------------------------------------------------ */

/* The BTH .. ICRC of a kernel frame with @opcode (first of its family),
 * NULL when the capture has none. */
static const uint8_t *kframe_or_null(unsigned int opcode, int family,
				     uint32_t *len)
{
	for (size_t i = 0; i < sizeof(rxe_kernel_frames) /
				       sizeof(rxe_kernel_frames[0]); i++) {
		const struct rxe_kernel_frame *f = &rxe_kernel_frames[i];
		uint32_t ip = f->family == 4 ? 20 : 40;

		if (f->opcode != opcode || (family && f->family != family))
			continue;
		*len = f->len - ip - 8;
		return f->ip + ip + 8;
	}
	return NULL;
}

static const uint8_t *kframe(unsigned int opcode, int family, uint32_t *len)
{
	const uint8_t *k = kframe_or_null(opcode, family, len);

	if (!k) {
		fprintf(stderr, "gen-corpus: no kernel frame of opcode "
			"0x%02x\n", opcode);
		exit(1);
	}
	return k;
}

/* A record: the kernel's frame of @opcode with @psn, its payload cut to
 * @paylen (-1: as it is), and its RETH / AtomicETH aimed at @rkey/@va. */
static void rec(struct seed *s, uint8_t ctl, unsigned int opcode,
		uint32_t psn, int paylen, uint32_t rkey, uint64_t va,
		uint32_t dma_len)
{
	const struct ib_opcode_info *op = ib_opcode(opcode);
	uint32_t len, pad, have;
	const uint8_t *k = kframe_or_null(opcode, 0, &len);
	uint8_t p[4200];

	if (k) {
		memcpy(p, k, len);
	} else {
		/* Not in the capture: the kernel's BTH fields, our opcode. */
		memset(p, 0, sizeof(p));
		bth_init((struct ib_bth *)p, (uint8_t)opcode, false, false, 0,
			 IB_DEFAULT_PKEY, 0x11, true, 0);
		for (uint32_t i = op->hdr_len; i < op->hdr_len + 1024; i++)
			p[i] = (uint8_t)(i * 13);
		len = op->hdr_len +
		      ((op->flags & IB_F_PAYLOAD) ? 1024 : 0) + IB_ICRC_BYTES;
	}
	have = len - op->hdr_len - IB_ICRC_BYTES - bth_pad((void *)p);
	if (paylen >= 0 && (uint32_t)paylen < have)
		have = (uint32_t)paylen;
	pad = (4 - (have & 3)) & 3;
	p[1] = (uint8_t)((p[1] & ~IB_BTH_PAD_MASK) |
			 (pad << IB_BTH_PAD_SHIFT));
	memset(p + op->hdr_len + have, 0, pad);
	len = op->hdr_len + have + pad + IB_ICRC_BYTES;
	ib_put24(p + 9, psn);
	if (op->flags & IB_F_RETH)
		reth_set((void *)(p + op->reth_off), va, rkey, dma_len);
	if (op->flags & IB_F_ATMETH)
		atmeth_set((void *)(p + op->atmeth_off), va, rkey, 5, 6);
	if (op->flags & IB_F_AETH)
		aeth_set((void *)(p + op->aeth_off), AETH_TYPE_ACK | 0x1f, 1);
	if (op->flags & IB_F_IETH)
		ieth_set((void *)(p + op->ieth_off), FZ_RKEY_RW);
	if (op->flags & IB_F_DETH)
		deth_set((void *)(p + op->deth_off), FZ_RXE_QKEY, 0x99);
	put8(s, ctl);
	put8(s, 0);
	put16(s, (uint16_t)len);
	put(s, p, len);
}

/* A GRO run of @n WRITE MIDDLE (or READ RESPONSE MIDDLE) packets of
 * @mtu bytes from @psn. */
static void run(struct seed *s, uint8_t ctl, unsigned int opcode,
		uint32_t psn, unsigned int n, uint32_t mtu)
{
	uint32_t seg = IB_BTH_BYTES + mtu + IB_ICRC_BYTES, len;
	const uint8_t *k = kframe(opcode, 4, &len);

	put8(s, ctl);
	put8(s, (uint8_t)(seg / 16));
	put16(s, (uint16_t)(seg * n));
	for (unsigned int i = 0; i < n; i++) {
		uint8_t p[IB_BTH_BYTES];

		memcpy(p, k, IB_BTH_BYTES);
		p[1] &= (uint8_t)~IB_BTH_PAD_MASK;
		ib_put24(p + 9, psn + i);
		put(s, p, sizeof(p));
		for (uint32_t j = 0; j < mtu + IB_ICRC_BYTES; j++)
			put8(s, (uint8_t)(i + j));
	}
}

static void gen_rxe_one(const char *target)
{
	struct seed s;
	const uint8_t C = FZ_RXE_CTL_ICRC;	/* RC QP, ICRC right */

	/* The responder: a SEND in three, a WRITE in three, a READ, two
	 * atomics, an UD datagram. MTU 1024 (the kernel's frames). */
	s.n = 0;
	put8(&s, 0);
	rec(&s, C, IB_OP_SEND_FIRST, 1000, -1, 0, 0, 0);
	rec(&s, C, IB_OP_SEND_MIDDLE, 1001, -1, 0, 0, 0);
	rec(&s, C, IB_OP_SEND_LAST, 1002, 300, 0, 0, 0);
	rec(&s, C, IB_OP_WRITE_FIRST, 1003, -1, FZ_RKEY_RW, FZ_VA_RW, 3000);
	rec(&s, C, IB_OP_WRITE_MIDDLE, 1004, -1, 0, 0, 0);
	rec(&s, C, IB_OP_WRITE_LAST, 1005, 952, 0, 0, 0);
	rec(&s, C, IB_OP_READ_REQUEST, 1006, -1, FZ_RKEY_RO, FZ_VA_RO + 8,
	    2000);
	rec(&s, C, IB_OP_CMP_SWAP, 1008, -1, FZ_RKEY_RW, FZ_VA_RW + 64, 0);
	rec(&s, C, IB_OP_FETCH_ADD, 1009, -1, FZ_RKEY_RW, FZ_VA_RW + 72, 0);
	rec(&s, C | 1, IB_OPC_UD | IB_OP_SEND_ONLY, 0, 100, 0, 0, 0);
	rec(&s, C | 1, IB_OPC_UD | IB_OP_SEND_ONLY_IMM, 1, 30, 0, 0, 0);
	save(target, "responder", &s);
	/* Refusals: rights, PD, bounds, sequence, duplicates. */
	s.n = 0;
	put8(&s, FZ_RXE_NO_ATOMIC);
	rec(&s, C, IB_OP_WRITE_FIRST, 1000, -1, FZ_RKEY_RO, FZ_VA_RO, 3000);
	rec(&s, C, IB_OP_WRITE_FIRST, 1000, -1, FZ_RKEY_PD2, FZ_VA_PD2, 3000);
	rec(&s, C, IB_OP_READ_REQUEST, 1000, -1, FZ_RKEY_RW, FZ_VA_RW + 4000,
	    200);
	rec(&s, C, IB_OP_SEND_MIDDLE, 1000, -1, 0, 0, 0);
	rec(&s, C, IB_OP_SEND_FIRST, 1003, -1, 0, 0, 0);
	rec(&s, C, IB_OP_CMP_SWAP, 1000, -1, FZ_RKEY_RW, FZ_VA_RW + 3, 0);
	rec(&s, C | 0x10, IB_OP_SEND_FIRST, 999, -1, 0, 0, 0);
	save(target, "responder-errors", &s);
	/* The completer: answers to our WRITE, READ, atomics and SEND
	 * (PSNs 5000, 5001-5002, 5003, 5004, 5005). */
	s.n = 0;
	put8(&s, FZ_RXE_REQUESTS);
	rec(&s, C, IB_OP_ACK, 5000, -1, 0, 0, 0);
	rec(&s, C, IB_OP_READ_RESP_FIRST, 5001, -1, 0, 0, 0);
	rec(&s, C, IB_OP_READ_RESP_LAST, 5002, 476, 0, 0, 0);
	rec(&s, C, IB_OP_ATOMIC_ACK, 5003, -1, 0, 0, 0);
	rec(&s, C, IB_OP_ATOMIC_ACK, 5004, -1, 0, 0, 0);
	rec(&s, C | FZ_RXE_CTL_TIMER, IB_OP_ACK, 5005, -1, 0, 0, 0);
	save(target, "completer", &s);
	s.n = 0;
	put8(&s, FZ_RXE_REQUESTS | FZ_RXE_MTU_256);
	rec(&s, C | FZ_RXE_CTL_TIMER, IB_OP_READ_RESP_ONLY, 5001, 200, 0, 0,
	    0);
	rec(&s, C, IB_OP_READ_RESP_MIDDLE, 5002, 256, 0, 0, 0);
	rec(&s, C | FZ_RXE_CTL_TIMER, IB_OP_ACK, 5009, -1, 0, 0, 0);
	save(target, "completer-mtu256", &s);
	/* GRO runs of MIDDLEs: a WRITE (MTU 1024) into place. */
	s.n = 0;
	put8(&s, 0);
	rec(&s, C, IB_OP_WRITE_FIRST, 1000, -1, FZ_RKEY_RW, FZ_VA_RW, 4000);
	run(&s, C, IB_OP_WRITE_MIDDLE, 1001, 2, 1024);
	rec(&s, C, IB_OP_WRITE_LAST, 1003, 928, 0, 0, 0);
	save(target, "write-run", &s);
	s.n = 0;
	put8(&s, FZ_RXE_REQUESTS | FZ_RXE_MTU_256);
	rec(&s, C, IB_OP_READ_RESP_FIRST, 5001, 256, 0, 0, 0);
	run(&s, C, IB_OP_READ_RESP_MIDDLE, 5002, 4, 256);
	save(target, "read-response-run", &s);
	/* SRQ, and the ICRC as the peer sent it (IPv4 ID to solve). */
	s.n = 0;
	put8(&s, FZ_RXE_SRQ);
	rec(&s, C | 0x50, IB_OP_SEND_ONLY, 1000, 64, 0, 0, 0);
	rec(&s, C | 0x70, IB_OP_SEND_ONLY_INV, 1001, 10, 0, 0, 0);
	rec(&s, 0, IB_OP_SEND_ONLY, 1002, 10, 0, 0, 0);
	save(target, "srq-icrc", &s);
}

static void gen_rxe(void)
{
	struct seed s;

	gen_rxe_one("fuzz_rxe_rcv");
	gen_rxe_one("fuzz_rxe_direct");
	/* The kernel's frames as they came, IPv6 ones from [::2]. */
	s.n = 0;
	put8(&s, 0);
	for (size_t i = 0; i < sizeof(rxe_kernel_frames) /
				       sizeof(rxe_kernel_frames[0]); i++) {
		const struct rxe_kernel_frame *f = &rxe_kernel_frames[i];
		uint32_t ip = f->family == 4 ? 20 : 40;
		uint32_t len = f->len - ip - 8;

		if (len > 200)
			continue;
		put8(&s, (uint8_t)((f->opcode & IB_OPC_UD ? 1 : 0) |
				   FZ_RXE_CTL_ICRC |
				   (f->family == 6 ? FZ_RXE_CTL_V6 : 0)));
		put8(&s, 0);
		put16(&s, (uint16_t)len);
		put(&s, f->ip + ip + 8, len);
	}
	save("fuzz_rxe_rcv", "kernel-frames", &s);
}

/* ------------------------------------------------------------------ */
/* CM                                                                  */
/* ------------------------------------------------------------------ */

static void mad_rec(struct seed *s, uint8_t rctl, const struct ib_mad *m)
{
	put8(s, rctl);
	put(s, m->b, IB_MAD_BYTES);
}

/* The kernel's @k aimed at this host: our GID and address (127.0.0.1)
 * where the REQ names the responder, the listener's port. */
static void aim_req(struct ib_mad *m, const uint8_t *k)
{
	struct ib_cm_req r;

	memcpy(m->b, k, IB_MAD_BYTES);
	ib_cm_req_decode(m, &r);
	memset(r.primary.remote_gid, 0, 16);
	r.primary.remote_gid[10] = r.primary.remote_gid[11] = 0xff;
	r.primary.remote_gid[12] = 127;
	r.primary.remote_gid[15] = 1;
	r.service_id = ib_cma_service_id(IB_RDMA_PS_TCP, 7174);
	memset(r.private_data + 4, 0, 32);
	r.private_data[1] = 4 << 4;
	r.private_data[4 + 12] = 127;
	r.private_data[4 + 15] = 2;
	r.private_data[20 + 12] = 127;
	r.private_data[20 + 15] = 1;
	ib_cm_req_encode(m, &r);
}

static void gen_cm(void)
{
	static const struct {
		const char *name;
		const uint8_t *mad;
	} kernel[] = {
		{ "req-v4", kernel_v4_req }, { "rep-v4", kernel_v4_rep },
		{ "rtu-v4", kernel_v4_rtu }, { "dreq-v4", kernel_v4_dreq },
		{ "drep-v4", kernel_v4_drep }, { "rej-v4", kernel_v4_rej },
		{ "req-v6", kernel_v6_req }, { "rep-v6", kernel_v6_rep },
		{ "rtu-v6", kernel_v6_rtu }, { "dreq-v6", kernel_v6_dreq },
		{ "drep-v6", kernel_v6_drep },
		{ "sidr-req-v4", kernel_v4_sidr_req },
		{ "sidr-rep-v4", kernel_v4_sidr_rep },
		{ "sidr-req-v6", kernel_v6_sidr_req },
		{ "sidr-rep-v6", kernel_v6_sidr_rep },
	};
	struct ib_mad m;
	struct seed s;

	for (size_t i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++) {
		s.n = 0;
		put(&s, kernel[i].mad, IB_MAD_BYTES);
		save("fuzz_cm_mad", kernel[i].name, &s);
	}

	/* fuzz_cm_ib: passive, accepted, RTU, DREQ from the peer. */
	s.n = 0;
	put8(&s, 0x02);
	aim_req(&m, kernel_v4_req);
	mad_rec(&s, 0, &m);
	memcpy(m.b, kernel_v4_rtu, IB_MAD_BYTES);
	ib_mad_put32(&m, IB_CM_D(0), 0xf9f361cc);
	mad_rec(&s, 0x03, &m);
	memcpy(m.b, kernel_v4_dreq, IB_MAD_BYTES);
	ib_mad_put32(&m, IB_CM_D(0), 0xf9f361cc);
	mad_rec(&s, 0x03, &m);
	save("fuzz_cm_ib", "passive-accept-rtu-dreq", &s);
	/* Passive, left unanswered, the peer's REQ again and its REJ. */
	s.n = 0;
	put8(&s, 0x04);
	aim_req(&m, kernel_v4_req);
	mad_rec(&s, 0, &m);
	mad_rec(&s, 0, &m);
	memcpy(m.b, kernel_v4_rej, IB_MAD_BYTES);
	ib_mad_put32(&m, IB_CM_D(0), 0xf9f361cc);
	mad_rec(&s, 0x03, &m);
	save("fuzz_cm_ib", "passive-dup-rej", &s);
	/* Passive, rejected; an IPv6 REQ (not to our GID). */
	s.n = 0;
	put8(&s, 0x00);
	aim_req(&m, kernel_v4_req);
	mad_rec(&s, 0, &m);
	memcpy(m.b, kernel_v6_req, IB_MAD_BYTES);
	mad_rec(&s, 0, &m);
	save("fuzz_cm_ib", "passive-reject-v6", &s);
	/* Active: our REQ answered with REP, then DREQ; MRA; REJ. */
	s.n = 0;
	put8(&s, 0x01 | 0x08);
	memcpy(m.b, kernel_v4_rep, IB_MAD_BYTES);
	mad_rec(&s, 0x01, &m);
	memcpy(m.b, kernel_v4_dreq, IB_MAD_BYTES);
	ib_mad_put32(&m, IB_CM_D(0), (uint32_t)kernel_v4_rep[IB_CM_D(0)] << 24 |
				     (uint32_t)kernel_v4_rep[IB_CM_D(1)] << 16 |
				     (uint32_t)kernel_v4_rep[IB_CM_D(2)] << 8 |
				     kernel_v4_rep[IB_CM_D(3)]);
	mad_rec(&s, 0x01, &m);
	save("fuzz_cm_ib", "active-rep-dreq", &s);
	s.n = 0;
	put8(&s, 0x01);
	ib_mad_cm_init(&m, IB_CM_ATTR_MRA, 1);
	{
		struct ib_cm_mra r = { .message_mraed = IB_CM_MSG_REQ,
				       .service_timeout = 20 };

		ib_cm_mra_encode(&m, &r);
	}
	mad_rec(&s, 0x01, &m);
	memcpy(m.b, kernel_v4_rej, IB_MAD_BYTES);
	mad_rec(&s, 0x01, &m);
	save("fuzz_cm_ib", "active-mra-rej", &s);
	/* SIDR both ways. */
	s.n = 0;
	put8(&s, 0x10 | 0x20);
	{
		struct ib_cm_sidr_req r;

		memcpy(m.b, kernel_v4_sidr_req, IB_MAD_BYTES);
		ib_cm_sidr_req_decode(&m, &r);
		r.service_id = 0x1234abcdull;
		ib_cm_sidr_req_encode(&m, &r);
	}
	mad_rec(&s, 0, &m);
	memcpy(m.b, kernel_v4_sidr_rep, IB_MAD_BYTES);
	mad_rec(&s, 0x01, &m);
	save("fuzz_cm_ib", "sidr", &s);
}

/* ------------------------------------------------------------------ */
/* Tools                                                               */
/* ------------------------------------------------------------------ */

static void gen_tools(void)
{
	struct ping_advert a = { htobe64(0x7f0012345000ull), htonl(0x1234),
				 htonl(64) };
	struct perf_ctl m;
	struct perf_hello h = { htonl(PERF_MAGIC), PERF_VERSION, 1,
				htons(3) };
	struct perf_pt_dest d;
	struct seed s;
	uint64_t v;

	s.n = 0;
	put8(&s, 0);
	put8(&s, 0);
	put(&s, &a, sizeof(a));
	put(&s, "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ", 39);
	save("fuzz_tools", "rping-advert", &s);

	memset(&m, 0, sizeof(m));
	m.magic_be = htonl(PERF_MAGIC);
	m.type_be = htonl(PERF_CTL_PARAMS);
	v = PERF_WRITE;
	m.v_be[PV_VERB] = htobe64(v);
	m.v_be[PV_QPS] = htobe64(2);
	m.v_be[PV_TX_DEPTH] = htobe64(128);
	m.v_be[PV_RX_DEPTH] = htobe64(512);
	m.v_be[PV_CQ_MOD] = htobe64(100);
	m.v_be[PV_OUTS] = htobe64(16);
	m.v_be[PV_SIZE] = htobe64(65536);
	m.v_be[PV_ITERS] = htobe64(5000);
	m.v_be[PV_MAX_SIZE] = htobe64(65536);
	m.v_be[PV_POST_LIST] = htobe64(1);
	m.adv[0].addr_be = htobe64(0x7f0000001000ull);
	m.adv[0].rkey_be = htonl(0x1234);
	m.adv[0].len_be = htobe64(1 << 20);
	m.adv[1] = m.adv[0];
	s.n = 0;
	put8(&s, 1);
	put8(&s, 0);
	put(&s, &m, sizeof(m));
	save("fuzz_tools", "perf-params", &s);

	memset(&m, 0, sizeof(m));
	m.magic_be = htonl(PERF_MAGIC);
	m.type_be = htonl(PERF_CTL_DONE);
	m.v_be[DV_SIZE] = htobe64(4096);
	m.v_be[DV_ITERS] = htobe64(5000);
	m.v_be[DV_NS] = htobe64(123456789);
	m.v_be[DV_CPU_US] = htobe64(100000);
	m.v_be[DV_LAT_MIN] = htobe64(2000);
	m.v_be[DV_LAT_MAX] = htobe64(90000);
	s.n = 0;
	put8(&s, 2);
	put8(&s, 16);
	put(&s, &m, sizeof(m));
	save("fuzz_tools", "perf-done", &s);

	s.n = 0;
	put8(&s, 3);
	put8(&s, 1 | 3 << 1);
	put(&s, &h, sizeof(h));
	save("fuzz_tools", "perf-hello", &s);

	memset(&d, 0, sizeof(d));
	d.out_reads_be = htonl(16);
	d.qpn_be = htonl(0x11);
	d.psn_be = htonl(0xcac399);
	d.rkey_be = htonl(0x1234);
	d.vaddr_be = htobe64(0x7f0000001000ull);
	s.n = 0;
	put8(&s, 4);
	put8(&s, 0);
	put(&s, "6.06\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	{
		uint32_t cycle = htonl(4096);
		uint64_t rep[5];
		double bw = 9000.5, mpps = 2.25;
		uint64_t u;

		put(&s, &cycle, 4);
		put(&s, &d, sizeof(d));
		rep[0] = htobe64(65536);
		rep[1] = htobe64(5000);
		memcpy(&u, &bw, 8);
		rep[2] = rep[3] = htobe64(u);
		memcpy(&u, &mpps, 8);
		rep[4] = htobe64(u);
		put(&s, rep, sizeof(rep));
	}
	save("fuzz_tools", "perftest-exchange", &s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-corpus DIR\n");
		return 2;
	}
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) < 0 && errno != EEXIST) {
		perror(out_dir);
		return 1;
	}
	text_init();
	gen_siw();
	gen_rxe();
	gen_cm();
	gen_tools();
	return 0;
}
