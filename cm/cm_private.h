/* SPDX-License-Identifier: MIT */
/*
 * cm_private.h - the connection manager inside: its objects, the
 * transports behind struct cm_transport, and the helpers cm/'s files share.
 *
 * One connection manager serves the process (like the ual context it
 * works on): a thread running a GLib main context watches listening and
 * connecting sockets and fires time-outs; provider connection events
 * arrive through ual_set_conn_handler on provider threads. Both feed the
 * same objects:
 *
 *   struct cm_listen   a listener: (device, port, connection qualifier)
 *   struct cm_req      a connection request, from arrival until the
 *                      consumer accepted or rejected it (named by a
 *                      64-bit id the consumer hands back)
 *   struct cm_id       the connection of one QP, active or passive
 *
 * What depends on the transport (how a listener listens, how a connect
 * starts, how the private data limits look) sits behind
 * struct cm_transport: cm_iwarp.c does TCP and hands the socket to the
 * provider, which runs MPA (RFC 5044); cm_ib.c runs the InfiniBand CM
 * (REQ/REP/RTU/REJ/MRA/DREQ/DREP over QP1, IBA chapter 12) itself for
 * RoCE and IB devices and moves their QPs through RESET/INIT/RTR/RTS.
 *
 * The public face is cm.h. Errors are 0 / -errno, logged in domain
 * "hostrdma-cm" naming the object.
 */
#ifndef CM_PRIVATE_H
#define CM_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <glib.h>

#include "cm/cm.h"
#include "kal/kal.h"
#include "ual/ual.h"

#define CM_PREFIX_MAX 64
#define CM_DEFAULT_TIMEOUT_MS 10000u
/* The provider's own request time-out should fire first. */
#define CM_REQ_GRACE_MS 2000u
#define CM_ENV_TIMEOUT "HOSTRDMA_CM_TIMEOUT_MS"

struct cm;
struct cm_listen;
struct cm_req;
struct cm_id;

enum cm_id_state {
	CM_ID_IDLE = 0,
	CM_ID_SOCKET,		/* transport's own phase (TCP connect) */
	CM_ID_PROVIDER,		/* the provider runs the set-up (MPA) */
	CM_ID_ACCEPTING,	/* passive: accepted, waiting for RTS */
	CM_ID_ESTABLISHED,
	CM_ID_CLOSING,		/* orderly close started */
	CM_ID_CLOSED,
	CM_ID_NSTATES
};

/* Per-transport operations. Called without cm->lock held unless the
 * comment says so. */
struct cm_transport {
	const char *name;
	/* Start / stop listening for @l (its port may be 0: pick one and
	 * store it in l->port). */
	int (*listen)(struct cm *cm, struct cm_listen *l);
	void (*unlisten)(struct cm *cm, struct cm_listen *l);
	/* Optional: take @l's service ID host-wide (the host service then
	 * routes its requests to this process), and give it back. Called
	 * after listen and after unlisten, without cm->lock: they may wait
	 * for a hostrdma-kald that is restarting, and the manager's other
	 * work must not wait with them. */
	int (*claim)(struct cm *cm, struct cm_listen *l);
	void (*unclaim)(struct cm *cm, struct cm_listen *l);
	/* Start connecting @id to id->remote_addr; report through
	 * cm_id_report_*. */
	int (*connect)(struct cm *cm, struct cm_id *id);
	/* Abandon the set-up of @id that connect started (socket phase). */
	void (*cancel)(struct cm *cm, struct cm_id *id);
	/* Turn a connected socket into @id's connection. */
	int (*socket_convert)(struct cm *cm, struct cm_id *id, int sockfd);
	/* Bytes of private data for @op on @d. */
	uint32_t (*max_private_data)(struct ual_device *d,
				     enum cm_pdata_op op);
	/* Optional: a transport that runs the set-up itself instead of the
	 * provider's conn_accept / conn_reject (IB CM). @conn is what the
	 * transport handed over in its REQUEST; consumed as there. */
	int (*accept)(struct cm *cm, struct rnicpi_conn *conn,
		      struct cm_id *id);
	void (*reject)(struct cm *cm, struct rnicpi_conn *conn,
		       const void *pdata, uint32_t len);
	/* Optional: close an ESTABLISHED / CLOSING @id (instead of moving
	 * the QP to CLOSING), and forget the transport's state of @id when
	 * it is destroyed or its set-up abandoned in state @was. */
	int (*disconnect)(struct cm *cm, struct cm_id *id, bool abortive);
	void (*release)(struct cm *cm, struct cm_id *id, enum cm_id_state was);
	/* Optional: the active side's answer to ACCEPT_ARRIVED (three-way
	 * set-up): RTU when @ok, else REJ; @pdata goes with it. */
	int (*confirm)(struct cm *cm, struct cm_id *id, bool ok,
		       const void *pdata, uint32_t len);
};

extern const struct cm_transport cm_iwarp_transport;
extern const struct cm_transport cm_ib_transport;
extern const struct cm_transport cm_native_transport;

/* The transport table for @d, or NULL (logged) when there is none. */
const struct cm_transport *cm_transport_of(struct ual_device *d);

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

struct cm {
	gint ref;
	struct ual *u;
	struct kal_nl *nl;
	GMainContext *ctx;	/* the manager's sources */
	struct rnicpi_engine engine;	/* runs ctx on the thread */
	gint quit;		/* the thread stops (cm_close) */
	GThread *thread;
	uint32_t timeout_ms;

	/* Orders listens and their ends with the claims of their service
	 * IDs (cm_transport.claim): taken before lock, held across a claim
	 * that may wait, so that a listener's end cannot give its service
	 * ID back after a new listener of the same ID claimed it. */
	GMutex claim_lock;
	GMutex lock;		/* everything below, and object states */
	GPtrArray *listens;	/* struct cm_listen *, one reference each */
	GHashTable *reqs;	/* id -> struct cm_req * (a reference) */
	GHashTable *ids;	/* struct rnicpi_qp * -> struct cm_id * (ref) */
	uint64_t next_req_id;
	guint next_obj;
	void *iwarp;		/* cm_iwarp.c's state */
	void *ib;		/* cm_ib.c's state */
	/* cm_native_sidr.c: &req_id -> its SIDR request reported and not
	 * answered yet (NULL until the first) */
	GHashTable *native_sidr_in;
};

struct cm_listen {
	gint ref;
	struct cm *cm;
	const struct cm_transport *tp;
	struct ual_device *dev;	/* reference */
	uint8_t port_num;
	uint16_t port;		/* host order */
	uint64_t sid;		/* IB CM service ID (host order), else 0 */
	/* cm_listen_from: requests from this remote port only (host
	 * order); 0 = any. */
	uint16_t remote_port;
	cm_event_fn fn;
	void *user_data;
	GRecMutex cb_lock;	/* held while fn runs */
	bool dead;		/* under cb_lock and cm->lock */
	void *tp_data;		/* the transport's */
	char prefix[CM_PREFIX_MAX];
};

enum cm_req_state {
	CM_REQ_READING = 1,	/* the provider reads the peer's request */
	CM_REQ_REPORTED,	/* the consumer has it, no answer yet */
	CM_REQ_ANSWERED,	/* accepted or rejected: gone */
	CM_REQ_FAILED,		/* time-out or the peer gave up: gone */
};

struct cm_req {
	gint ref;
	struct cm *cm;
	uint64_t id;
	enum cm_req_state state;	/* under cm->lock */
	struct ual_device *dev;		/* reference */
	uint8_t port_num;
	uint16_t port;			/* listener's, host order */
	struct cm_listen *listen;	/* reference; NULL for a conversion */
	struct cm_id *convert;		/* reference: socket conversion */
	struct rnicpi_conn *conn;	/* the provider's */
	/* Under cm->lock: the conn was handed to the provider (cm_req_take
	 * called); the manager refused the conn itself, so an upcall still
	 * under way must not; the provider reported after the request
	 * failed here. */
	bool handed, conn_taken, provider_said;
	/* Held around the provider's upcall for a handed conn and around
	 * the manager's own refusal of it, so that the refusal never comes
	 * after the ERROR upcall returned (rnicpi.h). Taken before
	 * cm->lock. */
	GRecMutex answer_lock;
	uint32_t timeout_ms;		/* of the timer, for its message */
	GSource *timer;
	struct sockaddr_storage local_addr, remote_addr;
	uint32_t ird, ord;
	uint8_t *private_data;
	uint32_t private_data_len;
	char prefix[CM_PREFIX_MAX];
};


const char *cm_id_state_name(enum cm_id_state s);

struct cm_id {
	gint ref;
	struct cm *cm;
	const struct cm_transport *tp;
	struct ual_qp *qp;		/* reference */
	struct rnicpi_qp *rqp;
	struct ual_device *dev;		/* reference */
	bool active;
	enum cm_id_state state;		/* under cm->lock */
	cm_event_fn fn;
	void *user_data;
	GRecMutex cb_lock;
	bool dead;			/* under cb_lock */
	uint64_t req_id;
	struct sockaddr_storage local_addr, remote_addr;
	uint16_t port;			/* remote qualifier, host order */
	uint64_t sid;			/* IB CM service ID, host order */
	void *tp_data;			/* the transport's, under cm->lock */
	struct cm_param param;	/* private data copied below */
	uint8_t pdata[512];
	/* cm_disconnect_pdata's, for the transport's close (under
	 * cm->lock). */
	uint8_t disc_pdata[256];
	uint32_t disc_pdata_len;
	/* Transport phase (cm_iwarp.c): socket, watch, time-out. */
	int sockfd;
	GSource *io_source;
	GSource *timer;
	/* Socket conversion: the caller waits for the outcome; until it
	 * succeeded, failures go to the caller only (not to fn). */
	bool converting;
	GCond cond;
	bool convert_done;
	int convert_err;
	char prefix[CM_PREFIX_MAX];
};

/* ------------------------------------------------------------------ */
/* Process-wide manager (cm.c)                                         */
/* ------------------------------------------------------------------ */

/* The running manager, or NULL. Borrowed: valid while a reference from
 * cm_open is held by the caller. */
struct cm *cm_get(void);

/* Run @fn(@data) on the manager's thread soon. */
GSource *cm_timeout_add(struct cm *cm, uint32_t ms, GSourceFunc fn,
			void *data, GDestroyNotify destroy);

/* Which interface owns the local address @sa (lo for 127/8 and ::1);
 * 0 when none does. */
int cm_ifindex_of_local(struct cm *cm, const struct sockaddr *sa);

/* References (cm_id_ref / cm_id_unref: cm.h). */
struct cm_req *cm_req_ref(struct cm_req *req);
void cm_req_unref(struct cm_req *req);
struct cm_listen *cm_listen_ref(struct cm_listen *l);
void cm_listen_unref(struct cm_listen *l);

/* Deliver an event to @id's / @l's consumer (unless destroyed). */
void cm_id_deliver(struct cm_id *id, struct cm_event *ev);

/* Transports report the outcome of their phase of @id. Status -errno. */
void cm_id_report_failure(struct cm_id *id, int status);
/* The transport handed the connection to the provider (CM_ID_PROVIDER). */
void cm_id_set_state(struct cm_id *id, enum cm_id_state s);

/* A new request arrived on @l (transport's thread): registered with a
 * fresh id, a time-out started. The caller hands req->id's request to
 * the provider next. Returns a reference. */
struct cm_req *cm_req_new(struct cm *cm, struct cm_listen *l,
			  struct ual_device *dev,
			  const struct sockaddr_storage *local,
			  const struct sockaddr_storage *remote);
/* Bound the time the peer has to complete @req to @ms from now (a
 * socket conversion's own time-out) instead of the manager's. */
void cm_req_set_timeout(struct cm_req *req, uint32_t ms);
/* Hand @fd, the request's stream, to the device's provider to read the
 * peer's request (iw_take_request). 0: the stream is the provider's; on
 * error it stays the caller's, who abandons @req. */
int cm_req_take(struct cm_req *req, int fd);
/* Give up on @req: refused if the consumer had it; refused too if the
 * provider still reads it (its copy of the stream is closed before this
 * returns, and it reports nothing more); forgotten if it never reached
 * the provider. */
void cm_req_abandon(struct cm_req *req, int status);

/* Whether @l takes a request from @remote (cm_listen_from's port). */
bool cm_listen_takes(const struct cm_listen *l,
		     const struct sockaddr_storage *remote);

/* The listener for (@dev, @port_num, @port), new reference, or NULL.
 * Called with cm->lock held. */
struct cm_listen *cm_listen_find_locked(struct cm *cm, struct ual_device *dev,
					uint8_t port_num, uint16_t port);
/* The IB listener for service ID @sid on @dev, new reference, or NULL.
 * Called with cm->lock held. */
struct cm_listen *cm_listen_find_sid_locked(struct cm *cm,
					    struct ual_device *dev,
					    uint8_t port_num, uint64_t sid);

/* cm.c helpers shared by the files of cm/. */
void cm_source_drop(GSource **s);
/* @ss's port (host order @port), IPv4 or IPv6; other families as they
 * are. */
void cm_sockaddr_set_port(struct sockaddr_storage *ss, uint16_t port);
void cm_to_rnicpi_param(const struct cm_param *p,
			struct rnicpi_conn_param *rp);
/* Refuse @c (the provider consumes it); failures are logged. */
void cm_provider_conn_reject(struct ual_device *d, struct rnicpi_conn *c,
			     const void *pdata, uint32_t len);
/* The addresses a provider event names, unmapped, over @local/@remote. */
void cm_copy_peer_addrs(struct sockaddr_storage *local,
			struct sockaddr_storage *remote,
			const struct rnicpi_conn_event *ev);
/* cm_native.c: a request (or its failure) on a NATIVE_CM device, whose
 * conn the provider made itself. */
void cm_native_conn_event(struct cm *cm, struct ual_device *d,
			  const struct rnicpi_conn_event *ev);
/* UD service ID resolution (cm.h cm_sidr_*): the IB CM's own SIDR
 * (cm_ib_sidr.c) or a native-CM provider's (cm_native_sidr.c), each
 * object starting with this header. */
struct cm_sidr {
	bool native;
};
int cm_ib_sidr_request(struct ual_device *d, const struct sockaddr *dst,
		       uint64_t sid, uint16_t port, const void *pdata,
		       uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
		       void *user_data, struct cm_sidr **out);
void cm_ib_sidr_destroy(struct cm_sidr *s);
/* -ENOENT: not an IB CM request, or answered. */
int cm_ib_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
		     uint32_t qkey, const void *pdata, uint32_t len);
int cm_native_sidr_request(struct ual_device *d, const struct sockaddr *dst,
			   uint64_t sid, uint16_t port, const void *pdata,
			   uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
			   void *user_data, struct cm_sidr **out);
void cm_native_sidr_destroy(struct cm_sidr *s);
/* -ENOENT: not a native request (or answered). */
int cm_native_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
			 uint32_t qkey, const void *pdata, uint32_t len);
/* A provider's SIDR_REQUEST or SIDR_REPLY (NATIVE_SIDR devices). */
void cm_native_sidr_event(struct cm *cm, struct ual_device *d,
			  const struct rnicpi_conn_event *ev);
/* cm_close: the native SIDR requests nobody answered are refused. */
void cm_native_sidr_fini(struct cm *cm);
/* The native listener @rl is one of, new reference, or NULL. */
struct cm_listen *cm_native_listen_of(struct cm *cm,
				      const struct rnicpi_listener *rl);

/* cm_req.c: a REQUEST or ERROR of a conn the transport handed over
 * (core_ctx: its struct cm_req). */
void cm_req_event(struct cm *cm, const struct rnicpi_conn_event *ev);
/* The same for a conn from iw_take_request, whose core_ctx is the
 * request's id: the request may be gone by the time the upcall comes. */
void cm_req_provider_event(struct cm *cm, const struct rnicpi_conn_event *ev);

/* Provider connection events (ual's connection handler): the connection
 * is found by ev->qp, which the provider keeps alive during the upcall. */
void cm_conn_event(struct ual_device *d, const struct rnicpi_conn_event *ev,
		   void *user_data);
/* An event of @id's connection from a transport that runs the connection
 * itself (cm_ib.c), moving @id as a provider's event would. The caller
 * holds a reference on @id; ev->qp is not read: the consumer may have
 * destroyed its QP already (a destroyed @id drops the event). */
void cm_id_conn_event(struct cm_id *id, const struct rnicpi_conn_event *ev);

/* A v4-mapped IPv6 address (what a dual-stack socket reports for IPv4
 * peers) becomes the plain IPv4 address; others are left alone. */
void cm_sockaddr_unmap(struct sockaddr_storage *ss);

/* Format "1.2.3.4:5" / "[::1]:5" into @buf of at least 64 bytes. */
const char *cm_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);

#define cm_info(obj, fmt, ...) \
	g_info("%s " fmt, (obj)->prefix, ##__VA_ARGS__)
#define cm_debug(obj, fmt, ...) \
	g_debug("%s " fmt, (obj)->prefix, ##__VA_ARGS__)
#define cm_warn(obj, fmt, ...) \
	g_warning("%s " fmt, (obj)->prefix, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Entry points' helpers                                               */
/* ------------------------------------------------------------------ */

/* The running manager for a cm.h entry point @fn, or NULL (logged: the
 * caller holds no cm_open reference). */
struct cm *cm_running(const char *fn);
/* cm_resolve on @cm (the transports resolve on the manager they run on). */
int cm_route_resolve(struct cm *cm, const struct sockaddr *dst,
		     const struct sockaddr *src, enum rnicpi_transport transport,
		     struct cm_route *out);
/* cm_reject on @cm, for the manager's own refusals. */
int cm_req_reject(struct cm *cm, uint64_t req_id, const void *private_data,
		  uint32_t private_data_len);

#endif /* CM_PRIVATE_H */
