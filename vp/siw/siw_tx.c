/* SPDX-License-Identifier: MIT */
/*
 * siw_tx.c - the transmit side: picks the next message (Terminate, RTR,
 * Read Response, then the send queue), cuts it into FPDUs that fit the
 * TCP MSS (RFC 5044 §4.1 "MULPDU"), and writes up to SIW_TX_BATCH FPDUs
 * of a message with one sendmsg() over an iovec of headers, user memory
 * and trailers: no copy of the payload in user space. Small messages
 * queued back to back are the exception: they are copied into the pack
 * and written together (option tx_pack), a copy being cheaper than a
 * system call each.
 *
 * Every step runs under qp->lock, from the posting thread when the queue
 * was idle or from the progress thread when the socket has room again.
 */
#include "config.h"

#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which needs timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "vp/siw/siw.h"

uint32_t siw_ulpdu_max(uint32_t mss, bool large)
{
	uint32_t u;

	if (large || mss > 65535 + MPA_HDR_SIZE + MPA_CRC_SIZE)
		mss = 65535 + MPA_HDR_SIZE + MPA_CRC_SIZE;
	if (mss < 128)
		mss = 128;
	u = mss - MPA_HDR_SIZE - MPA_CRC_SIZE;
	/* No pad needed at the maximum: header + ULPDU a multiple of 4. */
	u -= (u + MPA_HDR_SIZE) & 3;
	return u;
}

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
	tx->fpdu_ready = false;
	tx->sq_idx = -1;
	tx->zc = tx->zc_used = false;
}

/* ------------------------------------------------------------------ */
/* MSG_ZEROCOPY (Linux msg_zerocopy.rst): the kernel sends from our pages */
/* and tells on the error queue when it no longer needs them.           */
/* ------------------------------------------------------------------ */

void siw_tx_zc_setup(struct siw_qp *qp)
{
	int one = 1;

	qp->zc_enabled = false;
	qp->zc_next = qp->zc_done = 0;
	qp->zc_head = qp->zc_count = 0;
	if (!qp->dev->opts.zcopy_min || qp->fd < 0)
		return;
	if (setsockopt(qp->fd, SOL_SOCKET, SO_ZEROCOPY, &one,
		       sizeof(one)) < 0) {
		siw_qp_info(qp, "SO_ZEROCOPY: %s; sending with copies",
			    strerror(errno));
		return;
	}
	qp->zc_enabled = true;
}

/* Whether zero-copy call id @a comes before @b (serial number
 * arithmetic: the ids wrap, and fewer than 2^31 are ever in flight). */
static inline bool zc_id_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* What a finished zero-copy message was waiting for. */
static void zc_release(struct siw_qp *qp, struct siw_zc_pending *z)
{
	if (z->sq_idx >= 0)
		siw_sq_complete(qp, (uint32_t)z->sq_idx, RNICPI_WC_SUCCESS, 0);
	siw_mr_put(z->mr);
	z->mr = NULL;
}

void siw_tx_zc_flush(struct siw_qp *qp)
{
	while (qp->zc_count) {
		struct siw_zc_pending *z = &qp->zc_pend[qp->zc_head];

		siw_mr_put(z->mr);
		z->mr = NULL;
		qp->zc_head = (qp->zc_head + 1) % SIW_ZC_PENDING;
		qp->zc_count--;
	}
}

void siw_tx_zc_reap(struct siw_qp *qp)
{
	char control[256];

	if (!qp->zc_enabled || qp->fd < 0)
		return;
	for (;;) {
		struct msghdr msg = { .msg_control = control,
				      .msg_controllen = sizeof(control) };
		struct cmsghdr *cm;

		if (recvmsg(qp->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			const struct sock_extended_err *e;

			if (!((cm->cmsg_level == SOL_IP &&
			       cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 &&
			       cm->cmsg_type == IPV6_RECVERR)))
				continue;
			e = (const void *)CMSG_DATA(cm);
			if (e->ee_errno || e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			/* TCP releases in order: [ee_info, ee_data] follows
			 * what was reported before. The ids are the kernel's
			 * 32-bit call counter and wrap after 2^32 calls:
			 * compared as serial numbers. */
			if (zc_id_before(qp->zc_done, e->ee_data + 1))
				qp->zc_done = e->ee_data + 1;
		}
	}
	while (qp->zc_count &&
	       zc_id_before(qp->zc_pend[qp->zc_head].last_id, qp->zc_done)) {
		zc_release(qp, &qp->zc_pend[qp->zc_head]);
		qp->zc_head = (qp->zc_head + 1) % SIW_ZC_PENDING;
		qp->zc_count--;
	}
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
	struct siw_mr *mr = rnicpi_key_lookup(&qp->dev->mr_keys, stag);
	enum rnicpi_wc_status st = RNICPI_WC_SUCCESS;

	if (!mr) {
		siw_qp_info(qp, "local invalidate: unknown STag 0x%08x", stag);
		return RNICPI_WC_LOC_PROT_ERR;
	}
	if (mr->pd != &qp->pd->base) {
		siw_qp_info(qp, "local invalidate: STag 0x%08x of another PD",
			    stag);
		st = RNICPI_WC_LOC_PROT_ERR;
	} else {
		atomic_store(&mr->valid, false);
	}
	siw_mr_put(mr);
	return st;
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
		rc = siw_sge_resolve(qp->dev, qp->pd, &w->sge[i], access,
				     &mrs[*n], &ptr);
		if (rc) {
			siw_qp_info(qp, "WR 0x%llx SGE %u (lkey 0x%08x addr "
				    "0x%llx len %u): %s",
				    (unsigned long long)w->wr_id, i,
				    w->sge[i].lkey,
				    (unsigned long long)w->sge[i].addr,
				    w->sge[i].length, strerror(-rc));
			while (*n)
				siw_mr_put(mrs[--*n]);
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
	int rc;

	/* RFC 5040 §5.1 / verbs: a fenced WR waits for earlier Reads. */
	if ((w->flags & (RNICPI_SEND_FENCE | RNICPI_SEND_LOCAL_FENCE)) &&
	    qp->orq_count)
		return false;
	if (w->opcode == RNICPI_WR_RDMA_READ && qp->orq_count >= qp->ord)
		return false;

	qp->sq_tx = (qp->sq_tx + 1) % qp->sq_size;
	qp->sq_unstarted--;
	if (w->opcode == RNICPI_WR_LOCAL_INV) {
		enum rnicpi_wc_status st = local_invalidate(qp, w->inv_stag);

		siw_sq_complete(qp, idx, st, 0);
		if (st != RNICPI_WC_SUCCESS)
			siw_qp_terminate(qp, TERM_LAYER_RDMAP,
					 RDMAP_ETYPE_CATASTROPHIC, 0, false,
					 RNICPI_EVENT_QP_FATAL);
		return true;
	}

	memset(tx, 0, offsetof(struct siw_tx, want_out));
	tx->sq_idx = (int32_t)idx;
	tx->opcode = sq_rdmap_opcode(w);
	if (w->opcode == RNICPI_WR_RDMA_READ) {
		struct siw_orqe *o = &qp->orq[(qp->orq_head + qp->orq_count) %
					      qp->orq_size];

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
	/* A bad local SGE: the WR fails with a protection error and the QP
	 * goes to ERROR (verbs); the peer learns through a Terminate. */
	tx->kind = SIW_TX_IDLE;
	siw_sq_complete(qp, idx, RNICPI_WC_LOC_PROT_ERR, 0);
	siw_qp_terminate(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_CATASTROPHIC, 0,
			 false, RNICPI_EVENT_QP_FATAL);
	return true;
}

static bool start_rresp(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct siw_irqe *r = &qp->irq[qp->irq_head];

	memset(tx, 0, offsetof(struct siw_tx, want_out));
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
		memset(tx, 0, offsetof(struct siw_tx, want_out));
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
		memset(tx, 0, offsetof(struct siw_tx, want_out));
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

/* Fill up to @max iovecs with @len bytes of the source at @off. */
static uint32_t gather(const struct iovec *src, uint32_t n_src, uint64_t off,
		       uint32_t len, struct iovec *out, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < n_src && len && n < max; i++) {
		size_t take;

		if (off >= src[i].iov_len) {
			off -= src[i].iov_len;
			continue;
		}
		take = src[i].iov_len - off;
		if (take > len)
			take = len;
		out[n].iov_base = (uint8_t *)src[i].iov_base + off;
		out[n].iov_len = take;
		n++;
		len -= (uint32_t)take;
		off = 0;
	}
	return n;
}

/* The regions the message's bytes come from (none for inline data, a
 * Terminate or an RTR). */
static uint32_t tx_src_mrs(struct siw_qp *qp, struct siw_mr *const **mrs)
{
	struct siw_tx *tx = &qp->tx;

	if (tx->kind == SIW_TX_RRESP) {
		*mrs = &qp->irq[qp->irq_head].mr;
		return 1;
	}
	*mrs = tx->src_mr;
	return tx->kind == SIW_TX_SQ ? tx->n_src : 0;
}

/* A source region was deregistered with its message half sent: its
 * bytes may be gone and the FPDU cannot be finished honestly. */
static int tx_dead_mr(struct siw_qp *qp)
{
	siw_qp_info(qp, "%s: a source region was deregistered while the "
		    "message was sent; closing the stream",
		    qp->tx.kind == SIW_TX_RRESP ? "Read Response" : "send WR");
	return -EFAULT;
}

/* ------------------------------------------------------------------ */
/* The header fields after the control bytes, one writer per DDP model  */
/* ------------------------------------------------------------------ */

/* Tagged (RFC 5041 §4.3): Write and Read Response name the sink buffer
 * by STag and Tagged Offset. */
static void fill_tagged_hdr(struct siw_qp *qp, struct siw_tx_fpdu *f,
			    uint64_t off)
{
	struct siw_tx *tx = &qp->tx;
	struct iwarp_tagged_hdr *h = (struct iwarp_tagged_hdr *)f->hdr;
	uint32_t stag;
	uint64_t to;

	if (tx->kind == SIW_TX_RRESP) {
		stag = qp->irq[qp->irq_head].sink_stag;
		to = qp->irq[qp->irq_head].sink_to;
	} else if (tx->kind == SIW_TX_RTR_WRITE) {
		stag = 1; /* non-zero, see start of next_message() */
		to = 0;
	} else {
		stag = qp->sq[tx->sq_idx].rkey;
		to = qp->sq[tx->sq_idx].raddr;
	}
	h->stag_be = htobe32(stag);
	h->to_be = htobe64(to + off);
}

/* Untagged on queue 1 with the Read Request's own header (RFC 5040
 * §4.4): one segment, MO 0. */
static void fill_read_req_hdr(struct siw_qp *qp, struct siw_tx_fpdu *f,
			      uint64_t off)
{
	struct siw_tx *tx = &qp->tx;
	struct iwarp_read_req_hdr *h = (struct iwarp_read_req_hdr *)f->hdr;

	(void)off;
	h->u.inval_stag_be = 0;
	h->u.qn_be = htobe32(DDP_QN_READ_REQ);
	h->u.msn_be = htobe32(tx->msn);
	h->u.mo_be = 0;
	if (tx->kind == SIW_TX_RTR_READ) {
		h->rreq.sink_stag_be = htobe32(1);
		h->rreq.sink_to_be = 0;
		h->rreq.size_be = 0;
		h->rreq.src_stag_be = htobe32(1);
		h->rreq.src_to_be = 0;
	} else {
		const struct siw_wqe *w = &qp->sq[tx->sq_idx];
		const struct siw_orqe *o =
			&qp->orq[(qp->orq_head + qp->orq_count - 1) %
				 qp->orq_size];

		h->rreq.sink_stag_be = htobe32(o->sink_stag);
		h->rreq.sink_to_be = htobe64(o->sink_to);
		h->rreq.size_be = htobe32(o->size);
		h->rreq.src_stag_be = htobe32(w->rkey);
		h->rreq.src_to_be = htobe64(w->raddr);
	}
}

/* Untagged (RFC 5041 §4.4): the Sends and Terminate, on the opcode's
 * queue, MSN and Message Offset; the Invalidate STag when the opcode
 * carries one (RFC 5040 §4.3). */
static void fill_untagged_hdr(struct siw_qp *qp, struct siw_tx_fpdu *f,
			      uint64_t off)
{
	struct siw_tx *tx = &qp->tx;
	const struct rdmap_opcode_info *op = rdmap_opcode_info(tx->opcode);
	struct iwarp_untagged_hdr *h = (struct iwarp_untagged_hdr *)f->hdr;
	uint32_t inval = 0;

	if (op->flags & RDMAP_OPF_INVALIDATE)
		inval = qp->sq[tx->sq_idx].inv_stag;
	h->inval_stag_be = htobe32(inval);
	h->qn_be = htobe32(op->ddp_qn);
	h->msn_be = htobe32(tx->msn);
	h->mo_be = htobe32((uint32_t)off);
}

typedef void (*fill_hdr_fn)(struct siw_qp *qp, struct siw_tx_fpdu *f,
			    uint64_t off);

static const fill_hdr_fn fill_hdr[RDMAP_OPCODE_COUNT] = {
	[RDMAP_RDMA_WRITE] = fill_tagged_hdr,
	[RDMAP_RDMA_READ_REQ] = fill_read_req_hdr,
	[RDMAP_RDMA_READ_RESP] = fill_tagged_hdr,
	[RDMAP_SEND] = fill_untagged_hdr,
	[RDMAP_SEND_INV] = fill_untagged_hdr,
	[RDMAP_SEND_SE] = fill_untagged_hdr,
	[RDMAP_SEND_SE_INV] = fill_untagged_hdr,
	[RDMAP_TERMINATE] = fill_untagged_hdr,
};

/* Build the header and trailer of the FPDU of the message that starts at
 * payload offset @off into @f: 0, or -EFAULT when its source region is
 * gone. tx->opcode is one of RFC 5040's: we chose it. */
static int build_fpdu(struct siw_qp *qp, struct siw_tx_fpdu *f, uint64_t off)
{
	struct siw_tx *tx = &qp->tx;
	struct iwarp_ctrl *c = (struct iwarp_ctrl *)f->hdr;
	uint64_t left = tx->msg_len - off;
	uint32_t max, payload, ulpdu, pad;
	bool last;

	f->hdr_len = iwarp_hdr_len(tx->opcode);
	f->off = off;
	max = qp->mss_payload - (f->hdr_len - MPA_HDR_SIZE);
	payload = left > max ? max : (uint32_t)left;
	last = off + payload == tx->msg_len;
	iwarp_ctrl_init(c, tx->opcode, last);
	fill_hdr[tx->opcode](qp, f, off);
	ulpdu = f->hdr_len - MPA_HDR_SIZE + payload;
	iwarp_set_mpa_len(c, (uint16_t)ulpdu);
	pad = mpa_pad_len(ulpdu);
	memset(f->trailer, 0, sizeof(f->trailer));
	if (qp->crc) {
		struct iovec iov[SIW_MAX_SGE];
		struct siw_mr *const *mrs;
		uint32_t n, i, crc, n_mr = tx_src_mrs(qp, &mrs);

		if (!siw_mrs_access_begin(mrs, n_mr))
			return tx_dead_mr(qp);
		crc = siw_crc32c(0, f->hdr, f->hdr_len);
		n = gather(tx->src, tx->n_src, off, payload, iov, SIW_MAX_SGE);
		for (i = 0; i < n; i++)
			crc = siw_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
		siw_mrs_access_end(mrs, n_mr);
		crc = siw_crc32c(crc, f->trailer, pad);
		mpa_crc_put(f->trailer + pad, crc);
	}
	f->payload = payload;
	f->trailer_len = pad + MPA_CRC_SIZE;
	return 0;
}

/* Build the next FPDUs of the message, as many as a batch holds (one for
 * a zero-copy message, whose calls are split differently): 0 or -EFAULT. */
static int build_batch(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	uint32_t max = tx->zc ? 1 : qp->dev->opts.tx_batch;
	uint64_t off = tx->msg_off;
	int rc;

	tx->n_fpdu = 0;
	tx->batch_payload = 0;
	tx->fpdu_total = 0;
	do {
		struct siw_tx_fpdu *f = &tx->fpdu[tx->n_fpdu++];

		rc = build_fpdu(qp, f, off);
		if (rc)
			return rc;
		off += f->payload;
		tx->batch_payload += f->payload;
		tx->fpdu_total += f->hdr_len + f->payload + f->trailer_len;
	} while (tx->n_fpdu < max && off < tx->msg_len);
	qp->tx_fpdus += tx->n_fpdu;
	tx->fpdu_sent = 0;
	tx->fpdu_ready = true;
	return 0;
}

/* The iovecs for the batch's bytes from @skip on; their count. */
static uint32_t batch_iov(struct siw_tx *tx, uint32_t skip, struct iovec *iov)
{
	uint32_t i, n = 0;

	for (i = 0; i < tx->n_fpdu; i++) {
		const struct siw_tx_fpdu *f = &tx->fpdu[i];

		if (skip >= f->hdr_len + f->payload + f->trailer_len) {
			skip -= f->hdr_len + f->payload + f->trailer_len;
			continue;
		}
		if (skip < f->hdr_len) {
			iov[n].iov_base = (uint8_t *)f->hdr + skip;
			iov[n].iov_len = f->hdr_len - skip;
			n++;
			skip = 0;
		} else {
			skip -= f->hdr_len;
		}
		if (skip < f->payload) {
			n += gather(tx->src, tx->n_src, f->off + skip,
				    f->payload - skip, iov + n, SIW_MAX_SGE);
			skip = 0;
		} else {
			skip -= f->payload;
		}
		iov[n].iov_base = (uint8_t *)f->trailer + skip;
		iov[n].iov_len = f->trailer_len - skip;
		n++;
		skip = 0;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* The pack (option tx_pack): small whole messages queued back to back   */
/* are copied, FPDU by FPDU, into one buffer that goes out with one      */
/* sendmsg(), ahead of whatever follows them on the stream.             */
/* ------------------------------------------------------------------ */

/* @n more bytes of the pack are on the stream. */
static void pack_sent(struct siw_tx *tx, uint32_t n)
{
	tx->pack_sent += n;
	if (tx->pack_sent == tx->pack_len)
		tx->pack_len = tx->pack_sent = 0;
}

/* Write what the pack still holds, alone: 0 once it is all out, -EAGAIN,
 * or -errno for a broken stream. */
static int send_pack(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	while (tx->pack_sent < tx->pack_len) {
		ssize_t rc = send(qp->fd, tx->pack + tx->pack_sent,
				  tx->pack_len - tx->pack_sent,
				  MSG_DONTWAIT | MSG_NOSIGNAL);

		if (rc < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -EAGAIN;
			return -errno;
		}
		qp->tx_calls++;
		pack_sent(tx, (uint32_t)rc);
	}
	return 0;
}

/* Write the rest of the current FPDUs: 0 when all of them are out,
 * -EAGAIN, or -errno for a broken stream.
 *
 * Zero-copy messages send the payload alone with MSG_ZEROCOPY: the kernel
 * may read those pages long after sendmsg() returned, which is fine for
 * the WR's memory (the WR completes only after the notification) but not
 * for our header and trailer buffers, which the next FPDU rewrites; those
 * go in their own calls, copied, with MSG_MORE to keep segments full. A
 * zero-copy batch is one FPDU. */
static int send_fpdu(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct iovec iov[1 + SIW_TX_BATCH * (SIW_MAX_SGE + 2)];
	struct msghdr msg = { .msg_iov = iov };
	struct siw_mr *const *mrs;
	uint32_t n_mr = tx_src_mrs(qp, &mrs);
	ssize_t rc;
	int err;

	while (tx->fpdu_sent < tx->fpdu_total) {
		const struct siw_tx_fpdu *f = &tx->fpdu[0];
		uint32_t n = 0, skip = tx->fpdu_sent, packed = 0;
		int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
		bool zc_call = false, more = false;

		if (!tx->zc) {
			/* Packed messages came first: they lead the call. */
			packed = tx->pack_len - tx->pack_sent;
			if (packed) {
				iov[0].iov_base = tx->pack + tx->pack_sent;
				iov[0].iov_len = packed;
				n = 1;
			}
			n += batch_iov(tx, skip, iov + n);
			goto send;
		}
		err = send_pack(qp);
		if (err)
			return err;
		if (skip < f->hdr_len) {
			iov[n].iov_base = (uint8_t *)f->hdr + skip;
			iov[n].iov_len = f->hdr_len - skip;
			n++;
			more = true;
			goto send; /* header alone */
		}
		skip -= f->hdr_len;
		if (skip < f->payload) {
			n += gather(tx->src, tx->n_src, f->off + skip,
				    f->payload - skip, iov + n, SIW_MAX_SGE);
			zc_call = true;
			goto send; /* payload alone, zero-copy */
		}
		skip -= f->payload;
		iov[n].iov_base = (uint8_t *)f->trailer + skip;
		iov[n].iov_len = f->trailer_len - skip;
		n++;
send:
		msg.msg_iovlen = n;
		if (more)
			flags |= MSG_MORE;
		if (zc_call)
			flags |= MSG_ZEROCOPY | MSG_MORE;
		/* Read from the regions only while they are registered. */
		if (!siw_mrs_access_begin(mrs, n_mr))
			return tx_dead_mr(qp);
		rc = sendmsg(qp->fd, &msg, flags);
		err = errno;
		siw_mrs_access_end(mrs, n_mr);
		if (rc < 0) {
			if (err == EINTR)
				continue;
			/* Out of optmem for notifications: copy instead. */
			if (err == ENOBUFS && zc_call) {
				tx->zc = false;
				continue;
			}
			if (err == EAGAIN || err == EWOULDBLOCK)
				return -EAGAIN;
			return -err;
		}
		if (zc_call) {
			qp->zc_next++;
			tx->zc_used = true;
		}
		qp->tx_calls++;
		if (packed) {
			uint32_t k = (size_t)rc < packed ? (uint32_t)rc : packed;

			pack_sent(tx, k);
			rc -= k;
		}
		tx->fpdu_sent += (uint32_t)rc;
	}
	return 0;
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
			struct siw_zc_pending *z =
				&qp->zc_pend[(qp->zc_head + qp->zc_count) %
					     SIW_ZC_PENDING];

			z->last_id = qp->zc_next - 1;
			z->sq_idx = idx;
			z->mr = NULL;
			qp->zc_count++;
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
			struct siw_zc_pending *z =
				&qp->zc_pend[(qp->zc_head + qp->zc_count) %
					     SIW_ZC_PENDING];

			/* The region stays referenced until the kernel is
			 * done with its pages. */
			z->last_id = qp->zc_next - 1;
			z->sq_idx = -1;
			z->mr = qp->irq[qp->irq_head].mr;
			qp->zc_count++;
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

/* Whether another message waits to go out behind the one in tx. */
static bool tx_more_waiting(struct siw_qp *qp)
{
	if (qp->tx.kind == SIW_TX_RRESP)
		return qp->irq_count > 1 || qp->sq_unstarted;
	return qp->irq_count || qp->sq_unstarted;
}

/* The message just built goes into the pack: it is small (option
 * tx_pack), whole in its one FPDU, not sent with MSG_ZEROCOPY, fits, and
 * either more messages wait behind it or the pack has started already. */
static bool pack_wanted(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	if ((tx->kind != SIW_TX_SQ && tx->kind != SIW_TX_RRESP) || tx->zc ||
	    !qp->dev->opts.tx_pack || tx->msg_len > qp->dev->opts.tx_pack ||
	    tx->msg_off ||
	    tx->n_fpdu != 1 || tx->batch_payload != tx->msg_len ||
	    tx->fpdu_sent || tx->pack_len + tx->fpdu_total > SIW_TX_PACK)
		return false;
	if (!tx->pack_len && !tx_more_waiting(qp))
		return false;
	if (!tx->pack)
		tx->pack = malloc(SIW_TX_PACK);
	return tx->pack != NULL;
}

/* Copy the message's one FPDU into the pack and finish the message as if
 * it were on the stream: its bytes are ours now, as they would be the
 * socket's. 0, or -EFAULT when its source region is gone. */
static int pack_message(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	const struct siw_tx_fpdu *f = &tx->fpdu[0];
	uint8_t *p = tx->pack + tx->pack_len;
	struct iovec iov[SIW_MAX_SGE];
	struct siw_mr *const *mrs;
	uint32_t i, n, n_mr = tx_src_mrs(qp, &mrs);

	memcpy(p, f->hdr, f->hdr_len);
	p += f->hdr_len;
	if (!siw_mrs_access_begin(mrs, n_mr))
		return tx_dead_mr(qp);
	n = gather(tx->src, tx->n_src, 0, f->payload, iov, SIW_MAX_SGE);
	for (i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	siw_mrs_access_end(mrs, n_mr);
	memcpy(p, f->trailer, f->trailer_len);
	tx->pack_len += tx->fpdu_total;
	tx->fpdu_ready = false;
	tx->msg_off = tx->msg_len;
	message_done(qp);
	return 0;
}

static void set_want_out(struct siw_qp *qp, bool want)
{
	if (qp->tx.want_out == want || qp->fd < 0)
		return;
	qp->tx.want_out = want;
	siw_dev_poll_mod(qp->dev, qp->fd, &qp->item, siw_qp_poll_mask(qp));
}

void siw_qp_tx(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	while (qp->fd >= 0 && qp->llp != SIW_LLP_DRAIN &&
	       qp->llp != SIW_LLP_CLOSED) {
		int rc;

		if (!tx->fpdu_ready) {
			/* A Terminate goes out at the next FPDU boundary. */
			if (qp->term.valid && !qp->term_sent &&
			    tx->kind != SIW_TX_TERM && tx->kind != SIW_TX_IDLE)
				siw_tx_release(qp);
			if (tx->kind == SIW_TX_IDLE && !next_message(qp)) {
				/* Nothing follows the pack: it goes alone. */
				rc = send_pack(qp);
				if (!rc)
					break;
				if (rc == -EAGAIN) {
					set_want_out(qp, true);
					return;
				}
				siw_qp_info(qp, "send: %s", strerror(-rc));
				siw_qp_llp_closed(qp, rc);
				return;
			}
			if (qp->fd < 0 || tx->kind == SIW_TX_IDLE)
				continue;
			rc = build_batch(qp);
			if (!rc && pack_wanted(qp)) {
				rc = pack_message(qp);
				if (!rc)
					continue;
			}
			if (rc) {
				siw_qp_llp_closed(qp, rc);
				return;
			}
		}
		rc = send_fpdu(qp);
		if (rc == -EAGAIN) {
			set_want_out(qp, true);
			return;
		}
		if (rc) {
			siw_qp_info(qp, "send: %s", strerror(-rc));
			siw_qp_llp_closed(qp, rc);
			return;
		}
		tx->fpdu_ready = false;
		tx->msg_off += tx->batch_payload;
		if (tx->msg_off >= tx->msg_len)
			message_done(qp);
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
