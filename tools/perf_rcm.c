/* SPDX-License-Identifier: MIT */
/*
 * perf_rcm.c - hostrdma-perf -R: perftest's own set-up when perftest runs
 * with -R (rdma_cm), so that ib_write_bw -R / ib_read_bw -R on a host with
 * an RNIC measures against hostrdma-perf, and the other way round.
 *
 * What perftest 4.5 ("6.06") does with -R, from its src/perftest_
 * communication.c and write_bw.c / read_bw.c:
 *
 *   - a control connection over rdma_cm to the server's port (18515 by
 *     default), no private data; each side keeps one receive of 56 bytes
 *     posted, and every exchange below is one Send each way, the client
 *     sending first;
 *   - exchanges: the version (16 bytes, "6.06"), the cycle buffer and
 *     the cache line size (4 bytes each, big-endian), the MTU code as a
 *     2-byte decimal string, then a hand shake (a 56-byte struct
 *     pingpong_dest, big-endian fields: LID, outstanding reads, QPN, PSN,
 *     rkey, 4 bytes of padding, VA, GID, SRQN, GID index);
 *   - the data connections, one per QP, again over rdma_cm to the same
 *     port (the server listens anew: the client retries a refused
 *     connect ten times, 100 ms apart);
 *   - hand shakes: one after the data connections, one per QP carrying
 *     the buffer (VA, rkey) the peer targets, one per QP again, one more;
 *   - the client runs; a hand shake says it is done; the client's report
 *     follows (size and iterations as 8-byte big-endian, peak bandwidth,
 *     average bandwidth in MiB/s and message rate in Mpps as byte-swapped
 *     doubles; the server sends its own back); a last hand shake.
 *
 * The latency tests (write_lat.c, read_lat.c, send_lat.c) differ:
 * write_lat and read_lat add a hand shake before the per-QP ones; then
 * no report is exchanged. write_lat's server writes first (its client
 * answers), each side writing the count of its Writes, from 1 in a char,
 * into the last byte of the peer's message; read_lat's client reads and
 * its server waits in a last hand shake; send_lat's client sends first
 * and both end with a hand shake. write_lat ends with none: each side
 * tears down when its own count is done.
 *
 * Every message from the peer is checked for its length; the fields used
 * (VA, rkey, sizes) only steer where our own work requests go, which the
 * peer's RNIC checks against its regions.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_VERSION "6.06"
#define PT_CACHE_LINE 64
#define PT_RETRIES 10
#define PT_RETRY_US 100000

/* One exchange: the client writes first, the server reads first. */
static int xchg(struct perf_ctx *c, const void *mine, void *theirs,
		size_t len, uint64_t timeout_us)
{
	if (!c->server)
		return perf_raw_send(c, mine, len) ||
		       perf_raw_recv(c, theirs, len, timeout_us);
	return perf_raw_recv(c, theirs, len, timeout_us) ||
	       perf_raw_send(c, mine, len);
}

/* A hand shake: our QP @i's buffer out (none when @i < 0), the peer's
 * into @rem (may be NULL). */
static int hand_shake(struct perf_ctx *c, int i, struct perf_pt_dest *rem,
		      uint64_t timeout_us)
{
	struct perf_pt_dest me = { 0 }, peer;

	me.out_reads_be = htonl(c->o->outs);
	if (i >= 0) {
		me.rkey_be = htonl((uint32_t)c->qp[i].rkey);
		me.vaddr_be = htobe64((uintptr_t)(c->qp[i].buf +
						  c->sink_off));
	}
	if (xchg(c, &me, &peer, sizeof(peer), timeout_us))
		return -1;
	if (rem)
		*rem = peer;
	return 0;
}

/* Versions, buffer sizes, MTU: the first exchanges on the control EP. */
static int preamble(struct perf_ctx *c, uint32_t *cycle)
{
	char mine[PT_VERSION_LEN] = PT_VERSION, theirs[PT_VERSION_LEN];
	uint32_t v_be, rem_be;
	char mtu[2] = { 0 }, rem_mtu[2];

	if (xchg(c, mine, theirs, PT_VERSION_LEN, TOOL_WAIT_US) ||
	    perf_pt_version_ok(theirs))
		return -1;
	v_be = htonl(PT_CYCLE_BUFFER);
	if (xchg(c, &v_be, &rem_be, 4, TOOL_WAIT_US) ||
	    perf_pt_cycle(rem_be, cycle))
		return -1;
	v_be = htonl(PT_CACHE_LINE);
	if (xchg(c, &v_be, &rem_be, 4, TOOL_WAIT_US))
		return -1;
	/* IBV_MTU_1024: the CM sets the data QPs' path MTU; perftest uses
	 * this code for UD and its banner only. */
	mtu[0] = '3';
	return xchg(c, mtu, rem_mtu, sizeof(mtu), TOOL_WAIT_US);
}

/* The data connection of QP @i, retried while perftest's server is not
 * listening yet (it listens only after the first hand shake). */
static int connect_data(struct perf_ctx *c, unsigned int i)
{
	struct perf_qp *q = &c->qp[i];

	for (int tries = 0; tries < PT_RETRIES; tries++) {
		it_event_t ev;
		size_t nmore;

		if (perf_connect_ep(c, q->ep, NULL, 0))
			return -1;
		if (tool_check(PERF_PROG, "waiting for the data connection",
			       it_evd_wait(c->cm, TOOL_WAIT_US, &ev, &nmore)))
			return -1;
		if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT)
			return 0;
		if (ev.event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT &&
		    ev.event_number != IT_CM_MSG_CONN_PEER_REJECT_EVENT) {
			fprintf(stderr, "%s: data connection %u: %s\n",
				PERF_PROG, i, tool_event_name(ev.event_number));
			return -1;
		}
		if (tool_check(PERF_PROG, "it_ep_reset", it_ep_reset(q->ep)))
			return -1;
		usleep(PT_RETRY_US);
	}
	fprintf(stderr, "%s: the perftest server refused data connection %u %d times\n",
		PERF_PROG, i, PT_RETRIES);
	return -1;
}

static int accept_data(struct perf_ctx *c, unsigned int i)
{
	it_event_t ev;

	if (tool_wait_event(PERF_PROG, c->req, IT_CM_REQ_CONN_REQUEST_EVENT,
			    TOOL_WAIT_US, &ev) ||
	    tool_check(PERF_PROG, "it_ep_accept",
		       it_ep_accept(c->qp[i].ep, ev.conn_req.cn_est_id, NULL,
				    0)))
		return -1;
	return perf_wait_established(c, c->qp[i].ep);
}

/* The hand shakes around and after the data connections. */
static int setup(struct perf_ctx *c)
{
	struct perf_opts *o = c->o;
	struct perf_pt_dest rem;
	uint32_t cycle;

	if (preamble(c, &cycle))
		return -1;
	/* perftest's peer cycles its target address through a cycle
	 * buffer: our region holds that and one message more. */
	c->max_size = (o->all_sizes ? o->all_max : o->size) + cycle;
	perf_layout(c);
	for (unsigned int i = 0; i < o->qps; i++)
		if (perf_make_qp(c, i))
			return -1;
	if (hand_shake(c, -1, NULL, TOOL_WAIT_US))
		return -1;
	for (unsigned int i = 0; i < o->qps; i++) {
		if (c->server ? accept_data(c, i) : connect_data(c, i))
			return -1;
		c->qp[i].connected = true;
		/* before any hand shake lets the peer send */
		if (perf_post_receives(c, i))
			return -1;
	}
	if (hand_shake(c, -1, NULL, TOOL_WAIT_US))
		return -1;
	/* write_lat / read_lat: one more before the QPs' own */
	if (o->lat && o->verb != PERF_SEND &&
	    hand_shake(c, 0, NULL, TOOL_WAIT_US))
		return -1;
	for (unsigned int i = 0; i < o->qps; i++) {
		if (hand_shake(c, (int)i, &rem, TOOL_WAIT_US))
			return -1;
		perf_pt_dest_in(c, i, &rem);
	}
	/* write_bw / read_bw (and _lat): one more per QP, then one;
	 * send_bw and send_lat: one, one more per QP, then (receives
	 * posted) one before the run. */
	if (o->verb == PERF_SEND) {
		if (hand_shake(c, 0, NULL, TOOL_WAIT_US))
			return -1;
		for (unsigned int i = 0; i < o->qps; i++)
			if (hand_shake(c, (int)i, NULL, TOOL_WAIT_US))
				return -1;
		return hand_shake(c, 0, NULL, TOOL_WAIT_US);
	}
	for (unsigned int i = 0; i < o->qps; i++)
		if (hand_shake(c, (int)i, NULL, TOOL_WAIT_US))
			return -1;
	return hand_shake(c, 0, NULL, TOOL_WAIT_US);
}

static uint64_t swap_double(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return htobe64(u);
}

/* The client's report (size, iterations, bandwidths, message rate) out,
 * the server's back; the server turns the client's into @r. */
static int reports(struct perf_ctx *c, struct perf_result *r)
{
	double mib_s = 0, mpps = 0;
	uint64_t mine[5], theirs[5];

	if (r->ns && !c->server) {
		double s = (double)r->ns / 1e9;

		mib_s = (double)r->size * (double)r->iters / s / 1048576.0;
		mpps = (double)r->iters / s / 1e6;
	}
	mine[0] = htobe64(r->size);
	mine[1] = htobe64(r->iters);
	mine[2] = swap_double(r->peak_bps / 1048576.0 > mib_s ?
				      r->peak_bps / 1048576.0 :
				      mib_s);
	mine[3] = swap_double(mib_s);
	mine[4] = swap_double(mpps);
	for (int k = 0; k < 5; k++)
		if (xchg(c, &mine[k], &theirs[k], 8, TOOL_WAIT_US))
			return -1;
	if (c->server)
		perf_pt_report_in(theirs, r);
	return 0;
}

static int check_opts(const struct perf_opts *o)
{
	if (o->verb == PERF_ATOMIC) {
		fprintf(stderr, "%s: -R does not speak perftest's ib_atomic_bw/ib_atomic_lat exchange; run both ends as hostrdma-perf\n",
			PERF_PROG);
		return -1;
	}
	if (o->bidir || o->verify || o->duration_s) {
		fprintf(stderr, "%s: -R speaks perftest's exchange of ib_{write,read,send}_{bw,lat} with a message count (not -b, -D or data checks)\n",
			PERF_PROG);
		return -1;
	}
	return 0;
}

/* perftest's send_bw on iWARP has the receiver grant credits with RDMA
 * Writes into a buffer of the sender's, which -R does not speak; on RoCE
 * it relies on RNR retries. */
static int check_transport(struct perf_ctx *c)
{
	it_ia_info_t *info;
	bool iwarp;

	if (c->o->verb != PERF_SEND || c->o->lat)
		return 0;
	if (tool_check(PERF_PROG, "it_ia_query", it_ia_query(c->ia, &info)))
		return -1;
	iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
	it_ia_info_free(info);
	if (iwarp) {
		fprintf(stderr, "%s: -R send_bw: perftest's iWARP credit scheme is not spoken; use write_bw or read_bw, or a RoCE device\n",
			PERF_PROG);
		return -1;
	}
	return 0;
}

int perf_run_perftest(struct perf_opts *o, perf_report_fn report, void *arg)
{
	struct perf_ctx c = { .o = o, .perftest = true };
	struct perf_result r = { 0 };
	uint64_t sizes[32];
	unsigned int n = 0, ended;
	int failed = 1, rc;
	it_event_t ev;

	if (check_opts(o))
		return 2;
	c.server = !o->server;
	if (c.server) {
		if (tool_listen(PERF_PROG, o->device, o->bind, o->port,
				2 * PERF_MAX_QPS, o->quiet, NULL, NULL, &c.ia,
				&c.req, &c.listen))
			goto out;
		if (check_transport(&c)) {
			failed = 2;
			goto out;
		}
		if (tool_wait_event(PERF_PROG, c.req,
				    IT_CM_REQ_CONN_REQUEST_EVENT,
				    IT_TIMEOUT_INFINITE, &ev) ||
		    perf_make_base(&c) ||
		    tool_check(PERF_PROG, "it_ep_accept",
			       it_ep_accept(c.cep, ev.conn_req.cn_est_id,
					    NULL, 0)) ||
		    perf_wait_established(&c, c.cep))
			goto out;
	} else {
		it_net_addr_t dst;

		if (tool_parse_addr(PERF_PROG, o->server, &dst))
			goto out;
		rc = perf_connect_control(&c, &dst, NULL, 0, check_transport);
		if (rc == -2)
			failed = 2;
		if (rc)
			goto out;
	}
	if (setup(&c) || perf_describe(&c))
		goto out;
	perf_print_header(o);
	if (o->lat) {
		/* Both ends ping-pong and print their own numbers, but only
		 * the client reads. read_lat and send_lat end with a hand
		 * shake (the server waits in it while the client runs),
		 * write_lat with none. */
		if (!(o->verb == PERF_READ && c.server)) {
			if (perf_measure(&c, o->size, &r))
				goto out;
			report(o, &r, arg);
		}
		if (o->verb != PERF_WRITE &&
		    hand_shake(&c, 0, NULL, c.server ? IT_TIMEOUT_INFINITE
						     : TOOL_WAIT_US))
			goto out;
	} else if (o->verb == PERF_SEND) {
		/* Both ends count: the sender its Sends, the receiver its
		 * receives (its own -n), and each prints its own numbers. */
		if (perf_measure(&c, o->size, &r))
			goto out;
		report(o, &r, arg);
	} else {
		if (!c.server) {
			n = perf_sizes(o, sizes, 32);
			for (unsigned int i = 0; i < n; i++) {
				if (perf_measure(&c, sizes[i], &r))
					goto out;
				report(o, &r, arg);
			}
		}
		/* The server waits as long as the client runs. */
		if (hand_shake(&c, 0, NULL, c.server ? IT_TIMEOUT_INFINITE
						      : TOOL_WAIT_US) ||
		    reports(&c, &r))
			goto out;
		if (c.server)
			report(o, &r, arg);
	}
	if (!o->lat && hand_shake(&c, 0, NULL, TOOL_WAIT_US))
		goto out;
	failed = 0;
	ended = 0;
	if (!c.server) {
		/* perftest's server sends its last hand shake and then polls
		 * for that Send's completion. A FIN from us that arrives first
		 * makes the kernel's siw fail the Send (perftest: "Bad wc
		 * status 2 ... Failed to close connection"; seen when the
		 * guest ran slowly). So give the server a moment to end the
		 * connections itself, then end what is still up. */
		if (!it_evd_wait(c.cm, 1000000, &ev, &(size_t){ 0 }))
			ended++;
		for (unsigned int i = 0; i < c.nqp; i++)
			it_ep_disconnect(c.qp[i].ep, NULL, 0);
		it_ep_disconnect(c.cep, NULL, 0);
	}
	/* Either side: the connections go down (or time out). */
	for (; ended <= c.nqp; ended++)
		if (it_evd_wait(c.cm, 5000000, &ev, &(size_t){ 0 }))
			break;
out:
	perf_teardown(&c);
	return failed;
}
