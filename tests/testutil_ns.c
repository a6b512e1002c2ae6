/* SPDX-License-Identifier: MIT */
/* Private network namespaces with a veth pair, set up through libnl. */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>

#include "tests/testutil_ns.h"
#include "tests/testutil.h"

static bool veth_ready(struct tu_ns *ns);

static struct nl_sock *sock_here(void)
{
	struct nl_sock *sk = nl_socket_alloc();

	tu_child_assert(sk != NULL, "nl_socket_alloc");
	tu_child_assert(nl_connect(sk, NETLINK_ROUTE) == 0, "nl_connect");
	return sk;
}

static int ns_here(void)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

	tu_child_assert(fd >= 0, "open ns: %s", g_strerror(errno));
	return fd;
}

/* IPv6 DAD off for links created from now on in this namespace. */
static void dad_off(void)
{
	static const char *const files[] = {
		"/proc/sys/net/ipv6/conf/default/accept_dad",
		"/proc/sys/net/ipv6/conf/all/accept_dad",
	};
	unsigned int i;

	for (i = 0; i < G_N_ELEMENTS(files); i++) {
		int fd = open(files[i], O_WRONLY | O_CLOEXEC);

		tu_child_assert(fd >= 0 && write(fd, "0", 1) == 1,
				"cannot write %s: %s", files[i],
				g_strerror(errno));
		close(fd);
	}
}

int tu_ns_link_set(struct nl_sock *sk, int ifindex, bool up, uint32_t mtu)
{
	struct rtnl_link *old = NULL, *change;
	int err;

	err = rtnl_link_get_kernel(sk, ifindex, NULL, &old);
	if (err < 0)
		return err;
	change = rtnl_link_alloc();
	if (up)
		rtnl_link_set_flags(change, IFF_UP);
	else
		rtnl_link_unset_flags(change, IFF_UP);
	if (mtu)
		rtnl_link_set_mtu(change, mtu);
	err = rtnl_link_change(sk, old, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(old);
	return err;
}

static void link_info(struct nl_sock *sk, const char *name, int *ifindex,
		      uint8_t mac[6])
{
	struct rtnl_link *link = NULL;
	struct nl_addr *hw;
	int err = rtnl_link_get_kernel(sk, 0, name, &link);

	tu_child_assert(err == 0, "no link %s: %s", name, nl_geterror(err));
	*ifindex = rtnl_link_get_ifindex(link);
	hw = rtnl_link_get_addr(link);
	tu_child_assert(hw && nl_addr_get_len(hw) == 6, "%s has no MAC", name);
	memcpy(mac, nl_addr_get_binary_addr(hw), 6);
	rtnl_link_put(link);
}

static int veth_add(struct nl_sock *sk, const char *name,
		    const char *peer_name, int peer_ns_fd)
{
	struct rtnl_link *link = rtnl_link_veth_alloc(), *peer;
	int err;

	if (!link)
		return -NLE_NOMEM;
	peer = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(link, name);
	rtnl_link_set_name(peer, peer_name);
	if (peer_ns_fd >= 0)
		rtnl_link_set_ns_fd(peer, peer_ns_fd);
	err = rtnl_link_add(sk, link, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(peer);
	rtnl_link_put(link);
	return err;
}

int tu_ns_veth_add(struct nl_sock *sk, const char *name,
		   const char *peer_name)
{
	struct rtnl_link *link = NULL;
	int err = veth_add(sk, name, peer_name, -1);

	if (err < 0)
		return err;
	err = rtnl_link_get_kernel(sk, 0, name, &link);
	if (err < 0)
		return err;
	err = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	return err;
}

int tu_ns_link_del(struct nl_sock *sk, int ifindex)
{
	struct rtnl_link *link = rtnl_link_alloc();
	int err;

	rtnl_link_set_ifindex(link, ifindex);
	err = rtnl_link_delete(sk, link);
	rtnl_link_put(link);
	return err;
}

void tu_ns_setup(struct tu_ns *ns, const char *ifname,
		 const char *peer_ifname)
{
	uint8_t lo_mac[6];
	gint64 end;
	int lo;

	memset(ns, 0, sizeof(*ns));
	ns->local_fd = ns->peer_fd = -1;
	g_strlcpy(ns->ifname, ifname, sizeof(ns->ifname));
	g_strlcpy(ns->peer_ifname, peer_ifname, sizeof(ns->peer_ifname));

	/* the peer namespace first, keeping a socket into it */
	tu_child_assert(unshare(CLONE_NEWNET) == 0, "unshare: %s",
			g_strerror(errno));
	ns->peer_fd = ns_here();
	dad_off();
	ns->peer_sk = sock_here();
	/* then ours, where the caller stays */
	tu_child_assert(unshare(CLONE_NEWNET) == 0, "unshare: %s",
			g_strerror(errno));
	ns->local_fd = ns_here();
	dad_off();
	ns->sk = sock_here();

	tu_child_assert(veth_add(ns->sk, ifname, peer_ifname,
				 ns->peer_fd) == 0,
			"cannot create veth %s/%s", ifname, peer_ifname);
	link_info(ns->sk, ifname, &ns->ifindex, ns->mac);
	link_info(ns->peer_sk, peer_ifname, &ns->peer_ifindex, ns->peer_mac);

	/* lo on both sides: 127.0.0.1 and ::1 appear with it */
	link_info(ns->sk, "lo", &lo, lo_mac);
	tu_child_assert(tu_ns_link_set(ns->sk, lo, true, 0) == 0, "lo up");
	link_info(ns->peer_sk, "lo", &lo, lo_mac);
	tu_child_assert(tu_ns_link_set(ns->peer_sk, lo, true, 0) == 0,
			"peer lo up");
	tu_child_assert(tu_ns_link_set(ns->sk, ns->ifindex, true, 0) == 0,
			"%s up", ifname);
	tu_child_assert(tu_ns_link_set(ns->peer_sk, ns->peer_ifindex, true,
				       0) == 0, "%s up", peer_ifname);
	/* a safety net, not a measurement */
	end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	while (!veth_ready(ns)) {
		tu_child_assert(g_get_monotonic_time() < end,
				"%s/%s: no carrier or link-local address",
				ifname, peer_ifname);
		g_usleep(10 * 1000);
	}
}

void tu_ns_teardown(struct tu_ns *ns)
{
	nl_socket_free(ns->sk);
	nl_socket_free(ns->peer_sk);
	if (ns->local_fd >= 0)
		close(ns->local_fd);
	if (ns->peer_fd >= 0)
		close(ns->peer_fd);
	memset(ns, 0, sizeof(*ns));
}

static int addr_change(struct nl_sock *sk, int ifindex, const char *cidr,
		       bool add)
{
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local = NULL;
	int err;

	err = nl_addr_parse(cidr, AF_UNSPEC, &local);
	if (err < 0)
		goto out;
	rtnl_addr_set_ifindex(addr, ifindex);
	rtnl_addr_set_local(addr, local);
	rtnl_addr_set_prefixlen(addr, (int)nl_addr_get_prefixlen(local));
	if (nl_addr_get_family(local) == AF_INET6)
		rtnl_addr_set_flags(addr, IFA_F_NODAD);
	err = add ? rtnl_addr_add(sk, addr, 0) : rtnl_addr_delete(sk, addr, 0);
out:
	nl_addr_put(local);
	rtnl_addr_put(addr);
	return err;
}

int tu_ns_addr_add(struct nl_sock *sk, int ifindex, const char *cidr)
{
	return addr_change(sk, ifindex, cidr, true);
}

int tu_ns_addr_del(struct nl_sock *sk, int ifindex, const char *cidr)
{
	return addr_change(sk, ifindex, cidr, false);
}

int tu_ns_route_add(struct nl_sock *sk, const char *dst, int type,
		    const char *gateway, int ifindex, uint32_t mtu)
{
	struct rtnl_route *route = rtnl_route_alloc();
	struct nl_addr *d = NULL, *gw = NULL;
	int err;

	err = nl_addr_parse(dst, AF_UNSPEC, &d);
	if (err < 0)
		goto out;
	rtnl_route_set_family(route, (uint8_t)nl_addr_get_family(d));
	rtnl_route_set_dst(route, d);
	rtnl_route_set_table(route, RT_TABLE_MAIN);
	rtnl_route_set_type(route, (uint8_t)type);
	rtnl_route_set_scope(route, RT_SCOPE_UNIVERSE);
	rtnl_route_set_protocol(route, RTPROT_STATIC);
	if (mtu)
		rtnl_route_set_metric(route, RTAX_MTU, mtu);
	if (gateway) {
		struct rtnl_nexthop *nh = rtnl_route_nh_alloc();

		err = nl_addr_parse(gateway, AF_UNSPEC, &gw);
		if (err < 0) {
			rtnl_route_nh_free(nh);
			goto out;
		}
		rtnl_route_nh_set_gateway(nh, gw);
		rtnl_route_nh_set_ifindex(nh, ifindex);
		rtnl_route_add_nexthop(route, nh);
	}
	err = rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_EXCL);
out:
	nl_addr_put(gw);
	nl_addr_put(d);
	rtnl_route_put(route);
	return err;
}

static char *linklocal(struct nl_sock *sk, int ifindex)
{
	struct nl_cache *cache = NULL;
	struct nl_object *obj;
	char *text = NULL;

	tu_child_assert(rtnl_addr_alloc_cache(sk, &cache) == 0,
			"address dump");
	for (obj = nl_cache_get_first(cache); obj && !text;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		char buf[64];

		/* usable only once DAD is done, even when it is off */
		if (rtnl_addr_get_ifindex(a) != ifindex ||
		    rtnl_addr_get_family(a) != AF_INET6 ||
		    rtnl_addr_get_scope(a) != RT_SCOPE_LINK ||
		    (rtnl_addr_get_flags(a) & IFA_F_TENTATIVE))
			continue;
		/* nl_addr2str appends the prefix length */
		nl_addr2str(rtnl_addr_get_local(a), buf, sizeof(buf));
		*strchrnul(buf, '/') = 0;
		text = g_strdup(buf);
	}
	nl_cache_free(cache);
	return text;
}

char *tu_ns_linklocal(struct nl_sock *sk, int ifindex)
{
	char *text = linklocal(sk, ifindex);

	tu_child_assert(text != NULL, "no link-local address on %d", ifindex);
	return text;
}

static bool link_running(struct nl_sock *sk, int ifindex)
{
	struct rtnl_link *link = NULL;
	bool running;

	if (rtnl_link_get_kernel(sk, ifindex, NULL, &link) < 0)
		return false;
	running = rtnl_link_get_flags(link) & IFF_RUNNING;
	rtnl_link_put(link);
	return running;
}

/* Carrier and IPv6 link-local addresses come from the kernel's link
 * watch, a moment after both ends are up. */
static bool veth_ready(struct tu_ns *ns)
{
	char *ll, *peer_ll;
	bool ready;

	if (!link_running(ns->sk, ns->ifindex) ||
	    !link_running(ns->peer_sk, ns->peer_ifindex))
		return false;
	ll = linklocal(ns->sk, ns->ifindex);
	peer_ll = linklocal(ns->peer_sk, ns->peer_ifindex);
	ready = ll && peer_ll;
	g_free(ll);
	g_free(peer_ll);
	return ready;
}
