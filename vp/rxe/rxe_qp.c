/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE queue pairs: creation, the IBA state machine (IBA 10.3.1)
 * with the attributes each transition requires, error flushing, events.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vp/rxe/rxe.h"

uint32_t rxe_rnr_timer_usec(unsigned int code)
{
	/* IBA 9.7.5.2.8 table 45, in microseconds. */
	static const uint32_t usec[32] = {
		655360, 10,    20,    30,    40,     60,     80,     120,
		160,    240,   320,   480,   640,    960,    1280,   1920,
		2560,   3840,  5120,  7680,  10240,  15360,  20480,  30720,
		40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return usec[code & 31];
}

/* ------------------------------------------------------------------ */
/* References, locking, events                                        */
/* ------------------------------------------------------------------ */

void rxe_qp_get(struct rxe_qp *qp)
{
	atomic_fetch_add(&qp->ref, 1);
}

void rxe_qp_put(struct rxe_qp *qp)
{
	atomic_fetch_sub(&qp->ref, 1);
}

struct rxe_qp *rxe_qp_lookup(struct rxe_dev *dev, uint32_t qpn)
{
	struct rxe_qp *qp;

	pthread_mutex_lock(&dev->lock);
	qp = g_hash_table_lookup(dev->qps, GUINT_TO_POINTER(qpn));
	if (qp)
		rxe_qp_get(qp);
	pthread_mutex_unlock(&dev->lock);
	return qp;
}

void rxe_qp_lock(struct rxe_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
}

void rxe_qp_unlock(struct rxe_qp *qp)
{
	struct rxe_deferred ev[RXE_MAX_DEFERRED];
	const struct rnicpi_core_ops *core = qp->dev->base.core;
	uint32_t i, n = qp->n_deferred;

	/* An application thread reading the sockets from poll_cq (option
	 * poll_rx) may hold locks of the layers above: its events stay
	 * queued, and the progress thread delivers them when it next
	 * unlocks the QP (run_pending). */
	if (n && rxe_net_on_poller(qp->dev)) {
		rxe_schedule(qp);
		pthread_mutex_unlock(&qp->lock);
		return;
	}
	memcpy(ev, qp->deferred, n * sizeof(ev[0]));
	qp->n_deferred = 0;
	pthread_mutex_unlock(&qp->lock);
	for (i = 0; i < n; i++)
		if (core && core->async_event)
			core->async_event(&qp->dev->base, &ev[i].ev);
}

void rxe_qp_event(struct rxe_qp *qp, enum rnicpi_event_type type, int status)
{
	struct rnicpi_async_event *ev;

	if (qp->n_deferred >= RXE_MAX_DEFERRED)
		return;
	ev = &qp->deferred[qp->n_deferred++].ev;
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->element.qp = &qp->base;
	ev->status = status;
}

void rxe_qp_event_nak(struct rxe_qp *qp, enum rnicpi_event_type type,
		      uint8_t nak_code, enum rnicpi_iba_cause cause,
		      bool received)
{
	struct rnicpi_async_event *ev;

	if (qp->n_deferred >= RXE_MAX_DEFERRED)
		return;
	rxe_qp_event(qp, type, 0);
	ev = &qp->deferred[qp->n_deferred - 1].ev;
	ev->term_layer = RNICPI_TERM_LAYER_IBA;
	ev->term_etype = nak_code;
	ev->term_ecode = (uint8_t)cause;
	ev->term_remote = received;
}

void rxe_cq_post(struct rxe_qp *qp, struct rxe_cq *cq,
		 const struct rnicpi_wc *wc, bool solicited)
{
	struct rnicpi_async_event *ev;

	if (rnicpi_cq_ring_push(&cq->ring, wc, solicited) == 0)
		return;
	/* IBA 11.4.2.1: a CQ overrun is a CQ error, the QP goes to ERR. */
	rxe_qp_warn(qp, "CQ overrun (capacity %u)", cq->base.cqe);
	if (qp->n_deferred < RXE_MAX_DEFERRED) {
		ev = &qp->deferred[qp->n_deferred++].ev;
		memset(ev, 0, sizeof(*ev));
		ev->type = RNICPI_EVENT_CQ_ERR;
		ev->element.cq = &cq->base;
		ev->status = -ENOSPC;
	}
}

static void flush_send(struct rxe_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct rxe_send_wqe *w = sq_wqe(qp, qp->sq_head);
		struct rnicpi_wc wc = {
			.wr_id = w->wr_id,
			.status = w->state == WQE_ERROR
					  ? w->status
					  : RNICPI_WC_WR_FLUSH_ERR,
			.qp_num = qp->base.qp_num,
		};

		rxe_cq_post(qp, qp->scq, &wc, false);
		if (w->reg_mr) { /* a REG_MR that never ran */
			rxe_mr_put(w->reg_mr);
			w->reg_mr = NULL;
		}
		qp->sq_head++;
	}
	qp->req.wqe = qp->sq_head;
	qp->req.offset = 0;
	qp->req.rd_atomic = 0;
}

static void flush_recv(struct rxe_qp *qp)
{
	if (qp->resp.have_rwqe) {
		struct rnicpi_wc wc = {
			.wr_id = qp->resp.rwqe.wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		rxe_cq_post(qp, qp->rcq, &wc, false);
		qp->resp.have_rwqe = false;
	}
	if (qp->srq)
		return; /* WQEs stay on the SRQ for the other QPs */
	while (qp->rq.head != qp->rq.tail) {
		struct rxe_recv_wqe *w = &qp->rq.wqe[qp->rq.head % qp->rq.size];
		struct rnicpi_wc wc = {
			.wr_id = w->wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		rxe_cq_post(qp, qp->rcq, &wc, false);
		qp->rq.head++;
	}
}

void rxe_qp_error(struct rxe_qp *qp)
{
	/* Whoever ends the QP (a modify to ERR or RESET, a destroy, an
	 * error found by the completer or the responder), a coalesced ACK
	 * still owed goes out first: a poll may have left it for the
	 * consumer's next move (rxe_net_poll_rx), and without it the
	 * peer's last message, delivered and completed here, ends in a
	 * retry error there. Nothing is owed in ERR or RESET. */
	rxe_resp_send_ack(qp);
	if (qp->state != RNICPI_QPS_ERR)
		rxe_qp_dbg(qp, "%s -> ERR", rnicpi_qp_state_name(qp->state));
	qp->state = RNICPI_QPS_ERR;
	rxe_comp_drain(qp);
	flush_send(qp);
	flush_recv(qp);
	qp->resp.read.active = false;
	rxe_timer_set(qp, 0);
	qp->comp.timer = RXE_TIMER_NONE;
}

/* ------------------------------------------------------------------ */
/* Create / destroy                                                   */
/* ------------------------------------------------------------------ */

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int rxe_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		  struct rnicpi_qp **out)
{
	struct rxe_dev *dev = to_rxe_dev(pd->device);
	struct rnicpi_qp_cap *cap = &attr->cap;
	struct rxe_qp *qp;
	uint32_t i, qpn;
	int err;

	if (attr->qp_type != RNICPI_QPT_RC && attr->qp_type != RNICPI_QPT_UD &&
	    attr->qp_type != RNICPI_QPT_GSI) {
		rxe_dev_warn(dev, "create_qp: QP type %d not supported",
			     attr->qp_type);
		return -EOPNOTSUPP;
	}
	if (!attr->send_cq || !attr->recv_cq) {
		rxe_dev_warn(dev, "create_qp: send and receive CQ needed");
		return -EINVAL;
	}
	if (cap->max_send_wr > RXE_MAX_QP_WR ||
	    cap->max_recv_wr > RXE_MAX_QP_WR ||
	    cap->max_send_sge > RXE_MAX_SGE ||
	    cap->max_recv_sge > RXE_MAX_SGE ||
	    cap->max_inline_data > RXE_MAX_INLINE) {
		rxe_dev_warn(dev, "create_qp: caps over the limits (wr %u/%u "
			     "of %u, sge %u/%u of %u, inline %u of %u)",
			     cap->max_send_wr, cap->max_recv_wr, RXE_MAX_QP_WR,
			     cap->max_send_sge, cap->max_recv_sge, RXE_MAX_SGE,
			     cap->max_inline_data, RXE_MAX_INLINE);
		return -EINVAL;
	}

	qp = g_new0(struct rxe_qp, 1);
	qp->dev = dev;
	atomic_init(&qp->ref, 1);
	pthread_mutex_init(&qp->lock, NULL);
	qp->type = attr->qp_type;
	qp->state = RNICPI_QPS_RESET;
	qp->scq = to_rxe_cq(attr->send_cq);
	qp->rcq = to_rxe_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_rxe_srq(attr->srq) : NULL;
	qp->sq_sig_all = attr->sq_sig_all;
	qp->base.pd = pd;
	qp->tx_fd[0] = qp->tx_fd[1] = -1;
	qp->tx_gid[0] = qp->tx_gid[1] = -1;
	qp->path_mtu = dev->active_mtu;
	qp->mtu = rxe_mtu_bytes(qp->path_mtu);

	cap->max_send_wr = cap->max_send_wr ? cap->max_send_wr : 1;
	cap->max_send_sge = cap->max_send_sge ? cap->max_send_sge : 1;
	cap->max_recv_sge = cap->max_recv_sge ? cap->max_recv_sge : 1;
	if (qp->srq)
		cap->max_recv_wr = 0;
	qp->sq_size = roundup_pow2(cap->max_send_wr);
	cap->max_send_wr = qp->sq_size;
	qp->sq = g_new0(struct rxe_send_wqe, qp->sq_size);
	if (cap->max_inline_data)
		for (i = 0; i < qp->sq_size; i++)
			qp->sq[i].inline_data = g_malloc(cap->max_inline_data);
	if (!qp->srq) {
		qp->rq.size = cap->max_recv_wr ? cap->max_recv_wr : 1;
		cap->max_recv_wr = qp->rq.size;
		qp->rq.max_sge = cap->max_recv_sge;
		qp->rq.wqe = g_new0(struct rxe_recv_wqe, qp->rq.size);
	}
	qp->cap = *cap;
	rxe_timer_init(qp);

	pthread_mutex_lock(&dev->lock);
	if (attr->qp_type == RNICPI_QPT_GSI) {
		if (g_hash_table_contains(dev->qps, GUINT_TO_POINTER(1))) {
			pthread_mutex_unlock(&dev->lock);
			rxe_dev_warn(dev, "create_qp: the GSI QP exists");
			err = -EBUSY;
			goto err_free;
		}
		qpn = IB_GSI_QPN;
	} else {
		if (g_hash_table_size(dev->qps) >= RXE_MAX_QP) {
			pthread_mutex_unlock(&dev->lock);
			rxe_dev_warn(dev, "create_qp: the device's limit of "
				     "%u QPs is reached", RXE_MAX_QP);
			err = -ENOSPC;
			goto err_free;
		}
		/* Embedded: every QPN past the low ones. Through the host
		 * service: only the process's range (the datagrams of the
		 * others go to other processes). */
		uint32_t lo = dev->qpn_count ? dev->qpn_base : 0x11;
		uint32_t end = dev->qpn_count ? dev->qpn_base + dev->qpn_count
					      : IB_QPN_MASK + 1;

		if (g_hash_table_size(dev->qps) >= end - lo) {
			pthread_mutex_unlock(&dev->lock);
			rxe_dev_warn(dev, "create_qp: the %u QPNs of this "
				     "process's range are in use", end - lo);
			err = -ENOSPC;
			goto err_free;
		}
		if (dev->next_qpn < lo || dev->next_qpn >= end)
			dev->next_qpn = lo;
		do {
			qpn = dev->next_qpn;
			dev->next_qpn = dev->next_qpn + 1 >= end
				? lo : dev->next_qpn + 1;
		} while (
			g_hash_table_contains(dev->qps, GUINT_TO_POINTER(qpn)));
	}
	qp->base.qp_num = qpn;
	g_hash_table_insert(dev->qps, GUINT_TO_POINTER(qpn), qp);
	pthread_mutex_unlock(&dev->lock);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	rxe_qp_dbg(qp, "created, type %d, SQ %u RQ %u", qp->type, qp->sq_size,
		   qp->rq.size);
	*out = &qp->base;
	return 0;

err_free:
	for (i = 0; i < qp->sq_size; i++)
		g_free(qp->sq[i].inline_data);
	g_free(qp->sq);
	g_free(qp->rq.wqe);
	pthread_mutex_destroy(&qp->lock);
	g_free(qp);
	return err;
}

int rxe_destroy_qp(struct rnicpi_qp *q)
{
	struct rxe_qp *qp = to_rxe_qp(q);
	struct rxe_dev *dev = qp->dev;
	uint32_t i;

	pthread_mutex_lock(&dev->lock);
	g_hash_table_remove(dev->qps, GUINT_TO_POINTER(q->qp_num));
	pthread_mutex_unlock(&dev->lock);
	/* Wait until the progress thread dropped the references it took
	 * through lookups; the table no longer hands out new ones. Each is
	 * held for one packet's work: one still held after 2 s is a bug,
	 * said once rather than waited on in silence. */
	for (unsigned int naps = 0; atomic_load(&qp->ref) > 1;) {
		g_usleep(100);
		if (++naps == 20000)
			rxe_dev_warn(dev, "destroy_qp: QP %u still in use "
				     "after 2 s", q->qp_num);
	}

	rxe_qp_lock(qp);
	if (qp->state != RNICPI_QPS_RESET)
		rxe_qp_error(qp);
	rxe_timer_set(qp, 0);
	rxe_qp_unlock(qp);
	rxe_timer_fini(qp);
	for (i = 0; i < 2; i++)
		if (qp->tx_fd[i] >= 0)
			close(qp->tx_fd[i]);
	if (qp->tx_retired) {
		for (i = 0; i < qp->tx_retired->len; i++)
			close(g_array_index(qp->tx_retired, int, i));
		g_array_free(qp->tx_retired, TRUE);
	}
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	for (i = 0; i < qp->sq_size; i++)
		g_free(qp->sq[i].inline_data);
	g_free(qp->sq);
	g_free(qp->rq.wqe);
	g_free(qp->resp.res);
	pthread_mutex_destroy(&qp->lock);
	g_free(qp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Modify: IBA 10.3.1 transitions and 11.2.4.2 attribute rules        */
/* ------------------------------------------------------------------ */

#define M(x) RNICPI_QP_##x
#define NQPS (RNICPI_QPS_ERR + 1)

struct transition {
	bool valid;
	unsigned int req[3]; /* by QP class: 0 RC, 1 UD, 2 GSI */
	unsigned int opt[3];
};

static const struct transition transitions[NQPS][NQPS] = {
	[RNICPI_QPS_RESET] = {
		[RNICPI_QPS_RESET] = { .valid = true },
		[RNICPI_QPS_INIT] = {
			.valid = true,
			.req = { M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				 M(PKEY_INDEX) | M(PORT) | M(QKEY),
				 M(QKEY) },
			.opt = { 0, 0, M(PKEY_INDEX) | M(PORT) },
		},
	},
	[RNICPI_QPS_INIT] = {
		[RNICPI_QPS_INIT] = {
			.valid = true,
			.opt = { M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
				 M(PKEY_INDEX) | M(PORT) | M(QKEY),
				 M(PKEY_INDEX) | M(QKEY) },
		},
		[RNICPI_QPS_RTR] = {
			.valid = true,
			.req = { M(AV) | M(PATH_MTU) | M(DEST_QPN) |
				 M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) |
				 M(MIN_RNR_TIMER), 0, 0 },
			.opt = { M(PKEY_INDEX) | M(ACCESS_FLAGS),
				 M(PKEY_INDEX) | M(QKEY),
				 M(PKEY_INDEX) | M(QKEY) },
		},
	},
	[RNICPI_QPS_RTR] = {
		[RNICPI_QPS_RTS] = {
			.valid = true,
			.req = { M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) |
				 M(RNR_RETRY) | M(MAX_QP_RD_ATOMIC),
				 M(SQ_PSN), M(SQ_PSN) },
			.opt = { M(CUR_STATE) | M(ACCESS_FLAGS) |
				 M(MIN_RNR_TIMER),
				 M(CUR_STATE) | M(QKEY),
				 M(CUR_STATE) | M(QKEY) },
		},
	},
	[RNICPI_QPS_RTS] = {
		[RNICPI_QPS_RTS] = {
			.valid = true,
			.opt = { M(CUR_STATE) | M(ACCESS_FLAGS) |
				 M(MIN_RNR_TIMER),
				 M(CUR_STATE) | M(QKEY),
				 M(CUR_STATE) | M(QKEY) },
		},
		[RNICPI_QPS_SQD] = { .valid = true },
	},
	[RNICPI_QPS_SQD] = {
		[RNICPI_QPS_RTS] = {
			.valid = true,
			.opt = { M(CUR_STATE) | M(ACCESS_FLAGS) |
				 M(MIN_RNR_TIMER),
				 M(CUR_STATE) | M(QKEY),
				 M(CUR_STATE) | M(QKEY) },
		},
		[RNICPI_QPS_SQD] = {
			.valid = true,
			.opt = { M(PKEY_INDEX) | M(AV) | M(ACCESS_FLAGS) |
				 M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
				 M(MAX_QP_RD_ATOMIC) |
				 M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER) |
				 M(PATH_MTU),
				 M(PKEY_INDEX) | M(QKEY),
				 M(PKEY_INDEX) | M(QKEY) },
		},
	},
	[RNICPI_QPS_SQE] = {
		[RNICPI_QPS_RTS] = {
			.valid = true,
			.opt = { M(CUR_STATE) | M(ACCESS_FLAGS),
				 M(CUR_STATE) | M(QKEY),
				 M(CUR_STATE) | M(QKEY) },
		},
	},
};

static int qp_class(const struct rxe_qp *qp)
{
	return qp->type == RNICPI_QPT_RC   ? 0
	       : qp->type == RNICPI_QPT_UD ? 1
					   : 2;
}

/* Like the kernel's ib_modify_qp_is_ok: legal transition, required
 * attributes present, nothing that transition cannot change. */
static int check_transition(struct rxe_qp *qp, enum rnicpi_qp_state cur,
			    enum rnicpi_qp_state next, unsigned int mask)
{
	const struct transition *t;
	unsigned int req, opt;
	int c = qp_class(qp);

	if ((unsigned int)cur >= NQPS || (unsigned int)next >= NQPS) {
		rxe_qp_warn(qp, "modify_qp: state %d -> %d not an IB state",
			    cur, next);
		return -EINVAL;
	}
	/* Every state may go to RESET or ERR. */
	if (next == RNICPI_QPS_RESET || next == RNICPI_QPS_ERR)
		return (mask & ~(M(STATE) | M(CUR_STATE))) ? -EINVAL : 0;
	t = &transitions[cur][next];
	if (!t->valid) {
		rxe_qp_warn(qp, "modify_qp: %s -> %s is not a legal "
			    "transition (IBA 10.3.1)", rnicpi_qp_state_name(cur),
			    rnicpi_qp_state_name(next));
		return -EINVAL;
	}
	req = t->req[c];
	opt = t->opt[c];
	if ((mask & req) != req) {
		rxe_qp_warn(qp, "modify_qp: %s -> %s needs attributes 0x%x, "
			    "got 0x%x", rnicpi_qp_state_name(cur),
			    rnicpi_qp_state_name(next), req, mask);
		return -EINVAL;
	}
	if (mask & ~(req | opt | M(STATE))) {
		rxe_qp_warn(qp, "modify_qp: %s -> %s cannot change attributes "
			    "0x%x", rnicpi_qp_state_name(cur),
			    rnicpi_qp_state_name(next),
			    mask & ~(req | opt | M(STATE)));
		return -EINVAL;
	}
	return 0;
}

static void qp_reset(struct rxe_qp *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->rq.head = qp->rq.tail = 0;
	g_free(qp->resp.res);
	memset(&qp->resp, 0, sizeof(qp->resp));
	rxe_timer_set(qp, 0);
}

/* RNICPI_QP_CAP: may the queues take these sizes (0 or the current size:
 * unchanged)? The send queue's is rounded up to a power of two, as
 * create_qp does. */
static int resize_check(struct rxe_qp *qp, const struct rnicpi_qp_cap *cap,
			uint32_t *sq, uint32_t *rq)
{
	*sq = cap->max_send_wr ? roundup_pow2(cap->max_send_wr) : 0;
	*rq = cap->max_recv_wr;
	if (cap->max_send_wr > RXE_MAX_QP_WR || *rq > RXE_MAX_QP_WR ||
	    (*rq && qp->srq) ||
	    (*sq && *sq < qp->sq_tail - qp->sq_head) ||
	    (*rq && *rq < qp->rq.tail - qp->rq.head)) {
		rxe_qp_warn(qp, "modify_qp: queues of %u send, %u receive "
			    "WRs (..%u; %u sends, %u receives queued%s)",
			    cap->max_send_wr, *rq, RXE_MAX_QP_WR,
			    qp->sq_tail - qp->sq_head,
			    qp->srq ? 0 : qp->rq.tail - qp->rq.head,
			    qp->srq ? ", SRQ" : "");
		return -EINVAL;
	}
	if (*sq == qp->sq_size)
		*sq = 0;
	if (*rq == qp->rq.size)
		*rq = 0;
	return 0;
}

/*
 * New rings for the queues whose sizes change, under qp->lock. Nothing
 * points into them: the requester, completer and flush name send WQEs by
 * their free-running counter, so each queued WQE moves to its counter's
 * slot in the new ring (inline buffer with it) and keeps its place and
 * its progress; queued receives keep their order.
 */
static void qp_resize(struct rxe_qp *qp, uint32_t sq, uint32_t rq)
{
	uint32_t i;

	if (sq) {
		struct rxe_send_wqe *ring = g_new0(struct rxe_send_wqe, sq);

		for (i = qp->sq_head; i != qp->sq_tail; i++) {
			struct rxe_send_wqe *w = sq_wqe(qp, i);

			ring[i % sq] = *w;
			w->inline_data = NULL;
		}
		for (i = 0; i < qp->sq_size; i++)
			g_free(qp->sq[i].inline_data);
		if (qp->cap.max_inline_data)
			for (i = 0; i < sq; i++)
				if (!ring[i].inline_data)
					ring[i].inline_data = g_malloc(
						qp->cap.max_inline_data);
		g_free(qp->sq);
		qp->sq = ring;
		qp->sq_size = sq;
		qp->cap.max_send_wr = sq;
	}
	if (rq) {
		struct rxe_recv_wqe *ring = g_new0(struct rxe_recv_wqe, rq);
		uint32_t held = qp->rq.tail - qp->rq.head;

		for (i = 0; i < held; i++)
			ring[i] = qp->rq.wqe[(qp->rq.head + i) % qp->rq.size];
		g_free(qp->rq.wqe);
		qp->rq.wqe = ring;
		qp->rq.size = rq;
		qp->rq.head = 0;
		qp->rq.tail = held;
		qp->cap.max_recv_wr = rq;
	}
	rxe_qp_dbg(qp, "resized: SQ %u RQ %u (%u sends, %u receives queued)",
		   qp->sq_size, qp->rq.size, qp->sq_tail - qp->sq_head,
		   qp->rq.tail - qp->rq.head);
}

int rxe_modify_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		  unsigned int mask)
{
	struct rxe_qp *qp = to_rxe_qp(q);
	enum rnicpi_qp_state cur, next;
	uint32_t new_sq = 0, new_rq = 0;
	struct rxe_av av;
	int err;

	rxe_qp_lock(qp);
	cur = (mask & M(CUR_STATE)) ? attr->cur_qp_state : qp->state;
	if ((mask & M(CUR_STATE)) && cur != qp->state) {
		rxe_qp_warn(qp, "modify_qp: current state is %s, not %s",
			    rnicpi_qp_state_name(qp->state),
			    rnicpi_qp_state_name(cur));
		err = -EINVAL;
		goto out;
	}
	next = (mask & M(STATE)) ? attr->qp_state : cur;
	/* The queues resize in any state (RNICPI_QP_CAP). */
	err = check_transition(qp, cur, next, mask & ~M(CAP));
	if (err)
		goto out;
	if ((mask & M(CAP)) &&
	    (err = resize_check(qp, &attr->cap, &new_sq, &new_rq)))
		goto out;

	/* Check the values before changing anything. */
	if ((mask & M(PKEY_INDEX)) && attr->pkey_index != 0) {
		rxe_qp_warn(qp, "modify_qp: P_Key index %u (table has 1)",
			    attr->pkey_index);
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(PORT)) && attr->port_num != 1) {
		rxe_qp_warn(qp, "modify_qp: port %u (only 1)", attr->port_num);
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(PATH_MTU)) && (attr->path_mtu < RNICPI_MTU_256 ||
				     attr->path_mtu > RNICPI_MTU_4096)) {
		rxe_qp_warn(qp, "modify_qp: path MTU code %d", attr->path_mtu);
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(MAX_QP_RD_ATOMIC)) &&
	    attr->max_rd_atomic > RXE_MAX_RD_ATOMIC) {
		rxe_qp_warn(qp, "modify_qp: ORD %u over %u",
			    attr->max_rd_atomic, RXE_MAX_RD_ATOMIC);
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(MAX_DEST_RD_ATOMIC)) &&
	    attr->max_dest_rd_atomic > RXE_MAX_RD_ATOMIC) {
		rxe_qp_warn(qp, "modify_qp: IRD %u over %u",
			    attr->max_dest_rd_atomic, RXE_MAX_RD_ATOMIC);
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(AV)) &&
	    (err = rxe_av_from_attr(qp->dev, &attr->ah_attr, &av)))
		goto out;
	if ((mask & M(RETRY_CNT)) && attr->retry_cnt > 7) {
		err = -EINVAL;
		goto out;
	}
	if ((mask & M(RNR_RETRY)) && attr->rnr_retry > 7) {
		err = -EINVAL;
		goto out;
	}

	if (mask & M(CAP))
		qp_resize(qp, new_sq, new_rq);
	if (mask & M(ACCESS_FLAGS))
		qp->access = attr->qp_access_flags;
	if (mask & M(PKEY_INDEX))
		qp->pkey_index = attr->pkey_index;
	if (mask & M(PORT))
		qp->port_num = attr->port_num;
	if (mask & M(QKEY))
		qp->qkey = attr->qkey;
	if (mask & M(AV)) {
		qp->av = av;
		qp->ah_attr = attr->ah_attr;
	}
	if (mask & M(PATH_MTU)) {
		enum rnicpi_mtu m = attr->path_mtu;

		/* The port's MTU bounds the path (IBA 11.2.4.2). */
		if (m > qp->dev->active_mtu) {
			rxe_qp_dbg(qp, "path MTU %u capped to the port's %u",
				   rxe_mtu_bytes(m),
				   rxe_mtu_bytes(qp->dev->active_mtu));
			m = qp->dev->active_mtu;
		}
		qp->path_mtu = m;
		qp->mtu = rxe_mtu_bytes(m);
	}
	if (mask & M(DEST_QPN))
		qp->dest_qpn = attr->dest_qp_num & IB_QPN_MASK;
	if (mask & M(RQ_PSN)) {
		qp->resp.psn = attr->rq_psn & IB_PSN_MASK;
		qp->resp.ack_psn = psn_add(qp->resp.psn, IB_PSN_MASK);
	}
	if (mask & M(MIN_RNR_TIMER))
		qp->min_rnr_timer = attr->min_rnr_timer & 31;
	if (mask & M(MAX_DEST_RD_ATOMIC)) {
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
		g_free(qp->resp.res);
		qp->resp.n_res = attr->max_dest_rd_atomic
					 ? attr->max_dest_rd_atomic : 1;
		qp->resp.res = g_new0(struct rxe_rd_res, qp->resp.n_res);
		qp->resp.res_next = 0;
	}
	if (mask & M(SQ_PSN)) {
		qp->req.psn = attr->sq_psn & IB_PSN_MASK;
		qp->comp.psn = qp->req.psn;
	}
	if (mask & M(TIMEOUT))
		qp->timeout = attr->timeout & 31;
	if (mask & M(RETRY_CNT))
		qp->retry_cnt = attr->retry_cnt;
	if (mask & M(RNR_RETRY))
		qp->rnr_retry = attr->rnr_retry;
	if (mask & M(MAX_QP_RD_ATOMIC))
		qp->max_rd_atomic = attr->max_rd_atomic;

	if (next != cur)
		rxe_qp_dbg(qp, "%s -> %s", rnicpi_qp_state_name(cur),
			   rnicpi_qp_state_name(next));
	/* Ending the QP sends a coalesced ACK still owed (rxe_qp_error):
	 * often for the peer's last Send, the message that led to the
	 * disconnect. */
	switch (next) {
	case RNICPI_QPS_RESET:
		if (cur != RNICPI_QPS_RESET && cur != RNICPI_QPS_ERR)
			rxe_qp_error(qp);
		qp_reset(qp);
		qp->state = next;
		break;
	case RNICPI_QPS_ERR:
		rxe_qp_error(qp);
		break;
	case RNICPI_QPS_RTS:
		qp->state = next;
		qp->sq_draining = false;
		qp->comp.retry_left = qp->retry_cnt;
		qp->comp.rnr_left = qp->rnr_retry;
		rxe_req_run(qp);
		break;
	case RNICPI_QPS_SQD:
		/* SQ drain (IBA 10.3.1.6): nothing new starts; with nothing
		 * outstanding the drain is complete at once. */
		qp->state = next;
		qp->sq_draining = qp->sq_head != qp->req.wqe;
		if (!qp->sq_draining)
			rxe_qp_event(qp, RNICPI_EVENT_SQ_DRAINED, 0);
		break;
	default:
		qp->state = next;
		break;
	}
out:
	rxe_qp_unlock(qp);
	return err;
}

int rxe_query_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		 unsigned int mask, struct rnicpi_qp_init_attr *init_attr)
{
	struct rxe_qp *qp = to_rxe_qp(q);

	memset(attr, 0, sizeof(*attr));
	rxe_qp_lock(qp);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = qp->path_mtu;
	attr->qkey = qp->qkey;
	attr->rq_psn = qp->resp.psn;
	attr->sq_psn = qp->req.psn;
	attr->dest_qp_num = qp->dest_qpn;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->ah_attr = qp->ah_attr;
	attr->pkey_index = qp->pkey_index;
	attr->sq_draining = qp->sq_draining;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_type = qp->type;
		init_attr->send_cq = &qp->scq->base;
		init_attr->recv_cq = &qp->rcq->base;
		init_attr->srq = qp->srq ? &qp->srq->base : NULL;
		init_attr->cap = qp->cap;
		init_attr->sq_sig_all = qp->sq_sig_all;
		init_attr->port_num = 1;
	}
	rxe_qp_unlock(qp);
	return 0;
}
