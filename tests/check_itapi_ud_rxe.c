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
 * listens on, a request handle's query and free.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

#include "tests/itapi_testutil.h"
#include "tests/suites.h"

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

static it_addr_handle_t ah_loopback(void)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	it_path_t path = { 0 };
	it_addr_handle_t ah = NULL;

	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_it_ok(it_convert_net_addr(&na, IT_IB_GID, &na));
	path.remote.ib.remote_port_gid = na.addr.gid;
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

static void path_lo(it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_it_ok(it_get_pathinfo(F.ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(n, 1);
}

static const unsigned char hello[] = "which QP serves you?";

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
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	it_remote_ep_info_t info = { .ud_ep_id = qb, .ud_ep_key = QKEY };
	static const unsigned char yes[] = "QP here";
	it_ud_svc_req_param_t qp;
	it_listen_handle_t l;
	it_ud_svc_req_handle_t u;
	struct it_buf sb, rb;
	it_lmr_triplet_t st, rt;
	it_event_t ev;
	int got = 0;

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
	it_buf_new(&F, &sb, 256, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 256, IT_PRIV_LOCAL);
	memset(sb.mem, 0x5c, 100);
	memset(rb.mem, 0xee, rb.len);
	rt = it_seg(&rb, 0, GRH_LEN + 100);
	ck_assert_it_ok(it_post_recvfrom(b, &rt, 1, 50,
					 IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	st = it_seg(&sb, 0, 100);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info = ev.ud_svc_reply.ep_info;
	ck_assert_it_ok(it_post_sendto(a, &st, 1, 51,
				       IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
				       &dst));
	while (got < 2) {
		it_wait_event(F.dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		if (ev.event_number == IT_DTO_UD_RECV_CMPL_EVENT) {
			ck_assert_uint_eq(ev.all_dto_cmpl.ud_ep_id, qa);
			for (size_t i = 0; i < 100; i++)
				ck_assert_uint_eq(rb.mem[GRH_LEN + i], 0x5c);
		}
		got++;
	}
	ck_assert_it_ok(it_ud_service_request_handle_free(u));
	ck_assert_it(it_ud_service_request_handle_free(u),
		     IT_ERR_INVALID_UD_SVC);
	ck_assert_it_ok(it_listen_free(l));
	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sb);
	it_buf_free(&rb);
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

Suite *suite_itapi_ud_rxe(void)
{
	Suite *s = suite_create("itapi-ud-rxe");
	TCase *tc = tcase_create("rxe-lo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, datagram_lands);
	tcase_add_test(tc, wrong_qkey_dropped);
	tcase_add_test(tc, sidr_then_datagram);
	tcase_add_test(tc, sidr_rejected_and_unknown);
	suite_add_tcase(s, tc);
	return s;
}
