/* SPDX-License-Identifier: MIT */
/*
 * RoCEv2 ICRC (IBA annex A17.3.3) and the IPv4 Identification solver.
 *
 * CRC engine: ISA-L's crc32_gzip_refl (PCLMULQDQ folding, selected at run
 * time, tens of GB/s) when configure found ISA-L, which the project already
 * uses for CRC32c; zlib's crc32 otherwise (slice-by-N tables, a few GB/s).
 * Both compute the reflected Ethernet CRC-32 the ICRC is defined as.
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

#include "vp/rxe/rxe_icrc.h"

uint32_t rxe_crc32(uint32_t crc, const void *buf, size_t len)
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
