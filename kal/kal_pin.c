/* SPDX-License-Identifier: MIT */
/*
 * Memory pinning: mlock() + madvise(MADV_DONTFORK) on page-rounded ranges,
 * shared between overlapping pins, counted against RLIMIT_MEMLOCK.
 *
 * The kernel does not count mlock(): one munlock() undoes any number of
 * mlock() calls on a page, and MADV_DOFORK likewise. So kal keeps the
 * process's pinned memory as a map of disjoint page-aligned segments, each
 * with the number of pins covering it. A pin splits the segments at its
 * ends, raises the count of those it covers and charges only the gaps to
 * RLIMIT_MEMLOCK; an unpin lowers the counts and unlocks only what drops
 * to zero. The map holds one entry per distinct run of coverage, not per
 * page, so a GiB registration costs one node.
 *
 * The map describes addresses, and memory can change under an address: a
 * pin locks its whole range, covered parts included, so that memory
 * mapped anew where pinned memory was unmapped is pinned too (see
 * kal_pin).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "kal/kal.h"

struct kal_pin {
	uintptr_t start; /* page aligned */
	uintptr_t end;	 /* page aligned, exclusive */
	/* The map generation the pin belongs to; a fork()ed child starts a
	 * new one, so pins inherited from the parent release nothing. */
	unsigned int generation;
};

/* A run of pages [start, end) covered by @count pins. */
struct pin_seg {
	uintptr_t start;
	uintptr_t end;
	unsigned long count;
};

/* Process-wide state. Statically initialised so that pinning works from
 * constructors and needs no init call. */
static struct {
	pthread_mutex_t lock;
	GTree *segs; /* start -> struct pin_seg, disjoint */
	uint64_t pinned;
	unsigned int generation;
	bool atfork_done;
} pins = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static size_t page_size(void)
{
	/* glibc answers from a value it keeps; no need to cache it here */
	return (size_t)sysconf(_SC_PAGESIZE);
}

static gint seg_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y ? -1 : x > y;
}

static struct pin_seg *node_seg(GTreeNode *node)
{
	return node ? g_tree_node_value(node) : NULL;
}

/* Bytes in a human unit for log lines: "64 KiB", "1.5 GiB". */
static const char *size_str(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB",
					     "TiB" };
	unsigned int u = 0;
	uint64_t scale = 1;

	while (u + 1 < G_N_ELEMENTS(units) && bytes >= scale * 1024) {
		scale *= 1024;
		u++;
	}
	if (bytes % scale == 0)
		snprintf(buf, len, "%" PRIu64 " %s", bytes / scale, units[u]);
	else
		snprintf(buf, len, "%.1f %s", (double)bytes / (double)scale,
			 units[u]);
	return buf;
}

/*
 * CAP_IPC_LOCK in this thread's effective set. glibc has no wrapper for
 * capget(2); libcap would be a library in every process (and in the lab's
 * guests) for one bit of one system call.
 */
static bool pin_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
	       CAP_TO_MASK(CAP_IPC_LOCK);
}

uint64_t kal_pin_limit(void)
{
	struct rlimit rl;

	if (pin_cap_ipc_lock())
		return UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return rl.rlim_cur;
}

uint64_t kal_pinned_bytes(void)
{
	uint64_t bytes;

	pthread_mutex_lock(&pins.lock);
	bytes = pins.pinned;
	pthread_mutex_unlock(&pins.lock);
	return bytes;
}

/*
 * fork(): the child inherits neither the locks (mlock is not inherited)
 * nor the MADV_DONTFORK pages, so its copy of the map describes nothing.
 * Start it afresh; the pins it inherited belong to an old generation and
 * kal_unpin() frees them without touching memory.
 */
static void pin_atfork_prepare(void)
{
	pthread_mutex_lock(&pins.lock);
}

static void pin_atfork_parent(void)
{
	pthread_mutex_unlock(&pins.lock);
}

static void pin_atfork_child(void)
{
	if (pins.segs) {
		g_tree_destroy(pins.segs);
		pins.segs = NULL;
	}
	pins.pinned = 0;
	pins.generation++;
	/* the child's only thread holds the lock (prepare took it) */
	pthread_mutex_unlock(&pins.lock);
}

/* Called with the lock held. */
static void pin_map_init(void)
{
	if (!pins.segs)
		pins.segs = g_tree_new_full(seg_cmp, NULL, NULL, g_free);
	if (!pins.atfork_done) {
		pthread_atfork(pin_atfork_prepare, pin_atfork_parent,
			       pin_atfork_child);
		pins.atfork_done = true;
	}
}

/* The first segment that ends after @addr, or NULL. */
static GTreeNode *seg_first_after(uintptr_t addr)
{
	GTreeNode *next, *prev;

	/* first segment starting after addr; the one before may cover it */
	next = g_tree_upper_bound(pins.segs, (gconstpointer)addr);
	prev = next ? g_tree_node_previous(next) : g_tree_node_last(pins.segs);
	if (prev && node_seg(prev)->end > addr)
		return prev;
	return next;
}

/* Split the segment covering @addr (if any, and not at its start) in two
 * at @addr, so that @addr becomes a segment boundary. */
static void seg_split_at(uintptr_t addr)
{
	GTreeNode *node = seg_first_after(addr);
	struct pin_seg *seg = node_seg(node), *tail;

	if (!seg || seg->start >= addr)
		return;
	tail = g_new(struct pin_seg, 1);
	tail->start = addr;
	tail->end = seg->end;
	tail->count = seg->count;
	seg->end = addr;
	g_tree_insert(pins.segs, (gpointer)tail->start, tail);
}

/* Merge segments of equal count that touch, around [start, end), to keep
 * the map as small as the coverage pattern allows. */
static void seg_merge_around(uintptr_t start, uintptr_t end)
{
	GTreeNode *node = seg_first_after(start ? start - 1 : 0);

	while (node) {
		struct pin_seg *seg = node_seg(node);
		GTreeNode *next = g_tree_node_next(node);
		struct pin_seg *nseg = node_seg(next);

		if (seg->start > end)
			break;
		if (nseg && nseg->start == seg->end &&
		    nseg->count == seg->count) {
			seg->end = nseg->end;
			g_tree_remove(pins.segs, (gconstpointer)nseg->start);
			/* node stays valid: only the next one was removed */
			continue;
		}
		node = next;
	}
}

/*
 * Lock the pages of [start, end) and mark them MADV_DONTFORK; returns 0 or
 * -errno. @populate: fault every page in now (mlock), for pages no pin
 * covers; else lock what is present and the rest as it is touched
 * (mlock2 MLOCK_ONFAULT), for pages pinned already (see kal_pin). On
 * failure part of the range may be locked or marked: the caller undoes
 * what is its own.
 */
static int pages_pin(uintptr_t start, uintptr_t end, bool populate)
{
	void *addr = (void *)start;
	size_t len = end - start;
	char sz[32];
	int rc;

	/* madvise first: it fails with ENOMEM only for unmapped pages, which
	 * mlock would report the same way as a resource shortage. */
	if (madvise(addr, len, MADV_DONTFORK) < 0) {
		int err = errno;

		if (err == ENOMEM) {
			g_warning("cannot pin %s at %p: not mapped",
				  size_str(len, sz, sizeof(sz)), addr);
			return -EFAULT;
		}
		g_warning("cannot pin %s at %p: madvise(MADV_DONTFORK): %s",
			  size_str(len, sz, sizeof(sz)), addr,
			  g_strerror(err));
		return -err;
	}
	rc = populate ? -1 : mlock2(addr, len, MLOCK_ONFAULT);
	/* Without mlock2 (Linux before 4.4, or valgrind, which does not
	 * know it: glibc then answers EINVAL for MLOCK_ONFAULT), mlock, which
	 * walks every page. */
	if (populate || (rc < 0 && (errno == EINVAL || errno == ENOSYS)))
		rc = mlock(addr, len);
	if (rc < 0) {
		int err = errno;

		g_warning("cannot pin %s at %p: mlock: %s",
			  size_str(len, sz, sizeof(sz)), addr,
			  g_strerror(err));
		/* EAGAIN means "could not lock", not "try again later" */
		return err == EAGAIN ? -ENOMEM : -err;
	}
	return 0;
}

static void pages_unpin(uintptr_t start, uintptr_t end)
{
	void *addr = (void *)start;
	size_t len = end - start;

	/* Fails only if the application unmapped the memory under its pin;
	 * the kernel dropped the lock with the mapping then. */
	if (munlock(addr, len) < 0 || madvise(addr, len, MADV_DOFORK) < 0)
		g_debug("unpin %p+%zu: %s", addr, len, g_strerror(errno));
}

/* A gap of [start, end) not covered by any segment. */
struct pin_gap {
	uintptr_t start;
	uintptr_t end;
};

/* The gaps in [start, end) and their total size; called locked. */
static GArray *pin_gaps(uintptr_t start, uintptr_t end, uint64_t *new_bytes)
{
	GArray *gaps = g_array_new(FALSE, FALSE, sizeof(struct pin_gap));
	GTreeNode *node = seg_first_after(start);
	uintptr_t at = start;

	*new_bytes = 0;
	for (; node && at < end; node = g_tree_node_next(node)) {
		struct pin_seg *seg = node_seg(node);

		if (seg->start >= end)
			break;
		if (seg->start > at) {
			struct pin_gap gap = { at, seg->start };

			g_array_append_val(gaps, gap);
			*new_bytes += gap.end - gap.start;
		}
		at = seg->end;
	}
	if (at < end) {
		struct pin_gap gap = { at, end };

		g_array_append_val(gaps, gap);
		*new_bytes += gap.end - gap.start;
	}
	return gaps;
}

int kal_pin(const void *addr, size_t len, struct kal_pin **out)
{
	uintptr_t first = (uintptr_t)addr, start, end, at;
	uint64_t new_bytes, limit;
	struct kal_pin *pin;
	GTreeNode *node;
	GArray *gaps;
	guint i, touched = 0;
	int err;

	g_return_val_if_fail(out != NULL, -EINVAL);
	*out = NULL;
	if (len == 0) {
		g_warning("cannot pin 0 bytes at %p: empty range", addr);
		return -EINVAL;
	}
	/* The range and its page-rounded end must not wrap. */
	if (first + len < first ||
	    first + len + page_size() - 1 < first + len) {
		g_warning("cannot pin %zu bytes at %p: the range wraps around "
			  "the address space", len, addr);
		return -EINVAL;
	}
	start = first & ~(uintptr_t)(page_size() - 1);
	end = (first + len + page_size() - 1) & ~(uintptr_t)(page_size() - 1);

	pthread_mutex_lock(&pins.lock);
	pin_map_init();
	gaps = pin_gaps(start, end, &new_bytes);

	/* No new pages, no new charge: the limit is not even read (a
	 * getrlimit per registration was a fifth of re-registering pinned
	 * memory). */
	limit = new_bytes ? kal_pin_limit() : UINT64_MAX;
	if (new_bytes > 0 &&
	    (new_bytes > limit || pins.pinned > limit - new_bytes)) {
		char req[32], lim[32], cur[32];

		g_warning("cannot pin %s at %p: RLIMIT_MEMLOCK is %s and %s "
			  "are pinned; raise it with `ulimit -l` or "
			  "limits.conf",
			  size_str(end - start, req, sizeof(req)), addr,
			  size_str(limit, lim, sizeof(lim)),
			  size_str(pins.pinned, cur, sizeof(cur)));
		err = -ENOMEM;
		goto err_unlock;
	}

	/*
	 * Lock the whole range, the pages other pins cover too, before the
	 * map changes (only once nothing can fail). The map knows addresses,
	 * not pages: if the application unmapped pinned memory and mapped
	 * new memory at the same address, the kernel dropped the lock and
	 * MADV_DONTFORK with the old mapping, and the map still counts the
	 * addresses as pinned. Skipping the covered pages, as kal did, left
	 * the new ones neither locked nor kept from a fork()ed child, and
	 * nothing that cheap tells whether they are the pinned ones still
	 * (mincore says resident, not locked; /proc/self/pagemap's frame
	 * numbers are CAP_SYS_ADMIN's). So the covered runs are locked again,
	 * with MLOCK_ONFAULT: over pages locked already that changes at most
	 * the mappings' flags, where mlock walks every page (re-registering
	 * a pinned 4 MiB buffer took 250 us with mlock, 3 with this); over
	 * memory mapped anew it locks the pages present and the others when
	 * first touched.
	 */
	at = start;
	for (touched = 0; touched < gaps->len; touched++) {
		struct pin_gap *gap =
			&g_array_index(gaps, struct pin_gap, touched);

		err = at < gap->start ? pages_pin(at, gap->start, false) : 0;
		if (err)
			goto err_unpin_gaps;
		err = pages_pin(gap->start, gap->end, true);
		if (err) {
			touched++; /* it may be locked or marked in part */
			goto err_unpin_gaps;
		}
		at = gap->end;
	}
	err = at < end ? pages_pin(at, end, false) : 0;
	if (err)
		goto err_unpin_gaps;

	seg_split_at(start);
	seg_split_at(end);
	for (node = seg_first_after(start); node;
	     node = g_tree_node_next(node)) {
		struct pin_seg *seg = node_seg(node);

		if (seg->start >= end)
			break;
		seg->count++;
	}
	for (i = 0; i < gaps->len; i++) {
		struct pin_gap *gap = &g_array_index(gaps, struct pin_gap, i);
		struct pin_seg *seg = g_new(struct pin_seg, 1);

		seg->start = gap->start;
		seg->end = gap->end;
		seg->count = 1;
		g_tree_insert(pins.segs, (gpointer)seg->start, seg);
	}
	seg_merge_around(start, end);
	pins.pinned += new_bytes;

	pin = g_new(struct kal_pin, 1);
	pin->start = start;
	pin->end = end;
	pin->generation = pins.generation;
	pthread_mutex_unlock(&pins.lock);
	g_array_unref(gaps);
	g_debug("pinned %p+%zu (pages %#" PRIxPTR "-%#" PRIxPTR ", %" PRIu64
		" bytes new)", addr, len, start, end, new_bytes);
	*out = pin;
	return 0;

err_unpin_gaps:
	/* Undo what was this pin's own (the gaps it touched); the covered
	 * pages stay as the pins covering them need. */
	for (i = 0; i < touched; i++) {
		struct pin_gap *gap = &g_array_index(gaps, struct pin_gap, i);

		pages_unpin(gap->start, gap->end);
	}
err_unlock:
	pthread_mutex_unlock(&pins.lock);
	g_array_unref(gaps);
	return err;
}

void kal_unpin(struct kal_pin *pin)
{
	GTreeNode *node;
	uintptr_t run_start = 0, run_end = 0;

	if (!pin)
		return;
	pthread_mutex_lock(&pins.lock);
	if (pin->generation != pins.generation || !pins.segs)
		goto out;

	seg_split_at(pin->start);
	seg_split_at(pin->end);
	node = seg_first_after(pin->start);
	while (node) {
		struct pin_seg *seg = node_seg(node);
		GTreeNode *next = g_tree_node_next(node);

		if (seg->start >= pin->end)
			break;
		if (--seg->count == 0) {
			/* unlock contiguous runs with one call each */
			if (run_end != seg->start) {
				if (run_end > run_start)
					pages_unpin(run_start, run_end);
				run_start = seg->start;
			}
			run_end = seg->end;
			pins.pinned -= seg->end - seg->start;
			g_tree_remove(pins.segs, (gconstpointer)seg->start);
		}
		node = next;
	}
	if (run_end > run_start)
		pages_unpin(run_start, run_end);
	seg_merge_around(pin->start, pin->end);
out:
	pthread_mutex_unlock(&pins.lock);
	g_free(pin);
}

static gboolean seg_release(gpointer key, gpointer value, gpointer unused)
{
	struct pin_seg *seg = value;

	pages_unpin(seg->start, seg->end);
	return FALSE;
}

/*
 * At exit, unlock what the application left pinned and free the map, so
 * that nothing lingers (and leak checkers see no kal memory). Pins still
 * held become stale: kal_unpin() after this only frees them.
 */
__attribute__((destructor)) static void kal_pin_fini(void)
{
	pthread_mutex_lock(&pins.lock);
	if (pins.segs) {
		g_tree_foreach(pins.segs, seg_release, NULL);
		g_tree_destroy(pins.segs);
		pins.segs = NULL;
	}
	pins.pinned = 0;
	pins.generation++;
	pthread_mutex_unlock(&pins.lock);
}
