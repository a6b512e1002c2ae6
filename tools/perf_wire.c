/* SPDX-License-Identifier: MIT */
/*
 * perf_wire.c - hostrdma-perf's checks of what the peer sends, apart from
 * the code that waits for it (perf_priv.h): the control messages, the
 * client's parameters, buffer adverts, the hello of a connection
 * request, the DONE report, and perftest's exchange (-R). Nothing in here
 * calls IT-API, so the tools suite and the fuzz target link it alone.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double unswap_double(uint64_t u)
{
	double d;

	u = be64toh(u);
	memcpy(&d, &u, sizeof(d));
	return d;
}

int perf_ctl_check(const struct perf_ctl *m, enum perf_ctl_type type)
{
	uint32_t got;

	if (ntohl(m->magic_be) != PERF_MAGIC) {
		fprintf(stderr, "%s: control message with magic %#x: not a hostrdma-perf peer\n",
			PERF_PROG, ntohl(m->magic_be));
		return -1;
	}
	got = ntohl(m->type_be);
	if (got != type) {
		fprintf(stderr, "%s: control message type %u, expected %u\n",
			PERF_PROG, got, (unsigned int)type);
		return -1;
	}
	return 0;
}

void perf_take_adverts(struct perf_ctx *c)
{
	for (unsigned int i = 0; i < c->nqp; i++) {
		c->qp[i].raddr = be64toh(c->last.adv[i].addr_be);
		c->qp[i].rrkey = ntohl(c->last.adv[i].rkey_be);
		c->qp[i].rlen = be64toh(c->last.adv[i].len_be);
	}
}

int perf_adverts_ok(struct perf_ctx *c)
{
	for (unsigned int i = 0; i < c->nqp; i++) {
		if (c->qp[i].rlen < c->credit_off + 72) {
			fprintf(stderr, "%s: the peer's buffer %u holds %llu bytes, a run of %llu needs %llu\n",
				PERF_PROG, i,
				(unsigned long long)c->qp[i].rlen,
				(unsigned long long)c->max_size,
				(unsigned long long)(c->credit_off + 72));
			return -1;
		}
	}
	return 0;
}

int perf_params_in(struct perf_ctx *c)
{
	struct perf_opts *o = c->o;
	uint64_t v[24];

	for (unsigned int i = 0; i < 24; i++)
		v[i] = be64toh(c->last.v_be[i]);
	if (v[PV_VERB] > PERF_ATOMIC || v[PV_QPS] < 1 ||
	    v[PV_QPS] > PERF_MAX_QPS || v[PV_TX_DEPTH] < 1 ||
	    v[PV_TX_DEPTH] > 8192 || v[PV_RX_DEPTH] < 1 ||
	    v[PV_RX_DEPTH] > 8192 || v[PV_CQ_MOD] < 1 || v[PV_OUTS] < 1 ||
	    v[PV_OUTS] > 128 || v[PV_SIZE] < 1 ||
	    v[PV_MAX_SIZE] > PERF_MAX_SIZE || v[PV_SIZE] > v[PV_MAX_SIZE] ||
	    v[PV_ITERS] > (1ull << 40) || v[PV_DURATION] > 86400 ||
	    v[PV_WARMUP] > (1ull << 40) || (v[PV_WARMUP] && !v[PV_LAT]) ||
	    v[PV_POST_LIST] < 1 || v[PV_POST_LIST] > 8192 ||
	    (v[PV_INFINITE] && (!v[PV_DURATION] || v[PV_ALL] || v[PV_LAT]))) {
		fprintf(stderr, "%s: the client's parameters are out of range (verb %llu, QPs %llu, size %llu of %llu, depths %llu/%llu)\n",
			PERF_PROG, (unsigned long long)v[PV_VERB],
			(unsigned long long)v[PV_QPS],
			(unsigned long long)v[PV_SIZE],
			(unsigned long long)v[PV_MAX_SIZE],
			(unsigned long long)v[PV_TX_DEPTH],
			(unsigned long long)v[PV_RX_DEPTH]);
		return -1;
	}
	o->verb = (enum perf_verb)v[PV_VERB];
	o->lat = v[PV_LAT];
	o->bidir = v[PV_BIDIR];
	o->qps = (unsigned int)v[PV_QPS];
	o->tx_depth = (unsigned int)v[PV_TX_DEPTH];
	o->rx_depth = (unsigned int)v[PV_RX_DEPTH];
	o->cq_mod = (unsigned int)v[PV_CQ_MOD];
	o->outs = (unsigned int)v[PV_OUTS];
	o->size = v[PV_SIZE];
	o->all_sizes = v[PV_ALL];
	o->iters = v[PV_ITERS];
	o->warmup = v[PV_WARMUP];
	o->duration_s = (unsigned int)v[PV_DURATION];
	o->verify = v[PV_VERIFY];
	o->post_list = (unsigned int)v[PV_POST_LIST];
	o->run_infinitely = v[PV_INFINITE] != 0;
	c->max_size = v[PV_MAX_SIZE] < 64 ? 64 : v[PV_MAX_SIZE];
	/* The client's -a may stop early (its RLIMIT_MEMLOCK): the sizes
	 * the server walks end where the client's buffers do. */
	if (o->all_sizes)
		o->all_max = v[PV_MAX_SIZE];
	return 0;
}

bool perf_hello_ok(const uint8_t pdata[IT_MAX_PRIV_DATA], uint8_t role,
		   unsigned int index)
{
	struct perf_hello h;

	_Static_assert(sizeof(h) <= IT_MAX_PRIV_DATA, "hello fits");
	memcpy(&h, pdata, sizeof(h));
	return ntohl(h.magic_be) == PERF_MAGIC && h.version == PERF_VERSION &&
	       h.role == role && ntohs(h.index_be) == index;
}

int perf_hello_version(const uint8_t pdata[IT_MAX_PRIV_DATA])
{
	struct perf_hello h;

	memcpy(&h, pdata, sizeof(h));
	return ntohl(h.magic_be) == PERF_MAGIC ? h.version : -1;
}

void perf_combine(const struct perf_ctx *c, struct perf_result *mine)
{
	const struct perf_ctl *m = &c->last;
	struct perf_result peer = { 0 };

	peer.size = be64toh(m->v_be[DV_SIZE]);
	peer.iters = be64toh(m->v_be[DV_ITERS]);
	peer.ns = be64toh(m->v_be[DV_NS]);
	peer.cpu_s = (double)be64toh(m->v_be[DV_CPU_US]) / 1e6;
	peer.lat_min = (double)be64toh(m->v_be[DV_LAT_MIN]) / 1e3;
	peer.lat_max = (double)be64toh(m->v_be[DV_LAT_MAX]) / 1e3;
	peer.lat_avg = (double)be64toh(m->v_be[DV_LAT_AVG]) / 1e3;
	peer.lat_p50 = (double)be64toh(m->v_be[DV_LAT_P50]) / 1e3;
	peer.lat_p99 = (double)be64toh(m->v_be[DV_LAT_P99]) / 1e3;
	peer.lat_p999 = (double)be64toh(m->v_be[DV_LAT_P999]) / 1e3;
	peer.verify_errors =
		(uint32_t)be64toh(m->v_be[DV_VERIFY_ERRORS]);
	peer.peak_bps = (double)be64toh(m->v_be[DV_PEAK_BPS]);
	if (c->o->bidir) {
		mine->local = (struct perf_dir){ mine->iters, mine->ns,
						 mine->peak_bps };
		mine->remote = (struct perf_dir){ peer.iters, peer.ns,
						  peer.peak_bps };
		mine->iters += peer.iters;
		mine->peak_bps += peer.peak_bps;
		if (peer.ns > mine->ns)
			mine->ns = peer.ns;
		mine->verify_errors += peer.verify_errors;
		mine->peer_cpu_s = peer.cpu_s;
		return;
	}
	if (c->server) {
		/* The client's numbers, our CPU and data check. */
		peer.peer_cpu_s = mine->cpu_s;
		peer.verify_errors += mine->verify_errors;
		peer.cpu_s = mine->cpu_s;
		peer.peer_cpu_s = (double)be64toh(m->v_be[DV_CPU_US]) / 1e6;
		*mine = peer;
		return;
	}
	mine->peer_cpu_s = peer.cpu_s;
	mine->verify_errors += peer.verify_errors;
}

int perf_pt_version_ok(const char theirs[PT_VERSION_LEN])
{
	char v[PT_VERSION_LEN + 1];

	memcpy(v, theirs, PT_VERSION_LEN);
	v[PT_VERSION_LEN] = 0;
	if (g_ascii_strtod(v, NULL) < 5.70) {
		fprintf(stderr, "%s: the peer's perftest is version \"%s\", -R needs 5.70 or newer\n",
			PERF_PROG, v);
		return -1;
	}
	return 0;
}

int perf_pt_cycle(uint32_t rem_be, uint32_t *cycle)
{
	*cycle = ntohl(rem_be) > PT_CYCLE_BUFFER ? ntohl(rem_be)
						 : PT_CYCLE_BUFFER;
	if (*cycle > (64u << 20)) {
		fprintf(stderr, "%s: the peer's cycle buffer of %u bytes is too large\n",
			PERF_PROG, *cycle);
		return -1;
	}
	return 0;
}

void perf_pt_dest_in(struct perf_ctx *c, unsigned int i,
		     const struct perf_pt_dest *rem)
{
	c->qp[i].raddr = be64toh(rem->vaddr_be);
	c->qp[i].rrkey = ntohl(rem->rkey_be);
}

void perf_pt_report_in(const uint64_t theirs[5], struct perf_result *r)
{
	double bw = unswap_double(theirs[3]), ns = 0;
	double peak = unswap_double(theirs[2]);

	r->size = be64toh(theirs[0]);
	r->iters = be64toh(theirs[1]);
	if (bw > 0)
		ns = (double)r->size * (double)r->iters / (bw * 1048576.0) *
		     1e9;
	/* The peer's double is any 64 bits: a tiny bandwidth makes a time
	 * past 2^64 ns, whose conversion is undefined (C11 6.3.1.4). Such a
	 * report has no time, as one without a bandwidth. */
	if (ns >= 18446744073709551616.0) {
		fprintf(stderr, "%s: the peer reports %g MiB/s for %llu messages of %llu bytes: no time to show\n",
			PERF_PROG, bw, (unsigned long long)r->iters,
			(unsigned long long)r->size);
		ns = 0;
	}
	r->ns = (uint64_t)ns;
	/* perftest's peak, MiB/s; nothing for what no double can be. */
	r->peak_bps = peak > 0 && peak < 1e12 ? peak * 1048576.0 : 0;
}
