/* SPDX-License-Identifier: MIT */
/* QP state names, completion ring and key table shared by the software
 * providers. */
#include "config.h"

#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "rnicpi/rnicpi_util.h"

/* ------------------------------------------------------------------ */
/* Debug logging                                                       */
/* ------------------------------------------------------------------ */

static const char *debug_env;	/* G_MESSAGES_DEBUG at the first call */

bool rnicpi_debug_list_names(const char *list, const char *domain)
{
	/* GLib's rule: domains separated by spaces or commas, in which
	 * "all" matches every one. */
	while (list && *list) {
		size_t n = strcspn(list, " ,");

		if ((n == 3 && !strncmp(list, "all", 3)) ||
		    (domain && n && n == strlen(domain) &&
		     !strncmp(list, domain, n)))
			return true;
		list += n;
		list += strspn(list, " ,");
	}
	return false;
}

bool rnicpi_debug_wanted(const char *domain)
{
	static gsize once;

	if (g_once_init_enter(&once)) {
		debug_env = g_strdup(g_getenv("G_MESSAGES_DEBUG"));
		g_once_init_leave(&once, 1);
	}
	if (G_UNLIKELY(g_log_get_debug_enabled()))
		return true;
	return G_UNLIKELY(debug_env != NULL) &&
	       rnicpi_debug_list_names(debug_env, domain);
}

/* ------------------------------------------------------------------ */
/* QP state names                                                      */
/* ------------------------------------------------------------------ */

/* IBA 10.3.1 names for the IBA states, RDMA verbs names for iWARP's. */
static const char *const qp_state_names[] = {
	[RNICPI_QPS_RESET] = "RESET",
	[RNICPI_QPS_INIT] = "INIT",
	[RNICPI_QPS_RTR] = "RTR",
	[RNICPI_QPS_RTS] = "RTS",
	[RNICPI_QPS_SQD] = "SQD",
	[RNICPI_QPS_SQE] = "SQE",
	[RNICPI_QPS_ERR] = "ERR",
	[RNICPI_QPS_IDLE] = "IDLE",
	[RNICPI_QPS_CLOSING] = "CLOSING",
	[RNICPI_QPS_TERMINATE] = "TERMINATE",
};

const char *rnicpi_qp_state_name(enum rnicpi_qp_state s)
{
	if ((unsigned int)s < G_N_ELEMENTS(qp_state_names) &&
	    qp_state_names[s])
		return qp_state_names[s];
	return "?";
}

/* ------------------------------------------------------------------ */
/* Completion ring                                                     */
/* ------------------------------------------------------------------ */

int rnicpi_cq_ring_init(struct rnicpi_cq_ring *ring, uint32_t capacity)
{
	memset(ring, 0, sizeof(*ring));
	if (capacity == 0)
		capacity = 1;
	ring->entries = calloc(capacity, sizeof(*ring->entries));
	if (!ring->entries)
		return -ENOMEM;
	ring->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ring->efd < 0) {
		int err = -errno;

		free(ring->entries);
		ring->entries = NULL;
		return err;
	}
	ring->capacity = capacity;
	pthread_mutex_init(&ring->lock, NULL);
	return 0;
}

void rnicpi_cq_ring_fini(struct rnicpi_cq_ring *ring)
{
	if (!ring->entries)
		return;
	pthread_mutex_destroy(&ring->lock);
	close(ring->efd);
	free(ring->entries);
	ring->entries = NULL;
	ring->efd = -1;
}

static void cq_ring_signal(struct rnicpi_cq_ring *ring)
{
	uint64_t one = 1;

	/* Cannot fail short of counter overflow; the fd stays readable. */
	if (write(ring->efd, &one, sizeof(one)) < 0)
		return;
}

int rnicpi_cq_ring_push(struct rnicpi_cq_ring *ring,
			const struct rnicpi_wc *wc, bool solicited)
{
	bool notify;

	pthread_mutex_lock(&ring->lock);
	if (ring->count == ring->capacity) {
		ring->overflowed = true;
		pthread_mutex_unlock(&ring->lock);
		return -ENOSPC;
	}
	ring->entries[(ring->head + ring->count) % ring->capacity] = *wc;
	ring->count++;
	atomic_store_explicit(&ring->filled, ring->count,
			      memory_order_release);
	/* IBA 11.4.2.2: solicited-only notification also fires on errors. */
	notify = ring->arm == RNICPI_CQ_ARMED_ANY ||
		 (ring->arm == RNICPI_CQ_ARMED_SOLICITED &&
		  (solicited || wc->status != RNICPI_WC_SUCCESS));
	if (notify) {
		ring->arm = RNICPI_CQ_DISARMED;
		atomic_store(&ring->armed, false);
	}
	pthread_mutex_unlock(&ring->lock);
	if (notify)
		cq_ring_signal(ring);
	return 0;
}

int rnicpi_cq_ring_poll(struct rnicpi_cq_ring *ring, int n,
			struct rnicpi_wc *wc)
{
	int taken = 0;

	if (n <= 0)
		return 0;
	/* Empty a moment ago is as good as empty now: a completion pushed
	 * meanwhile is found by the next poll, as if this one came first. */
	if (!atomic_load_explicit(&ring->filled, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&ring->lock);
	while (taken < n && ring->count > 0) {
		wc[taken++] = ring->entries[ring->head];
		ring->head = (ring->head + 1) % ring->capacity;
		ring->count--;
	}
	atomic_store_explicit(&ring->filled, ring->count,
			      memory_order_release);
	pthread_mutex_unlock(&ring->lock);
	return taken;
}

int rnicpi_cq_ring_arm(struct rnicpi_cq_ring *ring, int solicited_only)
{
	pthread_mutex_lock(&ring->lock);
	/* Arming for any completion wins over a solicited-only arm. */
	if (!solicited_only)
		ring->arm = RNICPI_CQ_ARMED_ANY;
	else if (ring->arm == RNICPI_CQ_DISARMED)
		ring->arm = RNICPI_CQ_ARMED_SOLICITED;
	atomic_store(&ring->armed, true);
	pthread_mutex_unlock(&ring->lock);
	return 0;
}

void rnicpi_cq_ring_wake(struct rnicpi_cq_ring *ring)
{
	cq_ring_signal(ring);
}

int rnicpi_cq_ring_ack(struct rnicpi_cq_ring *ring)
{
	uint64_t value;

	if (read(ring->efd, &value, sizeof(value)) != sizeof(value))
		return errno == EAGAIN ? -EAGAIN : -errno;
	return 0;
}

int rnicpi_cq_ring_resize(struct rnicpi_cq_ring *ring, uint32_t capacity)
{
	struct rnicpi_wc *entries;
	uint32_t i;

	if (capacity == 0)
		return -EINVAL;
	entries = calloc(capacity, sizeof(*entries));
	if (!entries)
		return -ENOMEM;
	pthread_mutex_lock(&ring->lock);
	if (capacity < ring->count) {
		pthread_mutex_unlock(&ring->lock);
		free(entries);
		return -EINVAL;
	}
	for (i = 0; i < ring->count; i++)
		entries[i] = ring->entries[(ring->head + i) % ring->capacity];
	free(ring->entries);
	ring->entries = entries;
	ring->capacity = capacity;
	ring->head = 0;
	pthread_mutex_unlock(&ring->lock);
	return 0;
}

uint32_t rnicpi_cq_ring_count(struct rnicpi_cq_ring *ring)
{
	uint32_t count;

	pthread_mutex_lock(&ring->lock);
	count = ring->count;
	pthread_mutex_unlock(&ring->lock);
	return count;
}

/* ------------------------------------------------------------------ */
/* Key table                                                           */
/* ------------------------------------------------------------------ */

#define KEY_INDEX_MAX 0xffffffu

struct rnicpi_key_slot {
	void *obj;	   /* NULL when free */
	uint32_t next_free; /* the next index in the free queue, 0 = last */
	uint8_t key_byte;  /* of the current (or last) key */
	uint8_t turn;	   /* keys the table chose for the slot, mod 256 */
};

/* A 64-bit finaliser with full avalanche (the multiply-xorshift steps of
 * SplitMix64): every input bit flips about half the output bits. */
static uint64_t key_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/*
 * The key byte of slot @index's @turn-th key: a permutation of the 256
 * turns, a different one for every index and table. A four-round Feistel
 * network on the two nibbles of @turn whose round function is keyed by the
 * table's random secret and the index: Feistel rounds are invertible
 * whatever the round function, so 256 successive turns give 256 distinct
 * bytes, and without the secret the sequence looks random. (The kernel's
 * rxe draws each byte at random, avoiding only the last one: a stale key
 * may then match again as soon as the second reuse of its index.)
 */
static uint8_t key_byte_at(const struct rnicpi_key_table *t, uint32_t index,
			   uint8_t turn)
{
	uint64_t k = key_mix(t->secret ^ index);
	unsigned int l = turn >> 4, r = turn & 0xfu;

	for (unsigned int round = 0; round < 4; round++) {
		unsigned int f = (unsigned int)key_mix(
			k ^ ((uint64_t)round << 8 | r)) & 0xfu;
		unsigned int next_r = l ^ f;

		l = r;
		r = next_r;
	}
	return (uint8_t)(l << 4 | r);
}

/* Under t->lock: give @slot its next key byte, never the one it has (after
 * rnicpi_key_set_byte the byte is the consumer's and the next turn may
 * land on it: skip that turn). */
static void key_slot_next(struct rnicpi_key_table *t, uint32_t index)
{
	struct rnicpi_key_slot *slot = &t->slots[index];
	uint8_t b = key_byte_at(t, index, ++slot->turn);

	if (b == slot->key_byte)
		b = key_byte_at(t, index, ++slot->turn);
	slot->key_byte = b;
}

/* Under t->lock: append @index to the free queue. */
static void key_queue_push(struct rnicpi_key_table *t, uint32_t index)
{
	t->slots[index].next_free = 0;
	if (t->free_tail)
		t->slots[t->free_tail].next_free = index;
	else
		t->free_head = index;
	t->free_tail = index;
	t->n_free++;
}

/* Under t->lock: take the index at the front of the free queue. */
static uint32_t key_queue_pop(struct rnicpi_key_table *t)
{
	uint32_t index = t->free_head;

	t->free_head = t->slots[index].next_free;
	if (!t->free_head)
		t->free_tail = 0;
	t->slots[index].next_free = 0;
	t->n_free--;
	return index;
}

static uint64_t key_table_secret(void)
{
	uint64_t secret;

	if (getrandom(&secret, sizeof(secret), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(secret))
		return secret;
	/* No getrandom (old kernel, seccomp) or its pool not ready yet:
	 * GLib's generator, seeded from /dev/urandom or the time. */
	return (uint64_t)g_random_int() << 32 | g_random_int();
}

int rnicpi_key_table_init(struct rnicpi_key_table *t, uint32_t max_entries,
			  void (*get)(void *obj))
{
	memset(t, 0, sizeof(*t));
	if (max_entries == 0 || max_entries > KEY_INDEX_MAX)
		return -EINVAL;
	t->max_slots = max_entries + 1; /* slot 0 is never handed out */
	t->reserve = MIN(max_entries, RNICPI_KEY_REUSE_DEPTH);
	t->secret = key_table_secret();
	t->get = get;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void rnicpi_key_table_fini(struct rnicpi_key_table *t)
{
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	t->slots = NULL;
	t->n_slots = 0;
}

static int key_table_grow(struct rnicpi_key_table *t)
{
	uint32_t n = t->n_slots ? t->n_slots * 2 : 64;
	struct rnicpi_key_slot *slots;
	uint32_t i;

	if (t->n_slots >= t->max_slots)
		return -ENOSPC;
	if (n > t->max_slots)
		n = t->max_slots;
	slots = realloc(t->slots, n * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots + t->n_slots, 0, (n - t->n_slots) * sizeof(*slots));
	t->slots = slots;
	/* New slots (never slot 0) join the back of the free queue, behind
	 * the indices freed before them. */
	for (i = t->n_slots ? t->n_slots : 1; i < n; i++) {
		/* turn 0's byte, as if handed out before: the first key is
		 * turn 1's */
		slots[i].key_byte = key_byte_at(t, i, 0);
		key_queue_push(t, i);
	}
	t->n_slots = n;
	return 0;
}

int rnicpi_key_alloc(struct rnicpi_key_table *t, void *obj, uint32_t *key)
{
	struct rnicpi_key_slot *slot;
	uint32_t index;
	int err;

	if (!obj)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	/* Keep the free queue at least t->reserve long while the table may
	 * grow, so that a freed index waits behind that many others. */
	while (t->n_free < t->reserve && t->n_slots < t->max_slots) {
		err = key_table_grow(t);
		if (err && !t->n_free) {
			pthread_mutex_unlock(&t->lock);
			return err;
		}
		if (err)
			break; /* out of memory: reuse sooner rather than fail */
	}
	if (!t->n_free) {
		pthread_mutex_unlock(&t->lock);
		return -ENOSPC;
	}
	index = key_queue_pop(t);
	slot = &t->slots[index];
	slot->obj = obj;
	key_slot_next(t, index);
	t->in_use++;
	*key = index << 8 | slot->key_byte;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* Under t->lock: the slot @key names, if @key is current. */
static struct rnicpi_key_slot *key_slot(struct rnicpi_key_table *t,
					uint32_t key)
{
	uint32_t index = rnicpi_key_index(key);
	struct rnicpi_key_slot *slot;

	if (index == 0 || index >= t->n_slots)
		return NULL;
	slot = &t->slots[index];
	if (!slot->obj || slot->key_byte != (uint8_t)key)
		return NULL;
	return slot;
}

void *rnicpi_key_lookup(struct rnicpi_key_table *t, uint32_t key)
{
	struct rnicpi_key_slot *slot;
	void *obj = NULL;

	pthread_mutex_lock(&t->lock);
	slot = key_slot(t, key);
	if (slot) {
		obj = slot->obj;
		if (t->get)
			t->get(obj);
	}
	pthread_mutex_unlock(&t->lock);
	return obj;
}

int rnicpi_key_rekey(struct rnicpi_key_table *t, uint32_t key,
		     uint32_t *new_key)
{
	struct rnicpi_key_slot *slot;

	pthread_mutex_lock(&t->lock);
	slot = key_slot(t, key);
	if (!slot) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	key_slot_next(t, rnicpi_key_index(key));
	*new_key = rnicpi_key_index(key) << 8 | slot->key_byte;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int rnicpi_key_set_byte(struct rnicpi_key_table *t, uint32_t key,
			uint8_t key_byte, uint32_t *new_key)
{
	struct rnicpi_key_slot *slot;

	pthread_mutex_lock(&t->lock);
	slot = key_slot(t, key);
	if (!slot) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	if (slot->key_byte == key_byte) {
		pthread_mutex_unlock(&t->lock);
		return -EINVAL;
	}
	slot->key_byte = key_byte;
	*new_key = rnicpi_key_index(key) << 8 | key_byte;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int rnicpi_key_free(struct rnicpi_key_table *t, uint32_t key)
{
	struct rnicpi_key_slot *slot;

	pthread_mutex_lock(&t->lock);
	slot = key_slot(t, key);
	if (!slot) {
		pthread_mutex_unlock(&t->lock);
		return -ENOENT;
	}
	slot->obj = NULL;
	/* To the back of the queue: every index freed before it is reused
	 * first (a stack would hand it straight back). */
	key_queue_push(t, rnicpi_key_index(key));
	t->in_use--;
	pthread_mutex_unlock(&t->lock);
	return 0;
}
