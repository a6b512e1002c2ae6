/* SPDX-License-Identifier: MIT */
/* A test "core" for the soft-iWARP provider; see testutil_siw.h. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil_siw.h"
#include "tests/testutil.h"

/* The provider, linked in from vp/siw (its module entry point is not). */
extern const struct rnicpi_provider siw_provider;


static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_async(struct rnicpi_device *dev,
		     const struct rnicpi_async_event *ev)
{
	struct h_dev *d = dev->core_ctx;

	pthread_mutex_lock(&d->lock);
	if (d->n_async < H_MAX_EVENTS)
		d->async[d->n_async++] = *ev;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

static void on_conn(struct rnicpi_device *dev,
		    const struct rnicpi_conn_event *ev)
{
	struct h_dev *d = dev->core_ctx;

	if (d->conn_hook)
		d->conn_hook(d, ev);
	pthread_mutex_lock(&d->lock);
	if (d->n_conn < H_MAX_EVENTS) {
		struct h_conn_ev *c = &d->conn[d->n_conn++];

		c->ev = *ev;
		if (ev->private_data_len) {
			memcpy(c->pdata, ev->private_data,
			       ev->private_data_len < sizeof(c->pdata)
				       ? ev->private_data_len
				       : sizeof(c->pdata));
			c->ev.private_data = c->pdata;
		}
	}
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

static const struct rnicpi_core_ops h_core = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = on_async,
	.conn_event = on_conn,
};

struct h_dev *h_dev_create(const struct rnicpi_option *opts, int *err)
{
	const struct rnicpi_provider *p = &siw_provider;
	struct sockaddr_storage addr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&addr;
	struct rnicpi_netdev nd = { 0 };
	struct h_dev *d = calloc(1, sizeof(*d));
	int rc;

	ck_assert_ptr_nonnull(d);
	memset(&addr, 0, sizeof(addr));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	nd.ifindex = (int)if_nametoindex("lo");
	strcpy(nd.ifname, "lo");
	nd.mtu = 65536;
	nd.flags = RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING |
		   RNICPI_NETDEV_LOOPBACK;
	nd.addrs = &addr;
	nd.n_addrs = 1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	rc = p->device_create(&nd, "siw_lo", opts, &h_core, &d->dev);
	if (rc) {
		if (err)
			*err = rc;
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->cond);
		free(d);
		return NULL;
	}
	d->dev->provider = p;
	d->dev->core_ctx = d;
	d->ops = d->dev->ops;
	return d;
}

void h_dev_destroy(struct h_dev *d)
{
	d->ops->device_destroy(d->dev);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}

static void deadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

bool h_wait_conn(struct h_dev *d, enum rnicpi_conn_event_type type,
		 const void *obj, struct h_conn_ev *out, int timeout_ms)
{
	struct timespec ts;
	bool found = false;

	deadline(&ts, timeout_ms);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		int i;

		for (i = 0; i < d->n_conn; i++) {
			struct h_conn_ev *c = &d->conn[i];

			if (c->ev.type != type)
				continue;
			if (obj && (const void *)c->ev.qp != obj &&
			    (const void *)c->ev.conn != obj)
				continue;
			if (out) {
				*out = *c;
				if (c->ev.private_data_len)
					out->ev.private_data = out->pdata;
			}
			/* consume it */
			memmove(c, c + 1, (size_t)(d->n_conn - i - 1) *
						  sizeof(*c));
			d->n_conn--;
			for (int k = 0; k < d->n_conn; k++)
				if (d->conn[k].ev.private_data_len)
					d->conn[k].ev.private_data =
						d->conn[k].pdata;
			found = true;
			break;
		}
		if (found)
			break;
		if (pthread_cond_timedwait(&d->cond, &d->lock, &ts) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool h_wait_async(struct h_dev *d, enum rnicpi_event_type type,
		  const struct rnicpi_qp *qp, struct rnicpi_async_event *out,
		  int timeout_ms)
{
	struct timespec ts;
	bool found = false;

	deadline(&ts, timeout_ms);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		int i;

		for (i = 0; i < d->n_async; i++) {
			if (d->async[i].type != type ||
			    (qp && d->async[i].element.qp != qp))
				continue;
			if (out)
				*out = d->async[i];
			memmove(&d->async[i], &d->async[i + 1],
				(size_t)(d->n_async - i - 1) *
					sizeof(d->async[0]));
			d->n_async--;
			found = true;
			break;
		}
		if (found)
			break;
		if (pthread_cond_timedwait(&d->cond, &d->lock, &ts) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

void h_side_init(struct h_side *s, struct h_dev *d, uint32_t srq_wr)
{
	struct rnicpi_cq_init_attr ca = { .cqe = 4096 };
	struct rnicpi_qp_init_attr qa = { 0 };

	memset(s, 0, sizeof(*s));
	s->d = d;
	ck_assert_ok(d->ops->alloc_pd(d->dev, &s->pd));
	ck_assert_ok(d->ops->create_cq(d->dev, &ca, &s->scq));
	ck_assert_ok(d->ops->create_cq(d->dev, &ca, &s->rcq));
	if (srq_wr) {
		struct rnicpi_srq_attr sa = { .max_wr = srq_wr, .max_sge = 4 };

		ck_assert_ok(d->ops->create_srq(s->pd, &sa, &s->srq));
	}
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.srq = s->srq;
	qa.cap.max_send_wr = 256;
	qa.cap.max_recv_wr = srq_wr ? 0 : 256;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	ck_assert_ok(d->ops->create_qp(s->pd, &qa, &s->qp));
}

void h_side_fini(struct h_side *s)
{
	const struct rnicpi_device_ops *ops = s->d->ops;

	if (s->qp)
		ck_assert_ok(ops->destroy_qp(s->qp));
	if (s->srq)
		ck_assert_ok(ops->destroy_srq(s->srq));
	ck_assert_ok(ops->destroy_cq(s->scq));
	ck_assert_ok(ops->destroy_cq(s->rcq));
	ck_assert_ok(ops->dealloc_pd(s->pd));
	memset(s, 0, sizeof(*s));
}

void h_tcp_pair(int *client, int *server)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int l, c, s;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(s, 0);
	close(l);
	*client = c;
	*server = s;
}

int h_connect(struct h_side *a, struct h_side *b, struct h_connect *c)
{
	struct rnicpi_conn *conn;
	int cfd, sfd, rc;

	h_tcp_pair(&cfd, &sfd);
	rc = a->d->ops->iw_connect(a->qp, cfd, &c->ip);
	if (rc) {
		close(cfd);
		close(sfd);
		return rc;
	}
	rc = b->d->ops->iw_take_request(b->d->dev, sfd, NULL, &conn);
	if (rc) {
		close(sfd);
		return rc;
	}
	if (!h_wait_conn(b->d, RNICPI_CONN_REQUEST, conn, &c->req, H_WAIT_MS))
		return -ETIMEDOUT;
	if (c->reject) {
		rc = b->d->ops->conn_reject(conn, c->rp.private_data,
					    c->rp.private_data_len);
		return rc;
	}
	rc = b->d->ops->conn_accept(conn, b->qp, &c->rp);
	if (rc)
		return rc;
	if (!h_wait_conn(a->d, RNICPI_CONN_ESTABLISHED, a->qp, &c->est_a,
			 H_WAIT_MS))
		return -ETIMEDOUT;
	if (!h_wait_conn(b->d, RNICPI_CONN_ESTABLISHED, b->qp, &c->est_b,
			 H_WAIT_MS))
		return -ETIMEDOUT;
	return 0;
}

void h_buf_alloc(struct h_buf *b, size_t len, size_t guard)
{
	memset(b, 0, sizeof(*b));
	b->base = malloc(len + 2 * guard + 1);
	ck_assert_ptr_nonnull(b->base);
	memset(b->base, 0xa5, len + 2 * guard);
	b->p = b->base + guard;
	memset(b->p, 0, len);
	b->len = len;
	b->guard = guard;
}

void h_buf_reg(struct h_buf *b, struct h_side *s, unsigned int access)
{
	ck_assert_ok(s->d->ops->reg_mr(s->pd, b->p, b->len,
				       (uint64_t)(uintptr_t)b->p, access,
				       &b->mr));
}

void h_buf_free(struct h_buf *b)
{
	free(b->base);
	b->base = NULL;
}

bool h_buf_guards_ok(const struct h_buf *b)
{
	size_t i;

	for (i = 0; i < b->guard; i++)
		if (b->base[i] != 0xa5 || b->p[b->len + i] != 0xa5)
			return false;
	return true;
}

static uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = seed ^ (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 13);

	return (uint8_t)(x ^ (x >> 8) ^ (x >> 16));
}

void h_buf_fill(struct h_buf *b, uint32_t seed)
{
	size_t i;

	for (i = 0; i < b->len; i++)
		b->p[i] = pattern(seed, i);
}

bool h_buf_check(const struct h_buf *b, size_t off, size_t len,
		 uint32_t seed, size_t seed_off)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b->p[off + i] != pattern(seed, seed_off + i))
			return false;
	return true;
}

bool h_poll(struct h_side *s, struct rnicpi_cq *cq, struct rnicpi_wc *wc,
	    int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int n = s->d->ops->poll_cq(cq, 1, wc);

		ck_assert_int_ge(n, 0);
		if (n == 1)
			return true;
		if (now_ms() >= end)
			return false;
		usleep(200);
	}
}

void h_post_recv(struct h_side *s, struct h_buf *b, size_t off, size_t len,
		 uint64_t wr_id)
{
	struct rnicpi_sge sge = {
		.addr = (uint64_t)(uintptr_t)(b->p + off),
		.length = (uint32_t)len,
		.lkey = b->mr->lkey,
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};

	if (s->srq)
		ck_assert_ok(s->d->ops->post_srq_recv(s->srq, &wr, NULL));
	else
		ck_assert_ok(s->d->ops->post_recv(s->qp, &wr, NULL));
}

int h_post_send(struct h_side *s, enum rnicpi_wr_opcode op,
		struct h_buf *b, size_t off, size_t len, uint64_t wr_id,
		unsigned int flags, uint64_t raddr, uint32_t rkey)
{
	struct rnicpi_sge sge = { 0 };
	struct rnicpi_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = flags,
	};

	if (b) {
		sge.addr = (uint64_t)(uintptr_t)(b->p + off);
		sge.length = (uint32_t)len;
		sge.lkey = b->mr ? b->mr->lkey : 0;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == RNICPI_WR_SEND_WITH_INV || op == RNICPI_WR_LOCAL_INV)
		wr.ex.invalidate_rkey = rkey;
	return s->d->ops->post_send(s->qp, &wr, NULL);
}

/* ------------------------------------------------------------------ */
/* Pairs of connected sides, and a progress thread held still          */
/* ------------------------------------------------------------------ */

void h_pair_up_opts(struct h_pair *p, const struct rnicpi_option *oa,
		    const struct rnicpi_option *ob, uint32_t srq_b)
{
	memset(p, 0, sizeof(*p));
	p->da = h_dev_create(oa, NULL);
	ck_assert_ptr_nonnull(p->da);
	p->db = h_dev_create(ob, NULL);
	ck_assert_ptr_nonnull(p->db);
	h_side_init(&p->a, p->da, 0);
	h_side_init(&p->b, p->db, srq_b);
}

void h_pair_connect(struct h_pair *p)
{
	ck_assert_ok(h_connect(&p->a, &p->b, &p->c));
}

void h_pair_down(struct h_pair *p)
{
	h_side_fini(&p->a);
	h_side_fini(&p->b);
	h_dev_destroy(p->da);
	h_dev_destroy(p->db);
}

/* A connected pair with @s (at a, filled from @seed) and @d (at b), @len
 * bytes each, registered; h_pair_down_bufs() undoes it. */
void h_pair_up_bufs(struct h_pair *p, const struct rnicpi_option *oa,
		    const struct rnicpi_option *ob, struct h_buf *s,
		    struct h_buf *d, size_t len, uint32_t seed)
{
	h_pair_up_opts(p, oa, ob, 0);
	h_pair_connect(p);
	h_buf_alloc(s, len, H_GUARD);
	h_buf_alloc(d, len, H_GUARD);
	h_buf_fill(s, seed);
	h_buf_reg(s, &p->a, H_RW);
	h_buf_reg(d, &p->b, H_RW);
}

/* Deregister and free @s (registered at a) and @d (at b), then the pair. */
void h_pair_down_bufs(struct h_pair *p, struct h_buf *s, struct h_buf *d)
{
	ck_assert_ok(p->da->ops->dereg_mr(s->mr));
	ck_assert_ok(p->db->ops->dereg_mr(d->mr));
	h_buf_free(s);
	h_buf_free(d);
	h_pair_down(p);
}

void h_expect_wc(struct h_side *s, struct rnicpi_cq *cq, uint64_t wr_id,
		 enum rnicpi_wc_status st, enum rnicpi_wc_opcode op,
		 uint32_t len)
{
	struct rnicpi_wc wc;

	ck_assert_msg(h_poll(s, cq, &wc, H_WAIT_MS),
		      "no completion for WR %llu", (unsigned long long)wr_id);
	ck_assert_msg(wc.wr_id == wr_id && wc.status == st &&
			      wc.opcode == op,
		      "WR %llu status %d opcode %d, expected WR %llu status "
		      "%d opcode %d", (unsigned long long)wc.wr_id, wc.status,
		      wc.opcode, (unsigned long long)wr_id, st, op);
	if (st == RNICPI_WC_SUCCESS)
		ck_assert_uint_eq(wc.byte_len, len);
}

static void park_hook(struct h_dev *d, const struct rnicpi_conn_event *ev)
{
	struct h_park *pk = d->hook_arg;

	if (ev->type != RNICPI_CONN_ERROR || ev->conn != pk->conn)
		return;
	pthread_mutex_lock(&pk->lock);
	pk->parked = true;
	pthread_cond_broadcast(&pk->cond);
	while (!pk->release)
		pthread_cond_wait(&pk->cond, &pk->lock);
	pthread_mutex_unlock(&pk->lock);
}

/*
 * Holds @d's progress thread in an upcall: a connection whose peer never
 * sends its MPA Request times out there (the device needs a short
 * mpa_timeout_ms). Returns the peer's socket, to close after h_unpark().
 */
int h_park_progress(struct h_dev *d, struct h_park *pk)
{
	struct rnicpi_conn *conn;
	int cfd, sfd, i;

	d->hook_arg = pk;
	d->conn_hook = park_hook;
	h_tcp_pair(&cfd, &sfd);
	pthread_mutex_lock(&pk->lock);
	ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL, &conn));
	pk->conn = conn;
	for (i = 0; i < 100 && !pk->parked; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&pk->cond, &pk->lock, &ts);
	}
	ck_assert_msg(pk->parked, "the MPA time-out never reached the core");
	pthread_mutex_unlock(&pk->lock);
	return cfd;
}

void h_unpark(struct h_park *pk)
{
	pthread_mutex_lock(&pk->lock);
	pk->release = true;
	pthread_cond_broadcast(&pk->cond);
	pthread_mutex_unlock(&pk->lock);
}
