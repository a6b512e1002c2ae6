/* SPDX-License-Identifier: MIT */
/*
 * siw_mw.c - memory windows on soft-iWARP (RDMA verbs' Bind Memory
 * Window; IBA 10.6.7 for the two types RNICPI names): a window is an
 * STag of its own (index | key byte, RFC 5040 §2.1) that opens part of a
 * region to the peer with rights of its own. A bind gives it the key
 * byte the consumer chose; LOCAL_INV or a peer's Send with Invalidate
 * (RFC 5040 §6.10) unbinds a type 2 window. What the peer sees of a
 * window that is not bound, or of bytes outside it, is the Terminate
 * RFC 5040 §7.4 / RFC 5041 §7.2 name (siw_rx_hdr.c), as for a region.
 *
 * The window's key table slot holds one struct siw_mr (is_mw) for the
 * window's life; each bind makes a binding struct that the receive path
 * checks like a region (siw_stag_get), so a binding is never changed
 * under a reader: a new bind replaces it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vp/siw/siw.h"

struct siw_mw {
	struct rnicpi_mw base;
	struct siw_mr *slot;
};

static inline struct siw_mw *to_siw_mw(struct rnicpi_mw *m)
{
	return container_of(m, struct siw_mw, base);
}

struct siw_mr *siw_stag_get(struct siw_device *dev, uint32_t stag)
{
	struct siw_mr *mr = rnicpi_key_lookup(&dev->mr_keys, stag), *b;

	if (!mr || !mr->is_mw)
		return mr;
	pthread_mutex_lock(&mr->mw_lock);
	b = mr->bound;
	if (b)
		siw_mr_get(b);
	pthread_mutex_unlock(&mr->mw_lock);
	siw_mr_put(mr);
	return b;
}

bool siw_mr_usable(const struct siw_mr *mr)
{
	return atomic_load(&mr->valid) &&
	       (!mr->parent || (atomic_load(&mr->parent->valid) &&
				!atomic_load(&mr->parent->dead)));
}

/* The binding @b stops: its STag is refused from now on. A touch of the
 * bytes under way is covered by the region's own count. */
static void binding_end(struct siw_mr *b)
{
	if (!b)
		return;
	atomic_store(&b->valid, false);
	atomic_fetch_sub(&b->parent->n_binds, 1);
	siw_mr_put(b);
}

int siw_stag_invalidate(struct siw_qp *qp, uint32_t stag, bool remote)
{
	struct siw_mr *mr = rnicpi_key_lookup(&qp->dev->mr_keys, stag);
	struct siw_mr *b = NULL;
	int rc = 0;

	if (!mr)
		return -ENOENT;
	if (mr->pd != &qp->pd->base) {
		rc = -EPERM;
	} else if (!mr->is_mw) {
		atomic_store(&mr->valid, false);
	} else {
		/* IBA 10.6.7.2.4 (as soft-RoCE): only a bound type 2
		 * window, and remotely only by the QP it is bound to. */
		pthread_mutex_lock(&mr->mw_lock);
		if (mr->mw_type != RNICPI_MW_TYPE_2 || !mr->bound ||
		    (remote && mr->bound->qpn != qp->base.qp_num)) {
			rc = -EPERM;
		} else {
			b = mr->bound;
			mr->bound = NULL;
		}
		pthread_mutex_unlock(&mr->mw_lock);
		binding_end(b);
	}
	siw_mr_put(mr);
	return rc;
}

static bool in_range(uint64_t va, uint64_t len, uint64_t start, uint64_t size)
{
	return va >= start && va - start <= size && len <= size - (va - start);
}

/* Bind (length 0: unbind) the window of @w onto the region it names. */
enum rnicpi_wc_status siw_mw_bind(struct siw_qp *qp, const struct siw_wqe *w)
{
	struct siw_mw *mw = to_siw_mw(w->bind_mw);
	struct siw_mr *slot = mw->slot, *parent = NULL, *b, *old = NULL;
	const struct rnicpi_mw_bind_info *bi = &w->bind;
	struct siw_device *dev = qp->dev;
	unsigned int rights = RNICPI_ACCESS_REMOTE_WRITE |
			      RNICPI_ACCESS_REMOTE_READ;
	uint32_t key;

	if (bi->mr)
		parent = container_of(bi->mr, struct siw_mr_handle, base)->mr;
	pthread_mutex_lock(&slot->mw_lock);
	if (slot->pd != &qp->pd->base)
		goto bad;
	if (bi->length == 0) {
		if (slot->mw_type == RNICPI_MW_TYPE_2)
			goto bad; /* type 2 is unbound by invalidation */
		old = slot->bound;
		slot->bound = NULL;
		pthread_mutex_unlock(&slot->mw_lock);
		binding_end(old);
		return RNICPI_WC_SUCCESS;
	}
	/* iWARP has no atomics: a window grants remote read and write. */
	if (!parent || parent->pd != &qp->pd->base ||
	    !atomic_load(&parent->valid) ||
	    !(parent->access & RNICPI_ACCESS_MW_BIND) ||
	    (bi->access & ~(rights | RNICPI_ACCESS_ZERO_BASED)) ||
	    ((bi->access & RNICPI_ACCESS_REMOTE_WRITE) &&
	     !(parent->access & RNICPI_ACCESS_LOCAL_WRITE)) ||
	    !in_range(bi->addr, bi->length, parent->iova, parent->length) ||
	    (slot->mw_type == RNICPI_MW_TYPE_2 && slot->bound))
		goto bad;
	/* The key is the one the WR names (rnicpi.h): the consumer has
	 * handed it out already. The same byte again is refused. */
	if (rnicpi_key_index(w->bind_rkey) != rnicpi_key_index(slot->stag) ||
	    rnicpi_key_set_byte(&dev->mr_keys, slot->stag,
				(uint8_t)w->bind_rkey, &key))
		goto bad;
	b = calloc(1, sizeof(*b));
	if (!b) {
		/* The key changed: the old binding is of the old key. */
		slot->stag = key;
		w->bind_mw->rkey = key;
		old = slot->bound;
		slot->bound = NULL;
		pthread_mutex_unlock(&slot->mw_lock);
		binding_end(old);
		siw_qp_info(qp, "BIND_MW: out of memory");
		return RNICPI_WC_MW_BIND_ERR;
	}
	atomic_init(&b->ref, 1);
	b->dev = dev;
	b->pd = slot->pd;
	b->addr = parent->addr + (bi->addr - parent->iova);
	b->length = bi->length;
	/* Zero-based: the peer's tagged offsets start at 0 in the window
	 * (RFC 5040 §2.1 leaves the TO base to the STag's owner). */
	b->iova = (bi->access & RNICPI_ACCESS_ZERO_BASED) ? 0 : bi->addr;
	b->access = bi->access & rights;
	b->stag = key;
	siw_mr_get(parent);
	atomic_fetch_add(&parent->n_binds, 1);
	b->parent = parent;
	b->qp_bound = slot->mw_type == RNICPI_MW_TYPE_2;
	b->qpn = qp->base.qp_num;
	atomic_init(&b->valid, true);
	old = slot->bound;
	slot->bound = b;
	slot->stag = key;
	w->bind_mw->rkey = key;
	pthread_mutex_unlock(&slot->mw_lock);
	binding_end(old);
	siw_qp_dbg(qp, "window 0x%08x bound onto [0x%llx, +%llu) access 0x%x",
		   key, (unsigned long long)bi->addr,
		   (unsigned long long)bi->length, bi->access);
	return RNICPI_WC_SUCCESS;
bad:
	pthread_mutex_unlock(&slot->mw_lock);
	siw_qp_info(qp, "BIND_MW of window 0x%08x (type %d) onto [0x%llx, "
		    "+%llu) access 0x%x key 0x%08x refused", slot->stag,
		    slot->mw_type, (unsigned long long)bi->addr,
		    (unsigned long long)bi->length, bi->access, w->bind_rkey);
	return RNICPI_WC_MW_BIND_ERR;
}

int siw_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		 struct rnicpi_mw **out)
{
	struct siw_device *dev = to_siw_pd(pd)->dev;
	struct siw_mw *mw;
	struct siw_mr *slot;
	int rc;

	if (type != RNICPI_MW_TYPE_1 && type != RNICPI_MW_TYPE_2) {
		siw_info(dev, "alloc_mw: type %d", type);
		return -EINVAL;
	}
	mw = calloc(1, sizeof(*mw));
	slot = calloc(1, sizeof(*slot));
	if (!mw || !slot) {
		free(mw);
		free(slot);
		return -ENOMEM;
	}
	atomic_init(&slot->ref, 1);
	atomic_init(&slot->valid, false);
	slot->dev = dev;
	slot->pd = pd;
	slot->is_mw = true;
	slot->mw_type = type;
	slot->mw_handle = &mw->base;
	pthread_mutex_init(&slot->mw_lock, NULL);
	rc = rnicpi_key_alloc(&dev->mr_keys, slot, &slot->stag);
	if (rc) {
		siw_info(dev, "alloc_mw: no free STag (%d)", rc);
		pthread_mutex_destroy(&slot->mw_lock);
		free(slot);
		free(mw);
		return rc;
	}
	mw->slot = slot;
	mw->base.pd = pd;
	mw->base.type = type;
	mw->base.rkey = slot->stag;
	*out = &mw->base;
	return 0;
}

int siw_dealloc_mw(struct rnicpi_mw *m)
{
	struct siw_mw *mw = to_siw_mw(m);
	struct siw_mr *slot = mw->slot, *old;

	pthread_mutex_lock(&slot->mw_lock);
	old = slot->bound;
	slot->bound = NULL;
	pthread_mutex_unlock(&slot->mw_lock);
	binding_end(old);
	if (rnicpi_key_free(&slot->dev->mr_keys, slot->stag))
		siw_info(slot->dev, "dealloc_mw: STag 0x%08x not current",
			 slot->stag);
	siw_mr_put(slot);
	free(mw);
	return 0;
}

/* RNICPI_SEND_SINK_MW: a Read's sink SGE names a window. */
int siw_sink_resolve(struct siw_qp *qp, const struct rnicpi_sge *sge,
		     struct siw_mr **out, uint8_t **ptr)
{
	struct siw_mr *b = siw_stag_get(qp->dev, sge->lkey);
	int rc = 0;

	if (!b)
		return -ENOENT;
	if (!b->parent || !siw_mr_usable(b) || b->pd != &qp->pd->base ||
	    (b->qp_bound && b->qpn != qp->base.qp_num))
		rc = -EPERM;
	else if (!(b->access & RNICPI_ACCESS_REMOTE_WRITE))
		rc = -EACCES;
	else if (!in_range(sge->addr, sge->length, b->iova, b->length))
		rc = -ERANGE;
	if (rc) {
		siw_mr_put(b);
		return rc;
	}
	*out = b;
	*ptr = b->addr + (sge->addr - b->iova);
	return 0;
}

/* RNICPI_SEND_SINK_INV: the Read is done, its sink key stops. */
void siw_sink_invalidate(struct siw_qp *qp, uint32_t key)
{
	struct siw_mr *mr = rnicpi_key_lookup(&qp->dev->mr_keys, key);
	struct siw_mr *b = NULL;

	if (!mr)
		return;
	if (mr->pd == &qp->pd->base) {
		if (!mr->is_mw) {
			atomic_store(&mr->valid, false);
		} else {
			pthread_mutex_lock(&mr->mw_lock);
			b = mr->bound;
			mr->bound = NULL;
			pthread_mutex_unlock(&mr->mw_lock);
			binding_end(b);
		}
	}
	siw_mr_put(mr);
}
