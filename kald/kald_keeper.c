/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-kald: the keeper, a child that holds copies of the groups'
 * sockets and of the forwarding sockets so that a daemon restart breaks
 * no running process, and the next daemon's adoption of what it kept.
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "kald/kald.h"

/* ------------------------------------------------------------------ */
/* The keeper: what outlives the daemon for its successor              */
/* ------------------------------------------------------------------ */

#define KEEP_MAGIC 0x6b656570u	/* "keep" */
/* How long a new daemon waits for the keeper's records. */
#define KEEP_WAIT_MS 3000

struct kept {
	struct keep_rec r;
	int fd;
};

static int send_rec(int s, struct keep_rec *r, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	r->magic = KEEP_MAGIC;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*r)
		? 0 : -errno;
}

/* One record and its socket (-1 for none); 0 at the end of the stream,
 * -1 on an error or a malformed record. */
static int recv_rec(int s, struct keep_rec *r, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(*r) || r->magic != KEEP_MAGIC) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -1;
	}
	return 1;
}

void keep_send(const struct keep_rec *r, int fd)
{
	struct keep_rec c = *r;
	int err;

	if (K.keep_fd < 0)
		return;
	err = send_rec(K.keep_fd, &c, fd);
	if (err) {
		g_warning("the keeper is gone (%s): a restart of this daemon "
			  "will break the running processes' soft-RoCE",
			  g_strerror(-err));
		close(K.keep_fd);
		K.keep_fd = -1;
	}
}

static bool kept_match(const struct kept *a, const struct keep_rec *r)
{
	if (a->r.kind == KEEP_SID)
		return a->r.sid == r->sid;
	return a->r.index == r->index && same_addr(&a->r.addr, &r->addr);
}

/* Keeps @r (taking @fd) in @kept, or forgets what it undoes. */
static void kept_apply(GArray *kept, struct keep_rec *r, int fd)
{
	unsigned int want = r->kind == KEEP_UNFWD ? KEEP_FWD
			    : r->kind == KEEP_UNSID ? KEEP_SID : r->kind;
	unsigned int i;

	if (want != KEEP_MEMBER)
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (k->r.kind == want && kept_match(k, r)) {
				if (k->fd >= 0)
					close(k->fd);
				g_array_remove_index(kept, i);
				break;
			}
		}
	if (r->kind == KEEP_MEMBER || r->kind == KEEP_FWD ||
	    r->kind == KEEP_SID) {
		struct kept k = { .r = *r, .fd = fd };

		g_array_append_val(kept, k);
	} else if (fd >= 0) {
		close(fd);
	}
}

static unsigned int kept_count(GArray *kept, unsigned int kind)
{
	unsigned int i, n = 0;

	for (i = 0; i < kept->len; i++)
		n += g_array_index(kept, struct kept, i).r.kind == kind;
	return n;
}

/* Hands everything to the daemon on @s: the groups' sockets in their
 * order, then the ranges' forwarding sockets, then the service IDs. */
static void kept_hand_over(GArray *kept, int s)
{
	static const unsigned int order[] = { KEEP_MEMBER, KEEP_FWD,
					      KEEP_SID };
	struct keep_rec end = { .kind = KEEP_END };
	unsigned int i, j;

	for (j = 0; j < G_N_ELEMENTS(order); j++)
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (k->r.kind == order[j] &&
			    send_rec(s, &k->r, k->fd) < 0)
				return;
		}
	(void)send_rec(s, &end, -1);
}

/*
 * The keeper's life: it records what the daemon tells it on @sp until the
 * daemon is gone. Then, while some process still holds a forwarding
 * socket, it waits on @lfd (at @kpath) for the next daemon, hands it
 * everything and ends; it ends at once when no process is left to keep
 * going.
 */
static G_NORETURN void keeper_main(int sp, int lfd, const char *kpath)
{
	GArray *kept = g_array_new(FALSE, FALSE, sizeof(struct kept));
	struct keep_rec r;
	int fd, got;

	while ((got = recv_rec(sp, &r, &fd)) > 0)
		kept_apply(kept, &r, fd);
	if (!kept_count(kept, KEEP_FWD)) {
		unsigned int i;

		/* Port 4791 free before the daemon sees us go: it waits for
		 * that (keeper_wait_gone) so that a daemon started right
		 * after it finds the port free. */
		for (i = 0; i < kept->len; i++)
			if (g_array_index(kept, struct kept, i).fd >= 0)
				close(g_array_index(kept, struct kept, i).fd);
		close(sp);
		goto out;
	}
	close(sp);
	g_message("keeper: the daemon is gone; holding the shared sockets "
		  "(%u forwarding) for the next one", kept_count(kept,
		  KEEP_FWD));
	for (;;) {
		GArray *pfds = g_array_new(FALSE, TRUE,
					   sizeof(struct pollfd));
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		unsigned int i;
		int s;

		g_array_append_val(pfds, p);
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			p.fd = k->r.kind == KEEP_FWD ? k->fd : -1;
			p.events = 0;	/* a process's end closing: HUP */
			g_array_append_val(pfds, p);
		}
		if (poll((struct pollfd *)pfds->data, pfds->len, -1) < 0 &&
		    errno != EINTR) {
			g_array_free(pfds, TRUE);
			break;
		}
		for (i = kept->len; i-- > 0;) {
			struct pollfd *q = &g_array_index(pfds, struct pollfd,
							  i + 1);
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (q->fd >= 0 && (q->revents & (POLLHUP | POLLERR))) {
				g_debug("keeper: pid %d is gone", k->r.pid);
				r = k->r;
				r.kind = KEEP_UNFWD;
				kept_apply(kept, &r, -1);
			}
		}
		if (g_array_index(pfds, struct pollfd, 0).revents & POLLIN) {
			s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (s >= 0) {
				unlink(kpath);
				kept_hand_over(kept, s);
				close(s);
				g_message("keeper: handed over to the new "
					  "daemon");
				g_array_free(pfds, TRUE);
				_exit(0);
			}
		}
		g_array_free(pfds, TRUE);
		if (!kept_count(kept, KEEP_FWD)) {
			g_message("keeper: every process is gone, nothing "
				  "left to keep");
			break;
		}
	}
out:
	unlink(kpath);
	_exit(0);
}

/*
 * A clean stop with no process left to keep: the keeper has nothing to
 * hold and ends, closing its copies of the groups' sockets; wait (up to
 * @ms) until it has, so that port 4791 is free once this daemon has
 * exited. @fd: our end of the keeper's socket pair, records ended
 * (shutdown SHUT_WR).
 */
void keeper_wait_gone(int fd, int ms)
{
	gint64 end = g_get_monotonic_time() + (gint64)ms * 1000;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	char c;

	for (;;) {
		gint64 left = (end - g_get_monotonic_time()) / 1000;

		if (left <= 0) {
			g_warning("keeper: not gone after %d ms; soft-RoCE's "
				  "port stays held until it is", ms);
			return;
		}
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		/* EOF or an error: its end is closed, after its sockets. */
		n = recv(fd, &c, 1, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/* Starts our keeper listening at @kpath and tells it what we hold. */
void keeper_start(const char *kpath)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	unsigned int i, j;
	int sp[2], lfd, fd;
	struct rlimit rl;
	pid_t pid;

	K.keep_fd = -1;
	if (strlen(kpath) >= sizeof(sun.sun_path)) {
		g_warning("no keeper: %s is too long a path; a restart of "
			  "this daemon will break running processes", kpath);
		return;
	}
	strcpy(sun.sun_path, kpath);
	unlink(kpath);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(kpath, 0600) < 0 || listen(lfd, 1) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		g_warning("no keeper: %s: %s; a restart of this daemon will "
			  "break running processes", kpath, g_strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return;
	}
	pid = fork();
	if (pid < 0) {
		g_warning("no keeper: fork: %s", g_strerror(errno));
		close(lfd);
		close(sp[0]);
		close(sp[1]);
		return;
	}
	if (pid == 0) {
		/* Only what the daemon sends: nothing else of its. */
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0 ||
		    rl.rlim_cur > 65536)
			rl.rlim_cur = 65536;
		for (fd = 3; fd < (int)rl.rlim_cur; fd++)
			if (fd != sp[1] && fd != lfd)
				close(fd);
		/* Out of the daemon's session: a ^C to a foreground daemon
		 * stops the daemon, not what running processes need. */
		(void)setsid();
		keeper_main(sp[1], lfd, kpath);
	}
	close(lfd);
	close(sp[1]);
	K.keep_fd = sp[0];
	g_debug("keeper: pid %d at %s", pid, kpath);
	/* What we took over, if anything, is the new keeper's too. */
	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		for (j = 0; j < g->n; j++) {
			struct keep_rec r = { .kind = KEEP_MEMBER,
					      .index = (uint16_t)j,
					      .addr = g->addr };

			keep_send(&r, g->fds[j]);
		}
	}
	for (i = 0; i < K.clients->len; i++) {
		struct client *c = g_ptr_array_index(K.clients, i);
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, c->fwd);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			struct keep_rec r = { .kind = KEEP_FWD,
					      .index = (uint16_t)c->slot,
					      .pid = c->pid, .uid = c->uid,
					      .addr = ((struct group *)k)->addr };

			keep_send(&r, GPOINTER_TO_INT(v));
		}
	}
	{
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, K.sids);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			struct keep_rec r = {
				.kind = KEEP_SID,
				.index = (uint16_t)((struct client *)v)->slot,
				.sid = *(uint64_t *)k,
			};

			keep_send(&r, -1);
		}
	}
}

/* A process of the previous daemon's, known by its forwarding sockets
 * until it connects again: their closing is its end. */
static gboolean on_orphan_hup(gint fd, GIOCondition cond, gpointer data)
{
	(void)fd;
	(void)cond;
	client_drop(data, NULL);
	return G_SOURCE_REMOVE;
}

static struct group *group_find(const struct sockaddr_storage *ss)
{
	unsigned int i;

	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		if (same_addr(&g->addr, ss))
			return g;
	}
	return NULL;
}

/* Takes one record of the previous daemon's state over; false when it
 * does not fit (the socket is closed). */
static bool adopt_one(struct keep_rec *r, int fd)
{
	struct group *g = group_find(&r->addr);
	struct client *c = NULL;
	unsigned int i;

	if (r->kind != KEEP_SID && fd < 0)
		return false;
	switch (r->kind) {
	case KEEP_MEMBER:
		if (r->addr.ss_family != AF_INET &&
		    r->addr.ss_family != AF_INET6)
			break;
		if (!g) {
			g = g_new0(struct group, 1);
			g->tx = -1;
			g->addr = r->addr;
			g->len = r->addr.ss_family == AF_INET
				 ? sizeof(struct sockaddr_in)
				 : sizeof(struct sockaddr_in6);
			addr_name(&g->addr, g->name, sizeof(g->name));
			g_ptr_array_add(K.groups, g);
		}
		if (r->index != g->n || g->n >= NSLOTS)
			break;
		g->fds[g->n++] = fd;
		return true;
	case KEEP_FWD:
		if (!g || r->index == 0 || r->index >= g->n)
			break;
		if (K.slots[r->index].state == SLOT_OWNED) {
			c = K.slots[r->index].owner;
			if (c->pid != r->pid || g_hash_table_lookup(c->fwd, g))
				break;
		} else {
			c = g_new0(struct client, 1);
			c->fd = -1;
			c->pid = r->pid;
			c->uid = r->uid;
			c->slot = r->index;
			c->fwd = g_hash_table_new(g_direct_hash,
						  g_direct_equal);
			c->watch = g_unix_fd_add(fd, G_IO_HUP | G_IO_ERR,
						 on_orphan_hup, c);
			g_ptr_array_add(K.clients, c);
			K.slots[r->index].state = SLOT_OWNED;
			K.slots[r->index].owner = c;
		}
		(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		g_hash_table_insert(c->fwd, g, GINT_TO_POINTER(fd));
		g->handed[r->index] = true;
		return true;
	case KEEP_SID:
		if (r->index == 0 || r->index >= NSLOTS ||
		    K.slots[r->index].state != SLOT_OWNED ||
		    g_hash_table_lookup(K.sids, &r->sid))
			break;
		g_hash_table_insert(K.sids, g_memdup2(&r->sid, 8),
				    K.slots[r->index].owner);
		return true;
	default:
		break;
	}
	(void)i;
	if (fd >= 0)
		close(fd);
	return false;
}

/*
 * A keeper at @kpath is the previous daemon's: take over its groups (the
 * very sockets running processes are steered among, in their places),
 * the processes' ranges and forwarding sockets, and their service IDs.
 * Ranges nobody came back for wait to be quiet, as after any death.
 */
void adopt(const char *kpath)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = KEEP_WAIT_MS / 1000 };
	unsigned int i, j, bad = 0;
	struct keep_rec r;
	int s, fd, got;

	if (strlen(kpath) >= sizeof(sun.sun_path))
		return;
	strcpy(sun.sun_path, kpath);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(s);
		return;
	}
	(void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((got = recv_rec(s, &r, &fd)) > 0 && r.kind != KEEP_END)
		bad += !adopt_one(&r, fd);
	close(s);
	if (got <= 0)
		g_warning("the previous daemon's keeper did not finish (%s)",
			  got < 0 ? g_strerror(errno) : "it closed");
	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		if (!g->n)
			continue;
		g->drain[0] = g_unix_fd_add(g->fds[0], G_IO_IN, on_gsi, g);
		for (j = 1; j < g->n; j++) {
			if (g->handed[j])
				continue;
			if (K.slots[j].state == SLOT_FREE) {
				K.slots[j].state = SLOT_QUIET;
				K.slots[j].last = g_get_monotonic_time();
			}
			watch_drain(g, j, true);
		}
	}
	g_message("took over from the previous daemon: %u addresses, %u "
		  "processes' QPN ranges, %u service IDs%s", K.groups->len,
		  K.clients->len, g_hash_table_size(K.sids),
		  bad ? " (some of its records did not fit, dropped)" : "");
}
