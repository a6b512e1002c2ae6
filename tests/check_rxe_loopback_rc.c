/* SPDX-License-Identifier: MIT */
/*
 * rxe-loopback, RC traffic: SEND, WRITE (with immediate) and READ from 0 B
 * to 16 MiB with guard bytes around every target, over IPv4 and IPv6, with
 * and without direct placement; every path MTU, RNR, many WQEs in flight,
 * SQ drain, SRQ, busy polling, per-QP source ports. The suite and its
 * "objects" case are in check_rxe_loopback.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

static const uint32_t sizes[] = {
	0, 1, 255, 256, 4095, 4096, 65536, 1u << 20, 16u << 20,
};

/* ------------------------------------------------------------------ */

START_TEST(test_rc_send_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0xfffff0, 0x123 } };
	uint32_t size = sizes[_i];
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 3);
	rxe_t_buf_alloc(&p.t, &dst, size, 0x55, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 100);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND_WITH_IMM;
	wr.ex.imm_data = 0xa1b2c3d4;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_SEND);
	rxe_t_expect_wc(&p.t, p.b.rcq, 100, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0xa1b2c3d4);
	ck_assert_uint_eq(wc.src_qp, p.a.qp->qp_num);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);
	/* A SEND's first packet takes the receive WQE and is copied, and so
	 * are runs of its MIDDLE packets (UDP GRO datagrams: a run could
	 * carry the next message past this one's end); a packet that comes
	 * alone and has more than the 64 bytes peeked (the LAST of most
	 * sizes here) is read into the buffer directly. */
	if (rxe_t_direct && size > 4096 && size % 4096 > 64)
		ck_assert_uint_ge(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 1);
	else if (rxe_t_copy)
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);

	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_write_read_sizes)
{
	struct rxe_t_conn_opts o = { .psn = { 0x7ffff8, 0xfffffa } };
	uint32_t size = sizes[_i];
	struct rxe_t_buf src, dst, back, rbuf;
	struct rnicpi_send_wr wr;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 11);
	rxe_t_buf_alloc(&p.t, &dst, size, 0x55, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, size, 0x66, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &rbuf, 16, 0, RXE_T_ALL_ACCESS);

	/* RDMA WRITE a -> b */
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_WRITE);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);

	/* RDMA READ it back b -> a */
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&back);

	/* RDMA WRITE with immediate consumes a receive at b. */
	memset(dst.mem + RXE_T_GUARD, 0, size);
	rxe_t_post_recv(&p, &p.b, &rbuf, 300);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = RNICPI_WR_RDMA_WRITE_WITH_IMM;
	wr.ex.imm_data = 0x01020304;
	wr.wr.rdma.remote_addr = rxe_t_buf_va(&dst);
	wr.wr.rdma.rkey = dst.mr->rkey;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 3, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 300, RNICPI_WC_SUCCESS, &wc);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.imm_data, 0x01020304);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, size) ==
		  0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&rbuf);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	/* Every packet of the WRITE and of the READ's responses carrying
	 * payload (64-byte headers peeked: larger ones) went straight in. */
	if (rxe_t_direct && size > 64)
		ck_assert_uint_ge(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS),
				  2 * ((size + 4095) / 4096));
	else if (rxe_t_copy)
		ck_assert_uint_eq(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);
	else if (size >= (16u << 20))
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev,
						  RXE_CNT_DIRECT_PKTS), 0);
	/* Runs of full-MTU packets went out as UDP GSO datagrams. */
	if (size >= 4 * 4096)
		ck_assert_uint_gt(rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS),
				  0);

	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_buf_free(&p.t, &rbuf);
	rxe_t_pair_close(&p);
}
END_TEST

/* A progress thread that keeps polling after it received (busy_poll_us)
 * moves the same bytes: a 1 MiB WRITE and a READ back, byte-exact. */
START_TEST(test_busy_poll)
{
	static const struct rnicpi_option poll50[] = {
		{ "busy_poll_us", "50" }, { NULL, NULL },
	};
	struct rxe_t_buf src, dst, back;
	struct rxe_t_pair p;

	rxe_t_pair_open_opts(&p, NULL, poll50);
	rxe_t_buf_alloc(&p.t, &src, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 77);
	rxe_t_buf_alloc(&p.t, &dst, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&back);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * Option poll_rx: polling an empty CQ reads the receive socket in the
 * polling thread. A stream of SENDs (4 KiB, each with its own pattern)
 * and WRITEs (4 KiB to their own slots) with the application polling
 * both sides' CQs without pause: every completion arrives exactly once,
 * with its bytes. In the first run the progress thread is stopped, so
 * all the receiving is the poller's: the stream completes only if the
 * option works, and poll_rx_pkts counts every packet received; in the
 * second the progress thread runs too (the two share the socket, the
 * progress thread leaves it to a consumer that keeps polling) and the
 * poller must still have received some. The third run is the first
 * with the provider's defaults (no options, and no
 * HOSTRDMA_TEST_RXE_POLL_RX while the device opens): poll_rx is on by
 * default, hostrdma-rxe(7).
 */
#define POLL_RX_MSGS 1024
#define POLL_RX_WINDOW 64
#define POLL_RX_SIZE 4096u

static void poll_rx_take(struct rxe_t_pair *p, struct rnicpi_cq *cq,
			 uint8_t *seen, uint64_t limit, uint32_t *left)
{
	struct rnicpi_wc wc[16];
	int n, i;

	n = p->t.ops->poll_cq(cq, 16, wc);
	ck_assert_int_ge(n, 0);
	for (i = 0; i < n; i++) {
		ck_assert_msg(wc[i].status == RNICPI_WC_SUCCESS,
			      "wr_id %" PRIu64 " status %d", wc[i].wr_id,
			      wc[i].status);
		ck_assert_uint_lt(wc[i].wr_id, limit);
		ck_assert_msg(!seen[wc[i].wr_id], "wr_id %" PRIu64 " twice",
			      wc[i].wr_id);
		seen[wc[i].wr_id] = 1;
		ck_assert_uint_gt(*left, 0);
		(*left)--;
	}
}

/*
 * poll_rx with a consumer that polls its send CQ, then waits for the
 * peer's answer on a byte of its buffer without polling (perftest's
 * write_lat, memory-polling MPI paths). The answer is a WRITE posted by
 * another thread that never polls. While the sockets are parked for the
 * consumer, that WRITE waits until the lease runs out (poll_rx_late):
 * RXE_POLL_RX_LATE_MAX times at most, after which parking stops and
 * every later answer is read by the progress thread as it arrives.
 * Without that rule 75 rounds of 100 waited the lease (20 ms here).
 */
#define BYTE_WAIT_ROUNDS 100

struct byte_wait {
	struct rxe_t_pair *p;
	struct rxe_t_buf *answer;	/* on b: 8 bytes, the tag */
	uint64_t a_land;		/* where on a the answer lands */
	uint32_t a_rkey;
	int round;			/* set by the consumer: answer it */
};

static gpointer byte_wait_peer(gpointer arg)
{
	struct byte_wait *w = arg;
	int done = 0;

	while (done < BYTE_WAIT_ROUNDS) {
		int r = __atomic_load_n(&w->round, __ATOMIC_ACQUIRE);

		if (r == done) {
			g_usleep(50);
			continue;
		}
		memset(w->answer->mem + RXE_T_GUARD, (uint8_t)(r + 1), 8);
		rxe_t_post_rdma(w->p, &w->p->b, 1000u + (uint64_t)r,
				RNICPI_WR_RDMA_WRITE, w->answer, w->a_land,
				w->a_rkey);
		done = r;
	}
	return NULL;
}

START_TEST(test_poll_rx_byte_wait)
{
	/* Under valgrind, which runs one thread at a time, the peer thread
	 * gets the CPU seldom while the consumer spins: a lease of 20 ms
	 * often ran out before the answer was even posted (nothing waited,
	 * the streak began again) and 5 answers of 100 were late. There the
	 * lease is ten times as long and the spin yields. */
	const bool vg = tu_under_valgrind();
	const struct rnicpi_option opts[] = {
		{ "poll_rx", "1" },
		{ "poll_rx_lease_us", vg ? "200000" : "20000" },
		{ NULL, NULL },
	};
	const struct rxe_t_conn_opts co = {
		.max_send_wr = 2 * BYTE_WAIT_ROUNDS,
		.max_recv_wr = 4,
	};
	struct rxe_t_buf ping, pong_land, ping_land, answer;
	struct byte_wait w = { 0 };
	struct rxe_t_pair p;
	struct rnicpi_wc wc;
	GThread *th;
	uint64_t late, parks;
	int r, n, got = 0;

	rxe_t_pair_open_opts(&p, &co, opts);
	rxe_t_buf_alloc(&p.t, &ping, 8, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &ping_land, 8, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &answer, 8, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &pong_land, 8, 0, RXE_T_ALL_ACCESS);
	w.p = &p;
	w.answer = &answer;
	w.a_land = rxe_t_buf_va(&pong_land);
	w.a_rkey = pong_land.mr->rkey;
	th = g_thread_new("byte-wait-peer", byte_wait_peer, &w);
	for (r = 1; r <= BYTE_WAIT_ROUNDS; r++) {
		volatile uint8_t *land = pong_land.mem + RXE_T_GUARD;
		struct timespec t0, now;

		memset(ping.mem + RXE_T_GUARD, (uint8_t)r, 8);
		rxe_t_post_rdma(&p, &p.a, (uint64_t)r, RNICPI_WR_RDMA_WRITE,
				&ping, rxe_t_buf_va(&ping_land),
				ping_land.mr->rkey);
		/* Polls until its WRITE completes: a consumer that polls.
		 * Once parking stopped, the progress thread reads the ACK:
		 * yielding lets it run under valgrind, whose lock a thread
		 * spinning without a system call keeps. */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			n = p.t.ops->poll_cq(p.a.scq, 1, &wc);
			if (n == 0)
				sched_yield();
			clock_gettime(CLOCK_MONOTONIC, &now);
			ck_assert_msg(now.tv_sec - t0.tv_sec < 60,
				      "round %d: WRITE never completed", r);
		} while (n == 0);
		ck_assert_int_eq(n, 1);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)r);
		ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
		/* Then waits on the byte alone. */
		__atomic_store_n(&w.round, r, __ATOMIC_RELEASE);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (*land != (uint8_t)(r + 1)) {
			if (vg)
				sched_yield();
			clock_gettime(CLOCK_MONOTONIC, &now);
			ck_assert_msg(now.tv_sec - t0.tv_sec < 20,
				      "round %d: the answer never landed", r);
		}
		ck_assert(memcmp(ping_land.mem + RXE_T_GUARD,
				 ping.mem + RXE_T_GUARD, 8) == 0);
	}
	g_thread_join(th);
	/* The peer's WRITEs all completed, in order. */
	while (got < BYTE_WAIT_ROUNDS) {
		rxe_t_expect_wc(&p.t, p.b.scq, 1001u + (uint64_t)got,
				RNICPI_WC_SUCCESS, NULL);
		got++;
	}
	rxe_t_assert_guards(&ping_land);
	rxe_t_assert_guards(&pong_land);
	late = rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_LATE);
	parks = rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PARKS);
	ck_assert_msg(late <= RXE_POLL_RX_LATE_MAX,
		      "%" PRIu64 " answers of %d waited for the lease's end "
		      "(%" PRIu64 " parks)", late, BYTE_WAIT_ROUNDS, parks);
	rxe_t_buf_free(&p.t, &ping);
	rxe_t_buf_free(&p.t, &ping_land);
	rxe_t_buf_free(&p.t, &answer);
	rxe_t_buf_free(&p.t, &pong_land);
	rxe_t_pair_close(&p);
}
END_TEST

/* a WRITEs @src to @remote; the test thread polls a's send CQ without
 * pause until its completion. */
static void write_polled(struct rxe_t_pair *p, uint64_t wr_id,
			 struct rxe_t_buf *src, uint64_t remote, uint32_t rkey)
{
	struct rnicpi_wc wc;
	long polls;
	int n = 0;

	rxe_t_post_rdma(p, &p->a, wr_id, RNICPI_WR_RDMA_WRITE, src, remote,
			rkey);
	/* Yielding between polls lets the progress thread run under
	 * valgrind (see test_poll_rx_byte_wait). */
	for (polls = 0; n == 0 && polls < 10000000; polls++) {
		n = p->t.ops->poll_cq(p->a.scq, 1, &wc);
		if (n == 0)
			sched_yield();
	}
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(wc.wr_id, wr_id);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
}

/*
 * poll_rx: a consumer's poll that reads the sockets for longer than a
 * lease (a test hook spins 40 ms on its CPU before each read; the lease
 * is 10 ms) is polling all that time. Before it counted, the lease ran
 * out in the middle of the read, with the very datagram it was about to
 * read waiting and the thread on a CPU: a late lease whenever the park
 * timer went off half a lease or more into the read, and three in a
 * row stopped parking for good (hostrdma-perf's bandwidth tests did
 * that in their first second). Without the rule every round was late
 * and parking stopped at round 3 (three runs of three).
 */
#define LONG_READ_ROUNDS 8

static atomic_int long_read_spins;

static void long_read_hook(struct rxe_dev *dev, int gid_index, int fd)
{
	struct timespec t0, now;

	(void)gid_index;
	(void)fd;
	if (!rxe_net_on_poller(dev) || atomic_load(&long_read_spins) <= 0)
		return;
	atomic_fetch_sub(&long_read_spins, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - t0.tv_sec) * 1000000000L +
	       (now.tv_nsec - t0.tv_nsec) < 40000000L);
}

START_TEST(test_poll_rx_long_read)
{
	static const struct rnicpi_option opts[] = {
		{ "poll_rx", "1" }, { "poll_rx_lease_us", "10000" },
		{ NULL, NULL },
	};
	struct rxe_t_buf src, dst;
	struct rxe_t_pair p;
	struct rxe_dev *dev;
	int r, spun = 0;

	rxe_t_pair_open_opts(&p, NULL, opts);
	dev = to_rxe_dev(p.t.dev);
	rxe_t_buf_alloc(&p.t, &src, 64, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 64 * LONG_READ_ROUNDS, 0,
			RXE_T_ALL_ACCESS);
	dev->test_rx_loaded = long_read_hook;
	for (r = 0; r < LONG_READ_ROUNDS; r++) {
		/* A lease that ran out while this thread was off its CPU
		 * (a slow machine) handed the sockets back: not late. */
		ck_assert_msg(!atomic_load(&dev->rx_park_off),
			      "round %d: parking stopped after %" PRIu64
			      " late leases", r,
			      rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_LATE));
		if (!atomic_load(&dev->rx_parked))
			rxe_t_park_for_poller(&p);
		memset(src.mem + RXE_T_GUARD, 0xa0 + r, 64);
		atomic_store(&long_read_spins, 1);
		write_polled(&p, 100u + (uint64_t)r, &src,
			     rxe_t_buf_va(&dst) + 64u * (uint64_t)r,
			     dst.mr->rkey);
		if (atomic_exchange(&long_read_spins, 0) == 0)
			spun++;
	}
	pthread_mutex_lock(&dev->rx_lock);
	dev->test_rx_loaded = NULL;
	pthread_mutex_unlock(&dev->rx_lock);
	for (r = 0; r < LONG_READ_ROUNDS; r++) {
		uint8_t want[64];

		memset(want, 0xa0 + r, sizeof(want));
		ck_assert_mem_eq(dst.mem + RXE_T_GUARD + 64 * r, want, 64);
	}
	rxe_t_assert_guards(&dst);
	ck_assert_msg(rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_LATE) == 0,
		      "%" PRIu64 " leases ran out while the poller read",
		      rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_LATE));
	ck_assert(!atomic_load(&dev->rx_park_off));
	ck_assert_msg(spun > 0, "no poll read the sockets");
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * poll_rx: polls read only sockets the progress thread left to them.
 * With parking stopped (as after three late leases), a consumer that
 * polls all the time takes no datagram from the progress thread: that
 * work stays on its core (hostrdma-perf -L write_bw 1 MiB, medians of
 * three rounds: 2058 MB/s with polls reading regardless, 2787 without,
 * 2833 with poll_rx off).
 */
START_TEST(test_poll_rx_not_parked)
{
	static const struct rnicpi_option opts[] = {
		{ "poll_rx", "1" }, { NULL, NULL },
	};
	struct rxe_t_buf src, dst;
	struct rxe_t_pair p;
	struct rxe_dev *dev;
	int r;

	rxe_t_pair_open_opts(&p, NULL, opts);
	dev = to_rxe_dev(p.t.dev);
	atomic_store(&dev->rx_park_off, true);
	rxe_t_buf_alloc(&p.t, &src, 4096, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 4096, 0, RXE_T_ALL_ACCESS);
	for (r = 0; r < 100; r++) {
		rxe_t_buf_pattern(&src, 0x9a00u + (uint32_t)r);
		write_polled(&p, (uint64_t)r, &src, rxe_t_buf_va(&dst),
			     dst.mr->rkey);
		ck_assert_mem_eq(dst.mem + RXE_T_GUARD,
				 src.mem + RXE_T_GUARD, 4096);
	}
	rxe_t_assert_guards(&dst);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PKTS), 0);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PARKS), 0);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * poll_rx: a consumer about to sleep without arming a CQ of the device
 * (in it_evd_wait for connection events: consumer_blocks) hands the
 * receive sockets back at once, as an arm does; what arrives then is
 * read by the progress thread, not left for the lease (1 s here).
 * Without it, soft-RoCE's connect/disconnect cycles between two ends of
 * one process (itapi-scale -n 2000 -c 1000) ran at 500-550 a second
 * with poll_rx on against 2100-2700 off: each CM message after the
 * consumer's last poll waited up to 200 us.
 */
START_TEST(test_poll_rx_consumer_blocks)
{
	static const struct rnicpi_option opts[] = {
		{ "poll_rx", "1" }, { "poll_rx_lease_us", "1000000" },
		{ NULL, NULL },
	};
	struct rxe_t_buf src, dst;
	struct timespec t0, now;
	struct rxe_t_pair p;
	struct rxe_dev *dev;
	struct rnicpi_wc wc;
	uint64_t rcvd, polled;
	long ms = 0;

	rxe_t_pair_open_opts(&p, NULL, opts);
	dev = to_rxe_dev(p.t.dev);
	rxe_t_buf_alloc(&p.t, &src, 4096, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 4096, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 0xb10c);
	rxe_t_park_for_poller(&p);
	p.t.ops->consumer_blocks(p.t.dev);
	ck_assert(!atomic_load(&dev->rx_parked));
	/* A WRITE and its ACK, received with nobody polling. */
	rcvd = rxe_dev_counter(p.t.dev, RXE_CNT_RCVD_PKTS);
	polled = rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PKTS);
	rxe_t_post_rdma(&p, &p.a, 7, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rxe_dev_counter(p.t.dev, RXE_CNT_RCVD_PKTS) < rcvd + 2 &&
	       ms < 500) {
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (now.tv_sec - t0.tv_sec) * 1000 +
		     (now.tv_nsec - t0.tv_nsec) / 1000000;
	}
	ck_assert_msg(ms < 500,
		      "the WRITE and its ACK not read within 500 ms (%" PRIu64
		      " of 2 packets): left to the lease",
		      rxe_dev_counter(p.t.dev, RXE_CNT_RCVD_PKTS) - rcvd);
	/* The counter moves as a packet arrives, before the progress
	 * thread has handled it: the ACK's completion may follow. Polls
	 * after the lease was given back read no socket. */
	for (ms = 0; ms < 500 && p.t.ops->poll_cq(p.a.scq, 1, &wc) == 0; ms++)
		usleep(1000);
	ck_assert_msg(ms < 500, "no send completion within 500 ms");
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PKTS),
			  polled);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_mem_eq(dst.mem + RXE_T_GUARD, src.mem + RXE_T_GUARD, 4096);
	rxe_t_assert_guards(&dst);
	/* Nothing parked, nothing to give back: a no-op. */
	p.t.ops->consumer_blocks(p.t.dev);
	ck_assert(!atomic_load(&dev->rx_parked));
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_poll_rx)
{
	static const struct rnicpi_option on[] = {
		{ "poll_rx", "1" }, { NULL, NULL },
	};
	const struct rxe_t_conn_opts co = {
		.max_send_wr = 2 * POLL_RX_WINDOW,
		.max_recv_wr = 2 * POLL_RX_WINDOW,
	};
	const size_t size = (size_t)POLL_RX_MSGS * POLL_RX_SIZE;
	bool threaded = _i == 1, defaults = _i == 2;
	/* With the progress thread running, one WR at a time: the
	 * application then spins on an empty CQ while each message is on
	 * its way, a consumer that polls (a window of 64 finds completions
	 * waiting, and needs no help). */
	uint32_t window = threaded ? 1 : POLL_RX_WINDOW;
	struct rxe_t_buf src, rcv, wdst;
	struct rxe_t_pair p;
	struct rxe_dev *dev;
	uint64_t got, rcvd;
	uint8_t *s_seen, *r_seen;
	uint32_t i, posted = 0, s_left = 0, r_left = 0;
	struct timespec t0, now;

	if (defaults) {
		char *env = g_strdup(g_getenv("HOSTRDMA_TEST_RXE_POLL_RX"));

		g_unsetenv("HOSTRDMA_TEST_RXE_POLL_RX");
		rxe_t_pair_open_opts(&p, &co, NULL);
		if (env)
			g_setenv("HOSTRDMA_TEST_RXE_POLL_RX", env, TRUE);
		g_free(env);
	} else {
		rxe_t_pair_open_opts(&p, &co, on);
	}
	dev = to_rxe_dev(p.t.dev);
	if (!threaded)
		rxe_net_stop_thread(dev);
	s_seen = g_malloc0(2 * POLL_RX_MSGS);
	r_seen = g_malloc0(POLL_RX_MSGS);
	rxe_t_buf_alloc(&p.t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 0x5eed + (uint32_t)_i);
	rxe_t_buf_alloc(&p.t, &rcv, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &wdst, size, 0, RXE_T_ALL_ACCESS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Even wr_ids SEND message k = wr_id / 2, odd ones WRITE it. */
	while (posted < 2 * POLL_RX_MSGS || s_left || r_left) {
		while (posted < 2 * POLL_RX_MSGS && s_left < window) {
			uint32_t k = posted / 2;
			struct rnicpi_sge sge = {
				.addr = rxe_t_buf_va(&src) +
					(uint64_t)k * POLL_RX_SIZE,
				.length = POLL_RX_SIZE,
				.lkey = src.mr->lkey,
			};
			struct rnicpi_send_wr wr = {
				.wr_id = posted, .sg_list = &sge, .num_sge = 1,
			};

			if (posted % 2 == 0) {
				struct rnicpi_sge rsge = {
					.addr = rxe_t_buf_va(&rcv) +
						(uint64_t)k * POLL_RX_SIZE,
					.length = POLL_RX_SIZE,
					.lkey = rcv.mr->lkey,
				};
				struct rnicpi_recv_wr rwr = {
					.wr_id = k, .sg_list = &rsge,
					.num_sge = 1,
				};
				const struct rnicpi_recv_wr *rbad;

				ck_assert_ok(p.t.ops->post_recv(p.b.qp, &rwr,
								&rbad));
				r_left++;
				wr.opcode = RNICPI_WR_SEND;
			} else {
				wr.opcode = RNICPI_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr =
					rxe_t_buf_va(&wdst) +
					(uint64_t)k * POLL_RX_SIZE;
				wr.wr.rdma.rkey = wdst.mr->rkey;
			}
			rxe_t_post(&p.t, &p.a, &wr, NULL);
			s_left++;
			posted++;
		}
		if (s_left)
			poll_rx_take(&p, p.a.scq, s_seen, 2 * POLL_RX_MSGS,
				     &s_left);
		if (r_left)
			poll_rx_take(&p, p.b.rcq, r_seen, POLL_RX_MSGS,
				     &r_left);
		clock_gettime(CLOCK_MONOTONIC, &now);
		ck_assert_msg(now.tv_sec - t0.tv_sec < 60,
			      "stalled: %u sends and %u receives left",
			      s_left, r_left);
	}
	for (i = 0; i < 2 * POLL_RX_MSGS; i++)
		ck_assert_msg(s_seen[i], "send wr_id %u never completed", i);
	for (i = 0; i < POLL_RX_MSGS; i++)
		ck_assert_msg(r_seen[i], "receive %u never completed", i);
	/* Nothing more: no completion twice. */
	{
		struct rnicpi_wc wc;

		ck_assert_int_eq(p.t.ops->poll_cq(p.a.scq, 1, &wc), 0);
		ck_assert_int_eq(p.t.ops->poll_cq(p.b.rcq, 1, &wc), 0);
	}
	ck_assert(memcmp(src.mem + RXE_T_GUARD, rcv.mem + RXE_T_GUARD,
			 size) == 0);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, wdst.mem + RXE_T_GUARD,
			 size) == 0);
	rxe_t_assert_guards(&rcv);
	rxe_t_assert_guards(&wdst);
	got = rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PKTS);
	rcvd = rxe_dev_counter(p.t.dev, RXE_CNT_RCVD_PKTS);
	ck_assert_msg(got > 0, "poll_rx_pkts 0 of %" PRIu64 " (%" PRIu64
		      " parks)", rcvd,
		      rxe_dev_counter(p.t.dev, RXE_CNT_POLL_RX_PARKS));
	if (!threaded)
		ck_assert_uint_eq(got, rcvd);
	else
		ck_assert_uint_le(got, rcvd);
	g_free(s_seen);
	g_free(r_seen);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &rcv);
	rxe_t_buf_free(&p.t, &wdst);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * The IPv4 IDs our ICRCs assume: without GSO every datagram carries ID 0
 * (DF, unconnected socket), the receiver's first guess, so nothing needs
 * solving. With GSO the kernel numbers the segments 0, 1, 2, ...: received
 * whole through UDP GRO, each segment's index is the receiver's guess and
 * still nothing needs solving; received one by one (GRO off), segments
 * after the first are found by the ID solver. No ICRC error either way.
 */
START_TEST(test_ipv4_id_assumption)
{
	static const struct rnicpi_option gso_off[] = {
		{ "gso", "0" }, { NULL, NULL },
	};
	static const struct rnicpi_option gro_off[] = {
		{ "gro", "0" }, { NULL, NULL },
	};
	const struct rnicpi_option *opts[] = { gso_off, NULL, gro_off };
	struct rxe_t_buf src, dst;
	struct rxe_t_pair p;
	uint64_t gso, gro, solved;

	rxe_t_pair_open_opts(&p, NULL, opts[_i]);
	rxe_t_buf_alloc(&p.t, &src, 1u << 20, 0x11, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 1u << 20, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 1u << 20) == 0);
	ck_assert_uint_eq(rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ERR), 0);
	gso = rxe_dev_counter(p.t.dev, RXE_CNT_GSO_SENDS);
	gro = rxe_dev_counter(p.t.dev, RXE_CNT_GRO_BATCHES);
	solved = rxe_dev_counter(p.t.dev, RXE_CNT_ICRC_ID_SOLVED);
	switch (_i) {
	case 0:
		ck_assert_uint_eq(gso, 0);
		ck_assert_uint_eq(solved, 0);
		break;
	case 1:
		ck_assert_uint_gt(gso, 0);
		ck_assert_uint_gt(gro, 0);
		ck_assert_uint_eq(solved, 0);
		break;
	default:
		ck_assert_uint_gt(gso, 0);
		ck_assert_uint_eq(gro, 0);
		ck_assert_uint_gt(solved, 0);
		break;
	}
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* Every path MTU (IBA 9.7.2 segmentation): a 70000-byte SEND and READ. */
START_TEST(test_rc_path_mtus)
{
	struct rxe_t_conn_opts o = { .mtu = (enum rnicpi_mtu)(RNICPI_MTU_256 +
							      _i),
				     .psn = { 0xfffffe, 0xfffff0 } };
	struct rxe_t_buf src, dst, back;
	struct rnicpi_send_wr wr;
	struct rnicpi_qp_attr qa;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	ck_assert_ok(p.t.ops->query_qp(p.a.qp, &qa, RNICPI_QP_PATH_MTU, NULL));
	ck_assert_int_eq(qa.path_mtu, o.mtu);
	rxe_t_buf_alloc(&p.t, &src, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 7);
	rxe_t_buf_alloc(&p.t, &dst, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &back, 70000, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_post_rdma(&p, &p.a, 2, RNICPI_WR_RDMA_READ, &back,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, back.mem + RXE_T_GUARD,
			 70000) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_assert_guards(&back);
	/* ceil(70000 / MTU) packets each way plus the READ request. */
	ck_assert_uint_ge(
		rxe_dev_counter(p.t.dev, RXE_CNT_SENT_PKTS),
		2 * ((70000 + (128u << o.mtu) - 1) / (128u << o.mtu)) + 1);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &back);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_ipv6)
{
	struct rxe_t_conn_opts o = { .sgid_index = 1, .mtu = RNICPI_MTU_1024 };
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 100000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 5);
	rxe_t_buf_alloc(&p.t, &dst, 100000, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(&p, &p.b, &dst, 9);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 9, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD,
			 100000) == 0);
	rxe_t_assert_guards(&dst);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_rnr)
{
	struct rxe_t_conn_opts o = { .min_rnr_timer = 12 /* 0.64 ms */ };
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 5000, 0x42, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 5000, 0, RXE_T_ALL_ACCESS);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	/* No receive yet: the responder answers RNR NAK, the requester
	 * waits and tries again (rnr_retry 7 = forever). */
	while (rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_RCVD) < 2)
		usleep(100);
	rxe_t_post_recv(&p, &p.b, &dst, 5);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p.t, p.b.rcq, 5, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, 5000) ==
		  0);
	ck_assert_uint_ge(rxe_dev_counter(p.t.dev, RXE_CNT_RNR_NAKS_SENT), 2);

	/* rnr_retry 0: the first RNR NAK ends it. */
	o.rnr_retry = 8;
	rxe_t_pair_renew(&p, &o);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = RNICPI_WR_SEND;
	rxe_t_post(&p.t, &p.a, &wr, &src);
	rxe_t_expect_wc(&p.t, p.a.scq, 2, RNICPI_WC_RNR_RETRY_EXC_ERR, NULL);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_rc_many_in_flight)
{
	/* 200 SENDs of 3000 bytes in a row, MTU 1024, ORD-limited READs
	 * in between: completions arrive in order. */
	struct rxe_t_conn_opts o = { .mtu = RNICPI_MTU_1024, .max_send_wr = 512,
				     .max_recv_wr = 512 };
	struct rxe_t_buf src, dst, rd;
	struct rxe_t_pair p;
	struct rnicpi_wc wc;
	unsigned int i;

	rxe_t_pair_open(&p, &o);
	rxe_t_buf_alloc(&p.t, &src, 3000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 1);
	rxe_t_buf_alloc(&p.t, &dst, 200 * 3000, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &rd, 3000, 0, RXE_T_ALL_ACCESS);
	for (i = 0; i < 200; i++) {
		struct rnicpi_sge sge = { rxe_t_buf_va(&dst) + i * 3000, 3000,
					  dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, 1000 + i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(p.t.ops->post_recv(p.b.qp, &rw, &rbad));
	}
	for (i = 0; i < 200; i++) {
		struct rnicpi_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		if (i % 10 == 5) {
			wr.opcode = RNICPI_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = rxe_t_buf_va(&src);
			wr.wr.rdma.rkey = src.mr->rkey;
			rxe_t_post(&p.t, &p.a, &wr, &rd);
		} else {
			wr.opcode = RNICPI_WR_SEND;
			rxe_t_post(&p.t, &p.a, &wr, &src);
		}
	}
	for (i = 0; i < 200; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	for (i = 0; i < 180; i++) {
		rxe_t_expect_wc(&p.t, p.b.rcq, 1000 + i, RNICPI_WC_SUCCESS,
				&wc);
		ck_assert(memcmp(src.mem + RXE_T_GUARD,
				 dst.mem + RXE_T_GUARD + (size_t)i * 3000,
				 3000) == 0);
	}
	ck_assert(memcmp(src.mem + RXE_T_GUARD, rd.mem + RXE_T_GUARD, 3000) ==
		  0);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_buf_free(&p.t, &rd);
	rxe_t_pair_close(&p);
}
END_TEST

/* IBA 10.3.1.6: RTS -> SQD stops new WQEs, reports SQ_DRAINED once the
 * outstanding ones are done; SQD -> RTS resumes. */
START_TEST(test_rc_sq_drain)
{
	struct rxe_t_buf src, dst;
	struct rnicpi_qp_attr a;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;

	rxe_t_pair_open(&p, NULL);
	rxe_t_buf_alloc(&p.t, &src, 64, 0x12, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 64, 0, RXE_T_ALL_ACCESS);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_SQD;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SQ_DRAINED, p.a.qp));
	/* Posted in SQD: held, not sent. */
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	ck_assert_int_eq(p.t.ops->poll_cq(p.a.scq, 1, &wc), 0);
	ck_assert_uint_eq(dst.mem[RXE_T_GUARD], 0);
	/* SQD -> RTS: it goes. */
	a.qp_state = RNICPI_QPS_RTS;
	ck_assert_ok(p.t.ops->modify_qp(p.a.qp, &a, RNICPI_QP_STATE));
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	ck_assert(memcmp(src.mem + RXE_T_GUARD, dst.mem + RXE_T_GUARD, 64) ==
		  0);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* Each QP sends from a UDP port of its own (flow entropy, A17.2.3). */
START_TEST(test_per_qp_source_port)
{
	struct rxe_t_pair p;
	struct rxe_t_buf src, dst;

	rxe_t_pair_open(&p, NULL);
	rxe_t_buf_alloc(&p.t, &src, 8, 1, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&p.t, &dst, 8, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_rdma(&p, &p.a, 1, RNICPI_WR_RDMA_WRITE, &src,
			rxe_t_buf_va(&dst), dst.mr->rkey);
	rxe_t_expect_wc(&p.t, p.a.scq, 1, RNICPI_WC_SUCCESS, NULL);
	/* a sent the WRITE, b the ACK: both have a port, not the same,
	 * and neither is 4791. */
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.b.qp)->tx_port[0], 0);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0],
			  to_rxe_qp(p.b.qp)->tx_port[0]);
	ck_assert_uint_ne(to_rxe_qp(p.a.qp)->tx_port[0], ROCE_V2_UDP_PORT);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

START_TEST(test_srq)
{
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	struct rnicpi_srq_attr sa = { .max_wr = 8,
				      .max_sge = 1,
				      .srq_limit = 2 };
	struct rnicpi_srq *srq;
	struct rnicpi_cq_init_attr ca = { .cqe = 64 };
	struct rnicpi_qp_init_attr qa;
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr;
	unsigned int i;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(t.ops->create_srq(t.pd, &sa, &srq));
	ck_assert_ok(rxe_t_side_create(&t, &a, RNICPI_QPT_RC, NULL));
	memset(&b, 0, sizeof(b));
	ck_assert_ok(t.ops->create_cq(t.dev, &ca, &b.scq));
	ck_assert_ok(t.ops->create_cq(t.dev, &ca, &b.rcq));
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = b.scq;
	qa.recv_cq = b.rcq;
	qa.srq = srq;
	qa.cap.max_send_wr = 8;
	ck_assert_ok(t.ops->create_qp(t.pd, &qa, &b.qp));
	ck_assert_ok(rxe_t_connect(&t, &a, &b, NULL));
	ck_assert_errno(t.ops->destroy_srq(srq), EBUSY);

	rxe_t_buf_alloc(&t, &src, 64, 0x77, RXE_T_ALL_ACCESS);
	rxe_t_buf_alloc(&t, &dst, 4 * 64, 0, RXE_T_ALL_ACCESS);
	for (i = 0; i < 4; i++) {
		struct rnicpi_sge sge = { rxe_t_buf_va(&dst) + i * 64, 64,
					  dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, 40 + i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(t.ops->post_srq_recv(srq, &rw, &rbad));
	}
	for (i = 0; i < 3; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.opcode = RNICPI_WR_SEND;
		rxe_t_post(&t, &a, &wr, &src);
		rxe_t_expect_wc(&t, b.rcq, 40 + i, RNICPI_WC_SUCCESS,
			  NULL);
	}
	/* 4 posted, 3 used: one left, under the limit of 2. */
	ck_assert(rxe_t_has_event(RNICPI_EVENT_SRQ_LIMIT_REACHED, NULL));
	rxe_t_side_destroy(&t, &a);
	rxe_t_side_destroy(&t, &b);
	ck_assert_ok(t.ops->destroy_srq(srq));
	rxe_t_buf_free(&t, &src);
	rxe_t_buf_free(&t, &dst);
	rxe_t_dev_close(&t);
}
END_TEST

/* Posts a 64-byte WRITE of @src's @i-th 64 bytes to @dst at @off. */
static void post_write64(struct rxe_t_pair *p, struct rxe_t_buf *src,
			 struct rxe_t_buf *dst, uint32_t i, uint64_t off,
			 unsigned int flags)
{
	struct rnicpi_sge sge = {
		.addr = rxe_t_buf_va(src) + i * 64,
		.length = 64,
		.lkey = src->mr->lkey,
	};
	struct rnicpi_send_wr wr = {
		.wr_id = i,
		.opcode = RNICPI_WR_RDMA_WRITE,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = RNICPI_SEND_SIGNALED | flags,
		.wr.rdma.remote_addr = rxe_t_buf_va(dst) + off,
		.wr.rdma.rkey = dst->mr->rkey,
	};
	const struct rnicpi_send_wr *bad;

	ck_assert_ok(p->t.ops->post_send(p->a.qp, &wr, &bad));
}

/* @dst holds @src's first @len bytes at @off, zeros elsewhere. */
static void assert_landed_only(const struct rxe_t_buf *dst,
			       const struct rxe_t_buf *src, size_t off,
			       size_t len)
{
	size_t i;

	ck_assert(memcmp(dst->mem + RXE_T_GUARD + off,
			 src->mem + RXE_T_GUARD, len) == 0);
	for (i = 0; i < dst->size; i++)
		if (i < off || i >= off + len)
			ck_assert_uint_eq(dst->mem[RXE_T_GUARD + i], 0);
	rxe_t_assert_guards(dst);
}

/*
 * RNICPI_SEND_MORE (IT_COALESCE_WR_FLAG): six 64-byte WRITEs posted with
 * it stay queued, no packet sent; a seventh without it starts them all,
 * and each lands at its offset with nothing else of the target touched.
 */
START_TEST(test_rc_coalesced_writes)
{
	struct rxe_t_buf src, dst;
	struct rxe_qp *qa;
	struct rxe_t_pair p;
	uint32_t wqe, i;

	rxe_t_pair_open(&p, NULL);
	qa = to_rxe_qp(p.a.qp);
	rxe_t_buf_alloc(&p.t, &src, 7 * 64, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 5);
	rxe_t_buf_alloc(&p.t, &dst, 1024, 0, RXE_T_ALL_ACCESS);
	rxe_qp_lock(qa);
	wqe = qa->req.wqe;
	rxe_qp_unlock(qa);
	for (i = 0; i < 7; i++) {
		post_write64(&p, &src, &dst, i, 100 + i * 64,
			     i < 6 ? RNICPI_SEND_MORE : 0);
		rxe_qp_lock(qa);
		ck_assert_uint_eq(qa->req.wqe - wqe, i < 6 ? 0 : 7);
		rxe_qp_unlock(qa);
	}
	for (i = 0; i < 7; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	assert_landed_only(&dst, &src, 100, 7 * 64);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * Option ack_clock (default 16): while the receive side is held (the
 * test takes rx_lock, so no ACK is read), 40 WRITEs of 64 bytes are
 * posted one by one. The first 16 go out as they are posted; from then
 * on 16 packets are unacknowledged and each post leaves its WRITE queued
 * (ack_clocked_posts; a post that made RXE_TX_BATCH wait would send
 * them). Once ACKs are read again the rest go out together, all 40
 * complete in order, and the bytes land at their offsets and nowhere
 * else. With ack_clock=0 every post sends at once.
 */
#define CLOCKED_WRITES 40

START_TEST(test_rc_ack_clocked)
{
	static const struct rnicpi_option off[] = {
		{ "ack_clock", "0" }, { NULL, NULL },
	};
	const struct rxe_t_conn_opts co = { .max_send_wr = 64 };
	const bool clocked = _i == 0;
	struct rxe_t_buf src, dst;
	struct rxe_qp *qa;
	struct rnicpi_device *dev;
	struct rxe_t_pair p;
	uint64_t sent0, held;
	uint32_t wqe, i;

	rxe_t_pair_open_opts(&p, &co, clocked ? NULL : off);
	dev = p.t.dev;
	qa = to_rxe_qp(p.a.qp);
	rxe_t_buf_alloc(&p.t, &src, CLOCKED_WRITES * 64, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, 9);
	rxe_t_buf_alloc(&p.t, &dst, 4096, 0, RXE_T_ALL_ACCESS);
	rxe_qp_lock(qa);
	wqe = qa->req.wqe;
	rxe_qp_unlock(qa);
	sent0 = rxe_dev_counter(dev, RXE_CNT_SENT_PKTS);
	pthread_mutex_lock(&to_rxe_dev(dev)->rx_lock);
	for (i = 0; i < CLOCKED_WRITES; i++) {
		uint32_t want = i + 1;

		post_write64(&p, &src, &dst, i, 8 + i * 64, 0);
		/* Sent so far: all, or 16 then a batch at every 32nd. */
		if (clocked && want > 16)
			want = want - 16 >= RXE_TX_BATCH
				       ? 16 + RXE_TX_BATCH : 16;
		rxe_qp_lock(qa);
		ck_assert_msg(qa->req.wqe - wqe == want,
			      "post %u: %u WRITEs sent, %u expected", i + 1,
			      qa->req.wqe - wqe, want);
		rxe_qp_unlock(qa);
		ck_assert_uint_eq(rxe_dev_counter(dev, RXE_CNT_SENT_PKTS) -
				  sent0, want);
	}
	held = rxe_dev_counter(dev, RXE_CNT_ACK_CLOCKED);
	pthread_mutex_unlock(&to_rxe_dev(dev)->rx_lock);
	ck_assert_uint_eq(held, clocked ? CLOCKED_WRITES - 16 : 0);
	for (i = 0; i < CLOCKED_WRITES; i++)
		rxe_t_expect_wc(&p.t, p.a.scq, i, RNICPI_WC_SUCCESS, NULL);
	assert_landed_only(&dst, &src, 8, CLOCKED_WRITES * 64);
	rxe_t_buf_free(&p.t, &src);
	rxe_t_buf_free(&p.t, &dst);
	rxe_t_pair_close(&p);
}
END_TEST

/* The "rc", "rc-copy" and "rc-direct" cases of suite_rxe_loopback(). */
/* RNICPI_QP_CAP on @side: the send and receive queue sizes. */
static int qp_resize(struct rxe_t_pair *p, struct rxe_t_side *side,
		     uint32_t sq, uint32_t rq)
{
	struct rnicpi_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = sq;
	attr.cap.max_recv_wr = rq;
	return p->t.ops->modify_qp(side->qp, &attr, RNICPI_QP_CAP);
}

/*
 * RNICPI_DEV_CAP_RESIZE_QP: b's receive queue grows from 2 to 4 around
 * two posted receives; a's send queue, holding two SENDs held back by
 * RNICPI_SEND_MORE, shrinks to 2 around them and grows to 8 again. Sizes
 * below what is queued or over the device's limit are -EINVAL. The four
 * messages complete and land in order.
 */
START_TEST(test_rc_resize)
{
	struct rxe_t_buf src[4], dst[4];
	const struct rnicpi_send_wr *bad;
	struct rnicpi_qp_attr qa;
	struct rnicpi_qp_init_attr qi;
	struct rnicpi_send_wr wr;
	struct rnicpi_sge sge;
	struct rnicpi_wc wc;
	struct rxe_t_pair p;
	int i;

	rxe_t_pair_open(&p, NULL);
	ck_assert_ok(qp_resize(&p, &p.b, 0, 2));
	for (i = 0; i < 4; i++) {
		rxe_t_buf_alloc(&p.t, &src[i], 1000, 0, RXE_T_ALL_ACCESS);
		rxe_t_buf_pattern(&src[i], 40 + (uint32_t)i);
		rxe_t_buf_alloc(&p.t, &dst[i], 1000, 0x55, RXE_T_ALL_ACCESS);
	}
	for (i = 0; i < 2; i++)
		rxe_t_post_recv(&p, &p.b, &dst[i], 100 + (uint64_t)i);
	ck_assert_errno(qp_resize(&p, &p.b, 0, 1), EINVAL);
	ck_assert_errno(qp_resize(&p, &p.b, 0, 1u << 30), EINVAL);
	ck_assert_ok(qp_resize(&p, &p.b, 0, 4));
	ck_assert_ok(p.t.ops->query_qp(p.b.qp, &qa, RNICPI_QP_CAP, &qi));
	ck_assert_uint_eq(qa.cap.max_recv_wr, 4);
	for (i = 2; i < 4; i++)
		rxe_t_post_recv(&p, &p.b, &dst[i], 100 + (uint64_t)i);

	for (i = 0; i < 4; i++) {
		if (i == 2) {
			/* Two SENDs queued, not started. */
			ck_assert_errno(qp_resize(&p, &p.a, 1, 0), EINVAL);
			ck_assert_ok(qp_resize(&p, &p.a, 2, 0));
			ck_assert_ok(p.t.ops->query_qp(p.a.qp, &qa,
						       RNICPI_QP_CAP, &qi));
			ck_assert_uint_eq(qa.cap.max_send_wr, 2);
			ck_assert_ok(qp_resize(&p, &p.a, 8, 0));
		}
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 10 + (uint64_t)i;
		wr.opcode = RNICPI_WR_SEND;
		wr.send_flags = RNICPI_SEND_SIGNALED |
				(i < 2 ? RNICPI_SEND_MORE : 0);
		sge.addr = rxe_t_buf_va(&src[i]);
		sge.length = 1000;
		sge.lkey = src[i].mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ck_assert_ok(p.t.ops->post_send(p.a.qp, &wr, &bad));
	}
	for (i = 0; i < 4; i++) {
		rxe_t_expect_wc(&p.t, p.a.scq, 10 + (uint64_t)i,
				RNICPI_WC_SUCCESS, NULL);
		rxe_t_expect_wc(&p.t, p.b.rcq, 100 + (uint64_t)i,
				RNICPI_WC_SUCCESS, &wc);
		ck_assert_uint_eq(wc.byte_len, 1000);
		ck_assert(memcmp(dst[i].mem + RXE_T_GUARD,
				 src[i].mem + RXE_T_GUARD, 1000) == 0);
		rxe_t_assert_guards(&dst[i]);
	}
	for (i = 0; i < 4; i++) {
		rxe_t_buf_free(&p.t, &src[i]);
		rxe_t_buf_free(&p.t, &dst[i]);
	}
	rxe_t_pair_close(&p);
}
END_TEST

void rxe_loopback_add_rc_cases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("rc");
	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_path_mtus, 0, 5);
	tcase_add_loop_test(tc, test_ipv4_id_assumption, 0, 3);
	tcase_add_test(tc, test_busy_poll);
	tcase_add_loop_test(tc, test_poll_rx, 0, 3);
	tcase_add_test(tc, test_poll_rx_consumer_blocks);
	tcase_add_test(tc, test_poll_rx_byte_wait);
	tcase_add_test(tc, test_poll_rx_long_read);
	tcase_add_test(tc, test_poll_rx_not_parked);
	tcase_add_test(tc, test_rc_ipv6);
	tcase_add_test(tc, test_rc_rnr);
	tcase_add_test(tc, test_rc_many_in_flight);
	tcase_add_test(tc, test_rc_coalesced_writes);
	tcase_add_loop_test(tc, test_rc_ack_clocked, 0, 2);
	tcase_add_test(tc, test_srq);
	tcase_add_test(tc, test_rc_sq_drain);
	tcase_add_test(tc, test_rc_resize);
	tcase_add_test(tc, test_per_qp_source_port);
	suite_add_tcase(s, tc);

	/* Again with every payload copied from the receive buffer
	 * (direct=0) ... */
	tc = tcase_create("rc-copy");
	tcase_add_checked_fixture(tc, rxe_t_copy_setup, rxe_t_copy_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	suite_add_tcase(s, tc);

	/* ... and with every datagram peeked at, payloads read straight
	 * into place (direct=2). */
	tc = tcase_create("rc-direct");
	tcase_add_checked_fixture(tc, rxe_t_direct_setup,
				  rxe_t_direct_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_rc_send_sizes, 0, G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_write_read_sizes, 0,
			    G_N_ELEMENTS(sizes));
	tcase_add_loop_test(tc, test_rc_path_mtus, 0, 5);
	tcase_add_test(tc, test_rc_ipv6);
	tcase_add_test(tc, test_srq);
	suite_add_tcase(s, tc);
}
