/* SPDX-License-Identifier: MIT */
/*
 * Private network namespaces for tests that need real links: a "local"
 * namespace the test runs in and a "peer" namespace on the other end of a
 * veth pair, both set up through libnl. Call only in a child made with
 * tu_fork_child()/tu_run_child(): the namespaces replace the calling
 * thread's and vanish with the child.
 */
#ifndef TESTS_TESTUTIL_NS_H
#define TESTS_TESTUTIL_NS_H

#include <stdbool.h>
#include <stdint.h>

struct nl_sock;

struct tu_ns {
	int local_fd;		 /* /proc/thread-self/ns/net of each side */
	int peer_fd;
	struct nl_sock *sk;	 /* netlink in the local namespace */
	struct nl_sock *peer_sk; /* netlink in the peer namespace */
	char ifname[16];	 /* the local veth end */
	char peer_ifname[16];	 /* its other end, in the peer namespace */
	int ifindex;
	int peer_ifindex;
	uint8_t mac[6];
	uint8_t peer_mac[6];
};

/*
 * Move the calling thread into a new network namespace with lo up, create
 * a second one, and join them with a veth pair (@ifname here, @peer_ifname
 * there), both ends up. IPv6 duplicate address detection is off in both,
 * so addresses (link-local included) are usable at once. Asserts (in the
 * child) on failure.
 */
void tu_ns_setup(struct tu_ns *ns, const char *ifname,
		 const char *peer_ifname);
void tu_ns_teardown(struct tu_ns *ns);

/* Add "10.1.2.3/24" or "fd00::1/64" to @ifindex through @sk; returns 0 or
 * a negative libnl error. */
int tu_ns_addr_add(struct nl_sock *sk, int ifindex, const char *cidr);
int tu_ns_addr_del(struct nl_sock *sk, int ifindex, const char *cidr);

/* Add a route to @dst ("10.8.0.0/24"): via @gateway out of @ifindex when
 * @type is RTN_UNICAST, or an RTN_UNREACHABLE / RTN_PROHIBIT /
 * RTN_BLACKHOLE route (gateway NULL, ifindex 0); with an MTU metric if
 * @mtu is not 0. */
int tu_ns_route_add(struct nl_sock *sk, const char *dst, int type,
		    const char *gateway, int ifindex, uint32_t mtu);

/* Set a link's IFF_UP, or its MTU (mtu 0: leave). */
int tu_ns_link_set(struct nl_sock *sk, int ifindex, bool up, uint32_t mtu);

/* Create a veth pair with both ends in the namespace of @sk; returns the
 * ifindex of @name or a negative libnl error. Delete with
 * tu_ns_link_del(). */
int tu_ns_veth_add(struct nl_sock *sk, const char *name,
		   const char *peer_name);
int tu_ns_link_del(struct nl_sock *sk, int ifindex);

/* The IPv6 link-local address of @ifindex in the namespace of @sk, as
 * text without scope; asserts that there is one. The caller frees it. */
char *tu_ns_linklocal(struct nl_sock *sk, int ifindex);

#endif
