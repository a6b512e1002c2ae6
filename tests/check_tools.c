/* SPDX-License-Identifier: MIT */
/*
 * The command-line tools over soft-iWARP on 127.0.0.1, as a user runs
 * them: hostrdma-perf server and client for every test (the --json lines
 * parse and say what was asked, the data checked), hostrdma-ping against
 * itself and against it-rping in both roles, a ping server refusing an
 * advert larger than its buffer, hostrdma-info's JSON, and the README
 * demo. The tools run as separate processes (fork and exec), natively
 * under valgrind. And the checks the tools make of their peer's messages
 * (tools/ping_wire.c, tools/perf_wire.c), on the inputs fuzz_tools found.
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

#include "tests/suites.h"
#include "tests/testutil.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"

#define TOOLS TOOLS_DIR "/"

struct proc {
	pid_t pid;
	int out;		/* its stdout and stderr */
	GString *text;		/* everything it printed so far */
};

#ifdef HAVE_PROV_SIW
static void env_setup(void)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH", SIW_PROVIDER_DIR, TRUE);
	g_setenv("HOSTRDMA_DEVICES", "siw_lo", TRUE);
	g_unsetenv("HOSTRDMA_OPTIONS");
}
#endif

static void start(struct proc *p, const char *const *argv)
{
	int fds[2];

	p->text = g_string_new(NULL);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	p->out = fds[0];
}

/* The end of @text: Check's failure messages have a size limit. */
static const char *tail(const char *text)
{
	size_t n = strlen(text);

	return n > 2000 ? text + n - 2000 : text;
}

/* Reads until @want appears in the output (NULL: until the end).
 * False at the end of the output without it. */
static bool read_until(struct proc *p, const char *want)
{
	char buf[4096];

	for (;;) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		ssize_t r;

		if (want && strstr(p->text->str, want))
			return true;
		ck_assert_msg(poll(&pfd, 1, 120000) == 1,
			      "%s: silent for 120 s; so far:\n%s", want,
			      tail(p->text->str));
		r = read(p->out, buf, sizeof(buf));
		if (r <= 0)
			return want == NULL;
		g_string_append_len(p->text, buf, r);
	}
}

/* Reads to the end and reaps; the exit status (or 128 + signal). */
static int finish(struct proc *p)
{
	int st = 0;

	read_until(p, NULL);
	close(p->out);
	ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* finish(), but a tool still running @secs seconds from now is killed
 * (SIGKILL) and the test fails: a hang shows as a failure, not as the
 * suite's time-out. */
static int finish_within(struct proc *p, int secs)
{
	gint64 end = g_get_monotonic_time() + (gint64)secs * G_USEC_PER_SEC;
	char buf[4096];
	int st = 0;

	for (;;) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		gint64 left_ms = (end - g_get_monotonic_time()) / 1000;
		ssize_t r;

		if (left_ms <= 0 || poll(&pfd, 1, (int)left_ms) != 1) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &st, 0);
			ck_abort_msg("still running after %d s; so far:\n%s", secs,
				     tail(p->text->str));
		}
		r = read(p->out, buf, sizeof(buf));
		if (r <= 0)
			break;
		g_string_append_len(p->text, buf, r);
	}
	close(p->out);
	ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void done(struct proc *p)
{
	g_string_free(p->text, TRUE);
}

static const char *const tool_names[] = {
	"hostrdma-perf", "hostrdma-ping", "hostrdma-info", "hostrdma-demo",
};

/* --help: exit 0, the usage on stdout naming the tool and its man page. */
START_TEST(cli_help)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(tool_names); i++) {
		g_autofree char *prog = g_strconcat(TOOLS, tool_names[i], NULL);
		g_autofree char *usage = g_strdup_printf("Usage: %s ",
							 tool_names[i]);
		g_autofree char *man = g_strdup_printf("%s(1)", tool_names[i]);
		const char *argv[] = { prog, "--help", NULL };
		struct proc p;
		int rc;

		start(&p, argv);
		rc = finish(&p);
		ck_assert_msg(rc == 0, "%s --help: exit %d", tool_names[i], rc);
		ck_assert_msg(strstr(p.text->str, usage) &&
				      strstr(p.text->str, man),
			      "%s --help printed:\n%s", tool_names[i],
			      tail(p.text->str));
		done(&p);
	}
}
END_TEST

/* An unknown option: exit 2, getopt's message naming it, then usage. */
START_TEST(cli_bad_option)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(tool_names); i++) {
		g_autofree char *prog = g_strconcat(TOOLS, tool_names[i], NULL);
		g_autofree char *usage = g_strdup_printf("Usage: %s ",
							 tool_names[i]);
		const char *argv[] = { prog, "--no-such-option", NULL };
		struct proc p;
		int rc;

		start(&p, argv);
		rc = finish(&p);
		ck_assert_msg(rc == 2, "%s: exit %d", tool_names[i], rc);
		ck_assert_msg(strstr(p.text->str,
				     "unrecognized option '--no-such-option'") &&
				      strstr(p.text->str, usage),
			      "%s printed:\n%s", tool_names[i], tail(p.text->str));
		done(&p);
	}
}
END_TEST

#ifdef HAVE_PROV_SIW
/*
 * The first of 32 TCP ports nobody holds now (the demo takes one per run,
 * 12 per transport), as a string.
 */
static char *free_port(char *buf, size_t len)
{
	snprintf(buf, len, "%u", tu_free_tcp_ports(32));
	return buf;
}

/* The JSON objects, one a line, that @text holds (other lines skipped). */
static GPtrArray *json_lines(const char *text)
{
	GPtrArray *objs = g_ptr_array_new_with_free_func(
		(GDestroyNotify)json_object_unref);
	gchar **lines = g_strsplit(text, "\n", -1);

	for (gchar **l = lines; *l; l++) {
		g_autoptr(JsonParser) jp = json_parser_new();
		JsonNode *root;

		if (**l != '{')
			continue;
		ck_assert_msg(json_parser_load_from_data(jp, *l, -1, NULL),
			      "not JSON: %s", *l);
		root = json_parser_get_root(jp);
		ck_assert(JSON_NODE_HOLDS_OBJECT(root));
		g_ptr_array_add(objs,
				json_object_ref(json_node_get_object(root)));
	}
	g_strfreev(lines);
	return objs;
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

static void assert_bw(JsonObject *o, const char *test, gint64 size,
		      gint64 iters)
{
	ck_assert_str_eq(json_object_get_string_member(o, "test"), test);
	ck_assert_int_eq(json_object_get_int_member(o, "msg_size"), size);
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), iters);
	ck_assert(json_object_get_double_member(o, "bw_gbps") > 0);
	ck_assert(json_object_get_double_member(o, "msg_rate_mpps") > 0);
}

static void assert_verified(JsonObject *o)
{
	ck_assert(json_object_has_member(o, "verified"));
	ck_assert(json_object_get_boolean_member(o, "verified"));
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

START_TEST(perf_bad_command_lines)
{
	static const char *const bad[][5] = {
		{ "nosuch_bw", NULL },
		{ "write_bw", "-q", "17", NULL },
		{ "write_lat", "-b", NULL },
		{ "write_bw", "-s", "0", NULL },
		{ "write_lat", "-R", NULL },
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

static void assert_rounds(const char *text, const char *prefix, int n)
{
	for (int i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "%sping data: rdma-ping-%d: ",
			 prefix, i);
		ck_assert_msg(strstr(text, want), "no \"%s\" in:\n%s", want,
			      text);
	}
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

/* The three checks passed over @name and its rows are in the table. */
static void assert_demo_transport(const char *text, const char *name)
{
	static const char *const checks[] = {
		"RDMA WRITE  64 messages of 4 KiB, every byte checked: ok",
		"RDMA READ   64 messages of 4 KiB, every byte checked: ok",
		"SEND        64 messages of 4 KiB, every byte checked: ok",
	};
	static const char *const rows[] = { "write_bw", "read_bw", "send_bw",
					    "write_lat", "read_lat",
					    "send_lat" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(checks); i++) {
		g_autofree char *want = g_strdup_printf("%-8s %s", name,
							 checks[i]);

		ck_assert_msg(strstr(text, want), "no \"%s\" in:\n%s", want,
			      text);
	}
	for (unsigned int i = 0; i < G_N_ELEMENTS(rows); i++) {
		g_autofree char *want = g_strdup_printf("  %-10s %-8s ",
							 rows[i], name);

		ck_assert_msg(strstr(text, want), "no row \"%s\" in:\n%s",
			      want, text);
	}
}

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
/* itapi-scale's JSON: every message intact, descriptors and threads of
 * both ends back where they were. */
static void assert_scale(const char *text, const char *dev, gint64 conns,
			 gint64 cycles)
{
	GPtrArray *j = json_lines(text);
	const char *const ends[] = { "client", "server" };
	JsonObject *o;

	ck_assert_msg(j->len == 1, "%s", tail(text));
	o = j->pdata[0];
	ck_assert_str_eq(json_object_get_string_member(o, "device"), dev);
	ck_assert_int_eq(json_object_get_int_member(o, "connections"), conns);
	ck_assert_int_eq(json_object_get_int_member(o, "cycles"), cycles);
	ck_assert_int_eq(json_object_get_int_member(o, "messages_bad"), 0);
	ck_assert(json_object_get_double_member(o, "setup_per_s") > 0);
	for (unsigned int i = 0; i < G_N_ELEMENTS(ends); i++) {
		JsonObject *e = json_object_get_object_member(o, ends[i]);
		JsonArray *fds = json_object_get_array_member(e, "fds");
		JsonArray *th = json_object_get_array_member(e, "threads");

		ck_assert_int_eq(json_array_get_int_element(fds, 0),
				 json_array_get_int_element(fds, 1));
		ck_assert_int_eq(json_array_get_int_element(th, 0),
				 json_array_get_int_element(th, 1));
	}
	g_ptr_array_unref(j);
}

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

#ifdef HAVE_PROV_RXE
/* Both providers, every device: the demo picks siw_lo and rxe_lo. */
static void env_setup_both(void)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 SIW_PROVIDER_DIR ":" RXE_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	g_unsetenv("HOSTRDMA_OPTIONS");
	g_unsetenv("HOSTRDMA_CM_TIMEOUT_MS");
}

/* Runs @argv to its end in @p. (A retry on a timed-out connection set-up
 * used to hide a race in the IB CM, fixed in cm/cm_ib_active.c: an
 * established event that came back before the REQ's sender had entered
 * PROVIDER was dropped.) */
static int run_rxe(struct proc *p, const char *const *argv)
{
	start(p, argv);
	return finish(p);
}

/*
 * Only one process can open rxe_lo (it holds UDP 4791 on 127.0.0.1), so
 * the tools' RoCE cases run both ends in one process (-L).
 */
START_TEST(perf_loopback_rxe)
{
	static const char *const tests[] = { "write_bw", "read_bw",
					     "send_bw" };

	for (unsigned int i = 0; i < G_N_ELEMENTS(tests); i++) {
		char port[8];
		const char *argv[] = { TOOLS "hostrdma-perf", tests[i], "-L",
				       "-d", "rxe_lo", "-p",
				       free_port(port, sizeof(port)), "-s",
				       "4096", "-n", "200", "--verify",
				       "--json", NULL };
		struct proc p;
		GPtrArray *j;
		int rc;

		rc = run_rxe(&p, argv);
		ck_assert_msg(rc == 0, "%s: exit %d:\n%s", tests[i], rc,
			      tail(p.text->str));
		j = json_lines(p.text->str);
		ck_assert_uint_eq(j->len, 1);
		assert_bw(j->pdata[0], tests[i], 4096, 200);
		assert_verified(j->pdata[0]);
		ck_assert(json_object_get_double_member(j->pdata[0],
							"peer_cpu_s") > 0);
		g_ptr_array_unref(j);
		done(&p);
	}
}
END_TEST

START_TEST(ping_loopback_rxe)
{
	char port[8];
	const char *argv[] = { TOOLS "hostrdma-ping", "-L", "-D", "rxe_lo",
			       "-p", free_port(port, sizeof(port)), "-C", "5",
			       "-S", "1000", "-v", "-V", NULL };
	struct proc p;
	int rc;

	rc = run_rxe(&p, argv);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_rounds(p.text->str, "", 5);
	assert_rounds(p.text->str, "server ", 5);
	ck_assert_msg(strstr(p.text->str,
			     "client: 5 rounds of 1000 bytes, validated"),
		      "%s", tail(p.text->str));
	done(&p);
}
END_TEST

/* The same on soft-RoCE, the server a thread of the same process. */
START_TEST(scale_short_rxe)
{
	const char *argv[] = { SCALE_PROG, "-d", "rxe_lo", "--same-process",
			       "-n", "200", "-c", "300", "--json", NULL };
	struct proc p;
	int rc;

	rc = run_rxe(&p, argv);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_scale(p.text->str, "rxe_lo", 200, 300);
	done(&p);
}
END_TEST

/* Neither a sanitizer's report nor a tool's status message of a failed
 * wait in @text. */
static void assert_clean(const char *text)
{
	ck_assert_msg(!strstr(text, "AddressSanitizer") &&
			      !strstr(text, "runtime error") &&
			      !strstr(text, "IT_ERR_"),
		      "%s", tail(text));
}

/* "WHO: N rounds" in @text: N, or -1. */
static int rounds_of(const char *text, const char *who)
{
	g_autofree char *key = g_strdup_printf("%s: ", who);
	const char *at = strstr(text, key);
	int n;

	return at && sscanf(at + strlen(key), "%d rounds", &n) == 1 ? n : -1;
}

/*
 * -L interrupted (SIGINT, twice, as a user's ^C ^C): hostrdma-ping(1)'s
 * clean stop. The client ends after the round it is in and disconnects,
 * the server ends with it; status 0 and both summaries, the same number
 * of rounds. A packet in fifty is dropped so that the client spends its
 * time in waits (retransmissions): a signal then lands in one nearly
 * every time. It used to end the client's wait with IT_ERR_INTERRUPT,
 * status 1, and run_loopback returned while the server's thread still
 * used its frame (ASan: stack-use-after-scope in serve/recv_advert).
 */
START_TEST(ping_loopback_sigint)
{
	char port[8];
	const char *argv[] = { TOOLS "hostrdma-ping", "-L", "-D", "rxe_lo",
			       "-p", free_port(port, sizeof(port)), "-S",
			       "1000", "-v", NULL };
	struct proc p;
	int rc, n;

	g_setenv("HOSTRDMA_OPTIONS",
		 "rxe.fault_drop_ppm=20000,rxe.fault_seed=11", TRUE);
	start(&p, argv);
	ck_assert(read_until(&p, "ping data: rdma-ping-3: "));
	ck_assert_int_eq(kill(p.pid, SIGINT), 0);
	g_usleep(20 * 1000);
	kill(p.pid, SIGINT);
	rc = finish_within(&p, 90);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_clean(p.text->str);
	n = rounds_of(p.text->str, "client");
	ck_assert_msg(n >= 4, "%s", tail(p.text->str));
	ck_assert_int_eq(rounds_of(p.text->str, "server"), n);
	done(&p);
}
END_TEST

/*
 * -L whose client fails: every packet is dropped, so its connection
 * request is never answered while the server's thread waits for it.
 * Status 1 with the client's message, at once: the server's thread is
 * told to stop and joined before the process ends (it was left running
 * on a frame that had returned).
 */
START_TEST(ping_loopback_client_fails)
{
	char port[8];
	const char *argv[] = { TOOLS "hostrdma-ping", "-L", "-D", "rxe_lo",
			       "-p", free_port(port, sizeof(port)), "-C", "3",
			       NULL };
	struct proc p;
	int rc;

	g_setenv("HOSTRDMA_OPTIONS", "rxe.fault_drop_ppm=1000000", TRUE);
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", TRUE);
	start(&p, argv);
	rc = finish_within(&p, 60);
	ck_assert_msg(rc == 1, "exit %d:\n%s", rc, tail(p.text->str));
	ck_assert_msg(strstr(p.text->str,
			     "expected a connection established"),
		      "%s", tail(p.text->str));
	ck_assert_msg(!strstr(p.text->str, "AddressSanitizer") &&
			      !strstr(p.text->str, "runtime error"),
		      "%s", tail(p.text->str));
	done(&p);
}
END_TEST

START_TEST(demo_both_transports)
{
	char port[8];
	const char *argv[] = { TOOLS "hostrdma-demo", "-p",
			       free_port(port, sizeof(port)), NULL };
	struct proc p;
	int rc;

	rc = run_rxe(&p, argv);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	assert_demo_transport(p.text->str, "iWARP");
	assert_demo_transport(p.text->str, "RoCEv2");
	ck_assert_ptr_null(strstr(p.text->str, "skipped"));
	done(&p);
}
END_TEST
#endif /* HAVE_PROV_RXE */

#endif /* HAVE_PROV_SIW */

/* ------------------------------------------------------------------ */
/* What the tools read from their peer (tools/ping_wire.c, perf_wire.c) */
/* ------------------------------------------------------------------ */

static uint64_t swapped(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return htobe64(u);
}

/* Found by fuzz_tools: a perftest client's report with a bandwidth so
 * small that the time it implies is past 2^64 ns made the server convert
 * an out-of-range double (UBSan: "9.33604e+87 is outside the range of
 * representable values"). Such a report, and one with no usable
 * bandwidth (0, negative, NaN, infinite), has no time. */
START_TEST(wire_perftest_report_out_of_range)
{
	static const double bad[] = { 1e-300, 4.9e-324, 0.0, -1.0, NAN,
				      INFINITY, -INFINITY };
	uint64_t r5[5];
	struct perf_result r;

	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		r5[0] = htobe64(1ull << 40);
		r5[1] = htobe64(1ull << 40);
		r5[2] = r5[3] = swapped(bad[i]);
		r5[4] = swapped(1.0);
		memset(&r, 0xff, sizeof(r));
		perf_pt_report_in(r5, &r);
		ck_assert_uint_eq(r.size, 1ull << 40);
		ck_assert_uint_eq(r.iters, 1ull << 40);
		ck_assert_uint_eq(r.ns, 0);
	}
	/* A sane report: 65536 x 5000 bytes at 9000 MiB/s. */
	r5[0] = htobe64(65536);
	r5[1] = htobe64(5000);
	r5[2] = r5[3] = swapped(9000.0);
	perf_pt_report_in(r5, &r);
	ck_assert_uint_eq(r.ns, 34722222);
}
END_TEST

Suite *suite_tools(void)
{
	Suite *s = suite_create("tools");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, cli_help);
	tcase_add_test(tc, cli_bad_option);
	suite_add_tcase(s, tc);
	tc = tcase_create("wire");
	tcase_add_test(tc, wire_perftest_report_out_of_range);
	suite_add_tcase(s, tc);
#ifdef HAVE_PROV_SIW
	tc = tcase_create("siw");
	tcase_add_checked_fixture(tc, env_setup, NULL);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, perf_write_bw_verified);
	tcase_add_test(tc, perf_post_list_verified);
	tcase_add_test(tc, perf_read_bw_two_qps_verified);
	tcase_add_test(tc, perf_send_bw_bidirectional_verified);
	tcase_add_test(tc, perf_all_sizes);
	tcase_add_test(tc, perf_perftest_exchange);
	tcase_add_test(tc, perf_latency_tests);
	tcase_add_test(tc, perf_bad_command_lines);
	tcase_add_test(tc, ping_both_ends_ours);
	tcase_add_test(tc, ping_against_it_rping);
	tcase_add_test(tc, ping_server_refuses_a_larger_advert);
	tcase_add_test(tc, info_json);
	tcase_add_test(tc, demo_runs_and_verifies);
	tcase_add_test(tc, scale_short_siw);
	suite_add_tcase(s, tc);
#ifdef HAVE_PROV_RXE
	tc = tcase_create("rxe");
	tcase_add_checked_fixture(tc, env_setup_both, NULL);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, perf_loopback_rxe);
	tcase_add_test(tc, ping_loopback_rxe);
	tcase_add_test(tc, scale_short_rxe);
	tcase_add_test(tc, ping_loopback_sigint);
	tcase_add_test(tc, ping_loopback_client_fails);
	tcase_add_test(tc, demo_both_transports);
	suite_add_tcase(s, tc);
#endif
#endif
	return s;
}
