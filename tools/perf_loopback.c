/* SPDX-License-Identifier: MIT */
/*
 * perf_loopback.c - hostrdma-perf --loopback and the demo: the server in
 * a thread and the client in the calling thread, one process.
 *
 * Why a mode of its own: a user-space soft-RoCE device receives on UDP
 * port 4791 of each of its addresses, and only one process can hold
 * 127.0.0.1:4791. Two processes cannot both open rxe_lo; two IAs of one
 * process share the device and can.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct loop_server {
	struct perf_opts o;
	int rc;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int listening;			/* 0 not yet, 1 yes, -1 failed */
	int quit;			/* the client failed (atomic) */
};

static void on_listen(void *arg, bool ok)
{
	struct loop_server *s = arg;

	pthread_mutex_lock(&s->lock);
	s->listening = ok ? 1 : -1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* The client reports the numbers; the server's copy is not printed. */
static void drop(const struct perf_opts *o, const struct perf_result *r,
		 void *arg)
{
	(void)o;
	(void)r;
	(void)arg;
}

static void *server_main(void *arg)
{
	struct loop_server *s = arg;

	s->rc = perf_run(&s->o, drop, NULL);
	return NULL;
}

int perf_run_loopback(struct perf_opts *o, perf_report_fn report, void *arg)
{
	struct loop_server s = { .o = *o };
	pthread_t th;
	int ok, rc;

	if (!o->server)
		o->server = "127.0.0.1";
	s.o.server = NULL;
	s.o.bind = o->server;
	s.o.quiet = true;
	s.o.json = true;		/* no table header from this side */
	s.o.on_listen = on_listen;
	s.o.on_listen_arg = &s;
	s.o.quit = &s.quit;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	if (pthread_create(&th, NULL, server_main, &s)) {
		fprintf(stderr, "%s: cannot start the server thread\n",
			PERF_PROG);
		rc = 1;
		goto out;
	}
	pthread_mutex_lock(&s.lock);
	while (!s.listening)
		pthread_cond_wait(&s.cond, &s.lock);
	ok = s.listening > 0;
	pthread_mutex_unlock(&s.lock);
	o->on_listen = NULL;
	rc = ok ? perf_run(o, report, arg) : PERF_LOOP_NO_LISTEN;
	if (rc)
		__atomic_store_n(&s.quit, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (ok)
		rc = rc || s.rc;
out:
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.cond);
	return rc;
}
