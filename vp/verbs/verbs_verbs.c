/* SPDX-License-Identifier: MIT */
/*
 * verbs_verbs.c - protection domains, memory regions, completion queues,
 * shared receive queues, RC and UD queue pairs and address handles of a
 * verbs device: each one the libibverbs object of the same kind, its
 * values translated by verbs_map.c's tables.
 *
 * Memory: ibv_reg_mr pins through the kernel (ib_umem), so the device
 * reports RNICPI_DEV_CAP_KERNEL_PINS and ual pins nothing itself.
 * Completion queues: each has a completion channel of its own, whose fd
 * is the RNICPI CQ's notify_fd (non-blocking); ack_cq_event reads and
 * acknowledges one event from it.
 * libibverbs serialises posting and polling on one object itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <string.h>

#include "vp/verbs/verbs.h"

#define container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* SGEs of one WR on the stack; devices have at most a few dozen. */
#define VERBS_MAX_SGE 64

struct verbs_pd {
	struct rnicpi_pd base;
	struct ibv_pd *pd;
};

struct verbs_mr {
	struct rnicpi_mr base;
	struct ibv_mr *mr;
};

struct verbs_mw {
	struct rnicpi_mw base;
	struct ibv_mw *mw;
};

struct verbs_cq {
	struct rnicpi_cq base;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	/* QPs completing sends / receives here: an error completion carries
	 * no opcode in ibverbs, so a CQ of receives only reports its
	 * errors (flushes) as receives. */
	gint send_qps, recv_qps;
};

struct verbs_srq {
	struct rnicpi_srq base;
	struct ibv_srq *srq;
};

struct verbs_ah {
	struct rnicpi_ah base;
	struct ibv_ah *ah;
};

static struct verbs_dev *to_vd(struct rnicpi_device *d)
{
	return container_of(d, struct verbs_dev, rdev);
}

static struct verbs_pd *to_vpd(struct rnicpi_pd *p)
{
	return container_of(p, struct verbs_pd, base);
}

static struct verbs_cq *to_vcq(struct rnicpi_cq *c)
{
	return container_of(c, struct verbs_cq, base);
}

static struct verbs_srq *to_vsrq(struct rnicpi_srq *s)
{
	return container_of(s, struct verbs_srq, base);
}

static struct verbs_qp *to_vqp(struct rnicpi_qp *q)
{
	return container_of(q, struct verbs_qp, base);
}

/* ibverbs returns errno values (positive) or sets errno. */
static int neg(int ret)
{
	if (ret > 0)
		return -ret;
	return errno ? -errno : -EIO;
}

/* --- PDs --- */

static int verbs_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out)
{
	struct verbs_pd *p = g_new0(struct verbs_pd, 1);

	errno = 0;
	p->pd = ibv_alloc_pd(to_vd(d)->ctx);
	if (!p->pd) {
		int err = neg(0);

		g_free(p);
		return err;
	}
	p->base.device = d;
	*out = &p->base;
	return 0;
}

static int verbs_dealloc_pd(struct rnicpi_pd *pd)
{
	struct verbs_pd *p = to_vpd(pd);
	int ret = ibv_dealloc_pd(p->pd);

	if (ret)
		return neg(ret);
	g_free(p);
	return 0;
}

/* --- MRs --- */

static int verbs_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
			uint64_t iova, unsigned int access,
			struct rnicpi_mr **out)
{
	struct verbs_mr *m;

	if ((access & (RNICPI_ACCESS_REMOTE_WRITE |
		       RNICPI_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RNICPI_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	m = g_new0(struct verbs_mr, 1);
	errno = 0;
	m->mr = ibv_reg_mr_iova(to_vpd(pd)->pd, addr, length, iova,
				(int)verbs_access(access));
	if (!m->mr) {
		int err = neg(0);

		g_free(m);
		return err;
	}
	m->base.pd = pd;
	m->base.lkey = m->mr->lkey;
	m->base.rkey = m->mr->rkey;
	*out = &m->base;
	return 0;
}

/* --- MWs (memory windows) --- */

static int verbs_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
			  struct rnicpi_mw **out)
{
	struct verbs_mw *w;

	if (type != RNICPI_MW_TYPE_1 && type != RNICPI_MW_TYPE_2)
		return -EINVAL;
	w = g_new0(struct verbs_mw, 1);
	errno = 0;
	w->mw = ibv_alloc_mw(to_vpd(pd)->pd, type == RNICPI_MW_TYPE_1 ?
						   IBV_MW_TYPE_1 :
						   IBV_MW_TYPE_2);
	if (!w->mw) {
		int err = neg(0);

		g_free(w);
		return err;
	}
	w->base.pd = pd;
	w->base.type = type;
	w->base.rkey = w->mw->rkey;
	*out = &w->base;
	return 0;
}

static int verbs_dealloc_mw(struct rnicpi_mw *mw)
{
	struct verbs_mw *w = container_of(mw, struct verbs_mw, base);
	int ret = ibv_dealloc_mw(w->mw);

	if (ret)
		return ret < 0 ? ret : -ret;
	g_free(w);
	return 0;
}

/*
 * A bind WR of either type, posted here (it is never chained). The key is
 * the one RNICPI names. libibverbs binds a type 1 window with
 * ibv_bind_mw, which takes ibv_inc_rkey of the window's key: that is the
 * one named for a link, but not for an unbind (a bind of length 0 that
 * keeps the key), which goes as an IBV_WR_BIND_MW like a type 2 bind (the
 * kernel's rxe binds both the same way). The window's key in struct
 * ibv_mw is the one the device checks the next bind against: kept.
 */
static int post_bind(struct verbs_qp *q, const struct rnicpi_send_wr *wr)
{
	const struct rnicpi_mw_bind_info *bi = &wr->wr.bind_mw.bind_info;
	struct ibv_mw_bind_info ib = { 0 };
	struct ibv_send_wr iwr, *ibad;
	unsigned int flags = 0;
	uint32_t key = wr->wr.bind_mw.rkey;
	struct verbs_mw *w;
	int ret;

	if (!wr->wr.bind_mw.mw || (bi->length && !bi->mr))
		return -EINVAL;
	w = container_of(wr->wr.bind_mw.mw, struct verbs_mw, base);
	if (bi->mr)
		ib.mr = container_of(bi->mr, struct verbs_mr, base)->mr;
	ib.addr = bi->addr;
	ib.length = bi->length;
	ib.mw_access_flags = verbs_access(bi->access);
	if (wr->send_flags & RNICPI_SEND_SIGNALED)
		flags |= IBV_SEND_SIGNALED;
	if (wr->send_flags & (RNICPI_SEND_FENCE | RNICPI_SEND_LOCAL_FENCE))
		flags |= IBV_SEND_FENCE;
	if (w->base.type == RNICPI_MW_TYPE_1 &&
	    key == ibv_inc_rkey(w->mw->rkey)) {
		struct ibv_mw_bind b = {
			.wr_id = wr->wr_id,
			.send_flags = flags,
			.bind_info = ib,
		};

		ret = ibv_bind_mw(q->qp, w->mw, &b);
	} else {
		memset(&iwr, 0, sizeof(iwr));
		iwr.wr_id = wr->wr_id;
		iwr.opcode = IBV_WR_BIND_MW;
		iwr.send_flags = flags;
		iwr.bind_mw.mw = w->mw;
		iwr.bind_mw.rkey = key;
		iwr.bind_mw.bind_info = ib;
		ret = ibv_post_send(q->qp, &iwr, &ibad);
	}
	if (ret)
		return ret < 0 ? ret : -ret;
	w->mw->rkey = key;
	w->base.rkey = key;
	return 0;
}

/*
 * A second registration, then the end of the first: this works on every
 * device (the kernel's siw has no rereg, rxe re-registers only PD and
 * rights) and gives new keys, as RNICPI asks. ual passes the current
 * address, length and rights for what @flags does not change.
 */
static int verbs_rereg_mr(struct rnicpi_mr *mr, unsigned int flags,
			  struct rnicpi_pd *pd, void *addr, uint64_t length,
			  uint64_t iova, unsigned int access)
{
	struct verbs_mr *m = container_of(mr, struct verbs_mr, base);
	struct rnicpi_pd *npd = (flags & RNICPI_REREG_PD) && pd ? pd :
								  mr->pd;
	struct ibv_mr *nmr;
	int ret;

	if ((access & (RNICPI_ACCESS_REMOTE_WRITE |
		       RNICPI_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RNICPI_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	errno = 0;
	nmr = ibv_reg_mr_iova(to_vpd(npd)->pd, addr, length, iova,
			      (int)verbs_access(access));
	if (!nmr)
		return neg(0);
	ret = ibv_dereg_mr(m->mr);
	if (ret) {
		ibv_dereg_mr(nmr);
		return neg(ret);
	}
	m->mr = nmr;
	m->base.pd = npd;
	m->base.lkey = nmr->lkey;
	m->base.rkey = nmr->rkey;
	return 0;
}

static int verbs_dereg_mr(struct rnicpi_mr *mr)
{
	struct verbs_mr *m = container_of(mr, struct verbs_mr, base);
	int ret = ibv_dereg_mr(m->mr);

	if (ret)
		return neg(ret);
	g_free(m);
	return 0;
}

/* --- CQs --- */

static int verbs_create_cq(struct rnicpi_device *d,
			   const struct rnicpi_cq_init_attr *attr,
			   struct rnicpi_cq **out)
{
	struct verbs_dev *vd = to_vd(d);
	struct verbs_cq *c = g_new0(struct verbs_cq, 1);
	int err, fl, vec = 0;

	errno = 0;
	c->ch = ibv_create_comp_channel(vd->ctx);
	if (!c->ch) {
		err = neg(0);
		goto err_free;
	}
	fl = fcntl(c->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(c->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		err = -errno;
		goto err_ch;
	}
	if (vd->ctx->num_comp_vectors > 0 && attr->comp_vector > 0)
		vec = attr->comp_vector % vd->ctx->num_comp_vectors;
	errno = 0;
	c->cq = ibv_create_cq(vd->ctx, (int)attr->cqe, c, c->ch, vec);
	if (!c->cq) {
		err = neg(0);
		goto err_ch;
	}
	c->base.device = d;
	c->base.cqe = (uint32_t)c->cq->cqe;
	c->base.notify_fd = c->ch->fd;
	*out = &c->base;
	return 0;

err_ch:
	ibv_destroy_comp_channel(c->ch);
err_free:
	g_free(c);
	return err;
}

static int verbs_destroy_cq(struct rnicpi_cq *cq)
{
	struct verbs_cq *c = to_vcq(cq);
	int ret = ibv_destroy_cq(c->cq);

	if (ret)
		return neg(ret);
	ibv_destroy_comp_channel(c->ch);
	g_free(c);
	return 0;
}

void verbs_rq_free(gpointer p)
{
	struct verbs_rq *rq = p;

	g_mutex_clear(&rq->lock);
	g_free(rq->ids);
	g_free(rq);
}

/*
 * Is @iwc, an error completion, a receive's? ibverbs leaves its opcode
 * undefined. A CQ only receives complete on says so; otherwise the QP's
 * receives, which complete in the order they were posted (RC, no SRQ),
 * are matched by wr_id with the oldest one outstanding. A successful
 * receive takes its entry off the same way.
 */
static bool recv_track(struct verbs_cq *c, const struct ibv_wc *iwc)
{
	struct verbs_dev *vd = to_vd(c->base.device);
	bool ok = iwc->status == IBV_WC_SUCCESS, recv = false;
	struct verbs_rq *rq;

	if (ok && !(iwc->opcode & IBV_WC_RECV))
		return false;
	g_mutex_lock(&vd->qps_lock);
	rq = vd->qps ? g_hash_table_lookup(vd->qps,
					   GUINT_TO_POINTER(iwc->qp_num)) :
		       NULL;
	if (rq) {
		g_mutex_lock(&rq->lock);
		if (rq->len && (ok || rq->ids[rq->head] == iwc->wr_id)) {
			rq->head = (rq->head + 1) % rq->cap;
			rq->len--;
			recv = true;
		}
		g_mutex_unlock(&rq->lock);
		/* The last flushed receive of a destroyed QP. */
		if (rq->dead && !rq->len)
			g_hash_table_remove(vd->qps,
					    GUINT_TO_POINTER(iwc->qp_num));
	}
	g_mutex_unlock(&vd->qps_lock);
	if (!ok && !recv && g_atomic_int_get(&c->recv_qps) > 0 &&
	    g_atomic_int_get(&c->send_qps) == 0)
		recv = true;
	return recv;
}

static int verbs_poll_cq(struct rnicpi_cq *cq, int n, struct rnicpi_wc *wc)
{
	struct verbs_cq *c = to_vcq(cq);
	struct ibv_wc iwc[16];
	int done = 0;

	while (done < n) {
		int want = MIN(n - done, (int)G_N_ELEMENTS(iwc));
		int got = ibv_poll_cq(c->cq, want, iwc), i;

		if (got < 0)
			return done ? done : -EIO;
		for (i = 0; i < got; i++) {
			verbs_wc_from_ibv(&iwc[i], &wc[done + i]);
			if (iwc[i].status != IBV_WC_SUCCESS)
				verbs_cm_wc_error(to_vd(cq->device),
						  iwc[i].qp_num,
						  iwc[i].status);
			if (recv_track(c, &iwc[i]) &&
			    iwc[i].status != IBV_WC_SUCCESS)
				wc[done + i].opcode = RNICPI_WC_RECV;
		}
		done += got;
		if (got < want)
			break;
	}
	return done;
}

static int verbs_req_notify_cq(struct rnicpi_cq *cq, int solicited_only)
{
	int ret = ibv_req_notify_cq(to_vcq(cq)->cq, solicited_only);

	return ret ? neg(ret) : 0;
}

static int verbs_ack_cq_event(struct rnicpi_cq *cq)
{
	struct verbs_cq *c = to_vcq(cq);
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx))
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN :
								 neg(0);
	ibv_ack_cq_events(ev_cq, 1);
	return 0;
}

/* --- SRQs --- */

static int verbs_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
			    struct rnicpi_srq **out)
{
	struct verbs_srq *s = g_new0(struct verbs_srq, 1);
	struct ibv_srq_init_attr ia = {
		.srq_context = s,
		.attr = { .max_wr = attr->max_wr, .max_sge = attr->max_sge,
			  .srq_limit = attr->srq_limit },
	};

	errno = 0;
	s->srq = ibv_create_srq(to_vpd(pd)->pd, &ia);
	if (!s->srq) {
		int err = neg(0);

		g_free(s);
		return err;
	}
	attr->max_wr = ia.attr.max_wr;
	attr->max_sge = ia.attr.max_sge;
	s->base.pd = pd;
	*out = &s->base;
	return 0;
}

static int verbs_modify_srq(struct rnicpi_srq *srq,
			    struct rnicpi_srq_attr *attr, unsigned int mask)
{
	struct ibv_srq_attr a = { .max_wr = attr->max_wr,
				  .max_sge = attr->max_sge,
				  .srq_limit = attr->srq_limit };
	int m = (mask & RNICPI_SRQ_MAX_WR ? IBV_SRQ_MAX_WR : 0) |
		(mask & RNICPI_SRQ_LIMIT ? IBV_SRQ_LIMIT : 0);
	int ret = ibv_modify_srq(to_vsrq(srq)->srq, &a, m);

	return ret ? neg(ret) : 0;
}

static int verbs_query_srq(struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr)
{
	struct ibv_srq_attr a;
	int ret = ibv_query_srq(to_vsrq(srq)->srq, &a);

	if (ret)
		return neg(ret);
	attr->max_wr = a.max_wr;
	attr->max_sge = a.max_sge;
	attr->srq_limit = a.srq_limit;
	return 0;
}

static int verbs_destroy_srq(struct rnicpi_srq *srq)
{
	struct verbs_srq *s = to_vsrq(srq);
	int ret = ibv_destroy_srq(s->srq);

	if (ret)
		return neg(ret);
	g_free(s);
	return 0;
}

/* One receive WR in ibverbs' terms. */
static int recv_wr_to_ibv(const struct rnicpi_recv_wr *in,
			  struct ibv_recv_wr *out, struct ibv_sge *sge)
{
	uint32_t i;

	if (in->num_sge > VERBS_MAX_SGE || (in->num_sge && !in->sg_list))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	for (i = 0; i < in->num_sge; i++) {
		sge[i].addr = in->sg_list[i].addr;
		sge[i].length = in->sg_list[i].length;
		sge[i].lkey = in->sg_list[i].lkey;
	}
	out->sg_list = in->num_sge ? sge : NULL;
	out->num_sge = (int)in->num_sge;
	return 0;
}

static int verbs_post_srq_recv(struct rnicpi_srq *srq,
			       const struct rnicpi_recv_wr *wr,
			       const struct rnicpi_recv_wr **bad)
{
	struct ibv_sge sge[VERBS_MAX_SGE];
	struct ibv_recv_wr iwr, *ibad;
	int ret;

	for (; wr; wr = wr->next) {
		ret = recv_wr_to_ibv(wr, &iwr, sge);
		if (!ret)
			ret = ibv_post_srq_recv(to_vsrq(srq)->srq, &iwr, &ibad);
		if (ret) {
			*bad = wr;
			return ret < 0 ? ret : -ret;
		}
	}
	return 0;
}

/* --- QPs --- */

static int verbs_create_qp(struct rnicpi_pd *pd,
			   struct rnicpi_qp_init_attr *attr,
			   struct rnicpi_qp **out)
{
	struct verbs_dev *vd = to_vd(pd->device);
	struct verbs_qp *q;
	struct ibv_qp_init_attr ia;

	/* UD only where the device has it (not on iWARP); no UC, and QP1
	 * belongs to the kernel (its CM and SIDR, not ours). */
	if (attr->qp_type != RNICPI_QPT_RC &&
	    (attr->qp_type != RNICPI_QPT_UD ||
	     vd->transport == RNICPI_TRANSPORT_IWARP))
		return -EOPNOTSUPP;
	memset(&ia, 0, sizeof(ia));
	q = g_new0(struct verbs_qp, 1);
	ia.qp_context = q;
	ia.send_cq = to_vcq(attr->send_cq)->cq;
	ia.recv_cq = to_vcq(attr->recv_cq)->cq;
	ia.srq = attr->srq ? to_vsrq(attr->srq)->srq : NULL;
	ia.cap.max_send_wr = attr->cap.max_send_wr;
	ia.cap.max_recv_wr = attr->srq ? 0 : attr->cap.max_recv_wr;
	ia.cap.max_send_sge = attr->cap.max_send_sge;
	ia.cap.max_recv_sge = attr->srq ? 0 : attr->cap.max_recv_sge;
	ia.cap.max_inline_data = attr->cap.max_inline_data;
	ia.qp_type = attr->qp_type == RNICPI_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC;
	ia.sq_sig_all = attr->sq_sig_all;
	errno = 0;
	q->qp = ibv_create_qp(to_vpd(pd)->pd, &ia);
	if (!q->qp) {
		int err = neg(0);

		g_info("%s: create_qp (%u/%u WRs, %u/%u SGEs, %u inline): %s",
		       vd->rdev.name, attr->cap.max_send_wr,
		       attr->cap.max_recv_wr, attr->cap.max_send_sge,
		       attr->cap.max_recv_sge, attr->cap.max_inline_data,
		       g_strerror(-err));
		g_free(q);
		return err;
	}
	attr->cap.max_send_wr = ia.cap.max_send_wr;
	attr->cap.max_recv_wr = ia.cap.max_recv_wr;
	attr->cap.max_send_sge = ia.cap.max_send_sge;
	attr->cap.max_recv_sge = ia.cap.max_recv_sge;
	attr->cap.max_inline_data = ia.cap.max_inline_data;
	q->vd = vd;
	if (!attr->srq) {
		q->rq = g_new0(struct verbs_rq, 1);
		g_mutex_init(&q->rq->lock);
		q->rq->cap = ia.cap.max_recv_wr + 1;
		q->rq->ids = g_new(uint64_t, q->rq->cap);
		g_mutex_lock(&vd->qps_lock);
		if (!vd->qps)
			vd->qps = g_hash_table_new_full(NULL, NULL, NULL,
							verbs_rq_free);
		/* A destroyed QP's of the same number goes. */
		g_hash_table_replace(vd->qps,
				     GUINT_TO_POINTER(q->qp->qp_num), q->rq);
		g_mutex_unlock(&vd->qps_lock);
	}
	q->send_cq = to_vcq(attr->send_cq);
	q->recv_cq = to_vcq(attr->recv_cq);
	g_atomic_int_inc(&q->send_cq->send_qps);
	g_atomic_int_inc(&q->recv_cq->recv_qps);
	q->kind = VERBS_CM_KIND_QP;
	q->has_srq = attr->srq != NULL;
	q->ud = attr->qp_type == RNICPI_QPT_UD;
	q->base.pd = pd;
	q->base.qp_num = q->qp->qp_num;
	*out = &q->base;
	return 0;
}

static int verbs_modify_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
			   unsigned int mask)
{
	struct verbs_qp *q = to_vqp(qp);
	struct ibv_qp_attr a;
	int err, ret;

	err = verbs_qp_attr_to_ibv(attr, mask, &a);
	if (err)
		return err;
	/* RNICPI devices have one port, 1; ibverbs wants the real one. */
	a.port_num = q->vd->port;
	a.ah_attr.port_num = q->vd->port;
	ret = ibv_modify_qp(q->qp, &a, (int)verbs_qp_mask(mask));
	return ret ? neg(ret) : 0;
}

static int verbs_query_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
			  unsigned int mask, struct rnicpi_qp_init_attr *init)
{
	struct verbs_qp *q = to_vqp(qp);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret = ibv_query_qp(q->qp, &a, (int)verbs_qp_mask(mask), &ia);

	if (ret)
		return neg(ret);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = verbs_qp_state_from_ibv(a.qp_state, q->vd->transport);
	attr->cur_qp_state = verbs_qp_state_from_ibv(a.cur_qp_state,
						     q->vd->transport);
	attr->path_mtu = verbs_mtu(a.path_mtu);
	attr->qkey = a.qkey;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->dest_qp_num = a.dest_qp_num;
	attr->cap.max_send_wr = a.cap.max_send_wr;
	attr->cap.max_recv_wr = a.cap.max_recv_wr;
	attr->cap.max_send_sge = a.cap.max_send_sge;
	attr->cap.max_recv_sge = a.cap.max_recv_sge;
	attr->cap.max_inline_data = a.cap.max_inline_data;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	attr->sq_draining = a.sq_draining;
	if (init) {
		init->qp_type = q->ud ? RNICPI_QPT_UD : RNICPI_QPT_RC;
		init->cap = attr->cap;
		init->sq_sig_all = ia.sq_sig_all;
		init->port_num = 1;
	}
	return 0;
}

static int verbs_destroy_qp(struct rnicpi_qp *qp)
{
	struct verbs_qp *q = to_vqp(qp);
	int ret;

	/* Its rdma_cm id first: no connection event names it after this. */
	verbs_cm_qp_release(q);
	ret = ibv_destroy_qp(q->qp);
	if (ret)
		return neg(ret);
	if (q->rq) {
		/* Its receives still in a CQ (flushed) keep the record until
		 * polled. */
		g_mutex_lock(&q->vd->qps_lock);
		g_mutex_lock(&q->rq->lock);
		q->rq->dead = true;
		g_mutex_unlock(&q->rq->lock);
		if (!q->rq->len)
			g_hash_table_remove(q->vd->qps,
					    GUINT_TO_POINTER(q->base.qp_num));
		g_mutex_unlock(&q->vd->qps_lock);
	}
	g_atomic_int_add(&q->send_cq->send_qps, -1);
	g_atomic_int_add(&q->recv_cq->recv_qps, -1);
	g_free(q);
	return 0;
}

static int verbs_post_send(struct rnicpi_qp *qp,
			   const struct rnicpi_send_wr *wr,
			   const struct rnicpi_send_wr **bad)
{
	struct ibv_sge sge[VERBS_MAX_SGE];
	struct ibv_send_wr iwr, *ibad;
	int ret;

	for (; wr; wr = wr->next) {
		if (wr->opcode == RNICPI_WR_BIND_MW) {
			ret = to_vqp(qp)->ud ? -EINVAL :
					       post_bind(to_vqp(qp), wr);
			if (ret) {
				*bad = wr;
				return ret < 0 ? ret : -ret;
			}
			continue;
		}
		ret = verbs_send_wr_to_ibv(wr, &iwr, sge, VERBS_MAX_SGE);
		/* A datagram: its address handle, the peer's QPN and Q_Key;
		 * only Sends go on UD (IBA 9.8.1). */
		if (!ret && to_vqp(qp)->ud) {
			if (!wr->wr.ud.ah || (wr->opcode != RNICPI_WR_SEND &&
					      wr->opcode !=
						      RNICPI_WR_SEND_WITH_IMM))
				ret = -EINVAL;
			else {
				iwr.wr.ud.ah = container_of(wr->wr.ud.ah,
							    struct verbs_ah,
							    base)->ah;
				iwr.wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
				iwr.wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
			}
		}
		if (!ret)
			ret = ibv_post_send(to_vqp(qp)->qp, &iwr, &ibad);
		if (ret) {
			*bad = wr;
			return ret < 0 ? ret : -ret;
		}
	}
	return 0;
}

static int verbs_post_recv(struct rnicpi_qp *qp,
			   const struct rnicpi_recv_wr *wr,
			   const struct rnicpi_recv_wr **bad)
{
	struct ibv_sge sge[VERBS_MAX_SGE];
	struct ibv_recv_wr iwr, *ibad;
	int ret;

	struct verbs_qp *q = to_vqp(qp);

	for (; wr; wr = wr->next) {
		ret = recv_wr_to_ibv(wr, &iwr, sge);
		if (!ret) {
			/* Posted and remembered in the same order. */
			struct verbs_rq *rq = q->rq;

			if (rq)
				g_mutex_lock(&rq->lock);
			ret = ibv_post_recv(q->qp, &iwr, &ibad);
			if (rq && !ret && rq->len < rq->cap) {
				rq->ids[(rq->head + rq->len) % rq->cap] =
					wr->wr_id;
				rq->len++;
			}
			if (rq)
				g_mutex_unlock(&rq->lock);
		}
		if (ret) {
			*bad = wr;
			return ret < 0 ? ret : -ret;
		}
	}
	return 0;
}

/* --- Address handles (UD) --- */

static int verbs_create_ah(struct rnicpi_pd *pd,
			   const struct rnicpi_ah_attr *attr,
			   struct rnicpi_ah **out)
{
	struct verbs_dev *vd = to_vd(pd->device);
	struct ibv_ah_attr ia;
	struct verbs_ah *a;

	if (!attr)
		return -EINVAL;
	/* RoCE routes by GID: no address handle without a GRH. */
	if (vd->transport == RNICPI_TRANSPORT_ROCE && !attr->is_global)
		return -EINVAL;
	/* RNICPI devices have one port, 1; ibverbs wants the real one. */
	verbs_ah_attr_to_ibv(attr, vd->port, &ia);
	a = g_new0(struct verbs_ah, 1);
	errno = 0;
	a->ah = ibv_create_ah(to_vpd(pd)->pd, &ia);
	if (!a->ah) {
		int err = neg(0);

		g_info("%s: create_ah (GID index %u): %s", vd->rdev.name,
		       attr->sgid_index, g_strerror(-err));
		g_free(a);
		return err;
	}
	a->base.pd = pd;
	*out = &a->base;
	return 0;
}

static int verbs_destroy_ah(struct rnicpi_ah *ah)
{
	struct verbs_ah *a = container_of(ah, struct verbs_ah, base);
	int ret = ibv_destroy_ah(a->ah);

	if (ret)
		return neg(ret);
	g_free(a);
	return 0;
}

void verbs_fill_ops(struct rnicpi_device_ops *ops)
{
	ops->alloc_pd = verbs_alloc_pd;
	ops->dealloc_pd = verbs_dealloc_pd;
	ops->reg_mr = verbs_reg_mr;
	ops->rereg_mr = verbs_rereg_mr;
	ops->dereg_mr = verbs_dereg_mr;
	ops->alloc_mw = verbs_alloc_mw;
	ops->dealloc_mw = verbs_dealloc_mw;
	ops->create_cq = verbs_create_cq;
	ops->destroy_cq = verbs_destroy_cq;
	ops->poll_cq = verbs_poll_cq;
	ops->req_notify_cq = verbs_req_notify_cq;
	ops->ack_cq_event = verbs_ack_cq_event;
	ops->create_srq = verbs_create_srq;
	ops->modify_srq = verbs_modify_srq;
	ops->query_srq = verbs_query_srq;
	ops->destroy_srq = verbs_destroy_srq;
	ops->post_srq_recv = verbs_post_srq_recv;
	ops->create_qp = verbs_create_qp;
	ops->modify_qp = verbs_modify_qp;
	ops->query_qp = verbs_query_qp;
	ops->destroy_qp = verbs_destroy_qp;
	ops->post_send = verbs_post_send;
	ops->post_recv = verbs_post_recv;
	ops->create_ah = verbs_create_ah;
	ops->destroy_ah = verbs_destroy_ah;
}

bool verbs_async_element(const struct ibv_async_event *ev,
			 struct rnicpi_async_event *out)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		if (!ev->element.cq || !ev->element.cq->cq_context)
			return false;
		out->element.cq =
			&((struct verbs_cq *)ev->element.cq->cq_context)->base;
		return true;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (!ev->element.srq || !ev->element.srq->srq_context)
			return false;
		out->element.srq =
			&((struct verbs_srq *)ev->element.srq->srq_context)->base;
		return true;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (!ev->element.qp || !ev->element.qp->qp_context)
			return false;
		out->element.qp =
			&((struct verbs_qp *)ev->element.qp->qp_context)->base;
		return true;
	default:
		return false;
	}
}
