/* SPDX-License-Identifier: MIT */
/*
 * kal-pin: memory pinning. What the kernel reports is the truth here: a
 * page counts as pinned when /proc/self/smaps shows its mapping locked
 * ("lo" in VmFlags, all of it in "Locked:") and not copied on fork ("dc"),
 * and MADV_DONTFORK is checked by what a fork()ed child can read.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kal/kal.h"
#include "tests/suites.h"
#include "tests/testutil.h"

static size_t pg;

/* Assert pages [first, last) of @buf are pinned (or not). */
static void assert_pages(const char *buf, unsigned int first,
			 unsigned int last, bool pinned)
{
	unsigned int i;

	for (i = first; i < last; i++) {
		struct tu_page_state st = tu_page_state(buf + i * pg);

		ck_assert_msg(!TU_MLOCK_VISIBLE || st.locked == pinned,
			      "page %u: locked %d, expected %d", i, st.locked,
			      pinned);
		ck_assert_msg(st.dontfork == pinned,
			      "page %u: dontfork %d, expected %d", i,
			      st.dontfork, pinned);
	}
}

static char *map_pages(unsigned int n)
{
	char *buf = mmap(NULL, n * pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int i;

	ck_assert(buf != MAP_FAILED);
	for (i = 0; i < n; i++)
		memset(buf + i * pg, 'a' + (int)i, pg);
	return buf;
}

static void setup(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
}

static void teardown(void)
{
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
}

START_TEST(test_pin_rounds_to_pages)
{
	char *buf = map_pages(4);
	struct kal_pin *pin = NULL;

	/* 2 pages' worth starting 100 bytes in touches pages 0, 1 and 2 */
	ck_assert_ok(kal_pin(buf + 100, 2 * pg, &pin));
	ck_assert_ptr_nonnull(pin);
	ck_assert_uint_eq(kal_pinned_bytes(), 3 * pg);
	assert_pages(buf, 0, 3, true);
	assert_pages(buf, 3, 4, false);

	kal_unpin(pin);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 4, false);
	kal_unpin(NULL);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_pin_overlap)
{
	char *buf = map_pages(8);
	struct kal_pin *a, *b;

	ck_assert_ok(kal_pin(buf, 3 * pg, &a));		/* pages 0-2 */
	ck_assert_ok(kal_pin(buf + 2 * pg, 3 * pg, &b));	/* pages 2-4 */
	ck_assert_uint_eq(kal_pinned_bytes(), 5 * pg);
	assert_pages(buf, 0, 5, true);
	assert_pages(buf, 5, 8, false);

	/* the shared page 2 stays, with B's own */
	kal_unpin(a);
	ck_assert_uint_eq(kal_pinned_bytes(), 3 * pg);
	assert_pages(buf, 0, 2, false);
	assert_pages(buf, 2, 5, true);
	assert_pages(buf, 5, 8, false);

	kal_unpin(b);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 8, false);
	munmap(buf, 8 * pg);
}
END_TEST

START_TEST(test_pin_nested)
{
	char *buf = map_pages(8);
	struct kal_pin *x, *y, *z, *again;

	ck_assert_ok(kal_pin(buf, 8 * pg, &x));		/* 0-7 */
	ck_assert_ok(kal_pin(buf + 2 * pg, 2 * pg, &y));	/* 2-3 */
	ck_assert_ok(kal_pin(buf + 3 * pg, 3 * pg, &z));	/* 3-5 */
	ck_assert_ok(kal_pin(buf, 8 * pg, &again));	/* 0-7 twice */
	ck_assert_uint_eq(kal_pinned_bytes(), 8 * pg);

	kal_unpin(x);
	ck_assert_uint_eq(kal_pinned_bytes(), 8 * pg);
	assert_pages(buf, 0, 8, true);

	kal_unpin(again);
	ck_assert_uint_eq(kal_pinned_bytes(), 4 * pg);
	assert_pages(buf, 0, 2, false);
	assert_pages(buf, 2, 6, true);
	assert_pages(buf, 6, 8, false);

	kal_unpin(z);
	ck_assert_uint_eq(kal_pinned_bytes(), 2 * pg);
	assert_pages(buf, 2, 4, true);
	assert_pages(buf, 4, 8, false);

	kal_unpin(y);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 8, false);
	munmap(buf, 8 * pg);
}
END_TEST

START_TEST(test_pin_adjacent)
{
	char *buf = map_pages(4);
	struct kal_pin *a, *b;

	ck_assert_ok(kal_pin(buf, 2 * pg, &a));
	ck_assert_ok(kal_pin(buf + 2 * pg, 2 * pg, &b));
	ck_assert_uint_eq(kal_pinned_bytes(), 4 * pg);
	assert_pages(buf, 0, 4, true);

	kal_unpin(a);
	ck_assert_uint_eq(kal_pinned_bytes(), 2 * pg);
	assert_pages(buf, 0, 2, false);
	assert_pages(buf, 2, 4, true);

	kal_unpin(b);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 4, false);
	munmap(buf, 4 * pg);
}
END_TEST

START_TEST(test_pin_same_page)
{
	char *buf = map_pages(2);
	struct kal_pin *a, *b;

	ck_assert_ok(kal_pin(buf + 10, 20, &a));
	ck_assert_ok(kal_pin(buf + 100, 20, &b));
	ck_assert_uint_eq(kal_pinned_bytes(), pg);

	kal_unpin(a);
	ck_assert_uint_eq(kal_pinned_bytes(), pg);
	assert_pages(buf, 0, 1, true);

	kal_unpin(b);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 2, false);
	munmap(buf, 2 * pg);
}
END_TEST

static struct rlimit saved_limit;
static bool saved_cap;

/* A soft limit, and this thread without CAP_IPC_LOCK (root's would let
 * every pin pass, as the kernel's does). */
static void limit_set(rlim_t soft)
{
	struct rlimit rl;

	ck_assert_int_eq(getrlimit(RLIMIT_MEMLOCK, &saved_limit), 0);
	rl = saved_limit;
	rl.rlim_cur = soft;
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	saved_cap = tu_cap_ipc_lock(false);
}

static void limit_restore(void)
{
	ck_assert_int_eq(setrlimit(RLIMIT_MEMLOCK, &saved_limit), 0);
	tu_cap_ipc_lock(saved_cap);
}

START_TEST(test_pin_limit)
{
	g_autoptr(tu_log_capture) log = tu_log_capture_begin("hostrdma-kal");
	g_autofree char *want = NULL, *want2 = NULL, *text = NULL;
	struct kal_pin *a = NULL, *b = NULL, *c = NULL, *big = NULL;
	char *buf = map_pages(8);

	/* 4 pages, and no CAP_IPC_LOCK */
	limit_set(4 * pg);
	ck_assert_uint_eq(kal_pin_limit(), 4 * pg);

	ck_assert_errno(kal_pin(buf, 8 * pg, &big), ENOMEM);
	ck_assert_ptr_null(big);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, 8, false);
	want = g_strdup_printf("cannot pin %zu KiB at %p: RLIMIT_MEMLOCK is "
			       "%zu KiB and 0 bytes are pinned",
			       8 * pg / 1024, (void *)buf, 4 * pg / 1024);
	text = tu_log_text(log);
	ck_assert_msg(tu_log_count(log, G_LOG_LEVEL_WARNING, want) == 1,
		      "expected a warning \"%s\", got:\n%s", want, text);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING,
				       "ulimit -l"), 1);

	/* distinct pages count, not requests: 2 + (4 overlapping 2) = 4 */
	ck_assert_ok(kal_pin(buf, 2 * pg, &a));
	ck_assert_ok(kal_pin(buf, 4 * pg, &b));
	ck_assert_uint_eq(kal_pinned_bytes(), 4 * pg);
	/* re-pinning pinned pages needs no room */
	ck_assert_ok(kal_pin(buf + pg, pg, &c));
	kal_unpin(c);
	c = NULL;
	ck_assert_errno(kal_pin(buf + 4 * pg, 1, &c), ENOMEM);
	ck_assert_ptr_null(c);
	ck_assert_uint_eq(kal_pinned_bytes(), 4 * pg);
	assert_pages(buf, 4, 8, false);
	g_free(want2);
	want2 = g_strdup_printf("RLIMIT_MEMLOCK is %zu KiB and %zu KiB are "
				"pinned", 4 * pg / 1024, 4 * pg / 1024);
	g_free(text);
	text = tu_log_text(log);
	ck_assert_msg(tu_log_count(log, G_LOG_LEVEL_WARNING, want2) == 1,
		      "expected a warning \"%s\", got:\n%s", want2, text);

	/* room again once unpinned */
	kal_unpin(a);
	kal_unpin(b);
	ck_assert_ok(kal_pin(buf + 4 * pg, 4 * pg, &c));
	kal_unpin(c);
	limit_restore();
	munmap(buf, 8 * pg);
}
END_TEST

/*
 * With CAP_IPC_LOCK the limit does not hold (the kernel's ib_umem and mlock
 * let such a process pass it): a pin of twice the limit locks its pages,
 * is counted, and says nothing. Without the capability (not root) there is
 * nothing to test.
 */
START_TEST(test_pin_limit_cap_ipc_lock)
{
	g_autoptr(tu_log_capture) log = tu_log_capture_begin("hostrdma-kal");
	struct kal_pin *big = NULL, *more = NULL;
	char *buf = map_pages(8), *one = map_pages(1);
	bool had;

	limit_set(4 * pg);
	if (!saved_cap) {
		limit_restore();
		munmap(buf, 8 * pg);
		munmap(one, pg);
		fprintf(stderr, "kal-pin: no CAP_IPC_LOCK here: the case of "
			"a process holding it is not tested\n");
		return;
	}
	ck_assert_uint_eq(kal_pin_limit(), 4 * pg);
	had = tu_cap_ipc_lock(true);
	ck_assert(!had);
	ck_assert_uint_eq(kal_pin_limit(), UINT64_MAX);
	ck_assert_ok(kal_pin(buf, 8 * pg, &big));
	ck_assert_uint_eq(kal_pinned_bytes(), 8 * pg);
	if (TU_MLOCK_VISIBLE)
		assert_pages(buf, 0, 8, true);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING, NULL), 0);
	/* dropped again, the pages pinned still count: no room for more */
	tu_cap_ipc_lock(false);
	ck_assert_errno(kal_pin(one, 1, &more), ENOMEM);
	ck_assert_ptr_null(more);
	kal_unpin(big);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	limit_restore();
	munmap(buf, 8 * pg);
	munmap(one, pg);
}
END_TEST

START_TEST(test_pin_invalid)
{
	g_autoptr(tu_log_capture) log = tu_log_capture_begin("hostrdma-kal");
	struct kal_pin *pin = (struct kal_pin *)&pin;
	char buf[16];

	ck_assert_errno(kal_pin(buf, 0, &pin), EINVAL);
	ck_assert_ptr_null(pin);
	/* the range itself wraps */
	ck_assert_errno(kal_pin((void *)(UINTPTR_MAX - 10), 100, &pin),
			EINVAL);
	/* the range fits, its page-rounded end wraps */
	ck_assert_errno(kal_pin((void *)(UINTPTR_MAX - 2 * pg + 1), pg + 10,
				&pin), EINVAL);
	ck_assert_ptr_null(pin);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING, "wraps"), 2);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING,
				       "empty range"), 1);
}
END_TEST

START_TEST(test_pin_unmapped)
{
	g_autoptr(tu_log_capture) log = tu_log_capture_begin("hostrdma-kal");
	char *buf = map_pages(3);
	struct kal_pin *pin = NULL, *first = NULL;

	ck_assert_int_eq(munmap(buf + 2 * pg, pg), 0);
	/* page 1 already pinned: the failure must leave it as it was */
	ck_assert_ok(kal_pin(buf + pg, pg, &first));
	ck_assert_errno(kal_pin(buf, 3 * pg, &pin), EFAULT);
	ck_assert_ptr_null(pin);
	ck_assert_uint_eq(kal_pinned_bytes(), pg);
	assert_pages(buf, 0, 1, false);
	assert_pages(buf, 1, 2, true);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING,
				       "not mapped"), 1);
	kal_unpin(first);
	assert_pages(buf, 0, 2, false);
	munmap(buf, 2 * pg);
}
END_TEST

/*
 * Issue 11/4: pinned memory unmapped and mapped anew at the same address
 * (the kernel unlocks with the old mapping). A new pin of the address
 * pins the new pages (those touched after it too), though the stale pin
 * still covers them; the addresses count once; releasing the stale pin
 * leaves the new one's pages pinned.
 */
START_TEST(test_pin_remapped)
{
	char *buf = map_pages(3), *again;
	struct kal_pin *stale = NULL, *pin = NULL;

	ck_assert_ok(kal_pin(buf, 3 * pg, &stale));
	assert_pages(buf, 0, 3, true);
	ck_assert_int_eq(munmap(buf, 3 * pg), 0);
	again = mmap(buf, 3 * pg, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ck_assert_ptr_eq(again, buf);
	memset(again, 'x', 2 * pg); /* page 2 is touched only once pinned */
	assert_pages(buf, 0, 2, false);
	ck_assert_uint_eq(kal_pinned_bytes(), 3 * pg);

	ck_assert_ok(kal_pin(buf + pg, 2 * pg, &pin));
	memset(again + 2 * pg, 'y', pg);
	assert_pages(buf, 1, 3, true);
	ck_assert_uint_eq(kal_pinned_bytes(), 3 * pg);
	kal_unpin(stale);
	assert_pages(buf, 1, 3, true);
	ck_assert_uint_eq(kal_pinned_bytes(), 2 * pg);
	kal_unpin(pin);
	assert_pages(buf, 0, 3, false);
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	munmap(buf, 3 * pg);
}
END_TEST

/* A pin over memory unmapped under another pin fails: the old pin's word
 * is not taken for it. */
START_TEST(test_pin_over_unmapped_pin)
{
	g_autoptr(tu_log_capture) log = tu_log_capture_begin("hostrdma-kal");
	char *buf = map_pages(2);
	struct kal_pin *stale = NULL, *pin = NULL;

	ck_assert_ok(kal_pin(buf, 2 * pg, &stale));
	ck_assert_int_eq(munmap(buf, 2 * pg), 0);
	ck_assert_errno(kal_pin(buf, pg, &pin), EFAULT);
	ck_assert_ptr_null(pin);
	ck_assert_uint_eq(kal_pinned_bytes(), 2 * pg);
	ck_assert_uint_eq(tu_log_count(log, G_LOG_LEVEL_WARNING,
				       "not mapped"), 1);
	kal_unpin(stale);
}
END_TEST

static void child_read_page(void *arg)
{
	const volatile char *p = arg;
	char c = p[0];

	/* reached only if the page was there */
	tu_child_assert(c >= 'a' && c <= 'z', "page holds %d", c);
}

/* Fork a child that reads @addr; returns its wait status. */
static int fork_and_read(const char *addr)
{
	g_autofree char *msg = NULL;
	int status = tu_fork_child(child_read_page, (void *)addr, &msg);

	ck_assert_msg(msg[0] == 0, "child: %s", msg);
	return status;
}

static void assert_status(int status, int signal, const char *what)
{
	g_autofree char *how = tu_wait_status_str(status);

	if (signal)
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == signal,
			      "child reading %s: %s", what, how);
	else
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "child reading %s: %s", what, how);
}

START_TEST(test_pin_dontfork)
{
	char *buf = map_pages(3);
	struct kal_pin *pin;

	ck_assert_ok(kal_pin(buf + pg, pg, &pin));

	/* the pinned page is not in the child at all */
	assert_status(fork_and_read(buf + pg), SIGSEGV, "the pinned page");
	/* its unpinned neighbours are */
	assert_status(fork_and_read(buf), 0, "page 0");
	assert_status(fork_and_read(buf + 2 * pg), 0, "page 2");

	/* unpinned, the page forks again */
	kal_unpin(pin);
	assert_status(fork_and_read(buf + pg), 0, "the unpinned page");
	munmap(buf, 3 * pg);
}
END_TEST

struct fork_state_arg {
	char *buf;
	struct kal_pin *pin;
};

static void child_after_fork(void *p)
{
	struct fork_state_arg *arg = p;
	struct kal_pin *mine = NULL;

	/* nothing is locked in a child, and kal knows it */
	tu_child_assert(kal_pinned_bytes() == 0, "child counts %" PRIu64,
			kal_pinned_bytes());
	tu_child_assert_ok(kal_pin(arg->buf, pg, &mine));
	tu_child_assert(kal_pinned_bytes() == pg, "child counts %" PRIu64,
			kal_pinned_bytes());
	/* the inherited pin is stale: releasing it changes nothing */
	kal_unpin(arg->pin);
	tu_child_assert(kal_pinned_bytes() == pg, "child counts %" PRIu64,
			kal_pinned_bytes());
	kal_unpin(mine);
	tu_child_assert(kal_pinned_bytes() == 0, "child counts %" PRIu64,
			kal_pinned_bytes());
}

START_TEST(test_pin_fork_resets_child)
{
	struct fork_state_arg arg;

	arg.buf = map_pages(2);
	ck_assert_ok(kal_pin(arg.buf + pg, pg, &arg.pin));
	tu_run_child(child_after_fork, &arg);
	/* the parent's pin is untouched */
	ck_assert_uint_eq(kal_pinned_bytes(), pg);
	assert_pages(arg.buf, 1, 2, true);
	kal_unpin(arg.pin);
	munmap(arg.buf, 2 * pg);
}
END_TEST

#define STRESS_PAGES 64
#define STRESS_THREADS 4
#define STRESS_ROUNDS 300
#define STRESS_HELD 8

struct stress_arg {
	char *buf;
	unsigned int seed;
	int failures;
};

static void *stress_thread(void *p)
{
	struct stress_arg *arg = p;
	struct kal_pin *held[STRESS_HELD] = { NULL };
	GRand *rand = g_rand_new_with_seed(arg->seed);
	unsigned int i;

	for (i = 0; i < STRESS_ROUNDS; i++) {
		unsigned int slot = (unsigned int)g_rand_int_range(rand, 0,
							  STRESS_HELD);
		unsigned int first = (unsigned int)g_rand_int_range(rand, 0,
							STRESS_PAGES);
		unsigned int n = (unsigned int)g_rand_int_range(rand, 1,
						STRESS_PAGES - first + 1);

		kal_unpin(held[slot]);
		held[slot] = NULL;
		if (kal_pin(arg->buf + first * pg + 7, n * pg - 7,
			    &held[slot]))
			arg->failures++;
	}
	for (i = 0; i < STRESS_HELD; i++)
		kal_unpin(held[i]);
	g_rand_free(rand);
	return NULL;
}

START_TEST(test_pin_threads)
{
	struct stress_arg args[STRESS_THREADS];
	pthread_t threads[STRESS_THREADS];
	char *buf = map_pages(STRESS_PAGES);
	unsigned int i;

	for (i = 0; i < STRESS_THREADS; i++) {
		args[i].buf = buf;
		args[i].seed = 1234 + i;
		args[i].failures = 0;
		ck_assert_int_eq(pthread_create(&threads[i], NULL,
						stress_thread, &args[i]), 0);
	}
	for (i = 0; i < STRESS_THREADS; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_int_eq(args[i].failures, 0);
	}
	ck_assert_uint_eq(kal_pinned_bytes(), 0);
	assert_pages(buf, 0, STRESS_PAGES, false);
	munmap(buf, STRESS_PAGES * pg);
}
END_TEST

Suite *suite_kal_pin(void)
{
	Suite *s = suite_create("kal-pin");
	TCase *tc = tcase_create("pin");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pin_rounds_to_pages);
	tcase_add_test(tc, test_pin_overlap);
	tcase_add_test(tc, test_pin_nested);
	tcase_add_test(tc, test_pin_adjacent);
	tcase_add_test(tc, test_pin_same_page);
	tcase_add_test(tc, test_pin_limit);
	tcase_add_test(tc, test_pin_limit_cap_ipc_lock);
	tcase_add_test(tc, test_pin_invalid);
	tcase_add_test(tc, test_pin_unmapped);
	tcase_add_test(tc, test_pin_remapped);
	tcase_add_test(tc, test_pin_over_unmapped_pin);
	tcase_add_test(tc, test_pin_dontfork);
	tcase_add_test(tc, test_pin_fork_resets_child);
	tcase_add_test(tc, test_pin_threads);
	/* valgrind makes the smaps scans and the stress slow */
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
