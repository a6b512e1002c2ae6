/* SPDX-License-Identifier: MIT */
/*
 * siw-lifetime: objects the progress thread works on while the core lets
 * go of them. A responder conn answered from inside its REQUEST upcall,
 * before its MPA Request arrived, or while its peer goes away; run under
 * valgrind and ASan (--enable-sanitizers) these show any use after free.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testutil_siw.h"
#include "tests/testutil_siw_rawpeer.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

/* How long a test waits to be sure an event does not come. */
#define QUIET_MS 300

/* A short MPA time-out: a deadline left behind by a freed conn fires
 * within the test. */
static const struct rnicpi_option short_timeout[] = {
	{ "mpa_timeout_ms", "100" },
	{ NULL, NULL },
};

/* What a hook did, for the test to check. */
struct hook_state {
	pthread_mutex_t lock;
	enum rnicpi_conn_event_type on;	/* answer this event type */
	const void *conn;		/* about this conn (NULL: any) */
	int calls;
	int rc;
	bool failed;			/* ERROR seen (the core's state) */
};

static void hook_init(struct hook_state *h, enum rnicpi_conn_event_type on)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	h->on = on;
	h->rc = 1;
}

/* The core refuses the connection from inside the upcall. */
static void reject_hook(struct h_dev *d, const struct rnicpi_conn_event *ev)
{
	struct hook_state *h = d->hook_arg;
	static const char why[] = "go away";

	if (ev->type != h->on || !ev->conn ||
	    (h->conn && h->conn != ev->conn))
		return;
	pthread_mutex_lock(&h->lock);
	h->rc = d->ops->conn_reject(ev->conn, why, sizeof(why));
	h->calls++;
	pthread_mutex_unlock(&h->lock);
}

/* Bounded: the other end of the stream closed (EOF or reset). */
static bool stream_closed(int fd, int timeout_ms)
{
	uint8_t buf[256];

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) != 1)
			return false;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			return n == 0 || errno != EAGAIN;
	}
}

static void send_request(int fd)
{
	struct mpa_rr req;
	struct mpa_v2_data v2;

	mpa_rr_init(&req, true, MPA_REV2, MPA_FLAG_ENHANCED, sizeof(v2));
	mpa_v2_set(&v2, 4, 4, false, 0);
	/* The provider may have closed its end: EPIPE is fine. */
	(void)!send(fd, &req, sizeof(req), MSG_NOSIGNAL);
	(void)!send(fd, &v2, sizeof(v2), MSG_NOSIGNAL);
}

/* Reject from inside the REQUEST upcall: the initiator is refused with
 * our private data, the conn is freed once (valgrind/ASan), nothing more
 * is reported about it. */
START_TEST(test_reject_in_request_upcall)
{
	struct h_dev *da, *db;
	struct h_side a;
	struct hook_state hs;
	struct rnicpi_conn_param cp = { 0 };
	struct rnicpi_conn *conn;
	struct h_conn_ev ev;
	int cfd, sfd;

	da = h_dev_create(NULL, NULL);
	db = h_dev_create(short_timeout, NULL);
	ck_assert_ptr_nonnull(da);
	ck_assert_ptr_nonnull(db);
	h_side_init(&a, da, 0);
	hook_init(&hs, RNICPI_CONN_REQUEST);
	db->hook_arg = &hs;
	db->conn_hook = reject_hook;
	h_tcp_pair(&cfd, &sfd);
	ck_assert_ok(da->ops->iw_connect(a.qp, cfd, &cp));
	ck_assert_ok(db->ops->iw_take_request(db->dev, sfd, NULL, &conn));
	ck_assert(h_wait_conn(da, RNICPI_CONN_REJECTED, a.qp, &ev, H_WAIT_MS));
	ck_assert_uint_eq(ev.ev.private_data_len, 8);
	ck_assert_mem_eq(ev.pdata, "go away", 8);
	ck_assert(h_wait_conn(db, RNICPI_CONN_REQUEST, conn, NULL, H_WAIT_MS));
	pthread_mutex_lock(&hs.lock);
	ck_assert_int_eq(hs.calls, 1);
	ck_assert_int_eq(hs.rc, 0);
	pthread_mutex_unlock(&hs.lock);
	/* Past the MPA time-out: no ERROR for a conn the core answered. */
	ck_assert(!h_wait_conn(db, RNICPI_CONN_ERROR, conn, NULL, QUIET_MS));
	h_side_fini(&a);
	h_dev_destroy(da);
	h_dev_destroy(db);
	pthread_mutex_destroy(&hs.lock);
}
END_TEST

/* Reject right after iw_take_request, before the peer's Request came:
 * the stream is closed, the Request that follows reaches nothing, no
 * event names the conn, and no deadline of it fires later. */
START_TEST(test_reject_before_request)
{
	struct h_dev *d;
	struct rnicpi_conn *conn;
	int round;

	d = h_dev_create(short_timeout, NULL);
	ck_assert_ptr_nonnull(d);
	for (round = 0; round < 2; round++) {
		int cfd, sfd;

		h_tcp_pair(&cfd, &sfd);
		ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL,
						     &conn));
		/* Round 1: the Request is on its way as the core refuses. */
		if (round)
			send_request(cfd);
		ck_assert_ok(d->ops->conn_reject(conn, NULL, 0));
		if (!round)
			send_request(cfd);
		ck_assert(stream_closed(cfd, H_WAIT_MS));
		close(cfd);
		/* Round 1: a REQUEST already on its way to the core may
		 * still arrive (the core answered from another thread);
		 * an ERROR never does. */
		if (!round)
			ck_assert(!h_wait_conn(d, RNICPI_CONN_REQUEST, conn,
					       NULL, QUIET_MS));
		ck_assert(!h_wait_conn(d, RNICPI_CONN_ERROR, conn, NULL,
				       QUIET_MS));
		h_wait_conn(d, RNICPI_CONN_REQUEST, conn, NULL, 0);
	}
	/* Accept before the Request: refused, and the conn is consumed. */
	{
		struct h_side s;
		struct rnicpi_conn_param cp = { 0 };
		struct rnicpi_qp_attr qa;
		int cfd, sfd;

		h_side_init(&s, d, 0);
		h_tcp_pair(&cfd, &sfd);
		ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL,
						     &conn));
		ck_assert_errno(d->ops->conn_accept(conn, s.qp, &cp), EINVAL);
		ck_assert(stream_closed(cfd, H_WAIT_MS));
		close(cfd);
		ck_assert_ok(d->ops->query_qp(s.qp, &qa, RNICPI_QP_STATE,
					      NULL));
		ck_assert_int_eq(qa.qp_state, RNICPI_QPS_IDLE);
		ck_assert(!h_wait_conn(d, RNICPI_CONN_ERROR, conn, NULL,
				       QUIET_MS));
		h_side_fini(&s);
	}
	h_dev_destroy(d);
}
END_TEST

/* The peer sends its Request and goes away at once; the core rejects
 * after REQUEST: the Reject meets a closed stream (no SIGPIPE), the call
 * succeeds, nothing more is reported. */
START_TEST(test_peer_closes_then_reject)
{
	struct h_dev *d;
	struct rnicpi_conn *conn;
	int cfd, sfd;

	d = h_dev_create(short_timeout, NULL);
	ck_assert_ptr_nonnull(d);
	h_tcp_pair(&cfd, &sfd);
	ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL, &conn));
	send_request(cfd);
	ck_assert(h_wait_conn(d, RNICPI_CONN_REQUEST, conn, NULL, H_WAIT_MS));
	{
		/* RST rather than FIN: the Reject then fails outright. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		ck_assert_int_eq(setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg,
					    sizeof(lg)), 0);
	}
	close(cfd);
	ck_assert_ok(d->ops->conn_reject(conn, "x", 1));
	ck_assert(!h_wait_conn(d, RNICPI_CONN_ERROR, conn, NULL, QUIET_MS));
	h_dev_destroy(d);
}
END_TEST

/* The peer closes before its Request while the core decides to refuse:
 * the core's reject arrives during the provider's ERROR upcall (the
 * deterministic form of that race). One answer, one free. */
START_TEST(test_reject_during_error_upcall)
{
	struct h_dev *d;
	struct hook_state hs;
	struct rnicpi_conn *conn;
	struct h_conn_ev ev;
	int cfd, sfd;

	d = h_dev_create(short_timeout, NULL);
	ck_assert_ptr_nonnull(d);
	hook_init(&hs, RNICPI_CONN_ERROR);
	d->hook_arg = &hs;
	d->conn_hook = reject_hook;
	h_tcp_pair(&cfd, &sfd);
	ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL, &conn));
	close(cfd);
	ck_assert(h_wait_conn(d, RNICPI_CONN_ERROR, conn, &ev, H_WAIT_MS));
	ck_assert_int_eq(ev.ev.status, -ECONNRESET);
	pthread_mutex_lock(&hs.lock);
	ck_assert_int_eq(hs.calls, 1);
	ck_assert_int_eq(hs.rc, 0);
	pthread_mutex_unlock(&hs.lock);
	ck_assert(!h_wait_conn(d, RNICPI_CONN_ERROR, conn, NULL, QUIET_MS));
	h_dev_destroy(d);
	pthread_mutex_destroy(&hs.lock);
}
END_TEST

/* The same race for real, many times: the peer closes while another
 * thread rejects. Like a core, the test serialises its reject with the
 * ERROR upcall (hs.lock): it rejects only a conn not reported failed. */
struct race {
	int fd;
	pthread_barrier_t go;
};

static void *close_peer(void *arg)
{
	struct race *r = arg;

	pthread_barrier_wait(&r->go);
	close(r->fd);
	return NULL;
}

static void failed_hook(struct h_dev *d, const struct rnicpi_conn_event *ev)
{
	struct hook_state *h = d->hook_arg;

	if (ev->type != RNICPI_CONN_ERROR)
		return;
	pthread_mutex_lock(&h->lock);
	if (ev->conn == h->conn)
		h->failed = true;
	pthread_mutex_unlock(&h->lock);
}

START_TEST(test_reject_races_peer_close)
{
	struct h_dev *d;
	struct hook_state hs;
	int round, rejected = 0, failed = 0;

	d = h_dev_create(short_timeout, NULL);
	ck_assert_ptr_nonnull(d);
	hook_init(&hs, RNICPI_CONN_ERROR);
	d->hook_arg = &hs;
	d->conn_hook = failed_hook;
	for (round = 0; round < 40; round++) {
		struct rnicpi_conn *conn;
		struct race r;
		pthread_t t;
		int sfd;

		h_tcp_pair(&r.fd, &sfd);
		pthread_barrier_init(&r.go, NULL, 2);
		pthread_mutex_lock(&hs.lock);
		hs.failed = false;
		pthread_mutex_unlock(&hs.lock);
		ck_assert_ok(d->ops->iw_take_request(d->dev, sfd, NULL,
						     &conn));
		pthread_mutex_lock(&hs.lock);
		hs.conn = conn;
		pthread_mutex_unlock(&hs.lock);
		ck_assert_int_eq(pthread_create(&t, NULL, close_peer, &r), 0);
		pthread_barrier_wait(&r.go);
		if (round & 1)
			usleep(50);
		pthread_mutex_lock(&hs.lock);
		if (!hs.failed) {
			ck_assert_ok(d->ops->conn_reject(conn, NULL, 0));
			rejected++;
		} else {
			failed++;
		}
		pthread_mutex_unlock(&hs.lock);
		pthread_join(t, NULL);
		pthread_barrier_destroy(&r.go);
	}
	ck_assert_int_eq(rejected + failed, 40);
	h_dev_destroy(d);
	pthread_mutex_destroy(&hs.lock);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Memory the progress thread places into                              */
/* ------------------------------------------------------------------ */

#define WLEN 32768
#define RW (RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE | \
	    RNICPI_ACCESS_REMOTE_READ)

static uint8_t first_half[WLEN / 2], second_half[WLEN / 2];

/* Bounded: the byte at @p became @v (the provider placed it). */
static bool placed(const volatile uint8_t *p, uint8_t v)
{
	int i;

	for (i = 0; i < H_WAIT_MS; i++) {
		if (*p == v)
			return true;
		usleep(1000);
	}
	return false;
}

/* A raw peer starts one RDMA Write FPDU of WLEN bytes into @b and sends
 * its first half; returns once the provider placed that half. @h gets the
 * header (for the Terminate's copy). */
static void write_first_half(struct rawpeer *r, struct h_side *s,
			     struct h_buf *b, struct iwarp_tagged_hdr *h)
{
	struct mpa_v2_data v2;

	mpa_v2_set(&v2, 4, 4, false, 0);
	ck_assert_ok(raw_connect(r, s, MPA_REV2, MPA_FLAG_ENHANCED, &v2,
				 true));
	ck_assert(!r->crc);
	ck_assert(h_wait_conn(s->d, RNICPI_CONN_ESTABLISHED, s->qp, NULL,
			      H_WAIT_MS));
	memset(first_half, 0x11, sizeof(first_half));
	memset(second_half, 0x22, sizeof(second_half));
	memset(h, 0, sizeof(*h));
	iwarp_ctrl_init(&h->ctrl, RDMAP_RDMA_WRITE, true);
	h->stag_be = htobe32(b->mr->rkey);
	h->to_be = htobe64((uint64_t)(uintptr_t)b->p);
	iwarp_set_mpa_len(&h->ctrl, (uint16_t)(sizeof(*h) - 2 + WLEN));
	raw_send_bytes(r, h, sizeof(*h));
	raw_send_bytes(r, first_half, sizeof(first_half));
	ck_assert(placed(b->p + WLEN / 2 - 1, 0x11));
}

/* The Terminate for an invalid STag, DDP layer, with the Write's header
 * copied back (RFC 5040 §4.8, RFC 5041 §7.2). */
static void expect_invalid_stag(struct rawpeer *r,
				const struct iwarp_tagged_hdr *h)
{
	uint8_t buf[256];
	const struct iwarp_ctrl *c = (const void *)buf;
	const struct rdmap_term *t = (const void *)(buf + 20);
	int n = raw_recv_fpdu(r, buf, sizeof(buf), H_WAIT_MS);

	ck_assert_int_eq(n, 18 + 4 + 2 + 14);
	ck_assert_uint_eq(rdmap_opcode(c), RDMAP_TERMINATE);
	ck_assert_uint_eq(rdmap_term_layer(t), TERM_LAYER_DDP);
	ck_assert_uint_eq(rdmap_term_etype(t), DDP_ETYPE_TAGGED);
	ck_assert_uint_eq(rdmap_term_ecode(t), DDP_ECODE_T_INVALID_STAG);
	ck_assert_uint_eq(rdmap_term_flags(t), TERM_FLAG_M | TERM_FLAG_D);
	/* The DDP segment length, then the DDP header as sent. */
	ck_assert_mem_eq(buf + 24, h, 16);
	ck_assert(raw_wait_close(r, H_WAIT_MS));
}

/* dereg_mr while the progress thread is in the middle of placing a Write:
 * once it returned, not one byte more lands (kept: the bytes are checked;
 * freed: valgrind/ASan see any write); the rest of the Write meets the
 * invalid-STag Terminate. */
static void dereg_mid_write(bool free_it)
{
	struct h_dev *d;
	struct h_side s;
	struct h_buf b;
	struct rawpeer r;
	struct iwarp_tagged_hdr h;
	struct rnicpi_async_event ae;
	size_t i;

	d = h_dev_create(NULL, NULL);
	ck_assert_ptr_nonnull(d);
	h_side_init(&s, d, 0);
	h_buf_alloc(&b, WLEN, 64);
	h_buf_reg(&b, &s, RW);
	write_first_half(&r, &s, &b, &h);
	ck_assert_ok(d->ops->dereg_mr(b.mr));
	if (free_it)
		h_buf_free(&b);
	raw_send_bytes(&r, second_half, sizeof(second_half));
	expect_invalid_stag(&r, &h);
	ck_assert(h_wait_async(d, RNICPI_EVENT_QP_ACCESS_ERR, s.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_ecode, DDP_ECODE_T_INVALID_STAG);
	if (!free_it) {
		for (i = 0; i < WLEN / 2; i++)
			ck_assert_uint_eq(b.p[i], 0x11);
		for (; i < WLEN; i++)
			ck_assert_msg(!b.p[i], "byte %zu written after "
				      "dereg_mr returned", i);
		ck_assert(h_buf_guards_ok(&b));
		h_buf_free(&b);
	}
	raw_close(&r);
	h_side_fini(&s);
	h_dev_destroy(d);
}

START_TEST(test_dereg_mid_write)
{
	dereg_mid_write(false);
	dereg_mid_write(true);
}
END_TEST

/* destroy_qp in the middle of a Write: nothing lands after it returned,
 * and the region (deregistered and freed next) is never touched again. */
START_TEST(test_destroy_qp_mid_write)
{
	struct h_dev *d;
	struct h_side s;
	struct h_buf b;
	struct rawpeer r;
	struct iwarp_tagged_hdr h;
	size_t i;

	d = h_dev_create(NULL, NULL);
	ck_assert_ptr_nonnull(d);
	h_side_init(&s, d, 0);
	h_buf_alloc(&b, WLEN, 64);
	h_buf_reg(&b, &s, RW);
	write_first_half(&r, &s, &b, &h);
	ck_assert_ok(d->ops->destroy_qp(s.qp));
	s.qp = NULL;
	/* The socket went with the QP: the peer's writes may fail. */
	(void)!send(r.fd, second_half, sizeof(second_half), MSG_NOSIGNAL);
	ck_assert(raw_wait_close(&r, H_WAIT_MS));
	for (i = 0; i < WLEN / 2; i++)
		ck_assert_uint_eq(b.p[i], 0x11);
	for (; i < WLEN; i++)
		ck_assert_msg(!b.p[i], "byte %zu written after destroy_qp", i);
	ck_assert_ok(d->ops->dereg_mr(b.mr));
	h_buf_free(&b);
	raw_close(&r);
	h_side_fini(&s);
	h_dev_destroy(d);
}
END_TEST

/* The real race: a siw peer's 8 MiB RDMA Write while the target deregs
 * and frees the region as soon as the first bytes landed. The Write
 * succeeds (all placed first) or fails with a remote access error; under
 * ASan/valgrind nothing touches the freed bytes. */
START_TEST(test_dereg_races_inbound_write)
{
	const size_t len = 8u << 20;
	struct h_dev *da, *db;
	struct h_side a, b;
	struct h_connect c;
	struct h_buf src, dst;
	struct rnicpi_wc wc;
	int round;

	for (round = 0; round < 3; round++) {
		memset(&c, 0, sizeof(c));
		da = h_dev_create(NULL, NULL);
		db = h_dev_create(NULL, NULL);
		ck_assert_ptr_nonnull(da);
		ck_assert_ptr_nonnull(db);
		h_side_init(&a, da, 0);
		h_side_init(&b, db, 0);
		ck_assert_ok(h_connect(&a, &b, &c));
		h_buf_alloc(&src, len, 0);
		h_buf_alloc(&dst, len, 0);
		memset(src.p, 0x5a, len);
		h_buf_reg(&src, &a, RW);
		h_buf_reg(&dst, &b, RW);
		ck_assert_ok(h_post_send(&a, RNICPI_WR_RDMA_WRITE, &src, 0, len,
					 1, RNICPI_SEND_SIGNALED,
					 (uint64_t)(uintptr_t)dst.p,
					 dst.mr->rkey));
		/* Later rounds let more of the Write land first. */
		ck_assert(placed(dst.p + (size_t)round * (len / 4), 0x5a));
		ck_assert_ok(db->ops->dereg_mr(dst.mr));
		h_buf_free(&dst);
		ck_assert(h_poll(&a, a.scq, &wc, H_WAIT_MS));
		ck_assert_uint_eq(wc.wr_id, 1);
		ck_assert_msg(wc.status == RNICPI_WC_SUCCESS ||
				      wc.status == RNICPI_WC_REM_ACCESS_ERR,
			      "Write status %d", wc.status);
		ck_assert_ok(da->ops->dereg_mr(src.mr));
		h_buf_free(&src);
		h_side_fini(&a);
		h_side_fini(&b);
		h_dev_destroy(da);
		h_dev_destroy(db);
	}
}
END_TEST

Suite *suite_siw_lifetime(void)
{
	Suite *s = suite_create("siw-lifetime");
	TCase *tc = tcase_create("conn");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reject_in_request_upcall);
	tcase_add_test(tc, test_reject_before_request);
	tcase_add_test(tc, test_peer_closes_then_reject);
	tcase_add_test(tc, test_reject_during_error_upcall);
	tcase_add_test(tc, test_reject_races_peer_close);
	suite_add_tcase(s, tc);
	tc = tcase_create("memory");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_dereg_mid_write);
	tcase_add_test(tc, test_destroy_qp_mid_write);
	tcase_add_test(tc, test_dereg_races_inbound_write);
	suite_add_tcase(s, tc);
	return s;
}
