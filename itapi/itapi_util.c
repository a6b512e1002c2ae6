/* SPDX-License-Identifier: MIT */
/*
 * itapi_util.c - the handle registry, consumer contexts, handle types,
 * address conversions and byte order helpers.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "itapi/itapi_priv.h"

/* ------------------------------------------------------------------ */
/* Handle registry                                                     */
/* ------------------------------------------------------------------ */

/* Live handles: object pointer -> itself. A lookup never dereferences a
 * pointer that is not in the table. */
static GRWLock registry_lock;
static GHashTable *registry;
/* In a fork()ed child: the handles the parent had (never dereferenced:
 * only to say why such a handle is refused). */
static GHashTable *parent_handles;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/*
 * Each thread remembers the last few handles it found live, valid while
 * registry_gen has not moved: it moves at every removal (after it, under
 * the writer's lock) and in a fork()ed child. A data path call validates
 * two or three handles (endpoint, LMR, EVD); through the table that was
 * a reader's lock and unlock and a hash lookup each, about 200
 * instructions (callgrind), 1000 per round trip of a ping-pong. A
 * handle found in the cache was in the table after the last removal, as
 * a lookup under the lock would have said.
 */
#define HANDLE_CACHE 4
static atomic_uint registry_gen = 1;	/* a thread's zeroed cache is stale */
static __thread struct {
	const void *h[HANDLE_CACHE];
	unsigned int gen, next;
} handle_cache;

/*
 * fork(): every handle the child inherits is the parent's. Its objects
 * are served by threads the child does not have, and their sockets, epoll
 * sets and eventfds are shared with the parent, so using or freeing one
 * in the child would act on the parent's (a setsockopt, an epoll_ctl).
 * The child therefore starts with no live handle: each inherited one is
 * refused as a handle that is not live (IT_ERR_INVALID_EP, _IA, ...) and
 * nothing of it is touched, freeing included; a child that wants RDMA
 * opens an IA of its own (ual and cm forget their contexts too). Registered buffers are MADV_DONTFORK and
 * are not mapped in the child at all (kal/kal.h).
 */
/* The lock as the child inherited it, in whatever state another thread
 * of the parent left it: kept, never used, so that what GLib allocated
 * for it stays reachable (valgrind would count it lost). */
static void *volatile parent_registry_lock_impl;

static void itapi_atfork_child(void)
{
	if (registry) {
		if (!parent_handles) {
			parent_handles = registry;
		} else {
			GHashTableIter it;
			gpointer h;

			g_hash_table_iter_init(&it, registry);
			while (g_hash_table_iter_next(&it, &h, NULL))
				g_hash_table_add(parent_handles, h);
		}
		registry = NULL;
	}
	parent_registry_lock_impl = registry_lock.p;
	g_rw_lock_init(&registry_lock);
	atomic_fetch_add(&registry_gen, 1);
	itapi_evq_atfork_child();
}

static void itapi_atfork_register(void)
{
	pthread_atfork(NULL, NULL, itapi_atfork_child);
}

static const char *const handle_kinds[] = {
	[IT_HANDLE_TYPE_ADDR] = "AH",	  [IT_HANDLE_TYPE_EP] = "EP",
	[IT_HANDLE_TYPE_EVD] = "EVD",	  [IT_HANDLE_TYPE_IA] = "IA",
	[IT_HANDLE_TYPE_LISTEN] = "LISTEN", [IT_HANDLE_TYPE_LMR] = "LMR",
	[IT_HANDLE_TYPE_PZ] = "PZ",	  [IT_HANDLE_TYPE_RMR] = "RMR",
	[IT_HANDLE_TYPE_UD_SVC_REQ] = "UDSVC", [IT_HANDLE_TYPE_SRQ] = "SRQ",
};

void itapi_obj_init(struct itapi_obj *obj, it_handle_type_enum_t type,
		    struct itapi_ia *ia, const char *kind)
{
	obj->type = type;
	obj->ia = ia;
	obj->context.ptr = NULL;
	if (ia && type != IT_HANDLE_TYPE_IA)
		snprintf(obj->prefix, sizeof(obj->prefix), "%s[%d] %s:",
			 kind ? kind : handle_kinds[type],
			 g_atomic_int_add(&ia->next_id, 1),
			 ual_device_name(ia->dev));
}

void itapi_handle_add(struct itapi_obj *obj)
{
	pthread_once(&atfork_once, itapi_atfork_register);
	g_rw_lock_writer_lock(&registry_lock);
	if (!registry)
		registry = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_hash_table_add(registry, obj);
	g_rw_lock_writer_unlock(&registry_lock);
}

void itapi_handle_del(struct itapi_obj *obj)
{
	g_rw_lock_writer_lock(&registry_lock);
	if (registry) {
		g_hash_table_remove(registry, obj);
		if (g_hash_table_size(registry) == 0)
			g_clear_pointer(&registry, g_hash_table_destroy);
	}
	atomic_fetch_add_explicit(&registry_gen, 1, memory_order_release);
	g_rw_lock_writer_unlock(&registry_lock);
}

struct itapi_obj *itapi_handle_any(const void *h)
{
	unsigned int gen = atomic_load_explicit(&registry_gen,
						memory_order_acquire);
	struct itapi_obj *obj = NULL;
	int i;

	if (!h)
		return NULL;
	if (handle_cache.gen == gen)
		for (i = 0; i < HANDLE_CACHE; i++)
			if (handle_cache.h[i] == h)
				return (struct itapi_obj *)h;
	g_rw_lock_reader_lock(&registry_lock);
	if (registry && g_hash_table_contains(registry, h))
		obj = (struct itapi_obj *)h;
	g_rw_lock_reader_unlock(&registry_lock);
	if (obj) {
		if (handle_cache.gen != gen) {
			memset(&handle_cache, 0, sizeof(handle_cache));
			handle_cache.gen = gen;
		}
		handle_cache.h[handle_cache.next++ % HANDLE_CACHE] = h;
	}
	if (!obj && parent_handles && g_hash_table_contains(parent_handles, h))
		g_warning("handle %p was made by the parent process before "
			  "fork(): a child cannot use or free it, it opens an "
			  "IA of its own", h);
	return obj;
}

struct itapi_obj *itapi_handle_lookup(const void *h,
				      it_handle_type_enum_t type)
{
	struct itapi_obj *obj = itapi_handle_any(h);

	return obj && obj->type == type ? obj : NULL;
}

it_status_t it_get_consumer_context(it_handle_t handle, it_context_t *context)
{
	struct itapi_obj *obj = itapi_handle_any(handle);

	if (!obj)
		return IT_FAIL0(IT_ERR_INVALID_HANDLE, "handle %p is not live",
				handle);
	if (!context)
		return IT_FAIL(obj, IT_ERR_FAULT, "context is NULL");
	*context = obj->context;
	return IT_SUCCESS;
}

it_status_t it_set_consumer_context(it_handle_t handle, it_context_t context)
{
	struct itapi_obj *obj = itapi_handle_any(handle);

	if (!obj)
		return IT_FAIL0(IT_ERR_INVALID_HANDLE, "handle %p is not live",
				handle);
	obj->context = context;
	return IT_SUCCESS;
}

it_status_t it_get_handle_type(it_handle_t handle,
			       it_handle_type_enum_t *type_of_handle)
{
	struct itapi_obj *obj = itapi_handle_any(handle);

	if (!obj)
		return IT_FAIL0(IT_ERR_INVALID_HANDLE, "handle %p is not live",
				handle);
	if (!type_of_handle)
		return IT_FAIL(obj, IT_ERR_FAULT, "type_of_handle is NULL");
	*type_of_handle = obj->type;
	return IT_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Byte order                                                          */
/* ------------------------------------------------------------------ */

uint64_t it_hton64(uint64_t hostint)
{
	return htobe64(hostint);
}

uint64_t it_ntoh64(uint64_t netint)
{
	return be64toh(netint);
}

/* ------------------------------------------------------------------ */
/* Addresses                                                           */
/* ------------------------------------------------------------------ */

static const uint8_t v4mapped_prefix[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

it_status_t it_convert_net_addr(const it_net_addr_t *source_addr,
				it_net_addr_type_t addr_type,
				it_net_addr_t *destination_addr)
{
	const it_net_addr_t *s = source_addr;
	it_net_addr_t d;

	if (!s || !destination_addr)
		return IT_FAIL0(IT_ERR_FAULT, "source or destination is NULL");
	memset(&d, 0, sizeof(d));
	d.addr_type = addr_type;
	switch (s->addr_type) {
	case IT_IPV4:
		if (addr_type == IT_IPV4) {
			d.addr.ipv4 = s->addr.ipv4;
			break;
		}
		if (addr_type != IT_IPV6 && addr_type != IT_IB_GID)
			goto invalid;
		/* IPv4 in IPv6 (RFC 4291 §2.5.5.2); a RoCEv2 GID of an IPv4
		 * address has the same form. */
		memcpy(d.addr.ipv6.s6_addr, v4mapped_prefix, 12);
		memcpy(d.addr.ipv6.s6_addr + 12, &s->addr.ipv4, 4);
		break;
	case IT_IPV6:
	case IT_IB_GID:
		if (addr_type == IT_IPV6 || addr_type == IT_IB_GID) {
			d.addr.ipv6 = s->addr.ipv6;
			break;
		}
		if (addr_type != IT_IPV4 ||
		    memcmp(s->addr.ipv6.s6_addr, v4mapped_prefix, 12) != 0)
			goto invalid;
		memcpy(&d.addr.ipv4, s->addr.ipv6.s6_addr + 12, 4);
		break;
	case IT_VIA_HOSTADDR:
		if (addr_type != IT_VIA_HOSTADDR)
			goto invalid;
		if (s->addr.via.len > IT_MAX_VIA_ADDR_LEN)
			return IT_FAIL0(IT_ERR_INVALID_NETADDR,
					"VIA address length %u over %d",
					s->addr.via.len, IT_MAX_VIA_ADDR_LEN);
		d.addr.via = s->addr.via;
		break;
	default:
		return IT_FAIL0(IT_ERR_INVALID_NETADDR,
				"source address type %d is none of IT_IPV4, IT_IPV6, IT_IB_GID, IT_VIA_HOSTADDR",
				s->addr_type);
	}
	*destination_addr = d;
	return IT_SUCCESS;

invalid:
	return IT_FAIL0(IT_ERR_INVALID_CONVERSION,
			"address type %d cannot be expressed as type %d",
			s->addr_type, addr_type);
}

int itapi_net_addr_to_sockaddr(const it_net_addr_t *na,
			       struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	switch (na->addr_type) {
	case IT_IPV4: {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		in->sin_addr = na->addr.ipv4;
		return 0;
	}
	case IT_IPV6:
	case IT_IB_GID: {
		struct sockaddr_in6 *in6 = (void *)ss;

		if (memcmp(na->addr.ipv6.s6_addr, v4mapped_prefix, 12) == 0) {
			struct sockaddr_in *in = (void *)ss;

			in->sin_family = AF_INET;
			memcpy(&in->sin_addr, na->addr.ipv6.s6_addr + 12, 4);
			return 0;
		}
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = na->addr.ipv6;
		return 0;
	}
	default:
		return -EAFNOSUPPORT;
	}
}

void itapi_sockaddr_to_net_addr(const struct sockaddr_storage *ss,
				 it_net_addr_t *na)
{
	memset(na, 0, sizeof(*na));
	if (ss->ss_family == AF_INET) {
		na->addr_type = IT_IPV4;
		na->addr.ipv4 = ((const struct sockaddr_in *)(const void *)ss)
					->sin_addr;
	} else if (ss->ss_family == AF_INET6) {
		na->addr_type = IT_IPV6;
		na->addr.ipv6 = ((const struct sockaddr_in6 *)(const void *)ss)
					->sin6_addr;
	}
}

void itapi_path_from_sockaddrs(struct itapi_ia *ia, size_t spigot_id,
			       const struct sockaddr_storage *local,
			       const struct sockaddr_storage *remote,
			       it_path_t *path)
{
	it_net_addr_t l, r;

	memset(path, 0, sizeof(*path));
	path->spigot_id = spigot_id;
	itapi_sockaddr_to_net_addr(local, &l);
	itapi_sockaddr_to_net_addr(remote, &r);
	if (ia->transport == RNICPI_TRANSPORT_IWARP) {
		it_iwarp_net_endpoint_t *iw = &path->remote.iwarp;

		if (r.addr_type == IT_IPV4) {
			iw->ip_vers = IT_IP_VERS_IPV4;
			iw->raddr.ipv4 = r.addr.ipv4;
			if (l.addr_type == IT_IPV4)
				iw->laddr.ipv4 = l.addr.ipv4;
		} else if (r.addr_type == IT_IPV6) {
			iw->ip_vers = IT_IP_VERS_IPV6;
			iw->raddr.ipv6 = r.addr.ipv6;
			if (l.addr_type == IT_IPV6)
				iw->laddr.ipv6 = l.addr.ipv6;
		}
	} else {
		it_ib_net_endpoint_t *ib = &path->remote.ib;
		it_net_addr_t g;

		/* RoCE: the GIDs are the IP addresses (IPv4-mapped). */
		if (it_convert_net_addr(&l, IT_IB_GID, &g) == IT_SUCCESS)
			ib->local_port_gid = g.addr.gid;
		if (it_convert_net_addr(&r, IT_IB_GID, &g) == IT_SUCCESS)
			ib->remote_port_gid = g.addr.gid;
		ib->partition_key = 0xffff;
	}
}

const char *itapi_sockaddr_str(const struct sockaddr_storage *ss, char *buf,
			       size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)(const void *)ss)
				   ->sin_addr,
			  host, sizeof(host));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)(const void *)ss)
				   ->sin6_addr,
			  host, sizeof(host));
	snprintf(buf, len, "%s", host);
	return buf;
}

unsigned int itapi_privs_to_access(it_mem_priv_t privs)
{
	unsigned int a = 0;

	if (privs & IT_PRIV_LOCAL_WRITE)
		a |= RNICPI_ACCESS_LOCAL_WRITE;
	if (privs & IT_PRIV_REMOTE_READ)
		a |= RNICPI_ACCESS_REMOTE_READ;
	/* Verbs need local write under remote write and atomics (IBA
	 * 10.6.3.1); IT-API does not ask the consumer to say it twice. */
	if (privs & IT_PRIV_REMOTE_WRITE)
		a |= RNICPI_ACCESS_REMOTE_WRITE | RNICPI_ACCESS_LOCAL_WRITE;
	if (privs & IT_PRIV_ATOMIC)
		a |= RNICPI_ACCESS_REMOTE_ATOMIC | RNICPI_ACCESS_LOCAL_WRITE;
	return a;
}
