/* SPDX-License-Identifier: MIT */
/*
 * cm_ib_sidr.c - service ID resolution (IBA 12.11): a requester asks which
 * UD QP (and Q_Key) serves a service ID with SIDR_REQ, the listener of that
 * service answers SIDR_REP. rdma_cm does the same for its UDP port space
 * (0x0000000001110000 + port) with its private data header in front, as
 * for REQs; a listener on an IANA port (rdma_cm's TCP space) answers the
 * same port's UDP service ID too, so one IT-API listener takes both.
 *
 * Requester: struct ib_sidr_out, named by its 32-bit request ID, sent
 * again after each response time-out until the reply or the consumer's
 * time-out. Replier: struct ib_sidr_in, named by a cm request id (the
 * consumer's ud_svc_req_id), answered once; a duplicate SIDR_REQ gets the
 * same answer again while it is remembered (12.11.2), one nobody answers
 * in the set-up time-out gets "rejected".
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cm/cm_ib.h"

#define SIDR_RETRIES 5u
#define SIDR_REMEMBER_MS 2000u

struct ib_sidr_out {
	struct cm_sidr base;		/* first: native false */
	gint ref;
	struct cm *cm;
	struct ib_port *port;
	uint32_t request_id;
	struct ib_dest dest;
	struct ib_mad mad;
	uint32_t rto_ms;
	uint32_t retries_left;
	bool done;			/* under st->lock */
	GSource *timer;
	cm_event_fn fn;
	void *user_data;
	GRecMutex cb_lock;
	bool dead;			/* under cb_lock */
	struct sockaddr_storage remote;
	char prefix[CM_PREFIX_MAX];
};

struct ib_sidr_in {
	uint64_t req_id;
	struct cm *cm;
	struct ib_port *port;
	uint32_t request_id;		/* the requester's */
	union rnicpi_gid from;
	uint64_t sid;
	struct ib_dest dest;
	bool answered;
	struct ib_mad reply;
	GSource *timer;
	char prefix[CM_PREFIX_MAX];
};

static struct ib_sidr_out *out_ref(struct ib_sidr_out *s)
{
	g_atomic_int_inc(&s->ref);
	return s;
}

static void out_unref(struct ib_sidr_out *s)
{
	if (!s || !g_atomic_int_dec_and_test(&s->ref))
		return;
	g_rec_mutex_clear(&s->cb_lock);
	g_free(s);
}

static void in_free(struct ib_sidr_in *in)
{
	cm_source_drop(&in->timer);
	g_free(in);
}

void ib_sidr_fini(struct ib_state *st)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, st->sidr_out);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct ib_sidr_out *s = val;

		cm_source_drop(&s->timer);
		out_unref(s);
	}
	g_hash_table_destroy(st->sidr_out);
	g_hash_table_iter_init(&it, st->sidr_in);
	while (g_hash_table_iter_next(&it, NULL, &val))
		in_free(val);
	g_hash_table_destroy(st->sidr_in);
}

/* ------------------------------------------------------------------ */
/* Requester                                                           */
/* ------------------------------------------------------------------ */

static void out_deliver(struct ib_sidr_out *s, struct cm_event *ev)
{
	ev->device = ib_port_device(s->port);
	ev->port_num = 1;
	ev->remote_addr = s->remote;
	g_rec_mutex_lock(&s->cb_lock);
	if (!s->dead && s->fn)
		s->fn(ev, s->user_data);
	g_rec_mutex_unlock(&s->cb_lock);
}

static gboolean out_timeout(gpointer data)
{
	struct ib_sidr_out *s = data;
	struct ib_state *st = ib_of(s->cm);
	struct cm_event ev = {
		.type = CM_EV_SIDR_REPLY, .status = -ETIMEDOUT,
	};
	bool fail = false;

	g_mutex_lock(&st->lock);
	if (!s->timer || s->done ||
	    g_source_is_destroyed(g_main_current_source())) {
		g_mutex_unlock(&st->lock);
		return G_SOURCE_REMOVE;
	}
	g_source_unref(s->timer);
	s->timer = NULL;
	if (s->retries_left) {
		s->retries_left--;
		g_debug("%s sending SIDR_REQ again", s->prefix);
		ib_port_send(s->port, &s->mad, &s->dest);
		s->timer = cm_timeout_add(s->cm, s->rto_ms, out_timeout,
					  out_ref(s),
					  (GDestroyNotify)out_unref);
	} else {
		g_info("%s no SIDR_REP after %u tries", s->prefix,
		       SIDR_RETRIES + 1);
		s->done = true;
		fail = true;
	}
	g_mutex_unlock(&st->lock);
	if (fail)
		out_deliver(s, &ev);
	return G_SOURCE_REMOVE;
}

int cm_ib_sidr_request(struct ual_device *d, const struct sockaddr *dst,
		       uint64_t sid, uint16_t port, const void *pdata,
		       uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
		       void *user_data, struct cm_sidr **out)
{
	struct cm *cm = cm_running(__func__);
	struct ib_state *st;
	const struct cm_transport *tp = cm_transport_of(d);
	struct ib_cm_sidr_req r = { 0 };
	struct cm_route route;
	struct sockaddr_storage src, to = { 0 };
	struct ib_sidr_out *s;
	struct ib_port *p;
	uint32_t off = 0;
	int gidx, err;

	if (!cm)
		return -ENOTCONN;
	if (tp != &cm_ib_transport)
		return -EOPNOTSUPP;
	st = ib_of(cm);
	/* rdma_cm's UDP port space (librdmacm's header in the requests). */
	if (!sid)
		sid = 0x0000000001110000ull | port;
	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memcpy(&to, dst, dst->sa_family == AF_INET ?
				 sizeof(struct sockaddr_in) :
				 sizeof(struct sockaddr_in6));
	if (len > (ib_cma_ps_of(sid) ? IB_CMA_SIDR_PDATA :
				       IB_CM_SIDR_REQ_PDATA))
		return -EMSGSIZE;
	err = cm_route_resolve(cm, dst, NULL, ual_device_transport(d), &route);
	if (err)
		return err;
	if (route.device)
		ual_device_put(route.device);
	if (route.device != d)
		return -ENETUNREACH;
	/* The host service gone for good: no reply could reach us. */
	err = ual_hostsvc_check();
	if (err)
		return err;
	src = route.src;
	g_mutex_lock(&st->lock);
	err = ib_port_get(cm, d, &p);
	if (err)
		goto out;
	gidx = ib_port_gid_index(p, (const void *)&src);
	if (gidx < 0) {
		err = gidx;
		goto out;
	}
	s = g_new0(struct ib_sidr_out, 1);
	s->ref = 1;
	s->cm = cm;
	s->port = p;
	s->fn = fn;
	s->user_data = user_data;
	g_rec_mutex_init(&s->cb_lock);
	do
		s->request_id = ib_local_id(st);
	while (!s->request_id ||
	       g_hash_table_contains(st->sidr_out,
				     GUINT_TO_POINTER(s->request_id)));
	snprintf(s->prefix, sizeof(s->prefix), "SIDR[%08x] %s:",
		 s->request_id, ual_device_name(d));
	ib_sockaddr_to_gid(dst, &s->dest.dgid);
	s->dest.sgid_index = (uint8_t)gidx;
	s->dest.hop_limit = 64;
	s->remote = to;
	if (!timeout_ms)
		timeout_ms = cm->timeout_ms;
	s->rto_ms = ib_rto_clamp(timeout_ms / (SIDR_RETRIES + 1));
	s->retries_left = SIDR_RETRIES;
	r.request_id = s->request_id;
	r.pkey = IB_PKEY_DEFAULT;
	r.service_id = sid;
	if (ib_cma_ps_of(sid)) {
		cm_sockaddr_set_port(&src,
				     (uint16_t)g_rand_int_range(st->rand,
								32768, 61000));
		cm_sockaddr_set_port(&to, (uint16_t)sid);
		ib_cma_hdr_encode(r.private_data, (const void *)&src,
				  (const void *)&to);
		off = IB_CMA_HDR_BYTES;
	}
	if (len)
		memcpy(r.private_data + off, pdata, len);
	ib_mad_cm_init(&s->mad, IB_CM_ATTR_SIDR_REQ,
		       (uint64_t)g_rand_int(st->rand) << 32 | s->request_id);
	ib_cm_sidr_req_encode(&s->mad, &r);
	g_hash_table_insert(st->sidr_out, GUINT_TO_POINTER(s->request_id),
			    s);
	s->timer = cm_timeout_add(cm, s->rto_ms, out_timeout, out_ref(s),
				  (GDestroyNotify)out_unref);
	g_debug("%s SIDR_REQ for 0x%016" PRIx64, s->prefix, sid);
	ib_port_send(p, &s->mad, &s->dest);
	*out = &out_ref(s)->base;
out:
	g_mutex_unlock(&st->lock);
	return err;
}

void cm_ib_sidr_destroy(struct cm_sidr *b)
{
	struct ib_sidr_out *s = (struct ib_sidr_out *)b;
	struct cm *cm = cm_get();
	struct ib_state *st;

	if (!s || !cm)
		return;
	st = ib_of(cm);
	g_mutex_lock(&st->lock);
	s->done = true;
	cm_source_drop(&s->timer);
	if (g_hash_table_lookup(st->sidr_out,
				GUINT_TO_POINTER(s->request_id)) == s) {
		g_hash_table_remove(st->sidr_out,
				    GUINT_TO_POINTER(s->request_id));
		out_unref(s);
	}
	g_mutex_unlock(&st->lock);
	g_rec_mutex_lock(&s->cb_lock);
	s->dead = true;
	g_rec_mutex_unlock(&s->cb_lock);
	out_unref(s);	/* the consumer's */
}

void ib_recv_sidr_rep(struct cm *cm, struct ib_port *p,
		      const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_sidr_rep r;
	struct ib_sidr_out *s;
	struct cm_event ev = { .type = CM_EV_SIDR_REPLY };

	ib_cm_sidr_rep_decode(m, &r);
	g_mutex_lock(&st->lock);
	s = g_hash_table_lookup(st->sidr_out, GUINT_TO_POINTER(r.request_id));
	if (!s || s->done || s->port != p) {
		g_mutex_unlock(&st->lock);
		g_debug("%s SIDR_REP for request %08x we do not wait for",
			ib_port_prefix(p), r.request_id);
		return;
	}
	s->done = true;
	cm_source_drop(&s->timer);
	out_ref(s);
	g_mutex_unlock(&st->lock);
	g_debug("%s SIDR_REP: status %u, QP %06x, Q_Key 0x%08x", s->prefix,
		r.status, r.qpn, r.qkey);
	ev.sidr_status = r.status;
	ev.qpn = r.qpn;
	ev.qkey = r.qkey;
	ev.service_id = r.service_id;
	ev.private_data = r.private_data;
	ev.private_data_len = ib_pdata_used(r.private_data,
					    IB_CM_SIDR_REP_PDATA);
	out_deliver(s, &ev);
	out_unref(s);
}

/* ------------------------------------------------------------------ */
/* Replier                                                             */
/* ------------------------------------------------------------------ */

static gboolean in_timeout(gpointer data)
{
	uint64_t req_id = *(uint64_t *)data;
	struct cm *cm = cm_get();
	struct ib_state *st;
	struct ib_sidr_in *in;

	if (!cm)
		return G_SOURCE_REMOVE;
	st = ib_of(cm);
	g_mutex_lock(&st->lock);
	in = g_hash_table_lookup(st->sidr_in, &req_id);
	if (in && in->timer == g_main_current_source()) {
		g_source_unref(in->timer);
		in->timer = NULL;
		if (!in->answered) {
			/* Nobody answered in time: "rejected". */
			struct ib_cm_sidr_rep r = {
				.request_id = in->request_id,
				.status = IB_SIDR_REJECT,
				.service_id = in->sid,
			};

			g_info("%s unanswered; SIDR_REP \"rejected\"",
			       in->prefix);
			ib_mad_cm_init(&in->reply, IB_CM_ATTR_SIDR_REP,
				       ib_mad_get64(&in->reply,
						    IB_MAD_OFF_TID));
			ib_cm_sidr_rep_encode(&in->reply, &r);
			in->answered = true;
			ib_port_send(in->port, &in->reply, &in->dest);
			in->timer = cm_timeout_add(cm, SIDR_REMEMBER_MS,
						   in_timeout,
						   g_memdup2(&req_id,
							     sizeof(req_id)),
						   g_free);
		} else {
			g_hash_table_remove(st->sidr_in, &in->req_id);
			in_free(in);
		}
	}
	g_mutex_unlock(&st->lock);
	return G_SOURCE_REMOVE;
}

static struct ib_sidr_in *in_find_locked(struct ib_state *st,
					 uint32_t request_id,
					 const union rnicpi_gid *from)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, st->sidr_in);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct ib_sidr_in *in = val;

		if (in->request_id == request_id &&
		    !memcmp(in->from.raw, from->raw, 16))
			return in;
	}
	return NULL;
}

/* The listener of @sid, or of its port's TCP service ID when @sid is in
 * rdma_cm's UDP space. New reference. */
static struct cm_listen *sidr_listener(struct cm *cm, struct ual_device *d,
				       uint64_t sid)
{
	struct cm_listen *l;

	g_mutex_lock(&cm->lock);
	l = cm_listen_find_sid_locked(cm, d, 1, sid);
	if (!l && ib_cma_ps_of(sid) == IB_RDMA_PS_UDP)
		l = cm_listen_find_sid_locked(
			cm, d, 1,
			ib_cma_service_id(IB_RDMA_PS_TCP, (uint16_t)sid));
	g_mutex_unlock(&cm->lock);
	return l;
}

void ib_recv_sidr_req(struct cm *cm, struct ib_port *p,
		      const struct ib_mad *m, const struct ib_src *src,
		      uint64_t tid)
{
	struct ib_state *st = ib_of(cm);
	struct ual_device *d = ib_port_device(p);
	struct ib_cm_sidr_req r;
	struct ib_sidr_in *in;
	struct ib_dest dst;
	struct cm_listen *l;
	struct sockaddr_storage local, remote;
	const uint8_t *pdata;
	uint32_t pdata_len;
	const char *why = "";
	int gidx;

	ib_cm_sidr_req_decode(m, &r);
	gidx = ib_port_gid_index(p, (const void *)&src->to);
	if (gidx < 0)
		return;
	ib_reply_dest(src, gidx, &dst);
	g_mutex_lock(&st->lock);
	in = in_find_locked(st, r.request_id, &src->sgid);
	if (in) {
		/* 12.11.2: the requester sent it again; the answer, if
		 * there is one yet, goes out again, unchanged. */
		g_debug("%s duplicate SIDR_REQ %08x: %s", in->prefix,
			r.request_id,
			in->answered ? "SIDR_REP sent again" :
				       "not answered yet, dropped");
		if (in->answered)
			ib_port_send(p, &in->reply, &in->dest);
		g_mutex_unlock(&st->lock);
		return;
	}
	g_mutex_unlock(&st->lock);
	pdata = r.private_data;
	pdata_len = IB_CM_SIDR_REQ_PDATA;
	ib_gid_to_sockaddr(&src->dgid, &local);
	ib_gid_to_sockaddr(&src->sgid, &remote);
	if (ib_cma_ps_of(r.service_id)) {
		if (ib_cma_hdr_decode(r.private_data, (uint16_t)r.service_id,
				      &remote, &local, &why)) {
			g_info("%s SIDR_REQ %08x: %s; dropped",
			       ib_port_prefix(p), r.request_id, why);
			return;
		}
		pdata += IB_CMA_HDR_BYTES;
		pdata_len -= IB_CMA_HDR_BYTES;
	}
	l = sidr_listener(cm, d, r.service_id);
	in = g_new0(struct ib_sidr_in, 1);
	in->cm = cm;
	in->port = p;
	in->request_id = r.request_id;
	in->from = src->sgid;
	in->sid = r.service_id;
	in->dest = dst;
	ib_mad_cm_init(&in->reply, IB_CM_ATTR_SIDR_REP, tid);
	g_mutex_lock(&cm->lock);
	in->req_id = cm->next_req_id++;
	g_mutex_unlock(&cm->lock);
	snprintf(in->prefix, sizeof(in->prefix), "SIDR-IN[%" PRIu64 "] %s:",
		 in->req_id, ual_device_name(d));
	if (!l) {
		struct ib_cm_sidr_rep rep = {
			.request_id = r.request_id,
			.status = IB_SIDR_UNSUPPORTED,
			.service_id = r.service_id,
		};

		g_info("%s SIDR_REQ for 0x%016" PRIx64 ": nobody listens",
		       in->prefix, r.service_id);
		ib_cm_sidr_rep_encode(&in->reply, &rep);
		in->answered = true;
	}
	g_mutex_lock(&st->lock);
	g_hash_table_insert(st->sidr_in, &in->req_id, in);
	in->timer = cm_timeout_add(cm, in->answered ? SIDR_REMEMBER_MS :
						      cm->timeout_ms,
				   in_timeout,
				   g_memdup2(&in->req_id, sizeof(in->req_id)),
				   g_free);
	if (in->answered)
		ib_port_send(p, &in->reply, &in->dest);
	g_mutex_unlock(&st->lock);
	if (!l)
		return;
	{
		struct cm_event ev = {
			.type = CM_EV_SIDR_REQUEST,
			.req_id = in->req_id,
			.private_data = pdata,
			.private_data_len = ib_pdata_used(pdata, pdata_len),
			.local_addr = local,
			.remote_addr = remote,
			.device = d,
			.port_num = 1,
			.port = l->port,
			.service_id = r.service_id,
		};

		g_debug("%s SIDR_REQ for 0x%016" PRIx64 " reported to %s",
			in->prefix, r.service_id, l->prefix);
		g_rec_mutex_lock(&l->cb_lock);
		if (!l->dead && l->fn)
			l->fn(&ev, l->user_data);
		g_rec_mutex_unlock(&l->cb_lock);
	}
	cm_listen_unref(l);
}

int cm_ib_sidr_reply(uint64_t req_id, uint8_t status, uint32_t qpn,
		     uint32_t qkey, const void *pdata, uint32_t len)
{
	struct cm *cm = cm_running(__func__);
	struct ib_state *st;
	struct ib_cm_sidr_rep r = { 0 };
	struct ib_sidr_in *in;

	if (!cm)
		return -ENOTCONN;
	st = ib_of(cm);
	if (len > IB_CM_SIDR_REP_PDATA)
		return -EMSGSIZE;
	if (status > IB_SIDR_REDIRECT || qpn > 0xffffff)
		return -EINVAL;
	g_mutex_lock(&st->lock);
	in = g_hash_table_lookup(st->sidr_in, &req_id);
	if (!in || in->answered) {
		g_mutex_unlock(&st->lock);
		g_info("cm: SIDR reply: no pending request %" PRIu64, req_id);
		return -ENOENT;
	}
	r.request_id = in->request_id;
	r.status = status;
	r.service_id = in->sid;
	if (status == IB_SIDR_SUCCESS) {
		r.qpn = qpn;
		r.qkey = qkey;
	}
	if (len)
		memcpy(r.private_data, pdata, len);
	ib_cm_sidr_rep_encode(&in->reply, &r);
	in->answered = true;
	ib_port_send(in->port, &in->reply, &in->dest);
	cm_source_drop(&in->timer);
	in->timer = cm_timeout_add(cm, SIDR_REMEMBER_MS, in_timeout,
				   g_memdup2(&in->req_id, sizeof(in->req_id)),
				   g_free);
	g_mutex_unlock(&st->lock);
	g_debug("%s SIDR_REP sent: status %u, QP %06x", in->prefix, status,
		qpn);
	return 0;
}
