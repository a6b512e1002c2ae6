/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-kald - the host service: owns soft-RoCE's UDP port 4791 on
 * each address (a SO_REUSEPORT group steered by BTH DestQP), the QPN
 * ranges handed to processes, QP1 and the IB CM's service IDs, so that
 * every process on the host can run soft-RoCE at once. The data path
 * never passes here: each process receives on its own socket of the
 * group. See hostrdma-kald(8) and the protocol in kal/kal.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <glib-unix.h>


#include "kald/kald.h"

struct kald K;

/* ------------------------------------------------------------------ */
/* Clients                                                             */
/* ------------------------------------------------------------------ */

static int reply(struct client *c, struct kal_hostsvc_msg *m, int status,
		 const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	m->status = status;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

static bool addr_ok(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		in_addr_t a = ntohl(((struct sockaddr_in *)ss)->sin_addr.s_addr);

		return a != INADDR_ANY && !IN_MULTICAST(a) &&
		       a != INADDR_BROADCAST;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((struct sockaddr_in6 *)ss)->sin6_addr;

		return !IN6_IS_ADDR_UNSPECIFIED(a) && !IN6_IS_ADDR_MULTICAST(a);
	}
	return false;
}

static int do_udp(struct client *c, struct kal_hostsvc_msg *m)
{
	struct group *g;
	int sp[2], fds[2], err;
	gpointer old;

	if (!addr_ok(&m->addr))
		return reply(c, m, -EINVAL, NULL, 0);
	if (!c->slot) {
		c->slot = slot_take(c);
		if (!c->slot) {
			g_warning("pid %d: no QPN range for it", c->pid);
			return reply(c, m, -ENOSPC, NULL, 0);
		}
		g_message("pid %d (uid %u): QPN range %u (0x%06x..0x%06x)",
			  c->pid, c->uid, c->slot,
			  c->slot << KAL_HOSTSVC_QPN_SHIFT,
			  ((c->slot + 1) << KAL_HOSTSVC_QPN_SHIFT) - 1);
	}
	err = group_get(&m->addr, &g);
	if (err)
		return reply(c, m, err, NULL, 0);
	while (g->n <= c->slot) {
		err = new_member(g);
		if (err) {
			g_warning("%s: socket %u of the group: %s", g->name,
				  g->n, g_strerror(-err));
			return reply(c, m, err, NULL, 0);
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return reply(c, m, -errno, NULL, 0);
	(void)fcntl(sp[0], F_SETFL, O_NONBLOCK);
	/* Asking again for an address replaces the forwarding socket. */
	old = g_hash_table_lookup(c->fwd, g);
	if (old)
		close(GPOINTER_TO_INT(old));
	g_hash_table_insert(c->fwd, g, GINT_TO_POINTER(sp[0]));
	{
		struct keep_rec r = { .kind = KEEP_FWD,
				      .index = (uint16_t)c->slot,
				      .pid = c->pid, .uid = c->uid,
				      .addr = g->addr };

		keep_send(&r, sp[0]);
	}
	watch_drain(g, c->slot, false);
	g->handed[c->slot] = true;
	m->qpn_base = c->slot << KAL_HOSTSVC_QPN_SHIFT;
	m->qpn_count = 1u << KAL_HOSTSVC_QPN_SHIFT;
	fds[0] = g->fds[c->slot];
	fds[1] = sp[1];
	err = reply(c, m, 0, fds, 2);
	close(sp[1]);
	return err;
}

static int do_listen(struct client *c, struct kal_hostsvc_msg *m, bool on)
{
	struct client *holder = g_hash_table_lookup(K.sids, &m->id);

	if (on) {
		if (holder && holder != c) {
			g_message("pid %d: service ID 0x%016" G_GINT64_MODIFIER
				  "x is pid %d's", c->pid, m->id, holder->pid);
			return reply(c, m, -EADDRINUSE, NULL, 0);
		}
		if (!holder) {
			struct keep_rec r = { .kind = KEEP_SID,
					      .index = (uint16_t)c->slot,
					      .sid = m->id };

			g_hash_table_insert(K.sids, g_memdup2(&m->id, 8), c);
			keep_send(&r, -1);
		}
		return reply(c, m, 0, NULL, 0);
	}
	if (holder != c)
		return reply(c, m, -ENOENT, NULL, 0);
	g_hash_table_remove(K.sids, &m->id);
	{
		struct keep_rec r = { .kind = KEEP_UNSID, .sid = m->id };

		keep_send(&r, -1);
	}
	return reply(c, m, 0, NULL, 0);
}

/*
 * A process of the previous daemon's, connected again: when it is the one
 * whose range we took over (its pid and uid, a range it names, no other
 * connection of its own), this connection becomes that client's and @c
 * goes (1: the caller returns G_SOURCE_REMOVE). -ESTALE to anyone else.
 */
static gboolean on_client(gint fd, GIOCondition cond, gpointer data);

static int do_resume(struct client *c, struct kal_hostsvc_msg *m)
{
	unsigned int slot = m->qpn_base >> KAL_HOSTSVC_QPN_SHIFT;
	struct client *o;
	GHashTableIter it;
	gpointer k, v;
	int err;

	if (slot == 0 || slot >= NSLOTS ||
	    m->qpn_base != slot << KAL_HOSTSVC_QPN_SHIFT ||
	    K.slots[slot].state != SLOT_OWNED || c->slot ||
	    g_hash_table_size(c->fwd))
		return reply(c, m, -ESTALE, NULL, 0);
	o = K.slots[slot].owner;
	if (o->fd >= 0 || o->pid != c->pid || o->uid != c->uid) {
		g_warning("pid %d (uid %u): claims QPN range %u, which is "
			  "not its own", c->pid, c->uid, slot);
		return reply(c, m, -ESTALE, NULL, 0);
	}
	g_hash_table_iter_init(&it, K.sids);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (v == c)
			return reply(c, m, -ESTALE, NULL, 0);
	/* The watch on its forwarding socket, which stood for it while it
	 * had no connection, gives way to the connection's. */
	g_source_remove(o->watch);
	o->fd = c->fd;
	o->watch = g_unix_fd_add(o->fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
				 on_client, o);
	g_ptr_array_remove_fast(K.clients, c);
	g_hash_table_destroy(c->fwd);
	g_free(c);
	g_message("pid %d: back, with its QPN range %u", o->pid, slot);
	err = reply(o, m, 0, NULL, 0);
	if (err)
		g_warning("pid %d: the reply to its return: %s", o->pid,
			  g_strerror(-err));
	return 1;
}

static gboolean on_client(gint fd, GIOCondition cond, gpointer data)
{
	struct client *c = data;
	struct kal_hostsvc_msg m;
	ssize_t n;
	int err;

	(void)fd;
	if (cond & (G_IO_ERR | G_IO_HUP | G_IO_NVAL)) {
		client_drop(c, NULL);
		return G_SOURCE_REMOVE;
	}
	n = recv(c->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n == 0) {
		client_drop(c, NULL);
		return G_SOURCE_REMOVE;
	}
	if (n != (ssize_t)sizeof(m) || m.magic != KAL_HOSTSVC_MAGIC ||
	    m.version != KAL_HOSTSVC_VERSION || m.reserved) {
		g_autofree char *why = g_strdup_printf(
			"a malformed request (%zd bytes)", n);

		client_drop(c, why);
		return G_SOURCE_REMOVE;
	}
	switch (m.op) {
	case KAL_HOSTSVC_OP_UDP:
		err = do_udp(c, &m);
		break;
	case KAL_HOSTSVC_OP_LISTEN:
	case KAL_HOSTSVC_OP_UNLISTEN:
		err = do_listen(c, &m, m.op == KAL_HOSTSVC_OP_LISTEN);
		break;
	case KAL_HOSTSVC_OP_RESUME:
		err = do_resume(c, &m);
		if (err == 1)	/* @c is its old self now, freed */
			return G_SOURCE_REMOVE;
		break;
	default: {
		g_autofree char *why = g_strdup_printf(
			"an unknown request %u", m.op);

		client_drop(c, why);
		return G_SOURCE_REMOVE;
	}
	}
	if (err) {
		client_drop(c, "a reply it does not read");
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

void client_drop(struct client *c, const char *why)
{
	GHashTableIter it;
	gpointer k, v;

	if (why)
		g_warning("pid %d (uid %u): %s; disconnected", c->pid, c->uid,
			  why);
	else
		g_message("pid %d: gone%s", c->pid,
			  c->slot ? ", its QPN range waits to be quiet" : "");
	g_hash_table_iter_init(&it, K.sids);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (v == c) {
			struct keep_rec r = { .kind = KEEP_UNSID,
					      .sid = *(uint64_t *)k };

			keep_send(&r, -1);
			g_hash_table_iter_remove(&it);
		}
	g_hash_table_iter_init(&it, c->fwd);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct keep_rec r = { .kind = KEEP_UNFWD,
				      .index = (uint16_t)c->slot,
				      .addr = ((struct group *)k)->addr };

		keep_send(&r, -1);
		close(GPOINTER_TO_INT(v));
	}
	g_hash_table_destroy(c->fwd);
	if (c->slot)
		slot_release(c->slot);
	/* From its own watch too (which then returns G_SOURCE_REMOVE):
	 * GLib allows removing the source being dispatched. */
	g_source_remove(c->watch);
	if (c->fd >= 0)
		close(c->fd);
	g_ptr_array_remove_fast(K.clients, c);
	g_free(c);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int cfd;

	(void)cond;
	(void)data;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return G_SOURCE_CONTINUE;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    K.clients->len >= MAX_CLIENTS) {
		g_warning("a client refused: %s", K.clients->len >= MAX_CLIENTS
			  ? "too many clients" : g_strerror(errno));
		close(cfd);
		return G_SOURCE_CONTINUE;
	}
	if (cred.uid != 0) {
		unsigned int i, n = 0;

		for (i = 0; i < K.clients->len; i++)
			n += ((struct client *)K.clients->pdata[i])->uid ==
			     cred.uid;
		if (n >= MAX_CLIENTS_PER_UID) {
			g_warning("pid %d (uid %u) refused: the user has %u "
				  "connections already", cred.pid, cred.uid,
				  n);
			close(cfd);
			return G_SOURCE_CONTINUE;
		}
	}
	c = g_new0(struct client, 1);
	c->fd = cfd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->fwd = g_hash_table_new(g_direct_hash, g_direct_equal);
	c->watch = g_unix_fd_add(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR,
				 on_client, c);
	g_ptr_array_add(K.clients, c);
	g_debug("pid %d (uid %u) connected", c->pid, c->uid);
	return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------------ */
/* Start                                                               */
/* ------------------------------------------------------------------ */

/* systemd socket activation (sd_listen_fds(3) without libsystemd): one
 * SOCK_SEQPACKET socket as fd 3. */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");

	if (!pid || !n || atol(pid) != (long)getpid() || atoi(n) != 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	(void)fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	g_autofree char *dir = NULL;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		g_printerr("hostrdma-kald: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	dir = g_path_get_dirname(path);
	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_printerr("hostrdma-kald: %s: %s\n", dir, g_strerror(errno));
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -1;
	/* A socket file nobody answers on is a dead daemon's: replace it.
	 * One that answers is a running daemon's: leave it. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		g_printerr("hostrdma-kald: a daemon already answers on %s\n",
			   path);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
		g_printerr("hostrdma-kald: %s: %s\n", path, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Where our keeper listens: next to the control socket. */
static char *keep_path(int lfd)
{
	struct sockaddr_un sun;
	socklen_t len = sizeof(sun);

	memset(&sun, 0, sizeof(sun));
	if (getsockname(lfd, (struct sockaddr *)&sun, &len) < 0 ||
	    sun.sun_family != AF_UNIX || !sun.sun_path[0]) {
		g_warning("no keeper: the control socket has no path; a "
			  "restart of this daemon will break running "
			  "processes");
		return NULL;
	}
	sun.sun_path[sizeof(sun.sun_path) - 1] = 0;
	return g_strconcat(sun.sun_path, ".keep", NULL);
}

static void log_syslog(const gchar *domain, GLogLevelFlags level,
		       const gchar *msg, gpointer data)
{
	int pri = LOG_INFO;

	(void)domain;
	(void)data;
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		pri = LOG_ERR;
	else if (level & G_LOG_LEVEL_WARNING)
		pri = LOG_WARNING;
	else if (level & G_LOG_LEVEL_DEBUG)
		return;
	syslog(pri, "%s", msg);
}

static gboolean on_signal(gpointer data)
{
	(void)data;
	g_main_loop_quit(K.loop);
	return G_SOURCE_REMOVE;
}

static const char usage[] =
	"Usage: hostrdma-kald [OPTION]...\n"
	"The hostrdma host service: shares soft-RoCE's UDP port 4791 among\n"
	"every process on the host (one socket each, steered by destination\n"
	"QP), hands out QPN ranges and routes the IB CM's MADs.\n"
	"\n"
	"  -f, --foreground    stay in the foreground, log to stderr\n"
	"  -s, --socket PATH   control socket (default: " KAL_HOSTSVC_SYSTEM_PATH
	"\n"
	"                      for root, else $XDG_RUNTIME_DIR/"
	KAL_HOSTSVC_USER_SUBPATH ")\n"
	"  -q, --quiet-ms MS   a dead process's QPN range is reused after its\n"
	"                      sockets were silent this long (default 2000)\n"
	"  -h, --help          this text\n"
	"  -V, --version       the version\n"
	"\n"
	"Processes find the daemon at $" KAL_HOSTSVC_ENV " or the default\n"
	"path. See hostrdma-kald(8).\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "quiet-ms", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	g_autofree char *path = NULL, *kpath = NULL;
	bool foreground = false, activated = false;
	unsigned int kept;
	int keep_fd;
	unsigned int i;
	char *end;
	long v;
	int c;

	K.quiet_ms = 2000;
	while ((c = getopt_long(argc, argv, "fs:q:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 's':
			g_free(path);
			path = g_strdup(optarg);
			break;
		case 'q':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 0 || v > 600000) {
				g_printerr("hostrdma-kald: --quiet-ms: bad "
					   "value \"%s\" (0..600000)\n",
					   optarg);
				return 2;
			}
			K.quiet_ms = (unsigned int)v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("hostrdma-kald %s\n", PACKAGE_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		g_printerr("hostrdma-kald: unexpected argument \"%s\"\n",
			   argv[optind]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Our children are keepers: none to wait for. */
	signal(SIGCHLD, SIG_IGN);
	/* Every message to stderr (or the journal), none to stdout. */
	g_log_writer_default_set_use_stderr(TRUE);
	K.listen_fd = activated_fd();
	activated = K.listen_fd >= 0;
	if (!activated) {
		if (!path)
			path = kal_hostsvc_daemon_path();
		if (!path) {
			g_printerr("hostrdma-kald: no socket path: not root and "
				   "XDG_RUNTIME_DIR unset; use --socket\n");
			return 1;
		}
		K.listen_fd = listen_on(path);
		if (K.listen_fd < 0)
			return 1;
	}
	if (!foreground && !activated) {
		if (daemon(0, 0) < 0) {
			g_printerr("hostrdma-kald: daemon: %s\n",
				   g_strerror(errno));
			return 1;
		}
		openlog("hostrdma-kald", LOG_PID, LOG_DAEMON);
		g_log_set_default_handler(log_syslog, NULL);
	}
	K.buf = g_malloc(DGRAM_MAX);
	K.groups = g_ptr_array_new();
	K.clients = g_ptr_array_new();
	K.sids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
				       NULL);
	K.keep_fd = -1;
	kpath = keep_path(K.listen_fd);
	if (kpath) {
		adopt(kpath);
		keeper_start(kpath);
	}
	K.loop = g_main_loop_new(NULL, FALSE);
	g_unix_fd_add(K.listen_fd, G_IO_IN, on_accept, NULL);
	g_timeout_add(K.quiet_ms / 4 + 10, on_tick, NULL);
	g_unix_signal_add(SIGTERM, on_signal, NULL);
	g_unix_signal_add(SIGINT, on_signal, NULL);
	g_message("listening on %s (QPN ranges of %u, reused after %u ms "
		  "quiet)", activated ? "the socket systemd passed" : path,
		  1u << KAL_HOSTSVC_QPN_SHIFT, K.quiet_ms);
	g_main_loop_run(K.loop);

	g_message("stopping: %" G_GUINT64_FORMAT " MADs forwarded, %"
		  G_GUINT64_FORMAT " unrouted, %" G_GUINT64_FORMAT
		  " requests for unheld service IDs refused, %"
		  G_GUINT64_FORMAT " stray datagrams dropped", K.forwarded,
		  K.unrouted, K.refused, K.strays);
	/* The keeper keeps what the processes still use, for the next
	 * daemon: none of it is undone in its eyes (its records end
	 * here). */
	keep_fd = K.keep_fd;
	if (keep_fd >= 0)
		shutdown(keep_fd, SHUT_WR);
	K.keep_fd = -1;
	kept = K.clients->len;
	if (kept)
		g_message("%u processes carry on; their ranges wait for the "
			  "next daemon", kept);
	while (K.clients->len)
		client_drop(g_ptr_array_index(K.clients, 0), NULL);
	for (i = 0; i < K.groups->len; i++)
		group_free(g_ptr_array_index(K.groups, i));
	g_ptr_array_free(K.groups, TRUE);
	g_ptr_array_free(K.clients, TRUE);
	g_hash_table_destroy(K.sids);
	g_main_loop_unref(K.loop);
	g_free(K.buf);
	close(K.listen_fd);
	if (keep_fd >= 0) {
		if (!kept)
			keeper_wait_gone(keep_fd, 2000);
		close(keep_fd);
	}
	/* The socket stays while processes wait for our successor: they
	 * see it refuse and wait, where none would mean "no daemon". */
	if (path && !activated && !kept)
		unlink(path);
	return 0;
}
