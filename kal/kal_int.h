/* SPDX-License-Identifier: MIT */
/*
 * kal_int.h - what kal_nl.c and kal_route.c share: the netlink context and
 * the one place libnl's NLE_* codes become errno values.
 */
#ifndef KAL_INT_H
#define KAL_INT_H

#include <pthread.h>

#include <linux/neighbour.h>

#include <netlink/addr.h>

#include "kal/kal.h"

struct nl_cache;
struct nl_cache_mngr;
struct nl_sock;

struct kal_nl {
	/* The libnl manager and its caches. libnl objects are not thread
	 * safe (not even their reference counts), so every access to a
	 * cache or to an object from it happens under this lock. */
	pthread_mutex_t lock;
	struct nl_sock *mngr_sock;  /* the manager's event socket */
	struct nl_sock *sync_sock;  /* resync after a lost notification */
	struct nl_cache_mngr *mngr;
	struct nl_cache *links;
	struct nl_cache *addrs;
	struct nl_cache *routes;
	struct nl_cache *neighs;
	/* What subscribers have been told, to turn cache changes into
	 * transitions (under @lock). */
	GHashTable *link_state;	 /* ifindex -> struct kal_link_state */
	GHashTable *addr_seen;	 /* struct kal_addr_key -> itself */
	/* Events found while applying changes, reported once @lock is
	 * dropped; monitor thread only. */
	GQueue pending;

	/* RTM_GETROUTE / RTM_GETNEIGH requests (under @query_lock). */
	pthread_mutex_t query_lock;
	struct nl_sock *query_sock;

	GThread *monitor;
	int stop_fd;		 /* eventfd: the monitor thread stops */

	/* Subscribers (under @sub_lock). */
	pthread_mutex_t sub_lock;
	pthread_cond_t sub_cond;		 /* a callback returned */
	GList *subs;		 /* struct kal_sub, by ascending id */
	guint next_sub_id;
	guint running_sub;	 /* id whose callback runs now, or 0 */
};

/* A link as last reported to subscribers. */
struct kal_link_state {
	char ifname[KAL_IFNAMSIZ];
	unsigned int flags;	 /* enum kal_link_flags */
	uint32_t mtu;
	uint8_t hwaddr[KAL_MAX_HWADDR];
	uint32_t hwaddr_len;
};

/* What kal_link.c offers kal_nl.c (called with nl->lock held). */
struct rtnl_addr;
struct rtnl_link;
void kal_link_state_of(struct rtnl_link *link, struct kal_link_state *st);
/* The interface itself, not a per-family (AF_BRIDGE, ...) link object. */
bool kal_link_is_interface(struct rtnl_link *link);
/* IPv4/IPv6, with a local address, DAD done and passed. */
bool kal_addr_usable(struct rtnl_addr *a);

/* libnl's -NLE_* code as a -errno; 0 stays 0. */
int kal_nle_errno(int nle);

/* A link as the route resolver needs it; from the cache, under the lock.
 * Returns 0 or -ENODEV. */
struct kal_nl_linkinfo {
	char ifname[KAL_IFNAMSIZ];
	uint32_t mtu;
	unsigned int iff_flags;	 /* IFF_* */
	uint32_t hwaddr_len;
};

int kal_nl_linkinfo(struct kal_nl *nl, int ifindex,
		    struct kal_nl_linkinfo *info);

/* Neighbour states whose link-layer address can be used now. */
#define KAL_NUD_VALID                                                       \
	(NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | \
	 NUD_NOARP)

/* The link-layer address of @addr on @ifindex from the neighbour cache,
 * if its entry is in a KAL_NUD_VALID state. Returns 0, or -ENOENT. */
int kal_nl_neigh_lookup(struct kal_nl *nl, int ifindex,
			const struct sockaddr *addr, uint8_t *hwaddr,
			uint32_t *hwaddr_len);

/* Conversions between sockaddr and libnl addresses. */
struct nl_addr *kal_nl_addr_from_sockaddr(const struct sockaddr *sa);
void kal_sockaddr_from_nl_addr(struct nl_addr *addr, int ifindex,
			       struct sockaddr_storage *ss);

#endif /* KAL_INT_H */
