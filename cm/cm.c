/* SPDX-License-Identifier: MIT */
/*
 * cm.c - the process's connection manager: its thread, the request and
 * connection objects, the provider's connection events, and what every
 * transport shares (accept, reject, hand-off, disconnect, routes).
 *
 * Locking: cm->lock guards the tables and every object's state; a
 * consumer callback runs under its object's cb_lock only (a recursive
 * mutex, so the callback may destroy other objects or answer requests),
 * never under cm->lock. Provider ops are called without cm->lock, except
 * that the object's state was moved first so a racing upcall finds it.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm.h"

/* ------------------------------------------------------------------ */
/* Names and small helpers                                             */
/* ------------------------------------------------------------------ */

static const char *const cm_id_state_names[CM_ID_NSTATES] = {
	[CM_ID_IDLE] = "IDLE",
	[CM_ID_SOCKET] = "SOCKET",
	[CM_ID_PROVIDER] = "PROVIDER",
	[CM_ID_ACCEPTING] = "ACCEPTING",
	[CM_ID_ESTABLISHED] = "ESTABLISHED",
	[CM_ID_CLOSING] = "CLOSING",
	[CM_ID_CLOSED] = "CLOSED",
};

const char *cm_id_state_name(enum cm_id_state s)
{
	if ((unsigned int)s < CM_ID_NSTATES && cm_id_state_names[s])
		return cm_id_state_names[s];
	return "?";
}

static const char *const cm_event_names[] = {
	[UAL_CM_EV_REQUEST] = "REQUEST",
	[UAL_CM_EV_ESTABLISHED] = "ESTABLISHED",
	[UAL_CM_EV_REJECTED] = "REJECTED",
	[UAL_CM_EV_UNREACHABLE] = "UNREACHABLE",
	[UAL_CM_EV_DISCONNECTED] = "DISCONNECTED",
	[UAL_CM_EV_BROKEN] = "BROKEN",
};

const char *ual_cm_event_name(enum ual_cm_event_type type)
{
	if ((unsigned int)type < G_N_ELEMENTS(cm_event_names) &&
	    cm_event_names[type])
		return cm_event_names[type];
	return "?";
}

const char *cm_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (!sa) {
		snprintf(buf, len, "(none)");
		return buf;
	}
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "(family %u)", sa->sa_family);
	}
	return buf;
}

uint32_t ual_cm_default_timeout_ms(void)
{
	const char *s = getenv(CM_ENV_TIMEOUT);
	char *end = NULL;
	unsigned long v;

	if (!s || !*s)
		return CM_DEFAULT_TIMEOUT_MS;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 3600000ul) {
		g_warning("%s=\"%s\": expected 1..3600000 ms; using %u",
			  CM_ENV_TIMEOUT, s, CM_DEFAULT_TIMEOUT_MS);
		return CM_DEFAULT_TIMEOUT_MS;
	}
	return (uint32_t)v;
}

const struct cm_transport *cm_transport_of(struct ual_device *d)
{
	switch (ual_device_transport(d)) {
	case RNICPI_TRANSPORT_IWARP:
		return &cm_iwarp_transport;
	case RNICPI_TRANSPORT_ROCE:
	case RNICPI_TRANSPORT_IB:
		/* The InfiniBand CM (cm_ib.c) arrives with soft-RoCE. */
		break;
	}
	g_info("%s: no connection manager for this transport yet",
	       ual_device_name(d));
	return NULL;
}

GSource *cm_timeout_add(struct cm *cm, uint32_t ms, GSourceFunc fn,
			void *data, GDestroyNotify destroy)
{
	GSource *s = g_timeout_source_new(ms);

	g_source_set_callback(s, fn, data, destroy);
	g_source_attach(s, cm->ctx);
	return s;
}

static void source_drop(GSource **s)
{
	if (*s) {
		g_source_destroy(*s);
		g_source_unref(*s);
		*s = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* The process-wide manager                                            */
/* ------------------------------------------------------------------ */

static GMutex cm_global_lock;
static struct cm *the_cm;
static guint cm_opens;

struct cm *cm_get(void)
{
	struct cm *cm;

	g_mutex_lock(&cm_global_lock);
	cm = the_cm;
	g_mutex_unlock(&cm_global_lock);
	return cm;
}

static gpointer cm_thread_main(gpointer data)
{
	struct cm *cm = data;

	g_main_context_push_thread_default(cm->ctx);
	g_main_loop_run(cm->loop);
	g_main_context_pop_thread_default(cm->ctx);
	return NULL;
}

void cm_iwarp_init(struct cm *cm);
void cm_iwarp_fini(struct cm *cm);

int cm_open(struct ual *u)
{
	struct cm *cm;
	int err;

	g_mutex_lock(&cm_global_lock);
	if (the_cm) {
		if (the_cm->u != u) {
			g_mutex_unlock(&cm_global_lock);
			g_warning("cm: already serving another ual context");
			return -EBUSY;
		}
		cm_opens++;
		g_mutex_unlock(&cm_global_lock);
		return 0;
	}
	cm = g_new0(struct cm, 1);
	cm->ref = 1;
	cm->u = u;
	err = kal_nl_open(&cm->nl);
	if (err) {
		g_mutex_unlock(&cm_global_lock);
		g_warning("cm: cannot open netlink for route resolution: %s",
			  g_strerror(-err));
		g_free(cm);
		return err;
	}
	cm->timeout_ms = ual_cm_default_timeout_ms();
	g_mutex_init(&cm->lock);
	cm->listens = g_ptr_array_new();
	cm->reqs = g_hash_table_new(g_int64_hash, g_int64_equal);
	cm->ids = g_hash_table_new(g_direct_hash, g_direct_equal);
	cm->next_req_id = 1;
	cm->ctx = g_main_context_new();
	cm->loop = g_main_loop_new(cm->ctx, FALSE);
	cm_iwarp_init(cm);
	cm->thread = g_thread_new("hostrdma-cm", cm_thread_main, cm);
	ual_set_conn_handler(u, cm_conn_event, cm);
	the_cm = cm;
	cm_opens = 1;
	g_mutex_unlock(&cm_global_lock);
	g_debug("cm: started, set-up time-out %u ms", cm->timeout_ms);
	return 0;
}

static gboolean cm_quit_cb(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

void cm_close(void)
{
	struct cm *cm;
	GHashTableIter it;
	gpointer val;
	GPtrArray *left;
	GSource *s;

	g_mutex_lock(&cm_global_lock);
	g_return_if_fail(cm_opens > 0);
	if (--cm_opens > 0) {
		g_mutex_unlock(&cm_global_lock);
		return;
	}
	cm = g_steal_pointer(&the_cm);
	g_mutex_unlock(&cm_global_lock);

	ual_set_conn_handler(cm->u, NULL, NULL);
	/* Requests nobody answered: refuse them, the peers learn at once. */
	left = g_ptr_array_new();
	g_mutex_lock(&cm->lock);
	g_hash_table_iter_init(&it, cm->reqs);
	while (g_hash_table_iter_next(&it, NULL, &val))
		g_ptr_array_add(left, val);
	g_hash_table_steal_all(cm->reqs);
	g_mutex_unlock(&cm->lock);
	for (guint i = 0; i < left->len; i++) {
		struct cm_req *req = left->pdata[i];

		cm_req_abandon(req, -ESHUTDOWN);
		cm_req_unref(req);
	}
	g_ptr_array_free(left, TRUE);
	if (cm->listens->len)
		g_warning("cm: %u listeners still open at shutdown",
			  cm->listens->len);
	if (g_hash_table_size(cm->ids))
		g_warning("cm: %u connections still known at shutdown",
			  g_hash_table_size(cm->ids));

	s = g_idle_source_new();
	g_source_set_callback(s, cm_quit_cb, cm->loop, NULL);
	g_source_attach(s, cm->ctx);
	g_source_unref(s);
	g_thread_join(cm->thread);
	cm_iwarp_fini(cm);
	/* Sources destroyed after the thread stopped may hold callbacks. */
	while (g_main_context_iteration(cm->ctx, FALSE))
		;
	g_main_loop_unref(cm->loop);
	g_main_context_unref(cm->ctx);
	g_ptr_array_free(cm->listens, TRUE);
	g_hash_table_destroy(cm->reqs);
	g_hash_table_destroy(cm->ids);
	g_mutex_clear(&cm->lock);
	kal_nl_close(cm->nl);
	g_free(cm);
	g_debug("cm: stopped");
}

/* ------------------------------------------------------------------ */
/* Addresses and routes                                                */
/* ------------------------------------------------------------------ */

void cm_sockaddr_unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 in6;
	struct sockaddr_in *in = (void *)ss;

	if (ss->ss_family != AF_INET6)
		return;
	memcpy(&in6, ss, sizeof(in6));
	if (!IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
		return;
	memset(ss, 0, sizeof(*ss));
	in->sin_family = AF_INET;
	in->sin_port = in6.sin6_port;
	memcpy(&in->sin_addr, &in6.sin6_addr.s6_addr[12], 4);
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

static bool addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)
			       ->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)b)
			       ->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)(const void *)a)
				       ->sin6_addr,
			      &((const struct sockaddr_in6 *)(const void *)b)
				       ->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

int cm_ifindex_of_local(struct cm *cm, const struct sockaddr *sa)
{
	GPtrArray *links = kal_nl_links(cm->nl);
	bool loop = addr_is_loopback(sa);
	int ifindex = 0;

	for (guint i = 0; i < links->len && !ifindex; i++) {
		const struct kal_link *l = links->pdata[i];

		if (loop) {
			if (l->flags & KAL_LINK_LOOPBACK)
				ifindex = l->ifindex;
			continue;
		}
		for (guint j = 0; l->addrs && j < l->addrs->len; j++) {
			const struct sockaddr_storage *a = &g_array_index(
				l->addrs, struct sockaddr_storage, j);

			if (addr_equal((const void *)a, sa)) {
				ifindex = l->ifindex;
				break;
			}
		}
	}
	g_ptr_array_unref(links);
	return ifindex;
}

int cm_resolve(struct cm *cm, const struct sockaddr *dst,
	       const struct sockaddr *src, enum rnicpi_transport transport,
	       struct ual_cm_route *out)
{
	struct kal_route r;
	char buf[64];
	int ifindex, err;

	memset(out, 0, sizeof(*out));
	err = kal_route_resolve(cm->nl, dst, src, 0, &r);
	if (err) {
		g_info("cm: no route to %s: %s",
		       cm_sockaddr_str(dst, buf, sizeof(buf)),
		       g_strerror(-err));
		return err;
	}
	ifindex = r.ifindex;
	g_strlcpy(out->ifname, r.ifname, sizeof(out->ifname));
	if (r.type == KAL_ROUTE_LOCAL) {
		/* The kernel routes our own addresses through lo; the
		 * traffic belongs to the interface that owns the address. */
		int own = cm_ifindex_of_local(cm, dst);

		if (own && own != ifindex) {
			struct kal_link *l =
				kal_nl_link_by_index(cm->nl, own, NULL);

			ifindex = own;
			if (l)
				g_strlcpy(out->ifname, l->ifname,
					  sizeof(out->ifname));
			kal_link_free(l);
		}
	}
	out->src = r.src;
	out->ifindex = ifindex;
	out->mtu = r.mtu;
	out->device = ual_device_by_ifindex(cm->u, ifindex, transport);
	if (!out->device)
		g_info("cm: %s is reached through %s (ifindex %d), which has no %sRDMA device",
		       cm_sockaddr_str(dst, buf, sizeof(buf)), out->ifname,
		       ifindex,
		       transport == RNICPI_TRANSPORT_IWARP ? "iWARP " :
		       transport ? "RoCE/IB " : "");
	return 0;
}

GArray *cm_device_addrs(struct cm *cm, struct ual_device *d)
{
	GArray *out = g_array_new(FALSE, TRUE, sizeof(struct sockaddr_storage));
	struct kal_link *l =
		kal_nl_link_by_index(cm->nl, ual_device_ifindex(d), NULL);

	if (l && l->addrs)
		g_array_append_vals(out, l->addrs->data, l->addrs->len);
	kal_link_free(l);
	return out;
}

/* ------------------------------------------------------------------ */
/* References                                                          */
/* ------------------------------------------------------------------ */

struct cm_id *cm_id_ref(struct cm_id *id)
{
	g_atomic_int_inc(&id->ref);
	return id;
}

void cm_id_unref(struct cm_id *id)
{
	if (!id || !g_atomic_int_dec_and_test(&id->ref))
		return;
	g_assert(id->sockfd < 0 && !id->io_source && !id->timer);
	g_rec_mutex_clear(&id->cb_lock);
	g_cond_clear(&id->cond);
	ual_qp_put(id->qp);
	ual_device_put(id->dev);
	g_free(id);
}

struct cm_req *cm_req_ref(struct cm_req *req)
{
	g_atomic_int_inc(&req->ref);
	return req;
}

void cm_req_unref(struct cm_req *req)
{
	if (!req || !g_atomic_int_dec_and_test(&req->ref))
		return;
	g_assert(!req->timer);
	if (req->listen)
		cm_listen_unref(req->listen);
	if (req->convert)
		cm_id_unref(req->convert);
	ual_device_put(req->dev);
	g_free(req->private_data);
	g_free(req);
}

struct cm_listen *cm_listen_ref(struct cm_listen *l)
{
	g_atomic_int_inc(&l->ref);
	return l;
}

void cm_listen_unref(struct cm_listen *l)
{
	if (!l || !g_atomic_int_dec_and_test(&l->ref))
		return;
	g_rec_mutex_clear(&l->cb_lock);
	ual_device_put(l->dev);
	g_free(l);
}

/* ------------------------------------------------------------------ */
/* Provider ops, tolerating a short or sparse table                    */
/* ------------------------------------------------------------------ */

#define CM_RDEV_OP(rdev, op)                                                \
	((rdev)->ops->size >= offsetof(struct rnicpi_device_ops, op) +      \
				      sizeof((rdev)->ops->op) &&            \
			 (rdev)->ops->op ?                                  \
		 (rdev)->ops->op :                                          \
		 NULL)

static void to_rnicpi_param(const struct ual_cm_param *p,
			    struct rnicpi_conn_param *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->private_data = p->private_data_len ? p->private_data : NULL;
	rp->private_data_len = p->private_data_len;
	rp->ird = p->ird;
	rp->ord = p->ord;
	rp->timeout_ms = p->timeout_ms;
}

static void provider_conn_reject(struct ual_device *d, struct rnicpi_conn *c,
				 const void *pdata, uint32_t len)
{
	struct rnicpi_device *rdev = ual_device_rnicpi(d);
	int (*fn)(struct rnicpi_conn *, const void *, uint32_t) =
		CM_RDEV_OP(rdev, conn_reject);
	int err = fn ? fn(c, pdata, len) : -EOPNOTSUPP;

	if (err)
		g_info("%s: conn_reject: %s", ual_device_name(d),
		       g_strerror(-err));
}

/* ------------------------------------------------------------------ */
/* Connections (struct cm_id)                                          */
/* ------------------------------------------------------------------ */

static struct cm_id *cm_id_new(struct cm *cm, const struct cm_transport *tp,
			       struct ual_qp *qp, bool active,
			       const struct ual_cm_param *param,
			       ual_cm_event_fn fn, void *user_data)
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

void cm_id_deliver(struct cm_id *id, struct ual_cm_event *ev)
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
	if (id->converting && ev->type != UAL_CM_EV_ESTABLISHED &&
	    !(id->convert_done && id->convert_err == 0)) {
		g_mutex_unlock(&id->cm->lock);
		cm_debug(id, "%s (status %d) goes to the converting caller",
			 ual_cm_event_name(ev->type), ev->status);
		return;
	}
	g_mutex_unlock(&id->cm->lock);
	cm_debug(id, "%s (status %d)", ual_cm_event_name(ev->type),
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
	struct ual_cm_event ev = {
		.type = id->active ? UAL_CM_EV_UNREACHABLE : UAL_CM_EV_BROKEN,
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

int cm_connect(struct cm *cm, struct ual_qp *qp, const struct sockaddr *dst,
	       uint16_t port, const struct sockaddr *src,
	       const struct ual_cm_param *param, ual_cm_event_fn fn,
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
	if (param && param->private_data_len >
			     tp->max_private_data(d, UAL_CM_PDATA_CONNECT)) {
		g_info("%s: connect with %u bytes of private data; the transport carries %u",
		       ual_device_name(d), param->private_data_len,
		       tp->max_private_data(d, UAL_CM_PDATA_CONNECT));
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

int cm_accept(struct cm *cm, uint64_t req_id, struct ual_qp *qp,
	      const struct ual_cm_param *param, ual_cm_event_fn fn,
	      void *user_data, struct cm_id **out)
{
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));
	struct rnicpi_conn_param rp;
	struct rnicpi_device *rdev;
	int (*accept_fn)(struct rnicpi_conn *, struct rnicpi_qp *,
			 const struct rnicpi_conn_param *);
	struct cm_req *req;
	struct cm_id *id;
	int err;

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
				     d, UAL_CM_PDATA_ACCEPT)) {
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

	rdev = ual_device_rnicpi(d);
	accept_fn = CM_RDEV_OP(rdev, conn_accept);
	to_rnicpi_param(&id->param, &rp);
	err = accept_fn ? accept_fn(req->conn, id->rqp, &rp) : -EOPNOTSUPP;
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

int cm_reject(struct cm *cm, uint64_t req_id, const void *private_data,
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
				       req->dev, UAL_CM_PDATA_REJECT)) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "reject with %u bytes of private data: too many",
			private_data_len);
		return -EMSGSIZE;
	}
	req->state = CM_REQ_ANSWERED;
	g_hash_table_steal(cm->reqs, &req_id);
	g_mutex_unlock(&cm->lock);
	cm_debug(req, "rejected, %u bytes of private data", private_data_len);
	provider_conn_reject(req->dev, req->conn, private_data,
			     private_data_len);
	cm_req_unref(req);
	return 0;
}

int cm_disconnect(struct cm_id *id, bool abortive)
{
	struct cm *cm = id->cm;
	struct ual_cm_event ev = {
		.type = UAL_CM_EV_DISCONNECTED, .status = -ECANCELED,
	};
	enum cm_id_state was;

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
		if (abortive)
			return qp_move(id, RNICPI_QPS_ERR);
		if (qp_move(id, RNICPI_QPS_CLOSING))
			return qp_move(id, RNICPI_QPS_ERR);
		g_mutex_lock(&cm->lock);
		source_drop(&id->timer);
		id->timer = cm_timeout_add(cm, id->param.timeout_ms,
					   cm_close_timeout, cm_id_ref(id),
					   (GDestroyNotify)cm_id_unref);
		g_mutex_unlock(&cm->lock);
		return 0;
	case CM_ID_SOCKET:
		id->tp->cancel(cm, id);
		break;
	default:
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
	struct cm *cm = id->cm;
	enum cm_id_state was;

	g_mutex_lock(&cm->lock);
	was = id->state;
	id->state = CM_ID_CLOSED;
	source_drop(&id->timer);
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
	cm_debug(id, "destroyed in state %s", cm_id_state_name(was));
	cm_id_unref(id);
}

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

int cm_listen(struct cm *cm, struct ual_device *d, uint8_t port_num,
	      uint16_t *port, ual_cm_event_fn fn, void *user_data,
	      struct cm_listen **out)
{
	const struct cm_transport *tp = cm_transport_of(d);
	struct cm_listen *l, *other;
	int err;

	if (!tp)
		return -EOPNOTSUPP;
	l = g_new0(struct cm_listen, 1);
	l->ref = 1;
	l->cm = cm;
	l->tp = tp;
	l->dev = ual_device_get(d);
	l->port_num = port_num;
	l->port = *port;
	l->fn = fn;
	l->user_data = user_data;
	g_rec_mutex_init(&l->cb_lock);

	g_mutex_lock(&cm->lock);
	if (*port) {
		other = cm_listen_find_locked(cm, d, port_num, *port);
		if (other) {
			g_mutex_unlock(&cm->lock);
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
		cm_listen_unref(l);
		return err;
	}
	snprintf(l->prefix, sizeof(l->prefix), "LISTEN[%u] %s:", l->port,
		 ual_device_name(d));
	g_ptr_array_add(cm->listens, cm_listen_ref(l));
	g_mutex_unlock(&cm->lock);
	cm_debug(l, "listening");
	*port = l->port;
	*out = l;
	return 0;
}

void cm_listen_destroy(struct cm_listen *l)
{
	struct cm *cm = l->cm;

	g_mutex_lock(&cm->lock);
	if (g_ptr_array_remove(cm->listens, l)) {
		l->tp->unlisten(cm, l);
		cm_listen_unref(l);
	}
	g_mutex_unlock(&cm->lock);
	g_rec_mutex_lock(&l->cb_lock);
	l->dead = true;
	g_rec_mutex_unlock(&l->cb_lock);
	cm_debug(l, "closed");
	cm_listen_unref(l);
}

static gboolean cm_req_timeout(gpointer data);

struct cm_req *cm_req_new(struct cm *cm, struct cm_listen *l,
			  struct ual_device *dev,
			  const struct sockaddr_storage *local,
			  const struct sockaddr_storage *remote)
{
	struct cm_req *req = g_new0(struct cm_req, 1);
	char buf[64];

	req->ref = 1;
	req->cm = cm;
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
	req->timer = cm_timeout_add(cm, cm->timeout_ms + CM_REQ_GRACE_MS,
				    cm_req_timeout, cm_req_ref(req),
				    (GDestroyNotify)cm_req_unref);
	g_mutex_unlock(&cm->lock);
	cm_debug(req, "from %s",
		 cm_sockaddr_str((const void *)remote, buf, sizeof(buf)));
	return req;
}

/* Take @req out of the table (under cm->lock); true if it was there. */
static bool req_unlink_locked(struct cm *cm, struct cm_req *req)
{
	if (g_hash_table_lookup(cm->reqs, &req->id) != req)
		return false;
	g_hash_table_steal(cm->reqs, &req->id);
	return true;
}

void cm_req_abandon(struct cm_req *req, int status)
{
	struct cm *cm = req->cm;
	struct rnicpi_conn *conn = NULL;
	bool linked = false;

	g_mutex_lock(&cm->lock);
	source_drop(&req->timer);
	if (req->state == CM_REQ_REPORTED) {
		/* The provider told us of the request: refusing it is an
		 * answer, and the conn is consumed. */
		linked = req_unlink_locked(cm, req);
		conn = req->conn;
	} else if (req->state == CM_REQ_READING && req->conn) {
		/* The provider still reads the peer's request and owns the
		 * conn (RNICPI has no way to take it back): it answers with
		 * REQUEST or ERROR, which then finds the request failed. */
		cm_debug(req, "left to the provider until it reports");
	} else {
		/* Never handed over, or already reported back: forget it. */
		linked = req_unlink_locked(cm, req);
	}
	req->state = CM_REQ_FAILED;
	g_mutex_unlock(&cm->lock);
	cm_info(req, "abandoned: %s", g_strerror(-status));
	if (conn)
		provider_conn_reject(req->dev, conn, NULL, 0);
	if (req->convert)
		cm_id_report_failure(req->convert, status);
	if (linked)
		cm_req_unref(req);
}

/*
 * The provider reads the peer's request with its own time-out (siw:
 * mpa_timeout_ms) and reports ERROR when it expires, which ends the
 * request; this timer is the manager's bound on that, for a provider
 * that would never answer: the request is failed here, the peer learns
 * when the provider finally reports (a late REQUEST is refused).
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
			req->cm->timeout_ms);
		cm_req_abandon(req, -ETIMEDOUT);
	}
	return G_SOURCE_REMOVE;
}

static void cm_req_report(struct cm_req *req, struct cm_listen *l)
{
	struct ual_cm_event ev = {
		.type = UAL_CM_EV_REQUEST,
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
	cm_reject(req->cm, req->id, NULL, 0);
}

int cm_handoff(struct cm *cm, uint64_t req_id, uint8_t port_num,
	       uint16_t port)
{
	struct rnicpi_device_attr attr;
	struct cm_listen *l, *old;
	struct cm_req *req;

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
	l = cm_listen_find_locked(cm, req->dev, port_num, port);
	if (!l) {
		g_mutex_unlock(&cm->lock);
		cm_info(req, "handoff: no listener on port %u", port);
		return -ESRCH;
	}
	old = req->listen;
	req->listen = cm_listen_ref(l);
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

static void copy_peer_addrs(struct sockaddr_storage *local,
			    struct sockaddr_storage *remote,
			    const struct rnicpi_conn_event *ev)
{
	if (ev->local_addr.ss_family != AF_UNSPEC) {
		*local = ev->local_addr;
		cm_sockaddr_unmap(local);
	}
	if (ev->remote_addr.ss_family != AF_UNSPEC) {
		*remote = ev->remote_addr;
		cm_sockaddr_unmap(remote);
	}
}

/* The provider read a peer's request (or failed to) on a conn of ours. */
static void cm_req_event(struct cm *cm, const struct rnicpi_conn_event *ev)
{
	struct cm_req *req = ev->conn->core_ctx;
	struct cm_listen *l = NULL;
	struct cm_id *convert = NULL;
	bool ok;

	g_mutex_lock(&cm->lock);
	ok = req && g_hash_table_lookup(cm->reqs, &req->id) == req;
	if (!ok) {
		g_mutex_unlock(&cm->lock);
		g_info("cm: %s event for a request this manager does not know; dropped",
		       ev->type == RNICPI_CONN_REQUEST ? "REQUEST" : "ERROR");
		return;
	}
	if (req->state == CM_REQ_FAILED) {
		/* Timed out here while the provider read: end it now. */
		req_unlink_locked(cm, req);
		g_mutex_unlock(&cm->lock);
		cm_info(req, "the provider reported %s after the time-out; %s",
			ev->type == RNICPI_CONN_REQUEST ? "the request" :
							  "a failure",
			ev->type == RNICPI_CONN_REQUEST ? "refusing it" :
							  "forgotten");
		if (ev->type == RNICPI_CONN_REQUEST)
			provider_conn_reject(req->dev, ev->conn, NULL, 0);
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
	source_drop(&req->timer);
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
	copy_peer_addrs(&req->local_addr, &req->remote_addr, ev);
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
			struct rnicpi_device *rdev =
				ual_device_rnicpi(req->dev);
			int (*accept_fn)(struct rnicpi_conn *,
					 struct rnicpi_qp *,
					 const struct rnicpi_conn_param *) =
				CM_RDEV_OP(rdev, conn_accept);
			struct rnicpi_conn_param rp;
			int err;

			to_rnicpi_param(&convert->param, &rp);
			err = accept_fn ? accept_fn(ev->conn, convert->rqp,
						    &rp) :
					  -EOPNOTSUPP;
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
		cm_reject(cm, req->id, NULL, 0);
	}
	cm_req_unref(req);
}

void cm_conn_event(struct ual_device *d, const struct rnicpi_conn_event *ev,
		   void *user_data)
{
	struct cm *cm = user_data;
	struct ual_cm_event out = { 0 };
	struct cm_id *id;
	enum cm_id_state was;

	if (ev->conn && (ev->type == RNICPI_CONN_REQUEST ||
			 (ev->type == RNICPI_CONN_ERROR && !ev->qp))) {
		cm_req_event(cm, ev);
		return;
	}
	if (!ev->qp) {
		g_info("%s: connection event %d without a QP; dropped",
		       ual_device_name(d), ev->type);
		return;
	}
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

	g_mutex_lock(&cm->lock);
	was = id->state;
	copy_peer_addrs(&id->local_addr, &id->remote_addr, ev);
	switch (ev->type) {
	case RNICPI_CONN_ESTABLISHED:
		if (was != CM_ID_PROVIDER && was != CM_ID_ACCEPTING)
			goto stale;
		id->state = CM_ID_ESTABLISHED;
		out.type = UAL_CM_EV_ESTABLISHED;
		break;
	case RNICPI_CONN_REJECTED:
		if (was != CM_ID_PROVIDER)
			goto stale;
		id->state = CM_ID_CLOSED;
		out.type = UAL_CM_EV_REJECTED;
		out.status = -ECONNREFUSED;
		break;
	case RNICPI_CONN_ERROR:
		if (was != CM_ID_PROVIDER && was != CM_ID_ACCEPTING)
			goto stale;
		id->state = CM_ID_CLOSED;
		out.type = id->active ? UAL_CM_EV_UNREACHABLE :
					UAL_CM_EV_BROKEN;
		out.status = ev->status ? ev->status : -ECONNABORTED;
		break;
	case RNICPI_CONN_DISCONNECTED:
		if (was != CM_ID_ESTABLISHED && was != CM_ID_CLOSING)
			goto stale;
		id->state = CM_ID_CLOSED;
		source_drop(&id->timer);
		out.type = ev->status ? UAL_CM_EV_BROKEN :
					UAL_CM_EV_DISCONNECTED;
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
	if (out.type == UAL_CM_EV_ESTABLISHED) {
		/* Delivered before a converting caller returns, so that
		 * its endpoint is connected when it_socket_convert is. */
		cm_id_deliver(id, &out);
		cm_id_convert_done(id, 0);
	} else {
		if (out.type != UAL_CM_EV_DISCONNECTED)
			cm_id_convert_done(id, out.status);
		cm_id_deliver(id, &out);
	}
	cm_id_unref(id);
	return;

stale:
	g_mutex_unlock(&cm->lock);
	cm_debug(id, "provider event %d in state %s ignored", ev->type,
		 cm_id_state_name(was));
	cm_id_unref(id);
}

/* ------------------------------------------------------------------ */
/* Socket conversion                                                   */
/* ------------------------------------------------------------------ */

int cm_socket_convert(struct cm *cm, struct ual_qp *qp, int sockfd,
		      const struct ual_cm_param *param, ual_cm_event_fn fn,
		      void *user_data, struct cm_id **out)
{
	struct ual_device *d = ual_pd_device(ual_qp_pd(qp));
	const struct cm_transport *tp = cm_transport_of(d);
	struct cm_id *id;
	gint64 deadline;
	int err;

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
	/* The provider's own time-out ends its MPA exchange; ours is a
	 * backstop in case it does not. */
	deadline = g_get_monotonic_time() +
		   (gint64)id->param.timeout_ms * 2 * G_TIME_SPAN_MILLISECOND;
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
