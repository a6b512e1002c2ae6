// SPDX-License-Identifier: MIT
/*
 * fi_domain.c - domain (a PZ), memory registration (LMRs, the RMR context
 * as the key) and completion queues (DTO EVDs).
 */
#include "config.h"
#include "fi/hfi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory registration -------------------------------------------- */

static int hfi_mr_close(struct fid *fid)
{
	struct hfi_mr *mr = container_of(fid, struct hfi_mr, mr_fid.fid);
	it_status_t st = it_lmr_free(mr->lmr);

	if (st != IT_SUCCESS)
		return hfi_status_to_fi(st);
	g_free(mr);
	return 0;
}

static struct fi_ops hfi_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_mr_close,
	.bind = hfi_no_bind,
	.control = hfi_no_control,
	.ops_open = hfi_no_ops_open,
};

static int hfi_mr_reg(struct fid *fid, const void *buf, size_t len,
		      uint64_t access, uint64_t offset,
		      uint64_t requested_key, uint64_t flags,
		      struct fid_mr **mr_fid, void *context)
{
	struct hfi_domain *dom = container_of(fid, struct hfi_domain,
					      domain_fid.fid);
	it_mem_priv_t privs = IT_PRIV_LOCAL;
	it_rmr_context_t key = 0;
	struct hfi_mr *mr;
	it_status_t st;

	/* libfabric's utility providers pass flags of their own in the
	 * provider-specific bits (ofi_rxm: "no cache"): nothing for us. */
	if (!buf || !len || (flags & ~(UINT64_C(0xf) << 60)))
		return -FI_EINVAL;
	if (!dom->virt_addr && offset)
		return -FI_EINVAL;	/* offsets start at 0 (relative mode) */
	if (!access)
		access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			 FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (access & FI_REMOTE_READ)
		privs |= IT_PRIV_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		privs |= IT_PRIV_REMOTE_WRITE;
	/* iWARP: the sink of an RDMA Read is written remotely (RFC 5040
	 * §4.5: the Read Response is tagged with the sink STag). */
	if ((access & FI_READ) && dom->fab->transport == IT_IWARP_TCP_TRANSPORT)
		privs |= IT_PRIV_REMOTE_WRITE;
	mr = g_new0(struct hfi_mr, 1);
	st = it_lmr_create(dom->pz, (void *)buf, NULL, len,
			   dom->virt_addr ? IT_ADDR_MODE_ABSOLUTE :
					    IT_ADDR_MODE_RELATIVE,
			   privs, IT_LMR_FLAG_NONE, 0, &mr->lmr, &key);
	if (st != IT_SUCCESS) {
		g_free(mr);
		return hfi_status_to_fi(st);
	}
	mr->dom = dom;
	mr->addr = (void *)buf;
	mr->relative = !dom->virt_addr;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = context;
	mr->mr_fid.fid.ops = &hfi_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = key;
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int hfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		       uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags,
		       struct fid_mr **mr, void *context)
{
	if (count != 1)
		return -FI_EINVAL;	/* mr_iov_limit 1 */
	return hfi_mr_reg(fid, iov->iov_base, iov->iov_len, access, offset,
			  requested_key, flags, mr, context);
}

static int hfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			  uint64_t flags, struct fid_mr **mr)
{
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return hfi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access,
			   attr->offset, attr->requested_key, flags, mr,
			   attr->context);
}

static struct fi_ops_mr hfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = hfi_mr_reg,
	.regv = hfi_mr_regv,
	.regattr = hfi_mr_regattr,
};

/* ---- completion queues ---------------------------------------------- */

struct hfi_cq_err {
	struct fi_cq_err_entry e;
};

/* IT-API's DTO statuses as libfabric errors (fi_errno(3)). */
static int dto_status_to_fi(it_dto_status_t s, bool recv)
{
	switch (s) {
	case IT_DTO_SUCCESS:
		return 0;
	case IT_DTO_ERR_LOCAL_LENGTH:
		return recv ? FI_ETRUNC : FI_EMSGSIZE;
	case IT_DTO_ERR_LOCAL_PROTECTION:
		return FI_EACCES;	/* a local key or its rights */
	case IT_DTO_ERR_FLUSHED:
		return FI_ECANCELED;
	case IT_DTO_ERR_REMOTE_ACCESS:
		return FI_EACCES;	/* bad remote key, range or rights */
	case IT_DTO_ERR_REMOTE_RESPONDER:
		return FI_EREMOTEIO;
	case IT_DTO_ERR_RECEIVER_NOT_READY:
		return FI_ENORX;
	case IT_DTO_ERR_TRANSPORT:
		return FI_ECONNABORTED;
	case IT_DTO_ERR_LOCAL_EP:
	case IT_DTO_ERR_BAD_RESPONSE:
	case IT_DTO_ERR_PARTIAL_PACKET:
	case IT_DTO_ERR_LOCAL_MM_OPERATION:
	case IT_RMR_OPERATION_FAILED:
	default:
		return FI_EIO;
	}
}

static uint64_t event_flags(it_event_type_t t)
{
	switch (t) {
	case IT_DTO_SEND_CMPL_EVENT:
		return FI_SEND | FI_MSG;
	case IT_DTO_RC_RECV_CMPL_EVENT:
		return FI_RECV | FI_MSG;
	case IT_DTO_RDMA_WRITE_CMPL_EVENT:
		return FI_RMA | FI_WRITE;
	case IT_DTO_RDMA_READ_CMPL_EVENT:
		return FI_RMA | FI_READ;
	default:
		return 0;
	}
}

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

/*
 * One IT-API completion: 1 when it became an entry at @out, 0 when it is
 * none of the application's business (an unreported success), -FI_EAVAIL
 * when it is an error now queued for fi_cq_readerr.
 */
int hfi_dto_reap(struct hfi_cq *cq, const it_event_t *ev, void *out)
{
	const it_dto_cmpl_event_t *d = &ev->dto_cmpl;
	struct hfi_req *req = (struct hfi_req *)(uintptr_t)d->cookie;
	uint64_t flags = event_flags(d->event_number);
	bool recv = d->event_number == IT_DTO_RC_RECV_CMPL_EVENT;
	int ret = 0;

	if ((d->event_number & IT_EVENT_STREAM_MASK) != IT_DTO_EVENT_STREAM ||
	    !req)
		return 0;
	hfi_cntr_count(req->ep, flags, d->dto_status == IT_DTO_SUCCESS);
	if (d->dto_status != IT_DTO_SUCCESS && (!cq || !req->report)) {
		/* A counter's, counted as an error above; or an operation
		 * that asked for no completion (fi_inject, or no
		 * FI_COMPLETION under FI_SELECTIVE_COMPLETION): it has no
		 * context to name, and gets no entry, failed or not, as
		 * with libfabric's verbs provider (ofi_rxm, closing its
		 * endpoints, read the flushed ones' NULL op_context and
		 * died of it at MPI_Finalize). */
	} else if (d->dto_status != IT_DTO_SUCCESS) {
		struct hfi_cq_err *ce = g_new0(struct hfi_cq_err, 1);

		ce->e.op_context = req->context;
		ce->e.flags = flags;
		ce->e.buf = recv ? req->buf : NULL;
		ce->e.err = dto_status_to_fi(d->dto_status, recv);
		ce->e.prov_errno = (int)d->dto_status;
		g_mutex_lock(&cq->lock);
		g_queue_push_tail(&cq->errors, ce);
		g_mutex_unlock(&cq->lock);
		ret = -FI_EAVAIL;
	} else if (cq && req->report && !req->ep->closed) {
		struct fi_cq_tagged_entry *e = out;
		bool data = cq->format == FI_CQ_FORMAT_DATA ||
			    cq->format == FI_CQ_FORMAT_TAGGED;
		uint32_t imm = 0;
		hostrdma_imm_kind_t k =
			recv ? hostrdma_event_imm_data(ev, &imm) :
			       HOSTRDMA_IMM_NONE;

		memset(e, 0, entry_size(cq->format));
		e->op_context = req->context;
		if (cq->format != FI_CQ_FORMAT_CONTEXT) {
			/* A writedata consumed the receive (FI_RX_CQ_DATA)
			 * and left its buffer alone. */
			e->flags = k == HOSTRDMA_IMM_RDMA_WRITE ?
					   FI_RMA | FI_REMOTE_WRITE :
					   flags;
			if (k != HOSTRDMA_IMM_NONE && data)
				e->flags |= FI_REMOTE_CQ_DATA;
			e->len = recv ? d->transferred_length : 0;
		}
		if (data) {
			e->buf = recv && k != HOSTRDMA_IMM_RDMA_WRITE ?
					 req->buf :
					 NULL;
			e->data = imm;
		}
		ret = 1;
	}
	hfi_ep_req_done(req->ep, req);	/* @req is the endpoint's again */
	return ret;
}

static bool errors_pending(struct hfi_cq *cq)
{
	bool any;

	g_mutex_lock(&cq->lock);
	any = !g_queue_is_empty(&cq->errors);
	g_mutex_unlock(&cq->lock);
	return any;
}

void hfi_cq_stash(struct hfi_cq *cq, const it_event_t *ev)
{
	struct fi_cq_tagged_entry e;

	if (hfi_dto_reap(cq, ev, &e) > 0) {
		g_mutex_lock(&cq->lock);
		g_queue_push_tail(&cq->pending, g_memdup2(&e, sizeof(e)));
		g_mutex_unlock(&cq->lock);
	}
}

/* Hands out what a counter stashed, converts @ev (if any) then dequeues
 * until @count entries or an error. */
static ssize_t cq_fill(struct hfi_cq *cq, void *buf, size_t count,
		       fi_addr_t *src_addr, const it_event_t *first)
{
	size_t esz = entry_size(cq->format), n = 0;
	struct fi_cq_tagged_entry *pe;
	char *p = buf;
	int r;

	/* unlocked peek: a stash racing with it is seen next time */
	if (g_queue_get_length(&cq->pending)) {
		g_mutex_lock(&cq->lock);
		while (n < count && (pe = g_queue_pop_head(&cq->pending))) {
			memcpy(p, pe, esz);
			g_free(pe);
			if (src_addr)
				src_addr[n] = FI_ADDR_NOTAVAIL;
			p += esz;
			n++;
		}
		g_mutex_unlock(&cq->lock);
	}
	if (first && n == count) {
		hfi_cq_stash(cq, first);	/* for the next read */
		return (ssize_t)n;
	}
	if (first) {
		r = hfi_dto_reap(cq, first, p);
		if (r < 0)
			return n ? (ssize_t)n : -FI_EAVAIL;
		if (r > 0) {
			if (src_addr)
				src_addr[n] = FI_ADDR_NOTAVAIL;
			p += esz;
			n++;
		}
	}
	/* In batches: one it_evd_dequeue_n polls the provider once for
	 * them all, where a dequeue per entry polled it again for the one
	 * after the last (a system call on a software device). After an
	 * error, what the batch holds waits for the next read. */
	while (n < count) {
		it_event_t evs[HFI_CQ_BATCH];
		int k = 0, i;

		if (it_evd_dequeue_n(cq->evd,
				     (int)MIN(count - n, (size_t)HFI_CQ_BATCH),
				     evs, &k) != IT_SUCCESS || k <= 0)
			break;
		for (i = 0; i < k; i++) {
			r = hfi_dto_reap(cq, &evs[i], p);
			if (r < 0)
				break;
			if (r > 0) {
				if (src_addr)
					src_addr[n] = FI_ADDR_NOTAVAIL;
				p += esz;
				n++;
			}
		}
		if (i < k) {
			while (++i < k)
				hfi_cq_stash(cq, &evs[i]);
			break;
		}
	}
	if (n)
		return (ssize_t)n;
	return errors_pending(cq) ? -FI_EAVAIL : -FI_EAGAIN;
}

static ssize_t hfi_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	struct hfi_cq *cq = container_of(cq_fid, struct hfi_cq, cq_fid);

	if (!count)
		return -FI_EAGAIN;
	if (errors_pending(cq))
		return -FI_EAVAIL;
	return cq_fill(cq, buf, count, src_addr, NULL);
}

static ssize_t hfi_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return hfi_cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t hfi_cq_readerr(struct fid_cq *cq_fid,
			      struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct hfi_cq *cq = container_of(cq_fid, struct hfi_cq, cq_fid);
	struct hfi_cq_err *ce;

	g_mutex_lock(&cq->lock);
	ce = g_queue_pop_head(&cq->errors);
	g_mutex_unlock(&cq->lock);
	if (!ce)
		return -FI_EAGAIN;
	/* fi_cq(3): err_data is the provider's; without a buffer of
	 * ours there is none to give (err_data_size 0). */
	buf->op_context = ce->e.op_context;
	buf->flags = ce->e.flags;
	buf->len = ce->e.len;
	buf->buf = ce->e.buf;
	buf->data = 0;
	buf->tag = 0;
	buf->olen = 0;
	buf->err = ce->e.err;
	buf->prov_errno = ce->e.prov_errno;
	buf->err_data_size = 0;
	g_free(ce);
	return 1;
}

static ssize_t hfi_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	struct hfi_cq *cq = container_of(cq_fid, struct hfi_cq, cq_fid);
	gint64 deadline = timeout < 0 ? -1 :
			  g_get_monotonic_time() + (gint64)timeout * 1000;
	ssize_t ret;

	for (;;) {
		uint64_t left = IT_TIMEOUT_INFINITE;
		it_event_t ev;
		size_t nmore;
		it_status_t st;

		ret = hfi_cq_readfrom(cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		if (deadline >= 0) {
			gint64 now = g_get_monotonic_time();

			if (now >= deadline)
				return -FI_EAGAIN;
			left = (uint64_t)(deadline - now);
		}
		st = it_evd_wait(cq->evd, left, &ev, &nmore);
		if (st == IT_ERR_TIMEOUT_EXPIRED)
			return -FI_EAGAIN;
		if (st != IT_SUCCESS)
			return hfi_status_to_fi(st);
		ret = cq_fill(cq, buf, count, src_addr, &ev);
		if (ret != -FI_EAGAIN)
			return ret;
	}
}

static ssize_t hfi_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return hfi_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int hfi_cq_signal(struct fid_cq *cq_fid)
{
	return -FI_ENOSYS;
}

static const char *hfi_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	static const char *const names[] = {
		"success", "local length error", "local endpoint error",
		"local protection error", "flushed", "RMR operation failed",
		"bad response", "remote access error",
		"remote responder error", "transport error",
		"receiver not ready", "partial packet",
		"local memory management operation error",
	};
	const char *s = prov_errno >= 0 &&
					(size_t)prov_errno < G_N_ELEMENTS(names) ?
				names[prov_errno] :
				"unknown IT-API DTO status";

	if (buf && len) {
		g_strlcpy(buf, s, len);
		return buf;
	}
	return s;
}

static struct fi_ops_cq hfi_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = hfi_cq_read,
	.readfrom = hfi_cq_readfrom,
	.readerr = hfi_cq_readerr,
	.sread = hfi_cq_sread,
	.sreadfrom = hfi_cq_sreadfrom,
	.signal = hfi_cq_signal,
	.strerror = hfi_cq_strerror,
};

static int hfi_cq_close(struct fid *fid)
{
	struct hfi_cq *cq = container_of(fid, struct hfi_cq, cq_fid.fid);
	struct hfi_cq_err *ce;
	it_status_t st;
	it_event_t ev;

	/* Completions nobody read: their requests go back to their
	 * endpoints (a closed one's memory goes with its last), the
	 * entries to the lists below, which fi_cq_read still serves if an
	 * endpoint uses the CQ yet and it stays. */
	while (it_evd_dequeue(cq->evd, &ev) == IT_SUCCESS)
		hfi_cq_stash(cq, &ev);
	st = it_evd_free(cq->evd);
	if (st != IT_SUCCESS)
		return -FI_EBUSY;	/* an endpoint still uses it */
	while ((ce = g_queue_pop_head(&cq->errors)))
		g_free(ce);
	g_queue_clear_full(&cq->pending, g_free);
	g_mutex_clear(&cq->lock);
	g_free(cq);
	return 0;
}

static int hfi_cq_control(struct fid *fid, int command, void *arg)
{
	struct hfi_cq *cq = container_of(fid, struct hfi_cq, cq_fid.fid);

	return hfi_wait_control(cq->fd, command, arg);
}

int hfi_wait_control(int fd, int command, void *arg)
{
	switch (command) {
	case FI_GETWAITOBJ:
		/* ofi_rxm's wait sets ask before FI_GETWAIT */
		*(enum fi_wait_obj *)arg = fd < 0 ? FI_WAIT_NONE : FI_WAIT_FD;
		return 0;
	case FI_GETWAIT:
		if (fd < 0)
			return -FI_ENODATA;
		*(int *)arg = fd;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops hfi_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_cq_close,
	.bind = hfi_no_bind,
	.control = hfi_cq_control,
	.ops_open = hfi_no_ops_open,
};

static int hfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		       struct fid_cq **cq_fid, void *context)
{
	struct hfi_domain *dom = container_of(domain, struct hfi_domain,
					      domain_fid);
	size_t size = attr && attr->size ? attr->size : 4 * HFI_TX_SIZE;
	enum fi_cq_format fmt = attr ? attr->format : FI_CQ_FORMAT_UNSPEC;
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
	struct hfi_cq *cq;
	it_status_t st;

	if (fmt == FI_CQ_FORMAT_UNSPEC)
		fmt = FI_CQ_FORMAT_CONTEXT;
	if (!entry_size(fmt))
		return -FI_ENOSYS;
	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC &&
	    wait != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr && (attr->flags & FI_AFFINITY))
		return -FI_ENOSYS;
	cq = g_new0(struct hfi_cq, 1);
	cq->fd = -1;
	/* A larger queue than the device has: the largest it has (the
	 * size is a hint, fi_cq(3)); ofi_rxm asks for many entries. */
	do {
		st = it_evd_create(dom->fab->ia, IT_DTO_EVENT_STREAM,
				   wait == FI_WAIT_FD ? IT_EVD_CREATE_FD : 0,
				   size, IT_THRESHOLD_DISABLE, NULL, &cq->evd,
				   wait == FI_WAIT_FD ? &cq->fd : NULL);
		size /= 2;
	} while (st == IT_ERR_RESOURCE_QUEUE_SIZE && size >= 64);
	if (st != IT_SUCCESS) {
		g_free(cq);
		return hfi_status_to_fi(st);
	}
	g_mutex_init(&cq->lock);
	g_queue_init(&cq->errors);
	g_queue_init(&cq->pending);
	cq->dom = dom;
	cq->format = fmt;
	cq->wait_obj = wait;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &hfi_cq_fi_ops;
	cq->cq_fid.ops = &hfi_cq_ops;
	*cq_fid = &cq->cq_fid;
	return 0;
}

/* ---- domain ----------------------------------------------------------- */

static int hfi_domain_close(struct fid *fid)
{
	struct hfi_domain *dom = container_of(fid, struct hfi_domain,
					      domain_fid.fid);

	if (it_pz_free(dom->pz) != IT_SUCCESS)
		return -FI_EBUSY;
	g_free(dom);
	return 0;
}

static struct fi_ops hfi_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_domain_close,
	.bind = hfi_no_bind,
	.control = hfi_no_control,
	.ops_open = hfi_no_ops_open,
};

static int hfi_no_av(struct fid_domain *d, struct fi_av_attr *attr,
		     struct fid_av **av, void *context)
{
	return -FI_ENOSYS;
}

static int hfi_no_sep(struct fid_domain *d, struct fi_info *info,
		      struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int hfi_no_poll(struct fid_domain *d, struct fi_poll_attr *attr,
		       struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int hfi_no_stx(struct fid_domain *d, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int hfi_no_srx(struct fid_domain *d, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int hfi_no_atomic(struct fid_domain *d, enum fi_datatype datatype,
			 enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_domain hfi_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = hfi_no_av,
	.cq_open = hfi_cq_open,
	.endpoint = hfi_endpoint,
	.scalable_ep = hfi_no_sep,
	.cntr_open = hfi_cntr_open,
	.poll_open = hfi_no_poll,
	.stx_ctx = hfi_no_stx,
	.srx_ctx = hfi_no_srx,
	.query_atomic = hfi_no_atomic,
};

int hfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct hfi_fabric *fab = container_of(fabric, struct hfi_fabric,
					      fabric_fid);
	struct hfi_domain *dom;
	it_status_t st;

	if (!info || !info->domain_attr || !info->domain_attr->name ||
	    strcmp(info->domain_attr->name, fab->name))
		return -FI_EINVAL;	/* one domain per fabric, same name */
	dom = g_new0(struct hfi_domain, 1);
	st = it_pz_create(fab->ia, &dom->pz);
	if (st != IT_SUCCESS) {
		g_free(dom);
		return hfi_status_to_fi(st);
	}
	dom->fab = fab;
	/* FI_MR_BASIC (API < 1.5) includes virtual addresses. */
	dom->virt_addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ||
			 info->domain_attr->mr_mode == FI_MR_BASIC ||
			 info->domain_attr->mr_mode == FI_MR_UNSPEC;
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &hfi_domain_fi_ops;
	dom->domain_fid.ops = &hfi_domain_ops;
	dom->domain_fid.mr = &hfi_mr_ops;
	*domain = &dom->domain_fid;
	return 0;
}
