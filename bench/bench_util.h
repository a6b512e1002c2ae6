/* SPDX-License-Identifier: MIT */
/*
 * bench_util.h - what bench's small programs (udp-ceiling, tcp-fpdu)
 * share: the clock, the process's CPU time, and the checks of their
 * numeric options, each naming the program and the bad value.
 */
#ifndef HOSTRDMA_BENCH_UTIL_H
#define HOSTRDMA_BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double bench_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* User and system time of every thread of the process, in seconds. */
static inline double bench_cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* @arg as a whole number from @lo to @hi, else a message and -1. */
static inline int bench_number(const char *prog, const char *what,
			       const char *arg, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || *v < lo || *v > hi) {
		fprintf(stderr, "%s: bad %s '%s' (%ld to %ld)\n", prog, what,
			arg, lo, hi);
		return -1;
	}
	return 0;
}

/* --time: seconds, above 0 and at most an hour. */
static inline int bench_seconds(const char *prog, const char *arg,
				double *secs)
{
	char *end;

	*secs = strtod(arg, &end);
	if (*end || end == arg || !(*secs > 0 && *secs <= 3600)) {
		fprintf(stderr, "%s: bad --time '%s' (seconds, above 0, at "
			"most 3600)\n", prog, arg);
		return -1;
	}
	return 0;
}

/* No operands after the options. */
static inline int bench_no_operands(const char *prog, int argc,
				    char **argv, int first)
{
	if (first < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog,
			argv[first]);
		return -1;
	}
	return 0;
}

#endif
