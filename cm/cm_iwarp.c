/* SPDX-License-Identifier: MIT */
/*
 * cm_iwarp.c - iWARP connection set-up: TCP by the connection manager,
 * MPA (RFC 5044, RFC 6581) by the provider.
 *
 * Listening: one TCP socket per port number serves the listeners of every
 * iWARP device on that port (dual-stack [::] when the host has IPv6). An
 * accepted connection belongs to the device on the interface that owns
 * its local address; it is handed to that device's provider at once
 * (iw_take_request), which reads the peer's MPA Request on its own
 * thread, so a slow or silent peer holds nothing but its own request,
 * whose time-out (cm->timeout_ms) ends it. When the process is out of
 * descriptors (or the host out of files or memory) the listening socket
 * is left alone for a while: its connections wait in the backlog.
 *
 * Connecting: a non-blocking TCP connect watched by the manager's thread
 * with the consumer's time-out; once connected the socket goes to the
 * provider (iw_connect), which sends the MPA Request and reports the
 * outcome through the provider's connection events.
 *
 * Socket conversion: the consumer's connected socket is duplicated and the
 * duplicate handed to the provider; the side whose (address, port) is the
 * lower starts MPA. The consumer's descriptor is never closed here, so a
 * failed conversion leaves the consumer its socket.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include "cm/cm_private.h"

#define IW_BACKLOG 128

/* How long a listening socket is not watched after accept ran out of
 * descriptors or memory: the connection it could not take stays queued,
 * so the socket stays readable and watching it would spin. */
#define IW_ACCEPT_BACKOFF_MS 250u

/* MPA allows 512 bytes of private data in Request and Reply (RFC 5044
 * §7.1); the provider may offer less. */
#define IW_MPA_PDATA_MAX 512u

/* One listening TCP socket, shared by the listeners on its port. The
 * fields below `port` are under cm->lock. */
struct iw_port {
	uint16_t port;
	int fd;
	GSource *src;		/* watches fd; NULL while backing off */
	GSource *backoff;	/* then: the timer that watches it again */
	bool starved;		/* accept is out of resources (logged once) */
	guint users;
	struct cm *cm;
};

struct iw_state {
	GHashTable *ports;	/* GUINT_TO_POINTER(port) -> struct iw_port * */
};

static struct iw_state *iw_of(struct cm *cm)
{
	return cm->iwarp;
}

void cm_iwarp_init(struct cm *cm);
void cm_iwarp_fini(struct cm *cm);

void cm_iwarp_init(struct cm *cm)
{
	struct iw_state *st = g_new0(struct iw_state, 1);

	st->ports = g_hash_table_new(g_direct_hash, g_direct_equal);
	cm->iwarp = st;
}

void cm_iwarp_fini(struct cm *cm)
{
	struct iw_state *st = iw_of(cm);

	g_warn_if_fail(g_hash_table_size(st->ports) == 0);
	g_hash_table_destroy(st->ports);
	g_free(st);
	cm->iwarp = NULL;
}

static socklen_t sockaddr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
					  sizeof(struct sockaddr_in6);
}

static uint16_t sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)ss)
				     ->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)ss)
				     ->sin6_port);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Listening                                                           */
/* ------------------------------------------------------------------ */

/* Hand one accepted connection to the device its local address is on. */
static void iw_take_one(struct iw_port *p, int fd)
{
	struct cm *cm = p->cm;
	struct sockaddr_storage local = { 0 }, remote = { 0 };
	socklen_t len = sizeof(local);
	struct ual_device *dev;
	struct cm_listen *l;
	struct cm_req *req;
	char lbuf[64], rbuf[64];
	int ifindex, err;

	if (getsockname(fd, (void *)&local, &len) < 0 ||
	    (len = sizeof(remote),
	     getpeername(fd, (void *)&remote, &len) < 0)) {
		g_info("cm: port %u: accepted socket vanished: %s", p->port,
		       g_strerror(errno));
		close(fd);
		return;
	}
	cm_sockaddr_unmap(&local);
	cm_sockaddr_unmap(&remote);
	cm_sockaddr_str((void *)&local, lbuf, sizeof(lbuf));
	cm_sockaddr_str((void *)&remote, rbuf, sizeof(rbuf));
	ifindex = cm_ifindex_of_local(cm, (void *)&local);
	dev = ifindex ? ual_device_by_ifindex(cm->u, ifindex,
					      RNICPI_TRANSPORT_IWARP) :
			NULL;
	if (!dev) {
		g_info("cm: connection from %s to %s: no iWARP device on the interface (ifindex %d) of that address; closed",
		       rbuf, lbuf, ifindex);
		close(fd);
		return;
	}
	g_mutex_lock(&cm->lock);
	l = cm_listen_find_locked(cm, dev, 1, p->port);
	g_mutex_unlock(&cm->lock);
	if (l && !cm_listen_takes(l, &remote)) {
		g_info("%s: connection from %s to %s: the listener on port %u takes port %u only; closed",
		       ual_device_name(dev), rbuf, lbuf, p->port,
		       l->remote_port);
		cm_listen_unref(l);
		l = NULL;
		close(fd);
		ual_device_put(dev);
		return;
	}
	if (!l) {
		g_info("%s: connection from %s to %s: nobody listens on port %u of this device; closed",
		       ual_device_name(dev), rbuf, lbuf, p->port);
		close(fd);
		ual_device_put(dev);
		return;
	}
	req = cm_req_new(cm, l, dev, &local, &remote);
	cm_listen_unref(l);
	ual_device_put(dev);
	/* req->dev holds the device from here. */
	err = cm_req_take(req, fd);
	if (err) {
		cm_info(req, "iw_take_request: %s", g_strerror(-err));
		close(fd);
		cm_req_abandon(req, err);
	}
	cm_req_unref(req);
}

static gboolean iw_port_readable(gint fd, GIOCondition cond, gpointer data);

/* Watch p->fd. Called with cm->lock held. */
static void iw_port_watch_locked(struct iw_port *p)
{
	p->src = g_unix_fd_source_new(p->fd, G_IO_IN);
	g_source_set_callback(p->src, G_SOURCE_FUNC(iw_port_readable), p,
			      NULL);
	g_source_attach(p->src, p->cm->ctx);
}

/* The back-off is over (the manager's thread). */
static gboolean iw_port_rewatch(gpointer data)
{
	struct iw_port *p = data;
	struct cm *cm = p->cm;

	g_mutex_lock(&cm->lock);
	/* iw_unlisten drops the timer; p lives until the manager's thread
	 * frees it after this dispatch. */
	if (p->fd >= 0 && p->backoff &&
	    !g_source_is_destroyed(g_main_current_source())) {
		g_source_unref(p->backoff);
		p->backoff = NULL;
		iw_port_watch_locked(p);
	}
	g_mutex_unlock(&cm->lock);
	return G_SOURCE_REMOVE;
}

/* accept failed for want of @err (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
 * connection stays queued, so stop watching the socket for a while
 * instead of failing again at once, forever, at a core's full speed. One
 * warning per shortage, not one per attempt. Called with cm->lock held,
 * from p->src's dispatch. */
static void iw_port_back_off_locked(struct iw_port *p, int err)
{
	if (!p->starved) {
		struct rlimit rl = { 0 };

		getrlimit(RLIMIT_NOFILE, &rl);
		if (err == EMFILE)
			g_warning("cm: port %u: accept: %s: all %llu descriptors of the process's RLIMIT_NOFILE are open; connections wait in the listen backlog, tried again every %u ms",
				  p->port, g_strerror(err),
				  (unsigned long long)rl.rlim_cur,
				  IW_ACCEPT_BACKOFF_MS);
		else
			g_warning("cm: port %u: accept: %s%s; connections wait in the listen backlog, tried again every %u ms",
				  p->port, g_strerror(err),
				  err == ENFILE ? " (the host's open files are at fs.file-max)" :
						  "",
				  IW_ACCEPT_BACKOFF_MS);
		p->starved = true;
	}
	g_source_destroy(p->src);
	g_source_unref(p->src);
	p->src = NULL;
	p->backoff = cm_timeout_add(p->cm, IW_ACCEPT_BACKOFF_MS,
				    iw_port_rewatch, p, NULL);
}

static gboolean iw_port_readable(gint fd, GIOCondition cond, gpointer data)
{
	struct iw_port *p = data;
	struct cm *cm = p->cm;

	for (;;) {
		int c;

		/* Under the lock: iw_unlisten may close the socket from
		 * another thread; p itself lives until the manager's thread
		 * frees it after this dispatch. */
		g_mutex_lock(&cm->lock);
		if (p->fd < 0) {
			g_mutex_unlock(&cm->lock);
			return G_SOURCE_REMOVE;
		}
		c = accept4(p->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0)
			c = -errno;
		if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS ||
		    c == -ENOMEM) {
			iw_port_back_off_locked(p, -c);
			g_mutex_unlock(&cm->lock);
			return G_SOURCE_REMOVE;
		}
		if (c >= 0 && p->starved) {
			p->starved = false;
			g_info("cm: port %u: accepting again", p->port);
		}
		g_mutex_unlock(&cm->lock);
		if (c < 0) {
			if (c == -EINTR || c == -ECONNABORTED)
				continue;
			if (c != -EAGAIN)
				g_info("cm: port %u: accept: %s", p->port,
				       g_strerror(-c));
			break;
		}
		iw_take_one(p, c);
	}
	return G_SOURCE_CONTINUE;
}

static gboolean iw_port_free_cb(gpointer data)
{
	g_free(data);
	return G_SOURCE_REMOVE;
}

static int iw_socket_listen(uint16_t port, int *out_fd, uint16_t *bound)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1, zero = 0;
	int fd, err;

	/* Dual stack first: one socket for IPv4 and IPv6 peers. */
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_in6 *in6 = (void *)&ss;

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		in6->sin6_port = htons(port);
		len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (void *)&ss;

		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    0);
		if (fd < 0)
			return -errno;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		in->sin_port = htons(port);
		len = sizeof(*in);
	}
	/* Reuse a port whose earlier connections linger in TIME_WAIT; a
	 * second listener on it still fails (no SO_REUSEPORT). */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (void *)&ss, len) < 0 || listen(fd, IW_BACKLOG) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	len = sizeof(ss);
	getsockname(fd, (void *)&ss, &len);
	*bound = sockaddr_port(&ss);
	*out_fd = fd;
	return 0;
}

/* Called with cm->lock held. */
static int iw_listen(struct cm *cm, struct cm_listen *l)
{
	struct iw_state *st = iw_of(cm);
	struct iw_port *p = NULL;
	uint16_t bound = 0;
	int fd = -1, err;

	if (l->port)
		p = g_hash_table_lookup(st->ports, GUINT_TO_POINTER(l->port));
	if (!p) {
		err = iw_socket_listen(l->port, &fd, &bound);
		if (err) {
			g_info("%s: listen on TCP port %u: %s",
			       ual_device_name(l->dev), l->port,
			       g_strerror(-err));
			return err;
		}
		p = g_new0(struct iw_port, 1);
		p->port = bound;
		p->fd = fd;
		p->cm = cm;
		iw_port_watch_locked(p);
		g_hash_table_insert(st->ports, GUINT_TO_POINTER(p->port), p);
	}
	p->users++;
	l->port = p->port;
	l->tp_data = p;
	return 0;
}

/* Called with cm->lock held. */
static void iw_unlisten(struct cm *cm, struct cm_listen *l)
{
	struct iw_state *st = iw_of(cm);
	struct iw_port *p = l->tp_data;

	l->tp_data = NULL;
	if (!p || --p->users)
		return;
	g_hash_table_remove(st->ports, GUINT_TO_POINTER(p->port));
	/* Close now, so the port is free at once; the source's dispatch may
	 * be running on the manager's thread, which frees p after it. */
	close(p->fd);
	p->fd = -1;
	cm_source_drop(&p->src);
	cm_source_drop(&p->backoff);
	g_source_unref(cm_timeout_add(cm, 0, iw_port_free_cb, p, NULL));
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */
/* ------------------------------------------------------------------ */

static void iw_hand_to_provider(struct cm *cm, struct cm_id *id, int fd,
				uint32_t left_ms)
{
	struct rnicpi_conn_param rp = {
		.private_data = id->param.private_data_len ? id->pdata : NULL,
		.private_data_len = id->param.private_data_len,
		.ird = id->param.ird,
		.ord = id->param.ord,
		.flags = id->param.no_ird_ord ? RNICPI_CONN_MPA_REV1 : 0,
		.timeout_ms = left_ms ? left_ms : 1,
	};
	int err;

	cm_id_set_state(id, CM_ID_PROVIDER);
	err = ual_qp_iw_connect(id->qp, fd, &rp);
	if (err) {
		cm_info(id, "iw_connect: %s", g_strerror(-err));
		close(fd);
		cm_id_report_failure(id, err);
	}
}

static gboolean iw_connect_ready(gint fd, GIOCondition cond, gpointer data)
{
	struct cm_id *id = data;
	struct cm *cm = id->cm;
	socklen_t len = sizeof(int);
	gint64 left;
	int soerr = 0;
	int sock;

	g_mutex_lock(&cm->lock);
	if (id->state != CM_ID_SOCKET || id->sockfd != fd) {
		g_mutex_unlock(&cm->lock);
		return G_SOURCE_REMOVE;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (!soerr && !(cond & G_IO_OUT))
		soerr = ECONNRESET;
	sock = id->sockfd;
	id->sockfd = -1;
	g_source_unref(id->io_source);
	id->io_source = NULL;
	left = id->timer ? g_source_get_ready_time(id->timer) -
				   g_source_get_time(id->timer) :
			   0;
	if (id->timer) {
		g_source_destroy(id->timer);
		g_source_unref(id->timer);
		id->timer = NULL;
	}
	if (!soerr) {
		struct sockaddr_storage local = { 0 };

		len = sizeof(local);
		if (getsockname(sock, (void *)&local, &len) == 0) {
			cm_sockaddr_unmap(&local);
			id->local_addr = local;
		}
	}
	g_mutex_unlock(&cm->lock);
	if (soerr) {
		close(sock);
		cm_id_report_failure(id, -soerr);
		return G_SOURCE_REMOVE;
	}
	cm_debug(id, "TCP connected, starting MPA");
	iw_hand_to_provider(cm, id,
			    sock, left > 0 ? (uint32_t)(left / 1000) : 1);
	return G_SOURCE_REMOVE;
}

static gboolean iw_connect_timeout(gpointer data)
{
	struct cm_id *id = data;
	struct cm *cm = id->cm;
	int sock = -1;

	g_mutex_lock(&cm->lock);
	if (id->state == CM_ID_SOCKET) {
		sock = id->sockfd;
		id->sockfd = -1;
		if (id->io_source) {
			g_source_destroy(id->io_source);
			g_source_unref(id->io_source);
			id->io_source = NULL;
		}
		if (id->timer) {
			g_source_unref(id->timer);
			id->timer = NULL;
		}
	}
	g_mutex_unlock(&cm->lock);
	if (sock >= 0) {
		close(sock);
		cm_info(id, "TCP connect not answered in %u ms",
			id->param.timeout_ms);
		cm_id_report_failure(id, -ETIMEDOUT);
	}
	return G_SOURCE_REMOVE;
}

static int iw_connect(struct cm *cm, struct cm_id *id)
{
	struct sockaddr_storage dst = id->remote_addr;
	int fd, err;

	cm_sockaddr_set_port(&dst, id->port);
	fd = socket(dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	if (id->local_addr.ss_family != AF_UNSPEC) {
		int one = 1;

		if (id->local_addr.ss_family != dst.ss_family) {
			close(fd);
			return -EAFNOSUPPORT;
		}
		/* The source port is left to connect(), which may take one
		 * whose last connection is in TIME_WAIT to a different peer
		 * (and, with tcp_tw_reuse, to this one). bind() choosing it
		 * would skip every port in TIME_WAIT: a client that connects
		 * and disconnects some 28 000 times a minute (the ephemeral
		 * range) ran out of ports ("EADDRINUSE"). */
		if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
			       sizeof(one)) < 0)
			cm_debug(id, "IP_BIND_ADDRESS_NO_PORT: %s",
				 g_strerror(errno));
		if (bind(fd, (void *)&id->local_addr,
			 sockaddr_len(&id->local_addr)) < 0) {
			err = -errno;
			cm_info(id, "bind to the local address: %s",
				g_strerror(-err));
			close(fd);
			return err;
		}
	}
	if (connect(fd, (void *)&dst, sockaddr_len(&dst)) < 0 &&
	    errno != EINPROGRESS) {
		err = -errno;
		close(fd);
		return err;
	}
	g_mutex_lock(&cm->lock);
	id->state = CM_ID_SOCKET;
	id->sockfd = fd;
	id->io_source = g_unix_fd_source_new(fd, G_IO_OUT | G_IO_ERR |
						     G_IO_HUP);
	g_source_set_callback(id->io_source, G_SOURCE_FUNC(iw_connect_ready),
			      cm_id_ref(id), (GDestroyNotify)cm_id_unref);
	g_source_attach(id->io_source, cm->ctx);
	id->timer = cm_timeout_add(cm, id->param.timeout_ms,
				   iw_connect_timeout, cm_id_ref(id),
				   (GDestroyNotify)cm_id_unref);
	g_mutex_unlock(&cm->lock);
	return 0;
}

static void iw_cancel(struct cm *cm, struct cm_id *id)
{
	int sock;

	g_mutex_lock(&cm->lock);
	sock = id->sockfd;
	id->sockfd = -1;
	if (id->io_source) {
		g_source_destroy(id->io_source);
		g_source_unref(id->io_source);
		id->io_source = NULL;
	}
	if (id->timer) {
		g_source_destroy(id->timer);
		g_source_unref(id->timer);
		id->timer = NULL;
	}
	g_mutex_unlock(&cm->lock);
	if (sock >= 0)
		close(sock);
}

/* ------------------------------------------------------------------ */
/* Socket conversion                                                   */
/* ------------------------------------------------------------------ */

/* Is (@a) lower than (@b)? Compares family, address bytes, then port. */
static int sockaddr_cmp(const struct sockaddr_storage *a,
			const struct sockaddr_storage *b)
{
	const void *pa, *pb;
	size_t n;
	int c;

	if (a->ss_family != b->ss_family)
		return a->ss_family < b->ss_family ? -1 : 1;
	if (a->ss_family == AF_INET) {
		pa = &((const struct sockaddr_in *)(const void *)a)->sin_addr;
		pb = &((const struct sockaddr_in *)(const void *)b)->sin_addr;
		n = 4;
	} else {
		pa = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
		pb = &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr;
		n = 16;
	}
	c = memcmp(pa, pb, n);
	if (c)
		return c;
	if (sockaddr_port(a) != sockaddr_port(b))
		return sockaddr_port(a) < sockaddr_port(b) ? -1 : 1;
	return 0;
}

static int iw_socket_convert(struct cm *cm, struct cm_id *id, int sockfd)
{
	struct sockaddr_storage local = { 0 }, remote = { 0 };
	socklen_t len;
	int type = 0, proto = 0, dfd, err;
	char lbuf[64], rbuf[64];

	len = sizeof(type);
	if (getsockopt(sockfd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) {
		err = -errno;
		cm_info(id, "socket conversion: descriptor %d: %s", sockfd,
			g_strerror(-err));
		return err;
	}
	len = sizeof(proto);
	getsockopt(sockfd, SOL_SOCKET, SO_PROTOCOL, &proto, &len);
	if (type != SOCK_STREAM || proto != IPPROTO_TCP) {
		cm_info(id, "socket conversion: descriptor %d is not a TCP socket (type %d, protocol %d)",
			sockfd, type, proto);
		return -EPROTONOSUPPORT;
	}
	len = sizeof(local);
	if (getsockname(sockfd, (void *)&local, &len) < 0)
		return -errno;
	len = sizeof(remote);
	if (getpeername(sockfd, (void *)&remote, &len) < 0) {
		err = -errno;
		cm_info(id, "socket conversion: descriptor %d: %s", sockfd,
			g_strerror(-err));
		return err;
	}
	cm_sockaddr_unmap(&local);
	cm_sockaddr_unmap(&remote);
	id->local_addr = local;
	id->remote_addr = remote;
	id->port = sockaddr_port(&remote);
	if (id->param.no_mpa) {
		struct rnicpi_device_attr a;
		struct rnicpi_conn_param rp = {
			.ird = id->param.ird,
			.ord = id->param.ord,
			.timeout_ms = id->param.timeout_ms,
			.flags = RNICPI_CONN_NO_MPA,
		};

		if (ual_device_query(id->dev, &a) ||
		    !(a.caps & RNICPI_DEV_CAP_IWARP_NO_MPA)) {
			cm_info(id, "socket conversion without MPA: %s cannot enter RDMA mode without its own MPA exchange",
				ual_device_name(id->dev));
			return -EOPNOTSUPP;
		}
		if (id->param.private_data_len)
			return -EMSGSIZE;
		dfd = fcntl(sockfd, F_DUPFD_CLOEXEC, 3);
		if (dfd < 0)
			return -errno;
		cm_debug(id, "converting %s <-> %s without MPA",
			 cm_sockaddr_str((void *)&local, lbuf, sizeof(lbuf)),
			 cm_sockaddr_str((void *)&remote, rbuf,
					 sizeof(rbuf)));
		id->active = sockaddr_cmp(&local, &remote) < 0;
		cm_id_set_state(id, CM_ID_PROVIDER);
		err = ual_qp_iw_connect(id->qp, dfd, &rp);
		if (err) {
			cm_info(id, "iw_connect without MPA: %s",
				g_strerror(-err));
			close(dfd);
			cm_id_set_state(id, CM_ID_CLOSED);
		}
		return err;
	}
	/* Both ends see the same two (address, port) pairs, mirrored, so
	 * they agree on who is lower: that one sends the MPA Request. */
	id->active = sockaddr_cmp(&local, &remote) < 0;
	dfd = fcntl(sockfd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0)
		return -errno;
	cm_debug(id, "converting %s <-> %s as MPA %s",
		 cm_sockaddr_str((void *)&local, lbuf, sizeof(lbuf)),
		 cm_sockaddr_str((void *)&remote, rbuf, sizeof(rbuf)),
		 id->active ? "initiator" : "responder");

	if (id->active) {
		struct rnicpi_conn_param rp = {
			.private_data = id->param.private_data_len ? id->pdata :
								     NULL,
			.private_data_len = id->param.private_data_len,
			.ird = id->param.ird,
			.ord = id->param.ord,
			.timeout_ms = id->param.timeout_ms,
		};

		cm_id_set_state(id, CM_ID_PROVIDER);
		err = ual_qp_iw_connect(id->qp, dfd, &rp);
		if (err) {
			cm_info(id, "iw_connect: %s", g_strerror(-err));
			close(dfd);
			cm_id_set_state(id, CM_ID_CLOSED);
		}
		return err;
	} else {
		struct cm_req *req;

		cm_id_set_state(id, CM_ID_PROVIDER);
		req = cm_req_new(cm, NULL, id->dev, &local, &remote);
		req->convert = cm_id_ref(id);
		/* The conversion's time-out, not the provider's, bounds the
		 * wait for the peer's MPA Request: when it ends, the
		 * provider's copy of the socket is closed before the
		 * consumer has it back, so nothing more is read from it. */
		cm_req_set_timeout(req, id->param.timeout_ms);
		err = cm_req_take(req, dfd);
		if (err) {
			cm_info(id, "iw_take_request: %s", g_strerror(-err));
			close(dfd);
			/* Not a failure to report: the caller returns it. */
			g_mutex_lock(&cm->lock);
			id->convert_done = true;
			id->convert_err = err;
			g_mutex_unlock(&cm->lock);
			cm_req_abandon(req, err);
			cm_req_unref(req);
			cm_id_set_state(id, CM_ID_CLOSED);
			return err;
		}
		cm_req_unref(req);
		return 0;
	}
}

/* ------------------------------------------------------------------ */

static uint32_t iw_max_private_data(struct ual_device *d,
				    enum cm_pdata_op op)
{
	struct rnicpi_device_attr attr;

	/* An iWARP close is TCP's FIN: no private data (RFC 5044). */
	if (op == CM_PDATA_DISCONNECT)
		return 0;
	if (ual_device_query(d, &attr))
		return 0;
	return MIN(attr.max_private_data, IW_MPA_PDATA_MAX);
}

const struct cm_transport cm_iwarp_transport = {
	.name = "iwarp",
	.listen = iw_listen,
	.unlisten = iw_unlisten,
	.connect = iw_connect,
	.cancel = iw_cancel,
	.socket_convert = iw_socket_convert,
	.max_private_data = iw_max_private_data,
};
