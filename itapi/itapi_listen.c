/* SPDX-License-Identifier: MIT */
/*
 * itapi_listen.c - listeners: it_listen_create / free / query, and the
 * connection manager's REQUEST and SIDR_REQUEST events on a listener
 * turned into IT-API events on the listener's EVD.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "itapi/itapi_priv.h"

/* ------------------------------------------------------------------ */
/* Listeners                                                           */
/* ------------------------------------------------------------------ */

/* Requests that came to a listener with IT_LISTEN_SUPPRESS_IRD_ORD, until
 * answered: their accept goes without the IRD/ORD exchange. */
static GMutex quiet_lock;
static GHashTable *quiet_reqs;	/* set of uint64_t request IDs */

void itapi_listen_keep_no_ird_ord(it_cn_est_identifier_t id)
{
	g_mutex_lock(&quiet_lock);
	if (!quiet_reqs)
		quiet_reqs = g_hash_table_new_full(g_int64_hash, g_int64_equal,
						   g_free, NULL);
	g_hash_table_add(quiet_reqs, g_memdup2(&id, sizeof(id)));
	g_mutex_unlock(&quiet_lock);
}

bool itapi_listen_take_no_ird_ord(it_cn_est_identifier_t id)
{
	bool found;

	g_mutex_lock(&quiet_lock);
	found = quiet_reqs && g_hash_table_remove(quiet_reqs, &id);
	g_mutex_unlock(&quiet_lock);
	return found;
}

/* A UD service request (SIDR) on the listener. */
static void listen_sidr_event(struct itapi_listen *l,
			      const struct cm_event *ev)
{
	it_ud_svc_request_event_t *r;
	it_event_t out = { 0 };

	r = &out.ud_svc_request;
	r->event_number = IT_CM_REQ_UD_SERVICE_REQUEST_EVENT;
	r->ud_svc_req_id = ev->req_id;
	r->conn_qual = l->conn_qual;
	if (l->conn_qual.type == IT_IB_SERVICEID)
		r->conn_qual.conn_qual.serviceid = htobe64(ev->service_id);
	itapi_sockaddr_to_net_addr(&ev->remote_addr, &r->source_addr);
	r->spigot_id = ev->port_num ? ev->port_num - 1u : 0;
	itapi_copy_pdata(r->private_data, &r->private_data_present,
		   ev->private_data, ev->private_data_len, l->obj.prefix);
	if (itapi_evd_post(l->evd, &out, true) != IT_SUCCESS) {
		g_info("%s UD service request %llu refused: its EVD is full",
		       l->obj.prefix, (unsigned long long)ev->req_id);
		cm_sidr_reply(ev->req_id, IT_UD_SVC_REQ_REJECTED, 0, 0,
			      NULL, 0);
	}
}

static void listen_event(const struct cm_event *ev, void *data)
{
	struct itapi_listen *l = data;
	struct itapi_ia *ia = l->obj.ia;
	it_conn_request_event_t *r;
	it_event_t out = { 0 };

	if (ev->type == CM_EV_SIDR_REQUEST) {
		listen_sidr_event(l, ev);
		return;
	}
	if (ev->type != CM_EV_REQUEST)
		return;
	r = &out.conn_req;
	r->event_number = IT_CM_REQ_CONN_REQUEST_EVENT;
	r->cn_est_id = ev->req_id;
	if (l->conn_qual.type == IT_IB_SERVICEID) {
		r->conn_qual.type = IT_IB_SERVICEID;
		r->conn_qual.conn_qual.serviceid = htobe64(ev->service_id);
	} else if (l->conn_qual.type == IT_IANA_LR_PORT) {
		/* The cm let through the listener's remote port only. */
		r->conn_qual = l->conn_qual;
	} else {
		r->conn_qual.type = IT_IANA_PORT;
		r->conn_qual.conn_qual.port = htons(ev->port);
	}
	itapi_sockaddr_to_net_addr(&ev->remote_addr, &r->source_addr);
	/* RoCE GIDs are IP addresses: reported as such (as rdma_cm does);
	 * native IB names the GID. */
	if (ia->transport == RNICPI_TRANSPORT_IB)
		it_convert_net_addr(&r->source_addr, IT_IB_GID,
				    &r->source_addr);
	r->spigot_id = ev->port_num ? ev->port_num - 1u : 0;
	r->max_message_size = (uint32_t)MIN(ia->attr.max_msg_size,
					    (uint64_t)UINT32_MAX);
	r->rdma_read_ird = ev->ird;
	r->rdma_read_ord = ev->ord;
	itapi_copy_pdata(r->private_data, &r->private_data_present,
		   ev->private_data, ev->private_data_len, l->obj.prefix);
	/* Before the event: the consumer may accept as soon as it is out. */
	if (l->no_ird_ord)
		itapi_listen_keep_no_ird_ord(ev->req_id);
	if (itapi_evd_post(l->evd, &out, true) != IT_SUCCESS) {
		itapi_listen_take_no_ird_ord(ev->req_id);
		/* A request nobody can see is refused at once rather than
		 * left to time out at the peer. */
		g_info("%s connection request %llu refused: its EVD is full",
		       l->obj.prefix, (unsigned long long)ev->req_id);
		cm_reject(ev->req_id, NULL, 0);
	}
}

it_status_t it_listen_create(it_ia_handle_t ia_handle, size_t spigot_id,
			     it_evd_handle_t connect_evd,
			     it_listen_flags_t flags, it_conn_qual_t *conn_qual,
			     it_listen_handle_t *listen_handle)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	struct itapi_evd *evd;
	struct itapi_listen *l;
	uint16_t port = 0, rport = 0;
	uint64_t sid = 0;
	bool want_sid = false;
	it_status_t st;
	int err;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!conn_qual || !listen_handle)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT,
			       "conn_qual or listen_handle is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&ia->obj, st, "the device failed");
	if (!itapi_ia_spigot_ok(ia, spigot_id))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_SPIGOT,
			       "spigot %zu: the IA has %u", spigot_id,
			       MAX(ia->attr.phys_port_cnt, 1));
	evd = ITAPI_LOOKUP(connect_evd, struct itapi_evd, IT_HANDLE_TYPE_EVD);
	if (!evd || evd->obj.ia != ia)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_EVD,
			       "EVD handle %p is not an EVD of this IA",
			       (void *)connect_evd);
	if (evd->is_aevd || evd->stream != IT_CM_REQ_EVENT_STREAM)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_EVD_TYPE,
			       "the EVD is not a CM request SEVD");
	if ((unsigned int)flags &
	    ~(unsigned int)(IT_LISTEN_CONN_QUAL_INPUT |
			    IT_LISTEN_SUPPRESS_IRD_ORD))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)flags);
	/* Suppression is MPA without its IRD/ORD header; the InfiniBand
	 * CM's REP carries them in fields of its own, always. */
	if ((flags & IT_LISTEN_SUPPRESS_IRD_ORD) &&
	    ia->transport != RNICPI_TRANSPORT_IWARP)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "IRD/ORD suppression: iWARP only (the InfiniBand CM's REP always carries them)");
	if ((flags & IT_LISTEN_SUPPRESS_IRD_ORD) &&
	    (ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_FLAGS,
			       "IRD/ORD suppression: this device's connections run through librdmacm, whose iw_cm sends IRD/ORD always");
	if (conn_qual->type == IT_IANA_LR_PORT) {
		/* Requests from one remote port (any address: the qualifier
		 * names ports only) to the local port, given or picked. */
		if (ia->transport != RNICPI_TRANSPORT_IWARP &&
		    !(ia->attr.caps & RNICPI_DEV_CAP_GSI))
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_CONN_QUAL,
				       "IT_IANA_LR_PORT: this IA has no InfiniBand CM port space");
		if (ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM)
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_CONN_QUAL,
				       "IT_IANA_LR_PORT: this device's listeners run through librdmacm, which listens on a port for every peer");
		rport = ntohs(conn_qual->conn_qual.lr_port.remote);
		if (!rport)
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_CONN_QUAL,
				       "IT_IANA_LR_PORT with remote port 0");
		if (flags & IT_LISTEN_CONN_QUAL_INPUT) {
			port = ntohs(conn_qual->conn_qual.lr_port.local);
			if (!port)
				return IT_FAIL(&ia->obj,
					       IT_ERR_INVALID_CONN_QUAL,
					       "IT_IANA_LR_PORT with local port 0");
		}
	} else if (flags & IT_LISTEN_CONN_QUAL_INPUT) {
		if (conn_qual->type == IT_IB_SERVICEID &&
		    ia->transport != RNICPI_TRANSPORT_IWARP) {
			sid = be64toh(conn_qual->conn_qual.serviceid);
			if (!sid)
				return IT_FAIL(&ia->obj,
					       IT_ERR_INVALID_CONN_QUAL,
					       "service ID 0");
		} else if (conn_qual->type != IT_IANA_PORT) {
			return IT_FAIL(&ia->obj, IT_ERR_INVALID_CONN_QUAL,
				       "qualifier type %d; this IA listens on %s",
				       conn_qual->type,
				       ia->transport == RNICPI_TRANSPORT_IWARP ?
					       "IANA ports" :
					       "service IDs and IANA ports");
		} else {
			port = ntohs(conn_qual->conn_qual.port);
			if (!port)
				return IT_FAIL(&ia->obj,
					       IT_ERR_INVALID_CONN_QUAL,
					       "port 0");
		}
	} else if (conn_qual->type == IT_IB_SERVICEID &&
		   ia->transport != RNICPI_TRANSPORT_IWARP) {
		/* A service ID picked for the consumer: a free port of
		 * rdma_cm's TCP space, reported as its service ID. */
		want_sid = true;
	}
	l = g_new0(struct itapi_listen, 1);
	itapi_obj_init(&l->obj, IT_HANDLE_TYPE_LISTEN, ia, NULL);
	l->spigot_id = spigot_id;
	l->evd = evd;
	l->no_ird_ord = (flags & IT_LISTEN_SUPPRESS_IRD_ORD) != 0;
	if (sid)
		err = cm_listen_service(ia->dev, (uint8_t)(spigot_id + 1),
					sid, listen_event, l, &l->cm);
	else if (rport)
		err = cm_listen_from(ia->dev, (uint8_t)(spigot_id + 1), &port,
				     rport, listen_event, l, &l->cm);
	else
		err = cm_listen(ia->dev, (uint8_t)(spigot_id + 1), &port,
				listen_event, l, &l->cm);
	if (err) {
		g_free(l);
		return IT_FAIL_ERRNO(&ia->obj, err, ITAPI_CTX_LISTEN,
				     "listen on %s %" G_GINT64_MODIFIER "x: %s",
				     sid ? "service ID" : "port",
				     sid ? sid : (uint64_t)port,
				     g_strerror(-err));
	}
	if (sid || want_sid) {
		if (!sid)
			sid = 0x0000000001060000ull | port;
		l->conn_qual.type = IT_IB_SERVICEID;
		l->conn_qual.conn_qual.serviceid = htobe64(sid);
		snprintf(l->obj.prefix, sizeof(l->obj.prefix),
			 "LISTEN[0x%" G_GINT64_MODIFIER "x] %s:", sid,
			 ual_device_name(ia->dev));
	} else if (rport) {
		l->conn_qual.type = IT_IANA_LR_PORT;
		l->conn_qual.conn_qual.lr_port.local = htons(port);
		l->conn_qual.conn_qual.lr_port.remote = htons(rport);
		snprintf(l->obj.prefix, sizeof(l->obj.prefix),
			 "LISTEN[%u<-%u] %s:", port, rport,
			 ual_device_name(ia->dev));
	} else {
		l->conn_qual.type = IT_IANA_PORT;
		l->conn_qual.conn_qual.port = htons(port);
		snprintf(l->obj.prefix, sizeof(l->obj.prefix),
			 "LISTEN[%u] %s:", port, ual_device_name(ia->dev));
	}
	g_mutex_lock(&ia->lock);
	evd->users++;
	g_mutex_unlock(&ia->lock);
	itapi_ia_add_child(ia, &l->obj);
	*conn_qual = l->conn_qual;
	*listen_handle = (it_listen_handle_t)l;
	return IT_SUCCESS;
}

void itapi_listen_destroy(struct itapi_listen *l)
{
	struct itapi_ia *ia = l->obj.ia;

	itapi_ia_del_child(ia, &l->obj);
	cm_listen_destroy(l->cm);
	g_mutex_lock(&ia->lock);
	l->evd->users--;
	g_mutex_unlock(&ia->lock);
	g_free(l);
}

it_status_t it_listen_free(it_listen_handle_t listen_handle)
{
	struct itapi_listen *l = ITAPI_LOOKUP(listen_handle,
					      struct itapi_listen,
					      IT_HANDLE_TYPE_LISTEN);

	if (!l)
		return IT_FAIL0(IT_ERR_INVALID_LISTEN,
				"listen handle %p is not live",
				(void *)listen_handle);
	itapi_listen_destroy(l);
	return IT_SUCCESS;
}

it_status_t it_listen_query(it_listen_handle_t listen_handle,
			    it_listen_param_mask_t mask,
			    it_listen_param_t *params)
{
	struct itapi_listen *l = ITAPI_LOOKUP(listen_handle,
					      struct itapi_listen,
					      IT_HANDLE_TYPE_LISTEN);
	bool all = mask & IT_LISTEN_PARAM_ALL;

	if (!l)
		return IT_FAIL0(IT_ERR_INVALID_LISTEN,
				"listen handle %p is not live",
				(void *)listen_handle);
	if ((unsigned int)mask & ~0x1fu)
		return IT_FAIL(&l->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&l->obj, IT_ERR_FAULT, "params is NULL");
	if (all || (mask & IT_LISTEN_PARAM_IA_HANDLE))
		params->ia_handle = (it_ia_handle_t)l->obj.ia;
	if (all || (mask & IT_LISTEN_PARAM_SPIGOT_ID))
		params->spigot_id = l->spigot_id;
	if (all || (mask & IT_LISTEN_PARAM_CONNECT_EVD))
		params->connect_evd = (it_evd_handle_t)l->evd;
	if (all || (mask & IT_LISTEN_PARAM_CONN_QUAL))
		params->connect_qual = l->conn_qual;
	return IT_SUCCESS;
}
