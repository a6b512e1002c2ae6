/* SPDX-License-Identifier: MIT */
/*
 * rxe-wire: the IBA transport headers, the opcode table and the RoCEv2
 * ICRC, byte for byte, against hand-made vectors and against packets the
 * Linux kernel's rdma_rxe sent (tests/data/rxe_kernel_frames.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <glib.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/data/rxe_kernel_frames.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/rxe/ib_hdr.h"
#include "vp/rxe/rxe_icrc.h"

START_TEST(test_opcode_table)
{
	const struct ib_opcode_info *op;

	op = ib_opcode(IB_OP_WRITE_ONLY_IMM);
	ck_assert_ptr_nonnull(op);
	ck_assert_uint_eq(op->hdr_len, 12 + 16 + 4);
	ck_assert_uint_eq(op->reth_off, 12);
	ck_assert_uint_eq(op->immdt_off, 28);

	op = ib_opcode(IB_OPC_UD | IB_OP_SEND_ONLY_IMM);
	ck_assert_uint_eq(op->hdr_len, 24);
	ck_assert_uint_eq(op->deth_off, 12);
	ck_assert_uint_eq(op->immdt_off, 20);

	op = ib_opcode(IB_OP_ATOMIC_ACK);
	ck_assert_uint_eq(op->hdr_len, 24);
	ck_assert_uint_eq(op->aeth_off, 12);
	ck_assert_uint_eq(op->atmack_off, 16);

	op = ib_opcode(IB_OP_CMP_SWAP);
	ck_assert_uint_eq(op->hdr_len, 40);
	ck_assert_uint_eq(op->atmeth_off, 12);

	op = ib_opcode(IB_OP_SEND_LAST_INV);
	ck_assert_uint_eq(op->hdr_len, 16);
	ck_assert_uint_eq(op->ieth_off, 12);
	ck_assert(op->flags & IB_F_LAST);

	ck_assert_uint_eq(ib_opcode(IB_OP_READ_RESP_MIDDLE)->hdr_len, 12);
	ck_assert_uint_eq(ib_opcode(IB_OP_READ_RESP_FIRST)->hdr_len, 16);
	ck_assert_uint_eq(ib_opcode(IB_OP_READ_REQUEST)->hdr_len, 28);
	ck_assert_uint_eq(ib_opcode(IB_OPC_UC | IB_OP_WRITE_FIRST)->hdr_len,
			  28);

	/* Reserved, RD, CNP and out-of-range opcodes are unknown. */
	ck_assert_ptr_null(ib_opcode(0x15));
	ck_assert_ptr_null(ib_opcode(0x18));
	ck_assert_ptr_null(ib_opcode(0x2c)); /* UC has no READ */
	ck_assert_ptr_null(ib_opcode(0x40)); /* RD */
	ck_assert_ptr_null(ib_opcode(0x66));
	ck_assert_ptr_null(ib_opcode(0x81)); /* CNP */
	ck_assert_ptr_null(ib_opcode(0xff));
	ck_assert_ptr_null(ib_opcode(0x100));
	ck_assert_str_eq(ib_opcode_name(0x18), "UNKNOWN");
}
END_TEST

START_TEST(test_headers_byte_exact)
{
	static const uint8_t bth_want[12] = {
		0x0b, 0xa0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56,
		0x80, 0xab, 0xcd, 0xef,
	};
	static const uint8_t reth_want[16] = {
		0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x9a,
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x00, 0x00,
	};
	static const uint8_t atm_want[28] = {
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0x12, 0x01,
		0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	};
	static const uint8_t aeth_want[4] = { 0x62, 0x00, 0x00, 0x07 };
	static const uint8_t deth_want[8] = {
		0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	};
	struct ib_bth bth;
	struct ib_reth reth;
	struct ib_atmeth atm;
	struct ib_aeth aeth;
	struct ib_deth deth;
	struct ib_atmack ack;
	struct ib_ieth ieth;

	/* WRITE_ONLY_IMM, SE, pad 2, default P_Key, QP 0x123456, AckReq,
	 * PSN 0xabcdef; the QPN and PSN lose bits above 24. */
	bth_init(&bth, IB_OP_WRITE_ONLY_IMM, true, false, 2, 0xffff,
		 0xff123456, true, 0x01abcdef);
	ck_assert_mem_eq(bth.b, bth_want, 12);
	ck_assert_uint_eq(bth_opcode(&bth), 0x0b);
	ck_assert(bth_se(&bth));
	ck_assert(!bth_mig(&bth));
	ck_assert_uint_eq(bth_pad(&bth), 2);
	ck_assert_uint_eq(bth_tver(&bth), 0);
	ck_assert_uint_eq(bth_pkey(&bth), 0xffff);
	ck_assert_uint_eq(bth_qpn(&bth), 0x123456);
	ck_assert(bth_ackreq(&bth));
	ck_assert_uint_eq(bth_psn(&bth), 0xabcdef);

	reth_set(&reth, 0x7f123456789aull, 0xdeadbeef, 65536);
	ck_assert_mem_eq(reth.b, reth_want, 16);
	ck_assert_uint_eq(reth_va(&reth), 0x7f123456789aull);
	ck_assert_uint_eq(reth_rkey(&reth), 0xdeadbeef);
	ck_assert_uint_eq(reth_len(&reth), 65536);

	atmeth_set(&atm, 0x1122334455667788ull, 0x1201, 0xaabbccddeeff0011ull,
		   0x0102030405060708ull);
	ck_assert_mem_eq(atm.b, atm_want, 28);
	ck_assert_uint_eq(atmeth_swap_add(&atm), 0xaabbccddeeff0011ull);
	ck_assert_uint_eq(atmeth_compare(&atm), 0x0102030405060708ull);

	aeth_set(&aeth, AETH_TYPE_NAK | AETH_NAK_REM_ACCESS_ERR, 0x7);
	ck_assert_mem_eq(aeth.b, aeth_want, 4);
	ck_assert_uint_eq(aeth_type(&aeth), AETH_TYPE_NAK);
	ck_assert_uint_eq(aeth_value(&aeth), AETH_NAK_REM_ACCESS_ERR);
	ck_assert_uint_eq(aeth_msn(&aeth), 7);
	aeth_set(&aeth, AETH_TYPE_RNR | 14, 0x1000000);
	ck_assert_uint_eq(aeth.b[0], 0x2e);
	ck_assert_uint_eq(aeth_msn(&aeth), 0);

	deth_set(&deth, IB_GSI_QKEY, 1);
	ck_assert_mem_eq(deth.b, deth_want, 8);
	ck_assert_uint_eq(deth_sqpn(&deth), 1);

	atmack_set(&ack, 0x0102030405060708ull);
	ck_assert_uint_eq(ack.b[0], 1);
	ck_assert_uint_eq(ack.b[7], 8);
	{
		struct ib_immdt imm;

		/* Immediate data: a host-order number (RNICPI), big-endian
		 * on the wire, as the kernel's rxe carries a verbs user's
		 * htonl(n) (tests/interop/verbs.sh imm-bridge-*). */
		immdt_set(&imm, 0x01020304);
		ck_assert_mem_eq(imm.b, "\x01\x02\x03\x04", 4);
		ck_assert_uint_eq(immdt_get(&imm), 0x01020304);
	}
	ieth_set(&ieth, 0x00001201);
	ck_assert_uint_eq(ieth.b[2], 0x12);
	ck_assert_uint_eq(ieth_rkey(&ieth), 0x1201);
}
END_TEST

START_TEST(test_psn_arith)
{
	ck_assert_int_eq(psn_diff(5, 3), 2);
	ck_assert_int_eq(psn_diff(3, 5), -2);
	ck_assert_int_eq(psn_diff(0, 0xffffff), 1);
	ck_assert_int_eq(psn_diff(0xffffff, 0), -1);
	ck_assert_int_eq(psn_diff(0x800000, 0), -0x800000);
	ck_assert_uint_eq(psn_add(0xfffffe, 3), 1);
}
END_TEST

START_TEST(test_crc32_engine)
{
	/* The CRC-32 check value (IEEE 802.3, "123456789"). */
	ck_assert_uint_eq(rxe_crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(rxe_crc32(rxe_crc32(0, "1234", 4), "56789", 5),
			  0xcbf43926u);
	ck_assert_uint_eq(rxe_crc32(0, "", 0), 0);
}
END_TEST

/* Bit by bit, from the definition: the reference the engines answer to. */
static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t reg = ~crc;
	int k;

	while (len--) {
		reg ^= *p++;
		for (k = 0; k < 8; k++)
			reg = (reg >> 1) ^ ((reg & 1) ? 0xedb88320u : 0);
	}
	return ~reg;
}

/*
 * Every length from 0 to 1100 (the folding loop starts at 256 bytes and
 * takes 64 a round: each remainder, each round count up to 17) and the
 * packet sizes, at every offset modulo 32 (unaligned loads), from random
 * starting values, against the bitwise reference; and a long buffer cut
 * at several places, chained. On CPUs without the 256-bit folding (and
 * under valgrind, whose CPU has none) both calls are the base engine.
 */
START_TEST(test_crc32_long_buffers)
{
	static const size_t sizes[] = { 2048, 4096, 4100, 4124, 8192, 65536 };
	enum { BUF = 65536 + 64 };
	uint8_t *buf = g_malloc(BUF);
	GRand *rng = g_rand_new_with_seed(0x1cc0);
	size_t off, len, i;
	uint32_t init, want;

	for (i = 0; i < BUF; i++)
		buf[i] = (uint8_t)g_rand_int(rng);
	for (len = 0; len <= 1100; len++) {
		off = len % 32;
		init = g_rand_int(rng);
		want = crc32_bitwise(init, buf + off, len);
		ck_assert_msg(rxe_crc32(init, buf + off, len) == want,
			      "rxe_crc32 (%s) wrong at length %zu, offset %zu",
			      rxe_crc32_engine(), len, off);
		ck_assert_uint_eq(rxe_crc32_base(init, buf + off, len), want);
	}
	for (i = 0; i < G_N_ELEMENTS(sizes); i++)
		for (off = 0; off < 32; off += 7) {
			init = g_rand_int(rng);
			want = crc32_bitwise(init, buf + off, sizes[i]);
			ck_assert_msg(rxe_crc32(init, buf + off, sizes[i]) ==
					      want,
				      "rxe_crc32 (%s) wrong at length %zu, "
				      "offset %zu", rxe_crc32_engine(),
				      sizes[i], off);
		}
	/* Chained: the first part's result is the second's start. */
	want = crc32_bitwise(0, buf, 65536);
	for (i = 0; i < 20; i++) {
		size_t cut = g_rand_int_range(rng, 0, 65537);

		ck_assert_uint_eq(rxe_crc32(rxe_crc32(0, buf, cut), buf + cut,
					    65536 - cut),
				  want);
	}
	/* One bit flipped anywhere in a packet changes it (no lane is
	 * dropped), to the reference's value. */
	want = rxe_crc32(0, buf, 4096);
	for (i = 0; i < 4096; i += 61) {
		buf[i] ^= 0x10;
		ck_assert_uint_ne(rxe_crc32(0, buf, 4096), want);
		ck_assert_uint_eq(rxe_crc32(0, buf, 4096),
				  crc32_bitwise(0, buf, 4096));
		buf[i] ^= 0x10;
	}
	ck_assert_str_ne(rxe_crc32_engine(), "");
	g_rand_free(rng);
	g_free(buf);
}
END_TEST

/* Parse a captured frame: addresses, ports, IP ID and DF. */
static void frame_addr(const struct rxe_kernel_frame *f,
		       struct rxe_icrc_addr *a, const uint8_t **ib,
		       uint32_t *ib_len)
{
	const uint8_t *ip = f->ip, *udp;

	memset(a, 0, sizeof(*a));
	if (f->family == 4) {
		a->family = AF_INET;
		a->ip_id = ib_get16(ip + 4);
		a->df = ip[6] & 0x40;
		memcpy(a->saddr, ip + 12, 4);
		memcpy(a->daddr, ip + 16, 4);
		udp = ip + 20;
	} else {
		a->family = AF_INET6;
		memcpy(a->saddr, ip + 8, 16);
		memcpy(a->daddr, ip + 24, 16);
		udp = ip + 40;
	}
	a->sport = ib_get16(udp);
	a->dport = ib_get16(udp + 2);
	*ib = udp + 8;
	*ib_len = ib_get16(udp + 4) - 8;
}

START_TEST(test_kernel_frames_icrc)
{
	size_t i;
	unsigned int v4 = 0, v6 = 0;

	for (i = 0; i < G_N_ELEMENTS(rxe_kernel_frames); i++) {
		const struct rxe_kernel_frame *f = &rxe_kernel_frames[i];
		struct rxe_icrc_addr a;
		const uint8_t *ib;
		uint32_t len, want, have;

		frame_addr(f, &a, &ib, &len);
		ck_assert_uint_eq(a.dport, ROCE_V2_UDP_PORT);
		want = rxe_icrc_get(ib + len - 4);
		have = rxe_icrc_packet(&a, ib, len - 4);
		ck_assert_msg(have == want, "frame %u opcode 0x%02x: ICRC "
			      "%08x, kernel wrote %08x", f->frame_no, f->opcode,
			      have, want);
		if (f->family == 4) {
			uint16_t id_xor;
			bool df_xor;

			/* What a UDP receiver can do: guess ID 0 with DF,
			 * then solve for the kernel's real ID. */
			a.ip_id = 0;
			a.df = true;
			have = rxe_icrc_packet(&a, ib, len - 4);
			ck_assert_uint_ne(have, want);
			ck_assert(rxe_icrc_solve_ipv4_id(have, want, len,
							 &id_xor, &df_xor));
			ck_assert_uint_eq(id_xor, ib_get16(f->ip + 4));
			ck_assert(!df_xor);
			v4++;
		} else {
			v6++;
		}
	}
	ck_assert_uint_gt(v4, 10);
	ck_assert_uint_gt(v6, 1);
}
END_TEST

START_TEST(test_kernel_frames_bad_icrc)
{
	const struct rxe_kernel_frame *f = &rxe_kernel_frames[0];
	uint8_t copy[2048];
	struct rxe_icrc_addr a;
	const uint8_t *ib;
	uint32_t len, bit, rejected = 0, tried = 0;

	frame_addr(f, &a, &ib, &len);
	ck_assert_uint_le(len, sizeof(copy));
	/* Flip one bit at a time over the whole packet: with the ID
	 * unknown, the solver must still refuse every one it is given. */
	for (bit = 0; bit < (len - 4) * 8; bit += 7) {
		uint16_t id_xor;
		bool df_xor;
		uint32_t have;

		/* BTH byte 4 (FECN, BECN, Resv6a) is outside the ICRC. */
		if (bit / 8 == 4)
			continue;
		memcpy(copy, ib, len);
		copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		a.ip_id = 0;
		a.df = true;
		have = rxe_icrc_packet(&a, copy, len - 4);
		tried++;
		if (!rxe_icrc_solve_ipv4_id(have, rxe_icrc_get(copy + len - 4),
					    len, &id_xor, &df_xor))
			rejected++;
	}
	ck_assert_uint_eq(rejected, tried);
}
END_TEST

/* Header fields of captured frames, as tshark's InfiniBand dissector
 * shows them. */
START_TEST(test_kernel_frames_parse)
{
	size_t i;
	unsigned int checked = 0;

	for (i = 0; i < G_N_ELEMENTS(rxe_kernel_frames); i++) {
		const struct rxe_kernel_frame *f = &rxe_kernel_frames[i];
		const struct ib_opcode_info *op;
		const struct ib_bth *bth;
		struct rxe_icrc_addr a;
		const uint8_t *ib;
		uint32_t len, paylen;

		frame_addr(f, &a, &ib, &len);
		bth = (const struct ib_bth *)ib;
		op = ib_opcode(bth_opcode(bth));
		ck_assert_ptr_nonnull(op);
		ck_assert_uint_eq(bth_opcode(bth), f->opcode);
		ck_assert_uint_eq(bth_tver(bth), 0);
		ck_assert_uint_eq(bth_pkey(bth), 0xffff);
		ck_assert_uint_ge(len, op->hdr_len + bth_pad(bth) + 4u);
		paylen = len - op->hdr_len - bth_pad(bth) - 4;
		if (!(op->flags & IB_F_PAYLOAD))
			ck_assert_uint_eq(paylen, 0);

		switch (f->frame_no) {
		case 1: /* RC SEND_FIRST, MTU 1024 */
			ck_assert_uint_eq(bth_qpn(bth), 0x11);
			ck_assert_uint_eq(bth_psn(bth), 1602321);
			ck_assert(!bth_ackreq(bth));
			ck_assert_uint_eq(paylen, 1024);
			checked++;
			break;
		case 5: /* SEND_LAST with AckReq */
			ck_assert(bth_ackreq(bth));
			ck_assert_uint_eq(bth_psn(bth), 1602325);
			ck_assert_uint_eq(paylen, 5000 - 4 * 1024);
			checked++;
			break;
		case 6: { /* ACK: credit "invalid" 31, MSN 1 */
			const struct ib_aeth *aeth =
				(const void *)(ib + op->aeth_off);

			ck_assert_uint_eq(aeth_syndrome(aeth), 31);
			ck_assert_uint_eq(aeth_type(aeth), AETH_TYPE_ACK);
			ck_assert_uint_eq(aeth_msn(aeth), 1);
			checked++;
			break;
		}
		case 39: { /* UD SEND_ONLY, ibv_ud_pingpong */
			const struct ib_deth *deth =
				(const void *)(ib + op->deth_off);

			ck_assert_uint_eq(deth_qkey(deth), 0x11111111);
			ck_assert_uint_eq(deth_sqpn(deth), 0x13);
			ck_assert_uint_eq(paylen, 256);
			checked++;
			break;
		}
		case 43: { /* WRITE_FIRST: RETH of a 3000-byte write */
			const struct ib_reth *reth =
				(const void *)(ib + op->reth_off);

			ck_assert_uint_eq(reth_va(reth), 0x000055b4881f5000ull);
			ck_assert_uint_eq(reth_rkey(reth), 0x58a);
			ck_assert_uint_eq(reth_len(reth), 3000);
			checked++;
			break;
		}
		case 63: { /* READ_REQUEST */
			const struct ib_reth *reth =
				(const void *)(ib + op->reth_off);

			ck_assert_uint_eq(reth_rkey(reth), 0x6d0);
			ck_assert_uint_eq(reth_len(reth), 3000);
			ck_assert_uint_eq(bth_psn(bth), 4370263);
			checked++;
			break;
		}
		case 67: /* READ_RESPONSE_LAST: 3000 - 2 * 1024 bytes */
			ck_assert_uint_eq(paylen, 3000 - 2048);
			ck_assert_uint_eq(bth_psn(bth), 4370265);
			checked++;
			break;
		case 83: { /* FETCH_ADD: add 1 */
			const struct ib_atmeth *atm =
				(const void *)(ib + op->atmeth_off);

			ck_assert_uint_eq(atmeth_rkey(atm), 0x7c0);
			ck_assert_uint_eq(atmeth_swap_add(atm), 1);
			ck_assert_uint_eq(atmeth_compare(atm), 0);
			checked++;
			break;
		}
		case 88: { /* ATOMIC_ACKNOWLEDGE */
			const struct ib_atmack *ack =
				(const void *)(ib + op->atmack_off);

			ck_assert_uint_eq(atmack_orig(ack),
					  1936115168391936460ull);
			checked++;
			break;
		}
		default:
			break;
		}
	}
	ck_assert_uint_eq(checked, 9);
}
END_TEST

Suite *suite_rxe_wire(void)
{
	Suite *s = suite_create("rxe-wire");
	TCase *tc = tcase_create("headers");

	tcase_add_test(tc, test_opcode_table);
	tcase_add_test(tc, test_headers_byte_exact);
	tcase_add_test(tc, test_psn_arith);
	suite_add_tcase(s, tc);
	tc = tcase_create("icrc");
	tcase_add_test(tc, test_crc32_engine);
	tcase_add_test(tc, test_crc32_long_buffers);
	tcase_add_test(tc, test_kernel_frames_icrc);
	tcase_add_test(tc, test_kernel_frames_bad_icrc);
	tcase_add_test(tc, test_kernel_frames_parse);
	suite_add_tcase(s, tc);
	return s;
}
