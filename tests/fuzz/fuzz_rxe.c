/* SPDX-License-Identifier: MIT */
/* The soft-RoCE harness of the fuzz targets; see fuzz_rxe.h. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_rxe.h"
#include "vp/rxe/rxe.h"

#define GUARD 64u
#define GUARD_BYTE 0xa5
#define SLOT 65536u

static struct {
	struct rnicpi_device *dev;
	struct rxe_dev *rdev;
	const struct rnicpi_device_ops *ops;
	struct rnicpi_pd *pd, *pd2;
	struct rnicpi_mr *mr[4];	/* RW, RO, PD2, LOCAL */
	uint8_t *tgt, *ro, *pd2m, *loc;	/* RW, RO, PD2 memory, local */
	int peer;			/* the peer's UDP socket */
	struct sockaddr_storage peer_addr, peer_addr6;
	uint8_t *bounce, *scratch;
} F;

static void on_async(struct rnicpi_device *dev,
		     const struct rnicpi_async_event *ev)
{
	(void)dev;
	(void)ev;
}

static const struct rnicpi_core_ops core_ops = {
	.size = sizeof(struct rnicpi_core_ops),
	.async_event = on_async,
};

static uint8_t *guarded(size_t len)
{
	uint8_t *p = malloc(len + 2 * GUARD);

	FZ_CHECK(p);
	memset(p, GUARD_BYTE, len + 2 * GUARD);
	return p;
}

static void check_guards(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < GUARD; i++) {
		FZ_CHECK(p[i] == GUARD_BYTE);
		FZ_CHECK(p[GUARD + len + i] == GUARD_BYTE);
	}
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
 * receives, the READ's sink and the atomics' results of fz_rxe_open(). */
static void check_local(const uint8_t *p)
{
	static const uint32_t open[][2] = {
		{ 0, 320 }, { 512, 1012 }, { 1024, 1524 }, { 2048, 7220 },
		{ 7232, 8132 }, { 8192, 9692 }, { 10240, 10256 },
	};
	uint32_t i = 0;

	for (size_t k = 0; k <= sizeof(open) / sizeof(open[0]); k++) {
		uint32_t end = k < sizeof(open) / sizeof(open[0])
				       ? open[k][0] : FZ_RXE_LOCAL;

		for (; i < end; i++)
			FZ_CHECK(p[i] == 0);
		if (k < sizeof(open) / sizeof(open[0]))
			i = open[k][1];
	}
}

static void set_addr(struct sockaddr_storage *ss, int family, const char *a,
		     uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		FZ_CHECK(inet_pton(AF_INET, a, &s->sin_addr) == 1);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		FZ_CHECK(inet_pton(AF_INET6, a, &s->sin6_addr) == 1);
	}
}

void fz_rxe_init(void)
{
	static const struct rnicpi_option opts[] = {
		{ "direct", "2" }, { NULL, NULL },
	};
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd = { 0 };
	int val = IP_PMTUDISC_DO;

	fz_log_init();
	fz_netns_enter();
	set_addr(&addrs[0], AF_INET, "127.0.0.1", 0);
	set_addr(&addrs[1], AF_INET6, "::1", 0);
	nd.ifindex = (int)if_nametoindex("lo");
	strcpy(nd.ifname, "lo");
	nd.mtu = 65536;
	nd.flags = RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING |
		   RNICPI_NETDEV_LOOPBACK;
	nd.addrs = addrs;
	nd.n_addrs = 2;
	FZ_CHECK(rxe_provider.device_create(&nd, "rxe_fz", opts, &core_ops,
					    &F.dev) == 0);
	F.dev->provider = &rxe_provider;
	F.rdev = to_rxe_dev(F.dev);
	F.ops = F.dev->ops;
	FZ_CHECK(F.ops->device_open(F.dev) == 0);	/* binds UDP 4791 */
	FZ_CHECK(F.rdev->gids[0].valid &&
		 F.rdev->gids[0].addr.ss_family == AF_INET);
	FZ_CHECK(F.rdev->gids[1].valid &&
		 F.rdev->gids[1].addr.ss_family == AF_INET6);
	/* Stopped as rxe_net_stop() stops it; the target's thread runs its
	 * work from now on. */
	rxe_net_stop_thread(F.rdev);

	/* Before the first registration: the R_Keys of fuzz_rxe.h. */
	F.rdev->keys.secret = FZ_KEY_SECRET;
	FZ_CHECK(F.ops->alloc_pd(F.dev, &F.pd) == 0);
	FZ_CHECK(F.ops->alloc_pd(F.dev, &F.pd2) == 0);
	F.tgt = guarded(FZ_RXE_MEM);
	F.ro = guarded(FZ_RXE_MEM);
	F.pd2m = guarded(FZ_RXE_MEM);
	F.loc = guarded(FZ_RXE_LOCAL);
	FZ_CHECK(F.ops->reg_mr(F.pd, F.tgt + GUARD, FZ_RXE_MEM, FZ_VA_RW,
			       RNICPI_ACCESS_LOCAL_WRITE |
				       RNICPI_ACCESS_REMOTE_WRITE |
				       RNICPI_ACCESS_REMOTE_READ |
				       RNICPI_ACCESS_REMOTE_ATOMIC,
			       &F.mr[0]) == 0);
	FZ_CHECK(F.ops->reg_mr(F.pd, F.ro + GUARD, FZ_RXE_MEM, FZ_VA_RO,
			       RNICPI_ACCESS_LOCAL_WRITE |
				       RNICPI_ACCESS_REMOTE_READ,
			       &F.mr[1]) == 0);
	FZ_CHECK(F.ops->reg_mr(F.pd2, F.pd2m + GUARD, FZ_RXE_MEM, FZ_VA_PD2,
			       RNICPI_ACCESS_LOCAL_WRITE |
				       RNICPI_ACCESS_REMOTE_WRITE,
			       &F.mr[2]) == 0);
	FZ_CHECK(F.ops->reg_mr(F.pd, F.loc + GUARD, FZ_RXE_LOCAL,
			       FZ_VA_LOCAL, RNICPI_ACCESS_LOCAL_WRITE,
			       &F.mr[3]) == 0);
	FZ_CHECK(F.mr[0]->rkey == FZ_RKEY_RW);
	FZ_CHECK(F.mr[1]->rkey == FZ_RKEY_RO);
	FZ_CHECK(F.mr[2]->rkey == FZ_RKEY_PD2);
	FZ_CHECK(F.mr[3]->lkey == FZ_LKEY_LOCAL);

	/* The peer: 127.0.0.2:4791 (lo answers for 127/8), DF set so that
	 * its kernel writes IPv4 ID 0 (and 0, 1, 2 ... in a GSO run). */
	set_addr(&F.peer_addr, AF_INET, "127.0.0.2", FZ_RXE_PEER_PORT);
	set_addr(&F.peer_addr6, AF_INET6, "::2", FZ_RXE_PEER_PORT);
	F.peer = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	FZ_CHECK(F.peer >= 0);
	setsockopt(F.peer, IPPROTO_IP, IP_MTU_DISCOVER, &val, sizeof(val));
	FZ_CHECK(bind(F.peer, (struct sockaddr *)&F.peer_addr,
		      sizeof(struct sockaddr_in)) == 0);
	F.bounce = malloc(SLOT);
	F.scratch = malloc(SLOT);
	FZ_CHECK(F.bounce && F.scratch);
}

/* ------------------------------------------------------------------ */
/* QPs                                                                 */
/* ------------------------------------------------------------------ */

static void rc_connect(struct rnicpi_qp *qp, unsigned int flags)
{
	struct rnicpi_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = RNICPI_ACCESS_LOCAL_WRITE |
			    RNICPI_ACCESS_REMOTE_WRITE |
			    RNICPI_ACCESS_REMOTE_READ |
			    ((flags & FZ_RXE_NO_ATOMIC) ? 0
			     : RNICPI_ACCESS_REMOTE_ATOMIC);
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE |
				  RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				  RNICPI_QP_ACCESS_FLAGS) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = (flags & FZ_RXE_MTU_256) ? RNICPI_MTU_256
					      : RNICPI_MTU_1024;
	a.dest_qp_num = FZ_RXE_PEER_QPN;
	a.rq_psn = FZ_RXE_RQ_PSN;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 14;
	a.ah_attr.dgid.raw[10] = a.ah_attr.dgid.raw[11] = 0xff;
	a.ah_attr.dgid.raw[12] = 127;
	a.ah_attr.dgid.raw[15] = 2;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.hop_limit = 64;
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE | RNICPI_QP_AV |
				  RNICPI_QP_PATH_MTU | RNICPI_QP_DEST_QPN |
				  RNICPI_QP_RQ_PSN |
				  RNICPI_QP_MAX_DEST_RD_ATOMIC |
				  RNICPI_QP_MIN_RNR_TIMER) == 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = FZ_RXE_SQ_PSN;
	a.timeout = 14;
	a.retry_cnt = 2;
	a.rnr_retry = 2;
	a.max_rd_atomic = 4;
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE |
				  RNICPI_QP_SQ_PSN | RNICPI_QP_TIMEOUT |
				  RNICPI_QP_RETRY_CNT | RNICPI_QP_RNR_RETRY |
				  RNICPI_QP_MAX_QP_RD_ATOMIC) == 0);
}

static void ud_ready(struct rnicpi_qp *qp)
{
	struct rnicpi_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.port_num = 1;
	a.qkey = FZ_RXE_QKEY;
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE |
				  RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				  RNICPI_QP_QKEY) == 0);
	a.qp_state = RNICPI_QPS_RTR;
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE) == 0);
	a.qp_state = RNICPI_QPS_RTS;
	a.sq_psn = 0x100;
	FZ_CHECK(F.ops->modify_qp(qp, &a, RNICPI_QP_STATE |
				  RNICPI_QP_SQ_PSN) == 0);
}

static void post_recv(struct rnicpi_qp *qp, struct rnicpi_srq *srq,
		      uint32_t off, uint32_t len, uint32_t off2,
		      uint32_t len2, uint64_t id)
{
	struct rnicpi_sge sge[2] = {
		{ .addr = FZ_VA_LOCAL + off, .length = len,
		  .lkey = FZ_LKEY_LOCAL },
		{ .addr = FZ_VA_LOCAL + off2, .length = len2,
		  .lkey = FZ_LKEY_LOCAL },
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = id, .sg_list = sge, .num_sge = len2 ? 2 : 1,
	};

	if (srq)
		F.ops->post_srq_recv(srq, &wr, NULL);
	else
		F.ops->post_recv(qp, &wr, NULL);
}

static void post_requests(struct rnicpi_qp *qp)
{
	struct rnicpi_sge src = { .addr = FZ_VA_LOCAL + 12288, .length = 100,
				  .lkey = FZ_LKEY_LOCAL };
	struct rnicpi_sge sink = { .addr = FZ_VA_LOCAL + 8192, .length = 1500,
				   .lkey = FZ_LKEY_LOCAL };
	struct rnicpi_sge a1 = { .addr = FZ_VA_LOCAL + 10240, .length = 8,
				 .lkey = FZ_LKEY_LOCAL };
	struct rnicpi_sge a2 = { .addr = FZ_VA_LOCAL + 10248, .length = 8,
				 .lkey = FZ_LKEY_LOCAL };
	struct rnicpi_send_wr wr[5];

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 5; i++) {
		wr[i].wr_id = 20 + (uint64_t)i;
		wr[i].send_flags = RNICPI_SEND_SIGNALED;
		wr[i].num_sge = 1;
		wr[i].next = i < 4 ? &wr[i + 1] : NULL;
	}
	wr[0].opcode = RNICPI_WR_RDMA_WRITE;
	wr[0].sg_list = &src;
	wr[0].wr.rdma.remote_addr = 0x9000;
	wr[0].wr.rdma.rkey = 0x1234;
	wr[1].opcode = RNICPI_WR_RDMA_READ;
	wr[1].sg_list = &sink;
	wr[1].wr.rdma.remote_addr = 0xa000;
	wr[1].wr.rdma.rkey = 0x1234;
	wr[2].opcode = RNICPI_WR_ATOMIC_CMP_AND_SWP;
	wr[2].sg_list = &a1;
	wr[2].wr.atomic.remote_addr = 0xb000;
	wr[2].wr.atomic.rkey = 0x1234;
	wr[2].wr.atomic.compare_add = 1;
	wr[2].wr.atomic.swap = 2;
	wr[3].opcode = RNICPI_WR_ATOMIC_FETCH_AND_ADD;
	wr[3].sg_list = &a2;
	wr[3].wr.atomic.remote_addr = 0xb008;
	wr[3].wr.atomic.rkey = 0x1234;
	wr[3].wr.atomic.compare_add = 3;
	wr[4].opcode = RNICPI_WR_SEND_WITH_IMM;
	wr[4].sg_list = &src;
	wr[4].ex.imm_data = 0x5a5a5a5a;
	F.ops->post_send(qp, wr, NULL);
}

static void run_work(void)
{
	int round;

	/* Finite input, finite work: a QP that keeps scheduling itself
	 * would spin the progress thread. */
	for (round = 0; round < 10000 && rxe_net_run_work(F.rdev); round++)
		;
	FZ_CHECK(round < 10000);
}

static void drain_peer(void)
{
	while (recv(F.peer, F.scratch, SLOT, MSG_DONTWAIT) >= 0)
		;
}

void fz_rxe_open(struct fz_rxe *w, unsigned int flags)
{
	struct rnicpi_cq_init_attr ca = { .cqe = 512 };
	struct rnicpi_qp_init_attr qa;

	memset(w, 0, sizeof(*w));
	memset(F.tgt + GUARD, 0, FZ_RXE_MEM);
	fill(F.ro + GUARD, FZ_RXE_MEM);
	fill(F.pd2m + GUARD, FZ_RXE_MEM);
	memset(F.loc + GUARD, 0, FZ_RXE_LOCAL);
	for (int i = 0; i < 4; i++)	/* after a SEND with Invalidate */
		atomic_store(&to_rxe_mr(F.mr[i])->invalid, false);
	FZ_CHECK(F.ops->create_cq(F.dev, &ca, &w->scq) == 0);
	FZ_CHECK(F.ops->create_cq(F.dev, &ca, &w->rcq) == 0);
	if (flags & FZ_RXE_SRQ) {
		struct rnicpi_srq_attr sa = { .max_wr = 16, .max_sge = 4 };

		FZ_CHECK(F.ops->create_srq(F.pd, &sa, &w->srq) == 0);
	}
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = RNICPI_QPT_RC;
	qa.send_cq = w->scq;
	qa.recv_cq = w->rcq;
	qa.srq = w->srq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = w->srq ? 0 : 16;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	qa.port_num = 1;
	FZ_CHECK(F.ops->create_qp(F.pd, &qa, &w->qp) == 0);
	qa.qp_type = RNICPI_QPT_UD;
	qa.srq = NULL;
	qa.cap.max_recv_wr = 16;
	FZ_CHECK(F.ops->create_qp(F.pd, &qa, &w->uqp) == 0);
	rc_connect(w->qp, flags);
	ud_ready(w->uqp);
	post_recv(w->qp, w->srq, 2048, 4096, 0, 0, 1);
	post_recv(w->qp, w->srq, 512, 500, 1024, 500, 2);
	post_recv(w->qp, w->srq, 64, 256, 0, 0, 3);
	post_recv(w->qp, w->srq, 0, 64, 0, 0, 4);
	post_recv(w->uqp, NULL, 6144, 40 + 1024, 0, 0, 5);
	post_recv(w->uqp, NULL, 7200, 20, 7232, 900, 6);
	if (flags & FZ_RXE_REQUESTS)
		post_requests(w->qp);
	run_work();
}

/* The bytes each WR of fz_rxe_open() has room for. */
static uint32_t wr_room(uint64_t wr_id)
{
	switch (wr_id) {
	case 1: return 4096;
	case 2: return 1000;
	case 3: return 256;
	case 4: return 64;
	case 5: return 40 + 1024;
	case 6: return 20 + 900;
	case 20: return 100;	/* WRITE */
	case 21: return 1500;	/* READ */
	case 22: case 23: return 8;	/* atomics */
	case 24: return 100;	/* SEND */
	default: return 0;
	}
}

/* Every completion names a WR we posted, and one that succeeded says it
 * moved no more bytes than that WR had room for: a consumer believes
 * byte_len. */
static void drain_cq(struct rnicpi_cq *cq)
{
	struct rnicpi_wc wc[16];
	int n;

	while ((n = F.ops->poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			FZ_CHECK(wr_room(wc[i].wr_id));
			if (wc[i].status == RNICPI_WC_SUCCESS)
				FZ_CHECK(wc[i].byte_len <=
					 wr_room(wc[i].wr_id));
		}
	}
}

void fz_rxe_close(struct fz_rxe *w)
{
	run_work();
	FZ_CHECK(F.ops->destroy_qp(w->qp) == 0);
	FZ_CHECK(F.ops->destroy_qp(w->uqp) == 0);
	drain_cq(w->scq);
	drain_cq(w->rcq);
	if (w->srq)
		FZ_CHECK(F.ops->destroy_srq(w->srq) == 0);
	FZ_CHECK(F.ops->destroy_cq(w->scq) == 0);
	FZ_CHECK(F.ops->destroy_cq(w->rcq) == 0);
	drain_peer();
	check_guards(F.tgt, FZ_RXE_MEM);
	check_guards(F.ro, FZ_RXE_MEM);
	check_guards(F.pd2m, FZ_RXE_MEM);
	check_guards(F.loc, FZ_RXE_LOCAL);
	/* No right, no change: the read-only region and the other PD's
	 * keep their bytes, and the local region changed only where a
	 * receive, our READ's sink or our atomics' results lie. */
	FZ_CHECK(filled(F.ro + GUARD, FZ_RXE_MEM));
	FZ_CHECK(filled(F.pd2m + GUARD, FZ_RXE_MEM));
	check_local(F.loc + GUARD);
}

/* ------------------------------------------------------------------ */
/* Packets                                                             */
/* ------------------------------------------------------------------ */

static void icrc_addr(struct rxe_icrc_addr *a, bool v6, uint16_t ip_id)
{
	memset(a, 0, sizeof(*a));
	a->family = v6 ? AF_INET6 : AF_INET;
	a->sport = FZ_RXE_PEER_PORT;
	a->dport = ROCE_V2_UDP_PORT;
	a->ip_id = ip_id;
	a->df = true;
	if (v6) {
		inet_pton(AF_INET6, "::2", a->saddr);
		inet_pton(AF_INET6, "::1", a->daddr);
	} else {
		inet_pton(AF_INET, "127.0.0.2", a->saddr);
		inet_pton(AF_INET, "127.0.0.1", a->daddr);
	}
}

uint32_t fz_rxe_icrc(const uint8_t *pkt, uint32_t len, uint16_t ip_id)
{
	struct rxe_icrc_addr a;

	icrc_addr(&a, false, ip_id);
	return rxe_icrc_packet(&a, pkt, len - IB_ICRC_BYTES);
}

static void prepare_one(struct fz_rxe *w, uint8_t ctl, uint8_t *p,
			uint32_t len, uint16_t ip_id, bool v6)
{
	struct rxe_icrc_addr a;

	if (len < IB_BTH_BYTES + IB_ICRC_BYTES)
		return;
	if ((ctl & FZ_RXE_CTL_QP_MASK) == 0)
		ib_put24(p + 5, w->qp->qp_num);
	else if ((ctl & FZ_RXE_CTL_QP_MASK) == 1)
		ib_put24(p + 5, w->uqp->qp_num);
	if (!(ctl & FZ_RXE_CTL_ICRC))
		return;
	icrc_addr(&a, v6, ip_id);
	rxe_icrc_put(p + len - IB_ICRC_BYTES,
		     rxe_icrc_packet(&a, p, len - IB_ICRC_BYTES));
}

/* The IPv4 ID a record's packets carry: 0, or one to solve for. */
static uint16_t ctl_ip_id(uint8_t ctl)
{
	static const uint16_t ids[8] = { 0, 0, 0, 0, 1, 0x1234, 0x8000,
					 0xffff };

	return ids[(ctl >> 4) & 7];
}

void fz_rxe_prepare(struct fz_rxe *w, uint8_t ctl, uint8_t *buf,
		    uint32_t len, uint32_t seg, uint16_t id0)
{
	uint16_t k = 0;

	bool v6 = ctl & FZ_RXE_CTL_V6;

	if (!seg || seg >= len) {
		prepare_one(w, ctl, buf, len, (uint16_t)(id0 + ctl_ip_id(ctl)),
			    v6);
		return;
	}
	while (len) {
		uint32_t n = len < seg ? len : seg;

		prepare_one(w, ctl, buf, n,
			    (uint16_t)(id0 + k++ + ctl_ip_id(ctl)), v6);
		buf += n;
		len -= n;
	}
}

static void after(struct fz_rxe *w, uint8_t ctl)
{
	run_work();
	if (ctl & FZ_RXE_CTL_TIMER) {
		struct rxe_qp *qp = to_rxe_qp(w->qp);

		rxe_qp_lock(qp);
		rxe_comp_timer(qp);
		rxe_qp_unlock(qp);
		run_work();
	}
	drain_peer();
}

void fz_rxe_deliver(struct fz_rxe *w, uint8_t ctl, uint8_t *buf,
		    uint32_t len, uint32_t seg)
{
	bool v6 = ctl & FZ_RXE_CTL_V6;

	rxe_rcv_datagram(F.rdev, buf, len, seg,
			 v6 ? &F.peer_addr6 : &F.peer_addr, v6 ? 1 : 0, 0);
	after(w, ctl);
}

void fz_rxe_send(struct fz_rxe *w, uint8_t ctl, const uint8_t *buf,
		 uint32_t len, uint32_t seg)
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(ROCE_V2_UDP_PORT) };
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_name = &dst, .msg_namelen = sizeof(dst),
			     .msg_iov = &iov, .msg_iovlen = 1 };
	int fd = F.rdev->gids[0].rx_fd, round;

	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&cm, 0, sizeof(cm));
	if (seg && seg < len && len / seg < 64) {
		struct cmsghdr *c;
		uint16_t gso = (uint16_t)seg;

		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(gso));
		memcpy(CMSG_DATA(c), &gso, sizeof(gso));
	}
	if (sendmsg(F.peer, &mh, 0) < 0)
		return;	/* too long for a datagram, say: nothing arrives */
	/* The progress thread's receive with direct placement on: peek at
	 * each datagram; a run it cannot place is read whole. */
	for (round = 0; round < 16; round++) {
		bool placed = false;
		int r = rxe_rcv_peeked(F.rdev, fd, 0, F.bounce, F.scratch, SLOT,
				       &placed);

		if (r == 0)
			break;
		if (r < 0) {
			union {
				char buf[CMSG_SPACE(sizeof(int))];
				struct cmsghdr align;
			} rcm;
			struct sockaddr_storage src;
			struct iovec riov = { .iov_base = F.bounce,
					      .iov_len = SLOT };
			struct msghdr rmh = {
				.msg_name = &src, .msg_namelen = sizeof(src),
				.msg_iov = &riov, .msg_iovlen = 1,
				.msg_control = rcm.buf,
				.msg_controllen = sizeof(rcm.buf),
			};
			ssize_t n = recvmsg(fd, &rmh, MSG_DONTWAIT);

			if (n < 0)
				break;
			rxe_rcv_datagram(F.rdev, F.bounce, (uint32_t)n,
					 rxe_gro_seg(&rmh), &src, 0, 0);
		}
		run_work();
	}
	after(w, ctl);
}

void fz_rxe_run(const uint8_t *data, size_t size, bool via_socket)
{
	struct fz_in in = { data, size };
	uint8_t *buf;
	struct fz_rxe w;
	int records = 0;

	fz_rxe_open(&w, fz_u8(&in));
	while (in.n && records++ < 64) {
		uint8_t ctl = fz_u8(&in);
		uint32_t seg = (uint32_t)fz_u8(&in) * 16;
		size_t len;
		const uint8_t *p = fz_take(&in, fz_u16(&in), &len);

		/* A copy of its own, exactly as long: ASan sees every read
		 * past the datagram's end. */
		buf = malloc(len ? len : 1);
		FZ_CHECK(buf);
		memcpy(buf, p, len);
		if (via_socket)
			ctl &= (uint8_t)~FZ_RXE_CTL_V6;
		fz_rxe_prepare(&w, ctl, buf, (uint32_t)len, seg, 0);
		if (via_socket)
			fz_rxe_send(&w, ctl, buf, (uint32_t)len, seg);
		else
			fz_rxe_deliver(&w, ctl, buf, (uint32_t)len, seg);
		free(buf);
	}
	fz_rxe_close(&w);
}
