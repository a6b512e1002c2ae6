/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE network layer: UDP sockets (one bound to port 4791 per device
 * address for receiving; the sending ones, one per QP and IP family from
 * a port of its own, are rxe_tx.c's), recvmmsg batching and UDP GRO, and
 * the device's progress thread (epoll) with the QP timers. An application
 * thread that polls reads the receive sockets too (rxe_poll_rx.c).
 *
 * IPv4 Identification: the ICRC covers it (A17.3.3), so a sender must know
 * the ID its kernel writes. An unconnected UDP socket with DF set
 * (IP_PMTUDISC_DO) gets ID 0 from Linux; every transmit socket here is
 * unconnected and uses sendmsg with a destination. On receive the peer's ID
 * is unknown (the kernel's rxe uses a hashed, varying one); rxe_recv.c
 * solves for it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "vp/rxe/rxe.h"
#include "vp/rxe/rxe_net.h"

#define RXE_SOCKBUF (8u << 20)
#define RXE_FWD_MAX 65536	/* a forwarded QP1 datagram, at most */

static bool rx_dispatch(struct rnicpi_source *src, uint32_t events);

void rxe_net_set_bufsize(int fd, int opt_force, int opt)
{
	int size = RXE_SOCKBUF;

	/* Root may go past net.core.[rw]mem_max; everyone else gets what
	 * the limit allows. A deep receive queue keeps bursts from a peer
	 * (or our own QPs on loopback) from being dropped. */
	if (setsockopt(fd, SOL_SOCKET, opt_force, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

/* ------------------------------------------------------------------ */
/* Receive sockets, one per GID                                       */
/* ------------------------------------------------------------------ */

/*
 * Retiring a receive descriptor. A reader of the receive sockets (whoever
 * holds rx_lock: the progress thread, or an application polling a CQ with
 * poll_rx) loads a GID's descriptor number under dev->lock, then reads it
 * without. A GID goes under dev->lock alone (the interface lost the
 * address, rxe_main.c's gid_sync): had it closed the number then, the
 * next socket opened anywhere in the process (another GID's, a siw
 * connection's, the host service's) could get it, and the reader would
 * take that socket's data. So a number is closed only by a holder of
 * rx_lock. When someone else holds it, the number is pointed at
 * rx_null_fd instead (dup3, atomic): the GID's socket is released at once
 * (its address and port can be bound again; a read already inside it
 * finishes on it), a late reader finds an empty socket, and the progress
 * thread closes the number after its pass (rx_reap).
 */
static void rx_fd_retire(struct rxe_dev *dev, int fd)
{
	if (pthread_mutex_trylock(&dev->rx_lock) == 0) {
		close(fd);
		pthread_mutex_unlock(&dev->rx_lock);
		return;
	}
	/* Should dup3 fail, the socket itself waits for rx_reap. */
	if (dup3(dev->rx_null_fd, fd, O_CLOEXEC) < 0)
		rxe_dev_dbg(dev, "retiring descriptor %d: dup3: %s", fd,
			    g_strerror(errno));
	g_array_append_val(dev->rx_graves, fd);
	atomic_store(&dev->rx_graves_due, true);
	if (dev->engine_up)
		rnicpi_engine_wake(&dev->engine);
}

/* rx_lock held: close the retired numbers; no reader can hold one. */
static void rx_reap(struct rxe_dev *dev)
{
	guint i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < dev->rx_graves->len; i++)
		close(g_array_index(dev->rx_graves, int, i));
	g_array_set_size(dev->rx_graves, 0);
	atomic_store(&dev->rx_graves_due, false);
	pthread_mutex_unlock(&dev->lock);
}

/* A forwarded QP1 datagram (struct rnicpi_host_fwd, then the payload)
 * from the host service: received like one from the wire. The descriptor
 * is read under rx_lock, as the GID's receive socket is (rx_fd_retire). */
static bool fwd_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct rxe_gid *g = container_of(src, struct rxe_gid, fwd_src);
	struct rxe_dev *dev = g->dev;
	struct rnicpi_host_fwd h;
	g_autofree uint8_t *p = g_malloc(RXE_FWD_MAX);
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = p, .iov_len = RXE_FWD_MAX },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;
	int k, fd;

	(void)events;
	pthread_mutex_lock(&dev->rx_lock);
	pthread_mutex_lock(&dev->lock);
	fd = g->fwd_fd;
	pthread_mutex_unlock(&dev->lock);
	for (k = 0; k < 64 && fd >= 0; k++) {
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n < 0)
			break;
		if (n == 0) {
			/* The daemon and its keeper went away (a daemon
			 * alone restarting keeps this socket open): QP1
			 * hears nothing more, and the group's sockets are
			 * renumbered without the daemon's (hostrdma-kald(8),
			 * RESTART). */
			rxe_dev_warn_once(dev, "the host service "
					  "(hostrdma-kald) and its keeper went "
					  "away: no new connection reaches this "
					  "process and its traffic may be "
					  "misrouted; restart it");
			pthread_mutex_lock(&dev->lock);
			if (g->fwd_fd == fd) {
				rnicpi_engine_del(&dev->engine, fd);
				close(fd);
				g->fwd_fd = -1;
			}
			pthread_mutex_unlock(&dev->lock);
			break;
		}
		if ((size_t)n < sizeof(h) || h.magic != RNICPI_HOST_FWD_MAGIC ||
		    h.len != (size_t)n - sizeof(h) ||
		    (h.src.ss_family != AF_INET && h.src.ss_family != AF_INET6))
			continue;
		rxe_rcv_datagram(dev, p, h.len, 0, &h.src,
				 (int)(g - dev->gids), 0);
	}
	pthread_mutex_unlock(&dev->rx_lock);
	return true;
}

/* The host service's socket for GID @index: 0, -ENOENT when there is
 * none (bind the port ourselves), another errno when it refused. */
static int host_open(struct rxe_dev *dev, int index, const char *name)
{
	const struct rnicpi_core_ops *core = dev->base.core;
	struct rxe_gid *g = &dev->gids[index];
	socklen_t len = g->addr.ss_family == AF_INET
		? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	uint32_t base = 0, count = 0;
	int fd = -1, ffd = -1, one = 1, err;

	if (!core || core->size < offsetof(struct rnicpi_core_ops,
					   host_udp_socket) +
				  sizeof(core->host_udp_socket) ||
	    !core->host_udp_socket)
		return -ENOENT;
	err = core->host_udp_socket(&dev->base, (struct sockaddr *)&g->addr,
				    len, &fd, &ffd, &base, &count);
	if (err) {
		if (err != -ENOENT)
			rxe_dev_warn(dev, "GID %d %s: the host service "
				     "refused: %s", index, name,
				     g_strerror(-err));
		if (err == -EADDRINUSE)
			dev->host_busy = true;
		return err;
	}
	if (count == 0 || base == 0 || base > IB_QPN_MASK ||
	    count > IB_QPN_MASK + 1 - base ||
	    (dev->qpn_count && (dev->qpn_base != base ||
				dev->qpn_count != count))) {
		rxe_dev_warn(dev, "GID %d %s: the host service gave QPNs "
			     "0x%x+%u, unusable here", index, name, base,
			     count);
		close(fd);
		close(ffd);
		return -EADDRNOTAVAIL;
	}
	rxe_net_set_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
	if (atomic_load(&dev->gro))
		(void)setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	g->dev = dev;
	g->src.dispatch = rx_dispatch;
	g->fwd_src.dispatch = fwd_dispatch;
	err = rnicpi_engine_add(&dev->engine, fd, &g->src, EPOLLIN);
	if (!err) {
		err = rnicpi_engine_add(&dev->engine, ffd, &g->fwd_src,
					EPOLLIN);
		if (err)
			rnicpi_engine_del(&dev->engine, fd);
	}
	if (err) {
		close(fd);
		close(ffd);
		return err;
	}
	dev->qpn_base = base;
	dev->qpn_count = count;
	g->rx_fd = fd;
	g->fwd_fd = ffd;
	g->hosted = true;
	rxe_dev_dbg(dev, "GID %d: %s, UDP port %u shared through the host "
		    "service, QPNs 0x%06x..0x%06x", index, name,
		    ROCE_V2_UDP_PORT, base, base + count - 1);
	return 0;
}

int rxe_gid_open(struct rxe_dev *dev, int index)
{
	struct rxe_gid *g = &dev->gids[index];
	int family = g->addr.ss_family;
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in)
					  : sizeof(struct sockaddr_in6);
	char buf[INET6_ADDRSTRLEN] = "?";
	int fd, one = 1, err;

	inet_ntop(family, family == AF_INET
		  ? (void *)&((struct sockaddr_in *)&g->addr)->sin_addr
		  : (void *)&((struct sockaddr_in6 *)&g->addr)->sin6_addr,
		  buf, sizeof(buf));
	err = host_open(dev, index, buf);
	if (err != -ENOENT)
		return err;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		rxe_dev_warn(dev, "GID %d %s: socket: %s", index, buf,
			     g_strerror(errno));
		return err;
	}
	if (family == AF_INET6) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
		/* Linux rxe sends RoCEv2 over IPv6 with a zero UDP checksum
		 * (the ICRC protects the packet, annex A17); the stack drops
		 * such datagrams unless told not to. */
		(void)setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, &one,
				 sizeof(one));
	}
	rxe_net_set_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
	/* Runs of same-size packets may arrive coalesced (UDP GRO), one
	 * receive for many; rx_one() cuts them apart. Kernels without it
	 * just say no. */
	if (atomic_load(&dev->gro))
		(void)setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&g->addr, len) < 0) {
		err = -errno;
		/* EADDRINUSE is said once, by rxe_device_open. */
		rxe_dev_dbg(dev, "GID %d: bind %s port %u: %s", index, buf,
			    ROCE_V2_UDP_PORT, g_strerror(errno));
		close(fd);
		return err;
	}
	g->dev = dev;
	g->src.dispatch = rx_dispatch;
	err = rnicpi_engine_add(&dev->engine, fd, &g->src, EPOLLIN);
	if (err) {
		close(fd);
		return err;
	}
	g->rx_fd = fd;
	rxe_dev_dbg(dev, "GID %d: %s, UDP port %u", index, buf,
		    ROCE_V2_UDP_PORT);
	return 0;
}

/* Under dev->lock (or with the progress thread stopped). */
void rxe_gid_close(struct rxe_dev *dev, int index)
{
	struct rxe_gid *g = &dev->gids[index];

	if (g->rx_fd < 0)
		return;
	rnicpi_engine_del(&dev->engine, g->rx_fd);
	rx_fd_retire(dev, g->rx_fd);
	g->rx_fd = -1;
	if (g->hosted && g->fwd_fd >= 0) {
		rnicpi_engine_del(&dev->engine, g->fwd_fd);
		rx_fd_retire(dev, g->fwd_fd);
	}
	g->hosted = false;
	g->fwd_fd = -1;
}

/* ------------------------------------------------------------------ */
/* Timers, scheduling                                                 */
/* ------------------------------------------------------------------ */

static void on_timer(void *arg);

void rxe_timer_init(struct rxe_qp *qp)
{
	rnicpi_timer_init(&qp->timer, on_timer, qp);
}

void rxe_timer_fini(struct rxe_qp *qp)
{
	rnicpi_timer_cancel_sync(&qp->dev->engine, &qp->timer);
}

/*
 * The QP's one timer (retransmit or RNR wait) is pushed back on every
 * ACK. qp->timer_due_ns is the deadline; the engine timer only has to
 * fire no later than it: on_timer arms it again when it fired early, and
 * a disarmed QP (due 0) lets a pending engine timer fire for nothing.
 * Moving the engine timer on every packet reprogrammed the timerfd each
 * time, 15 % of a soft-RoCE READ stream's CPU (perf, read_bw 1 MiB).
 */
void rxe_timer_set(struct rxe_qp *qp, uint64_t usec)
{
	if (!usec) {
		qp->timer_due_ns = 0;
		return;
	}
	qp->timer_due_ns = rnicpi_now_ns() + usec * 1000u;
	rnicpi_timer_arm_by(&qp->dev->engine, &qp->timer, usec * 1000u);
}

void rxe_dev_wake(struct rxe_dev *dev)
{
	rnicpi_engine_wake(&dev->engine);
}

void rxe_schedule(struct rxe_qp *qp)
{
	struct rxe_dev *dev = qp->dev;

	if (qp->resp.queued)
		return;
	qp->resp.queued = true;
	pthread_mutex_lock(&dev->lock);
	g_queue_push_tail(&dev->pending, GUINT_TO_POINTER(qp->base.qp_num));
	pthread_mutex_unlock(&dev->lock);
	rxe_dev_wake(dev);
}

void rxe_queue_ack(struct rxe_qp *qp)
{
	struct rxe_dev *dev = qp->dev;

	if (qp->resp.ack_queued)
		return;
	qp->resp.ack_queued = true;
	pthread_mutex_lock(&dev->lock);
	g_queue_push_tail(&dev->acks, GUINT_TO_POINTER(qp->base.qp_num));
	pthread_mutex_unlock(&dev->lock);
}

/* ------------------------------------------------------------------ */
/* Progress thread                                                    */
/* ------------------------------------------------------------------ */

/* With UDP GRO a receive slot holds up to 64 KiB of same-size packets. */
#define RXE_RX_SLOT 65536

struct rx_batch {
	struct mmsghdr msgs[RXE_RX_BATCH];
	struct iovec iov[RXE_RX_BATCH];
	struct sockaddr_storage src[RXE_RX_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm[RXE_RX_BATCH];
	uint8_t *buf;
};

/* xorshift32: the fault hook's dice; not for anything that matters. */
static uint32_t fault_rand(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

void rxe_rcv_datagram(struct rxe_dev *dev, uint8_t *buf, uint32_t len,
		      uint32_t seg, const struct sockaddr_storage *src,
		      int gid_index, uint16_t first)
{
	uint16_t k = first;

	if (!seg || seg >= len) {
		rxe_count(dev, RXE_CNT_RCVD_PKTS);
		rxe_rcv(dev, buf, len, src, gid_index, first);
		return;
	}
	/* Every segment but the last has the reported size. Segment k of
	 * a run we sent with GSO carries IPv4 ID k: the receiver's first
	 * guess. A run that continues one placed directly was counted
	 * there. */
	if (!first)
		rxe_count(dev, RXE_CNT_GRO_BATCHES);
	while (len > 0) {
		uint32_t n = len < seg ? len : seg;

		rxe_count(dev, RXE_CNT_RCVD_PKTS);
		rxe_rcv(dev, buf, n, src, gid_index, k++);
		buf += n;
		len -= n;
	}
}

static void rx_one(struct rxe_dev *dev, struct rx_batch *b, int i,
		   int gid_index)
{
	uint32_t seg = rxe_gro_seg(&b->msgs[i].msg_hdr);
	uint32_t len = b->msgs[i].msg_len;
	const uint8_t *p = b->buf + (size_t)i * RXE_RX_SLOT;
	const struct ib_opcode_info *op = len ? ib_opcode(p[0]) : NULL;

	/* Bulk data of a WRITE or a READ (a run of MIDDLEs, or a packet
	 * carrying at least RXE_PEEK_MIN_PAYLOAD bytes): peek at what
	 * comes next, it may go straight into place (option direct=1).
	 * A SEND's runs are not placed (rxe_resp_place_run()). */
	if (op && (op->flags & (IB_F_WRITE | IB_F_RESP)) &&
	    (seg && seg < len ? (op->flags & IB_F_MIDDLE) != 0
			      : len >= op->hdr_len + RXE_PEEK_MIN_PAYLOAD))
		dev->rx_peek = RXE_PEEK_CREDIT;
	rxe_rcv_datagram(dev, b->buf + (size_t)i * RXE_RX_SLOT, len, seg,
			 &b->src[i], gid_index, 0);
}

/* One recvmmsg() batch into the receive buffer, each payload copied to its
 * target once its packet passed every check. How many datagrams came. */
static int rx_batch(struct rxe_dev *dev, int fd, int gid_index,
		    struct rx_batch *b, uint32_t *seed)
{
	int i, n;

	for (i = 0; i < RXE_RX_BATCH; i++) {
		b->iov[i].iov_base = b->buf + (size_t)i * RXE_RX_SLOT;
		b->iov[i].iov_len = RXE_RX_SLOT;
		memset(&b->msgs[i].msg_hdr, 0, sizeof(struct msghdr));
		b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
		b->msgs[i].msg_hdr.msg_iovlen = 1;
		b->msgs[i].msg_hdr.msg_name = &b->src[i];
		b->msgs[i].msg_hdr.msg_namelen = sizeof(b->src[i]);
		b->msgs[i].msg_hdr.msg_control = b->cm[i].buf;
		b->msgs[i].msg_hdr.msg_controllen =
			sizeof(b->cm[i].buf);
	}
	n = recvmmsg(fd, b->msgs, RXE_RX_BATCH, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		int j = i;

		if (b->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			rxe_count(dev, RXE_CNT_HDR_ERR);
			continue;
		}
		if (dev->fault_drop_ppm &&
		    fault_rand(seed) % 1000000u < dev->fault_drop_ppm) {
			rxe_count(dev, RXE_CNT_FAULT_DROPS);
			continue;
		}
		/* Swap with the next one: handle i + 1 first. */
		if (dev->fault_reorder_ppm && i + 1 < n &&
		    !(b->msgs[i + 1].msg_hdr.msg_flags & MSG_TRUNC) &&
		    fault_rand(seed) % 1000000u <
			    dev->fault_reorder_ppm) {
			rxe_count(dev, RXE_CNT_FAULT_REORDERS);
			rx_one(dev, b, i + 1, gid_index);
			rx_one(dev, b, i, gid_index);
			i++;
			continue;
		}
		rx_one(dev, b, j, gid_index);
		if (dev->fault_dup_ppm &&
		    fault_rand(seed) % 1000000u < dev->fault_dup_ppm) {
			rxe_count(dev, RXE_CNT_FAULT_DUPS);
			rx_one(dev, b, j, gid_index);
		}
	}
	return n;
}

void rxe_net_rx_drain(struct rxe_dev *dev, int gid_index,
		      struct rx_batch *b, uint32_t *seed, int rounds)
{
	uint32_t mode = rxe_direct_mode(dev);
	int fd, round;

	pthread_mutex_lock(&dev->lock);
	fd = dev->gids[gid_index].rx_fd;
	pthread_mutex_unlock(&dev->lock);
	if (fd < 0)
		return;
	if (G_UNLIKELY(dev->test_rx_loaded))
		dev->test_rx_loaded(dev, gid_index, fd);
	/*
	 * Some reads, then let timers and other sockets have a turn.
	 * Without direct placement, or while no bulk data comes, datagrams
	 * are read in recvmmsg() batches and their payloads copied. Once
	 * bulk data comes (direct=1), or always (direct=2), each datagram
	 * is peeked at first, so that an expected packet, or a UDP GRO run
	 * of them, is read straight into place: one more system call per
	 * datagram, one copy less per byte. Peeking stops after
	 * RXE_PEEK_CREDIT datagrams in a row that were not placed (ACKs,
	 * small messages), or at a run that cannot be.
	 */
	for (round = 0; round < rounds; round++) {
		if (mode == 2 || (mode == 1 && dev->rx_peek > 0)) {
			bool placed = false;
			int r = rxe_rcv_peeked(dev, fd, gid_index, b->buf,
					       b->buf + RXE_RX_SLOT,
					       RXE_RX_SLOT, &placed);

			if (r == 0)
				return;
			if (r > 0) {
				if (placed)
					dev->rx_peek = RXE_PEEK_CREDIT;
				else
					dev->rx_peek--;
				continue;
			}
			dev->rx_peek = 0;
		}
		if (rx_batch(dev, fd, gid_index, b, seed) < RXE_RX_BATCH &&
		    !(mode && dev->rx_peek > 0))
			return;
	}
}

/* The QP's transport timer went off. The QP is there: rxe_destroy_qp
 * waits for this callback (rxe_timer_fini) before it frees it; a lookup
 * tells whether it is being destroyed. */
static void on_timer(void *arg)
{
	struct rxe_qp *q = arg;
	struct rxe_qp *qp = rxe_qp_lookup(q->dev, q->base.qp_num);

	if (!qp)
		return;
	rxe_qp_lock(qp);
	if (qp == q && qp->timer_due_ns) {
		uint64_t now = rnicpi_now_ns();

		if (qp->timer_due_ns <= now) {
			qp->timer_due_ns = 0;
			rxe_comp_timer(qp);
		} else {
			rnicpi_timer_arm_by(&qp->dev->engine, &qp->timer,
					    qp->timer_due_ns - now);
		}
	}
	rxe_qp_unlock(qp);
	rxe_qp_put(qp);
}

/* Pop one QPN from @q under dev->lock; 0 when empty (QPN 0 is never
 * ours: the SMI QP does not exist on RoCE). */
static uint32_t pop_qpn(struct rxe_dev *dev, GQueue *q)
{
	uint32_t qpn;

	pthread_mutex_lock(&dev->lock);
	qpn = GPOINTER_TO_UINT(g_queue_pop_head(q));
	pthread_mutex_unlock(&dev->lock);
	return qpn;
}

void rxe_net_flush_acks(struct rxe_dev *dev)
{
	uint32_t qpn;

	while ((qpn = pop_qpn(dev, &dev->acks))) {
		struct rxe_qp *qp = rxe_qp_lookup(dev, qpn);

		if (!qp)
			continue;
		struct rxe_txready r;
		bool send;

		rxe_qp_lock(qp);
		qp->resp.ack_queued = false;
		send = rxe_resp_build_ack(qp, &r.p) &&
		       !rxe_tx_ready(qp, &qp->av, &r);
		rxe_qp_unlock(qp);
		if (send)
			rxe_tx_send_ready(qp, &r);
		rxe_qp_put(qp);
	}
}

/* One burst of transmit work for each QP that asked; returns whether
 * some is left. */
bool rxe_net_run_pending(struct rxe_dev *dev)
{
	guint n, i;
	bool more;

	pthread_mutex_lock(&dev->lock);
	n = g_queue_get_length(&dev->pending);
	pthread_mutex_unlock(&dev->lock);
	for (i = 0; i < n; i++) {
		uint32_t qpn = pop_qpn(dev, &dev->pending);
		struct rxe_qp *qp;

		if (!qpn)
			break;
		qp = rxe_qp_lookup(dev, qpn);
		if (!qp)
			continue;
		rxe_qp_lock(qp);
		qp->resp.queued = false;
		rxe_resp_continue(qp);
		rxe_req_run(qp);
		rxe_qp_unlock(qp);
		rxe_qp_put(qp);
	}
	pthread_mutex_lock(&dev->lock);
	more = !g_queue_is_empty(&dev->pending);
	pthread_mutex_unlock(&dev->lock);
	return more;
}

bool rxe_net_run_work(struct rxe_dev *dev)
{
	bool more;

	/* Deferred ACKs (rxe_net_poll_rx) are sent here with the rest; a
	 * flag set again meanwhile costs the next poll a look at an empty
	 * queue, never an ACK. */
	atomic_store_explicit(&dev->acks_deferred, false,
			      memory_order_relaxed);
	rxe_net_flush_acks(dev);
	more = rxe_net_run_pending(dev);
	rxe_net_flush_acks(dev);
	return more;
}

/* A receive socket is readable. Returns true: data moved, so the
 * engine polls on for busy_poll_us (option, off by default: in one
 * process, hostrdma-perf -L, its spinning competes with the two
 * application threads for two cores: 8-byte WRITE ping-pong 29 -> 41 us,
 * 1 MiB WRITE 32 -> 34 Gbit/s, hostrdma-rxe(7)). */
static bool rx_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct rxe_gid *g = container_of(src, struct rxe_gid, src);
	struct rxe_dev *dev = g->dev;
	uint64_t before;

	(void)events;
	pthread_mutex_lock(&dev->rx_lock);
	before = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]);
	rxe_net_rx_drain(dev, (int)(g - dev->gids), dev->rxb, &dev->rx_seed,
		 4 * RXE_RX_BATCH);
	/* A stream that fills a receive batch is the progress thread's
	 * (rxe_poll_rx_park_maybe). */
	if (dev->poll_rx &&
	    atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]) - before <
	    RXE_RX_BATCH)
		rxe_poll_rx_park_maybe(dev);
	pthread_mutex_unlock(&dev->rx_lock);
	return true;
}

/* After each pass: the coalesced ACKs and the transmit work; true when
 * some is left, and the engine goes round again without sleeping. */
static bool after_pass(void *arg)
{
	struct rxe_dev *dev = arg;

	if (atomic_load_explicit(&dev->rx_graves_due, memory_order_relaxed)) {
		pthread_mutex_lock(&dev->rx_lock);
		rx_reap(dev);
		pthread_mutex_unlock(&dev->rx_lock);
	}
	return rxe_net_run_work(dev);
}

int rxe_net_start(struct rxe_dev *dev)
{
	int err;

	/* Where retired receive descriptors point (rx_fd_retire). */
	dev->rx_null_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (dev->rx_null_fd < 0)
		return -errno;
	dev->rx_graves = g_array_new(FALSE, FALSE, sizeof(int));
	dev->rxb = g_new0(struct rx_batch, 1);
	dev->rxb->buf = g_malloc((size_t)RXE_RX_BATCH * RXE_RX_SLOT);
	dev->rx_seed = dev->fault_seed ? dev->fault_seed : 0x2545f491u;
	rxe_poll_rx_init(dev);
	err = rnicpi_engine_init(&dev->engine, dev->base.name,
				 dev->busy_poll_us, after_pass, dev);
	if (err)
		goto err_buf;
	dev->engine_up = true;
	err = rnicpi_engine_start(&dev->engine);
	if (err)
		goto err_engine;
	return 0;

err_engine:
	rnicpi_engine_fini(&dev->engine);
	dev->engine_up = false;
err_buf:
	g_free(dev->rxb->buf);
	g_free(dev->rxb);
	dev->rxb = NULL;
	g_array_free(dev->rx_graves, TRUE);
	dev->rx_graves = NULL;
	close(dev->rx_null_fd);
	dev->rx_null_fd = -1;
	return err;
}

void rxe_net_stop_thread(struct rxe_dev *dev)
{
	if (dev->engine_up)
		rnicpi_engine_stop(&dev->engine);
}

void rxe_net_stop(struct rxe_dev *dev)
{
	rxe_net_stop_thread(dev);
	/* The engine outlives the thread: the receive sockets are closed
	 * with their GIDs, after this, and leave its epoll set then. */
}

/* After the GIDs are closed: the engine itself. */
void rxe_net_fini(struct rxe_dev *dev)
{
	if (dev->engine_up)
		rnicpi_engine_fini(&dev->engine);
	dev->engine_up = false;
	if (dev->rx_graves) {
		pthread_mutex_lock(&dev->rx_lock);
		rx_reap(dev);
		pthread_mutex_unlock(&dev->rx_lock);
		g_array_free(dev->rx_graves, TRUE);
		dev->rx_graves = NULL;
		close(dev->rx_null_fd);
		dev->rx_null_fd = -1;
	}
	if (dev->rxb) {
		g_free(dev->rxb->buf);
		g_free(dev->rxb);
		dev->rxb = NULL;
	}
}
