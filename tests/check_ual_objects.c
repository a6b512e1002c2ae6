/* SPDX-License-Identifier: MIT */
/*
 * ual/: object lifetimes (references, parents busy while children live,
 * lookups that outlive a destroy), the data path through the test
 * provider, memory registration and its pinning.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kal/kal.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "tests/testutil_ual.h"
#include "ual/ual_private.h"

/* One open context with test_lo, a PD and two CQs. */
static struct ual *u;
static struct ual_device *dev;
static struct ual_pd *pd;
static struct ual_cq *cq_a, *cq_b;

static void objects_setup(void)
{
	ut_setup();
	u = ut_open();
	dev = ut_device(u, "test_lo");
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_a));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_b));
}

static void objects_teardown(void)
{
	ck_assert_ok(ual_cq_destroy(cq_b));
	ck_assert_ok(ual_cq_destroy(cq_a));
	ck_assert_ok(ual_pd_free(pd));
	ual_device_put(dev);
	ut_close(u);
	ut_teardown();
}

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Page-aligned memory, so pinning counts whole pages we own. */
static void *pages(size_t n)
{
	void *p = mmap(NULL, n * page_size(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static void unmap_pages(void *p, size_t n)
{
	munmap(p, n * page_size());
}

/* ------------------------------------------------------------------ */
/* Parents and children                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_pd_busy_with_each_child)
{
	struct rnicpi_srq_attr srq_attr = { .max_wr = 4, .max_sge = 1 };
	struct rnicpi_ah_attr ah_attr = { .port_num = 1 };
	char *buf = pages(1);
	struct ual_mr *mr;
	struct ual_mw *mw;
	struct ual_srq *srq;
	struct ual_ah *ah;
	struct ual_qp *qp;

	ck_assert_ok(ual_mr_reg(pd, buf, 64, RNICPI_ACCESS_LOCAL_WRITE, &mr));
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_mr_dereg(mr));

	ck_assert_ok(ual_mw_alloc(pd, RNICPI_MW_TYPE_1, &mw));
	ck_assert_uint_ne(ual_mw_rkey(mw), 0);
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_mw_free(mw));

	ck_assert_ok(ual_srq_create(pd, &srq_attr, &srq));
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_srq_destroy(srq));

	ck_assert_ok(ual_ah_create(pd, &ah_attr, &ah));
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_ah_destroy(ah));

	qp = ut_qp(pd, cq_a, cq_b, NULL);
	ck_assert_ptr_eq(ual_qp_pd(qp), pd);
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_qp_destroy(qp));

	/* Every busy refusal left the PD working. */
	ck_assert_ok(ual_mr_reg(pd, buf, 64, 0, &mr));
	ck_assert_ok(ual_mr_dereg(mr));
	unmap_pages(buf, 1);
}
END_TEST

START_TEST(test_cq_busy_per_role)
{
	struct ual_qp *qp = ut_qp(pd, cq_a, cq_b, NULL);
	struct ual_qp *qp2;

	ck_assert_errno(ual_cq_destroy(cq_a), EBUSY); /* send CQ */
	ck_assert_errno(ual_cq_destroy(cq_b), EBUSY); /* receive CQ */
	ck_assert_ok(ual_qp_destroy(qp));

	/* One CQ in both roles counts twice and is released twice. */
	qp = ut_qp(pd, cq_a, cq_a, NULL);
	qp2 = ut_qp(pd, cq_a, cq_b, NULL);
	ck_assert_errno(ual_cq_destroy(cq_a), EBUSY);
	ck_assert_ok(ual_qp_destroy(qp));
	ck_assert_errno(ual_cq_destroy(cq_a), EBUSY);
	ck_assert_ok(ual_qp_destroy(qp2));
	/* teardown destroys both CQs: proves the counts went back to 0 */
}
END_TEST

START_TEST(test_srq_busy_while_used)
{
	struct rnicpi_srq_attr attr = { .max_wr = 4, .max_sge = 1 };
	struct rnicpi_srq_attr q;
	struct ual_srq *srq;
	struct ual_qp *qp;

	ck_assert_ok(ual_srq_create(pd, &attr, &srq));
	qp = ut_qp(pd, cq_a, cq_b, srq);
	ck_assert_errno(ual_srq_destroy(srq), EBUSY);
	ck_assert_ok(ual_srq_query(srq, &q));
	ck_assert_uint_eq(q.max_wr, 4);
	ck_assert_ok(ual_qp_destroy(qp));
	ck_assert_ok(ual_srq_destroy(srq));
}
END_TEST

START_TEST(test_create_rejects_bad_parents)
{
	struct ual_qp_init_attr attr = {
		.qp_type = RNICPI_QPT_RC,
		.send_cq = cq_a,
		.recv_cq = NULL,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
	};
	struct ual_qp *qp = NULL;

	ck_assert_errno(ual_qp_create(pd, &attr, &qp), EINVAL);
	/* A provider refusal (too many WRs) gives every slot back. */
	attr.recv_cq = cq_b;
	attr.cap.max_send_wr = 100000;
	ck_assert_errno(ual_qp_create(pd, &attr, &qp), EINVAL);
	ck_assert_ptr_null(qp);
	ck_assert_ok(ual_cq_destroy(cq_a));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_a));
}
END_TEST

START_TEST(test_close_busy)
{
	struct ual *again = ut_open();
	struct ual_cq *cq;

	/* Not the last reference: fine even with objects. */
	ut_close(again);
	/* The last one: refused while the PD and CQs live. */
	ck_assert_errno(ual_close(u), EBUSY);
	ck_assert_ok(ual_cq_destroy(cq_b));
	ck_assert_ok(ual_cq_destroy(cq_a));
	ck_assert_errno(ual_close(u), EBUSY); /* the PD */
	ck_assert_ok(ual_pd_free(pd));
	ck_assert_ok(ual_cq_create(dev, 4, &cq));
	ck_assert_errno(ual_close(u), EBUSY); /* a CQ alone */
	ck_assert_ok(ual_cq_destroy(cq));
	/* Nothing changed by the refusals: the device still works. */
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_a));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_b));
}
END_TEST

START_TEST(test_device_outlives_close)
{
	struct ual_device *held;
	struct ual_pd *p2 = NULL;

	ck_assert_ok(ual_cq_destroy(cq_b));
	ck_assert_ok(ual_cq_destroy(cq_a));
	ck_assert_ok(ual_pd_free(pd));
	held = ual_device_get(dev);
	ual_device_put(dev);
	ut_close(u);
	/* The reference keeps the memory; the device takes no new object. */
	ck_assert_str_eq(ual_device_name(held), "test_lo");
	ck_assert_errno(ual_pd_alloc(held, &p2), ENODEV);
	ck_assert_ptr_null(p2);
	ual_device_put(held);
	/* Reopen for the teardown. */
	u = ut_open();
	dev = ut_device(u, "test_lo");
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_a));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_b));
}
END_TEST

START_TEST(test_lookup_survives_destroy)
{
	struct ual_qp *qp = ut_qp(pd, cq_a, cq_b, NULL);
	uint32_t qpn = ual_qp_num(qp);
	struct rnicpi_qp_attr attr = { .qp_state = RNICPI_QPS_INIT };
	struct rnicpi_send_wr wr = { .wr_id = 1, .opcode = RNICPI_WR_SEND };
	const struct rnicpi_send_wr *bad = NULL;
	struct ual_qp *found, *again;
	int token;

	ck_assert_uint_ge(qpn, 2);
	found = ual_qp_lookup(dev, qpn);
	ck_assert_ptr_eq(found, qp);
	ck_assert_ptr_null(ual_qp_lookup(dev, qpn + 1000));
	ual_qp_set_user(qp, &token);

	/* Destroy while the lookup's reference is out. */
	ck_assert_ok(ual_qp_destroy(qp));
	ck_assert_ptr_null(ual_qp_lookup(dev, qpn));
	/* The object is still readable and refuses work. */
	ck_assert_uint_eq(ual_qp_num(found), qpn);
	ck_assert_ptr_eq(ual_qp_user(found), &token);
	ck_assert_ptr_eq(ual_qp_pd(found), pd);
	ck_assert_ptr_null(ual_qp_rnicpi(found));
	ck_assert_errno(ual_qp_modify(found, &attr, RNICPI_QP_STATE), ENODEV);
	ck_assert_errno(ual_qp_post_send(found, &wr, &bad), ENODEV);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_errno(ual_qp_destroy(found), ENODEV);
	/* Its parents are free already. */
	ck_assert_ok(ual_cq_destroy(cq_a));
	ck_assert_ok(ual_cq_create(dev, 16, &cq_a));
	again = ual_qp_get(found);
	ual_qp_put(again);
	ual_qp_put(found); /* the last reference: freed (valgrind checks) */
}
END_TEST

/* The provider's connection hooks go through ual's ops table (a provider
 * without them answers -EOPNOTSUPP, the test provider has none) and follow
 * the QP's lifetime: a destroyed QP refuses them, so cm/ can never hand a
 * socket or a request to a QP that is gone. */
START_TEST(test_conn_hooks_follow_object_rules)
{
	struct ual_qp *qp = ut_qp(pd, cq_a, cq_b, NULL);
	struct ual_qp *held = ual_qp_get(qp);
	struct rnicpi_conn_param p = { .ird = 1, .ord = 1 };
	struct rnicpi_conn conn = { .device = ual_device_rnicpi(dev) };
	struct rnicpi_conn *out = NULL;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_errno(ual_qp_iw_connect(qp, sv[0], &p), EOPNOTSUPP);
	ck_assert_errno(ual_device_iw_take_request(dev, sv[0], NULL, &out),
			EOPNOTSUPP);
	ck_assert_ptr_null(out);
	ck_assert_errno(ual_device_conn_reject(dev, &conn, NULL, 0),
			EOPNOTSUPP);
	/* Refused: the socket stays the caller's. */
	ck_assert_int_ge(fcntl(sv[0], F_GETFD), 0);

	ck_assert_ok(ual_qp_destroy(qp));
	ck_assert_errno(ual_qp_iw_connect(held, sv[0], &p), ENODEV);
	ck_assert_errno(ual_qp_conn_accept(held, &conn, &p), ENODEV);
	ck_assert_int_ge(fcntl(sv[0], F_GETFD), 0);
	ual_qp_put(held);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

struct lookup_race {
	uint32_t qpn;
	gint stop;
	gint found;	/* lookups that returned the QP */
	gint missed;	/* lookups after the destroy */
	gint bad_rc;	/* post results other than 0 and -ENODEV */
	struct ual_mr *mr;
	char *buf;
};

static gpointer lookup_loop(gpointer data)
{
	struct lookup_race *r = data;

	while (!g_atomic_int_get(&r->stop)) {
		struct ual_qp *q = ual_qp_lookup(dev, r->qpn);
		int rc;

		if (!q) {
			g_atomic_int_inc(&r->missed);
			continue;
		}
		g_atomic_int_inc(&r->found);
		rc = ut_post_send(q, 1, r->mr, r->buf, 8, 0);
		if (rc != 0 && rc != -ENODEV)
			g_atomic_int_inc(&r->bad_rc);
		ual_qp_put(q);
	}
	return NULL;
}

START_TEST(test_lookup_races_destroy)
{
	struct lookup_race r = { 0 };
	struct rnicpi_wc wc[16];
	struct ual_qp *qp = ut_qp(pd, cq_a, cq_b, NULL);
	GThread *t;

	r.buf = pages(1);
	ck_assert_ok(ual_mr_reg(pd, r.buf, 64, 0, &r.mr));
	ut_qp_rts(qp, 0);
	r.qpn = ual_qp_num(qp);
	t = g_thread_new("lookup", lookup_loop, &r);
	/* Destroy while another thread looks the QP up and posts on it. */
	while (g_atomic_int_get(&r.found) < 100)
		g_thread_yield();
	ck_assert_ok(ual_qp_destroy(qp));
	while (g_atomic_int_get(&r.missed) == 0)
		g_thread_yield();
	g_atomic_int_set(&r.stop, 1);
	g_thread_join(t);
	ck_assert_int_eq(r.bad_rc, 0);
	ck_assert_ptr_null(ual_qp_lookup(dev, r.qpn));
	while (ual_cq_poll(cq_a, 16, wc) > 0)
		;
	ck_assert_ok(ual_mr_dereg(r.mr));
	unmap_pages(r.buf, 1);
}
END_TEST

START_TEST(test_pd_lookup_reference)
{
	struct ual_pd *other;

	/* A PD kept by a reference after free answers -ENODEV. */
	ck_assert_ok(ual_pd_alloc(dev, &other));
	ual_pd_get(other);
	ck_assert_ok(ual_pd_free(other));
	ck_assert_errno(ual_pd_free(other), ENODEV);
	ck_assert_ptr_eq(ual_pd_device(other), dev);
	ual_pd_put(other);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Data path through the test provider                                 */
/* ------------------------------------------------------------------ */

START_TEST(test_send_lands_in_peer_receive)
{
	char *mem = pages(1);
	char *src = mem, *dst = mem + 1024;
	struct ual_qp *a = ut_qp(pd, cq_a, cq_a, NULL);
	struct ual_qp *b = ut_qp(pd, cq_b, cq_b, NULL);
	struct rnicpi_wc wc[4];
	struct ual_mr *mr;
	size_t i;

	memset(mem, 0x55, page_size());
	memcpy(src, "hello, peer", 11);
	ck_assert_ok(ual_mr_reg(pd, mem, page_size(),
				RNICPI_ACCESS_LOCAL_WRITE, &mr));
	ut_qp_rts(a, ual_qp_num(b));
	ut_qp_rts(b, ual_qp_num(a));
	ck_assert_ok(ut_post_recv(b, 20, mr, dst, 64));
	ck_assert_ok(ut_post_send(a, 10, mr, src, 11, 0));

	ck_assert_int_eq(ual_cq_poll(cq_a, 4, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, RNICPI_WC_SEND);
	ck_assert_int_eq(ual_cq_poll(cq_b, 4, wc), 1);
	ck_assert_uint_eq(wc[0].wr_id, 20);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, RNICPI_WC_RECV);
	ck_assert_uint_eq(wc[0].byte_len, 11);
	ck_assert_uint_eq(wc[0].qp_num, ual_qp_num(b));
	ck_assert_uint_eq(wc[0].src_qp, ual_qp_num(a));
	/* The bytes landed, and nothing around them changed. */
	ck_assert_mem_eq(dst, "hello, peer", 11);
	for (i = 11; i < page_size() - 1024; i++)
		ck_assert_int_eq(dst[i], 0x55);

	/* No receive posted: the sender hears RNR, the peer nothing. */
	ck_assert_ok(ut_post_send(a, 11, mr, src, 11, 0));
	ck_assert_int_eq(ual_cq_poll(cq_a, 4, wc), 1);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(ual_cq_poll(cq_b, 4, wc), 0);

	/* Too small a receive: LOC_LEN_ERR, no byte written. */
	ck_assert_ok(ut_post_recv(b, 21, mr, dst + 100, 4));
	ck_assert_ok(ut_post_send(a, 12, mr, src, 11, 0));
	ck_assert_int_eq(ual_cq_poll(cq_b, 4, wc), 1);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_LOC_LEN_ERR);
	ck_assert_int_eq(dst[100], 0x55);
	ck_assert_int_eq(ual_cq_poll(cq_a, 4, wc), 1);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_REM_OP_ERR);

	ck_assert_ok(ual_qp_destroy(a));
	ck_assert_ok(ual_qp_destroy(b));
	ck_assert_ok(ual_mr_dereg(mr));
	unmap_pages(mem, 1);
}
END_TEST

START_TEST(test_send_checks_local_key)
{
	char *mem = pages(1);
	struct ual_qp *a = ut_qp(pd, cq_a, cq_a, NULL);
	struct ual_qp *b = ut_qp(pd, cq_b, cq_b, NULL);
	struct rnicpi_wc wc[2];
	struct ual_mr *ro, *rw;

	memset(mem, 0x55, page_size());
	/* A receive into an MR without LOCAL_WRITE is a protection error. */
	ck_assert_ok(ual_mr_reg(pd, mem, 512, 0, &ro));
	ck_assert_ok(ual_mr_reg(pd, mem + 512, 512, RNICPI_ACCESS_LOCAL_WRITE,
				&rw));
	ut_qp_rts(a, ual_qp_num(b));
	ut_qp_rts(b, ual_qp_num(a));
	ck_assert_ok(ut_post_recv(b, 1, ro, mem + 100, 16));
	ck_assert_ok(ut_post_send(a, 2, rw, mem + 512, 16, 0));
	ck_assert_int_eq(ual_cq_poll(cq_b, 2, wc), 1);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_LOC_PROT_ERR);
	ck_assert_int_eq(mem[100], 0x55);
	ck_assert_int_eq(ual_cq_poll(cq_a, 2, wc), 1);
	/* Sending from beyond the MR: refused at the sender. */
	ck_assert_ok(ut_post_send(a, 3, rw, mem + 1000, 100, 0));
	ck_assert_int_eq(ual_cq_poll(cq_a, 2, wc), 1);
	ck_assert_int_eq(wc[0].status, RNICPI_WC_LOC_PROT_ERR);
	ck_assert_ok(ual_qp_destroy(a));
	ck_assert_ok(ual_qp_destroy(b));
	ck_assert_ok(ual_mr_dereg(ro));
	ck_assert_ok(ual_mr_dereg(rw));
	unmap_pages(mem, 1);
}
END_TEST

START_TEST(test_srq_feeds_qp)
{
	struct rnicpi_srq_attr attr = { .max_wr = 4, .max_sge = 1 };
	char *mem = pages(1);
	struct rnicpi_sge sge;
	struct rnicpi_recv_wr rwr = { .wr_id = 77, .sg_list = &sge,
				      .num_sge = 1 };
	const struct rnicpi_recv_wr *bad;
	struct rnicpi_wc wc;
	struct ual_srq *srq;
	struct ual_qp *a, *b;
	struct ual_mr *mr;

	ck_assert_ok(ual_mr_reg(pd, mem, page_size(),
				RNICPI_ACCESS_LOCAL_WRITE, &mr));
	ck_assert_ok(ual_srq_create(pd, &attr, &srq));
	a = ut_qp(pd, cq_a, cq_a, NULL);
	b = ut_qp(pd, cq_b, cq_b, srq);
	ut_qp_rts(a, ual_qp_num(b));
	ut_qp_rts(b, ual_qp_num(a));
	sge.addr = (uintptr_t)(mem + 256);
	sge.length = 32;
	sge.lkey = ual_mr_lkey(mr);
	ck_assert_ok(ual_srq_post_recv(srq, &rwr, &bad));
	memcpy(mem, "via srq", 7);
	ck_assert_ok(ut_post_send(a, 1, mr, mem, 7, 0));
	ck_assert_int_eq(ual_cq_poll(cq_b, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_uint_eq(wc.byte_len, 7);
	ck_assert_mem_eq(mem + 256, "via srq", 7);
	ck_assert_int_eq(ual_cq_poll(cq_a, 1, &wc), 1);
	ck_assert_ok(ual_qp_destroy(a));
	ck_assert_ok(ual_qp_destroy(b));
	ck_assert_ok(ual_srq_destroy(srq));
	ck_assert_ok(ual_mr_dereg(mr));
	unmap_pages(mem, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Memory registration                                                 */
/* ------------------------------------------------------------------ */

/*
 * A device that says its kernel pins (RNICPI_DEV_CAP_KERNEL_PINS, the
 * verbs provider's ibv_reg_mr) gets no second pin from kal: registering
 * and re-registering pin nothing, yet the MR works as any other.
 */
START_TEST(test_mr_kernel_pins)
{
	const unsigned int rw = RNICPI_ACCESS_LOCAL_WRITE |
				RNICPI_ACCESS_REMOTE_WRITE;
	struct ual_device *kdev;
	struct ual_pd *kpd;
	struct ual_mr *mr;
	struct ual *ku;
	uint64_t start;
	char *mem;

	/* Without the option the same device pins: test_mr_same_range. */
	ut_setup();
	g_setenv("HOSTRDMA_OPTIONS", "test.kernel_pins=on", TRUE);
	ku = ut_open();
	g_unsetenv("HOSTRDMA_OPTIONS");
	start = kal_pinned_bytes();
	mem = pages(4);
	kdev = ut_device(ku, "test_lo");
	ck_assert_ok(ual_pd_alloc(kdev, &kpd));
	ck_assert_ok(ual_mr_reg(kpd, mem, 2 * page_size(), rw, &mr));
	ck_assert_uint_eq(kal_pinned_bytes(), start);
	ck_assert_ptr_nonnull(ual_mr_rnicpi(mr));
	ck_assert_ok(ual_mr_rereg(mr, mem + page_size(), 3 * page_size(), rw));
	ck_assert_uint_eq(ual_mr_length(mr), 3 * page_size());
	ck_assert_uint_eq(kal_pinned_bytes(), start);
	ck_assert_ok(ual_mr_dereg(mr));
	ck_assert_uint_eq(kal_pinned_bytes(), start);
	ck_assert_ok(ual_pd_free(kpd));
	ual_device_put(kdev);
	ut_close(ku);
	ut_teardown();
	unmap_pages(mem, 4);
}
END_TEST

/*
 * Two registrations of one range with the same rights are two MRs with
 * keys of their own (issue 11/2: freeing one must revoke its keys only);
 * what they share is the pinning.
 */
START_TEST(test_mr_same_range)
{
	const unsigned int rw = RNICPI_ACCESS_LOCAL_WRITE |
				RNICPI_ACCESS_REMOTE_WRITE;
	uint64_t start = kal_pinned_bytes();
	char *mem = pages(4);
	struct ual_mr *a, *b, *c, *z;
	uint32_t lkey;

	ck_assert_ok(ual_mr_reg(pd, mem, 2 * page_size(), rw, &a));
	ck_assert_uint_eq(kal_pinned_bytes(), start + 2 * page_size());
	ck_assert_ptr_eq(ual_mr_addr(a), mem);
	ck_assert_uint_eq(ual_mr_length(a), 2 * page_size());
	ck_assert_uint_eq(ual_mr_iova(a), (uintptr_t)mem);
	ck_assert_uint_eq(ual_mr_access(a), rw);
	lkey = ual_mr_lkey(a);

	/* Same range and rights: another MR, other keys, nothing more
	 * pinned. */
	ck_assert_ok(ual_mr_reg(pd, mem, 2 * page_size(), rw, &b));
	ck_assert_ptr_ne(b, a);
	ck_assert_ptr_ne(ual_mr_rnicpi(b), ual_mr_rnicpi(a));
	ck_assert_uint_ne(ual_mr_lkey(b), lkey);
	ck_assert_uint_ne(ual_mr_rkey(b), ual_mr_rkey(a));
	ck_assert_uint_eq(kal_pinned_bytes(), start + 2 * page_size());

	/* Different rights, zero-based: more MRs. */
	ck_assert_ok(ual_mr_reg(pd, mem, 2 * page_size(),
				RNICPI_ACCESS_LOCAL_WRITE, &c));
	ck_assert_ptr_ne(c, a);
	ck_assert_uint_ne(ual_mr_lkey(c), lkey);
	ck_assert_ok(ual_mr_reg(pd, mem, 2 * page_size(),
				rw | RNICPI_ACCESS_ZERO_BASED, &z));
	ck_assert_ptr_ne(z, a);
	ck_assert_uint_eq(ual_mr_iova(z), 0);

	/* Each can change on its own. */
	ck_assert_ok(ual_mr_rereg(a, mem, page_size(), rw));
	ck_assert_uint_eq(ual_mr_length(b), 2 * page_size());
	/* Deregistering one leaves the others registered, pinned. */
	ck_assert_ok(ual_mr_dereg(b));
	ck_assert_ptr_nonnull(ual_mr_rnicpi(a));
	ck_assert_uint_eq(kal_pinned_bytes(), start + 2 * page_size());
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	ck_assert_ok(ual_mr_dereg(a));
	ck_assert_ok(ual_mr_dereg(c));
	ck_assert_ok(ual_mr_dereg(z));
	/* The last dereg unpinned everything. */
	ck_assert_uint_eq(kal_pinned_bytes(), start);

	/* A fresh registration of the range gets new keys. */
	ck_assert_ok(ual_mr_reg(pd, mem, 2 * page_size(), rw, &a));
	ck_assert_uint_ne(ual_mr_lkey(a), lkey);
	ck_assert_ok(ual_mr_dereg(a));
	unmap_pages(mem, 4);
}
END_TEST

START_TEST(test_mr_rereg)
{
	uint64_t start = kal_pinned_bytes();
	char *mem = pages(4);
	struct ual_mr *mr;
	uint32_t lkey;

	ck_assert_ok(ual_mr_reg(pd, mem, page_size(), 0, &mr));
	lkey = ual_mr_lkey(mr);
	ck_assert_ok(ual_mr_rereg(mr, mem, 3 * page_size(),
				  RNICPI_ACCESS_LOCAL_WRITE));
	ck_assert_uint_ne(ual_mr_lkey(mr), lkey);
	ck_assert_uint_eq(ual_mr_length(mr), 3 * page_size());
	ck_assert_uint_eq(ual_mr_access(mr), RNICPI_ACCESS_LOCAL_WRITE);
	ck_assert_uint_eq(kal_pinned_bytes(), start + 3 * page_size());
	/* Bad rights are refused by the provider; nothing changes. */
	ck_assert_errno(ual_mr_rereg(mr, mem, 3 * page_size(),
				     RNICPI_ACCESS_REMOTE_WRITE),
			EINVAL);
	ck_assert_uint_eq(ual_mr_access(mr), RNICPI_ACCESS_LOCAL_WRITE);
	ck_assert_ok(ual_mr_dereg(mr));
	ck_assert_uint_eq(kal_pinned_bytes(), start);
	unmap_pages(mem, 4);
}
END_TEST

START_TEST(test_mr_bad_arguments)
{
	char *mem = pages(1);
	struct ual_mr *mr = NULL;

	ck_assert_errno(ual_mr_reg(pd, NULL, 10, 0, &mr), EINVAL);
	ck_assert_errno(ual_mr_reg(pd, mem, 0, 0, &mr), EINVAL);
	ck_assert_errno(ual_mr_reg(pd, mem, 10, 1u << 20, &mr), EINVAL);
	/* REMOTE_WRITE without LOCAL_WRITE: the provider refuses and the
	 * pin is undone. */
	ck_assert_errno(ual_mr_reg(pd, mem, 10, RNICPI_ACCESS_REMOTE_WRITE,
				   &mr),
			EINVAL);
	ck_assert_ptr_null(mr);
	ck_assert_ok(ual_pd_free(pd)); /* no MR left behind */
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	unmap_pages(mem, 1);
}
END_TEST

START_TEST(test_mr_dereg_busy_with_window)
{
	char *mem = pages(1);
	struct ual_qp *qp = ut_qp(pd, cq_a, cq_a, NULL);
	struct rnicpi_send_wr wr = {
		.wr_id = 5,
		.opcode = RNICPI_WR_BIND_MW,
		.send_flags = RNICPI_SEND_SIGNALED,
	};
	const struct rnicpi_send_wr *bad;
	struct rnicpi_wc wc;
	struct ual_mw *mw;
	struct ual_mr *mr;
	uint32_t rkey;

	ck_assert_ok(ual_mr_reg(pd, mem, page_size(),
				RNICPI_ACCESS_LOCAL_WRITE |
					RNICPI_ACCESS_MW_BIND,
				&mr));
	ck_assert_ok(ual_mw_alloc(pd, RNICPI_MW_TYPE_1, &mw));
	rkey = ual_mw_rkey(mw);
	ut_qp_rts(qp, 0);
	wr.wr.bind_mw.mw = ual_mw_rnicpi(mw);
	/* the consumer's key byte, as it_rmr_link chooses it */
	wr.wr.bind_mw.rkey = (rkey & ~0xffu) | ((rkey + 1) & 0xffu);
	wr.wr.bind_mw.bind_info.mr = ual_mr_rnicpi(mr);
	wr.wr.bind_mw.bind_info.addr = (uintptr_t)mem;
	wr.wr.bind_mw.bind_info.length = 128;
	wr.wr.bind_mw.bind_info.access = RNICPI_ACCESS_REMOTE_READ;
	ck_assert_ok(ual_qp_post_send(qp, &wr, &bad));
	ck_assert_int_eq(ual_cq_poll(cq_a, 1, &wc), 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, RNICPI_WC_BIND_MW);
	ck_assert_uint_eq(ual_mw_rkey(mw), wr.wr.bind_mw.rkey);

	/* The provider refuses while the window is bound: still there. */
	ck_assert_errno(ual_mr_dereg(mr), EBUSY);
	ck_assert_ptr_nonnull(ual_mr_rnicpi(mr));
	ck_assert_errno(ual_pd_free(pd), EBUSY);
	/* Unbind (length 0), then the same reference deregisters. */
	wr.wr.bind_mw.bind_info.length = 0;
	ck_assert_ok(ual_qp_post_send(qp, &wr, &bad));
	ck_assert_int_eq(ual_cq_poll(cq_a, 1, &wc), 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert_ok(ual_mr_dereg(mr));
	ck_assert_ok(ual_mw_free(mw));
	ck_assert_ok(ual_qp_destroy(qp));
	unmap_pages(mem, 1);
}
END_TEST

START_TEST(test_mr_memlock_limit)
{
	uint64_t start = kal_pinned_bytes();
	struct rlimit old, low;
	char *mem = pages(16);
	struct ual_mr *mr = NULL;
	bool cap;
	int err;

	ck_assert_int_eq(getrlimit(RLIMIT_MEMLOCK, &old), 0);
	low = old;
	low.rlim_cur = start + 4 * page_size();
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &low), 0);
	/* root's CAP_IPC_LOCK would pass the limit, as in the kernel */
	cap = tu_cap_ipc_lock(false);
	err = ual_mr_reg(pd, mem, 16 * page_size(), RNICPI_ACCESS_LOCAL_WRITE,
			 &mr);
	tu_cap_ipc_lock(cap);
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &old), 0);
	ck_assert_int_eq(err, -ENOMEM);
	ck_assert_ptr_null(mr);
	/* Nothing pinned, nothing registered. */
	ck_assert_uint_eq(kal_pinned_bytes(), start);
	ck_assert_ok(ual_pd_free(pd));
	ck_assert_ok(ual_pd_alloc(dev, &pd));
	/* Under the limit again it works. */
	ck_assert_ok(ual_mr_reg(pd, mem, 16 * page_size(), 0, &mr));
	ck_assert_ok(ual_mr_dereg(mr));
	unmap_pages(mem, 16);
}
END_TEST

Suite *suite_ual_objects(void)
{
	Suite *s = suite_create("ual-objects");
	TCase *tc;

	tc = tcase_create("lifetimes");
	tcase_add_checked_fixture(tc, objects_setup, objects_teardown);
	tcase_add_test(tc, test_pd_busy_with_each_child);
	tcase_add_test(tc, test_cq_busy_per_role);
	tcase_add_test(tc, test_srq_busy_while_used);
	tcase_add_test(tc, test_create_rejects_bad_parents);
	tcase_add_test(tc, test_close_busy);
	tcase_add_test(tc, test_conn_hooks_follow_object_rules);
	tcase_add_test(tc, test_device_outlives_close);
	tcase_add_test(tc, test_lookup_survives_destroy);
	tcase_add_test(tc, test_lookup_races_destroy);
	tcase_add_test(tc, test_pd_lookup_reference);
	suite_add_tcase(s, tc);

	tc = tcase_create("data");
	tcase_add_checked_fixture(tc, objects_setup, objects_teardown);
	tcase_add_test(tc, test_send_lands_in_peer_receive);
	tcase_add_test(tc, test_send_checks_local_key);
	tcase_add_test(tc, test_srq_feeds_qp);
	suite_add_tcase(s, tc);

	tc = tcase_create("memory");
	tcase_add_checked_fixture(tc, objects_setup, objects_teardown);
	tcase_add_test(tc, test_mr_same_range);
	tcase_add_test(tc, test_mr_rereg);
	tcase_add_test(tc, test_mr_bad_arguments);
	tcase_add_test(tc, test_mr_dereg_busy_with_window);
	tcase_add_test(tc, test_mr_memlock_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("kernel-pins");
	tcase_add_test(tc, test_mr_kernel_pins);
	suite_add_tcase(s, tc);
	return s;
}
