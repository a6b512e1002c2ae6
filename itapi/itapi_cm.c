/* SPDX-License-Identifier: MIT */
/*
 * itapi_cm.c - connections: it_ep_connect, it_ep_accept, it_reject,
 * it_handoff, it_ep_disconnect, it_socket_convert, and the connection
 * manager's events turned into IT-API connection events (listeners and
 * their requests are itapi_listen.c).
 *
 * The cm/ events map as follows (the EP state after it in brackets):
 *   REQUEST       IT_CM_REQ_CONN_REQUEST_EVENT on the listener's EVD
 *   ESTABLISHED   IT_CM_MSG_CONN_ESTABLISHED_EVENT      [CONNECTED]
 *   REJECTED      IT_CM_MSG_CONN_PEER_REJECT_EVENT      [NONOPERATIONAL]
 *   UNREACHABLE   IT_CM_MSG_CONN_NONPEER_REJECT_EVENT   [NONOPERATIONAL]
 *                 reject_reason_code: TIMEOUT for -ETIMEDOUT, BAD_PATH
 *                 for an unreachable host or net, OTHER otherwise
 *   DISCONNECTED  IT_CM_MSG_CONN_DISCONNECT_EVENT       [NONOPERATIONAL]
 *   BROKEN        IT_CM_MSG_CONN_BROKEN_EVENT           [NONOPERATIONAL]
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"

static size_t pdata_limit(struct itapi_ia *ia, enum cm_pdata_op op)
{
	return MIN((size_t)cm_max_private_data(ia->dev, op),
		   (size_t)IT_MAX_PRIV_DATA);
}

void itapi_copy_pdata(unsigned char *dst, it_boolean_t *present,
		      const void *src, uint32_t len, const char *prefix)
{
	if (!len || !src) {
		*present = IT_FALSE;
		return;
	}
	if (len > IT_MAX_PRIV_DATA)
		g_info("%s %u bytes of private data from the peer; the event carries %d",
		       prefix, len, IT_MAX_PRIV_DATA);
	memcpy(dst, src, MIN(len, (uint32_t)IT_MAX_PRIV_DATA));
	*present = IT_TRUE;
}

/* ------------------------------------------------------------------ */
/* Connection events of an endpoint                                    */
/* ------------------------------------------------------------------ */

static it_conn_reject_code_t reject_code(int status)
{
	switch (-status) {
	case ETIMEDOUT:
		return IT_CN_REJ_TIMEOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return IT_CN_REJ_BAD_PATH;
	case ESTALE:
		return IT_CN_REJ_STALE_CONN;
	case ERANGE:
		return IT_CN_REJ_BAD_ORD;
	case ENOMEM:
		return IT_CN_REJ_RESOURCES;
	default:
		return IT_CN_REJ_OTHER;
	}
}

void itapi_ep_cm_event(const struct cm_event *ev, void *user_data)
{
	struct itapi_ep *ep = user_data;
	it_connection_event_t *c;
	it_event_t out = { 0 };
	it_ep_state_rc_t to;

	c = &out.conn;
	switch (ev->type) {
	case CM_EV_ESTABLISHED:
		c->event_number = IT_CM_MSG_CONN_ESTABLISHED_EVENT;
		to = IT_EP_STATE_CONNECTED;
		break;
	case CM_EV_REJECTED:
		c->event_number = IT_CM_MSG_CONN_PEER_REJECT_EVENT;
		to = IT_EP_STATE_NONOPERATIONAL;
		break;
	case CM_EV_UNREACHABLE:
		c->event_number = IT_CM_MSG_CONN_NONPEER_REJECT_EVENT;
		c->reject_reason_code = reject_code(ev->status);
		to = IT_EP_STATE_NONOPERATIONAL;
		break;
	case CM_EV_DISCONNECTED:
		c->event_number = IT_CM_MSG_CONN_DISCONNECT_EVENT;
		to = IT_EP_STATE_NONOPERATIONAL;
		break;
	case CM_EV_BROKEN:
		c->event_number = IT_CM_MSG_CONN_BROKEN_EVENT;
		to = IT_EP_STATE_NONOPERATIONAL;
		break;
	case CM_EV_ACCEPT_ARRIVED:
		/* Three-way: it_ep_accept or it_reject with this event's
		 * cn_est_id answers. */
		c->event_number = IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT;
		to = IT_EP_STATE_ACTIVE2_CONNECTION_PENDING;
		break;
	default:
		return;
	}
	g_mutex_lock(&ep->lock);
	itapi_debug(&ep->obj, "%s: %s -> %s (status %d)",
		    cm_event_name(ev->type),
		    itapi_ep_state_name(ep->state.rc),
		    itapi_ep_state_name(to), ev->status);
	ep->state.rc = to;
	/* Closed for its hard high watermark or a failed QP: broken,
	 * whatever the transport made of the abortive close. */
	if ((ep->hard_hi_hit || ep->qp_failed) &&
	    c->event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT)
		c->event_number = IT_CM_MSG_CONN_BROKEN_EVENT;
	if (ev->type == CM_EV_ACCEPT_ARRIVED)
		ep->cn_est_id = itapi_active_cn_est_id(ep);
	if (ev->type == CM_EV_ESTABLISHED)
		itapi_path_from_sockaddrs(ep->obj.ia, ep->spigot_id,
					  &ev->local_addr, &ev->remote_addr,
					  &ep->dst_path);
	c->cn_est_id = ep->cn_est_id;
	c->dst_path = ep->dst_path;
	g_mutex_unlock(&ep->lock);
	c->ep = (it_ep_handle_t)ep;
	c->rdma_read_ird = ev->ird;
	c->rdma_read_ord = ev->ord;
	itapi_copy_pdata(c->private_data, &c->private_data_present,
		   ev->private_data, ev->private_data_len, ep->obj.prefix);
	itapi_evd_post(ep->conn_evd, &out, true);
}

/* ------------------------------------------------------------------ */
/* Active and passive side                                             */
/* ------------------------------------------------------------------ */

/* An RC endpoint that may start a connection. */
static struct itapi_ep *ep_idle(it_ep_handle_t h, it_status_t *st,
				const char *op)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(h, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	it_ep_state_rc_t s;

	if (!ep) {
		*st = IT_FAIL0(IT_ERR_INVALID_EP, "%s: EP handle %p is not live",
			       op, (void *)h);
		return NULL;
	}
	if (ep->service != IT_RC_SERVICE) {
		*st = IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			      "%s on a UD endpoint", op);
		return NULL;
	}
	*st = itapi_ia_check(ep->obj.ia);
	if (*st)
		return NULL;
	g_mutex_lock(&ep->lock);
	s = ep->state.rc;
	g_mutex_unlock(&ep->lock);
	if (s != IT_EP_STATE_UNCONNECTED) {
		*st = IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			      "%s in state %s", op, itapi_ep_state_name(s));
		return NULL;
	}
	return ep;
}

static void itapi_cm_param(struct itapi_ep *ep, const unsigned char *pdata,
			   size_t len, struct cm_param *p)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = (uint32_t)len;
	p->ird = ep->attr.srv.rc.rdma_read_ird;
	p->ord = ep->attr.srv.rc.rdma_read_ord;
}

/* Move @ep from UNCONNECTED to @to; false if someone else moved it. */
static bool ep_start(struct itapi_ep *ep, it_ep_state_rc_t to)
{
	bool ok;

	g_mutex_lock(&ep->lock);
	ok = ep->state.rc == IT_EP_STATE_UNCONNECTED;
	if (ok)
		ep->state.rc = to;
	g_mutex_unlock(&ep->lock);
	return ok;
}

static void ep_abort_start(struct itapi_ep *ep)
{
	g_mutex_lock(&ep->lock);
	ep->state.rc = IT_EP_STATE_UNCONNECTED;
	ep->cm = NULL;
	g_mutex_unlock(&ep->lock);
}

/* iWARP: the TCP endpoints of the path and the port to connect to. */
static it_status_t iwarp_endpoints(struct itapi_ep *ep, const it_path_t *path,
				   const it_conn_qual_t *q,
				   struct sockaddr_storage *dst,
				   struct sockaddr_storage *src, uint16_t *port,
				   bool *have_src, bool *src_given)
{
	const it_iwarp_net_endpoint_t *iw = &path->remote.iwarp;
	uint16_t lport = 0;

	switch (q->type) {
	case IT_IANA_PORT:
		*port = ntohs(q->conn_qual.port);
		break;
	case IT_IANA_LR_PORT:
		*port = ntohs(q->conn_qual.lr_port.remote);
		lport = ntohs(q->conn_qual.lr_port.local);
		break;
	default:
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL,
			       "qualifier type %d: iWARP connects to IANA ports",
			       q->type);
	}
	if (!*port)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL, "port 0");
	if (iw->ip_vers == IT_IP_VERS_IPV4) {
		struct sockaddr_in *d = (void *)dst, *s = (void *)src;

		d->sin_family = AF_INET;
		d->sin_addr = iw->raddr.ipv4;
		*src_given = iw->laddr.ipv4.s_addr != htonl(INADDR_ANY);
		if (*src_given || lport) {
			s->sin_family = AF_INET;
			s->sin_addr = iw->laddr.ipv4;
			s->sin_port = htons(lport);
			*have_src = true;
		}
		if (d->sin_addr.s_addr == htonl(INADDR_ANY))
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
				       "remote address 0.0.0.0");
	} else if (iw->ip_vers == IT_IP_VERS_IPV6) {
		struct sockaddr_in6 *d = (void *)dst, *s = (void *)src;

		d->sin6_family = AF_INET6;
		d->sin6_addr = iw->raddr.ipv6;
		*src_given = !IN6_IS_ADDR_UNSPECIFIED(&iw->laddr.ipv6);
		if (*src_given || lport) {
			s->sin6_family = AF_INET6;
			s->sin6_addr = iw->laddr.ipv6;
			s->sin6_port = htons(lport);
			*have_src = true;
		}
		if (IN6_IS_ADDR_UNSPECIFIED(&d->sin6_addr))
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
				       "remote address ::");
	} else {
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
			       "ip_vers %d", iw->ip_vers);
	}
	return IT_SUCCESS;
}

/* A GID as a socket address: RoCEv2 GIDs are IP addresses, IPv4 ones
 * mapped (::ffff:a.b.c.d). */
static void gid_to_sockaddr(const it_ib_gid_t *g, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (IN6_IS_ADDR_V4MAPPED(g)) {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &g->s6_addr[12], 4);
	} else {
		struct sockaddr_in6 *in6 = (void *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = *g;
	}
}

/* RoCE/IB: the GIDs of the path, and the port (IANA port: rdma_cm's TCP
 * port space) or the service ID to connect to. */
static it_status_t ib_endpoints(struct itapi_ep *ep, const it_path_t *path,
				const it_conn_qual_t *q,
				struct sockaddr_storage *dst,
				struct sockaddr_storage *src, uint16_t *port,
				uint64_t *sid, bool *have_src)
{
	const it_ib_net_endpoint_t *ib = &path->remote.ib;
	uint16_t lport = 0;

	switch (q->type) {
	case IT_IANA_PORT:
		*port = ntohs(q->conn_qual.port);
		if (!*port)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL,
				       "port 0");
		break;
	case IT_IANA_LR_PORT:
		/* The local port is the source port of rdma_cm's private
		 * data header, which names the connection to the peer. */
		*port = ntohs(q->conn_qual.lr_port.remote);
		lport = ntohs(q->conn_qual.lr_port.local);
		if (!*port)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL,
				       "port 0");
		break;
	case IT_IB_SERVICEID:
		*sid = be64toh(q->conn_qual.serviceid);
		if (!*sid)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL,
				       "service ID 0");
		break;
	default:
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONN_QUAL,
			       "qualifier type %d: this IA connects to service IDs and IANA ports (IT_IANA_LR_PORT too)",
			       q->type);
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&ib->remote_port_gid))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
			       "remote port GID ::");
	gid_to_sockaddr(&ib->remote_port_gid, dst);
	if (!IN6_IS_ADDR_UNSPECIFIED(&ib->local_port_gid)) {
		gid_to_sockaddr(&ib->local_port_gid, src);
		if (src->ss_family != dst->ss_family)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
				       "the local and remote GIDs are of different IP versions");
		*have_src = true;
	}
	if (lport) {
		if (!*have_src)	/* the route picks the address */
			src->ss_family = dst->ss_family;
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)(void *)src)->sin_port =
				htons(lport);
		else
			((struct sockaddr_in6 *)(void *)src)->sin6_port =
				htons(lport);
		*have_src = true;
	}
	return IT_SUCCESS;
}

it_status_t it_ep_connect(it_ep_handle_t ep_handle, const it_path_t *path,
			  const it_conn_attributes_t *conn_attr,
			  const it_conn_qual_t *connect_qual,
			  it_cn_est_flags_t cn_est_flags,
			  const unsigned char *private_data,
			  size_t private_data_length)
{
	struct sockaddr_storage dst = { 0 }, src = { 0 };
	struct cm_route route;
	struct cm_param param;
	struct cm_id *cm = NULL;
	struct itapi_ia *ia;
	struct itapi_ep *ep;
	uint16_t port = 0;
	uint64_t sid = 0;
	bool have_src = false, src_given = false;
	char buf[64];
	it_status_t st;
	int err;

	ep = ep_idle(ep_handle, &st, "it_ep_connect");
	if (!ep)
		return st;
	ia = ep->obj.ia;
	if (!path || !connect_qual)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT,
			       "path or connect_qual is NULL");
	if (!itapi_ia_spigot_ok(ia, path->spigot_id))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_SPIGOT,
			       "spigot %zu", path->spigot_id);
	if ((unsigned int)cn_est_flags &
	    ~(unsigned int)(IT_CONNECT_FLAG_TWO_WAY |
			    IT_CONNECT_FLAG_THREE_WAY |
			    IT_CONNECT_SUPPRESS_IRD_ORD))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "unknown flag bits 0x%x",
			       (unsigned int)cn_est_flags);
	if ((cn_est_flags & IT_CONNECT_FLAG_TWO_WAY) &&
	    (cn_est_flags & IT_CONNECT_FLAG_THREE_WAY))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "both two-way and three-way");
	/* The InfiniBand CM holds the RTU until the consumer accepts; MPA
	 * has no message for the active side's acceptance. */
	if ((cn_est_flags & IT_CONNECT_FLAG_THREE_WAY) &&
	    ia->transport == RNICPI_TRANSPORT_IWARP)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "three-way handshake: iWARP's MPA has no step for the active side's acceptance");
	/* librdmacm sends the RTU itself when the REP arrives. */
	if ((cn_est_flags & IT_CONNECT_FLAG_THREE_WAY) &&
	    (ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "three-way handshake: this device's connections run through librdmacm, which answers the REP itself");
	/* Suppression is MPA without its IRD/ORD header; the InfiniBand
	 * CM's REQ carries them in fields of its own, always. */
	if ((cn_est_flags & IT_CONNECT_SUPPRESS_IRD_ORD) &&
	    ia->transport != RNICPI_TRANSPORT_IWARP)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "IRD/ORD suppression: iWARP only (the InfiniBand CM's REQ always carries them)");
	if ((cn_est_flags & IT_CONNECT_SUPPRESS_IRD_ORD) &&
	    (ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CN_EST_FLAGS,
			       "IRD/ORD suppression: this device's connections run through librdmacm, whose iw_cm sends IRD/ORD always");
	if (private_data_length > pdata_limit(ia, CM_PDATA_CONNECT))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data; connect carries %zu here",
			       private_data_length,
			       pdata_limit(ia, CM_PDATA_CONNECT));
	if (private_data_length && !private_data)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "private_data is NULL");
	if (ia->transport == RNICPI_TRANSPORT_IWARP)
		st = iwarp_endpoints(ep, path, connect_qual, &dst, &src,
				     &port, &have_src, &src_given);
	else
		st = ib_endpoints(ep, path, connect_qual, &dst, &src, &port,
				  &sid, &have_src);
	if (st)
		return st;
	src_given = src_given || have_src;
	(void)conn_attr;	/* no connection attributes are taken */

	/* The destination must be reached through this IA's interface. */
	err = cm_resolve((void *)&dst, src_given ? (void *)&src :
			 NULL,
			 ia->transport, &route);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONN,
				     "no route to %s: %s",
				     itapi_sockaddr_str(&dst, buf, sizeof(buf)),
				     g_strerror(-err));
	if (route.device != ia->dev) {
		st = IT_FAIL(&ep->obj, IT_ERR_INVALID_NETADDR,
			     "%s is reached through %s, %s%s",
			     itapi_sockaddr_str(&dst, buf, sizeof(buf)),
			     route.ifname,
			     route.device ? "which is the interface of " :
					    "which has no device of this transport",
			     route.device ? ual_device_name(route.device) : "");
		if (route.device)
			ual_device_put(route.device);
		return st;
	}
	ual_device_put(route.device);

	itapi_cm_param(ep, private_data, private_data_length, &param);
	param.no_ird_ord = (cn_est_flags & IT_CONNECT_SUPPRESS_IRD_ORD) != 0;
	param.three_way = (cn_est_flags & IT_CONNECT_FLAG_THREE_WAY) != 0;
	if (path->timeout && path->timeout != IT_TIMEOUT_INFINITE)
		param.timeout_ms = (uint32_t)MIN((path->timeout + 999) / 1000,
						 (uint64_t)3600000);
	if (!ep_start(ep, IT_EP_STATE_ACTIVE1_CONNECTION_PENDING))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "the endpoint changed state meanwhile");
	g_mutex_lock(&ep->lock);
	ep->dst_path = *path;
	ep->spigot_id = path->spigot_id;
	ep->cn_est_id = 0;
	g_mutex_unlock(&ep->lock);
	if (sid)
		err = cm_connect_service(ep->qp, (void *)&dst, sid,
					 have_src ? (void *)&src : NULL,
					 &param, itapi_ep_cm_event, ep, &cm);
	else
		err = cm_connect(ep->qp, (void *)&dst, port,
				 have_src ? (void *)&src : NULL, &param,
				 itapi_ep_cm_event, ep, &cm);
	if (err) {
		ep_abort_start(ep);
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONN,
				     "connect to %s port %u: %s",
				     itapi_sockaddr_str(&dst, buf, sizeof(buf)),
				     port, g_strerror(-err));
	}
	g_mutex_lock(&ep->lock);
	ep->cm = cm;
	g_mutex_unlock(&ep->lock);
	return IT_SUCCESS;
}

/*
 * Three-way set-up: the active side's connection establishment identifier
 * is the EP's handle with the top bit set (the cm's request IDs count from
 * 1 and never reach it), so that it_reject, which is given nothing else,
 * finds the endpoint.
 */
#define ITAPI_ACTIVE_CN_EST_BIT (UINT64_C(1) << 63)

it_cn_est_identifier_t itapi_active_cn_est_id(struct itapi_ep *ep)
{
	return (it_cn_est_identifier_t)(uintptr_t)ep | ITAPI_ACTIVE_CN_EST_BIT;
}

/* The active EP waiting for its consumer's answer under @id, or NULL;
 * *@cm its connection then, a reference the caller drops. */
static struct itapi_ep *active_waiting(it_cn_est_identifier_t id,
				       struct cm_id **cm)
{
	struct itapi_ep *ep;
	bool ok;

	if (!(id & ITAPI_ACTIVE_CN_EST_BIT))
		return NULL;
	ep = ITAPI_LOOKUP((it_ep_handle_t)(uintptr_t)(id &
						       ~ITAPI_ACTIVE_CN_EST_BIT),
			  struct itapi_ep, IT_HANDLE_TYPE_EP);
	if (!ep)
		return NULL;
	g_mutex_lock(&ep->lock);
	ok = ep->state.rc == IT_EP_STATE_ACTIVE2_CONNECTION_PENDING &&
	     ep->cn_est_id == id && ep->cm;
	*cm = ok ? itapi_ep_cm_ref_locked(ep) : NULL;
	g_mutex_unlock(&ep->lock);
	return ok ? ep : NULL;
}

/* it_ep_accept / it_reject on the active side of a three-way set-up. */
static it_status_t active_answer(struct itapi_ep *ep, struct cm_id *cm,
				 bool ok, const unsigned char *pdata,
				 size_t len)
{
	int err;

	if (len > pdata_limit(ep->obj.ia, CM_PDATA_ACCEPT))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data; at most %zu",
			       len, pdata_limit(ep->obj.ia, CM_PDATA_ACCEPT));
	if (len && !pdata)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "private_data is NULL");
	err = ok ? cm_confirm(cm, pdata, (uint32_t)len) :
		   cm_refuse(cm, pdata, (uint32_t)len);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONN,
				     "%s of the peer's acceptance: %s",
				     ok ? "accept" : "reject",
				     g_strerror(-err));
	if (!ok) {
		/* Refused by its own consumer: no event follows. */
		g_mutex_lock(&ep->lock);
		ep->state.rc = IT_EP_STATE_NONOPERATIONAL;
		g_mutex_unlock(&ep->lock);
	}
	return IT_SUCCESS;
}

it_status_t it_ep_accept(it_ep_handle_t ep_handle,
			 it_cn_est_identifier_t cn_est_id,
			 const unsigned char *private_data,
			 size_t private_data_length)
{
	struct cm_param param;
	struct cm_id *cm = NULL;
	struct itapi_ep *ep;
	it_status_t st;
	int err;

	ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep, IT_HANDLE_TYPE_EP);
	if (ep && ep->service == IT_RC_SERVICE) {
		it_ep_state_rc_t s;
		it_cn_est_identifier_t want;

		g_mutex_lock(&ep->lock);
		s = ep->state.rc;
		want = ep->cn_est_id;
		if (s == IT_EP_STATE_ACTIVE2_CONNECTION_PENDING &&
		    cn_est_id == want)
			cm = itapi_ep_cm_ref_locked(ep);
		g_mutex_unlock(&ep->lock);
		if (s == IT_EP_STATE_ACTIVE2_CONNECTION_PENDING) {
			if (cn_est_id != want)
				return IT_FAIL(&ep->obj,
					       IT_ERR_INVALID_CN_EST_ID,
					       "the endpoint waits under identifier %llx",
					       (unsigned long long)want);
			st = active_answer(ep, cm, true, private_data,
					   private_data_length);
			cm_id_unref(cm);
			return st;
		}
	}
	ep = ep_idle(ep_handle, &st, "it_ep_accept");
	if (!ep)
		return st;
	if (private_data_length >
	    pdata_limit(ep->obj.ia, CM_PDATA_ACCEPT))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data; accept carries %zu here",
			       private_data_length,
			       pdata_limit(ep->obj.ia, CM_PDATA_ACCEPT));
	if (private_data_length && !private_data)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "private_data is NULL");
	itapi_cm_param(ep, private_data, private_data_length, &param);
	if (!ep_start(ep, IT_EP_STATE_PASSIVE_CONNECTION_PENDING))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "the endpoint changed state meanwhile");
	g_mutex_lock(&ep->lock);
	ep->cn_est_id = cn_est_id;
	g_mutex_unlock(&ep->lock);
	param.no_ird_ord = itapi_listen_take_no_ird_ord(cn_est_id);
	err = cm_accept(cn_est_id, ep->qp, &param, itapi_ep_cm_event, ep,
			&cm);
	if (err) {
		if (param.no_ird_ord)
			itapi_listen_keep_no_ird_ord(cn_est_id);
		ep_abort_start(ep);
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONN,
				     "accept of request %llu: %s",
				     (unsigned long long)cn_est_id,
				     g_strerror(-err));
	}
	g_mutex_lock(&ep->lock);
	ep->cm = cm;
	g_mutex_unlock(&ep->lock);
	return IT_SUCCESS;
}

it_status_t it_reject(it_cn_est_identifier_t cn_est_id,
		      const unsigned char *private_data,
		      size_t private_data_length)
{
	int err;

	if (private_data_length > IT_MAX_PRIV_DATA)
		return IT_FAIL0(IT_ERR_INVALID_PDATA_LENGTH,
				"%zu bytes of private data; at most %d",
				private_data_length, IT_MAX_PRIV_DATA);
	if (private_data_length && !private_data)
		return IT_FAIL0(IT_ERR_FAULT, "private_data is NULL");
	{
		struct cm_id *cm = NULL;
		struct itapi_ep *ep = active_waiting(cn_est_id, &cm);

		if (ep) {
			it_status_t st = active_answer(ep, cm, false,
						       private_data,
						       private_data_length);

			cm_id_unref(cm);
			return st;
		}
	}
	err = cm_reject(cn_est_id, private_data,
			(uint32_t)private_data_length);
	if (!err)
		itapi_listen_take_no_ird_ord(cn_est_id);
	if (err)
		return IT_FAIL0(itapi_status(err, ITAPI_CTX_CONN),
				"reject of request %llu: %s",
				(unsigned long long)cn_est_id,
				g_strerror(-err));
	return IT_SUCCESS;
}

it_status_t it_handoff(const it_conn_qual_t *conn_qual, size_t spigot_id,
		       it_cn_est_identifier_t cn_est_id)
{
	uint16_t port = 0;
	uint64_t sid = 0;
	bool quiet;
	int err;

	if (!conn_qual)
		return IT_FAIL0(IT_ERR_FAULT, "conn_qual is NULL");
	/* A service ID names a listener of the InfiniBand CM (RoCE); on an
	 * iWARP request the cm finds none. */
	if (conn_qual->type == IT_IB_SERVICEID) {
		sid = be64toh(conn_qual->conn_qual.serviceid);
		if (!sid)
			return IT_FAIL0(IT_ERR_INVALID_CONN_QUAL,
					"service ID 0");
	} else if (conn_qual->type == IT_IANA_PORT) {
		port = ntohs(conn_qual->conn_qual.port);
		if (!port)
			return IT_FAIL0(IT_ERR_INVALID_CONN_QUAL, "port 0");
	} else if (conn_qual->type == IT_IANA_LR_PORT) {
		/* The listener on the local port, which must take the
		 * request's remote port (the cm checks). */
		port = ntohs(conn_qual->conn_qual.lr_port.local);
		if (!port)
			return IT_FAIL0(IT_ERR_INVALID_CONN_QUAL, "port 0");
	} else {
		return IT_FAIL0(IT_ERR_INVALID_CONN_QUAL,
				"qualifier type %d: hand-off is to an IANA port or a service ID",
				conn_qual->type);
	}
	if (spigot_id > 254)
		return IT_FAIL0(IT_ERR_INVALID_SPIGOT, "spigot %zu", spigot_id);
	/* The listener handed to decides anew (its event marks again). */
	quiet = itapi_listen_take_no_ird_ord(cn_est_id);
	err = cm_handoff(cn_est_id, (uint8_t)(spigot_id + 1), port, sid);
	if (err && quiet)
		itapi_listen_keep_no_ird_ord(cn_est_id);
	if (err)
		return IT_FAIL0(itapi_status(err, ITAPI_CTX_CONN),
				"hand-off of request %llu to %s %llx: %s",
				(unsigned long long)cn_est_id,
				sid ? "service ID" : "port",
				sid ? (unsigned long long)sid :
				      (unsigned long long)port,
				g_strerror(-err));
	return IT_SUCCESS;
}

/* The states it_ep_disconnect ends: connected, or a set-up under way. */
static bool ep_disconnectable(it_ep_state_rc_t s)
{
	switch (s) {
	case IT_EP_STATE_CONNECTED:
	case IT_EP_STATE_ACTIVE1_CONNECTION_PENDING:
	case IT_EP_STATE_ACTIVE2_CONNECTION_PENDING:
	case IT_EP_STATE_PASSIVE_CONNECTION_PENDING:
		return true;
	default:
		return false;
	}
}

it_status_t it_ep_disconnect(it_ep_handle_t ep_handle,
			     const unsigned char *private_data,
			     size_t private_data_length)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	struct cm_id *cm;
	it_ep_state_rc_t s;
	int err;

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	if (ep->service != IT_RC_SERVICE)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			       "disconnect of a UD endpoint");
	if (private_data_length >
	    pdata_limit(ep->obj.ia, CM_PDATA_DISCONNECT))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data; disconnect carries %zu on this transport",
			       private_data_length,
			       pdata_limit(ep->obj.ia,
					   CM_PDATA_DISCONNECT));
	g_mutex_lock(&ep->lock);
	s = ep->state.rc;
	/* A reference: it_ep_reset on another thread may destroy ep->cm
	 * once the connection broke (a destroyed one answers -ENOTCONN). */
	cm = ep_disconnectable(s) ? itapi_ep_cm_ref_locked(ep) : NULL;
	g_mutex_unlock(&ep->lock);
	if (!ep_disconnectable(s))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "disconnect in state %s",
			       itapi_ep_state_name(s));
	if (!cm)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "no connection");
	/* Connected: an orderly close, the event follows. Pending: the
	 * set-up is abandoned and the event is posted now. */
	if (private_data_length && !private_data) {
		cm_id_unref(cm);
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "private_data is NULL");
	}
	err = private_data_length ?
		      cm_disconnect_pdata(cm, private_data,
					  (uint32_t)private_data_length) :
		      cm_disconnect(cm, false);
	cm_id_unref(cm);
	if (err)
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONN,
				     "disconnect: %s", g_strerror(-err));
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Socket conversion                                                   */
/* ------------------------------------------------------------------ */

/*
 * What the provider may change on the socket it converts: it works on a
 * duplicate of @sd, which shares the file description (O_NONBLOCK) and
 * the socket itself (siw sets TCP_NODELAY, and SO_LINGER 0 when it drops
 * a failed stream). A failed conversion gives the consumer its socket
 * back as it was.
 */
struct sock_saved {
	int fl;
	bool have_nodelay, have_linger;
	int nodelay;
	struct linger linger;
};

static void sock_save(int sd, int fl, struct sock_saved *s)
{
	socklen_t len = sizeof(s->nodelay);

	s->fl = fl;
	s->have_nodelay = getsockopt(sd, IPPROTO_TCP, TCP_NODELAY,
				     &s->nodelay, &len) == 0;
	len = sizeof(s->linger);
	s->have_linger = getsockopt(sd, SOL_SOCKET, SO_LINGER, &s->linger,
				    &len) == 0;
}

static void sock_restore(int sd, const struct sock_saved *s)
{
	fcntl(sd, F_SETFL, s->fl);
	if (s->have_nodelay)
		setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &s->nodelay,
			   sizeof(s->nodelay));
	if (s->have_linger)
		setsockopt(sd, SOL_SOCKET, SO_LINGER, &s->linger,
			   sizeof(s->linger));
}

it_status_t it_socket_convert(int sd, it_ep_handle_t ep_handle,
			      it_sc_flags_t flags, const unsigned char *msg,
			      size_t len)
{
	struct cm_param param;
	struct cm_id *cm = NULL;
	struct sock_saved saved;
	struct itapi_ep *ep;
	it_status_t st;
	int fl, err;

	ep = ep_idle(ep_handle, &st, "it_socket_convert");
	if (!ep)
		return st;
	if ((unsigned int)flags & ~(unsigned int)IT_SC_NO_REQ_REP)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)flags);
	if (ep->obj.ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM)
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "socket conversion: the device's connections are set up by its provider's connection manager (rdma_cm), which takes no established TCP stream");
	if (ep->obj.ia->transport != RNICPI_TRANSPORT_IWARP)
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "socket conversion needs an iWARP IA");
	if (!(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_IWARP_CM))
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "socket conversion: the provider has no iWARP connection hooks");
	/* The consumer exchanged the MPA Request and Reply itself: nothing
	 * carries private data, and the provider must be able to enter
	 * RDMA mode without its own exchange. */
	if ((flags & IT_SC_NO_REQ_REP) && len)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "IT_SC_NO_REQ_REP with %zu bytes of private data: no MPA Request carries them",
			       len);
	if ((flags & IT_SC_NO_REQ_REP) &&
	    !(ep->obj.ia->attr.caps & RNICPI_DEV_CAP_IWARP_NO_MPA))
		return IT_FAIL(&ep->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "IT_SC_NO_REQ_REP: the provider cannot enter RDMA mode without its own MPA exchange");
	if (len > pdata_limit(ep->obj.ia, CM_PDATA_CONNECT))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data; MPA carries %zu here",
			       len,
			       pdata_limit(ep->obj.ia, CM_PDATA_CONNECT));
	if (len && !msg)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT, "msg is NULL");
	fl = fcntl(sd, F_GETFL);
	if (sd < 0 || fl < 0)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_CONVERSION,
			       "descriptor %d is not open", sd);
	sock_save(sd, fl, &saved);
	itapi_cm_param(ep, msg, len, &param);
	param.no_mpa = (flags & IT_SC_NO_REQ_REP) != 0;
	if (!ep_start(ep, IT_EP_STATE_PASSIVE_WAIT_RDMA_TRANS_REQ))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_STATE,
			       "the endpoint changed state meanwhile");
	err = cm_socket_convert(ep->qp, sd, &param, itapi_ep_cm_event, ep,
				&cm);
	if (err) {
		/* The socket is still the consumer's: as it was. */
		sock_restore(sd, &saved);
		ep_abort_start(ep);
		return IT_FAIL_ERRNO(&ep->obj, err, ITAPI_CTX_CONVERT,
				     "descriptor %d: %s", sd,
				     g_strerror(-err));
	}
	g_mutex_lock(&ep->lock);
	ep->cm = cm;
	g_mutex_unlock(&ep->lock);
	/* The provider works on its own duplicate of the connection; the
	 * consumer's descriptor is given up, as it_socket_convert says. */
	close(sd);
	return IT_SUCCESS;
}
