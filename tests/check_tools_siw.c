/* SPDX-License-Identifier: MIT */
/*
 * tools, over soft-iWARP on 127.0.0.1: hostrdma-perf server and client
 * for every test (the --json lines parse and say what was asked, the data
 * checked), hostrdma-ping against itself and against it-rping in both
 * roles, a ping server refusing an advert larger than its buffer,
 * hostrdma-info's JSON, the README demo, a short itapi-scale pass. The
 * suite and the process helpers are in check_tools.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "tests/check_tools.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "tests/testutil_itapi.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"

#ifdef HAVE_PROV_SIW
static void env_setup(void)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH", SIW_PROVIDER_DIR, TRUE);
	g_setenv("HOSTRDMA_DEVICES", "siw_lo", TRUE);
	g_unsetenv("HOSTRDMA_OPTIONS");
}

/*
 * Server and client of one hostrdma-perf test; the client's extra
 * arguments in @args (NULL-terminated). Both must exit 0; returns the
 * client's JSON lines, after checking the server printed the same sizes.
 */
static GPtrArray *perf_sc(const char *test, const char *const *sargs,
			  const char *const *args)
{
	char port[8];
	const char *sargv[16] = { TOOLS "hostrdma-perf", test, "-d",
				  "siw_lo", "-p",
				  free_port(port, sizeof(port)), "--json" };
	const char *cargv[32] = { TOOLS "hostrdma-perf", test, "-p", port,
				  "--json" };
	struct proc s, c;
	GPtrArray *cj, *sj;
	unsigned int n = 5, k = 7;
	int rc;

	for (; *sargs; sargs++)
		sargv[k++] = *sargs;
	for (; *args; args++)
		cargv[n++] = *args;
	cargv[n++] = "127.0.0.1";
	start(&s, sargv);
	ck_assert_msg(read_until(&s, "waiting for a client"),
		      "the server did not listen:\n%s", tail(s.text->str));
	start(&c, cargv);
	rc = finish(&c);
	ck_assert_msg(rc == 0, "client exit %d:\n%s", rc, tail(c.text->str));
	rc = finish(&s);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s.text->str));
	cj = json_lines(c.text->str);
	sj = json_lines(s.text->str);
	ck_assert_uint_gt(cj->len, 0);
	ck_assert_uint_eq(cj->len, sj->len);
	for (unsigned int i = 0; i < cj->len; i++)
		ck_assert_int_eq(
			json_object_get_int_member(cj->pdata[i], "msg_size"),
			json_object_get_int_member(sj->pdata[i], "msg_size"));
	g_ptr_array_unref(sj);
	done(&s);
	done(&c);
	return cj;
}

static GPtrArray *perf(const char *test, const char *const *args)
{
	static const char *const none[] = { NULL };

	return perf_sc(test, none, args);
}

START_TEST(perf_write_bw_verified)
{
	const char *args[] = { "-s", "4096", "-n", "300", "--verify", NULL };
	GPtrArray *j = perf("write_bw", args);

	ck_assert_uint_eq(j->len, 1);
	assert_bw(j->pdata[0], "write_bw", 4096, 300);
	assert_verified(j->pdata[0]);
	g_ptr_array_unref(j);
}
END_TEST

/* -l: bursts of 16 posted with IT_COALESCE_WR_FLAG, small messages that
 * soft-iWARP packs; every message's data checked. */
START_TEST(perf_post_list_verified)
{
	static const char *const tests[] = { "write_bw", "send_bw" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(tests); i++) {
		const char *args[] = { "-s", "100", "-n", "2000", "-l", "16",
				       "--verify", NULL };
		GPtrArray *j = perf(tests[i], args);

		ck_assert_uint_eq(j->len, 1);
		assert_bw(j->pdata[0], tests[i], 100, 2000);
		assert_verified(j->pdata[0]);
		g_ptr_array_unref(j);
	}
}
END_TEST

START_TEST(perf_read_bw_two_qps_verified)
{
	const char *args[] = { "-s", "65536", "-n", "100", "-q", "2",
			       "--verify", NULL };
	GPtrArray *j = perf("read_bw", args);

	/* 100 per QP */
	assert_bw(j->pdata[0], "read_bw", 65536, 200);
	ck_assert_int_eq(json_object_get_int_member(j->pdata[0], "qps"), 2);
	assert_verified(j->pdata[0]);
	g_ptr_array_unref(j);
}
END_TEST

START_TEST(perf_send_bw_bidirectional_verified)
{
	/* A small RX depth makes the credits matter. */
	const char *args[] = { "-s", "1000", "-n", "500", "-b", "-r", "8",
			       "--verify", NULL };
	GPtrArray *j = perf("send_bw", args);

	/* both directions */
	assert_bw(j->pdata[0], "send_bw", 1000, 1000);
	ck_assert(json_object_get_boolean_member(j->pdata[0],
						 "bidirectional"));
	assert_verified(j->pdata[0]);
	g_ptr_array_unref(j);
}
END_TEST

/* -R: both ends speak perftest's rdma_cm exchange; the server learns the
 * run from the client's report, as ib_write_bw -R prints it. */
START_TEST(perf_perftest_exchange)
{
	static const char *const tests[] = { "write_bw", "read_bw" };
	const char *sargs[] = { "-R", NULL };
	const char *args[] = { "-R", "-s", "4096", "-n", "300", NULL };

	for (unsigned int i = 0; i < G_N_ELEMENTS(tests); i++) {
		GPtrArray *j = perf_sc(tests[i], sargs, args);

		ck_assert_uint_eq(j->len, 1);
		assert_bw(j->pdata[0], tests[i], 4096, 300);
		g_ptr_array_unref(j);
	}
}
END_TEST

START_TEST(perf_all_sizes)
{
	const char *args[] = { "-a", "-n", "4", NULL };
	GPtrArray *j = perf("write_bw", args);
	gint64 want = 2;

	/* 2 B up to 8 MiB, or less when RLIMIT_MEMLOCK says so */
	ck_assert_uint_ge(j->len, 16);
	ck_assert_uint_le(j->len, 23);
	for (unsigned int i = 0; i < j->len; i++, want <<= 1)
		ck_assert_int_eq(
			json_object_get_int_member(j->pdata[i], "msg_size"),
			want);
	g_ptr_array_unref(j);
}
END_TEST

static void assert_lat(JsonObject *o, const char *test, gint64 size)
{
	double mn = json_object_get_double_member(o, "lat_us_min");
	double p50 = json_object_get_double_member(o, "lat_us_p50");
	double p99 = json_object_get_double_member(o, "lat_us_p99");
	double avg = json_object_get_double_member(o, "lat_us_avg");

	ck_assert_str_eq(json_object_get_string_member(o, "test"), test);
	ck_assert_int_eq(json_object_get_int_member(o, "msg_size"), size);
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), 200);
	ck_assert(mn > 0 && mn <= p50 && p50 <= p99 && mn <= avg);
	ck_assert(!json_object_has_member(o, "bw_gbps"));
}

/* -e on both ends: the receiver sleeps on its receive queue's EVD (and
 * looks at the control channel between waits), the sender on its send
 * queue's; every message arrives, verified, in a stream and a ping-pong. */
START_TEST(perf_events_both_ends)
{
	static const char *const sargs[] = { "-e", NULL };
	const char *bw[] = { "-s", "4096", "-n", "400", "-e", "--verify",
			     NULL };
	const char *lat[] = { "-s", "64", "-n", "200", "-e", NULL };
	GPtrArray *j = perf_sc("send_bw", sargs, bw);

	ck_assert_uint_eq(j->len, 1);
	assert_bw(j->pdata[0], "send_bw", 4096, 400);
	assert_verified(j->pdata[0]);
	g_ptr_array_unref(j);
	j = perf_sc("send_lat", sargs, lat);
	ck_assert_uint_eq(j->len, 1);
	assert_lat(j->pdata[0], "send_lat", 64);
	g_ptr_array_unref(j);
}
END_TEST

/* -e with -D, as bench/run and perftest users run it (no --verify,
 * whose checks change the timing): when the time is up, a Send sender
 * may be out of credits with no signalled WR outstanding, the credits
 * coming as RDMA Writes that complete nothing on its side. It slept on
 * its send queue for the 30-second limit and failed the run; it must
 * look at its credit word again and finish. */
START_TEST(perf_events_duration)
{
	static const char *const sargs[] = { "-e", NULL };
	const char *bw[] = { "-s", "65536", "-D", "1", "-e", NULL };
	GPtrArray *j = perf_sc("send_bw", sargs, bw);
	JsonObject *o;

	ck_assert_uint_eq(j->len, 1);
	o = j->pdata[0];
	ck_assert_str_eq(json_object_get_string_member(o, "test"), "send_bw");
	ck_assert_int_eq(json_object_get_int_member(o, "msg_size"), 65536);
	ck_assert_int_gt(json_object_get_int_member(o, "iterations"), 0);
	ck_assert(json_object_get_double_member(o, "bw_gbps") > 0);
	g_ptr_array_unref(j);
}
END_TEST

/* --warmup travels to the server with the other parameters: both ends
 * make the same unmeasured round trips and report them; without the
 * option a ping-pong warms up for PERF_WARMUP, and the measured count
 * stays -n. */
START_TEST(perf_warmup_both_ends)
{
	static const char *const none[] = { NULL };
	const char *seven[] = { "-s", "8", "-n", "200", "--warmup", "7",
				NULL };
	const char *dflt[] = { "-s", "64", "-n", "200", NULL };
	/* The server's own --warmup 3 gives way to the client's value */
	const char *sargv[] = { TOOLS "hostrdma-perf", "send_lat", "-d",
				"siw_lo", "-p", NULL, "--json", "--warmup",
				"3", NULL };
	char port[8];
	struct proc s, c;
	GPtrArray *cj, *sj;
	GPtrArray *j = perf_sc("write_lat", none, seven);

	ck_assert_uint_eq(j->len, 1);
	assert_lat(j->pdata[0], "write_lat", 8);
	ck_assert_int_eq(json_object_get_int_member(j->pdata[0], "warmup"), 7);
	g_ptr_array_unref(j);

	/* the server's report too (its own 3 overridden), and the
	 * client's default */
	sargv[5] = free_port(port, sizeof(port));
	{
		const char *cargv[] = { TOOLS "hostrdma-perf", "send_lat", "-p",
					port, "--json", dflt[0], dflt[1],
					dflt[2], dflt[3], "127.0.0.1", NULL };

		start(&s, sargv);
		ck_assert_msg(read_until(&s, "waiting for a client"),
			      "the server did not listen:\n%s",
			      tail(s.text->str));
		start(&c, cargv);
		ck_assert_int_eq(finish(&c), 0);
		ck_assert_int_eq(finish(&s), 0);
	}
	cj = json_lines(c.text->str);
	sj = json_lines(s.text->str);
	ck_assert_uint_eq(cj->len, 1);
	ck_assert_uint_eq(sj->len, 1);
	ck_assert_int_eq(json_object_get_int_member(cj->pdata[0], "warmup"),
			 1000);
	ck_assert_int_eq(json_object_get_int_member(sj->pdata[0], "warmup"),
			 1000);
	ck_assert_int_eq(json_object_get_int_member(cj->pdata[0],
						    "iterations"), 200);
	g_ptr_array_unref(cj);
	g_ptr_array_unref(sj);
	done(&s);
	done(&c);
}
END_TEST

START_TEST(perf_latency_tests)
{
	static const char *const tests[] = { "write_lat", "send_lat",
					     "read_lat" };
	const char *args[] = { "-s", "8", "-n", "200", NULL };

	for (unsigned int i = 0; i < 3; i++) {
		GPtrArray *j = perf(tests[i], args);

		ck_assert_uint_eq(j->len, 1);
		assert_lat(j->pdata[0], tests[i], 8);
		g_ptr_array_unref(j);
	}
}
END_TEST

/*
 * -R latency: ib_{write,send,read}_lat -R's exchange on both ends. Both
 * ping-pong ends print their own numbers (write_lat's server pings
 * first, as perftest's does); read_lat's server only waits.
 */
START_TEST(perf_perftest_latency)
{
	static const char *const tests[] = { "write_lat", "send_lat",
					     "read_lat" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(tests); i++) {
		char port[8];
		const char *sargv[] = { TOOLS "hostrdma-perf", tests[i], "-R",
					"-d", "siw_lo", "-s", "8", "-n", "200",
					"-p", free_port(port, sizeof(port)),
					"--json", NULL };
		const char *cargv[] = { TOOLS "hostrdma-perf", tests[i], "-R",
					"-s", "8", "-n", "200", "-p", port,
					"--json", "127.0.0.1", NULL };
		bool reader = !strcmp(tests[i], "read_lat");
		struct proc s, c;
		GPtrArray *cj, *sj;
		int rc;

		start(&s, sargv);
		ck_assert_msg(read_until(&s, "waiting for a client"),
			      "the server did not listen:\n%s",
			      tail(s.text->str));
		start(&c, cargv);
		rc = finish(&c);
		ck_assert_msg(rc == 0, "%s client exit %d:\n%s", tests[i], rc,
			      tail(c.text->str));
		rc = finish(&s);
		ck_assert_msg(rc == 0, "%s server exit %d:\n%s", tests[i], rc,
			      tail(s.text->str));
		cj = json_lines(c.text->str);
		sj = json_lines(s.text->str);
		ck_assert_uint_eq(cj->len, 1);
		assert_lat(cj->pdata[0], tests[i], 8);
		ck_assert_uint_eq(sj->len, reader ? 0 : 1);
		if (!reader)
			assert_lat(sj->pdata[0], tests[i], 8);
		g_ptr_array_unref(cj);
		g_ptr_array_unref(sj);
		done(&s);
		done(&c);
	}
}
END_TEST

START_TEST(perf_bad_command_lines)
{
	static const char *const bad[][5] = {
		{ "nosuch_bw", NULL },
		{ "write_bw", "-q", "65", NULL },
		{ "write_lat", "-b", NULL },
		{ "write_bw", "-s", "0", NULL },
		{ "write_lat", "-R", "-D", "2", NULL },
		/* a warm-up is for ping-pongs, and perftest's have none */
		{ "write_bw", "--warmup", "10", NULL },
		{ "write_lat", "-R", "--warmup", "10", NULL },
		/* perftest's send_bw credits on iWARP: not spoken */
		{ "send_bw", "-R", "-d", "siw_lo", "127.0.0.1" },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *argv[7] = { TOOLS "hostrdma-perf" };
		struct proc p;

		for (unsigned int k = 0; k < 5 && bad[i][k]; k++)
			argv[k + 1] = bad[i][k];
		start(&p, argv);
		ck_assert_int_eq(finish(&p), 2);
		ck_assert_msg(strstr(p.text->str, "hostrdma-perf") ||
				      strstr(p.text->str, "Usage"),
			      "no message: %s", tail(p.text->str));
		done(&p);
	}
}
END_TEST

/*
 * hostrdma-perf ends of different wire versions each name both versions.
 * The other end is this test through IT-API: a listener that rejects the
 * client's hello with a hello of the next version, and a client whose
 * hello says the next version, whose reject must carry the server's own.
 */
static void hello_is_ours(const unsigned char *pdata)
{
	struct perf_hello h;

	memcpy(&h, pdata, sizeof(h));
	ck_assert_uint_eq(ntohl(h.magic_be), PERF_MAGIC);
	ck_assert_uint_eq(h.version, PERF_VERSION);
}

START_TEST(perf_version_mismatch)
{
	const struct perf_hello next = {
		.magic_be = htonl(PERF_MAGIC), .version = PERF_VERSION + 1,
	};
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	char port[8], want[160];
	const char *argv[] = { TOOLS "hostrdma-perf", "write_bw", "-d",
			       "siw_lo", "-p", free_port(port, sizeof(port)),
			       "127.0.0.1", NULL };
	it_listen_handle_t l;
	it_ep_handle_t ep;
	it_path_t path;
	struct it_fix f;
	it_event_t ev;
	struct proc p;
	int rc;

	it_setup_siw();
	it_fix_open(&f);
	q.conn_qual.port = htons((uint16_t)atoi(port));
	ck_assert_it_ok(it_listen_create(f.ia, 0, f.req,
					 IT_LISTEN_CONN_QUAL_INPUT, &q, &l));
	/* A client against a server of the next version. */
	start(&p, argv);
	if (!it_wait_event_for(f.req, 20000000, &ev)) {
		finish_within(&p, 30);
		ck_abort_msg("no connection request; the client said:\n%s",
			     tail(p.text->str));
	}
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert(ev.conn_req.private_data_present);
	hello_is_ours(ev.conn_req.private_data);
	ck_assert_it_ok(it_reject(ev.conn_req.cn_est_id,
				  (const unsigned char *)&next, sizeof(next)));
	rc = finish_within(&p, 30);
	snprintf(want, sizeof(want),
		 "the server at 127.0.0.1 port %s runs another hostrdma-perf version (its wire version %d, ours %d)",
		 port, PERF_VERSION + 1, PERF_VERSION);
	ck_assert_msg(rc == 1 && strstr(p.text->str, want),
		      "exit %d, no \"%s\" in:\n%s", rc, want,
		      tail(p.text->str));
	done(&p);
	ck_assert_it_ok(it_listen_free(l));

	/* A server, and a client of the next version. */
	argv[6] = NULL;
	start(&p, argv);
	ck_assert_msg(read_until(&p, "waiting for a client"),
		      "the server did not listen:\n%s", tail(p.text->str));
	ep = it_ep_new(&f);
	it_loopback_path(&f, &path);
	ck_assert_it_ok(it_ep_connect(ep, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY,
				      (const unsigned char *)&next,
				      sizeof(next)));
	it_wait_event(f.msg, &ev);
	ck_assert_event(&ev, IT_CM_MSG_CONN_PEER_REJECT_EVENT);
	ck_assert(ev.conn.private_data_present);
	hello_is_ours(ev.conn.private_data);
	snprintf(want, sizeof(want),
		 "rejecting a client of another hostrdma-perf version (its wire version %d, ours %d)",
		 PERF_VERSION + 1, PERF_VERSION);
	ck_assert_msg(read_until(&p, want), "no \"%s\" in:\n%s", want,
		      tail(p.text->str));
	/* It goes on waiting for a client of its own version. */
	ck_assert_int_eq(waitpid(p.pid, &rc, WNOHANG), 0);
	ck_assert_int_eq(kill(p.pid, SIGTERM), 0);
	ck_assert_int_eq(finish_within(&p, 30), 128 + SIGTERM);
	done(&p);
	ck_assert_it_ok(it_ep_free(ep));
	it_fix_close(&f);
	it_teardown();
}
END_TEST

/* A ping server and client; returns the client's exit status and keeps
 * both outputs in @s and @c. */
static int ping_pair(const char *srv_prog, const char *cli_prog,
		     const char *srv_size, const char *cli_size,
		     struct proc *s, struct proc *c, int *srv_rc)
{
	char port[8];
	const char *sargv[] = { srv_prog, "-s", "-a", "127.0.0.1", "-p",
				free_port(port, sizeof(port)), "-C", "5",
				"-S", srv_size, "-v", NULL };
	const char *cargv[] = { cli_prog, "-c", "-a", "127.0.0.1", "-p", port,
				"-C", "5", "-S", cli_size, "-v", "-V", NULL };
	int rc;

	/* it-rping always compares and has no -V */
	if (strstr(cli_prog, "it-rping"))
		cargv[11] = NULL;

	start(s, sargv);
	/* it-rping says "listening", hostrdma-ping "waiting" */
	ck_assert(read_until(s, strstr(srv_prog, "it-rping") ? "listening" :
							       "waiting"));
	start(c, cargv);
	rc = finish(c);
	*srv_rc = finish(s);
	return rc;
}

START_TEST(ping_both_ends_ours)
{
	struct proc s, c;
	int src;

	ck_assert_int_eq(ping_pair(TOOLS "hostrdma-ping",
				   TOOLS "hostrdma-ping", "4000", "4000", &s,
				   &c, &src),
			 0);
	ck_assert_int_eq(src, 0);
	assert_rounds(c.text->str, "", 5);
	assert_rounds(s.text->str, "server ", 5);
	ck_assert_ptr_null(strstr(c.text->str, "mismatch"));
	done(&s);
	done(&c);
}
END_TEST

START_TEST(ping_against_it_rping)
{
	struct proc s, c;
	int src;

	/* it-rping is the interop suite's rping over IT-API, written
	 * apart from hostrdma-ping: ours as client, then as server. */
	ck_assert_int_eq(ping_pair(IT_RPING, TOOLS "hostrdma-ping", "64",
				   "64", &s, &c, &src),
			 0);
	ck_assert_int_eq(src, 0);
	assert_rounds(c.text->str, "", 5);
	done(&s);
	done(&c);
	ck_assert_int_eq(ping_pair(TOOLS "hostrdma-ping", IT_RPING, "64",
				   "64", &s, &c, &src),
			 0);
	ck_assert_int_eq(src, 0);
	assert_rounds(s.text->str, "server ", 5);
	done(&s);
	done(&c);
}
END_TEST

START_TEST(ping_server_refuses_a_larger_advert)
{
	struct proc s, c;
	int src;

	ck_assert_int_eq(ping_pair(TOOLS "hostrdma-ping",
				   TOOLS "hostrdma-ping", "64", "100", &s, &c,
				   &src),
			 1);
	ck_assert_int_eq(src, 1);
	ck_assert_msg(strstr(s.text->str,
			     "the client advertised 100 bytes, our buffers hold 64"),
		      "%s", tail(s.text->str));
	ck_assert_ptr_null(strstr(s.text->str, "server ping data"));
	done(&s);
	done(&c);
}
END_TEST

START_TEST(info_json)
{
	const char *argv[] = { TOOLS "hostrdma-info", "--json", "-v", "-r",
			       "127.0.0.1", NULL };
	g_autoptr(JsonParser) jp = json_parser_new();
	JsonObject *root, *dev, *sp, *rt;
	JsonArray *devs, *addrs, *paths;
	struct proc p;
	bool lo = false;

	start(&p, argv);
	ck_assert_int_eq(finish(&p), 0);
	ck_assert_msg(json_parser_load_from_data(jp, p.text->str, -1, NULL),
		      "%s", tail(p.text->str));
	root = json_node_get_object(json_parser_get_root(jp));
	devs = json_object_get_array_member(root, "devices");
	ck_assert_uint_eq(json_array_get_length(devs), 0);	/* -r only */
	rt = json_array_get_object_element(
		json_object_get_array_member(root, "routes"), 0);
	paths = json_object_get_array_member(rt, "paths");
	ck_assert_str_eq(json_object_get_string_member(
				 json_array_get_object_element(paths, 0),
				 "device"),
			 "siw_lo");
	done(&p);

	argv[3] = NULL;
	start(&p, argv);
	ck_assert_int_eq(finish(&p), 0);
	g_clear_object(&jp);
	jp = json_parser_new();
	ck_assert(json_parser_load_from_data(jp, p.text->str, -1, NULL));
	root = json_node_get_object(json_parser_get_root(jp));
	devs = json_object_get_array_member(root, "devices");
	ck_assert_uint_eq(json_array_get_length(devs), 1);
	dev = json_array_get_object_element(devs, 0);
	ck_assert_str_eq(json_object_get_string_member(dev, "name"), "siw_lo");
	ck_assert_str_eq(json_object_get_string_member(dev, "transport"),
			 "iWARP");
	ck_assert_str_eq(json_object_get_string_member(dev, "netdev"), "lo");
	ck_assert(json_object_has_member(dev, "srq_support"));
	sp = json_array_get_object_element(
		json_object_get_array_member(dev, "spigots"), 0);
	ck_assert(json_object_get_boolean_member(sp, "online"));
	addrs = json_object_get_array_member(sp, "addresses");
	for (guint i = 0; i < json_array_get_length(addrs); i++)
		lo |= !strcmp(json_array_get_string_element(addrs, i),
			      "127.0.0.1");
	ck_assert(lo);
	done(&p);
}
END_TEST

/* A TCP listener on 127.0.0.1:@port, standing in for another program. */
static int hold_port(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

/* The second test's port is taken by another program: the demo moves on
 * to the next port, says so, and everything still runs. */

/* Many connections to one listener and connect/disconnect cycles, short
 * (make check-scale runs 10 000 and 100 000): the server is another
 * process, found by the default device choice (no -d). */
START_TEST(scale_short_siw)
{
	const char *argv[] = { SCALE_PROG, "-n", "300", "-c", "1000",
			       "--json", NULL };
	struct proc p;
	int rc;

	start(&p, argv);
	rc = finish(&p);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_scale(p.text->str, "siw_lo", 300, 1000);
	done(&p);
}
END_TEST

START_TEST(demo_runs_and_verifies)
{
	char port[8], *want;
	const char *argv[] = { TOOLS "hostrdma-demo", "-p",
			       free_port(port, sizeof(port)), NULL };
	uint16_t first = (uint16_t)atoi(port);
	int busy = hold_port(first + 1);
	struct proc p;
	int rc;

	start(&p, argv);
	rc = finish(&p);
	close(busy);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_demo_transport(p.text->str, "iWARP");
	ck_assert(strstr(p.text->str, "RDMA works here"));
	want = g_strdup_printf("could not listen on port %u; trying %u",
			       first + 1, first + 2);
	ck_assert_msg(strstr(p.text->str, want), "no \"%s\" in:\n%s", want,
		      tail(p.text->str));
	g_free(want);
	done(&p);
}
END_TEST

/* suite_tools()'s "siw" case. */
void tools_add_siw_case(Suite *s)
{
	TCase *tc = tcase_create("siw");

	tcase_add_checked_fixture(tc, env_setup, NULL);
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, perf_write_bw_verified);
	tcase_add_test(tc, perf_post_list_verified);
	tcase_add_test(tc, perf_read_bw_two_qps_verified);
	tcase_add_test(tc, perf_send_bw_bidirectional_verified);
	tcase_add_test(tc, perf_events_both_ends);
	tcase_add_test(tc, perf_events_duration);
	tcase_add_test(tc, perf_warmup_both_ends);
	tcase_add_test(tc, perf_all_sizes);
	tcase_add_test(tc, perf_perftest_exchange);
	tcase_add_test(tc, perf_latency_tests);
	tcase_add_test(tc, perf_perftest_latency);
	tcase_add_test(tc, perf_bad_command_lines);
	tcase_add_test(tc, perf_version_mismatch);
	tcase_add_test(tc, ping_both_ends_ours);
	tcase_add_test(tc, ping_against_it_rping);
	tcase_add_test(tc, ping_server_refuses_a_larger_advert);
	tcase_add_test(tc, info_json);
	tcase_add_test(tc, demo_runs_and_verifies);
	tcase_add_test(tc, scale_short_siw);
	suite_add_tcase(s, tc);
}
#endif /* HAVE_PROV_SIW */
