/* SPDX-License-Identifier: MIT */
/*
 * verbs.h - the verbs provider: the kernel's RDMA devices (any driver
 * rdma-core's libibverbs knows: mlx5, irdma, bnxt_re, the kernel's own
 * siw and rxe ...) as RNICPI devices.
 *
 * One RNICPI device per ibverbs device and port, on the network interface
 * that port's first GID belongs to, named after the ibverbs device
 * ("siw0", "mlx5_0"; "mlx5_0:2" for port 2 of a multi-port device).
 *
 * verbs_map.c holds the translations between libibverbs' values and
 * RNICPI's, as tables the unit tests read without a device
 * (tests/check_verbs_map.c); verbs_main.c finds the devices and runs them.
 */
#ifndef VP_VERBS_H
#define VP_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rnicpi/rnicpi.h"
#include "rnicpi/rnicpi_engine.h"

extern const struct rnicpi_provider verbs_provider;

/* --- verbs_map.c: value translations, no device needed --- */

/* Transport of a port from the device's node type and the port's link
 * layer; 0 when hostrdma has none for it (switch, router, usNIC). */
enum rnicpi_transport verbs_transport(enum ibv_node_type node,
				      uint8_t link_layer);
const char *verbs_transport_name(enum rnicpi_transport t);

/* Completion status and opcode, ibverbs to RNICPI. A status RNICPI lacks
 * (tag matching) becomes RNICPI_WC_GENERAL_ERR; an opcode it lacks is
 * -1. */
enum rnicpi_wc_status verbs_wc_status(enum ibv_wc_status s);
int verbs_wc_opcode(enum ibv_wc_opcode op);
/* Work request opcode, RNICPI to ibverbs; -1 for an unknown one. */
int verbs_wr_opcode(enum rnicpi_wr_opcode op);
/* Asynchronous event type, ibverbs to RNICPI; -1 for one RNICPI has no
 * counterpart for (IBV_EVENT_WQ_FATAL: hostrdma makes no WQs). */
int verbs_event_type(enum ibv_event_type t);
/* Access flags, RNICPI to ibverbs; ZERO_BASED is not an ibverbs access
 * flag (ibv_reg_mr_iova carries it) and is dropped. */
unsigned int verbs_access(unsigned int rnicpi_access);
/* Send flags, RNICPI to ibverbs. LOCAL_FENCE has no ibverbs flag: it
 * becomes IBV_SEND_FENCE, the stronger guarantee; MORE is a hint. */
unsigned int verbs_send_flags(unsigned int rnicpi_flags);
enum rnicpi_port_state verbs_port_state(enum ibv_port_state s);
/* IBA MTU codes are the same on both sides; 0 (unknown) stays 0. */
enum rnicpi_mtu verbs_mtu(enum ibv_mtu m);
/* Speed of a port in Mb/s from its IBA width and speed codes, 0 if
 * unknown. */
uint64_t verbs_port_speed_mbps(uint8_t active_width, uint32_t active_speed);

/* RNICPI's device and port attributes from ibverbs' ones. */
void verbs_fill_device_attr(const struct ibv_device_attr *in,
			    enum rnicpi_transport transport,
			    struct rnicpi_device_attr *out);
void verbs_fill_port_attr(const struct ibv_port_attr *in,
			  struct rnicpi_port_attr *out);

/* A send WR in ibverbs' terms, its SGEs into @sge (room for @max_sge).
 * -EINVAL for an unknown opcode or too many SGEs, -EOPNOTSUPP for BIND_MW
 * (a bind is not a plain WR: verbs_verbs.c's post_bind posts it).
 * Immediate data goes big-endian. */
int verbs_send_wr_to_ibv(const struct rnicpi_send_wr *in,
			 struct ibv_send_wr *out, struct ibv_sge *sge,
			 uint32_t max_sge);
/* An address vector for ibv_create_ah on ibverbs port @port: the GRH
 * fields, DLID and SL as given (the flow label's 20 bits); the kernel
 * resolves a RoCE next hop's MAC itself, so dmac is not passed. */
void verbs_ah_attr_to_ibv(const struct rnicpi_ah_attr *in, uint8_t port,
			  struct ibv_ah_attr *out);
/* A completion in RNICPI's terms. */
void verbs_wc_from_ibv(const struct ibv_wc *in, struct rnicpi_wc *out);
/* QP states: RNICPI to ibverbs (-1 unknown; iWARP's IDLE is INIT,
 * CLOSING is SQD, TERMINATE is ERR) and back for the device's
 * transport. */
int verbs_qp_state(enum rnicpi_qp_state s);
enum rnicpi_qp_state verbs_qp_state_from_ibv(enum ibv_qp_state s,
					      enum rnicpi_transport t);
/* modify_qp's attribute mask, and the attributes; -EINVAL for a state
 * with no ibverbs counterpart. Port numbers are copied as given: the
 * caller puts the ibverbs port in. */
unsigned int verbs_qp_mask(unsigned int rnicpi_mask);
int verbs_qp_attr_to_ibv(const struct rnicpi_qp_attr *in, unsigned int mask,
			 struct ibv_qp_attr *out);

/* An rdma_cm event in RNICPI's terms: a connection event type with the
 * status it carries, or one of the two below. */
enum {
	VERBS_CM_STEP = 100,	/* a step of the set-up the provider takes */
	VERBS_CM_IGNORE = 101,	/* nothing to do */
};
struct verbs_cm_map {
	int type;	/* enum rnicpi_conn_event_type or VERBS_CM_* */
	int status;	/* 0 or a negative errno */
};
struct verbs_cm_map verbs_cm_event(enum rdma_cm_event_type t);
/* An rdma_cm event (with its status) on a UD service request's id
 * (RDMA_PS_UDP): VERBS_CM_STEP or VERBS_CM_IGNORE, or
 * RNICPI_CONN_SIDR_REPLY with the reply's status (0 or a negative errno)
 * and, with 0, the SIDR status (IBA table 121). */
struct verbs_sidr_map {
	int type;
	int status;
	uint8_t sidr_status;
};
struct verbs_sidr_map verbs_sidr_event(enum rdma_cm_event_type t,
				       int ev_status);

/* "mlx5_0" for a single-port device, "mlx5_0:2" for port 2 of a
 * multi-port one. */
void verbs_device_name(const char *ibdev, uint8_t port, uint8_t n_ports,
		       char *buf, size_t len);

/* --- verbs_main.c --- */

struct verbs_dev {
	struct rnicpi_device rdev;
	struct ibv_context *ctx;
	uint8_t port;
	enum rnicpi_transport transport;
	struct ibv_device_attr attr;
	/* The engine watching the async event fd and the rdma_cm event
	 * channel's fd. */
	struct rnicpi_engine engine;
	struct rnicpi_source async_src;
	bool engine_ok;
	/* verbs_verbs.c: QP number -> struct verbs_rq, for completions. */
	GMutex qps_lock;
	GHashTable *qps;
	/* verbs_cm.c: the device's rdma_cm event channel (NULL when
	 * librdmacm could not open one: then no connections). cm_lock
	 * guards the ids' contexts and `busy`, the QP whose connection
	 * event is being handled on the engine thread (destroy_qp waits it
	 * out). */
	struct rdma_event_channel *cm_ch;
	struct rnicpi_source cm_src;
	GMutex cm_lock;
	GCond cm_cond;
	void *cm_busy;
	/* Under cm_lock: QP number -> struct verbs_qp of the QPs that have
	 * a connection's id; the numbers of those whose completions broke
	 * the connection, for cm_break_timer to act on (engine thread). */
	GHashTable *cm_qps;
	GArray *cm_breaks;
	struct rnicpi_timer cm_break_timer;
};

/* What an rdma_cm id's context points at: the `kind` member of one of
 * the connection objects (struct verbs_listener, verbs_conn, verbs_sidr,
 * below), or of a struct verbs_qp. */
enum verbs_cm_kind {
	VERBS_CM_KIND_LISTENER = 1,
	VERBS_CM_KIND_CONN,
	VERBS_CM_KIND_QP,
	VERBS_CM_KIND_SIDR,	/* a UD service request of ours */
};

/* Bytes of private data rdma_cm carries for a connect, an accept or a
 * reject on @transport (IB/RoCE: what a REQ, REP or REJ leaves after
 * rdma_cm's header; iWARP: librdmacm's 8-bit length). */
uint32_t verbs_cm_pdata_max(enum rnicpi_transport transport, int op);
enum { VERBS_PDATA_CONNECT, VERBS_PDATA_ACCEPT, VERBS_PDATA_REJECT };

struct verbs_cq;

/* The wr_ids of a QP's receives posted and not completed, oldest first:
 * tells a flushed receive from a send (ibverbs leaves an error
 * completion's opcode undefined). Outlives its QP while flushed receives
 * wait in a CQ (dead). */
struct verbs_rq {
	GMutex lock;
	uint64_t *ids;
	uint32_t cap, head, len;
	bool dead;
};
void verbs_rq_free(gpointer rq);

struct verbs_qp {
	struct rnicpi_qp base;
	struct verbs_dev *vd;
	struct ibv_qp *qp;
	bool has_srq;
	bool ud;	/* a UD QP (else RC) */
	struct verbs_cq *send_cq, *recv_cq;	/* verbs_verbs.c's */
	/* Its receives (NULL with an SRQ), in vd->qps. */
	struct verbs_rq *rq;
	/* verbs_cm.c and verbs_cm_ops.c, under vd->cm_lock: the
	 * connection's rdma_cm id and the request to send once the route
	 * is resolved. */
	enum verbs_cm_kind kind;
	struct rdma_cm_id *cm_id;
	bool cm_established;
	/* A completion in error (not a flush): its status, queued for the
	 * engine thread (cm_breaks), IBV_WC_SUCCESS while none; and once
	 * that thread broke the connection, the status its DISCONNECTED
	 * reports (negative errno), 0 while none. */
	enum ibv_wc_status cm_break_wc;
	int cm_broken;
	uint8_t cm_pdata[256];
	uint8_t cm_pdata_len;
	uint32_t cm_ird, cm_ord, cm_timeout_ms;
};

/* verbs_verbs.c: the device ops of PDs, MRs, CQs, SRQs and QPs. */
void verbs_fill_ops(struct rnicpi_device_ops *ops);
/* The RNICPI object a QP, CQ or SRQ event names (the ibverbs object's
 * context); false for another event or an object not made here. */
bool verbs_async_element(const struct ibv_async_event *ev,
			 struct rnicpi_async_event *out);

/* Connections through librdmacm: verbs_cm.c handles the events on the
 * engine thread, verbs_cm_ops.c holds the device ops. verbs_cm_open makes
 * the device's event channel and adds it to the engine (a failure is
 * logged and leaves the device without connections); verbs_cm_close
 * undoes it (the engine stopped). */
void verbs_cm_open(struct verbs_dev *vd);
void verbs_cm_close(struct verbs_dev *vd);
/* verbs_cm_ops.c */
void verbs_cm_fill_ops(struct rnicpi_device_ops *ops);
/* Destroy @q's rdma_cm id, waiting out an event being handled for it. */
void verbs_cm_qp_release(struct verbs_qp *q);
/* verbs_cm.c: poll_cq found a completion in error (not a flush) of QP
 * @qp_num: if that QP is connected, its connection breaks (on the engine
 * thread). */
void verbs_cm_wc_error(struct verbs_dev *vd, uint32_t qp_num,
		       enum ibv_wc_status status);

/* What verbs_cm.c and verbs_cm_ops.c share and nothing else uses: the
 * connection objects (an rdma_cm id's context points at their `kind`)
 * and verbs_cm.c's helpers. */

struct verbs_listener {
	enum verbs_cm_kind kind;
	struct rnicpi_listener base;
	struct verbs_dev *vd;
	struct rdma_cm_id *id;
	struct rdma_cm_id *uid;	/* the UDP port space's, or NULL */
	int ref;	/* under vd->cm_lock: 1 + upcalls under way */
	bool dead;
};

struct verbs_conn {
	enum verbs_cm_kind kind;
	struct rnicpi_conn base;
	struct verbs_dev *vd;
	struct rdma_cm_id *id;	/* NULL once answered */
	bool in_upcall;		/* the REQUEST upcall runs */
	bool answered;
	bool peer_gone;
};

/* A UD service request: an RDMA_PS_UDP id resolving, then asking. */
struct verbs_sidr {
	enum verbs_cm_kind kind;
	struct rnicpi_sidr base;
	struct verbs_dev *vd;
	struct rdma_cm_id *id;
	uint8_t pdata[256];
	uint8_t pdata_len;
	uint32_t timeout_ms;
	bool done;		/* its reply was reported */
};

/* -errno after a failed call, -EIO if errno is 0. */
int verbs_cm_neg_errno(void);
/* The length of @sa, an IPv4 or IPv6 address. */
socklen_t verbs_cm_sa_len(const struct sockaddr *sa);
/* Is @id (bound or resolved) on @vd's ibverbs device and port? */
bool verbs_cm_id_on_device(struct verbs_dev *vd, struct rdma_cm_id *id);
/* The name of @id's ibverbs device, "none" before it has one. */
const char *verbs_cm_id_device_name(struct rdma_cm_id *id);
/* Move @q through INIT and RTR to RTS with the attributes rdma_cm gives
 * for @id, the responder resources @ird and initiator depth @ord (0:
 * rdma_cm's). */
int verbs_cm_qp_to_rts(struct verbs_qp *q, struct rdma_cm_id *id, uint32_t ird,
		       uint32_t ord);
/* The conn param of a connect or an accept for @q: @len bytes of private
 * data at @pdata, @ird and @ord within the device's limits (0: the
 * limits). */
void verbs_cm_fill_conn_param(struct verbs_dev *vd, struct rdma_conn_param *cp,
			      const void *pdata, uint32_t len, uint32_t ird,
			      uint32_t ord, struct verbs_qp *q);

/* For tests: handle one async event as the engine thread does (the
 * upcall, or nothing for an event of another port). */
void verbs_handle_async(struct verbs_dev *vd, const struct ibv_async_event *ev);

#endif /* VP_VERBS_H */
