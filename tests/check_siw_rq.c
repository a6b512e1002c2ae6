/* SPDX-License-Identifier: MIT */
/*
 * siw-loopback, receive queue under concurrency: a posted receive is never
 * lost, taken twice or seen late by the receive path. One thread posts
 * receives on b, one polls b's receive CQ (with poll_rx that thread runs
 * the receive path itself, the progress thread otherwise), and a sends
 * each message as soon as it sees that its receive was posted: every Send
 * arrives while the next post_recv is running or just behind it. iWARP
 * has no receiver-not-ready retry, so a receive the receive path missed
 * would end the connection with a Terminate (DDP "no buffer") and flush
 * everything; one taken twice or out of order shows as a wrong wr_id,
 * length or payload. fabtests' fi_rma_bw failures over siw_lo were first
 * suspected of such a race; they are fabtests' own (fi_hostrdma(7)).
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "tests/testutil_siw.h"
#include "tests/suites.h"
#include "tests/testutil.h"

#define RQ_SLOTS 8		/* receive buffers, and send buffers */
#define RQ_MAX 9000		/* largest message */
#define RQ_FILL 0xEE		/* receive buffer bytes before placement */

struct rq_race {
	struct h_pair p;
	struct h_buf sbuf, rbuf;	/* RQ_SLOTS slots of RQ_MAX bytes */
	uint32_t n;			/* messages */
	uint32_t depth;			/* receives posted ahead, at most */
	atomic_uint posted;		/* post_recv returned for these */
	atomic_uint checked;		/* receive completions checked */
	atomic_bool stop;
	pthread_mutex_t lock;
	char err[256];			/* first failure, "" none */
};

static uint64_t rq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Record the first failure and stop every thread (Check asserts belong to
 * the test's own thread). */
static void rq_fail(struct rq_race *r, const char *fmt, ...)
	G_GNUC_PRINTF(2, 3);

static void rq_fail(struct rq_race *r, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->lock);
	if (!r->err[0]) {
		va_start(ap, fmt);
		vsnprintf(r->err, sizeof(r->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->lock);
	atomic_store(&r->stop, true);
}

/* Message @seq's length (1..RQ_MAX: single bytes, whole pages, several
 * FPDUs with a small max_fpdu) and payload byte @i. */
static uint32_t rq_len(uint32_t seq)
{
	uint32_t x = seq * 2654435761u;

	switch (seq % 4) {
	case 0:
		return 1;
	case 1:
		return 1 + (x >> 8) % 64;
	default:
		return 1 + (x >> 8) % RQ_MAX;
	}
}

static uint8_t rq_byte(uint32_t seq, uint32_t i)
{
	uint32_t x = (seq + 1) * 0x9E3779B1u ^ i * 0x85EBCA77u;

	return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

/* Spin (yielding: two cores are shared by several threads here) until
 * @cond holds; false when stopped or after H_WAIT_MS. */
#define RQ_WAIT(r, cond, what)                                              \
	({                                                                  \
		uint64_t end_ = rq_now_ms() + H_WAIT_MS;                    \
		bool ok_ = true;                                            \
		while (!(cond)) {                                           \
			if (atomic_load(&(r)->stop)) {                      \
				ok_ = false;                                \
				break;                                      \
			}                                                   \
			if (rq_now_ms() > end_) {                           \
				rq_fail(r, "timed out waiting for %s", what); \
				ok_ = false;                                \
				break;                                      \
			}                                                   \
			sched_yield();                                      \
		}                                                           \
		ok_;                                                        \
	})

/* b's application: posts the receive for each message as soon as its slot
 * is free again, one at a time or a few in one chained call. */
static void *rq_poster(void *arg)
{
	struct rq_race *r = arg;
	struct h_side *b = &r->p.b;
	struct rnicpi_sge sge[4];
	struct rnicpi_recv_wr wr[4];
	uint32_t seq = 0;

	while (seq < r->n) {
		const struct rnicpi_recv_wr *bad = NULL;
		uint32_t k, batch = 1 + seq % 3;
		int rc;

		if (!RQ_WAIT(r, seq - atomic_load(&r->checked) < r->depth,
			     "a free receive slot"))
			return NULL;
		/* as many as fit now, up to the batch */
		for (k = 0; k < batch && seq + k < r->n &&
			    seq + k - atomic_load(&r->checked) < r->depth;
		     k++) {
			uint32_t s = seq + k, slot = s % RQ_SLOTS;

			memset(r->rbuf.p + (size_t)slot * RQ_MAX, RQ_FILL,
			       RQ_MAX);
			sge[k] = (struct rnicpi_sge){
				.addr = (uint64_t)(uintptr_t)(r->rbuf.p +
					(size_t)slot * RQ_MAX),
				.length = RQ_MAX,
				.lkey = r->rbuf.mr->lkey,
			};
			wr[k] = (struct rnicpi_recv_wr){
				.wr_id = s, .sg_list = &sge[k], .num_sge = 1,
				.next = NULL,
			};
			if (k)
				wr[k - 1].next = &wr[k];
		}
		if (b->srq)
			rc = b->d->ops->post_srq_recv(b->srq, wr, &bad);
		else
			rc = b->d->ops->post_recv(b->qp, wr, &bad);
		if (rc) {
			rq_fail(r, "post_recv of %u..%u: %d", seq, seq + k - 1,
				rc);
			return NULL;
		}
		seq += k;
		/* release: a's sender may send these now */
		atomic_store(&r->posted, seq);
	}
	return NULL;
}

/* b's completion consumer: each receive completes once, in order, with
 * its own message's length and bytes, the rest of its buffer untouched. */
static void *rq_checker(void *arg)
{
	struct rq_race *r = arg;
	struct h_side *b = &r->p.b;
	uint32_t seq;

	for (seq = 0; seq < r->n; seq++) {
		const uint8_t *buf = r->rbuf.p +
				     (size_t)(seq % RQ_SLOTS) * RQ_MAX;
		uint32_t len = rq_len(seq), i;
		struct rnicpi_wc wc;
		int n = 0;

		if (!RQ_WAIT(r, (n = b->d->ops->poll_cq(b->rcq, 1, &wc)) != 0,
			     "a receive completion"))
			return NULL;
		if (n < 0) {
			rq_fail(r, "poll_cq: %d", n);
			return NULL;
		}
		if (wc.status != RNICPI_WC_SUCCESS) {
			rq_fail(r, "receive %llu (message %u expected): status "
				"%d vendor_err 0x%x", (unsigned long long)
				wc.wr_id, seq, wc.status, wc.vendor_err);
			return NULL;
		}
		if (wc.opcode != RNICPI_WC_RECV || wc.wr_id != seq ||
		    wc.byte_len != len) {
			rq_fail(r, "message %u (%u bytes) completed receive "
				"%llu, opcode %d, %u bytes", seq, len,
				(unsigned long long)wc.wr_id, wc.opcode,
				wc.byte_len);
			return NULL;
		}
		for (i = 0; i < RQ_MAX; i++) {
			uint8_t want = i < len ? rq_byte(seq, i) : RQ_FILL;

			if (buf[i] != want) {
				rq_fail(r, "message %u: byte %u is 0x%02x, not "
					"0x%02x", seq, i, buf[i], want);
				return NULL;
			}
		}
		atomic_store(&r->checked, seq + 1);
	}
	return NULL;
}

/* Reap a's send completions; @wait: until @upto of them are in. */
static bool rq_reap_sends(struct rq_race *r, uint32_t *done, uint32_t upto)
{
	struct h_side *a = &r->p.a;

	while (*done < upto) {
		struct rnicpi_wc wc;
		int n = 0;

		if (!RQ_WAIT(r, (n = a->d->ops->poll_cq(a->scq, 1, &wc)) != 0,
			     "a send completion"))
			return false;
		if (n < 0 || wc.status != RNICPI_WC_SUCCESS ||
		    wc.wr_id != *done) {
			rq_fail(r, "send %u completed as %llu, status %d (%d)",
				*done, (unsigned long long)wc.wr_id,
				wc.status, n);
			return false;
		}
		(*done)++;
	}
	return true;
}

/* @n messages a -> b, at most @depth receives posted ahead; b has an SRQ
 * when @srq, its device options @ob, a's @oa. */
static void rq_race_run(const struct rnicpi_option *oa,
			const struct rnicpi_option *ob, bool srq,
			uint32_t depth, uint32_t n)
{
	struct rq_race *r = g_new0(struct rq_race, 1);
	pthread_t poster, checker;
	uint32_t seq, sent_done = 0;
	struct rnicpi_wc wc;

	ck_assert_uint_le(depth, RQ_SLOTS);
	r->n = n;
	r->depth = depth;
	pthread_mutex_init(&r->lock, NULL);
	h_pair_up_opts(&r->p, oa, ob, srq ? RQ_SLOTS : 0);
	h_pair_connect(&r->p);
	h_buf_alloc(&r->sbuf, (size_t)RQ_SLOTS * RQ_MAX, H_GUARD);
	h_buf_alloc(&r->rbuf, (size_t)RQ_SLOTS * RQ_MAX, H_GUARD);
	h_buf_reg(&r->sbuf, &r->p.a, H_RW);
	h_buf_reg(&r->rbuf, &r->p.b, H_RW);
	ck_assert_int_eq(pthread_create(&poster, NULL, rq_poster, r), 0);
	ck_assert_int_eq(pthread_create(&checker, NULL, rq_checker, r), 0);

	for (seq = 0; seq < n && !atomic_load(&r->stop); seq++) {
		uint8_t *buf = r->sbuf.p + (size_t)(seq % RQ_SLOTS) * RQ_MAX;
		uint32_t len = rq_len(seq), i;
		int rc;

		/* the send slot's last message has left */
		if (seq >= RQ_SLOTS &&
		    !rq_reap_sends(r, &sent_done, seq - RQ_SLOTS + 1))
			break;
		for (i = 0; i < len; i++)
			buf[i] = rq_byte(seq, i);
		/* acquire: message seq's receive has been posted */
		if (!RQ_WAIT(r, atomic_load(&r->posted) > seq,
			     "the receive to be posted"))
			break;
		rc = h_post_send(&r->p.a, RNICPI_WR_SEND, &r->sbuf,
				 (size_t)(seq % RQ_SLOTS) * RQ_MAX, len, seq,
				 RNICPI_SEND_SIGNALED, 0, 0);
		if (rc) {
			rq_fail(r, "post_send %u: %d", seq, rc);
			break;
		}
	}
	if (!atomic_load(&r->stop))
		rq_reap_sends(r, &sent_done, n);
	pthread_join(poster, NULL);
	pthread_join(checker, NULL);
	ck_assert_msg(!r->err[0], "%s (depth %u, %s)", r->err, depth,
		      srq ? "SRQ" : "RQ");
	ck_assert_uint_eq(atomic_load(&r->checked), n);
	/* nothing more completed, and neither side saw an error */
	ck_assert_int_eq(r->p.b.d->ops->poll_cq(r->p.b.rcq, 1, &wc), 0);
	ck_assert_int_eq(r->p.a.d->ops->poll_cq(r->p.a.rcq, 1, &wc), 0);
	pthread_mutex_lock(&r->p.db->lock);
	ck_assert_int_eq(r->p.db->n_async, 0);
	pthread_mutex_unlock(&r->p.db->lock);
	pthread_mutex_lock(&r->p.da->lock);
	ck_assert_int_eq(r->p.da->n_async, 0);
	pthread_mutex_unlock(&r->p.da->lock);
	ck_assert(h_buf_guards_ok(&r->rbuf));
	ck_assert_ok(r->p.da->ops->dereg_mr(r->sbuf.mr));
	ck_assert_ok(r->p.db->ops->dereg_mr(r->rbuf.mr));
	h_buf_free(&r->sbuf);
	h_buf_free(&r->rbuf);
	h_pair_down(&r->p);
	pthread_mutex_destroy(&r->lock);
	g_free(r);
}

/* Messages per case (fewer under valgrind, which runs one thread at a
 * time and these are four busy ones). */
#define RQ_ROUNDS (tu_under_valgrind() ? 300u : 3000u)

/* One receive posted at a time: every Send races its own post_recv. The
 * checker's polls run the receive path (poll_rx, the default). */
START_TEST(test_rq_race_poll_rx)
{
	rq_race_run(NULL, NULL, false, 1 + (uint32_t)_i * 3, RQ_ROUNDS);
}
END_TEST

/* The same with the progress thread as the receive path, and messages cut
 * into FPDUs of 1 KiB (a receive is taken by a message's first one). */
START_TEST(test_rq_race_progress)
{
	const struct rnicpi_option oa[] = { { "max_fpdu", "1024" },
					    { NULL, NULL } };
	const struct rnicpi_option ob[] = { { "poll_rx", "0" },
					    { NULL, NULL } };

	rq_race_run(oa, ob, false, 1 + (uint32_t)_i, RQ_ROUNDS);
}
END_TEST

/* Receives through a shared receive queue (its own lock). */
START_TEST(test_rq_race_srq)
{
	rq_race_run(NULL, NULL, true, 2, RQ_ROUNDS);
}
END_TEST

void siw_loopback_add_rq_case(Suite *s)
{
	TCase *tc = tcase_create("rq-race");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_rq_race_poll_rx, 0, 2);
	tcase_add_loop_test(tc, test_rq_race_progress, 0, 2);
	tcase_add_test(tc, test_rq_race_srq);
	suite_add_tcase(s, tc);
}
