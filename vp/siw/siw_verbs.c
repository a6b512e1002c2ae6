/* SPDX-License-Identifier: MIT */
/*
 * siw_verbs.c - verbs objects of the soft-iWARP provider: device and port
 * queries, PDs, MRs (STags), CQs, SRQs, and the ops table.
 * QPs and posting are in siw_qp_verbs.c.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vp/siw/siw.h"

/* ------------------------------------------------------------------ */
/* Device and port                                                     */
/* ------------------------------------------------------------------ */

static int siw_query_device(struct rnicpi_device *d,
			    struct rnicpi_device_attr *a)
{
	struct siw_device *dev = to_siw_dev(d);

	memset(a, 0, sizeof(*a));
	a->transport = RNICPI_TRANSPORT_IWARP;
	g_strlcpy(a->fw_ver, "hostrdma-siw 1", sizeof(a->fw_ver));
	a->vendor_id = 0x626d74; /* "bmt", as Linux siw reports */
	a->vendor_part_id = 0;
	a->max_mr_size = (uint64_t)1 << 40;
	a->page_size_cap = 4096;
	a->max_msg_size = (uint64_t)1 << 31;
	a->max_qp = dev->opts.max_qp;
	a->max_qp_wr = SIW_MAX_QP_WR;
	a->max_sge = SIW_MAX_SGE;
	a->max_sge_rd = SIW_MAX_SGE;
	a->max_inline_data = SIW_MAX_INLINE;
	a->max_cq = SIW_MAX_CQ;
	a->max_cqe = SIW_MAX_CQE;
	a->max_mr = SIW_MAX_MR;
	a->max_mw = SIW_MAX_MR;
	a->max_pd = SIW_MAX_PD;
	a->max_srq = SIW_MAX_SRQ;
	a->max_srq_wr = SIW_MAX_SRQ_WR;
	a->max_srq_sge = SIW_MAX_SGE;
	a->max_qp_rd_atom = SIW_MAX_IRD;
	a->max_qp_init_rd_atom = SIW_MAX_ORD;
	a->max_res_rd_atom = SIW_MAX_IRD * dev->opts.max_qp;
	a->max_private_data = SIW_MAX_PRIVATE_DATA;
	a->atomic_cap = RNICPI_ATOMIC_NONE;
	a->caps = RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_SRQ |
		  RNICPI_DEV_CAP_SEND_INV | RNICPI_DEV_CAP_LOCAL_INV |
		  RNICPI_DEV_CAP_ZERO_BASED | RNICPI_DEV_CAP_IWARP_CM |
		  RNICPI_DEV_CAP_RESIZE_CQ | RNICPI_DEV_CAP_MW_TYPE_1 |
		  RNICPI_DEV_CAP_MW_TYPE_2 | RNICPI_DEV_CAP_READ_SINK_MW |
		  RNICPI_DEV_CAP_RESIZE_QP | RNICPI_DEV_CAP_IWARP_NO_MPA |
		  RNICPI_DEV_CAP_FAST_REG | RNICPI_DEV_CAP_RESIZE_SRQ;
	a->phys_port_cnt = 1;
	return 0;
}

static enum rnicpi_mtu mtu_code(uint32_t mtu)
{
	if (mtu >= 4096)
		return RNICPI_MTU_4096;
	if (mtu >= 2048)
		return RNICPI_MTU_2048;
	if (mtu >= 1024)
		return RNICPI_MTU_1024;
	if (mtu >= 512)
		return RNICPI_MTU_512;
	return RNICPI_MTU_256;
}

static int siw_query_port(struct rnicpi_device *d, uint8_t port,
			  struct rnicpi_port_attr *a)
{
	struct siw_device *dev = to_siw_dev(d);

	if (port != 1) {
		siw_info(dev, "query_port: no port %u", port);
		return -EINVAL;
	}
	memset(a, 0, sizeof(*a));
	a->state = (dev->nd_flags & RNICPI_NETDEV_UP) ? RNICPI_PORT_ACTIVE
						       : RNICPI_PORT_DOWN;
	a->max_mtu = RNICPI_MTU_4096;
	a->active_mtu = mtu_code(dev->mtu);
	a->link_layer = RNICPI_LINK_LAYER_ETHERNET;
	a->max_msg_sz = 1u << 31;
	return 0;
}

static void siw_netdev_event(struct rnicpi_device *d,
			     const struct rnicpi_netdev *nd,
			     enum rnicpi_netdev_event event)
{
	struct siw_device *dev = to_siw_dev(d);
	bool was_up = dev->nd_flags & RNICPI_NETDEV_UP;
	bool up = nd->flags & RNICPI_NETDEV_UP;
	struct rnicpi_async_event ev = { 0 };

	dev->mtu = nd->mtu;
	dev->nd_flags = nd->flags;
	if (was_up == up)
		return;
	ev.type = up ? RNICPI_EVENT_PORT_ACTIVE : RNICPI_EVENT_PORT_ERR;
	ev.element.port_num = 1;
	siw_dev_queue_async(dev, &ev);
	siw_dev_deliver(dev);
}

/* ------------------------------------------------------------------ */
/* Protection domains                                                  */
/* ------------------------------------------------------------------ */

static int siw_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out)
{
	struct siw_device *dev = to_siw_dev(d);
	struct siw_pd *pd;

	if (atomic_fetch_add(&dev->n_pd, 1) >= SIW_MAX_PD) {
		atomic_fetch_sub(&dev->n_pd, 1);
		siw_warn(dev, "alloc_pd: the device's limit of %u PDs is "
			 "reached", SIW_MAX_PD);
		return -ENOSPC;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		atomic_fetch_sub(&dev->n_pd, 1);
		return -ENOMEM;
	}
	pd->base.device = d;
	pd->dev = dev;
	*out = &pd->base;
	return 0;
}

static int siw_dealloc_pd(struct rnicpi_pd *p)
{
	struct siw_pd *pd = to_siw_pd(p);

	atomic_fetch_sub(&pd->dev->n_pd, 1);
	free(pd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Memory regions                                                      */
/* ------------------------------------------------------------------ */

void siw_mr_get(struct siw_mr *mr)
{
	atomic_fetch_add(&mr->ref, 1);
}

void siw_mr_put(struct siw_mr *mr)
{
	if (!mr || atomic_fetch_sub(&mr->ref, 1) != 1)
		return;
	if (mr->is_mw)
		pthread_mutex_destroy(&mr->mw_lock);
	siw_mr_put(mr->parent);
	free(mr);
}

static void mr_access_end(struct siw_mr *mr)
{
	if (atomic_fetch_sub(&mr->active, 1) == 1 && atomic_load(&mr->dead)) {
		pthread_mutex_lock(&mr->dev->lock);
		pthread_cond_broadcast(&mr->dev->mr_cond);
		pthread_mutex_unlock(&mr->dev->lock);
	}
}

/* One region, or a window's binding and the region under it. */
static bool mr_access_begin(struct siw_mr *mr)
{
	/* Count first, then look: siw_dereg_mr sets dead, then waits for
	 * the count (both sequentially consistent). */
	atomic_fetch_add(&mr->active, 1);
	if (atomic_load(&mr->dead)) {
		mr_access_end(mr);
		return false;
	}
	if (mr->parent && !mr_access_begin(mr->parent)) {
		mr_access_end(mr);
		return false;
	}
	return true;
}

static void mr_access_end_all(struct siw_mr *mr)
{
	if (mr->parent)
		mr_access_end_all(mr->parent);
	mr_access_end(mr);
}

bool siw_mrs_access_begin(struct siw_mr *const *mrs, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (!mrs[i])
			continue;
		if (!mr_access_begin(mrs[i])) {
			siw_mrs_access_end(mrs, i);
			return false;
		}
	}
	return true;
}

void siw_mrs_access_end(struct siw_mr *const *mrs, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (mrs[i])
			mr_access_end_all(mrs[i]);
}

static int check_access(struct siw_device *dev, unsigned int access)
{
	if ((access & (RNICPI_ACCESS_REMOTE_WRITE |
		       RNICPI_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RNICPI_ACCESS_LOCAL_WRITE)) {
		siw_info(dev, "reg_mr: access 0x%x has remote write/atomic "
			 "without local write", access);
		return -EINVAL;
	}
	if (access & RNICPI_ACCESS_REMOTE_ATOMIC) {
		siw_info(dev, "reg_mr: iWARP has no atomics (access 0x%x)",
			 access);
		return -EINVAL;
	}
	return 0;
}

/* A new registration of @length bytes at @addr (iova @iova unless
 * zero-based) with its own STag: 0, or -ENOMEM / the key table's error. */
static int mr_new(struct siw_device *dev, struct rnicpi_pd *pd, void *addr,
		  uint64_t length, uint64_t iova, unsigned int access,
		  struct siw_mr **out)
{
	struct siw_mr *mr = calloc(1, sizeof(*mr));
	int rc;

	if (!mr)
		return -ENOMEM;
	atomic_init(&mr->ref, 1);
	mr->dev = dev;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->iova = (access & RNICPI_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->access = access;
	rc = rnicpi_key_alloc(&dev->mr_keys, mr, &mr->stag);
	if (rc) {
		siw_info(dev, "reg_mr: no free STag (%d)", rc);
		free(mr);
		return rc;
	}
	atomic_init(&mr->valid, true);
	siw_dbg(dev, "MR stag 0x%08x addr %p len %llu iova 0x%llx access 0x%x",
		mr->stag, addr, (unsigned long long)length,
		(unsigned long long)mr->iova, access);
	*out = mr;
	return 0;
}

/*
 * The registration stops: its STag is refused from now on, and once we
 * return the core unpins the pages and the application may free them, so
 * no byte of them may be touched after that (Linux siw keeps the pages
 * pinned while a WR uses them; here the memory is the application's).
 * Work in flight that still names the region fails at its next touch; a
 * touch under way (one syscall) is waited for. WRs in flight hold
 * references; the last one frees the struct.
 */
static void mr_retire(struct siw_mr *mr)
{
	int rc = rnicpi_key_free(&mr->dev->mr_keys, mr->stag);

	if (rc)
		siw_info(mr->dev, "dereg_mr: stag 0x%08x not current (%d)",
			 mr->stag, rc);
	atomic_store(&mr->valid, false);
	atomic_store(&mr->dead, true);
	pthread_mutex_lock(&mr->dev->lock);
	while (atomic_load(&mr->active))
		pthread_cond_wait(&mr->dev->mr_cond, &mr->dev->lock);
	pthread_mutex_unlock(&mr->dev->lock);
	siw_mr_put(mr);
}

static void handle_show(struct siw_mr_handle *h)
{
	h->base.pd = h->mr->pd;
	h->base.lkey = h->base.rkey = h->mr->stag;
}

static int siw_reg_mr(struct rnicpi_pd *p, void *addr, uint64_t length,
		      uint64_t iova, unsigned int access,
		      struct rnicpi_mr **out)
{
	struct siw_pd *pd = to_siw_pd(p);
	struct siw_device *dev = pd->dev;
	struct siw_mr_handle *h;
	int rc;

	rc = check_access(dev, access);
	if (rc)
		return rc;
	if (!addr && length) {
		siw_info(dev, "reg_mr: NULL address for %llu bytes",
			 (unsigned long long)length);
		return -EINVAL;
	}
	if (iova + length < iova) {
		siw_info(dev, "reg_mr: iova 0x%llx + %llu wraps",
			 (unsigned long long)iova,
			 (unsigned long long)length);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = mr_new(dev, p, addr, length, iova, access, &h->mr);
	if (rc) {
		free(h);
		return rc;
	}
	handle_show(h);
	*out = &h->base;
	return 0;
}

/*
 * A new registration with what changes, under a new STag, then the old
 * one retired as dereg_mr retires it: the old STag is refused, and work
 * in flight that resolved the old translation (a Read's sink, a Write
 * being placed, a message being sent) fails rather than touching pages
 * the core unpins once we return. On error nothing has changed.
 */
static int siw_rereg_mr(struct rnicpi_mr *m, unsigned int flags,
			struct rnicpi_pd *pd, void *addr, uint64_t length,
			uint64_t iova, unsigned int access)
{
	struct siw_mr_handle *h = container_of(m, struct siw_mr_handle, base);
	struct siw_mr *old = h->mr, *mr;
	struct siw_device *dev = old->dev;
	int rc;

	if (atomic_load(&old->n_binds)) {
		siw_info(dev, "rereg_mr: STag 0x%08x has memory windows bound",
			 old->stag);
		return -EBUSY;
	}

	if (flags & ~(RNICPI_REREG_TRANSLATION | RNICPI_REREG_PD |
		      RNICPI_REREG_ACCESS)) {
		siw_info(dev, "rereg_mr: unknown flags 0x%x", flags);
		return -EINVAL;
	}
	if (flags & RNICPI_REREG_ACCESS) {
		rc = check_access(dev, access);
		if (rc)
			return rc;
	} else {
		access = old->access;
	}
	if (flags & RNICPI_REREG_TRANSLATION) {
		if ((!addr && length) || iova + length < iova) {
			siw_info(dev, "rereg_mr: bad translation %p/%llu",
				 addr, (unsigned long long)length);
			return -EINVAL;
		}
	} else {
		addr = old->addr;
		length = old->length;
		iova = old->iova;
	}
	rc = mr_new(dev, (flags & RNICPI_REREG_PD) ? pd : old->pd, addr,
		    length, iova, access, &mr);
	if (rc)
		return rc;
	h->mr = mr;
	handle_show(h);
	mr_retire(old);
	return 0;
}

/* A region for fast registration (RDMA verbs' Allocate Non-Shared
 * Physical STag; the kernel's ib_alloc_mr): an STag that is invalid until
 * a REG_MR WR runs (siw_mr_fast_reg). */
static int siw_alloc_mr(struct rnicpi_pd *p, uint64_t max_len,
			struct rnicpi_mr **out)
{
	struct siw_device *dev = to_siw_pd(p)->dev;
	struct siw_mr_handle *h;
	int rc;

	if (max_len == 0)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	rc = mr_new(dev, p, NULL, 0, 0, 0, &h->mr);
	if (rc) {
		free(h);
		return rc;
	}
	atomic_store(&h->mr->valid, false);
	h->mr->fast_reg = true;
	h->mr->max_len = max_len;
	handle_show(h);
	*out = &h->base;
	return 0;
}

/*
 * REG_MR, in send-queue order (the kernel's siw_fastreg_mr): the STag
 * must be invalid, so no new access sees the translation change; it takes
 * the consumer's key byte, then becomes valid. Readers check `valid`
 * before they read the translation.
 */
enum rnicpi_wc_status siw_mr_fast_reg(struct siw_qp *qp,
				      const struct siw_wqe *w)
{
	struct siw_mr *mr = w->reg_mr;
	struct siw_device *dev = qp->dev;
	uint64_t iova = (w->reg_access & RNICPI_ACCESS_ZERO_BASED) ?
				0 : w->reg_iova;
	uint32_t key;

	if (!mr || !mr->fast_reg || atomic_load(&mr->valid) ||
	    atomic_load(&mr->dead) || mr->pd != &qp->pd->base ||
	    w->reg_length == 0 || w->reg_length > mr->max_len ||
	    !w->reg_addr || iova + w->reg_length < iova ||
	    check_access(dev, w->reg_access) ||
	    rnicpi_key_index(w->reg_key) != rnicpi_key_index(mr->stag) ||
	    rnicpi_key_set_byte(&dev->mr_keys, mr->stag,
				(uint8_t)w->reg_key, &key)) {
		siw_qp_info(qp, "REG_MR of STag 0x%08x as 0x%08x, %llu bytes "
			    "access 0x%x refused (valid, deregistered, too "
			    "long or the same key byte)",
			    mr ? mr->stag : 0, w->reg_key,
			    (unsigned long long)w->reg_length, w->reg_access);
		return RNICPI_WC_LOC_QP_OP_ERR;
	}
	mr->addr = w->reg_addr;
	mr->length = w->reg_length;
	mr->iova = iova;
	mr->access = w->reg_access;
	mr->stag = key;
	atomic_store(&mr->valid, true);
	siw_qp_dbg(qp, "STag 0x%08x registered: %p, %llu bytes, iova 0x%llx",
		   key, w->reg_addr, (unsigned long long)w->reg_length,
		   (unsigned long long)iova);
	return RNICPI_WC_SUCCESS;
}

static int siw_dereg_mr(struct rnicpi_mr *m)
{
	struct siw_mr_handle *h = container_of(m, struct siw_mr_handle, base);

	if (atomic_load(&h->mr->n_binds)) {
		siw_info(h->mr->dev, "dereg_mr: STag 0x%08x has memory "
			 "windows bound", h->mr->stag);
		return -EBUSY;
	}
	mr_retire(h->mr);
	free(h);
	return 0;
}

int siw_sge_resolve(struct siw_device *dev, struct siw_pd *pd,
		    const struct rnicpi_sge *sge, unsigned int access,
		    struct siw_mr **out, uint8_t **ptr)
{
	struct siw_mr *mr;
	uint64_t off;

	mr = rnicpi_key_lookup(&dev->mr_keys, sge->lkey);
	if (!mr)
		return -ENOENT;
	if (!atomic_load(&mr->valid) || mr->pd != &pd->base) {
		siw_mr_put(mr);
		return -EPERM;
	}
	if ((mr->access & access) != access) {
		siw_mr_put(mr);
		return -EACCES;
	}
	if (sge->addr < mr->iova) {
		siw_mr_put(mr);
		return -ERANGE;
	}
	off = sge->addr - mr->iova;
	if (off > mr->length || sge->length > mr->length - off) {
		siw_mr_put(mr);
		return -ERANGE;
	}
	*out = mr;
	*ptr = mr->addr + off;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

void siw_cq_push(struct siw_cq *cq, const struct rnicpi_wc *wc,
		 bool solicited)
{
	if (rnicpi_cq_ring_push(&cq->ring, wc, solicited) == -ENOSPC &&
	    !atomic_exchange(&cq->err_reported, true)) {
		struct rnicpi_async_event ev = { .type = RNICPI_EVENT_CQ_ERR };

		siw_info(cq->dev, "CQ of %u entries overflowed", cq->base.cqe);
		ev.element.cq = &cq->base;
		ev.status = -ENOSPC;
		siw_dev_queue_async(cq->dev, &ev);
	}
}

static int siw_create_cq(struct rnicpi_device *d,
			 const struct rnicpi_cq_init_attr *attr,
			 struct rnicpi_cq **out)
{
	struct siw_device *dev = to_siw_dev(d);
	struct siw_cq *cq;
	int rc;

	if (!attr->cqe || attr->cqe > SIW_MAX_CQE) {
		siw_info(dev, "create_cq: %u entries (1..%u)", attr->cqe,
			 SIW_MAX_CQE);
		return -EINVAL;
	}
	if (atomic_fetch_add(&dev->n_cq, 1) >= SIW_MAX_CQ) {
		atomic_fetch_sub(&dev->n_cq, 1);
		siw_warn(dev, "create_cq: the device's limit of %u CQs is "
			 "reached", SIW_MAX_CQ);
		return -ENOSPC;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		rc = -ENOMEM;
		goto err_count;
	}
	rc = rnicpi_cq_ring_init(&cq->ring, attr->cqe);
	if (rc)
		goto err_free;
	cq->dev = dev;
	pthread_mutex_init(&cq->qps_lock, NULL);
	siw_list_init(&cq->qps);
	cq->base.device = d;
	cq->base.cqe = attr->cqe;
	cq->base.notify_fd = cq->ring.efd;
	*out = &cq->base;
	return 0;

err_free:
	free(cq);
err_count:
	atomic_fetch_sub(&dev->n_cq, 1);
	return rc;
}

static int siw_resize_cq(struct rnicpi_cq *c, uint32_t cqe)
{
	struct siw_cq *cq = to_siw_cq(c);
	int rc;

	if (!cqe || cqe > SIW_MAX_CQE) {
		siw_info(cq->dev, "resize_cq: %u entries (1..%u)", cqe,
			 SIW_MAX_CQE);
		return -EINVAL;
	}
	rc = rnicpi_cq_ring_resize(&cq->ring, cqe);
	if (rc) {
		siw_info(cq->dev, "resize_cq to %u: %d", cqe, rc);
		return rc;
	}
	cq->base.cqe = cqe;
	return 0;
}

static int siw_destroy_cq(struct rnicpi_cq *c)
{
	struct siw_cq *cq = to_siw_cq(c);

	pthread_mutex_destroy(&cq->qps_lock);
	rnicpi_cq_ring_fini(&cq->ring);
	atomic_fetch_sub(&cq->dev->n_cq, 1);
	siw_dev_purge_events(cq->dev, cq);
	free(cq);
	return 0;
}

static int siw_poll_cq(struct rnicpi_cq *c, int n, struct rnicpi_wc *wc)
{
	struct siw_cq *cq = to_siw_cq(c);
	int k;

	/* Counted by the polling thread alone as a rule: no locked add. */
	atomic_store_explicit(&cq->polls,
			      atomic_load_explicit(&cq->polls,
						   memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* The consumer has completions in hand: keep the send queues
	 * going (a bulk sender reaping its completions one by one), and
	 * now and then the receive side (SIW_NUDGE_RX_NS). */
	if (n == 0) {
		bool rx = cq->dev->opts.poll_rx &&
			  (atomic_load(&cq->nudge_found) ||
			   rnicpi_now_ns() - atomic_load(&cq->rx_polled_ns) >=
				   SIW_NUDGE_RX_NS);

		if (rx)
			atomic_store(&cq->nudge_found,
				     siw_cq_progress(cq, true));
		else if (cq->dev->opts.poll_tx)
			siw_cq_progress(cq, false);
		return 0;
	}
	k = rnicpi_cq_ring_poll(&cq->ring, n, wc);
	if (k == 0 && (cq->dev->opts.poll_rx || cq->dev->opts.poll_tx)) {
		siw_cq_progress(cq, true);
		k = rnicpi_cq_ring_poll(&cq->ring, n, wc);
	}
	return k;
}

static int siw_req_notify_cq(struct rnicpi_cq *c, int solicited_only)
{
	struct siw_cq *cq = to_siw_cq(c);
	int rc = rnicpi_cq_ring_arm(&cq->ring, solicited_only);

	if (cq->dev->opts.poll_rx)
		siw_cq_unpark(cq);
	return rc;
}

/* A consumer sleeps without arming a CQ of the device (it waits for
 * connection events, say): as at an arm, parked sockets go back to the
 * progress thread. */
static void siw_consumer_blocks(struct rnicpi_device *d)
{
	struct siw_device *dev = to_siw_dev(d);

	if (dev->opts.poll_rx)
		siw_dev_unpark(dev);
}

static int siw_cq_wait_begin_op(struct rnicpi_cq *c, int *fds, int max)
{
	return siw_cq_wait_begin(to_siw_cq(c), fds, max);
}

static void siw_cq_wait_end_op(struct rnicpi_cq *c)
{
	siw_cq_wait_end(to_siw_cq(c));
}

static int siw_ack_cq_event(struct rnicpi_cq *c)
{
	return rnicpi_cq_ring_ack(&to_siw_cq(c)->ring);
}

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */
/* ------------------------------------------------------------------ */

static int siw_create_srq(struct rnicpi_pd *p, struct rnicpi_srq_attr *attr,
			  struct rnicpi_srq **out)
{
	struct siw_pd *pd = to_siw_pd(p);
	struct siw_device *dev = pd->dev;
	struct siw_srq *srq;

	if (!attr->max_wr || attr->max_wr > SIW_MAX_SRQ_WR ||
	    attr->max_sge > SIW_MAX_SGE) {
		siw_info(dev, "create_srq: max_wr %u (1..%u) max_sge %u (..%u)",
			 attr->max_wr, SIW_MAX_SRQ_WR, attr->max_sge,
			 SIW_MAX_SGE);
		return -EINVAL;
	}
	if (atomic_fetch_add(&dev->n_srq, 1) >= SIW_MAX_SRQ) {
		atomic_fetch_sub(&dev->n_srq, 1);
		siw_warn(dev, "create_srq: the device's limit of %u SRQs is "
			 "reached", SIW_MAX_SRQ);
		return -ENOSPC;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq)
		srq->ring = calloc(attr->max_wr, sizeof(*srq->ring));
	if (!srq || !srq->ring) {
		free(srq);
		atomic_fetch_sub(&dev->n_srq, 1);
		return -ENOMEM;
	}
	pthread_mutex_init(&srq->lock, NULL);
	srq->dev = dev;
	srq->capacity = attr->max_wr;
	srq->max_sge = attr->max_sge ? attr->max_sge : 1;
	srq->limit = attr->srq_limit;
	srq->base.pd = p;
	attr->max_sge = srq->max_sge;
	*out = &srq->base;
	return 0;
}

static int siw_modify_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr,
			  unsigned int mask)
{
	struct siw_srq *srq = to_siw_srq(s);
	int rc = 0;

	if (mask & ~(RNICPI_SRQ_MAX_WR | RNICPI_SRQ_LIMIT))
		return -EINVAL;
	pthread_mutex_lock(&srq->lock);
	if (mask & RNICPI_SRQ_MAX_WR) {
		struct siw_rqe *ring;
		uint32_t i;

		if (!attr->max_wr || attr->max_wr > SIW_MAX_SRQ_WR ||
		    attr->max_wr < srq->count) {
			siw_info(srq->dev, "modify_srq: max_wr %u (holds %u)",
				 attr->max_wr, srq->count);
			rc = -EINVAL;
			goto out;
		}
		ring = calloc(attr->max_wr, sizeof(*ring));
		if (!ring) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0; i < srq->count; i++)
			ring[i] = srq->ring[(srq->head + i) % srq->capacity];
		free(srq->ring);
		srq->ring = ring;
		srq->head = 0;
		srq->capacity = attr->max_wr;
	}
	if (mask & RNICPI_SRQ_LIMIT) {
		if (attr->srq_limit > srq->capacity) {
			rc = -EINVAL;
			goto out;
		}
		srq->limit = attr->srq_limit;
	}
out:
	pthread_mutex_unlock(&srq->lock);
	return rc;
}

static int siw_query_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr)
{
	struct siw_srq *srq = to_siw_srq(s);

	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->capacity;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

static int siw_destroy_srq(struct rnicpi_srq *s)
{
	struct siw_srq *srq = to_siw_srq(s);

	if (atomic_load(&srq->users)) {
		siw_info(srq->dev, "destroy_srq: %u QPs still use it",
			 atomic_load(&srq->users));
		return -EBUSY;
	}
	atomic_fetch_sub(&srq->dev->n_srq, 1);
	siw_dev_purge_events(srq->dev, srq);
	pthread_mutex_destroy(&srq->lock);
	free(srq->ring);
	free(srq);
	return 0;
}

static int siw_post_srq_recv(struct rnicpi_srq *s,
			     const struct rnicpi_recv_wr *wr,
			     const struct rnicpi_recv_wr **bad)
{
	struct siw_srq *srq = to_siw_srq(s);
	int rc = 0;

	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		struct siw_rqe *r;

		if (wr->num_sge > srq->max_sge || (wr->num_sge && !wr->sg_list)) {
			siw_info(srq->dev, "post_srq_recv: %u SGEs (max %u)",
				 wr->num_sge, srq->max_sge);
			rc = -EINVAL;
			break;
		}
		if (srq->count == srq->capacity) {
			rc = -ENOMEM;
			break;
		}
		r = &srq->ring[(srq->head + srq->count) % srq->capacity];
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		if (wr->num_sge) /* sg_list may be NULL then */
			memcpy(r->sge, wr->sg_list,
			       wr->num_sge * sizeof(r->sge[0]));
		srq->count++;
	}
	pthread_mutex_unlock(&srq->lock);
	if (rc && bad)
		*bad = wr;
	return rc;
}

bool siw_srq_take(struct siw_srq *srq, struct siw_rqe *out)
{
	bool limit = false;

	pthread_mutex_lock(&srq->lock);
	if (!srq->count) {
		pthread_mutex_unlock(&srq->lock);
		return false;
	}
	*out = srq->ring[srq->head];
	srq->head = (srq->head + 1) % srq->capacity;
	srq->count--;
	/* IBA 11.5.2.4: the limit event fires once, then disarms. */
	if (srq->limit && srq->count < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit) {
		struct rnicpi_async_event ev = {
			.type = RNICPI_EVENT_SRQ_LIMIT_REACHED,
		};

		ev.element.srq = &srq->base;
		siw_dev_queue_async(srq->dev, &ev);
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* The ops table                                                       */
/* ------------------------------------------------------------------ */

const struct rnicpi_device_ops siw_device_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.device_destroy = siw_device_destroy,
	.query_device = siw_query_device,
	.query_port = siw_query_port,
	.netdev_event = siw_netdev_event,
	.alloc_pd = siw_alloc_pd,
	.dealloc_pd = siw_dealloc_pd,
	.reg_mr = siw_reg_mr,
	.rereg_mr = siw_rereg_mr,
	.dereg_mr = siw_dereg_mr,
	.alloc_mr = siw_alloc_mr,
	.alloc_mw = siw_alloc_mw,
	.dealloc_mw = siw_dealloc_mw,
	.create_cq = siw_create_cq,
	.resize_cq = siw_resize_cq,
	.destroy_cq = siw_destroy_cq,
	.poll_cq = siw_poll_cq,
	.req_notify_cq = siw_req_notify_cq,
	.ack_cq_event = siw_ack_cq_event,
	.create_srq = siw_create_srq,
	.modify_srq = siw_modify_srq,
	.query_srq = siw_query_srq,
	.destroy_srq = siw_destroy_srq,
	.post_srq_recv = siw_post_srq_recv,
	.create_qp = siw_create_qp,
	.modify_qp = siw_modify_qp,
	.query_qp = siw_query_qp,
	.destroy_qp = siw_destroy_qp,
	.post_send = siw_post_send,
	.post_recv = siw_post_recv,
	.conn_accept = siw_conn_accept,
	.conn_reject = siw_conn_reject,
	.iw_connect = siw_iw_connect,
	.iw_take_request = siw_iw_take_request,
	.consumer_blocks = siw_consumer_blocks,
	.cq_wait_begin = siw_cq_wait_begin_op,
	.cq_wait_end = siw_cq_wait_end_op,
};
