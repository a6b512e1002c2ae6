/* SPDX-License-Identifier: MIT */
/*
 * kal-netlink, route resolution: kal_route_resolve against the kernel's
 * routing and neighbour tables in the test network of testutil_kal.h.
 */
#include "config.h"

#include <linux/rtnetlink.h>

#include "tests/testutil_kal.h"

/* ------------------------------------------------------------------ */
/* Routes                                                              */
/* ------------------------------------------------------------------ */

static void assert_route(struct kalnet *e, const struct kal_route *rt,
			 const char *src, const char *gw, bool peer_mac)
{
	char b[ADDR_STRLEN];

	tu_child_assert(rt->type == KAL_ROUTE_UNICAST, "type %d", rt->type);
	tu_child_assert(sa_is(&rt->src, src, 0), "src %s, expected %s",
			str(&rt->src, b), src);
	if (gw)
		tu_child_assert(sa_is(&rt->gateway, gw, 0),
				"gateway %s, expected %s",
				str(&rt->gateway, b), gw);
	else
		tu_child_assert(rt->gateway.ss_family == AF_UNSPEC,
				"gateway %s", str(&rt->gateway, b));
	tu_child_assert(rt->ifindex == e->ns.ifindex, "ifindex %d",
			rt->ifindex);
	tu_child_assert(strcmp(rt->ifname, "kal0") == 0, "ifname %s",
			rt->ifname);
	tu_child_assert(rt->mtu == 1500, "mtu %u", rt->mtu);
	if (peer_mac)
		tu_child_assert(rt->nh_hwaddr_len == 6 &&
				memcmp(rt->nh_hwaddr, e->ns.peer_mac, 6) == 0,
				"next hop MAC (%u bytes) is not the peer's",
				rt->nh_hwaddr_len);
	else
		tu_child_assert(rt->nh_hwaddr_len == 0, "MAC known already");
}

static void child_route_onlink(void *unused)
{
	static const struct {
		const char *dst, *src;
	} cases[] = {
		{ "10.77.0.2", "10.77.0.1" },
		{ "fd00:77::2", "fd00:77::1" },
	};
	struct kal_route rt;
	struct kalnet e;
	unsigned int i;

	kalnet_setup(&e);
	for (i = 0; i < G_N_ELEMENTS(cases); i++) {
		/* a fresh namespace knows no neighbour, and timeout 0
		 * neither waits nor sends anything */
		tu_child_assert_ok(kal_route_resolve(e.nl, SA(cases[i].dst),
						     NULL, 0, &rt));
		assert_route(&e, &rt, cases[i].src, NULL, false);
		tu_child_assert(sa_is(&rt.dst, cases[i].dst, 0), "dst");
		/* so the MAC found now is what the trigger made the kernel
		 * learn */
		tu_child_assert_ok(kal_route_resolve(e.nl, SA(cases[i].dst),
						     NULL, RESOLVE_MS, &rt));
		assert_route(&e, &rt, cases[i].src, NULL, true);
		/* and it comes from the neighbour cache next time */
		tu_child_assert_ok(kal_route_resolve(e.nl, SA(cases[i].dst),
						     SA(cases[i].src), 0,
						     &rt));
		assert_route(&e, &rt, cases[i].src, NULL, true);
	}
	kalnet_teardown(&e);
}

START_TEST(test_route_onlink)
{
	tu_run_child(child_route_onlink, NULL);
}
END_TEST

static void child_route_gateway(void *unused)
{
	struct kal_route rt;
	struct kalnet e;

	kalnet_setup(&e);
	tu_child_assert_ok(kal_route_resolve(e.nl, SA("10.88.0.5"), NULL,
					     RESOLVE_MS, &rt));
	assert_route(&e, &rt, "10.77.0.1", "10.77.0.2", true);
	tu_child_assert(sa_is(&rt.dst, "10.88.0.5", 0), "dst");
	tu_child_assert_ok(kal_route_resolve(e.nl, SA("fd00:88::5"), NULL,
					     RESOLVE_MS, &rt));
	assert_route(&e, &rt, "fd00:77::1", "fd00:77::2", true);
	/* the route's MTU wins over the link's */
	tu_child_assert_ok(kal_route_resolve(e.nl, SA("10.88.1.5"), NULL,
					     RESOLVE_MS, &rt));
	tu_child_assert(rt.mtu == 1280 && rt.ifindex == e.ns.ifindex &&
			sa_is(&rt.gateway, "10.77.0.2", 0) &&
			rt.nh_hwaddr_len == 6, "mtu %u", rt.mtu);
	kalnet_teardown(&e);
}

START_TEST(test_route_gateway)
{
	tu_run_child(child_route_gateway, NULL);
}
END_TEST

static void child_route_linklocal(void *unused)
{
	g_autofree char *ours = NULL, *peer = NULL;
	struct sockaddr_storage dst, src;
	struct kal_route rt;
	struct kalnet e;
	char b[ADDR_STRLEN];

	kalnet_setup(&e);
	ours = tu_ns_linklocal(e.ns.sk, e.ns.ifindex);
	peer = tu_ns_linklocal(e.ns.peer_sk, e.ns.peer_ifindex);
	dst = sa(peer, e.ns.ifindex);
	tu_child_assert_ok(kal_route_resolve(e.nl, (void *)&dst, NULL,
					     RESOLVE_MS, &rt));
	tu_child_assert(rt.ifindex == e.ns.ifindex, "ifindex %d", rt.ifindex);
	tu_child_assert(sa_is(&rt.src, ours, e.ns.ifindex), "src %s, not %s",
			str(&rt.src, b), ours);
	tu_child_assert(rt.gateway.ss_family == AF_UNSPEC, "gateway");
	tu_child_assert(rt.nh_hwaddr_len == 6 &&
			memcmp(rt.nh_hwaddr, e.ns.peer_mac, 6) == 0,
			"peer MAC");
	/* from our link-local address explicitly */
	src = sa(ours, e.ns.ifindex);
	tu_child_assert_ok(kal_route_resolve(e.nl, (void *)&dst, (void *)&src,
					     0, &rt));
	tu_child_assert(rt.nh_hwaddr_len == 6, "peer MAC from the cache");

	/* without a scope, fe80::/10 is ambiguous */
	dst = sa(peer, 0);
	tu_child_assert_errno(kal_route_resolve(e.nl, (void *)&dst, NULL, 0,
						&rt), EINVAL);
	tu_child_assert(tu_log_count(e.log, G_LOG_LEVEL_WARNING,
				     "needs a scope id") == 1,
			"no log line");
	kalnet_teardown(&e);
}

START_TEST(test_route_linklocal)
{
	tu_run_child(child_route_linklocal, NULL);
}
END_TEST

static void child_route_local(void *unused)
{
	static const char *const dsts[] = { "127.0.0.1", "::1", "10.77.0.1",
					    "fd00:77::1" };
	struct kal_link *lo;
	struct kal_route rt;
	struct kalnet e;
	char b[ADDR_STRLEN];
	unsigned int i;

	kalnet_setup(&e);
	lo = kal_nl_link_by_name(e.nl, "lo", NULL);
	tu_child_assert(lo != NULL, "no lo");
	for (i = 0; i < G_N_ELEMENTS(dsts); i++) {
		tu_child_assert_ok(kal_route_resolve(e.nl, SA(dsts[i]), NULL,
						     RESOLVE_MS, &rt));
		tu_child_assert(rt.type == KAL_ROUTE_LOCAL, "%s: type %d",
				dsts[i], rt.type);
		tu_child_assert(rt.ifindex == lo->ifindex &&
				strcmp(rt.ifname, "lo") == 0,
				"%s: via %s[%d]", dsts[i], rt.ifname,
				rt.ifindex);
		tu_child_assert(sa_is(&rt.src, dsts[i], 0), "%s: src %s",
				dsts[i], str(&rt.src, b));
		tu_child_assert(rt.gateway.ss_family == AF_UNSPEC &&
				rt.nh_hwaddr_len == 0, "%s: next hop",
				dsts[i]);
	}
	kal_link_free(lo);
	kalnet_teardown(&e);
}

START_TEST(test_route_local)
{
	tu_run_child(child_route_local, NULL);
}
END_TEST

static void child_route_errors(void *unused)
{
	static const struct {
		const char *dst;
		int err;
		const char *what;
	} cases[] = {
		{ "10.99.1.1", EHOSTUNREACH, "unreachable route" },
		{ "fd00:99:1::1", EHOSTUNREACH, "unreachable route" },
		{ "10.99.2.1", EHOSTUNREACH, "prohibit route" },
		{ "fd00:99:2::1", EHOSTUNREACH, "prohibit route" },
		{ "10.99.3.1", ENETUNREACH, "blackhole route" },
		{ "fd00:99:3::1", ENETUNREACH, "blackhole route" },
		{ "192.0.2.1", ENETUNREACH, "no route" },
		{ "2001:db8::1", ENETUNREACH, "no route" },
	};
	struct sockaddr_un_like {
		sa_family_t family;
		char path[32];
	} unix_addr = { AF_UNIX, "x" };
	struct kal_route rt;
	struct kalnet e;
	unsigned int i;

	kalnet_setup(&e);
	for (i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *line = g_strdup_printf(
			"route to %s: %s", cases[i].dst, cases[i].what);
		g_autofree char *text = NULL;

		tu_child_assert_errno(kal_route_resolve(e.nl, SA(cases[i].dst),
							NULL, RESOLVE_MS,
							&rt), cases[i].err);
		text = tu_log_text(e.log);
		tu_child_assert(tu_log_count(e.log, G_LOG_LEVEL_WARNING,
					     line) == 1,
				"no \"%s\" in the log:\n%s", line, text);
	}

	/* not a host */
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("10.77.0.255"), NULL,
						0, &rt), EHOSTUNREACH);
	tu_child_assert(tu_log_count(e.log, G_LOG_LEVEL_WARNING,
				     "route to 10.77.0.255: a broadcast "
				     "destination") == 1, "broadcast log");

	/* a source that is not ours */
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("10.77.0.2"),
						SA("10.77.0.9"), 0, &rt),
			      EADDRNOTAVAIL);
	tu_child_assert(tu_log_count(e.log, G_LOG_LEVEL_WARNING,
				     "route from 10.77.0.9: not one of our "
				     "addresses") == 1, "src log");
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("fd00:77::2"),
						SA("fd00:77::9"), 0, &rt),
			      EADDRNOTAVAIL);
	/* families */
	tu_child_assert_errno(kal_route_resolve(e.nl, (void *)&unix_addr,
						NULL, 0, &rt), EAFNOSUPPORT);
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("10.77.0.2"),
						SA("fd00:77::1"), 0, &rt),
			      EAFNOSUPPORT);
	kalnet_teardown(&e);
}

START_TEST(test_route_errors)
{
	tu_run_child(child_route_errors, NULL);
}
END_TEST

static void child_route_timeout(void *unused)
{
	struct kal_route rt;
	struct kalnet e;
	char b[ADDR_STRLEN];

	kalnet_setup(&e);
	/* on-link, but nobody has that address */
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("10.77.0.99"), NULL,
						300, &rt), ETIMEDOUT);
	/* everything but the MAC is there */
	tu_child_assert(rt.ifindex == e.ns.ifindex && rt.nh_hwaddr_len == 0 &&
			sa_is(&rt.src, "10.77.0.1", 0) &&
			sa_is(&rt.dst, "10.77.0.99", 0), "route %s[%d] src %s",
			rt.ifname, rt.ifindex, str(&rt.src, b));
	tu_child_assert(tu_log_count(e.log, G_LOG_LEVEL_WARNING,
				     "route to 10.77.0.99: next hop 10.77.0.99 "
				     "on kal0 did not answer") == 1,
			"timeout log");
	tu_child_assert_errno(kal_route_resolve(e.nl, SA("fd00:77::99"), NULL,
						300, &rt), ETIMEDOUT);
	kalnet_teardown(&e);
}

START_TEST(test_route_timeout)
{
	tu_run_child(child_route_timeout, NULL);
}
END_TEST

TCase *tcase_kal_route(void)
{
	TCase *tc = tcase_create("route");

	tcase_add_test(tc, test_route_onlink);
	tcase_add_test(tc, test_route_gateway);
	tcase_add_test(tc, test_route_linklocal);
	tcase_add_test(tc, test_route_local);
	tcase_add_test(tc, test_route_errors);
	tcase_add_test(tc, test_route_timeout);
	/* a safety net for a hung child, not a measurement */
	tcase_set_timeout(tc, 120);
	return tc;
}
