/* SPDX-License-Identifier: MIT */
/*
 * it-verbs-objects IA: on one IA (a verbs device in the lab's guest:
 * siw0, rxe0), create what an IT-API application creates before it
 * connects - a PZ, DTO and CM event dispatchers, an LMR with remote
 * rights, an RC endpoint with receives posted - then free it all. Each
 * lands on the kernel's device as ibv_alloc_pd, ibv_reg_mr (and again
 * for it_lmr_modify),
 * ibv_create_cq with a completion channel, ibv_create_qp, ibv_post_recv.
 * Then a listener on the IA, which is the kernel's (rdma_cm's, through the
 * provider): a second one on the same port must be refused with
 * IT_ERR_CONN_QUAL_BUSY.
 * Datagrams: on an iWARP IA it_ep_ud_create answers
 * IT_ERR_OP_NOT_SUPPORTED; on any other a UD endpoint (an ibverbs UD QP)
 * has a QP number and takes receives. A UD service request (SIDR): on
 * iWARP refused with IT_ERR_OP_NOT_SUPPORTED; on RoCE it goes through
 * rdma_cm's UDP port space (QP1 is the kernel's), so a service ID outside
 * it is refused so, while an IANA port passes that check and the empty
 * path is what is refused (IT_ERR_INVALID_NETADDR).
 * Prints "objects ok" and exits 0, or names the call that failed.
 */
#include "config.h"

#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/interop/it_util.h"

#define BUF_BYTES (256u * 1024u)
#define N_RECV 4

/* The datagram service on @ia as its transport has it; 0 or 1. */
static int ud_checks(it_ia_handle_t ia, it_pz_handle_t pz,
		     it_lmr_handle_t lmr, char *buf, it_evd_handle_t sq,
		     it_evd_handle_t rq, it_evd_handle_t cm)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_ud_svc_req_handle_t u;
	it_ia_info_t *info = NULL;
	it_ep_attributes_t a;
	it_ep_param_t p;
	it_path_t path;
	it_ep_handle_t ep;
	it_status_t st;
	bool iwarp;

	IT_TRY(it_ia_query(ia, &info));
	iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
	it_ia_info_free(info);
	memset(&a, 0, sizeof(a));
	a.max_request_dtos = a.max_recv_dtos = 8;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.ud.ep_info.ud_ep_key = 0x1234;
	st = it_ep_ud_create(pz, sq, rq, &a, 0, &ep);
	if (iwarp) {
		if (st != IT_ERR_OP_NOT_SUPPORTED) {
			fprintf(stderr, "%s: it_ep_ud_create on iWARP: status %d, expected IT_ERR_OP_NOT_SUPPORTED (%d)\n",
				it_prog, st, IT_ERR_OP_NOT_SUPPORTED);
			return 1;
		}
	} else {
		it_lmr_triplet_t t = { .lmr = lmr, .length = 1024 };

		IT_TRY(st);
		IT_TRY(it_ep_query(ep, IT_EP_PARAM_ALL, &p));
		if (!p.attr.srv.ud.ep_info.ud_ep_id ||
		    p.attr.srv.ud.ep_info.ud_ep_key != 0x1234) {
			fprintf(stderr, "%s: UD endpoint QP %u, Q_Key 0x%x\n",
				it_prog, p.attr.srv.ud.ep_info.ud_ep_id,
				p.attr.srv.ud.ep_info.ud_ep_key);
			return 1;
		}
		t.addr.abs = buf;
		IT_TRY(it_post_recvfrom(ep, &t, 1, 9,
					(it_dto_flags_t)IT_COMPLETION_FLAG));
		IT_TRY(it_ep_free(ep));
		printf("UD endpoint: QP %u\n", p.attr.srv.ud.ep_info.ud_ep_id);
	}
	memset(&path, 0, sizeof(path));
	q.conn_qual.port = htons(7472);
	st = it_ud_service_request_handle_create(&q, cm, &path, NULL, 0, &u);
	if (st != (iwarp ? IT_ERR_OP_NOT_SUPPORTED : IT_ERR_INVALID_NETADDR)) {
		fprintf(stderr, "%s: it_ud_service_request_handle_create (IANA port, empty path): status %d, expected %d\n",
			it_prog, st,
			iwarp ? IT_ERR_OP_NOT_SUPPORTED : IT_ERR_INVALID_NETADDR);
		return 1;
	}
	q.type = IT_IB_SERVICEID;
	q.conn_qual.serviceid = htobe64(0x1234abcdull);
	st = it_ud_service_request_handle_create(&q, cm, &path, NULL, 0, &u);
	if (st != IT_ERR_OP_NOT_SUPPORTED) {
		fprintf(stderr, "%s: it_ud_service_request_handle_create (service ID 0x1234abcd): status %d, expected IT_ERR_OP_NOT_SUPPORTED (%d)\n",
			it_prog, st, IT_ERR_OP_NOT_SUPPORTED);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	it_ep_attributes_t a;
	it_evd_handle_t sq, rq, cm, req;
	it_listen_handle_t l, l2;
	it_conn_qual_t q;
	it_status_t st;
	it_lmr_handle_t lmr;
	it_rmr_context_t key = 0;
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_ep_handle_t ep;
	char *buf;
	int i;

	it_prog = "it-verbs-objects";
	if (argc != 2) {
		fprintf(stderr, "usage: %s IA\n", it_prog);
		return 2;
	}
	buf = calloc(1, BUF_BYTES);
	if (!buf)
		return 1;
	IT_TRY(it_ia_create(argv[1], 2, 1, &ia));
	IT_TRY(it_pz_create(ia, &pz));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 32, 0, NULL, &sq,
			     NULL));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 32, 0, NULL, &rq,
			     NULL));
	IT_TRY(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL, &cm,
			     NULL));
	IT_TRY(it_lmr_create(pz, buf, NULL, BUF_BYTES, IT_ADDR_MODE_ABSOLUTE,
			     IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			     0, &lmr, &key));
	if (!key) {
		fprintf(stderr, "%s: the LMR has no remote key\n", it_prog);
		return 1;
	}
	{
		/* Re-register half of it with local rights only. */
		it_lmr_param_t lp;

		memset(&lp, 0, sizeof(lp));
		lp.length = BUF_BYTES / 2;
		lp.privs = IT_PRIV_LOCAL;
		IT_TRY(it_lmr_modify(lmr, (it_lmr_param_mask_t)(IT_LMR_PARAM_LENGTH |
							      IT_LMR_PARAM_MEM_PRIV),
				     &lp));
		IT_TRY(it_lmr_query(lmr, (it_lmr_param_mask_t)IT_LMR_PARAM_LENGTH,
				    &lp));
		if (lp.length != BUF_BYTES / 2) {
			fprintf(stderr, "%s: LMR length %llu after it_lmr_modify\n",
				it_prog, (unsigned long long)lp.length);
			return 1;
		}
	}
	memset(&a, 0, sizeof(a));
	a.max_request_dtos = a.max_recv_dtos = 16;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 1;
	IT_TRY(it_ep_rc_create(pz, sq, rq, cm, IT_EP_NO_FLAG, &a, &ep));
	for (i = 0; i < N_RECV; i++) {
		it_lmr_triplet_t t = { .lmr = lmr, .length = 1024 };

		t.addr.abs = buf + i * 1024;
		IT_TRY(it_post_recv(ep, &t, 1, (it_dto_cookie_t)i,
				    (it_dto_flags_t)IT_COMPLETION_FLAG));
	}
	IT_TRY(it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL, &req,
			     NULL));
	memset(&q, 0, sizeof(q));
	q.type = IT_IANA_PORT;
	q.conn_qual.port = htons(7471);
	IT_TRY(it_listen_create(ia, 0, req, IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	st = it_listen_create(ia, 0, req, IT_LISTEN_CONN_QUAL_INPUT, &q, &l2);
	if (st != IT_ERR_CONN_QUAL_BUSY) {
		fprintf(stderr, "%s: a second it_listen_create on port 7471: status %d, expected IT_ERR_CONN_QUAL_BUSY (%d)\n",
			it_prog, st, IT_ERR_CONN_QUAL_BUSY);
		return 1;
	}
	IT_TRY(it_listen_free(l));
	IT_TRY(it_evd_free(req));
	if (ud_checks(ia, pz, lmr, buf, sq, rq, cm))
		return 1;
	IT_TRY(it_ep_free(ep));
	IT_TRY(it_lmr_free(lmr));
	IT_TRY(it_evd_free(cm));
	IT_TRY(it_evd_free(rq));
	IT_TRY(it_evd_free(sq));
	IT_TRY(it_pz_free(pz));
	IT_TRY(it_ia_free(ia));
	free(buf);
	printf("objects ok (rmr context 0x%x)\n", (unsigned int)key);
	return 0;
}
