/* SPDX-License-Identifier: MIT */
/*
 * cm_conn.c - the connection of one QP (struct cm_id): connect, accept,
 * reject, disconnect, destroy, the provider's connection events that move
 * it, and socket conversion. States (cm_id_state):
 *
 *   IDLE -> SOCKET (transport's TCP phase) -> PROVIDER (MPA) -> ESTABLISHED
 *   IDLE -> ACCEPTING (passive, after conn_accept) -> ESTABLISHED
 *   ESTABLISHED -> CLOSING (orderly close) -> CLOSED
 *   any set-up state -> CLOSED (failure, abandon)
 *
 * Locking as in cm.c: states under cm->lock, callbacks under cb_lock only.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_private.h"
#include "cm/ib_mad.h"

/* ------------------------------------------------------------------ */
/* Connections (struct cm_id)                                          */
/* ------------------------------------------------------------------ */

static struct cm_id *cm_id_new(struct cm *cm, const struct cm_transport *tp,
			       struct ual_qp *qp, bool active,
			       const struct cm_param *param,
			       cm_event_fn fn, void *user_data)
{
	struct cm_id *id = g_new0(struct cm_id, 1);
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));

	id->ref = 1;
	id->cm = cm;
	id->tp = tp;
	id->qp = ual_qp_get(qp);
	id->rqp = ual_qp_rnicpi(qp);
	id->dev = ual_device_get(d);
	id->active = active;
	id->fn = fn;
	id->user_data = user_data;
	id->sockfd = -1;
	g_rec_mutex_init(&id->cb_lock);
	g_cond_init(&id->cond);
	if (param) {
		id->param = *param;
		if (param->private_data_len)
			memcpy(id->pdata, param->private_data,
			       MIN(param->private_data_len,
				   (uint32_t)sizeof(id->pdata)));
		id->param.private_data_len =
			MIN(param->private_data_len, (uint32_t)sizeof(id->pdata));
		id->param.private_data = id->pdata;
	}
	if (!id->param.timeout_ms)
		id->param.timeout_ms = cm->timeout_ms;
	snprintf(id->prefix, sizeof(id->prefix), "CONN[QP %u] %s:",
		 ual_qp_num(qp), ual_device_name(d));
	return id;
}

void cm_id_deliver(struct cm_id *id, struct cm_event *ev)
{
	ev->device = id->dev;
	ev->port_num = 1;
	if (!ev->req_id)
		ev->req_id = id->req_id;
	if (ev->local_addr.ss_family == AF_UNSPEC)
		ev->local_addr = id->local_addr;
	if (ev->remote_addr.ss_family == AF_UNSPEC)
		ev->remote_addr = id->remote_addr;
	g_mutex_lock(&id->cm->lock);
	if (id->converting && ev->type != CM_EV_ESTABLISHED &&
	    !(id->convert_done && id->convert_err == 0)) {
		g_mutex_unlock(&id->cm->lock);
		cm_debug(id, "%s (status %d) goes to the converting caller",
			 cm_event_name(ev->type), ev->status);
		return;
	}
	g_mutex_unlock(&id->cm->lock);
	cm_debug(id, "%s (status %d)", cm_event_name(ev->type),
		 ev->status);
	g_rec_mutex_lock(&id->cb_lock);
	if (!id->dead && id->fn)
		id->fn(ev, id->user_data);
	g_rec_mutex_unlock(&id->cb_lock);
}

void cm_id_set_state(struct cm_id *id, enum cm_id_state s)
{
	g_mutex_lock(&id->cm->lock);
	cm_debug(id, "%s -> %s", cm_id_state_name(id->state),
		 cm_id_state_name(s));
	id->state = s;
	g_mutex_unlock(&id->cm->lock);
}

/* A waiting socket conversion learns the outcome. */
static void cm_id_convert_done(struct cm_id *id, int err)
{
	g_mutex_lock(&id->cm->lock);
	if (!id->convert_done) {
		id->convert_done = true;
		id->convert_err = err;
		g_cond_broadcast(&id->cond);
	}
	g_mutex_unlock(&id->cm->lock);
}

void cm_id_report_failure(struct cm_id *id, int status)
{
	struct cm_event ev = {
		.type = id->active ? CM_EV_UNREACHABLE : CM_EV_BROKEN,
		.status = status,
	};

	g_mutex_lock(&id->cm->lock);
	if (id->state == CM_ID_CLOSED) {
		g_mutex_unlock(&id->cm->lock);
		return;
	}
	id->state = CM_ID_CLOSED;
	g_mutex_unlock(&id->cm->lock);
	cm_info(id, "connection set-up failed: %s", g_strerror(-status));
	cm_id_convert_done(id, status);
	cm_id_deliver(id, &ev);
}

static int cm_id_register(struct cm *cm, struct cm_id *id)
{
	g_mutex_lock(&cm->lock);
	if (g_hash_table_contains(cm->ids, id->rqp)) {
		g_mutex_unlock(&cm->lock);
		cm_info(id, "the QP already has a connection");
		return -EBUSY;
	}
	g_hash_table_insert(cm->ids, id->rqp, cm_id_ref(id));
	g_mutex_unlock(&cm->lock);
	return 0;
}

/* Drop @id from the table (if it is still there). */
static void cm_id_unregister(struct cm *cm, struct cm_id *id)
{
	bool had;

	g_mutex_lock(&cm->lock);
	had = g_hash_table_lookup(cm->ids, id->rqp) == id;
	if (had)
		g_hash_table_remove(cm->ids, id->rqp);
	g_mutex_unlock(&cm->lock);
	if (had)
		cm_id_unref(id);
}

static int qp_move(struct cm_id *id, enum rnicpi_qp_state s)
{
	struct rnicpi_qp_attr attr = { .qp_state = s };
	int err = ual_qp_modify(id->qp, &attr, RNICPI_QP_STATE);

	if (err)
		cm_info(id, "moving the QP to state %d: %s", s,
			g_strerror(-err));
	return err;
}

/*
 * The orderly close's first step, the QP to CLOSING: 0 when it went,
 * 1 when the connection had ended already (the peer closed first: its
 * FIN read, the QP in ERR, the provider's DISCONNECTED on its way here,
 * which ends @id as a close of ours would), or -errno.
 */
static int qp_start_close(struct cm_id *id)
{
	struct rnicpi_qp_attr attr = { .qp_state = RNICPI_QPS_CLOSING };
	int err = ual_qp_try_modify(id->qp, &attr, RNICPI_QP_STATE);
	struct rnicpi_qp_attr now = { 0 };

	if (!err)
		return 0;
	if (ual_qp_query(id->qp, &now, RNICPI_QP_STATE) == 0 &&
	    now.qp_state == RNICPI_QPS_ERR) {
		cm_debug(id, "orderly disconnect: the connection ended meanwhile");
		return 1;
	}
	cm_info(id, "moving the QP to CLOSING: %s", g_strerror(-err));
	return err;
}

static gboolean cm_close_timeout(gpointer data)
{
	struct cm_id *id = data;
	bool stuck;

	g_mutex_lock(&id->cm->lock);
	stuck = id->state == CM_ID_CLOSING;
	g_mutex_unlock(&id->cm->lock);
	if (stuck) {
		cm_info(id, "orderly close not finished after %u ms; aborting",
			id->param.timeout_ms);
		qp_move(id, RNICPI_QPS_ERR);
	}
	return G_SOURCE_REMOVE;
}

/* cm_connect and cm_connect_service: @sid 0 connects to @port. */
static int connect_start(struct cm *cm, struct ual_qp *qp,
			 const struct sockaddr *dst, uint16_t port,
			 uint64_t sid, const struct sockaddr *src,
			 const struct cm_param *param, cm_event_fn fn,
			 void *user_data, struct cm_id **out)
{
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));
	const struct cm_transport *tp = cm_transport_of(d);
	struct cm_id *id;
	char buf[64];
	int err;

	if (!tp)
		return -EOPNOTSUPP;
	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (param && param->three_way && !tp->confirm) {
		g_info("%s: three-way set-up: the %s transport has no step for the active side's acceptance",
		       ual_device_name(d), tp->name);
		return -EOPNOTSUPP;
	}
	if (sid && tp == &cm_iwarp_transport) {
		g_info("%s: service ID 0x%016" PRIx64 ": iWARP connects to ports",
		       ual_device_name(d), sid);
		return -EOPNOTSUPP;
	}
	/* A plain IB CM service ID leaves the consumer the whole REQ. */
	if (param && sid && !ib_cma_ps_of(sid) &&
	    param->private_data_len > IB_CM_REQ_PDATA) {
		g_info("%s: connect with %u bytes of private data; a REQ carries %u",
		       ual_device_name(d), param->private_data_len,
		       IB_CM_REQ_PDATA);
		return -EMSGSIZE;
	}
	if (param && !(sid && !ib_cma_ps_of(sid)) &&
	    param->private_data_len >
		    tp->max_private_data(d, CM_PDATA_CONNECT)) {
		g_info("%s: connect with %u bytes of private data; the transport carries %u",
		       ual_device_name(d), param->private_data_len,
		       tp->max_private_data(d, CM_PDATA_CONNECT));
		return -EMSGSIZE;
	}
	id = cm_id_new(cm, tp, qp, true, param, fn, user_data);
	memcpy(&id->remote_addr, dst,
	       dst->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
					   sizeof(struct sockaddr_in6));
	if (src)
		memcpy(&id->local_addr, src,
		       src->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
						   sizeof(struct sockaddr_in6));
	id->port = port;
	id->sid = sid;
	err = cm_id_register(cm, id);
	if (err) {
		cm_id_unref(id);
		return err;
	}
	cm_debug(id, "connecting to %s port %u",
		 cm_sockaddr_str(dst, buf, sizeof(buf)), port);
	err = tp->connect(cm, id);
	if (err) {
		cm_info(id, "connect to %s port %u: %s",
			cm_sockaddr_str(dst, buf, sizeof(buf)), port,
			g_strerror(-err));
		cm_id_unregister(cm, id);
		g_mutex_lock(&cm->lock);
		id->state = CM_ID_CLOSED;
		g_mutex_unlock(&cm->lock);
		cm_id_unref(id);
		return err;
	}
	*out = id;
	return 0;
}

int cm_connect(struct ual_qp *qp, const struct sockaddr *dst, uint16_t port,
	       const struct sockaddr *src, const struct cm_param *param,
	       cm_event_fn fn, void *user_data, struct cm_id **out)
{
	struct cm *cm = cm_running(__func__);

	return cm ? connect_start(cm, qp, dst, port, 0, src, param, fn,
				  user_data, out) :
		    -ENOTCONN;
}

int cm_connect_service(struct ual_qp *qp, const struct sockaddr *dst,
		       uint64_t service_id, const struct sockaddr *src,
		       const struct cm_param *param, cm_event_fn fn,
		       void *user_data, struct cm_id **out)
{
	struct cm *cm = cm_running(__func__);

	if (!service_id)
		return -EINVAL;
	return cm ? connect_start(cm, qp, dst, 0, service_id, src, param, fn,
				  user_data, out) :
		    -ENOTCONN;
}

int cm_accept(uint64_t req_id, struct ual_qp *qp, const struct cm_param *param,
	      cm_event_fn fn, void *user_data, struct cm_id **out)
{
	struct cm *cm = cm_running(__func__);
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));
	struct rnicpi_conn_param rp;
	struct cm_req *req;
	struct cm_id *id;
	int err;

	if (!cm)
		return -ENOTCONN;

	g_mutex_lock(&cm->lock);
	req = g_hash_table_lookup(cm->reqs, &req_id);
	if (!req || req->state != CM_REQ_REPORTED) {
		g_mutex_unlock(&cm->lock);
		g_info("cm: accept: no pending request %" PRIu64, req_id);
		return -ENOENT;
	}
	if (req->dev != d) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "accept with a QP of %s: the request came to %s",
			ual_device_name(d), ual_device_name(req->dev));
		return -EXDEV;
	}
	if (param && param->private_data_len >
			     cm_transport_of(d)->max_private_data(
				     d, CM_PDATA_ACCEPT)) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "accept with %u bytes of private data: too many",
			param->private_data_len);
		return -EMSGSIZE;
	}
	id = cm_id_new(cm, cm_transport_of(d), qp, false, param, fn,
		       user_data);
	if (g_hash_table_contains(cm->ids, id->rqp)) {
		g_mutex_unlock(&cm->lock);
		cm_info(id, "accept: the QP already has a connection");
		cm_id_unref(id);
		return -EBUSY;
	}
	req->state = CM_REQ_ANSWERED;
	g_hash_table_steal(cm->reqs, &req_id);
	id->req_id = req_id;
	id->local_addr = req->local_addr;
	id->remote_addr = req->remote_addr;
	id->port = req->port;
	id->state = CM_ID_ACCEPTING;
	g_hash_table_insert(cm->ids, id->rqp, cm_id_ref(id));
	g_mutex_unlock(&cm->lock);

	cm_to_rnicpi_param(&id->param, &rp);
	if (id->tp->accept)
		err = id->tp->accept(cm, req->conn, id);
	else
		err = ual_qp_conn_accept(id->qp, req->conn, &rp);
	if (err == -ECONNRESET) {
		/* The peer gave up on the request before this answer (a
		 * native CM's REJ or close on the request; siw's MPA time-out
		 * on the initiator): the accept is taken, the endpoint's
		 * connection breaks at once (IT_CM_MSG_CONN_BROKEN_EVENT). */
		cm_info(id, "request %" PRIu64 ": the peer gave up before the accept",
			req_id);
		cm_id_report_failure(id, err);
		cm_req_unref(req);
		*out = id;
		return 0;
	}
	if (err) {
		cm_info(id, "conn_accept of request %" PRIu64 ": %s", req_id,
			g_strerror(-err));
		cm_id_unregister(cm, id);
		g_mutex_lock(&cm->lock);
		id->state = CM_ID_CLOSED;
		g_mutex_unlock(&cm->lock);
		cm_id_unref(id);
		cm_req_unref(req);
		return err;
	}
	cm_debug(id, "accepted request %" PRIu64, req_id);
	cm_req_unref(req);
	*out = id;
	return 0;
}

int cm_reject(uint64_t req_id, const void *private_data,
	      uint32_t private_data_len)
{
	struct cm *cm = cm_running(__func__);

	return cm ? cm_req_reject(cm, req_id, private_data, private_data_len) :
		    -ENOTCONN;
}

int cm_req_reject(struct cm *cm, uint64_t req_id, const void *private_data,
		  uint32_t private_data_len)
{
	struct cm_req *req;

	g_mutex_lock(&cm->lock);
	req = g_hash_table_lookup(cm->reqs, &req_id);
	if (!req || req->state != CM_REQ_REPORTED) {
		g_mutex_unlock(&cm->lock);
		g_info("cm: reject: no pending request %" PRIu64, req_id);
		return -ENOENT;
	}
	if (private_data_len > cm_transport_of(req->dev)->max_private_data(
				       req->dev, CM_PDATA_REJECT)) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "reject with %u bytes of private data: too many",
			private_data_len);
		return -EMSGSIZE;
	}
	req->state = CM_REQ_ANSWERED;
	g_hash_table_steal(cm->reqs, &req_id);
	g_mutex_unlock(&cm->lock);
	cm_debug(req, "rejected, %u bytes of private data", private_data_len);
	cm_provider_conn_reject(req->dev, req->conn, private_data,
			     private_data_len);
	cm_req_unref(req);
	return 0;
}

int cm_disconnect_pdata(struct cm_id *id, const void *pdata, uint32_t len)
{
	struct cm *cm = id->cm;

	if (len > id->tp->max_private_data(id->dev, CM_PDATA_DISCONNECT) ||
	    len > sizeof(id->disc_pdata)) {
		cm_info(id, "disconnect with %u bytes of private data: too many",
			len);
		return -EMSGSIZE;
	}
	g_mutex_lock(&cm->lock);
	if (len)
		memcpy(id->disc_pdata, pdata, len);
	id->disc_pdata_len = len;
	g_mutex_unlock(&cm->lock);
	return cm_disconnect(id, false);
}

int cm_disconnect(struct cm_id *id, bool abortive)
{
	struct cm *cm = id->cm;
	struct cm_event ev = {
		.type = CM_EV_DISCONNECTED, .status = -ECANCELED,
	};
	enum cm_id_state was;
	int err;

	g_mutex_lock(&cm->lock);
	was = id->state;
	switch (was) {
	case CM_ID_ESTABLISHED:
		id->state = CM_ID_CLOSING;
		break;
	case CM_ID_CLOSING:
		if (!abortive) {
			g_mutex_unlock(&cm->lock);
			return 0;
		}
		break;
	case CM_ID_SOCKET:
	case CM_ID_PROVIDER:
	case CM_ID_ACCEPTING:
		id->state = CM_ID_CLOSED;
		break;
	default:
		g_mutex_unlock(&cm->lock);
		cm_info(id, "disconnect in state %s: not connected",
			cm_id_state_name(was));
		return -ENOTCONN;
	}
	g_mutex_unlock(&cm->lock);
	cm_debug(id, "%s disconnect in state %s",
		 abortive ? "abortive" : "orderly", cm_id_state_name(was));

	switch (was) {
	case CM_ID_ESTABLISHED:
	case CM_ID_CLOSING:
		if (id->tp->disconnect)
			return id->tp->disconnect(cm, id, abortive);
		if (abortive)
			return qp_move(id, RNICPI_QPS_ERR);
		err = qp_start_close(id);
		if (err > 0)
			return 0;
		if (err)
			return qp_move(id, RNICPI_QPS_ERR);
		g_mutex_lock(&cm->lock);
		cm_source_drop(&id->timer);
		/* Not if the owner destroyed @id meanwhile (a caller holding
		 * a reference of its own, cm.h): its destroy dropped the
		 * timers, and a new one would outlive it. */
		if (id->state == CM_ID_CLOSING)
			id->timer = cm_timeout_add(cm, id->param.timeout_ms,
						   cm_close_timeout,
						   cm_id_ref(id),
						   (GDestroyNotify)cm_id_unref);
		g_mutex_unlock(&cm->lock);
		return 0;
	case CM_ID_SOCKET:
		id->tp->cancel(cm, id);
		break;
	default:
		if (id->tp->release)
			id->tp->release(cm, id, was);
		qp_move(id, RNICPI_QPS_ERR);
		break;
	}
	/* A set-up abandoned by the consumer: report it as ended. */
	cm_id_convert_done(id, -ECANCELED);
	cm_id_deliver(id, &ev);
	return 0;
}

void cm_id_destroy(struct cm_id *id)
{
	struct cm *cm;
	enum cm_id_state was;

	if (!id)
		return;
	cm = id->cm;
	g_mutex_lock(&cm->lock);
	was = id->state;
	id->state = CM_ID_CLOSED;
	cm_source_drop(&id->timer);
	g_mutex_unlock(&cm->lock);
	cm_id_unregister(cm, id);

	g_rec_mutex_lock(&id->cb_lock);
	id->dead = true;
	g_rec_mutex_unlock(&id->cb_lock);

	switch (was) {
	case CM_ID_SOCKET:
		id->tp->cancel(cm, id);
		break;
	case CM_ID_PROVIDER:
	case CM_ID_ACCEPTING:
	case CM_ID_ESTABLISHED:
	case CM_ID_CLOSING:
		qp_move(id, RNICPI_QPS_ERR);
		break;
	default:
		break;
	}
	if (id->tp->release)
		id->tp->release(cm, id, was);
	cm_debug(id, "destroyed in state %s", cm_id_state_name(was));
	cm_id_unref(id);
}

void cm_conn_event(struct ual_device *d, const struct rnicpi_conn_event *ev,
		   void *user_data)
{
	struct cm *cm = user_data;
	struct cm_id *id;

	if (ev->type == RNICPI_CONN_SIDR_REQUEST ||
	    ev->type == RNICPI_CONN_SIDR_REPLY) {
		if (ual_device_caps(d) & RNICPI_DEV_CAP_NATIVE_SIDR)
			cm_native_sidr_event(cm, d, ev);
		return;
	}
	if (ev->conn && (ev->type == RNICPI_CONN_REQUEST ||
			 (ev->type == RNICPI_CONN_ERROR && !ev->qp))) {
		if (ual_device_caps(d) & RNICPI_DEV_CAP_NATIVE_CM)
			cm_native_conn_event(cm, d, ev);
		else
			cm_req_provider_event(cm, ev);
		return;
	}
	if (!ev->qp) {
		g_info("%s: connection event %d without a QP; dropped",
		       ual_device_name(d), ev->type);
		return;
	}
	/* ev->qp is the provider's, alive until its upcall returns: a
	 * provider's destroy_qp waits out a delivery under way and drops
	 * the QP's queued events (siw_destroy_qp). The IB CM, which is no
	 * provider and cannot promise that, reports through
	 * cm_id_conn_event instead. */
	g_mutex_lock(&cm->lock);
	id = g_hash_table_lookup(cm->ids, ev->qp);
	if (id)
		cm_id_ref(id);
	g_mutex_unlock(&cm->lock);
	if (!id) {
		g_debug("%s: connection event %d for QP %u, which has no connection here",
			ual_device_name(d), ev->type, ev->qp->qp_num);
		return;
	}
	cm_id_conn_event(id, ev);
	cm_id_unref(id);
}

void cm_id_conn_event(struct cm_id *id, const struct rnicpi_conn_event *ev)
{
	struct cm *cm = id->cm;
	struct cm_event out = { 0 };
	enum cm_id_state was;

	g_mutex_lock(&cm->lock);
	was = id->state;
	cm_copy_peer_addrs(&id->local_addr, &id->remote_addr, ev);
	switch (ev->type) {
	case RNICPI_CONN_ESTABLISHED:
		if (was != CM_ID_PROVIDER && was != CM_ID_ACCEPTING)
			goto stale;
		id->state = CM_ID_ESTABLISHED;
		out.type = CM_EV_ESTABLISHED;
		break;
	case RNICPI_CONN_REJECTED:
		/* Passive side: the active consumer refused our REP
		 * (three-way set-up). */
		if (was != CM_ID_PROVIDER && was != CM_ID_ACCEPTING)
			goto stale;
		id->state = CM_ID_CLOSED;
		out.type = CM_EV_REJECTED;
		out.status = -ECONNREFUSED;
		break;
	case RNICPI_CONN_ERROR:
		if (was != CM_ID_PROVIDER && was != CM_ID_ACCEPTING)
			goto stale;
		id->state = CM_ID_CLOSED;
		out.type = id->active ? CM_EV_UNREACHABLE :
					CM_EV_BROKEN;
		out.status = ev->status ? ev->status : -ECONNABORTED;
		break;
	case RNICPI_CONN_DISCONNECTED:
		if (was != CM_ID_ESTABLISHED && was != CM_ID_CLOSING)
			goto stale;
		id->state = CM_ID_CLOSED;
		cm_source_drop(&id->timer);
		out.type = ev->status ? CM_EV_BROKEN :
					CM_EV_DISCONNECTED;
		out.status = ev->status;
		break;
	default:
		goto stale;
	}
	g_mutex_unlock(&cm->lock);
	out.private_data = ev->private_data;
	out.private_data_len = ev->private_data_len;
	out.ird = ev->ird;
	out.ord = ev->ord;
	if (out.type == CM_EV_ESTABLISHED) {
		/* Delivered before a converting caller returns, so that
		 * its endpoint is connected when it_socket_convert is. */
		cm_id_deliver(id, &out);
		cm_id_convert_done(id, 0);
	} else {
		if (out.type != CM_EV_DISCONNECTED)
			cm_id_convert_done(id, out.status);
		cm_id_deliver(id, &out);
	}
	return;

stale:
	g_mutex_unlock(&cm->lock);
	cm_debug(id, "connection event %d in state %s ignored", ev->type,
		 cm_id_state_name(was));
}

static int confirm(struct cm_id *id, bool ok, const void *pdata,
		   uint32_t len)
{
	struct cm *cm;
	int err;

	if (!id)
		return -EINVAL;
	cm = id->cm;
	if (!id->active || !id->param.three_way || !id->tp->confirm) {
		cm_info(id, "%s: not a three-way set-up",
			ok ? "confirm" : "refuse");
		return -EINVAL;
	}
	if (len && !pdata)
		return -EFAULT;
	err = id->tp->confirm(cm, id, ok, pdata, len);
	if (err)
		cm_info(id, "%s: %s", ok ? "confirm" : "refuse",
			g_strerror(-err));
	return err;
}

int cm_confirm(struct cm_id *id, const void *pdata, uint32_t len)
{
	return confirm(id, true, pdata, len);
}

int cm_refuse(struct cm_id *id, const void *pdata, uint32_t len)
{
	return confirm(id, false, pdata, len);
}

/* ------------------------------------------------------------------ */
/* Socket conversion                                                   */
/* ------------------------------------------------------------------ */

int cm_socket_convert(struct ual_qp *qp, int sockfd,
		      const struct cm_param *param, cm_event_fn fn,
		      void *user_data, struct cm_id **out)
{
	struct cm *cm = cm_running(__func__);
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));
	const struct cm_transport *tp = cm_transport_of(d);
	struct cm_id *id;
	gint64 deadline;
	int err;

	if (!cm)
		return -ENOTCONN;
	if (!tp || !tp->socket_convert)
		return -EOPNOTSUPP;
	id = cm_id_new(cm, tp, qp, true, param, fn, user_data);
	id->converting = true;
	err = cm_id_register(cm, id);
	if (err) {
		cm_id_unref(id);
		return err;
	}
	err = tp->socket_convert(cm, id, sockfd);
	if (err) {
		cm_id_unregister(cm, id);
		g_mutex_lock(&cm->lock);
		id->state = CM_ID_CLOSED;
		g_mutex_unlock(&cm->lock);
		cm_id_unref(id);
		return err;
	}
	/* The provider's time-out (initiator) or the request's timer
	 * (responder) ends the MPA exchange and reports; this is a
	 * backstop in case neither does, well after both. */
	deadline = g_get_monotonic_time() +
		   ((gint64)id->param.timeout_ms * 2 + CM_REQ_GRACE_MS) *
			   G_TIME_SPAN_MILLISECOND;
	g_mutex_lock(&cm->lock);
	while (!id->convert_done)
		if (!g_cond_wait_until(&id->cond, &cm->lock, deadline))
			break;
	err = id->convert_done ? id->convert_err : -ETIMEDOUT;
	g_mutex_unlock(&cm->lock);
	if (err) {
		cm_info(id, "socket conversion failed: %s", g_strerror(-err));
		cm_id_destroy(id);
		return err;
	}
	*out = id;
	return 0;
}
