/* SPDX-License-Identifier: MIT */
/* testprov.h - what the files of the test provider share. */
#ifndef TESTPROV_H
#define TESTPROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "rnicpi/rnicpi_util.h"

#define TP_MAX_QP_WR 256
#define TP_MAX_SGE 4
#define TP_MAX_CQE 65536
#define TP_MAX_MSG (1u << 20)
#define TP_GID_TBL_LEN 16
#define TP_MAX_ADDRS TP_GID_TBL_LEN

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
	bool complete_twice;	/* option: every send completion twice */
	bool kernel_pins;	/* option: report RNICPI_DEV_CAP_KERNEL_PINS */
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

/* One lock for all queue state and data movement: a delivery touches two
 * QPs, their CQs and MRs of two devices; tests need correctness, not
 * parallelism. Upcalls are made without it (rnicpi.h). CQ rings have their
 * own lock. */
extern pthread_mutex_t tp_lock;

#define to_tp_dev(d) container_of(d, struct tp_device, base)
#define to_tp_mr(m) container_of(m, struct tp_mr, base)
#define to_tp_mw(m) container_of(m, struct tp_mw, base)
#define to_tp_cq(c) container_of(c, struct tp_cq, base)
#define to_tp_srq(s) container_of(s, struct tp_srq, base)
#define to_tp_qp(q) container_of(q, struct tp_qp, base)
#define to_tp_ah(a) container_of(a, struct tp_ah, base)

static inline struct tp_device *pd_dev(struct rnicpi_pd *pd)
{
	return to_tp_dev(pd->device);
}

/* testprov_mem.c: PD, MR, MW, CQ, AH. */
int tp_alloc_pd(struct rnicpi_device *d, struct rnicpi_pd **out);
int tp_dealloc_pd(struct rnicpi_pd *pd);
int tp_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
	      uint64_t iova, unsigned int access,
	      struct rnicpi_mr **out);
int tp_rereg_mr(struct rnicpi_mr *m, unsigned int flags,
		struct rnicpi_pd *pd, void *addr, uint64_t length,
		uint64_t iova, unsigned int access);
int tp_dereg_mr(struct rnicpi_mr *m);
int tp_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		struct rnicpi_mw **out);
int tp_dealloc_mw(struct rnicpi_mw *m);
struct tp_mr *tp_find_mr(struct tp_device *dev, struct rnicpi_pd *pd,
			 uint32_t key);
char *tp_mr_range(struct tp_mr *mr, uint64_t addr, uint64_t len,
		  unsigned int need);
int tp_create_cq(struct rnicpi_device *d,
		 const struct rnicpi_cq_init_attr *attr,
		 struct rnicpi_cq **out);
int tp_destroy_cq(struct rnicpi_cq *c);
int tp_poll_cq(struct rnicpi_cq *c, int n, struct rnicpi_wc *wc);
int tp_req_notify_cq(struct rnicpi_cq *c, int solicited_only);
int tp_ack_cq_event(struct rnicpi_cq *c);
void tp_cq_push(struct tp_cq *cq, const struct rnicpi_wc *wc,
		bool solicited);
int tp_create_ah(struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
		 struct rnicpi_ah **out);
int tp_destroy_ah(struct rnicpi_ah *ah);

/* testprov_qp.c: SRQ, QP, the data path. */
int tp_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
		  struct rnicpi_srq **out);
int tp_modify_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr,
		  unsigned int mask);
int tp_query_srq(struct rnicpi_srq *s, struct rnicpi_srq_attr *attr);
int tp_destroy_srq(struct rnicpi_srq *s);
int tp_post_srq_recv(struct rnicpi_srq *s,
		     const struct rnicpi_recv_wr *wr,
		     const struct rnicpi_recv_wr **bad);
int tp_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		 struct rnicpi_qp **out);
int tp_modify_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		 unsigned int mask);
int tp_query_qp(struct rnicpi_qp *q, struct rnicpi_qp_attr *attr,
		unsigned int mask, struct rnicpi_qp_init_attr *init);
int tp_destroy_qp(struct rnicpi_qp *q);
int tp_post_send(struct rnicpi_qp *q, const struct rnicpi_send_wr *wr,
		 const struct rnicpi_send_wr **bad);
int tp_post_recv(struct rnicpi_qp *q, const struct rnicpi_recv_wr *wr,
		 const struct rnicpi_recv_wr **bad);

#endif
