/* SPDX-License-Identifier: MIT */
/*
 * siw-rping: rping's application protocol (rdma-core
 * librdmacm/examples/rping.c) spoken through the soft-iWARP provider's
 * ops table, as the core will drive it, for interop runs against the
 * Linux kernel's siw.
 *
 * Client, each round: advertise the start buffer {be64 addr, be32 rkey,
 * be32 size} with a Send; the server RDMA-Reads it and Sends 16 bytes
 * ("go ahead"); advertise the sink buffer; the server RDMA-Writes the
 * data there and Sends again; compare. Server: the mirror image, and it
 * checks every byte it read against rping's pattern.
 *
 *   siw-rping -s|-c -a ADDR -p PORT [-C COUNT] [-S SIZE] [--crc]
 *             [--rev1] [--p2p=write|read] [--rts-delay=MS] [-v]
 * Exit status 0 only when every round's data matched.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "rnicpi/rnicpi.h"

/* The provider, linked in from vp/siw (its module entry point is not). */
extern const struct rnicpi_provider siw_provider;

#define WAIT_MS 30000
#define MSG_FMT "rdma-ping-%d: "


struct advert {
	uint64_t buf_be;
	uint32_t rkey_be;
	uint32_t size_be;
} __attribute__((packed));
_Static_assert(sizeof(struct advert) == 16, "rping advert is 16 bytes");

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rnicpi_conn_event ev[16];
	int n;
} events = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

static int verbose;

static void on_async(struct rnicpi_device *dev,
		     const struct rnicpi_async_event *ev)
{
	fprintf(stderr, "siw-rping: async event %d (Terminate layer %u etype "
		"%u ecode 0x%02x %s)\n", ev->type, ev->term_layer,
		ev->term_etype, ev->term_ecode,
		ev->term_remote ? "received" : "sent");
}

static void on_conn(struct rnicpi_device *dev,
		    const struct rnicpi_conn_event *ev)
{
	pthread_mutex_lock(&events.lock);
	if (events.n < 16) {
		events.ev[events.n] = *ev;
		events.ev[events.n].private_data = NULL;
		events.n++;
	}
	pthread_cond_broadcast(&events.cond);
	pthread_mutex_unlock(&events.lock);
}

static const struct rnicpi_core_ops core = {
	.size = sizeof(core),
	.async_event = on_async,
	.conn_event = on_conn,
};

/* Wait for a connection event of @type; any other type ends the wait
 * with failure (the connection went another way). */
static int wait_conn(enum rnicpi_conn_event_type type,
		     struct rnicpi_conn_event *out)
{
	struct timespec ts;
	int rc = -ETIMEDOUT;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&events.lock);
	for (;;) {
		if (events.n) {
			struct rnicpi_conn_event e = events.ev[0];

			memmove(events.ev, events.ev + 1,
				(size_t)(events.n - 1) * sizeof(e));
			events.n--;
			if (out)
				*out = e;
			rc = e.type == type ? 0 : -EPROTO;
			if (rc)
				fprintf(stderr, "siw-rping: connection event %d "
					"(status %d), wanted %d\n", e.type,
					e.status, type);
			break;
		}
		if (pthread_cond_timedwait(&events.cond, &events.lock, &ts))
			break;
	}
	pthread_mutex_unlock(&events.lock);
	return rc;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct ctx {
	struct rnicpi_device *dev;
	const struct rnicpi_device_ops *ops;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *cq;
	struct rnicpi_qp *qp;
	struct advert recv_buf, send_buf;
	uint8_t *start_buf, *rdma_buf;
	struct rnicpi_mr *recv_mr, *send_mr, *start_mr, *rdma_mr;
	uint32_t size;
};

/* Next completion, whatever it is; fails on error status / time-out. */
static int next_wc(struct ctx *c, struct rnicpi_wc *wc)
{
	uint64_t end = now_ms() + WAIT_MS;

	for (;;) {
		int n = c->ops->poll_cq(c->cq, 1, wc);

		if (n < 0)
			return n;
		if (n == 1) {
			if (wc->status != RNICPI_WC_SUCCESS) {
				fprintf(stderr, "siw-rping: WR %llu completed "
					"with status %d (vendor 0x%x)\n",
					(unsigned long long)wc->wr_id,
					wc->status, wc->vendor_err);
				return -EIO;
			}
			return 0;
		}
		if (now_ms() > end) {
			fprintf(stderr, "siw-rping: no completion in %d ms\n",
				WAIT_MS);
			return -ETIMEDOUT;
		}
		usleep(100);
	}
}

enum { WR_RECV = 1, WR_SEND, WR_READ, WR_WRITE };

/* Wait until WR @id completed; other completions are skipped (unsignaled
 * sends never show). */
static int wait_wr(struct ctx *c, uint64_t id, uint32_t *len)
{
	struct rnicpi_wc wc;
	int rc;

	do {
		rc = next_wc(c, &wc);
		if (rc)
			return rc;
	} while (wc.wr_id != id);
	if (len)
		*len = wc.byte_len;
	return 0;
}

static int post_recv(struct ctx *c)
{
	struct rnicpi_sge sge = {
		.addr = (uint64_t)(uintptr_t)&c->recv_buf,
		.length = sizeof(c->recv_buf),
		.lkey = c->recv_mr->lkey,
	};
	struct rnicpi_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge,
				     .num_sge = 1 };

	return c->ops->post_recv(c->qp, &wr, NULL);
}

static int post(struct ctx *c, enum rnicpi_wr_opcode op, uint64_t id,
		void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		uint32_t rkey)
{
	struct rnicpi_sge sge = { .addr = (uint64_t)(uintptr_t)addr,
				  .length = len, .lkey = lkey };
	struct rnicpi_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = RNICPI_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return c->ops->post_send(c->qp, &wr, NULL);
}

static int send_advert(struct ctx *c, uint8_t *buf, struct rnicpi_mr *mr)
{
	c->send_buf.buf_be = htobe64((uint64_t)(uintptr_t)buf);
	c->send_buf.rkey_be = htobe32(mr->rkey);
	c->send_buf.size_be = htobe32(c->size);
	if (post(c, RNICPI_WR_SEND, WR_SEND, &c->send_buf,
		 sizeof(c->send_buf), c->send_mr->lkey, 0, 0))
		return -EIO;
	return wait_wr(c, WR_SEND, NULL);
}

/* rping's client buffer for round @ping: text, then letters A..z. */
static void fill_pattern(uint8_t *buf, uint32_t size, int ping)
{
	int cc = snprintf((char *)buf, size, MSG_FMT, ping);
	int start = 65 + ping % 58, ch = start;
	uint32_t i;

	for (i = (uint32_t)cc; i < size; i++) {
		buf[i] = (uint8_t)ch;
		if (++ch > 122)
			ch = 65;
	}
	buf[size - 1] = 0;
}

static int setup(struct ctx *c, const struct rnicpi_option *opts,
		 const char *local)
{
	const struct rnicpi_provider *p = &siw_provider;
	struct rnicpi_netdev nd = { 0 };
	struct sockaddr_storage addr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&addr;
	struct rnicpi_cq_init_attr ca = { .cqe = 64 };
	struct rnicpi_qp_init_attr qa = { 0 };
	struct ifaddrs *ifa, *i;
	unsigned int rw = RNICPI_ACCESS_LOCAL_WRITE |
			  RNICPI_ACCESS_REMOTE_WRITE |
			  RNICPI_ACCESS_REMOTE_READ;
	int rc;

	sin->sin_family = AF_INET;
	inet_pton(AF_INET, local, &sin->sin_addr);
	strcpy(nd.ifname, "lo");
	nd.mtu = 1500;
	if (getifaddrs(&ifa) == 0) {
		for (i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
				    sin->sin_addr.s_addr) {
				snprintf(nd.ifname, sizeof(nd.ifname), "%s",
					 i->ifa_name);
				break;
			}
		freeifaddrs(ifa);
	}
	nd.ifindex = (int)if_nametoindex(nd.ifname);
	nd.flags = RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING;
	nd.addrs = &addr;
	nd.n_addrs = 1;
	rc = p->device_create(&nd, "siw_rping", opts, &core, &c->dev);
	if (rc)
		return rc;
	c->ops = c->dev->ops;
	if ((rc = c->ops->alloc_pd(c->dev, &c->pd)) ||
	    (rc = c->ops->create_cq(c->dev, &ca, &c->cq)))
		return rc;
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = qa.recv_cq = c->cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if ((rc = c->ops->create_qp(c->pd, &qa, &c->qp)))
		return rc;
	c->start_buf = calloc(1, c->size);
	c->rdma_buf = calloc(1, c->size);
	if (!c->start_buf || !c->rdma_buf)
		return -ENOMEM;
	if ((rc = c->ops->reg_mr(c->pd, &c->recv_buf, sizeof(c->recv_buf),
				 (uint64_t)(uintptr_t)&c->recv_buf,
				 RNICPI_ACCESS_LOCAL_WRITE, &c->recv_mr)) ||
	    (rc = c->ops->reg_mr(c->pd, &c->send_buf, sizeof(c->send_buf),
				 (uint64_t)(uintptr_t)&c->send_buf, 0,
				 &c->send_mr)) ||
	    (rc = c->ops->reg_mr(c->pd, c->start_buf, c->size,
				 (uint64_t)(uintptr_t)c->start_buf, rw,
				 &c->start_mr)) ||
	    (rc = c->ops->reg_mr(c->pd, c->rdma_buf, c->size,
				 (uint64_t)(uintptr_t)c->rdma_buf, rw,
				 &c->rdma_mr)))
		return rc;
	return post_recv(c);
}

static void teardown(struct ctx *c)
{
	if (!c->dev)
		return;
	if (c->qp)
		c->ops->destroy_qp(c->qp);
	if (c->recv_mr)
		c->ops->dereg_mr(c->recv_mr);
	if (c->send_mr)
		c->ops->dereg_mr(c->send_mr);
	if (c->start_mr)
		c->ops->dereg_mr(c->start_mr);
	if (c->rdma_mr)
		c->ops->dereg_mr(c->rdma_mr);
	if (c->cq)
		c->ops->destroy_cq(c->cq);
	if (c->pd)
		c->ops->dealloc_pd(c->pd);
	c->ops->device_destroy(c->dev);
	free(c->start_buf);
	free(c->rdma_buf);
}

static int disconnect(struct ctx *c)
{
	struct rnicpi_qp_attr qa = { .qp_state = RNICPI_QPS_CLOSING };
	struct rnicpi_conn_event ev;

	if (c->ops->modify_qp(c->qp, &qa, RNICPI_QP_STATE))
		return -EIO;
	if (wait_conn(RNICPI_CONN_DISCONNECTED, &ev))
		return -EIO;
	if (verbose)
		printf("disconnected, status %d\n", ev.status);
	return 0;
}

static int run_client(struct ctx *c, const char *addr, int port, int count,
		      unsigned int flags)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rnicpi_conn_param cp = { .ird = 1, .ord = 1, .flags = flags };
	struct rnicpi_conn_event ev;
	uint32_t len;
	int fd, ping;

	sin.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, addr, &sin.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		perror("siw-rping: connect");
		return 1;
	}
	if (c->ops->iw_connect(c->qp, fd, &cp)) {
		fprintf(stderr, "siw-rping: iw_connect failed\n");
		return 1;
	}
	if (wait_conn(RNICPI_CONN_ESTABLISHED, &ev))
		return 1;
	if (verbose)
		printf("connected: flags 0x%x IRD %u ORD %u\n", ev.flags, ev.ird,
		       ev.ord);
	for (ping = 0; ping < count; ping++) {
		fill_pattern(c->start_buf, c->size, ping);
		memset(c->rdma_buf, 0, c->size);
		if (send_advert(c, c->start_buf, c->start_mr) ||
		    wait_wr(c, WR_RECV, &len) || len != 16 || post_recv(c) ||
		    send_advert(c, c->rdma_buf, c->rdma_mr) ||
		    wait_wr(c, WR_RECV, &len) || len != 16 || post_recv(c)) {
			fprintf(stderr, "siw-rping: round %d failed\n", ping);
			return 1;
		}
		if (memcmp(c->start_buf, c->rdma_buf, c->size)) {
			fprintf(stderr, "siw-rping: round %d: data mismatch\n",
				ping);
			return 1;
		}
		if (verbose)
			printf("ping data: %.*s\n", 40, c->rdma_buf);
	}
	printf("siw-rping client: %d rounds of %u bytes verified\n", count,
	       c->size);
	return disconnect(c) ? 1 : 0;
}

static int run_server(struct ctx *c, const char *addr, int port, int count)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rnicpi_conn_param cp = { .ird = 1, .ord = 1 };
	struct rnicpi_conn_event ev;
	struct rnicpi_conn *conn;
	uint8_t *expect = malloc(c->size);
	int l, fd, one = 1, ping, rc = 1;

	sin.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, addr, &sin.sin_addr);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!expect || l < 0 ||
	    bind(l, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(l, 1) < 0) {
		perror("siw-rping: listen");
		goto out;
	}
	printf("siw-rping server: listening on %s:%d\n", addr, port);
	fflush(stdout);
	fd = accept(l, NULL, NULL);
	close(l);
	if (fd < 0 || c->ops->iw_take_request(c->dev, fd, NULL, &conn)) {
		perror("siw-rping: accept");
		goto out;
	}
	if (wait_conn(RNICPI_CONN_REQUEST, &ev))
		goto out;
	if (verbose)
		printf("request: flags 0x%x IRD %u ORD %u\n", ev.flags, ev.ird,
		       ev.ord);
	if (c->ops->conn_accept(conn, c->qp, &cp) ||
	    wait_conn(RNICPI_CONN_ESTABLISHED, NULL))
		goto out;
	for (ping = 0; ping < count; ping++) {
		uint32_t len, rlen;
		uint64_t raddr;
		uint32_t rkey;

		if (wait_wr(c, WR_RECV, &len) || len != 16) {
			fprintf(stderr, "siw-rping: round %d: no advert\n", ping);
			goto out;
		}
		raddr = be64toh(c->recv_buf.buf_be);
		rkey = be32toh(c->recv_buf.rkey_be);
		rlen = be32toh(c->recv_buf.size_be);
		if (rlen != c->size || post_recv(c)) {
			fprintf(stderr, "siw-rping: advert of %u bytes, expected "
				"%u\n", rlen, c->size);
			goto out;
		}
		memset(c->rdma_buf, 0, c->size);
		if (post(c, RNICPI_WR_RDMA_READ, WR_READ, c->rdma_buf, rlen,
			 c->rdma_mr->lkey, raddr, rkey) ||
		    wait_wr(c, WR_READ, NULL))
			goto out;
		fill_pattern(expect, c->size, ping);
		if (memcmp(expect, c->rdma_buf, c->size)) {
			fprintf(stderr, "siw-rping: round %d: read data differs "
				"from rping's pattern\n", ping);
			goto out;
		}
		if (verbose)
			printf("server ping data: %.*s\n", 40, c->rdma_buf);
		memset(&c->send_buf, 0, sizeof(c->send_buf));
		if (post(c, RNICPI_WR_SEND, WR_SEND, &c->send_buf, 16,
			 c->send_mr->lkey, 0, 0) || wait_wr(c, WR_SEND, NULL) ||
		    wait_wr(c, WR_RECV, &len) || len != 16)
			goto out;
		raddr = be64toh(c->recv_buf.buf_be);
		rkey = be32toh(c->recv_buf.rkey_be);
		if (post_recv(c) ||
		    post(c, RNICPI_WR_RDMA_WRITE, WR_WRITE, c->rdma_buf,
			 (uint32_t)strlen((char *)c->rdma_buf) + 1,
			 c->rdma_mr->lkey, raddr, rkey) ||
		    wait_wr(c, WR_WRITE, NULL) ||
		    post(c, RNICPI_WR_SEND, WR_SEND, &c->send_buf, 16,
			 c->send_mr->lkey, 0, 0) || wait_wr(c, WR_SEND, NULL))
			goto out;
	}
	printf("siw-rping server: %d rounds of %u bytes verified\n", count,
	       c->size);
	/* rping -c disconnects after its last round. */
	if (wait_conn(RNICPI_CONN_DISCONNECTED, NULL))
		goto out;
	rc = 0;
out:
	free(expect);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "crc", no_argument, NULL, 'r' },
		{ "rev1", no_argument, NULL, '1' },
		{ "p2p", required_argument, NULL, 'P' },
		{ "rts-delay", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	struct rnicpi_option opts[8] = { { NULL, NULL } };
	struct ctx c = { .size = 64 };
	const char *addr = NULL, *local;
	int server = -1, port = 7174, count = 10, o, n = 0, rc;
	unsigned int flags = 0;

	while ((o = getopt_long(argc, argv, "sca:p:C:S:v", longopts, NULL)) !=
	       -1) {
		switch (o) {
		case 's':
			server = 1;
			break;
		case 'c':
			server = 0;
			break;
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'C':
			count = atoi(optarg);
			break;
		case 'S':
			c.size = (uint32_t)atoi(optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'r':
			opts[n++] = (struct rnicpi_option){ "mpa_crc", "on" };
			break;
		case '1':
			opts[n++] = (struct rnicpi_option){ "mpa_rev", "1" };
			flags |= RNICPI_CONN_MPA_REV1;
			break;
		case 'P':
			opts[n++] = (struct rnicpi_option){ "p2p", optarg };
			break;
		case 'D':
			opts[n++] = (struct rnicpi_option){ "rts_delay_ms",
							    optarg };
			break;
		default:
			return 2;
		}
	}
	if (server < 0 || !addr || count < 1 || c.size < 24 ||
	    c.size > 65535) {
		fprintf(stderr, "usage: siw-rping -s|-c -a ADDR [-p PORT] "
			"[-C COUNT] [-S SIZE 24..65535] [--crc] [--rev1] "
			"[--p2p=write|read] [--rts-delay=MS] [-v]\n");
		return 2;
	}
	/* The device address: ours for a server, the route's for a client
	 * (only names the device; the kernel picks the source). */
	local = server ? addr : "0.0.0.0";
	rc = setup(&c, opts, local);
	if (rc) {
		fprintf(stderr, "siw-rping: setup: %s\n", g_strerror(-rc));
		teardown(&c);
		return 1;
	}
	rc = server ? run_server(&c, addr, port, count)
		    : run_client(&c, addr, port, count, flags);
	teardown(&c);
	if (rc)
		fprintf(stderr, "siw-rping: FAILED\n");
	return rc;
}
