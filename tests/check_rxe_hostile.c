/* SPDX-License-Identifier: MIT */
/*
 * rxe-hostile: a raw UDP driver plays the remote requester. It builds
 * RoCEv2 packets by hand (with a correct or a wrong ICRC), sends them from
 * 127.0.0.2:4791 to a QP of a device on lo, and checks the answer (ACK,
 * NAK syndrome, RNR NAK, READ response, atomic ACK) and the target memory:
 * not one byte outside what the packet was allowed to touch.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <glib.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

#define PEER_QPN 0x777
#define RQ_PSN 1000
#define MEM 4096
#define GUARD 64

struct hostile {
	struct rxe_t_dev t;
	struct rxe_t_side s;
	struct rnicpi_pd *pd2;
	uint8_t *mem;		/* GUARD + MEM + GUARD */
	struct rnicpi_mr *mr;	/* all rights, whole buffer */
	struct rnicpi_mr *mr_ro; /* local write + remote read only */
	struct rnicpi_mr *mr_pd2; /* in another PD */
	int fd;
};

static uint64_t va(struct hostile *h, uint32_t off)
{
	return (uint64_t)(uintptr_t)(h->mem + GUARD + off);
}

static void hostile_open_opts(struct hostile *h,
			      const struct rxe_t_conn_opts *opts)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(ROCE_V2_UDP_PORT) };
	struct rxe_t_conn_opts o = *opts;
	struct timeval tv = { .tv_sec = 10 };
	union rnicpi_gid peer;
	int val = IP_PMTUDISC_DO;

	memset(h, 0, sizeof(*h));
	ck_assert_ok(rxe_t_dev_open(&h->t, NULL));
	ck_assert_ok(rxe_t_side_create(&h->t, &h->s, RNICPI_QPT_RC, &o));
	rxe_t_gid_v4(&peer, "127.0.0.2");
	ck_assert_ok(rxe_t_connect_one(&h->t, &h->s, &peer, PEER_QPN, 5000,
				       RQ_PSN, &o));
	ck_assert_ok(h->t.ops->alloc_pd(h->t.dev, &h->pd2));
	h->mem = g_malloc(MEM + 2 * GUARD);
	memset(h->mem, 0xee, MEM + 2 * GUARD);
	memset(h->mem + GUARD, 0, MEM);
	ck_assert_ok(h->t.ops->reg_mr(h->t.pd, h->mem + GUARD, MEM, va(h, 0),
				      RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_WRITE |
				      RNICPI_ACCESS_REMOTE_READ |
				      RNICPI_ACCESS_REMOTE_ATOMIC, &h->mr));
	ck_assert_ok(h->t.ops->reg_mr(h->t.pd, h->mem + GUARD, MEM, va(h, 0),
				      RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_READ, &h->mr_ro));
	ck_assert_ok(h->t.ops->reg_mr(h->pd2, h->mem + GUARD, MEM, va(h, 0),
				      RNICPI_ACCESS_LOCAL_WRITE |
				      RNICPI_ACCESS_REMOTE_WRITE, &h->mr_pd2));

	/* The peer: 127.0.0.2:4791 (lo answers for all of 127/8), DF set
	 * so that the kernel writes IPv4 ID 0 as our ICRC assumes. */
	h->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(h->fd, 0);
	setsockopt(h->fd, IPPROTO_IP, IP_MTU_DISCOVER, &val, sizeof(val));
	setsockopt(h->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	inet_pton(AF_INET, "127.0.0.2", &sin.sin_addr);
	ck_assert_int_eq(bind(h->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
}

static void hostile_open_mtu(struct hostile *h, enum rnicpi_mtu mtu)
{
	const struct rxe_t_conn_opts o = { .mtu = mtu, .min_rnr_timer = 14 };

	hostile_open_opts(h, &o);
}

static void hostile_open(struct hostile *h)
{
	hostile_open_mtu(h, RNICPI_MTU_1024);
}

static void hostile_close(struct hostile *h)
{
	close(h->fd);
	rxe_t_side_destroy(&h->t, &h->s);
	ck_assert_ok(h->t.ops->dereg_mr(h->mr));
	ck_assert_ok(h->t.ops->dereg_mr(h->mr_ro));
	ck_assert_ok(h->t.ops->dereg_mr(h->mr_pd2));
	ck_assert_ok(h->t.ops->dealloc_pd(h->pd2));
	rxe_t_dev_close(&h->t);
	g_free(h->mem);
}

static void assert_untouched(struct hostile *h, uint32_t from, uint32_t to)
{
	uint32_t i;

	for (i = 0; i < GUARD; i++) {
		ck_assert_uint_eq(h->mem[i], 0xee);
		ck_assert_uint_eq(h->mem[GUARD + MEM + i], 0xee);
	}
	for (i = from; i < to; i++)
		ck_assert_msg(h->mem[GUARD + i] == 0, "byte %u written", i);
}

/* Build and send one packet: BTH for @opcode/@psn, @ext (the extension
 * headers, already laid out), @payload; @icrc_xor spoils the ICRC. */
static void send_raw(struct hostile *h, uint8_t opcode, uint32_t qpn,
		     uint32_t psn, const void *ext, size_t ext_len,
		     const void *payload, size_t len, uint32_t icrc_xor)
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(ROCE_V2_UDP_PORT) };
	struct rxe_icrc_addr a = { .family = AF_INET, .sport = 4791,
				   .dport = 4791, .df = true };
	uint8_t pkt[2048];
	size_t n = IB_BTH_BYTES + ext_len + len;
	unsigned int pad = (4 - (len & 3)) & 3;

	const struct ib_opcode_info *op = ib_opcode(opcode);
	/* AckReq where a requester sets it: on the last packet. */
	bool ackreq = !op || (op->flags & IB_F_LAST);

	ck_assert_uint_le(n + pad + 4, sizeof(pkt));
	bth_init((struct ib_bth *)pkt, opcode, false, false, pad, 0xffff, qpn,
		 ackreq, psn);
	if (ext_len) /* ext and payload may be NULL when empty */
		memcpy(pkt + IB_BTH_BYTES, ext, ext_len);
	if (len)
		memcpy(pkt + IB_BTH_BYTES + ext_len, payload, len);
	memset(pkt + n, 0, pad);
	n += pad;
	inet_pton(AF_INET, "127.0.0.2", a.saddr);
	inet_pton(AF_INET, "127.0.0.1", a.daddr);
	rxe_icrc_put(pkt + n, rxe_icrc_packet(&a, pkt, n) ^ icrc_xor);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	ck_assert_int_eq(sendto(h->fd, pkt, n + 4, 0, (struct sockaddr *)&dst,
				sizeof(dst)), (ssize_t)(n + 4));
}

static void send_write(struct hostile *h, uint8_t opcode, uint32_t psn,
		       uint64_t addr, uint32_t rkey, uint32_t dma_len,
		       const void *data, size_t len)
{
	struct ib_reth reth;

	reth_set(&reth, addr, rkey, dma_len);
	send_raw(h, opcode, h->s.qp->qp_num, psn, &reth,
		 ib_opcode(opcode)->flags & IB_F_RETH ? sizeof(reth) : 0,
		 data, len, 0);
}

/* Send @n packets of @opcode with PSNs @psn, @psn + 1, ..., each with
 * @len bytes of @data (packet i gets data + i * len), as one UDP GSO
 * datagram, which the device's socket receives whole (UDP GRO). The
 * kernel numbers the segments' IPv4 IDs 0, 1, 2, ...: each ICRC is
 * computed with its own; packet @bad gets a wrong one (-1: none). */
static void send_gso_run(struct hostile *h, uint8_t opcode, uint32_t psn,
			 unsigned int n, const uint8_t *data, size_t len,
			 int bad)
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(ROCE_V2_UDP_PORT) };
	struct rxe_icrc_addr a = { .family = AF_INET, .sport = 4791,
				   .dport = 4791, .df = true };
	size_t seg = IB_BTH_BYTES + len + IB_ICRC_BYTES;
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cm = { 0 };	/* padding after the 2-byte size goes out too */
	uint8_t *pkts = g_malloc(n * seg);
	struct iovec iov = { .iov_base = pkts, .iov_len = n * seg };
	struct msghdr mh = { .msg_name = &dst, .msg_namelen = sizeof(dst),
			     .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cm.buf,
			     .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	uint16_t gso = (uint16_t)seg;
	unsigned int i;

	ck_assert_uint_eq(len % 4, 0);
	inet_pton(AF_INET, "127.0.0.2", a.saddr);
	inet_pton(AF_INET, "127.0.0.1", a.daddr);
	for (i = 0; i < n; i++) {
		uint8_t *p = pkts + i * seg;

		bth_init((struct ib_bth *)p, opcode, false, false, 0, 0xffff,
			 h->s.qp->qp_num, false, psn + i);
		memcpy(p + IB_BTH_BYTES, data + i * len, len);
		a.ip_id = (uint16_t)i;
		rxe_icrc_put(p + IB_BTH_BYTES + len,
			     rxe_icrc_packet(&a, p, IB_BTH_BYTES + len) ^
				     ((int)i == bad ? 0x00010000u : 0));
	}
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(gso));
	memcpy(CMSG_DATA(c), &gso, sizeof(gso));
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	ck_assert_int_eq(sendmsg(h->fd, &mh, 0), (ssize_t)(n * seg));
	g_free(pkts);
}

struct resp {
	uint8_t opcode;
	uint32_t psn;
	uint8_t syndrome;
	uint32_t msn;
	uint8_t payload[2048];
	uint32_t paylen;
	uint64_t atomic_orig;
};

/* Receive the QP's next answer; checks its ICRC and its headers. */
static void recv_resp(struct hostile *h, struct resp *r)
{
	uint8_t buf[4200];
	struct rxe_icrc_addr a = { .family = AF_INET, .dport = 4791,
				   .df = true };
	struct sockaddr_in src;
	socklen_t sl = sizeof(src);
	const struct ib_opcode_info *op;
	ssize_t n;

	n = recvfrom(h->fd, buf, sizeof(buf), 0, (struct sockaddr *)&src, &sl);
	ck_assert_msg(n >= 16, "no answer from the QP (%zd)", n);
	a.sport = ntohs(src.sin_port);
	memcpy(a.saddr, &src.sin_addr, 4);
	inet_pton(AF_INET, "127.0.0.2", a.daddr);
	ck_assert_uint_eq(rxe_icrc_get(buf + n - 4),
			  rxe_icrc_packet(&a, buf, (size_t)n - 4));
	memset(r, 0, sizeof(*r));
	r->opcode = bth_opcode((struct ib_bth *)buf);
	r->psn = bth_psn((struct ib_bth *)buf);
	ck_assert_uint_eq(bth_qpn((struct ib_bth *)buf), PEER_QPN);
	op = ib_opcode(r->opcode);
	ck_assert_ptr_nonnull(op);
	if (op->flags & IB_F_AETH) {
		r->syndrome = buf[op->aeth_off];
		r->msn = ib_get24(buf + op->aeth_off + 1);
	}
	if (op->flags & IB_F_ATMACK)
		r->atomic_orig = ib_get64(buf + op->atmack_off);
	r->paylen = (uint32_t)n - op->hdr_len - 4 -
		    bth_pad((struct ib_bth *)buf);
	memcpy(r->payload, buf + op->hdr_len, r->paylen);
}

static void expect_nak(struct hostile *h, uint32_t psn, uint8_t syndrome)
{
	struct resp r;

	recv_resp(h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_ACK);
	ck_assert_msg(r.syndrome == syndrome, "syndrome 0x%02x, expected "
		      "0x%02x", r.syndrome, syndrome);
	ck_assert_uint_eq(r.psn, psn);
}

static enum rnicpi_qp_state qp_state(struct hostile *h)
{
	struct rnicpi_qp_attr a;

	ck_assert_ok(h->t.ops->query_qp(h->s.qp, &a, RNICPI_QP_STATE, NULL));
	return a.qp_state;
}

/* ------------------------------------------------------------------ */

START_TEST(test_write_ack_and_duplicate)
{
	struct hostile h;
	uint8_t data[100], other[100];

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	memset(other, 0x33, sizeof(other));
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 10), h.mr->rkey, 100,
		   data, 100);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD + 10, data, 100) == 0);
	/* The same PSN again with other bytes: acknowledged, not done. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 10), h.mr->rkey, 100,
		   other, 100);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD + 10, data, 100) == 0);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DUP_REQ), 1);
	/* Read into place: the first; a duplicate never is. */
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DIRECT_PKTS),
			  rxe_t_direct ? 1 : 0);
	assert_untouched(&h, 0, 10);
	assert_untouched(&h, 110, MEM);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	hostile_close(&h);
}
END_TEST

/* Each bad R_Key case: NAK remote access error, QP to ERR, an
 * access-error event, memory untouched. */
static void check_access_nak(int which)
{
	struct hostile h;
	uint8_t data[200];
	uint64_t addr;
	uint32_t rkey, len = 100;

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	addr = va(&h, 0);
	rkey = h.mr->rkey;
	switch (which) {
	case 0: /* unknown key: index right, key byte wrong */
		rkey ^= 0x5a;
		break;
	case 1: /* past the end: 100 bytes at MEM - 10 */
		addr = va(&h, MEM - 10);
		break;
	case 2: /* before the start */
		addr = va(&h, 0) - 8;
		break;
	case 3: /* a region of another PD */
		rkey = h.mr_pd2->rkey;
		break;
	case 4: /* a region without remote write */
		rkey = h.mr_ro->rkey;
		break;
	case 5: /* DMA length that wraps the address space */
		addr = UINT64_MAX - 10;
		break;
	}
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, addr, rkey, len, data, len);
	expect_nak(&h, RQ_PSN, AETH_TYPE_NAK | AETH_NAK_REM_ACCESS_ERR);
	assert_untouched(&h, 0, MEM);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_QP_ACCESS_ERR, h.s.qp));
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_ERR);
	hostile_close(&h);
}

START_TEST(test_access_errors)
{
	check_access_nak(_i);
}
END_TEST

START_TEST(test_multi_packet_write_out_of_bounds)
{
	struct hostile h;
	uint8_t data[1024];

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	/* FIRST claims 2048 bytes at MEM - 1024: the whole range is checked
	 * at FIRST, before the first byte lands. */
	send_write(&h, IB_OP_WRITE_FIRST, RQ_PSN, va(&h, MEM - 1024),
		   h.mr->rkey, 2048, data, 1024);
	expect_nak(&h, RQ_PSN, AETH_TYPE_NAK | AETH_NAK_REM_ACCESS_ERR);
	assert_untouched(&h, 0, MEM);
	hostile_close(&h);
}
END_TEST

START_TEST(test_bad_icrc)
{
	struct hostile h;
	struct ib_reth reth;
	uint8_t data[64];

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	reth_set(&reth, va(&h, 0), h.mr->rkey, 64);
	send_raw(&h, IB_OP_WRITE_ONLY, h.s.qp->qp_num, RQ_PSN, &reth,
		 sizeof(reth), data, 64, 0x00010000);
	/* Dropped and counted; the PSN is still free: the good copy is
	 * acknowledged as new, not as a duplicate. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 100), h.mr->rkey, 64,
		   data, 64);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_ICRC_ERR), 1);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DUP_REQ), 0);
	/* Read into place, the bad copy's bytes are where its R_Key let
	 * them go, and nowhere else (hostrdma-rxe(7), option direct). */
	if (rxe_t_direct)
		ck_assert(memcmp(h.mem + GUARD, data, 64) == 0);
	else
		assert_untouched(&h, 0, 64);
	assert_untouched(&h, 64, 100);
	assert_untouched(&h, 164, MEM);
	hostile_close(&h);
}
END_TEST

/* A multi-packet WRITE read into place: a MIDDLE with a bad ICRC lands
 * where the WRITE was allowed to and is then dropped; its PSN stays
 * free, the good copy lands over it, and nothing outside the WRITE's
 * range is touched. A MIDDLE past the range is never placed. */
START_TEST(test_direct_write_stream)
{
	struct hostile h;
	uint8_t a[1024], b[1024], c[1024];

	hostile_open(&h);
	memset(a, 0x11, sizeof(a));
	memset(b, 0x22, sizeof(b));
	memset(c, 0x33, sizeof(c));
	send_write(&h, IB_OP_WRITE_FIRST, RQ_PSN, va(&h, 512), h.mr->rkey,
		   3 * 1024, a, 1024);
	send_raw(&h, IB_OP_WRITE_MIDDLE, h.s.qp->qp_num, RQ_PSN + 1, NULL, 0,
		 c, 1024, 0x1);
	send_raw(&h, IB_OP_WRITE_MIDDLE, h.s.qp->qp_num, RQ_PSN + 1, NULL, 0,
		 b, 1024, 0);
	send_raw(&h, IB_OP_WRITE_LAST, h.s.qp->qp_num, RQ_PSN + 2, NULL, 0,
		 c, 1024, 0);
	expect_nak(&h, RQ_PSN + 2, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD + 512, a, 1024) == 0);
	ck_assert(memcmp(h.mem + GUARD + 1536, b, 1024) == 0);
	ck_assert(memcmp(h.mem + GUARD + 2560, c, 1024) == 0);
	assert_untouched(&h, 0, 512);
	assert_untouched(&h, 3584, MEM);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_ICRC_ERR), 1);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DIRECT_PKTS),
			  rxe_t_direct ? 3 : 0);

	/* A LAST that claims more than the WRITE has left: invalid
	 * request, and its bytes go nowhere. */
	send_write(&h, IB_OP_WRITE_FIRST, RQ_PSN + 3, va(&h, 0), h.mr->rkey,
		   1024 + 16, a, 1024);
	send_raw(&h, IB_OP_WRITE_LAST, h.s.qp->qp_num, RQ_PSN + 4, NULL, 0,
		 c, 1024, 0);
	expect_nak(&h, RQ_PSN + 4, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	ck_assert(memcmp(h.mem + GUARD, a, 1024) == 0);
	ck_assert(memcmp(h.mem + GUARD + 1024, a, 512) == 0);
	ck_assert(memcmp(h.mem + GUARD + 1536, b, 1024) == 0);
	hostile_close(&h);
}
END_TEST

/* A WRITE (MTU 256) whose ten MIDDLE packets come as one UDP GRO
 * datagram, the seventh with a bad ICRC. Read into place (direct), the
 * six before it are taken, the bad one is dropped, and the three after it
 * go the ordinary way, where the first of them draws a PSN sequence NAK;
 * copied, the same. The requester's go-back-N resend fills the rest: the
 * WRITE's range holds exactly its bytes, and nothing around it changed. */
START_TEST(test_gro_run_bad_segment)
{
	enum { OFF = 512, N = 10, L = 256 };
	struct hostile h;
	uint8_t first[L], run[N * L], last[L], want[(N + 2) * L];
	unsigned int i;
	uint64_t gro;

	hostile_open_mtu(&h, RNICPI_MTU_256);
	for (i = 0; i < sizeof(want); i++)
		want[i] = (uint8_t)(i * 7 + 3);
	memcpy(first, want, L);
	memcpy(run, want + L, N * L);
	memcpy(last, want + (N + 1) * L, L);
	send_write(&h, IB_OP_WRITE_FIRST, RQ_PSN, va(&h, OFF), h.mr->rkey,
		   sizeof(want), first, L);
	send_gso_run(&h, IB_OP_WRITE_MIDDLE, RQ_PSN + 1, N, run, L, 6);
	expect_nak(&h, RQ_PSN + 7, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ_ERR);
	gro = rxe_dev_counter(h.t.dev, RXE_CNT_GRO_BATCHES);
	ck_assert_uint_ge(gro, 1);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_ICRC_ERR), 1);
	/* Go back to the first PSN not taken, one packet at a time. */
	for (i = 6; i < N; i++)
		send_raw(&h, IB_OP_WRITE_MIDDLE, h.s.qp->qp_num,
			 RQ_PSN + 1 + i, NULL, 0, run + i * L, L, 0);
	send_raw(&h, IB_OP_WRITE_LAST, h.s.qp->qp_num, RQ_PSN + N + 1, NULL,
		 0, last, L, 0);
	expect_nak(&h, RQ_PSN + N + 1, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD + OFF, want, sizeof(want)) == 0);
	assert_untouched(&h, 0, OFF);
	assert_untouched(&h, OFF + sizeof(want), MEM);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_ICRC_ERR), 1);
	/* direct=2: the FIRST, the six of the run, the five resent. */
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DIRECT_PKTS),
			  rxe_t_direct ? 12 : 0);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	hostile_close(&h);
}
END_TEST

/* A run that claims more MIDDLE packets than the WRITE has room for (two
 * MIDDLEs and a LAST announced, four MIDDLEs sent): the two that fit are
 * taken, the third is an invalid request (it would end the WRITE without
 * being its LAST), and not one byte lands past the WRITE's range. */
START_TEST(test_gro_run_past_write)
{
	enum { OFF = 1024, L = 256 };
	struct hostile h;
	uint8_t first[L], run[4 * L];
	unsigned int i;

	hostile_open_mtu(&h, RNICPI_MTU_256);
	memset(first, 0x41, sizeof(first));
	for (i = 0; i < sizeof(run); i++)
		run[i] = (uint8_t)(0x80 + i / L);
	send_write(&h, IB_OP_WRITE_FIRST, RQ_PSN, va(&h, OFF), h.mr->rkey,
		   4 * L, first, L);
	send_gso_run(&h, IB_OP_WRITE_MIDDLE, RQ_PSN + 1, 4, run, L, -1);
	expect_nak(&h, RQ_PSN + 3, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	ck_assert(memcmp(h.mem + GUARD + OFF, first, L) == 0);
	ck_assert(memcmp(h.mem + GUARD + OFF + L, run, 2 * L) == 0);
	/* The LAST's 256 bytes never came. */
	assert_untouched(&h, OFF + 3 * L, MEM);
	assert_untouched(&h, 0, OFF);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DIRECT_PKTS),
			  rxe_t_direct ? 3 : 0);
	hostile_close(&h);
}
END_TEST

START_TEST(test_bad_opcode_sequence)
{
	struct hostile h;
	uint8_t data[1024];
	struct rnicpi_sge sge;
	struct rnicpi_recv_wr rw;
	const struct rnicpi_recv_wr *bad;
	struct rnicpi_wc wc;

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	/* SEND_MIDDLE with no SEND_FIRST: invalid request. */
	send_raw(&h, IB_OP_SEND_MIDDLE, h.s.qp->qp_num, RQ_PSN, NULL, 0, data,
		 1024, 0);
	expect_nak(&h, RQ_PSN, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_QP_REQ_ERR, h.s.qp));
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_ERR);
	hostile_close(&h);

	/* SEND_FIRST then WRITE_MIDDLE: the SEND never ended. The receive
	 * WQE in use completes in error. */
	hostile_open(&h);
	sge.addr = va(&h, 0);
	sge.length = MEM;
	sge.lkey = h.mr->lkey;
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 9;
	rw.sg_list = &sge;
	rw.num_sge = 1;
	ck_assert_ok(h.t.ops->post_recv(h.s.qp, &rw, &bad));
	send_raw(&h, IB_OP_SEND_FIRST, h.s.qp->qp_num, RQ_PSN, NULL, 0, data,
		 1024, 0);
	send_raw(&h, IB_OP_WRITE_MIDDLE, h.s.qp->qp_num, RQ_PSN + 1, NULL, 0,
		 data, 1024, 0);
	expect_nak(&h, RQ_PSN + 1, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	ck_assert_ok(rxe_t_wait_wc(&h.t, h.s.rcq, &wc));
	ck_assert_uint_eq(wc.wr_id, 9);
	ck_assert_int_eq(wc.status, RNICPI_WC_REM_INV_REQ_ERR);
	hostile_close(&h);
}
END_TEST

START_TEST(test_psn_out_of_window)
{
	struct hostile h;
	uint8_t data[64];

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	/* Far ahead: PSN sequence error NAK naming the PSN we expect
	 *, once; the packet is not executed. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN + 0x400000, va(&h, 0),
		   h.mr->rkey, 64, data, 64);
	expect_nak(&h, RQ_PSN, AETH_TYPE_NAK | AETH_NAK_PSN_SEQ_ERR);
	/* Far behind: a duplicate, acknowledged (under its own PSN), not
	 * executed. */
	send_write(&h, IB_OP_WRITE_ONLY, (RQ_PSN - 0x400000) & 0xffffff,
		   va(&h, 0), h.mr->rkey, 64, data, 64);
	expect_nak(&h, (RQ_PSN - 0x400000) & 0xffffff,
		   AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	assert_untouched(&h, 0, MEM);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	/* The QP still works. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 0), h.mr->rkey, 64,
		   data, 64);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD, data, 64) == 0);
	hostile_close(&h);
}
END_TEST

START_TEST(test_rnr_nak)
{
	struct hostile h;
	uint8_t data[16] = { 1 };

	hostile_open(&h);
	send_raw(&h, IB_OP_SEND_ONLY, h.s.qp->qp_num, RQ_PSN, NULL, 0, data,
		 16, 0);
	/* RNR NAK carrying our min RNR timer (14), PSN not consumed. */
	expect_nak(&h, RQ_PSN, AETH_TYPE_RNR | 14);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	hostile_close(&h);
}
END_TEST

START_TEST(test_read_and_atomic_replay)
{
	struct hostile h;
	struct ib_reth reth;
	struct ib_atmeth atm;
	struct resp r;
	uint64_t v;
	uint32_t i;

	hostile_open(&h);
	for (i = 0; i < MEM; i++)
		h.mem[GUARD + i] = (uint8_t)i;
	/* READ 1500 bytes at offset 100: FIRST + LAST over MTU 1024. */
	reth_set(&reth, va(&h, 100), h.mr->rkey, 1500);
	send_raw(&h, IB_OP_READ_REQUEST, h.s.qp->qp_num, RQ_PSN, &reth,
		 sizeof(reth), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_RESP_FIRST);
	ck_assert_uint_eq(r.psn, RQ_PSN);
	ck_assert_uint_eq(r.paylen, 1024);
	ck_assert(memcmp(r.payload, h.mem + GUARD + 100, 1024) == 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_RESP_LAST);
	ck_assert_uint_eq(r.psn, RQ_PSN + 1);
	ck_assert_uint_eq(r.paylen, 476);
	ck_assert(memcmp(r.payload, h.mem + GUARD + 1124, 476) == 0);
	/* Duplicate READ for the second half only (a requester going
	 * back to the lost LAST): re-executed from there. */
	reth_set(&reth, va(&h, 1124), h.mr->rkey, 476);
	send_raw(&h, IB_OP_READ_REQUEST, h.s.qp->qp_num, RQ_PSN + 1, &reth,
		 sizeof(reth), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_RESP_ONLY);
	ck_assert_uint_eq(r.psn, RQ_PSN + 1);
	ck_assert(memcmp(r.payload, h.mem + GUARD + 1124, 476) == 0);

	/* FETCH_ADD 5 on 8 bytes at offset 0, then its duplicate. */
	memset(h.mem + GUARD, 0, 8);
	atmeth_set(&atm, va(&h, 0), h.mr->rkey, 5, 0);
	send_raw(&h, IB_OP_FETCH_ADD, h.s.qp->qp_num, RQ_PSN + 2, &atm,
		 sizeof(atm), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_ATOMIC_ACK);
	ck_assert_uint_eq(r.psn, RQ_PSN + 2);
	ck_assert_uint_eq(r.atomic_orig, 0);
	send_raw(&h, IB_OP_FETCH_ADD, h.s.qp->qp_num, RQ_PSN + 2, &atm,
		 sizeof(atm), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_ATOMIC_ACK);
	ck_assert_uint_eq(r.atomic_orig, 0);
	memcpy(&v, h.mem + GUARD, 8);
	ck_assert_uint_eq(v, 5); /* executed once */
	/* A misaligned atomic is an invalid request. */
	atmeth_set(&atm, va(&h, 4), h.mr->rkey, 5, 0);
	send_raw(&h, IB_OP_FETCH_ADD, h.s.qp->qp_num, RQ_PSN + 3, &atm,
		 sizeof(atm), NULL, 0, 0);
	expect_nak(&h, RQ_PSN + 3, AETH_TYPE_NAK | AETH_NAK_INVALID_REQ);
	memcpy(&v, h.mem + GUARD, 8);
	ck_assert_uint_eq(v, 5);
	hostile_close(&h);
}
END_TEST

/*
 * A requester that lost our ACK goes back and sends everything again
 * from the oldest unacknowledged PSN: here a WRITE, then a READ and an
 * atomic it had sent after it. The duplicate WRITE's ACK must not name
 * the READ's or the atomic's PSN (the newest we executed): an ACK cannot
 * stand for a READ's data or an atomic's result, and a requester that
 * takes it as the READ's completion (Linux 6.1 rxe does, for a READ of
 * one packet) finishes the READ with nothing placed. Found in the lab as
 * an rping client's data mismatch under 3 % loss.
 */
START_TEST(test_duplicate_ack_before_read)
{
	struct hostile h;
	struct ib_reth reth;
	struct ib_atmeth atm;
	struct resp r;
	uint8_t data[100];
	uint32_t i;

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 0), h.mr->rkey, 100,
		   data, 100);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	for (i = 0; i < 100; i++)
		h.mem[GUARD + 200 + i] = (uint8_t)(i + 1);
	reth_set(&reth, va(&h, 200), h.mr->rkey, 100);
	send_raw(&h, IB_OP_READ_REQUEST, h.s.qp->qp_num, RQ_PSN + 1, &reth,
		 sizeof(reth), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_RESP_ONLY);
	ck_assert_uint_eq(r.psn, RQ_PSN + 1);
	/* The requester goes back to the WRITE: its ACK names the WRITE. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 0), h.mr->rkey, 100,
		   data, 100);
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	/* ... and the READ, answered with its data again. */
	send_raw(&h, IB_OP_READ_REQUEST, h.s.qp->qp_num, RQ_PSN + 1, &reth,
		 sizeof(reth), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_RESP_ONLY);
	ck_assert_uint_eq(r.psn, RQ_PSN + 1);
	ck_assert_uint_eq(r.paylen, 100);
	ck_assert(memcmp(r.payload, h.mem + GUARD + 200, 100) == 0);

	/* The same with an atomic as the newest request. */
	memset(h.mem + GUARD + 400, 0, 8);
	atmeth_set(&atm, va(&h, 400), h.mr->rkey, 7, 0);
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN + 2, va(&h, 0), h.mr->rkey,
		   100, data, 100);
	expect_nak(&h, RQ_PSN + 2, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	send_raw(&h, IB_OP_FETCH_ADD, h.s.qp->qp_num, RQ_PSN + 3, &atm,
		 sizeof(atm), NULL, 0, 0);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_ATOMIC_ACK);
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN + 2, va(&h, 0), h.mr->rkey,
		   100, data, 100);
	expect_nak(&h, RQ_PSN + 2, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_DUP_REQ), 3);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	assert_untouched(&h, 100, 200);
	hostile_close(&h);
}
END_TEST

START_TEST(test_garbage_dropped)
{
	struct hostile h;
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(ROCE_V2_UDP_PORT) };
	uint8_t junk[5] = { 0x0a, 0, 0, 0, 0 };
	uint8_t data[64];
	struct ib_deth deth;

	hostile_open(&h);
	memset(data, 0x5a, sizeof(data));
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	/* Too short for a BTH. */
	sendto(h.fd, junk, sizeof(junk), 0, (struct sockaddr *)&dst,
	       sizeof(dst));
	/* A reserved opcode with a good ICRC. */
	send_raw(&h, 0x18, h.s.qp->qp_num, RQ_PSN, NULL, 0, data, 8, 0);
	/* A UD opcode to an RC QP. */
	deth_set(&deth, 0x11, 5);
	send_raw(&h, IB_OPC_UD | IB_OP_SEND_ONLY, h.s.qp->qp_num, RQ_PSN,
		 &deth, sizeof(deth), data, 8, 0);
	/* A READ request cut short: BTH only. */
	send_raw(&h, IB_OP_READ_REQUEST, h.s.qp->qp_num, RQ_PSN, NULL, 0,
		 NULL, 0, 0);
	/* An ACK with payload. */
	send_raw(&h, IB_OP_ACK, h.s.qp->qp_num, RQ_PSN, "\0\0\0\0", 4, data,
		 8, 0);
	/* A QP that does not exist. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN, va(&h, 0), h.mr->rkey, 64,
		   data, 64);
	/* ... the write above was for our QP; this one is not. */
	send_raw(&h, IB_OP_SEND_ONLY, 0xabcdef, RQ_PSN, NULL, 0, data, 8, 0);
	/* Only the good WRITE is answered. */
	expect_nak(&h, RQ_PSN, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert(memcmp(h.mem + GUARD, data, 64) == 0);
	assert_untouched(&h, 64, MEM);
	/* Flush the progress thread: one more good packet, answered. */
	send_write(&h, IB_OP_WRITE_ONLY, RQ_PSN + 1, va(&h, 0), h.mr->rkey, 0,
		   NULL, 0);
	expect_nak(&h, RQ_PSN + 1, AETH_TYPE_ACK | AETH_CREDIT_INVALID);
	ck_assert_uint_ge(rxe_dev_counter(h.t.dev, RXE_CNT_HDR_ERR), 5);
	ck_assert_uint_eq(rxe_dev_counter(h.t.dev, RXE_CNT_NO_QP), 1);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	hostile_close(&h);
}
END_TEST

/* The peer as a hostile responder to our requester: answers that do not
 * fit what we asked are errors for the WQE (BAD_RESP_ERR) and never land
 * outside the local buffer; answers for PSNs we never sent are ignored. */
/* Our QP's own RDMA request to the raw peer: @len bytes at @off of the
 * buffer, the peer's address @raddr (the peer checks no key). */
static void post_local_rdma(struct hostile *h, uint64_t wr_id,
			    enum rnicpi_wr_opcode opcode, uint32_t off,
			    uint32_t len, uint64_t raddr)
{
	struct rnicpi_sge sge = { va(h, off), len, h->mr->lkey };
	struct rnicpi_send_wr wr;
	const struct rnicpi_send_wr *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = opcode;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = 0x1234;
	ck_assert_ok(h->t.ops->post_send(h->s.qp, &wr, &bad));
}

static void post_local_read(struct hostile *h, uint64_t wr_id)
{
	post_local_rdma(h, wr_id, RNICPI_WR_RDMA_READ, 100, 100, 0x10000);
}

/*
 * A READ's response lost, and the ACKs of the WRITEs behind it, already on
 * their way, arrive one after the other: the first says the response was
 * lost and the requester goes back to the READ; the others say nothing
 * new and must not each go back again, spending the retry count (2 here)
 * in a microsecond: the loss of one response on a lossy link ended in a
 * retry-exceeded error (rxe-faults lossy, about 1 run in 60 under load).
 * Then the resent READ is answered and everything completes.
 */
START_TEST(test_stale_acks_after_lost_read_response)
{
	const struct rxe_t_conn_opts o = {
		.mtu = RNICPI_MTU_1024, .min_rnr_timer = 14,
		.retry_cnt = 2, .timeout = 20,	/* 4.3 s: no timer here */
	};
	uint8_t aeth[4] = { AETH_TYPE_ACK | AETH_CREDIT_INVALID, 0, 0, 1 };
	uint8_t data[100];
	struct hostile h;
	struct rnicpi_wc wc;
	struct resp r;
	uint32_t psn;
	int reads = 0;

	hostile_open_opts(&h, &o);
	memset(data, 0x3c, sizeof(data));
	post_local_read(&h, 1);				/* PSN 5000 */
	/* PSN 5001-5003. Lengths that grow: no two go out as one UDP GSO
	 * send, whose segments' IPv4 IDs our ICRC check does not know. */
	for (uint64_t id = 2; id <= 4; id++)
		post_local_rdma(&h, id, RNICPI_WR_RDMA_WRITE, 300,
				8 * (uint32_t)id, 0x20000);
	for (psn = 5000; psn <= 5003; psn++) {
		recv_resp(&h, &r);
		ck_assert_uint_eq(r.psn, psn);
	}
	/* The READ's response is lost; the three WRITEs' ACKs come. */
	for (psn = 5001; psn <= 5003; psn++)
		send_raw(&h, IB_OP_ACK, h.s.qp->qp_num, psn, aeth, 4, NULL, 0,
			 0);
	/* The requester goes back to the READ once. */
	do {
		recv_resp(&h, &r);
		if (r.opcode == IB_OP_READ_REQUEST) {
			ck_assert_uint_eq(r.psn, 5000);
			reads++;
		}
	} while (r.psn != 5003);
	ck_assert_int_eq(reads, 1);
	send_raw(&h, IB_OP_READ_RESP_ONLY, h.s.qp->qp_num, 5000, aeth, 4,
		 data, 100, 0);
	send_raw(&h, IB_OP_ACK, h.s.qp->qp_num, 5003, aeth, 4, NULL, 0, 0);
	for (uint64_t id = 1; id <= 4; id++) {
		ck_assert_ok(rxe_t_wait_wc(&h.t, h.s.scq, &wc));
		ck_assert_msg(wc.wr_id == id && wc.status == RNICPI_WC_SUCCESS,
			      "completion %" PRIu64 ": wr_id %" PRIu64
			      " status %d", id, wc.wr_id, wc.status);
	}
	ck_assert(memcmp(h.mem + GUARD + 100, data, 100) == 0);
	assert_untouched(&h, 0, 100);
	assert_untouched(&h, 200, 300);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_RTS);
	hostile_close(&h);
}
END_TEST

START_TEST(test_hostile_responses)
{
	struct hostile h;
	struct resp r;
	struct rnicpi_wc wc;
	uint8_t data[200], aeth[4] = { 0x1f, 0, 0, 1 };

	memset(data, 0x5a, sizeof(data));
	/* A READ response longer than the READ. */
	hostile_open(&h);
	post_local_read(&h, 1);
	recv_resp(&h, &r);
	ck_assert_uint_eq(r.opcode, IB_OP_READ_REQUEST);
	ck_assert_uint_eq(r.psn, 5000);
	send_raw(&h, IB_OP_READ_RESP_ONLY, h.s.qp->qp_num, 5000, aeth, 4,
		 data, 200, 0);
	ck_assert_ok(rxe_t_wait_wc(&h.t, h.s.scq, &wc));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_BAD_RESP_ERR);
	assert_untouched(&h, 0, MEM);
	ck_assert_int_eq(qp_state(&h), RNICPI_QPS_ERR);
	hostile_close(&h);

	/* An ACK and an atomic ACK for PSNs never sent are ignored; then
	 * the right response lands where it should. */
	hostile_open(&h);
	post_local_read(&h, 2);
	recv_resp(&h, &r);
	send_raw(&h, IB_OP_ACK, h.s.qp->qp_num, 9000, aeth, 4, NULL, 0, 0);
	send_raw(&h, IB_OP_READ_RESP_ONLY, h.s.qp->qp_num, 5001, aeth, 4,
		 data, 100, 0);
	send_raw(&h, IB_OP_READ_RESP_ONLY, h.s.qp->qp_num, 5000, aeth, 4,
		 data, 100, 0);
	ck_assert_ok(rxe_t_wait_wc(&h.t, h.s.scq, &wc));
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, RNICPI_WC_SUCCESS);
	ck_assert(memcmp(h.mem + GUARD + 100, data, 100) == 0);
	assert_untouched(&h, 0, 100);
	assert_untouched(&h, 200, MEM);
	hostile_close(&h);

	/* A NAK remote access error: the WQE fails with REM_ACCESS_ERR. */
	hostile_open(&h);
	post_local_read(&h, 3);
	recv_resp(&h, &r);
	aeth[0] = AETH_TYPE_NAK | AETH_NAK_REM_ACCESS_ERR;
	send_raw(&h, IB_OP_ACK, h.s.qp->qp_num, 5000, aeth, 4, NULL, 0, 0);
	ck_assert_ok(rxe_t_wait_wc(&h.t, h.s.scq, &wc));
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(wc.status, RNICPI_WC_REM_ACCESS_ERR);
	assert_untouched(&h, 0, MEM);
	hostile_close(&h);
}
END_TEST

/* Our own requester meeting a bad R_Key: an error completion on its side,
 * an async event on the responder's, the QPs in ERR. */
START_TEST(test_requester_error_completion)
{
	struct rxe_t_dev t;
	struct rxe_t_side a, b;
	uint8_t *src = g_malloc0(256), *dst = g_malloc0(256 + 2 * GUARD);
	struct rnicpi_mr *ms, *md;
	struct rnicpi_sge sge;
	struct rnicpi_send_wr wr;
	const struct rnicpi_send_wr *bad;
	struct rnicpi_wc wc;
	unsigned int i;

	memset(dst, 0xee, 256 + 2 * GUARD);
	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &a, RNICPI_QPT_RC, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &b, RNICPI_QPT_RC, NULL));
	ck_assert_ok(rxe_t_connect(&t, &a, &b, NULL));
	ck_assert_ok(t.ops->reg_mr(t.pd, src, 256, (uint64_t)(uintptr_t)src,
				   RNICPI_ACCESS_LOCAL_WRITE, &ms));
	ck_assert_ok(t.ops->reg_mr(t.pd, dst + GUARD, 256,
				   (uint64_t)(uintptr_t)(dst + GUARD),
				   RNICPI_ACCESS_LOCAL_WRITE |
				   RNICPI_ACCESS_REMOTE_WRITE, &md));
	sge.addr = (uint64_t)(uintptr_t)src;
	sge.length = 256;
	sge.lkey = ms->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_RDMA_WRITE;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)(dst + GUARD + 128);
	wr.wr.rdma.rkey = md->rkey;
	ck_assert_ok(t.ops->post_send(a.qp, &wr, &bad));
	wr.wr_id = 2;
	ck_assert_ok(t.ops->post_send(a.qp, &wr, &bad));
	ck_assert_ok(rxe_t_wait_wc(&t, a.scq, &wc));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.status, RNICPI_WC_REM_ACCESS_ERR);
	ck_assert_ok(rxe_t_wait_wc(&t, a.scq, &wc));
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	for (i = 0; i < 256 + 2 * GUARD; i++)
		ck_assert_uint_eq(dst[i], 0xee);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_QP_ACCESS_ERR, b.qp));
	rxe_t_side_destroy(&t, &a);
	rxe_t_side_destroy(&t, &b);
	ck_assert_ok(t.ops->dereg_mr(ms));
	ck_assert_ok(t.ops->dereg_mr(md));
	rxe_t_dev_close(&t);
	g_free(src);
	g_free(dst);
}
END_TEST

Suite *suite_rxe_hostile(void)
{
	Suite *s = suite_create("rxe-hostile");
	TCase *tc = tcase_create("raw");

	/* Payloads copied from the receive buffer (direct=0), which the
	 * checks below were written for; the "direct" case peeks at every
	 * datagram (direct=2); the default (direct=1) is one of the two
	 * for each datagram. */
	tcase_add_checked_fixture(tc, rxe_t_copy_setup, rxe_t_copy_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_write_ack_and_duplicate);
	tcase_add_loop_test(tc, test_access_errors, 0, 6);
	tcase_add_test(tc, test_multi_packet_write_out_of_bounds);
	tcase_add_test(tc, test_bad_icrc);
	tcase_add_test(tc, test_bad_opcode_sequence);
	tcase_add_test(tc, test_psn_out_of_window);
	tcase_add_test(tc, test_rnr_nak);
	tcase_add_test(tc, test_read_and_atomic_replay);
	tcase_add_test(tc, test_duplicate_ack_before_read);
	tcase_add_test(tc, test_garbage_dropped);
	tcase_add_test(tc, test_requester_error_completion);
	tcase_add_test(tc, test_hostile_responses);
	tcase_add_test(tc, test_stale_acks_after_lost_read_response);
	tcase_add_test(tc, test_direct_write_stream);
	tcase_add_test(tc, test_gro_run_bad_segment);
	tcase_add_test(tc, test_gro_run_past_write);
	suite_add_tcase(s, tc);

	/* The same hostile peer against a device that reads payloads
	 * straight into place: every check still comes first. */
	tc = tcase_create("direct");
	tcase_add_checked_fixture(tc, rxe_t_direct_setup,
				  rxe_t_direct_teardown);
	tcase_add_test(tc, test_write_ack_and_duplicate);
	tcase_add_loop_test(tc, test_access_errors, 0, 6);
	tcase_add_test(tc, test_multi_packet_write_out_of_bounds);
	tcase_add_test(tc, test_bad_icrc);
	tcase_add_test(tc, test_direct_write_stream);
	tcase_add_test(tc, test_gro_run_bad_segment);
	tcase_add_test(tc, test_gro_run_past_write);
	tcase_add_test(tc, test_bad_opcode_sequence);
	tcase_add_test(tc, test_psn_out_of_window);
	tcase_add_test(tc, test_read_and_atomic_replay);
	tcase_add_test(tc, test_duplicate_ack_before_read);
	tcase_add_test(tc, test_hostile_responses);
	tcase_add_test(tc, test_stale_acks_after_lost_read_response);
	suite_add_tcase(s, tc);
	return s;
}
