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

static int send_rr(int fd, bool request, uint8_t rev, uint8_t flags,
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

static int socket_setup(struct siw_device *dev, int fd)
{
	int one = 1, fl;

	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		siw_info(dev, "socket %d: cannot make it non-blocking: %s", fd,
			 strerror(errno));
		return -errno;
	}
	if (dev->opts.nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* Largest ULPDU for this stream: one FPDU per TCP segment unless both
 * ends agreed to more. */
static uint32_t stream_ulpdu_max(struct siw_qp *qp, bool large)
{
	int mss = 1460;
	socklen_t len = sizeof(mss);

	if (getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 ||
	    mss <= 0)
		mss = 1460;
	if (qp->dev->opts.max_fpdu && (uint32_t)mss > qp->dev->opts.max_fpdu)
		mss = (int)qp->dev->opts.max_fpdu;
	return siw_ulpdu_max((uint32_t)mss, large);
}

/* ------------------------------------------------------------------ */
/* Initiator                                                           */
/* ------------------------------------------------------------------ */

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
			    siw_qp_state_name(qp->state),
			    qp->fd >= 0 ? " with a stream" : "");
		rc = -EINVAL;
		goto out;
	}
	rc = socket_setup(dev, fd);
	if (rc)
		goto out;
	rc = send_rr(fd, true, rev, flags, rev == MPA_REV2 ? &v2 : NULL,
		     param->private_data, param->private_data_len, timeout);
	if (rc) {
		siw_qp_info(qp, "iw_connect: sending the MPA Request: %s",
			    strerror(-rc));
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
		if (rep_ird < qp->ord)
			qp->ord = rep_ird ? rep_ird : 1;
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
	qp->mss_payload = stream_ulpdu_max(qp, large);
	qp->llp = SIW_LLP_RDMA;
	qp->state = RNICPI_QPS_RTS;
	qp->connected = true;
	qp->rtr_pending = qp->rtr != 0;
	siw_dev_timed_del(qp->dev, &qp->timed);
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
	/* FPDUs may have come right behind the Reply. */
	if (qp->fd >= 0)
		siw_qp_rx(qp);
	return;

term:
	/* RFC 6581 §8/§9: answer in FPDU mode with an MPA Terminate. */
	qp->crc = rr->flags & MPA_FLAG_CRC;
	qp->mss_payload = stream_ulpdu_max(qp, false);
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
				    "Reply", rc ? strerror(errno) : "closed");
			initiator_fail(qp, -ECONNRESET);
			return;
		}
		qp->mpa_got += (uint32_t)rc;
	}
}

/* ------------------------------------------------------------------ */
/* Responder                                                           */
/* ------------------------------------------------------------------ */

void siw_conn_free(struct siw_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	pthread_mutex_destroy(&conn->lock);
	free(conn);
}

/* Drop a conn that never got to REQUEST (or failed): close, report. */
static void conn_fail(struct siw_conn *conn, int status, bool report)
{
	struct siw_device *dev = conn->dev;

	siw_dev_poll_del(dev, conn->fd);
	siw_dev_timed_del(dev, &conn->timed);
	close(conn->fd);
	conn->fd = -1;
	conn->state = SIW_CONN_DEAD;
	if (report) {
		struct rnicpi_conn_event ev = {
			.type = RNICPI_CONN_ERROR,
			.status = status,
			.conn = &conn->base,
		};

		siw_dev_queue_conn(dev, &ev);
	}
}

int siw_iw_take_request(struct rnicpi_device *d, int fd, void *core_ctx,
			struct rnicpi_conn **out)
{
	struct siw_device *dev = to_siw_dev(d);
	struct siw_conn *conn;
	int rc;

	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return -ENOMEM;
	pthread_mutex_init(&conn->lock, NULL);
	conn->item.type = SIW_ITEM_CONN;
	conn->timed.item = &conn->item;
	conn->dev = dev;
	conn->fd = -1;
	conn->base.device = d;
	conn->base.core_ctx = core_ctx;
	rc = socket_setup(dev, fd);
	if (rc)
		goto err;
	conn->fd = fd;
	*out = &conn->base;
	pthread_mutex_lock(&conn->lock);
	rc = siw_dev_poll_add(dev, fd, &conn->item, EPOLLIN | EPOLLRDHUP);
	if (rc) {
		pthread_mutex_unlock(&conn->lock);
		conn->fd = -1;
		goto err;
	}
	siw_dev_timed_add(dev, &conn->timed, dev->opts.mpa_timeout_ms);
	pthread_mutex_unlock(&conn->lock);
	siw_dbg(dev, "waiting for an MPA Request on fd %d", fd);
	return 0;
err:
	pthread_mutex_destroy(&conn->lock);
	free(conn);
	return rc;
}

/* Send an MPA Reject answering the Request and drop the stream. */
static void conn_refuse(struct siw_conn *conn, int status)
{
	struct mpa_v2_data v2;

	mpa_v2_set(&v2, 0, 0, false, 0);
	send_rr(conn->fd, false, conn->rev ? conn->rev : MPA_REV1,
		MPA_FLAG_REJECT | (conn->flags & MPA_FLAG_CRC) |
			(conn->enhanced ? MPA_FLAG_ENHANCED : 0),
		conn->enhanced ? &v2 : NULL, NULL, 0, 1000);
	conn_fail(conn, status, true);
}

static void process_request(struct siw_conn *conn)
{
	struct siw_device *dev = conn->dev;
	const struct siw_options *o = &dev->opts;
	uint32_t pd_len = mpa_rr_pd_len(&conn->hdr);
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_REQUEST,
		.conn = &conn->base,
	};
	bool crc;

	if (!mpa_rr_is_request(&conn->hdr)) {
		siw_info(dev, "MPA Request with a wrong key");
		conn_fail(conn, -EPROTO, true);
		return;
	}
	conn->rev = conn->hdr.rev;
	conn->flags = conn->hdr.flags;
	if (conn->rev != MPA_REV1 && conn->rev != MPA_REV2) {
		siw_info(dev, "MPA Request revision %u (1 or 2 supported)",
			 conn->rev);
		conn->rev = MPA_REV1;
		conn_refuse(conn, -EPROTO);
		return;
	}
	conn->enhanced = conn->rev == MPA_REV2 &&
			 (conn->flags & MPA_FLAG_ENHANCED);
	if (conn->enhanced && pd_len < sizeof(struct mpa_v2_data)) {
		siw_info(dev, "enhanced MPA Request without IRD/ORD");
		conn->enhanced = false;
		conn_refuse(conn, -EPROTO);
		return;
	}
	/* RFC 5044 §7.1: markers are negotiated per direction; Linux siw
	 * does not implement them and neither do we: refuse clearly. */
	if (conn->flags & MPA_FLAG_MARKERS) {
		siw_info(dev, "peer asks for MPA markers (RFC 5044 §7.1), "
			 "which are not supported: rejecting");
		conn_refuse(conn, -EOPNOTSUPP);
		return;
	}
	/* RFC 5044 §7.1: CRC is used if either side asks for it. */
	crc = (conn->flags & MPA_FLAG_CRC) || o->mpa_crc != SIW_CRC_OFF;
	if ((conn->flags & MPA_FLAG_CRC) && o->mpa_crc == SIW_CRC_OFF &&
	    o->mpa_crc_strict) {
		siw_info(dev, "peer asks for MPA CRC; refused (mpa_crc_strict)");
		conn_refuse(conn, -ECONNREFUSED);
		return;
	}
	/* "required" needs no refusal here: our Reply's C bit turns CRC on
	 * for the stream whatever the initiator asked. */
	if (crc)
		conn->flags |= MPA_FLAG_CRC;
	ev.private_data = conn->pdata;
	ev.private_data_len = pd_len;
	if (conn->enhanced) {
		const struct mpa_v2_data *v2 = (const void *)conn->pdata;

		conn->peer_ird = mpa_v2_ird(v2);
		conn->peer_ord = mpa_v2_ord(v2);
		conn->p2p = mpa_v2_p2p(v2);
		conn->rtr_offered = mpa_v2_rtr(v2);
		ev.private_data = conn->pdata + sizeof(*v2);
		ev.private_data_len = pd_len - sizeof(*v2);
		ev.ird = conn->peer_ird;
		ev.ord = conn->peer_ord;
	}
	ev.flags = (crc ? RNICPI_CONN_MPA_CRC : 0) |
		   (conn->rev == MPA_REV1 ? RNICPI_CONN_MPA_REV1 : 0) |
		   (conn->p2p ? RNICPI_CONN_P2P : 0);
	siw_conn_event_addrs(conn->fd, &ev);
	/* The peer sends nothing more before our answer. */
	siw_dev_poll_del(dev, conn->fd);
	siw_dev_timed_del(dev, &conn->timed);
	conn->state = SIW_CONN_REQ_DONE;
	siw_dbg(dev, "MPA Request: rev %u flags 0x%02x IRD %u ORD %u p2p %d "
		"rtr 0x%04x, %u bytes private data", conn->rev, conn->flags,
		conn->peer_ird, conn->peer_ord, conn->p2p, conn->rtr_offered,
		ev.private_data_len);
	siw_dev_queue_conn(dev, &ev);
}

void siw_conn_handle(struct siw_conn *conn, uint32_t events)
{
	uint32_t hdr = sizeof(conn->hdr);
	bool was_waiting;

	pthread_mutex_lock(&conn->lock);
	was_waiting = conn->state == SIW_CONN_AWAIT_REQ;
	while (conn->state == SIW_CONN_AWAIT_REQ) {
		uint8_t *dst;
		uint32_t want;
		ssize_t rc;

		if (conn->got < hdr) {
			dst = (uint8_t *)&conn->hdr + conn->got;
			want = hdr - conn->got;
		} else {
			uint32_t pd = mpa_rr_pd_len(&conn->hdr);

			if (pd > MPA_MAX_PRIVATE_DATA) {
				siw_info(conn->dev, "MPA Request announces %u "
					 "bytes of private data (max %u)", pd,
					 MPA_MAX_PRIVATE_DATA);
				conn_fail(conn, -EPROTO, true);
				break;
			}
			if (conn->got == hdr + pd) {
				process_request(conn);
				break;
			}
			dst = conn->pdata + (conn->got - hdr);
			want = hdr + pd - conn->got;
		}
		rc = recv(conn->fd, dst, want, MSG_DONTWAIT);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (rc <= 0) {
			siw_dbg(conn->dev, "stream %s before the MPA Request",
				rc ? strerror(errno) : "closed");
			conn_fail(conn, -ECONNRESET, true);
			break;
		}
		conn->got += (uint32_t)rc;
	}
	if (was_waiting && conn->state == SIW_CONN_DEAD) {
		/* Reported as ERROR: the conn is gone for the core. */
		pthread_mutex_unlock(&conn->lock);
		siw_dev_defer_free(conn->dev, &conn->item);
		return;
	}
	pthread_mutex_unlock(&conn->lock);
}

void siw_conn_timeout(struct siw_conn *conn)
{
	pthread_mutex_lock(&conn->lock);
	if (conn->state != SIW_CONN_AWAIT_REQ) {
		pthread_mutex_unlock(&conn->lock);
		return;
	}
	siw_info(conn->dev, "no MPA Request within %u ms",
		 conn->dev->opts.mpa_timeout_ms);
	conn_fail(conn, -ETIMEDOUT, true);
	pthread_mutex_unlock(&conn->lock);
	siw_dev_defer_free(conn->dev, &conn->item);
}

int siw_conn_accept(struct rnicpi_conn *c, struct rnicpi_qp *q,
		    const struct rnicpi_conn_param *param)
{
	struct siw_conn *conn = to_siw_conn(c);
	struct siw_qp *qp = to_siw_qp(q);
	struct siw_device *dev = conn->dev;
	struct mpa_v2_data v2;
	uint8_t rev, flags;
	uint32_t ird, ord;
	uint16_t rtr = 0;
	bool large = false;
	int rc = 0;

	pthread_mutex_lock(&conn->lock);
	if (conn->state != SIW_CONN_REQ_DONE) {
		siw_info(dev, "conn_accept: no request pending");
		rc = -EINVAL;
		goto out_conn;
	}
	rev = conn->rev;
	if ((param->flags & RNICPI_CONN_MPA_REV1) || dev->opts.mpa_rev == 1)
		rev = MPA_REV1;
	if (param->private_data_len >
	    MPA_MAX_PRIVATE_DATA - (conn->enhanced ? sizeof(v2) : 0) ||
	    (param->private_data_len && !param->private_data)) {
		siw_info(dev, "conn_accept: %u bytes of private data",
			 param->private_data_len);
		rc = -EINVAL;
		goto out_refuse;
	}
	ird = param->ird ? param->ird : dev->opts.ird;
	ord = param->ord ? param->ord : dev->opts.ord;
	if (ird > SIW_MAX_IRD || ord > SIW_MAX_ORD) {
		siw_info(dev, "conn_accept: IRD %u / ORD %u over %u / %u", ird,
			 ord, SIW_MAX_IRD, SIW_MAX_ORD);
		rc = -EINVAL;
		goto out_refuse;
	}
	flags = conn->flags & MPA_FLAG_CRC;
	if (conn->enhanced) {
		/* RFC 6581 §8, relaxed like Linux: never issue more Reads
		 * than the initiator takes, take as many as it issues. */
		if (ord > conn->peer_ird)
			ord = conn->peer_ird;
		if (ird < conn->peer_ord)
			ird = conn->peer_ord > SIW_MAX_IRD ? SIW_MAX_IRD
							   : conn->peer_ord;
		/* RFC 6581 §9.2: echo P2P and pick one offered RTR. */
		if (conn->p2p) {
			if (conn->rtr_offered & MPA_V2_WRITE_RTR)
				rtr = MPA_V2_WRITE_RTR;
			else if (conn->rtr_offered & MPA_V2_READ_RTR)
				rtr = MPA_V2_READ_RTR;
			else
				rtr = MPA_V2_WRITE_RTR;
		}
		if (rev == MPA_REV2)
			flags |= MPA_FLAG_ENHANCED;
		mpa_v2_set(&v2, (uint16_t)ird, (uint16_t)ord, conn->p2p, rtr);
	}
	if (rev == MPA_REV1)
		rtr = 0;
	if ((conn->flags & MPA_FLAG_LARGE_FPDU) && dev->opts.large_fpdu) {
		flags |= MPA_FLAG_LARGE_FPDU | MPA_FLAG_HOSTRDMA;
		large = true;
	}

	pthread_mutex_lock(&qp->lock);
	if (qp->state != RNICPI_QPS_IDLE || qp->fd >= 0) {
		siw_qp_info(qp, "conn_accept: QP in state %s",
			    siw_qp_state_name(qp->state));
		pthread_mutex_unlock(&qp->lock);
		rc = -EINVAL;
		goto out_refuse;
	}
	/* The QP owns the stream before the Reply goes out: the peer may
	 * send its first FPDU right behind it. */
	qp->fd = conn->fd;
	conn->fd = -1;
	qp->initiator = false;
	qp->crc = flags & MPA_FLAG_CRC;
	qp->ird = ird;
	qp->ord = ord ? ord : 1;
	qp->rtr = rtr;
	qp->mss_payload = stream_ulpdu_max(qp, large);
	if (rtr) {
		qp->llp = SIW_LLP_AWAIT_RTR;
	} else {
		qp->llp = SIW_LLP_RDMA;
		qp->state = RNICPI_QPS_RTS;
	}
	rc = send_rr(qp->fd, false, rev, flags,
		     rev == MPA_REV2 && conn->enhanced ? &v2 : NULL,
		     param->private_data, param->private_data_len,
		     dev->opts.mpa_timeout_ms);
	if (!rc)
		rc = siw_dev_poll_add(dev, qp->fd, &qp->item,
				      EPOLLIN | EPOLLRDHUP);
	if (rc) {
		siw_qp_info(qp, "conn_accept: sending the MPA Reply: %s",
			    strerror(-rc));
		siw_qp_socket_close(qp, true);
		qp->llp = SIW_LLP_NONE;
		qp->state = RNICPI_QPS_IDLE;
		pthread_mutex_unlock(&qp->lock);
		goto out_dead;
	}
	if (rtr) {
		siw_dev_timed_add(dev, &qp->timed, dev->opts.mpa_timeout_ms);
	} else {
		struct rnicpi_conn_event ev = {
			.type = RNICPI_CONN_ESTABLISHED,
			.qp = &qp->base,
			.ird = qp->ird,
			.ord = qp->ord,
			.flags = (qp->crc ? RNICPI_CONN_MPA_CRC : 0) |
				 (rev == MPA_REV1 ? RNICPI_CONN_MPA_REV1 : 0),
		};

		qp->connected = true;
		siw_conn_event_addrs(qp->fd, &ev);
		siw_dev_queue_conn(dev, &ev);
	}
	siw_qp_dbg(qp, "MPA Reply sent: rev %u flags 0x%02x IRD %u ORD %u "
		   "rtr 0x%04x ULPDU %u", rev, flags, qp->ird, qp->ord, rtr,
		   qp->mss_payload);
	pthread_mutex_unlock(&qp->lock);
	goto out_dead;

out_refuse:
	{
		struct mpa_v2_data z;

		mpa_v2_set(&z, 0, 0, false, 0);
		send_rr(conn->fd, false, conn->rev, MPA_FLAG_REJECT |
				(conn->enhanced ? MPA_FLAG_ENHANCED : 0),
			conn->enhanced ? &z : NULL, NULL, 0, 1000);
	}
out_dead:
	if (conn->fd >= 0) {
		close(conn->fd);
		conn->fd = -1;
	}
	conn->state = SIW_CONN_DEAD;
out_conn:
	pthread_mutex_unlock(&conn->lock);
	siw_dev_defer_free(dev, &conn->item);
	siw_dev_deliver(dev);
	return rc;
}

int siw_conn_reject(struct rnicpi_conn *c, const void *pdata,
		    uint32_t pd_len)
{
	struct siw_conn *conn = to_siw_conn(c);
	struct siw_device *dev = conn->dev;
	struct mpa_v2_data v2;
	int rc = 0;

	pthread_mutex_lock(&conn->lock);
	if (conn->state != SIW_CONN_REQ_DONE) {
		siw_info(dev, "conn_reject: no request pending");
		rc = -EINVAL;
		goto out;
	}
	if (pd_len > MPA_MAX_PRIVATE_DATA - (conn->enhanced ? 4 : 0) ||
	    (pd_len && !pdata)) {
		siw_info(dev, "conn_reject: %u bytes of private data", pd_len);
		pd_len = 0;
		rc = -EINVAL;
	}
	mpa_v2_set(&v2, 0, 0, false, 0);
	send_rr(conn->fd, false, conn->rev,
		MPA_FLAG_REJECT | (conn->flags & MPA_FLAG_CRC) |
			(conn->enhanced ? MPA_FLAG_ENHANCED : 0),
		conn->enhanced ? &v2 : NULL, pdata, pd_len,
		dev->opts.mpa_timeout_ms);
	close(conn->fd);
	conn->fd = -1;
	conn->state = SIW_CONN_DEAD;
out:
	pthread_mutex_unlock(&conn->lock);
	siw_dev_defer_free(dev, &conn->item);
	return rc;
}
