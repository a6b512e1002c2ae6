/* SPDX-License-Identifier: MIT */
/*
 * A small "core" for the soft-iWARP tests: creates siw devices on lo,
 * records their upcalls, connects QP pairs over 127.0.0.1 through the
 * provider's own iw_connect / iw_take_request / conn_accept hooks, and
 * offers buffers with guard bytes. Every wait is bounded.
 */
#ifndef TESTS_TESTUTIL_SIW_H
#define TESTS_TESTUTIL_SIW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "rnicpi/rnicpi.h"

#define H_MAX_EVENTS 64
#define H_WAIT_MS 20000

struct h_conn_ev {
	struct rnicpi_conn_event ev;
	uint8_t pdata[512];
};

struct h_dev {
	struct rnicpi_device *dev;
	const struct rnicpi_device_ops *ops;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct h_conn_ev conn[H_MAX_EVENTS];
	int n_conn;
	struct rnicpi_async_event async[H_MAX_EVENTS];
	int n_async;
	/* Called for each connection event before it is recorded, on the
	 * thread that delivers it, with no harness lock held: a test acts
	 * from inside the upcall as a core would. */
	void (*conn_hook)(struct h_dev *d, const struct rnicpi_conn_event *ev);
	void *hook_arg;
};

/* Create a siw device on lo with @opts ({key, value} pairs, NULL-ended);
 * returns NULL and sets *err on failure. */
struct h_dev *h_dev_create(const struct rnicpi_option *opts, int *err);
void h_dev_destroy(struct h_dev *d);

/* Wait for the first connection event of @type about @obj (a QP or conn,
 * NULL = any) not yet consumed; copies it out. false on time-out. */
bool h_wait_conn(struct h_dev *d, enum rnicpi_conn_event_type type,
		 const void *obj, struct h_conn_ev *out, int timeout_ms);
/* Wait for an async event of @type about @qp. */
bool h_wait_async(struct h_dev *d, enum rnicpi_event_type type,
		  const struct rnicpi_qp *qp, struct rnicpi_async_event *out,
		  int timeout_ms);

struct h_side {
	struct h_dev *d;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *scq, *rcq;
	struct rnicpi_srq *srq;
	struct rnicpi_qp *qp;
};

/* PD, CQs and an RC QP; @srq_wr > 0 gives the QP an SRQ of that size. */
void h_side_init(struct h_side *s, struct h_dev *d, uint32_t srq_wr);
void h_side_fini(struct h_side *s);

/* A connected TCP pair over 127.0.0.1. */
void h_tcp_pair(int *client, int *server);

/* Connect @a (initiator) to @b (responder); both must see ESTABLISHED
 * unless @expect_fail. The request/reply private data and the events are
 * returned when asked for. */
struct h_connect {
	struct rnicpi_conn_param ip, rp;
	struct h_conn_ev req, est_a, est_b;
	bool reject;		/* responder calls conn_reject */
};
int h_connect(struct h_side *a, struct h_side *b, struct h_connect *c);

/* A buffer of @len bytes between @guard guard bytes of 0xA5. */
struct h_buf {
	uint8_t *base;
	uint8_t *p;
	size_t len, guard;
	struct rnicpi_mr *mr;
};

void h_buf_alloc(struct h_buf *b, size_t len, size_t guard);
void h_buf_reg(struct h_buf *b, struct h_side *s, unsigned int access);
void h_buf_free(struct h_buf *b);
bool h_buf_guards_ok(const struct h_buf *b);
void h_buf_fill(struct h_buf *b, uint32_t seed);
bool h_buf_check(const struct h_buf *b, size_t off, size_t len,
		 uint32_t seed, size_t seed_off);

/* Poll @cq until one completion arrives; false on time-out. */
bool h_poll(struct h_side *s, struct rnicpi_cq *cq, struct rnicpi_wc *wc,
	    int timeout_ms);

/* Post one receive / send of a single SGE. */
void h_post_recv(struct h_side *s, struct h_buf *b, size_t off, size_t len,
		 uint64_t wr_id);
int h_post_send(struct h_side *s, enum rnicpi_wr_opcode op,
		struct h_buf *b, size_t off, size_t len, uint64_t wr_id,
		unsigned int flags, uint64_t raddr, uint32_t rkey);

/* Guard bytes around test buffers, and the access they are registered
 * with. */
#define H_GUARD 64
#define H_RW (RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE | \
	      RNICPI_ACCESS_REMOTE_READ)

/* Two devices with a side each, a (initiator) and b; @srq_b > 0 gives b
 * an SRQ. */
struct h_pair {
	struct h_dev *da, *db;
	struct h_side a, b;
	struct h_connect c;
};

void h_pair_up_opts(struct h_pair *p, const struct rnicpi_option *oa,
		    const struct rnicpi_option *ob, uint32_t srq_b);
void h_pair_connect(struct h_pair *p);
void h_pair_down(struct h_pair *p);
/* A connected pair with @s (at a, filled from @seed) and @d (at b), @len
 * bytes each, registered; h_pair_down_bufs() undoes it. */
void h_pair_up_bufs(struct h_pair *p, const struct rnicpi_option *oa,
		    const struct rnicpi_option *ob, struct h_buf *s,
		    struct h_buf *d, size_t len, uint32_t seed);
void h_pair_down_bufs(struct h_pair *p, struct h_buf *s, struct h_buf *d);
/* The next completion on @cq is @wr_id with @st and @op (and @len bytes
 * when it succeeded); fails the test otherwise. */
void h_expect_wc(struct h_side *s, struct rnicpi_cq *cq, uint64_t wr_id,
		 enum rnicpi_wc_status st, enum rnicpi_wc_opcode op,
		 uint32_t len);

/* A progress thread held in an upcall (h_park_progress) until
 * h_unpark(); initialise lock and cond, the rest zero. */
struct h_park {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const void *conn;
	bool parked, release;
};

/* Holds @d's progress thread (the device needs a short mpa_timeout_ms);
 * returns a socket to close after h_unpark(). */
int h_park_progress(struct h_dev *d, struct h_park *pk);
void h_unpark(struct h_park *pk);

#endif
