/* SPDX-License-Identifier: MIT */
/*
 * fuzz_siw_rx: FPDUs (MPA framing, DDP, RDMAP: RFC 5044, 5041, 5040) on
 * the stream of a connected soft-iWARP QP, through its receive state
 * machine (siw_qp_rx() in vp/siw/siw_rx.c) as the progress thread runs
 * it: the stash of bytes read ahead, the header checks, placement into
 * the tagged region or the receive, the trailer and its CRC, Read
 * Requests answered, Read Responses placed, Terminates.
 *
 * The MPA exchange is the harness's (a valid Request or Reply), so every
 * input is FPDUs. Memory sits at the fixed STags and TOs of fuzz_siw.h.
 *
 * Input: cfg, cut seed, then the stream.
 *   cfg bits 0-1  what the peer offers: 0 nothing, 1 MPA CRC,
 *                 2 peer-to-peer with a Write RTR, 3 with a Read RTR
 *       bit 2     our QP is the initiator
 *       bit 3     receives through an SRQ
 *       bit 4     an RDMA Read (and a Send) of ours outstanding
 *       bit 5     the harness sets each FPDU's CRC right
 *       bit 6     device with mpa_crc=on
 *       bit 7     device with small FPDUs (max_fpdu 256)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	uint8_t cfg = fz_u8(&in), cut = fz_u8(&in);
	uint16_t rtr = (cfg & 3) == 2 ? MPA_V2_WRITE_RTR
		       : (cfg & 3) == 3 ? MPA_V2_READ_RTR : 0;
	uint8_t flags = (cfg & 3) == 1 ? MPA_FLAG_CRC : 0;
	enum fz_siw_profile prof = (cfg & 0x40) ? FZ_SIW_CRC
				   : (cfg & 0x80) ? FZ_SIW_SMALL
				   : FZ_SIW_PLAIN;
	uint8_t frame[32], *stream;
	struct fz_siw w;
	size_t n;

	fz_siw_open(&w, prof, (cfg & 0x08) ? FZ_SIW_SRQ : 0);
	if (cfg & 0x04) {
		fz_siw_connect(&w, (rtr ? RNICPI_CONN_P2P : 0) |
				   (flags ? RNICPI_CONN_MPA_CRC : 0), 4, 4);
		/* The Reply: what we asked for, CRC if either asked. */
		if (prof == FZ_SIW_CRC)
			flags |= MPA_FLAG_CRC;
		n = fz_mpa_frame(frame, false, true, flags, 4, 4,
				 rtr == MPA_V2_READ_RTR ? MPA_V2_READ_RTR
				 : rtr ? MPA_V2_WRITE_RTR : 0);
	} else {
		w.auto_answer = true;
		w.accept = true;
		w.ird = w.ord = 4;
		fz_siw_take_request(&w);
		n = fz_mpa_frame(frame, true, true, flags, 4, 4, rtr);
	}
	fz_siw_write(&w, frame, n);
	fz_siw_progress(&w);
	fz_siw_post(&w, cfg & 0x10);
	stream = malloc(in.n + 1);
	FZ_CHECK(stream);
	memcpy(stream, in.p, in.n);
	if ((cfg & 0x20) && to_siw_qp(w.qp)->crc)
		fz_fpdu_fix_crc(stream, in.n);
	fz_siw_write_cut(&w, stream, in.n, cut);
	free(stream);
	fz_siw_close(&w);
	return 0;
}
