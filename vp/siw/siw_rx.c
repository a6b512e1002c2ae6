/* SPDX-License-Identifier: MIT */
/*
 * siw_rx.c - the receive side: an explicit state machine per QP that
 * reads each FPDU's header first, checks every field against the QP, the
 * STag's region, PD and rights, then reads the payload straight into its
 * target (the tagged region or the posted receive buffer), then the pad
 * and CRC (RFC 5044 §4), computed over the bytes as they were placed.
 *
 * The peer is not trusted: no byte is placed before the header passed
 * every check, and every violation ends in the Terminate that RFC 5040
 * §7.4 / RFC 5041 §7.2 / RFC 5044 §8 name for it (siw_qp_terminate()).
 *
 * Each step returns the next state, or SIW_RX_WAIT when the socket has no
 * more bytes for now.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "vp/siw/siw_rx.h"

const char *const siw_rx_state_names[SIW_RX_STATE_COUNT] = {
	[SIW_RX_CTRL] = "CTRL",
	[SIW_RX_HDR] = "HDR",
	[SIW_RX_PAYLOAD] = "PAYLOAD",
	[SIW_RX_TRAILER] = "TRAILER",
	[SIW_RX_STOP] = "STOP",
	[SIW_RX_DISCARD] = "DISCARD",
};

void siw_rx_release(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	uint32_t i;

	siw_mr_put(rx->wmr);
	rx->wmr = NULL;
	for (i = 0; i < rx->rqe_nseg; i++) {
		siw_mr_put(rx->rqe_mr[i]);
		rx->rqe_mr[i] = NULL;
	}
	rx->rqe_nseg = 0;
	rx->send_active = false;
}

/* recvmsg() (recv() for one piece) into @iov and nothing more: bytes, 0
 * at EOF, or -errno. */
static ssize_t rx_recv(struct siw_qp *qp, struct iovec *iov, int n)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	size_t want = 0;
	ssize_t rc;
	int i;

	do
		/* One piece: no msghdr and iovec for the kernel to copy in */
		rc = n == 1 ? recv(qp->fd, iov[0].iov_base, iov[0].iov_len,
				   MSG_DONTWAIT)
			    : recvmsg(qp->fd, &msg, MSG_DONTWAIT);
	while (rc < 0 && errno == EINTR);
	if (rc > 0) {
		qp->rx.probing = false;
		for (i = 0; i < n; i++)
			want += iov[i].iov_len;
		qp->rx_reads++;
		qp->rx_bytes += (uint64_t)rc;
		qp->rx.drained = (size_t)rc < want;
	}
	return rc < 0 ? -errno : rc;
}

/* A recvmsg() that brought nothing (@rc 0 or -errno): SIW_RX_WAIT, or the
 * state after EOF/error (which already closed the stream). */
static int rx_nothing(struct siw_qp *qp, ssize_t rc)
{
	if (rc == -EAGAIN || rc == -EWOULDBLOCK) {
		if (!qp->rx.probing)
			atomic_fetch_add_explicit(&qp->dev->counters.rx_empty,
						  1, memory_order_relaxed);
		return SIW_RX_WAIT;
	}
	/* EOF at an FPDU boundary is an orderly close; inside one the
	 * stream broke (RFC 5044 §8 "TCP connection closed"). */
	if (rc == 0 && qp->rx.state == SIW_RX_CTRL && qp->rx.hdr_got == 0)
		siw_qp_llp_closed(qp, 0);
	else
		siw_qp_llp_closed(qp, rc == 0 ? -ECONNRESET : (int)rc);
	return SIW_RX_STOP;
}

/* recv() into @iov: 0 with *@got > 0 bytes, or what rx_nothing() says. */
static int rx_read(struct siw_qp *qp, struct iovec *iov, int n,
		   ssize_t *got)
{
	ssize_t rc = rx_recv(qp, iov, n);

	*got = rc > 0 ? rc : 0;
	return rc > 0 ? 0 : rx_nothing(qp, rc);
}

static int rx_read_buf(struct siw_qp *qp, void *buf, size_t len,
		       ssize_t *got)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rx_read(qp, &iov, 1, got);
}

/* ------------------------------------------------------------------ */
/* The stash: bytes read ahead of the step that needs them              */
/* ------------------------------------------------------------------ */

static uint32_t stash_avail(const struct siw_rx *rx)
{
	return rx->stash_len - rx->stash_off;
}

/* Move up to @len stashed bytes to @dst; returns how many. */
static uint32_t stash_take(struct siw_rx *rx, void *dst, uint32_t len)
{
	uint32_t n = stash_avail(rx);

	if (n > len)
		n = len;
	memcpy(dst, rx->stash + rx->stash_off, n);
	rx->stash_off += n;
	return n;
}

/* The iovec that reads up to @max bytes ahead into the stash, which is
 * empty whenever a step reads the socket. */
static struct iovec stash_iov(struct siw_rx *rx, uint32_t max)
{
	rx->stash_off = 0;
	rx->stash_len = 0;
	return (struct iovec){ .iov_base = rx->stash,
			       .iov_len = max < SIW_RX_STASH ? max
							     : SIW_RX_STASH };
}

/* How far to read ahead after the payload of the FPDU in hand: a small
 * one's successors may sit behind it whole, a large one's successor is
 * large too and is better read straight into its target. */
static uint32_t rx_ahead_len(const struct siw_rx *rx)
{
	return rx->payload_len >= SIW_RX_STASH ? SIW_RX_AHEAD_LARGE
					       : SIW_RX_STASH;
}

/* Read the @need header bytes a step wants into @dst and up to @ahead
 * bytes more: all into the stash with one recv() (no msghdr for the
 * kernel to copy in), the step's share copied out. *@got: the bytes the
 * step got; the rest waits in the stash, which is empty on entry. */
static int rx_read_ahead(struct siw_qp *qp, void *dst, uint32_t need,
			 uint32_t ahead, ssize_t *got)
{
	struct siw_rx *rx = &qp->rx;
	struct iovec iov = stash_iov(rx, need + ahead);
	ssize_t n;
	int rc;

	rc = rx_read(qp, &iov, 1, &n);
	if (rc)
		return rc;
	rx->stash_len = (uint32_t)n;
	*got = stash_take(rx, dst, need);
	return 0;
}


/* ------------------------------------------------------------------ */
/* Steps                                                               */
/* ------------------------------------------------------------------ */

static int rx_step_ctrl(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_ctrl *c = (const void *)rx->hdr;
	const struct rdmap_opcode_info *info;
	uint8_t op;
	ssize_t got;
	int rc;

	/* From the stash, or read now: as much as the shortest header,
	 * which every FPDU holds (all of a tagged one), and what follows
	 * into the stash. */
	if (rx->hdr_got < SIW_RX_HDR_MIN)
		rx->hdr_got += stash_take(rx, rx->hdr + rx->hdr_got,
					  SIW_RX_HDR_MIN - rx->hdr_got);
	if (rx->hdr_got < sizeof(*c)) {
		rc = rx_read_ahead(qp, rx->hdr + rx->hdr_got,
				   SIW_RX_HDR_MIN - rx->hdr_got, SIW_RX_STASH,
				   &got);
		if (rc)
			return rc;
		rx->hdr_got += (uint32_t)got;
		if (rx->hdr_got < sizeof(*c))
			return SIW_RX_CTRL;
	}

	rx->ulpdu_len = iwarp_mpa_len(c);
	op = rdmap_opcode(c);
	rx->opcode = op;
	info = rdmap_opcode_info(op);
	/* A header whose T flag disagrees with its opcode (or of an opcode
	 * RFC 5040 does not define) is read as long as the flag says: the
	 * Terminate that refuses it carries it back whole. */
	if (info && rdmap_opcode_tagged(info) == ddp_tagged(c))
		rx->hdr_len = info->hdr_len;
	else
		rx->hdr_len = ddp_tagged(c) ? sizeof(struct iwarp_tagged_hdr)
					    : sizeof(struct iwarp_untagged_hdr);
	/* The ULPDU must hold at least the header it announces. */
	if (rx->ulpdu_len < rx->hdr_len - MPA_HDR_SIZE) {
		siw_qp_info(qp, "ULPDU length %u shorter than the %u-byte "
			    "header of opcode %u", rx->ulpdu_len,
			    rx->hdr_len - MPA_HDR_SIZE, op);
		/* What was read past the control word is not this FPDU's
		 * header: the Terminate carries none back. */
		rx->hdr_got = sizeof(*c);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC,
			       DDP_ECODE_CATASTROPHIC, RNICPI_EVENT_QP_FATAL);
	}
	return SIW_RX_HDR;
}

static int rx_step_hdr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	ssize_t got;
	int rc;

	if (rx->hdr_got < rx->hdr_len)
		rx->hdr_got += stash_take(rx, rx->hdr + rx->hdr_got,
					  rx->hdr_len - rx->hdr_got);
	if (rx->hdr_got < rx->hdr_len) {
		rc = rx_read_ahead(qp, rx->hdr + rx->hdr_got,
				   rx->hdr_len - rx->hdr_got, SIW_RX_STASH,
				   &got);
		if (rc)
			return rc;
		rx->hdr_got += (uint32_t)got;
		if (rx->hdr_got < rx->hdr_len)
			return SIW_RX_HDR;
	}
	return siw_rx_check_hdr(qp);
}

/* The regions behind rx->dst (none for a Terminate's body). */
static uint32_t rx_dst_mrs(struct siw_qp *qp, struct siw_mr *const **mrs)
{
	struct siw_rx *rx = &qp->rx;
	uint8_t flags = rdmap_opcode_info(rx->opcode)->flags;

	if (flags & RDMAP_OPF_READ_RESP) {
		*mrs = qp->orq[qp->orq_head].mr;
		return qp->orq[qp->orq_head].n_seg;
	}
	if (flags & RDMAP_OPF_TAGGED) {
		*mrs = &rx->wmr;
		return 1;
	}
	if (flags & RDMAP_OPF_RECV_WQE) {
		*mrs = rx->rqe_mr;
		return rx->rqe_nseg;
	}
	*mrs = NULL;
	return 0;
}

/* A region the payload goes to was deregistered in the middle of the
 * message: its memory may be gone, so the rest has nowhere to go. */
static int rx_dead_mr(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	uint8_t flags = rdmap_opcode_info(rx->opcode)->flags;

	if ((flags & RDMAP_OPF_TAGGED) && !(flags & RDMAP_OPF_READ_RESP)) {
		/* RFC 5041 §7.2: the STag is no longer valid, which the
		 * Write's next FPDU would find as well. */
		siw_qp_info(qp, "RDMA Write: STag 0x%08x deregistered during "
			    "the message", rx->wmr->stag);
		return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			       DDP_ECODE_T_INVALID_STAG,
			       RNICPI_EVENT_QP_ACCESS_ERR);
	}
	if (flags & RDMAP_OPF_READ_RESP) {
		struct siw_orqe *o = &qp->orq[qp->orq_head];

		siw_qp_info(qp, "Read Response: a sink region was "
			    "deregistered during the message");
		if (o->sq_idx >= 0)
			siw_sq_complete(qp, (uint32_t)o->sq_idx,
					RNICPI_WC_LOC_PROT_ERR, 0);
	} else {
		siw_qp_info(qp, "Send: receive WR 0x%llx lost its region "
			    "during the message",
			    (unsigned long long)rx->rqe.wr_id);
		siw_rx_complete_rqe(qp, RNICPI_WC_LOC_PROT_ERR, false, 0,
				    false);
	}
	return rx_fail(qp, TERM_LAYER_DDP, DDP_ETYPE_CATASTROPHIC,
		       DDP_ECODE_CATASTROPHIC, RNICPI_EVENT_QP_FATAL);
}

/* Two more iovecs after @iov[@n]: the rest of the trailer, then the
 * stash, for what follows the FPDU. Returns the new count. */
static uint32_t rx_iov_tail(struct siw_rx *rx, struct iovec *iov, uint32_t n)
{
	iov[n].iov_base = rx->trailer + rx->trailer_got;
	iov[n].iov_len = rx->pad_len + MPA_CRC_SIZE - rx->trailer_got;
	iov[n + 1] = stash_iov(rx, rx_ahead_len(rx));
	return n + 2;
}

/* @got bytes arrived in the iovecs of rx_iov_tail(). */
static void rx_got_tail(struct siw_rx *rx, size_t got)
{
	size_t t = rx->pad_len + MPA_CRC_SIZE - rx->trailer_got;

	if (t > got)
		t = got;
	rx->trailer_got += (uint32_t)t;
	rx->stash_len = (uint32_t)(got - t);
}

/* Copy stashed payload into @iov[0..@n) (the placement list) and add it
 * to the CRC; returns the bytes placed. Called inside the regions'
 * access bracket. */
static uint32_t rx_place_stashed(struct siw_qp *qp, const struct iovec *iov,
				 uint32_t n)
{
	struct siw_rx *rx = &qp->rx;
	uint32_t placed = 0, i;

	for (i = 0; i < n && stash_avail(rx); i++) {
		uint8_t *dst = iov[i].iov_base;
		uint32_t k = stash_take(rx, dst, (uint32_t)iov[i].iov_len);

		if (qp->crc)
			rx->crc = siw_crc32c(rx->crc, dst, k);
		placed += k;
		if (k < iov[i].iov_len)
			break;
	}
	return placed;
}

static int rx_step_payload(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct iovec iov[SIW_MAX_SGE + 3];
	uint8_t scratch[256];
	uint32_t want = rx->payload_len - rx->payload_got;
	uint64_t off = rx->dst_off + rx->payload_got;
	uint32_t n = 0, n_pay, i, placed = 0, n_mr;
	struct siw_mr *const *mrs;
	ssize_t got, left;

	for (i = 0; i < rx->n_dst && placed < want; i++) {
		size_t take;

		if (off >= rx->dst[i].iov_len) {
			off -= rx->dst[i].iov_len;
			continue;
		}
		take = rx->dst[i].iov_len - off;
		if (take > want - placed)
			take = want - placed;
		iov[n].iov_base = (uint8_t *)rx->dst[i].iov_base + off;
		iov[n].iov_len = take;
		placed += (uint32_t)take;
		n++;
		off = 0;
	}
	/* Only a Terminate body longer than we keep gets here: drop. */
	if (placed < want) {
		iov[n].iov_base = scratch;
		iov[n].iov_len = want - placed < sizeof(scratch)
					 ? want - placed : sizeof(scratch);
		placed += (uint32_t)iov[n].iov_len;
		n++;
	}
	/* The bytes are touched only inside the bracket: once dereg_mr
	 * returned, the memory may be the application's again. */
	n_mr = rx_dst_mrs(qp, &mrs);
	if (stash_avail(rx)) {
		/* Read ahead with the header: copy, then come back for the
		 * rest (from the socket, the stash being empty). */
		if (!siw_mrs_access_begin(mrs, n_mr))
			return rx_dead_mr(qp);
		rx->payload_got += rx_place_stashed(qp, iov, n);
		siw_mrs_access_end(mrs, n_mr);
		return rx->payload_got < rx->payload_len ? SIW_RX_PAYLOAD
							 : SIW_RX_TRAILER;
	}
	/* With the last of the payload come the trailer and the start of
	 * the next FPDU, when the socket has them. */
	n_pay = n;
	if (placed == want)
		n = rx_iov_tail(rx, iov, n);
	if (!siw_mrs_access_begin(mrs, n_mr))
		return rx_dead_mr(qp);
	got = rx_recv(qp, iov, (int)n);
	if (got > 0 && qp->crc) {
		left = got < (ssize_t)placed ? got : (ssize_t)placed;
		for (i = 0; i < n_pay && left; i++) {
			size_t k = (size_t)left < iov[i].iov_len
					   ? (size_t)left : iov[i].iov_len;

			rx->crc = siw_crc32c(rx->crc, iov[i].iov_base, k);
			left -= (ssize_t)k;
		}
	}
	siw_mrs_access_end(mrs, n_mr);
	if (got <= 0)
		return rx_nothing(qp, got);
	if ((size_t)got > placed) {
		rx_got_tail(rx, (size_t)got - placed);
		got = (ssize_t)placed;
	}
	rx->payload_got += (uint32_t)got;
	return rx->payload_got < rx->payload_len ? SIW_RX_PAYLOAD
						 : SIW_RX_TRAILER;
}

void siw_rx_complete_rqe(struct siw_qp *qp, enum rnicpi_wc_status status,
			 bool with_inv, uint32_t inv_stag, bool solicited)
{
	struct siw_rx *rx = &qp->rx;
	struct rnicpi_wc wc = {
		.wr_id = rx->rqe.wr_id,
		.status = status,
		.opcode = RNICPI_WC_RECV,
		.qp_num = qp->base.qp_num,
	};

	if (status == RNICPI_WC_SUCCESS) {
		wc.byte_len = (uint32_t)rx->send_got;
		if (with_inv) {
			wc.wc_flags |= RNICPI_WC_WITH_INV;
			wc.invalidated_rkey = inv_stag;
		}
		if (solicited)
			wc.wc_flags |= RNICPI_WC_SOLICITED;
	}
	siw_cq_push(qp->rcq, &wc, solicited);
	siw_rx_release(qp);
}

/* ------------------------------------------------------------------ */
/* A whole FPDU arrived and passed its CRC: what each opcode does       */
/* ------------------------------------------------------------------ */

static int rx_done_write(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;

	siw_mr_put(rx->wmr);
	rx->wmr = NULL;
	return SIW_RX_CTRL;
}

static int rx_done_read_resp(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	struct siw_orqe *o = &qp->orq[qp->orq_head];

	o->got += rx->payload_len;
	if (!ddp_last((const struct iwarp_ctrl *)rx->hdr))
		return SIW_RX_CTRL;
	/* RFC 5040 §4.4: the Read Response carries exactly the RDMARDSZ
	 * bytes asked for; one that ends early would complete the Read
	 * with a hole in its sink. */
	if (o->got != o->size) {
		siw_qp_info(qp, "Read Response ended after %u of the %u bytes "
			    "asked for", o->got, o->size);
		if (o->sq_idx >= 0)
			siw_sq_complete(qp, (uint32_t)o->sq_idx,
					RNICPI_WC_BAD_RESP_ERR,
					(uint32_t)TERM_LAYER_RDMAP << 12 |
						(uint32_t)RDMAP_ETYPE_REMOTE_OP
							<< 8 |
						RDMAP_ECODE_CATASTROPHIC_STREAM);
		return rx_fail(qp, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       RNICPI_EVENT_QP_REQ_ERR);
	}
	if (o->sq_idx >= 0) {
		struct siw_wqe *w = &qp->sq[o->sq_idx];

		w->total_len = o->got;
		if (w->flags & RNICPI_SEND_SINK_INV)
			for (uint32_t i = 0; i < w->num_sge; i++)
				siw_sink_invalidate(qp, w->sge[i].lkey);
		siw_sq_complete(qp, (uint32_t)o->sq_idx, RNICPI_WC_SUCCESS, 0);
	}
	for (uint32_t i = 0; i < o->n_seg; i++) {
		siw_mr_put(o->mr[i]);
		o->mr[i] = NULL;
	}
	o->n_seg = 0;
	qp->orq_head = (qp->orq_head + 1) % qp->orq_size;
	qp->orq_count--;
	siw_qp_read_timer_arm(qp);
	return SIW_RX_CTRL;
}

/* The Read Request goes on the IRQ, its response to the transmitter. */
static int rx_done_read_req(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_read_req_hdr *h = (const void *)rx->hdr;
	struct siw_irqe *r = &qp->irq[(qp->irq_head + qp->irq_count) %
				      qp->irq_size];

	rx->msn[DDP_QN_READ_REQ]++;
	r->sink_stag = be32toh(h->rreq.sink_stag_be);
	r->sink_to = be64toh(h->rreq.sink_to_be);
	r->size = be32toh(h->rreq.size_be);
	r->src_stag = be32toh(h->rreq.src_stag_be);
	r->src_to = be64toh(h->rreq.src_to_be);
	r->mr = rx->wmr;
	r->src = r->mr ? r->mr->addr + (r->src_to - r->mr->iova) : NULL;
	rx->wmr = NULL;
	qp->irq_count++;
	return SIW_RX_CTRL;
}

/* Send, with or without Solicited Event and Invalidate. */
static int rx_done_send(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	const struct iwarp_untagged_hdr *h = (const void *)rx->hdr;
	uint8_t flags = rdmap_opcode_info(rx->opcode)->flags;
	bool inv = flags & RDMAP_OPF_INVALIDATE;
	bool se = flags & RDMAP_OPF_SOLICITED;
	uint32_t stag = be32toh(h->inval_stag_be);

	rx->send_got += rx->payload_len;
	if (!ddp_last(&h->ctrl))
		return SIW_RX_CTRL;
	rx->msn[DDP_QN_SEND]++;
	if (inv) {
		/* RFC 5040 §6.10: invalidate only an STag of this QP's PD,
		 * a region (as Linux siw does) or a type 2 window bound to
		 * this QP; otherwise "STag cannot be invalidated", which
		 * §7.4 lists as a Remote Protection and as a Remote
		 * Operation error: like Linux siw, the first for an STag
		 * we may not invalidate, the second for an unknown one. */
		int rc = siw_stag_invalidate(qp, stag, true);
		bool known = rc != -ENOENT;

		if (rc) {
			siw_qp_info(qp, "Send with Invalidate of STag "
				    "0x%08x: %s", stag,
				    known ? "not ours to invalidate"
					  : "unknown");
			siw_rx_complete_rqe(qp, RNICPI_WC_REM_INV_REQ_ERR,
					    false, 0, false);
			return rx_fail(qp, TERM_LAYER_RDMAP,
				       known ? RDMAP_ETYPE_REMOTE_PROT
					     : RDMAP_ETYPE_REMOTE_OP,
				       RDMAP_ECODE_CANNOT_INVALIDATE,
				       RNICPI_EVENT_QP_ACCESS_ERR);
		}
	}
	siw_rx_complete_rqe(qp, RNICPI_WC_SUCCESS, inv, stag, se);
	return SIW_RX_CTRL;
}

static int rx_done_terminate(struct siw_qp *qp)
{
	qp->rx.msn[DDP_QN_TERMINATE]++;
	siw_qp_term_received(qp);
	return SIW_RX_DISCARD;
}

static const siw_rx_step_fn rx_fpdu_done[RDMAP_OPCODE_COUNT] = {
	[RDMAP_RDMA_WRITE] = rx_done_write,
	[RDMAP_RDMA_READ_REQ] = rx_done_read_req,
	[RDMAP_RDMA_READ_RESP] = rx_done_read_resp,
	[RDMAP_SEND] = rx_done_send,
	[RDMAP_SEND_INV] = rx_done_send,
	[RDMAP_SEND_SE] = rx_done_send,
	[RDMAP_SEND_SE_INV] = rx_done_send,
	[RDMAP_TERMINATE] = rx_done_terminate,
};

/* The FPDU passed its CRC: act on it. */
static int fpdu_done(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	int next;

	qp->rx_fpdus++;

	if (qp->llp == SIW_LLP_AWAIT_RTR) {
		struct rnicpi_conn_event ev = {
			.type = RNICPI_CONN_ESTABLISHED,
			.qp = &qp->base,
			.ird = qp->ird,
			.ord = qp->ord,
			.flags = RNICPI_CONN_P2P |
				 (qp->crc ? RNICPI_CONN_MPA_CRC : 0),
		};

		/* RFC 6581 §9.2: the RTR arrived, the responder is in RTS. */
		qp->llp = SIW_LLP_RDMA;
		qp->state = RNICPI_QPS_RTS;
		qp->connected = true;
		siw_dev_timed_del(qp->dev, &qp->timed);
		siw_conn_event_addrs(qp->fd, &ev);
		siw_dev_queue_conn(qp->dev, &ev);
		siw_qp_dbg(qp, "RTR received: RTS");
	}
	/* The header's checks let only RFC 5040's opcodes this far. */
	next = rx_fpdu_done[rx->opcode](qp);
	/* The next FPDU begins with what waits in the stash, if anything. */
	if (next == SIW_RX_CTRL)
		rx->hdr_got = 0;
	return next;
}

static int rx_step_trailer(struct siw_qp *qp)
{
	struct siw_rx *rx = &qp->rx;
	uint32_t len = rx->pad_len + MPA_CRC_SIZE;
	struct iovec iov[2];
	ssize_t got;
	int rc;

	if (rx->trailer_got < len)
		rx->trailer_got += stash_take(rx, rx->trailer + rx->trailer_got,
					      len - rx->trailer_got);
	if (rx->trailer_got < len) {
		rc = rx_read(qp, iov, (int)rx_iov_tail(rx, iov, 0), &got);
		if (rc)
			return rc;
		rx_got_tail(rx, (size_t)got);
		if (rx->trailer_got < len)
			return SIW_RX_TRAILER;
	}
	if (qp->crc) {
		uint32_t crc = siw_crc32c(rx->crc, rx->trailer, rx->pad_len);
		uint32_t wire = mpa_crc_get(rx->trailer + rx->pad_len);

		/* RFC 5044 §8: a CRC error is fatal to the stream. */
		if (crc != wire) {
			siw_qp_info(qp, "MPA CRC 0x%08x, computed 0x%08x "
				    "(%s, %u bytes)", wire, crc,
				    rdmap_opcode_info(rx->opcode)->name,
				    rx->ulpdu_len);
			return rx_fail(qp, TERM_LAYER_LLP, 0, MPA_ECODE_CRC,
				       RNICPI_EVENT_QP_FATAL);
		}
	}
	return fpdu_done(qp);
}

/* Our Terminate or FIN is out: read and drop until the peer closes. */
static int rx_step_discard(struct siw_qp *qp)
{
	uint8_t buf[4096];
	ssize_t got;
	int rc;

	qp->rx.stash_off = qp->rx.stash_len = 0;
	rc = rx_read_buf(qp, buf, sizeof(buf), &got);
	if (rc)
		return rc;
	return SIW_RX_DISCARD;
}

static int rx_step_stop(struct siw_qp *qp)
{
	return SIW_RX_WAIT;
}

static const siw_rx_step_fn rx_steps[SIW_RX_STATE_COUNT] = {
	[SIW_RX_CTRL] = rx_step_ctrl,
	[SIW_RX_HDR] = rx_step_hdr,
	[SIW_RX_PAYLOAD] = rx_step_payload,
	[SIW_RX_TRAILER] = rx_step_trailer,
	[SIW_RX_STOP] = rx_step_stop,
	[SIW_RX_DISCARD] = rx_step_discard,
};

/*
 * Read and act on what @qp's socket holds. A pass ends when a read finds
 * nothing, or, between two FPDUs with nothing read ahead, when the last
 * read came back shorter than asked: TCP hands over all it holds, so the
 * socket was empty then, and the read that would say so (EAGAIN) is one
 * system call on the critical path of every message of a ping-pong
 * (20000 of 40000 recvmsg() calls of an 8-byte send_lat client). What
 * arrives after is seen as usual: epoll is level-triggered, and a poller
 * asks poll() first.
 */
void siw_qp_rx(struct siw_qp *qp)
{
	int budget = SIW_RX_BUDGET * 4;

	if (!qp->rx.stash && qp->fd >= 0) {
		qp->rx.stash = malloc(SIW_RX_STASH);
		if (!qp->rx.stash) {
			siw_qp_info(qp, "no memory for the receive stash");
			siw_qp_llp_closed(qp, -ENOMEM);
			return;
		}
	}
	qp->rx.drained = false;
	/* Past the budget, only what waits in the stash is finished: epoll
	 * does not see it, the socket's next bytes will be seen again. */
	while (qp->fd >= 0 && (budget-- > 0 || stash_avail(&qp->rx))) {
		enum siw_rx_state s = qp->rx.state;
		int next;

		if (s == SIW_RX_CTRL && qp->rx.hdr_got == 0 &&
		    qp->rx.drained && !stash_avail(&qp->rx))
			return;

		if ((unsigned int)s >= SIW_RX_STATE_COUNT) {
			siw_qp_info(qp, "bad receive state %d", s);
			qp->rx.state = SIW_RX_STOP;
			return;
		}
		next = rx_steps[s](qp);
		if (next == SIW_RX_WAIT)
			return;
		qp->rx.state = (enum siw_rx_state)next;
		if (qp->rx.state == SIW_RX_STOP)
			return;
		/* A Read Request or Read Response may let tx go on. */
		if (qp->rx.state == SIW_RX_CTRL && siw_qp_tx_pending(qp))
			siw_qp_tx(qp);
	}
}
