/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-demo - RDMA on this machine in a few seconds, no RDMA hardware
 * needed: a server and a client on 127.0.0.1 over every software
 * transport that can connect there (soft-iWARP; soft-RoCE once its
 * connection manager is in), RDMA WRITE, READ and SEND with every byte
 * checked, then a short bandwidth and latency table.
 *
 * An IT-API program like any other: the server runs in a thread, the
 * client in the main thread, both through hostrdma-perf's engine.
 */
#define _GNU_SOURCE
#include "tools/perf.h"

#include <getopt.h>
#include <pthread.h>
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
	int rc;
	/* the server tells the client when it listens */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int listening;			/* 0 not yet, 1 yes, -1 failed */
};

static void collect(const struct perf_opts *o, const struct perf_result *r,
		    void *arg)
{
	struct run *run = arg;

	(void)o;
	if (run->nres < MAX_RESULTS)
		run->res[run->nres++] = *r;
}

static void on_listen(void *arg, bool ok)
{
	struct run *run = arg;

	pthread_mutex_lock(&run->lock);
	run->listening = ok ? 1 : -1;
	pthread_cond_signal(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

static void *server_main(void *arg)
{
	struct run *run = arg;

	run->rc = perf_run(&run->o, collect, run);
	return NULL;
}

/*
 * One test between a server thread and this thread over @dev; the
 * client's numbers in @cli. 0 when it ran and every byte checked out.
 */
static int pair(const char *dev, const char *test, uint64_t size,
		uint64_t iters, bool verify, uint16_t port, struct run *cli)
{
	struct run srv = { .listening = 0 };
	pthread_t th;
	int ok;

	memset(cli, 0, sizeof(*cli));
	perf_parse_test(test, &srv.o);
	srv.o.device = dev;
	srv.o.port = port;
	srv.o.quiet = true;
	srv.o.json = true;
	srv.o.on_listen = on_listen;
	srv.o.on_listen_arg = &srv;
	perf_defaults(&srv.o);
	cli->o = srv.o;
	cli->o.on_listen = NULL;
	cli->o.server = "127.0.0.1";
	cli->o.size = size;
	cli->o.iters = iters;
	cli->o.verify = verify;
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	if (pthread_create(&th, NULL, server_main, &srv))
		return -1;
	pthread_mutex_lock(&srv.lock);
	while (!srv.listening)
		pthread_cond_wait(&srv.cond, &srv.lock);
	ok = srv.listening > 0;
	pthread_mutex_unlock(&srv.lock);
	cli->rc = ok ? perf_run(&cli->o, collect, cli) : 1;
	pthread_join(th, NULL);
	pthread_mutex_destroy(&srv.lock);
	pthread_cond_destroy(&srv.cond);
	return cli->rc || srv.rc || cli->nres != 1 ? -1 : 0;
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

static const char *human(uint64_t n, char *buf, size_t len)
{
	if (n >= (1 << 20) && n % (1 << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)n);
	return buf;
}

static int demo(const char *dev, const char *label, uint16_t *port)
{
	static const struct {
		const char *test, *what;
	} checks[] = {
		{ "write_bw", "RDMA WRITE" },
		{ "read_bw", "RDMA READ " },
		{ "send_bw", "SEND      " },
	};
	static const struct {
		const char *test;
		uint64_t size, iters;
	} bws[] = {
		{ "write_bw", 65536, 4000 }, { "write_bw", 1 << 20, 400 },
		{ "read_bw", 65536, 4000 },  { "read_bw", 1 << 20, 400 },
		{ "send_bw", 65536, 4000 },  { "send_bw", 1 << 20, 400 },
	};
	static const char *const lats[] = { "write_lat", "read_lat",
					    "send_lat" };
	struct run r;
	char a[32];
	int failed = 0;

	printf("\n== %s: a server and a client on 127.0.0.1 over %s\n\n",
	       label, dev);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		int rc = pair(dev, checks[i].test, 4096, 64, true, (*port)++,
			      &r);

		printf("  %s  64 messages of 4 KiB, every byte checked: %s\n",
		       checks[i].what,
		       rc ? "FAILED" : r.res[0].verify_errors ? "MISMATCH" :
								"ok");
		failed |= rc || r.res[0].verify_errors;
	}
	if (failed)
		return 1;
	printf("\n  %-10s %8s %12s %12s\n", "test", "size", "Gb/s",
	       "msg/s");
	for (size_t i = 0; i < sizeof(bws) / sizeof(bws[0]); i++) {
		const struct perf_result *x = &r.res[0];
		double s;

		if (pair(dev, bws[i].test, bws[i].size, bws[i].iters, false,
			 (*port)++, &r))
			return 1;
		s = (double)x->ns / 1e9;
		printf("  %-10s %8s %12.2f %12.0f\n", bws[i].test,
		       human(bws[i].size, a, sizeof(a)),
		       (double)x->iters * (double)x->size * 8 / s / 1e9,
		       (double)x->iters / s);
	}
	printf("\n  %-10s %8s %12s %12s %12s\n", "test", "size", "min us",
	       "median us", "p99 us");
	for (size_t i = 0; i < sizeof(lats) / sizeof(lats[0]); i++) {
		const struct perf_result *x = &r.res[0];

		if (pair(dev, lats[i], 8, 1000, false, (*port)++, &r))
			return 1;
		printf("  %-10s %8s %12.1f %12.1f %12.1f\n", lats[i], "8 B",
		       x->lat_min, x->lat_p50, x->lat_p99);
	}
	printf("\n  (write/send latency: half a round trip, as perftest "
	       "reports it; both ends share this machine's CPUs)\n");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-p PORT] [-h]\n"
		"Runs RDMA WRITE, READ and SEND between a server and a client\n"
		"on 127.0.0.1 over each software transport that can connect\n"
		"there, checks every byte, and prints bandwidth and latency.\n"
		"  -p, --port=PORT   first TCP/IB service port to use (18515)\n"
		"See hostrdma-demo(1); hostrdma-info lists the devices.\n",
		PROG);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const struct {
		const char *dev, *label;
	} transports[] = {
		{ "siw_lo", "soft-iWARP (RDMAP/DDP/MPA over TCP)" },
		{ "rxe_lo", "soft-RoCE (RoCEv2 over UDP 4791)" },
	};
	uint16_t port = PERF_DEFAULT_PORT;
	int opt, ran = 0, failed = 0;

	while ((opt = getopt_long(argc, argv, "p:h", longs, NULL)) != -1) {
		switch (opt) {
		case 'p':
			port = (uint16_t)atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	tool_raise_memlock();
	printf("hostrdma demo: RDMA between two endpoints on this machine, "
	       "through IT-API (libhostrdma)\n");
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]);
	     i++) {
		const char *why = NULL;

		if (!can_connect(transports[i].dev, &why)) {
			printf("\n== %s: skipped on %s: %s\n",
			       transports[i].label, transports[i].dev, why);
			continue;
		}
		ran++;
		if (demo(transports[i].dev, transports[i].label, &port)) {
			printf("  %s: FAILED (messages above)\n",
			       transports[i].dev);
			failed++;
		}
	}
	if (!ran) {
		printf("\nNo software RDMA device could connect on "
		       "127.0.0.1 (see hostrdma-info).\n");
		return 1;
	}
	printf("\n%s. More: hostrdma-perf(1), hostrdma-ping(1), "
	       "hostrdma-info(1).\n",
	       failed ? "Some transports FAILED" : "RDMA works here");
	return failed ? 1 : 0;
}
