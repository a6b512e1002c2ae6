/* SPDX-License-Identifier: MIT */
/*
 * itapi_ud.c - unreliable datagram endpoints, address handles, and the UD
 * service request calls.
 *
 * UD works on any provider with RNICPI_DEV_CAP_UD (InfiniBand transport:
 * soft-RoCE, or a test provider); iWARP has no datagram service and
 * answers IT_ERR_OP_NOT_SUPPORTED. Service ID resolution (the
 * it_ud_service_* calls) is the InfiniBand CM's SIDR (cm/cm_ib_sidr.c,
 * or rdma_cm's UDP port space on a verbs device, cm/cm_native_sidr.c):
 * a request handle sends SIDR_REQ, the listener's EVD gets the request,
 * it_ud_service_reply answers with SIDR_REP.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "itapi/itapi_priv.h"
#include "it_ext.h"

static bool ia_has_ud(struct itapi_ia *ia)
{
	return ia->transport != RNICPI_TRANSPORT_IWARP &&
	       (ia->attr.caps & RNICPI_DEV_CAP_UD);
}

/* ------------------------------------------------------------------ */
/* Endpoints                                                           */
/* ------------------------------------------------------------------ */

/* RESET -> INIT -> RTR -> RTS (IBA 10.3.1); a UD QP needs no peer. */
static int ud_qp_up(struct itapi_ep *ep, uint32_t qkey)
{
	struct rnicpi_qp_attr a = { 0 };
	int err;

	a.qp_state = RNICPI_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)(ep->spigot_id + 1);
	a.qkey = qkey;
	err = ual_qp_modify(ep->qp, &a,
			    RNICPI_QP_STATE | RNICPI_QP_PKEY_INDEX |
				    RNICPI_QP_PORT | RNICPI_QP_QKEY);
	if (err)
		return err;
	a.qp_state = RNICPI_QPS_RTR;
	err = ual_qp_modify(ep->qp, &a, RNICPI_QP_STATE);
	if (err)
		return err;
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = 0;
	return ual_qp_modify(ep->qp, &a, RNICPI_QP_STATE | RNICPI_QP_SQ_PSN);
}

it_status_t it_ep_ud_create(it_pz_handle_t pz_handle,
			    it_evd_handle_t request_sevd_handle,
			    it_evd_handle_t recv_sevd_handle,
			    const it_ep_attributes_t *ep_attr,
			    size_t spigot_id, it_ep_handle_t *ep_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	struct itapi_evd *req, *recv;
	struct itapi_ia *ia;
	struct itapi_ep *ep;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	ia = pz->obj.ia;
	if (!ep_attr || !ep_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT,
			       "ep_attr or ep_handle is NULL");
	if (!ia_has_ud(ia))
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "no datagram service on this IA%s",
			       ia->transport == RNICPI_TRANSPORT_IWARP ?
				       " (iWARP has none)" :
				       "");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	if (!itapi_ia_spigot_ok(ia, spigot_id))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_SPIGOT, "spigot %zu",
			       spigot_id);
	req = itapi_dto_evd(ia, request_sevd_handle);
	if (!req)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_REQ_EVD,
			       "%p is not a DTO SEVD of this IA",
			       (void *)request_sevd_handle);
	recv = itapi_dto_evd(ia, recv_sevd_handle);
	if (!recv)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_RECV_EVD,
			       "%p is not a DTO SEVD of this IA",
			       (void *)recv_sevd_handle);
	st = itapi_ep_create(pz, IT_UD_SERVICE, req, recv, NULL, NULL, 0,
			     ep_attr, spigot_id, &ep);
	if (st)
		return st;
	err = ud_qp_up(ep, ep_attr->srv.ud.ep_info.ud_ep_key);
	if (err) {
		itapi_handle_del(&ep->obj);
		itapi_ep_destroy(ep);
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_EP,
				     "bringing the UD QP up: %s",
				     g_strerror(-err));
	}
	ep->attr.srv.ud.ep_info.ud_ep_id = ep->qp_num;
	ep->state.ud = IT_EP_STATE_UD_OPERATIONAL;
	*ep_handle = (it_ep_handle_t)ep;
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                     */
/* ------------------------------------------------------------------ */

/* The source GID index of @gid on @port, or -1. */
static int sgid_index(struct itapi_ia *ia, uint8_t port,
		      const it_ib_gid_t *gid)
{
	struct rnicpi_port_attr pa;
	struct rnicpi_gid_entry e;

	if (ual_device_query_port(ia->dev, port, &pa))
		return -1;
	for (uint32_t i = 0; i < pa.gid_tbl_len; i++)
		if (ual_device_query_gid(ia->dev, port, i, &e) == 0 &&
		    memcmp(e.gid.raw, gid->s6_addr, 16) == 0)
			return (int)i;
	return -1;
}

static it_status_t path_to_ah(struct itapi_pz *pz, const it_path_t *p,
			      struct rnicpi_ah_attr *ah)
{
	const it_ib_net_endpoint_t *ib = &p->remote.ib;
	static const it_ib_gid_t zero;
	int idx = 0;

	if (!itapi_ia_spigot_ok(pz->obj.ia, p->spigot_id))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_SPIGOT, "spigot %zu",
			       p->spigot_id);
	memset(ah, 0, sizeof(*ah));
	ah->port_num = (uint8_t)(p->spigot_id + 1);
	if (memcmp(&ib->local_port_gid, &zero, sizeof(zero)) != 0) {
		idx = sgid_index(pz->obj.ia, ah->port_num,
				 &ib->local_port_gid);
		if (idx < 0)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_SOURCE_PATH,
				       "the local GID of the path is not one of this spigot's");
	}
	ah->sgid_index = (uint8_t)idx;
	memcpy(ah->dgid.raw, ib->remote_port_gid.s6_addr, 16);
	ah->dlid = ib->remote_port_lid;
	ah->sl = ib->sl;
	ah->flow_label = ib->flow_label;
	ah->traffic_class = ib->traffic_class;
	/* A hop limit of 0 would not leave the host (RFC 8200). */
	ah->hop_limit = ib->hop_limit ? ib->hop_limit : 64;
	ah->is_global = pz->obj.ia->transport == RNICPI_TRANSPORT_ROCE ||
					!ib->subnet_local ?
				1 :
				0;
	return IT_SUCCESS;
}

it_status_t it_address_handle_create(it_pz_handle_t pz_handle,
				     const it_path_t *destination_path,
				     it_ah_flags_t ah_flags,
				     it_addr_handle_t *addr_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	struct rnicpi_ah_attr aa;
	struct itapi_addr *a;
	struct ual_ah *ah;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	if (!destination_path || !addr_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT,
			       "destination_path or addr_handle is NULL");
	if (!ia_has_ud(pz->obj.ia))
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "address handles need a datagram service");
	if ((unsigned int)ah_flags & ~(unsigned int)IT_AH_PATH_COMPLETE)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)ah_flags);
	st = path_to_ah(pz, destination_path, &aa);
	if (st)
		return st;
	err = ual_ah_create(pz->pd, &aa, &ah);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_AH,
				     "create_ah: %s", g_strerror(-err));
	a = g_new0(struct itapi_addr, 1);
	itapi_obj_init(&a->obj, IT_HANDLE_TYPE_ADDR, pz->obj.ia, NULL);
	a->pz = pz;
	a->ah = ah;
	a->path = *destination_path;
	itapi_ia_add_child(pz->obj.ia, &a->obj);
	*addr_handle = (it_addr_handle_t)a;
	return IT_SUCCESS;
}

void itapi_addr_destroy(struct itapi_addr *a)
{
	int err = ual_ah_destroy(a->ah);

	if (err)
		g_warning("%s destroy_ah: %s", a->obj.prefix, g_strerror(-err));
	itapi_ia_del_child(a->obj.ia, &a->obj);
	g_free(a);
}

it_status_t it_address_handle_free(it_addr_handle_t addr_handle)
{
	struct itapi_addr *a = ITAPI_LOOKUP(addr_handle, struct itapi_addr,
					    IT_HANDLE_TYPE_ADDR);
	int err;

	if (!a)
		return IT_FAIL0(IT_ERR_INVALID_AH, "AH handle %p is not live",
				(void *)addr_handle);
	err = ual_ah_destroy(a->ah);
	if (err)
		return IT_FAIL_ERRNO(&a->obj, err, ITAPI_CTX_AH,
				     "destroy_ah: %s", g_strerror(-err));
	itapi_ia_del_child(a->obj.ia, &a->obj);
	g_free(a);
	return IT_SUCCESS;
}

it_status_t it_address_handle_query(it_addr_handle_t addr_handle,
				    it_addr_param_mask_t mask,
				    it_addr_param_t *params)
{
	struct itapi_addr *a = ITAPI_LOOKUP(addr_handle, struct itapi_addr,
					    IT_HANDLE_TYPE_ADDR);
	bool all = mask & IT_ADDR_PARAM_ALL;

	if (!a)
		return IT_FAIL0(IT_ERR_INVALID_AH, "AH handle %p is not live",
				(void *)addr_handle);
	if ((unsigned int)mask & ~0xfu)
		return IT_FAIL(&a->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&a->obj, IT_ERR_FAULT, "params is NULL");
	if (all || (mask & IT_ADDR_PARAM_IA))
		params->ia = (it_ia_handle_t)a->obj.ia;
	if (all || (mask & IT_ADDR_PARAM_PZ))
		params->pz = (it_pz_handle_t)a->pz;
	if (all || (mask & IT_ADDR_PARAM_PATH))
		params->path = a->path;
	return IT_SUCCESS;
}

it_status_t it_address_handle_modify(it_addr_handle_t addr_handle,
				     it_addr_param_mask_t mask,
				     const it_addr_param_t *params)
{
	struct itapi_addr *a = ITAPI_LOOKUP(addr_handle, struct itapi_addr,
					    IT_HANDLE_TYPE_ADDR);
	struct rnicpi_ah_attr aa;
	struct ual_ah *ah;
	it_status_t st;
	int err;

	if (!a)
		return IT_FAIL0(IT_ERR_INVALID_AH, "AH handle %p is not live",
				(void *)addr_handle);
	if (mask != IT_ADDR_PARAM_PATH)
		return IT_FAIL(&a->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x: only the path changes",
			       (unsigned int)mask);
	if (!params)
		return IT_FAIL(&a->obj, IT_ERR_FAULT, "params is NULL");
	st = path_to_ah(a->pz, &params->path, &aa);
	if (st)
		return st;
	/* RNICPI has no modify_ah: a new handle behind the same one. */
	err = ual_ah_create(a->pz->pd, &aa, &ah);
	if (err)
		return IT_FAIL_ERRNO(&a->obj, err, ITAPI_CTX_AH,
				     "create_ah: %s", g_strerror(-err));
	err = ual_ah_destroy(a->ah);
	if (err)
		g_warning("%s destroy_ah of the old path: %s", a->obj.prefix,
			  g_strerror(-err));
	a->ah = ah;
	a->path = params->path;
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Datagrams                                                           */
/* ------------------------------------------------------------------ */

/* A datagram; with @imm, a UD Send with immediate data *@imm. */
static it_status_t do_sendto(it_ep_handle_t ep_handle,
			     const it_lmr_triplet_t *local_segments,
			     size_t num_segments, it_dto_cookie_t cookie,
			     it_dto_flags_t dto_flags,
			     const it_dg_remote_ep_addr_t *remote_ep_addr,
			     const uint32_t *imm, const char *op)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	const unsigned int ok = IT_COMPLETION_FLAG | IT_NOTIFY_FLAG |
				IT_SOLICITED_WAIT_FLAG | IT_COALESCE_WR_FLAG;
	struct rnicpi_sge sge[16];
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	struct rnicpi_port_attr pa;
	struct itapi_addr *a;
	uint64_t total = 0, max;
	it_status_t st;

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP,
				"%s: EP handle %p is not live", op,
				(void *)ep_handle);
	if (ep->service != IT_UD_SERVICE)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			       "%s on an RC endpoint", op);
	if (!remote_ep_addr)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT,
			       "%s: remote_ep_addr is NULL", op);
	if (remote_ep_addr->type != IT_DG_TYPE_IB_UD)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_AH,
			       "%s: address type %d", op,
			       (int)remote_ep_addr->type);
	a = ITAPI_LOOKUP(remote_ep_addr->addr.ud.addr, struct itapi_addr,
			 IT_HANDLE_TYPE_ADDR);
	if (!a || a->obj.ia != ep->obj.ia)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_AH,
			       "%s: AH handle %p is not live", op,
			       (void *)remote_ep_addr->addr.ud.addr);
	if ((unsigned int)dto_flags & ~ok)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "%s: flags 0x%x do not apply to a datagram",
			       op, (unsigned int)dto_flags);
	if (num_segments > ep->attr.max_send_segments ||
	    num_segments > G_N_ELEMENTS(sge))
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_NUM_SEGMENTS,
			       "%s: %zu segments, the EP takes %zu", op,
			       num_segments,
			       ep->attr.max_send_segments);
	if (num_segments && !local_segments)
		return IT_FAIL(&ep->obj, IT_ERR_FAULT,
			       "%s: local_segments is NULL", op);
	for (size_t i = 0; i < num_segments; i++) {
		struct itapi_lmr *lmr = ITAPI_LOOKUP(local_segments[i].lmr,
						     struct itapi_lmr,
						     IT_HANDLE_TYPE_LMR);

		if (!lmr || lmr->obj.ia != ep->obj.ia)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LMR,
				       "%s: segment %zu: LMR %p is not live",
				       op, i, (void *)local_segments[i].lmr);
		if ((uint64_t)local_segments[i].length > UINT32_MAX)
			return IT_FAIL(&ep->obj, IT_ERR_INVALID_LENGTH,
				       "%s: segment %zu: over 4 GiB", op, i);
		sge[i].addr = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
				      (uint64_t)local_segments[i].addr.rel :
				      (uint64_t)(uintptr_t)
					      local_segments[i].addr.abs;
		sge[i].length = (uint32_t)local_segments[i].length;
		sge[i].lkey = ual_mr_lkey(lmr->mr);
		total += local_segments[i].length;
	}
	/* One datagram is one packet of the path MTU (IBA 9.7.7). */
	if (ual_device_query_port(ep->obj.ia->dev,
				  (uint8_t)(ep->spigot_id + 1), &pa) == 0 &&
	    pa.active_mtu) {
		max = 256u << (pa.active_mtu - 1);
		if (total > max)
			return IT_FAIL(&ep->obj, IT_ERR_PAYLOAD_SIZE,
				       "%s: %llu bytes; a datagram holds %llu",
				       op, (unsigned long long)total,
				       (unsigned long long)max);
	}
	st = itapi_send_opcode(ep, imm, &wr, op);
	if (st)
		return st;
	wr.sg_list = sge;
	wr.num_sge = (uint32_t)num_segments;
	wr.send_flags = ((dto_flags & IT_COMPLETION_FLAG) ?
				 RNICPI_SEND_SIGNALED :
				 0) |
			((dto_flags & IT_SOLICITED_WAIT_FLAG) ?
				 RNICPI_SEND_SOLICITED :
				 0) |
			((dto_flags & IT_COALESCE_WR_FLAG) ? RNICPI_SEND_MORE :
							     0);
	wr.wr.ud.ah = ual_ah_rnicpi(a->ah);
	wr.wr.ud.remote_qpn = remote_ep_addr->addr.ud.ep_info.ud_ep_id;
	wr.wr.ud.remote_qkey = remote_ep_addr->addr.ud.ep_info.ud_ep_key;
	tmpl.cookie = cookie;
	tmpl.event = IT_DTO_SEND_CMPL_EVENT;
	tmpl.flags = dto_flags;
	return itapi_post_sq(ep, &wr, &tmpl, op);
}

it_status_t it_post_sendto(it_ep_handle_t ep_handle,
			   const it_lmr_triplet_t *local_segments,
			   size_t num_segments, it_dto_cookie_t cookie,
			   it_dto_flags_t dto_flags,
			   const it_dg_remote_ep_addr_t *remote_ep_addr)
{
	return do_sendto(ep_handle, local_segments, num_segments, cookie,
			 dto_flags, remote_ep_addr, NULL, "it_post_sendto");
}

it_status_t hostrdma_post_sendto_imm(
	it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
	size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
	const it_dg_remote_ep_addr_t *remote_ep_addr, uint32_t imm_data)
{
	return do_sendto(ep_handle, local_segments, num_segments, cookie,
			 dto_flags, remote_ep_addr, &imm_data,
			 "hostrdma_post_sendto_imm");
}

it_status_t it_post_recvfrom(it_ep_handle_t ep_handle,
			     const it_lmr_triplet_t *local_segments,
			     size_t num_segments, it_dto_cookie_t cookie,
			     it_dto_flags_t dto_flags)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(ep_handle, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);

	if (!ep)
		return IT_FAIL0(IT_ERR_INVALID_EP, "EP handle %p is not live",
				(void *)ep_handle);
	if (ep->service != IT_UD_SERVICE)
		return IT_FAIL(&ep->obj, IT_ERR_INVALID_EP_TYPE,
			       "it_post_recvfrom on an RC endpoint: use it_post_recv");
	return itapi_post_recv_ep(ep, local_segments, num_segments, cookie,
				  dto_flags, "it_post_recvfrom");
}

/* ------------------------------------------------------------------ */
/* UD service requests (SIDR over the InfiniBand CM)                   */
/* ------------------------------------------------------------------ */

struct itapi_ud_svc {
	struct itapi_obj obj;
	struct itapi_evd *evd;
	it_conn_qual_t conn_qual;
	it_path_t path;
	unsigned char pdata[IT_MAX_PRIV_DATA];
	size_t pdata_len;
	GMutex lock;
	struct cm_sidr *cm;		/* the request under way */
	uint32_t requests;		/* how many were made */
};

/* The service ID a request names: an IANA port is rdma_cm's UDP port
 * space (0x0000000001110000 + port), as udaddy uses it. */
static uint64_t svc_sid(const it_conn_qual_t *q)
{
	if (q->type == IT_IANA_PORT)
		return 0x0000000001110000ull | ntohs(q->conn_qual.port);
	return be64toh(q->conn_qual.serviceid);
}

static void ud_svc_event(const struct cm_event *ev, void *data)
{
	struct itapi_ud_svc *u = data;
	it_ud_svc_reply_event_t *r;
	it_event_t out = { 0 };

	if (ev->type != CM_EV_SIDR_REPLY)
		return;
	r = &out.ud_svc_reply;
	r->event_number = IT_CM_MSG_UD_SERVICE_REPLY_EVENT;
	r->ud_svc = (it_ud_svc_req_handle_t)u;
	/* IT-API has no status for "no answer": the request was not
	 * granted. */
	r->status = ev->status ? IT_UD_SVC_REQ_REJECTED :
				 (it_ud_svc_req_status_t)ev->sidr_status;
	if (!ev->status && ev->sidr_status == IT_UD_SVC_EP_INFO_VALID) {
		r->ep_info.ud_ep_id = ev->qpn;
		r->ep_info.ud_ep_key = ev->qkey;
	}
	r->dst_path = u->path;
	if (ev->private_data_len) {
		memcpy(r->private_data, ev->private_data,
		       MIN(ev->private_data_len, (uint32_t)IT_MAX_PRIV_DATA));
		r->private_data_present = IT_TRUE;
	}
	itapi_debug(&u->obj, "reply: status %d (%d), QP %u", r->status,
		    ev->status, ev->qpn);
	itapi_evd_post(u->evd, &out, true);
}

it_status_t it_ud_service_request_handle_create(
	const it_conn_qual_t *conn_qual, it_evd_handle_t reply_evd,
	const it_path_t *destination_path, const unsigned char *private_data,
	size_t private_data_length, it_ud_svc_req_handle_t *ud_svc_handle)
{
	struct itapi_evd *evd = ITAPI_LOOKUP(reply_evd, struct itapi_evd,
					     IT_HANDLE_TYPE_EVD);
	struct itapi_ud_svc *u;
	struct itapi_ia *ia;

	if (!conn_qual || !destination_path || !ud_svc_handle)
		return IT_FAIL0(IT_ERR_FAULT,
				"conn_qual, destination_path or ud_svc_handle is NULL");
	if (!evd)
		return IT_FAIL0(IT_ERR_INVALID_EVD, "EVD handle %p is not live",
				(void *)reply_evd);
	if (evd->is_aevd || evd->stream != IT_CM_MSG_EVENT_STREAM)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_EVD_TYPE,
			       "replies go to a CM message SEVD");
	ia = evd->obj.ia;
	if (conn_qual->type != IT_IB_SERVICEID &&
	    conn_qual->type != IT_IANA_PORT)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_CONN_QUAL,
			       "UD service requests name an IB service ID or an IANA port");
	if (!svc_sid(conn_qual))
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_CONN_QUAL,
			       "service ID 0");
	if (private_data_length && !private_data)
		return IT_FAIL(&evd->obj, IT_ERR_FAULT, "private_data is NULL");
	if (private_data_length > IT_MAX_PRIV_DATA)
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_PDATA_LENGTH,
			       "%zu bytes of private data", private_data_length);
	if (ia->transport == RNICPI_TRANSPORT_IWARP ||
	    !(ia->attr.caps &
	      (RNICPI_DEV_CAP_GSI | RNICPI_DEV_CAP_NATIVE_SIDR)))
		return IT_FAIL(&evd->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "UD service ID resolution needs the InfiniBand CM (QP1) or a provider that resolves service IDs: this IA has neither");
	/* A provider's connection manager (rdma_cm) knows the UDP port
	 * space only: an IANA port, or its service IDs. */
	if ((ia->attr.caps & RNICPI_DEV_CAP_NATIVE_CM) &&
	    conn_qual->type == IT_IB_SERVICEID &&
	    (svc_sid(conn_qual) >> 16) != 0x0111u)
		return IT_FAIL(&evd->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "service ID 0x%016llx: this IA resolves rdma_cm's UDP port space only (0x0111 << 16 | port, or an IANA port)",
			       (unsigned long long)svc_sid(conn_qual));
	if (!itapi_ia_spigot_ok(ia, destination_path->spigot_id))
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_SPIGOT, "spigot %zu",
			       destination_path->spigot_id);
	if (IN6_IS_ADDR_UNSPECIFIED(
		    &destination_path->remote.ib.remote_port_gid))
		return IT_FAIL(&evd->obj, IT_ERR_INVALID_NETADDR,
			       "remote port GID ::");
	u = g_new0(struct itapi_ud_svc, 1);
	itapi_obj_init(&u->obj, IT_HANDLE_TYPE_UD_SVC_REQ, ia, "UDSVC");
	u->evd = evd;
	u->conn_qual = *conn_qual;
	u->path = *destination_path;
	if (private_data_length)
		memcpy(u->pdata, private_data, private_data_length);
	u->pdata_len = private_data_length;
	g_mutex_init(&u->lock);
	g_mutex_lock(&ia->lock);
	evd->users++;
	g_mutex_unlock(&ia->lock);
	itapi_ia_add_child(ia, &u->obj);
	*ud_svc_handle = (it_ud_svc_req_handle_t)u;
	return IT_SUCCESS;
}

void itapi_ud_svc_destroy(struct itapi_ud_svc *u)
{
	struct itapi_ia *ia = u->obj.ia;
	struct cm_sidr *cm;

	itapi_ia_del_child(ia, &u->obj);
	g_mutex_lock(&u->lock);
	cm = g_steal_pointer(&u->cm);
	g_mutex_unlock(&u->lock);
	cm_sidr_destroy(cm);
	g_mutex_lock(&ia->lock);
	u->evd->users--;
	g_mutex_unlock(&ia->lock);
	g_mutex_clear(&u->lock);
	g_free(u);
}

it_status_t it_ud_service_request_handle_free(
	it_ud_svc_req_handle_t ud_svc_handle)
{
	struct itapi_ud_svc *u = ITAPI_LOOKUP(ud_svc_handle,
					      struct itapi_ud_svc,
					      IT_HANDLE_TYPE_UD_SVC_REQ);

	if (!u)
		return IT_FAIL0(IT_ERR_INVALID_UD_SVC,
				"UD service request handle %p is not live",
				(void *)ud_svc_handle);
	itapi_ud_svc_destroy(u);
	return IT_SUCCESS;
}

it_status_t it_ud_service_request_handle_query(
	it_ud_svc_req_handle_t ud_svc_handle, it_ud_svc_req_param_mask_t mask,
	it_ud_svc_req_param_t *info)
{
	struct itapi_ud_svc *u = ITAPI_LOOKUP(ud_svc_handle,
					      struct itapi_ud_svc,
					      IT_HANDLE_TYPE_UD_SVC_REQ);
	bool all = mask & IT_UD_PARAM_ALL;

	if (!u)
		return IT_FAIL0(IT_ERR_INVALID_UD_SVC,
				"UD service request handle %p is not live",
				(void *)ud_svc_handle);
	if ((unsigned int)mask & ~0xffu)
		return IT_FAIL(&u->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!info)
		return IT_FAIL(&u->obj, IT_ERR_FAULT, "info is NULL");
	if (all || (mask & IT_UD_PARAM_IA_HANDLE))
		info->ia = (it_ia_handle_t)u->obj.ia;
	if (all || (mask & IT_UD_PARAM_REQ_ID)) {
		g_mutex_lock(&u->lock);
		info->request_id = u->requests;
		g_mutex_unlock(&u->lock);
	}
	if (all || (mask & IT_UD_PARAM_REPLY_EVD))
		info->reply_evd = (it_evd_handle_t)u->evd;
	if (all || (mask & IT_UD_PARAM_CONN_QUAL))
		info->conn_qual = u->conn_qual;
	if (all || (mask & IT_UD_PARAM_DEST_PATH))
		info->destination_path = u->path;
	if (all || (mask & IT_UD_PARAM_PRIV_DATA))
		memcpy(info->private_data, u->pdata, sizeof(u->pdata));
	if (all || (mask & IT_UD_PARAM_PRIV_DATA_LENGTH))
		info->private_data_length = u->pdata_len;
	return IT_SUCCESS;
}

it_status_t it_ud_service_request(it_ud_svc_req_handle_t ud_svc_handle)
{
	struct itapi_ud_svc *u = ITAPI_LOOKUP(ud_svc_handle,
					      struct itapi_ud_svc,
					      IT_HANDLE_TYPE_UD_SVC_REQ);
	struct sockaddr_storage dst = { 0 };
	struct cm_sidr *cm = NULL, *old;
	const struct in6_addr *g;
	uint32_t timeout_ms = 0;
	int err;

	if (!u)
		return IT_FAIL0(IT_ERR_INVALID_UD_SVC,
				"UD service request handle %p is not live",
				(void *)ud_svc_handle);
	g = &u->path.remote.ib.remote_port_gid;
	if (IN6_IS_ADDR_V4MAPPED(g)) {
		struct sockaddr_in *in = (void *)&dst;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &g->s6_addr[12], 4);
	} else {
		struct sockaddr_in6 *in6 = (void *)&dst;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = *g;
	}
	if (u->path.timeout && u->path.timeout != IT_TIMEOUT_INFINITE)
		timeout_ms = (uint32_t)MIN((u->path.timeout + 999) / 1000,
					   (uint64_t)3600000);
	/* A new request replaces one under way (whose reply is dropped). */
	g_mutex_lock(&u->lock);
	old = g_steal_pointer(&u->cm);
	g_mutex_unlock(&u->lock);
	cm_sidr_destroy(old);
	err = cm_sidr_request(u->obj.ia->dev, (void *)&dst,
			      svc_sid(&u->conn_qual), 0, u->pdata,
			      (uint32_t)u->pdata_len, timeout_ms,
			      ud_svc_event, u, &cm);
	if (err)
		return IT_FAIL_ERRNO(&u->obj, err, ITAPI_CTX_CONN,
				     "SIDR request: %s", g_strerror(-err));
	/* Another thread's request made meanwhile is replaced too. */
	g_mutex_lock(&u->lock);
	old = u->cm;
	u->cm = cm;
	u->requests++;
	g_mutex_unlock(&u->lock);
	cm_sidr_destroy(old);
	return IT_SUCCESS;
}

it_status_t it_ud_service_reply(it_ud_svc_req_identifier_t ud_svc_req_id,
				it_ud_svc_req_status_t status,
				it_remote_ep_info_t ep_info,
				const unsigned char *private_data,
				size_t private_data_length)
{
	int err;

	if ((unsigned int)status > IT_UD_REQ_REDIRECTED)
		return IT_FAIL0(IT_ERR_INVALID_UD_STATUS, "status %d",
				(int)status);
	if (private_data_length > IT_MAX_PRIV_DATA)
		return IT_FAIL0(IT_ERR_INVALID_PDATA_LENGTH,
				"%zu bytes of private data",
				private_data_length);
	if (private_data_length && !private_data)
		return IT_FAIL0(IT_ERR_FAULT, "private_data is NULL");
	if (status == IT_UD_SVC_EP_INFO_VALID && ep_info.ud_ep_id > 0xffffff)
		return IT_FAIL0(IT_ERR_INVALID_EP, "QP number %u",
				(unsigned int)ep_info.ud_ep_id);
	/* IT-API's status values are IBA's SIDR_REP statuses. */
	err = cm_sidr_reply(ud_svc_req_id, (uint8_t)status,
			    (uint32_t)ep_info.ud_ep_id,
			    (uint32_t)ep_info.ud_ep_key, private_data,
			    (uint32_t)private_data_length);
	/* -EINVAL: the device cannot send this answer (a verbs device's
	 * rdma_cm names its own Q_Key only; the request is refused). */
	if (err)
		return IT_FAIL0(err == -ENOENT ? IT_ERR_INVALID_UD_SVC_REQ_ID :
				err == -EINVAL ? IT_ERR_INVALID_EP :
						 itapi_status(err,
							      ITAPI_CTX_CONN),
				"reply to UD service request %llu: %s",
				(unsigned long long)ud_svc_req_id,
				g_strerror(-err));
	return IT_SUCCESS;
}
