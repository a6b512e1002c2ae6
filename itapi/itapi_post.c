/* SPDX-License-Identifier: MIT */
/*
 * itapi_post.c - posting work requests (it_post_*) and turning their
 * completions back into IT-API DTO events.
 *
 * Every posted WR takes a slot in its endpoint's send or receive queue
 * (struct itapi_wq); the provider's wr_id is the slot's sequence number.
 * The slot keeps what the completion event needs and the provider cannot
 * carry: the consumer's cookie, the event type, the DTO flags (whether
 * the completion notifies), the RMR of a link. Completions of one queue
 * come back in posting order (IBA 10.8.5; RFC 5040 §5.3), so a completion
 * retires its slot and every unsignalled one posted before it.
 *
 * DTO flags map as follows:
 *   IT_COMPLETION_FLAG      RNICPI_SEND_SIGNALED (receives always complete)
 *   IT_NOTIFY_FLAG          the completion may wake waiters (itapi_evq.c)
 *   IT_SOLICITED_WAIT_FLAG  RNICPI_SEND_SOLICITED on sends: the peer's
 *                           receive completion notifies
 *   IT_BARRIER_FENCE_FLAG   RNICPI_SEND_FENCE: wait for earlier RDMA Reads
 *   IT_UNLINK_FENCE_FLAG    RNICPI_SEND_LOCAL_FENCE: wait for every
 *                           earlier WR (RMR unlink)
 *   IT_COALESCE_WR_FLAG     RNICPI_SEND_MORE: the provider may hold the
 *                           WR until the next one posted without the flag
 *                           and start them together
 *   IT_UNLINK_LOCAL_SINK    it_post_rdma_read_to_rmr and
 *                           it_post_rdma_read (into one LMR from
 *                           it_lmr_create_unlinked, with
 *                           RNICPI_DEV_CAP_FAST_REG), with
 *                           RNICPI_DEV_CAP_READ_SINK_MW:
 *                           RNICPI_SEND_SINK_INV (the sink RMR or LMR is
 *                           unlinked when the Read succeeds)
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <string.h>

#include "itapi/itapi_priv.h"
#include "it_ext.h"

/* Segments on the stack per WR; more is refused by the EP's limits. */
#define ITAPI_MAX_SGE 64

/* ------------------------------------------------------------------ */
/* Work queues                                                         */
/* ------------------------------------------------------------------ */

int itapi_wq_init(struct itapi_wq *wq, uint32_t size)
{
	g_mutex_init(&wq->lock);
	wq->size = MAX(size, 1u);
	wq->slots = g_new0(struct itapi_wr_slot, wq->size);
	wq->head = wq->tail = 1;	/* wr_id 0 is never used */
	return 0;
}

bool itapi_wq_resize_locked(struct itapi_wq *wq, uint32_t size)
{
	struct itapi_wr_slot *slots;

	size = MAX(size, 1u);
	if (wq->head - wq->tail > size)
		return false;
	slots = g_new0(struct itapi_wr_slot, size);
	for (uint64_t seq = wq->tail; seq < wq->head; seq++)
		slots[seq % size] = wq->slots[seq % wq->size];
	g_free(wq->slots);
	wq->slots = slots;
	wq->size = size;
	return true;
}

void itapi_wq_fini(struct itapi_wq *wq)
{
	g_free(wq->slots);
	wq->slots = NULL;
	g_mutex_clear(&wq->lock);
}

/* The completion of @seq: its slot in *@out, retiring it and the
 * unsignalled ones before it. False for a sequence not outstanding. */
static bool wq_complete(struct itapi_wq *wq, uint64_t seq,
			struct itapi_wr_slot *out)
{
	bool ok;

	g_mutex_lock(&wq->lock);
	ok = seq >= wq->tail && seq < wq->head &&
	     wq->slots[seq % wq->size].seq == seq;
	if (ok) {
		*out = wq->slots[seq % wq->size];
		wq->tail = seq + 1;
	}
	g_mutex_unlock(&wq->lock);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Argument checks                                                     */
/* ------------------------------------------------------------------ */

#define DTO_FLAGS_ALL                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_SOLICITED_WAIT_FLAG |      \
	 IT_BARRIER_FENCE_FLAG | IT_UNLINK_FENCE_FLAG | IT_UNLINK_LOCAL_SINK | \
	 IT_COALESCE_WR_FLAG)

static it_status_t check_flags(struct itapi_ep *ep, it_dto_flags_t flags,
			       unsigned int allowed, const char *op)
{
	unsigned int f = (unsigned int)flags;

	if (f & ~(unsigned int)DTO_FLAGS_ALL)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: unknown flag bits 0x%x", op,
			       f & ~(unsigned int)DTO_FLAGS_ALL);
	if ((f & IT_UNLINK_LOCAL_SINK) && !(allowed & IT_UNLINK_LOCAL_SINK))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: IT_UNLINK_LOCAL_SINK applies to RDMA Reads only",
			       op);
	if (f & ~allowed)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: flags 0x%x do not apply", op, f & ~allowed);
	return IT_SUCCESS;
}

static unsigned int send_flags(it_dto_flags_t flags)
{
	unsigned int f = 0;

	if (flags & IT_COMPLETION_FLAG)
		f |= RNICPI_SEND_SIGNALED;
	if (flags & IT_SOLICITED_WAIT_FLAG)
		f |= RNICPI_SEND_SOLICITED;
	if (flags & IT_BARRIER_FENCE_FLAG)
		f |= RNICPI_SEND_FENCE;
	if (flags & IT_UNLINK_FENCE_FLAG)
		f |= RNICPI_SEND_LOCAL_FENCE;
	if (flags & IT_COALESCE_WR_FLAG)
		f |= RNICPI_SEND_MORE;
	return f;
}

/*
 * Local segments to SGEs. The LMR of each must be a live handle; whether
 * the range lies inside it and the LMR is in the EP's PZ is the
 * provider's check, reported as IT_DTO_ERR_LOCAL_PROTECTION in the
 * completion as the standard says.
 */
static it_status_t build_sges(struct itapi_ep *ep,
			      const it_lmr_triplet_t *segs, size_t n,
			      size_t max, struct rnicpi_sge *sge,
			      uint64_t *total, const char *op)
{
	*total = 0;
	if (n > max || n > ITAPI_MAX_SGE)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_NUM_SEGMENTS,
			       "%s: %zu segments, the EP takes %zu", op, n,
			       MIN(max, (size_t)ITAPI_MAX_SGE));
	if (n && !segs)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "%s: local_segments is NULL",
			       op);
	for (size_t i = 0; i < n; i++) {
		struct itapi_lmr *lmr = ITAPI_LOOKUP(segs[i].lmr,
						     struct itapi_lmr,
						     IT_HANDLE_TYPE_LMR);

		if (!lmr || lmr->obj.ia != ep->obj.ia)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LMR,
				       "%s: segment %zu: LMR %p is not a live LMR of this IA",
				       op, i, (void *)segs[i].lmr);
		if ((uint64_t)segs[i].length > UINT32_MAX)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LENGTH,
				       "%s: segment %zu: length %llu over 4 GiB",
				       op, i,
				       (unsigned long long)segs[i].length);
		sge[i].addr = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
				      (uint64_t)segs[i].addr.rel :
				      (uint64_t)(uintptr_t)segs[i].addr.abs;
		sge[i].length = (uint32_t)segs[i].length;
		sge[i].lkey = ual_mr_lkey(lmr->mr);
		*total += segs[i].length;
	}
	return IT_SUCCESS;
}

/* An EP handle for a send-side operation: live, of @service, connected. */
static struct itapi_ep *ep_for_send(it_ep_handle_t h, it_status_t *st,
				    const char *op, bool ud)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(h, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	bool ok;

	if (!ep) {
		*st = IT_FAIL0(IT_ERR_INVALID_EP, "%s: EP handle %p is not live",
			       op, (void *)h);
		return NULL;
	}
	if ((ep->service == IT_UD_SERVICE) != ud) {
		*st = IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			      "%s on a%s endpoint", op,
			      ud ? "n RC" : " UD");
		return NULL;
	}
	g_mutex_lock(&ep->lock);
	ok = ud ? ep->state.ud == IT_EP_STATE_UD_OPERATIONAL :
		  ep->state.rc == IT_EP_STATE_CONNECTED;
	g_mutex_unlock(&ep->lock);
	if (!ok) {
		*st = IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			      "%s: the endpoint is not %s", op,
			      ud ? "operational" : "connected");
		return NULL;
	}
	*st = itapi_ia_check(ep->obj.ia);
	return *st ? NULL : ep;
}

/* Post one send-queue WR with the slot described by @tmpl. */
static it_status_t post_send_wr(struct itapi_ep *ep, struct rnicpi_send_wr *wr,
				const struct itapi_wr_slot *tmpl,
				const char *op)
{
	struct itapi_wq *wq = &ep->sq;
	const struct rnicpi_send_wr *bad = NULL;
	struct itapi_wr_slot *slot;
	int err;

	g_mutex_lock(&wq->lock);
	if (wq->head - wq->tail >= wq->size) {
		g_mutex_unlock(&wq->lock);
		return IT_FAIL(&ep->obj, IT_ERR_TOO_MANY_POSTS,
			       "%s: %u requests outstanding (unsignalled ones retire with the next signalled completion)",
			       op, wq->size);
	}
	slot = &wq->slots[wq->head % wq->size];
	*slot = *tmpl;
	slot->seq = wq->head;
	wr->wr_id = wq->head;
	wr->next = NULL;
	err = ual_qp_post_send(ep->qp, wr, &bad);
	if (!err)
		wq->head++;
	g_mutex_unlock(&wq->lock);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_POST,
				     "%s: post_send: %s", op,
				     g_strerror(-err));
	return IT_SUCCESS;
}

it_status_t itapi_post_sq(struct itapi_ep *ep, struct rnicpi_send_wr *wr,
			  const struct itapi_wr_slot *tmpl, const char *op)
{
	return post_send_wr(ep, wr, tmpl, op);
}

static it_status_t check_rkey(struct itapi_obj *ep, it_rmr_context_t ctx,
			      const char *op)
{
	/* STags and R_Keys are 32 bits (RFC 5040 §4.2, IBA 9.4.3). */
	if (ctx > UINT32_MAX)
		return IT_FAIL(ep, IT_ERR_RANGE,
			       "%s: rmr_context 0x%llx is wider than a 32-bit key",
			       op, (unsigned long long)ctx);
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Send side                                                           */
/* ------------------------------------------------------------------ */

/* IT_UNLINK_FENCE_FLAG applies to every request of the send queue. */
#define SEND_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_SOLICITED_WAIT_FLAG |      \
	 IT_BARRIER_FENCE_FLAG | IT_UNLINK_FENCE_FLAG | IT_COALESCE_WR_FLAG)
#define RDMA_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG |       \
	 IT_UNLINK_FENCE_FLAG | IT_COALESCE_WR_FLAG)
#define RECV_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_SOLICITED_WAIT_FLAG |      \
	 IT_COALESCE_WR_FLAG)

/* Immediate data (it_ext.h) needs a device that carries it. */
static it_status_t check_imm(struct itapi_ep *ep, const char *op)
{
	if (!(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_IMM_DATA))
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "%s: the device carries no immediate data (an iWARP device; hostrdma_ia_imm_data_size is 0)",
			       op);
	return IT_SUCCESS;
}

it_status_t itapi_send_opcode(struct itapi_ep *ep, const uint32_t *imm,
			      struct rnicpi_send_wr *wr, const char *op)
{
	if (imm) {
		it_status_t st = check_imm(ep, op);

		if (st)
			return st;
		wr->opcode = RNICPI_WR_SEND_WITH_IMM;
		wr->ex.imm_data = *imm;
	} else {
		wr->opcode = RNICPI_WR_SEND;
	}
	return IT_SUCCESS;
}

/* A Send; with @imm, a Send with immediate data *@imm. */
static it_status_t do_send(it_ep_handle_t ep_handle,
			   const it_lmr_triplet_t *local_segments,
			   size_t num_segments, it_dto_cookie_t cookie,
			   it_dto_flags_t dto_flags, bool invalidate,
			   it_rmr_context_t rmr_context, const uint32_t *imm,
			   const char *op)
{
	struct rnicpi_sge sge[ITAPI_MAX_SGE];
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	struct itapi_ep *ep;
	uint64_t total;
	it_status_t st;

	ep = ep_for_send(ep_handle, &st, op, false);
	if (!ep)
		return st;
	st = check_flags(ep, dto_flags, SEND_OK_FLAGS, op);
	if (st)
		return st;
	st = build_sges(ep, local_segments, num_segments,
			ep->attr.max_send_segments, sge, &total, op);
	if (st)
		return st;
	if (total > ep->attr.max_dto_payload_size)
		return IT_FAIL(&ep->obj, IT_ERR_PAYLOAD_SIZE,
			       "%s: %llu bytes, the EP's payload limit is %zu",
			       op, (unsigned long long)total,
			       ep->attr.max_dto_payload_size);
	if (invalidate) {
		if (!(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_SEND_INV))
			return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
				       "%s: the provider has no Send with Invalidate",
				       op);
		st = check_rkey(&ep->obj, rmr_context, op);
		if (st)
			return st;
		wr.opcode = RNICPI_WR_SEND_WITH_INV;
		wr.ex.invalidate_rkey = (uint32_t)rmr_context;
	} else {
		st = itapi_send_opcode(ep, imm, &wr, op);
		if (st)
			return st;
	}
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)num_segments;
	wr.send_flags = send_flags(dto_flags);
	tmpl.cookie = cookie;
	tmpl.event = IT_DTO_SEND_CMPL_EVENT;
	tmpl.flags = dto_flags;
	return post_send_wr(ep, &wr, &tmpl, op);
}

it_status_t it_post_send(it_ep_handle_t ep_handle,
			 const it_lmr_triplet_t *local_segments,
			 size_t num_segments, it_dto_cookie_t cookie,
			 it_dto_flags_t dto_flags)
{
	return do_send(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, false, 0, NULL, "it_post_send");
}

it_status_t it_post_send_and_unlink(it_ep_handle_t ep_handle,
				    const it_lmr_triplet_t *local_segments,
				    size_t num_segments,
				    it_dto_cookie_t cookie,
				    it_dto_flags_t dto_flags,
				    it_rmr_context_t rmr_context)
{
	return do_send(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, true, rmr_context, NULL,
		       "it_post_send_and_unlink");
}

/*
 * IT_UNLINK_LOCAL_SINK on it_post_rdma_read: every segment is of one LMR
 * from it_lmr_create_unlinked, linked now (the event names one
 * unlinked_mr_handle), and the provider invalidates a sink key after the
 * Read (RNICPI_SEND_SINK_INV, RNICPI_DEV_CAP_READ_SINK_MW).
 */
static it_status_t unlink_sink_lmr(struct itapi_ep *ep,
				   const it_lmr_triplet_t *segs, size_t n,
				   struct itapi_lmr **out, const char *op)
{
	struct itapi_lmr *sink = NULL;
	bool linked;

	if (!(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_READ_SINK_MW) ||
	    !(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_FAST_REG))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: IT_UNLINK_LOCAL_SINK: the provider cannot unlink a Read's sink LMR (lmr_link_support or rdma_read_local_extensions is false)",
			       op);
	if (n == 0 || !segs)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: IT_UNLINK_LOCAL_SINK without a sink segment",
			       op);
	for (size_t i = 0; i < n; i++) {
		struct itapi_lmr *lmr = ITAPI_LOOKUP(segs[i].lmr,
						     struct itapi_lmr,
						     IT_HANDLE_TYPE_LMR);

		if (!lmr || lmr->obj.ia != ep->obj.ia)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LMR,
				       "%s: segment %zu: LMR %p is not a live LMR of this IA",
				       op, i, (void *)segs[i].lmr);
		if (sink && lmr != sink)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
				       "%s: IT_UNLINK_LOCAL_SINK with segments of more than one LMR",
				       op);
		sink = lmr;
	}
	if (!sink->fast_reg)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: IT_UNLINK_LOCAL_SINK: LMR %p was not made by it_lmr_create_unlinked, so it cannot be linked again",
			       op, (void *)sink);
	g_mutex_lock(&sink->lock);
	linked = sink->linked;
	g_mutex_unlock(&sink->lock);
	if (!linked)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_LMR,
			       "%s: IT_UNLINK_LOCAL_SINK: LMR %p is not linked",
			       op, (void *)sink);
	*out = sink;
	return IT_SUCCESS;
}

/* An RDMA Read or Write; with @imm, a Write with immediate data *@imm. */
static it_status_t do_rdma(it_ep_handle_t ep_handle,
			   const it_lmr_triplet_t *local_segments,
			   size_t num_segments, it_dto_cookie_t cookie,
			   it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
			   it_rmr_context_t rmr_context, bool read,
			   const uint32_t *imm)
{
	const char *op = read ? "it_post_rdma_read" :
			 imm  ? "hostrdma_post_rdma_write_imm" :
				"it_post_rdma_write";
	struct rnicpi_sge sge[ITAPI_MAX_SGE];
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	struct itapi_lmr *sink = NULL;
	struct itapi_ep *ep;
	uint64_t total;
	it_status_t st;

	ep = ep_for_send(ep_handle, &st, op, false);
	if (!ep)
		return st;
	st = check_flags(ep, dto_flags,
			 RDMA_OK_FLAGS | (read ? IT_UNLINK_LOCAL_SINK : 0), op);
	if (st)
		return st;
	if (dto_flags & IT_UNLINK_LOCAL_SINK) {
		st = unlink_sink_lmr(ep, local_segments, num_segments, &sink,
				     op);
		if (st)
			return st;
	}
	st = build_sges(ep, local_segments, num_segments,
			read ? ep->attr.srv.rc.max_rdma_read_segments :
			       ep->attr.srv.rc.max_rdma_write_segments,
			sge, &total, op);
	if (st)
		return st;
	if (total > ep->obj.ia->attr.max_msg_size)
		return IT_FAIL(&ep->obj, IT_ERR_PAYLOAD_SIZE,
			       "%s: %llu bytes, the largest message is %llu",
			       op, (unsigned long long)total,
			       (unsigned long long)ep->obj.ia->attr.max_msg_size);
	st = check_rkey(&ep->obj, rmr_context, op);
	if (st)
		return st;
	if (imm) {
		st = check_imm(ep, op);
		if (st)
			return st;
		wr.ex.imm_data = *imm;
	}
	wr.opcode = read  ? RNICPI_WR_RDMA_READ :
		    imm	  ? RNICPI_WR_RDMA_WRITE_WITH_IMM :
			    RNICPI_WR_RDMA_WRITE;
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)num_segments;
	wr.send_flags = send_flags(dto_flags);
	wr.wr.rdma.remote_addr = rdma_addr;
	wr.wr.rdma.rkey = (uint32_t)rmr_context;
	tmpl.cookie = cookie;
	tmpl.event = read ? IT_DTO_RDMA_READ_CMPL_EVENT :
			    IT_DTO_RDMA_WRITE_CMPL_EVENT;
	tmpl.flags = dto_flags;
	if (sink) {
		/* As it_lmr_unlink: unlinked now, linked again if the Read
		 * fails (itapi_lmr_link_done). */
		wr.send_flags |= RNICPI_SEND_SINK_INV;
		g_mutex_lock(&sink->lock);
		if (!sink->linked) {
			g_mutex_unlock(&sink->lock);
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LMR,
				       "%s: LMR %p was unlinked meanwhile", op,
				       (void *)sink);
		}
		sink->linked = false;
		g_mutex_unlock(&sink->lock);
		tmpl.lmr = sink;
		tmpl.unlink = true;
		tmpl.lmr_link = true;
	}
	st = post_send_wr(ep, &wr, &tmpl, op);
	if (st && sink) {
		g_mutex_lock(&sink->lock);
		sink->linked = true;
		g_mutex_unlock(&sink->lock);
	}
	return st;
}

it_status_t it_post_rdma_read(it_ep_handle_t ep_handle,
			      const it_lmr_triplet_t *local_segments,
			      size_t num_segments, it_dto_cookie_t cookie,
			      it_dto_flags_t dto_flags, it_rdma_addr_t rdma_addr,
			      it_rmr_context_t rmr_context)
{
	return do_rdma(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, rdma_addr, rmr_context, true, NULL);
}

it_status_t it_post_rdma_write(it_ep_handle_t ep_handle,
			       const it_lmr_triplet_t *local_segments,
			       size_t num_segments, it_dto_cookie_t cookie,
			       it_dto_flags_t dto_flags,
			       it_rdma_addr_t rdma_addr,
			       it_rmr_context_t rmr_context)
{
	return do_rdma(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, rdma_addr, rmr_context, false, NULL);
}

/* ---- it_ext.h: immediate data ----------------------------------------- */

size_t hostrdma_ia_imm_data_size(it_ia_handle_t ia_handle)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);

	if (!ia)
		return 0;
	return ia->attr.caps & RNICPI_DEV_CAP_IMM_DATA ? sizeof(uint32_t) : 0;
}

it_status_t hostrdma_post_send_imm(it_ep_handle_t ep_handle,
				   const it_lmr_triplet_t *local_segments,
				   size_t num_segments, it_dto_cookie_t cookie,
				   it_dto_flags_t dto_flags, uint32_t imm_data)
{
	return do_send(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, false, 0, &imm_data,
		       "hostrdma_post_send_imm");
}

it_status_t hostrdma_post_rdma_write_imm(it_ep_handle_t ep_handle,
					 const it_lmr_triplet_t *local_segments,
					 size_t num_segments,
					 it_dto_cookie_t cookie,
					 it_dto_flags_t dto_flags,
					 it_rdma_addr_t rdma_addr,
					 it_rmr_context_t rmr_context,
					 uint32_t imm_data)
{
	return do_rdma(ep_handle, local_segments, num_segments, cookie,
		       dto_flags, rdma_addr, rmr_context, false, &imm_data);
}

hostrdma_imm_kind_t hostrdma_event_imm_data(const it_event_t *event,
					    uint32_t *imm_data)
{
	struct itapi_dto_ext_event x;

	if (!event ||
	    (event->event_number != IT_DTO_RC_RECV_CMPL_EVENT &&
	     event->event_number != IT_DTO_UD_RECV_CMPL_EVENT) ||
	    event->dto_cmpl.dto_status != IT_DTO_SUCCESS)
		return HOSTRDMA_IMM_NONE;
	memcpy(&x, event, sizeof(x));
	if (x.imm_kind != HOSTRDMA_IMM_SEND &&
	    x.imm_kind != HOSTRDMA_IMM_RDMA_WRITE)
		return HOSTRDMA_IMM_NONE;
	if (imm_data)
		*imm_data = x.imm_data;
	return (hostrdma_imm_kind_t)x.imm_kind;
}

it_status_t it_post_rdma_read_to_rmr(it_ep_handle_t ep_handle,
				     const it_rmr_triplet_t *local_segments,
				     size_t num_segments,
				     it_dto_cookie_t cookie,
				     it_dto_flags_t dto_flags,
				     it_rdma_addr_t rdma_addr,
				     it_rmr_context_t rmr_context)
{
	const char *op = "it_post_rdma_read_to_rmr";
	struct rnicpi_sge sge[ITAPI_MAX_SGE];
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	struct itapi_rmr *sink = NULL;
	struct itapi_ep *ep;
	uint64_t total = 0;
	size_t max;
	it_status_t st;

	ep = ep_for_send(ep_handle, &st, op, false);
	if (!ep)
		return st;
	/* The sink named by windows: RNICPI_SEND_SINK_MW. */
	if (!(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_READ_SINK_MW))
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "%s: the provider cannot take a memory window as the sink of a Read (rdma_read_local_extensions is false)",
			       op);
	st = check_flags(ep, dto_flags, RDMA_OK_FLAGS | IT_UNLINK_LOCAL_SINK,
			 op);
	if (st)
		return st;
	max = MIN((size_t)ep->attr.srv.rc.max_rdma_read_segments,
		  (size_t)ITAPI_MAX_SGE);
	if (num_segments > max)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_NUM_SEGMENTS,
			       "%s: %zu segments, the EP takes %zu", op,
			       num_segments, max);
	if (num_segments && !local_segments)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT,
			       "%s: local_segments is NULL", op);
	for (size_t i = 0; i < num_segments; i++) {
		struct itapi_rmr *rmr = ITAPI_LOOKUP(local_segments[i].rmr,
						     struct itapi_rmr,
						     IT_HANDLE_TYPE_RMR);
		bool linked;

		if (!rmr || rmr->obj.ia != ep->obj.ia)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_RMR,
				       "%s: segment %zu: RMR %p is not a live RMR of this IA",
				       op, i, (void *)local_segments[i].rmr);
		if ((uint64_t)local_segments[i].length > UINT32_MAX)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LENGTH,
				       "%s: segment %zu: length %llu over 4 GiB",
				       op, i,
				       (unsigned long long)local_segments[i].length);
		g_mutex_lock(&rmr->lock);
		linked = rmr->linked;
		sge[i].addr = rmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
			(uint64_t)local_segments[i].addr.rel :
			(uint64_t)(uintptr_t)local_segments[i].addr.abs;
		sge[i].lkey = rmr->rkey;
		g_mutex_unlock(&rmr->lock);
		/* An unlinked RMR (or bytes outside it) fails in the
		 * completion, IT_DTO_ERR_LOCAL_PROTECTION, as for LMRs;
		 * one that is not linked now is refused at once. */
		if (!linked)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_RMR,
				       "%s: segment %zu: RMR %p is not linked",
				       op, i, (void *)rmr);
		/* IT_UNLINK_LOCAL_SINK unlinks one RMR: the event has room
		 * for one unlinked_mr_handle. */
		if ((dto_flags & IT_UNLINK_LOCAL_SINK) && sink && sink != rmr)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
				       "%s: IT_UNLINK_LOCAL_SINK with segments of more than one RMR",
				       op);
		sink = rmr;
		sge[i].length = (uint32_t)local_segments[i].length;
		total += local_segments[i].length;
	}
	if (total > ep->obj.ia->attr.max_msg_size)
		return IT_FAIL(&ep->obj, IT_ERR_PAYLOAD_SIZE,
			       "%s: %llu bytes, the largest message is %llu",
			       op, (unsigned long long)total,
			       (unsigned long long)ep->obj.ia->attr.max_msg_size);
	st = check_rkey(&ep->obj, rmr_context, op);
	if (st)
		return st;
	wr.opcode = RNICPI_WR_RDMA_READ;
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)num_segments;
	wr.send_flags = send_flags(dto_flags) | RNICPI_SEND_SINK_MW;
	wr.wr.rdma.remote_addr = rdma_addr;
	wr.wr.rdma.rkey = (uint32_t)rmr_context;
	tmpl.cookie = cookie;
	tmpl.event = IT_DTO_RDMA_READ_CMPL_EVENT;
	tmpl.flags = dto_flags;
	if ((dto_flags & IT_UNLINK_LOCAL_SINK) && sink) {
		/* As it_rmr_unlink: unlinked now, linked again if the Read
		 * fails (itapi_rmr_link_done). */
		wr.send_flags |= RNICPI_SEND_SINK_INV;
		g_mutex_lock(&sink->lock);
		if (!sink->linked) {
			g_mutex_unlock(&sink->lock);
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_RMR,
				       "%s: RMR %p was unlinked meanwhile", op,
				       (void *)sink);
		}
		sink->linked = false;
		tmpl.lmr = sink->lmr;
		g_mutex_unlock(&sink->lock);
		tmpl.rmr = sink;
		tmpl.unlink = true;
	}
	st = post_send_wr(ep, &wr, &tmpl, op);
	if (st && tmpl.rmr) {
		g_mutex_lock(&sink->lock);
		sink->linked = true;
		g_mutex_unlock(&sink->lock);
	}
	return st;
}

it_status_t it_post_atomic(it_ep_handle_t ep_handle, it_atomic_op_t op,
			   uint64_t swap_or_add, uint64_t compare,
			   const it_lmr_triplet_t *result,
			   it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
			   it_rdma_addr_t rdma_addr,
			   it_rmr_context_t rmr_context)
{
	const char *name = "it_post_atomic";
	struct rnicpi_sge sge[1];
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	const struct rnicpi_device_attr *a;
	struct itapi_ep *ep;
	uint64_t total;
	it_status_t st;

	ep = ep_for_send(ep_handle, &st, name, false);
	if (!ep)
		return st;
	a = &ep->obj.ia->attr;
	if (!(a->caps & RNICPI_DEV_CAP_ATOMIC) ||
	    a->atomic_cap == RNICPI_ATOMIC_NONE)
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "the provider has no atomics");
	if (op != IT_COMPARE_AND_SWAP && op != IT_FETCH_AND_ADD)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_ATOMIC_OP,
			       "operation %d", (int)op);
	if (!ep->attr.srv.rc.atomics_enable)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "atomics are not enabled on the endpoint");
	st = check_flags(ep, dto_flags,
			 IT_COMPLETION_FLAG | IT_NOTIFY_FLAG |
				 IT_BARRIER_FENCE_FLAG | IT_UNLINK_FENCE_FLAG,
			 name);
	if (st)
		return st;
	if (!result)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "result is NULL");
	st = build_sges(ep, result, 1, 1, sge, &total, name);
	if (st)
		return st;
	/* An atomic works on one aligned 64-bit word (IBA 9.4.5). */
	if (total != 8)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_LENGTH,
			       "result segment of %llu bytes, must be 8",
			       (unsigned long long)total);
	if (rdma_addr % 8)
		return IT_FAIL(&ep->obj, IT_ERR_RANGE,
			       "remote address 0x%llx is not 8-byte aligned",
			       (unsigned long long)rdma_addr);
	st = check_rkey(&ep->obj, rmr_context, name);
	if (st)
		return st;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.send_flags = send_flags(dto_flags);
	wr.wr.atomic.remote_addr = rdma_addr;
	wr.wr.atomic.rkey = (uint32_t)rmr_context;
	if (op == IT_COMPARE_AND_SWAP) {
		wr.opcode = RNICPI_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = compare;
		wr.wr.atomic.swap = swap_or_add;
		tmpl.event = IT_DTO_CMP_SWAP_CMPL_EVENT;
	} else {
		wr.opcode = RNICPI_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.compare_add = swap_or_add;
		tmpl.event = IT_DTO_FETCH_ADD_CMPL_EVENT;
	}
	tmpl.cookie = cookie;
	tmpl.flags = dto_flags;
	return post_send_wr(ep, &wr, &tmpl, name);
}

/* ------------------------------------------------------------------ */
/* Receive side                                                        */
/* ------------------------------------------------------------------ */

static it_status_t post_srq_recv(struct itapi_srq *srq,
				 const it_lmr_triplet_t *segs, size_t n,
				 it_dto_cookie_t cookie, it_dto_flags_t flags)
{
	struct rnicpi_sge sge[ITAPI_MAX_SGE];
	struct rnicpi_recv_wr wr = { 0 };
	const struct rnicpi_recv_wr *bad = NULL;
	struct itapi_srq_slot *slot;
	uint32_t idx;
	int err;

	if ((unsigned int)flags & ~(unsigned int)RECV_OK_FLAGS)
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "flags 0x%x do not apply to a receive",
			       (unsigned int)flags);
	if (n > srq->max_recv_segs || n > ITAPI_MAX_SGE)
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_NUM_SEGMENTS,
			       "%zu segments, the SRQ takes %zu", n,
			       srq->max_recv_segs);
	if (n && !segs)
		return IT_FAIL(&srq->obj, IT_ERR_FAULT,
			       "local_segments is NULL");
	for (size_t i = 0; i < n; i++) {
		struct itapi_lmr *lmr = ITAPI_LOOKUP(segs[i].lmr,
						     struct itapi_lmr,
						     IT_HANDLE_TYPE_LMR);

		if (!lmr || lmr->obj.ia != srq->obj.ia)
			return IT_FAIL(&srq->obj, IT_ERR_INVALID_LMR,
				       "segment %zu: LMR %p is not live", i,
				       (void *)segs[i].lmr);
		if ((uint64_t)segs[i].length > UINT32_MAX)
			return IT_FAIL(&srq->obj, IT_ERR_INVALID_LENGTH,
				       "segment %zu: length over 4 GiB", i);
		sge[i].addr = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
				      (uint64_t)segs[i].addr.rel :
				      (uint64_t)(uintptr_t)segs[i].addr.abs;
		sge[i].length = (uint32_t)segs[i].length;
		sge[i].lkey = ual_mr_lkey(lmr->mr);
	}
	g_mutex_lock(&srq->lock);
	if (!srq->free_head || srq->n_posted >= srq->max_recv_dtos) {
		g_mutex_unlock(&srq->lock);
		return IT_FAIL(&srq->obj, IT_ERR_TOO_MANY_POSTS,
			       "%u receives posted", srq->n_posted);
	}
	idx = srq->free_head - 1;
	slot = &srq->slots[idx];
	srq->free_head = slot->next_free;
	slot->gen++;
	slot->in_use = true;
	slot->cookie = cookie;
	slot->flags = flags;
	wr.wr_id = ((uint64_t)slot->gen << 32) | idx;
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)n;
	err = ual_srq_post_recv(srq->srq, &wr, &bad);
	if (err) {
		slot->in_use = false;
		slot->next_free = srq->free_head;
		srq->free_head = idx + 1;
	} else {
		srq->n_posted++;
	}
	g_mutex_unlock(&srq->lock);
	if (err)
		return IT_FAIL_ERRNO(&srq->obj, err, ITAPI_CTX_POST,
				     "post_srq_recv: %s", g_strerror(-err));
	return IT_SUCCESS;
}

it_status_t itapi_post_recv_ep(struct itapi_ep *ep,
			       const it_lmr_triplet_t *segs, size_t n,
			       it_dto_cookie_t cookie, it_dto_flags_t flags,
			       const char *op)
{
	struct rnicpi_sge sge[ITAPI_MAX_SGE];
	struct rnicpi_recv_wr wr = { 0 };
	const struct rnicpi_recv_wr *bad = NULL;
	struct itapi_wq *wq = &ep->rq;
	struct itapi_wr_slot *slot;
	uint64_t total;
	it_status_t st;
	int err;

	st = itapi_ia_check(ep->obj.ia);
	if (st)
		return IT_FAIL(&ep->obj, st, "the device failed");
	if (ep->srq)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP,
			       "%s: the endpoint receives through an SRQ; post there",
			       op);
	st = check_flags(ep, flags, RECV_OK_FLAGS, op);
	if (st)
		return st;
	st = build_sges(ep, segs, n, ep->attr.max_recv_segments, sge, &total,
			op);
	if (st)
		return st;
	g_mutex_lock(&wq->lock);
	if (wq->head - wq->tail >= wq->size) {
		g_mutex_unlock(&wq->lock);
		return IT_FAIL(&ep->obj, IT_ERR_TOO_MANY_POSTS,
			       "%s: %u receives posted", op, wq->size);
	}
	slot = &wq->slots[wq->head % wq->size];
	memset(slot, 0, sizeof(*slot));
	slot->seq = wq->head;
	slot->cookie = cookie;
	slot->flags = flags;
	slot->event = ep->service == IT_UD_SERVICE ?
			      IT_DTO_UD_RECV_CMPL_EVENT :
			      IT_DTO_RC_RECV_CMPL_EVENT;
	wr.wr_id = wq->head;
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)n;
	err = ual_qp_post_recv(ep->qp, &wr, &bad);
	if (!err)
		wq->head++;
	g_mutex_unlock(&wq->lock);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_POST,
				     "%s: post_recv: %s", op,
				     g_strerror(-err));
	return IT_SUCCESS;
}

it_status_t it_post_recv(it_handle_t handle,
			 const it_lmr_triplet_t *local_segments,
			 size_t num_segments, it_dto_cookie_t cookie,
			 it_dto_flags_t dto_flags)
{
	struct itapi_obj *obj = itapi_handle_any(handle);

	if (obj && obj->type == IT_HANDLE_TYPE_SRQ)
		return post_srq_recv((struct itapi_srq *)obj, local_segments,
				     num_segments, cookie, dto_flags);
	if (!obj || obj->type != IT_HANDLE_TYPE_EP)
		return IT_FAIL0(IT_ERR_INVALID_HANDLE,
				"handle %p is neither a live EP nor an SRQ",
				handle);
	if (((struct itapi_ep *)obj)->service != IT_RC_SERVICE)
		return IT_FAIL(obj, IT_ERR_INVALID_EP_TYPE,
			       "it_post_recv on a UD endpoint: use it_post_recvfrom");
	return itapi_post_recv_ep((struct itapi_ep *)obj, local_segments,
				  num_segments, cookie, dto_flags,
				  "it_post_recv");
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */
/* ------------------------------------------------------------------ */

static bool srq_complete(struct itapi_srq *srq, uint64_t wr_id,
			 struct itapi_wr_slot *out)
{
	uint32_t idx = (uint32_t)wr_id, gen = (uint32_t)(wr_id >> 32);
	struct itapi_srq_slot *s;
	bool ok;

	g_mutex_lock(&srq->lock);
	ok = idx < srq->n_slots && srq->slots[idx].in_use &&
	     srq->slots[idx].gen == gen;
	if (ok) {
		s = &srq->slots[idx];
		memset(out, 0, sizeof(*out));
		out->cookie = s->cookie;
		out->flags = s->flags;
		out->event = IT_DTO_RC_RECV_CMPL_EVENT;
		s->in_use = false;
		s->next_free = srq->free_head;
		srq->free_head = idx + 1;
		srq->n_posted--;
	}
	g_mutex_unlock(&srq->lock);
	return ok;
}

bool itapi_wc_to_event(struct itapi_ia *ia, struct itapi_evd *evd,
		       const struct rnicpi_wc *wc, it_event_t *ev,
		       bool *notify, it_ep_handle_t *lost, unsigned int *wm)
{
	bool recv = (wc->opcode & RNICPI_WC_RECV) != 0;
	struct itapi_wr_slot slot;
	struct itapi_ep *ep;
	bool ok;

	/* The read lock keeps the EP from being freed meanwhile. */
	g_rw_lock_reader_lock(&ia->qpn_lock);
	ep = g_hash_table_lookup(ia->qpn_eps, GUINT_TO_POINTER(wc->qp_num));
	if (!ep) {
		g_rw_lock_reader_unlock(&ia->qpn_lock);
		g_debug("%s completion of QP %u, which has no endpoint; dropped",
			evd->obj.prefix, wc->qp_num);
		return false;
	}
	if (recv)
		ok = ep->srq ? srq_complete(ep->srq, wc->wr_id, &slot) :
			       wq_complete(&ep->rq, wc->wr_id, &slot);
	else
		ok = wq_complete(&ep->sq, wc->wr_id, &slot);
	if (!ok) {
		/* The provider broke its promise of posting order (or
		 * completed a WR twice): the consumer cannot be told which
		 * of its requests this was, so it learns that the endpoint
		 * failed instead of waiting for an event that never comes. */
		g_warning("%s %s completion (status %d) with wr_id %llu names no outstanding request; reporting IT_ASYNC_AFF_EP_FAILURE",
			  ep->obj.prefix, recv ? "receive" : "send queue",
			  (int)wc->status,
			  (unsigned long long)wc->wr_id);
		*lost = (it_ep_handle_t)ep;
		g_rw_lock_reader_unlock(&ia->qpn_lock);
		return false;
	}
	if (slot.rmr)
		itapi_rmr_link_done(&slot, wc->status == RNICPI_WC_SUCCESS);
	else if (slot.lmr_link)
		itapi_lmr_link_done(&slot, wc->status == RNICPI_WC_SUCCESS);
	/* Held from the SRQ until the consumer dequeues the event. */
	*wm = recv && ep->srq ? itapi_ep_srq_recv_held(ep) : 0;

	memset(ev, 0, sizeof(*ev));
	ev->dto_cmpl.event_number = slot.event;
	ev->dto_cmpl.evd = (it_evd_handle_t)evd;
	ev->dto_cmpl.ep = (it_ep_handle_t)ep;
	ev->dto_cmpl.cookie = slot.cookie;
	ev->dto_cmpl.dto_status = itapi_dto_status(wc->status);
	ev->dto_cmpl.transferred_length =
		wc->status == RNICPI_WC_SUCCESS ? wc->byte_len : 0;
	ev->dto_cmpl.unlinked_mr_handle =
		slot.unlink && slot.event == IT_DTO_RDMA_READ_CMPL_EVENT &&
				wc->status == RNICPI_WC_SUCCESS ?
			(slot.rmr ? (it_handle_t)slot.rmr :
				    (it_handle_t)slot.lmr) :
			NULL;
	if (slot.event == IT_DTO_UD_RECV_CMPL_EVENT) {
		it_all_dto_cmpl_event_t *u = &ev->all_dto_cmpl;

		u->ud_ep_id = wc->src_qp;
		if (wc->wc_flags & RNICPI_WC_GRH)
			u->flags = IT_UD_IB_GRH_PRESENT;
		u->src_path.spigot_id = ep->spigot_id;
		u->src_path.remote.ib.remote_port_lid = wc->slid;
		u->src_path.remote.ib.sl = wc->sl;
	}
	/* A datagram's immediate data too (a UD Send with immediate from
	 * any peer): behind all_dto_cmpl, clear of the UD fields. */
	if (recv && wc->status == RNICPI_WC_SUCCESS &&
	    (wc->wc_flags & RNICPI_WC_WITH_IMM)) {
		struct itapi_dto_ext_event x;

		memcpy(&x, ev, sizeof(x));
		x.imm_kind = wc->opcode == RNICPI_WC_RECV_RDMA_WITH_IMM ?
				     HOSTRDMA_IMM_RDMA_WRITE :
				     HOSTRDMA_IMM_SEND;
		x.imm_data = wc->imm_data;
		memcpy(ev, &x, sizeof(x));
	}
	*notify = wc->status != RNICPI_WC_SUCCESS ||
		  (slot.flags & IT_NOTIFY_FLAG) ||
		  (recv && (wc->wc_flags & RNICPI_WC_SOLICITED));
	g_rw_lock_reader_unlock(&ia->qpn_lock);
	return true;
}
