/* SPDX-License-Identifier: MIT */
/*
 * siw-hostile, the connection and the stream: MPA markers refused,
 * peer-to-peer RTR, a peer that dies in the middle of a message, and a true
 * stream of FPDUs cut at every kind of place (all of it placed, exactly).
 * The suite, its raw-peer target and the other lies are in
 * check_siw_hostile.c and check_siw_hostile_read.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check_siw_hostile.h"
#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

/* RFC 5044 §7.1 markers: refused with an MPA Reject. */
START_TEST(test_markers_refused)
{
	struct target t;
	struct mpa_v2_data v2;
	struct h_conn_ev ev;

	target_up(&t, NULL);
	mpa_v2_set(&v2, 4, 4, false, 0);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2,
				 MPA_FLAG_ENHANCED | MPA_FLAG_MARKERS, &v2,
				 false));
	ck_assert(mpa_rr_is_reply(&t.r.reply));
	ck_assert(t.r.reply.flags & MPA_FLAG_REJECT);
	ck_assert(!(t.r.reply.flags & MPA_FLAG_MARKERS));
	ck_assert(raw_wait_close(&t.r, H_WAIT_MS));
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ERROR, t.r.conn, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -EOPNOTSUPP);
	target_down(&t);
}
END_TEST

/* RFC 6581 §9.2: a responder in peer-to-peer mode echoes P2P, picks the
 * Write RTR, and refuses a first FPDU that is not that RTR. */
START_TEST(test_p2p_rtr)
{
	struct target t;
	struct mpa_v2_data v2;
	struct iwarp_tagged_hdr h;
	struct iwarp_untagged_hdr u;

	target_up(&t, NULL);
	mpa_v2_set(&v2, 4, 4, true, MPA_V2_WRITE_RTR | MPA_V2_READ_RTR);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2, MPA_FLAG_ENHANCED, &v2,
				 true));
	ck_assert(mpa_v2_p2p(&t.r.reply_v2));
	ck_assert_uint_eq(mpa_v2_rtr(&t.r.reply_v2), MPA_V2_WRITE_RTR);
	/* Not established before the RTR. */
	ck_assert(!h_wait_conn(t.d, RNICPI_CONN_ESTABLISHED, t.s.qp, NULL,
			       50));
	tagged_hdr(&h, RDMAP_RDMA_WRITE, 1, 0);
	raw_send_fpdu(&t.r, &h, sizeof(h), NULL, 0, 0, false);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ESTABLISHED, t.s.qp, NULL,
			      H_WAIT_MS));
	target_down(&t);

	target_up(&t, NULL);
	ck_assert_ok(raw_connect(&t.r, &t.s, MPA_REV2, MPA_FLAG_ENHANCED, &v2,
				 true));
	send_hdr(&u, RDMAP_SEND, 0, 1, 0, true);
	raw_send_fpdu(&t.r, &u, sizeof(u), payload, 4, 0, false);
	expect_terminate(&t, TERM_LAYER_LLP, 0, MPA_ECODE_NO_MATCHING_RTR,
			 NULL, 0, false, RNICPI_EVENT_QP_REQ_ERR);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_ERROR, t.s.qp, NULL,
			      H_WAIT_MS));
	ck_assert(untouched(&t.rbuf));
	target_down(&t);
}
END_TEST

/* The peer dies in the middle of a Send: the receive flushes, the
 * connection reports the loss, nothing hangs. */
START_TEST(test_peer_dies_mid_message)
{
	struct target t;
	struct iwarp_untagged_hdr h;
	struct rnicpi_wc wc;
	struct h_conn_ev ev;

	target_up(&t, NULL);
	connect_raw(&t, 0);
	send_hdr(&h, RDMAP_SEND, 0, 1, 0, true);
	iwarp_set_mpa_len(&h.ctrl, 18 + 90);
	raw_send_bytes(&t.r, &h, sizeof(h));
	raw_send_bytes(&t.r, payload, 30);
	raw_close(&t.r);
	ck_assert(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 777);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	ck_assert(h_wait_conn(t.d, RNICPI_CONN_DISCONNECTED, t.s.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -ECONNRESET);
	ck_assert(h_wait_async(t.d, RNICPI_EVENT_QP_FATAL, t.s.qp, NULL,
			       H_WAIT_MS));
	ck_assert(h_buf_guards_ok(&t.rbuf));
	target_down(&t);
}
END_TEST

/* xorshift32: the stream's sizes, offsets, bytes and cuts. */
static uint32_t stream_rand(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

#define STREAM_FPDUS 400
#define STREAM_RECVS 128
#define STREAM_SLOT 256

/*
 * A stream of small and large FPDUs as a peer may send it: RDMA Writes of
 * 0 to 3000 bytes at scattered offsets of one region (later ones over
 * earlier ones) and Sends of 0 to 200 bytes into posted receives, written
 * in one piece or cut into pieces of 1 to 61 bytes. However the stream
 * is cut and however much of it one read takes, every byte lands where
 * its FPDU says and nowhere else, and every receive completes in order
 * with its length and bytes.
 */
static void fpdu_stream(bool crc, bool cut)
{
	const struct rnicpi_option crc_on[] = { { "mpa_crc", "on" },
						{ NULL } };
	static uint8_t shadow[LEN], body[3000], stream[1 << 20];
	uint32_t x = crc ? 0x9e3779b9u : 0x7f4a7c15u;
	uint32_t send_len[STREAM_RECVS + 1];
	uint8_t *send_first[STREAM_RECVS + 1];
	struct target t;
	struct h_buf rq;
	size_t used = 0, sent = 0;
	uint32_t n_send = 0, msn = 1, i;
	int one = 1;

	target_up(&t, crc ? crc_on : NULL);
	h_buf_alloc(&rq, STREAM_RECVS * STREAM_SLOT, GUARD);
	h_buf_reg(&rq, &t.s, RNICPI_ACCESS_LOCAL_WRITE);
	for (i = 0; i < STREAM_RECVS; i++)
		h_post_recv(&t.s, &rq, i * STREAM_SLOT, STREAM_SLOT, 1000 + i);
	connect_raw(&t, crc ? MPA_FLAG_CRC : 0);
	ck_assert(t.r.crc == crc);
	ck_assert_int_eq(setsockopt(t.r.fd, IPPROTO_TCP, TCP_NODELAY, &one,
				    sizeof(one)), 0);
	memset(shadow, 0, sizeof(shadow));

	for (i = 0; i < STREAM_FPDUS; i++) {
		/* The last FPDU is a Send: its completion says all is in. */
		bool is_send = i == STREAM_FPDUS - 1 ||
			       (stream_rand(&x) % 4 == 0 &&
				n_send < STREAM_RECVS);
		uint32_t len, k;

		if (is_send) {
			struct iwarp_untagged_hdr h;

			/* The first receive is target_up's 100 bytes. */
			len = stream_rand(&x) % (n_send ? 201 : 101);
			for (k = 0; k < len; k++)
				body[k] = (uint8_t)stream_rand(&x);
			send_hdr(&h, RDMAP_SEND, 0, msn++, 0, true);
			send_len[n_send] = len;
			send_first[n_send] = stream + used + sizeof(h);
			n_send++;
			used += raw_build_fpdu(&t.r, stream + used, &h,
					       sizeof(h), body, len, 0, false);
		} else {
			struct iwarp_tagged_hdr h;
			uint32_t sizes[] = { 0, 1, 3, 8, 15, 16, 17, 33, 64,
					     200, 1000, 2047, 2049, 3000 };
			uint32_t off;

			len = sizes[stream_rand(&x) % G_N_ELEMENTS(sizes)];
			off = stream_rand(&x) % (LEN - len + 1);
			for (k = 0; k < len; k++)
				body[k] = (uint8_t)stream_rand(&x);
			memcpy(shadow + off, body, len);
			tagged_hdr(&h, RDMAP_RDMA_WRITE, t.rw.mr->rkey,
				   (uint64_t)(uintptr_t)t.rw.p + off);
			used += raw_build_fpdu(&t.r, stream + used, &h,
					       sizeof(h), body, len, 0, false);
		}
		ck_assert_uint_lt(used + 4096, sizeof(stream));
	}
	while (sent < used) {
		size_t piece = cut ? 1 + stream_rand(&x) % 61 : used - sent;

		if (piece > used - sent)
			piece = used - sent;
		raw_send_bytes(&t.r, stream + sent, piece);
		sent += piece;
		/* Let the receiver catch up now and then, so that its
		 * reads end inside headers, payloads and trailers. */
		if (cut && stream_rand(&x) % 8 == 0)
			g_usleep(50);
	}

	for (i = 0; i < n_send; i++) {
		struct rnicpi_wc wc;
		const uint8_t *slot = i ? rq.p + (i - 1) * STREAM_SLOT
					: t.rbuf.p;
		size_t slot_len = i ? STREAM_SLOT : 100;

		ck_assert_msg(h_poll(&t.s, t.s.rcq, &wc, H_WAIT_MS),
			      "receive %u of %u did not complete", i, n_send);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, i ? 1000 + i - 1 : 777);
		ck_assert_uint_eq(wc.byte_len, send_len[i]);
		ck_assert_mem_eq(slot, send_first[i], send_len[i]);
		for (size_t k = send_len[i]; k < slot_len; k++)
			ck_assert_uint_eq(slot[k], 0);
	}
	ck_assert_mem_eq(t.rw.p, shadow, LEN);
	ck_assert(h_buf_guards_ok(&t.rw) && h_buf_guards_ok(&rq) &&
		  h_buf_guards_ok(&t.rbuf));
	ck_assert(untouched(&t.ro) && untouched(&t.other));
	ck_assert_ok(t.d->ops->dereg_mr(rq.mr));
	h_buf_free(&rq);
	target_down(&t);
}

START_TEST(test_stream_whole)
{
	fpdu_stream(false, false);
}
END_TEST

START_TEST(test_stream_cut)
{
	fpdu_stream(false, true);
}
END_TEST

START_TEST(test_stream_cut_crc)
{
	fpdu_stream(true, true);
}
END_TEST

/* The connection and stream tests of suite_siw_hostile()'s "hostile" case. */
void siw_hostile_add_stream_tests(TCase *tc)
{
	tcase_add_test(tc, test_markers_refused);
	tcase_add_test(tc, test_p2p_rtr);
	tcase_add_test(tc, test_peer_dies_mid_message);
	tcase_add_test(tc, test_stream_whole);
	tcase_add_test(tc, test_stream_cut);
	tcase_add_test(tc, test_stream_cut_crc);
}
