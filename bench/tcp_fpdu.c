/* SPDX-License-Identifier: MIT */
/*
 * tcp-fpdu: what a receiving process pays, in CPU per GiB, to take a TCP
 * stream over loopback apart into MPA-sized frames and put each frame's
 * payload in place, with no transport at all. bench/run sets it beside
 * iperf3's server as the floor of soft-iWARP's receiving server.
 *
 * MPA's ULPDU length is 16 bits: no FPDU carries more than 65535 bytes,
 * and a receiver that places payloads without a copy must have a frame's
 * header before it knows where the payload goes. A user-space receiver
 * therefore makes at least one recvmsg() per frame (the payload, then
 * the trailer and the next header into a small buffer, in one call):
 * 17 calls for each MiB, where iperf3 reads as much as has come.
 *
 * The sender writes 1 MiB messages as frames of a 16-byte header (a
 * 16-bit length, 6 bytes of nothing, a 64-bit offset into a 1 MiB
 * target: the size of a tagged DDP header with MPA's length), up to
 * --frame bytes of payload and a 4-byte trailer (no CRC), a message a
 * sendmsg(). With --frame 0 the stream carries no frames and the receiver
 * reads up to --read bytes a call into the target, as iperf3 -l does.
 * The receiver, a child process, sleeps in poll() before each read as
 * iperf3's server sleeps in select(), or with --spin reads non-blocking
 * in a loop; it checks that each frame's first and last byte landed at
 * its offset.
 *
 * With --handoff the receiver is two threads, as a user-space RNIC with a
 * progress thread and an application that sleeps on completions: one
 * places the frames and, at the end of each 1 MiB message, wakes the
 * other through an eventfd (a completion), which sleeps in poll() for
 * the next. What that costs beside one thread is the floor of a server
 * that sleeps on completion events (hostrdma-perf send_bw -e).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"

#define PROG "tcp-fpdu"
#define HDR 16
#define TRAILER 4
#define TARGET (1u << 20)	/* a message; the receiver's placement area */
#define END_OFF UINT64_MAX	/* header offset that ends the stream */
#define FRAME_MAX 65535u	/* MPA's 16-bit ULPDU length */
/* soft-iWARP's payload per FPDU on loopback (MSS 65483, siw_ulpdu_max) */
#define FRAME_DEFAULT 65476u
#define BATCH 64		/* frames a sendmsg() at most */
#define END_COUNT (1ull << 62)	/* --handoff: the eventfd count that ends */

struct opts {
	double secs;
	int port;
	unsigned int frame;	/* payload bytes a frame; 0: no frames */
	unsigned int read;	/* --frame 0: bytes a read */
	int spin;
	int handoff;
	int json;
};

/* What the receiver reports to the parent. */
struct result {
	long bytes;
	long calls;
	long bad;		/* frames whose bytes landed elsewhere */
	long msgs;		/* --handoff: messages the consumer was told of */
	double secs;
	double cpu;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: tcp-fpdu [OPTION]...\n"
		"Send 1 MiB messages over loopback TCP in MPA-sized frames to a\n"
		"child process that places each frame's payload at its offset,\n"
		"and print the rate and the receiver's CPU seconds per GiB: the\n"
		"floor of soft-iWARP's receiving server in bench/run.\n\n"
		"  -t, --time=SECONDS   how long the sender sends (default 2)\n"
		"  -p, --port=PORT      receiver's TCP port on 127.0.0.1\n"
		"                       (default 47921)\n"
		"  -f, --frame=BYTES    payload bytes a frame, 1 to 65535\n"
		"                       (default 65476, soft-iWARP's on loopback);\n"
		"                       0: no frames, a plain stream\n"
		"  -r, --read=BYTES     with --frame 0, bytes a read (default\n"
		"                       1048576, as iperf3 -l 1M)\n"
		"      --spin           the receiver reads non-blocking in a loop\n"
		"                       instead of sleeping in poll() first\n"
		"      --handoff        a second receiving thread, woken through an\n"
		"                       eventfd at the end of each message, sleeps\n"
		"                       for the next (a completion); needs frames\n"
		"      --json           one JSON object instead of the text line\n"
		"  -h, --help           this text\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' },
		{ "port", required_argument, NULL, 'p' },
		{ "frame", required_argument, NULL, 'f' },
		{ "read", required_argument, NULL, 'r' },
		{ "spin", no_argument, NULL, 'S' },
		{ "handoff", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	long v;
	int c;

	*o = (struct opts){ .secs = 2, .port = 47921, .frame = FRAME_DEFAULT,
			    .read = TARGET };
	while ((c = getopt_long(argc, argv, "t:p:f:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (bench_seconds(PROG, optarg, &o->secs))
				return -1;
			break;
		case 'p':
			if (bench_number(PROG, "--port", optarg, 1, 65535, &v))
				return -1;
			o->port = (int)v;
			break;
		case 'f':
			if (bench_number(PROG, "--frame", optarg, 0,
					 FRAME_MAX, &v))
				return -1;
			o->frame = (unsigned int)v;
			break;
		case 'r':
			if (bench_number(PROG, "--read", optarg, 1, TARGET, &v))
				return -1;
			o->read = (unsigned int)v;
			break;
		case 'S':
			o->spin = 1;
			break;
		case 'H':
			o->handoff = 1;
			break;
		case 'J':
			o->json = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (o->handoff && !o->frame) {
		fprintf(stderr, "tcp-fpdu: --handoff needs frames (not "
			"--frame 0)\n");
		return -1;
	}
	return bench_no_operands(PROG, argc, argv, optind);
}

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + 1);
}

/* Sleeps until @fd has something (unless --spin); then one read. */
static ssize_t read_some(int fd, struct iovec *v, int n, const struct opts *o)
{
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n };
	ssize_t r;

	for (;;) {
		if (!o->spin) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -1;
		}
		r = recvmsg(fd, &m, o->spin ? MSG_DONTWAIT : 0);
		if (r >= 0 || (errno != EAGAIN && errno != EINTR))
			return r;
	}
}

/* Frames: each call takes what is left of the payload and then the
 * trailer and the next header, so a frame that has come whole costs one
 * call. */
static int receive_frames(int fd, uint8_t *place, const struct opts *o,
			  struct result *res, int efd)
{
	uint8_t ctl[TRAILER + HDR];
	size_t have = TRAILER;	/* the first header has no trailer before it */
	uint32_t left = 0, len = 0;
	uint64_t off = 0;

	for (;;) {
		struct iovec v[2];
		int n = 0;
		ssize_t r;

		if (left)
			v[n++] = (struct iovec){ place + off + (len - left),
						 left };
		v[n++] = (struct iovec){ ctl + have, sizeof(ctl) - have };
		r = read_some(fd, v, n, o);
		res->calls++;
		if (r <= 0) {
			fprintf(stderr, "tcp-fpdu: receiver: %s\n",
				r ? strerror(errno) : "the stream ended early");
			return -1;
		}
		if (left) {
			uint32_t take = (size_t)r < left ? (uint32_t)r : left;

			left -= take;
			r -= take;
			if (!left && len) {
				uint64_t last = off + len - 1;

				if (place[off] != pattern(off) ||
				    place[last] != pattern(last))
					res->bad++;
				res->bytes += len;
				/* a message's last frame: its completion */
				if (efd >= 0 && off + len == TARGET &&
				    eventfd_write(efd, 1))
					return -1;
			}
		}
		have += (size_t)r;
		if (have < sizeof(ctl))
			continue;
		len = (uint32_t)ctl[TRAILER] << 8 | ctl[TRAILER + 1];
		memcpy(&off, ctl + TRAILER + 8, sizeof(off));
		if (off == END_OFF)
			return 0;
		if (off > TARGET || len > TARGET - off) {
			fprintf(stderr, "tcp-fpdu: receiver: a frame of %u "
				"bytes at %llu is outside the target\n", len,
				(unsigned long long)off);
			return -1;
		}
		left = len;
		have = 0;
	}
}

/* A plain stream: reads of up to --read bytes into the target. */
static int receive_stream(int fd, uint8_t *place, const struct opts *o,
			  struct result *res)
{
	uint64_t pos = 0;

	for (;;) {
		uint64_t at = pos % TARGET, want = TARGET - at;
		struct iovec v;
		ssize_t r;

		if (want > o->read)
			want = o->read;
		v = (struct iovec){ place + at, want };
		r = read_some(fd, &v, 1, o);
		res->calls++;
		if (r < 0) {
			fprintf(stderr, "tcp-fpdu: receiver: %s\n",
				strerror(errno));
			return -1;
		}
		if (!r)
			return 0;
		if (place[at] != pattern(at))
			res->bad++;
		pos += (uint64_t)r;
		res->bytes += r;
	}
}

/* --handoff: the application's thread, asleep until a message is done. */
struct consumer {
	int efd;
	atomic_bool end;
	long msgs;
};

static void *consume(void *arg)
{
	struct consumer *k = arg;

	while (!atomic_load(&k->end)) {
		struct pollfd p = { .fd = k->efd, .events = POLLIN };
		eventfd_t v;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		/* (the end's count may come added to the last message's) */
		if (eventfd_read(k->efd, &v) == 0)
			k->msgs += (long)(v & (END_COUNT - 1));
	}
	return NULL;
}

static void receiver(int fd, const struct opts *o, int out)
{
	uint8_t *place = malloc(TARGET);
	struct result res = { 0 };
	struct consumer k = { .efd = -1 };
	pthread_t t;
	double t0, c0;
	int rc;

	if (!place)
		_exit(1);
	memset(place, 0, TARGET);
	if (o->handoff) {
		k.efd = eventfd(0, EFD_CLOEXEC);
		if (k.efd < 0 || pthread_create(&t, NULL, consume, &k))
			_exit(1);
	}
	t0 = bench_now_s();
	c0 = bench_cpu_s();
	rc = o->frame ? receive_frames(fd, place, o, &res, k.efd)
		      : receive_stream(fd, place, o, &res);
	if (o->handoff) {
		atomic_store(&k.end, true);
		/* a count the consumer does not add, to wake it */
		(void)eventfd_write(k.efd, END_COUNT);
		pthread_join(t, NULL);
		res.msgs = k.msgs;
	}
	res.secs = bench_now_s() - t0;
	res.cpu = bench_cpu_s() - c0;
	if (write(out, &res, sizeof(res)) != sizeof(res))
		rc = -1;
	_exit(rc ? 1 : 0);
}

/* One message as frames: header, payload, trailer, ... in one sendmsg. */
static int send_message(int fd, const uint8_t *src, const struct opts *o)
{
	static uint8_t hdrs[BATCH][HDR];
	static const uint8_t trailer[TRAILER];
	struct iovec v[3 * BATCH];
	unsigned int n = 0, k = 0;
	uint64_t off = 0;

	if (!o->frame)
		return send(fd, src, TARGET, 0) == (ssize_t)TARGET ? 0 : -1;
	while (off < TARGET) {
		uint32_t len = o->frame;

		if (TARGET - off < len)
			len = (uint32_t)(TARGET - off);

		hdrs[k][0] = (uint8_t)(len >> 8);
		hdrs[k][1] = (uint8_t)len;
		memcpy(hdrs[k] + 8, &off, sizeof(off));
		v[n++] = (struct iovec){ hdrs[k++], HDR };
		v[n++] = (struct iovec){ (void *)(src + off), len };
		v[n++] = (struct iovec){ (void *)trailer, TRAILER };
		off += len;
		if (k == BATCH || off == TARGET) {
			struct msghdr m = { .msg_iov = v, .msg_iovlen = n };
			size_t want = 0;
			ssize_t r;

			for (unsigned int i = 0; i < n; i++)
				want += v[i].iov_len;
			/* A blocking socket writes the whole of it. */
			r = sendmsg(fd, &m, 0);
			if (r < 0 || (size_t)r != want)
				return -1;
			n = 0;
			k = 0;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct result res;
	struct opts o;
	uint8_t *src;
	long sent = 0;
	int lfd, rfd, sfd, one = 1, st, pfd[2];
	double t0, secs;
	pid_t child;

	if (parse(argc, argv, &o))
		return 2;
	a.sin_port = htons((uint16_t)o.port);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || sfd < 0)
		return 1;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    connect(sfd, (struct sockaddr *)&a, sizeof(a)) ||
	    (rfd = accept(lfd, NULL, NULL)) < 0) {
		fprintf(stderr, "tcp-fpdu: 127.0.0.1 port %d: %s\n", o.port,
			strerror(errno));
		return 1;
	}
	close(lfd);
	src = malloc(TARGET);
	if (!src || pipe(pfd))
		return 1;
	for (uint64_t i = 0; i < TARGET; i++)
		src[i] = pattern(i);
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(sfd);
		close(pfd[0]);
		receiver(rfd, &o, pfd[1]);
	}
	close(rfd);
	close(pfd[1]);
	t0 = bench_now_s();
	do {
		if (send_message(sfd, src, &o)) {
			fprintf(stderr, "tcp-fpdu: sender: %s\n",
				strerror(errno));
			kill(child, SIGTERM);
			waitpid(child, &st, 0);
			return 1;
		}
		sent += TARGET;
	} while (bench_now_s() - t0 < o.secs);
	if (o.frame) {
		uint8_t end[TRAILER + HDR] = { 0 };
		uint64_t e = END_OFF;

		memcpy(end + TRAILER + 8, &e, sizeof(e));
		/* the last frame's trailer went with it: the header alone */
		(void)!send(sfd, end + TRAILER, HDR, 0);
	}
	shutdown(sfd, SHUT_WR);
	secs = bench_now_s() - t0;
	if (read(pfd[0], &res, sizeof(res)) != sizeof(res) ||
	    waitpid(child, &st, 0) != child || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "tcp-fpdu: the receiver failed\n");
		return 1;
	}
	if (o.handoff && res.msgs * (long)TARGET != sent) {
		fprintf(stderr, "tcp-fpdu: the consumer was told of %ld "
			"messages of %ld\n", res.msgs, sent / (long)TARGET);
		return 1;
	}
	if (res.bad || res.bytes != sent) {
		fprintf(stderr, "tcp-fpdu: %ld of %ld bytes placed, %ld frames "
			"or reads in the wrong place\n", res.bytes, sent,
			res.bad);
		return 1;
	}
	{
		double gib = (double)res.bytes / (1u << 30);
		double mib = (double)res.bytes / (1u << 20);

		if (o.json)
			printf("{\"bytes\":%ld,\"seconds\":%.3f,\"gbps\":%.3f,"
			       "\"frame\":%u,\"read\":%u,\"spin\":%d,"
			       "\"handoff\":%d,"
			       "\"cpu_s\":%.4f,\"cpu_s_per_gib\":%.4f,"
			       "\"recv_per_mib\":%.2f}\n", res.bytes,
			       res.secs, (double)res.bytes * 8 / res.secs / 1e9,
			       o.frame, o.frame ? 0 : o.read, o.spin,
			       o.handoff, res.cpu,
			       res.cpu / gib, (double)res.calls / mib);
		else
			printf("%.1f Gbit/s, receiver %.3f CPU s/GiB, %.1f "
			       "reads/MiB (%s%s%s; %.2f s sending)\n",
			       (double)res.bytes * 8 / res.secs / 1e9,
			       res.cpu / gib, (double)res.calls / mib,
			       o.frame ? "frames placed in place"
				       : "a plain stream",
			       o.spin ? ", receiver spinning" : "",
			       o.handoff ? ", a second thread woken a message"
					 : "", secs);
	}
	return 0;
}
