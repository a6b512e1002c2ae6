/* SPDX-License-Identifier: MIT */
/* The soft-iWARP harness of the fuzz targets; see fuzz_siw.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_siw.h"
#include "vp/siw/siw.h"

/* What lives as long as the process on each device: the memory and its
 * registrations (so that STags and offsets never change). */
struct fz_siw_dev {
	struct rnicpi_device *dev;
	struct rnicpi_pd *pd, *pd2;
	struct rnicpi_mr *mr[4];	/* RW, RO, PD2, LOCAL */
	/* RW, RO and PD2 memory, the local region; each with FZ_GUARD
	 * bytes around */
	uint8_t *tgt, *ro, *pd2m, *loc;
};

static struct fz_siw_dev devs[FZ_SIW_NPROFILES];
static struct fz_siw *cur;		/* the world of the running input */

#define GUARD_BYTE 0xa5

/* ------------------------------------------------------------------ */
/* Upcalls                                                             */
/* ------------------------------------------------------------------ */

/* Every byte an event hands up must be readable. */
static void touch(const void *p, uint32_t len)
{
	const volatile uint8_t *b = p;
	uint8_t sum = 0;

	for (uint32_t i = 0; i < len; i++)
		sum ^= b[i];
	(void)sum;
}

static void on_async(struct rnicpi_device *dev,
		     const struct rnicpi_async_event *ev)
{
	(void)dev;
	(void)ev;
}

static void on_conn(struct rnicpi_device *dev,
		    const struct rnicpi_conn_event *ev)
{
	(void)dev;
	FZ_CHECK(ev->private_data_len <= MPA_MAX_PRIVATE_DATA);
	FZ_CHECK(!ev->private_data_len || ev->private_data);
	touch(ev->private_data, ev->private_data_len);
	if (!cur)
		return;
	switch (ev->type) {
	case RNICPI_CONN_REQUEST:
		FZ_CHECK(ev->conn && ev->conn == cur->conn);
		cur->requested = true;
		break;
	case RNICPI_CONN_ESTABLISHED:
		cur->established = true;
		break;
	case RNICPI_CONN_ERROR:
		/* rnicpi.h: a conn is gone after its ERROR. */
		if (ev->conn && ev->conn == cur->conn)
			cur->conn = NULL;
		cur->errors++;
		break;
	case RNICPI_CONN_REJECTED:
		cur->errors++;
		break;
	default:
		break;
	}
}

static const struct rnicpi_core_ops core_ops = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = on_async,
	.conn_event = on_conn,
};

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

#define COMMON_OPTS                                                         \
	{ "poll_rx", "off" }, { "poll_tx", "off" },                        \
	{ "busy_poll_us", "0" }, { "rts_delay_ms", "0" }

static const struct rnicpi_option opts[FZ_SIW_NPROFILES][8] = {
	[FZ_SIW_PLAIN] = { COMMON_OPTS, { NULL, NULL } },
	[FZ_SIW_CRC] = { COMMON_OPTS, { "mpa_crc", "on" }, { NULL, NULL } },
	[FZ_SIW_STRICT] = { COMMON_OPTS, { "mpa_crc_strict", "on" },
			    { NULL, NULL } },
	[FZ_SIW_REQUIRED] = { COMMON_OPTS, { "mpa_crc", "required" },
			      { NULL, NULL } },
	[FZ_SIW_REV1] = { COMMON_OPTS, { "mpa_rev", "1" }, { NULL, NULL } },
	[FZ_SIW_P2P_WRITE] = { COMMON_OPTS, { "p2p", "write" },
			       { "ird", "4" }, { "ord", "4" },
			       { NULL, NULL } },
	[FZ_SIW_P2P_READ] = { COMMON_OPTS, { "p2p", "read" },
			      { NULL, NULL } },
	[FZ_SIW_SMALL] = { COMMON_OPTS, { "large_fpdu", "off" },
			   { "max_fpdu", "256" }, { NULL, NULL } },
};

/* The thread is stopped as siw_device_destroy() stops it; from then on
 * the target's thread runs siw_dev_progress() itself. */
static void stop_progress_thread(struct siw_device *sd)
{
	siw_dev_stop_thread(sd);
}

static uint8_t *guarded(size_t len)
{
	uint8_t *p = malloc(len + 2 * FZ_GUARD);

	FZ_CHECK(p);
	memset(p, GUARD_BYTE, len + 2 * FZ_GUARD);
	return p;
}

/* What the peer may read but never change. */
static uint8_t fill_byte(size_t i)
{
	return (uint8_t)(i * 29 + 7);
}

static void fill(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = fill_byte(i);
}

static bool filled(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != fill_byte(i))
			return false;
	return true;
}

/* The parts of the local region a peer's bytes may land in: the
 * receives and the Read's sink of fz_siw_post(). */
static void check_local(const uint8_t *p)
{
	static const uint32_t open[][2] = {
		{ 0, 320 }, { 512, 1012 }, { 1024, 1524 }, { 2048, 6144 },
		{ FZ_READ_SINK_OFF, FZ_READ_SINK_OFF + FZ_READ_LEN },
	};
	uint32_t i = 0;

	for (size_t k = 0; k <= sizeof(open) / sizeof(open[0]); k++) {
		uint32_t end = k < sizeof(open) / sizeof(open[0])
				       ? open[k][0] : FZ_LOCAL_LEN;

		for (; i < end; i++)
			FZ_CHECK(p[i] == 0);
		if (k < sizeof(open) / sizeof(open[0]))
			i = open[k][1];
	}
}

static void dev_open(enum fz_siw_profile profile)
{
	struct fz_siw_dev *d = &devs[profile];
	struct sockaddr_storage addr;
	struct sockaddr_in *sin = (struct sockaddr_in *)&addr;
	struct rnicpi_netdev nd = { 0 };
	const struct rnicpi_device_ops *ops;
	char name[16];

	memset(&addr, 0, sizeof(addr));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	nd.ifindex = (int)if_nametoindex("lo");
	strcpy(nd.ifname, "lo");
	nd.mtu = 65536;
	nd.flags = RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING |
		   RNICPI_NETDEV_LOOPBACK;
	nd.addrs = &addr;
	nd.n_addrs = 1;
	snprintf(name, sizeof(name), "siw_fz%d", (int)profile);
	FZ_CHECK(siw_provider.device_create(&nd, name, opts[profile],
					    &core_ops, &d->dev) == 0);
	d->dev->provider = &siw_provider;
	stop_progress_thread(to_siw_dev(d->dev));
	/* Before the first registration: the STags of fuzz_siw.h. */
	to_siw_dev(d->dev)->mr_keys.secret = FZ_KEY_SECRET;
	ops = d->dev->ops;
	FZ_CHECK(ops->alloc_pd(d->dev, &d->pd) == 0);
	FZ_CHECK(ops->alloc_pd(d->dev, &d->pd2) == 0);
	d->tgt = guarded(FZ_MEM_LEN);
	d->ro = guarded(FZ_MEM_LEN);
	d->pd2m = guarded(FZ_MEM_LEN);
	d->loc = guarded(FZ_LOCAL_LEN);
	/* The registration order makes the STags of fuzz_siw.h. */
	FZ_CHECK(ops->reg_mr(d->pd, d->tgt + FZ_GUARD, FZ_MEM_LEN, FZ_TO_RW,
			     RNICPI_ACCESS_LOCAL_WRITE |
				     RNICPI_ACCESS_REMOTE_WRITE |
				     RNICPI_ACCESS_REMOTE_READ,
			     &d->mr[0]) == 0);
	FZ_CHECK(ops->reg_mr(d->pd, d->ro + FZ_GUARD, FZ_MEM_LEN, FZ_TO_RO,
			     RNICPI_ACCESS_REMOTE_READ, &d->mr[1]) == 0);
	FZ_CHECK(ops->reg_mr(d->pd2, d->pd2m + FZ_GUARD, FZ_MEM_LEN,
			     FZ_TO_PD2,
			     RNICPI_ACCESS_LOCAL_WRITE |
				     RNICPI_ACCESS_REMOTE_WRITE,
			     &d->mr[2]) == 0);
	FZ_CHECK(ops->reg_mr(d->pd, d->loc + FZ_GUARD, FZ_LOCAL_LEN,
			     FZ_TO_LOCAL, RNICPI_ACCESS_LOCAL_WRITE,
			     &d->mr[3]) == 0);
	FZ_CHECK(d->mr[0]->rkey == FZ_STAG_RW);
	FZ_CHECK(d->mr[1]->rkey == FZ_STAG_RO);
	FZ_CHECK(d->mr[2]->rkey == FZ_STAG_PD2);
	FZ_CHECK(d->mr[3]->lkey == FZ_STAG_LOCAL);
}

void fz_siw_init(void)
{
	fz_log_init();
	for (int p = 0; p < FZ_SIW_NPROFILES; p++)
		dev_open((enum fz_siw_profile)p);
}

/* ------------------------------------------------------------------ */
/* One input                                                           */
/* ------------------------------------------------------------------ */

void fz_siw_open(struct fz_siw *w, enum fz_siw_profile profile,
		 unsigned int flags)
{
	struct fz_siw_dev *d = &devs[profile % FZ_SIW_NPROFILES];
	struct rnicpi_cq_init_attr ca = { .cqe = 256 };
	struct rnicpi_qp_init_attr qa = { 0 };

	memset(w, 0, sizeof(*w));
	w->peer = -1;
	w->dev = d->dev;
	w->ops = d->dev->ops;
	w->pd = d->pd;
	memset(d->tgt + FZ_GUARD, 0, FZ_MEM_LEN);
	fill(d->ro + FZ_GUARD, FZ_MEM_LEN);
	fill(d->pd2m + FZ_GUARD, FZ_MEM_LEN);
	memset(d->loc + FZ_GUARD, 0, FZ_LOCAL_LEN);
	for (int i = 0; i < 4; i++)	/* after a Send with Invalidate */
		atomic_store(&to_siw_mr(d->mr[i])->valid, true);
	FZ_CHECK(w->ops->create_cq(w->dev, &ca, &w->scq) == 0);
	FZ_CHECK(w->ops->create_cq(w->dev, &ca, &w->rcq) == 0);
	if (flags & FZ_SIW_SRQ) {
		struct rnicpi_srq_attr sa = { .max_wr = 16, .max_sge = 4 };

		FZ_CHECK(w->ops->create_srq(w->pd, &sa, &w->srq) == 0);
	}
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = w->scq;
	qa.recv_cq = w->rcq;
	qa.srq = w->srq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = w->srq ? 0 : 16;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	FZ_CHECK(w->ops->create_qp(w->pd, &qa, &w->qp) == 0);
	cur = w;
}

/* Read what the QP wrote; true when something came. */
static bool drain(struct fz_siw *w)
{
	uint8_t buf[16384];
	bool got = false;

	if (w->peer < 0)
		return false;
	for (;;) {
		ssize_t n = recv(w->peer, buf, sizeof(buf), MSG_DONTWAIT);

		if (n <= 0)
			return got;
		got = true;
	}
}

void fz_siw_progress(struct fz_siw *w)
{
	struct siw_device *sd = to_siw_dev(w->dev);
	int idle = 0, pass;

	/* A finite input must leave the stack with nothing to do: a QP
	 * that keeps its socket readable without reading it would spin the
	 * progress thread for ever. */
	for (pass = 0; pass < 100000 && idle < 2; pass++) {
		int n = siw_dev_progress(sd, 0, NULL);

		FZ_CHECK(n >= 0);
		if (drain(w) || n > 0)
			idle = 0;
		else
			idle++;
		if (w->auto_answer && w->conn && w->requested) {
			w->auto_answer = false;
			fz_siw_answer(w, w->accept, w->ird, w->ord, w->pd_len);
			idle = 0;
		}
	}
	FZ_CHECK(idle >= 2);
}

void fz_siw_write(struct fz_siw *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int stuck = 0;

	while (len && w->peer >= 0) {
		ssize_t n = send(w->peer, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			stuck = 0;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return;		/* the QP closed the stream */
		/* Full: the stack reads when it wants to; one that does not
		 * (a request nobody answered yet) gets no more. */
		fz_siw_progress(w);
		if (++stuck > 2)
			return;
	}
}

void fz_siw_write_cut(struct fz_siw *w, const uint8_t *buf, size_t len,
		      uint8_t seed)
{
	uint32_t x = seed ? seed * 2654435761u : 0;

	while (len) {
		size_t piece = len;

		if (x) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* Mostly small cuts, now and then a big one. */
			piece = (x & 7) ? 1 + (x >> 8) % 61
					: 1 + (x >> 8) % 4096;
			if (piece > len)
				piece = len;
		}
		fz_siw_write(w, buf, piece);
		fz_siw_progress(w);
		buf += piece;
		len -= piece;
	}
}

static void new_stream(struct fz_siw *w, int *ours)
{
	int sv[2];

	FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	w->peer = sv[1];
	*ours = sv[0];
}

void fz_siw_take_request(struct fz_siw *w)
{
	int fd;

	new_stream(w, &fd);
	FZ_CHECK(w->ops->iw_take_request(w->dev, fd, NULL, &w->conn) == 0);
}

void fz_siw_answer(struct fz_siw *w, bool accept, uint32_t ird,
		   uint32_t ord, uint32_t pd_len)
{
	static const uint8_t pdata[MPA_MAX_PRIVATE_DATA] = "hostrdma fuzz";
	struct rnicpi_conn_param cp = {
		.private_data = pdata,
		.private_data_len = pd_len,
		.ird = ird,
		.ord = ord,
	};
	struct rnicpi_conn *conn = w->conn;

	if (!conn || !w->requested)
		return;
	w->conn = NULL;
	if (accept)
		w->ops->conn_accept(conn, w->qp, &cp);
	else
		w->ops->conn_reject(conn, pdata, pd_len);
	fz_siw_progress(w);
}

void fz_siw_connect(struct fz_siw *w, unsigned int flags, uint32_t ird,
		    uint32_t ord)
{
	struct rnicpi_conn_param cp = {
		.private_data = "fuzz",
		.private_data_len = 4,
		.ird = ird,
		.ord = ord,
		.flags = flags,
	};
	int fd;

	new_stream(w, &fd);
	if (w->ops->iw_connect(w->qp, fd, &cp)) {
		close(fd);	/* refused: the socket stays ours */
		return;
	}
	fz_siw_progress(w);
}

static void post_recv(struct fz_siw *w, uint32_t off, uint32_t len,
		      uint32_t off2, uint32_t len2, uint64_t id)
{
	struct rnicpi_sge sge[2] = {
		{ .addr = FZ_TO_LOCAL + off, .length = len,
		  .lkey = FZ_STAG_LOCAL },
		{ .addr = FZ_TO_LOCAL + off2, .length = len2,
		  .lkey = FZ_STAG_LOCAL },
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = id, .sg_list = sge, .num_sge = len2 ? 2 : 1,
	};

	if (w->srq)
		w->ops->post_srq_recv(w->srq, &wr, NULL);
	else
		w->ops->post_recv(w->qp, &wr, NULL);
}

void fz_siw_post(struct fz_siw *w, bool sends)
{
	post_recv(w, 2048, 4096, 0, 0, 1);
	post_recv(w, 512, 500, 1024, 500, 2);
	post_recv(w, 64, 256, 0, 0, 3);
	post_recv(w, 0, 64, 0, 0, 4);
	if (sends) {
		struct rnicpi_sge rs = {
			.addr = FZ_TO_LOCAL + FZ_READ_SINK_OFF,
			.length = FZ_READ_LEN,
			.lkey = FZ_STAG_LOCAL,
		};
		struct rnicpi_sge ss = {
			.addr = FZ_TO_LOCAL + FZ_SEND_SRC_OFF,
			.length = FZ_SEND_LEN,
			.lkey = FZ_STAG_LOCAL,
		};
		struct rnicpi_send_wr send = {
			.wr_id = 11, .opcode = RNICPI_WR_SEND,
			.send_flags = RNICPI_SEND_SIGNALED,
			.sg_list = &ss, .num_sge = 1,
		};
		struct rnicpi_send_wr read = {
			.wr_id = 10, .opcode = RNICPI_WR_RDMA_READ,
			.send_flags = RNICPI_SEND_SIGNALED,
			.sg_list = &rs, .num_sge = 1, .next = &send,
		};

		read.wr.rdma.remote_addr = FZ_READ_RTO;
		read.wr.rdma.rkey = FZ_READ_RSTAG;
		w->ops->post_send(w->qp, &read, NULL);
	}
	fz_siw_progress(w);
}

/* The bytes each WR of fz_siw_post() has room for. */
static uint32_t wr_room(uint64_t wr_id)
{
	switch (wr_id) {
	case 1: return 4096;
	case 2: return 1000;
	case 3: return 256;
	case 4: return 64;
	case 10: return FZ_READ_LEN;
	case 11: return FZ_SEND_LEN;
	default: return 0;
	}
}

/* Every completion names a WR we posted, and one that succeeded says it
 * moved no more bytes than that WR had room for: a consumer believes
 * byte_len. */
static void drain_cq(struct fz_siw *w, struct rnicpi_cq *cq)
{
	struct rnicpi_wc wc[16];
	int n;

	while ((n = w->ops->poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			FZ_CHECK(wr_room(wc[i].wr_id));
			if (wc[i].status == RNICPI_WC_SUCCESS)
				FZ_CHECK(wc[i].byte_len <=
					 wr_room(wc[i].wr_id));
		}
	}
}

static void check_guards(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < FZ_GUARD; i++) {
		FZ_CHECK(p[i] == GUARD_BYTE);
		FZ_CHECK(p[FZ_GUARD + len + i] == GUARD_BYTE);
	}
}

void fz_siw_close(struct fz_siw *w)
{
	struct fz_siw_dev *d = NULL;

	for (int i = 0; i < FZ_SIW_NPROFILES; i++)
		if (devs[i].dev == w->dev)
			d = &devs[i];
	FZ_CHECK(d);
	if (w->peer >= 0) {
		shutdown(w->peer, SHUT_WR);
		fz_siw_progress(w);
	}
	if (w->conn) {
		struct rnicpi_conn *conn = w->conn;

		/* Not answered (or the REQUEST never came): refused, which
		 * consumes it. */
		w->conn = NULL;
		w->ops->conn_reject(conn, NULL, 0);
		fz_siw_progress(w);
	}
	if (w->peer >= 0) {
		close(w->peer);
		w->peer = -1;
		fz_siw_progress(w);
	}
	FZ_CHECK(w->ops->destroy_qp(w->qp) == 0);
	fz_siw_progress(w);
	drain_cq(w, w->scq);
	drain_cq(w, w->rcq);
	if (w->srq)
		FZ_CHECK(w->ops->destroy_srq(w->srq) == 0);
	FZ_CHECK(w->ops->destroy_cq(w->scq) == 0);
	FZ_CHECK(w->ops->destroy_cq(w->rcq) == 0);
	check_guards(d->tgt, FZ_MEM_LEN);
	check_guards(d->ro, FZ_MEM_LEN);
	check_guards(d->pd2m, FZ_MEM_LEN);
	check_guards(d->loc, FZ_LOCAL_LEN);
	/* No right, no change: the read-only region and the other PD's
	 * keep their bytes, and the local region changed only where a
	 * receive or our Read's sink lies. */
	FZ_CHECK(filled(d->ro + FZ_GUARD, FZ_MEM_LEN));
	FZ_CHECK(filled(d->pd2m + FZ_GUARD, FZ_MEM_LEN));
	check_local(d->loc + FZ_GUARD);
	cur = NULL;
}

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

size_t fz_mpa_frame(uint8_t *out, bool request, bool v2, uint8_t flags,
		    uint16_t ird, uint16_t ord, uint16_t rtr)
{
	struct mpa_rr rr;
	struct mpa_v2_data d;

	mpa_rr_init(&rr, request, v2 ? MPA_REV2 : MPA_REV1,
		    (uint8_t)(flags | (v2 ? MPA_FLAG_ENHANCED : 0)),
		    v2 ? sizeof(d) : 0);
	memcpy(out, &rr, sizeof(rr));
	if (!v2)
		return sizeof(rr);
	mpa_v2_set(&d, ird, ord, rtr != 0, rtr);
	memcpy(out + sizeof(rr), &d, sizeof(d));
	return sizeof(rr) + sizeof(d);
}

void fz_fpdu_fix_crc(uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off + MPA_HDR_SIZE <= len) {
		uint32_t ulpdu = (uint32_t)(buf[off] << 8 | buf[off + 1]);
		uint32_t body = MPA_HDR_SIZE + ulpdu + mpa_pad_len(ulpdu);

		if (off + body + MPA_CRC_SIZE > len)
			return;
		mpa_crc_put(buf + off + body, siw_crc32c(0, buf + off, body));
		off += body + MPA_CRC_SIZE;
	}
}
