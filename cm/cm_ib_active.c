/* SPDX-License-Identifier: MIT */
/*
 * cm_ib_active.c - the active side of the InfiniBand CM: connect (REQ),
 * and the answers to our REQ: REP (then RTU), MRA, REJ (IBA 12.6, 12.9.5).
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
/* Active side: connect                                                */
/* ------------------------------------------------------------------ */


int ib_connect(struct cm *cm, struct cm_id *id)
{
	struct ib_state *st = ib_of(cm);
	struct ual_device *d = id->dev;
	struct rnicpi_device_attr da;
	struct cm_route route;
	struct sockaddr_storage src;
	struct ib_cm_req req;
	bool src_addr = false;
	uint16_t src_port = 0;
	struct ib_port *p;
	struct ib_conn *c;
	struct ib_mad m;
	uint32_t rto, pdata_off = 0;
	int gidx, err;

	/* A source may give the address, the port (rdma_cm's source port,
	 * IT_IANA_LR_PORT) or both; the route picks a missing address. */
	if (id->local_addr.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&id->local_addr;

		src_addr = in->sin_addr.s_addr != htonl(INADDR_ANY);
		src_port = ntohs(in->sin_port);
	} else if (id->local_addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)&id->local_addr;

		src_addr = !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
		src_port = ntohs(in6->sin6_port);
	}
	err = cm_route_resolve(cm, (const void *)&id->remote_addr,
			       src_addr ? (const void *)&id->local_addr : NULL,
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
	if (src_addr)
		src = id->local_addr;
	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)&src)->sin_port = htons(src_port);
	else
		((struct sockaddr_in6 *)(void *)&src)->sin6_port =
			htons(src_port);
	err = ual_device_query(d, &da);
	if (err)
		return err;
	/* The host service gone for good (hostrdma-kald and its keeper):
	 * no REP could reach us; say so now, not after the retries. */
	err = ual_hostsvc_check();
	if (err)
		return err;

	/* PROVIDER before the REQ leaves: on loopback the REP can come
	 * back, and the connection be established, before this function
	 * returns; in IDLE that event would be dropped as stale. On an
	 * error the caller closes the ID. */
	cm_id_set_state(id, CM_ID_PROVIDER);
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
	c = ibc_new_locked(cm, p, true);
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
	rto = ib_rto_clamp(id->param.timeout_ms / (IB_CM_RETRIES + 1));
	c->rto_ms = rto;
	c->peer_rto_ms = rto;
	c->retries_left = IB_CM_RETRIES;
	c->id = cm_id_ref(id);

	memset(&req, 0, sizeof(req));
	req.local_comm_id = c->local_id;
	req.service_id = c->sid;
	req.local_ca_guid = ib_port_guid(p);
	req.local_qpn = c->local_qpn;
	req.responder_resources = ib_cap8(id->param.ird, da.max_qp_rd_atom);
	req.initiator_depth = ib_cap8(id->param.ord, da.max_qp_init_rd_atom);
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
			ibc_forget_locked(c);
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
	id->tp_data = ibc_ref(c);
	ibc_set_state(c, IBC_REQ_SENT);
	ibc_arm(c, rto);
	ibc_send(c, &m, true);
	g_mutex_unlock(&st->lock);
	cm_debug(id, "REQ for service ID 0x%016" PRIx64 " sent (%s)", c->sid,
		 c->prefix);
	return 0;

out_unlock:
	g_mutex_unlock(&st->lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* Answers to our REQ: REP, MRA, REJ                                   */
/* ------------------------------------------------------------------ */

/* The connection a reply names by our comm ID, with a reference. */
struct ib_conn *ibc_lookup_locked(struct ib_state *st, uint32_t id)
{
	struct ib_conn *c = id ? g_hash_table_lookup(st->conns,
						     GUINT_TO_POINTER(id)) :
				 NULL;

	return c ? ibc_ref(c) : NULL;
}

/*
 * Three-way set-up (IT_CONNECT_FLAG_THREE_WAY): the QP is in RTS, the RTU
 * waits for our consumer. An MRA for the REP tells the peer to wait as
 * long as our set-up time-out; the consumer has that long to answer.
 * Called with st->lock held, which it drops; consumes the references on
 * @c and @id the caller took.
 */
static void rep_hold_locked(struct ib_conn *c, struct cm_id *id,
			    const struct ib_cm_rep *r)
{
	struct ib_state *st = ib_of(c->cm);
	struct ib_cm_mra mr = {
		.local_comm_id = c->local_id,
		.remote_comm_id = c->remote_id,
		.message_mraed = IB_CM_MSG_REP,
		.service_timeout = ib_cm_timeout_code(id->param.timeout_ms),
	};
	struct cm_event ev = {
		.type = CM_EV_ACCEPT_ARRIVED,
		.private_data = r->private_data,
		.private_data_len = ib_pdata_used(r->private_data,
						  IB_CM_REP_PDATA),
		.ird = c->init_depth,
		.ord = c->resp_res,
		.local_addr = c->local_addr,
		.remote_addr = c->remote_addr,
		.device = id->dev,
	};
	struct ib_mad m;

	ib_mad_cm_init(&m, IB_CM_ATTR_MRA, c->tid);
	ib_cm_mra_encode(&m, &mr);
	ibc_set_state(c, IBC_REP_RCVD);
	ibc_send(c, &m, true);
	ibc_arm(c, id->param.timeout_ms);
	g_mutex_unlock(&st->lock);
	cm_debug(id, "REP held for the consumer's answer");
	cm_id_deliver(id, &ev);
	cm_id_unref(id);
	ibc_unref(c);
}

int ib_confirm(struct cm *cm, struct cm_id *id, bool ok, const void *pdata,
	       uint32_t len)
{
	struct ib_state *st = ib_of(cm);
	struct ib_conn *c;
	struct ib_mad out;

	if (len > (ok ? IB_CM_RTU_PDATA : IB_CM_REJ_PDATA))
		return -EMSGSIZE;
	g_mutex_lock(&cm->lock);
	c = id->tp_data ? ibc_ref(id->tp_data) : NULL;
	g_mutex_unlock(&cm->lock);
	if (!c)
		return -EINVAL;
	g_mutex_lock(&st->lock);
	if (c->state != IBC_REP_RCVD || c->id != id) {
		g_mutex_unlock(&st->lock);
		ibc_info(c, "%s in state %s", ok ? "RTU" : "REJ",
			 ibc_name(c->state));
		ibc_unref(c);
		return -EINVAL;
	}
	if (ok) {
		struct ib_cm_ids rtu = {
			.local_comm_id = c->local_id,
			.remote_comm_id = c->remote_id,
		};

		ib_mad_cm_init(&out, IB_CM_ATTR_RTU, c->tid);
		ib_cm_ids_encode(&out, &rtu);
		if (len)
			memcpy(&out.b[IB_CM_RTU_PDATA_OFF], pdata, len);
		cm_source_drop(&c->timer);
		ibc_set_state(c, IBC_ESTABLISHED);
		ibc_send(c, &out, true);
		cm_id_ref(id);
		g_mutex_unlock(&st->lock);
		ibc_report(c, id, RNICPI_CONN_ESTABLISHED, 0, NULL, 0);
		cm_id_unref(id);
		ibc_unref(c);
		return 0;
	}
	ib_send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
		    IB_CM_MSG_REP, IB_CM_REJ_CONSUMER_DEFINED, pdata, len,
		    &c->last);
	c->have_last = true;
	id = g_steal_pointer(&c->id);
	ibc_timewait(c);
	g_mutex_unlock(&st->lock);
	ib_qp_error(id->qp);
	cm_id_set_state(id, CM_ID_CLOSED);
	cm_id_unref(id);
	ibc_unref(c);
	return 0;
}

void ib_recv_rep(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
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
	c = ibc_lookup_locked(st, r.remote_comm_id);
	if (!c || !c->active || c->port != p) {
		g_mutex_unlock(&st->lock);
		g_info("%s REP for comm ID %08x, which is no request of ours; dropped",
		       ib_port_prefix(p), r.remote_comm_id);
		ibc_unref(c);
		return;
	}
	if (c->state == IBC_ESTABLISHED || c->state == IBC_TIMEWAIT) {
		/* Our RTU (or REJ) was lost: the same again (12.9.3). */
		if (r.local_comm_id == c->remote_id)
			ibc_resend(c);
		g_mutex_unlock(&st->lock);
		ibc_unref(c);
		return;
	}
	if (c->state == IBC_REP_RCVD) {
		/* Our consumer still decides: the MRA again (12.6.6). */
		if (r.local_comm_id == c->remote_id)
			ibc_resend(c);
		g_mutex_unlock(&st->lock);
		ibc_unref(c);
		return;
	}
	if (c->state != IBC_REQ_SENT && c->state != IBC_MRA_RCVD) {
		g_mutex_unlock(&st->lock);
		ibc_info(c, "REP in state %s; dropped", ibc_name(c->state));
		ibc_unref(c);
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
		ibc_unref(c);
		return;
	}
	cm_id_ref(id);
	/* The REP's responder resources are the Reads the peer answers:
	 * our ORD; its initiator depth bounds our IRD. */
	ird = MIN(ib_cap8(id->param.ird, 255), r.initiator_depth);
	ord = MIN(ib_cap8(id->param.ord, 255), r.responder_resources);
	c->rnr_retry = r.rnr_retry_count;
	if (!r.local_qpn) {
		err = -EPROTO;
		ibc_info(c, "REP names QP 0");
	} else {
		err = ibc_qp_to_rts(c, id->qp, ird, ord);
	}
	if (err) {
		ib_send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
			 IB_CM_MSG_REP, IB_CM_REJ_NO_QP, NULL, 0, &c->last);
		c->have_last = true;
		g_clear_pointer(&c->id, cm_id_unref);
		ibc_timewait(c);
		g_mutex_unlock(&st->lock);
		ibc_report(c, id, RNICPI_CONN_ERROR, err, NULL, 0);
		cm_id_unref(id);
		ibc_unref(c);
		return;
	}
	c->init_depth = ird;
	c->resp_res = ord;
	if (id->param.three_way) {
		rep_hold_locked(c, id, &r);
		return;
	}
	rtu.local_comm_id = c->local_id;
	rtu.remote_comm_id = c->remote_id;
	ib_mad_cm_init(&out, IB_CM_ATTR_RTU, c->tid);
	ib_cm_ids_encode(&out, &rtu);
	cm_source_drop(&c->timer);
	ibc_set_state(c, IBC_ESTABLISHED);
	ibc_send(c, &out, true);
	g_mutex_unlock(&st->lock);
	ibc_report(c, id, RNICPI_CONN_ESTABLISHED, 0, r.private_data,
	       ib_pdata_used(r.private_data, IB_CM_REP_PDATA));
	cm_id_unref(id);
	ibc_unref(c);
}


void ib_recv_mra(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_mra r;
	struct ib_conn *c;

	ib_cm_mra_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = ibc_lookup_locked(st, r.remote_comm_id);
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
			ibc_set_state(c, IBC_MRA_RCVD);
		ibc_arm(c, MIN(wait, 3600000u));
	} else {
		g_debug("%s MRA for comm ID %08x ignored", ib_port_prefix(p),
			r.remote_comm_id);
	}
	g_mutex_unlock(&st->lock);
	ibc_unref(c);
}

/* What a REJ reason means to the consumer (cm_event status). */
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

void ib_recv_rej(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_rej r;
	struct ib_conn *c;
	struct cm_id *id = NULL;
	struct cm_req *req = NULL;
	enum ib_conn_state was;

	ib_cm_rej_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = ibc_lookup_locked(st, r.remote_comm_id);
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
		ibc_unref(c);
		return;
	}
	ibc_info(c, "REJ, reason %u, in state %s", r.reason, ibc_name(was));
	id = g_steal_pointer(&c->id);
	req = g_steal_pointer(&c->req);
	c->have_last = false;
	ibc_timewait(c);
	g_mutex_unlock(&st->lock);
	if (req) {
		/* The peer gave up before our consumer answered. */
		cm_req_abandon(req, rej_status(r.reason));
		cm_req_unref(req);
	}
	if (id) {
		if (was == IBC_REQ_SENT || was == IBC_MRA_RCVD) {
			if (r.reason == IB_CM_REJ_CONSUMER_DEFINED)
				ibc_report(c, id, RNICPI_CONN_REJECTED,
				       -ECONNREFUSED, r.private_data,
				       ib_pdata_used(r.private_data,
						  IB_CM_REJ_PDATA));
			else
				ibc_report(c, id, RNICPI_CONN_ERROR,
				       rej_status(r.reason), NULL, 0);
		} else if (was == IBC_REP_SENT &&
			   r.reason == IB_CM_REJ_CONSUMER_DEFINED) {
			/* The active consumer refused our REP (three-way
			 * set-up): a peer's rejection, its private data. */
			ib_qp_error(id->qp);
			ibc_report(c, id, RNICPI_CONN_REJECTED, -ECONNREFUSED,
				   r.private_data,
				   ib_pdata_used(r.private_data,
						 IB_CM_REJ_PDATA));
		} else {
			ib_qp_error(id->qp);
			ibc_report(c, id,
			       was == IBC_ESTABLISHED ?
				       RNICPI_CONN_DISCONNECTED :
				       RNICPI_CONN_ERROR,
			       rej_status(r.reason), NULL, 0);
		}
		cm_id_unref(id);
	}
	ibc_unref(c);
}
