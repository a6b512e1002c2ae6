/* SPDX-License-Identifier: MIT */
/* rnicpi/ progress engine: fd sources, the timer heap, wake-up, the
 * after-pass hook, its own thread. */
#include "config.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rnicpi/rnicpi_engine.h"
#include "tests/suites.h"
#include "tests/testutil.h"

struct counting_source {
	struct rnicpi_source src;
	int fd;
	atomic_int calls;
	uint32_t last_events;
};

static bool counting_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct counting_source *c = (struct counting_source *)src;
	uint64_t v;

	atomic_fetch_add(&c->calls, 1);
	c->last_events = events;
	if (read(c->fd, &v, sizeof(v)) < 0)
		return false;
	return true;
}

START_TEST(test_engine_source_dispatch)
{
	struct rnicpi_engine e;
	struct counting_source c = { .src.dispatch = counting_dispatch };
	uint64_t one = 1;
	bool busy = false;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, NULL, NULL));
	c.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ck_assert_int_ge(c.fd, 0);
	ck_assert_ok(rnicpi_engine_add(&e, c.fd, &c.src, EPOLLIN));
	ck_assert_int_eq(rnicpi_engine_run_once(&e, 0, &busy, NULL), 0);
	ck_assert_int_eq(atomic_load(&c.calls), 0);
	ck_assert_int_eq(write(c.fd, &one, sizeof(one)), sizeof(one));
	ck_assert_int_eq(rnicpi_engine_run_once(&e, 1000, &busy, NULL), 1);
	ck_assert_int_eq(atomic_load(&c.calls), 1);
	ck_assert(c.last_events & EPOLLIN);
	ck_assert(busy);
	/* Interest off: the fd stays readable but is not dispatched. */
	ck_assert_int_eq(write(c.fd, &one, sizeof(one)), sizeof(one));
	ck_assert_ok(rnicpi_engine_mod(&e, c.fd, &c.src, 0));
	ck_assert_int_eq(rnicpi_engine_run_once(&e, 0, NULL, NULL), 0);
	ck_assert_int_eq(atomic_load(&c.calls), 1);
	rnicpi_engine_del(&e, c.fd);
	rnicpi_engine_del(&e, c.fd); /* twice is fine */
	close(c.fd);
	rnicpi_engine_fini(&e);
}
END_TEST

struct fire_log {
	int order[8];
	int n;
	struct rnicpi_engine *e;
	struct rnicpi_timer *rearm;	/* re-armed once from its callback */
};

struct logged_timer {
	struct rnicpi_timer t;
	struct fire_log *log;
	int id;
};

static void log_fire(void *arg)
{
	struct logged_timer *lt = arg;
	struct fire_log *log = lt->log;

	if (log->n < 8)
		log->order[log->n++] = lt->id;
	if (log->rearm == &lt->t) {
		log->rearm = NULL;
		rnicpi_timer_arm(log->e, &lt->t, 0);
	}
}

/* Run passes until @n timers fired or 2 s passed. */
static void run_until_fired(struct rnicpi_engine *e, struct fire_log *log,
			    int n)
{
	uint64_t end = rnicpi_now_ns() + 2000000000u;

	while (log->n < n && rnicpi_now_ns() < end)
		ck_assert_int_ge(rnicpi_engine_run_once(e, 100, NULL, NULL),
				 0);
}

START_TEST(test_engine_timers_order_cancel_move)
{
	struct rnicpi_engine e;
	struct fire_log log = { .e = &e };
	struct logged_timer lt[5];
	uint64_t start;
	int i;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, NULL, NULL));
	for (i = 0; i < 5; i++) {
		lt[i].log = &log;
		lt[i].id = i;
		rnicpi_timer_init(&lt[i].t, log_fire, &lt[i]);
		ck_assert(!rnicpi_timer_pending(&e, &lt[i].t));
	}
	start = rnicpi_now_ns();
	/* Armed out of order; 3 is cancelled, 4 moved earlier, 0 later.
	 * Deadlines 40 ms apart: under valgrind the arming itself takes
	 * milliseconds. */
	rnicpi_timer_arm(&e, &lt[0].t, 200000000);
	rnicpi_timer_arm(&e, &lt[1].t, 40000000);
	rnicpi_timer_arm(&e, &lt[2].t, 120000000);
	rnicpi_timer_arm(&e, &lt[3].t, 80000000);
	rnicpi_timer_arm(&e, &lt[4].t, 900000000);
	rnicpi_timer_cancel(&e, &lt[3].t);
	rnicpi_timer_cancel(&e, &lt[3].t);
	ck_assert(!rnicpi_timer_pending(&e, &lt[3].t));
	rnicpi_timer_arm(&e, &lt[4].t, 80000000);
	rnicpi_timer_arm(&e, &lt[0].t, 160000000);
	ck_assert(rnicpi_timer_pending(&e, &lt[0].t));
	run_until_fired(&e, &log, 4);
	ck_assert_int_eq(log.n, 4);
	ck_assert_int_eq(log.order[0], 1);
	ck_assert_int_eq(log.order[1], 4);
	ck_assert_int_eq(log.order[2], 2);
	ck_assert_int_eq(log.order[3], 0);
	/* Nothing fires early: the last deadline was 160 ms out. */
	ck_assert_uint_ge(rnicpi_now_ns() - start, 160000000);
	for (i = 0; i < 5; i++)
		ck_assert(!rnicpi_timer_pending(&e, &lt[i].t));
	/* A callback may re-arm its own timer. */
	log.rearm = &lt[2].t;
	rnicpi_timer_arm(&e, &lt[2].t, 0);
	run_until_fired(&e, &log, 6);
	ck_assert_int_eq(log.n, 6);
	ck_assert_int_eq(log.order[4], 2);
	ck_assert_int_eq(log.order[5], 2);
	ck_assert_uint_eq(atomic_load(&e.stats.timers_fired), 6);
	rnicpi_engine_fini(&e);
}
END_TEST

/* arm_by moves a pending timer earlier, never later: the order of
 * firing shows which deadline each timer kept. */
START_TEST(test_engine_timer_arm_by)
{
	struct rnicpi_engine e;
	struct fire_log log = { .e = &e };
	struct logged_timer lt[3];
	int i;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, NULL, NULL));
	for (i = 0; i < 3; i++) {
		lt[i].log = &log;
		lt[i].id = i;
		rnicpi_timer_init(&lt[i].t, log_fire, &lt[i]);
	}
	rnicpi_timer_arm(&e, &lt[0].t, 80000000);
	rnicpi_timer_arm(&e, &lt[1].t, 160000000);
	/* 0 asked later: keeps 80 ms. 1 asked earlier: moves to 40 ms.
	 * 2 not pending: armed, at 120 ms. */
	rnicpi_timer_arm_by(&e, &lt[0].t, 400000000);
	rnicpi_timer_arm_by(&e, &lt[1].t, 40000000);
	rnicpi_timer_arm_by(&e, &lt[2].t, 120000000);
	for (i = 0; i < 3; i++)
		ck_assert(rnicpi_timer_pending(&e, &lt[i].t));
	run_until_fired(&e, &log, 3);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.order[0], 1);
	ck_assert_int_eq(log.order[1], 0);
	ck_assert_int_eq(log.order[2], 2);
	rnicpi_engine_fini(&e);
}
END_TEST

/* Many timers through the heap, random order in, sorted order out. */
static uint64_t fired_prev;
static int fired_bad, fired_n;

static void check_sorted(void *arg)
{
	struct rnicpi_timer *t = arg;

	if (t->deadline_ns < fired_prev)
		fired_bad++;
	fired_prev = t->deadline_ns;
	fired_n++;
}

START_TEST(test_engine_timer_heap_many)
{
	enum { N = 500 };
	struct rnicpi_engine e;
	static struct rnicpi_timer t[N];
	uint32_t x = 12345;
	uint64_t end;
	int i;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, NULL, NULL));
	fired_prev = 0;
	fired_bad = fired_n = 0;
	for (i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		rnicpi_timer_init(&t[i], check_sorted, &t[i]);
		rnicpi_timer_arm(&e, &t[i], (x >> 8) % 3000000);
	}
	/* Cancel every third, re-arm every fifth. */
	for (i = 0; i < N; i += 3)
		rnicpi_timer_cancel(&e, &t[i]);
	for (i = 1; i < N; i += 5)
		rnicpi_timer_arm(&e, &t[i], (uint64_t)(N - i) * 2000);
	end = rnicpi_now_ns() + 2000000000u;
	while (e.n_heap && rnicpi_now_ns() < end)
		ck_assert_int_ge(rnicpi_engine_run_once(&e, 100, NULL, NULL),
				 0);
	ck_assert_uint_eq(e.n_heap, 0);
	ck_assert_int_eq(fired_bad, 0);
	for (i = 0, x = 0; i < N; i++)
		if (i % 3 || i % 5 == 1)
			x++;
	ck_assert_int_eq(fired_n, (int)x);
	rnicpi_engine_fini(&e);
}
END_TEST

struct hook_state {
	atomic_int passes;
	atomic_int left;	/* passes that still want another */
};

static bool count_pass(void *arg)
{
	struct hook_state *h = arg;

	atomic_fetch_add(&h->passes, 1);
	return atomic_fetch_sub(&h->left, 1) > 1;
}

static void fire_flag(void *arg)
{
	atomic_store((atomic_int *)arg, 1);
}

/* The thread: sleeps until woken, runs the hook after each pass, runs
 * again at once while the hook has work left, and fires timers with no
 * help from outside. */
START_TEST(test_engine_thread_wake_hook_timer)
{
	struct rnicpi_engine e;
	struct hook_state h = { 0 };
	struct rnicpi_timer t;
	atomic_int fired = 0;
	uint64_t end;
	int p;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, count_pass, &h));
	ck_assert(!rnicpi_engine_on_thread(&e));
	ck_assert_ok(rnicpi_engine_start(&e));
	usleep(20000);
	p = atomic_load(&h.passes);
	/* Asleep: no pass without a reason. */
	usleep(50000);
	ck_assert_int_eq(atomic_load(&h.passes), p);
	atomic_store(&h.left, 3);
	rnicpi_engine_wake(&e);
	end = rnicpi_now_ns() + 2000000000u;
	while (atomic_load(&h.passes) < p + 3 && rnicpi_now_ns() < end)
		usleep(1000);
	ck_assert_int_ge(atomic_load(&h.passes), p + 3);
	rnicpi_timer_init(&t, fire_flag, &fired);
	rnicpi_timer_arm(&e, &t, 2000000);
	while (!atomic_load(&fired) && rnicpi_now_ns() < end)
		usleep(1000);
	ck_assert(atomic_load(&fired));
	ck_assert_uint_ge(atomic_load(&e.stats.wakeups), 1);
	rnicpi_engine_stop(&e);
	rnicpi_engine_stop(&e);
	rnicpi_engine_fini(&e);
}
END_TEST

struct slow_cb {
	atomic_int started, finished;
};

static void slow_fire(void *arg)
{
	struct slow_cb *c = arg;

	atomic_store(&c->started, 1);
	usleep(50000);
	atomic_store(&c->finished, 1);
}

/* cancel_sync returns only once a callback that is running returned:
 * the owner may then free what the callback uses (rxe_destroy_qp). */
START_TEST(test_engine_cancel_sync_waits_for_callback)
{
	struct rnicpi_engine e;
	struct rnicpi_timer t;
	struct slow_cb c = { 0 };
	uint64_t end;

	ck_assert_ok(rnicpi_engine_init(&e, "t", 0, NULL, NULL));
	ck_assert_ok(rnicpi_engine_start(&e));
	rnicpi_timer_init(&t, slow_fire, &c);
	rnicpi_timer_arm(&e, &t, 0);
	end = rnicpi_now_ns() + 2000000000u;
	while (!atomic_load(&c.started) && rnicpi_now_ns() < end)
		usleep(100);
	ck_assert(atomic_load(&c.started));
	rnicpi_timer_cancel_sync(&e, &t);
	ck_assert(atomic_load(&c.finished));
	/* Not pending, not running: returns at once. */
	rnicpi_timer_cancel_sync(&e, &t);
	rnicpi_engine_fini(&e);
}
END_TEST

Suite *suite_rnicpi_engine(void)
{
	Suite *s = suite_create("rnicpi-engine");
	TCase *tc = tcase_create("engine");

	tcase_add_test(tc, test_engine_source_dispatch);
	tcase_add_test(tc, test_engine_timers_order_cancel_move);
	tcase_add_test(tc, test_engine_timer_arm_by);
	tcase_add_test(tc, test_engine_timer_heap_many);
	tcase_add_test(tc, test_engine_thread_wake_hook_timer);
	tcase_add_test(tc, test_engine_cancel_sync_waits_for_callback);
	suite_add_tcase(s, tc);
	return s;
}
