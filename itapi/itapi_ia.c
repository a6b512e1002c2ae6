/* SPDX-License-Identifier: MIT */
/*
 * itapi_ia.c - interfaces, interface adapters (IAs), protection zones,
 * paths, and the provider's asynchronous events turned into IT-API
 * affiliated / unaffiliated events.
 *
 * An IA is one ual device. A spigot is a port of it: spigot_id N is port
 * N + 1 (every soft device has one port, spigot 0).
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "itapi/itapi_priv.h"

/* ------------------------------------------------------------------ */
/* Interfaces                                                          */
/* ------------------------------------------------------------------ */

static it_transport_type_t it_transport(enum rnicpi_transport t)
{
	return t == RNICPI_TRANSPORT_IWARP ? IT_IWARP_TCP_TRANSPORT :
					     IT_IB_TRANSPORT;
}

void it_interface_list(it_interface_t *interfaces, size_t *num_interfaces,
		       size_t *total_interfaces)
{
	struct ual *u = NULL;
	GPtrArray *devs;
	size_t room, n = 0;
	int err;

	room = num_interfaces ? *num_interfaces : 0;
	if (!interfaces)
		room = 0;
	err = ual_open(&u);
	if (err) {
		g_info("it_interface_list: no access layer: %s",
		       g_strerror(-err));
		if (num_interfaces)
			*num_interfaces = 0;
		if (total_interfaces)
			*total_interfaces = 0;
		return;
	}
	devs = ual_device_list(u);
	for (guint i = 0; i < devs->len && n < room; i++, n++) {
		struct ual_device *d = devs->pdata[i];
		it_interface_t *it = &interfaces[n];

		memset(it, 0, sizeof(*it));
		it->major_version = ITAPI_MAJOR;
		it->minor_version = ITAPI_MINOR;
		it->transport_type = it_transport(ual_device_transport(d));
		g_strlcpy(it->name, ual_device_name(d), sizeof(it->name));
	}
	if (num_interfaces)
		*num_interfaces = n;
	if (total_interfaces)
		*total_interfaces = devs->len;
	g_ptr_array_unref(devs);
	ual_close(u);
}

/* ------------------------------------------------------------------ */
/* Children                                                            */
/* ------------------------------------------------------------------ */

void itapi_ia_add_child(struct itapi_ia *ia, struct itapi_obj *child)
{
	g_mutex_lock(&ia->lock);
	g_ptr_array_add(ia->children, child);
	g_mutex_unlock(&ia->lock);
	itapi_handle_add(child);
}

void itapi_ia_del_child(struct itapi_ia *ia, struct itapi_obj *child)
{
	itapi_handle_del(child);
	g_mutex_lock(&ia->lock);
	g_ptr_array_remove(ia->children, child);
	g_mutex_unlock(&ia->lock);
}

it_status_t itapi_ia_check(struct itapi_ia *ia)
{
	bool dead;

	g_mutex_lock(&ia->lock);
	dead = ia->catastrophe;
	g_mutex_unlock(&ia->lock);
	return dead ? IT_ERR_IA_CATASTROPHE : IT_SUCCESS;
}

bool itapi_ia_spigot_ok(struct itapi_ia *ia, size_t spigot_id)
{
	return spigot_id < MAX(ia->attr.phys_port_cnt, 1);
}

/* ------------------------------------------------------------------ */
/* Asynchronous events                                                 */
/* ------------------------------------------------------------------ */

void itapi_post_affiliated(struct itapi_ia *ia, it_event_type_t type,
			   void *cause)
{
	struct itapi_evd *evd;
	it_event_t ev = { 0 };

	g_mutex_lock(&ia->lock);
	evd = ia->aff_evd ? itapi_evd_ref(ia->aff_evd) : NULL;
	g_mutex_unlock(&ia->lock);
	if (!evd) {
		g_info("%s %s: no affiliated async EVD; event dropped",
		       ia->obj.prefix, itapi_event_name(type));
		return;
	}
	ev.aff_async.event_number = type;
	ev.aff_async.cause.ep = cause;
	itapi_evd_post(evd, &ev, true);
	itapi_evd_unref(evd);
}

void itapi_post_unaffiliated(struct itapi_ia *ia, it_event_type_t type,
			     size_t spigot_id)
{
	struct itapi_evd *evd;
	it_event_t ev = { 0 };

	g_mutex_lock(&ia->lock);
	evd = ia->unaff_evd ? itapi_evd_ref(ia->unaff_evd) : NULL;
	g_mutex_unlock(&ia->lock);
	if (!evd) {
		g_debug("%s %s: no unaffiliated async EVD; event dropped",
			ia->obj.prefix, itapi_event_name(type));
		return;
	}
	ev.unaff_async.event_number = type;
	ev.unaff_async.ia = (it_ia_handle_t)ia;
	ev.unaff_async.spigot_id = spigot_id;
	itapi_evd_post(evd, &ev, true);
	itapi_evd_unref(evd);
}

/* iWARP Terminate fields (RFC 5040 §7.4; RNICPI's async event carries
 * them): layers, the error types used below, and their codes. */
enum {
	TERM_LAYER_RDMAP = 0,
	TERM_LAYER_DDP = 1,
	TERM_LAYER_LLP = 2,		/* MPA */
	RDMAP_ETYPE_REMOTE_PROT = 1,
	RDMAP_ECODE_INVALID_STAG = 0x00,
	RDMAP_ECODE_BASE_BOUNDS = 0x01,
	RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	DDP_ETYPE_UNTAGGED = 2,		/* RFC 5041 §7.2 */
	DDP_ECODE_UT_TOO_LONG = 0x05,
};

/*
 * RFC 5040 §7.4: the Terminate's layer, error type and code say what
 * failed and whose fault it was (term_remote: the peer sent it, so the
 * peer found the fault in what we sent).
 *  - ours, an access error: a tagged (DDP) error is a Write's; an RDMAP
 *    remote protection error with an STag or bounds code is a Read
 *    Request's (a Write reports those at DDP); access rights alone do
 *    not say which, and stay the Write's event;
 *  - ours, a bad request: a bad RDMAP opcode, or another transport
 *    error in what the peer sent (untagged DDP: queue number, MSN,
 *    offset, no receive posted, a message longer than the receive);
 *  - the peer's: a Send longer than the receive it took; an access
 *    error; otherwise a remote error.
 * Without a Terminate or a NAK's reason (the verbs provider) the coarse
 * classes.
 */
/*
 * InfiniBand / RoCE (rnicpi.h's RNICPI_TERM_LAYER_IBA): the NAK code and
 * what was found, mapped as the iWARP Terminate that says the same:
 *  - the responder's (term_remote 0): a Send longer than its receive is
 *    a transport error in what the peer sent, as a bad length; a bad
 *    opcode the bad opcode; an R_Key check the Read's or Write's access
 *    violation; a receive WQE that failed its own protection check the
 *    local receive access violation (iWARP cannot tell that one);
 *  - the requester's: an invalid request NAK to a Send is the peer's
 *    receive length error, an access NAK a remote access violation,
 *    anything else a remote error.
 */
static it_event_type_t iba_event_type(const struct ual_async_event *e)
{
	if (e->term_remote) {
		if (e->type == RNICPI_EVENT_QP_ACCESS_ERR)
			return IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION;
		if (e->type == RNICPI_EVENT_QP_REQ_ERR &&
		    e->term_ecode == RNICPI_IBA_CAUSE_RECV_LENGTH)
			return IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR;
		return IT_ASYNC_AFF_EP_R_ERROR;
	}
	switch (e->term_ecode) {
	case RNICPI_IBA_CAUSE_OPCODE:
		return IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE;
	case RNICPI_IBA_CAUSE_LENGTH:
	case RNICPI_IBA_CAUSE_RECV_LENGTH:
		return IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR;
	case RNICPI_IBA_CAUSE_READ_ACCESS:
		return IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION;
	case RNICPI_IBA_CAUSE_WRITE_ACCESS:
	case RNICPI_IBA_CAUSE_ATOMIC_ACCESS:
		return IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION;
	case RNICPI_IBA_CAUSE_RECV_PROT:
		return IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION;
	default:
		break;
	}
	switch (e->type) {
	case RNICPI_EVENT_QP_ACCESS_ERR:
		return IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION;
	case RNICPI_EVENT_QP_REQ_ERR:
		return IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE;
	default:
		return IT_ASYNC_AFF_EP_FAILURE;
	}
}

static it_event_type_t qp_event_type(const struct ual_async_event *e)
{
	bool rdmap_prot = e->term_layer == TERM_LAYER_RDMAP &&
			  e->term_etype == RDMAP_ETYPE_REMOTE_PROT;
	bool untagged = e->term_layer == TERM_LAYER_DDP &&
			e->term_etype == DDP_ETYPE_UNTAGGED;

	if (e->term_layer == RNICPI_TERM_LAYER_IBA)
		return iba_event_type(e);
	switch (e->type) {
	case RNICPI_EVENT_QP_ACCESS_ERR:
		if (e->term_remote)
			return IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION;
		if (rdmap_prot &&
		    (e->term_ecode == RDMAP_ECODE_INVALID_STAG ||
		     e->term_ecode == RDMAP_ECODE_BASE_BOUNDS ||
		     e->term_ecode == RDMAP_ECODE_STAG_NOT_ASSOC))
			return IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION;
		return IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION;
	case RNICPI_EVENT_QP_REQ_ERR:
		if (e->term_remote)
			return untagged &&
					       e->term_ecode ==
						       DDP_ECODE_UT_TOO_LONG ?
				       IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR :
				       IT_ASYNC_AFF_EP_R_ERROR;
		if (untagged)
			return IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR;
		return IT_ASYNC_AFF_EP_BAD_TRANSPORT_OPCODE;
	case RNICPI_EVENT_QP_FATAL:
		/* Layer 2 is MPA, the lower layer protocol (TCP). */
		if (e->term_layer == TERM_LAYER_LLP)
			return IT_ASYNC_AFF_EP_L_LLP_ERROR;
		return IT_ASYNC_AFF_EP_FAILURE;
	default:
		return 0;
	}
}

static struct itapi_evd *evd_of_cq(struct itapi_ia *ia, struct ual_cq *cq)
{
	struct itapi_evd *found = NULL;

	g_mutex_lock(&ia->lock);
	for (guint i = 0; i < ia->children->len && !found; i++) {
		struct itapi_obj *o = ia->children->pdata[i];
		struct itapi_evd *evd = (struct itapi_evd *)o;

		if (o->type == IT_HANDLE_TYPE_EVD && evd->cq == cq)
			found = itapi_evd_ref(evd);
	}
	g_mutex_unlock(&ia->lock);
	return found;
}

static void ia_async_event(const struct ual_async_event *e, void *data)
{
	struct itapi_ia *ia = data;
	it_event_type_t type;

	switch (e->type) {
	case RNICPI_EVENT_QP_FATAL:
	case RNICPI_EVENT_QP_REQ_ERR:
	case RNICPI_EVENT_QP_ACCESS_ERR: {
		struct itapi_ep *ep;

		type = qp_event_type(e);
		g_rw_lock_reader_lock(&ia->qpn_lock);
		ep = e->qp ? g_hash_table_lookup(ia->qpn_eps,
						 GUINT_TO_POINTER(
							 ual_qp_num(e->qp))) :
			     NULL;
		if (ep) {
			itapi_post_affiliated(ia, type, ep);
			itapi_ep_qp_failed(ep);
		}
		g_rw_lock_reader_unlock(&ia->qpn_lock);
		if (!ep)
			g_debug("%s %s for a QP without endpoint; dropped",
				ia->obj.prefix, ual_event_type_name(e->type));
		return;
	}
	case RNICPI_EVENT_CQ_ERR: {
		struct itapi_evd *evd = e->cq ? evd_of_cq(ia, e->cq) : NULL;

		if (!evd)
			return;
		g_mutex_lock(&evd->lock);
		evd->overflowed = true;
		g_mutex_unlock(&evd->lock);
		g_info("%s the CQ overflowed", evd->obj.prefix);
		itapi_post_affiliated(ia, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE,
				      evd);
		itapi_evd_unref(evd);
		return;
	}
	case RNICPI_EVENT_SRQ_LIMIT_REACHED:
	case RNICPI_EVENT_SRQ_ERR: {
		GPtrArray *hits = g_ptr_array_new();

		g_mutex_lock(&ia->lock);
		for (guint i = 0; i < ia->children->len; i++) {
			struct itapi_obj *o = ia->children->pdata[i];

			if (o->type == IT_HANDLE_TYPE_SRQ &&
			    ((struct itapi_srq *)o)->srq == e->srq &&
			    e->type == RNICPI_EVENT_SRQ_LIMIT_REACHED)
				g_ptr_array_add(hits, o);
			if (o->type == IT_HANDLE_TYPE_EP &&
			    ((struct itapi_ep *)o)->srq &&
			    ((struct itapi_ep *)o)->srq->srq == e->srq &&
			    e->type == RNICPI_EVENT_SRQ_ERR)
				g_ptr_array_add(hits, o);
		}
		g_mutex_unlock(&ia->lock);
		for (guint i = 0; i < hits->len; i++)
			itapi_post_affiliated(
				ia,
				e->type == RNICPI_EVENT_SRQ_LIMIT_REACHED ?
					IT_ASYNC_AFF_SRQ_LOW_WATERMARK :
					IT_ASYNC_AFF_EP_SRQ_ERROR,
				hits->pdata[i]);
		g_ptr_array_free(hits, TRUE);
		return;
	}
	case RNICPI_EVENT_PORT_ACTIVE:
		itapi_post_unaffiliated(ia, IT_ASYNC_UNAFF_SPIGOT_ONLINE,
					e->port_num ? e->port_num - 1u : 0);
		return;
	case RNICPI_EVENT_PORT_ERR:
		itapi_post_unaffiliated(ia, IT_ASYNC_UNAFF_SPIGOT_OFFLINE,
					e->port_num ? e->port_num - 1u : 0);
		return;
	case RNICPI_EVENT_DEVICE_FATAL:
		g_mutex_lock(&ia->lock);
		ia->catastrophe = true;
		g_mutex_unlock(&ia->lock);
		g_warning("%s the device failed; the IA only frees from now on",
			  ia->obj.prefix);
		return;
	default:
		g_debug("%s %s: no IT-API event for it", ia->obj.prefix,
			ual_event_type_name(e->type));
		return;
	}
}

/* ------------------------------------------------------------------ */
/* Interface adapters                                                  */
/* ------------------------------------------------------------------ */

it_status_t it_ia_create(const char *name, uint32_t major_version,
			 uint32_t minor_version, it_ia_handle_t *ia_handle)
{
	struct itapi_ia *ia;
	struct ual_device *d;
	struct ual *u = NULL;
	int err;

	if (!name || !*name)
		return IT_FAIL0(IT_ERR_INVALID_NAME, "no interface name");
	if (!ia_handle)
		return IT_FAIL0(IT_ERR_FAULT, "ia_handle is NULL");
	/* This library implements 2.1 and the 2.0 and 1.0 it contains. */
	if (major_version < 1 || major_version > ITAPI_MAJOR)
		return IT_FAIL0(IT_ERR_INVALID_MAJOR_VERSION,
				"major version %u: this library speaks 1 and 2",
				major_version);
	if ((major_version == 1 && minor_version > 0) ||
	    (major_version == ITAPI_MAJOR && minor_version > ITAPI_MINOR))
		return IT_FAIL0(IT_ERR_INVALID_MINOR_VERSION,
				"version %u.%u: the newest here is %d.%d",
				major_version, minor_version, ITAPI_MAJOR,
				ITAPI_MINOR);
	err = ual_open(&u);
	if (err)
		return IT_FAIL0(itapi_status(err, ITAPI_CTX_ANY),
				"the access layer did not open: %s",
				g_strerror(-err));
	d = ual_device_lookup(u, name);
	if (!d) {
		ual_close(u);
		return IT_FAIL0(IT_ERR_INVALID_NAME,
				"no interface \"%s\" (it_interface_list names them)",
				name);
	}
	/* Takes what only a user needs: soft-RoCE binds its UDP port here,
	 * so listing devices binds nothing. Held by another process: the
	 * device is busy, not misnamed; a caller moves on to the next. */
	err = ual_device_open(d);
	if (err) {
		ual_device_put(d);
		ual_close(u);
		return IT_FAIL0(err == -EADDRINUSE ? IT_ERR_RESOURCES :
				itapi_status(err, ITAPI_CTX_IA),
				"%s: cannot open: %s", name, g_strerror(-err));
	}
	err = cm_open(u);
	if (err) {
		ual_device_put(d);
		ual_close(u);
		return IT_FAIL0(itapi_status(err, ITAPI_CTX_ANY),
				"the connection manager did not start: %s",
				g_strerror(-err));
	}
	ia = g_new0(struct itapi_ia, 1);
	ia->u = u;
	ia->dev = d;
	ia->major = major_version;
	ia->minor = minor_version;
	ia->name = g_strdup(name);
	err = ual_device_query(d, &ia->attr);
	if (err) {
		cm_close();
		ual_device_put(d);
		ual_close(u);
		g_free(ia->name);
		g_free(ia);
		return IT_FAIL0(itapi_status(err, ITAPI_CTX_IA),
				"%s: query_device: %s", name, g_strerror(-err));
	}
	ia->transport = ual_device_transport(d);
	g_mutex_init(&ia->lock);
	g_rw_lock_init(&ia->qpn_lock);
	ia->children = g_ptr_array_new();
	ia->qpn_eps = g_hash_table_new(g_direct_hash, g_direct_equal);
	itapi_obj_init(&ia->obj, IT_HANDLE_TYPE_IA, ia, "IA");
	snprintf(ia->obj.prefix, sizeof(ia->obj.prefix), "IA %s:", name);
	ia->async_sub = ual_async_subscribe(u, d, ia_async_event, ia);
	itapi_handle_add(&ia->obj);
	itapi_debug(&ia->obj, "created, IT-API %u.%u", major_version,
		    minor_version);
	*ia_handle = (it_ia_handle_t)ia;
	return IT_SUCCESS;
}

/* it_ia_free takes everything down, children before parents. */
static const it_handle_type_enum_t free_order[] = {
	IT_HANDLE_TYPE_EP,  IT_HANDLE_TYPE_LISTEN, IT_HANDLE_TYPE_UD_SVC_REQ,
	IT_HANDLE_TYPE_ADDR, IT_HANDLE_TYPE_RMR,   IT_HANDLE_TYPE_LMR,
	IT_HANDLE_TYPE_SRQ, IT_HANDLE_TYPE_PZ,
};

static struct itapi_obj *first_child(struct itapi_ia *ia,
				     it_handle_type_enum_t type, int aevd)
{
	struct itapi_obj *found = NULL;

	g_mutex_lock(&ia->lock);
	for (guint i = 0; i < ia->children->len && !found; i++) {
		struct itapi_obj *o = ia->children->pdata[i];

		if (o->type != type)
			continue;
		if (aevd >= 0 && ((struct itapi_evd *)o)->is_aevd != aevd)
			continue;
		found = o;
	}
	g_mutex_unlock(&ia->lock);
	return found;
}

it_status_t it_ia_free(it_ia_handle_t ia_handle)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	struct itapi_obj *o;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	itapi_handle_del(&ia->obj);
	ual_async_unsubscribe(ia->u, ia->async_sub);
	for (size_t i = 0; i < G_N_ELEMENTS(free_order); i++) {
		while ((o = first_child(ia, free_order[i], -1))) {
			switch (o->type) {
			case IT_HANDLE_TYPE_EP:
				itapi_ep_destroy((struct itapi_ep *)o);
				break;
			case IT_HANDLE_TYPE_LISTEN:
				itapi_listen_destroy((struct itapi_listen *)o);
				break;
			case IT_HANDLE_TYPE_ADDR:
				itapi_addr_destroy((struct itapi_addr *)o);
				break;
			case IT_HANDLE_TYPE_UD_SVC_REQ:
				itapi_ud_svc_destroy((struct itapi_ud_svc *)o);
				break;
			case IT_HANDLE_TYPE_RMR:
				itapi_rmr_destroy((struct itapi_rmr *)o);
				break;
			case IT_HANDLE_TYPE_LMR:
				itapi_lmr_destroy((struct itapi_lmr *)o);
				break;
			case IT_HANDLE_TYPE_SRQ:
				itapi_srq_destroy((struct itapi_srq *)o);
				break;
			case IT_HANDLE_TYPE_PZ:
				itapi_pz_destroy((struct itapi_pz *)o);
				break;
			default:
				itapi_ia_del_child(ia, o);
				break;
			}
		}
	}
	/* Simple EVDs before the aggregate ones they feed. */
	while ((o = first_child(ia, IT_HANDLE_TYPE_EVD, 0)))
		itapi_evd_destroy((struct itapi_evd *)o);
	while ((o = first_child(ia, IT_HANDLE_TYPE_EVD, 1)))
		itapi_evd_destroy((struct itapi_evd *)o);

	itapi_debug(&ia->obj, "freed");
	cm_close();
	ual_device_put(ia->dev);
	ual_close(ia->u);
	g_ptr_array_free(ia->children, TRUE);
	g_hash_table_destroy(ia->qpn_eps);
	g_rw_lock_clear(&ia->qpn_lock);
	g_mutex_clear(&ia->lock);
	g_free(ia->name);
	g_free(ia);
	return IT_SUCCESS;
}

static size_t pdata_cap(struct itapi_ia *ia, enum cm_pdata_op op)
{
	return MIN((size_t)cm_max_private_data(ia->dev, op),
		   (size_t)IT_MAX_PRIV_DATA);
}

static void fill_spigot(struct itapi_ia *ia, size_t id, it_spigot_info_t *s)
{
	struct rnicpi_port_attr pa = { 0 };
	GArray *addrs;
	size_t n = 0;

	s->spigot_id = id;
	ual_device_query_port(ia->dev, (uint8_t)(id + 1), &pa);
	s->spigot_online = pa.state == RNICPI_PORT_ACTIVE ? IT_TRUE : IT_FALSE;
	s->max_rc_send_len = ia->attr.max_msg_size;
	s->max_rc_rdma_len = ia->attr.max_msg_size;
	if (ia->attr.caps & RNICPI_DEV_CAP_UD)
		/* A UD message is one packet of the path MTU (IBA 9.7.7),
		 * 256 << (code - 1) bytes. */
		s->max_ud_send_len = pa.active_mtu ?
					     256u << (pa.active_mtu - 1) :
					     0;
	if (ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM) {
		/* librdmacm: its TCP port space (on IB/RoCE as service IDs
		 * 0x0106 << 16 + port too); no listener for one peer port. */
		it_conn_qual_type_t q = IT_IANA_PORT;

		if (ia->transport != RNICPI_TRANSPORT_IWARP)
			q = (it_conn_qual_type_t)(q | IT_IB_SERVICEID);
		s->passive_side_conn_qual = q;
		s->active_side_conn_qual = q;
	} else if (ia->transport == RNICPI_TRANSPORT_IWARP) {
		s->active_side_conn_qual = IT_IANA_PORT | IT_IANA_LR_PORT;
		s->passive_side_conn_qual = IT_IANA_PORT | IT_IANA_LR_PORT;
	} else {
		/* IANA ports are rdma_cm's TCP port space (0x0106 << 16),
		 * where the IB CM runs (a device with QP1). */
		it_conn_qual_type_t q = IT_IB_SERVICEID;

		if (ia->attr.caps & RNICPI_DEV_CAP_GSI)
			q = (it_conn_qual_type_t)(q | IT_IANA_PORT);
		/* IT_IANA_LR_PORT: the active side's port is rdma_cm's
		 * source port (connecting), and a listener takes that one
		 * only. */
		if (q & IT_IANA_PORT)
			q = (it_conn_qual_type_t)(q | IT_IANA_LR_PORT);
		s->passive_side_conn_qual = q;
		s->active_side_conn_qual = q;
	}
	addrs = cm_device_addrs(ia->dev);
	s->net_addr = g_new0(it_net_addr_t, MAX(addrs->len, 1));
	for (guint i = 0; i < addrs->len; i++) {
		const struct sockaddr_storage *ss =
			&g_array_index(addrs, struct sockaddr_storage, i);

		if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
			continue;
		itapi_sockaddr_to_net_addr(ss, &s->net_addr[n]);
		if (ia->transport != RNICPI_TRANSPORT_IWARP)
			it_convert_net_addr(&s->net_addr[n], IT_IB_GID,
					    &s->net_addr[n]);
		n++;
	}
	s->num_net_addr = n;
	g_array_free(addrs, TRUE);
}

it_status_t it_ia_query(it_ia_handle_t ia_handle, it_ia_info_t **ia_info)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	const struct rnicpi_device_attr *a;
	it_ia_info_t *info;
	unsigned int major = 0, minor = 0;
	it_status_t st;
	int err;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!ia_info)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT, "ia_info is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&ia->obj, st, "the device failed");
	err = ual_device_query(ia->dev, &ia->attr);
	if (err)
		return IT_FAIL_ERRNO(&ia->obj, err, ITAPI_CTX_IA,
				     "query_device: %s", g_strerror(-err));
	a = &ia->attr;
	info = g_new0(it_ia_info_t, 1);
	info->ia_name = g_strdup(ia->name);
	info->api_major_version = ITAPI_MAJOR;
	info->api_minor_version = ITAPI_MINOR;
	sscanf(PACKAGE_VERSION, "%u.%u", &major, &minor);
	info->sw_major_version = major;
	info->sw_minor_version = minor;
	info->transport_type = it_transport(ia->transport);
	if (ia->transport == RNICPI_TRANSPORT_IWARP) {
		/* No registry of iWARP vendor ids: say which provider and
		 * firmware, as text. */
		char *vid = g_strdup_printf(
			"%s %s", ual_provider_name(ual_device_provider(ia->dev)),
			a->fw_ver);

		info->vendor.iwarp.valid_vid = IT_TRUE;
		g_strlcpy((char *)info->vendor.iwarp.vid, vid,
			  sizeof(info->vendor.iwarp.vid));
		g_free(vid);
	} else {
		info->vendor.ib.vendor = a->vendor_id & 0xffffff;
		info->vendor.ib.device = (uint16_t)a->vendor_part_id;
		info->vendor.ib.revision = a->hw_ver;
	}
	/* Software providers copy through the CPU: a cache line. */
	info->dto_alignment_hint = 64;
	info->supported_service_types =
		((a->caps & RNICPI_DEV_CAP_RC) ? IT_RC_SERVICE : 0) |
		((a->caps & RNICPI_DEV_CAP_UD) ? IT_UD_SERVICE : 0);
	info->ep_work_queues_resizable =
		(a->caps & RNICPI_DEV_CAP_RESIZE_QP) ? IT_TRUE : IT_FALSE;
	/* The InfiniBand CM holds the RTU for the active consumer; MPA has
	 * no such step. */
	info->three_way_handshake_support =
		ia->transport == RNICPI_TRANSPORT_IWARP ||
				(a->caps & RNICPI_DEV_CAP_NATIVE_CM) ?
			IT_FALSE :
			IT_TRUE;
	info->connect_private_data_len = pdata_cap(ia, CM_PDATA_CONNECT);
	info->accept_private_data_len = pdata_cap(ia, CM_PDATA_ACCEPT);
	info->reject_private_data_len = pdata_cap(ia, CM_PDATA_REJECT);
	info->disconnect_private_data_len =
		pdata_cap(ia, CM_PDATA_DISCONNECT);
	info->ud_req_private_data_len = 0;
	info->ud_rep_private_data_len = 0;
	info->private_data_support = info->connect_private_data_len ?
					     IT_TRUE : IT_FALSE;
	info->max_message_size_support = IT_TRUE;
	info->ird_ord_ia_support = IT_TRUE;
	/* iWARP: MPA without RFC 6581's IRD/ORD header (revision 1); not
	 * through librdmacm, whose iw_cm sends the header whatever it is
	 * asked (a native-CM device). */
	info->ird_ord_suppressible =
		ia->transport == RNICPI_TRANSPORT_IWARP &&
				!(a->caps & RNICPI_DEV_CAP_NATIVE_CM) ?
			IT_TRUE :
			IT_FALSE;
	info->spigot_online_support = IT_TRUE;
	info->spigot_offline_support = IT_TRUE;
	info->num_spigots = MAX(a->phys_port_cnt, 1);
	info->spigot_info = g_new0(it_spigot_info_t, info->num_spigots);
	for (size_t i = 0; i < info->num_spigots; i++)
		fill_spigot(ia, i, &info->spigot_info[i]);
	g_mutex_lock(&ia->lock);
	info->affiliated_err_evd = (it_evd_handle_t)ia->aff_evd;
	info->unaffiliated_err_evd = (it_evd_handle_t)ia->unaff_evd;
	g_mutex_unlock(&ia->lock);
	info->srq_support = (a->caps & RNICPI_DEV_CAP_SRQ) ? IT_TRUE : IT_FALSE;
	/* EP high watermarks count the receives an EP takes from its SRQ. */
	info->hard_hi_watermark_support =
		(a->caps & RNICPI_DEV_CAP_SRQ) ? IT_TRUE : IT_FALSE;
	info->soft_hi_watermark_support = info->hard_hi_watermark_support;
	/* RNICPI_SRQ_MAX_WR in modify_srq (siw, rxe; not the test provider,
	 * nor verbs devices: the kernel's siw, cxgb4 and qedr refuse it). */
	info->srq_resizable = (a->caps & RNICPI_DEV_CAP_SRQ) &&
					      (a->caps & RNICPI_DEV_CAP_RESIZE_SRQ) ?
				      IT_TRUE :
				      IT_FALSE;
	info->extended_iwarp_qp_states = IT_FALSE;
	info->socket_conversion_support =
		ia->transport == RNICPI_TRANSPORT_IWARP &&
				(a->caps & RNICPI_DEV_CAP_IWARP_CM) ?
			IT_TRUE :
			IT_FALSE;
	info->rdma_read_ord_increasable = IT_FALSE;
	info->rdma_read_ird_modifiable = IT_FALSE;
	info->rmr_types_supported =
		(it_rmr_type_t)(((a->caps & RNICPI_DEV_CAP_MW_TYPE_2) ?
					 IT_RMR_TYPE_NARROW : 0) |
				((a->caps & RNICPI_DEV_CAP_MW_TYPE_1) ?
					 IT_RMR_TYPE_WIDE : 0));
	info->addr_mode_relative_support =
		(a->caps & RNICPI_DEV_CAP_ZERO_BASED) ? IT_TRUE : IT_FALSE;
	/* iWARP: a Read Response is a tagged write into the sink STag, which
	 * therefore needs remote write rights (RFC 5040 §4.4). */
	info->rdma_read_requires_remote_write =
		ia->transport == RNICPI_TRANSPORT_IWARP ? IT_TRUE : IT_FALSE;
	info->ep_rdma_enables_modifiable = IT_TRUE;
	info->rdma_read_local_extensions =
		(a->caps & RNICPI_DEV_CAP_READ_SINK_MW) ? IT_TRUE : IT_FALSE;
	info->dto_evd_overflow_detection = IT_TRUE;
	info->atomic_support = (a->caps & RNICPI_DEV_CAP_ATOMIC) &&
					       a->atomic_cap != RNICPI_ATOMIC_NONE ?
				       IT_TRUE :
				       IT_FALSE;
	/* it_lmr_link is a REG_MR, it_lmr_unlink a LOCAL_INV. */
	info->lmr_link_support =
		(a->caps & RNICPI_DEV_CAP_FAST_REG) &&
				(a->caps & RNICPI_DEV_CAP_LOCAL_INV) ?
			IT_TRUE :
			IT_FALSE;
	info->direct_lmr_handle_support = IT_FALSE;
	info->direct_lmr_handle = NULL;
	info->post_send_unlink_remote_support =
		(a->caps & RNICPI_DEV_CAP_SEND_INV) ? IT_TRUE : IT_FALSE;
	info->narrow_rmr_unlink_support =
		(a->caps & RNICPI_DEV_CAP_MW_TYPE_2) ? IT_TRUE : IT_FALSE;
	info->wide_rmr_unlink_support =
		(a->caps & RNICPI_DEV_CAP_MW_TYPE_1) ? IT_TRUE : IT_FALSE;
	info->unlink_fence_support = IT_TRUE;
	info->iobl_types_supported =
		(it_iobl_type_t)(IT_IOBL_PAGE_LIST | IT_IOBL_BLOCK_LIST |
				 IT_IOBL_VE_PAGE_LIST);
	*ia_info = info;
	return IT_SUCCESS;
}

void it_ia_info_free(it_ia_info_t *ia_info)
{
	if (!ia_info)
		return;
	for (size_t i = 0; ia_info->spigot_info && i < ia_info->num_spigots;
	     i++)
		g_free(ia_info->spigot_info[i].net_addr);
	g_free(ia_info->spigot_info);
	g_free(ia_info->ia_name);
	g_free(ia_info);
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

it_status_t it_get_pathinfo(it_ia_handle_t ia_handle, size_t spigot_id,
			    const it_net_addr_t *net_addr, size_t *num_paths,
			    size_t *total_paths, it_path_t *paths)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	struct sockaddr_storage dst;
	struct cm_route r;
	char buf[64];
	size_t room;
	int err;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!itapi_ia_spigot_ok(ia, spigot_id))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_SPIGOT,
			       "spigot %zu: the IA has %u", spigot_id,
			       MAX(ia->attr.phys_port_cnt, 1));
	if (!net_addr || !num_paths || !total_paths)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT,
			       "net_addr, num_paths or total_paths is NULL");
	room = *num_paths;
	if (room && !paths)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT,
			       "paths is NULL for %zu paths", room);
	if (itapi_net_addr_to_sockaddr(net_addr, &dst))
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_NETADDR,
			       "address type %d is not IPv4, IPv6 or a GID",
			       net_addr->addr_type);
	*num_paths = 0;
	*total_paths = 0;
	err = cm_resolve((void *)&dst, NULL, ia->transport, &r);
	if (err) {
		itapi_debug(&ia->obj, "no path to %s: %s",
			    itapi_sockaddr_str(&dst, buf, sizeof(buf)),
			    g_strerror(-err));
		return IT_SUCCESS;
	}
	if (r.device != ia->dev) {
		g_info("%s %s is reached through %s, %s; no path from this IA",
		       ia->obj.prefix,
		       itapi_sockaddr_str(&dst, buf, sizeof(buf)), r.ifname,
		       r.device ? ual_device_name(r.device) :
				  "which has no RDMA device");
		if (r.device)
			ual_device_put(r.device);
		return IT_SUCCESS;
	}
	ual_device_put(r.device);
	*total_paths = 1;
	if (room) {
		itapi_path_from_sockaddrs(ia, spigot_id, &r.src, &dst,
					  &paths[0]);
		paths[0].timeout = (uint64_t)cm_default_timeout_ms() * 1000;
		*num_paths = 1;
	}
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Protection zones                                                    */
/* ------------------------------------------------------------------ */

it_status_t it_pz_create(it_ia_handle_t ia_handle, it_pz_handle_t *pz_handle)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);
	struct itapi_pz *pz;
	struct ual_pd *pd;
	it_status_t st;
	int err;

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!pz_handle)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT, "pz_handle is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&ia->obj, st, "the device failed");
	err = ual_pd_alloc(ia->dev, &pd);
	if (err)
		return IT_FAIL_ERRNO(&ia->obj, err, ITAPI_CTX_PZ,
				     "alloc_pd: %s", g_strerror(-err));
	pz = g_new0(struct itapi_pz, 1);
	itapi_obj_init(&pz->obj, IT_HANDLE_TYPE_PZ, ia, NULL);
	pz->pd = pd;
	itapi_ia_add_child(ia, &pz->obj);
	*pz_handle = (it_pz_handle_t)pz;
	return IT_SUCCESS;
}

void itapi_pz_destroy(struct itapi_pz *pz)
{
	int err = ual_pd_free(pz->pd);

	if (err)
		g_warning("%s dealloc_pd at IA free: %s", pz->obj.prefix,
			  g_strerror(-err));
	itapi_ia_del_child(pz->obj.ia, &pz->obj);
	g_free(pz);
}

it_status_t it_pz_free(it_pz_handle_t pz_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	err = ual_pd_free(pz->pd);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_PZ,
				     "objects still use it");
	itapi_ia_del_child(pz->obj.ia, &pz->obj);
	g_free(pz);
	return IT_SUCCESS;
}

it_status_t it_pz_query(it_pz_handle_t pz_handle, it_pz_param_mask_t mask,
			it_pz_param_t *params)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	if (mask & ~(unsigned int)(IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT, "params is NULL");
	if (mask & (IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA))
		params->ia = (it_ia_handle_t)pz->obj.ia;
	return IT_SUCCESS;
}
