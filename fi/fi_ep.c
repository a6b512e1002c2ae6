// SPDX-License-Identifier: MIT
/*
 * fi_ep.c - message endpoints: an IT-API RC endpoint created at fi_enable,
 * connection management (fi_connect/fi_accept/fi_shutdown), messages
 * (it_post_send/it_post_recv) and RMA (it_post_rdma_write/read).
 */
#include "config.h"
#include "fi/hfi.h"

#include <string.h>

#define HFI_INJECT_SLOTS 64
#define IT_FLAGS ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

int hfi_ep_from_it(it_ep_handle_t handle, struct hfi_ep **out)
{
	it_context_t ctx;

	if (it_get_consumer_context(handle, &ctx) != IT_SUCCESS || !ctx.ptr)
		return -FI_ENOENT;
	*out = ctx.ptr;
	return 0;
}

/* ---- enable ----------------------------------------------------------- */

#define HFI_DIR_TX 1u
#define HFI_DIR_RX 2u

/* The directions an endpoint of @caps uses: messages both ways unless
 * FI_SEND or FI_RECV narrows them; RMA is started here (its completions
 * are the initiator's). */
static unsigned int ep_dirs(uint64_t caps)
{
	unsigned int d = 0;

	if (caps & FI_MSG) {
		if (!(caps & (FI_SEND | FI_RECV)) || (caps & FI_SEND))
			d |= HFI_DIR_TX;
		if (!(caps & (FI_SEND | FI_RECV)) || (caps & FI_RECV))
			d |= HFI_DIR_RX;
	}
	if ((caps & FI_RMA) &&
	    (!(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ |
		       FI_REMOTE_WRITE)) ||
	     (caps & (FI_READ | FI_WRITE))))
		d |= HFI_DIR_TX;
	return d;
}

static int ep_enable(struct hfi_ep *ep)
{
	unsigned int dirs = ep_dirs(ep->info->caps);
	it_ia_handle_t ia = ep->dom->fab->ia;
	size_t txs = ep->info->tx_attr ? ep->info->tx_attr->size : 0;
	size_t rxs = ep->info->rx_attr ? ep->info->rx_attr->size : 0;
	it_evd_handle_t tx, rx;
	it_ep_attributes_t attr;
	it_context_t ctx;
	it_status_t st;

	if (ep->enabled)
		return 0;
	if (!ep->eq)
		return -FI_ENOEQ;
	if (!ep->tx_cq && !ep->rx_cq && !ep->send_cntr && !ep->recv_cntr &&
	    !ep->write_cntr && !ep->read_cntr)
		return -FI_ENOCQ;
	/* A direction the endpoint uses reports somewhere, a CQ or one of
	 * its counters: else its completions would fill an event queue
	 * nobody reads, and its requests would never be freed. */
	if ((dirs & HFI_DIR_TX) && !ep->tx_cq && !ep->send_cntr &&
	    !ep->write_cntr && !ep->read_cntr)
		return -FI_ENOCQ;
	if ((dirs & HFI_DIR_RX) && !ep->rx_cq && !ep->recv_cntr)
		return -FI_ENOCQ;
	if (!ep->tx_cq || !ep->rx_cq) {
		st = it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 64, 0, NULL,
				   &ep->dummy_evd, NULL);
		if (st != IT_SUCCESS)
			return hfi_status_to_fi(st);
	}
	tx = ep->tx_cq ? ep->tx_cq->evd : ep->dummy_evd;
	rx = ep->rx_cq ? ep->rx_cq->evd : ep->dummy_evd;
	memset(&attr, 0, sizeof(attr));
	attr.max_request_dtos = txs ? MIN(txs, HFI_TX_SIZE) : HFI_TX_SIZE;
	attr.max_recv_dtos = rxs ? MIN(rxs, HFI_RX_SIZE) : HFI_RX_SIZE;
	/* inject copies sit in the send queue too */
	attr.max_request_dtos += HFI_INJECT_SLOTS;
	attr.max_send_segments = HFI_IOV_LIMIT;
	attr.max_recv_segments = HFI_IOV_LIMIT;
	attr.srv.rc.rdma_read_enable = IT_TRUE;
	attr.srv.rc.rdma_write_enable = IT_TRUE;
	attr.srv.rc.max_rdma_read_segments = HFI_IOV_LIMIT;
	attr.srv.rc.max_rdma_write_segments = HFI_IOV_LIMIT;
	attr.srv.rc.rdma_read_ird = 16;
	attr.srv.rc.rdma_read_ord = 16;
	st = it_ep_rc_create(ep->dom->pz, tx, rx, ep->eq->msg_evd,
			     IT_EP_NO_FLAG, &attr, &ep->ep);
	if (st != IT_SUCCESS)
		goto err_evd;
	ctx.ptr = ep;
	it_set_consumer_context(ep->ep, ctx);
	ep->inject_buf = g_malloc0(HFI_INJECT_SLOTS * HFI_INJECT_SIZE);
	st = it_lmr_create(ep->dom->pz, ep->inject_buf, NULL,
			   HFI_INJECT_SLOTS * HFI_INJECT_SIZE,
			   IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			   IT_LMR_FLAG_NONE, 0, &ep->inject_lmr, NULL);
	if (st != IT_SUCCESS)
		goto err_ep;
	ep->inject_free = ~UINT64_C(0);
	ep->enabled = true;
	/* the counters reap this endpoint's completions too */
	if (ep->send_cntr)
		hfi_cntr_watch(ep->send_cntr, ep);
	if (ep->write_cntr)
		hfi_cntr_watch(ep->write_cntr, ep);
	if (ep->read_cntr)
		hfi_cntr_watch(ep->read_cntr, ep);
	if (ep->recv_cntr)
		hfi_cntr_watch(ep->recv_cntr, ep);
	return 0;

err_ep:
	g_free(ep->inject_buf);
	ep->inject_buf = NULL;
	it_ep_free(ep->ep);
	ep->ep = NULL;
err_evd:
	if (ep->dummy_evd)
		it_evd_free(ep->dummy_evd);
	ep->dummy_evd = NULL;
	return hfi_status_to_fi(st);
}

/* ---- posting ---------------------------------------------------------- */

static int inject_slot_get(struct hfi_ep *ep)
{
	int slot = -1;

	g_mutex_lock(&ep->lock);
	if (ep->inject_free) {
		slot = __builtin_ctzll(ep->inject_free);
		ep->inject_free &= ~(UINT64_C(1) << slot);
	}
	g_mutex_unlock(&ep->lock);
	return slot;
}

/*
 * The local segments of @iov: each buffer through its descriptor (an
 * hfi_mr, FI_MR_LOCAL), or, with @inject, one copy in a slot of the
 * endpoint's registered inject pool (req->inject_slot).
 */
static int build_segments(struct hfi_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, bool inject,
			  struct hfi_req *req, it_lmr_triplet_t *segs,
			  size_t *nsegs)
{
	size_t total = 0;

	if (count > HFI_IOV_LIMIT)
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	if (inject) {
		char *slot;
		size_t off = 0;
		int s;

		if (total > HFI_INJECT_SIZE)
			return -FI_EINVAL;
		s = inject_slot_get(ep);
		if (s < 0)
			return -FI_EAGAIN;
		req->inject_slot = s;
		slot = ep->inject_buf + (size_t)s * HFI_INJECT_SIZE;
		for (size_t i = 0; i < count; i++) {
			memcpy(slot + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		segs[0].lmr = ep->inject_lmr;
		segs[0].addr.abs = slot;
		segs[0].length = total;
		*nsegs = total ? 1 : 0;
		return 0;
	}
	*nsegs = 0;
	for (size_t i = 0; i < count; i++) {
		struct hfi_mr *mr = desc ? desc[i] : NULL;

		if (!iov[i].iov_len)
			continue;
		if (!mr)
			return -FI_EINVAL;	/* FI_MR_LOCAL: a descriptor */
		segs[*nsegs].lmr = mr->lmr;
		if (mr->relative)
			segs[*nsegs].addr.rel = (it_length_t)(
				(char *)iov[i].iov_base - (char *)mr->addr);
		else
			segs[*nsegs].addr.abs = iov[i].iov_base;
		segs[*nsegs].length = iov[i].iov_len;
		(*nsegs)++;
	}
	return 0;
}

enum hfi_op { OP_SEND, OP_RECV, OP_WRITE, OP_READ };

/* Remote CQ data: the device's immediate data (hostrdma/it_ext.h). */
static size_t cq_data_size(const struct hfi_ep *ep)
{
	return ep->info->domain_attr->cq_data_size;
}

/*
 * One request. With FI_REMOTE_CQ_DATA in @flags, a Send or Write carries
 * @data as immediate data (its low 32 bits: cq_data_size is 4), and the
 * peer's receive completion reports it.
 */
static ssize_t post_data(struct hfi_ep *ep, enum hfi_op op,
			 const struct iovec *iov, void **desc, size_t count,
			 void *context, uint64_t flags, uint64_t raddr,
			 uint64_t key, uint64_t data)
{
	bool imm = flags & FI_REMOTE_CQ_DATA;
	it_lmr_triplet_t segs[HFI_IOV_LIMIT];
	bool inject = flags & FI_INJECT;
	bool tx = op != OP_RECV;
	struct hfi_req *req;
	size_t nsegs = 0;
	it_status_t st;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count && !iov)
		return -FI_EINVAL;
	if (inject && (op == OP_RECV || op == OP_READ))
		return -FI_EINVAL;
	if (imm && (!cq_data_size(ep) || op == OP_RECV || op == OP_READ))
		return -FI_EBADFLAGS;
	/* Counted as outstanding from here: the endpoint's memory stays
	 * while @req points to it. */
	g_mutex_lock(&ep->lock);
	req = ep->free_reqs;
	if (req) {
		ep->free_reqs = req->next_free;
		ep->n_free--;
	}
	ep->outstanding++;
	g_mutex_unlock(&ep->lock);
	if (req)
		memset(req, 0, sizeof(*req));
	else
		req = g_new0(struct hfi_req, 1);
	req->ep = ep;
	req->context = context;
	req->buf = count ? iov[0].iov_base : NULL;
	req->inject_slot = -1;
	if (flags & FI_HFI_NO_COMPLETION)
		req->report = false;
	else
		req->report = !((tx ? ep->tx_flags : ep->rx_flags) &
				FI_SELECTIVE_COMPLETION) ||
			      (flags & FI_COMPLETION);
	ret = build_segments(ep, iov, desc, count, inject, req, segs, &nsegs);
	if (ret) {
		hfi_ep_req_done(ep, req);
		return ret;
	}
	switch (op) {
	case OP_SEND:
		st = imm ? hostrdma_post_send_imm(ep->ep, segs, nsegs,
						  (uintptr_t)req, IT_FLAGS,
						  (uint32_t)data) :
			   it_post_send(ep->ep, segs, nsegs, (uintptr_t)req,
					IT_FLAGS);
		break;
	case OP_RECV:
		st = it_post_recv(ep->ep, segs, nsegs, (uintptr_t)req,
				  IT_FLAGS);
		break;
	case OP_WRITE:
		st = imm ? hostrdma_post_rdma_write_imm(ep->ep, segs, nsegs,
							(uintptr_t)req,
							IT_FLAGS, raddr, key,
							(uint32_t)data) :
			   it_post_rdma_write(ep->ep, segs, nsegs,
					      (uintptr_t)req, IT_FLAGS,
					      raddr, key);
		break;
	case OP_READ:
	default:
		st = it_post_rdma_read(ep->ep, segs, nsegs, (uintptr_t)req,
				       IT_FLAGS, raddr, key);
		break;
	}
	if (st != IT_SUCCESS) {
		hfi_ep_req_done(ep, req);
		if (st == IT_ERR_INVALID_EP_STATE)
			return -FI_EOPBADSTATE;
		return hfi_status_to_fi(st);
	}
	return 0;
}

static ssize_t post(struct hfi_ep *ep, enum hfi_op op, const struct iovec *iov,
		    void **desc, size_t count, void *context, uint64_t flags,
		    uint64_t raddr, uint64_t key)
{
	return post_data(ep, op, iov, desc, count, context,
			 flags & ~FI_REMOTE_CQ_DATA, raddr, key, 0);
}

#define TO_EP(f) container_of(f, struct hfi_ep, ep_fid)

/* fi_senddata, fi_writedata and their inject forms: FI_ENOSYS where the
 * device has no immediate data (iWARP). */
static ssize_t post_imm(struct fid_ep *f, enum hfi_op op, const void *buf,
			size_t len, void **desc, void *context,
			uint64_t flags, uint64_t raddr, uint64_t key,
			uint64_t data)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (!cq_data_size(TO_EP(f)))
		return -FI_ENOSYS;
	return post_data(TO_EP(f), op, &iov, desc, 1, context,
			 flags | FI_REMOTE_CQ_DATA, raddr, key, data);
}

static ssize_t hfi_recv(struct fid_ep *f, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return post(TO_EP(f), OP_RECV, &iov, &desc, 1, context, 0, 0, 0);
}

static ssize_t hfi_recvv(struct fid_ep *f, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 void *context)
{
	return post(TO_EP(f), OP_RECV, iov, desc, count, context, 0, 0, 0);
}

static ssize_t hfi_recvmsg(struct fid_ep *f, const struct fi_msg *msg,
			   uint64_t flags)
{
	return post(TO_EP(f), OP_RECV, msg->msg_iov, msg->desc,
		    msg->iov_count, msg->context, flags, 0, 0);
}

static ssize_t hfi_send(struct fid_ep *f, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post(TO_EP(f), OP_SEND, &iov, &desc, 1, context, 0, 0, 0);
}

static ssize_t hfi_sendv(struct fid_ep *f, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 void *context)
{
	return post(TO_EP(f), OP_SEND, iov, desc, count, context, 0, 0, 0);
}

static ssize_t hfi_sendmsg(struct fid_ep *f, const struct fi_msg *msg,
			   uint64_t flags)
{
	return post_data(TO_EP(f), OP_SEND, msg->msg_iov, msg->desc,
			 msg->iov_count, msg->context, flags, 0, 0, msg->data);
}

static ssize_t hfi_inject(struct fid_ep *f, const void *buf, size_t len,
			  fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post(TO_EP(f), OP_SEND, &iov, NULL, 1, NULL,
		    FI_INJECT | FI_HFI_NO_COMPLETION, 0, 0);
}

static ssize_t hfi_senddata(struct fid_ep *f, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest,
			    void *context)
{
	return post_imm(f, OP_SEND, buf, len, &desc, context, 0, 0, 0, data);
}

static ssize_t hfi_injectdata(struct fid_ep *f, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	return post_imm(f, OP_SEND, buf, len, NULL, NULL,
			FI_INJECT | FI_HFI_NO_COMPLETION, 0, 0, data);
}

static struct fi_ops_msg hfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = hfi_recv,
	.recvv = hfi_recvv,
	.recvmsg = hfi_recvmsg,
	.send = hfi_send,
	.sendv = hfi_sendv,
	.sendmsg = hfi_sendmsg,
	.inject = hfi_inject,
	.senddata = hfi_senddata,
	.injectdata = hfi_injectdata,
};

static ssize_t hfi_read(struct fid_ep *f, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t addr, uint64_t key,
			void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return post(TO_EP(f), OP_READ, &iov, &desc, 1, context, 0, addr, key);
}

static ssize_t hfi_readv(struct fid_ep *f, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	return post(TO_EP(f), OP_READ, iov, desc, count, context, 0, addr,
		    key);
}

static ssize_t hfi_readmsg(struct fid_ep *f, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;	/* rma_iov_limit 1 */
	return post(TO_EP(f), OP_READ, msg->msg_iov, msg->desc,
		    msg->iov_count, msg->context, flags,
		    msg->rma_iov[0].addr, msg->rma_iov[0].key);
}

static ssize_t hfi_write(struct fid_ep *f, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post(TO_EP(f), OP_WRITE, &iov, &desc, 1, context, 0, addr,
		    key);
}

static ssize_t hfi_writev(struct fid_ep *f, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	return post(TO_EP(f), OP_WRITE, iov, desc, count, context, 0, addr,
		    key);
}

static ssize_t hfi_writemsg(struct fid_ep *f, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return post_data(TO_EP(f), OP_WRITE, msg->msg_iov, msg->desc,
			 msg->iov_count, msg->context, flags,
			 msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data);
}

static ssize_t hfi_inject_write(struct fid_ep *f, const void *buf, size_t len,
				fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post(TO_EP(f), OP_WRITE, &iov, NULL, 1, NULL,
		    FI_INJECT | FI_HFI_NO_COMPLETION, addr, key);
}

static ssize_t hfi_writedata(struct fid_ep *f, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *context)
{
	return post_imm(f, OP_WRITE, buf, len, &desc, context, 0, addr, key,
			data);
}

static ssize_t hfi_inject_writedata(struct fid_ep *f, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t addr, uint64_t key)
{
	return post_imm(f, OP_WRITE, buf, len, NULL, NULL,
			FI_INJECT | FI_HFI_NO_COMPLETION, addr, key, data);
}

static struct fi_ops_rma hfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = hfi_read,
	.readv = hfi_readv,
	.readmsg = hfi_readmsg,
	.write = hfi_write,
	.writev = hfi_writev,
	.writemsg = hfi_writemsg,
	.inject = hfi_inject_write,
	.writedata = hfi_writedata,
	.injectdata = hfi_inject_writedata,
};

/* ---- connection management --------------------------------------------- */

static int hfi_ep_connect(struct fid_ep *f, const void *addr,
			  const void *param, size_t paramlen)
{
	struct hfi_ep *ep = TO_EP(f);
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	unsigned char pd[IT_MAX_PRIV_DATA];
	size_t np = 1, total, n;
	it_net_addr_t na;
	it_path_t path;
	it_status_t st;
	int ret;

	if (paramlen > HFI_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	if (!addr && !ep->dst.ss_family)
		return -FI_EINVAL;
	if (addr) {
		size_t len = hfi_sockaddr_len(addr);

		if (!len)
			return -FI_EINVAL;
		memset(&ep->dst, 0, sizeof(ep->dst));
		memcpy(&ep->dst, addr, len);
	}
	ret = ep_enable(ep);
	if (ret)
		return ret;
	if (hfi_sockaddr_to_net((struct sockaddr *)&ep->dst, &na,
				&qual.conn_qual.port))
		return -FI_EINVAL;
	st = it_get_pathinfo(ep->dom->fab->ia, 0, &na, &np, &total, &path);
	if (st != IT_SUCCESS || np != 1)
		return -FI_EHOSTUNREACH;
	n = hfi_cm_pack(pd, param, paramlen);
	st = it_ep_connect(ep->ep, &path, NULL, &qual,
			   IT_CONNECT_FLAG_TWO_WAY, n ? pd : NULL, n);
	return hfi_status_to_fi(st);
}

static int hfi_ep_accept(struct fid_ep *f, const void *param,
			 size_t paramlen)
{
	struct hfi_ep *ep = TO_EP(f);
	unsigned char pd[IT_MAX_PRIV_DATA];
	it_status_t st;
	size_t n;
	int ret;

	if (!ep->connreq)
		return -FI_EINVAL;
	if (paramlen > HFI_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	ret = ep_enable(ep);
	if (ret)
		return ret;
	n = hfi_cm_pack(pd, param, paramlen);
	st = it_ep_accept(ep->ep, ep->connreq->cn_est_id, n ? pd : NULL, n);
	if (st != IT_SUCCESS)
		return hfi_status_to_fi(st);
	g_free(ep->connreq);
	ep->connreq = NULL;
	return 0;
}

static int hfi_ep_shutdown(struct fid_ep *f, uint64_t flags)
{
	struct hfi_ep *ep = TO_EP(f);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	return hfi_status_to_fi(it_ep_disconnect(ep->ep, NULL, 0));
}

static int copy_name(const struct sockaddr_storage *ss, void *addr,
		     size_t *addrlen)
{
	size_t len = hfi_sockaddr_len((const struct sockaddr *)ss);
	size_t room = *addrlen;

	if (!len)
		return -FI_EADDRNOTAVAIL;
	*addrlen = len;
	if (room < len)
		return -FI_ETOOSMALL;
	memcpy(addr, ss, len);
	return 0;
}

static int hfi_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct hfi_ep *ep = container_of(fid, struct hfi_ep, ep_fid.fid);

	return copy_name(&ep->src, addr, addrlen);
}

static int hfi_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct hfi_ep *ep = container_of(fid, struct hfi_ep, ep_fid.fid);
	size_t len = hfi_sockaddr_len(addr);

	if (!len || addrlen < len)
		return -FI_EINVAL;
	memset(&ep->src, 0, sizeof(ep->src));
	memcpy(&ep->src, addr, len);
	return 0;
}

static int hfi_ep_getpeer(struct fid_ep *f, void *addr, size_t *addrlen)
{
	return copy_name(&TO_EP(f)->dst, addr, addrlen);
}

static int hfi_ep_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int hfi_ep_no_reject(struct fid_pep *pep, fid_t handle,
			    const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int hfi_ep_no_join(struct fid_ep *f, const void *addr, uint64_t flags,
			  struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm hfi_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = hfi_ep_setname,
	.getname = hfi_ep_getname,
	.getpeer = hfi_ep_getpeer,
	.connect = hfi_ep_connect,
	.listen = hfi_ep_no_listen,
	.accept = hfi_ep_accept,
	.reject = hfi_ep_no_reject,
	.shutdown = hfi_ep_shutdown,
	.join = hfi_ep_no_join,
};

/* ---- the endpoint object ----------------------------------------------- */

static ssize_t hfi_ep_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

static int hfi_ep_no_ctx(struct fid_ep *sep, int index,
			 struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			 void *context)
{
	return -FI_ENOSYS;
}

static int hfi_ep_no_rx_ctx(struct fid_ep *sep, int index,
			    struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t hfi_ep_no_size_left(struct fid_ep *f)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep hfi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = hfi_ep_cancel,
	.getopt = hfi_cm_getopt,
	.setopt = hfi_cm_setopt,
	.tx_ctx = hfi_ep_no_ctx,
	.rx_ctx = hfi_ep_no_rx_ctx,
	.rx_size_left = hfi_ep_no_size_left,
	.tx_size_left = hfi_ep_no_size_left,
};

static void ep_free_mem(struct hfi_ep *ep)
{
	while (ep->free_reqs) {
		struct hfi_req *r = ep->free_reqs;

		ep->free_reqs = r->next_free;
		g_free(r);
	}
	g_mutex_clear(&ep->lock);
	g_free(ep);
}

/* A CQ saw the completion of @req, one of @ep's requests, or its post
 * failed: @req goes back to @ep (the caller no longer has it). */
void hfi_ep_req_done(struct hfi_ep *ep, struct hfi_req *req)
{
	struct hfi_req *drop = NULL;
	bool last;

	g_mutex_lock(&ep->lock);
	if (req->inject_slot >= 0)
		ep->inject_free |= UINT64_C(1) << req->inject_slot;
	if (ep->n_free < HFI_REQ_CACHE) {
		req->next_free = ep->free_reqs;
		ep->free_reqs = req;
		ep->n_free++;
	} else {
		drop = req;
	}
	last = --ep->outstanding == 0 && ep->closed;
	g_mutex_unlock(&ep->lock);
	g_free(drop);
	if (last)
		ep_free_mem(ep);
}

static int hfi_ep_close(struct fid *fid)
{
	struct hfi_ep *ep = container_of(fid, struct hfi_ep, ep_fid.fid);
	bool now;

	if (ep->ep) {
		it_context_t ctx = { .ptr = NULL };

		it_set_consumer_context(ep->ep, ctx);
		it_ep_free(ep->ep);
	}
	if (ep->inject_lmr)
		it_lmr_free(ep->inject_lmr);
	g_free(ep->inject_buf);
	hfi_cntr_forget(ep);
	if (ep->dummy_evd)
		it_evd_free(ep->dummy_evd);
	if (ep->connreq) {
		it_reject(ep->connreq->cn_est_id, NULL, 0);
		g_free(ep->connreq);
	}
	fi_freeinfo(ep->info);
	g_mutex_lock(&ep->lock);
	ep->closed = true;
	now = ep->outstanding == 0;
	g_mutex_unlock(&ep->lock);
	if (now)
		ep_free_mem(ep);
	return 0;
}

static int hfi_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct hfi_ep *ep = container_of(fid, struct hfi_ep, ep_fid.fid);

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_EQ: {
		struct hfi_eq *eq = container_of(bfid, struct hfi_eq,
						 eq_fid.fid);

		if (eq->fab != ep->dom->fab)
			return -FI_EINVAL;
		ep->eq = eq;
		return 0;
	}
	case FI_CLASS_CQ: {
		struct hfi_cq *cq = container_of(bfid, struct hfi_cq,
						 cq_fid.fid);

		if (cq->dom != ep->dom)
			return -FI_EINVAL;
		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_flags = flags;
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_flags = flags;
		}
		return 0;
	}
	case FI_CLASS_CNTR: {
		struct hfi_cntr *c = container_of(bfid, struct hfi_cntr,
						  cntr_fid.fid);

		if (c->dom != ep->dom)
			return -FI_EINVAL;
		/* no FI_RMA_EVENT: the remote side's are not counted */
		if (!(flags & (FI_SEND | FI_RECV | FI_WRITE | FI_READ)) ||
		    (flags & (FI_REMOTE_WRITE | FI_REMOTE_READ)))
			return -FI_EBADFLAGS;
		if (flags & FI_SEND)
			ep->send_cntr = c;
		if (flags & FI_RECV)
			ep->recv_cntr = c;
		if (flags & FI_WRITE)
			ep->write_cntr = c;
		if (flags & FI_READ)
			ep->read_cntr = c;
		return 0;
	}
	default:
		return -FI_ENOSYS;	/* no AVs */
	}
}

static int hfi_ep_control(struct fid *fid, int command, void *arg)
{
	struct hfi_ep *ep = container_of(fid, struct hfi_ep, ep_fid.fid);

	if (command == FI_ENABLE)
		return ep_enable(ep);
	return -FI_ENOSYS;
}

static struct fi_ops hfi_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_ep_close,
	.bind = hfi_ep_bind,
	.control = hfi_ep_control,
	.ops_open = hfi_no_ops_open,
};

int hfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep_fid, void *context)
{
	struct hfi_domain *dom = container_of(domain, struct hfi_domain,
					      domain_fid);
	struct hfi_ep *ep;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_MSG &&
		      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	if (info->handle && info->handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	ep = g_new0(struct hfi_ep, 1);
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		g_free(ep);
		return -FI_ENOMEM;
	}
	g_mutex_init(&ep->lock);
	ep->dom = dom;
	if (info->handle) {
		/* The endpoint takes the request over: fi_accept uses it,
		 * fi_close rejects it if it was not accepted. */
		ep->connreq = container_of(info->handle, struct hfi_connreq,
					   fid);
		info->handle = NULL;
		ep->info->handle = NULL;
	}
	if (info->src_addr && hfi_sockaddr_len(info->src_addr))
		memcpy(&ep->src, info->src_addr,
		       hfi_sockaddr_len(info->src_addr));
	if (info->dest_addr && hfi_sockaddr_len(info->dest_addr))
		memcpy(&ep->dst, info->dest_addr,
		       hfi_sockaddr_len(info->dest_addr));
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &hfi_ep_fi_ops;
	ep->ep_fid.ops = &hfi_ep_ops;
	ep->ep_fid.cm = &hfi_ep_cm_ops;
	ep->ep_fid.msg = &hfi_msg_ops;
	ep->ep_fid.rma = &hfi_rma_ops;
	*ep_fid = &ep->ep_fid;
	return 0;
}
