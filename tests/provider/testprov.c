/* SPDX-License-Identifier: MIT */
/*
 * testprov.c - provider "test": an in-memory verbs provider for ual's
 * tests. Never installed.
 *
 * It runs on the loopback interface only and moves data by memcpy, at post
 * time, between QPs of this provider in the same process:
 *  - A SEND completes at once on the sender's send CQ. If the QP was given
 *    a peer with modify_qp(RNICPI_QP_DEST_QPN) - the test-only convention
 *    for "connected" - the bytes go into the peer's oldest posted receive
 *    (its own queue or its SRQ) and that receive completes on the peer's
 *    receive CQ; without a posted receive the sender gets RNR_RETRY_EXC_ERR.
 *  - RDMA WRITE copies into the peer's memory named by an rkey with
 *    REMOTE_WRITE rights; BIND_MW binds a window to an MR (the MR then
 *    refuses dereg_mr with -EBUSY until the window is unbound or freed).
 *  Every SGE is checked against its MR (key, PD, bounds, rights); a bad
 *  one fails the WR with a completion status, never a stray write.
 *
 * Options (device_create): max_qp=N (1..1024, default 64) limits the QPs
 * of a device and shows in query_device; netdev_event=off hands ual a
 * table without netdev_event (ual then raises port events itself);
 * ops_size=short hands a table whose size ends before create_ah (so AHs
 * are "not supported" although the slot is filled). Any other key is
 * -EINVAL.
 *
 * Built twice: as a module (RNICPI_PROVIDER_DEFINE exports the entry) and
 * with -DRNICPI_BUILTIN into the test runner (rnicpi_builtin_test()).
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnicpi/rnicpi_util.h"

#define TP_MAX_QP_WR 256
#define TP_MAX_SGE 4
#define TP_MAX_CQE 65536
#define TP_MAX_MSG (1u << 20)
#define TP_GID_TBL_LEN 16
#define TP_MAX_ADDRS TP_GID_TBL_LEN

/* One lock for all queue state and data movement: a delivery touches two
 * QPs, their CQs and MRs of two devices; tests need correctness, not
 * parallelism. Upcalls are made without it (rnicpi.h). CQ rings have their
 * own lock. */
static pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;

enum tp_key_kind { TP_KEY_MR = 1, TP_KEY_MW = 2 };

struct tp_device {
	struct rnicpi_device base;
	const struct rnicpi_core_ops *core;
	unsigned int flags;	/* enum rnicpi_netdev_flags */
	uint32_t mtu;
	struct sockaddr_storage addrs[TP_MAX_ADDRS];
	size_t n_addrs;
	uint32_t max_qp;
	uint32_t n_qp;
	struct rnicpi_key_table keys; /* MRs and MWs */
};

struct tp_pd {
	struct rnicpi_pd base;
};

struct tp_mr {
	enum tp_key_kind kind; /* first: key table objects are told apart */
	struct rnicpi_mr base;
	char *addr;
	uint64_t length;
	uint64_t iova;
	unsigned int access;
	unsigned int bound_windows;
};

struct tp_mw {
	enum tp_key_kind kind;
	struct rnicpi_mw base;
	struct tp_mr *mr;	/* bound to, or NULL */
};

struct tp_cq {
	struct rnicpi_cq base;
	struct rnicpi_cq_ring ring;
};

struct tp_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct rnicpi_sge sge[TP_MAX_SGE];
};

/* A FIFO of receive WQEs (a QP's receive queue or an SRQ). */
struct tp_rq {
	struct tp_rwqe *wqe;
	uint32_t max_wr, max_sge, head, count;
};

struct tp_srq {
	struct rnicpi_srq base;
	struct tp_rq rq;
	uint32_t limit;
};

struct tp_qp {
	struct rnicpi_qp base;
	struct tp_device *dev;
	enum rnicpi_qp_type type;
	enum rnicpi_qp_state state;
	struct tp_cq *scq, *rcq;
	struct tp_srq *srq;
	struct rnicpi_qp_cap cap;
	int sq_sig_all;
	uint32_t dest_qpn;	/* 0: not connected */
	struct tp_rq rq;
};

struct tp_ah {
	struct rnicpi_ah base;
	struct rnicpi_ah_attr attr;
};

/* QPs of every device by number, for deliveries. Under tp_lock. */
static struct tp_qp **qp_table;
static uint32_t qp_table_len;
static uint32_t next_qpn = 2; /* QPN 1 is the GSI's */

#define to_tp_dev(d) container_of(d, struct tp_device, base)
#define to_tp_mr(m) container_of(m, struct tp_mr, base)
#define to_tp_mw(m) container_of(m, struct tp_mw, base)
#define to_tp_cq(c) container_of(c, struct tp_cq, base)
#define to_tp_srq(s) container_of(s, struct tp_srq, base)
#define to_tp_qp(q) container_of(q, struct tp_qp, base)
#define to_tp_ah(a) container_of(a, struct tp_ah, base)

static struct tp_device *pd_dev(struct rnicpi_pd *pd)
{
	return to_tp_dev(pd->device);
}

static void raise_event(struct tp_device *dev, enum rnicpi_event_type type)
{
	struct rnicpi_async_event ev = {
		.type = type,
		.element.port_num = 1,
	};

	dev->core->async_event(&dev->base, &ev);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */
/* ------------------------------------------------------------------ */

static void tp_copy_netdev(struct tp_device *dev,
			   const struct rnicpi_netdev *nd)
{
	dev->flags = nd->flags;
	dev->mtu = nd->mtu;
	dev->n_addrs = nd->n_addrs < TP_MAX_ADDRS ? nd->n_addrs : TP_MAX_ADDRS;
	if (dev->n_addrs)
		memcpy(dev->addrs, nd->addrs,
		       dev->n_addrs * sizeof(*dev->addrs));
}

static bool port_active(unsigned int flags)
{
	return (flags & (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING)) ==
	       (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING);
}

static void tp_device_destroy(struct rnicpi_device *d)
{
	struct tp_device *dev = to_tp_dev(d);

	rnicpi_key_table_fini(&dev->keys);
	free(dev);
}

static int tp_query_device(struct rnicpi_device *d,
			   struct rnicpi_device_attr *attr)
{
	struct tp_device *dev = to_tp_dev(d);

	memset(attr, 0, sizeof(*attr));
	attr->transport = RNICPI_TRANSPORT_ROCE;
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "testprov 1");
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 4096;
	attr->max_msg_size = TP_MAX_MSG;
	attr->max_qp = dev->max_qp;
	attr->max_qp_wr = TP_MAX_QP_WR;
	attr->max_sge = TP_MAX_SGE;
	attr->max_cq = 1024;
	attr->max_cqe = TP_MAX_CQE;
	attr->max_mr = 1024;
	attr->max_mw = 1024;
	attr->max_pd = 1024;
	attr->max_ah = 1024;
	attr->max_srq = 1024;
	attr->max_srq_wr = TP_MAX_QP_WR;
	attr->max_srq_sge = TP_MAX_SGE;
	attr->caps = RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_UD |
		     RNICPI_DEV_CAP_SRQ | RNICPI_DEV_CAP_MW_TYPE_1 |
		     RNICPI_DEV_CAP_IMM_DATA | RNICPI_DEV_CAP_ZERO_BASED;
	attr->phys_port_cnt = 1;
	return 0;
}

static int tp_query_port(struct rnicpi_device *d, uint8_t port,
			 struct rnicpi_port_attr *attr)
{
	struct tp_device *dev = to_tp_dev(d);

	if (port != 1)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&tp_lock);
	attr->state = port_active(dev->flags) ? RNICPI_PORT_ACTIVE :
						RNICPI_PORT_DOWN;
	pthread_mutex_unlock(&tp_lock);
	attr->max_mtu = RNICPI_MTU_4096;
	attr->active_mtu = RNICPI_MTU_4096;
	attr->link_layer = RNICPI_LINK_LAYER_ETHERNET;
	attr->gid_tbl_len = TP_GID_TBL_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = TP_MAX_MSG;
	return 0;
}

static int tp_query_gid(struct rnicpi_device *d, uint8_t port,
			uint32_t index, struct rnicpi_gid_entry *entry)
{
	struct tp_device *dev = to_tp_dev(d);
	const struct sockaddr_storage *ss;
	int err = 0;

	if (port != 1 || index >= TP_GID_TBL_LEN)
		return -EINVAL;
	memset(entry, 0, sizeof(*entry));
	pthread_mutex_lock(&tp_lock);
	if (index >= dev->n_addrs) {
		err = -ENOENT;
		goto out;
	}
	ss = &dev->addrs[index];
	if (ss->ss_family == AF_INET) {
		/* IPv4-mapped IPv6 address, as RoCEv2 GIDs are. */
		entry->gid.raw[10] = 0xff;
		entry->gid.raw[11] = 0xff;
		memcpy(&entry->gid.raw[12],
		       &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else {
		memcpy(entry->gid.raw,
		       &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
	entry->type = RNICPI_GID_TYPE_ROCE_V2;
	entry->ifindex = d->ifindex;
out:
	pthread_mutex_unlock(&tp_lock);
	return err;
}

static void tp_netdev_event(struct rnicpi_device *d,
			    const struct rnicpi_netdev *nd,
			    enum rnicpi_netdev_event event)
{
	struct tp_device *dev = to_tp_dev(d);
	bool was, now;

	pthread_mutex_lock(&tp_lock);
	was = port_active(dev->flags);
	tp_copy_netdev(dev, nd);
	now = port_active(dev->flags);
	pthread_mutex_unlock(&tp_lock);
	if (event == RNICPI_NETDEV_ADDR_ADD || event == RNICPI_NETDEV_ADDR_DEL)
		raise_event(dev, RNICPI_EVENT_GID_CHANGE);
	else if (was != now)
		raise_event(dev, now ? RNICPI_EVENT_PORT_ACTIVE :
				       RNICPI_EVENT_PORT_ERR);
}

/* ------------------------------------------------------------------ */
/* PD, MR, MW                                                          */
/* ------------------------------------------------------------------ */

static int tp_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out)
{
	struct tp_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.device = d;
	*out = &pd->base;
	return 0;
}

static int tp_dealloc_pd(struct rnicpi_pd *pd)
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

static int tp_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
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

static int tp_rereg_mr(struct rnicpi_mr *m, unsigned int flags,
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

static int tp_dereg_mr(struct rnicpi_mr *m)
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

static int tp_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
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

static int tp_dealloc_mw(struct rnicpi_mw *m)
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
static struct tp_mr *find_mr(struct tp_device *dev, struct rnicpi_pd *pd,
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
static char *mr_range(struct tp_mr *mr, uint64_t addr, uint64_t len,
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

static int tp_create_cq(struct rnicpi_device *d,
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

static int tp_destroy_cq(struct rnicpi_cq *c)
{
	struct tp_cq *cq = to_tp_cq(c);

	rnicpi_cq_ring_fini(&cq->ring);
	free(cq);
	return 0;
}

static int tp_poll_cq(struct rnicpi_cq *c, int n, struct rnicpi_wc *wc)
{
	return rnicpi_cq_ring_poll(&to_tp_cq(c)->ring, n, wc);
}

static int tp_req_notify_cq(struct rnicpi_cq *c, int solicited_only)
{
	return rnicpi_cq_ring_arm(&to_tp_cq(c)->ring, solicited_only);
}

static int tp_ack_cq_event(struct rnicpi_cq *c)
{
	return rnicpi_cq_ring_ack(&to_tp_cq(c)->ring);
}

static void cq_push(struct tp_cq *cq, const struct rnicpi_wc *wc,
		    bool solicited)
{
	/* A full ring drops the entry; tests size their CQs. */
	rnicpi_cq_ring_push(&cq->ring, wc, solicited);
}

/* ------------------------------------------------------------------ */
/* Receive queues, SRQ                                                 */
/* ------------------------------------------------------------------ */

static int rq_init(struct tp_rq *rq, uint32_t max_wr, uint32_t max_sge)
{
	if (max_wr == 0)
		max_wr = 1;
	rq->wqe = calloc(max_wr, sizeof(*rq->wqe));
	if (!rq->wqe)
		return -ENOMEM;
	rq->max_wr = max_wr;
	rq->max_sge = max_sge;
	return 0;
}

/* Under tp_lock. */
static int rq_post(struct tp_rq *rq, const struct rnicpi_recv_wr *wr,
		   const struct rnicpi_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct tp_rwqe *w;

		if (wr->num_sge > rq->max_sge) {
			*bad = wr;
			return -EINVAL;
		}
		if (rq->count == rq->max_wr) {
			*bad = wr;
			return -ENOMEM;
		}
		w = &rq->wqe[(rq->head + rq->count) % rq->max_wr];
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list,
			       wr->num_sge * sizeof(*w->sge));
		rq->count++;
	}
	return 0;
}

/* Under tp_lock: take the oldest WQE into @out; false if none. */
static bool rq_take(struct tp_rq *rq, struct tp_rwqe *out)
{
	if (!rq->count)
		return false;
	*out = rq->wqe[rq->head];
	rq->head = (rq->head + 1) % rq->max_wr;
	rq->count--;
	return true;
}

static int tp_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
			 struct rnicpi_srq **out)
{
	struct tp_srq *srq;

	if (attr->max_wr > TP_MAX_QP_WR || attr->max_sge > TP_MAX_SGE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	if (rq_init(&srq->rq, attr->max_wr, attr->max_sge)) {
		free(srq);
		return -ENOMEM;
	}
	srq->base.pd = pd;
	srq->limit = attr->srq_limit;
	attr->max_wr = srq->rq.max_wr;
	*out = &srq->base;
	return 0;
}

static int tp_modify_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr,
			 unsigned int mask)
{
	struct tp_srq *srq = to_tp_srq(s);

	if (mask & RNICPI_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&tp_lock);
	if (mask & RNICPI_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

static int tp_query_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr)
{
	struct tp_srq *srq = to_tp_srq(s);

	pthread_mutex_lock(&tp_lock);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

static int tp_destroy_srq(struct rnicpi_srq *s)
{
	struct tp_srq *srq = to_tp_srq(s);

	free(srq->rq.wqe);
	free(srq);
	return 0;
}

static int tp_post_srq_recv(struct rnicpi_srq *s,
			    const struct rnicpi_recv_wr *wr,
			    const struct rnicpi_recv_wr **bad)
{
	int err;

	pthread_mutex_lock(&tp_lock);
	err = rq_post(&to_tp_srq(s)->rq, wr, bad);
	pthread_mutex_unlock(&tp_lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* QP                                                                  */
/* ------------------------------------------------------------------ */

/* Under tp_lock. */
static int qp_table_add(struct tp_qp *qp)
{
	uint32_t qpn = next_qpn;

	if (qpn >= qp_table_len) {
		uint32_t n = qp_table_len ? qp_table_len * 2 : 64;
		struct tp_qp **t;

		while (n <= qpn)
			n *= 2;
		t = realloc(qp_table, n * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + qp_table_len, 0,
		       (n - qp_table_len) * sizeof(*t));
		qp_table = t;
		qp_table_len = n;
	}
	qp_table[qpn] = qp;
	qp->base.qp_num = qpn;
	next_qpn++;
	return 0;
}

/* Under tp_lock; frees the table with the last QP so nothing is left
 * behind when the module is unloaded. */
static void qp_table_del(struct tp_qp *qp)
{
	uint32_t i;

	qp_table[qp->base.qp_num] = NULL;
	for (i = 0; i < qp_table_len; i++)
		if (qp_table[i])
			return;
	free(qp_table);
	qp_table = NULL;
	qp_table_len = 0;
}

static struct tp_qp *qp_find(uint32_t qpn)
{
	return qpn < qp_table_len ? qp_table[qpn] : NULL;
}

static int tp_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
			struct rnicpi_qp **out)
{
	struct tp_device *dev = pd_dev(pd);
	struct rnicpi_qp_cap *cap = &attr->cap;
	struct tp_qp *qp;
	int err;

	if (attr->qp_type != RNICPI_QPT_RC && attr->qp_type != RNICPI_QPT_UC &&
	    attr->qp_type != RNICPI_QPT_UD)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > TP_MAX_QP_WR || cap->max_recv_wr > TP_MAX_QP_WR ||
	    cap->max_send_sge > TP_MAX_SGE || cap->max_recv_sge > TP_MAX_SGE ||
	    cap->max_inline_data > 0) {
		fprintf(stderr, "testprov %s: QP caps over the limits (%u WRs, %u SGEs, no inline)\n",
			dev->base.name, TP_MAX_QP_WR, TP_MAX_SGE);
		return -EINVAL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	if (!attr->srq) {
		err = rq_init(&qp->rq, cap->max_recv_wr, cap->max_recv_sge);
		if (err)
			goto err_free;
	}
	qp->base.pd = pd;
	qp->dev = dev;
	qp->type = attr->qp_type;
	qp->state = RNICPI_QPS_RESET;
	qp->scq = to_tp_cq(attr->send_cq);
	qp->rcq = to_tp_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_tp_srq(attr->srq) : NULL;
	qp->cap = *cap;
	qp->sq_sig_all = attr->sq_sig_all;

	pthread_mutex_lock(&tp_lock);
	if (dev->n_qp >= dev->max_qp) {
		pthread_mutex_unlock(&tp_lock);
		err = -ENOSPC;
		goto err_rq;
	}
	err = qp_table_add(qp);
	if (!err)
		dev->n_qp++;
	pthread_mutex_unlock(&tp_lock);
	if (err)
		goto err_rq;
	*out = &qp->base;
	return 0;

err_rq:
	free(qp->rq.wqe);
err_free:
	free(qp);
	return err;
}

/* Under tp_lock: flush every posted receive of @qp's own queue. */
static void qp_flush_recv(struct tp_qp *qp)
{
	struct tp_rwqe w;

	while (rq_take(&qp->rq, &w)) {
		struct rnicpi_wc wc = {
			.wr_id = w.wr_id,
			.status = RNICPI_WC_WR_FLUSH_ERR,
			.opcode = RNICPI_WC_RECV,
			.qp_num = qp->base.qp_num,
		};

		cq_push(qp->rcq, &wc, false);
	}
}

static int tp_modify_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
			unsigned int mask)
{
	struct tp_qp *qp = to_tp_qp(q);

	pthread_mutex_lock(&tp_lock);
	if (mask & RNICPI_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (mask & RNICPI_QP_STATE) {
		switch (attr->qp_state) {
		case RNICPI_QPS_RESET:
			qp->rq.head = qp->rq.count = 0;
			qp->dest_qpn = 0;
			break;
		case RNICPI_QPS_ERR:
			qp_flush_recv(qp);
			break;
		case RNICPI_QPS_INIT:
		case RNICPI_QPS_RTR:
		case RNICPI_QPS_RTS:
			break;
		default:
			pthread_mutex_unlock(&tp_lock);
			return -EINVAL;
		}
		qp->state = attr->qp_state;
	}
	pthread_mutex_unlock(&tp_lock);
	return 0;
}

static int tp_query_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		       unsigned int mask, struct rnicpi_qp_init_attr *init)
{
	struct tp_qp *qp = to_tp_qp(q);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	pthread_mutex_lock(&tp_lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->dest_qp_num = qp->dest_qpn;
	attr->cap = qp->cap;
	pthread_mutex_unlock(&tp_lock);
	init->qp_type = qp->type;
	init->send_cq = &qp->scq->base;
	init->recv_cq = &qp->rcq->base;
	init->srq = qp->srq ? &qp->srq->base : NULL;
	init->cap = qp->cap;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

static int tp_destroy_qp(struct rnicpi_qp *q)
{
	struct tp_qp *qp = to_tp_qp(q);

	pthread_mutex_lock(&tp_lock);
	qp_table_del(qp);
	qp->dev->n_qp--;
	pthread_mutex_unlock(&tp_lock);
	free(qp->rq.wqe);
	free(qp);
	return 0;
}

/* Under tp_lock: gather the send WR's data into a new buffer. */
static enum rnicpi_wc_status gather(struct tp_qp *qp,
				    const struct rnicpi_send_wr *wr,
				    char **buf, uint32_t *len)
{
	uint64_t total = 0;
	uint32_t i, off = 0;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > TP_MAX_MSG)
		return RNICPI_WC_LOC_LEN_ERR;
	*buf = malloc(total ? total : 1);
	if (!*buf)
		return RNICPI_WC_GENERAL_ERR;
	for (i = 0; i < wr->num_sge; i++) {
		const struct rnicpi_sge *sge = &wr->sg_list[i];
		struct tp_mr *mr = find_mr(qp->dev, qp->base.pd, sge->lkey);
		char *src = mr ? mr_range(mr, sge->addr, sge->length, 0) : NULL;

		if (!src) {
			free(*buf);
			*buf = NULL;
			return RNICPI_WC_LOC_PROT_ERR;
		}
		memcpy(*buf + off, src, sge->length);
		off += sge->length;
	}
	*len = off;
	return RNICPI_WC_SUCCESS;
}

/* Under tp_lock: scatter @len bytes into receive WQE @w of @qp. */
static enum rnicpi_wc_status scatter(struct tp_qp *qp,
				     const struct tp_rwqe *w,
				     const char *buf, uint32_t len)
{
	uint32_t i, off = 0;
	uint64_t room = 0;

	for (i = 0; i < w->num_sge; i++)
		room += w->sge[i].length;
	if (len > room)
		return RNICPI_WC_LOC_LEN_ERR;
	/* Check every SGE before writing any byte. */
	for (i = 0; i < w->num_sge; i++) {
		const struct rnicpi_sge *sge = &w->sge[i];
		struct tp_mr *mr = find_mr(qp->dev, qp->base.pd, sge->lkey);

		if (!mr || !mr_range(mr, sge->addr, sge->length,
				     RNICPI_ACCESS_LOCAL_WRITE))
			return RNICPI_WC_LOC_PROT_ERR;
	}
	for (i = 0; i < w->num_sge && off < len; i++) {
		const struct rnicpi_sge *sge = &w->sge[i];
		struct tp_mr *mr = find_mr(qp->dev, qp->base.pd, sge->lkey);
		uint32_t n = len - off < sge->length ? len - off : sge->length;

		memcpy(mr_range(mr, sge->addr, sge->length,
				RNICPI_ACCESS_LOCAL_WRITE),
		       buf + off, n);
		off += n;
	}
	return RNICPI_WC_SUCCESS;
}

/* Under tp_lock: a SEND from @qp; returns the sender's status. */
static enum rnicpi_wc_status do_send(struct tp_qp *qp,
				     const struct rnicpi_send_wr *wr)
{
	struct tp_qp *peer = qp_find(qp->dest_qpn);
	enum rnicpi_wc_status st;
	struct rnicpi_wc rwc = { 0 };
	struct tp_rwqe w;
	uint32_t len = 0;
	char *buf = NULL;

	st = gather(qp, wr, &buf, &len);
	if (st != RNICPI_WC_SUCCESS || !qp->dest_qpn) {
		free(buf);
		return st; /* not connected: the bytes go nowhere */
	}
	if (!peer || peer->state < RNICPI_QPS_RTR ||
	    peer->state > RNICPI_QPS_SQE) {
		free(buf);
		return RNICPI_WC_RETRY_EXC_ERR;
	}
	if (!rq_take(peer->srq ? &peer->srq->rq : &peer->rq, &w)) {
		free(buf);
		return RNICPI_WC_RNR_RETRY_EXC_ERR;
	}
	rwc.wr_id = w.wr_id;
	rwc.opcode = RNICPI_WC_RECV;
	rwc.qp_num = peer->base.qp_num;
	rwc.src_qp = qp->base.qp_num;
	rwc.status = scatter(peer, &w, buf, len);
	rwc.byte_len = rwc.status == RNICPI_WC_SUCCESS ? len : 0;
	if (wr->opcode == RNICPI_WR_SEND_WITH_IMM) {
		rwc.imm_data = wr->ex.imm_data;
		rwc.wc_flags |= RNICPI_WC_WITH_IMM;
	}
	if (wr->send_flags & RNICPI_SEND_SOLICITED)
		rwc.wc_flags |= RNICPI_WC_SOLICITED;
	cq_push(peer->rcq, &rwc, wr->send_flags & RNICPI_SEND_SOLICITED);
	free(buf);
	return rwc.status == RNICPI_WC_SUCCESS ? RNICPI_WC_SUCCESS :
						 RNICPI_WC_REM_OP_ERR;
}

static enum rnicpi_wc_status do_write(struct tp_qp *qp,
				      const struct rnicpi_send_wr *wr)
{
	struct tp_qp *peer = qp_find(qp->dest_qpn);
	enum rnicpi_wc_status st;
	struct tp_mr *mr;
	uint32_t len = 0;
	char *buf = NULL, *dst;

	if (!peer)
		return RNICPI_WC_RETRY_EXC_ERR;
	st = gather(qp, wr, &buf, &len);
	if (st != RNICPI_WC_SUCCESS)
		return st;
	mr = find_mr(peer->dev, peer->base.pd, wr->wr.rdma.rkey);
	dst = mr ? mr_range(mr, wr->wr.rdma.remote_addr, len,
			    RNICPI_ACCESS_REMOTE_WRITE) : NULL;
	if (dst)
		memcpy(dst, buf, len);
	free(buf);
	return dst ? RNICPI_WC_SUCCESS : RNICPI_WC_REM_ACCESS_ERR;
}

static enum rnicpi_wc_status do_bind(struct tp_qp *qp,
				     const struct rnicpi_send_wr *wr)
{
	const struct rnicpi_mw_bind_info *bi = &wr->wr.bind_mw.bind_info;
	struct tp_mw *mw = wr->wr.bind_mw.mw ? to_tp_mw(wr->wr.bind_mw.mw) :
					       NULL;
	struct tp_mr *mr = bi->mr ? to_tp_mr(bi->mr) : NULL;
	uint32_t key;

	if (!mw || mw->base.pd != qp->base.pd)
		return RNICPI_WC_MW_BIND_ERR;
	if (bi->length == 0) {
		if (mw->mr)
			mw->mr->bound_windows--;
		mw->mr = NULL;
		return RNICPI_WC_SUCCESS;
	}
	if (!mr || mr->base.pd != qp->base.pd || mw->mr ||
	    !mr_range(mr, bi->addr, bi->length, RNICPI_ACCESS_MW_BIND))
		return RNICPI_WC_MW_BIND_ERR;
	if (rnicpi_key_rekey(&qp->dev->keys, mw->base.rkey, &key))
		return RNICPI_WC_MW_BIND_ERR;
	mw->base.rkey = key;
	mw->mr = mr;
	mr->bound_windows++;
	return RNICPI_WC_SUCCESS;
}

static const enum rnicpi_wc_opcode wc_opcode[] = {
	[RNICPI_WR_RDMA_WRITE] = RNICPI_WC_RDMA_WRITE,
	[RNICPI_WR_SEND] = RNICPI_WC_SEND,
	[RNICPI_WR_SEND_WITH_IMM] = RNICPI_WC_SEND,
	[RNICPI_WR_BIND_MW] = RNICPI_WC_BIND_MW,
};

static int tp_post_send(struct rnicpi_qp *q, const struct rnicpi_send_wr *wr,
			const struct rnicpi_send_wr **bad)
{
	struct tp_qp *qp = to_tp_qp(q);
	int err = 0;

	pthread_mutex_lock(&tp_lock);
	for (; wr; wr = wr->next) {
		struct rnicpi_wc wc = { 0 };

		if (qp->state != RNICPI_QPS_RTS) {
			err = -EINVAL;
			break;
		}
		if (wr->num_sge > qp->cap.max_send_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = -EINVAL;
			break;
		}
		switch (wr->opcode) {
		case RNICPI_WR_SEND:
		case RNICPI_WR_SEND_WITH_IMM:
			wc.status = do_send(qp, wr);
			break;
		case RNICPI_WR_RDMA_WRITE:
			wc.status = do_write(qp, wr);
			break;
		case RNICPI_WR_BIND_MW:
			wc.status = do_bind(qp, wr);
			break;
		default:
			err = -EINVAL;
			break;
		}
		if (err)
			break;
		wc.wr_id = wr->wr_id;
		wc.opcode = wc_opcode[wr->opcode];
		wc.qp_num = q->qp_num;
		if (wc.status == RNICPI_WC_SUCCESS && wr->opcode != RNICPI_WR_BIND_MW)
			for (uint32_t i = 0; i < wr->num_sge; i++)
				wc.byte_len += wr->sg_list[i].length;
		if (qp->sq_sig_all || (wr->send_flags & RNICPI_SEND_SIGNALED) ||
		    wc.status != RNICPI_WC_SUCCESS)
			cq_push(qp->scq, &wc, false);
	}
	pthread_mutex_unlock(&tp_lock);
	if (err)
		*bad = wr;
	return err;
}

static int tp_post_recv(struct rnicpi_qp *q, const struct rnicpi_recv_wr *wr,
			const struct rnicpi_recv_wr **bad)
{
	struct tp_qp *qp = to_tp_qp(q);
	int err;

	pthread_mutex_lock(&tp_lock);
	if (qp->srq || qp->state == RNICPI_QPS_RESET)
		err = -EINVAL, *bad = wr;
	else
		err = rq_post(&qp->rq, wr, bad);
	pthread_mutex_unlock(&tp_lock);
	return err;
}

/* ------------------------------------------------------------------ */
/* AH                                                                  */
/* ------------------------------------------------------------------ */

static int tp_create_ah(struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
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

static int tp_destroy_ah(struct rnicpi_ah *ah)
{
	free(to_tp_ah(ah));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ops tables and registration                                         */
/* ------------------------------------------------------------------ */

/* resize_cq and the connection ops stay NULL: ual answers -EOPNOTSUPP. */
#define TP_OPS_COMMON                                                       \
	.device_destroy = tp_device_destroy,                                \
	.query_device = tp_query_device,                                    \
	.query_port = tp_query_port,                                        \
	.query_gid = tp_query_gid,                                          \
	.alloc_pd = tp_alloc_pd,                                            \
	.dealloc_pd = tp_dealloc_pd,                                        \
	.reg_mr = tp_reg_mr,                                                \
	.rereg_mr = tp_rereg_mr,                                            \
	.dereg_mr = tp_dereg_mr,                                            \
	.alloc_mw = tp_alloc_mw,                                            \
	.dealloc_mw = tp_dealloc_mw,                                        \
	.create_cq = tp_create_cq,                                          \
	.destroy_cq = tp_destroy_cq,                                        \
	.poll_cq = tp_poll_cq,                                              \
	.req_notify_cq = tp_req_notify_cq,                                  \
	.ack_cq_event = tp_ack_cq_event,                                    \
	.create_srq = tp_create_srq,                                        \
	.modify_srq = tp_modify_srq,                                        \
	.query_srq = tp_query_srq,                                          \
	.destroy_srq = tp_destroy_srq,                                      \
	.post_srq_recv = tp_post_srq_recv,                                  \
	.create_qp = tp_create_qp,                                          \
	.modify_qp = tp_modify_qp,                                          \
	.query_qp = tp_query_qp,                                            \
	.destroy_qp = tp_destroy_qp,                                        \
	.post_send = tp_post_send,                                          \
	.post_recv = tp_post_recv,                                          \
	.create_ah = tp_create_ah,                                          \
	.destroy_ah = tp_destroy_ah

static const struct rnicpi_device_ops tp_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.netdev_event = tp_netdev_event,
	TP_OPS_COMMON,
};

static const struct rnicpi_device_ops tp_ops_no_netdev_event = {
	.size = sizeof(struct rnicpi_device_ops),
	TP_OPS_COMMON,
};

/* As an older provider would be compiled: the table ends before create_ah,
 * so what follows counts as absent even though it is filled. */
static const struct rnicpi_device_ops tp_ops_short = {
	.size = offsetof(struct rnicpi_device_ops, create_ah),
	.netdev_event = tp_netdev_event,
	TP_OPS_COMMON,
};

static int tp_netdev_supported(const struct rnicpi_netdev *nd)
{
	return nd->flags & RNICPI_NETDEV_LOOPBACK ? 0 : -ENODEV;
}

static int parse_options(struct tp_device *dev,
			 const struct rnicpi_option *opt, const char *name)
{
	for (; opt && opt->key; opt++) {
		if (strcmp(opt->key, "max_qp") == 0) {
			char *end;
			unsigned long v = strtoul(opt->value, &end, 10);

			if (*end || end == opt->value || v < 1 || v > 1024) {
				fprintf(stderr, "testprov %s: max_qp=%s: expected 1..1024\n",
					name, opt->value);
				return -EINVAL;
			}
			dev->max_qp = (uint32_t)v;
		} else if (strcmp(opt->key, "netdev_event") == 0) {
			if (strcmp(opt->value, "off") == 0) {
				dev->base.ops = &tp_ops_no_netdev_event;
			} else if (strcmp(opt->value, "on") != 0) {
				fprintf(stderr, "testprov %s: netdev_event=%s: expected on or off\n",
					name, opt->value);
				return -EINVAL;
			}
		} else if (strcmp(opt->key, "ops_size") == 0) {
			if (strcmp(opt->value, "short") == 0) {
				dev->base.ops = &tp_ops_short;
			} else if (strcmp(opt->value, "full") != 0) {
				fprintf(stderr, "testprov %s: ops_size=%s: expected short or full\n",
					name, opt->value);
				return -EINVAL;
			}
		} else {
			fprintf(stderr, "testprov %s: unknown option '%s'\n",
				name, opt->key);
			return -EINVAL;
		}
	}
	return 0;
}

static int tp_device_create(const struct rnicpi_netdev *nd, const char *name,
			    const struct rnicpi_option *options,
			    const struct rnicpi_core_ops *core,
			    struct rnicpi_device **out)
{
	struct tp_device *dev;
	int err;

	if (!core || core->size < offsetof(struct rnicpi_core_ops, conn_event))
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->base.ops = &tp_ops;
	dev->max_qp = 64;
	err = parse_options(dev, options, name);
	if (err)
		goto err_free;
	err = rnicpi_key_table_init(&dev->keys, 4096, NULL);
	if (err)
		goto err_free;
	snprintf(dev->base.name, sizeof(dev->base.name), "%s", name);
	dev->base.ifindex = nd->ifindex;
	dev->core = core;
	tp_copy_netdev(dev, nd);
	*out = &dev->base;
	return 0;

err_free:
	free(dev);
	return err;
}


/* -DTP_PROVIDER_NAME builds the same provider under another name: a
 * second provider for device-filter tests, or a duplicate. */
#ifndef TP_PROVIDER_NAME
#define TP_PROVIDER_NAME "test"
#endif

static const struct rnicpi_provider tp_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = TP_PROVIDER_NAME,
	.description = "in-memory test provider (never installed)",
	.transport = RNICPI_TRANSPORT_ROCE,
	.netdev_supported = tp_netdev_supported,
	.device_create = tp_device_create,
};

RNICPI_PROVIDER_DEFINE(test, &tp_provider)
