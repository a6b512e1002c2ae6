// SPDX-License-Identifier: MIT
/*
 * fi_eq.c - event queues (the CM request and CM message EVDs of the
 * fabric's IA) and passive endpoints (IT-API listeners).
 */
#include "config.h"
#include "fi/hfi.h"

#include <arpa/inet.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct hfi_eq_err {
	struct fi_eq_err_entry e;
	unsigned char pdata[IT_MAX_PRIV_DATA];
};

/* ---- event queue -------------------------------------------------------- */

static void push_error(struct hfi_eq *eq, fid_t fid, void *context, int err,
		       int prov_errno, const unsigned char *pdata,
		       size_t pdata_len)
{
	struct hfi_eq_err *ee = g_new0(struct hfi_eq_err, 1);

	ee->e.fid = fid;
	ee->e.context = context;
	ee->e.err = err;
	ee->e.prov_errno = prov_errno;
	if (pdata && pdata_len) {
		memcpy(ee->pdata, pdata, MIN(pdata_len, sizeof(ee->pdata)));
		ee->e.err_data_size = MIN(pdata_len, sizeof(ee->pdata));
	}
	g_mutex_lock(&eq->lock);
	g_queue_push_tail(&eq->errors, ee);
	g_mutex_unlock(&eq->lock);
}

static struct hfi_pep *pep_for_port(struct hfi_eq *eq, uint16_t port_be)
{
	for (GList *l = eq->peps; l; l = l->next) {
		struct hfi_pep *pep = l->data;
		uint16_t p = pep->src.ss_family == AF_INET ?
				     ((struct sockaddr_in *)&pep->src)->sin_port :
				     ((struct sockaddr_in6 *)&pep->src)
					     ->sin6_port;

		if (p == port_be)
			return pep;
	}
	return eq->peps ? eq->peps->data : NULL;
}

/* An incoming connection request as FI_CONNREQ with a new fi_info. */
static ssize_t conn_request(struct hfi_eq *eq, const it_event_t *ev,
			    uint32_t *event, void *buf, size_t len)
{
	const it_conn_request_event_t *cr = &ev->conn_req;
	struct fi_eq_cm_entry *entry = buf;
	struct hfi_pep *pep = pep_for_port(eq, cr->conn_qual.conn_qual.port);
	struct hfi_connreq *creq;
	struct fi_info *info;
	const unsigned char *pdata;
	size_t plen;

	if (!pep) {
		it_reject(cr->cn_est_id, NULL, 0);
		return -FI_EAGAIN;
	}
	info = fi_dupinfo(pep->info);
	if (!info) {
		it_reject(cr->cn_est_id, NULL, 0);
		return -FI_ENOMEM;
	}
	g_free(info->dest_addr);
	info->dest_addr = NULL;
	info->dest_addrlen = 0;
	if (cr->source_addr.addr_type == IT_IPV4) {
		struct sockaddr_in *in = g_new0(struct sockaddr_in, 1);

		in->sin_family = AF_INET;
		in->sin_addr = cr->source_addr.addr.ipv4;
		info->dest_addr = in;
		info->dest_addrlen = sizeof(*in);
	} else if (cr->source_addr.addr_type == IT_IPV6) {
		struct sockaddr_in6 *in6 = g_new0(struct sockaddr_in6, 1);

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = cr->source_addr.addr.ipv6;
		info->dest_addr = in6;
		info->dest_addrlen = sizeof(*in6);
	}
	creq = g_new0(struct hfi_connreq, 1);
	creq->fid.fclass = FI_CLASS_CONNREQ;
	creq->cn_est_id = cr->cn_est_id;
	info->handle = &creq->fid;
	*event = FI_CONNREQ;
	entry->fid = &pep->pep_fid.fid;
	entry->info = info;
	plen = hfi_cm_unpack(cr->private_data_present ? cr->private_data :
							 NULL,
			     &pdata);
	plen = MIN(plen, len - sizeof(*entry));
	if (plen)
		memcpy(entry->data, pdata, plen);
	return (ssize_t)(sizeof(*entry) + plen);
}

static ssize_t conn_message(struct hfi_eq *eq, const it_event_t *ev,
			    uint32_t *event, void *buf, size_t len)
{
	const it_connection_event_t *c = &ev->conn;
	struct fi_eq_cm_entry *entry = buf;
	struct hfi_ep *ep = NULL;
	const unsigned char *pdata;
	size_t plen;

	if (hfi_ep_from_it(c->ep, &ep))
		return -FI_EAGAIN;	/* an endpoint already closed */
	switch (c->event_number) {
	case IT_CM_MSG_CONN_ESTABLISHED_EVENT:
		*event = FI_CONNECTED;
		entry->fid = &ep->ep_fid.fid;
		entry->info = NULL;
		plen = hfi_cm_unpack(c->private_data_present ?
					     c->private_data : NULL,
				     &pdata);
		plen = MIN(plen, len - sizeof(*entry));
		if (plen)
			memcpy(entry->data, pdata, plen);
		return (ssize_t)(sizeof(*entry) + plen);
	case IT_CM_MSG_CONN_DISCONNECT_EVENT:
	case IT_CM_MSG_CONN_BROKEN_EVENT:
		*event = FI_SHUTDOWN;
		entry->fid = &ep->ep_fid.fid;
		entry->info = NULL;
		return sizeof(*entry);
	case IT_CM_MSG_CONN_PEER_REJECT_EVENT:
		plen = hfi_cm_unpack(c->private_data_present ?
					     c->private_data : NULL,
				     &pdata);
		push_error(eq, &ep->ep_fid.fid, ep->ep_fid.fid.context,
			   FI_ECONNREFUSED, 0, pdata, plen);
		return -FI_EAVAIL;
	case IT_CM_MSG_CONN_NONPEER_REJECT_EVENT:
		/* Nobody listens, a time-out, or the path failed. */
		push_error(eq, &ep->ep_fid.fid, ep->ep_fid.fid.context,
			   c->reject_reason_code == IT_CN_REJ_TIMEOUT ?
				   FI_ETIMEDOUT :
				   FI_ECONNREFUSED,
			   (int)c->reject_reason_code, NULL, 0);
		return -FI_EAVAIL;
	default:
		return -FI_EAGAIN;
	}
}

static bool eq_errors(struct hfi_eq *eq)
{
	bool any;

	g_mutex_lock(&eq->lock);
	any = !g_queue_is_empty(&eq->errors);
	g_mutex_unlock(&eq->lock);
	return any;
}

static ssize_t hfi_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			   size_t len, uint64_t flags)
{
	struct hfi_eq *eq = container_of(eq_fid, struct hfi_eq, eq_fid);
	it_event_t ev;
	ssize_t ret;

	if (flags & FI_PEEK)
		return -FI_ENOSYS;
	if (len < sizeof(struct fi_eq_cm_entry))
		return -FI_ETOOSMALL;
	if (eq_errors(eq))
		return -FI_EAVAIL;
	for (;;) {
		if (it_evd_dequeue(eq->req_evd, &ev) == IT_SUCCESS)
			ret = conn_request(eq, &ev, event, buf, len);
		else if (it_evd_dequeue(eq->msg_evd, &ev) == IT_SUCCESS)
			ret = conn_message(eq, &ev, event, buf, len);
		else
			return -FI_EAGAIN;
		if (ret != -FI_EAGAIN)
			return ret;
	}
}

static ssize_t hfi_eq_readerr(struct fid_eq *eq_fid,
			      struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct hfi_eq *eq = container_of(eq_fid, struct hfi_eq, eq_fid);
	struct hfi_eq_err *ee;
	size_t room = buf->err_data_size;
	void *user_data = buf->err_data;

	g_mutex_lock(&eq->lock);
	ee = g_queue_pop_head(&eq->errors);
	if (ee) {
		g_free(eq->last_err);
		eq->last_err = ee;
	}
	g_mutex_unlock(&eq->lock);
	if (!ee)
		return -FI_EAGAIN;
	*buf = ee->e;
	/* fi_eq(3): the application's buffer when it gave one, ours
	 * (valid until the next readerr) otherwise. */
	if (room && user_data) {
		buf->err_data = user_data;
		buf->err_data_size = MIN(room, ee->e.err_data_size);
		memcpy(user_data, ee->pdata, buf->err_data_size);
	} else {
		buf->err_data = ee->e.err_data_size ? ee->pdata : NULL;
	}
	return sizeof(*buf);
}

static ssize_t hfi_eq_write(struct fid_eq *eq_fid, uint32_t event,
			    const void *buf, size_t len, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t hfi_eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			    size_t len, int timeout, uint64_t flags)
{
	struct hfi_eq *eq = container_of(eq_fid, struct hfi_eq, eq_fid);
	gint64 deadline = timeout < 0 ? -1 :
			  g_get_monotonic_time() + (gint64)timeout * 1000;
	ssize_t ret;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = eq->req_fd, .events = POLLIN },
			{ .fd = eq->msg_fd, .events = POLLIN },
		};
		int ms = -1;

		ret = hfi_eq_read(eq_fid, event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		if (deadline >= 0) {
			gint64 left = deadline - g_get_monotonic_time();

			if (left <= 0)
				return -FI_EAGAIN;
			ms = (int)MIN(left / 1000 + 1, G_MAXINT);
		}
		if (poll(pfd, 2, ms) < 0 && errno != EINTR)
			return -errno;
	}
}

static const char *hfi_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	static const char *const names[] = {
		"rejected", "time-out", "bad path", "stale connection",
		"bad IRD/ORD", "no resources", "bad connection parameters",
	};
	const char *s = prov_errno >= 0 &&
					(size_t)prov_errno < G_N_ELEMENTS(names) ?
				names[prov_errno] :
				"unknown";

	if (buf && len) {
		g_strlcpy(buf, s, len);
		return buf;
	}
	return s;
}

static struct fi_ops_eq hfi_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = hfi_eq_read,
	.readerr = hfi_eq_readerr,
	.write = hfi_eq_write,
	.sread = hfi_eq_sread,
	.strerror = hfi_eq_strerror,
};

static int hfi_eq_close(struct fid *fid)
{
	struct hfi_eq *eq = container_of(fid, struct hfi_eq, eq_fid.fid);
	struct hfi_eq_err *ee;

	if (eq->peps)
		return -FI_EBUSY;
	if (it_evd_free(eq->msg_evd) != IT_SUCCESS)
		return -FI_EBUSY;	/* an endpoint still uses it */
	it_evd_free(eq->req_evd);
	if (eq->wait_fd >= 0)
		close(eq->wait_fd);
	while ((ee = g_queue_pop_head(&eq->errors)))
		g_free(ee);
	g_free(eq->last_err);
	g_mutex_clear(&eq->lock);
	g_free(eq);
	return 0;
}

/* FI_GETWAIT: one descriptor for the two EVDs, an epoll set of both,
 * readable while either has an event (made at open for FI_WAIT_FD and
 * FI_WAIT_UNSPEC; ofi_rxm's progress thread polls it); FI_GETWAITOBJ
 * says whether there is one. */
static int hfi_eq_control(struct fid *fid, int command, void *arg)
{
	struct hfi_eq *eq = container_of(fid, struct hfi_eq, eq_fid.fid);

	return hfi_wait_control(eq->wait_fd, command, arg);
}

/* For fi_trywait: 0 when the EQ has nothing to read. */
int hfi_eq_idle(struct hfi_eq *eq)
{
	struct pollfd pfd[2] = {
		{ .fd = eq->req_fd, .events = POLLIN },
		{ .fd = eq->msg_fd, .events = POLLIN },
	};
	bool errors;

	g_mutex_lock(&eq->lock);
	errors = !g_queue_is_empty(&eq->errors);
	g_mutex_unlock(&eq->lock);
	if (errors || poll(pfd, 2, 0) > 0)
		return -FI_EAGAIN;
	return 0;
}

static int eq_wait_set(struct hfi_eq *eq)
{
	int fds[2] = { eq->req_fd, eq->msg_fd };

	eq->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	if (eq->wait_fd < 0)
		return -errno;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN,
					  .data.fd = fds[i] };

		if (epoll_ctl(eq->wait_fd, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
			int err = -errno;

			close(eq->wait_fd);
			eq->wait_fd = -1;
			return err;
		}
	}
	return 0;
}

static struct fi_ops hfi_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_eq_close,
	.bind = hfi_no_bind,
	.control = hfi_eq_control,
	.ops_open = hfi_no_ops_open,
};

int hfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq_fid, void *context)
{
	struct hfi_fabric *fab = container_of(fabric, struct hfi_fabric,
					      fabric_fid);
	size_t size = attr && attr->size ? attr->size : 64;
	enum fi_wait_obj wait = attr ? attr->wait_obj : FI_WAIT_NONE;
	struct hfi_eq *eq;
	int err;

	if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC &&
	    wait != FI_WAIT_FD)
		return -FI_ENOSYS;
	eq = g_new0(struct hfi_eq, 1);
	eq->wait_fd = -1;
	if (it_evd_create(fab->ia, IT_CM_REQ_EVENT_STREAM, IT_EVD_CREATE_FD,
			  size, 0, NULL, &eq->req_evd, &eq->req_fd) !=
	    IT_SUCCESS) {
		g_free(eq);
		return -FI_ENOMEM;
	}
	if (it_evd_create(fab->ia, IT_CM_MSG_EVENT_STREAM, IT_EVD_CREATE_FD,
			  size, 0, NULL, &eq->msg_evd, &eq->msg_fd) !=
	    IT_SUCCESS) {
		it_evd_free(eq->req_evd);
		g_free(eq);
		return -FI_ENOMEM;
	}
	/* FI_WAIT_UNSPEC too: ofi_rxm opens its EQ so and asks for it. */
	if (wait != FI_WAIT_NONE && (err = eq_wait_set(eq)) < 0) {
		it_evd_free(eq->msg_evd);
		it_evd_free(eq->req_evd);
		g_free(eq);
		return err;
	}
	g_mutex_init(&eq->lock);
	g_queue_init(&eq->errors);
	eq->fab = fab;
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &hfi_eq_fi_ops;
	eq->eq_fid.ops = &hfi_eq_ops;
	*eq_fid = &eq->eq_fid;
	return 0;
}

/* ---- passive endpoint ----------------------------------------------- */

static int hfi_pep_close(struct fid *fid)
{
	struct hfi_pep *pep = container_of(fid, struct hfi_pep, pep_fid.fid);

	if (pep->listener)
		it_listen_free(pep->listener);
	if (pep->eq)
		pep->eq->peps = g_list_remove(pep->eq->peps, pep);
	fi_freeinfo(pep->info);
	g_free(pep);
	return 0;
}

static int hfi_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct hfi_pep *pep = container_of(fid, struct hfi_pep, pep_fid.fid);
	struct hfi_eq *eq;

	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	eq = container_of(bfid, struct hfi_eq, eq_fid.fid);
	if (eq->fab != pep->fab)
		return -FI_EINVAL;
	if (pep->eq)
		pep->eq->peps = g_list_remove(pep->eq->peps, pep);
	pep->eq = eq;
	eq->peps = g_list_append(eq->peps, pep);
	return 0;
}

static struct fi_ops hfi_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_pep_close,
	.bind = hfi_pep_bind,
	.control = hfi_no_control,
	.ops_open = hfi_no_ops_open,
};

static int hfi_pep_listen(struct fid_pep *pep_fid)
{
	struct hfi_pep *pep = container_of(pep_fid, struct hfi_pep, pep_fid);
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	it_net_addr_t na;
	it_status_t st;

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->listener)
		return 0;
	hfi_sockaddr_to_net((struct sockaddr *)&pep->src, &na,
			    &qual.conn_qual.port);
	st = it_listen_create(pep->fab->ia, 0, pep->eq->req_evd,
			      qual.conn_qual.port ? IT_LISTEN_CONN_QUAL_INPUT :
						    IT_LISTEN_NO_FLAG,
			      &qual, &pep->listener);
	if (st != IT_SUCCESS)
		return hfi_status_to_fi(st);
	if (pep->src.ss_family == AF_INET)
		((struct sockaddr_in *)&pep->src)->sin_port =
			qual.conn_qual.port;
	else
		((struct sockaddr_in6 *)&pep->src)->sin6_port =
			qual.conn_qual.port;
	return 0;
}

static int hfi_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct hfi_pep *pep = container_of(fid, struct hfi_pep, pep_fid.fid);
	size_t len = hfi_sockaddr_len((struct sockaddr *)&pep->src);
	size_t room = *addrlen;

	*addrlen = len;
	if (room < len)
		return -FI_ETOOSMALL;
	memcpy(addr, &pep->src, len);
	return 0;
}

static int hfi_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct hfi_pep *pep = container_of(fid, struct hfi_pep, pep_fid.fid);
	size_t len = hfi_sockaddr_len(addr);

	if (pep->listener)
		return -FI_EOPBADSTATE;
	if (!len || addrlen < len)
		return -FI_EINVAL;
	memset(&pep->src, 0, sizeof(pep->src));
	memcpy(&pep->src, addr, len);
	return 0;
}

static int hfi_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			  const void *param, size_t paramlen)
{
	unsigned char pd[IT_MAX_PRIV_DATA];
	struct hfi_connreq *creq;
	size_t n;
	it_status_t st;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	if (paramlen > HFI_CM_DATA_SIZE || (paramlen && !param))
		return -FI_EINVAL;
	creq = container_of(handle, struct hfi_connreq, fid);
	n = hfi_cm_pack(pd, param, paramlen);
	st = it_reject(creq->cn_est_id, n ? pd : NULL, n);
	g_free(creq);
	return hfi_status_to_fi(st);
}

static int hfi_pep_no_connect(struct fid_ep *ep, const void *addr,
			      const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int hfi_pep_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int hfi_pep_no_accept(struct fid_ep *ep, const void *param,
			     size_t paramlen)
{
	return -FI_ENOSYS;
}

static int hfi_pep_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int hfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		       struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm hfi_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = hfi_pep_setname,
	.getname = hfi_pep_getname,
	.getpeer = hfi_pep_no_getpeer,
	.connect = hfi_pep_no_connect,
	.listen = hfi_pep_listen,
	.accept = hfi_pep_no_accept,
	.reject = hfi_pep_reject,
	.shutdown = hfi_pep_no_shutdown,
	.join = hfi_no_join,
};

static ssize_t hfi_pep_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

size_t hfi_cm_pack(unsigned char out[IT_MAX_PRIV_DATA], const void *param,
		   size_t paramlen)
{
	if (!paramlen)
		return 0;
	out[0] = (unsigned char)paramlen;
	memcpy(out + 1, param, paramlen);
	return paramlen + 1;
}

size_t hfi_cm_unpack(const unsigned char *pd, const unsigned char **data)
{
	*data = NULL;
	if (!pd)
		return 0;
	*data = pd + 1;
	/* A peer that is not this provider may send anything. */
	return MIN(pd[0], HFI_CM_DATA_SIZE);
}

int hfi_cm_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = HFI_CM_DATA_SIZE;
	*optlen = sizeof(size_t);
	return 0;
}

int hfi_cm_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops_ep hfi_pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = hfi_pep_no_cancel,
	.getopt = hfi_cm_getopt,
	.setopt = hfi_cm_setopt,
};

int hfi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep_fid, void *context)
{
	struct hfi_fabric *fab = container_of(fabric, struct hfi_fabric,
					      fabric_fid);
	struct hfi_pep *pep;

	if (!info)
		return -FI_EINVAL;
	pep = g_new0(struct hfi_pep, 1);
	if (info->src_addr && hfi_sockaddr_len(info->src_addr) &&
	    info->src_addrlen >= hfi_sockaddr_len(info->src_addr))
		memcpy(&pep->src, info->src_addr,
		       hfi_sockaddr_len(info->src_addr));
	else if (hfi_ia_address(fab->ia, AF_INET, &pep->src) &&
		 hfi_ia_address(fab->ia, AF_INET6, &pep->src)) {
		g_free(pep);
		return -FI_ENODATA;
	}
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		g_free(pep);
		return -FI_ENOMEM;
	}
	pep->fab = fab;
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &hfi_pep_fi_ops;
	pep->pep_fid.ops = &hfi_pep_ops;
	pep->pep_fid.cm = &hfi_pep_cm_ops;
	*pep_fid = &pep->pep_fid;
	return 0;
}
