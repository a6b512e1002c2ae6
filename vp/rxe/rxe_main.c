/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE provider: registration, devices on network interfaces, the
 * GID table, device and port queries, interface changes.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vp/rxe/rxe.h"

const char *const rxe_counter_names[RXE_NUM_COUNTERS] = {
#define X(id, name) [RXE_CNT_##id] = name,
	RXE_COUNTERS(X)
#undef X
};

uint64_t rxe_dev_counter(struct rnicpi_device *d, enum rxe_counter c)
{
	if (c >= RXE_NUM_COUNTERS)
		return 0;
	return atomic_load(&to_rxe_dev(d)->counters[c]);
}

/* RoCEv2 adds IP + UDP + BTH + the largest extension headers + ICRC to
 * the IB payload; what is left of the interface MTU bounds the path MTU
 * (as the kernel's rxe and ib_core do). */
static enum rnicpi_mtu rxe_mtu_from_if(uint32_t if_mtu)
{
	const uint32_t overhead = 40 + 8 + IB_BTH_BYTES + 4 /* XRC ETH */ +
				  IB_ATMETH_BYTES + IB_ICRC_BYTES;
	uint32_t room = if_mtu > overhead ? if_mtu - overhead : 0;

	if (room >= 4096)
		return RNICPI_MTU_4096;
	if (room >= 2048)
		return RNICPI_MTU_2048;
	if (room >= 1024)
		return RNICPI_MTU_1024;
	if (room >= 512)
		return RNICPI_MTU_512;
	return RNICPI_MTU_256;
}

/* ------------------------------------------------------------------ */
/* GID table                                                          */
/* ------------------------------------------------------------------ */

/* RoCEv2 GID of an address: IPv4-mapped IPv6 or the IPv6 address. */
static bool gid_from_addr(const struct sockaddr_storage *ss,
			  union rnicpi_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(gid->raw + 12, &sin->sin_addr, 4);
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		memcpy(gid->raw, &sin6->sin6_addr, 16);
		return true;
	}
	return false;
}

static int gid_find(struct rxe_dev *dev, const union rnicpi_gid *gid)
{
	int i;

	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].valid &&
		    memcmp(dev->gids[i].gid.raw, gid->raw, 16) == 0)
			return i;
	return -1;
}

/* Under dev->lock. Adds the address unless present; true if added. */
static bool gid_add(struct rxe_dev *dev, const struct sockaddr_storage *ss,
		    int ifindex)
{
	union rnicpi_gid gid;
	struct rxe_gid *g;
	int i, err;

	if (!gid_from_addr(ss, &gid) || gid_find(dev, &gid) >= 0)
		return false;
	for (i = 0; i < RXE_MAX_GID && dev->gids[i].valid; i++)
		;
	if (i == RXE_MAX_GID) {
		rxe_dev_warn(dev, "GID table full, address not used");
		return false;
	}
	g = &dev->gids[i];
	/* Not a memset: the progress thread may still hold an epoll event
	 * of the slot's last socket and call g->src (rx_dispatch finds the
	 * slot's socket again, or none). */
	g->gid = gid;
	g->addr = *ss;
	g->rx_fd = -1;
	g->hosted = false;
	g->fwd_fd = -1;
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)&g->addr)->sin_port =
			htons(ROCE_V2_UDP_PORT);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&g->addr;

		sin6->sin6_port = htons(ROCE_V2_UDP_PORT);
		if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
			sin6->sin6_scope_id = (uint32_t)ifindex;
	}
	g->valid = true;
	/* Before the first open the GID is only recorded: listing devices
	 * must not take UDP port 4791 (rxe_device_open binds). */
	if (!dev->opened)
		return true;
	err = rxe_gid_open(dev, i);
	if (err) {
		dev->gid_open_err = err;
		g->valid = false;
		return false;
	}
	return true;
}

/* Sync the GID table with @nd's addresses: drop vanished ones, add new
 * ones in free slots (indices of the others stay). Under dev->lock.
 * Returns whether anything changed. */
static bool gid_sync(struct rxe_dev *dev, const struct rnicpi_netdev *nd)
{
	bool changed = false;
	size_t j;
	int i, pass;

	for (i = 0; i < RXE_MAX_GID; i++) {
		bool found = false;

		if (!dev->gids[i].valid)
			continue;
		for (j = 0; j < nd->n_addrs && !found; j++) {
			union rnicpi_gid gid;

			found = gid_from_addr(&nd->addrs[j], &gid) &&
				memcmp(gid.raw, dev->gids[i].gid.raw, 16) == 0;
		}
		if (!found) {
			rxe_gid_close(dev, i);
			dev->gids[i].valid = false;
			changed = true;
		}
	}
	/* Like the kernel's table: IPv6 link-local first, then the rest. */
	for (pass = 0; pass < 2; pass++)
		for (j = 0; j < nd->n_addrs; j++) {
			const struct sockaddr_storage *ss = &nd->addrs[j];
			bool ll = ss->ss_family == AF_INET6 &&
				  IN6_IS_ADDR_LINKLOCAL(
					  &((const struct sockaddr_in6 *)ss)
						   ->sin6_addr);

			if ((pass == 0) != ll)
				continue;
			changed |= gid_add(dev, ss, nd->ifindex);
		}
	return changed;
}

static enum rnicpi_port_state port_state_of(unsigned int flags)
{
	return (flags & RNICPI_NETDEV_UP) && (flags & RNICPI_NETDEV_RUNNING)
		       ? RNICPI_PORT_ACTIVE : RNICPI_PORT_DOWN;
}

/* ------------------------------------------------------------------ */
/* Queries                                                            */
/* ------------------------------------------------------------------ */

static int rxe_query_device(struct rnicpi_device *d,
			    struct rnicpi_device_attr *attr)
{
	struct rxe_dev *dev = to_rxe_dev(d);

	memset(attr, 0, sizeof(*attr));
	attr->transport = RNICPI_TRANSPORT_ROCE;
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "hostrdma-rxe %s",
		 PACKAGE_VERSION);
	attr->node_guid = dev->node_guid;
	attr->sys_image_guid = dev->node_guid;
	attr->vendor_id = RXE_VENDOR_ID;
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 0xfffff000u;
	attr->max_msg_size = RXE_MAX_MSG_SIZE;
	attr->max_qp = RXE_MAX_QP;
	attr->max_qp_wr = RXE_MAX_QP_WR;
	attr->max_sge = RXE_MAX_SGE;
	attr->max_sge_rd = RXE_MAX_SGE;
	attr->max_inline_data = RXE_MAX_INLINE;
	attr->max_cq = 16384;
	attr->max_cqe = RXE_MAX_CQE;
	attr->max_mr = RXE_MAX_MR;
	attr->max_mw = RXE_MAX_MR;
	attr->max_pd = 16384;
	attr->max_ah = 16384;
	attr->max_srq = 1024;
	attr->max_srq_wr = RXE_MAX_SRQ_WR;
	attr->max_srq_sge = RXE_MAX_SGE;
	attr->max_qp_rd_atom = RXE_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = RXE_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = RXE_MAX_RD_ATOMIC * RXE_MAX_QP;
	attr->max_pkeys = 1;
	attr->max_private_data = 92; /* IB CM REQ private data (IBA 12.6.5) */
	attr->atomic_cap = RNICPI_ATOMIC_HCA;
	attr->caps = RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_UD |
		     RNICPI_DEV_CAP_SRQ | RNICPI_DEV_CAP_ATOMIC |
		     RNICPI_DEV_CAP_IMM_DATA | RNICPI_DEV_CAP_SEND_INV |
		     RNICPI_DEV_CAP_LOCAL_INV | RNICPI_DEV_CAP_ZERO_BASED |
		     RNICPI_DEV_CAP_GSI | RNICPI_DEV_CAP_RESIZE_CQ |
		     RNICPI_DEV_CAP_MW_TYPE_1 | RNICPI_DEV_CAP_MW_TYPE_2 |
		     RNICPI_DEV_CAP_READ_SINK_MW | RNICPI_DEV_CAP_RESIZE_QP |
		     RNICPI_DEV_CAP_FAST_REG | RNICPI_DEV_CAP_RESIZE_SRQ;
	attr->phys_port_cnt = 1;
	return 0;
}

static int rxe_query_port(struct rnicpi_device *d, uint8_t port_num,
			  struct rnicpi_port_attr *attr)
{
	struct rxe_dev *dev = to_rxe_dev(d);

	if (port_num != 1) {
		rxe_dev_warn(dev, "query_port: no port %u (only 1)", port_num);
		return -EINVAL;
	}
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&dev->lock);
	attr->state = dev->port_state;
	attr->max_mtu = RNICPI_MTU_4096;
	attr->active_mtu = dev->active_mtu;
	pthread_mutex_unlock(&dev->lock);
	attr->link_layer = RNICPI_LINK_LAYER_ETHERNET;
	attr->gid_tbl_len = RXE_MAX_GID;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = RXE_MAX_MSG_SIZE;
	return 0;
}

static int rxe_query_gid(struct rnicpi_device *d, uint8_t port_num,
			 uint32_t index, struct rnicpi_gid_entry *entry)
{
	struct rxe_dev *dev = to_rxe_dev(d);
	int err = 0;

	if (port_num != 1 || index >= RXE_MAX_GID) {
		rxe_dev_warn(dev, "query_gid: port %u index %u out of range",
			     port_num, index);
		return -EINVAL;
	}
	pthread_mutex_lock(&dev->lock);
	if (!dev->gids[index].valid) {
		err = -ENOENT;
	} else {
		entry->gid = dev->gids[index].gid;
		entry->type = RNICPI_GID_TYPE_ROCE_V2;
		entry->ifindex = dev->base.ifindex;
	}
	pthread_mutex_unlock(&dev->lock);
	return err;
}

static void raise_port_event(struct rxe_dev *dev, enum rnicpi_event_type t)
{
	struct rnicpi_async_event ev = { .type = t };

	ev.element.port_num = 1;
	if (dev->base.core && dev->base.core->async_event)
		dev->base.core->async_event(&dev->base, &ev);
}

static void rxe_netdev_event(struct rnicpi_device *d,
			     const struct rnicpi_netdev *nd,
			     enum rnicpi_netdev_event event)
{
	struct rxe_dev *dev = to_rxe_dev(d);
	enum rnicpi_port_state old, now;
	bool gids_changed;

	pthread_mutex_lock(&dev->lock);
	old = dev->port_state;
	dev->nd_flags = nd->flags;
	dev->if_mtu = nd->mtu;
	dev->active_mtu = rxe_mtu_from_if(nd->mtu);
	now = port_state_of(nd->flags);
	dev->port_state = now;
	gids_changed = gid_sync(dev, nd);
	pthread_mutex_unlock(&dev->lock);
	rxe_dev_dbg(dev, "netdev event %d: port %s, MTU %u, GIDs %s", event,
		    now == RNICPI_PORT_ACTIVE ? "ACTIVE" : "DOWN", nd->mtu,
		    gids_changed ? "changed" : "same");
	if (old != now)
		raise_port_event(dev, now == RNICPI_PORT_ACTIVE
				 ? RNICPI_EVENT_PORT_ACTIVE
				 : RNICPI_EVENT_PORT_ERR);
	if (gids_changed)
		raise_port_event(dev, RNICPI_EVENT_GID_CHANGE);
}

/* ------------------------------------------------------------------ */
/* Device create / destroy                                            */
/* ------------------------------------------------------------------ */

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* Device settings; see hostrdma-rxe(7). */
static int apply_options(struct rxe_dev *dev,
			 const struct rnicpi_option *options)
{
	static const struct {
		const char *key;
		size_t off;
		uint32_t lo, hi;
		bool flag;	/* an atomic_bool, 0 or 1 */
	} known[] = {
		{ "ack_clock", offsetof(struct rxe_dev, ack_clock), 0,
		  1u << 20 },
		{ "ack_every", offsetof(struct rxe_dev, ack_every), 1, 4096 },
		{ "busy_poll_us", offsetof(struct rxe_dev, busy_poll_us), 0,
		  1000000 },
		{ "direct", offsetof(struct rxe_dev, direct), 0, 2 },
		{ "fault_drop_ppm", offsetof(struct rxe_dev, fault_drop_ppm),
		  0, 1000000 },
		{ "fault_dup_ppm", offsetof(struct rxe_dev, fault_dup_ppm),
		  0, 1000000 },
		{ "fault_reorder_ppm",
		  offsetof(struct rxe_dev, fault_reorder_ppm), 0, 1000000 },
		{ "fault_seed", offsetof(struct rxe_dev, fault_seed), 0,
		  UINT32_MAX },
		{ "gro", offsetof(struct rxe_dev, gro), 0, 1, true },
		{ "gso", offsetof(struct rxe_dev, gso), 0, 1, true },
		{ "max_unacked", offsetof(struct rxe_dev, max_unacked), 1,
		  1u << 20 },
		{ "poll_rx", offsetof(struct rxe_dev, poll_rx), 0, 1 },
		{ "poll_rx_lease_us",
		  offsetof(struct rxe_dev, poll_rx_lease_us), 1, 1000000 },
		{ "tx_burst", offsetof(struct rxe_dev, tx_burst), 1, 4096 },
	};
	const struct rnicpi_option *o;
	uint32_t v;
	size_t i;

	for (o = options; o && o->key; o++) {
		for (i = 0; i < G_N_ELEMENTS(known); i++)
			if (strcmp(o->key, known[i].key) == 0)
				break;
		if (i == G_N_ELEMENTS(known)) {
			/* The user's setting: said aloud (the device
			 * is not made), not as rxe_dev_warn's info. */
			g_warning("%s: unknown option \"%s\"",
				  dev->base.name, o->key);
			return -EINVAL;
		}
		if (!o->value ||
		    parse_u32(o->value, known[i].lo, known[i].hi, &v)) {
			g_warning("%s: option %s: bad value \"%s\" "
				  "(expected %u..%u)", dev->base.name, o->key,
				  o->value ? o->value : "(null)",
				  known[i].lo, known[i].hi);
			return -EINVAL;
		}
		if (known[i].flag)
			atomic_store(
				(atomic_bool *)((char *)dev + known[i].off),
				v != 0);
		else
			*(uint32_t *)((char *)dev + known[i].off) = v;
	}
	return 0;
}

static const struct rnicpi_device_ops rxe_device_ops;

/* The counters that moved, in one debug line (G_MESSAGES_DEBUG). */
static void log_counters(struct rxe_dev *dev)
{
	g_autoptr(GString) s = NULL;
	int c;

	if (!rnicpi_debug_wanted(G_LOG_DOMAIN))
		return;
	s = g_string_new(NULL);
	for (c = 0; c < RXE_NUM_COUNTERS; c++) {
		uint64_t v = atomic_load(&dev->counters[c]);

		if (v)
			g_string_append_printf(s, " %s=%" PRIu64,
					       rxe_counter_names[c], v);
	}
	rxe_dev_dbg(dev, "counters:%s", s->len ? s->str : " all 0");
}

static void rxe_device_destroy(struct rnicpi_device *d)
{
	struct rxe_dev *dev = to_rxe_dev(d);
	int i;

	rxe_net_stop(dev);
	log_counters(dev);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].valid)
			rxe_gid_close(dev, i);
	rxe_net_fini(dev);
	g_hash_table_destroy(dev->qps);
	g_queue_clear(&dev->pending);
	g_queue_clear(&dev->acks);
	rnicpi_key_table_fini(&dev->keys);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->rx_lock);
	pthread_mutex_destroy(&dev->park_lock);
	g_free(dev);
}

static void mem_get_cb(void *obj)
{
	rxe_mem_get(obj);
}

static int rxe_device_create(const struct rnicpi_netdev *nd, const char *name,
			     const struct rnicpi_option *options,
			     const struct rnicpi_core_ops *core,
			     struct rnicpi_device **out)
{
	struct rxe_dev *dev;
	int err, i, n_gids = 0;

	dev = g_new0(struct rxe_dev, 1);
	dev->base.ops = &rxe_device_ops;
	dev->base.core = core;
	g_strlcpy(dev->base.name, name, sizeof(dev->base.name));
	dev->base.ifindex = nd->ifindex;
	g_strlcpy(dev->ifname, nd->ifname, sizeof(dev->ifname));
	dev->if_mtu = nd->mtu;
	dev->nd_flags = nd->flags;
	dev->port_state = port_state_of(nd->flags);
	dev->active_mtu = rxe_mtu_from_if(nd->mtu);
	/* As Linux rxe (RXE_MAX_UNACKED_PSNS); hostrdma-rxe(7). */
	dev->max_unacked = 128;
	dev->ack_every = 16;
	dev->ack_clock = 16;
	dev->tx_burst = 32;
	atomic_init(&dev->gso, true);
	atomic_init(&dev->gro, true);
	dev->direct = 1;
	dev->busy_poll_us = 0;
	for (i = 0; i < RXE_MAX_GID; i++) {
		dev->gids[i].rx_fd = -1;
		dev->gids[i].fwd_fd = -1;
	}
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->rx_lock, NULL);
	pthread_mutex_init(&dev->park_lock, NULL);
	/* On by default: hostrdma-rxe(7) and docs/PERFORMANCE.md have the
	 * measurements (every row the same or better, small messages and
	 * latency by 1.4-2.4x). */
	dev->poll_rx = 1;
	/* 2 ms (200 us before 2026-11-28): polls push the park timer on
	 * (rxe_poll_rx.c, park_timer_push), one timerfd_settime() a half lease;
	 * at 200 us that cost a 4 KiB WRITE stream between two processes
	 * 15 % of its rate, at 2 ms nothing measurable (hostrdma-rxe(7)). */
	dev->poll_rx_lease_us = 2000;
	dev->qps = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_queue_init(&dev->pending);
	g_queue_init(&dev->acks);
	/* QPN 0 and 1 are the SMI and GSI QPs (IBA 10.2.4); start past the
	 * low numbers so a stale peer's packets rarely hit a new QP. */
	dev->next_qpn = 0x11;
	if (nd->hwaddr_len == 6) {
		uint8_t g[8];

		memcpy(dev->mac, nd->hwaddr, 6);
		dev->has_mac = true;
		/* EUI-64 from the MAC, universal/local bit flipped. */
		g[0] = nd->hwaddr[0] ^ 2;
		g[1] = nd->hwaddr[1];
		g[2] = nd->hwaddr[2];
		g[3] = 0xff;
		g[4] = 0xfe;
		g[5] = nd->hwaddr[3];
		g[6] = nd->hwaddr[4];
		g[7] = nd->hwaddr[5];
		memcpy(&dev->node_guid, g, 8);
	} else {
		uint8_t g[8] = { 0x02, 0, 0, 0xff, 0xfe, 0, 0, 0 };

		ib_put24(g + 5, (uint32_t)nd->ifindex);
		memcpy(&dev->node_guid, g, 8);
	}

	err = rnicpi_key_table_init(&dev->keys, RXE_MAX_MR, mem_get_cb);
	if (err)
		goto err_free;
	err = apply_options(dev, options);
	if (err)
		goto err_keys;
	err = rxe_net_start(dev);
	if (err)
		goto err_keys;
	pthread_mutex_lock(&dev->lock);
	gid_sync(dev, nd);
	for (i = 0; i < RXE_MAX_GID; i++)
		n_gids += dev->gids[i].valid;
	pthread_mutex_unlock(&dev->lock);
	if (n_gids == 0) {
		rxe_dev_warn(dev, "no usable address on %s (UDP port %u)",
			     nd->ifname, ROCE_V2_UDP_PORT);
		err = -EADDRNOTAVAIL;
		goto err_net;
	}
	rxe_dev_dbg(dev, "created on %s (ifindex %d, MTU %u, %d GIDs), ICRC %s",
		    nd->ifname, nd->ifindex, nd->mtu, n_gids,
		    rxe_crc32_engine());
	*out = &dev->base;
	return 0;

err_net:
	rxe_net_stop(dev);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].valid)
			rxe_gid_close(dev, i);
	rxe_net_fini(dev);
err_keys:
	rnicpi_key_table_fini(&dev->keys);
err_free:
	g_hash_table_destroy(dev->qps);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->rx_lock);
	pthread_mutex_destroy(&dev->park_lock);
	g_free(dev);
	return err;
}

/*
 * The first open binds UDP port 4791 on every GID's address (listing the
 * device binds nothing): through the host service when hostrdma-kald
 * answers (a socket of the port's shared group each, and a QPN range),
 * else itself. RoCEv2 has one UDP port: whoever binds it alone on an
 * address owns RoCE there, another process running this provider or the
 * kernel's rdma_rxe. When no address can be bound for that reason the open
 * fails with -EADDRINUSE, said once per process in plain words, and the
 * GIDs stay recorded for the next try. When some address bound, those that
 * failed for another reason are dropped, as a hot-plugged one would be;
 * when none did, the open fails and the next one tries again.
 */
static int rxe_device_open(struct rnicpi_device *d)
{
	struct rxe_dev *dev = to_rxe_dev(d);
	int i, n_open = 0, n_busy = 0, err;

	pthread_mutex_lock(&dev->lock);
	if (dev->opened) {
		pthread_mutex_unlock(&dev->lock);
		return 0;
	}
	for (i = 0; i < RXE_MAX_GID; i++) {
		if (!dev->gids[i].valid)
			continue;
		err = rxe_gid_open(dev, i);
		if (!err)
			n_open++;
		else if (err == -EADDRINUSE)
			n_busy++;
	}
	if (n_open == 0 && n_busy) {
		bool hosted = dev->host_busy;

		pthread_mutex_unlock(&dev->lock);
		if (hosted)
			rxe_dev_warn_once(dev, "the host service "
					  "(hostrdma-kald) could not take "
					  "soft-RoCE's UDP port %u: another "
					  "program holds it (the daemon's log "
					  "says which address)",
					  ROCE_V2_UDP_PORT);
		else
			rxe_dev_warn_once(dev, "another process on this host "
					  "owns soft-RoCE's UDP port %u. To "
					  "share it among processes, start "
					  "the host service (hostrdma-kald, "
					  "see hostrdma-kald(8)) before them",
					  ROCE_V2_UDP_PORT);
		return -EADDRINUSE;
	}
	if (n_open == 0) {
		/* Nothing bound: not opened, the next open tries again. */
		pthread_mutex_unlock(&dev->lock);
		return -EADDRNOTAVAIL;
	}
	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].valid && dev->gids[i].rx_fd < 0)
			dev->gids[i].valid = false;
	dev->opened = true;
	pthread_mutex_unlock(&dev->lock);
	rxe_dev_dbg(dev, "opened: UDP port %u on %d addresses%s",
		    ROCE_V2_UDP_PORT, n_open,
		    dev->qpn_count ? " (through the host service)" : "");
	return 0;
}

static int rxe_netdev_supported(const struct rnicpi_netdev *nd)
{
	/* Ethernet (6-byte MAC) or loopback, with an IP address. */
	if (nd->hwaddr_len != 6 && !(nd->flags & RNICPI_NETDEV_LOOPBACK))
		return -ENODEV;
	if (nd->n_addrs == 0)
		return -EADDRNOTAVAIL;
	return 0;
}

static const struct rnicpi_device_ops rxe_device_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.device_destroy = rxe_device_destroy,
	.query_device = rxe_query_device,
	.query_port = rxe_query_port,
	.query_gid = rxe_query_gid,
	.netdev_event = rxe_netdev_event,
	.alloc_pd = rxe_alloc_pd,
	.dealloc_pd = rxe_dealloc_pd,
	.reg_mr = rxe_reg_mr,
	.rereg_mr = rxe_rereg_mr,
	.dereg_mr = rxe_dereg_mr,
	.alloc_mw = rxe_alloc_mw,
	.dealloc_mw = rxe_dealloc_mw,
	.create_cq = rxe_create_cq,
	.resize_cq = rxe_resize_cq,
	.destroy_cq = rxe_destroy_cq,
	.poll_cq = rxe_poll_cq,
	.req_notify_cq = rxe_req_notify_cq,
	.ack_cq_event = rxe_ack_cq_event,
	.create_srq = rxe_create_srq,
	.modify_srq = rxe_modify_srq,
	.query_srq = rxe_query_srq,
	.destroy_srq = rxe_destroy_srq,
	.post_srq_recv = rxe_post_srq_recv,
	.create_qp = rxe_create_qp,
	.modify_qp = rxe_modify_qp,
	.query_qp = rxe_query_qp,
	.destroy_qp = rxe_destroy_qp,
	.post_send = rxe_post_send,
	.post_recv = rxe_post_recv,
	.create_ah = rxe_create_ah,
	.destroy_ah = rxe_destroy_ah,
	.device_open = rxe_device_open,
	.alloc_mr = rxe_alloc_mr,
	.consumer_blocks = rxe_consumer_blocks,
};

const struct rnicpi_provider rxe_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = "rxe",
	.description = "soft-RoCE (InfiniBand transport over UDP 4791)",
	.transport = RNICPI_TRANSPORT_ROCE,
	.netdev_supported = rxe_netdev_supported,
	.device_create = rxe_device_create,
};
