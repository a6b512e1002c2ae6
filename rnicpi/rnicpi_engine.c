/* SPDX-License-Identifier: MIT */
/*
 * rnicpi_engine.c - the progress engine shared by the software providers
 * (see rnicpi_engine.h). One epoll set; the wake-up eventfd and the
 * timerfd are two more members of it, told apart from sources by the
 * addresses stored in their epoll data.
 */
#include "config.h"

#include <signal.h>
#include <errno.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rnicpi/rnicpi_engine.h"

#define ENGINE_BATCH 64

uint64_t rnicpi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Timers: a binary min-heap on deadline behind one timerfd            */
/* ------------------------------------------------------------------ */

/* Slots are 1-based so that heap_idx 0 can mean "not pending". */
static struct rnicpi_timer **slot(struct rnicpi_engine *e, uint32_t i)
{
	return &e->heap[i - 1];
}

static void heap_place(struct rnicpi_engine *e, uint32_t i,
		       struct rnicpi_timer *t)
{
	*slot(e, i) = t;
	t->heap_idx = i;
}

static void sift_up(struct rnicpi_engine *e, uint32_t i)
{
	struct rnicpi_timer *t = *slot(e, i);

	while (i > 1) {
		struct rnicpi_timer *p = *slot(e, i / 2);

		if (p->deadline_ns <= t->deadline_ns)
			break;
		heap_place(e, i, p);
		i /= 2;
	}
	heap_place(e, i, t);
}

static void sift_down(struct rnicpi_engine *e, uint32_t i)
{
	struct rnicpi_timer *t = *slot(e, i);

	for (;;) {
		uint32_t c = 2 * i;

		if (c > e->n_heap)
			break;
		if (c + 1 <= e->n_heap &&
		    (*slot(e, c + 1))->deadline_ns < (*slot(e, c))->deadline_ns)
			c++;
		if ((*slot(e, c))->deadline_ns >= t->deadline_ns)
			break;
		heap_place(e, i, *slot(e, c));
		i = c;
	}
	heap_place(e, i, t);
}

static void heap_remove(struct rnicpi_engine *e, struct rnicpi_timer *t)
{
	uint32_t i = t->heap_idx;
	struct rnicpi_timer *last = *slot(e, e->n_heap);

	e->n_heap--;
	t->heap_idx = 0;
	if (last == t)
		return;
	heap_place(e, i, last);
	if (i > 1 && (*slot(e, i / 2))->deadline_ns > last->deadline_ns)
		sift_up(e, i);
	else
		sift_down(e, i);
}

/* Lock held: program the timerfd for the earliest deadline, if it
 * changed. A deadline already past is set to 1 ns ahead: an absolute
 * time in the past also fires at once, but 0 would disarm. */
static void timerfd_sync(struct rnicpi_engine *e)
{
	uint64_t want = e->n_heap ? (*slot(e, 1))->deadline_ns : 0;
	struct itimerspec its = { 0 };

	if (want == e->timer_set_ns)
		return;
	e->timer_set_ns = want;
	its.it_value.tv_sec = (time_t)(want / 1000000000u);
	its.it_value.tv_nsec = (long)(want % 1000000000u);
	if (want && !its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	timerfd_settime(e->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void rnicpi_timer_init(struct rnicpi_timer *t, void (*fn)(void *arg),
		       void *arg)
{
	memset(t, 0, sizeof(*t));
	t->fn = fn;
	t->arg = arg;
}

/* Lock held: (re)arm @t for @deadline. */
static void arm_locked(struct rnicpi_engine *e, struct rnicpi_timer *t,
		       uint64_t deadline)
{
	if (t->heap_idx) {
		bool earlier = deadline < t->deadline_ns;

		t->deadline_ns = deadline;
		if (earlier)
			sift_up(e, t->heap_idx);
		else
			sift_down(e, t->heap_idx);
	} else {
		if (e->n_heap == e->cap_heap) {
			uint32_t cap = e->cap_heap ? 2 * e->cap_heap : 64;
			struct rnicpi_timer **h =
				realloc(e->heap, cap * sizeof(*h));

			if (!h) {
				/* Without room the timer cannot wait; firing
				 * early is wrong too. Say so: the owner's
				 * deadline is lost. */
				g_warning("%s: out of memory arming a timer",
					  e->name);
				return;
			}
			e->heap = h;
			e->cap_heap = cap;
		}
		t->deadline_ns = deadline;
		e->n_heap++;
		heap_place(e, e->n_heap, t);
		sift_up(e, e->n_heap);
	}
	timerfd_sync(e);
}

void rnicpi_timer_arm(struct rnicpi_engine *e, struct rnicpi_timer *t,
		      uint64_t delay_ns)
{
	uint64_t deadline = rnicpi_now_ns() + delay_ns;

	pthread_mutex_lock(&e->lock);
	arm_locked(e, t, deadline);
	pthread_mutex_unlock(&e->lock);
}

void rnicpi_timer_arm_by(struct rnicpi_engine *e, struct rnicpi_timer *t,
			 uint64_t delay_ns)
{
	uint64_t deadline = rnicpi_now_ns() + delay_ns;

	pthread_mutex_lock(&e->lock);
	if (!t->heap_idx || t->deadline_ns > deadline)
		arm_locked(e, t, deadline);
	pthread_mutex_unlock(&e->lock);
}

void rnicpi_timer_cancel(struct rnicpi_engine *e, struct rnicpi_timer *t)
{
	pthread_mutex_lock(&e->lock);
	if (t->heap_idx) {
		heap_remove(e, t);
		timerfd_sync(e);
	}
	pthread_mutex_unlock(&e->lock);
}

void rnicpi_timer_cancel_sync(struct rnicpi_engine *e,
			      struct rnicpi_timer *t)
{
	pthread_mutex_lock(&e->lock);
	if (t->heap_idx) {
		heap_remove(e, t);
		timerfd_sync(e);
	}
	/* On the engine's thread the callback is our caller: no wait. */
	while (e->running == t && !rnicpi_engine_on_thread(e))
		pthread_cond_wait(&e->timer_done, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

bool rnicpi_timer_pending(struct rnicpi_engine *e, struct rnicpi_timer *t)
{
	bool on;

	pthread_mutex_lock(&e->lock);
	on = t->heap_idx != 0;
	pthread_mutex_unlock(&e->lock);
	return on;
}

/* Take expired timers one at a time and run each with no lock held: a
 * callback may arm or cancel timers, this one included. */
static void run_timers(struct rnicpi_engine *e)
{
	uint64_t now = rnicpi_now_ns();

	for (;;) {
		struct rnicpi_timer *t;
		void (*fn)(void *);
		void *arg;

		pthread_mutex_lock(&e->lock);
		if (!e->n_heap || (*slot(e, 1))->deadline_ns > now) {
			timerfd_sync(e);
			pthread_mutex_unlock(&e->lock);
			return;
		}
		t = *slot(e, 1);
		heap_remove(e, t);
		fn = t->fn;
		arg = t->arg;
		e->running = t;
		pthread_mutex_unlock(&e->lock);
		atomic_fetch_add(&e->stats.timers_fired, 1);
		fn(arg);
		pthread_mutex_lock(&e->lock);
		e->running = NULL;
		pthread_cond_broadcast(&e->timer_done);
		pthread_mutex_unlock(&e->lock);
	}
}

/* ------------------------------------------------------------------ */
/* Sources and passes                                                  */
/* ------------------------------------------------------------------ */

int rnicpi_engine_add(struct rnicpi_engine *e, int fd,
		      struct rnicpi_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		g_info("%s: epoll add fd %d: %s", e->name, fd,
		       g_strerror(-err));
		return err;
	}
	return 0;
}

int rnicpi_engine_mod(struct rnicpi_engine *e, int fd,
		      struct rnicpi_source *src, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = src };

	if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

void rnicpi_engine_del(struct rnicpi_engine *e, int fd)
{
	/* ENOENT (never added) and EBADF are fine here. */
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void rnicpi_engine_wake(struct rnicpi_engine *e)
{
	uint64_t one = 1;

	if (write(e->wake_fd, &one, sizeof(one)) < 0)
		return; /* counter saturated: already readable */
}

int rnicpi_engine_fd(const struct rnicpi_engine *e)
{
	return e->epfd;
}

bool rnicpi_engine_on_thread(const struct rnicpi_engine *e)
{
	return e->thread_running && pthread_equal(pthread_self(), e->thread);
}

int rnicpi_engine_run_once(struct rnicpi_engine *e, int timeout_ms,
			   bool *busy, bool *more)
{
	struct epoll_event evs[ENGINE_BATCH];
	bool left = false;
	int n, i;

	n = epoll_wait(e->epfd, evs, ENGINE_BATCH, timeout_ms);
	if (n < 0 && errno != EINTR) {
		int err = -errno;

		g_info("%s: epoll_wait: %s", e->name, g_strerror(-err));
		return err;
	}
	atomic_fetch_add(&e->stats.passes, 1);
	for (i = 0; i < n; i++) {
		void *p = evs[i].data.ptr;
		uint64_t v;

		if (p == &e->wake_fd) {
			if (read(e->wake_fd, &v, sizeof(v)) > 0)
				atomic_fetch_add(&e->stats.wakeups, 1);
		} else if (p == &e->timer_fd) {
			/* The expiry count is not needed: the heap says
			 * what is due. EAGAIN: re-armed meanwhile. */
			if (read(e->timer_fd, &v, sizeof(v)) < 0)
				continue;
		} else {
			struct rnicpi_source *src = p;

			if (src->dispatch(src, evs[i].events) && busy)
				*busy = true;
		}
	}
	/* Every pass looks at the heap, not only one the timerfd woke: a
	 * timer armed in the past by a dispatch is due now. */
	run_timers(e);
	if (e->after_pass)
		left = e->after_pass(e->after_arg);
	if (more)
		*more = left;
	return n < 0 ? 0 : n;
}

/*
 * The engine's thread. After a pass that moved data it keeps polling for
 * busy_poll_ns before it sleeps: a thread asleep between bursts is woken
 * by the sender's softirq, which charges the sender the wake-up and the
 * receiver's protocol processing; a thread that is polling takes that
 * work in its own time. Timers need no timeout here: the timerfd is in
 * the epoll set.
 */
static void *engine_main(void *arg)
{
	struct rnicpi_engine *e = arg;
	uint64_t spin_until = 0;
	bool more = false;

	while (!atomic_load(&e->stop)) {
		bool spinning = e->busy_poll_ns &&
				rnicpi_now_ns() < spin_until;
		bool busy = false;

		if (rnicpi_engine_run_once(e, more || spinning ? 0 : -1, &busy,
					   &more) < 0)
			break;
		if (busy && e->busy_poll_ns)
			spin_until = rnicpi_now_ns() + e->busy_poll_ns;
	}
	return NULL;
}

int rnicpi_engine_start(struct rnicpi_engine *e)
{
	char comm[16];
	int rc;
	sigset_t all, old;

	atomic_store(&e->stop, false);
	/* The application's signals are for its own threads: started with
	 * every signal blocked, this one never takes one (a SIGINT meant
	 * for the thread that waits to end the program would be lost). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&e->thread, NULL, engine_main, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return rc;
	/* Named after its owner in ps and gdb (16 bytes with the NUL). */
	g_strlcpy(comm, e->name, sizeof(comm));
	pthread_setname_np(e->thread, comm);
	e->thread_running = true;
	return 0;
}

void rnicpi_engine_stop(struct rnicpi_engine *e)
{
	if (!e->thread_running)
		return;
	atomic_store(&e->stop, true);
	rnicpi_engine_wake(e);
	pthread_join(e->thread, NULL);
	e->thread_running = false;
}

int rnicpi_engine_init(struct rnicpi_engine *e, const char *name,
		       uint32_t busy_poll_us, bool (*after_pass)(void *arg),
		       void *after_arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int rc;

	memset(e, 0, sizeof(*e));
	g_strlcpy(e->name, name ? name : "engine", sizeof(e->name));
	e->busy_poll_ns = (uint64_t)busy_poll_us * 1000u;
	e->after_pass = after_pass;
	e->after_arg = after_arg;
	e->wake_fd = e->timer_fd = -1;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return -errno;
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake_fd < 0)
		goto err;
	e->timer_fd = timerfd_create(CLOCK_MONOTONIC,
				     TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->timer_fd < 0)
		goto err;
	ev.data.ptr = &e->wake_fd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wake_fd, &ev) < 0)
		goto err;
	ev.data.ptr = &e->timer_fd;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->timer_fd, &ev) < 0)
		goto err;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->timer_done, NULL);
	return 0;

err:
	rc = -errno;
	g_info("%s: engine set-up: %s", e->name, g_strerror(-rc));
	if (e->timer_fd >= 0)
		close(e->timer_fd);
	if (e->wake_fd >= 0)
		close(e->wake_fd);
	close(e->epfd);
	e->epfd = e->wake_fd = e->timer_fd = -1;
	return rc;
}

void rnicpi_engine_fini(struct rnicpi_engine *e)
{
	uint32_t i;

	rnicpi_engine_stop(e);
	if (e->epfd < 0)
		return;
	for (i = 1; i <= e->n_heap; i++)
		(*slot(e, i))->heap_idx = 0;
	free(e->heap);
	e->heap = NULL;
	e->n_heap = e->cap_heap = 0;
	close(e->timer_fd);
	close(e->wake_fd);
	close(e->epfd);
	e->epfd = e->wake_fd = e->timer_fd = -1;
	pthread_cond_destroy(&e->timer_done);
	pthread_mutex_destroy(&e->lock);
}
