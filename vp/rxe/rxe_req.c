/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE requester: turns send WQEs into request packets (IBA 9.7.1
 * PSN sequencing, 9.7.2 segmentation at the path MTU, 9.7.6 ACK
 * requests), keeps at most max_unacked packets and ORD READs/atomics in
 * flight, and rewinds for go-back-N retransmission (IBA 9.7.5.2).
 *
 * Each WQE goes through: POSTED -> (packets sent) -> PENDING -> DONE or
 * ERROR, the latter two set by the completer (rxe_comp.c).
 */
#include "config.h"

#include <string.h>

#include "vp/rxe/rxe.h"

enum req_step {
	REQ_NEXT_WQE,	/* pick the WQE at req.wqe */
	REQ_LOCAL,	/* a local operation (LOCAL_INV) */
	REQ_UD,		/* one UD datagram */
	REQ_RC,		/* the next packet of an RC WQE */
	REQ_STALL,	/* wait: window, ORD, fence, or RNR timer */
	REQ_ERROR,	/* a local error ended the WQE */
	REQ_FLUSH,	/* send what is built and stop */
};

static void pkt_init(struct rxe_txpkt *p)
{
	p->hdr_len = 0;
	p->niov = 1;
	p->n_mrs = 0;
}

/* Point the packet's payload at @len bytes of @w's data from @offset. */
static enum rxe_mem_err map_payload(struct rxe_qp *qp, struct rxe_send_wqe *w,
				    uint32_t offset, uint32_t len,
				    struct rxe_txpkt *p)
{
	uint32_t i;

	if (!len)
		return RXE_MEM_OK;
	if (w->flags & RNICPI_SEND_INLINE) {
		p->iov[p->niov].iov_base = w->inline_data + offset;
		p->iov[p->niov].iov_len = len;
		p->niov++;
		return RXE_MEM_OK;
	}
	for (i = 0; i < w->num_sge && len > 0; i++) {
		const struct rnicpi_sge *sge = &w->sge[i];
		enum rxe_mem_err e;
		struct rxe_mr *mr;
		uint8_t *ptr;
		uint32_t n;

		if (offset >= sge->length) {
			offset -= sge->length;
			continue;
		}
		n = sge->length - offset < len ? sge->length - offset : len;
		e = rxe_mem_resolve(qp, sge->lkey, false, sge->addr + offset,
				    n, 0, &mr, &ptr);
		if (e) {
			rxe_qp_warn(qp, "send WQE %" PRIu64 ": SGE %u lkey "
				    "0x%x: %s", w->wr_id, i, sge->lkey,
				    rxe_mem_err_name(e));
			return e;
		}
		p->mrs[p->n_mrs++] = mr;
		p->iov[p->niov].iov_base = ptr;
		p->iov[p->niov].iov_len = n;
		p->niov++;
		len -= n;
		offset = 0;
	}
	return len ? RXE_MEM_BAD_BOUNDS : RXE_MEM_OK;
}

static uint32_t wqe_npkts(const struct rxe_qp *qp, const struct rxe_send_wqe *w)
{
	switch (w->opcode) {
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
	case RNICPI_WR_ATOMIC_FETCH_AND_ADD:
		return 1;
	default:
		return w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1;
	}
}

/* Opcode of packet @idx of @n for @w (IBA 9.2.1 table 39). */
static uint8_t rc_opcode(const struct rxe_send_wqe *w, uint32_t idx,
			 uint32_t n)
{
	bool first = idx == 0, last = idx == n - 1;

	switch (w->opcode) {
	case RNICPI_WR_SEND:
		return first && last ? IB_OP_SEND_ONLY
		       : first	     ? IB_OP_SEND_FIRST
		       : last	     ? IB_OP_SEND_LAST
				     : IB_OP_SEND_MIDDLE;
	case RNICPI_WR_SEND_WITH_IMM:
		return first && last ? IB_OP_SEND_ONLY_IMM
			: first ? IB_OP_SEND_FIRST
			: last ? IB_OP_SEND_LAST_IMM : IB_OP_SEND_MIDDLE;
	case RNICPI_WR_SEND_WITH_INV:
		return first && last ? IB_OP_SEND_ONLY_INV
			: first ? IB_OP_SEND_FIRST
			: last ? IB_OP_SEND_LAST_INV : IB_OP_SEND_MIDDLE;
	case RNICPI_WR_RDMA_WRITE:
		return first && last ? IB_OP_WRITE_ONLY
			: first ? IB_OP_WRITE_FIRST
			: last ? IB_OP_WRITE_LAST : IB_OP_WRITE_MIDDLE;
	case RNICPI_WR_RDMA_WRITE_WITH_IMM:
		return first && last ? IB_OP_WRITE_ONLY_IMM
			: first ? IB_OP_WRITE_FIRST
			: last ? IB_OP_WRITE_LAST_IMM : IB_OP_WRITE_MIDDLE;
	case RNICPI_WR_RDMA_READ:
		return IB_OP_READ_REQUEST;
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
		return IB_OP_CMP_SWAP;
	default:
		return IB_OP_FETCH_ADD;
	}
}

/* Lay out BTH + extension headers for @opcode into @p. */
static void build_headers(struct rxe_qp *qp, struct rxe_txpkt *p,
			  uint8_t opcode, bool se, bool ackreq, uint32_t psn,
			  uint32_t dqpn)
{
	const struct ib_opcode_info *op = ib_opcode(opcode);

	memset(p->hdr, 0, op->hdr_len);
	/* MigReq 0, as Linux rxe sends (no path migration on RoCE). */
	bth_init((struct ib_bth *)p->hdr, opcode, se, false, 0,
		 IB_DEFAULT_PKEY, dqpn, ackreq, psn);
	p->hdr_len = op->hdr_len;
}

static bool is_rd_atomic(const struct rxe_send_wqe *w)
{
	return w->opcode == RNICPI_WR_RDMA_READ ||
	       w->opcode == RNICPI_WR_ATOMIC_CMP_AND_SWP ||
	       w->opcode == RNICPI_WR_ATOMIC_FETCH_AND_ADD;
}

/* Build the next packet of RC WQE @w; returns false on a local error. */
static bool build_rc(struct rxe_qp *qp, struct rxe_send_wqe *w,
		     struct rxe_txpkt *p)
{
	uint32_t n = wqe_npkts(qp, w);
	uint32_t idx = qp->req.offset / qp->mtu;
	uint8_t opcode = rc_opcode(w, idx, n);
	const struct ib_opcode_info *op = ib_opcode(opcode);
	uint32_t len = 0;
	bool last, se, ackreq;

	if (qp->req.offset == 0) {
		w->first_psn = qp->req.psn;
		w->npkts = n;
		w->last_psn = psn_add(w->first_psn, n - 1);
	}
	pkt_init(p);
	if (op->flags & IB_F_READ) {
		last = true;
		build_headers(qp, p, opcode, false, true, qp->req.psn,
			      qp->dest_qpn);
		/* A restarted READ asks for the rest only (IBA 9.7.5.2). */
		reth_set((struct ib_reth *)(p->hdr + op->reth_off),
			 w->remote_addr + qp->req.offset, w->rkey,
			 w->length - qp->req.offset);
		qp->req.psn = psn_add(qp->req.psn, n - idx);
		qp->req.rd_atomic++;
		qp->req.noack = 0;
		goto done;
	}
	if (op->flags & IB_F_ATOMIC) {
		bool cas = w->opcode == RNICPI_WR_ATOMIC_CMP_AND_SWP;

		last = true;
		build_headers(qp, p, opcode, false, true, qp->req.psn,
			      qp->dest_qpn);
		atmeth_set((struct ib_atmeth *)(p->hdr + op->atmeth_off),
			   w->remote_addr, w->rkey,
			   cas ? w->swap : w->compare_add,
			   cas ? w->compare_add : 0);
		qp->req.psn = psn_add(qp->req.psn, 1);
		qp->req.rd_atomic++;
		qp->req.noack = 0;
		goto done;
	}

	last = idx == n - 1;
	len = last ? w->length - qp->req.offset : qp->mtu;
	se = last && (w->flags & RNICPI_SEND_SOLICITED) &&
	     w->opcode != RNICPI_WR_RDMA_WRITE;
	ackreq = last || ++qp->req.noack >= qp->dev->ack_every;
	if (ackreq)
		qp->req.noack = 0;
	build_headers(qp, p, opcode, se, ackreq, qp->req.psn, qp->dest_qpn);
	if (op->flags & IB_F_RETH)
		reth_set((struct ib_reth *)(p->hdr + op->reth_off),
			 w->remote_addr, w->rkey, w->length);
	if (op->flags & IB_F_IMMDT)
		immdt_set((struct ib_immdt *)(p->hdr + op->immdt_off),
			  w->imm_or_inv);
	if (op->flags & IB_F_IETH)
		ieth_set((struct ib_ieth *)(p->hdr + op->ieth_off),
			 w->imm_or_inv);
	if (map_payload(qp, w, qp->req.offset, len, p)) {
		uint32_t i;

		for (i = 0; i < p->n_mrs; i++)
			rxe_mr_put(p->mrs[i]);
		p->n_mrs = 0;
		return false;
	}
	qp->req.psn = psn_add(qp->req.psn, 1);
	qp->req.offset += len;
done:
	if (last) {
		w->state = WQE_PENDING;
		qp->req.wqe++;
		qp->req.offset = 0;
	}
	return true;
}

static bool build_ud(struct rxe_qp *qp, struct rxe_send_wqe *w,
		     struct rxe_txpkt *p)
{
	uint8_t opcode = IB_OPC_UD | (w->opcode == RNICPI_WR_SEND_WITH_IMM
				      ? IB_OP_SEND_ONLY_IMM : IB_OP_SEND_ONLY);
	const struct ib_opcode_info *op = ib_opcode(opcode);
	/* IBA 10.2.5: a WR Q_Key with the high bit set means "use
	 * the QP's own Q_Key". */
	uint32_t qkey = (w->remote_qkey & 0x80000000u) ? qp->qkey
						       : w->remote_qkey;

	pkt_init(p);
	build_headers(qp, p, opcode, w->flags & RNICPI_SEND_SOLICITED, false,
		      qp->req.psn, w->remote_qpn);
	deth_set((struct ib_deth *)(p->hdr + op->deth_off), qkey,
		 qp->base.qp_num);
	if (op->flags & IB_F_IMMDT)
		immdt_set((struct ib_immdt *)(p->hdr + op->immdt_off),
			  w->imm_or_inv);
	if (map_payload(qp, w, 0, w->length, p)) {
		uint32_t i;

		for (i = 0; i < p->n_mrs; i++)
			rxe_mr_put(p->mrs[i]);
		p->n_mrs = 0;
		return false;
	}
	qp->req.psn = psn_add(qp->req.psn, 1);
	return true;
}

/* Local operations complete in order with the rest (IBA 10.8.3):
 * LOCAL_INV makes a key invalid until re-registered or re-bound
 * (10.6.6.1), BIND_MW binds a window (10.6.7.2). */
static void do_local(struct rxe_qp *qp, struct rxe_send_wqe *w)
{
	enum rnicpi_wc_status st = RNICPI_WC_SUCCESS;

	if (w->opcode == RNICPI_WR_BIND_MW) {
		st = rxe_mw_bind(qp, w);
	} else if (w->opcode == RNICPI_WR_REG_MR) {
		st = rxe_mr_fast_reg(qp, w);
		rxe_mr_put(w->reg_mr);
		w->reg_mr = NULL;
	} else if (rxe_mem_invalidate(qp, w->imm_or_inv, false)) {
		rxe_qp_warn(qp, "LOCAL_INV of key 0x%x: nothing of this QP's "
			    "PD to invalidate", w->imm_or_inv);
		st = RNICPI_WC_MW_BIND_ERR;
	}
	w->status = st;
	w->state = st == RNICPI_WC_SUCCESS ? WQE_DONE : WQE_ERROR;
}

static enum req_step req_next(struct rxe_qp *qp)
{
	struct rxe_send_wqe *w;

	if (qp->req.wqe == qp->sq_tail)
		return REQ_FLUSH;
	/* In SQD no new WQE starts; a partly sent one finishes. */
	if (qp->state == RNICPI_QPS_SQD && qp->req.offset == 0)
		return REQ_FLUSH;
	w = sq_wqe(qp, qp->req.wqe);
	if (qp->type != RNICPI_QPT_RC)
		return REQ_UD;
	if (w->opcode == RNICPI_WR_LOCAL_INV || w->opcode == RNICPI_WR_BIND_MW ||
	    w->opcode == RNICPI_WR_REG_MR)
		return REQ_LOCAL;
	if (qp->comp.timer == RXE_TIMER_RNR)
		return REQ_STALL;
	if (psn_diff(qp->req.psn, qp->comp.psn) >=
	    (int32_t)qp->dev->max_unacked)
		return REQ_STALL;
	/* IBA 10.8.3.3: a fenced WQE waits for earlier READs/atomics. */
	if ((w->flags & RNICPI_SEND_FENCE) && qp->req.offset == 0 &&
	    qp->req.rd_atomic > 0)
		return REQ_STALL;
	if (is_rd_atomic(w) && qp->req.offset == 0 &&
	    qp->req.rd_atomic >= (qp->max_rd_atomic ? qp->max_rd_atomic : 1u))
		return REQ_STALL;
	return REQ_RC;
}

void rxe_req_run(struct rxe_qp *qp)
{
	struct rxe_txpkt pkts[RXE_TX_BATCH];
	const struct rxe_av *av = &qp->av;
	enum req_step step = REQ_NEXT_WQE;
	bool sent_rc = false;
	int n = 0;

	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_SQD)
		return;
	while (step != REQ_FLUSH && step != REQ_STALL) {
		struct rxe_send_wqe *w = sq_wqe(qp, qp->req.wqe);

		switch (step) {
		case REQ_NEXT_WQE:
			step = req_next(qp);
			break;
		case REQ_LOCAL:
			do_local(qp, w);
			qp->req.wqe++;
			step = REQ_NEXT_WQE;
			break;
		case REQ_UD:
			/* One destination per datagram: send what is built
			 * for another address first. */
			if (n && av != &w->av) {
				rxe_xmit(qp, av, pkts, n);
				n = 0;
			}
			av = &w->av;
			if (!build_ud(qp, w, &pkts[n])) {
				step = REQ_ERROR;
				break;
			}
			rxe_xmit(qp, av, &pkts[n], 1);
			/* UD completes once sent (IBA 10.8.3.1). */
			w->state = WQE_DONE;
			qp->req.wqe++;
			step = REQ_NEXT_WQE;
			break;
		case REQ_RC:
			if (!build_rc(qp, w, &pkts[n])) {
				step = REQ_ERROR;
				break;
			}
			sent_rc = true;
			if (++n == RXE_TX_BATCH) {
				rxe_xmit(qp, av, pkts, n);
				n = 0;
			}
			step = REQ_NEXT_WQE;
			break;
		case REQ_ERROR:
			/* IBA 10.8.3.2: local protection error completes the
			 * WQE in error and the QP goes to ERR. */
			w->state = WQE_ERROR;
			w->status = RNICPI_WC_LOC_PROT_ERR;
			if (n)
				rxe_xmit(qp, av, pkts, n);
			n = 0;
			rxe_qp_error(qp);
			return;
		default:
			step = REQ_FLUSH;
			break;
		}
	}
	/* The ACK this QP owes its peer goes in the same system call, after
	 * the requests (a poll that received left it: rxe_net_poll_rx). */
	if (n && n < RXE_TX_BATCH && av == &qp->av && qp->resp.ack_pending &&
	    rxe_resp_build_ack(qp, &pkts[n])) {
		n++;
		rxe_count(qp->dev, RXE_CNT_ACKS_CARRIED);
	}
	if (n)
		rxe_xmit(qp, av, pkts, n);
	if (sent_rc && qp->comp.timer == RXE_TIMER_NONE)
		rxe_comp_arm_timer(qp);
	rxe_comp_drain(qp);
}

/*
 * Go back to @psn (IBA 9.7.5.2.2 go-back-N): the WQE holding it becomes
 * the next to send, from the packet with that PSN on; WQEs after it are
 * sent again whole.
 */
void rxe_req_reset_to(struct rxe_qp *qp, uint32_t psn)
{
	uint32_t i;
	int32_t resend = psn_diff(qp->req.psn, psn);

	if (resend <= 0)
		return;
	for (i = qp->sq_head; i != qp->req.wqe + (qp->req.offset ? 1 : 0);
	     i++) {
		struct rxe_send_wqe *w = sq_wqe(qp, i);

		if (w->opcode == RNICPI_WR_LOCAL_INV ||
		    w->opcode == RNICPI_WR_BIND_MW ||
		    w->opcode == RNICPI_WR_REG_MR || w->state == WQE_DONE ||
		    w->state == WQE_ERROR)
			continue;
		if (psn_diff(psn, w->first_psn) >= 0 &&
		    psn_diff(psn, w->last_psn) <= 0)
			break;
	}
	if (i == qp->req.wqe + (qp->req.offset ? 1 : 0)) {
		rxe_qp_dbg(qp, "rewind to PSN %u: no WQE holds it", psn);
		return;
	}
	rxe_count_n(qp->dev, RXE_CNT_RETRANSMITS, (uint64_t)resend);
	qp->req.wqe = i;
	{
		struct rxe_send_wqe *w = sq_wqe(qp, i);
		uint32_t idx = (uint32_t)psn_diff(psn, w->first_psn);

		/* The packet index counts whole MTUs, so does the offset;
		 * atomics have one packet. */
		qp->req.offset = is_rd_atomic(w) &&
				 w->opcode != RNICPI_WR_RDMA_READ
					 ? 0 : idx * qp->mtu;
		w->state = WQE_POSTED;
	}
	for (i = qp->req.wqe + 1; i != qp->sq_tail; i++)
		if (sq_wqe(qp, i)->state == WQE_PENDING)
			sq_wqe(qp, i)->state = WQE_POSTED;
	qp->req.psn = psn;
	qp->req.noack = 0;
	qp->req.rd_atomic = 0;
	for (i = qp->sq_head; i != qp->req.wqe; i++)
		if (is_rd_atomic(sq_wqe(qp, i)) &&
		    sq_wqe(qp, i)->state == WQE_PENDING)
			qp->req.rd_atomic++;
}
