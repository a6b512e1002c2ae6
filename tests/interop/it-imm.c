/* SPDX-License-Identifier: MIT */
/*
 * it-imm: immediate data (hostrdma/it_ext.h) between two IT-API
 * programs, to run one on the kernel's rxe0 through the verbs provider
 * (in a lab guest) and the other on hostrdma's soft-RoCE (on the host):
 * the ImmDt header as the kernel's rxe builds and reads it.
 *
 * The server posts 2 x COUNT receives, each on a SIZE-byte slot of 0xcc,
 * accepts and Sends the client an advert {be64 addr, be32 rkey, be32
 * count} of a COUNT x SIZE target region. The client then, for each i,
 * RDMA-Writes SIZE bytes of pattern 'W' i at target + i x SIZE with
 * immediate data 0xa1b2c300 | i, and Sends SIZE bytes of pattern 'S' i
 * with 0x5d6e7f00 | i (four distinct bytes: a byte-order mistake shows).
 * The server takes the receive completions in order and checks each:
 * a Write's kind, value and length, its bytes at its place, and its
 * receive slot untouched; a Send's kind, value, length and bytes. It
 * Sends one byte when all held, and the client disconnects.
 *
 *   it-imm -s|-c -a ADDR [-p PORT] [-d IA] [-C COUNT] [-S SIZE] [-v]
 *
 * Exit status 0 only when every check held.
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

#define WAIT_US (30ull * 1000 * 1000)
#define wait_ev(evd, type, ev) it_wait_ev((evd), (type), (ev), WAIT_US)
#define FL ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define MAX_COUNT 60
#define IMM_W(i) (0xa1b2c300u | (uint32_t)(i))
#define IMM_S(i) (0x5d6e7f00u | (uint32_t)(i))

struct advert {
	uint64_t addr_be;
	uint32_t rkey_be;
	uint32_t count_be;
} __attribute__((packed));

struct ctx {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t sq, rq, cm, req;
	it_ep_handle_t ep;
	int count;
	uint32_t size;
};

static it_lmr_handle_t reg(struct ctx *c, void *p, size_t len,
			   it_mem_priv_t privs, it_rmr_context_t *key)
{
	it_lmr_handle_t lmr;

	IT_TRY(it_lmr_create(c->pz, p, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			     privs, IT_LMR_FLAG_NONE, 0, &lmr, key));
	return lmr;
}

static void setup(struct ctx *c, it_ia_handle_t ia)
{
	it_ep_attributes_t a = { 0 };
	size_t n = 2 * (size_t)c->count + 4;

	c->ia = ia;
	if (hostrdma_ia_imm_data_size(ia) == 0) {
		fprintf(stderr, "it-imm: the IA's device carries no immediate data\n");
		exit(1);
	}
	IT_TRY(it_pz_create(ia, &c->pz));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, n, 0, NULL, &c->sq,
			     NULL));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, n, 0, NULL, &c->rq,
			     NULL));
	IT_TRY(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL,
			     &c->cm, NULL));
	IT_TRY(it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL,
			     &c->req, NULL));
	a.max_request_dtos = a.max_recv_dtos = n;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_write_segments = 1;
	IT_TRY(it_ep_rc_create(c->pz, c->sq, c->rq, c->cm, IT_EP_NO_FLAG, &a,
			       &c->ep));
}

static void pattern(uint8_t *p, uint32_t size, char kind, int i)
{
	for (uint32_t k = 0; k < size; k++)
		p[k] = (uint8_t)(kind + i * 13 + k * 7);
}

static void post_recv(struct ctx *c, it_lmr_handle_t lmr, void *p,
		      uint32_t len, it_dto_cookie_t cookie)
{
	it_lmr_triplet_t t = { .lmr = lmr, .length = len };

	t.addr.abs = p;
	IT_TRY(it_post_recv(c->ep, &t, 1, cookie, FL));
}

static void send_buf(struct ctx *c, it_lmr_handle_t lmr, void *p,
		     uint32_t len)
{
	it_lmr_triplet_t t = { .lmr = lmr, .length = len };
	it_event_t ev;

	t.addr.abs = p;
	IT_TRY(it_post_send(c->ep, &t, 1, 1, FL));
	wait_ev(c->sq, IT_DTO_SEND_CMPL_EVENT, &ev);
}

/* Receive @k (cookie k) as the server expects it; false, said why, when
 * not. */
static bool check_recv(struct ctx *c, int k, const it_event_t *ev,
		       uint8_t *slots, uint8_t *target, uint8_t *want)
{
	int i = k / 2;
	bool write = k % 2 == 0;
	uint8_t *slot = slots + (size_t)k * c->size;
	hostrdma_imm_kind_t kind;
	uint32_t imm = 0;

	if (ev->dto_cmpl.cookie != (it_dto_cookie_t)k) {
		fprintf(stderr, "it-imm: receive %d completed as cookie %llu\n",
			k, (unsigned long long)ev->dto_cmpl.cookie);
		return false;
	}
	kind = hostrdma_event_imm_data(ev, &imm);
	if (kind != (write ? HOSTRDMA_IMM_RDMA_WRITE : HOSTRDMA_IMM_SEND) ||
	    imm != (write ? IMM_W(i) : IMM_S(i)) ||
	    ev->dto_cmpl.transferred_length != c->size) {
		fprintf(stderr, "it-imm: receive %d: kind %d value 0x%08x length %u, expected kind %d value 0x%08x length %u\n",
			k, (int)kind, imm,
			(unsigned int)ev->dto_cmpl.transferred_length,
			write ? HOSTRDMA_IMM_RDMA_WRITE : HOSTRDMA_IMM_SEND,
			write ? IMM_W(i) : IMM_S(i), c->size);
		return false;
	}
	pattern(want, c->size, write ? 'W' : 'S', i);
	if (write) {
		if (memcmp(target + (size_t)i * c->size, want, c->size)) {
			fprintf(stderr, "it-imm: Write %d: the target's bytes differ\n",
				i);
			return false;
		}
		for (uint32_t b = 0; b < c->size; b++)
			if (slot[b] != 0xcc) {
				fprintf(stderr, "it-imm: Write %d: its receive's buffer was written (byte %u)\n",
					i, b);
				return false;
			}
	} else if (memcmp(slot, want, c->size)) {
		fprintf(stderr, "it-imm: Send %d: the received bytes differ\n",
			i);
		return false;
	}
	if (it_verbose)
		printf("%s %d: 0x%08x, %u bytes checked\n",
		       write ? "RDMA Write" : "Send", i, imm, c->size);
	return true;
}

static int run_server(struct ctx *c, const char *addr, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	size_t nslots = 2 * (size_t)c->count;
	struct advert adv;
	it_listen_handle_t l;
	it_lmr_handle_t slot_lmr, adv_lmr;
	it_rmr_context_t tkey;
	it_net_addr_t na;
	uint8_t *slots, *target, *want;
	it_event_t ev;
	it_ia_handle_t ia;

	ia = it_parse_addr(addr, &na) ? it_ia_owning(&na) : NULL;
	if (!ia) {
		fprintf(stderr, "it-imm: no RDMA interface owns %s\n", addr);
		return 1;
	}
	setup(c, ia);
	slots = malloc(nslots * c->size);
	target = malloc((size_t)c->count * c->size);
	want = malloc(c->size);
	if (!slots || !target || !want)
		return 1;
	memset(slots, 0xcc, nslots * c->size);
	memset(target, 0x5a, (size_t)c->count * c->size);
	slot_lmr = reg(c, slots, nslots * c->size, IT_PRIV_LOCAL, NULL);
	reg(c, target, (size_t)c->count * c->size,
	    IT_PRIV_LOCAL | IT_PRIV_REMOTE, &tkey);
	adv_lmr = reg(c, &adv, sizeof(adv), IT_PRIV_LOCAL, NULL);
	for (size_t k = 0; k < nslots; k++)
		post_recv(c, slot_lmr, slots + k * c->size, c->size, k);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_listen_create(ia, 0, c->req, IT_LISTEN_CONN_QUAL_INPUT, &q,
				&l));
	printf("it-imm server: listening on %s:%d\n", addr, port);
	fflush(stdout);
	wait_ev(c->req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
	IT_TRY(it_ep_accept(c->ep, ev.conn_req.cn_est_id, NULL, 0));
	wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	adv.addr_be = it_hton64((uintptr_t)target);
	adv.rkey_be = htonl((uint32_t)tkey);
	adv.count_be = htonl((uint32_t)c->count);
	send_buf(c, adv_lmr, &adv, sizeof(adv));
	for (int k = 0; k < (int)nslots; k++) {
		wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
		if (!check_recv(c, k, &ev, slots, target, want))
			return 1;
	}
	send_buf(c, adv_lmr, &adv, 1);	/* all checked */
	wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	printf("it-imm server: %d RDMA Writes and %d Sends of %u bytes with immediate data checked\n",
	       c->count, c->count, c->size);
	IT_TRY(it_listen_free(l));
	IT_TRY(it_ia_free(ia));
	free(slots);
	free(target);
	free(want);
	return 0;
}

static int run_client(struct ctx *c, const char *addr, int port)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	size_t bytes = 2 * (size_t)c->count * c->size;
	struct advert adv;
	it_lmr_handle_t src_lmr, adv_lmr;
	it_net_addr_t na;
	it_path_t path;
	it_event_t ev;
	uint8_t *src;
	uint64_t raddr;
	uint32_t rkey;
	it_ia_handle_t ia;

	ia = it_parse_addr(addr, &na) ? it_ia_reaching(&na, &path) : NULL;
	if (!ia) {
		fprintf(stderr, "it-imm: no RDMA interface reaches %s\n", addr);
		return 1;
	}
	setup(c, ia);
	src = malloc(bytes);
	if (!src)
		return 1;
	src_lmr = reg(c, src, bytes, IT_PRIV_LOCAL, NULL);
	adv_lmr = reg(c, &adv, sizeof(adv), IT_PRIV_LOCAL, NULL);
	post_recv(c, adv_lmr, &adv, sizeof(adv), 1);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_ep_connect(c->ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			     NULL, 0));
	wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	if (ev.dto_cmpl.transferred_length != sizeof(adv) ||
	    ntohl(adv.count_be) != (uint32_t)c->count) {
		fprintf(stderr, "it-imm: the server's advert does not fit -C %d\n",
			c->count);
		return 1;
	}
	raddr = it_ntoh64(adv.addr_be);
	rkey = ntohl(adv.rkey_be);
	post_recv(c, adv_lmr, &adv, sizeof(adv), 2);	/* "done" */
	for (int i = 0; i < c->count; i++) {
		uint8_t *w = src + (size_t)(2 * i) * c->size;
		uint8_t *s = w + c->size;
		it_lmr_triplet_t t = { .lmr = src_lmr, .length = c->size };

		pattern(w, c->size, 'W', i);
		pattern(s, c->size, 'S', i);
		t.addr.abs = w;
		IT_TRY(hostrdma_post_rdma_write_imm(c->ep, &t, 1, 10, FL,
						    raddr + (uint64_t)i *
								    c->size,
						    rkey, IMM_W(i)));
		t.addr.abs = s;
		IT_TRY(hostrdma_post_send_imm(c->ep, &t, 1, 11, FL, IMM_S(i)));
	}
	for (int i = 0; i < c->count; i++) {
		wait_ev(c->sq, IT_DTO_RDMA_WRITE_CMPL_EVENT, &ev);
		wait_ev(c->sq, IT_DTO_SEND_CMPL_EVENT, &ev);
	}
	wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev);	/* all checked */
	IT_TRY(it_ep_disconnect(c->ep, NULL, 0));
	wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	printf("it-imm client: %d RDMA Writes and %d Sends of %u bytes with immediate data sent, the server checked them\n",
	       c->count, c->count, c->size);
	IT_TRY(it_ia_free(ia));
	free(src);
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { .count = 10, .size = 1024 };
	const char *addr = NULL;
	int server = -1, port = 7177, opt;

	it_prog = "it-imm";
	while ((opt = getopt(argc, argv, "sca:p:d:C:S:v")) != -1) {
		switch (opt) {
		case 's': server = 1; break;
		case 'c': server = 0; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'd': it_only_ia = optarg; break;
		case 'C': c.count = atoi(optarg); break;
		case 'S': c.size = (uint32_t)atoi(optarg); break;
		case 'v': it_verbose = 1; break;
		default: server = -1; break;
		}
	}
	if (server < 0 || !addr || c.count < 1 || c.count > MAX_COUNT ||
	    c.size < 1 || c.size > (1u << 20)) {
		fprintf(stderr, "usage: %s -s|-c -a ADDR [-p PORT] [-d IA] [-C COUNT (1..%d)] [-S SIZE (1..1048576)] [-v]\n",
			argv[0], MAX_COUNT);
		return 2;
	}
	return server ? run_server(&c, addr, port) : run_client(&c, addr, port);
}
