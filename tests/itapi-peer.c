/* SPDX-License-Identifier: MIT */
/*
 * itapi-peer: the other process of the multi-process IT-API tests. It
 * uses only it_api.h and libhostrdma (the installed interface), and runs
 * one role; progress goes to stdout one line at a time ("READY <port>",
 * "CONNECTED", "OK", "FAIL <why>") for the test to follow.
 *
 *   itapi-peer server sevd|aevd|fd   RDMA exchange with a client, taking
 *                                    events the way the mode says
 *   itapi-peer reject                refuse the request with private data
 *   itapi-peer victim                accept, advertise a buffer, then wait
 *                                    to be stopped and killed
 *   itapi-peer graceful              accept, disconnect when told "BYE"
 *   itapi-peer many N                accept N connections, answer each
 *   itapi-peer convert PORT yes|no   TCP to PORT, talk, then convert the
 *                                    socket (yes) or keep streaming (no)
 *   itapi-peer shell                 commands on stdin (listen, accept,
 *                                    connect ADDR PORT, wait N, check N
 *                                    SEED, quit), for the kald suite
 *
 * The device comes from HOSTRDMA_DEVICES (the test sets the environment).
 */
#define _GNU_SOURCE
#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_US (30ull * 1000 * 1000)
#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

static it_ia_handle_t ia;
static it_pz_handle_t pz;
static it_evd_handle_t dto, creq, cmsg, aevd;
static int dto_fd = -1, creq_fd = -1, cmsg_fd = -1;
static enum { MODE_SEVD, MODE_AEVD, MODE_FD } mode;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	/* One line at a time: the shell's background listen says too. */
	flockfile(stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	funlockfile(stdout);
}

#define FAIL(...)                                                           \
	do {                                                                \
		printf("FAIL %s:%d: ", __FILE__, __LINE__);                 \
		say(__VA_ARGS__);                                           \
		exit(1);                                                    \
	} while (0)

#define CHECK(st)                                                           \
	do {                                                                \
		it_status_t check_st_ = (st);                               \
		if (check_st_ != IT_SUCCESS)                                \
			FAIL("%s returned %d", #st, check_st_);             \
	} while (0)

static void setup(void)
{
	const char *dev = getenv("HOSTRDMA_DEVICES");
	it_evd_flags_t f = mode == MODE_FD ? IT_EVD_CREATE_FD : 0;
	it_evd_handle_t a = NULL;

	if (!dev || !*dev)
		dev = "siw_lo";
	CHECK(it_ia_create(dev, 2, 1, &ia));
	CHECK(it_pz_create(ia, &pz));
	if (mode == MODE_AEVD) {
		CHECK(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, 0,
				    16, 0, NULL, &aevd, NULL));
		a = aevd;
	}
	CHECK(it_evd_create(ia, IT_DTO_EVENT_STREAM, f, 512, 0, a, &dto,
			    &dto_fd));
	CHECK(it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, f, 64, 0, a, &creq,
			    &creq_fd));
	CHECK(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, f, 128, 0, a, &cmsg,
			    &cmsg_fd));
}

/* The next event of @evd, taken the way the mode says. */
static void next_event(it_evd_handle_t evd, it_event_t *ev)
{
	size_t nmore;

	switch (mode) {
	case MODE_SEVD:
		CHECK(it_evd_wait(evd, WAIT_US, ev, &nmore));
		return;
	case MODE_FD: {
		int fd = evd == dto ? dto_fd : evd == creq ? creq_fd : cmsg_fd;
		struct pollfd p = { .fd = fd, .events = POLLIN };

		while (it_evd_dequeue(evd, ev) != IT_SUCCESS)
			if (poll(&p, 1, 30000) != 1)
				FAIL("no event on fd %d", fd);
		return;
	}
	case MODE_AEVD:
		/* Drain the SEVD first: a notification is only raised when
		 * it becomes non-empty again. */
		while (it_evd_dequeue(evd, ev) != IT_SUCCESS) {
			it_event_t n;

			CHECK(it_evd_wait(aevd, WAIT_US, &n, &nmore));
			if (n.event_number != IT_AEVD_NOTIFICATION_EVENT)
				FAIL("AEVD gave event 0x%x", n.event_number);
		}
		return;
	}
}

static void expect(it_evd_handle_t evd, it_event_type_t type, it_event_t *ev)
{
	next_event(evd, ev);
	if (ev->event_number != type)
		FAIL("event 0x%x, expected 0x%x (status %d)", ev->event_number,
		     type, (int)ev->dto_cmpl.dto_status);
	if ((type & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM &&
	    ev->dto_cmpl.dto_status != IT_DTO_SUCCESS)
		FAIL("event 0x%x failed with DTO status %d", type,
		     ev->dto_cmpl.dto_status);
}

static it_ep_handle_t new_ep(void)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep;

	memset(&a, 0, sizeof(a));
	a.max_request_dtos = 16;
	a.max_recv_dtos = 16;
	a.max_send_segments = 2;
	a.max_recv_segments = 2;
	a.srv.rc.rdma_read_enable = IT_TRUE;
	a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 2;
	a.srv.rc.max_rdma_write_segments = 2;
	a.srv.rc.rdma_read_ird = 4;
	a.srv.rc.rdma_read_ord = 4;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	CHECK(it_ep_rc_create(pz, dto, dto, cmsg, IT_EP_NO_FLAG, &a, &ep));
	return ep;
}

struct mem {
	unsigned char *p;
	size_t len;
	it_lmr_handle_t lmr;
	it_rmr_context_t rkey;
};

static void mem_new(struct mem *m, size_t len)
{
	m->p = calloc(1, len);
	m->len = len;
	CHECK(it_lmr_create(pz, m->p, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			    0, &m->lmr, &m->rkey));
}

static it_lmr_triplet_t seg(struct mem *m, size_t off, size_t len)
{
	it_lmr_triplet_t t = { .lmr = m->lmr, .length = len };

	t.addr.abs = m->p + off;
	return t;
}

/* A remote buffer advertisement: what fits in private data. */
struct advert {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static struct advert advert_of(struct mem *m)
{
	struct advert a = { it_hton64((uintptr_t)m->p),
			    htonl((uint32_t)m->rkey), htonl((uint32_t)m->len) };

	return a;
}

static it_listen_handle_t listen_ready(void)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;

	CHECK(it_listen_create(ia, 0, creq, IT_LISTEN_NO_FLAG, &q, &l));
	say("READY %u", ntohs(q.conn_qual.port));
	return l;
}

/* Accept the next request on @ep with @pdata; wait until established. */
static void accept_next(it_ep_handle_t ep, const void *pdata, size_t len,
			it_event_t *req)
{
	it_event_t ev;

	expect(creq, IT_CM_REQ_CONN_REQUEST_EVENT, req);
	CHECK(it_ep_accept(ep, req->conn_req.cn_est_id, pdata, len));
	expect(cmsg, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	if (ev.conn.ep != ep)
		FAIL("established for another endpoint");
}

/* ------------------------------------------------------------------ */

static int role_server(void)
{
	it_ep_handle_t ep = new_ep();
	struct mem t, msg, loc;
	struct advert ad, peer;
	it_lmr_triplet_t s;
	it_event_t ev;

	mem_new(&t, 4096);
	mem_new(&msg, 64);
	mem_new(&loc, 1024);
	for (size_t i = 0; i < t.len; i++)
		t.p[i] = (unsigned char)(i * 7 + 3);
	s = seg(&msg, 0, 64);
	CHECK(it_post_recv(ep, &s, 1, 1, CN));
	listen_ready();
	ad = advert_of(&t);
	accept_next(ep, &ad, sizeof(ad), &ev);
	if (!ev.conn_req.private_data_present ||
	    memcmp(ev.conn_req.private_data, "hello", 5))
		FAIL("the request's private data is not \"hello\"");
	/* The client wrote T[2048..], read T[..2048), then says CHECK with
	 * the advert of its own buffer. */
	expect(dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	if (ev.dto_cmpl.transferred_length != 5 + sizeof(peer) ||
	    memcmp(msg.p, "CHECK", 5))
		FAIL("expected CHECK");
	memcpy(&peer, msg.p + 5, sizeof(peer));
	for (size_t i = 2048; i < 4096; i++)
		if (t.p[i] != (unsigned char)~(i * 7 + 3))
			FAIL("the client's write: byte %zu is 0x%02x", i,
			     t.p[i]);
	/* Now the other way: read the client's first KiB, write its
	 * complement into the second. */
	s = seg(&loc, 0, 1024);
	CHECK(it_post_rdma_read(ep, &s, 1, 2, CN, it_ntoh64(peer.addr),
				ntohl(peer.rkey)));
	expect(dto, IT_DTO_RDMA_READ_CMPL_EVENT, &ev);
	for (size_t i = 0; i < 1024; i++)
		loc.p[i] = (unsigned char)~loc.p[i];
	CHECK(it_post_rdma_write(ep, &s, 1, 3, CN,
				 it_ntoh64(peer.addr) + 1024,
				 ntohl(peer.rkey)));
	expect(dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, &ev);
	s = seg(&msg, 0, 64);
	CHECK(it_post_recv(ep, &s, 1, 4, CN));
	memcpy(msg.p + 32, "DONE", 4);
	s = seg(&msg, 32, 4);
	CHECK(it_post_send(ep, &s, 1, 5, CN));
	expect(dto, IT_DTO_SEND_CMPL_EVENT, &ev);
	/* The client disconnects; the posted receive is flushed. */
	expect(cmsg, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	next_event(dto, &ev);
	if (ev.dto_cmpl.dto_status != IT_DTO_ERR_FLUSHED)
		FAIL("receive not flushed: %d", ev.dto_cmpl.dto_status);
	CHECK(it_ia_free(ia));
	say("OK");
	return 0;
}

static int role_reject(void)
{
	it_event_t ev;

	listen_ready();
	expect(creq, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
	CHECK(it_reject(ev.conn_req.cn_est_id,
			(const unsigned char *)"go away", 7));
	CHECK(it_ia_free(ia));
	say("OK");
	return 0;
}

__attribute__((noreturn)) static int role_victim(void)
{
	it_ep_handle_t ep = new_ep();
	struct mem t;
	struct advert ad;
	it_event_t ev;

	mem_new(&t, 1 << 20);
	listen_ready();
	ad = advert_of(&t);
	accept_next(ep, &ad, sizeof(ad), &ev);
	say("CONNECTED");
	for (;;)
		pause();
}

static int role_graceful(void)
{
	it_ep_handle_t ep = new_ep();
	struct mem msg;
	it_lmr_triplet_t s;
	it_event_t ev;

	mem_new(&msg, 64);
	s = seg(&msg, 0, 64);
	CHECK(it_post_recv(ep, &s, 1, 1, CN));
	listen_ready();
	accept_next(ep, NULL, 0, &ev);
	say("CONNECTED");
	expect(dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	if (memcmp(msg.p, "BYE", 3))
		FAIL("expected BYE");
	CHECK(it_ep_disconnect(ep, NULL, 0));
	expect(cmsg, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	CHECK(it_ia_free(ia));
	say("OK");
	return 0;
}

static int role_many(int n)
{
	it_ep_handle_t *eps = calloc((size_t)n, sizeof(*eps));
	struct mem msg;
	it_lmr_triplet_t s;
	it_event_t ev;
	int acks = 0, gone = 0;

	mem_new(&msg, (size_t)n * 32);
	for (int i = 0; i < n; i++) {
		eps[i] = new_ep();
		s = seg(&msg, (size_t)i * 32, 16);
		CHECK(it_post_recv(eps[i], &s, 1, (it_dto_cookie_t)i, CN));
	}
	listen_ready();
	for (int i = 0; i < n; i++) {
		expect(creq, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
		CHECK(it_ep_accept(eps[i], ev.conn_req.cn_est_id, NULL, 0));
	}
	for (int i = 0; i < n; i++)
		expect(cmsg, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	/* Each connection says "conn <k>" once; the answer is "ack <k>". */
	while (acks < n) {
		char *m;
		int i;

		next_event(dto, &ev);
		if (ev.event_number == IT_DTO_SEND_CMPL_EVENT)
			continue;
		if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT ||
		    ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
			FAIL("event 0x%x status %d", ev.event_number,
			     ev.dto_cmpl.dto_status);
		i = (int)ev.dto_cmpl.cookie;
		m = (char *)msg.p + i * 32;
		if (strncmp(m, "conn ", 5))
			FAIL("message %d: %.16s", i, m);
		memcpy(m + 16, "ack ", 4);
		memcpy(m + 20, m + 5, 11);
		s = seg(&msg, (size_t)i * 32 + 16, 16);
		CHECK(it_post_send(eps[i], &s, 1, 1000, IT_COMPLETION_FLAG));
		acks++;
	}
	/* Then the client closes them all. */
	while (gone < n) {
		next_event(cmsg, &ev);
		if (ev.event_number != IT_CM_MSG_CONN_DISCONNECT_EVENT)
			FAIL("event 0x%x, expected a disconnect",
			     ev.event_number);
		gone++;
	}
	CHECK(it_ia_free(ia));
	free(eps);
	say("OK");
	return 0;
}

/* Read a line ending in '\n' from @fd, byte by byte (the stream may go
 * on in another mode afterwards). */
static size_t read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		if (read(fd, buf + n, 1) != 1)
			FAIL("stream ended");
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return n;
}

static int role_convert(int port, bool convert)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	char line[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in.sin_port = htons((uint16_t)port);
	if (connect(fd, (void *)&in, sizeof(in)) < 0)
		FAIL("connect: %s", strerror(errno));
	if (write(fd, "hello from child\n", 17) != 17)
		FAIL("write");
	read_line(fd, line, sizeof(line));
	if (strcmp(line, "hello from parent\n"))
		FAIL("got %s", line);
	if (convert) {
		it_ep_handle_t ep = new_ep();
		struct mem m;
		it_lmr_triplet_t s;
		it_event_t ev;

		mem_new(&m, 64);
		s = seg(&m, 32, 32);
		CHECK(it_post_recv(ep, &s, 1, 1, CN));
		CHECK(it_socket_convert(fd, ep, IT_SC_DEFAULT, NULL, 0));
		expect(cmsg, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
		memcpy(m.p, "ping", 4);
		s = seg(&m, 0, 4);
		CHECK(it_post_send(ep, &s, 1, 2, CN));
		expect(dto, IT_DTO_SEND_CMPL_EVENT, &ev);
		expect(dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
		if (memcmp(m.p + 32, "pong", 4))
			FAIL("expected pong");
		CHECK(it_ia_free(ia));
	} else {
		/* Streaming on: whatever an MPA attempt put in front, the
		 * parent's next line arrives, and ours goes back. */
		for (;;) {
			size_t n = read_line(fd, line, sizeof(line));

			/* (MPA frames hold zero bytes: memmem, not strstr) */
			if (memmem(line, n, "after the failure\n", 18))
				break;
		}
		if (write(fd, "child still here\n", 17) != 17)
			FAIL("write");
		CHECK(it_ia_free(ia));
	}
	say("OK");
	return 0;
}

/* ------------------------------------------------------------------ */
/* shell: a long-lived process the test drives, one command a line on
 * stdin, one answer a line on stdout. Its connections advertise a
 * buffer in their private data; "check" writes a pattern into the
 * peer's with RDMA Write and reads it back with RDMA Read (the peer's
 * application does nothing: its device answers). Failures of the
 * library are answered "ERROR ..." and the shell carries on. */

#define SH_CONNS 16
#define SH_LEN 4096

struct sh_conn {
	it_ep_handle_t ep;
	struct mem buf;		/* what the peer reads and writes */
	struct mem out, back;
	struct advert peer;
	bool up;
};

static struct sh_conn sh[SH_CONNS];
static int sh_n;

static struct sh_conn *sh_new(int *n)
{
	struct sh_conn *c;

	if (sh_n == SH_CONNS)
		FAIL("too many connections");
	*n = sh_n;
	c = &sh[sh_n++];
	c->ep = new_ep();
	mem_new(&c->buf, SH_LEN);
	mem_new(&c->out, SH_LEN);
	mem_new(&c->back, SH_LEN);
	return c;
}

static struct sh_conn *sh_get(const char *arg, int *n)
{
	*n = arg ? atoi(arg) : -1;
	if (*n < 0 || *n >= sh_n)
		return NULL;
	return &sh[*n];
}

static void sh_listen(void)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	it_status_t st;

	st = it_listen_create(ia, 0, creq, IT_LISTEN_NO_FLAG, &q, &l);
	if (st != IT_SUCCESS)
		say("ERROR listen %d", st);
	else
		say("LISTENING %u", ntohs(q.conn_qual.port));
}

static void sh_accept(void)
{
	struct advert ad;
	struct sh_conn *c;
	it_event_t ev;
	size_t nmore;
	it_status_t st;
	int n;

	st = it_evd_wait(creq, WAIT_US, &ev, &nmore);
	if (st != IT_SUCCESS) {
		say("ERROR accept: no request (%d)", st);
		return;
	}
	if (ev.event_number != IT_CM_REQ_CONN_REQUEST_EVENT ||
	    ev.conn_req.private_data_present != IT_TRUE) {
		say("ERROR accept: event 0x%x", ev.event_number);
		return;
	}
	c = sh_new(&n);
	memcpy(&c->peer, ev.conn_req.private_data, sizeof(c->peer));
	ad = advert_of(&c->buf);
	st = it_ep_accept(c->ep, ev.conn_req.cn_est_id,
			  (const unsigned char *)&ad, sizeof(ad));
	if (st != IT_SUCCESS) {
		say("ERROR accept %d", st);
		return;
	}
	st = it_evd_wait(cmsg, WAIT_US, &ev, &nmore);
	if (st != IT_SUCCESS ||
	    ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT ||
	    ev.conn.ep != c->ep) {
		say("ERROR accept: not established (%d, event 0x%x)", st,
		    st == IT_SUCCESS ? ev.event_number : 0);
		return;
	}
	c->up = true;
	say("ACCEPTED %d", n);
}

static void sh_connect(const char *addr, const char *port)
{
	it_net_addr_t dst;
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct advert ad;
	struct sh_conn *c;
	size_t np = 1, total;
	it_path_t path;
	it_status_t st;
	int n;

	memset(&dst, 0, sizeof(dst));
	if (!addr || !port) {
		say("ERROR connect: ADDR PORT");
		return;
	}
	if (inet_pton(AF_INET, addr, &dst.addr.ipv4) == 1) {
		dst.addr_type = IT_IPV4;
	} else if (inet_pton(AF_INET6, addr, &dst.addr.ipv6) == 1) {
		dst.addr_type = IT_IPV6;
	} else {
		say("ERROR connect: bad address %s", addr);
		return;
	}
	q.conn_qual.port = htons((uint16_t)atoi(port));
	st = it_get_pathinfo(ia, 0, &dst, &np, &total, &path);
	if (st != IT_SUCCESS || np != 1) {
		say("ERROR connect: no path (%d)", st);
		return;
	}
	c = sh_new(&n);
	ad = advert_of(&c->buf);
	st = it_ep_connect(c->ep, &path, NULL, &q, IT_CONNECT_FLAG_TWO_WAY,
			   (const unsigned char *)&ad, sizeof(ad));
	if (st != IT_SUCCESS)
		say("ERROR connect %d", st);
	else
		say("CONNECTING %d", n);
}

/* The outcome of connection @n's it_ep_connect. */
static void sh_wait(const char *arg)
{
	struct sh_conn *c;
	it_event_t ev;
	size_t nmore;
	it_status_t st;
	int n;

	c = sh_get(arg, &n);
	if (!c || c->up) {
		say("ERROR wait: no connection %s being made", arg);
		return;
	}
	st = it_evd_wait(cmsg, WAIT_US, &ev, &nmore);
	if (st != IT_SUCCESS) {
		say("ERROR wait %d: no event (%d)", n, st);
		return;
	}
	if (ev.event_number != IT_CM_MSG_CONN_ESTABLISHED_EVENT ||
	    ev.conn.ep != c->ep || ev.conn.private_data_present != IT_TRUE) {
		say("ERROR wait %d: event 0x%x", n, ev.event_number);
		return;
	}
	memcpy(&c->peer, ev.conn.private_data, sizeof(c->peer));
	c->up = true;
	say("CONNECTED %d", n);
}

/* Whether DTO @cookie completed well; the DTO EVD is the shell's. */
static bool sh_dto(it_dto_cookie_t cookie, it_event_type_t type)
{
	it_event_t ev;
	size_t nmore;
	it_status_t st;

	st = it_evd_wait(dto, WAIT_US, &ev, &nmore);
	if (st != IT_SUCCESS) {
		say("ERROR check: no completion (%d)", st);
		return false;
	}
	if (ev.event_number != type || ev.dto_cmpl.cookie != cookie ||
	    ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		say("ERROR check: event 0x%x status %d", ev.event_number,
		    (int)ev.dto_cmpl.dto_status);
		return false;
	}
	return true;
}

static void sh_check(const char *arg, const char *seed_arg)
{
	unsigned int seed = seed_arg ? (unsigned int)atoi(seed_arg) : 1;
	uint64_t raddr;
	uint32_t rkey;
	it_lmr_triplet_t s;
	struct sh_conn *c;
	it_status_t st;
	int n;

	c = sh_get(arg, &n);
	if (!c || !c->up) {
		say("ERROR check: no connection %s", arg ? arg : "");
		return;
	}
	for (size_t i = 0; i < SH_LEN; i++)
		c->out.p[i] = (unsigned char)(i * 13 + seed * 101 + 7);
	memset(c->back.p, 0, SH_LEN);
	raddr = it_ntoh64(c->peer.addr);
	rkey = ntohl(c->peer.rkey);
	s = seg(&c->out, 0, SH_LEN);
	st = it_post_rdma_write(c->ep, &s, 1, 1, CN, raddr, rkey);
	if (st != IT_SUCCESS) {
		say("ERROR check %d: write %d", n, st);
		return;
	}
	if (!sh_dto(1, IT_DTO_RDMA_WRITE_CMPL_EVENT))
		return;
	s = seg(&c->back, 0, SH_LEN);
	st = it_post_rdma_read(c->ep, &s, 1, 2, CN, raddr, rkey);
	if (st != IT_SUCCESS) {
		say("ERROR check %d: read %d", n, st);
		return;
	}
	if (!sh_dto(2, IT_DTO_RDMA_READ_CMPL_EVENT))
		return;
	if (memcmp(c->out.p, c->back.p, SH_LEN)) {
		say("ERROR check %d: the bytes read back differ", n);
		return;
	}
	say("CHECKED %d", n);
}

/* "listen&": the listen in a thread of its own, so that the shell takes
 * commands while it waits (for a restarting hostrdma-kald). */
static void *sh_listen_thread(void *arg)
{
	(void)arg;
	sh_listen();
	return NULL;
}

/* "disconnect N": it_ep_disconnect of connection @n; says when the call
 * returned (the peer's answer comes as an event, not waited for). */
static void sh_disconnect(const char *arg)
{
	struct sh_conn *c;
	it_status_t st;
	int n;

	c = sh_get(arg, &n);
	if (!c || !c->up) {
		say("ERROR disconnect: no connection %s", arg ? arg : "");
		return;
	}
	st = it_ep_disconnect(c->ep, NULL, 0);
	if (st != IT_SUCCESS) {
		say("ERROR disconnect %d: %d", n, st);
		return;
	}
	c->up = false;
	say("DISCONNECTING %d", n);
}

static int role_shell(void)
{
	pthread_t bg;
	bool bg_on = false;
	char line[256];

	say("SHELL");
	while (fgets(line, sizeof(line), stdin)) {
		char *save = NULL;
		char *cmd = strtok_r(line, " \n", &save);
		char *a1 = strtok_r(NULL, " \n", &save);
		char *a2 = strtok_r(NULL, " \n", &save);

		if (!cmd)
			continue;
		if (!strcmp(cmd, "listen"))
			sh_listen();
		else if (!strcmp(cmd, "listen&") && !bg_on)
			bg_on = !pthread_create(&bg, NULL, sh_listen_thread,
						NULL);
		else if (!strcmp(cmd, "listen&"))
			say("ERROR listen&: one already runs");
		else if (!strcmp(cmd, "disconnect"))
			sh_disconnect(a1);
		else if (!strcmp(cmd, "accept"))
			sh_accept();
		else if (!strcmp(cmd, "connect"))
			sh_connect(a1, a2);
		else if (!strcmp(cmd, "wait"))
			sh_wait(a1);
		else if (!strcmp(cmd, "check"))
			sh_check(a1, a2);
		else if (!strcmp(cmd, "quit"))
			break;
		else
			say("ERROR unknown command %s", cmd);
	}
	if (bg_on)
		pthread_join(bg, NULL);
	/* The connections end with the process (the test kills it or
	 * says quit); it_ia_free would disconnect each. */
	say("BYE");
	return 0;
}

int main(int argc, char **argv)
{
	alarm(120);	/* never outlive a broken test */
	if (argc < 2)
		FAIL("no role");
	if (argc > 2 && !strcmp(argv[2], "aevd"))
		mode = MODE_AEVD;
	else if (argc > 2 && !strcmp(argv[2], "fd"))
		mode = MODE_FD;
	setup();
	if (!strcmp(argv[1], "server"))
		return role_server();
	if (!strcmp(argv[1], "reject"))
		return role_reject();
	if (!strcmp(argv[1], "victim"))
		return role_victim();
	if (!strcmp(argv[1], "shell"))
		return role_shell();
	if (!strcmp(argv[1], "graceful"))
		return role_graceful();
	if (!strcmp(argv[1], "many") && argc > 2)
		return role_many(atoi(argv[2]));
	if (!strcmp(argv[1], "convert") && argc > 3)
		return role_convert(atoi(argv[2]), !strcmp(argv[3], "yes"));
	FAIL("unknown role %s", argv[1]);
}
