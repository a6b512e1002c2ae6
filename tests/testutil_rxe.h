/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the rxe suites: a soft-RoCE device on the loopback
 * interface driven through its rnicpi ops exactly as the core does, RC
 * QP pairs connected in-process, completion waits, async event capture.
 */
#ifndef TESTS_TESTUTIL_RXE_H
#define TESTS_TESTUTIL_RXE_H

#include <stdbool.h>
#include <stdint.h>

#include "rnicpi/rnicpi.h"
#include "vp/rxe/rxe.h"

#define RXE_T_MAX_EVENTS 64

struct rxe_t_dev {
	struct rnicpi_device *dev;
	const struct rnicpi_device_ops *ops;
	struct rnicpi_pd *pd;
};

/* One side of a connection: QP, its CQs. */
struct rxe_t_side {
	struct rnicpi_qp *qp;
	struct rnicpi_cq *scq;
	struct rnicpi_cq *rcq;
};

struct rxe_t_conn_opts {
	enum rnicpi_mtu mtu;	/* 0: the port's */
	uint32_t psn[2];	/* initial send PSN of side 0 and 1 */
	uint8_t sgid_index;	/* 0 = 127.0.0.1, 1 = ::1 */
	uint8_t timeout;	/* 0: 14 */
	uint8_t retry_cnt;	/* 0: 7 */
	uint8_t rnr_retry;	/* 0: 7, use 8 for "really 0" */
	uint8_t min_rnr_timer;	/* 0: 1 (10 us) */
	uint32_t max_send_wr;	/* 0: 256 */
	uint32_t max_recv_wr;	/* 0: 256 */
};

/*
 * Move the calling thread into a new network namespace with lo up, so the
 * test owns UDP port 4791 there (nothing else on the machine, not another
 * test run nor the kernel's rdma_rxe, can collide with it). Returns the
 * old namespace's fd for rxe_t_netns_leave(), or -errno (-EPERM without
 * CAP_SYS_ADMIN: the test then shares the machine's namespace).
 */
int rxe_t_netns_enter(void);
void rxe_t_netns_leave(int old_fd);
/* Check checked-fixture pair doing the above around each test. */
void rxe_t_netns_setup(void);
void rxe_t_netns_teardown(void);

/* Events the core would have received. */
extern struct rnicpi_async_event rxe_t_events[RXE_T_MAX_EVENTS];
extern unsigned int rxe_t_n_events;
extern const struct rnicpi_core_ops rxe_t_core_ops;
void rxe_t_events_reset(void);
/* Whether an event of @type arrived for @qp (NULL: any element), waiting
 * for it up to 10 s (a safety net; events follow the packet that caused
 * them by microseconds). */
bool rxe_t_has_event(enum rnicpi_event_type type, struct rnicpi_qp *qp);
/* Events delivered on the calling thread from here on are counted (a
 * consumer's own calls must not run upcalls: the caller may hold locks
 * of the layers above); returns the count since the last call. */
unsigned int rxe_t_events_on_this_thread(void);

/* Fill @nd for "lo" with 127.0.0.1 and ::1 (storage in @addrs[2]). */
void rxe_t_lo_netdev(struct rnicpi_netdev *nd,
		     struct sockaddr_storage addrs[2]);
/* Create a device on lo with @options (NULL-terminated list or NULL);
 * HOSTRDMA_TEST_RXE_POLL_RX=0 or 1 in the environment sets poll_rx
 * unless @options name it. */
int rxe_t_dev_open(struct rxe_t_dev *t, const struct rnicpi_option *options);
/* Fixtures: rxe_t_netns_setup(), and devices opened without options get
 * "direct=2" (every datagram peeked at, expected payloads read straight
 * into place: rxe_t_direct), or "direct=0" (every payload copied from
 * the receive buffer: rxe_t_copy), until the teardown. Without either,
 * devices have the provider's default (direct=1: peeking while bulk data
 * comes). */
extern bool rxe_t_direct, rxe_t_copy;
void rxe_t_direct_setup(void);
void rxe_t_direct_teardown(void);
void rxe_t_copy_setup(void);
void rxe_t_copy_teardown(void);
void rxe_t_dev_close(struct rxe_t_dev *t);

/* Create an RC QP on @t with its own CQs. */
int rxe_t_side_create(struct rxe_t_dev *t, struct rxe_t_side *s,
		      enum rnicpi_qp_type type,
		      const struct rxe_t_conn_opts *o);
void rxe_t_side_destroy(struct rxe_t_dev *t, struct rxe_t_side *s);
/* RESET -> INIT -> RTR -> RTS for both, each aimed at the other. */
int rxe_t_connect(struct rxe_t_dev *t, struct rxe_t_side *a,
		  struct rxe_t_side *b, const struct rxe_t_conn_opts *o);
/* Bring one RC QP to RTS towards @dgid / @dqpn. */
int rxe_t_connect_one(struct rxe_t_dev *t, struct rxe_t_side *s,
		      const union rnicpi_gid *dgid, uint32_t dqpn,
		      uint32_t sq_psn, uint32_t rq_psn,
		      const struct rxe_t_conn_opts *o);

/* Wait (up to 60 s, a safety net) for one completion on @cq. */
int rxe_t_wait_wc(struct rxe_t_dev *t, struct rnicpi_cq *cq,
		  struct rnicpi_wc *wc);

void rxe_t_gid_v4(union rnicpi_gid *gid, const char *ipv4);
void rxe_t_gid_v6(union rnicpi_gid *gid, const char *ipv6);

/* ------------------------------------------------------------------ */
/* Guarded buffers, connected pairs, posting and waiting (ck_assert on  */
/* every failure)                                                      */
/* ------------------------------------------------------------------ */

#define RXE_T_GUARD 64
#define RXE_T_GUARD_BYTE 0xee

/* A buffer with RXE_T_GUARD bytes before and after, registered whole. */
struct rxe_t_buf {
	uint8_t *mem;
	size_t size;
	struct rnicpi_mr *mr;
};

#define RXE_T_ALL_ACCESS                                          \
	(RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE | \
	 RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_ATOMIC)

void rxe_t_buf_alloc(struct rxe_t_dev *t, struct rxe_t_buf *b, size_t size,
		uint8_t fill, unsigned int access);
void rxe_t_buf_pattern(struct rxe_t_buf *b, uint32_t seed);
uint64_t rxe_t_buf_va(const struct rxe_t_buf *b);
void rxe_t_buf_free(struct rxe_t_dev *t, struct rxe_t_buf *b);
/* The RXE_T_GUARD bytes on both sides are untouched. */
void rxe_t_assert_guards(const struct rxe_t_buf *b);

/* Two RC QPs on one device, connected to each other. */
struct rxe_t_pair {
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
};

void rxe_t_pair_open_opts(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o,
		    const struct rnicpi_option *options);
void rxe_t_pair_open(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o);
/* New QPs on the same device (the old ones are in ERR). */
void rxe_t_pair_renew(struct rxe_t_pair *p, const struct rxe_t_conn_opts *o);
void rxe_t_pair_close(struct rxe_t_pair *p);
/* poll_rx on: has the progress thread leave the receive sockets to
 * the test thread's polls (a poll of a's empty receive CQ, then a
 * datagram it reads), and asserts that it did. Polls within the lease
 * keep them there. */
void rxe_t_park_for_poller(struct rxe_t_pair *p);
void rxe_t_post_recv(struct rxe_t_pair *p, struct rxe_t_side *s,
		     struct rxe_t_buf *b, uint64_t wr_id);
/* Post @wr signalled, with @src (if any) as its one SGE. */
void rxe_t_post(struct rxe_t_dev *t, struct rxe_t_side *s,
	      struct rnicpi_send_wr *wr, struct rxe_t_buf *src);
/* The next completion on @cq is @wr_id with @status. */
void rxe_t_expect_wc(struct rxe_t_dev *t, struct rnicpi_cq *cq, uint64_t wr_id,
	       enum rnicpi_wc_status status, struct rnicpi_wc *out);
void rxe_t_post_bind(struct rxe_t_pair *p, struct rxe_t_side *s, uint64_t wr_id,
	       struct rnicpi_mw *mw, uint32_t rkey, struct rxe_t_buf *b,
	       uint64_t off, uint64_t len, unsigned int access);
void rxe_t_post_rdma(struct rxe_t_pair *p, struct rxe_t_side *s, uint64_t wr_id,
		     enum rnicpi_wr_opcode op, struct rxe_t_buf *local,
		     uint64_t remote, uint32_t rkey);

#endif
