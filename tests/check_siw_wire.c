/* SPDX-License-Identifier: MIT */
/*
 * siw-wire: byte-exact vectors for the iWARP headers (iwarp.h), CRC32c
 * against RFC 3720 Appendix B.4 on every compiled path, MPA frames, and
 * the device options.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

static const enum siw_crc_path paths[] = {
	SIW_CRC_PATH_TABLE, SIW_CRC_PATH_SSE42, SIW_CRC_PATH_ISAL,
};

/* RFC 3720 Appendix B.4: the CRC bytes as they go on the wire. */
START_TEST(test_crc_rfc3720)
{
	uint8_t buf[48];
	uint8_t out[4];
	static const uint8_t read_pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
		0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	size_t p;
	int i;

	for (p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
		memset(buf, 0, 32);
		mpa_crc_put(out, siw_crc32c_path(paths[p], 0, buf, 32));
		ck_assert_mem_eq(out, "\xaa\x36\x91\x8a", 4);
		memset(buf, 0xff, 32);
		mpa_crc_put(out, siw_crc32c_path(paths[p], 0, buf, 32));
		ck_assert_mem_eq(out, "\x43\xab\xa8\x62", 4);
		for (i = 0; i < 32; i++)
			buf[i] = (uint8_t)i;
		mpa_crc_put(out, siw_crc32c_path(paths[p], 0, buf, 32));
		ck_assert_mem_eq(out, "\x4e\x79\xdd\x46", 4);
		for (i = 0; i < 32; i++)
			buf[i] = (uint8_t)(31 - i);
		mpa_crc_put(out, siw_crc32c_path(paths[p], 0, buf, 32));
		ck_assert_mem_eq(out, "\x5c\xdb\x3f\x11", 4);
		mpa_crc_put(out, siw_crc32c_path(paths[p], 0, read_pdu, 48));
		ck_assert_mem_eq(out, "\x56\x3a\x96\xd9", 4);
	}
	/* "123456789" check value of CRC-32C. */
	ck_assert_uint_eq(siw_crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_str_ne(siw_crc32c_impl(), "");
}
END_TEST

/* All paths agree on lengths and alignments around the 3-way lanes, and
 * chaining equals one pass. */
START_TEST(test_crc_paths_agree)
{
	size_t len = 32768, i;
	uint8_t *buf = malloc(len + 8);
	static const size_t lens[] = { 0, 1, 7, 8, 63, 64, 6143, 6144, 6145,
				       12289, 20000 };

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < len + 8; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 7));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t off;

		for (off = 0; off < 8; off += 3) {
			uint32_t t = siw_crc32c_path(SIW_CRC_PATH_TABLE, 0,
						     buf + off, lens[i]);
			uint32_t s = siw_crc32c_path(SIW_CRC_PATH_SSE42, 0,
						     buf + off, lens[i]);
			uint32_t a = siw_crc32c_path(SIW_CRC_PATH_ISAL, 0,
						     buf + off, lens[i]);
			uint32_t half = siw_crc32c(0, buf + off, lens[i] / 2);

			half = siw_crc32c(half, buf + off + lens[i] / 2,
					  lens[i] - lens[i] / 2);
			ck_assert_uint_eq(t, s);
			ck_assert_uint_eq(t, a);
			ck_assert_uint_eq(t, half);
		}
	}
	free(buf);
}
END_TEST

START_TEST(test_mpa_frames)
{
	struct mpa_rr rr;
	struct mpa_v2_data v2;
	uint8_t frame[24];

	mpa_rr_init(&rr, true, MPA_REV2, MPA_FLAG_CRC | MPA_FLAG_ENHANCED, 4);
	mpa_v2_set(&v2, 16, 8, true, MPA_V2_READ_RTR);
	memcpy(frame, &rr, sizeof(rr));
	memcpy(frame + 20, &v2, sizeof(v2));
	ck_assert_mem_eq(frame, "MPA ID Req Frame\x50\x02\x00\x04"
				"\x80\x10\x40\x08", 24);
	ck_assert(mpa_rr_is_request(&rr));
	ck_assert(!mpa_rr_is_reply(&rr));
	ck_assert_uint_eq(mpa_rr_pd_len(&rr), 4);
	ck_assert_uint_eq(mpa_v2_ird(&v2), 16);
	ck_assert_uint_eq(mpa_v2_ord(&v2), 8);
	ck_assert(mpa_v2_p2p(&v2));
	ck_assert_uint_eq(mpa_v2_rtr(&v2), MPA_V2_READ_RTR);

	/* The Reply the interop README shows from Linux siw (rev 1, C). */
	memcpy(&rr, "MPA ID Rep Frame\x40\x01\x00\x00", 20);
	ck_assert(mpa_rr_is_reply(&rr));
	ck_assert_uint_eq(rr.flags, MPA_FLAG_CRC);
	ck_assert_uint_eq(rr.rev, 1);
	ck_assert_uint_eq(mpa_rr_pd_len(&rr), 0);

	mpa_v2_set(&v2, 0xffff, 0x3fff, false, MPA_V2_WRITE_RTR);
	ck_assert_mem_eq(&v2, "\x3f\xff\xbf\xff", 4);
}
END_TEST

START_TEST(test_ddp_headers)
{
	struct iwarp_tagged_hdr t;
	struct iwarp_untagged_hdr u;
	struct iwarp_read_req_hdr r;
	struct rdmap_term term;

	iwarp_ctrl_init(&t.ctrl, RDMAP_RDMA_WRITE, true);
	iwarp_set_mpa_len(&t.ctrl, 14 + 5);
	t.stag_be = htobe32(0x00012345);
	t.to_be = htobe64(0x1122334455667788ull);
	ck_assert_mem_eq(&t, "\x00\x13\xc1\x40\x00\x01\x23\x45"
			     "\x11\x22\x33\x44\x55\x66\x77\x88", 16);
	ck_assert(ddp_tagged(&t.ctrl));
	ck_assert(ddp_last(&t.ctrl));
	ck_assert_uint_eq(ddp_version(&t.ctrl), 1);
	ck_assert_uint_eq(rdmap_version(&t.ctrl), 1);
	ck_assert_uint_eq(rdmap_opcode(&t.ctrl), RDMAP_RDMA_WRITE);

	iwarp_ctrl_init(&u.ctrl, RDMAP_SEND_SE_INV, false);
	iwarp_set_mpa_len(&u.ctrl, 18);
	u.inval_stag_be = htobe32(0xabcdef01);
	u.qn_be = htobe32(0);
	u.msn_be = htobe32(1);
	u.mo_be = htobe32(4096);
	ck_assert_mem_eq(&u, "\x00\x12\x01\x46\xab\xcd\xef\x01\x00\x00\x00"
			     "\x00\x00\x00\x00\x01\x00\x00\x10\x00", 20);
	ck_assert(!ddp_tagged(&u.ctrl));
	ck_assert(!ddp_last(&u.ctrl));

	memset(&r, 0, sizeof(r));
	iwarp_ctrl_init(&r.u.ctrl, RDMAP_RDMA_READ_REQ, true);
	iwarp_set_mpa_len(&r.u.ctrl, 46);
	r.u.qn_be = htobe32(1);
	r.u.msn_be = htobe32(7);
	r.rreq.sink_stag_be = htobe32(0x100);
	r.rreq.sink_to_be = htobe64(0x2000);
	r.rreq.size_be = htobe32(0x10000);
	r.rreq.src_stag_be = htobe32(0x201);
	r.rreq.src_to_be = htobe64(0x3000);
	ck_assert_mem_eq(&r, "\x00\x2e\x41\x41\0\0\0\0\0\0\0\x01\0\0\0\x07"
			     "\0\0\0\0\0\0\x01\x00\0\0\0\0\0\0\x20\x00"
			     "\0\x01\0\0\0\0\x02\x01\0\0\0\0\0\0\x30\x00",
			 48);

	rdmap_term_set(&term, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
		       DDP_ECODE_T_BASE_BOUNDS, TERM_FLAG_M | TERM_FLAG_D);
	ck_assert_mem_eq(&term, "\x11\x01\xc0\x00", 4);
	ck_assert_uint_eq(rdmap_term_layer(&term), 1);
	ck_assert_uint_eq(rdmap_term_etype(&term), 1);
	ck_assert_uint_eq(rdmap_term_ecode(&term), 1);
	ck_assert_uint_eq(rdmap_term_flags(&term), TERM_FLAG_M | TERM_FLAG_D);
	rdmap_term_set(&term, TERM_LAYER_LLP, 0, MPA_ECODE_CRC, 0);
	ck_assert_mem_eq(&term, "\x20\x02\x00\x00", 4);

	ck_assert_uint_eq(iwarp_hdr_len(RDMAP_TERMINATE), 20);
	ck_assert_uint_eq(iwarp_hdr_len(RDMAP_RDMA_READ_RESP), 16);
	ck_assert_uint_eq(iwarp_hdr_len(RDMAP_RDMA_READ_REQ), 48);
	ck_assert_uint_eq(iwarp_hdr_len(9), 0);
}
END_TEST

START_TEST(test_fpdu_sizes)
{
	uint8_t crc[4];

	ck_assert_uint_eq(mpa_pad_len(18), 0);
	ck_assert_uint_eq(mpa_pad_len(19), 3);
	ck_assert_uint_eq(mpa_pad_len(20), 2);
	ck_assert_uint_eq(mpa_pad_len(21), 1);
	ck_assert_uint_eq(mpa_fpdu_len(18), 24);
	ck_assert_uint_eq(mpa_fpdu_len(19), 28);
	/* MSS 1460: whole FPDU <= 1460 with no pad. */
	ck_assert_uint_eq(siw_ulpdu_max(1460, false), 1454);
	ck_assert_uint_le(mpa_fpdu_len(siw_ulpdu_max(1460, false)), 1460);
	ck_assert_uint_le(mpa_fpdu_len(siw_ulpdu_max(1448, false)), 1448);
	ck_assert_uint_le(siw_ulpdu_max(65483, false), 65535);
	ck_assert_uint_le(siw_ulpdu_max(1460, true), 65535);
	ck_assert_uint_gt(siw_ulpdu_max(1460, true), 60000);
	mpa_crc_put(crc, 0x8a9136aa);
	ck_assert_mem_eq(crc, "\xaa\x36\x91\x8a", 4);
	ck_assert_uint_eq(mpa_crc_get(crc), 0x8a9136aa);
}
END_TEST

START_TEST(test_options)
{
	struct tu_log_capture *cap;
	struct siw_options o;
	const struct rnicpi_option good[] = {
		{ "mpa_rev", "1" }, { "mpa_crc", "required" },
		{ "mpa_crc_strict", "on" }, { "p2p", "read" },
		{ "large_fpdu", "no" }, { "mpa_timeout_ms", "500" },
		{ "ird", "4" }, { "ord", "2" }, { "nodelay", "off" },
		{ "max_fpdu", "1024" }, { "zcopy_min", "65536" },
		{ "rts_delay_ms", "5" }, { "busy_poll_us", "0" },
		{ "read_timeout_ms", "2500" }, { "max_qp", "3" },
		{ "tcp_user_timeout_ms", "30000" }, { "tx_realign", "off" },
		{ NULL, NULL },
	};
	const struct rnicpi_option unknown[] = { { "mpa_markers", "on" },
						 { NULL, NULL } };
	const struct rnicpi_option bad1[] = { { "mpa_rev", "3" },
					      { NULL, NULL } };
	const struct rnicpi_option bad2[] = { { "mpa_crc", "maybe" },
					      { NULL, NULL } };
	const struct rnicpi_option bad3[] = { { "ird", "0" }, { NULL, NULL } };
	const struct rnicpi_option bad4[] = { { "p2p", "send" },
					      { NULL, NULL } };
	const struct rnicpi_option bad5[] = { { "busy_poll_us", "1000001" },
					      { NULL, NULL } };
	const struct rnicpi_option bad6[] = { { "read_timeout_ms", "-1" },
					      { NULL, NULL } };
	const struct rnicpi_option bad7[] = {
		{ "tcp_user_timeout_ms", "3600001" }, { NULL, NULL } };

	ck_assert_ok(siw_options_parse(&o, NULL, "t"));
	ck_assert_uint_eq(o.mpa_rev, 2);
	ck_assert_int_eq(o.mpa_crc, SIW_CRC_OFF);
	ck_assert_int_eq(o.p2p, SIW_P2P_NONE);
	ck_assert(o.large_fpdu);
	ck_assert(o.tx_realign);
	ck_assert_uint_eq(o.busy_poll_us, SIW_DEFAULT_BUSY_POLL_US);
	ck_assert_uint_eq(o.read_timeout_ms, 0);
	ck_assert_uint_eq(o.max_qp, 65536);
	ck_assert_uint_eq(o.tcp_user_timeout_ms, 0);
	ck_assert_ok(siw_options_parse(&o, good, "t"));
	ck_assert_uint_eq(o.mpa_rev, 1);
	ck_assert_int_eq(o.mpa_crc, SIW_CRC_REQUIRED);
	ck_assert(o.mpa_crc_strict);
	ck_assert_int_eq(o.p2p, SIW_P2P_READ);
	ck_assert(!o.large_fpdu);
	ck_assert_uint_eq(o.mpa_timeout_ms, 500);
	ck_assert_uint_eq(o.ird, 4);
	ck_assert_uint_eq(o.ord, 2);
	ck_assert(!o.nodelay);
	ck_assert_uint_eq(o.max_fpdu, 1024);
	ck_assert_uint_eq(o.zcopy_min, 65536);
	ck_assert_uint_eq(o.rts_delay_ms, 5);
	ck_assert_uint_eq(o.busy_poll_us, 0);
	ck_assert_uint_eq(o.read_timeout_ms, 2500);
	ck_assert_uint_eq(o.max_qp, 3);
	ck_assert_uint_eq(o.tcp_user_timeout_ms, 30000);
	ck_assert(!o.tx_realign);
	/* Each refusal is a warning naming the option and the value. */
	cap = tu_log_capture_begin("hostrdma-siw");
	ck_assert_errno(siw_options_parse(&o, unknown, "t"), EINVAL);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "t: unknown option \"mpa_markers\""),
			  1);
	ck_assert_errno(siw_options_parse(&o, bad1, "t"), EINVAL);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "t: bad value \"3\" for option \"mpa_rev\""),
			  1);
	ck_assert_errno(siw_options_parse(&o, bad2, "t"), EINVAL);
	ck_assert_errno(siw_options_parse(&o, bad3, "t"), EINVAL);
	ck_assert_errno(siw_options_parse(&o, bad4, "t"), EINVAL);
	ck_assert_errno(siw_options_parse(&o, bad5, "t"), EINVAL);
	ck_assert_errno(siw_options_parse(&o, bad6, "t"), EINVAL);
	ck_assert_errno(siw_options_parse(&o, bad7, "t"), EINVAL);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING, "t: "), 8);
	tu_log_capture_end(cap);
}
END_TEST

Suite *suite_siw_wire(void)
{
	Suite *s = suite_create("siw-wire");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, test_crc_rfc3720);
	tcase_add_test(tc, test_crc_paths_agree);
	tcase_add_test(tc, test_mpa_frames);
	tcase_add_test(tc, test_ddp_headers);
	tcase_add_test(tc, test_fpdu_sizes);
	tcase_add_test(tc, test_options);
	suite_add_tcase(s, tc);
	return s;
}
