/* SPDX-License-Identifier: MIT */
/*
 * core-distance: how far apart two CPUs are, as the time a cache line
 * takes to go from one to the other and back. On a virtual machine the
 * host places the guest's vCPUs and moves them: on the 2-vCPU bench
 * machine the round trip is about 65 ns for long stretches and about
 * 370 ns for others (the vCPUs on cores that share no cache), and every
 * loopback transfer, ours and iperf3's alike, moves half as much in the
 * second state, because each payload byte written on one CPU is read on
 * the other. bench/paired runs this before and after each round and
 * keeps only rounds whose contenders all ran in one state.
 *
 * One thread per CPU, pinned; a flag in one cache line passed back and
 * forth N times. Prints the average round trip in ns (--json: an object).
 * Exit 77 when the two CPUs cannot both be used (fewer CPUs, affinity).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct probe {
	_Alignas(64) atomic_uint turn;	/* odd: the far side's move */
	char pad[64 - sizeof(atomic_uint)];
	unsigned int rounds;
	int cpu;
	atomic_int pinned;		/* the far side: 1 pinned, -1 not */
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void *far_side(void *arg)
{
	struct probe *p = arg;
	unsigned int want;

	if (pin(p->cpu)) {
		atomic_store(&p->pinned, -1);
		return NULL;
	}
	atomic_store(&p->pinned, 1);
	for (unsigned int i = 0; i < p->rounds; i++) {
		want = 2 * i + 1;
		while (atomic_load_explicit(&p->turn, memory_order_acquire) !=
		       want)
			;
		atomic_store_explicit(&p->turn, want + 1,
				      memory_order_release);
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: core-distance [-c A,B] [-n ROUNDS] [--json]\n"
		"The average time, in ns, for a cache line to go from CPU A to\n"
		"CPU B and back (default CPUs 0 and 1, 200000 round trips).\n"
		"About 50-100 ns: the two share a cache; several hundred: they\n"
		"do not (on a virtual machine, where the host put the vCPUs).\n"
		"Exit 77 when the two CPUs cannot be used.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static struct probe p;
	int a = 0, b = 1, json = 0, c, err;
	unsigned long n = 200000;
	struct timespec t0, t1;
	pthread_t t;
	double ns;
	char *end;

	while ((c = getopt_long(argc, argv, "c:n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (sscanf(optarg, "%d,%d", &a, &b) != 2 || a < 0 ||
			    b < 0 || a == b) {
				fprintf(stderr, "core-distance: -c wants two "
					"different CPUs A,B, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || *end || n == 0 || n > 100000000) {
				fprintf(stderr, "core-distance: -n wants 1.."
					"100000000 round trips, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((err = pin(a))) {
		fprintf(stderr, "core-distance: CPU %d: %s\n", a,
			strerror(-err));
		return 77;
	}
	p.rounds = (unsigned int)n;
	p.cpu = b;
	if ((err = pthread_create(&t, NULL, far_side, &p))) {
		fprintf(stderr, "core-distance: a thread: %s\n", strerror(err));
		return 1;
	}
	while (!atomic_load(&p.pinned))
		sched_yield();
	if (atomic_load(&p.pinned) < 0) {
		pthread_join(t, NULL);
		fprintf(stderr, "core-distance: CPU %d cannot be used\n", b);
		return 77;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int i = 0; i < p.rounds; i++) {
		atomic_store_explicit(&p.turn, 2 * i + 1,
				      memory_order_release);
		while (atomic_load_explicit(&p.turn, memory_order_acquire) !=
		       2 * i + 2)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
	      (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
	if (json)
		printf("{\"cpus\": [%d, %d], \"round_trips\": %lu, "
		       "\"round_trip_ns\": %.1f}\n", a, b, n, ns);
	else
		printf("%.0f\n", ns);
	return 0;
}
