/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-kald: QP1. The CM's MADs go to the process that holds the
 * listener (service ID) or the connection (communication ID); a request
 * for a service ID nobody holds is answered here (REJ, SIDR_REP).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib-unix.h>

#include "kald/kald.h"

/* ------------------------------------------------------------------ */
/* QP1: the CM's MADs go to the process they are for                   */
/* ------------------------------------------------------------------ */

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* The client a QP1 datagram is for, or NULL (dropped; *@unheld set for a
 * REQ or SIDR_REQ whose service ID nobody holds). */
static struct client *route_mad(const uint8_t *p, size_t len, bool *unheld)
{
	const uint8_t *mad = p + BTH_DETH, *data = mad + MAD_HDR;
	unsigned int attr, slot;
	uint32_t id;

	/* BTH DestQP 1, a whole MAD header and the IDs we read. */
	if (len < BTH_DETH + MAD_HDR + 16 || (get32(p + 4) & 0xffffff) != 1 ||
	    mad[1] != MAD_CLASS_CM)
		return NULL;
	attr = (unsigned int)mad[16] << 8 | mad[17];
	switch (attr) {
	case CM_REQ:
	case CM_SIDR_REQ: {
		uint64_t sid = get64(data + 8);
		struct client *c = g_hash_table_lookup(K.sids, &sid);

		*unheld = !c;
		return c;
	}
	case CM_SIDR_REP:
		id = get32(data);	/* our request ID */
		break;
	case CM_MRA: case CM_REJ: case CM_REP: case CM_RTU: case CM_DREQ:
	case CM_DREP: case CM_LAP: case CM_APR:
		id = get32(data + 4);	/* remote comm ID: ours */
		break;
	default:
		return NULL;
	}
	slot = id >> KAL_HOSTSVC_ID_SHIFT;
	if (slot == 0 || slot >= NSLOTS || K.slots[slot].state != SLOT_OWNED)
		return NULL;
	return K.slots[slot].owner;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The ICRC's view of a datagram between @from and @to (port 4791 at the
 * receiving end; Linux writes IPv4 ID 0 with DF set on an unconnected
 * socket, see vp/rxe/rxe_net.c). */
static void icrc_addr(struct rxe_icrc_addr *a,
		      const struct sockaddr_storage *from,
		      const struct sockaddr_storage *to)
{
	memset(a, 0, sizeof(*a));
	a->family = from->ss_family;
	a->dport = ROCE_PORT;
	a->df = true;
	if (from->ss_family == AF_INET) {
		a->sport = ntohs(((struct sockaddr_in *)from)->sin_port);
		memcpy(a->saddr, &((struct sockaddr_in *)from)->sin_addr, 4);
		memcpy(a->daddr, &((struct sockaddr_in *)to)->sin_addr, 4);
	} else {
		a->sport = ntohs(((struct sockaddr_in6 *)from)->sin6_port);
		memcpy(a->saddr, &((struct sockaddr_in6 *)from)->sin6_addr,
		       16);
		memcpy(a->daddr, &((struct sockaddr_in6 *)to)->sin6_addr, 16);
	}
}

/* Whether a datagram from @src to @g's address carries a good ICRC (the
 * sender's IPv4 ID, which the socket does not tell, solved for). */
static bool icrc_ok(const struct group *g, const uint8_t *p, size_t len,
		    const struct sockaddr_storage *src)
{
	struct rxe_icrc_addr a;
	uint32_t have, want;
	uint16_t id_xor;
	bool df_xor;

	if (src->ss_family != g->addr.ss_family)
		return false;
	icrc_addr(&a, src, &g->addr);
	have = rxe_icrc_packet(&a, p, len - IB_ICRC_BYTES);
	want = rxe_icrc_get(p + len - IB_ICRC_BYTES);
	return have == want ||
	       (a.family == AF_INET &&
		rxe_icrc_solve_ipv4_id(have, want, len, &id_xor, &df_xor));
}

/* Our socket for answers from @g's address: port of its own, DF set (so
 * IPv4 ID 0, which the ICRC we compute assumes). */
static int tx_socket(struct group *g)
{
	struct sockaddr_storage ss = g->addr;
	socklen_t len = g->len;
	int fd, v;

	if (g->tx >= 0)
		return g->tx;
	fd = socket(g->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (ss.ss_family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		v = IP_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v,
				 sizeof(v));
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		v = IPV6_PMTUDISC_DO;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v,
				 sizeof(v));
		v = 1;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v,
				 sizeof(v));
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		g_warning("%s: a socket to answer from: %s", g->name,
			  g_strerror(errno));
		close(fd);
		return -1;
	}
	g->tx = fd;
	g->tx_port = ntohs(ss.ss_family == AF_INET
			   ? ((struct sockaddr_in *)&ss)->sin_port
			   : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

/*
 * A REQ for a service ID no process holds: answer as a lone process's CM
 * would, with a REJ "invalid service ID" (IBA 12.6.7, table 109) to the
 * requester's QP1; a SIDR_REQ gets a SIDR_REP "service ID not supported"
 * (12.11.2). Only a well-formed MAD with a good ICRC is answered: junk
 * and forgeries on the wire are dropped as before.
 */
static void refuse_unheld(struct group *g, const uint8_t *p, size_t len,
			  const struct sockaddr_storage *src)
{
	const uint8_t *mad = p + BTH_DETH, *data = mad + MAD_HDR;
	uint8_t out[GSI_PKT], *om = out + BTH_DETH, *od = om + MAD_HDR;
	struct sockaddr_storage from, to = *src;
	struct rxe_icrc_addr a;
	unsigned int attr = (unsigned int)mad[16] << 8 | mad[17];
	int fd;

	if (len != GSI_PKT || p[0] != UD_SEND_ONLY ||
	    (p[1] & IB_BTH_PAD_MASK) || mad[0] != 1 ||
	    !icrc_ok(g, p, len, src))
		return;
	fd = tx_socket(g);
	if (fd < 0)
		return;
	memset(out, 0, sizeof(out));
	/* BTH: UD Send Only, default P_Key, to the sender's QP (DETH's
	 * source QP, 1); DETH: the GSI Q_Key, from QP 1. */
	out[0] = UD_SEND_ONLY;
	out[2] = 0xff;
	out[3] = 0xff;
	memcpy(out + 5, p + 12 + 5, 3);
	put32(out + 12, IB_GSI_QKEY);
	out[19] = IB_GSI_QPN;
	/* MAD header: CM class, version 2, Send, the request's TID. */
	om[0] = 1;
	om[1] = MAD_CLASS_CM;
	om[2] = 2;
	om[3] = 0x03;
	memcpy(om + 8, mad + 8, 8);
	if (attr == CM_REQ) {
		om[17] = CM_REJ;
		/* Local comm ID 0 (none), remote: the REQ's local one;
		 * message REJected: REQ (0); reason. */
		memcpy(od + 4, data, 4);
		od[11] = REJ_INVALID_SERVICE_ID;
	} else {
		om[17] = CM_SIDR_REP;
		/* Request ID, status, the service ID. */
		memcpy(od, data, 4);
		od[4] = SIDR_UNSUPPORTED;
		memcpy(od + 12, data + 8, 8);
	}
	from = g->addr;
	if (to.ss_family == AF_INET) {
		((struct sockaddr_in *)&from)->sin_port = htons(g->tx_port);
		((struct sockaddr_in *)&to)->sin_port = htons(ROCE_PORT);
	} else {
		((struct sockaddr_in6 *)&from)->sin6_port = htons(g->tx_port);
		((struct sockaddr_in6 *)&to)->sin6_port = htons(ROCE_PORT);
	}
	icrc_addr(&a, &from, &to);
	rxe_icrc_put(out + GSI_PKT - IB_ICRC_BYTES,
		     rxe_icrc_packet(&a, out, GSI_PKT - IB_ICRC_BYTES));
	if (sendto(fd, out, sizeof(out), MSG_DONTWAIT, (struct sockaddr *)&to,
		   g->len) < 0) {
		g_debug("%s: the answer to an unheld service ID: %s", g->name,
			g_strerror(errno));
		return;
	}
	K.refused++;
	g_debug("%s: %s for service ID 0x%016" G_GINT64_MODIFIER "x nobody "
		"holds: %s sent", g->name, attr == CM_REQ ? "REQ" : "SIDR_REQ",
		get64(data + 8), attr == CM_REQ ? "REJ invalid service ID"
		: "SIDR_REP service ID not supported");
}

gboolean on_gsi(gint fd, GIOCondition cond, gpointer data)
{
	struct group *g = data;
	struct kal_hostsvc_fwd h = { .magic = KAL_HOSTSVC_MAGIC };
	socklen_t sl;
	ssize_t n;
	int burst;

	(void)cond;
	for (burst = 0; burst < 64; burst++) {
		struct client *c;
		gpointer ffd;
		bool unheld = false;

		sl = sizeof(h.src);
		n = recvfrom(fd, K.buf, DGRAM_MAX, MSG_DONTWAIT,
			     (struct sockaddr *)&h.src, &sl);
		if (n < 0)
			break;
		c = route_mad(K.buf, (size_t)n, &unheld);
		if (unheld) {
			refuse_unheld(g, K.buf, (size_t)n, &h.src);
			continue;
		}
		if (!c || !(ffd = g_hash_table_lookup(c->fwd, g))) {
			K.unrouted++;
			g_debug("%s: a %zd-byte datagram for QPN range 0 "
				"nobody holds, dropped", g->name, n);
			continue;
		}
		struct iovec iov[2] = {
			{ .iov_base = &h, .iov_len = sizeof(h) },
			{ .iov_base = K.buf, .iov_len = (size_t)n },
		};
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

		h.len = (uint32_t)n;
		/* A process that does not read its MADs loses them, as a
		 * full receive queue would. */
		if (sendmsg(GPOINTER_TO_INT(ffd), &mh,
			    MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			K.unrouted++;
		else
			K.forwarded++;
	}
	return G_SOURCE_CONTINUE;
}
