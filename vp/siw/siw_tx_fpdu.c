/* SPDX-License-Identifier: MIT */
/*
 * siw_tx_fpdu.c - FPDUs out of a message: how much payload one carries
 * (RFC 5044 §4.1 "MULPDU"), its header from the opcode's facts and the
 * message, pad and CRC (RFC 5044 §4), batches of up to tx_batch FPDUs of
 * one message, and writing a batch with one sendmsg() over an iovec of
 * headers, the user's memory and trailers, behind what the pack holds.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "vp/siw/siw_tx.h"

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

/* Fill up to @max iovecs with @len bytes of the source at @off. */
uint32_t siw_tx_gather(const struct iovec *src, uint32_t n_src, uint64_t off,
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
uint32_t siw_tx_src_mrs(struct siw_qp *qp, struct siw_mr *const **mrs)
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
int siw_tx_dead_mr(struct siw_qp *qp)
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

/*
 * Where the kernel copies a payload to. sendmsg() copies the bytes into
 * page fragments of its own at an offset that runs on with what the
 * thread writes and starts again at 0 once the fragments of what went
 * before are free. The kernel copies with "rep movsb", whose speed on
 * this machine's AMD EPYC depends on how far (modulo 4 KiB) the
 * destination lies past the source, d (64 KiB, hot caches): 1.3 us when
 * d is a multiple of 32, 1.5-1.75 us when it is not and d < 128 (1.4 us
 * further on), and 21 us when d is 1 to 31 (glibc's memcpy the same). A
 * page-aligned buffer behind a 16-byte header copied from offset 0 is
 * that last case. Every FPDU ahead of the payload moves its destination
 * on by the FPDU's length, so such a message is led by one FPDU of 4 to
 * 32 bytes (DDP segments a message as the sender likes) that makes d a
 * multiple of 32 (a source not 4-byte aligned: at least past 31). The
 * receiver's kernel copies into a target that sits where the source did
 * in its page from d back, a multiple of 32 as well.
 *
 * Only messages past SIW_TX_REALIGN_MIN, more than TCP sends in one
 * 64 KiB super-segment: in ping-pongs those were the ones copied from
 * offset 0, over loopback (write_lat 64 KiB, its sendmsg() 34 us, the
 * half round trip 38 us where bare TCP took 13-15; with a lead 12 and
 * 19 us; 256 KiB 59 -> 40 us, 1 MiB 155 -> 127) and over a veth pair of
 * MTU 1500 (64 KiB 37.6 -> 18.6 us). Shorter ones were not, whatever the
 * MSS: the lead's FPDU only cost them (loopback 4-40 KiB 0.2-0.3 us,
 * veth 16 KiB 9.5 -> 10.4 us), as it would a message whose d is 128 or
 * more. On a stream with bytes in flight, whose offset we cannot know,
 * the lead trades one distance for another. And only between two
 * hostrdma ends that agreed to FPDUs beyond the MSS (large_fpdu): theirs
 * cross segments anyway, where with FPDUs cut to the MSS a lead would
 * move every FPDU of the message off the segments, which RFC 5044 asks
 * senders to keep them on and hardware receivers place by.
 * hostrdma-siw(7), tx_realign.
 */
#define SIW_COPY_ALIAS 32u
#define SIW_COPY_NEAR 128u
#define SIW_TX_HEAD_MIN 4u
#define SIW_TX_HEAD_MAX 32u
#define SIW_TX_REALIGN_MIN (60u * 1024)

/* Bytes an FPDU with an @hdr_len-byte header and @payload bytes takes. */
static uint32_t fpdu_bytes(uint32_t hdr_len, uint32_t payload)
{
	return mpa_fpdu_len(hdr_len - MPA_HDR_SIZE + payload);
}

/* The payload of the FPDU that leads the message, or 0 for none. */
static uint8_t realign_head(const struct siw_qp *qp, uint32_t hdr_len)
{
	const struct siw_tx *tx = &qp->tx;
	uint32_t queued = tx->pack_len - tx->pack_sent, p, d0, d;
	struct iovec first;

	if (!qp->dev->opts.tx_realign || !qp->large_fpdu || tx->zc ||
	    (tx->kind != SIW_TX_SQ && tx->kind != SIW_TX_RRESP) ||
	    tx->msg_len < SIW_TX_REALIGN_MIN ||
	    !siw_tx_gather(tx->src, tx->n_src, 0, 1, &first, 1))
		return 0;
	/* d without a lead: the payload behind what is queued and its
	 * header */
	d0 = (uint32_t)(queued + hdr_len - (uintptr_t)first.iov_base) & 4095u;
	if (d0 % SIW_COPY_ALIAS == 0 || d0 >= SIW_COPY_NEAR ||
	    (d0 % 4 && d0 >= SIW_COPY_ALIAS))
		return 0;
	for (p = SIW_TX_HEAD_MIN; p <= SIW_TX_HEAD_MAX; p += 4) {
		d = (d0 + fpdu_bytes(hdr_len, p)) & 4095u;
		if (d0 % 4 ? d >= SIW_COPY_ALIAS : d % SIW_COPY_ALIAS == 0)
			return (uint8_t)p;
	}
	return 0;	/* not reached: FPDU lengths step by 4 */
}

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
	if (off == 0 && payload > SIW_TX_HEAD_MAX) {
		uint32_t head = realign_head(qp, f->hdr_len);

		if (head)
			payload = head;
	}
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
		uint32_t n, i, crc, n_mr = siw_tx_src_mrs(qp, &mrs);

		if (!siw_mrs_access_begin(mrs, n_mr))
			return siw_tx_dead_mr(qp);
		crc = siw_crc32c(0, f->hdr, f->hdr_len);
		n = siw_tx_gather(tx->src, tx->n_src, off, payload, iov,
				  SIW_MAX_SGE);
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
int siw_tx_build_batch(struct siw_qp *qp)
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
			n += siw_tx_gather(tx->src, tx->n_src, f->off + skip,
					   f->payload - skip, iov + n,
					   SIW_MAX_SGE);
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

/* One call writing @iov[0..@n) with @flags, the regions @mrs read only
 * while they are registered: the bytes written, or -errno (-EFAULT when
 * a region is gone, see siw_tx_dead_mr()). */
static ssize_t tx_call(struct siw_qp *qp, struct iovec *iov, uint32_t n,
		       int flags, struct siw_mr *const *mrs, uint32_t n_mr)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n };
	ssize_t rc;
	int err;

	do {
		if (!siw_mrs_access_begin(mrs, n_mr))
			return siw_tx_dead_mr(qp);
		/* One piece: no msghdr and iovec for the kernel to copy in */
		if (n == 1)
			rc = send(qp->fd, iov[0].iov_base, iov[0].iov_len,
				  flags);
		else
			rc = sendmsg(qp->fd, &msg, flags);
		err = errno;
		siw_mrs_access_end(mrs, n_mr);
	} while (rc < 0 && err == EINTR);
	if (rc < 0)
		return err == EWOULDBLOCK ? -EAGAIN : -err;
	qp->tx_calls++;
	return rc;
}

/* One call of @iov[0..@n) with @flags from the message's regions. */
ssize_t siw_tx_sendmsg(struct siw_qp *qp, struct iovec *iov, uint32_t n,
		       int flags)
{
	struct siw_mr *const *mrs;
	uint32_t n_mr = siw_tx_src_mrs(qp, &mrs);

	return tx_call(qp, iov, n, flags, mrs, n_mr);
}

/*
 * Up to SIW_TX_FLAT bytes in several pieces (an FPDU's header, payload
 * and trailer) are copied into one buffer and written with send(): the
 * kernel's sendmsg() copies in the msghdr and the iovecs and walks them
 * piece by piece, which costs more than copying a few hundred bytes
 * (an 8-byte Write is three pieces, 30 bytes).
 */
#define SIW_TX_FLAT 1024

static ssize_t send_flat(struct siw_qp *qp, const struct iovec *iov,
			 uint32_t n, size_t len)
{
	uint8_t buf[SIW_TX_FLAT];
	struct iovec one = { .iov_base = buf, .iov_len = len };
	struct siw_mr *const *mrs;
	uint32_t i, n_mr = siw_tx_src_mrs(qp, &mrs);
	uint8_t *p = buf;

	/* The regions are read here only: once copied, the bytes are ours */
	if (!siw_mrs_access_begin(mrs, n_mr))
		return siw_tx_dead_mr(qp);
	for (i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	siw_mrs_access_end(mrs, n_mr);
	return tx_call(qp, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
}

/* The calls that copy: as many of the batch's bytes, the pack's ahead
 * of them, as the socket takes in one call, until all are out. */
int siw_tx_send_copied(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	struct iovec iov[1 + SIW_TX_BATCH * (SIW_MAX_SGE + 2)];

	while (tx->fpdu_sent < tx->fpdu_total) {
		/* Packed messages came first: they lead the call. */
		uint32_t n = 0, packed = tx->pack_len - tx->pack_sent, left;
		ssize_t rc;

		if (packed) {
			iov[0].iov_base = tx->pack + tx->pack_sent;
			iov[0].iov_len = packed;
			n = 1;
		}
		n += batch_iov(tx, tx->fpdu_sent, iov + n);
		left = packed + tx->fpdu_total - tx->fpdu_sent;
		if (n > 1 && left <= SIW_TX_FLAT)
			rc = send_flat(qp, iov, n, left);
		else
			rc = siw_tx_sendmsg(qp, iov, n,
					    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (rc < 0)
			return (int)rc;
		if (packed) {
			uint32_t k = (size_t)rc < packed ? (uint32_t)rc
							 : packed;

			siw_tx_pack_sent(tx, k);
			rc -= k;
		}
		tx->fpdu_sent += (uint32_t)rc;
	}
	return 0;
}
