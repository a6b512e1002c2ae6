/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-kald - the host service: owns soft-RoCE's UDP port 4791 on
 * each address (a SO_REUSEPORT group steered by BTH DestQP), the QPN
 * ranges handed to processes, QP1 and the IB CM's service IDs, so that
 * every process on the host can run soft-RoCE at once. The data path
 * never passes here: each process receives on its own socket of the
 * group. See hostrdma-kald(8) and the protocol in kal/kal.h.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <glib-unix.h>

#include "kal/kal.h"
#include "vp/rxe/rxe_icrc.h"

#define ROCE_PORT 4791
#define NSLOTS KAL_HOSTSVC_NSLOTS
#define MAX_CLIENTS 1024
/* One local user may not take every range or every connection from the
 * others (root may). */
#define MAX_SLOTS_PER_UID 64
#define MAX_CLIENTS_PER_UID 128
#define DGRAM_MAX 65536

/* IBA: a MAD on QP1 behind BTH (12 bytes) and DETH (8); the CM class. */
#define BTH_DETH 20
#define MAD_HDR 24
#define MAD_CLASS_CM 0x07
#define MAD_BYTES 256
#define UD_SEND_ONLY 0x64
/* A MAD on QP1 as RoCEv2 carries it: BTH, DETH, MAD, ICRC. */
#define GSI_PKT (BTH_DETH + MAD_BYTES + IB_ICRC_BYTES)
#define REJ_INVALID_SERVICE_ID 8	/* IBA table 109 */
#define SIDR_UNSUPPORTED 1		/* IBA 12.11.2: SID not supported */
enum {
	CM_REQ = 0x10, CM_MRA, CM_REJ, CM_REP, CM_RTU, CM_DREQ, CM_DREP,
	CM_SIDR_REQ, CM_SIDR_REP, CM_LAP, CM_APR,
};

enum slot_state { SLOT_FREE, SLOT_OWNED, SLOT_QUIET };

struct client;

struct group {
	struct sockaddr_storage addr;	/* port ROCE_PORT */
	socklen_t len;
	char name[INET6_ADDRSTRLEN + 16];
	unsigned int n;			/* sockets, in the group's order */
	int fds[NSLOTS];
	guint drain[NSLOTS];		/* watch while no process holds it */
	bool handed[NSLOTS];
	int tx;				/* our answers' socket, or -1 */
	uint16_t tx_port;
};

struct slot {
	enum slot_state state;
	struct client *owner;
	gint64 last;	/* QUIET: release or last stray datagram (us) */
};

struct client {
	int fd;
	pid_t pid;
	uid_t uid;
	unsigned int slot;		/* 0: none yet */
	guint watch;
	GHashTable *fwd;		/* struct group * -> our end (int) */
};

struct kald {
	GMainLoop *loop;
	int listen_fd;
	GPtrArray *groups;
	GPtrArray *clients;
	GHashTable *sids;		/* service ID (uint64 *) -> client */
	struct slot slots[NSLOTS];
	unsigned int quiet_ms;
	uint8_t *buf;
	uint64_t strays, forwarded, unrouted, refused;
	int keep_fd;			/* to our keeper, or -1 */
};

static struct kald K;

static void client_drop(struct client *c, const char *why);

/*
 * The keeper: a child of the daemon that holds a copy of every socket of
 * the groups and of the daemon's end of every forwarding socket, and
 * knows which process holds which range and service ID. When the daemon
 * dies (killed, or stopped for a restart), nothing of a running process
 * closes: the group keeps its sockets in their places (a socket leaving a
 * SO_REUSEPORT group would move the last one into its index and break
 * the steering), QP1's datagrams wait in its socket, and the next daemon
 * takes it all over from the keeper (adopt()) and carries on.
 */
enum keep_kind {
	KEEP_MEMBER = 1,	/* fd: the group's socket at index */
	KEEP_FWD,		/* fd: range index's forwarding socket */
	KEEP_UNFWD,
	KEEP_SID,		/* range index holds sid */
	KEEP_UNSID,
	KEEP_END,
};

struct keep_rec {
	uint32_t magic;
	uint16_t kind;
	uint16_t index;
	int32_t pid;
	uint32_t uid;
	uint64_t sid;
	struct sockaddr_storage addr;	/* the group's */
};

static void keep_send(const struct keep_rec *r, int fd);
static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b);

/* ------------------------------------------------------------------ */
/* Groups                                                              */
/* ------------------------------------------------------------------ */

static void addr_name(const struct sockaddr_storage *ss, char *buf,
		      size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ss)->sin_addr, a,
			  sizeof(a));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, a,
			  sizeof(a));
	if (ss->ss_family == AF_INET6 &&
	    ((struct sockaddr_in6 *)ss)->sin6_scope_id)
		snprintf(buf, len, "[%s%%%u]:%u", a,
			 ((struct sockaddr_in6 *)ss)->sin6_scope_id,
			 ROCE_PORT);
	else if (ss->ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", a, ROCE_PORT);
	else
		snprintf(buf, len, "%s:%u", a, ROCE_PORT);
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
		      &((struct sockaddr_in6 *)b)->sin6_addr, 16) == 0 &&
	       ((struct sockaddr_in6 *)a)->sin6_scope_id ==
		       ((struct sockaddr_in6 *)b)->sin6_scope_id;
}

static gboolean on_gsi(gint fd, GIOCondition cond, gpointer data);
static gboolean on_drain(gint fd, GIOCondition cond, gpointer data);

/* Read and drop what waits on a socket nobody holds; a QUIET slot's
 * clock starts again. */
static void drain_fd(struct group *g, unsigned int i)
{
	uint64_t n = 0;

	while (recv(g->fds[i], K.buf, DGRAM_MAX, MSG_DONTWAIT) >= 0)
		n++;
	if (n) {
		K.strays += n;
		if (K.slots[i].state == SLOT_QUIET)
			K.slots[i].last = g_get_monotonic_time();
		g_debug("%s: %" G_GUINT64_FORMAT " stray datagrams for QPN "
			"range %u dropped", g->name, n, i);
	}
}

static gboolean on_drain(gint fd, GIOCondition cond, gpointer data)
{
	struct group *g = data;
	unsigned int i;

	(void)cond;
	for (i = 1; i < g->n; i++)
		if (g->fds[i] == fd)
			break;
	if (i < g->n)
		drain_fd(g, i);
	return G_SOURCE_CONTINUE;
}

static void watch_drain(struct group *g, unsigned int i, bool on)
{
	if (on && !g->drain[i]) {
		g->drain[i] = g_unix_fd_add(g->fds[i], G_IO_IN, on_drain, g);
		drain_fd(g, i);
	} else if (!on && g->drain[i]) {
		g_source_remove(g->drain[i]);
		g->drain[i] = 0;
	}
}

static int new_member(struct group *g)
{
	int fd, one = 1, size = 4 << 20, err;

	fd = socket(g->addr.ss_family,
		    SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (g->addr.ss_family == AF_INET6) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
		/* RoCEv2 over IPv6 may carry a zero UDP checksum (the ICRC
		 * protects it, IBA annex A17). */
		(void)setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, &one,
				 sizeof(one));
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size,
		       sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size,
				 sizeof(size));
	if (bind(fd, (struct sockaddr *)&g->addr, g->len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* The program covers exactly the sockets there are: an index past
	 * the last would let the kernel hash the datagram to anyone. */
	err = kal_udp_steer_by_qpn(fd, KAL_HOSTSVC_QPN_SHIFT, g->n + 1);
	if (err) {
		close(fd);
		return err;
	}
	/* Attached through the new socket, which is then locked: a process
	 * holding it can no longer replace the group's program (EPERM; it
	 * can still detach it, see hostrdma-kald(8) LIMITS). */
	if (setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) < 0)
		g_warning("%s: SO_LOCK_FILTER: %s", g->name, g_strerror(errno));
	g->fds[g->n] = fd;
	g->handed[g->n] = false;
	{
		struct keep_rec r = { .kind = KEEP_MEMBER,
				      .index = (uint16_t)g->n,
				      .addr = g->addr };

		keep_send(&r, fd);
	}
	if (g->n == 0)
		g->drain[0] = g_unix_fd_add(fd, G_IO_IN, on_gsi, g);
	else
		watch_drain(g, g->n, true);
	g->n++;
	return 0;
}

static void group_free(struct group *g)
{
	unsigned int i;

	for (i = 0; i < g->n; i++) {
		if (g->drain[i])
			g_source_remove(g->drain[i]);
		close(g->fds[i]);
	}
	if (g->tx >= 0)
		close(g->tx);
	g_free(g);
}

/* The group of @ss, made (with its index 0, ours) on first use. */
static int group_get(const struct sockaddr_storage *ss, struct group **out)
{
	struct group *g;
	unsigned int i;
	int err;

	for (i = 0; i < K.groups->len; i++) {
		g = g_ptr_array_index(K.groups, i);
		if (same_addr(&g->addr, ss)) {
			*out = g;
			return 0;
		}
	}
	g = g_new0(struct group, 1);
	g->tx = -1;
	g->addr = *ss;
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)&g->addr)->sin_port = htons(ROCE_PORT);
		g->len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&g->addr)->sin6_port =
			htons(ROCE_PORT);
		((struct sockaddr_in6 *)&g->addr)->sin6_flowinfo = 0;
		g->len = sizeof(struct sockaddr_in6);
	}
	addr_name(&g->addr, g->name, sizeof(g->name));
	err = new_member(g);
	if (err) {
		g_warning("%s: cannot take soft-RoCE's port: %s%s", g->name,
			  g_strerror(-err), err == -EADDRINUSE
			  ? " (a process or the kernel's rdma_rxe owns it "
			    "without sharing)" : "");
		g_free(g);
		return err;
	}
	g_ptr_array_add(K.groups, g);
	g_message("%s: soft-RoCE's port is shared from now on", g->name);
	*out = g;
	return 0;
}

/* ------------------------------------------------------------------ */
/* QPN ranges                                                          */
/* ------------------------------------------------------------------ */

/* Quiet slots whose sockets stayed silent long enough become free. */
static void reap_quiet(void)
{
	gint64 now = g_get_monotonic_time();
	unsigned int i;

	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_QUIET &&
		    now - K.slots[i].last >= (gint64)K.quiet_ms * 1000) {
			K.slots[i].state = SLOT_FREE;
			g_debug("QPN range %u is free again", i);
		}
}

static gboolean on_tick(gpointer data)
{
	(void)data;
	reap_quiet();
	return G_SOURCE_CONTINUE;
}

static unsigned int slot_take(struct client *c)
{
	unsigned int i, mine = 0;

	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_OWNED &&
		    K.slots[i].owner->uid == c->uid)
			mine++;
	if (c->uid != 0 && mine >= MAX_SLOTS_PER_UID) {
		g_warning("pid %d (uid %u): the user holds %u QPN ranges "
			  "already, the most one user may", c->pid, c->uid,
			  mine);
		return 0;
	}
	reap_quiet();
	for (i = 1; i < NSLOTS; i++)
		if (K.slots[i].state == SLOT_FREE) {
			K.slots[i].state = SLOT_OWNED;
			K.slots[i].owner = c;
			return i;
		}
	return 0;
}

/* The process is gone: its sockets come back to us; the range waits
 * until they have been quiet for quiet_ms (datagrams in flight to the
 * dead process's QPs are read and dropped here, never seen by the next
 * owner). */
static void slot_release(unsigned int i)
{
	unsigned int j;

	K.slots[i].state = SLOT_QUIET;
	K.slots[i].owner = NULL;
	K.slots[i].last = g_get_monotonic_time();
	for (j = 0; j < K.groups->len; j++) {
		struct group *g = g_ptr_array_index(K.groups, j);

		if (i < g->n) {
			g->handed[i] = false;
			watch_drain(g, i, true);
		}
	}
}

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

static gboolean on_gsi(gint fd, GIOCondition cond, gpointer data)
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

/* ------------------------------------------------------------------ */
/* Clients                                                             */
/* ------------------------------------------------------------------ */

static int reply(struct client *c, struct kal_hostsvc_msg *m, int status,
		 const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	m->status = status;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return -errno;
	return 0;
}

static bool addr_ok(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		in_addr_t a = ntohl(((struct sockaddr_in *)ss)->sin_addr.s_addr);

		return a != INADDR_ANY && !IN_MULTICAST(a) &&
		       a != INADDR_BROADCAST;
	}
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a =
			&((struct sockaddr_in6 *)ss)->sin6_addr;

		return !IN6_IS_ADDR_UNSPECIFIED(a) && !IN6_IS_ADDR_MULTICAST(a);
	}
	return false;
}

static int do_udp(struct client *c, struct kal_hostsvc_msg *m)
{
	struct group *g;
	int sp[2], fds[2], err;
	gpointer old;

	if (!addr_ok(&m->addr))
		return reply(c, m, -EINVAL, NULL, 0);
	if (!c->slot) {
		c->slot = slot_take(c);
		if (!c->slot) {
			g_warning("pid %d: no QPN range for it", c->pid);
			return reply(c, m, -ENOSPC, NULL, 0);
		}
		g_message("pid %d (uid %u): QPN range %u (0x%06x..0x%06x)",
			  c->pid, c->uid, c->slot,
			  c->slot << KAL_HOSTSVC_QPN_SHIFT,
			  ((c->slot + 1) << KAL_HOSTSVC_QPN_SHIFT) - 1);
	}
	err = group_get(&m->addr, &g);
	if (err)
		return reply(c, m, err, NULL, 0);
	while (g->n <= c->slot) {
		err = new_member(g);
		if (err) {
			g_warning("%s: socket %u of the group: %s", g->name,
				  g->n, g_strerror(-err));
			return reply(c, m, err, NULL, 0);
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return reply(c, m, -errno, NULL, 0);
	(void)fcntl(sp[0], F_SETFL, O_NONBLOCK);
	/* Asking again for an address replaces the forwarding socket. */
	old = g_hash_table_lookup(c->fwd, g);
	if (old)
		close(GPOINTER_TO_INT(old));
	g_hash_table_insert(c->fwd, g, GINT_TO_POINTER(sp[0]));
	{
		struct keep_rec r = { .kind = KEEP_FWD,
				      .index = (uint16_t)c->slot,
				      .pid = c->pid, .uid = c->uid,
				      .addr = g->addr };

		keep_send(&r, sp[0]);
	}
	watch_drain(g, c->slot, false);
	g->handed[c->slot] = true;
	m->qpn_base = c->slot << KAL_HOSTSVC_QPN_SHIFT;
	m->qpn_count = 1u << KAL_HOSTSVC_QPN_SHIFT;
	fds[0] = g->fds[c->slot];
	fds[1] = sp[1];
	err = reply(c, m, 0, fds, 2);
	close(sp[1]);
	return err;
}

static int do_listen(struct client *c, struct kal_hostsvc_msg *m, bool on)
{
	struct client *holder = g_hash_table_lookup(K.sids, &m->id);

	if (on) {
		if (holder && holder != c) {
			g_message("pid %d: service ID 0x%016" G_GINT64_MODIFIER
				  "x is pid %d's", c->pid, m->id, holder->pid);
			return reply(c, m, -EADDRINUSE, NULL, 0);
		}
		if (!holder) {
			struct keep_rec r = { .kind = KEEP_SID,
					      .index = (uint16_t)c->slot,
					      .sid = m->id };

			g_hash_table_insert(K.sids, g_memdup2(&m->id, 8), c);
			keep_send(&r, -1);
		}
		return reply(c, m, 0, NULL, 0);
	}
	if (holder != c)
		return reply(c, m, -ENOENT, NULL, 0);
	g_hash_table_remove(K.sids, &m->id);
	{
		struct keep_rec r = { .kind = KEEP_UNSID, .sid = m->id };

		keep_send(&r, -1);
	}
	return reply(c, m, 0, NULL, 0);
}

/*
 * A process of the previous daemon's, connected again: when it is the one
 * whose range we took over (its pid and uid, a range it names, no other
 * connection of its own), this connection becomes that client's and @c
 * goes (1: the caller returns G_SOURCE_REMOVE). -ESTALE to anyone else.
 */
static gboolean on_client(gint fd, GIOCondition cond, gpointer data);

static int do_resume(struct client *c, struct kal_hostsvc_msg *m)
{
	unsigned int slot = m->qpn_base >> KAL_HOSTSVC_QPN_SHIFT;
	struct client *o;
	GHashTableIter it;
	gpointer k, v;
	int err;

	if (slot == 0 || slot >= NSLOTS ||
	    m->qpn_base != slot << KAL_HOSTSVC_QPN_SHIFT ||
	    K.slots[slot].state != SLOT_OWNED || c->slot ||
	    g_hash_table_size(c->fwd))
		return reply(c, m, -ESTALE, NULL, 0);
	o = K.slots[slot].owner;
	if (o->fd >= 0 || o->pid != c->pid || o->uid != c->uid) {
		g_warning("pid %d (uid %u): claims QPN range %u, which is "
			  "not its own", c->pid, c->uid, slot);
		return reply(c, m, -ESTALE, NULL, 0);
	}
	g_hash_table_iter_init(&it, K.sids);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (v == c)
			return reply(c, m, -ESTALE, NULL, 0);
	/* The watch on its forwarding socket, which stood for it while it
	 * had no connection, gives way to the connection's. */
	g_source_remove(o->watch);
	o->fd = c->fd;
	o->watch = g_unix_fd_add(o->fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
				 on_client, o);
	g_ptr_array_remove_fast(K.clients, c);
	g_hash_table_destroy(c->fwd);
	g_free(c);
	g_message("pid %d: back, with its QPN range %u", o->pid, slot);
	err = reply(o, m, 0, NULL, 0);
	if (err)
		g_warning("pid %d: the reply to its return: %s", o->pid,
			  g_strerror(-err));
	return 1;
}

static gboolean on_client(gint fd, GIOCondition cond, gpointer data)
{
	struct client *c = data;
	struct kal_hostsvc_msg m;
	ssize_t n;
	int err;

	(void)fd;
	if (cond & (G_IO_ERR | G_IO_HUP | G_IO_NVAL)) {
		client_drop(c, NULL);
		return G_SOURCE_REMOVE;
	}
	n = recv(c->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n == 0) {
		client_drop(c, NULL);
		return G_SOURCE_REMOVE;
	}
	if (n != (ssize_t)sizeof(m) || m.magic != KAL_HOSTSVC_MAGIC ||
	    m.version != KAL_HOSTSVC_VERSION || m.reserved) {
		g_autofree char *why = g_strdup_printf(
			"a malformed request (%zd bytes)", n);

		client_drop(c, why);
		return G_SOURCE_REMOVE;
	}
	switch (m.op) {
	case KAL_HOSTSVC_OP_UDP:
		err = do_udp(c, &m);
		break;
	case KAL_HOSTSVC_OP_LISTEN:
	case KAL_HOSTSVC_OP_UNLISTEN:
		err = do_listen(c, &m, m.op == KAL_HOSTSVC_OP_LISTEN);
		break;
	case KAL_HOSTSVC_OP_RESUME:
		err = do_resume(c, &m);
		if (err == 1)	/* @c is its old self now, freed */
			return G_SOURCE_REMOVE;
		break;
	default: {
		g_autofree char *why = g_strdup_printf(
			"an unknown request %u", m.op);

		client_drop(c, why);
		return G_SOURCE_REMOVE;
	}
	}
	if (err) {
		client_drop(c, "a reply it does not read");
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

static void client_drop(struct client *c, const char *why)
{
	GHashTableIter it;
	gpointer k, v;

	if (why)
		g_warning("pid %d (uid %u): %s; disconnected", c->pid, c->uid,
			  why);
	else
		g_message("pid %d: gone%s", c->pid,
			  c->slot ? ", its QPN range waits to be quiet" : "");
	g_hash_table_iter_init(&it, K.sids);
	while (g_hash_table_iter_next(&it, &k, &v))
		if (v == c) {
			struct keep_rec r = { .kind = KEEP_UNSID,
					      .sid = *(uint64_t *)k };

			keep_send(&r, -1);
			g_hash_table_iter_remove(&it);
		}
	g_hash_table_iter_init(&it, c->fwd);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct keep_rec r = { .kind = KEEP_UNFWD,
				      .index = (uint16_t)c->slot,
				      .addr = ((struct group *)k)->addr };

		keep_send(&r, -1);
		close(GPOINTER_TO_INT(v));
	}
	g_hash_table_destroy(c->fwd);
	if (c->slot)
		slot_release(c->slot);
	/* From its own watch too (which then returns G_SOURCE_REMOVE):
	 * GLib allows removing the source being dispatched. */
	g_source_remove(c->watch);
	if (c->fd >= 0)
		close(c->fd);
	g_ptr_array_remove_fast(K.clients, c);
	g_free(c);
}

static gboolean on_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct client *c;
	int cfd;

	(void)cond;
	(void)data;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return G_SOURCE_CONTINUE;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    K.clients->len >= MAX_CLIENTS) {
		g_warning("a client refused: %s", K.clients->len >= MAX_CLIENTS
			  ? "too many clients" : g_strerror(errno));
		close(cfd);
		return G_SOURCE_CONTINUE;
	}
	if (cred.uid != 0) {
		unsigned int i, n = 0;

		for (i = 0; i < K.clients->len; i++)
			n += ((struct client *)K.clients->pdata[i])->uid ==
			     cred.uid;
		if (n >= MAX_CLIENTS_PER_UID) {
			g_warning("pid %d (uid %u) refused: the user has %u "
				  "connections already", cred.pid, cred.uid,
				  n);
			close(cfd);
			return G_SOURCE_CONTINUE;
		}
	}
	c = g_new0(struct client, 1);
	c->fd = cfd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->fwd = g_hash_table_new(g_direct_hash, g_direct_equal);
	c->watch = g_unix_fd_add(cfd, G_IO_IN | G_IO_HUP | G_IO_ERR,
				 on_client, c);
	g_ptr_array_add(K.clients, c);
	g_debug("pid %d (uid %u) connected", c->pid, c->uid);
	return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------------ */
/* The keeper: what outlives the daemon for its successor              */
/* ------------------------------------------------------------------ */

#define KEEP_MAGIC 0x6b656570u	/* "keep" */
/* How long a new daemon waits for the keeper's records. */
#define KEEP_WAIT_MS 3000

struct kept {
	struct keep_rec r;
	int fd;
};

static int send_rec(int s, struct keep_rec *r, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	r->magic = KEEP_MAGIC;
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(s, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*r)
		? 0 : -errno;
}

/* One record and its socket (-1 for none); 0 at the end of the stream,
 * -1 on an error or a malformed record. */
static int recv_rec(int s, struct keep_rec *r, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = r, .iov_len = sizeof(*r) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != (ssize_t)sizeof(*r) || r->magic != KEEP_MAGIC) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -1;
	}
	return 1;
}

static void keep_send(const struct keep_rec *r, int fd)
{
	struct keep_rec c = *r;
	int err;

	if (K.keep_fd < 0)
		return;
	err = send_rec(K.keep_fd, &c, fd);
	if (err) {
		g_warning("the keeper is gone (%s): a restart of this daemon "
			  "will break the running processes' soft-RoCE",
			  g_strerror(-err));
		close(K.keep_fd);
		K.keep_fd = -1;
	}
}

static bool kept_match(const struct kept *a, const struct keep_rec *r)
{
	if (a->r.kind == KEEP_SID)
		return a->r.sid == r->sid;
	return a->r.index == r->index && same_addr(&a->r.addr, &r->addr);
}

/* Keeps @r (taking @fd) in @kept, or forgets what it undoes. */
static void kept_apply(GArray *kept, struct keep_rec *r, int fd)
{
	unsigned int want = r->kind == KEEP_UNFWD ? KEEP_FWD
			    : r->kind == KEEP_UNSID ? KEEP_SID : r->kind;
	unsigned int i;

	if (want != KEEP_MEMBER)
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (k->r.kind == want && kept_match(k, r)) {
				if (k->fd >= 0)
					close(k->fd);
				g_array_remove_index(kept, i);
				break;
			}
		}
	if (r->kind == KEEP_MEMBER || r->kind == KEEP_FWD ||
	    r->kind == KEEP_SID) {
		struct kept k = { .r = *r, .fd = fd };

		g_array_append_val(kept, k);
	} else if (fd >= 0) {
		close(fd);
	}
}

static unsigned int kept_count(GArray *kept, unsigned int kind)
{
	unsigned int i, n = 0;

	for (i = 0; i < kept->len; i++)
		n += g_array_index(kept, struct kept, i).r.kind == kind;
	return n;
}

/* Hands everything to the daemon on @s: the groups' sockets in their
 * order, then the ranges' forwarding sockets, then the service IDs. */
static void kept_hand_over(GArray *kept, int s)
{
	static const unsigned int order[] = { KEEP_MEMBER, KEEP_FWD,
					      KEEP_SID };
	struct keep_rec end = { .kind = KEEP_END };
	unsigned int i, j;

	for (j = 0; j < G_N_ELEMENTS(order); j++)
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (k->r.kind == order[j] &&
			    send_rec(s, &k->r, k->fd) < 0)
				return;
		}
	(void)send_rec(s, &end, -1);
}

/*
 * The keeper's life: it records what the daemon tells it on @sp until the
 * daemon is gone. Then, while some process still holds a forwarding
 * socket, it waits on @lfd (at @kpath) for the next daemon, hands it
 * everything and ends; it ends at once when no process is left to keep
 * going.
 */
static G_NORETURN void keeper_main(int sp, int lfd, const char *kpath)
{
	GArray *kept = g_array_new(FALSE, FALSE, sizeof(struct kept));
	struct keep_rec r;
	int fd, got;

	while ((got = recv_rec(sp, &r, &fd)) > 0)
		kept_apply(kept, &r, fd);
	close(sp);
	if (!kept_count(kept, KEEP_FWD))
		goto out;
	g_message("keeper: the daemon is gone; holding the shared sockets "
		  "(%u forwarding) for the next one", kept_count(kept,
		  KEEP_FWD));
	for (;;) {
		GArray *pfds = g_array_new(FALSE, TRUE,
					   sizeof(struct pollfd));
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		unsigned int i;
		int s;

		g_array_append_val(pfds, p);
		for (i = 0; i < kept->len; i++) {
			struct kept *k = &g_array_index(kept, struct kept, i);

			p.fd = k->r.kind == KEEP_FWD ? k->fd : -1;
			p.events = 0;	/* a process's end closing: HUP */
			g_array_append_val(pfds, p);
		}
		if (poll((struct pollfd *)pfds->data, pfds->len, -1) < 0 &&
		    errno != EINTR) {
			g_array_free(pfds, TRUE);
			break;
		}
		for (i = kept->len; i-- > 0;) {
			struct pollfd *q = &g_array_index(pfds, struct pollfd,
							  i + 1);
			struct kept *k = &g_array_index(kept, struct kept, i);

			if (q->fd >= 0 && (q->revents & (POLLHUP | POLLERR))) {
				g_debug("keeper: pid %d is gone", k->r.pid);
				r = k->r;
				r.kind = KEEP_UNFWD;
				kept_apply(kept, &r, -1);
			}
		}
		if (g_array_index(pfds, struct pollfd, 0).revents & POLLIN) {
			s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (s >= 0) {
				unlink(kpath);
				kept_hand_over(kept, s);
				close(s);
				g_message("keeper: handed over to the new "
					  "daemon");
				g_array_free(pfds, TRUE);
				_exit(0);
			}
		}
		g_array_free(pfds, TRUE);
		if (!kept_count(kept, KEEP_FWD)) {
			g_message("keeper: every process is gone, nothing "
				  "left to keep");
			break;
		}
	}
out:
	unlink(kpath);
	_exit(0);
}

/* Starts our keeper listening at @kpath and tells it what we hold. */
static void keeper_start(const char *kpath)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	unsigned int i, j;
	int sp[2], lfd, fd;
	struct rlimit rl;
	pid_t pid;

	K.keep_fd = -1;
	if (strlen(kpath) >= sizeof(sun.sun_path)) {
		g_warning("no keeper: %s is too long a path; a restart of "
			  "this daemon will break running processes", kpath);
		return;
	}
	strcpy(sun.sun_path, kpath);
	unlink(kpath);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(kpath, 0600) < 0 || listen(lfd, 1) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		g_warning("no keeper: %s: %s; a restart of this daemon will "
			  "break running processes", kpath, g_strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return;
	}
	pid = fork();
	if (pid < 0) {
		g_warning("no keeper: fork: %s", g_strerror(errno));
		close(lfd);
		close(sp[0]);
		close(sp[1]);
		return;
	}
	if (pid == 0) {
		/* Only what the daemon sends: nothing else of its. */
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0 ||
		    rl.rlim_cur > 65536)
			rl.rlim_cur = 65536;
		for (fd = 3; fd < (int)rl.rlim_cur; fd++)
			if (fd != sp[1] && fd != lfd)
				close(fd);
		/* Out of the daemon's session: a ^C to a foreground daemon
		 * stops the daemon, not what running processes need. */
		(void)setsid();
		keeper_main(sp[1], lfd, kpath);
	}
	close(lfd);
	close(sp[1]);
	K.keep_fd = sp[0];
	g_debug("keeper: pid %d at %s", pid, kpath);
	/* What we took over, if anything, is the new keeper's too. */
	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		for (j = 0; j < g->n; j++) {
			struct keep_rec r = { .kind = KEEP_MEMBER,
					      .index = (uint16_t)j,
					      .addr = g->addr };

			keep_send(&r, g->fds[j]);
		}
	}
	for (i = 0; i < K.clients->len; i++) {
		struct client *c = g_ptr_array_index(K.clients, i);
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, c->fwd);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			struct keep_rec r = { .kind = KEEP_FWD,
					      .index = (uint16_t)c->slot,
					      .pid = c->pid, .uid = c->uid,
					      .addr = ((struct group *)k)->addr };

			keep_send(&r, GPOINTER_TO_INT(v));
		}
	}
	{
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, K.sids);
		while (g_hash_table_iter_next(&it, &k, &v)) {
			struct keep_rec r = {
				.kind = KEEP_SID,
				.index = (uint16_t)((struct client *)v)->slot,
				.sid = *(uint64_t *)k,
			};

			keep_send(&r, -1);
		}
	}
}

/* A process of the previous daemon's, known by its forwarding sockets
 * until it connects again: their closing is its end. */
static gboolean on_orphan_hup(gint fd, GIOCondition cond, gpointer data)
{
	(void)fd;
	(void)cond;
	client_drop(data, NULL);
	return G_SOURCE_REMOVE;
}

static struct group *group_find(const struct sockaddr_storage *ss)
{
	unsigned int i;

	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		if (same_addr(&g->addr, ss))
			return g;
	}
	return NULL;
}

/* Takes one record of the previous daemon's state over; false when it
 * does not fit (the socket is closed). */
static bool adopt_one(struct keep_rec *r, int fd)
{
	struct group *g = group_find(&r->addr);
	struct client *c = NULL;
	unsigned int i;

	if (r->kind != KEEP_SID && fd < 0)
		return false;
	switch (r->kind) {
	case KEEP_MEMBER:
		if (r->addr.ss_family != AF_INET &&
		    r->addr.ss_family != AF_INET6)
			break;
		if (!g) {
			g = g_new0(struct group, 1);
			g->tx = -1;
			g->addr = r->addr;
			g->len = r->addr.ss_family == AF_INET
				 ? sizeof(struct sockaddr_in)
				 : sizeof(struct sockaddr_in6);
			addr_name(&g->addr, g->name, sizeof(g->name));
			g_ptr_array_add(K.groups, g);
		}
		if (r->index != g->n || g->n >= NSLOTS)
			break;
		g->fds[g->n++] = fd;
		return true;
	case KEEP_FWD:
		if (!g || r->index == 0 || r->index >= g->n)
			break;
		if (K.slots[r->index].state == SLOT_OWNED) {
			c = K.slots[r->index].owner;
			if (c->pid != r->pid || g_hash_table_lookup(c->fwd, g))
				break;
		} else {
			c = g_new0(struct client, 1);
			c->fd = -1;
			c->pid = r->pid;
			c->uid = r->uid;
			c->slot = r->index;
			c->fwd = g_hash_table_new(g_direct_hash,
						  g_direct_equal);
			c->watch = g_unix_fd_add(fd, G_IO_HUP | G_IO_ERR,
						 on_orphan_hup, c);
			g_ptr_array_add(K.clients, c);
			K.slots[r->index].state = SLOT_OWNED;
			K.slots[r->index].owner = c;
		}
		(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		g_hash_table_insert(c->fwd, g, GINT_TO_POINTER(fd));
		g->handed[r->index] = true;
		return true;
	case KEEP_SID:
		if (r->index == 0 || r->index >= NSLOTS ||
		    K.slots[r->index].state != SLOT_OWNED ||
		    g_hash_table_lookup(K.sids, &r->sid))
			break;
		g_hash_table_insert(K.sids, g_memdup2(&r->sid, 8),
				    K.slots[r->index].owner);
		return true;
	default:
		break;
	}
	(void)i;
	if (fd >= 0)
		close(fd);
	return false;
}

/*
 * A keeper at @kpath is the previous daemon's: take over its groups (the
 * very sockets running processes are steered among, in their places),
 * the processes' ranges and forwarding sockets, and their service IDs.
 * Ranges nobody came back for wait to be quiet, as after any death.
 */
static void adopt(const char *kpath)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = KEEP_WAIT_MS / 1000 };
	unsigned int i, j, bad = 0;
	struct keep_rec r;
	int s, fd, got;

	if (strlen(kpath) >= sizeof(sun.sun_path))
		return;
	strcpy(sun.sun_path, kpath);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(s);
		return;
	}
	(void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((got = recv_rec(s, &r, &fd)) > 0 && r.kind != KEEP_END)
		bad += !adopt_one(&r, fd);
	close(s);
	if (got <= 0)
		g_warning("the previous daemon's keeper did not finish (%s)",
			  got < 0 ? g_strerror(errno) : "it closed");
	for (i = 0; i < K.groups->len; i++) {
		struct group *g = g_ptr_array_index(K.groups, i);

		if (!g->n)
			continue;
		g->drain[0] = g_unix_fd_add(g->fds[0], G_IO_IN, on_gsi, g);
		for (j = 1; j < g->n; j++) {
			if (g->handed[j])
				continue;
			if (K.slots[j].state == SLOT_FREE) {
				K.slots[j].state = SLOT_QUIET;
				K.slots[j].last = g_get_monotonic_time();
			}
			watch_drain(g, j, true);
		}
	}
	g_message("took over from the previous daemon: %u addresses, %u "
		  "processes' QPN ranges, %u service IDs%s", K.groups->len,
		  K.clients->len, g_hash_table_size(K.sids),
		  bad ? " (some of its records did not fit, dropped)" : "");
}

/* ------------------------------------------------------------------ */
/* Start                                                               */
/* ------------------------------------------------------------------ */

/* systemd socket activation (sd_listen_fds(3) without libsystemd): one
 * SOCK_SEQPACKET socket as fd 3. */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");

	if (!pid || !n || atol(pid) != (long)getpid() || atoi(n) != 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	(void)fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	g_autofree char *dir = NULL;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		g_printerr("hostrdma-kald: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	dir = g_path_get_dirname(path);
	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_printerr("hostrdma-kald: %s: %s\n", dir, g_strerror(errno));
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -1;
	/* A socket file nobody answers on is a dead daemon's: replace it.
	 * One that answers is a running daemon's: leave it. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		g_printerr("hostrdma-kald: a daemon already answers on %s\n",
			   path);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
		g_printerr("hostrdma-kald: %s: %s\n", path, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Where our keeper listens: next to the control socket. */
static char *keep_path(int lfd)
{
	struct sockaddr_un sun;
	socklen_t len = sizeof(sun);

	memset(&sun, 0, sizeof(sun));
	if (getsockname(lfd, (struct sockaddr *)&sun, &len) < 0 ||
	    sun.sun_family != AF_UNIX || !sun.sun_path[0]) {
		g_warning("no keeper: the control socket has no path; a "
			  "restart of this daemon will break running "
			  "processes");
		return NULL;
	}
	sun.sun_path[sizeof(sun.sun_path) - 1] = 0;
	return g_strconcat(sun.sun_path, ".keep", NULL);
}

static void log_syslog(const gchar *domain, GLogLevelFlags level,
		       const gchar *msg, gpointer data)
{
	int pri = LOG_INFO;

	(void)domain;
	(void)data;
	if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
		pri = LOG_ERR;
	else if (level & G_LOG_LEVEL_WARNING)
		pri = LOG_WARNING;
	else if (level & G_LOG_LEVEL_DEBUG)
		return;
	syslog(pri, "%s", msg);
}

static gboolean on_signal(gpointer data)
{
	(void)data;
	g_main_loop_quit(K.loop);
	return G_SOURCE_REMOVE;
}

static const char usage[] =
	"Usage: hostrdma-kald [OPTION]...\n"
	"The hostrdma host service: shares soft-RoCE's UDP port 4791 among\n"
	"every process on the host (one socket each, steered by destination\n"
	"QP), hands out QPN ranges and routes the IB CM's MADs.\n"
	"\n"
	"  -f, --foreground    stay in the foreground, log to stderr\n"
	"  -s, --socket PATH   control socket (default: " KAL_HOSTSVC_SYSTEM_PATH
	"\n"
	"                      for root, else $XDG_RUNTIME_DIR/"
	KAL_HOSTSVC_USER_SUBPATH ")\n"
	"  -q, --quiet-ms MS   a dead process's QPN range is reused after its\n"
	"                      sockets were silent this long (default 2000)\n"
	"  -h, --help          this text\n"
	"  -V, --version       the version\n"
	"\n"
	"Processes find the daemon at $" KAL_HOSTSVC_ENV " or the default\n"
	"path. See hostrdma-kald(8).\n";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "quiet-ms", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	g_autofree char *path = NULL, *kpath = NULL;
	bool foreground = false, activated = false;
	unsigned int kept;
	unsigned int i;
	char *end;
	long v;
	int c;

	K.quiet_ms = 2000;
	while ((c = getopt_long(argc, argv, "fs:q:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			foreground = true;
			break;
		case 's':
			g_free(path);
			path = g_strdup(optarg);
			break;
		case 'q':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 0 || v > 600000) {
				g_printerr("hostrdma-kald: --quiet-ms: bad "
					   "value \"%s\" (0..600000)\n",
					   optarg);
				return 2;
			}
			K.quiet_ms = (unsigned int)v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("hostrdma-kald %s\n", PACKAGE_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		g_printerr("hostrdma-kald: unexpected argument \"%s\"\n",
			   argv[optind]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Our children are keepers: none to wait for. */
	signal(SIGCHLD, SIG_IGN);
	/* Every message to stderr (or the journal), none to stdout. */
	g_log_writer_default_set_use_stderr(TRUE);
	K.listen_fd = activated_fd();
	activated = K.listen_fd >= 0;
	if (!activated) {
		if (!path)
			path = kal_hostsvc_daemon_path();
		if (!path) {
			g_printerr("hostrdma-kald: no socket path: not root and "
				   "XDG_RUNTIME_DIR unset; use --socket\n");
			return 1;
		}
		K.listen_fd = listen_on(path);
		if (K.listen_fd < 0)
			return 1;
	}
	if (!foreground && !activated) {
		if (daemon(0, 0) < 0) {
			g_printerr("hostrdma-kald: daemon: %s\n",
				   g_strerror(errno));
			return 1;
		}
		openlog("hostrdma-kald", LOG_PID, LOG_DAEMON);
		g_log_set_default_handler(log_syslog, NULL);
	}
	K.buf = g_malloc(DGRAM_MAX);
	K.groups = g_ptr_array_new();
	K.clients = g_ptr_array_new();
	K.sids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
				       NULL);
	K.keep_fd = -1;
	kpath = keep_path(K.listen_fd);
	if (kpath) {
		adopt(kpath);
		keeper_start(kpath);
	}
	K.loop = g_main_loop_new(NULL, FALSE);
	g_unix_fd_add(K.listen_fd, G_IO_IN, on_accept, NULL);
	g_timeout_add(K.quiet_ms / 4 + 10, on_tick, NULL);
	g_unix_signal_add(SIGTERM, on_signal, NULL);
	g_unix_signal_add(SIGINT, on_signal, NULL);
	g_message("listening on %s (QPN ranges of %u, reused after %u ms "
		  "quiet)", activated ? "the socket systemd passed" : path,
		  1u << KAL_HOSTSVC_QPN_SHIFT, K.quiet_ms);
	g_main_loop_run(K.loop);

	g_message("stopping: %" G_GUINT64_FORMAT " MADs forwarded, %"
		  G_GUINT64_FORMAT " unrouted, %" G_GUINT64_FORMAT
		  " requests for unheld service IDs refused, %"
		  G_GUINT64_FORMAT " stray datagrams dropped", K.forwarded,
		  K.unrouted, K.refused, K.strays);
	/* The keeper keeps what the processes still use, for the next
	 * daemon: none of it is undone in its eyes. */
	if (K.keep_fd >= 0)
		close(K.keep_fd);
	K.keep_fd = -1;
	kept = K.clients->len;
	if (kept)
		g_message("%u processes carry on; their ranges wait for the "
			  "next daemon", kept);
	while (K.clients->len)
		client_drop(g_ptr_array_index(K.clients, 0), NULL);
	for (i = 0; i < K.groups->len; i++)
		group_free(g_ptr_array_index(K.groups, i));
	g_ptr_array_free(K.groups, TRUE);
	g_ptr_array_free(K.clients, TRUE);
	g_hash_table_destroy(K.sids);
	g_main_loop_unref(K.loop);
	g_free(K.buf);
	close(K.listen_fd);
	/* The socket stays while processes wait for our successor: they
	 * see it refuse and wait, where none would mean "no daemon". */
	if (path && !activated && !kept)
		unlink(path);
	return 0;
}
