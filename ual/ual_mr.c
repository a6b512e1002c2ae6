/* SPDX-License-Identifier: MIT */
/*
 * ual_mr.c - memory registration: pinning through kal and the provider's
 * reg_mr.
 *
 * Every registration is the provider's own MR with its own keys, even of a
 * range another registration on the same PD covers with the same rights.
 * A key is a capability handed to a peer: an application (or an IT-API
 * server revoking a client's access) that frees a registration, or a peer
 * that invalidates its key (RFC 5040 §6.10, IBA 10.6.6), must end that
 * access and no other. Handing two registrations one MR, as this layer's
 * registration cache did, left a freed LMR's key working while the other
 * lived, and an invalidation took both (issue 11, finding 2).
 *
 * What re-registering the same buffers does share is the pinning: kal
 * counts the pins covering each page and charges a page once, so a second
 * registration of a pinned range costs the provider's reg_mr and kal's
 * bookkeeping (and an mlock/madvise that finds the pages locked already),
 * not another charge against RLIMIT_MEMLOCK.
 *
 * Memory unmapped under a registration (issue 11, finding 4): the
 * application must free its registrations first (it_api(3) says so). The
 * providers reach memory by virtual address, so the key of a registration
 * whose memory was unmapped reaches whatever is mapped there when a peer
 * uses it. Nothing here notices an unmapping: that takes hooking munmap,
 * mremap, brk and madvise(MADV_DONTNEED) as MPI registration caches do, or
 * a userfaultfd monitor with its own thread; comparing the pages' identity
 * needs /proc/self/pagemap's frame numbers, which only CAP_SYS_ADMIN sees.
 * What is guaranteed: no registration reuses another's keys (above) nor a
 * stale pin, as kal_pin locks and marks every page of its range whoever
 * else covers it, so a registration of memory mapped anew at the same
 * address gets new keys and pins the new pages.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>

#include "ual/ual_private.h"

#define UAL_ACCESS_ALL                                                      \
	(RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE |           \
	 RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_ATOMIC |          \
	 RNICPI_ACCESS_MW_BIND | RNICPI_ACCESS_ZERO_BASED)

static void mr_release(struct ual_obj *obj)
{
	struct ual_mr *mr = container_of(obj, struct ual_mr, obj);

	ual_pd_put(mr->pd);
	g_free(mr);
}

static int check_range(struct ual_pd *pd, const void *addr, size_t len,
		       unsigned int access, const char *op)
{
	if (!addr || len == 0 || (uintptr_t)addr + len < (uintptr_t)addr) {
		ual_obj_fail(&pd->obj, -EINVAL, "%s: bad range %p + %zu", op,
			     addr, len);
		return -EINVAL;
	}
	if (access & ~UAL_ACCESS_ALL) {
		ual_obj_fail(&pd->obj, -EINVAL, "%s: unknown access bits 0x%x",
			     op, access & ~UAL_ACCESS_ALL);
		return -EINVAL;
	}
	return 0;
}

/* The MR object over a provider's region: one reference on @pd, the
 * region's keys. */
static struct ual_mr *mr_new(struct ual_pd *pd, struct rnicpi_mr *rmr)
{
	struct ual_mr *mr = g_new0(struct ual_mr, 1);

	ual_obj_init(&mr->obj, mr_release);
	ual_obj_set_prefix(&mr->obj, "MR[0x%x] %s:", rmr->lkey,
			   pd->dev->name);
	ual_pd_get(pd);
	mr->pd = pd;
	mr->rmr = rmr;
	rmr->core_ctx = mr;
	mr->lkey = rmr->lkey;
	mr->rkey = rmr->rkey;
	return mr;
}

static uint64_t mr_iova(void *addr, unsigned int access)
{
	return access & RNICPI_ACCESS_ZERO_BASED ? 0 : (uint64_t)(uintptr_t)addr;
}

int ual_mr_reg(struct ual_pd *pd, void *addr, size_t len,
	       unsigned int access, struct ual_mr **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_mr *rmr = NULL;
	struct kal_pin *pin = NULL;
	uint64_t iova = mr_iova(addr, access);
	struct ual_mr *mr;
	int err;

	err = check_range(pd, addr, len, access, "reg_mr");
	if (err)
		return err;
	err = ual_obj_reserve_child(&pd->obj, "an MR");
	if (err)
		return err;
	/* A device whose kernel pins (ibv_reg_mr) gets no second pin. */
	err = d->caps & RNICPI_DEV_CAP_KERNEL_PINS ? 0 :
						     kal_pin(addr, len, &pin);
	if (err) {
		ual_obj_fail(&pd->obj, err, "reg_mr: cannot pin %zu bytes at %p",
			     len, addr);
		goto err_child;
	}
	err = d->ops.reg_mr(pd->rpd, addr, len, iova, access, &rmr);
	if (err) {
		ual_obj_fail(&pd->obj, err,
			     "reg_mr of %zu bytes at %p access 0x%x", len, addr,
			     access);
		goto err_unpin;
	}
	mr = mr_new(pd, rmr);
	mr->pin = pin;
	mr->addr = (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	mr->iova = iova;
	ual_obj_debug(&mr->obj, "registered %zu bytes at %p access 0x%x", len,
		      addr, access);
	*out = mr;
	return 0;

err_unpin:
	kal_unpin(pin);
err_child:
	ual_obj_release_child(&pd->obj);
	return err;
}

int ual_mr_dereg(struct ual_mr *mr)
{
	struct ual_pd *pd = mr->pd;
	int err;

	err = ual_obj_lock_alive(&mr->obj, "dereg");
	if (err)
		return err;
	g_rw_lock_writer_lock(&mr->obj.live);
	err = pd->dev->ops.dereg_mr(mr->rmr);
	if (err) {
		g_rw_lock_writer_unlock(&mr->obj.live);
		g_rec_mutex_unlock(&mr->obj.ctl);
		ual_obj_fail(&mr->obj, err, "dereg_mr (the MR stays registered)");
		return err;
	}
	mr->rmr = NULL;
	ual_obj_end_destroy(&mr->obj);
	g_rec_mutex_unlock(&mr->obj.ctl);
	/* Only now: the provider touches no byte after dereg_mr returned. */
	kal_unpin(g_steal_pointer(&mr->pin));
	ual_obj_release_child(&pd->obj);
	ual_obj_debug(&mr->obj, "deregistered");
	ual_obj_put(&mr->obj);
	return 0;
}

int ual_mr_rereg(struct ual_mr *mr, void *addr, size_t len,
		 unsigned int access)
{
	struct ual_pd *pd = mr->pd;
	struct kal_pin *pin = NULL;
	unsigned int flags = 0;
	uint64_t iova = mr_iova(addr, access);
	int err;

	err = check_range(pd, addr, len, access, "rereg_mr");
	if (err)
		return err;
	err = ual_obj_lock_alive(&mr->obj, "rereg");
	if (err)
		return err;
	if ((uintptr_t)addr != mr->addr || len != mr->len || iova != mr->iova)
		flags |= RNICPI_REREG_TRANSLATION;
	if (access != mr->access)
		flags |= RNICPI_REREG_ACCESS;
	if (!flags)
		goto out_unlock; /* nothing changes */
	if ((flags & RNICPI_REREG_TRANSLATION) &&
	    !(pd->dev->caps & RNICPI_DEV_CAP_KERNEL_PINS)) {
		err = kal_pin(addr, len, &pin);
		if (err) {
			ual_obj_fail(&mr->obj, err,
				     "rereg: cannot pin %zu bytes at %p", len,
				     addr);
			goto out_unlock;
		}
	}
	g_rw_lock_writer_lock(&mr->obj.live);
	err = pd->dev->ops.rereg_mr(mr->rmr, flags, pd->rpd, addr, len, iova,
				    access);
	if (err) {
		g_rw_lock_writer_unlock(&mr->obj.live);
		ual_obj_fail(&mr->obj, err,
			     "rereg_mr flags 0x%x to %zu bytes at %p access 0x%x",
			     flags, len, addr, access);
		kal_unpin(pin);
		goto out_unlock;
	}
	if (pin) {
		kal_unpin(mr->pin);
		mr->pin = pin;
	}
	mr->addr = (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	mr->iova = iova;
	mr->lkey = mr->rmr->lkey;
	mr->rkey = mr->rmr->rkey;
	ual_obj_set_prefix(&mr->obj, "MR[0x%x] %s:", mr->lkey, pd->dev->name);
	g_rw_lock_writer_unlock(&mr->obj.live);
	ual_obj_debug(&mr->obj, "reregistered %zu bytes at %p access 0x%x",
		      len, addr, access);

out_unlock:
	g_rec_mutex_unlock(&mr->obj.ctl);
	return err;
}

int ual_mr_alloc(struct ual_pd *pd, uint64_t max_len, struct ual_mr **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_mr *rmr = NULL;
	struct ual_mr *mr;
	int err;

	if (max_len == 0) {
		ual_obj_fail(&pd->obj, -EINVAL, "alloc_mr: 0 bytes");
		return -EINVAL;
	}
	err = ual_obj_reserve_child(&pd->obj, "an MR");
	if (err)
		return err;
	err = d->ops.alloc_mr(pd->rpd, max_len, &rmr);
	if (err) {
		ual_obj_fail(&pd->obj, err, "alloc_mr of %llu bytes",
			     (unsigned long long)max_len);
		ual_obj_release_child(&pd->obj);
		return err;
	}
	mr = mr_new(pd, rmr);
	mr->max_len = max_len;
	ual_obj_debug(&mr->obj, "allocated for links of up to %llu bytes",
		      (unsigned long long)max_len);
	*out = mr;
	return 0;
}

int ual_mr_link(struct ual_mr *mr, void *addr, size_t len,
		unsigned int access, uint32_t key, struct rnicpi_send_wr *wr)
{
	struct ual_pd *pd = mr->pd;
	struct kal_pin *pin = NULL;
	int err;

	err = check_range(pd, addr, len, access, "link");
	if (err)
		return err;
	if (!mr->max_len || len > mr->max_len) {
		ual_obj_fail(&mr->obj, -EINVAL,
			     "link of %zu bytes: %s", len,
			     mr->max_len ? "longer than allocated" :
					   "not a region from alloc_mr");
		return -EINVAL;
	}
	err = ual_obj_lock_alive(&mr->obj, "link");
	if (err)
		return err;
	err = pd->dev->caps & RNICPI_DEV_CAP_KERNEL_PINS ?
		      0 :
		      kal_pin(addr, len, &pin);
	if (err) {
		ual_obj_fail(&mr->obj, err, "link: cannot pin %zu bytes at %p",
			     len, addr);
		g_rec_mutex_unlock(&mr->obj.ctl);
		return err;
	}
	kal_unpin(mr->pin);
	mr->pin = pin;
	mr->addr = (uintptr_t)addr;
	mr->len = len;
	mr->access = access;
	mr->iova = mr_iova(addr, access);
	mr->lkey = mr->rkey = key;
	wr->opcode = RNICPI_WR_REG_MR;
	wr->wr.reg_mr.mr = mr->rmr;
	wr->wr.reg_mr.addr = addr;
	wr->wr.reg_mr.length = len;
	wr->wr.reg_mr.iova = mr->iova;
	wr->wr.reg_mr.access = access;
	wr->wr.reg_mr.key = key;
	g_rec_mutex_unlock(&mr->obj.ctl);
	ual_obj_debug(&mr->obj, "link prepared: %zu bytes at %p access 0x%x "
		      "key 0x%x", len, addr, access, key);
	return 0;
}

uint32_t ual_mr_lkey(const struct ual_mr *mr)
{
	return mr->lkey;
}

uint32_t ual_mr_rkey(const struct ual_mr *mr)
{
	return mr->rkey;
}

void *ual_mr_addr(const struct ual_mr *mr)
{
	return (void *)mr->addr;
}

size_t ual_mr_length(const struct ual_mr *mr)
{
	return mr->len;
}

uint64_t ual_mr_iova(const struct ual_mr *mr)
{
	return mr->iova;
}

unsigned int ual_mr_access(const struct ual_mr *mr)
{
	return mr->access;
}

struct rnicpi_mr *ual_mr_rnicpi(struct ual_mr *mr)
{
	return mr->rmr;
}
