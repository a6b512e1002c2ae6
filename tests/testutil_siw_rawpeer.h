/* SPDX-License-Identifier: MIT */
/*
 * A raw iWARP peer for the hostile tests: it runs the MPA handshake by
 * hand on a plain TCP socket and then sends whatever FPDU a test crafts,
 * true or not, and reads back what the provider answers.
 */
#ifndef TESTS_TESTUTIL_SIW_RAWPEER_H
#define TESTS_TESTUTIL_SIW_RAWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/testutil_siw.h"
#include "vp/siw/iwarp.h"

struct rawpeer {
	int fd;
	bool crc;
	struct mpa_rr reply;
	struct mpa_v2_data reply_v2;
	struct rnicpi_conn *conn;
};

/* Connect a raw initiator to @s's QP (the responder): send an MPA Request
 * with @rev/@flags (+ IRD/ORD @v2 when @flags has ENHANCED), let the
 * provider accept when @accept, read the Reply. 0 or -errno. */
int raw_connect(struct rawpeer *r, struct h_side *s, uint8_t rev,
		uint8_t flags, const struct mpa_v2_data *v2, bool accept);
/* The mirror image: @s's QP connects (iw_connect, IRD/ORD 4) to a raw
 * responder that reads the Request and answers with an enhanced Reply,
 * CRC as the Request asked. 0 or -errno. */
int raw_accept(struct rawpeer *r, struct h_side *s);
/* The same with the Reply's IRD @ird. */
int raw_accept_ird(struct rawpeer *r, struct h_side *s, uint16_t ird);
/* raw_accept() answering as a hostrdma responder that takes FPDUs beyond
 * the MSS (the Request must offer them). */
int raw_accept_large(struct rawpeer *r, struct h_side *s);
/* Send one FPDU: @hdr (its MPA length is filled in unless @mpa_len is
 * non-zero), then @payload, pad, CRC (corrupted when @bad_crc). */
void raw_send_fpdu(struct rawpeer *r, void *hdr, size_t hdr_len,
		   const void *payload, size_t len, uint16_t mpa_len,
		   bool bad_crc);
/* Build in @out (room for @hdr_len + @len + 8 bytes) the FPDU that
 * raw_send_fpdu() would send; returns its size. */
size_t raw_build_fpdu(struct rawpeer *r, uint8_t *out, void *hdr,
		      size_t hdr_len, const void *payload, size_t len,
		      uint16_t mpa_len, bool bad_crc);
/* Send @len raw bytes. */
void raw_send_bytes(struct rawpeer *r, const void *buf, size_t len);
/* Read one FPDU into @buf ([MPA length][ULPDU]); returns the ULPDU length
 * or -errno (-ETIMEDOUT, -ECONNRESET, -EBADMSG for a bad CRC). */
int raw_recv_fpdu(struct rawpeer *r, uint8_t *buf, size_t max,
		  int timeout_ms);
/* Wait for the provider to close the stream (EOF or reset). */
bool raw_wait_close(struct rawpeer *r, int timeout_ms);
void raw_close(struct rawpeer *r);

#endif
