/* SPDX-License-Identifier: MIT */
/* The test network of the kal-netlink suite (see testutil_kal.h). */
#include "config.h"

#include <arpa/inet.h>

#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/route/route.h>

#include "tests/testutil_kal.h"

static void local_found(struct nl_object *obj, void *arg)
{
	(void)obj;
	*(bool *)arg = true;
}

/* Whether the local table holds @addr's route (type local, /128). */
static bool has_local_route(struct nl_sock *sk, const char *addr)
{
	struct rtnl_route *filter = rtnl_route_alloc();
	struct nl_cache *cache = NULL;
	struct nl_addr *dst = NULL;
	bool found = false;

	if (filter && nl_addr_parse(addr, AF_INET6, &dst) >= 0 &&
	    rtnl_route_alloc_cache(sk, AF_INET6, 0, &cache) >= 0) {
		nl_addr_set_prefixlen(dst, 128);
		rtnl_route_set_table(filter, RT_TABLE_LOCAL);
		rtnl_route_set_type(filter, RTN_LOCAL);
		rtnl_route_set_dst(filter, dst);
		nl_cache_foreach_filter(cache, (struct nl_object *)filter,
					local_found, &found);
	}
	nl_cache_free(cache);
	nl_addr_put(dst);
	rtnl_route_put(filter);
	return found;
}

void kalnet_setup(struct kalnet *e)
{
	static const struct {
		const char *dst;
		int type;
		const char *gateway;
		uint32_t mtu;
	} routes[] = {
		{ "10.88.0.0/24", RTN_UNICAST, "10.77.0.2", 0 },
		{ "fd00:88::/64", RTN_UNICAST, "fd00:77::2", 0 },
		{ "10.88.1.0/24", RTN_UNICAST, "10.77.0.2", 1280 },
		{ "10.99.1.0/24", RTN_UNREACHABLE, NULL, 0 },
		{ "fd00:99:1::/48", RTN_UNREACHABLE, NULL, 0 },
		{ "10.99.2.0/24", RTN_PROHIBIT, NULL, 0 },
		{ "fd00:99:2::/48", RTN_PROHIBIT, NULL, 0 },
		{ "10.99.3.0/24", RTN_BLACKHOLE, NULL, 0 },
		{ "fd00:99:3::/48", RTN_BLACKHOLE, NULL, 0 },
	};
	struct tu_ns *ns = &e->ns;
	unsigned int i;

	tu_ns_setup(ns, "kal0", "kalp0");
	ns_ok(tu_ns_addr_add(ns->sk, ns->ifindex, "10.77.0.1/24"));
	ns_ok(tu_ns_addr_add(ns->sk, ns->ifindex, "fd00:77::1/64"));
	ns_ok(tu_ns_addr_add(ns->peer_sk, ns->peer_ifindex, "10.77.0.2/24"));
	ns_ok(tu_ns_addr_add(ns->peer_sk, ns->peer_ifindex, "fd00:77::2/64"));
	for (i = 0; i < G_N_ELEMENTS(routes); i++)
		ns_ok(tu_ns_route_add(ns->sk, routes[i].dst, routes[i].type,
				      routes[i].gateway,
				      routes[i].gateway ? ns->ifindex : 0,
				      routes[i].mtu));
	/* An IPv6 address's local route is added by a kernel worker after
	 * the address (addrconf's, even with IFA_F_NODAD). A lookup in that
	 * window takes the prefix's route and resolves our own address as a
	 * neighbour: test_route_local timed out so once in CI. */
	for (i = 0; i < 200 && !has_local_route(ns->sk, "fd00:77::1"); i++)
		g_usleep(10000);
	tu_child_assert(i < 200, "fd00:77::1 has no local route after 2 s");
	e->log = tu_log_capture_begin("hostrdma-kal");
	tu_child_assert_ok(kal_nl_open(&e->nl));
}

void kalnet_teardown(struct kalnet *e)
{
	kal_nl_close(e->nl);
	tu_log_capture_end(e->log);
	tu_ns_teardown(&e->ns);
}
