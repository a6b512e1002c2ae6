/* SPDX-License-Identifier: MIT */
/*
 * rnicpi_engine.h - the one progress engine software providers share:
 * file descriptor sources on one epoll set, one timer model (a deadline
 * heap behind a single timerfd, nanosecond resolution), a wake-up
 * eventfd, a hook that runs after every pass, and optional busy-polling
 * after traffic. Run by a thread of its own (rnicpi_engine_start) or
 * driven pass by pass by whoever owns it (rnicpi_engine_run_once: the
 * fuzz harnesses, a GLib source on rnicpi_engine_fd).
 *
 * Not installed; linked statically into each provider with rnicpi_util.
 */
#ifndef RNICPI_ENGINE_H
#define RNICPI_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rnicpi_engine;

/*
 * Something the engine watches: embed it in the object that owns the fd.
 * @dispatch runs on the engine's thread (or whoever calls run_once) with
 * the epoll events; it returns true when it moved data, which starts the
 * busy-poll window. The engine never frees a source: an owner that frees
 * one while a pass may still hold its event defers the free to the
 * after-pass hook (siw's zombies) or names sources by something it looks
 * up again (rxe's QPNs).
 */
struct rnicpi_source {
	bool (*dispatch)(struct rnicpi_source *src, uint32_t events);
};

/*
 * A one-shot timer. @fn(@arg) runs on the engine's pass once the deadline
 * passed, with no engine lock held. The engine copies @fn and @arg before
 * it drops its lock and never touches the timer again for that expiry, so
 * an owner may cancel and free the timer while the callback runs; the
 * callback must then find its object through @arg safely (a reference,
 * a lookup, a deferred free).
 */
struct rnicpi_timer {
	uint64_t deadline_ns;
	uint32_t heap_idx;	/* 1-based slot in the heap, 0 = not pending */
	void (*fn)(void *arg);
	void *arg;
};

struct rnicpi_engine_stats {
	atomic_uint_fast64_t passes;	   /* run_once calls that waited */
	atomic_uint_fast64_t wakeups;	   /* rnicpi_engine_wake() reads */
	atomic_uint_fast64_t timers_fired;
};

struct rnicpi_engine {
	char name[32];
	int epfd;
	int wake_fd;
	int timer_fd;
	pthread_mutex_t lock;	/* the heap, timer_set_ns, running */
	pthread_cond_t timer_done;	/* running went back to NULL */
	struct rnicpi_timer *running;	/* whose callback runs now */
	struct rnicpi_timer **heap;
	uint32_t n_heap, cap_heap;
	uint64_t timer_set_ns;	/* what timer_fd is programmed to, 0 none */
	/* Runs after each pass; returns true when work is left over that
	 * wants another pass at once (the next wait does not sleep). */
	bool (*after_pass)(void *arg);
	void *after_arg;
	uint64_t busy_poll_ns;	/* spin this long after traffic */
	pthread_t thread;
	bool thread_running;
	atomic_bool stop;
	struct rnicpi_engine_stats stats;
};

/*
 * Set up @e (epoll set, wake eventfd, timerfd); no thread yet. @name is
 * for log lines. 0 or -errno; on error nothing is left to clean up.
 */
int rnicpi_engine_init(struct rnicpi_engine *e, const char *name,
		       uint32_t busy_poll_us, bool (*after_pass)(void *arg),
		       void *after_arg);
/* Stop the thread if running, close the descriptors, free the heap.
 * Pending timers are dropped, not run. */
void rnicpi_engine_fini(struct rnicpi_engine *e);

/* Start the engine's own thread: 0 or -errno. */
int rnicpi_engine_start(struct rnicpi_engine *e);
/* Ask the thread to stop and join it; a no-op when none runs. Must not be
 * called from the engine's thread. */
void rnicpi_engine_stop(struct rnicpi_engine *e);
/* Is the caller the engine's thread? */
bool rnicpi_engine_on_thread(const struct rnicpi_engine *e);

/*
 * One pass: wait up to @timeout_ms (-1 forever, 0 not at all) for
 * events, dispatch them, run expired timers, then the after-pass hook.
 * *@busy (if not NULL) is set when a source said it moved data; *@more
 * (if not NULL) gets the hook's answer. Returns the number of epoll
 * events (0 on a timeout or EINTR) or -errno.
 */
int rnicpi_engine_run_once(struct rnicpi_engine *e, int timeout_ms,
			   bool *busy, bool *more);

/* Make the current or next pass return promptly. Async-signal-safe. */
void rnicpi_engine_wake(struct rnicpi_engine *e);

/* The epoll fd: readable while a pass has work. For a consumer that
 * drives the engine from its own loop (a GLib source on it calling
 * rnicpi_engine_run_once(e, 0, ...)). */
int rnicpi_engine_fd(const struct rnicpi_engine *e);

/* Watch @fd for @events (EPOLLIN, ...), dispatching to @src. 0 or -errno. */
int rnicpi_engine_add(struct rnicpi_engine *e, int fd,
		      struct rnicpi_source *src, uint32_t events);
int rnicpi_engine_mod(struct rnicpi_engine *e, int fd,
		      struct rnicpi_source *src, uint32_t events);
/* Stop watching @fd; never added or already closed is fine. */
void rnicpi_engine_del(struct rnicpi_engine *e, int fd);

/* A timer not pending, calling @fn(@arg) when it fires. */
void rnicpi_timer_init(struct rnicpi_timer *t, void (*fn)(void *arg),
		       void *arg);
/* (Re)arm @t to fire @delay_ns from now; an armed timer moves. */
void rnicpi_timer_arm(struct rnicpi_engine *e, struct rnicpi_timer *t,
		      uint64_t delay_ns);
/* Make @t fire no later than @delay_ns from now: arm it unless it is
 * already due by then (a pending timer never moves later). For a
 * deadline pushed back on every packet (a retransmit timer): the
 * callback checks the real deadline and arms again when it fired early,
 * so the timerfd is reprogrammed once per period, not once per packet. */
void rnicpi_timer_arm_by(struct rnicpi_engine *e, struct rnicpi_timer *t,
			 uint64_t delay_ns);
/* Disarm @t; a no-op when not pending. A callback already taken off the
 * heap still runs (see struct rnicpi_timer). */
void rnicpi_timer_cancel(struct rnicpi_engine *e, struct rnicpi_timer *t);
/* rnicpi_timer_cancel, and if @t's callback is running on another
 * thread, wait for it to return: afterwards the owner may free what the
 * callback's arg points to. Not with a lock the callback takes. */
void rnicpi_timer_cancel_sync(struct rnicpi_engine *e,
			      struct rnicpi_timer *t);
/* Is @t armed and not yet fired? */
bool rnicpi_timer_pending(struct rnicpi_engine *e, struct rnicpi_timer *t);

/* CLOCK_MONOTONIC in nanoseconds, the clock of every deadline. */
uint64_t rnicpi_now_ns(void);

#endif /* RNICPI_ENGINE_H */
