/* SPDX-License-Identifier: MIT */
/*
 * rnicpi_util.h - helpers that software verbs providers share: a
 * completion ring with eventfd notification, a key table for STags /
 * rkeys, and a cheap test for debug logging. Installed with rnicpi.h
 * (<hostrdma/rnicpi_util.h>) and as the static library
 * libhostrdma-rnicpi-util.a (pkg-config hostrdma-rnicpi), built with
 * -fPIC and hidden visibility: linked into a provider module, the helpers
 * stay private to it and the module still exports nothing but its entry
 * point. Needs GLib (glib-2.0) and POSIX threads.
 */
#ifndef RNICPI_UTIL_H
#define RNICPI_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Next to this header in the tree and once installed. */
#include "rnicpi.h"

#ifndef container_of
#define container_of(ptr, type, member)                                     \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

/* ------------------------------------------------------------------ */
/* Debug logging                                                       */
/* ------------------------------------------------------------------ */

/*
 * Is debug output wanted for log domain @domain? True when
 * G_MESSAGES_DEBUG (read once, at the first call) names it or says "all",
 * or when the program turned GLib's debug output on with
 * g_log_set_debug_enabled(). GLib formats every g_debug() message before
 * its writer decides to drop it, which on a provider's data path cost
 * about 5 % of soft-RoCE's receive time: the providers' debug macros ask
 * this first.
 */
bool rnicpi_debug_wanted(const char *domain);
/* Does @list, in G_MESSAGES_DEBUG's syntax, name @domain? */
bool rnicpi_debug_list_names(const char *list, const char *domain);

/* ------------------------------------------------------------------ */
/* QP state names                                                      */
/* ------------------------------------------------------------------ */

/* The name of QP state @s for log lines ("RTS", "TERMINATE", ...), the
 * one table every provider uses; "?" for a value outside
 * enum rnicpi_qp_state. Static storage, never NULL. */
const char *rnicpi_qp_state_name(enum rnicpi_qp_state s);

/* ------------------------------------------------------------------ */
/* Completion ring                                                     */
/* ------------------------------------------------------------------ */

enum rnicpi_cq_arm {
	RNICPI_CQ_DISARMED = 0,
	RNICPI_CQ_ARMED_ANY = 1,
	RNICPI_CQ_ARMED_SOLICITED = 2,
};

/*
 * A bounded FIFO of completions with IBA 11.4.2.2 notification: once armed,
 * the next completion (or, armed for solicited only, the next solicited or
 * error completion) makes `efd` readable and disarms. Thread-safe.
 */
struct rnicpi_cq_ring {
	pthread_mutex_t lock;
	struct rnicpi_wc *entries;
	uint32_t capacity;
	uint32_t head;	/* next to poll */
	uint32_t count;
	/* count, readable without the lock: polling an empty ring takes
	 * none (a consumer spins on it). Written under the lock. */
	atomic_uint filled;
	enum rnicpi_cq_arm arm;
	/* arm != DISARMED, readable without the lock (a provider asks on
	 * its data path whether a consumer may be asleep on the ring). */
	atomic_bool armed;
	bool overflowed;
	int efd;	/* eventfd, EFD_NONBLOCK | EFD_CLOEXEC */
};

/* 0, -ENOMEM, or -errno from eventfd(). */
int rnicpi_cq_ring_init(struct rnicpi_cq_ring *ring, uint32_t capacity);
void rnicpi_cq_ring_fini(struct rnicpi_cq_ring *ring);
/*
 * Append a completion; @solicited marks a receive that asked for a
 * solicited event. -ENOSPC when the ring is full: the entry is dropped and
 * the ring remembers it overflowed (the provider then reports CQ_ERR).
 */
int rnicpi_cq_ring_push(struct rnicpi_cq_ring *ring,
			const struct rnicpi_wc *wc, bool solicited);
/* Up to @n oldest completions into @wc; returns how many. */
int rnicpi_cq_ring_poll(struct rnicpi_cq_ring *ring, int n,
			struct rnicpi_wc *wc);
/* Arm for the next (solicited) completion. Never fails. */
int rnicpi_cq_ring_arm(struct rnicpi_cq_ring *ring, int solicited_only);
/* Is the ring armed (a consumer may sleep on efd)? Lock-free; a
 * sequentially consistent read, ordered after the arm's store, so a
 * provider can pair it with a store of its own (see siw's rx park). */
static inline bool rnicpi_cq_ring_armed(struct rnicpi_cq_ring *ring)
{
	return atomic_load(&ring->armed);
}
/* Consume the eventfd's readiness: 0, or -EAGAIN if it was not ready. */
int rnicpi_cq_ring_ack(struct rnicpi_cq_ring *ring);
/* Make efd readable without a completion: a consumer asleep on it wakes,
 * polls (perhaps finding nothing) and arms again. */
void rnicpi_cq_ring_wake(struct rnicpi_cq_ring *ring);
/* Grow or shrink to @capacity; -EINVAL if fewer than the held entries. */
int rnicpi_cq_ring_resize(struct rnicpi_cq_ring *ring, uint32_t capacity);
uint32_t rnicpi_cq_ring_count(struct rnicpi_cq_ring *ring);

/* ------------------------------------------------------------------ */
/* Key table: STags / lkeys / rkeys                                    */
/* ------------------------------------------------------------------ */

/*
 * A key is (index << 8) | key byte. The index names a slot; the key byte
 * changes every time a slot is handed out again or re-keyed, so a key from
 * an earlier registration no longer matches (RFC 5040 §5.1 STag,
 * IBA 10.6.3.3). Index 0 is never used, so key 0 is never valid (iWARP
 * reserves STag 0 for privileged consumers). Thread-safe; allocation, free,
 * lookup and re-keying are O(1) (growth doubles the table, up to its
 * bound).
 *
 * How long a peer's stale key stays stale:
 *
 * - Freed indices are reused first in, first out, and while the table may
 *   still grow it keeps at least RNICPI_KEY_REUSE_DEPTH (or the table's
 *   bound, if smaller) indices in the free queue. With at most U keys in
 *   use at once, a freed index therefore waits behind at least
 *   D = min(RNICPI_KEY_REUSE_DEPTH - 1, max_entries - U) others: it comes
 *   back no sooner than D + 1 allocations after it was last handed out.
 * - A slot's key bytes follow a permutation of the 256 byte values, a
 *   different one for every index and table, drawn from a secret the
 *   table takes from getrandom(2): the bytes look random to a peer, no
 *   byte follows itself, and a byte comes back only after all 256 have
 *   been handed out for that index (allocations and re-keys both count).
 *
 * So, without re-keying, no key (index and byte) is handed out twice
 * within 256 * (D + 1) allocations: 256 * max_entries for a table of up
 * to RNICPI_KEY_REUSE_DEPTH entries with one key in use, 256 * 1024 for a
 * larger one. (A consumer-chosen byte, rnicpi_key_set_byte, is outside
 * the permutation: the next byte the table chooses skips it, and if the
 * table cannot allocate memory to grow it reuses a free index sooner
 * rather than fail.)
 */
#define RNICPI_KEY_REUSE_DEPTH 1024u

struct rnicpi_key_table {
	pthread_mutex_t lock;
	struct rnicpi_key_slot *slots;
	uint32_t n_slots;	/* allocated */
	uint32_t max_slots;	/* hard limit */
	uint32_t free_head;	/* the free queue, oldest first; 0 = empty */
	uint32_t free_tail;
	uint32_t n_free;
	uint32_t reserve;	/* free indices kept while it may grow */
	uint32_t in_use;
	uint64_t secret;	/* keys the key byte permutations */
	void (*get)(void *obj);	/* takes a reference in lookups */
};

/*
 * @max_entries bounds the table (at most 2^24 - 1). @get, if not NULL, is
 * called under the table lock on each object a lookup returns, so the
 * object cannot vanish between lookup and use.
 */
int rnicpi_key_table_init(struct rnicpi_key_table *t, uint32_t max_entries,
			  void (*get)(void *obj));
void rnicpi_key_table_fini(struct rnicpi_key_table *t);
/* Store @obj and return its new key in *@key; -ENOSPC when full. */
int rnicpi_key_alloc(struct rnicpi_key_table *t, void *obj, uint32_t *key);
/* The object @key names, with @get applied, or NULL when the key is
 * unknown or stale. */
void *rnicpi_key_lookup(struct rnicpi_key_table *t, uint32_t key);
/* Give the slot a new key byte; the old key stops matching. -ENOENT when
 * @key is not current. */
int rnicpi_key_rekey(struct rnicpi_key_table *t, uint32_t key,
		     uint32_t *new_key);
/* Replace the key byte with @key_byte (a consumer-chosen MW type 2 key);
 * -EINVAL if it equals the current one, -ENOENT if @key is not current. */
int rnicpi_key_set_byte(struct rnicpi_key_table *t, uint32_t key,
			uint8_t key_byte, uint32_t *new_key);
/* Release the slot; -ENOENT when @key is not current. */
int rnicpi_key_free(struct rnicpi_key_table *t, uint32_t key);

static inline uint32_t rnicpi_key_index(uint32_t key)
{
	return key >> 8;
}

#endif /* RNICPI_UTIL_H */
