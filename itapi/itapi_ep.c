/* SPDX-License-Identifier: MIT */
/*
 * itapi_ep.c - endpoints (RC and the shared parts of UD); shared receive
 * queues are in itapi_srq.c.
 *
 * An endpoint is one QP with an itapi_wq for each of its queues. Its
 * state (it_ep_state_rc_t) moves with the connection events in
 * itapi_cm.c; the transitions are:
 *
 *   UNCONNECTED --it_ep_connect--> ACTIVE1_CONNECTION_PENDING
 *   UNCONNECTED --it_ep_accept---> PASSIVE_CONNECTION_PENDING
 *   *_PENDING --established--> CONNECTED
 *   *_PENDING --reject / unreachable / disconnect--> NONOPERATIONAL
 *   CONNECTED --disconnect / broken--> NONOPERATIONAL
 *   NONOPERATIONAL --it_ep_reset--> UNCONNECTED (a fresh QP)
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "itapi/itapi_priv.h"

/* EP high watermarks asked for (below). */
static bool watermarks_set(size_t soft, size_t hard);

static const char *const rc_state_names[] = {
	[IT_EP_STATE_UNCONNECTED] = "UNCONNECTED",
	[IT_EP_STATE_ACTIVE1_CONNECTION_PENDING] = "ACTIVE1_PENDING",
	[IT_EP_STATE_ACTIVE2_CONNECTION_PENDING] = "ACTIVE2_PENDING",
	[IT_EP_STATE_PASSIVE_CONNECTION_PENDING] = "PASSIVE_PENDING",
	[IT_EP_STATE_CONNECTED] = "CONNECTED",
	[IT_EP_STATE_NONOPERATIONAL] = "NONOPERATIONAL",
	[IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ] = "PASSIVE_WAIT_RDMA",
};

const char *itapi_ep_state_name(it_ep_state_rc_t s)
{
	if ((unsigned int)s < G_N_ELEMENTS(rc_state_names))
		return rc_state_names[s];
	return "?";
}

/* ------------------------------------------------------------------ */
/* Checks shared by RC and UD creation                                  */
/* ------------------------------------------------------------------ */

struct itapi_evd *itapi_dto_evd(struct itapi_ia *ia, it_evd_handle_t h)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(h, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);

	if (!evd || evd->obj.ia != ia || evd->is_aevd ||
	    evd->stream != IT_DTO_EVENT_STREAM)
		return NULL;
	return evd;
}

/* The EP attributes against the device's limits; fills the QP caps. */
static it_status_t check_attr(struct itapi_pz *pz,
			      const it_ep_attributes_t *a, bool rc,
			      bool srq, struct rnicpi_qp_cap *cap)
{
	const struct rnicpi_device_attr *d = &pz->obj.ia->attr;
	uint32_t max_sge_rd = d->max_sge_rd ? d->max_sge_rd : d->max_sge;

	if (a->priv_ops_enable)
		return IT_FAIL(&pz->obj, IT_ERR_PRIV_OPS_UNAVAILABLE,
			       "privileged operations are not available");
	if (a->max_dto_payload_size > d->max_msg_size)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_EP_ATTR,
			       "max_dto_payload_size %zu over the largest message %llu",
			       a->max_dto_payload_size,
			       (unsigned long long)d->max_msg_size);
	if (a->max_request_dtos == 0)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_EP_ATTR,
			       "max_request_dtos is 0");
	if (a->max_request_dtos > d->max_qp_wr)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_REQ_DTO,
			       "max_request_dtos %zu over %u",
			       a->max_request_dtos, d->max_qp_wr);
	if (!srq && a->max_recv_dtos > d->max_qp_wr)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RECV_DTO,
			       "max_recv_dtos %zu over %u", a->max_recv_dtos,
			       d->max_qp_wr);
	if (a->max_send_segments > d->max_sge)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_SSEG,
			       "max_send_segments %zu over %u",
			       a->max_send_segments, d->max_sge);
	if (!srq && a->max_recv_segments > d->max_sge)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RSEG,
			       "max_recv_segments %zu over %u",
			       a->max_recv_segments, d->max_sge);
	if (rc) {
		const it_rc_only_attributes_t *r = &a->srv.rc;

		if (r->max_rdma_read_segments > max_sge_rd)
			return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RRSEG,
				       "max_rdma_read_segments %zu over %u",
				       r->max_rdma_read_segments, max_sge_rd);
		if (r->max_rdma_write_segments > d->max_sge)
			return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RWSEG,
				       "max_rdma_write_segments %zu over %u",
				       r->max_rdma_write_segments, d->max_sge);
		if (r->rdma_read_ird > d->max_qp_rd_atom)
			return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_IRD,
				       "IRD %u over %u", r->rdma_read_ird,
				       d->max_qp_rd_atom);
		if (r->rdma_read_ord > d->max_qp_init_rd_atom)
			return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_ORD,
				       "ORD %u over %u", r->rdma_read_ord,
				       d->max_qp_init_rd_atom);
		if (r->atomics_enable &&
		    (!(d->caps & RNICPI_DEV_CAP_ATOMIC) ||
		     d->atomic_cap == RNICPI_ATOMIC_NONE))
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_EP_ATTR,
				       "atomics enabled on an IA without atomics");
		if (!srq && watermarks_set(r->soft_hi_watermark,
					   r->hard_hi_watermark))
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_WATERMARK,
				       "EP high watermarks count the receives an EP takes from its SRQ; this EP has none");
	}
	memset(cap, 0, sizeof(*cap));
	cap->max_send_wr = (uint32_t)a->max_request_dtos;
	cap->max_recv_wr = srq ? 0 : (uint32_t)a->max_recv_dtos;
	cap->max_send_sge = (uint32_t)MAX(a->max_send_segments,
					  rc ? MAX(a->srv.rc.max_rdma_read_segments,
						   a->srv.rc.max_rdma_write_segments) :
					       0);
	cap->max_send_sge = MIN(cap->max_send_sge, d->max_sge);
	cap->max_recv_sge = srq ? 0 : (uint32_t)a->max_recv_segments;
	return IT_SUCCESS;
}

/* RDMA enables of an RC endpoint as QP access flags. A provider that
 * enforces rights only per region may not take them: that is fine. On
 * RoCE/IB a new QP is in RESET, where it takes no receives: it goes to
 * INIT here with them (IBA 10.3.1), as rdma_cm's QPs do, so that the
 * consumer may post receives before connecting, as on iWARP. */
static void apply_enables(struct itapi_ep *ep)
{
	struct rnicpi_qp_attr qa = { 0 };
	unsigned int mask = RNICPI_QP_ACCESS_FLAGS;
	int err;

	if (ep->obj.ia->transport != RNICPI_TRANSPORT_IWARP &&
	    ual_qp_query(ep->qp, &qa, RNICPI_QP_STATE) == 0 &&
	    qa.qp_state == RNICPI_QPS_RESET) {
		mask |= RNICPI_QP_STATE | RNICPI_QP_PKEY_INDEX |
			RNICPI_QP_PORT;
		qa.port_num = (uint8_t)(ep->spigot_id + 1);
	}
	qa.qp_state = mask & RNICPI_QP_STATE ? RNICPI_QPS_INIT : 0;
	qa.pkey_index = 0;

	if (ep->attr.srv.rc.rdma_read_enable)
		qa.qp_access_flags |= RNICPI_ACCESS_REMOTE_READ;
	if (ep->attr.srv.rc.rdma_write_enable)
		qa.qp_access_flags |= RNICPI_ACCESS_REMOTE_WRITE;
	if (ep->attr.srv.rc.atomics_enable)
		qa.qp_access_flags |= RNICPI_ACCESS_REMOTE_ATOMIC;
	err = ual_qp_modify(ep->qp, &qa, mask);
	if (err && (mask & RNICPI_QP_STATE))
		g_warning("%s QP to INIT: %s", ep->obj.prefix,
			  g_strerror(-err));
	else if (err)
		itapi_debug(&ep->obj,
			    "the provider keeps no QP access flags (%s); regions carry the rights",
			    g_strerror(-err));
}

/* Make the QP of @ep from its attributes (creation and reset). */
static it_status_t ep_make_qp(struct itapi_ep *ep, struct rnicpi_qp_cap *cap)
{
	struct ual_qp_init_attr qa = {
		.qp_type = ep->service == IT_UD_SERVICE ? RNICPI_QPT_UD :
							  RNICPI_QPT_RC,
		.send_cq = ep->req_evd->cq,
		.recv_cq = ep->recv_evd->cq,
		.srq = ep->srq ? ep->srq->srq : NULL,
		.cap = *cap,
		.sq_sig_all = false,
	};
	int err;

	err = ual_qp_create(ep->pz->pd, &qa, &ep->qp);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_EP,
				     "create_qp: %s", g_strerror(-err));
	*cap = qa.cap;
	ep->qp_num = ual_qp_num(ep->qp);
	ual_qp_set_user(ep->qp, ep);
	itapi_wq_init(&ep->sq, cap->max_send_wr);
	itapi_wq_init(&ep->rq, MAX(cap->max_recv_wr, 1u));
	g_rw_lock_writer_lock(&ep->obj.ia->qpn_lock);
	g_hash_table_insert(ep->obj.ia->qpn_eps, GUINT_TO_POINTER(ep->qp_num),
			    ep);
	g_rw_lock_writer_unlock(&ep->obj.ia->qpn_lock);
	return IT_SUCCESS;
}

/*
 * Tear the QP down: the connection first (abortively), then the QP, whose
 * outstanding WRs the provider flushes into the CQs; those completions
 * become events now, naming the endpoint, so the consumer gets its
 * cookies back (DAT's rule for freed endpoints).
 */
static int ep_drop_qp(struct itapi_ep *ep)
{
	struct cm_id *cm;
	int err;

	g_mutex_lock(&ep->lock);
	cm = g_steal_pointer(&ep->cm);
	g_mutex_unlock(&ep->lock);
	cm_id_destroy(cm);
	err = ual_qp_destroy(ep->qp);
	if (err) {
		g_warning("%s destroy_qp: %s", ep->obj.prefix,
			  g_strerror(-err));
		return err;
	}
	itapi_evd_pump(ep->req_evd);
	if (ep->recv_evd != ep->req_evd)
		itapi_evd_pump(ep->recv_evd);
	g_rw_lock_writer_lock(&ep->obj.ia->qpn_lock);
	g_hash_table_remove(ep->obj.ia->qpn_eps, GUINT_TO_POINTER(ep->qp_num));
	g_rw_lock_writer_unlock(&ep->obj.ia->qpn_lock);
	ep->qp = NULL;
	itapi_wq_fini(&ep->sq);
	itapi_wq_fini(&ep->rq);
	return 0;
}

static void ep_use_evds(struct itapi_ep *ep, int delta)
{
	struct itapi_ia *ia = ep->obj.ia;

	g_mutex_lock(&ia->lock);
	ep->req_evd->users += delta;
	ep->recv_evd->users += delta;
	if (ep->conn_evd)
		ep->conn_evd->users += delta;
	if (ep->srq)
		ep->srq->users += delta;
	g_mutex_unlock(&ia->lock);
	if (ep->srq)
		g_atomic_int_add(&itapi_srq_eps, delta);
}

/* ------------------------------------------------------------------ */
/* EP high watermarks                                                  */
/* ------------------------------------------------------------------ */

/*
 * An EP on an SRQ holds each receive it took from the SRQ until the
 * consumer dequeues its completion event (the buffer is the consumer's
 * to reuse only then). soft_hi_watermark (0: none): reaching it posts
 * IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK once, again after the count fell
 * below it. hard_hi_watermark (0 or IT_HARD_HI_WATERMARK_DISABLE: none):
 * reaching it breaks the connection (abortive close; the EP's connect
 * SEVD gets IT_CM_MSG_CONN_BROKEN_EVENT, the peer its BROKEN), so that
 * one connection cannot keep the SRQ's buffers from the others.
 */
gint itapi_srq_eps;

static bool watermarks_set(size_t soft, size_t hard)
{
	return soft || (hard && hard != IT_HARD_HI_WATERMARK_DISABLE);
}

unsigned int itapi_ep_srq_recv_held(struct itapi_ep *ep)
{
	const it_rc_only_attributes_t *r = &ep->attr.srv.rc;
	unsigned int wm = 0;

	g_mutex_lock(&ep->lock);
	ep->srq_held++;
	if (r->soft_hi_watermark && ep->srq_held >= r->soft_hi_watermark &&
	    !ep->soft_hi_posted) {
		ep->soft_hi_posted = true;
		wm |= ITAPI_WM_SOFT;
	}
	if (r->hard_hi_watermark &&
	    r->hard_hi_watermark != IT_HARD_HI_WATERMARK_DISABLE &&
	    ep->srq_held >= r->hard_hi_watermark && !ep->hard_hi_hit) {
		ep->hard_hi_hit = true;
		wm |= ITAPI_WM_HARD;
	}
	g_mutex_unlock(&ep->lock);
	return wm;
}

void itapi_ep_srq_recv_released(it_ep_handle_t ep_handle)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);

	if (!ep || !ep->srq)
		return;
	g_mutex_lock(&ep->lock);
	if (ep->srq_held)
		ep->srq_held--;
	if (ep->srq_held < ep->attr.srv.rc.soft_hi_watermark)
		ep->soft_hi_posted = false;
	g_mutex_unlock(&ep->lock);
}

static void ep_watermark_act(struct itapi_ep *ep, unsigned int wm)
{
	struct cm_id *cm;
	size_t held;
	int err;

	g_mutex_lock(&ep->lock);
	held = ep->srq_held;
	cm = wm & ITAPI_WM_HARD ? itapi_ep_cm_ref_locked(ep) : NULL;
	g_mutex_unlock(&ep->lock);
	if (wm & ITAPI_WM_SOFT) {
		itapi_debug(&ep->obj, "%zu SRQ receives held: soft high watermark",
			    held);
		itapi_post_affiliated(ep->obj.ia,
				      IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK, ep);
	}
	if (!(wm & ITAPI_WM_HARD))
		return;
	g_info("%s %zu SRQ receives held: hard high watermark %zu reached; breaking the connection",
	       ep->obj.prefix, held, ep->attr.srv.rc.hard_hi_watermark);
	err = cm ? cm_disconnect(cm, true) : -ENOTCONN;
	if (err)
		itapi_debug(&ep->obj, "hard high watermark: no connection to break (%s)",
			    g_strerror(-err));
	cm_id_unref(cm);
}

/*
 * The pump calls this after dropping the EVD's lock, where nothing keeps
 * @ep alive: the consumer may be freeing it on another thread. The
 * QP-number table's read lock does, as for completions and async events
 * (ep_drop_qp takes the endpoint out of the table, under the write lock,
 * before it is freed); an @ep no longer under @qp_num is gone, or reset
 * to a new QP whose counts started again, and is left alone.
 */
void itapi_ep_watermark_act(struct itapi_ia *ia, uint32_t qp_num,
			    struct itapi_ep *ep, unsigned int wm)
{
	g_rw_lock_reader_lock(&ia->qpn_lock);
	if (g_hash_table_lookup(ia->qpn_eps, GUINT_TO_POINTER(qp_num)) == ep)
		ep_watermark_act(ep, wm);
	else
		g_debug("%s QP %u: its endpoint went before its watermark was acted on",
			ia->obj.prefix, qp_num);
	g_rw_lock_reader_unlock(&ia->qpn_lock);
}

/*
 * A QP error while connected ends the connection (the endpoint is
 * NONOPERATIONAL, its connect SEVD gets IT_CM_MSG_CONN_BROKEN_EVENT). An
 * iWARP QP that fails sends a Terminate and closes its stream, which the
 * connection manager sees. The InfiniBand transport has no such message:
 * the IB CM (ours or the kernel's under rdma_cm) would keep the
 * connection until a side disconnects, the peer none the wiser, so the
 * connection is closed abortively here (a REJ "stale connection" or
 * rdma_cm's DREQ); our side reports BROKEN whatever the close looks like.
 */
void itapi_ep_qp_failed(struct itapi_ep *ep)
{
	struct cm_id *cm = NULL;
	int err;

	if (ep->service != IT_RC_SERVICE ||
	    ep->obj.ia->transport == RNICPI_TRANSPORT_IWARP)
		return;
	g_mutex_lock(&ep->lock);
	if (ep->state.rc == IT_EP_STATE_CONNECTED && ep->cm && !ep->qp_failed) {
		ep->qp_failed = true;
		cm = itapi_ep_cm_ref_locked(ep);
	}
	g_mutex_unlock(&ep->lock);
	if (!cm)
		return;
	g_info("%s the QP failed: breaking the connection", ep->obj.prefix);
	err = cm_disconnect(cm, true);
	if (err)
		itapi_debug(&ep->obj, "QP failed: no connection to break (%s)",
			    g_strerror(-err));
	cm_id_unref(cm);
}

it_status_t itapi_ep_create(struct itapi_pz *pz, it_transport_service_type_t service,
			    struct itapi_evd *req, struct itapi_evd *recv,
			    struct itapi_evd *conn, struct itapi_srq *srq,
			    it_ep_rc_creation_flags_t flags,
			    const it_ep_attributes_t *attr, size_t spigot_id,
			    struct itapi_ep **out)
{
	struct itapi_ia *ia = pz->obj.ia;
	struct rnicpi_qp_cap cap;
	struct itapi_ep *ep;
	it_status_t st;

	st = check_attr(pz, attr, service == IT_RC_SERVICE, srq != NULL, &cap);
	if (st)
		return st;
	ep = g_new0(struct itapi_ep, 1);
	itapi_obj_init(&ep->obj, IT_HANDLE_TYPE_EP, ia, NULL);
	ep->pz = pz;
	ep->service = service;
	ep->spigot_id = spigot_id;
	ep->req_evd = req;
	ep->recv_evd = recv;
	ep->conn_evd = conn;
	ep->srq = srq;
	ep->create_flags = flags;
	ep->attr = *attr;
	g_mutex_init(&ep->lock);
	st = ep_make_qp(ep, &cap);
	if (st) {
		g_mutex_clear(&ep->lock);
		g_free(ep);
		return st;
	}
	/* Report what was granted. */
	ep->attr.max_request_dtos = cap.max_send_wr;
	if (!srq) {
		ep->attr.max_recv_dtos = cap.max_recv_wr;
		ep->attr.max_recv_segments =
			MIN(cap.max_recv_sge, ia->attr.max_sge);
	}
	if (!ep->attr.max_dto_payload_size)
		ep->attr.max_dto_payload_size = ia->attr.max_msg_size;
	if (service == IT_RC_SERVICE) {
		ep->state.rc = IT_EP_STATE_UNCONNECTED;
		apply_enables(ep);
	}
	ep_use_evds(ep, 1);
	snprintf(ep->obj.prefix, sizeof(ep->obj.prefix), "EP[QP %u] %s:",
		 ep->qp_num, ual_device_name(ia->dev));
	itapi_ia_add_child(ia, &ep->obj);
	itapi_debug(&ep->obj, "created (%s), %u send WRs, %u receive WRs",
		    service == IT_RC_SERVICE ? "RC" : "UD", cap.max_send_wr,
		    cap.max_recv_wr);
	*out = ep;
	return IT_SUCCESS;
}

it_status_t it_ep_rc_create(it_pz_handle_t pz_handle,
			    it_evd_handle_t request_sevd_handle,
			    it_evd_handle_t recv_sevd_handle,
			    it_evd_handle_t connect_sevd_handle,
			    it_ep_rc_creation_flags_t flags,
			    const it_ep_attributes_t *ep_attr,
			    it_ep_handle_t *ep_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	struct itapi_evd *req, *recv, *conn;
	struct itapi_srq *srq = NULL;
	struct itapi_ia *ia;
	struct itapi_ep *ep;
	it_status_t st;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	ia = pz->obj.ia;
	if (!ep_handle || !ep_attr)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT,
			       "ep_handle or ep_attr is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	if (!(ia->attr.caps & RNICPI_DEV_CAP_RC))
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "the IA has no RC service");
	if ((unsigned int)flags & ~(unsigned int)(IT_EP_REUSEADDR | IT_EP_SRQ))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)flags);
	req = itapi_dto_evd(ia, request_sevd_handle);
	if (!req)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_REQ_EVD,
			       "%p is not a DTO SEVD of this IA",
			       (void *)request_sevd_handle);
	recv = itapi_dto_evd(ia, recv_sevd_handle);
	if (!recv)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_RECV_EVD,
			       "%p is not a DTO SEVD of this IA",
			       (void *)recv_sevd_handle);
	conn = ITAPI_LOOKUP(connect_sevd_handle, struct itapi_evd,
			    IT_HANDLE_TYPE_EVD);
	if (!conn || conn->obj.ia != ia || conn->is_aevd ||
	    conn->stream != IT_CM_MSG_EVENT_STREAM)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_CONN_EVD,
			       "%p is not a CM message SEVD of this IA",
			       (void *)connect_sevd_handle);
	if (flags & IT_EP_SRQ) {
		srq = ITAPI_LOOKUP(ep_attr->srv.rc.srq, struct itapi_srq,
				   IT_HANDLE_TYPE_SRQ);
		if (!srq || srq->obj.ia != ia)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_SRQ,
				       "SRQ handle %p is not live",
				       (void *)ep_attr->srv.rc.srq);
		if (srq->pz != pz)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_SRQ,
				       "the SRQ is in another PZ");
	}
	st = itapi_ep_create(pz, IT_RC_SERVICE, req, recv, conn, srq, flags,
			     ep_attr, 0, &ep);
	if (st)
		return st;
	if (!srq)
		ep->attr.srv.rc.srq = NULL;
	*ep_handle = (it_ep_handle_t)ep;
	return IT_SUCCESS;
}

void itapi_ep_destroy(struct itapi_ep *ep)
{
	ep_drop_qp(ep);
	ep_use_evds(ep, -1);
	itapi_ia_del_child(ep->obj.ia, &ep->obj);
	itapi_debug(&ep->obj, "freed");
	g_mutex_clear(&ep->lock);
	g_free(ep);
}

it_status_t it_ep_free(it_ep_handle_t ep_handle)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	/* The handle goes first: no new call reaches it while it goes. */
	itapi_handle_del(&ep->obj);
	itapi_ep_destroy(ep);
	return IT_SUCCESS;
}

#define EP_PARAM_ALL_BITS 0x0fffffffu

it_status_t it_ep_query(it_ep_handle_t ep_handle, it_ep_param_mask_t mask,
			it_ep_param_t *params)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	bool all = mask & IT_EP_PARAM_ALL;
	it_ep_attributes_t *a;

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	if ((unsigned int)mask & ~EP_PARAM_ALL_BITS)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "params is NULL");
	a = &params->attr;
	g_mutex_lock(&ep->lock);
#define WANT(bit) (all || (mask & (bit)))
	if (WANT(IT_EP_PARAM_IA))
		params->ia = (it_ia_handle_t)ep->obj.ia;
	if (WANT(IT_EP_PARAM_SPIGOT))
		params->spigot_id = ep->spigot_id;
	if (WANT(IT_EP_PARAM_STATE))
		params->ep_state = ep->state;
	if (WANT(IT_EP_PARAM_SERV_TYPE))
		params->service_type = ep->service;
	if (WANT(IT_EP_PARAM_PATH))
		params->dst_path = ep->dst_path;
	if (WANT(IT_EP_PARAM_PZ))
		params->pz = (it_pz_handle_t)ep->pz;
	if (WANT(IT_EP_PARAM_REQ_SEVD))
		params->request_sevd = (it_evd_handle_t)ep->req_evd;
	if (WANT(IT_EP_PARAM_RECV_SEVD))
		params->recv_sevd = (it_evd_handle_t)ep->recv_evd;
	if (WANT(IT_EP_PARAM_CONN_SEVD))
		params->connect_sevd = (it_evd_handle_t)ep->conn_evd;
	if (WANT(IT_EP_PARAM_MAX_PAYLOAD))
		a->max_dto_payload_size = ep->attr.max_dto_payload_size;
	if (WANT(IT_EP_PARAM_MAX_REQ_DTO))
		a->max_request_dtos = ep->attr.max_request_dtos;
	if (WANT(IT_EP_PARAM_MAX_RECV_DTO))
		a->max_recv_dtos = ep->attr.max_recv_dtos;
	if (WANT(IT_EP_PARAM_MAX_SEND_SEG))
		a->max_send_segments = ep->attr.max_send_segments;
	if (WANT(IT_EP_PARAM_MAX_RECV_SEG))
		a->max_recv_segments = ep->attr.max_recv_segments;
	if (WANT(IT_EP_PARAM_PRIV_OPS_ENABLE))
		a->priv_ops_enable = IT_FALSE;
	if (ep->service == IT_RC_SERVICE) {
		const it_rc_only_attributes_t *r = &ep->attr.srv.rc;

		if (WANT(IT_EP_PARAM_RDMA_RD_ENABLE))
			a->srv.rc.rdma_read_enable = r->rdma_read_enable;
		if (WANT(IT_EP_PARAM_RDMA_WR_ENABLE))
			a->srv.rc.rdma_write_enable = r->rdma_write_enable;
		if (WANT(IT_EP_PARAM_MAX_RDMA_READ_SEG))
			a->srv.rc.max_rdma_read_segments =
				r->max_rdma_read_segments;
		if (WANT(IT_EP_PARAM_MAX_RDMA_WRITE_SEG))
			a->srv.rc.max_rdma_write_segments =
				r->max_rdma_write_segments;
		if (WANT(IT_EP_PARAM_MAX_IRD))
			a->srv.rc.rdma_read_ird = r->rdma_read_ird;
		if (WANT(IT_EP_PARAM_MAX_ORD))
			a->srv.rc.rdma_read_ord = r->rdma_read_ord;
		if (WANT(IT_EP_PARAM_SRQ))
			a->srv.rc.srq = (it_srq_handle_t)ep->srq;
		if (WANT(IT_EP_PARAM_SOFT_HI_WATERMARK))
			a->srv.rc.soft_hi_watermark = r->soft_hi_watermark;
		if (WANT(IT_EP_PARAM_HARD_HI_WATERMARK))
			a->srv.rc.hard_hi_watermark =
				r->hard_hi_watermark ?
					r->hard_hi_watermark :
					IT_HARD_HI_WATERMARK_DISABLE;
		if (WANT(IT_EP_PARAM_ATOMICS_ENABLE))
			a->srv.rc.atomics_enable = r->atomics_enable;
	} else {
		if (WANT(IT_EP_PARAM_EP_ID))
			a->srv.ud.ep_info.ud_ep_id = ep->qp_num;
		if (WANT(IT_EP_PARAM_EP_KEY))
			a->srv.ud.ep_info.ud_ep_key =
				ep->attr.srv.ud.ep_info.ud_ep_key;
	}
#undef WANT
	g_mutex_unlock(&ep->lock);
	return IT_SUCCESS;
}

/*
 * ep_work_queues_resizable (RNICPI_DEV_CAP_RESIZE_QP): new sizes for the
 * send and receive queues, in the provider (RNICPI_QP_CAP) and in the
 * EP's slot rings, both under the rings' locks so that nothing is posted
 * meanwhile.
 */
static it_status_t ep_resize_queues(struct itapi_ep *ep,
				    const it_ep_attributes_t *a,
				    unsigned int qmask)
{
	const struct rnicpi_device_attr *d = &ep->obj.ia->attr;
	struct rnicpi_qp_attr qa = { 0 };
	size_t sq = (qmask & IT_EP_PARAM_MAX_REQ_DTO) ? a->max_request_dtos :
							ep->attr.max_request_dtos;
	size_t rq = (qmask & IT_EP_PARAM_MAX_RECV_DTO) ? a->max_recv_dtos :
							 ep->attr.max_recv_dtos;
	it_status_t st = IT_SUCCESS;
	int err;

	if (!(d->caps & RNICPI_DEV_CAP_RESIZE_QP))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x: work queues do not resize here (ep_work_queues_resizable is false)",
			       qmask);
	if ((qmask & IT_EP_PARAM_MAX_RECV_DTO) && ep->srq)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_MASK,
			       "the endpoint receives from an SRQ");
	if (sq == 0 || (!ep->srq && rq == 0))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_QUEUE_SIZE,
			       "%zu send, %zu receive DTOs", sq, rq);
	if (sq > d->max_qp_wr)
		return IT_FAIL(&ep->obj, IT_ERR_RESOURCE_REQ_DTO,
			       "max_request_dtos %zu over %u", sq,
			       d->max_qp_wr);
	if (rq > d->max_qp_wr)
		return IT_FAIL(&ep->obj, IT_ERR_RESOURCE_RECV_DTO,
			       "max_recv_dtos %zu over %u", rq, d->max_qp_wr);
	g_mutex_lock(&ep->sq.lock);
	g_mutex_lock(&ep->rq.lock);
	if (ep->sq.head - ep->sq.tail > sq ||
	    (!ep->srq && ep->rq.head - ep->rq.tail > rq)) {
		st = IT_FAIL(&ep->obj, IT_ERR_INVALID_QUEUE_SIZE,
			     "%zu send, %zu receive DTOs: %llu and %llu are outstanding",
			     sq, rq,
			     (unsigned long long)(ep->sq.head - ep->sq.tail),
			     (unsigned long long)(ep->rq.head - ep->rq.tail));
		goto out;
	}
	if (qmask & IT_EP_PARAM_MAX_REQ_DTO)
		qa.cap.max_send_wr = (uint32_t)sq;
	if (qmask & IT_EP_PARAM_MAX_RECV_DTO)
		qa.cap.max_recv_wr = (uint32_t)rq;
	err = ual_qp_modify(ep->qp, &qa, RNICPI_QP_CAP);
	if (err) {
		st = IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_EP,
				   "resizing to %zu send, %zu receive DTOs: %s",
				   sq, rq, g_strerror(-err));
		goto out;
	}
	itapi_wq_resize_locked(&ep->sq, (uint32_t)sq);
	if (!ep->srq)
		itapi_wq_resize_locked(&ep->rq, (uint32_t)rq);
	g_mutex_lock(&ep->lock);
	ep->attr.max_request_dtos = sq;
	if (!ep->srq)
		ep->attr.max_recv_dtos = rq;
	g_mutex_unlock(&ep->lock);
out:
	g_mutex_unlock(&ep->rq.lock);
	g_mutex_unlock(&ep->sq.lock);
	return st;
}

it_status_t it_ep_modify(it_ep_handle_t ep_handle, it_ep_param_mask_t mask,
			 const it_ep_attributes_t *ep_attr)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	const unsigned int wm_mask = IT_EP_PARAM_SOFT_HI_WATERMARK |
				     IT_EP_PARAM_HARD_HI_WATERMARK;
	const unsigned int rc_ok = IT_EP_PARAM_RDMA_RD_ENABLE |
				   IT_EP_PARAM_RDMA_WR_ENABLE |
				   IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD |
				   IT_EP_PARAM_ATOMICS_ENABLE | wm_mask;
	const unsigned int q_ok = IT_EP_PARAM_MAX_REQ_DTO |
				  IT_EP_PARAM_MAX_RECV_DTO;
	const struct rnicpi_device_attr *d;
	it_rc_only_attributes_t r;
	it_status_t st;
	bool idle;

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	if (!ep_attr)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "ep_attr is NULL");
	if (ep->service != IT_RC_SERVICE || !mask ||
	    ((unsigned int)mask & ~(rc_ok | q_ok)))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x: only the RDMA enables, IRD, ORD, high watermarks and queue sizes of an RC endpoint change",
			       (unsigned int)mask);
	/* The queue sizes change in any state (ep_resize_queues). */
	if (!((unsigned int)mask & rc_ok))
		return ep_resize_queues(ep, ep_attr, (unsigned int)mask & q_ok);
	d = &ep->obj.ia->attr;
	/* The watermarks change in any state, alone. */
	if (mask & wm_mask) {
		if (mask & ~wm_mask)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_MASK,
				       "watermarks change on their own (any state), the rest only unconnected");
		g_mutex_lock(&ep->lock);
		r = ep->attr.srv.rc;
		if (mask & IT_EP_PARAM_SOFT_HI_WATERMARK)
			r.soft_hi_watermark = ep_attr->srv.rc.soft_hi_watermark;
		if (mask & IT_EP_PARAM_HARD_HI_WATERMARK)
			r.hard_hi_watermark = ep_attr->srv.rc.hard_hi_watermark;
		if (!ep->srq && watermarks_set(r.soft_hi_watermark,
					       r.hard_hi_watermark)) {
			g_mutex_unlock(&ep->lock);
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_WATERMARK,
				       "EP high watermarks count the receives an EP takes from its SRQ; this EP has none");
		}
		ep->attr.srv.rc.soft_hi_watermark = r.soft_hi_watermark;
		ep->attr.srv.rc.hard_hi_watermark = r.hard_hi_watermark;
		if (ep->srq_held < r.soft_hi_watermark)
			ep->soft_hi_posted = false;
		g_mutex_unlock(&ep->lock);
		return IT_SUCCESS;
	}
	g_mutex_lock(&ep->lock);
	idle = ep->state.rc == IT_EP_STATE_UNCONNECTED;
	r = ep->attr.srv.rc;
	g_mutex_unlock(&ep->lock);
	/* IRD and ORD go into the connection set-up; the enables into the
	 * QP. Both only before connecting (rdma_read_*_modifiable). */
	if (!idle)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "the endpoint is not unconnected");
	if (mask & IT_EP_PARAM_RDMA_RD_ENABLE)
		r.rdma_read_enable = ep_attr->srv.rc.rdma_read_enable;
	if (mask & IT_EP_PARAM_RDMA_WR_ENABLE)
		r.rdma_write_enable = ep_attr->srv.rc.rdma_write_enable;
	if (mask & IT_EP_PARAM_ATOMICS_ENABLE)
		r.atomics_enable = ep_attr->srv.rc.atomics_enable;
	if (mask & IT_EP_PARAM_MAX_IRD)
		r.rdma_read_ird = ep_attr->srv.rc.rdma_read_ird;
	if (mask & IT_EP_PARAM_MAX_ORD)
		r.rdma_read_ord = ep_attr->srv.rc.rdma_read_ord;
	if (r.rdma_read_ird > d->max_qp_rd_atom)
		return IT_FAIL(&ep->obj, IT_ERR_RESOURCE_IRD, "IRD %u over %u",
			       r.rdma_read_ird, d->max_qp_rd_atom);
	if (r.rdma_read_ord > d->max_qp_init_rd_atom)
		return IT_FAIL(&ep->obj, IT_ERR_RESOURCE_ORD, "ORD %u over %u",
			       r.rdma_read_ord, d->max_qp_init_rd_atom);
	if (r.atomics_enable && (!(d->caps & RNICPI_DEV_CAP_ATOMIC) ||
				 d->atomic_cap == RNICPI_ATOMIC_NONE))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_ATTR,
			       "atomics enabled on an IA without atomics");
	if ((unsigned int)mask & q_ok) {
		st = ep_resize_queues(ep, ep_attr, (unsigned int)mask & q_ok);
		if (st)
			return st;
	}
	g_mutex_lock(&ep->lock);
	ep->attr.srv.rc = r;
	g_mutex_unlock(&ep->lock);
	apply_enables(ep);
	return IT_SUCCESS;
}

it_status_t it_ep_reset(it_ep_handle_t ep_handle)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	struct rnicpi_qp_cap cap;
	it_ep_state_rc_t s;
	it_status_t st;

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	if (ep->service != IT_RC_SERVICE)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			       "reset applies to RC endpoints");
	g_mutex_lock(&ep->lock);
	s = ep->state.rc;
	g_mutex_unlock(&ep->lock);
	if (s == IT_EP_STATE_UNCONNECTED)
		return IT_SUCCESS;
	if (s != IT_EP_STATE_NONOPERATIONAL)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "reset in state %s: disconnect first",
			       itapi_ep_state_name(s));
	/* A QP that went through a connection cannot be used again (iWARP
	 * verbs: IDLE is left once); a fresh one takes its place. */
	if (ep_drop_qp(ep))
		return IT_FAIL(&ep->obj, IT_ERR_CANNOT_RESET,
			       "the old QP would not go");
	/* Events not dequeued yet still hold their receives. */
	g_mutex_lock(&ep->lock);
	ep->hard_hi_hit = false;
	ep->qp_failed = false;
	g_mutex_unlock(&ep->lock);
	memset(&cap, 0, sizeof(cap));
	cap.max_send_wr = (uint32_t)ep->attr.max_request_dtos;
	cap.max_recv_wr = ep->srq ? 0 : (uint32_t)ep->attr.max_recv_dtos;
	cap.max_send_sge = (uint32_t)MAX(
		ep->attr.max_send_segments,
		MAX(ep->attr.srv.rc.max_rdma_read_segments,
		    ep->attr.srv.rc.max_rdma_write_segments));
	cap.max_send_sge = MIN(cap.max_send_sge, ep->obj.ia->attr.max_sge);
	cap.max_recv_sge = ep->srq ? 0 : (uint32_t)ep->attr.max_recv_segments;
	st = ep_make_qp(ep, &cap);
	if (st) {
		/* Without a QP the endpoint can only be freed. */
		return IT_FAIL(&ep->obj, IT_ERR_CANNOT_RESET,
			       "no new QP: %s", itapi_status_name(st));
	}
	apply_enables(ep);
	g_mutex_lock(&ep->lock);
	ep->state.rc = IT_EP_STATE_UNCONNECTED;
	memset(&ep->dst_path, 0, sizeof(ep->dst_path));
	ep->cn_est_id = 0;
	g_mutex_unlock(&ep->lock);
	snprintf(ep->obj.prefix, sizeof(ep->obj.prefix), "EP[QP %u] %s:",
		 ep->qp_num, ual_device_name(ep->obj.ia->dev));
	itapi_debug(&ep->obj, "reset");
	return IT_SUCCESS;
}
