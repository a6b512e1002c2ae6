/* SPDX-License-Identifier: MIT */
/*
 * The test network of the kal-netlink suite, built in a fork()ed child
 * (tu_run_child) as a pair of private network namespaces:
 *
 *   local namespace (the test)           peer namespace
 *   lo     127.0.0.1/8 ::1               lo
 *   kal0   10.77.0.1/24 fd00:77::1/64 -- kalp0  10.77.0.2/24 fd00:77::2/64
 *   10.88.0.0/24 via 10.77.0.2, fd00:88::/64 via fd00:77::2
 *   10.88.1.0/24 via 10.77.0.2 mtu 1280
 *   unreachable 10.99.1.0/24 fd00:99:1::/48
 *   prohibit    10.99.2.0/24 fd00:99:2::/48
 *   blackhole   10.99.3.0/24 fd00:99:3::/48
 *   (no default route)
 *
 * Expected values come from the kernel side (the peer's MAC as its own
 * namespace reports it), never from kal.
 */
#ifndef TESTS_TESTUTIL_KAL_H
#define TESTS_TESTUTIL_KAL_H

#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <netlink/errno.h>

#include "kal/kal.h"
#include "tests/testutil_ns.h"
#include "tests/testutil.h"

/* How long a test waits for something that takes milliseconds, before it
 * calls it a failure. Not a measurement. */
#define EVENT_WAIT_US (10 * G_TIME_SPAN_SECOND)
#define RESOLVE_MS 5000

/* Room for kal_addr_str() with a scope id. */
#define ADDR_STRLEN (INET6_ADDRSTRLEN + 12)

/* A libnl call (negative NLE_* on failure) succeeded, in the child. */
#define ns_ok(expr)                                                         \
	do {                                                                \
		int ns_ok_rc_ = (expr);                                     \
		tu_child_assert(ns_ok_rc_ >= 0, "%s: %s", #expr,            \
				nl_geterror(ns_ok_rc_));                    \
	} while (0)

struct kalnet {
	struct tu_ns ns;
	struct kal_nl *nl;
	struct tu_log_capture *log; /* "hostrdma-kal" */
};

/* Build the network, start capturing kal's log, open a kal_nl. */
void kalnet_setup(struct kalnet *e);
void kalnet_teardown(struct kalnet *e);

/* "10.1.2.3" or "fd00::1" (with @scope for link-local) as a sockaddr. */
static inline struct sockaddr_storage sa(const char *text, int scope)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *sin6 = (void *)&ss;

		sin6->sin6_family = AF_INET6;
		tu_child_assert(inet_pton(AF_INET6, text, &sin6->sin6_addr) ==
				1, "bad address %s", text);
		sin6->sin6_scope_id = (uint32_t)scope;
	} else {
		struct sockaddr_in *sin = (void *)&ss;

		sin->sin_family = AF_INET;
		tu_child_assert(inet_pton(AF_INET, text, &sin->sin_addr) == 1,
				"bad address %s", text);
	}
	return ss;
}

/* sa() for call arguments: a few results stay valid at once, per thread
 * (callbacks use it on kal's monitor thread). */
static inline const struct sockaddr *SA(const char *text)
{
	static __thread struct sockaddr_storage ring[4];
	static __thread unsigned int next;
	struct sockaddr_storage *ss = &ring[next++ % G_N_ELEMENTS(ring)];

	*ss = sa(text, 0);
	return (const struct sockaddr *)ss;
}

/* @ss holds the address @text (and @scope, for IPv6). */
static inline bool sa_is(const struct sockaddr_storage *ss, const char *text,
			 int scope)
{
	struct sockaddr_storage want = sa(text, scope);

	if (ss->ss_family != want.ss_family)
		return false;
	if (ss->ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)ss)->sin_addr,
			      &((struct sockaddr_in *)&want)->sin_addr,
			      4) == 0;
	return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr,
		      &((struct sockaddr_in6 *)&want)->sin6_addr, 16) == 0 &&
	       ((const struct sockaddr_in6 *)ss)->sin6_scope_id ==
		       (uint32_t)scope;
}

/* kal_addr_str into @buf of ADDR_STRLEN bytes. */
static inline const char *str(const struct sockaddr_storage *ss, char *buf)
{
	return kal_addr_str((const struct sockaddr *)ss, buf, ADDR_STRLEN);
}

/* The route resolution test cases of the kal-netlink suite. */
TCase *tcase_kal_route(void);

#endif
