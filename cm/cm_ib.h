/* SPDX-License-Identifier: MIT */
/*
 * cm_ib.h - what the files of the InfiniBand CM share: the GSI port of
 * each RoCE/IB device (cm_ib_gsi.c: QP1, its buffers, address handles,
 * MAD send and receive) and the connection state machine (cm_ib.c).
 */
#ifndef CM_IB_H
#define CM_IB_H

#include "cm/cm_private.h"
#include "cm/ib_mad.h"

/* Where a MAD goes (or came from): the peer's GID and our GID index. */
struct ib_dest {
	union rnicpi_gid dgid;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint32_t dest_qpn;	/* 1 for CM MADs */
};

/* What the GRH of a received MAD says. */
struct ib_src {
	struct sockaddr_storage from;	/* the peer (unmapped IPv4) */
	struct sockaddr_storage to;	/* our address it was sent to */
	union rnicpi_gid sgid, dgid;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint32_t src_qp;
};

/* The GSI of one device, made on first use, gone at cm_close. */
struct ib_port;

/* The port of @d (made now if needed; called with the ib lock held).
 * Borrowed: lives until cm_ib_fini. */
int ib_port_get(struct cm *cm, struct ual_device *d, struct ib_port **out);
void ib_port_free(struct ib_port *p);
struct ual_device *ib_port_device(struct ib_port *p);
const char *ib_port_prefix(struct ib_port *p);
uint64_t ib_port_guid(struct ib_port *p);	/* host order */
enum rnicpi_mtu ib_port_mtu(struct ib_port *p);
/* Our GID index for the local address @sa; -EADDRNOTAVAIL if none. */
int ib_port_gid_index(struct ib_port *p, const struct sockaddr *sa);
/* Post @m to @dst (an address handle made for the send, dropped at its
 * completion). */
int ib_port_send(struct ib_port *p, const struct ib_mad *m,
		 const struct ib_dest *dst);

/* A MAD arrived on @p (the manager's thread, no lock held). */
void cm_ib_recv(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		const struct ib_src *src);

/* GID <-> address: an IPv4-mapped GID becomes AF_INET. */
void ib_gid_to_sockaddr(const union rnicpi_gid *g, struct sockaddr_storage *ss);
void ib_sockaddr_to_gid(const struct sockaddr *sa, union rnicpi_gid *g);

/* ------------------------------------------------------------------ */
/* The connection state machine (cm_ib*.c)                             */
/* ------------------------------------------------------------------ */

/* What we ask of peers, and wait for ourselves. */
#define IB_CM_RETRIES 5u		/* REQ/REP/DREQ sent at most 1 + this */
#define IB_CM_MIN_RTO_MS 50u
#define IB_CM_MAX_RTO_MS 4000u
#define IB_CM_TIMEWAIT_MS 1000u
#define IB_ACK_TIMEOUT 16u		/* 4.096 us * 2^16 = 268 ms */
#define IB_RETRY_COUNT 7u
#define IB_RNR_RETRY 7u			/* infinite */
#define IB_MIN_RNR_TIMER 12u		/* 0.64 ms (IBA 9.7.5.2.8) */

enum ib_conn_state {
	IBC_REQ_SENT,
	IBC_MRA_RCVD,
	IBC_REQ_RCVD,
	IBC_MRA_SENT,
	IBC_REP_SENT,
	IBC_ESTABLISHED,
	IBC_DREQ_SENT,
	IBC_TIMEWAIT,
	IBC_REP_RCVD,	/* active, three-way: REP in, RTU held (MRA sent) */
	IBC_NSTATES
};

extern const char *const ibc_state_names[];

struct ib_conn {
	gint ref;
	struct cm *cm;
	struct ib_port *port;
	enum ib_conn_state state;
	bool active;
	bool cma;			/* rdma_cm header in the REQ */
	bool abandoned;			/* REJ reason timeout, not consumer */
	uint32_t local_id, remote_id;
	uint64_t tid;			/* of the REQ (REP, RTU, REJ, MRA) */
	uint64_t dreq_tid;
	uint64_t sid;
	uint64_t remote_guid;
	struct ib_dest dest;
	struct sockaddr_storage local_addr, remote_addr;
	uint32_t local_qpn, remote_qpn;
	uint32_t local_psn, remote_psn;
	uint8_t mtu;
	uint8_t retry_count, rnr_retry, ack_timeout;
	uint8_t resp_res, init_depth;	/* the peer's (REQ or REP) */
	uint32_t peer_rto_ms;		/* how long the peer may take */
	uint32_t rto_ms;		/* how long we wait for the peer */
	uint32_t retries_left;
	struct ib_mad last;		/* sent again on time-out / dup */
	bool have_last;
	GSource *timer;
	struct cm_id *id;		/* reference, once bound */
	struct cm_req *req;		/* reference: passive, unanswered */
	struct rnicpi_conn rconn;	/* what cm_req.c holds for us */
	char prefix[CM_PREFIX_MAX];
};

struct ib_state {
	GMutex lock;
	GHashTable *ports;	/* struct ual_device * -> struct ib_port * */
	GHashTable *conns;	/* local comm ID -> struct ib_conn * (ref) */
	GHashTable *sidr_out;	/* request ID -> struct cm_sidr * (ref) */
	GHashTable *sidr_in;	/* &req_id -> struct ib_sidr_in * */
	GRand *rand;
};

static inline struct ib_state *ib_of(struct cm *cm)
{
	return cm->ib;
}

static inline uint8_t ib_cap8(uint32_t v, uint32_t dev_max)
{
	if (dev_max && v > dev_max)
		v = dev_max;
	return (uint8_t)MIN(v, 255u);
}

#define ibc_debug(c, fmt, ...) \
	g_debug("%s " fmt, (c)->prefix, ##__VA_ARGS__)
#define ibc_info(c, fmt, ...) \
	g_info("%s " fmt, (c)->prefix, ##__VA_ARGS__)

/* cm_ib.c: references, the table, timers, sending, QP transitions. The
 * _locked ones want st->lock; ibc_report never is called with it. */
struct ib_conn *ibc_ref(struct ib_conn *c);
void ibc_unref(struct ib_conn *c);
const char *ibc_name(enum ib_conn_state s);
struct ib_conn *ibc_new_locked(struct cm *cm, struct ib_port *p,
			       bool active);
uint32_t ib_local_id(struct ib_state *st);
/* The connection named by our comm ID @id, new reference, or NULL. */
struct ib_conn *ibc_lookup_locked(struct ib_state *st, uint32_t id);
void ibc_forget_locked(struct ib_conn *c);
void ibc_arm(struct ib_conn *c, uint32_t ms);
void ibc_set_state(struct ib_conn *c, enum ib_conn_state s);
void ibc_timewait(struct ib_conn *c);
/* Send @m (kept for a resend when @keep). */
void ibc_send(struct ib_conn *c, const struct ib_mad *m, bool keep);
void ibc_resend(struct ib_conn *c);
void ib_send_rej(struct ib_port *p, const struct ib_dest *dst, uint64_t tid,
		 uint32_t local_id, uint32_t remote_id, uint8_t msg,
		 uint16_t reason, const void *pdata, uint32_t len,
		 struct ib_mad *keep);
void ib_reply_dest(const struct ib_src *src, int gidx, struct ib_dest *d);
/* An event of @id's connection for cm.c, as a provider would give it,
 * to @id itself: the caller holds a reference on it, and its QP may be
 * gone already. */
void ibc_report(struct ib_conn *c, struct cm_id *id,
		enum rnicpi_conn_event_type type, int status,
		const void *pdata, uint32_t len);
int ibc_qp_to_rts(struct ib_conn *c, struct ual_qp *qp, uint8_t ird,
		  uint8_t ord);
void ib_qp_error(struct ual_qp *qp);
uint32_t ib_rto_clamp(uint32_t ms);
uint32_t ib_pdata_used(const uint8_t *p, uint32_t room);

/* cm_ib_active.c */
int ib_connect(struct cm *cm, struct cm_id *id);
void ib_recv_rep(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		 const struct ib_src *src);
void ib_recv_mra(struct cm *cm, struct ib_port *p, const struct ib_mad *m);
void ib_recv_rej(struct cm *cm, struct ib_port *p, const struct ib_mad *m);

/* cm_ib_passive.c */
void ib_recv_req(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		 const struct ib_src *src, uint64_t tid);
int ib_accept(struct cm *cm, struct rnicpi_conn *rc, struct cm_id *id);
void ib_reject(struct cm *cm, struct rnicpi_conn *rc, const void *pdata,
	       uint32_t len);
void ib_recv_rtu(struct cm *cm, struct ib_port *p, const struct ib_mad *m);

/* cm_ib_close.c */
gboolean ibc_timeout(gpointer data);
int ib_confirm(struct cm *cm, struct cm_id *id, bool ok, const void *pdata,
	       uint32_t len);
void ibc_send_abort_locked(struct ib_conn *c);
void ibc_send_dreq_locked(struct ib_state *st, struct ib_conn *c,
			  const void *pdata, uint32_t len);
void ib_recv_dreq(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		  const struct ib_src *src, uint64_t tid);
void ib_recv_drep(struct cm *cm, struct ib_port *p, const struct ib_mad *m);
int ib_disconnect(struct cm *cm, struct cm_id *id, bool abortive);
void ib_release(struct cm *cm, struct cm_id *id, enum cm_id_state was);

/* cm_ib_sidr.c: service ID resolution (IBA 12.11). */
void ib_recv_sidr_req(struct cm *cm, struct ib_port *p,
		      const struct ib_mad *m, const struct ib_src *src,
		      uint64_t tid);
void ib_recv_sidr_rep(struct cm *cm, struct ib_port *p,
		      const struct ib_mad *m);
void ib_sidr_fini(struct ib_state *st);

/* cm.c calls these. */
void cm_ib_init(struct cm *cm);
void cm_ib_fini(struct cm *cm);

#endif /* CM_IB_H */
