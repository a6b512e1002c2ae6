/* SPDX-License-Identifier: MIT */
/*
 * siw_main.c - the soft-iWARP provider: registration, device options,
 * device create/destroy, the per-device progress thread and the upcall
 * queue.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vp/siw/siw.h"

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes") ||
	    !strcmp(v, "true")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") ||
	    !strcmp(v, "false")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_u32(const char *v, uint32_t min, uint32_t max,
		     uint32_t *out)
{
	char *end;
	unsigned long long x;

	if (!*v || *v == '-')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x < min || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

int siw_options_parse(struct siw_options *o, const struct rnicpi_option *opt,
		      const char *devname)
{
	memset(o, 0, sizeof(*o));
	o->mpa_rev = MPA_REV2;
	o->mpa_crc = SIW_CRC_OFF;
	o->p2p = SIW_P2P_NONE;
	o->mpa_timeout_ms = SIW_DEFAULT_MPA_TIMEOUT_MS;
	o->ird = SIW_DEFAULT_IRD;
	o->ord = SIW_DEFAULT_ORD;
	o->nodelay = true;
	o->poll_rx = true;
	o->poll_tx = true;
	o->tx_batch = SIW_TX_BATCH;
	o->tx_pack = SIW_DEFAULT_TX_PACK;
	o->large_fpdu = true;
	o->tx_realign = true;
	o->tx_burst_ns = SIW_DEFAULT_TX_BURST_NS;
	o->busy_poll_us = SIW_DEFAULT_BUSY_POLL_US;
	o->park_lease_us = SIW_DEFAULT_PARK_LEASE_US;
	o->max_qp = SIW_MAX_QP;

	for (; opt && opt->key; opt++) {
		const char *k = opt->key, *v = opt->value ? opt->value : "";
		uint32_t u;
		int rc = 0;

		if (!strcmp(k, "mpa_rev")) {
			rc = parse_u32(v, 1, 2, &u);
			o->mpa_rev = (uint8_t)u;
		} else if (!strcmp(k, "mpa_crc")) {
			if (!strcmp(v, "off"))
				o->mpa_crc = SIW_CRC_OFF;
			else if (!strcmp(v, "on"))
				o->mpa_crc = SIW_CRC_ON;
			else if (!strcmp(v, "required"))
				o->mpa_crc = SIW_CRC_REQUIRED;
			else
				rc = -EINVAL;
		} else if (!strcmp(k, "mpa_crc_strict")) {
			rc = parse_bool(v, &o->mpa_crc_strict);
		} else if (!strcmp(k, "p2p")) {
			if (!strcmp(v, "none"))
				o->p2p = SIW_P2P_NONE;
			else if (!strcmp(v, "write"))
				o->p2p = SIW_P2P_WRITE;
			else if (!strcmp(v, "read"))
				o->p2p = SIW_P2P_READ;
			else
				rc = -EINVAL;
		} else if (!strcmp(k, "large_fpdu")) {
			rc = parse_bool(v, &o->large_fpdu);
		} else if (!strcmp(k, "tx_realign")) {
			rc = parse_bool(v, &o->tx_realign);
		} else if (!strcmp(k, "mpa_timeout_ms")) {
			rc = parse_u32(v, 1, 600000, &o->mpa_timeout_ms);
		} else if (!strcmp(k, "ird")) {
			rc = parse_u32(v, 1, SIW_MAX_IRD, &o->ird);
		} else if (!strcmp(k, "ord")) {
			rc = parse_u32(v, 1, SIW_MAX_ORD, &o->ord);
		} else if (!strcmp(k, "nodelay")) {
			rc = parse_bool(v, &o->nodelay);
		} else if (!strcmp(k, "zcopy_min")) {
			rc = parse_u32(v, 0, 1u << 31, &o->zcopy_min);
		} else if (!strcmp(k, "rts_delay_ms")) {
			rc = parse_u32(v, 0, 10000, &o->rts_delay_ms);
		} else if (!strcmp(k, "poll_rx")) {
			rc = parse_bool(v, &o->poll_rx);
		} else if (!strcmp(k, "poll_tx")) {
			rc = parse_bool(v, &o->poll_tx);
		} else if (!strcmp(k, "tx_batch")) {
			rc = parse_u32(v, 1, SIW_TX_BATCH, &o->tx_batch);
		} else if (!strcmp(k, "tx_pack")) {
			rc = parse_u32(v, 0, SIW_TX_PACK / 2, &o->tx_pack);
		} else if (!strcmp(k, "tx_burst_ns")) {
			rc = parse_u32(v, 0, 1000000, &o->tx_burst_ns);
		} else if (!strcmp(k, "busy_poll_us")) {
			rc = parse_u32(v, 0, 1000000, &o->busy_poll_us);
		} else if (!strcmp(k, "park_lease_us")) {
			rc = parse_u32(v, 10, 1000000, &o->park_lease_us);
		} else if (!strcmp(k, "max_qp")) {
			rc = parse_u32(v, 1, SIW_MAX_QP, &o->max_qp);
		} else if (!strcmp(k, "read_timeout_ms")) {
			rc = parse_u32(v, 0, 3600000, &o->read_timeout_ms);
		} else if (!strcmp(k, "tcp_user_timeout_ms")) {
			rc = parse_u32(v, 0, 3600000, &o->tcp_user_timeout_ms);
		} else if (!strcmp(k, "max_fpdu")) {
			rc = parse_u32(v, 64, 65536, &o->max_fpdu);
		} else {
			/* The user's setting: said aloud (the device
			 * is not made). */
			g_warning("%s: unknown option \"%s\"", devname, k);
			return -EINVAL;
		}
		if (rc) {
			g_warning("%s: bad value \"%s\" for option \"%s\"",
				  devname, v, k);
			return -EINVAL;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Upcall queue                                                        */
/* ------------------------------------------------------------------ */

struct siw_event {
	struct siw_list link;
	bool is_conn;
	const void *obj;	/* the QP or conn it names */
	struct rnicpi_async_event async;
	struct rnicpi_conn_event conn;
	uint8_t pdata[MPA_MAX_PRIVATE_DATA];
};

/* The responder conn an event names, if any: it holds a reference on it
 * from siw_dev_queue_conn() until delivered or purged. */
static struct siw_conn *event_conn(const struct siw_event *e)
{
	if (!e->is_conn || !e->conn.conn || e->conn.qp)
		return NULL;
	return to_siw_conn(e->conn.conn);
}

static void event_free(struct siw_event *e)
{
	struct siw_conn *conn = event_conn(e);

	free(e);
	if (conn)
		siw_conn_put(conn);
}

void siw_dev_queue_async(struct siw_device *dev,
			 const struct rnicpi_async_event *ev)
{
	struct siw_event *e = calloc(1, sizeof(*e));

	if (!e) {
		siw_info(dev, "out of memory queueing async event %d",
			 ev->type);
		return;
	}
	e->async = *ev;
	e->obj = ev->element.qp;
	pthread_mutex_lock(&dev->lock);
	siw_list_add_tail(&dev->events, &e->link);
	atomic_store(&dev->has_events, true);
	pthread_mutex_unlock(&dev->lock);
}

void siw_dev_queue_conn(struct siw_device *dev,
			const struct rnicpi_conn_event *ev)
{
	struct siw_event *e = calloc(1, sizeof(*e));

	if (!e) {
		siw_info(dev, "out of memory queueing connection event %d",
			 ev->type);
		return;
	}
	e->is_conn = true;
	e->conn = *ev;
	e->obj = ev->qp ? (const void *)ev->qp : (const void *)ev->conn;
	if (ev->private_data_len) {
		uint32_t n = ev->private_data_len;

		if (n > sizeof(e->pdata))
			n = sizeof(e->pdata);
		memcpy(e->pdata, ev->private_data, n);
		e->conn.private_data = e->pdata;
		e->conn.private_data_len = n;
	} else {
		e->conn.private_data = NULL;
	}
	if (event_conn(e))
		siw_conn_get(event_conn(e));
	pthread_mutex_lock(&dev->lock);
	siw_list_add_tail(&dev->events, &e->link);
	atomic_store(&dev->has_events, true);
	pthread_mutex_unlock(&dev->lock);
}

void siw_dev_purge_events(struct siw_device *dev, const void *obj)
{
	struct siw_list *l, *next, gone;

	siw_list_init(&gone);
	pthread_mutex_lock(&dev->lock);
	for (l = dev->events.next; l != &dev->events; l = next) {
		struct siw_event *e = container_of(l, struct siw_event, link);

		next = l->next;
		if (e->obj == obj) {
			siw_list_del(l);
			siw_list_add_tail(&gone, l);
		}
	}
	atomic_store(&dev->has_events, !siw_list_empty(&dev->events));
	pthread_mutex_unlock(&dev->lock);
	/* Freed with dev->lock dropped: a conn's last put defers its free,
	 * which takes that lock. */
	while (!siw_list_empty(&gone)) {
		l = gone.next;
		siw_list_del(l);
		event_free(container_of(l, struct siw_event, link));
	}
}

void siw_dev_deliver(struct siw_device *dev)
{
	/* Events this thread queued are seen here; another thread's are
	 * delivered by that thread or the one it woke. */
	if (!atomic_load(&dev->has_events))
		return;
	pthread_mutex_lock(&dev->lock);
	/* One thread at a time keeps events in order. */
	if (dev->delivering) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	dev->delivering = true;
	dev->delivering_thread = pthread_self();
	while (!siw_list_empty(&dev->events)) {
		struct siw_event *e = container_of(dev->events.next,
						   struct siw_event, link);

		siw_list_del(&e->link);
		atomic_store(&dev->has_events, !siw_list_empty(&dev->events));
		pthread_mutex_unlock(&dev->lock);
		if (e->is_conn) {
			if (dev->base.core && dev->base.core->conn_event)
				dev->base.core->conn_event(&dev->base,
							   &e->conn);
			/* rnicpi.h: a conn is gone after its ERROR. */
			if (event_conn(e) && e->conn.type == RNICPI_CONN_ERROR)
				siw_conn_core_done(event_conn(e));
		} else {
			if (dev->base.core && dev->base.core->async_event)
				dev->base.core->async_event(&dev->base,
							    &e->async);
		}
		event_free(e);
		pthread_mutex_lock(&dev->lock);
	}
	dev->delivering = false;
	pthread_cond_broadcast(&dev->batch_cond);
	pthread_mutex_unlock(&dev->lock);
}

/* ------------------------------------------------------------------ */
/* Progress thread                                                     */
/* ------------------------------------------------------------------ */

uint64_t siw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void siw_dev_wake(struct siw_device *dev)
{
	rnicpi_engine_wake(&dev->engine);
}

/* Every QP and conn socket dispatches here. */
static bool item_dispatch(struct rnicpi_source *src, uint32_t events)
{
	struct siw_item *item = container_of(src, struct siw_item, src);

	switch (item->type) {
	case SIW_ITEM_QP:
		/* Spin after data only: room to send (EPOLLOUT) comes back to
		 * a sender that is busy on the other core already. */
		return siw_qp_handle(container_of(item, struct siw_qp, item),
				     events);
	case SIW_ITEM_CONN:
		siw_conn_handle(container_of(item, struct siw_conn, item),
				events);
		break;
	}
	return false;
}

int siw_dev_poll_add(struct siw_device *dev, int fd, struct siw_item *item,
		     uint32_t events)
{
	int rc;

	item->src.dispatch = item_dispatch;
	rc = rnicpi_engine_add(&dev->engine, fd, &item->src, events);
	if (rc)
		siw_info(dev, "epoll add fd %d: %s", fd, g_strerror(-rc));
	return rc;
}

int siw_dev_poll_mod(struct siw_device *dev, int fd, struct siw_item *item,
		     uint32_t events)
{
	return rnicpi_engine_mod(&dev->engine, fd, &item->src, events);
}

void siw_dev_poll_del(struct siw_device *dev, int fd)
{
	rnicpi_engine_del(&dev->engine, fd);
}

/* A deadline passed. The item is freed only between passes (zombies), so
 * it is still there even if it was destroyed meanwhile; its handler looks
 * at its state under its own lock. */
static void timed_fire(void *arg)
{
	struct siw_timed *t = arg;
	struct siw_item *item = t->item;

	if (item->type == SIW_ITEM_QP) {
		struct siw_qp *qp = container_of(item, struct siw_qp, item);

		if (t == &qp->read_timed)
			siw_qp_read_timeout(qp);
		else
			siw_qp_timeout(qp);
	} else {
		siw_conn_timeout(container_of(item, struct siw_conn, item));
	}
}

void siw_dev_timed_add_ns(struct siw_device *dev, struct siw_timed *t,
			  uint64_t ns)
{
	if (!t->timer.fn)
		rnicpi_timer_init(&t->timer, timed_fire, t);
	rnicpi_timer_arm(&dev->engine, &t->timer, ns);
}

void siw_dev_timed_add(struct siw_device *dev, struct siw_timed *t,
		       uint32_t ms)
{
	siw_dev_timed_add_ns(dev, t, (uint64_t)ms * 1000000u);
}

void siw_dev_timed_del(struct siw_device *dev, struct siw_timed *t)
{
	rnicpi_timer_cancel(&dev->engine, &t->timer);
}

static void free_item(struct siw_item *item)
{
	if (item->type == SIW_ITEM_QP) {
		struct siw_qp *qp = container_of(item, struct siw_qp, item);

		pthread_mutex_destroy(&qp->lock);
		pthread_mutex_destroy(&qp->rq_lock);
		free(qp->sq);
		free(qp->rq);
		free(qp->inline_buf);
		free(qp->tx.pack);
		free(qp->rx.stash);
		free(qp->zc_pend);
		free(qp->orq);
		free(qp->irq);
		free(qp);
	} else if (item->type == SIW_ITEM_CONN) {
		siw_conn_free(container_of(item, struct siw_conn, item));
	}
}

static void free_zombies(struct siw_device *dev)
{
	struct siw_item *z;

	pthread_mutex_lock(&dev->lock);
	z = dev->zombies;
	dev->zombies = NULL;
	pthread_mutex_unlock(&dev->lock);
	while (z) {
		struct siw_item *next = z->zombie_next;

		free_item(z);
		z = next;
	}
}

void siw_dev_defer_free(struct siw_device *dev, struct siw_item *item)
{
	pthread_mutex_lock(&dev->lock);
	if (!dev->thread_running) {
		pthread_mutex_unlock(&dev->lock);
		free_item(item);
		return;
	}
	/* The progress thread may hold an event for @item from its current
	 * epoll batch; it frees zombies only between batches. */
	item->zombie_next = dev->zombies;
	dev->zombies = item;
	pthread_mutex_unlock(&dev->lock);
	siw_dev_wake(dev);
}

void siw_dev_quiesce(struct siw_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	while (dev->delivering &&
	       !pthread_equal(dev->delivering_thread, pthread_self()))
		pthread_cond_wait(&dev->batch_cond, &dev->lock);
	pthread_mutex_unlock(&dev->lock);
}

/* After each pass of the engine: the upcalls, then what was destroyed
 * (no event of the pass can name it any more), then wake who waits for
 * a pass to end. */
static bool after_pass(void *arg)
{
	struct siw_device *dev = arg;

	siw_dev_deliver(dev);
	free_zombies(dev);
	pthread_mutex_lock(&dev->lock);
	dev->batch_gen++;
	pthread_cond_broadcast(&dev->batch_cond);
	pthread_mutex_unlock(&dev->lock);
	return false;
}

int siw_dev_progress(struct siw_device *dev, int timeout_ms, bool *busy)
{
	return rnicpi_engine_run_once(&dev->engine, timeout_ms, busy, NULL);
}

void siw_dev_stop_thread(struct siw_device *dev)
{
	if (!dev->thread_running)
		return;
	rnicpi_engine_stop(&dev->engine);
	pthread_mutex_lock(&dev->lock);
	dev->thread_running = false;
	pthread_cond_broadcast(&dev->batch_cond);
	pthread_mutex_unlock(&dev->lock);
}

/* ------------------------------------------------------------------ */
/* Device                                                              */
/* ------------------------------------------------------------------ */

static int siw_netdev_supported(const struct rnicpi_netdev *nd)
{
	size_t i;

	/* iWARP runs over TCP: it needs an IP address. */
	for (i = 0; i < nd->n_addrs; i++)
		if (nd->addrs[i].ss_family == AF_INET ||
		    nd->addrs[i].ss_family == AF_INET6)
			return 0;
	return -EADDRNOTAVAIL;
}

void siw_device_destroy(struct rnicpi_device *d)
{
	struct siw_device *dev = to_siw_dev(d);

	siw_dev_stop_thread(dev);
	free_zombies(dev);
	siw_dev_deliver(dev);
	siw_dev_purge_events(dev, NULL);
	while (!siw_list_empty(&dev->events)) {
		struct siw_list *l = dev->events.next;

		siw_list_del(l);
		event_free(container_of(l, struct siw_event, link));
	}
	atomic_store(&dev->has_events, false);
	rnicpi_engine_fini(&dev->engine);
	rnicpi_key_table_fini(&dev->mr_keys);
	pthread_cond_destroy(&dev->batch_cond);
	pthread_cond_destroy(&dev->mr_cond);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->park_lock);
	siw_dbg(dev, "destroyed");
	free(dev);
}

static void mr_get_cb(void *obj)
{
	siw_mr_get(obj);
}

static int siw_device_create(const struct rnicpi_netdev *nd,
			     const char *name,
			     const struct rnicpi_option *options,
			     const struct rnicpi_core_ops *core,
			     struct rnicpi_device **out)
{
	struct siw_device *dev;
	int rc;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	g_strlcpy(dev->base.name, name ? name : "siw", sizeof(dev->base.name));
	rc = siw_options_parse(&dev->opts, options, dev->base.name);
	if (rc)
		goto err_free;
	dev->base.ops = &siw_device_ops;
	dev->base.core = core;
	dev->base.ifindex = nd ? nd->ifindex : 0;
	if (nd) {
		g_strlcpy(dev->ifname, nd->ifname, sizeof(dev->ifname));
		dev->mtu = nd->mtu;
		dev->nd_flags = nd->flags;
	}
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->park_lock, NULL);
	siw_list_init(&dev->parked);
	pthread_cond_init(&dev->batch_cond, NULL);
	pthread_cond_init(&dev->mr_cond, NULL);
	siw_list_init(&dev->events);
	atomic_init(&dev->next_qpn, 2); /* QPN 1 is the GSI QP elsewhere */
	rc = rnicpi_key_table_init(&dev->mr_keys, SIW_MAX_MR, mr_get_cb);
	if (rc)
		goto err_lock;
	/* The progress thread is the engine's. After socket traffic it
	 * keeps polling for busy_poll_us before it sleeps: a thread that
	 * sleeps between bursts is woken by the sender's softirq, which
	 * costs the sender the wake-up and all of TCP's receive processing,
	 * where a thread inside recvmsg() leaves that work queued to its own
	 * socket's backlog (over 127.0.0.1 the sender of a stream of RDMA
	 * Writes was the bottleneck, at 13 000 wake-ups a second of the
	 * target's thread). */
	rc = rnicpi_engine_init(&dev->engine, dev->base.name,
				dev->opts.busy_poll_us, after_pass, dev);
	if (rc)
		goto err_keys;
	rc = rnicpi_engine_start(&dev->engine);
	if (rc)
		goto err_engine;
	dev->thread_running = true;
	siw_dbg(dev, "created on %s (ifindex %d), MPA rev %u, crc %d, p2p %d, "
		"CRC32c %s", dev->ifname, dev->base.ifindex, dev->opts.mpa_rev,
		dev->opts.mpa_crc, dev->opts.p2p, siw_crc32c_impl());
	*out = &dev->base;
	return 0;

err_engine:
	rnicpi_engine_fini(&dev->engine);
err_keys:
	rnicpi_key_table_fini(&dev->mr_keys);
err_lock:
	pthread_cond_destroy(&dev->batch_cond);
	pthread_cond_destroy(&dev->mr_cond);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->park_lock);
err_free:
	free(dev);
	return rc;
}

const struct rnicpi_provider siw_provider = {
	.abi_version = RNICPI_ABI_VERSION,
	.size = sizeof(struct rnicpi_provider),
	.name = "siw",
	.description = "soft-iWARP (RDMAP/DDP/MPA over TCP)",
	.transport = RNICPI_TRANSPORT_IWARP,
	.netdev_supported = siw_netdev_supported,
	.device_create = siw_device_create,
};
