/* SPDX-License-Identifier: MIT */
/*
 * IT-API connections over soft-RoCE on lo, the InfiniBand CM's own cases:
 * service IDs, a peer that never answers (REQ retries, then the time-out),
 * a slow consumer (MRA), lost and duplicated MADs (the provider's fault
 * hooks on every received packet, QP1's included).
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/itapi_testutil.h"
#include "tests/suites.h"

static struct it_fix F;

static void setup(void)
{
	it_setup_rxe();
	it_fix_open(&F);
}

/* Every received packet, 25% dropped / 50% duplicated. */
static void setup_lossy(void)
{
	it_setup_rxe();
	g_setenv("HOSTRDMA_OPTIONS", "rxe.fault_drop_ppm=250000,rxe.fault_seed=7",
		 TRUE);
	it_fix_open(&F);
}

static void setup_dup(void)
{
	it_setup_rxe();
	g_setenv("HOSTRDMA_OPTIONS", "rxe.fault_dup_ppm=500000,rxe.fault_seed=3",
		 TRUE);
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

static it_ep_state_rc_t ep_state(it_ep_handle_t ep)
{
	it_ep_param_t p;

	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &p));
	return p.ep_state.rc;
}

static void path_to(const char *ip, it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	ck_assert_int_eq(inet_pton(AF_INET, ip, &na.addr.ipv4), 1);
	ck_assert_it_ok(it_get_pathinfo(F.ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(n, 1);
}

/* Connect @a to @q, accept with @b, both ESTABLISHED. */
static void connect_accept(it_ep_handle_t a, it_ep_handle_t b,
			   const it_conn_qual_t *q)
{
	it_path_t path;
	it_event_t ev;
	int got = 0;

	path_to("127.0.0.1", &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, q,
				      IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	while (got < 2) {
		it_wait_event(F.msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
		got++;
	}
}

START_TEST(service_ids)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_ep_handle_t c = it_ep_new(&F), d = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IB_SERVICEID }, q2, port = { 0 };
	it_listen_handle_t l, l2 = NULL, lp;
	it_path_t path;
	it_event_t ev;
	it_ia_info_t *info = NULL;

	/* A plain IB service ID (not rdma_cm's port space). */
	q.conn_qual.serviceid = htobe64(0x1234567890abcdefull);
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req,
					 IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	q2 = q;
	ck_assert_it(it_listen_create(F.ia, 0, F.req,
				      IT_LISTEN_CONN_QUAL_INPUT, &q2, &l2),
		     IT_ERR_CONN_QUAL_BUSY);
	q2.conn_qual.serviceid = 0;
	ck_assert_it(it_listen_create(F.ia, 0, F.req,
				      IT_LISTEN_CONN_QUAL_INPUT, &q2, &l2),
		     IT_ERR_INVALID_CONN_QUAL);
	path_to("127.0.0.1", &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY,
				      (const unsigned char *)"sid", 3));
	it_wait_event(F.req, &ev);
	ck_assert_int_eq(ev.conn_req.conn_qual.type, IT_IB_SERVICEID);
	ck_assert_uint_eq(be64toh(ev.conn_req.conn_qual.conn_qual.serviceid),
			  0x1234567890abcdefull);
	ck_assert(ev.conn_req.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "sid", 3), 0);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_it_ok(it_listen_free(l));

	/* An IANA port is rdma_cm's TCP space: reachable as its ID. */
	port.type = IT_IANA_PORT;
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &port, &lp));
	q.conn_qual.serviceid =
		htobe64(0x0000000001060000ull | ntohs(port.conn_qual.port));
	connect_accept(c, d, &q);
	ck_assert_int_eq(ep_state(c), IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_listen_free(lp));
	/* The IA says what it takes. */
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert(info->spigot_info[0].active_side_conn_qual &
		  IT_IB_SERVICEID);
	ck_assert(info->spigot_info[0].passive_side_conn_qual &
		  IT_IANA_PORT);
	it_ia_info_free(info);
}
END_TEST

/* Nobody listens: REJ "invalid service ID" at once. A QP1 that never
 * answers (a mute UDP socket on 127.0.0.2:4791): the REQ is sent again
 * and again, then the time-out. */
START_TEST(nonpeer_rejects)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	struct sockaddr_in in = { .sin_family = AF_INET };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_path_t path;
	it_event_t ev;
	int mute;

	q.conn_qual.serviceid = htobe64(0xfeedull);
	path_to("127.0.0.1", &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_OTHER);
	ck_assert_int_eq(ep_state(a), IT_EP_STATE_NONOPERATIONAL);

	mute = socket(AF_INET, SOCK_DGRAM, 0);
	in.sin_addr.s_addr = htonl(0x7f000002);
	in.sin_port = htons(4791);
	ck_assert_int_eq(bind(mute, (void *)&in, sizeof(in)), 0);
	path_to("127.0.0.2", &path);
	ck_assert_it_ok(it_ep_connect(b, &path, NULL, &q, 0, NULL, 0));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_TIMEOUT);
	/* Six REQs (five again) and the REJ that ends it reached it. */
	{
		char buf[512];
		int n = 0;

		while (recv(mute, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			n++;
		ck_assert_int_eq(n, 7);
	}
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "sending REQ again"),
			  5);
	close(mute);
}
END_TEST

/* The consumer takes its time: the peer is told to wait (MRA) instead of
 * sending its REQ again, and the connection still comes up. */
START_TEST(slow_accept_mra)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_listen_handle_t l;
	it_path_t path;
	it_event_t ev;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	path_to("127.0.0.1", &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0));
	it_wait_event(F.req, &ev);
	/* Past three of the active side's retransmission intervals. */
	g_usleep(1200 * 1000);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_uint_ge(tu_log_count(cap, G_LOG_LEVEL_MASK, "sending MRA"),
			  1);
	ck_assert_uint_ge(tu_log_count(cap, G_LOG_LEVEL_MASK, "MRA: waiting"),
			  1);
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "sending REQ again"),
			  0);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* The consumer never answers: after the set-up time-out the request is
 * refused with REJ "timeout", which the active side reports. */
START_TEST(unanswered_request)
{
	it_ep_handle_t a = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	it_path_t path;
	it_event_t ev;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	path_to("127.0.0.1", &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0));
	it_wait_event(F.req, &ev);
	it_wait_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_TIMEOUT);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* With a quarter of all packets lost (MADs included) every connection
 * still comes up, through REQ / REP / RTU sent again, and closes. */
START_TEST(lost_mads)
{
	enum { N = 6 };
	it_ep_handle_t a[N], b[N];
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_listen_handle_t l;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	for (int i = 0; i < N; i++) {
		a[i] = it_ep_new(&F);
		b[i] = it_ep_new(&F);
		connect_accept(a[i], b[i], &q);
		ck_assert_int_eq(ep_state(a[i]), IT_EP_STATE_CONNECTED);
		ck_assert_int_eq(ep_state(b[i]), IT_EP_STATE_CONNECTED);
	}
	ck_assert_uint_gt(tu_log_count(cap, G_LOG_LEVEL_MASK, " again"), 0);
	for (int i = 0; i < N; i++) {
		it_event_t ev;
		int got = 0;

		ck_assert_it_ok(it_ep_disconnect(a[i], NULL, 0));
		while (got < 2) {
			it_wait_event(F.msg, &ev);
			ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
			got++;
		}
	}
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* Half of all packets arrive twice: a duplicated REQ makes no second
 * request, a duplicated REP no second RTU-established. */
START_TEST(duplicated_mads)
{
	enum { N = 6 };
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_listen_handle_t l;
	it_event_t ev;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	for (int i = 0; i < N; i++)
		connect_accept(it_ep_new(&F), it_ep_new(&F), &q);
	/* Nothing more: no second REQUEST, no extra ESTABLISHED. */
	ck_assert(!it_wait_event_for(F.req, 300 * 1000, &ev));
	ck_assert(!it_wait_event_for(F.msg, 1000, &ev));
	ck_assert_uint_gt(tu_log_count(cap, G_LOG_LEVEL_MASK,
				       "duplicate REQ"),
			  0);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

Suite *suite_itapi_cm_ib(void)
{
	Suite *s = suite_create("itapi-cm-ib");
	TCase *tc = tcase_create("rxe-lo");
	TCase *lossy = tcase_create("rxe-lo-lossy");
	TCase *dup = tcase_create("rxe-lo-dup");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, service_ids);
	tcase_add_test(tc, nonpeer_rejects);
	tcase_add_test(tc, slow_accept_mra);
	tcase_add_test(tc, unanswered_request);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(lossy, setup_lossy, teardown);
	tcase_set_timeout(lossy, 120);
	tcase_add_test(lossy, lost_mads);
	suite_add_tcase(s, lossy);
	tcase_add_checked_fixture(dup, setup_dup, teardown);
	tcase_set_timeout(dup, 60);
	tcase_add_test(dup, duplicated_mads);
	suite_add_tcase(s, dup);
	return s;
}
