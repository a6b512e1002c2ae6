/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE's transmit path: each QP's sending sockets (one per IP
 * family, from a UDP port of its own), the ICRC and padding that finish a
 * packet, and the bursts that go out as one sendmmsg() with equal-size
 * runs as UDP GSO datagrams. The receive side and the progress thread are
 * rxe_net.c's.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vp/rxe/rxe.h"
#include "vp/rxe/rxe_net.h"

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
	rxe_net_set_bufsize(fd, SO_SNDBUFFORCE, SO_SNDBUF);
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

