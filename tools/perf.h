/* SPDX-License-Identifier: MIT */
/*
 * perf.h - the measurement engine behind hostrdma-perf and the README
 * demo (hostrdma-demo): connections, the control exchange, and the
 * bandwidth and latency loops for RDMA Write, RDMA Read, Send and
 * atomics, all on IT-API.
 *
 * A run is one control connection (Send/Receive of struct perf_ctl)
 * plus -q data connections. The client sends its parameters and buffer
 * adverts; the server answers with its own; then for every message size
 * both sides meet (READY), the active side(s) run, and each reports its
 * numbers to the other (DONE), so both print the same table.
 */
#ifndef HOSTRDMA_PERF_H
#define HOSTRDMA_PERF_H

#include "tools/tool_util.h"

#include <stdbool.h>
#include <stdint.h>

#define PERF_MAX_QPS 64
#define PERF_MAX_SIZE (8ull << 20)	/* -a goes from 2 B to 8 MiB */
#define PERF_DEFAULT_PORT 18515		/* perftest's */

enum perf_verb { PERF_WRITE, PERF_READ, PERF_SEND, PERF_ATOMIC };

/* -A: perftest's atomic types (atomic_bw, atomic_lat). */
enum perf_atomic { PERF_FETCH_AND_ADD, PERF_CMP_AND_SWAP };

/* --output: one number per size instead of the table. */
enum perf_output { PERF_OUT_TABLE, PERF_OUT_BANDWIDTH, PERF_OUT_MSG_RATE,
		   PERF_OUT_LATENCY };

/* What the banner says about where the run goes (perf_describe). */
struct perf_where {
	char device[64];
	char transport[32];
	char local[64], remote[64];
};

/*
 * Round trips a latency test makes before the ones it measures (--warmup).
 * Two processes that spin may start on one core (a woken server is placed
 * beside its waker) and then take turns at 40-60 us a half round trip for
 * 12-60 ms, until the load balancer splits them; UCX's ucx_perftest warms
 * up for 10000 iterations by default.
 */
#define PERF_WARMUP 1000

struct perf_opts {
	enum perf_verb verb;
	bool lat;			/* a _lat test, else _bw */
	const char *server;		/* client: the server's address */
	const char *bind;		/* server: listen on this address only */
	const char *device;		/* -d: the IA (interface name) */
	uint16_t port;			/* -p */
	uint64_t size;			/* -s */
	bool all_sizes;			/* -a */
	uint64_t all_max;		/* -a's largest: 8 MiB, or what
					 * RLIMIT_MEMLOCK lets us pin */
	uint64_t iters;			/* -n */
	uint64_t warmup;		/* --warmup: round trips before the
					 * measured ones (latency tests) */
	unsigned int duration_s;	/* -D: run by time, not count */
	unsigned int qps;		/* -q */
	bool bidir;			/* -b */
	unsigned int inline_size;	/* -I: only 0, IT-API has no inline
					 * data */
	unsigned int ib_port;		/* -i: the spigot + 1 */
	enum perf_atomic atomic;	/* -A */
	enum perf_output output;	/* --output */
	bool cpu_util;			/* --cpu_util: a CPU column */
	bool run_infinitely;		/* --run_infinitely: -D runs of
					 * one size until perf_stop */
	bool report_both;		/* --report-both: -b's directions
					 * each on its own line */
	struct perf_where where;	/* for the banner, once connected */
	unsigned int tx_depth;		/* -t */
	unsigned int rx_depth;		/* -r */
	unsigned int cq_mod;		/* -Q: one completion per cq_mod */
	unsigned int post_list;		/* -l: WRs started together
					 * (IT_COALESCE_WR_FLAG on the others) */
	unsigned int outs;		/* -o: Reads/atomics in flight per QP */
	bool events;			/* -e: sleep on events, do not poll */
	bool json;			/* --json */
	bool quiet;			/* no progress lines, no banner */
	bool perftest_cm;		/* -R: perftest's rdma_cm exchange */
	bool verify;			/* check the data of every message */
	bool mbps;			/* table in MB/s (perftest) not Gb/s */
	bool loopback;			/* --loopback: both ends here */
	/* server: set by the caller to end the wait for a client (a
	 * --loopback client that failed before it connected) */
	const int *quit;
	/* server: called once it listens (or failed to: @ok false) */
	void (*on_listen)(void *arg, bool ok);
	void *on_listen_arg;
};

/* Set (by a signal handler) to end a --run_infinitely client after its
 * current -D run: both ends then finish normally. */
extern volatile int perf_stop;

/* One direction of a -b run (--report-both). */
struct perf_dir {
	uint64_t iters, ns;
	double peak_bps;
};

/* What one side measured for one message size. */
struct perf_result {
	uint64_t size;
	uint64_t iters;			/* messages, all QPs together */
	uint64_t ns;			/* first post to last completion */
	double cpu_s;			/* this process's CPU time meanwhile */
	double peak_bps;		/* bytes/s of the best window (bw) */
	double peer_cpu_s;		/* the peer's, from its report */
	/* latency tests: microseconds */
	double lat_min, lat_max, lat_avg, lat_p50, lat_p99, lat_p999;
	uint32_t verify_errors;
	/* -b: this side's sending direction and the peer's */
	struct perf_dir local, remote;
};

struct perf_ctx;

/* Names: "write_bw" to a test; 0 or -1. */
int perf_parse_test(const char *name, struct perf_opts *o);
const char *perf_test_name(const struct perf_opts *o);
/* perftest's defaults for what the command line left at 0. */
void perf_defaults(struct perf_opts *o);

/*
 * Sets up the connections (client: to o->server; server: waits for one
 * client), runs every size and calls @report with the numbers to print
 * (on the server: the client's, summed with its own for -b). 0 when
 * every size ran (and verified), 1 otherwise.
 */
typedef void (*perf_report_fn)(const struct perf_opts *o,
			       const struct perf_result *r, void *arg);
int perf_run(struct perf_opts *o, perf_report_fn report, void *arg);

/* Lowers -a's largest size to what RLIMIT_MEMLOCK lets this run pin
 * (saying so), or fails for a -s that cannot fit. 0 or -1. */
int perf_fit_memlock(struct perf_opts *o);

/* The sizes of a run: -a or -s. */
unsigned int perf_sizes(const struct perf_opts *o, uint64_t *sizes,
			unsigned int max);

/* The table and the JSON lines. */
void perf_print_header(const struct perf_opts *o);
void perf_print_result(const struct perf_opts *o,
		       const struct perf_result *r);
void perf_print_footer(const struct perf_opts *o);

/*
 * hostrdma-perf --loopback: the server in a thread of this process, on
 * o->device and o->server (127.0.0.1 when NULL), and perf_run() as its
 * client; @report gets the client's numbers. 0 or 1 as perf_run(), or
 * PERF_LOOP_NO_LISTEN when the server could not listen (the port taken,
 * say) and nothing ran.
 */
#define PERF_LOOP_NO_LISTEN 3
int perf_run_loopback(struct perf_opts *o, perf_report_fn report,
		      void *arg);

/* hostrdma-perf -R: perftest's connection exchange (perf_rcm.c). */
int perf_run_perftest(struct perf_opts *o, perf_report_fn report,
		      void *arg);

#endif
