/* SPDX-License-Identifier: MIT */
/*
 * fuzz_siw_mpa: MPA connection set-up (RFC 5044 §7.1, RFC 6581) as the
 * soft-iWARP provider reads it from the peer, and the FPDUs that follow.
 *
 * Responder: the input is the peer's MPA Request, its private data (the
 * IRD/ORD word of an enhanced frame first) and whatever the peer sends
 * next, read by siw_conn_handle() / process_request(); the REQUEST is
 * accepted (or rejected) at once, and the QP reads the rest. Initiator:
 * our QP sent its Request (iw_connect); the input is the responder's
 * Reply and what follows, read by siw_qp_mpa_reply_rx() /
 * process_reply().
 *
 * Input: cfg, ird, ord, private data length of our answer, cut seed,
 * then the stream.
 *   cfg bits 0-2  device profile (enum fz_siw_profile)
 *       bit 3     our QP is the initiator
 *       bit 4     responder: reject instead of accepting
 *       bit 5     initiator: ask for peer-to-peer RTR
 *       bit 6     initiator: speak MPA revision 1
 *       bit 7     initiator: ask for MPA CRC
 */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_siw.h"

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
	uint8_t cfg = fz_u8(&in), ird = fz_u8(&in), ord = fz_u8(&in);
	uint16_t pd_len = fz_u16(&in) % 600;
	uint8_t cut = fz_u8(&in);
	struct fz_siw w;

	fz_siw_open(&w, (enum fz_siw_profile)(cfg & 7), 0);
	if (cfg & 0x08) {
		unsigned int flags = 0;

		if (cfg & 0x20)
			flags |= RNICPI_CONN_P2P;
		if (cfg & 0x40)
			flags |= RNICPI_CONN_MPA_REV1;
		if (cfg & 0x80)
			flags |= RNICPI_CONN_MPA_CRC;
		fz_siw_connect(&w, flags, ird % 130, ord % 130);
		fz_siw_post(&w, true);
	} else {
		w.auto_answer = true;
		w.accept = !(cfg & 0x10);
		w.ird = ird % 130;
		w.ord = ord % 130;
		w.pd_len = pd_len;
		fz_siw_take_request(&w);
		fz_siw_post(&w, false);
	}
	fz_siw_write_cut(&w, in.p, in.n, cut);
	fz_siw_close(&w);
	return 0;
}
