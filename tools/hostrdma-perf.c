/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-perf - bandwidth and latency of RDMA Write, RDMA Read and Send
 * between two hosts, with perftest's options, on IT-API (libhostrdma).
 *
 *   hostrdma-perf TEST [options]                 server
 *   hostrdma-perf TEST [options] SERVER-ADDRESS  client
 */
#define _GNU_SOURCE
#include "tools/perf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "hostrdma-perf"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s TEST [options]                  (server)\n"
		"       %s TEST [options] SERVER-ADDRESS   (client)\n"
		"TEST: write_bw write_lat read_bw read_lat send_bw send_lat\n"
		"      atomic_bw atomic_lat (devices with atomics: soft-RoCE)\n"
		"\n"
		"  -s, --size=BYTES        message size (bw 65536, lat 2)\n"
		"  -a, --all               every size from 2 B to 8 MiB\n"
		"  -n, --iters=N           messages per size (bw 5000, lat 1000)\n"
		"  -D, --duration=SECONDS  run each size for this long instead\n"
		"  -q, --qp=N              data connections (QPs), up to 16\n"
		"  -b, --bidirectional     both sides send at once (bw tests)\n"
		"  -t, --tx-depth=N        work requests in flight per QP (128)\n"
		"  -r, --rx-depth=N        receives posted per QP (512)\n"
		"  -Q, --cq-mod=N          one completion per N requests (100)\n"
		"  -l, --post_list=N       start N requests together: the others\n"
		"                          are posted with IT_COALESCE_WR_FLAG (1)\n"
		"  -o, --outs=N            RDMA Reads or atomics in flight per QP (16)\n"
		"  -A, --atomic_type=TYPE  FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
		"  -I, --inline_size=N     accepted; IT-API has no inline data\n"
		"  -e, --events            sleep on completion events, do not poll\n"
		"  -p, --port=PORT         the server's port (18515)\n"
		"  -d, --ib-dev=DEVICE     the IT-API interface (e.g. siw_lo)\n"
		"      --bind=ADDRESS      server: listen on the device holding it\n"
		"  -L, --loopback          server and client in this process, on\n"
		"                          127.0.0.1 or SERVER-ADDRESS (rxe_lo)\n"
		"  -R, --rdma_cm           perftest's own exchange over rdma_cm: the peer may\n"
		"                          be ib_{write,read,send}_{bw,lat} -R\n"
		"                          (send_bw: RoCE only)\n"
		"      --verify            check the data of every message\n"
		"      --json              one JSON object per message size\n"
		"      --report_gbits      (default) table in Gb/s\n"
		"      --report-mbytes     table in MB/s as perftest prints it\n"
		"      --quiet             no banner, no progress lines\n"
		"  -F, -x N, -c RC, -m N   accepted for perftest compatibility\n"
		"  -h, --help              this text\n"
		"See hostrdma-perf(1).\n",
		PROG, PROG);
}

static void print_one(const struct perf_opts *o, const struct perf_result *r,
		      void *arg)
{
	(void)arg;
	perf_print_result(o, r);
}

static int number(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s %s: expected a number from %llu to %llu\n",
			PROG, opt, s, (unsigned long long)lo,
			(unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

enum { OPT_JSON = 1000, OPT_BIND, OPT_VERIFY, OPT_GBITS, OPT_MBYTES,
       OPT_QUIET };

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'D' },
		{ "qp", required_argument, NULL, 'q' },
		{ "bidirectional", no_argument, NULL, 'b' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "cq-mod", required_argument, NULL, 'Q' },
		{ "post_list", required_argument, NULL, 'l' },
		{ "outs", required_argument, NULL, 'o' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "events", no_argument, NULL, 'e' },
		{ "port", required_argument, NULL, 'p' },
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "rdma_cm", no_argument, NULL, 'R' },
		{ "atomic_type", required_argument, NULL, 'A' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "report-mbytes", no_argument, NULL, OPT_MBYTES },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "loopback", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct perf_opts o = { 0 };
	const char *pos[2] = { NULL, NULL };
	unsigned int npos = 0;
	uint64_t v;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "-s:an:D:q:bt:r:Q:l:o:I:ep:d:RLFx:c:m:A:h",
				  longs, NULL)) != -1) {
		rc = 0;
		switch (opt) {
		case 1:
			if (npos == 2) {
				fprintf(stderr, "%s: unexpected argument %s\n",
					PROG, optarg);
				return 2;
			}
			pos[npos++] = optarg;
			break;
		case 's':
			rc = number("-s", optarg, 1, 8ull << 20, &o.size);
			break;
		case 'a': o.all_sizes = true; break;
		case 'A':
			if (!strcmp(optarg, "CMP_AND_SWAP")) {
				o.cas = true;
			} else if (strcmp(optarg, "FETCH_AND_ADD")) {
				fprintf(stderr, "%s: -A %s: the atomic types are FETCH_AND_ADD and CMP_AND_SWAP\n",
					PROG, optarg);
				return 2;
			}
			break;
		case 'n':
			rc = number("-n", optarg, 1, 1ull << 40, &o.iters);
			break;
		case 'D':
			rc = number("-D", optarg, 1, 86400, &v);
			o.duration_s = (unsigned int)v;
			break;
		case 'q':
			rc = number("-q", optarg, 1, PERF_MAX_QPS, &v);
			o.qps = (unsigned int)v;
			break;
		case 'b': o.bidir = true; break;
		case 't':
			rc = number("-t", optarg, 1, 8192, &v);
			o.tx_depth = (unsigned int)v;
			break;
		case 'r':
			rc = number("-r", optarg, 1, 8192, &v);
			o.rx_depth = (unsigned int)v;
			break;
		case 'Q':
			rc = number("-Q", optarg, 1, 8192, &v);
			o.cq_mod = (unsigned int)v;
			break;
		case 'l':
			rc = number("-l", optarg, 1, 8192, &v);
			o.post_list = (unsigned int)v;
			break;
		case 'o':
			rc = number("-o", optarg, 1, 128, &v);
			o.outs = (unsigned int)v;
			break;
		case 'I':
			rc = number("-I", optarg, 0, 1024, &v);
			o.inline_size = (unsigned int)v;
			break;
		case 'e': o.events = true; break;
		case 'p':
			rc = number("-p", optarg, 1, 65535, &v);
			o.port = (uint16_t)v;
			break;
		case 'd': o.device = optarg; break;
		case 'R': o.perftest_cm = true; break;
		case 'L': o.loopback = true; break;
		case 'F': case 'x': case 'm': break;
		case 'c':
			if (strcmp(optarg, "RC")) {
				fprintf(stderr, "%s: -c %s: only RC is supported\n",
					PROG, optarg);
				return 2;
			}
			break;
		case OPT_JSON: o.json = true; break;
		case OPT_BIND: o.bind = optarg; break;
		case OPT_VERIFY: o.verify = true; break;
		case OPT_GBITS: o.mbps = false; break;
		case OPT_MBYTES: o.mbps = true; break;
		case OPT_QUIET: o.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (rc)
			return 2;
	}
	if (!npos || perf_parse_test(pos[0], &o)) {
		if (npos)
			fprintf(stderr, "%s: unknown test %s\n", PROG, pos[0]);
		usage(stderr);
		return 2;
	}
	o.server = pos[1];
	if (o.loopback && !o.server)
		o.server = "127.0.0.1";
	if (o.bidir && o.lat) {
		fprintf(stderr, "%s: -b is for bandwidth tests\n", PROG);
		return 2;
	}
	if (o.verb == PERF_ATOMIC &&
	    ((o.size && o.size != 8) || o.all_sizes || o.bidir)) {
		fprintf(stderr, "%s: atomics are 8 bytes, one way (no -s other than 8, -a or -b)\n",
			PROG);
		return 2;
	}
	if (o.lat && o.qps > 1) {
		fprintf(stderr, "%s: latency tests use one QP\n", PROG);
		return 2;
	}
	perf_defaults(&o);
	tool_raise_memlock();
	if (o.server && perf_fit_memlock(&o))
		return 1;
	if (o.loopback && o.perftest_cm) {
		fprintf(stderr, "%s: -L and -R do not go together\n", PROG);
		return 2;
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
