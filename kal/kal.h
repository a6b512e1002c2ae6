/* SPDX-License-Identifier: MIT */
/*
 * kal.h - kernel access layer: everything the stack asks of the operating
 * system. Netlink (links, addresses, routes, neighbours) through libnl-3,
 * and memory pinning with its RLIMIT_MEMLOCK accounting.
 *
 * Every function returns 0 or a negative errno; libnl's NLE_* codes are
 * translated here and never leave kal/. Every failure is also logged
 * (GLib domain "hostrdma-kal") naming the object and value concerned.
 */
#ifndef KAL_H
#define KAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <glib.h>

#define KAL_IFNAMSIZ 16
#define KAL_MAX_HWADDR 32

/* ------------------------------------------------------------------ */
/* Memory pinning                                                      */
/* ------------------------------------------------------------------ */

struct kal_pin;

/*
 * Pin [addr, addr + len), rounded out to whole pages: mlock() and
 * madvise(MADV_DONTFORK), so the pages stay resident and a fork()ed child
 * does not get copy-on-write copies of memory a peer may write into.
 * Pins may overlap; a page is locked once and unlocked when its last pin
 * goes. The process's distinct pinned pages are counted against
 * RLIMIT_MEMLOCK, except in a process holding CAP_IPC_LOCK (effective), as
 * the kernel's RDMA registrations (ib_umem) and mlock() itself let such a
 * process pass it: an application that registers 64 MiB as root on an
 * RNIC does so here too. The pages are counted either way.
 *
 * Every pin locks and marks its whole range, also the pages other pins
 * cover: kal counts by address, and if the application unmapped pinned
 * memory and mapped new memory at the same address (the kernel drops the
 * lock and MADV_DONTFORK with the old mapping), a new pin of the address
 * pins the new pages: those present at once, the others when first
 * touched (MLOCK_ONFAULT, which costs nothing where the pages are locked
 * already). The pin over the old memory is stale: it still counts its
 * addresses (once, like every overlap) until it is released, and
 * releasing it unlocks only addresses no other pin covers.
 *
 * Returns 0 and a pin the caller owns (release with kal_unpin), or
 * -EINVAL (len 0, range wraps), -ENOMEM (over RLIMIT_MEMLOCK: the log line
 * names the limit, what is pinned already and the request; or mlock itself
 * could not lock), -EFAULT (part of the range is not mapped), or another
 * errno of mlock/madvise. On failure nothing new stays pinned.
 */
int kal_pin(const void *addr, size_t len, struct kal_pin **out);

/* Release a pin; pages no other pin covers are unlocked and may fork
 * again. NULL is accepted. Thread-safe, like kal_pin.
 *
 * A fork()ed child starts with nothing pinned (locks are not inherited and
 * the pinned pages are not mapped in it); pins it inherited are stale and
 * kal_unpin only frees them. At process exit kal unlocks whatever is still
 * pinned; pins released after that are only freed. */
void kal_unpin(struct kal_pin *pin);

/* Bytes of distinct pages this process has pinned through kal now. */
uint64_t kal_pinned_bytes(void);

/* The limit kal_pin applies now, in bytes: RLIMIT_MEMLOCK's soft limit, or
 * UINT64_MAX when that is unlimited or the thread holds CAP_IPC_LOCK. */
uint64_t kal_pin_limit(void);

/* ------------------------------------------------------------------ */
/* Netlink: links, addresses, routes, neighbours                        */
/* ------------------------------------------------------------------ */

struct kal_nl;

/*
 * Open the netlink context of the calling thread's network namespace:
 * libnl-route caches of links, addresses, routes and neighbours kept
 * current by a cache manager, and a monitor thread that applies changes
 * and reports them to subscribers. The caller owns the context.
 * -errno (translated from NLE_*) when netlink is unavailable.
 *
 * All functions taking a context are thread-safe. Use it from threads of
 * the namespace it was opened in (kal_route_resolve opens sockets in the
 * calling thread's namespace to start neighbour resolution).
 */
int kal_nl_open(struct kal_nl **out);

/* Stop the monitor thread, free the caches and the subscriptions still
 * registered. NULL is accepted. Not from a kal_event_fn (it would wait for
 * its own thread). */
void kal_nl_close(struct kal_nl *nl);

enum kal_link_flags {
	KAL_LINK_UP = 1u << 0,	     /* IFF_UP */
	KAL_LINK_RUNNING = 1u << 1,  /* IFF_RUNNING: carrier, oper up */
	KAL_LINK_LOOPBACK = 1u << 2, /* IFF_LOOPBACK */
};

/* A snapshot of one interface with its addresses. */
struct kal_link {
	int ifindex;
	char ifname[KAL_IFNAMSIZ];
	uint32_t mtu;
	unsigned int flags; /* enum kal_link_flags */
	uint8_t hwaddr[KAL_MAX_HWADDR];
	uint32_t hwaddr_len;
	unsigned int arptype;	 /* ARPHRD_* */
	/* struct sockaddr_storage, AF_INET/AF_INET6: the addresses usable
	 * now (IPv6 ones once duplicate address detection passed);
	 * link-local IPv6 ones carry the ifindex as sin6_scope_id. */
	GArray *addrs;
};

void kal_link_free(struct kal_link *link);
/* g_autoptr(kal_link) needs a type name */
typedef struct kal_link kal_link;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(kal_link, kal_link_free)

/* Every interface now, ordered by ifindex; free with g_ptr_array_unref
 * (elements are freed with it). Never NULL. */
GPtrArray *kal_nl_links(struct kal_nl *nl);

/* One interface by index or name; NULL (and -ENODEV in *err if err is not
 * NULL) when there is none. The caller owns the result. */
struct kal_link *kal_nl_link_by_index(struct kal_nl *nl, int ifindex,
				      int *err);
struct kal_link *kal_nl_link_by_name(struct kal_nl *nl, const char *ifname,
				     int *err);

enum kal_route_type {
	KAL_ROUTE_UNICAST = 1, /* via a gateway or on-link */
	KAL_ROUTE_LOCAL = 2,   /* the destination is one of our addresses */
};

/* What `ip route get DST` and `ip neigh` would say about a destination. */
struct kal_route {
	enum kal_route_type type;
	struct sockaddr_storage dst;	 /* as asked */
	struct sockaddr_storage src;	 /* source address the kernel picks */
	struct sockaddr_storage gateway; /* AF_UNSPEC when on-link */
	int ifindex;			 /* egress interface */
	char ifname[KAL_IFNAMSIZ];
	uint32_t mtu;			 /* route MTU, else the link's */
	/* Next hop's link-layer address (the gateway's, else the
	 * destination's); valid when nh_hwaddr_len > 0. Loopback and local
	 * destinations have none and need none. */
	uint8_t nh_hwaddr[KAL_MAX_HWADDR];
	uint32_t nh_hwaddr_len;
};

/*
 * Resolve @dst (AF_INET or AF_INET6; the port is ignored; a link-local
 * IPv6 address needs its interface as sin6_scope_id) the way the kernel
 * routes it, asking the kernel (RTM_GETROUTE) so policy routing and VRFs
 * are honoured; @src, if not NULL, is the source address to route from.
 *
 * The next hop's link-layer address comes from the neighbour cache, else
 * from the kernel's neighbour table. When neither knows it: with
 * @timeout_ms == 0 kal returns 0 with nh_hwaddr_len 0 and sends nothing;
 * with @timeout_ms > 0 it starts neighbour resolution (an empty UDP
 * datagram to the next hop's discard port, from the route's source out of
 * its interface) and waits up to @timeout_ms for the kernel to learn it.
 *
 * Returns 0 with *@out filled, or
 *   -ENETUNREACH   no route, or a blackhole route
 *   -EHOSTUNREACH  an unreachable or prohibit route, or a destination that
 *                  is not a host (broadcast, multicast, anycast)
 *   -EADDRNOTAVAIL @src is not one of our addresses
 *   -EAFNOSUPPORT  not AF_INET/AF_INET6, or @src of another family
 *   -EINVAL        link-local IPv6 @dst or @src without a scope id
 *   -ETIMEDOUT     route found, the next hop did not answer in time
 *                  (*@out is filled except nh_hwaddr)
 * Every failure is logged with the address ("route to 10.9.0.1: ...").
 */
int kal_route_resolve(struct kal_nl *nl, const struct sockaddr *dst,
		      const struct sockaddr *src, unsigned int timeout_ms,
		      struct kal_route *out);

/* Format an AF_INET/AF_INET6 address (without port; "%<scope id>" after
 * a scoped IPv6 one) into @buf of @len bytes, truncating if need be;
 * INET6_ADDRSTRLEN + 12 always suffices. Returns @buf. For log lines. */
const char *kal_addr_str(const struct sockaddr *addr, char *buf, size_t len);

/*
 * Changes after kal_nl_open (the state at open is not reported; read it
 * with kal_nl_links). A link that appears already UP and RUNNING gives
 * LINK_NEW then LINK_UP; one that goes while UP and RUNNING gives
 * LINK_DOWN then LINK_DEL.
 */
enum kal_event_type {
	KAL_EVENT_LINK_NEW = 1,	 /* an interface appeared */
	KAL_EVENT_LINK_DEL,	 /* an interface went away */
	KAL_EVENT_LINK_UP,	 /* now UP and RUNNING */
	KAL_EVENT_LINK_DOWN,	 /* no longer both UP and RUNNING */
	KAL_EVENT_LINK_CHANGE,	 /* MTU, hardware address or name changed */
	KAL_EVENT_ADDR_ADD,	 /* usable now (IPv6: after DAD) */
	KAL_EVENT_ADDR_DEL,	 /* removed, or failed DAD */
};

struct kal_event {
	enum kal_event_type type;
	int ifindex;
	char ifname[KAL_IFNAMSIZ];
	unsigned int link_flags;	/* enum kal_link_flags, after the change */
	uint32_t mtu;
	struct sockaddr_storage addr;	/* ADDR_ADD / ADDR_DEL */
	uint8_t prefixlen;		/* ADDR_ADD / ADDR_DEL */
};

const char *kal_event_type_name(enum kal_event_type type);

/* Called on kal's monitor thread, one event and one subscriber at a time,
 * in subscription order; the caches reflect the event already (and maybe
 * later changes). May call any kal function taking the context except
 * kal_nl_close. */
typedef void (*kal_event_fn)(const struct kal_event *event, void *user_data);

/* Start reporting changes to @fn. Returns an id > 0. */
guint kal_nl_subscribe(struct kal_nl *nl, kal_event_fn fn, void *user_data);

/* Stop; when it returns, @fn is not running and will not run again.
 * From inside a kal_event_fn (its own id or another's) it does not wait:
 * only the caller's callback can be running then, and it returns by
 * itself. Unknown ids are ignored. */
void kal_nl_unsubscribe(struct kal_nl *nl, guint id);

/* ------------------------------------------------------------------ */
/* Sharing one UDP port by destination QP (soft-RoCE, the host service) */
/* ------------------------------------------------------------------ */

/*
 * Steer the datagrams of @fd's SO_REUSEPORT group by the InfiniBand
 * transport header they carry: the group's socket with index DestQP >>
 * @qpn_shift (the order in which the sockets joined the group) receives
 * a datagram whose BTH names that QP, so that each process holding one
 * socket of the group gets the datagrams of its own range of QPNs and
 * nobody else's. What no socket's range covers, and datagrams too short
 * to hold a BTH, go to index 0 (the owner of QP 0 and 1 and of the
 * group: it drops what it does not know). A classic BPF program
 * (SO_ATTACH_REUSEPORT_CBPF): no privilege needed.
 *
 * @qpn_shift 1..23, @nsocks 1..(1 << (24 - qpn_shift)). Returns 0 or a
 * negative errno (-EINVAL for the arguments; setsockopt's errno).
 */
int kal_udp_steer_by_qpn(int fd, unsigned int qpn_shift,
			 unsigned int nsocks);

/* ------------------------------------------------------------------ */
/* The host service (hostrdma-kald): its control protocol and client    */
/* ------------------------------------------------------------------ */

/*
 * hostrdma-kald owns what every process on the host shares: soft-RoCE's
 * UDP port on each address (a SO_REUSEPORT group steered by
 * kal_udp_steer_by_qpn), the QPN ranges, QP1 and the IB CM's service IDs.
 * A process speaks to it over a SOCK_SEQPACKET UNIX socket, one
 * struct kal_hostsvc_msg a packet each way; the daemon knows it by
 * SO_PEERCRED and holds what it gave the process until the socket closes.
 * See hostrdma-kald(8).
 */
#define KAL_HOSTSVC_ENV "HOSTRDMA_KALD_SOCKET"
#define KAL_HOSTSVC_SYSTEM_PATH "/run/hostrdma/kald.sock"
#define KAL_HOSTSVC_USER_SUBPATH "hostrdma/kald.sock"
#define KAL_HOSTSVC_MAGIC 0x6b616c64u	/* "kald" */
#define KAL_HOSTSVC_VERSION 1
/* Range i of QPNs is [i << SHIFT, (i + 1) << SHIFT); range 0 (QP0, QP1
 * and the low numbers) is the daemon's. */
#define KAL_HOSTSVC_QPN_SHIFT 16
#define KAL_HOSTSVC_NSLOTS (1u << (24 - KAL_HOSTSVC_QPN_SHIFT))
/* The IB CM's communication and SIDR request IDs of range i carry i in
 * their top 8 bits, so the daemon routes a reply by its ID. */
#define KAL_HOSTSVC_ID_SHIFT 24

enum kal_hostsvc_op {
	/* in: addr (port ignored). out: status, qpn_base, qpn_count; with
	 * SCM_RIGHTS the group's socket for the process's range, then a
	 * SOCK_SEQPACKET socket carrying the QP1 datagrams the daemon
	 * forwards (struct kal_hostsvc_fwd, then the UDP payload). */
	KAL_HOSTSVC_OP_UDP = 1,
	/* in: id = an IB CM service ID to receive REQ/SIDR_REQ for.
	 * out: status (-EADDRINUSE: another process holds it). */
	KAL_HOSTSVC_OP_LISTEN = 2,
	/* in: id. out: status (-ENOENT: not ours). */
	KAL_HOSTSVC_OP_UNLISTEN = 3,
	/* After a daemon restart, on a new connection: in: qpn_base, the
	 * range the process held. out: status (0: the range, its sockets
	 * and service IDs are the process's again; -ESTALE: unknown). */
	KAL_HOSTSVC_OP_RESUME = 4,
};

struct kal_hostsvc_msg {
	uint32_t magic;		/* KAL_HOSTSVC_MAGIC */
	uint16_t version;	/* KAL_HOSTSVC_VERSION */
	uint16_t op;		/* enum kal_hostsvc_op, echoed in the reply */
	int32_t status;		/* reply: 0 or a negative errno */
	uint32_t qpn_base;	/* reply to OP_UDP */
	uint32_t qpn_count;
	uint32_t reserved;	/* 0 */
	uint64_t id;		/* OP_LISTEN, OP_UNLISTEN */
	struct sockaddr_storage addr;	/* OP_UDP */
};

/* A forwarded QP1 datagram: this header, then the UDP payload. */
struct kal_hostsvc_fwd {
	uint32_t magic;		/* KAL_HOSTSVC_MAGIC */
	uint32_t len;		/* bytes of payload that follow */
	struct sockaddr_storage src;	/* the sender (address and port) */
};

struct kal_hostsvc;

/*
 * Where a process looks for the daemon: $HOSTRDMA_KALD_SOCKET when set
 * (empty: nowhere, the embedded mode is forced), else
 * /run/hostrdma/kald.sock when it exists, else
 * $XDG_RUNTIME_DIR/hostrdma/kald.sock. NULL for nowhere; g_free it.
 */
char *kal_hostsvc_client_path(void);

/* Where the daemon listens by default: /run/hostrdma/kald.sock for root,
 * $XDG_RUNTIME_DIR/hostrdma/kald.sock for others (NULL when unset). */
char *kal_hostsvc_daemon_path(void);

/* Connect to the daemon at @path. -ENOENT or -ECONNREFUSED: no daemon
 * there (quietly: the caller falls back); other errors are logged. */
int kal_hostsvc_connect(const char *path, struct kal_hostsvc **out);

/*
 * Ask for soft-RoCE's port on @addr: *@udp_fd, the process's socket of
 * the address's group, *@fwd_fd, where QP1 datagrams come that the daemon
 * forwards to this process (both the caller's, close-on-exec), and the
 * process's QPN range. -EPIPE when the daemon went away.
 */
int kal_hostsvc_udp(struct kal_hostsvc *hs, const struct sockaddr *addr,
		    socklen_t addrlen, int *udp_fd, int *fwd_fd,
		    uint32_t *qpn_base, uint32_t *qpn_count);

/* Receive REQ and SIDR_REQ MADs for IB CM service ID @sid (-EADDRINUSE:
 * another process holds it), or stop (-ENOENT: not held by us). */
int kal_hostsvc_listen(struct kal_hostsvc *hs, uint64_t sid, bool on);

/* On a new connection after the daemon restarted: take back QPN range
 * @qpn_base with what came with it (-ESTALE: the daemon does not know
 * this process by it). */
int kal_hostsvc_resume(struct kal_hostsvc *hs, uint32_t qpn_base);

/* Whether the daemon's end of the connection is still open (false once
 * it went away: a restart, or for good). Does not block. */
bool kal_hostsvc_alive(struct kal_hostsvc *hs);

void kal_hostsvc_close(struct kal_hostsvc *hs);

/*
 * Whether all @n sockets of @fds are hung up (their peers closed). When
 * some are and the others not yet, waits up to @settle_ms for the
 * others: the peers of a process's forwarding sockets are the daemon's
 * and its keeper's, which close one after another as the keeper exits
 * (and the kernel may put a last reference off for a moment), so a mix
 * is a moment of that, not an answer. None hung up: false at once.
 */
bool kal_fds_hung_up(const int *fds, unsigned int n, unsigned int settle_ms);

#endif /* KAL_H */
