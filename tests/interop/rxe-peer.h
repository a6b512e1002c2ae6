/* SPDX-License-Identifier: MIT */
/* rxe-peer's pieces shared between its ping-pong and perftest modes. */
#ifndef TESTS_INTEROP_RXE_PEER_H
#define TESTS_INTEROP_RXE_PEER_H

#include "vp/rxe/rxe.h"

struct rxe_peer {
	struct rnicpi_device *dev;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *cq;
	struct rnicpi_qp *qp;	/* RC, in INIT */
	struct rnicpi_mr *mr;
	uint8_t *buf;
	union rnicpi_gid gid;
	uint8_t gid_index;
	enum rnicpi_mtu mtu;
};

enum rxe_perf_test {
	RXE_PERF_NONE = 0,
	RXE_PERF_WRITE,
	RXE_PERF_READ,
	RXE_PERF_SEND,
	RXE_PERF_ATOMIC, /* FETCH_AND_ADD, as ib_atomic_bw by default */
};

/* Run one perftest test as client of @server, or as server when @server
 * is NULL; 0 on success. */
int rxe_perftest(struct rxe_peer *pp, const char *server,
		 enum rxe_perf_test test, unsigned int iters,
		 unsigned int size);

/* Send a PerfMgt Get(ClassPortInfo) from our QP1 to the peer's QP1 and
 * check its GetResp; 0 on success. */
int rxe_gsi_probe(struct rnicpi_device *dev, uint8_t gid_index,
		  const union rnicpi_gid *dgid);

#endif
