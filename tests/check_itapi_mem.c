/* SPDX-License-Identifier: MIT */
/*
 * IT-API memory: LMRs from a plain buffer and from I/O buffer lists, the
 * 1.0/2.0 forms, relative addressing, query, modify, free; it_mem_map;
 * flush/refresh; RMRs (memory windows) on the test provider, which has
 * type 1 windows, and their absence on siw.
 */
#include "config.h"

#include <unistd.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#include "tests/suites.h"

static struct it_fix F;

static void setup(void)
{
	it_setup_testprov();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

static void setup_siw(void)
{
	it_setup_siw();
	it_fix_open(&F);
}

START_TEST(lmr_plain)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *mem = g_malloc(3 * page);
	it_lmr_handle_t lmr = NULL;
	it_rmr_context_t rkey = 0;
	it_ia_info_t *info = NULL;
	it_lmr_param_t p;
	bool relative;

	ck_assert_it_ok(it_lmr_create21(F.pz, mem + 100, NULL, page,
					IT_ADDR_MODE_ABSOLUTE,
					IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE,
					IT_LMR_FLAG_NONE, 0, &lmr, &rkey));
	ck_assert_uint_ne(rkey, 0);
	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &p));
	ck_assert_ptr_eq(p.ia, F.ia);
	ck_assert_ptr_eq(p.pz, F.pz);
	ck_assert_ptr_eq(p.addr, mem + 100);
	ck_assert_uint_eq(p.length, page);
	ck_assert_int_eq(p.privs, IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE);
	ck_assert_uint_eq(p.rmr_context, rkey);
	ck_assert_int_eq(p.addr_mode, IT_ADDR_MODE_ABSOLUTE);
	ck_assert(p.linked);
	ck_assert_uint_eq(p.iobl_num_elts, 0);
	/* Whole pages are registered. */
	ck_assert_uint_eq((uintptr_t)p.actual_addr % page, 0);
	ck_assert_uint_le((uintptr_t)p.actual_addr, (uintptr_t)mem + 100);
	ck_assert_uint_ge((uintptr_t)p.actual_addr + p.actual_length,
			  (uintptr_t)mem + 100 + page);
	ck_assert_uint_eq(p.actual_length % page, 0);
	ck_assert_it(it_lmr_query(lmr, (it_lmr_param_mask_t)0x8000, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_lmr_query(lmr, IT_LMR_PARAM_ALL, NULL), IT_ERR_FAULT);
	ck_assert_it_ok(it_lmr_free(lmr));
	ck_assert_it(it_lmr_free(lmr), IT_ERR_INVALID_LMR);
	ck_assert_it(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &p),
		     IT_ERR_INVALID_LMR);
	/* The 1.0 and 2.0 forms. */
	ck_assert_it_ok(it_lmr_create10(F.pz, mem, page, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ADDR_MODE, &p));
	ck_assert_int_eq(p.addr_mode, IT_ADDR_MODE_ABSOLUTE);
	ck_assert_it_ok(it_lmr_free(lmr));
	/* Relative addressing where the IA has it (it_ia_query; a verbs
	 * device: not yet), refused otherwise. */
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	relative = info->addr_mode_relative_support;
	it_ia_info_free(info);
	if (!relative) {
		ck_assert_it(it_lmr_create20(F.pz, mem, page,
					     IT_ADDR_MODE_RELATIVE,
					     IT_PRIV_LOCAL, IT_LMR_FLAG_NONE,
					     0, &lmr, NULL),
			     IT_ERR_INVALID_ADDR_MODE);
		g_free(mem);
		return;
	}
	ck_assert_it_ok(it_lmr_create20(F.pz, mem, page,
					IT_ADDR_MODE_RELATIVE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ADDR_MODE, &p));
	ck_assert_int_eq(p.addr_mode, IT_ADDR_MODE_RELATIVE);
	ck_assert_it_ok(it_lmr_free(lmr));
	g_free(mem);
}
END_TEST

START_TEST(lmr_errors)
{
	unsigned char mem[256];
	it_lmr_handle_t lmr = NULL;
	it_ia_info_t *info = NULL;
	bool atomics, links;

	ck_assert_it(it_lmr_create21(NULL, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_PZ);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, NULL, NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_lmr_create21(F.pz, NULL, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_ADDRESS);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 0,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE,
				     (it_mem_priv_t)0x40, IT_LMR_FLAG_NONE, 0,
				     &lmr, NULL),
		     IT_ERR_INVALID_PRIVS);
	/* Atomic rights where the IA has no atomics (the test provider). */
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	atomics = info->atomic_support;
	links = info->lmr_link_support;
	it_ia_info_free(info);
	if (!atomics)
		ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
					     IT_ADDR_MODE_ABSOLUTE,
					     IT_PRIV_ALL, IT_LMR_FLAG_NONE, 0,
					     &lmr, NULL),
			     IT_ERR_INVALID_PRIVS);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     (it_addr_mode_t)5, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_ADDR_MODE);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     (it_lmr_flag_t)0x100, 0, &lmr, NULL),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     (it_lmr_flag_t)(IT_LMR_FLAG_SHARED |
						     IT_LMR_FLAG_NON_SHAREABLE),
				     0, &lmr, NULL),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_lmr_create21(F.pz, mem, NULL, 256,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_SHARED, 7, &lmr, NULL),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_ptr_null(lmr);
	/* The test provider has no fast registration (RNICPI_DEV_CAP_FAST_REG;
	 * soft-iWARP's and soft-RoCE's links are in itapi-keys): neither has
	 * an IA that does not claim lmr_link_support. */
	if (!links)
		ck_assert_it(it_lmr_create_unlinked(F.pz, 4, IT_LMR_FLAG_NONE,
						    0, &lmr),
			     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(it_lmr_create_unlinked(NULL, 4, IT_LMR_FLAG_NONE, 0,
					    &lmr),
		     IT_ERR_INVALID_PZ);
}
END_TEST

START_TEST(lmr_iobl)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *mem = aligned_alloc(page, 4 * page);
	it_io_addr_t io = NULL, pages[3];
	it_iobl_ve_elt_t ve[3];
	it_iobl_t iobl = { 0 };
	it_lmr_handle_t lmr = NULL;
	it_lmr_param_t p;
	size_t mapped = 0;

	/* I/O addresses are virtual addresses here. */
	ck_assert_it_ok(it_mem_map(F.ia, mem, 0, 4 * page, &io, &mapped));
	ck_assert_ptr_eq(io, (it_io_addr_t)mem);
	ck_assert_uint_eq(mapped, 4 * page);
	ck_assert_it(it_mem_map(F.ia, mem, 1, page, &io, &mapped),
		     IT_ERR_INVALID_ADDRESS);
	ck_assert_it(it_mem_map(F.ia, NULL, 0, page, &io, &mapped),
		     IT_ERR_INVALID_ADDRESS);
	ck_assert_it(it_mem_map(F.ia, mem, 0, 0, &io, &mapped),
		     IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_mem_map(NULL, mem, 0, page, &io, &mapped),
		     IT_ERR_INVALID_IA);

	/* Variable elements, contiguous, with a first byte offset. */
	ve[0].io_addr = io;
	ve[0].elt_len = 1000;
	ve[1].io_addr = (it_io_addr_t)(mem + 1000);
	ve[1].elt_len = 3000;
	ve[2].io_addr = (it_io_addr_t)(mem + 4000);
	ve[2].elt_len = 500;
	iobl.iobl_type = IT_IOBL_VE_PAGE_LIST;
	iobl.list.ve_list.list_elt = ve;
	iobl.num_elts = 3;
	iobl.fbo = 24;
	ck_assert_it_ok(it_lmr_create21(F.pz, NULL, &iobl, 4476,
					IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &p));
	ck_assert_ptr_eq(p.addr, mem + 24);
	ck_assert_uint_eq(p.length, 4476);
	ck_assert_uint_eq(p.iobl_num_elts, 3);
	ck_assert_int_eq(p.iobl_type, IT_IOBL_VE_PAGE_LIST);
	/* Modify applies to plain buffers only. */
	p.privs = IT_PRIV_LOCAL_READ;
	ck_assert_it(it_lmr_modify(lmr, IT_LMR_PARAM_MEM_PRIV, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it_ok(it_lmr_free(lmr));
	/* Past the list. */
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 4477,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_LENGTH);
	/* A gap between elements: refused, naming the element. */
	ve[2].io_addr = (it_io_addr_t)(mem + 4001);
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 100,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_IOBL);
	ve[2].io_addr = (it_io_addr_t)(mem + 4000);
	iobl.fbo = 4500;
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 1,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_IOBL);
	iobl.fbo = 0;
	ck_assert_it(it_lmr_create21(F.pz, mem, &iobl, 100,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_ADDRESS);
	iobl.num_elts = 0;
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 100,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_IOBL);

	/* A page list: aligned pages of one size. */
	for (int i = 0; i < 3; i++)
		pages[i] = (it_io_addr_t)(mem + (size_t)i * page);
	memset(&iobl, 0, sizeof(iobl));
	iobl.iobl_type = IT_IOBL_PAGE_LIST;
	iobl.list.ce_list.list_elt = pages;
	iobl.list.ce_list.elt_len = page;
	iobl.num_elts = 3;
	ck_assert_it_ok(it_lmr_create21(F.pz, NULL, &iobl, 3 * page,
					IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ADDR, &p));
	ck_assert_ptr_eq(p.addr, mem);
	ck_assert_it_ok(it_lmr_free(lmr));
	pages[0] = (it_io_addr_t)(mem + 8);
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 100,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_IOBL);
	iobl.iobl_type = (it_iobl_type_t)0x80;
	ck_assert_it(it_lmr_create21(F.pz, NULL, &iobl, 100,
				     IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
				     IT_LMR_FLAG_NONE, 0, &lmr, NULL),
		     IT_ERR_INVALID_IOBL);
	ck_assert_it_ok(it_mem_unmap(F.ia, io, mapped));
	ck_assert_it(it_mem_unmap(F.ia, NULL, mapped), IT_ERR_INVALID_ADDRESS);
	free(mem);
}
END_TEST

START_TEST(lmr_modify_flush)
{
	struct it_buf b;
	it_lmr_param_t p = { 0 };
	it_lmr_triplet_t t;
	it_rmr_context_t before;

	it_buf_new(&F, &b, 8192, IT_PRIV_LOCAL);
	before = b.rkey;
	p.privs = IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ;
	ck_assert_it_ok(it_lmr_modify(b.lmr, IT_LMR_PARAM_MEM_PRIV, &p));
	ck_assert_it_ok(it_lmr_query(b.lmr, IT_LMR_PARAM_ALL, &p));
	ck_assert_int_eq(p.privs, IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
	/* Re-registration changes the key (a stale key stops working). */
	ck_assert_uint_ne(p.rmr_context, before);
	p.length = 4096;
	ck_assert_it_ok(it_lmr_modify(b.lmr, IT_LMR_PARAM_LENGTH, &p));
	ck_assert_it_ok(it_lmr_query(b.lmr, IT_LMR_PARAM_LENGTH, &p));
	ck_assert_uint_eq(p.length, 4096);
	ck_assert_it(it_lmr_modify(b.lmr, IT_LMR_PARAM_PZ, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_lmr_modify(b.lmr, (it_lmr_param_mask_t)0, &p),
		     IT_ERR_INVALID_MASK);
	p.length = 0;
	ck_assert_it(it_lmr_modify(b.lmr, IT_LMR_PARAM_LENGTH, &p),
		     IT_ERR_INVALID_LENGTH);
	p.privs = (it_mem_priv_t)0x80;
	ck_assert_it(it_lmr_modify(b.lmr, IT_LMR_PARAM_MEM_PRIV, &p),
		     IT_ERR_INVALID_PRIVS);

	/* Coherent memory: flush and refresh check the segments only. */
	t = it_seg(&b, 100, 1000);
	ck_assert_it_ok(it_lmr_flush_to_mem(&t, 1));
	ck_assert_it_ok(it_lmr_refresh_from_mem(&t, 1));
	t = it_seg(&b, 4000, 200);
	ck_assert_it(it_lmr_flush_to_mem(&t, 1), IT_ERR_RANGE);
	ck_assert_it(it_lmr_refresh_from_mem(NULL, 1), IT_ERR_FAULT);
	t.lmr = (it_lmr_handle_t)&t;
	ck_assert_it(it_lmr_flush_to_mem(&t, 1), IT_ERR_INVALID_LMR);
	it_buf_free(&b);
}
END_TEST

/* Send through relative addressing: segments name offsets. */
START_TEST(lmr_relative_send)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	unsigned char *src = g_malloc0(512), *dst = g_malloc0(512);
	it_lmr_handle_t ls, ld;
	it_lmr_triplet_t t;
	it_event_t ev;

	it_testprov_pair(a, b);
	ck_assert_it_ok(it_lmr_create21(F.pz, src, NULL, 512,
					IT_ADDR_MODE_RELATIVE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &ls, NULL));
	ck_assert_it_ok(it_lmr_create21(F.pz, dst, NULL, 512,
					IT_ADDR_MODE_RELATIVE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &ld, NULL));
	memcpy(src + 200, "relative", 8);
	t.lmr = ld;
	t.addr.rel = 300;
	t.length = 100;
	ck_assert_it_ok(it_post_recv(b, &t, 1, 1, IT_COMPLETION_FLAG));
	t.lmr = ls;
	t.addr.rel = 200;
	t.length = 8;
	ck_assert_it_ok(it_post_send(a, &t, 1, 2, IT_COMPLETION_FLAG));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_SEND_CMPL_EVENT);
	ck_assert_int_eq(memcmp(dst + 300, "relative", 8), 0);
	ck_assert_uint_eq(dst[299], 0);
	ck_assert_uint_eq(dst[308], 0);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_lmr_free(ls));
	ck_assert_it_ok(it_lmr_free(ld));
	g_free(src);
	g_free(dst);
}
END_TEST

/* ------------------------------------------------------------------ */
/* RMRs                                                                */
/* ------------------------------------------------------------------ */

START_TEST(rmr_link_write_unlink)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	struct it_buf target, src;
	it_rmr_handle_t rmr = NULL;
	it_rmr_context_t ctx = 0;
	it_rmr_param_t p;
	it_lmr_triplet_t t;
	it_event_t ev;

	it_testprov_pair(a, b);
	it_buf_new(&F, &target, 4096, IT_PRIV_LOCAL);
	it_buf_new(&F, &src, 64, IT_PRIV_LOCAL);
	ck_assert_it(it_rmr_create20(F.pz, IT_RMR_TYPE_NARROW, &rmr),
		     IT_ERR_INVALID_RMR_TYPE);
	ck_assert_it(it_rmr_create20(F.pz, (it_rmr_type_t)7, &rmr),
		     IT_ERR_INVALID_RMR_TYPE);
	ck_assert_it(it_rmr_create20(F.pz, IT_RMR_TYPE_WIDE, NULL),
		     IT_ERR_FAULT);
	ck_assert_it_ok(it_rmr_create10(F.pz, &rmr));
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &p));
	ck_assert_int_eq(p.type, IT_RMR_TYPE_WIDE);
	ck_assert(!p.linked);

	/* Link bytes 1024..2047 of the target for remote write. */
	ck_assert_it(it_rmr_link(rmr, target.lmr, target.mem + 4000, 200,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
				 b, 5, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_RANGE);
	ck_assert_it(it_rmr_link(rmr, target.lmr, target.mem + 1024, 1024,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
				 b, 5, IT_COMPLETION_FLAG, NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_rmr_link(rmr, target.lmr, target.mem + 1024, 1024,
				 (it_addr_mode_t)2, IT_PRIV_REMOTE_WRITE,
				 b, 5, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_ADDR_MODE);
	ck_assert_it_ok(it_rmr_link(rmr, target.lmr, target.mem + 1024, 1024,
				    IT_ADDR_MODE_ABSOLUTE,
				    IT_PRIV_REMOTE_WRITE, b, 5,
				    IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
				    &ctx));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_RMR_LINK_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 5);
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &p));
	ck_assert(p.linked);
	ck_assert_uint_eq(p.rmr_context, ctx);
	ck_assert_ptr_eq(p.lmr, target.lmr);
	ck_assert_ptr_eq(p.addr, target.mem + 1024);
	ck_assert_uint_eq(p.length, 1024);
	/* Linked twice is refused; the region is busy while linked. */
	ck_assert_it(it_rmr_link(rmr, target.lmr, target.mem, 10,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
				 b, 5, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_RMR);
	ck_assert_it(it_lmr_free(target.lmr), IT_ERR_LMR_BUSY);

	/* (The test provider resolves only region keys in RDMA requests,
	 * so data through the window is not exercised here.) The region's
	 * own key carries its own rights: none remote. */
	memset(src.mem, 0x5a, 64);
	t = it_seg(&src, 0, 64);
	ck_assert_it_ok(it_post_rdma_write(a, &t, 1, 8,
					   IT_COMPLETION_FLAG,
					   (uintptr_t)target.mem, target.rkey));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_WRITE_CMPL_EVENT);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_ERR_REMOTE_ACCESS);
	ck_assert_uint_eq(target.mem[0], 0);

	ck_assert_it_ok(it_rmr_unlink(rmr, b, 9,
				      IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_RMR_LINK_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 9);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &p));
	ck_assert(!p.linked);
	ck_assert_it(it_rmr_unlink(rmr, b, 10, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_RMR);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it(it_rmr_free(rmr), IT_ERR_INVALID_RMR);
	it_buf_free(&target);
	it_buf_free(&src);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
}
END_TEST

START_TEST(rmr_link_errors)
{
	it_ep_handle_t a = it_ep_new(&F);
	struct it_buf ro;
	it_rmr_handle_t rmr;
	it_rmr_context_t ctx;

	it_buf_new(&F, &ro, 256, IT_PRIV_LOCAL_READ);
	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &rmr));
	/* Remote write through a region without local write. */
	ck_assert_it(it_rmr_link(rmr, ro.lmr, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_WRITE,
				 a, 1, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_PRIVS);
	/* An endpoint that is not connected. */
	ck_assert_it(it_rmr_link(rmr, ro.lmr, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
				 a, 1, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_rmr_link(rmr, (it_lmr_handle_t)&ctx, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
				 a, 1, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_LMR);
	ck_assert_it(it_rmr_link(rmr, ro.lmr, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
				 (it_ep_handle_t)&ctx, 1, IT_COMPLETION_FLAG,
				 &ctx),
		     IT_ERR_INVALID_EP);
	ck_assert_it(it_rmr_link(rmr, ro.lmr, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
				 a, 1, IT_SOLICITED_WAIT_FLAG, &ctx),
		     IT_ERR_INVALID_DTO_FLAGS);
	ck_assert_it(it_rmr_unlink(rmr, a, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_rmr_link(NULL, ro.lmr, ro.mem, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_REMOTE_READ,
				 a, 1, IT_COMPLETION_FLAG, &ctx),
		     IT_ERR_INVALID_RMR);
	ck_assert_it_ok(it_rmr_free(rmr));
	it_buf_free(&ro);
	ck_assert_it_ok(it_ep_free(a));
	/* LMR links: not on the test provider (no RNICPI_DEV_CAP_FAST_REG). */
	it_buf_new(&F, &ro, 256, IT_PRIV_LOCAL);
	ck_assert_it(it_lmr_link(ro.lmr, ro.mem, NULL, 16,
				 IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL, NULL,
				 0, 0, &ctx),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(it_lmr_unlink(ro.lmr, NULL, 0, 0),
		     IT_ERR_OP_NOT_SUPPORTED);
	it_buf_free(&ro);
}
END_TEST

/* siw has memory windows of both types (vp/siw/siw_mw.c); bytes through
 * them are in itapi-keys. Here: creation, the default type, query. */
START_TEST(rmr_siw_types)
{
	it_rmr_handle_t rmr = NULL, wide = NULL, r10 = NULL;
	it_rmr_param_t p;

	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &rmr));
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &p));
	ck_assert_int_eq(p.type, IT_RMR_TYPE_NARROW);
	ck_assert(!p.linked);
	ck_assert_it_ok(it_rmr_create10(F.pz, &r10));
	ck_assert_it_ok(it_rmr_query(r10, IT_RMR_PARAM_TYPE, &p));
	ck_assert_int_eq(p.type, IT_RMR_TYPE_NARROW);
	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_WIDE, &wide));
	ck_assert_it_ok(it_rmr_query(wide, IT_RMR_PARAM_ALL, &p));
	ck_assert_int_eq(p.type, IT_RMR_TYPE_WIDE);
	ck_assert_it(it_rmr_create20(F.pz, (it_rmr_type_t)7, &rmr),
		     IT_ERR_INVALID_RMR_TYPE);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_rmr_free(wide));
	ck_assert_it_ok(it_rmr_free(r10));
}
END_TEST

Suite *suite_itapi_mem(void)
{
	Suite *s = suite_create("itapi-mem");
	TCase *tc = tcase_create("testprov");
	TCase *siw = tcase_create("siw");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lmr_plain);
	tcase_add_test(tc, lmr_errors);
	tcase_add_test(tc, lmr_iobl);
	tcase_add_test(tc, lmr_modify_flush);
	tcase_add_test(tc, lmr_relative_send);
	tcase_add_test(tc, rmr_link_write_unlink);
	tcase_add_test(tc, rmr_link_errors);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(siw, setup_siw, teardown);
	tcase_add_test(siw, rmr_siw_types);
	suite_add_tcase(s, siw);
	return s;
}

/*
 * The conformance runner's itapi-mem: the "testprov" test case's cases
 * that need no second endpoint, on the device under test (it_setup_siw
 * names it there), and rmr_siw_types on a device with both window types.
 * Left out: lmr_relative_send and rmr_link_write_unlink (their endpoints
 * are paired through the test provider's QP numbers: it_testprov_pair),
 * rmr_link_errors (it asserts the test provider's lack of fast
 * registration; windows over a device: the runner's test_rmr_window).
 */
Suite *suite_itapi_mem_device(bool windows)
{
	Suite *s = suite_create("itapi-mem");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup_siw, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lmr_plain);
	tcase_add_test(tc, lmr_errors);
	tcase_add_test(tc, lmr_iobl);
	tcase_add_test(tc, lmr_modify_flush);
	if (windows)
		tcase_add_test(tc, rmr_siw_types);
	suite_add_tcase(s, tc);
	return s;
}
