/* SPDX-License-Identifier: MIT */
/* testprov_mem.c - the test provider's PDs, MRs, MWs, CQs and AHs. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/provider/testprov.h"

/* ------------------------------------------------------------------ */
/* PD, MR, MW                                                          */
/* ------------------------------------------------------------------ */

int tp_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out)
{
	struct tp_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.device = d;
	*out = &pd->base;
	return 0;
}

int tp_dealloc_pd(struct rnicpi_pd *pd)
{
	free(container_of(pd, struct tp_pd, base));
	return 0;
}

static bool access_ok(unsigned int access)
{
	/* IBA 10.6.3.1: remote write and atomic need local write. */
	return !(access & (RNICPI_ACCESS_REMOTE_WRITE |
			   RNICPI_ACCESS_REMOTE_ATOMIC)) ||
	       (access & RNICPI_ACCESS_LOCAL_WRITE);
}

int tp_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
	      uint64_t iova, unsigned int access,
	      struct rnicpi_mr **out)
{
	struct tp_device *dev = pd_dev(pd);
	struct tp_mr *mr;
	uint32_t key;
	int err;

	if (!access_ok(access) || length == 0)
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->kind = TP_KEY_MR;
	err = rnicpi_key_alloc(&dev->keys, &mr->kind, &key);
	if (err) {
		free(mr);
		return err;
	}
	mr->base.pd = pd;
	mr->base.lkey = key;
	mr->base.rkey = key;
	mr->addr = addr;
	mr->length = length;
	mr->iova = iova;
	mr->access = access;
	*out = &mr->base;
	return 0;
}

int tp_rereg_mr(struct rnicpi_mr *m, unsigned int flags,
		struct rnicpi_pd *pd, void *addr, uint64_t length,
		uint64_t iova, unsigned int access)
{
	struct tp_mr *mr = to_tp_mr(m);
	struct tp_device *dev = pd_dev(m->pd);
	uint32_t key;
	int err = 0;

	if ((flags & RNICPI_REREG_ACCESS) && !access_ok(access))
		return -EINVAL;
	if ((flags & RNICPI_REREG_PD) && pd->device != m->pd->device)
		return -EINVAL;
	pthread_mutex_lock(&tp_lock);
	if (mr->bound_windows) {
		err = -EBUSY;
		goto out;
	}
	err = rnicpi_key_rekey(&dev->keys, m->lkey, &key);
	if (err)
		goto out;
	m->lkey = m->rkey = key;
	if (flags & RNICPI_REREG_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
		mr->iova = iova;
	}
	if (flags & RNICPI_REREG_ACCESS)
		mr->access = access;
	if (flags & RNICPI_REREG_PD)
		m->pd = pd;
out:
	pthread_mutex_unlock(&tp_lock);
	return err;
}

int tp_dereg_mr(struct rnicpi_mr *m)
{
	struct tp_mr *mr = to_tp_mr(m);
	int err;

	pthread_mutex_lock(&tp_lock);
	if (mr->bound_windows) {
		pthread_mutex_unlock(&tp_lock);
		return -EBUSY;
	}
	err = rnicpi_key_free(&pd_dev(m->pd)->keys, m->lkey);
	pthread_mutex_unlock(&tp_lock);
	if (err)
		return err;
	free(mr);
	return 0;
}

int tp_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		struct rnicpi_mw **out)
{
	struct tp_mw *mw;
	uint32_t key;
	int err;

	if (type != RNICPI_MW_TYPE_1)
		return -EOPNOTSUPP;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	mw->kind = TP_KEY_MW;
	err = rnicpi_key_alloc(&pd_dev(pd)->keys, &mw->kind, &key);
	if (err) {
		free(mw);
		return err;
	}
	mw->base.pd = pd;
	mw->base.type = type;
	mw->base.rkey = key;
	*out = &mw->base;
	return 0;
}

int tp_dealloc_mw(struct rnicpi_mw *m)
{
	struct tp_mw *mw = to_tp_mw(m);

	pthread_mutex_lock(&tp_lock);
	if (mw->mr)
		mw->mr->bound_windows--;
	rnicpi_key_free(&pd_dev(m->pd)->keys, m->rkey);
	pthread_mutex_unlock(&tp_lock);
	free(mw);
	return 0;
}

/* Under tp_lock: the MR @key names on @dev, in @pd (NULL: any PD). */
struct tp_mr *tp_find_mr(struct tp_device *dev, struct rnicpi_pd *pd,
			 uint32_t key)
{
	enum tp_key_kind *kind = rnicpi_key_lookup(&dev->keys, key);
	struct tp_mr *mr;

	if (!kind || *kind != TP_KEY_MR)
		return NULL;
	mr = container_of(kind, struct tp_mr, kind);
	if (pd && mr->base.pd != pd)
		return NULL;
	return mr;
}

/* Host address of [addr, addr + len) in @mr's tagged range, or NULL. */
char *tp_mr_range(struct tp_mr *mr, uint64_t addr, uint64_t len,
		  unsigned int need)
{
	if ((mr->access & need) != need)
		return NULL;
	if (addr < mr->iova || len > mr->length ||
	    addr - mr->iova > mr->length - len)
		return NULL;
	return mr->addr + (addr - mr->iova);
}

/* ------------------------------------------------------------------ */
/* CQ                                                                  */
/* ------------------------------------------------------------------ */

int tp_create_cq(struct rnicpi_device *d,
		 const struct rnicpi_cq_init_attr *attr,
		 struct rnicpi_cq **out)
{
	struct tp_cq *cq;
	int err;

	if (attr->cqe == 0 || attr->cqe > TP_MAX_CQE)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	err = rnicpi_cq_ring_init(&cq->ring, attr->cqe);
	if (err) {
		free(cq);
		return err;
	}
	cq->base.device = d;
	cq->base.cqe = attr->cqe;
	cq->base.notify_fd = cq->ring.efd;
	*out = &cq->base;
	return 0;
}

int tp_destroy_cq(struct rnicpi_cq *c)
{
	struct tp_cq *cq = to_tp_cq(c);

	rnicpi_cq_ring_fini(&cq->ring);
	free(cq);
	return 0;
}

int tp_poll_cq(struct rnicpi_cq *c, int n, struct rnicpi_wc *wc)
{
	return rnicpi_cq_ring_poll(&to_tp_cq(c)->ring, n, wc);
}

int tp_req_notify_cq(struct rnicpi_cq *c, int solicited_only)
{
	return rnicpi_cq_ring_arm(&to_tp_cq(c)->ring, solicited_only);
}

int tp_ack_cq_event(struct rnicpi_cq *c)
{
	return rnicpi_cq_ring_ack(&to_tp_cq(c)->ring);
}

void tp_cq_push(struct tp_cq *cq, const struct rnicpi_wc *wc,
		bool solicited)
{
	/* A full ring drops the entry; tests size their CQs. */
	rnicpi_cq_ring_push(&cq->ring, wc, solicited);
}

/* ------------------------------------------------------------------ */
/* AH                                                                  */
/* ------------------------------------------------------------------ */

int tp_create_ah(struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
		 struct rnicpi_ah **out)
{
	struct tp_ah *ah;

	if (attr->port_num != 1)
		return -EINVAL;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->base.pd = pd;
	ah->attr = *attr;
	*out = &ah->base;
	return 0;
}

int tp_destroy_ah(struct rnicpi_ah *ah)
{
	free(to_tp_ah(ah));
	return 0;
}
