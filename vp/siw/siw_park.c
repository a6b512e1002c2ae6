/* SPDX-License-Identifier: MIT */
/*
 * siw_park.c - who reads a QP's socket: the progress thread, or the
 * application's thread (option poll_rx). A consumer that polls a CQ reads
 * its QPs' sockets in the poll (siw_cq_progress), and the progress thread
 * leaves them alone meanwhile ("parked", within the poll's lease); a
 * thread about to sleep in it_evd_wait watches them itself (cq_wait_begin,
 * "claimed"); an arm or a consumer asleep elsewhere gives them back.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "vp/siw/siw.h"

/*
 * Is the consumer polling @qp's CQs, not waiting on them? It read the
 * socket from a poll within its lease (option park_lease_us), and neither
 * CQ is armed. An
 * armed CQ is a consumer that may be asleep on it: its socket must stay
 * with the engine, or what arrives waits for the park timer (issue 17:
 * hostrdma-ping stalled 50 ms a round). That includes the poll a
 * consumer makes right after arming, to catch what came before the arm:
 * it is no sign of polling. A timestamp compared with the arm's time
 * (milliseconds) told these apart only when the two fell in different
 * milliseconds; the ring's armed state is exact.
 */
static uint64_t lease_ns(const struct siw_qp *qp)
{
	return (uint64_t)qp->dev->opts.park_lease_us * 1000u;
}

/* @now: the clock read by the caller, or 0 to read it here */
static bool consumer_polling_at(struct siw_qp *qp, uint64_t now)
{
	uint64_t polled = atomic_load(&qp->polled_ns);

	/* A thread asleep on a CQ watches the socket itself */
	if (atomic_load(&qp->wait_cq))
		return true;
	if (polled && !now)
		now = rnicpi_now_ns();
	return polled && now - polled < lease_ns(qp) &&
	       atomic_load(&qp->polled_gen) == atomic_load(&qp->dev->arm_gen) &&
	       !rnicpi_cq_ring_armed(&qp->scq->ring) &&
	       !rnicpi_cq_ring_armed(&qp->rcq->ring);
}

static bool consumer_polling(struct siw_qp *qp)
{
	return consumer_polling_at(qp, 0);
}

/* When the lease of the consumer's last poll runs out (at least 10 us
 * from now: a poll that lands meanwhile moves it on). */
static uint64_t lease_left_ns(struct siw_qp *qp)
{
	uint64_t polled = atomic_load(&qp->polled_ns);
	uint64_t now = rnicpi_now_ns(), end = polled + lease_ns(qp);

	return end > now + 10000 ? end - now : 10000;
}

/*
 * Data came while an application keeps polling the QP's CQ (poll_rx): it
 * will read the socket itself, and waking this thread for every message
 * only takes a core from it (on two cores, the tail of hostrdma-perf
 * write_lat). Leave the socket to it: EPOLLIN off. It comes back when a
 * CQ is armed (siw_cq_unpark, or whoever holds the QP's lock then:
 * siw_qp_park_recheck), and, for a consumer that neither polls nor
 * waits any more, when the park timer sees its lease run out. Not while
 * the initiator's first FPDU is held back (the timer is that hold's), and
 * never again for a QP whose consumer was found waiting without polling
 * (park_off).
 */
/* dev->park_lock held */
static void parked_set_locked(struct siw_qp *qp, bool parked)
{
	qp->rx.parked = parked;
	if (parked) {
		siw_list_add_tail(&qp->dev->parked, &qp->park_node);
		atomic_fetch_add(&qp->dev->n_parked, 1);
	} else {
		siw_list_del(&qp->park_node);
		atomic_fetch_sub(&qp->dev->n_parked, 1);
	}
}

void siw_qp_set_parked(struct siw_qp *qp, bool parked)
{
	if (qp->rx.parked == parked)
		return;
	pthread_mutex_lock(&qp->dev->park_lock);
	parked_set_locked(qp, parked);
	pthread_mutex_unlock(&qp->dev->park_lock);
}

void siw_qp_rx_unpark(struct siw_qp *qp)
{
	siw_qp_set_parked(qp, false);
	siw_qp_poll_update(qp, false);
}

bool siw_qp_rx_park(struct siw_qp *qp)
{
	if (!qp->dev->opts.poll_rx || qp->llp != SIW_LLP_RDMA ||
	    qp->tx_hold || qp->rx.park_off || !consumer_polling(qp))
		return false;
	siw_qp_set_parked(qp, true);
	siw_qp_poll_update(qp, true);
	/* An arm between the test above and n_parked's increment saw no
	 * parked QP and walked nothing: both are sequentially consistent,
	 * so if the arm's walk missed us, this sees the arm. */
	if (!consumer_polling(qp)) {
		siw_qp_rx_unpark(qp);
		return false;
	}
	atomic_fetch_add(&qp->dev->counters.parks, 1);
	siw_dev_timed_add_ns(qp->dev, &qp->timed, lease_left_ns(qp));
	return true;
}

void siw_qp_park_recheck_at(struct siw_qp *qp, uint64_t now)
{
	if (qp->rx.parked && qp->fd >= 0 && !consumer_polling_at(qp, now)) {
		siw_qp_rx_unpark(qp);
		atomic_fetch_add(&qp->dev->counters.unpark_arm, 1);
	}
}

void siw_qp_park_recheck(struct siw_qp *qp)
{
	siw_qp_park_recheck_at(qp, 0);
}

/*
 * The park timer, at the end of the consumer's lease: the safety net for
 * a consumer that stopped polling without arming a CQ (one that waits
 * arms, and gets its socket back at once). Found with bytes waiting, the
 * consumer is one that waits for data some other way, without polling
 * the CQ: perftest's write_lat spins on its buffer's last byte, and here
 * every round trip took the lease. Such a QP is not parked again: after
 * at most one lease, what arrives is placed as it comes.
 */
void siw_qp_park_timer(struct siw_qp *qp)
{
	if (!qp->rx.parked)
		return;
	/* A waiter watches it: the timer comes back at siw_cq_wait_end */
	if (atomic_load(&qp->wait_cq))
		return;
	if (consumer_polling(qp)) {
		siw_dev_timed_add_ns(qp->dev, &qp->timed, lease_left_ns(qp));
		return;
	}
	atomic_fetch_add(&qp->dev->counters.unpark_timer, 1);
	if (siw_fd_readable(qp->fd)) {
		atomic_fetch_add(&qp->dev->counters.unpark_timer_data, 1);
		/* No arm since its last poll: not a consumer asleep */
		if (atomic_load(&qp->polled_gen) ==
		    atomic_load(&qp->dev->arm_gen)) {
			atomic_fetch_add(&qp->dev->counters.park_off, 1);
			qp->rx.park_off = true;
			siw_qp_dbg(qp, "bytes waited for the park timer: parking off");
		}
	}
	siw_qp_rx_unpark(qp);
}


/*
 * A polling consumer's pass over @qp: read what its socket holds. A QP
 * that had bytes within its last SIW_RX_PROBE_MISSES passes is read
 * directly: a read that finds the socket empty costs about what poll()
 * does (each some 0.4 us here), and one that finds bytes spares each
 * message the poll() before it. Past that many empty reads in a row the
 * socket is asked with poll() first, which looks without taking its lock:
 * an empty recvmsg() takes it, and segments that arrive meanwhile wait in
 * the socket's backlog until the reader lets go (with every pass reading,
 * 12 % of a write_lat client's time went there, 54724a1). A bulk
 * sender's QP, which gets only ACKs, is asked that way. Bytes read ahead
 * of the next FPDU are read in any case. Returns whether bytes came.
 */
static bool rx_poll_pass(struct siw_qp *qp)
{
	uint64_t reads = qp->rx_reads;
	bool pending = qp->rx.stash_off < qp->rx.stash_len ||
		       qp->rx.state != SIW_RX_CTRL;
	/* A socket that never brought anything has no stash yet */
	bool probe = !pending && qp->rx.stash &&
		     qp->rx.misses < SIW_RX_PROBE_MISSES;

	if (!pending && !probe && !siw_fd_readable(qp->fd))
		return false;
	qp->rx.probing = probe;
	siw_qp_rx(qp);
	qp->rx.probing = false;
	if (qp->rx_reads != reads) {
		qp->rx.misses = 0;
		if (probe)
			qp->rx_probe_reads++;
		return true;
	}
	if (probe)
		qp->rx.misses++;
	return pending;
}

/*
 * The application polls an empty CQ: read what the sockets of the CQ's QPs
 * hold now, in its thread, instead of leaving it to the progress thread,
 * whose wake-up costs two context switches per message and, on a host
 * with fewer cores than busy threads, a scheduling delay (hostrdma-siw(7),
 * option poll_rx), and write what waits for room in them (poll_tx). A
 * QP another thread is working on is skipped (trylock). Upcalls stay with
 * the progress thread, woken when some were queued: the poller may hold
 * locks of the layers above. Without @rx (a consumer that has
 * completions in hand), only the send side. Returns whether a socket had
 * something to read.
 */
bool siw_cq_progress(struct siw_cq *cq, bool rx)
{
	struct siw_device *dev = cq->dev;
	bool poll_rx = rx && dev->opts.poll_rx;
	/* One clock read a pass stamps the CQ and each QP it looks at */
	uint64_t now = poll_rx ? rnicpi_now_ns() : 0;
	uint32_t i, budget;
	bool found = false;

	if (poll_rx)
		atomic_store(&cq->rx_polled_ns, now);
	pthread_mutex_lock(&cq->qps_lock);
	budget = cq->n_qps < SIW_CQ_POLL_QPS ? cq->n_qps : SIW_CQ_POLL_QPS;
	for (i = 0; i < budget; i++) {
		struct siw_list *n = cq->qps.next;
		struct siw_qp *qp = container_of(n, struct siw_cq_link,
						 node)->qp;

		/* Round robin: the next poll starts with the QPs after. */
		siw_list_del(n);
		siw_list_add_tail(&cq->qps, n);
		if (pthread_mutex_trylock(&qp->lock))
			continue;
		if (!qp->destroyed && qp->fd >= 0 && qp->llp == SIW_LLP_RDMA) {
			if (poll_rx) {
				atomic_store(&qp->polled_gen,
					     atomic_load(&dev->arm_gen));
				atomic_store(&qp->polled_ns, now);
				if (rx_poll_pass(qp)) {
					found = true;
					if (atomic_load(&qp->wait_cq) == cq)
						atomic_fetch_add(
							&dev->counters.wait_rx,
							1);
				}
			}
			/* A send queue that waits for room in the socket
			 * (poll_tx): push it from here too, rather than wait
			 * for the progress thread to run on EPOLLOUT. */
			if (qp->fd >= 0 && qp->tx.want_out &&
			    dev->opts.poll_tx)
				siw_qp_tx(qp);
			/* WRs held back for more (RNICPI_SEND_MORE) whose
			 * consumer polls instead of posting the last one. */
			else if (qp->fd >= 0 && qp->tx.kind == SIW_TX_IDLE &&
				 !qp->tx.want_out && qp->sq_unstarted)
				siw_qp_tx(qp);
		}
		/* The pass's clock read (the QP's stamp, if it polled) */
		siw_qp_park_recheck_at(qp, now);
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&cq->qps_lock);
	if (atomic_load(&dev->has_events))
		siw_dev_wake(dev);
	return found;
}

/*
 * A CQ of the device is armed: its consumer is about to sleep and polls
 * none of its CQs meanwhile (it may be waiting for a reply on a control
 * connection while the peer writes to a data QP it polled a moment ago).
 * Hand every parked socket back to the progress engine now; a consumer
 * that still polls in another thread parks its QP again at its next
 * message. A QP another thread holds is taken back by that thread when it
 * lets go (siw_qp_unlock and siw_cq_progress call siw_qp_park_recheck:
 * the new arm_gen makes consumer_polling false), so no socket waits for
 * the park timer.
 */
void siw_cq_unpark(struct siw_cq *cq)
{
	siw_dev_unpark(cq->dev);
}

void siw_dev_unpark(struct siw_device *dev)
{
	struct siw_list *n, *next;

	atomic_fetch_add(&dev->arm_gen, 1);
	/* The arm (rnicpi_cq_ring_arm) and the generation came first; with
	 * nothing parked on the device there is nothing to walk (rx_park
	 * looks at both after it counted itself). */
	if (!atomic_load(&dev->n_parked))
		return;
	pthread_mutex_lock(&dev->park_lock);
	for (n = dev->parked.next; n != &dev->parked; n = next) {
		struct siw_qp *qp = container_of(n, struct siw_qp, park_node);

		next = n->next;
		if (pthread_mutex_trylock(&qp->lock))
			continue;
		if (!qp->destroyed && qp->fd >= 0 && !consumer_polling(qp)) {
			parked_set_locked(qp, false);
			siw_qp_poll_update(qp, false);
			atomic_fetch_add(&dev->counters.unpark_arm, 1);
		}
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&dev->park_lock);
}

/*
 * A thread is about to sleep on @cq (it_evd_wait) and will poll it when
 * woken: rather than the progress thread reading a QP's socket and waking
 * it with a completion (two threads at every message, each reading the
 * socket: a SEND server waiting on events used 1.4 x iperf3's CPU per
 * GiB), the sleeping thread watches the socket and reads it in that poll,
 * as a TCP server does. The QP stays parked while it is claimed
 * (consumer_polling); an arm of any CQ leaves it so. Not claimed: a QP
 * not in RDMA mode, holding back its first FPDU, with zero-copy
 * notifications to reap (the progress thread's), or claimed through its
 * other CQ. Under qp->lock.
 */
static bool wait_eligible(struct siw_qp *qp)
{
	return !qp->destroyed && qp->fd >= 0 && qp->llp == SIW_LLP_RDMA &&
	       !qp->tx_hold && !qp->zc_count;
}

/* @qp is no longer left to a waiter: the polling rules decide whether it
 * stays parked, with the park timer as their safety net. Under
 * qp->lock. */
static void wait_release(struct siw_qp *qp)
{
	atomic_store(&qp->wait_cq, NULL);
	siw_qp_park_recheck_at(qp, 0);
	if (qp->rx.parked &&
	    !rnicpi_timer_pending(&qp->dev->engine, &qp->timed.timer))
		siw_dev_timed_add_ns(qp->dev, &qp->timed, lease_left_ns(qp));
}

/*
 * The QPs left to the waiter are exactly the ones whose descriptors this
 * returns (one not watched in a sleep would be read by nobody): first
 * those it has already, still eligible, then new ones up to @max. A
 * claimed QP another thread holds stays claimed and watched (wait_fd:
 * a socket closed meanwhile is unclaimed by its close, and the next call
 * drops it). Lock order: qps_lock, then the QP's (as siw_cq_progress).
 */
int siw_cq_wait_begin(struct siw_cq *cq, int *fds, int max)
{
	struct siw_device *dev = cq->dev;
	struct siw_list *n;
	int k = 0;

	if (!dev->opts.poll_rx || max <= 0)
		return 0;
	pthread_mutex_lock(&cq->qps_lock);
	for (n = cq->qps.next; n != &cq->qps; n = n->next) {
		struct siw_qp *qp = container_of(n, struct siw_cq_link,
						 node)->qp;

		if (atomic_load(&qp->wait_cq) != cq)
			continue;
		if (k < max && pthread_mutex_trylock(&qp->lock)) {
			fds[k++] = atomic_load(&qp->wait_fd);
			continue;
		}
		if (k >= max)
			pthread_mutex_lock(&qp->lock);
		if (atomic_load(&qp->wait_cq) == cq) {
			if (k < max && wait_eligible(qp))
				fds[k++] = qp->fd;
			else
				wait_release(qp);
		}
		pthread_mutex_unlock(&qp->lock);
	}
	for (n = cq->qps.next; n != &cq->qps && k < max; n = n->next) {
		struct siw_qp *qp = container_of(n, struct siw_cq_link,
						 node)->qp;

		/* One another thread holds (the progress thread sending,
		 * say) stays its for this sleep: waiting for it here cost
		 * a bulk sender a fifth of its rate. */
		if (atomic_load(&qp->wait_cq) ||
		    pthread_mutex_trylock(&qp->lock))
			continue;
		if (!atomic_load(&qp->wait_cq) && wait_eligible(qp)) {
			atomic_store(&qp->wait_fd, qp->fd);
			atomic_store(&qp->wait_cq, cq);
			atomic_fetch_add(&dev->counters.wait_claims, 1);
			if (!qp->rx.parked) {
				siw_qp_set_parked(qp, true);
				siw_qp_poll_update(qp, true);
			}
			fds[k++] = qp->fd;
		}
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&cq->qps_lock);
	return k;
}

/* The waiter is back in its application: its sockets return to the
 * progress thread unless the polling rules keep them (its last poll is
 * recent and no CQ of the QP is armed). */
void siw_cq_wait_end(struct siw_cq *cq)
{
	struct siw_list *n;

	pthread_mutex_lock(&cq->qps_lock);
	for (n = cq->qps.next; n != &cq->qps; n = n->next) {
		struct siw_qp *qp = container_of(n, struct siw_cq_link,
						 node)->qp;

		if (atomic_load(&qp->wait_cq) != cq)
			continue;
		pthread_mutex_lock(&qp->lock);
		if (atomic_load(&qp->wait_cq) == cq)
			wait_release(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&cq->qps_lock);
}
