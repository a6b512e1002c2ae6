/* SPDX-License-Identifier: MIT */
/*
 * ping_wire.h - what hostrdma-ping reads from its peer: rping's advert
 * (struct rping_rdma_info in rdma-core's librdmacm/examples/rping.c), the
 * one message of the protocol, and the text the server echoes. Kept apart
 * from the program so that the fuzz target (tests/fuzz/fuzz_tools.c)
 * runs the same checks.
 */
#ifndef HOSTRDMA_PING_WIRE_H
#define HOSTRDMA_PING_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* rping's advert: what a Send carries, big-endian. */
struct ping_advert {
	uint64_t buf_be;
	uint32_t rkey_be;
	uint32_t size_be;
} __attribute__((packed));
_Static_assert(sizeof(struct ping_advert) == 16, "rping advert is 16 bytes");

/* The advert @a the peer sent, checked against buffers of @max bytes:
 * 0 with its address, rkey and length, or -1 with a message on stderr
 * (prefixed @prog) for a length of 0 or over @max. */
int ping_advert_take(const char *prog, const struct ping_advert *a,
		     uint32_t max, uint64_t *addr, uint32_t *rkey,
		     uint32_t *len);

/* How many bytes of the @size-byte buffer @buf the server writes back:
 * rping echoes the text up to its NUL, which the last byte always is. */
uint32_t ping_echo_len(const uint8_t *buf, uint32_t size);

#endif
