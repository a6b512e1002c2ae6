/* SPDX-License-Identifier: MIT */
/*
 * it-rping: rping's application protocol (rdma-core
 * librdmacm/examples/rping.c) over IT-API and libhostrdma only, to run
 * against the Linux kernel's rping in both roles.
 *
 * Client, each round: Send an advert {be64 addr, be32 rkey, be32 size} of
 * the start buffer (rping's text pattern); the server RDMA-Reads it and
 * Sends a "go ahead"; Send the advert of the sink buffer; the server
 * RDMA-Writes the data there and Sends again; compare. Server: the mirror
 * image, checking every byte it read against rping's pattern.
 *
 * Transport neutral: iWARP (MPA) or RoCE (the InfiniBand CM with rdma_cm's
 * addressing), IPv4 or IPv6. The interface is chosen the IT-API way: the
 * client takes the IA with a path to the server (it_get_pathinfo), the
 * server the IA whose spigot owns the address it listens on
 * (it_ia_query); -d names the IA instead (an interface with both a siw
 * and an rxe device).
 *
 *   it-rping -s|-c -a ADDR -p PORT [-d IA] [-U] [-3] [-C COUNT] [-S SIZE] [-v]
 * -3 (client, RoCE): IT-API's three-way handshake; the server's REP is
 * held (an MRA tells it to wait) until the accept arrival is accepted.
 * Exit status 0 only when every round's data matched.
 */
#define _GNU_SOURCE
#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"
#include "tests/interop/it_util.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_US (30ull * 1000 * 1000)
#define wait_ev(evd, type, ev) it_wait_ev((evd), (type), (ev), WAIT_US)
#define MSG_FMT "rdma-ping-%d: "
#define FL ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

struct advert {
	uint64_t buf_be;
	uint32_t rkey_be;
	uint32_t size_be;
} __attribute__((packed));
_Static_assert(sizeof(struct advert) == 16, "rping advert is 16 bytes");


struct ctx {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t sq, rq, cm, req;
	it_ep_handle_t ep;
	struct advert recv_buf, send_buf;
	uint8_t *start_buf, *rdma_buf;
	uint32_t size;
	it_lmr_handle_t recv_lmr, send_lmr, start_lmr, rdma_lmr;
	it_rmr_context_t start_key, rdma_key;
};

static it_lmr_handle_t reg(struct ctx *c, void *p, size_t len,
			   it_mem_priv_t privs, it_rmr_context_t *key)
{
	it_lmr_handle_t lmr;

	IT_TRY(it_lmr_create(c->pz, p, NULL, len, IT_ADDR_MODE_ABSOLUTE, privs,
			  IT_LMR_FLAG_NONE, 0, &lmr, key));
	return lmr;
}

static void setup(struct ctx *c, it_ia_handle_t ia, uint32_t size)
{
	it_ep_attributes_t a = { 0 };

	c->ia = ia;
	c->size = size;
	IT_TRY(it_pz_create(ia, &c->pz));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 32, 0, NULL, &c->sq,
			  NULL));
	IT_TRY(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 32, 0, NULL, &c->rq,
			  NULL));
	IT_TRY(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL, &c->cm,
			  NULL));
	IT_TRY(it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL, &c->req,
			  NULL));
	a.max_request_dtos = a.max_recv_dtos = 16;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = a.srv.rc.max_rdma_write_segments = 1;
	/* rping asks for one outstanding Read each way. */
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 1;
	IT_TRY(it_ep_rc_create(c->pz, c->sq, c->rq, c->cm, IT_EP_NO_FLAG, &a,
			    &c->ep));
	c->start_buf = calloc(1, size);
	c->rdma_buf = calloc(1, size);
	if (!c->start_buf || !c->rdma_buf)
		exit(1);
	c->recv_lmr = reg(c, &c->recv_buf, sizeof(c->recv_buf), IT_PRIV_LOCAL,
			  NULL);
	c->send_lmr = reg(c, &c->send_buf, sizeof(c->send_buf), IT_PRIV_LOCAL,
			  NULL);
	/* The peer reads the start buffer and writes the RDMA buffer; an
	 * iWARP Read also lands in the RDMA buffer (remote write). */
	c->start_lmr = reg(c, c->start_buf, size,
			   IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, &c->start_key);
	c->rdma_lmr = reg(c, c->rdma_buf, size,
			  IT_PRIV_LOCAL | IT_PRIV_REMOTE, &c->rdma_key);
}

static void post_recv(struct ctx *c)
{
	it_lmr_triplet_t t = { .lmr = c->recv_lmr, .length = 16 };

	t.addr.abs = &c->recv_buf;
	IT_TRY(it_post_recv(c->ep, &t, 1, 1, FL));
}

/* @last: the peer may have what we sent, and disconnect, before its ACK
 * reaches us (an ACK lost on a lossy link, the retransmission answered by
 * a QP already in error): the Send is then flushed, which rping itself
 * takes as the end of the run. The peer's verification is the proof. */
static void send16(struct ctx *c, bool last)
{
	it_lmr_triplet_t t = { .lmr = c->send_lmr, .length = 16 };
	it_event_t ev;
	size_t nmore;

	t.addr.abs = &c->send_buf;
	IT_TRY(it_post_send(c->ep, &t, 1, 2, FL));
	if (!last) {
		wait_ev(c->sq, IT_DTO_SEND_CMPL_EVENT, &ev);
		return;
	}
	IT_TRY(it_evd_wait(c->sq, WAIT_US, &ev, &nmore));
	if (ev.event_number != IT_DTO_SEND_CMPL_EVENT ||
	    (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS &&
	     ev.dto_cmpl.dto_status != IT_DTO_ERR_FLUSHED)) {
		fprintf(stderr, "it-rping: last send: event 0x%x (DTO status %d)\n",
			ev.event_number, ev.dto_cmpl.dto_status);
		exit(1);
	}
	if (ev.dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED)
		printf("it-rping: the last Send was flushed by the peer's disconnect\n");
}

static uint32_t wait_recv(struct ctx *c)
{
	it_event_t ev;

	wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	return ev.dto_cmpl.transferred_length;
}

static void rdma(struct ctx *c, bool read, uint32_t len, uint64_t raddr,
		 uint32_t rkey)
{
	it_lmr_triplet_t t = { .lmr = c->rdma_lmr, .length = len };
	it_event_t ev;

	t.addr.abs = c->rdma_buf;
	if (read) {
		IT_TRY(it_post_rdma_read(c->ep, &t, 1, 3, FL, raddr, rkey));
		wait_ev(c->sq, IT_DTO_RDMA_READ_CMPL_EVENT, &ev);
	} else {
		IT_TRY(it_post_rdma_write(c->ep, &t, 1, 4, FL, raddr, rkey));
		wait_ev(c->sq, IT_DTO_RDMA_WRITE_CMPL_EVENT, &ev);
	}
}

/* rping's client buffer for round @ping: text, then letters A..z. */
static void fill_pattern(uint8_t *buf, uint32_t size, int ping)
{
	int cc = snprintf((char *)buf, size, MSG_FMT, ping);
	int ch = 65 + ping % 58;

	for (uint32_t i = (uint32_t)cc; i < size; i++) {
		buf[i] = (uint8_t)ch;
		if (++ch > 122)
			ch = 65;
	}
	buf[size - 1] = 0;
}

static void advertise(struct ctx *c, uint8_t *buf, it_rmr_context_t key)
{
	c->send_buf.buf_be = it_hton64((uintptr_t)buf);
	c->send_buf.rkey_be = htonl((uint32_t)key);
	c->send_buf.size_be = htonl(c->size);
	send16(c, false);
}

/* The IA with a path to @addr (or the -d one), its path in @path. */
static it_ia_handle_t ia_reaching(const char *addr, it_path_t *path)
{
	it_net_addr_t na;
	it_ia_handle_t ia;

	if (!it_parse_addr(addr, &na)) {
		fprintf(stderr, "it-rping: %s is no IPv4 or IPv6 address\n",
			addr);
		return NULL;
	}
	ia = it_ia_reaching(&na, path);
	if (!ia)
		fprintf(stderr, "it-rping: no RDMA interface reaches %s\n",
			addr);
	return ia;
}

/* The IA one of whose spigots owns @addr. */
static it_ia_handle_t ia_owning(const char *addr)
{
	it_net_addr_t want;

	return it_parse_addr(addr, &want) ? it_ia_owning(&want) : NULL;
}

/* What a failed round holds, for the log: where the bytes first differ,
 * how many differ, and whether the buffer holds nothing yet or an
 * earlier round's pattern (a late or repeated transfer). */
static void report_mismatch(struct ctx *c, int ping)
{
	uint32_t first = c->size, ndiff = 0, zero = 0;
	int from = -1;

	for (uint32_t i = 0; i < c->size; i++) {
		if (c->start_buf[i] != c->rdma_buf[i]) {
			ndiff++;
			if (first == c->size)
				first = i;
		}
		zero += !c->rdma_buf[i];
	}
	for (int k = ping - 1; k >= 0 && k >= ping - 8 && from < 0; k--) {
		uint8_t *old = malloc(c->size);

		if (!old)
			break;
		fill_pattern(old, c->size, k);
		if (!memcmp(old, c->rdma_buf, c->size))
			from = k;
		free(old);
	}
	fprintf(stderr, "it-rping: round %d: data mismatch: %u of %u bytes "
		"differ from offset %u (want 0x%02x, got 0x%02x); %u bytes "
		"zero", ping, ndiff, c->size, first, c->start_buf[first],
		c->rdma_buf[first], zero);
	if (from >= 0)
		fprintf(stderr, "; the buffer holds round %d's data", from);
	fprintf(stderr, "\n");
}

static bool three_way;

static int run_client(struct ctx *c, const char *addr, int port, int count)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_event_t ev;
	it_path_t path;
	it_ia_handle_t ia = ia_reaching(addr, &path);

	if (!ia)
		return 1;
	setup(c, ia, c->size);
	post_recv(c);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_ep_connect(c->ep, &path, NULL, &q,
			     three_way ? IT_CONNECT_FLAG_THREE_WAY :
					 IT_CONNECT_FLAG_TWO_WAY,
			     NULL, 0));
	if (three_way) {
		wait_ev(c->cm, IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT, &ev);
		/* The server waits for our RTU meanwhile. */
		usleep(300 * 1000);
		IT_TRY(it_ep_accept(c->ep, ev.conn.cn_est_id, NULL, 0));
		printf("three-way: accept arrival accepted\n");
	}
	wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	if (it_verbose)
		printf("connected: IRD %u ORD %u\n", ev.conn.rdma_read_ird,
		       ev.conn.rdma_read_ord);
	for (int ping = 0; ping < count; ping++) {
		fill_pattern(c->start_buf, c->size, ping);
		memset(c->rdma_buf, 0, c->size);
		advertise(c, c->start_buf, c->start_key);
		wait_recv(c);		/* go ahead */
		post_recv(c);
		advertise(c, c->rdma_buf, c->rdma_key);
		wait_recv(c);		/* written */
		post_recv(c);
		if (memcmp(c->start_buf, c->rdma_buf, c->size)) {
			report_mismatch(c, ping);
			return 1;
		}
		if (it_verbose)
			printf("ping data: %.*s\n", 40, c->rdma_buf);
	}
	IT_TRY(it_ep_disconnect(c->ep, NULL, 0));
	wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	printf("it-rping client: %d rounds of %u bytes verified\n", count,
	       c->size);
	IT_TRY(it_ia_free(ia));
	return 0;
}

static int run_server(struct ctx *c, const char *addr, int port, int count)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	it_ia_handle_t ia = ia_owning(addr);
	uint8_t *expect;
	it_event_t ev;

	if (!ia) {
		fprintf(stderr, "it-rping: no RDMA interface owns %s\n", addr);
		return 1;
	}
	setup(c, ia, c->size);
	expect = malloc(c->size);
	post_recv(c);
	q.conn_qual.port = htons((uint16_t)port);
	IT_TRY(it_listen_create(ia, 0, c->req, IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	printf("it-rping server: listening on %s:%d\n", addr, port);
	fflush(stdout);
	wait_ev(c->req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
	if (it_verbose)
		printf("request: IRD %u ORD %u\n", ev.conn_req.rdma_read_ird,
		       ev.conn_req.rdma_read_ord);
	IT_TRY(it_ep_accept(c->ep, ev.conn_req.cn_est_id, NULL, 0));
	wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	for (int ping = 0; ping < count; ping++) {
		uint64_t raddr;
		uint32_t rkey;

		if (wait_recv(c) != 16 || ntohl(c->recv_buf.size_be) != c->size) {
			fprintf(stderr, "it-rping: round %d: bad advert\n", ping);
			return 1;
		}
		raddr = it_ntoh64(c->recv_buf.buf_be);
		rkey = ntohl(c->recv_buf.rkey_be);
		post_recv(c);
		memset(c->rdma_buf, 0, c->size);
		rdma(c, true, c->size, raddr, rkey);
		fill_pattern(expect, c->size, ping);
		if (memcmp(expect, c->rdma_buf, c->size)) {
			fprintf(stderr, "it-rping: round %d: read data differs from rping's pattern\n",
				ping);
			return 1;
		}
		if (it_verbose)
			printf("server ping data: %.*s\n", 40, c->rdma_buf);
		memset(&c->send_buf, 0, sizeof(c->send_buf));
		send16(c, false);		/* go ahead */
		if (wait_recv(c) != 16)
			return 1;
		raddr = it_ntoh64(c->recv_buf.buf_be);
		rkey = ntohl(c->recv_buf.rkey_be);
		post_recv(c);
		rdma(c, false, (uint32_t)strlen((char *)c->rdma_buf) + 1, raddr,
		     rkey);
		send16(c, ping == count - 1);	/* written */
	}
	/* rping's client disconnects after its last round. */
	wait_ev(c->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	printf("it-rping server: %d rounds of %u bytes verified\n", count,
	       c->size);
	free(expect);
	IT_TRY(it_ia_free(ia));
	return 0;
}

/*
 * -U: ucmatose's exchange instead (rdma-core librdmacm/examples/cmatose.c,
 * one connection): both sides post COUNT receives of SIZE bytes before
 * connecting, Send COUNT messages of SIZE once connected and wait for
 * all of them and of the peer's; then the server disconnects and the
 * client waits for that.
 */
static int run_ucm(struct ctx *c, bool server, const char *addr, int port,
		   int count)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l = NULL;
	it_lmr_handle_t lmr;
	it_path_t path;
	it_event_t ev;
	it_ia_handle_t ia = server ? ia_owning(addr) : ia_reaching(addr, &path);
	uint8_t *mem;
	size_t nmore;
	int sent = 0, got = 0;

	if (!ia) {
		fprintf(stderr, "it-rping: no RDMA interface for %s\n", addr);
		return 1;
	}
	if (count > 16) {
		fprintf(stderr, "it-rping -U: at most 16 messages\n");
		return 2;
	}
	setup(c, ia, c->size);
	mem = calloc((size_t)count + 1, c->size);
	if (!mem)
		return 1;
	lmr = reg(c, mem, ((size_t)count + 1) * c->size, IT_PRIV_LOCAL, NULL);
	for (int i = 0; i < count; i++) {
		it_lmr_triplet_t t = { .lmr = lmr, .length = c->size };

		t.addr.abs = mem + (size_t)(i + 1) * c->size;
		IT_TRY(it_post_recv(c->ep, &t, 1, 100 + (uint64_t)i, FL));
	}
	q.conn_qual.port = htons((uint16_t)port);
	if (server) {
		IT_TRY(it_listen_create(ia, 0, c->req, IT_LISTEN_CONN_QUAL_INPUT,
				     &q, &l));
		printf("it-rping -U server: listening on %s:%d\n", addr, port);
		fflush(stdout);
		wait_ev(c->req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
		IT_TRY(it_ep_accept(c->ep, ev.conn_req.cn_est_id, NULL, 0));
	} else {
		IT_TRY(it_ep_connect(c->ep, &path, NULL, &q,
				  IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
	}
	wait_ev(c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	for (int i = 0; i < count; i++) {
		it_lmr_triplet_t t = { .lmr = lmr, .length = c->size };

		t.addr.abs = mem;
		IT_TRY(it_post_send(c->ep, &t, 1, 200 + (uint64_t)i, FL));
	}
	while (sent < count) {
		wait_ev(c->sq, IT_DTO_SEND_CMPL_EVENT, &ev);
		sent++;
	}
	while (got < count) {
		wait_ev(c->rq, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
		if (ev.dto_cmpl.transferred_length != c->size) {
			fprintf(stderr, "it-rping -U: message of %u bytes, expected %u\n",
				(unsigned int)ev.dto_cmpl.transferred_length,
				c->size);
			return 1;
		}
		got++;
	}
	if (server)
		IT_TRY(it_ep_disconnect(c->ep, NULL, 0));
	IT_TRY(it_evd_wait(c->cm, WAIT_US, &ev, &nmore));
	if (ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT) {
		fprintf(stderr, "it-rping -U: event 0x%x, expected the disconnect\n",
			ev.event_number);
		return 1;
	}
	printf("it-rping -U %s: %d messages of %u bytes each way\n",
	       server ? "server" : "client", count, c->size);
	if (l)
		IT_TRY(it_listen_free(l));
	IT_TRY(it_ia_free(ia));
	free(mem);
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx c = { .size = 64 };
	const char *addr = NULL;
	int server = -1, port = 7174, count = 1, opt;
	bool ucm = false;

	it_prog = "it-rping";
	while ((opt = getopt(argc, argv, "sca:p:d:U3C:S:v")) != -1) {
		switch (opt) {
		case '3': three_way = true; break;
		case 'd': it_only_ia = optarg; break;
		case 'U': ucm = true; break;
		case 's': server = 1; break;
		case 'c': server = 0; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'C': count = atoi(optarg); break;
		case 'S': c.size = (uint32_t)atoi(optarg); break;
		case 'v': it_verbose = 1; break;
		default: server = -1; addr = NULL; break;
		}
	}
	if (ucm && server >= 0 && addr && count >= 1 && c.size >= 1)
		return run_ucm(&c, server == 1, addr, port, count);
	if (server < 0 || !addr || count < 1 || c.size < 16) {
		fprintf(stderr, "usage: %s -s|-c -a ADDR -p PORT [-d IA] [-U] [-3] [-C COUNT] [-S SIZE] [-v]\n",
			argv[0]);
		return 2;
	}
	return server ? run_server(&c, addr, port, count) :
			run_client(&c, addr, port, count);
}
