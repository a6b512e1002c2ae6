/* SPDX-License-Identifier: MIT */
/*
 * Route resolution: ask the kernel how it would send to an address
 * (RTM_GETROUTE, what `ip route get` does), so policy routing, VRFs and
 * every table are honoured, then find the next hop's link-layer address in
 * the neighbour cache, starting neighbour resolution if asked to wait.
 *
 * The kernel answers an RTM_GETROUTE for an unusable destination with an
 * error rather than a route, and the error tells the route type:
 *
 *   kernel errno   meaning                    kal returns
 *   ENETUNREACH    no route at all            -ENETUNREACH
 *   EHOSTUNREACH   "unreachable" route        -EHOSTUNREACH
 *   EACCES         "prohibit" route           -EHOSTUNREACH
 *   EINVAL         "blackhole" route          -ENETUNREACH
 *
 * (IPv4: fib_props[] in net/ipv4/fib_semantics.c; IPv6: ip6_rt_type_to_error
 * in net/ipv6/route.c.) EINVAL is also the IPv4 answer for a source address
 * that is not ours, which is why the source is checked beforehand.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>

#include "kal/kal_int.h"

/* RFC 863: the discard service; nobody answers, the datagram only makes
 * the kernel resolve the next hop. */
#define KAL_DISCARD_PORT 9

const char *kal_addr_str(const struct sockaddr *addr, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	if (!buf || len == 0)
		return buf;
	if (!addr) {
		snprintf(buf, len, "(none)");
	} else if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)addr;

		if (!inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len))
			snprintf(buf, len, "(bad address)");
	} else if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)addr;

		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, tmp, sizeof(tmp)))
			snprintf(buf, len, "(bad address)");
		else if (sin6->sin6_scope_id)
			snprintf(buf, len, "%s%%%u", tmp, sin6->sin6_scope_id);
		else
			snprintf(buf, len, "%s", tmp);
	} else if (addr->sa_family == AF_UNSPEC) {
		snprintf(buf, len, "(none)");
	} else {
		snprintf(buf, len, "(family %u)", addr->sa_family);
	}
	return buf;
}

/* The address bytes of an AF_INET / AF_INET6 sockaddr, and their size. */
static const void *addr_bytes(const struct sockaddr *sa, size_t *len)
{
	if (sa->sa_family == AF_INET) {
		*len = sizeof(struct in_addr);
		return &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	}
	*len = sizeof(struct in6_addr);
	return &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
}

static socklen_t sockaddr_len(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in) :
				   sizeof(struct sockaddr_in6);
}

static bool v6_linklocal(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LINKLOCAL(
		       &((const struct sockaddr_in6 *)(const void *)sa)
				->sin6_addr);
}

/* Copy the address of @sa (without port) into @ss. */
static void addr_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *sin = (void *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr = ((const struct sockaddr_in *)(const void *)sa)
					->sin_addr;
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		struct sockaddr_in6 *sin6 = (void *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6->sin6_addr;
		sin6->sin6_scope_id = in6->sin6_scope_id;
	}
}

/* ------------------------------------------------------------------ */
/* Requests to the kernel                                              */
/* ------------------------------------------------------------------ */

/* One request on the query socket and the kernel's answer to it. */
struct query {
	bool done;
	int error;		 /* the kernel's errno, negative */
	nl_recvmsg_msg_cb_t valid;
	void *arg;
};

static int query_valid_cb(struct nl_msg *msg, void *arg)
{
	struct query *q = arg;

	return q->valid(msg, q->arg);
}

static int query_ack_cb(struct nl_msg *msg, void *arg)
{
	struct query *q = arg;

	q->done = true;
	return NL_STOP;
}

static int query_err_cb(struct sockaddr_nl *who, struct nlmsgerr *e,
			void *arg)
{
	struct query *q = arg;

	q->error = e->error < 0 ? e->error : -EIO;
	q->done = true;
	return NL_STOP;
}

/*
 * Send @msg (a request with NLM_F_ACK) on the query socket and hand the
 * answer to @valid until the kernel's acknowledgement. Returns 0, the
 * kernel's -errno, or a -errno if netlink itself failed. Frees @msg.
 */
static int query_run(struct kal_nl *nl, struct nl_msg *msg,
		     nl_recvmsg_msg_cb_t valid, void *arg)
{
	struct query q = { .valid = valid, .arg = arg };
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int err;

	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, query_valid_cb, &q);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, query_ack_cb, &q);
	nl_cb_err(cb, NL_CB_CUSTOM, query_err_cb, &q);

	pthread_mutex_lock(&nl->query_lock);
	err = nl_send_auto(nl->query_sock, msg);
	while (err >= 0 && !q.done) {
		err = nl_recvmsgs(nl->query_sock, cb);
		if (q.done)
			err = 0;
	}
	pthread_mutex_unlock(&nl->query_lock);
	nl_cb_put(cb);
	nlmsg_free(msg);
	if (err < 0)
		return kal_nle_errno(err);
	return q.error;
}

/* ------------------------------------------------------------------ */
/* RTM_GETROUTE                                                        */
/* ------------------------------------------------------------------ */

struct route_answer {
	bool have_route;
	int parse_error;
	unsigned int type;	 /* RTN_* */
	int oif;
	uint32_t mtu;		 /* 0: no RTAX_MTU */
	struct nl_addr *prefsrc;
	struct nl_addr *gateway;
};

static int route_valid_cb(struct nl_msg *msg, void *arg)
{
	struct route_answer *ans = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct rtnl_route *route = NULL;
	struct rtnl_nexthop *nh;
	int err;

	if (hdr->nlmsg_type != RTM_NEWROUTE || ans->have_route)
		return NL_SKIP;
	err = rtnl_route_parse(hdr, &route);
	if (err < 0) {
		ans->parse_error = kal_nle_errno(err);
		return NL_SKIP;
	}
	ans->have_route = true;
	ans->type = rtnl_route_get_type(route);
	if (rtnl_route_get_metric(route, RTAX_MTU, &ans->mtu) < 0)
		ans->mtu = 0;
	if (rtnl_route_get_pref_src(route))
		ans->prefsrc = nl_addr_clone(rtnl_route_get_pref_src(route));
	nh = rtnl_route_get_nnexthops(route) > 0 ?
		     rtnl_route_nexthop_n(route, 0) : NULL;
	if (nh) {
		struct nl_addr *gw = rtnl_route_nh_get_gateway(nh);

		/* RTA_VIA: an IPv4 route through an IPv6 next hop */
		if (!gw)
			gw = rtnl_route_nh_get_via(nh);
		ans->oif = rtnl_route_nh_get_ifindex(nh);
		if (gw)
			ans->gateway = nl_addr_clone(gw);
	}
	rtnl_route_put(route);
	return NL_OK;
}

static void route_answer_clear(struct route_answer *ans)
{
	nl_addr_put(ans->prefsrc);
	nl_addr_put(ans->gateway);
	memset(ans, 0, sizeof(*ans));
}

/*
 * Ask the kernel for the route to @dst (from @src if not NULL, out of
 * @oif if not 0). Returns 0 with @ans filled, the kernel's -errno, or a
 * -errno for a local failure.
 */
static int route_query(struct kal_nl *nl, const struct sockaddr *dst,
		       const struct sockaddr *src, int oif,
		       struct route_answer *ans)
{
	struct rtmsg rtm = { 0 };
	struct nl_msg *msg;
	const void *bytes;
	size_t alen;
	int err;

	memset(ans, 0, sizeof(*ans));
	bytes = addr_bytes(dst, &alen);
	rtm.rtm_family = (unsigned char)dst->sa_family;
	rtm.rtm_dst_len = (unsigned char)(alen * 8);
	rtm.rtm_src_len = src ? (unsigned char)(alen * 8) : 0;

	msg = nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK);
	if (!msg)
		return -ENOMEM;
	err = nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO);
	if (err >= 0)
		err = nla_put(msg, RTA_DST, (int)alen, bytes);
	if (err >= 0 && src) {
		const void *sbytes = addr_bytes(src, &alen);

		err = nla_put(msg, RTA_SRC, (int)alen, sbytes);
	}
	if (err >= 0 && oif)
		err = nla_put_u32(msg, RTA_OIF, (uint32_t)oif);
	if (err < 0) {
		nlmsg_free(msg);
		return kal_nle_errno(err);
	}

	err = query_run(nl, msg, route_valid_cb, ans);
	if (!err && !ans->have_route)
		err = ans->parse_error ? ans->parse_error : -EIO;
	if (err)
		route_answer_clear(ans);
	return err;
}

/* The kernel's refusal as kal's errno, see the table at the top. */
static int route_error(int kerr, const char **what)
{
	switch (kerr) {
	case -ENETUNREACH:
		*what = "no route";
		return -ENETUNREACH;
	case -EHOSTUNREACH:
		*what = "unreachable route";
		return -EHOSTUNREACH;
	case -EACCES:
		*what = "prohibit route";
		return -EHOSTUNREACH;
	case -EINVAL:
		*what = "blackhole route";
		return -ENETUNREACH;
	default:
		*what = "route lookup failed";
		return kerr;
	}
}

static const char *rtn_name(unsigned int type)
{
	switch (type) {
	case RTN_BROADCAST:
		return "broadcast";
	case RTN_ANYCAST:
		return "anycast";
	case RTN_MULTICAST:
		return "multicast";
	case RTN_NAT:
		return "nat";
	case RTN_XRESOLVE:
		return "xresolve";
	default:
		return "non-unicast";
	}
}

/* @src must be one of our addresses: the kernel routes it locally. */
static int check_src(struct kal_nl *nl, const struct sockaddr *src)
{
	struct route_answer ans;
	char a[INET6_ADDRSTRLEN + 12];
	int oif = 0, err;

	if (v6_linklocal(src))
		oif = (int)((const struct sockaddr_in6 *)(const void *)src)
			      ->sin6_scope_id;
	err = route_query(nl, src, NULL, oif, &ans);
	if (err == 0 && ans.type == RTN_LOCAL) {
		route_answer_clear(&ans);
		return 0;
	}
	if (err == 0)
		route_answer_clear(&ans);
	g_warning("route from %s: not one of our addresses",
		  kal_addr_str(src, a, sizeof(a)));
	return -EADDRNOTAVAIL;
}

/* ------------------------------------------------------------------ */
/* Neighbour resolution                                                */
/* ------------------------------------------------------------------ */

/* Make the kernel resolve @nh: send it an empty datagram from the route's
 * source out of its interface. Failures only cost the wait. */
static void neigh_trigger(const struct kal_route *rt,
			  const struct sockaddr_storage *nh)
{
	struct sockaddr_storage to = *nh, from = rt->src;
	int family = nh->ss_family;
	char a[INET6_ADDRSTRLEN + 12];
	int fd;

	fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		g_debug("neighbour %s: socket: %s",
			kal_addr_str((const void *)nh, a, sizeof(a)),
			g_strerror(errno));
		return;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, rt->ifname,
		       (socklen_t)strlen(rt->ifname) + 1) < 0) {
		/* without CAP_NET_RAW: IP(V6)_UNICAST_IF needs no privilege */
		int v4 = (int)htonl((uint32_t)rt->ifindex), v6 = rt->ifindex;

		if (family == AF_INET)
			setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &v4,
				   sizeof(v4));
		else
			setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_IF, &v6,
				   sizeof(v6));
	}
	if (from.ss_family == family) {
		if (family == AF_INET6 && v6_linklocal((void *)&from))
			((struct sockaddr_in6 *)&from)->sin6_scope_id =
				(uint32_t)rt->ifindex;
		if (bind(fd, (struct sockaddr *)&from, sockaddr_len(family)) <
		    0) {
			char f[INET6_ADDRSTRLEN + 12];

			g_debug("neighbour %s: bind to %s: %s",
				kal_addr_str((const void *)nh, a, sizeof(a)),
				kal_addr_str((const void *)&from, f, sizeof(f)),
				g_strerror(errno));
		}
	}
	if (family == AF_INET) {
		((struct sockaddr_in *)&to)->sin_port = htons(KAL_DISCARD_PORT);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&to;

		sin6->sin6_port = htons(KAL_DISCARD_PORT);
		if (v6_linklocal((void *)&to))
			sin6->sin6_scope_id = (uint32_t)rt->ifindex;
	}
	if (sendto(fd, "", 0, 0, (struct sockaddr *)&to, sockaddr_len(family)) <
	    0)
		g_debug("neighbour %s: sendto: %s",
			kal_addr_str((const void *)nh, a, sizeof(a)),
			g_strerror(errno));
	close(fd);
}

struct neigh_wait {
	int ifindex;
	struct nl_addr *dst;
	bool found;
	bool failed;		 /* NUD_FAILED seen: resolution gave up */
	uint8_t hwaddr[KAL_MAX_HWADDR];
	uint32_t hwaddr_len;
};

static int neigh_valid_cb(struct nl_msg *msg, void *arg)
{
	struct neigh_wait *w = arg;
	struct nlmsghdr *hdr = nlmsg_hdr(msg);
	struct rtnl_neigh *neigh = NULL;
	struct nl_addr *ll, *dst;
	int state;

	if (hdr->nlmsg_type != RTM_NEWNEIGH ||
	    rtnl_neigh_parse(hdr, &neigh) < 0)
		return NL_SKIP;
	dst = rtnl_neigh_get_dst(neigh);
	/* the address only: nl_addr_cmp would compare prefix lengths too */
	if (rtnl_neigh_get_ifindex(neigh) != w->ifindex || !dst ||
	    nl_addr_get_family(dst) != nl_addr_get_family(w->dst) ||
	    nl_addr_get_len(dst) != nl_addr_get_len(w->dst) ||
	    memcmp(nl_addr_get_binary_addr(dst),
		   nl_addr_get_binary_addr(w->dst), nl_addr_get_len(dst)) != 0)
		goto out;
	state = rtnl_neigh_get_state(neigh);
	ll = rtnl_neigh_get_lladdr(neigh);
	if (state > 0 && (state & KAL_NUD_VALID) && ll &&
	    nl_addr_get_len(ll) > 0 && nl_addr_get_len(ll) <= KAL_MAX_HWADDR) {
		w->hwaddr_len = nl_addr_get_len(ll);
		memcpy(w->hwaddr, nl_addr_get_binary_addr(ll), w->hwaddr_len);
		w->found = true;
	} else if (state > 0 && (state & NUD_FAILED)) {
		w->failed = true;
	}
out:
	rtnl_neigh_put(neigh);
	return NL_OK;
}

static int neigh_any_seq_cb(struct nl_msg *msg, void *arg)
{
	return NL_OK;
}

static int neigh_err_cb(struct sockaddr_nl *who, struct nlmsgerr *e,
			void *arg)
{
	/* ENOENT for the initial query: no entry yet */
	return NL_SKIP;
}

/* An RTM_GETNEIGH request for one entry (kernel 5.0 and later; older
 * ones refuse it and kal relies on the cache and notifications). */
static struct nl_msg *neigh_request(int family, int ifindex,
				    struct nl_addr *dst, int flags)
{
	struct ndmsg ndm = { 0 };
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_GETNEIGH,
						NLM_F_REQUEST | flags);

	if (!msg)
		return NULL;
	ndm.ndm_family = (unsigned char)family;
	ndm.ndm_ifindex = ifindex;
	if (nlmsg_append(msg, &ndm, sizeof(ndm), NLMSG_ALIGNTO) < 0 ||
	    nla_put_addr(msg, NDA_DST, dst) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* On the wait socket: ask for the current entry, so that one which became
 * valid before we listened is not missed. */
static void neigh_query(struct nl_sock *sk, int family, int ifindex,
			struct nl_addr *dst)
{
	struct nl_msg *msg = neigh_request(family, ifindex, dst, 0);

	if (msg)
		nl_send_auto(sk, msg);
	nlmsg_free(msg);
}

/*
 * The kernel's own entry for @nh: the cache lags behind the kernel by the
 * monitor thread's latency, and a caller that was just told a MAC must
 * find it again. Returns 0 with the address in @rt, or -ENOENT.
 */
static int neigh_get(struct kal_nl *nl, struct kal_route *rt,
		     const struct sockaddr_storage *nh)
{
	struct neigh_wait w = { .ifindex = rt->ifindex };
	struct nl_msg *msg;
	int err = -ENOENT;

	w.dst = kal_nl_addr_from_sockaddr((const void *)nh);
	if (!w.dst)
		return -ENOMEM;
	msg = neigh_request(nh->ss_family, rt->ifindex, w.dst, NLM_F_ACK);
	if (msg && query_run(nl, msg, neigh_valid_cb, &w) == 0 && w.found) {
		memcpy(rt->nh_hwaddr, w.hwaddr, w.hwaddr_len);
		rt->nh_hwaddr_len = w.hwaddr_len;
		err = 0;
	}
	nl_addr_put(w.dst);
	return err;
}

/* Drain what the socket holds; returns 0 or a -errno of netlink. */
static int neigh_read(struct nl_sock *sk, struct nl_cb *cb,
		      struct neigh_wait *w)
{
	int err;

	while (!w->found) {
		err = nl_recvmsgs(sk, cb);
		if (err == -NLE_AGAIN)
			return 0;
		if (err == -NLE_NOMEM) {
			/* overrun: notifications lost, ask again */
			neigh_query(sk, nl_addr_get_family(w->dst), w->ifindex,
				    w->dst);
			continue;
		}
		if (err < 0)
			return kal_nle_errno(err);
	}
	return 0;
}

/*
 * Listen for neighbour changes, ask for the current entry of @nh, trigger
 * resolution and wait up to @timeout_ms for a valid entry. Returns 0 with
 * the address in @rt, -ETIMEDOUT, or -errno if netlink failed.
 */
static int neigh_resolve(struct kal_route *rt,
			 const struct sockaddr_storage *nh,
			 unsigned int timeout_ms)
{
	struct neigh_wait w = { .ifindex = rt->ifindex };
	gint64 deadline = g_get_monotonic_time() +
			  (gint64)timeout_ms * G_TIME_SPAN_MILLISECOND;
	struct nl_sock *sk = NULL;
	struct nl_cb *cb = NULL;
	int err;

	w.dst = kal_nl_addr_from_sockaddr((const void *)nh);
	sk = nl_socket_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!w.dst || !sk || !cb) {
		err = -ENOMEM;
		goto out;
	}
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err >= 0)
		err = nl_socket_add_membership(sk, RTNLGRP_NEIGH);
	if (err >= 0)
		err = nl_socket_set_nonblocking(sk);
	if (err < 0) {
		err = kal_nle_errno(err);
		goto out;
	}
	/* notifications carry no sequence number of ours */
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, neigh_any_seq_cb, NULL);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, neigh_valid_cb, &w);
	nl_cb_err(cb, NL_CB_CUSTOM, neigh_err_cb, &w);

	neigh_query(sk, nh->ss_family, rt->ifindex, w.dst);
	neigh_trigger(rt, nh);
	for (;;) {
		struct pollfd pfd = { .fd = nl_socket_get_fd(sk),
				      .events = POLLIN };
		gint64 left;

		err = neigh_read(sk, cb, &w);
		if (err)
			break;
		if (w.found) {
			err = 0;
			break;
		}
		if (w.failed) {
			/* the kernel gave up; a new packet starts over */
			w.failed = false;
			neigh_trigger(rt, nh);
		}
		left = deadline - g_get_monotonic_time();
		if (left <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)((left + 999) / 1000)) < 0 &&
		    errno != EINTR) {
			err = -errno;
			break;
		}
	}
	if (w.found) {
		memcpy(rt->nh_hwaddr, w.hwaddr, w.hwaddr_len);
		rt->nh_hwaddr_len = w.hwaddr_len;
	}
out:
	nl_cb_put(cb);
	nl_socket_free(sk);
	nl_addr_put(w.dst);
	return err;
}

/* ------------------------------------------------------------------ */
/* kal_route_resolve                                                   */
/* ------------------------------------------------------------------ */

static int check_args(const struct sockaddr *dst, const struct sockaddr *src)
{
	char a[INET6_ADDRSTRLEN + 12];

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6) {
		g_warning("route to an address of family %u: only IPv4 and "
			  "IPv6 are routed", dst->sa_family);
		return -EAFNOSUPPORT;
	}
	if (src && src->sa_family != dst->sa_family) {
		g_warning("route to %s from an address of family %u: "
			  "families differ", kal_addr_str(dst, a, sizeof(a)),
			  src->sa_family);
		return -EAFNOSUPPORT;
	}
	/* fe80::/10 exists on every link: the caller must say which */
	if (v6_linklocal(dst) &&
	    ((const struct sockaddr_in6 *)(const void *)dst)->sin6_scope_id ==
		    0) {
		g_warning("route to %s: a link-local destination needs a "
			  "scope id (interface index)",
			  kal_addr_str(dst, a, sizeof(a)));
		return -EINVAL;
	}
	if (src && v6_linklocal(src) &&
	    ((const struct sockaddr_in6 *)(const void *)src)->sin6_scope_id ==
		    0) {
		g_warning("route from %s: a link-local source needs a scope "
			  "id (interface index)",
			  kal_addr_str(src, a, sizeof(a)));
		return -EINVAL;
	}
	return 0;
}

/* Fill @out from the kernel's answer. */
static void route_fill(struct kal_nl *nl, const struct route_answer *ans,
		       const struct sockaddr *src, struct kal_route *out,
		       struct kal_nl_linkinfo *link)
{
	out->type = ans->type == RTN_LOCAL ? KAL_ROUTE_LOCAL :
					     KAL_ROUTE_UNICAST;
	out->ifindex = ans->oif;
	if (ans->prefsrc)
		kal_sockaddr_from_nl_addr(ans->prefsrc, ans->oif, &out->src);
	else if (src)
		addr_copy(&out->src, src);
	if (ans->gateway)
		kal_sockaddr_from_nl_addr(ans->gateway, ans->oif,
					  &out->gateway);

	memset(link, 0, sizeof(*link));
	if (kal_nl_linkinfo(nl, ans->oif, link) < 0) {
		/* a link newer than the cache: ask the kernel for its name */
		if (!if_indextoname((unsigned int)ans->oif, link->ifname))
			link->ifname[0] = 0;
		g_debug("route: interface %d (%s) not in the cache yet",
			ans->oif, link->ifname);
	}
	memcpy(out->ifname, link->ifname, sizeof(out->ifname));
	out->mtu = ans->mtu ? ans->mtu : link->mtu;
}

int kal_route_resolve(struct kal_nl *nl, const struct sockaddr *dst,
		      const struct sockaddr *src, unsigned int timeout_ms,
		      struct kal_route *out)
{
	char d[INET6_ADDRSTRLEN + 12], n[INET6_ADDRSTRLEN + 12];
	struct kal_nl_linkinfo link;
	struct route_answer ans;
	struct sockaddr_storage nh;
	const char *what;
	int oif = 0, err;

	g_return_val_if_fail(nl && dst && out, -EINVAL);
	memset(out, 0, sizeof(*out));
	out->src.ss_family = AF_UNSPEC;
	out->gateway.ss_family = AF_UNSPEC;
	err = check_args(dst, src);
	if (err)
		return err;
	addr_copy(&out->dst, dst);
	kal_addr_str(dst, d, sizeof(d));

	if (src) {
		err = check_src(nl, src);
		if (err)
			return err;
	}
	if (v6_linklocal(dst))
		oif = (int)((const struct sockaddr_in6 *)(const void *)dst)
			      ->sin6_scope_id;
	err = route_query(nl, dst, src, oif, &ans);
	if (err) {
		err = route_error(err, &what);
		g_warning("route to %s: %s (%s)", d, what, g_strerror(-err));
		return err;
	}
	if (ans.type != RTN_UNICAST && ans.type != RTN_LOCAL) {
		g_warning("route to %s: a %s destination, not a host", d,
			  rtn_name(ans.type));
		route_answer_clear(&ans);
		return -EHOSTUNREACH;
	}
	route_fill(nl, &ans, src, out, &link);
	route_answer_clear(&ans);
	g_debug("route to %s: %s dev %s[%d] mtu %u", d,
		out->type == KAL_ROUTE_LOCAL ? "local" : "unicast",
		out->ifname, out->ifindex, out->mtu);

	/* Nothing to resolve for ourselves or on links without ARP/ND. */
	if (out->type == KAL_ROUTE_LOCAL ||
	    (link.iff_flags & (IFF_NOARP | IFF_LOOPBACK)) ||
	    link.hwaddr_len == 0)
		return 0;

	if (out->gateway.ss_family != AF_UNSPEC)
		nh = out->gateway;
	else
		addr_copy(&nh, dst);
	if (kal_nl_neigh_lookup(nl, out->ifindex, (const void *)&nh,
				out->nh_hwaddr, &out->nh_hwaddr_len) == 0 ||
	    neigh_get(nl, out, &nh) == 0 || timeout_ms == 0)
		return 0;

	err = neigh_resolve(out, &nh, timeout_ms);
	if (err == -ETIMEDOUT)
		g_warning("route to %s: next hop %s on %s did not answer "
			  "neighbour resolution within %u ms", d,
			  kal_addr_str((const void *)&nh, n, sizeof(n)),
			  out->ifname, timeout_ms);
	else if (err)
		g_warning("route to %s: cannot resolve next hop %s: %s", d,
			  kal_addr_str((const void *)&nh, n, sizeof(n)),
			  g_strerror(-err));
	return err;
}
