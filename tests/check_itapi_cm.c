/* SPDX-License-Identifier: MIT */
/*
 * IT-API connections in one process over siw on lo: listen, connect,
 * accept, reject with private data, private data limits, disconnect,
 * time-outs, hand-off, many connections; socket conversion and a listener
 * whose process runs out of descriptors are in check_itapi_cm_sockets.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/check_itapi_cm.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

struct it_fix itcm_fix;

static void setup(void)
{
	it_setup_siw();
	it_fix_open(&F);
}

static void setup_rxe(void)
{
	it_setup_rxe();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

/* A listener on @s's IA (F, or the peer side: it_fix_peer). */
static it_listen_handle_t listen_on(struct it_fix *s, it_conn_qual_t *q)
{
	it_listen_handle_t l;

	memset(q, 0, sizeof(*q));
	q->type = IT_IANA_PORT;
	ck_assert_it_ok(it_listen_create(s->ia, 0, s->req, IT_LISTEN_NO_FLAG,
					 q, &l));
	ck_assert_uint_ne(ntohs(q->conn_qual.port), 0);
	return l;
}

static it_listen_handle_t listen_any(it_conn_qual_t *q)
{
	return listen_on(&F, q);
}

/* A free TCP port on lo, below the ephemeral range. */
static uint16_t free_port(void)
{
	return tu_free_tcp_ports(1);
}

START_TEST(connect_accept_send)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	struct it_buf sa, rb;
	it_lmr_triplet_t s, r;
	it_ep_param_t p;
	it_event_t ev;
	int sends = 0, recvs = 0;

	it_buf_new(&F, &sa, 4096, IT_PRIV_LOCAL);
	it_buf_new(P, &rb, 4096, IT_PRIV_LOCAL);
	memset(rb.mem, 0xee, rb.len);
	r = it_seg(&rb, 16, 1024);
	ck_assert_it_ok(it_post_recv(b, &r, 1, 77, IT_COMPLETION_FLAG |
							IT_NOTIFY_FLAG));
	it_connect_pair(&F, a, b);
	ck_assert_it_ok(it_ep_query(a, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_ep_query(b, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_CONNECTED);

	for (size_t i = 0; i < 100; i++)
		sa.mem[i] = (unsigned char)(i * 7 + 1);
	s = it_seg(&sa, 0, 100);
	ck_assert_it_ok(it_post_send(a, &s, 1, 55,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	/* a's completion on F's EVD, b's on the peer's (one EVD when the
	 * peer is F). */
	while (sends + recvs < 2) {
		it_wait_event(sends ? P->dto : F.dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
			ck_assert_ptr_eq(ev.dto_cmpl.ep, a);
			ck_assert_uint_eq(ev.dto_cmpl.cookie, 55);
			sends++;
		} else {
			ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
			ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
			ck_assert_uint_eq(ev.dto_cmpl.cookie, 77);
			ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 100);
			recvs++;
		}
	}
	/* The bytes landed at offset 16 and nowhere else. */
	ck_assert_int_eq(memcmp(rb.mem + 16, sa.mem, 100), 0);
	for (size_t i = 0; i < rb.len; i++)
		if (i < 16 || i >= 116)
			ck_assert_uint_eq(rb.mem[i], 0xee);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sa);
	it_buf_free(&rb);
}
END_TEST

/* The next CM message event for @ep (others of other endpoints are kept
 * in @stash and returned first by later calls). */
static it_event_t stash[64];
int itcm_n_stash;

void itcm_conn_event_for(it_ep_handle_t ep, it_event_t *out)
{
	it_evd_handle_t msg = F.msg;
	it_ep_param_t p;

	/* An endpoint of the peer's IA has its events there. */
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_IA, &p));
	if (p.ia != F.ia)
		msg = it_fix_peer(&F)->msg;
	for (int i = 0; i < itcm_n_stash; i++)
		if (stash[i].conn.ep == ep) {
			*out = stash[i];
			memmove(&stash[i], &stash[i + 1],
				(size_t)(itcm_n_stash - i - 1) *
					sizeof(stash[0]));
			itcm_n_stash--;
			return;
		}
	for (;;) {
		it_wait_event(msg, out);
		if (out->conn.ep == ep)
			return;
		ck_assert_int_lt(itcm_n_stash, (int)G_N_ELEMENTS(stash));
		stash[itcm_n_stash++] = *out;
	}
}

static void start_connect(it_ep_handle_t ep, const it_conn_qual_t *q,
			  const void *pdata, size_t len)
{
	it_path_t path;

	it_loopback_path(&F, &path);
	ck_assert_it_ok(it_ep_connect(ep, &path, NULL, q,
				      IT_CONNECT_FLAG_TWO_WAY, pdata, len));
}

it_ep_state_rc_t itcm_ep_state(it_ep_handle_t ep)
{
	it_ep_param_t p;

	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &p));
	return p.ep_state.rc;
}

START_TEST(private_data_roundtrip)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_on(P, &q);
	it_event_t ev;

	itcm_n_stash = 0;
	start_connect(a, &q, "hello-connect", 13);
	ck_assert_int_eq(itcm_ep_state(a),
			 IT_EP_STATE_ACTIVE1_CONNECTION_PENDING);
	it_wait_event(P->req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_ptr_eq(ev.conn_req.evd, P->req);
	ck_assert(ev.conn_req.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "hello-connect", 13),
			 0);
	ck_assert_int_eq(ev.conn_req.conn_qual.type, IT_IANA_PORT);
	ck_assert_uint_eq(ev.conn_req.conn_qual.conn_qual.port,
			  q.conn_qual.port);
	ck_assert_int_eq(ev.conn_req.source_addr.addr_type, IT_IPV4);
	ck_assert_uint_eq(ev.conn_req.source_addr.addr.ipv4.s_addr,
			  it_loopback_ipv4());
	ck_assert_uint_eq(ev.conn_req.spigot_id, 0);
	ck_assert_uint_gt(ev.conn_req.max_message_size, 0);
	ck_assert_uint_eq(ev.conn_req.rdma_read_ird, 4);
	ck_assert_uint_eq(ev.conn_req.rdma_read_ord, 4);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, (const unsigned char *)"hello-accept", 12));
	ck_assert_int_eq(
		itcm_ep_state(b) == IT_EP_STATE_PASSIVE_CONNECTION_PENDING ||
			itcm_ep_state(b) == IT_EP_STATE_CONNECTED,
		1);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "hello-accept", 12), 0);
	if (it_env_is_rxe()) {
		/* RoCE: the path names GIDs, ::ffff:127.0.0.1. */
		const struct in6_addr *g =
			&ev.conn.dst_path.remote.ib.remote_port_gid;
		uint32_t lo = it_loopback_ipv4();

		ck_assert(IN6_IS_ADDR_V4MAPPED(g));
		ck_assert_int_eq(memcmp(&g->s6_addr[12], &lo, 4), 0);
	} else {
		ck_assert_int_eq(ev.conn.dst_path.remote.iwarp.ip_vers,
				 IT_IP_VERS_IPV4);
		ck_assert_uint_eq(
			ev.conn.dst_path.remote.iwarp.raddr.ipv4.s_addr,
			it_loopback_ipv4());
	}
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_CONNECTED);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* IT-API's three-way handshake over the InfiniBand CM: the REP reaches
 * the active consumer as ACCEPT_ARRIVAL; the RTU (with the active side's
 * private data) leaves only when it accepts, and the passive side is
 * established only then. */
static void three_way_start(it_ep_handle_t a, it_ep_handle_t b,
			    it_event_t *arrival)
{
	struct it_fix *P = it_fix_peer(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_on(P, &q);
	it_ia_info_t *info = NULL;
	it_path_t path;
	it_event_t ev;

	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert(info->three_way_handshake_support);
	it_ia_info_free(info);
	itcm_n_stash = 0;
	it_loopback_path(&F, &path);
	ck_assert_it(it_ep_connect(a, &path, NULL, &q,
				   IT_CONNECT_FLAG_TWO_WAY |
					   IT_CONNECT_FLAG_THREE_WAY,
				   NULL, 0),
		     IT_ERR_INVALID_CN_EST_FLAGS);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_THREE_WAY,
				      (const unsigned char *)"req", 3));
	it_wait_event(P->req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id,
				     (const unsigned char *)"rep-data", 8));
	itcm_conn_event_for(a, arrival);
	ck_assert_event(arrival, IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT);
	ck_assert(arrival->conn.private_data_present);
	ck_assert_int_eq(memcmp(arrival->conn.private_data, "rep-data", 8),
			 0);
	ck_assert_uint_ne(arrival->conn.cn_est_id, 0);
	ck_assert_int_eq(itcm_ep_state(a),
			 IT_EP_STATE_ACTIVE2_CONNECTION_PENDING);
	/* The passive side waits for the RTU: no event, still pending. */
	g_usleep(200 * 1000);
	ck_assert_int_eq(itcm_n_stash, 0);
	ck_assert_it(it_evd_dequeue(F.msg, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_it(it_evd_dequeue(P->msg, &ev), IT_ERR_QUEUE_EMPTY);
	ck_assert_int_eq(itcm_ep_state(b),
			 IT_EP_STATE_PASSIVE_CONNECTION_PENDING);
	ck_assert_it_ok(it_listen_free(l));
}

START_TEST(three_way_accept)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	struct it_buf sa, rb;
	it_lmr_triplet_t s, r;
	it_event_t ev;

	three_way_start(a, b, &ev);
	ck_assert_it(it_ep_accept(a, ev.conn.cn_est_id + 1, NULL, 0),
		     IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it(it_ep_accept(a, ev.conn.cn_est_id, NULL, 4),
		     IT_ERR_FAULT);
	ck_assert_it_ok(it_ep_accept(a, ev.conn.cn_est_id,
				     (const unsigned char *)"rtu!", 4));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "rtu!", 4), 0);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_CONNECTED);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_CONNECTED);

	/* And the connection carries data. */
	it_buf_new(&F, &sa, 4096, IT_PRIV_LOCAL);
	it_buf_new(P, &rb, 4096, IT_PRIV_LOCAL);
	memset(sa.mem, 0x5a, 64);
	r = it_seg(&rb, 0, 64);
	s = it_seg(&sa, 0, 64);
	ck_assert_it_ok(it_post_recv(b, &r, 1, 1, IT_COMPLETION_FLAG |
							IT_NOTIFY_FLAG));
	ck_assert_it_ok(it_post_send(a, &s, 1, 2, IT_COMPLETION_FLAG |
							IT_NOTIFY_FLAG));
	/* a's send on F's EVD, b's receive on the peer's. */
	for (int n = 0; n < 2; n++) {
		it_wait_event(n ? P->dto : F.dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	}
	ck_assert_int_eq(memcmp(rb.mem, sa.mem, 64), 0);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sa);
	it_buf_free(&rb);
}
END_TEST

/* Three-way, no answer from the active consumer within the connection's
 * time-out (1 s here): the active side gives up with a REJ "timeout"
 * (NONPEER_REJECT, IT_CN_REJ_TIMEOUT); the passive side, told to wait by
 * the MRA meanwhile, sees its accepted connection broken. */
START_TEST(three_way_unanswered)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_on(P, &q);
	it_path_t path;
	it_event_t ev;

	itcm_n_stash = 0;
	it_loopback_path(&F, &path);
	path.timeout = 1000 * 1000;
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_THREE_WAY, NULL, 0));
	it_wait_event(P->req, &ev);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_TIMEOUT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(three_way_reject)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_cn_est_identifier_t id;
	it_event_t ev;

	three_way_start(a, b, &ev);
	id = ev.conn.cn_est_id;
	ck_assert_it_ok(it_reject(id, (const unsigned char *)"changed my mind",
				  15));
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	/* Answered once. */
	ck_assert_it(it_reject(id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it(it_ep_accept(a, id, NULL, 0), IT_ERR_INVALID_EP_STATE);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "changed my mind", 15),
			 0);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
}
END_TEST

/* A listener on IT_IANA_LR_PORT takes requests from its remote port only
 * (from any address: the qualifier names no address); others are refused
 * as if nobody listened, and its consumer never sees them. The request
 * event names both ports. */
START_TEST(listen_lr_port)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F),
		       c = it_ep_new(&F);
	it_conn_qual_t lq = { .type = IT_IANA_LR_PORT }, q;
	uint16_t ports = tu_free_tcp_ports(2), mine = ports,
		 other = (uint16_t)(ports + 1);
	it_listen_handle_t l, l2;
	it_listen_param_t lp;
	it_ia_info_t *info;
	it_path_t path;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert(info->spigot_info[0].passive_side_conn_qual &
		  IT_IANA_LR_PORT);
	it_ia_info_free(info);
	ck_assert_it(it_listen_create(F.ia, 0, F.req, IT_LISTEN_NO_FLAG, &lq,
				      &l),
		     IT_ERR_INVALID_CONN_QUAL);	/* remote port 0 */
	lq.conn_qual.lr_port.remote = htons(mine);
	ck_assert_it(it_listen_create(F.ia, 0, F.req,
				      IT_LISTEN_CONN_QUAL_INPUT, &lq, &l),
		     IT_ERR_INVALID_CONN_QUAL);	/* local port 0 */
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, IT_LISTEN_NO_FLAG,
					 &lq, &l));
	ck_assert_int_eq(lq.type, IT_IANA_LR_PORT);
	ck_assert_uint_ne(lq.conn_qual.lr_port.local, 0);
	ck_assert_uint_eq(ntohs(lq.conn_qual.lr_port.remote), mine);
	ck_assert_it_ok(it_listen_query(l, IT_LISTEN_PARAM_ALL, &lp));
	ck_assert_int_eq(lp.connect_qual.type, IT_IANA_LR_PORT);
	ck_assert_uint_eq(lp.connect_qual.conn_qual.lr_port.local,
			  lq.conn_qual.lr_port.local);
	ck_assert_uint_eq(lp.connect_qual.conn_qual.lr_port.remote,
			  htons(mine));
	/* The local port is the listener's, whatever the remote. */
	q.type = IT_IANA_PORT;
	q.conn_qual.port = lq.conn_qual.lr_port.local;
	ck_assert_it(it_listen_create(F.ia, 0, F.req,
				      IT_LISTEN_CONN_QUAL_INPUT, &q, &l2),
		     IT_ERR_CONN_QUAL_BUSY);

	/* From another port: refused by nobody, not seen by the consumer. */
	it_loopback_path(&F, &path);
	q.type = IT_IANA_LR_PORT;
	q.conn_qual.lr_port.local = htons(other);
	q.conn_qual.lr_port.remote = lq.conn_qual.lr_port.local;
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_it(it_evd_dequeue(F.req, &ev), IT_ERR_QUEUE_EMPTY);

	/* From the listener's remote port: a request naming both. */
	q.conn_qual.lr_port.local = htons(mine);
	ck_assert_it_ok(it_ep_connect(b, &path, NULL, &q, 0,
				      (const unsigned char *)"lr", 2));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_int_eq(ev.conn_req.conn_qual.type, IT_IANA_LR_PORT);
	ck_assert_uint_eq(ev.conn_req.conn_qual.conn_qual.lr_port.local,
			  lq.conn_qual.lr_port.local);
	ck_assert_uint_eq(ev.conn_req.conn_qual.conn_qual.lr_port.remote,
			  htons(mine));
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "lr", 2), 0);
	ck_assert_it_ok(it_ep_accept(c, ev.conn_req.cn_est_id, NULL, 0));
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(c, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_it_ok(it_listen_free(l));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_ep_free(c));
}
END_TEST

/* EP high watermarks: an EP on an SRQ holds each receive until its
 * completion event is dequeued. Reaching the soft watermark posts
 * IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK once (again after the count fell
 * below); reaching the hard one breaks the connection, at both ends. The
 * receive EVD hands out its fd, so completions reach it (and count)
 * without the consumer dequeuing. */
START_TEST(ep_hi_watermarks)
{
	it_ep_handle_t a = it_ep_new(&F), b, c = NULL;
	it_evd_handle_t rcv;
	it_srq_handle_t srq;
	it_ep_attributes_t at, m;
	it_ia_info_t *info;
	struct it_buf sb, rb;
	it_lmr_triplet_t t;
	it_ep_param_t p;
	it_event_t ev;
	int fd = -1;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert(info->soft_hi_watermark_support);
	ck_assert(info->hard_hi_watermark_support);
	it_ia_info_free(info);
	ck_assert_it_ok(it_srq_create(F.pz, 1, 16, &srq));
	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM,
				      IT_EVD_CREATE_FD, 64, 0, NULL, &rcv,
				      &fd));
	it_ep_attr_default(&F, &at, 16);
	at.srv.rc.soft_hi_watermark = 2;
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg,
				     IT_EP_NO_FLAG, &at, &c),
		     IT_ERR_INVALID_WATERMARK);	/* no SRQ to count */
	ck_assert_ptr_null(c);
	at.srv.rc.srq = srq;
	at.srv.rc.hard_hi_watermark = 4;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, rcv, F.msg, IT_EP_SRQ,
					&at, &b));
	ck_assert_it_ok(it_ep_query(b, IT_EP_PARAM_SOFT_HI_WATERMARK |
					       IT_EP_PARAM_HARD_HI_WATERMARK,
				    &p));
	ck_assert_uint_eq(p.attr.srv.rc.soft_hi_watermark, 2);
	ck_assert_uint_eq(p.attr.srv.rc.hard_hi_watermark, 4);
	it_buf_new(&F, &sb, 4096, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 4096, IT_PRIV_LOCAL);
	for (int i = 0; i < 8; i++) {
		t = it_seg(&rb, (size_t)i * 64, 64);
		ck_assert_it_ok(it_post_recv(srq, &t, 1, (uint64_t)(100 + i),
					     IT_COMPLETION_FLAG));
	}
	it_connect_pair(&F, a, b);

	/* Two messages: the soft watermark, once. */
	for (int i = 0; i < 2; i++) {
		memset(sb.mem + i * 64, 'a' + i, 64);
		t = it_seg(&sb, (size_t)i * 64, 64);
		ck_assert_it_ok(it_post_send(a, &t, 1, 1, 0));
	}
	it_wait_event(F.aff, &ev);
	ck_assert_event(&ev, IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK);
	ck_assert_ptr_eq(ev.aff_async.cause.ep, b);
	for (int i = 0; i < 2; i++) {
		it_wait_event(rcv, &ev);
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	}
	ck_assert_int_eq(memcmp(rb.mem, sb.mem, 128), 0);
	ck_assert(!it_wait_event_for(F.aff, 100000, &ev));
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_CONNECTED);

	/* Watermarks change while connected; an EP without SRQ has none. */
	memset(&m, 0, sizeof(m));
	m.srv.rc.soft_hi_watermark = 3;
	ck_assert_it_ok(it_ep_modify(b, IT_EP_PARAM_SOFT_HI_WATERMARK, &m));
	ck_assert_it(it_ep_modify(a, IT_EP_PARAM_SOFT_HI_WATERMARK, &m),
		     IT_ERR_INVALID_WATERMARK);
	ck_assert_it(it_ep_modify(b, IT_EP_PARAM_SOFT_HI_WATERMARK |
					     IT_EP_PARAM_MAX_IRD, &m),
		     IT_ERR_INVALID_MASK);

	/* Four more, none dequeued: soft at 3, then the hard watermark
	 * breaks the connection at both ends. */
	for (int i = 2; i < 6; i++) {
		t = it_seg(&sb, 0, 64);
		ck_assert_it_ok(it_post_send(a, &t, 1, 1, 0));
	}
	it_wait_event(F.aff, &ev);
	ck_assert_event(&ev, IT_ASYNC_AFF_EP_SOFT_HI_WATERMARK);
	ck_assert_ptr_eq(ev.aff_async.cause.ep, b);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);

	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_evd_free(rcv));
	ck_assert_it_ok(it_srq_free(srq));
	it_buf_free(&sb);
	it_buf_free(&rb);
}
END_TEST

START_TEST(reject_with_private_data)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_on(P, &q);
	it_cn_est_identifier_t id;
	it_event_t ev;

	itcm_n_stash = 0;
	start_connect(a, &q, NULL, 0);
	it_wait_event(P->req, &ev);
	ck_assert(!ev.conn_req.private_data_present);
	id = ev.conn_req.cn_est_id;
	ck_assert_it(it_reject(id, NULL, 4), IT_ERR_FAULT);
	ck_assert_it_ok(it_reject(id, (const unsigned char *)"no thanks", 9));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "no thanks", 9), 0);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	/* Answered once. */
	ck_assert_it(it_reject(id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it(it_ep_accept(b, id, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_UNCONNECTED);
	ck_assert_it(it_reject(987654, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(private_data_limits)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F), c = it_ep_new(&F);
	unsigned char big[IT_MAX_PRIV_DATA + 1];
	it_conn_qual_t q;
	it_listen_handle_t l = listen_any(&q);
	it_path_t path;
	it_event_t ev;

	memset(big, 0x33, sizeof(big));
	itcm_n_stash = 0;
	it_loopback_path(&F, &path);
	ck_assert_it(it_ep_connect(a, &path, NULL, &q, 0, big, sizeof(big)),
		     IT_ERR_INVALID_PDATA_LENGTH);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_UNCONNECTED);
	/* Exactly the limit passes, and arrives whole. */
	start_connect(a, &q, big, IT_MAX_PRIV_DATA);
	it_wait_event(F.req, &ev);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, big,
				IT_MAX_PRIV_DATA),
			 0);
	ck_assert_it(it_ep_accept(b, ev.conn_req.cn_est_id, big, sizeof(big)),
		     IT_ERR_INVALID_PDATA_LENGTH);
	ck_assert_it(it_reject(ev.conn_req.cn_est_id, big, sizeof(big)),
		     IT_ERR_INVALID_PDATA_LENGTH);
	/* Still pending after the refusals. */
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, big,
				     IT_MAX_PRIV_DATA));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	/* An iWARP close carries none; a RoCE DREQ as much as the rest. */
	if (it_env_is_rxe())
		ck_assert_it(it_ep_disconnect(a, big, sizeof(big)),
			     IT_ERR_INVALID_PDATA_LENGTH);
	else
		ck_assert_it(it_ep_disconnect(a, big, 1),
			     IT_ERR_INVALID_PDATA_LENGTH);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_CONNECTED);
	ck_assert_it(it_ep_accept(c, 1, NULL, 0), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(disconnect_graceful)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	struct it_buf r;
	it_lmr_triplet_t t;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it(it_ep_disconnect(a, NULL, 0), IT_ERR_INVALID_EP_STATE);
	it_buf_new(P, &r, 64, IT_PRIV_LOCAL);
	it_connect_pair(&F, a, b);
	t = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(b, &t, 1, 5, CN));
	ck_assert_it_ok(it_ep_disconnect(a, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
	/* b's receive comes back flushed. */
	it_wait_event(P->dto, &ev);
	ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 5);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_ERR_FLUSHED);
	ck_assert_it(it_ep_disconnect(a, NULL, 0), IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_post_send(a, &t, 1, 1, CN), IT_ERR_INVALID_EP_STATE);
	it_buf_free(&r);
}
END_TEST

/* RoCE: an orderly close carries private data in the DREQ, which the
 * peer's disconnect event shows; the closing side's own event has none. */
START_TEST(disconnect_private_data)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_ia_info_t *info;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert_uint_eq(info->disconnect_private_data_len, IT_MAX_PRIV_DATA);
	it_ia_info_free(info);
	it_connect_pair(&F, a, b);
	ck_assert_it(it_ep_disconnect(a, NULL, 4), IT_ERR_FAULT);
	ck_assert_it_ok(it_ep_disconnect(a, (const unsigned char *)"bye!", 4));
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "bye!", 4), 0);
	ck_assert_uint_eq(ev.conn.private_data[4], 0);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert(!ev.conn.private_data_present);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
}
END_TEST

/* Freeing a connected endpoint closes abortively: the peer sees the
 * connection break, not an orderly close. */
START_TEST(disconnect_abortive)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new_peer(&F);
	it_event_t ev;

	itcm_n_stash = 0;
	it_connect_pair(&F, a, b);
	ck_assert_it_ok(it_ep_free(a));
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
}
END_TEST

START_TEST(disconnect_pending)
{
	it_ep_handle_t a = it_ep_new(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_any(&q);
	it_event_t ev;

	itcm_n_stash = 0;
	start_connect(a, &q, NULL, 0);
	it_wait_event(F.req, &ev);
	/* Abandoned before the answer: the event comes at once. */
	ck_assert_it_ok(it_ep_disconnect(a, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(nonpeer_rejects)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	it_event_t ev;
	int mute;

	itcm_n_stash = 0;
	/* Nothing listens there. */
	q.conn_qual.port = htons(free_port());
	start_connect(a, &q, NULL, 0);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_OTHER);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_NONOPERATIONAL);
	/* Something listens but never speaks MPA: the time-out. */
	mute = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = it_loopback_ipv4();
	ck_assert_int_eq(bind(mute, (void *)&in, sizeof(in)), 0);
	ck_assert_int_eq(listen(mute, 4), 0);
	ck_assert_int_eq(getsockname(mute, (void *)&in, &len), 0);
	q.conn_qual.port = in.sin_port;
	start_connect(b, &q, NULL, 0);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
	ck_assert_int_eq(ev.conn.reject_reason_code, IT_CN_REJ_TIMEOUT);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_NONOPERATIONAL);
	close(mute);
}
END_TEST

START_TEST(silent_peer_blocks_nobody)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	struct sockaddr_in in = { .sin_family = AF_INET };
	it_conn_qual_t q;
	it_listen_handle_t l = listen_any(&q);
	char c;
	int silent;

	itcm_n_stash = 0;
	/* A peer that connects and says nothing. */
	silent = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = it_loopback_ipv4();
	in.sin_port = q.conn_qual.port;
	ck_assert_int_eq(connect(silent, (void *)&in, sizeof(in)), 0);
	/* Meanwhile a real connection is set up. */
	it_connect_pair(&F, a, b);
	/* The silent one is dropped when its request times out; no
	 * request event was ever posted for it. */
	ck_assert_int_eq(read(silent, &c, 1), 0);
	close(silent);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(listen_errors_and_query)
{
	it_conn_qual_t q, q2;
	it_listen_handle_t l = listen_any(&q), l2 = NULL;
	it_listen_param_t p;
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	it_ep_handle_t a = it_ep_new(&F);
	it_event_t ev;
	int other;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_listen_query(l, IT_LISTEN_PARAM_ALL, &p));
	ck_assert_ptr_eq(p.ia_handle, F.ia);
	ck_assert_uint_eq(p.spigot_id, 0);
	ck_assert_ptr_eq(p.connect_evd, F.req);
	ck_assert_uint_eq(p.connect_qual.conn_qual.port, q.conn_qual.port);
	ck_assert_it(it_listen_query(l, (it_listen_param_mask_t)0x40, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_evd_free(F.req), IT_ERR_EVD_BUSY);
	/* The qualifier is taken. */
	q2 = q;
	ck_assert_it(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT,
				      &q2, &l2),
		     IT_ERR_CONN_QUAL_BUSY);
	/* ... also when a plain socket has it. */
	other = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = htonl(INADDR_ANY);
	ck_assert_int_eq(bind(other, (void *)&in, sizeof(in)), 0);
	ck_assert_int_eq(listen(other, 1), 0);
	ck_assert_int_eq(getsockname(other, (void *)&in, &len), 0);
	q2.conn_qual.port = in.sin_port;
	ck_assert_it(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT,
				      &q2, &l2),
		     IT_ERR_CONN_QUAL_BUSY);
	close(other);
	q2.conn_qual.port = 0;
	ck_assert_it(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT,
				      &q2, &l2),
		     IT_ERR_INVALID_CONN_QUAL);
	q2.type = IT_IB_SERVICEID;
	ck_assert_it(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT,
				      &q2, &l2),
		     IT_ERR_INVALID_CONN_QUAL);
	ck_assert_it(it_listen_create(F.ia, 0, F.msg, 0, &q2, &l2),
		     IT_ERR_INVALID_EVD_TYPE);
	ck_assert_it(it_listen_create(F.ia, 0, NULL, 0, &q2, &l2),
		     IT_ERR_INVALID_EVD);
	ck_assert_it(it_listen_create(F.ia, 1, F.req, 0, &q2, &l2),
		     IT_ERR_INVALID_SPIGOT);
	ck_assert_it(it_listen_create(F.ia, 0, F.req,
				      (it_listen_flags_t)0x80, &q2, &l2),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_listen_create(F.ia, 0, F.req, 0, NULL, &l2),
		     IT_ERR_FAULT);
	ck_assert_ptr_null(l2);
	/* Freed: the port refuses connections. */
	ck_assert_it_ok(it_listen_free(l));
	ck_assert_it(it_listen_free(l), IT_ERR_INVALID_LISTEN);
	start_connect(a, &q, NULL, 0);
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT);
}
END_TEST

START_TEST(connect_errors)
{
	it_ep_handle_t a = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_path_t path, p2;
	it_listen_handle_t l;

	it_loopback_path(&F, &path);
	q.conn_qual.port = htons(free_port());
	ck_assert_it(it_ep_connect(a, NULL, NULL, &q, 0, NULL, 0),
		     IT_ERR_FAULT);
	ck_assert_it(it_ep_connect(a, &path, NULL, &q,
				   IT_CONNECT_FLAG_THREE_WAY, NULL, 0),
		     IT_ERR_INVALID_CN_EST_FLAGS);
	ck_assert_it(it_ep_connect(a, &path, NULL, &q,
				   (it_cn_est_flags_t)0x40, NULL, 0),
		     IT_ERR_INVALID_CN_EST_FLAGS);
	q.type = IT_IB_SERVICEID;
	ck_assert_it(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_CONN_QUAL);
	q.type = IT_IANA_PORT;
	q.conn_qual.port = 0;
	ck_assert_it(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_CONN_QUAL);
	q.conn_qual.port = htons(free_port());
	p2 = path;
	p2.spigot_id = 2;
	ck_assert_it(it_ep_connect(a, &p2, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_SPIGOT);
	p2 = path;
	p2.remote.iwarp.raddr.ipv4.s_addr = 0;
	ck_assert_it(it_ep_connect(a, &p2, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_NETADDR);
	p2.remote.iwarp.ip_vers = (it_ip_vers_t)9;
	ck_assert_it(it_ep_connect(a, &p2, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_NETADDR);
	/* Not behind this IA (siw_lo): refused, the log says why. */
	{
		g_autoptr(tu_log_capture) cap = tu_log_capture_begin(NULL);
		g_autofree char *text = NULL;

		p2 = path;
		p2.remote.iwarp.laddr.ipv4.s_addr = 0;
		inet_pton(AF_INET, "203.0.113.5", &p2.remote.iwarp.raddr.ipv4);
		ck_assert_it(it_ep_connect(a, &p2, NULL, &q, 0, NULL, 0),
			     IT_ERR_INVALID_NETADDR);
		text = tu_log_text(cap);
		ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_MASK,
					   "203.0.113.5") > 0,
			      "the address is not named:%s", text);
		/* A source address that is not ours. */
		p2 = path;
		inet_pton(AF_INET, "203.0.113.6", &p2.remote.iwarp.laddr.ipv4);
		ck_assert_it(it_ep_connect(a, &p2, NULL, &q, 0, NULL, 0),
			     IT_ERR_INVALID_SOURCE_PATH);
		ck_assert_uint_gt(tu_log_count(cap, G_LOG_LEVEL_MASK,
					       "203.0.113.6"),
				  0);
	}
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_UNCONNECTED);
	/* A second connect while the first is under way. */
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, 0, &q, &l));
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0));
	ck_assert_it(it_ep_connect(a, &path, NULL, &q, 0, NULL, 0),
		     IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_ep_accept(a, 1, NULL, 0), IT_ERR_INVALID_EP_STATE);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(local_and_remote_port)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q, lr = { .type = IT_IANA_LR_PORT };
	it_listen_handle_t l = listen_any(&q);
	uint16_t mine = free_port();
	it_ia_info_t *info;
	it_path_t path;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert(info->spigot_info[0].active_side_conn_qual &
		  IT_IANA_LR_PORT);
	ck_assert(info->spigot_info[0].passive_side_conn_qual &
		  IT_IANA_LR_PORT);
	it_ia_info_free(info);
	lr.conn_qual.lr_port.local = htons(mine);
	lr.conn_qual.lr_port.remote = q.conn_qual.port;
	it_loopback_path(&F, &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &lr, 0, NULL, 0));
	it_wait_event(F.req, &ev);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	/* The local port is taken by the connection now. */
	{
		struct sockaddr_in in = { .sin_family = AF_INET };
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		in.sin_addr.s_addr = it_loopback_ipv4();
		in.sin_port = htons(mine);
		ck_assert_int_ne(bind(fd, (void *)&in, sizeof(in)), 0);
		ck_assert_int_eq(errno, EADDRINUSE);
		close(fd);
	}
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

START_TEST(handoff)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_evd_handle_t req2;
	it_conn_qual_t q1, q2 = { .type = IT_IANA_PORT }, none;
	it_listen_handle_t l1 = listen_any(&q1), l2;
	it_cn_est_identifier_t id;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0,
				      NULL, &req2, NULL));
	ck_assert_it_ok(it_listen_create(F.ia, 0, req2, 0, &q2, &l2));
	start_connect(a, &q1, "handoff", 7);
	it_wait_event(F.req, &ev);
	id = ev.conn_req.cn_est_id;
	none.type = IT_IANA_PORT;
	none.conn_qual.port = htons(free_port());
	ck_assert_it(it_handoff(&none, 0, id), IT_ERR_INVALID_CONN_QUAL);
	ck_assert_it(it_handoff(&q2, 0, id + 1000), IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it(it_handoff(&q2, 300, id), IT_ERR_INVALID_SPIGOT);
	ck_assert_it(it_handoff(&q2, 1, id), IT_ERR_INVALID_SPIGOT);
	ck_assert_it(it_handoff(NULL, 0, id), IT_ERR_FAULT);
	ck_assert_it_ok(it_handoff(&q2, 0, id));
	/* The other listener reports it, with its own qualifier. */
	it_wait_event(req2, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_uint_eq(ev.conn_req.cn_est_id, id);
	ck_assert_uint_eq(ev.conn_req.conn_qual.conn_qual.port,
			  q2.conn_qual.port);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "handoff", 7), 0);
	ck_assert_it_ok(it_ep_accept(b, id, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_it_ok(it_listen_free(l1));
	ck_assert_it_ok(it_listen_free(l2));
}
END_TEST

/* it_handoff to a listener on an InfiniBand service ID: RoCE hands the
 * request over (the new listener reports it under its service ID);
 * iWARP has no such listeners. */
START_TEST(handoff_service_id)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_evd_handle_t req2;
	it_conn_qual_t q1, q2 = { .type = IT_IB_SERVICEID };
	it_listen_handle_t l1 = listen_any(&q1), l2 = NULL;
	uint64_t sid = 0x0000000012340000ull | (uint64_t)(getpid() & 0xffff);
	it_cn_est_identifier_t id;
	it_event_t ev;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0,
				      NULL, &req2, NULL));
	q2.conn_qual.serviceid = htobe64(sid);
	if (it_env_is_rxe())
		ck_assert_it_ok(it_listen_create(F.ia, 0, req2,
						 IT_LISTEN_CONN_QUAL_INPUT,
						 &q2, &l2));
	start_connect(a, &q1, "to-sid", 6);
	it_wait_event(F.req, &ev);
	id = ev.conn_req.cn_est_id;
	if (!it_env_is_rxe()) {
		ck_assert_it(it_handoff(&q2, 0, id), IT_ERR_INVALID_CONN_QUAL);
		ck_assert_it_ok(it_reject(id, NULL, 0));
		ck_assert_it_ok(it_listen_free(l1));
		ck_assert_it_ok(it_evd_free(req2));
		return;
	}
	q2.conn_qual.serviceid = 0;
	ck_assert_it(it_handoff(&q2, 0, id), IT_ERR_INVALID_CONN_QUAL);
	q2.conn_qual.serviceid = htobe64(sid + 1);
	ck_assert_it(it_handoff(&q2, 0, id), IT_ERR_INVALID_CONN_QUAL);
	q2.conn_qual.serviceid = htobe64(sid);
	ck_assert_it_ok(it_handoff(&q2, 0, id));
	it_wait_event(req2, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_uint_eq(ev.conn_req.cn_est_id, id);
	ck_assert_int_eq(ev.conn_req.conn_qual.type, IT_IB_SERVICEID);
	ck_assert_uint_eq(be64toh(ev.conn_req.conn_qual.conn_qual.serviceid),
			  sid);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "to-sid", 6), 0);
	ck_assert_it_ok(it_ep_accept(b, id, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_it_ok(it_listen_free(l1));
	ck_assert_it_ok(it_listen_free(l2));
}
END_TEST

/* RoCE: IT_IANA_LR_PORT's local port is the source port of rdma_cm's
 * private data header; the listener's side names the request by it.
 * With the path's local GID, and without (the route picks the address). */
static void lr_port_rxe(bool local_gid, uint16_t mine)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q, lr = { .type = IT_IANA_LR_PORT };
	it_listen_handle_t l = listen_any(&q);
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-cm");
	uint32_t lo = it_loopback_ipv4();
	char a4[INET_ADDRSTRLEN];
	g_autofree char *want = g_strdup_printf(
		"from %s:%u", inet_ntop(AF_INET, &lo, a4, sizeof(a4)), mine);
	it_path_t path;
	it_event_t ev;

	itcm_n_stash = 0;
	lr.conn_qual.lr_port.local = htons(mine);
	lr.conn_qual.lr_port.remote = q.conn_qual.port;
	it_loopback_path(&F, &path);
	ck_assert(!IN6_IS_ADDR_UNSPECIFIED(&path.remote.ib.local_port_gid));
	if (!local_gid)
		path.remote.ib.local_port_gid = in6addr_any;
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &lr, 0,
				      (const unsigned char *)"lr", 2));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "lr", 2), 0);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_MASK, want) > 0,
		      "no \"%s\" in the cm's log", want);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_it_ok(it_listen_free(l));
}

START_TEST(local_and_remote_port_rxe)
{
	uint16_t mine = (uint16_t)(20000 + (getpid() % 10000) * 2);

	lr_port_rxe(true, mine);
	lr_port_rxe(false, (uint16_t)(mine + 1));
}
END_TEST

#define MANY 16

START_TEST(many_connections)
{
	struct it_fix *P = it_fix_peer(&F);
	it_ep_handle_t act[MANY], pas[MANY];
	struct it_buf sb, rb;
	it_conn_qual_t q;
	it_listen_handle_t l = listen_on(P, &q);
	it_lmr_triplet_t t;
	it_event_t ev;
	int established = 0, accepted = 0, recvs = 0;

	itcm_n_stash = 0;
	it_buf_new(&F, &sb, MANY * 16, IT_PRIV_LOCAL);
	it_buf_new(P, &rb, MANY * 16, IT_PRIV_LOCAL);
	for (int i = 0; i < MANY; i++) {
		act[i] = it_ep_new(&F);
		pas[i] = it_ep_new_peer(&F);
		t = it_seg(&rb, (size_t)i * 16, 16);
		ck_assert_it_ok(it_post_recv(pas[i], &t, 1, (it_dto_cookie_t)i,
					     CN));
	}
	/* All at once, then the listener answers them as they come. */
	for (int i = 0; i < MANY; i++)
		start_connect(act[i], &q, &i, sizeof(i));
	while (accepted < MANY) {
		int who;

		it_wait_event(P->req, &ev);
		memcpy(&who, ev.conn_req.private_data, sizeof(who));
		ck_assert_int_ge(who, 0);
		ck_assert_int_lt(who, MANY);
		ck_assert_it_ok(it_ep_accept(pas[who], ev.conn_req.cn_est_id,
					     NULL, 0));
		accepted++;
	}
	/* The active ends' events on F's EVD, then the passive ends' on
	 * the peer's (one EVD when the peer is F). */
	while (established < 2 * MANY) {
		it_wait_event(established < MANY ? F.msg : P->msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
		established++;
	}
	for (int i = 0; i < MANY; i++) {
		snprintf((char *)sb.mem + i * 16, 16, "conn %d", i);
		t = it_seg(&sb, (size_t)i * 16, 16);
		ck_assert_it_ok(it_post_send(act[i], &t, 1, 1000, 0));
	}
	while (recvs < MANY) {
		char want[16];

		it_wait_event(P->dto, &ev);
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		ck_assert_ptr_eq(ev.dto_cmpl.ep, pas[ev.dto_cmpl.cookie]);
		snprintf(want, sizeof(want), "conn %d",
			 (int)ev.dto_cmpl.cookie);
		ck_assert_str_eq((char *)rb.mem + ev.dto_cmpl.cookie * 16,
				 want);
		recvs++;
	}
	ck_assert_it_ok(it_listen_free(l));
	it_buf_free(&sb);
	it_buf_free(&rb);
}
END_TEST

/* IT_CONNECT_SUPPRESS_IRD_ORD: on iWARP the connection is made without
 * the IRD/ORD exchange (MPA revision 1, no RFC 6581 header), so the
 * listener learns none and the private data arrives as sent; the
 * InfiniBand CM's REQ always carries them, so RoCE refuses the flag. */
START_TEST(suppress_ird_ord)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_conn_qual_t q;
	it_listen_handle_t l = listen_any(&q), l2;
	it_ia_info_t *info;
	it_path_t path;
	it_event_t ev;

	itcm_n_stash = 0;
	it_loopback_path(&F, &path);
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert_int_eq(info->ird_ord_suppressible,
			 it_env_ird_ord_suppressible() ? IT_TRUE : IT_FALSE);
	it_ia_info_free(info);
	if (!it_env_ird_ord_suppressible()) {
		ck_assert_it(it_ep_connect(a, &path, NULL, &q,
					   IT_CONNECT_SUPPRESS_IRD_ORD,
					   NULL, 0),
			     IT_ERR_INVALID_CN_EST_FLAGS);
		ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_UNCONNECTED);
		ck_assert_it(it_listen_create(F.ia, 0, F.req,
					      IT_LISTEN_SUPPRESS_IRD_ORD, &q,
					      &l2),
			     IT_ERR_INVALID_FLAGS);
		ck_assert_it_ok(it_listen_free(l));
		return;
	}
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY |
					      IT_CONNECT_SUPPRESS_IRD_ORD,
				      (const unsigned char *)"quiet", 5));
	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	/* With the exchange (private_data_roundtrip) these are 4 and 4. */
	ck_assert_uint_eq(ev.conn_req.rdma_read_ird, 0);
	ck_assert_uint_eq(ev.conn_req.rdma_read_ord, 0);
	ck_assert(ev.conn_req.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "quiet", 5), 0);
	ck_assert_uint_eq(ev.conn_req.private_data[5], 0);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id,
				     (const unsigned char *)"ok", 2));
	itcm_conn_event_for(a, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "ok", 2), 0);
	ck_assert_uint_eq(ev.conn.private_data[2], 0);
	itcm_conn_event_for(b, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert_int_eq(itcm_ep_state(a), IT_EP_STATE_CONNECTED);
	ck_assert_int_eq(itcm_ep_state(b), IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_listen_free(l));
}
END_TEST

/* IT_LISTEN_SUPPRESS_IRD_ORD: the listener answers an enhanced MPA
 * Request (RFC 6581, IRD/ORD in front of the private data) with a
 * revision 1 Reply that has no IRD/ORD; a listener without the flag
 * answers with the enhanced header. The initiator here is a raw socket
 * that sends the Request and reads the Reply's bytes. */
static void raw_read(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		ck_assert_msg(n > 0, "MPA Reply: read %zd (%s)", n,
			      g_strerror(errno));
		got += (size_t)n;
	}
}

static void raw_mpa_exchange(bool suppress)
{
	it_ep_handle_t b = it_ep_new(&F);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct timeval tv = { .tv_sec = 10 };
	unsigned char req[20 + 4 + 5], rep[20 + 4 + 2];
	uint16_t pd_len;
	it_event_t ev;
	int fd;

	itcm_n_stash = 0;
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req,
					 suppress ? IT_LISTEN_SUPPRESS_IRD_ORD :
						    IT_LISTEN_NO_FLAG,
					 &q, &l));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	in.sin_addr.s_addr = it_loopback_ipv4();
	in.sin_port = q.conn_qual.port;
	ck_assert_int_eq(connect(fd, (void *)&in, sizeof(in)), 0);
	/* Key, flags (enhanced), revision 2, private data length; IRD 4,
	 * ORD 4; then the consumer's private data. */
	memcpy(req, "MPA ID Req Frame", 16);
	req[16] = 0x10;
	req[17] = 2;
	req[18] = 0;
	req[19] = 4 + 5;
	req[20] = 0;
	req[21] = 4;
	req[22] = 0;
	req[23] = 4;
	memcpy(req + 24, "hello", 5);
	ck_assert_int_eq(write(fd, req, sizeof(req)), (ssize_t)sizeof(req));

	it_wait_event(F.req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_uint_eq(ev.conn_req.rdma_read_ird, 4);
	ck_assert_uint_eq(ev.conn_req.rdma_read_ord, 4);
	ck_assert_int_eq(memcmp(ev.conn_req.private_data, "hello", 5), 0);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id,
				     (const unsigned char *)"ok", 2));

	raw_read(fd, rep, 20);
	ck_assert_int_eq(memcmp(rep, "MPA ID Rep Frame", 16), 0);
	pd_len = (uint16_t)(rep[18] << 8 | rep[19]);
	if (suppress) {
		ck_assert_uint_eq(rep[17], 1);
		ck_assert_uint_eq(rep[16] & 0x10, 0);
		ck_assert_uint_eq(pd_len, 2);
		raw_read(fd, rep + 20, 2);
		ck_assert_int_eq(memcmp(rep + 20, "ok", 2), 0);
	} else {
		ck_assert_uint_eq(rep[17], 2);
		ck_assert_uint_ne(rep[16] & 0x10, 0);
		ck_assert_uint_eq(pd_len, 4 + 2);
		raw_read(fd, rep + 20, 4 + 2);
		ck_assert_int_eq(memcmp(rep + 24, "ok", 2), 0);
	}
	close(fd);
	ck_assert_it_ok(it_listen_free(l));
}

START_TEST(listen_suppress_ird_ord)
{
	raw_mpa_exchange(false);
	if (it_env_ird_ord_suppressible()) {
		raw_mpa_exchange(true);
	} else {
		/* Not claimed (a verbs device: the kernel's iw_cm sends
		 * IRD/ORD whatever it is asked): refused. */
		it_conn_qual_t q = { .type = IT_IANA_PORT };
		it_listen_handle_t l;

		ck_assert_it(it_listen_create(F.ia, 0, F.req,
					      IT_LISTEN_SUPPRESS_IRD_ORD, &q,
					      &l),
			     IT_ERR_INVALID_FLAGS);
	}
}
END_TEST

Suite *suite_itapi_cm(void)
{
	Suite *s = suite_create("itapi-cm");
	TCase *tc = tcase_create("siw-lo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, connect_accept_send);
	tcase_add_test(tc, private_data_roundtrip);
	tcase_add_test(tc, reject_with_private_data);
	tcase_add_test(tc, private_data_limits);
	tcase_add_test(tc, disconnect_graceful);
	tcase_add_test(tc, disconnect_abortive);
	tcase_add_test(tc, disconnect_pending);
	tcase_add_test(tc, nonpeer_rejects);
	tcase_add_test(tc, silent_peer_blocks_nobody);
	tcase_add_test(tc, listen_errors_and_query);
	tcase_add_test(tc, connect_errors);
	tcase_add_test(tc, local_and_remote_port);
	tcase_add_test(tc, listen_lr_port);
	tcase_add_test(tc, ep_hi_watermarks);
	tcase_add_test(tc, suppress_ird_ord);
	tcase_add_test(tc, listen_suppress_ird_ord);
	tcase_add_test(tc, handoff);
	tcase_add_test(tc, handoff_service_id);
	tcase_add_test(tc, many_connections);
	itapi_cm_add_socket_convert_tests(tc); /* check_itapi_cm_sockets.c */
	suite_add_tcase(s, tc);
	itapi_cm_add_emfile_case(s);
	itapi_cm_add_slow_mpa_case(s);
	itapi_cm_add_close_case(s);
	return s;
}

/* The same cases over soft-RoCE on lo: the InfiniBand CM over QP1 with
 * rdma_cm's addressing. Socket conversion is iWARP's alone. */
Suite *suite_itapi_cm_rxe(void)
{
	Suite *s = suite_create("itapi-cm-rxe");
	TCase *tc = tcase_create("rxe-lo");

	tcase_add_checked_fixture(tc, setup_rxe, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, connect_accept_send);
	tcase_add_test(tc, private_data_roundtrip);
	tcase_add_test(tc, reject_with_private_data);
	tcase_add_test(tc, private_data_limits);
	tcase_add_test(tc, disconnect_graceful);
	tcase_add_test(tc, disconnect_abortive);
	tcase_add_test(tc, disconnect_pending);
	tcase_add_test(tc, suppress_ird_ord);
	tcase_add_test(tc, handoff);
	tcase_add_test(tc, handoff_service_id);
	tcase_add_test(tc, local_and_remote_port_rxe);
	tcase_add_test(tc, three_way_accept);
	tcase_add_test(tc, listen_lr_port);
	tcase_add_test(tc, ep_hi_watermarks);
	tcase_add_test(tc, three_way_reject);
	tcase_add_test(tc, three_way_unanswered);
	tcase_add_test(tc, disconnect_private_data);
	tcase_add_test(tc, many_connections);
	/* The transport's own cases: itapi-cm-ib (check_itapi_cm_ib.c). */
	suite_add_tcase(s, tc);
	return s;
}
