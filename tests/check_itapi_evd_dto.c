/* SPDX-License-Identifier: MIT */
/*
 * itapi-evd, completions: DTO SEVDs (the pump, file descriptors also for
 * completions the consumer never polled, notify and solicited), DTO
 * completions through an AEVD, callbacks through a GLib main context. The
 * suite, its fixture and the other cases are in check_itapi_evd.c.
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "tests/check_itapi_evd.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

/* ------------------------------------------------------------------ */
/* DTO SEVDs: the pump, notify and solicited                           */
/* ------------------------------------------------------------------ */

/* Two connected RC EPs of the test provider whose every completion goes
 * to @d, and a send and a receive buffer of @len bytes. */
static void pair_new(it_evd_handle_t d, size_t len, it_ep_handle_t *x,
		     it_ep_handle_t *y, struct it_buf *s, struct it_buf *r)
{
	it_ep_attributes_t at;

	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, x));
	ck_assert_it_ok(it_ep_rc_create(F.pz, d, d, F.msg, 0, &at, y));
	it_testprov_pair(*x, *y);
	it_buf_new(&F, s, len, IT_PRIV_LOCAL);
	it_buf_new(&F, r, len, IT_PRIV_LOCAL);
}

START_TEST(dto_fd_notify)
{
	int fd = -1;
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 64,
				    0, NULL, &fd);
	it_ep_handle_t a, b;
	struct it_buf s, r;
	it_lmr_triplet_t seg;
	it_event_t ev[4];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	pair_new(d, 256, &a, &b, &s, &r);

	/* A completion without IT_NOTIFY_FLAG lands but wakes nobody. */
	seg = it_seg(&r, 0, 256);
	ck_assert_it_ok(it_post_recv(b, &seg, 1, 1, IT_COMPLETION_FLAG));
	seg = it_seg(&s, 0, 10);
	ck_assert_it_ok(it_post_send(a, &seg, 1, 2, IT_COMPLETION_FLAG));
	it_evd_pump(d);
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
	it_ep_handle_t x, y;
	struct it_buf s, r;

	pair_new(d, 64, &x, &y, &s, &r);
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

/* No pump thread. A stopped one is joined before the call that stopped
 * it returns, but pthread_join returns once the kernel cleared the
 * thread's id at its exit, a moment before the task leaves
 * /proc/self/task (seen once in CI's second pass): give it 2 s to go. */
static bool pump_gone(void)
{
	for (int i = 0; i < 200; i++) {
		if (!pump_thread_named())
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
	it_ep_handle_t x, y;
	struct it_buf s, r;
	struct late_send l;
	it_lmr_triplet_t seg;
	it_evd_param_t p;
	it_event_t ev;
	pthread_t t;

	pair_new(d, 64, &x, &y, &s, &r);
	ck_assert(pump_gone());

	/* Completions wait in the CQ for the consumer. */
	seg = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(y, &seg, 1, 20,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	ck_assert(pump_gone());

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
	ck_assert(pump_gone());

	/* An AEVD bound later learns of a completion nobody dequeued. */
	p.aevd = a;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(pump_started());
	send_seen_by_aevd(x, y, &s, &r, d, a, 22, 4);
	p.aevd = NULL;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(pump_gone());

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
		ck_assert(pump_gone());
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

/*
 * An AEVD bound and unbound while a thread waits on the EVD: bound, the
 * pump watches the CQ and the waiter sleeps on the EVD alone; unbound,
 * the waiter must watch the CQ again, or the completion that follows
 * wakes nobody until the wait's time-out (20 s here).
 */
START_TEST(dto_waiter_across_aevd_binding)
{
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, NULL);
	it_evd_handle_t a = evd_new(IT_AEVD_NOTIFICATION_EVENT_STREAM, 0, 8, 0,
				    NULL, NULL);
	struct waiter w = { .evd = d, .timeout = IT_WAIT_US };
	it_ep_handle_t x, y;
	struct it_buf s, r;
	it_lmr_triplet_t seg;
	it_evd_param_t p = { 0 };
	it_event_t ev;
	gint64 t0;
	pthread_t t;

	pair_new(d, 64, &x, &y, &s, &r);
	seg = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(y, &seg, 1, 40,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	wait_until_waiting(&w);
	p.aevd = a;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(pump_started());
	g_usleep(20000);	/* the waiter chooses again */
	ck_assert(!w.done);
	p.aevd = NULL;
	ck_assert_it_ok(it_evd_modify(d, IT_EVD_PARAM_AEVD_HANDLE, &p));
	ck_assert(pump_gone());
	g_usleep(20000);
	t0 = g_get_monotonic_time();
	seg = it_seg(&s, 0, 8);
	ck_assert_it_ok(it_post_send(x, &seg, 1, 41,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	pthread_join(t, NULL);
	ck_assert_msg(g_get_monotonic_time() - t0 < 5000000,
		      "the waiter woke %lld us after the send",
		      (long long)(g_get_monotonic_time() - t0));
	ck_assert_it_ok(w.st);
	ck_assert_uint_eq(w.ev.dto_cmpl.cookie, 40);
	ck_assert_uint_eq(w.ev.dto_cmpl.transferred_length, 8);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 41);
	ck_assert_int_eq(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_ep_free(y));
	it_buf_free(&s);
	it_buf_free(&r);
	ck_assert_it_ok(it_evd_free(a));
	ck_assert_it_ok(it_evd_free(d));
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

/* Completions posted without IT_NOTIFY_FLAG land while a thread waits:
 * they wake nobody (the standard), and the wait that times out with them
 * queued says so in the log; a wait that times out on nothing does not. */
START_TEST(wait_names_unnotified)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-itapi");
	it_evd_handle_t d = evd_new(IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, NULL);
	struct waiter w = { .evd = d, .timeout = 2000000 };
	const char *hint = "2 event(s) queued, none notifying";
	it_ep_handle_t x, y;
	struct it_buf s, r;
	it_lmr_triplet_t seg;
	it_event_t ev;
	size_t nmore;
	pthread_t t;

	pair_new(d, 64, &x, &y, &s, &r);

	ck_assert_it(it_evd_wait(d, 1000, &ev, &nmore),
		     IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "none notifying"), 0);

	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	wait_until_waiting(&w);
	seg = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(y, &seg, 1, 30, IT_COMPLETION_FLAG));
	seg = it_seg(&s, 0, 8);
	ck_assert_it_ok(it_post_send(x, &seg, 1, 31, IT_COMPLETION_FLAG));
	pthread_join(t, NULL);
	ck_assert_it(w.st, IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_MASK, hint) == 1,
		      "no \"%s\" logged; the log:\n%s", hint,
		      tu_log_text(cap));
	/* Both are there for a dequeue, in order. */
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 30);
	ck_assert_it_ok(it_evd_dequeue(d, &ev));
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 31);

	ck_assert_it_ok(it_ep_free(x));
	ck_assert_it_ok(it_ep_free(y));
	it_buf_free(&s);
	it_buf_free(&r);
	ck_assert_it_ok(it_evd_free(d));
}
END_TEST

/* The completion tests of suite_itapi_evd()'s "testprov" case. */
void itapi_evd_add_dto_tests(TCase *tc)
{
	tcase_add_test(tc, dto_fd_notify);
	tcase_add_test(tc, dto_through_aevd);
	tcase_add_test(tc, callbacks);
	tcase_add_test(tc, dto_watched_only_when_observed);
	tcase_add_test(tc, dto_waiter_across_aevd_binding);
	tcase_add_test(tc, wait_names_unnotified);
}
