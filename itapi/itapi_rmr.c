/* SPDX-License-Identifier: MIT */
/*
 * itapi_rmr.c - remote memory regions: memory windows where the provider
 * has them (narrow = type 2, bound to one QP; wide = type 1), linked and
 * unlinked by work requests on an endpoint (IBA 10.6.7, RFC 5040 §5.1).
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <string.h>

#include "itapi/itapi_priv.h"

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

/*
 * The endpoint a memory work request (an LMR or RMR link or unlink) goes
 * on: live, of @pz, a connected RC endpoint (the request needs a send
 * queue that runs). Failures are logged against @obj, the LMR or RMR.
 */
struct itapi_ep *itapi_ep_for_mem_wr(struct itapi_obj *obj,
				     struct itapi_pz *pz, it_ep_handle_t h,
				     it_status_t *st)
{
	struct itapi_ep *ep = ITAPI_LOOKUP(h, struct itapi_ep,
					   IT_HANDLE_TYPE_EP);
	bool connected;

	if (!ep) {
		*st = IT_FAIL(obj, IT_ERR_INVALID_EP,
			      "EP handle %p is not live", (void *)h);
		return NULL;
	}
	if (ep->pz != pz) {
		*st = IT_FAIL(obj, IT_ERR_INVALID_PZ,
			      "the endpoint is in another PZ");
		return NULL;
	}
	g_mutex_lock(&ep->lock);
	connected = ep->service == IT_RC_SERVICE &&
		    ep->state.rc == IT_EP_STATE_CONNECTED;
	g_mutex_unlock(&ep->lock);
	if (!connected) {
		*st = IT_FAIL(obj, IT_ERR_INVALID_EP_STATE,
			      "the endpoint is not a connected RC endpoint");
		return NULL;
	}
	return ep;
}

#define LINK_OK_FLAGS                                                       \
	(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG | IT_BARRIER_FENCE_FLAG |       \
	 IT_UNLINK_FENCE_FLAG | IT_COALESCE_WR_FLAG)

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
	if (lmr->fast_reg) {
		bool linked;

		g_mutex_lock(&lmr->lock);
		linked = lmr->linked;
		g_mutex_unlock(&lmr->lock);
		if (!linked)
			return IT_FAIL(&rmr->obj, IT_ERR_INVALID_LMR,
				       "the LMR is not linked (it_lmr_link)");
	}
	if (!rmr_context)
		return IT_FAIL(&rmr->obj, IT_ERR_FAULT, "rmr_context is NULL");
	if ((unsigned int)dto_flags & ~(unsigned int)LINK_OK_FLAGS)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_DTO_FLAGS,
			       "flags 0x%x do not apply to a link",
			       (unsigned int)dto_flags);
	if (addr_mode != IT_ADDR_MODE_ABSOLUTE &&
	    addr_mode != IT_ADDR_MODE_RELATIVE)
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_ADDR_MODE,
			       "address mode %d", (int)addr_mode);
	if (addr_mode == IT_ADDR_MODE_RELATIVE &&
	    !(rmr->obj.ia->attr.caps & RNICPI_DEV_CAP_ZERO_BASED))
		return IT_FAIL(&rmr->obj, IT_ERR_INVALID_ADDR_MODE,
			       "the provider has no zero-based windows");
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
	ep = itapi_ep_for_mem_wr(&rmr->obj, rmr->pz, ep_handle, &st);
	if (!ep)
		return st;
	if (privs & IT_PRIV_REMOTE_READ)
		access |= RNICPI_ACCESS_REMOTE_READ;
	if (privs & IT_PRIV_REMOTE_WRITE)
		access |= RNICPI_ACCESS_REMOTE_WRITE;
	if (privs & IT_PRIV_ATOMIC)
		access |= RNICPI_ACCESS_REMOTE_ATOMIC;
	/* Relative: the peer addresses the window from 0 (its first byte is
	 * it_make_rdma_addr_relative(0)), whatever the LMR's mode. */
	if (addr_mode == IT_ADDR_MODE_RELATIVE)
		access |= RNICPI_ACCESS_ZERO_BASED;

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
	ep = itapi_ep_for_mem_wr(&rmr->obj, rmr->pz, ep_handle, &st);
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
