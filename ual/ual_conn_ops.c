/* SPDX-License-Identifier: MIT */
/*
 * ual_conn_ops.c - the provider's connection hooks (rnicpi_device_ops
 * conn_accept, conn_reject, iw_connect, iw_take_request), for the
 * connection manager above. Like every other provider op they go through
 * ual's completed ops table (an op the provider lacks answers -EOPNOTSUPP)
 * and under ual's object rules: an op on a QP holds the QP's control lock,
 * so it never runs beside the QP's destroy, and answers -ENODEV once the
 * QP is destroyed. The device ops need only the caller's reference.
 * Failures are the caller's to log: it knows which connection they hit.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>

#include "ual/ual_private.h"

int ual_qp_conn_accept(struct ual_qp *qp, struct rnicpi_conn *conn,
		       const struct rnicpi_conn_param *param)
{
	struct ual_device *d = qp->pd->dev;
	int err;

	err = ual_obj_lock_alive(&qp->obj, "conn_accept");
	if (err) {
		/* The request is consumed whatever the outcome (rnicpi.h):
		 * with no QP to take it, it is refused. */
		d->ops.conn_reject(conn, NULL, 0);
		return err;
	}
	err = d->ops.conn_accept(conn, qp->rqp, param);
	g_rec_mutex_unlock(&qp->obj.ctl);
	return err;
}

int ual_device_conn_reject(struct ual_device *d, struct rnicpi_conn *conn,
			   const void *private_data, uint32_t private_data_len)
{
	return d->ops.conn_reject(conn, private_data, private_data_len);
}

int ual_qp_iw_connect(struct ual_qp *qp, int sockfd,
		      const struct rnicpi_conn_param *param)
{
	int err;

	err = ual_obj_lock_alive(&qp->obj, "iw_connect");
	if (err)
		return err;
	err = qp->pd->dev->ops.iw_connect(qp->rqp, sockfd, param);
	g_rec_mutex_unlock(&qp->obj.ctl);
	return err;
}

int ual_device_iw_take_request(struct ual_device *d, int sockfd,
			       void *core_ctx, struct rnicpi_conn **out)
{
	return d->ops.iw_take_request(d->rdev, sockfd, core_ctx, out);
}

int ual_device_cm_listen(struct ual_device *d, const struct sockaddr *addr,
			 int backlog, void *core_ctx,
			 struct rnicpi_listener **out)
{
	return d->ops.cm_listen(d->rdev, addr, backlog, core_ctx, out);
}

int ual_device_cm_listen_destroy(struct ual_device *d,
				 struct rnicpi_listener *listener)
{
	return d->ops.cm_listen_destroy(listener);
}

int ual_qp_cm_connect(struct ual_qp *qp, const struct sockaddr *src,
		      const struct sockaddr *dst,
		      const struct rnicpi_conn_param *param)
{
	int err;

	err = ual_obj_lock_alive(&qp->obj, "cm_connect");
	if (err)
		return err;
	err = qp->pd->dev->ops.cm_connect(qp->rqp, src, dst, param);
	g_rec_mutex_unlock(&qp->obj.ctl);
	return err;
}

int ual_qp_cm_disconnect(struct ual_qp *qp, bool abortive)
{
	int err;

	err = ual_obj_lock_alive(&qp->obj, "cm_disconnect");
	if (err)
		return err;
	err = qp->pd->dev->ops.cm_disconnect(qp->rqp, abortive);
	g_rec_mutex_unlock(&qp->obj.ctl);
	return err;
}

int ual_device_cm_sidr_request(struct ual_device *d,
			       const struct sockaddr *src,
			       const struct sockaddr *dst, const void *pdata,
			       uint32_t len, uint32_t timeout_ms,
			       void *core_ctx, struct rnicpi_sidr **out)
{
	return d->ops.cm_sidr_request(d->rdev, src, dst, pdata, len,
				      timeout_ms, core_ctx, out);
}

int ual_device_cm_sidr_destroy(struct ual_device *d,
			       struct rnicpi_sidr *sidr)
{
	return d->ops.cm_sidr_destroy(sidr);
}

int ual_device_cm_sidr_reply(struct ual_device *d, struct rnicpi_conn *conn,
			     uint8_t status, uint32_t qpn, uint32_t qkey,
			     const void *pdata, uint32_t len)
{
	return d->ops.cm_sidr_reply(conn, status, qpn, qkey, pdata, len);
}
