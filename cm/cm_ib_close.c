/* SPDX-License-Identifier: MIT */
/*
 * cm_ib_close.c - time-outs and the end of InfiniBand CM connections:
 * retransmission, MRA for a slow consumer, time-wait; DREQ / DREP, the
 * abortive close, and what is left when the consumer lets go
 * (IBA 12.6.2, 12.9.8).
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
/* Time-outs                                                           */
/* ------------------------------------------------------------------ */

gboolean ibc_timeout(gpointer data)
{
	struct ib_conn *c = data;
	struct ib_state *st = ib_of(c->cm);
	struct cm_id *id = NULL;
	struct cm_req *req = NULL;
	bool fail = false, disc = false, mra = false, qp_err = false;

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
			ibc_resend(c);
			ibc_arm(c, c->rto_ms);
			break;
		}
		ibc_info(c, "no answer in state %s after %u tries",
			 ibc_name(c->state), IB_CM_RETRIES + 1);
		if (c->state == IBC_DREQ_SENT) {
			/* 12.9.8.3: the DREQ sender enters time-wait. */
			disc = true;
		} else {
			ib_send_rej(c->port, &c->dest, c->tid, c->local_id,
				 c->remote_id,
				 c->state == IBC_REP_SENT ? IB_CM_MSG_REP :
							    IB_CM_MSG_REQ,
				 IB_CM_REJ_TIMEOUT, NULL, 0, NULL);
			fail = true;
		}
		id = g_steal_pointer(&c->id);
		ibc_timewait(c);
		break;
	case IBC_REP_RCVD:
		/* Our consumer did not answer the REP in time. */
		ibc_info(c, "the consumer answered no REP in %u ms",
			 c->id ? c->id->param.timeout_ms : 0);
		ib_send_rej(c->port, &c->dest, c->tid, c->local_id,
			    c->remote_id, IB_CM_MSG_REP, IB_CM_REJ_TIMEOUT,
			    NULL, 0, NULL);
		fail = true;
		qp_err = true;	/* in RTS since the REP */
		id = g_steal_pointer(&c->id);
		ibc_timewait(c);
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
		ibc_forget_locked(c);
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
		ibc_set_state(c, IBC_MRA_SENT);
		ibc_send(c, &m, true);
		ibc_arm(c, c->cm->timeout_ms);
	}
	g_mutex_unlock(&st->lock);
	if (qp_err && id)
		ib_qp_error(id->qp);
	if (fail && id)
		ibc_report(c, id, RNICPI_CONN_ERROR, -ETIMEDOUT, NULL, 0);
	if (disc && id)
		ibc_report(c, id, RNICPI_CONN_DISCONNECTED, 0, NULL, 0);
	if (req) {
		cm_req_abandon(req, -ETIMEDOUT);
		cm_req_unref(req);
	}
	cm_id_unref(id);
	return G_SOURCE_REMOVE;
}

/* ------------------------------------------------------------------ */
/* Disconnection: DREQ, DREP                                           */
/* ------------------------------------------------------------------ */

/* An abortive close: the IB CM has none, but a REJ "stale connection"
 * for an established connection ends it at once on both sides (12.9.8.3.1,
 * what a CM sends when it finds a connection it no longer has), and
 * the peer reports it broken, as a TCP reset does on iWARP. */
void ibc_send_abort_locked(struct ib_conn *c)
{
	ib_send_rej(c->port, &c->dest, c->tid, c->local_id, c->remote_id,
		 IB_CM_MSG_OTHER, IB_CM_REJ_STALE_CONN, NULL, 0, &c->last);
	c->have_last = true;
	ibc_timewait(c);
}

void ibc_send_dreq_locked(struct ib_state *st, struct ib_conn *c,
			  const void *pdata, uint32_t len)
{
	struct ib_cm_dreq dq = {
		.local_comm_id = c->local_id,
		.remote_comm_id = c->remote_id,
		.remote_qpn = c->remote_qpn,
	};
	struct ib_mad m;

	if (len)
		memcpy(dq.private_data, pdata, MIN(len, IB_CM_DREQ_PDATA));

	c->dreq_tid = (uint64_t)g_rand_int(st->rand) << 32 | c->local_id;
	ib_mad_cm_init(&m, IB_CM_ATTR_DREQ, c->dreq_tid);
	ib_cm_dreq_encode(&m, &dq);
	ibc_set_state(c, IBC_DREQ_SENT);
	c->retries_left = IB_CM_RETRIES;
	ibc_arm(c, c->peer_rto_ms);
	ibc_send(c, &m, true);
}

void ib_recv_dreq(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
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
	c = ibc_lookup_locked(st, r.remote_comm_id);
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
			ib_reply_dest(src, gidx, &dst);
			ib_port_send(p, &out, &dst);
		}
		ibc_unref(c);
		return;
	}
	was = c->state;
	switch (was) {
	case IBC_ESTABLISHED:
	case IBC_REP_SENT:
	case IBC_DREQ_SENT:
		id = g_steal_pointer(&c->id);
		ibc_send(c, &out, true);
		ibc_timewait(c);
		break;
	case IBC_TIMEWAIT:
		/* Our DREP was lost. */
		ibc_send(c, &out, true);
		break;
	default:
		ibc_debug(c, "DREQ in state %s ignored", ibc_name(was));
		break;
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		/* rdma_cm moves the QP to ERR on a DREQ; so do we. */
		ib_qp_error(id->qp);
		if (was == IBC_REP_SENT)
			ibc_report(c, id, RNICPI_CONN_ERROR, -ECONNRESET, NULL, 0);
		else
			ibc_report(c, id, RNICPI_CONN_DISCONNECTED, 0,
				   r.private_data,
				   ib_pdata_used(r.private_data,
						 IB_CM_DREQ_PDATA));
		cm_id_unref(id);
	}
	ibc_unref(c);
}

void ib_recv_drep(struct cm *cm, struct ib_port *p, const struct ib_mad *m)
{
	struct ib_state *st = ib_of(cm);
	struct ib_cm_ids r;
	struct ib_conn *c;
	struct cm_id *id = NULL;

	ib_cm_ids_decode(m, &r);
	g_mutex_lock(&st->lock);
	c = ibc_lookup_locked(st, r.remote_comm_id);
	if (c && c->state == IBC_DREQ_SENT &&
	    c->remote_id == r.local_comm_id) {
		id = g_steal_pointer(&c->id);
		c->have_last = false;
		ibc_timewait(c);
	} else {
		g_debug("%s DREP for comm ID %08x ignored", ib_port_prefix(p),
			r.remote_comm_id);
	}
	g_mutex_unlock(&st->lock);
	if (id) {
		ibc_report(c, id, RNICPI_CONN_DISCONNECTED, 0, NULL, 0);
		cm_id_unref(id);
	}
	ibc_unref(c);
}

/* ------------------------------------------------------------------ */
/* The consumer's side: disconnect, release                            */
/* ------------------------------------------------------------------ */

int ib_disconnect(struct cm *cm, struct cm_id *id, bool abortive)
{
	struct ib_state *st = ib_of(cm);
	struct cm_id *drop = NULL;
	struct ib_conn *c;
	uint8_t pdata[IB_CM_DREQ_PDATA];
	uint32_t len;

	g_mutex_lock(&cm->lock);
	c = id->tp_data ? ibc_ref(id->tp_data) : NULL;
	len = MIN(id->disc_pdata_len, (uint32_t)sizeof(pdata));
	memcpy(pdata, id->disc_pdata, len);
	g_mutex_unlock(&cm->lock);
	/* Either way the QP stops now (rdma_cm does the same); in order the
	 * peer gets a DREQ and DISCONNECTED follows our DREP or time-out,
	 * abortively a REJ and DISCONNECTED at once. */
	ib_qp_error(id->qp);
	g_mutex_lock(&st->lock);
	if (c && c->state == IBC_ESTABLISHED && c->id == id) {
		if (abortive) {
			drop = g_steal_pointer(&c->id);
			ibc_send_abort_locked(c);
		} else {
			ibc_send_dreq_locked(st, c, pdata, len);
		}
	}
	g_mutex_unlock(&st->lock);
	if (drop) {
		ibc_report(c, drop, RNICPI_CONN_DISCONNECTED, -ECONNABORTED, NULL,
		       0);
		cm_id_unref(drop);
	}
	ibc_unref(c);
	return 0;
}

void ib_release(struct cm *cm, struct cm_id *id, enum cm_id_state was)
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
			ib_send_rej(c->port, &c->dest, c->tid, c->local_id, 0,
				 IB_CM_MSG_REQ, IB_CM_REJ_TIMEOUT, NULL, 0,
				 NULL);
			ibc_timewait(c);
			break;
		case IBC_REP_SENT:
		case IBC_REP_RCVD:
			ib_send_rej(c->port, &c->dest, c->tid, c->local_id,
				 c->remote_id, IB_CM_MSG_REP,
				 IB_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL);
			ibc_timewait(c);
			break;
		case IBC_ESTABLISHED:
			/* Freed while connected: abortive, as on iWARP. */
			ibc_send_abort_locked(c);
			break;
		default:
			break;
		}
	}
	g_mutex_unlock(&st->lock);
	ibc_debug(c, "released by its consumer (state %s)",
		  cm_id_state_name(was));
	cm_id_unref(drop);
	ibc_unref(c);	/* the ID's */
}
