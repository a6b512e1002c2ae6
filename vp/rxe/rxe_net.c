/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE network layer: UDP sockets (one bound to port 4791 per device
 * address for receiving, one per QP and IP family for sending from a port
 * of its own), the ICRC on transmit, recvmmsg/sendmmsg batching, and the
 * device's progress thread (epoll) with the QP timers.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "vp/rxe/rxe.h"

#define RXE_SOCKBUF (8u << 20)
#define RXE_FWD_MAX 65536	/* a forwarded QP1 datagram, at most */

static bool rx_dispatch(struct rnicpi_source *src, uint32_t events);

static void set_bufsize(int fd, int opt_force, int opt)
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
	set_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
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
	set_bufsize(fd, SO_RCVBUFFORCE, SO_RCVBUF);
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
/* Transmit                                                           */
/* ------------------------------------------------------------------ */

int rxe_qp_tx_fd(struct rxe_qp *qp, const struct rxe_av *av, int *family_idx)
{
	struct rxe_dev *dev = qp->dev;
	int fi = av->dst.ss_family == AF_INET ? 0 : 1;
	struct sockaddr_storage src;
	socklen_t len;
	int fd, val;

	*family_idx = fi;
	if (qp->tx_fd[fi] >= 0 && qp->tx_gid[fi] == av->sgid_index)
		return qp->tx_fd[fi];
	pthread_mutex_lock(&dev->lock);
	if (!dev->gids[av->sgid_index].valid ||
	    dev->gids[av->sgid_index].addr.ss_family != av->dst.ss_family) {
		pthread_mutex_unlock(&dev->lock);
		rxe_qp_warn(qp, "source GID %u gone or of another family",
			    av->sgid_index);
		return -EADDRNOTAVAIL;
	}
	src = dev->gids[av->sgid_index].addr;
	pthread_mutex_unlock(&dev->lock);
	if (fi == 0)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;

	fd = socket(av->dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fi == 0) {
		/* DF set, and on an unconnected socket Linux then writes IP
		 * ID 0, which the ICRC we compute assumes. */
		val = IP_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &val,
				 sizeof(val));
	} else {
		val = IPV6_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &val,
				 sizeof(val));
		val = 1;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &val,
				 sizeof(val));
	}
	set_bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF);
	len = fi == 0 ? sizeof(struct sockaddr_in)
		      : sizeof(struct sockaddr_in6);
	if (bind(fd, (struct sockaddr *)&src, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&src, &len) < 0) {
		int err = -errno;

		rxe_qp_warn(qp, "transmit socket: %s", g_strerror(errno));
		close(fd);
		return err;
	}
	if (qp->tx_fd[fi] >= 0) {
		if (!qp->tx_retired)
			qp->tx_retired = g_array_new(FALSE, FALSE, sizeof(int));
		g_array_append_val(qp->tx_retired, qp->tx_fd[fi]);
	}
	qp->tx_fd[fi] = fd;
	qp->tx_gid[fi] = av->sgid_index;
	qp->tx_src[fi] = src;
	qp->tx_port[fi] = ntohs(fi == 0 ? ((struct sockaddr_in *)&src)->sin_port
				: ((struct sockaddr_in6 *)&src)->sin6_port);
	rxe_qp_dbg(qp, "sending from UDP port %u", qp->tx_port[fi]);
	return fd;
}

static void icrc_addr_tx(struct rxe_qp *qp, const struct rxe_av *av, int fi,
			 struct rxe_icrc_addr *a)
{
	const struct sockaddr_storage *src = &qp->tx_src[fi];

	memset(a, 0, sizeof(*a));
	a->family = av->dst.ss_family;
	a->sport = qp->tx_port[fi];
	a->dport = ROCE_V2_UDP_PORT;
	a->ip_id = 0;
	a->df = true;
	if (fi == 0) {
		memcpy(a->saddr, &((const struct sockaddr_in *)src)->sin_addr,
		       4);
		memcpy(a->daddr,
		       &((const struct sockaddr_in *)&av->dst)->sin_addr, 4);
	} else {
		memcpy(a->saddr, &((const struct sockaddr_in6 *)src)->sin6_addr,
		       16);
		memcpy(a->daddr,
		       &((const struct sockaddr_in6 *)&av->dst)->sin6_addr, 16);
	}
}

/* Pad to 4 bytes (IBA 9.2.4, PadCnt in the BTH) and append the ICRC. */
static void finish_pkt(struct rxe_txpkt *p, const struct rxe_icrc_addr *a)
{
	uint32_t paylen = 0, pad, i;
	uint32_t crc;

	for (i = 1; i < p->niov; i++)
		paylen += (uint32_t)p->iov[i].iov_len;
	pad = (4 - (paylen & 3)) & 3;
	p->hdr[1] = (uint8_t)((p->hdr[1] & ~IB_BTH_PAD_MASK) |
			      (pad << IB_BTH_PAD_SHIFT));
	crc = rxe_icrc_begin(a, p->hdr_len + paylen + pad + IB_ICRC_BYTES,
			     (const struct ib_bth *)p->hdr);
	crc = rxe_crc32(crc, p->hdr + IB_BTH_BYTES, p->hdr_len - IB_BTH_BYTES);
	for (i = 1; i < p->niov; i++)
		crc = rxe_crc32(crc, p->iov[i].iov_base, p->iov[i].iov_len);
	memset(p->trailer, 0, pad);
	crc = rxe_crc32(crc, p->trailer, pad);
	rxe_icrc_put(p->trailer + pad, crc);
	p->iov[0].iov_base = p->hdr;
	p->iov[0].iov_len = p->hdr_len;
	p->iov[p->niov].iov_base = p->trailer;
	p->iov[p->niov].iov_len = pad + IB_ICRC_BYTES;
	p->niov++;
}

static void release_pkt(struct rxe_txpkt *p)
{
	uint32_t i;

	for (i = 0; i < p->n_mrs; i++)
		rxe_mr_put(p->mrs[i]);
	p->n_mrs = 0;
}

/* Bytes @p will take on the wire (UDP payload) once finished. */
static size_t pkt_wire_len(const struct rxe_txpkt *p)
{
	size_t len = p->hdr_len;
	uint32_t i;

	for (i = 1; i < p->niov; i++)
		len += p->iov[i].iov_len;
	return ((len + 3) & ~(size_t)3) + IB_ICRC_BYTES;
}

/* How many packets from @p on form a run UDP GSO can send as one
 * datagram: the same length, at most 64 KiB and 64 segments in all. */
static int gso_run(const struct rxe_txpkt *p, int n, size_t *seg)
{
	size_t len = pkt_wire_len(p);
	uint32_t iovs = p->niov + 1;
	int run = 1;

	while (run < n && run < 64 && (size_t)(run + 1) * len <= 65000 &&
	       pkt_wire_len(&p[run]) == len &&
	       iovs + p[run].niov + 1 <= RXE_TX_BATCH * RXE_TX_IOV) {
		iovs += p[run].niov + 1;
		run++;
	}
	*seg = len;
	return run;
}

int rxe_tx_ready(struct rxe_qp *qp, const struct rxe_av *av,
		 struct rxe_txready *r)
{
	struct rxe_icrc_addr a;
	int fi;

	r->fd = rxe_qp_tx_fd(qp, av, &fi);
	if (r->fd < 0)
		return r->fd;
	icrc_addr_tx(qp, av, fi, &a);
	finish_pkt(&r->p, &a);
	r->dst = av->dst;
	r->dst_len = av->dst_len;
	return 0;
}

void rxe_tx_send_ready(struct rxe_qp *qp, struct rxe_txready *r)
{
	struct msghdr mh = { .msg_name = &r->dst, .msg_namelen = r->dst_len,
			     .msg_iov = r->p.iov, .msg_iovlen = r->p.niov };

	if (sendmsg(r->fd, &mh, 0) < 0) {
		rxe_count(qp->dev, RXE_CNT_SEND_ERR);
		rxe_qp_dbg(qp, "sendmsg: %s", g_strerror(errno));
	} else {
		rxe_count(qp->dev, RXE_CNT_SENT_PKTS);
	}
}

/*
 * Runs of equal-size packets (the middle of a long SEND, WRITE or READ
 * response) go out as one UDP GSO datagram that the kernel cuts into
 * packets at segment boundaries; the rest as single datagrams, all in
 * order through one sendmmsg. With GSO the kernel numbers the IPv4 IDs of
 * the segments 0, 1, 2, ... (DF set, unconnected socket), so each
 * segment's ICRC is computed with its own ID.
 */
int rxe_xmit(struct rxe_qp *qp, const struct rxe_av *av,
	     struct rxe_txpkt *pkts, int n)
{
	struct mmsghdr msgs[RXE_TX_BATCH];
	struct iovec giov[RXE_TX_BATCH * RXE_TX_IOV];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm[RXE_TX_BATCH];
	int segs[RXE_TX_BATCH];
	struct rxe_dev *dev = qp->dev;
	struct rxe_icrc_addr a;
	int fd, fi, i, k, m = 0, done = 0, sent = 0;
	uint32_t gi = 0;

	if (n > RXE_TX_BATCH)
		n = RXE_TX_BATCH; /* callers batch by RXE_TX_BATCH */
	fd = rxe_qp_tx_fd(qp, av, &fi);
	if (fd < 0)
		goto out;
	icrc_addr_tx(qp, av, fi, &a);
	for (i = 0; i < n; i += segs[m++]) {
		size_t seg;
		int run = atomic_load(&dev->gso)
				  ? gso_run(&pkts[i], n - i, &seg)
				  : 1;

		memset(&msgs[m], 0, sizeof(msgs[m]));
		msgs[m].msg_hdr.msg_name = (void *)&av->dst;
		msgs[m].msg_hdr.msg_namelen = av->dst_len;
		segs[m] = run;
		if (run == 1) {
			finish_pkt(&pkts[i], &a);
			msgs[m].msg_hdr.msg_iov = pkts[i].iov;
			msgs[m].msg_hdr.msg_iovlen = pkts[i].niov;
			continue;
		}
		msgs[m].msg_hdr.msg_iov = &giov[gi];
		for (k = 0; k < run; k++) {
			struct rxe_txpkt *p = &pkts[i + k];

			a.ip_id = fi == 0 ? (uint16_t)k : 0;
			finish_pkt(p, &a);
			memcpy(&giov[gi], p->iov, p->niov * sizeof(giov[0]));
			gi += p->niov;
		}
		a.ip_id = 0;
		msgs[m].msg_hdr.msg_iovlen = (size_t)(&giov[gi] -
					     msgs[m].msg_hdr.msg_iov);
		{
			struct msghdr *mh = &msgs[m].msg_hdr;
			struct cmsghdr *c;
			uint16_t gso = (uint16_t)seg;

			memset(cm[m].buf, 0, sizeof(cm[m].buf));
			mh->msg_control = cm[m].buf;
			mh->msg_controllen = sizeof(cm[m].buf);
			c = CMSG_FIRSTHDR(mh);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(gso));
			memcpy(CMSG_DATA(c), &gso, sizeof(gso));
		}
	}
	while (done < m) {
		int r = sendmmsg(fd, msgs + done, (unsigned int)(m - done), 0);

		if (r <= 0) {
			/* That datagram was refused (a full queue, a
			 * firewall's EPERM): lost, RC sends it again. A
			 * kernel without UDP GSO says so once. */
			if (r < 0 && segs[done] > 1 &&
			    (errno == EINVAL || errno == EIO ||
			     errno == ENOPROTOOPT)) {
				atomic_store(&dev->gso, false);
				rxe_dev_warn(dev, "UDP GSO refused (%s), off",
					     g_strerror(errno));
			}
			rxe_count(dev, RXE_CNT_SEND_ERR);
			rxe_qp_dbg(qp, "sendmmsg: %s",
				   r < 0 ? g_strerror(errno) : "nothing sent");
			r = 1;
		} else {
			for (k = 0; k < r; k++) {
				rxe_count_n(dev, RXE_CNT_SENT_PKTS,
					    (uint64_t)segs[done + k]);
				if (segs[done + k] > 1)
					rxe_count(dev, RXE_CNT_GSO_SENDS);
			}
		}
		for (k = 0; k < r; k++)
			sent += segs[done + k];
		done += r;
	}
out:
	for (i = 0; i < n; i++)
		release_pkt(&pkts[i]);
	return sent;
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

/* A poller's share of rx_drain: the application has its own work. */
#define RXE_POLL_RX_ROUNDS 4

static void rx_drain(struct rxe_dev *dev, int gid_index, struct rx_batch *b,
		     uint32_t *seed, int rounds)
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

/* The device whose receive side this thread holds from a poll_cq, or
 * whose left ACKs it sends from a consumer's call. */
static __thread const struct rxe_dev *rx_poller;

bool rxe_net_on_poller(const struct rxe_dev *dev)
{
	return rx_poller == dev;
}

static void flush_acks(struct rxe_dev *dev)
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

/*
 * The ACKs a poll left (acks_deferred), sent from a consumer's call:
 * poll_cq, a post, an arm. That caller may hold locks of the layers
 * above, so it is the device's poller meanwhile: events raised under a
 * QP's lock it takes stay queued for the progress thread
 * (rxe_qp_unlock), as in a poll that reads the sockets.
 */
static void flush_left_acks(struct rxe_dev *dev)
{
	const struct rxe_dev *was = rx_poller;

	if (!atomic_load_explicit(&dev->acks_deferred, memory_order_relaxed) ||
	    !atomic_exchange(&dev->acks_deferred, false))
		return;
	rx_poller = dev;
	flush_acks(dev);
	rx_poller = was;
}

/* One burst of transmit work for each QP that asked; returns whether
 * some is left. */
static bool run_pending(struct rxe_dev *dev)
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
	flush_acks(dev);
	more = run_pending(dev);
	flush_acks(dev);
	return more;
}

/* A receive socket is readable. Returns true: data moved, so the
 * engine polls on for busy_poll_us (option, off by default: in one
 * process, hostrdma-perf -L, its spinning competes with the two
 * application threads for two cores: 8-byte WRITE ping-pong 29 -> 41 us,
 * 1 MiB WRITE 32 -> 34 Gbit/s, hostrdma-rxe(7)). */
static void rx_park_maybe(struct rxe_dev *dev);

static bool rx_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct rxe_gid *g = container_of(src, struct rxe_gid, src);
	struct rxe_dev *dev = g->dev;
	uint64_t before;

	(void)events;
	pthread_mutex_lock(&dev->rx_lock);
	before = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]);
	rx_drain(dev, (int)(g - dev->gids), dev->rxb, &dev->rx_seed,
		 4 * RXE_RX_BATCH);
	/* A stream that fills a receive batch is the progress thread's
	 * (rx_park_maybe). */
	if (dev->poll_rx &&
	    atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]) - before <
	    RXE_RX_BATCH)
		rx_park_maybe(dev);
	pthread_mutex_unlock(&dev->rx_lock);
	return true;
}

/*
 * poll_rx parking. Reading the sockets from poll_cq alone saves little:
 * the progress thread is still woken by every datagram and takes the
 * core (or the receive side) first; on two cores a 4 KiB WRITE stream
 * between two processes went from 924 to 968 MB/s only (one run). So while an
 * application keeps polling (an empty CQ polled within the lease, option
 * poll_rx_lease_us, and no CQ armed since), the progress thread leaves
 * the receive sockets to it (EPOLLIN off) after a read of less than a
 * batch; a stream that fills batches stays with it, and polls read only
 * sockets left to them. It takes them back when a CQ
 * of the device is armed (rxe_net_poll_rx_armed: its consumer is about
 * to sleep) and, for a consumer that stops polling without arming, when
 * the lease runs out (the park timer): what arrives meanwhile waits at
 * most that long. Timers and the host service's QP1 socket stay with the
 * progress thread.
 */
static uint64_t lease_ns(const struct rxe_dev *dev)
{
	return (uint64_t)dev->poll_rx_lease_us * 1000u;
}

static bool consumer_polling(struct rxe_dev *dev, uint64_t now)
{
	uint64_t polled = atomic_load(&dev->rx_polled_ns);

	return polled && polled + lease_ns(dev) > now;
}

/* Until the lease of the last poll runs out, at least 10 us. */
static uint64_t lease_left_ns(struct rxe_dev *dev, uint64_t now)
{
	uint64_t end = atomic_load(&dev->rx_polled_ns) + lease_ns(dev);

	return end > now + 10000 ? end - now : 10000;
}

/* park_lock held. */
static void set_parked_locked(struct rxe_dev *dev, bool parked)
{
	int i;

	if (dev->rx_parked == parked)
		return;
	dev->rx_parked = parked;
	/* Under dev->lock: a GID's socket is closed under it. */
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++) {
		struct rxe_gid *g = &dev->gids[i];

		if (g->rx_fd >= 0)
			(void)rnicpi_engine_mod(&dev->engine, g->rx_fd,
						&g->src, parked ? 0 : EPOLLIN);
	}
	pthread_mutex_unlock(&dev->lock);
}

/* CPU time of the calling thread, in ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A consumer polled (at @now): which thread, at what CPU time of its
 * own. Reading a thread's CPU clock is a system call (the vDSO serves
 * only the wall clocks), and a consumer spinning on its CQ polls every
 * microsecond or two: the mark is taken again only when the last one
 * this thread took for @dev is RXE_POLLER_MARK_NS old, and poller_ran()
 * allows for a mark that much older than the poll.
 */
static void note_poller(struct rxe_dev *dev, uint64_t now)
{
	static __thread int tid;
	static __thread const struct rxe_dev *marked_dev;
	static __thread uint64_t marked_ns;

	if (!tid)
		tid = (int)gettid();
	if (marked_dev == dev && now - marked_ns < RXE_POLLER_MARK_NS &&
	    atomic_load_explicit(&dev->rx_poller_tid,
				 memory_order_relaxed) == tid)
		return;
	atomic_store(&dev->rx_poller_tid, tid);
	atomic_store(&dev->rx_poller_cpu_ns, thread_cpu_ns());
	marked_dev = dev;
	marked_ns = now;
}

/* Whether the thread of the last poll ran for at least @ns since it
 * (its CPU time, /proc/self/task/TID/schedstat); unknown counts as
 * yes. */
static bool poller_ran(struct rxe_dev *dev, uint64_t ns)
{
	char path[64], buf[96];
	unsigned long long now;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat",
		 atomic_load(&dev->rx_poller_tid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &now) != 1)
		return true;
	return now >= atomic_load(&dev->rx_poller_cpu_ns) + ns;
}

/* Whether a receive socket holds a datagram (park_lock held). */
static bool rx_waiting(struct rxe_dev *dev)
{
	struct pollfd p[RXE_MAX_GID];
	nfds_t n = 0;
	int i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].rx_fd >= 0)
			p[n++] = (struct pollfd){ .fd = dev->gids[i].rx_fd,
						  .events = POLLIN };
	i = n ? poll(p, n, 0) : 0;
	pthread_mutex_unlock(&dev->lock);
	return i > 0;
}

/* (Re)arm the park timer @delay_ns from @now; park_due_ns says when it
 * goes off, for park_timer_push(). */
static void park_timer_arm(struct rxe_dev *dev, uint64_t now,
			   uint64_t delay_ns)
{
	atomic_store_explicit(&dev->park_due_ns, now + delay_ns,
			      memory_order_relaxed);
	rnicpi_timer_arm(&dev->engine, &dev->park_timer, delay_ns);
}

/*
 * A consumer polls (at @now) while the sockets are parked: once the park
 * timer is due within half a lease, push it a whole lease on from here.
 * Left alone, the timer went off at every lease's end only to find the
 * consumer still polling and to arm itself again: with a 200 us lease
 * (the default until 2026-11-28), 5000 wake-ups a second of a progress
 * thread that on two cores takes one from a spinning application thread
 * (hostrdma-perf write_lat between two processes: 19 000 context
 * switches in a 2 s run, the tail of every round trip). A push is one
 * timerfd_settime() per half lease in the polling thread; the timer
 * still goes off a lease after the last poll, as before.
 */
static void park_timer_push(struct rxe_dev *dev, uint64_t now)
{
	uint64_t due = atomic_load_explicit(&dev->park_due_ns,
					    memory_order_relaxed);

	if (due && due - now < lease_ns(dev) / 2 && due > now &&
	    atomic_load_explicit(&dev->rx_parked, memory_order_relaxed))
		park_timer_arm(dev, now, lease_ns(dev));
}

/* The progress thread read the sockets (rx_lock held): leave them to a
 * consumer that polls. An arm after the test cannot be missed: it
 * cleared rx_polled_ns before it takes park_lock to unpark. */
static void rx_park_maybe(struct rxe_dev *dev)
{
	uint64_t now = rnicpi_now_ns();

	if (dev->rx_parked || dev->rx_park_off || !consumer_polling(dev, now))
		return;
	pthread_mutex_lock(&dev->park_lock);
	if (!dev->rx_parked && !dev->rx_park_off &&
	    consumer_polling(dev, now)) {
		set_parked_locked(dev, true);
		rxe_count(dev, RXE_CNT_POLL_RX_PARKS);
		park_timer_arm(dev, now, lease_left_ns(dev, now));
	}
	pthread_mutex_unlock(&dev->park_lock);
}

/*
 * The lease ran out, or was renewed by later polls or posts. A lease
 * that runs out on a datagram nobody read, while the consumer's thread
 * ran on a CPU for half a lease or more since its last poll of an empty
 * CQ (posting and reaping count too: only that poll takes the CPU-time
 * mark), means it stopped polling without arming a CQ: busy with
 * something else for a while (setting up its next run), or waiting
 * some other way (spinning on a byte of its buffer, as perftest's
 * write_lat does). That datagram waited the lease (poll_rx_late). The
 * second kind does so at every message: at RXE_POLL_RX_LATE_MAX such
 * leases in a row (no CQ armed between, no lease that ran out with
 * nothing waiting) parking stops for good, and with it the polls'
 * reads: the progress thread reads every datagram. A poller that was
 * not on a CPU (two busy threads a core) just gets the sockets back.
 */
static void on_park_timer(void *arg)
{
	struct rxe_dev *dev = arg;
	uint64_t now = rnicpi_now_ns();

	pthread_mutex_lock(&dev->park_lock);
	if (dev->rx_parked) {
		if (atomic_load(&dev->rx_in_poll) > 0) {
			park_timer_arm(dev, now, lease_ns(dev));
		} else if (consumer_polling(dev, now)) {
			park_timer_arm(dev, now, lease_left_ns(dev, now));
		} else {
			if (!rx_waiting(dev)) {
				dev->rx_late_streak = 0;
			} else if (poller_ran(dev, lease_ns(dev) / 2 +
						 RXE_POLLER_MARK_NS)) {
				rxe_count(dev, RXE_CNT_POLL_RX_LATE);
				if (++dev->rx_late_streak >= RXE_POLL_RX_LATE_MAX) {
					dev->rx_park_off = true;
					rxe_dev_dbg(dev, "poll_rx: data waited "
						    "for a lease's end %u "
						    "times in a row; the "
						    "sockets stay with the "
						    "progress thread",
						    dev->rx_late_streak);
				}
			}
			set_parked_locked(dev, false);
		}
	}
	pthread_mutex_unlock(&dev->park_lock);
}

void rxe_net_poll_rx_busy(struct rxe_dev *dev)
{
	/* The consumer's next move: the ACKs a poll left go (a post on
	 * their QP carried its own already). A consumer that keeps finding
	 * completions never polls an empty CQ. */
	flush_left_acks(dev);
	if (atomic_load_explicit(&dev->rx_polled_ns, memory_order_relaxed)) {
		uint64_t now = rnicpi_now_ns();

		atomic_store(&dev->rx_polled_ns, now);
		park_timer_push(dev, now);
	}
}

void rxe_net_poll_rx_armed(struct rxe_dev *dev)
{
	flush_left_acks(dev);
	atomic_store(&dev->rx_polled_ns, 0);
	pthread_mutex_lock(&dev->park_lock);
	dev->rx_late_streak = 0;
	set_parked_locked(dev, false);
	pthread_mutex_unlock(&dev->park_lock);
}


/*
 * Option poll_rx. The completion an application polls for usually sits
 * unread in a receive socket: the progress thread has to wake, on the
 * other core or in turn with the application, and then wake the
 * application: two context switches a message, and with two processes
 * on two cores (a progress thread each) the 4 KiB WRITE rate fell to
 * 0.57x that of one process (issue 15). Here the polling thread reads
 * the sockets itself when nobody else does (trylock: never waits for
 * the progress thread), in order, with the same buffers, then sends the
 * ACKs and bursts that made. Upcalls raised meanwhile wait for the
 * progress thread (rxe_qp_unlock).
 */
bool rxe_net_poll_rx(struct rxe_dev *dev, bool cq_armed)
{
	uint64_t before, got, now;
	int i, fds[RXE_MAX_GID];

	if (!dev->rxb || rx_poller || rnicpi_engine_on_thread(&dev->engine))
		return false;
	/* The ACKs an earlier poll left: its consumer has had its turn (a
	 * post on the QP would have carried them). */
	flush_left_acks(dev);
	now = rnicpi_now_ns();
	/* The poll a consumer makes right after arming (for what came
	 * before the arm) is no sign of polling: it is about to sleep. */
	if (!cq_armed) {
		atomic_store(&dev->rx_polled_ns, now);
		note_poller(dev, now);
		park_timer_push(dev, now);
	}
	/* Only sockets left to pollers (or that no progress thread reads):
	 * while the progress thread reads them (a stream, or parking off),
	 * a poll that read too would take that work from its core onto the
	 * poller's. */
	if (!atomic_load(&dev->rx_parked) && dev->engine.thread_running)
		return false;
	/* Taken first (rx_lock before dev->lock): a poll that finds the
	 * progress thread reading costs no dev->lock. */
	if (pthread_mutex_trylock(&dev->rx_lock))
		return false;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++)
		fds[i] = dev->gids[i].valid ? dev->gids[i].rx_fd : -1;
	pthread_mutex_unlock(&dev->lock);
	rx_poller = dev;
	atomic_fetch_add(&dev->rx_in_poll, 1);
	before = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (fds[i] >= 0)
			rx_drain(dev, i, dev->rxb, &dev->rx_seed,
				 RXE_POLL_RX_ROUNDS);
	got = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]) - before;
	pthread_mutex_unlock(&dev->rx_lock);
	if (got) {
		rxe_count_n(dev, RXE_CNT_POLL_RX_PKTS, got);
		/* Another round, if any, is the progress thread's (it was
		 * woken by whoever queued the work). The transmit work goes
		 * now (READ responses: a requester waits for them), the
		 * ACKs this read owes after the consumer has seen what came:
		 * a ping-pong's answer would otherwise wait behind a
		 * sendmsg() of the ACK for the ping, and its next post
		 * carries the ACK in the same system call (rxe_req_run).
		 * They wait at most for this thread's next poll, post or
		 * arm, or else for the park timer's pass at the end of the
		 * lease (the sockets are parked, or this thread would not
		 * have read them). A consumer about to sleep gets none
		 * deferred. */
		(void)run_pending(dev);
		if (cq_armed || !dev->engine.thread_running)
			flush_acks(dev);
		else
			atomic_store(&dev->acks_deferred, true);
		/* A long drain (up to RXE_POLL_RX_ROUNDS batches, and the
		 * ACKs and responses it made) was polling too: the lease
		 * and the CPU mark start again at its end. */
		if (!cq_armed) {
			now = rnicpi_now_ns();
			atomic_store(&dev->rx_polled_ns, now);
			note_poller(dev, now);
		}
	}
	atomic_fetch_sub(&dev->rx_in_poll, 1);
	rx_poller = NULL;
	return got != 0;
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
	rnicpi_timer_init(&dev->park_timer, on_park_timer, dev);
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
