/* SPDX-License-Identifier: MIT */
/*
 * siw-loopback "windows": memory windows on soft-iWARP, as rxe-memory's
 * test_memory_windows does them on soft-RoCE: type 1 and 2 bound by a
 * BIND_MW work request, bytes written and read through the window and
 * none beside it, access outside it refused with the Terminate RFC 5041
 * names (Base or Bounds violation), a window's STag dead after unbind,
 * LOCAL_INV and the peer's Send with Invalidate, zero-based windows.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <string.h>

#include "tests/testutil_siw.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

#define GUARD H_GUARD

static void post_bind(struct h_side *s, uint64_t wr_id, struct rnicpi_mw *mw,
		      uint32_t key, struct h_buf *b, size_t off, size_t len,
		      unsigned int access)
{
	struct rnicpi_send_wr wr;
	const struct rnicpi_send_wr *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = RNICPI_WR_BIND_MW;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.wr.bind_mw.mw = mw;
	wr.wr.bind_mw.rkey = key;
	wr.wr.bind_mw.bind_info.mr = len ? b->mr : NULL;
	wr.wr.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)b->p + off;
	wr.wr.bind_mw.bind_info.length = len;
	wr.wr.bind_mw.bind_info.access = access;
	ck_assert_ok(s->d->ops->post_send(s->qp, &wr, &bad));
}

static uint32_t next_key(uint32_t key, uint8_t byte)
{
	if ((key & 0xff) == byte)
		byte ^= 0x80;
	return (key & ~0xffu) | byte;
}

/* The peer's view of a bad STag: a Terminate of @layer/@etype/@ecode
 * reported at b (who sent it) and at a (who got it), then both close. */
static void expect_terminate(struct h_pair *p, uint8_t layer, uint8_t etype,
			     uint8_t ecode)
{
	struct rnicpi_async_event ae;
	struct h_conn_ev ev;

	ck_assert(h_wait_async(p->db, RNICPI_EVENT_QP_ACCESS_ERR, p->b.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_layer, layer);
	ck_assert_uint_eq(ae.term_etype, etype);
	ck_assert_uint_eq(ae.term_ecode, ecode);
	ck_assert_uint_eq(ae.term_remote, 0);
	ck_assert(h_wait_async(p->da, RNICPI_EVENT_QP_ACCESS_ERR, p->a.qp, &ae,
			       H_WAIT_MS));
	ck_assert_uint_eq(ae.term_remote, 1);
	ck_assert_uint_eq(ae.term_layer, layer);
	ck_assert_uint_eq(ae.term_etype, etype);
	ck_assert_uint_eq(ae.term_ecode, ecode);
	ck_assert(h_wait_conn(p->da, RNICPI_CONN_DISCONNECTED, p->a.qp, &ev,
			      H_WAIT_MS));
	ck_assert(h_wait_conn(p->db, RNICPI_CONN_DISCONNECTED, p->b.qp, &ev,
			      H_WAIT_MS));
}

/* A connected pair with a 4 KiB window target at b (MW_BIND, local write,
 * no remote rights of its own), and a source/sink at a. */
struct mw_fix {
	struct h_pair p;
	struct h_buf win, src, dst, rb;
};

static void fix_up(struct mw_fix *f)
{
	h_pair_up_opts(&f->p, NULL, NULL, 0);
	h_pair_connect(&f->p);
	h_buf_alloc(&f->win, 4096, GUARD);
	h_buf_alloc(&f->src, 256, GUARD);
	h_buf_alloc(&f->dst, 256, GUARD);
	h_buf_alloc(&f->rb, 64, GUARD);
	memset(f->win.p, 0, 4096);
	memset(f->dst.p, 0, 256);
	h_buf_fill(&f->src, 7);
	h_buf_reg(&f->win, &f->p.b, RNICPI_ACCESS_LOCAL_WRITE |
				    RNICPI_ACCESS_MW_BIND);
	h_buf_reg(&f->src, &f->p.a, H_RW);
	h_buf_reg(&f->dst, &f->p.a, H_RW);
	h_buf_reg(&f->rb, &f->p.b, H_RW);
}

static void fix_down(struct mw_fix *f)
{
	ck_assert(h_buf_guards_ok(&f->win));
	ck_assert(h_buf_guards_ok(&f->dst));
	ck_assert_ok(f->p.da->ops->dereg_mr(f->src.mr));
	ck_assert_ok(f->p.da->ops->dereg_mr(f->dst.mr));
	ck_assert_ok(f->p.db->ops->dereg_mr(f->rb.mr));
	ck_assert_ok(f->p.db->ops->dereg_mr(f->win.mr));
	h_buf_free(&f->win);
	h_buf_free(&f->src);
	h_buf_free(&f->dst);
	h_buf_free(&f->rb);
	h_pair_down(&f->p);
}

/* An RDMA Write completes at its sender once sent (RFC 5040 §5.2): a
 * Send behind it tells that it landed. */
static void write_landed(struct mw_fix *f, uint64_t wr_id)
{
	h_post_recv(&f->p.b, &f->rb, 0, 0, wr_id);
	ck_assert_ok(h_post_send(&f->p.a, RNICPI_WR_SEND, NULL, 0, 0,
				 wr_id + 1000, 0, 0, 0));
	h_expect_wc(&f->p.b, f->p.b.rcq, wr_id, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RECV, 0);
}

static bool all_zero(const uint8_t *p, size_t from, size_t to)
{
	for (; from < to; from++)
		if (p[from])
			return false;
	return true;
}

START_TEST(test_mw_type1)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	struct rnicpi_device_attr da;
	uint64_t base;
	uint32_t key;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->query_device(f.p.db->dev, &da));
	ck_assert(da.caps & RNICPI_DEV_CAP_MW_TYPE_1);
	ck_assert(da.caps & RNICPI_DEV_CAP_MW_TYPE_2);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_1, &mw));
	ck_assert_uint_ne(mw->rkey, 0);
	base = (uint64_t)(uintptr_t)f.win.p;

	/* Bytes 1024..2047, remote write and read, with our key byte. */
	key = next_key(mw->rkey, 0x11);
	post_bind(&f.p.b, 1, mw, key, &f.win, 1024, 1024,
		  RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_uint_eq(mw->rkey, key);
	/* The region is busy while a window is bound to it. */
	ck_assert_errno(f.p.db->ops->dereg_mr(f.win.mr), EBUSY);

	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 200,
				 2, RNICPI_SEND_SIGNALED, base + 1500, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 2, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_WRITE, 200);
	write_landed(&f, 102);
	ck_assert(memcmp(f.win.p + 1500, f.src.p, 200) == 0);
	ck_assert(all_zero(f.win.p, 0, 1500));
	ck_assert(all_zero(f.win.p, 1700, 4096));
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 200,
				 3, RNICPI_SEND_SIGNALED, base + 1500, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 3, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_READ, 200);
	ck_assert(memcmp(f.dst.p, f.src.p, 200) == 0);

	/* Rebinding with a new key byte: the old STag is dead, the new one
	 * opens the new range. */
	post_bind(&f.p.b, 4, mw, next_key(key, 0x22), &f.win, 0, 512,
		  RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 4, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_uint_eq(mw->rkey, next_key(key, 0x22));
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 64,
				 5, RNICPI_SEND_SIGNALED, base, mw->rkey));
	h_expect_wc(&f.p.a, f.p.a.scq, 5, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_READ, 64);
	ck_assert(all_zero(f.dst.p, 0, 64));

	/* A Write through a read-only window: RDMAP access rights. */
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 16,
				 6, RNICPI_SEND_SIGNALED, base, mw->rkey));
	expect_terminate(&f.p, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			 RDMAP_ECODE_ACCESS_RIGHTS);
	ck_assert(all_zero(f.win.p, 0, 16));
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	/* Unbound by dealloc: the region is free again. */
	fix_down(&f);
}
END_TEST

START_TEST(test_mw_bounds)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	uint64_t base;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_1, &mw));
	base = (uint64_t)(uintptr_t)f.win.p;
	post_bind(&f.p.b, 1, mw, next_key(mw->rkey, 0x33), &f.win, 1024, 1024,
		  RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	/* 100 bytes from 1000 into the window run 76 past its end; the
	 * region under it has them, the window does not. */
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 100,
				 2, RNICPI_SEND_SIGNALED, base + 2024,
				 mw->rkey));
	expect_terminate(&f.p, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_BASE_BOUNDS);
	ck_assert(all_zero(f.win.p, 0, 4096));
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);
}
END_TEST

/* The region's own STag grants nothing remotely; an unbound (length 0)
 * type 1 window's STag is invalid: RFC 5040 §7.4 Invalid STag. */
START_TEST(test_mw_unbound)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	uint64_t base;
	uint32_t key;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_1, &mw));
	base = (uint64_t)(uintptr_t)f.win.p;
	key = next_key(mw->rkey, 0x44);
	post_bind(&f.p.b, 1, mw, key, &f.win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	post_bind(&f.p.b, 2, mw, 0, &f.win, 0, 0, 0);
	h_expect_wc(&f.p.b, f.p.b.scq, 2, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_ok(f.p.db->ops->dereg_mr(f.win.mr));
	h_buf_reg(&f.win, &f.p.b, RNICPI_ACCESS_LOCAL_WRITE |
				  RNICPI_ACCESS_MW_BIND);
	h_buf_fill(&f.dst, 9);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 64,
				 3, RNICPI_SEND_SIGNALED, base, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 3, RNICPI_WC_REM_ACCESS_ERR,
		    RNICPI_WC_RDMA_READ, 0);
	expect_terminate(&f.p, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			 RDMAP_ECODE_INVALID_STAG);
	ck_assert(h_buf_check(&f.dst, 0, 64, 9, 0)); /* nothing read */
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);
}
END_TEST

/* Type 2: bound to b's QP; the peer's Send with Invalidate unbinds it,
 * so does b's LOCAL_INV; the dead STag then gets Invalid STag. */
START_TEST(test_mw_type2_invalidate)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	struct rnicpi_wc wc;
	uint64_t base;
	uint32_t key;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_2, &mw));
	base = (uint64_t)(uintptr_t)f.win.p;
	key = next_key(mw->rkey, 0x55);
	post_bind(&f.p.b, 1, mw, key, &f.win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 100,
				 2, RNICPI_SEND_SIGNALED, base + 3996, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 2, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_WRITE, 100);
	write_landed(&f, 102);
	ck_assert(memcmp(f.win.p + 3996, f.src.p, 100) == 0);
	ck_assert(all_zero(f.win.p, 0, 3996));

	/* Send with Invalidate from the peer: the receive says so. */
	h_post_recv(&f.p.b, &f.rb, 0, 64, 3);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_SEND_WITH_INV, &f.src, 0, 8,
				 4, RNICPI_SEND_SIGNALED, 0, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 4, RNICPI_WC_SUCCESS, RNICPI_WC_SEND,
		    8);
	ck_assert(h_poll(&f.p.b, f.p.b.rcq, &wc, H_WAIT_MS));
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert(wc.wc_flags & RNICPI_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, key);
	/* Unbound, the region is free of it. */
	ck_assert_ok(f.p.db->ops->rereg_mr(f.win.mr, RNICPI_REREG_ACCESS,
					   NULL, NULL, 0, 0,
					   RNICPI_ACCESS_LOCAL_WRITE |
					   RNICPI_ACCESS_MW_BIND));

	/* Bound again (type 2 takes a new bind once invalidated), then
	 * LOCAL_INV by its own side. */
	key = next_key(key, 0x56);
	post_bind(&f.p.b, 5, mw, key, &f.win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 5, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 100,
				 6, RNICPI_SEND_SIGNALED, base + 3996, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 6, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_READ, 100);
	ck_assert(memcmp(f.dst.p, f.src.p, 100) == 0);
	ck_assert_ok(h_post_send(&f.p.b, RNICPI_WR_LOCAL_INV, NULL, 0, 0, 7,
				 RNICPI_SEND_SIGNALED, 0, key));
	h_expect_wc(&f.p.b, f.p.b.scq, 7, RNICPI_WC_SUCCESS,
		    RNICPI_WC_LOCAL_INV, 0);
	h_buf_fill(&f.dst, 9);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 64,
				 8, RNICPI_SEND_SIGNALED, base, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 8, RNICPI_WC_REM_ACCESS_ERR,
		    RNICPI_WC_RDMA_READ, 0);
	expect_terminate(&f.p, TERM_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			 RDMAP_ECODE_INVALID_STAG);
	ck_assert(h_buf_check(&f.dst, 0, 64, 9, 0));
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);
}
END_TEST

/* A type 2 window bound twice, a window with remote atomic (iWARP has
 * none), a type 1 window of another PD's QP: MW_BIND_ERR, and the QP
 * goes to error as with any failed local operation. */
START_TEST(test_mw_bind_errors)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	uint32_t key;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_2, &mw));
	ck_assert_errno(f.p.db->ops->alloc_mw(f.p.b.pd, (enum rnicpi_mw_type)3,
					      &mw), EINVAL);
	key = mw->rkey;
	post_bind(&f.p.b, 1, mw, next_key(key, 0x66), &f.win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_ATOMIC);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_MW_BIND_ERR,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_uint_eq(mw->rkey, key);
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_2, &mw));
	key = next_key(mw->rkey, 0x67);
	post_bind(&f.p.b, 1, mw, key, &f.win, 0, 4096,
		  RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	post_bind(&f.p.b, 2, mw, next_key(key, 0x68), &f.win, 0, 64,
		  RNICPI_ACCESS_REMOTE_READ);
	h_expect_wc(&f.p.b, f.p.b.scq, 2, RNICPI_WC_MW_BIND_ERR,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_uint_eq(mw->rkey, key);
	/* Still bound: the region is busy until dealloc. */
	ck_assert_errno(f.p.db->ops->dereg_mr(f.win.mr), EBUSY);
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);

	/* Remote write through a window onto a region without local
	 * write. */
	fix_up(&f);
	ck_assert_ok(f.p.db->ops->dereg_mr(f.win.mr));
	h_buf_reg(&f.win, &f.p.b, RNICPI_ACCESS_MW_BIND);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_1, &mw));
	post_bind(&f.p.b, 1, mw, next_key(mw->rkey, 0x69), &f.win, 0, 64,
		  RNICPI_ACCESS_REMOTE_WRITE);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_MW_BIND_ERR,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);
}
END_TEST

/* Zero-based (RNICPI_ACCESS_ZERO_BASED in the bind): the peer's tagged
 * offsets count from the window's first byte. */
START_TEST(test_mw_zero_based)
{
	struct mw_fix f;
	struct rnicpi_mw *mw;
	uint32_t key;

	fix_up(&f);
	ck_assert_ok(f.p.db->ops->alloc_mw(f.p.b.pd, RNICPI_MW_TYPE_1, &mw));
	key = next_key(mw->rkey, 0x77);
	post_bind(&f.p.b, 1, mw, key, &f.win, 1024, 1024,
		  RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_REMOTE_READ |
		  RNICPI_ACCESS_ZERO_BASED);
	h_expect_wc(&f.p.b, f.p.b.scq, 1, RNICPI_WC_SUCCESS,
		    RNICPI_WC_BIND_MW, 0);
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 100,
				 2, RNICPI_SEND_SIGNALED, 100, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 2, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_WRITE, 100);
	write_landed(&f, 102);
	ck_assert(memcmp(f.win.p + 1124, f.src.p, 100) == 0);
	ck_assert(all_zero(f.win.p, 0, 1124));
	ck_assert(all_zero(f.win.p, 1224, 4096));
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_READ, &f.dst, 0, 100,
				 3, RNICPI_SEND_SIGNALED, 100, key));
	h_expect_wc(&f.p.a, f.p.a.scq, 3, RNICPI_WC_SUCCESS,
		    RNICPI_WC_RDMA_READ, 100);
	ck_assert(memcmp(f.dst.p, f.src.p, 100) == 0);
	/* TO 1000 + 100 bytes: past the window's 1024. */
	ck_assert_ok(h_post_send(&f.p.a, RNICPI_WR_RDMA_WRITE, &f.src, 0, 100,
				 4, RNICPI_SEND_SIGNALED, 1000, key));
	expect_terminate(&f.p, TERM_LAYER_DDP, DDP_ETYPE_TAGGED,
			 DDP_ECODE_T_BASE_BOUNDS);
	ck_assert(all_zero(f.win.p, 1224, 4096));
	ck_assert_ok(f.p.db->ops->dealloc_mw(mw));
	fix_down(&f);
}
END_TEST

void siw_loopback_add_window_tests(TCase *tc)
{
	tcase_add_test(tc, test_mw_type1);
	tcase_add_test(tc, test_mw_bounds);
	tcase_add_test(tc, test_mw_unbound);
	tcase_add_test(tc, test_mw_type2_invalidate);
	tcase_add_test(tc, test_mw_bind_errors);
	tcase_add_test(tc, test_mw_zero_based);
}
