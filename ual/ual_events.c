/* SPDX-License-Identifier: MIT */
/*
 * ual_events.c - asynchronous events fanned out to subscribers, and
 * connection events handed to the one connection handler.
 *
 * Providers report through ual_core_ops (handed to every device_create);
 * ual maps the provider objects back to its own through core_ctx. The kal
 * netlink watch (ual_device.c) raises port events itself for providers
 * without netdev_event.
 *
 * Unsubscribing: when ual_async_unsubscribe (or a ual_set_conn_handler
 * that replaces a handler) returns, the callback is not running on any
 * other thread and will not be called again. Called from inside that same
 * callback it cannot wait for itself: it returns at once, the running call
 * finishes normally and no further call starts. Two callbacks that
 * unsubscribe each other at the same moment from two threads would wait
 * for each other; don't. No ual lock is held while a callback runs, so a
 * callback may call any ual function except ual_open / ual_close and
 * destroying the object its event is about.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>

#include "ual/ual_private.h"

struct ual_sub {
	gint ref;
	guint id;
	struct ual_device *filter; /* reference, or NULL for every device */
	ual_async_fn fn;
	ual_conn_fn conn_fn;
	void *user_data;
	guint running;	/* calls in progress, under ev_lock */
	bool removed;	/* under ev_lock */
};

/* The subscriber calls running on this thread, so that an unsubscribe
 * from inside a callback does not wait for itself. Nesting deeper than
 * the array (a callback raising an event whose callback raises one ...)
 * is not tracked past it: unsubscribing there would wait for itself. */
#define UAL_MAX_NESTED_CALLS 32
static _Thread_local struct ual_sub *current_calls[UAL_MAX_NESTED_CALLS];
static _Thread_local unsigned int n_current_calls;

struct sub_frame {
	bool pushed;
};

static const char *const event_names[] = {
	[RNICPI_EVENT_CQ_ERR] = "CQ_ERR",
	[RNICPI_EVENT_QP_FATAL] = "QP_FATAL",
	[RNICPI_EVENT_QP_REQ_ERR] = "QP_REQ_ERR",
	[RNICPI_EVENT_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
	[RNICPI_EVENT_COMM_EST] = "COMM_EST",
	[RNICPI_EVENT_SQ_DRAINED] = "SQ_DRAINED",
	[RNICPI_EVENT_PATH_MIG] = "PATH_MIG",
	[RNICPI_EVENT_PATH_MIG_ERR] = "PATH_MIG_ERR",
	[RNICPI_EVENT_DEVICE_FATAL] = "DEVICE_FATAL",
	[RNICPI_EVENT_PORT_ACTIVE] = "PORT_ACTIVE",
	[RNICPI_EVENT_PORT_ERR] = "PORT_ERR",
	[RNICPI_EVENT_LID_CHANGE] = "LID_CHANGE",
	[RNICPI_EVENT_PKEY_CHANGE] = "PKEY_CHANGE",
	[RNICPI_EVENT_SM_CHANGE] = "SM_CHANGE",
	[RNICPI_EVENT_SRQ_ERR] = "SRQ_ERR",
	[RNICPI_EVENT_SRQ_LIMIT_REACHED] = "SRQ_LIMIT_REACHED",
	[RNICPI_EVENT_QP_LAST_WQE_REACHED] = "QP_LAST_WQE_REACHED",
	[RNICPI_EVENT_CLIENT_REREGISTER] = "CLIENT_REREGISTER",
	[RNICPI_EVENT_GID_CHANGE] = "GID_CHANGE",
};

const char *ual_event_type_name(enum rnicpi_event_type type)
{
	if ((unsigned int)type < G_N_ELEMENTS(event_names) &&
	    event_names[type])
		return event_names[type];
	return "UNKNOWN";
}

static void sub_unref(struct ual_sub *s)
{
	if (!s || !g_atomic_int_dec_and_test(&s->ref))
		return;
	if (s->filter)
		ual_device_put(s->filter);
	g_free(s);
}

static void sub_unref_notify(gpointer s)
{
	sub_unref(s);
}

static struct ual_sub *sub_ref(struct ual_sub *s)
{
	g_atomic_int_inc(&s->ref);
	return s;
}

/* Start a call of @s unless it was removed; pushes @f. */
static bool sub_enter(struct ual *u, struct ual_sub *s, struct sub_frame *f)
{
	bool ok;

	g_mutex_lock(&u->ev_lock);
	ok = !s->removed;
	if (ok)
		s->running++;
	g_mutex_unlock(&u->ev_lock);
	f->pushed = ok && n_current_calls < UAL_MAX_NESTED_CALLS;
	if (f->pushed)
		current_calls[n_current_calls] = s;
	if (ok)
		n_current_calls++;
	return ok;
}

static void sub_leave(struct ual *u, struct ual_sub *s, struct sub_frame *f)
{
	n_current_calls--;
	if (f->pushed)
		current_calls[n_current_calls] = NULL;
	g_mutex_lock(&u->ev_lock);
	s->running--;
	if (s->removed)
		g_cond_broadcast(&u->ev_cond);
	g_mutex_unlock(&u->ev_lock);
}

/* Under ev_lock: no call of @s starts any more; wait for the calls on
 * other threads to finish (those on this thread are our callers). */
static void sub_retire(struct ual *u, struct ual_sub *s)
{
	unsigned int i, n = MIN(n_current_calls, UAL_MAX_NESTED_CALLS);
	guint mine = 0;

	for (i = 0; i < n; i++)
		if (current_calls[i] == s)
			mine++;
	s->removed = true;
	while (s->running > mine)
		g_cond_wait(&u->ev_cond, &u->ev_lock);
}

void ual_events_init(struct ual *u)
{
	g_mutex_init(&u->ev_lock);
	g_cond_init(&u->ev_cond);
	u->subs = g_ptr_array_new();
}

void ual_events_clear(struct ual *u)
{
	GPtrArray *subs;
	struct ual_sub *conn;
	guint i;

	g_mutex_lock(&u->ev_lock);
	subs = u->subs;
	u->subs = g_ptr_array_new();
	conn = g_steal_pointer(&u->conn_sub);
	for (i = 0; i < subs->len; i++)
		sub_retire(u, subs->pdata[i]);
	if (conn)
		sub_retire(u, conn);
	g_mutex_unlock(&u->ev_lock);
	if (subs->len)
		g_debug("%u async subscriptions dropped with the context",
			subs->len);
	g_ptr_array_set_free_func(subs, sub_unref_notify);
	g_ptr_array_unref(subs);
	sub_unref(conn);
}

void ual_events_fini(struct ual *u)
{
	ual_events_clear(u);
	g_ptr_array_unref(u->subs);
	g_cond_clear(&u->ev_cond);
	g_mutex_clear(&u->ev_lock);
}

guint ual_async_subscribe(struct ual *u, struct ual_device *d,
			  ual_async_fn fn, void *user_data)
{
	struct ual_sub *s;

	g_return_val_if_fail(u && fn, 0);
	s = g_new0(struct ual_sub, 1);
	s->ref = 1;
	s->filter = d ? ual_device_get(d) : NULL;
	s->fn = fn;
	s->user_data = user_data;
	g_mutex_lock(&u->ev_lock);
	if (++u->next_sub_id == 0)
		u->next_sub_id = 1;
	s->id = u->next_sub_id;
	g_ptr_array_add(u->subs, s);
	g_mutex_unlock(&u->ev_lock);
	g_debug("async subscription %u for %s", s->id,
		d ? ual_device_name(d) : "every device");
	return s->id;
}

void ual_async_unsubscribe(struct ual *u, guint id)
{
	struct ual_sub *s = NULL;
	guint i;

	g_mutex_lock(&u->ev_lock);
	for (i = 0; i < u->subs->len; i++) {
		if (((struct ual_sub *)u->subs->pdata[i])->id == id) {
			s = g_ptr_array_steal_index(u->subs, i);
			break;
		}
	}
	if (s)
		sub_retire(u, s);
	g_mutex_unlock(&u->ev_lock);
	if (!s) {
		g_warning("async unsubscribe: no subscription %u", id);
		return;
	}
	sub_unref(s);
}

void ual_events_dispatch(struct ual *u, const struct ual_async_event *ev)
{
	g_autoptr(GPtrArray) snap =
		g_ptr_array_new_with_free_func(sub_unref_notify);
	guint i;

	g_mutex_lock(&u->ev_lock);
	for (i = 0; i < u->subs->len; i++) {
		struct ual_sub *s = u->subs->pdata[i];

		if (!s->removed && (!s->filter || s->filter == ev->device))
			g_ptr_array_add(snap, sub_ref(s));
	}
	g_mutex_unlock(&u->ev_lock);
	g_debug("%s async event %s (port %u, status %d) to %u subscribers",
		ev->device->obj.prefix, ual_event_type_name(ev->type),
		ev->port_num, ev->status, snap->len);
	for (i = 0; i < snap->len; i++) {
		struct ual_sub *s = snap->pdata[i];
		struct sub_frame f;

		if (!sub_enter(u, s, &f))
			continue;
		s->fn(ev, s->user_data);
		sub_leave(u, s, &f);
	}
}

void ual_events_synthesize(struct ual_device *d, enum rnicpi_event_type type)
{
	struct ual_async_event ev = {
		.type = type,
		.device = d,
		.port_num = 1,
	};

	ual_events_dispatch(d->u, &ev);
}

/* Which object of @rev the type names; false if the provider left it out
 * or it is not (yet) one of ours. */
static bool map_element(struct ual_device *d,
			const struct rnicpi_async_event *rev,
			struct ual_async_event *ev)
{
	switch (rev->type) {
	case RNICPI_EVENT_QP_FATAL:
	case RNICPI_EVENT_QP_REQ_ERR:
	case RNICPI_EVENT_QP_ACCESS_ERR:
	case RNICPI_EVENT_COMM_EST:
	case RNICPI_EVENT_SQ_DRAINED:
	case RNICPI_EVENT_PATH_MIG:
	case RNICPI_EVENT_PATH_MIG_ERR:
	case RNICPI_EVENT_QP_LAST_WQE_REACHED:
		ev->qp = rev->element.qp ? rev->element.qp->core_ctx : NULL;
		return ev->qp != NULL;
	case RNICPI_EVENT_CQ_ERR:
		ev->cq = rev->element.cq ? rev->element.cq->core_ctx : NULL;
		return ev->cq != NULL;
	case RNICPI_EVENT_SRQ_ERR:
	case RNICPI_EVENT_SRQ_LIMIT_REACHED:
		ev->srq = rev->element.srq ? rev->element.srq->core_ctx : NULL;
		return ev->srq != NULL;
	case RNICPI_EVENT_PORT_ACTIVE:
	case RNICPI_EVENT_PORT_ERR:
	case RNICPI_EVENT_LID_CHANGE:
	case RNICPI_EVENT_PKEY_CHANGE:
	case RNICPI_EVENT_SM_CHANGE:
	case RNICPI_EVENT_CLIENT_REREGISTER:
	case RNICPI_EVENT_GID_CHANGE:
		ev->port_num = rev->element.port_num;
		return true;
	case RNICPI_EVENT_DEVICE_FATAL:
		return true;
	}
	return false;
}

static void core_async_event(struct rnicpi_device *rdev,
			     const struct rnicpi_async_event *rev)
{
	struct ual_device *d = ual_device_from_rnicpi(rdev);
	struct ual_async_event ev = { 0 };

	if (!d || !rev) {
		g_warning("async event from an unknown device %p; dropped",
			  (void *)rdev);
		return;
	}
	ev.type = rev->type;
	ev.device = d;
	ev.term_layer = rev->term_layer;
	ev.term_etype = rev->term_etype;
	ev.term_ecode = rev->term_ecode;
	ev.term_remote = rev->term_remote;
	ev.status = rev->status;
	if ((unsigned int)rev->type >= G_N_ELEMENTS(event_names) ||
	    !event_names[rev->type]) {
		g_warning("%s async event of unknown type %d; dropped",
			  d->obj.prefix, (int)rev->type);
		return;
	}
	if (!map_element(d, rev, &ev)) {
		g_warning("%s async event %s names no object of ours; dropped",
			  d->obj.prefix, ual_event_type_name(rev->type));
		return;
	}
	ual_events_dispatch(d->u, &ev);
}

static const char *const conn_event_names[] = {
	[RNICPI_CONN_REQUEST] = "REQUEST",
	[RNICPI_CONN_ESTABLISHED] = "ESTABLISHED",
	[RNICPI_CONN_REJECTED] = "REJECTED",
	[RNICPI_CONN_ERROR] = "ERROR",
	[RNICPI_CONN_DISCONNECTED] = "DISCONNECTED",
};

static const char *conn_event_name(enum rnicpi_conn_event_type type)
{
	if ((unsigned int)type < G_N_ELEMENTS(conn_event_names) &&
	    conn_event_names[type])
		return conn_event_names[type];
	return "UNKNOWN";
}

static void core_conn_event(struct rnicpi_device *rdev,
			    const struct rnicpi_conn_event *event)
{
	struct ual_device *d = ual_device_from_rnicpi(rdev);
	struct ual_sub *s = NULL;
	struct sub_frame f;
	struct ual *u;

	if (!d || !event) {
		g_warning("connection event from an unknown device %p; dropped",
			  (void *)rdev);
		return;
	}
	u = d->u;
	g_mutex_lock(&u->ev_lock);
	if (u->conn_sub && !u->conn_sub->removed)
		s = sub_ref(u->conn_sub);
	g_mutex_unlock(&u->ev_lock);
	if (!s) {
		g_warning("%s connection event %s (status %d) and no connection handler; dropped",
			  d->obj.prefix, conn_event_name(event->type),
			  event->status);
		return;
	}
	if (sub_enter(u, s, &f)) {
		s->conn_fn(d, event, s->user_data);
		sub_leave(u, s, &f);
	}
	sub_unref(s);
}

void ual_set_conn_handler(struct ual *u, ual_conn_fn fn, void *user_data)
{
	struct ual_sub *s = NULL, *old;

	if (fn) {
		s = g_new0(struct ual_sub, 1);
		s->ref = 1;
		s->conn_fn = fn;
		s->user_data = user_data;
	}
	g_mutex_lock(&u->ev_lock);
	old = u->conn_sub;
	u->conn_sub = s;
	if (old)
		sub_retire(u, old);
	g_mutex_unlock(&u->ev_lock);
	sub_unref(old);
}

const struct rnicpi_core_ops ual_core_ops = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = core_async_event,
	.conn_event = core_conn_event,
	.host_udp_socket = ual_host_udp_socket,
};
