/* SPDX-License-Identifier: MIT */
/*
 * itapi_priv.h - what the itapi/ files share: the objects behind the
 * IT-API handles, the handle registry, the status mapping, logging.
 *
 * Every handle the library gives out points to an object that starts with
 * struct itapi_obj and is registered in one table; every function looks
 * its handles up there first, so a stale or made-up handle is answered
 * with IT_ERR_INVALID_HANDLE (or the type's own code) instead of being
 * dereferenced. Objects are freed only through their it_*_free.
 *
 * Errors below itapi are 0 / -errno; itapi_status() maps them, in one
 * table (itapi_status.c), onto IT_ERR_* for the calling context.
 */
#ifndef ITAPI_PRIV_H
#define ITAPI_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "it_api.h"
#include "cm/cm.h"
#include "ual/ual.h"

#define ITAPI_PREFIX_MAX 64

/* IT-API version this library implements. */
#define ITAPI_MAJOR 2
#define ITAPI_MINOR 1

/* ------------------------------------------------------------------ */
/* Status mapping (itapi_status.c)                                     */
/* ------------------------------------------------------------------ */

/* Where an -errno came from: the same errno means different IT_ERR_*
 * codes for different objects (-EBUSY is IT_ERR_PZ_BUSY for a PZ). */
enum itapi_ctx {
	ITAPI_CTX_ANY = 0,
	ITAPI_CTX_IA,
	ITAPI_CTX_PZ,
	ITAPI_CTX_LMR,
	ITAPI_CTX_RMR,
	ITAPI_CTX_EVD,
	ITAPI_CTX_EP,
	ITAPI_CTX_SRQ,
	ITAPI_CTX_LISTEN,
	ITAPI_CTX_CONN,		/* connect, accept, reject, handoff */
	ITAPI_CTX_POST,
	ITAPI_CTX_AH,
	ITAPI_CTX_CONVERT,	/* it_socket_convert */
	ITAPI_CTX_NCTX
};

it_status_t itapi_status(int err, enum itapi_ctx ctx);
it_dto_status_t itapi_dto_status(enum rnicpi_wc_status st);
const char *itapi_status_name(it_status_t st);
const char *itapi_event_name(it_event_type_t ev);

/* ------------------------------------------------------------------ */
/* Logging                                                             */
/* ------------------------------------------------------------------ */

/*
 * Report a failure the consumer gets back as @st, naming the function,
 * the object (prefix, may be "") and what was wrong. Info level: the
 * status already tells the consumer; G_MESSAGES_DEBUG=hostrdma-itapi shows
 * why. Returns @st.
 */
it_status_t itapi_fail(const char *fn, const char *prefix, it_status_t st,
		       const char *fmt, ...) G_GNUC_PRINTF(4, 5);

#define IT_FAIL(obj, st, ...) \
	itapi_fail(__func__, (obj) ? (obj)->prefix : "", (st), __VA_ARGS__)
#define IT_FAIL0(st, ...) itapi_fail(__func__, "", (st), __VA_ARGS__)
/* An -errno from below: mapped for @ctx and reported. */
#define IT_FAIL_ERRNO(obj, err, ctx, ...)                                  \
	itapi_fail(__func__, (obj) ? (obj)->prefix : "",                   \
		   itapi_status((err), (ctx)), __VA_ARGS__)

#define itapi_debug(obj, fmt, ...) \
	g_debug("%s " fmt, (obj)->prefix, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Handles                                                             */
/* ------------------------------------------------------------------ */

struct itapi_ia;

struct itapi_obj {
	it_handle_type_enum_t type;
	it_context_t context;	/* it_set_consumer_context */
	struct itapi_ia *ia;
	char prefix[ITAPI_PREFIX_MAX];	/* "EP[3] siw_lo:" */
};

void itapi_obj_init(struct itapi_obj *obj, it_handle_type_enum_t type,
		    struct itapi_ia *ia, const char *kind);
/* Make @obj a valid handle / stop it being one. */
void itapi_handle_add(struct itapi_obj *obj);
void itapi_handle_del(struct itapi_obj *obj);
/* The object @h names if it is a live handle of @type, else NULL. */
struct itapi_obj *itapi_handle_lookup(const void *h,
				      it_handle_type_enum_t type);
/* The object @h names whatever its type, else NULL. */
struct itapi_obj *itapi_handle_any(const void *h);

#define ITAPI_LOOKUP(h, T, TYPE) \
	((T *)(void *)itapi_handle_lookup((h), (TYPE)))

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

struct itapi_evd;
struct itapi_ep;
struct itapi_srq;

struct itapi_ia {
	struct itapi_obj obj;
	struct ual *u;
	struct ual_device *dev;
	struct rnicpi_device_attr attr;
	enum rnicpi_transport transport;
	uint32_t major, minor;
	char *name;

	GMutex lock;		/* the lists below, async EVDs, catastrophe */
	GPtrArray *children;	/* struct itapi_obj *, in creation order */
	struct itapi_evd *aff_evd;
	struct itapi_evd *unaff_evd;
	guint async_sub;
	bool catastrophe;
	gint next_id;

	/* QP number -> EP, for completions and async events. */
	GRWLock qpn_lock;
	GHashTable *qpn_eps;
};

struct itapi_pz {
	struct itapi_obj obj;
	struct ual_pd *pd;
};

struct itapi_lmr {
	struct itapi_obj obj;
	struct itapi_pz *pz;
	struct ual_mr *mr;
	void *addr;		/* first byte the consumer asked for */
	it_length_t length;
	it_addr_mode_t addr_mode;
	it_mem_priv_t privs;
	it_lmr_flag_t flags;
	uint32_t shared_id;
	size_t iobl_num_elts;	/* 0: a plain buffer */
	it_iobl_type_t iobl_type;
	gint rmr_links;		/* RMRs linked to it */
	/* From it_lmr_create_unlinked (a provider's alloc_mr): linked and
	 * unlinked by work requests; the fields above describe the current
	 * link. lock guards linked and the link's fields. */
	bool fast_reg;
	GMutex lock;
	bool linked;		/* linked, or a link in flight */
};

struct itapi_rmr {
	struct itapi_obj obj;
	struct itapi_pz *pz;
	struct ual_mw *mw;
	it_rmr_type_t type;
	GMutex lock;
	bool linked;
	struct itapi_lmr *lmr;	/* while linked or a link is in flight */
	void *addr;
	it_length_t length;
	it_mem_priv_t privs;
	it_addr_mode_t addr_mode;
	uint32_t rkey;		/* what the window answers to now */
};

/*
 * An EVD's queue. Events are kept as it_event_t; `notify` marks the ones
 * that may wake a waiter (IT_NOTIFY_FLAG, errors, solicited receives,
 * every non-DTO event).
 */
struct itapi_evq_entry {
	it_event_t ev;
	bool notify;
};

struct itapi_evd {
	struct itapi_obj obj;
	gint ref;		/* the handle's, the callback source's */
	it_event_type_t stream;	/* an *_EVENT_STREAM value */
	it_evd_flags_t flags;
	bool is_aevd;

	GMutex lock;
	struct itapi_evq_entry *ring;
	size_t size;		/* sevd_queue_size */
	size_t head, count;
	size_t n_notify;	/* queued entries with notify set */
	size_t threshold;	/* 0 is IT_THRESHOLD_DISABLE: acts as 1 */
	bool enabled;
	bool overflowed;
	int efd;		/* eventfd, readable while signalled */
	bool efd_set;
	int waiters;

	/* Aggregation. SEVD: its AEVD and whether a notification for it
	 * sits there (under the AEVD's lock). AEVD: SEVDs bound to it. */
	struct itapi_evd *aevd;
	bool aevd_pending;
	guint bound_sevds;

	/* Objects using this EVD (EPs, listeners, SRQs): it_evd_free
	 * answers IT_ERR_EVD_BUSY while there are any. Under ia->lock. */
	guint users;

	/* DTO stream: the CQ behind it. */
	struct ual_cq *cq;
	bool pump_registered;

	/* it_evd_callback_attach. */
	GSource *cb_source;
	it_evd_callback_rtn_t cb;
	void *cb_arg;
};

/* A slot of an endpoint's send or receive queue: what a completion needs
 * that the provider's wr_id cannot carry. */
struct itapi_wr_slot {
	uint64_t seq;
	it_dto_cookie_t cookie;
	it_event_type_t event;	/* completion event of this WR */
	it_dto_flags_t flags;
	struct itapi_rmr *rmr;	/* it_rmr_link / unlink */
	struct itapi_lmr *lmr;	/* it_rmr_link: the region */
	uint32_t new_rkey;	/* it_rmr_link: the key on success */
	bool unlink;
	/* it_lmr_link / it_lmr_unlink, or a Read with IT_UNLINK_LOCAL_SINK
	 * into lmr (itapi_lmr_link_done). */
	bool lmr_link;
};

/* A work queue of posted requests in posting order. Completions of an RC
 * or UD queue come back in posting order (IBA 10.8.5, RFC 5040 §5.3), so
 * a completion for slot s retires every unsignalled slot before it. */
struct itapi_wq {
	GMutex lock;
	struct itapi_wr_slot *slots;
	uint32_t size;
	uint64_t head;		/* seq of the next post */
	uint64_t tail;		/* oldest outstanding seq */
};

struct itapi_ep {
	struct itapi_obj obj;
	struct itapi_pz *pz;
	it_transport_service_type_t service;
	size_t spigot_id;
	struct ual_qp *qp;
	uint32_t qp_num;
	struct itapi_evd *req_evd, *recv_evd, *conn_evd;
	struct itapi_srq *srq;
	it_ep_rc_creation_flags_t create_flags;
	it_ep_attributes_t attr;	/* as granted */
	struct itapi_wq sq, rq;

	GMutex lock;			/* state, cm, path */
	it_ep_state_t state;
	struct cm_id *cm;
	it_path_t dst_path;
	it_cn_est_identifier_t cn_est_id;
	/* EP high watermarks (an EP on an SRQ): receives it took from the
	 * SRQ whose completion events the consumer has not dequeued yet;
	 * the soft event posted (again once the count fell below), the
	 * hard one reached (the connection is broken). Under lock. */
	size_t srq_held;
	bool soft_hi_posted;
	bool hard_hi_hit;
	/* Its QP failed (an affiliated error) while connected over the IB
	 * CM or rdma_cm, which learn nothing of it: the connection is
	 * broken by us (itapi_ep_qp_failed). Under lock. */
	bool qp_failed;
};

/* @ep's connection with a reference of the caller's (cm_id_unref it when
 * done), or NULL. Under ep->lock: what is used after the lock is dropped
 * needs the reference, since it_ep_free and it_ep_reset destroy ep->cm
 * (ep_drop_qp) on the consumer's thread meanwhile. */
static inline struct cm_id *itapi_ep_cm_ref_locked(struct itapi_ep *ep)
{
	return ep->cm ? cm_id_ref(ep->cm) : NULL;
}

/* Watermark outcomes of one SRQ receive completion. */
enum {
	ITAPI_WM_SOFT = 1u << 0,
	ITAPI_WM_HARD = 1u << 1,
};
/* A receive of @ep (on an SRQ) completed: count it; ITAPI_WM_* to act on
 * (outside the EVD's lock) with itapi_ep_watermark_act. */
unsigned int itapi_ep_srq_recv_held(struct itapi_ep *ep);
/* Its completion event was dequeued. */
void itapi_ep_srq_recv_released(it_ep_handle_t ep_handle);
/* Live EPs on an SRQ in the process: none, no look-up per dequeue. */
extern gint itapi_srq_eps;
/* Act on @wm for @ep, whose QP @qp_num completed the receive, if @ep is
 * still there: outside the EVD's lock nothing else keeps it from
 * it_ep_free. */
void itapi_ep_watermark_act(struct itapi_ia *ia, uint32_t qp_num,
			    struct itapi_ep *ep, unsigned int wm);
/* @ep's QP went to the error state on its own (an affiliated async
 * error): on a transport whose connection manager does not see that
 * (InfiniBand, RoCE: iWARP's Terminate closes the stream), break the
 * connection, so that both ends get their connection event. */
void itapi_ep_qp_failed(struct itapi_ep *ep);

/* The connection establishment identifier of @ep's ACCEPT_ARRIVAL event
 * (three-way set-up, active side). */
it_cn_est_identifier_t itapi_active_cn_est_id(struct itapi_ep *ep);

struct itapi_listen {
	struct itapi_obj obj;
	size_t spigot_id;
	struct itapi_evd *evd;
	it_conn_qual_t conn_qual;	/* network byte order, as given */
	struct cm_listen *cm;
	bool no_ird_ord;		/* IT_LISTEN_SUPPRESS_IRD_ORD */
};

/* SRQ receive slots complete in any order: a free list, and the wr_id
 * carries (generation << 32 | index). */
struct itapi_srq {
	struct itapi_obj obj;
	struct itapi_pz *pz;
	struct ual_srq *srq;
	size_t max_recv_dtos;
	size_t max_recv_segs;
	size_t low_watermark;
	guint users;			/* EPs; under ia->lock */
	GMutex lock;
	struct itapi_srq_slot {
		uint32_t gen;
		bool in_use;
		it_dto_cookie_t cookie;
		it_dto_flags_t flags;
		uint32_t next_free;
	} *slots;
	uint32_t n_slots;
	uint32_t free_head;		/* index + 1, 0 = none */
	uint32_t n_posted;		/* at most max_recv_dtos */
};

struct itapi_addr {
	struct itapi_obj obj;
	struct itapi_pz *pz;
	struct ual_ah *ah;
	it_path_t path;
};

/* ------------------------------------------------------------------ */
/* Shared helpers                                                      */
/* ------------------------------------------------------------------ */

/* ia.c: take a new child into the IA's list / drop it. */
void itapi_ia_add_child(struct itapi_ia *ia, struct itapi_obj *child);
void itapi_ia_del_child(struct itapi_ia *ia, struct itapi_obj *child);
/* IT_ERR_IA_CATASTROPHE once the device failed, else IT_SUCCESS. */
it_status_t itapi_ia_check(struct itapi_ia *ia);
/* Spigot id -> port number; false if the IA has no such spigot. */
bool itapi_ia_spigot_ok(struct itapi_ia *ia, size_t spigot_id);

/* evq.c, evd.c */
struct itapi_evd *itapi_evd_ref(struct itapi_evd *evd);
void itapi_evd_unref(struct itapi_evd *evd);
/*
 * Queue @ev (its evd member is filled in) on @evd. Returns IT_SUCCESS,
 * or IT_ERR_EVD_QUEUE_FULL when it did not fit: the EVD is then marked
 * overflowed and, with IT_EVD_OVERFLOW_NOTIFY, an affiliated
 * IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE is raised.
 */
it_status_t itapi_evd_post(struct itapi_evd *evd, it_event_t *ev,
			   bool notify);
/* Free an EVD during it_ia_free (no busy checks). */
void itapi_evd_destroy(struct itapi_evd *evd);
/* Move what the CQ of a DTO SEVD holds into its queue. */
void itapi_evd_pump(struct itapi_evd *evd);
void itapi_evd_nudge(struct itapi_evd *evd);

/* evq.c: the machinery behind EVDs (EVD lock held unless said). */
size_t itapi_evq_threshold(const struct itapi_evd *evd);
bool itapi_evq_signalled(const struct itapi_evd *evd);
/* Make the eventfd readable exactly while the EVD is signalled. */
void itapi_evq_sync(struct itapi_evd *evd);
bool itapi_evq_push(struct itapi_evd *evd, const it_event_t *ev,
		    bool notify);
void itapi_evq_pop(struct itapi_evd *evd, it_event_t *out);
/* SEVD: tell its AEVD it became signalled (once until dequeued). */
void itapi_evq_notify_aevd(struct itapi_evd *sevd);
/* SEVD: withdraw its notification waiting on the AEVD. */
void itapi_evq_withdraw(struct itapi_evd *sevd);
/* Bookkeeping after @ev was dequeued from @evd. */
void itapi_evq_after_dequeue(struct itapi_evd *evd, const it_event_t *ev);
/* Watch / stop watching a DTO SEVD's CQ on the pump thread (unlocked). */
int itapi_evq_pump_register(struct itapi_evd *evd);
void itapi_evq_pump_unregister(struct itapi_evd *evd);
/* Watch a DTO SEVD's CQ on the pump thread exactly while its signal is
 * observed from outside (fd, callback, AEVD); call without the EVD's lock
 * after any of those changed. 0 or -errno from the registration. */
int itapi_evq_watch_update(struct itapi_evd *evd);

/* Affiliated / unaffiliated async events for the IA's async EVDs. */
void itapi_post_affiliated(struct itapi_ia *ia, it_event_type_t type,
			   void *cause);
void itapi_post_unaffiliated(struct itapi_ia *ia, it_event_type_t type,
			     size_t spigot_id);

/* evq.c: in a fork()ed child, forget the parent's EVD pump thread. */
void itapi_evq_atfork_child(void);
/*
 * A receive completion (RC or UD) as the EVD keeps it: it_all_dto_cmpl_event_t
 * and, in the union's spare bytes, the immediate data it carried
 * (it_ext.h, hostrdma_event_imm_data). A consumer copies the whole
 * it_event_t, and these bytes with it.
 */
struct itapi_dto_ext_event {
	it_all_dto_cmpl_event_t all;
	uint32_t imm_kind;	/* hostrdma_imm_kind_t */
	uint32_t imm_data;
};
G_STATIC_ASSERT(sizeof(struct itapi_dto_ext_event) <= sizeof(it_event_t));
/* post.c: completions back to IT-API events. Fills @ev from @wc; false
 * when the completion belongs to no live WR: then *@lost is set to its
 * endpoint when it has one, for the caller to report
 * IT_ASYNC_AFF_EP_FAILURE once it holds no EVD lock. */
bool itapi_wc_to_event(struct itapi_ia *ia, struct itapi_evd *evd,
		       const struct rnicpi_wc *wc, it_event_t *ev,
		       bool *notify, it_ep_handle_t *lost, unsigned int *wm);
int itapi_wq_init(struct itapi_wq *wq, uint32_t size);
/* A Send's opcode in @wr: with @imm, a Send with immediate data *@imm,
 * which a device without immediate data refuses (IT_ERR_OP_NOT_SUPPORTED,
 * logged). */
it_status_t itapi_send_opcode(struct itapi_ep *ep, const uint32_t *imm,
			      struct rnicpi_send_wr *wr, const char *op);
/* Post one send-queue WR (RMR link/unlink, datagram) with its slot. */
it_status_t itapi_post_sq(struct itapi_ep *ep, struct rnicpi_send_wr *wr,
			  const struct itapi_wr_slot *tmpl, const char *op);
/* Post a receive on an EP's own receive queue (RC or UD). */
it_status_t itapi_post_recv_ep(struct itapi_ep *ep,
			       const it_lmr_triplet_t *segs, size_t n,
			       it_dto_cookie_t cookie, it_dto_flags_t flags,
			       const char *op);
/* rmr.c: a link / unlink completed (from the EVD pump). */
void itapi_rmr_link_done(struct itapi_wr_slot *slot, bool ok);
/* lmr.c: an LMR link / unlink completed (from the EVD pump). */
void itapi_lmr_link_done(struct itapi_wr_slot *slot, bool ok);
void itapi_wq_fini(struct itapi_wq *wq);
/* A new size for @wq, whose lock the caller holds; the outstanding
 * requests keep their sequence numbers. False when they do not fit. */
bool itapi_wq_resize_locked(struct itapi_wq *wq, uint32_t size);

/* ep.c: free an EP / listener / SRQ / AH during it_ia_free. */
void itapi_ep_destroy(struct itapi_ep *ep);
struct itapi_ud_svc;
void itapi_ud_svc_destroy(struct itapi_ud_svc *u);
void itapi_listen_destroy(struct itapi_listen *l);
/* Whether request @id came to a listener with IT_LISTEN_SUPPRESS_IRD_ORD
 * (forgotten by the call: the request is being answered); and, for an
 * answer that failed, remember it again. */
bool itapi_listen_take_no_ird_ord(it_cn_est_identifier_t id);
void itapi_listen_keep_no_ird_ord(it_cn_est_identifier_t id);
/* Copy up to IT_MAX_PRIV_DATA bytes of the peer's private data into an
 * event (logging what did not fit); *@present says whether there was any. */
void itapi_copy_pdata(unsigned char *dst, it_boolean_t *present,
		      const void *src, uint32_t len, const char *prefix);
void itapi_srq_destroy(struct itapi_srq *srq);
void itapi_addr_destroy(struct itapi_addr *a);
void itapi_lmr_destroy(struct itapi_lmr *lmr);
void itapi_rmr_destroy(struct itapi_rmr *rmr);
void itapi_pz_destroy(struct itapi_pz *pz);

/* Create an endpoint of @service; EVDs and SRQ already checked. */
it_status_t itapi_ep_create(struct itapi_pz *pz,
			    it_transport_service_type_t service,
			    struct itapi_evd *req, struct itapi_evd *recv,
			    struct itapi_evd *conn, struct itapi_srq *srq,
			    it_ep_rc_creation_flags_t flags,
			    const it_ep_attributes_t *attr, size_t spigot_id,
			    struct itapi_ep **out);
/* @h if it is a DTO SEVD of @ia, else NULL. */
struct itapi_evd *itapi_dto_evd(struct itapi_ia *ia, it_evd_handle_t h);
const char *itapi_ep_state_name(it_ep_state_rc_t s);
/* The live, connected RC endpoint of @pz that an LMR or RMR link goes on
 * (failures logged against @obj), or NULL and *st. */
struct itapi_ep *itapi_ep_for_mem_wr(struct itapi_obj *obj,
				     struct itapi_pz *pz, it_ep_handle_t h,
				     it_status_t *st);

/* A connection event for an EP (from cm/). */
void itapi_ep_cm_event(const struct cm_event *ev, void *user_data);

/* Conversions (util.c). */
int itapi_net_addr_to_sockaddr(const it_net_addr_t *na,
			       struct sockaddr_storage *ss);
void itapi_sockaddr_to_net_addr(const struct sockaddr_storage *ss,
				 it_net_addr_t *na);
/* Path of an iWARP/RoCE connection from two socket addresses. */
void itapi_path_from_sockaddrs(struct itapi_ia *ia, size_t spigot_id,
			       const struct sockaddr_storage *local,
			       const struct sockaddr_storage *remote,
			       it_path_t *path);
const char *itapi_sockaddr_str(const struct sockaddr_storage *ss, char *buf,
			       size_t len);

/* RNICPI access flags for @privs. */
unsigned int itapi_privs_to_access(it_mem_priv_t privs);

#endif /* ITAPI_PRIV_H */
