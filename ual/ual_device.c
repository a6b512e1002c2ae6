/* SPDX-License-Identifier: MIT */
/*
 * ual_device.c - devices: one per provider and network interface chosen
 * by the selection rules, and the interface events that reach them.
 *
 * Selection. Every provider is offered every interface kal lists. A
 * device is named "<provider>_<ifname>". Without an include list (see
 * ual_config.c) the default applies: the interface is UP and RUNNING and
 * has at least one IPv4/IPv6 address (lo included). With one, exactly the
 * names matching it are tried, whatever the interface state. Excluded
 * names never are. Either way the provider's netdev_supported() has the
 * last word. A name the user wrote literally that cannot be created is
 * reported with the provider's reason (ual_device_errors()).
 *
 * Interface events (kal's monitor thread). The devices on the interface
 * get the provider's netdev_event with the interface's new state: CHANGE
 * for LINK_UP / LINK_DOWN / LINK_CHANGE and for LINK_DEL (flags 0, the
 * interface is gone), ADDR_ADD / ADDR_DEL for addresses. When the
 * provider has no netdev_event, ual raises the port events itself:
 * PORT_ACTIVE on LINK_UP, PORT_ERR on LINK_DOWN (kal sends one before the
 * LINK_DEL of an interface that was up), GID_CHANGE on an address change,
 * so subscribers see link changes on every provider. A device stays when its interface goes (objects may live on
 * it); its port is simply down.
 *
 * Hot plug. On LINK_NEW, LINK_UP and ADDR_ADD the interface is offered
 * again to the providers that have no device on it, with the same rules,
 * so an interface that appears (or gets its first address) later gets
 * its device then. Failures there are logged at debug level only, since
 * an interface usually comes up in several steps.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <string.h>

#include "ual/ual_private.h"

static void device_release(struct ual_obj *obj)
{
	struct ual_device *d = container_of(obj, struct ual_device, obj);

	g_debug("%s destroyed", d->obj.prefix);
	if (d->rdev)
		d->ops.device_destroy(d->rdev);
	g_hash_table_unref(d->qps);
	g_mutex_clear(&d->qp_lock);
	ual_provider_put(d->prov);
	ual_unref(d->u);
	g_free(d);
}

struct ual_device *ual_device_get(struct ual_device *d)
{
	ual_obj_get(&d->obj);
	return d;
}

void ual_device_put(struct ual_device *d)
{
	if (d)
		ual_obj_put(&d->obj);
}

static void device_put_notify(gpointer d)
{
	ual_device_put(d);
}

static unsigned int netdev_flags(unsigned int kal_flags)
{
	return (kal_flags & KAL_LINK_UP ? RNICPI_NETDEV_UP : 0) |
	       (kal_flags & KAL_LINK_RUNNING ? RNICPI_NETDEV_RUNNING : 0) |
	       (kal_flags & KAL_LINK_LOOPBACK ? RNICPI_NETDEV_LOOPBACK : 0);
}

static void netdev_from_link(const struct kal_link *l,
			     struct rnicpi_netdev *nd)
{
	memset(nd, 0, sizeof(*nd));
	nd->ifindex = l->ifindex;
	g_strlcpy(nd->ifname, l->ifname, sizeof(nd->ifname));
	nd->mtu = l->mtu;
	nd->flags = netdev_flags(l->flags);
	nd->hwaddr_len = MIN(l->hwaddr_len, (uint32_t)sizeof(nd->hwaddr));
	memcpy(nd->hwaddr, l->hwaddr, nd->hwaddr_len);
	if (l->addrs && l->addrs->len) {
		nd->addrs = (const struct sockaddr_storage *)l->addrs->data;
		nd->n_addrs = l->addrs->len;
	}
}

/* Under u->lock. */
static struct ual_device *find_device(struct ual *u, const char *name)
{
	guint i;

	for (i = 0; i < u->devices->len; i++) {
		struct ual_device *d = u->devices->pdata[i];

		if (strcmp(d->name, name) == 0)
			return d;
	}
	return NULL;
}

/*
 * Under u->lock: offer interface @l to provider @p, creating the device if
 * the selection wants it. @hotplug: from an interface event.
 */
static void consider(struct ual *u, struct ual_provider *p,
		     const struct kal_link *l, bool hotplug, GHashTable *seen)
{
	const struct ual_config *c = u->config;
	g_autofree char *name = NULL;
	g_autofree struct rnicpi_option *opts = NULL;
	struct rnicpi_device *rdev = NULL;
	struct rnicpi_netdev nd;
	struct ual_device *d;
	struct rnicpi_device_attr attr;
	bool named;
	int err;

	if (u->closing || p->refused)
		return;
	netdev_from_link(l, &nd);
	if (p->rp->size >= offsetof(struct rnicpi_provider, device_name) +
				   sizeof(p->rp->device_name) &&
	    p->rp->device_name) {
		char buf[RNICPI_DEVNAME_MAX] = "";

		err = p->rp->device_name(&nd, buf, sizeof(buf));
		if (err) {
			g_debug("provider '%s' has no device on %s: %s",
				p->rp->name, l->ifname, g_strerror(-err));
			return;
		}
		name = g_strdup(buf);
	} else {
		name = g_strdup_printf("%s_%s", p->rp->name, l->ifname);
	}
	if (find_device(u, name) || ual_config_excluded(c, name))
		return;
	named = ual_config_named(c, name) && !hotplug;
	if (c->explicit_include) {
		if (!ual_config_included(c, name))
			return;
		if (seen)
			g_hash_table_add(seen, g_strdup(name));
	} else if ((nd.flags & (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING)) !=
			   (RNICPI_NETDEV_UP | RNICPI_NETDEV_RUNNING) ||
		   nd.n_addrs == 0) {
		g_debug("no %s: interface %s is not up and running with an address",
			name, l->ifname);
		return;
	}
	if (strlen(name) >= RNICPI_DEVNAME_MAX) {
		ual_device_error(u, "device %s: name longer than %d bytes; not created",
				 name, RNICPI_DEVNAME_MAX - 1);
		return;
	}
	if (p->rp->netdev_supported) {
		err = p->rp->netdev_supported(&nd);
		if (err) {
			if (named)
				ual_device_error(u,
						 "device %s: provider '%s' does not run on interface %s: %s",
						 name, p->rp->name, l->ifname,
						 g_strerror(-err));
			else
				g_debug("no %s: provider '%s' does not run on %s: %s",
					name, p->rp->name, l->ifname,
					g_strerror(-err));
			return;
		}
	}
	opts = ual_config_options(c, p->rp->name);
	err = p->rp->device_create(&nd, name, opts, &ual_core_ops, &rdev);
	if (!err && (!rdev || !rdev->ops)) {
		g_warning("device %s: provider '%s' returned no device or no ops",
			  name, p->rp->name);
		err = -EPROTO;
		rdev = NULL; /* cannot be destroyed without ops */
	}
	if (!err && !ual_provider_check_ops(u, p, rdev->ops)) {
		/* Destroyed when it can be; without device_destroy, leaked:
		 * nothing else is safe to call. */
		if (rdev->ops->size >=
			    offsetof(struct rnicpi_device_ops, device_destroy) +
				    sizeof(rdev->ops->device_destroy) &&
		    rdev->ops->device_destroy)
			rdev->ops->device_destroy(rdev);
		return;
	}
	if (err) {
		if (hotplug)
			g_debug("device %s: device_create failed: %s", name,
				g_strerror(-err));
		else
			ual_device_error(u,
					 "device %s: provider '%s' failed to create it on %s: %s",
					 name, p->rp->name, l->ifname,
					 g_strerror(-err));
		return;
	}

	d = g_new0(struct ual_device, 1);
	d->transport = p->rp->transport;
	memset(&attr, 0, sizeof(attr));
	if (rdev->ops->query_device && rdev->ops->query_device(rdev, &attr) == 0) {
		if (attr.transport)
			d->transport = attr.transport;
		d->caps = attr.caps;
	}
	ual_obj_init(&d->obj, device_release);
	ual_obj_set_prefix(&d->obj, "%s:", name);
	ual_ref(u);
	d->u = u;
	d->prov = ual_provider_get(p);
	d->rdev = rdev;
	d->provider_netdev_event = ual_ops_complete(&d->ops, rdev->ops);
	g_strlcpy(d->name, name, sizeof(d->name));
	g_strlcpy(d->ifname, l->ifname, sizeof(d->ifname));
	d->ifindex = l->ifindex;
	d->next_id = 1;
	g_mutex_init(&d->qp_lock);
	d->qps = g_hash_table_new(g_direct_hash, g_direct_equal);
	rdev->provider = p->rp;
	rdev->core = &ual_core_ops;
	rdev->core_ctx = d;
	g_ptr_array_add(u->devices, d);
	g_debug("%s created by provider '%s' on %s (ifindex %d)%s", name,
		p->rp->name, l->ifname, l->ifindex,
		d->provider_netdev_event ? "" :
					   ", port events raised by ual");
}

/* Under u->lock: literal names in the include list that no provider and
 * interface made (those that did and failed were reported already). */
static void report_unmatched(struct ual *u, GHashTable *seen)
{
	const struct ual_config *c = u->config;
	guint i;

	for (i = 0; i < c->include_text->len; i++) {
		const char *text = c->include_text->pdata[i];

		if (strpbrk(text, "*?") || g_hash_table_contains(seen, text) ||
		    ual_config_excluded(c, text))
			continue;
		ual_device_error(u,
				 "device %s: selected in %s, but no provider and interface make that name",
				 text, c->devices_origin);
	}
}

/* Under u->lock: offer @l to every provider without a device on it. */
static void consider_link(struct ual *u, const struct kal_link *l,
			  bool hotplug, GHashTable *seen)
{
	guint i;

	for (i = 0; i < u->providers->len; i++)
		consider(u, u->providers->pdata[i], l, hotplug, seen);
}

/* Devices on @ifindex, each with a new reference. */
static GPtrArray *devices_on(struct ual *u, int ifindex)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(
		device_put_notify);
	guint i;

	g_mutex_lock(&u->lock);
	for (i = 0; u->devices && i < u->devices->len; i++) {
		struct ual_device *d = u->devices->pdata[i];

		if (d->ifindex == ifindex)
			g_ptr_array_add(out, ual_device_get(d));
	}
	g_mutex_unlock(&u->lock);
	return out;
}

static void on_kal_event(const struct kal_event *ev, void *user_data)
{
	struct ual *u = user_data;
	g_autoptr(kal_link) link = NULL;
	g_autoptr(GPtrArray) devices = NULL;
	enum rnicpi_netdev_event nev = RNICPI_NETDEV_CHANGE;
	enum rnicpi_event_type synth = RNICPI_EVENT_PORT_ERR;
	bool has_synth = true, hotplug = false;
	struct rnicpi_netdev nd;
	guint i;

	link = kal_nl_link_by_index(u->nl, ev->ifindex, NULL);
	switch (ev->type) {
	case KAL_EVENT_LINK_NEW:
		if (link) {
			g_mutex_lock(&u->lock);
			consider_link(u, link, true, NULL);
			g_mutex_unlock(&u->lock);
		}
		return;
	case KAL_EVENT_LINK_UP:
		synth = RNICPI_EVENT_PORT_ACTIVE;
		hotplug = true;
		break;
	case KAL_EVENT_LINK_DOWN:
		synth = RNICPI_EVENT_PORT_ERR;
		break;
	case KAL_EVENT_LINK_DEL:
		/* kal reported LINK_DOWN first if it was up. */
		has_synth = false;
		break;
	case KAL_EVENT_LINK_CHANGE:
		has_synth = false;
		break;
	case KAL_EVENT_ADDR_ADD:
		nev = RNICPI_NETDEV_ADDR_ADD;
		synth = RNICPI_EVENT_GID_CHANGE;
		hotplug = true;
		break;
	case KAL_EVENT_ADDR_DEL:
		nev = RNICPI_NETDEV_ADDR_DEL;
		synth = RNICPI_EVENT_GID_CHANGE;
		break;
	default:
		g_debug("interface event %d on ifindex %d ignored", ev->type,
			ev->ifindex);
		return;
	}

	if (link) {
		netdev_from_link(link, &nd);
	} else {
		memset(&nd, 0, sizeof(nd));
		nd.ifindex = ev->ifindex;
		g_strlcpy(nd.ifname, ev->ifname, sizeof(nd.ifname));
	}
	/* The event's flags are the state right after the change; the link
	 * cache may already be further on or not there yet. */
	if (ev->type != KAL_EVENT_ADDR_ADD && ev->type != KAL_EVENT_ADDR_DEL) {
		nd.flags = netdev_flags(ev->link_flags);
		if (ev->mtu)
			nd.mtu = ev->mtu;
	}
	if (ev->type == KAL_EVENT_LINK_DEL)
		nd.flags = 0;

	devices = devices_on(u, ev->ifindex);
	for (i = 0; i < devices->len; i++) {
		struct ual_device *d = devices->pdata[i];

		if (ual_obj_lock_alive(&d->obj, "netdev_event"))
			continue;
		g_debug("%s interface %s: %s", d->obj.prefix, nd.ifname,
			kal_event_type_name(ev->type));
		if (d->provider_netdev_event)
			d->ops.netdev_event(d->rdev, &nd, nev);
		g_rec_mutex_unlock(&d->obj.ctl);
		if (!d->provider_netdev_event && has_synth)
			ual_events_synthesize(d, synth);
	}

	if (hotplug && link) {
		g_mutex_lock(&u->lock);
		if (u->providers)
			consider_link(u, link, true, NULL);
		g_mutex_unlock(&u->lock);
	}
}

int ual_devices_start(struct ual *u)
{
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash,
							   g_str_equal,
							   g_free, NULL);
	g_autoptr(GPtrArray) links = NULL;
	guint i;
	int err;

	err = kal_nl_open(&u->nl);
	if (err) {
		u->nl = NULL;
		return err;
	}
	/* Subscribe first: nothing that changes while we list is lost, and
	 * consider() skips names that already have a device. */
	u->nl_sub = kal_nl_subscribe(u->nl, on_kal_event, u);
	links = kal_nl_links(u->nl);
	g_mutex_lock(&u->lock);
	for (i = 0; i < links->len; i++)
		consider_link(u, links->pdata[i], false, seen);
	report_unmatched(u, seen);
	g_mutex_unlock(&u->lock);
	g_debug("%u devices on %u interfaces, %u providers", u->devices->len,
		links->len, u->providers->len);
	return 0;
}

void ual_devices_stop(struct ual *u)
{
	if (!u->nl)
		return;
	if (u->nl_sub)
		kal_nl_unsubscribe(u->nl, u->nl_sub);
	u->nl_sub = 0;
	kal_nl_close(u->nl);
	u->nl = NULL;
}

/*
 * Devices the kernel drives (RNICPI_DEV_CAP_KERNEL_PINS: an RNIC, or the
 * kernel's own siw/rxe, through the verbs provider) come first, then the
 * software providers' devices; within each, the order of creation. A
 * client that tries devices in this order (docs/DEVICES.md) takes an RNIC
 * before a soft device on the same interface; HOSTRDMA_DEVICES or a named
 * device says otherwise.
 */
GPtrArray *ual_device_list(struct ual *u)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(
		device_put_notify);
	guint i;
	int pass;

	g_mutex_lock(&u->lock);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < u->devices->len; i++) {
			struct ual_device *d = u->devices->pdata[i];
			bool kernel = d->caps & RNICPI_DEV_CAP_KERNEL_PINS;

			if (kernel == (pass == 0))
				g_ptr_array_add(out, ual_device_get(d));
		}
	g_mutex_unlock(&u->lock);
	return out;
}

struct ual_device *ual_device_lookup(struct ual *u, const char *name)
{
	struct ual_device *d;

	g_mutex_lock(&u->lock);
	d = find_device(u, name);
	if (d)
		ual_device_get(d);
	g_mutex_unlock(&u->lock);
	return d;
}

struct ual_device *ual_device_by_ifindex(struct ual *u, int ifindex,
					 enum rnicpi_transport transport)
{
	struct ual_device *found = NULL;
	guint i;

	g_mutex_lock(&u->lock);
	for (i = 0; i < u->devices->len && !found; i++) {
		struct ual_device *d = u->devices->pdata[i];

		if (d->ifindex == ifindex &&
		    (!transport || d->transport == transport))
			found = ual_device_get(d);
	}
	g_mutex_unlock(&u->lock);
	return found;
}

const char *ual_device_name(const struct ual_device *d)
{
	return d->name;
}

const struct ual_provider *ual_device_provider(const struct ual_device *d)
{
	return d->prov;
}

enum rnicpi_transport ual_device_transport(const struct ual_device *d)
{
	return d->transport;
}

uint32_t ual_device_caps(const struct ual_device *d)
{
	return d->caps;
}

int ual_device_ifindex(const struct ual_device *d)
{
	return d->ifindex;
}

const char *ual_device_ifname(const struct ual_device *d)
{
	return d->ifname;
}

int ual_device_open(struct ual_device *d)
{
	int err;

	err = ual_obj_lock_alive(&d->obj, "device_open");
	if (err)
		return err;
	err = d->ops.device_open(d->rdev);
	g_rec_mutex_unlock(&d->obj.ctl);
	if (err)
		g_debug("%s device_open: %s", d->obj.prefix, g_strerror(-err));
	return err;
}

void ual_device_consumer_blocks(struct ual_device *d)
{
	if (ual_obj_read_alive(&d->obj))
		return;
	d->ops.consumer_blocks(d->rdev);
	g_rw_lock_reader_unlock(&d->obj.live);
}

int ual_device_query(struct ual_device *d, struct rnicpi_device_attr *attr)
{
	int err;

	err = ual_obj_lock_alive(&d->obj, "query_device");
	if (err)
		return err;
	memset(attr, 0, sizeof(*attr));
	err = d->ops.query_device(d->rdev, attr);
	g_rec_mutex_unlock(&d->obj.ctl);
	if (err)
		ual_obj_fail(&d->obj, err, "query_device");
	return err;
}

int ual_device_query_port(struct ual_device *d, uint8_t port,
			  struct rnicpi_port_attr *attr)
{
	int err;

	err = ual_obj_lock_alive(&d->obj, "query_port");
	if (err)
		return err;
	memset(attr, 0, sizeof(*attr));
	err = d->ops.query_port(d->rdev, port, attr);
	g_rec_mutex_unlock(&d->obj.ctl);
	if (err)
		ual_obj_fail(&d->obj, err, "query_port %u", port);
	return err;
}

int ual_device_query_gid(struct ual_device *d, uint8_t port, uint32_t index,
			 struct rnicpi_gid_entry *entry)
{
	int err;

	err = ual_obj_lock_alive(&d->obj, "query_gid");
	if (err)
		return err;
	memset(entry, 0, sizeof(*entry));
	err = d->ops.query_gid(d->rdev, port, index, entry);
	g_rec_mutex_unlock(&d->obj.ctl);
	if (err)
		ual_obj_fail(&d->obj, err, "query_gid port %u index %u", port,
			     index);
	return err;
}

struct rnicpi_device *ual_device_rnicpi(struct ual_device *d)
{
	return d->rdev;
}
