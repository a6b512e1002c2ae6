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
 * The consumer's side of each connection is cm.c's struct cm_id; events
 * reach it through cm_conn_event / cm_req_event like a provider's, so the
 * consumer sees exactly what it sees on iWARP. Locking: ib->lock guards
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
	IBC_NSTATES
};

static const char *const ibc_state_names[IBC_NSTATES] = {
	[IBC_REQ_SENT] = "REQ_SENT",	   [IBC_MRA_RCVD] = "MRA_RCVD",
	[IBC_REQ_RCVD] = "REQ_RCVD",	   [IBC_MRA_SENT] = "MRA_SENT",
	[IBC_REP_SENT] = "REP_SENT",	   [IBC_ESTABLISHED] = "ESTABLISHED",
	[IBC_DREQ_SENT] = "DREQ_SENT",	   [IBC_TIMEWAIT] = "TIMEWAIT",
};

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
	GRand *rand;
};

static struct ib_state *ib_of(struct cm *cm)
{
	return cm->ib;
}

static struct ib_conn *conn_ref(struct ib_conn *c)
{
	g_atomic_int_inc(&c->ref);
	return c;
}

static void conn_unref(struct ib_conn *c)
{
	if (!c || !g_atomic_int_dec_and_test(&c->ref))
		return;
	g_assert(!c->timer);
	cm_id_unref(c->id);
	cm_req_unref(c->req);
	g_free(c);
}

static const char *ibc_name(enum ib_conn_state s)
{
	return (unsigned int)s < IBC_NSTATES ? ibc_state_names[s] : "?";
}

#define ibc_debug(c, fmt, ...) \
	g_debug("%s " fmt, (c)->prefix, ##__VA_ARGS__)
#define ibc_info(c, fmt, ...) \
	g_info("%s " fmt, (c)->prefix, ##__VA_ARGS__)

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
		conn_unref(c);
	}
	g_hash_table_destroy(st->conns);
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

static uint32_t rto_clamp(uint32_t ms)
{
	return CLAMP(ms, IB_CM_MIN_RTO_MS, IB_CM_MAX_RTO_MS);
}

/* A new connection with a fresh local comm ID, in the table, which holds
 * its one reference: borrowed by the caller while it holds st->lock. */
static struct ib_conn *conn_new_locked(struct cm *cm, struct ib_port *p,
				       bool active)
{
	struct ib_state *st = ib_of(cm);
	struct ib_conn *c = g_new0(struct ib_conn, 1);

	c->ref = 1;
	c->cm = cm;
	c->port = p;
	c->active = active;
	do
		c->local_id = g_rand_int(st->rand);
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

static gboolean conn_timeout(gpointer data);

/* (Re)start @c's timer. Called with st->lock held. */
static void conn_arm(struct ib_conn *c, uint32_t ms)
{
	cm_source_drop(&c->timer);
	c->timer = cm_timeout_add(c->cm, ms, conn_timeout, conn_ref(c),
				  (GDestroyNotify)conn_unref);
}

static void conn_set_state(struct ib_conn *c, enum ib_conn_state s)
{
	ibc_debug(c, "%s -> %s", ibc_name(c->state), ibc_name(s));
	c->state = s;
}

/* Into TIMEWAIT: the ID stays known for late MADs, then goes. Called
 * with st->lock held. */
static void conn_timewait(struct ib_conn *c)
{
	conn_set_state(c, IBC_TIMEWAIT);
	conn_arm(c, MIN(IB_CM_TIMEWAIT_MS, 2 * c->peer_rto_ms + 100));
}

static void conn_forget_locked(struct ib_conn *c)
{
	struct ib_state *st = ib_of(c->cm);

	cm_source_drop(&c->timer);
	if (g_hash_table_lookup(st->conns, GUINT_TO_POINTER(c->local_id)) ==
	    c) {
		g_hash_table_remove(st->conns, GUINT_TO_POINTER(c->local_id));
		conn_unref(c);
	}
}

/* Send @m and keep it for a resend. */
static void conn_send(struct ib_conn *c, const struct ib_mad *m, bool keep)
{
	if (keep) {
		c->last = *m;
		c->have_last = true;
	}
	ibc_debug(c, "sending %s",
		  ib_cm_attr_name(ib_mad_get16(m, IB_MAD_OFF_ATTR_ID)));
	ib_port_send(c->port, m, &c->dest);
}

static void conn_resend(struct ib_conn *c)
{
	if (c->have_last) {
		ibc_debug(c, "sending %s again",
			  ib_cm_attr_name(ib_mad_get16(&c->last,
						       IB_MAD_OFF_ATTR_ID)));
		ib_port_send(c->port, &c->last, &c->dest);
	}
}

static void send_rej(struct ib_port *p, const struct ib_dest *dst,
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
static uint32_t pdata_used(const uint8_t *p, uint32_t room)
{
	while (room && !p[room - 1])
		room--;
	return room;
}

static void report(struct ib_conn *c, struct cm_id *id,
		   enum rnicpi_conn_event_type type, int status,
		   const void *pdata, uint32_t len)
{
	struct rnicpi_conn_event ev = {
		.type = type,
		.status = status,
		.qp = id->rqp,
		.private_data = len ? pdata : NULL,
		.private_data_len = len,
		.ird = c->init_depth,
		.ord = c->resp_res,
		.local_addr = c->local_addr,
		.remote_addr = c->remote_addr,
	};

	cm_conn_event(id->dev, &ev, c->cm);
}

/* ------------------------------------------------------------------ */
/* QP transitions (IBA 12.9.7, the attributes of 12.7)                 */
/* ------------------------------------------------------------------ */

static int qp_modify(struct ib_conn *c, struct ual_qp *qp,
		     struct rnicpi_qp_attr *a, unsigned int mask)
{
	int err = ual_qp_modify(qp, a, mask);

	if (err)
		ibc_info(c, "QP %u to state %d: %s", ual_qp_num(qp),
			 a->qp_state, g_strerror(-err));
	return err;
}

/* RESET -> INIT if the consumer left the QP in RESET. */
static int qp_to_init(struct ib_conn *c, struct ual_qp *qp)
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
	return qp_modify(c, qp, &a,
			 RNICPI_QP_STATE | RNICPI_QP_PKEY_INDEX |
				 RNICPI_QP_PORT | RNICPI_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS with what both sides agreed: @ird the Reads we
 * answer at once, @ord the Reads we issue. */
static int qp_to_rts(struct ib_conn *c, struct ual_qp *qp, uint8_t ird,
		     uint8_t ord)
{
	struct rnicpi_qp_attr a;
	int err = qp_to_init(c, qp);

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
	err = qp_modify(c, qp, &a,
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
	return qp_modify(c, qp, &a,
			 RNICPI_QP_STATE | RNICPI_QP_SQ_PSN |
				 RNICPI_QP_TIMEOUT | RNICPI_QP_RETRY_CNT |
				 RNICPI_QP_RNR_RETRY |
				 RNICPI_QP_MAX_QP_RD_ATOMIC);
}

static void qp_error(struct ual_qp *qp)
{
	struct rnicpi_qp_attr a = { .qp_state = RNICPI_QPS_ERR };

	ual_qp_modify(qp, &a, RNICPI_QP_STATE);
}

/* ------------------------------------------------------------------ */
/* Active side: connect                                                */
/* ------------------------------------------------------------------ */

static uint8_t cap8(uint32_t v, uint32_t dev_max)
{
	if (dev_max && v > dev_max)
		v = dev_max;
	return (uint8_t)MIN(v, 255u);
}

static int ib_connect(struct cm *cm, struct cm_id *id)
{
	struct ib_state *st = ib_of(cm);
	struct ual_device *d = id->dev;
	struct rnicpi_device_attr da;
	struct ual_cm_route route;
	struct sockaddr_storage src;
	struct ib_cm_req req;
	struct ib_port *p;
	struct ib_conn *c;
	struct ib_mad m;
	uint32_t rto, pdata_off = 0;
	int gidx, err;

	err = cm_resolve(cm, (const void *)&id->remote_addr,
			 id->local_addr.ss_family ?
				 (const void *)&id->local_addr :
				 NULL,
			 ual_device_transport(d), &route);
	if (err)
		return err;
	if (route.device != d) {
		if (route.device)
			ual_device_put(route.device);
		cm_info(id, "the destination is not reached through %s",
			ual_device_name(d));
		return -ENETUNREACH;
	}
	ual_device_put(route.device);
	src = route.src;
	if (id->local_addr.ss_family != AF_UNSPEC)
		src = id->local_addr;
	err = ual_device_query(d, &da);
	if (err)
		return err;

	g_mutex_lock(&st->lock);
	err = ib_port_get(cm, d, &p);
	if (err)
		goto out_unlock;
	gidx = ib_port_gid_index(p, (const void *)&src);
	if (gidx < 0) {
		char buf[64];

		err = gidx;
		cm_info(id, "no GID of %s for source address %s",
			ual_device_name(d),
			cm_sockaddr_str((const void *)&src, buf, sizeof(buf)));
		goto out_unlock;
	}
	c = conn_new_locked(cm, p, true);
	c->sid = id->sid ? id->sid :
			   ib_cma_service_id(IB_RDMA_PS_TCP, id->port);
	c->cma = ib_cma_ps_of(c->sid) != 0;
	c->tid = (uint64_t)g_rand_int(st->rand) << 32 | c->local_id;
	c->local_qpn = ual_qp_num(id->qp);
	c->local_addr = src;
	c->remote_addr = id->remote_addr;
	if (!((struct sockaddr_in *)(void *)&c->local_addr)->sin_port)
		/* rdma_cm's source port: any, it names the connection. */
		((struct sockaddr_in *)(void *)&c->local_addr)->sin_port =
			htons((uint16_t)g_rand_int_range(st->rand, 32768,
							 61000));
	if (c->remote_addr.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)&c->remote_addr)->sin_port =
			htons((uint16_t)c->sid);
	else
		((struct sockaddr_in6 *)(void *)&c->remote_addr)->sin6_port =
			htons((uint16_t)c->sid);
	ib_sockaddr_to_gid((const void *)&id->remote_addr, &c->dest.dgid);
	c->dest.sgid_index = (uint8_t)gidx;
	c->dest.hop_limit = 64;
	c->mtu = MIN((uint8_t)ib_port_mtu(p), (uint8_t)RNICPI_MTU_4096);
	c->ack_timeout = IB_ACK_TIMEOUT;
	c->retry_count = IB_RETRY_COUNT;
	c->rnr_retry = IB_RNR_RETRY;
	/* Our whole set-up time spread over the tries. */
	rto = rto_clamp(id->param.timeout_ms / (IB_CM_RETRIES + 1));
	c->rto_ms = rto;
	c->peer_rto_ms = rto;
	c->retries_left = IB_CM_RETRIES;
	c->id = cm_id_ref(id);

	memset(&req, 0, sizeof(req));
	req.local_comm_id = c->local_id;
	req.service_id = c->sid;
	req.local_ca_guid = ib_port_guid(p);
	req.local_qpn = c->local_qpn;
	req.responder_resources = cap8(id->param.ird, da.max_qp_rd_atom);
	req.initiator_depth = cap8(id->param.ord, da.max_qp_init_rd_atom);
	req.remote_cm_response_timeout = ib_cm_timeout_code(rto);
	req.transport_service_type = 0;	/* RC */
	req.starting_psn = c->local_psn;
	req.local_cm_response_timeout = ib_cm_timeout_code(rto);
	req.retry_count = c->retry_count;
	req.pkey = IB_PKEY_DEFAULT;
	req.path_mtu = c->mtu;
	req.rnr_retry_count = c->rnr_retry;
	req.max_cm_retries = IB_CM_RETRIES;
	req.primary.local_lid = IB_LID_PERMISSIVE;
	req.primary.remote_lid = IB_LID_PERMISSIVE;
	{
		union rnicpi_gid sg;

		ib_sockaddr_to_gid((const void *)&src, &sg);
		memcpy(req.primary.local_gid, sg.raw, 16);
	}
	memcpy(req.primary.remote_gid, c->dest.dgid.raw, 16);
	req.primary.hop_limit = c->dest.hop_limit;
	req.primary.local_ack_timeout = c->ack_timeout;
	if (c->cma) {
		err = ib_cma_hdr_encode(req.private_data,
					(const void *)&c->local_addr,
					(const void *)&c->remote_addr);
		if (err) {
			conn_forget_locked(c);
			goto out_unlock;
		}
		pdata_off = IB_CMA_HDR_BYTES;
	}
	memcpy(req.private_data + pdata_off, id->pdata,
	       MIN(id->param.private_data_len,
		   IB_CM_REQ_PDATA - pdata_off));
	/* What the consumer sees as local address, with our chosen port. */
	id->local_addr = c->local_addr;
	ib_mad_cm_init(&m, IB_CM_ATTR_REQ, c->tid);
	ib_cm_req_encode(&m, &req);
	/* The ID's reference: its transport state outlives time-wait. */
	id->tp_data = conn_ref(c);
	conn_set_state(c, IBC_REQ_SENT);
	conn_arm(c, rto);
	conn_send(c, &m, true);
	g_mutex_unlock(&st->lock);
	cm_id_set_state(id, CM_ID_PROVIDER);
	cm_debug(id, "REQ for service ID 0x%016" PRIx64 " sent (%s)", c->sid,
		 c->prefix);
	return 0;

out_unlock:
	g_mutex_unlock(&st->lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Time-outs                                                           */
/* ------------------------------------------------------------------ */

static gboolean conn_timeout(gpointer data)
{
	struct ib_conn *c = data;
	struct ib_state *st = ib_of(c->cm);
	struct cm_id *id = NULL;
	struct cm_req *req = NULL;
	bool fail = false, disc = false, mra = false;

	g_mutex_lock(&st->lock);
	if (!c->timer || g_source_is_destroyed(g_main_current_source())) {
		g_mutex_unlock(&st->lock);
		return G_SOURCE_REMOVE;
	}
	g_source_unref(c->timer);
	c->timer = NULL;
	switch (c->state) {
	case IBC_REQ_SENT:
	case IBC_MRA_RCVD:
	case IBC_REP_SENT:
	case IBC_DREQ_SENT:
		if (c->retries_left) {
			c->retries_left--;
			conn_resend(c);
			conn_arm(c, c->rto_ms);
			break;
		}
		ibc_info(c, "no answer in state %s after %u tries",
			 ibc_name(c->state), IB_CM_RETRIES + 1);
		if (c->state == IBC_DREQ_SENT) {
			/* 12.9.8.3: the DREQ sender enters time-wait. */
			disc = true;
		} else {
			send_rej(c->port, &c->dest, c->tid, c->local_id,
				 c->remote_id,
				 c->state == IBC_REP_SENT ? IB_CM_MSG_REP :
							    IB_CM_MSG_REQ,
				 IB_CM_REJ_TIMEOUT, NULL, 0, NULL);
			fail = true;
		}
		id = g_steal_pointer(&c->id);
		conn_timewait(c);
		break;
	case IBC_REQ_RCVD:
		/* The consumer is slow: tell the peer to wait (12.6.6). */
		mra = true;
		break;
	case IBC_MRA_SENT:
		/* Still no answer: refuse with "timeout" (cm_req.c asks
		 * reject(), which sends it). */
		req = c->req ? cm_req_ref(c->req) : NULL;
		c->abandoned = true;
		break;
	case IBC_ESTABLISHED:
		break;
	case IBC_TIMEWAIT:
		ibc_debug(c, "time-wait over");
		conn_forget_locked(c);
		break;
	case IBC_NSTATES:
		break;
	}
	if (mra) {
		struct ib_cm_mra mr = {
			.local_comm_id = c->local_id,
			.remote_comm_id = c->remote_id,
			.message_mraed = IB_CM_MSG_REQ,
			.service_timeout = ib_cm_timeout_code(c->cm->timeout_ms),
		};
		struct ib_mad m;

		ib_mad_cm_init(&m, IB_CM_ATTR_MRA, c->tid);
		ib_cm_mra_encode(&m, &mr);
		conn_set_state(c, IBC_MRA_SENT);
		conn_send(c, &m, true);
		conn_arm(c, c->cm->timeout_ms);
	}
	g_mutex_unlock(&st->lock);
	if (fail && id)
		report(c, id, RNICPI_CONN_ERROR, -ETIMEDOUT, NULL, 0);
	if (disc && id)
		report(c, id, RNICPI_CONN_DISCONNECTED, 0, NULL, 0);
	if (req) {
		cm_req_abandon(req, -ETIMEDOUT);
		cm_req_unref(req);
	}
	cm_id_unref(id);
	return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------ */
/* Passive side: REQ, accept, reject                                   */
/* ------------------------------------------------------------------ */

static struct ib_conn *find_remote_locked(struct ib_state *st,
					  uint32_t remote_id,
					  const union rnicpi_gid *from)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, st->conns);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct ib_conn *c = val;

		if (!c->active && c->remote_id == remote_id &&
		    memcmp(c->dest.dgid.raw, from->raw, 16) == 0)
			return c;
	}
	return NULL;
}

/* An established connection to the same peer QP (12.9.8.3.1). */
static struct ib_conn *find_stale_locked(struct ib_state *st, uint32_t qpn,
					 const union rnicpi_gid *from)
{
	GHashTableIter it;
	gpointer val;

	g_hash_table_iter_init(&it, st->conns);
	while (g_hash_table_iter_next(&it, NULL, &val)) {
		struct ib_conn *c = val;

		if (c->state == IBC_ESTABLISHED && c->remote_qpn == qpn &&
		    memcmp(c->dest.dgid.raw, from->raw, 16) == 0)
			return c;
	}
	return NULL;
}

static void reply_dest(const struct ib_src *src, int gidx,
		       struct ib_dest *d)
{
	memset(d, 0, sizeof(*d));
	d->dgid = src->sgid;
	d->sgid_index = (uint8_t)gidx;
	d->hop_limit = 64;
	d->traffic_class = src->traffic_class;
}

static void recv_req(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		     const struct ib_src *src, uint64_t tid)
{
	struct ib_state *st = ib_of(cm);
	struct ual_device *d = ib_port_device(p);
	struct ib_cm_req r;
	struct ib_dest dst;
	struct ib_conn *c, *stale = NULL;
	struct cm_id *stale_id = NULL;
	struct cm_listen *l;
	struct cm_req *req;
	struct sockaddr_storage local, remote;
	const uint8_t *pdata;
	uint32_t pdata_len;
	uint16_t reason = 0;
	const char *why = "";
	int gidx;

	ib_cm_req_decode(m, &r);
	gidx = ib_port_gid_index(p, (const void *)&src->to);
	if (gidx < 0) {
		g_info("%s REQ to an address that is no GID of ours; dropped",
		       ib_port_prefix(p));
		return;
	}
	reply_dest(src, gidx, &dst);
	g_mutex_lock(&st->lock);
	c = find_remote_locked(st, r.local_comm_id, &src->sgid);
	if (c) {
		/* A duplicate (12.9.3): answer with what we answered. */
		ibc_debug(c, "duplicate REQ in state %s", ibc_name(c->state));
		switch (c->state) {
		case IBC_MRA_SENT:
		case IBC_REP_SENT:
			conn_resend(c);
			break;
		case IBC_TIMEWAIT:
			if (c->have_last)
				conn_resend(c);
			break;
		default:
			break;
		}
		g_mutex_unlock(&st->lock);
		return;
	}
	if (r.transport_service_type != 0 || r.extended_transport_type) {
		reason = IB_CM_REJ_INVALID_TRANSPORT_TYPE;
		why = "not RC";
	} else if (!r.local_qpn) {
		reason = IB_CM_REJ_UNSUPPORTED_REQ;
		why = "QPN 0";
	} else if (r.path_mtu < RNICPI_MTU_256 || r.path_mtu > RNICPI_MTU_4096) {
		reason = IB_CM_REJ_INVALID_MTU;
		why = "path MTU code out of range";
	} else if (memcmp(r.primary.remote_gid, src->dgid.raw, 16) != 0) {
		reason = IB_CM_REJ_INVALID_GID;
		why = "the primary remote GID is not the one it came to";
	}
	if (reason) {
		g_mutex_unlock(&st->lock);
		g_info("%s REQ from comm ID %08x refused (reason %u): %s",
		       ib_port_prefix(p), r.local_comm_id, reason, why);
		send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
			 reason, NULL, 0, NULL);
		return;
	}
	stale = find_stale_locked(st, r.local_qpn, &src->sgid);
	if (stale) {
		/* The peer reuses a QP we think is connected: both go
		 * (12.9.8.3.1), the old one with a DREQ. */
		struct ib_cm_dreq dq = {
			.local_comm_id = stale->local_id,
			.remote_comm_id = stale->remote_id,
			.remote_qpn = stale->remote_qpn,
		};
		struct ib_mad dm;

		ibc_info(stale, "stale: a new REQ names the peer QP %06x",
			 r.local_qpn);
		stale->dreq_tid = (uint64_t)g_rand_int(st->rand) << 32 |
				  stale->local_id;
		ib_mad_cm_init(&dm, IB_CM_ATTR_DREQ, stale->dreq_tid);
		ib_cm_dreq_encode(&dm, &dq);
		conn_send(stale, &dm, true);
		stale_id = g_steal_pointer(&stale->id);
		conn_timewait(stale);
		conn_ref(stale);
		g_mutex_unlock(&st->lock);
		send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
			 IB_CM_REJ_STALE_CONN, NULL, 0, NULL);
		if (stale_id) {
			qp_error(stale_id->qp);
			report(stale, stale_id, RNICPI_CONN_DISCONNECTED,
			       -ESTALE, NULL, 0);
			cm_id_unref(stale_id);
		}
		conn_unref(stale);
		return;
	}

	/* Whose is it? */
	pdata = r.private_data;
	pdata_len = IB_CM_REQ_PDATA;
	ib_gid_to_sockaddr(&src->dgid, &local);
	ib_gid_to_sockaddr(&src->sgid, &remote);
	if (ib_cma_ps_of(r.service_id)) {
		struct sockaddr_storage hs, hd;

		if (ib_cma_hdr_decode(r.private_data, (uint16_t)r.service_id,
				      &hs, &hd, &why)) {
			g_mutex_unlock(&st->lock);
			g_info("%s REQ from comm ID %08x: %s; refused",
			       ib_port_prefix(p), r.local_comm_id, why);
			send_rej(p, &dst, tid, 0, r.local_comm_id,
				 IB_CM_MSG_REQ, IB_CM_REJ_UNSUPPORTED_REQ,
				 NULL, 0, NULL);
			return;
		}
		local = hd;
		remote = hs;
		pdata += IB_CMA_HDR_BYTES;
		pdata_len -= IB_CMA_HDR_BYTES;
	}
	g_mutex_lock(&cm->lock);
	l = cm_listen_find_sid_locked(cm, d, 1, r.service_id);
	g_mutex_unlock(&cm->lock);
	if (!l) {
		g_mutex_unlock(&st->lock);
		g_info("%s REQ for service ID 0x%016" PRIx64 ": nobody listens; REJ invalid service ID",
		       ib_port_prefix(p), r.service_id);
		send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
			 IB_CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL);
		return;
	}
	c = conn_new_locked(cm, p, false);
	c->dest = dst;
	c->tid = tid;
	c->sid = r.service_id;
	c->cma = ib_cma_ps_of(r.service_id) != 0;
	c->remote_id = r.local_comm_id;
	c->remote_guid = r.local_ca_guid;
	c->remote_qpn = r.local_qpn;
	c->remote_psn = r.starting_psn;
	c->resp_res = r.responder_resources;
	c->init_depth = r.initiator_depth;
	c->mtu = MIN(r.path_mtu, (uint8_t)ib_port_mtu(p));
	c->retry_count = r.retry_count;
	c->rnr_retry = r.rnr_retry_count;
	c->ack_timeout = r.primary.local_ack_timeout ?
				 r.primary.local_ack_timeout :
				 IB_ACK_TIMEOUT;
	c->dest.flow_label = r.primary.flow_label;
	c->dest.traffic_class = r.primary.traffic_class;
	/* The peer waits its "remote CM response timeout" for our answer
	 * and takes its "local" one to answer us. */
	c->peer_rto_ms = rto_clamp(ib_cm_timeout_ms(
		r.local_cm_response_timeout));
	c->rto_ms = c->peer_rto_ms;
	c->retries_left = MIN(r.max_cm_retries, IB_CM_RETRIES);
	c->local_addr = local;
	c->remote_addr = remote;
	conn_set_state(c, IBC_REQ_RCVD);
	conn_arm(c, MAX(rto_clamp(ib_cm_timeout_ms(
				r.remote_cm_response_timeout)) / 2,
			IB_CM_MIN_RTO_MS));
	conn_ref(c);
	g_mutex_unlock(&st->lock);

	req = cm_req_new(cm, l, d, &local, &remote);
	cm_listen_unref(l);
	g_mutex_lock(&st->lock);
	c->req = cm_req_ref(req);
	c->rconn.core_ctx = req;
	g_mutex_unlock(&st->lock);
	g_mutex_lock(&cm->lock);
	req->conn = &c->rconn;
	g_mutex_unlock(&cm->lock);
	{
		struct rnicpi_conn_event ev = {
			.type = RNICPI_CONN_REQUEST,
			.conn = &c->rconn,
			.private_data = pdata,
			.private_data_len = pdata_used(pdata, pdata_len),
			/* The peer's IRD / ORD. */
			.ird = r.responder_resources,
			.ord = r.initiator_depth,
			.local_addr = local,
			.remote_addr = remote,
		};

		ibc_debug(c, "REQ for 0x%016" PRIx64 " from QP %06x reported as %s",
			  c->sid, c->remote_qpn, req->prefix);
		cm_req_event(cm, &ev);
	}
	cm_req_unref(req);
	conn_unref(c);
}

static struct ib_conn *conn_of_rconn(struct rnicpi_conn *rc)
{
	return (struct ib_conn *)((char *)rc - offsetof(struct ib_conn, rconn));
}

static int ib_accept(struct cm *cm, struct rnicpi_conn *rc, struct cm_id *id)
{
	struct ib_conn *c = conn_of_rconn(rc);
	struct ib_state *st = ib_of(c->cm);
	struct rnicpi_device_attr da;
	struct ib_cm_rep rep;
	struct cm_req *req;
	struct ib_mad m;
	uint8_t ird, ord;
	int err;

	(void)cm;
	err = ual_device_query(id->dev, &da);
	if (err)
		return err;
	g_mutex_lock(&st->lock);
	if (c->state != IBC_REQ_RCVD && c->state != IBC_MRA_SENT) {
		g_mutex_unlock(&st->lock);
		ibc_info(c, "accept in state %s", ibc_name(c->state));
		return -ECONNABORTED;
	}
	/* 12.7.29-30: each side's Read depth is bounded by the other's. */
	ird = MIN(cap8(id->param.ird, da.max_qp_rd_atom), c->init_depth);
	ord = MIN(cap8(id->param.ord, da.max_qp_init_rd_atom), c->resp_res);
	c->local_qpn = ual_qp_num(id->qp);
	err = qp_to_rts(c, id->qp, ird, ord);
	if (err) {
		send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
			 IB_CM_MSG_REQ, IB_CM_REJ_NO_QP, NULL, 0, &c->last);
		c->have_last = true;
		req = g_steal_pointer(&c->req);
		conn_timewait(c);
		g_mutex_unlock(&st->lock);
		cm_req_unref(req);
		return err;
	}
	memset(&rep, 0, sizeof(rep));
	rep.local_comm_id = c->local_id;
	rep.remote_comm_id = c->remote_id;
	rep.local_qpn = c->local_qpn;
	rep.starting_psn = c->local_psn;
	rep.responder_resources = ird;
	rep.initiator_depth = ord;
	rep.target_ack_delay = 0;
	rep.rnr_retry_count = IB_RNR_RETRY;
	rep.local_ca_guid = ib_port_guid(c->port);
	memcpy(rep.private_data, id->pdata,
	       MIN(id->param.private_data_len, IB_CM_REP_PDATA));
	ib_mad_cm_init(&m, IB_CM_ATTR_REP, c->tid);
	ib_cm_rep_encode(&m, &rep);
	/* What the consumer's ESTABLISHED says: the agreed depths. */
	c->init_depth = ird;
	c->resp_res = ord;
	c->id = cm_id_ref(id);
	g_mutex_lock(&c->cm->lock);
	id->tp_data = conn_ref(c);
	g_mutex_unlock(&c->cm->lock);
	req = g_steal_pointer(&c->req);
	conn_set_state(c, IBC_REP_SENT);
	c->retries_left = IB_CM_RETRIES;
	conn_arm(c, c->rto_ms);
	conn_send(c, &m, true);
	g_mutex_unlock(&st->lock);
	cm_req_unref(req);
	return 0;
}

static void ib_reject(struct cm *cm, struct rnicpi_conn *rc,
		      const void *pdata, uint32_t len)
{
	struct ib_conn *c = conn_of_rconn(rc);
	struct ib_state *st = ib_of(c->cm);
	struct cm_req *req;

	(void)cm;
	g_mutex_lock(&st->lock);
	if (c->state != IBC_REQ_RCVD && c->state != IBC_MRA_SENT) {
		g_mutex_unlock(&st->lock);
		ibc_debug(c, "reject in state %s: nothing to do",
			  ibc_name(c->state));
		return;
	}
	send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
		 IB_CM_MSG_REQ,
		 c->abandoned ? IB_CM_REJ_TIMEOUT : IB_CM_REJ_CONSUMER_DEFINED,
		 pdata, len, &c->last);
	c->have_last = true;
	req = g_steal_pointer(&c->req);
	conn_timewait(c);
	g_mutex_unlock(&st->lock);
	ibc_debug(c, "REJ sent (%s)", c->abandoned ? "time-out" : "consumer");
	cm_req_unref(req);
}

/* ------------------------------------------------------------------ */
/* Answers to our messages: REP, RTU, MRA, REJ                         */
/* ------------------------------------------------------------------ */

/* The connection a reply names by our comm ID, with a reference. */
static struct ib_conn *conn_lookup_locked(struct ib_state *st, uint32_t id)
{
	struct ib_conn *c = id ? g_hash_table_lookup(st->conns,
						     GUINT_TO_POINTER(id)) :
				 NULL;

	return c ? conn_ref(c) : NULL;
}

static void recv_rep(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		     const struct ib_src *src)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_rep r;
	struct ib_cm_ids rtu;
	struct ib_conn *c;
	struct cm_id *id = NULL;
	struct ib_mad out;
	uint8_t ird, ord;
	int err = 0;

	ib_cm_rep_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (!c || !c->active || c->port != p) {
		g_mutex_unlock(&st->lock);
		g_info("%s REP for comm ID %08x, which is no request of ours; dropped",
		       ib_port_prefix(p), r.remote_comm_id);
		conn_unref(c);
		return;
	}
	if (c->state == IBC_ESTABLISHED || c->state == IBC_TIMEWAIT) {
		/* Our RTU (or REJ) was lost: the same again (12.9.3). */
		if (r.local_comm_id == c->remote_id)
			conn_resend(c);
		g_mutex_unlock(&st->lock);
		conn_unref(c);
		return;
	}
	if (c->state != IBC_REQ_SENT && c->state != IBC_MRA_RCVD) {
		g_mutex_unlock(&st->lock);
		ibc_info(c, "REP in state %s; dropped", ibc_name(c->state));
		conn_unref(c);
		return;
	}
	c->remote_id = r.local_comm_id;
	c->remote_qpn = r.local_qpn;
	c->remote_psn = r.starting_psn;
	c->remote_guid = r.local_ca_guid;
	c->resp_res = r.responder_resources;
	c->init_depth = r.initiator_depth;
	(void)src;
	id = c->id;
	if (!id) {
		g_mutex_unlock(&st->lock);
		conn_unref(c);
		return;
	}
	cm_id_ref(id);
	/* The REP's responder resources are the Reads the peer answers:
	 * our ORD; its initiator depth bounds our IRD. */
	ird = MIN(cap8(id->param.ird, 255), r.initiator_depth);
	ord = MIN(cap8(id->param.ord, 255), r.responder_resources);
	c->rnr_retry = r.rnr_retry_count;
	if (!r.local_qpn) {
		err = -EPROTO;
		ibc_info(c, "REP names QP 0");
	} else {
		err = qp_to_rts(c, id->qp, ird, ord);
	}
	if (err) {
		send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
			 IB_CM_MSG_REP, IB_CM_REJ_NO_QP, NULL, 0, &c->last);
		c->have_last = true;
		g_clear_pointer(&c->id, cm_id_unref);
		conn_timewait(c);
		g_mutex_unlock(&st->lock);
		report(c, id, RNICPI_CONN_ERROR, err, NULL, 0);
		cm_id_unref(id);
		conn_unref(c);
		return;
	}
	c->init_depth = ird;
	c->resp_res = ord;
	rtu.local_comm_id = c->local_id;
	rtu.remote_comm_id = c->remote_id;
	ib_mad_cm_init(&out, IB_CM_ATTR_RTU, c->tid);
	ib_cm_ids_encode(&out, &rtu);
	cm_source_drop(&c->timer);
	conn_set_state(c, IBC_ESTABLISHED);
	conn_send(c, &out, true);
	g_mutex_unlock(&st->lock);
	report(c, id, RNICPI_CONN_ESTABLISHED, 0, r.private_data,
	       pdata_used(r.private_data, IB_CM_REP_PDATA));
	cm_id_unref(id);
	conn_unref(c);
}

static void recv_rtu(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_ids r;
	struct ib_conn *c;
	struct cm_id *id = NULL;

	ib_cm_ids_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (!c || c->active || c->remote_id != r.local_comm_id) {
		g_mutex_unlock(&st->lock);
		g_debug("%s RTU for comm ID %08x we do not know; dropped",
			ib_port_prefix(p), r.remote_comm_id);
		conn_unref(c);
		return;
	}
	if (c->state == IBC_REP_SENT) {
		cm_source_drop(&c->timer);
		conn_set_state(c, IBC_ESTABLISHED);
		c->have_last = false;
		id = c->id ? cm_id_ref(c->id) : NULL;
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		report(c, id, RNICPI_CONN_ESTABLISHED, 0, NULL, 0);
		cm_id_unref(id);
	}
	conn_unref(c);
}

static void recv_mra(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_mra r;
	struct ib_conn *c;

	ib_cm_mra_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (c && ((c->state == IBC_REQ_SENT &&
		   r.message_mraed == IB_CM_MSG_REQ) ||
		  (c->state == IBC_MRA_RCVD &&
		   r.message_mraed == IB_CM_MSG_REQ) ||
		  (c->state == IBC_REP_SENT &&
		   r.message_mraed == IB_CM_MSG_REP))) {
		/* 12.6.6: the peer needs longer; wait its service time-out
		 * on top of ours before trying again. */
		uint32_t wait = ib_cm_timeout_ms(r.service_timeout) +
				c->rto_ms;

		ibc_debug(c, "MRA: waiting %u ms", wait);
		if (c->state == IBC_REQ_SENT)
			conn_set_state(c, IBC_MRA_RCVD);
		conn_arm(c, MIN(wait, 3600000u));
	} else {
		g_debug("%s MRA for comm ID %08x ignored", ib_port_prefix(p),
			r.remote_comm_id);
	}
	g_mutex_unlock(&st->lock);
	conn_unref(c);
}

/* What a REJ reason means to the consumer (ual_cm_event status). */
static int rej_status(uint16_t reason)
{
	switch (reason) {
	case IB_CM_REJ_TIMEOUT:
		return -ETIMEDOUT;
	case IB_CM_REJ_INVALID_SERVICE_ID:
		return -ECONNREFUSED;
	case IB_CM_REJ_STALE_CONN:
		return -ESTALE;
	case IB_CM_REJ_NO_QP:
	case IB_CM_REJ_NO_RESOURCES:
		return -ENOMEM;
	case IB_CM_REJ_INSUFFICIENT_RESP_RES:
		return -ERANGE;
	case IB_CM_REJ_INVALID_GID:
	case IB_CM_REJ_INVALID_MTU:
		return -EHOSTUNREACH;
	}
	return -ECONNREFUSED;
}

static void recv_rej(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_rej r;
	struct ib_conn *c;
	struct cm_id *id = NULL;
	struct cm_req *req = NULL;
	enum ib_conn_state was;

	ib_cm_rej_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (!c) {
		g_mutex_unlock(&st->lock);
		g_debug("%s REJ for comm ID %08x we do not know; dropped",
			ib_port_prefix(p), r.remote_comm_id);
		return;
	}
	was = c->state;
	if (was == IBC_TIMEWAIT ||
	    (was != IBC_REQ_SENT && was != IBC_MRA_RCVD &&
	     r.local_comm_id != c->remote_id)) {
		g_mutex_unlock(&st->lock);
		ibc_debug(c, "REJ in state %s ignored", ibc_name(was));
		conn_unref(c);
		return;
	}
	ibc_info(c, "REJ, reason %u, in state %s", r.reason, ibc_name(was));
	id = g_steal_pointer(&c->id);
	req = g_steal_pointer(&c->req);
	c->have_last = false;
	conn_timewait(c);
	g_mutex_unlock(&st->lock);
	if (req) {
		/* The peer gave up before our consumer answered. */
		cm_req_abandon(req, rej_status(r.reason));
		cm_req_unref(req);
	}
	if (id) {
		if (was == IBC_REQ_SENT || was == IBC_MRA_RCVD) {
			if (r.reason == IB_CM_REJ_CONSUMER_DEFINED)
				report(c, id, RNICPI_CONN_REJECTED,
				       -ECONNREFUSED, r.private_data,
				       pdata_used(r.private_data,
						  IB_CM_REJ_PDATA));
			else
				report(c, id, RNICPI_CONN_ERROR,
				       rej_status(r.reason), NULL, 0);
		} else {
			qp_error(id->qp);
			report(c, id,
			       was == IBC_ESTABLISHED ?
				       RNICPI_CONN_DISCONNECTED :
				       RNICPI_CONN_ERROR,
			       rej_status(r.reason), NULL, 0);
		}
		cm_id_unref(id);
	}
	conn_unref(c);
}

/* ------------------------------------------------------------------ */
/* Disconnection: DREQ, DREP                                           */
/* ------------------------------------------------------------------ */

/* An abortive close: the IB CM has none, but a REJ "stale connection"
 * for an established connection ends it at once on both sides (12.9.8.3.1,
 * what a CM sends when it finds a connection it no longer has), and
 * the peer reports it broken, as a TCP reset does on iWARP. */
static void send_abort_locked(struct ib_conn *c)
{
	send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
		 IB_CM_MSG_OTHER, IB_CM_REJ_STALE_CONN, NULL, 0, &c->last);
	c->have_last = true;
	conn_timewait(c);
}

static void send_dreq_locked(struct ib_state *st, struct ib_conn *c)
{
	struct ib_cm_dreq dq = {
		.local_comm_id = c->local_id,
		.remote_comm_id = c->remote_id,
		.remote_qpn = c->remote_qpn,
	};
	struct ib_mad m;

	c->dreq_tid = (uint64_t)g_rand_int(st->rand) << 32 | c->local_id;
	ib_mad_cm_init(&m, IB_CM_ATTR_DREQ, c->dreq_tid);
	ib_cm_dreq_encode(&m, &dq);
	conn_set_state(c, IBC_DREQ_SENT);
	c->retries_left = IB_CM_RETRIES;
	conn_arm(c, c->peer_rto_ms);
	conn_send(c, &m, true);
}

static void recv_dreq(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		      const struct ib_src *src, uint64_t tid)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_dreq r;
	struct ib_cm_ids drep;
	struct ib_conn *c;
	struct cm_id *id = NULL;
	struct ib_mad out;
	enum ib_conn_state was;
	int gidx;

	ib_cm_dreq_decode(m, &r);
	drep.local_comm_id = r.remote_comm_id;
	drep.remote_comm_id = r.local_comm_id;
	ib_mad_cm_init(&out, IB_CM_ATTR_DREP, tid);
	ib_cm_ids_encode(&out, &drep);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (!c || c->remote_id != r.local_comm_id ||
	    (c->local_qpn && r.remote_qpn != c->local_qpn)) {
		struct ib_dest dst;

		g_mutex_unlock(&st->lock);
		/* 12.9.8.5: a DREQ for a connection we do not have is
		 * answered, so the peer's time-wait can start. */
		g_debug("%s DREQ for comm ID %08x we do not have; DREP",
			ib_port_prefix(p), r.remote_comm_id);
		gidx = ib_port_gid_index(p, (const void *)&src->to);
		if (gidx >= 0) {
			reply_dest(src, gidx, &dst);
			ib_port_send(p, &out, &dst);
		}
		conn_unref(c);
		return;
	}
	was = c->state;
	switch (was) {
	case IBC_ESTABLISHED:
	case IBC_REP_SENT:
	case IBC_DREQ_SENT:
		id = g_steal_pointer(&c->id);
		conn_send(c, &out, true);
		conn_timewait(c);
		break;
	case IBC_TIMEWAIT:
		/* Our DREP was lost. */
		conn_send(c, &out, true);
		break;
	default:
		ibc_debug(c, "DREQ in state %s ignored", ibc_name(was));
		break;
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		/* rdma_cm moves the QP to ERR on a DREQ; so do we. */
		qp_error(id->qp);
		if (was == IBC_REP_SENT)
			report(c, id, RNICPI_CONN_ERROR, -ECONNRESET, NULL, 0);
		else
			report(c, id, RNICPI_CONN_DISCONNECTED, 0, NULL, 0);
		cm_id_unref(id);
	}
	conn_unref(c);
}

static void recv_drep(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_ids r;
	struct ib_conn *c;
	struct cm_id *id = NULL;

	ib_cm_ids_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = conn_lookup_locked(st, r.remote_comm_id);
	if (c && c->state == IBC_DREQ_SENT &&
	    c->remote_id == r.local_comm_id) {
		id = g_steal_pointer(&c->id);
		c->have_last = false;
		conn_timewait(c);
	} else {
		g_debug("%s DREP for comm ID %08x ignored", ib_port_prefix(p),
			r.remote_comm_id);
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		report(c, id, RNICPI_CONN_DISCONNECTED, 0, NULL, 0);
		cm_id_unref(id);
	}
	conn_unref(c);
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
		recv_req(cm, p, m, src, h.tid);
		break;
	case IB_CM_ATTR_MRA:
		recv_mra(cm, p, m);
		break;
	case IB_CM_ATTR_REJ:
		recv_rej(cm, p, m);
		break;
	case IB_CM_ATTR_REP:
		recv_rep(cm, p, m, src);
		break;
	case IB_CM_ATTR_RTU:
		recv_rtu(cm, p, m);
		break;
	case IB_CM_ATTR_DREQ:
		recv_dreq(cm, p, m, src, h.tid);
		break;
	case IB_CM_ATTR_DREP:
		recv_drep(cm, p, m);
		break;
	default:
		g_info("%s CM attribute 0x%04x (%s) is not handled here; dropped",
		       ib_port_prefix(p), h.attr_id,
		       ib_cm_attr_name(h.attr_id));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* The consumer's side: disconnect, release                            */
/* ------------------------------------------------------------------ */

static int ib_disconnect(struct cm *cm, struct cm_id *id, bool abortive)
{
	struct ib_state *st = ib_of(cm);
	struct cm_id *drop = NULL;
	struct ib_conn *c;

	g_mutex_lock(&cm->lock);
	c = id->tp_data ? conn_ref(id->tp_data) : NULL;
	g_mutex_unlock(&cm->lock);
	/* Either way the QP stops now (rdma_cm does the same); in order the
	 * peer gets a DREQ and DISCONNECTED follows our DREP or time-out,
	 * abortively a REJ and DISCONNECTED at once. */
	qp_error(id->qp);
	g_mutex_lock(&st->lock);
	if (c && c->state == IBC_ESTABLISHED && c->id == id) {
		if (abortive) {
			drop = g_steal_pointer(&c->id);
			send_abort_locked(c);
		} else {
			send_dreq_locked(st, c);
		}
	}
	g_mutex_unlock(&st->lock);
	if (drop) {
		report(c, drop, RNICPI_CONN_DISCONNECTED, -ECONNABORTED, NULL,
		       0);
		cm_id_unref(drop);
	}
	conn_unref(c);
	return 0;
}

static void ib_release(struct cm *cm, struct cm_id *id, enum cm_id_state was)
{
	struct ib_state *st = ib_of(cm);
	struct ib_conn *c;
	struct cm_id *drop = NULL;

	g_mutex_lock(&cm->lock);
	c = id->tp_data;
	id->tp_data = NULL;
	g_mutex_unlock(&cm->lock);
	if (!c)
		return;
	g_mutex_lock(&st->lock);
	if (c->id == id) {
		drop = g_steal_pointer(&c->id);
		switch (c->state) {
		case IBC_REQ_SENT:
		case IBC_MRA_RCVD:
			/* 12.9.8.1: a REQ given up is followed by REJ. */
			send_rej(c->port, &c->dest, c->tid, c->local_id, 0,
				 IB_CM_MSG_REQ, IB_CM_REJ_TIMEOUT, NULL, 0,
				 NULL);
			conn_timewait(c);
			break;
		case IBC_REP_SENT:
			send_rej(c->port, &c->dest, c->tid, c->local_id,
				 c->remote_id, IB_CM_MSG_REP,
				 IB_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL);
			conn_timewait(c);
			break;
		case IBC_ESTABLISHED:
			/* Freed while connected: abortive, as on iWARP. */
			send_abort_locked(c);
			break;
		default:
			break;
		}
	}
	g_mutex_unlock(&st->lock);
	ibc_debug(c, "released by its consumer (state %s)",
		  cm_id_state_name(was));
	cm_id_unref(drop);
	conn_unref(c);	/* the ID's */
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

static void ib_unlisten(struct cm *cm, struct cm_listen *l)
{
	(void)cm;
	(void)l;
}

static void ib_cancel(struct cm *cm, struct cm_id *id)
{
	(void)cm;
	(void)id;
}

static uint32_t ib_max_private_data(struct ual_device *d,
				    enum ual_cm_pdata_op op)
{
	(void)d;
	switch (op) {
	case UAL_CM_PDATA_CONNECT:
		/* rdma_cm's header takes 36 of the REQ's 92 bytes. */
		return IB_CMA_PDATA;
	case UAL_CM_PDATA_ACCEPT:
		return IB_CM_REP_PDATA;
	case UAL_CM_PDATA_REJECT:
		return IB_CM_REJ_PDATA;
	case UAL_CM_PDATA_DISCONNECT:
		/* A DREQ could carry 220, but ual_cm_disconnect takes none. */
		return 0;
	}
	return 0;
}

const struct cm_transport cm_ib_transport = {
	.name = "ib",
	.listen = ib_listen,
	.unlisten = ib_unlisten,
	.connect = ib_connect,
	.cancel = ib_cancel,
	.socket_convert = NULL,
	.max_private_data = ib_max_private_data,
	.accept = ib_accept,
	.reject = ib_reject,
	.disconnect = ib_disconnect,
	.release = ib_release,
};
