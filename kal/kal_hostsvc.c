/* SPDX-License-Identifier: MIT */
/*
 * kal_hostsvc.c - the client side of the host service (hostrdma-kald):
 * finding the daemon, asking it for soft-RoCE's shared UDP port on an
 * address and for IB CM service IDs. One request, one reply, over a
 * SOCK_SEQPACKET UNIX socket; the reply to OP_UDP carries two sockets
 * (SCM_RIGHTS).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kal/kal.h"

struct kal_hostsvc {
	GMutex lock;	/* one request at a time */
	int fd;
};

char *kal_hostsvc_client_path(void)
{
	const char *env = g_getenv(KAL_HOSTSVC_ENV);
	const char *xdg;
	struct stat st;

	if (env)
		return *env ? g_strdup(env) : NULL;
	if (stat(KAL_HOSTSVC_SYSTEM_PATH, &st) == 0)
		return g_strdup(KAL_HOSTSVC_SYSTEM_PATH);
	xdg = g_getenv("XDG_RUNTIME_DIR");
	if (xdg && *xdg)
		return g_build_filename(xdg, KAL_HOSTSVC_USER_SUBPATH, NULL);
	return NULL;
}

char *kal_hostsvc_daemon_path(void)
{
	const char *xdg;

	if (geteuid() == 0)
		return g_strdup(KAL_HOSTSVC_SYSTEM_PATH);
	xdg = g_getenv("XDG_RUNTIME_DIR");
	if (xdg && *xdg)
		return g_build_filename(xdg, KAL_HOSTSVC_USER_SUBPATH, NULL);
	return NULL;
}

int kal_hostsvc_connect(const char *path, struct kal_hostsvc **out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	struct kal_hostsvc *hs;
	int fd, err;

	if (!path || strlen(path) >= sizeof(sun.sun_path)) {
		g_warning("host service: socket path \"%s\" too long or unset",
			  path ? path : "(null)");
		return -EINVAL;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		g_warning("host service: socket: %s", g_strerror(errno));
		return err;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		if (err != -ENOENT && err != -ECONNREFUSED)
			g_warning("host service: connect %s: %s", path,
				  g_strerror(errno));
		else
			g_debug("host service: none at %s (%s)", path,
				g_strerror(errno));
		close(fd);
		return err;
	}
	/* A daemon that stops answering must not hang the process. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	hs = g_new0(struct kal_hostsvc, 1);
	g_mutex_init(&hs->lock);
	hs->fd = fd;
	*out = hs;
	return 0;
}

void kal_hostsvc_close(struct kal_hostsvc *hs)
{
	if (!hs)
		return;
	close(hs->fd);
	g_mutex_clear(&hs->lock);
	g_free(hs);
}

/* Send @req, receive its reply and up to @nfds sockets into @fds (-1 for
 * those that did not come). Under hs->lock. */
static int transact(struct kal_hostsvc *hs, struct kal_hostsvc_msg *req,
		    struct kal_hostsvc_msg *rep, int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *c;
	ssize_t n;
	int i;

	for (i = 0; i < nfds; i++)
		fds[i] = -1;
	req->magic = KAL_HOSTSVC_MAGIC;
	req->version = KAL_HOSTSVC_VERSION;
	if (send(hs->fd, req, sizeof(*req), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(*req)) {
		g_warning("host service: sending a request: %s",
			  g_strerror(errno));
		return -EPIPE;
	}
	n = recvmsg(hs->fd, &mh, MSG_CMSG_CLOEXEC);
	/* A failed recvmsg leaves the control buffer as it was: garbage
	 * that must not be read as descriptors to close. */
	if (n <= 0)
		mh.msg_controllen = 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int got, *p;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		got = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		p = (int *)CMSG_DATA(c);
		for (i = 0; i < got; i++) {
			if (i < nfds)
				fds[i] = p[i];
			else
				close(p[i]);
		}
	}
	if (n != (ssize_t)sizeof(*rep) || rep->magic != KAL_HOSTSVC_MAGIC ||
	    rep->op != req->op) {
		if (n < 0)
			g_warning("host service: no reply: %s",
				  g_strerror(errno));
		else if (n == 0)
			g_warning("host service: the daemon closed the "
				  "connection");
		else
			g_warning("host service: a malformed reply (%zd "
				  "bytes)", n);
		for (i = 0; i < nfds; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
		}
		return -EPIPE;
	}
	return rep->status;
}

int kal_hostsvc_udp(struct kal_hostsvc *hs, const struct sockaddr *addr,
		    socklen_t addrlen, int *udp_fd, int *fwd_fd,
		    uint32_t *qpn_base, uint32_t *qpn_count)
{
	struct kal_hostsvc_msg req = { .op = KAL_HOSTSVC_OP_UDP }, rep;
	int fds[2], err;

	if (addrlen > sizeof(req.addr) ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	memcpy(&req.addr, addr, addrlen);
	g_mutex_lock(&hs->lock);
	err = transact(hs, &req, &rep, fds, 2);
	g_mutex_unlock(&hs->lock);
	if (err)
		goto fail;
	if (fds[0] < 0 || fds[1] < 0 || rep.qpn_count == 0) {
		g_warning("host service: a reply without its sockets");
		err = -EPIPE;
		goto fail;
	}
	*udp_fd = fds[0];
	*fwd_fd = fds[1];
	*qpn_base = rep.qpn_base;
	*qpn_count = rep.qpn_count;
	return 0;
fail:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return err;
}

int kal_hostsvc_listen(struct kal_hostsvc *hs, uint64_t sid, bool on)
{
	struct kal_hostsvc_msg req = {
		.op = on ? KAL_HOSTSVC_OP_LISTEN : KAL_HOSTSVC_OP_UNLISTEN,
		.id = sid,
	}, rep;
	int err;

	g_mutex_lock(&hs->lock);
	err = transact(hs, &req, &rep, NULL, 0);
	g_mutex_unlock(&hs->lock);
	return err;
}

int kal_hostsvc_resume(struct kal_hostsvc *hs, uint32_t qpn_base)
{
	struct kal_hostsvc_msg req = {
		.op = KAL_HOSTSVC_OP_RESUME,
		.qpn_base = qpn_base,
	}, rep;
	int err;

	g_mutex_lock(&hs->lock);
	err = transact(hs, &req, &rep, NULL, 0);
	g_mutex_unlock(&hs->lock);
	return err;
}

bool kal_fds_hung_up(const int *fds, unsigned int n, unsigned int settle_ms)
{
	gint64 end = g_get_monotonic_time() + (gint64)settle_ms * 1000;
	g_autofree struct pollfd *p = NULL;
	unsigned int i, hung;
	gint64 left;

	if (!n)
		return false;
	p = g_new0(struct pollfd, n);
	for (i = 0; i < n; i++)
		p[i].fd = fds[i];	/* events 0: POLLHUP is always reported */
	for (;;) {
		if (poll(p, n, 0) < 0)
			return false;
		for (i = 0, hung = 0; i < n; i++)
			hung += !!(p[i].revents & POLLHUP);
		if (hung == n)
			return true;
		left = (end - g_get_monotonic_time() + 999) / 1000;
		if (!hung || left <= 0)
			return false;
		/* Some are: sleep until another one is (or the time is up).
		 * The ones already hung up would wake poll at once, so they
		 * sit this one out. */
		for (i = 0; i < n; i++)
			if (p[i].revents & POLLHUP)
				p[i].fd = -p[i].fd - 1;
		(void)poll(p, n, (int)MIN(left, 100));
		for (i = 0; i < n; i++)
			p[i].fd = fds[i];
	}
}

bool kal_hostsvc_alive(struct kal_hostsvc *hs)
{
	/* The daemon sends only replies, under hs->lock: anything to read
	 * outside a request is its end closing. */
	struct pollfd p = { .fd = hs->fd, .events = POLLIN | POLLRDHUP };

	if (!g_mutex_trylock(&hs->lock))
		return true;	/* a request is under way */
	if (poll(&p, 1, 0) < 0)
		p.revents = 0;
	g_mutex_unlock(&hs->lock);
	return !(p.revents & (POLLIN | POLLHUP | POLLRDHUP | POLLERR));
}
