/* SPDX-License-Identifier: MIT */
/*
 * siw_tx.c - the transmit side: picks the next message (Terminate, RTR,
 * Read Response, then the send queue), has it cut into FPDUs that fit the
 * TCP MSS (siw_tx_fpdu.c), and writes up to SIW_TX_BATCH FPDUs of a
 * message with one sendmsg() over an iovec of headers, user memory and
 * trailers: no copy of the payload in user space; large messages may go
 * with MSG_ZEROCOPY (siw_tx_zc.c). Small messages queued back to back are
 * the exception: they are copied into the pack and written together
 * (option tx_pack, siw_tx_pack.c), a copy being cheaper than a system
 * call each. Then the message completes.
 *
 * Every step runs under qp->lock, from the posting thread when the queue
 * was idle or from the progress thread when the socket has room again.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "vp/siw/siw_tx.h"

void siw_tx_release(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	uint32_t i;

	for (i = 0; i < tx->n_src; i++) {
		siw_mr_put(tx->src_mr[i]);
		tx->src_mr[i] = NULL;
	}
	tx->n_src = 0;
	tx->kind = SIW_TX_IDLE;
	tx->state = SIW_TXS_SELECT;
	tx->sq_idx = -1;
	tx->zc = tx->zc_used = false;
}

/* A new message in tx: its scalars cleared, the arrays left as they are
 * (read only up to n_src and n_fpdu, src_mr NULL past n_src). */
static void siw_tx_begin(struct siw_tx *tx)
{
	memset(tx, 0, offsetof(struct siw_tx, src));
}

bool siw_qp_tx_pending(struct siw_qp *qp)
{
	if (qp->fd < 0 || qp->tx.want_out)
		return false;
	if (qp->tx.kind != SIW_TX_IDLE || qp->tx.pack_len)
		return true;
	if (qp->term.valid && !qp->term_sent)
		return true;
	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_CLOSING)
		return false;
	if (qp->tx_hold)
		return false;
	return qp->irq_count || qp->sq_unstarted ||
	       (qp->rtr_pending && qp->llp == SIW_LLP_RDMA);
}

static uint8_t sq_rdmap_opcode(const struct siw_wqe *w)
{
	bool se = w->flags & RNICPI_SEND_SOLICITED;

	switch (w->opcode) {
	case RNICPI_WR_RDMA_WRITE:
		return RDMAP_RDMA_WRITE;
	case RNICPI_WR_RDMA_READ:
		return RDMAP_RDMA_READ_REQ;
	case RNICPI_WR_SEND_WITH_INV:
		return se ? RDMAP_SEND_SE_INV : RDMAP_SEND_INV;
	default:
		return se ? RDMAP_SEND_SE : RDMAP_SEND;
	}
}

/* Local invalidate (RDMA verbs): the STag stops working at once. */
static enum rnicpi_wc_status local_invalidate(struct siw_qp *qp,
					      uint32_t stag)
{
	int rc = siw_stag_invalidate(qp, stag, false);

	if (rc) {
		siw_qp_info(qp, "local invalidate: STag 0x%08x %s", stag,
			    rc == -ENOENT ? "unknown" : "not ours to invalidate");
		return RNICPI_WC_LOC_PROT_ERR;
	}
	return RNICPI_WC_SUCCESS;
}

/* Resolve the WR's SGEs into tx->src / an ORQ entry. */
static int resolve_sges(struct siw_qp *qp, const struct siw_wqe *w,
			unsigned int access, struct iovec *seg,
			struct siw_mr **mrs, uint32_t *n)
{
	uint32_t i;

	*n = 0;
	for (i = 0; i < w->num_sge; i++) {
		uint8_t *ptr;
		int rc;

		if (!w->sge[i].length)
			continue;
		if (w->opcode == RNICPI_WR_RDMA_READ &&
		    (w->flags & RNICPI_SEND_SINK_MW))
			rc = siw_sink_resolve(qp, &w->sge[i], &mrs[*n], &ptr);
		else
			rc = siw_sge_resolve(qp->dev, qp->pd, &w->sge[i],
					     access, &mrs[*n], &ptr);
		if (rc) {
			siw_qp_info(qp, "WR 0x%llx SGE %u (lkey 0x%08x addr "
				    "0x%llx len %u): %s",
				    (unsigned long long)w->wr_id, i,
				    w->sge[i].lkey,
				    (unsigned long long)w->sge[i].addr,
				    w->sge[i].length, g_strerror(-rc));
			while (*n) {
				siw_mr_put(mrs[--*n]);
				mrs[*n] = NULL;
			}
			return rc;
		}
		seg[*n].iov_base = ptr;
		seg[*n].iov_len = w->sge[i].length;
		(*n)++;
	}
	return 0;
}

/* Start the WR at sq_tx. Returns false when it must wait (fence, ORD). */
static bool start_sq(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	uint32_t idx = qp->sq_tx;
	struct siw_wqe *w = &qp->sq[idx];
	const struct rdmap_opcode_info *op;
	enum rnicpi_wc_status fail = RNICPI_WC_LOC_PROT_ERR;
	int rc;

	/* RFC 5040 §5.1 / verbs: a fenced WR waits for earlier Reads. */
	if ((w->flags & (RNICPI_SEND_FENCE | RNICPI_SEND_LOCAL_FENCE)) &&
	    qp->orq_count)
		return false;
	if (w->opcode == RNICPI_WR_RDMA_READ && qp->orq_count >= qp->ord)
		return false;

	qp->sq_tx = (qp->sq_tx + 1) % qp->sq_size;
	qp->sq_unstarted--;
	if (w->opcode == RNICPI_WR_LOCAL_INV ||
	    w->opcode == RNICPI_WR_BIND_MW || w->opcode == RNICPI_WR_REG_MR) {
		enum rnicpi_wc_status st =
			w->opcode == RNICPI_WR_BIND_MW ? siw_mw_bind(qp, w) :
			w->opcode == RNICPI_WR_REG_MR ?
				siw_mr_fast_reg(qp, w) :
				local_invalidate(qp, w->inv_stag);

		if (w->reg_mr) {
			siw_mr_put(w->reg_mr);
			w->reg_mr = NULL;
		}

		siw_sq_complete(qp, idx, st, 0);
		if (st != RNICPI_WC_SUCCESS)
			siw_qp_terminate(qp, TERM_LAYER_RDMAP,
					 RDMAP_ETYPE_CATASTROPHIC, 0, false,
					 RNICPI_EVENT_QP_FATAL);
		return true;
	}

	siw_tx_begin(tx);
	tx->sq_idx = (int32_t)idx;
	tx->opcode = sq_rdmap_opcode(w);
	if (w->opcode == RNICPI_WR_RDMA_READ) {
		struct siw_orqe *o;

		if (!siw_qp_orq_alloc(qp)) {
			siw_qp_info(qp, "RDMA Read: no memory for the ORQ");
			fail = RNICPI_WC_LOC_QP_OP_ERR;
			goto err_local;
		}
		o = &qp->orq[(qp->orq_head + qp->orq_count) % qp->orq_size];
		memset(o, 0, sizeof(*o));
		rc = resolve_sges(qp, w, RNICPI_ACCESS_LOCAL_WRITE, o->seg,
				  o->mr, &o->n_seg);
		if (rc)
			goto err_local;
		o->sq_idx = (int32_t)idx;
		/* The response is tagged with the first SGE's STag and
		 * address; we place it by offset into the SGE list. STag 0
		 * is never sent: some RNICs treat it specially. */
		o->sink_stag = w->num_sge ? w->sge[0].lkey : 1;
		o->sink_to = w->num_sge ? w->sge[0].addr : 0;
		o->size = (uint32_t)w->total_len;
		o->start_ms = siw_now_ms();
		qp->orq_count++;
		if (qp->orq_count == 1)
			siw_qp_read_timer_arm(qp);
		w->state = SIW_WQE_WAIT_READ;
		tx->kind = SIW_TX_SQ;
		tx->msg_len = 0;
		tx->msn = qp->tx_msn[DDP_QN_READ_REQ]++;
		return true;
	}
	if (w->inline_data) {
		tx->src[0].iov_base = w->inline_data;
		tx->src[0].iov_len = (size_t)w->total_len;
		tx->n_src = w->total_len ? 1 : 0;
	} else {
		rc = resolve_sges(qp, w, 0, tx->src, tx->src_mr, &tx->n_src);
		if (rc)
			goto err_local;
	}
	tx->kind = SIW_TX_SQ;
	tx->msg_len = w->total_len;
	tx->zc = qp->zc_enabled && !w->inline_data &&
		 w->total_len >= qp->dev->opts.zcopy_min &&
		 qp->zc_count < SIW_ZC_PENDING;
	op = rdmap_opcode_info(tx->opcode);
	if (!rdmap_opcode_tagged(op))
		tx->msn = qp->tx_msn[op->ddp_qn]++;
	return true;

err_local:
	/* A bad local SGE (a protection error) or no memory for the ORQ:
	 * the WR fails and the QP goes to ERROR (verbs); the peer learns
	 * through a Terminate. */
	tx->kind = SIW_TX_IDLE;
	siw_sq_complete(qp, idx, fail, 0);
	siw_qp_terminate(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_CATASTROPHIC, 0,
			 false, RNICPI_EVENT_QP_FATAL);
	return true;
}

static bool start_rresp(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_irqe *r = &qp->irq[qp->irq_head];

	siw_tx_begin(tx);
	tx->kind = SIW_TX_RRESP;
	tx->sq_idx = -1;
	tx->opcode = RDMAP_RDMA_READ_RESP;
	tx->msg_len = r->size;
	tx->zc = qp->zc_enabled && r->size >= qp->dev->opts.zcopy_min &&
		 qp->zc_count < SIW_ZC_PENDING;
	if (r->size) {
		tx->src[0].iov_base = r->src;
		tx->src[0].iov_len = r->size;
		tx->n_src = 1;
	}
	return true;
}

/* Pick the next message; false if there is none or it must wait. */
static bool next_message(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	if (qp->term.valid && !qp->term_sent) {
		siw_tx_begin(tx);
		tx->kind = SIW_TX_TERM;
		tx->sq_idx = -1;
		tx->opcode = RDMAP_TERMINATE;
		tx->msg_len = qp->term.body_len;
		tx->src[0].iov_base = qp->term.body;
		tx->src[0].iov_len = qp->term.body_len;
		tx->n_src = 1;
		tx->msn = qp->tx_msn[DDP_QN_TERMINATE]++;
		return true;
	}
	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_CLOSING)
		return false;
	if (qp->llp != SIW_LLP_RDMA || qp->tx_hold)
		return false;
	/* RFC 6581 §9.2: the initiator's RTR is its first FPDU. */
	if (qp->rtr_pending) {
		siw_tx_begin(tx);
		tx->sq_idx = -1;
		if (qp->rtr == MPA_V2_READ_RTR) {
			struct siw_orqe *o =
				&qp->orq[(qp->orq_head + qp->orq_count) %
					 qp->orq_size];

			memset(o, 0, sizeof(*o));
			o->sq_idx = -1;
			o->sink_stag = 1;
			qp->orq_count++;
			tx->kind = SIW_TX_RTR_READ;
			tx->opcode = RDMAP_RDMA_READ_REQ;
			tx->msn = qp->tx_msn[DDP_QN_READ_REQ]++;
		} else {
			tx->kind = SIW_TX_RTR_WRITE;
			tx->opcode = RDMAP_RDMA_WRITE;
		}
		return true;
	}
	if (qp->irq_count)
		return start_rresp(qp);
	while (qp->sq_unstarted) {
		if (!start_sq(qp))
			return false;
		if (tx->kind != SIW_TX_IDLE)
			return true;
		if (qp->state != RNICPI_QPS_RTS &&
		    qp->state != RNICPI_QPS_CLOSING)
			return next_message(qp);
	}
	return false;
}

/* Write the rest of the current FPDUs: 0 when all of them are out,
 * -EAGAIN, or -errno for a broken stream. A zero-copy message that
 * falls back to copies goes on with them. */
static int send_fpdu(struct siw_qp *qp)
{
	int rc = 0;

	if (qp->tx.zc)
		rc = siw_tx_zc_send(qp);
	if (!rc)
		rc = siw_tx_send_copied(qp);
	return rc;
}

/* The message in tx is fully on the wire. */
static void message_done(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	enum siw_tx_kind kind = tx->kind;
	int32_t idx = tx->sq_idx;
	bool zc = tx->zc_used;

	siw_tx_release(qp);
	switch (kind) {
	case SIW_TX_SQ: {
		struct siw_wqe *w = &qp->sq[idx];

		/* A Read completes with its response (siw_rx.c); a flushed
		 * WR is complete already; a zero-copy one once the kernel
		 * let go of its pages. */
		if (zc && w->opcode != RNICPI_WR_RDMA_READ &&
		    qp->state == RNICPI_QPS_RTS) {
			siw_tx_zc_hold(qp, idx, NULL);
			break;
		}
		if (w->opcode != RNICPI_WR_RDMA_READ &&
		    qp->state != RNICPI_QPS_ERR &&
		    qp->state != RNICPI_QPS_TERMINATE)
			siw_sq_complete(qp, (uint32_t)idx, RNICPI_WC_SUCCESS,
					0);
		break;
	}
	case SIW_TX_RRESP:
		if (!qp->irq_count)
			break; /* flushed while its last FPDU went out */
		if (zc) {
			/* The region stays referenced until the kernel is
			 * done with its pages. */
			siw_tx_zc_hold(qp, -1, qp->irq[qp->irq_head].mr);
		} else {
			siw_mr_put(qp->irq[qp->irq_head].mr);
		}
		qp->irq[qp->irq_head].mr = NULL;
		qp->irq_head = (qp->irq_head + 1) % qp->irq_size;
		qp->irq_count--;
		break;
	case SIW_TX_TERM:
		qp->term_sent = true;
		qp->state = RNICPI_QPS_ERR;
		siw_qp_llp_shutdown(qp);
		break;
	case SIW_TX_RTR_WRITE:
	case SIW_TX_RTR_READ:
		qp->rtr_pending = false;
		break;
	default:
		break;
	}
}

static void set_want_out(struct siw_qp *qp, bool want)
{
	if (qp->tx.want_out == want || qp->fd < 0)
		return;
	qp->tx.want_out = want;
	siw_qp_poll_update(qp, false);
}

void siw_qp_tx_kick(struct siw_qp *qp)
{
	set_want_out(qp, true);
}

/* ------------------------------------------------------------------ */
/* Steps                                                               */
/* ------------------------------------------------------------------ */

/* What a step returns instead of a next state: siw_qp_tx() stops. */
#define SIW_TX_EMPTY (-1)	/* nothing more to write for now */
#define SIW_TX_FULL (-2)	/* the socket is full: wait for EPOLLOUT */
#define SIW_TX_BROKEN (-3)	/* the stream failed and is closed */

const char *const siw_tx_state_names[SIW_TX_STATE_COUNT] = {
	[SIW_TXS_SELECT] = "SELECT",
	[SIW_TXS_BUILD] = "BUILD",
	[SIW_TXS_PACK] = "PACK",
	[SIW_TXS_SEND] = "SEND",
};

/* Writing failed with @rc: the stream is closed (siw_qp_llp_closed). */
static int tx_broken(struct siw_qp *qp, int rc)
{
	siw_qp_info(qp, "send: %s", g_strerror(-rc));
	siw_qp_llp_closed(qp, rc);
	return SIW_TX_BROKEN;
}

static int tx_step_select(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	int rc;

	/* A Terminate goes out at the next FPDU boundary. */
	if (qp->term.valid && !qp->term_sent && tx->kind != SIW_TX_TERM &&
	    tx->kind != SIW_TX_IDLE)
		siw_tx_release(qp);
	if (tx->kind == SIW_TX_IDLE && !next_message(qp)) {
		/* Nothing follows the pack: it goes alone. */
		rc = siw_tx_send_pack(qp);
		if (!rc)
			return SIW_TX_EMPTY;
		if (rc == -EAGAIN)
			return SIW_TX_FULL;
		return tx_broken(qp, rc);
	}
	/* Starting the message may have ended the stream, or the message
	 * (a local invalidate): look again. */
	if (qp->fd < 0 || tx->kind == SIW_TX_IDLE)
		return SIW_TXS_SELECT;
	return SIW_TXS_BUILD;
}

static int tx_step_build(struct siw_qp *qp)
{
	int rc = siw_tx_build_batch(qp);

	if (rc) {
		siw_qp_llp_closed(qp, rc);
		return SIW_TX_BROKEN;
	}
	return siw_tx_pack_wanted(qp) ? SIW_TXS_PACK : SIW_TXS_SEND;
}

static int tx_step_pack(struct siw_qp *qp)
{
	int rc = siw_tx_pack_message(qp);

	if (rc) {
		siw_qp_llp_closed(qp, rc);
		return SIW_TX_BROKEN;
	}
	message_done(qp);
	return SIW_TXS_SELECT;
}

static int tx_step_send(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	int rc = send_fpdu(qp);

	if (rc == -EAGAIN)
		return SIW_TX_FULL;
	if (rc)
		return tx_broken(qp, rc);
	tx->msg_off += tx->batch_payload;
	if (tx->msg_off >= tx->msg_len)
		message_done(qp);
	return SIW_TXS_SELECT;
}

typedef int (*tx_step_fn)(struct siw_qp *qp);

static const tx_step_fn tx_steps[SIW_TX_STATE_COUNT] = {
	[SIW_TXS_SELECT] = tx_step_select,
	[SIW_TXS_BUILD] = tx_step_build,
	[SIW_TXS_PACK] = tx_step_pack,
	[SIW_TXS_SEND] = tx_step_send,
};

void siw_qp_tx(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	while (qp->fd >= 0 && qp->llp != SIW_LLP_DRAIN &&
	       qp->llp != SIW_LLP_CLOSED) {
		enum siw_tx_state s = tx->state;
		int next;

		if ((unsigned int)s >= SIW_TX_STATE_COUNT) {
			siw_qp_info(qp, "bad transmit state %d", s);
			return;
		}
		next = tx_steps[s](qp);
		if (next == SIW_TX_EMPTY)
			break;
		if (next == SIW_TX_FULL) {
			set_want_out(qp, true);
			return;
		}
		if (next == SIW_TX_BROKEN)
			return;
		tx->state = (enum siw_tx_state)next;
	}
	set_want_out(qp, false);
	/* Graceful close: once everything queued went out and no Read is
	 * outstanding, send our FIN (RFC 5040 §5.3 / verbs CLOSING). */
	if (qp->closing && qp->state == RNICPI_QPS_CLOSING &&
	    tx->kind == SIW_TX_IDLE && !tx->pack_len && !qp->orq_count &&
	    !qp->irq_count &&
	    !qp->sq_unstarted && qp->llp == SIW_LLP_RDMA)
		siw_qp_llp_shutdown(qp);
}
