/* SPDX-License-Identifier: MIT */
/*
 * IT-API event dispatchers: creation rules for every stream, software
 * events, dequeue_n, thresholds, enable, overflow (default, notify, auto
 * reset), waiting (time-out, interruption, one waiter, wake-up), AEVD
 * aggregation, query and modify. File descriptors for DTO completions,
 * notify / solicited semantics and callbacks are in check_itapi_evd_dto.c.
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "tests/check_itapi_evd.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

struct it_fix itevd_fix;

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

it_evd_handle_t evd_new(it_event_type_t stream, it_evd_flags_t flags,
			size_t size, size_t threshold, it_evd_handle_t aevd,
			int *fd)
{
	it_evd_handle_t e = NULL;

	ck_assert_it_ok(it_evd_create(F.ia, stream, flags, size, threshold,
				      aevd, &e, fd));
	return e;
}

bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Post a software event carrying @n as its data. */
void post_sw(it_evd_handle_t e, uintptr_t n)
{
	ck_assert_it_ok(it_evd_post_se(e, (void *)n));
}

/* ------------------------------------------------------------------ */
/* Creation                                                            */
/* ------------------------------------------------------------------ */

START_TEST(create_errors)
{
	it_evd_handle_t e = NULL, a, s;
	struct it_dev_limits lim;
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
	/* A DTO EVD is bounded by the device's completion queue (65536 on
	 * the test provider). */
	it_dev_limits(&F, &lim);
	ck_assert_it(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0,
				   (size_t)lim.max_cqe + 1, 0, NULL, &e, NULL),
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

void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	/* The conformance runner's it_evd_until_waiting probes with a wait
	 * of its own (pure IT-API): met in that instant, ours is refused
	 * (IT_ERR_WAITER_LIMIT) and goes again, or the probe would wait
	 * for a waiter that has gone. */
	do {
		w->st = it_evd_wait(w->evd, w->timeout, &w->ev, &w->nmore);
	} while (w->st == IT_ERR_WAITER_LIMIT);
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Until @w's thread sits in it_evd_wait (it_evd_until_waiting). */
void wait_until_waiting(struct waiter *w)
{
	it_evd_until_waiting(w->evd);
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

/* The connection manager's events, posted as the library does. */
static it_status_t post_internal(it_evd_handle_t e, it_event_type_t type)
{
	return it_evd_post_internal(e, type);
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
	itapi_evd_add_dto_tests(tc); /* check_itapi_evd_dto.c */
	tcase_add_test(tc, query_modify);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * The conformance runner's itapi-evd: the cases above on the device under
 * test, where the test provider's fixture stood. Left out: the
 * overflow case (the library posts connection events into an EVD:
 * it_evd_post_internal), and the completion cases of
 * check_itapi_evd_dto.c (they pair endpoints through the test provider's
 * QP numbers and pump an EVD by hand: it_testprov_pair, it_evd_pump).
 */
static void setup_device(void)
{
	it_setup_siw();
	it_fix_open(&F);
}

Suite *suite_itapi_evd_device(void)
{
	Suite *s = suite_create("itapi-evd");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup_device, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_errors);
	tcase_add_test(tc, every_stream);
	tcase_add_test(tc, software_events);
	tcase_add_test(tc, threshold_and_fd);
	tcase_add_test(tc, wait_timeout_wake_limit);
	tcase_add_test(tc, wait_interrupted);
	tcase_add_test(tc, aevd_aggregation);
	tcase_add_test(tc, aevd_dequeue_notifications);
	tcase_add_test(tc, query_modify);
	suite_add_tcase(s, tc);
	return s;
}
