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
/* The providers' progress engine is part of ual's interface for the layers
 * above: itapi's event pump and cm's thread run on it, so the process has
 * one kind of event loop and one timer model. */
#include "rnicpi/rnicpi_engine.h"

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
/* The device's caps (enum rnicpi_device_cap) as it reported them when
 * it was created. */
uint32_t ual_device_caps(const struct ual_device *d);
int ual_device_ifindex(const struct ual_device *d);
const char *ual_device_ifname(const struct ual_device *d);
/* A consumer opens @d (it_ia_create): the provider's device_open, which
 * takes what only users need (soft-RoCE: its UDP port). 0 or -errno. */
int ual_device_open(struct ual_device *d);
/* This thread is about to sleep in a wait that arms none of @d's CQs
 * (the provider's consumer_blocks: receive work left to polls goes back
 * to the provider's thread). */
void ual_device_consumer_blocks(struct ual_device *d);

/* The host service (hostrdma-kald(8), ual_hostsvc.c), for the IB CM:
 * the top bits every communication and SIDR request ID of this process
 * must carry (0: no daemon, any ID), and holding a service ID for REQ and
 * SIDR_REQ (0 without a daemon; -EADDRINUSE: another process holds it). */
uint32_t ual_hostsvc_id_prefix(void);
int ual_hostsvc_listen(uint64_t sid, bool on);
/* Before a new connection or SIDR request: -EIO when the daemon and its
 * keeper are both gone (no CM message could reach this process again),
 * else 0. */
int ual_hostsvc_check(void);
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
/*
 * A region for fast registration (RNICPI_DEV_CAP_FAST_REG, the provider's
 * alloc_mr) of up to @max_len bytes: keys, no memory, every access
 * refused until linked. Freed by ual_mr_dereg. -EOPNOTSUPP without it.
 */
int ual_mr_alloc(struct ual_pd *pd, uint64_t max_len, struct ual_mr **out);
/*
 * Prepare the REG_MR that links @mr (from ual_mr_alloc) to @len bytes at
 * @addr with @access and the key @key (the region's index, the caller's
 * key byte): pins those bytes (releasing the previous link's pin), records
 * them so that ual_mr_lkey() and the others answer for the new link at
 * once, and fills @wr's opcode and wr.reg_mr for the caller to post on a
 * QP of @mr's PD. 0, or -EINVAL (not from ual_mr_alloc, bad range or
 * access) or kal_pin's error, with nothing changed.
 */
int ual_mr_link(struct ual_mr *mr, void *addr, size_t len,
		unsigned int access, uint32_t key, struct rnicpi_send_wr *wr);
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
 * The calling thread is about to arm @cq and sleep on its fd: up to @max
 * descriptors it watches as well (POLLIN), polling @cq when one wakes it
 * (the provider's cq_wait_begin; 0 for most). Before each sleep of one
 * wait; ual_cq_wait_end once the wait is over.
 */
int ual_cq_wait_begin(struct ual_cq *cq, int *fds, int max);
void ual_cq_wait_end(struct ual_cq *cq);

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
/* ual_qp_modify without its warning: for a caller to whom a refusal may
 * be an answer (a QP that moved on meanwhile), which reports the rest. */
int ual_qp_try_modify(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
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

/*
 * The provider's connection hooks (rnicpi.h, "connection set-up"), for the
 * connection manager. As the other ops: -EOPNOTSUPP when the provider has
 * none; a QP op holds the QP's control lock (never beside its destroy)
 * and answers -ENODEV for a destroyed QP. ual_qp_conn_accept consumes
 * @conn whatever the result (a destroyed QP's request is refused).
 * Called without any lock of the caller's that a provider upcall takes.
			      */
int ual_qp_conn_accept(struct ual_qp *qp, struct rnicpi_conn *conn,
		       const struct rnicpi_conn_param *param);
int ual_device_conn_reject(struct ual_device *d, struct rnicpi_conn *conn,
			   const void *private_data, uint32_t private_data_len);
/* iWARP: hand the connected @sockfd to @qp's provider (MPA initiator). */
int ual_qp_iw_connect(struct ual_qp *qp, int sockfd,
		      const struct rnicpi_conn_param *param);
/* iWARP: hand the accepted @sockfd to @d's provider (MPA responder). */
int ual_device_iw_take_request(struct ual_device *d, int sockfd,
			       void *core_ctx, struct rnicpi_conn **out);
/* RNICPI_DEV_CAP_NATIVE_CM: the provider's own connection manager
 * (rnicpi.h cm_listen, cm_listen_destroy, cm_connect, cm_disconnect). */
int ual_device_cm_listen(struct ual_device *d, const struct sockaddr *addr,
			 int backlog, void *core_ctx,
			 struct rnicpi_listener **out);
int ual_device_cm_listen_destroy(struct ual_device *d,
				 struct rnicpi_listener *listener);
int ual_qp_cm_connect(struct ual_qp *qp, const struct sockaddr *src,
		      const struct sockaddr *dst,
		      const struct rnicpi_conn_param *param);
int ual_qp_cm_disconnect(struct ual_qp *qp, bool abortive);
/* RNICPI_DEV_CAP_NATIVE_SIDR: service ID resolution in the provider's
 * UDP port space (rnicpi.h cm_sidr_request, cm_sidr_destroy,
 * cm_sidr_reply). */
int ual_device_cm_sidr_request(struct ual_device *d,
			       const struct sockaddr *src,
			       const struct sockaddr *dst, const void *pdata,
			       uint32_t len, uint32_t timeout_ms,
			       void *core_ctx, struct rnicpi_sidr **out);
int ual_device_cm_sidr_destroy(struct ual_device *d,
			       struct rnicpi_sidr *sidr);
int ual_device_cm_sidr_reply(struct ual_device *d, struct rnicpi_conn *conn,
			     uint8_t status, uint32_t qpn, uint32_t qkey,
			     const void *pdata, uint32_t len);

/*
 * Run the GLib main context @ctx on engine @e, on the calling thread,
 * until *@stop is set (then wake @ctx: g_main_context_wakeup). GLib's
 * descriptors become @e's sources and GLib's next time-out bounds @e's
 * wait. @ctx must be free to acquire (-EBUSY otherwise); 0, or the
 * engine's -errno if its wait failed.
 */
int ual_engine_run_context(struct rnicpi_engine *e, GMainContext *ctx,
			   const gint *stop);

#endif /* UAL_H */
