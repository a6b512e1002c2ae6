/* SPDX-License-Identifier: MIT */
/*
 * cm_native_sidr.c - UD service ID resolution on devices whose provider
 * runs the connection manager (RNICPI_DEV_CAP_NATIVE_SIDR: the verbs
 * provider, through rdma_cm's UDP port space and the kernel's IB CM).
 * What the consumer sees is what cm_ib_sidr.c gives on our own IB CM:
 *
 *   requester  cm_sidr_request names the service by its port (or a
 *              service ID of the UDP port space, 0x0111 << 16 | port);
 *              the provider sends the SIDR_REQ and reports one
 *              SIDR_REPLY, a reply or a failure (-ETIMEDOUT: "rejected"
 *              to IT-API, which has no status for silence)
 *   replier    a listener's port answers the same port's SIDR requests;
 *              each is reported as CM_EV_SIDR_REQUEST named by a cm
 *              request id, answered once by cm_sidr_reply, or refused
 *              when nobody answers within the set-up time-out
 *
 * The provider, not we, sends again on loss and answers duplicates.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cm/cm_ib.h"

struct native_sidr_out {
	struct cm_sidr base;		/* first: native true */
	gint ref;
	struct ual_device *dev;		/* reference */
	struct rnicpi_sidr *rs;
	cm_event_fn fn;
	void *user_data;
	GRecMutex cb_lock;
	bool dead;			/* under cb_lock */
	struct sockaddr_storage remote;
	char prefix[CM_PREFIX_MAX];
};

struct native_sidr_in {
	uint64_t req_id;
	struct ual_device *dev;		/* reference */
	struct rnicpi_conn *conn;	/* the provider's, until answered */
	GSource *timer;
	char prefix[CM_PREFIX_MAX];
};


/* ------------------------------------------------------------------ */
/* Requester                                                           */
/* ------------------------------------------------------------------ */

static struct native_sidr_out *out_ref(struct native_sidr_out *s)
{
	g_atomic_int_inc(&s->ref);
	return s;
}

static void out_unref(struct native_sidr_out *s)
{
	if (!s || !g_atomic_int_dec_and_test(&s->ref))
		return;
	ual_device_put(s->dev);
	g_rec_mutex_clear(&s->cb_lock);
	g_free(s);
}

/* The IB CM's SIDR messages carry a private data field of fixed size:
 * what the consumer sent ends with its last byte not zero (as on our own
 * IB CM, ib_pdata_used). */
static uint32_t pdata_used(const struct rnicpi_conn_event *ev)
{
	if (!ev->private_data || !ev->private_data_len)
		return 0;
	return ib_pdata_used(ev->private_data, ev->private_data_len);
}

int cm_native_sidr_request(struct ual_device *d, const struct sockaddr *dst,
			   uint64_t sid, uint16_t port, const void *pdata,
			   uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
			   void *user_data, struct cm_sidr **out)
{
	struct cm *cm = cm_running(__func__);
	struct native_sidr_out *s;
	struct sockaddr_storage to = { 0 };
	char buf[64];
	int err;

	if (!cm)
		return -ENOTCONN;
	if (!(ual_device_caps(d) & RNICPI_DEV_CAP_NATIVE_SIDR)) {
		g_info("%s: UD service requests: its provider resolves none",
		       ual_device_name(d));
		return -EOPNOTSUPP;
	}
	if (sid) {
		if (ib_cma_ps_of(sid) != IB_RDMA_PS_UDP) {
			g_info("%s: UD service ID 0x%016" PRIx64 ": this device resolves rdma_cm's UDP port space only (0x%04x << 16 | port)",
			       ual_device_name(d), sid, IB_RDMA_PS_UDP);
			return -EOPNOTSUPP;
		}
		port = (uint16_t)(sid & 0xffff);
	}
	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (len > IB_CMA_SIDR_PDATA)
		return -EMSGSIZE;
	memcpy(&to, dst, dst->sa_family == AF_INET ?
				 sizeof(struct sockaddr_in) :
				 sizeof(struct sockaddr_in6));
	cm_sockaddr_set_port(&to, port);
	s = g_new0(struct native_sidr_out, 1);
	s->base.native = true;
	s->ref = 1;
	s->dev = ual_device_get(d);
	s->fn = fn;
	s->user_data = user_data;
	s->remote = to;
	g_rec_mutex_init(&s->cb_lock);
	snprintf(s->prefix, sizeof(s->prefix), "SIDR %s -> %s:",
		 ual_device_name(d),
		 cm_sockaddr_str((void *)&to, buf, sizeof(buf)));
	if (!timeout_ms)
		timeout_ms = cm->timeout_ms;
	/* The reply may come before this returns: rs is set by then. */
	g_rec_mutex_lock(&s->cb_lock);
	err = ual_device_cm_sidr_request(d, NULL, (void *)&to, pdata, len,
					 timeout_ms, s, &s->rs);
	g_rec_mutex_unlock(&s->cb_lock);
	if (err) {
		g_info("%s %s", s->prefix, g_strerror(-err));
		out_unref(s);
		return err;
	}
	g_debug("%s SIDR request sent", s->prefix);
	*out = &s->base;
	return 0;
}

void cm_native_sidr_destroy(struct cm_sidr *b)
{
	struct native_sidr_out *s = (struct native_sidr_out *)b;

	g_rec_mutex_lock(&s->cb_lock);
	s->dead = true;
	g_rec_mutex_unlock(&s->cb_lock);
	/* Waits out a reply being delivered on another thread. */
	ual_device_cm_sidr_destroy(s->dev, s->rs);
	out_unref(s);
}

static void reply_event(struct ual_device *d,
			const struct rnicpi_conn_event *ev)
{
	struct native_sidr_out *s = ev->sidr ? ev->sidr->core_ctx : NULL;
	struct cm_event out = {
		.type = CM_EV_SIDR_REPLY,
		.status = ev->status,
		.device = d,
		.port_num = 1,
	};

	if (!s) {
		g_info("%s: a SIDR reply for no request; dropped",
		       ual_device_name(d));
		return;
	}
	/* Alive: cm_native_sidr_destroy waits for this upcall (or runs
	 * inside it, and the reference keeps it). */
	out_ref(s);
	if (!ev->status) {
		out.sidr_status = ev->sidr_status;
		out.qpn = ev->qpn;
		out.qkey = ev->qkey;
		out.private_data = ev->private_data;
		out.private_data_len = pdata_used(ev);
	}
	out.remote_addr = s->remote;
	g_debug("%s reply: status %d, SIDR status %u, QP %06x, Q_Key 0x%08x",
		s->prefix, ev->status, ev->sidr_status, ev->qpn, ev->qkey);
	g_rec_mutex_lock(&s->cb_lock);
	if (!s->dead && s->fn)
		s->fn(&out, s->user_data);
	g_rec_mutex_unlock(&s->cb_lock);
	out_unref(s);
}

/* ------------------------------------------------------------------ */
/* Replier                                                             */
/* ------------------------------------------------------------------ */

static void in_free(struct native_sidr_in *in)
{
	cm_source_drop(&in->timer);
	ual_device_put(in->dev);
	g_free(in);
}

/* The request @req_id, taken out of @cm's table, or NULL. */
static struct native_sidr_in *in_take(struct cm *cm, uint64_t req_id)
{
	struct native_sidr_in *in = NULL;

	g_mutex_lock(&cm->lock);
	if (cm->native_sidr_in) {
		in = g_hash_table_lookup(cm->native_sidr_in, &req_id);
		if (in)
			g_hash_table_remove(cm->native_sidr_in, &in->req_id);
	}
	g_mutex_unlock(&cm->lock);
	return in;
}

static gboolean in_timeout(gpointer data)
{
	uint64_t req_id = *(uint64_t *)data;
	struct cm *cm = cm_get();
	struct native_sidr_in *in;

	if (!cm)
		return G_SOURCE_REMOVE;
	g_mutex_lock(&cm->lock);
	in = cm->native_sidr_in ?
		     g_hash_table_lookup(cm->native_sidr_in, &req_id) :
		     NULL;
	if (!in || in->timer != g_main_current_source()) {
		g_mutex_unlock(&cm->lock);
		return G_SOURCE_REMOVE;
	}
	g_hash_table_remove(cm->native_sidr_in, &in->req_id);
	g_mutex_unlock(&cm->lock);
	g_info("%s unanswered; refused", in->prefix);
	ual_device_cm_sidr_reply(in->dev, in->conn, IB_SIDR_REJECT, 0, 0,
				 NULL, 0);
	in_free(in);
	return G_SOURCE_REMOVE;
}

static void request_event(struct cm *cm, struct ual_device *d,
			  const struct rnicpi_conn_event *ev)
{
	struct sockaddr_storage local = { 0 }, remote = { 0 };
	struct native_sidr_in *in;
	struct cm_listen *l;
	uint64_t req_id;

	l = ev->listener ? cm_native_listen_of(cm, ev->listener) : NULL;
	if (!l) {
		g_info("%s: a UD service request for a listener that is closed; refused",
		       ual_device_name(d));
		ual_device_cm_sidr_reply(d, ev->conn, IB_SIDR_UNSUPPORTED, 0, 0,
					 NULL, 0);
		return;
	}
	cm_copy_peer_addrs(&local, &remote, ev);
	in = g_new0(struct native_sidr_in, 1);
	in->dev = ual_device_get(d);
	in->conn = ev->conn;
	g_mutex_lock(&cm->lock);
	req_id = in->req_id = cm->next_req_id++;
	snprintf(in->prefix, sizeof(in->prefix), "SIDR-IN[%" PRIu64 "] %s:",
		 req_id, ual_device_name(d));
	if (!cm->native_sidr_in)
		cm->native_sidr_in =
			g_hash_table_new(g_int64_hash, g_int64_equal);
	g_hash_table_insert(cm->native_sidr_in, &in->req_id, in);
	in->timer = cm_timeout_add(cm, cm->timeout_ms, in_timeout,
				   g_memdup2(&req_id, sizeof(req_id)), g_free);
	g_mutex_unlock(&cm->lock);
	{
		struct cm_event out = {
			.type = CM_EV_SIDR_REQUEST,
			.req_id = req_id,
			.private_data = ev->private_data,
			.private_data_len = pdata_used(ev),
			.local_addr = local,
			.remote_addr = remote,
			.device = d,
			.port_num = 1,
			.port = l->port,
			.service_id = ib_cma_service_id(IB_RDMA_PS_UDP,
							l->port),
		};

		g_debug("%s reported to %s", in->prefix, l->prefix);
		g_rec_mutex_lock(&l->cb_lock);
		if (!l->dead && l->fn)
			l->fn(&out, l->user_data);
		g_rec_mutex_unlock(&l->cb_lock);
	}
	cm_listen_unref(l);
}

int cm_native_sidr_reply(uint64_t req_id, uint8_t status, uint32_t qpn,
			 uint32_t qkey, const void *pdata, uint32_t len)
{
	struct cm *cm = cm_get();
	struct native_sidr_in *in;
	int err;

	if (!cm)
		return -ENOENT;
	if (len > IB_CM_SIDR_REP_PDATA)
		return -EMSGSIZE;
	if (status > IB_SIDR_REDIRECT || qpn > 0xffffff)
		return -EINVAL;
	in = in_take(cm, req_id);
	if (!in)
		return -ENOENT;
	err = ual_device_cm_sidr_reply(in->dev, in->conn, status, qpn, qkey,
				       pdata, len);
	if (err)
		g_info("%s reply (status %u, QP %06x, Q_Key 0x%08x): %s",
		       in->prefix, status, qpn, qkey, g_strerror(-err));
	else
		g_debug("%s answered: status %u, QP %06x", in->prefix, status,
			qpn);
	in_free(in);
	return err;
}

void cm_native_sidr_event(struct cm *cm, struct ual_device *d,
			  const struct rnicpi_conn_event *ev)
{
	if (ev->type == RNICPI_CONN_SIDR_REPLY)
		reply_event(d, ev);
	else if (ev->conn)
		request_event(cm, d, ev);
}

void cm_native_sidr_fini(struct cm *cm)
{
	GHashTableIter it;
	gpointer val;
	GHashTable *t;

	g_mutex_lock(&cm->lock);
	t = g_steal_pointer(&cm->native_sidr_in);
	g_mutex_unlock(&cm->lock);
	if (!t)
		return;
	/* Requests nobody answered: refused, the peers learn at once. */
	g_hash_table_iter_init(&it, t);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct native_sidr_in *in = val;

		ual_device_cm_sidr_reply(in->dev, in->conn, IB_SIDR_REJECT, 0,
					 0, NULL, 0);
		in_free(in);
	}
	g_hash_table_destroy(t);
}
