/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-kald: soft-RoCE's UDP port 4791 on each address, a
 * SO_REUSEPORT group of sockets steered by BTH DestQP, and the QPN ranges
 * (slots) whose sockets the daemon hands to processes.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "kald/kald.h"

/* ------------------------------------------------------------------ */
/* Groups                                                              */
/* ------------------------------------------------------------------ */

void addr_name(const struct sockaddr_storage *ss, char *buf,
		      size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, a,
			  sizeof(a));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, a,
			  sizeof(a));
	if (ss->ss_family == AF_INET6 &&
	    ((struct sockaddr_in6 *)ss)->sin6_scope_id)
		snprintf(buf, len, "[%s%%%u]:%u", a,
			 ((struct sockaddr_in6 *)ss)->sin6_scope_id,
			 ROCE_PORT);
	else if (ss->ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", a, ROCE_PORT);
	else
		snprintf(buf, len, "%s:%u", a, ROCE_PORT);
}

bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
		      &((struct sockaddr_in6 *)b)->sin6_addr, 16) == 0 &&
	       ((struct sockaddr_in6 *)a)->sin6_scope_id ==
		       ((struct sockaddr_in6 *)b)->sin6_scope_id;
}

static gboolean on_drain(gint fd, GIOCondition cond, gpointer data);

/* Read and drop what waits on a socket nobody holds; a QUIET slot's
 * clock starts again. */
static void drain_fd(struct group *g, unsigned int i)
{
	uint64_t n = 0;

	while (recv(g->fds[i], K.buf, DGRAM_MAX, MSG_DONTWAIT) >= 0)
		n++;
	if (n) {
		K.strays += n;
		if (K.slots[i].state == SLOT_QUIET)
			K.slots[i].last = g_get_monotonic_time();
		g_debug("%s: %" G_GUINT64_FORMAT " stray datagrams for QPN "
			"range %u dropped", g->name, n, i);
	}
}

static gboolean on_drain(gint fd, GIOCondition cond, gpointer data)
{
	struct group *g = data;
	unsigned int i;

	(void)cond;
	for (i = 1; i < g->n; i++)
		if (g->fds[i] == fd)
			break;
	if (i < g->n)
		drain_fd(g, i);
	return G_SOURCE_CONTINUE;
}

void watch_drain(struct group *g, unsigned int i, bool on)
{
	if (on && !g->drain[i]) {
		g->drain[i] = g_unix_fd_add(g->fds[i], G_IO_IN, on_drain, g);
		drain_fd(g, i);
	} else if (!on && g->drain[i]) {
		g_source_remove(g->drain[i]);
		g->drain[i] = 0;
	}
}

int new_member(struct group *g)
{
	int fd, one = 1, size = 4 << 20, err;

	fd = socket(g->addr.ss_family,
		    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (g->addr.ss_family == AF_INET6) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
		/* RoCEv2 over IPv6 may carry a zero UDP checksum (the ICRC
		 * protects it, IBA annex A17). */
		(void)setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, &one,
				 sizeof(one));
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size,
		       sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size,
				 sizeof(size));
	if (bind(fd, (struct sockaddr *)&g->addr, g->len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* The program covers exactly the sockets there are: an index past
	 * the last would let the kernel hash the datagram to anyone. */
	err = kal_udp_steer_by_qpn(fd, KAL_HOSTSVC_QPN_SHIFT, g->n + 1);
	if (err) {
		close(fd);
		return err;
	}
	/* Attached through the new socket, which is then locked: a process
	 * holding it can no longer replace the group's program (EPERM; it
	 * can still detach it, see hostrdma-kald(8) LIMITS). */
	if (setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
		g_warning("%s: SO_LOCK_FILTER: %s", g->name, g_strerror(errno));
	g->fds[g->n] = fd;
	g->handed[g->n] = false;
	{
		struct keep_rec r = { .kind = KEEP_MEMBER,
				      .index = (uint16_t)g->n,
				      .addr = g->addr };

		keep_send(&r, fd);
	}
	if (g->n == 0)
		g->drain[0] = g_unix_fd_add(fd, G_IO_IN, on_gsi, g);
	else
		watch_drain(g, g->n, true);
	g->n++;
	return 0;
}

void group_free(struct group *g)
{
	unsigned int i;

	for (i = 0; i < g->n; i++) {
		if (g->drain[i])
			g_source_remove(g->drain[i]);
		close(g->fds[i]);
	}
	if (g->tx >= 0)
		close(g->tx);
	g_free(g);
}

/*
 * Is soft-RoCE's port on @g's address free, before the group's first
 * socket binds it? A socket with SO_REUSEPORT joins whatever group of the
 * same user is bound there already: that of another hostrdma-kald on
 * another control socket (bench/run's own beside the host's, two users'
 * daemons), or of a keeper whose daemon is gone. Joined, the two daemons'
 * programs steer one group and the datagrams of either one's processes
 * land on the other's sockets. A bind without SO_REUSEPORT fails on any
 * holder, sharing or not.
 */
static int port_free(const struct group *g)
{
	int fd, one = 1, err = 0;

	fd = socket(g->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (g->addr.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
	if (bind(fd, (const struct sockaddr *)&g->addr, g->len) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The group of @ss, made (with its index 0, ours) on first use. */
int group_get(const struct sockaddr_storage *ss, struct group **out)
{
	struct group *g;
	unsigned int i;
	int err;

	for (i = 0; i < K.groups->len; i++) {
		g = g_ptr_array_index(K.groups, i);
		if (same_addr(&g->addr, ss)) {
			*out = g;
			return 0;
		}
	}
	g = g_new0(struct group, 1);
	g->tx = -1;
	g->addr = *ss;
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)&g->addr)->sin_port = htons(ROCE_PORT);
		g->len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&g->addr)->sin6_port =
			htons(ROCE_PORT);
		((struct sockaddr_in6 *)&g->addr)->sin6_flowinfo = 0;
		g->len = sizeof(struct sockaddr_in6);
	}
	addr_name(&g->addr, g->name, sizeof(g->name));
	err = port_free(g);
	if (err == -EADDRINUSE) {
		g_warning("%s: soft-RoCE's port is held already, not joined: "
			  "by another hostrdma-kald (on another control "
			  "socket, or the keeper of one that is gone), a "
			  "process without the host service or the kernel's "
			  "rdma_rxe (ss -uanp 'sport = :%u' names it)",
			  g->name, ROCE_PORT);
		g_free(g);
		return err;
	}
	err = new_member(g);
	if (err) {
		g_warning("%s: cannot take soft-RoCE's port: %s%s", g->name,
			  g_strerror(-err), err == -EADDRINUSE
			  ? " (a process or the kernel's rdma_rxe owns it "
			    "without sharing)" : "");
		g_free(g);
		return err;
	}
	g_ptr_array_add(K.groups, g);
	g_message("%s: soft-RoCE's port is shared from now on", g->name);
	*out = g;
	return 0;
}

/* ------------------------------------------------------------------ */
/* QPN ranges                                                          */
/* ------------------------------------------------------------------ */

/* Quiet slots whose sockets stayed silent long enough become free. */
static void reap_quiet(void)
{
	gint64 now = g_get_monotonic_time();
	unsigned int i;

	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_QUIET &&
		    now - K.slots[i].last >= (gint64)K.quiet_ms * 1000) {
			K.slots[i].state = SLOT_FREE;
			g_debug("QPN range %u is free again", i);
		}
}

gboolean on_tick(gpointer data)
{
	(void)data;
	reap_quiet();
	return G_SOURCE_CONTINUE;
}

unsigned int slot_take(struct client *c)
{
	unsigned int i, mine = 0;

	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_OWNED &&
		    K.slots[i].owner->uid == c->uid)
			mine++;
	if (c->uid != 0 && mine >= MAX_SLOTS_PER_UID) {
		g_warning("pid %d (uid %u): the user holds %u QPN ranges "
			  "already, the most one user may", c->pid, c->uid,
			  mine);
		return 0;
	}
	reap_quiet();
	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_FREE) {
			K.slots[i].state = SLOT_OWNED;
			K.slots[i].owner = c;
			return i;
		}
	return 0;
}

/* The process is gone: its sockets come back to us; the range waits
 * until they have been quiet for quiet_ms (datagrams in flight to the
 * dead process's QPs are read and dropped here, never seen by the next
 * owner). */
void slot_release(unsigned int i)
{
	unsigned int j;

	K.slots[i].state = SLOT_QUIET;
	K.slots[i].owner = NULL;
	K.slots[i].last = g_get_monotonic_time();
	for (j = 0; j < K.groups->len; j++) {
		struct group *g = g_ptr_array_index(K.groups, j);

		if (i < g->n) {
			g->handed[i] = false;
			watch_drain(g, i, true);
		}
	}
}
