/* SPDX-License-Identifier: MIT */
/*
 * testprov_qp.c - the test provider's SRQs and QPs, and the data path:
 * SEND into the peer's receive, RDMA WRITE through an rkey, BIND_MW.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/provider/testprov.h"

/* QPs of every device by number, for deliveries. Under tp_lock. */
static struct tp_qp **qp_table;
static uint32_t qp_table_len;
static uint32_t next_qpn = 2; /* QPN 1 is the GSI's */

/* ------------------------------------------------------------------ */
/* Receive queues, SRQ                                                 */
/* ------------------------------------------------------------------ */

static int rq_init(struct tp_rq *rq, uint32_t max_wr, uint32_t max_sge)
{
	if (max_wr == 0)
		max_wr = 1;
	rq->wqe = calloc(max_wr, sizeof(*rq->wqe));
	if (!rq->wqe)
		return -ENOMEM;
	rq->max_wr = max_wr;
	rq->max_sge = max_sge;
	return 0;
}

/* Under tp_lock. */
static int rq_post(struct tp_rq *rq, const struct rnicpi_recv_wr *wr,
		   const struct rnicpi_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct tp_rwqe *w;

		if (wr->num_sge > rq->max_sge) {
			*bad = wr;
			return -EINVAL;
		}
		if (rq->count == rq->max_wr) {
			*bad = wr;
			return -ENOMEM;
		}
		w = &rq->wqe[(rq->head + rq->count) % rq->max_wr];
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list,
			       wr->num_sge * sizeof(*w->sge));
		rq->count++;
	}
	return 0;
}

/* Under tp_lock: take the oldest WQE into @out; false if none. */
static bool rq_take(struct tp_rq *rq, struct tp_rwqe *out)
{
	if (!rq->count)
		return false;
	*out = rq->wqe[rq->head];
	rq->head = (rq->head + 1) % rq->max_wr;
	rq->count--;
	return true;
}

int tp_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
		  struct rnicpi_srq **out)
{
	struct tp_srq *srq;

	if (attr->max_wr > TP_MAX_QP_WR || attr->max_sge > TP_MAX_SGE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	if (rq_init(&srq->rq, attr->max_wr, attr->max_sge)) {
		free(srq);
		return -ENOMEM;
	}
	srq->base.pd = pd;
	srq->limit = attr->srq_limit;
	attr->max_wr = srq->rq.max_wr;
	*out = &srq->base;
	return 0;
}

int tp_modify_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr,
		  unsigned int mask)
{
	struct tp_srq *srq = to_tp_srq(s);

	if (mask & RNICPI_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&tp_lock);
	if (mask & RNICPI_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

int tp_query_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr)
{
	struct tp_srq *srq = to_tp_srq(s);

	pthread_mutex_lock(&tp_lock);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

int tp_destroy_srq(struct rnicpi_srq *s)
{
	struct tp_srq *srq = to_tp_srq(s);

	free(srq->rq.wqe);
	free(srq);
	return 0;
}

int tp_post_srq_recv(struct rnicpi_srq *s,
		     const struct rnicpi_recv_wr *wr,
		     const struct rnicpi_recv_wr **bad)
{
	int err;

	pthread_mutex_lock(&tp_lock);
	err = rq_post(&to_tp_srq(s)->rq, wr, bad);
	pthread_mutex_unlock(&tp_lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* QP                                                                  */
/* ------------------------------------------------------------------ */

/* Under tp_lock. */
static int qp_table_add(struct tp_qp *qp)
{
	uint32_t qpn = next_qpn;

	if (qpn >= qp_table_len) {
		uint32_t n = qp_table_len ? qp_table_len * 2 : 64;
		struct tp_qp **t;

		while (n <= qpn)
			n *= 2;
		t = realloc(qp_table, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + qp_table_len, 0,
		       (n - qp_table_len) * sizeof(*t));
		qp_table = t;
		qp_table_len = n;
	}
	qp_table[qpn] = qp;
	qp->base.qp_num = qpn;
	next_qpn++;
	return 0;
}

/* Under tp_lock; frees the table with the last QP so nothing is left
 * behind when the module is unloaded. */
static void qp_table_del(struct tp_qp *qp)
{
	uint32_t i;

	qp_table[qp->base.qp_num] = NULL;
	for (i = 0; i < qp_table_len; i++)
		if (qp_table[i])
			return;
	free(qp_table);
	qp_table = NULL;
	qp_table_len = 0;
}

static struct tp_qp *qp_find(uint32_t qpn)
{
	return qpn < qp_table_len ? qp_table[qpn] : NULL;
}

int tp_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		 struct rnicpi_qp **out)
{
	struct tp_device *dev = pd_dev(pd);
	struct rnicpi_qp_cap *cap = &attr->cap;
	struct tp_qp *qp;
	int err;

	if (attr->qp_type != RNICPI_QPT_RC && attr->qp_type != RNICPI_QPT_UC &&
	    attr->qp_type != RNICPI_QPT_UD)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > TP_MAX_QP_WR || cap->max_recv_wr > TP_MAX_QP_WR ||
	    cap->max_send_sge > TP_MAX_SGE || cap->max_recv_sge > TP_MAX_SGE ||
	    cap->max_inline_data > 0) {
		fprintf(stderr, "testprov %s: QP caps over the limits (%u WRs, %u SGEs, no inline)\n",
			dev->base.name, TP_MAX_QP_WR, TP_MAX_SGE);
		return -EINVAL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	if (!attr->srq) {
		err = rq_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge);
		if (err)
			goto err_free;
	}
	qp->base.pd = pd;
	qp->dev = dev;
	qp->type = attr->qp_type;
	qp->state = RNICPI_QPS_RESET;
	qp->scq = to_tp_cq(attr->send_cq);
	qp->rcq = to_tp_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_tp_srq(attr->srq) : NULL;
	qp->cap = *cap;
	qp->sq_sig_all = attr->sq_sig_all;

	pthread_mutex_lock(&tp_lock);
	if (dev->n_qp >= dev->max_qp) {
		pthread_mutex_unlock(&tp_lock);
		err = -ENOSPC;
		goto err_rq;
	}
	err = qp_table_add(qp);
	if (!err)
		dev->n_qp++;
	pthread_mutex_unlock(&tp_lock);
	if (err)
		goto err_rq;
	*out = &qp->base;
	return 0;

err_rq:
	free(qp->rq.wqe);
err_free:
	free(qp);
	return err;
}

/* Under tp_lock: flush every posted receive of @qp's own queue. */
static void qp_flush_recv(struct tp_qp *qp)
{
	struct tp_rwqe w;

	while (rq_take(&qp->rq, &w)) {
		struct rnicpi_wc wc = {
			.wr_id = w.wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		tp_cq_push(qp->rcq, &wc, false);
	}
}

int tp_modify_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		 unsigned int mask)
{
	struct tp_qp *qp = to_tp_qp(q);

	pthread_mutex_lock(&tp_lock);
	if (mask & RNICPI_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (mask & RNICPI_QP_STATE) {
		switch (attr->qp_state) {
		case RNICPI_QPS_RESET:
			qp->rq.head = qp->rq.count = 0;
			qp->dest_qpn = 0;
			break;
		case RNICPI_QPS_ERR:
			qp_flush_recv(qp);
			break;
		case RNICPI_QPS_INIT:
		case RNICPI_QPS_RTR:
		case RNICPI_QPS_RTS:
			break;
		default:
			pthread_mutex_unlock(&tp_lock);
			return -EINVAL;
		}
		qp->state = attr->qp_state;
	}
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

int tp_query_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		unsigned int mask, struct rnicpi_qp_init_attr *init)
{
	struct tp_qp *qp = to_tp_qp(q);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	pthread_mutex_lock(&tp_lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->dest_qp_num = qp->dest_qpn;
	attr->cap = qp->cap;
	pthread_mutex_unlock(&tp_lock);
	init->qp_type = qp->type;
	init->send_cq = &qp->scq->base;
	init->recv_cq = &qp->rcq->base;
	init->srq = qp->srq ? &qp->srq->base : NULL;
	init->cap = qp->cap;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int tp_destroy_qp(struct rnicpi_qp *q)
{
	struct tp_qp *qp = to_tp_qp(q);

	pthread_mutex_lock(&tp_lock);
	qp_table_del(qp);
	qp->dev->n_qp--;
	pthread_mutex_unlock(&tp_lock);
	free(qp->rq.wqe);
	free(qp);
	return 0;
}

/* Under tp_lock: gather the send WR's data into a new buffer. */
static enum rnicpi_wc_status gather(struct tp_qp *qp,
				    const struct rnicpi_send_wr *wr,
				    char **buf, uint32_t *len)
{
	uint64_t total = 0;
	uint32_t i, off = 0;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > TP_MAX_MSG)
		return RNICPI_WC_LOC_LEN_ERR;
	*buf = malloc(total ? total : 1);
	if (!*buf)
		return RNICPI_WC_GENERAL_ERR;
	for (i = 0; i < wr->num_sge; i++) {
		const struct rnicpi_sge *sge = &wr->sg_list[i];
		struct tp_mr *mr = tp_find_mr(qp->dev, qp->base.pd, sge->lkey);
		char *src = mr ? tp_mr_range(mr, sge->addr, sge->length, 0) : NULL;

		if (!src) {
			free(*buf);
			*buf = NULL;
			return RNICPI_WC_LOC_PROT_ERR;
		}
		memcpy(*buf + off, src, sge->length);
		off += sge->length;
	}
	*len = off;
	return RNICPI_WC_SUCCESS;
}

/* Under tp_lock: scatter @len bytes into receive WQE @w of @qp. */
static enum rnicpi_wc_status scatter(struct tp_qp *qp,
				     const struct tp_rwqe *w,
				     const char *buf, uint32_t len)
{
	uint32_t i, off = 0;
	uint64_t room = 0;

	for (i = 0; i < w->num_sge; i++)
		room += w->sge[i].length;
	if (len > room)
		return RNICPI_WC_LOC_LEN_ERR;
	/* Check every SGE before writing any byte. */
	for (i = 0; i < w->num_sge; i++) {
		const struct rnicpi_sge *sge = &w->sge[i];
		struct tp_mr *mr = tp_find_mr(qp->dev, qp->base.pd, sge->lkey);

		if (!mr || !tp_mr_range(mr, sge->addr, sge->length,
				     RNICPI_ACCESS_LOCAL_WRITE))
			return RNICPI_WC_LOC_PROT_ERR;
	}
	for (i = 0; i < w->num_sge && off < len; i++) {
		const struct rnicpi_sge *sge = &w->sge[i];
		struct tp_mr *mr = tp_find_mr(qp->dev, qp->base.pd, sge->lkey);
		uint32_t n = len - off < sge->length ? len - off : sge->length;

		memcpy(tp_mr_range(mr, sge->addr, sge->length,
				RNICPI_ACCESS_LOCAL_WRITE),
		       buf + off, n);
		off += n;
	}
	return RNICPI_WC_SUCCESS;
}

/* Under tp_lock: a SEND from @qp; returns the sender's status. */
static enum rnicpi_wc_status do_send(struct tp_qp *qp,
				     const struct rnicpi_send_wr *wr)
{
	struct tp_qp *peer = qp_find(qp->dest_qpn);
	enum rnicpi_wc_status st;
	struct rnicpi_wc rwc = { 0 };
	struct tp_rwqe w;
	uint32_t len = 0;
	char *buf = NULL;

	st = gather(qp, wr, &buf, &len);
	if (st != RNICPI_WC_SUCCESS || !qp->dest_qpn) {
		free(buf);
		return st; /* not connected: the bytes go nowhere */
	}
	if (!peer || peer->state < RNICPI_QPS_RTR ||
	    peer->state > RNICPI_QPS_SQE) {
		free(buf);
		return RNICPI_WC_RETRY_EXC_ERR;
	}
	if (!rq_take(peer->srq ? &peer->srq->rq : &peer->rq, &w)) {
		free(buf);
		return RNICPI_WC_RNR_RETRY_EXC_ERR;
	}
	rwc.wr_id = w.wr_id;
	rwc.opcode = RNICPI_WC_RECV;
	rwc.qp_num = peer->base.qp_num;
	rwc.src_qp = qp->base.qp_num;
	rwc.status = scatter(peer, &w, buf, len);
	rwc.byte_len = rwc.status == RNICPI_WC_SUCCESS ? len : 0;
	if (wr->opcode == RNICPI_WR_SEND_WITH_IMM) {
		rwc.imm_data = wr->ex.imm_data;
		rwc.wc_flags |= RNICPI_WC_WITH_IMM;
	}
	if (wr->send_flags & RNICPI_SEND_SOLICITED)
		rwc.wc_flags |= RNICPI_WC_SOLICITED;
	tp_cq_push(peer->rcq, &rwc, wr->send_flags & RNICPI_SEND_SOLICITED);
	free(buf);
	return rwc.status == RNICPI_WC_SUCCESS ? RNICPI_WC_SUCCESS :
						 RNICPI_WC_REM_OP_ERR;
}

static enum rnicpi_wc_status do_write(struct tp_qp *qp,
				      const struct rnicpi_send_wr *wr)
{
	struct tp_qp *peer = qp_find(qp->dest_qpn);
	enum rnicpi_wc_status st;
	struct tp_mr *mr;
	uint32_t len = 0;
	char *buf = NULL, *dst;

	if (!peer)
		return RNICPI_WC_RETRY_EXC_ERR;
	st = gather(qp, wr, &buf, &len);
	if (st != RNICPI_WC_SUCCESS)
		return st;
	mr = tp_find_mr(peer->dev, peer->base.pd, wr->wr.rdma.rkey);
	dst = mr ? tp_mr_range(mr, wr->wr.rdma.remote_addr, len,
			    RNICPI_ACCESS_REMOTE_WRITE) : NULL;
	if (dst)
		memcpy(dst, buf, len);
	free(buf);
	return dst ? RNICPI_WC_SUCCESS : RNICPI_WC_REM_ACCESS_ERR;
}

static enum rnicpi_wc_status do_bind(struct tp_qp *qp,
				     const struct rnicpi_send_wr *wr)
{
	const struct rnicpi_mw_bind_info *bi = &wr->wr.bind_mw.bind_info;
	struct tp_mw *mw = wr->wr.bind_mw.mw ? to_tp_mw(wr->wr.bind_mw.mw) :
					       NULL;
	struct tp_mr *mr = bi->mr ? to_tp_mr(bi->mr) : NULL;
	uint32_t key;

	if (!mw || mw->base.pd != qp->base.pd)
		return RNICPI_WC_MW_BIND_ERR;
	if (bi->length == 0) {
		if (mw->mr)
			mw->mr->bound_windows--;
		mw->mr = NULL;
		return RNICPI_WC_SUCCESS;
	}
	if (!mr || mr->base.pd != qp->base.pd || mw->mr ||
	    !tp_mr_range(mr, bi->addr, bi->length, RNICPI_ACCESS_MW_BIND))
		return RNICPI_WC_MW_BIND_ERR;
	/* The key byte is the one the bind names (rnicpi.h). */
	if (rnicpi_key_set_byte(&qp->dev->keys, mw->base.rkey,
				(uint8_t)wr->wr.bind_mw.rkey, &key))
		return RNICPI_WC_MW_BIND_ERR;
	mw->base.rkey = key;
	mw->mr = mr;
	mr->bound_windows++;
	return RNICPI_WC_SUCCESS;
}

static const enum rnicpi_wc_opcode wc_opcode[] = {
	[RNICPI_WR_RDMA_WRITE] = RNICPI_WC_RDMA_WRITE,
	[RNICPI_WR_SEND] = RNICPI_WC_SEND,
	[RNICPI_WR_SEND_WITH_IMM] = RNICPI_WC_SEND,
	[RNICPI_WR_BIND_MW] = RNICPI_WC_BIND_MW,
};

int tp_post_send(struct rnicpi_qp *q, const struct rnicpi_send_wr *wr,
		 const struct rnicpi_send_wr **bad)
{
	struct tp_qp *qp = to_tp_qp(q);
	int err = 0;

	pthread_mutex_lock(&tp_lock);
	for (; wr; wr = wr->next) {
		struct rnicpi_wc wc = { 0 };

		if (qp->state != RNICPI_QPS_RTS) {
			err = -EINVAL;
			break;
		}
		if (wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = -EINVAL;
			break;
		}
		switch (wr->opcode) {
		case RNICPI_WR_SEND:
		case RNICPI_WR_SEND_WITH_IMM:
			wc.status = do_send(qp, wr);
			break;
		case RNICPI_WR_RDMA_WRITE:
			wc.status = do_write(qp, wr);
			break;
		case RNICPI_WR_BIND_MW:
			wc.status = do_bind(qp, wr);
			break;
		default:
			err = -EINVAL;
			break;
		}
		if (err)
			break;
		wc.wr_id = wr->wr_id;
		wc.opcode = wc_opcode[wr->opcode];
		wc.qp_num = q->qp_num;
		if (wc.status == RNICPI_WC_SUCCESS && wr->opcode != RNICPI_WR_BIND_MW)
			for (uint32_t i = 0; i < wr->num_sge; i++)
				wc.byte_len += wr->sg_list[i].length;
		if (qp->sq_sig_all || (wr->send_flags & RNICPI_SEND_SIGNALED) ||
		    wc.status != RNICPI_WC_SUCCESS) {
			tp_cq_push(qp->scq, &wc, false);
			/* Option complete_twice: a provider that breaks
			 * the completion rules, for the layer above. */
			if (pd_dev(q->pd)->complete_twice)
				tp_cq_push(qp->scq, &wc, false);
		}
	}
	pthread_mutex_unlock(&tp_lock);
	if (err)
		*bad = wr;
	return err;
}

int tp_post_recv(struct rnicpi_qp *q, const struct rnicpi_recv_wr *wr,
		 const struct rnicpi_recv_wr **bad)
{
	struct tp_qp *qp = to_tp_qp(q);
	int err;

	pthread_mutex_lock(&tp_lock);
	if (qp->srq || qp->state == RNICPI_QPS_RESET)
		err = -EINVAL, *bad = wr;
	else
		err = rq_post(&qp->rq, wr, bad);
	pthread_mutex_unlock(&tp_lock);
	return err;
}
