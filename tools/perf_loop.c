/* SPDX-License-Identifier: MIT */
/*
 * perf_loop.c - hostrdma-perf's measurement loops for one message size.
 *
 * Bandwidth: the active side keeps up to tx_depth work requests in flight
 * per QP (RDMA Reads: up to the ORD), one in cq_mod signalled; a Send
 * receiver keeps rx_depth receives posted and tells the sender how many
 * it has taken with an RDMA Write of its count into the sender's credit
 * word, since iWARP has no receiver-not-ready retry: a Send that finds no
 * receive ends the connection (RFC 5040 section 5.3).
 *
 * Latency: RDMA Write ping-pong polls the last byte of the sink (IT-API
 * has no Write with immediate data), Send ping-pong waits for receive
 * completions (and writes no credits: one message is in flight, and its
 * receiver reposts before it answers), RDMA Read waits for each Read.
 * Ping-pong times are halved round trips, as perftest reports them.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The shortest stretch of a bandwidth run that BW peak looks at. */
#define PEAK_WINDOW_NS (20ull * 1000 * 1000)
/* -e: how long a receiver sleeps for a receive before it looks at the
 * control channel again, and a sender out of credits before it looks at
 * its credit word. */
#define RX_WAIT_US 2000ull
#define SIGNALLED ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define CREDIT_COOKIE (1ull << 55)
#define QP_OF(cookie) ((unsigned int)((cookie) >> 56))

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Reads and atomics: one side works, its time is a whole round trip. */
static bool one_sided(const struct perf_opts *o)
{
	return o->verb == PERF_READ || o->verb == PERF_ATOMIC;
}

bool perf_active(const struct perf_ctx *c)
{
	const struct perf_opts *o = c->o;

	if (!c->server || o->bidir)
		return true;
	/* The server answers ping-pongs and receives Sends. */
	if (o->lat)
		return o->verb == PERF_WRITE || o->verb == PERF_SEND;
	return o->verb == PERF_SEND;
}

static int dto_failed(const it_event_t *ev)
{
	fprintf(stderr, "%s: %s on QP %u failed: %s\n", PERF_PROG,
		tool_event_name(ev->event_number), QP_OF(ev->dto_cmpl.cookie),
		tool_dto_status_name(ev->dto_cmpl.dto_status));
	return -1;
}

/* Send completions: a signalled one retires its WR and every one before
 * it on that QP. */
static int reap_sq(struct perf_ctx *c, bool wait)
{
	it_event_t evs[64];
	int n = 0;
	it_status_t st;

	if (wait) {
		size_t nmore;
		/* A signalled WR outstanding wakes us; without one (a Send
		 * sender out of credits, which come as RDMA Writes and
		 * complete nothing here) sleep briefly and look again. */
		bool due = false;

		for (unsigned int i = 0; i < c->nqp && !due; i++)
			due = c->qp[i].completed < c->qp[i].sig_end;
		st = it_evd_wait(c->sq, due ? TOOL_WAIT_US : RX_WAIT_US,
				 &evs[0], &nmore);
		if (st == IT_ERR_TIMEOUT_EXPIRED && !due)
			return 0;
		if (st != IT_SUCCESS)
			return tool_check(PERF_PROG, "waiting for completions",
					  st);
		n = 1;
	} else {
		st = it_evd_dequeue_n(c->sq, 64, evs, &n);
		if (st == IT_ERR_QUEUE_EMPTY)
			return 0;
		if (st != IT_SUCCESS)
			return tool_check(PERF_PROG, "it_evd_dequeue_n", st);
	}
	for (int i = 0; i < n; i++) {
		uint64_t ck = evs[i].dto_cmpl.cookie;
		struct perf_qp *q;

		if (evs[i].dto_cmpl.dto_status != IT_DTO_SUCCESS)
			return dto_failed(&evs[i]);
		if (QP_OF(ck) >= c->nqp)
			return -1;
		q = &c->qp[QP_OF(ck)];
		if (ck & CREDIT_COOKIE)
			continue;
		ck &= CREDIT_COOKIE - 1;
		if (ck + 1 > q->completed)
			q->completed = ck + 1;
	}
	return n;
}

/* Tells the sender on @q how many of its Sends we took. */
static int send_credit(struct perf_ctx *c, struct perf_qp *q)
{
	it_lmr_triplet_t t = { .lmr = q->lmr, .length = 8 };

	*q->credit_src = q->received;
	q->credit_told = q->received;
	t.addr.abs = q->credit_src;
	return tool_check(PERF_PROG, "it_post_rdma_write (credit)",
			  it_post_rdma_write(q->ep, &t, 1,
					     ((uint64_t)q->index << 56) |
						     CREDIT_COOKIE,
					     SIGNALLED,
					     q->raddr + c->credit_off,
					     q->rrkey));
}

/* Receive completions: repost, count, tell the sender now and then.
 * @wait_us: sleep up to that long for the first one (-e), else poll. */
static int reap_rq(struct perf_ctx *c, uint64_t size, uint32_t *bad,
		   uint64_t wait_us)
{
	it_event_t evs[64];
	int n = 0;
	it_status_t st;

	if (wait_us) {
		size_t nmore = 0;
		int m = 0;

		st = it_evd_wait(c->rq, wait_us, &evs[0], &nmore);
		if (st == IT_ERR_TIMEOUT_EXPIRED)
			return 0;
		if (st != IT_SUCCESS)
			return tool_check(PERF_PROG, "waiting for receives", st);
		n = 1;
		if (nmore) {
			st = it_evd_dequeue_n(c->rq, 63, evs + 1, &m);
			if (st != IT_SUCCESS && st != IT_ERR_QUEUE_EMPTY)
				return tool_check(PERF_PROG,
						  "it_evd_dequeue_n", st);
			if (st == IT_SUCCESS)
				n += m;
		}
	} else {
		st = it_evd_dequeue_n(c->rq, 64, evs, &n);
		if (st == IT_ERR_QUEUE_EMPTY)
			return 0;
		if (st != IT_SUCCESS)
			return tool_check(PERF_PROG, "it_evd_dequeue_n", st);
	}
	for (int i = 0; i < n; i++) {
		uint64_t ck = evs[i].dto_cmpl.cookie;
		it_lmr_triplet_t t;
		struct perf_qp *q;

		if (evs[i].dto_cmpl.dto_status != IT_DTO_SUCCESS)
			return dto_failed(&evs[i]);
		if (QP_OF(ck) >= c->nqp)
			return -1;
		q = &c->qp[QP_OF(ck)];
		if (evs[i].dto_cmpl.transferred_length != size) {
			fprintf(stderr, "%s: QP %u received %u bytes, expected %llu\n",
				PERF_PROG, q->index,
				evs[i].dto_cmpl.transferred_length,
				(unsigned long long)size);
			return -1;
		}
		if (c->o->verify)
			*bad += perf_check(q->buf + c->sink_off, size, size,
					   q->index);
		q->received++;
		t.lmr = q->lmr;
		t.length = c->max_size;
		t.addr.abs = q->buf + c->sink_off;
		st = it_post_recv(q->ep, &t, 1, ck, SIGNALLED);
		if (st != IT_SUCCESS)
			return tool_check(PERF_PROG, "it_post_recv", st);
		/* A ping-pong needs none: each side reposts its receive
		 * before the reply that lets the peer send again. */
		if (!c->perftest && !c->o->lat &&
		    q->received - q->credit_told >= c->o->rx_depth / 4 + 1 &&
		    send_credit(c, q))
			return -1;
	}
	return n;
}

/* Post one WR; @more: another follows at once (IT_COALESCE_WR_FLAG, -l). */
static int post_one(struct perf_ctx *c, struct perf_qp *q, uint64_t size,
		    bool signalled, bool more)
{
	it_lmr_triplet_t t = { .lmr = q->lmr, .length = size };
	uint64_t ck = ((uint64_t)q->index << 56) | q->posted;
	it_dto_flags_t fl = (signalled ? SIGNALLED : 0) |
			    (more ? IT_COALESCE_WR_FLAG : 0);
	it_status_t st;

	switch (c->o->verb) {
	case PERF_WRITE:
		t.addr.abs = q->buf;
		/* perftest (-R) names its sink itself; ours is at sink_off */
		st = it_post_rdma_write(q->ep, &t, 1, ck, fl,
					q->raddr +
						(c->perftest ? 0 : c->sink_off),
					q->rrkey);
		break;
	case PERF_READ:
		t.addr.abs = q->buf + c->sink_off;
		st = it_post_rdma_read(q->ep, &t, 1, ck, fl, q->raddr,
				       q->rrkey);
		break;
	case PERF_ATOMIC:
		/* Every atomic adds one to the peer's word, or swaps in the
		 * next count where it finds this one: either way the word
		 * ends at the count (check_sinks). The results all land in
		 * our source's first 8 bytes. */
		t.addr.abs = q->buf;
		t.length = 8;
		st = it_post_atomic(q->ep,
				    c->o->atomic == PERF_CMP_AND_SWAP ? IT_COMPARE_AND_SWAP
					      : IT_FETCH_AND_ADD,
				    c->o->atomic == PERF_CMP_AND_SWAP ? q->atomics + 1 : 1, q->atomics,
				    &t, ck, fl, q->raddr + c->sink_off,
				    q->rrkey);
		q->atomics++;
		break;
	default:
		t.addr.abs = q->buf;
		st = it_post_send(q->ep, &t, 1, ck, fl);
		q->sends_total++;
		break;
	}
	if (st != IT_SUCCESS)
		return tool_check(PERF_PROG, "posting", st);
	q->posted++;
	q->last_signalled = signalled;
	if (signalled)
		q->sig_end = q->posted;
	return 0;
}

static uint64_t depth(const struct perf_ctx *c)
{
	return c->o->verb == PERF_READ || c->o->verb == PERF_ATOMIC ?
		       c->o->outs : c->o->tx_depth;
}

/* How many more the QP may have in flight now. */
static uint64_t room(const struct perf_ctx *c, const struct perf_qp *q)
{
	const struct perf_opts *o = c->o;
	uint64_t inflight = q->posted - q->completed;
	uint64_t r = inflight < depth(c) ? depth(c) - inflight : 0;

	/* perftest's receiver writes no credits (on RoCE it relies on RNR
	 * retries; on iWARP -R refuses send_bw). */
	if (o->verb == PERF_SEND && !c->perftest) {
		/* The receiver's count, written into our credit word. */
		uint64_t told = __atomic_load_n(
			(uint64_t *)(q->buf + c->credit_off),
			__ATOMIC_ACQUIRE);
		uint64_t ahead = q->sends_total - told;
		uint64_t cr = ahead < o->rx_depth ? o->rx_depth - ahead : 0;

		if (cr < r)
			r = cr;
	}
	return r;
}

static void progress_line(const struct perf_ctx *c, uint64_t size,
			  uint64_t done, uint64_t t0, uint64_t now)
{
	double s = (double)(now - t0) / 1e9;

	if (c->o->quiet || s <= 0)
		return;
	fprintf(stderr, "%s  %llu B: %.0f s, %llu messages, %.2f Gb/s%s",
		isatty(2) ? "\r" : "", (unsigned long long)size, s,
		(unsigned long long)done,
		(double)done * (double)size * 8 / s / 1e9,
		isatty(2) ? "   " : "\n");
}

/* Posts what the QPs have room for; false once this size is all out. */
static int post_some(struct perf_ctx *c, uint64_t size, bool posting,
		     const uint64_t *start, int *progress)
{
	const struct perf_opts *o = c->o;
	int more = 0;

	for (unsigned int i = 0; i < c->nqp; i++) {
		struct perf_qp *q = &c->qp[i];
		uint64_t sent = q->posted - start[i];
		uint64_t n = room(c, q);
		bool by_count = !o->duration_s;

		if (!posting || (by_count && sent >= o->iters)) {
			/* A duration run may stop after an unsignalled WR:
			 * one more, signalled, retires the tail. */
			if (!q->last_signalled && q->posted > start[i] &&
			    n > 0) {
				if (post_one(c, q, size, true, false))
					return -1;
				(*progress)++;
			}
			continue;
		}
		more = 1;
		while (n-- && (!by_count || sent < o->iters)) {
			bool sig = (by_count && sent + 1 == o->iters) ||
				   (q->posted + 1) % o->cq_mod == 0 ||
				   q->posted + 1 - q->completed >= depth(c);
			/* -l: every post_list-th WR, and the last one there
			 * is room for, starts those held before it. */
			bool held = o->post_list > 1 && n > 0 &&
				    (!by_count || sent + 1 < o->iters) &&
				    (q->posted + 1) % o->post_list != 0;

			if (post_one(c, q, size, sig, held))
				return -1;
			sent++;
			(*progress)++;
		}
	}
	return more;
}

static bool all_completed(const struct perf_ctx *c)
{
	for (unsigned int i = 0; i < c->nqp; i++)
		if (c->qp[i].completed < c->qp[i].posted ||
		    !c->qp[i].last_signalled)
			return false;
	return true;
}

/*
 * An RDMA Write completes once the data is on its way; a Read on the same
 * QP returns only after every earlier Write was placed (RFC 5040 section
 * 5.5: a Read Request is processed in order with the Writes before it).
 * So Write runs end with one small Read per QP: the time then covers the
 * data landing, and the peer may check its sink.
 */
static int fence(struct perf_ctx *c)
{
	for (unsigned int i = 0; i < c->nqp; i++) {
		struct perf_qp *q = &c->qp[i];
		it_lmr_triplet_t t = { .lmr = q->lmr, .length = 8 };
		it_event_t ev;

		t.addr.abs = (uint8_t *)q->credit_src + 8;
		if (tool_check(PERF_PROG, "it_post_rdma_read (fence)",
			       it_post_rdma_read(q->ep, &t, 1,
						 ((uint64_t)i << 56) |
							 CREDIT_COOKIE,
						 SIGNALLED, q->raddr,
						 q->rrkey)))
			return -1;
		if (tool_wait_event(PERF_PROG, c->sq,
				    IT_DTO_RDMA_READ_CMPL_EVENT, TOOL_WAIT_US,
				    &ev))
			return -1;
	}
	return 0;
}

/* What this side's bandwidth counts, over all sizes: the work requests
 * it completed, or (a server only receiving) the Sends it took. */
static uint64_t peak_count(const struct perf_ctx *c)
{
	bool sends = !c->server || c->o->bidir;
	uint64_t n = 0;

	for (unsigned int i = 0; i < c->nqp; i++)
		n += sends ? c->qp[i].completed : c->qp[i].received;
	return n;
}

/* Bandwidth, one size: posts (if active) and receives (Send tests). */
static int bw(struct perf_ctx *c, uint64_t size, struct perf_result *r)
{
	const struct perf_opts *o = c->o;
	bool sender = !c->server || o->bidir;
	bool receiver = o->verb == PERF_SEND && (c->server || o->bidir);
	uint64_t start[PERF_MAX_QPS], start_rx[PERF_MAX_QPS];
	uint64_t peer_sent[PERF_MAX_QPS] = { 0 };
	uint64_t t0, deadline = 0, last_print, now;
	/* BW peak: the best rate over windows of PEAK_WINDOW_NS or more of
	 * work completed (sender) or received (receiver). */
	uint64_t win_t0, win_done = 0, done_now;
	bool posting = sender, have_sent = false, shown = false;
	uint32_t bad = 0;

	for (unsigned int i = 0; i < c->nqp; i++) {
		start[i] = c->qp[i].posted;
		start_rx[i] = c->qp[i].received;
		c->qp[i].last_signalled = true;
		if (c->perftest) {
			have_sent = true;
			peer_sent[i] = o->iters;
		}
	}
	t0 = last_print = win_t0 = tool_now_ns();
	win_done = peak_count(c);
	if (o->duration_s)
		deadline = t0 + (uint64_t)o->duration_s * 1000000000ull;
	for (;;) {
		int progress = 0, k;
		bool rx_done = !receiver;

		if (posting && deadline && tool_now_ns() >= deadline)
			posting = false;
		if (sender) {
			k = post_some(c, size, posting, start, &progress);
			if (k < 0)
				return -1;
			if (!k)
				posting = false;
		}
		k = reap_sq(c, false);
		if (k < 0)
			return -1;
		progress += k;
		if (sender && !posting && all_completed(c)) {
			sender = false;
			/* perftest's regions allow no Read for Writes. */
			if (o->verb == PERF_WRITE && !c->perftest &&
			    fence(c))
				return -1;
			r->ns = tool_now_ns() - t0;
			/* A receiver learns here how many to expect
			 * (perftest's: from its own -n). */
			if (o->verb == PERF_SEND && !c->perftest) {
				uint64_t v[PERF_MAX_QPS];

				for (unsigned int i = 0; i < c->nqp; i++)
					v[i] = c->qp[i].posted - start[i];
				if (perf_ctl_send(c, PERF_CTL_SENT, v, c->nqp,
						  false))
					return -1;
			}
		}
		if (receiver) {
			k = reap_rq(c, size, &bad, 0);
			if (k < 0)
				return -1;
			progress += k;
			if (!have_sent) {
				k = perf_ctl_poll(c, PERF_CTL_SENT);
				if (k < 0)
					return -1;
				if (k) {
					have_sent = true;
					for (unsigned int i = 0; i < c->nqp;
					     i++)
						peer_sent[i] = it_ntoh64(
							c->last.v_be[i]);
				}
			}
			rx_done = have_sent;
			for (unsigned int i = 0; rx_done && i < c->nqp; i++)
				rx_done = c->qp[i].received - start_rx[i] >=
					  peer_sent[i];
		}
		if (!sender && rx_done)
			break;
		now = tool_now_ns();
		done_now = peak_count(c);
		/* A window holds many times the work in flight, else the
		 * batches of -Q moderated completions make it up. */
		if (now - win_t0 >= PEAK_WINDOW_NS &&
		    done_now - win_done >= 8 * depth(c)) {
			double rate;

			rate = (double)(done_now - win_done) * (double)size *
			       1e9 / (double)(now - win_t0);
			if (rate > r->peak_bps)
				r->peak_bps = rate;
			win_done = done_now;
			win_t0 = now;
		}
		if (now - last_print >= 1000000000ull) {
			uint64_t done = 0;

			for (unsigned int i = 0; i < c->nqp; i++)
				done += c->qp[i].posted - start[i] +
					c->qp[i].received - start_rx[i];
			progress_line(c, size, done, t0, now);
			shown = true;
			last_print = now;
		}
		if (!progress) {
			if (o->events && sender && !receiver) {
				if (reap_sq(c, true) < 0)
					return -1;
			} else if (o->events && receiver && !sender) {
				/* Briefly: the end of the run comes as a
				 * control message, not a receive. */
				if (reap_rq(c, size, &bad, RX_WAIT_US) < 0)
					return -1;
			} else {
				sched_yield();
			}
		}
	}
	r->iters = 0;
	for (unsigned int i = 0; i < c->nqp; i++)
		r->iters += c->qp[i].posted - start[i];
	if (!(!c->server || o->bidir)) {
		/* A pure receiver reports what it took. */
		r->ns = tool_now_ns() - t0;
		for (unsigned int i = 0; i < c->nqp; i++)
			r->iters += c->qp[i].received - start_rx[i];
	}
	r->verify_errors = bad;
	if (shown && isatty(2))
		fprintf(stderr, "\n");
	return 0;
}

/* The byte that marks ping @i: never 0 between us; perftest (-R) counts
 * 1, 2, ... in a char and so writes 0 every 256th time. */
static inline uint8_t tag_of(const struct perf_ctx *c, uint64_t i)
{
	return c->perftest ? (uint8_t)(i + 1) : (uint8_t)(i % 255 + 1);
}

/* Spins until the byte holds @tag. Polling the send EVD meanwhile, as
 * UCX's perftest calls its progress function, lets a software provider
 * place the bytes in this thread (soft-iWARP's poll_rx) instead of
 * waking its progress thread; every so often that thread gets the core
 * in case it shares ours. */
static int wait_byte(struct perf_ctx *c, volatile uint8_t *p, uint8_t tag)
{
	unsigned int spins = 0;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != tag) {
		if (reap_sq(c, false) < 0)
			return -1;
		if (++spins % 64 == 0)
			sched_yield();
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void lat_stats(double *us, uint64_t n, struct perf_result *r)
{
	double sum = 0;

	if (!n)
		return;
	qsort(us, n, sizeof(*us), cmp_double);
	for (uint64_t i = 0; i < n; i++)
		sum += us[i];
	r->lat_min = us[0];
	r->lat_max = us[n - 1];
	r->lat_avg = sum / (double)n;
	r->lat_p50 = us[n / 2];
	r->lat_p99 = us[(uint64_t)((double)(n - 1) * 0.99)];
	r->lat_p999 = us[(uint64_t)((double)(n - 1) * 0.999)];
}

/* Waits for the next completion on @evd: spinning, or sleeping (-e). */
static int wait_one(struct perf_ctx *c, it_evd_handle_t evd, uint64_t size,
		    uint32_t *bad)
{
	unsigned int spins = 0;
	int k;

	for (;;) {
		if (evd == c->rq) {
			k = reap_rq(c, size, bad,
				    c->o->events ? TOOL_WAIT_US : 0);
		} else if (c->o->events) {
			k = reap_sq(c, true);
		} else {
			k = reap_sq(c, false);
		}
		if (k)
			return k < 0 ? -1 : 0;
		if (++spins % 64 == 0)
			sched_yield();
	}
}

/*
 * Who starts a ping-pong: our client; against perftest (-R) its own rule,
 * the server for write_lat and the client for send_lat.
 */
static bool pings_first(const struct perf_ctx *c)
{
	if (c->perftest && c->o->verb == PERF_WRITE)
		return c->server;
	return !c->server;
}

/*
 * Each iteration's time: a Read's own, a ping's half round trip. The side
 * that answers has no round trip of its own; against perftest, which
 * prints numbers on both sides, it takes half the time from one of its
 * posts to the next (what perftest's answering side reports too).
 */
static int lat(struct perf_ctx *c, uint64_t size, struct perf_result *r)
{
	const struct perf_opts *o = c->o;
	struct perf_qp *q = &c->qp[0];
	volatile uint8_t *sink = q->buf + c->sink_off;
	bool pinger = pings_first(c);
	bool timed = pinger || c->perftest;
	/* The first o->warmup round trips are not measured (PERF_WARMUP) */
	uint64_t w = o->warmup, n = o->iters, t0 = 0, tstart, nus = 0;
	double *us = NULL;
	uint32_t bad = 0;

	if (timed) {
		us = calloc(n ? n : 1, sizeof(*us));
		if (!us)
			return -1;
	}
	tstart = tool_now_ns();
	for (uint64_t i = 0; i < w + n; i++) {
		uint64_t before = q->completed;
		uint8_t tag = tag_of(c, i);

		if (i == w)
			tstart = tool_now_ns();
		if (pinger)
			t0 = tool_now_ns();
		switch (o->verb) {
		case PERF_WRITE:
			if (!pinger && wait_byte(c, sink + size - 1, tag))
				goto err;
			q->buf[size - 1] = tag;
			if (q->posted - q->completed >= o->tx_depth &&
			    wait_one(c, c->sq, size, &bad))
				goto err;
			if (!pinger && timed) {
				uint64_t now = tool_now_ns();

				if (i > w)
					us[nus++] = (double)(now - t0) / 2e3;
				t0 = now;
			}
			if (post_one(c, q, size, true, false))
				goto err;
			/* What the post completed, while the message flies */
			if (reap_sq(c, false) < 0)
				goto err;
			if (pinger && wait_byte(c, sink + size - 1, tag))
				goto err;
			break;
		case PERF_SEND:
			if (!pinger && wait_one(c, c->rq, size, &bad))
				goto err;
			if (q->posted - q->completed >= o->tx_depth &&
			    wait_one(c, c->sq, size, &bad))
				goto err;
			if (!pinger && timed) {
				uint64_t now = tool_now_ns();

				if (i > w)
					us[nus++] = (double)(now - t0) / 2e3;
				t0 = now;
			}
			if (post_one(c, q, size, true, false))
				goto err;
			if (reap_sq(c, false) < 0)
				goto err;
			if (pinger && wait_one(c, c->rq, size, &bad))
				goto err;
			break;
		default:	/* RDMA Read or atomic: the client only */
			if (post_one(c, q, size, true, false))
				goto err;
			while (q->completed == before)
				if (wait_one(c, c->sq, size, &bad))
					goto err;
			break;
		}
		if (pinger && i >= w) {
			double d = (double)(tool_now_ns() - t0) / 1e3;

			us[nus++] = one_sided(o) ? d : d / 2;
		}
	}
	while (q->completed < q->posted)
		if (wait_one(c, c->sq, size, &bad))
			goto err;
	r->ns = tool_now_ns() - tstart;
	r->iters = n;
	if (timed)
		lat_stats(us, nus, r);
	free(us);
	r->verify_errors = bad;
	return 0;
err:
	free(us);
	return -1;
}

/* Where the peer wrote or we read, the sink must hold the message and
 * nothing past it. */
static uint32_t check_sinks(struct perf_ctx *c, uint64_t size)
{
	const struct perf_opts *o = c->o;
	uint32_t bad = 0;

	/* Atomics: the server's words add up to the client's count (its
	 * DONE is in c->last) and atomic_lat's warm-up, each atomic done
	 * exactly once. */
	if (o->verify && o->verb == PERF_ATOMIC) {
		uint64_t sum = 0, want = be64toh(c->last.v_be[DV_ITERS]) +
					 (o->lat ? o->warmup : 0);

		if (!c->server)
			return 0;
		for (unsigned int i = 0; i < c->nqp; i++)
			sum += *(uint64_t *)(c->qp[i].buf + c->sink_off);
		if (sum == want)
			return 0;
		fprintf(stderr, "%s: the atomics' target words add up to %llu, the client did %llu\n",
			PERF_PROG, (unsigned long long)sum,
			(unsigned long long)want);
		return 1;
	}
	if (!o->verify || o->lat ||
	    !((o->verb == PERF_WRITE && (c->server || o->bidir)) ||
	      (o->verb == PERF_READ && (!c->server || o->bidir))))
		return 0;
	for (unsigned int i = 0; i < c->nqp; i++)
		bad += perf_check(c->qp[i].buf + c->sink_off, size,
				  c->max_size, i);
	return bad;
}

/*
 * One size: both sides clear their sinks and (when they send data) fill
 * their sources, meet (READY), run, then swap their numbers (DONE).
 * @r gets this side's own numbers, and c->last the peer's DONE.
 */
int perf_measure(struct perf_ctx *c, uint64_t size, struct perf_result *r)
{
	double cpu0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->size = size;
	for (unsigned int i = 0; i < c->nqp; i++) {
		perf_fill(c->qp[i].buf, size, size, i);
		c->qp[i].atomics = 0;
	}
	cpu0 = cpu_now();
	rc = c->o->lat ? lat(c, size, r) : bw(c, size, r);
	r->cpu_s = cpu_now() - cpu0;
	return rc;
}

int perf_loop(struct perf_ctx *c, uint64_t size, struct perf_result *r)
{
	const struct perf_opts *o = c->o;
	double cpu0;
	uint64_t v[24] = { size };
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->size = size;
	for (unsigned int i = 0; i < c->nqp; i++) {
		if (c->sink_off)
			memset(c->qp[i].buf + c->sink_off, 0, c->max_size);
		perf_fill(c->qp[i].buf, size, size, i);
		c->qp[i].atomics = 0;
	}
	if (c->server) {
		if (perf_ctl_recv(c, PERF_CTL_READY, IT_TIMEOUT_INFINITE))
			return -1;
		/* --run_infinitely: a READY of size 0 says the client
		 * stopped. */
		if (o->run_infinitely && !it_ntoh64(c->last.v_be[0]))
			return 1;
		if (it_ntoh64(c->last.v_be[0]) != size ||
		    perf_ctl_send(c, PERF_CTL_READY, v, 1, false))
			return -1;
	} else {
		if (perf_ctl_send(c, PERF_CTL_READY, v, 1, false) ||
		    perf_ctl_recv(c, PERF_CTL_READY, TOOL_WAIT_US))
			return -1;
	}
	cpu0 = cpu_now();
	if (perf_active(c))
		rc = o->lat ? lat(c, size, r) : bw(c, size, r);
	if (rc)
		return -1;
	/* A passive side's CPU (its provider's progress thread placing
	 * data) counts until the active side reports; the data it placed
	 * is all there by then (see fence()). */
	if (c->server && perf_ctl_recv(c, PERF_CTL_DONE, IT_TIMEOUT_INFINITE))
		return -1;
	if (c->server)
		r->verify_errors += check_sinks(c, size);
	r->cpu_s = cpu_now() - cpu0;
	v[DV_SIZE] = size;
	v[DV_ITERS] = r->iters;
	v[DV_NS] = r->ns;
	v[DV_CPU_US] = (uint64_t)(r->cpu_s * 1e6);
	v[DV_LAT_MIN] = (uint64_t)(r->lat_min * 1e3);
	v[DV_LAT_MAX] = (uint64_t)(r->lat_max * 1e3);
	v[DV_LAT_AVG] = (uint64_t)(r->lat_avg * 1e3);
	v[DV_LAT_P50] = (uint64_t)(r->lat_p50 * 1e3);
	v[DV_LAT_P99] = (uint64_t)(r->lat_p99 * 1e3);
	v[DV_LAT_P999] = (uint64_t)(r->lat_p999 * 1e3);
	v[DV_VERIFY_ERRORS] = r->verify_errors;
	v[DV_PEAK_BPS] = (uint64_t)r->peak_bps;
	if (c->server) {
		if (perf_ctl_send(c, PERF_CTL_DONE, v, DV_COUNT, false))
			return -1;
	} else {
		if (perf_ctl_send(c, PERF_CTL_DONE, v, DV_COUNT, false) ||
		    perf_ctl_recv(c, PERF_CTL_DONE, TOOL_WAIT_US))
			return -1;
		r->verify_errors += check_sinks(c, size);
	}
	return 0;
}
