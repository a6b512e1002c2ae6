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

#include "tests/check_tools.h"
#include "tests/suites.h"
#include "tests/testutil.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"

/*
 * The children start() and kald tests made that nobody reaped yet. A test
 * that fails half-way (under CK_FORK=no Check jumps out of it) would
 * leave its servers and daemons running, holding soft-RoCE's port for
 * the rest of the run: each tcase's teardown kills them.
 */
static GArray *live_pids;

void tools_track_pid(pid_t pid)
{
	if (!live_pids)
		live_pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	g_array_append_val(live_pids, pid);
}

void tools_untrack_pid(pid_t pid)
{
	for (guint i = 0; live_pids && i < live_pids->len; i++)
		if (g_array_index(live_pids, pid_t, i) == pid) {
			g_array_remove_index_fast(live_pids, i);
			return;
		}
}

void tools_kill_leftovers(void)
{
	while (live_pids && live_pids->len) {
		pid_t pid = g_array_index(live_pids, pid_t, 0);

		g_array_remove_index_fast(live_pids, 0);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

void start(struct proc *p, const char *const *argv)
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
	tools_track_pid(p->pid);
}

/* The end of @text: Check's failure messages have a size limit. */
const char *tail(const char *text)
{
	size_t n = strlen(text);

	return n > 2000 ? text + n - 2000 : text;
}

/* Reads until @want appears in the output (NULL: until the end).
 * False at the end of the output without it. */
bool read_until(struct proc *p, const char *want)
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
int finish(struct proc *p)
{
	int st = 0;

	read_until(p, NULL);
	close(p->out);
	ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
	tools_untrack_pid(p->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* finish(), but a tool still running @secs seconds from now is killed
 * (SIGKILL) and the test fails: a hang shows as a failure, not as the
 * suite's time-out. */
int finish_within(struct proc *p, int secs)
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
			tools_untrack_pid(p->pid);
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
	tools_untrack_pid(p->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void done(struct proc *p)
{
	g_string_free(p->text, TRUE);
}

static const char *const tool_names[] = {
	"hostrdma-perf", "hostrdma-ping", "hostrdma-info", "hostrdma-demo",
};

/* --help: exit 0, GOption's usage on stdout naming the tool and its man
 * page. */
START_TEST(cli_help)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(tool_names); i++) {
		g_autofree char *prog = g_strconcat(TOOLS, tool_names[i], NULL);
		g_autofree char *usage = g_strdup_printf("Usage:\n  %s ",
							 tool_names[i]);
		g_autofree char *man = g_strdup_printf("%s(1)", tool_names[i]);
		const char *argv[] = { prog, "--help", NULL };
		struct proc p;
		int rc;

		start(&p, argv);
		rc = finish(&p);
		ck_assert_msg(rc == 0, "%s --help: exit %d", tool_names[i], rc);
		ck_assert_msg(strstr(p.text->str, usage) &&
				      strstr(p.text->str, man) &&
				      strstr(p.text->str, "-h, --help"),
			      "%s --help printed:\n%s", tool_names[i],
			      tail(p.text->str));
		done(&p);
	}
}
END_TEST

/* An unknown option: exit 2, one line naming it and pointing to --help. */
START_TEST(cli_bad_option)
{
	for (unsigned int i = 0; i < G_N_ELEMENTS(tool_names); i++) {
		g_autofree char *prog = g_strconcat(TOOLS, tool_names[i], NULL);
		g_autofree char *want = g_strdup_printf(
			"%s: Unknown option --no-such-option\nTry `%s --help'.",
			tool_names[i], tool_names[i]);
		const char *argv[] = { prog, "--no-such-option", NULL };
		struct proc p;
		int rc;

		start(&p, argv);
		rc = finish(&p);
		ck_assert_msg(rc == 2, "%s: exit %d", tool_names[i], rc);
		ck_assert_msg(strstr(p.text->str, want), "%s printed:\n%s",
			      tool_names[i], tail(p.text->str));
		done(&p);
	}
}
END_TEST

#ifdef HAVE_PROV_SIW
/*
 * The first of 32 TCP ports nobody holds now (the demo takes one per run,
 * 12 per transport), as a string.
 */
char *free_port(char *buf, size_t len)
{
	snprintf(buf, len, "%u", tu_free_tcp_ports(32));
	return buf;
}

/* The JSON objects, one a line, that @text holds (other lines skipped). */
GPtrArray *json_lines(const char *text)
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

void assert_bw(JsonObject *o, const char *test, gint64 size,
	       gint64 iters)
{
	ck_assert_str_eq(json_object_get_string_member(o, "test"), test);
	ck_assert_int_eq(json_object_get_int_member(o, "msg_size"), size);
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), iters);
	ck_assert(json_object_get_double_member(o, "bw_gbps") > 0);
	ck_assert(json_object_get_double_member(o, "msg_rate_mpps") > 0);
}

void assert_verified(JsonObject *o)
{
	ck_assert(json_object_has_member(o, "verified"));
	ck_assert(json_object_get_boolean_member(o, "verified"));
}

void assert_rounds(const char *text, const char *prefix, int n)
{
	for (int i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "%sping data: rdma-ping-%d: ",
			 prefix, i);
		ck_assert_msg(strstr(text, want), "no \"%s\" in:\n%s", want,
			      text);
	}
}

/* itapi-scale's JSON: every message intact, descriptors and threads of
 * both ends back where they were. */
void assert_scale(const char *text, const char *dev, gint64 conns,
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

/* The three checks passed over @name and its rows are in the table. */
void assert_demo_transport(const char *text, const char *name)
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
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);

	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, cli_help);
	tcase_add_test(tc, cli_bad_option);
	suite_add_tcase(s, tc);
	tc = tcase_create("wire");
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_add_test(tc, wire_perftest_report_out_of_range);
	suite_add_tcase(s, tc);
	tools_add_habits_case(s); /* check_tools_cli.c */
#ifdef HAVE_PROV_SIW
	tools_add_siw_case(s); /* check_tools_siw.c */
#ifdef HAVE_PROV_RXE
	tools_add_rxe_case(s); /* check_tools_rxe.c */
	tools_add_select_case(s); /* check_tools_rxe.c */
#endif
#endif
	return s;
}
