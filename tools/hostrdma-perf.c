/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-perf - bandwidth and latency of RDMA Write, RDMA Read and Send
 * between two hosts, with perftest's options, on IT-API (libhostrdma).
 *
 *   hostrdma-perf TEST [options]                 server
 *   hostrdma-perf TEST [options] SERVER-ADDRESS  client
 */
#define _GNU_SOURCE
#include "config.h"

#include "tools/perf.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "hostrdma-perf"

static void print_one(const struct perf_opts *o, const struct perf_result *r,
		      void *arg)
{
	(void)arg;
	perf_print_result(o, r);
}

/* The numbers of the command line, as text until checked. */
struct num_args {
	char *size, *iters, *duration, *qps, *tx, *rx, *cq_mod, *post_list;
	char *outs, *inline_size, *port, *ib_port, *conn, *output;
	char *mtu, *gid_index, *sl, *atomic, *warmup;
};

/*
 * --run_infinitely's client: SIGINT and SIGTERM are blocked in every
 * thread (so no wait of IT-API ends with IT_ERR_INTERRUPT mid-run) and
 * taken here, which asks the run to stop after the current -D seconds.
 */
static void *stop_thread(void *arg)
{
	sigset_t *sigs = arg;
	int sig;

	if (sigwait(sigs, &sig) == 0)
		perf_stop = 1;
	return NULL;
}

static int catch_stop(void)
{
	static sigset_t sigs;
	pthread_t th;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (pthread_create(&th, NULL, stop_thread, &sigs))
		return -1;
	pthread_detach(th);
	return 0;
}

static int version_only(void)
{
	printf("%s %s (IT-API; options and report of perftest)\n", PROG,
	       PACKAGE_VERSION);
	return 0;
}

static int numbers(const struct num_args *a, struct perf_opts *o)
{
	guint64 v;

#define NUM(field, flag, lo, hi, dst)                                     \
	do {                                                              \
		if (a->field) {                                           \
			if (tool_parse_uint(PROG, flag, a->field, lo, hi, \
					    &v))                          \
				return -1;                                \
			dst = v;                                          \
		}                                                         \
	} while (0)
	NUM(size, "-s", 1, PERF_MAX_SIZE, o->size);
	NUM(iters, "-n", 1, 1ull << 40, o->iters);
	NUM(warmup, "--warmup", 0, 1ull << 40, o->warmup);
	NUM(duration, "-D", 1, 86400, o->duration_s);
	NUM(qps, "-q", 1, PERF_MAX_QPS, o->qps);
	NUM(tx, "-t", 1, 8192, o->tx_depth);
	NUM(rx, "-r", 1, 8192, o->rx_depth);
	NUM(cq_mod, "-Q", 1, 8192, o->cq_mod);
	NUM(post_list, "-l", 1, 8192, o->post_list);
	NUM(outs, "-o", 1, 128, o->outs);
	NUM(inline_size, "-I", 0, 1024, o->inline_size);
	NUM(port, "-p", 1, 65535, o->port);
	NUM(ib_port, "-i", 1, 255, o->ib_port);
	NUM(mtu, "-m", 256, 4096, v);
	NUM(gid_index, "-x", 0, 255, v);
	NUM(sl, "-S", 0, 15, v);
#undef NUM
	if (o->inline_size) {
		fprintf(stderr, "%s: -I %u: IT-API has no inline data (no inline flag for a post, no EP attribute for it), so no provider can honour it; the closest is -I 0, the default\n",
			PROG, o->inline_size);
		return -1;
	}
	if (a->atomic) {
		if (o->verb != PERF_ATOMIC) {
			fprintf(stderr, "%s: -A is for atomic_bw and atomic_lat\n",
				PROG);
			return -1;
		}
		if (!strcmp(a->atomic, "FETCH_AND_ADD"))
			o->atomic = PERF_FETCH_AND_ADD;
		else if (!strcmp(a->atomic, "CMP_AND_SWAP"))
			o->atomic = PERF_CMP_AND_SWAP;
		else {
			fprintf(stderr, "%s: -A %s: FETCH_AND_ADD or CMP_AND_SWAP\n",
				PROG, a->atomic);
			return -1;
		}
	}
	if (o->verb == PERF_ATOMIC && (a->size || o->all_sizes)) {
		fprintf(stderr, "%s: atomic tests move one 8-byte word: no -s, no -a\n",
			PROG);
		return -1;
	}
	if (a->conn && strcmp(a->conn, "RC")) {
		fprintf(stderr, "%s: -c %s: only RC is supported\n", PROG,
			a->conn);
		return -1;
	}
	if (a->output) {
		if (!strcmp(a->output, "bandwidth"))
			o->output = PERF_OUT_BANDWIDTH;
		else if (!strcmp(a->output, "message_rate"))
			o->output = PERF_OUT_MSG_RATE;
		else if (!strcmp(a->output, "latency"))
			o->output = PERF_OUT_LATENCY;
		else {
			fprintf(stderr, "%s: --output %s: one of bandwidth, message_rate, latency\n",
				PROG, a->output);
			return -1;
		}
		if ((o->output == PERF_OUT_LATENCY) != o->lat) {
			fprintf(stderr, "%s: --output %s: not a number of %s\n",
				PROG, a->output, perf_test_name(o));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_opts o = { .mbps = true };
	struct num_args a = { 0 };
	gboolean all = FALSE, bidir = FALSE, events = FALSE, rcm = FALSE;
	gboolean loop = FALSE, json = FALSE, verify = FALSE, quiet = FALSE;
	gboolean gbits = FALSE, mbytes = FALSE, version = FALSE, cpu = FALSE;
	gboolean ignored = FALSE, infinite = FALSE, both = FALSE;
	const GOptionEntry entries[] = {
		{ "size", 's', 0, G_OPTION_ARG_STRING, &a.size,
		  "Message size (bw 65536, lat 2), up to 8388608", "BYTES" },
		{ "all", 'a', 0, G_OPTION_ARG_NONE, &all,
		  "Every size from 2 B to 8 MiB", NULL },
		{ "iters", 'n', 0, G_OPTION_ARG_STRING, &a.iters,
		  "Messages per size (bw 5000, lat 1000)", "N" },
		{ "warmup", 0, 0, G_OPTION_ARG_STRING, &a.warmup,
		  "Latency tests: round trips before the measured ones (1000; 0 with -R)",
		  "N" },
		{ "duration", 'D', 0, G_OPTION_ARG_STRING, &a.duration,
		  "Run each size for this long instead", "SECONDS" },
		{ "qp", 'q', 0, G_OPTION_ARG_STRING, &a.qps,
		  "Data connections (QPs), up to 64", "N" },
		{ "bidirectional", 'b', 0, G_OPTION_ARG_NONE, &bidir,
		  "Both sides send at once (bw tests)", NULL },
		{ "tx-depth", 't', 0, G_OPTION_ARG_STRING, &a.tx,
		  "Work requests in flight per QP (128)", "N" },
		{ "rx-depth", 'r', 0, G_OPTION_ARG_STRING, &a.rx,
		  "Receives posted per QP (512)", "N" },
		{ "cq-mod", 'Q', 0, G_OPTION_ARG_STRING, &a.cq_mod,
		  "One completion per N requests (100)", "N" },
		{ "post_list", 'l', 0, G_OPTION_ARG_STRING, &a.post_list,
		  "Start N requests together: the others are posted with IT_COALESCE_WR_FLAG (1)",
		  "N" },
		{ "outs", 'o', 0, G_OPTION_ARG_STRING, &a.outs,
		  "RDMA Reads in flight per QP (16)", "N" },
		{ "inline_size", 'I', 0, G_OPTION_ARG_STRING, &a.inline_size,
		  "Inline data: only 0 (IT-API has no inline data)", "N" },
		{ "events", 'e', 0, G_OPTION_ARG_NONE, &events,
		  "Sleep on completion events, do not poll", NULL },
		{ "port", 'p', 0, G_OPTION_ARG_STRING, &a.port,
		  "The server's port (18515)", "PORT" },
		{ "ib-dev", 'd', 0, G_OPTION_ARG_STRING, &o.device,
		  "The IT-API interface (e.g. siw_lo)", "DEVICE" },
		{ "ib-port", 'i', 0, G_OPTION_ARG_STRING, &a.ib_port,
		  "The device's port (spigot) from 1 (1)", "PORT" },
		{ "bind", 0, 0, G_OPTION_ARG_STRING, &o.bind,
		  "Server: listen on the device holding ADDRESS", "ADDRESS" },
		{ "loopback", 'L', 0, G_OPTION_ARG_NONE, &loop,
		  "Server and client in this process, on 127.0.0.1 or SERVER-ADDRESS (rxe_lo)",
		  NULL },
		{ "rdma_cm", 'R', 0, G_OPTION_ARG_NONE, &rcm,
		  "perftest's own exchange over rdma_cm: the peer may be ib_{write,read,send}_{bw,lat} -R (send_bw: RoCE)",
		  NULL },
		{ "verify", 0, 0, G_OPTION_ARG_NONE, &verify,
		  "Check the data of every message", NULL },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json,
		  "One JSON object per message size", NULL },
		{ "report_gbits", 0, 0, G_OPTION_ARG_NONE, &gbits,
		  "Bandwidth in Gb/sec", NULL },
		{ "report-mbytes", 0, 0, G_OPTION_ARG_NONE, &mbytes,
		  "Bandwidth in MB/sec (2^20 bytes), as perftest (default)",
		  NULL },
		{ "output", 0, 0, G_OPTION_ARG_STRING, &a.output,
		  "Print only this number per size: bandwidth, message_rate (bw tests) or latency (lat tests: the typical)",
		  "WHAT" },
		{ "cpu_util", 0, 0, G_OPTION_ARG_NONE, &cpu,
		  "Add a column of this process's CPU use in percent", NULL },
		{ "run_infinitely", 0, 0, G_OPTION_ARG_NONE, &infinite,
		  "Bandwidth tests: runs of -D seconds (5) of one size, a line each, until SIGINT or SIGTERM",
		  NULL },
		{ "report-both", 0, 0, G_OPTION_ARG_NONE, &both,
		  "With -b: each direction on its own line, this side's first",
		  NULL },
		{ "quiet", 0, 0, G_OPTION_ARG_NONE, &quiet,
		  "No banner, no progress lines", NULL },
		{ "version", 'V', 0, G_OPTION_ARG_NONE, &version,
		  "The version, then exit", NULL },
		{ "atomic_type", 'A', 0, G_OPTION_ARG_STRING, &a.atomic,
		  "atomic_bw, atomic_lat: FETCH_AND_ADD (default) or CMP_AND_SWAP",
		  "TYPE" },
		{ "connection", 'c', 0, G_OPTION_ARG_STRING, &a.conn,
		  "Connection type: only RC", "RC" },
		{ "CPU-freq", 'F', 0, G_OPTION_ARG_NONE, &ignored,
		  "Accepted for perftest, no effect", NULL },
		{ "gid-index", 'x', 0, G_OPTION_ARG_STRING, &a.gid_index,
		  "Accepted for perftest, no effect (the path decides)", "N" },
		{ "mtu", 'm', 0, G_OPTION_ARG_STRING, &a.mtu,
		  "Accepted for perftest, no effect (the path decides)",
		  "BYTES" },
		{ "sl", 'S', 0, G_OPTION_ARG_STRING, &a.sl,
		  "Accepted for perftest, no effect", "SL" },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(
		"TEST [SERVER-ADDRESS] - RDMA bandwidth and latency over IT-API");
	int rc;

	tool_init(PROG);
	g_option_context_set_summary(
		ctx, "A server without SERVER-ADDRESS, a client with it.\n"
		     "TEST: write_bw write_lat read_bw read_lat send_bw send_lat\n"
		     "      atomic_bw atomic_lat (8-byte atomics: soft-RoCE)");
	g_option_context_set_description(ctx, "See hostrdma-perf(1).\n");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (tool_parse_options(PROG, ctx, &argc, &argv))
		return 2;
	if (version)
		return version_only();
	if (argc < 2 || perf_parse_test(argv[1], &o)) {
		if (argc >= 2)
			fprintf(stderr, "%s: unknown test %s (see --help)\n",
				PROG, argv[1]);
		else
			fprintf(stderr, "%s: which test? (see --help)\n",
				PROG);
		return 2;
	}
	if (argc > 3) {
		fprintf(stderr, "%s: unexpected argument %s\n", PROG, argv[3]);
		return 2;
	}
	o.server = argc == 3 ? argv[2] : NULL;
	o.all_sizes = all;
	o.bidir = bidir;
	o.events = events;
	o.perftest_cm = rcm;
	o.loopback = loop;
	o.json = json;
	o.verify = verify;
	o.quiet = quiet;
	o.cpu_util = cpu;
	if (numbers(&a, &o))
		return 2;
	o.run_infinitely = infinite;
	o.report_both = both;
	if (o.run_infinitely) {
		if (o.lat || o.all_sizes || o.perftest_cm) {
			fprintf(stderr, "%s: --run_infinitely runs one size of a bandwidth test (not with -a, -R or a _lat test)\n",
				PROG);
			return 2;
		}
		if (!o.duration_s)
			o.duration_s = 5;
	}
	if (o.report_both && !o.bidir) {
		fprintf(stderr, "%s: --report-both goes with -b\n", PROG);
		return 2;
	}
	if (gbits && mbytes) {
		fprintf(stderr, "%s: --report_gbits or --report-mbytes, not both\n",
			PROG);
		return 2;
	}
	o.mbps = !gbits;
	if (o.loopback && !o.server)
		o.server = "127.0.0.1";
	if (o.bidir && o.lat) {
		fprintf(stderr, "%s: -b is for bandwidth tests\n", PROG);
		return 2;
	}
	if (o.bidir && o.verb == PERF_ATOMIC) {
		fprintf(stderr, "%s: atomics go one way: no -b\n", PROG);
		return 2;
	}
	if (o.lat && o.qps > 1) {
		fprintf(stderr, "%s: latency tests use one QP\n", PROG);
		return 2;
	}
	if (a.warmup && !o.lat) {
		fprintf(stderr, "%s: --warmup is for latency tests\n", PROG);
		return 2;
	}
	if (a.warmup && o.warmup && o.perftest_cm) {
		fprintf(stderr, "%s: --warmup %llu: perftest's ib_*_lat count every round trip, so with -R there is no warm-up (--warmup 0)\n",
			PROG, (unsigned long long)o.warmup);
		return 2;
	}
	if (!a.warmup && o.lat && !o.perftest_cm)
		o.warmup = PERF_WARMUP;
	perf_defaults(&o);
	tool_raise_memlock();
	if (o.server && perf_fit_memlock(&o))
		return 1;
	if (o.loopback && o.perftest_cm) {
		fprintf(stderr, "%s: -L and -R do not go together\n", PROG);
		return 2;
	}
	/* The client stops after its current run, tells the server, and
	 * both end normally. */
	if (o.run_infinitely && o.server && catch_stop()) {
		fprintf(stderr, "%s: cannot start a thread for signals\n",
			PROG);
		return 1;
	}
	if (o.perftest_cm)
		rc = perf_run_perftest(&o, print_one, NULL);
	else if (o.loopback)
		rc = perf_run_loopback(&o, print_one, NULL) ? 1 : 0;
	else
		rc = perf_run(&o, print_one, NULL);
	perf_print_footer(&o);
	return rc;
}
