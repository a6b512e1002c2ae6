/* SPDX-License-Identifier: MIT */
/*
 * ual_objects.c - the common object header (references, children, locks)
 * and the PD, MW, SRQ, QP and AH tables.
 *
 * A create reserves a child slot on every parent first (under the
 * parent's ctl, so a concurrent destroy of the parent sees it and answers
 * -EBUSY), then asks the provider, and gives the slots back if the
 * provider refuses. A destroy checks its own children, asks the provider,
 * marks the object dead, gives back its slots on the parents and drops
 * the creation reference; the memory stays while lookups hold references.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "ual/ual_private.h"

/* ------------------------------------------------------------------ */
/* Object header                                                       */
/* ------------------------------------------------------------------ */

void ual_obj_init(struct ual_obj *obj, void (*release)(struct ual_obj *))
{
	obj->ref = 1;
	obj->release = release;
	g_rec_mutex_init(&obj->ctl);
	g_rw_lock_init(&obj->live);
}

void ual_obj_set_prefix(struct ual_obj *obj, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(obj->prefix, sizeof(obj->prefix), fmt, ap);
	va_end(ap);
}

void ual_obj_get(struct ual_obj *obj)
{
	g_atomic_int_inc(&obj->ref);
}

void ual_obj_put(struct ual_obj *obj)
{
	if (!obj || !g_atomic_int_dec_and_test(&obj->ref))
		return;
	g_rec_mutex_clear(&obj->ctl);
	g_rw_lock_clear(&obj->live);
	obj->release(obj);
}

int ual_obj_reserve_child(struct ual_obj *parent, const char *what)
{
	g_rec_mutex_lock(&parent->ctl);
	if (ual_obj_dead(parent)) {
		g_rec_mutex_unlock(&parent->ctl);
		ual_obj_fail(parent, -ENODEV, "cannot create %s", what);
		return -ENODEV;
	}
	parent->children++;
	g_rec_mutex_unlock(&parent->ctl);
	return 0;
}

void ual_obj_release_child(struct ual_obj *parent)
{
	g_rec_mutex_lock(&parent->ctl);
	g_assert(parent->children > 0);
	parent->children--;
	g_rec_mutex_unlock(&parent->ctl);
}

int ual_obj_lock_alive(struct ual_obj *obj, const char *op)
{
	g_rec_mutex_lock(&obj->ctl);
	if (ual_obj_dead(obj)) {
		g_rec_mutex_unlock(&obj->ctl);
		ual_obj_fail(obj, -ENODEV, "%s: already destroyed", op);
		return -ENODEV;
	}
	return 0;
}

int ual_obj_read_alive(struct ual_obj *obj)
{
	g_rw_lock_reader_lock(&obj->live);
	if (ual_obj_dead(obj)) {
		g_rw_lock_reader_unlock(&obj->live);
		return -ENODEV;
	}
	return 0;
}

int ual_obj_begin_destroy(struct ual_obj *obj, const char *children_what)
{
	if (obj->children) {
		ual_obj_fail(obj, -EBUSY, "cannot destroy: %u %s still use it",
			     obj->children, children_what);
		return -EBUSY;
	}
	g_rw_lock_writer_lock(&obj->live);
	return 0;
}

void ual_obj_end_destroy(struct ual_obj *obj)
{
	g_atomic_int_set(&obj->dead, 1);
	g_rw_lock_writer_unlock(&obj->live);
}

/* ------------------------------------------------------------------ */
/* Protection domains                                                  */
/* ------------------------------------------------------------------ */

static void pd_release(struct ual_obj *obj)
{
	struct ual_pd *pd = container_of(obj, struct ual_pd, obj);

	ual_device_put(pd->dev);
	g_free(pd);
}

void ual_pd_get(struct ual_pd *pd)
{
	ual_obj_get(&pd->obj);
}

void ual_pd_put(struct ual_pd *pd)
{
	if (pd)
		ual_obj_put(&pd->obj);
}

int ual_pd_alloc(struct ual_device *d, struct ual_pd **out)
{
	struct rnicpi_pd *rpd = NULL;
	struct ual_pd *pd;
	int err;

	err = ual_obj_reserve_child(&d->obj, "a PD");
	if (err)
		return err;
	err = d->ops.alloc_pd(d->rdev, &rpd);
	if (err) {
		ual_obj_fail(&d->obj, err, "alloc_pd");
		ual_obj_release_child(&d->obj);
		return err;
	}
	pd = g_new0(struct ual_pd, 1);
	ual_obj_init(&pd->obj, pd_release);
	ual_obj_set_prefix(&pd->obj, "PD[%d] %s:",
			   g_atomic_int_add(&d->next_id, 1), d->name);
	pd->dev = ual_device_get(d);
	pd->rpd = rpd;
	rpd->core_ctx = pd;
	ual_obj_debug(&pd->obj, "allocated");
	*out = pd;
	return 0;
}

int ual_pd_free(struct ual_pd *pd)
{
	struct ual_device *d = pd->dev;
	int err;

	err = ual_obj_lock_alive(&pd->obj, "free");
	if (err)
		return err;
	err = ual_obj_begin_destroy(&pd->obj, "MRs, MWs, QPs, SRQs or AHs");
	if (err)
		goto out_unlock;
	err = d->ops.dealloc_pd(pd->rpd);
	if (err) {
		g_rw_lock_writer_unlock(&pd->obj.live);
		ual_obj_fail(&pd->obj, err, "dealloc_pd");
		goto out_unlock;
	}
	pd->rpd = NULL;
	ual_obj_end_destroy(&pd->obj);
	g_rec_mutex_unlock(&pd->obj.ctl);
	ual_obj_release_child(&d->obj);
	ual_obj_debug(&pd->obj, "freed");
	ual_pd_put(pd);
	return 0;

out_unlock:
	g_rec_mutex_unlock(&pd->obj.ctl);
	return err;
}

struct ual_device *ual_pd_device(const struct ual_pd *pd)
{
	return pd->dev;
}

/* ------------------------------------------------------------------ */
/* Memory windows                                                      */
/* ------------------------------------------------------------------ */

static void mw_release(struct ual_obj *obj)
{
	struct ual_mw *mw = container_of(obj, struct ual_mw, obj);

	ual_pd_put(mw->pd);
	g_free(mw);
}

int ual_mw_alloc(struct ual_pd *pd, enum rnicpi_mw_type type,
		 struct ual_mw **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_mw *rmw = NULL;
	struct ual_mw *mw;
	int err;

	if (type != RNICPI_MW_TYPE_1 && type != RNICPI_MW_TYPE_2) {
		ual_obj_fail(&pd->obj, -EINVAL, "alloc_mw: type %d", type);
		return -EINVAL;
	}
	err = ual_obj_reserve_child(&pd->obj, "an MW");
	if (err)
		return err;
	err = d->ops.alloc_mw(pd->rpd, type, &rmw);
	if (err) {
		ual_obj_fail(&pd->obj, err, "alloc_mw type %d", type);
		ual_obj_release_child(&pd->obj);
		return err;
	}
	mw = g_new0(struct ual_mw, 1);
	ual_obj_init(&mw->obj, mw_release);
	ual_obj_set_prefix(&mw->obj, "MW[0x%x] %s:", rmw->rkey, d->name);
	ual_pd_get(pd);
	mw->pd = pd;
	mw->rmw = rmw;
	rmw->core_ctx = mw;
	ual_obj_debug(&mw->obj, "allocated, type %d", type);
	*out = mw;
	return 0;
}

int ual_mw_free(struct ual_mw *mw)
{
	int err;

	err = ual_obj_lock_alive(&mw->obj, "free");
	if (err)
		return err;
	g_rw_lock_writer_lock(&mw->obj.live);
	err = mw->pd->dev->ops.dealloc_mw(mw->rmw);
	if (err) {
		g_rw_lock_writer_unlock(&mw->obj.live);
		g_rec_mutex_unlock(&mw->obj.ctl);
		ual_obj_fail(&mw->obj, err, "dealloc_mw");
		return err;
	}
	mw->rmw = NULL;
	ual_obj_end_destroy(&mw->obj);
	g_rec_mutex_unlock(&mw->obj.ctl);
	ual_obj_release_child(&mw->pd->obj);
	ual_obj_put(&mw->obj);
	return 0;
}

uint32_t ual_mw_rkey(const struct ual_mw *mw)
{
	const struct rnicpi_mw *rmw = mw->rmw;

	return rmw ? rmw->rkey : 0;
}

struct rnicpi_mw *ual_mw_rnicpi(struct ual_mw *mw)
{
	return mw->rmw;
}

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */
/* ------------------------------------------------------------------ */

static void srq_release(struct ual_obj *obj)
{
	struct ual_srq *srq = container_of(obj, struct ual_srq, obj);

	ual_pd_put(srq->pd);
	g_free(srq);
}

void ual_srq_get(struct ual_srq *srq)
{
	ual_obj_get(&srq->obj);
}

void ual_srq_put(struct ual_srq *srq)
{
	if (srq)
		ual_obj_put(&srq->obj);
}

int ual_srq_create(struct ual_pd *pd, struct rnicpi_srq_attr *attr,
		   struct ual_srq **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_srq *rsrq = NULL;
	struct ual_srq *srq;
	int err;

	err = ual_obj_reserve_child(&pd->obj, "an SRQ");
	if (err)
		return err;
	err = d->ops.create_srq(pd->rpd, attr, &rsrq);
	if (err) {
		ual_obj_fail(&pd->obj, err, "create_srq max_wr %u max_sge %u",
			     attr->max_wr, attr->max_sge);
		ual_obj_release_child(&pd->obj);
		return err;
	}
	srq = g_new0(struct ual_srq, 1);
	ual_obj_init(&srq->obj, srq_release);
	ual_obj_set_prefix(&srq->obj, "SRQ[%d] %s:",
			   g_atomic_int_add(&d->next_id, 1), d->name);
	ual_pd_get(pd);
	srq->pd = pd;
	srq->rsrq = rsrq;
	rsrq->core_ctx = srq;
	ual_obj_debug(&srq->obj, "created, max_wr %u", attr->max_wr);
	*out = srq;
	return 0;
}

int ual_srq_destroy(struct ual_srq *srq)
{
	int err;

	err = ual_obj_lock_alive(&srq->obj, "destroy");
	if (err)
		return err;
	err = ual_obj_begin_destroy(&srq->obj, "QPs");
	if (err)
		goto out_unlock;
	err = srq->pd->dev->ops.destroy_srq(srq->rsrq);
	if (err) {
		g_rw_lock_writer_unlock(&srq->obj.live);
		ual_obj_fail(&srq->obj, err, "destroy_srq");
		goto out_unlock;
	}
	srq->rsrq = NULL;
	ual_obj_end_destroy(&srq->obj);
	g_rec_mutex_unlock(&srq->obj.ctl);
	ual_obj_release_child(&srq->pd->obj);
	ual_srq_put(srq);
	return 0;

out_unlock:
	g_rec_mutex_unlock(&srq->obj.ctl);
	return err;
}

int ual_srq_modify(struct ual_srq *srq, struct rnicpi_srq_attr *attr,
		   unsigned int mask)
{
	int err;

	err = ual_obj_lock_alive(&srq->obj, "modify");
	if (err)
		return err;
	err = srq->pd->dev->ops.modify_srq(srq->rsrq, attr, mask);
	g_rec_mutex_unlock(&srq->obj.ctl);
	if (err)
		ual_obj_fail(&srq->obj, err, "modify_srq mask 0x%x", mask);
	return err;
}

int ual_srq_query(struct ual_srq *srq, struct rnicpi_srq_attr *attr)
{
	int err;

	err = ual_obj_lock_alive(&srq->obj, "query");
	if (err)
		return err;
	err = srq->pd->dev->ops.query_srq(srq->rsrq, attr);
	g_rec_mutex_unlock(&srq->obj.ctl);
	if (err)
		ual_obj_fail(&srq->obj, err, "query_srq");
	return err;
}

int ual_srq_post_recv(struct ual_srq *srq, const struct rnicpi_recv_wr *wr,
		      const struct rnicpi_recv_wr **bad)
{
	int err;

	err = ual_obj_read_alive(&srq->obj);
	if (err) {
		*bad = wr;
		return err;
	}
	err = srq->pd->dev->ops.post_srq_recv(srq->rsrq, wr, bad);
	g_rw_lock_reader_unlock(&srq->obj.live);
	return err;
}

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */
/* ------------------------------------------------------------------ */

static void qp_release(struct ual_obj *obj)
{
	struct ual_qp *qp = container_of(obj, struct ual_qp, obj);

	ual_srq_put(qp->srq);
	ual_cq_put(qp->recv_cq);
	ual_cq_put(qp->send_cq);
	ual_pd_put(qp->pd);
	g_free(qp);
}

struct ual_qp *ual_qp_get(struct ual_qp *qp)
{
	ual_obj_get(&qp->obj);
	return qp;
}

void ual_qp_put(struct ual_qp *qp)
{
	if (qp)
		ual_obj_put(&qp->obj);
}

/* Give back the child slots a QP holds (or reserved) on its parents. */
static void qp_release_parents(struct ual_pd *pd, struct ual_cq *send_cq,
			       struct ual_cq *recv_cq, struct ual_srq *srq)
{
	if (srq)
		ual_obj_release_child(&srq->obj);
	if (recv_cq)
		ual_obj_release_child(&recv_cq->obj);
	if (send_cq)
		ual_obj_release_child(&send_cq->obj);
	ual_obj_release_child(&pd->obj);
}

static int qp_check_attr(struct ual_pd *pd, const struct ual_qp_init_attr *a)
{
	struct ual_device *d = pd->dev;

	if (!a->send_cq || !a->recv_cq) {
		ual_obj_fail(&pd->obj, -EINVAL,
			     "create_qp: a send CQ and a receive CQ are needed");
		return -EINVAL;
	}
	if (a->send_cq->dev != d || a->recv_cq->dev != d ||
	    (a->srq && a->srq->pd->dev != d)) {
		ual_obj_fail(&pd->obj, -EINVAL,
			     "create_qp: CQs and SRQ must be on device %s",
			     d->name);
		return -EINVAL;
	}
	return 0;
}

int ual_qp_create(struct ual_pd *pd, struct ual_qp_init_attr *attr,
		  struct ual_qp **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_qp_init_attr init = { 0 };
	struct rnicpi_qp *rqp = NULL;
	struct ual_qp *qp;
	int err;

	err = qp_check_attr(pd, attr);
	if (err)
		return err;
	err = ual_obj_reserve_child(&pd->obj, "a QP");
	if (err)
		return err;
	err = ual_obj_reserve_child(&attr->send_cq->obj, "a QP (send)");
	if (err)
		goto err_pd;
	err = ual_obj_reserve_child(&attr->recv_cq->obj, "a QP (receive)");
	if (err)
		goto err_send_cq;
	if (attr->srq) {
		err = ual_obj_reserve_child(&attr->srq->obj, "a QP");
		if (err)
			goto err_recv_cq;
	}

	init.qp_type = attr->qp_type;
	init.send_cq = attr->send_cq->rcq;
	init.recv_cq = attr->recv_cq->rcq;
	init.srq = attr->srq ? attr->srq->rsrq : NULL;
	init.cap = attr->cap;
	init.sq_sig_all = attr->sq_sig_all;
	init.port_num = 1;
	err = d->ops.create_qp(pd->rpd, &init, &rqp);
	if (err) {
		ual_obj_fail(&pd->obj, err,
			     "create_qp type %d send_wr %u recv_wr %u",
			     attr->qp_type, attr->cap.max_send_wr,
			     attr->cap.max_recv_wr);
		qp_release_parents(pd, attr->send_cq, attr->recv_cq,
				   attr->srq);
		return err;
	}
	attr->cap = init.cap;

	qp = g_new0(struct ual_qp, 1);
	ual_obj_init(&qp->obj, qp_release);
	qp->qp_num = rqp->qp_num;
	ual_obj_set_prefix(&qp->obj, "QP[%u] %s:", qp->qp_num, d->name);
	ual_pd_get(pd);
	qp->pd = pd;
	ual_cq_get(attr->send_cq);
	qp->send_cq = attr->send_cq;
	ual_cq_get(attr->recv_cq);
	qp->recv_cq = attr->recv_cq;
	if (attr->srq) {
		ual_srq_get(attr->srq);
		qp->srq = attr->srq;
	}
	qp->rqp = rqp;
	rqp->core_ctx = qp;

	g_mutex_lock(&d->qp_lock);
	if (g_hash_table_contains(d->qps, GUINT_TO_POINTER(qp->qp_num)))
		ual_obj_warn(&qp->obj,
			     "the provider handed out this QPN twice; lookups find the first");
	else
		g_hash_table_insert(d->qps, GUINT_TO_POINTER(qp->qp_num), qp);
	g_mutex_unlock(&d->qp_lock);
	ual_obj_debug(&qp->obj, "created, type %d", attr->qp_type);
	*out = qp;
	return 0;

err_recv_cq:
	ual_obj_release_child(&attr->recv_cq->obj);
err_send_cq:
	ual_obj_release_child(&attr->send_cq->obj);
err_pd:
	ual_obj_release_child(&pd->obj);
	return err;
}

int ual_qp_destroy(struct ual_qp *qp)
{
	struct ual_device *d = qp->pd->dev;
	int err;

	err = ual_obj_lock_alive(&qp->obj, "destroy");
	if (err)
		return err;
	g_rw_lock_writer_lock(&qp->obj.live);
	err = d->ops.destroy_qp(qp->rqp);
	if (err) {
		g_rw_lock_writer_unlock(&qp->obj.live);
		g_rec_mutex_unlock(&qp->obj.ctl);
		ual_obj_fail(&qp->obj, err, "destroy_qp");
		return err;
	}
	qp->rqp = NULL;
	ual_obj_end_destroy(&qp->obj);
	g_mutex_lock(&d->qp_lock);
	if (g_hash_table_lookup(d->qps, GUINT_TO_POINTER(qp->qp_num)) == qp)
		g_hash_table_remove(d->qps, GUINT_TO_POINTER(qp->qp_num));
	g_mutex_unlock(&d->qp_lock);
	g_rec_mutex_unlock(&qp->obj.ctl);
	qp_release_parents(qp->pd, qp->send_cq, qp->recv_cq, qp->srq);
	ual_obj_debug(&qp->obj, "destroyed");
	ual_qp_put(qp);
	return 0;
}

static int qp_modify(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		     unsigned int mask, bool report)
{
	int err;

	err = ual_obj_lock_alive(&qp->obj, "modify");
	if (err)
		return err;
	err = qp->pd->dev->ops.modify_qp(qp->rqp, attr, mask);
	g_rec_mutex_unlock(&qp->obj.ctl);
	if (err && report)
		ual_obj_fail(&qp->obj, err, "modify_qp mask 0x%x state %d",
			     mask, attr->qp_state);
	return err;
}

int ual_qp_modify(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		  unsigned int mask)
{
	return qp_modify(qp, attr, mask, true);
}

int ual_qp_try_modify(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		      unsigned int mask)
{
	return qp_modify(qp, attr, mask, false);
}

int ual_qp_query(struct ual_qp *qp, struct rnicpi_qp_attr *attr,
		 unsigned int mask)
{
	struct rnicpi_qp_init_attr init;
	int err;

	err = ual_obj_lock_alive(&qp->obj, "query");
	if (err)
		return err;
	err = qp->pd->dev->ops.query_qp(qp->rqp, attr, mask, &init);
	g_rec_mutex_unlock(&qp->obj.ctl);
	if (err)
		ual_obj_fail(&qp->obj, err, "query_qp mask 0x%x", mask);
	return err;
}

uint32_t ual_qp_num(const struct ual_qp *qp)
{
	return qp->qp_num;
}

struct ual_pd *ual_qp_pd(const struct ual_qp *qp)
{
	return qp->pd;
}

struct rnicpi_qp *ual_qp_rnicpi(struct ual_qp *qp)
{
	return qp->rqp;
}

struct ual_qp *ual_qp_lookup(struct ual_device *d, uint32_t qp_num)
{
	struct ual_qp *qp;

	g_mutex_lock(&d->qp_lock);
	qp = g_hash_table_lookup(d->qps, GUINT_TO_POINTER(qp_num));
	if (qp && !ual_obj_dead(&qp->obj))
		ual_qp_get(qp);
	else
		qp = NULL;
	g_mutex_unlock(&d->qp_lock);
	return qp;
}

void ual_qp_set_user(struct ual_qp *qp, void *user)
{
	g_atomic_pointer_set(&qp->user, user);
}

void *ual_qp_user(const struct ual_qp *qp)
{
	return g_atomic_pointer_get((gpointer *)&qp->user);
}

int ual_qp_post_send(struct ual_qp *qp, const struct rnicpi_send_wr *wr,
		     const struct rnicpi_send_wr **bad)
{
	int err;

	err = ual_obj_read_alive(&qp->obj);
	if (err) {
		*bad = wr;
		return err;
	}
	err = qp->pd->dev->ops.post_send(qp->rqp, wr, bad);
	g_rw_lock_reader_unlock(&qp->obj.live);
	return err;
}

int ual_qp_post_recv(struct ual_qp *qp, const struct rnicpi_recv_wr *wr,
		     const struct rnicpi_recv_wr **bad)
{
	int err;

	err = ual_obj_read_alive(&qp->obj);
	if (err) {
		*bad = wr;
		return err;
	}
	err = qp->pd->dev->ops.post_recv(qp->rqp, wr, bad);
	g_rw_lock_reader_unlock(&qp->obj.live);
	return err;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                     */
/* ------------------------------------------------------------------ */

static void ah_release(struct ual_obj *obj)
{
	struct ual_ah *ah = container_of(obj, struct ual_ah, obj);

	ual_pd_put(ah->pd);
	g_free(ah);
}

int ual_ah_create(struct ual_pd *pd, const struct rnicpi_ah_attr *attr,
		  struct ual_ah **out)
{
	struct ual_device *d = pd->dev;
	struct rnicpi_ah *rah = NULL;
	struct ual_ah *ah;
	int err;

	err = ual_obj_reserve_child(&pd->obj, "an AH");
	if (err)
		return err;
	err = d->ops.create_ah(pd->rpd, attr, &rah);
	if (err) {
		ual_obj_fail(&pd->obj, err, "create_ah port %u", attr->port_num);
		ual_obj_release_child(&pd->obj);
		return err;
	}
	ah = g_new0(struct ual_ah, 1);
	ual_obj_init(&ah->obj, ah_release);
	ual_obj_set_prefix(&ah->obj, "AH[%d] %s:",
			   g_atomic_int_add(&d->next_id, 1), d->name);
	ual_pd_get(pd);
	ah->pd = pd;
	ah->rah = rah;
	rah->core_ctx = ah;
	*out = ah;
	return 0;
}

int ual_ah_destroy(struct ual_ah *ah)
{
	int err;

	err = ual_obj_lock_alive(&ah->obj, "destroy");
	if (err)
		return err;
	g_rw_lock_writer_lock(&ah->obj.live);
	err = ah->pd->dev->ops.destroy_ah(ah->rah);
	if (err) {
		g_rw_lock_writer_unlock(&ah->obj.live);
		g_rec_mutex_unlock(&ah->obj.ctl);
		ual_obj_fail(&ah->obj, err, "destroy_ah");
		return err;
	}
	ah->rah = NULL;
	ual_obj_end_destroy(&ah->obj);
	g_rec_mutex_unlock(&ah->obj.ctl);
	ual_obj_release_child(&ah->pd->obj);
	ual_obj_put(&ah->obj);
	return 0;
}

struct rnicpi_ah *ual_ah_rnicpi(struct ual_ah *ah)
{
	return ah->rah;
}
