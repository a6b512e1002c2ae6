/* SPDX-License-Identifier: MIT */
/*
 * cm.c - the process's connection manager: its thread, addresses and
 * routes, references, and the helpers the other files share. Connections
 * are in cm_conn.c, listeners and requests in cm_req.c, the iWARP
 * transport in cm_iwarp.c.
 *
 * Locking: cm->lock guards the tables and every object's state; a
 * consumer callback runs under its object's cb_lock only (a recursive
 * mutex, so the callback may destroy other objects or answer requests),
 * never under cm->lock. Provider ops are called without cm->lock, except
 * that the object's state was moved first so a racing upcall finds it.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <signal.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_private.h"

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
	[CM_EV_REQUEST] = "REQUEST",
	[CM_EV_ESTABLISHED] = "ESTABLISHED",
	[CM_EV_REJECTED] = "REJECTED",
	[CM_EV_UNREACHABLE] = "UNREACHABLE",
	[CM_EV_DISCONNECTED] = "DISCONNECTED",
	[CM_EV_BROKEN] = "BROKEN",
	[CM_EV_SIDR_REQUEST] = "SIDR_REQUEST",
	[CM_EV_SIDR_REPLY] = "SIDR_REPLY",
	[CM_EV_ACCEPT_ARRIVED] = "ACCEPT_ARRIVED",
};

const char *cm_event_name(enum cm_event_type type)
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

uint32_t cm_default_timeout_ms(void)
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
	/* A device whose connections its provider runs (the verbs
	 * provider, through librdmacm): its MPA or IB CM lives in the
	 * kernel (cm_native.c). */
	if (ual_device_caps(d) & RNICPI_DEV_CAP_NATIVE_CM)
		return &cm_native_transport;
	switch (ual_device_transport(d)) {
	case RNICPI_TRANSPORT_IWARP:
		return &cm_iwarp_transport;
	case RNICPI_TRANSPORT_ROCE:
	case RNICPI_TRANSPORT_IB:
		return &cm_ib_transport;
	}
	g_info("%s: no connection manager for this transport yet",
	       ual_device_name(d));
	return NULL;
}

uint32_t cm_max_private_data(struct ual_device *d, enum cm_pdata_op op)
{
	const struct cm_transport *tp = cm_transport_of(d);

	return tp ? tp->max_private_data(d, op) : 0;
}

GSource *cm_timeout_add(struct cm *cm, uint32_t ms, GSourceFunc fn,
			void *data, GDestroyNotify destroy)
{
	GSource *s = g_timeout_source_new(ms);

	g_source_set_callback(s, fn, data, destroy);
	g_source_attach(s, cm->ctx);
	return s;
}

void cm_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

void cm_source_drop(GSource **s)
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
static pthread_once_t cm_atfork_once = PTHREAD_ONCE_INIT;

/* fork(): the child has no CM thread, and the manager's listening
 * sockets and netlink socket are shared with the parent. It forgets the
 * manager without touching it (see ual_atfork_child); its next cm_open
 * starts one of its own. */
static struct cm *volatile parent_cm; /* kept reachable, never touched */

static void cm_atfork_child(void)
{
	if (the_cm)
		parent_cm = the_cm;
	the_cm = NULL;
	cm_opens = 0;
	g_mutex_init(&cm_global_lock);
}

static void cm_atfork_register(void)
{
	pthread_atfork(NULL, NULL, cm_atfork_child);
}

struct cm *cm_get(void)
{
	struct cm *cm;

	g_mutex_lock(&cm_global_lock);
	cm = the_cm;
	g_mutex_unlock(&cm_global_lock);
	return cm;
}

struct cm *cm_running(const char *fn)
{
	struct cm *cm = cm_get();

	if (!cm)
		g_warning("%s: the connection manager is not open (cm_open)",
			  fn);
	return cm;
}

static gpointer cm_thread_main(gpointer data)
{
	struct cm *cm = data;

	int err;

	g_main_context_push_thread_default(cm->ctx);
	err = ual_engine_run_context(&cm->engine, cm->ctx, &cm->quit);
	if (err)
		g_warning("cm: the manager's thread stopped: %s",
			  g_strerror(-err));
	g_main_context_pop_thread_default(cm->ctx);
	return NULL;
}

void cm_iwarp_init(struct cm *cm);
void cm_iwarp_fini(struct cm *cm);
void cm_ib_init(struct cm *cm);
void cm_ib_fini(struct cm *cm);

int cm_open(struct ual *u)
{
	sigset_t all, old;
	struct cm *cm;
	int err;

	pthread_once(&cm_atfork_once, cm_atfork_register);
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
	cm->timeout_ms = cm_default_timeout_ms();
	g_mutex_init(&cm->claim_lock);
	g_mutex_init(&cm->lock);
	cm->listens = g_ptr_array_new();
	cm->reqs = g_hash_table_new(g_int64_hash, g_int64_equal);
	cm->ids = g_hash_table_new(g_direct_hash, g_direct_equal);
	cm->next_req_id = 1;
	/* The manager's thread is a progress engine, as the providers' and
	 * the event pump's are, running the manager's GLib sources. */
	err = rnicpi_engine_init(&cm->engine, "hostrdma-cm", 0, NULL, NULL);
	if (err) {
		g_mutex_unlock(&cm_global_lock);
		g_warning("cm: cannot set up the manager's progress engine: %s",
			  g_strerror(-err));
		kal_nl_close(cm->nl);
		g_ptr_array_free(cm->listens, TRUE);
		g_hash_table_destroy(cm->reqs);
		g_hash_table_destroy(cm->ids);
		g_mutex_clear(&cm->lock);
		g_mutex_clear(&cm->claim_lock);
		g_free(cm);
		return err;
	}
	cm->ctx = g_main_context_new();
	/* The manager's thread starts with
	 * g_main_context_push_thread_default(), which compares with GLib's
	 * default context and so makes it (an eventfd) if nobody has: made
	 * here, with the manager's own descriptors, not whenever the thread
	 * first runs. By then the application may have used every
	 * descriptor, and GLib aborts the process when it gets none. */
	g_main_context_default();
	cm_iwarp_init(cm);
	cm_ib_init(cm);
	/* Started with every signal blocked: the application's signals go
	 * to its own threads (see rnicpi_engine_start). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	cm->thread = g_thread_new("hostrdma-cm", cm_thread_main, cm);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ual_set_conn_handler(u, cm_conn_event, cm);
	the_cm = cm;
	cm_opens = 1;
	g_mutex_unlock(&cm_global_lock);
	g_debug("cm: started, set-up time-out %u ms", cm->timeout_ms);
	return 0;
}

static gboolean cm_quit_cb(gpointer data)
{
	struct cm *cm = data;

	g_atomic_int_set(&cm->quit, 1);
	return G_SOURCE_REMOVE;
}

/*
 * Refuse the requests nobody answered, so that their peers learn at once.
 * They stay listed while refused and the connection handler stays set: a
 * provider's ERROR for a request's conn must reach cm_req_provider_event,
 * which serialises it with the refusal, for the provider frees the conn
 * once that upcall returns (rnicpi.h, conn_reject). A request failed
 * already waits for its provider's word, or for cm_req_take on the
 * manager's thread, which refuse it then.
 */
static void abandon_requests(struct cm *cm)
{
	for (;;) {
		GPtrArray *left = g_ptr_array_new();
		GHashTableIter it;
		gpointer val;

		g_mutex_lock(&cm->lock);
		g_hash_table_iter_init(&it, cm->reqs);
		while (g_hash_table_iter_next(&it, NULL, &val)) {
			struct cm_req *req = val;

			if (req->state != CM_REQ_FAILED)
				g_ptr_array_add(left, cm_req_ref(req));
		}
		g_mutex_unlock(&cm->lock);
		if (!left->len) {
			g_ptr_array_free(left, TRUE);
			return;
		}
		for (guint i = 0; i < left->len; i++) {
			struct cm_req *req = left->pdata[i];

			cm_req_abandon(req, -ESHUTDOWN);
			cm_req_unref(req);
		}
		g_ptr_array_free(left, TRUE);
	}
}

void cm_close(void)
{
	struct cm *cm;
	GList *left;
	GSource *s;

	g_mutex_lock(&cm_global_lock);
	g_return_if_fail(cm_opens > 0);
	if (--cm_opens > 0) {
		g_mutex_unlock(&cm_global_lock);
		return;
	}
	cm = g_steal_pointer(&the_cm);
	g_mutex_unlock(&cm_global_lock);

	abandon_requests(cm);
	if (cm->listens->len)
		g_warning("cm: %u listeners still open at shutdown",
			  cm->listens->len);
	if (g_hash_table_size(cm->ids))
		g_warning("cm: %u connections still known at shutdown",
			  g_hash_table_size(cm->ids));

	s = g_idle_source_new();
	g_source_set_callback(s, cm_quit_cb, cm, NULL);
	g_source_attach(s, cm->ctx);
	g_source_unref(s);
	g_thread_join(cm->thread);
	/* Any the thread took meanwhile; then no ERROR can name a conn the
	 * manager still holds, and the handler can go. */
	abandon_requests(cm);
	ual_set_conn_handler(cm->u, NULL, NULL);
	/* Left: failed ones the provider never took (iw_take_request). */
	left = g_hash_table_get_values(cm->reqs);
	g_hash_table_steal_all(cm->reqs);
	for (GList *l = left; l; l = l->next)
		cm_req_unref(l->data);
	g_list_free(left);
	cm_iwarp_fini(cm);
	cm_ib_fini(cm);
	cm_native_sidr_fini(cm);
	/* Sources destroyed after the thread stopped may hold callbacks. */
	while (g_main_context_iteration(cm->ctx, FALSE))
		;
	g_main_context_unref(cm->ctx);
	rnicpi_engine_fini(&cm->engine);
	g_ptr_array_free(cm->listens, TRUE);
	g_hash_table_destroy(cm->reqs);
	g_hash_table_destroy(cm->ids);
	g_mutex_clear(&cm->lock);
	g_mutex_clear(&cm->claim_lock);
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

int cm_route_resolve(struct cm *cm, const struct sockaddr *dst,
		     const struct sockaddr *src, enum rnicpi_transport transport,
		     struct cm_route *out)
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

int cm_resolve(const struct sockaddr *dst, const struct sockaddr *src,
	       enum rnicpi_transport transport, struct cm_route *out)
{
	struct cm *cm = cm_running(__func__);

	return cm ? cm_route_resolve(cm, dst, src, transport, out) : -ENOTCONN;
}

GArray *cm_device_addrs(struct ual_device *d)
{
	GArray *out = g_array_new(FALSE, TRUE, sizeof(struct sockaddr_storage));
	struct cm *cm = cm_running(__func__);
	struct kal_link *l;

	if (!cm)
		return out;
	l = kal_nl_link_by_index(cm->nl, ual_device_ifindex(d), NULL);
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
	g_rec_mutex_clear(&req->answer_lock);
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

void cm_to_rnicpi_param(const struct cm_param *p,
			struct rnicpi_conn_param *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->private_data = p->private_data_len ? p->private_data : NULL;
	rp->private_data_len = p->private_data_len;
	rp->ird = p->ird;
	rp->ord = p->ord;
	rp->timeout_ms = p->timeout_ms;
	rp->flags = p->no_ird_ord ? RNICPI_CONN_MPA_REV1 : 0;
}

void cm_provider_conn_reject(struct ual_device *d, struct rnicpi_conn *c,
				 const void *pdata, uint32_t len)
{
	const struct cm_transport *tp = cm_transport_of(d);
	int err;

	if (tp && tp->reject) {
		tp->reject(cm_get(), c, pdata, len);
		return;
	}
	err = ual_device_conn_reject(d, c, pdata, len);
	if (err)
		g_info("%s: conn_reject: %s", ual_device_name(d),
		       g_strerror(-err));
}

void cm_copy_peer_addrs(struct sockaddr_storage *local,
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

/* ------------------------------------------------------------------ */
/* UD service ID resolution: the IB CM's or the provider's             */
/* ------------------------------------------------------------------ */

int cm_sidr_request(struct ual_device *d, const struct sockaddr *dst,
		    uint64_t sid, uint16_t port, const void *pdata,
		    uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
		    void *user_data, struct cm_sidr **out)
{
	if (ual_device_caps(d) & RNICPI_DEV_CAP_NATIVE_CM)
		return cm_native_sidr_request(d, dst, sid, port, pdata, len,
					      timeout_ms, fn, user_data, out);
	return cm_ib_sidr_request(d, dst, sid, port, pdata, len, timeout_ms,
				  fn, user_data, out);
}

void cm_sidr_destroy(struct cm_sidr *s)
{
	if (!s)
		return;
	if (s->native)
		cm_native_sidr_destroy(s);
	else
		cm_ib_sidr_destroy(s);
}

int cm_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
		  uint32_t qkey, const void *pdata, uint32_t len)
{
	int err = cm_native_sidr_reply(req_id, sidr_status, qpn, qkey, pdata,
				       len);

	if (err == -ENOENT)
		err = cm_ib_sidr_reply(req_id, sidr_status, qpn, qkey, pdata,
				       len);
	return err;
}
