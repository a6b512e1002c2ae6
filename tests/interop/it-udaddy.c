/* SPDX-License-Identifier: MIT */
/*
 * it-udaddy: the other side of librdmacm's udaddy (rdma-core
 * librdmacm/examples/udaddy.c) over IT-API and libhostrdma only, to run
 * against the Linux kernel's rdma_cm in both roles.
 *
 * udaddy resolves a UD endpoint through rdma_cm's UDP port space, which
 * on RoCE is the InfiniBand CM's SIDR (IBA 12.11): service ID
 * 0x0000000001110000 + port, rdma_cm's header in the SIDR_REQ's private
 * data, and the SIDR_REP's Q_Key rdma_cm's RDMA_UDP_QKEY 0x01234567, which
 * is also the Q_Key of every udaddy UD QP. Then COUNT datagrams of SIZE
 * bytes each way: the client sends first, the server answers with as
 * many once it has them all.
 *
 * Server (-s, guest runs `udaddy -s ADDR`): listen on PORT, answer the
 * UD service request with our UD endpoint, take COUNT datagrams (each
 * with the 40-byte GRH in front, all from one QP), send COUNT back to
 * that QP. udaddy's client waits for them.
 *
 * Client (-c, guest runs `udaddy`): ask for PORT at ADDR, check the reply
 * (endpoint valid, Q_Key 0x01234567), send COUNT datagrams, take COUNT
 * answers from the QP the reply named.
 *
 * Immediate data, as udaddy uses it: every udaddy datagram is a Send with
 * immediate data carrying the sender's own QPN, and udaddy's server
 * answers the QPN that the first datagram's immediate data names. On a
 * device with immediate data (hostrdma_ia_imm_data_size 4) ours send
 * theirs the same way (hostrdma_post_sendto_imm), and every datagram
 * taken must carry a Send's immediate data equal to its source QPN. On
 * one without, ours send plain datagrams and a client does not wait for
 * answers (udaddy's server would send them to QP 0); the guest's log
 * ("data transfers complete", status 0) is then the proof.
 *
 *   it-udaddy -s|-c -a ADDR [-p PORT] [-d IA] [-C COUNT] [-S SIZE] [-v]
 */
#define _GNU_SOURCE
#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"
#include "it_ext.h"
#include "tests/interop/it_util.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_US (60ull * 1000 * 1000)
#define wait_ev(evd, type, ev) it_wait_ev((evd), (type), (ev), WAIT_US)
#define FL ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define RDMA_UDP_QKEY 0x01234567u
#define GRH_LEN 40u
#define MAX_COUNT 64


struct ctx {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto, cm, req;
	it_ep_handle_t ep;
	it_ud_ep_id_t qpn;
	uint8_t *mem;		/* COUNT receive slots, then the send buffer */
	it_lmr_handle_t lmr;
	uint32_t size;
	int count;
	bool imm;		/* the device carries immediate data */
	/* Receive completions that came while send_all waited for its
	 * send completions (one EVD takes both), for recv_all. */
	it_event_t early[MAX_COUNT];
	int n_early, next_early;
};

static void setup(struct ctx *c)
{
	it_ep_attributes_t a = { 0 };
	it_ep_param_t p;
	size_t len = (size_t)(c->count + 1) * (GRH_LEN + c->size);

	IT_TRY(it_pz_create(c->ia, &c->pz));
	IT_TRY(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 4 * MAX_COUNT, 0,
			  NULL, &c->dto, NULL));
	IT_TRY(it_evd_create(c->ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL, &c->cm,
			  NULL));
	IT_TRY(it_evd_create(c->ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL,
			  &c->req, NULL));
	a.max_request_dtos = a.max_recv_dtos = (size_t)c->count;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.ud.ep_info.ud_ep_key = RDMA_UDP_QKEY;
	IT_TRY(it_ep_ud_create(c->pz, c->dto, c->dto, &a, 0, &c->ep));
	IT_TRY(it_ep_query(c->ep, IT_EP_PARAM_ALL, &p));
	c->qpn = p.attr.srv.ud.ep_info.ud_ep_id;
	c->imm = hostrdma_ia_imm_data_size(c->ia) == 4;
	c->mem = calloc(1, len);
	if (!c->mem)
		exit(1);
	IT_TRY(it_lmr_create(c->pz, c->mem, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			  IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &c->lmr, NULL));
}

static void post_recvs(struct ctx *c)
{
	for (int i = 0; i < c->count; i++) {
		it_lmr_triplet_t t = { .lmr = c->lmr,
				       .length = GRH_LEN + c->size };

		t.addr.abs = c->mem + (size_t)i * (GRH_LEN + c->size);
		IT_TRY(it_post_recvfrom(c->ep, &t, 1, 100 + (uint64_t)i, FL));
	}
}

/* COUNT datagrams of SIZE bytes to @qpn with rdma_cm's Q_Key, all
 * completed. */
static void send_all(struct ctx *c, it_addr_handle_t ah, it_ud_ep_id_t qpn)
{
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	uint8_t *buf = c->mem + (size_t)c->count * (GRH_LEN + c->size);
	it_event_t ev;

	for (uint32_t i = 0; i < c->size; i++)
		buf[i] = (uint8_t)('a' + i % 26);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info.ud_ep_id = qpn;
	dst.addr.ud.ep_info.ud_ep_key = RDMA_UDP_QKEY;
	for (int i = 0; i < c->count; i++) {
		it_lmr_triplet_t t = { .lmr = c->lmr, .length = c->size };

		t.addr.abs = buf;
		if (c->imm)
			IT_TRY(hostrdma_post_sendto_imm(c->ep, &t, 1,
							200 + (uint64_t)i, FL,
							&dst, c->qpn));
		else
			IT_TRY(it_post_sendto(c->ep, &t, 1, 200 + (uint64_t)i,
					      FL, &dst));
	}
	/* The peer's answers may complete before our last send does. */
	for (int i = 0; i < c->count;) {
		size_t nmore;

		IT_TRY(it_evd_wait(c->dto, WAIT_US, &ev, &nmore));
		if (ev.event_number == IT_DTO_UD_RECV_CMPL_EVENT &&
		    c->n_early < MAX_COUNT) {
			c->early[c->n_early++] = ev;
			continue;
		}
		it_expect_ev(&ev, IT_DTO_SEND_CMPL_EVENT);
		i++;
	}
}

/*
 * COUNT datagrams, each SIZE bytes behind the GRH, all from one QP (from
 * @want when it is not 0), with the sender's QPN as immediate data when
 * the device carries it. Their QP in *@peer; 1 after naming a difference.
 */
static int recv_all(struct ctx *c, it_ud_ep_id_t want, it_ud_ep_id_t *peer)
{
	it_event_t ev;
	uint32_t imm;

	*peer = want;
	for (int i = 0; i < c->count; i++) {
		it_ud_ep_id_t from;
		hostrdma_imm_kind_t kind;

		if (c->next_early < c->n_early) {
			ev = c->early[c->next_early++];
			it_expect_ev(&ev, IT_DTO_UD_RECV_CMPL_EVENT);
		} else {
			wait_ev(c->dto, IT_DTO_UD_RECV_CMPL_EVENT, &ev);
		}
		from = ev.all_dto_cmpl.ud_ep_id;
		if (ev.all_dto_cmpl.transferred_length != GRH_LEN + c->size ||
		    !(ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT)) {
			fprintf(stderr, "it-udaddy: datagram of %u bytes (GRH %s), expected %u + %u\n",
				(unsigned int)ev.all_dto_cmpl.transferred_length,
				ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT ?
					"present" : "absent",
				GRH_LEN, c->size);
			return 1;
		}
		if ((i || want) && from != *peer) {
			fprintf(stderr, "it-udaddy: datagram from QP 0x%06x, expected 0x%06x\n",
				from, *peer);
			return 1;
		}
		*peer = from;
		if (!c->imm)
			continue;
		imm = 0;
		kind = hostrdma_event_imm_data(&ev, &imm);
		if (kind != HOSTRDMA_IMM_SEND || imm != from) {
			fprintf(stderr, "it-udaddy: datagram %d from QP 0x%06x: immediate data %s 0x%08x, expected a Send's carrying its QPN\n",
				i, from,
				kind == HOSTRDMA_IMM_NONE ? "none" :
				kind == HOSTRDMA_IMM_SEND ? "Send" : "Write",
				imm);
			return 1;
		}
	}
	return 0;
}

static void teardown(struct ctx *c, it_addr_handle_t ah)
{
	IT_TRY(it_address_handle_free(ah));
	IT_TRY(it_ia_free(c->ia));
	free(c->mem);
}

static int run_client(struct ctx *c, const char *addr, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_ud_svc_req_handle_t u;
	it_addr_handle_t ah;
	it_net_addr_t na;
	it_path_t path;
	it_event_t ev;
	it_ud_svc_reply_event_t *r = &ev.ud_svc_reply;

	if (!it_parse_addr(addr, &na) || !(c->ia = it_ia_reaching(&na, &path))) {
		fprintf(stderr, "it-udaddy: no RDMA interface reaches %s\n",
			addr);
		return 1;
	}
	setup(c);
	post_recvs(c);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_ud_service_request_handle_create(&q, c->cm, &path, NULL, 0,
						&u));
	IT_TRY(it_ud_service_request(u));
	wait_ev(c->cm, IT_CM_MSG_UD_SERVICE_REPLY_EVENT, &ev);
	printf("it-udaddy client: SIDR reply status %d, QPN 0x%06x, Q_Key 0x%08x\n",
	       r->status, r->ep_info.ud_ep_id, r->ep_info.ud_ep_key);
	if (r->status != IT_UD_SVC_EP_INFO_VALID ||
	    r->ep_info.ud_ep_key != RDMA_UDP_QKEY || !r->ep_info.ud_ep_id) {
		fprintf(stderr, "it-udaddy: not the endpoint udaddy gives (Q_Key 0x%08x)\n",
			RDMA_UDP_QKEY);
		return 1;
	}
	IT_TRY(it_address_handle_create(c->pz, &path, IT_AH_PATH_COMPLETE, &ah));
	send_all(c, ah, r->ep_info.ud_ep_id);
	printf("it-udaddy client: %d datagrams of %u bytes sent to QP 0x%06x%s\n",
	       c->count, c->size, r->ep_info.ud_ep_id,
	       c->imm ? ", our QPN as immediate data" : "");
	fflush(stdout);
	if (c->imm) {
		it_ud_ep_id_t peer;

		if (recv_all(c, r->ep_info.ud_ep_id, &peer))
			return 1;
		printf("it-udaddy client: %d datagrams of %u bytes back from QP 0x%06x, its QPN as immediate data\n",
		       c->count, c->size, peer);
	}
	IT_TRY(it_ud_service_request_handle_free(u));
	teardown(c, ah);
	return 0;
}

static int run_server(struct ctx *c, const char *addr, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_remote_ep_info_t mine = { .ud_ep_key = RDMA_UDP_QKEY };
	it_listen_handle_t l;
	it_addr_handle_t ah;
	it_net_addr_t na;
	it_path_t path;
	it_event_t ev;
	it_ud_ep_id_t peer = 0;
	size_t np = 1, total;

	if (!it_parse_addr(addr, &na) || !(c->ia = it_ia_owning(&na))) {
		fprintf(stderr, "it-udaddy: no RDMA interface owns %s\n", addr);
		return 1;
	}
	setup(c);
	post_recvs(c);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_listen_create(c->ia, 0, c->req, IT_LISTEN_CONN_QUAL_INPUT, &q,
			     &l));
	printf("it-udaddy server: listening on %s:%d, UD QP 0x%06x\n", addr,
	       port, c->qpn);
	fflush(stdout);
	wait_ev(c->req, IT_CM_REQ_UD_SERVICE_REQUEST_EVENT, &ev);
	if (it_verbose)
		printf("UD service request for port %u\n",
		       ntohs(ev.ud_svc_request.conn_qual.conn_qual.port));
	/* The requester's address, for the path back. */
	na = ev.ud_svc_request.source_addr;
	mine.ud_ep_id = c->qpn;
	IT_TRY(it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
				IT_UD_SVC_EP_INFO_VALID, mine, NULL, 0));
	if (recv_all(c, 0, &peer))
		return 1;
	printf("it-udaddy server: %d datagrams of %u bytes from QP 0x%06x%s\n",
	       c->count, c->size, peer,
	       c->imm ? ", its QPN as immediate data" : "");
	IT_TRY(it_get_pathinfo(c->ia, 0, &na, &np, &total, &path));
	IT_TRY(it_address_handle_create(c->pz, &path, IT_AH_PATH_COMPLETE, &ah));
	send_all(c, ah, peer);
	printf("it-udaddy server: %d datagrams of %u bytes sent back\n",
	       c->count, c->size);
	IT_TRY(it_listen_free(l));
	teardown(c, ah);
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { .size = 100, .count = 10 };
	const char *addr = NULL;
	int server = -1, port = 7174, opt;

	it_prog = "it-udaddy";
	while ((opt = getopt(argc, argv, "sca:p:d:C:S:v")) != -1) {
		switch (opt) {
		case 'd': it_only_ia = optarg; break;
		case 's': server = 1; break;
		case 'c': server = 0; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'C': c.count = atoi(optarg); break;
		case 'S': c.size = (uint32_t)atoi(optarg); break;
		case 'v': it_verbose = 1; break;
		default: server = -1; break;
		}
	}
	if (server < 0 || !addr || c.count < 1 || c.count > MAX_COUNT ||
	    c.size < 1 || c.size > 4096 || port < 1 || port > 65535) {
		fprintf(stderr, "usage: %s -s|-c -a ADDR [-p PORT] [-d IA] [-C COUNT 1..%d] [-S SIZE] [-v]\n",
			argv[0], MAX_COUNT);
		return 2;
	}
	return server ? run_server(&c, addr, port) : run_client(&c, addr, port);
}
