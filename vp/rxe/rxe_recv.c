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
#include <string.h>

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

/* A17.3.3: check the ICRC; for IPv4 with the peer's IP ID unknown. */
static bool icrc_ok(struct rxe_dev *dev, const struct rxe_icrc_addr *a,
		    const uint8_t *buf, uint32_t len)
{
	uint32_t want = rxe_icrc_get(buf + len - IB_ICRC_BYTES);
	uint32_t have = rxe_icrc_packet(a, buf, len - IB_ICRC_BYTES);
	uint16_t id_xor;
	bool df_xor;

	if (want == have)
		return true;
	if (a->family == AF_INET &&
	    rxe_icrc_solve_ipv4_id(have, want, len, &id_xor, &df_xor)) {
		rxe_count(dev, RXE_CNT_ICRC_ID_SOLVED);
		rxe_dev_dbg(dev, "ICRC: peer's IPv4 ID 0x%04x, DF %s",
			    a->ip_id ^ id_xor, df_xor ? "clear" : "set");
		return true;
	}
	return false;
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

void rxe_rcv(struct rxe_dev *dev, uint8_t *buf, uint32_t len,
	     const struct sockaddr_storage *src, int gid_index,
	     uint16_t ip_id_hint)
{
	struct rxe_icrc_addr a;
	struct rxe_pkt pkt;
	struct rxe_qp *qp;
	unsigned int pad;
	bool rc_op;

	if (len < IB_BTH_BYTES + IB_ICRC_BYTES) {
		rxe_dev_dbg(dev, "drop: %u-byte datagram, too short", len);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return;
	}
	pthread_mutex_lock(&dev->lock);
	if (!dev->gids[gid_index].valid ||
	    dev->gids[gid_index].addr.ss_family != src->ss_family) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	icrc_addr_rx(dev, src, gid_index, &a);
	pthread_mutex_unlock(&dev->lock);
	if (a.family == AF_INET)
		a.ip_id = ip_id_hint;
	if (!icrc_ok(dev, &a, buf, len)) {
		rxe_dev_dbg(dev, "drop: bad ICRC (opcode 0x%02x, %u bytes)",
			    buf[0], len);
		rxe_count(dev, RXE_CNT_ICRC_ERR);
		return;
	}

	memset(&pkt, 0, sizeof(pkt));
	pkt.dev = dev;
	pkt.hdr = buf;
	pkt.len = len - IB_ICRC_BYTES;
	pkt.opcode = bth_opcode(pkt_bth(&pkt));
	pkt.op = ib_opcode(pkt.opcode);
	/* IBA 9.6.1.1: unknown opcodes and transport versions are dropped. */
	if (!pkt.op || bth_tver(pkt_bth(&pkt)) != 0) {
		rxe_dev_dbg(dev, "drop: opcode 0x%02x / TVer %u not supported",
			    pkt.opcode, bth_tver(pkt_bth(&pkt)));
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return;
	}
	pad = bth_pad(pkt_bth(&pkt));
	if (pkt.len < (uint32_t)pkt.op->hdr_len + pad) {
		rxe_dev_dbg(dev, "drop: %s of %u bytes, headers need %u + pad "
			    "%u", pkt.op->name, pkt.len, pkt.op->hdr_len, pad);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return;
	}
	pkt.payload = buf + pkt.op->hdr_len;
	pkt.paylen = pkt.len - pkt.op->hdr_len - pad;
	if (pkt.paylen && !(pkt.op->flags & IB_F_PAYLOAD)) {
		rxe_dev_dbg(dev, "drop: %s carries %u payload bytes",
			    pkt.op->name, pkt.paylen);
		rxe_count(dev, RXE_CNT_HDR_ERR);
		return;
	}
	pkt.psn = bth_psn(pkt_bth(&pkt));
	pkt.qpn = bth_qpn(pkt_bth(&pkt));
	pkt.src = *src;
	pkt.gid_index = gid_index;

	if (!pkey_ok(bth_pkey(pkt_bth(&pkt)))) {
		rxe_dev_dbg(dev, "drop: P_Key 0x%04x not in the table",
			    bth_pkey(pkt_bth(&pkt)));
		rxe_count(dev, RXE_CNT_PKEY_ERR);
		return;
	}
	qp = rxe_qp_lookup(dev, pkt.qpn);
	if (!qp) {
		rxe_dev_dbg(dev, "drop: %s for unknown QP %u", pkt.op->name,
			    pkt.qpn);
		rxe_count(dev, RXE_CNT_NO_QP);
		return;
	}
	rc_op = (pkt.opcode & IB_OPC_TRANSPORT_MASK) == IB_OPC_RC;

	rxe_qp_lock(qp);
	if (qp->type == RNICPI_QPT_RC) {
		/* IBA 9.6.1.5.1: the QP's transport must match, and on a
		 * connected QP the packet must come from the peer. */
		if (!rc_op || qp->state < RNICPI_QPS_RTR ||
		    qp->state == RNICPI_QPS_ERR ||
		    !same_addr(&qp->av.dst, src)) {
			rxe_qp_dbg(qp, "drop: %s (state %s)", pkt.op->name,
				   rxe_qp_state_name(qp->state));
			rxe_count(dev, RXE_CNT_HDR_ERR);
		} else if (pkt.op->flags & IB_F_RESP) {
			rxe_comp_rcv(qp, &pkt);
		} else {
			rxe_resp_rcv(qp, &pkt);
		}
	} else {
		if ((pkt.opcode & IB_OPC_TRANSPORT_MASK) != IB_OPC_UD ||
		    qp->state < RNICPI_QPS_RTR || qp->state == RNICPI_QPS_ERR) {
			rxe_qp_dbg(qp, "drop: %s (state %s)", pkt.op->name,
				   rxe_qp_state_name(qp->state));
			rxe_count(dev, RXE_CNT_HDR_ERR);
		} else {
			build_grh(&pkt, &a, pkt.len + IB_ICRC_BYTES + 8);
			rxe_resp_ud(qp, &pkt);
		}
	}
	rxe_qp_unlock(qp);
	rxe_qp_put(qp);
}
