/* SPDX-License-Identifier: MIT */
/*
 * ual_engine_glib.c - a GLib main context run on the progress engine.
 *
 * The connection manager's work is GLib sources (sockets, time-outs, ual's
 * CQ sources); run here, its thread is a progress engine like the
 * providers' and the event pump's: GLib's descriptors are engine sources
 * and GLib's next time-out bounds the engine's wait, so there is one kind
 * of loop and one wait in the process. Each pass is GLib's own
 * prepare / query / check / dispatch, with the engine's epoll_wait as the
 * poll.
 *
 * GLib's set of descriptors changes from pass to pass (a socket closed
 * and its number given to a new one among them), so every pass states
 * each descriptor's interest again (EPOLL_CTL_MOD, ADD when the engine
 * does not know it) and forgets the ones GLib no longer names. The
 * manager watches a handful of descriptors: that is a few system calls
 * per pass, not per packet.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <sys/epoll.h>

#include "ual/ual_private.h"

/* One descriptor GLib asked for (several GPollFDs may name it). */
struct glib_fd {
	struct rnicpi_source src;
	int fd;
	uint32_t want;		/* this pass: G_IO_* asked for */
	uint32_t got;		/* this pass: what epoll reported */
	bool unwatchable;	/* epoll refuses it (a regular file): ready */
	bool named;		/* GLib named it this pass */
};

static bool glib_fd_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct glib_fd *g = (struct glib_fd *)src;

	g->got |= events;
	return false;
}

/* GIOCondition and epoll's bits are poll(2)'s for IN, PRI, OUT, ERR and
 * HUP; epoll reports ERR and HUP unasked. */
#define GLIB_EPOLL_MASK (G_IO_IN | G_IO_PRI | G_IO_OUT)

static void watch_fd(struct rnicpi_engine *e, struct glib_fd *g)
{
	uint32_t ev = g->want & GLIB_EPOLL_MASK;
	int err;

	g->unwatchable = false;
	err = rnicpi_engine_mod(e, g->fd, &g->src, ev);
	if (err == -ENOENT)
		err = rnicpi_engine_add(e, g->fd, &g->src, ev);
	if (err == -EPERM)
		g->unwatchable = true;	/* always ready, as poll(2) says */
	else if (err)
		g->got = G_IO_NVAL;
}

static void forget_fd(gpointer key, gpointer val, gpointer e)
{
	rnicpi_engine_del(e, GPOINTER_TO_INT(key));
}

int ual_engine_run_context(struct rnicpi_engine *e, GMainContext *ctx,
			   const gint *stop)
{
	GHashTable *fds = g_hash_table_new_full(g_direct_hash, g_direct_equal,
						NULL, g_free);
	GPollFD *pfd = NULL;
	gint n_alloc = 0;
	int err = 0;

	if (!g_main_context_acquire(ctx)) {
		g_hash_table_destroy(fds);
		return -EBUSY;
	}
	while (!g_atomic_int_get(stop)) {
		GHashTableIter it;
		gpointer key, val;
		gint prio, timeout, n;

		g_main_context_prepare(ctx, &prio);
		while ((n = g_main_context_query(ctx, prio, &timeout, pfd,
						 n_alloc)) > n_alloc) {
			n_alloc = n;
			pfd = g_renew(GPollFD, pfd, n_alloc);
		}
		for (gint i = 0; i < n; i++) {
			struct glib_fd *g = g_hash_table_lookup(
				fds, GINT_TO_POINTER(pfd[i].fd));

			if (!g) {
				g = g_new0(struct glib_fd, 1);
				g->src.dispatch = glib_fd_dispatch;
				g->fd = pfd[i].fd;
				g_hash_table_insert(fds, GINT_TO_POINTER(g->fd),
						    g);
			}
			if (!g->named)
				g->want = 0;
			g->named = true;
			g->want |= pfd[i].events;
		}
		g_hash_table_iter_init(&it, fds);
		while (g_hash_table_iter_next(&it, &key, &val)) {
			struct glib_fd *g = val;

			if (!g->named) {
				rnicpi_engine_del(e, g->fd);
				g_hash_table_iter_remove(&it);
				continue;
			}
			g->got = 0;
			watch_fd(e, g);
		}
		err = rnicpi_engine_run_once(e, timeout, NULL, NULL);
		if (err < 0)
			break;
		err = 0;
		for (gint i = 0; i < n; i++) {
			struct glib_fd *g = g_hash_table_lookup(
				fds, GINT_TO_POINTER(pfd[i].fd));
			uint32_t got = g->unwatchable ? g->want : g->got;

			pfd[i].revents = got & (pfd[i].events | G_IO_ERR |
						G_IO_HUP | G_IO_NVAL);
			g->named = false;
		}
		g_main_context_check(ctx, prio, pfd, n);
		g_main_context_dispatch(ctx);
	}
	g_hash_table_foreach(fds, forget_fd, e);
	g_hash_table_destroy(fds);
	g_free(pfd);
	g_main_context_release(ctx);
	return err;
}
