/* SPDX-License-Identifier: MIT */
/*
 * ual.h - the user access layer: what is the same for every RNIC.
 *
 * Providers (loaded modules or built in), the devices they run on network
 * interfaces, and the verbs objects on those devices with reference counts
 * and parent/child rules; memory registration with pinning (kal/), shared
 * between registrations of the same pages; completion notification through
 * file descriptors and GLib sources; asynchronous events fanned out to
 * subscribers.
 *
 * Conventions: functions return 0 or a negative errno and log (GLib domain
 * "hostrdma-ual") what was wrong, naming the object ("PD[3] siw_lo:") and
 * the value. Objects are reference counted: a create gives the caller one
 * reference that the matching destroy consumes; a lookup returns a new
 * reference, released with the object's _put. Destroying a parent that
 * still has children fails with -EBUSY and changes nothing.
 *
 * Threads: every function may be called from any thread.
 */
#ifndef UAL_H
#define UAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "rnicpi/rnicpi.h"

/* Environment and configuration (documented in man/hostrdma.7):
 *  HOSTRDMA_PROVIDER_PATH  colon-separated directories searched for
 *                          provider modules instead of the installed one
 *  HOSTRDMA_DEVICES        comma-separated device names or glob patterns
 *                          ("siw_lo,rxe_*"), "!pattern" excludes; replaces
 *                          the config file's [devices] section
 *  HOSTRDMA_CONF           configuration file instead of
 *                          $(sysconfdir)/hostrdma/hostrdma.conf; empty:
 *                          none. [devices] include= / exclude= patterns,
 *                          [provider NAME] key=value options.
 *  HOSTRDMA_OPTIONS        provider options "siw.mpa_crc=required,...",
 *                          over the file's
 * Without an include list a device is made for every provider and
 * interface that is UP, RUNNING and has an address, if the provider
 * agrees (see ual/ual_device.c).
 */
#define UAL_ENV_PROVIDER_PATH "HOSTRDMA_PROVIDER_PATH"
#define UAL_ENV_DEVICES "HOSTRDMA_DEVICES"
#define UAL_ENV_CONF "HOSTRDMA_CONF"
#define UAL_ENV_OPTIONS "HOSTRDMA_OPTIONS"

struct ual;
struct ual_provider;
struct ual_device;
struct ual_pd;
struct ual_mr;
struct ual_mw;
struct ual_cq;
struct ual_srq;
struct ual_qp;
struct ual_ah;

/* ------------------------------------------------------------------ */
/* The context: providers and devices                                  */
/* ------------------------------------------------------------------ */

/*
 * The process's access layer, shared: the first open loads providers,
 * reads the configuration, opens kal's netlink context and creates the
 * devices; later opens return the same context with one more reference.
 */
int ual_open(struct ual **out);
/* Drop a reference from ual_open; the last one destroys the devices.
 * -EBUSY (nothing changed) if, at the last one, PDs or CQs are still open
 * on a device. A device reference still held afterwards keeps that device
 * (and its provider) in memory, but it takes no new objects (-ENODEV).
 * Not from inside an event callback. */
int ual_close(struct ual *u);

/* Providers that loaded, and the reasons others did not. */
const GPtrArray *ual_provider_list(struct ual *u); /* struct ual_provider *, borrowed */
const GPtrArray *ual_load_errors(struct ual *u); /* char *, one line each */
/* Devices that were selected but could not be created, one line each
 * naming the device and the provider's reason. A copy: g_ptr_array_unref. */
GPtrArray *ual_device_errors(struct ual *u);
const char *ual_provider_name(const struct ual_provider *p);
const char *ual_provider_description(const struct ual_provider *p);
enum rnicpi_transport ual_provider_transport(const struct ual_provider *p);
/* Path of the module, or "built-in". */
const char *ual_provider_origin(const struct ual_provider *p);

/* Devices: a new reference to each; g_ptr_array_unref puts them. */
GPtrArray *ual_device_list(struct ual *u);
/* By name ("siw_lo"); NULL if there is none. New reference. */
struct ual_device *ual_device_lookup(struct ual *u, const char *name);
/* A device of @transport (0 = any) on interface @ifindex. New reference. */
struct ual_device *ual_device_by_ifindex(struct ual *u, int ifindex,
					 enum rnicpi_transport transport);
struct ual_device *ual_device_get(struct ual_device *d);
void ual_device_put(struct ual_device *d);
typedef struct ual_device ual_device;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ual_device, ual_device_put)

const char *ual_device_name(const struct ual_device *d);
const struct ual_provider *ual_device_provider(const struct ual_device *d);
enum rnicpi_transport ual_device_transport(const struct ual_device *d);
int ual_device_ifindex(const struct ual_device *d);
const char *ual_device_ifname(const struct ual_device *d);
int ual_device_query(struct ual_device *d, struct rnicpi_device_attr *attr);
int ual_device_query_port(struct ual_device *d, uint8_t port,
			  struct rnicpi_port_attr *attr);
int ual_device_query_gid(struct ual_device *d, uint8_t port, uint32_t index,
			 struct rnicpi_gid_entry *entry);
/* The provider's device, for cm/ (connection hooks, GSI). Borrowed. */
struct rnicpi_device *ual_device_rnicpi(struct ual_device *d);

/* ------------------------------------------------------------------ */
/* Protection domains, memory                                          */
/* ------------------------------------------------------------------ */

int ual_pd_alloc(struct ual_device *d, struct ual_pd **out);
/* -EBUSY while MRs, MWs, QPs, SRQs or AHs use it. */
int ual_pd_free(struct ual_pd *pd);
struct ual_device *ual_pd_device(const struct ual_pd *pd); /* borrowed */

/*
 * Register @len bytes at @addr with @access (enum rnicpi_access_flags):
 * pins the pages through kal, then registers with the provider. Every
 * call is a registration of its own with its own lkey and rkey, also for
 * a range and rights another MR of the PD has: deregistering or
 * invalidating one MR ends its keys only. (The pinning is shared: pages
 * another registration pinned are not pinned again.) ZERO_BASED in
 * @access makes the tagged offset of the first byte 0. Returns 0 and an
 * MR the caller owns (ual_mr_dereg), or -errno: -EINVAL (bad range or
 * access bits, or the provider refused them), -ENOMEM / -EFAULT from
 * pinning (kal_pin), the provider's errors.
 */
int ual_mr_reg(struct ual_pd *pd, void *addr, size_t len,
	       unsigned int access, struct ual_mr **out);
/* Deregister and unpin; -EBUSY (still registered) while a window is
 * bound, -ENODEV if already deregistered. */
int ual_mr_dereg(struct ual_mr *mr);
/* Change access (and/or the range) in place; keys change. */
int ual_mr_rereg(struct ual_mr *mr, void *addr, size_t len,
		 unsigned int access);
uint32_t ual_mr_lkey(const struct ual_mr *mr);
uint32_t ual_mr_rkey(const struct ual_mr *mr);
void *ual_mr_addr(const struct ual_mr *mr);
size_t ual_mr_length(const struct ual_mr *mr);
uint64_t ual_mr_iova(const struct ual_mr *mr);
unsigned int ual_mr_access(const struct ual_mr *mr);
struct rnicpi_mr *ual_mr_rnicpi(struct ual_mr *mr); /* borrowed */

int ual_mw_alloc(struct ual_pd *pd, enum rnicpi_mw_type type,
		 struct ual_mw **out);
int ual_mw_free(struct ual_mw *mw);
uint32_t ual_mw_rkey(const struct ual_mw *mw);
struct rnicpi_mw *ual_mw_rnicpi(struct ual_mw *mw); /* borrowed */

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

int ual_cq_create(struct ual_device *d, uint32_t cqe, struct ual_cq **out);
/* -EBUSY while a QP or SRQ uses it. */
int ual_cq_destroy(struct ual_cq *cq);
int ual_cq_resize(struct ual_cq *cq, uint32_t cqe);
uint32_t ual_cq_size(const struct ual_cq *cq);
/* Up to @n completions; returns how many or -errno. */
int ual_cq_poll(struct ual_cq *cq, int n, struct rnicpi_wc *wc);
/* Arm the notification (one-shot). */
int ual_cq_arm(struct ual_cq *cq, bool solicited_only);
/* Readable after an armed completion; for poll()/epoll. Borrowed. */
int ual_cq_fd(const struct ual_cq *cq);
/* Consume the fd's readiness; -EAGAIN if it was not readable. */
int ual_cq_ack(struct ual_cq *cq);

/*
 * A GSource that dispatches when the CQ's fd is readable, after acking it.
 * The callback is a ual_cq_source_fn given through g_source_set_callback
 * (cast with G_SOURCE_FUNC); it usually polls, re-arms, and polls again.
 * The source holds a reference on the CQ; the caller owns the source.
 * NULL (logged) if the CQ has no notification fd. ual_cq_destroy does
 * not wait for sources: it destroys them (g_source_destroy), the owner
 * still unrefs them.
 */
typedef gboolean (*ual_cq_source_fn)(struct ual_cq *cq, gpointer user_data);
GSource *ual_cq_source_new(struct ual_cq *cq);

/* ------------------------------------------------------------------ */
/* Shared receive queues, queue pairs, address handles                  */
/* ------------------------------------------------------------------ */

int ual_srq_create(struct ual_pd *pd, struct rnicpi_srq_attr *attr,
		   struct ual_srq **out);
int ual_srq_destroy(struct ual_srq *srq); /* -EBUSY while QPs use it */
int ual_srq_modify(struct ual_srq *srq, struct rnicpi_srq_attr *attr,
		   unsigned int mask);
int ual_srq_query(struct ual_srq *srq, struct rnicpi_srq_attr *attr);
int ual_srq_post_recv(struct ual_srq *srq, const struct rnicpi_recv_wr *wr,
		      const struct rnicpi_recv_wr **bad);

struct ual_qp_init_attr {
	enum rnicpi_qp_type qp_type;
	struct ual_cq *send_cq;
	struct ual_cq *recv_cq;
	struct ual_srq *srq;
	struct rnicpi_qp_cap cap; /* in: minimum; out: granted */
	bool sq_sig_all;
};

int ual_qp_create(struct ual_pd *pd, struct ual_qp_init_attr *attr,
		  struct ual_qp **out);
int ual_qp_destroy(struct ual_qp *qp);
int ual_qp_modify(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		  unsigned int mask);
int ual_qp_query(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		 unsigned int mask);
uint32_t ual_qp_num(const struct ual_qp *qp);
struct ual_pd *ual_qp_pd(const struct ual_qp *qp);	  /* borrowed */
struct rnicpi_qp *ual_qp_rnicpi(struct ual_qp *qp);	  /* borrowed */
/* The QP with number @qp_num on @d (to route a completion back to its
 * owner). New reference, or NULL. */
struct ual_qp *ual_qp_lookup(struct ual_device *d, uint32_t qp_num);
struct ual_qp *ual_qp_get(struct ual_qp *qp);
void ual_qp_put(struct ual_qp *qp);
/* Opaque pointer of the layer above (itapi's endpoint). */
void ual_qp_set_user(struct ual_qp *qp, void *user);
void *ual_qp_user(const struct ual_qp *qp);

/* Data path: straight to the provider. WRs name provider objects:
 * ual_mr_rnicpi(), ual_ah_rnicpi(), ual_mw_rnicpi(). */
int ual_qp_post_send(struct ual_qp *qp, const struct rnicpi_send_wr *wr,
		     const struct rnicpi_send_wr **bad);
int ual_qp_post_recv(struct ual_qp *qp, const struct rnicpi_recv_wr *wr,
		     const struct rnicpi_recv_wr **bad);

int ual_ah_create(struct ual_pd *pd, const struct rnicpi_ah_attr *attr,
		  struct ual_ah **out);
int ual_ah_destroy(struct ual_ah *ah);
struct rnicpi_ah *ual_ah_rnicpi(struct ual_ah *ah); /* borrowed */

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

struct ual_async_event {
	enum rnicpi_event_type type;
	struct ual_device *device;  /* always set */
	struct ual_qp *qp;	    /* per type, as in rnicpi_async_event */
	struct ual_cq *cq;
	struct ual_srq *srq;
	uint8_t port_num;
	uint8_t term_layer, term_etype, term_ecode, term_remote;
	int status;
};

const char *ual_event_type_name(enum rnicpi_event_type type);

/*
 * Called on the thread that raised the event (a provider's progress thread
 * or kal's monitor thread). Objects in the event are borrowed for the call.
 */
typedef void (*ual_async_fn)(const struct ual_async_event *event,
			     void *user_data);

/* Receive the async events of @d (NULL: of every device). Id > 0. */
guint ual_async_subscribe(struct ual *u, struct ual_device *d,
			  ual_async_fn fn, void *user_data);
/* When it returns, @fn is not running and will not run again; called from
 * inside @fn itself it returns at once and only later calls are stopped. */
void ual_async_unsubscribe(struct ual *u, guint id);

/*
 * Connection events from providers go to one handler (cm/). @event is
 * valid only during the call.
 */
typedef void (*ual_conn_fn)(struct ual_device *d,
			    const struct rnicpi_conn_event *event,
			    void *user_data);
void ual_set_conn_handler(struct ual *u, ual_conn_fn fn, void *user_data);

/* ------------------------------------------------------------------ */
/* Connection management (ual_conn.c forwards to cm/)                  */
/* ------------------------------------------------------------------ */

/*
 * The transport-neutral connection manager, for the layer above (itapi).
 * ual_conn.c forwards each call to cm/, which resolves addresses and
 * routes through kal/ and drives the provider's connection hooks; the
 * provider's connection events reach cm/ through ual_set_conn_handler.
 *
 * Events are delivered to the ual_cm_event_fn given when the object was
 * made, from cm's thread or a provider thread, with no cm lock held; the
 * callback may call any ual_cm_* function except destroying the object
 * the event is about. After ual_cm_listen_destroy / ual_cm_id_destroy
 * return, their callback is not running and will not run again.
 */
struct ual_cm_listen;	/* a listener on a connection qualifier */
struct ual_cm_id;	/* the connection of one QP */

/* Take / drop a reference on the process's connection manager (its thread
 * runs while one is held). Every other ual_cm_* call needs one. */
int ual_cm_open(struct ual *u);
void ual_cm_close(struct ual *u);

enum ual_cm_event_type {
	/* Listener: a peer asks to connect. req_id names the request for
	 * ual_cm_accept / ual_cm_reject / ual_cm_handoff; private data,
	 * ird and ord are the peer's. */
	UAL_CM_EV_REQUEST = 1,
	/* Connected, the QP is in RTS. Active side: private data is the
	 * peer's reply. */
	UAL_CM_EV_ESTABLISHED,
	/* Active side: the peer refused; private data is the peer's. */
	UAL_CM_EV_REJECTED,
	/* Active side: no peer answered. status: -ETIMEDOUT (no answer in
	 * time), -ECONNREFUSED (nothing listens), -EHOSTUNREACH /
	 * -ENETUNREACH (no path), -ECONNRESET / -EPROTO (the peer closed or
	 * spoke something else). */
	UAL_CM_EV_UNREACHABLE,
	/* An established connection ended in order (either side closed). */
	UAL_CM_EV_DISCONNECTED,
	/* An accepted or established connection broke; status says why. */
	UAL_CM_EV_BROKEN,
	/* Listener (IB CM): a UD service request (SIDR_REQ). req_id names it
	 * for ual_cm_sidr_reply; private data is the requester's. */
	UAL_CM_EV_SIDR_REQUEST,
	/* Requester: the answer (SIDR_REP): status 0 with sidr_status, qpn,
	 * qkey and the replier's private data, or -ETIMEDOUT. */
	UAL_CM_EV_SIDR_REPLY,
};

const char *ual_cm_event_name(enum ual_cm_event_type type);

struct ual_cm_event {
	enum ual_cm_event_type type;
	int status;			/* 0 or a negative errno */
	uint64_t req_id;		/* REQUEST; else the id's request or 0 */
	const void *private_data;	/* valid during the callback */
	uint32_t private_data_len;
	uint32_t ird, ord;		/* the peer's (REQUEST), else agreed */
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
	struct ual_device *device;	/* borrowed */
	uint8_t port_num;
	uint16_t port;			/* REQUEST: the listener's, host order */
	/* REQUEST on an InfiniBand CM listener: the service ID asked for
	 * (host order); 0 on iWARP. */
	uint64_t service_id;
	/* SIDR_REPLY: the status (IBA table 121: 0 valid, 1 service ID not
	 * supported, 2 rejected, 3 no QP, 4 redirect), the QP and Q_Key. */
	uint8_t sidr_status;
	uint32_t qpn, qkey;
};

typedef void (*ual_cm_event_fn)(const struct ual_cm_event *event,
				void *user_data);

struct ual_cm_param {
	const void *private_data;
	uint32_t private_data_len;
	uint32_t ird;		/* incoming RDMA Reads we accept at once */
	uint32_t ord;		/* outgoing RDMA Reads we issue at once */
	uint32_t timeout_ms;	/* whole set-up; 0 = the cm default */
};

enum ual_cm_pdata_op {
	UAL_CM_PDATA_CONNECT,
	UAL_CM_PDATA_ACCEPT,
	UAL_CM_PDATA_REJECT,
	UAL_CM_PDATA_DISCONNECT,
};

/* Bytes of private data @d's transport carries for @op (0: none). */
uint32_t ual_cm_max_private_data(struct ual_device *d,
				 enum ual_cm_pdata_op op);

/* The default set-up time-out in ms (HOSTRDMA_CM_TIMEOUT_MS or 10000). */
uint32_t ual_cm_default_timeout_ms(void);

/* What reaches a destination. */
struct ual_cm_route {
	struct sockaddr_storage src;	/* source address to use */
	int ifindex;			/* interface the traffic belongs to */
	char ifname[RNICPI_IFNAMSIZ];
	uint32_t mtu;
	/* A device of the asked transport on that interface (new
	 * reference), or NULL when the interface has none. */
	struct ual_device *device;
};

/*
 * Resolve @dst (from @src if not NULL): the source address, the interface
 * (for a local destination, the one that owns the address), and a device
 * of @transport (0 = any) on it. 0 with *@out filled (device may be NULL:
 * the log names the interface that has no RDMA device), or
 * -ENETUNREACH / -EHOSTUNREACH, -EADDRNOTAVAIL (@src is not ours),
 * -EAFNOSUPPORT.
 */
int ual_cm_resolve(struct ual *u, const struct sockaddr *dst,
		   const struct sockaddr *src, enum rnicpi_transport transport,
		   struct ual_cm_route *out);

/* The AF_INET/AF_INET6 addresses of the interface @d is bound to, as
 * struct sockaddr_storage (port 0). The caller frees it. */
GArray *ual_cm_device_addrs(struct ual_device *d);

/*
 * Listen on @d's port @port_num for connection qualifier *@port (host
 * order; 0 picks a free one, written back). -EADDRINUSE when another
 * listener has it, -EOPNOTSUPP when @d's transport has no CM here.
 */
int ual_cm_listen(struct ual_device *d, uint8_t port_num, uint16_t *port,
		  ual_cm_event_fn fn, void *user_data,
		  struct ual_cm_listen **out);
/*
 * InfiniBand CM (RoCE/IB devices): listen for service ID @service_id
 * (host order) instead of a port. A port listener above is the service ID
 * of that port in rdma_cm's TCP port space (0x0000000001060000 + port),
 * whose REQs carry librdmacm's address header; other service IDs are
 * plain IB CM, all 92 bytes of REQ private data the consumer's.
 * -EOPNOTSUPP on iWARP, -EADDRINUSE when taken.
 */
int ual_cm_listen_service(struct ual_device *d, uint8_t port_num,
			  uint64_t service_id, ual_cm_event_fn fn,
			  void *user_data, struct ual_cm_listen **out);
/* Stop listening. Requests already reported stay valid. */
void ual_cm_listen_destroy(struct ual_cm_listen *l);

/*
 * Connect @qp (IDLE/INIT, RC) to @dst's connection qualifier @port (host
 * order), from @src if not NULL (its port, if not 0, is the local port).
 * Returns at once; ESTABLISHED, REJECTED or UNREACHABLE follows.
 * -EMSGSIZE for more private data than the transport carries.
 */
int ual_cm_connect(struct ual_qp *qp, const struct sockaddr *dst,
		   uint16_t port, const struct sockaddr *src,
		   const struct ual_cm_param *param, ual_cm_event_fn fn,
		   void *user_data, struct ual_cm_id **out);

/* Connect @qp to service ID @service_id (host order) at @dst over the
 * InfiniBand CM; as ual_cm_connect otherwise. -EOPNOTSUPP on iWARP. */
int ual_cm_connect_service(struct ual_qp *qp, const struct sockaddr *dst,
			   uint64_t service_id, const struct sockaddr *src,
			   const struct ual_cm_param *param,
			   ual_cm_event_fn fn, void *user_data,
			   struct ual_cm_id **out);

/* Accept request @req_id with @qp; ESTABLISHED or BROKEN follows.
 * -ENOENT for an unknown or already answered request, -EXDEV when @qp is
 * on another device than the request. */
int ual_cm_accept(uint64_t req_id, struct ual_qp *qp,
		  const struct ual_cm_param *param, ual_cm_event_fn fn,
		  void *user_data, struct ual_cm_id **out);
/* Refuse request @req_id, sending @private_data to the peer. -ENOENT;
 * -EMSGSIZE (request kept) past the transport's reject limit. */
int ual_cm_reject(uint64_t req_id, const void *private_data,
		  uint32_t private_data_len);
/* Hand request @req_id to the listener on port @port_num, qualifier
 * @port of the device the request came to, which reports it as a new
 * REQUEST. -ENOENT unknown request, -ERANGE no such port, -ESRCH no such
 * listener. */
int ual_cm_handoff(uint64_t req_id, uint8_t port_num, uint16_t port);

/*
 * Service ID resolution (IB CM SIDR, IBA 12.11): ask @dst which UD QP
 * serves service ID @service_id (0: @port's in rdma_cm's UDP port space,
 * 0x0000000001110000 + port, whose requests carry librdmacm's header),
 * sending @pdata. SIDR_REPLY follows (sent again on the way, at most
 * @timeout_ms in all; 0 = the cm default). -EOPNOTSUPP on iWARP.
 */
struct ual_cm_sidr;
int ual_cm_sidr_request(struct ual_device *d, const struct sockaddr *dst,
			uint64_t service_id, uint16_t port, const void *pdata,
			uint32_t len, uint32_t timeout_ms, ual_cm_event_fn fn,
			void *user_data, struct ual_cm_sidr **out);
/* Forget it; its callback is not running and will not run again. */
void ual_cm_sidr_destroy(struct ual_cm_sidr *s);
/* Answer the SIDR_REQUEST @req_id. -ENOENT unknown or answered,
 * -EMSGSIZE past 136 bytes of private data. */
int ual_cm_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
		      uint32_t qkey, const void *pdata, uint32_t len);

/* Close the connection: in order (the peer sees DISCONNECTED) or, with
 * @abortive, at once (the peer sees BROKEN). A set-up in progress is
 * abandoned. -ENOTCONN when there is nothing to close. */
int ual_cm_disconnect(struct ual_cm_id *id, bool abortive);
/* Forget @id (closing abortively what is still open). */
void ual_cm_id_destroy(struct ual_cm_id *id);

/*
 * Turn the connected stream socket @sockfd into @qp's connection (iWARP):
 * the side whose (address, port) is lower starts MPA as initiator, the
 * other answers. Waits until the connection is established (ESTABLISHED is
 * also reported to @fn) or has failed. The caller's @sockfd stays open and
 * its own whatever the result: the provider works on a duplicate.
 * -ETIMEDOUT when the peer did not take part in time, -EPROTO when it
 * spoke something else, -ENOTSOCK / -ENOTCONN / -EOPNOTSUPP for a socket
 * that is not a connected TCP socket or a device without iWARP CM.
 */
int ual_cm_socket_convert(struct ual_qp *qp, int sockfd,
			  const struct ual_cm_param *param,
			  ual_cm_event_fn fn, void *user_data,
			  struct ual_cm_id **out);

#endif /* UAL_H */
