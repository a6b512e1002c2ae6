/* SPDX-License-Identifier: MIT */
/*
 * hfi.h - the hostrdma libfabric provider's objects (fi/).
 *
 * The provider is an IT-API application: it includes it_api.h and
 * libfabric's headers, nothing else of ours. The mapping:
 *
 *   fabric   one IT-API interface adapter (IA), named after the device
 *   domain   a protection zone (PZ) on the fabric's IA, same name
 *   EQ       two EVDs of the fabric's IA: CM requests and CM messages
 *   CQ       one DTO EVD
 *   MR       an LMR; its RMR context is the key
 *   PEP      an IT-API listener
 *   EP       an RC endpoint, created at fi_enable
 */
#ifndef HFI_H
#define HFI_H

#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"
#include "it_ext.h"

#include <glib.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/providers/fi_prov.h>

#define HFI_PROV_NAME "hostrdma"
#define HFI_PROV_VERSION FI_VERSION(0, 1)
#define HFI_API_VERSION FI_VERSION(1, 17)

/* What we need of the application's memory registrations. */
#define HFI_MR_REQUIRED (FI_MR_LOCAL | FI_MR_PROV_KEY)
#define HFI_MR_OFFERED                                                   \
	(FI_MR_LOCAL | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)

#define HFI_CAPS                                                         \
	(FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |     \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM)
/* An RC connection's ordering, as on any reliable-connected QP: sends,
 * writes and reads start in order; a later write or send may overtake a
 * read (its response comes later): no FI_ORDER_WAR, FI_ORDER_SAR. */
#define HFI_MSG_ORDER                                                    \
	(FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW |     \
	 FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS | FI_ORDER_RMA_RAR | \
	 FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW)
/* Atomic orderings asked of a provider without atomics hold vacuously:
 * not refused, not reported. */
#define HFI_MSG_ORDER_HINTS                                              \
	(HFI_MSG_ORDER | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |     \
	 FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
/* IT-API events taken at once by a CQ read */
#define HFI_CQ_BATCH 16
#define HFI_TX_SIZE 256
#define HFI_RX_SIZE 256
#define HFI_IOV_LIMIT 4
#define HFI_INJECT_SIZE 64
/* IT-API carries IT_MAX_PRIV_DATA bytes of private data and not the
 * length the peer gave: its first byte is the length (as libfabric's
 * verbs provider frames its CM data), the rest the application's. */
#define HFI_CM_DATA_SIZE (IT_MAX_PRIV_DATA - 1)
/* An operation flag of ours (FI_PROV_SPECIFIC bits): no entry on
 * success, as fi_inject wants. */
#define FI_HFI_NO_COMPLETION (1ULL << 60)

extern struct fi_provider hfi_prov;

struct hfi_fabric {
	struct fid_fabric fabric_fid;
	it_ia_handle_t ia;
	char *name;
	it_transport_type_t transport;
};

struct hfi_domain {
	struct fid_domain domain_fid;
	struct hfi_fabric *fab;
	it_pz_handle_t pz;
	bool virt_addr;		/* FI_MR_VIRT_ADDR: absolute addresses */
};

struct hfi_mr {
	struct fid_mr mr_fid;
	struct hfi_domain *dom;
	it_lmr_handle_t lmr;
	void *addr;
	bool relative;		/* IT_ADDR_MODE_RELATIVE: offsets */
};

/* A counter: completions of the endpoints bound to it, counted where
 * they are reaped (a bound CQ's fi_cq_read, or the counter's own read
 * and wait, which reap the endpoints' EVDs; fi_cntr.c). */
struct hfi_cntr {
	struct fid_cntr cntr_fid;
	struct hfi_domain *dom;
	GMutex lock;
	uint64_t value, err;
	GList *eps;		/* struct hfi_ep whose dummy_evd it reaps */
};

struct hfi_cq {
	struct fid_cq cq_fid;
	struct hfi_domain *dom;
	it_evd_handle_t evd;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	int fd;
	GMutex lock;
	GQueue errors;		/* struct hfi_cq_err: fi_cq_readerr's */
	/* entries a counter's progress reaped (struct fi_cq_tagged_entry),
	 * handed out before the EVD's */
	GQueue pending;
};

struct hfi_eq {
	struct fid_eq eq_fid;
	struct hfi_fabric *fab;
	it_evd_handle_t req_evd;	/* IT_CM_REQ_EVENT_STREAM */
	it_evd_handle_t msg_evd;	/* IT_CM_MSG_EVENT_STREAM */
	int req_fd, msg_fd;
	int wait_fd;		/* epoll of both: FI_GETWAIT's, -1 if none */
	GMutex lock;
	GQueue errors;		/* struct hfi_eq_err */
	GList *peps;		/* struct hfi_pep bound to this EQ */
	struct hfi_eq_err *last_err;	/* err_data of the last readerr */
};

/* A connection request handed to the application in fi_info->handle. */
struct hfi_connreq {
	struct fid fid;
	it_cn_est_identifier_t cn_est_id;
};

struct hfi_pep {
	struct fid_pep pep_fid;
	struct hfi_fabric *fab;
	struct hfi_eq *eq;
	struct fi_info *info;
	struct sockaddr_storage src;
	it_listen_handle_t listener;
};

/* One posted operation; the IT-API cookie points to it. */
struct hfi_req {
	struct hfi_ep *ep;
	void *context;
	void *buf;
	uint64_t flags;		/* FI_SEND|FI_MSG, ... */
	int inject_slot;	/* >= 0: a slot of the inject pool */
	bool report;		/* a completion entry on success */
	struct hfi_req *next_free;	/* on the endpoint's free list */
};

/* Completed requests an endpoint keeps for its next posts */
#define HFI_REQ_CACHE 512

struct hfi_ep {
	struct fid_ep ep_fid;
	struct hfi_domain *dom;
	struct fi_info *info;
	struct hfi_eq *eq;
	struct hfi_cq *tx_cq, *rx_cq;
	uint64_t tx_flags, rx_flags;	/* bind flags (FI_SELECTIVE_...) */
	it_evd_handle_t dummy_evd;	/* for a direction without a CQ */
	/* fi_ep_bind counters: FI_SEND, FI_RECV, FI_WRITE, FI_READ */
	struct hfi_cntr *send_cntr, *recv_cntr, *write_cntr, *read_cntr;
	it_ep_handle_t ep;
	struct hfi_connreq *connreq;	/* passive side: from fi_info */
	struct sockaddr_storage src, dst;
	bool enabled;
	/* fi_inject: copies into a registered pool */
	char *inject_buf;
	it_lmr_handle_t inject_lmr;
	GMutex lock;
	uint64_t inject_free;	/* bit i: slot i is free */
	/* Requests posted and not yet seen by a CQ: a closed endpoint's
	 * memory stays until the last one (their cookies point to it). */
	unsigned int outstanding;
	bool closed;
	/* Requests done with, for the next posts: a malloc and a free per
	 * operation were a tenth of the provider's own instructions on a
	 * ping-pong's round trip. */
	struct hfi_req *free_reqs;
	unsigned int n_free;
};

/* fi_prov.c */
int hfi_status_to_fi(it_status_t st);
int hfi_sockaddr_to_net(const struct sockaddr *sa, it_net_addr_t *na,
			uint16_t *port_be);
size_t hfi_sockaddr_len(const struct sockaddr *sa);
int hfi_ia_address(it_ia_handle_t ia, int family,
		   struct sockaddr_storage *ss);

int hfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int hfi_no_control(struct fid *fid, int command, void *arg);
/* fi_getopt/fi_setopt of passive and active endpoints (fi_eq.c): only
 * FI_OPT_CM_DATA_SIZE, read-only. */
int hfi_cm_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen);
int hfi_cm_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen);
/* CM data framed for IT-API: @out gets the length byte and @param; the
 * bytes to hand IT-API. */
size_t hfi_cm_pack(unsigned char out[IT_MAX_PRIV_DATA], const void *param,
		   size_t paramlen);
/* The application's bytes in IT-API private data @pd (NULL: none
 * present): their length, *data pointing into @pd. */
size_t hfi_cm_unpack(const unsigned char *pd, const unsigned char **data);
int hfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context);

/* fi_domain.c */
int hfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);

/* One DTO completion reaped, @cq NULL when no CQ takes it: counted,
 * the request done; 1 an entry at @out, 0 none, -FI_EAVAIL an error
 * queued on @cq. */
int hfi_dto_reap(struct hfi_cq *cq, const it_event_t *ev, void *out);
/* @ev of @cq's EVD reaped by someone else (a counter): kept for the CQ. */
void hfi_cq_stash(struct hfi_cq *cq, const it_event_t *ev);
/* fi_control of a CQ or EQ whose wait descriptor is @fd (-1: none):
 * FI_GETWAITOBJ, FI_GETWAIT. */
int hfi_wait_control(int fd, int command, void *arg);

/* fi_cntr.c */
int hfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
void hfi_cntr_count(struct hfi_ep *ep, uint64_t flags, bool ok);
/* @ep's dummy_evd is reaped by @c (ep_enable) / no more (ep close). */
void hfi_cntr_watch(struct hfi_cntr *c, struct hfi_ep *ep);
void hfi_cntr_forget(struct hfi_ep *ep);

/* fi_eq.c */
int hfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
/* fi_trywait on an EQ: 0 when it has nothing to read, else -FI_EAGAIN. */
int hfi_eq_idle(struct hfi_eq *eq);
int hfi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
int hfi_ep_from_it(it_ep_handle_t ep, struct hfi_ep **out);
void hfi_ep_req_done(struct hfi_ep *ep, struct hfi_req *req);

/* fi_ep.c */
int hfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);

#endif /* HFI_H */
