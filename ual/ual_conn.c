/* SPDX-License-Identifier: MIT */
/*
 * ual_conn.c - the connection entry points of ual.h, forwarded to the
 * connection manager (cm/). Thin on purpose: the layer above sees one
 * interface (ual.h); the state machines live in cm/.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>

#include "cm/cm.h"
#include "ual/ual.h"

/* Every call below needs the reference ual_cm_open gave the caller. */
static struct cm *cm_or_log(const char *fn)
{
	struct cm *cm = cm_get();

	if (!cm)
		g_warning("%s: the connection manager is not open (ual_cm_open)",
			  fn);
	return cm;
}

int ual_cm_open(struct ual *u)
{
	return cm_open(u);
}

void ual_cm_close(struct ual *u)
{
	(void)u;
	cm_close();
}

uint32_t ual_cm_max_private_data(struct ual_device *d,
				 enum ual_cm_pdata_op op)
{
	const struct cm_transport *tp = cm_transport_of(d);

	return tp ? tp->max_private_data(d, op) : 0;
}

int ual_cm_resolve(struct ual *u, const struct sockaddr *dst,
		   const struct sockaddr *src, enum rnicpi_transport transport,
		   struct ual_cm_route *out)
{
	struct cm *cm = cm_or_log(__func__);

	(void)u;
	return cm ? cm_resolve(cm, dst, src, transport, out) : -ENOTCONN;
}

GArray *ual_cm_device_addrs(struct ual_device *d)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_device_addrs(cm, d) :
		    g_array_new(FALSE, TRUE, sizeof(struct sockaddr_storage));
}

int ual_cm_listen(struct ual_device *d, uint8_t port_num, uint16_t *port,
		  ual_cm_event_fn fn, void *user_data,
		  struct ual_cm_listen **out)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_listen(cm, d, port_num, port, 0, fn, user_data,
			      (struct cm_listen **)out) :
		    -ENOTCONN;
}

int ual_cm_listen_service(struct ual_device *d, uint8_t port_num,
			  uint64_t service_id, ual_cm_event_fn fn,
			  void *user_data, struct ual_cm_listen **out)
{
	struct cm *cm = cm_or_log(__func__);
	uint16_t port = 0;

	return cm ? cm_listen(cm, d, port_num, &port, service_id, fn,
			      user_data, (struct cm_listen **)out) :
		    -ENOTCONN;
}

void ual_cm_listen_destroy(struct ual_cm_listen *l)
{
	if (l)
		cm_listen_destroy((struct cm_listen *)l);
}

int ual_cm_connect(struct ual_qp *qp, const struct sockaddr *dst,
		   uint16_t port, const struct sockaddr *src,
		   const struct ual_cm_param *param, ual_cm_event_fn fn,
		   void *user_data, struct ual_cm_id **out)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_connect(cm, qp, dst, port, 0, src, param, fn,
			       user_data, (struct cm_id **)out) :
		    -ENOTCONN;
}

int ual_cm_connect_service(struct ual_qp *qp, const struct sockaddr *dst,
			   uint64_t service_id, const struct sockaddr *src,
			   const struct ual_cm_param *param,
			   ual_cm_event_fn fn, void *user_data,
			   struct ual_cm_id **out)
{
	struct cm *cm = cm_or_log(__func__);

	if (!service_id)
		return -EINVAL;
	return cm ? cm_connect(cm, qp, dst, 0, service_id, src, param, fn,
			       user_data, (struct cm_id **)out) :
		    -ENOTCONN;
}

int ual_cm_accept(uint64_t req_id, struct ual_qp *qp,
		  const struct ual_cm_param *param, ual_cm_event_fn fn,
		  void *user_data, struct ual_cm_id **out)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_accept(cm, req_id, qp, param, fn, user_data,
			      (struct cm_id **)out) :
		    -ENOTCONN;
}

int ual_cm_reject(uint64_t req_id, const void *private_data,
		  uint32_t private_data_len)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_reject(cm, req_id, private_data, private_data_len) :
		    -ENOTCONN;
}

int ual_cm_handoff(uint64_t req_id, uint8_t port_num, uint16_t port)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_handoff(cm, req_id, port_num, port) : -ENOTCONN;
}

int ual_cm_disconnect(struct ual_cm_id *id, bool abortive)
{
	return cm_disconnect((struct cm_id *)id, abortive);
}

void ual_cm_id_destroy(struct ual_cm_id *id)
{
	if (id)
		cm_id_destroy((struct cm_id *)id);
}

int ual_cm_socket_convert(struct ual_qp *qp, int sockfd,
			  const struct ual_cm_param *param,
			  ual_cm_event_fn fn, void *user_data,
			  struct ual_cm_id **out)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_socket_convert(cm, qp, sockfd, param, fn, user_data,
				      (struct cm_id **)out) :
		    -ENOTCONN;
}

int ual_cm_sidr_request(struct ual_device *d, const struct sockaddr *dst,
			uint64_t service_id, uint16_t port, const void *pdata,
			uint32_t len, uint32_t timeout_ms, ual_cm_event_fn fn,
			void *user_data, struct ual_cm_sidr **out)
{
	struct cm *cm = cm_or_log(__func__);

	if (!service_id)
		service_id = 0x0000000001110000ull | port;
	return cm ? cm_sidr_request(cm, d, dst, service_id, pdata, len,
				    timeout_ms, fn, user_data, (void **)out) :
		    -ENOTCONN;
}

void ual_cm_sidr_destroy(struct ual_cm_sidr *s)
{
	struct cm *cm = cm_get();

	if (s && cm)
		cm_sidr_destroy(cm, s);
}

int ual_cm_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
		      uint32_t qkey, const void *pdata, uint32_t len)
{
	struct cm *cm = cm_or_log(__func__);

	return cm ? cm_sidr_reply(cm, req_id, sidr_status, qpn, qkey, pdata,
				  len) :
		    -ENOTCONN;
}
