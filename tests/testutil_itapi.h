/* SPDX-License-Identifier: MIT */
/* Helpers for the IT-API suites: environments (the soft-iWARP provider on
 * lo, or the in-memory test provider), an IA with the usual EVDs, endpoint
 * pairs, and assertions that print status names. */
#ifndef TESTS_TESTUTIL_ITAPI_H
#define TESTS_TESTUTIL_ITAPI_H

#include <stdbool.h>
#include <stdint.h>

#include "it_api.h"
#include "tests/testutil.h"

/* Every wait in these suites is bounded (microseconds). */
#define IT_WAIT_US (20ull * 1000 * 1000)

const char *itapi_status_name(it_status_t st);
const char *itapi_event_name(it_event_type_t ev);

#define ck_assert_it(expr, want)                                            \
	do {                                                                \
		it_status_t ck_it_st_ = (expr);                             \
		ck_assert_msg(ck_it_st_ == (want),                          \
			      "%s returned %s, expected %s", #expr,         \
			      itapi_status_name(ck_it_st_),                 \
			      itapi_status_name(want));                     \
	} while (0)
#define ck_assert_it_ok(expr) ck_assert_it(expr, IT_SUCCESS)

#define ck_assert_event(ev, want)                                           \
	ck_assert_msg((ev)->event_number == (want), "event %s, expected %s", \
		      itapi_event_name((ev)->event_number),                 \
		      itapi_event_name(want))

/* Environments: HOSTRDMA_* set so that exactly one device exists. */
void it_setup_siw(void);	/* siw_lo, short time-outs */
void it_setup_testprov(void);	/* test_lo */
void it_setup_rxe(void);	/* rxe_lo: soft-RoCE, the IB CM over QP1 */
bool it_env_is_rxe(void);
void it_teardown(void);
extern const char *it_dev_name;	/* the device of the environment */

/* An IA with a PZ, DTO SEVD, CM SEVDs and the async EVDs. */
struct it_fix {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto;	/* requests and receives, 256 entries */
	it_evd_handle_t req;	/* CM requests */
	it_evd_handle_t msg;	/* CM messages */
	it_evd_handle_t aff;
};

void it_fix_open(struct it_fix *f);
void it_fix_close(struct it_fix *f);

/* Endpoint attributes: @dtos WRs each way, 4 segments, IRD/ORD 4 when the
 * IA has RDMA Read (siw), 0 on the test provider. */
void it_ep_attr_default(struct it_fix *f, it_ep_attributes_t *a, size_t dtos);
it_ep_handle_t it_ep_new(struct it_fix *f);

/* The side a case's passive (second) endpoint lives on: @f itself in the
 * tree's suites; in the conformance runner given a second -d, a fixture
 * of its own on that device (another IA, PZ and EVDs), opened and closed
 * with @f. Its endpoints' events come on its EVDs, not @f's. */
struct it_fix *it_fix_peer(struct it_fix *f);
/* it_ep_new(it_fix_peer(@f)). */
it_ep_handle_t it_ep_new_peer(struct it_fix *f);

/* Dequeue with waiting: the next event of @evd within IT_WAIT_US. */
void it_wait_event(it_evd_handle_t evd, it_event_t *ev);
/* Like it_wait_event but false on time-out after @us. */
bool it_wait_event_for(it_evd_handle_t evd, uint64_t us, it_event_t *ev);

/* Connect @a (on @f) to a listener on it_fix_peer(@f)'s IA and accept
 * with @b (an endpoint of that IA). Both ESTABLISHED events are consumed,
 * each from its own side's CM message EVD. */
void it_connect_pair(struct it_fix *f, it_ep_handle_t a, it_ep_handle_t b);

/* The path to 127.0.0.1 through the IA (it_get_pathinfo). */
void it_loopback_path(struct it_fix *f, it_path_t *path);
/* The address of that path, network order: 127.0.0.1 here, the device's
 * own address in the conformance runner. */
uint32_t it_loopback_ipv4(void);
/* Whether the environment's IA should claim ird_ord_suppressible: siw_lo
 * does; in the conformance runner, whatever the device claims (the cases
 * then check that the flags are refused where it does not). */
bool it_env_ird_ord_suppressible(void);

/* test provider: make @a and @b "connected" to each other (its DEST_QPN
 * convention) and mark both endpoints CONNECTED. */
void it_testprov_pair(it_ep_handle_t a, it_ep_handle_t b);

/* The device limits the cases test against. In the tree: the IA's
 * device attributes. In the conformance runner, which has IT-API alone:
 * the largest Send/RDMA message from it_ia_query's spigot, IRD, ORD and
 * segments found by creating endpoints as an application would, and for
 * the queue depths (IT-API has no query, and finding them means creating
 * queues of the device's largest size) a count no device has. */
struct it_dev_limits {
	uint64_t max_msg_size;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_qp_rd_atom;	/* IRD */
	uint32_t max_qp_init_rd_atom;	/* ORD */
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_cqe;		/* a DTO EVD's entries */
	bool resize_qp;			/* endpoint queues resize */
};
void it_dev_limits(struct it_fix *f, struct it_dev_limits *l);
/* @ep's QP number; 0 where it is not known (an RC endpoint in the
 * conformance runner: IT-API shows only a UD endpoint's). */
uint32_t it_ep_qp_num(it_ep_handle_t ep);
/* Returns once a thread sits in it_evd_wait() on @evd. */
void it_evd_until_waiting(it_evd_handle_t evd);
/* The library posting an event of @type to @evd as the connection manager
 * would (its overflow rules); the tree only: the conformance runner
 * fails a case that calls it. */
it_status_t it_evd_post_internal(it_evd_handle_t evd, it_event_type_t type);
/* The library moving @evd's completions from its CQ (tree only, too). */
void it_evd_pump(it_evd_handle_t evd);

/* A registered buffer. */
struct it_buf {
	unsigned char *mem;
	size_t len;
	it_lmr_handle_t lmr;
	it_rmr_context_t rkey;
};

void it_buf_new(struct it_fix *f, struct it_buf *b, size_t len,
		it_mem_priv_t privs);
void it_buf_free(struct it_buf *b);
it_lmr_triplet_t it_seg(struct it_buf *b, size_t off, size_t len);

#endif
