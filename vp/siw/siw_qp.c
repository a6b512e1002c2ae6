/* SPDX-License-Identifier: MIT */
/*
 * siw_qp.c - QP states (RNIC verbs: IDLE RTS CLOSING TERMINATE ERROR),
 * completions and flushing, the Terminate message (RFC 5040 §4.8, §7),
 * closing the LLP stream, and the progress thread's entry points (who
 * reads the socket otherwise: siw_park.c).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vp/siw/siw.h"

/* @now: a clock read of the caller's, or 0 */
void siw_qp_unlock_at(struct siw_qp *qp, uint64_t now)
{
	struct siw_device *dev = qp->dev;

	/* A CQ may have been armed while we held the lock. */
	siw_qp_park_recheck_at(qp, now);
	pthread_mutex_unlock(&qp->lock);
	siw_dev_deliver(dev);
}

void siw_qp_unlock(struct siw_qp *qp)
{
	siw_qp_unlock_at(qp, 0);
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */
/* ------------------------------------------------------------------ */

enum rnicpi_wc_opcode siw_wc_opcode(enum rnicpi_wr_opcode op)
{
	switch (op) {
	case RNICPI_WR_RDMA_WRITE:
		return RNICPI_WC_RDMA_WRITE;
	case RNICPI_WR_RDMA_READ:
		return RNICPI_WC_RDMA_READ;
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

/* The completion of the send WR @w with @status, if it has one: every WR
 * that fails completes, a successful one when it was signalled. */
static void sq_push_wc(struct siw_qp *qp, const struct siw_wqe *w,
		       enum rnicpi_wc_status status, uint32_t vendor_err)
{
	struct rnicpi_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = siw_wc_opcode(w->opcode),
		.vendor_err = vendor_err,
		.qp_num = qp->base.qp_num,
	};

	if (status == RNICPI_WC_SUCCESS && !(w->flags & RNICPI_SEND_SIGNALED))
		return;
	if (status == RNICPI_WC_SUCCESS && w->opcode != RNICPI_WR_LOCAL_INV &&
	    w->opcode != RNICPI_WR_BIND_MW && w->opcode != RNICPI_WR_REG_MR)
		wc.byte_len = (uint32_t)w->total_len;
	siw_cq_push(qp->scq, &wc, false);
}

/* Report and retire the done WRs at the head of the SQ, oldest first,
 * up to the first one still in progress or not yet started. */
static void sq_reap(struct siw_qp *qp)
{
	while (qp->sq_count > qp->sq_unstarted &&
	       qp->sq[qp->sq_head].state == SIW_WQE_DONE) {
		const struct siw_wqe *w = &qp->sq[qp->sq_head];

		sq_push_wc(qp, w, w->wc_status, w->vendor_err);
		qp->sq_head = (qp->sq_head + 1) % qp->sq_size;
		qp->sq_count--;
	}
}

/*
 * The WR in SQ slot @idx is done. Its outcome is kept in the slot and
 * reported only once every WR posted before it is done as well: a send
 * queue completes in posting order (RDMA verbs; IBA 10.8.5), although
 * here a WR finishes out of order whenever it does not wait for what came
 * before it on the wire: a Write or Send posted after a Read goes out at
 * once but the Read is done only when its response has arrived, and a
 * copied Send leaves before the kernel lets go of an earlier zero-copy
 * one. Reporting it at once would hand the consumer the later completion
 * first, and a consumer that retires WRs in order (IT-API does) would
 * then lose the earlier one.
 */
void siw_sq_complete(struct siw_qp *qp, uint32_t idx,
		     enum rnicpi_wc_status status, uint32_t vendor_err)
{
	struct siw_wqe *w = &qp->sq[idx];

	if (w->state == SIW_WQE_DONE)
		return;
	w->wc_status = status;
	w->vendor_err = vendor_err;
	w->state = SIW_WQE_DONE;
	sq_reap(qp);
}

static void orqe_release(struct siw_orqe *o)
{
	uint32_t i;

	for (i = 0; i < o->n_seg; i++) {
		siw_mr_put(o->mr[i]);
		o->mr[i] = NULL;
	}
	o->n_seg = 0;
}

/* Every WR still posted completes with WR_FLUSH_ERR (RDMA verbs: leaving
 * RTS flushes both queues). */
static void flush_all(struct siw_qp *qp)
{
	uint32_t i;

	/* An FPDU half on the wire must be finished first (siw_qp_tx does,
	 * then drops the message): anything else would corrupt the stream
	 * our Terminate still has to travel on. */
	if (!(qp->tx.state == SIW_TXS_SEND && qp->tx.fpdu_sent && qp->fd >= 0))
		siw_tx_release(qp);
	siw_tx_zc_flush(qp);
	while (qp->orq_count) {
		orqe_release(&qp->orq[qp->orq_head]);
		qp->orq_head = (qp->orq_head + 1) % qp->orq_size;
		qp->orq_count--;
	}
	while (qp->irq_count) {
		siw_mr_put(qp->irq[qp->irq_head].mr);
		qp->irq[qp->irq_head].mr = NULL;
		qp->irq_head = (qp->irq_head + 1) % qp->irq_size;
		qp->irq_count--;
	}
	/* SQ: every WR still there in posting order; one that finished
	 * behind an earlier one still in progress reports its own outcome,
	 * the others are flushed. */
	qp->sq_tx = (qp->sq_head + qp->sq_count) % qp->sq_size;
	qp->sq_unstarted = 0;
	for (i = 0; i < qp->sq_count; i++) {
		struct siw_wqe *w = &qp->sq[(qp->sq_head + i) % qp->sq_size];

		if (w->state == SIW_WQE_DONE) {
			sq_push_wc(qp, w, w->wc_status, w->vendor_err);
			continue;
		}
		sq_push_wc(qp, w, RNICPI_WC_WR_FLUSH_ERR, 0);
		w->state = SIW_WQE_DONE;
		if (w->reg_mr) { /* a REG_MR that never ran */
			siw_mr_put(w->reg_mr);
			w->reg_mr = NULL;
		}
	}
	qp->sq_head = qp->sq_tx;
	qp->sq_count = 0;
	/* The receive in progress, then the RQ. */
	if (qp->rx.send_active) {
		struct rnicpi_wc wc = {
			.wr_id = qp->rx.rqe.wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		siw_cq_push(qp->rcq, &wc, false);
	}
	siw_rx_release(qp);
	pthread_mutex_lock(&qp->rq_lock);
	qp->rq_closed = true;
	while (qp->rq_count) {
		struct rnicpi_wc wc = {
			.wr_id = qp->rq[qp->rq_head].wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		siw_cq_push(qp->rcq, &wc, false);
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
	}
	pthread_mutex_unlock(&qp->rq_lock);
}

void siw_qp_to_error(struct siw_qp *qp)
{
	enum rnicpi_qp_state old = qp->state;

	qp->state = RNICPI_QPS_ERR;
	flush_all(qp);
	if (qp->srq && old != RNICPI_QPS_ERR) {
		struct rnicpi_async_event ev = {
			.type = RNICPI_EVENT_QP_LAST_WQE_REACHED,
		};

		ev.element.qp = &qp->base;
		siw_dev_queue_async(qp->dev, &ev);
	}
	if (old != RNICPI_QPS_ERR)
		siw_qp_dbg(qp, "%s -> ERR", rnicpi_qp_state_name(old));
}

/* ------------------------------------------------------------------ */
/* The LLP stream                                                      */
/* ------------------------------------------------------------------ */

static void report_disconnect(struct siw_qp *qp, int status)
{
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_DISCONNECTED,
		.status = status,
		.qp = &qp->base,
	};

	if (!qp->connected || qp->disc_reported || qp->destroyed)
		return;
	qp->disc_reported = true;
	siw_dev_queue_conn(qp->dev, &ev);
}

static void report_conn_error(struct siw_qp *qp, int status)
{
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_ERROR,
		.status = status,
		.qp = &qp->base,
	};

	if (qp->destroyed)
		return;
	siw_dev_queue_conn(qp->dev, &ev);
}

bool siw_fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	return poll(&p, 1, 0) > 0;
}

void siw_qp_socket_close(struct siw_qp *qp, bool abort)
{
	struct siw_cq *waiter;

	if (qp->fd < 0)
		return;
	siw_dev_poll_del(qp->dev, qp->fd);
	qp->watched = false;
	if (abort) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		/* RST instead of FIN: RFC 5040 §5.3 abortive close. */
		setsockopt(qp->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(qp->fd);
	qp->fd = -1;
	/* A waiter asleep on the socket holds its file (poll): the close
	 * takes effect, FIN or RST, once it lets go. Wake it; its next
	 * sleep has no claim on this QP (a new socket is the progress
	 * thread's until a wait claims it). */
	waiter = atomic_exchange(&qp->wait_cq, NULL);
	if (waiter)
		rnicpi_cq_ring_wake(&waiter->ring);
	qp->llp = SIW_LLP_CLOSED;
	qp->tx.want_out = false;
	qp->tx.pack_len = qp->tx.pack_sent = 0;
	siw_dev_timed_del(qp->dev, &qp->timed);
	siw_qp_dbg(qp, "stream closed%s", abort ? " (reset)" : "");
}

void siw_qp_llp_shutdown(struct siw_qp *qp)
{
	struct siw_cq *waiter;

	if (qp->fd < 0 || qp->llp == SIW_LLP_DRAIN)
		return;
	shutdown(qp->fd, SHUT_WR);
	qp->llp = SIW_LLP_DRAIN;
	/* Not a waiter's any more: wake it, so that its poll does not hold
	 * the socket's file past the close the linger timer may make */
	waiter = atomic_exchange(&qp->wait_cq, NULL);
	if (waiter)
		rnicpi_cq_ring_wake(&waiter->ring);
	/* The peer's FIN is the progress thread's to see: a parked socket
	 * is out of its epoll set, and the linger timer below replaces the
	 * park timer that would have given it back. */
	siw_qp_rx_unpark(qp);
	if (qp->rx.state != SIW_RX_DISCARD && qp->rx.state != SIW_RX_STOP &&
	    (qp->state == RNICPI_QPS_ERR || qp->state == RNICPI_QPS_TERMINATE))
		qp->rx.state = SIW_RX_DISCARD;
	siw_dev_timed_add(qp->dev, &qp->timed, SIW_LINGER_MS);
	siw_qp_dbg(qp, "FIN sent, waiting for the peer's");
}

void siw_qp_llp_closed(struct siw_qp *qp, int status)
{
	enum siw_llp_state llp = qp->llp;

	switch (llp) {
	case SIW_LLP_AWAIT_REPLY:
	case SIW_LLP_AWAIT_RTR:
		siw_qp_info(qp, "stream lost during MPA set-up (%d)", status);
		siw_qp_socket_close(qp, status != 0);
		siw_qp_to_error(qp);
		report_conn_error(qp, status ? status : -ECONNRESET);
		return;
	case SIW_LLP_DRAIN:
		/* We closed first and the peer answered (or time ran out). */
		siw_qp_socket_close(qp, status != 0);
		if (qp->state != RNICPI_QPS_ERR)
			siw_qp_to_error(qp);
		report_disconnect(qp, qp->term.valid || qp->term_received ?
					      -ECONNABORTED : 0);
		return;
	case SIW_LLP_RDMA:
		break;
	default:
		siw_qp_socket_close(qp, true);
		return;
	}
	/* The peer closed (status 0 at an FPDU boundary) or broke. */
	if (status) {
		struct rnicpi_async_event ev = { .type = RNICPI_EVENT_QP_FATAL };

		siw_qp_info(qp, "stream broke in state %s: %s",
			    rnicpi_qp_state_name(qp->state), g_strerror(-status));
		ev.element.qp = &qp->base;
		ev.status = status;
		if (!qp->destroyed && qp->state != RNICPI_QPS_ERR)
			siw_dev_queue_async(qp->dev, &ev);
		siw_qp_socket_close(qp, true);
	} else {
		siw_qp_dbg(qp, "peer closed the stream");
		shutdown(qp->fd, SHUT_WR);
		siw_qp_socket_close(qp, false);
	}
	if (qp->state != RNICPI_QPS_ERR)
		siw_qp_to_error(qp);
	report_disconnect(qp, status);
}

/* ------------------------------------------------------------------ */
/* Terminate (RFC 5040 §4.8, §7.4)                                     */
/* ------------------------------------------------------------------ */

void siw_qp_terminate(struct siw_qp *qp, uint8_t layer, uint8_t etype,
		      uint8_t ecode, bool with_hdr,
		      enum rnicpi_event_type event)
{
	struct siw_term *t = &qp->term;
	struct rdmap_term *ctrl = (struct rdmap_term *)t->body;
	uint16_t flags = 0;
	uint32_t len = sizeof(*ctrl);
	struct rnicpi_async_event ev = { .type = event };

	if (t->valid || qp->term_received || qp->state == RNICPI_QPS_ERR) {
		qp->rx.state = SIW_RX_DISCARD;
		return;
	}
	memset(t, 0, sizeof(*t));
	/* RFC 5040 §4.8: for DDP and RDMAP errors the Terminate carries
	 * the offending FPDU's DDP (and for a Read Request its RDMAP)
	 * header, so the peer can tell which message failed. */
	if (with_hdr && qp->rx.hdr_got >= sizeof(struct iwarp_ctrl)) {
		struct iwarp_ctrl *c = (struct iwarp_ctrl *)qp->rx.hdr;
		uint32_t ddp = ddp_tagged(c) ? TERM_DDP_TAGGED_LEN
					     : TERM_DDP_UNTAGGED_LEN;

		if (qp->rx.hdr_got >= MPA_HDR_SIZE + ddp) {
			flags |= TERM_FLAG_M | TERM_FLAG_D;
			memcpy(t->body + len, qp->rx.hdr, MPA_HDR_SIZE + ddp);
			len += MPA_HDR_SIZE + ddp;
			if (!ddp_tagged(c) &&
			    rdmap_opcode(c) == RDMAP_RDMA_READ_REQ &&
			    qp->rx.hdr_got >= sizeof(struct iwarp_read_req_hdr)) {
				flags |= TERM_FLAG_R;
				memcpy(t->body + len,
				       qp->rx.hdr + MPA_HDR_SIZE + ddp,
				       sizeof(struct rdmap_read_req));
				len += sizeof(struct rdmap_read_req);
			}
		}
	}
	rdmap_term_set(ctrl, layer, etype, ecode, flags);
	t->layer = layer;
	t->etype = etype;
	t->ecode = ecode;
	t->body_len = len;
	t->valid = true;
	siw_qp_info(qp, "protocol error: sending Terminate layer %u etype %u "
		    "ecode 0x%02x", layer, etype, ecode);
	qp->rx.state = SIW_RX_DISCARD;
	/* Leave RTS: flush what is posted, then send the Terminate. */
	siw_qp_to_error(qp);
	qp->state = RNICPI_QPS_TERMINATE;
	if (!qp->destroyed) {
		ev.element.qp = &qp->base;
		ev.term_layer = layer;
		ev.term_etype = etype;
		ev.term_ecode = ecode;
		ev.term_remote = 0;
		ev.status = -EPROTO;
		siw_dev_queue_async(qp->dev, &ev);
	}
	if (qp->llp == SIW_LLP_AWAIT_REPLY || qp->llp == SIW_LLP_AWAIT_RTR) {
		report_conn_error(qp, -EPROTO);
		qp->llp = SIW_LLP_RDMA;
	}
	siw_qp_tx(qp);
}

/* Status a requester's WR gets for the Terminate it received. */
static enum rnicpi_wc_status term_wc_status(uint8_t layer, uint8_t etype,
					    uint8_t ecode)
{
	switch (layer) {
	case TERM_LAYER_RDMAP:
		if (etype == RDMAP_ETYPE_REMOTE_PROT)
			return RNICPI_WC_REM_ACCESS_ERR;
		return RNICPI_WC_REM_OP_ERR;
	case TERM_LAYER_DDP:
		if (etype == DDP_ETYPE_TAGGED)
			return RNICPI_WC_REM_ACCESS_ERR;
		if (etype == DDP_ETYPE_UNTAGGED)
			return ecode == DDP_ECODE_UT_NO_BUFFER
				       ? RNICPI_WC_REM_OP_ERR
				       : RNICPI_WC_REM_INV_REQ_ERR;
		return RNICPI_WC_REM_OP_ERR;
	default:
		return RNICPI_WC_FATAL_ERR;
	}
}

static enum rnicpi_event_type term_event(uint8_t layer, uint8_t etype)
{
	if ((layer == TERM_LAYER_RDMAP && etype == RDMAP_ETYPE_REMOTE_PROT) ||
	    (layer == TERM_LAYER_DDP && etype == DDP_ETYPE_TAGGED))
		return RNICPI_EVENT_QP_ACCESS_ERR;
	if ((layer == TERM_LAYER_RDMAP && etype == RDMAP_ETYPE_REMOTE_OP) ||
	    (layer == TERM_LAYER_DDP && etype == DDP_ETYPE_UNTAGGED))
		return RNICPI_EVENT_QP_REQ_ERR;
	return RNICPI_EVENT_QP_FATAL;
}

/* Which of our WRs the Terminate names: the oldest outstanding Read for
 * a terminated Read Request, else the oldest WR not complete yet (a Write
 * or Send completes once it is on the wire, so the error lands on the
 * next WR the application sees, as an IB requester's would). */
static int term_victim(struct siw_qp *qp, const struct rdmap_term *ctrl,
		       uint32_t body_len)
{
	bool want_read = false;
	uint32_t i;

	if ((rdmap_term_flags(ctrl) & TERM_FLAG_D) &&
	    body_len >= sizeof(*ctrl) + sizeof(struct iwarp_ctrl)) {
		const struct iwarp_ctrl *c =
			(const struct iwarp_ctrl *)((const uint8_t *)ctrl +
						    sizeof(*ctrl));

		want_read = !ddp_tagged(c) &&
			    rdmap_opcode(c) == RDMAP_RDMA_READ_REQ;
	}
	if (want_read && qp->orq_count && qp->orq[qp->orq_head].sq_idx >= 0)
		return qp->orq[qp->orq_head].sq_idx;
	for (i = 0; i < qp->sq_count; i++) {
		uint32_t idx = (qp->sq_head + i) % qp->sq_size;

		if (qp->sq[idx].state != SIW_WQE_DONE)
			return (int)idx;
	}
	return -1;
}

void siw_qp_term_received(struct siw_qp *qp)
{
	const struct rdmap_term *ctrl = (const struct rdmap_term *)
						qp->rx.term_body;
	uint32_t n = qp->rx.payload_len;
	uint8_t layer = 0, etype = 0, ecode = 0;
	struct rnicpi_async_event ev = { 0 };
	int victim;

	if (n > sizeof(qp->rx.term_body))
		n = sizeof(qp->rx.term_body);
	if (n >= sizeof(*ctrl)) {
		layer = rdmap_term_layer(ctrl);
		etype = rdmap_term_etype(ctrl);
		ecode = rdmap_term_ecode(ctrl);
	}
	qp->term_received = true;
	siw_qp_info(qp, "Terminate received: layer %u etype %u ecode 0x%02x",
		    layer, etype, ecode);
	victim = n >= sizeof(*ctrl) ? term_victim(qp, ctrl, n) : -1;
	if (victim >= 0)
		siw_sq_complete(qp, (uint32_t)victim,
				term_wc_status(layer, etype, ecode),
				(uint32_t)layer << 12 | (uint32_t)etype << 8 |
					ecode);
	siw_qp_to_error(qp);
	qp->state = RNICPI_QPS_TERMINATE;
	qp->rx.state = SIW_RX_DISCARD;
	if (!qp->destroyed) {
		ev.type = term_event(layer, etype);
		ev.element.qp = &qp->base;
		ev.term_layer = layer;
		ev.term_etype = etype;
		ev.term_ecode = ecode;
		ev.term_remote = 1;
		ev.status = -ECONNABORTED;
		siw_dev_queue_async(qp->dev, &ev);
	}
	qp->state = RNICPI_QPS_ERR;
	siw_qp_llp_shutdown(qp);
}

/* ------------------------------------------------------------------ */
/* Progress thread entry points                                        */
/* ------------------------------------------------------------------ */

/*
 * Tell the engine what to watch on @qp's socket: data unless the socket
 * is parked, room to write while the send side waits for it, and hang-ups
 * (and errors, which carry zero-copy notifications). A parked socket with
 * nothing to write and no zero-copy call pending leaves the epoll set
 * when it is parked (@parking): while it is in one, every segment the
 * peer delivers runs the set's wake-up callback inside the peer's send(),
 * whatever the mask (in a loopback TCP ping-pong in C, a socket in an
 * epoll set that watches only EPOLLRDHUP made the half round trip 0.15 us
 * longer, 0.22 us with a thread asleep in epoll_wait(), of 4.7). Its
 * consumer reads it, and sees a hang-up that way; the park timer and an
 * arm give it back. A socket that came back for EPOLLOUT stays until the
 * next park: a bulk sender fills its socket again and again, and adding
 * and removing it each time costs more than the callbacks.
 */
void siw_qp_poll_update(struct siw_qp *qp, bool parking)
{
	uint32_t events = EPOLLRDHUP | (qp->rx.parked ? 0 : EPOLLIN) |
			  (qp->tx.want_out ? EPOLLOUT : 0);
	bool watch = !qp->rx.parked || qp->tx.want_out || qp->zc_count ||
		     qp->llp != SIW_LLP_RDMA;

	if (qp->fd < 0)
		return;
	if (!watch && parking && qp->watched) {
		siw_dev_poll_del(qp->dev, qp->fd);
		qp->watched = false;
	} else if (qp->watched) {
		siw_dev_poll_mod(qp->dev, qp->fd, &qp->item, events);
	} else if (watch) {
		int rc = siw_dev_poll_add(qp->dev, qp->fd, &qp->item, events);

		qp->watched = !rc;
		/* Not watched (no memory, or max_user_watches): a polling
		 * consumer still reads the socket, and the QP's timer tries
		 * again in a millisecond (siw_qp_timeout). */
		if (rc) {
			siw_qp_info(qp, "epoll: %s; trying again",
				    g_strerror(-rc));
			siw_dev_timed_add(qp->dev, &qp->timed, 1);
		}
	}
}

/*
 * Is polling on worth it after a pass that read @reads times, @bytes
 * bytes, @fpdus FPDUs and made @sends sendmsg() calls (option
 * busy_poll_us)? Yes for bulk data (FPDUs of 16 KiB and more: the sender
 * goes on) and for a pass that answered what it read (a Read Response, a
 * Terminate: a requester waits for it and will ask again soon). Not for
 * a pass that only took small FPDUs: that sender streams small messages
 * as fast as its core lets it, and a receiver that reads each of them as
 * it comes makes the kernel acknowledge more often, which costs that core
 * (8-byte Writes: 0.033 -> 0.026 Gbit/s when polled for).
 */
static bool worth_polling(uint64_t reads, uint64_t bytes, uint64_t fpdus,
			  uint64_t sends)
{
	return reads && (sends || bytes >= 16384 * fpdus);
}

bool siw_qp_handle(struct siw_qp *qp, uint32_t events)
{
	uint64_t reads, bytes, fpdus, sends;

	pthread_mutex_lock(&qp->lock);
	if (qp->destroyed || qp->fd < 0) {
		pthread_mutex_unlock(&qp->lock);
		return false;
	}
	reads = qp->rx_reads;
	bytes = qp->rx_bytes;
	fpdus = qp->rx_fpdus;
	sends = qp->tx_calls;
	if (qp->llp == SIW_LLP_AWAIT_REPLY) {
		siw_qp_mpa_reply_rx(qp);
	} else {
		if ((events & EPOLLERR) && qp->zc_enabled)
			siw_tx_zc_reap(qp);
		if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			siw_qp_rx(qp);
		else if ((events & EPOLLIN) && !siw_qp_rx_park(qp))
			siw_qp_rx(qp);
		if (qp->fd >= 0 && ((events & EPOLLOUT) ||
				    siw_qp_tx_pending(qp)))
			siw_qp_tx(qp);
	}
	reads = qp->rx_reads - reads;
	bytes = qp->rx_bytes - bytes;
	fpdus = qp->rx_fpdus - fpdus;
	sends = qp->tx_calls - sends;
	siw_qp_unlock(qp);
	return worth_polling(reads, bytes, fpdus, sends);
}

bool siw_qp_orq_alloc(struct siw_qp *qp)
{
	if (!qp->orq)
		qp->orq = calloc(qp->orq_size, sizeof(*qp->orq));
	return qp->orq != NULL;
}

int siw_qp_read_queues_size(struct siw_qp *qp)
{
	uint32_t n_orq = qp->ord ? qp->ord : 1, n_irq = qp->ird ? qp->ird : 1;

	/* The ORQ's entries (424 bytes each) wait for the first Read
	 * (siw_qp_orq_alloc): most QPs never read, and SIW_DEFAULT_ORD of
	 * them were 6.8 kB of every idle QP. An initiator whose RTR is a
	 * zero-length Read needs them at once. */
	if (n_orq != qp->orq_size) {
		free(qp->orq);
		qp->orq = NULL;
		qp->orq_size = n_orq;
	}
	if (qp->initiator && qp->rtr == MPA_V2_READ_RTR &&
	    !siw_qp_orq_alloc(qp))
		return -ENOMEM;
	if (n_irq != qp->irq_size) {
		struct siw_irqe *irq = calloc(n_irq, sizeof(*irq));

		if (!irq)
			return -ENOMEM;
		free(qp->irq);
		qp->irq = irq;
		qp->irq_size = n_irq;
	}
	qp->orq_head = qp->irq_head = 0;
	return 0;
}

void siw_qp_read_timer_arm(struct siw_qp *qp)
{
	uint32_t limit = qp->dev->opts.read_timeout_ms;
	uint64_t waited;

	if (!limit)
		return;
	if (!qp->orq_count || qp->orq[qp->orq_head].sq_idx < 0) {
		siw_dev_timed_del(qp->dev, &qp->read_timed);
		return;
	}
	waited = siw_now_ms() - qp->orq[qp->orq_head].start_ms;
	siw_dev_timed_add(qp->dev, &qp->read_timed,
			  waited >= limit ? 0 : limit - (uint32_t)waited);
}

/* Option read_timeout_ms: the Read at the head of the ORQ had its whole
 * response in that time, or the stream is given up. iWARP itself has no
 * such timer (a Read lives as long as its TCP stream), so a peer whose
 * TCP is alive but who never answers would otherwise hold the Read, and
 * everything posted after it, for ever; this is the counterpart of the
 * IB transport timer. */
void siw_qp_read_timeout(struct siw_qp *qp)
{
	uint32_t limit = qp->dev->opts.read_timeout_ms;
	struct siw_orqe *o;

	pthread_mutex_lock(&qp->lock);
	if (qp->destroyed || qp->fd < 0 || qp->llp != SIW_LLP_RDMA ||
	    !qp->orq_count) {
		pthread_mutex_unlock(&qp->lock);
		return;
	}
	o = &qp->orq[qp->orq_head];
	if (o->sq_idx < 0 || siw_now_ms() - o->start_ms < limit) {
		siw_qp_read_timer_arm(qp);
		siw_qp_unlock(qp);
		return;
	}
	siw_qp_info(qp, "RDMA Read of %u bytes: %u of them in %u ms "
		    "(read_timeout_ms); closing the stream", o->size, o->got,
		    limit);
	siw_sq_complete(qp, (uint32_t)o->sq_idx, RNICPI_WC_RESP_TIMEOUT_ERR,
			0);
	siw_qp_llp_closed(qp, -ETIMEDOUT);
	siw_qp_unlock(qp);
}

void siw_qp_timeout(struct siw_qp *qp)
{
	pthread_mutex_lock(&qp->lock);
	if (qp->destroyed || qp->fd < 0) {
		pthread_mutex_unlock(&qp->lock);
		return;
	}
	switch (qp->llp) {
	case SIW_LLP_AWAIT_REPLY:
	case SIW_LLP_AWAIT_RTR:
		siw_qp_info(qp, "MPA %s timed out after %u ms",
			    qp->llp == SIW_LLP_AWAIT_REPLY ? "Reply" : "RTR",
			    qp->dev->opts.mpa_timeout_ms);
		siw_qp_llp_closed(qp, -ETIMEDOUT);
		break;
	case SIW_LLP_RDMA:
		/* A socket the engine could not take (siw_qp_poll_update) */
		if (!qp->watched)
			siw_qp_poll_update(qp, false);
		if (qp->tx_hold) {
			qp->tx_hold = false;
			siw_qp_tx(qp);
		}
		siw_qp_park_timer(qp);
		break;
	case SIW_LLP_DRAIN:
		siw_qp_dbg(qp, "peer did not close in %u ms: reset",
			   SIW_LINGER_MS);
		siw_qp_llp_closed(qp, -ETIMEDOUT);
		break;
	default:
		break;
	}
	siw_qp_unlock(qp);
}
