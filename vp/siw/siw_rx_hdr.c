/* SPDX-License-Identifier: MIT */
/*
 * siw_rx_hdr.c - the checks of an FPDU's header, once the receive state
 * machine (siw_rx.c) has read it whole: DDP and RDMAP versions, the
 * opcode and its DDP model, the RTR of RFC 6581, then per opcode the
 * checks against the QP, the STag's region, its PD and rights, the
 * outstanding Reads and the posted receives. They decide where the
 * payload goes (rx->dst) and the state to go on with; every violation
 * ends in the Terminate RFC 5040 §7.4 / RFC 5041 §7.2 name for it.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "vp/siw/siw_rx.h"

/* ------------------------------------------------------------------ */
/* Header checks, one per opcode                                       */
/* ------------------------------------------------------------------ */

/* RFC 5041 §7.2 / RFC 5040 §7.4: tagged buffer checks for an inbound
 * RDMA Write, in the order STag, PD, rights, wrap, bounds. */
static int check_write(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_tagged_hdr *h = (const void *)rx->hdr;
	uint32_t stag = be32toh(h->stag_be);
	uint64_t to = be64toh(h->to_be);
	struct siw_mr *mr;

	if (!(qp->access & RNICPI_ACCESS_REMOTE_WRITE)) {
		siw_qp_info(qp, "RDMA Write refused: QP has no remote write");
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_ACCESS_RIGHTS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	/* A zero-length Write carries nothing to place; its STag need not
	 * be valid (RFC 6581 RTR uses one). */
	if (!rx->payload_len)
		return SIW_RX_TRAILER;
	mr = siw_stag_get(qp->dev, stag);
	if (!mr || !siw_mr_usable(mr)) {
		siw_qp_info(qp, "RDMA Write to invalid STag 0x%08x", stag);
		siw_mr_put(mr);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			       DDP_ECODE_T_INVALID_STAG,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	rx->wmr = mr;
	if (mr->pd != &qp->pd->base ||
	    (mr->qp_bound && mr->qpn != qp->base.qp_num)) {
		siw_qp_info(qp, "RDMA Write: STag 0x%08x of another %s", stag,
			    mr->pd != &qp->pd->base ? "PD" : "QP");
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			       DDP_ECODE_T_STAG_NOT_ASSOC,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (!(mr->access & RNICPI_ACCESS_REMOTE_WRITE)) {
		siw_qp_info(qp, "RDMA Write: STag 0x%08x lacks remote write",
			    stag);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_ACCESS_RIGHTS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (to + rx->payload_len < to) {
		siw_qp_info(qp, "RDMA Write: TO 0x%llx + %u wraps",
			    (unsigned long long)to, rx->payload_len);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			       DDP_ECODE_T_TO_WRAP,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (to < mr->iova || to - mr->iova > mr->length ||
	    rx->payload_len > mr->length - (to - mr->iova)) {
		siw_qp_info(qp, "RDMA Write: TO 0x%llx len %u outside STag "
			    "0x%08x [0x%llx, +%llu)", (unsigned long long)to,
			    rx->payload_len, stag,
			    (unsigned long long)mr->iova,
			    (unsigned long long)mr->length);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			       DDP_ECODE_T_BASE_BOUNDS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	rx->dst[0].iov_base = mr->addr + (to - mr->iova);
	rx->dst[0].iov_len = rx->payload_len;
	rx->n_dst = 1;
	rx->dst_off = 0;
	return SIW_RX_PAYLOAD;
}

/* A Read Response that breaks the rules: the Read it answers fails with
 * a bad-response status (the QP flushes the rest), then Terminate. */
static int read_resp_fail(struct siw_qp *qp, struct siw_orqe *o,
			  uint8_t ecode)
{
	if (o->sq_idx >= 0)
		siw_sq_complete(qp, (uint32_t)o->sq_idx,
				RNICPI_WC_BAD_RESP_ERR,
				(uint32_t)TERM_LAYER_DDP << 12 |
					(uint32_t)DDP_ETYPE_TAGGED << 8 | ecode);
	return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED, ecode,
		       RNICPI_EVENT_QP_ACCESS_ERR);
}

/* A Read Response lands in the oldest outstanding Read's sink SGEs. */
static int check_read_resp(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_tagged_hdr *h = (const void *)rx->hdr;
	uint32_t stag = be32toh(h->stag_be);
	uint64_t to = be64toh(h->to_be), off;
	struct siw_orqe *o;

	if (!qp->orq_count) {
		siw_qp_info(qp, "Read Response with no Read outstanding");
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE, RNICPI_EVENT_QP_REQ_ERR);
	}
	o = &qp->orq[qp->orq_head];
	if (!rx->payload_len)
		return SIW_RX_TRAILER;
	if (stag != o->sink_stag) {
		siw_qp_info(qp, "Read Response to STag 0x%08x, expected 0x%08x",
			    stag, o->sink_stag);
		return read_resp_fail(qp, o, DDP_ECODE_T_INVALID_STAG);
	}
	if (to < o->sink_to || to + rx->payload_len < to) {
		siw_qp_info(qp, "Read Response TO 0x%llx below sink 0x%llx",
			    (unsigned long long)to,
			    (unsigned long long)o->sink_to);
		return read_resp_fail(qp, o, DDP_ECODE_T_BASE_BOUNDS);
	}
	off = to - o->sink_to;
	/* The Data Source answers a Read in order (RFC 5040 §4.5, DDP over
	 * an in-order LLP): a segment that does not continue where the last
	 * one ended is out of bounds, as Linux siw sees it. Bytes placed
	 * twice would also count twice: a Read's completion must not say
	 * it brought more than it asked for. */
	if (off != o->got) {
		siw_qp_info(qp, "Read Response at offset %llu, the next byte "
			    "due is %u", (unsigned long long)off, o->got);
		return read_resp_fail(qp, o, DDP_ECODE_T_BASE_BOUNDS);
	}
	if (off > o->size || rx->payload_len > o->size - off) {
		siw_qp_info(qp, "Read Response [%llu, +%u) beyond the %u bytes "
			    "asked for", (unsigned long long)off,
			    rx->payload_len, o->size);
		return read_resp_fail(qp, o, DDP_ECODE_T_BASE_BOUNDS);
	}
	memcpy(rx->dst, o->seg, o->n_seg * sizeof(o->seg[0]));
	rx->n_dst = o->n_seg;
	rx->dst_off = off;
	return SIW_RX_PAYLOAD;
}

/* Take the next receive WR and resolve its SGEs for local write. */
static int take_rqe(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	uint32_t i;

	if (qp->srq) {
		if (!siw_srq_take(qp->srq, &rx->rqe))
			return -ENOBUFS;
		rx->send_from_srq = true;
	} else {
		pthread_mutex_lock(&qp->rq_lock);
		if (!qp->rq_count) {
			pthread_mutex_unlock(&qp->rq_lock);
			return -ENOBUFS;
		}
		rx->rqe = qp->rq[qp->rq_head];
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
		pthread_mutex_unlock(&qp->rq_lock);
		rx->send_from_srq = false;
	}
	rx->send_active = true;
	rx->rqe_nseg = 0;
	rx->rqe_len = 0;
	for (i = 0; i < rx->rqe.num_sge; i++) {
		uint8_t *ptr;
		int rc;

		if (!rx->rqe.sge[i].length)
			continue;
		rc = siw_sge_resolve(qp->dev, qp->pd, &rx->rqe.sge[i],
				     RNICPI_ACCESS_LOCAL_WRITE,
				     &rx->rqe_mr[rx->rqe_nseg], &ptr);
		if (rc) {
			siw_qp_info(qp, "receive WR 0x%llx SGE %u (lkey 0x%08x):"
				    " %s", (unsigned long long)rx->rqe.wr_id, i,
				    rx->rqe.sge[i].lkey, g_strerror(-rc));
			return rc;
		}
		rx->rqe_seg[rx->rqe_nseg].iov_base = ptr;
		rx->rqe_seg[rx->rqe_nseg].iov_len = rx->rqe.sge[i].length;
		rx->rqe_len += rx->rqe.sge[i].length;
		rx->rqe_nseg++;
	}
	return 0;
}

/* Untagged Send segments (RFC 5041 §5.3): QN 0, MSN, MO in order. */
static int check_send(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_untagged_hdr *h = (const void *)rx->hdr;
	uint32_t qn = be32toh(h->qn_be), msn = be32toh(h->msn_be);
	uint32_t mo = be32toh(h->mo_be);

	if (qn != DDP_QN_SEND) {
		siw_qp_info(qp, "Send on DDP queue %u", qn);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_QN, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (!rx->send_active) {
		int rc;

		if (msn != rx->msn[DDP_QN_SEND]) {
			siw_qp_info(qp, "Send MSN %u, expected %u", msn,
				    rx->msn[DDP_QN_SEND]);
			return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_ECODE_UT_MSN_RANGE,
				       RNICPI_EVENT_QP_REQ_ERR);
		}
		if (mo != 0) {
			siw_qp_info(qp, "Send starts at MO %u", mo);
			return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_ECODE_UT_INVALID_MO,
				       RNICPI_EVENT_QP_REQ_ERR);
		}
		rc = take_rqe(qp);
		if (rc == -ENOBUFS) {
			siw_qp_info(qp, "Send MSN %u: no receive posted", msn);
			return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				       DDP_ECODE_UT_NO_BUFFER,
				       RNICPI_EVENT_QP_REQ_ERR);
		}
		if (rc) {
			siw_rx_complete_rqe(qp, RNICPI_WC_LOC_PROT_ERR, false, 0,
					    false);
			return rx_fail(qp, TERM_LAYER_DDP,
				       DDP_ETYPE_CATASTROPHIC,
				       DDP_ECODE_CATASTROPHIC,
				       RNICPI_EVENT_QP_FATAL);
		}
		rx->send_msn = msn;
		rx->send_got = 0;
	} else if (msn != rx->send_msn) {
		siw_qp_info(qp, "Send segment MSN %u inside message %u", msn,
			    rx->send_msn);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_MSN_RANGE, RNICPI_EVENT_QP_REQ_ERR);
	} else if (mo != rx->send_got) {
		siw_qp_info(qp, "Send segment MO %u, expected %llu", mo,
			    (unsigned long long)rx->send_got);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_MO, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (rx->payload_len > rx->rqe_len - rx->send_got) {
		siw_qp_info(qp, "Send of at least %llu bytes into a %llu-byte "
			    "receive", (unsigned long long)(rx->send_got +
							    rx->payload_len),
			    (unsigned long long)rx->rqe_len);
		/* The receive it took fails for its length, as on a verbs
		 * RNIC (and soft-RoCE); the ones behind it are flushed. */
		siw_rx_complete_rqe(qp, RNICPI_WC_LOC_LEN_ERR, false, 0, false);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_TOO_LONG, RNICPI_EVENT_QP_REQ_ERR);
	}
	memcpy(rx->dst, rx->rqe_seg, rx->rqe_nseg * sizeof(rx->dst[0]));
	rx->n_dst = rx->rqe_nseg;
	rx->dst_off = rx->send_got;
	return rx->payload_len ? SIW_RX_PAYLOAD : SIW_RX_TRAILER;
}

/* RFC 5040 §4.4, §6.5: an RDMA Read Request, checked at the Data Source
 * before its response is queued. */
static int check_read_req(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_read_req_hdr *h = (const void *)rx->hdr;
	uint32_t qn = be32toh(h->u.qn_be), msn = be32toh(h->u.msn_be);
	uint32_t size = be32toh(h->rreq.size_be);
	uint32_t stag = be32toh(h->rreq.src_stag_be);
	uint64_t to = be64toh(h->rreq.src_to_be);
	struct siw_mr *mr;

	if (qn != DDP_QN_READ_REQ) {
		siw_qp_info(qp, "Read Request on DDP queue %u", qn);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_QN, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (msn != rx->msn[DDP_QN_READ_REQ]) {
		siw_qp_info(qp, "Read Request MSN %u, expected %u", msn,
			    rx->msn[DDP_QN_READ_REQ]);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_MSN_RANGE, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (be32toh(h->u.mo_be) != 0 ||
	    !ddp_last((const struct iwarp_ctrl *)rx->hdr)) {
		siw_qp_info(qp, "Read Request not one whole segment");
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_MO, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (rx->payload_len) {
		siw_qp_info(qp, "Read Request with %u bytes of payload",
			    rx->payload_len);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_TOO_LONG, RNICPI_EVENT_QP_REQ_ERR);
	}
	if (!(qp->access & RNICPI_ACCESS_REMOTE_READ)) {
		siw_qp_info(qp, "RDMA Read refused: QP has no remote read");
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_ACCESS_RIGHTS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	/* RFC 5040 §6.3: more Reads in flight than our IRD. */
	if (qp->irq_count >= qp->ird) {
		siw_qp_info(qp, "Read Request beyond IRD %u", qp->ird);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       RNICPI_EVENT_QP_REQ_ERR);
	}
	if (!size)
		return SIW_RX_TRAILER;
	mr = siw_stag_get(qp->dev, stag);
	if (!mr || !siw_mr_usable(mr)) {
		siw_qp_info(qp, "Read Request from invalid STag 0x%08x", stag);
		siw_mr_put(mr);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_INVALID_STAG,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	rx->wmr = mr;
	if (mr->pd != &qp->pd->base ||
	    (mr->qp_bound && mr->qpn != qp->base.qp_num)) {
		siw_qp_info(qp, "Read Request: STag 0x%08x of another %s",
			    stag, mr->pd != &qp->pd->base ? "PD" : "QP");
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_STAG_NOT_ASSOC,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (!(mr->access & RNICPI_ACCESS_REMOTE_READ)) {
		siw_qp_info(qp, "Read Request: STag 0x%08x lacks remote read",
			    stag);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_ACCESS_RIGHTS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (to + size < to) {
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_TO_WRAP, RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (to < mr->iova || to - mr->iova > mr->length ||
	    size > mr->length - (to - mr->iova)) {
		siw_qp_info(qp, "Read Request TO 0x%llx size %u outside STag "
			    "0x%08x", (unsigned long long)to, size, stag);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_BASE_BOUNDS,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	return SIW_RX_TRAILER;
}

static int check_terminate(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_untagged_hdr *h = (const void *)rx->hdr;

	if (be32toh(h->qn_be) != DDP_QN_TERMINATE) {
		siw_qp_info(qp, "Terminate on DDP queue %u",
			    be32toh(h->qn_be));
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_QN, RNICPI_EVENT_QP_REQ_ERR);
	}
	/* The body we keep is bounded; extra bytes are read and dropped. */
	rx->dst[0].iov_base = rx->term_body;
	rx->dst[0].iov_len = rx->payload_len < sizeof(rx->term_body)
				     ? rx->payload_len
				     : sizeof(rx->term_body);
	rx->n_dst = 1;
	rx->dst_off = 0;
	return rx->payload_len ? SIW_RX_PAYLOAD : SIW_RX_TRAILER;
}

/* The checks of each opcode's header, with its whole header in hand and
 * its opcode known to be one of RFC 5040's: the next state. */
static const siw_rx_step_fn rx_hdr_checks[RDMAP_OPCODE_COUNT] = {
	[RDMAP_RDMA_WRITE] = check_write,
	[RDMAP_RDMA_READ_REQ] = check_read_req,
	[RDMAP_RDMA_READ_RESP] = check_read_resp,
	[RDMAP_SEND] = check_send,
	[RDMAP_SEND_INV] = check_send,
	[RDMAP_SEND_SE] = check_send,
	[RDMAP_SEND_SE_INV] = check_send,
	[RDMAP_TERMINATE] = check_terminate,
};

/* RFC 6581 §9.2: in peer-to-peer mode the responder's first FPDU must be
 * the negotiated zero-length RTR. */
static bool is_matching_rtr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;

	if (qp->rtr == MPA_V2_WRITE_RTR)
		return rx->opcode == RDMAP_RDMA_WRITE && !rx->payload_len;
	if (qp->rtr == MPA_V2_READ_RTR) {
		const struct iwarp_read_req_hdr *h = (const void *)rx->hdr;

		return rx->opcode == RDMAP_RDMA_READ_REQ &&
		       !be32toh(h->rreq.size_be);
	}
	return false;
}

/* The header is in hand: the checks every FPDU passes, then its
 * opcode's. The next state (PAYLOAD or TRAILER), or DISCARD after a
 * Terminate. */
int siw_rx_check_hdr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_ctrl *c = (const void *)rx->hdr;
	const struct rdmap_opcode_info *info;
	uint8_t op = rx->opcode;

	/* Versions and opcode, checked with the whole header in hand so
	 * that the Terminate can carry it back. */
	if (ddp_version(c) != DDP_VERSION) {
		siw_qp_info(qp, "DDP version %u", ddp_version(c));
		return rx_fail(qp, TERM_LAYER_DDP,
			       ddp_tagged(c) ? DDP_ETYPE_TAGGED
					     : DDP_ETYPE_UNTAGGED,
			       ddp_tagged(c) ? DDP_ECODE_T_VERSION
					     : DDP_ECODE_UT_VERSION,
			       RNICPI_EVENT_QP_REQ_ERR);
	}
	if (rdmap_version(c) != RDMAP_VERSION) {
		siw_qp_info(qp, "RDMAP version %u", rdmap_version(c));
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_VERSION, RNICPI_EVENT_QP_REQ_ERR);
	}
	info = rdmap_opcode_info(op);
	if (!info || ddp_tagged(c) != rdmap_opcode_tagged(info)) {
		siw_qp_info(qp, "RDMAP opcode %u with tagged flag %d", op,
			    ddp_tagged(c));
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE, RNICPI_EVENT_QP_REQ_ERR);
	}
	rx->payload_len = rx->ulpdu_len - (rx->hdr_len - MPA_HDR_SIZE);
	rx->payload_got = 0;
	rx->pad_len = mpa_pad_len(rx->ulpdu_len);
	rx->trailer_got = 0;
	rx->n_dst = 0;
	rx->crc = qp->crc ? siw_crc32c(0, rx->hdr, rx->hdr_len) : 0;

	if (qp->llp == SIW_LLP_AWAIT_RTR && !is_matching_rtr(qp)) {
		siw_qp_info(qp, "first FPDU (%s, %u bytes) is not the "
			    "negotiated %s RTR", info->name, rx->payload_len,
			    qp->rtr == MPA_V2_READ_RTR ? "Read" : "Write");
		return rx_fail(qp, TERM_LAYER_LLP, 0,
			       MPA_ECODE_NO_MATCHING_RTR,
			       RNICPI_EVENT_QP_REQ_ERR);
	}
	return rx_hdr_checks[op](qp);
}
