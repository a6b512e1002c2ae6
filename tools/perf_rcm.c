/* SPDX-License-Identifier: MIT */
/*
 * perf_rcm.c - hostrdma-perf -R: perftest's connection exchange over
 * rdma_cm, to measure against ib_write_bw -R and friends.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <stdio.h>

int perf_run_perftest(struct perf_opts *o, perf_report_fn report, void *arg)
{
	(void)o;
	(void)report;
	(void)arg;
	fprintf(stderr, "%s: -R is not implemented yet\n", PERF_PROG);
	return 2;
}
