/* SPDX-License-Identifier: MIT */
/*
 * cm_native.c - the transport of devices whose provider runs their
 * connections itself (RNICPI_DEV_CAP_NATIVE_CM: the verbs provider,
 * through librdmacm and the kernel's IB CM and iw_cm). The manager keeps
 * its listeners, requests and connections as for the other transports;
 * only what goes on the wire is the provider's:
 *
 *   listen      cm_listen on each address of the device's interface
 *               (IPv4, and IPv6 but link-local), one port for all
 *   connect     cm_connect: the provider resolves, sends the request
 *               and reports ESTABLISHED, REJECTED or ERROR
 *   accept,     the provider's conn_accept / conn_reject, as iWARP
 *   reject
 *   disconnect  cm_disconnect; DISCONNECTED follows
 *
 * A request names its listener (ev->listener); the provider keeps the
 * listener's memory valid during the upcall, but the listener may be
 * closed meanwhile, so it is looked up in the manager's own table by
 * pointer before anything is read.
 *
 * Connection qualifiers are rdma_cm's TCP port space (RDMA_PS_TCP): an
 * IANA port, or an IB service ID of that space (0x0106 << 16 | port).
 */
#define G_LOG_DOMAIN "hostrdma-cm"

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <string.h>

#include "cm/cm_private.h"
#include "cm/ib_mad.h"

#define NATIVE_BACKLOG 64

/* The port of an RDMA_PS_TCP service ID @sid; -EOPNOTSUPP (logged) for
 * another one. */
static int sid_port(struct ual_device *d, uint64_t sid, uint16_t *port)
{
	if (ib_cma_ps_of(sid) != IB_RDMA_PS_TCP) {
		g_info("%s: service ID 0x%016" PRIx64 ": this device connects through rdma_cm's TCP port space only (0x%04x << 16 | port)",
		       ual_device_name(d), sid, IB_RDMA_PS_TCP);
		return -EOPNOTSUPP;
	}
	*port = (uint16_t)(sid & 0xffff);
	return 0;
}

static bool listen_addr_ok(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return true;
	if (ss->ss_family == AF_INET6)
		return !IN6_IS_ADDR_LINKLOCAL(
			&((const struct sockaddr_in6 *)(const void *)ss)
				 ->sin6_addr);
	return false;
}

/* Called with cm->lock held. */
static int native_listen(struct cm *cm, struct cm_listen *l)
{
	struct kal_link *link;
	GPtrArray *rls;
	char buf[64];
	int err = -EADDRNOTAVAIL;

	if (l->sid) {
		err = sid_port(l->dev, l->sid, &l->port);
		if (err)
			return err;
	}
	link = kal_nl_link_by_index(cm->nl, ual_device_ifindex(l->dev), NULL);
	rls = g_ptr_array_new();
	for (guint i = 0; link && link->addrs && i < link->addrs->len; i++) {
		struct sockaddr_storage a = g_array_index(
			link->addrs, struct sockaddr_storage, i);
		struct rnicpi_listener *rl;
		int e;

		if (!listen_addr_ok(&a))
			continue;
		cm_sockaddr_set_port(&a, l->port);
		e = ual_device_cm_listen(l->dev, (void *)&a, NATIVE_BACKLOG, l,
					 &rl);
		if (e) {
			g_info("%s: listen on %s: %s", ual_device_name(l->dev),
			       cm_sockaddr_str((void *)&a, buf, sizeof(buf)),
			       g_strerror(-e));
			if (e == -EADDRINUSE || !rls->len)
				err = e;
			if (e == -EADDRINUSE)
				break;
			continue;
		}
		if (!l->port)
			l->port = rl->port;
		g_ptr_array_add(rls, rl);
	}
	kal_link_free(link);
	if (!rls->len || err == -EADDRINUSE) {
		for (guint i = 0; i < rls->len; i++)
			ual_device_cm_listen_destroy(l->dev, rls->pdata[i]);
		g_ptr_array_free(rls, TRUE);
		if (err == -EADDRNOTAVAIL)
			g_info("%s: its interface has no address to listen on",
			       ual_device_name(l->dev));
		return err;
	}
	l->tp_data = rls;
	return 0;
}

/* Called with cm->lock held. */
static void native_unlisten(struct cm *cm, struct cm_listen *l)
{
	GPtrArray *rls = l->tp_data;

	(void)cm;
	if (!rls)
		return;
	for (guint i = 0; i < rls->len; i++)
		ual_device_cm_listen_destroy(l->dev, rls->pdata[i]);
	g_ptr_array_free(rls, TRUE);
	l->tp_data = NULL;
}

static int native_connect(struct cm *cm, struct cm_id *id)
{
	struct sockaddr_storage dst = id->remote_addr;
	struct rnicpi_conn_param rp;
	uint16_t port = id->port;
	int err;

	(void)cm;
	if (id->sid) {
		err = sid_port(id->dev, id->sid, &port);
		if (err)
			return err;
		id->port = port;
	}
	cm_sockaddr_set_port(&dst, port);
	cm_to_rnicpi_param(&id->param, &rp);
	/* The provider's events may come before it returns. */
	cm_id_set_state(id, CM_ID_PROVIDER);
	err = ual_qp_cm_connect(id->qp,
				id->local_addr.ss_family != AF_UNSPEC ?
					(void *)&id->local_addr :
					NULL,
				(void *)&dst, &rp);
	if (err)
		cm_id_set_state(id, CM_ID_IDLE);
	return err;
}

static void native_cancel(struct cm *cm, struct cm_id *id)
{
	(void)cm;
	(void)id; /* no socket phase */
}

static int native_socket_convert(struct cm *cm, struct cm_id *id, int sockfd)
{
	(void)cm;
	(void)sockfd;
	cm_info(id, "socket conversion: the device's connections are set up by its provider's connection manager (rdma_cm), which takes no established TCP stream");
	return -EOPNOTSUPP;
}

static uint32_t native_max_private_data(struct ual_device *d,
					enum cm_pdata_op op)
{
	bool iwarp = ual_device_transport(d) == RNICPI_TRANSPORT_IWARP;

	/* What rdma_cm carries: its conn param has an 8-bit length; the
	 * IB CM's REQ loses rdma_cm's 36-byte header; rdma_disconnect
	 * sends none. */
	switch (op) {
	case CM_PDATA_CONNECT:
		return iwarp ? 255 : IB_CMA_PDATA;
	case CM_PDATA_ACCEPT:
		return iwarp ? 255 : 196;
	case CM_PDATA_REJECT:
		return iwarp ? 255 : 148;
	default:
		return 0;
	}
}

static int native_disconnect(struct cm *cm, struct cm_id *id, bool abortive)
{
	int err = ual_qp_cm_disconnect(id->qp, abortive);

	(void)cm;
	if (err && !abortive)
		err = ual_qp_cm_disconnect(id->qp, true);
	if (err)
		cm_info(id, "disconnect: %s", g_strerror(-err));
	return err;
}

static void native_release(struct cm *cm, struct cm_id *id,
			   enum cm_id_state was)
{
	(void)cm;
	switch (was) {
	case CM_ID_PROVIDER:
	case CM_ID_ACCEPTING:
	case CM_ID_ESTABLISHED:
	case CM_ID_CLOSING:
		/* The peer learns now, not when the QP is destroyed. */
		ual_qp_cm_disconnect(id->qp, true);
		break;
	default:
		break;
	}
}

const struct cm_transport cm_native_transport = {
	.name = "native",
	.listen = native_listen,
	.unlisten = native_unlisten,
	.connect = native_connect,
	.cancel = native_cancel,
	.socket_convert = native_socket_convert,
	.max_private_data = native_max_private_data,
	.disconnect = native_disconnect,
	.release = native_release,
};

struct cm_listen *cm_native_listen_of(struct cm *cm,
				      const struct rnicpi_listener *rl)
{
	struct cm_listen *found = NULL;

	g_mutex_lock(&cm->lock);
	for (guint i = 0; i < cm->listens->len && !found; i++) {
		struct cm_listen *l = cm->listens->pdata[i];
		GPtrArray *rls = l->tp_data;

		if (l->tp != &cm_native_transport || !rls || l->dead)
			continue;
		for (guint j = 0; j < rls->len; j++)
			if (rls->pdata[j] == rl) {
				found = cm_listen_ref(l);
				break;
			}
	}
	g_mutex_unlock(&cm->lock);
	return found;
}

void cm_native_conn_event(struct cm *cm, struct ual_device *d,
			  const struct rnicpi_conn_event *ev)
{
	struct sockaddr_storage local = { 0 }, remote = { 0 };
	struct cm_listen *l;
	struct cm_req *req;

	if (ev->type != RNICPI_CONN_REQUEST) {
		/* rnicpi.h: a conn is gone after its ERROR; the verbs
		 * provider reports none (an answer then fails instead). */
		cm_req_event(cm, ev);
		return;
	}
	l = ev->listener ? cm_native_listen_of(cm, ev->listener) : NULL;
	if (!l) {
		g_info("%s: a connection request for a listener that is closed; refusing",
		       ual_device_name(d));
		cm_provider_conn_reject(d, ev->conn, NULL, 0);
		return;
	}
	cm_copy_peer_addrs(&local, &remote, ev);
	req = cm_req_new(cm, l, d, &local, &remote);
	ev->conn->core_ctx = req;
	/* READING -> REPORTED, and to the listener's consumer. */
	cm_req_event(cm, ev);
	cm_req_unref(req);
	cm_listen_unref(l);
}
