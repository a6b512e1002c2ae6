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

#include "ual/ual_private.h"

G_STATIC_ASSERT(sizeof(struct kal_hostsvc_fwd) ==
		sizeof(struct rnicpi_host_fwd));
G_STATIC_ASSERT(KAL_HOSTSVC_MAGIC == RNICPI_HOST_FWD_MAGIC);

static GMutex hs_lock;
static struct kal_hostsvc *hs;
static bool hs_tried;		/* looked once and found none */
static uint32_t hs_slot;	/* our QPN range's index, 0 before */

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
	if (kal_hostsvc_connect(path, &hs) == 0)
		g_debug("host service: hostrdma-kald at %s", path);
	return hs;
}

int ual_host_udp_socket(struct rnicpi_device *dev, const struct sockaddr *addr,
			socklen_t addrlen, int *udp_fd, int *fwd_fd,
			uint32_t *qpn_base, uint32_t *qpn_count)
{
	struct kal_hostsvc *h;
	int err;

	(void)dev;
	g_mutex_lock(&hs_lock);
	h = hostsvc_get();
	if (!h) {
		g_mutex_unlock(&hs_lock);
		return -ENOENT;
	}
	err = kal_hostsvc_udp(h, addr, addrlen, udp_fd, fwd_fd, qpn_base,
			      qpn_count);
	if (!err)
		hs_slot = *qpn_base >> KAL_HOSTSVC_QPN_SHIFT;
	g_mutex_unlock(&hs_lock);
	if (err == -ENOENT)
		err = -EADDRNOTAVAIL;	/* -ENOENT means "no daemon" */
	return err;
}

uint32_t ual_hostsvc_id_prefix(void)
{
	uint32_t slot;

	g_mutex_lock(&hs_lock);
	slot = hs ? hs_slot : 0;
	g_mutex_unlock(&hs_lock);
	return slot << KAL_HOSTSVC_ID_SHIFT;
}

int ual_hostsvc_listen(uint64_t sid, bool on)
{
	int err = 0;

	g_mutex_lock(&hs_lock);
	/* Only a process that shares the port through the daemon has its
	 * QP1 MADs routed by service ID. */
	if (hs && hs_slot)
		err = kal_hostsvc_listen(hs, sid, on);
	g_mutex_unlock(&hs_lock);
	return err;
}
