/* SPDX-License-Identifier: MIT */
/*
 * ib_mad.c - encode and decode the CM MADs of ib_mad.h (IBA tables 106-120)
 * and librdmacm's private data header. No judgement here: cm_ib.c checks
 * the values.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "cm/ib_mad.h"

const char *ib_cm_attr_name(uint16_t attr)
{
	switch (attr) {
	case IB_CM_ATTR_CLASSPORTINFO: return "ClassPortInfo";
	case IB_CM_ATTR_REQ: return "REQ";
	case IB_CM_ATTR_MRA: return "MRA";
	case IB_CM_ATTR_REJ: return "REJ";
	case IB_CM_ATTR_REP: return "REP";
	case IB_CM_ATTR_RTU: return "RTU";
	case IB_CM_ATTR_DREQ: return "DREQ";
	case IB_CM_ATTR_DREP: return "DREP";
	case IB_CM_ATTR_SIDR_REQ: return "SIDR_REQ";
	case IB_CM_ATTR_SIDR_REP: return "SIDR_REP";
	case IB_CM_ATTR_LAP: return "LAP";
	case IB_CM_ATTR_APR: return "APR";
	}
	return "?";
}

void ib_mad_hdr_decode(const struct ib_mad *m, struct ib_mad_hdr *h)
{
	h->base_version = ib_mad_get8(m, IB_MAD_OFF_BASE_VERSION);
	h->mgmt_class = ib_mad_get8(m, IB_MAD_OFF_CLASS);
	h->class_version = ib_mad_get8(m, IB_MAD_OFF_CLASS_VERSION);
	h->method = ib_mad_get8(m, IB_MAD_OFF_METHOD);
	h->status = ib_mad_get16(m, IB_MAD_OFF_STATUS);
	h->tid = ib_mad_get64(m, IB_MAD_OFF_TID);
	h->attr_id = ib_mad_get16(m, IB_MAD_OFF_ATTR_ID);
	h->attr_mod = ib_mad_get32(m, IB_MAD_OFF_ATTR_MOD);
}

void ib_mad_cm_init(struct ib_mad *m, uint16_t attr, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	ib_mad_put8(m, IB_MAD_OFF_BASE_VERSION, IB_MAD_BASE_VERSION);
	ib_mad_put8(m, IB_MAD_OFF_CLASS, IB_MGMT_CLASS_CM);
	ib_mad_put8(m, IB_MAD_OFF_CLASS_VERSION, IB_CM_CLASS_VERSION);
	ib_mad_put8(m, IB_MAD_OFF_METHOD, IB_MGMT_METHOD_SEND);
	ib_mad_put64(m, IB_MAD_OFF_TID, tid);
	ib_mad_put16(m, IB_MAD_OFF_ATTR_ID, attr);
}

/* ------------------------------------------------------------------ */
/* REQ (IBA 12.6.5, table 106)                                         */
/* ------------------------------------------------------------------ */

static void path_decode(const struct ib_mad *m, size_t o, struct ib_cm_path *p)
{
	p->local_lid = ib_mad_get16(m, o);
	p->remote_lid = ib_mad_get16(m, o + 2);
	memcpy(p->local_gid, &m->b[o + 4], 16);
	memcpy(p->remote_gid, &m->b[o + 20], 16);
	p->flow_label = ib_mad_get32(m, o + 36) >> 12;
	p->packet_rate = ib_mad_bits(m, o + 39, 5, 0);
	p->traffic_class = ib_mad_get8(m, o + 40);
	p->hop_limit = ib_mad_get8(m, o + 41);
	p->sl = ib_mad_bits(m, o + 42, 7, 4);
	p->subnet_local = ib_mad_bits(m, o + 42, 3, 3);
	p->local_ack_timeout = ib_mad_bits(m, o + 43, 7, 3);
}

static void path_encode(struct ib_mad *m, size_t o, const struct ib_cm_path *p)
{
	ib_mad_put16(m, o, p->local_lid);
	ib_mad_put16(m, o + 2, p->remote_lid);
	memcpy(&m->b[o + 4], p->local_gid, 16);
	memcpy(&m->b[o + 20], p->remote_gid, 16);
	ib_mad_put32(m, o + 36, (p->flow_label & 0xfffffu) << 12);
	ib_mad_set_bits(m, o + 39, 5, 0, p->packet_rate);
	ib_mad_put8(m, o + 40, p->traffic_class);
	ib_mad_put8(m, o + 41, p->hop_limit);
	ib_mad_set_bits(m, o + 42, 7, 4, p->sl);
	ib_mad_set_bits(m, o + 42, 3, 3, p->subnet_local);
	ib_mad_set_bits(m, o + 43, 7, 3, p->local_ack_timeout);
}

void ib_cm_req_decode(const struct ib_mad *m, struct ib_cm_req *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->service_id = ib_mad_get64(m, IB_CM_D(8));
	r->local_ca_guid = ib_mad_get64(m, IB_CM_D(16));
	r->local_qkey = ib_mad_get32(m, IB_CM_D(28));
	r->local_qpn = ib_mad_get24(m, IB_CM_D(32));
	r->responder_resources = ib_mad_get8(m, IB_CM_D(35));
	r->local_eecn = ib_mad_get24(m, IB_CM_D(36));
	r->initiator_depth = ib_mad_get8(m, IB_CM_D(39));
	r->remote_eecn = ib_mad_get24(m, IB_CM_D(40));
	r->remote_cm_response_timeout = ib_mad_bits(m, IB_CM_D(43), 7, 3);
	r->transport_service_type = ib_mad_bits(m, IB_CM_D(43), 2, 1);
	r->end_to_end_flow_control = ib_mad_bits(m, IB_CM_D(43), 0, 0);
	r->starting_psn = ib_mad_get24(m, IB_CM_D(44));
	r->local_cm_response_timeout = ib_mad_bits(m, IB_CM_D(47), 7, 3);
	r->retry_count = ib_mad_bits(m, IB_CM_D(47), 2, 0);
	r->pkey = ib_mad_get16(m, IB_CM_D(48));
	r->path_mtu = ib_mad_bits(m, IB_CM_D(50), 7, 4);
	r->rdc_exists = ib_mad_bits(m, IB_CM_D(50), 3, 3);
	r->rnr_retry_count = ib_mad_bits(m, IB_CM_D(50), 2, 0);
	r->max_cm_retries = ib_mad_bits(m, IB_CM_D(51), 7, 4);
	r->srq = ib_mad_bits(m, IB_CM_D(51), 3, 3);
	r->extended_transport_type = ib_mad_bits(m, IB_CM_D(51), 2, 0);
	path_decode(m, IB_CM_D(52), &r->primary);
	path_decode(m, IB_CM_D(96), &r->alternate);
	memcpy(r->private_data, &m->b[IB_CM_REQ_PDATA_OFF], IB_CM_REQ_PDATA);
}

void ib_cm_req_encode(struct ib_mad *m, const struct ib_cm_req *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put64(m, IB_CM_D(8), r->service_id);
	ib_mad_put64(m, IB_CM_D(16), r->local_ca_guid);
	ib_mad_put32(m, IB_CM_D(28), r->local_qkey);
	ib_mad_put24(m, IB_CM_D(32), r->local_qpn);
	ib_mad_put8(m, IB_CM_D(35), r->responder_resources);
	ib_mad_put24(m, IB_CM_D(36), r->local_eecn);
	ib_mad_put8(m, IB_CM_D(39), r->initiator_depth);
	ib_mad_put24(m, IB_CM_D(40), r->remote_eecn);
	ib_mad_set_bits(m, IB_CM_D(43), 7, 3, r->remote_cm_response_timeout);
	ib_mad_set_bits(m, IB_CM_D(43), 2, 1, r->transport_service_type);
	ib_mad_set_bits(m, IB_CM_D(43), 0, 0, r->end_to_end_flow_control);
	ib_mad_put24(m, IB_CM_D(44), r->starting_psn);
	ib_mad_set_bits(m, IB_CM_D(47), 7, 3, r->local_cm_response_timeout);
	ib_mad_set_bits(m, IB_CM_D(47), 2, 0, r->retry_count);
	ib_mad_put16(m, IB_CM_D(48), r->pkey);
	ib_mad_set_bits(m, IB_CM_D(50), 7, 4, r->path_mtu);
	ib_mad_set_bits(m, IB_CM_D(50), 3, 3, r->rdc_exists);
	ib_mad_set_bits(m, IB_CM_D(50), 2, 0, r->rnr_retry_count);
	ib_mad_set_bits(m, IB_CM_D(51), 7, 4, r->max_cm_retries);
	ib_mad_set_bits(m, IB_CM_D(51), 3, 3, r->srq);
	ib_mad_set_bits(m, IB_CM_D(51), 2, 0, r->extended_transport_type);
	path_encode(m, IB_CM_D(52), &r->primary);
	path_encode(m, IB_CM_D(96), &r->alternate);
	memcpy(&m->b[IB_CM_REQ_PDATA_OFF], r->private_data, IB_CM_REQ_PDATA);
}

/* ------------------------------------------------------------------ */
/* REP (12.6.8, table 110), MRA (table 107), REJ (table 108)           */
/* ------------------------------------------------------------------ */

void ib_cm_rep_decode(const struct ib_mad *m, struct ib_cm_rep *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->remote_comm_id = ib_mad_get32(m, IB_CM_D(4));
	r->local_qkey = ib_mad_get32(m, IB_CM_D(8));
	r->local_qpn = ib_mad_get24(m, IB_CM_D(12));
	r->local_eecn = ib_mad_get24(m, IB_CM_D(16));
	r->starting_psn = ib_mad_get24(m, IB_CM_D(20));
	r->vendor_id = (uint32_t)ib_mad_get8(m, IB_CM_D(15)) << 16 |
		       (uint32_t)ib_mad_get8(m, IB_CM_D(19)) << 8 |
		       ib_mad_get8(m, IB_CM_D(23));
	r->responder_resources = ib_mad_get8(m, IB_CM_D(24));
	r->initiator_depth = ib_mad_get8(m, IB_CM_D(25));
	r->target_ack_delay = ib_mad_bits(m, IB_CM_D(26), 7, 3);
	r->failover_accepted = ib_mad_bits(m, IB_CM_D(26), 2, 1);
	r->end_to_end_flow_control = ib_mad_bits(m, IB_CM_D(26), 0, 0);
	r->rnr_retry_count = ib_mad_bits(m, IB_CM_D(27), 7, 5);
	r->srq = ib_mad_bits(m, IB_CM_D(27), 4, 4);
	r->local_ca_guid = ib_mad_get64(m, IB_CM_D(28));
	memcpy(r->private_data, &m->b[IB_CM_REP_PDATA_OFF], IB_CM_REP_PDATA);
}

void ib_cm_rep_encode(struct ib_mad *m, const struct ib_cm_rep *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put32(m, IB_CM_D(4), r->remote_comm_id);
	ib_mad_put32(m, IB_CM_D(8), r->local_qkey);
	ib_mad_put24(m, IB_CM_D(12), r->local_qpn);
	ib_mad_put8(m, IB_CM_D(15), (uint8_t)(r->vendor_id >> 16));
	ib_mad_put24(m, IB_CM_D(16), r->local_eecn);
	ib_mad_put8(m, IB_CM_D(19), (uint8_t)(r->vendor_id >> 8));
	ib_mad_put24(m, IB_CM_D(20), r->starting_psn);
	ib_mad_put8(m, IB_CM_D(23), (uint8_t)r->vendor_id);
	ib_mad_put8(m, IB_CM_D(24), r->responder_resources);
	ib_mad_put8(m, IB_CM_D(25), r->initiator_depth);
	ib_mad_set_bits(m, IB_CM_D(26), 7, 3, r->target_ack_delay);
	ib_mad_set_bits(m, IB_CM_D(26), 2, 1, r->failover_accepted);
	ib_mad_set_bits(m, IB_CM_D(26), 0, 0, r->end_to_end_flow_control);
	ib_mad_set_bits(m, IB_CM_D(27), 7, 5, r->rnr_retry_count);
	ib_mad_set_bits(m, IB_CM_D(27), 4, 4, r->srq);
	ib_mad_put64(m, IB_CM_D(28), r->local_ca_guid);
	memcpy(&m->b[IB_CM_REP_PDATA_OFF], r->private_data, IB_CM_REP_PDATA);
}

void ib_cm_mra_decode(const struct ib_mad *m, struct ib_cm_mra *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->remote_comm_id = ib_mad_get32(m, IB_CM_D(4));
	r->message_mraed = ib_mad_bits(m, IB_CM_D(8), 7, 6);
	r->service_timeout = ib_mad_bits(m, IB_CM_D(9), 7, 3);
	memcpy(r->private_data, &m->b[IB_CM_MRA_PDATA_OFF], IB_CM_MRA_PDATA);
}

void ib_cm_mra_encode(struct ib_mad *m, const struct ib_cm_mra *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put32(m, IB_CM_D(4), r->remote_comm_id);
	ib_mad_set_bits(m, IB_CM_D(8), 7, 6, r->message_mraed);
	ib_mad_set_bits(m, IB_CM_D(9), 7, 3, r->service_timeout);
	memcpy(&m->b[IB_CM_MRA_PDATA_OFF], r->private_data, IB_CM_MRA_PDATA);
}

void ib_cm_rej_decode(const struct ib_mad *m, struct ib_cm_rej *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->remote_comm_id = ib_mad_get32(m, IB_CM_D(4));
	r->message_rejected = ib_mad_bits(m, IB_CM_D(8), 7, 6);
	r->ari_length = ib_mad_bits(m, IB_CM_D(9), 7, 1);
	r->reason = ib_mad_get16(m, IB_CM_D(10));
	memcpy(r->ari, &m->b[IB_CM_D(12)], IB_CM_REJ_ARI);
	memcpy(r->private_data, &m->b[IB_CM_REJ_PDATA_OFF], IB_CM_REJ_PDATA);
}

void ib_cm_rej_encode(struct ib_mad *m, const struct ib_cm_rej *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put32(m, IB_CM_D(4), r->remote_comm_id);
	ib_mad_set_bits(m, IB_CM_D(8), 7, 6, r->message_rejected);
	ib_mad_set_bits(m, IB_CM_D(9), 7, 1, r->ari_length);
	ib_mad_put16(m, IB_CM_D(10), r->reason);
	memcpy(&m->b[IB_CM_D(12)], r->ari, IB_CM_REJ_ARI);
	memcpy(&m->b[IB_CM_REJ_PDATA_OFF], r->private_data, IB_CM_REJ_PDATA);
}

/* ------------------------------------------------------------------ */
/* RTU, DREQ, DREP (12.6.9-12.6.11), SIDR (12.11)                      */
/* ------------------------------------------------------------------ */

void ib_cm_ids_decode(const struct ib_mad *m, struct ib_cm_ids *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->remote_comm_id = ib_mad_get32(m, IB_CM_D(4));
}

void ib_cm_ids_encode(struct ib_mad *m, const struct ib_cm_ids *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put32(m, IB_CM_D(4), r->remote_comm_id);
}

void ib_cm_dreq_decode(const struct ib_mad *m, struct ib_cm_dreq *r)
{
	r->local_comm_id = ib_mad_get32(m, IB_CM_D(0));
	r->remote_comm_id = ib_mad_get32(m, IB_CM_D(4));
	r->remote_qpn = ib_mad_get24(m, IB_CM_D(8));
	memcpy(r->private_data, &m->b[IB_CM_DREQ_PDATA_OFF],
	       IB_CM_DREQ_PDATA);
}

void ib_cm_dreq_encode(struct ib_mad *m, const struct ib_cm_dreq *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->local_comm_id);
	ib_mad_put32(m, IB_CM_D(4), r->remote_comm_id);
	ib_mad_put24(m, IB_CM_D(8), r->remote_qpn);
	memcpy(&m->b[IB_CM_DREQ_PDATA_OFF], r->private_data,
	       IB_CM_DREQ_PDATA);
}

void ib_cm_sidr_req_decode(const struct ib_mad *m, struct ib_cm_sidr_req *r)
{
	r->request_id = ib_mad_get32(m, IB_CM_D(0));
	r->pkey = ib_mad_get16(m, IB_CM_D(4));
	r->service_id = ib_mad_get64(m, IB_CM_D(8));
	memcpy(r->private_data, &m->b[IB_CM_SIDR_REQ_PDATA_OFF],
	       IB_CM_SIDR_REQ_PDATA);
}

void ib_cm_sidr_req_encode(struct ib_mad *m, const struct ib_cm_sidr_req *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->request_id);
	ib_mad_put16(m, IB_CM_D(4), r->pkey);
	ib_mad_put64(m, IB_CM_D(8), r->service_id);
	memcpy(&m->b[IB_CM_SIDR_REQ_PDATA_OFF], r->private_data,
	       IB_CM_SIDR_REQ_PDATA);
}

void ib_cm_sidr_rep_decode(const struct ib_mad *m, struct ib_cm_sidr_rep *r)
{
	r->request_id = ib_mad_get32(m, IB_CM_D(0));
	r->status = ib_mad_get8(m, IB_CM_D(4));
	r->info_length = ib_mad_get8(m, IB_CM_D(5));
	r->qpn = ib_mad_get24(m, IB_CM_D(8));
	r->service_id = ib_mad_get64(m, IB_CM_D(12));
	r->qkey = ib_mad_get32(m, IB_CM_D(20));
	memcpy(r->info, &m->b[IB_CM_D(24)], IB_CM_REJ_ARI);
	memcpy(r->private_data, &m->b[IB_CM_SIDR_REP_PDATA_OFF],
	       IB_CM_SIDR_REP_PDATA);
}

void ib_cm_sidr_rep_encode(struct ib_mad *m, const struct ib_cm_sidr_rep *r)
{
	ib_mad_put32(m, IB_CM_D(0), r->request_id);
	ib_mad_put8(m, IB_CM_D(4), r->status);
	ib_mad_put8(m, IB_CM_D(5), r->info_length);
	ib_mad_put24(m, IB_CM_D(8), r->qpn);
	ib_mad_put64(m, IB_CM_D(12), r->service_id);
	ib_mad_put32(m, IB_CM_D(20), r->qkey);
	memcpy(&m->b[IB_CM_D(24)], r->info, IB_CM_REJ_ARI);
	memcpy(&m->b[IB_CM_SIDR_REP_PDATA_OFF], r->private_data,
	       IB_CM_SIDR_REP_PDATA);
}

/* ------------------------------------------------------------------ */
/* Time-out codes                                                      */
/* ------------------------------------------------------------------ */

uint32_t ib_cm_timeout_ms(uint8_t code)
{
	uint64_t ns = 4096ull << (code & 31);

	return (uint32_t)((ns + 999999) / 1000000);
}

uint8_t ib_cm_timeout_code(uint32_t ms)
{
	uint8_t code = 0;

	while (code < 31 && ib_cm_timeout_ms(code) < ms)
		code++;
	return code;
}

/* ------------------------------------------------------------------ */
/* librdmacm's header                                                  */
/* ------------------------------------------------------------------ */

int ib_cma_hdr_encode(uint8_t out[IB_CMA_HDR_BYTES],
		      const struct sockaddr *src, const struct sockaddr *dst)
{
	memset(out, 0, IB_CMA_HDR_BYTES);
	out[0] = IB_CMA_VERSION;
	if (src->sa_family == AF_INET && dst->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src;
		const struct sockaddr_in *d = (const void *)dst;

		out[1] = 4 << 4;
		memcpy(&out[2], &s->sin_port, 2);
		memcpy(&out[4 + 12], &s->sin_addr, 4);
		memcpy(&out[20 + 12], &d->sin_addr, 4);
		return 0;
	}
	if (src->sa_family == AF_INET6 && dst->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)src;
		const struct sockaddr_in6 *d = (const void *)dst;

		out[1] = 6 << 4;
		memcpy(&out[2], &s->sin6_port, 2);
		memcpy(&out[4], &s->sin6_addr, 16);
		memcpy(&out[20], &d->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int ib_cma_hdr_decode(const uint8_t in[IB_CMA_HDR_BYTES], uint16_t dst_port,
		      struct sockaddr_storage *src,
		      struct sockaddr_storage *dst, const char **why)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (in[0] != IB_CMA_VERSION) {
		*why = "unknown rdma_cm header version";
		return -EPROTO;
	}
	switch (in[1] >> 4) {
	case 4: {
		struct sockaddr_in *s = (void *)src, *d = (void *)dst;

		s->sin_family = AF_INET;
		memcpy(&s->sin_port, &in[2], 2);
		memcpy(&s->sin_addr, &in[4 + 12], 4);
		d->sin_family = AF_INET;
		d->sin_port = htons(dst_port);
		memcpy(&d->sin_addr, &in[20 + 12], 4);
		return 0;
	}
	case 6: {
		struct sockaddr_in6 *s = (void *)src, *d = (void *)dst;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, &in[2], 2);
		memcpy(&s->sin6_addr, &in[4], 16);
		d->sin6_family = AF_INET6;
		d->sin6_port = htons(dst_port);
		memcpy(&d->sin6_addr, &in[20], 16);
		return 0;
	}
	}
	*why = "IP version in the rdma_cm header is neither 4 nor 6";
	return -EPROTO;
}
