/* SPDX-License-Identifier: MIT */
/*
 * ual_enosys.c - "not supported" fillers for the provider ops table.
 *
 * rnicpi.h lets a provider leave any op NULL, and an older provider's table
 * ends early (its `size` is smaller than ours). At device creation ual
 * copies the table into a full struct rnicpi_device_ops and puts one of
 * these explicit functions in every empty slot, so the rest of ual calls
 * through the table without a NULL check and an unsupported op answers
 * -EOPNOTSUPP (void ops do nothing).
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "ual/ual_private.h"

#define ENOSYS_OP(name, params)                                             \
	static int enosys_##name params                                     \
	{                                                                   \
		return -EOPNOTSUPP;                                         \
	}

static void enosys_device_destroy(struct rnicpi_device *dev)
{
}

static void enosys_netdev_event(struct rnicpi_device *dev,
				const struct rnicpi_netdev *nd,
				enum rnicpi_netdev_event event)
{
}

ENOSYS_OP(query_device, (struct rnicpi_device *dev,
			 struct rnicpi_device_attr *attr))
ENOSYS_OP(query_port, (struct rnicpi_device *dev, uint8_t port_num,
		       struct rnicpi_port_attr *attr))
ENOSYS_OP(query_gid, (struct rnicpi_device *dev, uint8_t port_num,
		      uint32_t index, struct rnicpi_gid_entry *entry))
ENOSYS_OP(alloc_pd, (struct rnicpi_device *dev, struct rnicpi_pd **out))
ENOSYS_OP(dealloc_pd, (struct rnicpi_pd *pd))
ENOSYS_OP(reg_mr, (struct rnicpi_pd *pd, void *addr, uint64_t length,
		   uint64_t iova, unsigned int access, struct rnicpi_mr **out))
ENOSYS_OP(rereg_mr, (struct rnicpi_mr *mr, unsigned int flags,
		     struct rnicpi_pd *pd, void *addr, uint64_t length,
		     uint64_t iova, unsigned int access))
ENOSYS_OP(dereg_mr, (struct rnicpi_mr *mr))
ENOSYS_OP(alloc_mw, (struct rnicpi_pd *pd, enum rnicpi_mw_type type,
		     struct rnicpi_mw **out))
ENOSYS_OP(dealloc_mw, (struct rnicpi_mw *mw))
ENOSYS_OP(create_cq, (struct rnicpi_device *dev,
		      const struct rnicpi_cq_init_attr *attr,
		      struct rnicpi_cq **out))
ENOSYS_OP(resize_cq, (struct rnicpi_cq *cq, uint32_t cqe))
ENOSYS_OP(destroy_cq, (struct rnicpi_cq *cq))
ENOSYS_OP(poll_cq, (struct rnicpi_cq *cq, int n, struct rnicpi_wc *wc))
ENOSYS_OP(req_notify_cq, (struct rnicpi_cq *cq, int solicited_only))
ENOSYS_OP(ack_cq_event, (struct rnicpi_cq *cq))
ENOSYS_OP(create_srq, (struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
		       struct rnicpi_srq **out))
ENOSYS_OP(modify_srq, (struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr,
		       unsigned int mask))
ENOSYS_OP(query_srq, (struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr))
ENOSYS_OP(destroy_srq, (struct rnicpi_srq *srq))
ENOSYS_OP(post_srq_recv, (struct rnicpi_srq *srq,
			  const struct rnicpi_recv_wr *wr,
			  const struct rnicpi_recv_wr **bad))
ENOSYS_OP(create_qp, (struct rnicpi_pd *pd, struct rnicpi_qp_init_attr *attr,
		      struct rnicpi_qp **out))
ENOSYS_OP(modify_qp, (struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		      unsigned int mask))
ENOSYS_OP(query_qp, (struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
		     unsigned int mask, struct rnicpi_qp_init_attr *init_attr))
ENOSYS_OP(destroy_qp, (struct rnicpi_qp *qp))
ENOSYS_OP(post_send, (struct rnicpi_qp *qp, const struct rnicpi_send_wr *wr,
		      const struct rnicpi_send_wr **bad))
ENOSYS_OP(post_recv, (struct rnicpi_qp *qp, const struct rnicpi_recv_wr *wr,
		      const struct rnicpi_recv_wr **bad))
ENOSYS_OP(create_ah, (struct rnicpi_pd *pd, const struct rnicpi_ah_attr *attr,
		      struct rnicpi_ah **out))
ENOSYS_OP(destroy_ah, (struct rnicpi_ah *ah))
ENOSYS_OP(conn_accept, (struct rnicpi_conn *conn, struct rnicpi_qp *qp,
			const struct rnicpi_conn_param *param))
ENOSYS_OP(conn_reject, (struct rnicpi_conn *conn, const void *private_data,
			uint32_t private_data_len))
ENOSYS_OP(iw_connect, (struct rnicpi_qp *qp, int sockfd,
		       const struct rnicpi_conn_param *param))
ENOSYS_OP(iw_take_request, (struct rnicpi_device *dev, int sockfd,
			    void *core_ctx, struct rnicpi_conn **out))
ENOSYS_OP(cm_listen, (struct rnicpi_device *dev, const struct sockaddr *addr,
		      int backlog, void *core_ctx,
		      struct rnicpi_listener **out))
ENOSYS_OP(cm_listen_destroy, (struct rnicpi_listener *listener))
ENOSYS_OP(cm_connect, (struct rnicpi_qp *qp, const struct sockaddr *src,
		       const struct sockaddr *dst,
		       const struct rnicpi_conn_param *param))

ENOSYS_OP(cm_disconnect, (struct rnicpi_qp *qp, int abortive))
ENOSYS_OP(alloc_mr, (struct rnicpi_pd *pd, uint64_t max_len,
		     struct rnicpi_mr **out))
ENOSYS_OP(cm_sidr_request, (struct rnicpi_device *dev,
			    const struct sockaddr *src,
			    const struct sockaddr *dst, const void *pdata,
			    uint32_t len, uint32_t timeout_ms, void *core_ctx,
			    struct rnicpi_sidr **out))
ENOSYS_OP(cm_sidr_destroy, (struct rnicpi_sidr *sidr))
ENOSYS_OP(cm_sidr_reply, (struct rnicpi_conn *conn, uint8_t status,
			  uint32_t qpn, uint32_t qkey, const void *pdata,
			  uint32_t len))

/* Optional: a provider without it has nothing to take at open. */
static int enosys_device_open(struct rnicpi_device *dev)
{
	return 0;
}

/* Optional: a provider without it has no receive work in polls. */
static void enosys_consumer_blocks(struct rnicpi_device *dev)
{
	(void)dev;
}

/* Optional: a provider without them does its receive work itself. */
static int enosys_cq_wait_begin(struct rnicpi_cq *cq, int *fds, int max)
{
	(void)cq;
	(void)fds;
	(void)max;
	return 0;
}

static void enosys_cq_wait_end(struct rnicpi_cq *cq)
{
	(void)cq;
}

/* Every op of struct rnicpi_device_ops, in declaration order. */
#define UAL_DEVICE_OPS(X)                                                   \
	X(device_destroy) X(query_device) X(query_port) X(query_gid)        \
	X(netdev_event) X(alloc_pd) X(dealloc_pd) X(reg_mr) X(rereg_mr)     \
	X(dereg_mr) X(alloc_mw) X(dealloc_mw) X(create_cq) X(resize_cq)     \
	X(destroy_cq) X(poll_cq) X(req_notify_cq) X(ack_cq_event)           \
	X(create_srq) X(modify_srq) X(query_srq) X(destroy_srq)             \
	X(post_srq_recv) X(create_qp) X(modify_qp) X(query_qp)              \
	X(destroy_qp) X(post_send) X(post_recv) X(create_ah) X(destroy_ah)  \
	X(conn_accept) X(conn_reject) X(iw_connect) X(iw_take_request)      \
	X(cm_listen) X(cm_listen_destroy) X(cm_connect) X(device_open)     \
	X(cm_disconnect) X(alloc_mr) X(cm_sidr_request) X(cm_sidr_destroy) \
	X(cm_sidr_reply) X(consumer_blocks) X(cq_wait_begin)              \
	X(cq_wait_end)

/* The X-macro must name every op: one slot forgotten here would be copied
 * as NULL. Op slots are pointer sized, after the uint32_t size. */
#define UAL_COUNT_OP(name) +1
_Static_assert(offsetof(struct rnicpi_device_ops, device_destroy) +
		       (0 UAL_DEVICE_OPS(UAL_COUNT_OP)) * sizeof(void (*)(void)) ==
	       sizeof(struct rnicpi_device_ops),
	       "UAL_DEVICE_OPS does not list every op of rnicpi_device_ops");

bool ual_ops_complete(struct rnicpi_device_ops *out,
		      const struct rnicpi_device_ops *in)
{
	/* A table newer than ours has more ops at the end: ignore them. */
	size_t size = in->size < sizeof(*in) ? in->size : sizeof(*in);

#define UAL_FILL_OP(name)                                                   \
	out->name = offsetof(struct rnicpi_device_ops, name) +              \
				    sizeof(in->name) <= size && in->name    \
			    ? in->name                                      \
			    : enosys_##name;
	UAL_DEVICE_OPS(UAL_FILL_OP)
#undef UAL_FILL_OP
	out->size = sizeof(*out);
	return out->netdev_event != enosys_netdev_event;
}
