/* SPDX-License-Identifier: MIT */
/*
 * perf_report.c - hostrdma-perf's tests by name, perftest's defaults, the
 * run over every size, and the report: a table in perftest's layout, or
 * one JSON object per message size.
 */
#define _GNU_SOURCE
#include "tools/perf_priv.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

static const char *const verb_names[] = {
	[PERF_WRITE] = "write", [PERF_READ] = "read", [PERF_SEND] = "send",
	[PERF_ATOMIC] = "atomic",
};

int perf_parse_test(const char *name, struct perf_opts *o)
{
	for (unsigned int v = 0; v <= PERF_ATOMIC; v++) {
		size_t l = strlen(verb_names[v]);

		if (strncmp(name, verb_names[v], l) || name[l] != '_')
			continue;
		if (!strcmp(name + l + 1, "bw"))
			o->lat = false;
		else if (!strcmp(name + l + 1, "lat"))
			o->lat = true;
		else
			return -1;
		o->verb = (enum perf_verb)v;
		return 0;
	}
	return -1;
}

const char *perf_test_name(const struct perf_opts *o)
{
	static const char *const names[][2] = {
		[PERF_WRITE] = { "write_bw", "write_lat" },
		[PERF_READ] = { "read_bw", "read_lat" },
		[PERF_SEND] = { "send_bw", "send_lat" },
		[PERF_ATOMIC] = { "atomic_bw", "atomic_lat" },
	};

	return names[o->verb][o->lat];
}

/* perftest's: 64 KiB and 5000 iterations for bandwidth, 2 bytes and 1000
 * for latency; tx depth 128, rx depth 512, one completion in 100. */
void perf_defaults(struct perf_opts *o)
{
	if (!o->port)
		o->port = PERF_DEFAULT_PORT;
	if (o->verb == PERF_ATOMIC)
		o->size = 8;	/* one 64-bit word */
	if (!o->size)
		o->size = o->lat ? 2 : 65536;
	if (!o->iters)
		o->iters = o->lat ? 1000 : 5000;
	if (!o->qps)
		o->qps = 1;
	if (!o->tx_depth)
		o->tx_depth = o->lat ? 1 : 128;
	if (!o->rx_depth)
		o->rx_depth = o->lat ? 16 : 512;
	if (!o->cq_mod)
		o->cq_mod = 100;
	if (o->cq_mod > o->tx_depth)
		o->cq_mod = o->tx_depth;
	if (!o->outs)
		o->outs = 16;
	if (!o->post_list)
		o->post_list = 1;
	if (!o->all_max)
		o->all_max = PERF_MAX_SIZE;
}

/* Pinned bytes a run needs for messages up to @max (perf_conn.c's
 * layout, the control buffers and some slack). */
static uint64_t pinned_need(const struct perf_opts *o, uint64_t max)
{
	uint64_t per_qp = (o->verify || o->lat ? 2 : 1) * max + 4096;
	uint64_t one = o->qps * per_qp + 64 * 1024;

	/* -L: the server's buffers are pinned by this process too. */
	return o->loopback ? 2 * one : one;
}

int perf_fit_memlock(struct perf_opts *o)
{
	uint64_t lim = tool_memlock_limit();

	if (lim == UINT64_MAX)
		return 0;
	if (!o->all_sizes) {
		if (pinned_need(o, o->size) <= lim)
			return 0;
		fprintf(stderr, "%s: -s %llu needs %llu bytes of pinned memory, RLIMIT_MEMLOCK allows %llu: raise `ulimit -l`\n",
			PERF_PROG, (unsigned long long)o->size,
			(unsigned long long)pinned_need(o, o->size),
			(unsigned long long)lim);
		return -1;
	}
	while (o->all_max > 2 && pinned_need(o, o->all_max) > lim)
		o->all_max >>= 1;
	if (o->all_max < PERF_MAX_SIZE && !o->quiet)
		fprintf(stderr, "%s: -a stops at %llu bytes: RLIMIT_MEMLOCK (%llu bytes) is too small for 8 MiB messages; raise `ulimit -l`\n",
			PERF_PROG, (unsigned long long)o->all_max,
			(unsigned long long)lim);
	return 0;
}

unsigned int perf_sizes(const struct perf_opts *o, uint64_t *sizes,
			unsigned int max)
{
	unsigned int n = 0;

	if (!o->all_sizes) {
		sizes[0] = o->size;
		return 1;
	}
	for (uint64_t s = 2; s <= o->all_max && n < max; s <<= 1)
		sizes[n++] = s;
	return n;
}

#define BW_LINE                                                         \
	"---------------------------------------------------------------" \
	"-------------------------\n"

/* The device, its transport and both ends' addresses, for the banner;
 * -1 when -i names a port the device does not have. */
int perf_describe(struct perf_ctx *c)
{
	struct perf_where *w = &c->o->where;
	it_ia_info_t *info;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	size_t ports = 1;

	memset(w, 0, sizeof(*w));
	if (it_ia_query(c->ia, &info) == IT_SUCCESS) {
		g_strlcpy(w->device, info->ia_name ? info->ia_name : "?",
			  sizeof(w->device));
		g_strlcpy(w->transport,
			  tool_transport_name(info->transport_type),
			  sizeof(w->transport));
		ports = info->num_spigots;
		if (c->server && info->num_spigots &&
		    info->spigot_info[0].num_net_addr)
			tool_addr_str(&info->spigot_info[0].net_addr[0],
				      w->local, sizeof(w->local));
		if (!c->server && info->transport_type ==
					  IT_IWARP_TCP_TRANSPORT) {
			int af = c->path.remote.iwarp.ip_vers ==
						 IT_IP_VERS_IPV6 ?
					 AF_INET6 :
					 AF_INET;

			inet_ntop(af, &c->path.remote.iwarp.laddr, a,
				  sizeof(a));
			inet_ntop(af, &c->path.remote.iwarp.raddr, b,
				  sizeof(b));
			g_strlcpy(w->local, a, sizeof(w->local));
			g_strlcpy(w->remote, b, sizeof(w->remote));
		} else if (!c->server) {
			inet_ntop(AF_INET6, &c->path.remote.ib.local_port_gid,
				  a, sizeof(a));
			inet_ntop(AF_INET6,
				  &c->path.remote.ib.remote_port_gid, b,
				  sizeof(b));
			g_snprintf(w->local, sizeof(w->local), "GID %s", a);
			g_snprintf(w->remote, sizeof(w->remote), "GID %s", b);
		}
		it_ia_info_free(info);
	}
	if (c->server && c->peer_addr.addr_type)
		tool_addr_str(&c->peer_addr, w->remote, sizeof(w->remote));
	if (c->o->ib_port > ports) {
		fprintf(stderr, "%s: -i %u: device %s has %zu port%s\n",
			PERF_PROG, c->o->ib_port, w->device, ports,
			ports == 1 ? "" : "s");
		return -1;
	}
	return 0;
}

static const char *unit(const struct perf_opts *o)
{
	return o->mbps ? "MB/sec" : "Gb/sec";
}

/* perftest's: MB/sec are 2^20 bytes a second, Gb/sec 10^9 bits. */
static double bw_unit(const struct perf_opts *o, double bytes_per_s)
{
	return o->mbps ? bytes_per_s / 1048576.0 : bytes_per_s * 8 / 1e9;
}

/* The table was started: its closing line is due at the end. */
static bool header_shown;

void perf_print_header(const struct perf_opts *o)
{
	const struct perf_where *w = &o->where;

	header_shown = true;
	if (o->json || o->output)
		return;
	printf(BW_LINE);
	printf("                    %s %s Test (hostrdma-perf, IT-API)\n",
	       o->verb == PERF_WRITE ? "RDMA_Write" :
	       o->verb == PERF_READ  ? "RDMA_Read" :
	       o->verb == PERF_ATOMIC ? "Atomic" : "Send",
	       o->lat ? "Latency" : "BW");
	printf(" Dual-port       : OFF\t\tDevice         : %s\n",
	       w->device[0] ? w->device : "?");
	printf(" Number of qps   : %-8u\tTransport type : %s\n", o->qps,
	       w->transport[0] ? w->transport : "?");
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	if (!o->lat)
		printf(" TX depth        : %-8u\tCQ Moderation  : %u\n"
		       " Post List       : %u\n",
		       o->tx_depth, o->cq_mod, o->post_list);
	if (o->verb == PERF_READ || o->verb == PERF_ATOMIC)
		printf(" Outstand reads  : %u\n", o->outs);
	if (o->verb == PERF_ATOMIC)
		printf(" Atomic Type     : %s\n",
		       o->atomic == PERF_CMP_AND_SWAP ? "CMP_AND_SWAP" :
							"FETCH_AND_ADD");
	if (o->verb == PERF_SEND)
		printf(" RX depth        : %u\n", o->rx_depth);
	if (o->lat)
		printf(" Warm-up         : %llu round trips, not measured\n",
		       (unsigned long long)o->warmup);
	printf(" Bidirectional   : %-8s\tData verified  : %s\n",
	       o->bidir ? "on" : "off", o->verify ? "yes" : "no");
	printf(" Max inline data : 0[B]\n");
	if (o->bidir && o->report_both)
		printf(" Report both     : two lines a size, this side's sends then the peer's\n");
	if (o->run_infinitely)
		printf(" Duration        : %u s a line, until interrupted\n",
		       o->duration_s);
	printf(" local address:  %s\n", w->local[0] ? w->local : "?");
	printf(" remote address: %s\n", w->remote[0] ? w->remote : "?");
	printf(BW_LINE);
	if (o->lat)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    99%% percentile[usec]   99.9%% percentile[usec]\n");
	else
		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]%s\n",
		       unit(o), unit(o), o->cpu_util ? "   CPU_Util[%]" : "");
	fflush(stdout);
}

static void json_result(const struct perf_opts *o,
			const struct perf_result *r, double s, double gbps,
			double peak_gbps, double mpps)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonGenerator) g = json_generator_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree char *text = NULL;

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "test");
	json_builder_add_string_value(b, perf_test_name(o));
	json_builder_set_member_name(b, "msg_size");
	json_builder_add_int_value(b, (gint64)r->size);
	json_builder_set_member_name(b, "iterations");
	json_builder_add_int_value(b, (gint64)r->iters);
	if (o->lat) {
		const struct {
			const char *name;
			double v;
		} lat[] = {
			{ "lat_us_min", r->lat_min },
			{ "lat_us_avg", r->lat_avg },
			{ "lat_us_p50", r->lat_p50 },
			{ "lat_us_p99", r->lat_p99 },
			{ "lat_us_p999", r->lat_p999 },
			{ "lat_us_max", r->lat_max },
		};

		json_builder_set_member_name(b, "warmup");
		json_builder_add_int_value(b, (gint64)o->warmup);
		for (size_t i = 0; i < G_N_ELEMENTS(lat); i++) {
			json_builder_set_member_name(b, lat[i].name);
			json_builder_add_double_value(b, lat[i].v);
		}
	} else {
		json_builder_set_member_name(b, "bw_gbps");
		json_builder_add_double_value(b, gbps);
		json_builder_set_member_name(b, "bw_peak_gbps");
		json_builder_add_double_value(b, peak_gbps);
		json_builder_set_member_name(b, "bw_avg_mbytes");
		json_builder_add_double_value(
			b, s > 0 ? (double)r->iters * (double)r->size / s /
					   1048576.0 :
				   0);
		json_builder_set_member_name(b, "msg_rate_mpps");
		json_builder_add_double_value(b, mpps);
	}
	if (o->bidir && !o->lat) {
		const struct perf_dir *d[2] = { &r->local, &r->remote };
		const char *name[2] = { "bw_local_gbps", "bw_remote_gbps" };

		for (int k = 0; k < 2; k++) {
			json_builder_set_member_name(b, name[k]);
			json_builder_add_double_value(
				b, d[k]->ns ? (double)d[k]->iters *
						      (double)r->size * 8 /
						      (double)d[k]->ns :
					      0);
		}
	}
	json_builder_set_member_name(b, "seconds");
	json_builder_add_double_value(b, s);
	json_builder_set_member_name(b, "cpu_s");
	json_builder_add_double_value(b, r->cpu_s);
	json_builder_set_member_name(b, "peer_cpu_s");
	json_builder_add_double_value(b, r->peer_cpu_s);
	json_builder_set_member_name(b, "qps");
	json_builder_add_int_value(b, o->qps);
	json_builder_set_member_name(b, "bidirectional");
	json_builder_add_boolean_value(b, o->bidir);
	if (o->where.device[0]) {
		json_builder_set_member_name(b, "device");
		json_builder_add_string_value(b, o->where.device);
		json_builder_set_member_name(b, "transport");
		json_builder_add_string_value(b, o->where.transport);
	}
	if (o->verify) {
		json_builder_set_member_name(b, "verified");
		json_builder_add_boolean_value(b, !r->verify_errors);
	}
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	text = json_generator_to_data(g, NULL);
	printf("%s\n", text);
}

void perf_print_result(const struct perf_opts *o, const struct perf_result *r)
{
	double s = (double)r->ns / 1e9;
	double bytes = (double)r->iters * (double)r->size;
	double bps = s > 0 ? bytes / s : 0;
	double mpps = s > 0 ? (double)r->iters / s / 1e6 : 0;
	/* The best window cannot be below the whole run's average. */
	double peak = r->peak_bps > bps ? r->peak_bps : bps;

	if (o->json) {
		json_result(o, r, s, bps * 8 / 1e9, peak * 8 / 1e9, mpps);
	} else if (o->output == PERF_OUT_BANDWIDTH) {
		printf("%.2f\n", bw_unit(o, bps));
	} else if (o->output == PERF_OUT_MSG_RATE) {
		printf("%.6f\n", mpps);
	} else if (o->output == PERF_OUT_LATENCY) {
		printf("%.2f\n", r->lat_p50);
	} else if (o->lat) {
		printf(" %-7llu %-10llu %-14.2f %-14.2f %-16.2f %-14.2f %-22.2f %.2f\n",
		       (unsigned long long)r->size,
		       (unsigned long long)r->iters, r->lat_min, r->lat_max,
		       r->lat_p50, r->lat_avg, r->lat_p99, r->lat_p999);
	} else if (o->report_both && o->bidir) {
		const struct perf_dir *d[2] = { &r->local, &r->remote };

		for (int k = 0; k < 2; k++) {
			double ds = (double)d[k]->ns / 1e9;
			double dbps = ds > 0 ? (double)d[k]->iters *
						       (double)r->size / ds :
					       0;

			printf(" %-10llu %-14llu %-18.2f %-20.2f %-15.6f",
			       (unsigned long long)r->size,
			       (unsigned long long)d[k]->iters,
			       bw_unit(o, d[k]->peak_bps > dbps ?
						  d[k]->peak_bps :
						  dbps),
			       bw_unit(o, dbps),
			       ds > 0 ? (double)d[k]->iters / ds / 1e6 : 0);
			/* CPU: this process's, on both lines */
			if (o->cpu_util)
				printf(" %.2f", s > 0 ? 100.0 * r->cpu_s / s :
							0);
			printf("\n");
		}
	} else if (o->cpu_util) {
		printf(" %-10llu %-14llu %-18.2f %-20.2f %-15.6f %.2f\n",
		       (unsigned long long)r->size,
		       (unsigned long long)r->iters, bw_unit(o, peak),
		       bw_unit(o, bps), mpps,
		       s > 0 ? 100.0 * r->cpu_s / s : 0);
	} else {
		printf(" %-10llu %-14llu %-18.2f %-20.2f %.6f\n",
		       (unsigned long long)r->size,
		       (unsigned long long)r->iters, bw_unit(o, peak),
		       bw_unit(o, bps), mpps);
	}
	if (o->verify && r->verify_errors)
		fprintf(stderr, "%s: %llu bytes: %u bytes of data differ from what was sent\n",
			PERF_PROG, (unsigned long long)r->size,
			r->verify_errors);
	fflush(stdout);
}

void perf_print_footer(const struct perf_opts *o)
{
	/* Only under a table: a run that failed before it has none. */
	if (!o->json && !o->output && header_shown)
		printf(BW_LINE);
}

volatile int perf_stop;

int perf_run(struct perf_opts *o, perf_report_fn report, void *arg)
{
	struct perf_ctx c = { .o = o };
	uint64_t sizes[32];
	unsigned int n;
	int failed = 0;

	if ((o->server ? perf_connect(&c) : perf_accept(&c)) ||
	    perf_describe(&c)) {
		perf_teardown(&c);
		return 1;
	}
	perf_print_header(o);
	n = perf_sizes(o, sizes, 32);
	for (unsigned int i = 0; i < n; i++) {
		struct perf_result r;
		int k;

		if (o->lat && sizes[i] < 2 && o->verb == PERF_WRITE)
			continue;
		if (o->run_infinitely && !c.server && perf_stop) {
			/* READY of size 0: the server stops too. */
			if (perf_ctl_send(&c, PERF_CTL_READY,
					  (uint64_t[1]){ 0 }, 1, false))
				failed = 1;
			break;
		}
		k = perf_loop(&c, sizes[i], &r);
		if (k > 0)
			break;	/* --run_infinitely: the client stopped */
		if (k) {
			failed = 1;
			break;
		}
		perf_combine(&c, &r);
		if (r.verify_errors)
			failed = 1;
		report(o, &r, arg);
		if (o->run_infinitely)
			i--;	/* the same size again */
	}
	/*
	 * The server's last DONE is the last message. On RoCE its Send
	 * completes when the client's ACK comes back; a client that closed
	 * as soon as the DONE arrived could flush it first. The client
	 * says BYE, the server reads it after its DONE completed, and only
	 * then does the client close.
	 */
	if (!failed && !c.server &&
	    perf_ctl_send(&c, PERF_CTL_BYE, NULL, 0, false))
		failed = 1;
	if (!failed && c.server &&
	    perf_ctl_recv(&c, PERF_CTL_BYE, TOOL_WAIT_US))
		failed = 1;
	if (!failed && !c.server) {
		it_event_t ev;

		for (unsigned int i = 0; i < c.nqp; i++)
			it_ep_disconnect(c.qp[i].ep, NULL, 0);
		if (it_ep_disconnect(c.cep, NULL, 0) == IT_SUCCESS)
			for (unsigned int i = 0; i <= c.nqp; i++)
				if (it_evd_wait(c.cm, 5000000, &ev, &(size_t){ 0 }))
					break;
	} else if (!failed) {
		it_event_t ev;

		/* The client disconnects every connection when done. */
		for (unsigned int i = 0; i <= c.nqp; i++)
			if (it_evd_wait(c.cm, TOOL_WAIT_US, &ev, &(size_t){ 0 }))
				break;
	}
	perf_teardown(&c);
	return failed;
}
