/* SPDX-License-Identifier: MIT */
/*
 * rxe-peer's perftest side, client or server: the out-of-band exchange
 * that perftest (ib_write_bw / ib_read_bw / ib_send_bw / ib_atomic_bw
 * without -R, version string
 * "6.06" as Debian 12's perftest 4.5-0.17 sends) runs over TCP port 18515,
 * and the RC traffic of one half-duplex, fixed-iteration run. Facts from
 * perftest's src/perftest_communication.c and {write,read,send}_bw.c:
 *
 *   1. versions: 16 bytes each way (the client writes first, always);
 *   2. cycle buffer and cache line size, 4-byte big-endian ints;
 *   3. the path MTU as a 2-byte decimal string of the IBA MTU code;
 *   4. a 108-byte "hand shake" of the QP data with the GID,
 *      "%04x:%04x:%06x:%06x:%08x:%016llx:" (LID, outstanding reads, QPN,
 *      PSN, rkey, VA), 16 "%02x:" GID bytes, "%08x:" SRQN;
 *   5. hand shakes: WRITE/READ/atomic two more before the run, one after,
 *      then
 *      the client's report (size and iterations as 8-byte big-endian,
 *      peak / average bandwidth and message rate as byte-swapped doubles);
 *      SEND three more before the run and none after;
 *   6. a last hand shake and "done\0".
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/interop/rxe-peer.h"

#define PERF_MSG 108
#define PERF_VERSION "6.06"
#define PERF_DEPTH 128

struct perf_dest {
	unsigned int lid, out_reads, qpn, psn, rkey, srqn;
	unsigned long long vaddr;
	union rnicpi_gid gid;
};

static int xwrite(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static int xread(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* ctx_xchg_data: the client writes first, the server reads first. */
static bool is_server;

static int xchg(int fd, const void *mine, void *theirs, size_t n)
{
	if (is_server)
		return xread(fd, theirs, n) || xwrite(fd, mine, n) ? -1 : 0;
	return xwrite(fd, mine, n) || xread(fd, theirs, n) ? -1 : 0;
}

static int hand_shake(int fd, const struct perf_dest *me, struct perf_dest *rem)
{
	char msg[PERF_MSG], tmp[PERF_MSG + 1];
	char *p, *end;
	int i, n;

	memset(msg, 0, sizeof(msg));
	n = snprintf(msg, sizeof(msg), "%04x:%04x:%06x:%06x:%08x:%016llx:",
		     me->lid, me->out_reads, me->qpn, me->psn, me->rkey,
		     me->vaddr);
	for (i = 0; i < 16; i++)
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, "%02x:",
			      me->gid.raw[i]);
	snprintf(msg + n, sizeof(msg) - (size_t)n, "%08x:", me->srqn);
	if (xchg(fd, msg, tmp, PERF_MSG))
		return -1;
	tmp[PERF_MSG] = 0;
	p = tmp;
	rem->lid = (unsigned int)strtoul(p, &end, 16);
	rem->out_reads = (unsigned int)strtoul(end + 1, &end, 16);
	rem->qpn = (unsigned int)strtoul(end + 1, &end, 16);
	rem->psn = (unsigned int)strtoul(end + 1, &end, 16);
	rem->rkey = (unsigned int)strtoul(end + 1, &end, 16);
	rem->vaddr = strtoull(end + 1, &end, 16);
	for (i = 0; i < 16; i++)
		rem->gid.raw[i] = (uint8_t)strtoul(end + 1, &end, 16);
	rem->srqn = (unsigned int)strtoul(end + 1, &end, 16);
	return *end == ':' ? 0 : -1;
}

static uint64_t swap_double(double d)
{
	uint64_t v;

	memcpy(&v, &d, 8);
	return htobe64(v);
}

static int post_recvs(struct rxe_peer *pp, unsigned int n, unsigned int size)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct rnicpi_sge sge = { (uint64_t)(uintptr_t)pp->buf, size,
					  pp->mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, i, &sge, 1 };
		const struct rnicpi_recv_wr *bad;

		if (pp->dev->ops->post_recv(pp->qp, &rw, &bad))
			return -1;
	}
	return 0;
}

/* Server of a SEND test: take @iters messages, keeping receives posted. */
static int serve_sends(struct rxe_peer *pp, unsigned int iters,
		       unsigned int size, unsigned int posted)
{
	unsigned int got = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < iters) {
		struct rnicpi_wc wc;

		if (pp->dev->ops->poll_cq(pp->cq, 1, &wc) != 1) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 300)
				return -1;
			usleep(20);
			continue;
		}
		if (wc.status != RNICPI_WC_SUCCESS || wc.byte_len != size) {
			fprintf(stderr,
				"rxe-peer: receive status %d, %u bytes\n",
				wc.status, wc.byte_len);
			return -1;
		}
		got++;
		if (posted < iters) {
			if (post_recvs(pp, 1, size))
				return -1;
			posted++;
		}
	}
	printf("received %u messages of %u bytes\n", got, size);
	return 0;
}

int rxe_perftest(struct rxe_peer *pp, const char *server,
		 enum rxe_perf_test test, unsigned int iters, unsigned int size)
{
	const struct rnicpi_device_ops *ops = pp->dev->ops;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(18515) };
	struct perf_dest me, rem;
	char ver[16] = PERF_VERSION, rver[16], mtu_s[2], rmtu_s[2];
	uint32_t cb = htonl(4096), cl = htonl(64), rcb, rcl;
	struct rnicpi_qp_attr a;
	unsigned int posted = 0, done = 0, i, hs_before;
	struct timespec t0, t1;
	uint64_t u;
	double secs, bw;
	int fd, err, mtu_code;

	is_server = !server;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (server) {
		inet_pton(AF_INET, server, &sin.sin_addr);
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
			perror("rxe-peer: connect");
			return 1;
		}
	} else {
		int one = 1, lfd = fd;

		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(lfd, 1) < 0) {
			perror("rxe-peer: listen");
			return 1;
		}
		printf("rxe-peer: perftest server on 18515\n");
		fflush(stdout);
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0)
			return 1;
	}
	mtu_s[0] = (char)('0' + pp->mtu);
	mtu_s[1] = 0;
	if (xchg(fd, ver, rver, sizeof(ver)) ||
	    xchg(fd, &cb, &rcb, 4) || xchg(fd, &cl, &rcl, 4) ||
	    xchg(fd, mtu_s, rmtu_s, 2)) {
		fprintf(stderr, "rxe-peer: perftest preamble failed\n");
		return 1;
	}
	rver[15] = 0;
	mtu_code = atoi(rmtu_s);
	if (mtu_code >= RNICPI_MTU_256 && mtu_code < (int)pp->mtu)
		pp->mtu = (enum rnicpi_mtu)mtu_code;
	printf("perftest peer version %s, MTU %u\n", rver,
	       rxe_mtu_bytes(pp->mtu));

	memset(&me, 0, sizeof(me));
	me.out_reads = 16;
	me.qpn = pp->qp->qp_num;
	me.psn = (unsigned int)lrand48() & 0xffffff;
	me.rkey = pp->mr->rkey;
	/* perftest's server hands its buffer to the client as is. */
	me.vaddr = (uint64_t)(uintptr_t)pp->buf;
	me.gid = pp->gid;
	if (hand_shake(fd, &me, &rem)) {
		fprintf(stderr, "rxe-peer: hand shake failed\n");
		return 1;
	}
	printf("  local  QPN 0x%06x PSN 0x%06x\n  remote QPN 0x%06x PSN 0x%06x "
	       "RKey 0x%08x VAddr 0x%016llx out_reads %u\n", me.qpn, me.psn,
	       rem.qpn, rem.psn, rem.rkey, rem.vaddr, rem.out_reads);

	/* ctx_connect: RTR then RTS. */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = pp->mtu;
	a.dest_qp_num = rem.qpn;
	a.rq_psn = rem.psn;
	a.max_dest_rd_atomic = (uint8_t)me.out_reads;
	a.min_rnr_timer = 12;
	a.ah_attr.dgid = rem.gid;
	a.ah_attr.sgid_index = pp->gid_index;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	err = ops->modify_qp(pp->qp, &a, RNICPI_QP_STATE | RNICPI_QP_AV |
			     RNICPI_QP_PATH_MTU | RNICPI_QP_DEST_QPN |
			     RNICPI_QP_RQ_PSN | RNICPI_QP_MAX_DEST_RD_ATOMIC |
			     RNICPI_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me.psn;
	a.max_rd_atomic = (uint8_t)(rem.out_reads < 16 ? rem.out_reads : 16);
	if (!err)
		err = ops->modify_qp(pp->qp, &a, RNICPI_QP_STATE |
				     RNICPI_QP_TIMEOUT | RNICPI_QP_RETRY_CNT |
				     RNICPI_QP_RNR_RETRY | RNICPI_QP_SQ_PSN |
				     RNICPI_QP_MAX_QP_RD_ATOMIC);
	if (err) {
		fprintf(stderr, "rxe-peer: connect QP: %s\n", g_strerror(-err));
		return 1;
	}
	hs_before = test == RXE_PERF_SEND ? 3 : 2;
	for (i = 0; i < hs_before; i++) {
		/* The SEND server posts its receives before the last one. */
		if (is_server && test == RXE_PERF_SEND && i == hs_before - 1 &&
		    post_recvs(pp, iters < 256 ? iters : 256, size))
			return 1;
		if (hand_shake(fd, &me, &rem)) {
			fprintf(stderr, "rxe-peer: hand shake %u failed\n",
				i + 2);
			return 1;
		}
	}
	if (is_server) {
		uint64_t zero = 0, r8;

		if (test == RXE_PERF_SEND) {
			if (serve_sends(pp, iters, size,
					iters < 256 ? iters : 256))
				return 1;
		} else {
			/* The client works on our memory alone; then its
			 * report comes. */
			if (hand_shake(fd, &me, &rem))
				return 1;
			for (i = 0; i < 5; i++)
				if (xchg(fd, &zero, &r8, 8))
					return 1;
			printf("client done, report exchanged\n");
		}
		if (hand_shake(fd, &me, &rem) || xwrite(fd, "done", 5))
			return 1;
		close(fd);
		return 0;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < iters) {
		struct rnicpi_wc wc[16];
		int n, k;

		while (posted < iters && posted - done < PERF_DEPTH) {
			struct rnicpi_sge sge = { (uint64_t)(uintptr_t)pp->buf,
						  size, pp->mr->lkey };
			struct rnicpi_send_wr wr;
			const struct rnicpi_send_wr *bad;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = RNICPI_SEND_SIGNALED;
			wr.opcode =
				test == RXE_PERF_WRITE	? RNICPI_WR_RDMA_WRITE
				: test == RXE_PERF_READ ? RNICPI_WR_RDMA_READ
				: test == RXE_PERF_ATOMIC
					? RNICPI_WR_ATOMIC_FETCH_AND_ADD
					: RNICPI_WR_SEND;
			if (test == RXE_PERF_ATOMIC) {
				sge.length = 8;
				wr.wr.atomic.remote_addr = rem.vaddr;
				wr.wr.atomic.rkey = rem.rkey;
				wr.wr.atomic.compare_add = 1;
			} else {
				wr.wr.rdma.remote_addr = rem.vaddr;
				wr.wr.rdma.rkey = rem.rkey;
			}
			err = ops->post_send(pp->qp, &wr, &bad);
			if (err) {
				fprintf(stderr, "rxe-peer: post_send: %s\n",
					g_strerror(-err));
				return 1;
			}
			posted++;
		}
		n = ops->poll_cq(pp->cq, 16, wc);
		for (k = 0; k < n; k++) {
			if (wc[k].status != RNICPI_WC_SUCCESS) {
				fprintf(stderr, "rxe-peer: WR %" PRIu64
					" completed with status %d\n",
					wc[k].wr_id, wc[k].status);
				return 1;
			}
			done++;
		}
		if (n == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 300) {
				fprintf(stderr, "rxe-peer: timed out\n");
				return 1;
			}
			usleep(20);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9;
	bw = (double)iters * size / secs / 1048576.0;
	printf(" #bytes  #iterations  BW average[MB/sec]  MsgRate[Mpps]\n"
	       " %-7u %-12u %-19.2f %.6f\n", size, iters, bw,
	       iters / secs / 1e6);

	if (test != RXE_PERF_SEND) {
		uint64_t r8;

		if (hand_shake(fd, &me, &rem))
			return 1;
		u = htobe64(size);
		if (xchg(fd, &u, &r8, 8))
			return 1;
		u = htobe64(iters);
		if (xchg(fd, &u, &r8, 8))
			return 1;
		u = swap_double(bw);
		if (xchg(fd, &u, &r8, 8) || xchg(fd, &u, &r8, 8))
			return 1;
		u = swap_double(iters / secs / 1e6);
		if (xchg(fd, &u, &r8, 8))
			return 1;
	}
	if (hand_shake(fd, &me, &rem) || xwrite(fd, "done", 5))
		return 1;
	close(fd);
	return 0;
}
