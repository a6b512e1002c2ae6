/* SPDX-License-Identifier: MIT */
/*
 * it-verbs-ud: unreliable datagrams between two processes over IT-API
 * (in the lab: rxe0 of two guests, the verbs provider's UD QPs and
 * ibv_create_ah address handles). No service ID resolution: the server
 * prints its UD endpoint's number and the script hands it to the client.
 *
 *   it-verbs-ud IA server PEER_ADDR COUNT
 *	a UD endpoint (Q_Key 0x4b1d), COUNT receives posted, prints
 *	"qpn N"; takes COUNT datagrams: each GRH_LEN + SIZE bytes with the
 *	GRH flag, all from one QP, the payload pattern of its sequence
 *	number (the first 4 bytes); then sends COUNT answers to that QP at
 *	PEER_ADDR, a second pattern. Prints "server ok".
 *   it-verbs-ud IA client PEER_ADDR COUNT QPN
 *	posts COUNT receives, sends COUNT datagrams to QP QPN at PEER_ADDR,
 *	takes the COUNT answers and checks every byte. Prints "client ok".
 *
 * Any difference is named on stderr, exit 1.
 */
#include "config.h"

#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/interop/it_util.h"

#define WAIT_US (20ull * 1000 * 1000)
#define FL ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define QKEY 0x4b1du
#define GRH_LEN 40u
#define SIZE 512u
#define MAX_COUNT 64

struct ctx {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto;
	it_ep_handle_t ep;
	it_ud_ep_id_t qpn;
	it_path_t path;
	it_lmr_handle_t lmr;
	uint8_t *mem;	/* COUNT receive slots, then COUNT send buffers */
	int count;
};

static uint8_t *slot(struct ctx *c, int i)
{
	return c->mem + (size_t)i * (GRH_LEN + SIZE);
}

static uint8_t *sbuf(struct ctx *c, int i)
{
	return c->mem + (size_t)c->count * (GRH_LEN + SIZE) + (size_t)i * SIZE;
}

/* Payload @seq of pattern @salt: the sequence number, then bytes. */
static void fill(uint8_t *p, uint32_t seq, uint32_t salt)
{
	memcpy(p, &seq, 4);
	for (uint32_t i = 4; i < SIZE; i++)
		p[i] = (uint8_t)(i * 7 + seq * 13 + salt);
}

static int check(const uint8_t *p, uint32_t salt, uint32_t *seq)
{
	memcpy(seq, p, 4);
	for (uint32_t i = 4; i < SIZE; i++)
		if (p[i] != (uint8_t)(i * 7 + *seq * 13 + salt))
			return (int)i;
	return 0;
}

static void setup(struct ctx *c, const char *peer)
{
	it_ep_attributes_t a;
	it_ep_param_t p;
	it_net_addr_t na;
	size_t len = (size_t)c->count * (GRH_LEN + 2 * SIZE);

	if (!it_parse_addr(peer, &na) ||
	    !(c->ia = it_ia_reaching(&na, &c->path))) {
		fprintf(stderr, "%s: no IA reaches %s\n", it_prog, peer);
		exit(1);
	}
	IT_TRY(it_pz_create(c->ia, &c->pz));
	IT_TRY(it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 4 * MAX_COUNT, 0,
			     NULL, &c->dto, NULL));
	memset(&a, 0, sizeof(a));
	a.max_request_dtos = a.max_recv_dtos = (size_t)c->count;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.ud.ep_info.ud_ep_key = QKEY;
	IT_TRY(it_ep_ud_create(c->pz, c->dto, c->dto, &a, 0, &c->ep));
	IT_TRY(it_ep_query(c->ep, IT_EP_PARAM_ALL, &p));
	c->qpn = p.attr.srv.ud.ep_info.ud_ep_id;
	if (p.attr.srv.ud.ep_info.ud_ep_key != QKEY) {
		fprintf(stderr, "%s: the EP's Q_Key is 0x%x, not 0x%x\n",
			it_prog, p.attr.srv.ud.ep_info.ud_ep_key, QKEY);
		exit(1);
	}
	c->mem = calloc(1, len);
	if (!c->mem)
		exit(1);
	IT_TRY(it_lmr_create(c->pz, c->mem, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			     IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &c->lmr,
			     NULL));
	for (int i = 0; i < c->count; i++) {
		it_lmr_triplet_t t = { .lmr = c->lmr,
				       .length = GRH_LEN + SIZE };

		t.addr.abs = slot(c, i);
		IT_TRY(it_post_recvfrom(c->ep, &t, 1, (uint64_t)i, FL));
	}
}

/* COUNT datagrams in, each checked; returns the sender's QPN. */
static it_ud_ep_id_t take_all(struct ctx *c, uint32_t salt)
{
	it_ud_ep_id_t from = 0;
	uint32_t seen = 0;

	for (int i = 0; i < c->count; i++) {
		it_event_t ev;
		uint64_t k;
		uint32_t seq;
		int bad;

		it_wait_ev(c->dto, IT_DTO_UD_RECV_CMPL_EVENT, &ev, WAIT_US);
		k = (uint64_t)ev.all_dto_cmpl.cookie;
		if (ev.all_dto_cmpl.transferred_length != GRH_LEN + SIZE ||
		    !(ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT) ||
		    k >= (uint64_t)c->count) {
			fprintf(stderr, "%s: datagram %d: %u bytes, GRH %s, cookie %llu; expected %u + %u with a GRH\n",
				it_prog, i,
				(unsigned int)ev.all_dto_cmpl.transferred_length,
				ev.all_dto_cmpl.flags & IT_UD_IB_GRH_PRESENT ?
					"present" : "absent",
				(unsigned long long)k, GRH_LEN, SIZE);
			exit(1);
		}
		if (i && ev.all_dto_cmpl.ud_ep_id != from) {
			fprintf(stderr, "%s: datagram from QP %u, the others from %u\n",
				it_prog, ev.all_dto_cmpl.ud_ep_id, from);
			exit(1);
		}
		from = ev.all_dto_cmpl.ud_ep_id;
		bad = check(slot(c, (int)k) + GRH_LEN, salt, &seq);
		if (bad || seq >= (uint32_t)c->count || seq >= 32 ||
		    (seen & (1u << seq))) {
			fprintf(stderr, "%s: datagram %d (seq %u): byte %d differs or a repeat\n",
				it_prog, i, seq, bad);
			exit(1);
		}
		seen |= 1u << seq;
	}
	printf("%s: %d datagrams of %u bytes from QP %u, every byte as sent\n",
	       it_prog, c->count, SIZE, from);
	return from;
}

static void send_all(struct ctx *c, it_ud_ep_id_t qpn, uint32_t salt)
{
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	it_addr_handle_t ah;
	it_event_t ev;

	IT_TRY(it_address_handle_create(c->pz, &c->path, IT_AH_PATH_COMPLETE,
					&ah));
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info.ud_ep_id = qpn;
	dst.addr.ud.ep_info.ud_ep_key = QKEY;
	for (int i = 0; i < c->count; i++) {
		it_lmr_triplet_t t = { .lmr = c->lmr, .length = SIZE };

		fill(sbuf(c, i), (uint32_t)i, salt);
		t.addr.abs = sbuf(c, i);
		IT_TRY(it_post_sendto(c->ep, &t, 1, 1000 + (uint64_t)i, FL,
				      &dst));
	}
	for (int i = 0; i < c->count; i++)
		it_wait_ev(c->dto, IT_DTO_SEND_CMPL_EVENT, &ev, WAIT_US);
	printf("%s: %d datagrams of %u bytes sent to QP %u\n", it_prog,
	       c->count, SIZE, qpn);
	IT_TRY(it_address_handle_free(ah));
}

int main(int argc, char **argv)
{
	struct ctx c;
	it_ud_ep_id_t peer;

	it_prog = "it-verbs-ud";
	memset(&c, 0, sizeof(c));
	if (argc < 5 || (strcmp(argv[2], "server") && strcmp(argv[2], "client")) ||
	    (!strcmp(argv[2], "client") && argc < 6)) {
		fprintf(stderr, "usage: %s IA server PEER_ADDR COUNT | IA client PEER_ADDR COUNT QPN\n",
			argv[0]);
		return 2;
	}
	it_only_ia = argv[1];
	c.count = atoi(argv[4]);
	if (c.count < 1 || c.count > 32) {
		fprintf(stderr, "%s: COUNT is 1 to 32\n", it_prog);
		return 2;
	}
	setup(&c, argv[3]);
	if (!strcmp(argv[2], "server")) {
		printf("qpn %u\n", c.qpn);
		fflush(stdout);
		peer = take_all(&c, 1);
		send_all(&c, peer, 2);
		IT_TRY(it_ia_free(c.ia));
		printf("server ok\n");
	} else {
		peer = (it_ud_ep_id_t)strtoul(argv[5], NULL, 0);
		send_all(&c, peer, 1);
		if (take_all(&c, 2) != peer) {
			fprintf(stderr, "%s: the answers came from another QP than %u\n",
				it_prog, peer);
			return 1;
		}
		IT_TRY(it_ia_free(c.ia));
		printf("client ok\n");
	}
	free(c.mem);
	return 0;
}
