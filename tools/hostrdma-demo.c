/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-demo - RDMA on this machine in a few seconds, no RDMA hardware
 * needed: a server and a client on 127.0.0.1 over every software
 * transport that can connect there (soft-iWARP on siw_lo, soft-RoCE on
 * rxe_lo), RDMA WRITE, READ and SEND with every byte checked, then one
 * bandwidth and latency table with a column for the transport.
 *
 * An IT-API program like any other: the server runs in a thread, the
 * client in the main thread, both through hostrdma-perf's engine
 * (perf_run_loopback: one process, since only one can hold rxe_lo).
 */
#define _GNU_SOURCE
#include "tools/perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "hostrdma-demo"
#define MAX_RESULTS 8

struct run {
	struct perf_opts o;
	struct perf_result res[MAX_RESULTS];
	unsigned int nres;
};

static void collect(const struct perf_opts *o, const struct perf_result *r,
		    void *arg)
{
	struct run *run = arg;

	(void)o;
	if (run->nres < MAX_RESULTS)
		run->res[run->nres++] = *r;
}

/* How many ports after a taken one a run tries before it gives up. */
#define PORT_TRIES 8

/*
 * One test between a server thread and this thread over @dev, on *@port
 * or, when something else holds it, on the next free one (*@port is left
 * one past the port used); the client's numbers in @cli. 0 when it ran
 * and every byte checked out.
 */
static int pair(const char *dev, const char *test, uint64_t size,
		uint64_t iters, bool verify, uint16_t *port, struct run *cli)
{
	int rc;

	for (int tries = 0;; tries++) {
		memset(cli, 0, sizeof(*cli));
		perf_parse_test(test, &cli->o);
		cli->o.device = dev;
		cli->o.port = (*port)++;
		cli->o.quiet = true;
		cli->o.json = true;	/* no table: collect() keeps it */
		cli->o.server = "127.0.0.1";
		cli->o.size = size;
		cli->o.iters = iters;
		cli->o.verify = verify;
		perf_defaults(&cli->o);
		rc = perf_run_loopback(&cli->o, collect, cli);
		if (rc != PERF_LOOP_NO_LISTEN || tries + 1 == PORT_TRIES)
			break;
		fprintf(stderr, "%s: could not listen on port %u; trying %u\n",
			PROG, cli->o.port, *port);
	}
	return rc || cli->nres != 1 ? -1 : 0;
}

/* Whether @dev exists and can listen here; why not in @why. */
static bool can_connect(const char *dev, const char **why)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_ia_handle_t ia;
	it_evd_handle_t evd;
	it_listen_handle_t l;
	it_status_t st;

	if (it_ia_create(dev, 2, 1, &ia) != IT_SUCCESS) {
		*why = "no such device here";
		return false;
	}
	st = it_evd_create(ia, IT_CM_REQ_EVENT_STREAM, 0, 4, 0, NULL, &evd,
			   NULL);
	if (st == IT_SUCCESS)
		st = it_listen_create(ia, 0, evd, IT_LISTEN_NO_FLAG, &q, &l);
	it_ia_free(ia);
	if (st == IT_ERR_OP_NOT_SUPPORTED)
		*why = "its connection manager is not in this build yet";
	else if (st != IT_SUCCESS)
		*why = tool_status_name(st);
	return st == IT_SUCCESS;
}

/* The measurements, in table order: bandwidth first, then latency. */
static const struct {
	const char *test;
	uint64_t size, iters;
} measures[] = {
	{ "write_bw", 65536, 4000 }, { "write_bw", 1 << 20, 400 },
	{ "read_bw", 65536, 4000 },  { "read_bw", 1 << 20, 400 },
	{ "send_bw", 65536, 4000 },  { "send_bw", 1 << 20, 400 },
	{ "write_lat", 8, 1000 },    { "read_lat", 8, 1000 },
	{ "send_lat", 8, 1000 },
};
#define N_MEASURES (sizeof(measures) / sizeof(measures[0]))
#define N_BW 6

struct transport {
	const char *dev, *label, *name;
	bool ran, failed;
	struct perf_result res[N_MEASURES];
};

/*
 * The verification and the measurements over one device, results kept in
 * @t for the common table. 0 when every byte checked out and every
 * measurement ran.
 */
static int demo(struct transport *t, uint16_t *port)
{
	static const struct {
		const char *test, *what;
	} checks[] = {
		{ "write_bw", "RDMA WRITE" },
		{ "read_bw", "RDMA READ " },
		{ "send_bw", "SEND      " },
	};
	struct run r;
	int failed = 0;

	printf("\n== %s: a server and a client on 127.0.0.1 over %s\n\n",
	       t->label, t->dev);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		int rc = pair(t->dev, checks[i].test, 4096, 64, true, port,
			      &r);

		printf("  %-8s %s  64 messages of 4 KiB, every byte checked: %s\n",
		       t->name, checks[i].what,
		       rc ? "FAILED" : r.res[0].verify_errors ? "MISMATCH" :
								"ok");
		failed |= rc || r.res[0].verify_errors;
	}
	if (failed)
		return 1;
	for (size_t i = 0; i < N_MEASURES; i++) {
		if (pair(t->dev, measures[i].test, measures[i].size,
			 measures[i].iters, false, port, &r)) {
			printf("  %-8s %s: FAILED\n", t->name, measures[i].test);
			return 1;
		}
		t->res[i] = r.res[0];
	}
	return 0;
}

/* One table for every transport that ran: a transport column. */
static void print_tables(const struct transport *ts, size_t n)
{
	printf("\n  %-10s %-8s %8s %12s %12s\n", "test", "over", "size",
	       "Gb/s", "msg/s");
	for (size_t i = 0; i < N_BW; i++)
		for (size_t k = 0; k < n; k++) {
			const struct perf_result *x = &ts[k].res[i];
			double s = (double)x->ns / 1e9;
			g_autofree char *size = NULL;

			if (!ts[k].ran || ts[k].failed)
				continue;
			size = g_format_size_full(measures[i].size,
						  G_FORMAT_SIZE_IEC_UNITS);
			printf("  %-10s %-8s %8s %12.2f %12.0f\n",
			       measures[i].test, ts[k].name, size,
			       (double)x->iters * (double)x->size * 8 / s / 1e9,
			       (double)x->iters / s);
		}
	printf("\n  %-10s %-8s %8s %12s %12s %12s\n", "test", "over", "size",
	       "min us", "median us", "p99 us");
	for (size_t i = N_BW; i < N_MEASURES; i++)
		for (size_t k = 0; k < n; k++) {
			const struct perf_result *x = &ts[k].res[i];

			if (!ts[k].ran || ts[k].failed)
				continue;
			printf("  %-10s %-8s %8s %12.1f %12.1f %12.1f\n",
			       measures[i].test, ts[k].name, "8 B",
			       x->lat_min, x->lat_p50, x->lat_p99);
		}
	printf("\n  (write/send latency: half a round trip, as perftest "
	       "reports it; both ends share this machine's CPUs)\n");
}

int main(int argc, char **argv)
{
	g_autofree char *port_arg = NULL;
	const GOptionEntry entries[] = {
		{ "port", 'p', 0, G_OPTION_ARG_STRING, &port_arg,
		  "First TCP/IB service port to use (18515)", "PORT" },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx =
		g_option_context_new("- RDMA on this machine in a few seconds");
	struct transport transports[] = {
		{ .dev = "siw_lo", .name = "iWARP",
		  .label = "soft-iWARP (RDMAP/DDP/MPA over TCP)" },
		{ .dev = "rxe_lo", .name = "RoCEv2",
		  .label = "soft-RoCE (RoCEv2 over UDP 4791, IB CM over QP1)" },
	};
	const size_t nt = sizeof(transports) / sizeof(transports[0]);
	uint16_t port = PERF_DEFAULT_PORT;
	int ran = 0, failed = 0;
	guint64 v;

	tool_init(PROG);
	g_option_context_set_summary(
		ctx, "Runs RDMA WRITE, READ and SEND between a server and a client\n"
		     "on 127.0.0.1 over each software transport that can connect\n"
		     "there, checks every byte, and prints bandwidth and latency.");
	g_option_context_set_description(
		ctx, "See hostrdma-demo(1); hostrdma-info lists the devices.\n");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (tool_parse_options(PROG, ctx, &argc, &argv))
		return 2;
	if (argc > 1) {
		fprintf(stderr, "%s: unexpected argument %s\n", PROG, argv[1]);
		return 2;
	}
	/* Up to 24 ports from there: 12 runs per transport. */
	if (port_arg) {
		if (tool_parse_uint(PROG, "-p", port_arg, 1, 65535 - 24, &v))
			return 2;
		port = (uint16_t)v;
	}
	tool_raise_memlock();
	printf("hostrdma demo: RDMA between two endpoints on this machine, "
	       "through IT-API (libhostrdma)\n");
	for (size_t i = 0; i < nt; i++) {
		struct transport *t = &transports[i];
		const char *why = NULL;

		if (!can_connect(t->dev, &why)) {
			printf("\n== %s: skipped on %s: %s\n", t->label, t->dev,
			       why);
			continue;
		}
		ran++;
		t->ran = true;
		if (demo(t, &port)) {
			printf("  %s: FAILED (messages above)\n", t->dev);
			t->failed = true;
			failed++;
		}
	}
	if (!ran) {
		printf("\nNo software RDMA device could connect on "
		       "127.0.0.1 (see hostrdma-info).\n");
		return 1;
	}
	if (failed < ran)
		print_tables(transports, nt);
	printf("\n%s. More: hostrdma-perf(1), hostrdma-ping(1), "
	       "hostrdma-info(1).\n",
	       failed ? "Some transports FAILED" : "RDMA works here");
	return failed ? 1 : 0;
}
