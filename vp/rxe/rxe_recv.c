/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE receive: every check a packet must pass before a role sees it
 * (IBA 9.6 "packet transport header validation", annex A17.3.3 ICRC), and
 * the dispatch to the completer (responses) or the responder (requests).
 * Everything from the wire is hostile: lengths and fields are checked
 * against the opcode table before any header is read.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>

#include "vp/rxe/rxe.h"

static void icrc_addr_rx(struct rxe_dev *dev,
			 const struct sockaddr_storage *src, int gid_index,
			 struct rxe_icrc_addr *a)
{
	const struct sockaddr_storage *dst = &dev->gids[gid_index].addr;

	memset(a, 0, sizeof(*a));
	a->family = src->ss_family;
	a->dport = ROCE_V2_UDP_PORT;
	a->ip_id = 0;
	a->df = true;
	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src;

		memcpy(a->saddr, &s->sin_addr, 4);
		memcpy(a->daddr, &((const struct sockaddr_in *)dst)->sin_addr,
		       4);
		a->sport = ntohs(s->sin_port);
	} else {
		const struct sockaddr_in6 *s = (const void *)src;

		memcpy(a->saddr, &s->sin6_addr, 16);
		memcpy(a->daddr, &((const struct sockaddr_in6 *)dst)->sin6_addr,
		       16);
		a->sport = ntohs(s->sin6_port);
	}
}

/* A17.3.3: does @have, the ICRC computed over a packet of @len bytes
 * (its ICRC included), match @want, the one it carries? For IPv4 the
 * peer's IP ID is not known: solve for it. */
static bool icrc_match(struct rxe_dev *dev, const struct rxe_icrc_addr *a,
		       uint32_t have, uint32_t want, uint32_t len,
		       uint16_t *ip_id)
{
	uint16_t id_xor;
	bool df_xor;

	*ip_id = a->ip_id;
	if (want == have)
		return true;
	if (a->family == AF_INET &&
	    rxe_icrc_solve_ipv4_id(have, want, len, &id_xor, &df_xor)) {
		*ip_id = a->ip_id ^ id_xor;
		rxe_count(dev, RXE_CNT_ICRC_ID_SOLVED);
		rxe_dev_dbg(dev, "ICRC: peer's IPv4 ID 0x%04x, DF %s",
			    a->ip_id ^ id_xor, df_xor ? "clear" : "set");
		return true;
	}
	return false;
}

static bool icrc_ok(struct rxe_dev *dev, const struct rxe_icrc_addr *a,
		    const uint8_t *buf, uint32_t len)
{
	uint16_t id;

	return icrc_match(dev, a,
			  rxe_icrc_packet(a, buf, len - IB_ICRC_BYTES),
			  rxe_icrc_get(buf + len - IB_ICRC_BYTES), len, &id);
}

/* The 40 bytes a UD receive buffer starts with (IBA 11.4.1.2): RoCEv2 over
 * IPv4 puts an IPv4 header, with a valid checksum, in the last 20 so that
 * consumers (ib_core's ib_get_rdma_header_version) can tell the two kinds
 * apart; over IPv6 the GRH is the IPv6 header. */
static void build_grh(struct rxe_pkt *pkt, const struct rxe_icrc_addr *a,
		      uint32_t udp_len)
{
	uint8_t *g = pkt->grh.b;

	memset(g, 0, sizeof(pkt->grh));
	if (a->family == AF_INET) {
		uint8_t *ip = g + 20;
		uint32_t sum = 0;
		int i;

		ip[0] = 0x45;
		ib_put16(ip + 2, (uint16_t)(20 + udp_len));
		ib_put16(ip + 6, 0x4000);
		ip[8] = 64;
		ip[9] = 17;
		memcpy(ip + 12, a->saddr, 4);
		memcpy(ip + 16, a->daddr, 4);
		for (i = 0; i < 20; i += 2)
			sum += ib_get16(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ib_put16(ip + 10, (uint16_t)~sum);
	} else {
		g[0] = 0x60;
		ib_put16(g + 4, (uint16_t)udp_len);
		g[6] = 17;
		g[7] = 64;
		memcpy(g + 8, a->saddr, 16);
		memcpy(g + 24, a->daddr, 16);
	}
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* IBA 10.9: P_Key match on the low 15 bits, and at least one
 * side a full member. Our table holds the default full-member key. */
static bool pkey_ok(uint16_t pkey)
{
	return (pkey & 0x7fff) == (IB_DEFAULT_PKEY & 0x7fff);
}

/* The ICRC's view of the addresses, from the GID the datagram came in
 * on; false when that GID went away or is of the other family. */
static bool rcv_addr(struct rxe_dev *dev, const struct sockaddr_storage *src,
		     int gid_index, struct rxe_icrc_addr *a)
{
	bool ok;

	pthread_mutex_lock(&dev->lock);
	ok = dev->gids[gid_index].valid &&
	     dev->gids[gid_index].addr.ss_family == src->ss_family;
	if (ok)
		icrc_addr_rx(dev, src, gid_index, a);
	pthread_mutex_unlock(&dev->lock);
	return ok;
}

/* The header checks of IBA 9.6 on a datagram of @len bytes (ICRC
 * included) whose headers @buf holds; fills @pkt, its payload at @buf
 * after the headers. @quiet: a first look, the full one counts. */
static bool rcv_parse(struct rxe_dev *dev, struct rxe_pkt *pkt, uint8_t *buf,
		      uint32_t len, bool quiet)
{
	unsigned int pad;

	memset(pkt, 0, sizeof(*pkt));
	pkt->dev = dev;
	pkt->hdr = buf;
	pkt->len = len - IB_ICRC_BYTES;
	pkt->opcode = bth_opcode(pkt_bth(pkt));
	pkt->op = ib_opcode(pkt->opcode);
	/* IBA 9.6.1.1: unknown opcodes and transport versions are dropped. */
	if (!pkt->op || bth_tver(pkt_bth(pkt)) != 0) {
		if (quiet)
			return false;
		rxe_dev_dbg(dev, "drop: opcode 0x%02x / TVer %u not supported",
			    pkt->opcode, bth_tver(pkt_bth(pkt)));
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return false;
	}
	pad = bth_pad(pkt_bth(pkt));
	if (pkt->len < (uint32_t)pkt->op->hdr_len + pad) {
		if (quiet)
			return false;
		rxe_dev_dbg(dev, "drop: %s of %u bytes, headers need %u + pad "
			    "%u", pkt->op->name, pkt->len, pkt->op->hdr_len,
			    pad);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return false;
	}
	pkt->payload = buf + pkt->op->hdr_len;
	pkt->paylen = pkt->len - pkt->op->hdr_len - pad;
	if (pkt->paylen && !(pkt->op->flags & IB_F_PAYLOAD)) {
		if (quiet)
			return false;
		rxe_dev_dbg(dev, "drop: %s carries %u payload bytes",
			    pkt->op->name, pkt->paylen);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return false;
	}
	pkt->psn = bth_psn(pkt_bth(pkt));
	pkt->qpn = bth_qpn(pkt_bth(pkt));
	if (!pkey_ok(bth_pkey(pkt_bth(pkt)))) {
		if (quiet)
			return false;
		rxe_dev_dbg(dev, "drop: P_Key 0x%04x not in the table",
			    bth_pkey(pkt_bth(pkt)));
		rxe_count(dev, RXE_CNT_PKEY_ERR);
		return false;
	}
	return true;
}

/* IBA 9.6.1.5.1: the QP's transport must match, and on a connected QP
 * the packet must come from the peer (under qp->lock). */
static bool rcv_qp_ok(struct rxe_qp *qp, const struct rxe_pkt *pkt)
{
	bool rc_op = (pkt->opcode & IB_OPC_TRANSPORT_MASK) == IB_OPC_RC;

	if (qp->state < RNICPI_QPS_RTR || qp->state == RNICPI_QPS_ERR)
		return false;
	if (qp->type == RNICPI_QPT_RC)
		return rc_op && same_addr(&qp->av.dst, &pkt->src);
	return (pkt->opcode & IB_OPC_TRANSPORT_MASK) == IB_OPC_UD;
}

/* Hand a checked packet to its role (under qp->lock). */
static void rcv_dispatch(struct rxe_qp *qp, struct rxe_pkt *pkt,
			 const struct rxe_icrc_addr *a)
{
	if (!rcv_qp_ok(qp, pkt)) {
		rxe_qp_dbg(qp, "drop: %s (state %s)", pkt->op->name,
			   rnicpi_qp_state_name(qp->state));
		rxe_count(qp->dev, RXE_CNT_HDR_ERR);
	} else if (qp->type != RNICPI_QPT_RC) {
		build_grh(pkt, a, pkt->len + IB_ICRC_BYTES + 8);
		rxe_resp_ud(qp, pkt);
	} else if (pkt->op->flags & IB_F_RESP) {
		rxe_comp_rcv(qp, pkt);
	} else {
		rxe_resp_rcv(qp, pkt);
	}
}

void rxe_rcv(struct rxe_dev *dev, uint8_t *buf, uint32_t len,
	     const struct sockaddr_storage *src, int gid_index,
	     uint16_t ip_id_hint)
{
	struct rxe_icrc_addr a;
	struct rxe_pkt pkt;
	struct rxe_qp *qp;

	if (len < IB_BTH_BYTES + IB_ICRC_BYTES) {
		rxe_dev_dbg(dev, "drop: %u-byte datagram, too short", len);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return;
	}
	if (!rcv_addr(dev, src, gid_index, &a))
		return;
	if (a.family == AF_INET)
		a.ip_id = ip_id_hint;
	if (!icrc_ok(dev, &a, buf, len)) {
		rxe_dev_dbg(dev, "drop: bad ICRC (opcode 0x%02x, %u bytes)",
			    buf[0], len);
		rxe_count(dev, RXE_CNT_ICRC_ERR);
		return;
	}
	if (!rcv_parse(dev, &pkt, buf, len, false))
		return;
	pkt.src = *src;
	pkt.gid_index = gid_index;
	qp = rxe_qp_lookup(dev, pkt.qpn);
	if (!qp) {
		rxe_dev_dbg(dev, "drop: %s for unknown QP %u", pkt.op->name,
			    pkt.qpn);
		rxe_count(dev, RXE_CNT_NO_QP);
		return;
	}
	rxe_qp_lock(qp);
	rcv_dispatch(qp, &pkt, &a);
	rxe_qp_unlock(qp);
	rxe_qp_put(qp);
}

/* ------------------------------------------------------------------ */
/* Direct placement                                                   */
/* ------------------------------------------------------------------ */

/* Longer than any opcode's headers (BTH + RETH + ImmDt is 32 bytes). */
#define RXE_PEEK_BYTES 64

union rxe_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

static void msg_init(struct msghdr *mh, struct sockaddr_storage *src,
		     struct iovec *iov, size_t niov, union rxe_cmsg *cm)
{
	memset(mh, 0, sizeof(*mh));
	mh->msg_name = src;
	mh->msg_namelen = sizeof(*src);
	mh->msg_iov = iov;
	mh->msg_iovlen = niov;
	if (cm) {
		mh->msg_control = cm->buf;
		mh->msg_controllen = sizeof(cm->buf);
	}
}

/* The UDP GRO segment size the kernel reported, 0 if none. */
uint32_t rxe_gro_seg(struct msghdr *mh)
{
	struct cmsghdr *c;
	int size;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&size, CMSG_DATA(c), sizeof(size));
			return size > 0 ? (uint32_t)size : 0;
		}
	return 0;
}

/* The most segments one UDP GRO datagram holds (the kernel's
 * UDP_MAX_SEGMENTS). */
#define RXE_RUN_MAX 64

/* A single packet peeked at (@hdr, @len bytes in all): when it is the one
 * an RC QP expects and every check but the ICRC passes (the same checks
 * the packet meets again below), read it with its payload going straight
 * to the target; otherwise into @bounce, and through rxe_rcv(). The ICRC
 * covers that payload and is checked after it landed, as an RNIC placing
 * cut-through does: a packet that fails it has written only where its
 * R_Key (or receive WQE) allowed, its PSN is not taken, and the
 * requester's retransmission writes the bytes again. True when placed. */
static bool rcv_single(struct rxe_dev *dev, int fd, int gid_index,
		       uint8_t *hdr, uint32_t len,
		       const struct sockaddr_storage *peeked_src,
		       uint8_t *bounce, size_t buf_len)
{
	uint8_t tail[IB_ICRC_BYTES + 3];
	struct sockaddr_storage src = *peeked_src;
	struct rxe_icrc_addr a;
	struct rxe_mr *mr = NULL;
	struct rxe_qp *qp = NULL;
	uint8_t *dst = NULL;
	struct iovec iov[3];
	union rxe_cmsg cm;
	struct rxe_pkt pkt;
	struct msghdr mh;
	unsigned int pad;
	uint16_t ip_id;
	uint32_t crc;
	ssize_t n;

	iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = RXE_PEEK_BYTES };
	if (len <= RXE_PEEK_BYTES || len > buf_len ||
	    !rcv_addr(dev, &src, gid_index, &a) ||
	    !rcv_parse(dev, &pkt, hdr, len, true))
		goto bounce;
	pkt.src = src;
	pkt.gid_index = gid_index;
	qp = rxe_qp_lookup(dev, pkt.qpn);
	if (!qp)
		goto bounce;
	rxe_qp_lock(qp);
	if (qp->type == RNICPI_QPT_RC && rcv_qp_ok(qp, &pkt))
		dst = (pkt.op->flags & IB_F_RESP)
			      ? rxe_comp_place(qp, &pkt, &mr)
			      : rxe_resp_place(qp, &pkt, &mr);
	if (!dst) {
		rxe_qp_unlock(qp);
		rxe_qp_put(qp);
		goto bounce;
	}

	pad = bth_pad(pkt_bth(&pkt));
	iov[0].iov_len = pkt.op->hdr_len;
	iov[1] = (struct iovec){ .iov_base = dst, .iov_len = pkt.paylen };
	iov[2] = (struct iovec){ .iov_base = tail,
				 .iov_len = pad + IB_ICRC_BYTES };
	msg_init(&mh, &src, iov, 3, NULL);
	n = recvmsg(fd, &mh, MSG_DONTWAIT);
	rxe_count(dev, RXE_CNT_RCVD_PKTS);
	if (n != (ssize_t)len || (mh.msg_flags & MSG_TRUNC)) {
		/* Only this thread reads the socket: cannot happen. */
		rxe_dev_warn(dev, "direct receive: %zd bytes, peeked %u", n,
			     len);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		goto out;
	}
	/* A single packet leaves our unconnected socket with IPv4 ID 0;
	 * other peers' IDs are solved for. */
	if (a.family == AF_INET)
		a.ip_id = 0;
	crc = rxe_icrc_begin(&a, len, pkt_bth(&pkt));
	crc = rxe_crc32(crc, hdr + IB_BTH_BYTES,
			pkt.op->hdr_len - IB_BTH_BYTES);
	crc = rxe_crc32(crc, dst, pkt.paylen);
	crc = rxe_crc32(crc, tail, pad);
	if (!icrc_match(dev, &a, crc, rxe_icrc_get(tail + pad), len,
			&ip_id)) {
		rxe_dev_dbg(dev, "drop: bad ICRC (%s, %u bytes, placed)",
			    pkt.op->name, len);
		rxe_count(dev, RXE_CNT_ICRC_ERR);
		goto out;
	}
	rxe_count(dev, RXE_CNT_DIRECT_PKTS);
	pkt.payload = dst;
	rcv_dispatch(qp, &pkt, &a);
out:
	rxe_qp_unlock(qp);
	rxe_mr_put(mr);
	rxe_qp_put(qp);
	return true;

bounce:
	iov[0] = (struct iovec){ .iov_base = bounce, .iov_len = buf_len };
	msg_init(&mh, &src, iov, 1, &cm);
	n = recvmsg(fd, &mh, MSG_DONTWAIT);
	if (n < 0)
		return false;
	if (mh.msg_flags & MSG_TRUNC)
		rxe_count(dev, RXE_CNT_HDR_ERR);
	else
		rxe_rcv_datagram(dev, bounce, (uint32_t)n, rxe_gro_seg(&mh),
				 &src, gid_index, 0);
	return false;
}

/* Where the payload of a run of @want packets shaped like @pkt goes, if
 * it can go there before it is read (under qp->lock). */
static uint8_t *run_place(struct rxe_qp *qp, const struct rxe_pkt *pkt,
			  uint32_t want, uint32_t *n, struct rxe_mr **mr)
{
	if (qp->type != RNICPI_QPT_RC || !rcv_qp_ok(qp, pkt) ||
	    pkt->op->hdr_len != IB_BTH_BYTES || bth_pad(pkt_bth(pkt)))
		return NULL;
	return (pkt->op->flags & IB_F_RESP)
		       ? rxe_comp_place_run(qp, pkt, want, n, mr)
		       : rxe_resp_place_run(qp, pkt, want, n, mr);
}

/* Segment @i of a run read in pieces (its BTH, its payload in place, its
 * ICRC): is it the packet the run promised, whole and unchanged? If not,
 * it goes through rxe_rcv(), which says why. */
static bool run_segment_ok(struct rxe_dev *dev, const struct rxe_pkt *first,
			   struct rxe_pkt *pkt, const uint8_t *bth,
			   const uint8_t *payload, const uint8_t *icrc,
			   uint32_t i, uint32_t seg, struct rxe_icrc_addr *a)
{
	uint16_t ip_id;
	uint32_t crc;

	if (!rcv_parse(dev, pkt, (uint8_t *)bth, seg, true) ||
	    pkt->op != first->op || pkt->qpn != first->qpn ||
	    pkt->psn != psn_add(first->psn, i) || bth_pad(pkt_bth(pkt)) ||
	    pkt->paylen != first->paylen)
		return false;
	/* Segment k of a run a peer sent with GSO carries IPv4 ID k. */
	if (a->family == AF_INET)
		a->ip_id = (uint16_t)i;
	crc = rxe_icrc_begin(a, seg, pkt_bth(pkt));
	crc = rxe_crc32(crc, payload, pkt->paylen);
	/* A mismatch is counted and logged where the segment goes next. */
	if (!icrc_match(dev, a, crc, rxe_icrc_get(icrc), seg, &ip_id))
		return false;
	pkt->payload = (uint8_t *)payload;
	pkt->src = first->src;
	pkt->gid_index = first->gid_index;
	return true;
}

/*
 * A UDP GRO datagram (@hdr peeked, @len bytes, @seg per segment): when
 * its first packet is the one an RC QP expects next, a MIDDLE of a WRITE
 * or of a READ's responses (not of a SEND: rxe_resp_place_run()), and
 * the checks rxe_resp_rcv() and
 * rxe_comp_rcv() make pass for the whole range the run would fill, read
 * it with each segment's BTH and ICRC going to small buffers and each
 * payload straight into its place, the next one after the other: one
 * system call and no copy for up to 64 packets.
 *
 * As for a single packet, the ICRC is checked after the bytes landed. A
 * segment that is not what the run promised (another opcode or PSN, a
 * bad ICRC) has written only inside the range the WRITE's R_Key (or the
 * READ's sink) allowed for this message, and no later packet of it was
 * taken; it
 * and the segments after it are put back together in @scratch and go
 * through rxe_rcv() like any packet (a PSN sequence NAK, most likely),
 * and the requester's retransmission writes those bytes again. Segments
 * past the run (a shorter last one, or more than the message has room
 * for) are read into @bounce and go through rxe_rcv() too.
 *
 * True when read, false when it cannot be placed (nothing was read).
 */
static bool rcv_run(struct rxe_dev *dev, int fd, int gid_index, uint8_t *hdr,
		    uint32_t len, uint32_t seg,
		    const struct sockaddr_storage *peeked_src, uint8_t *bounce,
		    uint8_t *scratch, size_t buf_len)
{
	uint8_t bths[RXE_RUN_MAX][IB_BTH_BYTES];
	uint8_t icrcs[RXE_RUN_MAX][IB_ICRC_BYTES];
	struct iovec iov[3 * RXE_RUN_MAX + 1];
	uint32_t nfull, k = 0, i, ok, tail, bad_len = 0;
	struct sockaddr_storage src = *peeked_src;
	struct rxe_icrc_addr a;
	struct rxe_mr *mr = NULL;
	struct rxe_pkt first;
	struct rxe_qp *qp;
	struct msghdr mh;
	uint8_t *dst;
	ssize_t n;

	if (len > buf_len || seg <= RXE_PEEK_BYTES ||
	    !rcv_addr(dev, &src, gid_index, &a) ||
	    !rcv_parse(dev, &first, hdr, seg, true))
		return false;
	first.src = src;
	first.gid_index = gid_index;
	nfull = len / seg;
	if (nfull > RXE_RUN_MAX)
		nfull = RXE_RUN_MAX;
	qp = rxe_qp_lookup(dev, first.qpn);
	if (!qp)
		return false;
	rxe_qp_lock(qp);
	dst = run_place(qp, &first, nfull, &k, &mr);
	if (!dst) {
		rxe_qp_unlock(qp);
		rxe_qp_put(qp);
		return false;
	}

	for (i = 0; i < k; i++) {
		iov[3 * i] = (struct iovec){ .iov_base = bths[i],
					     .iov_len = IB_BTH_BYTES };
		iov[3 * i + 1] = (struct iovec){
			.iov_base = dst + (size_t)i * first.paylen,
			.iov_len = first.paylen };
		iov[3 * i + 2] = (struct iovec){ .iov_base = icrcs[i],
						 .iov_len = IB_ICRC_BYTES };
	}
	tail = len - k * seg;
	iov[3 * k] = (struct iovec){ .iov_base = bounce, .iov_len = tail };
	msg_init(&mh, &src, iov, 3 * k + (tail ? 1 : 0), NULL);
	n = recvmsg(fd, &mh, MSG_DONTWAIT);
	if (n != (ssize_t)len || (mh.msg_flags & MSG_TRUNC)) {
		/* Only this thread reads the socket: cannot happen. */
		rxe_dev_warn(dev, "run receive: %zd bytes, peeked %u", n, len);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		rxe_qp_unlock(qp);
		rxe_mr_put(mr);
		rxe_qp_put(qp);
		return true;
	}
	rxe_count(dev, RXE_CNT_GRO_BATCHES);
	for (ok = 0; ok < k; ok++) {
		struct rxe_pkt pkt;

		if (!run_segment_ok(dev, &first, &pkt, bths[ok],
				    dst + (size_t)ok * first.paylen,
				    icrcs[ok], ok, seg, &a))
			break;
		rxe_count(dev, RXE_CNT_RCVD_PKTS);
		rxe_count(dev, RXE_CNT_DIRECT_PKTS);
		rcv_dispatch(qp, &pkt, &a);
	}
	/* What the run did not deliver, put back together while the
	 * region is still held, for the ordinary path. */
	for (i = ok; i < k; i++) {
		uint8_t *p = scratch + (size_t)(i - ok) * seg;

		memcpy(p, bths[i], IB_BTH_BYTES);
		memcpy(p + IB_BTH_BYTES, dst + (size_t)i * first.paylen,
		       first.paylen);
		memcpy(p + IB_BTH_BYTES + first.paylen, icrcs[i],
		       IB_ICRC_BYTES);
		bad_len += seg;
	}
	rxe_qp_unlock(qp);
	rxe_mr_put(mr);
	rxe_qp_put(qp);
	if (bad_len)
		rxe_rcv_datagram(dev, scratch, bad_len, seg, &src, gid_index,
				 (uint16_t)ok);
	if (tail)
		rxe_rcv_datagram(dev, bounce, tail, seg, &src, gid_index,
				 (uint16_t)k);
	return true;
}

int rxe_rcv_peeked(struct rxe_dev *dev, int fd, int gid_index,
		   uint8_t *bounce, uint8_t *scratch, size_t buf_len,
		   bool *placed)
{
	uint8_t hdr[RXE_PEEK_BYTES];
	struct sockaddr_storage src;
	union rxe_cmsg cm;
	struct iovec iov;
	struct msghdr mh;
	uint32_t len, seg;
	ssize_t n;

	iov = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	msg_init(&mh, &src, &iov, 1, &cm);
	n = recvmsg(fd, &mh, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0)
		return 0;
	len = (uint32_t)n;
	seg = rxe_gro_seg(&mh);
	if (!seg || seg >= len) {
		*placed = rcv_single(dev, fd, gid_index, hdr, len, &src,
				     bounce, buf_len);
		return 1;
	}
	*placed = rcv_run(dev, fd, gid_index, hdr, len, seg, &src, bounce,
			  scratch, buf_len);
	return *placed ? 1 : -1;
}
