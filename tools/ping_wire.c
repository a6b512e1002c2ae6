/* SPDX-License-Identifier: MIT */
/* rping's messages as hostrdma-ping reads them; see ping_wire.h. */
#include "tools/ping_wire.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <string.h>

int ping_advert_take(const char *prog, const struct ping_advert *a,
		     uint32_t max, uint64_t *addr, uint32_t *rkey,
		     uint32_t *len)
{
	*addr = be64toh(a->buf_be);
	*rkey = ntohl(a->rkey_be);
	*len = ntohl(a->size_be);
	if (*len == 0 || *len > max) {
		fprintf(stderr, "%s: the client advertised %u bytes, our buffers hold %u (-S)\n",
			prog, *len, max);
		return -1;
	}
	return 0;
}

uint32_t ping_echo_len(const uint8_t *buf, uint32_t size)
{
	return (uint32_t)strnlen((const char *)buf, size - 1) + 1;
}
