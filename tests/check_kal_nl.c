/* SPDX-License-Identifier: MIT */
/*
 * kal-netlink: links, addresses and change events, in the test network of
 * testutil_kal.h; route resolution is in check_kal_route.c.
 */
#include "config.h"

#include <arpa/inet.h>

#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>

#include "kal/kal_int.h"
#include "tests/testutil_kal.h"
#include "tests/suites.h"

static bool link_has_addr(const struct kal_link *link, const char *text,
			  int scope)
{
	guint i;

	for (i = 0; i < link->addrs->len; i++)
		if (sa_is(&g_array_index(link->addrs, struct sockaddr_storage,
					 i), text, scope))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Links                                                               */
/* ------------------------------------------------------------------ */

static void child_links(void *unused)
{
	struct kalnet e;
	GPtrArray *links;
	struct kal_link *lo = NULL, *veth = NULL, *link;
	g_autofree char *ll = NULL;
	int err = 0;
	guint i;

	kalnet_setup(&e);
	ll = tu_ns_linklocal(e.ns.sk, e.ns.ifindex);
	links = kal_nl_links(e.nl);
	for (i = 0; i < links->len; i++) {
		link = links->pdata[i];
		if (i > 0)
			tu_child_assert(link->ifindex >
					((struct kal_link *)links->pdata[i - 1])
						->ifindex, "not by index");
		if (strcmp(link->ifname, "lo") == 0)
			lo = link;
		else if (strcmp(link->ifname, "kal0") == 0)
			veth = link;
		/* the peer end lives in the other namespace */
		tu_child_assert(strcmp(link->ifname, "kalp0") != 0,
				"peer link visible");
	}
	tu_child_assert(lo && veth, "lo %p kal0 %p", (void *)lo, (void *)veth);

	tu_child_assert(lo->flags == (KAL_LINK_UP | KAL_LINK_RUNNING |
				      KAL_LINK_LOOPBACK), "lo flags %#x",
			lo->flags);
	tu_child_assert(link_has_addr(lo, "127.0.0.1", 0), "lo 127.0.0.1");
	tu_child_assert(link_has_addr(lo, "::1", 0), "lo ::1");
	tu_child_assert(lo->addrs->len == 2, "lo has %u addresses",
			lo->addrs->len);

	tu_child_assert(veth->ifindex == e.ns.ifindex, "kal0 index %d/%d",
			veth->ifindex, e.ns.ifindex);
	tu_child_assert(veth->flags == (KAL_LINK_UP | KAL_LINK_RUNNING),
			"kal0 flags %#x", veth->flags);
	tu_child_assert(veth->mtu == 1500, "kal0 mtu %u", veth->mtu);
	tu_child_assert(veth->arptype == 1 /* ARPHRD_ETHER */, "arptype %u",
			veth->arptype);
	tu_child_assert(veth->hwaddr_len == 6 &&
			memcmp(veth->hwaddr, e.ns.mac, 6) == 0, "kal0 MAC");
	tu_child_assert(link_has_addr(veth, "10.77.0.1", 0), "10.77.0.1");
	tu_child_assert(link_has_addr(veth, "fd00:77::1", 0), "fd00:77::1");
	tu_child_assert(link_has_addr(veth, ll, e.ns.ifindex),
			"link-local %s with scope", ll);
	tu_child_assert(veth->addrs->len == 3, "kal0 has %u addresses",
			veth->addrs->len);

	link = kal_nl_link_by_index(e.nl, e.ns.ifindex, &err);
	tu_child_assert(link && err == 0 && strcmp(link->ifname, "kal0") == 0 &&
			link->addrs->len == 3, "by index");
	kal_link_free(link);
	link = kal_nl_link_by_name(e.nl, "lo", &err);
	tu_child_assert(link && err == 0 && link->ifindex == lo->ifindex &&
			link_has_addr(link, "::1", 0), "by name");
	kal_link_free(link);
	link = kal_nl_link_by_name(e.nl, "kalp0", &err);
	tu_child_assert(!link && err == -ENODEV, "peer by name: %d", err);
	link = kal_nl_link_by_index(e.nl, 4242, &err);
	tu_child_assert(!link && err == -ENODEV, "index 4242: %d", err);

	g_ptr_array_unref(links);
	kalnet_teardown(&e);
}

START_TEST(test_nl_links)
{
	tu_run_child(child_links, NULL);
}
END_TEST

/*
 * A bridge with an address, one port enslaved (the interop lab's
 * rdmabr0): libnl may keep the bridge master as its AF_BRIDGE object and
 * a port also has one (master = the bridge). kal_nl_links() lists every
 * ifindex once, the bridge with its address, the port as an interface of
 * its own without the bridge's address; lookups by index and by name find
 * the bridge too.
 */
static int bridge_check(struct kalnet *e, int br, int port, bool final)
{
	GPtrArray *links = kal_nl_links(e->nl);
	const struct kal_link *b = NULL, *pt = NULL;
	int n_br = 0, n_port = 0;
	guint i, j;

	for (i = 0; i < links->len; i++) {
		const struct kal_link *l = links->pdata[i];

		for (j = 0; j < i; j++)
			tu_child_assert(((struct kal_link *)links->pdata[j])
						->ifindex != l->ifindex,
					"ifindex %d (%s) listed twice",
					l->ifindex, l->ifname);
		if (l->ifindex == br) {
			b = l;
			n_br++;
		} else if (l->ifindex == port) {
			pt = l;
			n_port++;
		}
	}
	if (!final && (!b || !link_has_addr(b, "10.66.0.1", 0))) {
		g_ptr_array_unref(links);
		return -EAGAIN;
	}
	tu_child_assert(n_br == 1 && n_port == 1, "bridge %d, port %d times",
			n_br, n_port);
	tu_child_assert(strcmp(b->ifname, "kalbr0") == 0, "bridge name %s",
			b->ifname);
	tu_child_assert(b->flags & KAL_LINK_UP, "bridge flags %#x", b->flags);
	tu_child_assert(link_has_addr(b, "10.66.0.1", 0), "bridge address");
	tu_child_assert(strcmp(pt->ifname, "kalbp0") == 0, "port name %s",
			pt->ifname);
	tu_child_assert(!link_has_addr(pt, "10.66.0.1", 0),
			"the port carries the bridge's address");
	g_ptr_array_unref(links);
	return 0;
}

static struct kal_event *next_event(GAsyncQueue *q, int ifindex,
				     bool (*filter)(const struct kal_event *));
static void queue_event(const struct kal_event *ev, void *q);

static bool is_link_down(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_LINK_DOWN;
}

static bool is_link_up(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_LINK_UP;
}

static void bridge_events(struct kalnet *e, int br)
{
	GAsyncQueue *q = g_async_queue_new_full(g_free);
	gint64 end = g_get_monotonic_time() + EVENT_WAIT_US;
	struct kal_event *ev;
	guint id;

	/* Up and running first (the port brings the carrier). */
	for (;;) {
		struct kal_link *l = kal_nl_link_by_index(e->nl, br, NULL);
		bool running = l && (l->flags & KAL_LINK_RUNNING);

		kal_link_free(l);
		if (running)
			break;
		tu_child_assert(g_get_monotonic_time() < end,
				"bridge not running");
		g_usleep(10000);
	}
	id = kal_nl_subscribe(e->nl, queue_event, q);
	tu_child_assert(id > 0, "id %u", id);
	ns_ok(tu_ns_link_set(e->ns.sk, br, false, 0));
	ev = next_event(q, br, is_link_down);
	tu_child_assert(ev->type == KAL_EVENT_LINK_DOWN &&
			strcmp(ev->ifname, "kalbr0") == 0, "bridge: %s %s",
			kal_event_type_name(ev->type), ev->ifname);
	g_free(ev);
	ns_ok(tu_ns_link_set(e->ns.sk, br, true, 0));
	ev = next_event(q, br, is_link_up);
	tu_child_assert(ev->type == KAL_EVENT_LINK_UP, "bridge: %s",
			kal_event_type_name(ev->type));
	g_free(ev);
	kal_nl_unsubscribe(e->nl, id);
	g_async_queue_unref(q);
}

static void child_bridge(void *unused)
{
	struct rtnl_link *rl = NULL;
	struct kal_link *link;
	struct kalnet e;
	gint64 end;
	int br, port, err = 0, rc;

	kalnet_setup(&e);
	ns_ok(rtnl_link_bridge_add(e.ns.sk, "kalbr0"));
	ns_ok(rtnl_link_get_kernel(e.ns.sk, 0, "kalbr0", &rl));
	br = rtnl_link_get_ifindex(rl);
	rtnl_link_put(rl);
	port = tu_ns_veth_add(e.ns.sk, "kalbp0", "kalbp1");
	tu_child_assert(port > 0, "veth: %s", nl_geterror(port));
	ns_ok(rtnl_link_get_kernel(e.ns.sk, 0, "kalbp1", &rl));
	ns_ok(tu_ns_link_set(e.ns.sk, rtnl_link_get_ifindex(rl), true, 0));
	rtnl_link_put(rl);
	ns_ok(rtnl_link_enslave_ifindex(e.ns.sk, br, port));
	ns_ok(tu_ns_link_set(e.ns.sk, port, true, 0));
	ns_ok(tu_ns_link_set(e.ns.sk, br, true, 0));
	ns_ok(tu_ns_addr_add(e.ns.sk, br, "10.66.0.1/24"));
	/* kal's caches follow the kernel's notifications. */
	end = g_get_monotonic_time() + EVENT_WAIT_US;
	while ((rc = bridge_check(&e, br, port, false)) == -EAGAIN &&
	       g_get_monotonic_time() < end)
		g_usleep(10000);
	bridge_check(&e, br, port, true);

	link = kal_nl_link_by_index(e.nl, br, &err);
	tu_child_assert(link && !err && link_has_addr(link, "10.66.0.1", 0),
			"bridge by index: %d", err);
	kal_link_free(link);
	link = kal_nl_link_by_name(e.nl, "kalbr0", &err);
	tu_child_assert(link && !err && link->ifindex == br &&
			link_has_addr(link, "10.66.0.1", 0),
			"bridge by name: %d", err);
	kal_link_free(link);

	/* The bridge's state changes are events about it. */
	bridge_events(&e, br);

	/* The port's own notifications (down, up) change nothing. */
	ns_ok(tu_ns_link_set(e.ns.sk, port, false, 0));
	ns_ok(tu_ns_link_set(e.ns.sk, port, true, 0));
	ns_ok(tu_ns_link_del(e.ns.sk, port));
	end = g_get_monotonic_time() + EVENT_WAIT_US;
	for (;;) {
		GPtrArray *links = kal_nl_links(e.nl);
		bool gone = true;
		guint i;

		for (i = 0; i < links->len; i++)
			if (((struct kal_link *)links->pdata[i])->ifindex ==
			    port)
				gone = false;
		g_ptr_array_unref(links);
		if (gone || g_get_monotonic_time() >= end)
			break;
		g_usleep(10000);
	}
	/* Without a port: the bridge still listed once, with its address. */
	{
		GPtrArray *links = kal_nl_links(e.nl);
		int n = 0;
		guint i;

		for (i = 0; i < links->len; i++) {
			link = links->pdata[i];
			if (link->ifindex == br) {
				n++;
				tu_child_assert(link_has_addr(link,
							      "10.66.0.1", 0),
						"no address once portless");
			}
		}
		tu_child_assert(n == 1, "bridge listed %d times", n);
		g_ptr_array_unref(links);
	}
	kalnet_teardown(&e);
}

START_TEST(test_nl_links_bridge)
{
	tu_run_child(child_bridge, NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static void queue_event(const struct kal_event *ev, void *q)
{
	g_async_queue_push(q, g_memdup2(ev, sizeof(*ev)));
}

typedef bool (*event_filter)(const struct kal_event *ev);

static bool is_link_state(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_LINK_UP || ev->type == KAL_EVENT_LINK_DOWN;
}

static bool is_addr(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_ADDR_ADD || ev->type == KAL_EVENT_ADDR_DEL;
}

static bool is_link_life(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_LINK_NEW || ev->type == KAL_EVENT_LINK_DEL;
}

static bool is_link_change(const struct kal_event *ev)
{
	return ev->type == KAL_EVENT_LINK_CHANGE;
}

/* The next event for @ifindex that @filter accepts (others are dropped);
 * the caller frees it. Fails the child if none comes. */
static struct kal_event *next_event(GAsyncQueue *q, int ifindex,
				    event_filter filter)
{
	gint64 end = g_get_monotonic_time() + EVENT_WAIT_US;

	for (;;) {
		gint64 left = end - g_get_monotonic_time();
		struct kal_event *ev;

		tu_child_assert(left > 0, "no event for ifindex %d", ifindex);
		ev = g_async_queue_timeout_pop(q, (guint64)left);
		tu_child_assert(ev != NULL, "no event for ifindex %d", ifindex);
		if (ev->ifindex == ifindex && filter(ev))
			return ev;
		g_free(ev);
	}
}

static void child_events_link(void *unused)
{
	GAsyncQueue *q = g_async_queue_new_full(g_free);
	struct kal_event *ev;
	struct kalnet e;
	guint id;
	int idx;

	kalnet_setup(&e);
	id = kal_nl_subscribe(e.nl, queue_event, q);
	tu_child_assert(id > 0, "id %u", id);

	ns_ok(tu_ns_link_set(e.ns.sk, e.ns.ifindex, false, 0));
	ev = next_event(q, e.ns.ifindex, is_link_state);
	tu_child_assert(ev->type == KAL_EVENT_LINK_DOWN, "got %s",
			kal_event_type_name(ev->type));
	tu_child_assert(strcmp(ev->ifname, "kal0") == 0 &&
			!(ev->link_flags & KAL_LINK_UP), "down: %s %#x",
			ev->ifname, ev->link_flags);
	g_free(ev);

	ns_ok(tu_ns_link_set(e.ns.sk, e.ns.ifindex, true, 0));
	ev = next_event(q, e.ns.ifindex, is_link_state);
	tu_child_assert(ev->type == KAL_EVENT_LINK_UP, "got %s",
			kal_event_type_name(ev->type));
	tu_child_assert(ev->link_flags == (KAL_LINK_UP | KAL_LINK_RUNNING),
			"up: flags %#x", ev->link_flags);
	g_free(ev);

	ns_ok(tu_ns_link_set(e.ns.sk, e.ns.ifindex, true, 1400));
	ev = next_event(q, e.ns.ifindex, is_link_change);
	tu_child_assert(ev->mtu == 1400, "mtu %u", ev->mtu);
	g_free(ev);

	/* a new link and its removal */
	idx = tu_ns_veth_add(e.ns.sk, "kal1", "kal1p");
	tu_child_assert(idx > 0, "veth: %s", nl_geterror(idx));
	ev = next_event(q, idx, is_link_life);
	tu_child_assert(ev->type == KAL_EVENT_LINK_NEW &&
			strcmp(ev->ifname, "kal1") == 0, "got %s %s",
			kal_event_type_name(ev->type), ev->ifname);
	g_free(ev);
	ns_ok(tu_ns_link_del(e.ns.sk, idx));
	ev = next_event(q, idx, is_link_life);
	tu_child_assert(ev->type == KAL_EVENT_LINK_DEL, "got %s",
			kal_event_type_name(ev->type));
	g_free(ev);

	kal_nl_unsubscribe(e.nl, id);
	kalnet_teardown(&e);
	g_async_queue_unref(q);
}

START_TEST(test_events_link)
{
	tu_run_child(child_events_link, NULL);
}
END_TEST

static void child_events_addr(void *unused)
{
	static const struct {
		const char *cidr, *addr;
		uint8_t prefixlen;
	} cases[] = {
		{ "10.77.5.1/24", "10.77.5.1", 24 },
		{ "fd00:77:5::1/64", "fd00:77:5::1", 64 },
	};
	GAsyncQueue *q = g_async_queue_new_full(g_free);
	struct kal_event *ev;
	struct kalnet e;
	char b[ADDR_STRLEN];
	unsigned int i;
	guint id;

	kalnet_setup(&e);
	id = kal_nl_subscribe(e.nl, queue_event, q);
	for (i = 0; i < G_N_ELEMENTS(cases); i++) {
		ns_ok(tu_ns_addr_add(e.ns.sk, e.ns.ifindex,
						   cases[i].cidr));
		ev = next_event(q, e.ns.ifindex, is_addr);
		tu_child_assert(ev->type == KAL_EVENT_ADDR_ADD &&
				sa_is(&ev->addr, cases[i].addr, 0) &&
				ev->prefixlen == cases[i].prefixlen &&
				strcmp(ev->ifname, "kal0") == 0,
				"got %s %s/%u on %s",
				kal_event_type_name(ev->type),
				str(&ev->addr, b), ev->prefixlen, ev->ifname);
		g_free(ev);

		ns_ok(tu_ns_addr_del(e.ns.sk, e.ns.ifindex,
						   cases[i].cidr));
		ev = next_event(q, e.ns.ifindex, is_addr);
		tu_child_assert(ev->type == KAL_EVENT_ADDR_DEL &&
				sa_is(&ev->addr, cases[i].addr, 0) &&
				ev->prefixlen == cases[i].prefixlen,
				"got %s %s/%u", kal_event_type_name(ev->type),
				str(&ev->addr, b), ev->prefixlen);
		g_free(ev);
	}
	kal_nl_unsubscribe(e.nl, id);
	kalnet_teardown(&e);
	g_async_queue_unref(q);
}

START_TEST(test_events_addr)
{
	tu_run_child(child_events_addr, NULL);
}
END_TEST

/* Subscription guarantees. */
struct sub_state {
	struct kal_nl *nl;
	guint self_id;
	gint calls;		 /* atomic */
	gint entered;		 /* atomic */
	gint finished;		 /* atomic */
	bool reentry_ok;
	int mtu_seen;
};

/* Blocks inside its first call, to be unsubscribed meanwhile. */
static void slow_cb(const struct kal_event *ev, void *p)
{
	struct sub_state *s = p;

	if (g_atomic_int_add(&s->calls, 1) > 0)
		return;
	g_atomic_int_set(&s->entered, 1);
	g_usleep(200 * 1000);
	g_atomic_int_set(&s->finished, 1);
}

/* Unsubscribes itself from its first call. */
static void once_cb(const struct kal_event *ev, void *p)
{
	struct sub_state *s = p;

	g_atomic_int_add(&s->calls, 1);
	kal_nl_unsubscribe(s->nl, s->self_id);
}

/* Calls back into kal: snapshots and a route lookup. */
static void reentrant_cb(const struct kal_event *ev, void *p)
{
	struct sub_state *s = p;
	struct kal_link *link;
	struct kal_route rt;

	if (ev->type != KAL_EVENT_LINK_CHANGE)
		return;
	link = kal_nl_link_by_index(s->nl, ev->ifindex, NULL);
	/* the cache already holds what the event says */
	s->mtu_seen = link ? (int)link->mtu : -1;
	kal_link_free(link);
	s->reentry_ok = kal_route_resolve(s->nl, SA("127.0.0.1"), NULL, 0,
					  &rt) == 0 &&
			rt.type == KAL_ROUTE_LOCAL;
	g_atomic_int_add(&s->calls, 1);
}

static void child_subscribe(void *unused)
{
	GAsyncQueue *q = g_async_queue_new_full(g_free);
	struct sub_state slow = { 0 }, once = { 0 }, re = { 0 };
	struct kal_event *ev;
	struct kalnet e;
	guint slow_id, re_id, last_id;
	gint64 end;

	kalnet_setup(&e);
	slow.nl = once.nl = re.nl = e.nl;
	slow_id = kal_nl_subscribe(e.nl, slow_cb, &slow);
	once.self_id = kal_nl_subscribe(e.nl, once_cb, &once);
	re_id = kal_nl_subscribe(e.nl, reentrant_cb, &re);
	/* subscribed last, so it hears of each event after the others */
	last_id = kal_nl_subscribe(e.nl, queue_event, q);
	tu_child_assert(slow_id && once.self_id && re_id && last_id &&
			slow_id != once.self_id && re_id != last_id, "ids");

	ns_ok(tu_ns_link_set(e.ns.sk, e.ns.ifindex, true, 1300));
	end = g_get_monotonic_time() + EVENT_WAIT_US;
	while (!g_atomic_int_get(&slow.entered) &&
	       g_get_monotonic_time() < end)
		g_usleep(1000);
	tu_child_assert(g_atomic_int_get(&slow.entered), "slow_cb not called");
	/* returns only once the running callback has */
	kal_nl_unsubscribe(e.nl, slow_id);
	tu_child_assert(g_atomic_int_get(&slow.finished),
			"unsubscribe returned while the callback ran");

	ev = next_event(q, e.ns.ifindex, is_link_change);
	g_free(ev);
	tu_child_assert(re.mtu_seen == 1300 && re.reentry_ok,
			"from a callback: mtu %d, route %d", re.mtu_seen,
			re.reentry_ok);

	/* a second change: the unsubscribed ones hear nothing of it */
	ns_ok(tu_ns_link_set(e.ns.sk, e.ns.ifindex, true, 1200));
	ev = next_event(q, e.ns.ifindex, is_link_change);
	tu_child_assert(ev->mtu == 1200, "mtu %u", ev->mtu);
	g_free(ev);
	tu_child_assert(g_atomic_int_get(&slow.calls) == 1, "slow called %d",
			slow.calls);
	tu_child_assert(g_atomic_int_get(&once.calls) == 1, "once called %d",
			once.calls);
	tu_child_assert(g_atomic_int_get(&re.calls) == 2, "re called %d",
			re.calls);
	tu_child_assert(re.mtu_seen == 1200, "mtu %d", re.mtu_seen);

	/* unknown ids are ignored; close frees what is still subscribed */
	kal_nl_unsubscribe(e.nl, 9999);
	kal_nl_unsubscribe(e.nl, re_id);
	kalnet_teardown(&e);
	g_async_queue_unref(q);
}

START_TEST(test_subscribe)
{
	tu_run_child(child_subscribe, NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Small pieces, no namespace needed                                   */
/* ------------------------------------------------------------------ */

START_TEST(test_addr_str)
{
	char buf[ADDR_STRLEN];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct sockaddr other = { .sa_family = AF_UNIX };

	ck_assert_int_eq(inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr), 1);
	sin.sin_port = htons(4791);
	ck_assert_str_eq(kal_addr_str((void *)&sin, buf, sizeof(buf)),
			 "192.0.2.7");
	ck_assert_int_eq(inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr), 1);
	ck_assert_str_eq(kal_addr_str((void *)&sin6, buf, sizeof(buf)),
			 "fe80::1");
	sin6.sin6_scope_id = 3;
	ck_assert_str_eq(kal_addr_str((void *)&sin6, buf, sizeof(buf)),
			 "fe80::1%3");
	ck_assert_str_eq(kal_addr_str(&other, buf, sizeof(buf)),
			 "(family 1)");
	ck_assert_str_eq(kal_addr_str(NULL, buf, sizeof(buf)), "(none)");
}
END_TEST

START_TEST(test_event_names)
{
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_LINK_NEW), "LINK_NEW");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_LINK_DEL), "LINK_DEL");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_LINK_UP), "LINK_UP");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_LINK_DOWN),
			 "LINK_DOWN");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_LINK_CHANGE),
			 "LINK_CHANGE");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_ADDR_ADD), "ADDR_ADD");
	ck_assert_str_eq(kal_event_type_name(KAL_EVENT_ADDR_DEL), "ADDR_DEL");
	ck_assert_str_eq(kal_event_type_name(0), "UNKNOWN");
	ck_assert_str_eq(kal_event_type_name(99), "UNKNOWN");
}
END_TEST

START_TEST(test_nle_errno)
{
	ck_assert_int_eq(kal_nle_errno(0), 0);
	ck_assert_int_eq(kal_nle_errno(-NLE_NODEV), -ENODEV);
	ck_assert_int_eq(kal_nle_errno(-NLE_NOMEM), -ENOMEM);
	ck_assert_int_eq(kal_nle_errno(-NLE_NOADDR), -EADDRNOTAVAIL);
	ck_assert_int_eq(kal_nle_errno(-NLE_PERM), -EPERM);
	ck_assert_int_eq(kal_nle_errno(-NLE_OBJ_NOTFOUND), -ENOENT);
	ck_assert_int_eq(kal_nle_errno(-NLE_EXIST), -EEXIST);
	ck_assert_int_eq(kal_nle_errno(-NLE_AF_NOSUPPORT), -EAFNOSUPPORT);
	/* codes newer than kal knows */
	ck_assert_int_eq(kal_nle_errno(-1000), -EIO);
}
END_TEST

Suite *suite_kal_netlink(void)
{
	Suite *s = suite_create("kal-netlink");
	TCase *tc = tcase_create("netns");
	TCase *plain = tcase_create("plain");

	tcase_add_test(tc, test_nl_links);
	tcase_add_test(tc, test_nl_links_bridge);
	tcase_add_test(tc, test_events_link);
	tcase_add_test(tc, test_events_addr);
	tcase_add_test(tc, test_subscribe);
	/* a safety net for a hung child, not a measurement */
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	suite_add_tcase(s, tcase_kal_route());

	tcase_add_test(plain, test_addr_str);
	tcase_add_test(plain, test_event_names);
	tcase_add_test(plain, test_nle_errno);
	suite_add_tcase(s, plain);
	return s;
}
