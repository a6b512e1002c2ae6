/* SPDX-License-Identifier: MIT */
/*
 * cm_ib.c - the InfiniBand communication manager (IBA chapter 12) for RoCE
 * and IB devices: REQ, MRA, REJ, REP, RTU, DREQ, DREP over each device's
 * QP1 (cm_ib_gsi.c), with rdma_cm's private data header and service IDs so
 * that librdmacm applications (rping, ucmatose, perftest -R) and the Linux
 * kernel's rdma_cm talk to us and we to them.
 *
 * One struct ib_conn per connection, active or passive, named by our
 * local communication ID. States (IBA 12.9.6 / figure 151, simplified to
 * what a consumer without LAP or RD sees):
 *
 *   active:  REQ_SENT -(MRA)-> MRA_RCVD -(REP)-> ESTABLISHED
 *   passive: REQ_RCVD -(time)-> MRA_SENT -(accept)-> REP_SENT -(RTU)->
 *            ESTABLISHED
 *   ESTABLISHED -(disconnect)-> DREQ_SENT -(DREP)-> TIMEWAIT
 *   ESTABLISHED -(DREQ)-> TIMEWAIT (DREP sent)
 *   anything -(REJ, time-out)-> TIMEWAIT -> gone
 *
 * Every message we send is kept until its answer arrives and sent again
 * after the CM response time-out, at most max_cm_retries times (12.6.2,
 * 12.9.2); a duplicate of what we already answered gets the answer again
 * (12.9.3). A passive request the consumer has not answered by half the
 * peer's response time-out gets an MRA (12.6.6), and one still unanswered
 * at the manager's set-up time-out is refused with REJ "timeout".
 * Connections in TIMEWAIT stay known for a while, so that late MADs find
 * them (12.9.8.3): a REQ matching one gets REJ "stale connection".
 *
 * Files: this one (tables, timers, sending, QP transitions, dispatch,
 * listening, the transport table), cm_ib_active.c (connect, REP, MRA,
 * REJ), cm_ib_passive.c (REQ, accept, reject), cm_ib_close.c (time-outs,
 * DREQ/DREP, release), cm_ib_gsi.c (QP1), ib_mad.c (the wire).
 *
 * The consumer's side of each connection is cm.c's struct cm_id; events
 * reach it through cm_id_conn_event / cm_req_event as a provider's do, so
 * the consumer sees exactly what it sees on iWARP. Locking: ib->lock guards
 * the tables and each ib_conn; nothing above is called with it held.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cm/cm_ib.h"

const char *const ibc_state_names[IBC_NSTATES] = {
	[IBC_REQ_SENT] = "REQ_SENT",	   [IBC_MRA_RCVD] = "MRA_RCVD",
	[IBC_REQ_RCVD] = "REQ_RCVD",	   [IBC_MRA_SENT] = "MRA_SENT",
	[IBC_REP_SENT] = "REP_SENT",	   [IBC_ESTABLISHED] = "ESTABLISHED",
	[IBC_DREQ_SENT] = "DREQ_SENT",	   [IBC_TIMEWAIT] = "TIMEWAIT",
	[IBC_REP_RCVD] = "REP_RCVD",
};

struct ib_conn *ibc_ref(struct ib_conn *c)
{
	g_atomic_int_inc(&c->ref);
	return c;
}

void ibc_unref(struct ib_conn *c)
{
	if (!c || !g_atomic_int_dec_and_test(&c->ref))
		return;
	g_assert(!c->timer);
	cm_id_unref(c->id);
	cm_req_unref(c->req);
	g_free(c);
}

const char *ibc_name(enum ib_conn_state s)
{
	return (unsigned int)s < IBC_NSTATES ? ibc_state_names[s] : "?";
}

/* ------------------------------------------------------------------ */
/* Set-up and teardown of the manager's IB state                       */
/* ------------------------------------------------------------------ */

int ib_port_new(struct cm *cm, struct ual_device *d, struct ib_port **out);

void cm_ib_init(struct cm *cm)
{
	struct ib_state *st = g_new0(struct ib_state, 1);

	g_mutex_init(&st->lock);
	st->ports = g_hash_table_new(g_direct_hash, g_direct_equal);
	st->conns = g_hash_table_new(g_direct_hash, g_direct_equal);
	st->sidr_out = g_hash_table_new(g_direct_hash, g_direct_equal);
	st->sidr_in = g_hash_table_new(g_int64_hash, g_int64_equal);
	st->rand = g_rand_new();
	cm->ib = st;
}

void cm_ib_fini(struct cm *cm)
{
	struct ib_state *st = ib_of(cm);
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, st->conns);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct ib_conn *c = val;

		cm_source_drop(&c->timer);
		ibc_unref(c);
	}
	g_hash_table_destroy(st->conns);
	ib_sidr_fini(st);
	g_hash_table_iter_init(&it, st->ports);
	while (g_hash_table_iter_next(&it, NULL, &val))
		ib_port_free(val);
	g_hash_table_destroy(st->ports);
	g_rand_free(st->rand);
	g_mutex_clear(&st->lock);
	g_free(st);
	cm->ib = NULL;
}

/* Called with st->lock held. */
int ib_port_get(struct cm *cm, struct ual_device *d, struct ib_port **out)
{
	struct ib_state *st = ib_of(cm);
	struct ib_port *p = g_hash_table_lookup(st->ports, d);
	int err;

	if (!p) {
		err = ib_port_new(cm, d, &p);
		if (err)
			return err;
		g_hash_table_insert(st->ports, d, p);
	}
	*out = p;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Connections: table, timers, sending                                 */
/* ------------------------------------------------------------------ */

uint32_t ib_rto_clamp(uint32_t ms)
{
	return CLAMP(ms, IB_CM_MIN_RTO_MS, IB_CM_MAX_RTO_MS);
}

/* A random comm or SIDR request ID. With the host service (hostrdma-kald)
 * its top bits are this process's, so that the daemon hands the peer's
 * replies, which carry it, to us (ual_hostsvc_id_prefix). */
uint32_t ib_local_id(struct ib_state *st)
{
	uint32_t prefix = ual_hostsvc_id_prefix();
	uint32_t id = g_rand_int(st->rand);

	return prefix ? prefix | (id & 0xffffffu) : id;
}

/* A new connection with a fresh local comm ID, in the table, which holds
 * its one reference: borrowed by the caller while it holds st->lock. */
struct ib_conn *ibc_new_locked(struct cm *cm, struct ib_port *p,
				       bool active)
{
	struct ib_state *st = ib_of(cm);
	struct ib_conn *c = g_new0(struct ib_conn, 1);

	c->ref = 1;
	c->cm = cm;
	c->port = p;
	c->active = active;
	do
		c->local_id = ib_local_id(st);
	while (!c->local_id ||
	       g_hash_table_contains(st->conns,
				     GUINT_TO_POINTER(c->local_id)));
	c->local_psn = g_rand_int(st->rand) & 0xffffffu;
	c->rconn.device = ual_device_rnicpi(ib_port_device(p));
	snprintf(c->prefix, sizeof(c->prefix), "IBCM[%08x] %s:", c->local_id,
		 ual_device_name(ib_port_device(p)));
	g_hash_table_insert(st->conns, GUINT_TO_POINTER(c->local_id), c);
	return c;
}


/* (Re)start @c's timer. Called with st->lock held. */
void ibc_arm(struct ib_conn *c, uint32_t ms)
{
	cm_source_drop(&c->timer);
	c->timer = cm_timeout_add(c->cm, ms, ibc_timeout, ibc_ref(c),
				  (GDestroyNotify)ibc_unref);
}

void ibc_set_state(struct ib_conn *c, enum ib_conn_state s)
{
	ibc_debug(c, "%s -> %s", ibc_name(c->state), ibc_name(s));
	c->state = s;
}

/* Into TIMEWAIT: the ID stays known for late MADs, then goes. Called
 * with st->lock held. */
void ibc_timewait(struct ib_conn *c)
{
	ibc_set_state(c, IBC_TIMEWAIT);
	ibc_arm(c, MIN(IB_CM_TIMEWAIT_MS, 2 * c->peer_rto_ms + 100));
}

void ibc_forget_locked(struct ib_conn *c)
{
	struct ib_state *st = ib_of(c->cm);

	cm_source_drop(&c->timer);
	if (g_hash_table_lookup(st->conns, GUINT_TO_POINTER(c->local_id)) ==
	    c) {
		g_hash_table_remove(st->conns, GUINT_TO_POINTER(c->local_id));
		ibc_unref(c);
	}
}

/* Send @m and keep it for a resend. */
void ibc_send(struct ib_conn *c, const struct ib_mad *m, bool keep)
{
	if (keep) {
		c->last = *m;
		c->have_last = true;
	}
	ibc_debug(c, "sending %s",
		  ib_cm_attr_name(ib_mad_get16(m, IB_MAD_OFF_ATTR_ID)));
	ib_port_send(c->port, m, &c->dest);
}

void ibc_resend(struct ib_conn *c)
{
	if (c->have_last) {
		ibc_debug(c, "sending %s again",
			  ib_cm_attr_name(ib_mad_get16(&c->last,
						       IB_MAD_OFF_ATTR_ID)));
		ib_port_send(c->port, &c->last, &c->dest);
	}
}

void ib_send_rej(struct ib_port *p, const struct ib_dest *dst,
		     uint64_t tid, uint32_t local_id, uint32_t remote_id,
		     uint8_t msg, uint16_t reason, const void *pdata,
		     uint32_t len, struct ib_mad *keep)
{
	struct ib_cm_rej rej = {
		.local_comm_id = local_id,
		.remote_comm_id = remote_id,
		.message_rejected = msg,
		.reason = reason,
	};
	struct ib_mad m;

	if (reason == IB_CM_REJ_TIMEOUT) {
		/* ARI: the GUID of the CA that timed out (12.6.7.2). */
		uint64_t guid = ib_port_guid(p);

		rej.ari_length = 8;
		for (int i = 0; i < 8; i++)
			rej.ari[i] = (uint8_t)(guid >> (56 - 8 * i));
	}
	if (len)
		memcpy(rej.private_data, pdata, MIN(len, IB_CM_REJ_PDATA));
	ib_mad_cm_init(&m, IB_CM_ATTR_REJ, tid);
	ib_cm_rej_encode(&m, &rej);
	if (keep)
		*keep = m;
	ib_port_send(p, &m, dst);
}

/* ------------------------------------------------------------------ */
/* Reporting to cm.c (never with st->lock held)                        */
/* ------------------------------------------------------------------ */

/* IB CM private data has a fixed size and no length: what the consumer
 * sees ends at the last non-zero byte, and none at all is none. */
uint32_t ib_pdata_used(const uint8_t *p, uint32_t room)
{
	while (room && !p[room - 1])
		room--;
	return room;
}

/*
 * To @id itself (the caller's reference keeps it), not through its QP: the
 * callers move the QP to ERR first (a DREQ, a REJ), and the flush that
 * causes may lead the consumer to free its endpoint, QP and all, before
 * this runs. The provider QP is then gone, and the same address may be a
 * new QP with a connection of its own.
 */
void ibc_report(struct ib_conn *c, struct cm_id *id,
		   enum rnicpi_conn_event_type type, int status,
		   const void *pdata, uint32_t len)
{
	struct rnicpi_conn_event ev = {
		.type = type,
		.status = status,
		.private_data = len ? pdata : NULL,
		.private_data_len = len,
		.ird = c->init_depth,
		.ord = c->resp_res,
		.local_addr = c->local_addr,
		.remote_addr = c->remote_addr,
	};

	cm_id_conn_event(id, &ev);
}

/* ------------------------------------------------------------------ */
/* QP transitions (IBA 12.9.7, the attributes of 12.7)                 */
/* ------------------------------------------------------------------ */

static int ibc_qp_modify(struct ib_conn *c, struct ual_qp *qp,
		     struct rnicpi_qp_attr *a, unsigned int mask)
{
	int err = ual_qp_modify(qp, a, mask);

	if (err)
		ibc_info(c, "QP %u to state %d: %s", ual_qp_num(qp),
			 a->qp_state, g_strerror(-err));
	return err;
}

/* RESET -> INIT if the consumer left the QP in RESET. */
static int ibc_qp_to_init(struct ib_conn *c, struct ual_qp *qp)
{
	struct rnicpi_qp_attr a = { 0 };
	int err = ual_qp_query(qp, &a, RNICPI_QP_STATE);

	if (err || a.qp_state != RNICPI_QPS_RESET)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = RNICPI_ACCESS_REMOTE_READ |
			    RNICPI_ACCESS_REMOTE_WRITE |
			    RNICPI_ACCESS_REMOTE_ATOMIC;
	return ibc_qp_modify(c, qp, &a,
			 RNICPI_QP_STATE | RNICPI_QP_PKEY_INDEX |
				 RNICPI_QP_PORT | RNICPI_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS with what both sides agreed: @ird the Reads we
 * answer at once, @ord the Reads we issue. */
int ibc_qp_to_rts(struct ib_conn *c, struct ual_qp *qp, uint8_t ird,
		     uint8_t ord)
{
	struct rnicpi_qp_attr a;
	int err = ibc_qp_to_init(c, qp);

	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.ah_attr.dgid = c->dest.dgid;
	a.ah_attr.sgid_index = c->dest.sgid_index;
	a.ah_attr.hop_limit = c->dest.hop_limit ? c->dest.hop_limit : 64;
	a.ah_attr.traffic_class = c->dest.traffic_class;
	a.ah_attr.flow_label = c->dest.flow_label;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.path_mtu = c->mtu;
	a.dest_qp_num = c->remote_qpn;
	/* The starting PSN a side puts in its REQ / REP is the first PSN it
	 * expects to receive: the peer's send queue starts there. So the
	 * Linux kernel's CM reads it (its sq_psn is the other side's
	 * field), and so does every rdma_cm peer. */
	a.rq_psn = c->local_psn;
	a.max_dest_rd_atomic = ird;
	a.min_rnr_timer = IB_MIN_RNR_TIMER;
	err = ibc_qp_modify(c, qp, &a,
			RNICPI_QP_STATE | RNICPI_QP_AV | RNICPI_QP_PATH_MTU |
				RNICPI_QP_DEST_QPN | RNICPI_QP_RQ_PSN |
				RNICPI_QP_MAX_DEST_RD_ATOMIC |
				RNICPI_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = c->remote_psn;
	a.timeout = c->ack_timeout;
	a.retry_cnt = c->retry_count;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = ord;
	return ibc_qp_modify(c, qp, &a,
			 RNICPI_QP_STATE | RNICPI_QP_SQ_PSN |
				 RNICPI_QP_TIMEOUT | RNICPI_QP_RETRY_CNT |
				 RNICPI_QP_RNR_RETRY |
				 RNICPI_QP_MAX_QP_RD_ATOMIC);
}

void ib_qp_error(struct ual_qp *qp)
{
	struct rnicpi_qp_attr a = { .qp_state = RNICPI_QPS_ERR };

	ual_qp_modify(qp, &a, RNICPI_QP_STATE);
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

void cm_ib_recv(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		const struct ib_src *src)
{
	struct ib_mad_hdr h;

	ib_mad_hdr_decode(m, &h);
	if (h.base_version != IB_MAD_BASE_VERSION ||
	    h.mgmt_class != IB_MGMT_CLASS_CM) {
		g_debug("%s MAD of class 0x%02x version %u; not ours",
			ib_port_prefix(p), h.mgmt_class, h.base_version);
		return;
	}
	if (h.class_version != IB_CM_CLASS_VERSION ||
	    h.method != IB_MGMT_METHOD_SEND) {
		g_info("%s CM MAD class version %u method 0x%02x; dropped",
		       ib_port_prefix(p), h.class_version, h.method);
		return;
	}
	if (src->src_qp != IB_GSI_QPN_CM)
		g_debug("%s CM MAD from QP %u (not QP1)", ib_port_prefix(p),
			src->src_qp);
	g_debug("%s received %s, TID 0x%016" PRIx64, ib_port_prefix(p),
		ib_cm_attr_name(h.attr_id), h.tid);
	switch (h.attr_id) {
	case IB_CM_ATTR_REQ:
		ib_recv_req(cm, p, m, src, h.tid);
		break;
	case IB_CM_ATTR_MRA:
		ib_recv_mra(cm, p, m);
		break;
	case IB_CM_ATTR_REJ:
		ib_recv_rej(cm, p, m);
		break;
	case IB_CM_ATTR_REP:
		ib_recv_rep(cm, p, m, src);
		break;
	case IB_CM_ATTR_RTU:
		ib_recv_rtu(cm, p, m);
		break;
	case IB_CM_ATTR_DREQ:
		ib_recv_dreq(cm, p, m, src, h.tid);
		break;
	case IB_CM_ATTR_DREP:
		ib_recv_drep(cm, p, m);
		break;
	case IB_CM_ATTR_SIDR_REQ:
		ib_recv_sidr_req(cm, p, m, src, h.tid);
		break;
	case IB_CM_ATTR_SIDR_REP:
		ib_recv_sidr_rep(cm, p, m);
		break;
	default:
		g_info("%s CM attribute 0x%04x (%s) is not handled here; dropped",
		       ib_port_prefix(p), h.attr_id,
		       ib_cm_attr_name(h.attr_id));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Listening                                                           */
/* ------------------------------------------------------------------ */

/* Called with cm->lock held. */
static int ib_listen(struct cm *cm, struct cm_listen *l)
{
	struct ib_state *st = ib_of(cm);
	struct ib_port *p;
	int err;

	g_mutex_lock(&st->lock);
	err = ib_port_get(cm, l->dev, &p);
	if (!err && !l->sid && !l->port) {
		/* Any free port of rdma_cm's TCP space. */
		for (int tries = 0; tries < 1000 && !l->port; tries++) {
			uint16_t port = (uint16_t)g_rand_int_range(
				st->rand, 32768, 61000);
			struct cm_listen *o = cm_listen_find_sid_locked(
				cm, l->dev, l->port_num,
				ib_cma_service_id(IB_RDMA_PS_TCP, port));

			if (o)
				cm_listen_unref(o);
			else
				l->port = port;
		}
		if (!l->port)
			err = -EADDRINUSE;
	}
	g_mutex_unlock(&st->lock);
	if (err)
		return err;
	if (!l->sid) {
		l->sid = ib_cma_service_id(IB_RDMA_PS_TCP, l->port);
		/* Taken by another listener of the service? */
		for (guint i = 0; i < cm->listens->len; i++) {
			struct cm_listen *o = cm->listens->pdata[i];

			if (o->dev == l->dev && o->port_num == l->port_num &&
			    o->sid == l->sid)
				return -EADDRINUSE;
		}
	} else if (ib_cma_ps_of(l->sid) == IB_RDMA_PS_TCP) {
		l->port = (uint16_t)l->sid;
	}
	return 0;
}

/* With the host service the daemon hands REQs for the service ID to us;
 * another process may hold it already. */
static int ib_claim(struct cm *cm, struct cm_listen *l)
{
	int err = ual_hostsvc_listen(l->sid, true);

	(void)cm;
	if (err)
		g_warning("listen on service ID 0x%016" G_GINT64_MODIFIER
			"x: %s", l->sid, err == -EADDRINUSE
			? "another process on this host holds it"
			: g_strerror(-err));
	return err;
}

static void ib_unclaim(struct cm *cm, struct cm_listen *l)
{
	(void)cm;
	(void)ual_hostsvc_listen(l->sid, false);
}

static void ib_cancel(struct cm *cm, struct cm_id *id)
{
	(void)cm;
	(void)id;
}

static uint32_t ib_max_private_data(struct ual_device *d,
				    enum cm_pdata_op op)
{
	struct rnicpi_device_attr a;

	/* No QP1, no CM, no private data. */
	if (ual_device_query(d, &a) || !(a.caps & RNICPI_DEV_CAP_GSI))
		return 0;
	switch (op) {
	case CM_PDATA_CONNECT:
		/* rdma_cm's header takes 36 of the REQ's 92 bytes. */
		return IB_CMA_PDATA;
	case CM_PDATA_ACCEPT:
		return IB_CM_REP_PDATA;
	case CM_PDATA_REJECT:
		return IB_CM_REJ_PDATA;
	case CM_PDATA_DISCONNECT:
		return IB_CM_DREQ_PDATA;	/* cm_disconnect_pdata */
	}
	return 0;
}

const struct cm_transport cm_ib_transport = {
	.name = "ib",
	.listen = ib_listen,
	.unlisten = NULL,
	.claim = ib_claim,
	.unclaim = ib_unclaim,
	.connect = ib_connect,
	.cancel = ib_cancel,
	.socket_convert = NULL,
	.max_private_data = ib_max_private_data,
	.accept = ib_accept,
	.reject = ib_reject,
	.disconnect = ib_disconnect,
	.release = ib_release,
	.confirm = ib_confirm,
};
