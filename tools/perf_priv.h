/* SPDX-License-Identifier: MIT */
/*
 * perf_priv.h - the engine's inside: one context per run, the control
 * wire format, and what perf_conn.c (connections, control) and
 * perf_loop.c (the measurement loops) share.
 */
#ifndef HOSTRDMA_PERF_PRIV_H
#define HOSTRDMA_PERF_PRIV_H

#include "tools/perf.h"

#define PERF_PROG "hostrdma-perf"
#define PERF_MAGIC 0x48525046u		/* "HRPF" */
#define PERF_VERSION 3		/* 2: 64 QPs, 64 values a message; 3: --warmup */
#define PERF_CTL_RECVS 4
/* Values a control message carries: the options, a result, or one per
 * QP (Sends posted). */
#define PERF_CTL_NV PERF_MAX_QPS

/* Connection private data: which connection of the run this is. */
struct perf_hello {
	uint32_t magic_be;
	uint8_t version;
	uint8_t role;			/* 0 control, 1 data */
	uint16_t index_be;		/* data: the QP's index */
} __attribute__((packed));
_Static_assert(sizeof(struct perf_hello) == 8, "perf_hello is 8 bytes");

enum perf_ctl_type {
	PERF_CTL_PARAMS = 1,	/* v[]: the options; adv[]: buffers */
	PERF_CTL_READY = 2,	/* v[0]: the size about to run */
	PERF_CTL_DONE = 3,	/* v[]: struct perf_result and sent counts */
	PERF_CTL_BYE = 4,	/* client: the last DONE arrived, closing */
	PERF_CTL_SENT = 5,	/* v[i]: Sends posted on QP i, this size */
};

/* Buffer advert: where the peer may write and read. */
struct perf_adv {
	uint64_t addr_be;
	uint32_t rkey_be;
	uint32_t pad;
	uint64_t len_be;
} __attribute__((packed));

/* Every control message; fields big-endian. */
struct perf_ctl {
	uint32_t magic_be;
	uint32_t type_be;
	uint64_t v_be[PERF_CTL_NV];
	struct perf_adv adv[PERF_MAX_QPS];
} __attribute__((packed));
_Static_assert(sizeof(struct perf_ctl) ==
		       8 + 8 * PERF_CTL_NV + 24 * PERF_MAX_QPS,
	       "perf_ctl layout");

/* PARAMS fields (v[]). */
enum {
	PV_VERB, PV_LAT, PV_BIDIR, PV_QPS, PV_TX_DEPTH, PV_RX_DEPTH,
	PV_CQ_MOD, PV_OUTS, PV_SIZE, PV_ALL, PV_ITERS, PV_DURATION,
	PV_VERIFY, PV_MAX_SIZE, PV_POST_LIST,
	PV_INFINITE,	/* --run_infinitely; 0 from older clients */
	PV_WARMUP,	/* --warmup (wire version 3) */
};
/* DONE fields (v[]): times in ns, CPU in us. */
enum {
	DV_SIZE, DV_ITERS, DV_NS, DV_CPU_US, DV_LAT_MIN, DV_LAT_MAX,
	DV_LAT_AVG, DV_LAT_P50, DV_LAT_P99, DV_LAT_P999, DV_VERIFY_ERRORS,
	DV_PEAK_BPS,	/* bytes/s of the best window; 0 from older peers */
	DV_COUNT
};

struct perf_qp {
	unsigned int index;
	it_ep_handle_t ep;
	uint8_t *buf;			/* src | sink | credit word */
	size_t buf_len;
	it_lmr_handle_t lmr;
	it_rmr_context_t rkey;
	uint64_t raddr, rlen;		/* the peer's buffer */
	uint32_t rrkey;
	/* the sender's side */
	uint64_t posted, completed;	/* work requests, all sizes */
	uint64_t sends_total;		/* Sends ever posted (credits) */
	uint64_t atomics;		/* this size's atomics: the value a
					 * Compare-and-Swap expects */
	uint64_t peer_sent;		/* from DONE: the peer's Sends */
	/* the receiver's side */
	uint64_t received;		/* receive completions, all sizes */
	uint64_t credit_told;		/* last count written to the peer */
	uint64_t *credit_src;		/* what our credit Write carries */
	bool last_signalled;		/* the newest WR will complete */
	uint64_t sig_end;		/* posted count after the newest
					 * signalled WR: one is outstanding
					 * while completed < sig_end */
	bool connected;
};

struct perf_ctx {
	struct perf_opts *o;
	bool server;
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t sq, rq, cm, req;	/* data EVDs, CM EVDs */
	it_evd_handle_t csq, crq;		/* the control EP's */
	it_ep_handle_t cep;
	it_listen_handle_t listen;
	struct perf_ctl *cbuf;		/* [0] send, [1..] receives */
	it_lmr_handle_t clmr;
	it_path_t path;
	struct perf_qp qp[PERF_MAX_QPS];
	unsigned int nqp;
	uint64_t max_size;		/* of this run: buffers hold it */
	uint64_t sink_off, credit_off;	/* in every QP's buffer */
	struct perf_ctl last;		/* the last control message */
	bool perftest;			/* -R: the peer is perftest */
	it_net_addr_t peer_addr;	/* server: the client's address */
};

/* perf_conn.c */
int perf_ctl_send(struct perf_ctx *c, enum perf_ctl_type type,
		  const uint64_t *v, unsigned int nv, bool adverts);
int perf_ctl_recv(struct perf_ctx *c, enum perf_ctl_type type,
		  uint64_t timeout_us);
/* 1 and the message in c->last when one of @type is there, 0 if none. */
int perf_ctl_poll(struct perf_ctx *c, enum perf_ctl_type type);
/* A Send of @len raw bytes (at most sizeof(struct perf_ctl)) on the
 * control EP, and the next message received there, which must be @len
 * bytes long: perftest's exchange (-R, perf_rcm.c). */
int perf_raw_send(struct perf_ctx *c, const void *buf, size_t len);
int perf_raw_recv(struct perf_ctx *c, void *buf, size_t len,
		  uint64_t timeout_us);
/* Pieces of perf_connect()/perf_accept() that -R puts together its way. */
int perf_make_base(struct perf_ctx *c);
void perf_layout(struct perf_ctx *c);
int perf_post_receives(struct perf_ctx *c, unsigned int i);
int perf_make_qp(struct perf_ctx *c, unsigned int i);
int perf_connect_ep(struct perf_ctx *c, it_ep_handle_t ep,
		    const void *pdata, size_t len);
int perf_wait_established(struct perf_ctx *c, it_ep_handle_t ep);
/* c->ia and the control EP connected to @dst with @pdata: the device of
 * -d, or each device with a path in turn until one connects (tool_sel in
 * tool_util.h). @usable (may be NULL) vets each device first. 0; -1 with
 * a message; -2 when @usable refused (it said why). */
int perf_connect_control(struct perf_ctx *c, const it_net_addr_t *dst,
			 const void *pdata, size_t len,
			 int (*usable)(struct perf_ctx *c));
int perf_connect(struct perf_ctx *c);
int perf_accept(struct perf_ctx *c);
void perf_teardown(struct perf_ctx *c);
void perf_fill(uint8_t *p, uint64_t len, uint64_t size, unsigned int qp);
uint32_t perf_check(const uint8_t *p, uint64_t size, uint64_t max,
		    unsigned int qp);

/*
 * What the peer's messages say, checked before anything in them is used
 * (tests/fuzz/fuzz_tools.c runs them on hostile bytes). perf_conn.c:
 * a control message must carry our magic and @type (0, or -1 with a
 * message on stderr); the client's PARAMS in c->last become the server's
 * options, each value checked; the peer's buffer adverts in c->last go
 * to c->qp[0..c->nqp), and must hold a run; a connection request's
 * private data must be the hello of @role and data index @index.
 */
int perf_ctl_check(const struct perf_ctl *m, enum perf_ctl_type type);
int perf_params_in(struct perf_ctx *c);
void perf_take_adverts(struct perf_ctx *c);
int perf_adverts_ok(struct perf_ctx *c);
bool perf_hello_ok(const uint8_t pdata[IT_MAX_PRIV_DATA], uint8_t role,
		   unsigned int index);
/* The hello's wire version when it carries our magic, else -1. */
int perf_hello_version(const uint8_t pdata[IT_MAX_PRIV_DATA]);
/* perf_report.c: the device, transport and addresses of the run in
 * c->o->where, for the banner; -1 when -i names a port not there. */
int perf_describe(struct perf_ctx *c);
/* perf_report.c: the peer's DONE in c->last and this side's numbers in
 * @mine become what both sides print (the client's, or both directions'
 * with -b). */
void perf_combine(const struct perf_ctx *c, struct perf_result *mine);

/* perftest's exchange (-R, perf_rcm.c). Its version string, 16 bytes
 * not necessarily NUL-terminated; its cycle buffer size, big-endian,
 * which becomes ours when larger (0, or -1 with a message). */
#define PT_VERSION_LEN 16
#define PT_CYCLE_BUFFER 4096
int perf_pt_version_ok(const char theirs[PT_VERSION_LEN]);
int perf_pt_cycle(uint32_t rem_be, uint32_t *cycle);

/* struct pingpong_dest as perftest sends it: 56 bytes, big-endian. */
struct perf_pt_dest {
	uint32_t lid_be;
	uint32_t out_reads_be;
	uint32_t qpn_be;
	uint32_t psn_be;
	uint32_t rkey_be;
	uint32_t pad;
	uint64_t vaddr_be;
	uint8_t gid[16];
	uint32_t srqn_be;
	uint32_t gid_index_be;
} __attribute__((packed));
_Static_assert(sizeof(struct perf_pt_dest) == 56,
	       "perftest's pingpong_dest");

/* The buffer of QP @i the peer targets, from its hand shake @rem. */
void perf_pt_dest_in(struct perf_ctx *c, unsigned int i,
		     const struct perf_pt_dest *rem);
/* The client's report (size, iterations as 8-byte big-endian, peak and
 * average bandwidth in MiB/s and message rate as byte-swapped doubles)
 * as the server prints it, in @r. */
void perf_pt_report_in(const uint64_t theirs[5], struct perf_result *r);

/* perf_loop.c: run one size; the side's own numbers in @r. */
int perf_loop(struct perf_ctx *c, uint64_t size, struct perf_result *r);
/* The measurement alone, no control messages (-R: perftest's peer). */
int perf_measure(struct perf_ctx *c, uint64_t size, struct perf_result *r);
bool perf_active(const struct perf_ctx *c);

static inline uint64_t perf_be64(uint64_t v)
{
	return it_hton64(v);
}

#endif
