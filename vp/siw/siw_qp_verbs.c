/* SPDX-License-Identifier: MIT */
/*
 * siw_qp_verbs.c - QP verbs: create, modify (states, graceful and
 * abortive close), query, destroy, and posting send and receive WRs.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vp/siw/siw.h"

int siw_create_qp(struct rnicpi_pd *p, struct rnicpi_qp_init_attr *attr,
		  struct rnicpi_qp **out)
{
	struct siw_pd *pd = to_siw_pd(p);
	struct siw_device *dev = pd->dev;
	struct rnicpi_qp_cap *cap = &attr->cap;
	struct siw_qp *qp;
	int i;

	if (attr->qp_type != RNICPI_QPT_RC) {
		siw_info(dev, "create_qp: type %d; iWARP has RC QPs only",
			 attr->qp_type);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		siw_info(dev, "create_qp: send and receive CQ are required");
		return -EINVAL;
	}
	if (!cap->max_send_wr || cap->max_send_wr > SIW_MAX_QP_WR ||
	    cap->max_recv_wr > SIW_MAX_QP_WR ||
	    (!attr->srq && !cap->max_recv_wr) ||
	    cap->max_send_sge > SIW_MAX_SGE ||
	    cap->max_recv_sge > SIW_MAX_SGE ||
	    cap->max_inline_data > SIW_MAX_INLINE) {
		siw_info(dev, "create_qp: caps over limit: send_wr %u recv_wr %u "
			 "(1..%u), send_sge %u recv_sge %u (..%u), inline %u "
			 "(..%u)", cap->max_send_wr, cap->max_recv_wr,
			 SIW_MAX_QP_WR, cap->max_send_sge, cap->max_recv_sge,
			 SIW_MAX_SGE, cap->max_inline_data, SIW_MAX_INLINE);
		return -EINVAL;
	}
	if (atomic_fetch_add(&dev->n_qp, 1) >= dev->opts.max_qp) {
		atomic_fetch_sub(&dev->n_qp, 1);
		siw_warn(dev, "create_qp: the device's limit of %u QPs is "
			 "reached (option max_qp)", dev->opts.max_qp);
		return -ENOSPC;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		goto err_count;
	qp->sq_size = cap->max_send_wr;
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	if (!qp->sq)
		goto err_free;
	if (!attr->srq) {
		qp->rq_size = cap->max_recv_wr;
		qp->rq = calloc(qp->rq_size, sizeof(*qp->rq));
		if (!qp->rq)
			goto err_free;
	}
	if (cap->max_send_sge == 0)
		cap->max_send_sge = 1;
	if (!attr->srq && cap->max_recv_sge == 0)
		cap->max_recv_sge = 1;
	if (cap->max_inline_data) {
		cap->max_inline_data = SIW_MAX_INLINE;
		qp->inline_buf = malloc((size_t)qp->sq_size * SIW_MAX_INLINE);
		if (!qp->inline_buf)
			goto err_free;
	}
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&qp->rq_lock, NULL);
	siw_list_init(&qp->park_node);
	qp->item.type = SIW_ITEM_QP;
	qp->timed.item = &qp->item;
	qp->read_timed.item = &qp->item;
	qp->dev = dev;
	qp->pd = pd;
	qp->scq = to_siw_cq(attr->send_cq);
	qp->rcq = to_siw_cq(attr->recv_cq);
	if (attr->srq) {
		qp->srq = to_siw_srq(attr->srq);
		atomic_fetch_add(&qp->srq->users, 1);
		cap->max_recv_wr = 0;
		cap->max_recv_sge = qp->srq->max_sge;
	}
	qp->sq_sig_all = attr->sq_sig_all;
	qp->cap = *cap;
	qp->state = RNICPI_QPS_IDLE;
	qp->access = RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ;
	qp->fd = -1;
	qp->ird = dev->opts.ird;
	qp->ord = dev->opts.ord;
	for (i = 0; i < DDP_QN_COUNT; i++)
		qp->tx_msn[i] = qp->rx.msn[i] = 1;
	qp->base.pd = p;
	qp->base.qp_num = atomic_fetch_add(&dev->next_qpn, 1);
	siw_qp_cq_attach(qp);
	siw_qp_dbg(qp, "created: sq %u rq %u%s", qp->sq_size, qp->rq_size,
		   qp->srq ? " (SRQ)" : "");
	*out = &qp->base;
	return 0;

err_free:
	free(qp->sq);
	free(qp->rq);
	free(qp);
err_count:
	atomic_fetch_sub(&dev->n_qp, 1);
	return -ENOMEM;
}

static void cq_link_add(struct siw_qp *qp, int i, struct siw_cq *cq)
{
	struct siw_cq_link *l = &qp->cq_link[i];

	l->qp = qp;
	l->cq = cq;
	pthread_mutex_lock(&cq->qps_lock);
	siw_list_add_tail(&cq->qps, &l->node);
	cq->n_qps++;
	pthread_mutex_unlock(&cq->qps_lock);
}

void siw_qp_cq_attach(struct siw_qp *qp)
{
	cq_link_add(qp, 0, qp->scq);
	if (qp->rcq != qp->scq)
		cq_link_add(qp, 1, qp->rcq);
}

/* After this no siw_cq_progress() can reach @qp (it holds qps_lock
 * while it works on one). */
void siw_qp_cq_detach(struct siw_qp *qp)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct siw_cq_link *l = &qp->cq_link[i];

		if (!l->cq)
			continue;
		pthread_mutex_lock(&l->cq->qps_lock);
		siw_list_del(&l->node);
		l->cq->n_qps--;
		pthread_mutex_unlock(&l->cq->qps_lock);
		l->cq = NULL;
	}
}

static void qp_reset(struct siw_qp *qp)
{
	uint8_t *pack = qp->tx.pack, *stash = qp->rx.stash;
	int i;

	qp->sq_head = qp->sq_tx = qp->sq_count = qp->sq_unstarted = 0;
	pthread_mutex_lock(&qp->rq_lock);
	qp->rq_head = qp->rq_count = 0;
	qp->rq_closed = false;
	pthread_mutex_unlock(&qp->rq_lock);
	memset(&qp->tx, 0, sizeof(qp->tx));
	qp->tx.pack = pack;	/* kept for the QP's next connection */
	siw_qp_set_parked(qp, false);
	memset(&qp->rx, 0, sizeof(qp->rx));
	qp->rx.stash = stash;	/* kept too */
	memset(&qp->term, 0, sizeof(qp->term));
	qp->term_sent = qp->term_received = false;
	qp->closing = qp->connected = qp->disc_reported = false;
	qp->rtr = 0;
	qp->llp = SIW_LLP_NONE;
	for (i = 0; i < DDP_QN_COUNT; i++)
		qp->tx_msn[i] = qp->rx.msn[i] = 1;
}

/* RNICPI_QP_CAP under qp->lock and rq_lock: new rings for the sizes
 * that change. The receive ring keeps its RQEs in order (a taken RQE is
 * copied out, nothing points into the ring); the send ring is re-laid
 * only empty, for the transmitter, the ORQ and zero-copy completions name
 * SQ slots by index. */
static int qp_resize_locked(struct siw_qp *qp,
			    const struct rnicpi_qp_cap *cap)
{
	uint32_t sq = cap->max_send_wr, rq = cap->max_recv_wr, i;
	struct siw_wqe *sring = NULL;
	struct siw_rqe *rring = NULL;
	uint8_t *ibuf = NULL;

	if (sq == qp->sq_size)
		sq = 0;
	if (rq == qp->rq_size)
		rq = 0;
	if (sq > SIW_MAX_QP_WR || rq > SIW_MAX_QP_WR || (rq && qp->srq) ||
	    (rq && rq < qp->rq_count)) {
		siw_qp_info(qp, "modify_qp: queues of %u send, %u receive WRs "
			    "(..%u, %u receives queued%s)", sq, rq,
			    SIW_MAX_QP_WR, qp->rq_count,
			    qp->srq ? ", SRQ" : "");
		return -EINVAL;
	}
	if (sq && (qp->sq_count || qp->orq_count || qp->zc_count ||
		   qp->tx.kind == SIW_TX_SQ)) {
		siw_qp_info(qp, "modify_qp: the send queue holds %u WRs; it "
			    "resizes empty", qp->sq_count);
		return -EBUSY;
	}
	if (sq) {
		sring = calloc(sq, sizeof(*sring));
		if (qp->inline_buf)
			ibuf = malloc((size_t)sq * SIW_MAX_INLINE);
		if (!sring || (qp->inline_buf && !ibuf))
			goto nomem;
	}
	if (rq) {
		rring = calloc(rq, sizeof(*rring));
		if (!rring)
			goto nomem;
	}
	if (sq) {
		free(qp->sq);
		free(qp->inline_buf);
		qp->sq = sring;
		qp->inline_buf = ibuf;
		qp->sq_size = sq;
		qp->sq_head = qp->sq_tx = 0;
		qp->cap.max_send_wr = sq;
	}
	if (rq) {
		for (i = 0; i < qp->rq_count; i++)
			rring[i] = qp->rq[(qp->rq_head + i) % qp->rq_size];
		free(qp->rq);
		qp->rq = rring;
		qp->rq_size = rq;
		qp->rq_head = 0;
		qp->cap.max_recv_wr = rq;
	}
	siw_qp_dbg(qp, "resized: sq %u rq %u", qp->sq_size, qp->rq_size);
	return 0;
nomem:
	free(sring);
	free(ibuf);
	free(rring);
	return -ENOMEM;
}

/* post_recv takes only rq_lock: a resize holds it throughout. */
static int qp_resize(struct siw_qp *qp, const struct rnicpi_qp_cap *cap)
{
	int rc;

	pthread_mutex_lock(&qp->rq_lock);
	rc = qp_resize_locked(qp, cap);
	pthread_mutex_unlock(&qp->rq_lock);
	return rc;
}

int siw_modify_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		  unsigned int mask)
{
	struct siw_qp *qp = to_siw_qp(q);
	int rc = 0;

	pthread_mutex_lock(&qp->lock);
	if (mask & RNICPI_QP_CAP) {
		rc = qp_resize(qp, &attr->cap);
		if (rc)
			goto out;
	}
	if (mask & RNICPI_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags &
			     (RNICPI_ACCESS_REMOTE_WRITE |
			      RNICPI_ACCESS_REMOTE_READ);
	if (mask & (RNICPI_QP_MAX_QP_RD_ATOMIC |
		    RNICPI_QP_MAX_DEST_RD_ATOMIC)) {
		if (qp->state != RNICPI_QPS_IDLE) {
			siw_qp_info(qp, "modify_qp: IRD/ORD only in IDLE, "
				    "state is %s", rnicpi_qp_state_name(qp->state));
			rc = -EINVAL;
			goto out;
		}
		if ((mask & RNICPI_QP_MAX_QP_RD_ATOMIC) &&
		    (!attr->max_rd_atomic ||
		     attr->max_rd_atomic > SIW_MAX_ORD)) {
			siw_qp_info(qp, "modify_qp: ORD %u (1..%u)",
				    attr->max_rd_atomic, SIW_MAX_ORD);
			rc = -EINVAL;
			goto out;
		}
		if ((mask & RNICPI_QP_MAX_DEST_RD_ATOMIC) &&
		    (!attr->max_dest_rd_atomic ||
		     attr->max_dest_rd_atomic > SIW_MAX_IRD)) {
			siw_qp_info(qp, "modify_qp: IRD %u (1..%u)",
				    attr->max_dest_rd_atomic, SIW_MAX_IRD);
			rc = -EINVAL;
			goto out;
		}
		if (mask & RNICPI_QP_MAX_QP_RD_ATOMIC)
			qp->ord = attr->max_rd_atomic;
		if (mask & RNICPI_QP_MAX_DEST_RD_ATOMIC)
			qp->ird = attr->max_dest_rd_atomic;
	}
	if (!(mask & RNICPI_QP_STATE))
		goto out;

	switch (attr->qp_state) {
	case RNICPI_QPS_ERR:
		if (qp->state == RNICPI_QPS_ERR && qp->fd < 0)
			break;
		/* Abortive close: flush, reset the stream. */
		if (qp->fd >= 0) {
			bool was_connected = qp->connected;

			siw_qp_to_error(qp);
			siw_qp_socket_close(qp, true);
			if (was_connected && !qp->disc_reported) {
				struct rnicpi_conn_event ev = {
					.type = RNICPI_CONN_DISCONNECTED,
					.status = -ECONNABORTED,
					.qp = &qp->base,
				};

				qp->disc_reported = true;
				siw_dev_queue_conn(qp->dev, &ev);
			}
		} else {
			siw_qp_to_error(qp);
		}
		break;
	case RNICPI_QPS_CLOSING:
		if (qp->state == RNICPI_QPS_CLOSING)
			break;
		if (qp->state != RNICPI_QPS_RTS) {
			siw_qp_info(qp, "modify_qp: %s -> CLOSING not allowed",
				    rnicpi_qp_state_name(qp->state));
			rc = -EINVAL;
			break;
		}
		qp->state = RNICPI_QPS_CLOSING;
		qp->closing = true;
		/* Finish what is queued, then FIN (siw_qp_tx). */
		siw_qp_tx(qp);
		break;
	case RNICPI_QPS_IDLE:
		if (qp->state == RNICPI_QPS_IDLE)
			break;
		if (qp->state != RNICPI_QPS_ERR || qp->fd >= 0) {
			siw_qp_info(qp, "modify_qp: %s -> IDLE not allowed%s",
				    rnicpi_qp_state_name(qp->state),
				    qp->fd >= 0 ? " (stream still open)" : "");
			rc = -EINVAL;
			break;
		}
		qp_reset(qp);
		qp->state = RNICPI_QPS_IDLE;
		break;
	default:
		if (attr->qp_state == qp->state)
			break;
		siw_qp_info(qp, "modify_qp: %s -> %s not allowed (iWARP enters "
			    "RTS through the connection hooks)",
			    rnicpi_qp_state_name(qp->state),
			    rnicpi_qp_state_name(attr->qp_state));
		rc = -EINVAL;
		break;
	}
out:
	siw_qp_unlock(qp);
	return rc;
}

int siw_query_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		 unsigned int mask, struct rnicpi_qp_init_attr *init)
{
	struct siw_qp *qp = to_siw_qp(q);

	pthread_mutex_lock(&qp->lock);
	if (attr) {
		memset(attr, 0, sizeof(*attr));
		attr->qp_state = attr->cur_qp_state = qp->state;
		attr->qp_access_flags = qp->access;
		attr->cap = qp->cap;
		attr->max_rd_atomic = (uint8_t)qp->ord;
		attr->max_dest_rd_atomic = (uint8_t)qp->ird;
		attr->port_num = 1;
	}
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_type = RNICPI_QPT_RC;
		init->send_cq = &qp->scq->base;
		init->recv_cq = &qp->rcq->base;
		init->srq = qp->srq ? &qp->srq->base : NULL;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
		init->port_num = 1;
	}
	pthread_mutex_unlock(&qp->lock);
	return 0;
}

int siw_destroy_qp(struct rnicpi_qp *q)
{
	struct siw_qp *qp = to_siw_qp(q);
	struct siw_device *dev = qp->dev;

	pthread_mutex_lock(&qp->lock);
	qp->destroyed = true;
	if (qp->fd >= 0)
		siw_qp_socket_close(qp, true);
	if (qp->state != RNICPI_QPS_ERR)
		siw_qp_to_error(qp);
	siw_tx_release(qp);
	siw_tx_zc_flush(qp);
	siw_rx_release(qp);
	siw_qp_set_parked(qp, false);
	pthread_mutex_unlock(&qp->lock);
	siw_qp_cq_detach(qp);
	siw_dev_timed_del(dev, &qp->timed);
	siw_dev_timed_del(dev, &qp->read_timed);
	/* Deliver what was queued before (completions-related CQ events
	 * and so on), then make sure nothing left names this QP. */
	siw_dev_purge_events(dev, qp);
	siw_dev_deliver(dev);
	siw_dev_quiesce(dev);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	atomic_fetch_sub(&dev->n_qp, 1);
	siw_qp_dbg(qp, "destroyed");
	siw_dev_defer_free(dev, &qp->item);
	return 0;
}

static bool opcode_supported(enum rnicpi_wr_opcode op)
{
	switch (op) {
	case RNICPI_WR_RDMA_WRITE:
	case RNICPI_WR_SEND:
	case RNICPI_WR_SEND_WITH_INV:
	case RNICPI_WR_RDMA_READ:
	case RNICPI_WR_LOCAL_INV:
	case RNICPI_WR_BIND_MW:
	case RNICPI_WR_REG_MR:
		return true;
	default:
		return false;
	}
}

/* Like IBA 10.8.1.1 (and RDMA verbs for the Error state): a WR posted to
 * a QP in error is accepted and completes at once with a flush, whether
 * signalled or not; the send queue is empty then, so order holds. Only a
 * WR the QP could never take is refused: 0 or -EINVAL with *@bad. */
static int flush_posted_sends(struct siw_qp *qp,
			      const struct rnicpi_send_wr *wr,
			      const struct rnicpi_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct rnicpi_wc wc = {
			.wr_id = wr->wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.qp_num = qp->base.qp_num,
		};

		if (!opcode_supported(wr->opcode) ||
		    wr->num_sge > qp->cap.max_send_sge) {
			siw_qp_info(qp, "post_send in %s: opcode %d with %u "
				    "SGEs refused",
				    rnicpi_qp_state_name(qp->state), wr->opcode,
				    wr->num_sge);
			*bad = wr;
			return -EINVAL;
		}
		wc.opcode = siw_wc_opcode(wr->opcode);
		siw_cq_push(qp->scq, &wc, false);
	}
	*bad = NULL;
	return 0;
}

/* Whether a WR of @len bytes can be part of a burst (burst_run). */
static bool burst_may_start(const struct siw_device *dev, uint64_t len)
{
	return dev->opts.tx_burst_ns && len <= dev->opts.tx_pack;
}

/* What the next post compares with: a consumer that polled a CQ of the
 * QP or had data arrive on it since is answering, not streaming. */
static uint64_t burst_polls(const struct siw_qp *qp)
{
	return atomic_load_explicit(&qp->scq->polls, memory_order_relaxed) +
	       atomic_load_explicit(&qp->rcq->polls, memory_order_relaxed);
}

/*
 * A consumer that posts small WRs back to back is in a burst: three or
 * more (SIW_BURST_RUN), each posted within tx_burst_ns of the return of
 * the one before, with no poll of the QP's CQs and nothing received on
 * the QP in between. From the third on, a WR waits in the send queue with
 * EPOLLOUT armed, and the progress thread (woken at once: the socket has
 * room) or the consumer's next poll of the CQ (poll_tx) writes what has
 * gathered by then with one sendmsg() (the pack, option tx_pack), where
 * each WR sent from here would cost one. Written before post_send
 * returns, as ever: a WR that answers something (a ping-pong over
 * 127.0.0.1 posts its next message about 1 us after the last one
 * returned: the reply came in meanwhile), one after a pause, and the
 * first two of a run (a Write and the Send that tells of it;
 * hostrdma-perf's send_lat posts a credit Write before every fifth
 * reply, and holding the reply back cost 1-3 us on average there).
 * Returns whether @qp's newest WR waits.
 */
static bool burst_run(struct siw_qp *qp, uint64_t len, bool may_wait)
{
	const struct siw_device *dev = qp->dev;
	uint64_t polls = burst_polls(qp);
	/* The clock last: read only when everything else says "rapid" */
	bool rapid = burst_may_start(dev, len) &&
		     qp->rx_fpdus == qp->tx_post_rx &&
		     polls == qp->tx_post_polls &&
		     rnicpi_now_ns() - qp->tx_post_ns < dev->opts.tx_burst_ns;

	qp->tx_run = rapid ? qp->tx_run + 1 : 1;
	qp->tx_post_polls = polls;
	qp->tx_post_rx = qp->rx_fpdus;
	return may_wait && rapid && qp->tx_run >= SIW_BURST_RUN &&
	       dev->thread_running && qp->sq_count < qp->sq_size;
}

int siw_post_send(struct rnicpi_qp *q, const struct rnicpi_send_wr *wr,
		  const struct rnicpi_send_wr **bad)
{
	struct siw_qp *qp = to_siw_qp(q);
	uint64_t last_len = UINT64_MAX, now = 0;
	bool more = false;
	int rc = 0;

	pthread_mutex_lock(&qp->lock);
	if (qp->state == RNICPI_QPS_ERR || qp->state == RNICPI_QPS_TERMINATE) {
		rc = flush_posted_sends(qp, wr, &wr);
		goto out;
	}
	if (qp->state != RNICPI_QPS_RTS) {
		siw_qp_dbg(qp, "post_send in state %s",
			   rnicpi_qp_state_name(qp->state));
		rc = qp->state == RNICPI_QPS_IDLE ? -ENOTCONN : -EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint32_t idx;
		struct siw_wqe *w;
		uint64_t total = 0;
		uint32_t i;

		if (!opcode_supported(wr->opcode)) {
			siw_qp_info(qp, "post_send: opcode %d not supported "
				    "by iWARP", wr->opcode);
			rc = -EINVAL;
			break;
		}
		if (wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			siw_qp_info(qp, "post_send: %u SGEs (max %u)",
				    wr->num_sge, qp->cap.max_send_sge);
			rc = -EINVAL;
			break;
		}
		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > (1u << 31)) {
			siw_qp_info(qp, "post_send: %llu bytes (max 2 GiB)",
				    (unsigned long long)total);
			rc = -EINVAL;
			break;
		}
		if ((wr->send_flags & RNICPI_SEND_INLINE) &&
		    (total > qp->cap.max_inline_data ||
		     (wr->opcode != RNICPI_WR_SEND &&
		      wr->opcode != RNICPI_WR_SEND_WITH_INV &&
		      wr->opcode != RNICPI_WR_RDMA_WRITE))) {
			siw_qp_info(qp, "post_send: inline %llu bytes (max %u) "
				    "opcode %d",
				    (unsigned long long)total,
				    qp->cap.max_inline_data, wr->opcode);
			rc = -EINVAL;
			break;
		}
		if (wr->opcode == RNICPI_WR_RDMA_READ && !qp->ord) {
			siw_qp_info(qp, "post_send: RDMA Read with ORD 0 (the "
				    "peer's IRD is 0)");
			rc = -EINVAL;
			break;
		}
		if (qp->sq_count == qp->sq_size) {
			rc = -ENOMEM;
			break;
		}
		idx = (qp->sq_head + qp->sq_count) % qp->sq_size;
		w = &qp->sq[idx];
		memset(w, 0, offsetof(struct siw_wqe, sge));
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->flags = wr->send_flags;
		if (qp->sq_sig_all)
			w->flags |= RNICPI_SEND_SIGNALED;
		w->num_sge = wr->num_sge;
		if (wr->num_sge) /* sg_list may be NULL then */
			memcpy(w->sge, wr->sg_list,
			       wr->num_sge * sizeof(w->sge[0]));
		w->total_len = total;
		w->rkey = wr->wr.rdma.rkey;
		w->raddr = wr->wr.rdma.remote_addr;
		w->inv_stag = wr->ex.invalidate_rkey;
		w->bind_mw = NULL;
		if (wr->opcode == RNICPI_WR_BIND_MW) {
			if (!wr->wr.bind_mw.mw) {
				siw_qp_info(qp, "post_send: BIND_MW without "
					    "a window");
				rc = -EINVAL;
				break;
			}
			w->bind_mw = wr->wr.bind_mw.mw;
			w->bind_rkey = wr->wr.bind_mw.rkey;
			w->bind = wr->wr.bind_mw.bind_info;
			w->num_sge = 0;
			w->total_len = 0;
		}
		w->reg_mr = NULL;
		if (wr->opcode == RNICPI_WR_REG_MR) {
			if (!wr->wr.reg_mr.mr ||
			    wr->wr.reg_mr.mr->pd != &qp->pd->base) {
				siw_qp_info(qp, "post_send: REG_MR without "
					    "a region of this QP's PD");
				rc = -EINVAL;
				break;
			}
			w->reg_mr = container_of(wr->wr.reg_mr.mr,
						 struct siw_mr_handle,
						 base)->mr;
			siw_mr_get(w->reg_mr);
			w->reg_addr = wr->wr.reg_mr.addr;
			w->reg_length = wr->wr.reg_mr.length;
			w->reg_iova = wr->wr.reg_mr.iova;
			w->reg_access = wr->wr.reg_mr.access;
			w->reg_key = wr->wr.reg_mr.key;
			w->num_sge = 0;
			w->total_len = 0;
		}
		w->inline_data = NULL;
		w->state = SIW_WQE_QUEUED;
		if (wr->send_flags & RNICPI_SEND_INLINE) {
			uint8_t *p = qp->inline_buf +
				     (size_t)idx * SIW_MAX_INLINE;

			w->inline_data = p;
			for (i = 0; i < wr->num_sge; i++) {
				memcpy(p, (void *)(uintptr_t)
				       wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				p += wr->sg_list[i].length;
			}
		}
		qp->sq_count++;
		qp->sq_unstarted++;
		more = (wr->send_flags & RNICPI_SEND_MORE) != 0;
		last_len = w->total_len;
	}
	/* The send queue was idle: transmit from this thread, unless more
	 * WRs follow at once (RNICPI_SEND_MORE) and have room to queue:
	 * they start together with the next WR posted without the flag,
	 * or when the consumer polls the CQ (siw_cq_progress). Small WRs
	 * posted in a burst wait too, for the progress thread or that poll
	 * (burst_run). */
	if (rc || !more || qp->sq_count == qp->sq_size) {
		bool idle = qp->tx.kind == SIW_TX_IDLE && !qp->tx.want_out;
		bool burst = !rc && burst_run(qp, last_len, idle);

		if (burst)
			siw_qp_tx_kick(qp);
		else if (idle)
			siw_qp_tx(qp);
	}
	/* The return mark burst_run measures from, needed only where a
	 * burst can follow. After a large WR the mark stays that of an
	 * earlier small one: the next gap measures longer, never shorter
	 * (and the large WR has already restarted the run). */
	if (burst_may_start(qp->dev, last_len))
		now = qp->tx_post_ns = rnicpi_now_ns();
out:
	siw_qp_unlock_at(qp, now);
	if (rc && bad)
		*bad = wr;
	return rc;
}

static void flush_rqe(struct siw_qp *qp, uint64_t wr_id)
{
	struct rnicpi_wc wc = {
		.wr_id = wr_id,
		.status = RNICPI_WC_WR_FLUSH_ERR,
		.opcode = RNICPI_WC_RECV,
		.qp_num = qp->base.qp_num,
	};

	siw_cq_push(qp->rcq, &wc, false);
}

int siw_post_recv(struct rnicpi_qp *q, const struct rnicpi_recv_wr *wr,
		  const struct rnicpi_recv_wr **bad)
{
	struct siw_qp *qp = to_siw_qp(q);
	int rc = 0;

	if (qp->srq) {
		siw_qp_info(qp, "post_recv on a QP with an SRQ");
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	/* The RQ's own lock: a receive pass holds the QP's lock while it
	 * reads up to SIW_RX_BUDGET FPDUs (a millisecond at 1 MiB), and a
	 * consumer that reposts each receive as it completes waited that
	 * long on it, asleep in futex() instead of in its poll. */
	pthread_mutex_lock(&qp->rq_lock);
	for (; wr; wr = wr->next) {
		struct siw_rqe *r;

		if (wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			siw_qp_info(qp, "post_recv: %u SGEs (max %u)",
				    wr->num_sge, qp->cap.max_recv_sge);
			rc = -EINVAL;
			break;
		}
		/* Like IBA 10.8.1.1: WRs posted to a QP in error flush. */
		if (qp->rq_closed) {
			flush_rqe(qp, wr->wr_id);
			continue;
		}
		if (qp->rq_count == qp->rq_size) {
			rc = -ENOMEM;
			break;
		}
		r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_size];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge) /* sg_list may be NULL then */
			memcpy(r->sge, wr->sg_list,
			       wr->num_sge * sizeof(r->sge[0]));
		qp->rq_count++;
	}
	pthread_mutex_unlock(&qp->rq_lock);
	/* flushed receives' completions */
	siw_dev_deliver(qp->dev);
	if (rc && bad)
		*bad = wr;
	return rc;
}
