/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE verbs objects: protection domains, memory regions and their
 * key checks, completion queues, shared receive queues, address handles,
 * and posting work requests.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vp/rxe/rxe.h"

/* ------------------------------------------------------------------ */
/* Protection domains                                                 */
/* ------------------------------------------------------------------ */

int rxe_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out)
{
	struct rxe_pd *pd = g_new0(struct rxe_pd, 1);

	pd->base.device = d;
	*out = &pd->base;
	return 0;
}

int rxe_dealloc_pd(struct rnicpi_pd *p)
{
	g_free(to_rxe_pd(p));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Memory regions                                                     */
/* ------------------------------------------------------------------ */

static int check_access(struct rxe_dev *dev, unsigned int access)
{
	unsigned int needs_lw = RNICPI_ACCESS_REMOTE_WRITE |
				RNICPI_ACCESS_REMOTE_ATOMIC;

	if ((access & needs_lw) && !(access & RNICPI_ACCESS_LOCAL_WRITE)) {
		rxe_dev_warn(dev, "access 0x%x: remote write/atomic needs "
			     "local write (IBA 10.6)", access);
		return -EINVAL;
	}
	return 0;
}

int rxe_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
	       uint64_t iova, unsigned int access, struct rnicpi_mr **out)
{
	struct rxe_dev *dev = to_rxe_dev(pd->device);
	struct rxe_mr *mr;
	uint32_t key;
	int err;

	err = check_access(dev, access);
	if (err)
		return err;
	if (access & RNICPI_ACCESS_ZERO_BASED)
		iova = 0;
	if (length && iova + length - 1 < iova) {
		rxe_dev_warn(dev, "reg_mr: iova 0x%" PRIx64 " + length %" PRIu64
			     " wraps", iova, length);
		return -EINVAL;
	}
	mr = g_new0(struct rxe_mr, 1);
	mr->hdr.kind = RXE_MEM_MR;
	atomic_init(&mr->hdr.ref, 1);
	mr->addr = addr;
	mr->length = length;
	mr->iova = iova;
	mr->access = access;
	mr->base.pd = pd;
	err = rnicpi_key_alloc(&dev->keys, &mr->hdr, &key);
	if (err) {
		rxe_dev_warn(dev, "reg_mr: no key left (%d)", err);
		g_free(mr);
		return err;
	}
	mr->base.lkey = mr->base.rkey = key;
	*out = &mr->base;
	return 0;
}

/* A region for fast registration (IBA 10.6.3.6, the kernel's
 * ib_alloc_mr): a key, no translation, invalid until a REG_MR WR. */
int rxe_alloc_mr(struct rnicpi_pd *pd, uint64_t max_len,
		 struct rnicpi_mr **out)
{
	struct rxe_dev *dev = to_rxe_dev(pd->device);
	struct rxe_mr *mr;
	uint32_t key;
	int err;

	if (max_len == 0) {
		rxe_dev_warn(dev, "alloc_mr: %" PRIu64 " bytes", max_len);
		return -EINVAL;
	}
	mr = g_new0(struct rxe_mr, 1);
	mr->hdr.kind = RXE_MEM_MR;
	atomic_init(&mr->hdr.ref, 1);
	atomic_init(&mr->invalid, true);
	mr->fast_reg = true;
	mr->max_len = max_len;
	mr->base.pd = pd;
	err = rnicpi_key_alloc(&dev->keys, &mr->hdr, &key);
	if (err) {
		rxe_dev_warn(dev, "alloc_mr: no key left (%d)", err);
		g_free(mr);
		return err;
	}
	mr->base.lkey = mr->base.rkey = key;
	*out = &mr->base;
	return 0;
}

/*
 * REG_MR in send-queue order (the kernel's rxe_reg_fast_mr): the region
 * must be invalid; it takes the WR's translation and the consumer's key
 * byte, then becomes valid. Every access until then was refused by the
 * invalid flag, and the old key stops matching with the new byte. The
 * progress thread runs this and every key check, so no check sees half
 * of the new translation.
 */
enum rnicpi_wc_status rxe_mr_fast_reg(struct rxe_qp *qp,
				      const struct rxe_send_wqe *w)
{
	struct rxe_mr *mr = w->reg_mr;
	struct rxe_dev *dev = qp->dev;
	uint64_t iova = (w->reg_access & RNICPI_ACCESS_ZERO_BASED) ?
				0 : w->reg_iova;
	struct rxe_mem_hdr *h = NULL;
	uint32_t key;

	/* Still registered? dereg_mr frees the key first. */
	if (mr)
		h = rnicpi_key_lookup(&dev->keys, mr->base.lkey);
	if (h)
		rxe_mem_put(h);
	if (!mr || h != &mr->hdr || !mr->fast_reg ||
	    !atomic_load(&mr->invalid) ||
	    mr->base.pd != qp->base.pd || w->reg_length == 0 ||
	    w->reg_length > mr->max_len || !w->reg_addr ||
	    iova + w->reg_length - 1 < iova ||
	    check_access(dev, w->reg_access) ||
	    rnicpi_key_index(w->reg_key) != rnicpi_key_index(mr->base.lkey) ||
	    rnicpi_key_set_byte(&dev->keys, mr->base.lkey,
				(uint8_t)w->reg_key, &key)) {
		rxe_qp_warn(qp, "REG_MR of key 0x%x as 0x%x, %" PRIu64
			    " bytes access 0x%x refused (valid, too long or "
			    "the same key byte)", mr ? mr->base.lkey : 0,
			    w->reg_key,
			    w->reg_length, w->reg_access);
		return RNICPI_WC_LOC_QP_OP_ERR;
	}
	mr->addr = w->reg_addr;
	mr->length = w->reg_length;
	mr->iova = iova;
	mr->access = w->reg_access;
	mr->base.lkey = mr->base.rkey = key;
	atomic_store(&mr->invalid, false);
	return RNICPI_WC_SUCCESS;
}

int rxe_rereg_mr(struct rnicpi_mr *m, unsigned int flags,
		 struct rnicpi_pd *pd, void *addr, uint64_t length,
		 uint64_t iova, unsigned int access)
{
	struct rxe_mr *mr = to_rxe_mr(m);
	struct rxe_dev *dev = to_rxe_dev(m->pd->device);
	uint32_t key;
	int err;

	if ((flags & RNICPI_REREG_ACCESS) && (err = check_access(dev, access)))
		return err;
	err = rnicpi_key_rekey(&dev->keys, m->lkey, &key);
	if (err) {
		rxe_dev_warn(dev, "rereg_mr: key 0x%x not current", m->lkey);
		return err;
	}
	if (flags & RNICPI_REREG_PD)
		m->pd = pd;
	if (flags & RNICPI_REREG_ACCESS)
		mr->access = access;
	if (flags & RNICPI_REREG_TRANSLATION) {
		mr->addr = addr;
		mr->length = length;
		mr->iova = (mr->access & RNICPI_ACCESS_ZERO_BASED) ? 0 : iova;
	}
	atomic_store(&mr->invalid, false);
	m->lkey = m->rkey = key;
	return 0;
}

/*
 * The key is gone, so no new lookup finds @mr; a packet being handled may
 * still hold it (rxe_mem_resolve() to rxe_mr_put(), one copy or one send).
 * Once dereg_mr returns the core unpins the pages and the application may
 * free them, so wait for those references, as the kernel's rxe waits for
 * its own. They never span a wait for the network; the progress thread
 * holds none while it makes an upcall, from which dereg_mr may come.
 */
static void mr_wait_unused(struct rxe_dev *dev, struct rxe_mr *mr)
{
	struct timespec nap = { .tv_nsec = 20000 };
	unsigned int naps = 0;

	if (rnicpi_engine_on_thread(&dev->engine))
		return;
	atomic_store(&mr->invalid, true);
	while (atomic_load(&mr->hdr.ref) > 1) {
		nanosleep(&nap, NULL);
		if (++naps == 100000)
			rxe_dev_warn(dev, "dereg_mr: key 0x%x still in use "
				     "after 2 s", mr->base.lkey);
	}
}

int rxe_dereg_mr(struct rnicpi_mr *m)
{
	struct rxe_dev *dev = to_rxe_dev(m->pd->device);
	int err;

	if (atomic_load(&to_rxe_mr(m)->n_binds) > 0) {
		rxe_dev_warn(dev, "dereg_mr: key 0x%x has memory windows bound",
			     m->lkey);
		return -EBUSY;
	}
	err = rnicpi_key_free(&dev->keys, m->lkey);
	if (err) {
		rxe_dev_warn(dev, "dereg_mr: key 0x%x not current", m->lkey);
		return err;
	}
	mr_wait_unused(dev, to_rxe_mr(m));
	rxe_mr_put(to_rxe_mr(m));
	return 0;
}

const char *rxe_mem_err_name(enum rxe_mem_err e)
{
	static const char *const names[] = {
		[RXE_MEM_OK] = "ok",
		[RXE_MEM_BAD_KEY] = "unknown or invalid key",
		[RXE_MEM_BAD_PD] = "protection domain mismatch",
		[RXE_MEM_BAD_ACCESS] = "access rights not granted",
		[RXE_MEM_BAD_BOUNDS] = "outside the region",
	};

	return e < G_N_ELEMENTS(names) ? names[e] : "?";
}

/* One SGE's bytes: a region by its lkey, or with @mw a READ sink window
 * by its key (rxe_sink_resolve()). */
static enum rxe_mem_err sge_resolve(struct rxe_qp *qp,
				    const struct rnicpi_sge *sge, bool mw,
				    uint32_t offset, uint32_t len,
				    unsigned int access, struct rxe_mr **mr,
				    uint8_t **p)
{
	if (mw)
		return rxe_sink_resolve(qp, sge->lkey, sge->addr + offset, len,
					mr, p);
	return rxe_mem_resolve(qp, sge->lkey, false, sge->addr + offset, len,
			       access, mr, p);
}

static enum rxe_mem_err sgl_copy(struct rxe_qp *qp,
				 const struct rnicpi_sge *sge,
				 uint32_t num_sge, bool mw, uint32_t offset,
				 uint8_t *buf, uint32_t len, bool to_sgl)
{
	uint32_t i;

	for (i = 0; i < num_sge && len > 0; i++) {
		struct rxe_mr *mr;
		uint8_t *p;
		uint32_t n;
		enum rxe_mem_err e;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = sge[i].length - offset;
		if (n > len)
			n = len;
		e = sge_resolve(qp, &sge[i], mw, offset, n,
				to_sgl ? RNICPI_ACCESS_LOCAL_WRITE : 0, &mr,
				&p);
		if (e) {
			rxe_qp_warn(qp, "SGE %u lkey 0x%x addr 0x%" PRIx64
				    " len %u: %s", i, sge[i].lkey,
				    sge[i].addr, sge[i].length,
				    rxe_mem_err_name(e));
			return e;
		}
		/* A directly placed payload is already there. */
		if (p == buf)
			;
		else if (to_sgl)
			memcpy(p, buf, n);
		else
			memcpy(buf, p, n);
		rxe_mr_put(mr);
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? RXE_MEM_BAD_BOUNDS : RXE_MEM_OK;
}

enum rxe_mem_err rxe_sgl_copy(struct rxe_qp *qp, const struct rnicpi_sge *sge,
			      uint32_t num_sge, uint32_t offset,
			      uint8_t *buf, uint32_t len, bool to_sgl)
{
	return sgl_copy(qp, sge, num_sge, false, offset, buf, len, to_sgl);
}

static uint8_t *sgl_place(struct rxe_qp *qp, const struct rnicpi_sge *sge,
			  uint32_t num_sge, bool mw, uint32_t offset,
			  uint32_t len, struct rxe_mr **mr)
{
	uint32_t i;
	uint8_t *p;

	for (i = 0; i < num_sge; i++) {
		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		if (len > sge[i].length - offset ||
		    sge_resolve(qp, &sge[i], mw, offset, len,
				RNICPI_ACCESS_LOCAL_WRITE, mr, &p))
			return NULL;
		return p;
	}
	return NULL;
}

uint8_t *rxe_sgl_place(struct rxe_qp *qp, const struct rnicpi_sge *sge,
		       uint32_t num_sge, uint32_t offset, uint32_t len,
		       struct rxe_mr **mr)
{
	return sgl_place(qp, sge, num_sge, false, offset, len, mr);
}

static bool sink_is_mw(const struct rxe_send_wqe *w)
{
	return w->opcode == RNICPI_WR_RDMA_READ &&
	       (w->flags & RNICPI_SEND_SINK_MW);
}

enum rxe_mem_err rxe_read_sink_copy(struct rxe_qp *qp,
				    const struct rxe_send_wqe *w,
				    uint32_t offset, uint8_t *buf,
				    uint32_t len)
{
	return sgl_copy(qp, w->sge, w->num_sge, sink_is_mw(w), offset, buf,
			len, true);
}

uint8_t *rxe_read_sink_place(struct rxe_qp *qp, const struct rxe_send_wqe *w,
			     uint32_t offset, uint32_t len,
			     struct rxe_mr **mr)
{
	return sgl_place(qp, w->sge, w->num_sge, sink_is_mw(w), offset, len,
			 mr);
}

/* ------------------------------------------------------------------ */
/* Completion queues                                                  */
/* ------------------------------------------------------------------ */

int rxe_create_cq(struct rnicpi_device *d,
		  const struct rnicpi_cq_init_attr *attr,
		  struct rnicpi_cq **out)
{
	struct rxe_dev *dev = to_rxe_dev(d);
	struct rxe_cq *cq;
	int err;

	if (attr->cqe == 0 || attr->cqe > RXE_MAX_CQE) {
		rxe_dev_warn(dev, "create_cq: %u entries (1..%u)", attr->cqe,
			     RXE_MAX_CQE);
		return -EINVAL;
	}
	cq = g_new0(struct rxe_cq, 1);
	err = rnicpi_cq_ring_init(&cq->ring, attr->cqe);
	if (err) {
		g_free(cq);
		return err;
	}
	cq->base.device = d;
	cq->base.cqe = attr->cqe;
	cq->base.notify_fd = cq->ring.efd;
	*out = &cq->base;
	return 0;
}

int rxe_resize_cq(struct rnicpi_cq *c, uint32_t cqe)
{
	struct rxe_cq *cq = to_rxe_cq(c);
	int err;

	if (cqe == 0 || cqe > RXE_MAX_CQE)
		return -EINVAL;
	err = rnicpi_cq_ring_resize(&cq->ring, cqe);
	if (!err)
		c->cqe = cqe;
	return err;
}

int rxe_destroy_cq(struct rnicpi_cq *c)
{
	struct rxe_cq *cq = to_rxe_cq(c);

	rnicpi_cq_ring_fini(&cq->ring);
	g_free(cq);
	return 0;
}

int rxe_poll_cq(struct rnicpi_cq *c, int n, struct rnicpi_wc *wc)
{
	struct rxe_cq *cq = to_rxe_cq(c);
	struct rxe_dev *dev = to_rxe_dev(c->device);
	int k = rnicpi_cq_ring_poll(&cq->ring, n, wc);

	/* Empty: read the sockets here rather than wait for the progress
	 * thread (option poll_rx, rxe_net_poll_rx()). */
	if (k == 0 && n > 0 && dev->poll_rx &&
	    rxe_net_poll_rx(dev, rnicpi_cq_ring_armed(&cq->ring)))
		k = rnicpi_cq_ring_poll(&cq->ring, n, wc);
	else if (k > 0 && dev->poll_rx)
		rxe_net_poll_rx_busy(dev);
	return k;
}

int rxe_req_notify_cq(struct rnicpi_cq *c, int solicited_only)
{
	struct rxe_dev *dev = to_rxe_dev(c->device);
	int rc = rnicpi_cq_ring_arm(&to_rxe_cq(c)->ring, solicited_only);

	if (dev->poll_rx)
		rxe_net_poll_rx_armed(dev);
	return rc;
}

/* An application thread sleeps without arming a CQ of the device
 * (connection events, say): as at an arm, the progress thread takes the
 * receive sockets back, or a CM message would wait for the lease. */
void rxe_consumer_blocks(struct rnicpi_device *d)
{
	struct rxe_dev *dev = to_rxe_dev(d);

	if (dev->poll_rx && (atomic_load(&dev->rx_parked) ||
			     atomic_load(&dev->rx_polled_ns)))
		rxe_net_poll_rx_armed(dev);
}

int rxe_ack_cq_event(struct rnicpi_cq *c)
{
	return rnicpi_cq_ring_ack(&to_rxe_cq(c)->ring);
}

/* ------------------------------------------------------------------ */
/* Receive queues and SRQs                                            */
/* ------------------------------------------------------------------ */

static int rq_post(struct rxe_dev *dev, struct rxe_rq *rq,
		   const struct rnicpi_recv_wr *wr, const char *what)
{
	struct rxe_recv_wqe *w;
	uint32_t i;

	if (wr->num_sge > rq->max_sge) {
		rxe_dev_warn(dev, "%s: %u SGEs, at most %u", what,
			     wr->num_sge, rq->max_sge);
		return -EINVAL;
	}
	if (rq->tail - rq->head >= rq->size) {
		rxe_dev_dbg(dev, "%s: queue full (%u)", what, rq->size);
		return -ENOMEM;
	}
	w = &rq->wqe[rq->tail % rq->size];
	w->wr_id = wr->wr_id;
	w->num_sge = wr->num_sge;
	w->length = 0;
	for (i = 0; i < wr->num_sge; i++) {
		w->sge[i] = wr->sg_list[i];
		w->length += wr->sg_list[i].length;
	}
	rq->tail++;
	return 0;
}

int rxe_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
		   struct rnicpi_srq **out)
{
	struct rxe_dev *dev = to_rxe_dev(pd->device);
	struct rxe_srq *srq;

	if (attr->max_wr == 0 || attr->max_wr > RXE_MAX_SRQ_WR ||
	    attr->max_sge > RXE_MAX_SGE) {
		rxe_dev_warn(dev, "create_srq: max_wr %u max_sge %u over "
			     "%u / %u", attr->max_wr, attr->max_sge,
			     RXE_MAX_SRQ_WR, RXE_MAX_SGE);
		return -EINVAL;
	}
	srq = g_new0(struct rxe_srq, 1);
	pthread_mutex_init(&srq->lock, NULL);
	srq->rq.size = attr->max_wr;
	srq->rq.max_sge = attr->max_sge ? attr->max_sge : 1;
	srq->rq.wqe = g_new0(struct rxe_recv_wqe, srq->rq.size);
	srq->limit = attr->srq_limit;
	srq->base.pd = pd;
	attr->max_sge = srq->rq.max_sge;
	*out = &srq->base;
	return 0;
}

int rxe_modify_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr,
		   unsigned int mask)
{
	struct rxe_srq *srq = to_rxe_srq(s);
	int err = 0;

	pthread_mutex_lock(&srq->lock);
	if (mask & RNICPI_SRQ_MAX_WR) {
		uint32_t held = srq->rq.tail - srq->rq.head;
		struct rxe_recv_wqe *w;
		uint32_t i;

		if (attr->max_wr < held || attr->max_wr > RXE_MAX_SRQ_WR) {
			err = -EINVAL;
			goto out;
		}
		w = g_new0(struct rxe_recv_wqe, attr->max_wr);
		for (i = 0; i < held; i++)
			w[i] = srq->rq.wqe[(srq->rq.head + i) % srq->rq.size];
		g_free(srq->rq.wqe);
		srq->rq.wqe = w;
		srq->rq.size = attr->max_wr;
		srq->rq.head = 0;
		srq->rq.tail = held;
	}
	if (mask & RNICPI_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
out:
	pthread_mutex_unlock(&srq->lock);
	return err;
}

int rxe_query_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr)
{
	struct rxe_srq *srq = to_rxe_srq(s);

	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->rq.size;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int rxe_destroy_srq(struct rnicpi_srq *s)
{
	struct rxe_srq *srq = to_rxe_srq(s);

	if (atomic_load(&srq->users) > 0)
		return -EBUSY;
	pthread_mutex_destroy(&srq->lock);
	g_free(srq->rq.wqe);
	g_free(srq);
	return 0;
}

int rxe_post_srq_recv(struct rnicpi_srq *s, const struct rnicpi_recv_wr *wr,
		      const struct rnicpi_recv_wr **bad)
{
	struct rxe_srq *srq = to_rxe_srq(s);
	struct rxe_dev *dev = to_rxe_dev(s->pd->device);
	int err = 0;

	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		err = rq_post(dev, &srq->rq, wr, "post_srq_recv");
		if (err) {
			*bad = wr;
			break;
		}
	}
	pthread_mutex_unlock(&srq->lock);
	return err;
}

/* IBA 10.2.9.4: the SRQ limit event fires once when the WQE count drops
 * below the limit, which then disarms. */
bool rxe_rq_take(struct rxe_qp *qp, struct rxe_recv_wqe *out)
{
	struct rxe_srq *srq = qp->srq;
	bool limit = false;

	if (!srq) {
		if (qp->rq.head == qp->rq.tail)
			return false;
		*out = qp->rq.wqe[qp->rq.head % qp->rq.size];
		qp->rq.head++;
		return true;
	}
	pthread_mutex_lock(&srq->lock);
	if (srq->rq.head == srq->rq.tail) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	*out = srq->rq.wqe[srq->rq.head % srq->rq.size];
	srq->rq.head++;
	if (srq->limit && srq->rq.tail - srq->rq.head < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit && qp->n_deferred < RXE_MAX_DEFERRED) {
		struct rnicpi_async_event *ev =
			&qp->deferred[qp->n_deferred++].ev;

		memset(ev, 0, sizeof(*ev));
		ev->type = RNICPI_EVENT_SRQ_LIMIT_REACHED;
		ev->element.srq = &srq->base;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Address handles                                                    */
/* ------------------------------------------------------------------ */

int rxe_av_from_attr(struct rxe_dev *dev, const struct rnicpi_ah_attr *attr,
		     struct rxe_av *av)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					      0xff, 0xff };
	int sfam;

	memset(av, 0, sizeof(*av));
	if (attr->sgid_index >= RXE_MAX_GID) {
		rxe_dev_warn(dev, "AV: source GID index %u out of range",
			     attr->sgid_index);
		return -EINVAL;
	}
	pthread_mutex_lock(&dev->lock);
	sfam = dev->gids[attr->sgid_index].valid
		       ? dev->gids[attr->sgid_index].addr.ss_family : 0;
	pthread_mutex_unlock(&dev->lock);
	if (!sfam) {
		rxe_dev_warn(dev, "AV: source GID index %u is empty",
			     attr->sgid_index);
		return -EINVAL;
	}
	av->sgid_index = attr->sgid_index;
	av->traffic_class = attr->traffic_class;
	av->hop_limit = attr->hop_limit;
	av->flow_label = attr->flow_label;
	if (memcmp(attr->dgid.raw, v4mapped, 12) == 0) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&av->dst;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(ROCE_V2_UDP_PORT);
		memcpy(&sin->sin_addr, attr->dgid.raw + 12, 4);
		av->dst_len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&av->dst;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(ROCE_V2_UDP_PORT);
		memcpy(&sin6->sin6_addr, attr->dgid.raw, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
			sin6->sin6_scope_id = (uint32_t)dev->base.ifindex;
		av->dst_len = sizeof(*sin6);
	}
	if (av->dst.ss_family != sfam) {
		rxe_dev_warn(dev, "AV: destination GID and source GID %u are "
			     "of different IP families", attr->sgid_index);
		return -EINVAL;
	}
	return 0;
}

int rxe_create_ah(struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
		  struct rnicpi_ah **out)
{
	struct rxe_ah *ah = g_new0(struct rxe_ah, 1);
	int err;

	err = rxe_av_from_attr(to_rxe_dev(pd->device), attr, &ah->av);
	if (err) {
		g_free(ah);
		return err;
	}
	ah->base.pd = pd;
	*out = &ah->base;
	return 0;
}

int rxe_destroy_ah(struct rnicpi_ah *a)
{
	g_free(to_rxe_ah(a));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Posting                                                            */
/* ------------------------------------------------------------------ */

static int check_send_wr(struct rxe_qp *qp, const struct rnicpi_send_wr *wr,
			 uint64_t *length)
{
	bool rc = qp->type == RNICPI_QPT_RC;
	uint64_t len = 0;
	uint32_t i;

	switch (wr->opcode) {
	case RNICPI_WR_SEND:
	case RNICPI_WR_SEND_WITH_IMM:
		break;
	case RNICPI_WR_RDMA_WRITE:
	case RNICPI_WR_RDMA_WRITE_WITH_IMM:
	case RNICPI_WR_RDMA_READ:
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
	case RNICPI_WR_ATOMIC_FETCH_AND_ADD:
	case RNICPI_WR_SEND_WITH_INV:
	case RNICPI_WR_LOCAL_INV:
	case RNICPI_WR_BIND_MW:
	case RNICPI_WR_REG_MR:
		if (!rc)
			goto bad_op;
		break;
	default:
		goto bad_op;
	}
	if (wr->num_sge > qp->cap.max_send_sge &&
	    !(wr->send_flags & RNICPI_SEND_INLINE)) {
		rxe_qp_warn(qp, "post_send: %u SGEs, at most %u", wr->num_sge,
			    qp->cap.max_send_sge);
		return -EINVAL;
	}
	if (wr->num_sge > RXE_MAX_SGE) {
		rxe_qp_warn(qp, "post_send: %u SGEs", wr->num_sge);
		return -EINVAL;
	}
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > RXE_MAX_MSG_SIZE) {
		rxe_qp_warn(qp, "post_send: %" PRIu64 " bytes, at most %u",
			    len, RXE_MAX_MSG_SIZE);
		return -EINVAL;
	}
	if ((wr->send_flags & RNICPI_SEND_INLINE) &&
	    len > qp->cap.max_inline_data) {
		rxe_qp_warn(qp, "post_send: %" PRIu64 " inline bytes, at "
			    "most %u", len, qp->cap.max_inline_data);
		return -EINVAL;
	}
	if ((wr->opcode == RNICPI_WR_ATOMIC_CMP_AND_SWP ||
	     wr->opcode == RNICPI_WR_ATOMIC_FETCH_AND_ADD) &&
	    (len != 8 || wr->num_sge != 1 ||
	     (wr->wr.atomic.remote_addr & 7))) {
		rxe_qp_warn(qp, "post_send: atomic needs one 8-byte SGE and "
			    "an 8-byte aligned address (got %" PRIu64
			    " bytes, 0x%" PRIx64 ")", len,
			    wr->wr.atomic.remote_addr);
		return -EINVAL;
	}
	if (!rc && len > qp->mtu) {
		rxe_qp_warn(qp, "post_send: UD message of %" PRIu64 " bytes "
			    "over the path MTU %u", len, qp->mtu);
		return -EINVAL;
	}
	if (wr->opcode == RNICPI_WR_BIND_MW &&
	    (!wr->wr.bind_mw.mw ||
	     wr->wr.bind_mw.mw->pd != qp->base.pd)) {
		rxe_qp_warn(qp, "post_send: BIND_MW without a window of this "
			    "QP's PD");
		return -EINVAL;
	}
	if (wr->opcode == RNICPI_WR_REG_MR &&
	    (!wr->wr.reg_mr.mr || wr->wr.reg_mr.mr->pd != qp->base.pd ||
	     !to_rxe_mr(wr->wr.reg_mr.mr)->fast_reg)) {
		rxe_qp_warn(qp, "post_send: REG_MR without a region of this "
			    "QP's PD from alloc_mr");
		return -EINVAL;
	}
	if (!rc && !wr->wr.ud.ah) {
		rxe_qp_warn(qp, "post_send: UD WR without address handle");
		return -EINVAL;
	}
	*length = len;
	return 0;
bad_op:
	rxe_qp_warn(qp, "post_send: opcode %d not valid on this QP type",
		    wr->opcode);
	return -EINVAL;
}

static int sq_post_one(struct rxe_qp *qp, const struct rnicpi_send_wr *wr)
{
	struct rxe_send_wqe *w;
	uint64_t len;
	uint32_t i;
	int err;

	err = check_send_wr(qp, wr, &len);
	if (err)
		return err;
	if (qp->sq_tail - qp->sq_head >= qp->sq_size) {
		rxe_qp_dbg(qp, "post_send: send queue full (%u)", qp->sq_size);
		return -ENOMEM;
	}
	w = sq_wqe(qp, qp->sq_tail);
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	if (qp->sq_sig_all)
		w->flags |= RNICPI_SEND_SIGNALED;
	w->imm_or_inv = wr->ex.imm_data;
	w->length = (uint32_t)len;
	w->num_sge = wr->num_sge;
	w->state = WQE_POSTED;
	w->status = RNICPI_WC_SUCCESS;
	w->atomic_orig = 0;
	w->reg_mr = NULL;
	switch (wr->opcode) {
	case RNICPI_WR_ATOMIC_CMP_AND_SWP:
	case RNICPI_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case RNICPI_WR_BIND_MW:
		w->bind_mw = wr->wr.bind_mw.mw;
		w->bind_rkey = wr->wr.bind_mw.rkey;
		w->bind = wr->wr.bind_mw.bind_info;
		w->length = 0;
		break;
	case RNICPI_WR_REG_MR:
		w->reg_mr = to_rxe_mr(wr->wr.reg_mr.mr);
		w->reg_addr = wr->wr.reg_mr.addr;
		w->reg_length = wr->wr.reg_mr.length;
		w->reg_iova = wr->wr.reg_mr.iova;
		w->reg_access = wr->wr.reg_mr.access;
		w->reg_key = wr->wr.reg_mr.key;
		w->length = 0;
		break;
	default:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	}
	if (qp->type != RNICPI_QPT_RC) {
		w->av = to_rxe_ah(wr->wr.ud.ah)->av;
		w->remote_qpn = wr->wr.ud.remote_qpn & IB_QPN_MASK;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	}
	if (wr->send_flags & RNICPI_SEND_INLINE) {
		err = rxe_sgl_copy(qp, wr->sg_list, wr->num_sge, 0,
				   w->inline_data, w->length, false);
		if (err) {
			rxe_qp_warn(qp, "post_send: inline data unreadable");
			return -EINVAL;
		}
		w->num_sge = 0;
	} else {
		for (i = 0; i < wr->num_sge; i++)
			w->sge[i] = wr->sg_list[i];
	}
	if (w->reg_mr)
		rxe_mr_get(w->reg_mr);
	qp->sq_tail++;
	return 0;
}

/*
 * A post that finds the pipe busy (option ack_clock: that many packets
 * or more unacknowledged) leaves its WRs for the ACK that comes next:
 * the completer runs the requester then and everything posted meanwhile
 * goes out together, equal-size packets as one GSO datagram, where each
 * post would have cost a datagram of its own and a wake-up at the peer
 * (ib_write_bw 4 KiB with 128 in flight: every packet read and placed
 * one by one). Among that many unacknowledged packets one asks for an
 * ACK (at least ack_every apart), so one comes, or the retransmit timer
 * runs the requester; at most RXE_TX_BATCH WRs wait. A consumer with
 * little in flight (a ping-pong, a WRITE and its SEND) is never held.
 */
static bool ack_clocked(struct rxe_qp *qp)
{
	const struct rxe_dev *dev = qp->dev;
	uint32_t from = MAX(dev->ack_clock, dev->ack_every);

	if (!dev->ack_clock || qp->type != RNICPI_QPT_RC ||
	    psn_diff(qp->req.psn, qp->comp.psn) < (int32_t)from ||
	    qp->sq_tail - qp->req.wqe >= RXE_TX_BATCH)
		return false;
	rxe_count(qp->dev, RXE_CNT_ACK_CLOCKED);
	return true;
}

int rxe_post_send(struct rnicpi_qp *q, const struct rnicpi_send_wr *wr,
		  const struct rnicpi_send_wr **bad)
{
	struct rxe_qp *qp = to_rxe_qp(q);
	bool more = false;
	int err = 0;

	rxe_qp_lock(qp);
	if (qp->state != RNICPI_QPS_RTS && qp->state != RNICPI_QPS_SQD &&
	    qp->state != RNICPI_QPS_ERR) {
		rxe_qp_warn(qp, "post_send in state %s",
			    rnicpi_qp_state_name(qp->state));
		*bad = wr;
		rxe_qp_unlock(qp);
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		err = sq_post_one(qp, wr);
		if (err) {
			*bad = wr;
			break;
		}
		more = (wr->send_flags & RNICPI_SEND_MORE) != 0;
	}
	/* More WRs follow at once (RNICPI_SEND_MORE): leave these queued,
	 * up to a transmit batch, so that the requester sends them
	 * together with the next WR posted without the flag. */
	if (qp->state == RNICPI_QPS_ERR)
		rxe_qp_error(qp); /* flush what was just posted */
	else if (qp->state == RNICPI_QPS_RTS &&
		 (err || !more || qp->sq_tail - qp->req.wqe >= RXE_TX_BATCH ||
		  qp->sq_tail - qp->sq_head >= qp->sq_size) &&
		 !ack_clocked(qp))
		rxe_req_run(qp);
	rxe_qp_unlock(qp);
	if (qp->dev->poll_rx)
		rxe_net_poll_rx_busy(qp->dev);
	return err;
}

int rxe_post_recv(struct rnicpi_qp *q, const struct rnicpi_recv_wr *wr,
		  const struct rnicpi_recv_wr **bad)
{
	struct rxe_qp *qp = to_rxe_qp(q);
	int err = 0;

	rxe_qp_lock(qp);
	if (qp->srq) {
		rxe_qp_warn(qp, "post_recv on a QP with an SRQ");
		*bad = wr;
		rxe_qp_unlock(qp);
		return -EINVAL;
	}
	if (qp->state == RNICPI_QPS_RESET) {
		rxe_qp_warn(qp, "post_recv in state RESET");
		*bad = wr;
		rxe_qp_unlock(qp);
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		err = rq_post(qp->dev, &qp->rq, wr, "post_recv");
		if (err) {
			*bad = wr;
			break;
		}
	}
	if (qp->state == RNICPI_QPS_ERR)
		rxe_qp_error(qp);
	rxe_qp_unlock(qp);
	if (qp->dev->poll_rx)
		rxe_net_poll_rx_busy(qp->dev);
	return err;
}
