/* SPDX-License-Identifier: MIT */
/*
 * IT-API across two processes over 127.0.0.1: this process (the test)
 * and tests/itapi-peer, started with fork and exec (a fresh process using
 * only libhostrdma; under valgrind it runs natively, not traced).
 *
 * Connect with private data both ways, Send/Receive, RDMA Write and Read
 * in both directions with every byte checked, events taken from SEVDs,
 * through an AEVD, or through the fds in poll(); reject with private
 * data; the peer disconnecting, or killed (an RST when it had unread data:
 * BROKEN; a plain exit); many connections to one listener with a silent
 * TCP client in front; socket conversion on both sides and on one; the
 * example programs against each other.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil_itapi.h"
#include "tests/suites.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

/* ------------------------------------------------------------------ */
/* The other process                                                   */
/* ------------------------------------------------------------------ */

struct peer {
	pid_t pid;
	int out;		/* its stdout */
	char buf[4096];
	size_t len;
};

static void peer_start_argv(struct peer *p, const char *const *argv)
{
	int fds[2];

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		/* Only async-signal-safe calls until exec. */
		dup2(fds[1], STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	p->out = fds[0];
}

static void peer_start(struct peer *p, const char *prog, const char *a1,
		       const char *a2, const char *a3)
{
	const char *argv[] = { prog, a1, a2, a3, NULL };

	peer_start_argv(p, argv);
}

/* The next line the peer printed (without '\n'); fails on silence. */
static const char *peer_line(struct peer *p, char *line, size_t size)
{
	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		ssize_t r;

		if (nl) {
			size_t n = (size_t)(nl - p->buf);

			ck_assert_uint_lt(n, size);
			memcpy(line, p->buf, n);
			line[n] = 0;
			memmove(p->buf, nl + 1, p->len - n - 1);
			p->len -= n + 1;
			ck_assert_msg(strncmp(line, "FAIL", 4) != 0,
				      "peer: %s", line);
			return line;
		}
		ck_assert_msg(poll(&pfd, 1, 60000) == 1,
			      "the peer said nothing for 60 s");
		ck_assert_uint_lt(p->len, sizeof(p->buf) - 1);
		r = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (r <= 0) {
			int st = 0;

			waitpid(p->pid, &st, 0);
			ck_abort_msg("the peer ended without a word: %s",
				     tu_wait_status_str(st));
		}
		p->len += (size_t)r;
	}
}

static void peer_expect(struct peer *p, const char *want)
{
	char line[512];

	ck_assert_str_eq(peer_line(p, line, sizeof(line)), want);
}

static uint16_t peer_ready(struct peer *p)
{
	char line[512];
	unsigned int port = 0;

	ck_assert_int_eq(sscanf(peer_line(p, line, sizeof(line)), "READY %u",
				&port),
			 1);
	return (uint16_t)port;
}

/* Wait for the peer's end; returns its wait status. */
static int peer_end(struct peer *p)
{
	int status = 0;

	for (int i = 0; i < 6000; i++) {
		pid_t r = waitpid(p->pid, &status, WNOHANG);

		if (r == p->pid) {
			close(p->out);
			return status;
		}
		g_usleep(10000);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	close(p->out);
	ck_abort_msg("the peer did not end");
	return status;
}

static void peer_ok(struct peer *p)
{
	int st;

	peer_expect(p, "OK");
	st = peer_end(p);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the peer ended with status 0x%x", st);
}

/* ------------------------------------------------------------------ */
/* This process: an IA whose events come the way the mode says         */
/* ------------------------------------------------------------------ */

enum mode { M_SEVD, M_AEVD, M_FD };

static struct it_fix F;
static enum mode M;
static it_evd_handle_t A;	/* the AEVD of M_AEVD */
static int dto_fd = -1, msg_fd = -1;

static void open_mode(enum mode m)
{
	it_evd_flags_t f = m == M_FD ? IT_EVD_CREATE_FD : 0;

	it_setup_siw();
	M = m;
	memset(&F, 0, sizeof(F));
	A = NULL;
	ck_assert_it_ok(it_ia_create("siw_lo", 2, 1, &F.ia));
	ck_assert_it_ok(it_pz_create(F.ia, &F.pz));
	if (m == M_AEVD)
		ck_assert_it_ok(it_evd_create(F.ia,
					      IT_AEVD_NOTIFICATION_EVENT_STREAM,
					      0, 16, 0, NULL, &A, NULL));
	ck_assert_it_ok(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, f, 512, 0, A,
				      &F.dto, &dto_fd));
	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_MSG_EVENT_STREAM, f, 128, 0,
				      A, &F.msg, &msg_fd));
	ck_assert_it_ok(it_evd_create(F.ia, IT_CM_REQ_EVENT_STREAM, 0, 16, 0,
				      NULL, &F.req, NULL));
}

static void setup(void)
{
	open_mode(M_SEVD);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

static void next_event(it_evd_handle_t evd, it_event_t *ev)
{
	size_t nmore;

	switch (M) {
	case M_SEVD:
		it_wait_event(evd, ev);
		return;
	case M_FD: {
		struct pollfd p = { .fd = evd == F.dto ? dto_fd : msg_fd,
				    .events = POLLIN };

		while (it_evd_dequeue(evd, ev) != IT_SUCCESS)
			ck_assert_msg(poll(&p, 1, 30000) == 1,
				      "the EVD's fd stayed quiet");
		return;
	}
	case M_AEVD:
		while (it_evd_dequeue(evd, ev) != IT_SUCCESS) {
			it_event_t n;

			ck_assert_it_ok(it_evd_wait(A, IT_WAIT_US, &n, &nmore));
			ck_assert_event(&n, IT_AEVD_NOTIFICATION_EVENT);
			ck_assert(n.aevd_notify.sevd == F.dto ||
				  n.aevd_notify.sevd == F.msg);
		}
		return;
	}
}

static void expect_dto(it_event_type_t type, it_dto_cookie_t cookie,
		       it_event_t *out)
{
	it_event_t ev;

	next_event(F.dto, &ev);
	ck_assert_event(&ev, type);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	if (out)
		*out = ev;
}

struct advert {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static void connect_to(it_ep_handle_t ep, uint16_t port, const char *pdata,
		       it_event_t *ev)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_path_t path;

	q.conn_qual.port = htons(port);
	it_loopback_path(&F, &path);
	ck_assert_it_ok(it_ep_connect(ep, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY,
				      (const unsigned char *)pdata,
				      pdata ? strlen(pdata) : 0));
	next_event(F.msg, ev);
}

/* ------------------------------------------------------------------ */

static void exchange(enum mode m)
{
	struct peer p;
	it_ep_handle_t ep;
	struct it_buf c, w, msg;
	struct advert t, mine;
	it_lmr_triplet_t s;
	it_event_t ev;
	uint16_t port;
	static const char *const names[] = { "sevd", "aevd", "fd" };

	it_fix_close(&F);
	open_mode(m);
	peer_start(&p, ITAPI_PEER, "server", names[m], NULL);
	port = peer_ready(&p);
	ep = it_ep_new(&F);
	it_buf_new(&F, &c, 2048, IT_PRIV_LOCAL | IT_PRIV_REMOTE);
	it_buf_new(&F, &w, 4096, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	it_buf_new(&F, &msg, 64, IT_PRIV_LOCAL);

	connect_to(ep, port, "hello", &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	ck_assert(ev.conn.private_data_present);
	memcpy(&t, ev.conn.private_data, sizeof(t));
	ck_assert_uint_eq(ntohl(t.len), 4096);

	/* Write the complement of the peer's pattern into its upper half. */
	for (size_t i = 0; i < 2048; i++)
		w.mem[i] = (unsigned char)~((i + 2048) * 7 + 3);
	s = it_seg(&w, 0, 2048);
	ck_assert_it_ok(it_post_rdma_write(ep, &s, 1, 1, CN,
					   it_ntoh64(t.addr) + 2048,
					   ntohl(t.rkey)));
	expect_dto(IT_DTO_RDMA_WRITE_CMPL_EVENT, 1, NULL);
	/* Read its lower half: the pattern it wrote. */
	s = it_seg(&w, 2048, 2048);
	ck_assert_it_ok(it_post_rdma_read(ep, &s, 1, 2, CN, it_ntoh64(t.addr),
					  ntohl(t.rkey)));
	expect_dto(IT_DTO_RDMA_READ_CMPL_EVENT, 2, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 2048);
	for (size_t i = 0; i < 2048; i++)
		ck_assert_uint_eq(w.mem[2048 + i], (unsigned char)(i * 7 + 3));

	/* Our buffer for it to read and write. */
	for (size_t i = 0; i < 1024; i++)
		c.mem[i] = (unsigned char)g_random_int();
	s = it_seg(&msg, 32, 32);
	ck_assert_it_ok(it_post_recv(ep, &s, 1, 3, CN));
	mine.addr = it_hton64((uintptr_t)c.mem);
	mine.rkey = htonl((uint32_t)c.rkey);
	mine.len = htonl(2048);
	memcpy(msg.mem, "CHECK", 5);
	memcpy(msg.mem + 5, &mine, sizeof(mine));
	s = it_seg(&msg, 0, 5 + sizeof(mine));
	ck_assert_it_ok(it_post_send(ep, &s, 1, 4, CN));
	expect_dto(IT_DTO_SEND_CMPL_EVENT, 4, NULL);
	expect_dto(IT_DTO_RC_RECV_CMPL_EVENT, 3, &ev);
	ck_assert_int_eq(memcmp(msg.mem + 32, "DONE", 4), 0);
	for (size_t i = 0; i < 1024; i++)
		ck_assert_uint_eq(c.mem[1024 + i], (unsigned char)~c.mem[i]);

	ck_assert_it_ok(it_ep_disconnect(ep, NULL, 0));
	next_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	peer_ok(&p);
	it_buf_free(&c);
	it_buf_free(&w);
	it_buf_free(&msg);
}

START_TEST(exchange_sevd)
{
	exchange(M_SEVD);
}
END_TEST

START_TEST(exchange_aevd)
{
	exchange(M_AEVD);
}
END_TEST

START_TEST(exchange_fd)
{
	exchange(M_FD);
}
END_TEST

START_TEST(peer_rejects)
{
	struct peer p;
	it_ep_handle_t ep = it_ep_new(&F);
	it_ep_param_t par;
	it_event_t ev;

	peer_start(&p, ITAPI_PEER, "reject", NULL, NULL);
	connect_to(ep, peer_ready(&p), "let me in", &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
	ck_assert(ev.conn.private_data_present);
	ck_assert_int_eq(memcmp(ev.conn.private_data, "go away", 7), 0);
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &par));
	ck_assert_int_eq(par.ep_state.rc, IT_EP_STATE_NONOPERATIONAL);
	peer_ok(&p);
}
END_TEST

START_TEST(peer_disconnects)
{
	struct peer p;
	it_ep_handle_t ep = it_ep_new(&F);
	struct it_buf msg;
	it_lmr_triplet_t s;
	it_event_t ev;

	it_buf_new(&F, &msg, 64, IT_PRIV_LOCAL);
	peer_start(&p, ITAPI_PEER, "graceful", NULL, NULL);
	connect_to(ep, peer_ready(&p), NULL, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	peer_expect(&p, "CONNECTED");
	memcpy(msg.mem, "BYE", 3);
	s = it_seg(&msg, 0, 3);
	ck_assert_it_ok(it_post_send(ep, &s, 1, 1, CN));
	expect_dto(IT_DTO_SEND_CMPL_EVENT, 1, NULL);
	next_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	ck_assert_ptr_eq(ev.conn.ep, ep);
	peer_ok(&p);
	it_buf_free(&msg);
}
END_TEST

/* The peer process dies. With @unread, it had bytes it never read in its
 * socket: its kernel answers with an RST, the connection is BROKEN. */
static void peer_killed(bool unread)
{
	struct peer p;
	it_ep_handle_t ep = it_ep_new(&F);
	struct it_buf big, r;
	struct advert t;
	it_lmr_triplet_t s;
	it_ep_param_t par;
	it_event_t ev;
	int st;

	it_buf_new(&F, &big, 64 * 1024, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 64, IT_PRIV_LOCAL);
	peer_start(&p, ITAPI_PEER, "victim", NULL, NULL);
	connect_to(ep, peer_ready(&p), NULL, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	memcpy(&t, ev.conn.private_data, sizeof(t));
	peer_expect(&p, "CONNECTED");
	s = it_seg(&r, 0, 64);
	ck_assert_it_ok(it_post_recv(ep, &s, 1, 9, CN));
	if (unread) {
		ck_assert_int_eq(kill(p.pid, SIGSTOP), 0);
		ck_assert_int_eq(waitpid(p.pid, &st, WUNTRACED), p.pid);
		ck_assert(WIFSTOPPED(st));
		/* Into its socket buffer: nobody there reads it. */
		s = it_seg(&big, 0, big.len);
		ck_assert_it_ok(it_post_rdma_write(ep, &s, 1, 1, CN,
						   it_ntoh64(t.addr),
						   ntohl(t.rkey)));
		expect_dto(IT_DTO_RDMA_WRITE_CMPL_EVENT, 1, NULL);
	}
	ck_assert_int_eq(kill(p.pid, SIGKILL), 0);
	st = peer_end(&p);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	next_event(F.msg, &ev);
	ck_assert_ptr_eq(ev.conn.ep, ep);
	if (unread)
		ck_assert_event(&ev, IT_CM_MSG_CONN_BROKEN_EVENT);
	else
		/* An exit closes with FIN like an orderly close, or RST
		 * when the peer's stack had the last word: either ends it. */
		ck_assert_msg(ev.event_number ==
					      IT_CM_MSG_CONN_DISCONNECT_EVENT ||
				      ev.event_number ==
					      IT_CM_MSG_CONN_BROKEN_EVENT,
			      "event %s", itapi_event_name(ev.event_number));
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &par));
	ck_assert_int_eq(par.ep_state.rc, IT_EP_STATE_NONOPERATIONAL);
	/* Our receive comes back flushed. */
	next_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 9);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_ERR_FLUSHED);
	it_buf_free(&big);
	it_buf_free(&r);
}

START_TEST(peer_killed_with_unread_data)
{
	peer_killed(true);
}
END_TEST

START_TEST(peer_killed_idle)
{
	peer_killed(false);
}
END_TEST

#define MANY 16

START_TEST(many_to_one_listener)
{
	struct peer p;
	it_ep_handle_t eps[MANY];
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct it_buf msg;
	char n[8];
	it_event_t ev;
	uint16_t port;
	int silent, up = 0, acks = 0, gone = 0;

	snprintf(n, sizeof(n), "%d", MANY);
	peer_start(&p, ITAPI_PEER, "many", n, NULL);
	port = peer_ready(&p);
	/* A client that connects and never speaks comes first. */
	silent = socket(AF_INET, SOCK_STREAM, 0);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in.sin_port = htons(port);
	ck_assert_int_eq(connect(silent, (void *)&in, sizeof(in)), 0);
	it_buf_new(&F, &msg, MANY * 32, IT_PRIV_LOCAL);
	for (int i = 0; i < MANY; i++) {
		it_conn_qual_t q = { .type = IT_IANA_PORT };
		it_lmr_triplet_t s = it_seg(&msg, (size_t)i * 32 + 16, 16);
		it_path_t path;

		eps[i] = it_ep_new(&F);
		ck_assert_it_ok(it_post_recv(eps[i], &s, 1, (it_dto_cookie_t)i,
					     CN));
		q.conn_qual.port = htons(port);
		it_loopback_path(&F, &path);
		ck_assert_it_ok(it_ep_connect(eps[i], &path, NULL, &q, 0, NULL,
					      0));
	}
	while (up < MANY) {
		int i;

		next_event(F.msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
		for (i = 0; i < MANY && eps[i] != ev.conn.ep; i++)
			;
		ck_assert_int_lt(i, MANY);
		{
			it_lmr_triplet_t s = it_seg(&msg, (size_t)i * 32, 16);

			snprintf((char *)msg.mem + i * 32, 16, "conn %d", i);
			ck_assert_it_ok(it_post_send(eps[i], &s, 1, 1000, 0));
		}
		up++;
	}
	while (acks < MANY) {
		char want[16];
		int i;

		next_event(F.dto, &ev);
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		i = (int)ev.dto_cmpl.cookie;
		ck_assert_ptr_eq(ev.dto_cmpl.ep, eps[i]);
		snprintf(want, sizeof(want), "ack %d", i);
		ck_assert_str_eq((char *)msg.mem + i * 32 + 16, want);
		acks++;
	}
	for (int i = 0; i < MANY; i++)
		ck_assert_it_ok(it_ep_disconnect(eps[i], NULL, 0));
	while (gone < MANY) {
		next_event(F.msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
		gone++;
	}
	peer_ok(&p);
	close(silent);
	it_buf_free(&msg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Socket conversion across processes                                  */
/* ------------------------------------------------------------------ */

static int tcp_listen(uint16_t *port)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (void *)&in, sizeof(in)), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (void *)&in, &len), 0);
	*port = ntohs(in.sin_port);
	return l;
}

static void read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ck_assert_int_eq(read(fd, buf + n, 1), 1);
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
}

static int converse(struct peer *p, const char *mode)
{
	char port_s[8], line[128];
	uint16_t port;
	int l = tcp_listen(&port), fd;

	snprintf(port_s, sizeof(port_s), "%u", port);
	peer_start(p, ITAPI_PEER, "convert", port_s, mode);
	fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(l);
	/* They agree over the socket first. */
	read_line(fd, line, sizeof(line));
	ck_assert_str_eq(line, "hello from child\n");
	ck_assert_int_eq(write(fd, "hello from parent\n", 18), 18);
	return fd;
}

START_TEST(socket_convert_both_processes)
{
	struct peer p;
	it_ep_handle_t ep = it_ep_new(&F);
	struct it_buf m;
	it_lmr_triplet_t s;
	it_event_t ev;
	int fd = converse(&p, "yes");

	it_buf_new(&F, &m, 64, IT_PRIV_LOCAL);
	s = it_seg(&m, 0, 32);
	ck_assert_it_ok(it_post_recv(ep, &s, 1, 1, CN));
	ck_assert_it_ok(it_socket_convert(fd, ep, IT_SC_DEFAULT, NULL, 0));
	next_event(F.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
	expect_dto(IT_DTO_RC_RECV_CMPL_EVENT, 1, &ev);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 4);
	ck_assert_int_eq(memcmp(m.mem, "ping", 4), 0);
	memcpy(m.mem + 32, "pong", 4);
	s = it_seg(&m, 32, 4);
	ck_assert_it_ok(it_post_send(ep, &s, 1, 2, CN));
	expect_dto(IT_DTO_SEND_CMPL_EVENT, 2, NULL);
	peer_ok(&p);
	it_buf_free(&m);
}
END_TEST

START_TEST(socket_convert_one_process_only)
{
	struct peer p;
	it_ep_handle_t ep = it_ep_new(&F);
	it_ep_param_t par;
	char line[128];
	int fd = converse(&p, "no");

	/* The peer keeps streaming: a clear refusal here... */
	ck_assert_it(it_socket_convert(fd, ep, IT_SC_DEFAULT, NULL, 0),
		     IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_STATE, &par));
	ck_assert_int_eq(par.ep_state.rc, IT_EP_STATE_UNCONNECTED);
	/* ...and the socket still works both ways. */
	ck_assert_int_eq(write(fd, "after the failure\n", 18), 18);
	read_line(fd, line, sizeof(line));
	ck_assert_str_eq(line, "child still here\n");
	peer_ok(&p);
	close(fd);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The examples                                                        */
/* ------------------------------------------------------------------ */

START_TEST(examples_client_server)
{
	struct peer srv, cli;
	char line[512], port_s[8];
	unsigned int port = 0;

	peer_start(&srv, EXAMPLES_DIR "/it_server", NULL, NULL, NULL);
	ck_assert_int_eq(sscanf(peer_line(&srv, line, sizeof(line)),
				"listening on port %u", &port),
			 1);
	snprintf(port_s, sizeof(port_s), "%u", port);
	{
		/* A second server on the port says so. */
		const char *argv[] = { EXAMPLES_DIR "/it_server", port_s,
				       NULL };
		g_autofree char *out = NULL, *err = NULL;
		g_autofree char *want = g_strdup_printf("port %s is in use",
							port_s);
		int st = 0;

		ck_assert(g_spawn_sync(NULL, (char **)argv, NULL,
				       G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
				       &st, NULL));
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
		ck_assert_msg(strstr(err, want), "%s", err);
	}
	peer_start(&cli, EXAMPLES_DIR "/it_client", "127.0.0.1", port_s,
		   NULL);
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "connected to 127.0.0.1");
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "server says: HELLO FROM THE CLIENT");
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "RDMA write and read checked");
	ck_assert_int_eq(peer_end(&cli), 0);
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)),
			 "client said: hello from the client");
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)),
			 "disconnected");
	ck_assert_int_eq(peer_end(&srv), 0);
}
END_TEST

#ifdef HAVE_PROV_RXE
/*
 * The examples as their comments say, as a user runs them: no
 * HOSTRDMA_DEVICES, both providers, rxe first (an installed prefix's
 * order). The server listens on every device and holds soft-RoCE's port;
 * the client's rxe_lo therefore does not open and it meets the server on
 * siw_lo. Against a server on siw_lo only, the client's rxe_lo opens, is
 * refused, and it moves on to siw_lo.
 */
static void examples_run(const char *dev)
{
	struct peer srv, cli;
	char line[512], port_s[8];
	unsigned int port = 0;

	peer_start(&srv, EXAMPLES_DIR "/it_server", dev ? "0" : NULL, dev,
		   NULL);
	ck_assert_int_eq(sscanf(peer_line(&srv, line, sizeof(line)),
				"listening on port %u", &port),
			 1);
	snprintf(port_s, sizeof(port_s), "%u", port);
	peer_start(&cli, EXAMPLES_DIR "/it_client", "127.0.0.1", port_s,
		   NULL);
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "connected to 127.0.0.1");
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "server says: HELLO FROM THE CLIENT");
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "RDMA write and read checked");
	ck_assert_int_eq(peer_end(&cli), 0);
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)),
			 "client said: hello from the client");
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)),
			 "disconnected");
	ck_assert_int_eq(peer_end(&srv), 0);
}

START_TEST(examples_every_device)
{
	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 RXE_PROVIDER_DIR ":" SIW_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	g_unsetenv("HOSTRDMA_CM_TIMEOUT_MS");
	examples_run(NULL);
	examples_run("siw_lo");
}
END_TEST
#endif

/* The interop program over lo, both roles, before it meets Linux. */
START_TEST(it_rping_loopback)
{
	struct peer srv, cli;
	char line[512], want[128], port_s[8];
	uint16_t port;
	const char *sargv[] = { IT_RPING, "-s", "-a", "127.0.0.1", "-p",
				port_s, "-C", "5", "-S", "4000", NULL };
	const char *cargv[] = { IT_RPING, "-c", "-a", "127.0.0.1", "-p",
				port_s, "-C", "5", "-S", "4000", NULL };

	close(tcp_listen(&port));	/* a free port */
	snprintf(port_s, sizeof(port_s), "%u", port);
	peer_start_argv(&srv, sargv);
	snprintf(want, sizeof(want),
		 "it-rping server: listening on 127.0.0.1:%s", port_s);
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)), want);
	peer_start_argv(&cli, cargv);
	ck_assert_str_eq(peer_line(&cli, line, sizeof(line)),
			 "it-rping client: 5 rounds of 4000 bytes verified");
	ck_assert_int_eq(peer_end(&cli), 0);
	ck_assert_str_eq(peer_line(&srv, line, sizeof(line)),
			 "it-rping server: 5 rounds of 4000 bytes verified");
	ck_assert_int_eq(peer_end(&srv), 0);
}
END_TEST

Suite *suite_itapi_mp(void)
{
	Suite *s = suite_create("itapi-mp");
	TCase *tc = tcase_create("two-processes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, exchange_sevd);
	tcase_add_test(tc, exchange_aevd);
	tcase_add_test(tc, exchange_fd);
	tcase_add_test(tc, peer_rejects);
	tcase_add_test(tc, peer_disconnects);
	tcase_add_test(tc, peer_killed_with_unread_data);
	tcase_add_test(tc, peer_killed_idle);
	tcase_add_test(tc, many_to_one_listener);
	tcase_add_test(tc, socket_convert_both_processes);
	tcase_add_test(tc, socket_convert_one_process_only);
	tcase_add_test(tc, examples_client_server);
#ifdef HAVE_PROV_RXE
	tcase_add_test(tc, examples_every_device);
#endif
	tcase_add_test(tc, it_rping_loopback);
	suite_add_tcase(s, tc);
	return s;
}
