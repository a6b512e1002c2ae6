/* SPDX-License-Identifier: MIT */
/*
 * verbs_main.c - the kernel's RDMA devices found through libibverbs,
 * one RNICPI device per ibverbs device and active port; device, port and
 * GID queries; the context's asynchronous events.
 *
 * Finding the port's network interface: the GID table entry 0 names it
 * (ibv_query_gid_ex's ndev_ifindex) on RoCE and on InfiniBand with IPoIB.
 * iWARP devices carry no interface in their GID table; their GID 0 is the
 * interface's MAC address (the kernel's siw, irdma, cxgb4), which is what
 * is matched then.
 *
 * PDs, MRs, memory windows (where the device has them; binds through
 * post_bind), CQs, SRQs, RC and UD QPs and address handles: verbs_verbs.c;
 * connections through librdmacm: verbs_cm.c (the events) and
 * verbs_cm_ops.c (the device ops).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "vp/verbs/verbs.h"

#define container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* One ibverbs device port that can become an RNICPI device. */
struct verbs_port {
	char name[RNICPI_DEVNAME_MAX];	/* "siw0", "mlx5_0:2" */
	char ibdev[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	enum rnicpi_transport transport;
	int ifindex;		/* 0 when the GID table does not say */
	uint8_t gid0[16];
	bool shadowed;		/* another port has its interface: logged */
};

static GMutex scan_lock;
static GArray *scan_ports; /* struct verbs_port; NULL before the scan */

static int port_ifindex(struct ibv_context *ctx, const char *ibdev,
			uint8_t port)
{
	struct ibv_gid_entry e;
	char path[256], name[IF_NAMESIZE + 1] = "";
	FILE *f;

	if (ibv_query_gid_ex(ctx, port, 0, &e, 0) == 0 && e.ndev_ifindex)
		return (int)e.ndev_ifindex;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/gid_attrs/ndevs/0", ibdev,
		 port);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(name, sizeof(name), f))
		name[0] = '\0';
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	return name[0] ? (int)if_nametoindex(name) : 0;
}

static void scan_device(struct ibv_device *dev, GArray *out)
{
	const char *ibdev = ibv_get_device_name(dev);
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_device_attr attr;
	uint8_t p;

	if (!ctx) {
		g_info("verbs: cannot open %s: %s", ibdev, g_strerror(errno));
		return;
	}
	if (ibv_query_device(ctx, &attr)) {
		g_info("verbs: cannot query %s: %s", ibdev, g_strerror(errno));
		goto out;
	}
	for (p = 1; p <= attr.phys_port_cnt; p++) {
		struct verbs_port vp = { 0 };
		struct ibv_port_attr pa;
		union ibv_gid gid;

		if (ibv_query_port(ctx, p, &pa))
			continue;
		vp.transport = verbs_transport(dev->node_type, pa.link_layer);
		if (!vp.transport) {
			g_debug("verbs: %s port %u: node type %s has no hostrdma transport",
				ibdev, p, ibv_node_type_str(dev->node_type));
			continue;
		}
		if (pa.state != IBV_PORT_ACTIVE) {
			g_debug("verbs: %s port %u is %s, not active", ibdev, p,
				ibv_port_state_str(pa.state));
			continue;
		}
		g_strlcpy(vp.ibdev, ibdev, sizeof(vp.ibdev));
		vp.port = p;
		verbs_device_name(ibdev, p, attr.phys_port_cnt, vp.name,
				  sizeof(vp.name));
		vp.ifindex = port_ifindex(ctx, ibdev, p);
		if (ibv_query_gid(ctx, p, 0, &gid) == 0)
			memcpy(vp.gid0, gid.raw, sizeof(vp.gid0));
		g_array_append_val(out, vp);
		g_debug("verbs: %s: %s port %u, ifindex %d", vp.name,
			verbs_transport_name(vp.transport), p, vp.ifindex);
	}
out:
	ibv_close_device(ctx);
}

/* The device list, read once per process; says so in one line when
 * there is no device at all. Under scan_lock. */
static GArray *ports_locked(void)
{
	struct ibv_device **list;
	int n = 0, i;

	if (scan_ports)
		return scan_ports;
	scan_ports = g_array_new(FALSE, TRUE, sizeof(struct verbs_port));
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		g_info("verbs: no RDMA device (libibverbs lists none); the provider makes no device");
		if (list)
			ibv_free_device_list(list);
		return scan_ports;
	}
	for (i = 0; i < n; i++)
		scan_device(list[i], scan_ports);
	ibv_free_device_list(list);
	return scan_ports;
}

static bool port_matches(const struct verbs_port *vp,
			 const struct rnicpi_netdev *nd)
{
	if (vp->ifindex)
		return vp->ifindex == nd->ifindex;
	return nd->hwaddr_len == 6 && memcmp(vp->gid0, nd->hwaddr, 6) == 0;
}

/* The port on @nd, copied to @out; -ENODEV when none is. The core makes
 * one device per provider and interface: a second ibverbs port on the
 * same interface is left out, and said so once. */
static int port_on(const struct rnicpi_netdev *nd, struct verbs_port *out)
{
	struct verbs_port *vp, *first = NULL;
	GArray *ports;
	guint i;

	g_mutex_lock(&scan_lock);
	ports = ports_locked();
	for (i = 0; i < ports->len; i++) {
		vp = &g_array_index(ports, struct verbs_port, i);
		if (!port_matches(vp, nd))
			continue;
		if (!first) {
			first = vp;
			*out = *vp;
		} else if (!vp->shadowed) {
			vp->shadowed = true;
			g_info("verbs: %s is on %s too, which carries %s already; hostrdma makes one device per interface, so %s is left out",
			       vp->name, nd->ifname, first->name, vp->name);
		}
	}
	g_mutex_unlock(&scan_lock);
	return first ? 0 : -ENODEV;
}

static int verbs_netdev_supported(const struct rnicpi_netdev *nd)
{
	struct verbs_port vp;

	return port_on(nd, &vp);
}

static int verbs_device_name_op(const struct rnicpi_netdev *nd, char *buf,
				size_t len)
{
	struct verbs_port vp;
	int err = port_on(nd, &vp);

	if (err)
		return err;
	if (strlen(vp.name) >= len)
		return -ENAMETOOLONG;
	g_strlcpy(buf, vp.name, len);
	return 0;
}

static struct verbs_dev *to_vd(struct rnicpi_device *d)
{
	return container_of(d, struct verbs_dev, rdev);
}

/* ------------------------------------------------------------------ */
/* Asynchronous events                                                 */
/* ------------------------------------------------------------------ */

void verbs_handle_async(struct verbs_dev *vd, const struct ibv_async_event *ev)
{
	struct rnicpi_async_event out = { 0 };
	int type = verbs_event_type(ev->event_type);

	if (type < 0) {
		g_debug("%s: async event %s ignored", vd->rdev.name,
			ibv_event_type_str(ev->event_type));
		return;
	}
	out.type = type;
	switch (ev->event_type) {
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		if (ev->element.port_num != vd->port)
			return; /* another port's device */
		out.element.port_num = 1;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		break;
	default:
		if (!verbs_async_element(ev, &out)) {
			g_debug("%s: async event %s for an object not ours",
				vd->rdev.name,
				ibv_event_type_str(ev->event_type));
			return;
		}
		break;
	}
	g_debug("%s: async event %s", vd->rdev.name,
		ibv_event_type_str(ev->event_type));
	if (vd->rdev.core && vd->rdev.core->async_event)
		vd->rdev.core->async_event(&vd->rdev, &out);
}

static bool async_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct verbs_dev *vd = container_of(src, struct verbs_dev, async_src);
	struct ibv_async_event ev;

	(void)events;
	while (ibv_get_async_event(vd->ctx, &ev) == 0) {
		struct ibv_async_event copy = ev;

		ibv_ack_async_event(&ev);
		verbs_handle_async(vd, &copy);
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Device and port queries                                             */
/* ------------------------------------------------------------------ */

static int verbs_query_device(struct rnicpi_device *d,
			      struct rnicpi_device_attr *attr)
{
	struct verbs_dev *vd = to_vd(d);
	struct ibv_port_attr pa;

	verbs_fill_device_attr(&vd->attr, vd->transport, attr);
	/* One RNICPI device per port. */
	attr->phys_port_cnt = 1;
	if (ibv_query_port(vd->ctx, vd->port, &pa) == 0)
		attr->max_msg_size = pa.max_msg_sz;
	return 0;
}

static int verbs_query_port(struct rnicpi_device *d, uint8_t port_num,
			    struct rnicpi_port_attr *attr)
{
	struct verbs_dev *vd = to_vd(d);
	struct ibv_port_attr pa;

	if (port_num != 1)
		return -EINVAL;
	if (ibv_query_port(vd->ctx, vd->port, &pa))
		return -errno;
	verbs_fill_port_attr(&pa, attr);
	if (vd->transport == RNICPI_TRANSPORT_IWARP)
		attr->gid_tbl_len = 0;
	return 0;
}

static int verbs_query_gid(struct rnicpi_device *d, uint8_t port_num,
			   uint32_t index, struct rnicpi_gid_entry *entry)
{
	struct verbs_dev *vd = to_vd(d);
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;

	if (port_num != 1 || ibv_query_port(vd->ctx, vd->port, &pa) ||
	    index >= (uint32_t)pa.gid_tbl_len)
		return -EINVAL;
	if (ibv_query_gid_ex(vd->ctx, vd->port, index, &e, 0))
		return -ENOENT;
	memset(entry, 0, sizeof(*entry));
	memcpy(entry->gid.raw, e.gid.raw, sizeof(entry->gid.raw));
	switch (e.gid_type) {
	case IBV_GID_TYPE_ROCE_V1:
		entry->type = RNICPI_GID_TYPE_ROCE_V1;
		break;
	case IBV_GID_TYPE_ROCE_V2:
		entry->type = RNICPI_GID_TYPE_ROCE_V2;
		break;
	default:
		entry->type = RNICPI_GID_TYPE_IB;
		break;
	}
	entry->ifindex = (int)e.ndev_ifindex;
	return 0;
}

static void verbs_device_destroy(struct rnicpi_device *d)
{
	struct verbs_dev *vd = to_vd(d);

	if (vd->engine_ok) {
		rnicpi_engine_stop(&vd->engine);
		rnicpi_engine_del(&vd->engine, vd->ctx->async_fd);
		verbs_cm_close(vd);
		rnicpi_engine_fini(&vd->engine);
	}
	ibv_close_device(vd->ctx);
	if (vd->qps)
		g_hash_table_destroy(vd->qps);
	g_mutex_clear(&vd->qps_lock);
	g_free(vd);
}

static struct rnicpi_device_ops verbs_ops = {
	.size = sizeof(struct rnicpi_device_ops),
	.device_destroy = verbs_device_destroy,
	.query_device = verbs_query_device,
	.query_port = verbs_query_port,
	.query_gid = verbs_query_gid,
};

static void fill_ops_once(void)
{
	verbs_fill_ops(&verbs_ops);
	verbs_cm_fill_ops(&verbs_ops);
}

static struct ibv_context *open_by_name(const char *ibdev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i] && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), ibdev) == 0)
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int verbs_device_create(const struct rnicpi_netdev *nd,
			       const char *name,
			       const struct rnicpi_option *options,
			       const struct rnicpi_core_ops *core,
			       struct rnicpi_device **out)
{
	static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
	struct verbs_port vp;
	struct verbs_dev *vd;
	int err, fl;

	(void)core;
	pthread_once(&ops_once, fill_ops_once);
	if (options && options[0].key) {
		g_warning("%s: unknown option \"%s\" (the verbs provider takes none)",
			  name, options[0].key);
		return -EINVAL;
	}
	err = port_on(nd, &vp);
	if (err)
		return err;
	vd = g_new0(struct verbs_dev, 1);
	vd->ctx = open_by_name(vp.ibdev);
	if (!vd->ctx) {
		err = errno ? -errno : -ENODEV;
		goto err_free;
	}
	if (ibv_query_device(vd->ctx, &vd->attr)) {
		err = errno ? -errno : -EIO;
		goto err_close;
	}
	vd->port = vp.port;
	vd->transport = vp.transport;
	vd->rdev.ops = &verbs_ops;
	vd->rdev.ifindex = nd->ifindex;
	g_strlcpy(vd->rdev.name, name, sizeof(vd->rdev.name));

	fl = fcntl(vd->ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(vd->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		err = -errno;
		goto err_close;
	}
	err = rnicpi_engine_init(&vd->engine, name, 0, NULL, NULL);
	if (err)
		goto err_close;
	vd->async_src.dispatch = async_dispatch;
	err = rnicpi_engine_add(&vd->engine, vd->ctx->async_fd, &vd->async_src,
				EPOLLIN);
	if (!err)
		verbs_cm_open(vd);
	if (!err)
		err = rnicpi_engine_start(&vd->engine);
	if (err) {
		verbs_cm_close(vd);
		rnicpi_engine_fini(&vd->engine);
		goto err_close;
	}
	vd->engine_ok = true;
	g_debug("%s: %s port %u (%s) on %s", name, vp.ibdev, vp.port,
		verbs_transport_name(vp.transport), nd->ifname);
	*out = &vd->rdev;
	return 0;

err_close:
	ibv_close_device(vd->ctx);
err_free:
	g_free(vd);
	return err;
}

const struct rnicpi_provider verbs_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = "verbs",
	.description = "kernel RDMA devices through libibverbs and librdmacm",
	/* Each device has its own (query_device); the provider's is what
	 * the core shows before a device exists. */
	.transport = RNICPI_TRANSPORT_ROCE,
	.netdev_supported = verbs_netdev_supported,
	.device_create = verbs_device_create,
	.device_name = verbs_device_name_op,
};
