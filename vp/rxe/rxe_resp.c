/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE responder: executes RC requests in PSN order (IBA 9.7.4,
 * 9.7.5.1), answers with ACKs (coalesced), NAKs, RNR NAKs, READ responses
 * and atomic ACKs, replays duplicates (9.7.5.1.1), and delivers UD/GSI
 * datagrams. Every request walks the states below; each step returns the
 * next, protocol errors are states of their own (IBA 9.9 error classes).
 */
#include "config.h"

#include <string.h>

#include "vp/rxe/rxe.h"

enum resp_state {
	RESPST_CHECK_PSN,
	RESPST_CHECK_OP_SEQ,
	RESPST_CHECK_OP_VALID,
	RESPST_CHECK_RESOURCE,
	RESPST_CHECK_LENGTH,
	RESPST_CHECK_RKEY,
	RESPST_EXECUTE,
	RESPST_COMPLETE,
	RESPST_ACKNOWLEDGE,
	RESPST_DUPLICATE,
	RESPST_ERR_PSN_OUT_OF_SEQ,	/* NAK PSN sequence error */
	RESPST_ERR_INVALID_REQ,		/* NAK invalid request, to ERR */
	RESPST_ERR_RNR,			/* RNR NAK, no receive WQE */
	RESPST_ERR_RKEY,		/* NAK remote access error */
	RESPST_ERR_REM_OP,		/* NAK remote operational error */
	RESPST_ERR_LOCAL_LEN,		/* message over the buffer */
	RESPST_DONE,
};

static const char *const resp_state_names[] = {
	[RESPST_CHECK_PSN] = "CHECK_PSN",
	[RESPST_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
	[RESPST_CHECK_OP_VALID] = "CHECK_OP_VALID",
	[RESPST_CHECK_RESOURCE] = "CHECK_RESOURCE",
	[RESPST_CHECK_LENGTH] = "CHECK_LENGTH",
	[RESPST_CHECK_RKEY] = "CHECK_RKEY",
	[RESPST_EXECUTE] = "EXECUTE",
	[RESPST_COMPLETE] = "COMPLETE",
	[RESPST_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESPST_DUPLICATE] = "DUPLICATE",
	[RESPST_ERR_PSN_OUT_OF_SEQ] = "ERR_PSN_OUT_OF_SEQ",
	[RESPST_ERR_INVALID_REQ] = "ERR_INVALID_REQ",
	[RESPST_ERR_RNR] = "ERR_RNR",
	[RESPST_ERR_RKEY] = "ERR_RKEY",
	[RESPST_ERR_REM_OP] = "ERR_REM_OP",
	[RESPST_ERR_LOCAL_LEN] = "ERR_LOCAL_LEN",
	[RESPST_DONE] = "DONE",
};

/* ------------------------------------------------------------------ */
/* Sending responses                                                  */
/* ------------------------------------------------------------------ */

static void build_resp_hdr(struct rxe_qp *qp, struct rxe_txpkt *p,
			   uint8_t opcode, uint32_t psn)
{
	const struct ib_opcode_info *op = ib_opcode(opcode);

	p->niov = 1;
	p->n_mrs = 0;
	memset(p->hdr, 0, op->hdr_len);
	bth_init((struct ib_bth *)p->hdr, opcode, false, false, 0,
		 IB_DEFAULT_PKEY, qp->dest_qpn, false, psn);
	p->hdr_len = op->hdr_len;
	if (op->flags & IB_F_AETH)
		aeth_set((struct ib_aeth *)(p->hdr + op->aeth_off),
			 AETH_TYPE_ACK | AETH_CREDIT_INVALID, qp->resp.msn);
}

/* An ACK or NAK with @syndrome for @psn (IBA 9.7.5.1.2). */
static void send_ack(struct rxe_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct rxe_txpkt p;

	build_resp_hdr(qp, &p, IB_OP_ACK, psn);
	aeth_set((struct ib_aeth *)(p.hdr + IB_BTH_BYTES), syndrome,
		 qp->resp.msn);
	rxe_xmit(qp, &qp->av, &p, 1);
}

bool rxe_resp_build_ack(struct rxe_qp *qp, struct rxe_txpkt *p)
{
	/* Coalesced ACK for everything up to ack_psn; while READ responses
	 * are still going out, they carry the acknowledgement. */
	if (!qp->resp.ack_pending || qp->resp.read.active ||
	    qp->state == RNICPI_QPS_ERR || qp->state == RNICPI_QPS_RESET)
		return false;
	qp->resp.ack_pending = false;
	build_resp_hdr(qp, p, IB_OP_ACK, qp->resp.ack_psn);
	aeth_set((struct ib_aeth *)(p->hdr + IB_BTH_BYTES),
		 AETH_TYPE_ACK | AETH_CREDIT_INVALID, qp->resp.msn);
	return true;
}

void rxe_resp_send_ack(struct rxe_qp *qp)
{
	struct rxe_txpkt p;

	if (rxe_resp_build_ack(qp, &p))
		rxe_xmit(qp, &qp->av, &p, 1);
}

static void send_atomic_ack(struct rxe_qp *qp, uint8_t syndrome, uint32_t psn,
			    uint64_t orig, uint32_t msn)
{
	const struct ib_opcode_info *op = ib_opcode(IB_OP_ATOMIC_ACK);
	struct rxe_txpkt p;

	build_resp_hdr(qp, &p, IB_OP_ATOMIC_ACK, psn);
	aeth_set((struct ib_aeth *)(p.hdr + op->aeth_off), syndrome, msn);
	atmack_set((struct ib_atmack *)(p.hdr + op->atmack_off), orig);
	rxe_xmit(qp, &qp->av, &p, 1);
}

/* Send up to @budget READ response packets; true when the READ is done. */
static bool read_burst(struct rxe_qp *qp, uint32_t budget)
{
	struct rxe_read_tx *rd = &qp->resp.read;
	struct rxe_txpkt pkts[RXE_TX_BATCH];
	int n = 0;

	while (rd->active && budget-- > 0) {
		struct rxe_txpkt *p = &pkts[n];
		uint32_t len = rd->resid < qp->mtu ? rd->resid : qp->mtu;
		bool first = rd->resid == rd->total;
		bool last = rd->resid <= qp->mtu;
		uint8_t opcode = first && last ? IB_OP_READ_RESP_ONLY
				 : first ? IB_OP_READ_RESP_FIRST
				 : last ? IB_OP_READ_RESP_LAST
				 : IB_OP_READ_RESP_MIDDLE;

		build_resp_hdr(qp, p, opcode, rd->psn);
		if (len) {
			struct rxe_mr *mr;
			uint8_t *ptr;

			/* Checked when the request came; the key may have
			 * been invalidated since (IBA 10.6.6). */
			if (rxe_mem_resolve(qp, rd->rkey, true,
					    rd->va, len,
					    RNICPI_ACCESS_REMOTE_READ, &mr,
					    &ptr)) {
				rxe_qp_warn(qp, "READ rkey 0x%x went away",
					    rd->rkey);
				rd->active = false;
				break;
			}
			p->mrs[p->n_mrs++] = mr;
			p->iov[1].iov_base = ptr;
			p->iov[1].iov_len = len;
			p->niov = 2;
		}
		rd->psn = psn_add(rd->psn, 1);
		rd->va += len;
		rd->resid -= len;
		if (last)
			rd->active = false;
		if (++n == RXE_TX_BATCH) {
			rxe_xmit(qp, &qp->av, pkts, n);
			n = 0;
		}
	}
	if (n)
		rxe_xmit(qp, &qp->av, pkts, n);
	return !rd->active;
}

void rxe_resp_continue(struct rxe_qp *qp)
{
	if (!qp->resp.read.active || qp->state == RNICPI_QPS_ERR)
		return;
	if (read_burst(qp, qp->dev->tx_burst)) {
		if (qp->resp.ack_pending)
			rxe_queue_ack(qp);
	} else {
		rxe_schedule(qp);
	}
}

/* ------------------------------------------------------------------ */
/* Checks                                                             */
/* ------------------------------------------------------------------ */

static enum resp_state check_psn(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	int32_t diff = psn_diff(pkt->psn, qp->resp.psn);

	if (diff > 0)
		return RESPST_ERR_PSN_OUT_OF_SEQ;
	if (diff < 0)
		return RESPST_DUPLICATE;
	qp->resp.nak_sent = false;
	return RESPST_CHECK_OP_SEQ;
}

/* IBA 9.7.4.1.3: FIRST opens a message, MIDDLE and LAST
 * continue the same kind, ONLY stands alone. */
static enum resp_state check_op_seq(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	uint32_t prev = ib_opcode(qp->resp.last_opcode)
				? ib_opcode(qp->resp.last_opcode)->flags : 0;
	bool cont = (f & (IB_F_MIDDLE | IB_F_LAST)) && !(f & IB_F_FIRST);

	if (qp->resp.in_msg) {
		if (!cont || (f & (IB_F_SEND | IB_F_WRITE)) !=
			     (prev & (IB_F_SEND | IB_F_WRITE))) {
			rxe_qp_warn(qp, "%s after %s: missing LAST",
				    pkt->op->name,
				    ib_opcode_name(qp->resp.last_opcode));
			return RESPST_ERR_INVALID_REQ;
		}
	} else if (cont) {
		rxe_qp_warn(qp, "%s without FIRST", pkt->op->name);
		return RESPST_ERR_INVALID_REQ;
	}
	return RESPST_CHECK_OP_VALID;
}

/* Operations the QP was not enabled for are invalid requests. */
static enum resp_state check_op_valid(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	unsigned int need = (f & IB_F_WRITE) ? RNICPI_ACCESS_REMOTE_WRITE
			    : (f & IB_F_READ) ? RNICPI_ACCESS_REMOTE_READ
			    : (f & IB_F_ATOMIC) ? RNICPI_ACCESS_REMOTE_ATOMIC
			    : 0;

	if (need && !(qp->access & need)) {
		rxe_qp_warn(qp, "%s: QP access flags 0x%x do not allow it",
			    pkt->op->name, qp->access);
		return RESPST_ERR_INVALID_REQ;
	}
	return RESPST_CHECK_RESOURCE;
}

static enum resp_state check_resource(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	if ((f & (IB_F_READ | IB_F_ATOMIC)) && qp->max_dest_rd_atomic == 0) {
		rxe_qp_warn(qp, "%s with IRD 0", pkt->op->name);
		return RESPST_ERR_INVALID_REQ;
	}
	/* A receive WQE is taken by the first packet of a SEND, or by the
	 * last of a WRITE with immediate (IBA 9.7.4.1.5). */
	if ((f & IB_F_RWR) && !qp->resp.have_rwqe &&
	    ((f & IB_F_FIRST) || (f & IB_F_WRITE))) {
		if (!rxe_rq_take(qp, &qp->resp.rwqe))
			return RESPST_ERR_RNR;
		qp->resp.have_rwqe = true;
		qp->resp.rcv_offset = 0;
	}
	return RESPST_CHECK_LENGTH;
}

/* IBA 9.7.4.1.6: FIRST and MIDDLE carry a full MTU, LAST and
 * ONLY at most one; a WRITE carries exactly the DMA length. */
static enum resp_state check_length(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	if ((f & (IB_F_FIRST | IB_F_MIDDLE)) && !(f & IB_F_LAST) &&
	    pkt->paylen != qp->mtu) {
		rxe_qp_warn(qp, "%s of %u bytes, path MTU %u", pkt->op->name,
			    pkt->paylen, qp->mtu);
		return RESPST_ERR_INVALID_REQ;
	}
	if ((f & IB_F_LAST) && pkt->paylen > qp->mtu) {
		rxe_qp_warn(qp, "%s of %u bytes over the MTU %u",
			    pkt->op->name, pkt->paylen, qp->mtu);
		return RESPST_ERR_INVALID_REQ;
	}
	if (f & IB_F_WRITE) {
		uint32_t resid = (f & IB_F_FIRST) ? reth_len(pkt_reth(pkt))
						  : qp->resp.write_resid;

		if (((f & IB_F_LAST) && pkt->paylen != resid) ||
		    (!(f & IB_F_LAST) && pkt->paylen >= resid)) {
			rxe_qp_warn(qp, "%s: %u bytes with %u to go",
				    pkt->op->name, pkt->paylen, resid);
			return RESPST_ERR_INVALID_REQ;
		}
	}
	if ((f & IB_F_SEND) && qp->resp.have_rwqe &&
	    qp->resp.rcv_offset + pkt->paylen > qp->resp.rwqe.length) {
		rxe_qp_warn(qp, "SEND of over %u bytes into a %u-byte "
			    "receive buffer", qp->resp.rcv_offset + pkt->paylen,
			    qp->resp.rwqe.length);
		return RESPST_ERR_LOCAL_LEN;
	}
	return RESPST_CHECK_RKEY;
}

/* IBA 9.7.4.1.4: R_Key, PD, rights and bounds, before a byte is
 * written or read. */
static enum resp_state check_rkey(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	unsigned int access;
	uint64_t va, len;
	uint32_t rkey;
	enum rxe_mem_err e;
	struct rxe_mr *mr;
	uint8_t *ptr;

	if (f & IB_F_ATOMIC) {
		va = atmeth_va(pkt_atmeth(pkt));
		rkey = atmeth_rkey(pkt_atmeth(pkt));
		len = 8;
		access = RNICPI_ACCESS_REMOTE_ATOMIC;
		if (va & 7) {
			rxe_qp_warn(qp, "atomic at unaligned VA 0x%" PRIx64,
				    va);
			return RESPST_ERR_INVALID_REQ;
		}
	} else if ((f & IB_F_RETH) && (f & (IB_F_READ | IB_F_WRITE))) {
		va = reth_va(pkt_reth(pkt));
		rkey = reth_rkey(pkt_reth(pkt));
		len = reth_len(pkt_reth(pkt));
		access = (f & IB_F_READ) ? RNICPI_ACCESS_REMOTE_READ
					 : RNICPI_ACCESS_REMOTE_WRITE;
		if (f & IB_F_WRITE) {
			qp->resp.write_va = va;
			qp->resp.write_rkey = rkey;
			qp->resp.write_resid = (uint32_t)len;
		}
		/* A zero-length transfer touches no memory: its R_Key is
		 * not checked. */
		if (len == 0)
			return RESPST_EXECUTE;
	} else {
		return RESPST_EXECUTE;
	}
	e = rxe_mem_resolve(qp, rkey, true, va, len, access,
			    &mr, &ptr);
	if (e) {
		rxe_qp_warn(qp, "%s rkey 0x%x VA 0x%" PRIx64 " len %" PRIu64
			    ": %s", pkt->op->name, rkey, va, len,
			    rxe_mem_err_name(e));
		return RESPST_ERR_RKEY;
	}
	rxe_mr_put(mr);
	return RESPST_EXECUTE;
}

/* Where the payload of the expected request @pkt would land, asked before
 * the payload is read from the socket: the checks the packet will meet
 * again in rxe_resp_rcv() (sequence, access, length, R_Key or receive
 * buffer) must all pass now. A WRITE's bytes go to its R_Key's region; a
 * SEND continuation's to the receive WQE it already holds, when the
 * bytes fall in one SGE. The rest (a SEND's first packet, which takes
 * the WQE, atomics, duplicates) is copied from a bounce buffer. */
uint8_t *rxe_resp_place(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			struct rxe_mr **mr)
{
	uint32_t f = pkt->op->flags;
	struct rxe_pkt hdr = *pkt;
	uint64_t va, len;
	uint32_t rkey;
	uint8_t *ptr;

	if (!pkt->paylen || psn_diff(pkt->psn, qp->resp.psn) != 0 ||
	    !(f & (IB_F_WRITE | IB_F_SEND)) || qp->resp.read.active)
		return NULL;
	if ((f & IB_F_RWR) && !qp->resp.have_rwqe)
		return NULL;
	if (check_op_seq(qp, &hdr) != RESPST_CHECK_OP_VALID ||
	    check_op_valid(qp, &hdr) != RESPST_CHECK_RESOURCE ||
	    check_length(qp, &hdr) != RESPST_CHECK_RKEY)
		return NULL;
	if (f & IB_F_SEND)
		return rxe_sgl_place(qp, qp->resp.rwqe.sge,
				     qp->resp.rwqe.num_sge,
				     qp->resp.rcv_offset, pkt->paylen, mr);
	/* As check_rkey(): FIRST and ONLY check the whole DMA range. */
	if (f & IB_F_FIRST) {
		va = reth_va(pkt_reth(pkt));
		rkey = reth_rkey(pkt_reth(pkt));
		len = reth_len(pkt_reth(pkt));
	} else {
		va = qp->resp.write_va;
		rkey = qp->resp.write_rkey;
		len = pkt->paylen;
	}
	if (len < pkt->paylen ||
	    rxe_mem_resolve(qp, rkey, true, va, len,
			    RNICPI_ACCESS_REMOTE_WRITE, mr, &ptr))
		return NULL;
	return ptr;
}

/* rxe_resp_place() for a run of packets shaped like @pkt, the expected
 * one: a WRITE MIDDLE with a full path MTU, followed by MIDDLEs with the
 * next PSNs (what a UDP GRO datagram of a peer's GSO send holds). Their
 * payloads follow each other in the target, so the first one's place is
 * all that is returned; *@n says how many of the @want packets fit in
 * the WRITE before its last byte, which belongs to the LAST packet that
 * must follow: a run that is not what it claims writes nowhere but in
 * this WRITE's range. The checks are those of rxe_resp_place(), over the
 * whole range. SENDs are not placed by the run: where a SEND ends is not
 * known before its LAST packet, and a run could carry the next message's
 * bytes past it into the receive buffer. */
uint8_t *rxe_resp_place_run(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			    uint32_t want, uint32_t *n, struct rxe_mr **mr)
{
	uint32_t f = pkt->op->flags, k;
	struct rxe_pkt hdr = *pkt;
	uint8_t *ptr;

	*n = 0;
	if (!(f & IB_F_MIDDLE) || !(f & IB_F_WRITE) ||
	    pkt->paylen != qp->mtu || !want ||
	    psn_diff(pkt->psn, qp->resp.psn) != 0 || qp->resp.read.active)
		return NULL;
	if (check_op_seq(qp, &hdr) != RESPST_CHECK_OP_VALID ||
	    check_op_valid(qp, &hdr) != RESPST_CHECK_RESOURCE ||
	    check_length(qp, &hdr) != RESPST_CHECK_RKEY)
		return NULL;
	/* MIDDLE packets leave at least one byte to the LAST. */
	k = (qp->resp.write_resid - 1) / qp->mtu;
	if (k > want)
		k = want;
	if (!k || rxe_mem_resolve(qp, qp->resp.write_rkey, true,
				  qp->resp.write_va, (uint64_t)k * qp->mtu,
				  RNICPI_ACCESS_REMOTE_WRITE, mr, &ptr))
		return NULL;
	*n = k;
	return ptr;
}

/* ------------------------------------------------------------------ */
/* Execution                                                          */
/* ------------------------------------------------------------------ */

static struct rxe_rd_res *res_alloc(struct rxe_qp *qp)
{
	struct rxe_rd_res *r = &qp->resp.res[qp->resp.res_next];

	qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.n_res;
	memset(r, 0, sizeof(*r));
	r->valid = true;
	return r;
}

static void start_read(struct rxe_qp *qp, uint32_t psn, uint64_t va,
		       uint32_t rkey, uint32_t len)
{
	struct rxe_read_tx *rd = &qp->resp.read;

	rd->active = true;
	rd->psn = psn;
	rd->first_psn = psn;
	rd->va = va;
	rd->rkey = rkey;
	rd->resid = len;
	rd->total = len;
	rxe_resp_continue(qp);
}

static enum resp_state execute(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	if (f & IB_F_SEND) {
		if (rxe_sgl_copy(qp, qp->resp.rwqe.sge, qp->resp.rwqe.num_sge,
				 qp->resp.rcv_offset, pkt->payload,
				 pkt->paylen, true)) {
			qp->resp.rcv_status = RNICPI_WC_LOC_PROT_ERR;
			return RESPST_ERR_REM_OP;
		}
		qp->resp.rcv_offset += pkt->paylen;
	} else if (f & IB_F_WRITE) {
		if (pkt->paylen) {
			struct rxe_mr *mr;
			uint8_t *ptr;

			if (rxe_mem_resolve(qp, qp->resp.write_rkey, true,
					    qp->resp.write_va, pkt->paylen,
					    RNICPI_ACCESS_REMOTE_WRITE, &mr,
					    &ptr))
				return RESPST_ERR_RKEY;
			/* Directly placed payloads are there already. */
			if (ptr != pkt->payload)
				memcpy(ptr, pkt->payload, pkt->paylen);
			rxe_mr_put(mr);
		}
		qp->resp.write_va += pkt->paylen;
		qp->resp.write_resid -= pkt->paylen;
	} else if (f & IB_F_READ) {
		const struct ib_reth *reth = pkt_reth(pkt);
		uint32_t len = reth_len(reth);
		uint32_t n = len ? (len + qp->mtu - 1) / qp->mtu : 1;
		struct rxe_rd_res *r = res_alloc(qp);

		qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
		r->first_psn = pkt->psn;
		r->last_psn = psn_add(pkt->psn, n - 1);
		r->va = reth_va(reth);
		r->rkey = reth_rkey(reth);
		r->length = len;
		/* The READ uses one PSN per response packet. */
		qp->resp.psn = psn_add(pkt->psn, n);
		start_read(qp, pkt->psn, r->va, r->rkey, len);
		return RESPST_DONE;
	} else if (f & IB_F_ATOMIC) {
		const struct ib_atmeth *a = pkt_atmeth(pkt);
		struct rxe_rd_res *r;
		struct rxe_mr *mr;
		uint64_t *p, orig;

		if (rxe_mem_resolve(qp, atmeth_rkey(a), true,
				    atmeth_va(a), 8,
				    RNICPI_ACCESS_REMOTE_ATOMIC, &mr,
				    (uint8_t **)&p))
			return RESPST_ERR_RKEY;
		/* Atomic with respect to every user of this memory in the
		 * process: a locked instruction on the 8 bytes (IBA 9.4.5). */
		if (pkt->opcode == IB_OP_CMP_SWAP) {
			orig = atmeth_compare(a);
			__atomic_compare_exchange_n(p, &orig,
						    atmeth_swap_add(a), false,
						    __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		} else {
			orig = __atomic_fetch_add(p, atmeth_swap_add(a),
						  __ATOMIC_SEQ_CST);
		}
		rxe_mr_put(mr);
		qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
		r = res_alloc(qp);
		r->atomic = true;
		r->first_psn = r->last_psn = pkt->psn;
		r->atomic_orig = orig;
		r->msn = qp->resp.msn;
		qp->resp.psn = psn_add(pkt->psn, 1);
		send_atomic_ack(qp, AETH_TYPE_ACK | AETH_CREDIT_INVALID,
				pkt->psn, orig, qp->resp.msn);
		return RESPST_DONE;
	}
	if ((f & IB_F_IETH) && (f & IB_F_LAST)) {
		uint32_t key = ieth_rkey(pkt_ieth(pkt));

		/* IBA 10.6.6.2: SEND with Invalidate frees the named key (a
		 * region, or a type 2 window bound to this QP); anything
		 * else is an invalid request. */
		if (rxe_mem_invalidate(qp, key, true)) {
			rxe_qp_warn(qp, "SEND_WITH_INV of key 0x%x: nothing "
				    "this QP may invalidate", key);
			qp->resp.rcv_status = RNICPI_WC_REM_INV_REQ_ERR;
			return RESPST_ERR_INVALID_REQ;
		}
	}
	return (f & IB_F_LAST) ? RESPST_COMPLETE : RESPST_ACKNOWLEDGE;
}

static enum resp_state complete(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	struct rnicpi_wc wc;

	qp->resp.msn = (qp->resp.msn + 1) & 0xffffff;
	if (!(f & IB_F_RWR))
		return RESPST_ACKNOWLEDGE;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->resp.rwqe.wr_id;
	wc.status = RNICPI_WC_SUCCESS;
	wc.qp_num = qp->base.qp_num;
	wc.src_qp = qp->dest_qpn;
	if (f & IB_F_SEND) {
		wc.opcode = RNICPI_WC_RECV;
		wc.byte_len = qp->resp.rcv_offset;
	} else {
		wc.opcode = RNICPI_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = qp->resp.write_total;
	}
	if (f & IB_F_IMMDT) {
		wc.wc_flags |= RNICPI_WC_WITH_IMM;
		wc.imm_data = immdt_get(pkt_immdt(pkt));
	}
	if (f & IB_F_IETH) {
		wc.wc_flags |= RNICPI_WC_WITH_INV;
		wc.invalidated_rkey = ieth_rkey(pkt_ieth(pkt));
	}
	if (bth_se(pkt_bth(pkt)))
		wc.wc_flags |= RNICPI_WC_SOLICITED;
	qp->resp.have_rwqe = false;
	rxe_cq_post(qp, qp->rcq, &wc, bth_se(pkt_bth(pkt)));
	return RESPST_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	qp->resp.in_msg = !(f & IB_F_LAST);
	qp->resp.last_opcode = pkt->opcode;
	qp->resp.psn = psn_add(pkt->psn, 1);
	if (bth_ackreq(pkt_bth(pkt))) {
		qp->resp.ack_psn = pkt->psn;
		qp->resp.ack_pending = true;
		rxe_queue_ack(qp);
	}
	return RESPST_DONE;
}

/* IBA 9.7.5.1.1: a duplicate SEND/WRITE is acknowledged again, a READ is
 * executed again from the duplicate's PSN, an atomic's saved result is
 * sent again (never executed twice).
 * The duplicate's ACK names the duplicate's own PSN, not the newest one
 * executed: that may be a READ's or an atomic's, which only their own
 * responses may acknowledge. A requester going back after a lost ACK
 * resends the READ right behind; an ACK naming it would complete it
 * without data at a requester that trusts it (Linux 6.1 rxe does for a
 * READ of one packet: an rping client then saw the previous round's
 * bytes). A newer pending ACK stays. */
static enum resp_state duplicate(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t f = pkt->op->flags;
	uint32_t i;

	rxe_count(qp->dev, RXE_CNT_DUP_REQ);
	if (!(f & (IB_F_READ | IB_F_ATOMIC))) {
		if (bth_ackreq(pkt_bth(pkt)) || (f & IB_F_LAST)) {
			if (!qp->resp.ack_pending ||
			    psn_diff(pkt->psn, qp->resp.ack_psn) > 0)
				qp->resp.ack_psn = pkt->psn;
			qp->resp.ack_pending = true;
			rxe_queue_ack(qp);
		}
		return RESPST_DONE;
	}
	for (i = 0; i < qp->resp.n_res; i++) {
		struct rxe_rd_res *r = &qp->resp.res[i];

		if (!r->valid || r->atomic != !!(f & IB_F_ATOMIC) ||
		    psn_diff(pkt->psn, r->first_psn) < 0 ||
		    psn_diff(pkt->psn, r->last_psn) > 0)
			continue;
		if (r->atomic) {
			send_atomic_ack(qp, AETH_TYPE_ACK | AETH_CREDIT_INVALID,
					pkt->psn, r->atomic_orig, r->msn);
			return RESPST_DONE;
		}
		{
			const struct ib_reth *reth = pkt_reth(pkt);
			uint64_t va = reth_va(reth);
			uint32_t len = reth_len(reth);
			struct rxe_mr *mr;
			uint8_t *ptr;

			/* The restarted READ must stay inside the original. */
			if (va < r->va || va - r->va > r->length ||
			    len > r->length - (va - r->va) ||
			    (len &&
			     rxe_mem_resolve(qp, reth_rkey(reth), true, va, len,
					     RNICPI_ACCESS_REMOTE_READ, &mr,
					     &ptr)))
				return RESPST_DONE;
			if (len)
				rxe_mr_put(mr);
			start_read(qp, pkt->psn, va, reth_rkey(reth), len);
			return RESPST_DONE;
		}
	}
	rxe_qp_dbg(qp, "duplicate %s PSN %u: no resource, dropped",
		   pkt->op->name, pkt->psn);
	return RESPST_DONE;
}

/* What the responder found wrong, for the async event (rnicpi.h's
 * RNICPI_TERM_LAYER_IBA): from the error state, the check that led to
 * it (@from) and the request. */
static enum rnicpi_iba_cause nak_cause(const struct rxe_qp *qp,
				       const struct rxe_pkt *pkt,
				       enum resp_state err,
				       enum resp_state from)
{
	uint32_t f = pkt->op->flags;

	switch (err) {
	case RESPST_ERR_LOCAL_LEN:
		return RNICPI_IBA_CAUSE_RECV_LENGTH;
	case RESPST_ERR_RKEY:
		return (f & IB_F_WRITE)	   ? RNICPI_IBA_CAUSE_WRITE_ACCESS
		       : (f & IB_F_READ)   ? RNICPI_IBA_CAUSE_READ_ACCESS
		       : (f & IB_F_ATOMIC) ? RNICPI_IBA_CAUSE_ATOMIC_ACCESS
					   : RNICPI_IBA_CAUSE_OTHER;
	case RESPST_ERR_REM_OP:
		return qp->resp.rcv_status == RNICPI_WC_LOC_PROT_ERR
			       ? RNICPI_IBA_CAUSE_RECV_PROT
			       : RNICPI_IBA_CAUSE_OTHER;
	case RESPST_ERR_INVALID_REQ:
		if (from == RESPST_CHECK_OP_SEQ ||
		    from == RESPST_CHECK_OP_VALID ||
		    from == RESPST_CHECK_RESOURCE)
			return RNICPI_IBA_CAUSE_OPCODE;
		if (from == RESPST_CHECK_LENGTH)
			return RNICPI_IBA_CAUSE_LENGTH;
		return RNICPI_IBA_CAUSE_OTHER;
	default:
		return RNICPI_IBA_CAUSE_OTHER;
	}
}

/* IBA 9.9.2 class B/C/D errors at the responder: NAK the request, report
 * the error where a receive WQE was in use, move to ERR, tell the owner
 * (with the NAK code and @cause, rnicpi.h's RNICPI_TERM_LAYER_IBA). */
static void fail(struct rxe_qp *qp, struct rxe_pkt *pkt, enum ib_nak_code code,
		 enum rnicpi_wc_status wc_status, enum rnicpi_event_type event,
		 enum rnicpi_iba_cause cause)
{
	rxe_count(qp->dev, RXE_CNT_NAKS_SENT);
	send_ack(qp, AETH_TYPE_NAK | code, pkt->psn);
	/* The NAK acknowledges every request before its PSN: a
	 * coalesced ACK still owed has nothing left to say. */
	qp->resp.ack_pending = false;
	if (qp->resp.have_rwqe) {
		struct rnicpi_wc wc = {
			.wr_id = qp->resp.rwqe.wr_id,
			.status = wc_status,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		rxe_cq_post(qp, qp->rcq, &wc, false);
		qp->resp.have_rwqe = false;
	}
	rxe_qp_event_nak(qp, event, code, cause, false);
	rxe_qp_error(qp);
}

void rxe_resp_rcv(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	enum resp_state state = RESPST_CHECK_PSN;
	enum resp_state from = RESPST_CHECK_PSN; /* the last check run */

	/* READ responses still going out precede anything later. */
	while (qp->resp.read.active)
		read_burst(qp, UINT32_MAX);
	if (pkt->op->flags & IB_F_RWR)
		qp->resp.rcv_status = RNICPI_WC_SUCCESS;
	while (state != RESPST_DONE) {
		enum resp_state prev = state;

		if (state < RESPST_ERR_PSN_OUT_OF_SEQ)
			from = state;
		switch (state) {
		case RESPST_CHECK_PSN:
			state = check_psn(qp, pkt);
			break;
		case RESPST_CHECK_OP_SEQ:
			state = check_op_seq(qp, pkt);
			break;
		case RESPST_CHECK_OP_VALID:
			state = check_op_valid(qp, pkt);
			break;
		case RESPST_CHECK_RESOURCE:
			state = check_resource(qp, pkt);
			break;
		case RESPST_CHECK_LENGTH:
			state = check_length(qp, pkt);
			break;
		case RESPST_CHECK_RKEY:
			state = check_rkey(qp, pkt);
			break;
		case RESPST_EXECUTE:
			if ((pkt->op->flags & IB_F_WRITE) &&
			    (pkt->op->flags & IB_F_FIRST))
				qp->resp.write_total = qp->resp.write_resid;
			state = execute(qp, pkt);
			break;
		case RESPST_COMPLETE:
			state = complete(qp, pkt);
			break;
		case RESPST_ACKNOWLEDGE:
			state = acknowledge(qp, pkt);
			break;
		case RESPST_DUPLICATE:
			state = duplicate(qp, pkt);
			break;
		case RESPST_ERR_PSN_OUT_OF_SEQ:
			/* One NAK per gap, then silence until the
			 * expected PSN shows up. */
			if (!qp->resp.nak_sent) {
				qp->resp.nak_sent = true;
				rxe_count(qp->dev, RXE_CNT_SEQ_NAKS_SENT);
				send_ack(qp,
					 AETH_TYPE_NAK | AETH_NAK_PSN_SEQ_ERR,
					 qp->resp.psn);
			}
			state = RESPST_DONE;
			break;
		case RESPST_ERR_RNR:
			/* RNR NAK with our minimum RNR timer; the
			 * PSN is not consumed. */
			rxe_count(qp->dev, RXE_CNT_RNR_NAKS_SENT);
			send_ack(qp, AETH_TYPE_RNR | qp->min_rnr_timer,
				 pkt->psn);
			state = RESPST_DONE;
			break;
		case RESPST_ERR_INVALID_REQ:
			fail(qp, pkt, AETH_NAK_INVALID_REQ,
			     qp->resp.rcv_status != RNICPI_WC_SUCCESS
				     ? qp->resp.rcv_status
				     : RNICPI_WC_REM_INV_REQ_ERR,
			     RNICPI_EVENT_QP_REQ_ERR,
			     nak_cause(qp, pkt, state, from));
			state = RESPST_DONE;
			break;
		case RESPST_ERR_LOCAL_LEN:
			fail(qp, pkt, AETH_NAK_INVALID_REQ,
			     RNICPI_WC_LOC_LEN_ERR, RNICPI_EVENT_QP_REQ_ERR,
			     nak_cause(qp, pkt, state, from));
			state = RESPST_DONE;
			break;
		case RESPST_ERR_RKEY:
			fail(qp, pkt, AETH_NAK_REM_ACCESS_ERR,
			     RNICPI_WC_REM_ACCESS_ERR,
			     RNICPI_EVENT_QP_ACCESS_ERR,
			     nak_cause(qp, pkt, state, from));
			state = RESPST_DONE;
			break;
		case RESPST_ERR_REM_OP:
			fail(qp, pkt, AETH_NAK_REM_OP_ERR,
			     qp->resp.rcv_status != RNICPI_WC_SUCCESS
				     ? qp->resp.rcv_status
				     : RNICPI_WC_REM_OP_ERR,
			     RNICPI_EVENT_QP_FATAL,
			     nak_cause(qp, pkt, state, from));
			state = RESPST_DONE;
			break;
		default:
			state = RESPST_DONE;
			break;
		}
		if (state != RESPST_DONE && state != prev + 1)
			rxe_qp_dbg(qp, "resp %s -> %s (%s PSN %u)",
				   resp_state_names[prev],
				   resp_state_names[state], pkt->op->name,
				   pkt->psn);
	}
}

/* ------------------------------------------------------------------ */
/* UD and GSI receive (IBA 9.8.3, 13.5.3)                             */
/* ------------------------------------------------------------------ */

void rxe_resp_ud(struct rxe_qp *qp, struct rxe_pkt *pkt)
{
	uint32_t qkey = deth_qkey(pkt_deth(pkt));
	uint32_t want = qp->type == RNICPI_QPT_GSI ? IB_GSI_QKEY : qp->qkey;
	struct rxe_recv_wqe rwqe;
	struct rnicpi_wc wc;

	/* The Q_Key must match, else the datagram is dropped
	 * silently (and counted as a Q_Key violation). */
	if (qkey != want) {
		rxe_qp_dbg(qp, "drop UD: Q_Key 0x%08x, ours 0x%08x", qkey,
			   want);
		rxe_count(qp->dev, RXE_CNT_QKEY_ERR);
		return;
	}
	if (pkt->paylen > qp->mtu) {
		rxe_count(qp->dev, RXE_CNT_HDR_ERR);
		return;
	}
	/* UD has no RNR: no receive WQE, no datagram (IBA 9.8.3.1). */
	if (!rxe_rq_take(qp, &rwqe)) {
		rxe_qp_dbg(qp, "drop UD: no receive WQE");
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = rwqe.wr_id;
	wc.qp_num = qp->base.qp_num;
	wc.opcode = RNICPI_WC_RECV;
	wc.src_qp = deth_sqpn(pkt_deth(pkt));
	wc.wc_flags = RNICPI_WC_GRH;
	wc.byte_len = pkt->paylen + IB_GRH_BYTES;
	if (wc.byte_len > rwqe.length) {
		wc.status = RNICPI_WC_LOC_LEN_ERR;
	} else if (rxe_sgl_copy(qp, rwqe.sge, rwqe.num_sge, 0, pkt->grh.b,
				IB_GRH_BYTES, true) ||
		   rxe_sgl_copy(qp, rwqe.sge, rwqe.num_sge, IB_GRH_BYTES,
				pkt->payload, pkt->paylen, true)) {
		wc.status = RNICPI_WC_LOC_PROT_ERR;
	}
	if (pkt->op->flags & IB_F_IMMDT) {
		wc.wc_flags |= RNICPI_WC_WITH_IMM;
		wc.imm_data = immdt_get(pkt_immdt(pkt));
	}
	if (bth_se(pkt_bth(pkt)))
		wc.wc_flags |= RNICPI_WC_SOLICITED;
	rxe_cq_post(qp, qp->rcq, &wc, bth_se(pkt_bth(pkt)));
	if (wc.status != RNICPI_WC_SUCCESS)
		rxe_qp_error(qp);
}
