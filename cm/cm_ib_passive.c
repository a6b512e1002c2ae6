/* SPDX-License-Identifier: MIT */
/*
 * cm_ib_passive.c - the passive side of the InfiniBand CM: a REQ (new,
 * duplicate, stale, or for nobody), the consumer's accept (REP) and
 * reject (REJ), the RTU that completes it (IBA 12.6, 12.9.6).
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <string.h>

#include "cm/cm_ib.h"

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

void ib_reply_dest(const struct ib_src *src, int gidx,
		       struct ib_dest *d)
{
	memset(d, 0, sizeof(*d));
	d->dgid = src->sgid;
	d->sgid_index = (uint8_t)gidx;
	d->hop_limit = 64;
	d->traffic_class = src->traffic_class;
}

void ib_recv_req(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
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
	ib_reply_dest(src, gidx, &dst);
	g_mutex_lock(&st->lock);
	c = find_remote_locked(st, r.local_comm_id, &src->sgid);
	if (c) {
		/* A duplicate (12.9.3): answer with what we answered. */
		ibc_debug(c, "duplicate REQ in state %s", ibc_name(c->state));
		switch (c->state) {
		case IBC_MRA_SENT:
		case IBC_REP_SENT:
			ibc_resend(c);
			break;
		case IBC_TIMEWAIT:
			if (c->have_last)
				ibc_resend(c);
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
		ib_send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
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
		ibc_send(stale, &dm, true);
		stale_id = g_steal_pointer(&stale->id);
		ibc_timewait(stale);
		ibc_ref(stale);
		g_mutex_unlock(&st->lock);
		ib_send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
			 IB_CM_REJ_STALE_CONN, NULL, 0, NULL);
		if (stale_id) {
			ib_qp_error(stale_id->qp);
			ibc_report(stale, stale_id, RNICPI_CONN_DISCONNECTED,
			       -ESTALE, NULL, 0);
			cm_id_unref(stale_id);
		}
		ibc_unref(stale);
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
			ib_send_rej(p, &dst, tid, 0, r.local_comm_id,
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
	if (l && !cm_listen_takes(l, &remote)) {
		g_info("%s REQ for service ID 0x%016" PRIx64 " from a port its listener does not take (%u only)",
		       ib_port_prefix(p), r.service_id, l->remote_port);
		cm_listen_unref(l);
		l = NULL;
	}
	if (!l) {
		g_mutex_unlock(&st->lock);
		g_info("%s REQ for service ID 0x%016" PRIx64 ": nobody listens; REJ invalid service ID",
		       ib_port_prefix(p), r.service_id);
		ib_send_rej(p, &dst, tid, 0, r.local_comm_id, IB_CM_MSG_REQ,
			 IB_CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL);
		return;
	}
	c = ibc_new_locked(cm, p, false);
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
	c->peer_rto_ms = ib_rto_clamp(ib_cm_timeout_ms(
		r.local_cm_response_timeout));
	c->rto_ms = c->peer_rto_ms;
	c->retries_left = MIN(r.max_cm_retries, IB_CM_RETRIES);
	c->local_addr = local;
	c->remote_addr = remote;
	ibc_set_state(c, IBC_REQ_RCVD);
	ibc_arm(c, MAX(ib_rto_clamp(ib_cm_timeout_ms(
				r.remote_cm_response_timeout)) / 2,
			IB_CM_MIN_RTO_MS));
	ibc_ref(c);
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
			.private_data_len = ib_pdata_used(pdata, pdata_len),
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
	ibc_unref(c);
}

static struct ib_conn *conn_of_rconn(struct rnicpi_conn *rc)
{
	return (struct ib_conn *)((char *)rc - offsetof(struct ib_conn, rconn));
}

int ib_accept(struct cm *cm, struct rnicpi_conn *rc, struct cm_id *id)
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
	ird = MIN(ib_cap8(id->param.ird, da.max_qp_rd_atom), c->init_depth);
	ord = MIN(ib_cap8(id->param.ord, da.max_qp_init_rd_atom), c->resp_res);
	c->local_qpn = ual_qp_num(id->qp);
	err = ibc_qp_to_rts(c, id->qp, ird, ord);
	if (err) {
		ib_send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
			 IB_CM_MSG_REQ, IB_CM_REJ_NO_QP, NULL, 0, &c->last);
		c->have_last = true;
		req = g_steal_pointer(&c->req);
		ibc_timewait(c);
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
	id->tp_data = ibc_ref(c);
	g_mutex_unlock(&c->cm->lock);
	req = g_steal_pointer(&c->req);
	ibc_set_state(c, IBC_REP_SENT);
	c->retries_left = IB_CM_RETRIES;
	ibc_arm(c, c->rto_ms);
	ibc_send(c, &m, true);
	g_mutex_unlock(&st->lock);
	cm_req_unref(req);
	return 0;
}

void ib_reject(struct cm *cm, struct rnicpi_conn *rc,
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
	ib_send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
		 IB_CM_MSG_REQ,
		 c->abandoned ? IB_CM_REJ_TIMEOUT : IB_CM_REJ_CONSUMER_DEFINED,
		 pdata, len, &c->last);
	c->have_last = true;
	req = g_steal_pointer(&c->req);
	ibc_timewait(c);
	g_mutex_unlock(&st->lock);
	ibc_debug(c, "REJ sent (%s)", c->abandoned ? "time-out" : "consumer");
	cm_req_unref(req);
}

void ib_recv_rtu(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_ids r;
	struct ib_conn *c;
	struct cm_id *id = NULL;

	ib_cm_ids_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = ibc_lookup_locked(st, r.remote_comm_id);
	if (!c || c->active || c->remote_id != r.local_comm_id) {
		g_mutex_unlock(&st->lock);
		g_debug("%s RTU for comm ID %08x we do not know; dropped",
			ib_port_prefix(p), r.remote_comm_id);
		ibc_unref(c);
		return;
	}
	if (c->state == IBC_REP_SENT) {
		cm_source_drop(&c->timer);
		ibc_set_state(c, IBC_ESTABLISHED);
		c->have_last = false;
		id = c->id ? cm_id_ref(c->id) : NULL;
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		/* The RTU's private data: the active consumer's, in a
		 * three-way set-up (IT-API's it_ep_accept on that side). */
		const uint8_t *pd = &m->b[IB_CM_RTU_PDATA_OFF];

		ibc_report(c, id, RNICPI_CONN_ESTABLISHED, 0, pd,
			   ib_pdata_used(pd, IB_CM_RTU_PDATA));
		cm_id_unref(id);
	}
	ibc_unref(c);
}
