/* SPDX-License-Identifier: MIT */
/*
 * itapi_evd.c - the IT-API functions on event dispatchers: create, free,
 * query, modify, dequeue, wait, software events, callbacks. What an EVD is
 * and how it signals, aggregates and overflows is in itapi_evq.c.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <glib-unix.h>

#include "itapi/itapi_priv.h"

/* Largest queue of a non-DTO EVD (a DTO EVD is bounded by max_cqe). */
#define ITAPI_MAX_QUEUE (1u << 20)
/* Sockets a software provider may leave to a thread asleep in
 * it_evd_wait (ual_cq_wait_begin); the rest stay with its own thread. */
#define ITAPI_WAIT_FDS 8

/* ------------------------------------------------------------------ */
/* Create, free                                                        */
/* ------------------------------------------------------------------ */

static bool stream_ok(it_event_type_t s)
{
	switch ((unsigned int)s) {
	case IT_DTO_EVENT_STREAM:
	case IT_CM_REQ_EVENT_STREAM:
	case IT_CM_MSG_EVENT_STREAM:
	case IT_ASYNC_AFF_EVENT_STREAM:
	case IT_ASYNC_UNAFF_EVENT_STREAM:
	case IT_SOFTWARE_EVENT_STREAM:
	case IT_AEVD_NOTIFICATION_EVENT_STREAM:
		return true;
	default:
		return false;
	}
}

static const char *stream_kind(it_event_type_t s)
{
	switch ((unsigned int)s) {
	case IT_DTO_EVENT_STREAM: return "EVD-DTO";
	case IT_CM_REQ_EVENT_STREAM: return "EVD-CMREQ";
	case IT_CM_MSG_EVENT_STREAM: return "EVD-CMMSG";
	case IT_ASYNC_AFF_EVENT_STREAM: return "EVD-AFF";
	case IT_ASYNC_UNAFF_EVENT_STREAM: return "EVD-UNAFF";
	case IT_SOFTWARE_EVENT_STREAM: return "EVD-SW";
	default: return "AEVD";
	}
}

#define EVD_FLAGS_ALL                                                       \
	(IT_EVD_DEQUEUE_NOTIFICATIONS | IT_EVD_CREATE_FD |                   \
	 IT_EVD_OVERFLOW_DEFAULT | IT_EVD_OVERFLOW_NOTIFY |                  \
	 IT_EVD_OVERFLOW_AUTO_RESET)

it_status_t it_evd_create(it_ia_handle_t ia_handle,
			  it_event_type_t event_number, it_evd_flags_t evd_flag,
			  size_t sevd_queue_size, size_t sevd_threshold,
			  it_evd_handle_t aevd_handle,
			  it_evd_handle_t *evd_handle, int *fd)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	bool is_aevd = event_number == IT_AEVD_NOTIFICATION_EVENT_STREAM;
	struct itapi_evd *aevd = NULL, *evd;
	size_t max_q = ITAPI_MAX_QUEUE;
	it_status_t st;
	int err;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!evd_handle)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT, "evd_handle is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&ia->obj, st, "the device failed");
	if (!stream_ok(event_number))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_EVD_TYPE,
			       "event_number 0x%x is not an event stream",
			       (unsigned int)event_number);
	if ((unsigned int)evd_flag & ~(unsigned int)EVD_FLAGS_ALL)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x",
			       (unsigned int)evd_flag & ~EVD_FLAGS_ALL);
	if ((evd_flag & IT_EVD_OVERFLOW_DEFAULT) &&
	    (evd_flag & (IT_EVD_OVERFLOW_NOTIFY | IT_EVD_OVERFLOW_AUTO_RESET)))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "IT_EVD_OVERFLOW_DEFAULT with another overflow flag");
	if (aevd_handle) {
		aevd = ITAPI_LOOKUP(aevd_handle, struct itapi_evd,
				    IT_HANDLE_TYPE_EVD);
		if (!aevd || !aevd->is_aevd || aevd->obj.ia != ia)
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_AEVD,
				       "aevd_handle %p is not an AEVD of this IA",
				       (void *)aevd_handle);
		if (is_aevd)
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_AEVD,
				       "an AEVD cannot feed another AEVD");
		if (evd_flag & IT_EVD_CREATE_FD)
			return IT_FAIL(&ia->obj, IT_ERR_AEVD_NOT_ALLOWED,
				       "IT_EVD_CREATE_FD on an SEVD of an AEVD: poll the AEVD's fd");
	}
	if ((evd_flag & IT_EVD_DEQUEUE_NOTIFICATIONS) && !aevd)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "IT_EVD_DEQUEUE_NOTIFICATIONS without an AEVD");
	if ((evd_flag & IT_EVD_CREATE_FD) && !fd)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT,
			       "IT_EVD_CREATE_FD and fd is NULL");
	if (sevd_queue_size == 0)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_QUEUE_SIZE,
			       "queue size 0");
	if (event_number == IT_DTO_EVENT_STREAM)
		max_q = ia->attr.max_cqe;
	if (sevd_queue_size > max_q)
		return IT_FAIL(&ia->obj, IT_ERR_RESOURCE_QUEUE_SIZE,
			       "queue size %zu over the limit %zu",
			       sevd_queue_size, max_q);
	if (sevd_threshold > sevd_queue_size)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_THRESHOLD,
			       "threshold %zu over the queue size %zu",
			       sevd_threshold, sevd_queue_size);

	evd = g_new0(struct itapi_evd, 1);
	evd->ref = 1;
	itapi_obj_init(&evd->obj, IT_HANDLE_TYPE_EVD, ia,
		       stream_kind(event_number));
	evd->stream = event_number;
	evd->flags = evd_flag;
	evd->is_aevd = is_aevd;
	g_mutex_init(&evd->lock);
	evd->size = sevd_queue_size;
	evd->ring = g_new0(struct itapi_evq_entry, sevd_queue_size);
	evd->threshold = sevd_threshold;
	evd->enabled = true;
	evd->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (evd->efd < 0) {
		err = -errno;
		itapi_evd_unref(evd);
		return IT_FAIL_ERRNO(&ia->obj, err, ITAPI_CTX_EVD,
				     "eventfd: %s", g_strerror(-err));
	}
	if (event_number == IT_DTO_EVENT_STREAM) {
		err = ual_cq_create(ia->dev, (uint32_t)sevd_queue_size,
				    &evd->cq);
		if (err) {
			itapi_evd_unref(evd);
			return IT_FAIL_ERRNO(&ia->obj, err, ITAPI_CTX_EVD,
					     "create_cq of %zu: %s",
					     sevd_queue_size,
					     g_strerror(-err));
		}
	}

	/* One affiliated and one unaffiliated async EVD per IA. */
	g_mutex_lock(&ia->lock);
	if (event_number == IT_ASYNC_AFF_EVENT_STREAM && ia->aff_evd) {
		g_mutex_unlock(&ia->lock);
		itapi_evd_unref(evd);
		return IT_FAIL(&ia->obj, IT_ERR_ASYNC_AFF_EVD_EXISTS,
			       "the IA has an affiliated async EVD");
	}
	if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM && ia->unaff_evd) {
		g_mutex_unlock(&ia->lock);
		itapi_evd_unref(evd);
		return IT_FAIL(&ia->obj, IT_ERR_ASYNC_UNAFF_EVD_EXISTS,
			       "the IA has an unaffiliated async EVD");
	}
	if (event_number == IT_ASYNC_AFF_EVENT_STREAM)
		ia->aff_evd = evd;
	if (event_number == IT_ASYNC_UNAFF_EVENT_STREAM)
		ia->unaff_evd = evd;
	if (aevd) {
		evd->aevd = itapi_evd_ref(aevd);
		aevd->bound_sevds++;
	}
	g_mutex_unlock(&ia->lock);

	if (evd->cq) {
		err = itapi_evq_watch_update(evd);
		if (err) {
			g_warning("%s cannot watch the CQ: %s", evd->obj.prefix,
				  g_strerror(-err));
		}
	}
	itapi_ia_add_child(ia, &evd->obj);
	if (fd)
		*fd = (evd_flag & IT_EVD_CREATE_FD) ? evd->efd : -1;
	itapi_debug(&evd->obj, "created, %zu entries, threshold %zu%s",
		    sevd_queue_size, sevd_threshold,
		    aevd ? ", feeding an AEVD" : "");
	*evd_handle = (it_evd_handle_t)evd;
	return IT_SUCCESS;
}

static void callback_drop_locked(struct itapi_evd *evd)
{
	if (evd->cb_source) {
		g_source_destroy(evd->cb_source);
		g_source_unref(evd->cb_source);
		evd->cb_source = NULL;
	}
	evd->cb = NULL;
	evd->cb_arg = NULL;
}

/* Take @evd out of its IA and free what it holds (no busy checks). */
void itapi_evd_destroy(struct itapi_evd *evd)
{
	struct itapi_ia *ia = evd->obj.ia;
	struct itapi_evd *aevd;
	int err;

	itapi_ia_del_child(ia, &evd->obj);
	itapi_evq_pump_unregister(evd);
	g_mutex_lock(&evd->lock);
	callback_drop_locked(evd);
	itapi_evq_withdraw(evd);
	aevd = g_steal_pointer(&evd->aevd);
	g_mutex_unlock(&evd->lock);
	g_mutex_lock(&ia->lock);
	if (ia->aff_evd == evd)
		ia->aff_evd = NULL;
	if (ia->unaff_evd == evd)
		ia->unaff_evd = NULL;
	if (aevd)
		aevd->bound_sevds--;
	g_mutex_unlock(&ia->lock);
	itapi_evd_unref(aevd);
	if (evd->cq) {
		err = ual_cq_destroy(evd->cq);
		if (err)
			g_warning("%s destroy_cq: %s", evd->obj.prefix,
				  g_strerror(-err));
		evd->cq = NULL;
	}
	itapi_debug(&evd->obj, "freed");
	itapi_evd_unref(evd);
}

it_status_t it_evd_free(it_evd_handle_t evd_handle)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	struct itapi_ia *ia;
	guint users, bound;
	int waiters;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	ia = evd->obj.ia;
	g_mutex_lock(&ia->lock);
	users = evd->users;
	bound = evd->bound_sevds;
	g_mutex_unlock(&ia->lock);
	g_mutex_lock(&evd->lock);
	waiters = evd->waiters;
	g_mutex_unlock(&evd->lock);
	if (users)
		return IT_FAIL(&evd->obj, IT_ERR_EVD_BUSY,
			       "%u endpoints, listeners or SRQs use it", users);
	if (bound)
		return IT_FAIL(&evd->obj, IT_ERR_EVD_BUSY,
			       "%u SEVDs feed this AEVD", bound);
	if (waiters)
		return IT_FAIL(&evd->obj, IT_ERR_EVD_WAIT,
			       "a thread waits on it");
	itapi_evd_destroy(evd);
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Query, modify                                                       */
/* ------------------------------------------------------------------ */

#define EVD_PARAM_ALL_BITS 0xfffu
#define EVD_PARAM_MODIFIABLE                                                \
	(IT_EVD_PARAM_ALL | IT_EVD_PARAM_QUEUE_SIZE |                        \
	 IT_EVD_PARAM_THRESHOLD | IT_EVD_PARAM_AEVD_HANDLE |                 \
	 IT_EVD_PARAM_ENABLED | IT_EVD_PARAM_OVERFLOWED)

it_status_t it_evd_query(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
			 it_evd_param_t *params)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	struct itapi_ia *ia;
	bool all = mask & IT_EVD_PARAM_ALL;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if ((unsigned int)mask & ~EVD_PARAM_ALL_BITS)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT, "params is NULL");
	ia = evd->obj.ia;
	if (all || (mask & IT_EVD_PARAM_IA))
		params->ia = (it_ia_handle_t)ia;
	if (all || (mask & IT_EVD_PARAM_EVENT_NUMBER))
		params->event_number = evd->stream;
	if (all || (mask & IT_EVD_PARAM_FLAG))
		params->evd_flag = evd->flags;
	if (all || (mask & IT_EVD_PARAM_FD))
		params->fd = (evd->flags & IT_EVD_CREATE_FD) ? evd->efd : -1;
	g_mutex_lock(&ia->lock);
	if (all || (mask & IT_EVD_PARAM_BOUND))
		params->evd_bound = evd->users || evd->bound_sevds ? IT_TRUE :
								      IT_FALSE;
	g_mutex_unlock(&ia->lock);
	g_mutex_lock(&evd->lock);
	if (all || (mask & IT_EVD_PARAM_QUEUE_SIZE))
		params->sevd_queue_size = evd->size;
	if (all || (mask & IT_EVD_PARAM_THRESHOLD))
		params->sevd_threshold = evd->threshold;
	if (all || (mask & IT_EVD_PARAM_AEVD_HANDLE))
		params->aevd = (it_evd_handle_t)evd->aevd;
	if (all || (mask & IT_EVD_PARAM_ENABLED))
		params->evd_enabled = evd->enabled ? IT_TRUE : IT_FALSE;
	if (all || (mask & IT_EVD_PARAM_OVERFLOWED))
		params->evd_overflowed = evd->overflowed ? IT_TRUE : IT_FALSE;
	if (all || (mask & IT_EVD_PARAM_CALLBACK))
		params->evd_callback = evd->cb ? IT_TRUE : IT_FALSE;
	g_mutex_unlock(&evd->lock);
	return IT_SUCCESS;
}

/* Resize the ring to @size (>= count), keeping the order. Lock held. */
static void ring_resize_locked(struct itapi_evd *evd, size_t size)
{
	struct itapi_evq_entry *r = g_new0(struct itapi_evq_entry, size);

	for (size_t i = 0; i < evd->count; i++)
		r[i] = evd->ring[(evd->head + i) % evd->size];
	g_free(evd->ring);
	evd->ring = r;
	evd->head = 0;
	evd->size = size;
}

it_status_t it_evd_modify(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
			  const it_evd_param_t *params)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	struct itapi_evd *new_aevd = NULL, *old_aevd = NULL;
	struct itapi_ia *ia;
	bool all = mask & IT_EVD_PARAM_ALL;
	size_t size, threshold;
	int err;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	ia = evd->obj.ia;
	if ((unsigned int)mask & ~(unsigned int)EVD_PARAM_MODIFIABLE)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x names fields that cannot change",
			       (unsigned int)mask);
	if (!params)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT, "params is NULL");
	if (all || (mask & IT_EVD_PARAM_AEVD_HANDLE)) {
		if (params->aevd) {
			new_aevd = ITAPI_LOOKUP(params->aevd, struct itapi_evd,
						IT_HANDLE_TYPE_EVD);
			if (!new_aevd || !new_aevd->is_aevd ||
			    new_aevd->obj.ia != ia || evd->is_aevd)
				return IT_FAIL(&evd->obj, IT_ERR_INVALID_AEVD,
					       "%p is not an AEVD this EVD may feed",
					       (void *)params->aevd);
			if (evd->flags & IT_EVD_CREATE_FD)
				return IT_FAIL(&evd->obj,
					       IT_ERR_AEVD_NOT_ALLOWED,
					       "the EVD hands out an fd");
		}
	}
	if (all || (mask & IT_EVD_PARAM_OVERFLOWED)) {
		if (params->evd_overflowed != IT_FALSE)
			return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_STATE,
				       "overflowed can only be cleared");
	}

	g_mutex_lock(&evd->lock);
	size = (all || (mask & IT_EVD_PARAM_QUEUE_SIZE)) ?
		       params->sevd_queue_size :
		       evd->size;
	threshold = (all || (mask & IT_EVD_PARAM_THRESHOLD)) ?
			    params->sevd_threshold :
			    evd->threshold;
	if (size == 0 || size < evd->count) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_QUEUE_SIZE,
			       "queue size %zu below the %zu events queued",
			       size, evd->count);
	}
	if (size > (evd->cq ? (size_t)ia->attr.max_cqe : ITAPI_MAX_QUEUE)) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_RESOURCE_QUEUE_SIZE,
			       "queue size %zu over the limit", size);
	}
	if (threshold > size) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_THRESHOLD,
			       "threshold %zu over the queue size %zu",
			       threshold, size);
	}
	if ((all || (mask & IT_EVD_PARAM_AEVD_HANDLE)) && new_aevd &&
	    evd->cb) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_AEVD_NOT_ALLOWED,
			       "a callback is attached");
	}
	if (size != evd->size) {
		if (evd->cq) {
			err = ual_cq_resize(evd->cq, (uint32_t)size);
			if (err) {
				g_mutex_unlock(&evd->lock);
				return IT_FAIL_ERRNO(&evd->obj, err,
						     ITAPI_CTX_EVD,
						     "resize_cq to %zu: %s",
						     size, g_strerror(-err));
			}
		}
		ring_resize_locked(evd, size);
	}
	evd->threshold = threshold;
	if (all || (mask & IT_EVD_PARAM_ENABLED))
		evd->enabled = params->evd_enabled != IT_FALSE;
	if (all || (mask & IT_EVD_PARAM_OVERFLOWED))
		evd->overflowed = false;
	if ((all || (mask & IT_EVD_PARAM_AEVD_HANDLE)) &&
	    new_aevd != evd->aevd) {
		itapi_evq_withdraw(evd);
		old_aevd = evd->aevd;
		evd->aevd = new_aevd ? itapi_evd_ref(new_aevd) : NULL;
		if (!new_aevd)
			evd->flags &= ~IT_EVD_DEQUEUE_NOTIFICATIONS;
	}
	itapi_evq_sync(evd);
	itapi_evq_notify_aevd(evd);
	g_mutex_unlock(&evd->lock);
	if (old_aevd || new_aevd) {
		g_mutex_lock(&ia->lock);
		if (old_aevd && old_aevd != new_aevd)
			old_aevd->bound_sevds--;
		if (new_aevd && old_aevd != new_aevd)
			new_aevd->bound_sevds++;
		g_mutex_unlock(&ia->lock);
		itapi_evd_unref(old_aevd);
		if (itapi_evq_watch_update(evd) < 0)
			g_warning("%s cannot watch the CQ: its AEVD learns of completions only when the EVD is dequeued",
				  evd->obj.prefix);
	}
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Dequeue, wait, software events                                      */
/* ------------------------------------------------------------------ */

it_status_t it_evd_dequeue(it_evd_handle_t evd_handle, it_event_t *event)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if (!event)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT, "event is NULL");
	g_mutex_lock(&evd->lock);
	/* What the EVD holds is older than anything still in the CQ: the
	 * CQ is polled for more (and a software provider looks for
	 * received data, a system call) only when the EVD is empty. */
	if (evd->count == 0 && evd->cq) {
		g_mutex_unlock(&evd->lock);
		itapi_evd_pump(evd);
		g_mutex_lock(&evd->lock);
	} else if (evd->cq) {
		itapi_evd_nudge(evd);
	}
	if (evd->count == 0) {
		g_mutex_unlock(&evd->lock);
		return IT_ERR_QUEUE_EMPTY;	/* not a failure: no log */
	}
	itapi_evq_pop(evd, event);
	itapi_evq_after_dequeue(evd, event);
	g_mutex_unlock(&evd->lock);
	return IT_SUCCESS;
}

it_status_t it_evd_dequeue_n(it_evd_handle_t evd_handle, int deque_count,
			     it_event_t *events, int *dequed_count)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	bool full;
	int n = 0;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if (deque_count <= 0)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_QUEUE_SIZE,
			       "deque_count %d", deque_count);
	if (!events || !dequed_count)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT,
			       "events or dequed_count is NULL");
	g_mutex_lock(&evd->lock);
	/* The CQ is polled only for what the EVD does not hold already. */
	if (evd->cq && evd->count < (size_t)deque_count) {
		g_mutex_unlock(&evd->lock);
		itapi_evd_pump(evd);
		g_mutex_lock(&evd->lock);
	} else if (evd->cq) {
		itapi_evd_nudge(evd);
	}
	full = evd->count >= evd->size;
	while (n < deque_count && evd->count > 0) {
		itapi_evq_pop(evd, &events[n]);
		itapi_evq_after_dequeue(evd, &events[n]);
		n++;
	}
	g_mutex_unlock(&evd->lock);
	*dequed_count = n;
	/* The CQ may hold more than fitted in the full ring before. */
	if (evd->cq && n && full)
		itapi_evd_pump(evd);
	return n ? IT_SUCCESS : IT_ERR_QUEUE_EMPTY;
}

/* it_evd_wait has what it waits for. At entry, enough events are enough;
 * later, only a notifying arrival wakes it (IT_NOTIFY_FLAG). Under
 * evd->lock. */
static bool evd_wait_done(struct itapi_evd *evd, bool first)
{
	return evd->count >= itapi_evq_threshold(evd) &&
	       (first || evd->n_notify > 0);
}

/* The sockets ual_cq_wait_begin left to this wait, if any, go back to the
 * provider (ual_cq_wait_end). Under evd->lock, dropped meanwhile. */
static void evd_wait_give_back(struct itapi_evd *evd, bool *began)
{
	if (!*began)
		return;
	g_mutex_unlock(&evd->lock);
	ual_cq_wait_end(evd->cq);
	g_mutex_lock(&evd->lock);
	*began = false;
}

static struct timespec *remaining(gint64 deadline, struct timespec *ts)
{
	gint64 left;

	if (deadline < 0)
		return NULL;
	left = deadline - g_get_monotonic_time();
	if (left < 0)
		left = 0;
	ts->tv_sec = left / G_USEC_PER_SEC;
	ts->tv_nsec = (left % G_USEC_PER_SEC) * 1000;
	return ts;
}

it_status_t it_evd_wait(it_evd_handle_t evd_handle, uint64_t timeout,
			it_event_t *event, size_t *nmore)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	gint64 deadline = -1;
	bool first = true, began = false;
	it_status_t st;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if (!event || !nmore)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT,
			       "event or nmore is NULL");
	if (evd->aevd)
		return IT_FAIL(&evd->obj, IT_ERR_AEVD_NOT_ALLOWED,
			       "the EVD feeds an AEVD: wait on the AEVD");
	if (timeout != IT_TIMEOUT_INFINITE)
		deadline = g_get_monotonic_time() +
			   (gint64)MIN(timeout, (uint64_t)G_MAXINT64 / 2);
	g_mutex_lock(&evd->lock);
	if (evd->cb) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_STATE,
			       "a callback is attached");
	}
	if (!evd->enabled) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_STATE,
			       "the EVD is disabled");
	}
	if (evd->waiters) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_WAITER_LIMIT,
			       "another thread waits on it");
	}
	evd->waiters++;
	itapi_evq_sync(evd);
	for (;;) {
		struct pollfd pfd[2 + ITAPI_WAIT_FDS] = {
			{ .fd = evd->efd, .events = POLLIN },
			{ .fd = -1, .events = POLLIN }
		};
		int fds[ITAPI_WAIT_FDS], nfd = 0, i;
		struct timespec ts, *tsp;
		int r;

		if (evd->cq) {
			/* Not watched by the pump: this thread arms the CQ
			 * and sleeps on its fd as well, pumping after the
			 * arm what arrived before it. A software provider
			 * may leave it sockets to watch too, read by the
			 * pump when they wake it (cq_wait_begin). */
			bool self = !evd->pump_registered &&
				    ual_cq_fd(evd->cq) >= 0;

			g_mutex_unlock(&evd->lock);
			itapi_evd_pump(evd);
			g_mutex_lock(&evd->lock);
			/* Nothing armed when the pump brought enough: an
			 * armed CQ tells a provider its consumer sleeps. */
			if (self && !evd_wait_done(evd, first)) {
				/* Sockets only while the pump takes from the
				 * CQ: a full EVD takes nothing, and a socket
				 * with data would wake us again at once. */
				bool room = evd->count < evd->size;
				int got;

				g_mutex_unlock(&evd->lock);
				got = room ? ual_cq_wait_begin(evd->cq, fds,
							       ITAPI_WAIT_FDS)
					   : 0;
				began |= got > 0;
				if (ual_cq_arm(evd->cq, false) == 0) {
					pfd[1].fd = ual_cq_fd(evd->cq);
					for (i = 0; i < got; i++) {
						pfd[2 + i].fd = fds[i];
						pfd[2 + i].events = POLLIN;
					}
					nfd = got;
					itapi_evd_pump(evd);
				}
				g_mutex_lock(&evd->lock);
			}
			/* What was left to us and is not watched in this
			 * sleep goes back (an EVD bound to an AEVD
			 * meanwhile, a failed arm, a full EVD). */
			if (nfd == 0)
				evd_wait_give_back(evd, &began);
		}
		if (evd_wait_done(evd, first)) {
			itapi_evq_pop(evd, event);
			itapi_evq_after_dequeue(evd, event);
			*nmore = evd->count;
			st = IT_SUCCESS;
			break;
		}
		first = false;
		g_mutex_unlock(&evd->lock);
		tsp = remaining(deadline, &ts);
		if (tsp && tsp->tv_sec == 0 && tsp->tv_nsec == 0) {
			g_mutex_lock(&evd->lock);
			/* Events that could have been returned but woke
			 * nobody: requests posted without IT_NOTIFY_FLAG.
			 * As the standard wants, but a program that forgot
			 * the flag should be told where its events are. */
			if (evd->count >= itapi_evq_threshold(evd))
				st = IT_FAIL(&evd->obj, IT_ERR_TIMEOUT_EXPIRED,
					     "%zu event(s) queued, none "
					     "notifying (posted without "
					     "IT_NOTIFY_FLAG): it_evd_dequeue "
					     "returns them",
					     (size_t)evd->count);
			else
				st = IT_ERR_TIMEOUT_EXPIRED;
			break;
		}
		if (evd->cq && ual_cq_fd(evd->cq) < 0 &&
		    (!tsp || tsp->tv_sec > 0 || tsp->tv_nsec > 10000000)) {
			/* No CQ fd: nobody else moves completions. */
			ts.tv_sec = 0;
			ts.tv_nsec = 10000000;
			tsp = &ts;
		}
		/* Asleep with no CQ of ours armed (connection events, or a
		 * CQ the pump watches): the device must not leave received
		 * work to our next poll (soft-RoCE's poll_rx). */
		if (pfd[1].fd < 0)
			ual_device_consumer_blocks(evd->obj.ia->dev);
		r = ppoll(pfd, 2 + nfd, tsp, NULL);
		if (r > 0 && (pfd[1].revents & POLLIN))
			ual_cq_ack(evd->cq);
		g_mutex_lock(&evd->lock);
		if (r < 0 && errno == EINTR) {
			st = IT_ERR_INTERRUPT;
			break;
		}
		if (r < 0) {
			st = IT_FAIL(&evd->obj, IT_ERR_ABORT, "ppoll: %s",
				     g_strerror(errno));
			break;
		}
	}
	/* Still counted as a waiter here: the EVD and its CQ stay. */
	evd_wait_give_back(evd, &began);
	evd->waiters--;
	g_mutex_unlock(&evd->lock);
	return st;
}

it_status_t it_evd_post_se(it_evd_handle_t evd_handle, const void *event)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	it_event_t ev = { 0 };

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if (evd->stream != IT_SOFTWARE_EVENT_STREAM)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_TYPE,
			       "not a software event EVD (stream 0x%x)",
			       (unsigned int)evd->stream);
	ev.sw.event_number = IT_SOFTWARE_EVENT;
	ev.sw.evd = evd_handle;
	ev.sw.data = (void *)(uintptr_t)event;
	g_mutex_lock(&evd->lock);
	/* The consumer's own event: refused, not lost, when full. */
	if (!itapi_evq_push(evd, &ev, true)) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_EVD_QUEUE_FULL,
			       "%zu events queued", evd->size);
	}
	itapi_evq_sync(evd);
	itapi_evq_notify_aevd(evd);
	g_mutex_unlock(&evd->lock);
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

static gboolean evd_callback_dispatch(gint fd, GIOCondition cond,
				      gpointer data)
{
	struct itapi_evd *evd = data;
	it_evd_callback_rtn_t cb;
	void *arg;

	g_mutex_lock(&evd->lock);
	cb = evd->cb;
	arg = evd->cb_arg;
	g_mutex_unlock(&evd->lock);
	if (cb)
		cb((it_evd_handle_t)evd, arg);
	return G_SOURCE_CONTINUE;
}

it_status_t it_evd_callback_attach(it_evd_handle_t evd_handle,
				   it_evd_callback_rtn_t callback, void *arg)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	GMainContext *ctx;

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	if (!callback)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT, "callback is NULL");
	if (evd->aevd)
		return IT_FAIL(&evd->obj, IT_ERR_AEVD_NOT_ALLOWED,
			       "the EVD feeds an AEVD: attach to the AEVD");
	g_mutex_lock(&evd->lock);
	if (evd->cb) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_CALLBACK_EXISTS,
			       "a callback is attached already");
	}
	if (evd->waiters) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_EVD_WAIT,
			       "a thread waits on it");
	}
	evd->cb = callback;
	evd->cb_arg = arg;
	/* The callback runs from the attaching thread's default main
	 * context, whenever the EVD is signalled. */
	ctx = g_main_context_ref_thread_default();
	evd->cb_source = g_unix_fd_source_new(evd->efd, G_IO_IN);
	g_source_set_callback(evd->cb_source,
			      G_SOURCE_FUNC(evd_callback_dispatch),
			      itapi_evd_ref(evd),
			      (GDestroyNotify)itapi_evd_unref);
	g_source_attach(evd->cb_source, ctx);
	g_main_context_unref(ctx);
	itapi_evq_sync(evd);
	g_mutex_unlock(&evd->lock);
	if (itapi_evq_watch_update(evd) < 0)
		g_warning("%s cannot watch the CQ: completions reach the callback only when the EVD is dequeued",
			  evd->obj.prefix);
	return IT_SUCCESS;
}

it_status_t it_evd_callback_detach(it_evd_handle_t evd_handle)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(evd_handle, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);

	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)evd_handle);
	g_mutex_lock(&evd->lock);
	if (!evd->cb) {
		g_mutex_unlock(&evd->lock);
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_STATE,
			       "no callback is attached");
	}
	callback_drop_locked(evd);
	g_mutex_unlock(&evd->lock);
	itapi_evq_watch_update(evd);
	return IT_SUCCESS;
}
