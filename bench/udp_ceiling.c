/* SPDX-License-Identifier: MIT */
/*
 * udp-ceiling: what two processes move over loopback UDP in datagrams the
 * size of soft-RoCE's bulk packets, with no transport at all. bench/run
 * takes it as the baseline for soft-RoCE's 1 MiB rows beside iperf3's TCP:
 * the distance between the two is the cost of UDP itself on this machine,
 * the distance to soft-RoCE is the cost of the transport.
 *
 * Each datagram is 4128 bytes, as a WRITE MIDDLE at 4096 MTU: 28 bytes of
 * header (an offset into a 1 MiB target), 4096 of payload, 4 of trailer.
 * The sender writes header and payload from separate buffers (one copy,
 * as soft-RoCE does), in GSO runs of up to 15 datagrams per sendmsg()
 * (UDP_SEGMENT; 15 x 4128 fits one 64 KiB IP datagram). The receiver reads
 * GRO runs (UDP_GRO) into a bounce buffer and copies each payload to its
 * offset, or with --one a datagram per recvmsg() straight into place.
 * Credits (the receiver's byte count, every 256 KiB) keep at most 4 MiB
 * in flight, so nothing is dropped. Nothing is checked: no ICRC, no PSN.
 *
 * With --icrc each side also does the one per-byte job RoCEv2 asks of a
 * software transport beyond moving the bytes: the sender computes a CRC-32
 * over header and payload into the trailer, the receiver computes it
 * again and compares, with soft-RoCE's own CRC (rxe_crc32: ISA-L when
 * configured, else zlib). The rate then is what UDP and the ICRC alone
 * allow: the floor of any RoCEv2 implemented in software on this machine.
 *
 * It prints the receiver's CPU time per GiB placed as well (the child's
 * own, from the first read to the end marker): beside iperf3's server
 * CPU per GiB, what UDP (and with --icrc the ICRC) costs a receiver
 * before any transport, the floor of soft-RoCE's server CPU rows.
 *
 * With --spin the receiver polls the socket (non-blocking reads in a
 * loop, never sleeping), as a consumer that polls its CQ reads
 * soft-RoCE's sockets (option poll_rx): what that way of receiving costs
 * UDP itself, with no transport in the path.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "vp/rxe/rxe_icrc.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define PROG "udp-ceiling"
#define HDR 28
#define PAY 4096
#define PKT (HDR + PAY + 4)
#define RUN 15			/* datagrams per GSO send */
#define TARGET (1u << 20)	/* the receiver's placement area */
#define WINDOW (4l << 20)	/* bytes in flight */
#define CREDIT (256l << 10)	/* receiver reports every ... */
#define END 0xffffffffu		/* header offset that ends the run */

struct opts {
	double secs;
	int port;
	int gso;
	int gro;
	int icrc;
	int spin;
	int json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: udp-ceiling [OPTION]...\n"
		"Move 4096-byte payloads in 4128-byte UDP datagrams between two\n"
		"processes over 127.0.0.1 and print the rate: the UDP baseline for\n"
		"soft-RoCE's bulk rows in bench/run.\n\n"
		"  -t, --time=SECONDS   how long the sender sends (default 2)\n"
		"  -p, --port=PORT      receiver's UDP port; the sender binds PORT+1\n"
		"                       (default 47911)\n"
		"      --no-gso         one datagram per sendmsg()\n"
		"      --one            one datagram per recvmsg(), payload read\n"
		"                       into place (default: GRO runs into a buffer,\n"
		"                       each payload copied to its place)\n"
		"      --icrc           a CRC-32 over each datagram, computed by the\n"
		"                       sender and checked by the receiver (RoCEv2's\n"
		"                       ICRC, soft-RoCE's implementation)\n"
		"      --spin           the receiver polls the socket (non-blocking\n"
		"                       reads in a loop, as a consumer polling its\n"
		"                       CQ reads soft-RoCE's sockets) instead of\n"
		"                       sleeping in recv()\n"
		"      --json           one JSON object instead of the text line\n"
		"  -h, --help           this text\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' },
		{ "port", required_argument, NULL, 'p' },
		{ "no-gso", no_argument, NULL, 'G' },
		{ "one", no_argument, NULL, 'O' },
		{ "icrc", no_argument, NULL, 'I' },
		{ "spin", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	long v;
	int c;

	*o = (struct opts){ .secs = 2, .port = 47911, .gso = 1, .gro = 1 };
	while ((c = getopt_long(argc, argv, "t:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (bench_seconds(PROG, optarg, &o->secs))
				return -1;
			break;
		case 'p':
			if (bench_number(PROG, "--port", optarg, 1, 65534, &v))
				return -1;
			o->port = (int)v;
			break;
		case 'G':
			o->gso = 0;
			break;
		case 'O':
			o->gro = 0;
			break;
		case 'I':
			o->icrc = 1;
			break;
		case 'S':
			o->spin = 1;
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
	return bench_no_operands(PROG, argc, argv, optind);
}

static int udp_socket(int port, int peer_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in p = a;
	int big = 8 << 20;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	p.sin_port = htons((uint16_t)peer_port);
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    connect(fd, (struct sockaddr *)&p, sizeof(p))) {
		fprintf(stderr, "udp-ceiling: 127.0.0.1 port %d: %s\n", port,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* The CRC of a datagram's header and payload (--icrc). */
static uint32_t pkt_crc(const uint8_t *hdr, const uint8_t *pay)
{
	return rxe_crc32(rxe_crc32(0, hdr, HDR), pay, PAY);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static long bad_crcs;		/* receiver: datagrams that failed --icrc */

/* What the receiving child tells its parent at the end. */
struct rx_result {
	long got;		/* bytes placed, or -1 */
	long bad_crcs;
	double cpu_s;		/* its CPU time while receiving */
};

/* Places payloads until the end marker; returns the bytes placed. */
static long receive(int fd, const struct opts *o)
{
	uint8_t *place = malloc(TARGET), *buf = malloc(65536);
	uint8_t hdr[HDR], trailer[4];
	long got = 0, reported = 0;
	int flags = o->spin ? MSG_DONTWAIT : 0;
	uint32_t off;

	if (!place || !buf)
		return -1;
	for (;;) {
		ssize_t n;

		if (o->gro) {
			n = recv(fd, buf, 65536, flags);
			if (n < 0 && errno == EAGAIN && o->spin)
				continue;
			if (n < 0)
				return -1;
			for (ssize_t i = 0; i + HDR <= n; i += PKT) {
				memcpy(&off, buf + i, sizeof(off));
				if (off == END)
					goto out;
				if (off > TARGET - PAY || i + PKT > n)
					continue;
				if (o->icrc &&
				    pkt_crc(buf + i, buf + i + HDR) !=
					    get32(buf + i + HDR + PAY)) {
					bad_crcs++;
					continue;
				}
				memcpy(place + off, buf + i + HDR, PAY);
				got += PAY;
			}
		} else {
			/* Place each payload at the offset after the last,
			 * as a direct-placing receiver guesses. */
			struct iovec v[3] = { { hdr, HDR },
					      { place + got % TARGET, PAY },
					      { trailer, 4 } };
			struct msghdr m = { .msg_iov = v, .msg_iovlen = 3 };

			n = recvmsg(fd, &m, flags);
			if (n < 0 && errno == EAGAIN && o->spin)
				continue;
			if (n < 0)
				return -1;
			memcpy(&off, hdr, sizeof(off));
			if (off == END)
				goto out;
			if (n != PKT)
				continue;
			if (o->icrc && pkt_crc(hdr, (uint8_t *)v[1].iov_base) !=
					       get32(trailer))
				bad_crcs++;
			else
				got += PAY;
		}
		if (got - reported >= CREDIT) {
			reported = got;
			(void)send(fd, &got, sizeof(got), 0);
		}
	}
out:
	free(place);
	free(buf);
	return got;
}

static int transmit(int fd, const struct opts *o, long *sent, double *secs)
{
	static uint8_t hdrs[RUN][HDR], trailers[RUN][4];
	uint8_t *src = malloc(TARGET);
	int k = o->gso ? RUN : 1;
	long acked = 0, got;
	uint32_t off = 0;
	double t0, t;
	unsigned pass = 0;

	if (!src)
		return -1;
	memset(src, 0x5a, TARGET);
	*sent = 0;
	t0 = t = bench_now_s();
	while (t - t0 < o->secs) {
		struct iovec v[3 * RUN];
		char cb[CMSG_SPACE(sizeof(uint16_t))] = { 0 };
		struct msghdr m = { .msg_iov = v, .msg_iovlen = 3 * (size_t)k };
		int i;

		/* A receiver that lost datagrams (a full socket buffer)
		 * never reaches its next credit: an error, not a hang. */
		while (*sent - acked >= WINDOW) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };

			if (poll(&pf, 1, 2000) == 0) {
				fprintf(stderr, "udp-ceiling: no credit from "
					"the receiver in 2 s (%ld of %ld bytes "
					"acknowledged; datagrams lost?)\n",
					acked, *sent);
				free(src);
				return -1;
			}
			if (recv(fd, &got, sizeof(got), 0) == sizeof(got))
				acked = got;
		}
		while (recv(fd, &got, sizeof(got), MSG_DONTWAIT) ==
		       sizeof(got))
			acked = got;
		for (i = 0; i < k; i++) {
			memcpy(hdrs[i], &off, sizeof(off));
			if (o->icrc) {
				uint32_t crc = pkt_crc(hdrs[i], src + off);

				memcpy(trailers[i], &crc, sizeof(crc));
			}
			v[3 * i] = (struct iovec){ hdrs[i], HDR };
			v[3 * i + 1] = (struct iovec){ src + off, PAY };
			v[3 * i + 2] = (struct iovec){ trailers[i], 4 };
			off = (off + PAY) % TARGET;
		}
		if (o->gso) {
			struct cmsghdr *c;

			m.msg_control = cb;
			m.msg_controllen = sizeof(cb);
			c = CMSG_FIRSTHDR(&m);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)CMSG_DATA(c) = PKT;
		}
		if (sendmsg(fd, &m, 0) < 0) {
			fprintf(stderr, "udp-ceiling: sendmsg: %s\n",
				strerror(errno));
			free(src);
			return -1;
		}
		*sent += (long)k * PAY;
		if (!(++pass & 15))
			t = bench_now_s();
	}
	*secs = bench_now_s() - t0;
	free(src);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	uint8_t end[HDR];
	int rfd, sfd, one = 1, st, i;
	int pipefd[2];
	long sent, got = -1;
	double secs, rx_cpu = 0, per_gib;
	pid_t child;

	if (parse(argc, argv, &o))
		return 2;
	rfd = udp_socket(o.port, o.port + 1);
	sfd = rfd < 0 ? -1 : udp_socket(o.port + 1, o.port);
	if (sfd < 0)
		return 1;
	if (o.gro &&
	    setsockopt(rfd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one))) {
		fprintf(stderr, "udp-ceiling: UDP_GRO: %s (try --one)\n",
			strerror(errno));
		return 1;
	}
	if (pipe(pipefd))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(sfd);
		struct rx_result res;
		double c0 = bench_cpu_s();

		got = receive(rfd, &o);
		res.got = got;
		res.bad_crcs = bad_crcs;
		res.cpu_s = bench_cpu_s() - c0;
		(void)!write(pipefd[1], &res, sizeof(res));
		_exit(got < 0);
	}
	close(rfd);
	close(pipefd[1]);
	if (transmit(sfd, &o, &sent, &secs)) {
		kill(child, SIGTERM);
		waitpid(child, &st, 0);
		return 1;
	}
	/* The end marker, a few times: nothing retransmits it. */
	memset(end, 0xff, sizeof(end));
	for (i = 0; i < 100; i++) {
		(void)send(sfd, end, sizeof(end), 0);
		if (waitpid(child, &st, WNOHANG) == child)
			break;
		usleep(2000);
	}
	if (i == 100) {
		fprintf(stderr, "udp-ceiling: the receiver did not end\n");
		kill(child, SIGTERM);
		waitpid(child, &st, 0);
		return 1;
	}
	{
		struct rx_result res;

		if (read(pipefd[0], &res, sizeof(res)) != sizeof(res) ||
		    res.got < 0) {
			fprintf(stderr, "udp-ceiling: the receiver failed\n");
			return 1;
		}
		got = res.got;
		bad_crcs = res.bad_crcs;
		rx_cpu = res.cpu_s;
	}
	/* The data is one pattern and the headers are ours: a datagram
	 * that fails the check is a bug here, not noise. */
	if (bad_crcs) {
		fprintf(stderr, "udp-ceiling: %ld datagrams failed the CRC\n",
			bad_crcs);
		return 1;
	}
	per_gib = got > 0 ? rx_cpu * (double)(1l << 30) / (double)got : 0;
	if (o.json)
		printf("{\"sent_bytes\":%ld,\"received_bytes\":%ld,"
		       "\"seconds\":%.3f,\"mb_per_s\":%.1f,\"gso\":%d,"
		       "\"gro\":%d,\"icrc\":%d,\"spin\":%d,"
		       "\"receiver_cpu_s\":%.4f,\"cpu_s_per_gib\":%.4f}\n",
		       sent, got, secs, (double)got / secs / 1e6, o.gso, o.gro,
		       o.icrc, o.spin, rx_cpu, per_gib);
	else
		printf("%.1f MB/s received (%ld of %ld bytes in %.2f s; %s, "
		       "%s%s%s); receiver %.3f CPU s/GiB\n",
		       (double)got / secs / 1e6, got, sent, secs,
		       o.gso ? "GSO runs of 15" : "one datagram per send",
		       o.gro ? "GRO runs, payloads copied into place"
			     : "one datagram per recvmsg, into place",
		       o.icrc ? ", CRC-32 computed and checked" : "",
		       o.spin ? ", receiver polling" : "", per_gib);
	return 0;
}
