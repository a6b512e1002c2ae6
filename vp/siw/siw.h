/* SPDX-License-Identifier: MIT */
/*
 * siw.h - internal structures of the soft-iWARP provider.
 *
 * Locking: each QP has one mutex (qp->lock) that covers its queues, its
 * transmit and receive state machines and its connection state. The
 * device's progress thread takes it to receive and to resume a blocked
 * transmit; an application thread takes it to post (and then transmits
 * directly when the send queue was idle). CQ rings, SRQs and the key table
 * have their own locks, always taken inside qp->lock. dev->lock guards the
 * device's lists and the upcall queue and is a leaf lock.
 *
 * Upcalls (async and connection events) are never made with a lock held:
 * code under a lock queues them with siw_dev_queue_*(), and
 * siw_dev_deliver() hands them to the core once the locks are dropped.
 */
#ifndef SIW_H
#define SIW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <glib.h>

#include "rnicpi/rnicpi.h"
#include "rnicpi/rnicpi_engine.h"
#include "rnicpi/rnicpi_util.h"
#include "vp/siw/iwarp.h"

/* ------------------------------------------------------------------ */
/* Limits                                                              */
/* ------------------------------------------------------------------ */

/* QPs per device, as many as Linux rxe allows; each costs memory only
 * for its queues as created and its read queues as negotiated. */
#define SIW_MAX_QP 65536
#define SIW_MAX_QP_WR 4096
#define SIW_MAX_SGE 16
#define SIW_MAX_INLINE 256
#define SIW_MAX_CQ 1024
#define SIW_MAX_CQE 65536
#define SIW_MAX_MR 65536
#define SIW_MAX_PD 1024
#define SIW_MAX_SRQ 256
#define SIW_MAX_SRQ_WR 4096
#define SIW_MAX_IRD 128
#define SIW_MAX_ORD 128
#define SIW_DEFAULT_IRD 16
#define SIW_DEFAULT_ORD 16
/* Private data the consumer may send: the MPA limit less the 4 bytes of
 * IRD/ORD an enhanced (revision 2) frame carries. */
#define SIW_MAX_PRIVATE_DATA (MPA_MAX_PRIVATE_DATA - sizeof(struct mpa_v2_data))
#define SIW_DEFAULT_MPA_TIMEOUT_MS 10000
/* How long a closed stream waits for the peer's FIN after our last
 * frame before it is reset. */
#define SIW_LINGER_MS 2000
/* FPDUs one receive pass handles before letting other QPs run. */
#define SIW_RX_BUDGET 64
/* poll_rx: a QP is read without poll() first until this many such reads
 * in a row found nothing (rx_poll_pass). */
#define SIW_RX_PROBE_MISSES 256
/* poll_rx: a QP whose CQ was polled this recently is left to the poller
 * (its lease, option park_lease_us). A lease that runs out with bytes
 * waiting ends parking for that QP (siw_qp.c, rx_park_check). */
#define SIW_DEFAULT_PARK_LEASE_US 10000
/* A poll of an empty CQ looks at this many of its QPs' sockets (poll_rx,
 * poll_tx), round robin: all of them for the few QPs a latency-bound
 * consumer has, a bounded cost for a CQ that serves thousands. */
#define SIW_CQ_POLL_QPS 16
/* Default busy_poll_us: how long the progress thread polls after socket
 * traffic before it sleeps. */
#define SIW_DEFAULT_BUSY_POLL_US 50

/* ------------------------------------------------------------------ */
/* Logging: "QP[17] siw_lo: ..." with GLib, silent by default           */
/* ------------------------------------------------------------------ */

/* Debug messages are formatted only when wanted (rnicpi_debug_wanted). */
#define siw_dbg(dev, fmt, ...)                                              \
	do {                                                                \
		if (rnicpi_debug_wanted(G_LOG_DOMAIN))                       \
			g_debug("%s: " fmt, (dev)->base.name,               \
				##__VA_ARGS__);                             \
	} while (0)
#define siw_info(dev, fmt, ...) \
	g_info("%s: " fmt, (dev)->base.name, ##__VA_ARGS__)
/* For what a user must see: a resource limit reached. */
#define siw_warn(dev, fmt, ...) \
	g_warning("%s: " fmt, (dev)->base.name, ##__VA_ARGS__)
#define siw_qp_dbg(qp, fmt, ...)                                            \
	do {                                                                \
		if (rnicpi_debug_wanted(G_LOG_DOMAIN))                       \
			g_debug("QP[%u] %s: " fmt, (qp)->base.qp_num,       \
				(qp)->dev->base.name, ##__VA_ARGS__);       \
	} while (0)
#define siw_qp_info(qp, fmt, ...)                                          \
	g_info("QP[%u] %s: " fmt, (qp)->base.qp_num, (qp)->dev->base.name, \
	       ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Small intrusive list                                                */
/* ------------------------------------------------------------------ */

struct siw_list {
	struct siw_list *next, *prev;
};

static inline void siw_list_init(struct siw_list *l)
{
	l->next = l->prev = l;
}

static inline bool siw_list_empty(const struct siw_list *l)
{
	return l->next == l;
}

static inline void siw_list_add_tail(struct siw_list *head,
				     struct siw_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void siw_list_del(struct siw_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	siw_list_init(n);
}

/* ------------------------------------------------------------------ */
/* Device options                                                      */
/* ------------------------------------------------------------------ */

enum siw_crc_mode {
	SIW_CRC_OFF = 0,      /* use CRC only when the peer asks */
	SIW_CRC_ON = 1,	      /* ask for it */
	SIW_CRC_REQUIRED = 2, /* ask for it, refuse a peer that will not */
};

enum siw_p2p_mode {
	SIW_P2P_NONE = 0,
	SIW_P2P_WRITE = 1, /* offer a zero-length RDMA Write as RTR */
	SIW_P2P_READ = 2,  /* offer a zero-length RDMA Read as RTR */
};

struct siw_options {
	uint8_t mpa_rev;	  /* 1 or 2 */
	enum siw_crc_mode mpa_crc;
	bool mpa_crc_strict;	  /* refuse CRC when mpa_crc=off */
	enum siw_p2p_mode p2p;
	bool large_fpdu;	  /* offer/accept FPDUs beyond the MSS */
	uint32_t mpa_timeout_ms;
	uint32_t ird;		  /* defaults when conn_param says 0 */
	uint32_t ord;
	bool nodelay;		  /* TCP_NODELAY on connected sockets */
	uint32_t max_fpdu;	  /* cap on transmitted FPDU bytes, 0 = MSS */
	bool tx_realign;	  /* lead a message whose payload the kernel
				   * would copy 1-31 bytes ahead of itself
				   * (mod 4 KiB) with small FPDUs */
	uint32_t rts_delay_ms;	  /* initiator: hold the first FPDU this long */
	uint32_t zcopy_min;	  /* MSG_ZEROCOPY from this message size, 0 off */
	bool poll_rx;		  /* polling an empty CQ reads its QPs' sockets */
	bool poll_tx;		  /* ... and writes what waits for room in them */
	uint32_t tx_batch;	  /* FPDUs per sendmsg(), 1..SIW_TX_BATCH */
	uint32_t tx_pack;	  /* messages up to this size are copied
				   * together when more wait, 0 = never */
	uint32_t tx_burst_ns;	  /* a small WR posted this soon after the
				   * last post waits for the next poll or
				   * the progress thread, 0 = never */
	uint32_t busy_poll_us;	  /* progress thread spins this long after
				   * socket traffic before it sleeps */
	uint32_t park_lease_us;	  /* poll_rx: a poll's lease on its QPs */
	uint32_t max_qp;	  /* QPs per device, 1..SIW_MAX_QP */
	uint32_t read_timeout_ms; /* an RDMA Read unanswered this long
				   * fails the stream, 0 = never */
	uint32_t tcp_user_timeout_ms; /* TCP_USER_TIMEOUT and keepalive on
				   * QP streams, 0 = the kernel's */
};

int siw_options_parse(struct siw_options *o, const struct rnicpi_option *opt,
		      const char *devname);

/* ------------------------------------------------------------------ */
/* CRC32c (siw_crc.c)                                                  */
/* ------------------------------------------------------------------ */

/* CRC32c of @buf continuing @crc (0 to start), zlib style. */
uint32_t siw_crc32c(uint32_t crc, const void *buf, size_t len);
/* "isa-l", "sse4.2" or "table". */
const char *siw_crc32c_impl(void);

enum siw_crc_path {
	SIW_CRC_PATH_TABLE,
	SIW_CRC_PATH_SSE42,
	SIW_CRC_PATH_ISAL,
};
/* One named path (falls back to the selected one when not built). */
uint32_t siw_crc32c_path(enum siw_crc_path path, uint32_t crc,
			 const void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

/* What the progress engine's epoll returns: a socket owner. */
enum siw_item_type {
	SIW_ITEM_QP = 1,
	SIW_ITEM_CONN,
};

struct siw_item {
	struct rnicpi_source src;	/* the engine dispatches here */
	enum siw_item_type type;
	struct siw_item *zombie_next; /* on dev->zombies once destroyed */
};

/* A deadline of a QP or conn on the engine's timer heap. */
struct siw_timed {
	struct rnicpi_timer timer;
	struct siw_item *item;
};

/*
 * How sockets moved between the progress engine and a polling consumer
 * (option poll_rx), for tests and debugging. Bytes the park timer finds
 * waited up to the lease (park_lease_us): unpark_timer_data counts
 * those times, each of which also ended parking for its QP (park_off).
 */
struct siw_counters {
	atomic_uint_fast64_t parks;	/* left to a polling consumer */
	atomic_uint_fast64_t unpark_arm;	/* taken back at an arm or unlock */
	atomic_uint_fast64_t unpark_timer;	/* taken back by the timer */
	atomic_uint_fast64_t unpark_timer_data; /* ... with bytes waiting */
	atomic_uint_fast64_t park_off;	/* QPs no longer parked */
	/* sockets left to a thread asleep on a CQ (siw_cq_wait_begin), and
	 * that thread's receive passes that brought bytes */
	atomic_uint_fast64_t wait_claims;
	atomic_uint_fast64_t wait_rx;
	/* recvmsg() calls that found nothing (EAGAIN), a polling
	 * consumer's direct reads of an empty socket (siw_cq_progress) not
	 * counted */
	atomic_uint_fast64_t rx_empty;
};

struct siw_device {
	struct rnicpi_device base;
	struct siw_options opts;
	char ifname[RNICPI_IFNAMSIZ];
	uint32_t mtu;
	unsigned int nd_flags;

	struct rnicpi_key_table mr_keys;
	atomic_uint next_qpn;
	atomic_uint n_qp, n_cq, n_pd, n_srq;
	atomic_uint n_parked;	/* QPs with rx.parked set */
	/* Bumped by every CQ arm on the device: a consumer going to sleep
	 * (on any of its CQs) polls none of them meanwhile. */
	atomic_uint arm_gen;
	pthread_mutex_t park_lock;
	struct siw_list parked;	/* the parked QPs (park_node) */

	pthread_mutex_t lock;
	struct siw_list events;	   /* queued upcalls */
	/* !siw_list_empty(&events), readable without the lock: the data
	 * path asks on every post and poll, and there are hardly ever any */
	atomic_bool has_events;
	bool delivering;
	pthread_t delivering_thread;
	struct siw_item *zombies;  /* freed by the progress thread */
	uint64_t batch_gen;	   /* progress loops completed */
	pthread_cond_t batch_cond;
	pthread_cond_t mr_cond;	   /* an access to a dead MR ended */

	/* The progress engine (rnicpi_engine.h): the sockets, the
	 * deadlines, the wake-up; its thread is the progress thread. */
	struct rnicpi_engine engine;
	bool thread_running;	   /* under lock: zombies wait for it */
	struct siw_counters counters;
};

struct siw_pd {
	struct rnicpi_pd base;
	struct siw_device *dev;
};

/*
 * A registration as the wire and the queues see it: one translation, one
 * STag. What names it (the key table, WRs and messages in flight) holds a
 * reference. rereg_mr never changes one in place: it makes a new one and
 * retires the old as dereg_mr does, so work in flight that resolved
 * addresses through the old translation fails at its next touch instead
 * of writing into pages the consumer has let go of.
 */
struct siw_mr {
	struct siw_device *dev;
	struct rnicpi_pd *pd;
	atomic_int ref;
	uint8_t *addr;
	uint64_t length;
	uint64_t iova;
	unsigned int access;
	atomic_bool valid;	/* false once invalidated */
	uint32_t stag;
	/* dereg_mr: from then on the memory may be gone. References keep
	 * the struct, not the bytes: each touch of the bytes is bracketed
	 * by siw_mr_access_begin/end, and dereg waits for those. */
	atomic_bool dead;
	atomic_uint active;
	/* A region: the memory windows bound to it (dereg/rereg: -EBUSY). */
	atomic_uint n_binds;
	/*
	 * Memory windows (siw_mw.c). A window keeps one struct with is_mw
	 * set in its key table slot for its whole life; it is never valid
	 * itself (no lkey, no remote access by it). A bind makes a new
	 * struct, the binding, which is in no table: siw_stag_get() hands
	 * it out for the window's current STag. A binding never changes
	 * but for valid; its parent is the region it opens onto
	 * (referenced; each touch of the bytes brackets the parent too).
	 */
	bool is_mw;
	enum rnicpi_mw_type mw_type;
	pthread_mutex_t mw_lock;
	struct siw_mr *bound;	/* is_mw: the binding or NULL, under mw_lock */
	struct rnicpi_mw *mw_handle; /* is_mw: the core's handle */
	struct siw_mr *parent;	/* a binding: its region */
	bool qp_bound;		/* a type 2 binding: only QP qpn may use it */
	uint32_t qpn;
	/* From alloc_mr: invalid until a REG_MR WR gives it a translation
	 * (siw_mr_fast_reg), for up to max_len bytes. */
	bool fast_reg;
	uint64_t max_len;
};

/* The MR handle the core holds, and its current registration. */
struct siw_mr_handle {
	struct rnicpi_mr base;
	struct siw_mr *mr;
};

struct siw_cq {
	struct rnicpi_cq base;
	struct siw_device *dev;
	struct rnicpi_cq_ring ring;
	atomic_bool err_reported;
	/* The QPs completing here (siw_cq_link), for siw_cq_progress(). */
	pthread_mutex_t qps_lock;
	struct siw_list qps;
	uint32_t n_qps;		/* on qps */
	/* When a poll last looked at the QPs' sockets for data, and
	 * whether the last such look from poll_cq with n 0 found some */
	atomic_uint_fast64_t rx_polled_ns;
	atomic_bool nudge_found;
	/* poll_cq calls (option tx_burst_ns: a post after a poll is no
	 * burst) */
	atomic_uint_fast64_t polls;
};

/*
 * A consumer that dequeues completions it has in hand (poll_cq with n 0)
 * has its QPs' sockets looked at for data at every such call while the
 * last look found some, otherwise at most this often: a parked socket
 * keeps flowing while a bulk sender reaps a window of completions one by
 * one (fi_rma_bw, both sides writing 64 KiB: 1.86 GB/s without the look,
 * 2.33 with one at every call), and a ping-pong is spared the poll() it
 * costs (fi_msg_pingpong 8 B: 6.27 us with one at every call, 5.74
 * without).
 */
#define SIW_NUDGE_RX_NS 5000

/* A QP on the list of its send or receive CQ. */
struct siw_cq_link {
	struct siw_list node;
	struct siw_qp *qp;
	struct siw_cq *cq;	/* NULL: not on a list */
};

/* A posted receive. */
struct siw_rqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct rnicpi_sge sge[SIW_MAX_SGE];
};

struct siw_srq {
	struct rnicpi_srq base;
	struct siw_device *dev;
	pthread_mutex_t lock;
	struct siw_rqe *ring;
	uint32_t capacity, head, count;
	uint32_t max_sge;
	uint32_t limit;		/* SRQ_LIMIT_REACHED when count drops below */
	atomic_uint users;	/* QPs attached */
};

enum siw_wqe_state {
	SIW_WQE_QUEUED = 0,
	SIW_WQE_WAIT_READ,	/* Read Request sent, response pending */
	SIW_WQE_DONE,
};

/* A posted send WR, copied. */
struct siw_wqe {
	uint64_t wr_id;
	enum rnicpi_wr_opcode opcode;
	unsigned int flags;	/* RNICPI_SEND_*, SIGNALED resolved */
	uint32_t num_sge;
	struct rnicpi_sge sge[SIW_MAX_SGE];
	uint64_t total_len;
	uint32_t rkey;
	uint64_t raddr;
	uint32_t inv_stag;
	/* BIND_MW: the window, the key it takes, what it opens. */
	struct rnicpi_mw *bind_mw;
	uint32_t bind_rkey;
	struct rnicpi_mw_bind_info bind;
	/* REG_MR: rnicpi.h's wr.reg_mr; the region referenced from post
	 * until the WR runs or is flushed (dereg_mr may come meanwhile). */
	struct siw_mr *reg_mr;
	uint8_t *reg_addr;
	uint64_t reg_length;
	uint64_t reg_iova;
	unsigned int reg_access;
	uint32_t reg_key;
	uint8_t *inline_data;	/* slot in qp->inline_buf, or NULL */
	enum siw_wqe_state state;
	/* Set with DONE: the outcome, held until every WR posted before
	 * this one has completed (siw_sq_complete). */
	enum rnicpi_wc_status wc_status;
	uint32_t vendor_err;
};

/* An outstanding Read Request we sent (RFC 5040 §6.3, ORD). */
struct siw_orqe {
	int32_t sq_idx;		/* SQ slot, -1 for the p2p RTR read */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t got;		/* response bytes placed */
	uint64_t start_ms;	/* when the Read Request was started */
	uint32_t n_seg;
	struct iovec seg[SIW_MAX_SGE]; /* resolved sink memory */
	struct siw_mr *mr[SIW_MAX_SGE];
};

/* A Read Request from the peer we owe a response to (IRD). */
struct siw_irqe {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
	struct siw_mr *mr;	/* source region, checked, referenced */
	uint8_t *src;
};

/* QP connection phases beyond the verbs state. */
enum siw_llp_state {
	SIW_LLP_NONE = 0,	/* no socket */
	SIW_LLP_AWAIT_REPLY,	/* initiator: MPA Request sent */
	SIW_LLP_AWAIT_RTR,	/* responder: Reply sent, RTR pending */
	SIW_LLP_RDMA,		/* FPDUs flow */
	SIW_LLP_DRAIN,		/* our FIN sent, discarding until the peer's */
	SIW_LLP_CLOSED,
};

enum siw_tx_kind {
	SIW_TX_IDLE = 0,
	SIW_TX_SQ,
	SIW_TX_RRESP,
	SIW_TX_TERM,
	SIW_TX_RTR_WRITE,
	SIW_TX_RTR_READ,
};

/* FPDUs of one message per sendmsg(): 16 of loopback's 32 KiB ones
 * make half a MiB, which halves the calls for 1 MiB WRITEs. */
#define SIW_TX_BATCH 16

/* Small whole messages queued back to back are copied into one buffer of
 * this size and written with one sendmsg() (option tx_pack: messages up
 * to SIW_DEFAULT_TX_PACK bytes by default). */
#define SIW_TX_PACK (32u * 1024)
#define SIW_DEFAULT_TX_PACK 4096u
#define SIW_DEFAULT_TX_BURST_NS 2000u
/* The post that makes a run this long is the first to wait (tx_burst_ns) */
#define SIW_BURST_RUN 3

/*
 * The transmit state machine (siw_tx.c): each step returns the next
 * state. Between calls the transmitter rests in SELECT, or in SEND when
 * the socket filled up with FPDUs half written.
 */
enum siw_tx_state {
	SIW_TXS_SELECT = 0,	/* between batches: drop a message for a
				 * Terminate, take the next message, or
				 * write the pack alone when none follows */
	SIW_TXS_BUILD,		/* build the message's next FPDUs */
	SIW_TXS_PACK,		/* copy its one FPDU into the pack */
	SIW_TXS_SEND,		/* write the FPDUs built */
	SIW_TX_STATE_COUNT,
};

/* One built FPDU: its header and trailer, the payload between them taken
 * from the message at @off. */
struct siw_tx_fpdu {
	uint8_t hdr[IWARP_MAX_HDR];
	uint32_t hdr_len;
	uint64_t off;
	uint32_t payload;
	uint8_t trailer[8];
	uint32_t trailer_len;
};

struct siw_tx {
	/* The message under way: cleared as it starts (siw_tx_begin). */
	enum siw_tx_kind kind;
	int32_t sq_idx;
	uint8_t opcode;
	uint64_t msg_len;
	uint64_t msg_off;	/* payload bytes in FPDUs already sent */
	uint32_t msn;		/* of the current untagged message */
	uint32_t n_src;
	enum siw_tx_state state;
	uint32_t n_fpdu;
	uint32_t batch_payload;	/* payload bytes in FPDUs of the batch */
	uint32_t fpdu_total;	/* bytes in them */
	uint32_t fpdu_sent;
	bool zc;		/* this message goes with MSG_ZEROCOPY */
	bool zc_used;		/* ... and at least one call went so */
	/* Filled as the message starts and its FPDUs are built, and read
	 * only up to n_src and n_fpdu: not cleared per message (1.4 KB).
	 * src_mr[i] is NULL for every i >= n_src. */
	/* source memory of the message */
	struct iovec src[SIW_MAX_SGE];
	struct siw_mr *src_mr[SIW_MAX_SGE];
	/* the FPDUs on their way: up to SIW_TX_BATCH of one message, built
	 * together and written with one sendmsg() */
	struct siw_tx_fpdu fpdu[SIW_TX_BATCH];
	bool want_out;		/* EPOLLOUT armed */
	/* Whole FPDUs of small messages already completed, copied here to
	 * go out together (option tx_pack); they precede anything else on
	 * the stream. Dropped only with the socket. */
	uint8_t *pack;		/* SIW_TX_PACK bytes, allocated on first use */
	uint32_t pack_len;	/* bytes in it */
	uint32_t pack_sent;	/* of those, written */
};

/* A message sent with MSG_ZEROCOPY whose pages the kernel may still read:
 * its WR completes (or its Read Response's region is let go) once the
 * error queue reports send call @last_id done. */
#define SIW_ZC_PENDING 64
struct siw_zc_pending {
	uint32_t last_id;
	int32_t sq_idx;		/* -1: a Read Response */
	struct siw_mr *mr;	/* Read Response source, referenced */
};

enum siw_rx_state {
	SIW_RX_CTRL = 0,	/* first 4 bytes of an FPDU */
	SIW_RX_HDR,		/* rest of the header */
	SIW_RX_PAYLOAD,
	SIW_RX_TRAILER,		/* pad and CRC */
	SIW_RX_STOP,		/* after an error: read nothing more */
	SIW_RX_DISCARD,		/* after our Terminate/FIN: drop bytes */
	SIW_RX_STATE_COUNT,
};

/* Every FPDU is longer than the shortest header (tagged, 16 bytes): a
 * header read asks for that many bytes first. */
#define SIW_RX_HDR_MIN sizeof(struct iwarp_tagged_hdr)
/* Bytes read past what a step needed wait in the stash for the next
 * steps, so that a small FPDU costs one recvmsg with its header read, and
 * a run of them one recvmsg per stash. */
#define SIW_RX_STASH 8192
/* After a payload of at least SIW_RX_STASH bytes, read ahead only this
 * much (the next header and a little): what lands in the stash is copied
 * later, what lands in the target is not. */
#define SIW_RX_AHEAD_LARGE 64

struct siw_rx {
	enum siw_rx_state state;
	uint8_t hdr[IWARP_MAX_HDR];
	uint32_t hdr_len, hdr_got;
	uint32_t ulpdu_len, payload_len, payload_got;
	uint32_t pad_len, trailer_got;
	uint8_t trailer[8];
	/* Bytes read ahead and not consumed yet: [stash_off, stash_len).
	 * A step reads the socket only once the stash is empty. Its
	 * SIW_RX_STASH bytes are allocated by the first receive pass and
	 * kept for the QP's next connections: a QP that never receives
	 * (most of a client's, many idle ones) has none. */
	uint8_t *stash;
	uint32_t stash_off, stash_len;
	/* The last read of this pass came back short: the socket held no
	 * more at that moment (see siw_qp_rx). */
	bool drained;
	/* A polling consumer's pass reads the socket without asking poll()
	 * first (siw_cq_progress): the read that finds it empty is the
	 * question, not counted in rx_empty. @misses: such reads in a row
	 * that found nothing. */
	bool probing;
	uint32_t misses;
	uint32_t crc;
	uint8_t opcode;
	/* where the payload goes */
	uint32_t n_dst;
	struct iovec dst[SIW_MAX_SGE];
	uint64_t dst_off;	/* offset of this FPDU in the dst list */
	struct siw_mr *wmr;	/* tagged Write target, referenced */
	uint8_t term_body[TERM_MAX_BODY];
	/* the untagged Send in progress */
	bool send_active;
	bool send_from_srq;
	struct siw_rqe rqe;
	struct siw_mr *rqe_mr[SIW_MAX_SGE];
	struct iovec rqe_seg[SIW_MAX_SGE];
	uint32_t rqe_nseg;
	uint64_t rqe_len;
	uint32_t send_msn;
	uint64_t send_got;
	/* expected MSN per untagged queue */
	uint32_t msn[DDP_QN_COUNT];
	bool first_fpdu_seen;
	/* EPOLLIN is off: an application polls the CQ (poll_rx) and reads
	 * the socket itself; a timer checks it still does. */
	bool parked;
	/* Its consumer waited for data without polling the CQ (it watches
	 * memory, say): this QP is not parked again. */
	bool park_off;
};

/* A Terminate to send (or received) (RFC 5040 §4.8). */
struct siw_term {
	bool valid;
	uint8_t layer, etype, ecode;
	uint32_t body_len;
	uint8_t body[TERM_MAX_BODY];
};

struct siw_qp {
	struct rnicpi_qp base;
	struct siw_item item;
	struct siw_device *dev;
	struct siw_pd *pd;
	struct siw_cq *scq, *rcq;
	struct siw_cq_link cq_link[2];	/* on scq's and (if other) rcq's */
	struct siw_srq *srq;
	pthread_mutex_t lock;

	enum rnicpi_qp_state state;
	unsigned int access;	/* RNICPI_ACCESS_REMOTE_* the QP allows */
	bool sq_sig_all;
	struct rnicpi_qp_cap cap;
	bool destroyed;

	/* send queue: head = oldest not freed, tx = next to start; of the
	 * sq_count WRs in it, the last sq_unstarted have not started (a
	 * full ring has sq_tx == sq_head whether none or all did) */
	struct siw_wqe *sq;
	uint32_t sq_size, sq_head, sq_tx, sq_count, sq_unstarted;
	uint8_t *inline_buf;

	/* receive queue (no SRQ), under rq_lock, not the QP's lock: a post
	 * need not wait for a receive pass (up to SIW_RX_BUDGET FPDUs) to
	 * end. Order: lock, then rq_lock. rq_closed: the QP went to ERR
	 * (or TERMINATE) and its RQ was flushed; what is posted now is
	 * flushed at once. */
	pthread_mutex_t rq_lock;
	struct siw_rqe *rq;
	uint32_t rq_size, rq_head, rq_count;
	bool rq_closed;

	/* reads: ORQ = ours outstanding (ORD), IRQ = the peer's (IRD);
	 * rings sized for the connection's negotiated ORD and IRD
	 * (siw_qp_read_queues_size), none before it has one */
	struct siw_orqe *orq;
	uint32_t orq_size, orq_head, orq_count, ord;
	struct siw_irqe *irq;
	uint32_t irq_size, irq_head, irq_count, ird;

	/* connection */
	int fd;
	bool watched;		/* fd is in the progress thread's epoll set */
	enum siw_llp_state llp;
	bool crc;		/* MPA CRC in use on this stream */
	bool initiator;
	uint32_t mss_payload;	/* max ULPDU we send */
	bool large_fpdu;	/* both ends agreed to FPDUs beyond the MSS */
	uint16_t rtr;		/* MPA_V2_*_RTR negotiated, 0 none */
	bool rtr_pending;	/* initiator: RTR not sent yet */
	bool tx_hold;		/* initiator: rts_delay_ms not over yet */
	atomic_uint_fast64_t polled_ns;	/* siw_cq_progress() last read here */
	atomic_uint polled_gen;	/* the device's arm_gen then */
	/* The CQ whose waiter watches the socket (siw_cq_wait_begin):
	 * parked, read by that thread when it wakes; NULL when none. */
	_Atomic(struct siw_cq *) wait_cq;
	atomic_int wait_fd;	/* fd when claimed (read without the lock) */
	struct siw_list park_node;	/* on dev->parked while parked */
	/* FPDUs built and sendmsg() calls that wrote some of them */
	uint64_t tx_fpdus, tx_calls;
	/* The last post_send: when it returned, its CQs' polls and
	 * rx_fpdus then, the posts in its run (option tx_burst_ns) */
	uint64_t tx_post_ns, tx_post_polls, tx_post_rx;
	uint32_t tx_run;
	/* recvmsg() calls that brought bytes, the bytes, FPDUs done; of
	 * those calls, the ones a polling consumer made without asking
	 * poll() first (rx_poll_pass) */
	uint64_t rx_reads, rx_bytes, rx_fpdus, rx_probe_reads;
	/* MSG_ZEROCOPY: send calls made and reported done (kernel ids) */
	bool zc_enabled;
	uint32_t zc_next, zc_done;
	struct siw_zc_pending *zc_pend;	/* SIW_ZC_PENDING, once enabled */
	uint32_t zc_head, zc_count;
	bool closing;		/* graceful close asked */
	bool connected;		/* ESTABLISHED was reported */
	bool disc_reported;
	struct siw_timed timed;
	struct siw_timed read_timed;	/* option read_timeout_ms */
	/* MPA Reply being read (initiator) */
	struct mpa_rr mpa_hdr;
	uint8_t mpa_pdata[MPA_MAX_PRIVATE_DATA];
	uint32_t mpa_got;
	uint8_t mpa_req_flags;	/* what our Request asked for */
	uint8_t mpa_req_rev;
	bool mpa_req_p2p;
	uint16_t mpa_req_rtr;
	bool large_fpdu_offered;

	uint32_t tx_msn[DDP_QN_COUNT];
	struct siw_tx tx;
	struct siw_rx rx;
	struct siw_term term;	/* ours, queued or sent */
	bool term_sent;
	bool term_received;
};

/* Responder connection before the QP is chosen (iw_take_request). */
enum siw_conn_state {
	SIW_CONN_AWAIT_REQ = 0,
	SIW_CONN_REQ_DONE,
	SIW_CONN_DEAD,
};

/*
 * Lifetime: a conn is referenced by the core from iw_take_request until it
 * answers (conn_accept / conn_reject) or has been told ERROR, by the
 * progress thread while its socket is in the poll set (and on the
 * deadline list), and by every queued upcall that names it. The last
 * siw_conn_put() hands it to siw_dev_defer_free().
 */
struct siw_conn {
	struct rnicpi_conn base;
	struct siw_item item;
	struct siw_device *dev;
	atomic_int ref;
	pthread_mutex_t lock;
	int fd;
	enum siw_conn_state state;
	bool core_owned;	/* the core's reference is still held */
	bool polled;		/* the poll set's reference is still held */
	struct mpa_rr hdr;
	uint8_t pdata[MPA_MAX_PRIVATE_DATA];
	uint32_t got;
	struct siw_timed timed;
	/* the peer's Request, parsed */
	uint8_t rev;
	uint8_t flags;
	bool enhanced;
	uint16_t peer_ird, peer_ord;
	bool p2p;
	uint16_t rtr_offered;
};

static inline struct siw_device *to_siw_dev(struct rnicpi_device *d)
{
	return container_of(d, struct siw_device, base);
}

static inline struct siw_pd *to_siw_pd(struct rnicpi_pd *p)
{
	return container_of(p, struct siw_pd, base);
}

/* The registration an MR handle stands for now (not a new reference). */
static inline struct siw_mr *to_siw_mr(struct rnicpi_mr *m)
{
	return container_of(m, struct siw_mr_handle, base)->mr;
}

static inline struct siw_cq *to_siw_cq(struct rnicpi_cq *c)
{
	return container_of(c, struct siw_cq, base);
}

static inline struct siw_srq *to_siw_srq(struct rnicpi_srq *s)
{
	return container_of(s, struct siw_srq, base);
}

static inline struct siw_qp *to_siw_qp(struct rnicpi_qp *q)
{
	return container_of(q, struct siw_qp, base);
}

static inline struct siw_conn *to_siw_conn(struct rnicpi_conn *c)
{
	return container_of(c, struct siw_conn, base);
}

/* ------------------------------------------------------------------ */
/* siw_main.c: device, progress thread, upcall queue                   */
/* ------------------------------------------------------------------ */

uint64_t siw_now_ms(void);
void siw_dev_wake(struct siw_device *dev);
/* Register @fd for @item with @events (EPOLLIN ...); 0 or -errno. */
int siw_dev_poll_add(struct siw_device *dev, int fd, struct siw_item *item,
		     uint32_t events);
int siw_dev_poll_mod(struct siw_device *dev, int fd, struct siw_item *item,
		     uint32_t events);
void siw_dev_poll_del(struct siw_device *dev, int fd);
/* Hand @item to the progress thread to free once no epoll event can
 * name it any more. */
void siw_dev_defer_free(struct siw_device *dev, struct siw_item *item);
/* Wait until no other thread is in the middle of an upcall. */
void siw_dev_quiesce(struct siw_device *dev);
/* Deadline list (MPA time-outs, lingering closes): the progress thread
 * calls siw_qp_timeout / siw_conn_timeout once @ms have passed. */
void siw_dev_timed_add(struct siw_device *dev, struct siw_timed *t,
		       uint32_t ms);
void siw_dev_timed_add_ns(struct siw_device *dev, struct siw_timed *t,
			  uint64_t ns);
void siw_dev_timed_del(struct siw_device *dev, struct siw_timed *t);
void siw_device_destroy(struct rnicpi_device *d);
/* Stop the progress thread as siw_device_destroy() does, leaving the
 * device for a harness to drive with siw_dev_progress(). */
void siw_dev_stop_thread(struct siw_device *dev);
/*
 * One pass of the progress thread: wait up to @timeout_ms (0: not at all,
 * -1: until something happens) for socket events and handle them, run
 * the expired deadlines, deliver the upcalls, free what was destroyed.
 * *@busy (may be NULL) is set when the traffic makes polling on worth it
 * (option busy_poll_us). Returns how many events came, or -errno when
 * epoll failed. The progress thread loops on it; a test harness that
 * stopped the thread may call it instead.
 */
int siw_dev_progress(struct siw_device *dev, int timeout_ms, bool *busy);

void siw_dev_queue_async(struct siw_device *dev,
			 const struct rnicpi_async_event *ev);
void siw_dev_queue_conn(struct siw_device *dev,
			const struct rnicpi_conn_event *ev);
/* Drop queued events that name @qp / @conn (they are being destroyed). */
void siw_dev_purge_events(struct siw_device *dev, const void *obj);
/* Make the queued upcalls; call with no lock held. */
void siw_dev_deliver(struct siw_device *dev);

/* ------------------------------------------------------------------ */
/* siw_verbs.c                                                         */
/* ------------------------------------------------------------------ */

extern const struct rnicpi_device_ops siw_device_ops;

void siw_mr_get(struct siw_mr *mr);
void siw_mr_put(struct siw_mr *mr);
/*
 * Bracket one touch of the bytes of @n regions (one recvmsg/sendmsg or
 * CRC pass, never a wait): false, with nothing held, when one of them
 * was deregistered, whose memory the application may have freed. NULL
 * entries are skipped. Under the QP's lock or not; never blocks.
 */
bool siw_mrs_access_begin(struct siw_mr *const *mrs, uint32_t n);
void siw_mrs_access_end(struct siw_mr *const *mrs, uint32_t n);
/* Resolve a local SGE against its MR: PD, @access, bounds. On success
 * *@mr holds a reference and *@ptr the first byte. Returns 0 or
 * RNICPI_WC_LOC_PROT_ERR-style -EACCES/-EINVAL/-ENOENT. */
/* siw_mw.c: memory windows. siw_stag_get: what a remote STag names for
 * access, a region or a window's binding (referenced), or NULL. */
struct siw_mr *siw_stag_get(struct siw_device *dev, uint32_t stag);
/* Can @mr (from siw_stag_get) still be used: valid, and for a binding,
 * its region too? */
bool siw_mr_usable(const struct siw_mr *mr);
/* Invalidate @stag for @qp (LOCAL_INV, or Send with Invalidate when
 * @remote): 0, -ENOENT for no such STag, -EPERM when it may not be. */
int siw_stag_invalidate(struct siw_qp *qp, uint32_t stag, bool remote);
enum rnicpi_wc_status siw_mr_fast_reg(struct siw_qp *qp,
				      const struct siw_wqe *w);
enum rnicpi_wc_status siw_mw_bind(struct siw_qp *qp,
				  const struct siw_wqe *w);
int siw_alloc_mw(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		 struct rnicpi_mw **out);
int siw_dealloc_mw(struct rnicpi_mw *mw);
/* A Read's sink SGE that names a window (RNICPI_SEND_SINK_MW): like
 * siw_sge_resolve; and the sink's key invalidated after the Read
 * (RNICPI_SEND_SINK_INV). */
int siw_sink_resolve(struct siw_qp *qp, const struct rnicpi_sge *sge,
		     struct siw_mr **out, uint8_t **ptr);
void siw_sink_invalidate(struct siw_qp *qp, uint32_t key);
int siw_sge_resolve(struct siw_device *dev, struct siw_pd *pd,
		    const struct rnicpi_sge *sge, unsigned int access,
		    struct siw_mr **mr, uint8_t **ptr);
/* Take one RQE from @srq; false when empty. Queues SRQ_LIMIT events. */
bool siw_srq_take(struct siw_srq *srq, struct siw_rqe *out);
void siw_cq_push(struct siw_cq *cq, const struct rnicpi_wc *wc,
		 bool solicited);

int siw_create_qp(struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		  struct rnicpi_qp **out);
int siw_modify_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		  unsigned int mask);
int siw_query_qp(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		 unsigned int mask, struct rnicpi_qp_init_attr *init_attr);
int siw_destroy_qp(struct rnicpi_qp *qp);
int siw_post_send(struct rnicpi_qp *qp, const struct rnicpi_send_wr *wr,
		  const struct rnicpi_send_wr **bad);
int siw_post_recv(struct rnicpi_qp *qp, const struct rnicpi_recv_wr *wr,
		  const struct rnicpi_recv_wr **bad);

/* ------------------------------------------------------------------ */
/* siw_qp.c: states, completions, flush, Terminate, close              */
/* ------------------------------------------------------------------ */

/* Complete SQ slot @idx with @status (signalled or error). */
/* The completion opcode of a send WR's opcode. */
enum rnicpi_wc_opcode siw_wc_opcode(enum rnicpi_wr_opcode op);
void siw_sq_complete(struct siw_qp *qp, uint32_t idx,
		     enum rnicpi_wc_status status, uint32_t vendor_err);
/* Free finished slots at the head of the SQ. */
/* Move to ERR: flush every outstanding WR. Under qp->lock. */
void siw_qp_to_error(struct siw_qp *qp);
/*
 * Protocol violation found at @layer/@etype/@ecode (RFC 5040 §7.4):
 * queue our Terminate (copying the offending header from rx when
 * @with_hdr), move to TERMINATE, report @event to the core.
 */
void siw_qp_terminate(struct siw_qp *qp, uint8_t layer, uint8_t etype,
		      uint8_t ecode, bool with_hdr,
		      enum rnicpi_event_type event);
/* A Terminate arrived: act on it. */
void siw_qp_term_received(struct siw_qp *qp);
/* The stream ended: @status 0 orderly, else -errno. Flushes, closes. */
void siw_qp_llp_closed(struct siw_qp *qp, int status);
/* Close the socket now (with RST when @abort). */
void siw_qp_socket_close(struct siw_qp *qp, bool abort);
/* Does @fd hold bytes to read (or a hang-up) right now? poll(), which
 * looks without taking the socket's lock. */
bool siw_fd_readable(int fd);
/* Our side is done sending: FIN and wait (bounded) for the peer's. */
void siw_qp_llp_shutdown(struct siw_qp *qp);
/* Socket events of @qp, in the progress thread; true when what it read
 * makes more soon likely worth polling for (option busy_poll_us). */
bool siw_qp_handle(struct siw_qp *qp, uint32_t events);
void siw_qp_timeout(struct siw_qp *qp);

/* siw_park.c: who reads a QP's socket (option poll_rx). Under qp->lock:
 * siw_qp_set_parked sets or clears rx.parked, keeping dev->n_parked;
 * siw_qp_park_recheck(_at) gives a parked socket back to the engine if
 * its consumer no longer polls (a CQ was armed, or its lease ran out;
 * @now a clock read of the caller's, or 0); siw_qp_rx_park leaves it to
 * a polling consumer when data comes (false: read it now);
 * siw_qp_rx_unpark gives it back; siw_qp_park_timer is the park timer
 * (siw_qp_timeout). */
void siw_qp_set_parked(struct siw_qp *qp, bool parked);
void siw_qp_park_recheck(struct siw_qp *qp);
void siw_qp_park_recheck_at(struct siw_qp *qp, uint64_t now);
bool siw_qp_rx_park(struct siw_qp *qp);
void siw_qp_rx_unpark(struct siw_qp *qp);
void siw_qp_park_timer(struct siw_qp *qp);

/* Size the ORQ and IRQ rings for the ORD and IRD just negotiated (one
 * entry at least: a Read RTR takes an ORQ entry whatever ORD is); the
 * rings are empty. 0 or -ENOMEM. */
int siw_qp_read_queues_size(struct siw_qp *qp);
/* Option read_timeout_ms: the oldest outstanding Read's deadline, from
 * the progress thread; siw_qp_read_timer_arm() (under qp->lock) runs the
 * timer for the Read now at the head of the ORQ, or stops it. */
void siw_qp_read_timeout(struct siw_qp *qp);
void siw_qp_read_timer_arm(struct siw_qp *qp);
/* The ORQ's orq_size entries, allocated at the first Read: false when
 * there is no memory for them. */
bool siw_qp_orq_alloc(struct siw_qp *qp);
void siw_qp_unlock(struct siw_qp *qp);
/* The same with a clock read the caller made (0: none) */
void siw_qp_unlock_at(struct siw_qp *qp, uint64_t now);

/* ------------------------------------------------------------------ */
/* siw_tx*.c / siw_rx*.c: transmit and receive                         */
/* ------------------------------------------------------------------ */

/* Have the progress thread's epoll watch on @qp's socket what its state
 * asks for; @parking: the socket was just parked (siw_qp.c). */
void siw_qp_poll_update(struct siw_qp *qp, bool parking);
/* Put @qp on its CQs' lists, or take it off (siw_qp_verbs.c). */
void siw_qp_cq_attach(struct siw_qp *qp);
void siw_qp_cq_detach(struct siw_qp *qp);
/* Read what the sockets of @cq's QPs hold, from the thread polling the
 * empty CQ (option poll_rx; siw_park.c, as the three below). */
bool siw_cq_progress(struct siw_cq *cq, bool rx);
/* @cq was armed: its QPs' sockets go back to the progress thread. */
void siw_cq_unpark(struct siw_cq *cq);
/* The same for every parked QP of @dev (an arm of any of its CQs, or a
 * consumer about to sleep without one: consumer_blocks). */
void siw_dev_unpark(struct siw_device *dev);
/* A thread is about to sleep on @cq: up to @max of its QPs' sockets for
 * it to watch (rnicpi's cq_wait_begin), and the end of that. */
int siw_cq_wait_begin(struct siw_cq *cq, int *fds, int max);
void siw_cq_wait_end(struct siw_cq *cq);

/* Turn SO_ZEROCOPY on when the device asks for it (zcopy_min). */
void siw_tx_zc_setup(struct siw_qp *qp);
/* Read MSG_ZEROCOPY notifications from the error queue; complete what
 * they release. Under qp->lock. */
void siw_tx_zc_reap(struct siw_qp *qp);
/* Drop every pending zero-copy record (flush, close). */
void siw_tx_zc_flush(struct siw_qp *qp);
/* Send what can be sent without blocking. Under qp->lock. */
void siw_qp_tx(struct siw_qp *qp);
/* Leave what the send queue holds to the progress thread (EPOLLOUT,
 * due at once) or to the consumer's next poll (poll_tx). */
void siw_qp_tx_kick(struct siw_qp *qp);
/* Is there anything for the transmitter to do? */
bool siw_qp_tx_pending(struct siw_qp *qp);
void siw_tx_release(struct siw_qp *qp);
/* Receive and process FPDUs until the socket would block. */
void siw_qp_rx(struct siw_qp *qp);
void siw_rx_release(struct siw_qp *qp);
extern const char *const siw_rx_state_names[];
extern const char *const siw_tx_state_names[];

/* Largest ULPDU to send for an MSS of @mss bytes. */
uint32_t siw_ulpdu_max(uint32_t mss, bool large);

/* ------------------------------------------------------------------ */
/* siw_cm.c: MPA                                                       */
/* ------------------------------------------------------------------ */

int siw_iw_connect(struct rnicpi_qp *qp, int sockfd,
		   const struct rnicpi_conn_param *param);
int siw_iw_take_request(struct rnicpi_device *dev, int sockfd,
			void *core_ctx, struct rnicpi_conn **out);
int siw_conn_accept(struct rnicpi_conn *conn, struct rnicpi_qp *qp,
		    const struct rnicpi_conn_param *param);
int siw_conn_reject(struct rnicpi_conn *conn, const void *private_data,
		    uint32_t private_data_len);
void siw_conn_handle(struct siw_conn *conn, uint32_t events);
void siw_conn_timeout(struct siw_conn *conn);
void siw_conn_free(struct siw_conn *conn);
void siw_conn_get(struct siw_conn *conn);
/* Drop a reference; the last one defers the free. No conn->lock held. */
void siw_conn_put(struct siw_conn *conn);
/* An ERROR upcall about @conn was delivered: the core is done with it. */
void siw_conn_core_done(struct siw_conn *conn);
/* Initiator: bytes of the MPA Reply arrived. Under qp->lock. */
void siw_qp_mpa_reply_rx(struct siw_qp *qp);
/* Fill an event with the socket's addresses. */
void siw_conn_event_addrs(int fd, struct rnicpi_conn_event *ev);
/* Send an MPA Request (@request) or Reply: header, the IRD/ORD word when
 * @v2, then private data; waits up to @timeout_ms for room. */
int siw_mpa_send_rr(int fd, bool request, uint8_t rev, uint8_t flags,
		    const struct mpa_v2_data *v2, const void *pdata,
		    uint32_t pd_len, uint32_t timeout_ms);
/* Non-blocking and TCP_NODELAY as the device says. */
int siw_socket_setup(struct siw_device *dev, int fd);
/* Largest ULPDU this QP's stream sends (MSS, max_fpdu, large FPDUs). */
uint32_t siw_stream_ulpdu_max(struct siw_qp *qp, bool large);

/* The provider description (siw_main.c); siw_entry.c hands it out. */
extern const struct rnicpi_provider siw_provider;

#endif /* SIW_H */
