/* SPDX-License-Identifier: MIT */
/*
 * cm_req.c - listeners and connection requests. A request lives from the
 * transport's hand-over to the provider until the consumer answers it (or
 * the peer or a time-out ends it), named by a 64-bit id the consumer hands
 * back to accept, reject or hand off. States (cm_req_state):
 *
 *   READING (the provider reads the peer's request) -> REPORTED (the
 *   consumer has it) -> ANSWERED; READING/REPORTED -> FAILED
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

/* ------------------------------------------------------------------ */
/* Listeners and requests                                              */
/* ------------------------------------------------------------------ */

struct cm_listen *cm_listen_find_locked(struct cm *cm, struct ual_device *dev,
					uint8_t port_num, uint16_t port)
{
	for (guint i = 0; i < cm->listens->len; i++) {
		struct cm_listen *l = cm->listens->pdata[i];

		if (l->dev == dev && l->port_num == port_num &&
		    l->port == port)
			return cm_listen_ref(l);
	}
	return NULL;
}

struct cm_listen *cm_listen_find_sid_locked(struct cm *cm,
					    struct ual_device *dev,
					    uint8_t port_num, uint64_t sid)
{
	for (guint i = 0; i < cm->listens->len; i++) {
		struct cm_listen *l = cm->listens->pdata[i];

		if (l->dev == dev && l->port_num == port_num && l->sid == sid)
			return cm_listen_ref(l);
	}
	return NULL;
}

/* cm_listen and cm_listen_service: @sid 0 listens on *@port. */
bool cm_listen_takes(const struct cm_listen *l,
		     const struct sockaddr_storage *remote)
{
	uint16_t port = 0;

	if (!l->remote_port)
		return true;
	if (remote->ss_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)(const void *)remote)
				     ->sin_port);
	else if (remote->ss_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)(const void *)
				      remote)->sin6_port);
	return port == l->remote_port;
}

static int listen_start(struct cm *cm, struct ual_device *d,
			uint8_t port_num, uint16_t *port, uint64_t sid,
			uint16_t remote_port, cm_event_fn fn,
			void *user_data, struct cm_listen **out)
{
	const struct cm_transport *tp = cm_transport_of(d);
	struct cm_listen *l, *other;
	int err;

	if (!tp)
		return -EOPNOTSUPP;
	if (sid && tp == &cm_iwarp_transport) {
		g_info("%s: service ID 0x%016" PRIx64 ": iWARP listens on ports",
		       ual_device_name(d), sid);
		return -EOPNOTSUPP;
	}
	l = g_new0(struct cm_listen, 1);
	l->ref = 1;
	l->cm = cm;
	l->tp = tp;
	l->dev = ual_device_get(d);
	l->port_num = port_num;
	l->port = *port;
	l->sid = sid;
	l->remote_port = remote_port;
	l->fn = fn;
	l->user_data = user_data;
	g_rec_mutex_init(&l->cb_lock);

	g_mutex_lock(&cm->claim_lock);
	g_mutex_lock(&cm->lock);
	if (sid) {
		other = cm_listen_find_sid_locked(cm, d, port_num, sid);
		if (other) {
			g_mutex_unlock(&cm->lock);
			g_mutex_unlock(&cm->claim_lock);
			cm_listen_unref(other);
			g_info("%s: service ID 0x%016" PRIx64 " already has a listener in this process",
			       ual_device_name(d), sid);
			cm_listen_unref(l);
			return -EADDRINUSE;
		}
	} else if (*port) {
		other = cm_listen_find_locked(cm, d, port_num, *port);
		if (other) {
			g_mutex_unlock(&cm->lock);
			g_mutex_unlock(&cm->claim_lock);
			cm_listen_unref(other);
			g_info("%s: port %u already has a listener in this process",
			       ual_device_name(d), *port);
			cm_listen_unref(l);
			return -EADDRINUSE;
		}
	}
	err = tp->listen(cm, l);
	if (err) {
		g_mutex_unlock(&cm->lock);
		g_mutex_unlock(&cm->claim_lock);
		cm_listen_unref(l);
		return err;
	}
	if (l->sid && !l->port)
		snprintf(l->prefix, sizeof(l->prefix),
			 "LISTEN[0x%" PRIx64 "] %s:", l->sid,
			 ual_device_name(d));
	else
		snprintf(l->prefix, sizeof(l->prefix), "LISTEN[%u] %s:",
			 l->port, ual_device_name(d));
	g_ptr_array_add(cm->listens, cm_listen_ref(l));
	g_mutex_unlock(&cm->lock);
	/* Listed before it is claimed: a request the claim brings finds
	 * it. A claim that fails takes it off the list again. */
	err = tp->claim ? tp->claim(cm, l) : 0;
	if (err) {
		g_mutex_lock(&cm->lock);
		if (g_ptr_array_remove(cm->listens, l)) {
			if (tp->unlisten)
				tp->unlisten(cm, l);
			cm_listen_unref(l);
		}
		g_mutex_unlock(&cm->lock);
		g_mutex_unlock(&cm->claim_lock);
		/* A request that found it while listed is refused, not
		 * reported to a caller that is told the listen failed. */
		g_rec_mutex_lock(&l->cb_lock);
		l->dead = true;
		g_rec_mutex_unlock(&l->cb_lock);
		cm_listen_unref(l);
		return err;
	}
	g_mutex_unlock(&cm->claim_lock);
	cm_debug(l, "listening");
	*port = l->port;
	*out = l;
	return 0;
}

int cm_listen(struct ual_device *d, uint8_t port_num, uint16_t *port,
	      cm_event_fn fn, void *user_data, struct cm_listen **out)
{
	struct cm *cm = cm_running(__func__);

	return cm ? listen_start(cm, d, port_num, port, 0, 0, fn, user_data,
				 out) :
		    -ENOTCONN;
}

int cm_listen_from(struct ual_device *d, uint8_t port_num, uint16_t *port,
		   uint16_t remote_port, cm_event_fn fn, void *user_data,
		   struct cm_listen **out)
{
	struct cm *cm = cm_running(__func__);

	if (!remote_port)
		return -EINVAL;
	return cm ? listen_start(cm, d, port_num, port, 0, remote_port, fn,
				 user_data, out) :
		    -ENOTCONN;
}

int cm_listen_service(struct ual_device *d, uint8_t port_num,
		      uint64_t service_id, cm_event_fn fn, void *user_data,
		      struct cm_listen **out)
{
	struct cm *cm = cm_running(__func__);
	uint16_t port = 0;

	return cm ? listen_start(cm, d, port_num, &port, service_id, 0, fn,
				 user_data, out) :
		    -ENOTCONN;
}

void cm_listen_destroy(struct cm_listen *l)
{
	struct cm *cm;
	bool listed;

	if (!l)
		return;
	cm = l->cm;
	g_mutex_lock(&cm->claim_lock);
	g_mutex_lock(&cm->lock);
	listed = g_ptr_array_remove(cm->listens, l);
	if (listed && l->tp->unlisten)
		l->tp->unlisten(cm, l);
	g_mutex_unlock(&cm->lock);
	if (listed) {
		if (l->tp->unclaim)
			l->tp->unclaim(cm, l);
		cm_listen_unref(l);
	}
	g_mutex_unlock(&cm->claim_lock);
	g_rec_mutex_lock(&l->cb_lock);
	l->dead = true;
	g_rec_mutex_unlock(&l->cb_lock);
	cm_debug(l, "closed");
	cm_listen_unref(l);
}

static gboolean cm_req_timeout(gpointer data);
static void req_event_locked(struct cm *cm, struct cm_req *req,
			     const struct rnicpi_conn_event *ev);

/* (Re)start @req's time-out: @ms from now. Under cm->lock. */
static void req_arm_locked(struct cm_req *req, uint32_t ms)
{
	cm_source_drop(&req->timer);
	req->timeout_ms = ms;
	req->timer = cm_timeout_add(req->cm, ms, cm_req_timeout,
				    cm_req_ref(req),
				    (GDestroyNotify)cm_req_unref);
}

struct cm_req *cm_req_new(struct cm *cm, struct cm_listen *l,
			  struct ual_device *dev,
			  const struct sockaddr_storage *local,
			  const struct sockaddr_storage *remote)
{
	struct cm_req *req = g_new0(struct cm_req, 1);
	char buf[64];

	req->ref = 1;
	req->cm = cm;
	g_rec_mutex_init(&req->answer_lock);
	req->dev = ual_device_get(dev);
	req->port_num = 1;
	req->listen = l ? cm_listen_ref(l) : NULL;
	req->port = l ? l->port : 0;
	req->state = CM_REQ_READING;
	req->local_addr = *local;
	req->remote_addr = *remote;
	g_mutex_lock(&cm->lock);
	req->id = cm->next_req_id++;
	snprintf(req->prefix, sizeof(req->prefix), "REQ[%" PRIu64 "] %s:",
		 req->id, ual_device_name(dev));
	g_hash_table_insert(cm->reqs, &req->id, cm_req_ref(req));
	req_arm_locked(req, cm->timeout_ms + CM_REQ_GRACE_MS);
	g_mutex_unlock(&cm->lock);
	cm_debug(req, "from %s",
		 cm_sockaddr_str((const void *)remote, buf, sizeof(buf)));
	return req;
}

void cm_req_set_timeout(struct cm_req *req, uint32_t ms)
{
	g_mutex_lock(&req->cm->lock);
	if (req->state == CM_REQ_READING)
		req_arm_locked(req, ms);
	g_mutex_unlock(&req->cm->lock);
}

/* Take @req out of the table (under cm->lock); true if it was there. */
static bool req_unlink_locked(struct cm *cm, struct cm_req *req)
{
	if (g_hash_table_lookup(cm->reqs, &req->id) != req)
		return false;
	g_hash_table_steal(cm->reqs, &req->id);
	return true;
}

/* Refuse the conn the manager takes back from the provider (conn_taken
 * set, answer_lock held, released here): a stream still being read is
 * just closed and nothing more is reported for it (rnicpi.h). An upcall
 * already under way waits on answer_lock, then finds the request failed
 * or gone (the provider names it by id). */
static void req_refuse_taken(struct cm_req *req, struct rnicpi_conn *conn)
{
	struct cm *cm = req->cm;
	bool linked;

	cm_provider_conn_reject(req->dev, conn, NULL, 0);
	g_rec_mutex_unlock(&req->answer_lock);
	g_mutex_lock(&cm->lock);
	linked = req_unlink_locked(cm, req);
	g_mutex_unlock(&cm->lock);
	if (linked)
		cm_req_unref(req);
}

int cm_req_take(struct cm_req *req, int fd)
{
	struct cm *cm = req->cm;
	struct rnicpi_conn *conn = NULL;
	bool refuse = false;
	int err;

	g_mutex_lock(&cm->lock);
	req->handed = true;
	g_mutex_unlock(&cm->lock);
	err = ual_device_iw_take_request(req->dev, fd,
					 GSIZE_TO_POINTER((gsize)req->id),
					 &conn);
	g_rec_mutex_lock(&req->answer_lock);
	g_mutex_lock(&cm->lock);
	if (err) {
		req->handed = false;
	} else {
		if (!req->conn)
			req->conn = conn;
		/* Abandoned while the provider took it, and the provider has
		 * not reported since: the refusal falls to us. */
		if (req->state == CM_REQ_FAILED && !req->provider_said &&
		    !req->conn_taken) {
			req->conn_taken = true;
			refuse = true;
		}
	}
	g_mutex_unlock(&cm->lock);
	if (refuse)
		req_refuse_taken(req, conn);
	else
		g_rec_mutex_unlock(&req->answer_lock);
	return err;
}

void cm_req_abandon(struct cm_req *req, int status)
{
	struct cm *cm = req->cm;
	struct rnicpi_conn *conn = NULL, *taken = NULL;
	bool linked = false;

	g_rec_mutex_lock(&req->answer_lock);
	g_mutex_lock(&cm->lock);
	cm_source_drop(&req->timer);
	if (req->state == CM_REQ_REPORTED) {
		/* The provider told us of the request: refusing it is an
		 * answer, and the conn is consumed. */
		linked = req_unlink_locked(cm, req);
		conn = req->conn;
	} else if (req->state == CM_REQ_READING && req->handed) {
		/* The provider still reads the peer's request: take the conn
		 * back by refusing it (a socket conversion gets its stream
		 * back whole). Until the provider has returned it from
		 * iw_take_request, cm_req_take does that. The provider has
		 * not reported (answer_lock): the state would not be
		 * READING. */
		if (req->conn) {
			req->conn_taken = true;
			taken = req->conn;
		}
	} else {
		/* Never handed over, or already reported back: forget it. */
		linked = req_unlink_locked(cm, req);
	}
	req->state = CM_REQ_FAILED;
	g_mutex_unlock(&cm->lock);
	cm_info(req, "abandoned: %s", g_strerror(-status));
	if (conn)
		cm_provider_conn_reject(req->dev, conn, NULL, 0);
	if (taken)
		req_refuse_taken(req, taken);
	else
		g_rec_mutex_unlock(&req->answer_lock);
	if (req->convert)
		cm_id_report_failure(req->convert, status);
	if (linked)
		cm_req_unref(req);
}

/*
 * The provider reads the peer's request with its own time-out (siw:
 * mpa_timeout_ms) and reports ERROR when it expires, which ends the
 * request; this timer is the manager's bound on that, and a socket
 * conversion's own time-out: the request is failed here and the
 * provider's reading refused (cm_req_abandon).
 */
static gboolean cm_req_timeout(gpointer data)
{
	struct cm_req *req = data;
	bool reading;

	g_mutex_lock(&req->cm->lock);
	reading = req->state == CM_REQ_READING;
	g_mutex_unlock(&req->cm->lock);
	if (reading) {
		cm_info(req, "no complete connection request from the peer in %u ms",
			req->timeout_ms);
		cm_req_abandon(req, -ETIMEDOUT);
	}
	return G_SOURCE_REMOVE;
}

static void cm_req_report(struct cm_req *req, struct cm_listen *l)
{
	struct cm_event ev = {
		.type = CM_EV_REQUEST,
		.req_id = req->id,
		.private_data = req->private_data,
		.private_data_len = req->private_data_len,
		.ird = req->ird,
		.ord = req->ord,
		.local_addr = req->local_addr,
		.remote_addr = req->remote_addr,
		.device = req->dev,
		.port_num = req->port_num,
		.port = l->port,
		.service_id = l->sid,
	};

	cm_debug(req, "reported to %s", l->prefix);
	g_rec_mutex_lock(&l->cb_lock);
	if (!l->dead && l->fn) {
		l->fn(&ev, l->user_data);
		g_rec_mutex_unlock(&l->cb_lock);
		return;
	}
	g_rec_mutex_unlock(&l->cb_lock);
	cm_info(req, "the listener went away; refusing");
	cm_req_reject(req->cm, req->id, NULL, 0);
}

int cm_handoff(uint64_t req_id, uint8_t port_num, uint16_t port,
	       uint64_t service_id)
{
	struct cm *cm = cm_running(__func__);
	struct rnicpi_device_attr attr;
	struct cm_listen *l, *old;
	struct cm_req *req;

	if (!cm)
		return -ENOTCONN;

	g_mutex_lock(&cm->lock);
	req = g_hash_table_lookup(cm->reqs, &req_id);
	if (!req || req->state != CM_REQ_REPORTED || !req->listen) {
		g_mutex_unlock(&cm->lock);
		g_info("cm: handoff: no pending request %" PRIu64, req_id);
		return -ENOENT;
	}
	if (ual_device_query(req->dev, &attr) == 0 &&
	    (port_num < 1 || port_num > MAX(attr.phys_port_cnt, 1))) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "handoff to port %u: the device has %u", port_num,
			MAX(attr.phys_port_cnt, 1));
		return -ERANGE;
	}
	l = service_id ? cm_listen_find_sid_locked(cm, req->dev, port_num,
						   service_id) :
			 cm_listen_find_locked(cm, req->dev, port_num, port);
	if (!l) {
		g_mutex_unlock(&cm->lock);
		if (service_id)
			cm_info(req, "handoff: no listener on service ID 0x%" PRIx64,
				service_id);
		else
			cm_info(req, "handoff: no listener on port %u", port);
		return -ESRCH;
	}
	if (!cm_listen_takes(l, &req->remote_addr)) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "handoff: %s takes requests from port %u only",
			l->prefix, l->remote_port);
		cm_listen_unref(l);
		return -ESRCH;
	}
	old = req->listen;
	req->listen = cm_listen_ref(l);
	if (!service_id)
		req->port = port;
	cm_req_ref(req);
	g_mutex_unlock(&cm->lock);
	cm_listen_unref(old);
	cm_req_report(req, l);
	cm_listen_unref(l);
	cm_req_unref(req);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Provider connection events                                          */
/* ------------------------------------------------------------------ */

void cm_req_provider_event(struct cm *cm, const struct rnicpi_conn_event *ev)
{
	uint64_t id = (uint64_t)GPOINTER_TO_SIZE(ev->conn->core_ctx);
	struct cm_req *req;

	g_mutex_lock(&cm->lock);
	req = g_hash_table_lookup(cm->reqs, &id);
	if (req)
		cm_req_ref(req);
	g_mutex_unlock(&cm->lock);
	if (req) {
		/* Not while a refusal of ours is under way: the provider
		 * frees the conn once an ERROR upcall returns. */
		g_rec_mutex_lock(&req->answer_lock);
		g_mutex_lock(&cm->lock);
		if (g_hash_table_lookup(cm->reqs, &id) == req) {
			req_event_locked(cm, req, ev);
			g_rec_mutex_unlock(&req->answer_lock);
			cm_req_unref(req);
			return;
		}
		g_mutex_unlock(&cm->lock);
		g_rec_mutex_unlock(&req->answer_lock);
		cm_req_unref(req);
	}
	/* The manager refused the conn while this upcall was on its way. */
	g_debug("cm: %s event for request %" PRIu64 ", which is gone; dropped",
		ev->type == RNICPI_CONN_REQUEST ? "REQUEST" : "ERROR", id);
}

/* The provider read a peer's request (or failed to) on a conn of ours. */
void cm_req_event(struct cm *cm, const struct rnicpi_conn_event *ev)
{
	struct cm_req *req = ev->conn->core_ctx;

	g_mutex_lock(&cm->lock);
	if (!req || g_hash_table_lookup(cm->reqs, &req->id) != req) {
		g_mutex_unlock(&cm->lock);
		g_info("cm: %s event for a request this manager does not know; dropped",
		       ev->type == RNICPI_CONN_REQUEST ? "REQUEST" : "ERROR");
		return;
	}
	req_event_locked(cm, req, ev);
}

/* Under cm->lock, which it drops; @req is listed. */
static void req_event_locked(struct cm *cm, struct cm_req *req,
			     const struct rnicpi_conn_event *ev)
{
	struct cm_listen *l = NULL;
	struct cm_id *convert = NULL;

	/* Whatever it says, the conn is no longer the manager's to refuse
	 * in cm_req_take (an ERROR that came before iw_take_request
	 * returned has freed it). */
	req->provider_said = true;
	if (req->state == CM_REQ_FAILED) {
		/* Failed here while the provider read: end it now, refusing
		 * a request unless the manager refuses the conn already. */
		bool refuse = ev->type == RNICPI_CONN_REQUEST &&
			      !req->conn_taken;

		req_unlink_locked(cm, req);
		g_mutex_unlock(&cm->lock);
		cm_info(req, "the provider reported %s after the request failed; %s",
			ev->type == RNICPI_CONN_REQUEST ? "the request" :
							  "a failure",
			refuse ? "refusing it" : "forgotten");
		if (refuse)
			cm_provider_conn_reject(req->dev, ev->conn, NULL, 0);
		cm_req_unref(req);	/* the table's */
		return;
	}
	if (req->state != CM_REQ_READING) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "provider event %d in request state %d; dropped",
			ev->type, req->state);
		return;
	}
	cm_req_ref(req);
	req->conn = ev->conn;
	cm_source_drop(&req->timer);
	if (ev->type != RNICPI_CONN_REQUEST) {
		req_unlink_locked(cm, req);
		req->state = CM_REQ_FAILED;
		g_mutex_unlock(&cm->lock);
		cm_info(req, "the peer's request failed: %s",
			g_strerror(-ev->status));
		if (req->convert)
			cm_id_report_failure(req->convert,
					     ev->status ? ev->status : -EPROTO);
		cm_req_unref(req);	/* the table's */
		cm_req_unref(req);
		return;
	}
	cm_copy_peer_addrs(&req->local_addr, &req->remote_addr, ev);
	req->ird = ev->ird;
	req->ord = ev->ord;
	g_free(req->private_data);
	req->private_data = ev->private_data_len ?
				    g_memdup2(ev->private_data,
					      ev->private_data_len) :
				    NULL;
	req->private_data_len = ev->private_data_len;
	if (req->convert) {
		/* Socket conversion, passive side: no consumer decision. */
		req->state = CM_REQ_ANSWERED;
		req_unlink_locked(cm, req);
		convert = cm_id_ref(req->convert);
		convert->local_addr = req->local_addr;
		convert->remote_addr = req->remote_addr;
		convert->state = CM_ID_ACCEPTING;
		g_mutex_unlock(&cm->lock);
		{
			struct rnicpi_conn_param rp;
			int err;

			cm_to_rnicpi_param(&convert->param, &rp);
			err = ual_qp_conn_accept(convert->qp, ev->conn, &rp);
			if (err)
				cm_id_report_failure(convert, err);
		}
		cm_id_unref(convert);
		cm_req_unref(req);	/* the table's */
		cm_req_unref(req);
		return;
	}
	req->state = CM_REQ_REPORTED;
	if (req->listen && !req->listen->dead)
		l = cm_listen_ref(req->listen);
	g_mutex_unlock(&cm->lock);
	if (l) {
		cm_req_report(req, l);
		cm_listen_unref(l);
	} else {
		cm_info(req, "its listener is gone; refusing");
		cm_req_reject(cm, req->id, NULL, 0);
	}
	cm_req_unref(req);
}
