/* SPDX-License-Identifier: MIT */
/*
 * skel.c - the smallest honest hostrdma verbs provider: a starting point
 * for a vendor (docs/PROVIDERS.md). It makes one device, "skel_<ifname>",
 * on the loopback interface, answers the mandatory ops (device_destroy,
 * query_device, query_port), allocates protection domains and registers
 * memory with keys from the helper library's key table. It moves no data:
 * every other op is left NULL, and the core answers -EOPNOTSUPP for it.
 *
 * Built out of the hostrdma tree against the installed headers:
 *   cc -shared -fPIC $(pkg-config --cflags hostrdma-rnicpi) skel.c \
 *      $(pkg-config --libs hostrdma-rnicpi) -o skel.so
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hostrdma/rnicpi.h>
#include <hostrdma/rnicpi_util.h>

#define SKEL_MAX_MR 1024

struct skel_device {
	struct rnicpi_device dev;	/* the generic part, handed to the core */
	struct rnicpi_key_table keys;	/* lkey/rkey of each MR */
	uint32_t mtu;
};

struct skel_pd {
	struct rnicpi_pd pd;
};

struct skel_mr {
	struct rnicpi_mr mr;
	void *addr;
	uint64_t length;
	uint64_t iova;
	unsigned int access;
};

static struct skel_device *to_skel(struct rnicpi_device *dev)
{
	return container_of(dev, struct skel_device, dev);
}

static void skel_device_destroy(struct rnicpi_device *dev)
{
	struct skel_device *sd = to_skel(dev);

	rnicpi_key_table_fini(&sd->keys);
	free(sd);
}

static int skel_query_device(struct rnicpi_device *dev,
			     struct rnicpi_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->transport = RNICPI_TRANSPORT_ROCE;
	strcpy(attr->fw_ver, "skeleton 0");
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 4096;
	attr->max_mr = SKEL_MAX_MR;
	attr->max_pd = 64;
	/* No queue pairs, CQs, ...: their limits stay 0, their caps unset. */
	attr->phys_port_cnt = 1;
	return 0;
}

static enum rnicpi_mtu skel_mtu_code(uint32_t mtu)
{
	if (mtu >= 4096)
		return RNICPI_MTU_4096;
	if (mtu >= 2048)
		return RNICPI_MTU_2048;
	if (mtu >= 1024)
		return RNICPI_MTU_1024;
	if (mtu >= 512)
		return RNICPI_MTU_512;
	return RNICPI_MTU_256;
}

static int skel_query_port(struct rnicpi_device *dev, uint8_t port_num,
			   struct rnicpi_port_attr *attr)
{
	if (port_num != 1)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = RNICPI_PORT_ACTIVE;
	attr->max_mtu = RNICPI_MTU_4096;
	attr->active_mtu = skel_mtu_code(to_skel(dev)->mtu);
	attr->link_layer = RNICPI_LINK_LAYER_ETHERNET;
	attr->max_msg_sz = 0;
	return 0;
}

static int skel_alloc_pd(struct rnicpi_device *dev, struct rnicpi_pd **out)
{
	struct skel_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	*out = &p->pd;
	return 0;
}

static int skel_dealloc_pd(struct rnicpi_pd *pd)
{
	free(container_of(pd, struct skel_pd, pd));
	return 0;
}

static int skel_reg_mr(struct rnicpi_pd *pd, void *addr, uint64_t length,
		       uint64_t iova, unsigned int access,
		       struct rnicpi_mr **out)
{
	struct skel_device *sd = to_skel(pd->device);
	struct skel_mr *m;
	uint32_t key;
	int err;

	if ((access & (RNICPI_ACCESS_REMOTE_WRITE |
		       RNICPI_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & RNICPI_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	err = rnicpi_key_alloc(&sd->keys, m, &key);
	if (err) {
		free(m);
		return err;
	}
	m->addr = addr;
	m->length = length;
	m->iova = iova;
	m->access = access;
	m->mr.lkey = key;
	m->mr.rkey = key;
	*out = &m->mr;
	return 0;
}

static int skel_dereg_mr(struct rnicpi_mr *mr)
{
	struct skel_mr *m = container_of(mr, struct skel_mr, mr);
	struct skel_device *sd = to_skel(mr->pd->device);
	int err = rnicpi_key_free(&sd->keys, mr->lkey);

	if (err)
		return err;
	free(m);
	return 0;
}

static const struct rnicpi_device_ops skel_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.device_destroy = skel_device_destroy,
	.query_device = skel_query_device,
	.query_port = skel_query_port,
	.alloc_pd = skel_alloc_pd,
	.dealloc_pd = skel_dealloc_pd,
	.reg_mr = skel_reg_mr,
	.dereg_mr = skel_dereg_mr,
	/* Everything else NULL: the core answers -EOPNOTSUPP. */
};

/* A real provider checks here that its hardware sits behind @nd. */
static int skel_netdev_supported(const struct rnicpi_netdev *nd)
{
	return nd->flags & RNICPI_NETDEV_LOOPBACK ? 0 : -ENODEV;
}

static int skel_device_create(const struct rnicpi_netdev *nd,
			      const char *name,
			      const struct rnicpi_option *options,
			      const struct rnicpi_core_ops *core,
			      struct rnicpi_device **out)
{
	struct skel_device *sd;
	int err;

	/* No settings: any option is unknown. */
	if (options && options[0].key)
		return -EINVAL;
	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return -ENOMEM;
	err = rnicpi_key_table_init(&sd->keys, SKEL_MAX_MR, NULL);
	if (err) {
		free(sd);
		return err;
	}
	/* The core sets dev.core (== @core) after this returns; events go
	 * up through dev.core->async_event and conn_event. The skeleton has
	 * none to report. */
	sd->dev.ops = &skel_ops;
	strncpy(sd->dev.name, name, sizeof(sd->dev.name) - 1);
	sd->dev.ifindex = nd->ifindex;
	sd->mtu = nd->mtu;
	*out = &sd->dev;
	return 0;
}

static const struct rnicpi_provider skel_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = "skel",
	.description = "skeleton provider (examples/skeleton-provider)",
	.transport = RNICPI_TRANSPORT_ROCE,
	.netdev_supported = skel_netdev_supported,
	.device_create = skel_device_create,
};

RNICPI_PROVIDER_DEFINE(skel, &skel_provider)
