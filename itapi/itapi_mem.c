/* SPDX-License-Identifier: MIT */
/*
 * itapi_mem.c - local memory regions (LMRs), remote memory regions (RMRs,
 * i.e. memory windows), I/O address mapping.
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
	uint64_t avail = 0;
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
	if (addr_mode != IT_ADDR_MODE_ABSOLUTE &&
	    addr_mode != IT_ADDR_MODE_RELATIVE)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_ADDR_MODE,
			       "addressing mode %d", (int)addr_mode);
	if (addr_mode == IT_ADDR_MODE_RELATIVE &&
	    !(ia->attr.caps & RNICPI_DEV_CAP_ZERO_BASED))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_ADDR_MODE,
			       "relative addressing: the provider has no zero-based regions");
	if ((unsigned int)flags & ~(unsigned int)LMR_FLAGS_ALL)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_FLAGS,
			       "unknown flag bits 0x%x", (unsigned int)flags);
	if ((flags & IT_LMR_FLAG_SHARED) && (flags & IT_LMR_FLAG_NON_SHAREABLE))
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_FLAGS,
			       "shared and non-shareable at once");
	if (flags & IT_LMR_FLAG_SHARED)
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "shared LMRs (shared_id %u): registrations belong to one process here",
			       shared_id);
	if (iobl) {
		if (addr)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_ADDRESS,
				       "both addr and an I/O buffer list");
		st = iobl_range(pz, iobl, &start, &avail);
		if (st)
			return st;
		if (length == 0 || length > avail)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_LENGTH,
				       "length %llu, the list holds %llu bytes after the offset",
				       (unsigned long long)length,
				       (unsigned long long)avail);
	} else {
		if (!addr)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_ADDRESS,
				       "addr is NULL and no I/O buffer list");
		if (length == 0 ||
		    (uintptr_t)addr + (uintptr_t)length < (uintptr_t)addr)
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_LENGTH,
				       "length %llu at %p",
				       (unsigned long long)length, addr);
		start = (uintptr_t)addr;
	}
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

it_status_t it_lmr_create_unlinked(it_pz_handle_t pz_handle,
				   size_t iobl_num_elts, it_lmr_flag_t flags,
				   uint32_t shared_id,
				   it_lmr_handle_t *lmr_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	/* Linking an LMR is a fast-register work request, which RNICPI
	 * does not define (lmr_link_support is false). */
	return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
		       "unlinked LMRs and LMR links are not supported");
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

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	return IT_FAIL(&lmr->obj, IT_ERR_OP_NOT_SUPPORTED,
		       "LMR links are not supported (lmr_link_support)");
}

it_status_t it_lmr_unlink(it_lmr_handle_t lmr_handle, it_ep_handle_t ep_handle,
			  it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
	struct itapi_lmr *lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	return IT_FAIL(&lmr->obj, IT_ERR_OP_NOT_SUPPORTED,
		       "LMR links are not supported (lmr_link_support)");
}

void itapi_lmr_destroy(struct itapi_lmr *lmr)
{
	int err = ual_mr_dereg(lmr->mr);

	if (err)
		g_warning("%s dereg_mr at IA free: %s", lmr->obj.prefix,
			  g_strerror(-err));
	itapi_ia_del_child(lmr->obj.ia, &lmr->obj);
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

	if (!lmr)
		return IT_FAIL0(IT_ERR_INVALID_LMR, "LMR handle %p is not live",
				(void *)lmr_handle);
	if ((unsigned int)mask & ~LMR_PARAM_ALL_BITS)
		return IT_FAIL(&lmr->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&lmr->obj, IT_ERR_FAULT, "params is NULL");
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
		params->linked = IT_TRUE;
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

/* ------------------------------------------------------------------ */
/* RMRs                                                                */
/* ------------------------------------------------------------------ */

it_status_t it_rmr_create20(it_pz_handle_t pz_handle, it_rmr_type_t rmr_type,
			    it_rmr_handle_t *rmr_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	enum rnicpi_mw_type mwt;
	struct itapi_rmr *rmr;
	struct ual_mw *mw;
	uint32_t caps;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	if (!rmr_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT, "rmr_handle is NULL");
	st = itapi_ia_check(pz->obj.ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	caps = pz->obj.ia->attr.caps;
	if (!(caps & (RNICPI_DEV_CAP_MW_TYPE_1 | RNICPI_DEV_CAP_MW_TYPE_2)))
		return IT_FAIL(&pz->obj, IT_ERR_OP_NOT_SUPPORTED,
			       "the provider has no memory windows");
	switch (rmr_type) {
	case IT_RMR_TYPE_DEFAULT:
		rmr_type = (caps & RNICPI_DEV_CAP_MW_TYPE_2) ?
				   IT_RMR_TYPE_NARROW :
				   IT_RMR_TYPE_WIDE;
		break;
	case IT_RMR_TYPE_NARROW:
		if (!(caps & RNICPI_DEV_CAP_MW_TYPE_2))
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_RMR_TYPE,
				       "narrow RMRs (type 2 windows) are not supported here");
		break;
	case IT_RMR_TYPE_WIDE:
		if (!(caps & RNICPI_DEV_CAP_MW_TYPE_1))
			return IT_FAIL(&pz->obj, IT_ERR_INVALID_RMR_TYPE,
				       "wide RMRs (type 1 windows) are not supported here");
		break;
	default:
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_RMR_TYPE, "type %d",
			       (int)rmr_type);
	}
	mwt = rmr_type == IT_RMR_TYPE_NARROW ? RNICPI_MW_TYPE_2 :
					       RNICPI_MW_TYPE_1;
	err = ual_mw_alloc(pz->pd, mwt, &mw);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_RMR,
				     "alloc_mw: %s", g_strerror(-err));
	rmr = g_new0(struct itapi_rmr, 1);
	itapi_obj_init(&rmr->obj, IT_HANDLE_TYPE_RMR, pz->obj.ia, NULL);
	rmr->pz = pz;
	rmr->mw = mw;
	rmr->type = rmr_type;
	rmr->rkey = ual_mw_rkey(mw);
	g_mutex_init(&rmr->lock);
	itapi_ia_add_child(pz->obj.ia, &rmr->obj);
	*rmr_handle = (it_rmr_handle_t)rmr;
	return IT_SUCCESS;
}

it_status_t it_rmr_create10(it_pz_handle_t pz_handle,
			    it_rmr_handle_t *rmr_handle)
{
	return it_rmr_create20(pz_handle, IT_RMR_TYPE_DEFAULT, rmr_handle);
}

void itapi_rmr_destroy(struct itapi_rmr *rmr)
{
	int err = ual_mw_free(rmr->mw);

	if (err)
		g_warning("%s dealloc_mw: %s", rmr->obj.prefix,
			  g_strerror(-err));
	g_mutex_lock(&rmr->lock);
	if (rmr->linked && rmr->lmr)
		g_atomic_int_dec_and_test(&rmr->lmr->rmr_links);
	rmr->linked = false;
	g_mutex_unlock(&rmr->lock);
	itapi_ia_del_child(rmr->obj.ia, &rmr->obj);
	g_mutex_clear(&rmr->lock);
	g_free(rmr);
}

it_status_t it_rmr_free(it_rmr_handle_t rmr_handle)
{
	struct itapi_rmr *rmr = ITAPI_LOOKUP(rmr_handle, struct itapi_rmr,
					     IT_HANDLE_TYPE_RMR);
	int err;

	if (!rmr)
		return IT_FAIL0(IT_ERR_INVALID_RMR, "RMR handle %p is not live",
				(void *)rmr_handle);
	/* Freeing a linked window unlinks it (the provider invalidates). */
	err = ual_mw_free(rmr->mw);
	if (err)
		return IT_FAIL_ERRNO(&rmr->obj, err, ITAPI_CTX_RMR,
				     "dealloc_mw: %s", g_strerror(-err));
	g_mutex_lock(&rmr->lock);
	if (rmr->linked && rmr->lmr)
		g_atomic_int_dec_and_test(&rmr->lmr->rmr_links);
	rmr->linked = false;
	g_mutex_unlock(&rmr->lock);
	itapi_ia_del_child(rmr->obj.ia, &rmr->obj);
	g_mutex_clear(&rmr->lock);
	g_free(rmr);
	return IT_SUCCESS;
}

#define RMR_PARAM_ALL_BITS 0x7ffu

it_status_t it_rmr_query(it_rmr_handle_t rmr_handle, it_rmr_param_mask_t mask,
			 it_rmr_param_t *params)
{
	struct itapi_rmr *rmr = ITAPI_LOOKUP(rmr_handle, struct itapi_rmr,
					     IT_HANDLE_TYPE_RMR);
	bool all = mask & IT_RMR_PARAM_ALL;

	if (!rmr)
		return IT_FAIL0(IT_ERR_INVALID_RMR, "RMR handle %p is not live",
				(void *)rmr_handle);
	if ((unsigned int)mask & ~RMR_PARAM_ALL_BITS)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&rmr->obj, IT_ERR_FAULT, "params is NULL");
	g_mutex_lock(&rmr->lock);
	if (all || (mask & IT_RMR_PARAM_IA))
		params->ia = (it_ia_handle_t)rmr->obj.ia;
	if (all || (mask & IT_RMR_PARAM_PZ))
		params->pz = (it_pz_handle_t)rmr->pz;
	if (all || (mask & IT_RMR_PARAM_LINKED))
		params->linked = rmr->linked ? IT_TRUE : IT_FALSE;
	if (all || (mask & IT_RMR_PARAM_LMR))
		params->lmr = rmr->linked ? (it_lmr_handle_t)rmr->lmr : NULL;
	if (all || (mask & IT_RMR_PARAM_ADDR))
		params->addr = rmr->linked ? rmr->addr : NULL;
	if (all || (mask & IT_RMR_PARAM_LENGTH))
		params->length = rmr->linked ? rmr->length : 0;
	if (all || (mask & IT_RMR_PARAM_MEM_PRIV))
		params->privs = rmr->privs;
	if (all || (mask & IT_RMR_PARAM_RMR_CONTEXT))
		params->rmr_context = rmr->rkey;
	if (all || (mask & IT_RMR_PARAM_TYPE))
		params->type = rmr->type;
	if (all || (mask & IT_RMR_PARAM_ADDR_MODE))
		params->addr_mode = rmr->addr_mode;
	g_mutex_unlock(&rmr->lock);
	return IT_SUCCESS;
}

/* The key a window takes at its next bind: the same index, the next key
 * byte (what libibverbs' ibv_inc_rkey does for InfiniBand, IBA 10.6.7.2). */
static uint32_t next_rkey(uint32_t rkey)
{
	return (rkey & ~0xffu) | ((rkey + 1) & 0xffu);
}

#define LINK_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG |       \
	 IT_UNLINK_FENCE_FLAG | IT_COALESCE_WR_FLAG)

static struct itapi_ep *rmr_ep(struct itapi_rmr *rmr, it_ep_handle_t h,
			       it_status_t *st)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(h, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	bool connected;

	if (!ep) {
		*st = IT_FAIL(&rmr->obj, IT_ERR_INVALID_EP,
			      "EP handle %p is not live", (void *)h);
		return NULL;
	}
	if (ep->pz != rmr->pz) {
		*st = IT_FAIL(&rmr->obj, IT_ERR_INVALID_PZ,
			      "the endpoint is in another PZ");
		return NULL;
	}
	g_mutex_lock(&ep->lock);
	connected = ep->service == IT_RC_SERVICE &&
		    ep->state.rc == IT_EP_STATE_CONNECTED;
	g_mutex_unlock(&ep->lock);
	if (!connected) {
		*st = IT_FAIL(&rmr->obj, IT_ERR_INVALID_EP_STATE,
			      "the endpoint is not a connected RC endpoint");
		return NULL;
	}
	return ep;
}

it_status_t it_rmr_link(it_rmr_handle_t rmr_handle, it_lmr_handle_t lmr_handle,
			void *addr, it_length_t length,
			it_addr_mode_t addr_mode, it_mem_priv_t privs,
			it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
			it_dto_flags_t dto_flags,
			it_rmr_context_t *rmr_context)
{
	struct itapi_rmr *rmr = ITAPI_LOOKUP(rmr_handle, struct itapi_rmr,
					     IT_HANDLE_TYPE_RMR);
	struct itapi_lmr *lmr;
	struct itapi_ep *ep;
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	unsigned int access = 0;
	uintptr_t a, base;
	uint32_t key;
	it_status_t st;

	if (!rmr)
		return IT_FAIL0(IT_ERR_INVALID_RMR, "RMR handle %p is not live",
				(void *)rmr_handle);
	lmr = ITAPI_LOOKUP(lmr_handle, struct itapi_lmr, IT_HANDLE_TYPE_LMR);
	if (!lmr)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_LMR,
			       "LMR handle %p is not live", (void *)lmr_handle);
	if (lmr->pz != rmr->pz)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_PZ,
			       "the LMR is in another PZ");
	if (!rmr_context)
		return IT_FAIL(&rmr->obj, IT_ERR_FAULT, "rmr_context is NULL");
	if ((unsigned int)dto_flags & ~(unsigned int)LINK_OK_FLAGS)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "flags 0x%x do not apply to a link",
			       (unsigned int)dto_flags);
	if (addr_mode != IT_ADDR_MODE_ABSOLUTE)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_ADDR_MODE,
			       "RMRs use absolute addresses here");
	if ((unsigned int)privs &
	    ~(unsigned int)(IT_PRIV_REMOTE | IT_PRIV_ATOMIC | IT_PRIV_LOCAL))
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_PRIVS,
			       "privileges 0x%x", (unsigned int)privs);
	/* A window cannot give what its region lacks locally (IBA
	 * 10.6.7.2.2): remote write and atomics need local write. */
	if ((privs & (IT_PRIV_REMOTE_WRITE | IT_PRIV_ATOMIC)) &&
	    !(lmr->privs & IT_PRIV_LOCAL_WRITE))
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_PRIVS,
			       "remote write or atomics through an LMR without local write");
	base = lmr->addr_mode == IT_ADDR_MODE_RELATIVE ? 0 :
							  (uintptr_t)lmr->addr;
	a = (uintptr_t)addr;
	if (length == 0 || a < base || length > lmr->length ||
	    a - base > lmr->length - length)
		return IT_FAIL(&rmr->obj, IT_ERR_RANGE,
			       "%llu bytes at %p are not inside the LMR",
			       (unsigned long long)length, addr);
	ep = rmr_ep(rmr, ep_handle, &st);
	if (!ep)
		return st;
	if (privs & IT_PRIV_REMOTE_READ)
		access |= RNICPI_ACCESS_REMOTE_READ;
	if (privs & IT_PRIV_REMOTE_WRITE)
		access |= RNICPI_ACCESS_REMOTE_WRITE;
	if (privs & IT_PRIV_ATOMIC)
		access |= RNICPI_ACCESS_REMOTE_ATOMIC;

	g_mutex_lock(&rmr->lock);
	if (rmr->linked) {
		g_mutex_unlock(&rmr->lock);
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_RMR,
			       "already linked: unlink it first");
	}
	key = next_rkey(rmr->rkey);
	rmr->linked = true;
	rmr->lmr = lmr;
	rmr->addr = addr;
	rmr->length = length;
	rmr->privs = privs;
	rmr->addr_mode = addr_mode;
	rmr->rkey = key;
	g_atomic_int_inc(&lmr->rmr_links);
	g_mutex_unlock(&rmr->lock);

	wr.opcode = RNICPI_WR_BIND_MW;
	wr.send_flags = (dto_flags & IT_COMPLETION_FLAG ? RNICPI_SEND_SIGNALED :
							  0) |
			(dto_flags & IT_BARRIER_FENCE_FLAG ? RNICPI_SEND_FENCE :
							     0) |
			(dto_flags & IT_UNLINK_FENCE_FLAG ?
				 RNICPI_SEND_LOCAL_FENCE :
				 0);
	wr.wr.bind_mw.mw = ual_mw_rnicpi(rmr->mw);
	wr.wr.bind_mw.rkey = key;
	wr.wr.bind_mw.bind_info.mr = ual_mr_rnicpi(lmr->mr);
	/* Relative LMRs are zero based: a is then an offset, as the MR's
	 * addresses are. */
	wr.wr.bind_mw.bind_info.addr = (uint64_t)a;
	wr.wr.bind_mw.bind_info.length = length;
	wr.wr.bind_mw.bind_info.access = access;
	tmpl.cookie = cookie;
	tmpl.event = IT_RMR_LINK_CMPL_EVENT;
	tmpl.flags = dto_flags;
	tmpl.rmr = rmr;
	tmpl.lmr = lmr;
	tmpl.new_rkey = key;
	st = itapi_post_sq(ep, &wr, &tmpl, "it_rmr_link");
	if (st) {
		g_mutex_lock(&rmr->lock);
		rmr->linked = false;
		rmr->lmr = NULL;
		g_atomic_int_dec_and_test(&lmr->rmr_links);
		g_mutex_unlock(&rmr->lock);
		return st;
	}
	*rmr_context = key;
	return IT_SUCCESS;
}

it_status_t it_rmr_bind10(it_rmr_handle_t rmr_handle,
			  it_lmr_handle_t lmr_handle, void *addr,
			  it_length_t length, it_mem_priv_t privs,
			  it_ep_handle_t ep_handle, it_dto_cookie_t cookie,
			  it_dto_flags_t dto_flags,
			  it_rmr_context_t *rmr_context)
{
	return it_rmr_link(rmr_handle, lmr_handle, addr, length,
			   IT_ADDR_MODE_ABSOLUTE, privs, ep_handle, cookie,
			   dto_flags, rmr_context);
}

it_status_t it_rmr_unlink(it_rmr_handle_t rmr_handle, it_ep_handle_t ep_handle,
			  it_dto_cookie_t cookie, it_dto_flags_t dto_flags)
{
	struct itapi_rmr *rmr = ITAPI_LOOKUP(rmr_handle, struct itapi_rmr,
					     IT_HANDLE_TYPE_RMR);
	struct rnicpi_send_wr wr = { 0 };
	struct itapi_wr_slot tmpl = { 0 };
	struct itapi_ep *ep;
	struct itapi_lmr *lmr;
	it_status_t st;

	if (!rmr)
		return IT_FAIL0(IT_ERR_INVALID_RMR, "RMR handle %p is not live",
				(void *)rmr_handle);
	if ((unsigned int)dto_flags & ~(unsigned int)LINK_OK_FLAGS)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "flags 0x%x do not apply to an unlink",
			       (unsigned int)dto_flags);
	ep = rmr_ep(rmr, ep_handle, &st);
	if (!ep)
		return st;
	g_mutex_lock(&rmr->lock);
	if (!rmr->linked) {
		g_mutex_unlock(&rmr->lock);
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_RMR, "not linked");
	}
	lmr = rmr->lmr;
	rmr->linked = false;
	g_mutex_unlock(&rmr->lock);

	wr.send_flags = (dto_flags & IT_COMPLETION_FLAG ? RNICPI_SEND_SIGNALED :
							  0) |
			(dto_flags & IT_UNLINK_FENCE_FLAG ?
				 RNICPI_SEND_LOCAL_FENCE :
				 0);
	if (rmr->type == IT_RMR_TYPE_NARROW) {
		/* A type 2 window is unbound by invalidating its key. */
		wr.opcode = RNICPI_WR_LOCAL_INV;
		wr.ex.invalidate_rkey = rmr->rkey;
	} else {
		/* A type 1 window is unbound by a bind of length 0. */
		wr.opcode = RNICPI_WR_BIND_MW;
		wr.wr.bind_mw.mw = ual_mw_rnicpi(rmr->mw);
		wr.wr.bind_mw.rkey = rmr->rkey;
		wr.wr.bind_mw.bind_info.mr = ual_mr_rnicpi(lmr->mr);
		wr.wr.bind_mw.bind_info.length = 0;
	}
	tmpl.cookie = cookie;
	tmpl.event = IT_RMR_LINK_CMPL_EVENT;
	tmpl.flags = dto_flags;
	tmpl.rmr = rmr;
	tmpl.lmr = lmr;
	tmpl.unlink = true;
	st = itapi_post_sq(ep, &wr, &tmpl, "it_rmr_unlink");
	if (st) {
		g_mutex_lock(&rmr->lock);
		rmr->linked = true;
		g_mutex_unlock(&rmr->lock);
	}
	return st;
}

/* The completion of a link or unlink (from the EVD pump). */
void itapi_rmr_link_done(struct itapi_wr_slot *slot, bool ok)
{
	struct itapi_rmr *rmr = ITAPI_LOOKUP(slot->rmr, struct itapi_rmr,
					     IT_HANDLE_TYPE_RMR);
	struct itapi_lmr *lmr = ITAPI_LOOKUP(slot->lmr, struct itapi_lmr,
					     IT_HANDLE_TYPE_LMR);
	uint32_t now;

	if (!rmr)
		return;		/* freed meanwhile; it_rmr_free settled */
	g_mutex_lock(&rmr->lock);
	if (slot->unlink) {
		if (ok) {
			if (lmr && rmr->lmr == lmr)
				g_atomic_int_dec_and_test(&lmr->rmr_links);
			rmr->lmr = NULL;
		} else {
			rmr->linked = true;
		}
	} else if (!ok) {
		if (rmr->linked && rmr->lmr == lmr && lmr)
			g_atomic_int_dec_and_test(&lmr->rmr_links);
		rmr->linked = false;
		rmr->lmr = NULL;
	} else {
		now = ual_mw_rkey(rmr->mw);
		if (now != slot->new_rkey) {
			g_warning("%s the provider gave the window key 0x%x, not the 0x%x announced to the consumer",
				  rmr->obj.prefix, now, slot->new_rkey);
			rmr->rkey = now;
		}
	}
	g_mutex_unlock(&rmr->lock);
}
