/* SPDX-License-Identifier: MIT */
/*
 * Netlink context: libnl-route caches of links, addresses, routes and
 * neighbours kept current by a cache manager, a monitor thread applying the
 * kernel's notifications, and the changes reported to subscribers as
 * struct kal_event.
 *
 * Threads: the monitor thread is the only writer of the caches; readers
 * (snapshots, the route resolver) take nl->lock like it does. Change
 * callbacks of libnl run on the monitor thread with the lock held; they
 * only queue events, which are delivered after the lock is dropped, so a
 * subscriber may call back into kal.
 */
#include "config.h"

#include <signal.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/rtnetlink.h>

#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "kal/kal_int.h"

/* Enough for bursts of notifications (many addresses or neighbours at
 * once) without overrunning; an overrun costs a resync, not correctness. */
#define KAL_NL_RCVBUF (1024 * 1024)

struct kal_sub {
	guint id;
	kal_event_fn fn;
	void *user_data;
};

/* An address reported as added; hashed as raw bytes, so zero it first. */
struct kal_addr_key {
	int ifindex;
	uint8_t family;
	uint8_t prefixlen;
	uint8_t addr[16];
};

/* The kal_nl whose events this thread is delivering, if any: tells
 * unsubscribe and close that they were called from a callback. */
static __thread struct kal_nl *delivering;

int kal_nle_errno(int nle)
{
	static const int map[] = {
		[NLE_SUCCESS] = 0,
		[NLE_FAILURE] = EIO,
		[NLE_INTR] = EINTR,
		[NLE_BAD_SOCK] = EBADF,
		[NLE_AGAIN] = EAGAIN,
		[NLE_NOMEM] = ENOMEM,
		[NLE_EXIST] = EEXIST,
		[NLE_INVAL] = EINVAL,
		[NLE_RANGE] = ERANGE,
		[NLE_MSGSIZE] = EMSGSIZE,
		[NLE_OPNOTSUPP] = EOPNOTSUPP,
		[NLE_AF_NOSUPPORT] = EAFNOSUPPORT,
		[NLE_OBJ_NOTFOUND] = ENOENT,
		[NLE_NOATTR] = ENODATA,
		[NLE_MISSING_ATTR] = EINVAL,
		[NLE_AF_MISMATCH] = EAFNOSUPPORT,
		[NLE_SEQ_MISMATCH] = EILSEQ,
		[NLE_MSG_OVERFLOW] = EOVERFLOW,
		[NLE_MSG_TRUNC] = EMSGSIZE,
		[NLE_NOADDR] = EADDRNOTAVAIL,
		[NLE_SRCRT_NOSUPPORT] = EOPNOTSUPP,
		[NLE_MSG_TOOSHORT] = EBADMSG,
		[NLE_MSGTYPE_NOSUPPORT] = EOPNOTSUPP,
		[NLE_OBJ_MISMATCH] = EINVAL,
		[NLE_NOCACHE] = ENOENT,
		[NLE_BUSY] = EBUSY,
		[NLE_PROTO_MISMATCH] = EPROTONOSUPPORT,
		[NLE_NOACCESS] = EACCES,
		[NLE_PERM] = EPERM,
		[NLE_PKTLOC_FILE] = ENOENT,
		[NLE_PARSE_ERR] = EBADMSG,
		[NLE_NODEV] = ENODEV,
		[NLE_IMMUTABLE] = EPERM,
		[NLE_DUMP_INTR] = EINTR,
		[NLE_ATTRSIZE] = EBADMSG,
	};
	unsigned int code = (unsigned int)(nle < 0 ? -nle : nle);

	if (code >= G_N_ELEMENTS(map))
		return -EIO;
	return -map[code];
}

const char *kal_event_type_name(enum kal_event_type type)
{
	static const char *const names[] = {
		[KAL_EVENT_LINK_NEW] = "LINK_NEW",
		[KAL_EVENT_LINK_DEL] = "LINK_DEL",
		[KAL_EVENT_LINK_UP] = "LINK_UP",
		[KAL_EVENT_LINK_DOWN] = "LINK_DOWN",
		[KAL_EVENT_LINK_CHANGE] = "LINK_CHANGE",
		[KAL_EVENT_ADDR_ADD] = "ADDR_ADD",
		[KAL_EVENT_ADDR_DEL] = "ADDR_DEL",
	};

	if ((unsigned int)type >= G_N_ELEMENTS(names) || !names[type])
		return "UNKNOWN";
	return names[type];
}

static bool addr_key(struct rtnl_addr *a, struct kal_addr_key *key)
{
	struct nl_addr *local = rtnl_addr_get_local(a);

	memset(key, 0, sizeof(*key));
	if (!local || nl_addr_get_len(local) > sizeof(key->addr))
		return false;
	key->ifindex = rtnl_addr_get_ifindex(a);
	key->family = (uint8_t)rtnl_addr_get_family(a);
	key->prefixlen = (uint8_t)rtnl_addr_get_prefixlen(a);
	memcpy(key->addr, nl_addr_get_binary_addr(local),
	       nl_addr_get_len(local));
	return true;
}

static guint addr_key_hash(gconstpointer p)
{
	const uint8_t *b = p;
	guint h = 2166136261u;
	size_t i;

	/* FNV-1a over the zero-padded key */
	for (i = 0; i < sizeof(struct kal_addr_key); i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static gboolean addr_key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(struct kal_addr_key)) == 0;
}

static bool up_and_running(unsigned int flags)
{
	return (flags & (KAL_LINK_UP | KAL_LINK_RUNNING)) ==
	       (KAL_LINK_UP | KAL_LINK_RUNNING);
}

/* ------------------------------------------------------------------ */
/* Change callbacks (monitor thread, nl->lock held)                    */
/* ------------------------------------------------------------------ */

static struct kal_event *event_new(enum kal_event_type type, int ifindex,
				   const struct kal_link_state *st)
{
	struct kal_event *ev = g_new0(struct kal_event, 1);

	ev->type = type;
	ev->ifindex = ifindex;
	ev->addr.ss_family = AF_UNSPEC;
	if (st) {
		memcpy(ev->ifname, st->ifname, sizeof(ev->ifname));
		ev->link_flags = st->flags;
		ev->mtu = st->mtu;
	}
	return ev;
}

static void event_queue(struct kal_nl *nl, struct kal_event *ev)
{
	g_queue_push_tail(&nl->pending, ev);
}

static void link_changed(struct nl_cache *cache, struct nl_object *obj,
			 int action, void *data)
{
	struct kal_nl *nl = data;
	struct rtnl_link *link = (struct rtnl_link *)obj;
	int ifindex = rtnl_link_get_ifindex(link);
	struct kal_link_state now, *was;

	if (!kal_link_is_interface(link))
		return;
	kal_link_state_of(link, &now);
	was = g_hash_table_lookup(nl->link_state, GINT_TO_POINTER(ifindex));

	if (action == NL_ACT_DEL) {
		if (was && up_and_running(was->flags))
			event_queue(nl, event_new(KAL_EVENT_LINK_DOWN, ifindex,
						  &now));
		event_queue(nl, event_new(KAL_EVENT_LINK_DEL, ifindex, &now));
		g_hash_table_remove(nl->link_state, GINT_TO_POINTER(ifindex));
		return;
	}

	if (!was) {
		event_queue(nl, event_new(KAL_EVENT_LINK_NEW, ifindex, &now));
		if (up_and_running(now.flags))
			event_queue(nl, event_new(KAL_EVENT_LINK_UP, ifindex,
						  &now));
		g_hash_table_insert(nl->link_state, GINT_TO_POINTER(ifindex),
				    g_memdup2(&now, sizeof(now)));
		return;
	}

	if (up_and_running(was->flags) != up_and_running(now.flags))
		event_queue(nl, event_new(up_and_running(now.flags) ?
					  KAL_EVENT_LINK_UP :
					  KAL_EVENT_LINK_DOWN, ifindex, &now));
	if (was->mtu != now.mtu || was->hwaddr_len != now.hwaddr_len ||
	    memcmp(was->hwaddr, now.hwaddr, now.hwaddr_len) != 0 ||
	    strcmp(was->ifname, now.ifname) != 0)
		event_queue(nl, event_new(KAL_EVENT_LINK_CHANGE, ifindex,
					  &now));
	*was = now;
}

static struct kal_event *addr_event(struct kal_nl *nl,
				    enum kal_event_type type,
				    struct rtnl_addr *a)
{
	int ifindex = rtnl_addr_get_ifindex(a);
	struct kal_link_state *st =
		g_hash_table_lookup(nl->link_state, GINT_TO_POINTER(ifindex));
	struct kal_event *ev = event_new(type, ifindex, st);

	kal_sockaddr_from_nl_addr(rtnl_addr_get_local(a), ifindex, &ev->addr);
	ev->prefixlen = (uint8_t)rtnl_addr_get_prefixlen(a);
	return ev;
}

static void addr_changed(struct nl_cache *cache, struct nl_object *obj,
			 int action, void *data)
{
	struct kal_nl *nl = data;
	struct rtnl_addr *a = (struct rtnl_addr *)obj;
	struct kal_addr_key key;
	bool seen, usable;

	if (!addr_key(a, &key))
		return;
	seen = g_hash_table_contains(nl->addr_seen, &key);
	usable = action != NL_ACT_DEL && kal_addr_usable(a);

	if (usable && !seen) {
		event_queue(nl, addr_event(nl, KAL_EVENT_ADDR_ADD, a));
		g_hash_table_add(nl->addr_seen, g_memdup2(&key, sizeof(key)));
	} else if (!usable && seen) {
		/* deleted, or it became tentative / failed DAD */
		event_queue(nl, addr_event(nl, KAL_EVENT_ADDR_DEL, a));
		g_hash_table_remove(nl->addr_seen, &key);
	}
}

/* Record the initial contents as already known: subscribers get changes,
 * the snapshot functions give the state. */
static void state_init(struct kal_nl *nl)
{
	struct nl_object *obj;

	for (obj = nl_cache_get_first(nl->links); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_link *link = (struct rtnl_link *)obj;
		struct kal_link_state st;

		if (!kal_link_is_interface(link))
			continue;
		kal_link_state_of(link, &st);
		g_hash_table_insert(nl->link_state,
				    GINT_TO_POINTER(rtnl_link_get_ifindex(link)),
				    g_memdup2(&st, sizeof(st)));
	}
	for (obj = nl_cache_get_first(nl->addrs); obj;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		struct kal_addr_key key;

		if (kal_addr_usable(a) && addr_key(a, &key))
			g_hash_table_add(nl->addr_seen,
					 g_memdup2(&key, sizeof(key)));
	}
}

/* After lost notifications (receive buffer overrun), compare the caches
 * with a fresh dump; the change callbacks see the differences. */
static void caches_resync(struct kal_nl *nl)
{
	struct {
		struct nl_cache *cache;
		change_func_t cb;
		const char *name;
	} caches[] = {
		{ nl->links, link_changed, "link" },
		{ nl->addrs, addr_changed, "address" },
		{ nl->routes, NULL, "route" },
		{ nl->neighs, NULL, "neighbour" },
	};
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(caches); i++) {
		int err = nl_cache_resync(nl->sync_sock, caches[i].cache,
					  caches[i].cb, nl);

		if (err < 0)
			g_warning("netlink: cannot resync the %s cache: %s",
				  caches[i].name,
				  g_strerror(-kal_nle_errno(err)));
	}
}

/* ------------------------------------------------------------------ */
/* Subscribers                                                         */
/* ------------------------------------------------------------------ */

guint kal_nl_subscribe(struct kal_nl *nl, kal_event_fn fn, void *user_data)
{
	struct kal_sub *sub;

	g_return_val_if_fail(nl != NULL && fn != NULL, 0);
	sub = g_new0(struct kal_sub, 1);
	sub->fn = fn;
	sub->user_data = user_data;
	pthread_mutex_lock(&nl->sub_lock);
	sub->id = ++nl->next_sub_id;
	nl->subs = g_list_append(nl->subs, sub);
	pthread_mutex_unlock(&nl->sub_lock);
	return sub->id;
}

void kal_nl_unsubscribe(struct kal_nl *nl, guint id)
{
	GList *l;

	g_return_if_fail(nl != NULL);
	pthread_mutex_lock(&nl->sub_lock);
	for (l = nl->subs; l; l = l->next) {
		struct kal_sub *sub = l->data;

		if (sub->id == id) {
			nl->subs = g_list_delete_link(nl->subs, l);
			g_free(sub);
			break;
		}
	}
	if (!l)
		g_debug("netlink: unsubscribe: no subscription %u", id);
	/* From a callback, the one running is the caller itself (delivery
	 * is serial): it is out of the list and returns by itself. */
	while (delivering != nl && nl->running_sub == id && id != 0)
		pthread_cond_wait(&nl->sub_cond, &nl->sub_lock);
	pthread_mutex_unlock(&nl->sub_lock);
}

static void deliver(struct kal_nl *nl, const struct kal_event *ev)
{
	guint last = 0;

	for (;;) {
		struct kal_sub *next = NULL;
		kal_event_fn fn;
		void *user_data;
		GList *l;

		/* The list may change while a callback runs: find the next
		 * subscriber by id each time. */
		pthread_mutex_lock(&nl->sub_lock);
		for (l = nl->subs; l; l = l->next) {
			struct kal_sub *sub = l->data;

			if (sub->id > last) {
				next = sub;
				break;
			}
		}
		if (!next) {
			pthread_mutex_unlock(&nl->sub_lock);
			return;
		}
		last = next->id;
		fn = next->fn;
		user_data = next->user_data;
		nl->running_sub = next->id;
		pthread_mutex_unlock(&nl->sub_lock);

		fn(ev, user_data);

		pthread_mutex_lock(&nl->sub_lock);
		nl->running_sub = 0;
		pthread_cond_broadcast(&nl->sub_cond);
		pthread_mutex_unlock(&nl->sub_lock);
	}
}

static void log_event(const struct kal_event *ev)
{
	char addr[INET6_ADDRSTRLEN];

	if (ev->type == KAL_EVENT_ADDR_ADD || ev->type == KAL_EVENT_ADDR_DEL)
		g_debug("netlink: %s %s[%d] %s/%u",
			kal_event_type_name(ev->type), ev->ifname, ev->ifindex,
			kal_addr_str((const struct sockaddr *)&ev->addr, addr,
				     sizeof(addr)), ev->prefixlen);
	else
		g_debug("netlink: %s %s[%d] flags %#x mtu %u",
			kal_event_type_name(ev->type), ev->ifname, ev->ifindex,
			ev->link_flags, ev->mtu);
}

/* ------------------------------------------------------------------ */
/* Monitor thread                                                      */
/* ------------------------------------------------------------------ */

static gpointer monitor_main(gpointer data)
{
	struct kal_nl *nl = data;
	struct pollfd fds[2] = {
		{ .fd = nl_cache_mngr_get_fd(nl->mngr), .events = POLLIN },
		{ .fd = nl->stop_fd, .events = POLLIN },
	};

	for (;;) {
		struct kal_event *ev;
		int err;

		if (poll(fds, G_N_ELEMENTS(fds), -1) < 0) {
			if (errno == EINTR)
				continue;
			g_warning("netlink: monitor: poll: %s",
				  g_strerror(errno));
			break;
		}
		if (fds[1].revents)
			break;
		if (!fds[0].revents)
			continue;

		pthread_mutex_lock(&nl->lock);
		err = nl_cache_mngr_data_ready(nl->mngr);
		if (err < 0) {
			/* ENOBUFS: the kernel dropped notifications */
			g_info("netlink: lost notifications (%s), resyncing",
			       g_strerror(-kal_nle_errno(err)));
			caches_resync(nl);
		}
		pthread_mutex_unlock(&nl->lock);

		delivering = nl;
		while ((ev = g_queue_pop_head(&nl->pending))) {
			log_event(ev);
			deliver(nl, ev);
			g_free(ev);
		}
		delivering = NULL;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                        */
/* ------------------------------------------------------------------ */

static int sock_open(struct nl_sock **out, const char *what)
{
	struct nl_sock *sk = nl_socket_alloc();
	int err;

	if (!sk) {
		g_warning("netlink: cannot allocate the %s socket", what);
		return -ENOMEM;
	}
	err = nl_connect(sk, NETLINK_ROUTE);
	if (err < 0) {
		err = kal_nle_errno(err);
		g_warning("netlink: cannot open the %s socket: %s", what,
			  g_strerror(-err));
		nl_socket_free(sk);
		return err;
	}
	*out = sk;
	return 0;
}

int kal_nl_open(struct kal_nl **out)
{
	static const char *const names[] = { "route/link", "route/addr",
					     "route/route", "route/neigh" };
	struct kal_nl *nl;
	struct nl_cache **caches[4];
	change_func_t cbs[4] = { link_changed, addr_changed, NULL, NULL };
	sigset_t all, old;
	unsigned int i;
	int err;

	g_return_val_if_fail(out != NULL, -EINVAL);
	*out = NULL;
	nl = g_new0(struct kal_nl, 1);
	pthread_mutex_init(&nl->lock, NULL);
	pthread_mutex_init(&nl->query_lock, NULL);
	pthread_mutex_init(&nl->sub_lock, NULL);
	pthread_cond_init(&nl->sub_cond, NULL);
	g_queue_init(&nl->pending);
	nl->stop_fd = -1;
	nl->link_state = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	nl->addr_seen = g_hash_table_new_full(addr_key_hash, addr_key_equal,
					      g_free, NULL);
	caches[0] = &nl->links;
	caches[1] = &nl->addrs;
	caches[2] = &nl->routes;
	caches[3] = &nl->neighs;

	nl->mngr_sock = nl_socket_alloc();
	if (!nl->mngr_sock) {
		err = -ENOMEM;
		g_warning("netlink: cannot allocate the event socket");
		goto err_free;
	}
	err = nl_cache_mngr_alloc(nl->mngr_sock, NETLINK_ROUTE, 0, &nl->mngr);
	if (err < 0) {
		err = kal_nle_errno(err);
		nl->mngr = NULL;
		g_warning("netlink: cannot start the cache manager: %s",
			  g_strerror(-err));
		goto err_free;
	}
	err = nl_socket_set_buffer_size(nl->mngr_sock, KAL_NL_RCVBUF, 0);
	if (err < 0)
		g_debug("netlink: cannot enlarge the event socket buffer: %s",
			g_strerror(-kal_nle_errno(err)));

	for (i = 0; i < G_N_ELEMENTS(names); i++) {
		err = nl_cache_mngr_add(nl->mngr, names[i], cbs[i], nl,
					caches[i]);
		if (err < 0) {
			err = kal_nle_errno(err);
			g_warning("netlink: cannot fill the %s cache: %s",
				  names[i], g_strerror(-err));
			goto err_free;
		}
	}
	err = sock_open(&nl->sync_sock, "resync");
	if (err)
		goto err_free;
	err = sock_open(&nl->query_sock, "query");
	if (err)
		goto err_free;
	state_init(nl);

	nl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (nl->stop_fd < 0) {
		err = -errno;
		g_warning("netlink: eventfd: %s", g_strerror(errno));
		goto err_free;
	}
	/* No signal of the application's lands in this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	nl->monitor = g_thread_try_new("kal-netlink", monitor_main, nl, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!nl->monitor) {
		err = -EAGAIN;
		g_warning("netlink: cannot start the monitor thread");
		goto err_free;
	}
	g_debug("netlink: context %p open, %d links, %d addresses", nl,
		nl_cache_nitems(nl->links), nl_cache_nitems(nl->addrs));
	*out = nl;
	return 0;

err_free:
	kal_nl_close(nl);
	return err;
}

void kal_nl_close(struct kal_nl *nl)
{
	if (!nl)
		return;
	/* joining the monitor thread from itself would never return */
	g_return_if_fail(delivering != nl);

	if (nl->monitor) {
		uint64_t one = 1;

		if (write(nl->stop_fd, &one, sizeof(one)) != sizeof(one))
			g_warning("netlink: cannot stop the monitor thread: %s",
				  g_strerror(errno));
		g_thread_join(nl->monitor);
	}
	if (nl->stop_fd >= 0)
		close(nl->stop_fd);
	g_list_free_full(nl->subs, g_free);
	g_queue_clear_full(&nl->pending, g_free);
	/* frees the caches and closes (but does not free) our socket */
	nl_cache_mngr_free(nl->mngr);
	nl_socket_free(nl->mngr_sock);
	nl_socket_free(nl->sync_sock);
	nl_socket_free(nl->query_sock);
	g_hash_table_unref(nl->link_state);
	g_hash_table_unref(nl->addr_seen);
	pthread_cond_destroy(&nl->sub_cond);
	pthread_mutex_destroy(&nl->sub_lock);
	pthread_mutex_destroy(&nl->query_lock);
	pthread_mutex_destroy(&nl->lock);
	g_free(nl);
}
