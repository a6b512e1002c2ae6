/* SPDX-License-Identifier: MIT */
/*
 * ual_context.c - the process's one access-layer context: shared open and
 * close, the provider and error lists.
 *
 * The first ual_open loads the configuration and the providers, opens
 * kal's netlink context and creates the devices; later opens hand out the
 * same context. The last ual_close refuses (-EBUSY, nothing changed)
 * while any device still has objects; otherwise it stops the netlink
 * watch, drops the subscriptions and the devices, and the next ual_open
 * starts afresh. A device a caller still holds a reference to outlives
 * the context (its provider stays loaded) but takes no new objects.
 * ual_open and ual_close must not be called from an event callback.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <pthread.h>

#include "ual/ual_private.h"

static GMutex open_lock;
static struct ual *the_ual; /* under open_lock */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/*
 * fork(): the child gets a copy of the parent's context but none of the
 * threads that serve it (providers' progress threads, the netlink watch),
 * and its sockets and epoll sets are shared with the parent: an epoll_ctl
 * or a setsockopt in the child would change the parent's. So the child
 * forgets the context without touching it (its memory is simply not
 * freed) and its next ual_open starts a new one, with devices of its own,
 * as rdma-core promises after ibv_fork_init. No other thread exists in
 * the child, so the lock is made anew whatever state it was copied in.
 */
static struct ual *volatile parent_ual; /* kept reachable, never touched */

static void ual_atfork_child(void)
{
	if (the_ual)
		parent_ual = the_ual;
	the_ual = NULL;
	g_mutex_init(&open_lock);
}

static void ual_atfork_register(void)
{
	pthread_atfork(NULL, NULL, ual_atfork_child);
}

void ual_ref(struct ual *u)
{
	g_atomic_int_inc(&u->ref);
}

void ual_unref(struct ual *u)
{
	if (!u || !g_atomic_int_dec_and_test(&u->ref))
		return;
	ual_events_fini(u);
	g_ptr_array_unref(u->load_errors);
	g_ptr_array_unref(u->device_errors);
	ual_config_free(u->config);
	g_mutex_clear(&u->lock);
	g_free(u);
}

static void provider_put_notify(gpointer p)
{
	ual_provider_put(p);
}

static void device_put_notify(gpointer d)
{
	ual_device_put(d);
}

/* Drop what the opens own: devices first (they use the providers). */
static void ual_teardown(struct ual *u)
{
	GPtrArray *devices, *providers;

	ual_devices_stop(u);
	ual_events_clear(u);
	g_mutex_lock(&u->lock);
	devices = g_steal_pointer(&u->devices);
	providers = g_steal_pointer(&u->providers);
	g_mutex_unlock(&u->lock);
	g_ptr_array_unref(devices);
	g_ptr_array_unref(providers);
	ual_unref(u);
}

int ual_open(struct ual **out)
{
	struct ual *u;
	int err;

	pthread_once(&atfork_once, ual_atfork_register);
	g_mutex_lock(&open_lock);
	if (the_ual) {
		the_ual->open_count++;
		*out = the_ual;
		g_mutex_unlock(&open_lock);
		return 0;
	}
	u = g_new0(struct ual, 1);
	u->ref = 1;
	u->open_count = 1;
	g_mutex_init(&u->lock);
	u->providers = g_ptr_array_new_with_free_func(provider_put_notify);
	u->devices = g_ptr_array_new_with_free_func(device_put_notify);
	u->load_errors = g_ptr_array_new_with_free_func(g_free);
	u->device_errors = g_ptr_array_new_with_free_func(g_free);
	ual_events_init(u);
	u->config = ual_config_load();
	ual_load_providers(u);
	err = ual_devices_start(u);
	if (err) {
		g_warning("cannot open the access layer: %s", g_strerror(-err));
		ual_teardown(u);
		g_mutex_unlock(&open_lock);
		return err;
	}
	the_ual = u;
	*out = u;
	g_mutex_unlock(&open_lock);
	return 0;
}

/* Lock every device's ctl; -EBUSY (all unlocked again) if one has
 * objects, else 0 with every device marked dead and unlocked. */
static int close_devices(GPtrArray *devices)
{
	guint i, n = devices->len;
	int err = 0;

	for (i = 0; i < n; i++)
		g_rec_mutex_lock(&((struct ual_device *)
				   devices->pdata[i])->obj.ctl);
	for (i = 0; i < n; i++) {
		struct ual_device *d = devices->pdata[i];

		if (d->obj.children) {
			g_info("%s cannot close: %u PDs and CQs still open on it",
			       d->obj.prefix, d->obj.children);
			err = -EBUSY;
		}
	}
	for (i = 0; i < n; i++) {
		struct ual_device *d = devices->pdata[i];

		if (!err)
			g_atomic_int_set(&d->obj.dead, 1);
		g_rec_mutex_unlock(&d->obj.ctl);
	}
	return err;
}

int ual_close(struct ual *u)
{
	GPtrArray *devices;
	int err;

	g_return_val_if_fail(u, -EINVAL);
	g_mutex_lock(&open_lock);
	if (u != the_ual || u->open_count == 0) {
		g_mutex_unlock(&open_lock);
		g_critical("ual_close of a context that is not open");
		return -EINVAL;
	}
	if (u->open_count > 1) {
		u->open_count--;
		g_mutex_unlock(&open_lock);
		return 0;
	}
	/* No new device from a hot-plug event while we look; no ual lock is
	 * held while waiting for each device's ctl. */
	g_mutex_lock(&u->lock);
	u->closing = true;
	g_mutex_unlock(&u->lock);
	devices = ual_device_list(u);
	err = close_devices(devices);
	g_ptr_array_unref(devices);
	if (err) {
		g_mutex_lock(&u->lock);
		u->closing = false;
		g_mutex_unlock(&u->lock);
		g_mutex_unlock(&open_lock);
		return err;
	}
	u->open_count = 0;
	the_ual = NULL;
	ual_teardown(u);
	g_mutex_unlock(&open_lock);
	return 0;
}

const GPtrArray *ual_provider_list(struct ual *u)
{
	return u->providers;
}

const GPtrArray *ual_load_errors(struct ual *u)
{
	return u->load_errors;
}

void ual_device_error(struct ual *u, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_warning("%s", msg);
	g_ptr_array_add(u->device_errors, msg);
}

GPtrArray *ual_device_errors(struct ual *u)
{
	GPtrArray *copy = g_ptr_array_new_with_free_func(g_free);
	guint i;

	g_mutex_lock(&u->lock);
	for (i = 0; i < u->device_errors->len; i++)
		g_ptr_array_add(copy, g_strdup(u->device_errors->pdata[i]));
	g_mutex_unlock(&u->lock);
	return copy;
}
