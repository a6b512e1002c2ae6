/* SPDX-License-Identifier: MIT */
/*
 * CRC32c (Castagnoli) for MPA (RFC 5044 §4.1 uses iSCSI's CRC, RFC 3720
 * §12.1 / Appendix B).
 *
 * Three ways, chosen once: ISA-L's crc32_iscsi when configure found it
 * (fastest by far, see DESIGN.md); else the SSE4.2 crc32 instruction on
 * three interleaved streams combined with a precomputed shift table; else,
 * for CPUs without SSE4.2 only, slicing-by-8 tables. The SSE4.2 code is
 * compiled with a target attribute and picked with cpuid at run time, so
 * the build never depends on -march.
 *
 * All paths work on the raw CRC register (no pre/post inversion) and the
 * API adds the inversions, so siw_crc32c(siw_crc32c(0, a), b) is the CRC of
 * a followed by b, like zlib's crc32().
 */
#include "config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef HAVE_ISAL
#include <isa-l/crc.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <nmmintrin.h>
#define SIW_CRC_X86 1
#endif

#include "vp/siw/siw.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc_update)(uint32_t reg, const uint8_t *p, size_t len);
static const char *crc_impl = "table";

static uint32_t crc_update_table(uint32_t reg, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		reg = (reg >> 8) ^ crc_table[0][(reg ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = le32toh(lo) ^ reg;
		hi = le32toh(hi);
		reg = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		reg = (reg >> 8) ^ crc_table[0][(reg ^ *p++) & 0xff];
	return reg;
}

#ifdef SIW_CRC_X86
/* Bytes per lane of the 3-way interleave; the shift table moves a lane's
 * CRC register over this many bytes. */
#define CRC_LANE 2048u
static uint32_t crc_shift_table[4][256];

__attribute__((target("sse4.2")))
static uint32_t crc_update_sse42_1(uint32_t reg, const uint8_t *p,
				   size_t len)
{
	uint64_t r = reg;

	while (len && ((uintptr_t)p & 7)) {
		r = _mm_crc32_u8((uint32_t)r, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		r = _mm_crc32_u64(r, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		r = _mm_crc32_u8((uint32_t)r, *p++);
	return (uint32_t)r;
}

/* The register after CRC_LANE zero bytes, starting from @reg. */
static uint32_t crc_shift_lane(uint32_t reg)
{
	return crc_shift_table[0][reg & 0xff] ^
	       crc_shift_table[1][(reg >> 8) & 0xff] ^
	       crc_shift_table[2][(reg >> 16) & 0xff] ^
	       crc_shift_table[3][reg >> 24];
}

/*
 * The crc32 instruction has a latency of 3 cycles and a throughput of 1,
 * so three independent streams keep it busy. CRC is linear:
 * crc(r, A|B) = shift_|B|(crc(r, A)) ^ crc(0, B), which combines the lanes.
 */
__attribute__((target("sse4.2")))
static uint32_t crc_update_sse42(uint32_t reg, const uint8_t *p, size_t len)
{
	while (len >= 3 * CRC_LANE) {
		uint64_t a = reg, b = 0, c = 0;
		const uint8_t *pa = p, *pb = p + CRC_LANE, *pc = p + 2 * CRC_LANE;
		size_t i;

		for (i = 0; i < CRC_LANE; i += 8) {
			uint64_t va, vb, vc;

			memcpy(&va, pa + i, 8);
			memcpy(&vb, pb + i, 8);
			memcpy(&vc, pc + i, 8);
			a = _mm_crc32_u64(a, va);
			b = _mm_crc32_u64(b, vb);
			c = _mm_crc32_u64(c, vc);
		}
		reg = crc_shift_lane(crc_shift_lane((uint32_t)a) ^
				     (uint32_t)b) ^ (uint32_t)c;
		p += 3 * CRC_LANE;
		len -= 3 * CRC_LANE;
	}
	return crc_update_sse42_1(reg, p, len);
}

static bool cpu_has_sse42(void)
{
	unsigned int eax, ebx, ecx, edx;

	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return false;
	return ecx & bit_SSE4_2;
}

static void crc_shift_init(void)
{
	static const uint8_t zeros[CRC_LANE];
	uint32_t basis[32];
	int i, k, b;

	/* shift() is linear: its value on each bit, then XOR per byte. */
	for (i = 0; i < 32; i++)
		basis[i] = crc_update_table(1u << i, zeros, sizeof(zeros));
	for (k = 0; k < 4; k++)
		for (b = 0; b < 256; b++) {
			uint32_t v = 0;

			for (i = 0; i < 8; i++)
				if (b & (1 << i))
					v ^= basis[8 * k + i];
			crc_shift_table[k][b] = v;
		}
}
#endif

#ifdef HAVE_ISAL
static uint32_t crc_update_isal(uint32_t reg, const uint8_t *p, size_t len)
{
	/* crc32_iscsi takes an int length. */
	while (len > (1u << 30)) {
		reg = crc32_iscsi((unsigned char *)p, 1 << 30, reg);
		p += 1u << 30;
		len -= 1u << 30;
	}
	return crc32_iscsi((unsigned char *)p, (int)len, reg);
}
#endif

static void crc_init_once(void)
{
	uint32_t i, j;

	for (i = 0; i < 256; i++) {
		uint32_t c = i;

		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY_REFLECTED : 0);
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_table[j][i] = (crc_table[j - 1][i] >> 8) ^
					  crc_table[0][crc_table[j - 1][i] & 0xff];
	crc_update = crc_update_table;
	crc_impl = "table";
#ifdef SIW_CRC_X86
	if (cpu_has_sse42()) {
		crc_shift_init();
		crc_update = crc_update_sse42;
		crc_impl = "sse4.2";
	}
#endif
#ifdef HAVE_ISAL
	crc_update = crc_update_isal;
	crc_impl = "isa-l";
#endif
}

uint32_t siw_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init_once);
	return ~crc_update(~crc, buf, len);
}

const char *siw_crc32c_impl(void)
{
	pthread_once(&crc_once, crc_init_once);
	return crc_impl;
}

/* For the tests: every compiled path on the same input. */
uint32_t siw_crc32c_path(enum siw_crc_path path, uint32_t crc,
			 const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init_once);
	switch (path) {
	case SIW_CRC_PATH_TABLE:
		return ~crc_update_table(~crc, buf, len);
	case SIW_CRC_PATH_SSE42:
#ifdef SIW_CRC_X86
		/* crc_init_once() built the shift table on such CPUs. */
		if (cpu_has_sse42())
			return ~crc_update_sse42(~crc, buf, len);
#endif
		break;
	case SIW_CRC_PATH_ISAL:
#ifdef HAVE_ISAL
		return ~crc_update_isal(~crc, buf, len);
#endif
		break;
	}
	return ~crc_update(~crc, buf, len);
}
