/* SPDX-License-Identifier: MIT */
/*
 * rxe-faults: loss, duplication and reordering. Each test moves its thread
 * into a network namespace of its own (unshare(CLONE_NEWNET), lo up), so
 * nftables rules there touch nothing else, and drives a mix of SENDs,
 * WRITEs, READs and atomics across lossy paths:
 *  - nftables drops a share of UDP 4791 datagrams on output (numgen);
 *  - the provider's receive fault hooks drop, duplicate and swap packets.
 * Every message must arrive exactly once and in order, every atomic must
 * run exactly once, and the counters must show the retransmissions.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "tests/testutil_ns.h"
#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

#define N_MSGS 120
#define MSG_MAX 9000

static bool have_nft(void)
{
	return system("nft --version >/dev/null 2>&1") == 0;
}

struct msgbuf {
	uint8_t *mem;
	size_t size;
	struct rnicpi_mr *mr;
};

static void mb_alloc(struct rxe_t_dev *t, struct msgbuf *m, size_t size)
{
	m->size = size;
	m->mem = g_malloc0(size);
	ck_assert_ok(t->ops->reg_mr(t->pd, m->mem, size,
				    (uint64_t)(uintptr_t)m->mem,
				    RNICPI_ACCESS_LOCAL_WRITE |
				    RNICPI_ACCESS_REMOTE_WRITE |
				    RNICPI_ACCESS_REMOTE_READ |
				    RNICPI_ACCESS_REMOTE_ATOMIC, &m->mr));
}

static void mb_free(struct rxe_t_dev *t, struct msgbuf *m)
{
	ck_assert_ok(t->ops->dereg_mr(m->mr));
	g_free(m->mem);
}

static uint32_t msg_len(unsigned int i)
{
	return 1 + (i * 2654435761u) % MSG_MAX;
}

static uint8_t msg_byte(unsigned int i, size_t k)
{
	return (uint8_t)(i * 31 + k * 7 + (k >> 9));
}

/* Which of the N_MSGS requests run_traffic sends as what. */
static bool is_atomic(unsigned int i)
{
	return i % 5 == 2;
}

static bool is_read(unsigned int i)
{
	return !is_atomic(i) && i % 7 == 3;
}

static bool is_write(unsigned int i)
{
	return !is_atomic(i) && !is_read(i) && i % 4 == 1;
}

static bool is_send(unsigned int i)
{
	return !is_atomic(i) && !is_read(i) && !is_write(i);
}

static unsigned int n_sends(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < N_MSGS; i++)
		n += is_send(i);
	return n;
}

/*
 * N_MSGS work requests through @t's QPs a -> b: SENDs of varying sizes
 * (every 4th a WRITE of the same bytes to b's window, every 7th a READ of
 * it back, every 5th a FETCH_ADD of 1). Checks exactly-once, in-order
 * delivery and exactly-once atomics.
 */
static void run_traffic(struct rxe_t_dev *t, struct rxe_t_side *a,
			struct rxe_t_side *b)
{
	struct msgbuf src, dst, win, rd, cnt, res;
	unsigned int i, n_recv = 0, n_add = 0;
	struct rnicpi_wc wc;
	uint64_t v;

	mb_alloc(t, &src, (size_t)N_MSGS * MSG_MAX);
	mb_alloc(t, &dst, (size_t)N_MSGS * MSG_MAX);
	mb_alloc(t, &win, (size_t)N_MSGS * MSG_MAX);
	mb_alloc(t, &rd, (size_t)N_MSGS * MSG_MAX);
	mb_alloc(t, &cnt, 8);
	mb_alloc(t, &res, (size_t)N_MSGS * 8);

	for (i = 0; i < N_MSGS; i++) {
		size_t k;

		for (k = 0; k < MSG_MAX; k++)
			src.mem[(size_t)i * MSG_MAX + k] = msg_byte(i, k);
	}
	/* One receive per SEND and no more: a receive left over would
	 * name dst's key, gone after this round, and the next round on
	 * the same QPs would land its first SEND there (a remote
	 * operational error, as it should). */
	for (i = 0; i < n_sends(); i++) {
		struct rnicpi_sge sge = {
			(uint64_t)(uintptr_t)(dst.mem + (size_t)i * MSG_MAX),
			MSG_MAX, dst.mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, i, &sge, 1 };
		const struct rnicpi_recv_wr *rbad;

		ck_assert_ok(t->ops->post_recv(b->qp, &rw, &rbad));
	}
	for (i = 0; i < N_MSGS; i++) {
		uint8_t *s = src.mem + (size_t)i * MSG_MAX;
		struct rnicpi_sge sge = { (uint64_t)(uintptr_t)s, msg_len(i),
					  src.mr->lkey };
		struct rnicpi_send_wr wr;
		const struct rnicpi_send_wr *bad;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.send_flags = RNICPI_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (is_atomic(i)) {
			wr.opcode = RNICPI_WR_ATOMIC_FETCH_AND_ADD;
			sge.addr = (uint64_t)(uintptr_t)(res.mem + i * 8);
			sge.length = 8;
			sge.lkey = res.mr->lkey;
			wr.wr.atomic.remote_addr = (uint64_t)(uintptr_t)cnt.mem;
			wr.wr.atomic.rkey = cnt.mr->rkey;
			wr.wr.atomic.compare_add = 1;
			n_add++;
		} else if (is_read(i)) {
			wr.opcode = RNICPI_WR_RDMA_READ;
			sge.addr = (uint64_t)(uintptr_t)(rd.mem +
							 (size_t)i * MSG_MAX);
			sge.lkey = rd.mr->lkey;
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)s;
			wr.wr.rdma.rkey = src.mr->rkey;
		} else if (is_write(i)) {
			wr.opcode = RNICPI_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)
				(win.mem + (size_t)i * MSG_MAX);
			wr.wr.rdma.rkey = win.mr->rkey;
		} else {
			wr.opcode = RNICPI_WR_SEND;
		}
		ck_assert_ok(t->ops->post_send(a->qp, &wr, &bad));
	}
	/* Send completions in posting order, all successful. */
	for (i = 0; i < N_MSGS; i++) {
		ck_assert_ok(rxe_t_wait_wc(t, a->scq, &wc));
		ck_assert_msg(wc.wr_id == i && wc.status == RNICPI_WC_SUCCESS,
			      "send completion %u: wr_id %" PRIu64 " status %d",
			      i, wc.wr_id, wc.status);
	}
	/* Receives: one per SEND, in order, each with its own bytes. */
	for (i = 0; i < N_MSGS; i++) {
		if (!is_send(i))
			continue;
		ck_assert_ok(rxe_t_wait_wc(t, b->rcq, &wc));
		ck_assert_msg(wc.wr_id == n_recv && wc.status ==
			      RNICPI_WC_SUCCESS, "receive %u: wr_id %" PRIu64
			      " status %d", n_recv, wc.wr_id, wc.status);
		ck_assert_uint_eq(wc.byte_len, msg_len(i));
		ck_assert(memcmp(dst.mem + (size_t)n_recv * MSG_MAX,
				 src.mem + (size_t)i * MSG_MAX,
				 msg_len(i)) == 0);
		n_recv++;
	}
	/* Nothing more: no message was delivered twice. */
	ck_assert_int_eq(t->ops->poll_cq(b->rcq, 1, &wc), 0);
	for (i = 0; i < N_MSGS; i++) {
		if (is_atomic(i)) {
			continue;
		} else if (is_read(i)) {
			size_t k;

			for (k = 0; k < msg_len(i); k++)
				ck_assert_msg(rd.mem[(size_t)i * MSG_MAX + k] ==
					      src.mem[(size_t)i * MSG_MAX + k],
					      "READ %u of %u bytes differs at "
					      "byte %zu", i, msg_len(i), k);
			ck_assert_uint_eq(rd.mem[(size_t)i * MSG_MAX +
						 msg_len(i)], 0);
		} else if (is_write(i)) {
			ck_assert(memcmp(win.mem + (size_t)i * MSG_MAX,
					 src.mem + (size_t)i * MSG_MAX,
					 msg_len(i)) == 0);
			ck_assert_uint_eq(win.mem[(size_t)i * MSG_MAX +
						  msg_len(i)], 0);
		}
	}
	/* Each FETCH_ADD ran once, and each saw a distinct old value. */
	memcpy(&v, cnt.mem, 8);
	ck_assert_uint_eq(v, n_add);
	{
		uint64_t seen = 0;

		for (i = 2; i < N_MSGS; i += 5) {
			memcpy(&v, res.mem + i * 8, 8);
			ck_assert_uint_lt(v, 64);
			ck_assert(!(seen & (1ull << v)));
			seen |= 1ull << v;
		}
	}
	mb_free(t, &src);
	mb_free(t, &dst);
	mb_free(t, &win);
	mb_free(t, &rd);
	mb_free(t, &cnt);
	mb_free(t, &res);
}

static void run_lossy(const struct rnicpi_option *options, bool nft_drop,
		      bool ipv6)
{
	struct rxe_t_conn_opts o = {
		.mtu = RNICPI_MTU_1024, .psn = { 0xffff00, 0x10 },
		.timeout = 14, .retry_cnt = 7, .sgid_index = ipv6 ? 1 : 0,
		.max_send_wr = 256, .max_recv_wr = 256,
	};
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	int ns;

	ns = rxe_t_netns_enter();
	if (ns == -EPERM) {
		fprintf(stderr, "SKIP: no CAP_SYS_ADMIN for a network "
			"namespace\n");
		return;
	}
	ck_assert_int_ge(ns, 0);
	if (nft_drop) {
		/* 4% of the datagrams to port 4791 die on output; the
		 * table lives and dies with this namespace. */
		ck_assert_int_eq(system(
			"nft add table inet hrtest && "
			"nft add chain inet hrtest out '{ type filter hook "
			"output priority 0; }' && "
			"nft add rule inet hrtest out udp dport 4791 numgen "
			"random mod 100 lt 4 counter drop"), 0);
	}
	ck_assert_ok(rxe_t_dev_open(&t, options));
	ck_assert_ok(rxe_t_side_create(&t, &a, RNICPI_QPT_RC, &o));
	ck_assert_ok(rxe_t_side_create(&t, &b, RNICPI_QPT_RC, &o));
	ck_assert_ok(rxe_t_connect(&t, &a, &b, &o));

	/* Two rounds at least: the QPs come out of a lossy round fit for
	 * the next. nft's 4 % applies to what leaves the socket: a UDP GSO
	 * batch of many packets counts once, and a lost ACK needs no
	 * retransmission, so a round may lose nothing that matters (seen
	 * once in 30 CI runs). More rounds, every one verified, until
	 * something was sent again. */
	run_traffic(&t, &a, &b);
	for (int round = 1; round < 2 || (nft_drop && round < 20 &&
			    !rxe_dev_counter(t.dev, RXE_CNT_RETRANSMITS));
	     round++)
		run_traffic(&t, &a, &b);

	/* The losses were real and were repaired by retransmission. */
	ck_assert_uint_gt(rxe_dev_counter(t.dev, RXE_CNT_RETRANSMITS), 0);
	if (nft_drop)
		ck_assert_int_eq(system("nft list table inet hrtest | "
					"grep -q 'counter packets [1-9]'"), 0);
	fprintf(stderr, "rxe-faults: retransmitted %" PRIu64 " packets, %"
		PRIu64 " timeouts, %" PRIu64 " sequence NAKs sent, %" PRIu64
		" duplicates seen, %" PRIu64 " hook drops / %" PRIu64
		" dups / %" PRIu64 " swaps\n",
		rxe_dev_counter(t.dev, RXE_CNT_RETRANSMITS),
		rxe_dev_counter(t.dev, RXE_CNT_TIMEOUTS),
		rxe_dev_counter(t.dev, RXE_CNT_SEQ_NAKS_SENT),
		rxe_dev_counter(t.dev, RXE_CNT_DUP_REQ),
		rxe_dev_counter(t.dev, RXE_CNT_FAULT_DROPS),
		rxe_dev_counter(t.dev, RXE_CNT_FAULT_DUPS),
		rxe_dev_counter(t.dev, RXE_CNT_FAULT_REORDERS));
	if (options) {
		ck_assert_uint_gt(rxe_dev_counter(t.dev, RXE_CNT_DUP_REQ), 0);
		ck_assert_uint_gt(rxe_dev_counter(t.dev,
						  RXE_CNT_SEQ_NAKS_SENT), 0);
	}
	rxe_t_side_destroy(&t, &a);
	rxe_t_side_destroy(&t, &b);
	rxe_t_dev_close(&t);
	rxe_t_netns_leave(ns);
}

START_TEST(test_nft_drop)
{
	if (!have_nft()) {
		fprintf(stderr, "SKIP: nft not installed (apt-get install "
			"nftables); the provider hooks still run below\n");
		return;
	}
	run_lossy(NULL, true, false);
}
END_TEST

START_TEST(test_nft_drop_ipv6)
{
	if (!have_nft()) {
		fprintf(stderr, "SKIP: nft not installed\n");
		return;
	}
	run_lossy(NULL, true, true);
}
END_TEST

START_TEST(test_hook_drop_dup_reorder)
{
	static const struct rnicpi_option opts[] = {
		{ "fault_drop_ppm", "30000" },
		{ "fault_dup_ppm", "50000" },
		{ "fault_reorder_ppm", "50000" },
		{ "fault_seed", "12345" },
		{ NULL, NULL },
	};

	run_lossy(opts, false, false);
}
END_TEST

/* A device option the provider does not take is refused, and said aloud
 * with the option and the value (the user sees only that the device was
 * not made otherwise). */
START_TEST(test_bad_option_said)
{
	static const struct rnicpi_option bad_value[] = {
		{ "poll_rx", "2" }, { NULL, NULL } };
	static const struct rnicpi_option unknown[] = {
		{ "poll_tx", "1" }, { NULL, NULL } };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-rxe");
	struct rxe_t_dev t;

	ck_assert_int_eq(rxe_t_dev_open(&t, bad_value), -EINVAL);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "rxe_lo: option poll_rx: bad value \"2\" (expected 0..1)"),
			  1);
	ck_assert_int_eq(rxe_t_dev_open(&t, unknown), -EINVAL);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "rxe_lo: unknown option \"poll_tx\""),
			  1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A GID that goes while its receive socket is being read             */
/* ------------------------------------------------------------------ */

#define GONE_MAX_VICTIMS 64

/* What the hook saw and did, on whichever thread read the sockets. */
static struct {
	struct rxe_t_dev *t;
	atomic_int fired;
	int loaded_fd;
	int victims[GONE_MAX_VICTIMS];
	int n_victims;
	bool took_number;	/* a victim got the number being read */
	int err;		/* errno of a failed socket call, 0 */
} gone;

static int count_fds(void)
{
	g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (g_dir_read_name(d))
		n++;
	return n;
}

/* A UDP socket on 127.0.0.1 that sent itself "victim <i>": queued. */
static int victim_open(int i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	char msg[32];
	int v = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (v < 0)
		return -errno;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(msg, sizeof(msg), "victim %d", i);
	if (bind(v, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(v, (struct sockaddr *)&sin, &len) < 0 ||
	    sendto(v, msg, strlen(msg), 0, (struct sockaddr *)&sin,
		   sizeof(sin)) != (ssize_t)strlen(msg)) {
		int err = -errno;

		close(v);
		return err;
	}
	return v;
}

/*
 * Runs after a reader (holding the receive side) loaded GID 1's socket,
 * before it reads it: the interface loses ::1 right then, and the process
 * opens sockets of its own, each holding a datagram, until one gets the
 * number being read (the lowest free one, were it closed).
 */
static void gone_hook(struct rxe_dev *dev, int gid_index, int fd)
{
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	int i;

	(void)dev;
	if (gid_index != 1 || atomic_exchange(&gone.fired, 1))
		return;
	gone.loaded_fd = fd;
	rxe_t_lo_netdev(&nd, addrs);
	nd.n_addrs = 1;
	gone.t->ops->netdev_event(gone.t->dev, &nd, RNICPI_NETDEV_ADDR_DEL);
	for (i = 0; i < GONE_MAX_VICTIMS; i++) {
		int v = victim_open(i);

		if (v < 0) {
			gone.err = -v;
			break;
		}
		gone.victims[gone.n_victims++] = v;
		if (v == fd) {
			gone.took_number = true;
			break;
		}
	}
}

/* One SEND of @size bytes from a to b, every byte compared. */
static void gone_send(struct rxe_t_pair *p, size_t size, uint32_t seed)
{
	struct rxe_t_buf src, dst;
	struct rnicpi_send_wr wr = { .wr_id = seed, .opcode = RNICPI_WR_SEND };
	struct rnicpi_wc wc;

	rxe_t_buf_alloc(&p->t, &src, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_buf_pattern(&src, seed);
	rxe_t_buf_alloc(&p->t, &dst, size, 0, RXE_T_ALL_ACCESS);
	rxe_t_post_recv(p, &p->b, &dst, seed + 1);
	rxe_t_post(&p->t, &p->a, &wr, &src);
	rxe_t_expect_wc(&p->t, p->a.scq, seed, RNICPI_WC_SUCCESS, NULL);
	rxe_t_expect_wc(&p->t, p->b.rcq, seed + 1, RNICPI_WC_SUCCESS, &wc);
	ck_assert_uint_eq(wc.byte_len, size);
	ck_assert_mem_eq(dst.mem + RXE_T_GUARD, src.mem + RXE_T_GUARD, size);
	rxe_t_assert_guards(&dst);
	rxe_t_buf_free(&p->t, &src);
	rxe_t_buf_free(&p->t, &dst);
}

/*
 * The interface loses an address while a reader holds that GID's socket
 * number, between loading it and reading it (a test hook widens that
 * window). A number closed then is the next socket's the process opens,
 * and the late read took that socket's datagram. Now no other socket gets
 * the number while it can be read, every other socket keeps its data, the
 * address can come back at once (its port is free), no descriptor is left
 * behind, and RC traffic on both GIDs still lands byte for byte. _i 0:
 * the progress thread reads (a datagram to [::1]:4791 wakes it); _i 1:
 * an application polling an empty CQ does (poll_rx).
 */
START_TEST(test_gid_gone_while_read)
{
	/* A long lease: the sockets stay parked while the test polls. */
	static const struct rnicpi_option poll_rx[] = {
		{ "poll_rx", "1" }, { "poll_rx_lease_us", "1000000" },
		{ NULL, NULL } };
	static const struct rnicpi_option no_poll_rx[] = {
		{ "poll_rx", "0" }, { NULL, NULL } };
	struct rxe_t_conn_opts o = { .sgid_index = 0 };
	struct sockaddr_storage addrs[2];
	struct rnicpi_gid_entry ge;
	struct rnicpi_netdev nd;
	struct rxe_t_pair p;
	struct rxe_dev *dev;
	int i, base_fds, n;

	memset(&gone, 0, sizeof(gone));
	rxe_t_pair_open_opts(&p, &o, _i ? poll_rx : no_poll_rx);
	dev = to_rxe_dev(p.t.dev);
	gone_send(&p, 65536, 1);
	base_fds = count_fds();
	gone.t = &p.t;
	if (_i == 1)
		rxe_t_park_for_poller(&p);
	dev->test_rx_loaded = gone_hook;
	if (_i == 0) {
		struct sockaddr_in6 six = { .sin6_family = AF_INET6,
			.sin6_port = htons(ROCE_V2_UDP_PORT),
			.sin6_addr = IN6ADDR_LOOPBACK_INIT };
		int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		ck_assert_int_ge(s, 0);
		ck_assert_int_eq(sendto(s, "wake", 4, 0,
					(struct sockaddr *)&six, sizeof(six)),
				 4);
		close(s);
	} else {
		struct rnicpi_wc wc;

		/* The progress thread may hold the receive side now and
		 * then: the poll only tries it. */
		for (i = 0; i < 100000 && !atomic_load(&gone.fired); i++)
			ck_assert_int_eq(p.t.ops->poll_cq(p.a.rcq, 1, &wc), 0);
	}
	for (i = 0; i < 5000 && !atomic_load(&gone.fired); i++)
		g_usleep(1000);
	ck_assert_msg(atomic_load(&gone.fired), "GID 1's socket never read");
	/* Whoever read it is done once the receive side is free. */
	pthread_mutex_lock(&dev->rx_lock);
	dev->test_rx_loaded = NULL;
	pthread_mutex_unlock(&dev->rx_lock);

	ck_assert_msg(gone.err == 0, "victim socket: %s",
		      g_strerror(gone.err));
	for (i = 0; i < gone.n_victims; i++) {
		char buf[64], want[32];
		ssize_t got = recv(gone.victims[i], buf, sizeof(buf) - 1,
				   MSG_DONTWAIT);

		snprintf(want, sizeof(want), "victim %d", i);
		ck_assert_msg(got == (ssize_t)strlen(want) &&
			      memcmp(buf, want, strlen(want)) == 0,
			      "socket %d lost its datagram (%zd)",
			      gone.victims[i], got);
		close(gone.victims[i]);
	}
	ck_assert_msg(!gone.took_number, "descriptor %d, still being read, "
		      "was closed and given to another socket",
		      gone.loaded_fd);
	ck_assert_errno(p.t.ops->query_gid(p.t.dev, 1, 1, &ge), ENOENT);

	/* ::1 comes back: its port binds again at once. */
	rxe_t_lo_netdev(&nd, addrs);
	p.t.ops->netdev_event(p.t.dev, &nd, RNICPI_NETDEV_ADDR_ADD);
	ck_assert_ok(p.t.ops->query_gid(p.t.dev, 1, 1, &ge));
	/* The retired number is closed soon after (the progress thread's
	 * next pass): the same descriptors as before. */
	for (i = 0, n = count_fds(); i < 5000 && n != base_fds; i++) {
		g_usleep(1000);
		n = count_fds();
	}
	ck_assert_int_eq(n, base_fds);

	gone_send(&p, 65536, 3);
	o.sgid_index = 1;
	rxe_t_pair_renew(&p, &o);
	gone_send(&p, 65536, 5);
	rxe_t_pair_close(&p);
}
END_TEST

/* The address ::1 goes and comes back over and over, while the GID's
 * socket is being woken and read, and sockets of the process's own come
 * and go: what each of those sent itself must stay its own. */
struct churn {
	struct rxe_t_dev *t;
	atomic_bool stop;
	atomic_uint cycles;
	unsigned int lost, errs;
};

static gpointer churn_thread(gpointer data)
{
	struct churn *c = data;
	struct sockaddr_in6 six = { .sin6_family = AF_INET6,
		.sin6_port = htons(ROCE_V2_UDP_PORT),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	int wake = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned int i;

	if (wake < 0)
		c->errs++;
	for (i = 0; !atomic_load(&c->stop) && wake >= 0; i++) {
		struct pollfd pfd;
		char buf[64], want[32];
		ssize_t n;
		int v;

		/* Something for the GID's socket to read, then it goes. */
		(void)sendto(wake, "wake", 4, 0, (struct sockaddr *)&six,
			     sizeof(six));
		rxe_t_lo_netdev(&nd, addrs);
		nd.n_addrs = 1;
		c->t->ops->netdev_event(c->t->dev, &nd,
					RNICPI_NETDEV_ADDR_DEL);
		v = victim_open((int)i);
		if (v < 0) {
			c->errs++;
		} else {
			pfd = (struct pollfd){ .fd = v, .events = POLLIN };
			(void)poll(&pfd, 1, 200);
			n = recv(v, buf, sizeof(buf), MSG_DONTWAIT);
			snprintf(want, sizeof(want), "victim %u", i);
			if (n != (ssize_t)strlen(want) ||
			    memcmp(buf, want, strlen(want)) != 0)
				c->lost++;
			close(v);
		}
		rxe_t_lo_netdev(&nd, addrs);
		c->t->ops->netdev_event(c->t->dev, &nd,
					RNICPI_NETDEV_ADDR_ADD);
		atomic_fetch_add(&c->cycles, 1);
	}
	if (wake >= 0)
		close(wake);
	return NULL;
}

/*
 * RC traffic on GID 0 while GID 1 churns (above): every SEND lands byte
 * for byte, no socket of the process loses a datagram, and once it
 * stops, ::1 is there again, its traffic lands, and the process holds the
 * descriptors it held before. _i 0: the progress thread reads; _i 1:
 * poll_rx, the waits for completions read the sockets too.
 */
START_TEST(test_gid_churn)
{
	/* A long lease: the sockets stay parked while the test polls. */
	static const struct rnicpi_option poll_rx[] = {
		{ "poll_rx", "1" }, { "poll_rx_lease_us", "1000000" },
		{ NULL, NULL } };
	static const struct rnicpi_option no_poll_rx[] = {
		{ "poll_rx", "0" }, { NULL, NULL } };
	struct rxe_t_conn_opts o = { .sgid_index = 0 };
	struct rnicpi_gid_entry ge;
	struct churn c = { 0 };
	struct rxe_t_pair p;
	GThread *th;
	int base_fds, n, i;
	uint32_t k;

	rxe_t_pair_open_opts(&p, &o, _i ? poll_rx : no_poll_rx);
	gone_send(&p, 4096, 1);	/* the QPs' transmit sockets are made */
	base_fds = count_fds();
	c.t = &p.t;
	th = g_thread_new("churn", churn_thread, &c);
	for (k = 0; k < 300 || atomic_load(&c.cycles) < 200; k++)
		gone_send(&p, 4096 + (k % 5) * 3000, 2 * k + 100);
	atomic_store(&c.stop, true);
	g_thread_join(th);
	ck_assert_uint_eq(c.errs, 0);
	ck_assert_msg(c.lost == 0, "%u of %u sockets lost their datagram",
		      c.lost, atomic_load(&c.cycles));
	ck_assert_ok(p.t.ops->query_gid(p.t.dev, 1, 1, &ge));
	for (i = 0, n = count_fds(); i < 5000 && n != base_fds; i++) {
		g_usleep(1000);
		n = count_fds();
	}
	ck_assert_int_eq(n, base_fds);
	o.sgid_index = 1;
	rxe_t_pair_renew(&p, &o);
	gone_send(&p, 65536, 7);
	rxe_t_pair_close(&p);
}
END_TEST

/*
 * The address a connected QP pair uses leaves the interface (really: in a
 * namespace of the test's own). Neither side can reach the other any
 * more: the receive socket of that GID is gone and the transmit sockets'
 * source address is no longer the host's. As IBA says of a peer that does
 * not answer (9.7.5.1), each side's SEND is retried retry_cnt times, then
 * completes with the retry-exceeded error; the device carries on, and RC
 * traffic on its other GID lands byte for byte.
 */
START_TEST(test_gid_gone_under_qp)
{
	struct rxe_t_conn_opts o = { .sgid_index = 2, .timeout = 10,
				     .retry_cnt = 2 };
	struct sockaddr_storage addrs[3];
	struct sockaddr_in *extra = (struct sockaddr_in *)&addrs[2];
	struct rnicpi_gid_entry ge;
	struct rnicpi_netdev nd;
	union rnicpi_gid gid;
	struct nl_sock *sk;
	struct rxe_t_buf src, dst[2];
	struct rxe_t_pair p;
	struct rnicpi_wc wc;
	int ns, lo, k;

	ns = rxe_t_netns_enter();
	if (ns < 0) {
		fprintf(stderr, "SKIP: no network namespace of our own (%s)\n",
			g_strerror(-ns));
		return;
	}
	lo = (int)if_nametoindex("lo");
	sk = nl_socket_alloc();
	ck_assert_ptr_nonnull(sk);
	ck_assert_int_eq(nl_connect(sk, NETLINK_ROUTE), 0);
	ck_assert_int_eq(tu_ns_addr_add(sk, lo, "10.77.0.1/32"), 0);

	memset(&p, 0, sizeof(p));
	ck_assert_ok(rxe_t_dev_open(&p.t, NULL));
	rxe_t_lo_netdev(&nd, addrs);
	memset(extra, 0, sizeof(*extra));
	extra->sin_family = AF_INET;
	inet_pton(AF_INET, "10.77.0.1", &extra->sin_addr);
	nd.n_addrs = 3;
	p.t.ops->netdev_event(p.t.dev, &nd, RNICPI_NETDEV_ADDR_ADD);
	rxe_t_gid_v4(&gid, "10.77.0.1");
	ck_assert_ok(p.t.ops->query_gid(p.t.dev, 1, 2, &ge));
	ck_assert_mem_eq(ge.gid.raw, gid.raw, 16);
	ck_assert_ok(rxe_t_side_create(&p.t, &p.a, RNICPI_QPT_RC, &o));
	ck_assert_ok(rxe_t_side_create(&p.t, &p.b, RNICPI_QPT_RC, &o));
	ck_assert_ok(rxe_t_connect_one(&p.t, &p.a, &gid, p.b.qp->qp_num,
				       100, 200, &o));
	ck_assert_ok(rxe_t_connect_one(&p.t, &p.b, &gid, p.a.qp->qp_num,
				       200, 100, &o));
	gone_send(&p, 8192, 11);

	ck_assert_int_eq(tu_ns_addr_del(sk, lo, "10.77.0.1/32"), 0);
	nd.n_addrs = 2;
	p.t.ops->netdev_event(p.t.dev, &nd, RNICPI_NETDEV_ADDR_DEL);
	ck_assert_errno(p.t.ops->query_gid(p.t.dev, 1, 2, &ge), ENOENT);

	/* A SEND each way, a receive waiting for each. */
	rxe_t_buf_alloc(&p.t, &src, 4096, 0x5a, RXE_T_ALL_ACCESS);
	for (k = 0; k < 2; k++) {
		struct rxe_t_side *from = k ? &p.b : &p.a;
		struct rxe_t_side *to = k ? &p.a : &p.b;
		struct rnicpi_send_wr wr = { .wr_id = 20 + k,
					     .opcode = RNICPI_WR_SEND };

		rxe_t_buf_alloc(&p.t, &dst[k], 4096, 0, RXE_T_ALL_ACCESS);
		rxe_t_post_recv(&p, to, &dst[k], 30 + k);
		rxe_t_post(&p.t, from, &wr, &src);
	}
	for (k = 0; k < 2; k++) {
		struct rxe_t_side *from = k ? &p.b : &p.a;

		ck_assert_ok(rxe_t_wait_wc(&p.t, from->scq, &wc));
		ck_assert_uint_eq(wc.wr_id, 20 + k);
		ck_assert_int_eq(wc.status, RNICPI_WC_RETRY_EXC_ERR);
	}
	/* Nothing landed. */
	for (k = 0; k < 2; k++) {
		uint8_t zero[4096] = { 0 };

		ck_assert_mem_eq(dst[k].mem + RXE_T_GUARD, zero, 4096);
		rxe_t_buf_free(&p.t, &dst[k]);
	}
	rxe_t_buf_free(&p.t, &src);

	o.sgid_index = 0;
	o.timeout = 0;
	o.retry_cnt = 0;
	rxe_t_pair_renew(&p, &o);
	gone_send(&p, 65536, 13);
	rxe_t_pair_close(&p);
	nl_socket_free(sk);
	rxe_t_netns_leave(ns);
}
END_TEST

Suite *suite_rxe_faults(void)
{
	Suite *s = suite_create("rxe-faults");
	TCase *tc = tcase_create("lossy");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_nft_drop);
	tcase_add_test(tc, test_nft_drop_ipv6);
	tcase_add_test(tc, test_hook_drop_dup_reorder);
	tcase_add_test(tc, test_bad_option_said);
	suite_add_tcase(s, tc);

	tc = tcase_create("gid");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_add_loop_test(tc, test_gid_gone_while_read, 0, 2);
	tcase_add_loop_test(tc, test_gid_churn, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("gid_qp");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_gid_gone_under_qp);
	suite_add_tcase(s, tc);
	return s;
}
