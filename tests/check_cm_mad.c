/* SPDX-License-Identifier: MIT */
/*
 * The CM MADs of cm/ib_mad.h against what the Linux kernel's ib_cm and
 * rdma_cm sent (tests/data/ib_cm_kernel_mads.h, captured between two
 * rdma_rxe guests): every field decoded as tshark's dissector shows it,
 * and encoding the decoded message gives the same 256 bytes back.
 * librdmacm's header for IPv4 and IPv6; time-out codes. SIDR_REQ and
 * SIDR_REP as rdma_cm sent them for udaddy (tests/data/ib_cm_kernel_sidr.h):
 * every field read, and built again from those field values alone.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "cm/ib_mad.h"
#include "tests/data/ib_cm_kernel_mads.h"
#include "tests/data/ib_cm_kernel_sidr.h"
#include "tests/suites.h"
#include "tests/testutil.h"

static void mad_of(const uint8_t *bytes, struct ib_mad *m)
{
	memcpy(m->b, bytes, IB_MAD_BYTES);
}

/* Compare byte for byte, ignoring the bits @mask of byte @mask_off. */
static void assert_same(const struct ib_mad *want, const struct ib_mad *got,
			size_t mask_off, uint8_t mask)
{
	for (size_t i = 0; i < IB_MAD_BYTES; i++) {
		uint8_t w = want->b[i], g = got->b[i];

		if (i == mask_off) {
			w &= (uint8_t)~mask;
			g &= (uint8_t)~mask;
		}
		ck_assert_msg(w == g, "byte %zu: 0x%02x, the kernel's 0x%02x",
			      i, g, w);
	}
}

START_TEST(kernel_req_v4)
{
	struct ib_mad m, out;
	struct ib_mad_hdr h;
	struct ib_cm_req r;
	struct sockaddr_storage src, dst;
	const struct sockaddr_in *s = (const void *)&src;
	const struct sockaddr_in *d = (const void *)&dst;
	static const uint8_t gid_src[16] = { [10] = 0xff, 0xff, 198, 51, 100,
					     3 };
	const char *why = NULL;

	mad_of(kernel_v4_req, &m);
	ib_mad_hdr_decode(&m, &h);
	ck_assert_uint_eq(h.base_version, 1);
	ck_assert_uint_eq(h.mgmt_class, IB_MGMT_CLASS_CM);
	ck_assert_uint_eq(h.class_version, IB_CM_CLASS_VERSION);
	ck_assert_uint_eq(h.method, IB_MGMT_METHOD_SEND);
	ck_assert_uint_eq(h.attr_id, IB_CM_ATTR_REQ);
	ck_assert_uint_eq(h.tid, 0x00000002cc61f3f9ull);
	ib_cm_req_decode(&m, &r);
	ck_assert_uint_eq(r.local_comm_id, 0xf9f361cc);
	ck_assert_uint_eq(r.service_id, 0x0000000001061c06ull);
	ck_assert_uint_eq(ib_cma_ps_of(r.service_id), IB_RDMA_PS_TCP);
	ck_assert_uint_eq(r.local_ca_guid, 0x505400fffec63303ull);
	ck_assert_uint_eq(r.local_qkey, 0);
	ck_assert_uint_eq(r.local_qpn, 0x11);
	ck_assert_uint_eq(r.responder_resources, 1);
	ck_assert_uint_eq(r.initiator_depth, 1);
	ck_assert_uint_eq(r.remote_cm_response_timeout, 20);
	ck_assert_uint_eq(r.transport_service_type, 0);
	ck_assert_uint_eq(r.starting_psn, 0xcac399);
	ck_assert_uint_eq(r.local_cm_response_timeout, 20);
	ck_assert_uint_eq(r.retry_count, 7);
	ck_assert_uint_eq(r.pkey, 0xffff);
	ck_assert_uint_eq(r.path_mtu, 3);
	ck_assert_uint_eq(r.rnr_retry_count, 7);
	ck_assert_uint_eq(r.max_cm_retries, 15);
	ck_assert_uint_eq(r.srq, 0);
	ck_assert_uint_eq(r.primary.local_lid, IB_LID_PERMISSIVE);
	ck_assert_uint_eq(r.primary.remote_lid, IB_LID_PERMISSIVE);
	ck_assert_mem_eq(r.primary.local_gid, gid_src, 16);
	ck_assert_uint_eq(r.primary.remote_gid[15], 2);
	/* (tshark 4.0 reads this word one byte early and shows 0x0097c.) */
	ck_assert_uint_eq(r.primary.flow_label, 0x97c38);
	ck_assert_uint_eq(r.primary.packet_rate, 0);
	ck_assert_uint_eq(r.primary.hop_limit, 0x40);
	ck_assert_uint_eq(r.primary.sl, 0);
	ck_assert_uint_eq(r.primary.subnet_local, 0);
	ck_assert_uint_eq(r.primary.local_ack_timeout, 0x13);
	ck_assert_uint_eq(r.alternate.local_lid, 0);
	/* librdmacm's header: 198.51.100.3:0xd18e -> 198.51.100.2:7174. */
	ck_assert_int_eq(ib_cma_hdr_decode(r.private_data,
					   (uint16_t)r.service_id, &src, &dst,
					   &why),
			 0);
	ck_assert_int_eq(s->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(s->sin_addr.s_addr), 0xc6336403);
	ck_assert_uint_eq(ntohs(s->sin_port), 0xd18e);
	ck_assert_uint_eq(ntohl(d->sin_addr.s_addr), 0xc6336402);
	ck_assert_uint_eq(ntohs(d->sin_port), 7174);
	{
		uint8_t hdr[IB_CMA_HDR_BYTES];

		ck_assert_int_eq(ib_cma_hdr_encode(hdr, (const void *)&src,
						   (const void *)&dst),
				 0);
		ck_assert_mem_eq(hdr, r.private_data, IB_CMA_HDR_BYTES);
	}
	/* And back: the same 256 bytes. */
	ib_mad_cm_init(&out, IB_CM_ATTR_REQ, h.tid);
	ib_cm_req_encode(&out, &r);
	assert_same(&m, &out, 0, 0);
}
END_TEST

START_TEST(kernel_req_v6)
{
	struct ib_mad m, out;
	struct ib_cm_req r;
	struct sockaddr_storage src, dst;
	const struct sockaddr_in6 *s = (const void *)&src;
	const struct sockaddr_in6 *d = (const void *)&dst;
	struct in6_addr want;
	const char *why = NULL;

	mad_of(kernel_v6_req, &m);
	ib_cm_req_decode(&m, &r);
	ck_assert_uint_eq(r.service_id, 0x0000000001061c08ull);
	inet_pton(AF_INET6, "fe80::5054:ff:fec6:3303", &want);
	ck_assert_mem_eq(r.primary.local_gid, &want, 16);
	ck_assert_uint_eq(r.primary.flow_label, 0x56122);
	ck_assert_int_eq(ib_cma_hdr_decode(r.private_data, 7176, &src, &dst,
					   &why),
			 0);
	ck_assert_int_eq(s->sin6_family, AF_INET6);
	ck_assert_mem_eq(&s->sin6_addr, &want, 16);
	ck_assert_uint_eq(ntohs(s->sin6_port), 0xafa6);
	ck_assert_uint_eq(ntohs(d->sin6_port), 7176);
	ck_assert_uint_eq(d->sin6_addr.s6_addr[15], 0x02);
	ib_mad_cm_init(&out, IB_CM_ATTR_REQ, ib_mad_get64(&m, IB_MAD_OFF_TID));
	ib_cm_req_encode(&out, &r);
	assert_same(&m, &out, 0, 0);
}
END_TEST

START_TEST(kernel_rep_rtu_dreq_drep_rej)
{
	struct ib_mad m, out;
	struct ib_cm_rep rep;
	struct ib_cm_ids ids;
	struct ib_cm_dreq dreq;
	struct ib_cm_rej rej;
	uint64_t tid;

	mad_of(kernel_v4_rep, &m);
	tid = ib_mad_get64(&m, IB_MAD_OFF_TID);
	ib_cm_rep_decode(&m, &rep);
	ck_assert_uint_eq(rep.local_comm_id, 0xca1127b9);
	ck_assert_uint_eq(rep.remote_comm_id, 0xf9f361cc);
	ck_assert_uint_eq(rep.local_qpn, 0x11);
	ck_assert_uint_eq(rep.starting_psn, 0x255ae7);
	ck_assert_uint_eq(rep.responder_resources, 1);
	ck_assert_uint_eq(rep.initiator_depth, 1);
	ck_assert_uint_eq(rep.target_ack_delay, 0x0f);
	ck_assert_uint_eq(rep.failover_accepted, 0);
	ck_assert_uint_eq(rep.rnr_retry_count, 7);
	ck_assert_uint_eq(rep.srq, 0);
	ck_assert_uint_eq(rep.local_ca_guid, 0x505400fffec63302ull);
	ib_mad_cm_init(&out, IB_CM_ATTR_REP, tid);
	ib_cm_rep_encode(&out, &rep);
	assert_same(&m, &out, 0, 0);

	mad_of(kernel_v4_rtu, &m);
	ib_cm_ids_decode(&m, &ids);
	ck_assert_uint_eq(ids.local_comm_id, 0xf9f361cc);
	ck_assert_uint_eq(ids.remote_comm_id, 0xca1127b9);
	ib_mad_cm_init(&out, IB_CM_ATTR_RTU, ib_mad_get64(&m, IB_MAD_OFF_TID));
	ib_cm_ids_encode(&out, &ids);
	assert_same(&m, &out, 0, 0);

	mad_of(kernel_v4_dreq, &m);
	ib_cm_dreq_decode(&m, &dreq);
	ck_assert_uint_eq(dreq.local_comm_id, 0xf9f361cc);
	ck_assert_uint_eq(dreq.remote_comm_id, 0xca1127b9);
	ck_assert_uint_eq(dreq.remote_qpn, 0x11);
	ib_mad_cm_init(&out, IB_CM_ATTR_DREQ,
		       ib_mad_get64(&m, IB_MAD_OFF_TID));
	ib_cm_dreq_encode(&out, &dreq);
	assert_same(&m, &out, 0, 0);

	mad_of(kernel_v4_drep, &m);
	ib_cm_ids_decode(&m, &ids);
	ck_assert_uint_eq(ids.local_comm_id, 0xca1127b9);
	ib_mad_cm_init(&out, IB_CM_ATTR_DREP,
		       ib_mad_get64(&m, IB_MAD_OFF_TID));
	ib_cm_ids_encode(&out, &ids);
	assert_same(&m, &out, 0, 0);

	/* Nobody listened on port 7175: REJ "invalid service ID". */
	mad_of(kernel_v4_rej, &m);
	ib_cm_rej_decode(&m, &rej);
	ck_assert_uint_eq(rej.local_comm_id, 0);
	ck_assert_uint_eq(rej.remote_comm_id, 0xf8f361cc);
	ck_assert_uint_eq(rej.message_rejected, IB_CM_MSG_REQ);
	ck_assert_uint_eq(rej.reason, IB_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(rej.ari_length, 0);
	ib_mad_cm_init(&out, IB_CM_ATTR_REJ, ib_mad_get64(&m, IB_MAD_OFF_TID));
	ib_cm_rej_encode(&out, &rej);
	assert_same(&m, &out, 0, 0);
}
END_TEST

/* The MAD header every CM message of the kernel's starts with. */
static void assert_cm_hdr(const struct ib_mad *m, uint16_t attr, uint64_t tid)
{
	struct ib_mad_hdr h;

	ib_mad_hdr_decode(m, &h);
	ck_assert_uint_eq(h.base_version, 1);
	ck_assert_uint_eq(h.mgmt_class, IB_MGMT_CLASS_CM);
	ck_assert_uint_eq(h.class_version, IB_CM_CLASS_VERSION);
	ck_assert_uint_eq(h.method, IB_MGMT_METHOD_SEND);
	ck_assert_uint_eq(h.status, 0);
	ck_assert_uint_eq(h.attr_id, attr);
	ck_assert_uint_eq(h.attr_mod, 0);
	ck_assert_uint_eq(h.tid, tid);
}

/*
 * udaddy's SIDR_REQ, IPv4 (198.51.100.3:0xd710 -> 198.51.100.2:7174): each
 * field as read, then a SIDR_REQ built from those values (the header
 * encoded from the addresses, not copied) is the same 256 bytes. The one
 * field that legitimately differs from what our CM sends for the same
 * request is the transaction ID (ours: random high half, request ID low;
 * the kernel's: its MAD agent's high half, the local ID in CPU order low);
 * it is taken from the capture here.
 */
START_TEST(kernel_sidr_req_v4)
{
	struct ib_mad m, out;
	struct ib_cm_sidr_req r, mine = { 0 };
	struct sockaddr_storage src, dst;
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	struct sockaddr_in d4 = { .sin_family = AF_INET };
	const struct sockaddr_in *s = (const void *)&src;
	const struct sockaddr_in *d = (const void *)&dst;
	const char *why = NULL;

	mad_of(kernel_v4_sidr_req, &m);
	assert_cm_hdr(&m, IB_CM_ATTR_SIDR_REQ, 0x00000002ca9ed659ull);
	ib_cm_sidr_req_decode(&m, &r);
	ck_assert_uint_eq(r.request_id, 0x59d69eca);
	ck_assert_uint_eq(r.pkey, 0xffff);
	ck_assert_uint_eq(r.service_id, 0x0000000001111c06ull);
	ck_assert_uint_eq(ib_cma_ps_of(r.service_id), IB_RDMA_PS_UDP);
	ck_assert_uint_eq(r.service_id,
			  ib_cma_service_id(IB_RDMA_PS_UDP, 7174));
	ck_assert_int_eq(ib_cma_hdr_decode(r.private_data, 7174, &src, &dst,
					   &why),
			 0);
	ck_assert_int_eq(s->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(s->sin_addr.s_addr), 0xc6336403);
	ck_assert_uint_eq(ntohs(s->sin_port), 0xd710);
	ck_assert_int_eq(d->sin_family, AF_INET);
	ck_assert_uint_eq(ntohl(d->sin_addr.s_addr), 0xc6336402);
	ck_assert_uint_eq(ntohs(d->sin_port), 7174);
	/* udaddy sends no private data of its own after the header. */
	for (size_t i = IB_CMA_HDR_BYTES; i < IB_CM_SIDR_REQ_PDATA; i++)
		ck_assert_uint_eq(r.private_data[i], 0);

	mine.request_id = 0x59d69eca;
	mine.pkey = IB_PKEY_DEFAULT;
	mine.service_id = ib_cma_service_id(IB_RDMA_PS_UDP, 7174);
	s4.sin_addr.s_addr = htonl(0xc6336403);
	s4.sin_port = htons(0xd710);
	d4.sin_addr.s_addr = htonl(0xc6336402);
	d4.sin_port = htons(7174);
	ck_assert_int_eq(ib_cma_hdr_encode(mine.private_data,
					   (const void *)&s4,
					   (const void *)&d4),
			 0);
	ib_mad_cm_init(&out, IB_CM_ATTR_SIDR_REQ, 0x00000002ca9ed659ull);
	ib_cm_sidr_req_encode(&out, &mine);
	assert_same(&m, &out, 0, 0);
}
END_TEST

/* The same over IPv6 (2001:db8:100::3 -> ::2, port 7174). */
START_TEST(kernel_sidr_req_v6)
{
	struct ib_mad m, out;
	struct ib_cm_sidr_req r, mine = { 0 };
	struct sockaddr_storage src, dst;
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 d6 = { .sin6_family = AF_INET6 };
	const struct sockaddr_in6 *s = (const void *)&src;
	const struct sockaddr_in6 *d = (const void *)&dst;
	const char *why = NULL;

	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:100::3", &s6.sin6_addr),
			 1);
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8:100::2", &d6.sin6_addr),
			 1);
	mad_of(kernel_v6_sidr_req, &m);
	assert_cm_hdr(&m, IB_CM_ATTR_SIDR_REQ, 0x00000002ca9ed658ull);
	ib_cm_sidr_req_decode(&m, &r);
	ck_assert_uint_eq(r.request_id, 0x58d69eca);
	ck_assert_uint_eq(r.pkey, 0xffff);
	ck_assert_uint_eq(r.service_id, 0x0000000001111c06ull);
	ck_assert_int_eq(ib_cma_hdr_decode(r.private_data, 7174, &src, &dst,
					   &why),
			 0);
	ck_assert_int_eq(s->sin6_family, AF_INET6);
	ck_assert_mem_eq(&s->sin6_addr, &s6.sin6_addr, 16);
	ck_assert_uint_eq(ntohs(s->sin6_port), 0x8204);
	ck_assert_int_eq(d->sin6_family, AF_INET6);
	ck_assert_mem_eq(&d->sin6_addr, &d6.sin6_addr, 16);
	ck_assert_uint_eq(ntohs(d->sin6_port), 7174);
	for (size_t i = IB_CMA_HDR_BYTES; i < IB_CM_SIDR_REQ_PDATA; i++)
		ck_assert_uint_eq(r.private_data[i], 0);

	mine.request_id = 0x58d69eca;
	mine.pkey = IB_PKEY_DEFAULT;
	mine.service_id = ib_cma_service_id(IB_RDMA_PS_UDP, 7174);
	s6.sin6_port = htons(0x8204);
	d6.sin6_port = htons(7174);
	ck_assert_int_eq(ib_cma_hdr_encode(mine.private_data,
					   (const void *)&s6,
					   (const void *)&d6),
			 0);
	ib_mad_cm_init(&out, IB_CM_ATTR_SIDR_REQ, 0x00000002ca9ed658ull);
	ib_cm_sidr_req_encode(&out, &mine);
	assert_same(&m, &out, 0, 0);
}
END_TEST

/*
 * udaddy's server answering: status 0, its UD QP, rdma_cm's UDP Q_Key
 * 0x01234567, the requester's service ID, no additional information, no
 * private data. A SIDR_REP built from those values is the same 256 bytes
 * (its transaction ID is the request's, as IBA 12.11.2 wants of ours too).
 */
START_TEST(kernel_sidr_rep)
{
	static const struct {
		const uint8_t *bytes;
		uint64_t tid;
		uint32_t request_id, qpn;
	} v[] = {
		{ kernel_v4_sidr_rep, 0x00000002ca9ed659ull, 0x59d69eca, 0x11 },
		{ kernel_v6_sidr_rep, 0x00000002ca9ed658ull, 0x58d69eca, 0x12 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
		struct ib_mad m, out;
		struct ib_cm_sidr_rep r, mine = { 0 };

		mad_of(v[i].bytes, &m);
		assert_cm_hdr(&m, IB_CM_ATTR_SIDR_REP, v[i].tid);
		ib_cm_sidr_rep_decode(&m, &r);
		ck_assert_uint_eq(r.request_id, v[i].request_id);
		ck_assert_uint_eq(r.status, IB_SIDR_SUCCESS);
		ck_assert_uint_eq(r.info_length, 0);
		ck_assert_uint_eq(r.qpn, v[i].qpn);
		ck_assert_uint_eq(r.service_id, 0x0000000001111c06ull);
		ck_assert_uint_eq(r.qkey, 0x01234567);
		for (size_t j = 0; j < IB_CM_REJ_ARI; j++)
			ck_assert_uint_eq(r.info[j], 0);
		for (size_t j = 0; j < IB_CM_SIDR_REP_PDATA; j++)
			ck_assert_uint_eq(r.private_data[j], 0);

		mine.request_id = v[i].request_id;
		mine.status = IB_SIDR_SUCCESS;
		mine.qpn = v[i].qpn;
		mine.service_id = ib_cma_service_id(IB_RDMA_PS_UDP, 7174);
		mine.qkey = 0x01234567;
		ib_mad_cm_init(&out, IB_CM_ATTR_SIDR_REP, v[i].tid);
		ib_cm_sidr_rep_encode(&out, &mine);
		assert_same(&m, &out, 0, 0);
	}
}
END_TEST

/* Fields of our own making survive the round trip bit for bit. */
START_TEST(encode_decode_all_fields)
{
	struct ib_cm_mra mra = { 0x01020304, 0x05060708, IB_CM_MSG_REP, 0x1f,
				 { 'm' } }, mra2;
	struct ib_cm_sidr_req sq = { 0xabcdef01, 0xffff, 0x1122334455667788ull,
				     { 's' } }, sq2;
	struct ib_cm_sidr_rep sp = { .request_id = 7, .status = 2,
				     .qpn = 0xabcdef, .service_id = 9,
				     .qkey = 0x80010000 }, sp2;
	struct ib_mad m;

	ib_mad_cm_init(&m, IB_CM_ATTR_MRA, 1);
	ib_cm_mra_encode(&m, &mra);
	ck_assert_uint_eq(m.b[IB_CM_D(8)], 0x40);
	ck_assert_uint_eq(m.b[IB_CM_D(9)], 0xf8);
	ib_cm_mra_decode(&m, &mra2);
	ck_assert_mem_eq(&mra, &mra2, sizeof(mra));
	ib_mad_cm_init(&m, IB_CM_ATTR_SIDR_REQ, 1);
	ib_cm_sidr_req_encode(&m, &sq);
	ib_cm_sidr_req_decode(&m, &sq2);
	ck_assert_uint_eq(sq2.request_id, sq.request_id);
	ck_assert_uint_eq(sq2.service_id, sq.service_id);
	ck_assert_uint_eq(sq2.private_data[0], 's');
	ib_mad_cm_init(&m, IB_CM_ATTR_SIDR_REP, 1);
	ib_cm_sidr_rep_encode(&m, &sp);
	/* The service ID sits unaligned at byte 12 of the message. */
	ck_assert_uint_eq(m.b[IB_CM_D(19)], 9);
	ib_cm_sidr_rep_decode(&m, &sp2);
	ck_assert_uint_eq(sp2.qpn, 0xabcdef);
	ck_assert_uint_eq(sp2.qkey, 0x80010000);
	ck_assert_uint_eq(sp2.status, 2);
}
END_TEST

START_TEST(cma_header_errors_and_timeouts)
{
	uint8_t hdr[IB_CMA_HDR_BYTES] = { 0 };
	struct sockaddr_storage s, d;
	struct sockaddr_in in4 = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	const char *why = NULL;

	hdr[0] = 1;
	ck_assert_int_eq(ib_cma_hdr_decode(hdr, 1, &s, &d, &why), -EPROTO);
	ck_assert_ptr_nonnull(why);
	hdr[0] = 0;
	hdr[1] = 5 << 4;
	ck_assert_int_eq(ib_cma_hdr_decode(hdr, 1, &s, &d, &why), -EPROTO);
	ck_assert_int_eq(ib_cma_hdr_encode(hdr, (void *)&in4, (void *)&in6),
			 -EAFNOSUPPORT);
	ck_assert_uint_eq(ib_cma_ps_of(0x0000000001061c06ull), IB_RDMA_PS_TCP);
	ck_assert_uint_eq(ib_cma_ps_of(0x0000000101061c06ull), 0);
	ck_assert_uint_eq(ib_cma_ps_of(0x1234567890abcdefull), 0);
	/* 4.096 us * 2^20 = 4.29 s; 2^16 = 268 ms. */
	ck_assert_uint_eq(ib_cm_timeout_ms(20), 4295);
	ck_assert_uint_eq(ib_cm_timeout_ms(16), 269);
	ck_assert_uint_eq(ib_cm_timeout_code(4295), 20);
	ck_assert_uint_eq(ib_cm_timeout_code(4296), 21);
	ck_assert_uint_eq(ib_cm_timeout_code(0), 0);
	ck_assert_uint_eq(ib_cm_timeout_code(UINT32_MAX), 31);
}
END_TEST

Suite *suite_cm_mad(void)
{
	Suite *s = suite_create("cm-mad");
	TCase *tc = tcase_create("vectors");

	tcase_add_test(tc, kernel_req_v4);
	tcase_add_test(tc, kernel_req_v6);
	tcase_add_test(tc, kernel_rep_rtu_dreq_drep_rej);
	tcase_add_test(tc, kernel_sidr_req_v4);
	tcase_add_test(tc, kernel_sidr_req_v6);
	tcase_add_test(tc, kernel_sidr_rep);
	tcase_add_test(tc, encode_decode_all_fields);
	tcase_add_test(tc, cma_header_errors_and_timeouts);
	suite_add_tcase(s, tc);
	return s;
}
