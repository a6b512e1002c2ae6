/* SPDX-License-Identifier: MIT */
/*
 * verbs_cm.c - connections of a verbs device through librdmacm
 * (RNICPI_DEV_CAP_NATIVE_CM): listen, connect, accept, reject and
 * disconnect in rdma_cm's TCP port space (RDMA_PS_TCP), so that the
 * peer may be any rdma_cm application (rping) or hostrdma's own soft
 * providers' MPA and IB CM. On IB and RoCE, UD service ID resolution in
 * rdma_cm's UDP port space (RDMA_PS_UDP, SIDR on the wire, as udaddy):
 * a listener listens on the same port of both spaces, and a request is
 * an id of its own (struct verbs_sidr).
 *
 * One event channel per device; its fd is watched by the device's engine
 * beside the async fd, and every event is handled on that thread,
 * acknowledged before the upcall (rdma_destroy_id waits for the
 * acknowledgement of its events, and may be called by a core that holds
 * its own locks while an upcall waits for them).
 *
 * QP ownership: the QP is RNICPI's, made by create_qp on the provider's
 * own ibverbs context before any connection exists, so rdma_cm is never
 * given it (rdma_create_qp would make a second QP on librdmacm's
 * context). The id runs in librdmacm's "no QP" mode instead: the QP
 * number travels in the conn param, and the provider moves the QP itself
 * with the attributes rdma_init_qp_attr returns (INIT before connect and
 * accept; RTR and RTS before accept and, on IB/RoCE, at CONNECT_RESPONSE,
 * answered with rdma_establish). On iWARP the kernel's iw_cm finds the QP
 * by number (device-wide) and moves it to RTS itself.
 *
 * Objects: a listener owns its rdma_cm id; a request (struct verbs_conn)
 * owns the new id until conn_accept gives it to the QP or conn_reject
 * destroys it; a QP owns the id of its connection until destroy_qp. An
 * event on a request not answered yet (the peer gave up: IB's REJ from
 * an initiator that destroyed its id) is not reported at once, as
 * RNICPI has no event for a request already reported; mostly there is
 * none anyway, as the kernel's ucma drops events on a request not
 * accepted yet. The request stays pending and its answer then fails with
 * -ECONNRESET (accept, request_alive; the core breaks the accepting
 * endpoint's connection) or is a no-op (reject). On iWARP the kernel's
 * siw says nothing of a peer's close before the accept, and rdma_accept
 * fails with ECONNRESET, which ends the same way.
 *
 * This file holds what runs on the engine thread: the events, the event
 * channel (verbs_cm_open, verbs_cm_close) and the break of a connection
 * by a completion in error, with the helpers both files use; the device
 * ops (listen, connect, accept, reject, disconnect, the UD service
 * requests) are verbs_cm_ops.c's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>

#include "vp/verbs/verbs.h"

#define container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* rdma_cm's REJ reason for a consumer's reject (IBA's 28). */
#define VERBS_IB_REJ_CONSUMER 28

int verbs_cm_neg_errno(void)
{
	return errno ? -errno : -EIO;
}

socklen_t verbs_cm_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static void copy_sa(struct sockaddr_storage *out, const struct sockaddr *sa)
{
	if (sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6))
		memcpy(out, sa, verbs_cm_sa_len(sa));
}

/* Is @id (bound or resolved) on @vd's ibverbs device and port? */
bool verbs_cm_id_on_device(struct verbs_dev *vd, struct rdma_cm_id *id)
{
	return id->verbs && id->port_num == vd->port &&
	       strcmp(ibv_get_device_name(id->verbs->device),
		      ibv_get_device_name(vd->ctx->device)) == 0;
}

const char *verbs_cm_id_device_name(struct rdma_cm_id *id)
{
	return id->verbs ? ibv_get_device_name(id->verbs->device) : "none";
}

/* ------------------------------------------------------------------ */
/* Moving our QP with rdma_cm's attributes                             */
/* ------------------------------------------------------------------ */

static int qp_move(struct verbs_qp *q, struct rdma_cm_id *id,
		   enum ibv_qp_state state, uint32_t rd_atomic)
{
	struct ibv_qp_attr a;
	int mask = 0, ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	if (rdma_init_qp_attr(id, &a, &mask))
		return verbs_cm_neg_errno();
	/* The access rights are the consumer's (IT-API's RDMA enables put
	 * them on the QP at INIT), not rdma_cm's defaults. */
	if (state == IBV_QPS_INIT) {
		struct ibv_qp_init_attr ia;
		struct ibv_qp_attr cur;

		if (ibv_query_qp(q->qp, &cur, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS,
				 &ia) == 0 &&
		    cur.qp_state != IBV_QPS_RESET)
			a.qp_access_flags = cur.qp_access_flags;
	}
	/* librdmacm masks off bits IB rdma_ucm sets for RoCE only. */
	if (q->vd->transport == RNICPI_TRANSPORT_IB)
		mask &= ~0xe00000;
	if (rd_atomic && state == IBV_QPS_RTR &&
	    (mask & IBV_QP_MAX_DEST_RD_ATOMIC))
		a.max_dest_rd_atomic = (uint8_t)MIN(rd_atomic, 255u);
	if (rd_atomic && state == IBV_QPS_RTS && (mask & IBV_QP_MAX_QP_RD_ATOMIC))
		a.max_rd_atomic = (uint8_t)MIN(rd_atomic, 255u);
	ret = ibv_modify_qp(q->qp, &a, mask);
	if (ret) {
		errno = ret > 0 ? ret : errno;
		return verbs_cm_neg_errno();
	}
	return 0;
}

int verbs_cm_qp_to_rts(struct verbs_qp *q, struct rdma_cm_id *id, uint32_t ird,
		       uint32_t ord)
{
	int err = qp_move(q, id, IBV_QPS_INIT, 0);

	if (!err)
		err = qp_move(q, id, IBV_QPS_RTR, ird);
	if (!err)
		err = qp_move(q, id, IBV_QPS_RTS, ord);
	return err;
}

void verbs_cm_fill_conn_param(struct verbs_dev *vd, struct rdma_conn_param *cp,
			      const void *pdata, uint32_t len, uint32_t ird,
			      uint32_t ord, struct verbs_qp *q)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = len ? pdata : NULL;
	cp->private_data_len = (uint8_t)len;
	/* 0: the device's limit (librdmacm's "max" values). */
	cp->responder_resources =
		ird ? (uint8_t)MIN(ird, (uint32_t)vd->attr.max_qp_rd_atom) :
		      RDMA_MAX_RESP_RES;
	cp->initiator_depth =
		ord ? (uint8_t)MIN(ord, (uint32_t)vd->attr.max_qp_init_rd_atom) :
		      RDMA_MAX_INIT_DEPTH;
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
	cp->qp_num = q->qp->qp_num;
	cp->srq = q->has_srq;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static void upcall(struct verbs_dev *vd, const struct rnicpi_conn_event *ev)
{
	if (vd->rdev.core && vd->rdev.core->conn_event)
		vd->rdev.core->conn_event(&vd->rdev, ev);
}

static void ev_addrs(struct rnicpi_conn_event *out, struct rdma_cm_id *id)
{
	copy_sa(&out->local_addr, rdma_get_local_addr(id));
	copy_sa(&out->remote_addr, rdma_get_peer_addr(id));
}

static void ev_pdata(struct rnicpi_conn_event *out, uint8_t *buf,
		     const struct rdma_cm_event *ev)
{
	uint32_t len = ev->param.conn.private_data_len;

	if (!ev->param.conn.private_data || !len)
		return;
	memcpy(buf, ev->param.conn.private_data, len);
	out->private_data = buf;
	out->private_data_len = len;
}

/* A peer's request on a listener of ours. Called with cm_lock held, the
 * event not yet acknowledged; returns with both done. */
static void handle_request(struct verbs_dev *vd, struct rdma_cm_event *ev)
{
	enum verbs_cm_kind *kind = ev->listen_id ? ev->listen_id->context :
						   NULL;
	struct rdma_cm_id *nid = ev->id;
	struct rnicpi_conn_event out = { 0 };
	struct verbs_listener *l = NULL;
	struct verbs_conn *c;
	uint8_t pdata[256];
	bool free_l, free_c;

	if (kind && *kind == VERBS_CM_KIND_LISTENER)
		l = container_of(kind, struct verbs_listener, kind);
	if (!l || l->dead || !verbs_cm_id_on_device(vd, nid)) {
		g_mutex_unlock(&vd->cm_lock);
		g_info("%s: a connection request %s; refused", vd->rdev.name,
		       !l || l->dead ? "for a listener that is gone" :
				       "that arrived on another device");
		rdma_ack_cm_event(ev);
		rdma_reject(nid, NULL, 0);
		rdma_destroy_id(nid);
		return;
	}
	c = g_new0(struct verbs_conn, 1);
	c->kind = VERBS_CM_KIND_CONN;
	c->vd = vd;
	c->id = nid;
	c->base.device = &vd->rdev;
	c->in_upcall = true;
	nid->context = &c->kind;
	l->ref++;
	out.conn = &c->base;
	out.listener = &l->base;
	if (nid->ps == RDMA_PS_UDP) {
		/* A SIDR_REQ, rdma_cm's header taken off. */
		uint32_t len = ev->param.ud.private_data_len;

		out.type = RNICPI_CONN_SIDR_REQUEST;
		if (ev->param.ud.private_data && len) {
			memcpy(pdata, ev->param.ud.private_data, len);
			out.private_data = pdata;
			out.private_data_len = len;
		}
	} else {
		out.type = RNICPI_CONN_REQUEST;
		ev_pdata(&out, pdata, ev);
		out.ird = ev->param.conn.responder_resources;
		out.ord = ev->param.conn.initiator_depth;
	}
	ev_addrs(&out, nid);
	g_mutex_unlock(&vd->cm_lock);
	rdma_ack_cm_event(ev);

	upcall(vd, &out);

	g_mutex_lock(&vd->cm_lock);
	c->in_upcall = false;
	free_c = c->answered;
	free_l = --l->ref == 0;
	g_mutex_unlock(&vd->cm_lock);
	if (free_c)
		g_free(c);
	if (free_l)
		g_free(l);
}

/* An event on a request not answered yet: the peer gave up. */
static void handle_conn_event(struct verbs_dev *vd, struct verbs_conn *c,
			      struct rdma_cm_event *ev)
{
	struct verbs_cm_map m = verbs_cm_event(ev->event);

	if (m.type != VERBS_CM_IGNORE && m.type != RNICPI_CONN_ESTABLISHED)
		c->peer_gone = true;
	g_mutex_unlock(&vd->cm_lock);
	g_debug("%s: %s on a request not answered yet", vd->rdev.name,
		rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
}

/* The steps of the initiator's set-up, and the answer at IB's
 * CONNECT_RESPONSE. 0, or the status of the ERROR to report. */
static int active_step(struct verbs_qp *q, struct rdma_cm_id *id,
		       enum rdma_cm_event_type type)
{
	struct verbs_dev *vd = q->vd;
	struct rdma_conn_param cp;
	int err;

	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!verbs_cm_id_on_device(vd, id)) {
			g_info("%s: QP %u: the destination is reached through %s port %u, not this device",
			       vd->rdev.name, q->base.qp_num,
			       verbs_cm_id_device_name(id), id->port_num);
			return -ENETUNREACH;
		}
		if (rdma_resolve_route(id, (int)q->cm_timeout_ms))
			return verbs_cm_neg_errno();
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		err = qp_move(q, id, IBV_QPS_INIT, 0);
		if (err) {
			g_info("%s: QP %u to INIT for the connection: %s",
			       vd->rdev.name, q->base.qp_num,
			       g_strerror(-err));
			return err;
		}
		verbs_cm_fill_conn_param(vd, &cp, q->cm_pdata, q->cm_pdata_len,
					 q->cm_ird, q->cm_ord, q);
		if (rdma_connect(id, &cp))
			return verbs_cm_neg_errno();
		return 0;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		/* INIT again first: before the request went out the id had
		 * no IB CM id, and rdma_cm's INIT attributes then grant no
		 * remote access (librdmacm does the same). */
		err = verbs_cm_qp_to_rts(q, id, q->cm_ird, q->cm_ord);
		if (err) {
			g_info("%s: QP %u to RTR/RTS at the reply: %s",
			       vd->rdev.name, q->base.qp_num,
			       g_strerror(-err));
			rdma_reject(id, NULL, 0);
			return err;
		}
		if (rdma_establish(id))
			return verbs_cm_neg_errno();
		return 0;
	default:
		return 0;
	}
}

static void handle_qp_event(struct verbs_dev *vd, struct verbs_qp *q,
			    struct rdma_cm_event *ev)
{
	struct verbs_cm_map m = verbs_cm_event(ev->event);
	struct rnicpi_conn_event out = { 0 };
	struct rdma_cm_id *id = q->cm_id;
	enum rdma_cm_event_type type = ev->event;
	uint8_t pdata[256];
	bool was_established = q->cm_established, answer_close = false;
	int otype = m.type, err;

	vd->cm_busy = q;
	out.qp = &q->base;
	out.status = m.status;
	ev_pdata(&out, pdata, ev);
	out.ird = ev->param.conn.responder_resources;
	out.ord = ev->param.conn.initiator_depth;
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		q->cm_established = true;
		break;
	case RDMA_CM_EVENT_REJECTED:
		/* IB: only a consumer's REJ is the peer refusing; others
		 * (no listener: invalid service ID, time-outs) mean that
		 * nobody took the request. */
		if (vd->transport != RNICPI_TRANSPORT_IWARP &&
		    ev->status != VERBS_IB_REJ_CONSUMER) {
			otype = RNICPI_CONN_ERROR;
			out.status = -ECONNREFUSED;
		}
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* The peer's DREQ (IB) is answered with our DREP, as an
		 * rdma_cm application answers it with rdma_disconnect; the
		 * QP stops first. Where we closed, this finds nothing to do. */
		answer_close = type == RDMA_CM_EVENT_DISCONNECTED;
		q->cm_established = false;
		if (!was_established) {
			otype = RNICPI_CONN_ERROR;
			out.status = m.status ? m.status : -ECONNRESET;
		} else if (q->cm_broken) {
			/* Our own disconnect, after a completion error */
			out.status = q->cm_broken;
		}
		break;
	default:
		break;
	}
	g_mutex_unlock(&vd->cm_lock);
	rdma_ack_cm_event(ev);

	g_debug("%s: QP %u: %s (status %d)", vd->rdev.name, q->base.qp_num,
		rdma_event_str(type), ev->status);
	if (answer_close) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		if (vd->transport != RNICPI_TRANSPORT_IWARP)
			ibv_modify_qp(q->qp, &qa, IBV_QP_STATE);
		rdma_disconnect(id); /* EINVAL when it was ours: fine */
	}
	if (m.type == VERBS_CM_STEP) {
		err = active_step(q, id, type);
		if (err) {
			otype = RNICPI_CONN_ERROR;
			out.status = err;
		} else if (type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
			/* IB's REP answered with RTU: connected. */
			g_mutex_lock(&vd->cm_lock);
			q->cm_established = true;
			g_mutex_unlock(&vd->cm_lock);
			otype = RNICPI_CONN_ESTABLISHED;
		} else {
			otype = VERBS_CM_IGNORE;
		}
	}
	if (otype != VERBS_CM_IGNORE && otype != VERBS_CM_STEP) {
		out.type = (enum rnicpi_conn_event_type)otype;
		if (otype == RNICPI_CONN_ESTABLISHED ||
		    otype == RNICPI_CONN_REJECTED)
			ev_addrs(&out, id);
		upcall(vd, &out);
	}
	g_mutex_lock(&vd->cm_lock);
	vd->cm_busy = NULL;
	g_cond_broadcast(&vd->cm_cond);
	g_mutex_unlock(&vd->cm_lock);
}

/* The steps of a UD service request; its reply. Called with cm_lock
 * held, the event not acknowledged yet; returns with both done. */
static void handle_sidr_event(struct verbs_dev *vd, struct verbs_sidr *r,
			      struct rdma_cm_event *ev)
{
	struct verbs_sidr_map m = verbs_sidr_event(ev->event, ev->status);
	struct rnicpi_conn_event out = { 0 };
	struct rdma_cm_id *id = r->id;
	enum rdma_cm_event_type type = ev->event;
	uint8_t pdata[256];
	struct rdma_conn_param cp;
	bool free_r;

	if (r->done || m.type == VERBS_CM_IGNORE) {
		g_mutex_unlock(&vd->cm_lock);
		g_debug("%s: SIDR: %s ignored", vd->rdev.name,
			rdma_event_str(type));
		rdma_ack_cm_event(ev);
		return;
	}
	vd->cm_busy = r;
	out.type = RNICPI_CONN_SIDR_REPLY;
	out.sidr = &r->base;
	out.status = m.status;
	out.sidr_status = m.sidr_status;
	if (type == RDMA_CM_EVENT_ESTABLISHED) {
		uint32_t len = ev->param.ud.private_data_len;

		out.qpn = ev->param.ud.qp_num;
		out.qkey = ev->param.ud.qkey;
		if (ev->param.ud.private_data && len) {
			memcpy(pdata, ev->param.ud.private_data, len);
			out.private_data = pdata;
			out.private_data_len = len;
		}
	}
	g_mutex_unlock(&vd->cm_lock);
	rdma_ack_cm_event(ev);
	g_debug("%s: SIDR: %s (status %d)", vd->rdev.name,
		rdma_event_str(type), ev->status);

	if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
		if (!verbs_cm_id_on_device(vd, id)) {
			g_info("%s: SIDR: the destination is reached through %s port %u, not this device",
			       vd->rdev.name, verbs_cm_id_device_name(id),
			       id->port_num);
			out.status = -ENETUNREACH;
		} else if (rdma_resolve_route(id, (int)r->timeout_ms)) {
			out.status = verbs_cm_neg_errno();
		} else {
			m.type = VERBS_CM_IGNORE;
		}
	} else if (type == RDMA_CM_EVENT_ROUTE_RESOLVED) {
		memset(&cp, 0, sizeof(cp));
		cp.private_data = r->pdata_len ? r->pdata : NULL;
		cp.private_data_len = r->pdata_len;
		if (rdma_connect(id, &cp))
			out.status = verbs_cm_neg_errno();
		else
			m.type = VERBS_CM_IGNORE;
	}
	if (m.type != VERBS_CM_IGNORE) {
		g_mutex_lock(&vd->cm_lock);
		r->done = true;
		g_mutex_unlock(&vd->cm_lock);
		upcall(vd, &out);
	}
	g_mutex_lock(&vd->cm_lock);
	vd->cm_busy = NULL;
	/* Destroyed from inside the upcall: ours to free. */
	free_r = !r->vd;
	g_cond_broadcast(&vd->cm_cond);
	g_mutex_unlock(&vd->cm_lock);
	if (free_r)
		g_free(r);
}

static void handle_event(struct verbs_dev *vd, struct rdma_cm_event *ev)
{
	enum verbs_cm_kind *kind;

	g_mutex_lock(&vd->cm_lock);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		handle_request(vd, ev);
		return;
	}
	kind = ev->id ? ev->id->context : NULL;
	if (kind && *kind == VERBS_CM_KIND_QP) {
		handle_qp_event(vd, container_of(kind, struct verbs_qp, kind),
				ev);
		return;
	}
	if (kind && *kind == VERBS_CM_KIND_CONN) {
		handle_conn_event(vd,
				  container_of(kind, struct verbs_conn, kind),
				  ev);
		return;
	}
	if (kind && *kind == VERBS_CM_KIND_SIDR) {
		handle_sidr_event(vd,
				  container_of(kind, struct verbs_sidr, kind),
				  ev);
		return;
	}
	g_mutex_unlock(&vd->cm_lock);
	g_debug("%s: %s for an id with nothing attached", vd->rdev.name,
		rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
}

static bool cm_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct verbs_dev *vd = container_of(src, struct verbs_dev, cm_src);
	struct rdma_cm_event *ev;

	(void)events;
	while (rdma_get_cm_event(vd->cm_ch, &ev) == 0)
		handle_event(vd, ev);
	return false;
}

static void cm_break_run(void *arg);

void verbs_cm_open(struct verbs_dev *vd)
{
	int fl, err;

	g_mutex_init(&vd->cm_lock);
	g_cond_init(&vd->cm_cond);
	vd->cm_qps = g_hash_table_new(NULL, NULL);
	vd->cm_breaks = g_array_new(FALSE, FALSE, sizeof(uint32_t));
	rnicpi_timer_init(&vd->cm_break_timer, cm_break_run, vd);
	vd->cm_ch = rdma_create_event_channel();
	if (!vd->cm_ch) {
		g_info("%s: no rdma_cm event channel (%s): the device makes no connections",
		       vd->rdev.name, g_strerror(errno));
		return;
	}
	fl = fcntl(vd->cm_ch->fd, F_GETFL);
	if (fl < 0 || fcntl(vd->cm_ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		err = verbs_cm_neg_errno();
	else {
		vd->cm_src.dispatch = cm_dispatch;
		err = rnicpi_engine_add(&vd->engine, vd->cm_ch->fd,
					&vd->cm_src, EPOLLIN);
	}
	if (err) {
		g_info("%s: cannot watch the rdma_cm event channel: %s",
		       vd->rdev.name, g_strerror(-err));
		rdma_destroy_event_channel(vd->cm_ch);
		vd->cm_ch = NULL;
	}
}

void verbs_cm_close(struct verbs_dev *vd)
{
	/* The engine has stopped: the timer cannot be running */
	rnicpi_timer_cancel(&vd->engine, &vd->cm_break_timer);
	g_clear_pointer(&vd->cm_qps, g_hash_table_unref);
	if (vd->cm_breaks)
		g_array_free(vd->cm_breaks, TRUE);
	vd->cm_breaks = NULL;
	if (vd->cm_ch) {
		rnicpi_engine_del(&vd->engine, vd->cm_ch->fd);
		rdma_destroy_event_channel(vd->cm_ch);
		vd->cm_ch = NULL;
	}
	g_cond_clear(&vd->cm_cond);
	g_mutex_clear(&vd->cm_lock);
}

/* ------------------------------------------------------------------ */
/* A completion in error breaks the connection                         */
/* ------------------------------------------------------------------ */

/*
 * IT-API and IBA: a work request that completes in error (other than a
 * flush) leaves the QP in the error state and its connection unusable;
 * the consumer learns it from the completion, an affiliated async event
 * and the connection's BROKEN, and the peer from the connection's end.
 * The kernel's rxe (6.1) reports a requester's error in the completion
 * alone: no async event, no DREQ, both connect EVDs silent. So poll_cq
 * hands such a completion's QP to the engine thread, which raises the
 * event the completion's status names and disconnects (our DREQ; the
 * DISCONNECTED that follows is reported with the error's status, so the
 * core says BROKEN). Where the kernel raised its own async event the
 * consumer may see two for one error.
 */
static void wc_break_event(struct verbs_dev *vd, struct verbs_qp *q,
			   enum ibv_wc_status st,
			   struct rnicpi_async_event *ev, int *status)
{
	bool ib = vd->transport != RNICPI_TRANSPORT_IWARP;

	memset(ev, 0, sizeof(*ev));
	ev->element.qp = &q->base;
	ev->type = RNICPI_EVENT_QP_FATAL;
	*status = -ECONNABORTED;
	switch (st) {
	case IBV_WC_REM_ACCESS_ERR:
		/* The peer's NAK (IBA 9.7.5.2.8: remote access error) */
		ev->type = RNICPI_EVENT_QP_ACCESS_ERR;
		ev->term_etype = 2;
		*status = -EACCES;
		break;
	case IBV_WC_REM_INV_REQ_ERR:
		ev->type = RNICPI_EVENT_QP_REQ_ERR;
		ev->term_etype = 1;
		break;
	case IBV_WC_REM_OP_ERR:
		ev->term_etype = 3;
		break;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		*status = -ETIMEDOUT;
		break;
	default:
		break;
	}
	if (ib && ev->term_etype) {
		ev->term_layer = RNICPI_TERM_LAYER_IBA;
		ev->term_remote = 1;
	} else {
		ev->term_etype = 0;
	}
	ev->status = *status;
}

static void cm_break_run(void *arg)
{
	struct verbs_dev *vd = arg;

	g_mutex_lock(&vd->cm_lock);
	while (vd->cm_breaks->len) {
		uint32_t n = g_array_index(vd->cm_breaks, uint32_t, 0);
		struct rnicpi_async_event ev;
		struct rdma_cm_id *id;
		struct verbs_qp *q;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		g_array_remove_index(vd->cm_breaks, 0);
		q = g_hash_table_lookup(vd->cm_qps, GUINT_TO_POINTER(n));
		/* Gone, closed, or a new QP of the same number since */
		if (!q || !q->cm_id || !q->cm_established ||
		    q->cm_break_wc == IBV_WC_SUCCESS)
			continue;
		/* verbs_cm_qp_release waits while the QP is cm_busy */
		vd->cm_busy = q;
		id = q->cm_id;
		wc_break_event(vd, q, q->cm_break_wc, &ev, &q->cm_broken);
		q->cm_break_wc = IBV_WC_SUCCESS;
		g_mutex_unlock(&vd->cm_lock);
		g_info("%s: QP %u: a completion in error (%s): the connection breaks",
		       vd->rdev.name, n, g_strerror(-ev.status));
		if (vd->rdev.core && vd->rdev.core->async_event)
			vd->rdev.core->async_event(&vd->rdev, &ev);
		ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
		rdma_disconnect(id);
		g_mutex_lock(&vd->cm_lock);
		vd->cm_busy = NULL;
		g_cond_broadcast(&vd->cm_cond);
	}
	g_mutex_unlock(&vd->cm_lock);
}

void verbs_cm_wc_error(struct verbs_dev *vd, uint32_t qp_num,
		       enum ibv_wc_status status)
{
	struct verbs_qp *q;
	bool arm = false;

	if (!vd->cm_ch || status == IBV_WC_SUCCESS ||
	    status == IBV_WC_WR_FLUSH_ERR)
		return;
	g_mutex_lock(&vd->cm_lock);
	q = g_hash_table_lookup(vd->cm_qps, GUINT_TO_POINTER(qp_num));
	if (q && q->cm_established && !q->cm_broken &&
	    q->cm_break_wc == IBV_WC_SUCCESS) {
		q->cm_break_wc = status;
		g_array_append_val(vd->cm_breaks, qp_num);
		arm = true;
	}
	g_mutex_unlock(&vd->cm_lock);
	if (arm)
		rnicpi_timer_arm(&vd->engine, &vd->cm_break_timer, 0);
}
