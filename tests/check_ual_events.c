/* SPDX-License-Identifier: MIT */
/*
 * ual/: completion notification (fd, ack, GSource), async event fan-out
 * and unsubscription, the connection handler, and interface link changes
 * in a private network namespace reaching subscribers as port events -
 * through the provider's netdev_event and through ual's own.
 */
#include "config.h"

#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/suites.h"
#include "tests/testutil.h"
#include "tests/testutil_ual.h"
#include "ual/ual_private.h"

static int fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* Context with test_lo, a PD, a CQ, an unconnected QP in RTS and an MR. */
static struct ual *u;
static struct ual_device *dev;
static struct ual_pd *pd;
static struct ual_cq *cq;
static struct ual_qp *qp;
static struct ual_mr *mr;
static char buf[256];

static void cq_setup(void)
{
	ut_setup();
	u = ut_open();
	dev = ut_device(u, "test_lo");
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	ck_assert_ok(ual_cq_create(dev, 16, &cq));
	qp = ut_qp(pd, cq, cq, NULL);
	ut_qp_rts(qp, 0);
	ck_assert_ok(ual_mr_reg(pd, buf, sizeof(buf), 0, &mr));
}

static void cq_teardown(void)
{
	ck_assert_ok(ual_mr_dereg(mr));
	ck_assert_ok(ual_qp_destroy(qp));
	ck_assert_ok(ual_cq_destroy(cq));
	ck_assert_ok(ual_pd_free(pd));
	ual_device_put(dev);
	ut_close(u);
	ut_teardown();
}

/* ------------------------------------------------------------------ */
/* Completion notification                                             */
/* ------------------------------------------------------------------ */

START_TEST(test_cq_fd_arm_and_ack)
{
	int fd = ual_cq_fd(cq);
	struct rnicpi_wc wc[4];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fd, cq->rcq->notify_fd);
	/* A completion without arming: polled, but the fd stays quiet. */
	ck_assert_ok(ut_post_send(qp, 1, mr, buf, 8, 0));
	ck_assert(!fd_readable(fd));
	ck_assert_errno(ual_cq_ack(cq), EAGAIN);
	/* Armed, nothing new yet: quiet. */
	ck_assert_ok(ual_cq_arm(cq, false));
	ck_assert(!fd_readable(fd));
	/* The next completion makes it readable. */
	ck_assert_ok(ut_post_send(qp, 2, mr, buf, 8, 0));
	ck_assert(fd_readable(fd));
	ck_assert_ok(ual_cq_ack(cq));
	ck_assert(!fd_readable(fd));
	ck_assert_errno(ual_cq_ack(cq), EAGAIN);
	ck_assert_int_eq(ual_cq_poll(cq, 4, wc), 2);
	ck_assert_uint_eq(wc[0].wr_id, 1);
	ck_assert_uint_eq(wc[1].wr_id, 2);
	/* One-shot: without re-arming, the next one is quiet. */
	ck_assert_ok(ut_post_send(qp, 3, mr, buf, 8, 0));
	ck_assert(!fd_readable(fd));
	/* Solicited-only: a plain completion does not fire. */
	ck_assert_ok(ual_cq_arm(cq, true));
	ck_assert_ok(ut_post_send(qp, 4, mr, buf, 8, 0));
	ck_assert(!fd_readable(fd));
	ck_assert_int_eq(ual_cq_poll(cq, 4, wc), 2);
}
END_TEST

struct source_seen {
	unsigned int calls;
	uint64_t wr_ids[8];
	unsigned int n;
	bool rearm;
};

static gboolean on_cq(struct ual_cq *c, gpointer user_data)
{
	struct source_seen *seen = user_data;
	struct rnicpi_wc wc[4];
	int n, i;

	seen->calls++;
	while ((n = ual_cq_poll(c, 4, wc)) > 0)
		for (i = 0; i < n && seen->n < G_N_ELEMENTS(seen->wr_ids); i++)
			seen->wr_ids[seen->n++] = wc[i].wr_id;
	if (seen->rearm)
		ual_cq_arm(c, false);
	return G_SOURCE_CONTINUE;
}

START_TEST(test_cq_source_dispatch)
{
	GMainContext *ctx = g_main_context_new();
	struct source_seen seen = { .rearm = true };
	GSource *src = ual_cq_source_new(cq);

	ck_assert_ptr_nonnull(src);
	g_source_set_callback(src, G_SOURCE_FUNC(on_cq), &seen, NULL);
	g_source_attach(src, ctx);
	/* Nothing armed and nothing completed: no dispatch. */
	ck_assert(!g_main_context_iteration(ctx, FALSE));
	ck_assert_uint_eq(seen.calls, 0);

	ck_assert_ok(ual_cq_arm(cq, false));
	ck_assert_ok(ut_post_send(qp, 42, mr, buf, 8, 0));
	ck_assert(g_main_context_iteration(ctx, FALSE));
	ck_assert_uint_eq(seen.calls, 1);
	ck_assert_uint_eq(seen.n, 1);
	ck_assert_uint_eq(seen.wr_ids[0], 42);
	/* The dispatch acked: the fd is quiet, no second dispatch. */
	ck_assert(!fd_readable(ual_cq_fd(cq)));
	ck_assert(!g_main_context_iteration(ctx, FALSE));
	ck_assert_uint_eq(seen.calls, 1);
	/* The callback re-armed: the next completion dispatches again. */
	ck_assert_ok(ut_post_send(qp, 43, mr, buf, 8, 0));
	ck_assert(g_main_context_iteration(ctx, FALSE));
	ck_assert_uint_eq(seen.calls, 2);
	ck_assert_uint_eq(seen.wr_ids[1], 43);

	g_source_destroy(src);
	g_source_unref(src);
	g_main_context_unref(ctx);
}
END_TEST

START_TEST(test_cq_destroy_detaches_source)
{
	GMainContext *ctx = g_main_context_new();
	struct source_seen seen = { 0 };
	struct ual_cq *c2;
	GSource *src;

	ck_assert_ok(ual_cq_create(dev, 4, &c2));
	src = ual_cq_source_new(c2);
	g_source_set_callback(src, G_SOURCE_FUNC(on_cq), &seen, NULL);
	g_source_attach(src, ctx);
	/* The source's reference does not make the CQ busy; destroying the
	 * CQ takes the source out of the main context. */
	ck_assert_ok(ual_cq_destroy(c2));
	ck_assert(g_source_is_destroyed(src));
	ck_assert(!g_main_context_iteration(ctx, FALSE));
	ck_assert_uint_eq(seen.calls, 0);
	/* The CQ is freed with the source (valgrind checks). */
	g_source_unref(src);
	g_main_context_unref(ctx);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Async events                                                        */
/* ------------------------------------------------------------------ */

static void inject(struct ual_device *d, enum rnicpi_event_type type,
		   struct rnicpi_qp *rqp)
{
	struct rnicpi_device *rdev = ual_device_rnicpi(d);
	struct rnicpi_async_event ev = { .type = type, .status = -EPROTO };

	if (rqp)
		ev.element.qp = rqp;
	else
		ev.element.port_num = 1;
	rdev->core->async_event(rdev, &ev);
}

START_TEST(test_async_fan_out)
{
	struct ut_events a, b;
	guint ida, idb;
	struct ual_async_event ev;

	ut_events_init(&a);
	ut_events_init(&b);
	ida = ual_async_subscribe(u, NULL, ut_events_cb, &a);
	idb = ual_async_subscribe(u, dev, ut_events_cb, &b);
	ck_assert_uint_gt(ida, 0);
	ck_assert_uint_ne(ida, idb);

	inject(dev, RNICPI_EVENT_QP_FATAL, ual_qp_rnicpi(qp));
	ck_assert_uint_eq(ut_events_count(&a, RNICPI_EVENT_QP_FATAL), 1);
	ck_assert_uint_eq(ut_events_count(&b, RNICPI_EVENT_QP_FATAL), 1);
	ev = g_array_index(a.events, struct ual_async_event, 0);
	ck_assert_ptr_eq(ev.device, dev);
	ck_assert_ptr_eq(ev.qp, qp);
	ck_assert_int_eq(ev.status, -EPROTO);
	ck_assert_str_eq(ual_event_type_name(ev.type), "QP_FATAL");

	/* Unsubscribed: no more calls for a; b still gets them. */
	ual_async_unsubscribe(u, ida);
	inject(dev, RNICPI_EVENT_PORT_ERR, NULL);
	ck_assert_uint_eq(a.events->len, 1);
	ck_assert_uint_eq(ut_events_count(&b, RNICPI_EVENT_PORT_ERR), 1);
	ev = g_array_index(b.events, struct ual_async_event, 1);
	ck_assert_uint_eq(ev.port_num, 1);
	ck_assert_ptr_null(ev.qp);

	ual_async_unsubscribe(u, idb);
	inject(dev, RNICPI_EVENT_PORT_ACTIVE, NULL);
	ck_assert_uint_eq(b.events->len, 2);
	ut_events_clear(&a);
	ut_events_clear(&b);
}
END_TEST

START_TEST(test_async_unknown_objects_dropped)
{
	struct rnicpi_device *rdev = ual_device_rnicpi(dev);
	struct rnicpi_async_event ev = { .type = RNICPI_EVENT_QP_FATAL };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-ual");
	struct ut_events a;
	guint id;

	ut_events_init(&a);
	id = ual_async_subscribe(u, NULL, ut_events_cb, &a);
	/* A QP event without a QP, and an unknown type: logged, dropped. */
	rdev->core->async_event(rdev, &ev);
	ev.type = (enum rnicpi_event_type)99;
	rdev->core->async_event(rdev, &ev);
	ck_assert_uint_eq(a.events->len, 0);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "test_lo: async event QP_FATAL names no object"),
			  1);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "unknown type 99"),
			  1);
	ual_async_unsubscribe(u, id);
	ut_events_clear(&a);
}
END_TEST

START_TEST(test_async_device_filter)
{
	g_autofree char *path = g_strdup_printf("%s:%s", TESTPROV_DIR,
						TESTPROV_EXTRA_DIR);
	struct ual_device *d1, *d2;
	struct ut_events only2, all;
	struct ual *u2;
	guint id2, idall;

	/* A second open with a second provider: close the fixture's first
	 * so the configuration is read again. */
	cq_teardown();
	ut_setup();
	g_setenv(UAL_ENV_PROVIDER_PATH, path, TRUE);
	u2 = ut_open();
	d1 = ut_device(u2, "test_lo");
	d2 = ut_device(u2, "test2_lo");
	ut_events_init(&only2);
	ut_events_init(&all);
	id2 = ual_async_subscribe(u2, d2, ut_events_cb, &only2);
	idall = ual_async_subscribe(u2, NULL, ut_events_cb, &all);

	inject(d1, RNICPI_EVENT_DEVICE_FATAL, NULL);
	ck_assert_uint_eq(only2.events->len, 0);
	ck_assert_uint_eq(all.events->len, 1);
	inject(d2, RNICPI_EVENT_DEVICE_FATAL, NULL);
	ck_assert_uint_eq(only2.events->len, 1);
	ck_assert_ptr_eq(g_array_index(only2.events, struct ual_async_event,
				       0).device,
			 d2);
	ck_assert_uint_eq(all.events->len, 2);

	ual_async_unsubscribe(u2, id2);
	ual_async_unsubscribe(u2, idall);
	ut_events_clear(&only2);
	ut_events_clear(&all);
	ual_device_put(d1);
	ual_device_put(d2);
	ut_close(u2);
	/* Back to the fixture's state for its teardown. */
	cq_setup();
}
END_TEST

struct self_unsub {
	struct ual *u;
	guint id;
	unsigned int calls;
};

static void unsubscribe_self(const struct ual_async_event *ev, void *data)
{
	struct self_unsub *s = data;

	s->calls++;
	/* From inside its own callback: must not wait for itself. */
	ual_async_unsubscribe(s->u, s->id);
}

START_TEST(test_unsubscribe_from_callback)
{
	struct self_unsub s = { .u = u };
	struct ut_events other;
	guint id;

	ut_events_init(&other);
	s.id = ual_async_subscribe(u, NULL, unsubscribe_self, &s);
	id = ual_async_subscribe(u, NULL, ut_events_cb, &other);
	inject(dev, RNICPI_EVENT_PORT_ERR, NULL);
	inject(dev, RNICPI_EVENT_PORT_ERR, NULL);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert_uint_eq(other.events->len, 2);
	ual_async_unsubscribe(u, id);
	ut_events_clear(&other);
}
END_TEST

/* A callback that blocks until released, to prove that unsubscribe waits
 * for a call running on another thread. */
struct blocker {
	GMutex lock;
	GCond cond;
	bool entered, release, finished;
	bool finished_seen_by_unsub;
	guint id;
};

static void blocking_cb(const struct ual_async_event *ev, void *data)
{
	struct blocker *b = data;

	g_mutex_lock(&b->lock);
	b->entered = true;
	g_cond_broadcast(&b->cond);
	while (!b->release)
		g_cond_wait(&b->cond, &b->lock);
	g_mutex_unlock(&b->lock);
	g_usleep(1000); /* a call still finishing after the release */
	g_mutex_lock(&b->lock);
	b->finished = true;
	g_mutex_unlock(&b->lock);
}

static gpointer inject_thread(gpointer data)
{
	inject(data, RNICPI_EVENT_PORT_ERR, NULL);
	return NULL;
}

static gpointer unsubscribe_thread(gpointer data)
{
	struct blocker *b = data;

	ual_async_unsubscribe(u, b->id);
	g_mutex_lock(&b->lock);
	b->finished_seen_by_unsub = b->finished;
	g_mutex_unlock(&b->lock);
	return NULL;
}

START_TEST(test_unsubscribe_waits_for_running_call)
{
	struct blocker b = { 0 };
	GThread *injector, *unsub;

	g_mutex_init(&b.lock);
	g_cond_init(&b.cond);
	b.id = ual_async_subscribe(u, NULL, blocking_cb, &b);
	injector = g_thread_new("inject", inject_thread, dev);
	g_mutex_lock(&b.lock);
	while (!b.entered)
		g_cond_wait(&b.cond, &b.lock);
	g_mutex_unlock(&b.lock);
	/* The callback is running; unsubscribe from a third thread. */
	unsub = g_thread_new("unsub", unsubscribe_thread, &b);
	g_usleep(20000); /* give a broken unsubscribe time to return early */
	g_mutex_lock(&b.lock);
	b.release = true;
	g_cond_broadcast(&b.cond);
	g_mutex_unlock(&b.lock);
	g_thread_join(unsub);
	g_thread_join(injector);
	ck_assert(b.finished);
	ck_assert_msg(b.finished_seen_by_unsub,
		      "unsubscribe returned while the callback was running");
	g_cond_clear(&b.cond);
	g_mutex_clear(&b.lock);
}
END_TEST

struct conn_seen {
	unsigned int calls;
	struct ual_device *device;
	enum rnicpi_conn_event_type type;
	int status;
};

static void on_conn(struct ual_device *d, const struct rnicpi_conn_event *ev,
		    void *data)
{
	struct conn_seen *seen = data;

	seen->calls++;
	seen->device = d;
	seen->type = ev->type;
	seen->status = ev->status;
}

START_TEST(test_conn_handler)
{
	struct rnicpi_device *rdev = ual_device_rnicpi(dev);
	struct rnicpi_conn_event ev = {
		.type = RNICPI_CONN_ERROR,
		.status = -ECONNREFUSED,
		.qp = ual_qp_rnicpi(qp),
	};
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-ual");
	struct conn_seen seen = { 0 };

	/* No handler: logged and dropped. */
	rdev->core->conn_event(rdev, &ev);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "no connection handler"),
			  1);
	ual_set_conn_handler(u, on_conn, &seen);
	rdev->core->conn_event(rdev, &ev);
	ck_assert_uint_eq(seen.calls, 1);
	ck_assert_ptr_eq(seen.device, dev);
	ck_assert_int_eq(seen.type, RNICPI_CONN_ERROR);
	ck_assert_int_eq(seen.status, -ECONNREFUSED);
	ual_set_conn_handler(u, NULL, NULL);
	rdev->core->conn_event(rdev, &ev);
	ck_assert_uint_eq(seen.calls, 1);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				       "no connection handler"),
			  2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Link changes in a private network namespace                         */
/* ------------------------------------------------------------------ */

static void link_events_child(void *arg)
{
	const char *options = arg;
	struct ual_async_event first;
	struct rnicpi_port_attr port;
	struct ual_device *d;
	struct ut_events ev;
	struct ual *cu = NULL;
	guint id;

	tu_child_assert(unshare(CLONE_NEWNET) == 0, "unshare: %s",
			g_strerror(errno));
	/* A new namespace's lo is down; up it gets 127.0.0.1 and ::1. */
	tu_child_assert_ok(ut_link_set("lo", true));
	if (options)
		g_setenv(UAL_ENV_OPTIONS, options, TRUE);
	tu_child_assert_ok(ual_open(&cu));
	d = ual_device_lookup(cu, "test_lo");
	tu_child_assert(d != NULL, "no test_lo in the new namespace");
	ut_events_init(&ev);
	id = ual_async_subscribe(cu, d, ut_events_cb, &ev);

	tu_child_assert_ok(ut_link_set("lo", false));
	tu_child_assert(ut_events_wait(&ev, RNICPI_EVENT_PORT_ERR, 1),
			"no PORT_ERR after lo went down");
	if (!options) {
		/* The provider's own netdev_event updated its port. */
		tu_child_assert_ok(ual_device_query_port(d, 1, &port));
		tu_child_assert(port.state == RNICPI_PORT_DOWN,
				"port state %d", port.state);
	}
	tu_child_assert(ut_events_count(&ev, RNICPI_EVENT_PORT_ACTIVE) == 0,
			"PORT_ACTIVE while down");
	tu_child_assert_ok(ut_link_set("lo", true));
	tu_child_assert(ut_events_wait(&ev, RNICPI_EVENT_PORT_ACTIVE, 1),
			"no PORT_ACTIVE after lo came up");
	/* The monitor thread may still be appending (GID changes): look
	 * under the recorder's lock. */
	g_mutex_lock(&ev.lock);
	first = g_array_index(ev.events, struct ual_async_event, 0);
	g_mutex_unlock(&ev.lock);
	tu_child_assert(first.device == d, "event for another device");

	ual_async_unsubscribe(cu, id);
	ut_events_clear(&ev);
	ual_device_put(d);
	tu_child_assert_ok(ual_close(cu));
}

/* Poll for a device that a hot-plug event is expected to create. */
static struct ual_device *wait_device(struct ual *cu, const char *name)
{
	gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	struct ual_device *d;

	while (!(d = ual_device_lookup(cu, name)) &&
	       g_get_monotonic_time() < deadline)
		g_usleep(10000);
	return d;
}

static void hotplug_child(void *arg)
{
	struct rnicpi_port_attr port;
	struct ual_device *d;
	struct ual *cu = NULL;

	tu_child_assert(unshare(CLONE_NEWNET) == 0, "unshare: %s",
			g_strerror(errno));
	/* lo is down and has no address: the default selection skips it. */
	tu_child_assert_ok(ual_open(&cu));
	tu_child_assert(ut_device_count(cu) == 0, "a device on a down lo");
	/* Up with its addresses: the interface events create test_lo. */
	tu_child_assert_ok(ut_link_set("lo", true));
	d = wait_device(cu, "test_lo");
	tu_child_assert(d != NULL, "no test_lo after lo came up");
	tu_child_assert_ok(ual_device_query_port(d, 1, &port));
	tu_child_assert(port.state == RNICPI_PORT_ACTIVE, "port state %d",
			port.state);
	ual_device_put(d);
	tu_child_assert_ok(ual_close(cu));
}

START_TEST(test_hotplug_device)
{
	tu_run_child(hotplug_child, NULL);
}
END_TEST

START_TEST(test_link_events_provider)
{
	tu_run_child(link_events_child, NULL);
}
END_TEST

START_TEST(test_link_events_synthesized)
{
	/* Without netdev_event in the provider's table, ual raises them. */
	tu_run_child(link_events_child, "test.netdev_event=off");
}
END_TEST

Suite *suite_ual_events(void)
{
	Suite *s = suite_create("ual-events");
	TCase *tc;

	tc = tcase_create("cq");
	tcase_add_checked_fixture(tc, cq_setup, cq_teardown);
	tcase_add_test(tc, test_cq_fd_arm_and_ack);
	tcase_add_test(tc, test_cq_source_dispatch);
	tcase_add_test(tc, test_cq_destroy_detaches_source);
	suite_add_tcase(s, tc);

	tc = tcase_create("async");
	tcase_add_checked_fixture(tc, cq_setup, cq_teardown);
	tcase_add_test(tc, test_async_fan_out);
	tcase_add_test(tc, test_async_unknown_objects_dropped);
	tcase_add_test(tc, test_async_device_filter);
	tcase_add_test(tc, test_unsubscribe_from_callback);
	tcase_add_test(tc, test_unsubscribe_waits_for_running_call);
	tcase_add_test(tc, test_conn_handler);
	suite_add_tcase(s, tc);

	tc = tcase_create("link");
	tcase_add_checked_fixture(tc, ut_setup, ut_teardown);
	tcase_add_test(tc, test_link_events_provider);
	tcase_add_test(tc, test_link_events_synthesized);
	tcase_add_test(tc, test_hotplug_device);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
