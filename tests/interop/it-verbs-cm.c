/* SPDX-License-Identifier: MIT */
/*
 * it-verbs-cm IA server|client ADDR PORT: the IT-API connection functions
 * and events between two processes, each on an IA of its own (in the lab:
 * siw0 or rxe0 of two guests, through librdmacm).
 *
 *   client                              server (listening on PORT)
 *   connect, private data "hello-1"  -> CONN_REQUEST with "hello-1",
 *   PEER_REJECT with "no-thanks"     <- it_reject with "no-thanks"
 *   connect to PORT + 1 (nobody)     -> NONPEER_REJECT
 *   connect, "hello-3", then give up -> CONN_REQUEST with "hello-3",
 *   (it_ep_free after 2 s; on siw0       answered only after 13 s:
 *   the kernel's MPA reply time-out,     it_ep_accept succeeds, then
 *   10 s, ends the attempt first)        BROKEN on the endpoint
 *   connect, "hello-2"               -> CONN_REQUEST with "hello-2",
 *   ESTABLISHED with "welcome"       <- it_ep_accept with "welcome",
 *                                       ESTABLISHED
 *   a Send of "ping"                 -> received "ping"
 *   it_ep_disconnect, DISCONNECT     -> DISCONNECT
 *
 * Prints "client ok" / "server ok" and exits 0, or names what differed.
 */
#include "config.h"

#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/interop/it_util.h"

#define WAIT_US (20u * 1000u * 1000u)

/* Each step on stdout, so that a time-out names the one it waited in. */
#define STEP(what) (printf("step: %s\n", what), fflush(stdout))

struct ctx {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t sq, rq, cm;
	it_lmr_handle_t lmr;
	char buf[256];
};

/* An endpoint, with a receive posted when @recv. */
static it_ep_handle_t make_ep(struct ctx *c, bool recv)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep;
	it_lmr_triplet_t t = { .lmr = c->lmr, .length = 64 };

	memset(&a, 0, sizeof(a));
	a.max_request_dtos = a.max_recv_dtos = 8;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 1;
	IT_TRY(it_ep_rc_create(c->pz, c->sq, c->rq, c->cm, IT_EP_NO_FLAG, &a,
			       &ep));
	if (!recv)
		return ep;
	t.addr.abs = c->buf + 128;
	IT_TRY(it_post_recv(ep, &t, 1, 1, (it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG)));
	return ep;
}

static void expect_pdata(const char *what, const unsigned char *pd,
			 it_boolean_t present, const char *want)
{
	if (!present || memcmp(pd, want, strlen(want) + 1) != 0) {
		fprintf(stderr, "%s: %s: private data %s, expected \"%s\"\n",
			it_prog, what, present ? "differs" : "absent", want);
		exit(1);
	}
}

static void setup(struct ctx *c)
{
	IT_TRY(it_pz_create(c->ia, &c->pz));
	IT_TRY(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
			     &c->sq, NULL));
	IT_TRY(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
			     &c->rq, NULL));
	IT_TRY(it_evd_create(c->ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL,
			     &c->cm, NULL));
	IT_TRY(it_lmr_create(c->pz, c->buf, NULL, sizeof(c->buf),
			     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			     IT_LMR_FLAG_NONE, 0, &c->lmr, NULL));
}

static int server(struct ctx *c, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_evd_handle_t req;
	it_listen_handle_t l;
	it_ep_handle_t ep;
	it_event_t ev;

	IT_TRY(it_ia_create(it_only_ia, 2, 1, &c->ia));
	setup(c);

	IT_TRY(it_evd_create(c->ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL,
			     &req, NULL));
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_listen_create(c->ia, 0, req, IT_LISTEN_CONN_QUAL_INPUT, &q,
				&l));
	printf("listening\n");
	fflush(stdout);
	STEP("IT_CM_REQ_CONN_REQUEST_EVENT on req");
	it_wait_ev(req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev, WAIT_US);
	expect_pdata("first request", ev.conn_req.private_data,
		     ev.conn_req.private_data_present, "hello-1");
	IT_TRY(it_reject(ev.conn_req.cn_est_id,
			 (const unsigned char *)"no-thanks", 10));
	STEP("IT_CM_REQ_CONN_REQUEST_EVENT on req (to be abandoned)");
	it_wait_ev(req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev, WAIT_US);
	expect_pdata("third request", ev.conn_req.private_data,
		     ev.conn_req.private_data_present, "hello-3");
	/* The client gives up meanwhile. */
	sleep(13);
	ep = make_ep(c, false);	/* no receive to flush on c->rq */
	IT_TRY(it_ep_accept(ep, ev.conn_req.cn_est_id, NULL, 0));
	STEP("IT_CM_MSG_CONN_BROKEN_EVENT on c->cm (abandoned request)");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_BROKEN_EVENT, &ev, WAIT_US);
	if (ev.conn.ep != ep) {
		fprintf(stderr, "%s: BROKEN names another endpoint\n",
			it_prog);
		return 1;
	}
	IT_TRY(it_ep_free(ep));
	STEP("IT_CM_REQ_CONN_REQUEST_EVENT on req");
	it_wait_ev(req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev, WAIT_US);
	expect_pdata("second request", ev.conn_req.private_data,
		     ev.conn_req.private_data_present, "hello-2");
	ep = make_ep(c, true);
	IT_TRY(it_ep_accept(ep, ev.conn_req.cn_est_id,
			    (const unsigned char *)"welcome", 8));
	STEP("IT_CM_MSG_CONN_ESTABLISHED_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev, WAIT_US);
	STEP("IT_DTO_RC_RECV_CMPL_EVENT on c->rq");
	it_wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev, WAIT_US);
	if (strcmp(c->buf + 128, "ping") != 0) {
		fprintf(stderr, "%s: received \"%.8s\", expected \"ping\"\n",
			it_prog, c->buf + 128);
		return 1;
	}
	STEP("IT_CM_MSG_CONN_DISCONNECT_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev, WAIT_US);
	IT_TRY(it_ep_free(ep));
	IT_TRY(it_listen_free(l));
	printf("server ok\n");
	return 0;
}

static int client(struct ctx *c, const char *addr, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_lmr_triplet_t t = { .length = 5 };
	it_net_addr_t na;
	it_path_t path;
	it_ep_handle_t ep;
	it_event_t ev;

	if (!it_parse_addr(addr, &na) ||
	    !(c->ia = it_ia_reaching(&na, &path))) {
		fprintf(stderr, "%s: no path to %s on %s\n", it_prog, addr,
			it_only_ia);
		return 1;
	}
	setup(c);
	q.conn_qual.port = htons((uint16_t)port);
	ep = make_ep(c, true);
	IT_TRY(it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			     (const unsigned char *)"hello-1", 8));
	STEP("IT_CM_MSG_CONN_PEER_REJECT_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_PEER_REJECT_EVENT, &ev, WAIT_US);
	expect_pdata("the reject", ev.conn.private_data,
		     ev.conn.private_data_present, "no-thanks");
	IT_TRY(it_ep_free(ep));

	q.conn_qual.port = htons((uint16_t)(port + 1));
	ep = make_ep(c, true);
	IT_TRY(it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			     NULL, 0));
	STEP("IT_CM_MSG_CONN_NONPEER_REJECT_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_NONPEER_REJECT_EVENT, &ev, WAIT_US);
	IT_TRY(it_ep_free(ep));

	/* A request given up before the server answers it. */
	q.conn_qual.port = htons((uint16_t)port);
	ep = make_ep(c, false);
	IT_TRY(it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			     (const unsigned char *)"hello-3", 8));
	STEP("giving up on the third request");
	sleep(2);
	IT_TRY(it_ep_free(ep));

	q.conn_qual.port = htons((uint16_t)port);
	ep = make_ep(c, true);
	IT_TRY(it_ep_connect(ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			     (const unsigned char *)"hello-2", 8));
	STEP("IT_CM_MSG_CONN_ESTABLISHED_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev, WAIT_US);
	expect_pdata("the accept", ev.conn.private_data,
		     ev.conn.private_data_present, "welcome");
	memcpy(c->buf, "ping", 5);
	t.lmr = c->lmr;
	t.addr.abs = c->buf;
	IT_TRY(it_post_send(ep, &t, 1, 2, (it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG)));
	STEP("IT_DTO_SEND_CMPL_EVENT on c->sq");
	it_wait_ev(c->sq, IT_DTO_SEND_CMPL_EVENT, &ev, WAIT_US);
	IT_TRY(it_ep_disconnect(ep, NULL, 0));
	STEP("IT_CM_MSG_CONN_DISCONNECT_EVENT on c->cm");
	it_wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev, WAIT_US);
	IT_TRY(it_ep_free(ep));
	printf("client ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c;
	int port;

	it_prog = "it-verbs-cm";
	if (argc != 5 || (strcmp(argv[2], "server") &&
			  strcmp(argv[2], "client"))) {
		fprintf(stderr, "usage: %s IA server|client ADDR PORT\n",
			it_prog);
		return 2;
	}
	port = atoi(argv[4]);
	if (port < 1 || port > 65534) {
		fprintf(stderr, "%s: port %s\n", it_prog, argv[4]);
		return 2;
	}
	memset(&c, 0, sizeof(c));
	it_only_ia = argv[1];
	return strcmp(argv[2], "server") == 0 ? server(&c, port) :
						client(&c, argv[3], port);
}
