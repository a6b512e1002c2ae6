/* SPDX-License-Identifier: MIT */
/*
 * cm_ib_gsi.c - the general services interface of each RoCE/IB device for
 * the InfiniBand CM: QP1 (IBA 13.5.1), its receive and send buffers in one
 * registered area, an address handle per MAD sent (RoCEv2: the GIDs are
 * the IP addresses, IPv4 ones mapped), and the completion source on the
 * manager's thread that hands each received MAD to cm_ib.c.
 *
 * Receive buffers are as large as the biggest path MTU: a datagram that
 * does not fit would be a local length error, which puts QP1 in the error
 * state (IBA 11.6.2); anything that is not a 256-byte CM MAD is dropped
 * after it landed.
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cm/cm_ib.h"

/* Receive buffers posted on QP1. UD has no flow control: a MAD that finds
 * none is dropped, and the CM's retries of a burst of DREQs or REQs come
 * back as a burst again. 64 lost some of 2000 DREQs sent at once (their
 * connections never ended at the passive side); 512 is what Linux's MAD
 * layer posts (ib_mad recv_queue_size). */
#define GSI_NRECV 512u
#define GSI_NSEND 64u
/* MADs waiting for a send slot at most (a burst of REQs, REPs and RTUs
 * of many connections at once); past that a MAD is dropped and left to
 * its sender's retry. */
#define GSI_NPENDING 4096u
#define GSI_RECV_SLOT (IB_GRH_BYTES_CM + 4096u)
#define GSI_SEND_SLOT IB_MAD_BYTES
#define GSI_SEND_TAG (1ull << 63)

struct ib_port {
	struct cm *cm;
	struct ual_device *dev;		/* reference */
	struct ual_pd *pd;
	struct ual_cq *cq;
	struct ual_qp *qp;
	struct ual_mr *mr;
	uint8_t *buf;
	GSource *src;
	GMutex lock;			/* send slots, pending */
	uint64_t send_busy;		/* bit per send slot */
	struct ual_ah *ah[GSI_NSEND];
	GQueue pending;			/* struct gsi_pending, oldest first */
	bool closing;			/* ib_port_free: post nothing more */
	uint64_t guid;			/* host order */
	enum rnicpi_mtu mtu;
	uint32_t gid_tbl_len;
	char prefix[CM_PREFIX_MAX];
};

/* A MAD that found every send slot busy, with its address handle. */
struct gsi_pending {
	struct ib_mad mad;
	struct ib_dest dst;
	struct ual_ah *ah;
};

static uint8_t *recv_slot(struct ib_port *p, unsigned int i)
{
	return p->buf + (size_t)i * GSI_RECV_SLOT;
}

static uint8_t *send_slot(struct ib_port *p, unsigned int i)
{
	return p->buf + (size_t)GSI_NRECV * GSI_RECV_SLOT +
	       (size_t)i * GSI_SEND_SLOT;
}

struct ual_device *ib_port_device(struct ib_port *p)
{
	return p->dev;
}

const char *ib_port_prefix(struct ib_port *p)
{
	return p->prefix;
}

uint64_t ib_port_guid(struct ib_port *p)
{
	return p->guid;
}

enum rnicpi_mtu ib_port_mtu(struct ib_port *p)
{
	return p->mtu;
}

/* ------------------------------------------------------------------ */
/* GIDs and addresses                                                  */
/* ------------------------------------------------------------------ */

void ib_gid_to_sockaddr(const union rnicpi_gid *g, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *in6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	in6->sin6_family = AF_INET6;
	memcpy(&in6->sin6_addr, g->raw, 16);
	cm_sockaddr_unmap(ss);
}

void ib_sockaddr_to_gid(const struct sockaddr *sa, union rnicpi_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (sa->sa_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12],
		       &((const struct sockaddr_in *)(const void *)sa)->sin_addr,
		       4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(g->raw,
		       &((const struct sockaddr_in6 *)(const void *)sa)
				->sin6_addr,
		       16);
	}
}

int ib_port_gid_index(struct ib_port *p, const struct sockaddr *sa)
{
	union rnicpi_gid want;

	ib_sockaddr_to_gid(sa, &want);
	for (uint32_t i = 0; i < p->gid_tbl_len && i < 256; i++) {
		struct rnicpi_gid_entry e;

		if (ual_device_query_gid(p->dev, 1, i, &e))
			continue;
		if (memcmp(e.gid.raw, want.raw, 16) == 0)
			return (int)i;
	}
	return -EADDRNOTAVAIL;
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static int post_recv(struct ib_port *p, unsigned int i)
{
	struct rnicpi_sge sge = {
		.addr = (uintptr_t)recv_slot(p, i),
		.length = GSI_RECV_SLOT,
		.lkey = ual_mr_lkey(p->mr),
	};
	struct rnicpi_recv_wr wr = { .wr_id = i, .sg_list = &sge,
				     .num_sge = 1 };
	const struct rnicpi_recv_wr *bad;

	return ual_qp_post_recv(p->qp, &wr, &bad);
}

/* The GRH of a RoCEv2 receive: an IPv6 header, or over IPv4 the IPv4
 * header in its last 20 bytes (what rxe and the kernel put there). */
static bool grh_parse(const uint8_t *g, struct ib_src *s)
{
	memset(s, 0, sizeof(*s));
	if ((g[0] >> 4) == 6) {
		memcpy(s->sgid.raw, g + 8, 16);
		memcpy(s->dgid.raw, g + 24, 16);
		s->traffic_class = (uint8_t)((g[0] << 4) | (g[1] >> 4));
		s->flow_label = ((uint32_t)(g[1] & 0xf) << 16) |
				((uint32_t)g[2] << 8) | g[3];
		s->hop_limit = g[7];
	} else if ((g[20] >> 4) == 4) {
		s->sgid.raw[10] = s->sgid.raw[11] = 0xff;
		s->dgid.raw[10] = s->dgid.raw[11] = 0xff;
		memcpy(&s->sgid.raw[12], g + 20 + 12, 4);
		memcpy(&s->dgid.raw[12], g + 20 + 16, 4);
		s->traffic_class = g[21];
		s->hop_limit = g[28];
	} else {
		return false;
	}
	ib_gid_to_sockaddr(&s->sgid, &s->from);
	ib_gid_to_sockaddr(&s->dgid, &s->to);
	return true;
}

static void handle_recv(struct ib_port *p, const struct rnicpi_wc *wc)
{
	unsigned int i = (unsigned int)wc->wr_id;
	const uint8_t *data = recv_slot(p, i);
	struct ib_mad mad;
	struct ib_src src;
	bool ok = false;

	if (wc->status != RNICPI_WC_SUCCESS) {
		if (wc->status != RNICPI_WC_WR_FLUSH_ERR)
			g_info("%s QP1 receive failed with status %d",
			       p->prefix, wc->status);
		return;
	}
	if (!(wc->wc_flags & RNICPI_WC_GRH) ||
	    wc->byte_len != IB_GRH_BYTES_CM + IB_MAD_BYTES)
		g_debug("%s QP1: dropped a %u-byte datagram (a CM MAD is %u after the GRH)",
			p->prefix, wc->byte_len, IB_MAD_BYTES);
	else if (!grh_parse(data, &src))
		g_debug("%s QP1: dropped a datagram whose GRH is neither IPv4 nor IPv6",
			p->prefix);
	else
		ok = true;
	if (ok) {
		memcpy(mad.b, data + IB_GRH_BYTES_CM, IB_MAD_BYTES);
		src.src_qp = wc->src_qp;
	}
	if (post_recv(p, i))
		g_warning("%s QP1: cannot post receive slot %u again", p->prefix,
			  i);
	if (ok)
		cm_ib_recv(p->cm, p, &mad, &src);
}

static void send_pending(struct ib_port *p);

static void handle_send(struct ib_port *p, const struct rnicpi_wc *wc)
{
	unsigned int i = (unsigned int)(wc->wr_id & ~GSI_SEND_TAG);
	struct ual_ah *ah;

	if (i >= GSI_NSEND)
		return;
	if (wc->status != RNICPI_WC_SUCCESS)
		g_info("%s QP1 send in slot %u failed with status %d",
		       p->prefix, i, wc->status);
	g_mutex_lock(&p->lock);
	ah = p->ah[i];
	p->ah[i] = NULL;
	p->send_busy &= ~(1ull << i);
	g_mutex_unlock(&p->lock);
	if (ah)
		ual_ah_destroy(ah);
	send_pending(p);
}

static gboolean gsi_cq_ready(struct ual_cq *cq, gpointer data)
{
	struct ib_port *p = data;
	struct rnicpi_wc wc[16];
	bool armed = false;

	for (;;) {
		int n = ual_cq_poll(cq, G_N_ELEMENTS(wc), wc);

		if (n < 0) {
			g_warning("%s QP1 CQ poll: %s", p->prefix,
				  g_strerror(-n));
			break;
		}
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id & GSI_SEND_TAG)
				handle_send(p, &wc[k]);
			else if (wc[k].wr_id < GSI_NRECV)
				handle_recv(p, &wc[k]);
		}
		if (n == (int)G_N_ELEMENTS(wc))
			continue;
		if (armed)
			break;
		/* Arm, then poll once more: a completion between the last
		 * poll and the arm would otherwise wait for the next one. */
		ual_cq_arm(cq, false);
		armed = true;
	}
	return G_SOURCE_CONTINUE;
}

/* ------------------------------------------------------------------ */
/* Send                                                                */
/* ------------------------------------------------------------------ */

/* Post @m to @dst from the free send slot @i with @ah (p->lock held).
 * On failure the slot is free again and @ah is still the caller's. */
static int post_slot(struct ib_port *p, unsigned int i, const struct ib_mad *m,
		     const struct ib_dest *dst, struct ual_ah *ah)
{
	struct rnicpi_sge sge;
	struct rnicpi_send_wr wr;
	const struct rnicpi_send_wr *bad;
	int err;

	p->send_busy |= 1ull << i;
	p->ah[i] = ah;
	memcpy(send_slot(p, i), m->b, IB_MAD_BYTES);
	sge.addr = (uintptr_t)send_slot(p, i);
	sge.length = IB_MAD_BYTES;
	sge.lkey = ual_mr_lkey(p->mr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = GSI_SEND_TAG | i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = RNICPI_WR_SEND;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.wr.ud.ah = ual_ah_rnicpi(ah);
	wr.wr.ud.remote_qpn = dst->dest_qpn ? dst->dest_qpn : IB_GSI_QPN_CM;
	wr.wr.ud.remote_qkey = IB_GSI_QKEY_CM;
	err = ual_qp_post_send(p->qp, &wr, &bad);
	if (err) {
		p->ah[i] = NULL;
		p->send_busy &= ~(1ull << i);
		g_info("%s QP1: post_send: %s", p->prefix, g_strerror(-err));
	}
	return err;
}

/* Send MADs that waited for a slot, oldest first, while slots are free. */
static void send_pending(struct ib_port *p)
{
	for (;;) {
		struct gsi_pending *q = NULL;
		int err = 0;

		g_mutex_lock(&p->lock);
		if (!p->closing && p->send_busy != ~0ull)
			q = g_queue_pop_head(&p->pending);
		if (q)
			err = post_slot(p, (unsigned int)__builtin_ctzll(
						   ~p->send_busy),
					&q->mad, &q->dst, q->ah);
		g_mutex_unlock(&p->lock);
		if (!q)
			return;
		if (err)
			ual_ah_destroy(q->ah);
		g_free(q);
	}
}

/*
 * Send @m to @dst. With all GSI_NSEND slots waiting for their completions
 * (a burst: one process at both ends of 64 connections sends their REQs,
 * REPs and RTUs through this one QP), the MAD waits in order for a slot
 * instead of being dropped, which cost the connection its sender's
 * retry time-out (1.7 s here).
 */
int ib_port_send(struct ib_port *p, const struct ib_mad *m,
		 const struct ib_dest *dst)
{
	struct rnicpi_ah_attr aa = {
		.dgid = dst->dgid,
		.sgid_index = dst->sgid_index,
		.hop_limit = dst->hop_limit ? dst->hop_limit : 64,
		.traffic_class = dst->traffic_class,
		.flow_label = dst->flow_label,
		.port_num = 1,
		.is_global = 1,
	};
	struct ual_ah *ah = NULL;
	int err;

	err = ual_ah_create(p->pd, &aa, &ah);
	if (err) {
		g_info("%s QP1: address handle for the MAD: %s", p->prefix,
		       g_strerror(-err));
		return err;
	}
	g_mutex_lock(&p->lock);
	if (p->send_busy == ~0ull || !g_queue_is_empty(&p->pending)) {
		struct gsi_pending *q;

		if (g_queue_get_length(&p->pending) >= GSI_NPENDING) {
			g_mutex_unlock(&p->lock);
			ual_ah_destroy(ah);
			g_info("%s QP1: all %u send slots busy and %u MADs "
			       "waiting; MAD not sent", p->prefix, GSI_NSEND,
			       GSI_NPENDING);
			return -ENOBUFS;
		}
		q = g_new(struct gsi_pending, 1);
		q->mad = *m;
		q->dst = *dst;
		q->ah = ah;
		g_queue_push_tail(&p->pending, q);
		g_mutex_unlock(&p->lock);
		return 0;
	}
	err = post_slot(p, (unsigned int)__builtin_ctzll(~p->send_busy), m,
			dst, ah);
	g_mutex_unlock(&p->lock);
	if (err)
		ual_ah_destroy(ah);
	return err;
}

/* ------------------------------------------------------------------ */
/* Making and freeing the port                                         */
/* ------------------------------------------------------------------ */

static int qp1_up(struct ib_port *p)
{
	static const enum rnicpi_qp_state steps[] = {
		RNICPI_QPS_INIT, RNICPI_QPS_RTR, RNICPI_QPS_RTS,
	};

	for (size_t s = 0; s < G_N_ELEMENTS(steps); s++) {
		struct rnicpi_qp_attr a = { .qp_state = steps[s] };
		unsigned int mask = RNICPI_QP_STATE;
		int err;

		if (steps[s] == RNICPI_QPS_INIT) {
			/* IBA 13.5.3.2: QP1 takes the well-known Q_Key. */
			a.qkey = IB_GSI_QKEY_CM;
			a.port_num = 1;
			mask |= RNICPI_QP_QKEY | RNICPI_QP_PKEY_INDEX |
				RNICPI_QP_PORT;
		} else if (steps[s] == RNICPI_QPS_RTS) {
			a.sq_psn = 0;
			mask |= RNICPI_QP_SQ_PSN;
		}
		err = ual_qp_modify(p->qp, &a, mask);
		if (err) {
			g_info("%s QP1 to state %d: %s", p->prefix, steps[s],
			       g_strerror(-err));
			return err;
		}
	}
	return 0;
}

void ib_port_free(struct ib_port *p)
{
	if (!p)
		return;
	if (p->src) {
		g_source_destroy(p->src);
		g_source_unref(p->src);
	}
	g_mutex_lock(&p->lock);
	p->closing = true;
	g_mutex_unlock(&p->lock);
	for (struct gsi_pending *q; (q = g_queue_pop_head(&p->pending));) {
		ual_ah_destroy(q->ah);
		g_free(q);
	}
	if (p->qp)
		ual_qp_destroy(p->qp);
	/* Completions flushed by the destroy carry our AHs back. */
	if (p->cq) {
		struct rnicpi_wc wc[16];
		int n;

		while ((n = ual_cq_poll(p->cq, G_N_ELEMENTS(wc), wc)) > 0)
			for (int k = 0; k < n; k++)
				if (wc[k].wr_id & GSI_SEND_TAG)
					handle_send(p, &wc[k]);
	}
	for (unsigned int i = 0; i < GSI_NSEND; i++)
		if (p->ah[i])
			ual_ah_destroy(p->ah[i]);
	if (p->mr)
		ual_mr_dereg(p->mr);
	if (p->cq)
		ual_cq_destroy(p->cq);
	if (p->pd)
		ual_pd_free(p->pd);
	g_free(p->buf);
	g_mutex_clear(&p->lock);
	ual_device_put(p->dev);
	g_free(p);
}

int ib_port_new(struct cm *cm, struct ual_device *d, struct ib_port **out);

int ib_port_new(struct cm *cm, struct ual_device *d, struct ib_port **out)
{
	struct ib_port *p = g_new0(struct ib_port, 1);
	struct ual_qp_init_attr qa = {
		.qp_type = RNICPI_QPT_GSI,
		.cap = { .max_send_wr = GSI_NSEND, .max_recv_wr = GSI_NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rnicpi_device_attr da;
	struct rnicpi_port_attr pa;
	size_t len = (size_t)GSI_NRECV * GSI_RECV_SLOT +
		     (size_t)GSI_NSEND * GSI_SEND_SLOT;
	int err;

	p->cm = cm;
	p->dev = ual_device_get(d);
	g_mutex_init(&p->lock);
	snprintf(p->prefix, sizeof(p->prefix), "GSI %s:", ual_device_name(d));
	err = ual_device_query(d, &da);
	if (!err)
		err = ual_device_query_port(d, 1, &pa);
	if (err)
		goto fail;
	if (!(da.caps & RNICPI_DEV_CAP_GSI)) {
		g_info("%s the device has no GSI QP; no InfiniBand CM on it",
		       p->prefix);
		err = -EOPNOTSUPP;
		goto fail;
	}
	p->guid = be64toh(da.node_guid);
	p->mtu = pa.active_mtu ? pa.active_mtu : RNICPI_MTU_1024;
	p->gid_tbl_len = pa.gid_tbl_len;
	p->buf = g_malloc0(len);
	err = ual_pd_alloc(d, &p->pd);
	if (!err)
		err = ual_cq_create(d, GSI_NRECV + GSI_NSEND, &p->cq);
	if (!err)
		err = ual_mr_reg(p->pd, p->buf, len,
				 RNICPI_ACCESS_LOCAL_WRITE, &p->mr);
	if (err)
		goto fail;
	qa.send_cq = p->cq;
	qa.recv_cq = p->cq;
	err = ual_qp_create(p->pd, &qa, &p->qp);
	if (!err)
		err = qp1_up(p);
	for (unsigned int i = 0; !err && i < GSI_NRECV; i++)
		err = post_recv(p, i);
	if (err)
		goto fail;
	p->src = ual_cq_source_new(p->cq);
	if (!p->src) {
		err = -EOPNOTSUPP;
		goto fail;
	}
	g_source_set_callback(p->src, G_SOURCE_FUNC(gsi_cq_ready), p, NULL);
	g_source_attach(p->src, cm->ctx);
	ual_cq_arm(p->cq, false);
	g_debug("%s QP1 ready, node GUID %016" G_GINT64_MODIFIER "x, %u GIDs",
		p->prefix, p->guid, p->gid_tbl_len);
	*out = p;
	return 0;

fail:
	g_info("%s cannot set up QP1 for the CM: %s", p->prefix,
	       g_strerror(-err));
	ib_port_free(p);
	return err;
}
