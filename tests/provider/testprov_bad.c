/* SPDX-License-Identifier: MIT */
/*
 * testprov_bad.c - broken providers the loader must refuse, one per
 * compile-time switch (tests/provider/local.mk builds each as a module):
 *  TP_BAD_ABI	built for RNICPI ABI version + 1
 *  TP_SMALL	descriptor `size` that ends before device_create
 *  TP_NO_CREATE	no device_create
 *  TP_NO_ENTRY	exports no rnicpi_provider_entry at all
 *  TP_NO_QUERY	makes a device whose ops lack query_device and
 *		query_port (refused at its first device)
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "rnicpi/rnicpi.h"

#ifdef TP_NO_QUERY
#include <stdlib.h>
#endif

#ifdef TP_NO_ENTRY
/* Something to export, so the module is a valid shared object. */
__attribute__((visibility("default"))) int testprov_not_an_entry(void);
__attribute__((visibility("default"))) int testprov_not_an_entry(void)
{
	return 0;
}
#else
#ifdef TP_NO_QUERY
/* Devices made and not yet destroyed: the test checks the refused device
 * was released (exported for dlsym). */
__attribute__((visibility("default"))) int testprov_noquery_live;
int testprov_noquery_live;

static void noquery_destroy(struct rnicpi_device *dev)
{
	testprov_noquery_live--;
	free(dev);
}

static const struct rnicpi_device_ops noquery_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.device_destroy = noquery_destroy,
};

static int bad_device_create(const struct rnicpi_netdev *nd,
			     const char *name,
			     const struct rnicpi_option *options,
			     const struct rnicpi_core_ops *core,
			     struct rnicpi_device **out)
{
	struct rnicpi_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return -ENOMEM;
	dev->ops = &noquery_ops;
	dev->ifindex = nd->ifindex;
	testprov_noquery_live++;
	*out = dev;
	return 0;
}
#elif !defined(TP_NO_CREATE)
static int bad_device_create(const struct rnicpi_netdev *nd,
			     const char *name,
			     const struct rnicpi_option *options,
			     const struct rnicpi_core_ops *core,
			     struct rnicpi_device **out)
{
	return -ENODEV;
}
#endif

static const struct rnicpi_provider bad_provider = {
#ifdef TP_BAD_ABI
	.abi_version = RNICPI_ABI_VERSION + 1,
	.name = "badabi",
#else
	.abi_version = RNICPI_ABI_VERSION,
#endif
#ifdef TP_NO_QUERY
	.name = "noquery",
#endif
#ifdef TP_SMALL
	.size = offsetof(struct rnicpi_provider, device_create),
	.name = "small",
#else
	.size = sizeof(struct rnicpi_provider),
#endif
#ifdef TP_NO_CREATE
	.name = "nocreate",
#else
	.device_create = bad_device_create,
#endif
	.description = "a broken provider for the loader tests",
	.transport = RNICPI_TRANSPORT_IWARP,
};

RNICPI_PROVIDER_DEFINE(bad, &bad_provider)
#endif
