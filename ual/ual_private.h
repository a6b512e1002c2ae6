/* SPDX-License-Identifier: MIT */
/*
 * ual_private.h - what the files of ual/ share: the structures behind the
 * opaque handles of ual.h, the common object header with its locks and
 * counts, and the functions one file offers another.
 *
 * Lock order (outer first): the process-wide open lock (ual_context.c),
 * u->lock (providers, devices), an object's ctl (child before parent:
 * a create holds nothing while it reserves on the parents, a destroy
 * releases its own ctl first), that object's live lock, a device's
 * qp_lock, u->ev_lock. No lock of ual is held while a subscriber or the
 * connection handler runs.
 */
#ifndef UAL_PRIVATE_H
#define UAL_PRIVATE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "kal/kal.h"
#include "rnicpi/rnicpi.h"
#include "ual/ual.h"

#ifndef container_of
#define container_of(ptr, type, member)                                     \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ------------------------------------------------------------------ */
/* Common object header                                                */
/* ------------------------------------------------------------------ */

#define UAL_PREFIX_MAX (RNICPI_DEVNAME_MAX + 32)

/*
 * Every ual object (device, PD, MR, MW, CQ, SRQ, QP, AH) starts with this.
 *  - ref: memory lifetime. Creation gives one reference (the "creation
 *    reference") that destroy drops; lookups and children hold more.
 *  - dead: the provider object is gone (destroyed); set under ctl with
 *    live held for writing. Every op on a dead object is -ENODEV.
 *  - children: objects that name this one as parent or use it (MRs on a
 *    PD, QPs on a CQ); destroy is -EBUSY while it is not 0. Under ctl.
 *  - ctl: serialises the control path on this object (rnicpi.h asks the
 *    core to). Recursive because a provider may raise an upcall from
 *    inside an op and the subscriber may call back into the same object.
 *  - live: the data path (post, poll, arm, ack) holds it for reading,
 *    destroy for writing, so the provider object never goes away under a
 *    post running on another thread.
 */
struct ual_obj {
	gint ref;
	gint dead;		/* atomic; read without ctl on the data path */
	guint children;
	GRecMutex ctl;
	GRWLock live;
	void (*release)(struct ual_obj *obj);
	char prefix[UAL_PREFIX_MAX];	/* "QP[17] test_lo:" */
};

void ual_obj_init(struct ual_obj *obj, void (*release)(struct ual_obj *));
void ual_obj_set_prefix(struct ual_obj *obj, const char *fmt, ...)
	G_GNUC_PRINTF(2, 3);
void ual_obj_get(struct ual_obj *obj);
void ual_obj_put(struct ual_obj *obj);
static inline bool ual_obj_dead(struct ual_obj *obj)
{
	return g_atomic_int_get(&obj->dead) != 0;
}
/* Count a new child of @parent: -ENODEV (logged with @what) if @parent is
 * dead. The child undoes it with ual_obj_release_child. */
int ual_obj_reserve_child(struct ual_obj *parent, const char *what);
void ual_obj_release_child(struct ual_obj *parent);
/* Take ctl and check @obj is alive: 0 (ctl held) or -ENODEV (not held),
 * logged with @op. */
int ual_obj_lock_alive(struct ual_obj *obj, const char *op);
/* Take live for reading and check @obj is alive: 0 (held) or -ENODEV
 * (not held); not logged (data path). */
int ual_obj_read_alive(struct ual_obj *obj);
/* Under ctl: children check (-EBUSY logged, naming @children_what), then
 * live for writing. 0 with live held for writing. */
int ual_obj_begin_destroy(struct ual_obj *obj, const char *children_what);
/* After the provider's destroy: mark dead, drop live; ctl stays held. */
void ual_obj_end_destroy(struct ual_obj *obj);

#define ual_obj_warn(obj, fmt, ...)                                         \
	g_warning("%s " fmt, (obj)->prefix, ##__VA_ARGS__)
/*
 * A failure the caller gets back as @err, logged naming the object. Busy,
 * not supported, gone and try-again are answers a correct program handles,
 * so they are logged at info level (G_MESSAGES_DEBUG=hostrdma-ual shows
 * them); anything else is a warning.
 */
#define ual_obj_fail(obj, err, fmt, ...)                                    \
	do {                                                                \
		int ual_fail_err_ = (err);                                  \
		if (ual_fail_err_ == -EBUSY ||                              \
		    ual_fail_err_ == -EOPNOTSUPP ||                         \
		    ual_fail_err_ == -ENODEV || ual_fail_err_ == -EAGAIN)   \
			g_info("%s " fmt ": %s", (obj)->prefix,             \
			       ##__VA_ARGS__, g_strerror(-ual_fail_err_));  \
		else                                                        \
			g_warning("%s " fmt ": %s", (obj)->prefix,          \
				  ##__VA_ARGS__,                            \
				  g_strerror(-ual_fail_err_));              \
	} while (0)
#define ual_obj_debug(obj, fmt, ...)                                        \
	g_debug("%s " fmt, (obj)->prefix, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Providers                                                           */
/* ------------------------------------------------------------------ */

struct ual_provider {
	gint ref;
	const struct rnicpi_provider *rp;
	void *dl;	/* dlopen handle, NULL for a built-in */
	char *origin;	/* module path or "built-in" */
	bool refused;	/* its first device lacked a mandatory op */
};

struct ual_provider *ual_provider_get(struct ual_provider *p);
void ual_provider_put(struct ual_provider *p);

/* Built-ins first (configure's and ual_test_set_builtins'), then the
 * modules of the provider path, into u->providers and u->load_errors. */
void ual_load_providers(struct ual *u);

/* Under u->lock: does @ops (from @p's device_create) have every mandatory
 * op (rnicpi.h)? If not, @p is refused for good: a warning and a line in
 * u->load_errors name the provider and the first missing op. */
bool ual_provider_check_ops(struct ual *u, struct ual_provider *p,
			    const struct rnicpi_device_ops *ops);

/*
 * For tests: every later first ual_open registers exactly these entry
 * functions as built-in providers, instead of configure's built-ins (n may
 * be 0: none), so a suite sees only the providers it chose whatever the
 * build links in, and can prove the built-in path with a provider compiled
 * with -DRNICPI_BUILTIN. ual_test_reset_builtins() goes back to
 * configure's list.
 */
void ual_test_set_builtins(const rnicpi_provider_entry_fn *entries, size_t n);
void ual_test_reset_builtins(void);

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

struct ual_option {
	char *key;
	char *value;
};

struct ual_config {
	/* Device selection: GPatternSpec * and the text they came from. */
	GPtrArray *include;
	GPtrArray *include_text;
	GPtrArray *exclude;
	bool explicit_include;	/* include= or HOSTRDMA_DEVICES named some */
	char *devices_origin;	/* "HOSTRDMA_DEVICES" or the file name */
	/* provider name -> GPtrArray of struct ual_option *, in order */
	GHashTable *options;
};

struct ual_config *ual_config_load(void);
void ual_config_free(struct ual_config *c);
/* Is @name included (explicitly or not) and not excluded? */
bool ual_config_included(const struct ual_config *c, const char *name);
bool ual_config_excluded(const struct ual_config *c, const char *name);
/* Was @name written literally (no wildcard) in the include list? */
bool ual_config_named(const struct ual_config *c, const char *name);
/* NULL-terminated option list for @provider, or NULL if none; free with
 * g_free (the strings are the config's). */
struct rnicpi_option *ual_config_options(const struct ual_config *c,
					 const char *provider);

/* ------------------------------------------------------------------ */
/* The context                                                         */
/* ------------------------------------------------------------------ */

struct ual_sub;

struct ual {
	gint ref;		/* memory: the opens hold one, devices one each */
	guint open_count;	/* under the open lock */
	GMutex lock;		/* providers, devices, device_errors */
	GPtrArray *providers;	/* struct ual_provider *, one reference each */
	GPtrArray *load_errors; /* char * */
	GPtrArray *device_errors; /* char * */
	GPtrArray *devices;	/* struct ual_device *, one reference each */
	bool closing;		/* last close in progress: no new devices */
	struct ual_config *config;
	struct kal_nl *nl;
	guint nl_sub;

	/* Events (ual_events.c). */
	GMutex ev_lock;
	GCond ev_cond;
	GPtrArray *subs;	/* struct ual_sub * */
	guint next_sub_id;
	struct ual_sub *conn_sub;
};

void ual_ref(struct ual *u);
void ual_unref(struct ual *u);
/* Record a device-creation failure the user should see (also logged).
 * Called with u->lock held. */
void ual_device_error(struct ual *u, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

struct ual_device {
	struct ual_obj obj;	/* children: PDs and CQs */
	struct ual *u;		/* memory reference */
	struct ual_provider *prov;
	struct rnicpi_device *rdev;
	/* The provider's ops completed: every slot callable. */
	struct rnicpi_device_ops ops;
	bool provider_netdev_event; /* the provider filled netdev_event */
	char name[RNICPI_DEVNAME_MAX];
	char ifname[RNICPI_IFNAMSIZ];
	int ifindex;
	/* From the device's query_device at creation: its transport (a
	 * provider such as verbs runs several) and its caps. */
	enum rnicpi_transport transport;
	uint32_t caps;
	gint next_id;		/* numbers PDs, CQs, SRQs, AHs for logs */
	GMutex qp_lock;
	GHashTable *qps;	/* qp_num -> struct ual_qp * (borrowed) */
};

/* Create the devices of @u from kal's links and start watching events. */
int ual_devices_start(struct ual *u);
/* Stop watching events. Called before the devices are dropped. */
void ual_devices_stop(struct ual *u);
/* The device behind a provider's device (from core_ctx). */
static inline struct ual_device *ual_device_from_rnicpi(
	struct rnicpi_device *rdev)
{
	return rdev ? (struct ual_device *)rdev->core_ctx : NULL;
}

/*
 * Complete a provider's ops table: every slot the provider filled within
 * its `size` is copied, every other one is an explicit function returning
 * -EOPNOTSUPP (void ones do nothing). Returns whether netdev_event was the
 * provider's own.
 */
bool ual_ops_complete(struct rnicpi_device_ops *out,
		      const struct rnicpi_device_ops *in);

/* The upcall table handed to every provider. */
extern const struct rnicpi_core_ops ual_core_ops;
/* ual_hostsvc.c: rnicpi_core_ops.host_udp_socket. */
int ual_host_udp_socket(struct rnicpi_device *dev, const struct sockaddr *addr,
			socklen_t addrlen, int *udp_fd, int *fwd_fd,
			uint32_t *qpn_base, uint32_t *qpn_count);

/* ------------------------------------------------------------------ */
/* Objects                                                             */
/* ------------------------------------------------------------------ */

struct ual_pd {
	struct ual_obj obj;	/* children: MRs, MWs, QPs, SRQs, AHs */
	struct ual_device *dev;	/* memory reference */
	struct rnicpi_pd *rpd;
};

/* One registration: one provider MR with keys of its own. */
struct ual_mr {
	struct ual_obj obj;
	struct ual_pd *pd;	/* memory reference */
	struct rnicpi_mr *rmr;
	struct kal_pin *pin;
	uintptr_t addr;		/* addr, len, access as registered */
	size_t len;
	unsigned int access;
	uint64_t iova;
	uint32_t lkey, rkey;	/* kept readable after dereg */
	uint64_t max_len;	/* ual_mr_alloc: the longest link; else 0 */
};

struct ual_mw {
	struct ual_obj obj;
	struct ual_pd *pd;
	struct rnicpi_mw *rmw;
};

struct ual_cq {
	struct ual_obj obj;	/* children: QPs using it (per role) */
	struct ual_device *dev;
	struct rnicpi_cq *rcq;
	int fd;
	GSList *sources;	/* struct ual_cq_source *, under ctl */
};

struct ual_srq {
	struct ual_obj obj;	/* children: QPs using it */
	struct ual_pd *pd;
	struct rnicpi_srq *rsrq;
};

struct ual_qp {
	struct ual_obj obj;
	struct ual_pd *pd;
	struct ual_cq *send_cq, *recv_cq;
	struct ual_srq *srq;
	struct rnicpi_qp *rqp;
	uint32_t qp_num;
	gpointer user;
};

struct ual_ah {
	struct ual_obj obj;
	struct ual_pd *pd;
	struct rnicpi_ah *rah;
};

void ual_pd_get(struct ual_pd *pd);
void ual_pd_put(struct ual_pd *pd);
void ual_cq_get(struct ual_cq *cq);
void ual_cq_put(struct ual_cq *cq);
void ual_srq_get(struct ual_srq *srq);
void ual_srq_put(struct ual_srq *srq);

/* CQ sources (ual_cq.c): destroy them when the CQ goes. Under cq ctl. */
void ual_cq_detach_sources(struct ual_cq *cq);

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

void ual_events_init(struct ual *u);
/* Drop every subscription and the connection handler (last close). */
void ual_events_clear(struct ual *u);
void ual_events_fini(struct ual *u);
/* Fan @ev out to the subscribers of its device. */
void ual_events_dispatch(struct ual *u, const struct ual_async_event *ev);
/* Raise @type on @d's port 1 for a provider without netdev_event. */
void ual_events_synthesize(struct ual_device *d, enum rnicpi_event_type type);

#endif /* UAL_PRIVATE_H */
