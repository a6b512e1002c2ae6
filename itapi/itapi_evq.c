/* SPDX-License-Identifier: MIT */
/*
 * itapi_evq.c - the machinery behind event dispatchers: the event ring,
 * the signalled state and its eventfd, aggregation into AEVDs, overflow,
 * and the pump thread that moves completions out of CQs. The IT-API
 * functions on EVDs are in itapi_evd.c.
 *
 * Every EVD keeps its events in a ring of sevd_queue_size entries. A DTO
 * SEVD is backed by a CQ of that size; completions move from the CQ into
 * the ring when the consumer dequeues or waits. While something watches
 * the EVD's signal from outside the library (its fd, handed out with
 * IT_EVD_CREATE_FD; a callback; an AEVD), the EVD pump thread also moves
 * them when the CQ's notification fd fires, so those learn of
 * completions without the consumer polling. An EVD that is only dequeued
 * or waited on is not watched: a polling consumer then pays no thread
 * wake-up per completion.
 *
 * Notification. An EVD is *signalled* while it is enabled, holds at least
 * max(threshold, 1) events, and at least one of them notifies (every
 * non-DTO event does; a completion does if its WR had IT_NOTIFY_FLAG, if
 * it failed, or if it is the receive of a solicited message). While
 * signalled, its eventfd is readable: that fd is what IT_EVD_CREATE_FD
 * hands out, what it_evd_wait sleeps on and what a callback source
 * watches. IT_THRESHOLD_DISABLE (0) means no threshold: one event is
 * enough.
 *
 * Aggregation. An SEVD created with an AEVD does not signal by itself: it
 * puts one IT_AEVD_NOTIFICATION_EVENT naming it on the AEVD when it
 * becomes signalled, and no second one until the consumer dequeued that
 * notification (the consumer then drains the SEVD). With
 * IT_EVD_DEQUEUE_NOTIFICATIONS on the SEVD, a notification still waiting
 * on the AEVD is withdrawn when the consumer empties the SEVD directly.
 * (The standard leaves this flag's exact effect open; this is hostrdma's
 * reading, documented in it_api(3).)
 *
 * Overflow. An event that finds the ring full is lost and the EVD is
 * marked overflowed; with IT_EVD_OVERFLOW_NOTIFY that raises
 * IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE on the IA's affiliated async EVD
 * (IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE when that one overflowed), with
 * IT_EVD_OVERFLOW_AUTO_RESET the mark clears once there is room again;
 * otherwise it_evd_modify(IT_EVD_PARAM_OVERFLOWED) clears it. A DTO SEVD
 * never drops: completions wait in the CQ, whose own overflow the provider
 * reports (CQ_ERR), which marks the SEVD overflowed the same way.
 *
 * Lock order: pump lock -> SEVD lock -> AEVD lock -> IA qpn lock -> WQ.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"

#define PUMP_BATCH 16

/* ------------------------------------------------------------------ */
/* References                                                          */
/* ------------------------------------------------------------------ */

struct itapi_evd *itapi_evd_ref(struct itapi_evd *evd)
{
	g_atomic_int_inc(&evd->ref);
	return evd;
}

void itapi_evd_unref(struct itapi_evd *evd)
{
	if (!evd || !g_atomic_int_dec_and_test(&evd->ref))
		return;
	if (evd->efd >= 0)
		close(evd->efd);
	g_mutex_clear(&evd->lock);
	g_free(evd->ring);
	g_free(evd);
}

/* ------------------------------------------------------------------ */
/* The ring and the signal                                             */
/* ------------------------------------------------------------------ */

size_t itapi_evq_threshold(const struct itapi_evd *evd)
{
	return evd->threshold ? evd->threshold : 1;
}

bool itapi_evq_signalled(const struct itapi_evd *evd)
{
	return evd->enabled && evd->count >= itapi_evq_threshold(evd) &&
	       evd->n_notify > 0;
}

/* The EVD's eventfd made readable, if it is not; under evd->lock. */
static void efd_raise(struct itapi_evd *evd)
{
	uint64_t v = 1;

	if (!evd->efd_set && write(evd->efd, &v, sizeof(v)) == sizeof(v))
		evd->efd_set = true;
}

/* The eventfd is readable exactly while the EVD is signalled, whenever
 * something can see it: the consumer's poll (IT_EVD_CREATE_FD), a
 * callback's source, a thread in it_evd_wait (which is also woken so
 * when what it sleeps on changes: evq_wake_waiter). An EVD nobody
 * watches keeps it as it was, sparing a consumer that dequeues two system
 * calls per notifying event; whoever starts watching syncs it first. */
void itapi_evq_sync(struct itapi_evd *evd)
{
	bool want = itapi_evq_signalled(evd);
	uint64_t v = 1;

	if (!(evd->flags & IT_EVD_CREATE_FD) && !evd->cb_source &&
	    !evd->waiters)
		return;

	if (want) {
		efd_raise(evd);
	} else if (evd->efd_set) {
		if (read(evd->efd, &v, sizeof(v)) == sizeof(v))
			evd->efd_set = false;
	}
}

bool itapi_evq_push(struct itapi_evd *evd, const it_event_t *ev,
			     bool notify)
{
	struct itapi_evq_entry *e;

	if (evd->count == evd->size)
		return false;
	e = &evd->ring[(evd->head + evd->count) % evd->size];
	e->ev = *ev;
	e->notify = notify;
	evd->count++;
	if (notify)
		evd->n_notify++;
	return true;
}

void itapi_evq_pop(struct itapi_evd *evd, it_event_t *out)
{
	struct itapi_evq_entry *e = &evd->ring[evd->head];

	*out = e->ev;
	if (e->notify)
		evd->n_notify--;
	evd->head = (evd->head + 1) % evd->size;
	evd->count--;
}

/* Remove the entries @match accepts, keeping the order of the others. */
static void ring_filter_locked(struct itapi_evd *evd,
			       bool (*match)(const it_event_t *, void *),
			       void *data)
{
	size_t kept = 0, n = evd->count;

	for (size_t i = 0; i < n; i++) {
		struct itapi_evq_entry e =
			evd->ring[(evd->head + i) % evd->size];

		if (match(&e.ev, data)) {
			if (e.notify)
				evd->n_notify--;
			evd->count--;
			continue;
		}
		evd->ring[(evd->head + kept) % evd->size] = e;
		kept++;
	}
}

static bool is_notification_of(const it_event_t *ev, void *sevd)
{
	return ev->event_number == IT_AEVD_NOTIFICATION_EVENT &&
	       ev->aevd_notify.sevd == sevd;
}

/* SEVD lock held: if it just became signalled, tell its AEVD once. */
void itapi_evq_notify_aevd(struct itapi_evd *sevd)
{
	struct itapi_evd *a = sevd->aevd;

	if (!a || !itapi_evq_signalled(sevd))
		return;
	g_mutex_lock(&a->lock);
	if (!sevd->aevd_pending) {
		it_event_t ev = { 0 };

		ev.aevd_notify.event_number = IT_AEVD_NOTIFICATION_EVENT;
		ev.aevd_notify.aevd = (it_evd_handle_t)a;
		ev.aevd_notify.sevd = (it_evd_handle_t)sevd;
		if (itapi_evq_push(a, &ev, true)) {
			sevd->aevd_pending = true;
		} else if (!a->overflowed) {
			a->overflowed = true;
			g_info("%s notification queue full (%zu); %s not announced",
			       a->obj.prefix, a->size, sevd->obj.prefix);
		}
		itapi_evq_sync(a);
	}
	g_mutex_unlock(&a->lock);
}

/* SEVD lock held: withdraw its waiting notification from the AEVD. */
void itapi_evq_withdraw(struct itapi_evd *sevd)
{
	struct itapi_evd *a = sevd->aevd;

	if (!a)
		return;
	g_mutex_lock(&a->lock);
	if (sevd->aevd_pending) {
		ring_filter_locked(a, is_notification_of, sevd);
		sevd->aevd_pending = false;
		itapi_evq_sync(a);
	}
	g_mutex_unlock(&a->lock);
}

static void overflow_report(struct itapi_evd *evd)
{
	struct itapi_ia *ia = evd->obj.ia;
	struct itapi_evd *aff = NULL, *unaff = NULL;
	it_event_t ev = { 0 };

	if (!(evd->flags & IT_EVD_OVERFLOW_NOTIFY))
		return;
	g_mutex_lock(&ia->lock);
	if (ia->aff_evd && ia->aff_evd != evd)
		aff = itapi_evd_ref(ia->aff_evd);
	else if (ia->unaff_evd && ia->unaff_evd != evd)
		unaff = itapi_evd_ref(ia->unaff_evd);
	g_mutex_unlock(&ia->lock);
	if (aff) {
		ev.aff_async.event_number = IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE;
		ev.aff_async.cause.sevd = (it_evd_handle_t)evd;
		itapi_evd_post(aff, &ev, true);
		itapi_evd_unref(aff);
	} else if (unaff) {
		ev.unaff_async.event_number =
			IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE;
		ev.unaff_async.ia = (it_ia_handle_t)ia;
		itapi_evd_post(unaff, &ev, true);
		itapi_evd_unref(unaff);
	}
}

it_status_t itapi_evd_post(struct itapi_evd *evd, it_event_t *ev,
			   bool notify)
{
	bool first_overflow;

	ev->any.evd = (it_evd_handle_t)evd;
	g_mutex_lock(&evd->lock);
	if (itapi_evq_push(evd, ev, notify)) {
		itapi_evq_sync(evd);
		itapi_evq_notify_aevd(evd);
		g_mutex_unlock(&evd->lock);
		return IT_SUCCESS;
	}
	first_overflow = !evd->overflowed;
	evd->overflowed = true;
	g_mutex_unlock(&evd->lock);
	g_info("%s queue full (%zu events): %s lost", evd->obj.prefix,
	       evd->size, itapi_event_name(ev->event_number));
	if (first_overflow)
		overflow_report(evd);
	return IT_ERR_EVD_QUEUE_FULL;
}

/* After a dequeue: bookkeeping shared by every way of dequeuing. */
void itapi_evq_after_dequeue(struct itapi_evd *evd, const it_event_t *ev)
{
	if (evd->is_aevd && ev->event_number == IT_AEVD_NOTIFICATION_EVENT) {
		struct itapi_evd *s = (struct itapi_evd *)ev->aevd_notify.sevd;

		/* aevd_pending is guarded by this AEVD's lock. */
		s->aevd_pending = false;
	}
	if (evd->overflowed && (evd->flags & IT_EVD_OVERFLOW_AUTO_RESET) &&
	    evd->count < evd->size)
		evd->overflowed = false;
	if (ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
	    g_atomic_int_get(&itapi_srq_eps))
		itapi_ep_srq_recv_released(ev->dto_cmpl.ep);
	itapi_evq_sync(evd);
	if (evd->aevd && (evd->flags & IT_EVD_DEQUEUE_NOTIFICATIONS) &&
	    !itapi_evq_signalled(evd))
		itapi_evq_withdraw(evd);
}

/* ------------------------------------------------------------------ */
/* DTO SEVDs: CQ -> ring, and the pump thread                          */
/* ------------------------------------------------------------------ */

struct wm_mark {
	struct itapi_ep *ep;
	uint32_t qp_num;	/* @ep's then: found again to act */
	unsigned int wm;
};

/* The consumer dequeues what the EVD holds: the provider's CQ is asked
 * for nothing, but a software provider may move on meanwhile (rnicpi.h,
 * poll_cq with n 0; soft-iWARP pushes its send queues and reads its
 * parked sockets): without it, fi_rma_bw 64 KiB over siw_lo, both sides
 * writing and reaping one completion at a time, lost a fifth of its
 * bandwidth. Called with evd->lock held, as the pump polls. */
void itapi_evd_nudge(struct itapi_evd *evd)
{
	ual_cq_poll(evd->cq, 0, NULL);
}

void itapi_evd_pump(struct itapi_evd *evd)
{
	struct rnicpi_wc wc[PUMP_BATCH];
	g_autoptr(GPtrArray) lost = NULL;
	g_autoptr(GArray) marks = NULL;	/* (EP, ITAPI_WM_*) pairs */

	if (!evd->cq)
		return;
	g_mutex_lock(&evd->lock);
	while (evd->count < evd->size) {
		int want = (int)MIN((size_t)PUMP_BATCH, evd->size - evd->count);
		int n = ual_cq_poll(evd->cq, want, wc);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			it_event_t ev;
			bool notify = false;
			it_ep_handle_t lost_ep = NULL;
			unsigned int wm = 0;

			if (!itapi_wc_to_event(evd->obj.ia, evd, &wc[i], &ev,
					       &notify, &lost_ep, &wm)) {
				if (!lost_ep)
					continue;
				if (!lost)
					lost = g_ptr_array_new();
				g_ptr_array_add(lost, lost_ep);
				continue;
			}
			ev.any.evd = (it_evd_handle_t)evd;
			itapi_evq_push(evd, &ev, notify);
			if (wm) {
				struct wm_mark m = {
					.ep = (struct itapi_ep *)ev.dto_cmpl.ep,
					.qp_num = wc[i].qp_num,
					.wm = wm,
				};

				if (!marks)
					marks = g_array_new(FALSE, FALSE,
							    sizeof(m));
				g_array_append_val(marks, m);
			}
		}
		if (n < want)
			break;
	}
	itapi_evq_sync(evd);
	itapi_evq_notify_aevd(evd);
	g_mutex_unlock(&evd->lock);
	for (guint i = 0; lost && i < lost->len; i++)
		itapi_post_affiliated(evd->obj.ia, IT_ASYNC_AFF_EP_FAILURE,
				      lost->pdata[i]);
	for (guint i = 0; marks && i < marks->len; i++) {
		const struct wm_mark *m =
			&g_array_index(marks, struct wm_mark, i);

		itapi_ep_watermark_act(evd->obj.ia, m->qp_num, m->ep, m->wm);
	}
}

/*
 * One progress engine for the process (rnicpi_engine.h through ual.h, the
 * providers' engine) watches the CQ fds of all DTO SEVDs; its thread is the pump.
 * Its lock is held while it works on an SEVD and while an SEVD is
 * removed, so a removed SEVD is never touched again. An SEVD's fd is an
 * engine source through a watch of its own: an epoll batch may still
 * name a watch that was removed, so a watch is looked up in the live
 * set before it is used, and freed only when the engine is.
 */
struct pump_watch {
	struct rnicpi_source src;
	struct itapi_evd *evd;
};

static struct {
	GMutex start_lock;	/* serialises starting and stopping */
	GMutex lock;
	GHashTable *sevds;	/* struct itapi_evd * -> its pump_watch */
	GHashTable *watches;	/* live struct pump_watch * (set) */
	GPtrArray *dead;	/* removed watches, freed with the engine */
	struct rnicpi_engine engine;
	bool running;
} pump;

/* The parent's pump state, kept (never touched) so that what it points
 * to stays reachable in the child rather than leaked. */
static GHashTable *volatile parent_sevds, *volatile parent_watches;
static GPtrArray *volatile parent_dead;

void itapi_evq_atfork_child(void)
{
	/* The thread is the parent's; the engine's epoll set, eventfd and
	 * timerfd are shared with the parent: only our copies of the
	 * descriptors are closed, and nothing is joined. */
	if (pump.running) {
		close(pump.engine.epfd);
		close(pump.engine.wake_fd);
		close(pump.engine.timer_fd);
		parent_sevds = pump.sevds;
		parent_watches = pump.watches;
		parent_dead = pump.dead;
	}
	pump.running = false;
	pump.sevds = NULL;
	pump.watches = NULL;
	pump.dead = NULL;
	g_mutex_init(&pump.lock);
	g_mutex_init(&pump.start_lock);
}

static bool pump_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct itapi_evd *evd;

	(void)events;
	g_mutex_lock(&pump.lock);
	if (!pump.watches || !g_hash_table_contains(pump.watches, src)) {
		g_mutex_unlock(&pump.lock);
		return false;
	}
	evd = ((struct pump_watch *)src)->evd;
	ual_cq_ack(evd->cq);
	itapi_evd_pump(evd);
	ual_cq_arm(evd->cq, false);
	/* What arrived between the poll and the arm. */
	itapi_evd_pump(evd);
	g_mutex_unlock(&pump.lock);
	return false;
}

/* With both locks held: if nothing is watched any more, say the engine
 * is to go (the caller calls pump_reap after dropping pump.lock). */
static bool pump_idle_locked(void)
{
	return pump.running && !g_hash_table_size(pump.sevds);
}

/* start_lock held, pump.lock not: stop the thread, free the engine and
 * the watches. */
static void pump_reap(void)
{
	rnicpi_engine_fini(&pump.engine);
	pump.running = false;
	g_hash_table_destroy(pump.sevds);
	pump.sevds = NULL;
	g_hash_table_destroy(pump.watches);
	pump.watches = NULL;
	g_ptr_array_free(pump.dead, TRUE);
	pump.dead = NULL;
}

/* Does anything watch @evd's signal without calling into the library:
 * a file descriptor the consumer polls, a callback, or an AEVD? Only then
 * must completions move out of the CQ as they arrive. A consumer that
 * dequeues moves them itself, and it_evd_wait sleeps on the CQ's fd, so
 * an EVD nobody watches costs no thread wake-up per completion. */
static bool evq_watched(struct itapi_evd *evd)
{
	bool w;

	g_mutex_lock(&evd->lock);
	w = (evd->flags & IT_EVD_CREATE_FD) || evd->cb || evd->aevd;
	g_mutex_unlock(&evd->lock);
	return w;
}

/*
 * A thread in it_evd_wait chose what to sleep on by whether the pump
 * watches the CQ: its own arm, the CQ's fd and the sockets a provider
 * left it, or the EVD's fd alone. When that changes under it (an AEVD
 * bound or unbound meanwhile) it wakes to choose again. Otherwise one
 * asleep on the EVD's fd alone when the AEVD went slept through the
 * completions that followed (nobody watched the CQ any more), and one
 * that held a provider's sockets when the AEVD came kept them asleep
 * while the pump could take the CQ's wake-ups, the one that asks a waiter
 * to let a closing socket go among them. The wake-up is the EVD's fd,
 * which its next pump reads back unless the EVD is signalled.
 */
static void evq_wake_waiter(struct itapi_evd *evd)
{
	g_mutex_lock(&evd->lock);
	if (evd->waiters)
		efd_raise(evd);
	g_mutex_unlock(&evd->lock);
}

int itapi_evq_watch_update(struct itapi_evd *evd)
{
	bool was = evd->pump_registered;
	int err = 0;

	if (!evd->cq)
		return 0;
	if (!evq_watched(evd)) {
		itapi_evq_pump_unregister(evd);
	} else if (!evd->pump_registered) {
		err = itapi_evq_pump_register(evd);
		/* What arrived before the CQ was armed raises no
		 * notification. */
		if (!err)
			itapi_evd_pump(evd);
	}
	if (evd->pump_registered != was)
		evq_wake_waiter(evd);
	return err;
}

int itapi_evq_pump_register(struct itapi_evd *evd)
{
	int fd = ual_cq_fd(evd->cq);
	struct pump_watch *w;
	bool reap = false;
	int err = 0;

	if (fd < 0) {
		g_info("%s the CQ has no notification fd: events arrive only when the consumer dequeues or waits",
		       evd->obj.prefix);
		return 0;
	}
	g_mutex_lock(&pump.start_lock);
	g_mutex_lock(&pump.lock);
	if (evd->pump_registered)
		goto out;
	if (!pump.running) {
		err = rnicpi_engine_init(&pump.engine, "hostrdma-evd", 0, NULL,
					 NULL);
		if (err)
			goto out;
		pump.sevds = g_hash_table_new(g_direct_hash, g_direct_equal);
		pump.watches = g_hash_table_new(g_direct_hash, g_direct_equal);
		pump.dead = g_ptr_array_new_with_free_func(g_free);
		pump.running = true;
		err = rnicpi_engine_start(&pump.engine);
		if (err) {
			reap = true;
			goto out;
		}
	}
	w = g_new0(struct pump_watch, 1);
	w->src.dispatch = pump_dispatch;
	w->evd = evd;
	err = rnicpi_engine_add(&pump.engine, fd, &w->src, EPOLLIN);
	if (err) {
		g_free(w);
		reap = pump_idle_locked();
		goto out;
	}
	g_hash_table_insert(pump.sevds, evd, w);
	g_hash_table_add(pump.watches, w);
	evd->pump_registered = true;
	ual_cq_arm(evd->cq, false);
out:
	g_mutex_unlock(&pump.lock);
	if (reap)
		pump_reap();
	g_mutex_unlock(&pump.start_lock);
	return err;
}

void itapi_evq_pump_unregister(struct itapi_evd *evd)
{
	struct pump_watch *w;
	bool reap;

	if (!evd->pump_registered)
		return;
	g_mutex_lock(&pump.start_lock);
	g_mutex_lock(&pump.lock);
	rnicpi_engine_del(&pump.engine, ual_cq_fd(evd->cq));
	w = g_hash_table_lookup(pump.sevds, evd);
	g_hash_table_remove(pump.sevds, evd);
	if (w) {
		g_hash_table_remove(pump.watches, w);
		g_ptr_array_add(pump.dead, w);
	}
	evd->pump_registered = false;
	reap = pump_idle_locked();
	g_mutex_unlock(&pump.lock);
	if (reap)
		pump_reap();
	g_mutex_unlock(&pump.start_lock);
}
