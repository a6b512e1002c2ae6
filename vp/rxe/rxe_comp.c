/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE completer: matches responses (ACK, NAK, RNR NAK, READ
 * responses, atomic ACKs) to send WQEs in PSN order (IBA 9.7.5.1), runs
 * the transport timer and RNR timer with their retry counts (IBA 9.7.5.2),
 * and posts send completions in order.
 *
 * A response goes through the states below; each step returns the next.
 */
#include "config.h"

#include <string.h>

#include "vp/rxe/rxe.h"

enum comp_state {
	COMPST_CHECK_PSN,
	COMPST_CHECK_ACK,	/* AETH: ACK, RNR NAK or NAK */
	COMPST_ACK_UPTO,	/* WQEs before the PSN are acknowledged */
	COMPST_READ,		/* READ response payload */
	COMPST_ATOMIC,		/* atomic ACK */
	COMPST_RETRY,		/* go back N to comp.psn */
	COMPST_RNR,		/* RNR NAK: wait, then go back */
	COMPST_ERROR,		/* complete the WQE in error, QP to ERR */
	COMPST_DONE,
};

static const char *const comp_state_names[] = {
	[COMPST_CHECK_PSN] = "CHECK_PSN", [COMPST_CHECK_ACK] = "CHECK_ACK",
	[COMPST_ACK_UPTO] = "ACK_UPTO",	  [COMPST_READ] = "READ",
	[COMPST_ATOMIC] = "ATOMIC",	  [COMPST_RETRY] = "RETRY",
	[COMPST_RNR] = "RNR",		  [COMPST_ERROR] = "ERROR",
	[COMPST_DONE] = "DONE",
};

static enum rnicpi_wc_opcode wc_opcode(enum rnicpi_wr_opcode op)
{
	switch (op) {
	case RNICPI_WR_RDMA_WRITE:
	case RNICPI_WR_RDMA_WRITE_WITH_IMM:
		return RNICPI_WC_RDMA_WRITE;
	case RNICPI_WR_RDMA_READ:
		return RNICPI_WC_RDMA_READ;
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
		return RNICPI_WC_COMP_SWAP;
	case RNICPI_WR_ATOMIC_FETCH_AND_ADD:
		return RNICPI_WC_FETCH_ADD;
	case RNICPI_WR_LOCAL_INV:
		return RNICPI_WC_LOCAL_INV;
	case RNICPI_WR_BIND_MW:
		return RNICPI_WC_BIND_MW;
	case RNICPI_WR_REG_MR:
		return RNICPI_WC_REG_MR;
	default:
		return RNICPI_WC_SEND;
	}
}

static bool is_rd_atomic(const struct rxe_send_wqe *w)
{
	return w->opcode == RNICPI_WR_RDMA_READ ||
	       w->opcode == RNICPI_WR_ATOMIC_CMP_AND_SWP ||
	       w->opcode == RNICPI_WR_ATOMIC_FETCH_AND_ADD;
}

void rxe_comp_drain(struct rxe_qp *qp)
{
	bool err = false;

	while (qp->sq_head != qp->req.wqe) {
		struct rxe_send_wqe *w = sq_wqe(qp, qp->sq_head);
		struct rnicpi_wc wc;

		if (w->state != WQE_DONE && w->state != WQE_ERROR)
			break;
		if (w->state == WQE_ERROR ||
		    (w->flags & RNICPI_SEND_SIGNALED)) {
			memset(&wc, 0, sizeof(wc));
			wc.wr_id = w->wr_id;
			wc.status = w->state == WQE_ERROR ? w->status
							  : RNICPI_WC_SUCCESS;
			wc.opcode = wc_opcode(w->opcode);
			wc.qp_num = qp->base.qp_num;
			wc.byte_len = w->length;
			rxe_cq_post(qp, qp->scq, &wc, false);
		}
		if (w->state == WQE_ERROR)
			err = true;
		qp->sq_head++;
		if (err)
			break;
	}
	if (err && qp->state != RNICPI_QPS_ERR)
		rxe_qp_error(qp);
	if (qp->state == RNICPI_QPS_SQD && qp->sq_draining &&
	    qp->sq_head == qp->req.wqe) {
		qp->sq_draining = false;
		rxe_qp_event(qp, RNICPI_EVENT_SQ_DRAINED, 0);
	}
}

/* IBA 9.7.6.1.3: Local ACK Timeout = 4.096 us * 2^timeout; 0 disables. */
void rxe_comp_arm_timer(struct rxe_qp *qp)
{
	uint64_t usec;

	if (psn_diff(qp->req.psn, qp->comp.psn) <= 0 || !qp->timeout) {
		rxe_timer_set(qp, 0);
		qp->comp.timer = RXE_TIMER_NONE;
		return;
	}
	usec = (4096ull << qp->timeout) / 1000;
	qp->comp.timer = RXE_TIMER_RETRANSMIT;
	rxe_timer_set(qp, usec ? usec : 1);
}

static void wqe_fail(struct rxe_qp *qp, struct rxe_send_wqe *w,
		     enum rnicpi_wc_status status)
{
	w->state = WQE_ERROR;
	w->status = status;
	/* The failed WQE is the oldest pending one; let the completer reach
	 * it even when it is the one being sent. */
	if (qp->req.offset) {
		qp->req.wqe++;
		qp->req.offset = 0;
	}
}

/* The oldest WQE still waiting for a response, or NULL. */
static struct rxe_send_wqe *oldest_pending(struct rxe_qp *qp)
{
	uint32_t i;

	for (i = qp->sq_head; i != qp->req.wqe + (qp->req.offset ? 1 : 0);
	     i++) {
		struct rxe_send_wqe *w = sq_wqe(qp, i);

		if (w->opcode == RNICPI_WR_LOCAL_INV ||
		    w->opcode == RNICPI_WR_BIND_MW ||
		    w->opcode == RNICPI_WR_REG_MR || w->state == WQE_DONE)
			continue;
		return w;
	}
	return NULL;
}

/*
 * Everything before @psn is acknowledged (an ACK, a NAK's implied ACK, or
 * a later response, IBA 9.7.5.1.3). SEND and WRITE WQEs ending before it
 * are done. A READ or atomic it passes without its response means that
 * response was lost: go back to it (returns false).
 */
static bool ack_upto(struct rxe_qp *qp, uint32_t psn)
{
	bool lost = false;
	uint32_t i;

	for (i = qp->sq_head; i != qp->req.wqe; i++) {
		struct rxe_send_wqe *w = sq_wqe(qp, i);

		if (w->opcode == RNICPI_WR_LOCAL_INV ||
		    w->opcode == RNICPI_WR_BIND_MW ||
		    w->opcode == RNICPI_WR_REG_MR || w->state == WQE_DONE)
			continue;
		if (psn_diff(w->last_psn, psn) >= 0) {
			/* Inside a READ, only its own responses move on. */
			if (is_rd_atomic(w) && psn_diff(psn, w->first_psn) > 0)
				psn = w->first_psn;
			break;
		}
		if (is_rd_atomic(w)) {
			rxe_qp_dbg(qp, "response for PSN %u lost before %u",
				   w->first_psn, psn);
			/* Acknowledged up to the READ / atomic only. */
			psn = w->first_psn;
			lost = true;
			break;
		}
		w->state = WQE_DONE;
	}
	if (psn_diff(psn, qp->comp.psn) > 0) {
		qp->comp.psn = psn;
		qp->comp.in_retry = false;
		/* Progress: the retry budget starts over (IBA 9.7.5.2). */
		qp->comp.retry_left = qp->retry_cnt;
		qp->comp.rnr_left = qp->rnr_retry;
	}
	return !lost;
}

static enum comp_state check_psn(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	int32_t ahead = psn_diff(pkt->psn, qp->comp.psn);

	/* A response for a PSN never sent is bogus. */
	if (psn_diff(pkt->psn, qp->req.psn) >= 0) {
		rxe_qp_dbg(qp, "drop %s PSN %u: not sent yet (next %u)",
			   pkt->op->name, pkt->psn, qp->req.psn);
		return COMPST_DONE;
	}
	if (ahead < 0) {
		/* Old: a duplicate or coalesced earlier response. An ACK
		 * still tells nothing new. */
		return COMPST_DONE;
	}
	if (pkt->opcode == IB_OP_ACK)
		return COMPST_CHECK_ACK;
	/* READ responses and atomic ACKs come in PSN order; a gap means
	 * one was lost (IBA 9.7.5.1.1). */
	/* A response ahead of comp.psn acknowledges the SENDs and WRITEs
	 * before it (IBA 9.7.5.1.3); if it is still not the next one, a
	 * response went missing. */
	if (ahead > 0 && (!ack_upto(qp, pkt->psn) ||
			  psn_diff(pkt->psn, qp->comp.psn) != 0)) {
		rxe_count(qp->dev, RXE_CNT_OUT_OF_SEQ);
		return COMPST_RETRY;
	}
	qp->comp.in_retry = false;
	return pkt->opcode == IB_OP_ATOMIC_ACK ? COMPST_ATOMIC : COMPST_READ;
}

/*
 * A NAK's reason for the owner (rnicpi.h's RNICPI_TERM_LAYER_IBA, as
 * siw reports a Terminate it receives): the wire carries only the NAK
 * code, the cause follows from the request it names.
 */
static void nak_event(struct rxe_qp *qp, const struct rxe_send_wqe *w,
		      uint8_t code)
{
	enum rnicpi_iba_cause cause = RNICPI_IBA_CAUSE_OTHER;
	enum rnicpi_event_type type;
	/* Not SEND_WITH_INV: a key the peer may not invalidate is an
	 * invalid request too (IBA 10.6.6.2). */
	bool send = w->opcode == RNICPI_WR_SEND ||
		    w->opcode == RNICPI_WR_SEND_WITH_IMM;

	switch (code) {
	case AETH_NAK_INVALID_REQ:
		type = RNICPI_EVENT_QP_REQ_ERR;
		if (send)
			cause = RNICPI_IBA_CAUSE_RECV_LENGTH;
		break;
	case AETH_NAK_REM_ACCESS_ERR:
		type = RNICPI_EVENT_QP_ACCESS_ERR;
		if (w->opcode == RNICPI_WR_RDMA_WRITE ||
		    w->opcode == RNICPI_WR_RDMA_WRITE_WITH_IMM)
			cause = RNICPI_IBA_CAUSE_WRITE_ACCESS;
		else if (w->opcode == RNICPI_WR_RDMA_READ)
			cause = RNICPI_IBA_CAUSE_READ_ACCESS;
		else if (w->opcode == RNICPI_WR_ATOMIC_CMP_AND_SWP ||
			 w->opcode == RNICPI_WR_ATOMIC_FETCH_AND_ADD)
			cause = RNICPI_IBA_CAUSE_ATOMIC_ACCESS;
		break;
	case AETH_NAK_REM_OP_ERR:
		type = RNICPI_EVENT_QP_FATAL;
		break;
	default:
		type = RNICPI_EVENT_QP_REQ_ERR;
		break;
	}
	rxe_qp_event_nak(qp, type, code, cause, true);
}

static enum comp_state check_ack(struct rxe_qp *qp, struct rxe_pkt *pkt,
				 struct rxe_send_wqe **failed,
				 enum rnicpi_wc_status *status)
{
	const struct ib_aeth *aeth = pkt_aeth(pkt);

	switch (aeth_type(aeth)) {
	case AETH_TYPE_ACK:
		if (!ack_upto(qp, psn_add(pkt->psn, 1)))
			return COMPST_RETRY;
		return COMPST_DONE;
	case AETH_TYPE_RNR:
		rxe_count(qp->dev, RXE_CNT_RNR_NAKS_RCVD);
		if (!ack_upto(qp, pkt->psn))
			return COMPST_RETRY;
		return COMPST_RNR;
	case AETH_TYPE_NAK:
		if (!ack_upto(qp, pkt->psn))
			return COMPST_RETRY;
		switch (aeth_value(aeth)) {
		case AETH_NAK_PSN_SEQ_ERR:
			rxe_count(qp->dev, RXE_CNT_SEQ_NAKS_RCVD);
			/* The responder's own word, once per gap: go back
			 * even during a retry (a resent request lost again;
			 * with no transport timer nothing else would). */
			qp->comp.in_retry = false;
			return COMPST_RETRY;
		case AETH_NAK_INVALID_REQ:
			*status = RNICPI_WC_REM_INV_REQ_ERR;
			break;
		case AETH_NAK_REM_ACCESS_ERR:
			*status = RNICPI_WC_REM_ACCESS_ERR;
			break;
		case AETH_NAK_REM_OP_ERR:
			*status = RNICPI_WC_REM_OP_ERR;
			break;
		case AETH_NAK_INVALID_RD_REQ:
			*status = RNICPI_WC_REM_INV_RD_REQ_ERR;
			break;
		default:
			*status = RNICPI_WC_BAD_RESP_ERR;
			break;
		}
		rxe_count(qp->dev, RXE_CNT_NAKS_RCVD);
		*failed = oldest_pending(qp);
		rxe_qp_warn(qp, "NAK syndrome 0x%02x for PSN %u",
			    aeth_syndrome(aeth), pkt->psn);
		if (*failed)
			nak_event(qp, *failed, aeth_value(aeth));
		return *failed ? COMPST_ERROR : COMPST_DONE;
	default:
		rxe_qp_warn(qp, "ACK with reserved syndrome 0x%02x",
			    aeth_syndrome(aeth));
		*failed = oldest_pending(qp);
		*status = RNICPI_WC_BAD_RESP_ERR;
		return *failed ? COMPST_ERROR : COMPST_DONE;
	}
}

/* The WQE holding @psn, which must be a @opcode WQE. */
static struct rxe_send_wqe *wqe_for_psn(struct rxe_qp *qp, uint32_t psn)
{
	struct rxe_send_wqe *w = oldest_pending(qp);

	if (!w || psn_diff(psn, w->first_psn) < 0 ||
	    psn_diff(psn, w->last_psn) > 0 || w->state == WQE_POSTED)
		return NULL;
	return w;
}

/* The READ WQE that response @pkt is the next one due for, or NULL: it
 * carries payload at the completer's PSN while the send queue can still
 * take responses. */
static struct rxe_send_wqe *read_due(struct rxe_qp *qp,
				     const struct rxe_pkt *pkt)
{
	struct rxe_send_wqe *w;

	if (!pkt->paylen || !(pkt->op->flags & IB_F_RESP) ||
	    pkt->psn != qp->comp.psn ||
	    (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_SQD &&
	     qp->state != RNICPI_QPS_SQE))
		return NULL;
	w = wqe_for_psn(qp, pkt->psn);
	return w && w->opcode == RNICPI_WR_RDMA_READ ? w : NULL;
}

/* Where the expected READ response @pkt would land (see rxe_resp_place):
 * the READ WQE's SGE list at the packet's offset, when the packet is the
 * next one due, carries what that place needs and fits one SGE. */
uint8_t *rxe_comp_place(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			struct rxe_mr **mr)
{
	struct rxe_send_wqe *w = read_due(qp, pkt);
	uint32_t offset, want;

	if (!w)
		return NULL;
	offset = (uint32_t)psn_diff(pkt->psn, w->first_psn) * qp->mtu;
	if (offset >= w->length)
		return NULL;
	want = w->length - offset < qp->mtu ? w->length - offset : qp->mtu;
	if (pkt->paylen != want)
		return NULL;
	return rxe_read_sink_place(qp, w, offset, want, mr);
}

/* rxe_comp_place() for a run of READ RESPONSE MIDDLE packets from the
 * expected PSN on (a UDP GRO datagram of a responder's GSO sends): the
 * first one's place in the READ's sink, the next ones following it; *@n
 * how many of the @want fit before the READ's LAST response, in one
 * SGE. */
uint8_t *rxe_comp_place_run(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			    uint32_t want, uint32_t *n, struct rxe_mr **mr)
{
	struct rxe_send_wqe *w;
	uint32_t idx, k;
	uint8_t *ptr;

	*n = 0;
	if (!(pkt->op->flags & IB_F_MIDDLE) || pkt->paylen != qp->mtu ||
	    !want)
		return NULL;
	w = read_due(qp, pkt);
	if (!w)
		return NULL;
	idx = (uint32_t)psn_diff(pkt->psn, w->first_psn);
	if (idx == 0 || idx + 1 >= w->npkts)
		return NULL;
	k = w->npkts - 1 - idx;
	if (k > want)
		k = want;
	ptr = rxe_read_sink_place(qp, w, idx * qp->mtu, k * qp->mtu, mr);
	if (!ptr)
		return NULL;
	*n = k;
	return ptr;
}

static enum comp_state do_read(struct rxe_qp *qp, struct rxe_pkt *pkt,
			       struct rxe_send_wqe **failed,
			       enum rnicpi_wc_status *status)
{
	struct rxe_send_wqe *w = wqe_for_psn(qp, pkt->psn);
	uint32_t idx, offset, want;
	unsigned int pos;

	if (!w || w->opcode != RNICPI_WR_RDMA_READ) {
		*failed = w ? w : oldest_pending(qp);
		*status = RNICPI_WC_BAD_RESP_ERR;
		rxe_qp_warn(qp, "%s PSN %u matches no READ", pkt->op->name,
			    pkt->psn);
		return *failed ? COMPST_ERROR : COMPST_DONE;
	}
	idx = (uint32_t)psn_diff(pkt->psn, w->first_psn);
	offset = idx * qp->mtu;
	/* First, middle, last or only must match the place. */
	pos = (idx == 0 ? IB_F_FIRST : 0) |
	      (idx == w->npkts - 1 ? IB_F_LAST : 0);
	if (!pos)
		pos = IB_F_MIDDLE;
	if ((pkt->op->flags & (IB_F_FIRST | IB_F_MIDDLE | IB_F_LAST)) != pos) {
		/* A restarted READ's responses begin with FIRST/ONLY at any
		 * index: accept FIRST where MIDDLE was due, ONLY for LAST. */
		bool restart = (pkt->op->flags & IB_F_FIRST) && idx > 0 &&
			       (pos & (IB_F_MIDDLE | IB_F_LAST));

		if (!restart) {
			*failed = w;
			*status = RNICPI_WC_BAD_RESP_ERR;
			rxe_qp_warn(qp, "%s at packet %u of %u", pkt->op->name,
				    idx, w->npkts);
			return COMPST_ERROR;
		}
	}
	rxe_qp_dbg(qp, "%s PSN %u: packet %u of READ WQE %" PRIu64 " (PSN %u, "
		   "%u bytes)", pkt->op->name, pkt->psn, idx, w->wr_id,
		   w->first_psn, w->length);
	want = w->length - offset < qp->mtu ? w->length - offset : qp->mtu;
	if (pkt->paylen != want) {
		*failed = w;
		*status = RNICPI_WC_BAD_RESP_ERR;
		rxe_qp_warn(qp, "%s carries %u bytes, expected %u",
			    pkt->op->name, pkt->paylen, want);
		return COMPST_ERROR;
	}
	if (rxe_read_sink_copy(qp, w, offset, pkt->payload, pkt->paylen)) {
		*failed = w;
		*status = RNICPI_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	qp->comp.psn = psn_add(pkt->psn, 1);
	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	if (idx == w->npkts - 1) {
		/* RNICPI_SEND_SINK_INV: the sink keys stop before the
		 * completion is seen. */
		if (w->flags & RNICPI_SEND_SINK_INV)
			for (uint32_t i = 0; i < w->num_sge; i++)
				rxe_sink_invalidate(qp, w->sge[i].lkey);
		w->state = WQE_DONE;
		if (qp->req.rd_atomic)
			qp->req.rd_atomic--;
	}
	return COMPST_DONE;
}

static enum comp_state do_atomic(struct rxe_qp *qp, struct rxe_pkt *pkt,
				 struct rxe_send_wqe **failed,
				 enum rnicpi_wc_status *status)
{
	struct rxe_send_wqe *w = wqe_for_psn(qp, pkt->psn);
	uint64_t orig;

	if (!w || (w->opcode != RNICPI_WR_ATOMIC_CMP_AND_SWP &&
		   w->opcode != RNICPI_WR_ATOMIC_FETCH_AND_ADD)) {
		*failed = w ? w : oldest_pending(qp);
		*status = RNICPI_WC_BAD_RESP_ERR;
		rxe_qp_warn(qp, "atomic ACK PSN %u matches no atomic",
			    pkt->psn);
		return *failed ? COMPST_ERROR : COMPST_DONE;
	}
	orig = atmack_orig(pkt_atmack(pkt));
	w->atomic_orig = orig;
	/* The original value lands in the local buffer in host order, as
	 * the verbs define it. */
	if (rxe_sgl_copy(qp, w->sge, w->num_sge, 0, (uint8_t *)&orig, 8,
			 true)) {
		*failed = w;
		*status = RNICPI_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	w->state = WQE_DONE;
	if (qp->req.rd_atomic)
		qp->req.rd_atomic--;
	qp->comp.psn = psn_add(pkt->psn, 1);
	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	return COMPST_DONE;
}

/* Go back N (IBA 9.7.5.2.2); the retry count bounds it. */
static enum comp_state do_retry(struct rxe_qp *qp,
				struct rxe_send_wqe **failed,
				enum rnicpi_wc_status *status)
{
	if (qp->comp.retry_left == 0) {
		*failed = oldest_pending(qp);
		*status = RNICPI_WC_RETRY_EXC_ERR;
		rxe_qp_warn(qp, "retry count %u exhausted at PSN %u",
			    qp->retry_cnt, qp->comp.psn);
		return *failed ? COMPST_ERROR : COMPST_DONE;
	}
	qp->comp.retry_left--;
	qp->comp.in_retry = true;
	rxe_req_reset_to(qp, qp->comp.psn);
	return COMPST_DONE;
}

/* IBA 9.7.5.2.8: wait the timer the RNR NAK names, then send again; RNR
 * retry 7 means without limit. */
static enum comp_state do_rnr(struct rxe_qp *qp, struct rxe_pkt *pkt,
			      struct rxe_send_wqe **failed,
			      enum rnicpi_wc_status *status)
{
	if (qp->rnr_retry != 7) {
		if (qp->comp.rnr_left == 0) {
			*failed = oldest_pending(qp);
			*status = RNICPI_WC_RNR_RETRY_EXC_ERR;
			rxe_qp_warn(qp, "RNR retry count %u exhausted",
				    qp->rnr_retry);
			return *failed ? COMPST_ERROR : COMPST_DONE;
		}
		qp->comp.rnr_left--;
	}
	rxe_req_reset_to(qp, pkt->psn);
	qp->comp.timer = RXE_TIMER_RNR;
	rxe_timer_set(qp, rxe_rnr_timer_usec(aeth_value(pkt_aeth(pkt))));
	return COMPST_DONE;
}

void rxe_comp_rcv(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	enum comp_state state = COMPST_CHECK_PSN;
	enum rnicpi_wc_status status = RNICPI_WC_GENERAL_ERR;
	struct rxe_send_wqe *failed = NULL;
	uint32_t old_psn = qp->comp.psn;

	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_SQD &&
	    qp->state != RNICPI_QPS_SQE)
		return;
	while (state != COMPST_DONE) {
		enum comp_state prev = state;

		switch (state) {
		case COMPST_CHECK_PSN:
			state = check_psn(qp, pkt);
			break;
		case COMPST_CHECK_ACK:
			state = check_ack(qp, pkt, &failed, &status);
			break;
		case COMPST_READ:
			state = do_read(qp, pkt, &failed, &status);
			break;
		case COMPST_ATOMIC:
			state = do_atomic(qp, pkt, &failed, &status);
			break;
		case COMPST_RETRY:
			/* Gone back already, and nothing moved since: the
			 * rest of the old stream's responses, ACKs and NAKs
			 * are still on their way and say nothing new. Wait
			 * for what the resent requests bring, or for the
			 * timer, instead of going back again (as Linux rxe
			 * does): each would spend one of the retry count's
			 * tries, and one lost READ response could spend
			 * them all in a microsecond. */
			state = qp->comp.in_retry ?
					COMPST_DONE :
					do_retry(qp, &failed, &status);
			break;
		case COMPST_RNR:
			state = do_rnr(qp, pkt, &failed, &status);
			break;
		case COMPST_ERROR:
			wqe_fail(qp, failed, status);
			rxe_comp_drain(qp);
			rxe_qp_error(qp);
			return;
		default:
			state = COMPST_DONE;
			break;
		}
		if (state != COMPST_DONE)
			rxe_qp_dbg(qp, "comp %s -> %s (PSN %u)",
				   comp_state_names[prev],
				   comp_state_names[state], pkt->psn);
	}
	rxe_comp_drain(qp);
	if (qp->state == RNICPI_QPS_ERR)
		return;
	/* Progress restarts the transport timer; the RNR timer
	 * keeps running. */
	if (qp->comp.timer != RXE_TIMER_RNR &&
	    (qp->comp.psn != old_psn || qp->comp.timer == RXE_TIMER_NONE))
		rxe_comp_arm_timer(qp);
	rxe_req_run(qp);
}

void rxe_comp_timer(struct rxe_qp *qp)
{
	enum rnicpi_wc_status status = RNICPI_WC_GENERAL_ERR;
	struct rxe_send_wqe *failed = NULL;
	enum rxe_timer_kind kind = qp->comp.timer;

	qp->comp.timer = RXE_TIMER_NONE;
	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_SQD)
		return;
	if (kind == RXE_TIMER_RETRANSMIT &&
	    psn_diff(qp->req.psn, qp->comp.psn) > 0) {
		rxe_count(qp->dev, RXE_CNT_TIMEOUTS);
		rxe_qp_dbg(qp, "transport timer expired at PSN %u",
			   qp->comp.psn);
		if (do_retry(qp, &failed, &status) == COMPST_ERROR) {
			wqe_fail(qp, failed, status);
			rxe_comp_drain(qp);
			rxe_qp_error(qp);
			return;
		}
	}
	rxe_req_run(qp);
	if (qp->state != RNICPI_QPS_ERR && qp->comp.timer == RXE_TIMER_NONE)
		rxe_comp_arm_timer(qp);
}
