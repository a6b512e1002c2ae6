/* SPDX-License-Identifier: MIT */
/*
 * verbs_cm_ops.c - the device ops of a verbs device's connections through
 * librdmacm: listen, connect, accept, reject and disconnect (RDMA_PS_TCP),
 * the UD service requests and their replies (RDMA_PS_UDP), and the
 * release of a QP's rdma_cm id. The events they lead to are handled on
 * the engine thread by verbs_cm.c, whose header says which object owns
 * which id and how the QP is moved.
 */
#include "config.h"

#include <errno.h>
#include <glib.h>
#include <netinet/in.h>
#include <string.h>

#include "vp/verbs/verbs.h"

#define container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Resolution time-out when the consumer gives none. */
#define VERBS_CM_RESOLVE_MS 5000

static struct verbs_dev *to_vd(struct rnicpi_device *d)
{
	return container_of(d, struct verbs_dev, rdev);
}

static struct verbs_qp *to_vqp(struct rnicpi_qp *q)
{
	return container_of(q, struct verbs_qp, base);
}

/* ------------------------------------------------------------------ */
/* Device ops                                                          */
/* ------------------------------------------------------------------ */

/* The same port of the UDP port space, for SIDR requests: best effort
 * (another process may hold it; then the listener answers none). */
static void listen_udp(struct verbs_dev *vd, struct verbs_listener *l,
		       const struct sockaddr *addr)
{
	struct sockaddr_storage a = { 0 };
	int err;

	memcpy(&a, addr, verbs_cm_sa_len(addr));
	if (a.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)&a)->sin_port =
			htons(l->base.port);
	else
		((struct sockaddr_in6 *)(void *)&a)->sin6_port =
			htons(l->base.port);
	if (rdma_create_id(vd->cm_ch, &l->uid, &l->kind, RDMA_PS_UDP)) {
		err = verbs_cm_neg_errno();
		l->uid = NULL;
		goto fail;
	}
	if (rdma_bind_addr(l->uid, (struct sockaddr *)&a) ||
	    rdma_listen(l->uid, 64)) {
		err = verbs_cm_neg_errno();
		rdma_destroy_id(l->uid);
		l->uid = NULL;
		goto fail;
	}
	return;
fail:
	g_info("%s: port %u of rdma_cm's UDP port space: %s; the listener answers no UD service requests",
	       vd->rdev.name, l->base.port, g_strerror(-err));
}

static int verbs_cm_listen(struct rnicpi_device *d, const struct sockaddr *addr,
			   int backlog, void *core_ctx,
			   struct rnicpi_listener **out)
{
	struct verbs_dev *vd = to_vd(d);
	struct verbs_listener *l;
	int err;

	if (!vd->cm_ch)
		return -EOPNOTSUPP;
	if (!addr || (addr->sa_family != AF_INET &&
		      addr->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	l = g_new0(struct verbs_listener, 1);
	l->kind = VERBS_CM_KIND_LISTENER;
	l->vd = vd;
	l->ref = 1;
	l->base.device = d;
	l->base.core_ctx = core_ctx;
	if (rdma_create_id(vd->cm_ch, &l->id, &l->kind, RDMA_PS_TCP)) {
		err = verbs_cm_neg_errno();
		g_free(l);
		return err;
	}
	if (rdma_bind_addr(l->id, (struct sockaddr *)addr)) {
		err = verbs_cm_neg_errno();
		goto fail;
	}
	if (!verbs_cm_id_on_device(vd, l->id)) {
		g_info("%s: the address to listen on belongs to %s, not this device",
		       d->name, verbs_cm_id_device_name(l->id));
		err = -EADDRNOTAVAIL;
		goto fail;
	}
	if (rdma_listen(l->id, backlog > 0 ? backlog : 64)) {
		err = verbs_cm_neg_errno();
		goto fail;
	}
	l->base.port = ntohs(rdma_get_src_port(l->id));
	if (vd->transport != RNICPI_TRANSPORT_IWARP)
		listen_udp(vd, l, addr);
	*out = &l->base;
	return 0;
fail:
	rdma_destroy_id(l->id);
	g_free(l);
	return err;
}

static int verbs_cm_listen_destroy(struct rnicpi_listener *rl)
{
	struct verbs_listener *l = container_of(rl, struct verbs_listener,
						 base);
	struct verbs_dev *vd = l->vd;
	bool free_l;

	g_mutex_lock(&vd->cm_lock);
	l->dead = true;
	g_mutex_unlock(&vd->cm_lock);
	/* Waits for its events to be acknowledged, which the engine does
	 * before each upcall. */
	rdma_destroy_id(l->id);
	if (l->uid)
		rdma_destroy_id(l->uid);
	g_mutex_lock(&vd->cm_lock);
	free_l = --l->ref == 0;
	g_mutex_unlock(&vd->cm_lock);
	if (free_l)
		g_free(l);
	return 0;
}

static int verbs_cm_connect(struct rnicpi_qp *qp, const struct sockaddr *src,
			    const struct sockaddr *dst,
			    const struct rnicpi_conn_param *param)
{
	struct verbs_qp *q = to_vqp(qp);
	struct verbs_dev *vd = q->vd;
	uint32_t len = param ? param->private_data_len : 0;
	struct rdma_cm_id *id;
	int err;

	if (!vd->cm_ch)
		return -EOPNOTSUPP;
	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	if (len > verbs_cm_pdata_max(vd->transport, VERBS_PDATA_CONNECT))
		return -EMSGSIZE;
	if (rdma_create_id(vd->cm_ch, &id, NULL, RDMA_PS_TCP))
		return verbs_cm_neg_errno();
	g_mutex_lock(&vd->cm_lock);
	if (q->cm_id) {
		g_mutex_unlock(&vd->cm_lock);
		rdma_destroy_id(id);
		return -EBUSY;
	}
	q->cm_id = id;
	q->cm_established = false;
	q->cm_broken = 0;
	q->cm_break_wc = IBV_WC_SUCCESS;
	g_hash_table_insert(vd->cm_qps, GUINT_TO_POINTER(q->base.qp_num), q);
	if (len)
		memcpy(q->cm_pdata, param->private_data, len);
	q->cm_pdata_len = (uint8_t)len;
	q->cm_ird = param ? param->ird : 0;
	q->cm_ord = param ? param->ord : 0;
	q->cm_timeout_ms = param && param->timeout_ms ?
				   MIN(param->timeout_ms, 600000u) :
				   VERBS_CM_RESOLVE_MS;
	id->context = &q->kind;
	g_mutex_unlock(&vd->cm_lock);
	if (rdma_resolve_addr(id,
			      src && src->sa_family != AF_UNSPEC ?
				      (struct sockaddr *)src :
				      NULL,
			      (struct sockaddr *)dst, (int)q->cm_timeout_ms)) {
		err = verbs_cm_neg_errno();
		verbs_cm_qp_release(q);
		return err;
	}
	return 0;
}

/*
 * Whether rdma_cm still holds the peer's request on @id. IB and RoCE: the
 * IB CM drops a request whose initiator gave up (its REJ, or its
 * time-out), and the kernel's ucma reports nothing on a request not
 * accepted yet ("the accept will just fail later"): the id's IB CM id
 * is idle then, and rdma_init_qp_attr fails with EINVAL. iWARP: iw_cm
 * keeps its own state, rdma_accept tells instead (ECONNRESET).
 */
static bool request_alive(struct verbs_dev *vd, struct rdma_cm_id *id)
{
	struct ibv_qp_attr a;
	int mask = 0;

	if (vd->transport == RNICPI_TRANSPORT_IWARP)
		return true;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	return rdma_init_qp_attr(id, &a, &mask) == 0 || errno != EINVAL;
}

static int verbs_conn_accept(struct rnicpi_conn *rc, struct rnicpi_qp *qp,
			     const struct rnicpi_conn_param *param)
{
	struct verbs_conn *c = container_of(rc, struct verbs_conn, base);
	struct verbs_qp *q = to_vqp(qp);
	struct verbs_dev *vd = c->vd;
	uint32_t len = param ? param->private_data_len : 0;
	uint32_t ird = param ? param->ird : 0, ord = param ? param->ord : 0;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	bool free_c, gone;
	int err;

	g_mutex_lock(&vd->cm_lock);
	if (c->answered) {
		g_mutex_unlock(&vd->cm_lock);
		return -EINVAL;
	}
	id = c->id;
	gone = c->peer_gone;
	c->id = NULL;
	c->answered = true;
	free_c = !c->in_upcall;
	if (!gone && !q->cm_id && q->vd == vd) {
		q->cm_id = id;
		q->cm_established = false;
		q->cm_broken = 0;
		q->cm_break_wc = IBV_WC_SUCCESS;
		g_hash_table_insert(vd->cm_qps,
				    GUINT_TO_POINTER(q->base.qp_num), q);
		id->context = &q->kind;
		id = NULL;
	}
	g_mutex_unlock(&vd->cm_lock);
	if (free_c)
		g_free(c);
	if (id) {
		/* Not taken by the QP: refused. */
		err = gone ? -ECONNRESET : q->vd != vd ? -EXDEV : -EBUSY;
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return err;
	}
	if (len > verbs_cm_pdata_max(vd->transport, VERBS_PDATA_ACCEPT)) {
		err = -EMSGSIZE;
		goto fail;
	}
	if (!request_alive(vd, q->cm_id)) {
		g_info("%s: QP %u: the peer gave up on its request before the accept",
		       vd->rdev.name, q->base.qp_num);
		err = -ECONNRESET;
		goto fail;
	}
	err = verbs_cm_qp_to_rts(q, q->cm_id, ird, ord);
	if (err) {
		g_info("%s: QP %u to RTS for the accept: %s", vd->rdev.name,
		       q->base.qp_num, g_strerror(-err));
		goto fail;
	}
	verbs_cm_fill_conn_param(vd, &cp, param ? param->private_data : NULL,
				 len, ird, ord, q);
	if (rdma_accept(q->cm_id, &cp)) {
		err = verbs_cm_neg_errno();
		if (err == -ECONNRESET)
			g_info("%s: QP %u: the peer gave up on its request before the accept",
			       vd->rdev.name, q->base.qp_num);
		goto fail;
	}
	return 0;
fail:
	rdma_reject(q->cm_id, NULL, 0);
	verbs_cm_qp_release(q);
	return err;
}

/* Take @c's rdma_cm id to answer it with; @c is freed unless its
 * REQUEST upcall still runs. false when it was answered already. */
static bool conn_take(struct verbs_conn *c, struct rdma_cm_id **id,
		      bool *gone)
{
	struct verbs_dev *vd = c->vd;
	bool free_c;

	g_mutex_lock(&vd->cm_lock);
	if (c->answered) {
		g_mutex_unlock(&vd->cm_lock);
		return false;
	}
	*id = c->id;
	*gone = c->peer_gone;
	c->id = NULL;
	c->answered = true;
	free_c = !c->in_upcall;
	g_mutex_unlock(&vd->cm_lock);
	if (free_c)
		g_free(c);
	return true;
}

static int verbs_conn_reject(struct rnicpi_conn *rc, const void *pdata,
			     uint32_t len)
{
	struct verbs_conn *c = container_of(rc, struct verbs_conn, base);
	struct verbs_dev *vd = c->vd;
	struct rdma_cm_id *id;
	bool gone;
	int err = 0;

	if (!conn_take(c, &id, &gone))
		return -EINVAL;
	if (len > verbs_cm_pdata_max(vd->transport, VERBS_PDATA_REJECT)) {
		len = 0;
		err = -EMSGSIZE;
	}
	if (!gone && rdma_reject(id, len ? pdata : NULL, (uint8_t)len))
		err = verbs_cm_neg_errno();
	rdma_destroy_id(id);
	return err;
}

static int verbs_cm_disconnect(struct rnicpi_qp *qp, int abortive)
{
	struct verbs_qp *q = to_vqp(qp);
	struct verbs_dev *vd = q->vd;
	struct ibv_qp_attr a;
	struct rdma_cm_id *id;

	g_mutex_lock(&vd->cm_lock);
	id = q->cm_id;
	g_mutex_unlock(&vd->cm_lock);
	if (!id)
		return -ENOTCONN;
	/* What librdmacm does for a QP it owns: IB stops at ERR, iWARP
	 * closes gracefully from SQD (the kernel's CLOSING). */
	memset(&a, 0, sizeof(a));
	a.qp_state = abortive || vd->transport != RNICPI_TRANSPORT_IWARP ?
			     IBV_QPS_ERR :
			     IBV_QPS_SQD;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE) && !abortive) {
		a.qp_state = IBV_QPS_ERR;
		ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
	}
	if (rdma_disconnect(id) && !abortive)
		return verbs_cm_neg_errno();
	return 0;
}

/* ------------------------------------------------------------------ */
/* UD service requests (RDMA_PS_UDP)                                   */
/* ------------------------------------------------------------------ */

static int verbs_cm_sidr_request(struct rnicpi_device *d,
				 const struct sockaddr *src,
				 const struct sockaddr *dst, const void *pdata,
				 uint32_t len, uint32_t timeout_ms,
				 void *core_ctx, struct rnicpi_sidr **out)
{
	struct verbs_dev *vd = to_vd(d);
	struct verbs_sidr *r;
	int err;

	if (!vd->cm_ch || vd->transport == RNICPI_TRANSPORT_IWARP)
		return -EOPNOTSUPP;
	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	/* A SIDR_REQ's 216 bytes less rdma_cm's 36-byte header. */
	if (len > 180 || (len && !pdata))
		return -EMSGSIZE;
	r = g_new0(struct verbs_sidr, 1);
	r->kind = VERBS_CM_KIND_SIDR;
	r->vd = vd;
	r->base.device = d;
	r->base.core_ctx = core_ctx;
	if (len)
		memcpy(r->pdata, pdata, len);
	r->pdata_len = (uint8_t)len;
	r->timeout_ms = timeout_ms ? MIN(timeout_ms, 600000u) :
				     VERBS_CM_RESOLVE_MS;
	if (rdma_create_id(vd->cm_ch, &r->id, NULL, RDMA_PS_UDP)) {
		err = verbs_cm_neg_errno();
		g_free(r);
		return err;
	}
	g_mutex_lock(&vd->cm_lock);
	r->id->context = &r->kind;
	g_mutex_unlock(&vd->cm_lock);
	*out = &r->base;
	if (rdma_resolve_addr(r->id,
			      src && src->sa_family != AF_UNSPEC ?
				      (struct sockaddr *)src :
				      NULL,
			      (struct sockaddr *)dst, (int)r->timeout_ms)) {
		err = verbs_cm_neg_errno();
		g_mutex_lock(&vd->cm_lock);
		r->id->context = NULL;
		g_mutex_unlock(&vd->cm_lock);
		rdma_destroy_id(r->id);
		g_free(r);
		return err;
	}
	return 0;
}

static int verbs_cm_sidr_destroy(struct rnicpi_sidr *rs)
{
	struct verbs_sidr *r = container_of(rs, struct verbs_sidr, base);
	struct verbs_dev *vd = r->vd;

	g_mutex_lock(&vd->cm_lock);
	while (vd->cm_busy == r && !rnicpi_engine_on_thread(&vd->engine))
		g_cond_wait(&vd->cm_cond, &vd->cm_lock);
	r->id->context = NULL;
	g_mutex_unlock(&vd->cm_lock);
	rdma_destroy_id(r->id);
	/* From inside its own upcall the engine thread still reads r: it
	 * is freed there (cm_busy is cleared after the upcall). */
	g_mutex_lock(&vd->cm_lock);
	if (vd->cm_busy == r) {
		r->vd = NULL;
		g_mutex_unlock(&vd->cm_lock);
		return 0;
	}
	g_mutex_unlock(&vd->cm_lock);
	g_free(r);
	return 0;
}

static int verbs_cm_sidr_reply(struct rnicpi_conn *rc, uint8_t status,
			       uint32_t qpn, uint32_t qkey, const void *pdata,
			       uint32_t len)
{
	struct verbs_conn *c = container_of(rc, struct verbs_conn, base);
	struct verbs_dev *vd = c->vd;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	bool gone;
	int err = 0;

	if (!conn_take(c, &id, &gone))
		return -EINVAL;
	/* The SIDR_REP's 136 bytes of private data. */
	if (len > 136) {
		len = 0;
		status = 2;
		err = -EMSGSIZE;
	}
	/* The kernel's rdma_cm answers an IP-addressed request with its
	 * own Q_Key (RDMA_UDP_QKEY), whatever librdmacm passes: a UD QP
	 * with another Q_Key would be named wrongly, so it is refused. */
	if (!status && qkey != RDMA_UDP_QKEY) {
		g_info("%s: SIDR reply with Q_Key 0x%08x: rdma_cm's UDP port space answers with Q_Key 0x%08x only (RDMA_UDP_QKEY); refused",
		       vd->rdev.name, qkey, RDMA_UDP_QKEY);
		status = 2;
		len = 0;
		err = -EINVAL;
	}
	if (status && status != 2)
		g_debug("%s: SIDR status %u goes out as \"rejected\" (rdma_cm sends no other)",
			vd->rdev.name, status);
	if (gone) {
		/* nothing to answer */
	} else if (!status) {
		memset(&cp, 0, sizeof(cp));
		cp.private_data = len ? pdata : NULL;
		cp.private_data_len = (uint8_t)len;
		cp.qp_num = qpn;
		if (rdma_accept(id, &cp))
			err = verbs_cm_neg_errno();
	} else if (rdma_reject(id, len ? pdata : NULL, (uint8_t)len) && !err) {
		err = verbs_cm_neg_errno();
	}
	rdma_destroy_id(id);
	return err;
}

void verbs_cm_qp_release(struct verbs_qp *q)
{
	struct verbs_dev *vd = q->vd;
	struct rdma_cm_id *id;

	if (!vd->cm_ch)
		return;
	g_mutex_lock(&vd->cm_lock);
	while (vd->cm_busy == q && !rnicpi_engine_on_thread(&vd->engine))
		g_cond_wait(&vd->cm_cond, &vd->cm_lock);
	id = q->cm_id;
	q->cm_id = NULL;
	q->cm_established = false;
	if (g_hash_table_lookup(vd->cm_qps, GUINT_TO_POINTER(q->base.qp_num)) ==
	    q)
		g_hash_table_remove(vd->cm_qps,
				    GUINT_TO_POINTER(q->base.qp_num));
	if (id)
		id->context = NULL;
	g_mutex_unlock(&vd->cm_lock);
	if (id)
		rdma_destroy_id(id);
}

void verbs_cm_fill_ops(struct rnicpi_device_ops *ops)
{
	ops->cm_listen = verbs_cm_listen;
	ops->cm_listen_destroy = verbs_cm_listen_destroy;
	ops->cm_connect = verbs_cm_connect;
	ops->cm_disconnect = verbs_cm_disconnect;
	ops->conn_accept = verbs_conn_accept;
	ops->conn_reject = verbs_conn_reject;
	ops->cm_sidr_request = verbs_cm_sidr_request;
	ops->cm_sidr_destroy = verbs_cm_sidr_destroy;
	ops->cm_sidr_reply = verbs_cm_sidr_reply;
}
