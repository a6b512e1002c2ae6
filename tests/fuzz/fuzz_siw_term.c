/* SPDX-License-Identifier: MIT */
/*
 * fuzz_siw_term: the body of a Terminate message (RFC 5040 §4.8: control
 * word with layer, error type and code, the M/D/R flags, then the
 * terminated FPDU's length, DDP header and RDMAP header) as a connected
 * soft-iWARP QP takes it: check_terminate() and siw_qp_term_received()
 * with term_victim(), which picks the WR the error names.
 *
 * The harness wraps the body in a well-formed Terminate FPDU (queue 2,
 * CRC right) so that the fuzzer spends its time on the body.
 *
 * Input: cfg, MSN, then the body (TERM_MAX_BODY bytes are kept, more
 * are read and dropped).
 *   cfg bit 0  our QP is the initiator
 *       bit 1  MPA CRC on the stream
 *       bit 2  an RDMA Read and a Send of ours outstanding
 *       bit 3  the Terminate's DDP Last flag clear
 *       bit 4  a Send FPDU of 8 bytes before it
 *       bit 5  cut the stream into small pieces
 */
#include "config.h"

#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_siw.h"
#include "vp/siw/siw.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_siw_init();
	return 0;
}

/* An untagged FPDU with @len bytes of @payload at @out; its size. */
static size_t untagged(uint8_t *out, uint8_t opcode, bool last, uint32_t qn,
		       uint32_t msn, const uint8_t *payload, size_t len)
{
	struct iwarp_untagged_hdr h;
	uint32_t ulpdu = (uint32_t)(sizeof(h) - MPA_HDR_SIZE + len);
	uint32_t pad = mpa_pad_len(ulpdu);

	memset(&h, 0, sizeof(h));
	iwarp_ctrl_init(&h.ctrl, opcode, last);
	iwarp_set_mpa_len(&h.ctrl, (uint16_t)ulpdu);
	h.qn_be = htobe32(qn);
	h.msn_be = htobe32(msn);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), payload, len);
	memset(out + sizeof(h) + len, 0, pad + MPA_CRC_SIZE);
	return sizeof(h) + len + pad + MPA_CRC_SIZE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	uint8_t cfg = fz_u8(&in), msn = fz_u8(&in);
	uint8_t flags = (cfg & 0x02) ? MPA_FLAG_CRC : 0;
	uint8_t frame[32], stream[1024];
	const uint8_t *body;
	struct fz_siw w;
	size_t n, blen, used = 0;

	body = fz_take(&in, 900, &blen);
	fz_siw_open(&w, FZ_SIW_PLAIN, 0);
	if (cfg & 0x01) {
		fz_siw_connect(&w, flags ? RNICPI_CONN_MPA_CRC : 0, 4, 4);
		n = fz_mpa_frame(frame, false, true, flags, 4, 4, 0);
	} else {
		w.auto_answer = true;
		w.accept = true;
		w.ird = w.ord = 4;
		fz_siw_take_request(&w);
		n = fz_mpa_frame(frame, true, true, flags, 4, 4, 0);
	}
	fz_siw_write(&w, frame, n);
	fz_siw_progress(&w);
	fz_siw_post(&w, cfg & 0x04);
	if (cfg & 0x10)
		used += untagged(stream, RDMAP_SEND, true, DDP_QN_SEND, 1,
				 (const uint8_t *)"terminal", 8);
	used += untagged(stream + used, RDMAP_TERMINATE, !(cfg & 0x08),
			 DDP_QN_TERMINATE, msn, body, blen);
	fz_fpdu_fix_crc(stream, used);
	fz_siw_write_cut(&w, stream, used, (cfg & 0x20) ? msn | 1 : 0);
	fz_siw_close(&w);
	return 0;
}
