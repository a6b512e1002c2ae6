/* SPDX-License-Identifier: MIT */
/*
 * ual/: a GLib main context run on the progress engine
 * (ual_engine_run_context), as the connection manager's thread runs: GLib's
 * descriptors are engine sources, GLib's time-outs bound the engine's
 * wait, a descriptor number closed and reused is watched again, and the
 * loop stops when told.
 */
#include "config.h"

#include <fcntl.h>
#include <unistd.h>

#include <glib-unix.h>

#include "tests/suites.h"
#include "tests/testutil.h"
#include "ual/ual.h"

struct ctx_run {
	struct rnicpi_engine engine;
	GMainContext *ctx;
	gint stop;
	int rc;
	GThread *thread;
	/* What the sources saw, in order. */
	GMutex lock;
	GString *log;
	gint reads;
};

static gpointer run_thread(gpointer data)
{
	struct ctx_run *r = data;

	g_main_context_push_thread_default(r->ctx);
	r->rc = ual_engine_run_context(&r->engine, r->ctx, &r->stop);
	g_main_context_pop_thread_default(r->ctx);
	return NULL;
}

static void run_start(struct ctx_run *r)
{
	memset(r, 0, sizeof(*r));
	ck_assert_ok(rnicpi_engine_init(&r->engine, "test-glib", 0, NULL,
					NULL));
	r->ctx = g_main_context_new();
	g_mutex_init(&r->lock);
	r->log = g_string_new(NULL);
	r->thread = g_thread_new("test-glib", run_thread, r);
}

static void note(struct ctx_run *r, const char *what)
{
	g_mutex_lock(&r->lock);
	g_string_append(r->log, what);
	g_mutex_unlock(&r->lock);
}

static gboolean stop_cb(gpointer data)
{
	struct ctx_run *r = data;

	g_atomic_int_set(&r->stop, 1);
	return G_SOURCE_REMOVE;
}

static void run_stop(struct ctx_run *r)
{
	GSource *s = g_idle_source_new();

	g_source_set_callback(s, stop_cb, r, NULL);
	g_source_attach(s, r->ctx);
	g_source_unref(s);
	g_thread_join(r->thread);
	ck_assert_int_eq(r->rc, 0);
	g_main_context_unref(r->ctx);
	rnicpi_engine_fini(&r->engine);
	g_string_free(r->log, TRUE);
	g_mutex_clear(&r->lock);
}

struct tagged {
	struct ctx_run *r;
	const char *tag;
};

static gboolean timeout_cb(gpointer data)
{
	struct tagged *t = data;

	note(t->r, t->tag);
	return G_SOURCE_REMOVE;
}

/* Attach, from this thread, a time-out that logs @tag after @ms. */
static void add_timeout(struct ctx_run *r, guint ms, const char *tag)
{
	struct tagged *t = g_new(struct tagged, 1);
	GSource *s = g_timeout_source_new(ms);

	t->r = r;
	t->tag = tag;
	g_source_set_callback(s, timeout_cb, t, g_free);
	g_source_attach(s, r->ctx);
	g_source_unref(s);
}

static bool wait_log(struct ctx_run *r, const char *want, int ms)
{
	for (int i = 0; i < ms; i++) {
		bool ok;

		g_mutex_lock(&r->lock);
		ok = strcmp(r->log->str, want) == 0;
		g_mutex_unlock(&r->lock);
		if (ok)
			return true;
		g_usleep(1000);
	}
	return false;
}

/* Time-outs attached from another thread wake the loop (GLib's wake-up
 * descriptor is an engine source) and fire in deadline order. */
START_TEST(test_timeouts_in_order)
{
	struct ctx_run r;
	uint64_t passes;

	run_start(&r);
	add_timeout(&r, 150, "c");
	add_timeout(&r, 10, "a");
	add_timeout(&r, 80, "b");
	ck_assert_msg(wait_log(&r, "abc", 5000), "fired: '%s'", r.log->str);
	passes = atomic_load(&r.engine.stats.passes);
	/* The engine waited for them: its passes are the loop's. */
	ck_assert_uint_ge(passes, 3);
	run_stop(&r);
}
END_TEST

static gboolean read_cb(gint fd, GIOCondition cond, gpointer data)
{
	struct ctx_run *r = data;
	char c;

	if (read(fd, &c, 1) == 1) {
		char tag[2] = { c, 0 };

		note(r, tag);
		g_atomic_int_inc(&r->reads);
	}
	return G_SOURCE_CONTINUE;
}

static GSource *watch_read(struct ctx_run *r, int fd)
{
	GSource *s = g_unix_fd_source_new(fd, G_IO_IN);

	g_source_set_callback(s, (GSourceFunc)(void (*)(void))read_cb, r,
			      NULL);
	g_source_attach(s, r->ctx);
	return s;
}

/* A descriptor GLib watches is dispatched when it becomes readable; when
 * its number is given to another file under GLib's feet (dup2 closes the
 * old one, and epoll forgets it), the next pass watches the new file:
 * GLib names descriptors by number, as poll(2) does. */
START_TEST(test_fd_watched_and_reused)
{
	struct ctx_run r;
	GSource *s;
	int p[2], q[2];

	run_start(&r);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(q, O_CLOEXEC), 0);
	s = watch_read(&r, p[0]);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_msg(wait_log(&r, "x", 5000), "read: '%s'", r.log->str);

	ck_assert_int_eq(dup3(q[0], p[0], O_CLOEXEC), p[0]);
	/* A pass must come for the loop to look again (GLib's own poll
	 * would sleep on the old file just the same): a time-out. */
	add_timeout(&r, 1, "t");
	ck_assert_msg(wait_log(&r, "xt", 5000), "log: '%s'", r.log->str);
	ck_assert_int_eq(write(q[1], "y", 1), 1);
	ck_assert_msg(wait_log(&r, "xty", 5000), "log: '%s'", r.log->str);
	g_source_destroy(s);
	g_source_unref(s);
	run_stop(&r);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}
END_TEST

Suite *suite_ual_engine(void)
{
	Suite *s = suite_create("ual-engine");
	TCase *tc = tcase_create("glib");

	tcase_set_timeout(tc, 30);

	tcase_add_test(tc, test_timeouts_in_order);
	tcase_add_test(tc, test_fd_watched_and_reused);
	suite_add_tcase(s, tc);
	return s;
}
