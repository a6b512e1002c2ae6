/* SPDX-License-Identifier: MIT */
/*
 * itapi_lmr.c - local memory regions (LMRs) and I/O address mapping.
 * Remote memory regions (memory windows) are in itapi_rmr.c.
 *
 * I/O addresses. hostrdma's providers reach memory through the process's
 * virtual addresses, so the I/O address space is the virtual address
 * space: it_mem_map returns the virtual address itself, and an I/O buffer
 * list (it_iobl_t) describes virtual memory. One LMR is one range of
 * virtual addresses (what the providers register), so the elements of an
 * I/O buffer list must follow each other without gaps; a list with a gap
 * is refused with IT_ERR_INVALID_IOBL naming the element.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"

/* ------------------------------------------------------------------ */
/* I/O addresses                                                       */
/* ------------------------------------------------------------------ */

it_status_t it_mem_map(it_ia_handle_t ia_handle, void *vaddr,
		       uint64_t aspace_id, size_t len, it_io_addr_t *io_addr,
		       size_t *mapped_len)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!io_addr || !mapped_len)
		return IT_FAIL(&ia->obj, IT_ERR_FAULT,
			       "io_addr or mapped_len is NULL");
	if (!vaddr)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_ADDRESS, "vaddr is NULL");
	if (len == 0 || (uintptr_t)vaddr + len < (uintptr_t)vaddr)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_LENGTH,
			       "length %zu at %p", len, vaddr);
	/* Address space 0 is the caller's: the only one a user-space
	 * library reaches. */
	if (aspace_id != 0)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_ADDRESS,
			       "address space %llu: only 0 (this process) exists here",
			       (unsigned long long)aspace_id);
	*io_addr = (it_io_addr_t)vaddr;
	*mapped_len = len;
	return IT_SUCCESS;
}

it_status_t it_mem_unmap(it_ia_handle_t ia_handle, it_io_addr_t io_addr,
			 size_t mapped_len)
{
	struct itapi_ia *ia = ITAPI_LOOKUP(ia_handle, struct itapi_ia,
					   IT_HANDLE_TYPE_IA);

	if (!ia)
		return IT_FAIL0(IT_ERR_INVALID_IA, "IA handle %p is not live",
				(void *)ia_handle);
	if (!io_addr)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_ADDRESS,
			       "io_addr is NULL");
	if (mapped_len == 0)
		return IT_FAIL(&ia->obj, IT_ERR_INVALID_LENGTH, "length 0");
	return IT_SUCCESS;
}

it_rdma_addr_t it_make_rdma_addr_absolute(void *addr)
{
	return (it_rdma_addr_t)(uintptr_t)addr;
}

it_rdma_addr_t it_make_rdma_addr_relative(it_length_t offset)
{
	return (it_rdma_addr_t)offset;
}

/* ------------------------------------------------------------------ */
/* LMRs                                                                */
/* ------------------------------------------------------------------ */

#define LMR_FLAGS_ALL                                                       \
	(IT_LMR_FLAG_NONE | IT_LMR_FLAG_SHARED | IT_LMR_FLAG_NONCOHERENT |   \
	 IT_LMR_FLAG_NON_SHAREABLE)

static it_status_t check_privs(struct itapi_obj *obj, struct itapi_ia *ia,
			       it_mem_priv_t privs)
{
	if ((unsigned int)privs & ~(unsigned int)IT_PRIV_ALL)
		return IT_FAIL(obj, IT_ERR_INVALID_PRIVS,
			       "unknown privilege bits 0x%x",
			       (unsigned int)privs & ~(unsigned int)IT_PRIV_ALL);
	if ((privs & IT_PRIV_ATOMIC) &&
	    (!(ia->attr.caps & RNICPI_DEV_CAP_ATOMIC) ||
	     ia->attr.atomic_cap == RNICPI_ATOMIC_NONE))
		return IT_FAIL(obj, IT_ERR_INVALID_PRIVS,
			       "IT_PRIV_ATOMIC: the IA has no atomics");
	return IT_SUCCESS;
}

/* The flags of a new LMR, linked or not. */
static it_status_t check_lmr_flags(struct itapi_obj *obj, it_lmr_flag_t flags,
				   uint32_t shared_id)
{
	if ((unsigned int)flags & ~(unsigned int)LMR_FLAGS_ALL)
		return IT_FAIL(obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)flags);
	if ((flags & IT_LMR_FLAG_SHARED) && (flags & IT_LMR_FLAG_NON_SHAREABLE))
		return IT_FAIL(obj, IT_ERR_INVALID_FLAGS,
			       "shared and non-shareable at once");
	if (flags & IT_LMR_FLAG_SHARED)
		return IT_FAIL(obj, IT_ERR_OP_NOT_SUPPORTED,
			       "shared LMRs (shared_id %u): registrations belong to one process here",
			       shared_id);
	return IT_SUCCESS;
}

/*
 * The virtual range an I/O buffer list describes: its elements must be
 * contiguous. On success *start and *avail are the first byte (after fbo)
 * and the bytes from there to the end of the list.
 */
static it_status_t iobl_range(struct itapi_pz *pz, const it_iobl_t *iobl,
			      uintptr_t *start, uint64_t *avail)
{
	uintptr_t next = 0, first = 0;
	uint64_t total = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (iobl->num_elts == 0)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL, "no elements");
	for (size_t i = 0; i < iobl->num_elts; i++) {
		uintptr_t a;
		uint64_t len;

		switch (iobl->iobl_type) {
		case IT_IOBL_PAGE_LIST:
		case IT_IOBL_BLOCK_LIST:
			if (!iobl->list.ce_list.list_elt)
				return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
					       "list_elt is NULL");
			a = (uintptr_t)iobl->list.ce_list.list_elt[i];
			len = iobl->list.ce_list.elt_len;
			if (iobl->iobl_type == IT_IOBL_PAGE_LIST &&
			    (len == 0 || (len & (len - 1)) ||
			     len < (uint64_t)page || (a & (len - 1))))
				return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
					       "page list: element %zu at %p of %llu bytes is not an aligned power-of-two page",
					       i, (void *)a,
					       (unsigned long long)len);
			break;
		case IT_IOBL_VE_PAGE_LIST:
			if (!iobl->list.ve_list.list_elt)
				return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
					       "list_elt is NULL");
			a = (uintptr_t)iobl->list.ve_list.list_elt[i].io_addr;
			len = iobl->list.ve_list.list_elt[i].elt_len;
			break;
		default:
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
				       "iobl_type %d", (int)iobl->iobl_type);
		}
		if (len == 0 || !a || a + len < a)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
				       "element %zu: address %p, %llu bytes", i,
				       (void *)a, (unsigned long long)len);
		if (i == 0) {
			first = a;
		} else if (a != next) {
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
				       "element %zu at %p does not follow element %zu, which ends at %p: one LMR is one range of (virtual) I/O addresses here",
				       i, (void *)a, i - 1, (void *)next);
		}
		next = a + len;
		total += len;
	}
	if (iobl->fbo >= total)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
			       "first byte offset %llu past the %llu bytes listed",
			       (unsigned long long)iobl->fbo,
			       (unsigned long long)total);
	*start = first + iobl->fbo;
	*avail = total - iobl->fbo;
	return IT_SUCCESS;
}

/* The addressing mode of a registration or a link: absolute, or
 * relative where the provider has zero-based regions. */
static it_status_t check_addr_mode(struct itapi_obj *obj,
				   struct itapi_ia *ia,
				   it_addr_mode_t addr_mode)
{
	if (addr_mode != IT_ADDR_MODE_ABSOLUTE &&
	    addr_mode != IT_ADDR_MODE_RELATIVE)
		return IT_FAIL(obj, IT_ERR_INVALID_ADDR_MODE,
			       "addressing mode %d", (int)addr_mode);
	if (addr_mode == IT_ADDR_MODE_RELATIVE &&
	    !(ia->attr.caps & RNICPI_DEV_CAP_ZERO_BASED))
		return IT_FAIL(obj, IT_ERR_INVALID_ADDR_MODE,
			       "relative addressing: the provider has no zero-based regions");
	return IT_SUCCESS;
}

/* The bytes a registration or a link covers, given either as @addr or
 * as an I/O buffer list: *start is the first one's address. */
static it_status_t mem_range(struct itapi_obj *obj, struct itapi_pz *pz,
			     const void *addr, const it_iobl_t *iobl,
			     it_length_t length, uintptr_t *start)
{
	uint64_t avail = 0;
	it_status_t st;

	if (iobl) {
		if (addr)
			return IT_FAIL(obj, IT_ERR_INVALID_ADDRESS,
				       "both addr and an I/O buffer list");
		st = iobl_range(pz, iobl, start, &avail);
		if (st)
			return st;
		if (length == 0 || length > avail)
			return IT_FAIL(obj, IT_ERR_INVALID_LENGTH,
				       "length %llu, the list holds %llu bytes after the offset",
				       (unsigned long long)length,
				       (unsigned long long)avail);
		return IT_SUCCESS;
	}
	if (!addr)
		return IT_FAIL(obj, IT_ERR_INVALID_ADDRESS,
			       "addr is NULL and no I/O buffer list");
	if (length == 0 ||
	    (uintptr_t)addr + (uintptr_t)length < (uintptr_t)addr)
		return IT_FAIL(obj, IT_ERR_INVALID_LENGTH, "length %llu at %p",
			       (unsigned long long)length, addr);
	*start = (uintptr_t)addr;
	return IT_SUCCESS;
}

it_status_t it_lmr_create21(it_pz_handle_t pz_handle, void *addr,
			    it_iobl_t *iobl, it_length_t length,
			    it_addr_mode_t addr_mode, it_mem_priv_t privs,
			    it_lmr_flag_t flags, uint32_t shared_id,
			    it_lmr_handle_t *lmr_handle,
			    it_rmr_context_t *rmr_context)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	struct itapi_ia *ia;
	struct itapi_lmr *lmr;
	struct ual_mr *mr;
	unsigned int access;
	uintptr_t start = 0;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	ia = pz->obj.ia;
	if (!lmr_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT, "lmr_handle is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	st = check_privs(&pz->obj, ia, privs);
	if (st)
		return st;
	st = check_addr_mode(&pz->obj, ia, addr_mode);
	if (st)
		return st;
	st = check_lmr_flags(&pz->obj, flags, shared_id);
	if (st)
		return st;
	st = mem_range(&pz->obj, pz, addr, iobl, length, &start);
	if (st)
		return st;
	if ((uint64_t)length > ia->attr.max_mr_size)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_LMR_LENGTH,
			       "%llu bytes, one region holds %llu",
			       (unsigned long long)length,
			       (unsigned long long)ia->attr.max_mr_size);

	access = itapi_privs_to_access(privs);
	if (ia->attr.caps &
	    (RNICPI_DEV_CAP_MW_TYPE_1 | RNICPI_DEV_CAP_MW_TYPE_2))
		access |= RNICPI_ACCESS_MW_BIND;
	if (addr_mode == IT_ADDR_MODE_RELATIVE)
		access |= RNICPI_ACCESS_ZERO_BASED;
	err = ual_mr_reg(pz->pd, (void *)start, (size_t)length, access, &mr);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_LMR,
				     "registering %llu bytes at %p: %s",
				     (unsigned long long)length, (void *)start,
				     g_strerror(-err));
	lmr = g_new0(struct itapi_lmr, 1);
	itapi_obj_init(&lmr->obj, IT_HANDLE_TYPE_LMR, ia, NULL);
	lmr->pz = pz;
	lmr->mr = mr;
	lmr->addr = (void *)start;
	lmr->length = length;
	lmr->addr_mode = addr_mode;
	lmr->privs = privs;
	lmr->flags = flags;
	lmr->shared_id = shared_id;
	if (iobl) {
		lmr->iobl_num_elts = iobl->num_elts;
		lmr->iobl_type = iobl->iobl_type;
	}
	itapi_ia_add_child(ia, &lmr->obj);
	if (rmr_context)
		*rmr_context = ual_mr_rkey(mr);
	itapi_debug(&lmr->obj, "%llu bytes at %p, privileges 0x%x, key 0x%x",
		    (unsigned long long)length, (void *)start,
		    (unsigned int)privs, ual_mr_rkey(mr));
	*lmr_handle = (it_lmr_handle_t)lmr;
	return IT_SUCCESS;
}

it_status_t it_lmr_create20(it_pz_handle_t pz_handle, void *addr,
			    it_length_t length, it_addr_mode_t addr_mode,
			    it_mem_priv_t privs, it_lmr_flag_t flags,
			    uint32_t shared_id, it_lmr_handle_t *lmr_handle,
			    it_rmr_context_t *rmr_context)
{
	return it_lmr_create21(pz_handle, addr, NULL, length, addr_mode,
			       privs, flags, shared_id, lmr_handle,
			       rmr_context);
}

it_status_t it_lmr_create10(it_pz_handle_t pz_handle, void *addr,
			    it_length_t length, it_mem_priv_t privs,
			    it_lmr_flag_t flags, uint32_t shared_id,
			    it_lmr_handle_t *lmr_handle,
			    it_rmr_context_t *rmr_context)
{
	return it_lmr_create21(pz_handle, addr, NULL, length,
			       IT_ADDR_MODE_ABSOLUTE, privs, flags, shared_id,
			       lmr_handle, rmr_context);
}

/*
 * Unlinked LMRs (IT-API 2.1): a provider region for fast registration
 * (RNICPI_DEV_CAP_FAST_REG: alloc_mr) that it_lmr_link links to memory by
 * a REG_MR work request and it_lmr_unlink unlinks by a LOCAL_INV, both in
 * the endpoint's send-queue order, completing with IT_LMR_LINK_CMPL_EVENT.
 * Its key (rmr_context) is the region's index with a key byte that
 * changes on every link, as an RMR's (IBA 10.6.3.6, RFC 5040 §2.1), so a
 * key handed out for one link is refused after it. The LMR is sized at
 * creation in I/O buffer list elements, pages here: a link may span at
 * most that many pages.
 */
/* What IT-API's lmr_link_support says (itapi_ia.c). */
static bool link_supported(const struct itapi_ia *ia)
{
	return (ia->attr.caps & RNICPI_DEV_CAP_FAST_REG) &&
	       (ia->attr.caps & RNICPI_DEV_CAP_LOCAL_INV);
}

it_status_t it_lmr_create_unlinked(it_pz_handle_t pz_handle,
				   size_t iobl_num_elts, it_lmr_flag_t flags,
				   uint32_t shared_id,
				   it_lmr_handle_t *lmr_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct itapi_ia *ia;
	struct itapi_lmr *lmr;
	struct ual_mr *mr;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	ia = pz->obj.ia;
	if (!lmr_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT, "lmr_handle is NULL");
	st = itapi_ia_check(ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	if (!link_supported(ia))
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "unlinked LMRs: the provider has no fast registration (lmr_link_support is false)");
	st = check_lmr_flags(&pz->obj, flags, shared_id);
	if (st)
		return st;
	if (iobl_num_elts == 0)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_IOBL,
			       "an LMR of 0 I/O buffer list elements");
	if (iobl_num_elts > ia->attr.max_mr_size / page)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_LMR_LENGTH,
			       "%zu pages, one region holds %llu bytes",
			       iobl_num_elts,
			       (unsigned long long)ia->attr.max_mr_size);
	err = ual_mr_alloc(pz->pd, (uint64_t)iobl_num_elts * page, &mr);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_LMR,
				     "alloc_mr of %zu pages: %s", iobl_num_elts,
				     g_strerror(-err));
	lmr = g_new0(struct itapi_lmr, 1);
	itapi_obj_init(&lmr->obj, IT_HANDLE_TYPE_LMR, ia, NULL);
	lmr->pz = pz;
	lmr->mr = mr;
	lmr->addr_mode = IT_ADDR_MODE_ABSOLUTE;
	lmr->flags = flags;
	lmr->shared_id = shared_id;
	lmr->iobl_num_elts = iobl_num_elts;
	lmr->iobl_type = IT_IOBL_PAGE_LIST;
	lmr->fast_reg = true;
	g_mutex_init(&lmr->lock);
	itapi_ia_add_child(ia, &lmr->obj);
	itapi_debug(&lmr->obj, "unlinked, up to %zu pages, key 0x%x",
		    iobl_num_elts, ual_mr_rkey(mr));
	*lmr_handle = (it_lmr_handle_t)lmr;
	return IT_SUCCESS;
}

#define LINK_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG |       \
	 IT_UNLINK_FENCE_FLAG | IT_COALESCE_WR_FLAG)

static unsigned int link_send_flags(it_dto_flags_t f)
{
	return (f & IT_COMPLETION_FLAG ? RNICPI_SEND_SIGNALED : 0) |
	       (f & IT_BARRIER_FENCE_FLAG ? RNICPI_SEND_FENCE : 0) |
	       (f & IT_UNLINK_FENCE_FLAG ? RNICPI_SEND_LOCAL_FENCE : 0) |
	       (f & IT_COALESCE_WR_FLAG ? RNICPI_SEND_MORE : 0);
}

/* The key of the next link: the same index, the next key byte. */
static uint32_t next_key(uint32_t key)
{
	return (key & ~0xffu) | ((key + 1) & 0xffu);
}

/* What it_lmr_link and it_lmr_unlink (@unlink) first check of @lmr and
 * the work request's flags. */
static it_status_t check_link_call(struct itapi_lmr *lmr,
				   it_dto_flags_t dto_flags, bool unlink)
{
	if (!link_supported(lmr->obj.ia))
		return IT_FAIL(&lmr->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "LMR links: the provider has no fast registration (lmr_link_support is false)");
	if (!lmr->fast_reg && unlink)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LMR,
			       "made linked by it_lmr_create: it could never be linked again (free it instead)");
	if (!lmr->fast_reg)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LMR,
			       "made linked by it_lmr_create: only an LMR from it_lmr_create_unlinked is linked by it_lmr_link");
	if ((unsigned int)dto_flags & ~(unsigned int)LINK_OK_FLAGS)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "flags 0x%x do not apply to %s",
			       (unsigned int)dto_flags,
			       unlink ? "an unlink" : "a link");
	return IT_SUCCESS;
}

/*
 * Posts the REG_MR work request of a link or the LOCAL_INV of an unlink
 * (@unlink) on @ep's send queue; it completes with IT_LMR_LINK_CMPL_EVENT
 * (itapi_lmr_link_done). The caller has already marked @lmr as the work
 * request leaves it; if the post fails, the mark goes back.
 */
static it_status_t post_link_wr(struct itapi_lmr *lmr, struct itapi_ep *ep,
				struct rnicpi_send_wr *wr,
				it_dto_cookie_t cookie,
				it_dto_flags_t dto_flags, bool unlink)
{
	struct itapi_wr_slot tmpl = {
		.cookie = cookie,
		.event = IT_LMR_LINK_CMPL_EVENT,
		.flags = dto_flags,
		.lmr = lmr,
		.unlink = unlink,
		.lmr_link = true,
	};
	it_status_t st;

	wr->send_flags = link_send_flags(dto_flags);
	st = itapi_post_sq(ep, wr, &tmpl,
			   unlink ? "it_lmr_unlink" : "it_lmr_link");
	if (st) {
		g_mutex_lock(&lmr->lock);
		lmr->linked = unlink;
		g_mutex_unlock(&lmr->lock);
	}
	return st;
}

it_status_t it_lmr_link(it_lmr_handle_t lmr_handle, const void *addr,
			const it_iobl_t *iobl, it_length_t length,
			it_addr_mode_t addr_mode, it_mem_priv_t privs,
			it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
			it_dto_flags_t dto_flags,
			it_rmr_context_t *rmr_context)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_ia *ia;
	struct itapi_ep *ep;
	unsigned int access;
	uintptr_t start = 0;
	uint64_t pages;
	uint32_t key;
	it_status_t st;
	int err;

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	ia = lmr->obj.ia;
	st = check_link_call(lmr, dto_flags, false);
	if (st)
		return st;
	st = check_privs(&lmr->obj, ia, privs);
	if (st)
		return st;
	st = check_addr_mode(&lmr->obj, ia, addr_mode);
	if (st)
		return st;
	if (iobl && !addr && iobl->num_elts > lmr->iobl_num_elts)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_IOBL,
			       "%zu elements, the LMR was made for %zu",
			       iobl->num_elts, lmr->iobl_num_elts);
	st = mem_range(&lmr->obj, lmr->pz, addr, iobl, length, &start);
	if (st)
		return st;
	pages = (((start & (page - 1)) + (uint64_t)length + page - 1) / page);
	if (pages > lmr->iobl_num_elts)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LENGTH,
			       "%llu bytes at %p span %llu pages, the LMR was made for %zu",
			       (unsigned long long)length, (void *)start,
			       (unsigned long long)pages, lmr->iobl_num_elts);
	ep = itapi_ep_for_mem_wr(&lmr->obj, lmr->pz, ep_handle, &st);
	if (!ep)
		return st;
	access = itapi_privs_to_access(privs);
	if (ia->attr.caps &
	    (RNICPI_DEV_CAP_MW_TYPE_1 | RNICPI_DEV_CAP_MW_TYPE_2))
		access |= RNICPI_ACCESS_MW_BIND;
	if (addr_mode == IT_ADDR_MODE_RELATIVE)
		access |= RNICPI_ACCESS_ZERO_BASED;

	g_mutex_lock(&lmr->lock);
	if (lmr->linked) {
		g_mutex_unlock(&lmr->lock);
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LMR,
			       "already linked: unlink it first");
	}
	if (g_atomic_int_get(&lmr->rmr_links)) {
		g_mutex_unlock(&lmr->lock);
		return IT_FAIL(&lmr->obj, IT_ERR_LMR_BUSY,
			       "RMRs are still linked to its previous link");
	}
	key = next_key(ual_mr_rkey(lmr->mr));
	err = ual_mr_link(lmr->mr, (void *)start, (size_t)length, access, key,
			  &wr);
	if (err) {
		g_mutex_unlock(&lmr->lock);
		return IT_FAIL_ERRNO(&lmr->obj, err, ITAPI_CTX_LMR,
				     "linking %llu bytes at %p: %s",
				     (unsigned long long)length, (void *)start,
				     g_strerror(-err));
	}
	lmr->linked = true;
	lmr->addr = (void *)start;
	lmr->length = length;
	lmr->addr_mode = addr_mode;
	lmr->privs = privs;
	if (iobl)
		lmr->iobl_type = iobl->iobl_type;
	g_mutex_unlock(&lmr->lock);

	st = post_link_wr(lmr, ep, &wr, cookie, dto_flags, false);
	if (st)
		return st;
	itapi_debug(&lmr->obj, "linking %llu bytes at %p, privileges 0x%x, key 0x%x",
		    (unsigned long long)length, (void *)start,
		    (unsigned int)privs, key);
	if (rmr_context)
		*rmr_context = key;
	return IT_SUCCESS;
}

it_status_t it_lmr_unlink(it_lmr_handle_t lmr_handle, it_ep_handle_t ep_handle,
			  it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_ep *ep;
	it_status_t st;

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	st = check_link_call(lmr, dto_flags, true);
	if (st)
		return st;
	ep = itapi_ep_for_mem_wr(&lmr->obj, lmr->pz, ep_handle, &st);
	if (!ep)
		return st;
	g_mutex_lock(&lmr->lock);
	if (!lmr->linked) {
		g_mutex_unlock(&lmr->lock);
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LMR, "not linked");
	}
	if (g_atomic_int_get(&lmr->rmr_links)) {
		g_mutex_unlock(&lmr->lock);
		return IT_FAIL(&lmr->obj, IT_ERR_LMR_BUSY,
			       "RMRs are linked to it");
	}
	lmr->linked = false;
	g_mutex_unlock(&lmr->lock);

	wr.opcode = RNICPI_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = ual_mr_rkey(lmr->mr);
	return post_link_wr(lmr, ep, &wr, cookie, dto_flags, true);
}

/* The completion of an LMR link or unlink, or of a Read that unlinked its
 * sink LMR (from the EVD pump). A failed unlink leaves the key as it was:
 * linked. A failed link leaves the LMR unlinked. */
void itapi_lmr_link_done(struct itapi_wr_slot *slot, bool ok)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(slot->lmr, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);

	if (!lmr || !lmr->fast_reg || ok)
		return;		/* freed meanwhile, or as posted */
	g_mutex_lock(&lmr->lock);
	lmr->linked = slot->unlink;
	g_mutex_unlock(&lmr->lock);
}

void itapi_lmr_destroy(struct itapi_lmr *lmr)
{
	int err = ual_mr_dereg(lmr->mr);

	if (err)
		g_warning("%s dereg_mr at IA free: %s", lmr->obj.prefix,
			  g_strerror(-err));
	itapi_ia_del_child(lmr->obj.ia, &lmr->obj);
	if (lmr->fast_reg)
		g_mutex_clear(&lmr->lock);
	g_free(lmr);
}

it_status_t it_lmr_free(it_lmr_handle_t lmr_handle)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	int err, links;

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	links = g_atomic_int_get(&lmr->rmr_links);
	if (links)
		return IT_FAIL(&lmr->obj, IT_ERR_LMR_BUSY,
			       "%d RMRs are linked to it", links);
	err = ual_mr_dereg(lmr->mr);
	if (err)
		return IT_FAIL_ERRNO(&lmr->obj, err, ITAPI_CTX_LMR,
				     "dereg_mr: %s", g_strerror(-err));
	itapi_ia_del_child(lmr->obj.ia, &lmr->obj);
	if (lmr->fast_reg)
		g_mutex_clear(&lmr->lock);
	g_free(lmr);
	return IT_SUCCESS;
}

#define LMR_PARAM_ALL_BITS 0x7fffu

it_status_t it_lmr_query(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
			 it_lmr_param_t *params)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	bool all = mask & IT_LMR_PARAM_ALL;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a, end;
	bool linked = true;

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	if ((unsigned int)mask & ~LMR_PARAM_ALL_BITS)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&lmr->obj, IT_ERR_FAULT, "params is NULL");
	if (lmr->fast_reg) {
		g_mutex_lock(&lmr->lock);
		linked = lmr->linked;
		g_mutex_unlock(&lmr->lock);
	}
	/* Registration pins whole pages. */
	a = (uintptr_t)lmr->addr & ~(page - 1);
	end = ((uintptr_t)lmr->addr + lmr->length + page - 1) & ~(page - 1);
	if (all || (mask & IT_LMR_PARAM_IA))
		params->ia = (it_ia_handle_t)lmr->obj.ia;
	if (all || (mask & IT_LMR_PARAM_PZ))
		params->pz = (it_pz_handle_t)lmr->pz;
	if (all || (mask & IT_LMR_PARAM_ADDR))
		params->addr = lmr->addr;
	if (all || (mask & IT_LMR_PARAM_LENGTH))
		params->length = lmr->length;
	if (all || (mask & IT_LMR_PARAM_MEM_PRIV))
		params->privs = lmr->privs;
	if (all || (mask & IT_LMR_PARAM_FLAG))
		params->flags = lmr->flags;
	if (all || (mask & IT_LMR_PARAM_SHARED_ID))
		params->shared_id = lmr->shared_id;
	if (all || (mask & IT_LMR_PARAM_RMR_CONTEXT))
		params->rmr_context = ual_mr_rkey(lmr->mr);
	if (all || (mask & IT_LMR_PARAM_ACTUAL_ADDR))
		params->actual_addr = (void *)a;
	if (all || (mask & IT_LMR_PARAM_ACTUAL_LENGTH))
		params->actual_length = end - a;
	if (all || (mask & IT_LMR_PARAM_ADDR_MODE))
		params->addr_mode = lmr->addr_mode;
	if (all || (mask & IT_LMR_PARAM_LINKED))
		params->linked = linked ? IT_TRUE : IT_FALSE;
	if (all || (mask & IT_LMR_PARAM_IOBL_NUM_ELTS))
		params->iobl_num_elts = lmr->iobl_num_elts;
	if (all || (mask & IT_LMR_PARAM_IOBL_TYPE))
		params->iobl_type = lmr->iobl_type;
	return IT_SUCCESS;
}

it_status_t it_lmr_modify(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
			  const it_lmr_param_t *params)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	const unsigned int ok = IT_LMR_PARAM_ADDR | IT_LMR_PARAM_LENGTH |
				IT_LMR_PARAM_MEM_PRIV;
	void *addr;
	it_length_t length;
	it_mem_priv_t privs;
	unsigned int access;
	it_status_t st;
	int err;

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	if (!mask || ((unsigned int)mask & ~ok))
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x: only the address, length and privileges change",
			       (unsigned int)mask);
	if (!params)
		return IT_FAIL(&lmr->obj, IT_ERR_FAULT, "params is NULL");
	if (lmr->fast_reg)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LMR,
			       "an LMR from it_lmr_create_unlinked changes by it_lmr_unlink and it_lmr_link");
	if (lmr->iobl_num_elts)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_MASK,
			       "the LMR was made from an I/O buffer list");
	if (g_atomic_int_get(&lmr->rmr_links))
		return IT_FAIL(&lmr->obj, IT_ERR_LMR_BUSY,
			       "RMRs are linked to it");
	addr = (mask & IT_LMR_PARAM_ADDR) ? params->addr : lmr->addr;
	length = (mask & IT_LMR_PARAM_LENGTH) ? params->length : lmr->length;
	privs = (mask & IT_LMR_PARAM_MEM_PRIV) ? params->privs : lmr->privs;
	st = check_privs(&lmr->obj, lmr->obj.ia, privs);
	if (st)
		return st;
	if (!addr)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_ADDRESS, "addr is NULL");
	if (length == 0 ||
	    (uintptr_t)addr + (uintptr_t)length < (uintptr_t)addr)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_LENGTH,
			       "length %llu", (unsigned long long)length);
	access = itapi_privs_to_access(privs) |
		 (ual_mr_access(lmr->mr) &
		  (RNICPI_ACCESS_MW_BIND | RNICPI_ACCESS_ZERO_BASED));
	err = ual_mr_rereg(lmr->mr, addr, (size_t)length, access);
	if (err)
		return IT_FAIL_ERRNO(&lmr->obj, err, ITAPI_CTX_LMR,
				     "rereg_mr: %s", g_strerror(-err));
	lmr->addr = addr;
	lmr->length = length;
	lmr->privs = privs;
	return IT_SUCCESS;
}

static it_status_t check_triplets(const it_lmr_triplet_t *segs, size_t n,
				  const char *op)
{
	if (n && !segs)
		return IT_FAIL0(IT_ERR_FAULT, "%s: local_segments is NULL", op);
	for (size_t i = 0; i < n; i++) {
		struct itapi_lmr *lmr = ITAPI_LOOKUP(segs[i].lmr,
						     struct itapi_lmr,
						     IT_HANDLE_TYPE_LMR);
		uintptr_t a, base;

		if (!lmr)
			return IT_FAIL0(IT_ERR_INVALID_LMR,
					"%s: segment %zu: LMR %p is not live",
					op, i, (void *)segs[i].lmr);
		base = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
			       0 :
			       (uintptr_t)lmr->addr;
		a = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ?
			    (uintptr_t)segs[i].addr.rel :
			    (uintptr_t)segs[i].addr.abs;
		if (a < base || segs[i].length > lmr->length ||
		    a - base > lmr->length - segs[i].length)
			return IT_FAIL(&lmr->obj, IT_ERR_RANGE,
				       "%s: segment %zu is outside the LMR", op,
				       i);
	}
	return IT_SUCCESS;
}

/* Memory here is cache coherent with the (software) RNIC: nothing to
 * flush or refresh once the segments are known to be valid. */
it_status_t it_lmr_flush_to_mem(const it_lmr_triplet_t *local_segments,
				size_t num_segments)
{
	return check_triplets(local_segments, num_segments,
			      "it_lmr_flush_to_mem");
}

it_status_t it_lmr_refresh_from_mem(const it_lmr_triplet_t *local_segments,
				    size_t num_segments)
{
	return check_triplets(local_segments, num_segments,
			      "it_lmr_refresh_from_mem");
}

