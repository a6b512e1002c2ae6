/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE's option poll_rx: an application thread that polls an empty
 * CQ reads the device's receive sockets itself, and while it keeps
 * polling the progress thread leaves them to it (parking, the lease and
 * its timer, the ACKs a poll leaves for the consumer's next move).
 * hostrdma-rxe(7) says what it does for whom; the sockets, the batches
 * read and the progress thread are rxe_net.c's.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "vp/rxe/rxe.h"
#include "vp/rxe/rxe_net.h"

/* A poller's share of rxe_net_rx_drain: the application has its own
 * work. */
#define RXE_POLL_RX_ROUNDS 4

/* The device whose receive side this thread holds from a poll_cq, or
 * whose left ACKs it sends from a consumer's call. */
static __thread const struct rxe_dev *rx_poller;

bool rxe_net_on_poller(const struct rxe_dev *dev)
{
	return rx_poller == dev;
}

/*
 * The ACKs a poll left (acks_deferred), sent from a consumer's call:
 * poll_cq, a post, an arm. That caller may hold locks of the layers
 * above, so it is the device's poller meanwhile: events raised under a
 * QP's lock it takes stay queued for the progress thread
 * (rxe_qp_unlock), as in a poll that reads the sockets.
 */
static void flush_left_acks(struct rxe_dev *dev)
{
	const struct rxe_dev *was = rx_poller;

	if (!atomic_load_explicit(&dev->acks_deferred, memory_order_relaxed) ||
	    !atomic_exchange(&dev->acks_deferred, false))
		return;
	rx_poller = dev;
	rxe_net_flush_acks(dev);
	rx_poller = was;
}

/*
 * poll_rx parking. Reading the sockets from poll_cq alone saves little:
 * the progress thread is still woken by every datagram and takes the
 * core (or the receive side) first; on two cores a 4 KiB WRITE stream
 * between two processes went from 924 to 968 MB/s only (one run). So while an
 * application keeps polling (an empty CQ polled within the lease, option
 * poll_rx_lease_us, and no CQ armed since), the progress thread leaves
 * the receive sockets to it (EPOLLIN off) after a read of less than a
 * batch; a stream that fills batches stays with it, and polls read only
 * sockets left to them. It takes them back when a CQ
 * of the device is armed (rxe_net_poll_rx_armed: its consumer is about
 * to sleep) and, for a consumer that stops polling without arming, when
 * the lease runs out (the park timer): what arrives meanwhile waits at
 * most that long. Timers and the host service's QP1 socket stay with the
 * progress thread.
 */
static uint64_t lease_ns(const struct rxe_dev *dev)
{
	return (uint64_t)dev->poll_rx_lease_us * 1000u;
}

static bool consumer_polling(struct rxe_dev *dev, uint64_t now)
{
	uint64_t polled = atomic_load(&dev->rx_polled_ns);

	return polled && polled + lease_ns(dev) > now;
}

/* Until the lease of the last poll runs out, at least 10 us. */
static uint64_t lease_left_ns(struct rxe_dev *dev, uint64_t now)
{
	uint64_t end = atomic_load(&dev->rx_polled_ns) + lease_ns(dev);

	return end > now + 10000 ? end - now : 10000;
}

/* park_lock held. */
static void set_parked_locked(struct rxe_dev *dev, bool parked)
{
	int i;

	if (dev->rx_parked == parked)
		return;
	dev->rx_parked = parked;
	/* Under dev->lock: a GID's socket is closed under it. */
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++) {
		struct rxe_gid *g = &dev->gids[i];

		if (g->rx_fd >= 0)
			(void)rnicpi_engine_mod(&dev->engine, g->rx_fd,
						&g->src, parked ? 0 : EPOLLIN);
	}
	pthread_mutex_unlock(&dev->lock);
}

/* CPU time of the calling thread, in ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A consumer polled (at @now): which thread, at what CPU time of its
 * own. Reading a thread's CPU clock is a system call (the vDSO serves
 * only the wall clocks), and a consumer spinning on its CQ polls every
 * microsecond or two: the mark is taken again only when the last one
 * this thread took for @dev is RXE_POLLER_MARK_NS old, and poller_ran()
 * allows for a mark that much older than the poll.
 */
static void note_poller(struct rxe_dev *dev, uint64_t now)
{
	static __thread int tid;
	static __thread const struct rxe_dev *marked_dev;
	static __thread uint64_t marked_ns;

	if (!tid)
		tid = (int)gettid();
	if (marked_dev == dev && now - marked_ns < RXE_POLLER_MARK_NS &&
	    atomic_load_explicit(&dev->rx_poller_tid,
				 memory_order_relaxed) == tid)
		return;
	atomic_store(&dev->rx_poller_tid, tid);
	atomic_store(&dev->rx_poller_cpu_ns, thread_cpu_ns());
	marked_dev = dev;
	marked_ns = now;
}

/* Whether the thread of the last poll ran for at least @ns since it
 * (its CPU time, /proc/self/task/TID/schedstat); unknown counts as
 * yes. */
static bool poller_ran(struct rxe_dev *dev, uint64_t ns)
{
	char path[64], buf[96];
	unsigned long long now;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat",
		 atomic_load(&dev->rx_poller_tid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &now) != 1)
		return true;
	return now >= atomic_load(&dev->rx_poller_cpu_ns) + ns;
}

/* Whether a receive socket holds a datagram (park_lock held). */
static bool rx_waiting(struct rxe_dev *dev)
{
	struct pollfd p[RXE_MAX_GID];
	nfds_t n = 0;
	int i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (dev->gids[i].rx_fd >= 0)
			p[n++] = (struct pollfd){ .fd = dev->gids[i].rx_fd,
						  .events = POLLIN };
	i = n ? poll(p, n, 0) : 0;
	pthread_mutex_unlock(&dev->lock);
	return i > 0;
}

/* (Re)arm the park timer @delay_ns from @now; park_due_ns says when it
 * goes off, for park_timer_push(). */
static void park_timer_arm(struct rxe_dev *dev, uint64_t now,
			   uint64_t delay_ns)
{
	atomic_store_explicit(&dev->park_due_ns, now + delay_ns,
			      memory_order_relaxed);
	rnicpi_timer_arm(&dev->engine, &dev->park_timer, delay_ns);
}

/*
 * A consumer polls (at @now) while the sockets are parked: once the park
 * timer is due within half a lease, push it a whole lease on from here.
 * Left alone, the timer went off at every lease's end only to find the
 * consumer still polling and to arm itself again: with a 200 us lease
 * (the default until 2026-11-28), 5000 wake-ups a second of a progress
 * thread that on two cores takes one from a spinning application thread
 * (hostrdma-perf write_lat between two processes: 19 000 context
 * switches in a 2 s run, the tail of every round trip). A push is one
 * timerfd_settime() per half lease in the polling thread; the timer
 * still goes off a lease after the last poll, as before.
 */
static void park_timer_push(struct rxe_dev *dev, uint64_t now)
{
	uint64_t due = atomic_load_explicit(&dev->park_due_ns,
					    memory_order_relaxed);

	if (due && due - now < lease_ns(dev) / 2 && due > now &&
	    atomic_load_explicit(&dev->rx_parked, memory_order_relaxed))
		park_timer_arm(dev, now, lease_ns(dev));
}

/* The progress thread read the sockets (rx_lock held): leave them to a
 * consumer that polls. An arm after the test cannot be missed: it
 * cleared rx_polled_ns before it takes park_lock to unpark. */
void rxe_poll_rx_park_maybe(struct rxe_dev *dev)
{
	uint64_t now = rnicpi_now_ns();

	if (dev->rx_parked || dev->rx_park_off || !consumer_polling(dev, now))
		return;
	pthread_mutex_lock(&dev->park_lock);
	if (!dev->rx_parked && !dev->rx_park_off &&
	    consumer_polling(dev, now)) {
		set_parked_locked(dev, true);
		rxe_count(dev, RXE_CNT_POLL_RX_PARKS);
		park_timer_arm(dev, now, lease_left_ns(dev, now));
	}
	pthread_mutex_unlock(&dev->park_lock);
}

/*
 * The lease ran out, or was renewed by later polls or posts. A lease
 * that runs out on a datagram nobody read, while the consumer's thread
 * ran on a CPU for half a lease or more since its last poll of an empty
 * CQ (posting and reaping count too: only that poll takes the CPU-time
 * mark), means it stopped polling without arming a CQ: busy with
 * something else for a while (setting up its next run), or waiting
 * some other way (spinning on a byte of its buffer, as perftest's
 * write_lat does). That datagram waited the lease (poll_rx_late). The
 * second kind does so at every message: at RXE_POLL_RX_LATE_MAX such
 * leases in a row (no CQ armed between, no lease that ran out with
 * nothing waiting) parking stops for good, and with it the polls'
 * reads: the progress thread reads every datagram. A poller that was
 * not on a CPU (two busy threads a core) just gets the sockets back.
 */
static void on_park_timer(void *arg)
{
	struct rxe_dev *dev = arg;
	uint64_t now = rnicpi_now_ns();

	pthread_mutex_lock(&dev->park_lock);
	if (dev->rx_parked) {
		if (atomic_load(&dev->rx_in_poll) > 0) {
			park_timer_arm(dev, now, lease_ns(dev));
		} else if (consumer_polling(dev, now)) {
			park_timer_arm(dev, now, lease_left_ns(dev, now));
		} else {
			if (!rx_waiting(dev)) {
				dev->rx_late_streak = 0;
			} else if (poller_ran(dev, lease_ns(dev) / 2 +
						 RXE_POLLER_MARK_NS)) {
				rxe_count(dev, RXE_CNT_POLL_RX_LATE);
				if (++dev->rx_late_streak >= RXE_POLL_RX_LATE_MAX) {
					dev->rx_park_off = true;
					rxe_dev_dbg(dev, "poll_rx: data waited "
						    "for a lease's end %u "
						    "times in a row; the "
						    "sockets stay with the "
						    "progress thread",
						    dev->rx_late_streak);
				}
			}
			set_parked_locked(dev, false);
		}
	}
	pthread_mutex_unlock(&dev->park_lock);
}

void rxe_net_poll_rx_busy(struct rxe_dev *dev)
{
	/* The consumer's next move: the ACKs a poll left go (a post on
	 * their QP carried its own already). A consumer that keeps finding
	 * completions never polls an empty CQ. */
	flush_left_acks(dev);
	if (atomic_load_explicit(&dev->rx_polled_ns, memory_order_relaxed)) {
		uint64_t now = rnicpi_now_ns();

		atomic_store(&dev->rx_polled_ns, now);
		park_timer_push(dev, now);
	}
}

void rxe_net_poll_rx_armed(struct rxe_dev *dev)
{
	flush_left_acks(dev);
	atomic_store(&dev->rx_polled_ns, 0);
	pthread_mutex_lock(&dev->park_lock);
	dev->rx_late_streak = 0;
	set_parked_locked(dev, false);
	pthread_mutex_unlock(&dev->park_lock);
}


/*
 * Option poll_rx. The completion an application polls for usually sits
 * unread in a receive socket: the progress thread has to wake, on the
 * other core or in turn with the application, and then wake the
 * application: two context switches a message, and with two processes
 * on two cores (a progress thread each) the 4 KiB WRITE rate fell to
 * 0.57x that of one process (issue 15). Here the polling thread reads
 * the sockets itself when nobody else does (trylock: never waits for
 * the progress thread), in order, with the same buffers, then sends the
 * ACKs and bursts that made. Upcalls raised meanwhile wait for the
 * progress thread (rxe_qp_unlock).
 */
bool rxe_net_poll_rx(struct rxe_dev *dev, bool cq_armed)
{
	uint64_t before, got, now;
	int i, fds[RXE_MAX_GID];

	if (!dev->rxb || rx_poller || rnicpi_engine_on_thread(&dev->engine))
		return false;
	/* The ACKs an earlier poll left: its consumer has had its turn (a
	 * post on the QP would have carried them). */
	flush_left_acks(dev);
	now = rnicpi_now_ns();
	/* The poll a consumer makes right after arming (for what came
	 * before the arm) is no sign of polling: it is about to sleep. */
	if (!cq_armed) {
		atomic_store(&dev->rx_polled_ns, now);
		note_poller(dev, now);
		park_timer_push(dev, now);
	}
	/* Only sockets left to pollers (or that no progress thread reads):
	 * while the progress thread reads them (a stream, or parking off),
	 * a poll that read too would take that work from its core onto the
	 * poller's. */
	if (!atomic_load(&dev->rx_parked) && dev->engine.thread_running)
		return false;
	/* Taken first (rx_lock before dev->lock): a poll that finds the
	 * progress thread reading costs no dev->lock. */
	if (pthread_mutex_trylock(&dev->rx_lock))
		return false;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < RXE_MAX_GID; i++)
		fds[i] = dev->gids[i].valid ? dev->gids[i].rx_fd : -1;
	pthread_mutex_unlock(&dev->lock);
	rx_poller = dev;
	atomic_fetch_add(&dev->rx_in_poll, 1);
	before = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]);
	for (i = 0; i < RXE_MAX_GID; i++)
		if (fds[i] >= 0)
			rxe_net_rx_drain(dev, i, dev->rxb, &dev->rx_seed,
				 RXE_POLL_RX_ROUNDS);
	got = atomic_load(&dev->counters[RXE_CNT_RCVD_PKTS]) - before;
	pthread_mutex_unlock(&dev->rx_lock);
	if (got) {
		rxe_count_n(dev, RXE_CNT_POLL_RX_PKTS, got);
		/* Another round, if any, is the progress thread's (it was
		 * woken by whoever queued the work). The transmit work goes
		 * now (READ responses: a requester waits for them), the
		 * ACKs this read owes after the consumer has seen what came:
		 * a ping-pong's answer would otherwise wait behind a
		 * sendmsg() of the ACK for the ping, and its next post
		 * carries the ACK in the same system call (rxe_req_run).
		 * They wait at most for this thread's next poll, post or
		 * arm, or else for the park timer's pass at the end of the
		 * lease (the sockets are parked, or this thread would not
		 * have read them). A consumer about to sleep gets none
		 * deferred. */
		(void)rxe_net_run_pending(dev);
		if (cq_armed || !dev->engine.thread_running)
			rxe_net_flush_acks(dev);
		else
			atomic_store(&dev->acks_deferred, true);
		/* A long drain (up to RXE_POLL_RX_ROUNDS batches, and the
		 * ACKs and responses it made) was polling too: the lease
		 * and the CPU mark start again at its end. */
		if (!cq_armed) {
			now = rnicpi_now_ns();
			atomic_store(&dev->rx_polled_ns, now);
			note_poller(dev, now);
		}
	}
	atomic_fetch_sub(&dev->rx_in_poll, 1);
	rx_poller = NULL;
	return got != 0;
}

void rxe_poll_rx_init(struct rxe_dev *dev)
{
	rnicpi_timer_init(&dev->park_timer, on_park_timer, dev);
}
