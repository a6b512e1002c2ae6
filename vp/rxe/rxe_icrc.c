/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 ICRC (IBA annex A17.3.3) and the IPv4 Identification solver.
 *
 * CRC engine: ISA-L's crc32_gzip_refl (PCLMULQDQ folding, selected at run
 * time) when configure found ISA-L, which the project already uses for
 * CRC32c; zlib's crc32 otherwise (slice-by-N tables, a few GB/s). Both
 * compute the reflected Ethernet CRC-32 the ICRC is defined as. On x86-64
 * CPUs with AVX2 and VPCLMULQDQ, buffers of FOLD_MIN bytes and more go
 * through a 256-bit folding loop of our own first (below: why).
 */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#ifdef HAVE_ISAL
#include <isa-l/crc.h>
#else
#include <zlib.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define RXE_CRC_FOLD 1
#endif

#include "vp/rxe/rxe_icrc.h"

uint32_t rxe_crc32_base(uint32_t crc, const void *buf, size_t len)
{
#ifdef HAVE_ISAL
	return crc32_gzip_refl(crc, buf, len);
#else
	while (len > 0) {
		uInt n = len > 1u << 30 ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, buf, n);
		buf = (const uint8_t *)buf + n;
		len -= n;
	}
	return crc;
#endif
}

/* ------------------------------------------------------------------ */
/* Arithmetic in GF(2)[x] / P, in the reflected representation of the */
/* CRC register (bit 31 is x^0, bit 0 is x^31).                       */
/* ------------------------------------------------------------------ */

#define CRC32_POLY_REFLECTED 0xedb88320u
#define GF_ONE 0x80000000u
#define INV_POW_MAX 20	/* x^(-8 * 2^k) for k < 20: packets < 1 MiB */

static uint32_t gf_mulx(uint32_t a)
{
	return (a >> 1) ^ ((a & 1) ? CRC32_POLY_REFLECTED : 0);
}

#ifdef RXE_CRC_FOLD
/* ------------------------------------------------------------------ */
/* 256-bit folding                                                    */
/* ------------------------------------------------------------------ */

/*
 * Why our own: ISA-L 2.30 (Debian 12) runs crc32_gzip_refl_by8_02 on CPUs
 * with AVX2 and VPCLMULQDQ but no AVX-512 (AMD's Zen 3 EPYCs; this
 * project's bench machine is one such): 16-byte lanes, 12.5 GB/s there,
 * which made the ICRC 30 % of a soft-RoCE READ responder's thread at
 * 1 MiB (perf, the commit that added this). The same folds on two
 * 256-bit registers, four 16-byte lanes a round, measure 24 GB/s on
 * 4 KiB packets.
 *
 * The method. Load 16 bytes as a little-endian 128-bit value V: bit i of
 * V is the coefficient of x^(127 - i) of those bytes' polynomial (the
 * first byte's low bit is the highest power, as the reflected CRC reads
 * them), so V = L * x^64 + H with L the low and H the high 64-bit half,
 * each read the same way (bit i <-> x^(63 - i)). A carry-less multiply of
 * two 64-bit values read so gives a 128-bit value read so that stands for
 * their product times x. Moving V forward by D bits, to the lane D bits
 * later in the stream, means multiplying it by x^D modulo P; with
 * k_L = x^(D + 63) mod P and k_H = x^(D - 1) mod P (each at most degree 31,
 * so it fits the upper half of a 64-bit value read that way),
 * clmul(L, k_L) xor clmul(H, k_H) is congruent to V * x^D and XORs into
 * the data found there. Only congruence matters: the CRC of a buffer is a
 * function of its polynomial modulo P, position kept. At the end the four
 * lanes fold into the last one, whose 16 bytes then have the same CRC as
 * every byte up to their end; the base engine finishes those 16 bytes
 * and the tail. The starting register (the ones' complement of @crc, zlib's
 * convention) is the same as XORing it into the first four bytes.
 */
#define FOLD_ROUND 64u	/* bytes per round: two 256-bit registers */
#define FOLD_MIN 256u	/* shorter buffers: the base engine */

static struct {
	pthread_once_t once;
	bool ok;
	/* Per 128-bit lane: k_L, k_H for D = 8 * FOLD_ROUND bits. */
	uint64_t k_round[4] __attribute__((aligned(32)));
	/* k_L, k_H for D = 128 * m bits, m = 1..3: lane m before the last. */
	uint64_t k_lane[4][2] __attribute__((aligned(16)));
} fold = { .once = PTHREAD_ONCE_INIT };

/* x^n mod P as the upper half of a 64-bit value read as above. */
static uint64_t fold_const(unsigned int n)
{
	uint32_t r = GF_ONE;

	while (n--)
		r = gf_mulx(r);
	return (uint64_t)r << 32;
}

static bool cpu_has_fold(void)
{
	unsigned int a, b, c, d, xcr0_lo, xcr0_hi;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return false;
	if (!(c & bit_PCLMUL) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
		return false;
	/* The OS saves the YMM registers (XCR0 bits 1 and 2). */
	__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	(void)xcr0_hi;
	if ((xcr0_lo & 6) != 6)
		return false;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return (b & bit_AVX2) && (c & (1u << 10)); /* ECX 10: VPCLMULQDQ */
}

static void fold_init(void)
{
	unsigned int m;

	fold.ok = cpu_has_fold();
	fold.k_round[0] = fold.k_round[2] = fold_const(8 * FOLD_ROUND + 63);
	fold.k_round[1] = fold.k_round[3] = fold_const(8 * FOLD_ROUND - 1);
	for (m = 1; m < 4; m++) {
		fold.k_lane[m][0] = fold_const(128 * m + 63);
		fold.k_lane[m][1] = fold_const(128 * m - 1);
	}
}

__attribute__((target("avx2,pclmul,vpclmulqdq")))
static uint32_t crc32_fold(uint32_t crc, const uint8_t *p, size_t len)
{
	const __m256i k = _mm256_load_si256((const __m256i *)fold.k_round);
	__m256i a0 = _mm256_loadu_si256((const __m256i *)p);
	__m256i a1 = _mm256_loadu_si256((const __m256i *)(p + 32));
	__m128i lane[4], x;
	uint8_t last[16];
	int m;

	a0 = _mm256_xor_si256(a0, _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0,
						   (int)~crc));
	p += FOLD_ROUND;
	len -= FOLD_ROUND;
	while (len >= FOLD_ROUND) {
		a0 = _mm256_xor_si256(
			_mm256_xor_si256(_mm256_clmulepi64_epi128(a0, k, 0x00),
					 _mm256_clmulepi64_epi128(a0, k, 0x11)),
			_mm256_loadu_si256((const __m256i *)p));
		a1 = _mm256_xor_si256(
			_mm256_xor_si256(_mm256_clmulepi64_epi128(a1, k, 0x00),
					 _mm256_clmulepi64_epi128(a1, k, 0x11)),
			_mm256_loadu_si256((const __m256i *)(p + 32)));
		p += FOLD_ROUND;
		len -= FOLD_ROUND;
	}
	lane[0] = _mm256_castsi256_si128(a0);
	lane[1] = _mm256_extracti128_si256(a0, 1);
	lane[2] = _mm256_castsi256_si128(a1);
	x = _mm256_extracti128_si256(a1, 1);
	for (m = 0; m < 3; m++) {
		const __m128i kl =
			_mm_load_si128((const __m128i *)fold.k_lane[3 - m]);

		x = _mm_xor_si128(
			x, _mm_xor_si128(_mm_clmulepi64_si128(lane[m], kl, 0x00),
					 _mm_clmulepi64_si128(lane[m], kl, 0x11)));
	}
	_mm_storeu_si128((__m128i *)last, x);
	/* A zero register: the ones' complement of ~0 in zlib's terms. */
	crc = rxe_crc32_base(0xffffffffu, last, sizeof(last));
	return rxe_crc32_base(crc, p, len);
}
#endif

uint32_t rxe_crc32(uint32_t crc, const void *buf, size_t len)
{
#ifdef RXE_CRC_FOLD
	if (len >= FOLD_MIN) {
		pthread_once(&fold.once, fold_init);
		if (fold.ok)
			return crc32_fold(crc, buf, len);
	}
#endif
	return rxe_crc32_base(crc, buf, len);
}

const char *rxe_crc32_engine(void)
{
#ifdef RXE_CRC_FOLD
	pthread_once(&fold.once, fold_init);
	if (fold.ok)
#ifdef HAVE_ISAL
		return "vpclmulqdq-256+isa-l";
#else
		return "vpclmulqdq-256+zlib";
#endif
#endif
#ifdef HAVE_ISAL
	return "isa-l";
#else
	return "zlib";
#endif
}

size_t rxe_icrc_phdr(uint8_t *out, const struct rxe_icrc_addr *a,
		     size_t udp_payload_len)
{
	uint8_t *ip = out + 8;
	uint8_t *udp;
	size_t udp_len = 8 + udp_payload_len;

	/* The LRH a RoCEv2 packet does not have counts as ones (A17.3.3). */
	memset(out, 0xff, 8);
	if (a->family == AF_INET) {
		ip[0] = 0x45;			/* version 4, IHL 5 */
		ip[1] = 0xff;			/* TOS: masked */
		ib_put16(ip + 2, (uint16_t)(20 + udp_len));
		ib_put16(ip + 4, a->ip_id);
		ib_put16(ip + 6, a->df ? 0x4000 : 0);
		ip[8] = 0xff;			/* TTL: masked */
		ip[9] = 17;			/* UDP */
		ip[10] = ip[11] = 0xff;	/* header checksum: masked */
		memcpy(ip + 12, a->saddr, 4);
		memcpy(ip + 16, a->daddr, 4);
		udp = ip + 20;
	} else {
		/* Version 6, traffic class and flow label masked. */
		ip[0] = 0x6f;
		ip[1] = ip[2] = ip[3] = 0xff;
		ib_put16(ip + 4, (uint16_t)udp_len);
		ip[6] = 17;
		ip[7] = 0xff;			/* hop limit: masked */
		memcpy(ip + 8, a->saddr, 16);
		memcpy(ip + 24, a->daddr, 16);
		udp = ip + 40;
	}
	ib_put16(udp, a->sport);
	ib_put16(udp + 2, a->dport);
	ib_put16(udp + 4, (uint16_t)udp_len);
	udp[6] = udp[7] = 0xff; /* UDP checksum: masked */
	return (size_t)(udp + 8 - out);
}

uint32_t rxe_icrc_begin(const struct rxe_icrc_addr *a, size_t udp_payload_len,
			const struct ib_bth *bth)
{
	uint8_t buf[RXE_ICRC_PHDR_MAX + IB_BTH_BYTES];
	size_t n = rxe_icrc_phdr(buf, a, udp_payload_len);

	memcpy(buf + n, bth->b, IB_BTH_BYTES);
	buf[n + 4] = 0xff;			/* FECN, BECN, Resv6a */
	return rxe_crc32(0, buf, n + IB_BTH_BYTES);
}

uint32_t rxe_icrc_packet(const struct rxe_icrc_addr *a, const uint8_t *pkt,
			 size_t len)
{
	uint32_t crc = rxe_icrc_begin(a, len + IB_ICRC_BYTES,
				      (const struct ib_bth *)pkt);

	return rxe_crc32(crc, pkt + IB_BTH_BYTES, len - IB_BTH_BYTES);
}

/* ------------------------------------------------------------------ */
/* The IPv4 Identification solver, and the arithmetic it needs        */
/* ------------------------------------------------------------------ */

/* Inverse of gf_mulx: x^0 of @b tells whether the polynomial was added. */
static uint32_t gf_divx(uint32_t b)
{
	uint32_t c = b >> 31;

	return ((b ^ (c ? CRC32_POLY_REFLECTED : 0)) << 1) | c;
}

static uint32_t gf_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;
	int i;

	for (i = 0; i < 32; i++) {
		if (a & (GF_ONE >> i))
			p ^= b;
		b = gf_mulx(b);
	}
	return p;
}

/* Raw CRC register of @len bytes from a zero register, no final xor:
 * the linear part of the CRC. */
static uint32_t crc_linear(const uint8_t *buf, size_t len)
{
	uint32_t crc = 0;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		for (k = 0; k < 8; k++)
			crc = gf_mulx(crc);
	}
	return crc;
}

struct id_basis {
	uint32_t vec;	 /* reduced difference vector */
	uint32_t pivot;	 /* its leading bit, unique among the basis */
	uint32_t combo;	 /* which of the 17 unknown bits make it up */
};

static struct {
	pthread_once_t once;
	uint32_t inv_pow[INV_POW_MAX];	/* x^(-8 * 2^k) */
	struct id_basis basis[17];
	int n_basis;
} solver = { .once = PTHREAD_ONCE_INIT };

static void solver_init(void)
{
	uint32_t x_inv8 = GF_ONE;
	int i, j, k;

	for (i = 0; i < 8; i++)
		x_inv8 = gf_divx(x_inv8);
	solver.inv_pow[0] = x_inv8;
	for (k = 1; k < INV_POW_MAX; k++)
		solver.inv_pow[k] = gf_mul(solver.inv_pow[k - 1],
					   solver.inv_pow[k - 1]);

	/* Unknowns: 16 ID bits (IP header bytes 4-5) and DF (byte 6 bit 6),
	 * seen as a 3-byte difference ending at the flags byte. */
	for (i = 0; i < 17; i++) {
		uint8_t delta[3] = { 0, 0, 0 };
		struct id_basis nb;

		if (i < 16)
			delta[i < 8 ? 1 : 0] = (uint8_t)(1u << (i % 8));
		else
			delta[2] = 0x40;
		nb.vec = crc_linear(delta, 3);
		nb.combo = 1u << i;
		for (j = 0; j < solver.n_basis; j++)
			if (nb.vec & solver.basis[j].pivot) {
				nb.vec ^= solver.basis[j].vec;
				nb.combo ^= solver.basis[j].combo;
			}
		if (!nb.vec)
			continue; /* cannot happen: 24-bit bursts show */
		nb.pivot = 1u << (31 - __builtin_clz(nb.vec));
		for (j = 0; j < solver.n_basis; j++)
			if (solver.basis[j].vec & nb.pivot) {
				solver.basis[j].vec ^= nb.vec;
				solver.basis[j].combo ^= nb.combo;
			}
		solver.basis[solver.n_basis++] = nb;
	}
}

bool rxe_icrc_solve_ipv4_id(uint32_t computed, uint32_t received,
			    size_t udp_payload_len, uint16_t *id_xor,
			    bool *df_xor)
{
	/* Bytes the CRC covers after the IPv4 flags byte: the rest of the
	 * IPv4 header (13), UDP (8), BTH .. pad (payload minus ICRC). */
	size_t after = 13 + 8 + udp_payload_len - IB_ICRC_BYTES;
	uint32_t t = computed ^ received;
	uint32_t combo = 0;
	int k;

	pthread_once(&solver.once, solver_init);
	if (after >> INV_POW_MAX)
		return false;
	/* Undo the x^(8 * after) the trailing bytes multiplied in. */
	for (k = 0; k < INV_POW_MAX; k++)
		if (after & (1u << k))
			t = gf_mul(solver.inv_pow[k], t);
	for (k = 0; k < solver.n_basis; k++)
		if (t & solver.basis[k].pivot) {
			t ^= solver.basis[k].vec;
			combo ^= solver.basis[k].combo;
		}
	if (t)
		return false;
	*id_xor = (uint16_t)combo;
	*df_xor = combo >> 16;
	return true;
}
