/* SPDX-License-Identifier: MIT */
/*
 * perf_conn.c - hostrdma-perf's connections: the IA, the control EP and
 * its messages, the data EPs and their buffers, on IT-API only.
 *
 * Every control message from the peer is checked (magic, type, every
 * count against our limits) before anything in it is used: the peer is
 * another program on another host.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FLAGS ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define CTL_COOKIE 0xc0000000ull

static int check(const char *what, it_status_t st)
{
	return tool_check(PERF_PROG, what, st);
}

/* Byte @i of message @size on QP @qp: differs between sizes and QPs so a
 * stale or misplaced message does not pass for the right one. */
static inline uint8_t pattern(uint64_t i, uint64_t size, unsigned int qp)
{
	return (uint8_t)(i * 7 + size * 13 + qp * 31 + 1);
}

void perf_fill(uint8_t *p, uint64_t len, uint64_t size, unsigned int qp)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = pattern(i, size, qp);
}

/* Bytes wrong in a sink that should hold message @size from QP @qp and
 * nothing past it (zeros up to @max). */
uint32_t perf_check(const uint8_t *p, uint64_t size, uint64_t max,
		    unsigned int qp)
{
	uint32_t bad = 0;

	for (uint64_t i = 0; i < size; i++)
		bad += p[i] != pattern(i, size, qp);
	for (uint64_t i = size; i < max; i++)
		bad += p[i] != 0;
	return bad;
}

static int ctl_post_recv(struct perf_ctx *c, unsigned int slot)
{
	it_lmr_triplet_t t = { .lmr = c->clmr,
			       .length = sizeof(struct perf_ctl) };

	t.addr.abs = &c->cbuf[1 + slot];
	return check("it_post_recv (control)",
		     it_post_recv(c->cep, &t, 1, CTL_COOKIE + slot, FLAGS));
}

int perf_ctl_send(struct perf_ctx *c, enum perf_ctl_type type,
		  const uint64_t *v, unsigned int nv, bool adverts)
{
	struct perf_ctl *m = &c->cbuf[0];
	it_lmr_triplet_t t = { .lmr = c->clmr, .length = sizeof(*m) };
	it_event_t ev;

	memset(m, 0, sizeof(*m));
	m->magic_be = htonl(PERF_MAGIC);
	m->type_be = htonl(type);
	for (unsigned int i = 0; i < nv; i++)
		m->v_be[i] = perf_be64(v[i]);
	for (unsigned int i = 0; adverts && i < c->nqp; i++) {
		struct perf_qp *q = &c->qp[i];

		m->adv[i].addr_be = perf_be64((uintptr_t)q->buf);
		m->adv[i].rkey_be = htonl((uint32_t)q->rkey);
		m->adv[i].len_be = perf_be64(q->buf_len);
	}
	t.addr.abs = m;
	if (check("it_post_send (control)",
		  it_post_send(c->cep, &t, 1, CTL_COOKIE, FLAGS)))
		return -1;
	return tool_wait_event(PERF_PROG, c->csq, IT_DTO_SEND_CMPL_EVENT,
			       TOOL_WAIT_US, &ev);
}

/* The receive slot of control completion @ev, or -1 with a message. */
static int ctl_slot(const it_event_t *ev)
{
	unsigned int slot = (unsigned int)(ev->dto_cmpl.cookie - CTL_COOKIE);

	/* A receive flushed: the connection went down under it, most
	 * often the peer ending (Ctrl-C) before the run's end */
	if (ev->event_number == IT_DTO_RC_RECV_CMPL_EVENT &&
	    ev->dto_cmpl.dto_status == IT_DTO_ERR_FLUSHED) {
		fprintf(stderr, "%s: the peer went away: the connection closed before the run ended (control channel: receive flushed)\n",
			PERF_PROG);
		return -1;
	}
	if (ev->event_number != IT_DTO_RC_RECV_CMPL_EVENT ||
	    ev->dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		fprintf(stderr, "%s: control channel: %s (%s)\n", PERF_PROG,
			tool_event_name(ev->event_number),
			tool_dto_status_name(ev->dto_cmpl.dto_status));
		return -1;
	}
	if (slot >= PERF_CTL_RECVS) {
		fprintf(stderr, "%s: control receive with cookie %#llx\n",
			PERF_PROG, (unsigned long long)ev->dto_cmpl.cookie);
		return -1;
	}
	return (int)slot;
}

/* A control receive completion @ev, which must carry a message of
 * @type: copied to c->last, its receive posted again. */

static int ctl_take(struct perf_ctx *c, const it_event_t *ev,
		    enum perf_ctl_type type)
{
	int slot = ctl_slot(ev);

	if (slot < 0)
		return -1;
	if (ev->dto_cmpl.transferred_length != sizeof(struct perf_ctl)) {
		fprintf(stderr, "%s: control message of %u bytes, expected %zu\n",
			PERF_PROG, ev->dto_cmpl.transferred_length,
			sizeof(struct perf_ctl));
		return -1;
	}
	c->last = c->cbuf[1 + slot];
	if (ctl_post_recv(c, (unsigned int)slot))
		return -1;
	return perf_ctl_check(&c->last, type);
}

int perf_ctl_recv(struct perf_ctx *c, enum perf_ctl_type type,
		  uint64_t timeout_us)
{
	it_event_t ev;
	size_t nmore;
	it_status_t st = it_evd_wait(c->crq, timeout_us, &ev, &nmore);

	if (st != IT_SUCCESS)
		return tool_check(PERF_PROG, "waiting for the peer", st);
	return ctl_take(c, &ev, type);
}

int perf_ctl_poll(struct perf_ctx *c, enum perf_ctl_type type)
{
	it_event_t ev;
	it_status_t st = it_evd_dequeue(c->crq, &ev);

	if (st == IT_ERR_QUEUE_EMPTY)
		return 0;
	if (st != IT_SUCCESS)
		return tool_check(PERF_PROG, "it_evd_dequeue (control)", st);
	return ctl_take(c, &ev, type) ? -1 : 1;
}

int perf_raw_send(struct perf_ctx *c, const void *buf, size_t len)
{
	it_lmr_triplet_t t = { .lmr = c->clmr, .length = len };
	it_event_t ev;

	if (len > sizeof(struct perf_ctl))
		return -1;
	memcpy(&c->cbuf[0], buf, len);
	t.addr.abs = &c->cbuf[0];
	if (check("it_post_send (control)",
		  it_post_send(c->cep, &t, 1, CTL_COOKIE, FLAGS)))
		return -1;
	return tool_wait_event(PERF_PROG, c->csq, IT_DTO_SEND_CMPL_EVENT,
			       TOOL_WAIT_US, &ev);
}

int perf_raw_recv(struct perf_ctx *c, void *buf, size_t len,
		  uint64_t timeout_us)
{
	it_event_t ev;
	size_t nmore;
	it_status_t st = it_evd_wait(c->crq, timeout_us, &ev, &nmore);
	int slot;

	if (st != IT_SUCCESS)
		return tool_check(PERF_PROG, "waiting for the peer", st);
	slot = ctl_slot(&ev);
	if (slot < 0)
		return -1;
	if (ev.dto_cmpl.transferred_length != len) {
		fprintf(stderr, "%s: control message of %u bytes, expected %zu\n",
			PERF_PROG, ev.dto_cmpl.transferred_length, len);
		return -1;
	}
	memcpy(buf, &c->cbuf[1 + slot], len);
	return ctl_post_recv(c, (unsigned int)slot);
}

/* PZ, EVDs, the control EP and its buffers. */
int perf_make_base(struct perf_ctx *c)
{
	struct perf_opts *o = c->o;
	size_t sq_n = (size_t)o->qps * (o->tx_depth + 8) + 16;
	size_t rq_n = (size_t)o->qps * (o->rx_depth + 8) + 16;
	it_ep_attributes_t a = { 0 };
	size_t clen = sizeof(struct perf_ctl) * (1 + PERF_CTL_RECVS);

	if (check("it_pz_create", it_pz_create(c->ia, &c->pz)) ||
	    check("it_evd_create",
		  it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, sq_n, 0, NULL,
				&c->sq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, rq_n, 0, NULL,
				&c->rq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
				&c->csq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(c->ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL,
				&c->crq, NULL)) ||
	    check("it_evd_create",
		  it_evd_create(c->ia, IT_CM_MSG_EVENT_STREAM, 0,
				4 * PERF_MAX_QPS + 8, 0, NULL, &c->cm, NULL)))
		return -1;
	c->cbuf = calloc(1, clen);
	if (!c->cbuf)
		return -1;
	if (check("it_lmr_create (control)",
		  it_lmr_create(c->pz, c->cbuf, NULL, clen,
				IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				IT_LMR_FLAG_NONE, 0, &c->clmr, NULL)))
		return -1;
	a.max_request_dtos = a.max_recv_dtos = PERF_CTL_RECVS + 2;
	a.max_send_segments = a.max_recv_segments = 1;
	if (check("it_ep_rc_create (control)",
		  it_ep_rc_create(c->pz, c->csq, c->crq, c->cm, IT_EP_NO_FLAG,
				  &a, &c->cep)))
		return -1;
	for (unsigned int i = 0; i < PERF_CTL_RECVS; i++)
		if (ctl_post_recv(c, i))
			return -1;
	if (o->verb == PERF_ATOMIC) {
		it_ia_info_t *info;
		bool ok = false;

		if (it_ia_query(c->ia, &info) == IT_SUCCESS) {
			ok = info->atomic_support;
			if (!ok)
				fprintf(stderr, "%s: device %s has no atomic operations (its atomic_support is false; soft-iWARP has none, soft-RoCE has them)\n",
					PERF_PROG, info->ia_name);
			it_ia_info_free(info);
		}
		if (!ok)
			return -1;
	}
	return 0;
}

/*
 * Where things are in a QP's buffer: the source at 0, the sink after it
 * when the data is checked or ping-ponged (else sink and source share the
 * region, as in perftest: pinned memory is scarce, RLIMIT_MEMLOCK), then
 * the credit word the peer writes, and ours to send 64 bytes further.
 */
void perf_layout(struct perf_ctx *c)
{
	/* atomics: the target word (the sink) apart from the results */
	bool split = c->o->verify || c->o->lat || c->o->verb == PERF_ATOMIC;

	c->sink_off = split ? c->max_size : 0;
	c->credit_off = c->sink_off + c->max_size;
}

/* A data EP and its buffer. */
int perf_make_qp(struct perf_ctx *c, unsigned int i)
{
	struct perf_opts *o = c->o;
	struct perf_qp *q = &c->qp[i];
	it_ep_attributes_t a = { 0 };
	size_t len = c->credit_off + 128;
	bool atomic = o->verb == PERF_ATOMIC;

	q->index = i;
	q->buf_len = (len + 4095) & ~(size_t)4095;
	q->buf = mmap(NULL, q->buf_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->buf == MAP_FAILED) {
		q->buf = NULL;
		fprintf(stderr, "%s: no memory for a %zu-byte buffer\n",
			PERF_PROG, q->buf_len);
		return -1;
	}
	q->credit_src = (uint64_t *)(q->buf + c->credit_off + 64);
	/* An iWARP RDMA Read writes the local sink: remote write right
	 * (IT-API's rdma_read_requires_remote_write). */
	if (check("it_lmr_create",
		  it_lmr_create(c->pz, q->buf, NULL, q->buf_len,
				IT_ADDR_MODE_ABSOLUTE,
				IT_PRIV_LOCAL | IT_PRIV_REMOTE |
					(atomic ? IT_PRIV_ATOMIC : 0),
				IT_LMR_FLAG_NONE, 0, &q->lmr, &q->rkey)))
		return -1;
	a.max_request_dtos = o->tx_depth + 4;
	a.max_recv_dtos = o->rx_depth + 4;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 1;
	a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = o->outs;
	a.srv.rc.atomics_enable = atomic;
	if (check("it_ep_rc_create",
		  it_ep_rc_create(c->pz, c->sq, c->rq, c->cm, IT_EP_NO_FLAG,
				  &a, &q->ep)))
		return -1;
	c->nqp = i + 1;
	/* perftest's peer (-R) may refuse a first data connection, and
	 * it_ep_reset flushes what is posted: its receives wait for the
	 * connection (perf_rcm.c). */
	return c->perftest ? 0 : perf_post_receives(c, i);
}

/* Receives for Send tests stay posted for the whole run: every one can
 * take the largest message. */
int perf_post_receives(struct perf_ctx *c, unsigned int i)
{
	struct perf_qp *q = &c->qp[i];

	if (c->o->verb != PERF_SEND)
		return 0;
	for (unsigned int r = 0; r < c->o->rx_depth; r++) {
		it_lmr_triplet_t t = { .lmr = q->lmr, .length = c->max_size };

		t.addr.abs = q->buf + c->sink_off;
		if (check("it_post_recv",
			  it_post_recv(q->ep, &t, 1, ((uint64_t)i << 56) | r,
				       FLAGS)))
			return -1;
	}
	return 0;
}

static uint64_t run_max_size(const struct perf_opts *o)
{
	uint64_t m = o->all_sizes ? o->all_max : o->size;

	return m < 64 ? 64 : m;
}

static void params_out(const struct perf_opts *o, uint64_t *v)
{
	v[PV_VERB] = o->verb;
	v[PV_LAT] = o->lat;
	v[PV_BIDIR] = o->bidir;
	v[PV_QPS] = o->qps;
	v[PV_TX_DEPTH] = o->tx_depth;
	v[PV_RX_DEPTH] = o->rx_depth;
	v[PV_CQ_MOD] = o->cq_mod;
	v[PV_OUTS] = o->outs;
	v[PV_SIZE] = o->size;
	v[PV_ALL] = o->all_sizes;
	v[PV_ITERS] = o->iters;
	v[PV_DURATION] = o->duration_s;
	v[PV_VERIFY] = o->verify;
	v[PV_MAX_SIZE] = run_max_size(o);
	v[PV_POST_LIST] = o->post_list;
	v[PV_INFINITE] = o->run_infinitely;
	v[PV_WARMUP] = o->warmup;
}

int perf_wait_established(struct perf_ctx *c, it_ep_handle_t ep)
{
	it_event_t ev;

	if (tool_wait_event(PERF_PROG, c->cm, IT_CM_MSG_CONN_ESTABLISHED_EVENT,
			    TOOL_WAIT_US, &ev))
		return -1;
	if (ev.conn.ep != ep) {
		fprintf(stderr, "%s: a connection was established on another EP than expected\n",
			PERF_PROG);
		return -1;
	}
	return 0;
}

int perf_connect_ep(struct perf_ctx *c, it_ep_handle_t ep,
		    const void *pdata, size_t len)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };

	q.conn_qual.port = htons(c->o->port);
	return check("it_ep_connect",
		     it_ep_connect(ep, &c->path, NULL, &q,
				   IT_CONNECT_FLAG_TWO_WAY,
				   (const unsigned char *)pdata, len));
}

/* A reject that carries a hostrdma-perf hello of another wire version
 * (servers since version 3 send theirs). */
static bool peer_version_differs(const it_event_t *ev)
{
	return ev->event_number == IT_CM_MSG_CONN_PEER_REJECT_EVENT &&
	       ev->conn.private_data_present &&
	       perf_hello_version(ev->conn.private_data) >= 0 &&
	       perf_hello_version(ev->conn.private_data) != PERF_VERSION;
}

int perf_connect_control(struct perf_ctx *c, const it_net_addr_t *dst,
			 const void *pdata, size_t len,
			 int (*usable)(struct perf_ctx *c))
{
	struct tool_sel sel;
	it_event_t ev;
	it_status_t st;
	size_t nmore;
	int rc;

	tool_sel_init(&sel, PERF_PROG, c->o->device, dst, c->o->port, false);
	while ((c->ia = tool_sel_next(&sel, &c->path))) {
		if (usable && usable(c))
			return -2;
		if (perf_make_base(c) ||
		    perf_connect_ep(c, c->cep, pdata, len))
			return -1;
		st = it_evd_wait(c->cm, TOOL_WAIT_US, &ev, &nmore);
		if (st == IT_SUCCESS && peer_version_differs(&ev)) {
			char a[INET6_ADDRSTRLEN + 16];

			fprintf(stderr, "%s: the server at %s port %u runs another hostrdma-perf version (its wire version %d, ours %d): run the same version on both ends\n",
				PERF_PROG, tool_addr_str(dst, a, sizeof(a)),
				c->o->port,
				perf_hello_version(ev.conn.private_data),
				PERF_VERSION);
			return -1;
		}
		rc = tool_sel_outcome(&sel, st, &ev);
		if (rc <= 0)
			return rc;
		it_ia_free(c->ia);	/* and all made on it */
		c->ia = NULL;
		free(c->cbuf);
		c->cbuf = NULL;
	}
	return -1;
}

static int connect_ep(struct perf_ctx *c, it_ep_handle_t ep, uint8_t role,
		      unsigned int index)
{
	struct perf_hello h = {
		.magic_be = htonl(PERF_MAGIC), .version = PERF_VERSION,
		.role = role, .index_be = htons((uint16_t)index),
	};

	if (perf_connect_ep(c, ep, &h, sizeof(h)))
		return -1;
	return perf_wait_established(c, ep);
}

int perf_connect(struct perf_ctx *c)
{
	struct perf_opts *o = c->o;
	struct perf_hello hello = {
		.magic_be = htonl(PERF_MAGIC), .version = PERF_VERSION,
	};
	it_net_addr_t dst;
	uint64_t v[24] = { 0 };

	c->server = false;
	if (tool_parse_addr(PERF_PROG, o->server, &dst))
		return -1;
	c->max_size = run_max_size(o);
	perf_layout(c);
	if (perf_connect_control(c, &dst, &hello, sizeof(hello), NULL))
		return -1;
	for (unsigned int i = 0; i < o->qps; i++)
		if (perf_make_qp(c, i))
			return -1;
	params_out(o, v);
	if (perf_ctl_send(c, PERF_CTL_PARAMS, v, PV_WARMUP + 1, true) ||
	    perf_ctl_recv(c, PERF_CTL_PARAMS, TOOL_WAIT_US))
		return -1;
	perf_take_adverts(c);
	if (perf_adverts_ok(c))
		return -1;
	for (unsigned int i = 0; i < o->qps; i++) {
		if (connect_ep(c, c->qp[i].ep, 1, i))
			return -1;
		c->qp[i].connected = true;
	}
	return 0;
}

/* The next connection request of this run: a hello of @role (and data
 * index @index), anything else rejected. */
static int next_request(struct perf_ctx *c, uint8_t role, unsigned int index,
			it_cn_est_identifier_t *id)
{
	it_event_t ev;

	for (;;) {
		uint64_t wait = role ? TOOL_WAIT_US : IT_TIMEOUT_INFINITE;
		it_status_t st;
		size_t nmore;

		/* --loopback: the client may fail before it connects; the
		 * wait for it looks at o->quit every 100 ms. */
		if (!role && c->o->quit)
			wait = 100000;
		st = it_evd_wait(c->req, wait, &ev, &nmore);
		if (st == IT_ERR_TIMEOUT_EXPIRED && !role && c->o->quit) {
			if (__atomic_load_n(c->o->quit, __ATOMIC_ACQUIRE))
				return -1;
			continue;
		}
		if (tool_check_event(PERF_PROG, IT_CM_REQ_CONN_REQUEST_EVENT,
				     st, &ev))
			return -1;
		if (ev.conn_req.private_data_present &&
		    perf_hello_ok(ev.conn_req.private_data, role, index)) {
			*id = ev.conn_req.cn_est_id;
			if (!role)
				c->peer_addr = ev.conn_req.source_addr;
			return 0;
		}
		if (ev.conn_req.private_data_present &&
		    perf_hello_version(ev.conn_req.private_data) >= 0 &&
		    perf_hello_version(ev.conn_req.private_data) !=
			    PERF_VERSION) {
			/* Our hello goes back with the reject: the client
			 * names both versions too. */
			struct perf_hello h = {
				.magic_be = htonl(PERF_MAGIC),
				.version = PERF_VERSION,
			};

			fprintf(stderr, "%s: rejecting a client of another hostrdma-perf version (its wire version %d, ours %d): run the same version on both ends\n",
				PERF_PROG,
				perf_hello_version(ev.conn_req.private_data),
				PERF_VERSION);
			it_reject(ev.conn_req.cn_est_id,
				  (const unsigned char *)&h, sizeof(h));
			continue;
		}
		fprintf(stderr, "%s: rejecting a connection request that is not hostrdma-perf's (role %u index %u expected)\n",
			PERF_PROG, role, index);
		it_reject(ev.conn_req.cn_est_id, NULL, 0);
	}
}

static void listening(void *arg)
{
	struct perf_opts *o = arg;

	if (o->on_listen)
		o->on_listen(o->on_listen_arg, true);
}

int perf_accept(struct perf_ctx *c)
{
	struct perf_opts *o = c->o;
	it_cn_est_identifier_t id;
	uint64_t v[24] = { 0 };

	c->server = true;
	if (tool_listen(PERF_PROG, o->device, o->bind, o->port,
			2 * PERF_MAX_QPS, o->quiet, listening, o, &c->ia,
			&c->req, &c->listen)) {
		if (o->on_listen)
			o->on_listen(o->on_listen_arg, false);
		return -1;
	}
	if (next_request(c, 0, 0, &id))
		return -1;
	c->max_size = 64;
	if (perf_make_base(c) ||
	    check("it_ep_accept", it_ep_accept(c->cep, id, NULL, 0)) ||
	    perf_wait_established(c, c->cep) ||
	    perf_ctl_recv(c, PERF_CTL_PARAMS, TOOL_WAIT_US) || perf_params_in(c))
		return -1;
	perf_layout(c);
	for (unsigned int i = 0; i < o->qps; i++)
		if (perf_make_qp(c, i))
			return -1;
	perf_take_adverts(c);
	if (perf_adverts_ok(c))
		return -1;
	params_out(o, v);
	if (perf_ctl_send(c, PERF_CTL_PARAMS, v, PV_WARMUP + 1, true))
		return -1;
	for (unsigned int i = 0; i < o->qps; i++) {
		if (next_request(c, 1, i, &id) ||
		    check("it_ep_accept", it_ep_accept(c->qp[i].ep, id, NULL,
						       0)) ||
		    perf_wait_established(c, c->qp[i].ep))
			return -1;
		c->qp[i].connected = true;
	}
	return 0;
}

/* Closes in order; it_ia_free frees whatever is left. */
void perf_teardown(struct perf_ctx *c)
{
	if (c->ia)
		it_ia_free(c->ia);
	for (unsigned int i = 0; i < c->nqp; i++)
		if (c->qp[i].buf)
			munmap(c->qp[i].buf, c->qp[i].buf_len);
	free(c->cbuf);
	memset(c, 0, sizeof(*c));
}
