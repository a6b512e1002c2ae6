/* SPDX-License-Identifier: MIT */
/*
 * ual_hostsvc.c - the host service seen from a process: one connection to
 * hostrdma-kald per process, opened when a provider first asks for a
 * shared port (rnicpi_core_ops.host_udp_socket) and kept until the
 * process ends (the daemon frees the process's QPN range, sockets and
 * service IDs when it closes). No daemon: -ENOENT, the provider runs
 * embedded. The CM asks here for its service IDs and its ID prefix.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ual/ual_private.h"

G_STATIC_ASSERT(sizeof(struct kal_hostsvc_fwd) ==
		sizeof(struct rnicpi_host_fwd));
G_STATIC_ASSERT(KAL_HOSTSVC_MAGIC == RNICPI_HOST_FWD_MAGIC);

static GMutex hs_lock;
static struct kal_hostsvc *hs;
static bool hs_tried;		/* looked once and found none */
static uint32_t hs_slot;	/* our QPN range's index, 0 before */

/*
 * Our copy of the forwarding socket the daemon gave us for each address
 * (the latest: asking again replaces it). Their other ends are the
 * daemon's and, while it restarts, its keeper's: when every one hangs
 * up, both are gone and no daemon can take this process over again
 * (hostrdma-kald(8), RESTART). Under hs_lock.
 */
struct hs_fwd {
	struct sockaddr_storage addr;
	int fd;
};

static GArray *hs_fwds;
static bool hs_lost;		/* found so, and said */

/* How long a process waits for a daemon whose socket is there but does
 * not answer (restarting): HOSTRDMA_KALD_WAIT_MS, 10 s by default. */
static unsigned int hostsvc_wait_ms(void)
{
	const char *v = g_getenv("HOSTRDMA_KALD_WAIT_MS");
	char *end;
	guint64 ms;

	if (!v || !*v)
		return 10000;
	ms = g_ascii_strtoull(v, &end, 10);
	return *end || ms > 600000 ? 10000 : (unsigned int)ms;
}

/* Connects to the daemon at @path; a socket that is there but refuses is
 * a daemon restarting: waited for, up to hostsvc_wait_ms(), saying so.
 * The new daemon removes the stale socket before it binds its own: no
 * socket at all (ENOENT) after a refusal is that moment of the restart,
 * waited for too (a listen made then failed with ENOENT). */
static int hostsvc_connect_wait(const char *path, struct kal_hostsvc **out)
{
	unsigned int wait = hostsvc_wait_ms();
	gint64 end = g_get_monotonic_time() + (gint64)wait * 1000;
	bool said = false;
	int err;

	while (((err = kal_hostsvc_connect(path, out)) == -ECONNREFUSED ||
		(err == -ENOENT && said)) &&
	       g_get_monotonic_time() < end) {
		if (!said)
			g_warning("host service: hostrdma-kald does not "
				  "answer at %s (restarting?); waiting up "
				  "to %u ms for it", path, wait);
		said = true;
		g_usleep(100000);
	}
	if (said && !err)
		g_message("host service: hostrdma-kald answers again");
	else if (said)
		g_warning("host service: hostrdma-kald at %s still "
			  "unreachable (%s); start it (hostrdma-kald(8))",
			  path, g_strerror(-err));
	return err;
}

/* Keeps a copy of @fd, the forwarding socket for @addr (under hs_lock). */
static void hostsvc_keep_fwd(const struct sockaddr *addr, socklen_t len,
			     int fd)
{
	struct hs_fwd f = { .fd = fcntl(fd, F_DUPFD_CLOEXEC, 3) };

	if (f.fd < 0)
		return;
	memcpy(&f.addr, addr, MIN(len, sizeof(f.addr)));
	if (!hs_fwds)
		hs_fwds = g_array_new(FALSE, FALSE, sizeof(struct hs_fwd));
	for (guint i = 0; i < hs_fwds->len; i++) {
		struct hs_fwd *o = &g_array_index(hs_fwds, struct hs_fwd, i);

		if (!memcmp(&o->addr, &f.addr, sizeof(f.addr))) {
			close(o->fd);
			o->fd = f.fd;
			return;
		}
	}
	g_array_append_val(hs_fwds, f);
}

/* Whether the daemon and its keeper are both gone (under hs_lock): then
 * this process's share of the port is lost for good, and saying so at
 * once beats waiting for a daemon that cannot take it over. Seen as all
 * the forwarding sockets hung up; some of them only is the keeper
 * exiting, given a moment (HS_SETTLE_MS) to finish. */
#define HS_SETTLE_MS 2000

static bool hostsvc_lost(void)
{
	g_autofree int *fds = NULL;

	if (hs_lost)
		return true;
	if (!hs_slot || !hs_fwds || !hs_fwds->len)
		return false;
	fds = g_new(int, hs_fwds->len);
	for (guint i = 0; i < hs_fwds->len; i++)
		fds[i] = g_array_index(hs_fwds, struct hs_fwd, i).fd;
	if (!kal_fds_hung_up(fds, hs_fwds->len, HS_SETTLE_MS))
		return false;
	hs_lost = true;
	g_warning("host service: hostrdma-kald and its keeper are both gone: "
		  "this process's share of soft-RoCE's port is lost (its QPN "
		  "range %u may be misrouted), and it can make no new "
		  "soft-RoCE listener or connection; restart it "
		  "(hostrdma-kald(8), RESTART)", hs_slot);
	if (hs) {
		kal_hostsvc_close(hs);
		hs = NULL;
	}
	return true;
}

/* Under hs_lock. */
static struct kal_hostsvc *hostsvc_get(void)
{
	g_autofree char *path = NULL;

	if (hs || hs_tried)
		return hs;
	hs_tried = true;
	path = kal_hostsvc_client_path();
	if (!path) {
		g_debug("host service: none configured, soft-RoCE runs "
			"embedded");
		return NULL;
	}
	if (hostsvc_connect_wait(path, &hs) == 0)
		g_debug("host service: hostrdma-kald at %s", path);
	return hs;
}

/*
 * The daemon went away under us (under hs_lock): a restart. Our sockets
 * and QPN range live on (its keeper holds them for the next daemon, see
 * hostrdma-kald(8)); connect again, waiting for it when @wait, and take
 * the range back. 0, or a negative errno with hs unchanged or NULL.
 */
static int hostsvc_reconnect(bool wait)
{
	g_autofree char *path = kal_hostsvc_client_path();
	struct kal_hostsvc *h = NULL;
	int err;

	if (!path)
		return -ENOENT;
	if (hs) {
		g_warning("host service: hostrdma-kald went away "
			  "(restarting?); soft-RoCE traffic carries on, new "
			  "connections wait for it");
		kal_hostsvc_close(hs);
		hs = NULL;
	}
	err = wait ? hostsvc_connect_wait(path, &h)
		   : kal_hostsvc_connect(path, &h);
	if (err)
		return err;
	if (hs_slot) {
		err = kal_hostsvc_resume(h, hs_slot << KAL_HOSTSVC_QPN_SHIFT);
		if (err) {
			g_warning("host service: the new hostrdma-kald does "
				  "not know this process's QPN range %u (%s): "
				  "its soft-RoCE traffic may be lost; restart "
				  "the process", hs_slot, g_strerror(-err));
			kal_hostsvc_close(h);
			return -ESTALE;
		}
		g_message("host service: hostrdma-kald is back; this "
			  "process's QPN range %u and service IDs carried "
			  "over", hs_slot);
	}
	hs = h;
	return 0;
}

int ual_host_udp_socket(struct rnicpi_device *dev, const struct sockaddr *addr,
			socklen_t addrlen, int *udp_fd, int *fwd_fd,
			uint32_t *qpn_base, uint32_t *qpn_count)
{
	struct kal_hostsvc *h;
	int err;

	(void)dev;
	g_mutex_lock(&hs_lock);
	if (hostsvc_lost()) {
		g_mutex_unlock(&hs_lock);
		return -EIO;
	}
	h = hostsvc_get();
	if (!h) {
		g_mutex_unlock(&hs_lock);
		return -ENOENT;
	}
	err = kal_hostsvc_udp(h, addr, addrlen, udp_fd, fwd_fd, qpn_base,
			      qpn_count);
	if (err == -EPIPE && hostsvc_reconnect(true) == 0)
		err = kal_hostsvc_udp(hs, addr, addrlen, udp_fd, fwd_fd,
				      qpn_base, qpn_count);
	if (!err) {
		hs_slot = *qpn_base >> KAL_HOSTSVC_QPN_SHIFT;
		hostsvc_keep_fwd(addr, addrlen, *fwd_fd);
	}
	g_mutex_unlock(&hs_lock);
	if (err == -ENOENT)
		err = -EADDRNOTAVAIL;	/* -ENOENT means "no daemon" */
	return err;
}

uint32_t ual_hostsvc_id_prefix(void)
{
	uint32_t slot;

	g_mutex_lock(&hs_lock);
	/* A new connection while the daemon is away: its CM messages wait
	 * in the shared QP1 socket until the next daemon routes them. */
	if (hs_slot && (!hs || !kal_hostsvc_alive(hs)) && !hostsvc_lost())
		(void)hostsvc_reconnect(false);
	slot = hs_slot;
	g_mutex_unlock(&hs_lock);
	return slot << KAL_HOSTSVC_ID_SHIFT;
}

int ual_hostsvc_check(void)
{
	int err = 0;

	g_mutex_lock(&hs_lock);
	if (hs_slot && (!hs || !kal_hostsvc_alive(hs)) && hostsvc_lost())
		err = -EIO;
	g_mutex_unlock(&hs_lock);
	return err;
}

int ual_hostsvc_listen(uint64_t sid, bool on)
{
	int err = 0;

	g_mutex_lock(&hs_lock);
	if (hostsvc_lost()) {
		g_mutex_unlock(&hs_lock);
		return on ? -EIO : 0;
	}
	/* Only a process that shares the port through the daemon has its
	 * QP1 MADs routed by service ID. */
	if (hs_slot && !hs)
		err = hostsvc_reconnect(true);
	if (hs_slot && hs) {
		err = kal_hostsvc_listen(hs, sid, on);
		if (err == -EPIPE && hostsvc_reconnect(true) == 0)
			err = kal_hostsvc_listen(hs, sid, on);
	}
	g_mutex_unlock(&hs_lock);
	return err;
}
