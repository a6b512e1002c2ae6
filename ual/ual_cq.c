/* SPDX-License-Identifier: MIT */
/*
 * ual_cq.c - completion queues: the provider's CQ with its notification
 * file descriptor, and a GSource on it.
 *
 * Notification follows rnicpi.h: arm (one-shot), a matching completion
 * makes the fd readable, ack consumes the readiness. The GSource watches
 * the fd, acks, then calls the consumer, which usually polls, re-arms and
 * polls again (to catch what arrived between the poll and the arm).
 *
 * A source holds a reference on the CQ, released when the source is
 * finalized. Destroying the CQ destroys its sources (g_source_destroy):
 * they stop dispatching, and the owner still unrefs them.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>

#include "ual/ual_private.h"

struct ual_cq_source {
	GSource source;
	struct ual_cq *cq;	/* reference */
	gpointer fd_tag;
};

static void cq_release(struct ual_obj *obj)
{
	struct ual_cq *cq = container_of(obj, struct ual_cq, obj);

	g_assert(!cq->sources);
	ual_device_put(cq->dev);
	g_free(cq);
}

void ual_cq_get(struct ual_cq *cq)
{
	ual_obj_get(&cq->obj);
}

void ual_cq_put(struct ual_cq *cq)
{
	if (cq)
		ual_obj_put(&cq->obj);
}

int ual_cq_create(struct ual_device *d, uint32_t cqe, struct ual_cq **out)
{
	struct rnicpi_cq_init_attr attr = { .cqe = cqe };
	struct rnicpi_cq *rcq = NULL;
	struct ual_cq *cq;
	int err;

	if (cqe == 0) {
		ual_obj_fail(&d->obj, -EINVAL, "create_cq: 0 entries");
		return -EINVAL;
	}
	err = ual_obj_reserve_child(&d->obj, "a CQ");
	if (err)
		return err;
	err = d->ops.create_cq(d->rdev, &attr, &rcq);
	if (err) {
		ual_obj_fail(&d->obj, err, "create_cq of %u entries", cqe);
		ual_obj_release_child(&d->obj);
		return err;
	}
	cq = g_new0(struct ual_cq, 1);
	ual_obj_init(&cq->obj, cq_release);
	ual_obj_set_prefix(&cq->obj, "CQ[%d] %s:",
			   g_atomic_int_add(&d->next_id, 1), d->name);
	cq->dev = ual_device_get(d);
	cq->rcq = rcq;
	cq->fd = rcq->notify_fd;
	rcq->core_ctx = cq;
	ual_obj_debug(&cq->obj, "created, %u entries (asked %u), fd %d",
		      rcq->cqe, cqe, cq->fd);
	*out = cq;
	return 0;
}

int ual_cq_destroy(struct ual_cq *cq)
{
	struct ual_device *d = cq->dev;
	int err;

	err = ual_obj_lock_alive(&cq->obj, "destroy");
	if (err)
		return err;
	err = ual_obj_begin_destroy(&cq->obj, "QP queues");
	if (err)
		goto out_unlock;
	/* Detach the sources first so that no main loop polls the fd once
	 * the provider has closed it (g_source_destroy only unlinks; a
	 * dispatch running elsewhere waits for live and then sees -ENODEV). */
	ual_cq_detach_sources(cq);
	err = d->ops.destroy_cq(cq->rcq);
	if (err) {
		g_rw_lock_writer_unlock(&cq->obj.live);
		ual_obj_fail(&cq->obj, err, "destroy_cq");
		goto out_unlock;
	}
	cq->rcq = NULL;
	cq->fd = -1;
	ual_obj_end_destroy(&cq->obj);
	g_rec_mutex_unlock(&cq->obj.ctl);
	ual_obj_release_child(&d->obj);
	ual_obj_debug(&cq->obj, "destroyed");
	ual_cq_put(cq);
	return 0;

out_unlock:
	g_rec_mutex_unlock(&cq->obj.ctl);
	return err;
}

int ual_cq_resize(struct ual_cq *cq, uint32_t cqe)
{
	int err;

	err = ual_obj_lock_alive(&cq->obj, "resize");
	if (err)
		return err;
	err = cq->dev->ops.resize_cq(cq->rcq, cqe);
	g_rec_mutex_unlock(&cq->obj.ctl);
	if (err)
		ual_obj_fail(&cq->obj, err, "resize_cq to %u entries", cqe);
	return err;
}

uint32_t ual_cq_size(const struct ual_cq *cq)
{
	const struct rnicpi_cq *rcq = cq->rcq;

	return rcq ? rcq->cqe : 0;
}

int ual_cq_poll(struct ual_cq *cq, int n, struct rnicpi_wc *wc)
{
	int ret;

	ret = ual_obj_read_alive(&cq->obj);
	if (ret)
		return ret;
	ret = cq->dev->ops.poll_cq(cq->rcq, n, wc);
	g_rw_lock_reader_unlock(&cq->obj.live);
	return ret;
}

int ual_cq_arm(struct ual_cq *cq, bool solicited_only)
{
	int err;

	err = ual_obj_read_alive(&cq->obj);
	if (err)
		return err;
	err = cq->dev->ops.req_notify_cq(cq->rcq, solicited_only);
	g_rw_lock_reader_unlock(&cq->obj.live);
	return err;
}

int ual_cq_fd(const struct ual_cq *cq)
{
	return cq->fd;
}

int ual_cq_wait_begin(struct ual_cq *cq, int *fds, int max)
{
	int n;

	if (ual_obj_read_alive(&cq->obj))
		return 0;
	n = cq->dev->ops.cq_wait_begin(cq->rcq, fds, max);
	g_rw_lock_reader_unlock(&cq->obj.live);
	return n < 0 ? 0 : MIN(n, max);
}

void ual_cq_wait_end(struct ual_cq *cq)
{
	if (ual_obj_read_alive(&cq->obj))
		return;
	cq->dev->ops.cq_wait_end(cq->rcq);
	g_rw_lock_reader_unlock(&cq->obj.live);
}

int ual_cq_ack(struct ual_cq *cq)
{
	int err;

	err = ual_obj_read_alive(&cq->obj);
	if (err)
		return err;
	err = cq->dev->ops.ack_cq_event(cq->rcq);
	g_rw_lock_reader_unlock(&cq->obj.live);
	return err;
}

/* ------------------------------------------------------------------ */
/* GSource                                                             */
/* ------------------------------------------------------------------ */

static gboolean cq_source_dispatch(GSource *source, GSourceFunc callback,
				   gpointer user_data)
{
	struct ual_cq_source *s = (struct ual_cq_source *)source;
	ual_cq_source_fn fn = (ual_cq_source_fn)(void (*)(void))callback;
	GIOCondition revents = g_source_query_unix_fd(source, s->fd_tag);
	int err;

	if (revents & G_IO_NVAL) {
		ual_obj_warn(&s->cq->obj, "notification fd closed; source removed");
		return G_SOURCE_REMOVE;
	}
	if (!(revents & G_IO_IN))
		return G_SOURCE_CONTINUE;
	err = ual_cq_ack(s->cq);
	if (err == -ENODEV)
		return G_SOURCE_REMOVE;
	/* -EAGAIN: someone else acked first (a poll loop on the same fd);
	 * the consumer polls anyway, which is harmless. */
	if (!fn) {
		ual_obj_warn(&s->cq->obj,
			     "source dispatched without a callback; removed");
		return G_SOURCE_REMOVE;
	}
	return fn(s->cq, user_data);
}

static void cq_source_finalize(GSource *source)
{
	struct ual_cq_source *s = (struct ual_cq_source *)source;
	struct ual_cq *cq = s->cq;

	g_rec_mutex_lock(&cq->obj.ctl);
	cq->sources = g_slist_remove(cq->sources, s);
	g_rec_mutex_unlock(&cq->obj.ctl);
	ual_cq_put(cq);
}

static GSourceFuncs cq_source_funcs = {
	.dispatch = cq_source_dispatch,
	.finalize = cq_source_finalize,
};

GSource *ual_cq_source_new(struct ual_cq *cq)
{
	struct ual_cq_source *s;

	if (ual_obj_lock_alive(&cq->obj, "source_new"))
		return NULL;
	if (cq->fd < 0) {
		g_rec_mutex_unlock(&cq->obj.ctl);
		ual_obj_fail(&cq->obj, -EOPNOTSUPP,
			     "source_new: the provider gives this CQ no notification fd");
		return NULL;
	}
	s = (struct ual_cq_source *)g_source_new(&cq_source_funcs,
						 sizeof(*s));
	g_source_set_static_name(&s->source, "ual-cq");
	ual_cq_get(cq);
	s->cq = cq;
	s->fd_tag = g_source_add_unix_fd(&s->source, cq->fd, G_IO_IN);
	cq->sources = g_slist_prepend(cq->sources, s);
	g_rec_mutex_unlock(&cq->obj.ctl);
	return &s->source;
}

void ual_cq_detach_sources(struct ual_cq *cq)
{
	GSList *copy = NULL, *l;

	/* Destroying a source whose only reference was its context's
	 * finalizes it right here, and finalize unlinks it from cq->sources
	 * (ctl is recursive): walk a copy that holds references. */
	for (l = cq->sources; l; l = l->next)
		copy = g_slist_prepend(copy, g_source_ref(l->data));
	for (l = copy; l; l = l->next)
		g_source_destroy(l->data);
	g_slist_free_full(copy, (GDestroyNotify)g_source_unref);
}
