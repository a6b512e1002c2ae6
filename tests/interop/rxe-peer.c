/* SPDX-License-Identifier: MIT */
/*
 * rxe-peer: our side of the interop tests against the Linux kernel's
 * rdma_rxe. It drives the soft-RoCE provider directly through its rnicpi
 * ops (as the core will) on a real interface and speaks the out-of-band
 * TCP exchange of rdma-core's ibv_rc_pingpong (port 18515):
 *
 *   client -> server  "LLLL:QQQQQQ:PPPPPP:GGGG...G\0"  (52 bytes: LID, QPN,
 *                     PSN in hex, the GID as 32 hex digits of its bytes)
 *   server -> client  the same
 *   client -> server  "done\0"
 *
 * then RC SEND ping-pong of -s bytes, -n times, as ibv_rc_pingpong does.
 *
 *   rxe-peer [-6 | -a LOCAL_IPV4] [-n ITERS] [-s SIZE] [-m MTU] [-p PORT]
 *            [-o key=value]... IFNAME [SERVER_IPV4]
 *
 * With -G PEER_IP it sends a MAD from our GSI QP (QP1) to the peer's
 * and checks the answer (rxe-gsi.c).
 * With -P write|read|send|atomic it is instead the other side of perftest
 * (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw without -R, see
 * rxe-perftest.c): client of SERVER, or server without one.
 *
 * Without SERVER it listens. -6 uses the interface's IPv6 link-local GID
 * (the guest's GID index 0) instead of its IPv4 one (index 1). Exit 0 when
 * every message went both ways and every completion succeeded.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/interop/rxe-peer.h"

#define MSG_LEN 52 /* sizeof "0000:000000:000000:" + 32 hex digits */
#define RECV_WRID 1
#define SEND_WRID 2
#define RX_DEPTH 500

static void die(const char *what, int err)
{
	fprintf(stderr, "rxe-peer: %s: %s\n", what,
		g_strerror(err < 0 ? -err : err));
	exit(1);
}

static void core_async(struct rnicpi_device *dev,
		       const struct rnicpi_async_event *ev)
{
	fprintf(stderr, "rxe-peer: async event %d\n", ev->type);
}

static const struct rnicpi_core_ops core_ops = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = core_async,
};

/* The interface as the core would describe it. */
static void fill_netdev(const char *ifname, struct rnicpi_netdev *nd,
			struct sockaddr_storage *addrs, size_t max)
{
	struct ifaddrs *ifa, *i;
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	memset(nd, 0, sizeof(*nd));
	nd->ifindex = (int)if_nametoindex(ifname);
	if (!nd->ifindex)
		die(ifname, errno);
	snprintf(nd->ifname, sizeof(nd->ifname), "%s", ifname);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
		nd->mtu = (uint32_t)ifr.ifr_mtu;
	if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0) {
		memcpy(nd->hwaddr, ifr.ifr_hwaddr.sa_data, 6);
		nd->hwaddr_len = 6;
	}
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		if (ifr.ifr_flags & IFF_UP)
			nd->flags |= RNICPI_NETDEV_UP;
		if (ifr.ifr_flags & IFF_RUNNING)
			nd->flags |= RNICPI_NETDEV_RUNNING;
	}
	close(s);
	if (getifaddrs(&ifa) < 0)
		die("getifaddrs", errno);
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) ||
		    (i->ifa_addr->sa_family != AF_INET &&
		     i->ifa_addr->sa_family != AF_INET6) ||
		    nd->n_addrs == max)
			continue;
		memset(&addrs[nd->n_addrs], 0, sizeof(addrs[0]));
		memcpy(&addrs[nd->n_addrs], i->ifa_addr,
		       i->ifa_addr->sa_family == AF_INET
			       ? sizeof(struct sockaddr_in)
			       : sizeof(struct sockaddr_in6));
		nd->n_addrs++;
	}
	freeifaddrs(ifa);
	nd->addrs = addrs;
}

static void gid_to_wire(const union rnicpi_gid *gid, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", gid->raw[i]);
}

static int wire_to_gid(const char *in, union rnicpi_gid *gid)
{
	int i;

	for (i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(in + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = (uint8_t)b;
	}
	return 0;
}

struct dest {
	uint32_t lid, qpn, psn;
	union rnicpi_gid gid;
};

static void dest_to_msg(const struct dest *d, char msg[MSG_LEN])
{
	char wgid[33];

	gid_to_wire(&d->gid, wgid);
	memset(msg, 0, MSG_LEN);
	snprintf(msg, MSG_LEN, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn,
		 wgid);
}

static int msg_to_dest(const char msg[MSG_LEN], struct dest *d)
{
	char wgid[33] = { 0 };

	if (sscanf(msg, "%x:%x:%x:%32s", &d->lid, &d->qpn, &d->psn, wgid) !=
		    4 ||
	    strlen(wgid) != 32)
		return -1;
	return wire_to_gid(wgid, &d->gid);
}

static int read_full(int fd, void *buf, size_t n)
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

int main(int argc, char **argv)
{
	struct rnicpi_option opts[16] = { { NULL, NULL } };
	const struct rnicpi_device_ops *ops;
	struct sockaddr_storage addrs[16];
	struct rnicpi_netdev nd;
	struct rnicpi_device *dev;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *cq = NULL;
	struct rnicpi_qp *qp;
	struct rnicpi_mr *mr;
	struct rnicpi_cq_init_attr ca = { .cqe = RX_DEPTH + 1 };
	struct rnicpi_qp_init_attr qa;
	struct rnicpi_qp_attr a;
	struct rnicpi_gid_entry ge;
	struct dest me, rem;
	char msg[MSG_LEN];
	const char *server = NULL;
	unsigned int iters = 1000, size = 4096, n_opts = 0, port = 18515;
	enum rnicpi_mtu mtu = RNICPI_MTU_1024;
	bool v6 = false;
	enum rxe_perf_test perf = RXE_PERF_NONE;
	const char *gsi_peer = NULL;
	const char *local = NULL;
	uint8_t *buf;
	size_t buf_len;
	int c, err, sock, gid_index = -1;
	unsigned int i, rcnt = 0, scnt = 0, routs, pending;
	struct timespec t0, t1;
	double secs;

	while ((c = getopt(argc, argv, "6a:n:s:m:p:o:P:G:")) != -1) {
		switch (c) {
		case 'a':
			local = optarg;
			break;
		case 'G':
			gsi_peer = optarg;
			break;
		case 'P':
			perf = !strcmp(optarg, "write") ? RXE_PERF_WRITE
			       : !strcmp(optarg, "read") ? RXE_PERF_READ
			       : !strcmp(optarg, "send") ? RXE_PERF_SEND
			       : !strcmp(optarg, "atomic") ? RXE_PERF_ATOMIC
			       : RXE_PERF_NONE;
			if (perf == RXE_PERF_NONE)
				die("-P write|read|send|atomic", EINVAL);
			break;
		case '6':
			v6 = true;
			break;
		case 'n':
			iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			size = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			switch (atoi(optarg)) {
			case 256: mtu = RNICPI_MTU_256; break;
			case 512: mtu = RNICPI_MTU_512; break;
			case 1024: mtu = RNICPI_MTU_1024; break;
			case 2048: mtu = RNICPI_MTU_2048; break;
			case 4096: mtu = RNICPI_MTU_4096; break;
			default: die("-m", EINVAL);
			}
			break;
		case 'p':
			port = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			if (n_opts + 1 < G_N_ELEMENTS(opts) &&
			    strchr(optarg, '=')) {
				char *eq = strchr(optarg, '=');

				*eq = 0;
				opts[n_opts].key = optarg;
				opts[n_opts].value = eq + 1;
				n_opts++;
			}
			break;
		default:
			fprintf(stderr,
				"usage: rxe-peer [-6 | -a ip] [-n iters] [-s size] "
				"[-m mtu] [-p port] [-o key=value] IFNAME "
				"[SERVER]\n");
			return 2;
		}
	}
	if (optind >= argc)
		die("IFNAME missing", EINVAL);
	if (optind + 1 < argc)
		server = argv[optind + 1];

	fill_netdev(argv[optind], &nd, addrs, G_N_ELEMENTS(addrs));
	err = rxe_provider.device_create(&nd, "rxe_peer", opts, &core_ops,
					 &dev);
	if (err)
		die("device_create", err);
	ops = dev->ops;
	err = ops->device_open(dev);	/* binds UDP port 4791 */
	if (err)
		die("device_open", err);
	for (i = 0; i < 16; i++) {
		if (ops->query_gid(dev, 1, i, &ge))
			continue;
		if (local && !v6) {
			union rnicpi_gid want = {
				.raw = { [10] = 0xff, [11] = 0xff }
			};

			inet_pton(AF_INET, local, want.raw + 12);
			if (memcmp(want.raw, ge.gid.raw, 16))
				continue;
		}
		if (v6 ==
		    (ge.gid.raw[0] == 0xfe && (ge.gid.raw[1] & 0xc0) == 0x80)) {
			gid_index = (int)i;
			break;
		}
	}
	if (gid_index < 0)
		die("no GID of the asked kind on the interface", ENOENT);

	if (gsi_peer) {
		union rnicpi_gid dgid;

		memset(&dgid, 0, sizeof(dgid));
		if (inet_pton(AF_INET6, gsi_peer, dgid.raw) != 1) {
			dgid.raw[10] = dgid.raw[11] = 0xff;
			if (inet_pton(AF_INET, gsi_peer, dgid.raw + 12) != 1)
				die("-G address", EINVAL);
		}
		err = rxe_gsi_probe(dev, (uint8_t)gid_index, &dgid);
		ops->device_destroy(dev);
		return err ? 1 : 0;
	}
	if ((err = ops->alloc_pd(dev, &pd)) ||
	    (err = ops->create_cq(dev, &ca, &cq)))
		die("pd/cq", err);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = perf ? 128 : 1;
	qa.cap.max_recv_wr = RX_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if ((err = ops->create_qp(pd, &qa, &qp)))
		die("create_qp", err);
	/* perftest clients may walk their target address through a cycle
	 * buffer of a few pages: give them room. */
	buf_len = perf ? 2 * (size > 8192 ? size : 8192) : (size ? size : 1);
	buf = aligned_alloc(4096, (buf_len + 4095) & ~(size_t)4095);
	memset(buf, 0x7b, buf_len);
	if ((err = ops->reg_mr(pd, buf, buf_len, (uint64_t)(uintptr_t)buf,
			       RNICPI_ACCESS_LOCAL_WRITE |
			       RNICPI_ACCESS_REMOTE_WRITE |
			       RNICPI_ACCESS_REMOTE_READ |
			       RNICPI_ACCESS_REMOTE_ATOMIC, &mr)))
		die("reg_mr", err);

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags =
		RNICPI_ACCESS_LOCAL_WRITE | RNICPI_ACCESS_REMOTE_WRITE |
		RNICPI_ACCESS_REMOTE_READ | RNICPI_ACCESS_REMOTE_ATOMIC;
	if ((err = ops->modify_qp(qp, &a,
				  RNICPI_QP_STATE | RNICPI_QP_PKEY_INDEX |
					  RNICPI_QP_PORT |
					  RNICPI_QP_ACCESS_FLAGS)))
		die("INIT", err);
	for (routs = 0; !perf && routs < RX_DEPTH; routs++) {
		struct rnicpi_sge sge = { (uint64_t)(uintptr_t)buf, size,
					  mr->lkey };
		struct rnicpi_recv_wr rw = { NULL, RECV_WRID, &sge, 1 };
		const struct rnicpi_recv_wr *bad;

		if ((err = ops->post_recv(qp, &rw, &bad)))
			die("post_recv", err);
	}

	srand48((long)time(NULL) ^ getpid());
	if (perf) {
		struct rxe_peer pp = {
			.dev = dev, .pd = pd, .cq = cq, .qp = qp, .mr = mr,
			.buf = buf, .gid_index = (uint8_t)gid_index,
			.mtu = mtu,
		};

		ops->query_gid(dev, 1, (uint32_t)gid_index, &ge);
		pp.gid = ge.gid;
		err = rxe_perftest(&pp, server, perf, iters, size);
		printf("counters: sent %" PRIu64 " rcvd %" PRIu64
		       " retransmitted %" PRIu64 " timeouts %" PRIu64
		       " icrc-errors %" PRIu64 " gso-sends %" PRIu64 "\n",
		       rxe_dev_counter(dev, RXE_CNT_SENT_PKTS),
		       rxe_dev_counter(dev, RXE_CNT_RCVD_PKTS),
		       rxe_dev_counter(dev, RXE_CNT_RETRANSMITS),
		       rxe_dev_counter(dev, RXE_CNT_TIMEOUTS),
		       rxe_dev_counter(dev, RXE_CNT_ICRC_ERR),
		       rxe_dev_counter(dev, RXE_CNT_GSO_SENDS));
		usleep(200000);
		ops->destroy_qp(qp);
		ops->dereg_mr(mr);
		ops->destroy_cq(cq);
		ops->dealloc_pd(pd);
		ops->device_destroy(dev);
		free(buf);
		return err ? 1 : 0;
	}
	me.lid = 0;
	me.qpn = qp->qp_num;
	me.psn = (uint32_t)lrand48() & 0xffffff;
	ops->query_gid(dev, 1, (uint32_t)gid_index, &ge);
	me.gid = ge.gid;

	/* The out-of-band exchange, as ibv_rc_pingpong does it. */
	if (server) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons((uint16_t)port) };

		inet_pton(AF_INET, server, &sin.sin_addr);
		sock = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(sock, (struct sockaddr *)&sin, sizeof(sin)) < 0)
			die("connect", errno);
		dest_to_msg(&me, msg);
		if (write(sock, msg, MSG_LEN) != MSG_LEN ||
		    read_full(sock, msg, MSG_LEN) || msg_to_dest(msg, &rem))
			die("exchange", EPROTO);
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons((uint16_t)port) };
		int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(lfd, 1) < 0)
			die("listen", errno);
		printf("rxe-peer: listening on %u, QPN 0x%06x\n", port, me.qpn);
		fflush(stdout);
		sock = accept(lfd, NULL, NULL);
		close(lfd);
		if (sock < 0 || read_full(sock, msg, MSG_LEN) ||
		    msg_to_dest(msg, &rem))
			die("exchange", EPROTO);
	}
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x\n", me.lid,
	       me.qpn, me.psn);
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x\n",
	       rem.lid, rem.qpn, rem.psn);

	/* pp_connect_ctx: RTR then RTS with rc_pingpong's values. */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = rem.qpn;
	a.rq_psn = rem.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dgid = rem.gid;
	a.ah_attr.sgid_index = (uint8_t)gid_index;
	a.ah_attr.hop_limit = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	if ((err = ops->modify_qp(
		     qp, &a,
		     RNICPI_QP_STATE | RNICPI_QP_AV | RNICPI_QP_PATH_MTU |
			     RNICPI_QP_DEST_QPN | RNICPI_QP_RQ_PSN |
			     RNICPI_QP_MAX_DEST_RD_ATOMIC |
			     RNICPI_QP_MIN_RNR_TIMER)))
		die("RTR", err);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 1;
	if ((err = ops->modify_qp(
		     qp, &a,
		     RNICPI_QP_STATE | RNICPI_QP_TIMEOUT | RNICPI_QP_RETRY_CNT |
			     RNICPI_QP_RNR_RETRY | RNICPI_QP_SQ_PSN |
			     RNICPI_QP_MAX_QP_RD_ATOMIC)))
		die("RTS", err);
	if (server) {
		if (write(sock, "done", 5) != 5)
			die("done", EPROTO);
	} else {
		dest_to_msg(&me, msg);
		if (write(sock, msg, MSG_LEN) != MSG_LEN ||
		    read_full(sock, msg, 5) || strcmp(msg, "done"))
			die("exchange", EPROTO);
	}

	/* The ping-pong: the client sends first; each side sends again once
	 * its last send completed and a message came in. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pending = RECV_WRID;
	if (server) {
		struct rnicpi_sge sge = { (uint64_t)(uintptr_t)buf, size,
					  mr->lkey };
		struct rnicpi_send_wr wr = { .wr_id = SEND_WRID,
					     .sg_list = &sge,
					     .num_sge = 1,
					     .opcode = RNICPI_WR_SEND,
					     .send_flags =
						     RNICPI_SEND_SIGNALED };
		const struct rnicpi_send_wr *bad;

		if ((err = ops->post_send(qp, &wr, &bad)))
			die("post_send", err);
		pending |= SEND_WRID;
	}
	while (rcnt < iters || scnt < iters) {
		struct rnicpi_wc wc[2];
		int n = ops->poll_cq(cq, 2, wc), k;

		if (n == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 120)
				die("timed out waiting for completions",
				    ETIMEDOUT);
			usleep(20);
			continue;
		}
		for (k = 0; k < n; k++) {
			if (wc[k].status != RNICPI_WC_SUCCESS) {
				fprintf(stderr,
					"rxe-peer: completion wr_id %" PRIu64
					" status %d after %u sends, %u receives\n",
					wc[k].wr_id, wc[k].status, scnt, rcnt);
				return 1;
			}
			if (wc[k].wr_id == SEND_WRID) {
				scnt++;
			} else {
				if (wc[k].byte_len != size) {
					fprintf(stderr, "rxe-peer: received %u "
						"bytes, expected %u\n",
						wc[k].byte_len, size);
					return 1;
				}
				rcnt++;
				routs--;
			}
			pending &= ~(unsigned int)wc[k].wr_id;
			if (routs <= 1) {
				for (; routs < RX_DEPTH; routs++) {
					struct rnicpi_sge sge = {
						(uint64_t)(uintptr_t)buf, size,
						mr->lkey
					};
					struct rnicpi_recv_wr rw = { NULL,
								     RECV_WRID,
								     &sge, 1 };
					const struct rnicpi_recv_wr *bad;

					if ((err = ops->post_recv(qp, &rw,
								  &bad)))
						die("post_recv", err);
				}
			}
			if (scnt < iters && !pending) {
				struct rnicpi_sge sge = {
					(uint64_t)(uintptr_t)buf, size, mr->lkey
				};
				struct rnicpi_send_wr wr = {
					.wr_id = SEND_WRID, .sg_list = &sge,
					.num_sge = 1, .opcode = RNICPI_WR_SEND,
					.send_flags = RNICPI_SEND_SIGNALED };
				const struct rnicpi_send_wr *bad;

				if ((err = ops->post_send(qp, &wr, &bad)))
					die("post_send", err);
				pending = RECV_WRID | SEND_WRID;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%u bytes in %.2f seconds = %.2f Mbit/sec\n",
	       2u * iters * size, secs, 2.0 * iters * size * 8 / secs / 1e6);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", iters, secs,
	       secs * 1e6 / iters);
	printf("counters: sent %" PRIu64 " rcvd %" PRIu64 " retransmitted %"
	       PRIu64 " timeouts %" PRIu64 " seq-naks %" PRIu64 "/%" PRIu64
	       " icrc-errors %" PRIu64 " ipv4-id-solved %" PRIu64
	       " gso-sends %" PRIu64 " gro-batches %" PRIu64 "\n",
	       rxe_dev_counter(dev, RXE_CNT_SENT_PKTS),
	       rxe_dev_counter(dev, RXE_CNT_RCVD_PKTS),
	       rxe_dev_counter(dev, RXE_CNT_RETRANSMITS),
	       rxe_dev_counter(dev, RXE_CNT_TIMEOUTS),
	       rxe_dev_counter(dev, RXE_CNT_SEQ_NAKS_SENT),
	       rxe_dev_counter(dev, RXE_CNT_SEQ_NAKS_RCVD),
	       rxe_dev_counter(dev, RXE_CNT_ICRC_ERR),
	       rxe_dev_counter(dev, RXE_CNT_ICRC_ID_SOLVED),
	       rxe_dev_counter(dev, RXE_CNT_GSO_SENDS),
	       rxe_dev_counter(dev, RXE_CNT_GRO_BATCHES));
	close(sock);
	/* Let the last ACK go out before the QP goes away. */
	usleep(200000);
	ops->destroy_qp(qp);
	ops->dereg_mr(mr);
	ops->destroy_cq(cq);
	ops->dealloc_pd(pd);
	ops->device_destroy(dev);
	free(buf);
	return 0;
}
