/* SPDX-License-Identifier: MIT */
/*
 * rxe.h - soft-RoCE provider internals: devices, queue pairs, memory,
 * the requester / responder / completer roles and the network layer.
 *
 * Threads and locks. Each device runs one progress thread (rxe_net.c) that
 * receives packets, runs timers and continues long transmissions. Posting
 * from an application thread runs the requester directly. Lock order:
 * qp->lock, then dev->lock (QP and GID tables, work queues) or one of the
 * leaf locks (key table, CQ ring, SRQ); nothing is taken under dev->lock
 * or a leaf lock. Upcalls to the core run with no lock held: events
 * raised under qp->lock are queued in the QP and delivered by
 * rxe_qp_unlock().
 */
#ifndef VP_RXE_RXE_H
#define VP_RXE_RXE_H

#include <glib.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "rnicpi/rnicpi.h"
#include "rnicpi/rnicpi_engine.h"
#include "rnicpi/rnicpi_util.h"
#include "vp/rxe/ib_hdr.h"
#include "vp/rxe/rxe_icrc.h"

#define RXE_MAX_GID 16
/* QPs per device, as Linux rxe (RXE_MAX_QP 0x10000). */
#define RXE_MAX_QP 65536
#define RXE_MAX_QP_WR 16384
#define RXE_MAX_SGE 16
#define RXE_MAX_INLINE 256
#define RXE_MAX_CQE 65536
#define RXE_MAX_MR 65536
#define RXE_MAX_RD_ATOMIC 128
#define RXE_MAX_SRQ_WR 16384
#define RXE_MAX_MSG_SIZE (1u << 31)
#define RXE_MAX_PKT (4096 + 128)     /* largest RoCE UDP payload we take */
#define RXE_RX_BATCH 32              /* recvmmsg batch */
/* direct=1: a packet with this much payload, or a GRO run of MIDDLE
 * packets, is bulk data worth peeking at the datagrams after it for ... */
#define RXE_PEEK_MIN_PAYLOAD 1024u
/* ... until this many in a row were not placed. */
#define RXE_PEEK_CREDIT 8
#define RXE_TX_BATCH 32              /* packets per rxe_xmit */
#define RXE_VENDOR_ID 0xffffff       /* no OUI: software device */

/* ------------------------------------------------------------------ */
/* Counters (hostrdma-rxe(7) lists them)                              */
/* ------------------------------------------------------------------ */

#define RXE_COUNTERS(X)                                                     \
	X(SENT_PKTS, "sent_pkts")                                           \
	X(RCVD_PKTS, "rcvd_pkts")                                           \
	X(ICRC_ERR, "icrc_errors")             /* dropped: bad ICRC */      \
	X(ICRC_ID_SOLVED, "icrc_ipv4_id_solved") /* peer's IP ID not 0 */   \
	X(HDR_ERR, "header_errors")            /* dropped: malformed */     \
	X(NO_QP, "unknown_qp")                 /* dropped: no such QP */    \
	X(PKEY_ERR, "pkey_violations")                                      \
	X(QKEY_ERR, "qkey_violations")                                      \
	X(RETRANSMITS, "retransmitted_pkts")                                \
	X(TIMEOUTS, "retransmit_timeouts")                                  \
	X(SEQ_NAKS_RCVD, "seq_naks_rcvd")                                   \
	X(SEQ_NAKS_SENT, "seq_naks_sent")                                   \
	X(RNR_NAKS_RCVD, "rnr_naks_rcvd")                                   \
	X(RNR_NAKS_SENT, "rnr_naks_sent")                                   \
	X(DUP_REQ, "duplicate_requests")                                    \
	X(NAKS_SENT, "error_naks_sent")                                     \
	X(NAKS_RCVD, "error_naks_rcvd")                                     \
	X(OUT_OF_SEQ, "out_of_sequence_responses")                          \
	X(SEND_ERR, "send_errors")             /* sendmmsg failed */        \
	X(GSO_SENDS, "gso_sends")              /* runs sent as one */       \
	X(GRO_BATCHES, "gro_batches")          /* runs received as one */   \
	X(DIRECT_PKTS, "direct_placed_pkts")   /* payload read into place */\
	X(FAULT_DROPS, "fault_drops")          /* test fault hooks */     \
	X(FAULT_DUPS, "fault_dups")                                         \
	X(FAULT_REORDERS, "fault_reorders")                                 \
	X(POLL_RX_PKTS, "poll_rx_pkts")        /* received by a poller */ \
	X(POLL_RX_PARKS, "poll_rx_parks")      /* sockets left to one */ \
	X(POLL_RX_LATE, "poll_rx_late")        /* lease out, data waited */\
	X(ACK_CLOCKED, "ack_clocked_posts")    /* left for the next ACK */\
	X(ACKS_CARRIED, "acks_with_requests")  /* sent in a post's batch */

enum rxe_counter {
#define X(id, name) RXE_CNT_##id,
	RXE_COUNTERS(X)
#undef X
	RXE_NUM_COUNTERS
};

extern const char *const rxe_counter_names[RXE_NUM_COUNTERS];

/* ------------------------------------------------------------------ */
/* Device                                                             */
/* ------------------------------------------------------------------ */

struct rxe_gid {
	bool valid;
	union rnicpi_gid gid;
	struct sockaddr_storage addr;	/* the address, port 4791 */
	int rx_fd;			/* bound to addr:4791, -1 if none */
	struct rnicpi_source src;	/* rx_fd in the progress engine */
	struct rxe_dev *dev;
	/* rx_fd came from the host service (hostrdma-kald), one socket of
	 * the port's shared group; fwd_fd brings QP1's datagrams. */
	bool hosted;
	int fwd_fd;
	struct rnicpi_source fwd_src;
};

struct rx_batch;

struct rxe_dev {
	struct rnicpi_device base;
	int gid_open_err;		/* the last rxe_gid_open failure */
	bool opened;			/* device_open bound the GIDs' port */
	char ifname[RNICPI_IFNAMSIZ];
	uint32_t if_mtu;
	unsigned int nd_flags;
	uint8_t mac[6];
	bool has_mac;
	uint64_t node_guid;		/* big-endian */

	pthread_mutex_t lock;		/* gids, qps, next_qpn, pending */
	struct rxe_gid gids[RXE_MAX_GID];
	enum rnicpi_port_state port_state;
	enum rnicpi_mtu active_mtu;
	GHashTable *qps;		/* qpn -> struct rxe_qp * */
	uint32_t next_qpn;
	/* The QPNs this process may use: all (qpn_count 0, embedded) or
	 * the range the host service gave (qpn_base 0 is never given). */
	uint32_t qpn_base, qpn_count;
	/* The host service answered an open with EADDRINUSE: another
	 * program holds the port it would share (under lock). */
	bool host_busy;
	GQueue pending; /* QPNs with transmit work left */
	GQueue acks;	/* QPNs with a coalesced ACK to send */

	struct rnicpi_key_table keys; /* lkeys / rkeys -> struct rxe_mr */

	/* The progress engine (rnicpi_engine.h): the receive sockets, the
	 * QPs' transport timers, the wake-up; its thread is the progress
	 * thread. */
	struct rnicpi_engine engine;
	bool engine_up;
	/* The receive side: whoever holds rx_lock reads the receive
	 * sockets (rx_drain) with rxb, rx_seed and rx_peek. The progress
	 * thread waits for it; an application polling an empty CQ only
	 * tries it (option poll_rx). Taken before any other lock (a GID
	 * that goes only tries it, under dev->lock: rx_fd_retire). A
	 * receive descriptor is closed only by its holder. */
	pthread_mutex_t rx_lock;
	struct rx_batch *rxb;		/* receive buffers */
	uint32_t rx_seed;		/* the fault hooks' dice */
	/* poll_rx: when an application last polled an empty CQ of the
	 * device (0: it armed one since), and whether the progress thread
	 * left the receive sockets to it (EPOLLIN off until the lease of
	 * that poll runs out or a CQ is armed). park_lock: rx_parked and
	 * the sockets' events; under rx_lock, over dev->lock. */
	atomic_uint_fast64_t rx_polled_ns;
	pthread_mutex_t park_lock;
	atomic_bool rx_parked;
	/* Leases in a row that ran out on data nobody had read while the
	 * consumer ran without polling a CQ (park_lock); at
	 * RXE_POLL_RX_LATE_MAX (waiting on a byte of its buffer, say) the
	 * sockets are not left to it again: rx_park_off. */
	uint32_t rx_late_streak;
	atomic_bool rx_park_off;
	/* The thread of that last poll, and its CPU time then: a lease
	 * that ran out while it was not on a CPU says nothing of it. */
	atomic_int rx_poller_tid;
	atomic_uint_fast64_t rx_poller_cpu_ns;
	/* Consumers reading the sockets in a poll now, and sending what
	 * that made: they poll, however long that takes. */
	atomic_int rx_in_poll;
	struct rnicpi_timer park_timer;
	atomic_uint_fast64_t park_due_ns;	/* when it goes off, if armed */
	/* A poll that received left the ACKs it owed queued (dev->acks):
	 * the consumer acts on what it found first. They leave with its
	 * next post on the QP, at its next poll or arm, or with the
	 * progress thread's next pass (rxe_poll_rx.c, rxe_net_poll_rx). */
	atomic_bool acks_deferred;

	/* Options (rxe_main.c) */
	uint32_t max_unacked;		/* packets in flight per QP */
	uint32_t ack_every;		/* AckReq at least every N packets */
	uint32_t tx_burst;		/* packets per progress round */
	uint32_t ack_clock;		/* from this many unacknowledged
					 * packets a post waits for the next
					 * ACK to send, 0 never */
	/* Test hooks, off by default: drop, duplicate or swap received
	 * packets, in parts per million (hostrdma-rxe(7)). */
	uint32_t fault_drop_ppm;
	uint32_t fault_dup_ppm;
	uint32_t fault_reorder_ppm;
	uint32_t fault_seed;
	atomic_bool gso;		/* option "gso": UDP GSO for runs */
	atomic_bool gro;		/* option "gro": UDP GRO on receive */
	uint32_t busy_poll_us;		/* option: progress thread polls this
					 * long after receiving */
	uint32_t direct;		/* option "direct": payloads read
					 * straight into their targets: 0 no,
					 * 1 while bulk data comes, 2 every
					 * datagram peeked at */
	uint32_t poll_rx;		/* option: polling an empty CQ reads
					 * the receive sockets (rx_lock) */
	uint32_t poll_rx_lease_us;	/* option: how long after a poll the
					 * sockets stay the poller's */
	int rx_peek;			/* direct=1: datagrams still to peek
					 * at since bulk data was last seen
					 * (under rx_lock) */

	atomic_uint_fast64_t counters[RXE_NUM_COUNTERS];

	/* Receive descriptors of GIDs that went while a reader held
	 * rx_lock (here, last, not to move the hot fields): each number names rx_null_fd (an unbound UDP socket,
	 * empty forever) until the next holder of rx_lock closes it
	 * (rxe_net.c, "Retiring"). Under dev->lock; rx_graves_due says
	 * there are some without it. */
	int rx_null_fd;
	GArray *rx_graves;
	atomic_bool rx_graves_due;
	/* Tests only (NULL otherwise): called by a reader holding rx_lock
	 * right after it loaded GID @gid_index's receive descriptor @fd,
	 * before it reads it; widens that window at will. */
	void (*test_rx_loaded)(struct rxe_dev *dev, int gid_index, int fd);
};

/* Direct placement reads datagrams one by one, so the fault hooks (which
 * shuffle a batch) do not go with it: 0, or the option's mode. */
static inline uint32_t rxe_direct_mode(struct rxe_dev *dev)
{
	if (dev->fault_drop_ppm || dev->fault_dup_ppm ||
	    dev->fault_reorder_ppm)
		return 0;
	return dev->direct;
}

static inline struct rxe_dev *to_rxe_dev(struct rnicpi_device *d)
{
	return container_of(d, struct rxe_dev, base);
}

static inline void rxe_count(struct rxe_dev *dev, enum rxe_counter c)
{
	atomic_fetch_add_explicit(&dev->counters[c], 1, memory_order_relaxed);
}

static inline void rxe_count_n(struct rxe_dev *dev, enum rxe_counter c,
			       uint64_t n)
{
	atomic_fetch_add_explicit(&dev->counters[c], n, memory_order_relaxed);
}

/* The provider description (rxe_main.c); rxe_entry.c exports it. */
extern const struct rnicpi_provider rxe_provider;

/* Counter value, for tests and tools. */
uint64_t rxe_dev_counter(struct rnicpi_device *dev, enum rxe_counter c);

/* Path MTU code -> bytes. */
static inline uint32_t rxe_mtu_bytes(enum rnicpi_mtu mtu)
{
	return mtu >= RNICPI_MTU_256 && mtu <= RNICPI_MTU_4096
		       ? 128u << mtu : 256u;
}

/* ------------------------------------------------------------------ */
/* PD, MR, CQ, SRQ, AH                                                */
/* ------------------------------------------------------------------ */

struct rxe_pd {
	struct rnicpi_pd base;
};

static inline struct rxe_pd *to_rxe_pd(struct rnicpi_pd *p)
{
	return container_of(p, struct rxe_pd, base);
}

/* What a key names: a memory region or a memory window. The key table
 * holds a pointer to this header; lookups take a reference on it. */
enum rxe_mem_kind {
	RXE_MEM_MR = 1,
	RXE_MEM_MW = 2,
};

struct rxe_mem_hdr {
	enum rxe_mem_kind kind;
	atomic_int ref;
};

struct rxe_mr {
	struct rxe_mem_hdr hdr;
	struct rnicpi_mr base;
	uint8_t *addr;
	uint64_t length;
	uint64_t iova;
	unsigned int access;
	atomic_bool invalid;	/* LOCAL_INV / SEND_WITH_INV (IBA 10.6.6) */
	atomic_int n_binds;	/* memory windows bound to it */
	/* From alloc_mr: registered by REG_MR WRs up to max_len bytes. */
	bool fast_reg;
	uint64_t max_len;
};

static inline struct rxe_mr *to_rxe_mr(struct rnicpi_mr *m)
{
	return container_of(m, struct rxe_mr, base);
}

/* A memory window (IBA 10.6.7, rxe_mw.c). */
struct rxe_mw {
	struct rxe_mem_hdr hdr;
	struct rnicpi_mw base;
	pthread_mutex_t lock;	/* the binding below */
	bool bound;
	struct rxe_mr *mr;	/* referenced while bound */
	uint64_t va;		/* the peer's address of the first byte */
	uint64_t mr_va;		/* the region's address of that byte */
	uint64_t length;
	unsigned int access;
	uint32_t qpn;		/* type 2: the QP it is bound to */
};

static inline struct rxe_mw *to_rxe_mw(struct rnicpi_mw *m)
{
	return container_of(m, struct rxe_mw, base);
}

void rxe_mem_get(struct rxe_mem_hdr *h);
void rxe_mem_put(struct rxe_mem_hdr *h);
void rxe_mr_get(struct rxe_mr *mr);
void rxe_mr_put(struct rxe_mr *mr);

/* Why a memory access was refused. */
enum rxe_mem_err {
	RXE_MEM_OK = 0,
	RXE_MEM_BAD_KEY,	/* unknown, stale or invalidated key */
	RXE_MEM_BAD_PD,
	RXE_MEM_BAD_ACCESS,	/* rights not granted */
	RXE_MEM_BAD_BOUNDS,
};

struct rxe_qp;

/*
 * Resolve @key (an lkey, or with @remote an rkey of an MR or a memory
 * window) for @len bytes at @va with @access (RNICPI_ACCESS_* bits needed;
 * 0 for a local read) on behalf of @qp. On success *@mr holds a reference
 * on the region holding the bytes and *@ptr is the first byte; the caller
 * puts the MR.
 */
enum rxe_mem_err rxe_mem_resolve(struct rxe_qp *qp, uint32_t key, bool remote,
				 uint64_t va, uint64_t len, unsigned int access,
				 struct rxe_mr **mr, uint8_t **ptr);
/* LOCAL_INV (@remote false) or SEND_WITH_INV (true) of @key for @qp:
 * 0, or -EINVAL when the key names nothing @qp may invalidate. */
int rxe_mem_invalidate(struct rxe_qp *qp, uint32_t key, bool remote);
/* A READ's sink SGE naming a window (RNICPI_SEND_SINK_MW): as
 * rxe_mem_resolve() of a window's rkey for a remote write. */
enum rxe_mem_err rxe_sink_resolve(struct rxe_qp *qp, uint32_t key,
				  uint64_t va, uint64_t len,
				  struct rxe_mr **mr, uint8_t **ptr);
/* RNICPI_SEND_SINK_INV: a READ's sink @key stops (window unbound, either
 * type; region invalidated). */
void rxe_sink_invalidate(struct rxe_qp *qp, uint32_t key);
const char *rxe_mem_err_name(enum rxe_mem_err e);

struct rxe_cq {
	struct rnicpi_cq base;
	struct rnicpi_cq_ring ring;
};

static inline struct rxe_cq *to_rxe_cq(struct rnicpi_cq *c)
{
	return container_of(c, struct rxe_cq, base);
}

struct rxe_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;	/* sum of the SGE lengths */
	struct rnicpi_sge sge[RXE_MAX_SGE];
};

/* A ring of receive WQEs: a QP's own RQ or a shared one. */
struct rxe_rq {
	struct rxe_recv_wqe *wqe;
	uint32_t size;
	uint32_t max_sge;
	uint32_t head;		/* next to consume (free-running) */
	uint32_t tail;		/* next to fill */
};

struct rxe_srq {
	struct rnicpi_srq base;
	pthread_mutex_t lock;
	struct rxe_rq rq;
	uint32_t limit;
	atomic_int users;	/* QPs attached */
};

static inline struct rxe_srq *to_rxe_srq(struct rnicpi_srq *s)
{
	return container_of(s, struct rxe_srq, base);
}

/* Where packets go: the peer's address and, for the source, a GID. */
struct rxe_av {
	uint8_t sgid_index;
	struct sockaddr_storage dst;	/* port 4791 */
	socklen_t dst_len;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
};

struct rxe_ah {
	struct rnicpi_ah base;
	struct rxe_av av;
};

static inline struct rxe_ah *to_rxe_ah(struct rnicpi_ah *a)
{
	return container_of(a, struct rxe_ah, base);
}

/* Fill @av from @attr; -EINVAL with a log line if the GID index or the
 * address is unusable. */
int rxe_av_from_attr(struct rxe_dev *dev, const struct rnicpi_ah_attr *attr,
		     struct rxe_av *av);

/* ------------------------------------------------------------------ */
/* Queue pairs                                                        */
/* ------------------------------------------------------------------ */

enum rxe_wqe_state {
	WQE_POSTED = 0,		/* not (fully) transmitted yet */
	WQE_PENDING,		/* all sent, waiting for a response */
	WQE_DONE,		/* completed; completer may pop it */
	WQE_ERROR,		/* completes with an error status */
};

struct rxe_send_wqe {
	uint64_t wr_id;
	enum rnicpi_wr_opcode opcode;
	unsigned int flags;	/* enum rnicpi_send_flags */
	uint32_t imm_or_inv;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add;
	uint64_t swap;
	struct rxe_av av;	/* UD */
	uint32_t remote_qpn;	/* UD */
	uint32_t remote_qkey;	/* UD */
	uint32_t num_sge;
	uint32_t length;
	struct rnicpi_sge sge[RXE_MAX_SGE];
	uint8_t *inline_data;	/* per-slot buffer, RXE_SEND_INLINE */
	struct rnicpi_mw *bind_mw;	/* BIND_MW */
	uint32_t bind_rkey;
	struct rnicpi_mw_bind_info bind;
	/* REG_MR (rnicpi.h's wr.reg_mr): the region, referenced from post
	 * until the WQE runs or is flushed (dereg_mr may come meanwhile) */
	struct rxe_mr *reg_mr;
	uint8_t *reg_addr;
	uint64_t reg_length;
	uint64_t reg_iova;
	unsigned int reg_access;
	uint32_t reg_key;

	/* progress */
	enum rxe_wqe_state state;
	enum rnicpi_wc_status status;
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t npkts;
	uint64_t atomic_orig;
};

/* One remembered READ or atomic, for duplicates (IBA 9.7.5.1.1). */
struct rxe_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn;
	uint32_t last_psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint64_t atomic_orig;	/* replayed for a duplicate atomic */
	uint8_t atomic_syndrome;
	uint32_t msn;
};

/* A READ being answered in bursts by the responder. */
struct rxe_read_tx {
	bool active;
	uint32_t psn;		/* next response PSN */
	uint32_t first_psn;	/* PSN of the request */
	uint64_t va;		/* next byte to send */
	uint32_t resid;		/* bytes left */
	uint32_t total;
	uint32_t rkey;
};

enum rxe_timer_kind {
	RXE_TIMER_NONE = 0,
	RXE_TIMER_RETRANSMIT,
	RXE_TIMER_RNR,
};

#define RXE_MAX_DEFERRED 8

struct rxe_deferred {
	struct rnicpi_async_event ev;
};

struct rxe_qp {
	struct rnicpi_qp base;
	struct rxe_dev *dev;
	atomic_int ref;
	pthread_mutex_t lock;

	enum rnicpi_qp_type type;
	enum rnicpi_qp_state state;
	struct rxe_cq *scq;
	struct rxe_cq *rcq;
	struct rxe_srq *srq;
	bool sq_sig_all;
	struct rnicpi_qp_cap cap;

	/* attributes */
	unsigned int access;
	uint16_t pkey_index;
	uint32_t qkey;
	enum rnicpi_mtu path_mtu;
	uint32_t mtu;		/* bytes */
	uint32_t dest_qpn;
	struct rxe_av av;	/* RC/UC peer */
	struct rnicpi_ah_attr ah_attr;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;	/* ORD */
	uint8_t max_dest_rd_atomic; /* IRD */
	uint8_t port_num;
	bool sq_draining;

	/* sockets: one per IP family, bound to the source address with a
	 * port of their own for flow entropy (annex A17.2.3) */
	int tx_fd[2];		/* [0] AF_INET, [1] AF_INET6 */
	/* Sockets replaced when the source GID changed: an ACK may still be
	 * going out on one without the QP lock (flush_acks), so they close
	 * with the QP. */
	GArray *tx_retired;
	uint16_t tx_port[2];	/* host order */
	int tx_gid[2];		/* GID index the socket is bound to */
	struct sockaddr_storage tx_src[2]; /* its address and port */
	/* The transport timer (retransmit, RNR) on the engine's heap, and
	 * when it is due (0: stopped), under the QP lock: an expiry the
	 * engine took off its heap fires only if the timer was not moved or
	 * stopped meanwhile, as a timerfd's would. */
	struct rnicpi_timer timer;
	uint64_t timer_due_ns;

	/* send queue: free-running counters, index = counter % size */
	struct rxe_send_wqe *sq;
	uint32_t sq_size;
	uint32_t sq_head;	/* oldest not completed */
	uint32_t sq_tail;	/* next free */

	struct rxe_rq rq;	/* own receive queue (no SRQ) */

	struct {
		uint32_t psn;	/* next PSN to send */
		uint32_t wqe;	/* next WQE to transmit (counter) */
		uint32_t offset;/* bytes of it already sent */
		uint32_t noack;	/* packets since the last AckReq */
		uint32_t rd_atomic; /* READs/atomics in flight (ORD) */
	} req;

	struct {
		uint32_t psn;	/* oldest PSN not yet acknowledged */
		uint32_t retry_left;
		uint32_t rnr_left;
		enum rxe_timer_kind timer;
		bool in_retry;	/* went back N; later out-of-order
				 * responses are stale, not new losses */
	} comp;

	struct {
		uint32_t psn;	/* expected PSN */
		uint32_t msn;
		uint8_t last_opcode; /* of the previous packet */
		bool in_msg;	/* inside a multi-packet SEND or WRITE */
		bool nak_sent;	/* PSN sequence NAK sent for psn */
		bool ack_pending;
		bool ack_queued;
		uint32_t ack_psn;
		/* SEND in progress */
		bool have_rwqe;
		struct rxe_recv_wqe rwqe;
		uint32_t rcv_offset;
		enum rnicpi_wc_status rcv_status;
		/* WRITE in progress */
		uint64_t write_va;
		uint32_t write_rkey;
		uint32_t write_resid;
		uint32_t write_total;
		/* READ responses still to send */
		struct rxe_read_tx read;
		struct rxe_rd_res *res;	/* max_dest_rd_atomic entries */
		uint32_t n_res;
		uint32_t res_next;
		bool queued;	/* on dev->pending */
	} resp;

	struct rxe_deferred deferred[RXE_MAX_DEFERRED];
	uint32_t n_deferred;
};

static inline struct rxe_qp *to_rxe_qp(struct rnicpi_qp *q)
{
	return container_of(q, struct rxe_qp, base);
}

void rxe_qp_get(struct rxe_qp *qp);
void rxe_qp_put(struct rxe_qp *qp);
/* The QP numbered @qpn with a new reference, or NULL. */
struct rxe_qp *rxe_qp_lookup(struct rxe_dev *dev, uint32_t qpn);
void rxe_qp_lock(struct rxe_qp *qp);
/* Unlock, then deliver the async events queued while locked. */
void rxe_qp_unlock(struct rxe_qp *qp);
/* Queue an async event of @type about @qp (under qp->lock). */
void rxe_qp_event(struct rxe_qp *qp, enum rnicpi_event_type type, int status);
/* A QP event with a NAK's reason (rnicpi.h's RNICPI_TERM_LAYER_IBA):
 * @received at the requester, else sent by the responder. */
void rxe_qp_event_nak(struct rxe_qp *qp, enum rnicpi_event_type type,
		      uint8_t nak_code, enum rnicpi_iba_cause cause,
		      bool received);
/* Move to ERR and flush both queues (under qp->lock). */
void rxe_qp_error(struct rxe_qp *qp);
/* Post a completion on @cq; an overflow raises CQ_ERR (under qp->lock). */
void rxe_cq_post(struct rxe_qp *qp, struct rxe_cq *cq,
		 const struct rnicpi_wc *wc, bool solicited);

static inline struct rxe_send_wqe *sq_wqe(struct rxe_qp *qp, uint32_t n)
{
	return &qp->sq[n % qp->sq_size];
}

/* ------------------------------------------------------------------ */
/* Packets                                                            */
/* ------------------------------------------------------------------ */

/* A received packet, parsed (rxe_recv.c). */
struct rxe_pkt {
	struct rxe_dev *dev;
	uint8_t *hdr;			/* BTH */
	uint32_t len;			/* BTH .. end of pad (no ICRC) */
	const struct ib_opcode_info *op;
	uint8_t opcode;
	uint32_t psn;
	uint32_t qpn;
	uint8_t *payload;
	uint32_t paylen;
	struct sockaddr_storage src;	/* peer address and port */
	int gid_index;			/* local GID it arrived on */
	struct ib_grh grh;		/* for UD receives */
};

static inline struct ib_bth *pkt_bth(const struct rxe_pkt *p)
{
	return (struct ib_bth *)p->hdr;
}
static inline struct ib_reth *pkt_reth(const struct rxe_pkt *p)
{
	return (struct ib_reth *)(p->hdr + p->op->reth_off);
}
static inline struct ib_aeth *pkt_aeth(const struct rxe_pkt *p)
{
	return (struct ib_aeth *)(p->hdr + p->op->aeth_off);
}
static inline struct ib_atmeth *pkt_atmeth(const struct rxe_pkt *p)
{
	return (struct ib_atmeth *)(p->hdr + p->op->atmeth_off);
}
static inline struct ib_atmack *pkt_atmack(const struct rxe_pkt *p)
{
	return (struct ib_atmack *)(p->hdr + p->op->atmack_off);
}
static inline struct ib_immdt *pkt_immdt(const struct rxe_pkt *p)
{
	return (struct ib_immdt *)(p->hdr + p->op->immdt_off);
}
static inline struct ib_ieth *pkt_ieth(const struct rxe_pkt *p)
{
	return (struct ib_ieth *)(p->hdr + p->op->ieth_off);
}
static inline struct ib_deth *pkt_deth(const struct rxe_pkt *p)
{
	return (struct ib_deth *)(p->hdr + p->op->deth_off);
}

/* A packet to send: headers in @hdr, payload as up to RXE_MAX_SGE + 1
 * pieces of registered memory (or inline data). */
#define RXE_TX_IOV (RXE_MAX_SGE + 3)
struct rxe_txpkt {
	uint8_t hdr[64];
	uint32_t hdr_len;
	struct iovec iov[RXE_TX_IOV];	/* [0] hdr, payload..., trailer */
	uint32_t niov;
	uint8_t trailer[8];		/* pad + ICRC */
	struct rxe_mr *mrs[RXE_MAX_SGE];/* references held until sent */
	uint32_t n_mrs;
};

/* ------------------------------------------------------------------ */
/* Verbs (rxe_verbs.c, rxe_qp.c), listed in rxe_main.c's ops table     */
/* ------------------------------------------------------------------ */

int rxe_alloc_pd(struct rnicpi_device *dev, struct rnicpi_pd **out);
int rxe_dealloc_pd(struct rnicpi_pd *pd);
int rxe_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
	       uint64_t iova, unsigned int access, struct rnicpi_mr **out);
int rxe_rereg_mr(struct rnicpi_mr *mr, unsigned int flags,
		 struct rnicpi_pd *pd, void *addr, uint64_t length,
		 uint64_t iova, unsigned int access);
int rxe_dereg_mr(struct rnicpi_mr *mr);
int rxe_create_cq(struct rnicpi_device *dev,
		  const struct rnicpi_cq_init_attr *attr,
		  struct rnicpi_cq **out);
int rxe_resize_cq(struct rnicpi_cq *cq, uint32_t cqe);
int rxe_destroy_cq(struct rnicpi_cq *cq);
int rxe_poll_cq(struct rnicpi_cq *cq, int n, struct rnicpi_wc *wc);
int rxe_req_notify_cq(struct rnicpi_cq *cq, int solicited_only);
void rxe_consumer_blocks(struct rnicpi_device *dev);
int rxe_ack_cq_event(struct rnicpi_cq *cq);
int rxe_create_srq(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
		   struct rnicpi_srq **out);
int rxe_modify_srq(struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr,
		   unsigned int mask);
int rxe_query_srq(struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr);
int rxe_destroy_srq(struct rnicpi_srq *srq);
int rxe_post_srq_recv(struct rnicpi_srq *srq, const struct rnicpi_recv_wr *wr,
		      const struct rnicpi_recv_wr **bad);
int rxe_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		  struct rnicpi_qp **out);
int rxe_modify_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		  unsigned int mask);
int rxe_query_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		 unsigned int mask, struct rnicpi_qp_init_attr *init_attr);
int rxe_destroy_qp(struct rnicpi_qp *qp);
int rxe_post_send(struct rnicpi_qp *qp, const struct rnicpi_send_wr *wr,
		  const struct rnicpi_send_wr **bad);
int rxe_post_recv(struct rnicpi_qp *qp, const struct rnicpi_recv_wr *wr,
		  const struct rnicpi_recv_wr **bad);
int rxe_create_ah(struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
		  struct rnicpi_ah **out);
int rxe_destroy_ah(struct rnicpi_ah *ah);
int rxe_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		 struct rnicpi_mw **out);
int rxe_dealloc_mw(struct rnicpi_mw *mw);
/* Execute a BIND_MW WQE (rxe_mw.c); a WC status. */
int rxe_alloc_mr(struct rnicpi_pd *pd, uint64_t max_len,
		 struct rnicpi_mr **out);
enum rnicpi_wc_status rxe_mr_fast_reg(struct rxe_qp *qp,
				      const struct rxe_send_wqe *w);
enum rnicpi_wc_status rxe_mw_bind(struct rxe_qp *qp,
				  const struct rxe_send_wqe *w);

/* ------------------------------------------------------------------ */
/* Roles and network                                                  */
/* ------------------------------------------------------------------ */

/* rxe_net.c */
int rxe_net_start(struct rxe_dev *dev);
void rxe_net_stop(struct rxe_dev *dev);
/* Close the engine; after the GIDs' sockets were closed. */
void rxe_net_fini(struct rxe_dev *dev);
int rxe_gid_open(struct rxe_dev *dev, int index);
void rxe_gid_close(struct rxe_dev *dev, int index);
/* rxe_tx.c: socket of @qp for sending to @av (created on first use). */
int rxe_qp_tx_fd(struct rxe_qp *qp, const struct rxe_av *av, int *family_idx);
/* Finish (pad, ICRC) and send @n packets of @qp to @av. Returns how many
 * went out; releases the packets' MR references either way. */
/* rxe_resp.c: the coalesced ACK owed, built into @p (clears ack_pending);
 * false when none is owed. Under the QP lock. */
bool rxe_resp_build_ack(struct rxe_qp *qp, struct rxe_txpkt *p);

/* One packet finished under the QP lock (its socket chosen, ICRC
 * computed) and sent after the lock is dropped: the engine's coalesced
 * ACKs, so that a consumer posting on the same QP does not wait for the
 * engine's send (the futex hand-off was a third of a soft-RoCE round
 * trip). Any packet of the QP may overtake it: a stale ACK is dropped by
 * the requester as IBA says. The caller holds a QP reference until sent. */
struct rxe_txready {
	int fd;
	struct sockaddr_storage dst;
	socklen_t dst_len;
	struct rxe_txpkt p;
};
int rxe_tx_ready(struct rxe_qp *qp, const struct rxe_av *av,
		 struct rxe_txready *r);
void rxe_tx_send_ready(struct rxe_qp *qp, struct rxe_txready *r);
int rxe_xmit(struct rxe_qp *qp, const struct rxe_av *av,
	     struct rxe_txpkt *pkts, int n);
/* Ask the progress thread to call rxe_resp_continue / rxe_req_run. */
void rxe_schedule(struct rxe_qp *qp);
void rxe_queue_ack(struct rxe_qp *qp);
/* The work the progress thread does after reading: the coalesced ACKs,
 * one burst of each scheduled QP's transmissions (READ responses, the
 * send queue), the ACKs again. True when some is left for another round.
 * A test harness that stopped the thread calls it instead. */
bool rxe_net_run_work(struct rxe_dev *dev);
/* Arm (@usec > 0) or stop (0) the QP's timer; QP lock held. */
void rxe_timer_set(struct rxe_qp *qp, uint64_t usec);
/* Make the QP's timer; wait for its callback before freeing the QP. */
void rxe_timer_init(struct rxe_qp *qp);
void rxe_timer_fini(struct rxe_qp *qp);
/* Stop the progress thread as rxe_net_stop() does, leaving the engine to
 * a harness that calls rxe_net_run_work(). */
void rxe_net_stop_thread(struct rxe_dev *dev);
void rxe_dev_wake(struct rxe_dev *dev);
/* rxe_poll_rx.c, option poll_rx: an application found a CQ of @dev
 * empty. Unless another thread holds the receive side (or this is the
 * progress thread), read what the receive sockets hold and do the work
 * it made (ACKs, transmit bursts) in this thread. True when it received
 * something. @cq_armed: the CQ polled is armed (a poll that is no sign
 * of polling on). */
bool rxe_net_poll_rx(struct rxe_dev *dev, bool cq_armed);
/* Is this thread the poller of rxe_net_poll_rx() on @dev? Upcalls are
 * then left to the progress thread: the caller of poll_cq may hold locks
 * of the layers above. */
bool rxe_net_on_poller(const struct rxe_dev *dev);
/* poll_rx: a CQ of @dev was armed; its consumer may sleep now, so the
 * progress thread takes the receive sockets back at once. */
void rxe_net_poll_rx_armed(struct rxe_dev *dev);
/* poll_rx: late leases in a row after which parking stops (rxe_poll_rx.c,
 * on_park_timer). */
#define RXE_POLL_RX_LATE_MAX 3
/* poll_rx: how old a poller's CPU-time mark may grow before a poll takes
 * it again (rxe_poll_rx.c, note_poller). */
#define RXE_POLLER_MARK_NS 20000u
/* poll_rx: a consumer that polls posted work, or found completions: it
 * is busy, not waiting elsewhere, and polls again when done (the lease
 * starts again). The ACKs a poll left go now. */
void rxe_net_poll_rx_busy(struct rxe_dev *dev);

/* rxe_recv.c: check and dispatch one received packet; @ip_id_hint is the
 * IPv4 ID to try first for the ICRC (the segment's index in a GRO run). */
void rxe_rcv(struct rxe_dev *dev, uint8_t *buf, uint32_t len,
	     const struct sockaddr_storage *src, int gid_index,
	     uint16_t ip_id_hint);

/* rxe_recv.c, option "direct": peek at the next datagram on @fd and read
 * it with the payloads going straight to their targets when it is a
 * packet, or a UDP GRO run of packets, an RC QP expects; @bounce and
 * @scratch (@buf_len bytes each) take what cannot be placed. 1 when a
 * datagram was handled (*@placed: straight into place), 0 when none was
 * waiting, -1 when it is a run that cannot be placed (nothing read). */
int rxe_rcv_peeked(struct rxe_dev *dev, int fd, int gid_index,
		   uint8_t *bounce, uint8_t *scratch, size_t buf_len,
		   bool *placed);
/* The UDP GRO segment size the kernel reported with a datagram, 0 if
 * none. */
uint32_t rxe_gro_seg(struct msghdr *mh);
/* rxe_net.c: hand a received datagram to rxe_rcv(), packet by packet
 * when the kernel coalesced a run of @seg-byte segments (UDP GRO); the
 * first of them was segment @first of the peer's GSO send (its IPv4 ID,
 * the ICRC's first guess). */
void rxe_rcv_datagram(struct rxe_dev *dev, uint8_t *buf, uint32_t len,
		      uint32_t seg, const struct sockaddr_storage *src,
		      int gid_index, uint16_t first);

/* rxe_req.c: transmit what the SQ holds (under qp->lock). */
void rxe_req_run(struct rxe_qp *qp);
/* Go back N: send again from @psn on (under qp->lock). */
void rxe_req_reset_to(struct rxe_qp *qp, uint32_t psn);

/* rxe_comp.c: a response for @qp (under qp->lock). */
void rxe_comp_rcv(struct rxe_qp *qp, struct rxe_pkt *pkt);
void rxe_comp_timer(struct rxe_qp *qp);
/* Complete WQEs from the SQ head that are done (under qp->lock). */
void rxe_comp_drain(struct rxe_qp *qp);
void rxe_comp_arm_timer(struct rxe_qp *qp);
/* Where the payload of the READ response @pkt (headers only) would land
 * if it came now, with a reference on its MR in @mr; NULL when it cannot
 * be placed before it is read (under qp->lock). */
uint8_t *rxe_comp_place(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			struct rxe_mr **mr);
/* The same for @want READ RESPONSE MIDDLE packets in a row from @pkt on:
 * where the first payload goes, the others after it; *@n how many fit. */
uint8_t *rxe_comp_place_run(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			    uint32_t want, uint32_t *n, struct rxe_mr **mr);

/* rxe_resp.c: a request for @qp (under qp->lock). */
void rxe_resp_rcv(struct rxe_qp *qp, struct rxe_pkt *pkt);
void rxe_resp_continue(struct rxe_qp *qp);
void rxe_resp_send_ack(struct rxe_qp *qp);
/* rxe_comp_place() for the requests: WRITE and SEND continuations. */
uint8_t *rxe_resp_place(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			struct rxe_mr **mr);
/* The same for @want WRITE MIDDLE packets in a row from @pkt on (full
 * path MTU each): where the first payload goes, the others after it; *@n
 * how many fit before the WRITE's last byte. */
uint8_t *rxe_resp_place_run(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			    uint32_t want, uint32_t *n, struct rxe_mr **mr);
/* UD / GSI receive. */
void rxe_resp_ud(struct rxe_qp *qp, struct rxe_pkt *pkt);

/* Take the next receive WQE for @qp (own RQ or SRQ). */
bool rxe_rq_take(struct rxe_qp *qp, struct rxe_recv_wqe *out);

/* Copy @len bytes between @buf and the SGE list at @offset; local
 * access checks. RXE_MEM_OK or why not. */
enum rxe_mem_err rxe_sgl_copy(struct rxe_qp *qp, const struct rnicpi_sge *sge,
			      uint32_t num_sge, uint32_t offset,
			      uint8_t *buf, uint32_t len, bool to_sgl);
/* The local address of @len bytes at @offset of the SGE list when they lie
 * in one SGE the QP may write, with a reference on its MR; NULL if not. */
uint8_t *rxe_sgl_place(struct rxe_qp *qp, const struct rnicpi_sge *sge,
		       uint32_t num_sge, uint32_t offset, uint32_t len,
		       struct rxe_mr **mr);
/* rxe_sgl_copy() to and rxe_sgl_place() in a READ WQE's sink: its SGEs
 * name windows when the WQE has RNICPI_SEND_SINK_MW. */
enum rxe_mem_err rxe_read_sink_copy(struct rxe_qp *qp,
				    const struct rxe_send_wqe *w,
				    uint32_t offset, uint8_t *buf,
				    uint32_t len);
uint8_t *rxe_read_sink_place(struct rxe_qp *qp, const struct rxe_send_wqe *w,
			     uint32_t offset, uint32_t len,
			     struct rxe_mr **mr);

/* Log helpers with the per-object prefix; debug messages are formatted
 * only when wanted (rnicpi_debug_wanted). */
#define rxe_qp_dbg(qp, fmt, ...)                                            \
	do {                                                                \
		if (rnicpi_debug_wanted(G_LOG_DOMAIN))                       \
			g_debug("QP[%u] %s: " fmt, (qp)->base.qp_num,       \
				(qp)->dev->base.name, ##__VA_ARGS__);      \
	} while (0)
#define rxe_qp_warn(qp, fmt, ...)                                           \
	g_info("QP[%u] %s: " fmt, (qp)->base.qp_num,                     \
	       (qp)->dev->base.name, ##__VA_ARGS__)
#define rxe_dev_dbg(dev, fmt, ...)                                          \
	do {                                                                \
		if (rnicpi_debug_wanted(G_LOG_DOMAIN))                       \
			g_debug("%s: " fmt, (dev)->base.name,              \
				##__VA_ARGS__);                             \
	} while (0)
#define rxe_dev_warn(dev, fmt, ...)                                         \
	g_info("%s: " fmt, (dev)->base.name, ##__VA_ARGS__)
/* What the user must act on (restart the process, start the host
 * service): loud, unlike rxe_dev_warn, and said once per process for
 * each place it is written, whichever device comes first. */
#define rxe_dev_warn_once(dev, fmt, ...)                                    \
	do {                                                                \
		static atomic_bool rxe_said_;                               \
		if (!atomic_exchange(&rxe_said_, true))                     \
			g_warning("%s: " fmt, (dev)->base.name,            \
				  ##__VA_ARGS__);                           \
	} while (0)

/* IBA 9.7.5.2.8: RNR NAK timer code -> microseconds. */
uint32_t rxe_rnr_timer_usec(unsigned int code);

#endif /* VP_RXE_RXE_H */
