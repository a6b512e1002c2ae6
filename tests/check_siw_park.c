/* SPDX-License-Identifier: MIT */
/*
 * soft-iWARP with poll_rx (the default): a consumer that polls its CQ
 * reads the QP's socket itself, and the progress engine leaves it alone
 * ("parked") meanwhile. Once the consumer arms the CQ and sleeps, the
 * socket must be the engine's again at once: a completion that waits for
 * the park timer is a stall of the lease (option park_lease_us; it was 50 ms
 * and every round trip of hostrdma-ping, issue 17).
 *
 * A consumer that waits for data without polling the CQ (perftest's
 * write_lat spins on the last byte of its buffer) must not wait for the
 * timer more than once per QP: the first time ends parking for that QP.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil_siw.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

#define ROUNDS 120
#define MSG 64

static uint64_t mono_us(void)
{
	return rnicpi_now_ns() / 1000u;
}

/* A consumer that polls: spin on poll_cq. */
static void spin_for(struct h_side *s, struct rnicpi_cq *cq,
		     struct rnicpi_wc *wc)
{
	uint64_t end = mono_us() + (uint64_t)H_WAIT_MS * 1000u;

	for (;;) {
		int n = s->d->ops->poll_cq(cq, 1, wc);

		ck_assert_int_ge(n, 0);
		if (n == 1)
			return;
		ck_assert_msg(mono_us() < end, "no completion while polling");
	}
}

/* Arm @cq and make the poll a consumer makes after arming (what came
 * before the arm raises no event). @straddle: let a millisecond pass
 * between the two, as a consumer that is preempted there does. Returns
 * whether that poll found the completion already. */
static bool arm(struct h_side *s, struct rnicpi_cq *cq, struct rnicpi_wc *wc,
		bool straddle)
{
	ck_assert_ok(s->d->ops->req_notify_cq(cq, 0));
	if (straddle)
		usleep(1100);
	return s->d->ops->poll_cq(cq, 1, wc) == 1;
}

/* A consumer that sleeps on the notification fd; returns how long. */
static uint64_t sleep_for(struct h_side *s, struct rnicpi_cq *cq,
			  struct rnicpi_wc *wc)
{
	struct pollfd p = { .fd = cq->notify_fd, .events = POLLIN };
	uint64_t t0 = mono_us();

	ck_assert_int_eq(poll(&p, 1, H_WAIT_MS), 1);
	ck_assert_ok(s->d->ops->ack_cq_event(cq));
	ck_assert_int_eq(s->d->ops->poll_cq(cq, 1, wc), 1);
	return mono_us() - t0;
}

/* One message from @from to @to, which polls (@block false) or arms and
 * sleeps for it; the receive is posted again afterwards. Returns the
 * sleep's length in microseconds (0 when polling). */
static uint64_t one_way(struct h_side *from, struct h_buf *fb,
			struct h_side *to, struct h_buf *tb, uint64_t id,
			bool block, bool straddle)
{
	struct rnicpi_wc wc;
	uint64_t slept = 0;
	bool early = false;

	if (block)
		early = arm(to, to->rcq, &wc, straddle);
	ck_assert_ok(h_post_send(from, RNICPI_WR_SEND, fb, 0, MSG, id,
				 RNICPI_SEND_SIGNALED, 0, 0));
	if (block && !early)
		slept = sleep_for(to, to->rcq, &wc);
	else if (!block)
		spin_for(to, to->rcq, &wc);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, MSG);
	h_post_recv(to, tb, 0, MSG, id);
	spin_for(from, from->scq, &wc);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	return slept;
}

START_TEST(test_park_pingpong_poll_then_block)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_device *da, *db;
	uint64_t worst = 0, total = 0, timer_data;
	int i;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 7);
	da = to_siw_dev(p.da->dev);
	db = to_siw_dev(p.db->dev);
	ck_assert(da->opts.poll_rx && db->opts.poll_rx);
	h_post_recv(&p.a, &sa, 0, MSG, 0);
	h_post_recv(&p.b, &sb, 0, MSG, 0);
	for (i = 0; i < ROUNDS; i++) {
		/* Rounds alternate: two polled, then two asleep. */
		bool block = (i / 2) % 2;
		bool straddle = (i / 4) % 2;
		uint64_t t;

		t = one_way(&p.a, &sa, &p.b, &sb, (uint64_t)i, block,
			    straddle);
		t += one_way(&p.b, &sb, &p.a, &sa, (uint64_t)i, block,
			     straddle);
		total += t;
		if (t > worst)
			worst = t;
	}
	timer_data = atomic_load(&da->counters.unpark_timer_data) +
		     atomic_load(&db->counters.unpark_timer_data);
	printf("siw-park: %d rounds, parks %llu/%llu, unparks at arm "
	       "%llu/%llu, by the timer %llu/%llu (%llu with data), "
	       "longest sleep %llu us, all sleeps %llu us\n", ROUNDS,
	       (unsigned long long)atomic_load(&da->counters.parks),
	       (unsigned long long)atomic_load(&db->counters.parks),
	       (unsigned long long)atomic_load(&da->counters.unpark_arm),
	       (unsigned long long)atomic_load(&db->counters.unpark_arm),
	       (unsigned long long)atomic_load(&da->counters.unpark_timer),
	       (unsigned long long)atomic_load(&db->counters.unpark_timer),
	       (unsigned long long)timer_data, (unsigned long long)worst,
	       (unsigned long long)total);
	/* The point: not one completion came through the park timer. */
	ck_assert_uint_eq(timer_data, 0);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/* Spins until @p holds @tag, touching no CQ; false after H_WAIT_MS.
 * It yields the core each time round (under valgrind, which runs one
 * thread at a time, a bare spin starves the progress threads). */
static bool spin_on_byte(volatile uint8_t *p, uint8_t tag)
{
	uint64_t end = mono_us() + (uint64_t)H_WAIT_MS * 1000u;

	while (*p != tag) {
		if (mono_us() >= end)
			return false;
		sched_yield();
	}
	return true;
}

/* One side's Write of @tag in the last byte of MSG bytes from the front
 * of @from's buffer into the back of @to's, and its send completion
 * polled for, then the CQ polled empty as a consumer that reaps all there
 * is does: the QP is a poller's, so what arrives next is parked. */
static void write_tag(struct h_side *side, struct h_buf *from,
		      struct h_buf *to, uint8_t tag, uint64_t id)
{
	struct rnicpi_wc wc;

	from->p[MSG - 1] = tag;
	ck_assert_ok(h_post_send(side, RNICPI_WR_RDMA_WRITE, from, 0, MSG, id,
				 RNICPI_SEND_SIGNALED,
				 (uint64_t)(uintptr_t)to->p + MSG,
				 to->mr->rkey));
	spin_for(side, side->scq, &wc);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_int_eq(side->d->ops->poll_cq(side->scq, 1, &wc), 0);
}

START_TEST(test_park_memory_poller)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_device *da, *db;
	uint64_t timer_data, off;
	int i;

	/* No busy polling by the progress threads: in one process the round
	 * trip is shorter than their spin and they read it all themselves,
	 * where two processes on two cores park (hostrdma-perf write_lat
	 * with its wait for the byte made as perftest's: 25 ms a message). */
	static const struct rnicpi_option nobusy[] = {
		{ "busy_poll_us", "0" }, { NULL, NULL } };

	h_pair_up_bufs(&p, nobusy, nobusy, &sa, &sb, 2 * MSG, 9);
	da = to_siw_dev(p.da->dev);
	db = to_siw_dev(p.db->dev);
	memset(sa.p, 0, 2 * MSG);
	memset(sb.p, 0, 2 * MSG);
	for (i = 0; i < ROUNDS; i++) {
		uint8_t tag = (uint8_t)(i % 255 + 1);

		write_tag(&p.a, &sa, &sb, tag, (uint64_t)i);
		ck_assert_msg(spin_on_byte(sb.p + 2 * MSG - 1, tag),
			      "round %d: a's Write never landed", i);
		write_tag(&p.b, &sb, &sa, tag, (uint64_t)i);
		ck_assert_msg(spin_on_byte(sa.p + 2 * MSG - 1, tag),
			      "round %d: b's Write never landed", i);
	}
	timer_data = atomic_load(&da->counters.unpark_timer_data) +
		     atomic_load(&db->counters.unpark_timer_data);
	off = atomic_load(&da->counters.park_off) +
	      atomic_load(&db->counters.park_off);
	printf("siw-park memory poller: %d rounds, parks %llu/%llu, by the "
	       "timer with data %llu, parking ended on %llu QPs\n", ROUNDS,
	       (unsigned long long)atomic_load(&da->counters.parks),
	       (unsigned long long)atomic_load(&db->counters.parks),
	       (unsigned long long)timer_data, (unsigned long long)off);
	/* Before: every round trip waited for the timer (2 per round). At
	 * most once per QP now, and that once ends its parking. */
	ck_assert_uint_le(timer_data, 2);
	ck_assert_uint_le(off, 2);
	ck_assert_uint_eq(off, timer_data);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/*
 * A polled ping-pong reads each message with one recvmsg(): a read that
 * came back shorter than asked ends the pass between two FPDUs, without
 * the read that would find the socket empty (it cost one system call per
 * message on the round trip: 20000 empty reads in 20000 round trips of
 * an 8-byte send_lat client). Every message still arrives, whole, once.
 */
START_TEST(test_pingpong_no_empty_reads)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_device *da, *db;
	uint64_t empty;
	int i;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 11);
	da = to_siw_dev(p.da->dev);
	db = to_siw_dev(p.db->dev);
	h_post_recv(&p.a, &sa, 0, MSG, 0);
	h_post_recv(&p.b, &sb, 0, MSG, 0);
	empty = atomic_load(&da->counters.rx_empty) +
		atomic_load(&db->counters.rx_empty);
	for (i = 0; i < ROUNDS; i++) {
		one_way(&p.a, &sa, &p.b, &sb, (uint64_t)i, false, false);
		one_way(&p.b, &sb, &p.a, &sa, (uint64_t)i, false, false);
	}
	empty = atomic_load(&da->counters.rx_empty) +
		atomic_load(&db->counters.rx_empty) - empty;
	printf("siw-park ping-pong: %d messages, %llu empty reads\n",
	       2 * ROUNDS, (unsigned long long)empty);
	/* Before: one per message (240). A read that fills its buffer
	 * exactly, or a progress thread that looks too, may still make
	 * one. */
	ck_assert_uint_lt(empty, ROUNDS / 4);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/* @q's reads without a poll() first, and its empty ones in a row */
static void probe_state(struct siw_qp *q, uint64_t *reads, uint32_t *misses)
{
	pthread_mutex_lock(&q->lock);
	*reads = q->rx_probe_reads;
	*misses = q->rx.misses;
	pthread_mutex_unlock(&q->lock);
}

/* one_way() to a consumer that polls before the message is sent, as one
 * that waits for it does (one thread plays both sides here: without this
 * poll the progress thread may place every message before the receiver
 * looks, and the socket is never left to the receiver). */
static void polled_way(struct h_side *from, struct h_buf *fb,
		       struct h_side *to, struct h_buf *tb, uint64_t id)
{
	struct rnicpi_wc wc;

	ck_assert_int_eq(to->d->ops->poll_cq(to->rcq, 1, &wc), 0);
	one_way(from, fb, to, tb, id, false, false);
}

/*
 * A polling consumer reads a socket that has been bringing bytes without
 * asking poll() first (one system call fewer on each message's path), and
 * goes back to asking once SIW_RX_PROBE_MISSES reads in a row found it
 * empty (a QP that receives nothing: its empty reads would hold the
 * socket's lock against what arrives). The next message it gets comes
 * the asked way, and reading directly starts again.
 */
START_TEST(test_poller_reads_directly)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qa, *qb;
	struct rnicpi_wc wc;
	uint64_t ra, rb, ra0, rb0;
	uint32_t ma, mb;
	int i;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 17);
	qa = to_siw_qp(p.a.qp);
	qb = to_siw_qp(p.b.qp);
	h_post_recv(&p.a, &sa, 0, MSG, 0);
	h_post_recv(&p.b, &sb, 0, MSG, 0);
	probe_state(qa, &ra0, &ma);
	probe_state(qb, &rb0, &mb);
	for (i = 0; i < ROUNDS; i++) {
		polled_way(&p.a, &sa, &p.b, &sb, (uint64_t)i);
		polled_way(&p.b, &sb, &p.a, &sa, (uint64_t)i);
	}
	probe_state(qa, &ra, &ma);
	probe_state(qb, &rb, &mb);
	printf("siw-park direct reads: %llu + %llu of %d messages\n",
	       (unsigned long long)(ra - ra0), (unsigned long long)(rb - rb0),
	       2 * ROUNDS);
	/* One read a message; the progress thread may take the first few,
	 * before the socket is left to the poller. */
	ck_assert_uint_ge(ra - ra0, ROUNDS * 9 / 10);
	ck_assert_uint_ge(rb - rb0, ROUNDS * 9 / 10);
	ck_assert_uint_le(ra - ra0, ROUNDS);
	ck_assert_uint_le(rb - rb0, ROUNDS);

	/* Nothing arrives: b's direct reads stop at the limit. */
	for (i = 0; i < SIW_RX_PROBE_MISSES + 100; i++)
		ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	probe_state(qb, &rb0, &mb);
	ck_assert_uint_eq(mb, SIW_RX_PROBE_MISSES);
	/* The next message is found by poll() and read; then directly
	 * again. */
	polled_way(&p.a, &sa, &p.b, &sb, 1000);
	probe_state(qb, &rb, &mb);
	ck_assert_uint_eq(rb, rb0);
	ck_assert_uint_eq(mb, 0);
	for (i = 0; i < MSG; i++)
		sa.p[i] = (uint8_t)(0xa5 ^ i);
	polled_way(&p.a, &sa, &p.b, &sb, 1001);
	probe_state(qb, &rb, &mb);
	ck_assert_uint_eq(rb, rb0 + 1);
	ck_assert_mem_eq(sb.p, sa.p, MSG);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/* Options for the two cases below: a lease of 1 s, no busy polling. */
static const struct rnicpi_option slow_park[] = {
	{ "busy_poll_us", "0" }, { "park_lease_us", "1000000" },
	{ NULL, NULL } };

/* FPDUs @qb's socket gave so far. */
static uint64_t fpdus_of(struct siw_qp *qb)
{
	uint64_t n;

	pthread_mutex_lock(&qb->lock);
	n = qb->rx_fpdus;
	pthread_mutex_unlock(&qb->lock);
	return n;
}

/* @p up with slow_park; b polls its empty CQ once, then a sends it MSG
 * bytes of @fill, left unread on b's parked socket (asserted 20 ms
 * later). Returns b's QP. */
static struct siw_qp *park_one(struct h_pair *p, struct h_buf *sa,
			       struct h_buf *sb, uint8_t fill)
{
	struct rnicpi_wc wc;
	struct siw_qp *qb;
	bool parked;

	h_pair_up_bufs(p, slow_park, slow_park, sa, sb, MSG, 13);
	qb = to_siw_qp(p->b.qp);
	h_post_recv(&p->b, sb, 0, MSG, 1);
	ck_assert_int_eq(p->b.d->ops->poll_cq(p->b.rcq, 1, &wc), 0);
	memset(sa->p, fill, MSG);
	ck_assert_ok(h_post_send(&p->a, RNICPI_WR_SEND, sa, 0, MSG, 2,
				 RNICPI_SEND_SIGNALED, 0, 0));
	spin_for(&p->a, p->a.scq, &wc);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	usleep(20000);
	pthread_mutex_lock(&qb->lock);
	parked = qb->rx.parked;
	pthread_mutex_unlock(&qb->lock);
	ck_assert_msg(parked && fpdus_of(qb) == 0,
		      "not parked (%d) or read already (%llu FPDUs)", parked,
		      (unsigned long long)fpdus_of(qb));
	return qb;
}

/* b's receive completes with the MSG bytes of @fill; @p goes down. */
static void take_one(struct h_pair *p, struct h_buf *sa, struct h_buf *sb,
		     uint8_t fill)
{
	struct rnicpi_wc wc;
	int i;

	ck_assert_int_eq(p->b.d->ops->poll_cq(p->b.rcq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.byte_len, MSG);
	for (i = 0; i < MSG; i++)
		ck_assert_int_eq(sb->p[i], fill);
	h_pair_down_bufs(p, sa, sb);
}

/*
 * A consumer that has completions in hand and dequeues them (IT-API's
 * EVD asks the CQ with poll_cq(cq, 0, NULL)) while the peer's data waits
 * in its parked socket: the call reads it (rate-limited: SIW_NUDGE_RX_NS
 * after the last look), so a bulk stream keeps flowing while the
 * consumer reaps; it returns no completion, which the next poll takes.
 * Without the look, the socket waited for the consumer's next empty poll
 * (fi_rma_bw 64 KiB, both sides writing: 0.78 of the bandwidth).
 */
START_TEST(test_nudge_reads_parked)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qb = park_one(&p, &sa, &sb, 0x5a);
	uint64_t fpdus = 0;
	int i;

	/* Polls with completions in hand (n 0) read it now and then. */
	for (i = 0; i < 1000 && fpdus == 0; i++) {
		ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 0, NULL), 0);
		fpdus = fpdus_of(qb);
	}
	ck_assert_uint_eq(fpdus, 1);
	take_one(&p, &sa, &sb, 0x5a);
}
END_TEST

/* Is @fd in the epoll set @epfd? (what the kernel lists for it) */
static bool in_epoll_set(int epfd, int fd)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, g_strerror(errno));
	while (!found && fgets(line, sizeof(line), f)) {
		int tfd;

		found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
	}
	fclose(f);
	return found;
}

/*
 * A consumer about to sleep without arming a CQ of the device (in
 * it_evd_wait for connection events: consumer_blocks) hands its parked
 * sockets back, as an arm does: a message waiting there is read by the
 * progress engine, not left for the lease (1 s here) or the next poll.
 * While parked, the socket is out of the progress thread's epoll set
 * (in one, each segment delivered ran the set's wake-up callback inside
 * the sender's send(), although nobody wanted the wake-up); given back,
 * it is in the set again.
 */
START_TEST(test_consumer_blocks_unparks)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qb = park_one(&p, &sa, &sb, 0x3c);
	int epfd = rnicpi_engine_fd(&qb->dev->engine), fd;
	uint64_t t0 = mono_us();

	pthread_mutex_lock(&qb->lock);
	fd = qb->fd;
	pthread_mutex_unlock(&qb->lock);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(!in_epoll_set(epfd, fd), "parked fd %d is watched", fd);
	/* b goes to sleep on something else: no poll from here on. */
	p.b.d->ops->consumer_blocks(p.b.d->dev);
	while (fpdus_of(qb) == 0 && mono_us() - t0 < 500000)
		usleep(1000);
	ck_assert_msg(fpdus_of(qb) == 1,
		      "the message was not read within 500 ms without a poll");
	ck_assert_msg(in_epoll_set(epfd, fd), "fd %d not watched again", fd);
	take_one(&p, &sa, &sb, 0x3c);
}
END_TEST

/*
 * A parked socket whose QP closes (CLOSING: our FIN goes out) is watched
 * again at once: the peer's FIN is the progress thread's to see, and the
 * close is orderly and prompt. Left out of the epoll set, the FIN waited
 * for the linger timer (2 s), which then reset the stream.
 */
START_TEST(test_parked_socket_closes)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qb = park_one(&p, &sa, &sb, 0x6b);
	struct rnicpi_qp_attr closing = { .qp_state = RNICPI_QPS_CLOSING };
	struct rnicpi_wc wc;
	struct h_conn_ev ev;
	uint64_t t0;

	/* b's consumer takes the message from its parked socket... */
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, MSG);
	for (int i = 0; i < MSG; i++)
		ck_assert_int_eq(sb.p[i], 0x6b);
	pthread_mutex_lock(&qb->lock);
	ck_assert(qb->rx.parked);
	pthread_mutex_unlock(&qb->lock);
	/* ...and closes, polling no more */
	t0 = mono_us();
	ck_assert_ok(p.db->ops->modify_qp(p.b.qp, &closing, RNICPI_QP_STATE));
	ck_assert(h_wait_conn(p.db, RNICPI_CONN_DISCONNECTED, p.b.qp, &ev,
			      H_WAIT_MS));
	ck_assert_msg(mono_us() - t0 < 1000000,
		      "closed after %llu us", (unsigned long long)(mono_us() - t0));
	ck_assert_int_eq(ev.ev.status, 0);
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, 0);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/* The socket of @qb as its lock sees it. */
static int fd_of(struct siw_qp *qb)
{
	int fd;

	pthread_mutex_lock(&qb->lock);
	fd = qb->fd;
	pthread_mutex_unlock(&qb->lock);
	return fd;
}

/* cq_wait_begin on @cq, whose one QP must be left to the waiter: a QP
 * another thread holds at that moment (a timer, say) stays with the
 * progress thread for that sleep, so ask again a while. */
static int begin_one(struct h_side *s, struct rnicpi_cq *cq, int *fds)
{
	uint64_t end = mono_us() + 1000000;
	int n;

	while ((n = s->d->ops->cq_wait_begin(cq, fds, 4)) == 0 &&
	       mono_us() < end)
		usleep(100);
	return n;
}

/* Sleep as it_evd_wait does with sockets left to it: on the CQ's fd and
 * @fd; returns the revents of @fd (the CQ's fd must stay quiet). */
static short sleep_on(struct rnicpi_cq *cq, int fd)
{
	struct pollfd pf[2] = { { .fd = cq->notify_fd, .events = POLLIN },
				{ .fd = fd, .events = POLLIN } };

	ck_assert_int_eq(poll(pf, 2, H_WAIT_MS), 1);
	ck_assert_msg(!(pf[0].revents & POLLIN),
		      "the CQ woke the waiter: someone else read the socket");
	return pf[1].revents;
}

/*
 * A thread about to sleep on a CQ (cq_wait_begin, as it_evd_wait calls
 * it) is left the socket of the CQ's QP: it watches it beside the CQ's
 * fd and reads it in the poll it makes when woken, so a message costs
 * one thread's wake-up, not the progress thread's and then the
 * consumer's. While it is left so the progress thread does not read it
 * (out of its epoll set, and an arm of the device's CQs or a consumer
 * blocking elsewhere does not take it back), every message is the
 * waiter's to read, and its bytes land where the receive said. A wait
 * that ends with the CQ still armed (a timeout) gives the socket back:
 * the next message is read without any poll.
 */
START_TEST(test_waiter_reads_socket)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct siw_qp *qb;
	struct siw_device *db;
	struct rnicpi_wc wc;
	int epfd, fd, fds[4], i, k;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 21);
	qb = to_siw_qp(p.b.qp);
	db = to_siw_dev(p.db->dev);
	epfd = rnicpi_engine_fd(&db->engine);
	fd = fd_of(qb);
	ck_assert_int_ge(fd, 0);
	ck_assert(in_epoll_set(epfd, fd));
	for (i = 0; i < ROUNDS; i++) {
		short rev;

		h_post_recv(&p.b, &sb, 0, MSG, (uint64_t)i);
		ck_assert_int_eq(begin_one(&p.b, p.b.rcq, fds), 1);
		ck_assert_int_eq(fds[0], fd);
		ck_assert_ok(p.b.d->ops->req_notify_cq(p.b.rcq, 0));
		/* Neither an arm nor a consumer asleep elsewhere on the
		 * device takes a socket a waiter watches. */
		p.b.d->ops->consumer_blocks(p.b.d->dev);
		ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
		ck_assert_msg(!in_epoll_set(epfd, fd),
			      "round %d: the progress thread watches fd %d",
			      i, fd);
		memset(sa.p, 0x40 + i % 64, MSG);
		ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &sa, 0, MSG,
					 (uint64_t)i, RNICPI_SEND_SIGNALED, 0,
					 0));
		spin_for(&p.a, p.a.scq, &wc);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		if (i == 0) {
			/* Left alone a while, the message stays unread */
			usleep(20000);
			ck_assert_uint_eq(fpdus_of(qb), 0);
		}
		rev = sleep_on(p.b.rcq, fd);
		ck_assert(rev & POLLIN);
		ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 1);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
		ck_assert_uint_eq(wc.byte_len, MSG);
		for (k = 0; k < MSG; k++)
			ck_assert_int_eq(sb.p[k], 0x40 + i % 64);
		/* The completion came from the poll, after the arm: the
		 * CQ's fd fired too; take it as a waiter would. */
		ck_assert_ok(p.b.d->ops->ack_cq_event(p.b.rcq));
		p.b.d->ops->cq_wait_end(p.b.rcq);
	}
	ck_assert_uint_eq(fpdus_of(qb), ROUNDS);
	ck_assert_uint_ge(atomic_load(&db->counters.wait_rx), ROUNDS);
	ck_assert_uint_eq(atomic_load(&db->counters.unpark_timer), 0);

	/* A wait that times out: armed, nothing came, the waiter leaves */
	h_post_recv(&p.b, &sb, 0, MSG, 1);
	ck_assert_int_eq(begin_one(&p.b, p.b.rcq, fds), 1);
	ck_assert_ok(p.b.d->ops->req_notify_cq(p.b.rcq, 0));
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	p.b.d->ops->cq_wait_end(p.b.rcq);
	ck_assert_msg(in_epoll_set(epfd, fd), "fd %d not watched again", fd);
	memset(sa.p, 0x2e, MSG);
	ck_assert_ok(h_post_send(&p.a, RNICPI_WR_SEND, &sa, 0, MSG, 2,
				 RNICPI_SEND_SIGNALED, 0, 0));
	spin_for(&p.a, p.a.scq, &wc);
	{
		struct pollfd pf = { .fd = p.b.rcq->notify_fd,
				     .events = POLLIN };

		ck_assert_int_eq(poll(&pf, 1, H_WAIT_MS), 1);
	}
	ck_assert_ok(p.b.d->ops->ack_cq_event(p.b.rcq));
	take_one(&p, &sa, &sb, 0x2e);
}
END_TEST

/*
 * The peer closes while the waiter watches the socket: its FIN wakes the
 * waiter, whose poll reads it; the QP disconnects in an orderly way at
 * once (not after the linger or park timer), and the closed socket is
 * no longer left to anyone.
 */
START_TEST(test_waiter_sees_close)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct rnicpi_qp_attr closing = { .qp_state = RNICPI_QPS_CLOSING };
	struct siw_qp *qb;
	struct rnicpi_wc wc;
	struct h_conn_ev ev;
	int fd, fds[4];
	uint64_t t0;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 22);
	qb = to_siw_qp(p.b.qp);
	fd = fd_of(qb);
	ck_assert_int_eq(begin_one(&p.b, p.b.rcq, fds), 1);
	ck_assert_int_eq(fds[0], fd);
	ck_assert_ok(p.b.d->ops->req_notify_cq(p.b.rcq, 0));
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	t0 = mono_us();
	ck_assert_ok(p.da->ops->modify_qp(p.a.qp, &closing, RNICPI_QP_STATE));
	ck_assert(sleep_on(p.b.rcq, fd) & (POLLIN | POLLHUP));
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	ck_assert(h_wait_conn(p.db, RNICPI_CONN_DISCONNECTED, p.b.qp, &ev,
			      H_WAIT_MS));
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, 0);
	ck_assert_msg(mono_us() - t0 < 1000000, "closed after %llu us",
		      (unsigned long long)(mono_us() - t0));
	ck_assert(atomic_load(&qb->wait_cq) == NULL);
	/* Nothing to leave to a waiter any more */
	ck_assert_int_eq(p.b.d->ops->cq_wait_begin(p.b.rcq, fds, 4), 0);
	p.b.d->ops->cq_wait_end(p.b.rcq);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

/* A thread asleep as it_evd_wait sleeps, on the CQ's fd and a socket. */
struct sleeper {
	struct rnicpi_cq *cq;
	int fd;
	short cq_revents;
	uint64_t woke_us;
};

static void *sleep_thread(void *arg)
{
	struct sleeper *z = arg;
	struct pollfd pf[2] = { { .fd = z->cq->notify_fd, .events = POLLIN },
				{ .fd = z->fd, .events = POLLIN } };

	if (poll(pf, 2, H_WAIT_MS) > 0)
		z->cq_revents = pf[0].revents;
	z->woke_us = mono_us();
	return NULL;
}

/*
 * Our side closes (the QP to ERR: an abortive close, RST) while a thread
 * sleeps on the socket: its poll holds the socket's file, so the close
 * takes effect only once that thread lets go. The close wakes it through
 * the CQ's fd; its next sleep has no claim on the QP, and the peer sees
 * the connection go at once, not at the sleeper's time-out.
 */
START_TEST(test_waiter_woken_by_our_close)
{
	struct h_pair p;
	struct h_buf sa, sb;
	struct rnicpi_qp_attr err = { .qp_state = RNICPI_QPS_ERR };
	struct sleeper z = { 0 };
	struct siw_qp *qb;
	struct rnicpi_wc wc;
	struct h_conn_ev ev;
	pthread_t th;
	int fds[4];
	uint64_t t0;

	h_pair_up_bufs(&p, NULL, NULL, &sa, &sb, MSG, 23);
	qb = to_siw_qp(p.b.qp);
	ck_assert_int_eq(begin_one(&p.b, p.b.rcq, fds), 1);
	ck_assert_ok(p.b.d->ops->req_notify_cq(p.b.rcq, 0));
	ck_assert_int_eq(p.b.d->ops->poll_cq(p.b.rcq, 1, &wc), 0);
	z.cq = p.b.rcq;
	z.fd = fds[0];
	ck_assert_int_eq(pthread_create(&th, NULL, sleep_thread, &z), 0);
	usleep(20000);		/* asleep in poll() */
	t0 = mono_us();
	ck_assert_ok(p.db->ops->modify_qp(p.b.qp, &err, RNICPI_QP_STATE));
	ck_assert(h_wait_conn(p.da, RNICPI_CONN_DISCONNECTED, p.a.qp, &ev,
			      H_WAIT_MS));
	ck_assert_msg(mono_us() - t0 < 1000000,
		      "the peer saw the close after %llu us",
		      (unsigned long long)(mono_us() - t0));
	pthread_join(th, NULL);
	ck_assert_msg(z.cq_revents & POLLIN, "not woken through the CQ");
	ck_assert_msg(z.woke_us - t0 < 1000000, "woken after %llu us",
		      (unsigned long long)(z.woke_us - t0));
	ck_assert(atomic_load(&qb->wait_cq) == NULL);
	ck_assert_ok(p.b.d->ops->ack_cq_event(p.b.rcq));
	ck_assert_int_eq(p.b.d->ops->cq_wait_begin(p.b.rcq, fds, 4), 0);
	p.b.d->ops->cq_wait_end(p.b.rcq);
	h_pair_down_bufs(&p, &sa, &sb);
}
END_TEST

Suite *suite_siw_park(void)
{
	Suite *s = suite_create("siw-park");
	TCase *tc = tcase_create("park");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_park_pingpong_poll_then_block);
	tcase_add_test(tc, test_park_memory_poller);
	tcase_add_test(tc, test_pingpong_no_empty_reads);
	tcase_add_test(tc, test_poller_reads_directly);
	tcase_add_test(tc, test_nudge_reads_parked);
	tcase_add_test(tc, test_consumer_blocks_unparks);
	tcase_add_test(tc, test_parked_socket_closes);
	tcase_add_test(tc, test_waiter_reads_socket);
	tcase_add_test(tc, test_waiter_sees_close);
	tcase_add_test(tc, test_waiter_woken_by_our_close);
	suite_add_tcase(s, tc);
	return s;
}
