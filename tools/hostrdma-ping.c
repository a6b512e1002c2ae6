/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-ping - rping over IT-API: the same application protocol as
 * rdma-core's rping (librdmacm/examples/rping.c), so each end works with
 * the other program in either role.
 *
 * Every round the client Sends an advert {be64 addr, be32 rkey, be32 len}
 * of its start buffer (rping's text: "rdma-ping-N: " then letters), the
 * server RDMA-Reads it and Sends an empty "go ahead", the client
 * advertises its sink buffer, the server RDMA-Writes the text there
 * (its length up to the NUL) and Sends again; with -V the client
 * compares. The adverts from the peer are checked before use.
 */
#define _GNU_SOURCE
#include "tools/ping_wire.h"
#include "tools/tool_util.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "hostrdma-ping"
#define MSG_FMT "rdma-ping-%d: "
/* rping's limits: the text of the largest count fits, and 64 KiB - 1. */
#define MIN_SIZE (sizeof("2147483647") + sizeof(MSG_FMT))
#define MAX_SIZE (64 * 1024 - 1)
_Static_assert(MIN_SIZE == 26, "--help says 26");
#define FLAGS ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

struct opts {
	/* gboolean: GOption's flags */
	gboolean server, client, verbose, validate, debug, persistent;
	gboolean loopback;		/* -L: both roles, one process */
	const char *addr, *src_addr, *device;
	uint16_t port;
	int count;			/* 0: until stopped (client) */
	uint32_t size;
};

struct ping {
	const struct opts *o;
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t sq, rq, cm, req;
	it_listen_handle_t listen;
	it_ep_handle_t ep;
	struct ping_advert recv_buf, send_buf;
	uint8_t *start_buf, *rdma_buf;
	it_lmr_handle_t recv_lmr, send_lmr, start_lmr, rdma_lmr;
	it_rmr_context_t start_key, rdma_key;
	/* server: called once it listens */
	void (*ready)(void *arg);
	void *ready_arg;
	/* A wait a signal interrupts goes on: the client stops between
	 * rounds (stop), a -L server when its client disconnects. A -s
	 * server's wait ends (IT_ERR_INTERRUPT). */
	bool resume_on_signal;
	/* -L server: set once its client failed; its waits end then. */
	const atomic_bool *quit;
	/* server: the client went away (a flushed completion, or a
	 * disconnect or broken connection): rping's normal end. */
	bool peer_gone;
	/* server: a signal (SIGINT, SIGTERM) ended a wait. */
	bool interrupted;
};

/* How often a -L server looks whether its client has failed. */
#define QUIT_POLL_US (100ull * 1000)

static volatile sig_atomic_t stop;


static void debug(const struct opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void debug(const struct opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->debug)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", PROG);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int check(const char *what, it_status_t st)
{
	return tool_check(PROG, what, st);
}

/*
 * it_evd_wait up to @timeout_us (or IT_TIMEOUT_INFINITE) as this end's
 * role wants it (resume_on_signal, quit): 0 with the wait's status in
 * *@st, or -1 when a -L server stops because its client failed (the
 * client has said why).
 */
static int ping_wait(struct ping *p, it_evd_handle_t evd, uint64_t timeout_us,
		     it_event_t *ev, it_status_t *st)
{
	bool forever = timeout_us == IT_TIMEOUT_INFINITE;
	uint64_t end = forever ? 0 : tool_now_ns() / 1000 + timeout_us;
	/* A signal that came just before the wait began would not end
	 * it: a server looks at the flag every QUIT_POLL_US too. */
	bool watch_stop = !p->resume_on_signal;

	for (;;) {
		uint64_t now = tool_now_ns() / 1000;
		uint64_t slice = forever ? IT_TIMEOUT_INFINITE :
				 end > now ? end - now :
					     0;
		size_t nmore;

		if (p->quit && atomic_load(p->quit))
			return -1;
		if (watch_stop && stop) {
			*st = IT_ERR_INTERRUPT;
			return 0;
		}
		if ((p->quit || watch_stop) && slice > QUIT_POLL_US)
			slice = QUIT_POLL_US;
		*st = it_evd_wait(evd, slice, ev, &nmore);
		if (*st == IT_ERR_INTERRUPT && p->resume_on_signal)
			continue;
		if (*st == IT_ERR_TIMEOUT_EXPIRED && (p->quit || watch_stop) &&
		    (forever || tool_now_ns() / 1000 < end))
			continue;
		return 0;
	}
}

/*
 * tool_wait_event, waiting through ping_wait. A flushed completion (the
 * connection went away under it) and an interrupted wait are noted in
 * peer_gone and interrupted, without a message: the server takes both
 * as the end of its client.
 */
static int wait_event(struct ping *p, it_evd_handle_t evd,
		      it_event_type_t type, uint64_t timeout_us, it_event_t *ev)
{
	it_status_t st;

	if (ping_wait(p, evd, timeout_us, ev, &st))
		return -1;
	if (st == IT_ERR_INTERRUPT) {
		p->interrupted = true;
		return -1;
	}
	if (st == IT_SUCCESS &&
	    (ev->event_number & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM &&
	    ev->dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED) {
		p->peer_gone = true;
		return -1;
	}
	if (st == IT_SUCCESS &&
	    (ev->event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
	     ev->event_number == IT_CM_MSG_CONN_BROKEN_EVENT) &&
	    type != ev->event_number)
		p->peer_gone = true;
	return tool_check_event(PROG, type, st, ev);
}

/*
 * After a failed step of the server: whether the client went away (a
 * disconnect or broken connection on the CM EVD within a second). A
 * client killed mid-round shows so, and rping takes it as the end.
 */
static bool peer_left(struct ping *p)
{
	it_event_t ev;
	size_t nmore;

	if (p->peer_gone)
		return true;
	if (it_evd_wait(p->cm, 1000000, &ev, &nmore) == IT_SUCCESS &&
	    (ev.event_number == IT_CM_MSG_CONN_DISCONNECT_EVENT ||
	     ev.event_number == IT_CM_MSG_CONN_BROKEN_EVENT))
		p->peer_gone = true;
	return p->peer_gone;
}

static int reg(struct ping *p, void *buf, size_t len, it_mem_priv_t privs,
	       it_lmr_handle_t *lmr, it_rmr_context_t *key)
{
	return check("it_lmr_create",
		     it_lmr_create(p->pz, buf, NULL, len,
				   IT_ADDR_MODE_ABSOLUTE, privs,
				   IT_LMR_FLAG_NONE, 0, lmr, key));
}

/* PZ, EVDs (the connection request EVD comes from tool_listen on the
 * server), the EP, and rping's four buffers. */
static int setup(struct ping *p)
{
	it_ep_attributes_t a = { 0 };
	uint32_t size = p->o->size;

	if (check("it_pz_create", it_pz_create(p->ia, &p->pz)) ||
	    check("it_evd_create",
		  it_evd_create(p->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
				&p->sq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(p->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
				&p->rq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(p->ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL,
				&p->cm, NULL)))
		return -1;
	a.max_request_dtos = a.max_recv_dtos = 8;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 1;
	a.srv.rc.max_rdma_write_segments = 1;
	/* rping asks for one Read in flight each way. */
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 1;
	if (check("it_ep_rc_create",
		  it_ep_rc_create(p->pz, p->sq, p->rq, p->cm, IT_EP_NO_FLAG, &a,
				  &p->ep)))
		return -1;
	p->start_buf = calloc(1, size);
	p->rdma_buf = calloc(1, size);
	if (!p->start_buf || !p->rdma_buf)
		return -1;
	/* The peer reads the start buffer and writes the RDMA buffer; our
	 * own RDMA Read lands in the RDMA buffer (iWARP: remote write). */
	return reg(p, &p->recv_buf, sizeof(p->recv_buf), IT_PRIV_LOCAL,
		   &p->recv_lmr, NULL) ||
	       reg(p, &p->send_buf, sizeof(p->send_buf), IT_PRIV_LOCAL,
		   &p->send_lmr, NULL) ||
	       reg(p, p->start_buf, size,
		   IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ, &p->start_lmr,
		   &p->start_key) ||
	       reg(p, p->rdma_buf, size, IT_PRIV_LOCAL | IT_PRIV_REMOTE,
		   &p->rdma_lmr, &p->rdma_key) ?
		       -1 :
		       0;
}

static int post_recv(struct ping *p)
{
	it_lmr_triplet_t t = { .lmr = p->recv_lmr,
			       .length = sizeof(p->recv_buf) };

	t.addr.abs = &p->recv_buf;
	return check("it_post_recv", it_post_recv(p->ep, &t, 1, 1, FLAGS));
}

static int send_advert(struct ping *p)
{
	it_lmr_triplet_t t = { .lmr = p->send_lmr,
			       .length = sizeof(p->send_buf) };
	it_event_t ev;

	t.addr.abs = &p->send_buf;
	if (check("it_post_send", it_post_send(p->ep, &t, 1, 2, FLAGS)))
		return -1;
	return wait_event(p, p->sq, IT_DTO_SEND_CMPL_EVENT, TOOL_WAIT_US, &ev);
}

/*
 * The next advert from the peer, its receive posted again. 1 when the
 * peer disconnected instead (the receive flushed), -1 on errors.
 */
static int recv_advert(struct ping *p, uint64_t timeout_us)
{
	it_event_t ev;
	it_status_t st;

	if (ping_wait(p, p->rq, timeout_us, &ev, &st))
		return -1;
	if (st == IT_ERR_INTERRUPT) {
		p->interrupted = true;
		return -1;
	}
	if (st != IT_SUCCESS)
		return check("waiting for the peer's message", st);
	if (ev.event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
	    ev.dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED) {
		p->peer_gone = true;
		return 1;
	}
	if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT ||
	    ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		fprintf(stderr, "%s: receive failed: %s\n", PROG,
			tool_dto_status_name(ev.dto_cmpl.dto_status));
		return -1;
	}
	if (ev.dto_cmpl.transferred_length != sizeof(struct ping_advert)) {
		fprintf(stderr, "%s: the peer sent %u bytes, rping's message is %zu\n",
			PROG, ev.dto_cmpl.transferred_length,
			sizeof(struct ping_advert));
		return -1;
	}
	return post_recv(p);
}

static void advertise(struct ping *p, uint8_t *buf, it_rmr_context_t key)
{
	p->send_buf.buf_be = it_hton64((uintptr_t)buf);
	p->send_buf.rkey_be = htonl((uint32_t)key);
	p->send_buf.size_be = htonl(p->o->size);
}

/* rping's client buffer for round @ping: its text, then letters A..z
 * starting one further each round, NUL-terminated. */
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

static int gone(int ping)
{
	fprintf(stderr, "%s: round %d: no answer from the server (see its messages)\n",
		PROG, ping);
	return 1;
}

static int run_client(struct ping *p)
{
	const struct opts *o = p->o;
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct tool_sel sel;
	it_net_addr_t dst;
	it_path_t path;
	it_event_t ev;
	it_status_t st;
	int ping, rc = 0;
	size_t np = 1, total;
	bool fixed;

	if (tool_parse_addr(PROG, o->addr, &dst))
		return 1;
	if (o->src_addr && !o->device) {
		it_net_addr_t src;

		if (tool_parse_addr(PROG, o->src_addr, &src))
			return 1;
		p->ia = tool_ia_owning(PROG, NULL, &src);
		if (!p->ia)
			return 1;
		if (it_get_pathinfo(p->ia, 0, &dst, &np, &total, &path) !=
			    IT_SUCCESS || np != 1) {
			fprintf(stderr, "%s: the device holding %s has no path to %s\n",
				PROG, o->src_addr, o->addr);
			return 1;
		}
	}
	/* The device holding the source address, or each device with a
	 * path in turn until one connects (tool_sel_next). */
	tool_sel_init(&sel, PROG, o->device, &dst, o->port,
		      o->verbose || o->debug);
	q.conn_qual.port = htons(o->port);
	fixed = p->ia != NULL;
	sel.current = "the device holding the source address";
	for (;;) {
		if (!fixed)
			p->ia = tool_sel_next(&sel, &path);
		if (!p->ia || setup(p) || post_recv(p))
			return 1;
		if (check("it_ep_connect",
			  it_ep_connect(p->ep, &path, NULL, &q,
					IT_CONNECT_FLAG_TWO_WAY, NULL, 0)) ||
		    ping_wait(p, p->cm, TOOL_WAIT_US, &ev, &st))
			return 1;
		rc = tool_sel_outcome(&sel, st, &ev);
		if (!rc)
			break;
		if (rc < 0 || fixed)
			return 1;
		it_ia_free(p->ia);	/* and all made on it */
		p->ia = NULL;
		free(p->start_buf);
		free(p->rdma_buf);
		p->start_buf = p->rdma_buf = NULL;
	}
	debug(o, "connected: IRD %u ORD %u", ev.conn.rdma_read_ird,
	      ev.conn.rdma_read_ord);
	for (ping = 0; !stop && (!o->count || ping < o->count); ping++) {
		fill_pattern(p->start_buf, o->size, ping);
		memset(p->rdma_buf, 0, o->size);
		advertise(p, p->start_buf, p->start_key);
		if (send_advert(p))
			return 1;
		debug(o, "round %d: start buffer advertised", ping);
		if (recv_advert(p, TOOL_WAIT_US))	/* go ahead */
			return gone(ping);
		advertise(p, p->rdma_buf, p->rdma_key);
		if (send_advert(p))
			return 1;
		debug(o, "round %d: sink buffer advertised", ping);
		if (recv_advert(p, TOOL_WAIT_US))	/* written */
			return gone(ping);
		if (o->validate && memcmp(p->start_buf, p->rdma_buf, o->size)) {
			fprintf(stderr, "data mismatch!\n");
			rc = 1;
			break;
		}
		if (o->verbose)
			printf("ping data: %s\n", p->rdma_buf);
	}
	fflush(stdout);
	if (check("it_ep_disconnect", it_ep_disconnect(p->ep, NULL, 0)) ||
	    wait_event(p, p->cm, IT_CM_MSG_CONN_DISCONNECT_EVENT, TOOL_WAIT_US,
		       &ev))
		return 1;
	if (!rc)
		fprintf(stderr, "%s: client: %d rounds of %u bytes%s\n", PROG,
			ping, o->size, o->validate ? ", validated" : "");
	return rc;
}

/* The advert the peer sent, checked against what we can take. */
static int take_advert(struct ping *p, uint64_t *addr, uint32_t *rkey,
		       uint32_t *len)
{
	return ping_advert_take(PROG, &p->recv_buf, p->o->size, addr, rkey,
				len);
}

static int rdma(struct ping *p, bool read, uint32_t len, uint64_t raddr,
		uint32_t rkey)
{
	it_lmr_triplet_t t = { .lmr = p->rdma_lmr, .length = len };
	it_event_t ev;

	t.addr.abs = p->rdma_buf;
	if (read)
		return check("it_post_rdma_read",
			     it_post_rdma_read(p->ep, &t, 1, 3, FLAGS, raddr,
					       rkey)) ||
		       wait_event(p, p->sq, IT_DTO_RDMA_READ_CMPL_EVENT,
				  TOOL_WAIT_US, &ev);
	return check("it_post_rdma_write",
		     it_post_rdma_write(p->ep, &t, 1, 4, FLAGS, raddr,
					rkey)) ||
	       wait_event(p, p->sq, IT_DTO_RDMA_WRITE_CMPL_EVENT, TOOL_WAIT_US,
			  &ev);
}

/*
 * After a step of serve() failed: 0 when the client went away (rping's
 * normal end) or a signal stopped the server, saying so; 1 otherwise.
 */
static int serve_end(struct ping *p, int rounds)
{
	if (p->interrupted) {
		it_ep_disconnect(p->ep, NULL, 0);
		fprintf(stderr, "%s: server: stopped by a signal after %d rounds\n",
			PROG, rounds);
		return 0;
	}
	if (peer_left(p)) {
		fprintf(stderr, "%s: server: the client left after %d rounds\n",
			PROG, rounds);
		return 0;
	}
	return 1;
}

/*
 * One client, until it disconnects (or -C rounds). A client that goes
 * away at any point, killed or not, ends it normally (exit 0), as in
 * rping; so does SIGINT or SIGTERM.
 */
static int serve(struct ping *p, it_cn_est_identifier_t id)
{
	const struct opts *o = p->o;
	it_event_t ev;
	int ping, r;

	p->peer_gone = false;
	if (post_recv(p) ||
	    check("it_ep_accept", it_ep_accept(p->ep, id, NULL, 0)) ||
	    wait_event(p, p->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT,
		       TOOL_WAIT_US, &ev))
		return p->interrupted ? serve_end(p, 0) : 1;
	for (ping = 0; !o->count || ping < o->count; ping++) {
		uint64_t raddr;
		uint32_t rkey, len;

		r = recv_advert(p, IT_TIMEOUT_INFINITE);
		if (r > 0)
			break;		/* the client is done */
		if (r < 0)
			return serve_end(p, ping);
		if (take_advert(p, &raddr, &rkey, &len))
			return 1;
		debug(o, "round %d: reading %u bytes", ping, len);
		memset(p->rdma_buf, 0, o->size);
		if (rdma(p, true, len, raddr, rkey))
			return serve_end(p, ping);
		p->rdma_buf[o->size - 1] = 0;
		if (o->verbose)
			printf("server ping data: %s\n", p->rdma_buf);
		memset(&p->send_buf, 0, sizeof(p->send_buf));
		if (send_advert(p))	/* go ahead */
			return serve_end(p, ping);
		r = recv_advert(p, TOOL_WAIT_US);
		if (r)
			return serve_end(p, ping);
		if (take_advert(p, &raddr, &rkey, &len))
			return 1;
		/* rping echoes the text up to its NUL. */
		len = ping_echo_len(p->rdma_buf, o->size);
		debug(o, "round %d: writing %u bytes back", ping, len);
		if (rdma(p, false, len, raddr, rkey) || send_advert(p))
			return serve_end(p, ping);
	}
	fflush(stdout);
	if (o->count && !p->peer_gone) {
		/* The client disconnects after its last round (or its
		 * connection breaks: it is gone either way). */
		if (ping_wait(p, p->cm, TOOL_WAIT_US, &ev, &(it_status_t){ 0 }))
			return 1;
	} else {
		it_ep_disconnect(p->ep, NULL, 0);
	}
	fprintf(stderr, "%s: server: %d rounds of up to %u bytes\n", PROG, ping,
		o->size);
	return 0;
}

static int run_server(struct ping *p)
{
	const struct opts *o = p->o;
	int rc = 0, served = 0;

	rc = tool_listen(PROG, o->device, o->addr, o->port, 8,
			 !o->debug && !o->verbose, p->ready, p->ready_arg,
			 &p->ia, &p->req, &p->listen);
	if (rc > 0) {
		fprintf(stderr, "%s: server: stopped by a signal\n", PROG);
		return 0;
	}
	if (rc)
		return 1;
	do {
		it_event_t ev;
		it_status_t st;

		if (ping_wait(p, p->req, IT_TIMEOUT_INFINITE, &ev, &st))
			return 1;
		if (st == IT_ERR_INTERRUPT) {
			fprintf(stderr, "%s: server: stopped by a signal after %d clients\n",
				PROG, served);
			return rc;
		}
		if (tool_check_event(PROG, IT_CM_REQ_CONN_REQUEST_EVENT, st,
				     &ev))
			return 1;
		debug(o, "connection request: IRD %u ORD %u",
		      ev.conn_req.rdma_read_ird, ev.conn_req.rdma_read_ord);
		if (setup(p))
			return 1;
		rc |= serve(p, ev.conn_req.cn_est_id);
		served++;
		/* A fresh EP and buffers for the next client (-P). */
		it_ep_free(p->ep);
		it_lmr_free(p->recv_lmr);
		it_lmr_free(p->send_lmr);
		it_lmr_free(p->start_lmr);
		it_lmr_free(p->rdma_lmr);
		it_evd_free(p->sq);
		it_evd_free(p->rq);
		it_evd_free(p->cm);
		it_pz_free(p->pz);
		free(p->start_buf);
		free(p->rdma_buf);
		p->start_buf = p->rdma_buf = NULL;
	} while (o->persistent && !p->interrupted);
	return rc;
}

/*
 * -L: the server in a thread, the client here, one process. A user-space
 * soft-RoCE device holds UDP port 4791 of its addresses, so only one
 * process on a host can open rxe_lo; two IAs of one process can.
 *
 * The server's thread works on a struct loop_server in run_loopback's
 * frame: it is joined on every path. When the client fails, the server
 * may be waiting for a request or a message that will not come; `quit`
 * ends its waits. SIGINT and SIGTERM are the client's (it stops between
 * rounds and disconnects, which ends the server): the server's thread,
 * and the threads its IA starts, block them.
 */
struct loop_server {
	struct opts o;
	struct ping p;
	int rc;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int listening;			/* 0 not yet, 1 yes, -1 failed */
	atomic_bool quit;		/* the client failed */
};

static void loop_signal(struct loop_server *s, int state)
{
	pthread_mutex_lock(&s->lock);
	if (!s->listening)
		s->listening = state;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void loop_ready(void *arg)
{
	loop_signal(arg, 1);
}

static void *loop_server_main(void *arg)
{
	struct loop_server *s = arg;

	s->rc = run_server(&s->p);
	loop_signal(s, -1);	/* if it never listened */
	if (s->p.ia)
		it_ia_free(s->p.ia);
	free(s->p.start_buf);
	free(s->p.rdma_buf);
	return NULL;
}

static int run_loopback(struct ping *p)
{
	struct loop_server s = { .o = *p->o };
	sigset_t sigs, old;
	pthread_t th;
	int ok, rc, err;

	s.o.server = true;
	s.o.client = false;
	s.o.persistent = false;
	s.p.o = &s.o;
	s.p.ready = loop_ready;
	s.p.ready_arg = &s;
	s.p.resume_on_signal = true;
	s.p.quit = &s.quit;
	atomic_init(&s.quit, false);
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	err = pthread_create(&th, NULL, loop_server_main, &s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "%s: cannot start the server thread: %s\n",
			PROG, strerror(err));
		rc = 1;
		goto out;
	}
	pthread_mutex_lock(&s.lock);
	while (!s.listening)
		pthread_cond_wait(&s.cond, &s.lock);
	ok = s.listening > 0;
	pthread_mutex_unlock(&s.lock);
	rc = ok ? run_client(p) : 1;
	if (rc)
		atomic_store(&s.quit, true);
	pthread_join(th, NULL);
	rc = rc || s.rc;
out:
	pthread_mutex_destroy(&s.lock);
	pthread_cond_destroy(&s.cond);
	return rc;
}

/* The command line: GOption's table is the --help text too. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	g_autofree char *port = NULL, *count = NULL, *size = NULL;
	g_autofree char *summary = NULL;
	gboolean ignored_q = FALSE;
	const GOptionEntry entries[] = {
		{ "server", 's', 0, G_OPTION_ARG_NONE, &o->server,
		  "Server", NULL },
		{ "client", 'c', 0, G_OPTION_ARG_NONE, &o->client,
		  "Client", NULL },
		{ "loopback", 'L', 0, G_OPTION_ARG_NONE, &o->loopback,
		  "Both roles, server and client in this process, on 127.0.0.1 or -a ADDR (for rxe_lo)",
		  NULL },
		{ "address", 'a', 0, G_OPTION_ARG_STRING, &o->addr,
		  "Server: listen on the device holding ADDR (default: every device); client: the server's address",
		  "ADDR" },
		{ "source", 'I', 0, G_OPTION_ARG_STRING, &o->src_addr,
		  "Client: the source address (its device)", "ADDR" },
		{ "port", 'p', 0, G_OPTION_ARG_STRING, &port,
		  "Port, 1 to 65535 (default 7174)", "PORT" },
		{ "count", 'C', 0, G_OPTION_ARG_STRING, &count,
		  "Rounds (client default: until interrupted; server default: until the client disconnects)",
		  "COUNT" },
		{ "size", 'S', 0, G_OPTION_ARG_STRING, &size,
		  "Ping data size in bytes, 26 to 65535 (default 64)", "SIZE" },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &o->verbose,
		  "Print the ping data", NULL },
		{ "validate", 'V', 0, G_OPTION_ARG_NONE, &o->validate,
		  "Client: check the data that came back", NULL },
		{ "debug", 'd', 0, G_OPTION_ARG_NONE, &o->debug,
		  "Debug messages on stderr", NULL },
		{ "persistent", 'P', 0, G_OPTION_ARG_NONE, &o->persistent,
		  "Server: one client after another", NULL },
		{ "device", 'D', 0, G_OPTION_ARG_STRING, &o->device,
		  "The IT-API interface to use (e.g. siw_lo)", "NAME" },
		{ "qp-ignored", 'q', G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE,
		  &ignored_q, "rping's -q: accepted, no effect", NULL },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx =
		g_option_context_new("- rping over IT-API");
	guint64 v;

	summary = g_strdup_printf(
		"  %s -s [-vVdP] [-S SIZE] [-C COUNT] [-a ADDR] [-p PORT]\n"
		"  %s -c [-vVd] [-S SIZE] [-C COUNT] [-I ADDR] -a ADDR [-p PORT]\n"
		"  %s -L [-vVd] [-S SIZE] [-C COUNT] [-a ADDR] [-p PORT]",
		PROG, PROG, PROG);
	g_option_context_set_summary(ctx, summary);
	g_option_context_set_description(
		ctx, "Wire compatible with rdma-core's rping. Exit status: 0 "
		     "when the rounds ran (a server: also when its client "
		     "left or a signal stopped it), 1 on failure, 2 for a "
		     "bad command line. See hostrdma-ping(1).\n");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (tool_parse_options(PROG, ctx, &argc, &argv))
		return 2;
	if (argc > 1) {
		fprintf(stderr, "%s: unexpected argument %s\n", PROG, argv[1]);
		return 2;
	}
	if (port) {
		if (tool_parse_uint(PROG, "-p", port, 1, 65535, &v))
			return 2;
		o->port = (uint16_t)v;
	}
	if (count) {
		if (tool_parse_uint(PROG, "-C", count, 0, INT_MAX, &v))
			return 2;
		o->count = (int)v;
	}
	if (size) {
		if (tool_parse_uint(PROG, "-S", size, MIN_SIZE, MAX_SIZE, &v))
			return 2;
		o->size = (uint32_t)v;
	}
	if (o->loopback) {
		if (o->server || o->client) {
			fprintf(stderr, "%s: -L is both roles: no -s, no -c\n",
				PROG);
			return 2;
		}
		o->client = true;
		if (!o->addr)
			o->addr = "127.0.0.1";
	}
	if (o->server == o->client) {
		fprintf(stderr, "%s: one of -s, -c or -L, please (see --help)\n",
			PROG);
		return 2;
	}
	if (o->client && !o->addr) {
		fprintf(stderr, "%s: a client needs the server's address: -a ADDR\n",
			PROG);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .port = 7174, .size = 64 };
	struct ping p = { .o = &o };
	int rc;

	tool_init(PROG);
	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	tool_catch_stop_signals(&stop);
	p.resume_on_signal = o.client;
	if (o.loopback)
		rc = run_loopback(&p);
	else
		rc = o.client ? run_client(&p) : run_server(&p);
	if (p.ia)
		it_ia_free(p.ia);
	free(p.start_buf);
	free(p.rdma_buf);
	return rc;
}
