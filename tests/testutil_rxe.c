/* SPDX-License-Identifier: MIT */
/* Helpers for the rxe suites; see testutil_rxe.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <glib.h>
#include <stdlib.h>

#include "tests/testutil_rxe.h"
#include "tests/testutil.h"

int rxe_t_netns_enter(void)
{
	struct ifreq ifr;
	int old, s;

	old = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (old < 0)
		return -errno;
	if (unshare(CLONE_NEWNET) < 0) {
		int err = -errno;

		close(old);
		return err;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		if (s >= 0)
			close(s);
		if (setns(old, CLONE_NEWNET) < 0)
			perror("setns");
		close(old);
		return -EIO;
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		perror("lo up");
	close(s);
	return old;
}

void rxe_t_netns_leave(int old)
{
	if (old < 0)
		return;
	if (setns(old, CLONE_NEWNET) < 0)
		perror("setns");
	close(old);
}

static int fixture_ns = -1;

void rxe_t_netns_setup(void)
{
	fixture_ns = rxe_t_netns_enter();
	if (fixture_ns == -EPERM)
		fprintf(stderr, "rxe tests: no CAP_SYS_ADMIN, sharing the "
			"machine's network namespace (UDP port 4791 on lo)\n");
}

void rxe_t_netns_teardown(void)
{
	rxe_t_netns_leave(fixture_ns);
	fixture_ns = -1;
}

struct rnicpi_async_event rxe_t_events[RXE_T_MAX_EVENTS];
unsigned int rxe_t_n_events;
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_t watched_thread;
static bool watching;
static unsigned int on_watched;

static void t_async_event(struct rnicpi_device *dev,
			  const struct rnicpi_async_event *ev)
{
	pthread_mutex_lock(&events_lock);
	if (rxe_t_n_events < RXE_T_MAX_EVENTS)
		rxe_t_events[rxe_t_n_events++] = *ev;
	if (watching && pthread_equal(pthread_self(), watched_thread))
		on_watched++;
	pthread_mutex_unlock(&events_lock);
}

unsigned int rxe_t_events_on_this_thread(void)
{
	unsigned int n;

	pthread_mutex_lock(&events_lock);
	n = watching ? on_watched : 0;
	watched_thread = pthread_self();
	watching = true;
	on_watched = 0;
	pthread_mutex_unlock(&events_lock);
	return n;
}

const struct rnicpi_core_ops rxe_t_core_ops = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = t_async_event,
};

void rxe_t_events_reset(void)
{
	pthread_mutex_lock(&events_lock);
	rxe_t_n_events = 0;
	pthread_mutex_unlock(&events_lock);
}

bool rxe_t_has_event(enum rnicpi_event_type type, struct rnicpi_qp *qp)
{
	bool found = false;
	unsigned int i, tries;

	/* Events come from the progress thread after it let go of the QP,
	 * possibly just after the packet or completion the test saw. */
	for (tries = 0; !found && tries < 100000; tries++) {
		pthread_mutex_lock(&events_lock);
		for (i = 0; i < rxe_t_n_events; i++)
			if (rxe_t_events[i].type == type &&
			    (!qp || rxe_t_events[i].element.qp == qp))
				found = true;
		pthread_mutex_unlock(&events_lock);
		if (!found)
			usleep(100);
	}
	return found;
}

void rxe_t_lo_netdev(struct rnicpi_netdev *nd, struct sockaddr_storage addrs[2])
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&addrs[0];
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&addrs[1];

	memset(nd, 0, sizeof(*nd));
	memset(addrs, 0, 2 * sizeof(addrs[0]));
	nd->ifindex = (int)if_nametoindex("lo");
	strcpy(nd->ifname, "lo");
	nd->mtu = 65536;
	nd->flags = RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING |
		    RNICPI_NETDEV_LOOPBACK;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr);
	sin6->sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::1", &sin6->sin6_addr);
	nd->addrs = addrs;
	nd->n_addrs = 2;
}

static const struct rnicpi_option direct_all[] = {
	{ "direct", "2" }, { NULL, NULL },
};
static const struct rnicpi_option direct_off[] = {
	{ "direct", "0" }, { NULL, NULL },
};

bool rxe_t_direct, rxe_t_copy;

void rxe_t_direct_setup(void)
{
	rxe_t_netns_setup();
	rxe_t_direct = true;
}

void rxe_t_direct_teardown(void)
{
	rxe_t_direct = false;
	rxe_t_netns_teardown();
}

void rxe_t_copy_setup(void)
{
	rxe_t_netns_setup();
	rxe_t_copy = true;
}

void rxe_t_copy_teardown(void)
{
	rxe_t_copy = false;
	rxe_t_netns_teardown();
}

static bool names_option(const struct rnicpi_option *options,
			 const char *key)
{
	for (; options && options->key; options++)
		if (strcmp(options->key, key) == 0)
			return true;
	return false;
}

int rxe_t_dev_open(struct rxe_t_dev *t, const struct rnicpi_option *options)
{
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	int err;

	memset(t, 0, sizeof(*t));
	if (!options && rxe_t_direct)
		options = direct_all;
	else if (!options && rxe_t_copy)
		options = direct_off;
	rxe_t_lo_netdev(&nd, addrs);
	err = rxe_provider.device_create(&nd, "rxe_lo", options,
					 &rxe_t_core_ops, &t->dev);
	if (err)
		return err;
	t->ops = t->dev->ops;
	t->dev->provider = &rxe_provider;
	/* Every rxe suite again with the option poll_rx off (on by
	 * default), HOSTRDMA_TEST_RXE_POLL_RX=0, or on (=1); a test that
	 * names poll_rx itself (rc:test_poll_rx, the gid cases) keeps
	 * its own. */
	if (!names_option(options, "poll_rx")) {
		const char *v = g_getenv("HOSTRDMA_TEST_RXE_POLL_RX");

		if (g_strcmp0(v, "0") == 0 || g_strcmp0(v, "1") == 0)
			to_rxe_dev(t->dev)->poll_rx = (uint32_t)(v[0] - '0');
	}
	/* As it_ia_create does: the first open binds UDP port 4791. */
	err = t->ops->device_open(t->dev);
	if (err) {
		t->ops->device_destroy(t->dev);
		t->dev = NULL;
		return err;
	}
	err = t->ops->alloc_pd(t->dev, &t->pd);
	if (err) {
		t->ops->device_destroy(t->dev);
		return err;
	}
	rxe_t_events_reset();
	return 0;
}

void rxe_t_dev_close(struct rxe_t_dev *t)
{
	if (!t->dev)
		return;
	if (t->pd)
		t->ops->dealloc_pd(t->pd);
	t->ops->device_destroy(t->dev);
	t->dev = NULL;
}

int rxe_t_side_create(struct rxe_t_dev *t, struct rxe_t_side *s,
		      enum rnicpi_qp_type type, const struct rxe_t_conn_opts *o)
{
	struct rnicpi_cq_init_attr ca = { .cqe = 4096 };
	struct rnicpi_qp_init_attr qa;
	int err;

	memset(s, 0, sizeof(*s));
	err = t->ops->create_cq(t->dev, &ca, &s->scq);
	if (err)
		return err;
	err = t->ops->create_cq(t->dev, &ca, &s->rcq);
	if (err)
		return err;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = type;
	qa.send_cq = s->scq;
	qa.recv_cq = s->rcq;
	qa.cap.max_send_wr = o && o->max_send_wr ? o->max_send_wr : 256;
	qa.cap.max_recv_wr = o && o->max_recv_wr ? o->max_recv_wr : 256;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	qa.port_num = 1;
	return t->ops->create_qp(t->pd, &qa, &s->qp);
}

void rxe_t_side_destroy(struct rxe_t_dev *t, struct rxe_t_side *s)
{
	if (s->qp)
		t->ops->destroy_qp(s->qp);
	if (s->scq)
		t->ops->destroy_cq(s->scq);
	if (s->rcq)
		t->ops->destroy_cq(s->rcq);
	memset(s, 0, sizeof(*s));
}

void rxe_t_gid_v4(union rnicpi_gid *gid, const char *ipv4)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	inet_pton(AF_INET, ipv4, gid->raw + 12);
}

void rxe_t_gid_v6(union rnicpi_gid *gid, const char *ipv6)
{
	memset(gid, 0, sizeof(*gid));
	inet_pton(AF_INET6, ipv6, gid->raw);
}

int rxe_t_connect_one(struct rxe_t_dev *t, struct rxe_t_side *s,
		      const union rnicpi_gid *dgid, uint32_t dqpn,
		      uint32_t sq_psn, uint32_t rq_psn,
		      const struct rxe_t_conn_opts *o)
{
	struct rnicpi_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = RNICPI_ACCESS_LOCAL_WRITE |
			    RNICPI_ACCESS_REMOTE_WRITE |
			    RNICPI_ACCESS_REMOTE_READ |
			    RNICPI_ACCESS_REMOTE_ATOMIC;
	err = t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE |
				RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				RNICPI_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = o && o->mtu ? o->mtu : RNICPI_MTU_4096;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = o && o->min_rnr_timer ? o->min_rnr_timer : 1;
	a.ah_attr.dgid = *dgid;
	a.ah_attr.sgid_index = o ? o->sgid_index : 0;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.hop_limit = 64;
	err = t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE | RNICPI_QP_AV |
				RNICPI_QP_PATH_MTU | RNICPI_QP_DEST_QPN |
				RNICPI_QP_RQ_PSN |
				RNICPI_QP_MAX_DEST_RD_ATOMIC |
				RNICPI_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = o && o->timeout ? o->timeout : 14;
	a.retry_cnt = o && o->retry_cnt ? o->retry_cnt : 7;
	a.rnr_retry = !o || !o->rnr_retry ? 7
		      : o->rnr_retry == 8 ? 0 : o->rnr_retry;
	a.max_rd_atomic = 16;
	return t->ops->modify_qp(s->qp, &a, RNICPI_QP_STATE |
				 RNICPI_QP_SQ_PSN | RNICPI_QP_TIMEOUT |
				 RNICPI_QP_RETRY_CNT | RNICPI_QP_RNR_RETRY |
				 RNICPI_QP_MAX_QP_RD_ATOMIC);
}

int rxe_t_connect(struct rxe_t_dev *t, struct rxe_t_side *a,
		  struct rxe_t_side *b, const struct rxe_t_conn_opts *o)
{
	union rnicpi_gid gid;
	uint32_t psn_a = o ? o->psn[0] : 0, psn_b = o ? o->psn[1] : 0;
	int err;

	if (o && o->sgid_index == 1)
		rxe_t_gid_v6(&gid, "::1");
	else
		rxe_t_gid_v4(&gid, "127.0.0.1");
	err = rxe_t_connect_one(t, a, &gid, b->qp->qp_num, psn_a, psn_b, o);
	if (err)
		return err;
	return rxe_t_connect_one(t, b, &gid, a->qp->qp_num, psn_b, psn_a, o);
}

int rxe_t_wait_wc(struct rxe_t_dev *t, struct rnicpi_cq *cq,
		  struct rnicpi_wc *wc)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int n = t->ops->poll_cq(cq, 1, wc);

		if (n != 0)
			return n < 0 ? n : 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 60)
			return -ETIMEDOUT;
		usleep(50);
	}
}

/* ------------------------------------------------------------------ */
/* Guarded buffers, connected pairs, posting and waiting              */
/* ------------------------------------------------------------------ */

void rxe_t_buf_alloc(struct rxe_t_dev *t, struct rxe_t_buf *b, size_t size,
		       uint8_t fill, unsigned int access)
{
	b->size = size;
	b->mem = g_malloc(size + 2 * RXE_T_GUARD);
	memset(b->mem, RXE_T_GUARD_BYTE, size + 2 * RXE_T_GUARD);
	memset(b->mem + RXE_T_GUARD, fill, size);
	ck_assert_ok(t->ops->reg_mr(t->pd, b->mem, size + 2 * RXE_T_GUARD,
				    (uint64_t)(uintptr_t)b->mem, access,
				    &b->mr));
}

void rxe_t_buf_pattern(struct rxe_t_buf *b, uint32_t seed)
{
	size_t i;

	for (i = 0; i < b->size; i++)
		b->mem[RXE_T_GUARD + i] = (uint8_t)(i * 7 + seed + (i >> 8));
}

uint64_t rxe_t_buf_va(const struct rxe_t_buf *b)
{
	return (uint64_t)(uintptr_t)(b->mem + RXE_T_GUARD);
}

void rxe_t_buf_free(struct rxe_t_dev *t, struct rxe_t_buf *b)
{
	if (b->mr)
		ck_assert_ok(t->ops->dereg_mr(b->mr));
	g_free(b->mem);
	memset(b, 0, sizeof(*b));
}

void rxe_t_assert_guards(const struct rxe_t_buf *b)
{
	size_t i;

	for (i = 0; i < RXE_T_GUARD; i++) {
		ck_assert_uint_eq(b->mem[i], RXE_T_GUARD_BYTE);
		ck_assert_uint_eq(b->mem[RXE_T_GUARD + b->size + i],
				  RXE_T_GUARD_BYTE);
	}
}

/* ------------------------------------------------------------------ */


void rxe_t_pair_open_opts(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o,
			   const struct rnicpi_option *options)
{
	ck_assert_ok(rxe_t_dev_open(&p->t, options));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->a, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->b, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_connect(&p->t, &p->a, &p->b, o));
}

void rxe_t_pair_open(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o)
{
	rxe_t_pair_open_opts(p, o, NULL);
}

/* New QPs on the same device (the old ones are in ERR). */
void rxe_t_pair_renew(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o)
{
	rxe_t_side_destroy(&p->t, &p->a);
	rxe_t_side_destroy(&p->t, &p->b);
	ck_assert_ok(rxe_t_side_create(&p->t, &p->a, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_side_create(&p->t, &p->b, RNICPI_QPT_RC, o));
	ck_assert_ok(rxe_t_connect(&p->t, &p->a, &p->b, o));
}

void rxe_t_pair_close(struct rxe_t_pair *p)
{
	rxe_t_side_destroy(&p->t, &p->a);
	rxe_t_side_destroy(&p->t, &p->b);
	rxe_t_dev_close(&p->t);
}

void rxe_t_park_for_poller(struct rxe_t_pair *p)
{
	/* Dropped as malformed once read. */
	struct sockaddr_in four = { .sin_family = AF_INET,
		.sin_port = htons(ROCE_V2_UDP_PORT),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rxe_dev *dev = to_rxe_dev(p->t.dev);
	struct rnicpi_wc wc;
	int s, i, j;

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	/* Again if the progress thread read it after the lease of the
	 * poll before it (a slow machine, valgrind). */
	for (i = 0; i < 100 && !atomic_load(&dev->rx_parked); i++) {
		ck_assert_int_eq(p->t.ops->poll_cq(p->a.rcq, 1, &wc), 0);
		ck_assert_int_eq(sendto(s, "park", 4, 0,
					(struct sockaddr *)&four,
					sizeof(four)),
				 4);
		/* Yields: the progress thread must run, also under
		 * valgrind. */
		for (j = 0; j < 10000 && !atomic_load(&dev->rx_parked); j++) {
			ck_assert_int_eq(p->t.ops->poll_cq(p->a.rcq, 1, &wc),
					 0);
			sched_yield();
		}
	}
	close(s);
	ck_assert_msg(atomic_load(&dev->rx_parked),
		      "the receive sockets were never left to the poller "
		      "(parking given up: %d, late leases %" PRIu64 ", parks %"
		      PRIu64 ")", (int)dev->rx_park_off,
		      rxe_dev_counter(p->t.dev, RXE_CNT_POLL_RX_LATE),
		      rxe_dev_counter(p->t.dev, RXE_CNT_POLL_RX_PARKS));
}

void rxe_t_post_recv(struct rxe_t_pair *p, struct rxe_t_side *s,
			  struct rxe_t_buf *b, uint64_t wr_id)
{
	struct rnicpi_sge sge = {
		.addr = rxe_t_buf_va(b), .length = (uint32_t)b->size,
		.lkey = b->mr->lkey,
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};
	const struct rnicpi_recv_wr *bad;

	ck_assert_ok(p->t.ops->post_recv(s->qp, &wr, &bad));
}

void rxe_t_post(struct rxe_t_dev *t, struct rxe_t_side *s,
		     struct rnicpi_send_wr *wr, struct rxe_t_buf *src)
{
	struct rnicpi_sge sge;
	const struct rnicpi_send_wr *bad;

	if (src) {
		sge.addr = rxe_t_buf_va(src);
		sge.length = (uint32_t)src->size;
		sge.lkey = src->mr->lkey;
		wr->sg_list = &sge;
		wr->num_sge = 1;
	}
	wr->send_flags |= RNICPI_SEND_SIGNALED;
	ck_assert_ok(t->ops->post_send(s->qp, wr, &bad));
}

void rxe_t_expect_wc(struct rxe_t_dev *t, struct rnicpi_cq *cq, uint64_t wr_id,
		      enum rnicpi_wc_status status, struct rnicpi_wc *out)
{
	struct rnicpi_wc wc;

	ck_assert_ok(rxe_t_wait_wc(t, cq, &wc));
	ck_assert_msg(wc.wr_id == wr_id && wc.status == status,
		      "completion wr_id %" PRIu64 " status %d, expected %"
		      PRIu64 " status %d", wc.wr_id, wc.status, wr_id, status);
	if (out)
		*out = wc;
}

void rxe_t_post_bind(struct rxe_t_pair *p, struct rxe_t_side *s, uint64_t wr_id,
		      struct rnicpi_mw *mw, uint32_t rkey, struct rxe_t_buf *b,
		      uint64_t off, uint64_t len, unsigned int access)
{
	struct rnicpi_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = RNICPI_WR_BIND_MW;
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.rkey = rkey;
	wr.wr.bind_mw.bind_info.mr = b->mr;
	wr.wr.bind_mw.bind_info.addr = rxe_t_buf_va(b) + off;
	wr.wr.bind_mw.bind_info.length = len;
	wr.wr.bind_mw.bind_info.access = access;
	rxe_t_post(&p->t, s, &wr, NULL);
}

void rxe_t_post_rdma(struct rxe_t_pair *p, struct rxe_t_side *s, uint64_t wr_id,
		      enum rnicpi_wr_opcode op, struct rxe_t_buf *local,
		      uint64_t remote, uint32_t rkey)
{
	struct rnicpi_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = remote;
	wr.wr.rdma.rkey = rkey;
	rxe_t_post(&p->t, s, &wr, local);
}

/* IBA 10.6.7: windows onto a region that itself grants no remote right. */
