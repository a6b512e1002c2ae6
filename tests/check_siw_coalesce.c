/* SPDX-License-Identifier: MIT */
/*
 * siw-coalesce: work requests posted with RNICPI_SEND_MORE (IT-API's
 * IT_COALESCE_WR_FLAG) wait for the next one posted without it, or for
 * the consumer to poll; small messages queued back to back go into the
 * pack and out in one sendmsg() (option tx_pack), with CRC and without,
 * mixed with messages too large for it, and through a socket that fills
 * up while a pack is on its way. Every byte is checked where it should
 * land and around it.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil_siw.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

/* The sender's sendmsg() calls so far, and the WRs in its send queue
 * that have not started (provider internals, read under the QP lock). */
struct sq_look {
	uint64_t calls;
	uint32_t unstarted;
};

static struct sq_look sq_look(struct rnicpi_qp *q)
{
	struct siw_qp *qp = to_siw_qp(q);
	struct sq_look l;

	pthread_mutex_lock(&qp->lock);
	l.calls = qp->tx_calls;
	l.unstarted = qp->sq_unstarted;
	pthread_mutex_unlock(&qp->lock);
	return l;
}

static uint64_t tx_calls(struct rnicpi_qp *q)
{
	return sq_look(q).calls;
}

static uint32_t held_wrs(struct rnicpi_qp *q)
{
	return sq_look(q).unstarted;
}

/* Where a stuck transfer stands, for a failure message (static buffer). */
static const char *tx_state(struct rnicpi_qp *qa, struct rnicpi_qp *qb)
{
	static char text[256];
	struct siw_qp *a = to_siw_qp(qa), *b = to_siw_qp(qb);

	pthread_mutex_lock(&a->lock);
	snprintf(text, sizeof(text),
		 "sender: state %d llp %d want_out %d tx kind %d sent %u/%u, "
		 "pack %u/%u, queue %u from %u, %u not started",
		 a->state, a->llp, a->tx.want_out, a->tx.kind,
		 a->tx.fpdu_sent, a->tx.fpdu_total, a->tx.pack_sent,
		 a->tx.pack_len, a->sq_count, a->sq_head, a->sq_unstarted);
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_lock(&b->lock);
	snprintf(text + strlen(text), sizeof(text) - strlen(text),
		 "; receiver: rx state %d llp %d", b->rx.state, b->llp);
	pthread_mutex_unlock(&b->lock);
	return text;
}

static bool all_zero(const struct h_buf *b, size_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (b->p[off + i])
			return false;
	return true;
}

/* A zero-length Send behind everything a posted: once b has it, all that
 * came before has landed (one stream, in order). */
static void barrier_send(struct h_pair *p, struct h_buf *d, uint64_t id)
{
	h_post_recv(&p->b, d, 0, 0, id);
	ck_assert_ok(h_post_send(&p->a, RNICPI_WR_SEND, NULL, 0, 0, id + 1,
				 0, 0, 0));
	h_expect_wc(&p->b, p->b.rcq, id, RNICPI_WC_SUCCESS, RNICPI_WC_RECV,
		    0);
}

/*
 * Eight 100-byte WRITEs posted with RNICPI_SEND_MORE stay in the send
 * queue: no system call, nothing at the target, even after a while. Then
 * a ninth without the flag (_i == 0), or a poll of the send CQ (_i == 1),
 * starts them all, packed into one sendmsg().
 */
START_TEST(test_held_until_released)
{
	const unsigned int n = 8;
	struct h_buf s, d;
	struct h_pair p;
	struct rnicpi_wc wc;
	uint64_t calls;
	unsigned int i, total = _i == 0 ? n + 1 : n;

	h_pair_up_bufs(&p, NULL, NULL, &s, &d, 4096, 31);
	calls = tx_calls(p.a.qp);
	for (i = 0; i < n; i++)
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &s,
					 i * 100, 100, i,
					 RNICPI_SEND_SIGNALED |
						 RNICPI_SEND_MORE,
					 (uint64_t)(uintptr_t)d.p + i * 100,
					 d.mr->rkey));
	usleep(50 * 1000);
	ck_assert_uint_eq(held_wrs(p.a.qp), n);
	ck_assert_uint_eq(tx_calls(p.a.qp), calls);
	ck_assert(all_zero(&d, 0, d.len));

	if (_i == 0) {
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &s,
					 n * 100, 100, n,
					 RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)d.p + n * 100,
					 d.mr->rkey));
		ck_assert_uint_eq(held_wrs(p.a.qp), 0);
		for (i = 0; i < total; i++)
			h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
				    RNICPI_WC_RDMA_WRITE, 100);
	} else {
		/* The poll finds the CQ empty and starts what is held. */
		ck_assert(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS));
		ck_assert_uint_eq(wc.wr_id, 0);
		for (i = 1; i < total; i++)
			h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
				    RNICPI_WC_RDMA_WRITE, 100);
	}
	ck_assert_uint_eq(tx_calls(p.a.qp) - calls, 1);
	barrier_send(&p, &d, 100);
	ck_assert(h_buf_check(&d, 0, total * 100, 31, 0));
	ck_assert(all_zero(&d, total * 100, d.len - total * 100));
	ck_assert(h_buf_guards_ok(&d));
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/*
 * One burst of WRITEs, SENDs and READs of sizes from 0 to 9000 bytes
 * (some larger than tx_pack, which go out by themselves), all but the
 * last posted with RNICPI_SEND_MORE. Each lands byte-exact, the bytes
 * between and after the targets stay untouched, every WR completes with
 * its length. _i: 0 default, 1 with MPA CRC on both ends (the receiver
 * checks every packed FPDU's CRC), 2 with tx_pack=0 (every message its
 * own call, as before the pack).
 */
START_TEST(test_mixed_burst)
{
	static const struct rnicpi_option crc[] = { { "mpa_crc", "on" },
						    { NULL, NULL } };
	static const struct rnicpi_option nopack[] = { { "tx_pack", "0" },
						       { NULL, NULL } };
	static const size_t sizes[] = { 0, 1, 3, 64, 1000, 4096, 4097, 9000,
					200, 8, 4095, 13 };
	const struct rnicpi_option *opts[] = { NULL, crc, nopack };
	const size_t nsz = sizeof(sizes) / sizeof(sizes[0]);
	const size_t len = 256 * 1024;
	/* a: s (source, seed 41), sink (READ targets); b: d (WRITE
	 * targets), rb (receives), src (READ sources, seed 42). */
	struct h_buf s, sink, d, rb, src;
	size_t wcur = 0, scur = 0, rcur = 0;
	unsigned int k, nwr = 0, nrecv = 0, msgs = 0;
	bool seen[3 * 12] = { false };
	struct h_pair p;
	uint64_t calls;

	h_pair_up_opts(&p, opts[_i], opts[_i], 0);
	h_pair_connect(&p);
	h_buf_alloc(&s, len, H_GUARD);
	h_buf_fill(&s, 41);
	h_buf_reg(&s, &p.a, H_RW);
	h_buf_alloc(&sink, len, H_GUARD);
	h_buf_reg(&sink, &p.a, H_RW);
	h_buf_alloc(&d, len, H_GUARD);
	h_buf_reg(&d, &p.b, H_RW);
	h_buf_alloc(&rb, len, H_GUARD);
	h_buf_reg(&rb, &p.b, H_RW);
	h_buf_alloc(&src, len, H_GUARD);
	h_buf_fill(&src, 42);
	h_buf_reg(&src, &p.b, H_RW);

	calls = tx_calls(p.a.qp);
	for (k = 0; k < 3 * nsz; k++) {
		size_t n = sizes[k % nsz];
		unsigned int fl = RNICPI_SEND_SIGNALED;

		if (k + 1 < 3 * nsz)
			fl |= RNICPI_SEND_MORE;
		switch (k % 3) {
		case 0: /* WRITE s[wcur] -> d[wcur] */
			ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE,
						 &s, wcur, n, k, fl,
						 (uint64_t)(uintptr_t)d.p +
							 wcur,
						 d.mr->rkey));
			wcur += n;
			break;
		case 1: /* SEND s[scur] -> rb[scur] */
			h_post_recv(&p.b, &rb, scur, n, 1000 + k);
			nrecv++;
			ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s,
						 scur, n, k, fl, 0, 0));
			scur += n;
			break;
		default: /* READ src[rcur] -> sink[rcur] */
			ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_READ,
						 &sink, rcur, n, k, fl,
						 (uint64_t)(uintptr_t)src.p +
							 rcur,
						 src.mr->rkey));
			rcur += n;
			break;
		}
		nwr++;
		msgs++;
	}
	/* Completions: a READ completes with its response, later than the
	 * WRITEs and SENDs behind it, so they are matched, not ordered. */
	for (k = 0; k < nwr; k++) {
		struct rnicpi_wc wc;

		ck_assert_msg(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS),
			      "%u of %u WRs completed", k, nwr);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert_uint_lt(wc.wr_id, nwr);
		ck_assert(!seen[wc.wr_id]);
		seen[wc.wr_id] = true;
		ck_assert_uint_eq(wc.byte_len, sizes[wc.wr_id % nsz]);
	}
	for (k = 0; k < nrecv; k++) {
		struct rnicpi_wc wc;

		ck_assert(h_poll(&p.b, p.b.rcq, &wc, H_WAIT_MS));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert_uint_eq(wc.byte_len,
				  sizes[(wc.wr_id - 1000) % nsz]);
	}
	barrier_send(&p, &d, 5000);

	/* Each region holds its messages back to back, nothing after. */
	ck_assert(h_buf_check(&d, 0, wcur, 41, 0));
	ck_assert(all_zero(&d, wcur, len - wcur));
	ck_assert(h_buf_check(&rb, 0, scur, 41, 0));
	ck_assert(all_zero(&rb, scur, len - scur));
	ck_assert(h_buf_check(&sink, 0, rcur, 42, 0));
	ck_assert(all_zero(&sink, rcur, len - rcur));
	ck_assert(h_buf_guards_ok(&d) && h_buf_guards_ok(&rb) &&
		  h_buf_guards_ok(&sink));

	calls = tx_calls(p.a.qp) - calls;
	if (_i == 2)
		ck_assert_msg(calls >= msgs, "%llu calls for %u messages "
			      "with tx_pack=0", (unsigned long long)calls,
			      msgs);
	else
		ck_assert_msg(calls * 3 <= msgs, "%llu calls for %u messages",
			      (unsigned long long)calls, msgs);

	ck_assert_ok(p.da->ops->dereg_mr(s.mr));
	ck_assert_ok(p.da->ops->dereg_mr(sink.mr));
	ck_assert_ok(p.db->ops->dereg_mr(d.mr));
	ck_assert_ok(p.db->ops->dereg_mr(rb.mr));
	ck_assert_ok(p.db->ops->dereg_mr(src.mr));
	h_buf_free(&s);
	h_buf_free(&sink);
	h_buf_free(&d);
	h_buf_free(&rb);
	h_buf_free(&src);
	h_pair_down(&p);
}
END_TEST

/*
 * The receiver stops reading (its progress thread held, its CQ not
 * polled) while a posts WRITEs of 4 KiB (_i == 0) or 1000 bytes (_i == 1)
 * with RNICPI_SEND_MORE in bursts of 16, the last of each signalled: the
 * socket fills up with a pack half written, a's send queue backs up with
 * WRs that have not started (with 1000 bytes, all of them: a full ring),
 * posting fails with -ENOMEM. Once the receiver reads again, every burst
 * completes and all 24 MiB land in order, each byte in its place.
 */
START_TEST(test_pack_through_full_socket)
{
	static const struct rnicpi_option shortmpa[] = {
		{ "mpa_timeout_ms", "100" }, { "poll_rx", "0" }, { NULL, NULL },
	};
	const size_t msg = _i ? 1000 : 4096, len = (24u << 20) / msg * msg;
	const uint64_t total = len / msg, burst = 16;
	struct h_park pk = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER };
	struct h_buf s, d;
	struct h_pair p;
	uint64_t posted = 0, done = 0;
	unsigned int stalls = 0;
	bool backed_up = false, wanted_out = false;
	struct rnicpi_wc wc;
	int cfd;

	h_pair_up_bufs(&p, NULL, shortmpa, &s, &d, len, 53);
	cfd = h_park_progress(p.db, &pk);
	while (posted < total) {
		bool last = (posted + 1) % burst == 0 || posted + 1 == total;
		int rc;

		rc = h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &s, posted * msg,
				 msg, posted,
				 last ? RNICPI_SEND_SIGNALED : RNICPI_SEND_MORE,
				 (uint64_t)(uintptr_t)d.p + posted * msg,
				 d.mr->rkey);
		if (rc == 0) {
			posted++;
			continue;
		}
		ck_assert_int_eq(rc, -ENOMEM);
		if (h_poll(&p.a, p.a.scq, &wc, 200)) {
			ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
			ck_assert_uint_eq(wc.wr_id, done + burst - 1);
			done += burst;
			stalls = 0;
			continue;
		}
		/* Stuck: the receiver reads nothing. */
		if (backed_up)
			ck_assert_msg(++stalls < 50, "no progress for 10 s "
				      "after the receiver read again: %s",
				      tx_state(p.a.qp, p.b.qp));
		if (!backed_up) {
			struct siw_qp *qa = to_siw_qp(p.a.qp);

			pthread_mutex_lock(&qa->lock);
			wanted_out = qa->tx.want_out;
			pthread_mutex_unlock(&qa->lock);
			backed_up = true;
			h_unpark(&pk);
		}
	}
	ck_assert_msg(backed_up, "%llu MiB went through a receiver that "
		      "read nothing", (unsigned long long)(len >> 20));
	ck_assert(wanted_out);
	while (done < total) {
		ck_assert_msg(h_poll(&p.a, p.a.scq, &wc, H_WAIT_MS),
			      "%llu of %llu WRITEs completed: %s",
			      (unsigned long long)done,
			      (unsigned long long)total,
			      tx_state(p.a.qp, p.b.qp));
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		done = wc.wr_id + 1;
		ck_assert(done % burst == 0 || done == total);
	}
	barrier_send(&p, &d, 1u << 30);
	ck_assert(h_buf_check(&d, 0, len, 53, 0));
	ck_assert(h_buf_guards_ok(&d));
	close(cfd);
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bursts posted one WR at a time (option tx_burst_ns)                 */
/* ------------------------------------------------------------------ */

/* The options of a sender whose progress thread a test holds: a short
 * MPA time-out (h_park_progress), and a burst window of 1 ms, so that a
 * test under valgrind, which posts far slower than the default's 2 us
 * allow, still posts in bursts; _i 1 of test_burst_posted_at_once gives
 * 0 (never). */
static const struct rnicpi_option burst_1ms[] = {
	{ "tx_burst_ns", "1000000" }, { "mpa_timeout_ms", "100" },
	{ NULL, NULL },
};
static const struct rnicpi_option burst_off[] = {
	{ "tx_burst_ns", "0" }, { "mpa_timeout_ms", "100" }, { NULL, NULL },
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Spins until the first @len bytes of @d hold the pattern of @seed,
 * touching no CQ (as a consumer that waits for a reply in memory does);
 * false after H_WAIT_MS. It yields each time round: under valgrind a bare
 * spin starves the progress threads. */
static bool wait_for_data(const struct h_buf *d, size_t len, uint32_t seed)
{
	uint64_t end = now_us() + (uint64_t)H_WAIT_MS * 1000u;

	while (!h_buf_check(d, 0, len, seed, 0)) {
		if (now_us() >= end)
			return false;
		sched_yield();
	}
	return true;
}

static void post_write_100(struct h_pair *p, struct h_buf *s,
			   struct h_buf *d, unsigned int i)
{
	ck_assert_ok(h_post_send(&p->a, RNICPI_WR_RDMA_WRITE, s, i * 100,
				 100, i, RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)d->p + i * 100,
				 d->mr->rkey));
}

/* The end of a burst test: @n WRITEs of 100 bytes from seed @seed are at
 * the target and nothing past them; the pair and the peer socket of the
 * held progress thread's connection go. */
static void burst_done(struct h_pair *p, struct h_buf *s, struct h_buf *d,
		       unsigned int n, uint32_t seed, int cfd)
{
	barrier_send(p, d, 100);
	ck_assert(h_buf_check(d, 0, n * 100, seed, 0));
	ck_assert(all_zero(d, n * 100, d->len - n * 100));
	ck_assert(h_buf_guards_ok(d));
	close(cfd);
	h_pair_down_bufs(p, s, d);
}

/*
 * Sixteen 100-byte WRITEs posted one at a time, none with
 * RNICPI_SEND_MORE, back to back, while the sender's progress thread is
 * held: the first two go out before their posts return (a run shorter
 * than SIW_BURST_RUN), the other fourteen came within the burst window of
 * the post before and wait, armed for the progress thread (nothing of
 * them at the target after 20 ms). Then the consumer's poll of the send
 * CQ (_i == 0) or the progress thread let go, with no CQ polled and the
 * consumer waiting on the target's bytes (_i == 1), writes the fourteen
 * with one sendmsg().
 */
START_TEST(test_burst_left_to_thread)
{
	const unsigned int n = 16;
	struct h_park pk = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER };
	struct h_buf s, d;
	struct h_pair p;
	uint64_t calls;
	unsigned int i;
	int cfd;

	h_pair_up_bufs(&p, burst_1ms, NULL, &s, &d, 4096, 61);
	cfd = h_park_progress(p.da, &pk);
	calls = tx_calls(p.a.qp);
	for (i = 0; i < n; i++)
		post_write_100(&p, &s, &d, i);
	ck_assert_uint_eq(SIW_BURST_RUN, 3);
	ck_assert_uint_eq(tx_calls(p.a.qp) - calls, 2);
	ck_assert_uint_eq(held_wrs(p.a.qp), n - 2);
	usleep(20 * 1000);
	ck_assert_uint_eq(held_wrs(p.a.qp), n - 2);
	ck_assert(wait_for_data(&d, 200, 61));
	ck_assert(all_zero(&d, 200, d.len - 200));

	if (_i == 0) {
		/* The first completion is there; the poll after it finds
		 * the CQ empty and writes what waits (poll_tx). */
		for (i = 0; i < n; i++)
			h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
				    RNICPI_WC_RDMA_WRITE, 100);
		h_unpark(&pk);
	} else {
		h_unpark(&pk);
		ck_assert_msg(wait_for_data(&d, n * 100, 61),
			      "the held WRITEs never reached the target: %s",
			      tx_state(p.a.qp, p.b.qp));
		for (i = 0; i < n; i++)
			h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
				    RNICPI_WC_RDMA_WRITE, 100);
	}
	ck_assert_uint_eq(tx_calls(p.a.qp) - calls, 3);
	burst_done(&p, &s, &d, n, 61, cfd);
}
END_TEST

/*
 * What is not a burst is written before its post returns, the progress
 * thread held all along: WRITEs posted 5 ms apart, longer than the 1 ms
 * window (_i == 0), WRITEs back to back with tx_burst_ns=0 (_i == 1), and
 * WRITEs each posted after the consumer polled the completion of the one
 * before (_i == 2: a consumer that waits for an answer). Each post makes
 * its one sendmsg() and leaves nothing queued.
 */
START_TEST(test_burst_posted_at_once)
{
	const unsigned int n = 5;
	struct h_park pk = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER };
	struct h_buf s, d;
	struct h_pair p;
	uint64_t calls;
	unsigned int i;
	int cfd;

	h_pair_up_bufs(&p, _i == 1 ? burst_off : burst_1ms, NULL, &s, &d, 4096,
		       67);
	cfd = h_park_progress(p.da, &pk);
	for (i = 0; i < n; i++) {
		if (_i == 0 && i)
			usleep(5 * 1000);
		calls = tx_calls(p.a.qp);
		post_write_100(&p, &s, &d, i);
		ck_assert_uint_eq(tx_calls(p.a.qp) - calls, 1);
		ck_assert_uint_eq(held_wrs(p.a.qp), 0);
		if (_i == 2)
			h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
				    RNICPI_WC_RDMA_WRITE, 100);
	}
	ck_assert_msg(wait_for_data(&d, n * 100, 67),
		      "the WRITEs never reached the target: %s",
		      tx_state(p.a.qp, p.b.qp));
	for (i = 0; _i != 2 && i < n; i++)
		h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
			    RNICPI_WC_RDMA_WRITE, 100);
	h_unpark(&pk);
	burst_done(&p, &s, &d, n, 67, cfd);
}
END_TEST

/*
 * Default options, nothing held: 240 WRITEs and SENDs of 1 to 4096 bytes
 * posted one at a time as fast as the test can, none with
 * RNICPI_SEND_MORE, then the consumer waits for the WRITEs' bytes at the
 * target without polling any CQ: whatever the burst window held back, the
 * progress thread writes. Every WR then completes with its length, every
 * byte is in its place and nothing past it.
 */
START_TEST(test_burst_default_unpolled)
{
	const unsigned int n = 120;
	const size_t len = 2u << 20;
	struct h_buf s, d, rb;
	size_t wcur = 0, scur = 0;
	struct h_pair p;
	unsigned int i;

	h_pair_up_bufs(&p, NULL, NULL, &s, &d, len, 71);
	h_buf_alloc(&rb, len, H_GUARD);
	h_buf_reg(&rb, &p.b, H_RW);
	for (i = 0; i < n; i++)
		h_post_recv(&p.b, &rb, i * 4096, 4096, 1000 + i);
	for (i = 0; i < n; i++) {
		size_t k = 1 + (i * 997u) % 4096;

		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_RDMA_WRITE, &s, wcur,
					 k, 2 * i, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)d.p + wcur,
					 d.mr->rkey));
		wcur += k;
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &s, scur, k,
					 2 * i + 1, RNICPI_SEND_SIGNALED, 0,
					 0));
		scur += k;
	}
	ck_assert_msg(wait_for_data(&d, wcur, 71),
		      "the burst never reached the target: %s",
		      tx_state(p.a.qp, p.b.qp));
	for (i = 0; i < 2 * n; i++)
		h_expect_wc(&p.a, p.a.scq, i, RNICPI_WC_SUCCESS,
			    i % 2 ? RNICPI_WC_SEND : RNICPI_WC_RDMA_WRITE,
			    (uint32_t)(1 + ((i / 2) * 997u) % 4096));
	scur = 0;
	for (i = 0; i < n; i++) {
		size_t k = 1 + (i * 997u) % 4096;

		h_expect_wc(&p.b, p.b.rcq, 1000 + i, RNICPI_WC_SUCCESS,
			    RNICPI_WC_RECV, (uint32_t)k);
		ck_assert(h_buf_check(&rb, i * 4096, k, 71, scur));
		ck_assert(all_zero(&rb, i * 4096 + k, 4096 - k));
		scur += k;
	}
	barrier_send(&p, &d, 5000);
	ck_assert(h_buf_check(&d, 0, wcur, 71, 0));
	ck_assert(all_zero(&d, wcur, len - wcur));
	ck_assert(h_buf_guards_ok(&d) && h_buf_guards_ok(&rb));
	ck_assert_ok(p.db->ops->dereg_mr(rb.mr));
	h_buf_free(&rb);
	h_pair_down_bufs(&p, &s, &d);
}
END_TEST

Suite *suite_siw_coalesce(void)
{
	Suite *s = suite_create("siw-coalesce");
	TCase *tc = tcase_create("coalesce");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_held_until_released, 0, 2);
	tcase_add_loop_test(tc, test_mixed_burst, 0, 3);
	tcase_add_loop_test(tc, test_pack_through_full_socket, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("burst");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_burst_left_to_thread, 0, 2);
	tcase_add_loop_test(tc, test_burst_posted_at_once, 0, 3);
	tcase_add_test(tc, test_burst_default_unpolled);
	suite_add_tcase(s, tc);
	return s;
}
