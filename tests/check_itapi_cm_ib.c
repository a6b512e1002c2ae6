/* SPDX-License-Identifier: MIT */
/*
 * IT-API connections over soft-RoCE on lo, the InfiniBand CM's own cases:
 * service IDs, a peer that never answers (REQ retries, then the time-out),
 * a slow consumer (MRA), lost and duplicated MADs (the provider's fault
 * hooks on every received packet, QP1's included), an application
 * that frees its endpoint on the receive a DREQ or REJ flushed, and one
 * that frees its endpoint while the library breaks its connection (a QP
 * failure, the hard high watermark).
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
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
/*
 * A burst of connections between two ends in one process: every REQ,
 * REP and RTU goes through the device's one QP1, whose 64 send slots
 * free up only as the manager reaps their completions. A MAD that found
 * them all busy was dropped ("all 64 send slots busy; MAD not sent")
 * and the connection waited for its sender's retry (1.7 s: itapi-scale's
 * connect/disconnect cycles stalled in most runs). Now it waits for a
 * slot: every connection comes up, no MAD is dropped or sent again.
 */
#define BURST 120

START_TEST(connection_burst)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	static it_ep_handle_t a[BURST], b[BURST];
	it_evd_handle_t req, msg;
	it_ep_attributes_t attr;
	it_listen_handle_t l;
	unsigned int nb = 0, est = 0, i;
	gint64 deadline;
	it_path_t path;
	it_event_t ev;

	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_REQ_EVENT_STREAM, 0,
				      2 * BURST, 0, NULL, &req, NULL));
	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_MSG_EVENT_STREAM, 0,
				      4 * BURST, 0, NULL, &msg, NULL));
	it_ep_attr_default(&F, &attr, 4);
	q.conn_qual.serviceid = htobe64(0xb0b57ull);
	ck_assert_it_ok(it_listen_create(F.ia, 0, req,
					 IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	path_to("127.0.0.1", &path);
	for (i = 0; i < BURST; i++) {
		ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, msg,
						IT_EP_NO_FLAG, &attr, &a[i]));
		ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, msg,
						IT_EP_NO_FLAG, &attr, &b[i]));
	}
	deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
	for (i = 0; i < BURST; i++)
		ck_assert_it_ok(it_ep_connect(a[i], &path, NULL, &q,
					      IT_CONNECT_FLAG_TWO_WAY, NULL,
					      0));
	while (est < 2 * BURST) {
		/* Each request accepted as it comes. */
		while (nb < BURST && it_evd_dequeue(req, &ev) == IT_SUCCESS) {
			ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
			ck_assert_it_ok(it_ep_accept(b[nb++],
						     ev.conn_req.cn_est_id,
						     NULL, 0));
		}
		while (it_evd_dequeue(msg, &ev) == IT_SUCCESS) {
			ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
			est++;
		}
		ck_assert_msg(g_get_monotonic_time() < deadline,
			      "%u of %u ends established, %u requests seen",
			      est, 2 * BURST, nb);
		if (est < 2 * BURST)
			g_usleep(1000);
	}
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK, "not sent"), 0);
	/* Under valgrind a burst takes longer than a MAD's retry time (the
	 * ends answer each other from one slowed process), so a REQ or REP
	 * may rightly go again there; no MAD is dropped all the same. */
	if (!tu_under_valgrind())
		ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_MASK, "again"),
				  0);
	ck_assert_it_ok(it_listen_free(l));
	for (i = 0; i < BURST; i++) {
		ck_assert_it_ok(it_ep_free(a[i]));
		ck_assert_it_ok(it_ep_free(b[i]));
	}
	ck_assert_it_ok(it_evd_free(msg));
	ck_assert_it_ok(it_evd_free(req));
}
END_TEST

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

/*
 * The end of a connection as an application that frees its endpoint on
 * the flushed receive sees it (hostrdma-ping -s without -C does): the
 * passive side's receive is flushed by the peer's DREQ, or by its REJ
 * when the peer frees a connected endpoint (12.9.8.3.1), and a thread
 * frees that EP the moment the flush wakes it. The manager moves the QP
 * to ERR before it reports the end of the connection; the report must
 * not reach into the QP freed in between (ASan: heap-use-after-free in
 * cm_conn_event, freed by rxe_destroy_qp <- it_ep_free), nor name a QP
 * made since at the same address.
 *
 * On a host with spare cores the manager's thread is nearly always
 * through its report before the woken thread has freed anything. To make
 * the free land between the flush and the report every time, the
 * manager's thread runs SCHED_IDLE on the one CPU the freeing thread is
 * pinned to: each wake-up of the freeing thread (by the flush, then by
 * the manager letting go of the QP's lock) preempts it there and then.
 */
struct free_on_flush {
	it_evd_handle_t rq;
	it_ep_handle_t ep;
	int cpu;
	it_event_t ev;
	it_status_t wait_st, free_st;
};

static void *free_on_flush_main(void *arg)
{
	struct free_on_flush *f = arg;
	cpu_set_t set;
	size_t nmore;

	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	f->wait_st = it_evd_wait(f->rq, IT_WAIT_US, &f->ev, &nmore);
	f->free_st = f->wait_st == IT_SUCCESS ? it_ep_free(f->ep) :
						IT_SUCCESS;
	return NULL;
}

/* The thread of this process named @name, or 0. */
static pid_t thread_named(const char *name)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
	const char *ent;

	ck_assert_ptr_nonnull(dir);
	while ((ent = g_dir_read_name(dir))) {
		g_autofree char *path =
			g_strdup_printf("/proc/self/task/%s/comm", ent);
		g_autofree char *comm = NULL;

		if (g_file_get_contents(path, &comm, NULL, NULL) &&
		    strcmp(g_strchomp(comm), name) == 0)
			return (pid_t)atoi(ent);
	}
	return 0;
}

/* The CPU the manager's thread and the freeing thread share; -1 when
 * the host refuses (the test still runs, unforced). */
static int cm_thread_idle_on_one_cpu(void)
{
	struct sched_param none = { 0 };
	pid_t tid = thread_named("hostrdma-cm");
	cpu_set_t set, one;
	int cpu = 0;

	ck_assert_int_ne(tid, 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(tid, sizeof(one), &one) ||
	    sched_setscheduler(tid, SCHED_IDLE, &none))
		return -1;
	return cpu;
}

static void close_frees_on_flush(bool peer_frees)
{
	enum { ROUNDS = 3 };
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_ep_attributes_t attr;
	it_listen_handle_t l;
	struct it_buf buf;
	int cpu = -1;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	it_ep_attr_default(&F, &attr, 8);
	it_buf_new(&F, &buf, 64, IT_PRIV_LOCAL);
	for (int i = 0; i < ROUNDS; i++) {
		struct free_on_flush f = { 0 };
		it_ep_handle_t a = it_ep_new(&F);
		it_lmr_triplet_t seg = it_seg(&buf, 0, 64);
		bool a_done = peer_frees;
		pthread_t th;
		it_event_t ev;

		ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 16,
					      0, NULL, &f.rq, NULL));
		ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, f.rq, F.msg,
						IT_EP_NO_FLAG, &attr, &f.ep));
		connect_accept(a, f.ep, &q);
		ck_assert_it_ok(it_post_recv(f.ep, &seg, 1, 7,
					     IT_COMPLETION_FLAG));
		if (i == 0)
			cpu = cm_thread_idle_on_one_cpu();
		f.cpu = cpu < 0 ? 0 : cpu;
		ck_assert_int_eq(pthread_create(&th, NULL, free_on_flush_main,
						&f),
				 0);
		/* Let it block in it_evd_wait first. */
		g_usleep(50 * 1000);
		if (peer_frees)
			ck_assert_it_ok(it_ep_free(a));
		else
			ck_assert_it_ok(it_ep_disconnect(a, NULL, 0));
		pthread_join(th, NULL);
		ck_assert_it_ok(f.wait_st);
		ck_assert_msg(f.ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT,
			      "round %d: %s, expected the flushed receive", i,
			      itapi_event_name(f.ev.event_number));
		ck_assert_int_eq(f.ev.dto_cmpl.dto_status, IT_DTO_ERR_FLUSHED);
		ck_assert_uint_eq(f.ev.dto_cmpl.cookie, 7);
		ck_assert_it_ok(f.free_st);
		/* The peer that disconnected in order hears the DREP. The
		 * freed EP's own report may have come before it went; none
		 * comes after, and nothing names another EP. */
		while (!a_done) {
			it_wait_event(F.msg, &ev);
			ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
			a_done = ev.conn.ep == a;
		}
		while (it_wait_event_for(F.msg, 300 * 1000, &ev)) {
			ck_assert_msg(ev.conn.ep == f.ep,
				      "round %d: %s for EP %p", i,
				      itapi_event_name(ev.event_number),
				      (void *)ev.conn.ep);
			ck_assert_event(&ev, peer_frees ?
						     IT_CM_MSG_CONN_BROKEN_EVENT :
						     IT_CM_MSG_CONN_DISCONNECT_EVENT);
		}
		if (!peer_frees)
			ck_assert_it_ok(it_ep_free(a));
		ck_assert_it_ok(it_evd_free(f.rq));
	}
	it_buf_free(&buf);
	ck_assert_it_ok(it_listen_free(l));
}

START_TEST(dreq_frees_ep_on_flush)
{
	close_frees_on_flush(false);
}
END_TEST

START_TEST(rej_frees_ep_on_flush)
{
	close_frees_on_flush(true);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The library breaking a connection while the endpoint is freed       */
/* ------------------------------------------------------------------ */

/* A thread of the library parked in a log hook (tu_log_hook_set) until
 * another one got somewhere, or a deadline. */
struct park {
	GMutex lock;
	GCond cond;
	bool parked;	/* a thread waits in park_here */
	bool released;	/* what it waits for happened */
};

static void park_init(struct park *p)
{
	memset(p, 0, sizeof(*p));
	g_mutex_init(&p->lock);
	g_cond_init(&p->cond);
}

static void park_clear(struct park *p)
{
	g_cond_clear(&p->cond);
	g_mutex_clear(&p->lock);
}

/* Wait on @p's condition until *@flag is set or @timeout_us passed;
 * with @set, set *@set (and wake the waiters) first. *@flag then. */
static bool park_wait(struct park *p, bool *set, const bool *flag,
		      gint64 timeout_us)
{
	gint64 end = g_get_monotonic_time() + timeout_us;
	bool v;

	g_mutex_lock(&p->lock);
	if (set) {
		*set = true;
		g_cond_broadcast(&p->cond);
	}
	while (!*flag && g_cond_wait_until(&p->cond, &p->lock, end))
		;
	v = *flag;
	g_mutex_unlock(&p->lock);
	return v;
}

/* In the hook: say so, and wait for the release. Whether it came. */
static bool park_here(struct park *p, gint64 timeout_us)
{
	return park_wait(p, &p->parked, &p->released, timeout_us);
}

/* Whether a thread parked within @timeout_us. */
static bool park_until_parked(struct park *p, gint64 timeout_us)
{
	return park_wait(p, NULL, &p->parked, timeout_us);
}

static void park_release(struct park *p)
{
	g_mutex_lock(&p->lock);
	p->released = true;
	g_cond_broadcast(&p->cond);
	g_mutex_unlock(&p->lock);
}

static bool park_parked(struct park *p)
{
	bool v;

	g_mutex_lock(&p->lock);
	v = p->parked;
	g_mutex_unlock(&p->lock);
	return v;
}

/*
 * An affiliated QP error on a connected RoCE endpoint makes itapi break
 * the connection (itapi_ep_qp_failed): it finds the endpoint's cm_id
 * under the endpoint's lock and disconnects it after dropping the lock,
 * while it_ep_free on the consumer's thread destroys that cm_id. The log
 * hook parks the event's thread just after the lock is dropped (its
 * "breaking the connection" message) until it_ep_free has destroyed the
 * cm_id and then the QP (the QP's "destroyed"), so the disconnect always
 * runs on a connection its owner destroyed. It must answer "not
 * connected"; with no reference of its own it would read the freed
 * cm_id (SIGSEGV here, a heap-use-after-free under ASan).
 */
struct qp_fail_race {
	/* Released: it_ep_free got past the cm_id and the QP. */
	struct park park;
	char qp_prefix[32];	/* "QP[n] " of the endpoint's QP (ual) */
	bool destroyed_while_parked;
	struct rnicpi_device *rdev;
	struct rnicpi_qp *rqp;
};

static void qp_fail_hook(const char *domain, GLogLevelFlags level,
			 const char *msg, void *data)
{
	struct qp_fail_race *r = data;

	(void)level;
	if (!g_strcmp0(domain, "hostrdma-ual") &&
	    g_str_has_prefix(msg, r->qp_prefix) &&
	    g_str_has_suffix(msg, " destroyed"))
		park_release(&r->park);
	else if (!g_strcmp0(domain, "hostrdma-itapi") &&
		 strstr(msg, "the QP failed: breaking the connection"))
		r->destroyed_while_parked =
			park_here(&r->park, 10 * G_TIME_SPAN_SECOND);
}

/* What the provider reports when a QP fails on its own (IBA 11.6.2). */
static gpointer qp_fail_inject(gpointer data)
{
	struct qp_fail_race *r = data;
	struct rnicpi_async_event ev = {
		.type = RNICPI_EVENT_QP_FATAL,
		.status = -EIO,
	};

	ev.element.qp = r->rqp;
	r->rdev->core->async_event(r->rdev, &ev);
	return NULL;
}

START_TEST(qp_failure_races_free)
{
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-itapi");
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct qp_fail_race r = { 0 };
	struct itapi_ep *ep;
	struct ual_qp *qp;
	it_listen_handle_t l;
	it_ep_handle_t a, b;
	it_status_t st;
	bool parked;
	GThread *th;
	it_event_t ev;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	a = it_ep_new(&F);
	b = it_ep_new(&F);
	connect_accept(a, b, &q);
	ep = (struct itapi_ep *)a;
	/* The event names the QP until its dispatch returns: ours keeps
	 * the library's object as long, as a provider's does. */
	qp = ual_qp_get(ep->qp);
	r.rqp = ual_qp_rnicpi(qp);
	r.rdev = ual_device_rnicpi(ep->obj.ia->dev);
	snprintf(r.qp_prefix, sizeof(r.qp_prefix), "QP[%u] ",
		 it_ep_qp_num(a));
	park_init(&r.park);
	tu_log_hook_set(qp_fail_hook, &r);

	th = g_thread_new("qp-fatal", qp_fail_inject, &r);
	parked = park_until_parked(&r.park, 10 * G_TIME_SPAN_SECOND);
	/* Blocks, once the QP is gone, until the event's thread let go of
	 * the endpoint (its QP-number table). */
	st = it_ep_free(a);
	g_thread_join(th);
	tu_log_hook_set(NULL, NULL);
	ual_qp_put(qp);
	park_clear(&r.park);
	ck_assert_msg(parked, "the QP failure broke no connection");
	ck_assert_it_ok(st);
	ck_assert_msg(r.destroyed_while_parked,
		      "it_ep_free did not destroy the QP while the disconnect waited");

	/* The disconnect found the connection destroyed... */
	ck_assert_uint_eq(tu_log_count(cap, G_LOG_LEVEL_DEBUG,
				       "QP failed: no connection to break"),
			  1);
	/* ...and the peer heard the freed endpoint's abortive close. */
	do {
		it_wait_event(F.msg, &ev);
	} while (ev.conn.ep != b);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/*
 * The hard high watermark of an endpoint on an SRQ breaks its connection
 * from the thread that moved the receive's completion out of the CQ
 * (itapi_ep_watermark_act, after the EVD's lock is dropped), while the
 * consumer may free the endpoint on another. The log hook parks that
 * thread at its "breaking the connection" message for half a second:
 * it_ep_free must not free the endpoint under it (it may close the
 * connection, not free the memory the action still reads).
 */
struct wm_free_race {
	struct park park;	/* released: it_ep_free returned */
	it_evd_handle_t rcv;
	bool freed_while_parked;
};

static void wm_free_hook(const char *domain, GLogLevelFlags level,
			 const char *msg, void *data)
{
	struct wm_free_race *r = data;

	(void)level;
	if (!g_strcmp0(domain, "hostrdma-itapi") &&
	    strstr(msg, "hard high watermark") &&
	    strstr(msg, "reached; breaking the connection"))
		r->freed_while_parked =
			park_here(&r->park, G_TIME_SPAN_SECOND / 2);
}

/* The consumer's thread that moves the receive EVD's completions (the
 * EVD is not watched: nothing else does), until one hit the watermark. */
static gpointer wm_pump_main(gpointer data)
{
	struct wm_free_race *r = data;
	gint64 end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;

	while (g_get_monotonic_time() < end) {
		it_evd_pump(r->rcv);
		if (park_parked(&r->park))
			break;
		g_usleep(1000);
	}
	return NULL;
}

START_TEST(hard_watermark_races_free)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct wm_free_race r = { 0 };
	it_ep_attributes_t at;
	it_listen_handle_t l;
	it_srq_handle_t srq;
	it_ep_handle_t a, b;
	it_lmr_triplet_t t;
	struct it_buf buf;
	it_status_t st;
	bool parked;
	GThread *th;
	it_event_t ev;

	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	ck_assert_it_ok(it_srq_create(F.pz, 1, 16, &srq));
	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 16, 0,
				      NULL, &r.rcv, NULL));
	it_ep_attr_default(&F, &at, 16);
	at.srv.rc.srq = srq;
	at.srv.rc.hard_hi_watermark = 1;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, r.rcv, F.msg, IT_EP_SRQ,
					&at, &b));
	a = it_ep_new(&F);
	it_buf_new(&F, &buf, 128, IT_PRIV_LOCAL);
	t = it_seg(&buf, 64, 64);
	ck_assert_it_ok(it_post_recv(srq, &t, 1, 1, IT_COMPLETION_FLAG));
	connect_accept(a, b, &q);

	park_init(&r.park);
	tu_log_hook_set(wm_free_hook, &r);
	th = g_thread_new("wm-pump", wm_pump_main, &r);
	t = it_seg(&buf, 0, 64);
	ck_assert_it_ok(it_post_send(a, &t, 1, 2, 0));
	parked = park_until_parked(&r.park, 10 * G_TIME_SPAN_SECOND);
	st = parked ? it_ep_free(b) : IT_SUCCESS;
	park_release(&r.park);
	g_thread_join(th);
	tu_log_hook_set(NULL, NULL);
	park_clear(&r.park);
	ck_assert_msg(parked, "the receive reached no hard watermark");
	ck_assert_it_ok(st);
	ck_assert_msg(!r.freed_while_parked,
		      "it_ep_free freed the endpoint while its watermark broke the connection");

	/* The peer hears the abortive close. */
	do {
		it_wait_event(F.msg, &ev);
	} while (ev.conn.ep != a);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_evd_free(r.rcv));
	ck_assert_it_ok(it_srq_free(srq));
	it_buf_free(&buf);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

Suite *suite_itapi_cm_ib(void)
{
	Suite *s = suite_create("itapi-cm-ib");
	TCase *tc = tcase_create("rxe-lo");
	TCase *lossy = tcase_create("rxe-lo-lossy");
	TCase *dup = tcase_create("rxe-lo-dup");
	TCase *flush = tcase_create("rxe-lo-free-on-flush");
	TCase *qp_fail = tcase_create("rxe-lo-break-free");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, service_ids);
	tcase_add_test(tc, connection_burst);
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
	/* Its own case: the manager's thread is made SCHED_IDLE, which
	 * lasts until its IA is freed at teardown. */
	tcase_add_checked_fixture(flush, setup, teardown);
	tcase_set_timeout(flush, 60);
	tcase_add_test(flush, dreq_frees_ep_on_flush);
	tcase_add_test(flush, rej_frees_ep_on_flush);
	suite_add_tcase(s, flush);
	tcase_add_checked_fixture(qp_fail, setup, teardown);
	tcase_set_timeout(qp_fail, 60);
	tcase_add_test(qp_fail, qp_failure_races_free);
	tcase_add_test(qp_fail, hard_watermark_races_free);
	suite_add_tcase(s, qp_fail);
	return s;
}
