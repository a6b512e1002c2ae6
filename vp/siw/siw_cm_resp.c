/* SPDX-License-Identifier: MIT */
/*
 * siw_cm_resp.c - the responder's side of MPA (RFC 5044 §7.1, RFC 6581):
 * read the peer's Request on a socket the core accepted, report it, then
 * send the Reply (accept, with IRD/ORD and the chosen RTR) or the Reject.
 * Frame helpers and the initiator are in siw_cm.c.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vp/siw/siw.h"

void siw_conn_free(struct siw_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	pthread_mutex_destroy(&conn->lock);
	free(conn);
}

void siw_conn_get(struct siw_conn *conn)
{
	atomic_fetch_add(&conn->ref, 1);
}

void siw_conn_put(struct siw_conn *conn)
{
	/* Deferred: the progress thread may hold an epoll event or a
	 * deadline entry for it from its current batch. */
	if (atomic_fetch_sub(&conn->ref, 1) == 1)
		siw_dev_defer_free(conn->dev, &conn->item);
}

/* Take the conn out of the poll set and off the deadline list; true when
 * the caller owes the put of that reference (after dropping the lock).
 * Under conn->lock. */
static bool conn_unpoll(struct siw_conn *conn)
{
	if (!conn->polled)
		return false;
	siw_dev_poll_del(conn->dev, conn->fd);
	siw_dev_timed_del(conn->dev, &conn->timed);
	conn->polled = false;
	return true;
}

/* The core consumes the conn (accept or reject): false when it had done
 * so already or was told ERROR. Under conn->lock. */
static bool conn_core_take(struct siw_conn *conn)
{
	if (!conn->core_owned)
		return false;
	conn->core_owned = false;
	return true;
}

void siw_conn_core_done(struct siw_conn *conn)
{
	bool put;

	pthread_mutex_lock(&conn->lock);
	put = conn_core_take(conn);
	pthread_mutex_unlock(&conn->lock);
	if (put)
		siw_conn_put(conn);
}

/* Drop a conn that never got to REQUEST (or failed): close, report. The
 * caller puts the poll set's reference. */
static void conn_fail(struct siw_conn *conn, int status, bool report)
{
	struct siw_device *dev = conn->dev;

	siw_dev_poll_del(dev, conn->fd);
	siw_dev_timed_del(dev, &conn->timed);
	conn->polled = false;
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
	rc = siw_socket_setup(dev, fd);
	if (rc)
		goto err;
	conn->fd = fd;
	/* One reference for the core, one for the poll set. */
	atomic_init(&conn->ref, 2);
	conn->core_owned = true;
	conn->polled = true;
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
	siw_mpa_send_rr(conn->fd, false, conn->rev ? conn->rev : MPA_REV1,
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
	/* The peer sends nothing more before our answer; the REQUEST event
	 * holds the conn until it is delivered (siw_dev_queue_conn). */
	conn_unpoll(conn);
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
	bool was_polled;

	pthread_mutex_lock(&conn->lock);
	/* A consumer may have taken it out of the poll set since this
	 * event was collected: then state is no longer AWAIT_REQ. */
	was_polled = conn->polled;
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
				rc ? g_strerror(errno) : "closed");
			conn_fail(conn, -ECONNRESET, true);
			break;
		}
		conn->got += (uint32_t)rc;
	}
	was_polled = was_polled && !conn->polled;
	pthread_mutex_unlock(&conn->lock);
	if (was_polled)
		siw_conn_put(conn);
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
	siw_conn_put(conn);	/* the poll set's */
}

/* After accept/reject: an upcall still queued for the conn (a REQUEST or
 * ERROR the core has not seen) is dropped, for the core answered; then
 * the references the caller held go. */
static void conn_consumed(struct siw_conn *conn, bool put_poll, bool put_core)
{
	siw_dev_purge_events(conn->dev, conn);
	if (put_poll)
		siw_conn_put(conn);
	if (put_core)
		siw_conn_put(conn);
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
	bool large = false, put_poll, put_core;
	int rc = 0;

	pthread_mutex_lock(&conn->lock);
	put_core = conn_core_take(conn);
	put_poll = conn_unpoll(conn);
	if (!put_core || conn->state != SIW_CONN_REQ_DONE) {
		/* Before the Request was read, or after the stream failed
		 * (ERROR is on its way): nothing to accept. */
		siw_info(dev, "conn_accept: no request pending (%s)",
			 !put_core ? "already answered"
			 : conn->state == SIW_CONN_AWAIT_REQ
				 ? "MPA Request not read yet"
				 : "connection failed");
		rc = -EINVAL;
		goto out_dead;
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
			    rnicpi_qp_state_name(qp->state));
		pthread_mutex_unlock(&qp->lock);
		rc = -EINVAL;
		goto out_refuse;
	}
	qp->ird = ird;
	qp->ord = ord;
	rc = siw_qp_read_queues_size(qp);
	if (rc) {
		siw_qp_info(qp, "conn_accept: no memory for read queues of "
			    "ORD %u / IRD %u", ord, ird);
		pthread_mutex_unlock(&qp->lock);
		goto out_refuse;
	}
	/* The QP owns the stream before the Reply goes out: the peer may
	 * send its first FPDU right behind it. */
	qp->fd = conn->fd;
	conn->fd = -1;
	qp->initiator = false;
	qp->crc = flags & MPA_FLAG_CRC;
	qp->rtr = rtr;
	qp->mss_payload = siw_stream_ulpdu_max(qp, large);
	siw_tx_zc_setup(qp);
	if (rtr) {
		qp->llp = SIW_LLP_AWAIT_RTR;
	} else {
		qp->llp = SIW_LLP_RDMA;
		qp->state = RNICPI_QPS_RTS;
	}
	rc = siw_mpa_send_rr(qp->fd, false, rev, flags,
		     rev == MPA_REV2 && conn->enhanced ? &v2 : NULL,
		     param->private_data, param->private_data_len,
		     dev->opts.mpa_timeout_ms);
	if (!rc) {
		rc = siw_dev_poll_add(dev, qp->fd, &qp->item,
				      EPOLLIN | EPOLLRDHUP);
		qp->watched = !rc;
	}
	if (rc) {
		siw_qp_info(qp, "conn_accept: sending the MPA Reply: %s",
			    g_strerror(-rc));
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
		siw_mpa_send_rr(conn->fd, false, conn->rev, MPA_FLAG_REJECT |
				(conn->enhanced ? MPA_FLAG_ENHANCED : 0),
			conn->enhanced ? &z : NULL, NULL, 0, 1000);
	}
out_dead:
	if (conn->fd >= 0) {
		close(conn->fd);
		conn->fd = -1;
	}
	conn->state = SIW_CONN_DEAD;
	pthread_mutex_unlock(&conn->lock);
	conn_consumed(conn, put_poll, put_core);
	siw_dev_deliver(dev);
	return rc;
}

int siw_conn_reject(struct rnicpi_conn *c, const void *pdata,
		    uint32_t pd_len)
{
	struct siw_conn *conn = to_siw_conn(c);
	struct siw_device *dev = conn->dev;
	struct mpa_v2_data v2;
	bool put_poll, put_core;
	int rc = 0;

	pthread_mutex_lock(&conn->lock);
	put_core = conn_core_take(conn);
	put_poll = conn_unpoll(conn);
	if (!put_core) {
		siw_info(dev, "conn_reject: connection already answered");
		rc = -EINVAL;
		goto out;
	}
	switch (conn->state) {
	case SIW_CONN_AWAIT_REQ:
		/* RFC 5044 §7.1: a Reply (or Reject) answers a Request;
		 * with none read yet the refusal is closing the stream. */
		siw_dbg(dev, "conn_reject before the MPA Request: closing fd "
			"%d", conn->fd);
		break;
	case SIW_CONN_REQ_DONE:
		if (pd_len > MPA_MAX_PRIVATE_DATA -
				     (conn->enhanced ? sizeof(v2) : 0) ||
		    (pd_len && !pdata)) {
			siw_info(dev, "conn_reject: %u bytes of private data",
				 pd_len);
			pd_len = 0;
			rc = -EINVAL;
		}
		mpa_v2_set(&v2, 0, 0, false, 0);
		/* The peer may have closed already: the Reject then goes
		 * nowhere (EPIPE), which changes nothing here. */
		siw_mpa_send_rr(conn->fd, false, conn->rev,
			MPA_FLAG_REJECT | (conn->flags & MPA_FLAG_CRC) |
				(conn->enhanced ? MPA_FLAG_ENHANCED : 0),
			conn->enhanced ? &v2 : NULL, pdata, pd_len,
			dev->opts.mpa_timeout_ms);
		break;
	case SIW_CONN_DEAD:
		/* The stream failed; its ERROR is queued or being
		 * delivered and is dropped or ignored. */
		break;
	}
	if (conn->fd >= 0) {
		close(conn->fd);
		conn->fd = -1;
	}
	conn->state = SIW_CONN_DEAD;
out:
	pthread_mutex_unlock(&conn->lock);
	conn_consumed(conn, put_poll, put_core);
	return rc;
}
