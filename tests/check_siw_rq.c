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
#include "vp/siw/siw.h"

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

/* One receive posted from a thread of its own. */
struct rq_lone_post {
	struct h_side *b;
	struct h_buf *buf;
	atomic_bool done;
	int rc;
};

static void *rq_lone_poster(void *arg)
{
	struct rq_lone_post *lp = arg;
	struct rnicpi_sge sge = { .addr = (uint64_t)(uintptr_t)lp->buf->p,
				  .length = 64, .lkey = lp->buf->mr->lkey };
	struct rnicpi_recv_wr wr = { .wr_id = 77, .sg_list = &sge,
				     .num_sge = 1 };

	lp->rc = lp->b->d->ops->post_recv(lp->b->qp, &wr, NULL);
	atomic_store(&lp->done, true);
	return NULL;
}

/*
 * A receive pass holds the QP's lock while it reads up to SIW_RX_BUDGET
 * FPDUs (a millisecond at 1 MiB a message); post_recv must not wait for
 * it. With the QP's lock held here for up to two seconds, a post from
 * another thread returns (before the RQ had a lock of its own it waited
 * for the unlock), and the receive it posted is the one the next Send
 * lands in.
 */
START_TEST(test_rq_post_while_qp_locked)
{
	struct h_pair p;
	struct h_buf sbuf, rbuf;
	struct rq_lone_post lp = { 0 };
	struct rnicpi_wc wc;
	struct siw_qp *qb;
	pthread_t t;
	uint64_t end;

	h_pair_up_bufs(&p, NULL, NULL, &sbuf, &rbuf, 4096, 0x51);
	qb = to_siw_qp(p.b.qp);
	lp.b = &p.b;
	lp.buf = &rbuf;
	pthread_mutex_lock(&qb->lock);
	ck_assert_int_eq(pthread_create(&t, NULL, rq_lone_poster, &lp), 0);
	end = rq_now_ms() + 2000;
	while (!atomic_load(&lp.done) && rq_now_ms() < end)
		g_usleep(1000);
	pthread_mutex_unlock(&qb->lock);
	pthread_join(t, NULL);
	ck_assert_msg(atomic_load(&lp.done) && rq_now_ms() < end,
		      "post_recv waited for the QP's lock");
	ck_assert_int_eq(lp.rc, 0);
	ck_assert_int_eq(h_post_send(&p.a, RNICPI_WR_SEND, &sbuf, 0, 64, 1,
				     RNICPI_SEND_SIGNALED, 0, 0), 0);
	h_expect_wc(&p.b, p.b.rcq, 77, RNICPI_WC_SUCCESS, RNICPI_WC_RECV, 64);
	h_expect_wc(&p.a, p.a.scq, 1, RNICPI_WC_SUCCESS, RNICPI_WC_SEND, 64);
	ck_assert(h_buf_check(&rbuf, 0, 64, 0x51, 0));
	ck_assert(h_buf_guards_ok(&rbuf));
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	h_pair_down_bufs(&p, &sbuf, &rbuf);
}
END_TEST

/* Receives posted while the QP goes to error. */
struct rq_flush_race {
	struct h_side *b;
	struct h_buf *buf;
	uint32_t n;
	atomic_uint posted;
	atomic_int err;		/* a post that failed, 0 none */
};

static void *rq_flush_poster(void *arg)
{
	struct rq_flush_race *f = arg;

	for (uint32_t i = 0; i < f->n; i++) {
		struct rnicpi_sge sge = {
			.addr = (uint64_t)(uintptr_t)(f->buf->p + i % 64),
			.length = 16,
			.lkey = f->buf->mr->lkey,
		};
		struct rnicpi_recv_wr wr = { .wr_id = 1000 + i,
					     .sg_list = &sge, .num_sge = 1 };
		int rc = f->b->d->ops->post_recv(f->b->qp, &wr, NULL);

		if (rc) {
			atomic_store(&f->err, rc);
			return NULL;
		}
		atomic_store(&f->posted, i + 1);
		if (i % 8 == 0)
			sched_yield();
	}
	return NULL;
}

/*
 * Every receive that post_recv took completes exactly once: posted
 * before the QP went to error, it is flushed with the RQ; posted after,
 * at once (IBA 10.8.1.1). A thread posts 200 receives while the test
 * moves the QP to ERR after the first few, at a different point each
 * round; then the receive CQ holds each wr_id once, all flushed.
 */
START_TEST(test_rq_flush_race)
{
	for (uint32_t round = 0; round < 20; round++) {
		struct rq_flush_race f = { .n = 200 };
		struct rnicpi_qp_attr qa = { .qp_state = RNICPI_QPS_ERR };
		struct h_pair p;
		struct h_buf sbuf, rbuf;
		uint8_t seen[200] = { 0 };
		struct rnicpi_wc wc;
		uint32_t got = 0;
		uint8_t *before;
		pthread_t t;

		h_pair_up_bufs(&p, NULL, NULL, &sbuf, &rbuf, 4096, round);
		before = g_memdup2(rbuf.p, rbuf.len);
		f.b = &p.b;
		f.buf = &rbuf;
		ck_assert_int_eq(pthread_create(&t, NULL, rq_flush_poster, &f),
				 0);
		while (atomic_load(&f.posted) < 1 + round * 7 &&
		       !atomic_load(&f.err))
			sched_yield();
		ck_assert_ok(p.b.d->ops->modify_qp(p.b.qp, &qa,
						   RNICPI_QP_STATE));
		pthread_join(t, NULL);
		ck_assert_int_eq(atomic_load(&f.err), 0);
		ck_assert_uint_eq(atomic_load(&f.posted), f.n);
		while (got < f.n && h_poll(&p.b, p.b.rcq, &wc, 2000)) {
			ck_assert_uint_ge(wc.wr_id, 1000);
			ck_assert_uint_lt(wc.wr_id, 1000 + f.n);
			ck_assert_msg(!seen[wc.wr_id - 1000],
				      "round %u: wr_id %llu completed twice",
				      round, (unsigned long long)wc.wr_id);
			seen[wc.wr_id - 1000] = 1;
			ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
			got++;
		}
		ck_assert_msg(got == f.n, "round %u: %u of %u receives "
			      "completed", round, got, f.n);
		ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
		/* nothing placed */
		ck_assert(memcmp(before, rbuf.p, rbuf.len) == 0);
		ck_assert(h_buf_guards_ok(&rbuf));
		g_free(before);
		h_pair_down_bufs(&p, &sbuf, &rbuf);
	}
}
END_TEST

void siw_loopback_add_rq_case(Suite *s)
{
	TCase *tc = tcase_create("rq-race");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_rq_race_poll_rx, 0, 2);
	tcase_add_loop_test(tc, test_rq_race_progress, 0, 2);
	tcase_add_test(tc, test_rq_race_srq);
	tcase_add_test(tc, test_rq_post_while_qp_locked);
	tcase_add_test(tc, test_rq_flush_race);
	suite_add_tcase(s, tc);
}
