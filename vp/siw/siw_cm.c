/* SPDX-License-Identifier: MIT */
/*
 * siw_cm.c - MPA connection set-up on a TCP socket the core connected
 * (RFC 5044 §7, enhanced set-up RFC 6581): the Request/Reply/Reject
 * frames, revision 1 and 2, CRC and marker negotiation, IRD/ORD and the
 * peer-to-peer RTR, then the hand-over of the socket to the QP.
 *
 * What Linux siw does, which we match on the wire: revision 2 frames set
 * the "enhanced" flag (0x10) and carry IRD/ORD in the first 4 bytes of
 * private data; a responder echoes the Request's flags; the initiator's
 * RTR is a zero-length Write (or Read) with a non-zero STag.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vp/siw/siw.h"

void siw_conn_event_addrs(int fd, struct rnicpi_conn_event *ev)
{
	socklen_t len = sizeof(ev->local_addr);

	if (getsockname(fd, (struct sockaddr *)&ev->local_addr, &len) < 0)
		memset(&ev->local_addr, 0, sizeof(ev->local_addr));
	len = sizeof(ev->remote_addr);
	if (getpeername(fd, (struct sockaddr *)&ev->remote_addr, &len) < 0)
		memset(&ev->remote_addr, 0, sizeof(ev->remote_addr));
}

/* Write a whole frame; the socket may be non-blocking. */
static int send_frame(int fd, struct iovec *iov, int n, uint32_t timeout_ms)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	uint64_t end = siw_now_ms() + timeout_ms;

	while (msg.msg_iovlen) {
		ssize_t rc = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (rc < 0) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			uint64_t now = siw_now_ms();

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (now >= end)
				return -ETIMEDOUT;
			poll(&p, 1, (int)(end - now));
			continue;
		}
		while (rc > 0 && msg.msg_iovlen) {
			if ((size_t)rc >= msg.msg_iov->iov_len) {
				rc -= (ssize_t)msg.msg_iov->iov_len;
				msg.msg_iov++;
				msg.msg_iovlen--;
			} else {
				msg.msg_iov->iov_base =
					(uint8_t *)msg.msg_iov->iov_base + rc;
				msg.msg_iov->iov_len -= (size_t)rc;
				rc = 0;
			}
		}
	}
	return 0;
}

int siw_mpa_send_rr(int fd, bool request, uint8_t rev, uint8_t flags,
		    const struct mpa_v2_data *v2, const void *pdata,
		    uint32_t pd_len, uint32_t timeout_ms)
{
	struct mpa_rr hdr;
	struct iovec iov[3];
	int n = 0;
	uint32_t total = pd_len + (v2 ? sizeof(*v2) : 0);

	mpa_rr_init(&hdr, request, rev, flags, (uint16_t)total);
	iov[n].iov_base = &hdr;
	iov[n++].iov_len = sizeof(hdr);
	if (v2) {
		iov[n].iov_base = (void *)v2;
		iov[n++].iov_len = sizeof(*v2);
	}
	if (pd_len) {
		iov[n].iov_base = (void *)pdata;
		iov[n++].iov_len = pd_len;
	}
	return send_frame(fd, iov, n, timeout_ms);
}

int siw_socket_setup(struct siw_device *dev, int fd)
{
	int one = 1, fl;

	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		siw_info(dev, "socket %d: cannot make it non-blocking: %s", fd,
			 g_strerror(errno));
		return -errno;
	}
	if (dev->opts.nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (dev->opts.tcp_user_timeout_ms) {
		/* Data the peer has not acknowledged for that long breaks
		 * the stream (RFC 5482); keepalive probes find a peer that
		 * vanished while nothing was in flight, in about the same
		 * time: idle and interval a third of it each, three probes. */
		unsigned int ut = dev->opts.tcp_user_timeout_ms;
		int third = (int)(ut / 3000) ? (int)(ut / 3000) : 1, cnt = 3;

		if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut,
			       sizeof(ut)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one,
			       sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &third,
			       sizeof(third)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &third,
			       sizeof(third)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt,
			       sizeof(cnt)) < 0)
			siw_info(dev, "socket %d: tcp_user_timeout_ms=%u: %s",
				 fd, ut, g_strerror(errno));
	}
	return 0;
}

/* Largest ULPDU for this stream: one FPDU per TCP segment unless both
 * ends agreed to more, and never over the device's max_fpdu. */
uint32_t siw_stream_ulpdu_max(struct siw_qp *qp, bool large)
{
	uint32_t u, cap;
	int mss = 1460;
	socklen_t len = sizeof(mss);

	if (getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 ||
	    mss <= 0)
		mss = 1460;
	qp->large_fpdu = large;
	u = siw_ulpdu_max((uint32_t)mss, large);
	if (qp->dev->opts.max_fpdu) {
		cap = siw_ulpdu_max(qp->dev->opts.max_fpdu, false);
		if (u > cap)
			u = cap;
	}
	return u;
}

/* ------------------------------------------------------------------ */
/* Initiator                                                           */
/* ------------------------------------------------------------------ */

/*
 * RNICPI_CONN_NO_MPA: the consumer ran the MPA exchange itself (IT-API's
 * IT_SC_NO_REQ_REP); the stream goes straight to RDMA mode with what the
 * core says, the same at both ends: no markers, CRC if asked, the given
 * IRD/ORD, no RTR.
 */
static int connect_no_mpa(struct siw_qp *qp, int fd,
			  const struct rnicpi_conn_param *param)
{
	struct siw_device *dev = qp->dev;
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_ESTABLISHED,
		.qp = &qp->base,
	};
	uint32_t ird = param->ird ? param->ird : qp->ird;
	uint32_t ord = param->ord ? param->ord : qp->ord;
	int rc;

	if (param->private_data_len ||
	    (param->flags & (RNICPI_CONN_P2P | RNICPI_CONN_MPA_REV1))) {
		siw_qp_info(qp, "iw_connect without MPA: no private data, RTR or revision to send");
		return -EINVAL;
	}
	if (ird > SIW_MAX_IRD || ord > SIW_MAX_ORD) {
		siw_qp_info(qp, "iw_connect: IRD %u / ORD %u over %u / %u", ird,
			    ord, SIW_MAX_IRD, SIW_MAX_ORD);
		return -EINVAL;
	}
	pthread_mutex_lock(&qp->lock);
	if (qp->state != RNICPI_QPS_IDLE || qp->fd >= 0) {
		siw_qp_info(qp, "iw_connect in state %s%s",
			    rnicpi_qp_state_name(qp->state),
			    qp->fd >= 0 ? " with a stream" : "");
		rc = -EINVAL;
		goto out;
	}
	rc = siw_socket_setup(dev, fd);
	if (rc)
		goto out;
	qp->fd = fd;
	qp->initiator = true;
	qp->ird = ird;
	qp->ord = ord;
	qp->crc = (param->flags & RNICPI_CONN_MPA_CRC) != 0;
	qp->rtr = 0;
	if (siw_qp_read_queues_size(qp)) {
		siw_qp_info(qp, "no memory for read queues of ORD %u / IRD %u",
			    qp->ord, qp->ird);
		qp->fd = -1;
		rc = -ENOMEM;
		goto out;
	}
	qp->mss_payload = siw_stream_ulpdu_max(qp, false);
	siw_tx_zc_setup(qp);
	qp->llp = SIW_LLP_RDMA;
	qp->state = RNICPI_QPS_RTS;
	qp->connected = true;
	qp->rtr_pending = false;
	rc = siw_dev_poll_add(dev, fd, &qp->item, EPOLLIN | EPOLLRDHUP);
	qp->watched = !rc;
	if (rc) {
		qp->fd = -1;
		qp->llp = SIW_LLP_NONE;
		qp->state = RNICPI_QPS_IDLE;
		qp->connected = false;
		goto out;
	}
	ev.ird = qp->ird;
	ev.ord = qp->ord;
	ev.flags = (qp->crc ? RNICPI_CONN_MPA_CRC : 0) | RNICPI_CONN_NO_MPA;
	siw_conn_event_addrs(fd, &ev);
	siw_dev_queue_conn(dev, &ev);
	siw_qp_dbg(qp, "RTS without MPA: crc %d IRD %u ORD %u ULPDU %u",
		   qp->crc, qp->ird, qp->ord, qp->mss_payload);
out:
	pthread_mutex_unlock(&qp->lock);
	if (!rc)
		siw_dev_deliver(dev);
	return rc;
}

int siw_iw_connect(struct rnicpi_qp *q, int fd,
		   const struct rnicpi_conn_param *param)
{
	struct siw_qp *qp = to_siw_qp(q);
	struct siw_device *dev = qp->dev;
	const struct siw_options *o = &dev->opts;
	struct mpa_v2_data v2;
	uint8_t rev = o->mpa_rev, flags = 0;
	enum siw_p2p_mode p2p = o->p2p;
	uint32_t ird, ord, timeout;
	int rc;

	if (param->flags & RNICPI_CONN_NO_MPA)
		return connect_no_mpa(qp, fd, param);
	if (param->flags & RNICPI_CONN_MPA_REV1)
		rev = MPA_REV1;
	if (param->flags & RNICPI_CONN_P2P && p2p == SIW_P2P_NONE)
		p2p = SIW_P2P_WRITE;
	if (rev == MPA_REV1 && p2p != SIW_P2P_NONE) {
		siw_qp_info(qp, "iw_connect: peer-to-peer RTR needs MPA "
			    "revision 2");
		return -EINVAL;
	}
	if (param->private_data_len >
	    MPA_MAX_PRIVATE_DATA - (rev == MPA_REV2 ? sizeof(v2) : 0) ||
	    (param->private_data_len && !param->private_data)) {
		siw_qp_info(qp, "iw_connect: %u bytes of private data (max %zu)",
			    param->private_data_len,
			    MPA_MAX_PRIVATE_DATA -
				    (rev == MPA_REV2 ? sizeof(v2) : 0));
		return -EINVAL;
	}
	ird = param->ird ? param->ird : qp->ird;
	ord = param->ord ? param->ord : qp->ord;
	if (ird > SIW_MAX_IRD || ord > SIW_MAX_ORD) {
		siw_qp_info(qp, "iw_connect: IRD %u / ORD %u over %u / %u", ird,
			    ord, SIW_MAX_IRD, SIW_MAX_ORD);
		return -EINVAL;
	}
	if (p2p == SIW_P2P_READ && !ord)
		ord = 1;
	timeout = param->timeout_ms ? param->timeout_ms : o->mpa_timeout_ms;
	if (o->mpa_crc != SIW_CRC_OFF || (param->flags & RNICPI_CONN_MPA_CRC))
		flags |= MPA_FLAG_CRC;
	if (rev == MPA_REV2)
		flags |= MPA_FLAG_ENHANCED;
	if (o->large_fpdu)
		flags |= MPA_FLAG_LARGE_FPDU;
	mpa_v2_set(&v2, (uint16_t)ird, (uint16_t)ord, p2p != SIW_P2P_NONE,
		   p2p == SIW_P2P_WRITE ? MPA_V2_WRITE_RTR
		   : p2p == SIW_P2P_READ ? MPA_V2_READ_RTR : 0);

	pthread_mutex_lock(&qp->lock);
	if (qp->state != RNICPI_QPS_IDLE || qp->fd >= 0) {
		siw_qp_info(qp, "iw_connect in state %s%s",
			    rnicpi_qp_state_name(qp->state),
			    qp->fd >= 0 ? " with a stream" : "");
		rc = -EINVAL;
		goto out;
	}
	rc = siw_socket_setup(dev, fd);
	if (rc)
		goto out;
	rc = siw_mpa_send_rr(fd, true, rev, flags, rev == MPA_REV2 ? &v2 : NULL,
		     param->private_data, param->private_data_len, timeout);
	if (rc) {
		siw_qp_info(qp, "iw_connect: sending the MPA Request: %s",
			    g_strerror(-rc));
		goto out;
	}
	qp->fd = fd;
	qp->initiator = true;
	qp->llp = SIW_LLP_AWAIT_REPLY;
	qp->mpa_got = 0;
	qp->mpa_req_flags = flags;
	qp->mpa_req_rev = rev;
	qp->mpa_req_p2p = p2p != SIW_P2P_NONE;
	qp->mpa_req_rtr = p2p == SIW_P2P_WRITE ? MPA_V2_WRITE_RTR
			  : p2p == SIW_P2P_READ ? MPA_V2_READ_RTR : 0;
	qp->ird = ird;
	qp->ord = ord;
	rc = siw_dev_poll_add(dev, fd, &qp->item, EPOLLIN | EPOLLRDHUP);
	qp->watched = !rc;
	if (rc) {
		qp->fd = -1;
		qp->llp = SIW_LLP_NONE;
		goto out;
	}
	siw_dev_timed_add(dev, &qp->timed, timeout);
	siw_qp_dbg(qp, "MPA Request sent: rev %u flags 0x%02x IRD %u ORD %u "
		   "p2p %d, %u bytes private data", rev, flags, ird, ord, p2p,
		   param->private_data_len);
out:
	pthread_mutex_unlock(&qp->lock);
	return rc;
}

static void initiator_fail(struct siw_qp *qp, int status)
{
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_ERROR,
		.status = status,
		.qp = &qp->base,
	};

	siw_qp_socket_close(qp, true);
	siw_qp_to_error(qp);
	if (!qp->destroyed)
		siw_dev_queue_conn(qp->dev, &ev);
}

/* The whole Reply is in qp->mpa_hdr / mpa_pdata: decide. */
static void process_reply(struct siw_qp *qp)
{
	const struct mpa_rr *rr = &qp->mpa_hdr;
	const struct siw_options *o = &qp->dev->opts;
	uint32_t pd_len = mpa_rr_pd_len(rr);
	const uint8_t *pdata = qp->mpa_pdata;
	bool enhanced = false, large;
	struct rnicpi_conn_event ev = { .qp = &qp->base };
	uint8_t ecode;

	if (!mpa_rr_is_reply(rr)) {
		siw_qp_info(qp, "MPA Reply with a wrong key");
		initiator_fail(qp, -EPROTO);
		return;
	}
	if (rr->rev < MPA_REV1 || rr->rev > qp->mpa_req_rev) {
		siw_qp_info(qp, "MPA Reply revision %u (we sent %u)", rr->rev,
			    qp->mpa_req_rev);
		initiator_fail(qp, -EPROTO);
		return;
	}
	if (rr->rev == MPA_REV2 && (rr->flags & MPA_FLAG_ENHANCED)) {
		if (pd_len < sizeof(struct mpa_v2_data)) {
			siw_qp_info(qp, "enhanced MPA Reply without IRD/ORD");
			initiator_fail(qp, -EPROTO);
			return;
		}
		enhanced = true;
	}
	if (rr->flags & MPA_FLAG_REJECT) {
		ev.type = RNICPI_CONN_REJECTED;
		ev.private_data = pdata + (enhanced ? 4 : 0);
		ev.private_data_len = pd_len - (enhanced ? 4 : 0);
		siw_conn_event_addrs(qp->fd, &ev);
		siw_qp_info(qp, "peer rejected the connection");
		siw_qp_socket_close(qp, false);
		qp->llp = SIW_LLP_NONE;
		if (!qp->destroyed)
			siw_dev_queue_conn(qp->dev, &ev);
		return;
	}
	/* RFC 5044 §7.1: we never ask for markers, so a Reply with M set
	 * breaks the protocol; and we do not do markers (nor does Linux). */
	if (rr->flags & MPA_FLAG_MARKERS) {
		siw_qp_info(qp, "MPA Reply asks for markers: not supported");
		initiator_fail(qp, -EPROTO);
		return;
	}
	if (o->mpa_crc == SIW_CRC_REQUIRED && !(rr->flags & MPA_FLAG_CRC)) {
		siw_qp_info(qp, "peer refuses MPA CRC, which we require");
		initiator_fail(qp, -ECONNREFUSED);
		return;
	}
	if (o->mpa_crc_strict && o->mpa_crc == SIW_CRC_OFF &&
	    !(qp->mpa_req_flags & MPA_FLAG_CRC) &&
	    (rr->flags & MPA_FLAG_CRC)) {
		siw_qp_info(qp, "peer wants MPA CRC; refused (mpa_crc_strict)");
		initiator_fail(qp, -ECONNREFUSED);
		return;
	}
	qp->crc = rr->flags & MPA_FLAG_CRC;
	large = (qp->mpa_req_flags & MPA_FLAG_LARGE_FPDU) &&
		(rr->flags & MPA_FLAG_LARGE_FPDU) &&
		(rr->flags & MPA_FLAG_HOSTRDMA);
	qp->rtr = 0;
	if (enhanced) {
		const struct mpa_v2_data *v2 = (const void *)pdata;
		uint16_t rep_ird = mpa_v2_ird(v2), rep_ord = mpa_v2_ord(v2);

		/* RFC 6581 §8: the responder's ORD must fit our IRD. We
		 * can take up to SIW_MAX_IRD; beyond that: Terminate. */
		if (rep_ord > SIW_MAX_IRD) {
			siw_qp_info(qp, "responder ORD %u beyond our IRD %u",
				    rep_ord, SIW_MAX_IRD);
			ecode = MPA_ECODE_INSUFFICIENT_IRD;
			goto term;
		}
		if (rep_ord > qp->ird)
			qp->ird = rep_ord;
		/* A responder with IRD 0 takes no Read at all: ORD 0, and
		 * post_send refuses Reads, rather than Reads the peer must
		 * Terminate. (A Read RTR is not counted against ORD.) */
		if (rep_ird < qp->ord)
			qp->ord = rep_ird;
		if (qp->mpa_req_p2p) {
			uint16_t match = mpa_v2_rtr(v2) & qp->mpa_req_rtr;

			if (!mpa_v2_p2p(v2) || !match) {
				siw_qp_info(qp, "responder picked RTR 0x%04x, "
					    "we offered 0x%04x",
					    mpa_v2_rtr(v2), qp->mpa_req_rtr);
				ecode = MPA_ECODE_NO_MATCHING_RTR;
				goto term;
			}
			qp->rtr = match;
		}
		pdata += sizeof(*v2);
		pd_len -= sizeof(*v2);
	} else if (qp->mpa_req_p2p) {
		siw_qp_info(qp, "revision %u Reply: no peer-to-peer RTR",
			    rr->rev);
		initiator_fail(qp, -EPROTO);
		return;
	}
	if (siw_qp_read_queues_size(qp)) {
		siw_qp_info(qp, "no memory for read queues of ORD %u / IRD %u",
			    qp->ord, qp->ird);
		initiator_fail(qp, -ENOMEM);
		return;
	}
	qp->mss_payload = siw_stream_ulpdu_max(qp, large);
	siw_tx_zc_setup(qp);
	qp->llp = SIW_LLP_RDMA;
	qp->state = RNICPI_QPS_RTS;
	qp->connected = true;
	qp->rtr_pending = qp->rtr != 0;
	siw_dev_timed_del(qp->dev, &qp->timed);
	/* Linux siw (6.1) sends its Reply in siw_accept() before its
	 * endpoint enters RDMA mode; an FPDU landing in between sits unread
	 * until more data comes. Holding our first FPDU for rts_delay_ms
	 * avoids that window (hostrdma-siw(7)). */
	if (o->rts_delay_ms) {
		qp->tx_hold = true;
		siw_dev_timed_add(qp->dev, &qp->timed, o->rts_delay_ms);
	}
	ev.type = RNICPI_CONN_ESTABLISHED;
	ev.private_data = pdata;
	ev.private_data_len = pd_len;
	ev.ird = qp->ird;
	ev.ord = qp->ord;
	ev.flags = (qp->crc ? RNICPI_CONN_MPA_CRC : 0) |
		   (rr->rev == MPA_REV1 ? RNICPI_CONN_MPA_REV1 : 0) |
		   (qp->rtr ? RNICPI_CONN_P2P : 0);
	siw_conn_event_addrs(qp->fd, &ev);
	if (!qp->destroyed)
		siw_dev_queue_conn(qp->dev, &ev);
	siw_qp_dbg(qp, "RTS: rev %u crc %d IRD %u ORD %u rtr 0x%04x ULPDU %u",
		   rr->rev, qp->crc, qp->ird, qp->ord, qp->rtr,
		   qp->mss_payload);
	siw_qp_tx(qp);
	/* FPDUs may have come right behind the Reply. Looked for first:
	 * the first read allocates the receive stash, which a QP that
	 * never receives does without. */
	if (qp->fd >= 0 && siw_fd_readable(qp->fd))
		siw_qp_rx(qp);
	return;

term:
	/* RFC 6581 §8/§9: answer in FPDU mode with an MPA Terminate. */
	qp->crc = rr->flags & MPA_FLAG_CRC;
	qp->mss_payload = siw_stream_ulpdu_max(qp, false);
	qp->llp = SIW_LLP_AWAIT_REPLY;
	qp->state = RNICPI_QPS_RTS;
	siw_dev_timed_del(qp->dev, &qp->timed);
	siw_qp_terminate(qp, TERM_LAYER_LLP, 0, ecode, false,
			 RNICPI_EVENT_QP_FATAL);
}

void siw_qp_mpa_reply_rx(struct siw_qp *qp)
{
	uint32_t hdr = sizeof(qp->mpa_hdr);
	ssize_t rc;

	for (;;) {
		uint8_t *dst;
		uint32_t want;

		if (qp->mpa_got < hdr) {
			dst = (uint8_t *)&qp->mpa_hdr + qp->mpa_got;
			want = hdr - qp->mpa_got;
		} else {
			uint32_t pd = mpa_rr_pd_len(&qp->mpa_hdr);

			if (pd > MPA_MAX_PRIVATE_DATA) {
				siw_qp_info(qp, "MPA Reply announces %u bytes of "
					    "private data (max %u)", pd,
					    MPA_MAX_PRIVATE_DATA);
				initiator_fail(qp, -EPROTO);
				return;
			}
			if (qp->mpa_got == hdr + pd) {
				process_reply(qp);
				return;
			}
			dst = qp->mpa_pdata + (qp->mpa_got - hdr);
			want = hdr + pd - qp->mpa_got;
		}
		rc = recv(qp->fd, dst, want, MSG_DONTWAIT);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (rc <= 0) {
			siw_qp_info(qp, "stream %s while waiting for the MPA "
				    "Reply", rc ? g_strerror(errno) : "closed");
			initiator_fail(qp, -ECONNRESET);
			return;
		}
		qp->mpa_got += (uint32_t)rc;
	}
}
