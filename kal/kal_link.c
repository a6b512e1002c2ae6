/* SPDX-License-Identifier: MIT */
/*
 * Reading the netlink context's caches: snapshots of links with their
 * addresses, what the route resolver needs of a link and a neighbour, and
 * conversions between sockaddr and libnl addresses. Every access to a
 * cache or one of its objects holds nl->lock (see kal_int.h).
 */
#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>

#include <linux/if_addr.h>
#include <linux/neighbour.h>

#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>

#include "kal/kal_int.h"

/* ------------------------------------------------------------------ */
/* Addresses                                                           */
/* ------------------------------------------------------------------ */

struct nl_addr *kal_nl_addr_from_sockaddr(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		return nl_addr_build(AF_INET, &sin->sin_addr,
				     sizeof(sin->sin_addr));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		return nl_addr_build(AF_INET6, &sin6->sin6_addr,
				     sizeof(sin6->sin6_addr));
	}
	return NULL;
}

void kal_sockaddr_from_nl_addr(struct nl_addr *addr, int ifindex,
			       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = AF_UNSPEC;
	if (!addr)
		return;
	if (nl_addr_get_family(addr) == AF_INET &&
	    nl_addr_get_len(addr) == sizeof(struct in_addr)) {
		struct sockaddr_in *sin = (void *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, nl_addr_get_binary_addr(addr),
		       sizeof(sin->sin_addr));
	} else if (nl_addr_get_family(addr) == AF_INET6 &&
		   nl_addr_get_len(addr) == sizeof(struct in6_addr)) {
		struct sockaddr_in6 *sin6 = (void *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, nl_addr_get_binary_addr(addr),
		       sizeof(sin6->sin6_addr));
		/* link-local addresses mean nothing without their link */
		if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr) ||
		    IN6_IS_ADDR_MC_LINKLOCAL(&sin6->sin6_addr))
			sin6->sin6_scope_id = (uint32_t)ifindex;
	}
}

/* An address usable as a source now: IPv6 duplicate address detection
 * done and passed (RFC 4862 §5.4: a tentative address is not assigned). */
bool kal_addr_usable(struct rtnl_addr *a)
{
	unsigned int flags = rtnl_addr_get_flags(a);
	int family = rtnl_addr_get_family(a);

	if (family != AF_INET && family != AF_INET6)
		return false;
	if (!rtnl_addr_get_local(a))
		return false;
	return !(flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
}


/* ------------------------------------------------------------------ */
/* Links                                                               */
/* ------------------------------------------------------------------ */


static unsigned int kal_flags(unsigned int iff)
{
	return (iff & IFF_UP ? KAL_LINK_UP : 0) |
	       (iff & IFF_RUNNING ? KAL_LINK_RUNNING : 0) |
	       (iff & IFF_LOOPBACK ? KAL_LINK_LOOPBACK : 0);
}


void kal_link_state_of(struct rtnl_link *link, struct kal_link_state *st)
{
	struct nl_addr *hw = rtnl_link_get_addr(link);
	const char *name = rtnl_link_get_name(link);

	memset(st, 0, sizeof(*st));
	g_strlcpy(st->ifname, name ? name : "", sizeof(st->ifname));
	st->flags = kal_flags(rtnl_link_get_flags(link));
	st->mtu = rtnl_link_get_mtu(link);
	if (hw && nl_addr_get_len(hw) <= KAL_MAX_HWADDR) {
		st->hwaddr_len = nl_addr_get_len(hw);
		memcpy(st->hwaddr, nl_addr_get_binary_addr(hw),
		       st->hwaddr_len);
	}
}

/* The link cache also holds per-family link objects (AF_BRIDGE,
 * AF_INET6 notifications); the interface itself is the AF_UNSPEC one.
 * A bridge master is the exception: libnl keeps one object for it, the
 * AF_BRIDGE one (seen with libnl 3.7: br0 listed as family 7 only), so it
 * counts as the interface when it is enslaved to nothing. */
bool kal_link_is_interface(struct rtnl_link *link)
{
	int family = rtnl_link_get_family(link);

	return family == AF_UNSPEC ||
	       (family == AF_BRIDGE && rtnl_link_get_master(link) == 0);
}


static struct kal_link *link_snapshot(struct kal_nl *nl,
				      struct rtnl_link *rl)
{
	struct kal_link *link = g_new0(struct kal_link, 1);
	struct kal_link_state st;

	kal_link_state_of(rl, &st);
	link->ifindex = rtnl_link_get_ifindex(rl);
	memcpy(link->ifname, st.ifname, sizeof(link->ifname));
	link->mtu = st.mtu;
	link->flags = st.flags;
	memcpy(link->hwaddr, st.hwaddr, sizeof(link->hwaddr));
	link->hwaddr_len = st.hwaddr_len;
	link->arptype = rtnl_link_get_arptype(rl);
	link->addrs = g_array_new(FALSE, TRUE, sizeof(struct sockaddr_storage));
	return link;
}

/* Add the usable addresses of the cache to the links of @by_index. */
static void links_add_addrs(struct kal_nl *nl, GHashTable *by_index)
{
	struct nl_object *obj;

	for (obj = nl_cache_get_first(nl->addrs); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		int ifindex = rtnl_addr_get_ifindex(a);
		struct kal_link *link;
		struct sockaddr_storage ss;

		if (!kal_addr_usable(a))
			continue;
		link = g_hash_table_lookup(by_index, GINT_TO_POINTER(ifindex));
		if (!link)
			continue;
		kal_sockaddr_from_nl_addr(rtnl_addr_get_local(a), ifindex, &ss);
		if (ss.ss_family != AF_UNSPEC)
			g_array_append_val(link->addrs, ss);
	}
}

void kal_link_free(struct kal_link *link)
{
	if (!link)
		return;
	if (link->addrs)
		g_array_unref(link->addrs);
	g_free(link);
}

static gint link_cmp_index(gconstpointer a, gconstpointer b)
{
	const struct kal_link *x = *(struct kal_link *const *)a;
	const struct kal_link *y = *(struct kal_link *const *)b;

	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

GPtrArray *kal_nl_links(struct kal_nl *nl)
{
	GPtrArray *links = g_ptr_array_new_with_free_func(
		(GDestroyNotify)kal_link_free);
	GHashTable *by_index;
	struct nl_object *obj;

	g_return_val_if_fail(nl != NULL, links);
	by_index = g_hash_table_new(NULL, NULL);
	pthread_mutex_lock(&nl->lock);
	for (obj = nl_cache_get_first(nl->links); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_link *rl = (struct rtnl_link *)obj;
		struct kal_link *link;

		if (!kal_link_is_interface(rl) ||
		    g_hash_table_contains(by_index, GINT_TO_POINTER(
					rtnl_link_get_ifindex(rl))))
			continue;
		link = link_snapshot(nl, rl);
		g_ptr_array_add(links, link);
		g_hash_table_insert(by_index, GINT_TO_POINTER(link->ifindex),
				    link);
	}
	links_add_addrs(nl, by_index);
	pthread_mutex_unlock(&nl->lock);
	g_hash_table_unref(by_index);
	g_ptr_array_sort(links, link_cmp_index);
	return links;
}

/* One link from the cache with its addresses; called locked. */
static struct kal_link *link_one(struct kal_nl *nl, struct rtnl_link *rl)
{
	struct kal_link *link = link_snapshot(nl, rl);
	GHashTable *by_index = g_hash_table_new(NULL, NULL);

	g_hash_table_insert(by_index, GINT_TO_POINTER(link->ifindex), link);
	links_add_addrs(nl, by_index);
	g_hash_table_unref(by_index);
	return link;
}

struct kal_link *kal_nl_link_by_index(struct kal_nl *nl, int ifindex,
				      int *err)
{
	struct kal_link *link = NULL;
	struct rtnl_link *rl;

	g_return_val_if_fail(nl != NULL, NULL);
	pthread_mutex_lock(&nl->lock);
	rl = rtnl_link_get(nl->links, ifindex);
	if (rl) {
		link = link_one(nl, rl);
		rtnl_link_put(rl);
	}
	pthread_mutex_unlock(&nl->lock);
	if (!link)
		g_debug("no interface with index %d", ifindex);
	if (err)
		*err = link ? 0 : -ENODEV;
	return link;
}

struct kal_link *kal_nl_link_by_name(struct kal_nl *nl, const char *ifname,
				     int *err)
{
	struct kal_link *link = NULL;
	struct rtnl_link *rl;

	g_return_val_if_fail(nl != NULL && ifname != NULL, NULL);
	pthread_mutex_lock(&nl->lock);
	rl = rtnl_link_get_by_name(nl->links, ifname);
	if (rl) {
		link = link_one(nl, rl);
		rtnl_link_put(rl);
	}
	pthread_mutex_unlock(&nl->lock);
	if (!link)
		g_debug("no interface named \"%s\"", ifname);
	if (err)
		*err = link ? 0 : -ENODEV;
	return link;
}

int kal_nl_linkinfo(struct kal_nl *nl, int ifindex,
		    struct kal_nl_linkinfo *info)
{
	struct rtnl_link *rl;
	struct kal_link_state st;

	pthread_mutex_lock(&nl->lock);
	rl = rtnl_link_get(nl->links, ifindex);
	if (rl) {
		kal_link_state_of(rl, &st);
		memcpy(info->ifname, st.ifname, sizeof(info->ifname));
		info->mtu = st.mtu;
		info->hwaddr_len = st.hwaddr_len;
		info->iff_flags = rtnl_link_get_flags(rl);
		rtnl_link_put(rl);
	}
	pthread_mutex_unlock(&nl->lock);
	return rl ? 0 : -ENODEV;
}

int kal_nl_neigh_lookup(struct kal_nl *nl, int ifindex,
			const struct sockaddr *addr, uint8_t *hwaddr,
			uint32_t *hwaddr_len)
{
	struct nl_addr *dst = kal_nl_addr_from_sockaddr(addr);
	struct rtnl_neigh *neigh;
	int err = -ENOENT;

	if (!dst)
		return -EAFNOSUPPORT;
	pthread_mutex_lock(&nl->lock);
	neigh = rtnl_neigh_get(nl->neighs, ifindex, dst);
	if (neigh) {
		struct nl_addr *ll = rtnl_neigh_get_lladdr(neigh);
		int state = rtnl_neigh_get_state(neigh);

		if (state > 0 && (state & KAL_NUD_VALID) && ll &&
		    nl_addr_get_len(ll) > 0 &&
		    nl_addr_get_len(ll) <= KAL_MAX_HWADDR) {
			*hwaddr_len = nl_addr_get_len(ll);
			memcpy(hwaddr, nl_addr_get_binary_addr(ll),
			       *hwaddr_len);
			err = 0;
		}
		rtnl_neigh_put(neigh);
	}
	pthread_mutex_unlock(&nl->lock);
	nl_addr_put(dst);
	return err;
}

