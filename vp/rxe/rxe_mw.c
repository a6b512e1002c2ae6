/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE memory windows (IBA 10.6.7) and the key checks shared by
 * regions and windows: what an lkey or rkey names, whether a QP may use
 * it for these bytes with these rights, invalidation.
 *
 * Type 1 windows are PD-wide; a bind gives them a new key byte. Type 2
 * windows are bound to one QP with a key byte the consumer chooses, and
 * are unbound by LOCAL_INV or SEND_WITH_INV (IBA 10.6.7.2).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "vp/rxe/rxe.h"

void rxe_mem_get(struct rxe_mem_hdr *h)
{
	atomic_fetch_add(&h->ref, 1);
}

void rxe_mem_put(struct rxe_mem_hdr *h)
{
	if (atomic_fetch_sub(&h->ref, 1) != 1)
		return;
	if (h->kind == RXE_MEM_MW) {
		struct rxe_mw *mw = container_of(h, struct rxe_mw, hdr);

		pthread_mutex_destroy(&mw->lock);
		g_free(mw);
	} else {
		g_free(container_of(h, struct rxe_mr, hdr));
	}
}

void rxe_mr_get(struct rxe_mr *mr)
{
	rxe_mem_get(&mr->hdr);
}

void rxe_mr_put(struct rxe_mr *mr)
{
	rxe_mem_put(&mr->hdr);
}

/* [va, va + len) inside [start, start + size)? Without overflow. */
static bool in_range(uint64_t va, uint64_t len, uint64_t start, uint64_t size)
{
	return va >= start && va - start <= size && len <= size - (va - start);
}

static enum rxe_mem_err mr_check(struct rxe_qp *qp, struct rxe_mr *mr,
				 uint32_t key, bool remote, uint64_t va,
				 uint64_t len, unsigned int access)
{
	if (atomic_load(&mr->invalid) ||
	    (remote ? mr->base.rkey : mr->base.lkey) != key)
		return RXE_MEM_BAD_KEY;
	if (mr->base.pd != qp->base.pd)
		return RXE_MEM_BAD_PD;
	if ((mr->access & access) != access)
		return RXE_MEM_BAD_ACCESS;
	if (!in_range(va, len, mr->iova, mr->length))
		return RXE_MEM_BAD_BOUNDS;
	return RXE_MEM_OK;
}

/* IBA 10.6.7: a window is checked against its own binding, then the bytes
 * are found in the region it opens onto. */
static enum rxe_mem_err mw_check(struct rxe_qp *qp, struct rxe_mw *mw,
				 uint32_t key, uint64_t *va, uint64_t len,
				 unsigned int access, struct rxe_mr **mr)
{
	enum rxe_mem_err e = RXE_MEM_OK;

	pthread_mutex_lock(&mw->lock);
	if (!mw->bound || mw->base.rkey != key)
		e = RXE_MEM_BAD_KEY;
	else if (mw->base.pd != qp->base.pd ||
		 (mw->base.type == RNICPI_MW_TYPE_2 &&
		  mw->qpn != qp->base.qp_num))
		e = RXE_MEM_BAD_PD;
	else if ((mw->access & access) != access)
		e = RXE_MEM_BAD_ACCESS;
	else if (!in_range(*va, len, mw->va, mw->length))
		e = RXE_MEM_BAD_BOUNDS;
	else if (atomic_load(&mw->mr->invalid))
		e = RXE_MEM_BAD_KEY;
	if (!e) {
		/* A zero-based window's addresses count from its start. */
		*va = mw->mr_va + (*va - mw->va);
		*mr = mw->mr;
		rxe_mr_get(*mr);
	}
	pthread_mutex_unlock(&mw->lock);
	return e;
}

enum rxe_mem_err rxe_mem_resolve(struct rxe_qp *qp, uint32_t key, bool remote,
				 uint64_t va, uint64_t len, unsigned int access,
				 struct rxe_mr **out, uint8_t **ptr)
{
	struct rxe_mem_hdr *h = rnicpi_key_lookup(&qp->dev->keys, key);
	struct rxe_mr *mr = NULL;
	enum rxe_mem_err e;

	if (!h)
		return RXE_MEM_BAD_KEY;
	if (h->kind == RXE_MEM_MR) {
		mr = container_of(h, struct rxe_mr, hdr);
		e = mr_check(qp, mr, key, remote, va, len, access);
		if (!e)
			rxe_mr_get(mr);
	} else if (remote) {
		e = mw_check(qp, container_of(h, struct rxe_mw, hdr), key, &va,
			     len, access, &mr);
	} else {
		e = RXE_MEM_BAD_KEY; /* a window is no lkey */
	}
	rxe_mem_put(h);
	if (e)
		return e;
	*out = mr;
	*ptr = mr->addr + (va - mr->iova);
	return RXE_MEM_OK;
}

static void mw_unbind_locked(struct rxe_mw *mw)
{
	if (!mw->bound)
		return;
	mw->bound = false;
	atomic_fetch_sub(&mw->mr->n_binds, 1);
	rxe_mr_put(mw->mr);
	mw->mr = NULL;
}

/* RNICPI_SEND_SINK_MW: a READ's sink SGE names a window of @qp's PD (a
 * type 2 one bound to @qp) with remote write, which a READ response
 * writes into as a peer's WRITE would (rnicpi.h); never a region. */
enum rxe_mem_err rxe_sink_resolve(struct rxe_qp *qp, uint32_t key,
				  uint64_t va, uint64_t len,
				  struct rxe_mr **out, uint8_t **ptr)
{
	struct rxe_mem_hdr *h = rnicpi_key_lookup(&qp->dev->keys, key);
	struct rxe_mr *mr = NULL;
	enum rxe_mem_err e;

	if (!h)
		return RXE_MEM_BAD_KEY;
	if (h->kind == RXE_MEM_MW)
		e = mw_check(qp, container_of(h, struct rxe_mw, hdr), key, &va,
			     len, RNICPI_ACCESS_REMOTE_WRITE, &mr);
	else
		e = RXE_MEM_BAD_KEY; /* a region's lkey is no window */
	rxe_mem_put(h);
	if (e)
		return e;
	*out = mr;
	*ptr = mr->addr + (va - mr->iova);
	return RXE_MEM_OK;
}

/* RNICPI_SEND_SINK_INV: the READ succeeded, its sink @key stops as a
 * LOCAL_INV would stop it, but for a window of either type (IT-API's
 * IT_UNLINK_LOCAL_SINK unlinks narrow and wide RMRs alike). A key that
 * is gone or of another PD is left alone. */
void rxe_sink_invalidate(struct rxe_qp *qp, uint32_t key)
{
	struct rxe_mem_hdr *h = rnicpi_key_lookup(&qp->dev->keys, key);

	if (!h)
		return;
	if (h->kind == RXE_MEM_MR) {
		struct rxe_mr *mr = container_of(h, struct rxe_mr, hdr);

		if (mr->base.pd == qp->base.pd &&
		    (mr->base.lkey == key || mr->base.rkey == key))
			atomic_store(&mr->invalid, true);
	} else {
		struct rxe_mw *mw = container_of(h, struct rxe_mw, hdr);

		pthread_mutex_lock(&mw->lock);
		if (mw->bound && mw->base.rkey == key &&
		    mw->base.pd == qp->base.pd)
			mw_unbind_locked(mw);
		pthread_mutex_unlock(&mw->lock);
	}
	rxe_mem_put(h);
}

int rxe_mem_invalidate(struct rxe_qp *qp, uint32_t key, bool remote)
{
	struct rxe_mem_hdr *h = rnicpi_key_lookup(&qp->dev->keys, key);
	int err = 0;

	if (!h)
		return -EINVAL;
	if (h->kind == RXE_MEM_MR) {
		struct rxe_mr *mr = container_of(h, struct rxe_mr, hdr);

		if (mr->base.pd != qp->base.pd || mr->base.rkey != key)
			err = -EINVAL;
		else
			atomic_store(&mr->invalid, true);
	} else {
		struct rxe_mw *mw = container_of(h, struct rxe_mw, hdr);

		/* IBA 10.6.7.2.4: only type 2 windows are invalidated, by a
		 * QP of their PD (and remotely only by the QP they are bound
		 * to). */
		pthread_mutex_lock(&mw->lock);
		if (mw->base.type != RNICPI_MW_TYPE_2 || !mw->bound ||
		    mw->base.rkey != key || mw->base.pd != qp->base.pd ||
		    (remote && mw->qpn != qp->base.qp_num))
			err = -EINVAL;
		else
			mw_unbind_locked(mw);
		pthread_mutex_unlock(&mw->lock);
	}
	rxe_mem_put(h);
	return err;
}

int rxe_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		 struct rnicpi_mw **out)
{
	struct rxe_dev *dev = to_rxe_dev(pd->device);
	struct rxe_mw *mw;
	uint32_t key;
	int err;

	if (type != RNICPI_MW_TYPE_1 && type != RNICPI_MW_TYPE_2) {
		rxe_dev_warn(dev, "alloc_mw: type %d", type);
		return -EINVAL;
	}
	mw = g_new0(struct rxe_mw, 1);
	mw->hdr.kind = RXE_MEM_MW;
	atomic_init(&mw->hdr.ref, 1);
	pthread_mutex_init(&mw->lock, NULL);
	mw->base.pd = pd;
	mw->base.type = type;
	err = rnicpi_key_alloc(&dev->keys, &mw->hdr, &key);
	if (err) {
		pthread_mutex_destroy(&mw->lock);
		g_free(mw);
		return err;
	}
	mw->base.rkey = key;
	*out = &mw->base;
	return 0;
}

int rxe_dealloc_mw(struct rnicpi_mw *w)
{
	struct rxe_mw *mw = to_rxe_mw(w);
	struct rxe_dev *dev = to_rxe_dev(w->pd->device);

	pthread_mutex_lock(&mw->lock);
	mw_unbind_locked(mw);
	pthread_mutex_unlock(&mw->lock);
	rnicpi_key_free(&dev->keys, w->rkey);
	rxe_mem_put(&mw->hdr);
	return 0;
}

/* IBA 10.6.7.2: bind (or with length 0 unbind) a window onto a region. */
enum rnicpi_wc_status rxe_mw_bind(struct rxe_qp *qp,
				  const struct rxe_send_wqe *w)
{
	struct rxe_mw *mw = to_rxe_mw(w->bind_mw);
	const struct rnicpi_mw_bind_info *b = &w->bind;
	struct rxe_dev *dev = qp->dev;
	struct rxe_mr *mr = b->mr ? to_rxe_mr(b->mr) : NULL;
	unsigned int remote = RNICPI_ACCESS_REMOTE_WRITE |
			      RNICPI_ACCESS_REMOTE_READ |
			      RNICPI_ACCESS_REMOTE_ATOMIC;
	uint32_t key = mw->base.rkey;
	int err;

	pthread_mutex_lock(&mw->lock);
	if (mw->base.pd != qp->base.pd)
		goto bad;
	if (b->length == 0) {
		if (mw->base.type == RNICPI_MW_TYPE_2)
			goto bad; /* type 2 is unbound by invalidation */
		mw_unbind_locked(mw);
		pthread_mutex_unlock(&mw->lock);
		return RNICPI_WC_SUCCESS;
	}
	if (!mr || mr->base.pd != qp->base.pd || atomic_load(&mr->invalid) ||
	    !(mr->access & RNICPI_ACCESS_MW_BIND) ||
	    (b->access & ~(remote | RNICPI_ACCESS_ZERO_BASED)) ||
	    ((b->access & (RNICPI_ACCESS_REMOTE_WRITE |
			   RNICPI_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & RNICPI_ACCESS_LOCAL_WRITE)) ||
	    !in_range(b->addr, b->length, mr->iova, mr->length) ||
	    (mw->base.type == RNICPI_MW_TYPE_2 && mw->bound))
		goto bad;
	/* A new key for the new binding: the old one stops working. Its
	 * byte is the one the bind names, for both types (rnicpi.h; the
	 * kernel's rxe takes it from the WR alike): the consumer announced
	 * it before the bind ran. */
	err = rnicpi_key_set_byte(&dev->keys, mw->base.rkey,
				  (uint8_t)w->bind_rkey, &key);
	if (err)
		goto bad;
	mw_unbind_locked(mw);
	rxe_mr_get(mr);
	atomic_fetch_add(&mr->n_binds, 1);
	mw->mr = mr;
	/* Zero-based (IBA 10.6.7.2, RNICPI_ACCESS_ZERO_BASED in the bind):
	 * the peer's virtual address 0 is the window's first byte. */
	mw->va = (b->access & RNICPI_ACCESS_ZERO_BASED) ? 0 : b->addr;
	mw->mr_va = b->addr;
	mw->length = b->length;
	mw->access = b->access & remote;
	mw->qpn = qp->base.qp_num;
	mw->bound = true;
	mw->base.rkey = key;
	pthread_mutex_unlock(&mw->lock);
	return RNICPI_WC_SUCCESS;
bad:
	pthread_mutex_unlock(&mw->lock);
	rxe_qp_warn(qp, "BIND_MW of window 0x%x (type %d) onto [0x%" PRIx64
		    ", +%" PRIu64 ") access 0x%x refused", mw->base.rkey,
		    mw->base.type, b->addr, b->length, b->access);
	return RNICPI_WC_MW_BIND_ERR;
}
