/* SPDX-License-Identifier: MIT */
/*
 * rxe_icrc.h - the RoCEv2 Invariant CRC (IBA annex A17.3.3).
 *
 * The ICRC is the Ethernet CRC-32 (reflected, polynomial 0x04C11DB7, as
 * zlib's crc32), not CRC32c. It covers 8 bytes of ones standing for the
 * LRH, the IP header with its variant fields set to ones (IPv4: TOS, TTL,
 * header checksum; IPv6: traffic class, flow label, hop limit), the UDP
 * header with its checksum set to ones, the BTH with byte 4 (FECN, BECN,
 * Resv6a) set to ones, then every byte after the BTH up to the ICRC. The
 * result is stored least significant byte first.
 */
#ifndef VP_RXE_ICRC_H
#define VP_RXE_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vp/rxe/ib_hdr.h"

/* Largest masked pseudo-header: LRH ones + IPv6 + UDP. */
#define RXE_ICRC_PHDR_MAX (8 + 40 + 8)

/* The IP/UDP addressing of one packet as the ICRC sees it. Addresses and
 * ports in network order as they are on the wire. */
struct rxe_icrc_addr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t saddr[16];	/* IPv4: first 4 bytes */
	uint8_t daddr[16];
	uint16_t sport;		/* host order */
	uint16_t dport;		/* host order */
	uint16_t ip_id;		/* IPv4 Identification, host order */
	bool df;		/* IPv4 Don't Fragment */
};

/* CRC-32 with zlib's conventions: crc32(0, ...) starts a CRC, the result
 * of one call is the @crc of the next. On x86-64 CPUs with AVX2 and
 * VPCLMULQDQ, long buffers go through a 256-bit folding loop; the rest
 * through rxe_crc32_base(). */
uint32_t rxe_crc32(uint32_t crc, const void *buf, size_t len);

/* The same with ISA-L's crc32_gzip_refl when configured, zlib's crc32
 * otherwise, on every CPU. */
uint32_t rxe_crc32_base(uint32_t crc, const void *buf, size_t len);

/* Which engine rxe_crc32() uses on this CPU, for logs. */
const char *rxe_crc32_engine(void);

/* Write the masked pseudo-header (LRH ones, IP, UDP) of a packet whose UDP
 * payload (BTH .. ICRC) is @udp_payload_len bytes into @out; returns its
 * length. */
size_t rxe_icrc_phdr(uint8_t *out, const struct rxe_icrc_addr *a,
		     size_t udp_payload_len);

/* CRC state after the pseudo-header and the masked BTH: continue it with
 * rxe_crc32() over the rest of the headers, the payload and the pad. */
uint32_t rxe_icrc_begin(const struct rxe_icrc_addr *a, size_t udp_payload_len,
			const struct ib_bth *bth);

/* ICRC of a whole packet in one buffer (@pkt = BTH .. end of pad, without
 * the ICRC itself, @len bytes). */
uint32_t rxe_icrc_packet(const struct rxe_icrc_addr *a, const uint8_t *pkt,
			 size_t len);

/*
 * A UDP socket does not tell the receiver the IPv4 Identification and DF
 * bit the sender's kernel chose, yet the ICRC covers both. Given the ICRC
 * @computed under some guess of the ID and DF and the @received one, find
 * which of those 17 bits differ from the guess: the CRC is linear, so the
 * difference must lie in the 17-dimensional space those bits span.
 * @udp_payload_len as above. True and *@id_xor (ID bits to flip) and
 * *@df_xor (DF to flip) set when a solution exists; the other 15 bits of
 * the difference still check the packet.
 */
bool rxe_icrc_solve_ipv4_id(uint32_t computed, uint32_t received,
			    size_t udp_payload_len, uint16_t *id_xor,
			    bool *df_xor);

/* Read / write the ICRC trailer (little-endian, A17.3.3). */
static inline uint32_t rxe_icrc_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void rxe_icrc_put(uint8_t *p, uint32_t crc)
{
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}

#endif /* VP_RXE_ICRC_H */
