/* SPDX-License-Identifier: MIT */
/*
 * testprov.c - provider "test": an in-memory verbs provider for ual's
 * tests. Never installed.
 *
 * It runs on the loopback interface only and moves data by memcpy, at post
 * time, between QPs of this provider in the same process:
 *  - A SEND completes at once on the sender's send CQ. If the QP was given
 *    a peer with modify_qp(RNICPI_QP_DEST_QPN) - the test-only convention
 *    for "connected" - the bytes go into the peer's oldest posted receive
 *    (its own queue or its SRQ) and that receive completes on the peer's
 *    receive CQ; without a posted receive the sender gets RNR_RETRY_EXC_ERR.
 *  - RDMA WRITE copies into the peer's memory named by an rkey with
 *    REMOTE_WRITE rights; BIND_MW binds a window to an MR (the MR then
 *    refuses dereg_mr with -EBUSY until the window is unbound or freed).
 *  Every SGE is checked against its MR (key, PD, bounds, rights); a bad
 *  one fails the WR with a completion status, never a stray write.
 *
 * Options (device_create): max_qp=N (1..1024, default 64) limits the QPs
 * of a device and shows in query_device; netdev_event=off hands ual a
 * table without netdev_event (ual then raises port events itself);
 * ops_size=short hands a table whose size ends before create_ah (so AHs
 * are "not supported" although the slot is filled); kernel_pins=on
 * reports RNICPI_DEV_CAP_KERNEL_PINS (ual then pins nothing). Any other key is
 * -EINVAL.
 *
 * Built twice: as a module (RNICPI_PROVIDER_DEFINE exports the entry) and
 * with -DRNICPI_BUILTIN into the test runner (rnicpi_builtin_test()).
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/provider/testprov.h"

pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;

static void raise_event(struct tp_device *dev, enum rnicpi_event_type type)
{
	struct rnicpi_async_event ev = {
		.type = type,
		.element.port_num = 1,
	};

	dev->core->async_event(&dev->base, &ev);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */
/* ------------------------------------------------------------------ */

static void tp_copy_netdev(struct tp_device *dev,
			   const struct rnicpi_netdev *nd)
{
	dev->flags = nd->flags;
	dev->mtu = nd->mtu;
	dev->n_addrs = nd->n_addrs < TP_MAX_ADDRS ? nd->n_addrs : TP_MAX_ADDRS;
	if (dev->n_addrs)
		memcpy(dev->addrs, nd->addrs,
		       dev->n_addrs * sizeof(*dev->addrs));
}

static bool port_active(unsigned int flags)
{
	return (flags & (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING)) ==
	       (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING);
}

static void tp_device_destroy(struct rnicpi_device *d)
{
	struct tp_device *dev = to_tp_dev(d);

	rnicpi_key_table_fini(&dev->keys);
	free(dev);
}

static int tp_query_device(struct rnicpi_device *d,
			   struct rnicpi_device_attr *attr)
{
	struct tp_device *dev = to_tp_dev(d);

	memset(attr, 0, sizeof(*attr));
	attr->transport = RNICPI_TRANSPORT_ROCE;
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "testprov 1");
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 4096;
	attr->max_msg_size = TP_MAX_MSG;
	attr->max_qp = dev->max_qp;
	attr->max_qp_wr = TP_MAX_QP_WR;
	attr->max_sge = TP_MAX_SGE;
	attr->max_cq = 1024;
	attr->max_cqe = TP_MAX_CQE;
	attr->max_mr = 1024;
	attr->max_mw = 1024;
	attr->max_pd = 1024;
	attr->max_ah = 1024;
	attr->max_srq = 1024;
	attr->max_srq_wr = TP_MAX_QP_WR;
	attr->max_srq_sge = TP_MAX_SGE;
	attr->caps = RNICPI_DEV_CAP_RC | RNICPI_DEV_CAP_UD |
		     RNICPI_DEV_CAP_SRQ | RNICPI_DEV_CAP_MW_TYPE_1 |
		     RNICPI_DEV_CAP_IMM_DATA | RNICPI_DEV_CAP_ZERO_BASED;
	if (dev->kernel_pins)
		attr->caps |= RNICPI_DEV_CAP_KERNEL_PINS;
	/* No RNICPI_DEV_CAP_RESIZE_SRQ: tp_modify_srq refuses
	 * RNICPI_SRQ_MAX_WR, as the kernel's siw does on a verbs device. */
	attr->phys_port_cnt = 1;
	return 0;
}

static int tp_query_port(struct rnicpi_device *d, uint8_t port,
			 struct rnicpi_port_attr *attr)
{
	struct tp_device *dev = to_tp_dev(d);

	if (port != 1)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&tp_lock);
	attr->state = port_active(dev->flags) ? RNICPI_PORT_ACTIVE :
						RNICPI_PORT_DOWN;
	pthread_mutex_unlock(&tp_lock);
	attr->max_mtu = RNICPI_MTU_4096;
	attr->active_mtu = RNICPI_MTU_4096;
	attr->link_layer = RNICPI_LINK_LAYER_ETHERNET;
	attr->gid_tbl_len = TP_GID_TBL_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = TP_MAX_MSG;
	return 0;
}

static int tp_query_gid(struct rnicpi_device *d, uint8_t port,
			uint32_t index, struct rnicpi_gid_entry *entry)
{
	struct tp_device *dev = to_tp_dev(d);
	const struct sockaddr_storage *ss;
	int err = 0;

	if (port != 1 || index >= TP_GID_TBL_LEN)
		return -EINVAL;
	memset(entry, 0, sizeof(*entry));
	pthread_mutex_lock(&tp_lock);
	if (index >= dev->n_addrs) {
		err = -ENOENT;
		goto out;
	}
	ss = &dev->addrs[index];
	if (ss->ss_family == AF_INET) {
		/* IPv4-mapped IPv6 address, as RoCEv2 GIDs are. */
		entry->gid.raw[10] = 0xff;
		entry->gid.raw[11] = 0xff;
		memcpy(&entry->gid.raw[12],
		       &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else {
		memcpy(entry->gid.raw,
		       &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
	entry->type = RNICPI_GID_TYPE_ROCE_V2;
	entry->ifindex = d->ifindex;
out:
	pthread_mutex_unlock(&tp_lock);
	return err;
}

static void tp_netdev_event(struct rnicpi_device *d,
			    const struct rnicpi_netdev *nd,
			    enum rnicpi_netdev_event event)
{
	struct tp_device *dev = to_tp_dev(d);
	bool was, now;

	pthread_mutex_lock(&tp_lock);
	was = port_active(dev->flags);
	tp_copy_netdev(dev, nd);
	now = port_active(dev->flags);
	pthread_mutex_unlock(&tp_lock);
	if (event == RNICPI_NETDEV_ADDR_ADD || event == RNICPI_NETDEV_ADDR_DEL)
		raise_event(dev, RNICPI_EVENT_GID_CHANGE);
	else if (was != now)
		raise_event(dev, now ? RNICPI_EVENT_PORT_ACTIVE :
				       RNICPI_EVENT_PORT_ERR);
}

/* ------------------------------------------------------------------ */
/* Ops tables and registration                                         */
/* ------------------------------------------------------------------ */

/* resize_cq and the connection ops stay NULL: ual answers -EOPNOTSUPP. */
#define TP_OPS_COMMON                                                       \
	.device_destroy = tp_device_destroy,                                \
	.query_device = tp_query_device,                                    \
	.query_port = tp_query_port,                                        \
	.query_gid = tp_query_gid,                                          \
	.alloc_pd = tp_alloc_pd,                                            \
	.dealloc_pd = tp_dealloc_pd,                                        \
	.reg_mr = tp_reg_mr,                                                \
	.rereg_mr = tp_rereg_mr,                                            \
	.dereg_mr = tp_dereg_mr,                                            \
	.alloc_mw = tp_alloc_mw,                                            \
	.dealloc_mw = tp_dealloc_mw,                                        \
	.create_cq = tp_create_cq,                                          \
	.destroy_cq = tp_destroy_cq,                                        \
	.poll_cq = tp_poll_cq,                                              \
	.req_notify_cq = tp_req_notify_cq,                                  \
	.ack_cq_event = tp_ack_cq_event,                                    \
	.create_srq = tp_create_srq,                                        \
	.modify_srq = tp_modify_srq,                                        \
	.query_srq = tp_query_srq,                                          \
	.destroy_srq = tp_destroy_srq,                                      \
	.post_srq_recv = tp_post_srq_recv,                                  \
	.create_qp = tp_create_qp,                                          \
	.modify_qp = tp_modify_qp,                                          \
	.query_qp = tp_query_qp,                                            \
	.destroy_qp = tp_destroy_qp,                                        \
	.post_send = tp_post_send,                                          \
	.post_recv = tp_post_recv,                                          \
	.create_ah = tp_create_ah,                                          \
	.destroy_ah = tp_destroy_ah

static const struct rnicpi_device_ops tp_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.netdev_event = tp_netdev_event,
	TP_OPS_COMMON,
};

static const struct rnicpi_device_ops tp_ops_no_netdev_event = {
	.size = sizeof(struct rnicpi_device_ops),
	TP_OPS_COMMON,
};

/* As an older provider would be compiled: the table ends before create_ah,
 * so what follows counts as absent even though it is filled. */
static const struct rnicpi_device_ops tp_ops_short = {
	.size = offsetof(struct rnicpi_device_ops, create_ah),
	.netdev_event = tp_netdev_event,
	TP_OPS_COMMON,
};

static int tp_netdev_supported(const struct rnicpi_netdev *nd)
{
	return nd->flags & RNICPI_NETDEV_LOOPBACK ? 0 : -ENODEV;
}

static int parse_options(struct tp_device *dev,
			 const struct rnicpi_option *opt, const char *name)
{
	for (; opt && opt->key; opt++) {
		if (strcmp(opt->key, "max_qp") == 0) {
			char *end;
			unsigned long v = strtoul(opt->value, &end, 10);

			if (*end || end == opt->value || v < 1 || v > 1024) {
				fprintf(stderr, "testprov %s: max_qp=%s: expected 1..1024\n",
					name, opt->value);
				return -EINVAL;
			}
			dev->max_qp = (uint32_t)v;
		} else if (strcmp(opt->key, "netdev_event") == 0) {
			if (strcmp(opt->value, "off") == 0) {
				dev->base.ops = &tp_ops_no_netdev_event;
			} else if (strcmp(opt->value, "on") != 0) {
				fprintf(stderr, "testprov %s: netdev_event=%s: expected on or off\n",
					name, opt->value);
				return -EINVAL;
			}
		} else if (strcmp(opt->key, "complete_twice") == 0) {
			if (strcmp(opt->value, "on") && strcmp(opt->value, "off")) {
				fprintf(stderr, "testprov %s: complete_twice=%s: expected on or off\n",
					name, opt->value);
				return -EINVAL;
			}
			dev->complete_twice = strcmp(opt->value, "on") == 0;
		} else if (strcmp(opt->key, "kernel_pins") == 0) {
			if (strcmp(opt->value, "on") && strcmp(opt->value, "off")) {
				fprintf(stderr, "testprov %s: kernel_pins=%s: expected on or off\n",
					name, opt->value);
				return -EINVAL;
			}
			dev->kernel_pins = strcmp(opt->value, "on") == 0;
		} else if (strcmp(opt->key, "ops_size") == 0) {
			if (strcmp(opt->value, "short") == 0) {
				dev->base.ops = &tp_ops_short;
			} else if (strcmp(opt->value, "full") != 0) {
				fprintf(stderr, "testprov %s: ops_size=%s: expected short or full\n",
					name, opt->value);
				return -EINVAL;
			}
		} else {
			fprintf(stderr, "testprov %s: unknown option '%s'\n",
				name, opt->key);
			return -EINVAL;
		}
	}
	return 0;
}

static int tp_device_create(const struct rnicpi_netdev *nd, const char *name,
			    const struct rnicpi_option *options,
			    const struct rnicpi_core_ops *core,
			    struct rnicpi_device **out)
{
	struct tp_device *dev;
	int err;

	if (!core || core->size < offsetof(struct rnicpi_core_ops, conn_event))
		return -EINVAL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->base.ops = &tp_ops;
	dev->max_qp = 64;
	err = parse_options(dev, options, name);
	if (err)
		goto err_free;
	err = rnicpi_key_table_init(&dev->keys, 4096, NULL);
	if (err)
		goto err_free;
	snprintf(dev->base.name, sizeof(dev->base.name), "%s", name);
	dev->base.ifindex = nd->ifindex;
	dev->core = core;
	tp_copy_netdev(dev, nd);
	*out = &dev->base;
	return 0;

err_free:
	free(dev);
	return err;
}


/* -DTP_PROVIDER_NAME builds the same provider under another name: a
 * second provider for device-filter tests, or a duplicate. */
#ifndef TP_PROVIDER_NAME
#define TP_PROVIDER_NAME "test"
#endif

static const struct rnicpi_provider tp_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = TP_PROVIDER_NAME,
	.description = "in-memory test provider (never installed)",
	.transport = RNICPI_TRANSPORT_ROCE,
	.netdev_supported = tp_netdev_supported,
	.device_create = tp_device_create,
};

RNICPI_PROVIDER_DEFINE(test, &tp_provider)
