/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the Check suites. */
#ifndef TESTS_TESTUTIL_H
#define TESTS_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <glib.h>

/* ck_assert on a 0-or-negative-errno call, printing the errno name. */
#define ck_assert_ok(expr)                                                  \
	do {                                                                \
		int ck_ok_rc_ = (expr);                                     \
		ck_assert_msg(ck_ok_rc_ == 0, "%s returned %d (%s)", #expr, \
			      ck_ok_rc_, g_strerror(-ck_ok_rc_));             \
	} while (0)

/* ck_assert that a call returned exactly -err. */
#define ck_assert_errno(expr, err)                                          \
	do {                                                                \
		int ck_err_rc_ = (expr);                                    \
		ck_assert_msg(ck_err_rc_ == -(err),                         \
			      "%s returned %d (%s), expected %d (%s)", #expr, \
			      ck_err_rc_, g_strerror(-ck_err_rc_), -(err),    \
			      g_strerror(err));                               \
	} while (0)

/* ------------------------------------------------------------------ */
/* Log capture                                                         */
/* ------------------------------------------------------------------ */

/*
 * Capture GLib log messages so a test can assert what a failure logged.
 * The runner installs one GLib log writer for the whole process (GLib
 * allows only one g_log_set_writer_func() per process, so suites must use
 * this instead of their own); while a capture is active, messages of its
 * domain are recorded at every level, debug included, and not printed
 * (set TU_LOG_ECHO=1 to print them as well). Other messages go to GLib's
 * default writer. Captures nest; each records independently.
 */
struct tu_log_capture;

/* Start capturing @domain ("hostrdma-kal"), or every domain if NULL.
 * Free with tu_log_capture_end(). */
struct tu_log_capture *tu_log_capture_begin(const char *domain);

/* Stop capturing and free. NULL is accepted. */
void tu_log_capture_end(struct tu_log_capture *cap);

/* Number of messages captured so far at any of @levels (G_LOG_LEVEL_MASK
 * for all) whose text contains @substring (NULL: any text). */
unsigned int tu_log_count(struct tu_log_capture *cap, GLogLevelFlags levels,
			  const char *substring);

/* Everything captured so far, one "LEVEL: message" line each, for
 * assertion messages; the caller frees it. */
char *tu_log_text(struct tu_log_capture *cap);

typedef struct tu_log_capture tu_log_capture;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(tu_log_capture, tu_log_capture_end)

/*
 * A hook on the same writer: while set, @fn(domain, level, message, @data)
 * runs for every message of every domain and level, on the thread that
 * logs it, before any capture records it. A case that must order two
 * threads between two steps of the library (a message it logs between
 * them) parks the logging thread in @fn. @fn must not log nor call
 * tu_log_hook_set. One hook at a time; tu_log_hook_set(NULL, NULL)
 * removes it, and returns once no thread runs the old one (remove it
 * before the case's assertions: under CK_FORK=no a failed one leaves
 * the hook to the next case).
 */
typedef void (*tu_log_hook_fn)(const char *domain, GLogLevelFlags level,
			       const char *message, void *data);
void tu_log_hook_set(tu_log_hook_fn fn, void *data);

/* ------------------------------------------------------------------ */
/* Forked children                                                     */
/* ------------------------------------------------------------------ */

/*
 * Run @fn(@arg) in a fork()ed child, e.g. to enter a private network
 * namespace (unshare) without touching the runner's, or to watch a crash.
 * Check's ck_assert must not be used in the child: with CK_FORK=no it
 * would longjmp into the runner's copy and run the remaining tests twice.
 * The child asserts with tu_child_assert*(), which report the message to
 * the parent through a pipe and _exit(1). Returning from @fn is success
 * (_exit(0)).
 *
 * tu_fork_child() returns the child's wait status and, in *@msg, what it
 * reported (the caller frees it; "" if nothing). tu_run_child() asserts,
 * in the parent, that the child exited 0 and fails with its message.
 */
typedef void (*tu_child_fn)(void *arg);

int tu_fork_child(tu_child_fn fn, void *arg, char **msg);
void tu_run_child(tu_child_fn fn, void *arg);

G_GNUC_NORETURN G_GNUC_PRINTF(3, 4)
void tu_child_fail(const char *file, int line, const char *fmt, ...);

/* Describe a wait status ("exited with 1", "killed by SIGSEGV"); the
 * caller frees it. */
char *tu_wait_status_str(int status);

#define tu_child_assert(cond, ...)                                          \
	do {                                                                \
		if (!(cond))                                                \
			tu_child_fail(__FILE__, __LINE__,                   \
				      "assertion '" #cond "' failed: "      \
				      __VA_ARGS__);                         \
	} while (0)

#define tu_child_assert_ok(expr)                                            \
	do {                                                                \
		int tu_ok_rc_ = (expr);                                     \
		if (tu_ok_rc_ != 0)                                         \
			tu_child_fail(__FILE__, __LINE__,                   \
				      "%s returned %d (%s)", #expr,          \
				      tu_ok_rc_, g_strerror(-tu_ok_rc_));      \
	} while (0)

#define tu_child_assert_errno(expr, err)                                    \
	do {                                                                \
		int tu_err_rc_ = (expr);                                    \
		if (tu_err_rc_ != -(err))                                   \
			tu_child_fail(__FILE__, __LINE__,                   \
				      "%s returned %d (%s), expected %d (%s)", \
				      #expr, tu_err_rc_,                    \
				      g_strerror(-tu_err_rc_), -(err),        \
				      g_strerror(err));                       \
	} while (0)

/* ------------------------------------------------------------------ */
/* Pinned pages                                                        */
/* ------------------------------------------------------------------ */

/* What /proc/self/smaps says about the mapping holding one page. */
struct tu_page_state {
	bool found;
	bool locked;	/* VmFlags "lo" and Locked: covers the mapping */
	bool dontfork;	/* VmFlags "dc" (MADV_DONTFORK) */
};

/* The state of the mapping holding @addr; asserts that there is one. */
struct tu_page_state tu_page_state(const void *addr);

/* Whether this process runs under valgrind, which keeps descriptors of
 * its own at the top of RLIMIT_NOFILE and refuses (EINVAL) a limit
 * lowered below them: tests that run a process out of descriptors cannot
 * run there (they do in make check and check-sanitizers). */
bool tu_under_valgrind(void);

/* Sets CAP_IPC_LOCK in the calling thread's effective set (it must be in
 * the permitted set to set it; clearing always works) and returns whether
 * it was set before. kal_pin lets a thread holding it pass RLIMIT_MEMLOCK,
 * as the kernel does: a test of the limit clears it and restores it. */
bool tu_cap_ipc_lock(bool on);

/* AddressSanitizer's interceptors turn mlock() and munlock() into no-ops
 * (mlock2() it lets through), so in a sanitizer build (configure
 * --enable-sanitizers) whether a page is locked says nothing about kal:
 * the tests check "locked" only where it means something. */
#if defined(__SANITIZE_ADDRESS__)
#define TU_MLOCK_VISIBLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_MLOCK_VISIBLE 0
#endif
#endif
#ifndef TU_MLOCK_VISIBLE
#define TU_MLOCK_VISIBLE 1
#endif

/* ------------------------------------------------------------------ */
/* Ports                                                               */
/* ------------------------------------------------------------------ */

/*
 * The first of @n consecutive TCP ports on 127.0.0.1 that nothing holds
 * now, picked below the kernel's ephemeral range so that the client
 * sockets of the test itself (or of a test before it) cannot be handed
 * one of them while the test runs. Asserts when none is found.
 */
uint16_t tu_free_tcp_ports(unsigned int n);

#endif
