/* SPDX-License-Identifier: MIT */
/*
 * IT-API event dispatchers: creation rules for every stream, software
 * events, dequeue_n, thresholds, enable, overflow (default, notify, auto
 * reset), waiting (time-out, interruption, one waiter, wake-up), AEVD
 * aggregation, file descriptors (also for DTO completions the consumer
 * never polled), notify / solicited semantics, callbacks through a GLib
 * main context, query and modify.
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

static struct it_fix F;

static void setup(void)
{
	it_setup_testprov();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

static it_evd_handle_t evd_new(it_event_type_t stream, it_evd_flags_t flags,
			       size_t size, size_t threshold,
			       it_evd_handle_t aevd, int *fd)
{
	it_evd_handle_t e = NULL;

	ck_assert_it_ok(it_evd_create(F.ia, stream, flags, size, threshold,
				      aevd, &e, fd));
	return e;
}

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Post a software event carrying @n as its data. */
static void post_sw(it_evd_handle_t e, uintptr_t n)
{
	ck_assert_it_ok(it_evd_post_se(e, (void *)n));
}

/* ------------------------------------------------------------------ */
/* Creation                                                            */
/* ------------------------------------------------------------------ */

START_TEST(create_errors)
{
	it_evd_handle_t e = NULL, a, s;
	int fd = -7;

	ck_assert_it(it_evd_create(NULL, IT_SOFTWARE_EVENT_STREAM, 0, 4, 0,
				   NULL, &e, NULL),
		     IT_ERR_INVALID_IA);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM, 0, 4, 0,
				   NULL, NULL, NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT, 0, 4, 0, NULL,
				   &e, NULL),
		     IT_ERR_INVALID_EVD_TYPE);
	ck_assert_it(it_evd_create(F.ia, (it_event_type_t)0x40000, 0, 4, 0,
				   NULL, &e, NULL),
		     IT_ERR_INVALID_EVD_TYPE);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM,
				   (it_evd_flags_t)0x100, 4, 0, NULL, &e, NULL),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM,
				   (it_evd_flags_t)(IT_EVD_OVERFLOW_DEFAULT |
						    IT_EVD_OVERFLOW_NOTIFY),
				   4, 0, NULL, &e, NULL),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM,
				   IT_EVD_DEQUEUE_NOTIFICATIONS, 4, 0, NULL,
				   &e, NULL),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM,
				   IT_EVD_CREATE_FD, 4, 0, NULL, &e, NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM, 0, 0, 0,
				   NULL, &e, NULL),
		     IT_ERR_INVALID_QUEUE_SIZE);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM, 0,
				   (size_t)1 << 30, 0, NULL, &e, NULL),
		     IT_ERR_RESOURCE_QUEUE_SIZE);
	ck_assert_it(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 65537, 0,
				   NULL, &e, NULL),
		     IT_ERR_RESOURCE_QUEUE_SIZE);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM, 0, 4, 5,
				   NULL, &e, NULL),
		     IT_ERR_INVALID_THRESHOLD);
	/* One affiliated async EVD per IA; the fixture made it. */
	ck_assert_it(it_evd_create(F.ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 4, 0,
				   NULL, &e, NULL),
		     IT_ERR_ASYNC_AFF_EVD_EXISTS);
	s = evd_new(IT_ASYNC_UNAFF_EVENT_STREAM, 0, 4, 0, NULL, NULL);
	ck_assert_it(it_evd_create(F.ia, IT_ASYNC_UNAFF_EVENT_STREAM, 0, 4, 0,
				   NULL, &e, NULL),
		     IT_ERR_ASYNC_UNAFF_EVD_EXISTS);
	ck_assert_it_ok(it_evd_free(s));
	/* Aggregation rules. */
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM, 0, 4, 0,
				   F.msg, &e, NULL),
		     IT_ERR_INVALID_AEVD);
	a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 8, 0, NULL, NULL);
	ck_assert_it(it_evd_create(F.ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, 0,
				   4, 0, a, &e, NULL),
		     IT_ERR_INVALID_AEVD);
	ck_assert_it(it_evd_create(F.ia, IT_SOFTWARE_EVENT_STREAM,
				   IT_EVD_CREATE_FD, 4, 0, a, &e, &fd),
		     IT_ERR_AEVD_NOT_ALLOWED);
	ck_assert_ptr_null(e);
	ck_assert_int_eq(fd, -7);
	/* Without IT_EVD_CREATE_FD the fd is -1. */
	s = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 4, 0, NULL, &fd);
	ck_assert_int_eq(fd, -1);
	ck_assert_it_ok(it_evd_free(s));
	ck_assert_it_ok(it_evd_free(a));
	ck_assert_it(it_evd_free(a), IT_ERR_INVALID_EVD);
}
END_TEST

START_TEST(every_stream)
{
	static const it_event_type_t streams[] = {
		IT_DTO_EVENT_STREAM, IT_CM_REQ_EVENT_STREAM,
		IT_CM_MSG_EVENT_STREAM, IT_ASYNC_UNAFF_EVENT_STREAM,
		IT_SOFTWARE_EVENT_STREAM, IT_AEVD_NOTIFICATION_EVENT_STREAM,
	};
	it_evd_param_t p;

	for (size_t i = 0; i < G_N_ELEMENTS(streams); i++) {
		it_evd_handle_t e = evd_new(streams[i], 0, 16, 2, NULL, NULL);

		ck_assert_it_ok(it_evd_query(e, IT_EVD_PARAM_ALL, &p));
		ck_assert_int_eq(p.event_number, streams[i]);
		ck_assert_ptr_eq(p.ia, F.ia);
		ck_assert_uint_eq(p.sevd_queue_size, 16);
		ck_assert_uint_eq(p.sevd_threshold, 2);
		ck_assert(p.evd_enabled);
		ck_assert(!p.evd_overflowed);
		ck_assert(!p.evd_callback);
		ck_assert(!p.evd_bound);
		ck_assert_int_eq(p.fd, -1);
		ck_assert_it_ok(it_evd_free(e));
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* Software events, dequeue, thresholds                                */
/* ------------------------------------------------------------------ */

START_TEST(software_events)
{
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 3, 0, NULL,
				    NULL);
	it_event_t ev[4];
	int n = -1;

	ck_assert_it(it_evd_dequeue(e, &ev[0]), IT_ERR_QUEUE_EMPTY);
	post_sw(e, 11);
	post_sw(e, 12);
	post_sw(e, 13);
	/* The consumer's own event is refused, not lost, when full. */
	ck_assert_it(it_evd_post_se(e, (void *)14), IT_ERR_EVD_QUEUE_FULL);
	ck_assert_it_ok(it_evd_dequeue(e, &ev[0]));
	ck_assert_event(&ev[0], IT_SOFTWARE_EVENT);
	ck_assert_ptr_eq(ev[0].sw.evd, e);
	ck_assert_ptr_eq(ev[0].sw.data, (void *)11);
	ck_assert_it_ok(it_evd_dequeue_n(e, 4, ev, &n));
	ck_assert_int_eq(n, 2);
	ck_assert_ptr_eq(ev[0].sw.data, (void *)12);
	ck_assert_ptr_eq(ev[1].sw.data, (void *)13);
	ck_assert_it(it_evd_dequeue_n(e, 4, ev, &n), IT_ERR_QUEUE_EMPTY);
	ck_assert_int_eq(n, 0);
	ck_assert_it(it_evd_dequeue_n(e, 0, ev, &n), IT_ERR_INVALID_QUEUE_SIZE);
	ck_assert_it(it_evd_dequeue_n(e, 1, NULL, &n), IT_ERR_FAULT);
	ck_assert_it(it_evd_dequeue(e, NULL), IT_ERR_FAULT);
	/* Only software EVDs take software events. */
	ck_assert_it(it_evd_post_se(F.msg, NULL), IT_ERR_INVALID_EVD_TYPE);
	ck_assert_it(it_evd_post_se(NULL, NULL), IT_ERR_INVALID_EVD);
	ck_assert_it_ok(it_evd_free(e));
}
END_TEST

START_TEST(threshold_and_fd)
{
	int fd = -1;
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD,
				    8, 3, NULL, &fd);
	it_evd_param_t p;
	it_event_t ev;
	size_t nmore = 99;

	ck_assert_int_ge(fd, 0);
	ck_assert_it_ok(it_evd_query(e, IT_EVD_PARAM_FD, &p));
	ck_assert_int_eq(p.fd, fd);
	post_sw(e, 1);
	post_sw(e, 2);
	ck_assert(!readable(fd));
	/* Below the threshold a wait does not return. */
	ck_assert_it(it_evd_wait(e, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
	post_sw(e, 3);
	ck_assert(readable(fd));
	ck_assert_it_ok(it_evd_wait(e, 0, &ev, &nmore));
	ck_assert_ptr_eq(ev.sw.data, (void *)1);
	ck_assert_uint_eq(nmore, 2);
	ck_assert(!readable(fd));
	/* Disabled: no readiness, no waiting. */
	post_sw(e, 4);
	ck_assert(readable(fd));
	p.evd_enabled = IT_FALSE;
	ck_assert_it_ok(it_evd_modify(e, IT_EVD_PARAM_ENABLED, &p));
	ck_assert(!readable(fd));
	ck_assert_it(it_evd_wait(e, 0, &ev, &nmore),
		     IT_ERR_INVALID_EVD_STATE);
	p.evd_enabled = IT_TRUE;
	ck_assert_it_ok(it_evd_modify(e, IT_EVD_PARAM_ENABLED, &p));
	ck_assert(readable(fd));
	/* Threshold lowered to "disabled" (0): one event is enough. */
	p.sevd_threshold = IT_THRESHOLD_DISABLE;
	ck_assert_it_ok(it_evd_modify(e, IT_EVD_PARAM_THRESHOLD, &p));
	while (it_evd_dequeue(e, &ev) == IT_SUCCESS)
		;
	ck_assert(!readable(fd));
	post_sw(e, 5);
	ck_assert(readable(fd));
	ck_assert_it_ok(it_evd_free(e));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

struct waiter {
	it_evd_handle_t evd;
	uint64_t timeout;
	it_status_t st;
	it_event_t ev;
	size_t nmore;
	volatile int done;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->st = it_evd_wait(w->evd, w->timeout, &w->ev, &w->nmore);
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Until @w's thread sits in it_evd_wait (it_evd_free says so). */
static void wait_until_waiting(struct waiter *w)
{
	struct itapi_evd *e = (struct itapi_evd *)w->evd;

	for (;;) {
		int n;

		g_mutex_lock(&e->lock);
		n = e->waiters;
		g_mutex_unlock(&e->lock);
		if (n)
			return;
		g_usleep(1000);
	}
}

static void on_sigusr1(int sig)
{
	(void)sig;
}

START_TEST(wait_timeout_wake_limit)
{
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 0, NULL,
				    NULL);
	struct waiter w = { .evd = e, .timeout = IT_TIMEOUT_INFINITE };
	it_event_t ev;
	size_t nmore;
	pthread_t t;

	ck_assert_it(it_evd_wait(e, 1000, &ev, &nmore),
		     IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_it(it_evd_wait(e, 0, NULL, &nmore), IT_ERR_FAULT);
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	wait_until_waiting(&w);
	/* One waiter per EVD; the EVD cannot go while it waits. */
	ck_assert_it(it_evd_wait(e, 0, &ev, &nmore), IT_ERR_WAITER_LIMIT);
	ck_assert_it(it_evd_free(e), IT_ERR_EVD_WAIT);
	ck_assert(!w.done);
	post_sw(e, 42);
	pthread_join(t, NULL);
	ck_assert_it(w.st, IT_SUCCESS);
	ck_assert_ptr_eq(w.ev.sw.data, (void *)42);
	ck_assert_uint_eq(w.nmore, 0);
	ck_assert_it_ok(it_evd_free(e));
}
END_TEST

START_TEST(wait_interrupted)
{
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 0, NULL,
				    NULL);
	struct waiter w = { .evd = e, .timeout = IT_TIMEOUT_INFINITE };
	struct sigaction sa = { .sa_handler = on_sigusr1 }, old;
	pthread_t t;

	/* No SA_RESTART: the signal interrupts the wait. */
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	wait_until_waiting(&w);
	while (!__atomic_load_n(&w.done, __ATOMIC_SEQ_CST)) {
		pthread_kill(t, SIGUSR1);
		g_usleep(2000);
	}
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	ck_assert_it(w.st, IT_ERR_INTERRUPT);
	/* Nothing was taken. */
	post_sw(e, 1);
	ck_assert_it_ok(it_evd_free(e));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Overflow                                                            */
/* ------------------------------------------------------------------ */

static it_status_t post_internal(it_evd_handle_t e, it_event_type_t type)
{
	it_event_t ev = { 0 };

	ev.event_number = type;
	return itapi_evd_post((struct itapi_evd *)e, &ev, true);
}

START_TEST(overflow_default_notify_reset)
{
	it_evd_handle_t d = evd_new(IT_CM_MSG_EVENT_STREAM, 0, 2, 0, NULL,
				    NULL);
	it_evd_handle_t n = evd_new(IT_CM_MSG_EVENT_STREAM,
				    IT_EVD_OVERFLOW_NOTIFY, 1, 0, NULL, NULL);
	it_evd_handle_t r = evd_new(IT_CM_MSG_EVENT_STREAM,
				    IT_EVD_OVERFLOW_AUTO_RESET, 1, 0, NULL,
				    NULL);
	it_evd_param_t p;
	it_event_t ev;

	/* Default: the third event is lost, the EVD says so, no async
	 * event, and the mark stays until cleared. */
	ck_assert_it_ok(post_internal(d, IT_CM_MSG_CONN_DISCONNECT_EVENT));
	ck_assert_it_ok(post_internal(d, IT_CM_MSG_CONN_BROKEN_EVENT));
	ck_assert_it(post_internal(d, IT_CM_MSG_CONN_ESTABLISHED_EVENT),
		     IT_ERR_EVD_QUEUE_FULL);
	ck_assert_it_ok(it_evd_query(d, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert(p.evd_overflowed);
	ck_assert_it(it_evd_dequeue(F.aff, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_it(it_evd_dequeue(d, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_it_ok(it_evd_query(d, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert(p.evd_overflowed);
	p.evd_overflowed = IT_TRUE;
	ck_assert_it(it_evd_modify(d, IT_EVD_PARAM_OVERFLOWED, &p),
		     IT_ERR_INVALID_EVD_STATE);
	p.evd_overflowed = IT_FALSE;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert_it_ok(it_evd_query(d, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert(!p.evd_overflowed);

	/* Notify: the affiliated async EVD learns, naming the SEVD, once. */
	ck_assert_it_ok(post_internal(n, IT_CM_MSG_CONN_DISCONNECT_EVENT));
	ck_assert_it(post_internal(n, IT_CM_MSG_CONN_BROKEN_EVENT),
		     IT_ERR_EVD_QUEUE_FULL);
	ck_assert_it(post_internal(n, IT_CM_MSG_CONN_BROKEN_EVENT),
		     IT_ERR_EVD_QUEUE_FULL);
	ck_assert_it_ok(it_evd_dequeue(F.aff, &ev));
	ck_assert_event(&ev, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
	ck_assert_ptr_eq(ev.aff_async.cause.sevd, n);
	ck_assert_ptr_eq(ev.aff_async.evd, F.aff);
	ck_assert_it(it_evd_dequeue(F.aff, &ev), IT_ERR_QUEUE_EMPTY);

	/* Auto reset: cleared as soon as there is room again. */
	ck_assert_it_ok(post_internal(r, IT_CM_MSG_CONN_DISCONNECT_EVENT));
	ck_assert_it(post_internal(r, IT_CM_MSG_CONN_BROKEN_EVENT),
		     IT_ERR_EVD_QUEUE_FULL);
	ck_assert_it_ok(it_evd_query(r, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert(p.evd_overflowed);
	ck_assert_it_ok(it_evd_dequeue(r, &ev));
	ck_assert_it_ok(it_evd_query(r, IT_EVD_PARAM_OVERFLOWED, &p));
	ck_assert(!p.evd_overflowed);
	ck_assert_it(it_evd_dequeue(F.aff, &ev), IT_ERR_QUEUE_EMPTY);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Aggregation                                                         */
/* ------------------------------------------------------------------ */

START_TEST(aevd_aggregation)
{
	int afd = -1;
	it_evd_handle_t a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM,
				    IT_EVD_CREATE_FD, 8, 0, NULL, &afd);
	it_evd_handle_t s1 = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 0, a,
				     NULL);
	it_evd_handle_t s2 = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 2, a,
				     NULL);
	it_evd_param_t p;
	it_event_t ev;
	size_t nmore;

	ck_assert_it_ok(it_evd_query(s1, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert_ptr_eq(p.aevd, a);
	ck_assert_it_ok(it_evd_query(a, IT_EVD_PARAM_BOUND, &p));
	ck_assert(p.evd_bound);
	ck_assert(!readable(afd));
	post_sw(s1, 1);
	post_sw(s1, 2);
	ck_assert(readable(afd));
	/* One notification per SEVD until the consumer takes it. */
	ck_assert_it_ok(it_evd_wait(a, IT_WAIT_US, &ev, &nmore));
	ck_assert_event(&ev, IT_AEVD_NOTIFICATION_EVENT);
	ck_assert_ptr_eq(ev.aevd_notify.aevd, a);
	ck_assert_ptr_eq(ev.aevd_notify.sevd, s1);
	ck_assert_uint_eq(nmore, 0);
	ck_assert(!readable(afd));
	/* The SEVD keeps its events for the consumer. */
	ck_assert_it_ok(it_evd_dequeue(s1, &ev));
	ck_assert_ptr_eq(ev.sw.data, (void *)1);
	ck_assert_it_ok(it_evd_dequeue(s1, &ev));
	ck_assert_ptr_eq(ev.sw.data, (void *)2);
	/* s2's threshold is 2. */
	post_sw(s2, 3);
	ck_assert_it(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
	post_sw(s2, 4);
	post_sw(s1, 5);
	ck_assert_it_ok(it_evd_dequeue(a, &ev));
	ck_assert_ptr_eq(ev.aevd_notify.sevd, s2);
	ck_assert_it_ok(it_evd_dequeue(a, &ev));
	ck_assert_ptr_eq(ev.aevd_notify.sevd, s1);
	ck_assert_it(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
	/* A fed SEVD is waited on, watched and called back through its
	 * AEVD only. */
	ck_assert_it(it_evd_wait(s1, 0, &ev, &nmore), IT_ERR_AEVD_NOT_ALLOWED);
	ck_assert_it(it_evd_callback_attach(s1, (it_evd_callback_rtn_t)abort,
					    NULL),
		     IT_ERR_AEVD_NOT_ALLOWED);
	ck_assert_it(it_evd_free(a), IT_ERR_EVD_BUSY);
	ck_assert_it_ok(it_evd_free(s2));
	ck_assert_it(it_evd_free(a), IT_ERR_EVD_BUSY);
	/* Unbinding through modify: s1 then signals by itself. */
	p.aevd = NULL;
	ck_assert_it_ok(it_evd_modify(s1, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert_it_ok(it_evd_query(a, IT_EVD_PARAM_BOUND, &p));
	ck_assert(!p.evd_bound);
	ck_assert_it_ok(it_evd_free(a));
	ck_assert_it_ok(it_evd_wait(s1, 0, &ev, &nmore));
	ck_assert_ptr_eq(ev.sw.data, (void *)5);
	ck_assert_it_ok(it_evd_free(s1));
}
END_TEST

START_TEST(aevd_dequeue_notifications)
{
	it_evd_handle_t a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 8, 0,
				    NULL, NULL);
	it_evd_handle_t with = evd_new(IT_SOFTWARE_EVENT_STREAM,
				       IT_EVD_DEQUEUE_NOTIFICATIONS, 8, 0, a,
				       NULL);
	it_evd_handle_t without = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 0, a,
					  NULL);
	it_event_t ev;

	/* Drained directly: the notification of `with` is withdrawn, that
	 * of `without` stays. */
	post_sw(with, 1);
	post_sw(without, 2);
	ck_assert_it_ok(it_evd_dequeue(with, &ev));
	ck_assert_it_ok(it_evd_dequeue(without, &ev));
	ck_assert_it_ok(it_evd_dequeue(a, &ev));
	ck_assert_ptr_eq(ev.aevd_notify.sevd, without);
	ck_assert_it(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
	/* A notification again at the next event. */
	post_sw(with, 3);
	ck_assert_it_ok(it_evd_dequeue(a, &ev));
	ck_assert_ptr_eq(ev.aevd_notify.sevd, with);
	ck_assert_it_ok(it_evd_free(with));
	ck_assert_it_ok(it_evd_free(without));
	ck_assert_it_ok(it_evd_free(a));
}
END_TEST

/* ------------------------------------------------------------------ */
/* DTO SEVDs: the pump, notify and solicited                           */
/* ------------------------------------------------------------------ */

START_TEST(dto_fd_notify)
{
	int fd = -1;
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 64,
				    0, NULL, &fd);
	it_ep_attributes_t at;
	it_ep_handle_t a, b;
	struct it_buf s, r;
	it_lmr_triplet_t seg;
	it_event_t ev[4];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &a));
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &b));
	it_testprov_pair(a, b);
	it_buf_new(&F, &s, 256, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 256, IT_PRIV_LOCAL);

	/* A completion without IT_NOTIFY_FLAG lands but wakes nobody. */
	seg = it_seg(&r, 0, 256);
	ck_assert_it_ok(it_post_recv(b, &seg, 1, 1, IT_COMPLETION_FLAG));
	seg = it_seg(&s, 0, 10);
	ck_assert_it_ok(it_post_send(a, &seg, 1, 2, IT_COMPLETION_FLAG));
	itapi_evd_pump((struct itapi_evd *)d);
	ck_assert(!readable(fd));
	/* One with it: the fd becomes readable without the consumer
	 * polling (the pump moved the completion). */
	seg = it_seg(&r, 0, 256);
	ck_assert_it_ok(it_post_recv(b, &seg, 1, 3,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	seg = it_seg(&s, 0, 20);
	ck_assert_it_ok(it_post_send(a, &seg, 1, 4,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
	ck_assert_it_ok(it_evd_dequeue_n(d, 4, ev, &n));
	ck_assert_int_eq(n, 4);
	/* In order: recv 1 (10 bytes), send 2, recv 3 (20 bytes), send 4. */
	ck_assert_event(&ev[0], IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_uint_eq(ev[0].dto_cmpl.cookie, 1);
	ck_assert_uint_eq(ev[0].dto_cmpl.transferred_length, 10);
	ck_assert_ptr_eq(ev[0].dto_cmpl.ep, b);
	ck_assert_ptr_eq(ev[0].dto_cmpl.evd, d);
	ck_assert_event(&ev[1], IT_DTO_SEND_CMPL_EVENT);
	ck_assert_uint_eq(ev[1].dto_cmpl.cookie, 2);
	ck_assert_ptr_eq(ev[1].dto_cmpl.ep, a);
	ck_assert_uint_eq(ev[2].dto_cmpl.cookie, 3);
	ck_assert_uint_eq(ev[2].dto_cmpl.transferred_length, 20);
	ck_assert_uint_eq(ev[3].dto_cmpl.cookie, 4);
	ck_assert(!readable(fd));

	/* A solicited message notifies at a receive without the flag. */
	seg = it_seg(&r, 0, 256);
	ck_assert_it_ok(it_post_recv(b, &seg, 1, 5, IT_COMPLETION_FLAG));
	seg = it_seg(&s, 0, 5);
	ck_assert_it_ok(it_post_send(a, &seg, 1, 6,
				     IT_COMPLETION_FLAG |
					     IT_SOLICITED_WAIT_FLAG));
	ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
	ck_assert_it_ok(it_evd_dequeue_n(d, 4, ev, &n));
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(ev[0].dto_cmpl.cookie, 5);
	ck_assert_uint_eq(ev[1].dto_cmpl.cookie, 6);

	/* Without IT_COMPLETION_FLAG a send is silent when it succeeds. */
	seg = it_seg(&r, 0, 256);
	ck_assert_it_ok(it_post_recv(b, &seg, 1, 7,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	seg = it_seg(&s, 0, 5);
	ck_assert_it_ok(it_post_send(a, &seg, 1, 8, 0));
	ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
	ck_assert_it_ok(it_evd_dequeue_n(d, 4, ev, &n));
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(ev[0].dto_cmpl.cookie, 7);

	ck_assert_it(it_evd_free(d), IT_ERR_EVD_BUSY);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&s);
	it_buf_free(&r);
	ck_assert_it_ok(it_evd_free(d));
}
END_TEST

/* y posts a receive (cookie @cookie, notifying), x Sends @len bytes
 * (cookie @cookie + 1) into it; nobody dequeues the DTO SEVD @d, so the
 * AEVD @a must hear of it, and then both completions are in @d, in order. */
static void send_seen_by_aevd(it_ep_handle_t x, it_ep_handle_t y,
			      struct it_buf *s, struct it_buf *r,
			      it_evd_handle_t d, it_evd_handle_t a,
			      it_dto_cookie_t cookie, size_t len)
{
	it_lmr_triplet_t seg = it_seg(r, 0, 64);
	it_event_t ev;
	size_t nmore;

	ck_assert_it_ok(it_post_recv(y, &seg, 1, cookie,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	seg = it_seg(s, 0, len);
	ck_assert_it_ok(it_post_send(x, &seg, 1, cookie + 1,
				     IT_COMPLETION_FLAG));
	ck_assert_it_ok(it_evd_wait(a, IT_WAIT_US, &ev, &nmore));
	ck_assert_event(&ev, IT_AEVD_NOTIFICATION_EVENT);
	ck_assert_ptr_eq(ev.aevd_notify.sevd, d);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie + 1);
}

START_TEST(dto_through_aevd)
{
	it_evd_handle_t a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 8, 0,
				    NULL, NULL);
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, 0, 64, 0, a, NULL);
	it_ep_attributes_t at;
	it_ep_handle_t x, y;
	struct it_buf s, r;

	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &x));
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &y));
	it_testprov_pair(x, y);
	it_buf_new(&F, &s, 64, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 64, IT_PRIV_LOCAL);
	/* Nobody dequeues d: the pump thread does, and tells the AEVD. */
	send_seen_by_aevd(x, y, &s, &r, d, a, 9, 8);
	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_ep_free(y));
	it_buf_free(&s);
	it_buf_free(&r);
	ck_assert_it_ok(it_evd_free(d));
	ck_assert_it_ok(it_evd_free(a));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

struct cb_rec {
	it_evd_handle_t evd;
	void *arg;
	int calls;
	int drained;
};

static void callback(it_evd_handle_t evd, void *arg)
{
	struct cb_rec *r = arg;
	it_event_t ev;

	r->evd = evd;
	r->arg = arg;
	r->calls++;
	while (it_evd_dequeue(evd, &ev) == IT_SUCCESS)
		r->drained++;
}

/* Is the EVD pump thread running in this process? */
static bool pump_thread_named(void)
{
	g_autoptr(GDir) d = g_dir_open("/proc/self/task", 0, NULL);
	const char *t;

	ck_assert_ptr_nonnull(d);
	while ((t = g_dir_read_name(d))) {
		g_autofree char *path =
			g_strdup_printf("/proc/self/task/%s/comm", t);
		g_autofree char *comm = NULL;

		if (g_file_get_contents(path, &comm, NULL, NULL) &&
		    g_str_has_prefix(comm, "hostrdma-evd"))
			return true;
	}
	return false;
}

/* A new pump names itself once it runs: give it up to 5 s. (A stopped
 * one is joined before the call that stopped it returns.) */
static bool pump_started(void)
{
	for (int i = 0; i < 500; i++) {
		if (pump_thread_named())
			return true;
		g_usleep(10000);
	}
	return false;
}

struct late_send {
	it_ep_handle_t ep;
	it_lmr_triplet_t seg;
};

static void *late_send_thread(void *arg)
{
	struct late_send *l = arg;

	g_usleep(50000);
	ck_assert_it_ok(it_post_send(l->ep, &l->seg, 1, 21,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	return NULL;
}

/* A DTO SEVD that is only dequeued and waited on has no thread moving
 * its completions (a polling consumer pays no wake-up per completion);
 * a waiter still wakes for a completion made later by another thread;
 * a callback or an AEVD bound with it_evd_modify start the pump, and
 * the pump stops when the last of them goes. */
START_TEST(dto_watched_only_when_observed)
{
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, NULL);
	it_evd_handle_t a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 8, 0,
				    NULL, NULL);
	GMainContext *ctx = g_main_context_new();
	struct waiter w = { .evd = d, .timeout = IT_WAIT_US };
	it_ep_attributes_t at;
	it_ep_handle_t x, y;
	struct it_buf s, r;
	struct late_send l;
	it_lmr_triplet_t seg;
	it_evd_param_t p;
	it_event_t ev;
	pthread_t t;

	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &x));
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, &y));
	it_testprov_pair(x, y);
	it_buf_new(&F, &s, 64, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 64, IT_PRIV_LOCAL);
	ck_assert(!pump_thread_named());

	/* Completions wait in the CQ for the consumer. */
	seg = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(y, &seg, 1, 20,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	ck_assert(!pump_thread_named());

	/* A waiter sleeps on the CQ and wakes for a later completion. */
	l.ep = x;
	l.seg = it_seg(&s, 0, 8);
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	wait_until_waiting(&w);
	{
		pthread_t sender;

		ck_assert_int_eq(pthread_create(&sender, NULL,
						late_send_thread, &l), 0);
		pthread_join(sender, NULL);
	}
	pthread_join(t, NULL);
	ck_assert_it_ok(w.st);
	ck_assert_event(&w.ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_uint_eq(w.ev.dto_cmpl.cookie, 20);
	ck_assert_uint_eq(w.ev.dto_cmpl.transferred_length, 8);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 21);
	ck_assert(!pump_thread_named());

	/* An AEVD bound later learns of a completion nobody dequeued. */
	p.aevd = a;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(pump_started());
	send_seen_by_aevd(x, y, &s, &r, d, a, 22, 4);
	p.aevd = NULL;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(!pump_thread_named());

	/* A callback on a DTO SEVD runs for a completion nobody dequeued. */
	{
		struct cb_rec rec = { 0 };

		g_main_context_push_thread_default(ctx);
		ck_assert_it_ok(it_evd_callback_attach(d, callback, &rec));
		ck_assert(pump_started());
		seg = it_seg(&r, 0, 64);
		ck_assert_it_ok(it_post_recv(y, &seg, 1, 24,
					     IT_COMPLETION_FLAG));
		seg = it_seg(&s, 0, 4);
		ck_assert_it_ok(it_post_send(x, &seg, 1, 25,
					     IT_COMPLETION_FLAG |
						     IT_NOTIFY_FLAG));
		while (rec.drained < 2)
			g_main_context_iteration(ctx, TRUE);
		ck_assert_int_eq(rec.calls, 1);
		ck_assert_ptr_eq(rec.evd, d);
		ck_assert_it_ok(it_evd_callback_detach(d));
		ck_assert(!pump_thread_named());
		g_main_context_pop_thread_default(ctx);
	}

	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_ep_free(y));
	it_buf_free(&s);
	it_buf_free(&r);
	ck_assert_it_ok(it_evd_free(d));
	ck_assert_it_ok(it_evd_free(a));
	g_main_context_unref(ctx);
}
END_TEST

START_TEST(callbacks)
{
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM, 0, 8, 0, NULL,
				    NULL);
	GMainContext *ctx = g_main_context_new();
	struct cb_rec r = { 0 };
	it_evd_param_t p;
	it_event_t ev;
	size_t nmore;

	g_main_context_push_thread_default(ctx);
	ck_assert_it(it_evd_callback_detach(e), IT_ERR_INVALID_EVD_STATE);
	ck_assert_it(it_evd_callback_attach(e, NULL, NULL), IT_ERR_FAULT);
	ck_assert_it_ok(it_evd_callback_attach(e, callback, &r));
	ck_assert_it(it_evd_callback_attach(e, callback, &r),
		     IT_ERR_CALLBACK_EXISTS);
	ck_assert_it_ok(it_evd_query(e, IT_EVD_PARAM_CALLBACK, &p));
	ck_assert(p.evd_callback);
	ck_assert_it(it_evd_wait(e, 0, &ev, &nmore),
		     IT_ERR_INVALID_EVD_STATE);
	/* Nothing to report: the context has nothing to dispatch. */
	ck_assert(!g_main_context_iteration(ctx, FALSE));
	ck_assert_int_eq(r.calls, 0);
	post_sw(e, 1);
	post_sw(e, 2);
	while (r.drained < 2)
		g_main_context_iteration(ctx, TRUE);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_ptr_eq(r.evd, e);
	ck_assert_ptr_eq(r.arg, &r);
	ck_assert_it_ok(it_evd_callback_detach(e));
	post_sw(e, 3);
	while (g_main_context_iteration(ctx, FALSE))
		;
	ck_assert_int_eq(r.calls, 1);
	ck_assert_it_ok(it_evd_dequeue(e, &ev));
	ck_assert_ptr_eq(ev.sw.data, (void *)3);
	/* Freeing an EVD with a callback detaches it. */
	ck_assert_it_ok(it_evd_callback_attach(e, callback, &r));
	ck_assert_it_ok(it_evd_free(e));
	while (g_main_context_iteration(ctx, FALSE))
		;
	g_main_context_pop_thread_default(ctx);
	g_main_context_unref(ctx);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Query, modify                                                       */
/* ------------------------------------------------------------------ */

START_TEST(query_modify)
{
	it_evd_handle_t e = evd_new(IT_SOFTWARE_EVENT_STREAM,
				    IT_EVD_OVERFLOW_NOTIFY, 4, 1, NULL, NULL);
	it_evd_param_t p;
	it_event_t ev;

	ck_assert_it(it_evd_query(e, (it_evd_param_mask_t)0x1000, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_evd_query(e, IT_EVD_PARAM_ALL, NULL), IT_ERR_FAULT);
	ck_assert_it(it_evd_query(NULL, IT_EVD_PARAM_ALL, &p),
		     IT_ERR_INVALID_EVD);
	ck_assert_it_ok(it_evd_query(e, IT_EVD_PARAM_FLAG, &p));
	ck_assert_int_eq(p.evd_flag, IT_EVD_OVERFLOW_NOTIFY);
	/* What cannot change. */
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_FLAG, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_FD, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_QUEUE_SIZE, NULL),
		     IT_ERR_FAULT);
	/* Queue size: larger keeps the order, smaller than what is queued
	 * is refused. */
	for (uintptr_t i = 1; i <= 4; i++)
		post_sw(e, i);
	p.sevd_queue_size = 3;
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_QUEUE_SIZE, &p),
		     IT_ERR_INVALID_QUEUE_SIZE);
	ck_assert_it_ok(it_evd_dequeue(e, &ev));
	p.sevd_queue_size = 6;
	ck_assert_it_ok(it_evd_modify(e, IT_EVD_PARAM_QUEUE_SIZE, &p));
	post_sw(e, 5);
	post_sw(e, 6);
	post_sw(e, 7);
	for (uintptr_t i = 2; i <= 7; i++) {
		ck_assert_it_ok(it_evd_dequeue(e, &ev));
		ck_assert_ptr_eq(ev.sw.data, (void *)i);
	}
	p.sevd_threshold = 7;
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_THRESHOLD, &p),
		     IT_ERR_INVALID_THRESHOLD);
	p.sevd_threshold = 6;
	ck_assert_it_ok(it_evd_modify(e, IT_EVD_PARAM_THRESHOLD, &p));
	ck_assert_it_ok(it_evd_query(e, IT_EVD_PARAM_ALL, &p));
	ck_assert_uint_eq(p.sevd_queue_size, 6);
	ck_assert_uint_eq(p.sevd_threshold, 6);
	p.aevd = F.msg;
	ck_assert_it(it_evd_modify(e, IT_EVD_PARAM_AEVD_HANDLE, &p),
		     IT_ERR_INVALID_AEVD);
	ck_assert_it_ok(it_evd_free(e));
}
END_TEST

Suite *suite_itapi_evd(void)
{
	Suite *s = suite_create("itapi-evd");
	TCase *tc = tcase_create("testprov");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_errors);
	tcase_add_test(tc, every_stream);
	tcase_add_test(tc, software_events);
	tcase_add_test(tc, threshold_and_fd);
	tcase_add_test(tc, wait_timeout_wake_limit);
	tcase_add_test(tc, wait_interrupted);
	tcase_add_test(tc, overflow_default_notify_reset);
	tcase_add_test(tc, aevd_aggregation);
	tcase_add_test(tc, aevd_dequeue_notifications);
	tcase_add_test(tc, dto_fd_notify);
	tcase_add_test(tc, dto_through_aevd);
	tcase_add_test(tc, callbacks);
	tcase_add_test(tc, dto_watched_only_when_observed);
	tcase_add_test(tc, query_modify);
	suite_add_tcase(s, tc);
	return s;
}
