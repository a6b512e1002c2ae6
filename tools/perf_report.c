/* SPDX-License-Identifier: MIT */
/*
 * perf_report.c - hostrdma-perf's tests by name, perftest's defaults, the
 * run over every size, and the report: a table in perftest's layout, or
 * one JSON object per message size.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const char *const verb_names[] = {
	[PERF_WRITE] = "write", [PERF_READ] = "read", [PERF_SEND] = "send",
	[PERF_ATOMIC] = "atomic",
};

int perf_parse_test(const char *name, struct perf_opts *o)
{
	for (unsigned int v = 0; v <= PERF_ATOMIC; v++) {
		size_t l = strlen(verb_names[v]);

		if (strncmp(name, verb_names[v], l) || name[l] != '_')
			continue;
		if (!strcmp(name + l + 1, "bw"))
			o->lat = false;
		else if (!strcmp(name + l + 1, "lat"))
			o->lat = true;
		else
			return -1;
		o->verb = (enum perf_verb)v;
		return 0;
	}
	return -1;
}

const char *perf_test_name(const struct perf_opts *o)
{
	static const char *const names[][2] = {
		[PERF_WRITE] = { "write_bw", "write_lat" },
		[PERF_READ] = { "read_bw", "read_lat" },
		[PERF_SEND] = { "send_bw", "send_lat" },
		[PERF_ATOMIC] = { "atomic_bw", "atomic_lat" },
	};

	return names[o->verb][o->lat];
}

/* perftest's: 64 KiB and 5000 iterations for bandwidth, 2 bytes and 1000
 * for latency; tx depth 128, rx depth 512, one completion in 100. */
void perf_defaults(struct perf_opts *o)
{
	if (!o->port)
		o->port = PERF_DEFAULT_PORT;
	if (o->verb == PERF_ATOMIC)
		o->size = 8;
	if (!o->size)
		o->size = o->lat ? 2 : 65536;
	if (!o->iters)
		o->iters = o->lat ? 1000 : 5000;
	if (!o->qps)
		o->qps = 1;
	if (!o->tx_depth)
		o->tx_depth = o->lat ? 1 : 128;
	if (!o->rx_depth)
		o->rx_depth = o->lat ? 16 : 512;
	if (!o->cq_mod)
		o->cq_mod = 100;
	if (o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth;
	if (!o->outs)
		o->outs = 16;
	if (!o->post_list)
		o->post_list = 1;
	if (!o->all_max)
		o->all_max = PERF_MAX_SIZE;
}

/* Pinned bytes a run needs for messages up to @max (perf_conn.c's
 * layout, the control buffers and some slack). */
static uint64_t pinned_need(const struct perf_opts *o, uint64_t max)
{
	uint64_t per_qp = (o->verify || o->lat ? 2 : 1) * max + 4096;

	return o->qps * per_qp + 64 * 1024;
}

int perf_fit_memlock(struct perf_opts *o)
{
	struct rlimit rl;
	uint64_t lim;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	lim = rl.rlim_cur;
	if (!o->all_sizes) {
		if (pinned_need(o, o->size) <= lim)
			return 0;
		fprintf(stderr, "%s: -s %llu needs %llu bytes of pinned memory, RLIMIT_MEMLOCK allows %llu: raise `ulimit -l`\n",
			PERF_PROG, (unsigned long long)o->size,
			(unsigned long long)pinned_need(o, o->size),
			(unsigned long long)lim);
		return -1;
	}
	while (o->all_max > 2 && pinned_need(o, o->all_max) > lim)
		o->all_max >>= 1;
	if (o->all_max < PERF_MAX_SIZE && !o->quiet)
		fprintf(stderr, "%s: -a stops at %llu bytes: RLIMIT_MEMLOCK (%llu bytes) is too small for 8 MiB messages; raise `ulimit -l`\n",
			PERF_PROG, (unsigned long long)o->all_max,
			(unsigned long long)lim);
	return 0;
}

unsigned int perf_sizes(const struct perf_opts *o, uint64_t *sizes,
			unsigned int max)
{
	unsigned int n = 0;

	if (!o->all_sizes) {
		sizes[0] = o->size;
		return 1;
	}
	for (uint64_t s = 2; s <= o->all_max && n < max; s <<= 1)
		sizes[n++] = s;
	return n;
}

#define BW_LINE                                                         \
	"---------------------------------------------------------------" \
	"-------------------\n"

void perf_print_header(const struct perf_opts *o)
{
	if (o->json)
		return;
	printf(BW_LINE);
	printf("                    %s %s test (hostrdma-perf, IT-API)\n",
	       o->verb == PERF_WRITE ? "RDMA_Write" :
	       o->verb == PERF_READ  ? "RDMA_Read" :
	       o->verb == PERF_SEND  ? "Send" :
	       o->cas ? "Atomic CMP_AND_SWAP" : "Atomic FETCH_AND_ADD",
	       o->lat ? "Latency" : "BW");
	printf(" Number of qps   : %-8u Connection type : RC\n", o->qps);
	if (!o->lat)
		printf(" TX depth        : %-8u CQ Moderation   : %u\n"
		       " Post list       : %u\n",
		       o->tx_depth, o->cq_mod, o->post_list);
	if (o->verb == PERF_READ || o->verb == PERF_ATOMIC)
		printf(" Outstand reads  : %u\n", o->outs);
	if (o->verb == PERF_SEND)
		printf(" RX depth        : %u\n", o->rx_depth);
	printf(" Bidirectional   : %-8s Data verified   : %s\n",
	       o->bidir ? "on" : "off", o->verify ? "yes" : "no");
	if (o->inline_size)
		printf(" Inline data     : IT-API has none; -I %u ignored\n",
		       o->inline_size);
	printf(BW_LINE);
	if (o->lat)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    99%% percentile[usec]   99.9%% percentile[usec]\n");
	else
		printf(" #bytes     #iterations    BW average[%s]   MsgRate[Mpps]   CPU[s] here/peer\n",
		       o->mbps ? "MB/sec" : "Gb/sec");
	fflush(stdout);
}

void perf_print_result(const struct perf_opts *o, const struct perf_result *r)
{
	double s = (double)r->ns / 1e9;
	double bytes = (double)r->iters * (double)r->size;
	double gbps = s > 0 ? bytes * 8 / s / 1e9 : 0;
	double mpps = s > 0 ? (double)r->iters / s / 1e6 : 0;

	if (o->json) {
		printf("{\"test\":\"%s\",\"msg_size\":%llu,\"iterations\":%llu",
		       perf_test_name(o), (unsigned long long)r->size,
		       (unsigned long long)r->iters);
		if (o->lat)
			printf(",\"lat_us_min\":%.3f,\"lat_us_avg\":%.3f,\"lat_us_p50\":%.3f,\"lat_us_p99\":%.3f,\"lat_us_p999\":%.3f,\"lat_us_max\":%.3f",
			       r->lat_min, r->lat_avg, r->lat_p50, r->lat_p99,
			       r->lat_p999, r->lat_max);
		else
			printf(",\"bw_gbps\":%.4f,\"msg_rate_mpps\":%.5f",
			       gbps, mpps);
		printf(",\"seconds\":%.6f,\"cpu_s\":%.4f,\"peer_cpu_s\":%.4f,\"qps\":%u,\"bidirectional\":%s",
		       s, r->cpu_s, r->peer_cpu_s, o->qps,
		       o->bidir ? "true" : "false");
		if (o->verify)
			printf(",\"verified\":%s",
			       r->verify_errors ? "false" : "true");
		printf("}\n");
	} else if (o->lat) {
		printf(" %-7llu %-10llu %-14.2f %-14.2f %-16.2f %-14.2f %-22.2f %.2f\n",
		       (unsigned long long)r->size,
		       (unsigned long long)r->iters, r->lat_min, r->lat_max,
		       r->lat_p50, r->lat_avg, r->lat_p99, r->lat_p999);
	} else {
		printf(" %-10llu %-14llu %-21.2f %-15.6f %.2f/%.2f\n",
		       (unsigned long long)r->size,
		       (unsigned long long)r->iters,
		       o->mbps ? bytes / s / 1048576 : gbps, mpps, r->cpu_s,
		       r->peer_cpu_s);
	}
	if (o->verify && r->verify_errors)
		fprintf(stderr, "%s: %llu bytes: %u bytes of data differ from what was sent\n",
			PERF_PROG, (unsigned long long)r->size,
			r->verify_errors);
	fflush(stdout);
}

void perf_print_footer(const struct perf_opts *o)
{
	if (!o->json)
		printf(BW_LINE);
}

int perf_run(struct perf_opts *o, perf_report_fn report, void *arg)
{
	struct perf_ctx c = { .o = o };
	uint64_t sizes[32];
	unsigned int n;
	int failed = 0;

	if (o->server ? perf_connect(&c) : perf_accept(&c)) {
		perf_teardown(&c);
		return 1;
	}
	perf_print_header(o);
	n = perf_sizes(o, sizes, 32);
	for (unsigned int i = 0; i < n; i++) {
		struct perf_result r;

		if (o->lat && sizes[i] < 2 && o->verb == PERF_WRITE)
			continue;
		if (perf_loop(&c, sizes[i], &r)) {
			failed = 1;
			break;
		}
		perf_combine(&c, &r);
		if (r.verify_errors)
			failed = 1;
		report(o, &r, arg);
	}
	/*
	 * The server's last DONE is the last message. On RoCE its Send
	 * completes when the client's ACK comes back; a client that closed
	 * as soon as the DONE arrived could flush it first. The client
	 * says BYE, the server reads it after its DONE completed, and only
	 * then does the client close.
	 */
	if (!failed && !c.server &&
	    perf_ctl_send(&c, PERF_CTL_BYE, NULL, 0, false))
		failed = 1;
	if (!failed && c.server &&
	    perf_ctl_recv(&c, PERF_CTL_BYE, TOOL_WAIT_US))
		failed = 1;
	if (!failed && !c.server) {
		it_event_t ev;

		for (unsigned int i = 0; i < c.nqp; i++)
			it_ep_disconnect(c.qp[i].ep, NULL, 0);
		if (it_ep_disconnect(c.cep, NULL, 0) == IT_SUCCESS)
			for (unsigned int i = 0; i <= c.nqp; i++)
				if (it_evd_wait(c.cm, 5000000, &ev, &(size_t){ 0 }))
					break;
	} else if (!failed) {
		it_event_t ev;

		/* The client disconnects every connection when done. */
		for (unsigned int i = 0; i <= c.nqp; i++)
			if (it_evd_wait(c.cm, TOOL_WAIT_US, &ev, &(size_t){ 0 }))
				break;
	}
	perf_teardown(&c);
	return failed;
}
