/* SPDX-License-Identifier: MIT */
/* What the files of the siw-hostile suite share: check_siw_hostile.c (the
 * suite and these helpers), check_siw_hostile_read.c and
 * check_siw_hostile_stream.c. */
#ifndef TESTS_CHECK_SIW_HOSTILE_H
#define TESTS_CHECK_SIW_HOSTILE_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "vp/siw/iwarp.h"

#define GUARD 256
#define LEN 4096

/* Our side (a device, a QP, regions: read-write, read-only, one of
 * another PD, a receive buffer) and the raw peer that lies to it. */
struct target {
	struct h_dev *d;
	struct h_side s;
	struct rnicpi_pd *pd2;
	struct h_buf rw, ro, other, rbuf;
	struct rawpeer r;
};

void target_up(struct target *t, const struct rnicpi_option *opts);
void target_down(struct target *t);
/* Whether no byte of @b changed (and its guards are whole). */
bool untouched(const struct h_buf *b);
/* The raw peer connects to @t with MPA request flags @flags. */
void connect_raw(struct target *t, uint8_t flags);
/* The raw peer receives exactly this Terminate, and our QP the async
 * event @event (check_siw_hostile.c says what each argument checks). */
void expect_terminate(struct target *t, uint8_t layer, uint8_t etype,
		      uint8_t ecode, const uint8_t *hdr, size_t ddp_len,
		      bool rreq, enum rnicpi_event_type event);
void tagged_hdr(struct iwarp_tagged_hdr *h, uint8_t opcode,
		uint32_t stag, uint64_t to);
void send_hdr(struct iwarp_untagged_hdr *h, uint8_t opcode,
	      uint32_t qn, uint32_t msn, uint32_t mo, bool last);

/* What the lies carry, LEN bytes. */
extern uint8_t payload[LEN];

#endif
