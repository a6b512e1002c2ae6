/* SPDX-License-Identifier: MIT */
/*
 * UD datagrams through the IT-API over soft-RoCE (rxe_lo): one endpoint
 * sends with it_post_sendto to another's QPN and Q_Key through an address
 * handle for 127.0.0.1; the receiver's it_post_recvfrom completes with the
 * bytes, the sender's QPN and the GRH flag, the 40-byte GRH in front as
 * on InfiniBand. A wrong Q_Key is dropped by the receiver (IBA 10.2.5):
 * its buffer stays untouched while a later right one lands.
 * Service ID resolution (IBA 12.11, SIDR): it_ud_service_request finds the
 * listener's UD endpoint, whose answer carries QPN and Q_Key, and a
 * datagram sent with them arrives; a rejecting listener, a service nobody
 * listens on, a request handle's query and free. Against a raw UDP peer on
 * 127.0.0.2:4791 that plays the other CM with hand-made MADs: a peer that
 * never answers gets the same SIDR_REQ again after each response time-out
 * until the requester is told; a SIDR_REQ that arrives twice is reported
 * once and its remembered SIDR_REP sent again, byte for byte.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/ib_mad.h"
#include "it_ext.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"
#include "vp/rxe/ib_hdr.h"
#include "vp/rxe/rxe_icrc.h"

#define GRH_LEN 40u
#define QKEY 0x22223333u

static struct it_fix F;

static void setup(void)
{
	it_setup_rxe();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

static it_ep_handle_t ud_new(it_ud_ep_key_t key, it_ud_ep_id_t *qpn)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;
	it_ep_param_t p;

	memset(&a, 0, sizeof(a));
	a.max_request_dtos = 8;
	a.max_recv_dtos = 8;
	a.max_send_segments = 2;
	a.max_recv_segments = 2;
	a.srv.ud.ep_info.ud_ep_key = key;
	ck_assert_it_ok(it_ep_ud_create(F.pz, F.dto, F.dto, &a, 0, &ep));
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_ALL, &p));
	*qpn = p.attr.srv.ud.ep_info.ud_ep_id;
	return ep;
}

static void path_lo(it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4.s_addr = it_loopback_ipv4();
	ck_assert_it_ok(it_get_pathinfo(F.ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(n, 1);
}

/* An address handle for the path to the suite's address (127.0.0.1 in the
 * tree, the one given with -a in the conformance runner), as
 * it_get_pathinfo gives it: the remote GID is that address, mapped. */
static it_addr_handle_t ah_loopback(void)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	it_path_t path;
	it_addr_handle_t ah = NULL;

	na.addr.ipv4.s_addr = it_loopback_ipv4();
	ck_assert_it_ok(it_convert_net_addr(&na, IT_IB_GID, &na));
	path_lo(&path);
	ck_assert_int_eq(memcmp(&path.remote.ib.remote_port_gid, &na.addr.gid,
				sizeof(na.addr.gid)),
			 0);
	ck_assert_it_ok(it_address_handle_create(F.pz, &path,
						 IT_AH_PATH_COMPLETE, &ah));
	return ah;
}

/* The next DTO event of @type for @cookie (send and receive completions of
 * two endpoints share F.dto and may come in either order). */
static void next_of(it_event_type_t type, it_dto_cookie_t cookie,
		    it_event_t *out, it_event_t *other, bool *have_other)
{
	for (;;) {
		it_event_t ev;

		it_wait_event(F.dto, &ev);
		if (ev.event_number == type &&
		    ev.dto_cmpl.cookie == cookie) {
			*out = ev;
			return;
		}
		ck_assert_msg(!*have_other, "unexpected event %s cookie %llu",
			      itapi_event_name(ev.event_number),
			      (unsigned long long)ev.dto_cmpl.cookie);
		*other = ev;
		*have_other = true;
	}
}

START_TEST(datagram_lands)
{
	it_ud_ep_id_t qa, qb;
	it_ep_handle_t a = ud_new(0x1111, &qa), b = ud_new(QKEY, &qb);
	it_addr_handle_t ah = ah_loopback();
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	struct it_buf sb, rb;
	it_lmr_triplet_t st, rt;
	it_event_t ev, other;
	bool have_other = false;
	const size_t n = 1000;

	it_buf_new(&F, &sb, 4096, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 4096, IT_PRIV_LOCAL);
	for (size_t i = 0; i < n; i++)
		sb.mem[i] = (unsigned char)(i * 7 + 1);
	memset(rb.mem, 0xee, rb.len);
	rt = it_seg(&rb, 100, GRH_LEN + n);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 10,
					 IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	st = it_seg(&sb, 0, n);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info.ud_ep_id = qb;
	dst.addr.ud.ep_info.ud_ep_key = QKEY;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 20,
				       IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
				       &dst));
	next_of(IT_DTO_UD_RECV_CMPL_EVENT, 10, &ev, &other, &have_other);
	ck_assert_int_eq(ev.all_dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_ptr_eq(ev.all_dto_cmpl.ep, b);
	ck_assert_uint_eq(ev.all_dto_cmpl.ud_ep_id, qa);
	ck_assert(ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT);
	ck_assert_uint_eq(ev.all_dto_cmpl.transferred_length, GRH_LEN + n);
	ck_assert_int_eq(memcmp(rb.mem + 100 + GRH_LEN, sb.mem, n), 0);
	for (size_t i = 0; i < rb.len; i++)
		if (i < 100 || i >= 100 + GRH_LEN + n)
			ck_assert_msg(rb.mem[i] == 0xee, "byte %zu touched", i);
	if (!have_other)
		next_of(IT_DTO_SEND_CMPL_EVENT, 20, &other, &ev, &have_other);
	ck_assert_event(&other, IT_DTO_SEND_CMPL_EVENT);
	ck_assert_int_eq(other.dto_cmpl.dto_status, IT_DTO_SUCCESS);

	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sb);
	it_buf_free(&rb);
}
END_TEST

/*
 * A UD Send with immediate data (hostrdma_post_sendto_imm): the receive
 * reports the value as a Send's, with the sender's QPN and the payload
 * behind the GRH as for any datagram; a plain datagram after it on the
 * same endpoint reports none. The receive's buffer is untouched outside
 * the GRH and payload. On an RC endpoint the call is refused.
 */
START_TEST(datagram_imm)
{
	it_ud_ep_id_t qa, qb;
	it_ep_handle_t a = ud_new(0x1111, &qa), b = ud_new(QKEY, &qb);
	it_addr_handle_t ah = ah_loopback();
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	const it_dto_flags_t cn = IT_COMPLETION_FLAG | IT_NOTIFY_FLAG;
	struct it_buf sb, rb;
	it_lmr_triplet_t st, rt;
	it_event_t ev, other;
	bool have_other = false;
	uint32_t imm = 0;
	const size_t n = 300;

	ck_assert_uint_eq(hostrdma_ia_imm_data_size(F.ia), 4);
	it_buf_new(&F, &sb, 4096, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 4096, IT_PRIV_LOCAL);
	for (size_t i = 0; i < n; i++)
		sb.mem[i] = (unsigned char)(i * 13 + 5);
	memset(rb.mem, 0xee, rb.len);
	rt = it_seg(&rb, 64, GRH_LEN + n);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 10, cn));
	rt = it_seg(&rb, 2048, GRH_LEN + n);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 11, cn));
	st = it_seg(&sb, 0, n);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info.ud_ep_id = qb;
	dst.addr.ud.ep_info.ud_ep_key = QKEY;
	ck_assert_it_ok(hostrdma_post_sendto_imm(a, &st, 1, 20, cn, &dst,
						 0xa1b2c3d4u));

	next_of(IT_DTO_UD_RECV_CMPL_EVENT, 10, &ev, &other, &have_other);
	ck_assert_int_eq(ev.all_dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.all_dto_cmpl.ud_ep_id, qa);
	ck_assert(ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT);
	ck_assert_uint_eq(ev.all_dto_cmpl.transferred_length, GRH_LEN + n);
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm), HOSTRDMA_IMM_SEND);
	ck_assert_uint_eq(imm, 0xa1b2c3d4u);
	ck_assert_int_eq(memcmp(rb.mem + 64 + GRH_LEN, sb.mem, n), 0);
	if (!have_other)
		next_of(IT_DTO_SEND_CMPL_EVENT, 20, &other, &ev, &have_other);
	ck_assert_event(&other, IT_DTO_SEND_CMPL_EVENT);
	ck_assert_int_eq(other.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_int_eq(hostrdma_event_imm_data(&other, NULL),
			 HOSTRDMA_IMM_NONE);

	/* A plain datagram next: no value, not the last one's. */
	have_other = false;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 21, cn, &dst));
	next_of(IT_DTO_UD_RECV_CMPL_EVENT, 11, &ev, &other, &have_other);
	ck_assert_int_eq(ev.all_dto_cmpl.dto_status, IT_DTO_SUCCESS);
	imm = 7;
	ck_assert_int_eq(hostrdma_event_imm_data(&ev, &imm), HOSTRDMA_IMM_NONE);
	ck_assert_uint_eq(imm, 7);
	ck_assert_int_eq(memcmp(rb.mem + 2048 + GRH_LEN, sb.mem, n), 0);
	if (!have_other)
		next_of(IT_DTO_SEND_CMPL_EVENT, 21, &other, &ev, &have_other);
	for (size_t i = 0; i < rb.len; i++)
		if ((i < 64 || i >= 64 + GRH_LEN + n) &&
		    (i < 2048 || i >= 2048 + GRH_LEN + n))
			ck_assert_msg(rb.mem[i] == 0xee, "byte %zu touched", i);

	/* Datagrams only: an RC endpoint is the wrong type. */
	ck_assert_it(hostrdma_post_sendto_imm(it_ep_new(&F), &st, 1, 22, cn,
					      &dst, 1),
		     IT_ERR_INVALID_EP_TYPE);

	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sb);
	it_buf_free(&rb);
}
END_TEST

START_TEST(wrong_qkey_dropped)
{
	it_ud_ep_id_t qa, qb;
	it_ep_handle_t a = ud_new(0x1111, &qa), b = ud_new(QKEY, &qb);
	it_addr_handle_t ah = ah_loopback();
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	struct it_buf sb, rb;
	it_lmr_triplet_t st, rt;
	it_event_t ev;
	int sends = 0;

	it_buf_new(&F, &sb, 256, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 512, IT_PRIV_LOCAL);
	memset(rb.mem, 0xee, rb.len);
	rt = it_seg(&rb, 0, GRH_LEN + 64);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 30,
					 IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info.ud_ep_id = qb;
	/* First the wrong key, then the right one with other bytes: only
	 * the second may land. */
	memset(sb.mem, 0x01, 64);
	memset(sb.mem + 64, 0x02, 64);
	st = it_seg(&sb, 0, 64);
	dst.addr.ud.ep_info.ud_ep_key = QKEY ^ 1;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 40, IT_COMPLETION_FLAG,
				       &dst));
	st = it_seg(&sb, 64, 64);
	dst.addr.ud.ep_info.ud_ep_key = QKEY;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 41, IT_COMPLETION_FLAG,
				       &dst));
	for (;;) {
		it_wait_event(F.dto, &ev);
		if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
			ck_assert_int_eq(ev.dto_cmpl.dto_status,
					 IT_DTO_SUCCESS);
			sends++;
			continue;
		}
		break;
	}
	ck_assert_event(&ev, IT_DTO_UD_RECV_CMPL_EVENT);
	ck_assert_uint_eq(ev.all_dto_cmpl.cookie, 30);
	ck_assert_uint_eq(ev.all_dto_cmpl.transferred_length, GRH_LEN + 64);
	for (size_t i = 0; i < 64; i++)
		ck_assert_uint_eq(rb.mem[GRH_LEN + i], 0x02);
	while (sends < 2) {
		it_wait_event(F.dto, &ev);
		ck_assert_event(&ev, IT_DTO_SEND_CMPL_EVENT);
		sends++;
	}
	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sb);
	it_buf_free(&rb);
}
END_TEST

static const unsigned char hello[] = "which QP serves you?";

/* 100 bytes of @fill from @a (QP @qa) through @ah to the endpoint @info
 * names, @b: they land behind the GRH of @b's receive, from @qa, and
 * nothing past them. */
static void datagram_to(it_ep_handle_t a, it_ud_ep_id_t qa, it_ep_handle_t b,
			it_addr_handle_t ah, it_remote_ep_info_t info,
			unsigned char fill)
{
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	struct it_buf sb, rb;
	it_lmr_triplet_t st, rt;
	it_event_t ev;
	int got = 0;

	it_buf_new(&F, &sb, 256, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 256, IT_PRIV_LOCAL);
	memset(sb.mem, fill, 100);
	memset(rb.mem, 0xee, rb.len);
	rt = it_seg(&rb, 0, GRH_LEN + 100);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 50,
					 IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	st = it_seg(&sb, 0, 100);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info = info;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 51,
				       IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
				       &dst));
	while (got < 2) {
		it_wait_event(F.dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		if (ev.event_number == IT_DTO_UD_RECV_CMPL_EVENT) {
			ck_assert_uint_eq(ev.all_dto_cmpl.ud_ep_id, qa);
			ck_assert_uint_eq(ev.all_dto_cmpl.transferred_length,
					  GRH_LEN + 100);
			for (size_t i = 0; i < 100; i++)
				ck_assert_uint_eq(rb.mem[GRH_LEN + i], fill);
			for (size_t i = GRH_LEN + 100; i < rb.len; i++)
				ck_assert_uint_eq(rb.mem[i], 0xee);
		}
		got++;
	}
	it_buf_free(&sb);
	it_buf_free(&rb);
}

/* Listen on service ID @sid, ask for it, take the request event. */
static it_ud_svc_req_handle_t ask(uint64_t sid, it_listen_handle_t *l,
				  it_event_t *req)
{
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	it_ud_svc_req_handle_t u = NULL;
	it_path_t path;

	q.conn_qual.serviceid = htobe64(sid);
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req,
					 IT_LISTEN_CONN_QUAL_INPUT, &q, l));
	path_lo(&path);
	ck_assert_it_ok(it_ud_service_request_handle_create(
		&q, F.msg, &path, hello, sizeof(hello), &u));
	ck_assert_it_ok(it_ud_service_request(u));
	it_wait_event(F.req, req);
	ck_assert_event(req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	ck_assert(req->ud_svc_request.private_data_present);
	ck_assert_int_eq(memcmp(req->ud_svc_request.private_data, hello,
				sizeof(hello)),
			 0);
	ck_assert_uint_eq(be64toh(req->ud_svc_request.conn_qual.conn_qual
					  .serviceid),
			  sid);
	return u;
}

START_TEST(sidr_then_datagram)
{
	it_ud_ep_id_t qa, qb;
	it_ep_handle_t a = ud_new(0x1111, &qa), b = ud_new(QKEY, &qb);
	it_addr_handle_t ah = ah_loopback();
	it_remote_ep_info_t info = { .ud_ep_id = qb, .ud_ep_key = QKEY };
	static const unsigned char yes[] = "QP here";
	it_ud_svc_req_param_t qp;
	it_listen_handle_t l;
	it_ud_svc_req_handle_t u;
	it_event_t ev;

	u = ask(0x1234abcdull, &l, &ev);
	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_EP_INFO_VALID, info, yes,
					    sizeof(yes)));
	/* An answered request cannot be answered again. */
	ck_assert_it(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					 IT_UD_SVC_REQ_REJECTED, info, NULL, 0),
		     IT_ERR_INVALID_UD_SVC_REQ_ID);
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
	ck_assert_ptr_eq(ev.ud_svc_reply.ud_svc, u);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_EP_INFO_VALID);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_id, qb);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_key, QKEY);
	ck_assert(ev.ud_svc_reply.private_data_present);
	ck_assert_int_eq(memcmp(ev.ud_svc_reply.private_data, yes,
				sizeof(yes)),
			 0);
	ck_assert_it_ok(it_ud_service_request_handle_query(u, IT_UD_PARAM_ALL,
							   &qp));
	ck_assert_ptr_eq(qp.reply_evd, F.msg);
	ck_assert_uint_eq(qp.private_data_length, sizeof(hello));

	/* What the reply said is enough to reach the endpoint. */
	datagram_to(a, qa, b, ah, ev.ud_svc_reply.ep_info, 0x5c);
	ck_assert_it_ok(it_ud_service_request_handle_free(u));
	ck_assert_it(it_ud_service_request_handle_free(u),
		     IT_ERR_INVALID_UD_SVC);
	ck_assert_it_ok(it_listen_free(l));
	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
}
END_TEST

START_TEST(sidr_rejected_and_unknown)
{
	it_remote_ep_info_t info = { 0 };
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	it_ud_svc_req_handle_t u, u2 = NULL;
	it_listen_handle_t l;
	it_path_t path;
	it_event_t ev;

	u = ask(0x77ull, &l, &ev);
	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_REQ_REJECTED, info, NULL,
					    0));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_REQ_REJECTED);
	ck_assert(!ev.ud_svc_reply.private_data_present);

	/* Nobody listens on this one: the CM answers "invalid service ID"
	 * (SIDR_REP status 1), IT-API's IT_UD_SVC_ID_NOT_SUPPORTED. */
	q.conn_qual.serviceid = htobe64(0x78ull);
	path_lo(&path);
	ck_assert_it_ok(it_ud_service_request_handle_create(&q, F.msg, &path,
							    NULL, 0, &u2));
	ck_assert_it_ok(it_ud_service_request(u2));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
	ck_assert_ptr_eq(ev.ud_svc_reply.ud_svc, u2);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_ID_NOT_SUPPORTED);

	/* Argument checks. */
	ck_assert_it(it_ud_service_request_handle_create(&q, F.dto, &path,
							 NULL, 0, &u2),
		     IT_ERR_INVALID_EVD_TYPE);
	ck_assert_it(it_ud_service_reply(987654321ull, IT_UD_SVC_REQ_REJECTED,
					 info, NULL, 0),
		     IT_ERR_INVALID_UD_SVC_REQ_ID);
	ck_assert_it_ok(it_ud_service_request_handle_free(u));
	ck_assert_it_ok(it_ud_service_request_handle_free(u2));
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* The next UD service reply on F.msg, for @u. */
static void reply_of(it_ud_svc_req_handle_t u, it_event_t *ev)
{
	it_wait_event(F.msg, ev);
	ck_assert_event(ev, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
	ck_assert_ptr_eq(ev->ud_svc_reply.ud_svc, u);
}

/*
 * rdma_cm's UDP port space, as udaddy uses it and as a verbs device (the
 * kernel's rdma_cm) resolves it: a listener on an IANA port answers that
 * port's UD service requests, with rdma_cm's Q_Key (RDMA_UDP_QKEY, the
 * only one the kernel sends for an IP-addressed request). A datagram
 * sent with what the reply said lands; a refusal is "rejected", with no
 * private data; a port nobody listens on is "service ID not supported".
 */
#define CMA_UDP_QKEY 0x01234567u
START_TEST(sidr_port_space)
{
	it_ud_ep_id_t qa, qb;
	it_ep_handle_t a = ud_new(0x1111, &qa), b = ud_new(CMA_UDP_QKEY, &qb);
	it_addr_handle_t ah = ah_loopback();
	it_remote_ep_info_t info = { .ud_ep_id = qb,
				     .ud_ep_key = CMA_UDP_QKEY };
	static const unsigned char yes[] = "QP here";
	it_conn_qual_t q = { .type = IT_IANA_PORT }, q2;
	it_ud_svc_req_handle_t u = NULL, u2 = NULL;
	it_listen_handle_t l, l2;
	it_path_t path;
	it_event_t ev;
	it_status_t rst;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, IT_LISTEN_NO_FLAG,
					 &q, &l));
	ck_assert_int_eq(q.type, IT_IANA_PORT);
	ck_assert_uint_ne(q.conn_qual.port, 0);
	path_lo(&path);
	ck_assert_it_ok(it_ud_service_request_handle_create(
		&q, F.msg, &path, hello, sizeof(hello), &u));
	ck_assert_it_ok(it_ud_service_request(u));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	ck_assert(ev.ud_svc_request.private_data_present);
	ck_assert_int_eq(memcmp(ev.ud_svc_request.private_data, hello,
				sizeof(hello)),
			 0);
	ck_assert_int_eq(ev.ud_svc_request.conn_qual.type, IT_IANA_PORT);
	ck_assert_uint_eq(ev.ud_svc_request.conn_qual.conn_qual.port,
			  q.conn_qual.port);
	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_EP_INFO_VALID, info, yes,
					    sizeof(yes)));
	reply_of(u, &ev);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_EP_INFO_VALID);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_id, qb);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_key, CMA_UDP_QKEY);
	ck_assert(ev.ud_svc_reply.private_data_present);
	ck_assert_int_eq(memcmp(ev.ud_svc_reply.private_data, yes,
				sizeof(yes)),
			 0);

	/* What the reply said reaches the endpoint. */
	datagram_to(a, qa, b, ah, ev.ud_svc_reply.ep_info, 0x6d);

	/* Asked again and refused. */
	ck_assert_it_ok(it_ud_service_request(u));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_REQ_REJECTED, info, NULL,
					    0));
	reply_of(u, &ev);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_REQ_REJECTED);
	ck_assert(!ev.ud_svc_reply.private_data_present);

	/* A reply naming another Q_Key: carried as given (our IB CM), or,
	 * where the CM names only its own (a verbs device's rdma_cm),
	 * refused with IT_ERR_INVALID_EP and "rejected" to the requester:
	 * never a reply with a Q_Key the endpoint does not have. */
	ck_assert_it_ok(it_ud_service_request(u));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	info.ud_ep_key = QKEY;
	rst = it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
				  IT_UD_SVC_EP_INFO_VALID, info, NULL, 0);
	reply_of(u, &ev);
	if (rst == IT_SUCCESS) {
		ck_assert_int_eq(ev.ud_svc_reply.status,
				 IT_UD_SVC_EP_INFO_VALID);
		ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_key, QKEY);
		ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_id, qb);
	} else {
		ck_assert_it(rst, IT_ERR_INVALID_EP);
		ck_assert_int_eq(ev.ud_svc_reply.status,
				 IT_UD_SVC_REQ_REJECTED);
	}

	/* A port nobody listens on (a listener's, closed). */
	q2.type = IT_IANA_PORT;
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, IT_LISTEN_NO_FLAG,
					 &q2, &l2));
	ck_assert_it_ok(it_listen_free(l2));
	ck_assert_it_ok(it_ud_service_request_handle_create(&q2, F.msg, &path,
							    NULL, 0, &u2));
	ck_assert_it_ok(it_ud_service_request(u2));
	reply_of(u2, &ev);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_ID_NOT_SUPPORTED);
	ck_assert(!it_wait_event_for(F.req, 200, &ev));

	ck_assert_it_ok(it_ud_service_request_handle_free(u));
	ck_assert_it_ok(it_ud_service_request_handle_free(u2));
	ck_assert_it_ok(it_listen_free(l));
	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
}
END_TEST

#ifndef HOSTRDMA_CONFORMANCE_RUNNER	/* (not in the conformance runner) */
/* ------------------------------------------------------------------ */
/* A raw peer CM on 127.0.0.2:4791 (its QP1 is a UDP socket)           */
/* ------------------------------------------------------------------ */

#define GSI_QKEY 0x80010000u
#define MAD_PKT (IB_BTH_BYTES + IB_DETH_BYTES + IB_MAD_BYTES + 4)

static int raw_peer(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_port = htons(ROCE_V2_UDP_PORT) };
	struct timeval tv = { .tv_sec = 10 };
	int val = IP_PMTUDISC_DO;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	/* DF and so IPv4 ID 0, which the ICRC below assumes. */
	setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &val, sizeof(val));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	in.sin_addr.s_addr = htonl(0x7f000002);
	ck_assert_int_eq(bind(fd, (void *)&in, sizeof(in)), 0);
	return fd;
}

/* Send @m from the raw peer's QP1 to the stack's (127.0.0.1). */
static void raw_send_mad(int fd, const struct ib_mad *m, uint32_t psn)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(ROCE_V2_UDP_PORT) };
	struct rxe_icrc_addr a = { .family = AF_INET, .sport = 4791,
				   .dport = 4791, .df = true };
	uint8_t pkt[MAD_PKT];
	size_t n = MAD_PKT - 4;

	bth_init((struct ib_bth *)pkt, IB_OPC_UD | IB_OP_SEND_ONLY, false,
		 false, 0, 0xffff, 1, false, psn);
	deth_set((struct ib_deth *)(pkt + IB_BTH_BYTES), GSI_QKEY, 1);
	memcpy(pkt + IB_BTH_BYTES + IB_DETH_BYTES, m->b, IB_MAD_BYTES);
	inet_pton(AF_INET, "127.0.0.2", a.saddr);
	inet_pton(AF_INET, "127.0.0.1", a.daddr);
	rxe_icrc_put(pkt + n, rxe_icrc_packet(&a, pkt, n));
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(sendto(fd, pkt, sizeof(pkt), 0, (void *)&to,
				sizeof(to)),
			 (ssize_t)sizeof(pkt));
}

/* The next MAD the stack's QP1 sent the raw peer: a UD SEND_ONLY from
 * QP1 to QP1 with the GSI Q_Key and a good ICRC. False when none came
 * (@flags MSG_DONTWAIT: none queued). */
static bool raw_recv_mad(int fd, int flags, struct ib_mad *m)
{
	struct rxe_icrc_addr a = { .family = AF_INET, .dport = 4791,
				   .df = true };
	const struct ib_deth *deth;
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	uint8_t pkt[512];
	ssize_t n;

	n = recvfrom(fd, pkt, sizeof(pkt), flags, (void *)&from, &fl);
	if (n < 0)
		return false;
	ck_assert_int_eq(n, MAD_PKT);
	ck_assert_uint_eq(ntohl(from.sin_addr.s_addr), 0x7f000001);
	a.sport = ntohs(from.sin_port);
	memcpy(a.saddr, &from.sin_addr, 4);
	inet_pton(AF_INET, "127.0.0.2", a.daddr);
	ck_assert_uint_eq(rxe_icrc_get(pkt + n - 4),
			  rxe_icrc_packet(&a, pkt, (size_t)n - 4));
	ck_assert_uint_eq(bth_opcode((const struct ib_bth *)pkt),
			  IB_OPC_UD | IB_OP_SEND_ONLY);
	ck_assert_uint_eq(bth_qpn((const struct ib_bth *)pkt), 1);
	deth = (const struct ib_deth *)(pkt + IB_BTH_BYTES);
	ck_assert_uint_eq(deth_qkey(deth), GSI_QKEY);
	ck_assert_uint_eq(deth_sqpn(deth), 1);
	memcpy(m->b, pkt + IB_BTH_BYTES + IB_DETH_BYTES, IB_MAD_BYTES);
	return true;
}

static void path_to_peer(it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4.s_addr = htonl(0x7f000002);
	ck_assert_it_ok(it_get_pathinfo(F.ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(n, 1);
}

/*
 * A peer that never answers: the SIDR_REQ goes out again after each
 * response time-out (IBA 12.11.2), five more times (2000 ms set-up
 * time-out in six intervals), every copy the same request: one request
 * ID, one transaction ID, one service ID, the same private data. Then the
 * requester's EVD gets IT_CM_MSG_UD_SERVICE_REPLY_EVENT: IT-API 2.1 has
 * no event or status of its own for a SIDR time-out (it_api.h's
 * it_ud_svc_req_status_t ends at IT_UD_REQ_REDIRECTED), so the request is
 * reported as not granted, IT_UD_SVC_REQ_REJECTED, without an endpoint.
 */
START_TEST(sidr_mute_peer)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	it_ud_svc_req_handle_t u = NULL;
	struct ib_mad first, m;
	struct ib_cm_sidr_req r0, r;
	it_path_t path;
	it_event_t ev;
	int fd = raw_peer(), n = 0;

	q.conn_qual.serviceid = htobe64(0x5151ull);
	path_to_peer(&path);
	ck_assert_it_ok(it_ud_service_request_handle_create(
		&q, F.msg, &path, hello, sizeof(hello), &u));
	ck_assert_it_ok(it_ud_service_request(u));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_UD_SERVICE_REPLY_EVENT);
	ck_assert_ptr_eq(ev.ud_svc_reply.ud_svc, u);
	ck_assert_int_eq(ev.ud_svc_reply.status, IT_UD_SVC_REQ_REJECTED);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_id, 0);
	ck_assert_uint_eq(ev.ud_svc_reply.ep_info.ud_ep_key, 0);
	ck_assert(!ev.ud_svc_reply.private_data_present);

	/* Everything was sent before the time-out was reported. */
	ck_assert(raw_recv_mad(fd, MSG_DONTWAIT, &first));
	ck_assert_uint_eq(ib_mad_get16(&first, IB_MAD_OFF_ATTR_ID),
			  IB_CM_ATTR_SIDR_REQ);
	ib_cm_sidr_req_decode(&first, &r0);
	ck_assert_uint_ne(r0.request_id, 0);
	ck_assert_uint_eq(r0.pkey, 0xffff);
	ck_assert_uint_eq(r0.service_id, 0x5151ull);
	ck_assert_int_eq(memcmp(r0.private_data, hello, sizeof(hello)), 0);
	n = 1;
	while (raw_recv_mad(fd, MSG_DONTWAIT, &m)) {
		ib_cm_sidr_req_decode(&m, &r);
		ck_assert_uint_eq(r.request_id, r0.request_id);
		/* Not merely the same ID: the same MAD, TID included. */
		ck_assert_mem_eq(m.b, first.b, IB_MAD_BYTES);
		n++;
	}
	ck_assert_int_eq(n, 6);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "sending SIDR_REQ again"),
			  5);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "no SIDR_REP after 6 tries"),
			  1);
	ck_assert_it_ok(it_ud_service_request_handle_free(u));
	close(fd);
}
END_TEST

/* Wait (bounded) until the CM logged @n lines containing @what. */
static void wait_log(tu_log_capture *cap, const char *what, unsigned int n)
{
	for (int i = 0; i < 2000; i++) {
		if (tu_log_count(cap, G_LOG_LEVEL_MASK, what) >= n)
			break;
		g_usleep(10 * 1000);
	}
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK, what), n);
}

/*
 * The raw peer asks for service 0x6262 with a SIDR_REQ and sends the
 * same one again (its SIDR_REP "lost"): before the listener answers the
 * copy is dropped; after the answer the copy gets the remembered SIDR_REP
 * again, the same 256 bytes. Either way the listener saw one request.
 * Another request ID from the same source is a new request.
 */
START_TEST(sidr_duplicate_request)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	it_remote_ep_info_t info = { .ud_ep_id = 0x1234, .ud_ep_key = QKEY };
	static const unsigned char yes[] = "UD QP 0x1234";
	static const uint8_t ask_pd[] = "raw peer asking";
	struct ib_cm_sidr_req req = { .request_id = 0xd00dfeed,
				      .pkey = 0xffff,
				      .service_id = 0x6262ull };
	struct ib_cm_sidr_rep rep;
	struct ib_mad m, rep1, rep2;
	it_listen_handle_t l;
	it_event_t ev;
	int fd = raw_peer();
	const uint64_t tid = 0x0000abcd12345678ull;

	q.conn_qual.serviceid = htobe64(0x6262ull);
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req,
					 IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	memcpy(req.private_data, ask_pd, sizeof(ask_pd));
	ib_mad_cm_init(&m, IB_CM_ATTR_SIDR_REQ, tid);
	ib_cm_sidr_req_encode(&m, &req);

	raw_send_mad(fd, &m, 0);
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	ck_assert(ev.ud_svc_request.private_data_present);
	ck_assert_int_eq(memcmp(ev.ud_svc_request.private_data, ask_pd,
				sizeof(ask_pd)),
			 0);
	/* Not answered yet: the copy is dropped, no second request. */
	raw_send_mad(fd, &m, 1);
	wait_log(cap, "not answered yet, dropped", 1);
	ck_assert(!raw_recv_mad(fd, MSG_DONTWAIT, &rep1));

	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_EP_INFO_VALID, info, yes,
					    sizeof(yes)));
	ck_assert(raw_recv_mad(fd, 0, &rep1));
	ck_assert_uint_eq(ib_mad_get16(&rep1, IB_MAD_OFF_ATTR_ID),
			  IB_CM_ATTR_SIDR_REP);
	/* 12.11.2: the reply carries the request's transaction ID. */
	ck_assert_uint_eq(ib_mad_get64(&rep1, IB_MAD_OFF_TID), tid);
	ib_cm_sidr_rep_decode(&rep1, &rep);
	ck_assert_uint_eq(rep.request_id, 0xd00dfeed);
	ck_assert_uint_eq(rep.status, IB_SIDR_SUCCESS);
	ck_assert_uint_eq(rep.qpn, 0x1234);
	ck_assert_uint_eq(rep.qkey, QKEY);
	ck_assert_uint_eq(rep.service_id, 0x6262ull);
	ck_assert_int_eq(memcmp(rep.private_data, yes, sizeof(yes)), 0);

	/* Answered: the copy gets the same SIDR_REP again. */
	raw_send_mad(fd, &m, 2);
	ck_assert(raw_recv_mad(fd, 0, &rep2));
	ck_assert_mem_eq(rep2.b, rep1.b, IB_MAD_BYTES);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "SIDR_REP sent again"),
			  1);
	ck_assert(!it_wait_event_for(F.req, 1000, &ev));

	/* Another request ID is another request. */
	req.request_id = 0xd00dfeee;
	ib_mad_cm_init(&m, IB_CM_ATTR_SIDR_REQ, tid + 1);
	ib_cm_sidr_req_encode(&m, &req);
	raw_send_mad(fd, &m, 3);
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT);
	ck_assert_it_ok(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    IT_UD_SVC_REQ_REJECTED, info, NULL,
					    0));
	ck_assert(raw_recv_mad(fd, 0, &m));
	ib_cm_sidr_rep_decode(&m, &rep);
	ck_assert_uint_eq(rep.request_id, 0xd00dfeee);
	ck_assert_uint_eq(rep.status, IB_SIDR_REJECT);
	ck_assert_uint_eq(rep.qpn, 0);
	ck_assert_it_ok(it_listen_free(l));
	close(fd);
}
END_TEST

#endif /* HOSTRDMA_CONFORMANCE_RUNNER */

/*
 * The conformance runner's itapi-ud-rxe: the cases on IT-API alone, on the
 * device under test (it_setup_rxe names it there), the address handles'
 * and paths' address the one given with -a. Left out: sidr_mute_peer and
 * sidr_duplicate_request (a raw UDP socket on 127.0.0.2:4791 plays the
 * peer's CM with hand-made MADs and checks ours byte for byte; not built
 * into the runner).
 */
Suite *suite_itapi_ud_rxe_device(void)
{
	Suite *s = suite_create("itapi-ud-rxe");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, datagram_lands);
	tcase_add_test(tc, datagram_imm);
	tcase_add_test(tc, wrong_qkey_dropped);
	tcase_add_test(tc, sidr_then_datagram);
	tcase_add_test(tc, sidr_rejected_and_unknown);
	tcase_add_test(tc, sidr_port_space);
	suite_add_tcase(s, tc);
	return s;
}

#ifndef HOSTRDMA_CONFORMANCE_RUNNER
Suite *suite_itapi_ud_rxe(void)
{
	Suite *s = suite_create("itapi-ud-rxe");
	TCase *tc = tcase_create("rxe-lo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, datagram_lands);
	tcase_add_test(tc, datagram_imm);
	tcase_add_test(tc, wrong_qkey_dropped);
	tcase_add_test(tc, sidr_then_datagram);
	tcase_add_test(tc, sidr_rejected_and_unknown);
	tcase_add_test(tc, sidr_port_space);
	tcase_add_test(tc, sidr_mute_peer);
	tcase_add_test(tc, sidr_duplicate_request);
	suite_add_tcase(s, tc);
	return s;
}
#endif /* HOSTRDMA_CONFORMANCE_RUNNER */
