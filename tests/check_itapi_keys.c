/* SPDX-License-Identifier: MIT */
/*
 * LMR keys against a live peer, over soft-iWARP (itapi-keys) and soft-RoCE
 * (itapi-keys-rxe), with two endpoints of one IA connected on loopback:
 * every registration has keys of its own, so freeing an LMR or
 * invalidating its key revokes that registration's access and nobody
 * else's, even when another LMR covers the same bytes with the same
 * privileges; and memory mapped anew where registered memory was is
 * registered afresh.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kal/kal.h"
#include "tests/testutil_itapi_pair.h"	/* F, A writes into B's memory */
#include "tests/suites.h"

#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define PRIV_TARGET                                                         \
	((it_mem_priv_t)(IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE |             \
			 IT_PRIV_REMOTE_READ))
#define TLEN 4096u

static struct it_buf S, M;	/* A's source, the Sends' message buffer */

static void bufs_new(void)
{
	it_buf_new(&F, &S, TLEN, IT_PRIV_LOCAL);
	it_buf_new(&F, &M, 256, IT_PRIV_LOCAL);
}

static void bufs_free(void)
{
	it_buf_free(&S);
	it_buf_free(&M);
}

static void setup_siw(void)
{
	tu_itapi_pair_setup_siw();
	bufs_new();
}

static void teardown(void)
{
	bufs_free();
	tu_itapi_pair_teardown();
}

#ifdef HAVE_PROV_RXE
static void setup_rxe(void)
{
	tu_itapi_pair_setup_rxe();
	bufs_new();
}

static void teardown_rxe(void)
{
	bufs_free();
	tu_itapi_pair_teardown_rxe();
}
#endif

/* @len bytes of page-aligned memory filled with 0xee (free()). */
static unsigned char *target_new(size_t len)
{
	void *t = NULL;

	ck_assert_int_eq(posix_memalign(&t, (size_t)sysconf(_SC_PAGESIZE),
					len),
			 0);
	return memset(t, 0xee, len);
}

static it_lmr_handle_t lmr_new(void *mem, size_t len, it_rmr_context_t *key)
{
	it_lmr_handle_t lmr = NULL;

	ck_assert_it_ok(it_lmr_create21(F.pz, mem, NULL, len,
					IT_ADDR_MODE_ABSOLUTE, PRIV_TARGET,
					IT_LMR_FLAG_NONE, 0, &lmr, key));
	return lmr;
}

/* The next DTO event, which must be @type with @cookie and @status. */
static void expect_dto(it_event_type_t type, it_dto_cookie_t cookie,
		       it_dto_status_t status)
{
	it_event_t ev;

	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, type);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, cookie);
	ck_assert_msg(ev.dto_cmpl.dto_status == status,
		      "cookie %llu: DTO status %d, expected %d",
		      (unsigned long long)cookie, ev.dto_cmpl.dto_status,
		      status);
}

/* Wait for the next completion of each cookie in @cookies (any order:
 * A's and B's queues complete independently), all successful. */
static void expect_all_ok(const it_dto_cookie_t *cookies, int n)
{
	bool got[8] = { false };

	ck_assert_int_le(n, 8);
	for (int i = 0; i < n; i++) {
		it_event_t ev;
		int j;

		it_wait_event(F.dto, &ev);
		for (j = 0; j < n; j++)
			if (!got[j] && cookies[j] == ev.dto_cmpl.cookie)
				break;
		ck_assert_msg(j < n, "unexpected %s cookie %llu",
			      itapi_event_name(ev.event_number),
			      (unsigned long long)ev.dto_cmpl.cookie);
		ck_assert_msg(ev.dto_cmpl.dto_status == IT_DTO_SUCCESS,
			      "cookie %llu: DTO status %d",
			      (unsigned long long)cookies[j],
			      ev.dto_cmpl.dto_status);
		got[j] = true;
	}
}

/*
 * A writes @len bytes of a pattern (@seed) through @key at @dst; a Send
 * behind the Write, once received, says it was placed (RFC 5040 §5.5,
 * IBA 9.5: in order). Then exactly those bytes of @mem (@mem_len long)
 * changed.
 */
static void write_lands_at(it_rmr_context_t key, unsigned char *mem,
			   size_t mem_len, unsigned char *dst,
			   it_rdma_addr_t raddr, size_t len, unsigned int seed,
			   it_dto_cookie_t c)
{
	g_autofree unsigned char *before = g_memdup2(mem, mem_len);
	it_lmr_triplet_t t;
	const it_dto_cookie_t cookies[] = { c, c + 1, c + 2 };

	for (size_t i = 0; i < len; i++)
		S.mem[i] = (unsigned char)(i * 13 + seed);
	t = it_seg(&M, 128, 64);
	ck_assert_it_ok(it_post_recv(B, &t, 1, c + 2, CN));
	t = it_seg(&S, 0, len);
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, c, CN, raddr, key));
	t = it_seg(&M, 0, 1);
	ck_assert_it_ok(it_post_send(A, &t, 1, c + 1, CN));
	expect_all_ok(cookies, 3);
	for (size_t i = 0; i < mem_len; i++) {
		bool in = mem + i >= dst && mem + i < dst + len;
		unsigned char want = in ? S.mem[mem + i - dst] : before[i];

		ck_assert_msg(mem[i] == want,
			      "byte %zu is 0x%02x, expected 0x%02x (key 0x%llx)",
			      i, mem[i], want, (unsigned long long)key);
	}
}

static void write_lands(it_rmr_context_t key, unsigned char *mem,
			size_t mem_len, unsigned char *dst, size_t len,
			unsigned int seed, it_dto_cookie_t c)
{
	write_lands_at(key, mem, mem_len, dst, it_make_rdma_addr_absolute(dst),
		       len, seed, c);
}

/*
 * A writes through @key at @dst and the target refuses: IB answers with a
 * remote access NAK (IBA 9.7.5.2.4), the Write completes with
 * IT_DTO_ERR_REMOTE_ACCESS; iWARP's Write completes when it has left, and
 * the target's Terminate (RFC 5040 §7.4: remote protection error, invalid
 * STag) comes back as an access violation on A. Either way nothing of
 * @mem changes and the connection is over.
 */
static void write_refused_at(it_rmr_context_t key, unsigned char *mem,
			     size_t mem_len, it_rdma_addr_t raddr,
			     it_dto_cookie_t c)
{
	g_autofree unsigned char *before = g_memdup2(mem, mem_len);
	it_lmr_triplet_t t = it_seg(&S, 0, 64);
	it_event_t ev;

	memset(S.mem, 0x77, 64);
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, c, CN, raddr, key));
	if (it_env_is_rxe()) {
		expect_dto(IT_DTO_RDMA_WRITE_CMPL_EVENT, c,
			   IT_DTO_ERR_REMOTE_ACCESS);
	} else {
		expect_dto(IT_DTO_RDMA_WRITE_CMPL_EVENT, c, IT_DTO_SUCCESS);
		do {
			it_wait_event(F.aff, &ev);
		} while (ev.aff_async.cause.ep != A);
		ck_assert_event(&ev, IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION);
	}
	ck_assert_msg(memcmp(mem, before, mem_len) == 0,
		      "a refused Write (key 0x%llx) changed the target",
		      (unsigned long long)key);
}

static void write_refused(it_rmr_context_t key, unsigned char *mem,
			  size_t mem_len, unsigned char *dst, it_dto_cookie_t c)
{
	write_refused_at(key, mem, mem_len, it_make_rdma_addr_absolute(dst),
			 c);
}

/*
 * Issue 11/2: two LMRs on one range with the same privileges are two
 * registrations. Freeing one revokes its key, not the other's.
 */
START_TEST(freed_lmr_revokes_its_key)
{
	unsigned char *t = target_new(TLEN);
	it_rmr_context_t k1, k2;
	it_lmr_handle_t l1 = lmr_new(t, TLEN, &k1);
	it_lmr_handle_t l2 = lmr_new(t, TLEN, &k2);

	ck_assert_msg(k1 != k2, "both LMRs got key 0x%llx",
		      (unsigned long long)k1);
	write_lands(k1, t, TLEN, t + 100, 200, 1, 10);
	write_lands(k2, t, TLEN, t + 1000, 300, 2, 20);
	ck_assert_it_ok(it_lmr_free(l1));
	write_lands(k2, t, TLEN, t + 2000, 300, 3, 30);
	write_refused(k1, t, TLEN, t + 3000, 40);
	ck_assert_it_ok(it_lmr_free(l2));
	free(t);
}
END_TEST

/*
 * Issue 11/2: a Send with Invalidate of one LMR's key (RFC 5040 §6.10,
 * IBA 10.6.6) leaves the other LMR on the same range working.
 */
START_TEST(invalidate_revokes_one_key)
{
	unsigned char *t = target_new(TLEN);
	it_rmr_context_t k1, k2;
	it_lmr_handle_t l1 = lmr_new(t, TLEN, &k1);
	it_lmr_handle_t l2 = lmr_new(t, TLEN, &k2);
	it_lmr_triplet_t seg;
	const it_dto_cookie_t cookies[] = { 50, 51 };

	ck_assert_uint_ne(k1, k2);
	seg = it_seg(&M, 128, 64);
	ck_assert_it_ok(it_post_recv(B, &seg, 1, 50, CN));
	seg = it_seg(&M, 0, 8);
	ck_assert_it_ok(it_post_send_and_unlink(A, &seg, 1, 51, CN, k1));
	expect_all_ok(cookies, 2);
	write_lands(k2, t, TLEN, t + 500, 100, 4, 60);
	write_refused(k1, t, TLEN, t + 1500, 70);
	ck_assert_it_ok(it_lmr_free(l1));
	ck_assert_it_ok(it_lmr_free(l2));
	free(t);
}
END_TEST

static void assert_pinned(const unsigned char *mem, size_t len, bool pinned)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < len; off += pg) {
		struct tu_page_state st = tu_page_state(mem + off);

		ck_assert_msg((!TU_MLOCK_VISIBLE || st.locked == pinned) &&
				      st.dontfork == pinned,
			      "page at +%zu: locked %d, dontfork %d, expected "
			      "%d", off, st.locked, st.dontfork, pinned);
	}
}

/*
 * Issue 11/4: registered memory unmapped and mapped anew at the same
 * address (which it_api(3) tells applications not to do: free the LMR
 * first). A new registration of the range is registered afresh: new keys,
 * the new pages locked and MADV_DONTFORK, a peer's Write lands in them,
 * kal counts the range once; freeing the stale LMR leaves the new one's
 * pages pinned.
 */
START_TEST(remapped_range_registered_afresh)
{
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	uint64_t base = kal_pinned_bytes();
	it_rmr_context_t k_old, k_new;
	it_lmr_handle_t stale, lmr;
	unsigned char *mem, *again;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(mem != MAP_FAILED);
	memset(mem, 0x11, len);
	stale = lmr_new(mem, len, &k_old);
	assert_pinned(mem, len, true);
	ck_assert_uint_eq(kal_pinned_bytes(), base + len);

	ck_assert_int_eq(munmap(mem, len), 0);
	again = mmap(mem, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ck_assert_ptr_eq(again, mem);
	memset(mem, 0xee, len);
	assert_pinned(mem, len, false);

	lmr = lmr_new(mem, len, &k_new);
	ck_assert_uint_ne(k_new, k_old);
	assert_pinned(mem, len, true);
	ck_assert_uint_eq(kal_pinned_bytes(), base + len);
	write_lands(k_new, mem, len, mem + len / 2 - 100, 300, 5, 80);

	ck_assert_it_ok(it_lmr_free(stale));
	assert_pinned(mem, len, true);
	ck_assert_uint_eq(kal_pinned_bytes(), base + len);
	write_lands(k_new, mem, len, mem + 10, 50, 6, 90);

	ck_assert_it_ok(it_lmr_free(lmr));
	assert_pinned(mem, len, false);
	ck_assert_uint_eq(kal_pinned_bytes(), base);
	munmap(mem, len);
}
END_TEST

/* ------------------------------------------------------------------ */
/* RMRs (memory windows) against the live peer                         */
/* ------------------------------------------------------------------ */

/* The window's region: local rights only, so that its own key opens
 * nothing to the peer and every byte it lets in came through a window. */
static it_lmr_handle_t lmr_local(void *mem, size_t len)
{
	it_lmr_handle_t lmr = NULL;
	it_rmr_context_t k;

	ck_assert_it_ok(it_lmr_create21(F.pz, mem, NULL, len,
					IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
					IT_LMR_FLAG_NONE, 0, &lmr, &k));
	return lmr;
}

/* Link @rmr onto @len bytes at @addr of @lmr through B and wait. */
static it_rmr_context_t rmr_link_wait(it_rmr_handle_t rmr, it_lmr_handle_t lmr,
				      void *addr, size_t len,
				      it_addr_mode_t mode, it_mem_priv_t privs,
				      it_dto_cookie_t c)
{
	it_rmr_context_t ctx = 0;

	ck_assert_it_ok(it_rmr_link(rmr, lmr, addr, len, mode, privs, B, c,
				    CN, &ctx));
	expect_dto(IT_RMR_LINK_CMPL_EVENT, c, IT_DTO_SUCCESS);
	return ctx;
}

/* A Read of @len bytes at @raddr through @key into S: they are @want. */
static void read_back(it_rmr_context_t key, it_rdma_addr_t raddr,
		      const unsigned char *want, size_t len, it_dto_cookie_t c)
{
	it_lmr_triplet_t t = it_seg(&S, 0, len);

	memset(S.mem, 0, len);
	ck_assert_it_ok(it_post_rdma_read(A, &t, 1, c, CN, raddr, key));
	expect_dto(IT_DTO_RDMA_READ_CMPL_EVENT, c, IT_DTO_SUCCESS);
	ck_assert(memcmp(S.mem, want, len) == 0);
}

/*
 * Both RMR types over bytes 1024..2047 of a region the peer has no key
 * to: a Write through the window lands there and nowhere else, a Read
 * gets it back, the LMR is busy while linked; unlinked, the window's key
 * is refused (the peer of an iWARP target gets a Terminate).
 */
START_TEST(rmr_window_bytes)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_local(t, TLEN);
	const it_rmr_type_t types[] = { IT_RMR_TYPE_NARROW, IT_RMR_TYPE_WIDE };
	it_rmr_context_t ctx = 0;
	it_rmr_handle_t rmr;

	for (int i = 0; i < 2; i++) {
		it_dto_cookie_t c = 100 + 20 * (it_dto_cookie_t)i;

		ck_assert_it_ok(it_rmr_create20(F.pz, types[i], &rmr));
		ctx = rmr_link_wait(rmr, l, t + 1024, 1024,
				    IT_ADDR_MODE_ABSOLUTE,
				    IT_PRIV_REMOTE_WRITE | IT_PRIV_REMOTE_READ,
				    c);
		write_lands(ctx, t, TLEN, t + 1500 + i, 200, 7 + i, c + 1);
		read_back(ctx, it_make_rdma_addr_absolute(t + 1500 + i),
			  t + 1500 + i, 200, c + 4);
		ck_assert_it(it_lmr_free(l), IT_ERR_LMR_BUSY);
		ck_assert_it_ok(it_rmr_unlink(rmr, B, c + 5, CN));
		expect_dto(IT_RMR_LINK_CMPL_EVENT, c + 5, IT_DTO_SUCCESS);
		ck_assert_it_ok(it_rmr_free(rmr));
	}
	write_refused(ctx, t, TLEN, t + 1500, 150);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* 64 bytes from 2000 run 16 past the window's end: refused, although the
 * region under it has those bytes. */
START_TEST(rmr_outside_refused)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_local(t, TLEN);
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;

	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &rmr));
	ctx = rmr_link_wait(rmr, l, t + 1024, 1024, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_REMOTE_WRITE, 200);
	write_refused(ctx, t, TLEN, t + 2000, 201);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* The peer's Send with Invalidate of a narrow RMR's context (RFC 5040
 * §6.10, IBA 10.6.7.2.4) unlinks it: the receive reports it, the window
 * is refused afterwards. */
START_TEST(rmr_send_and_unlink)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_local(t, TLEN);
	const it_dto_cookie_t cookies[] = { 301, 302 };
	it_lmr_triplet_t seg;
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;

	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_NARROW, &rmr));
	ctx = rmr_link_wait(rmr, l, t, TLEN, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_REMOTE_WRITE, 300);
	write_lands(ctx, t, TLEN, t + 10, 30, 3, 310);
	seg = it_seg(&M, 128, 64);
	ck_assert_it_ok(it_post_recv(B, &seg, 1, 301, CN));
	seg = it_seg(&M, 0, 8);
	ck_assert_it_ok(it_post_send_and_unlink(A, &seg, 1, 302, CN, ctx));
	expect_all_ok(cookies, 2);
	write_refused(ctx, t, TLEN, t + 100, 320);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* IT_ADDR_MODE_RELATIVE: the peer addresses the window from 0 (a
 * zero-based window; iWARP: tagged offsets relative to the window). */
START_TEST(rmr_relative)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_local(t, TLEN);
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;
	it_rmr_param_t p;

	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &rmr));
	ctx = rmr_link_wait(rmr, l, t + 1024, 1024, IT_ADDR_MODE_RELATIVE,
			    IT_PRIV_REMOTE_WRITE | IT_PRIV_REMOTE_READ, 400);
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_ALL, &p));
	ck_assert_int_eq(p.addr_mode, IT_ADDR_MODE_RELATIVE);
	write_lands_at(ctx, t, TLEN, t + 1024 + 100,
		       it_make_rdma_addr_relative(100), 200, 4, 401);
	read_back(ctx, it_make_rdma_addr_relative(100), t + 1124, 200, 405);
	/* The absolute address of those bytes means nothing to it. */
	write_refused_at(ctx, t, TLEN, it_make_rdma_addr_absolute(t + 1124),
			 410);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* Past the relative window's end: refused. */
START_TEST(rmr_relative_outside_refused)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_local(t, TLEN);
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;

	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &rmr));
	ctx = rmr_link_wait(rmr, l, t + 1024, 1024, IT_ADDR_MODE_RELATIVE,
			    IT_PRIV_REMOTE_WRITE, 420);
	write_refused_at(ctx, t, TLEN, it_make_rdma_addr_relative(1000), 421);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/*
 * it_post_rdma_read_to_rmr: B reads A's bytes into a window of its own
 * (RNICPI_SEND_SINK_MW): they land in the window's bytes and nowhere
 * else. With IT_UNLINK_LOCAL_SINK the window is unlinked once the Read
 * has succeeded: the event names it, it_rmr_query says so, and the peer
 * is refused by its key. On soft-RoCE the READ responses land through
 * the completer (rxe_comp.c), the direct placement included.
 */
START_TEST(rmr_read_to_rmr)
{
	unsigned char *t = target_new(TLEN), *src = target_new(TLEN);
	g_autofree unsigned char *before = NULL;
	it_lmr_handle_t l = lmr_local(t, TLEN), ls;
	it_rmr_context_t ctx, ksrc;
	it_rmr_triplet_t rt;
	it_rmr_handle_t rmr;
	it_ia_info_t *info = NULL;
	it_lmr_triplet_t seg;
	it_rmr_param_t p;
	it_event_t ev;
	bool ext;

	for (size_t i = 0; i < TLEN; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	ls = lmr_new(src, TLEN, &ksrc);
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ext = info->rdma_read_local_extensions;
	it_ia_info_free(info);
	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_NARROW, &rmr));
	ctx = rmr_link_wait(rmr, l, t + 1024, 1024, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_REMOTE_WRITE, 500);
	rt.rmr = rmr;
	rt.addr.abs = t + 1100;
	rt.length = 300;
	ck_assert(ext);
	/* The flag is for a window sink; an unknown RMR is refused. */
	seg = it_seg(&S, 0, 8);
	ck_assert_it(it_post_rdma_read(B, &seg, 1, 502,
				       IT_COMPLETION_FLAG |
					       IT_UNLINK_LOCAL_SINK,
				       it_make_rdma_addr_absolute(src), ksrc),
		     IT_ERR_INVALID_DTO_FLAGS);
	rt.rmr = (it_rmr_handle_t)&rt;
	ck_assert_it(it_post_rdma_read_to_rmr(B, &rt, 1, 503, CN,
					      it_make_rdma_addr_absolute(src),
					      ksrc),
		     IT_ERR_INVALID_RMR);
	rt.rmr = rmr;

	before = g_memdup2(t, TLEN);
	ck_assert_it_ok(it_post_rdma_read_to_rmr(B, &rt, 1, 504, CN,
				 it_make_rdma_addr_absolute(src + 50), ksrc));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_READ_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 504);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 300);
	ck_assert_ptr_null(ev.dto_cmpl.unlinked_mr_handle);
	for (size_t i = 0; i < TLEN; i++) {
		unsigned char want = i >= 1100 && i < 1400 ? src[50 + i - 1100]
							   : before[i];

		ck_assert_msg(t[i] == want, "byte %zu is 0x%02x, not 0x%02x",
			      i, t[i], want);
	}

	/* Again with IT_UNLINK_LOCAL_SINK, into bytes 1500..1599. */
	rt.addr.abs = t + 1500;
	rt.length = 100;
	ck_assert_it_ok(it_post_rdma_read_to_rmr(B, &rt, 1, 505,
				 CN | IT_UNLINK_LOCAL_SINK,
				 it_make_rdma_addr_absolute(src + 1000),
				 ksrc));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_READ_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 505);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_ptr_eq(ev.dto_cmpl.unlinked_mr_handle, rmr);
	ck_assert(memcmp(t + 1500, src + 1000, 100) == 0);
	ck_assert_it_ok(it_rmr_query(rmr, IT_RMR_PARAM_LINKED, &p));
	ck_assert(!p.linked);
	/* Unlinked: the region is free, the RMR refused as a sink... */
	ck_assert_it(it_post_rdma_read_to_rmr(B, &rt, 1, 506, CN,
				 it_make_rdma_addr_absolute(src), ksrc),
		     IT_ERR_INVALID_RMR);
	/* ...and its key by the peer. */
	write_refused(ctx, t, TLEN, t + 1500, 507);
	ck_assert_it_ok(it_rmr_free(rmr));
	ck_assert_it_ok(it_lmr_free(l));
	ck_assert_it_ok(it_lmr_free(ls));
	free(t);
	free(src);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Unlinked LMRs: it_lmr_link / it_lmr_unlink (fast registration)       */
/* ------------------------------------------------------------------ */

#define PRIV_LINK                                                           \
	((it_mem_priv_t)(IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE |             \
			 IT_PRIV_REMOTE_READ))

static it_lmr_handle_t lmr_unlinked(size_t pages)
{
	it_lmr_handle_t lmr = NULL;

	ck_assert_it_ok(it_lmr_create_unlinked(F.pz, pages, IT_LMR_FLAG_NONE,
					       0, &lmr));
	return lmr;
}

/* The next DTO event is @lmr's link completion for @c through B: every
 * field of it_dto_cmpl_event_t checked. */
static void expect_lmr_link_event(it_dto_cookie_t c)
{
	it_event_t ev;

	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_LMR_LINK_CMPL_EVENT);
	ck_assert_ptr_eq(ev.dto_cmpl.evd, F.dto);
	ck_assert_ptr_eq(ev.dto_cmpl.ep, B);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, c);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 0);
	ck_assert_ptr_null(ev.dto_cmpl.unlinked_mr_handle);
}

static it_rmr_context_t lmr_link_wait(it_lmr_handle_t lmr, void *addr,
				      size_t len, it_dto_cookie_t c)
{
	it_rmr_context_t ctx = 0;

	ck_assert_it_ok(it_lmr_link(lmr, addr, NULL, len,
				    IT_ADDR_MODE_ABSOLUTE, PRIV_LINK, B, c,
				    CN, &ctx));
	expect_lmr_link_event(c);
	return ctx;
}

static void lmr_unlink_wait(it_lmr_handle_t lmr, it_dto_cookie_t c)
{
	ck_assert_it_ok(it_lmr_unlink(lmr, B, c, CN));
	expect_lmr_link_event(c);
}

static bool lmr_linked(it_lmr_handle_t lmr, it_rmr_context_t *key)
{
	it_lmr_param_t p;

	ck_assert_it_ok(it_lmr_query(lmr, IT_LMR_PARAM_ALL, &p));
	if (key)
		*key = p.rmr_context;
	return p.linked == IT_TRUE;
}

/* An LMR made unlinked: its key opens nothing until it is linked. */
START_TEST(lmr_unlinked_refused)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	it_ia_info_t *info = NULL;
	it_rmr_context_t k;

	ck_assert_it_ok(it_ia_query(F.ia, &info));
	ck_assert_int_eq(info->lmr_link_support, IT_TRUE);
	it_ia_info_free(info);
	ck_assert(!lmr_linked(l, &k));
	write_refused(k, t, TLEN, t + 100, 600);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/*
 * Linked onto bytes 1024..2047 of a page: the peer's Writes land there
 * and nowhere else (the rest of the page is the guard), a Read gets them
 * back; unlinked, it says so; linked again, the key changes (same index,
 * new key byte) and the new key works; unlinked again, the peer is
 * refused.
 */
START_TEST(lmr_link_bytes)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	it_rmr_context_t k0, k1, k2, kq;
	it_lmr_param_t p;

	ck_assert(!lmr_linked(l, &k0));
	k1 = lmr_link_wait(l, t + 1024, 1024, 610);
	ck_assert_uint_ne(k1, k0);
	ck_assert_uint_eq(k1 >> 8, k0 >> 8);
	ck_assert_it_ok(it_lmr_query(l, IT_LMR_PARAM_ALL, &p));
	ck_assert(p.linked);
	ck_assert_uint_eq(p.rmr_context, k1);
	ck_assert_ptr_eq(p.addr, t + 1024);
	ck_assert_uint_eq(p.length, 1024);
	ck_assert_int_eq(p.privs, PRIV_LINK);
	write_lands(k1, t, TLEN, t + 1024, 1024, 1, 611);
	write_lands(k1, t, TLEN, t + 1500, 200, 2, 614);
	read_back(k1, it_make_rdma_addr_absolute(t + 1500), t + 1500, 200,
		  617);
	lmr_unlink_wait(l, 618);
	ck_assert(!lmr_linked(l, &kq));
	ck_assert_uint_eq(kq, k1);

	k2 = lmr_link_wait(l, t + 1024, 1024, 620);
	ck_assert_uint_ne(k2, k1);
	ck_assert_uint_eq(k2 >> 8, k1 >> 8);
	ck_assert(lmr_linked(l, &kq));
	ck_assert_uint_eq(kq, k2);
	write_lands(k2, t, TLEN, t + 1100, 300, 3, 621);
	lmr_unlink_wait(l, 624);
	write_refused(k2, t, TLEN, t + 1100, 625);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* Linked again, the previous link's key is refused. */
START_TEST(lmr_relink_old_key_refused)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	it_rmr_context_t k1, k2;

	k1 = lmr_link_wait(l, t, TLEN, 630);
	lmr_unlink_wait(l, 631);
	k2 = lmr_link_wait(l, t, TLEN, 632);
	ck_assert_uint_ne(k1, k2);
	write_lands(k2, t, TLEN, t + 10, 20, 4, 633);
	write_refused(k1, t, TLEN, t + 100, 636);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* 64 bytes from 2000 run 16 past the link's end: refused, the page
 * unchanged. */
START_TEST(lmr_link_outside_refused)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	it_rmr_context_t k;

	k = lmr_link_wait(l, t + 1024, 1024, 640);
	write_refused(k, t, TLEN, t + 2000, 641);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/*
 * it_post_rdma_read with IT_UNLINK_LOCAL_SINK into a linked LMR: the bytes
 * land in the sink's range only, the event names the LMR as unlinked,
 * it_lmr_query says so, a second such Read is refused at once and the
 * peer is refused by the key.
 */
START_TEST(lmr_read_unlinks_sink)
{
	unsigned char *t = target_new(TLEN), *src = target_new(TLEN);
	g_autofree unsigned char *before = NULL;
	it_lmr_handle_t l = lmr_unlinked(1), ls;
	it_rmr_context_t k, ksrc;
	it_lmr_triplet_t seg;
	it_event_t ev;

	for (size_t i = 0; i < TLEN; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	ls = lmr_new(src, TLEN, &ksrc);
	k = lmr_link_wait(l, t + 1024, 1024, 650);
	before = g_memdup2(t, TLEN);
	seg.lmr = l;
	seg.addr.abs = t + 1100;
	seg.length = 300;
	ck_assert_it_ok(it_post_rdma_read(B, &seg, 1, 651,
					  CN | IT_UNLINK_LOCAL_SINK,
					  it_make_rdma_addr_absolute(src + 50),
					  ksrc));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RDMA_READ_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 651);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 300);
	ck_assert_ptr_eq(ev.dto_cmpl.unlinked_mr_handle, l);
	for (size_t i = 0; i < TLEN; i++) {
		unsigned char want = i >= 1100 && i < 1400 ? src[50 + i - 1100]
							   : before[i];

		ck_assert_msg(t[i] == want, "byte %zu is 0x%02x, not 0x%02x",
			      i, t[i], want);
	}
	ck_assert(!lmr_linked(l, NULL));
	ck_assert_it(it_post_rdma_read(B, &seg, 1, 652,
				       CN | IT_UNLINK_LOCAL_SINK,
				       it_make_rdma_addr_absolute(src), ksrc),
		     IT_ERR_INVALID_LMR);
	/* Several LMRs: the event has room for one. */
	{
		it_lmr_triplet_t two[2] = { seg, it_seg(&S, 0, 8) };

		ck_assert_it(it_post_rdma_read(B, two, 2, 653,
					       CN | IT_UNLINK_LOCAL_SINK,
					       it_make_rdma_addr_absolute(src),
					       ksrc),
			     IT_ERR_INVALID_DTO_FLAGS);
	}
	/* A Write has no local sink to unlink. */
	ck_assert_it(it_post_rdma_write(B, &seg, 1, 654,
					CN | IT_UNLINK_LOCAL_SINK,
					it_make_rdma_addr_absolute(src), ksrc),
		     IT_ERR_INVALID_DTO_FLAGS);
	write_refused(k, t, TLEN, t + 1100, 655);
	ck_assert_it_ok(it_lmr_free(l));
	ck_assert_it_ok(it_lmr_free(ls));
	free(t);
	free(src);
}
END_TEST

/*
 * Send-queue order: B links without a completion and at once Sends from
 * the linked LMR (its new key in the SGE) to A. The Send carries the
 * LMR's bytes, so the link ran before it; A, told by the Send, Writes
 * through the key and it lands.
 */
START_TEST(lmr_link_in_order)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	const it_dto_cookie_t cookies[] = { 670, 671 };
	it_rmr_context_t k = 0;
	it_lmr_triplet_t seg;

	for (size_t i = 0; i < 64; i++)
		t[512 + i] = (unsigned char)(i ^ 0xa5);
	memset(M.mem, 0, 64);
	seg = it_seg(&M, 0, 64);
	ck_assert_it_ok(it_post_recv(A, &seg, 1, 670, CN));
	ck_assert_it_ok(it_lmr_link(l, t, NULL, TLEN, IT_ADDR_MODE_ABSOLUTE,
				    PRIV_LINK, B, 669, 0, &k));
	seg.lmr = l;
	seg.addr.abs = t + 512;
	seg.length = 64;
	ck_assert_it_ok(it_post_send(B, &seg, 1, 671, CN));
	expect_all_ok(cookies, 2);
	ck_assert(memcmp(M.mem, t + 512, 64) == 0);
	write_lands(k, t, TLEN, t + 2048, 100, 6, 672);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/*
 * Careless: the LMR freed while its link is still queued. The provider
 * keeps the region until the work request has run or failed (it must not
 * touch freed memory; valgrind's run of this suite checks it): the link
 * completes, successfully or not, and its event names the cookie.
 */
START_TEST(lmr_free_while_linking)
{
	unsigned char *t = target_new(TLEN);

	for (int i = 0; i < 8; i++) {
		it_lmr_handle_t l = lmr_unlinked(1);
		it_rmr_context_t k;
		it_event_t ev;

		ck_assert_it_ok(it_lmr_link(l, t, NULL, TLEN,
					    IT_ADDR_MODE_ABSOLUTE, PRIV_LINK,
					    B, 680 + i, CN, &k));
		ck_assert_it_ok(it_lmr_free(l));
		it_wait_event(F.dto, &ev);
		ck_assert_event(&ev, IT_LMR_LINK_CMPL_EVENT);
		ck_assert_uint_eq(ev.dto_cmpl.cookie, 680 + i);
		if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS)
			break;	/* the endpoint is in error now */
	}
	free(t);
}
END_TEST

/*
 * A relative link (a zero-based region): the peer addresses the linked
 * bytes from 0, local segments are offsets too, and the absolute address
 * of those bytes opens nothing.
 */
START_TEST(lmr_link_relative)
{
	unsigned char *t = target_new(TLEN);
	it_lmr_handle_t l = lmr_unlinked(1);
	const it_dto_cookie_t cookies[] = { 690, 691 };
	it_rmr_context_t k = 0;
	it_lmr_triplet_t seg;

	ck_assert_it_ok(it_lmr_link(l, t + 1024, NULL, 1024,
				    IT_ADDR_MODE_RELATIVE, PRIV_LINK, B, 689,
				    CN, &k));
	expect_lmr_link_event(689);
	write_lands_at(k, t, TLEN, t + 1024 + 100,
		       it_make_rdma_addr_relative(100), 200, 7, 692);
	/* B sends bytes 100..163 of the link, named by their offset. */
	seg = it_seg(&M, 0, 64);
	ck_assert_it_ok(it_post_recv(A, &seg, 1, 690, CN));
	seg.lmr = l;
	seg.addr.rel = 100;
	seg.length = 64;
	ck_assert_it_ok(it_post_send(B, &seg, 1, 691, CN));
	expect_all_ok(cookies, 2);
	ck_assert(memcmp(M.mem, t + 1124, 64) == 0);
	write_refused_at(k, t, TLEN, it_make_rdma_addr_absolute(t + 1124),
			 695);
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* Careless input to the three calls: the IT_ERR_* each names. */
START_TEST(lmr_link_careless)
{
	unsigned char *t = target_new(2 * TLEN);
	it_lmr_handle_t l = lmr_unlinked(1), plain, out = NULL;
	it_rmr_context_t k = 0, kp;
	it_lmr_param_t p = { 0 };
	it_rmr_handle_t r;

	ck_assert_it(it_lmr_create_unlinked(F.pz, 0, IT_LMR_FLAG_NONE, 0,
					    &out),
		     IT_ERR_INVALID_IOBL);
	ck_assert_it(it_lmr_create_unlinked(F.pz, 1, IT_LMR_FLAG_NONE, 0,
					    NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_lmr_create_unlinked(F.pz, 1, (it_lmr_flag_t)0x4000,
					    0, &out),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_lmr_create_unlinked(NULL, 1, IT_LMR_FLAG_NONE, 0,
					    &out),
		     IT_ERR_INVALID_PZ);
	/* An LMR made linked is not relinked or unlinked. */
	plain = lmr_new(t, TLEN, &kp);
	ck_assert_it(it_lmr_link(plain, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1, CN, &k),
		     IT_ERR_INVALID_LMR);
	ck_assert_it(it_lmr_unlink(plain, B, 1, CN), IT_ERR_INVALID_LMR);
	ck_assert_it_ok(it_lmr_free(plain));
	/* Not linked: nothing to unlink. */
	ck_assert_it(it_lmr_unlink(l, B, 1, CN), IT_ERR_INVALID_LMR);
	/* Lengths: none, more pages than the LMR was made for. */
	ck_assert_it(it_lmr_link(l, t, NULL, 0, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1, CN, &k),
		     IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_lmr_link(l, t + 100, NULL, TLEN,
				 IT_ADDR_MODE_ABSOLUTE, PRIV_LINK, B, 1, CN,
				 &k),
		     IT_ERR_INVALID_LENGTH);
	ck_assert_it(it_lmr_link(l, NULL, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1, CN, &k),
		     IT_ERR_INVALID_ADDRESS);
	/* Privileges, flags, mode, endpoint. */
	ck_assert_it(it_lmr_link(l, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 (it_mem_priv_t)0x100, B, 1, CN, &k),
		     IT_ERR_INVALID_PRIVS);
	ck_assert_it(it_lmr_link(l, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1,
				 CN | IT_SOLICITED_WAIT_FLAG, &k),
		     IT_ERR_INVALID_DTO_FLAGS);
	ck_assert_it(it_lmr_link(l, t, NULL, 64, (it_addr_mode_t)7,
				 PRIV_LINK, B, 1, CN, &k),
		     IT_ERR_INVALID_ADDR_MODE);
	ck_assert_it(it_lmr_link(l, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, NULL, 1, CN, &k),
		     IT_ERR_INVALID_EP);
	ck_assert_it(it_lmr_link(NULL, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1, CN, &k),
		     IT_ERR_INVALID_LMR);
	ck_assert_uint_eq(k, 0);
	ck_assert(!lmr_linked(l, NULL));
	/* No RMR onto it while it is not linked. */
	ck_assert_it_ok(it_rmr_create20(F.pz, IT_RMR_TYPE_DEFAULT, &r));
	ck_assert_it(it_rmr_link(r, l, t, 64, IT_ADDR_MODE_ABSOLUTE,
				 IT_PRIV_REMOTE_WRITE, B, 1, CN, &kp),
		     IT_ERR_INVALID_LMR);
	/* Linked: not again, not modified. */
	k = lmr_link_wait(l, t, TLEN, 660);
	ck_assert_it(it_lmr_link(l, t, NULL, 64, IT_ADDR_MODE_ABSOLUTE,
				 PRIV_LINK, B, 1, CN, &kp),
		     IT_ERR_INVALID_LMR);
	p.privs = IT_PRIV_LOCAL;
	ck_assert_it(it_lmr_modify(l, IT_LMR_PARAM_MEM_PRIV, &p),
		     IT_ERR_INVALID_LMR);
	write_lands(k, t, 2 * TLEN, t + 4000, 96, 5, 661);
	/* Linked, an RMR opens part of it; then the LMR cannot unlink. */
	kp = rmr_link_wait(r, l, t + 64, 64, IT_ADDR_MODE_ABSOLUTE,
			   IT_PRIV_REMOTE_WRITE, 664);
	write_lands(kp, t, 2 * TLEN, t + 64, 64, 8, 665);
	ck_assert_it(it_lmr_unlink(l, B, 1, CN), IT_ERR_LMR_BUSY);
	ck_assert_it_ok(it_rmr_unlink(r, B, 668, CN));
	expect_dto(IT_RMR_LINK_CMPL_EVENT, 668, IT_DTO_SUCCESS);
	ck_assert_it_ok(it_rmr_free(r));
	/* Freeing a linked LMR unlinks it. */
	ck_assert_it_ok(it_lmr_free(l));
	free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Affiliated events from siw's Terminate or rxe's NAK (code, cause)    */
/* ------------------------------------------------------------------ */

/* The next affiliated events: @want_a on A and @want_b on B, in either
 * order; each endpoint's first event is the one checked. */
static void expect_aff_pair(it_event_type_t want_a, it_event_type_t want_b)
{
	it_event_type_t got_a = 0, got_b = 0;

	while (!got_a || !got_b) {
		it_event_t ev;

		ck_assert_msg(it_wait_event_for(F.aff, 5000000, &ev),
			      "affiliated events: A 0x%x, B 0x%x so far",
			      (unsigned int)got_a, (unsigned int)got_b);
		if (ev.aff_async.cause.ep == A && !got_a)
			got_a = ev.event_number;
		else if (ev.aff_async.cause.ep == B && !got_b)
			got_b = ev.event_number;
	}
	ck_assert_msg(got_a == want_a, "A got %s, expected %s",
		      itapi_event_name(got_a), itapi_event_name(want_a));
	ck_assert_msg(got_b == want_b, "B got %s, expected %s",
		      itapi_event_name(got_b), itapi_event_name(want_b));
}

/*
 * A Send of 200 bytes into B's receive of 64: B terminates with DDP
 * untagged error "message too long" (RFC 5041 §7.2): B's event is a local
 * transport error, A's (the peer's Terminate about what A sent) a remote
 * receive length error. soft-RoCE (rxe-nak): B NAKs an invalid request,
 * found a Send over its receive; A takes that NAK to a Send as the same.
 */
START_TEST(term_send_too_long)
{
	it_lmr_triplet_t t = it_seg(&M, 128, 64);

	ck_assert_it_ok(it_post_recv(B, &t, 1, 700, CN));
	memset(S.mem, 0x5a, 200);
	t = it_seg(&S, 0, 200);
	ck_assert_it_ok(it_post_send(A, &t, 1, 701, CN));
	expect_aff_pair(IT_ASYNC_AFF_EP_R_RECV_LENGTH_ERROR,
			IT_ASYNC_AFF_EP_L_TRANSPORT_ERROR);
}
END_TEST

/*
 * A Read Request through a freed LMR's key: B terminates with an RDMAP
 * remote protection error, invalid STag (RFC 5040 §7.4.1): B's event is
 * an RDMA Read access violation, A's a remote access violation; the Read
 * fails with IT_DTO_ERR_REMOTE_ACCESS. soft-RoCE: a remote access error
 * NAK, from the Read's R_Key check.
 */
START_TEST(term_read_bad_stag)
{
	unsigned char *src = target_new(TLEN);
	it_rmr_context_t k;
	it_lmr_handle_t l = lmr_new(src, TLEN, &k);
	it_lmr_triplet_t t = it_seg(&S, 0, 64);

	ck_assert_it_ok(it_lmr_free(l));
	ck_assert_it_ok(it_post_rdma_read(A, &t, 1, 710, CN,
					  it_make_rdma_addr_absolute(src), k));
	expect_dto(IT_DTO_RDMA_READ_CMPL_EVENT, 710, IT_DTO_ERR_REMOTE_ACCESS);
	expect_aff_pair(IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION,
			IT_ASYNC_AFF_EP_RDMAR_ACCESS_VIOLATION);
	free(src);
}
END_TEST

/* A Write through a freed LMR's key: DDP tagged, invalid STag (soft-RoCE:
 * a remote access error NAK from the Write's R_Key check); B's event is
 * an RDMA Write access violation. */
START_TEST(term_write_bad_stag)
{
	unsigned char *dst = target_new(TLEN);
	it_rmr_context_t k;
	it_lmr_handle_t l = lmr_new(dst, TLEN, &k);
	it_lmr_triplet_t t = it_seg(&S, 0, 64);

	ck_assert_it_ok(it_lmr_free(l));
	ck_assert_it_ok(it_post_rdma_write(A, &t, 1, 720, CN,
					   it_make_rdma_addr_absolute(dst), k));
	expect_aff_pair(IT_ASYNC_AFF_EP_R_ACCESS_VIOLATION,
			IT_ASYNC_AFF_EP_RDMAW_ACCESS_VIOLATION);
	free(dst);
}
END_TEST

#ifdef HAVE_PROV_RXE
/*
 * soft-RoCE: B's receive names a key freed after it was posted; A's Send
 * finds it invalid when it lands. IBA NAKs that as a remote operational
 * error: B's event is the local receive access violation (which RoCE,
 * unlike iWARP, tells apart), A's a remote error (the NAK does not say
 * it was the receive).
 */
START_TEST(nak_recv_freed_key)
{
	unsigned char *dst = target_new(TLEN);
	it_rmr_context_t k;
	it_lmr_handle_t l = lmr_new(dst, TLEN, &k);
	it_lmr_triplet_t t = { .lmr = l, .addr.abs = dst, .length = 64 };

	ck_assert_it_ok(it_post_recv(B, &t, 1, 730, CN));
	ck_assert_it_ok(it_lmr_free(l));
	memset(S.mem, 0x5a, 64);
	t = it_seg(&S, 0, 64);
	ck_assert_it_ok(it_post_send(A, &t, 1, 731, CN));
	expect_aff_pair(IT_ASYNC_AFF_EP_R_ERROR,
			IT_ASYNC_AFF_EP_L_RECV_ACCESS_VIOLATION);
	ck_assert_uint_eq(dst[0], 0xee);
	free(dst);
}
END_TEST
#endif

static TCase *keys_tcase(const char *name, void (*setup)(void),
			 void (*down)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, down);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, freed_lmr_revokes_its_key);
	tcase_add_test(tc, invalidate_revokes_one_key);
	tcase_add_test(tc, remapped_range_registered_afresh);
	tcase_add_test(tc, rmr_window_bytes);
	tcase_add_test(tc, rmr_outside_refused);
	tcase_add_test(tc, rmr_send_and_unlink);
	tcase_add_test(tc, rmr_relative);
	tcase_add_test(tc, rmr_relative_outside_refused);
	tcase_add_test(tc, rmr_read_to_rmr);
	tcase_add_test(tc, lmr_unlinked_refused);
	tcase_add_test(tc, lmr_link_bytes);
	tcase_add_test(tc, lmr_relink_old_key_refused);
	tcase_add_test(tc, lmr_link_outside_refused);
	tcase_add_test(tc, lmr_read_unlinks_sink);
	tcase_add_test(tc, lmr_link_in_order);
	tcase_add_test(tc, lmr_free_while_linking);
	tcase_add_test(tc, lmr_link_relative);
	tcase_add_test(tc, lmr_link_careless);
	return tc;
}

Suite *suite_itapi_keys(void)
{
	Suite *s = suite_create("itapi-keys");

	TCase *term = tcase_create("siw-terminate");

	suite_add_tcase(s, keys_tcase("siw", setup_siw, teardown));
	tcase_add_checked_fixture(term, setup_siw, teardown);
	tcase_set_timeout(term, 60);
	tcase_add_test(term, term_send_too_long);
	tcase_add_test(term, term_read_bad_stag);
	tcase_add_test(term, term_write_bad_stag);
	suite_add_tcase(s, term);
	return s;
}

#ifdef HAVE_PROV_RXE
Suite *suite_itapi_keys_rxe(void)
{
	Suite *s = suite_create("itapi-keys-rxe");

	TCase *nak = tcase_create("rxe-nak");

	suite_add_tcase(s, keys_tcase("rxe", setup_rxe, teardown_rxe));
	/* The same events from an IB NAK's code and what the responder
	 * found (rnicpi.h's RNICPI_TERM_LAYER_IBA): B sends the NAK, A
	 * receives it. */
	tcase_add_checked_fixture(nak, setup_rxe, teardown_rxe);
	tcase_set_timeout(nak, 60);
	tcase_add_test(nak, term_send_too_long);
	tcase_add_test(nak, term_read_bad_stag);
	tcase_add_test(nak, term_write_bad_stag);
	tcase_add_test(nak, nak_recv_freed_key);
	suite_add_tcase(s, nak);
	return s;
}
#endif
