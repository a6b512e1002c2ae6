/* SPDX-License-Identifier: MIT */
/*
 * check-fi: the libfabric provider (fi/) through libfabric's own API, as
 * an application sees it: getinfo with hints, memory registration,
 * connections (accept, reject, refused), messages and RMA with the bytes
 * checked, completion errors. Soft-iWARP on lo, client and server
 * endpoints in this process. The provider is loaded by libfabric from
 * FI_PROVIDER_PATH (the build tree's fi/.libs).
 *
 *   tests/check-fi            CK_RUN_CASE=name for one case,
 *                             CHECK_FI_DEVICE=rxe_lo for soft-RoCE
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define FIV FI_VERSION(1, 17)

/* The device: siw_lo, or CHECK_FI_DEVICE (rxe_lo: both ends in this
 * process, as soft-RoCE's port is one process's). */

/* An EQ CM entry with room for the private data that follows it
 * (struct fi_eq_cm_entry ends in a flexible array member). */
union cm_ev {
	struct fi_eq_cm_entry e;
	uint8_t room[sizeof(struct fi_eq_cm_entry) + 64];
};
static const char *dev = "siw_lo";
#define TIMEOUT_MS 5000

static struct fi_info *base_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	ck_assert_ptr_nonnull(h);
	h->fabric_attr->prov_name = strdup("hostrdma");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return h;
}

/* ---- getinfo ------------------------------------------------------------ */

START_TEST(getinfo_hints)
{
	struct fi_info *h = base_hints(), *info = NULL, *fi;
	struct sockaddr_in *sin;
	int n = 0;

	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	for (fi = info; fi; fi = fi->next, n++) {
		ck_assert_str_eq(fi->fabric_attr->prov_name, "hostrdma");
		ck_assert_str_eq(fi->domain_attr->name, dev);
		ck_assert_str_eq(fi->fabric_attr->name, dev);
		ck_assert_int_eq(fi->ep_attr->type, FI_EP_MSG);
		ck_assert_int_eq(fi->ep_attr->protocol,
				 strncmp(dev, "rxe", 3) ?
					 FI_PROTO_IWARP :
					 FI_PROTO_RDMA_CM_IB_RC);
		ck_assert_int_eq(fi->addr_format, FI_SOCKADDR_IN);
		ck_assert(fi->caps & FI_MSG);
		ck_assert(fi->caps & FI_RMA);
		ck_assert(fi->domain_attr->mr_mode & FI_MR_LOCAL);
		ck_assert(fi->domain_attr->mr_mode & FI_MR_PROV_KEY);
		ck_assert_uint_eq(fi->src_addrlen, sizeof(*sin));
		sin = fi->src_addr;
		ck_assert_uint_eq(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	}
	ck_assert_int_eq(n, 1);
	fi_freeinfo(info);

	/* A source given as node/service with FI_SOURCE. */
	ck_assert_int_eq(fi_getinfo(FIV, "127.0.0.1", "7471", FI_SOURCE,
				    h, &info), 0);
	sin = info->src_addr;
	ck_assert_uint_eq(ntohs(sin->sin_port), 7471);
	ck_assert_ptr_null(info->dest_addr);
	fi_freeinfo(info);

	/* A destination: only devices with a path to it, dest_addr set. */
	ck_assert_int_eq(fi_getinfo(FIV, "127.0.0.1", "7472", 0, h,
				    &info), 0);
	sin = info->dest_addr;
	ck_assert_ptr_nonnull(sin);
	ck_assert_uint_eq(ntohs(sin->sin_port), 7472);
	ck_assert_uint_eq(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	fi_freeinfo(info);

	/* IPv6: ::1 on lo. */
	h->addr_format = FI_SOCKADDR_IN6;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_int_eq(info->addr_format, FI_SOCKADDR_IN6);
	ck_assert_int_eq(((struct sockaddr *)info->src_addr)->sa_family,
			 AF_INET6);
	fi_freeinfo(info);
	h->addr_format = FI_SOCKADDR_IN;

	/* The device's name selects it; another name selects nothing. */
	h->domain_attr->name = strdup(dev);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	fi_freeinfo(info);
	free(h->domain_attr->name);
	h->domain_attr->name = strdup("siw_nosuch");
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	free(h->domain_attr->name);
	h->domain_attr->name = NULL;

	/* What we cannot do: no FI_MR_LOCAL, tagged messages, CQ data. */
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_PROV_KEY;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert(!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR));
	fi_freeinfo(info);
	h->caps = FI_TAGGED;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->caps = FI_MSG;
	h->domain_attr->cq_data_size = 4;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->domain_attr->cq_data_size = 0;

	/* Another provider's name. */
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("nosuchprov");
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
}
END_TEST

/* ---- a connected pair --------------------------------------------------- */

struct pair {
	/* counters bound to the client's / server's endpoint (before
	 * connect_pair), and the client CQ's directions (0: both) */
	struct fid_cntr *ccntr, *scntr;
	uint64_t ccntr_flags, scntr_flags, ccq_flags;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_cq *ccq, *scq;
	struct fid_ep *cep, *sep;
	struct sockaddr_in srv;
};

/* A fabric, domain and listening passive endpoint for @h's first
 * answer; @h is freed. */
static void open_fabric_hints(struct pair *p, struct fi_info *h)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	size_t len = sizeof(p->srv);

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &p->info), 0);
	fi_freeinfo(h);
	ck_assert_int_eq(fi_fabric(p->info->fabric_attr, &p->fabric, NULL),
			 0);
	ck_assert_int_eq(fi_eq_open(p->fabric, &eqa, &p->eq, NULL), 0);
	ck_assert_int_eq(fi_domain(p->fabric, p->info, &p->domain, NULL), 0);
	ck_assert_int_eq(fi_passive_ep(p->fabric, p->info, &p->pep, NULL), 0);
	ck_assert_int_eq(fi_pep_bind(p->pep, &p->eq->fid, 0), 0);
	ck_assert_int_eq(fi_listen(p->pep), 0);
	ck_assert_int_eq(fi_getname(&p->pep->fid, &p->srv, &len), 0);
	ck_assert_uint_eq(len, sizeof(p->srv));
	ck_assert_uint_eq(p->srv.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	ck_assert_uint_ne(p->srv.sin_port, 0);
}

static void open_fabric(struct pair *p, uint64_t mr_mode)
{
	struct fi_info *h = base_hints();

	h->domain_attr->mr_mode = (int)mr_mode;
	open_fabric_hints(p, h);
}

static struct fid_cq *open_cq(struct pair *p, enum fi_wait_obj wait)
{
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_DATA,
				.wait_obj = wait, .size = 64 };
	struct fid_cq *cq;

	ck_assert_int_eq(fi_cq_open(p->domain, &a, &cq, NULL), 0);
	return cq;
}

static struct fid_ep *open_ep(struct pair *p, struct fi_info *info,
			      struct fid_cq *cq)
{
	struct fid_ep *ep;

	bool client = info == p->info;
	uint64_t cqf = client && p->ccq_flags ? p->ccq_flags :
						FI_TRANSMIT | FI_RECV;
	struct fid_cntr *c = client ? p->ccntr : p->scntr;

	ck_assert_int_eq(fi_endpoint(p->domain, info, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &p->eq->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &cq->fid, cqf), 0);
	if (c)
		ck_assert_int_eq(fi_ep_bind(ep, &c->fid, client ?
							  p->ccntr_flags :
							  p->scntr_flags),
				 0);
	ck_assert_int_eq(fi_enable(ep), 0);
	return ep;
}

static ssize_t eq_wait(struct pair *p, uint32_t *event, void *buf,
		       size_t len)
{
	return fi_eq_sread(p->eq, event, buf, len, TIMEOUT_MS, 0);
}

static void connect_pair(struct pair *p, enum fi_wait_obj wait)
{
	union cm_ev ev;
	uint32_t event;
	ssize_t n;
	int connected = 0;

	p->ccq = open_cq(p, wait);
	p->scq = open_cq(p, wait);
	p->cep = open_ep(p, p->info, p->ccq);
	ck_assert_int_eq(fi_connect(p->cep, &p->srv, "hello", 6), 0);
	n = eq_wait(p, &event, &ev, sizeof(ev));
	/* The length the peer gave, not IT-API's padded buffer. */
	ck_assert_int_eq(n, (ssize_t)sizeof(ev.e) + 6);
	ck_assert_uint_eq(event, FI_CONNREQ);
	ck_assert_ptr_eq(ev.e.fid, &p->pep->fid);
	ck_assert_str_eq((char *)ev.e.data, "hello");
	ck_assert_ptr_nonnull(ev.e.info);
	ck_assert_ptr_nonnull(ev.e.info->handle);
	ck_assert_uint_eq(((struct sockaddr_in *)ev.e.info->dest_addr)
				  ->sin_addr.s_addr,
			  htonl(INADDR_LOOPBACK));
	p->sep = open_ep(p, ev.e.info, p->scq);
	fi_freeinfo(ev.e.info);
	ck_assert_int_eq(fi_accept(p->sep, "welcome", 8), 0);
	while (connected != 3) {
		n = eq_wait(p, &event, &ev, sizeof(ev));
		ck_assert_int_ge(n, (ssize_t)sizeof(ev.e));
		ck_assert_uint_eq(event, FI_CONNECTED);
		if (ev.e.fid == &p->cep->fid) {
			ck_assert_int_eq(n, (ssize_t)sizeof(ev.e) + 8);
			ck_assert_str_eq((char *)ev.e.data, "welcome");
			connected |= 1;
		} else {
			ck_assert_ptr_eq(ev.e.fid, &p->sep->fid);
			connected |= 2;
		}
	}
}

static void close_pair(struct pair *p)
{
	if (p->cep)
		ck_assert_int_eq(fi_close(&p->cep->fid), 0);
	if (p->sep)
		ck_assert_int_eq(fi_close(&p->sep->fid), 0);
	if (p->ccq)
		ck_assert_int_eq(fi_close(&p->ccq->fid), 0);
	if (p->scq)
		ck_assert_int_eq(fi_close(&p->scq->fid), 0);
	ck_assert_int_eq(fi_close(&p->pep->fid), 0);
	ck_assert_int_eq(fi_close(&p->eq->fid), 0);
	ck_assert_int_eq(fi_close(&p->domain->fid), 0);
	ck_assert_int_eq(fi_close(&p->fabric->fid), 0);
	fi_freeinfo(p->info);
}

/* One entry from @cq within the time-out: 1, or the error. */
static ssize_t cq_wait(struct fid_cq *cq, struct fi_cq_data_entry *e)
{
	struct timespec t0, t;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = fi_cq_read(cq, e, 1);
		if (n != -FI_EAGAIN)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
			    (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    TIMEOUT_MS)
			return -FI_ETIMEDOUT;
	}
}

static struct fid_mr *reg(struct pair *p, void *buf, size_t len,
			  uint64_t access)
{
	struct fid_mr *mr;

	ck_assert_int_eq(fi_mr_reg(p->domain, buf, len, access, 0, 0, 0, &mr,
				   NULL), 0);
	return mr;
}

/* The attribute rules fabtests' fi_getinfo_test checks: what is returned
 * holds what was asked for, or nothing is returned. */
START_TEST(getinfo_attr_rules)
{
	struct fi_info *h = base_hints(), *info = NULL;

	/* RC ordering: RAW and WAW for whole messages, never WAR. */
	h->tx_attr->msg_order = FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_RAW | FI_ORDER_WAW | FI_ORDER_SAS;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_uint_eq(info->tx_attr->msg_order & FI_ORDER_RAW,
			  FI_ORDER_RAW);
	ck_assert_uint_eq(info->ep_attr->max_order_raw_size,
			  info->ep_attr->max_msg_size);
	ck_assert_uint_eq(info->ep_attr->max_order_waw_size,
			  info->ep_attr->max_msg_size);
	ck_assert_uint_eq(info->ep_attr->max_order_war_size, 0);
	h->ep_attr->max_order_raw_size = info->ep_attr->max_msg_size + 1;
	fi_freeinfo(info);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->ep_attr->max_order_raw_size = 0;
	h->tx_attr->msg_order = FI_ORDER_WAR;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_DATA;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->tx_attr->msg_order = FI_ORDER_RMA_WAR;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	/* RMA-only orders we keep; atomic ones hold without atomics. */
	h->tx_attr->msg_order = FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_WAR;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert(info->tx_attr->msg_order & FI_ORDER_RMA_RAW);
	ck_assert(!(info->tx_attr->msg_order & FI_ORDER_ATOMIC_WAR));
	fi_freeinfo(info);
	h->tx_attr->msg_order = h->rx_attr->msg_order = 0;

	/* Manual progress asked: answered (ours is automatic, a superset). */
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_int_eq(info->domain_attr->data_progress,
			 FI_PROGRESS_MANUAL);
	ck_assert_int_eq(info->domain_attr->control_progress,
			 FI_PROGRESS_MANUAL);
	fi_freeinfo(info);
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_int_eq(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	fi_freeinfo(info);

	/* No address vectors: FI_SHARED_AV is refused. */
	h->domain_attr->caps = FI_SHARED_AV;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	h->domain_attr->caps = 0;

	/* From 1.5 the FI_LOCAL_MR mode bit is not FI_MR_LOCAL ... */
	h->mode = ~0ULL;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	/* ... but FI_MR_BASIC by name takes it, and is answered by name. */
	h->domain_attr->mr_mode = FI_MR_BASIC;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_int_eq(info->domain_attr->mr_mode, FI_MR_BASIC);
	ck_assert(info->mode & FI_LOCAL_MR);
	fi_freeinfo(info);
	h->mode = 0;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
}
END_TEST

/* ---- memory registration ------------------------------------------------ */

START_TEST(mr_register)
{
	static char a[4096], b[4096];
	struct fid_mr *ma, *mb, *bad;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	ma = reg(&p, a, sizeof(a), FI_SEND | FI_RECV);
	mb = reg(&p, b, sizeof(b), FI_REMOTE_READ | FI_REMOTE_WRITE);
	ck_assert_ptr_nonnull(fi_mr_desc(ma));
	ck_assert_ptr_nonnull(fi_mr_desc(mb));
	ck_assert_ptr_ne(fi_mr_desc(ma), fi_mr_desc(mb));
	ck_assert_uint_ne(fi_mr_key(ma), fi_mr_key(mb));
	ck_assert_uint_le(fi_mr_key(mb), UINT32_MAX);
	ck_assert_int_eq(fi_mr_reg(p.domain, NULL, 16, FI_SEND, 0, 0, 0, &bad,
				   NULL), -FI_EINVAL);
	ck_assert_int_eq(fi_mr_reg(p.domain, a, 0, FI_SEND, 0, 0, 0, &bad,
				   NULL), -FI_EINVAL);
	/* A domain with registrations is busy. */
	ck_assert_int_eq(fi_close(&p.domain->fid), -FI_EBUSY);
	ck_assert_int_eq(fi_close(&ma->fid), 0);
	ck_assert_int_eq(fi_close(&mb->fid), 0);
	close_pair(&p);
}
END_TEST

/* ---- messages ----------------------------------------------------------- */

static void fill(char *b, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(i * 7 + seed);
}

START_TEST(msg_send_recv)
{
	static char sbuf[8192], rbuf[8192], r2a[100], r2b[4000];
	struct fi_cq_data_entry e;
	struct fid_mr *smr, *rmr, *r2amr, *r2bmr;
	struct iovec siov[2], riov[2];
	void *sdesc[2], *rdesc[2];
	int ctx_s, ctx_r, ctx_r2, ctx_r3;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	r2amr = reg(&p, r2a, sizeof(r2a), FI_RECV);
	r2bmr = reg(&p, r2b, sizeof(r2b), FI_RECV);

	/* One message, 5000 bytes, into an 8 KiB receive. */
	fill(sbuf, sizeof(sbuf), 3);
	memset(rbuf, 0, sizeof(rbuf));
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r), 0);
	ck_assert_int_eq(fi_send(p.cep, sbuf, 5000, fi_mr_desc(smr), 0,
				 &ctx_s), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_s);
	ck_assert_uint_eq(e.flags, FI_SEND | FI_MSG);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG);
	ck_assert_uint_eq(e.len, 5000);
	ck_assert_ptr_eq(e.buf, rbuf);
	ck_assert_mem_eq(rbuf, sbuf, 5000);
	ck_assert_int_eq(rbuf[5000], 0);

	/* Two segments out, scattered into two segments. */
	siov[0] = (struct iovec){ sbuf, 60 };
	siov[1] = (struct iovec){ sbuf + 4096, 1000 };
	sdesc[0] = sdesc[1] = fi_mr_desc(smr);
	riov[0] = (struct iovec){ r2a, sizeof(r2a) };
	riov[1] = (struct iovec){ r2b, sizeof(r2b) };
	rdesc[0] = fi_mr_desc(r2amr);
	rdesc[1] = fi_mr_desc(r2bmr);
	ck_assert_int_eq(fi_recvv(p.sep, riov, rdesc, 2, 0, &ctx_r2), 0);
	ck_assert_int_eq(fi_sendv(p.cep, siov, sdesc, 2, 0, &ctx_s), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r2);
	ck_assert_uint_eq(e.len, 1060);
	ck_assert_mem_eq(r2a, sbuf, 60);
	ck_assert_mem_eq(r2a + 60, sbuf + 4096, 40);
	ck_assert_mem_eq(r2b, sbuf + 4136, 960);

	/* fi_inject: a copy, no completion at the sender; the buffer is
	 * ours again at once. */
	ck_assert_int_eq(fi_recv(p.cep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r3), 0);
	memcpy(sbuf, "injected!", 10);
	ck_assert_int_eq(fi_inject(p.sep, sbuf, 10, 0), 0);
	memset(sbuf, 'x', 10);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r3);
	ck_assert_uint_eq(e.len, 10);
	ck_assert_str_eq(rbuf, "injected!");
	ck_assert_int_eq(fi_cq_read(p.scq, &e, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_inject(p.sep, sbuf, 65, 0), -FI_EINVAL);

	/* No descriptor with FI_MR_LOCAL: refused. */
	ck_assert_int_eq(fi_send(p.cep, sbuf, 100, NULL, 0, &ctx_s),
			 -FI_EINVAL);
	/* No remote CQ data without FI_RX_CQ_DATA in the hints (and none
	 * on iWARP): cq_data cases. */
	ck_assert_int_eq(fi_senddata(p.cep, sbuf, 8, fi_mr_desc(smr), 1, 0,
				     &ctx_s), -FI_ENOSYS);

	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	fi_close(&r2amr->fid);
	fi_close(&r2bmr->fid);
	close_pair(&p);
}
END_TEST

/*
 * A message longer than the receive: the receive fails (FI_ETRUNC for a
 * local length error; soft-iWARP flushes it, FI_ECANCELED, as it tears
 * the connection down) and nothing lands past the buffer.
 */
START_TEST(msg_truncated)
{
	static char sbuf[256], rarea[256];
	char *rbuf = rarea + 64;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *smr, *rmr;
	int ctx_r, ctx_s;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	memset(sbuf, 0x77, sizeof(sbuf));
	memset(rarea, 0x33, sizeof(rarea));
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND);
	rmr = reg(&p, rbuf, 64, FI_RECV);
	ck_assert_int_eq(fi_recv(p.sep, rbuf, 64, fi_mr_desc(rmr), 0,
				 &ctx_r), 0);
	ck_assert_int_eq(fi_send(p.cep, sbuf, sizeof(sbuf), fi_mr_desc(smr),
				 0, &ctx_s), 0);
	ck_assert_int_eq(cq_wait(p.scq, &e), -FI_EAVAIL);
	ck_assert_int_eq(fi_cq_readerr(p.scq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, &ctx_r);
	ck_assert_msg(err.err == FI_ETRUNC || err.err == FI_ECANCELED,
		      "err %d prov_errno %d", err.err, err.prov_errno);
	ck_assert_uint_eq(err.flags, FI_RECV | FI_MSG);
	for (size_t i = 0; i < 64; i++)
		ck_assert_int_eq(rarea[i], 0x33);
	for (size_t i = 128; i < sizeof(rarea); i++)
		ck_assert_int_eq(rarea[i], 0x33);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/*
 * A CQ read of several entries at once, with an error among them: the
 * successes before it come out in order, the error through
 * fi_cq_readerr, and what followed it in the same batch after it, none
 * lost or repeated. Six receives, the fourth too small for its message.
 */
START_TEST(msg_batch_read)
{
	static char sbuf[6 * 32], rbuf[6 * 64];
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *smr, *rmr;
	int ctx_r[6], ctx_s[6], got_ok = 0, got_err = 0, i;
	struct timespec t0, t;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	fill(sbuf, sizeof(sbuf), 5);
	memset(rbuf, 0, sizeof(rbuf));
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(fi_recv(p.sep, rbuf + 64 * i, i == 3 ? 16 : 64,
					 fi_mr_desc(rmr), 0, &ctx_r[i]), 0);
	/* The fourth message breaks the connection at the receiver: the
	 * last two may find it broken already (-FI_EOPBADSTATE). */
	for (i = 0; i < 6; i++) {
		ssize_t rc = fi_send(p.cep, sbuf + 32 * i, 32,
				     fi_mr_desc(smr), 0, &ctx_s[i]);

		if (i < 4)
			ck_assert_int_eq(rc, 0);
		else
			ck_assert_msg(rc == 0 || rc == -FI_EOPBADSTATE,
				      "send %d: %zd", i, rc);
	}
	/* Let all six complete before the first read: one batch. */
	usleep(200000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got_ok + got_err < 6) {
		ssize_t n = fi_cq_read(p.scq, e, 8);

		if (n == -FI_EAVAIL) {
			ck_assert_int_eq(fi_cq_readerr(p.scq, &err, 0), 1);
			/* r3 first (too small), then the flushed r4, r5 */
			ck_assert_ptr_eq(err.op_context, &ctx_r[3 + got_err]);
			ck_assert_int_eq(got_ok, 3);
			got_err++;
			continue;
		}
		if (n == -FI_EAGAIN) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			ck_assert_msg(t.tv_sec - t0.tv_sec < 10,
				      "%d entries and %d errors only",
				      got_ok, got_err);
			continue;
		}
		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++, got_ok++) {
			ck_assert_int_lt(got_ok, 3);
			ck_assert_int_eq(got_err, 0);
			ck_assert_ptr_eq(e[i].op_context, &ctx_r[got_ok]);
			ck_assert_uint_eq(e[i].len, 32);
			ck_assert_mem_eq(rbuf + 64 * got_ok,
					 sbuf + 32 * got_ok, 32);
		}
	}
	ck_assert_int_eq(fi_cq_read(p.scq, e, 8), -FI_EAGAIN);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(rbuf[64 * i + 32], 0);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/* ---- RMA ---------------------------------------------------------------- */

static void wait_landed(const char *where, const char *what, size_t len)
{
	for (int i = 0; i < 5000 && memcmp(where, what, len); i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	ck_assert_mem_eq(where, what, len);
}

static void rma_case(uint64_t mr_mode)
{
	static char target[4096], src[2048], back[2048];
	struct fi_cq_data_entry e;
	struct fid_mr *tmr, *smr, *bmr;
	uint64_t base;
	int ctx_w, ctx_r;
	struct pair p;

	open_fabric(&p, mr_mode);
	connect_pair(&p, FI_WAIT_NONE);
	memset(target, 0xee, sizeof(target));
	fill(src, sizeof(src), 11);
	memset(back, 0, sizeof(back));
	tmr = reg(&p, target, sizeof(target),
		  FI_REMOTE_READ | FI_REMOTE_WRITE);
	smr = reg(&p, src, sizeof(src), FI_WRITE);
	bmr = reg(&p, back, sizeof(back), FI_READ);
	/* FI_MR_VIRT_ADDR: the target's address; otherwise offsets. */
	base = (mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)target : 0;

	ck_assert_int_eq(fi_write(p.cep, src, 1000, fi_mr_desc(smr), 0,
				  base + 100, fi_mr_key(tmr), &ctx_w), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_w);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_WRITE);
	/* iWARP: the Write completes once on the wire; it lands soon. */
	wait_landed(target + 100, src, 1000);
	for (size_t i = 0; i < sizeof(target); i++)
		if (i < 100 || i >= 1100)
			ck_assert_int_eq((unsigned char)target[i], 0xee);
	/* The target side sees nothing. */
	ck_assert_int_eq(fi_cq_read(p.scq, &e, 1), -FI_EAGAIN);

	ck_assert_int_eq(fi_read(p.cep, back, 1500, fi_mr_desc(bmr), 0,
				 base + 50, fi_mr_key(tmr), &ctx_r), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_READ);
	ck_assert_mem_eq(back, target + 50, 1500);
	for (size_t i = 1500; i < sizeof(back); i++)
		ck_assert_int_eq(back[i], 0);

	/* fi_inject_write: a copy, no completion. */
	ck_assert_int_eq(fi_inject_write(p.cep, "tiny", 4, 0, base + 4000,
					 fi_mr_key(tmr)), 0);
	wait_landed(target + 4000, "tiny", 4);
	ck_assert_int_eq((unsigned char)target[4004], 0xee);
	ck_assert_int_eq(fi_writedata(p.cep, src, 8, fi_mr_desc(smr), 1, 0,
				      base, fi_mr_key(tmr), &ctx_w),
			 -FI_ENOSYS);
	fi_close(&tmr->fid);
	fi_close(&smr->fid);
	fi_close(&bmr->fid);
	close_pair(&p);
}

START_TEST(rma_write_read_virt)
{
	rma_case(FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
		 FI_MR_PROV_KEY);
}
END_TEST

START_TEST(rma_write_read_offsets)
{
	rma_case(FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
}
END_TEST

/* Counters: the client's sends, writes and reads go to a counter, no CQ
 * (its CQ takes receives only), so the counter reaps them itself; the
 * server's receives go to its CQ and a counter, which reaps them for the
 * CQ. A remote access error counts as an error. No FI_RMA_EVENT. */
START_TEST(counters)
{
	static char sbuf[4096], rbuf[4096];
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_info *h = base_hints(), *info = NULL;
	struct fi_cq_data_entry e;
	struct fid_cntr *cc, *sc;
	struct fid_mr *smr, *rmr;
	int ctx[4];
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	ck_assert_uint_gt(p.info->domain_attr->cntr_cnt, 0);
	ck_assert_int_eq(fi_cntr_open(p.domain, &ca, &cc, NULL), 0);
	ck_assert_int_eq(fi_cntr_open(p.domain, &ca, &sc, NULL), 0);
	p.ccntr = cc;
	p.ccntr_flags = FI_SEND | FI_WRITE | FI_READ;
	p.ccq_flags = FI_RECV;
	p.scntr = sc;
	p.scntr_flags = FI_RECV;
	connect_pair(&p, FI_WAIT_NONE);
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND | FI_WRITE | FI_READ);
	rmr = reg(&p, rbuf, sizeof(rbuf),
		  FI_RECV | FI_REMOTE_WRITE | FI_REMOTE_READ);
	fill(sbuf, sizeof(sbuf), 7);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf),
					 fi_mr_desc(rmr), 0, &ctx[i]), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fi_send(p.cep, sbuf, 100, fi_mr_desc(smr), 0,
					 &ctx[i]), 0);
	ck_assert_int_eq(fi_cntr_wait(cc, 3, TIMEOUT_MS), 0);
	ck_assert_uint_eq(fi_cntr_read(cc), 3);
	ck_assert_int_eq(fi_cntr_wait(cc, 4, 50), -FI_ETIMEDOUT);
	/* the server's counter reaps its CQ's completions: counted once,
	 * and the entries are still the CQ's */
	ck_assert_int_eq(fi_cntr_wait(sc, 3, TIMEOUT_MS), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cq_wait(p.scq, &e), 1);
		ck_assert_ptr_eq(e.op_context, &ctx[i]);
		ck_assert_uint_eq(e.len, 100);
	}
	ck_assert_int_eq(fi_cq_read(p.scq, &e, 1), -FI_EAGAIN);
	ck_assert_uint_eq(fi_cntr_read(sc), 3);
	ck_assert_uint_eq(fi_cntr_readerr(sc), 0);
	/* a write counted on the same counter; its bytes landed */
	memset(rbuf, 0, sizeof(rbuf));
	ck_assert_int_eq(fi_write(p.cep, sbuf, 4096, fi_mr_desc(smr), 0,
				  (uintptr_t)rbuf, fi_mr_key(rmr), &ctx[3]),
			 0);
	ck_assert_int_eq(fi_cntr_wait(cc, 4, TIMEOUT_MS), 0);
	/* a write completes when sent (iWARP): the bytes follow */
	for (int i = 0; i < TIMEOUT_MS && memcmp(rbuf, sbuf, 4096); i++)
		usleep(1000);
	ck_assert_mem_eq(rbuf, sbuf, 4096);
	ck_assert_int_eq(fi_cntr_set(cc, 10), 0);
	ck_assert_int_eq(fi_cntr_add(cc, 2), 0);
	ck_assert_uint_eq(fi_cntr_read(cc), 12);
	/* a read with a wrong key: an error, not a completion */
	ck_assert_int_eq(fi_read(p.cep, sbuf, 16, fi_mr_desc(smr), 0,
				 (uintptr_t)rbuf, fi_mr_key(rmr) ^ 0x1,
				 &ctx[3]),
			 0);
	ck_assert_int_eq(fi_cntr_wait(cc, 13, TIMEOUT_MS), -FI_EAVAIL);
	ck_assert_uint_eq(fi_cntr_readerr(cc), 1);
	ck_assert_uint_eq(fi_cntr_read(cc), 12);
	/* an enabled endpoint still counts on it */
	ck_assert_int_eq(fi_close(&cc->fid), -FI_EBUSY);
	/* remote events are not counted */
	ck_assert_int_eq(fi_close(&smr->fid), 0);
	ck_assert_int_eq(fi_close(&rmr->fid), 0);
	close_pair(&p);
	ck_assert_int_eq(fi_close(&cc->fid), 0);
	ck_assert_int_eq(fi_close(&sc->fid), 0);
	h->caps |= FI_RMA_EVENT;
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
}
END_TEST

/* A counter binding asks for what we count: not remote events. */
START_TEST(counter_bind_flags)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *c;
	struct fid_ep *ep;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	ck_assert_int_eq(fi_cntr_open(p.domain, &ca, &c, NULL), 0);
	ck_assert_int_eq(fi_endpoint(p.domain, p.info, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &c->fid, FI_REMOTE_WRITE),
			 -FI_EBADFLAGS);
	ck_assert_int_eq(fi_ep_bind(ep, &c->fid, 0), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	ca.wait_obj = FI_WAIT_FD;
	ck_assert_int_eq(fi_cntr_open(p.domain, &ca, &c, NULL) == 0 ?
				 fi_close(&c->fid) : -FI_ENOSYS,
			 -FI_ENOSYS);
	ck_assert_int_eq(fi_close(&c->fid), 0);
	close_pair(&p);
}
END_TEST

/* An endpoint must report both ways it works: a transmit CQ alone on a
 * messaging endpoint is refused at fi_enable (FI_ENOCQ) until a receive
 * CQ or counter joins it. */
START_TEST(enable_needs_both_directions)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *c;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	cq = open_cq(&p, FI_WAIT_NONE);
	ck_assert_int_eq(fi_endpoint(p.domain, p.info, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &p.eq->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), 0);
	ck_assert_int_eq(fi_enable(ep), -FI_ENOCQ);
	ck_assert_int_eq(fi_cntr_open(p.domain, &ca, &c, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &c->fid, FI_RECV), 0);
	ck_assert_int_eq(fi_enable(ep), 0);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	ck_assert_int_eq(fi_close(&c->fid), 0);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	close_pair(&p);
}
END_TEST

/*
 * A bad key: an RDMA Read with it fails at the initiator with FI_EACCES
 * through fi_cq_readerr. (An RDMA Write with it completes locally on
 * iWARP, being on the wire; the target refuses it, which tears the
 * connection down: the target's memory stays untouched.)
 */
START_TEST(rma_remote_access_error)
{
	static char target[1024], back[512];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *tmr, *bmr;
	uint64_t key;
	int ctx;
	struct pair p;
	char buf[64];

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	memset(target, 0x5a, sizeof(target));
	memset(back, 0, sizeof(back));
	tmr = reg(&p, target, sizeof(target), FI_REMOTE_READ);
	bmr = reg(&p, back, sizeof(back), FI_READ);
	key = fi_mr_key(tmr);
	ck_assert_int_eq(fi_read(p.cep, back, 64, fi_mr_desc(bmr), 0,
				 (uintptr_t)target, key ^ 0x1, &ctx), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, &ctx);
	ck_assert_msg(err.err == FI_EACCES, "err %d prov_errno %d", err.err,
		      err.prov_errno);
	ck_assert_uint_eq(err.flags, FI_RMA | FI_READ);
	ck_assert_str_eq(fi_cq_strerror(p.ccq, err.prov_errno, NULL, buf,
					sizeof(buf)),
			 "remote access error");
	ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), -FI_EAGAIN);
	for (size_t i = 0; i < sizeof(back); i++)
		ck_assert_int_eq(back[i], 0);
	fi_close(&tmr->fid);
	fi_close(&bmr->fid);
	close_pair(&p);
}
END_TEST

/* A Write past the end of the region: nothing lands; on iWARP the target
 * tears the connection down (FI_SHUTDOWN), on RoCE the Write fails with
 * FI_EACCES. */
START_TEST(rma_out_of_range)
{
	static char target[1024], src[512];
	struct fi_cq_data_entry e;
	struct fi_eq_cm_entry ev;
	struct fid_mr *tmr, *smr;
	uint32_t event;
	int ctx;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	memset(target, 0x5a, sizeof(target));
	memset(src, 0x11, sizeof(src));
	tmr = reg(&p, target, sizeof(target), FI_REMOTE_WRITE);
	smr = reg(&p, src, sizeof(src), FI_WRITE);
	ck_assert_int_eq(fi_write(p.cep, src, 512, fi_mr_desc(smr), 0,
				  (uintptr_t)target + 1000, fi_mr_key(tmr),
				  &ctx), 0);
	if (strncmp(dev, "rxe", 3)) {
		/* iWARP: complete once on the wire; the target's Terminate
		 * takes the connection down. */
		ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
		ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)),
				 sizeof(ev));
		ck_assert_uint_eq(event, FI_SHUTDOWN);
	} else {
		struct fi_cq_err_entry err = { 0 };

		/* RoCE: the target's NAK fails the Write itself. */
		ck_assert_int_eq(cq_wait(p.ccq, &e), -FI_EAVAIL);
		ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), 1);
		ck_assert_ptr_eq(err.op_context, &ctx);
		ck_assert_int_eq(err.err, FI_EACCES);
	}
	/* and not a byte landed. */
	for (size_t i = 0; i < sizeof(target); i++)
		ck_assert_int_eq(target[i], 0x5a);
	fi_close(&tmr->fid);
	fi_close(&smr->fid);
	close_pair(&p);
}
END_TEST

/* ---- connections -------------------------------------------------------- */

START_TEST(conn_refused)
{
	struct fi_eq_cm_entry ev;
	struct fi_eq_err_entry err;
	struct sockaddr_in nobody;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint32_t event;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	/* The listener's port, closed: nobody listens there any more. */
	nobody = p.srv;
	ck_assert_int_eq(fi_close(&p.pep->fid), 0);
	ck_assert_int_eq(fi_passive_ep(p.fabric, p.info, &p.pep, NULL), 0);
	cq = open_cq(&p, FI_WAIT_NONE);
	ep = open_ep(&p, p.info, cq);
	ck_assert_int_eq(fi_connect(ep, &nobody, NULL, 0), 0);
	ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(p.eq, &err, 0), sizeof(err));
	ck_assert_ptr_eq(err.fid, &ep->fid);
	ck_assert_int_eq(err.err, FI_ECONNREFUSED);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	close_pair(&p);
}
END_TEST

START_TEST(conn_rejected)
{
	union cm_ev ev;
	struct fi_eq_err_entry err;
	uint8_t pdata[64], big[64] = { 0 };
	size_t max = 0, optlen = sizeof(max);
	uint32_t event;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	p.ccq = open_cq(&p, FI_WAIT_NONE);
	p.cep = open_ep(&p, p.info, p.ccq);
	/* IT-API's 32 bytes less the length byte; more is refused. */
	ck_assert_int_eq(fi_getopt(&p.cep->fid, FI_OPT_ENDPOINT,
				   FI_OPT_CM_DATA_SIZE, &max, &optlen), 0);
	ck_assert_uint_eq(max, 31);
	ck_assert_int_eq(fi_connect(p.cep, &p.srv, big, max + 1),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_connect(p.cep, &p.srv, "knock", 6), 0);
	ck_assert_int_ge(eq_wait(&p, &event, &ev, sizeof(ev)),
			 (ssize_t)sizeof(ev.e));
	ck_assert_uint_eq(event, FI_CONNREQ);
	ck_assert_int_eq(fi_reject(p.pep, ev.e.info->handle, big, 32),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_reject(p.pep, ev.e.info->handle, "go away", 8),
			 0);
	fi_freeinfo(ev.e.info);
	ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	err.err_data = pdata;
	err.err_data_size = sizeof(pdata);
	ck_assert_int_eq(fi_eq_readerr(p.eq, &err, 0), sizeof(err));
	ck_assert_ptr_eq(err.fid, &p.cep->fid);
	ck_assert_int_eq(err.err, FI_ECONNREFUSED);
	/* fabtests' fi_cm_data checks err_data_size bytes. */
	ck_assert_uint_eq(err.err_data_size, 8);
	ck_assert_str_eq((char *)pdata, "go away");
	close_pair(&p);
}
END_TEST

/* fi_shutdown: the peer's EQ says FI_SHUTDOWN; its receive flushes. */
START_TEST(conn_shutdown)
{
	static char rbuf[64];
	struct fi_eq_cm_entry ev;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *rmr;
	uint32_t event;
	int ctx, seen = 0;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx), 0);
	ck_assert_int_eq(fi_shutdown(p.cep, 0), 0);
	while (seen != 3) {
		ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)),
				 sizeof(ev));
		ck_assert_uint_eq(event, FI_SHUTDOWN);
		seen |= ev.fid == &p.cep->fid ? 1 : 2;
	}
	ck_assert_int_eq(cq_wait(p.scq, &e), -FI_EAVAIL);
	ck_assert_int_eq(fi_cq_readerr(p.scq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, &ctx);
	ck_assert_int_eq(err.err, FI_ECANCELED);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/* The peer's endpoint goes away without fi_shutdown (as when its process
 * dies and the kernel closes its socket): FI_SHUTDOWN here, the posted
 * receive flushed, a later send refused or failed. */
START_TEST(conn_peer_gone)
{
	static char rbuf[64], sbuf[64];
	struct fi_eq_cm_entry ev;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *rmr, *smr;
	uint32_t event;
	int ctx, ctx_s;
	ssize_t n;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_NONE);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND);
	ck_assert_int_eq(fi_recv(p.cep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx), 0);
	ck_assert_int_eq(fi_close(&p.sep->fid), 0);
	p.sep = NULL;
	ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)), sizeof(ev));
	ck_assert_uint_eq(event, FI_SHUTDOWN);
	ck_assert_ptr_eq(ev.fid, &p.cep->fid);
	ck_assert_int_eq(cq_wait(p.ccq, &e), -FI_EAVAIL);
	ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, &ctx);
	ck_assert_int_eq(err.err, FI_ECANCELED);
	n = fi_send(p.cep, sbuf, 8, fi_mr_desc(smr), 0, &ctx_s);
	if (n == 0) {
		ck_assert_int_eq(cq_wait(p.ccq, &e), -FI_EAVAIL);
		ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), 1);
		ck_assert_ptr_eq(err.op_context, &ctx_s);
	} else {
		ck_assert_int_eq(n, -FI_EOPBADSTATE);
	}
	fi_close(&rmr->fid);
	fi_close(&smr->fid);
	close_pair(&p);
}
END_TEST

/* Under FI_SELECTIVE_COMPLETION, an operation posted without
 * FI_COMPLETION gets no entry when it fails either (libfabric's verbs
 * provider does the same; ofi_rxm, whose fi_inject carries no context,
 * read a flushed one's NULL op_context at MPI_Finalize and crashed): of
 * two receives flushed by the peer's going, only the one that asked says
 * so. */
START_TEST(no_completion_no_error_entry)
{
	static char rbuf[2][64];
	struct fi_eq_cm_entry ev;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fid_mr *rmr;
	struct iovec iov[2];
	void *desc;
	struct fi_msg msg[2];
	uint32_t event;
	int ctx[2];
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	p.ccq_flags = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
	connect_pair(&p, FI_WAIT_NONE);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	desc = fi_mr_desc(rmr);
	for (int i = 0; i < 2; i++) {
		iov[i] = (struct iovec){ rbuf[i], sizeof(rbuf[i]) };
		msg[i] = (struct fi_msg){ .msg_iov = &iov[i], .desc = &desc,
					  .iov_count = 1, .context = &ctx[i] };
	}
	ck_assert_int_eq(fi_recvmsg(p.cep, &msg[0], 0), 0);
	ck_assert_int_eq(fi_recvmsg(p.cep, &msg[1], FI_COMPLETION), 0);
	ck_assert_int_eq(fi_close(&p.sep->fid), 0);
	p.sep = NULL;
	ck_assert_int_eq(eq_wait(&p, &event, &ev, sizeof(ev)), sizeof(ev));
	ck_assert_uint_eq(event, FI_SHUTDOWN);
	ck_assert_int_eq(cq_wait(p.ccq, &e), -FI_EAVAIL);
	ck_assert_int_eq(fi_cq_readerr(p.ccq, &err, 0), 1);
	ck_assert_msg(err.op_context == &ctx[1], "error entry for %s",
		      err.op_context == &ctx[0] ? "the receive that asked "
		      "for no completion" : "an unknown context");
	ck_assert_int_eq(err.err, FI_ECANCELED);
	usleep(20000);
	ck_assert_int_eq(fi_cq_read(p.ccq, &e, 1), -FI_EAGAIN);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/* ---- remote CQ data ------------------------------------------------------ */

static bool dev_has_imm(void)
{
	return strncmp(dev, "rxe", 3) == 0;	/* iWARP has none */
}

static struct fi_info *cq_data_hints(size_t size, bool rx_cq_data)
{
	struct fi_info *h = base_hints();

	h->domain_attr->cq_data_size = size;
	if (rx_cq_data)
		h->mode |= FI_RX_CQ_DATA;
	return h;
}

/* What fi_getinfo answers about remote CQ data: 4 bytes on soft-RoCE to
 * an application that takes FI_RX_CQ_DATA, nothing more; nothing on
 * soft-iWARP. */
START_TEST(cq_data_getinfo)
{
	struct fi_info *h, *info = NULL;

	h = cq_data_hints(0, true);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_uint_eq(info->domain_attr->cq_data_size,
			  dev_has_imm() ? 4 : 0);
	ck_assert_uint_eq(!!(info->mode & FI_RX_CQ_DATA), dev_has_imm());
	ck_assert_uint_eq(!!(info->rx_attr->mode & FI_RX_CQ_DATA),
			  dev_has_imm());
	fi_freeinfo(info);
	fi_freeinfo(h);
	/* Not taking FI_RX_CQ_DATA: no remote CQ data offered ... */
	h = cq_data_hints(0, false);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info), 0);
	ck_assert_uint_eq(info->domain_attr->cq_data_size, 0);
	ck_assert_uint_eq(info->mode & FI_RX_CQ_DATA, 0);
	fi_freeinfo(info);
	fi_freeinfo(h);
	/* ... and asking for it without the mode finds nothing. */
	h = cq_data_hints(4, false);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	h = cq_data_hints(4, true);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 dev_has_imm() ? 0 : -FI_ENODATA);
	if (dev_has_imm())
		fi_freeinfo(info);
	fi_freeinfo(h);
	/* Wider than the transport's 32 bits. */
	h = cq_data_hints(8, true);
	ck_assert_int_eq(fi_getinfo(FIV, NULL, NULL, 0, h, &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
}
END_TEST

/*
 * fi_writedata, fi_writemsg with FI_REMOTE_CQ_DATA, fi_inject_writedata
 * and fi_senddata between two endpoints on soft-RoCE: the Write's bytes
 * land at the target address and nowhere else, it consumes a receive
 * without touching the receive's buffer, and that receive's entry carries
 * the data (its low 32 bits) with FI_REMOTE_CQ_DATA. On soft-iWARP every
 * one is refused before anything is sent.
 */
START_TEST(cq_data_transfers)
{
	static char target[1024], src[512], rbuf[256];
	struct fi_cq_data_entry e;
	struct fid_mr *tmr, *smr, *rmr;
	struct fi_rma_iov rma;
	struct fi_msg_rma m;
	struct iovec iov;
	void *desc;
	uint64_t base;
	int ctx_w, ctx_s, ctx_r, ctx_r2, ctx_r3, ctx_r4;
	struct pair p;

	open_fabric_hints(&p, cq_data_hints(0, true));
	connect_pair(&p, FI_WAIT_NONE);
	memset(target, 0xee, sizeof(target));
	fill(src, sizeof(src), 5);
	memset(rbuf, 0xcc, sizeof(rbuf));
	tmr = reg(&p, target, sizeof(target), FI_REMOTE_WRITE);
	smr = reg(&p, src, sizeof(src), FI_WRITE | FI_SEND);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	base = (uint64_t)(uintptr_t)target;
	if (!dev_has_imm()) {
		ck_assert_int_eq(fi_writedata(p.cep, src, 8, fi_mr_desc(smr),
					      1, 0, base, fi_mr_key(tmr),
					      &ctx_w), -FI_ENOSYS);
		ck_assert_int_eq(fi_senddata(p.cep, src, 8, fi_mr_desc(smr),
					     1, 0, &ctx_s), -FI_ENOSYS);
		ck_assert_int_eq(fi_inject_writedata(p.cep, src, 8, 1, 0,
						     base, fi_mr_key(tmr)),
				 -FI_ENOSYS);
		iov = (struct iovec){ src, 8 };
		desc = fi_mr_desc(smr);
		rma = (struct fi_rma_iov){ base, 8, fi_mr_key(tmr) };
		m = (struct fi_msg_rma){ .msg_iov = &iov, .desc = &desc,
					 .iov_count = 1, .rma_iov = &rma,
					 .rma_iov_count = 1,
					 .context = &ctx_w, .data = 1 };
		ck_assert_int_eq(fi_writemsg(p.cep, &m, FI_REMOTE_CQ_DATA),
				 -FI_EBADFLAGS);
		goto out;
	}

	/* fi_writedata: 300 bytes at target + 16, data wider than 32 bits
	 * (its low 32 bits travel). */
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r), 0);
	ck_assert_int_eq(fi_writedata(p.cep, src, 300, fi_mr_desc(smr),
				      0x1234567890abcdefull, 0, base + 16,
				      fi_mr_key(tmr), &ctx_w), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_w);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_WRITE);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_REMOTE_WRITE |
					   FI_REMOTE_CQ_DATA);
	ck_assert_uint_eq(e.data, 0x90abcdefu);
	ck_assert_uint_eq(e.len, 300);
	ck_assert_ptr_null(e.buf);
	ck_assert_mem_eq(target + 16, src, 300);
	for (size_t i = 0; i < sizeof(target); i++)
		if (i < 16 || i >= 316)
			ck_assert_int_eq((unsigned char)target[i], 0xee);
	for (size_t i = 0; i < sizeof(rbuf); i++)
		ck_assert_int_eq((unsigned char)rbuf[i], 0xcc);

	/* fi_writemsg with FI_REMOTE_CQ_DATA, and fi_inject_writedata (no
	 * completion at the initiator). */
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r2), 0);
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r3), 0);
	iov = (struct iovec){ src + 100, 50 };
	desc = fi_mr_desc(smr);
	rma = (struct fi_rma_iov){ base + 600, 50, fi_mr_key(tmr) };
	m = (struct fi_msg_rma){ .msg_iov = &iov, .desc = &desc,
				 .iov_count = 1, .rma_iov = &rma,
				 .rma_iov_count = 1, .context = &ctx_w,
				 .data = 42 };
	ck_assert_int_eq(fi_writemsg(p.cep, &m, FI_REMOTE_CQ_DATA), 0);
	ck_assert_int_eq(fi_inject_writedata(p.cep, "inj", 3, 43, 0,
					     base + 900, fi_mr_key(tmr)), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_w);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r2);
	ck_assert_uint_eq(e.data, 42);
	ck_assert_uint_eq(e.len, 50);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r3);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_REMOTE_WRITE |
					   FI_REMOTE_CQ_DATA);
	ck_assert_uint_eq(e.data, 43);
	ck_assert_uint_eq(e.len, 3);
	ck_assert_mem_eq(target + 600, src + 100, 50);
	ck_assert_mem_eq(target + 900, "inj", 3);
	ck_assert_int_eq((unsigned char)target[903], 0xee);
	ck_assert_int_eq(fi_cq_read(p.ccq, &e, 1), -FI_EAGAIN);

	/* fi_senddata: the payload in the receive's buffer, with data. */
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r4), 0);
	ck_assert_int_eq(fi_senddata(p.cep, src, 40, fi_mr_desc(smr), 77, 0,
				     &ctx_s), 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_s);
	ck_assert_uint_eq(e.flags, FI_SEND | FI_MSG);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r4);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	ck_assert_uint_eq(e.data, 77);
	ck_assert_uint_eq(e.len, 40);
	ck_assert_ptr_eq(e.buf, rbuf);
	ck_assert_mem_eq(rbuf, src, 40);
	ck_assert_int_eq((unsigned char)rbuf[40], 0xcc);

	/* A plain send after them carries no data. */
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r), 0);
	ck_assert_int_eq(fi_send(p.cep, src, 10, fi_mr_desc(smr), 0, &ctx_s),
			 0);
	ck_assert_int_eq(cq_wait(p.ccq, &e), 1);
	ck_assert_int_eq(cq_wait(p.scq, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG);
	ck_assert_uint_eq(e.data, 0);
out:
	fi_close(&tmr->fid);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/* ---- wait objects ------------------------------------------------------- */

START_TEST(cq_wait_fd)
{
	static char sbuf[128], rbuf[128];
	struct fi_cq_data_entry e;
	struct fid_mr *smr, *rmr;
	struct pollfd pfd = { .events = POLLIN };
	struct fid *fids[1];
	enum fi_wait_obj wo;
	int ctx_r, ctx_s;
	struct pair p;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	connect_pair(&p, FI_WAIT_FD);
	ck_assert_int_eq(fi_control(&p.scq->fid, FI_GETWAITOBJ, &wo), 0);
	ck_assert_int_eq(wo, FI_WAIT_FD);
	ck_assert_int_eq(fi_control(&p.scq->fid, FI_GETWAIT, &pfd.fd), 0);
	ck_assert_int_ge(pfd.fd, 0);
	fids[0] = &p.scq->fid;
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), 0);
	ck_assert_int_eq(fi_cq_sread(p.scq, &e, 1, NULL, 50), -FI_EAGAIN);
	smr = reg(&p, sbuf, sizeof(sbuf), FI_SEND);
	rmr = reg(&p, rbuf, sizeof(rbuf), FI_RECV);
	ck_assert_int_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), fi_mr_desc(rmr),
				 0, &ctx_r), 0);
	strcpy(sbuf, "wake up");
	ck_assert_int_eq(fi_send(p.cep, sbuf, 8, fi_mr_desc(smr), 0, &ctx_s),
			 0);
	ck_assert_int_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_sread(p.scq, &e, 1, NULL, TIMEOUT_MS), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_r);
	ck_assert_str_eq(rbuf, "wake up");
	ck_assert_int_eq(fi_cq_sread(p.ccq, &e, 1, NULL, TIMEOUT_MS), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_s);
	fi_close(&smr->fid);
	fi_close(&rmr->fid);
	close_pair(&p);
}
END_TEST

/* The EQ's wait object: one descriptor (FI_GETWAIT) for connection
 * requests and messages, as ofi_rxm's progress thread polls it; an EQ
 * opened with FI_WAIT_NONE has none. */
START_TEST(eq_wait_fd)
{
	struct fi_eq_attr none = { .wait_obj = FI_WAIT_NONE };
	struct pollfd pfd = { .events = POLLIN };
	struct fid_eq *quiet;
	struct fid *fids[1];
	enum fi_wait_obj wo;
	union cm_ev ev;
	uint32_t event;
	struct pair p;
	int fd;

	open_fabric(&p, FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				FI_MR_PROV_KEY);
	ck_assert_int_eq(fi_eq_open(p.fabric, &none, &quiet, NULL), 0);
	ck_assert_int_eq(fi_control(&quiet->fid, FI_GETWAIT, &fd),
			 -FI_ENODATA);
	ck_assert_int_eq(fi_close(&quiet->fid), 0);
	/* FI_WAIT_UNSPEC is a descriptor here, and says so. */
	ck_assert_int_eq(fi_control(&p.eq->fid, FI_GETWAITOBJ, &wo), 0);
	ck_assert_int_eq(wo, FI_WAIT_FD);
	ck_assert_int_eq(fi_control(&p.eq->fid, FI_GETWAIT, &pfd.fd), 0);
	ck_assert_int_ge(pfd.fd, 0);
	fids[0] = &p.eq->fid;
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), 0);
	ck_assert_int_eq(poll(&pfd, 1, 50), 0);
	p.ccq = open_cq(&p, FI_WAIT_NONE);
	p.cep = open_ep(&p, p.info, p.ccq);
	ck_assert_int_eq(fi_connect(p.cep, &p.srv, "knock", 6), 0);
	/* The request makes it readable ... */
	ck_assert_int_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), -FI_EAGAIN);
	ck_assert_int_ge(fi_eq_read(p.eq, &event, &ev, sizeof(ev), 0),
			 (ssize_t)sizeof(ev.e));
	ck_assert_uint_eq(event, FI_CONNREQ);
	/* ... read, it is quiet again ... */
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(fi_reject(p.pep, ev.e.info->handle, NULL, 0), 0);
	fi_freeinfo(ev.e.info);
	/* ... and the refusal (the message stream) wakes it again. */
	ck_assert_int_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
	ck_assert_int_eq(fi_eq_read(p.eq, &event, &ev, sizeof(ev), 0),
			 -FI_EAVAIL);
	ck_assert_int_eq(fi_trywait(p.fabric, fids, 1), -FI_EAGAIN);
	close_pair(&p);
}
END_TEST

static Suite *fi_suite(void)
{
	Suite *s = suite_create("fi");
	TCase *tc;

#define CASE(name)                                   \
	tc = tcase_create(#name);                    \
	tcase_set_timeout(tc, 30);                   \
	tcase_add_test(tc, name);                    \
	suite_add_tcase(s, tc)
	CASE(getinfo_hints);
	CASE(getinfo_attr_rules);
	CASE(counters);
	CASE(counter_bind_flags);
	CASE(enable_needs_both_directions);
	CASE(mr_register);
	CASE(msg_send_recv);
	CASE(msg_truncated);
	CASE(msg_batch_read);
	CASE(rma_write_read_virt);
	CASE(rma_write_read_offsets);
	CASE(rma_remote_access_error);
	CASE(rma_out_of_range);
	CASE(conn_refused);
	CASE(conn_rejected);
	CASE(conn_shutdown);
	CASE(conn_peer_gone);
	CASE(no_completion_no_error_entry);
	CASE(cq_data_getinfo);
	CASE(cq_data_transfers);
	CASE(cq_wait_fd);
	CASE(eq_wait_fd);
#undef CASE
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (getenv("CHECK_FI_DEVICE"))
		dev = getenv("CHECK_FI_DEVICE");
	/* Before libfabric reads them (its first fi_getinfo). */
	setenv("FI_PROVIDER_PATH", FI_PROVIDER_DIR, 1);
	setenv("HOSTRDMA_PROVIDER_PATH",
	       SIW_PROVIDER_DIR ":" RXE_PROVIDER_DIR, 1);
	setenv("HOSTRDMA_DEVICES", dev, 1);
	setenv("HOSTRDMA_CONF", "", 1);
	/* No host's hostrdma-kald: soft-RoCE embedded, as the test wants. */
	setenv("HOSTRDMA_KALD_SOCKET", "", 1);
	setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", 1);
	unsetenv("FI_PROVIDER");
	sr = srunner_create(fi_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
