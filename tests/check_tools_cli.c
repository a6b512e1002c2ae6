/* SPDX-License-Identifier: MIT */
/*
 * The tools against rdma-core's and perftest's habits (issue 13), run as
 * their man pages say: bad numbers refused naming the value (exit 2),
 * GLib's quotes in the user's locale, hostrdma-ping's server ending on
 * SIGTERM and taking a client that went away (killed or stopped) as the
 * normal end with the same round count on both sides; hostrdma-perf's
 * perftest flags, column layout (BW peak third, BW average fourth, in
 * MB/sec), banner and inline data; hostrdma-info's ibv_devinfo fields
 * and --json, parsed back with json-glib.
 */
#include "config.h"

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "tests/check_tools.h"
#include "tests/suites.h"
#include "tests/testutil.h"

/* Runs @argv (argv[0] a tool's name) to its end; the exit status, the
 * output in @out (freed by the caller). */
static int run(const char *const *argv, GString **out)
{
	const char *args[32] = { NULL };
	g_autofree char *prog = g_strconcat(TOOLS, argv[0], NULL);
	struct proc p;
	int rc;

	args[0] = prog;
	for (unsigned int i = 1; argv[i] && i < 31; i++)
		args[i] = argv[i];
	start(&p, args);
	rc = finish_within(&p, 60);
	*out = p.text;
	return rc;
}

/* Bad numbers: exit 2 and one message naming the option and the value,
 * whatever the tool. */
START_TEST(bad_numbers_named)
{
	static const char *const bad[][6] = {
		{ "hostrdma-ping", "-c", "-a", "127.0.0.1", "-C", "abc" },
		{ "hostrdma-ping", "-s", "-p", "30090x", NULL },
		{ "hostrdma-ping", "-s", "-S", "64k", NULL },
		{ "hostrdma-ping", "-s", "-S", "5", NULL },
		{ "hostrdma-ping", "-s", "-p", "0", NULL },
		{ "hostrdma-ping", "-s", "-C", "-1", NULL },
		{ "hostrdma-perf", "write_bw", "-s", "64k", NULL },
		{ "hostrdma-perf", "write_bw", "-n", "0x10", NULL },
		{ "hostrdma-perf", "write_bw", "-p", "70000", NULL },
		{ "hostrdma-perf", "write_bw", "-q", "65", NULL },
		{ "hostrdma-perf", "write_bw", "-D", "1s", NULL },
		{ "hostrdma-demo", "-p", "18515x", NULL },
		{ "hostrdma-info", "-i", "one", NULL },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *argv[8] = { NULL };
		const char *value = NULL, *opt = NULL;
		g_autofree char *want = NULL;
		GString *out;
		int rc;

		for (unsigned int k = 0; k < 6 && bad[i][k]; k++) {
			argv[k] = bad[i][k];
			if (k >= 2) {
				opt = bad[i][k - 1];
				value = bad[i][k];
			}
		}
		want = g_strdup_printf("%s: %s %s: ", bad[i][0], opt, value);
		rc = run(argv, &out);
		ck_assert_msg(rc == 2, "%s %s %s: exit %d\n%s", bad[i][0], opt,
			      value, rc, tail(out->str));
		ck_assert_msg(strstr(out->str, want),
			      "no \"%s\" in:\n%s", want, tail(out->str));
		g_string_free(out, TRUE);
	}
}
END_TEST

/* GLib's messages in the user's locale: a UTF-8 locale gets its curly
 * quotes, not "?" (setlocale was missing). */
START_TEST(glib_quotes_in_utf8_locale)
{
	const char *argv[] = { "hostrdma-ping", "-s", "-C", "abc", NULL };
	GString *out;

	g_setenv("LC_ALL", "C.UTF-8", TRUE);
	ck_assert_int_eq(run(argv, &out), 2);
	g_unsetenv("LC_ALL");
	ck_assert_msg(strstr(out->str, "\xe2\x80\x9c" "abc" "\xe2\x80\x9d"),
		      "no curly quotes in:\n%s", tail(out->str));
	ck_assert_ptr_null(strstr(out->str, "?abc?"));
	g_string_free(out, TRUE);
}
END_TEST

/* Every long option --help lists (GOption's table) is in the tool's man
 * page, and the man page's option section names no long option the tool
 * does not take. */
START_TEST(man_pages_match_help)
{
	static const char *const tools[] = { "hostrdma-ping", "hostrdma-perf",
					     "hostrdma-info", "hostrdma-demo" };
	g_autoptr(GRegex) opt = g_regex_new("--([A-Za-z][A-Za-z_-]*)", 0, 0,
					    NULL);
	g_autoptr(GRegex) man_opt = g_regex_new(
		"^\\.B[RI]? .*?\\\\-\\\\-([A-Za-z][A-Za-z_\\\\-]*)",
		G_REGEX_MULTILINE, 0, NULL);

	for (unsigned int i = 0; i < G_N_ELEMENTS(tools); i++) {
		const char *argv[] = { tools[i], "--help", NULL };
		g_autofree char *path = g_strdup_printf("%s/%s.1", MAN_DIR,
							tools[i]);
		g_autofree char *man = NULL, *opts = NULL;
		g_autoptr(GMatchInfo) m = NULL;
		GString *out;
		const char *sect, *end;

		ck_assert(g_file_get_contents(path, &man, NULL, NULL));
		sect = strstr(man, ".SH OPTIONS");
		ck_assert_ptr_nonnull(sect);
		end = strstr(sect + 1, "\n.SH ");
		opts = g_strndup(sect, end ? (size_t)(end - sect) : strlen(sect));
		ck_assert_int_eq(run(argv, &out), 0);
		g_regex_match(opt, out->str, 0, &m);
		for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
			g_autofree char *name = g_match_info_fetch(m, 1);
			g_auto(GStrv) parts = g_strsplit(name, "-", -1);
			g_autofree char *joined = g_strjoinv("\\-", parts);
			g_autofree char *esc = g_strconcat("\\-\\-", joined,
							   NULL);

			ck_assert_msg(strstr(opts, esc),
				      "%s: --%s is in --help, not in %s",
				      tools[i], name, path);
		}
		g_clear_pointer(&m, g_match_info_free);
		/* and the other way: each option the man page names as an
		 * item is one --help lists */
		g_regex_match(man_opt, opts, 0, &m);
		for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
			g_autofree char *raw = g_match_info_fetch(m, 1);
			g_auto(GStrv) parts = g_strsplit(raw, "\\-", -1);
			g_autofree char *name = g_strjoinv("-", parts);
			g_autofree char *want = g_strconcat("--", name, NULL);

			ck_assert_msg(strstr(out->str, want),
				      "%s: %s is in %s, not in --help",
				      tools[i], want, path);
		}
		g_string_free(out, TRUE);
	}
}
END_TEST

#ifdef HAVE_PROV_SIW
static void env_siw(void)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH", SIW_PROVIDER_DIR, TRUE);
	g_setenv("HOSTRDMA_DEVICES", "siw_lo", TRUE);
	g_unsetenv("HOSTRDMA_OPTIONS");
}

static char *port_str(char *buf, size_t len)
{
	snprintf(buf, len, "%u", tu_free_tcp_ports(4));
	return buf;
}

/* `hostrdma-ping -s` without -a listens on every device (the poll loop
 * of tool_listen): SIGTERM ends it at once, exit 0. */
START_TEST(ping_server_sigterm)
{
	char port[8];
	const char *argv[] = { TOOLS "hostrdma-ping", "-s", "-v", "-p",
			       port_str(port, sizeof(port)), NULL };
	const char *argv_a[] = { TOOLS "hostrdma-ping", "-s", "-a",
				 "127.0.0.1", "-v", "-p", port, NULL };
	gint64 t0;
	struct proc s;
	int rc;

	start(&s, argv);
	ck_assert(read_until(&s, "waiting for a client"));
	t0 = g_get_monotonic_time();
	kill(s.pid, SIGTERM);
	rc = finish_within(&s, 5);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(s.text->str));
	ck_assert_int_lt(g_get_monotonic_time() - t0, 2 * G_USEC_PER_SEC);
	ck_assert(strstr(s.text->str, "server: stopped by a signal"));
	done(&s);

	/* With -a, the wait is it_evd_wait's: the same. */
	start(&s, argv_a);
	ck_assert(read_until(&s, "waiting for a client"));
	kill(s.pid, SIGTERM);
	rc = finish_within(&s, 5);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(s.text->str));
	done(&s);
}
END_TEST

/* Reads @p's output until @want appears at or after @offset (30 s). */
static void read_after(struct proc *p, size_t offset, const char *want)
{
	while (!strstr(p->text->str + offset, want)) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		char buf[4096];
		ssize_t r;

		ck_assert_msg(poll(&pfd, 1, 30000) == 1, "no \"%s\":\n%s",
			      want, tail(p->text->str));
		r = read(p->out, buf, sizeof(buf));
		ck_assert_msg(r > 0, "ended:\n%s", tail(p->text->str));
		g_string_append_len(p->text, buf, r);
	}
}

/* "N rounds" from "PREFIX: N rounds" in @text, or -1. */
static int rounds_said(const char *text, const char *prefix)
{
	const char *at = strstr(text, prefix);

	return at ? atoi(at + strlen(prefix)) : -1;
}

/*
 * A client that ends by a signal: killed (SIGKILL) mid-run, the server
 * says the client left and exits 0, as rping; stopped (SIGTERM), the
 * client finishes its round and disconnects, both exit 0 and report the
 * same number of rounds, which the client's -v lines confirm.
 */
START_TEST(ping_client_gone_is_normal_end)
{
	char port[8];
	const char *sargv[] = { TOOLS "hostrdma-ping", "-s", "-P", "-a",
				"127.0.0.1", "-d", "-p",
				port_str(port, sizeof(port)), NULL };
	const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a",
				"127.0.0.1", "-p", port, "-v", "-V", NULL };
	struct proc s, c;
	size_t first;
	int rc, n;

	/* -P: one server for both clients; it stops on SIGTERM. */
	start(&s, sargv);
	ck_assert(read_until(&s, "waiting for a client"));
	start(&c, cargv);
	ck_assert(read_until(&c, "ping data: rdma-ping-20: "));
	kill(c.pid, SIGKILL);
	ck_assert_int_eq(finish_within(&c, 10), 128 + SIGKILL);
	done(&c);
	/* Killed mid-round: "the client left after N rounds"; between
	 * rounds its disconnect looks like any: "N rounds of up to". */
	ck_assert(read_until(&s, "hostrdma-ping: server: "));
	ck_assert(read_until(&s, " rounds"));
	first = s.text->len;

	start(&c, cargv);
	ck_assert(read_until(&c, "ping data: rdma-ping-20: "));
	kill(c.pid, SIGTERM);
	rc = finish_within(&c, 10);
	ck_assert_msg(rc == 0, "client exit %d:\n%s", rc, tail(c.text->str));
	n = rounds_said(c.text->str, "hostrdma-ping: client: ");
	ck_assert_int_gt(n, 20);
	ck_assert(strstr(c.text->str, "rounds of 64 bytes, validated"));
	/* Every round the client counts printed its data, no more. */
	{
		g_autofree char *last =
			g_strdup_printf("ping data: rdma-ping-%d: ", n - 1);
		g_autofree char *past =
			g_strdup_printf("ping data: rdma-ping-%d: ", n);

		ck_assert(strstr(c.text->str, last));
		ck_assert_ptr_null(strstr(c.text->str, past));
	}
	read_after(&s, first, "rounds of up to 64 bytes");
	ck_assert_int_eq(rounds_said(s.text->str + first,
				     "hostrdma-ping: server: "),
			 n);
	kill(s.pid, SIGTERM);
	rc = finish_within(&s, 10);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s.text->str));
	done(&c);
	done(&s);
}
END_TEST

/* A hostrdma-perf server on a free port and a client with @cargs; both
 * must exit 0. The client's output in @c (done() by the caller). */
static void perf_pair(const char *test, const char *const *sargs,
		      const char *const *cargs, struct proc *c)
{
	char port[8];
	const char *sv[16] = { TOOLS "hostrdma-perf", test, "-p",
			       port_str(port, sizeof(port)) };
	const char *cv[24] = { TOOLS "hostrdma-perf", test, "-p", port };
	unsigned int ns = 4, nc = 4;
	struct proc s;
	int rc;

	for (; sargs && *sargs; sargs++)
		sv[ns++] = *sargs;
	for (; *cargs; cargs++)
		cv[nc++] = *cargs;
	cv[nc] = "127.0.0.1";
	start(&s, sv);
	ck_assert(read_until(&s, "waiting for a client"));
	start(c, cv);
	rc = finish_within(c, 60);
	ck_assert_msg(rc == 0, "client exit %d:\n%s", rc, tail(c->text->str));
	rc = finish_within(&s, 30);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s.text->str));
	done(&s);
}

/* The lines of @text whose first field is @size, split on blanks. */
static GPtrArray *rows_of(const char *text, const char *size)
{
	GPtrArray *rows = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_strfreev);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

	for (char **l = lines; *l; l++) {
		g_auto(GStrv) f = g_strsplit_set(g_strstrip(*l), " \t", -1);
		GPtrArray *keep = g_ptr_array_new();

		for (char **x = f; *x; x++)
			if (**x)
				g_ptr_array_add(keep, g_strdup(*x));
		g_ptr_array_add(keep, NULL);
		/* a row: the size, then digits (not "B:" of a progress
		 * line on stderr) */
		if (keep->len > 2 && !strcmp(keep->pdata[0], size) &&
		    g_ascii_isdigit(((char *)keep->pdata[1])[0]))
			g_ptr_array_add(rows, g_ptr_array_free(keep, FALSE));
		else
			g_strfreev((char **)g_ptr_array_free(keep, FALSE));
	}
	return rows;
}

/*
 * perftest's layout, as a script reads it: the header
 * "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]",
 * a row's 3rd field the peak, 4th the average (MiB/s), 5th the message
 * rate, which agrees with the average; the banner names the device and
 * the transport. --report_gbits: Gb/sec, the same run's numbers x 8.4.
 */
START_TEST(perf_perftest_layout)
{
	static const char *const args[] = { "-s", "4096", "-n", "20000",
					    "-i", "1", NULL };
	static const char *const gargs[] = { "-s", "4096", "-n", "20000",
					     "--report_gbits", NULL };
	struct proc c;
	GPtrArray *rows;
	char **f;
	double peak, avg, mpps;

	perf_pair("write_bw", NULL, args, &c);
	ck_assert_msg(strstr(c.text->str,
			     " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"),
		      "%s", tail(c.text->str));
	ck_assert(strstr(c.text->str, "Device         : siw_lo"));
	ck_assert(strstr(c.text->str, "Transport type : iWARP"));
	ck_assert(strstr(c.text->str, "remote address: 127.0.0.1"));
	rows = rows_of(c.text->str, "4096");
	ck_assert_uint_eq(rows->len, 1);
	f = rows->pdata[0];
	ck_assert_uint_eq(g_strv_length(f), 5);
	ck_assert_str_eq(f[1], "20000");
	peak = g_ascii_strtod(f[2], NULL);
	avg = g_ascii_strtod(f[3], NULL);
	mpps = g_ascii_strtod(f[4], NULL);
	ck_assert(avg > 0 && peak >= avg);
	/* MB/sec are 2^20 bytes: the rate of 4 KiB messages agrees */
	ck_assert_msg(fabs(avg * 1048576.0 / 4096 / 1e6 - mpps) < 0.01 * mpps,
		      "avg %f MB/s, %f Mpps", avg, mpps);
	g_ptr_array_unref(rows);
	done(&c);

	perf_pair("write_bw", NULL, gargs, &c);
	ck_assert(strstr(c.text->str,
			 "BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"));
	rows = rows_of(c.text->str, "4096");
	ck_assert_uint_eq(rows->len, 1);
	f = rows->pdata[0];
	avg = g_ascii_strtod(f[3], NULL);
	mpps = g_ascii_strtod(f[4], NULL);
	ck_assert_msg(fabs(avg * 1e9 / 8 / 4096 / 1e6 - mpps) < 0.01 * mpps,
		      "avg %f Gb/s, %f Mpps", avg, mpps);
	g_ptr_array_unref(rows);
	done(&c);
}
END_TEST

/* perftest's flags: --cpu_util adds a 6th column, --output=bandwidth
 * prints the average alone, -b --report-both one row per direction
 * (and --json both directions, parsed back). */
START_TEST(perf_perftest_flags)
{
	static const char *const cpu[] = { "-s", "8192", "-n", "3000",
					   "--cpu_util", NULL };
	static const char *const out[] = { "-s", "8192", "-n", "3000",
					   "--output=bandwidth", NULL };
	static const char *const bidir[] = { "-b", NULL };
	static const char *const both[] = { "-s", "8192", "-n", "3000", "-b",
					    "--report-both", NULL };
	static const char *const both_json[] = { "-s", "8192", "-n", "3000",
						 "-b", "--json", NULL };
	static const char *const short_json[] = { "-n", "2", "--json", NULL };
	g_auto(GStrv) lines = NULL;
	struct proc c;
	GPtrArray *rows;
	JsonObject *o;
	bool number_line = false;

	perf_pair("send_bw", NULL, cpu, &c);
	ck_assert(strstr(c.text->str, "MsgRate[Mpps]   CPU_Util[%]"));
	rows = rows_of(c.text->str, "8192");
	ck_assert_uint_eq(rows->len, 1);
	ck_assert_uint_eq(g_strv_length(rows->pdata[0]), 6);
	g_ptr_array_unref(rows);
	done(&c);

	perf_pair("read_bw", NULL, out, &c);
	ck_assert_ptr_null(strstr(c.text->str, "#bytes"));
	lines = g_strsplit(c.text->str, "\n", -1);
	for (char **l = lines; *l; l++) {
		char *end;

		if (**l && g_ascii_strtod(*l, &end) > 0 && !*end)
			number_line = true;
	}
	ck_assert_msg(number_line, "%s", tail(c.text->str));
	done(&c);

	perf_pair("write_bw", bidir, both, &c);
	ck_assert(strstr(c.text->str, "Report both"));
	rows = rows_of(c.text->str, "8192");
	ck_assert_uint_eq(rows->len, 2);
	ck_assert_str_eq(((char **)rows->pdata[0])[1], "3000");
	ck_assert_str_eq(((char **)rows->pdata[1])[1], "3000");
	g_ptr_array_unref(rows);
	done(&c);

	perf_pair("write_bw", bidir, both_json, &c);
	rows = json_lines(c.text->str);
	ck_assert_uint_eq(rows->len, 1);
	o = rows->pdata[0];
	ck_assert(json_object_get_double_member(o, "bw_local_gbps") > 0);
	ck_assert(json_object_get_double_member(o, "bw_remote_gbps") > 0);
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), 6000);
	ck_assert_str_eq(json_object_get_string_member(o, "device"), "siw_lo");
	ck_assert(json_object_get_double_member(o, "bw_peak_gbps") > 0);
	g_ptr_array_unref(rows);
	done(&c);

	/* A run too short for a window of its own: the peak is the
	 * average, as the text row says (it was 0 in JSON) */
	perf_pair("write_bw", NULL, short_json, &c);
	rows = json_lines(c.text->str);
	ck_assert_uint_eq(rows->len, 1);
	o = rows->pdata[0];
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), 2);
	ck_assert(json_object_get_double_member(o, "bw_gbps") > 0);
	ck_assert(json_object_get_double_member(o, "bw_peak_gbps") >=
		  json_object_get_double_member(o, "bw_gbps"));
	g_ptr_array_unref(rows);
	done(&c);
}
END_TEST

/* Reads @p's output until it holds @n rows of @size (30 s at most). */
static void wait_rows(struct proc *p, const char *size, guint n)
{
	gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

	for (;;) {
		GPtrArray *rows = rows_of(p->text->str, size);
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		guint have = rows->len;
		char buf[4096];
		ssize_t r;

		g_ptr_array_unref(rows);
		if (have >= n)
			return;
		ck_assert_msg(g_get_monotonic_time() < end &&
				      poll(&pfd, 1, 30000) == 1,
			      "%u of %u rows:\n%s", have, n, tail(p->text->str));
		r = read(p->out, buf, sizeof(buf));
		ck_assert_msg(r > 0, "ended:\n%s", tail(p->text->str));
		g_string_append_len(p->text, buf, r);
	}
}

/* --run_infinitely: a row every -D seconds until SIGINT; then the
 * client tells the server, and both exit 0. */
START_TEST(perf_run_infinitely)
{
	char port[8];
	const char *sv[] = { TOOLS "hostrdma-perf", "write_bw", "-p",
			     port_str(port, sizeof(port)), NULL };
	const char *cv[] = { TOOLS "hostrdma-perf", "write_bw", "-p", port,
			     "-s", "4096", "--run_infinitely", "-D", "1",
			     "127.0.0.1", NULL };
	struct proc s, c;
	GPtrArray *rows;
	int rc;

	start(&s, sv);
	ck_assert(read_until(&s, "waiting for a client"));
	start(&c, cv);
	ck_assert(read_until(&c, "until interrupted"));
	wait_rows(&c, "4096", 3);
	kill(c.pid, SIGINT);
	rc = finish_within(&c, 20);
	ck_assert_msg(rc == 0, "client exit %d:\n%s", rc, tail(c.text->str));
	rc = finish_within(&s, 20);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s.text->str));
	rows = rows_of(s.text->str, "4096");
	ck_assert_uint_ge(rows->len, 3);
	g_ptr_array_unref(rows);
	done(&c);
	done(&s);
}
END_TEST

/* A client stopped by SIGINT without --run_infinitely dies with its
 * connections; its server, mid-run, exits 1 and says the peer went away
 * (before: "control channel: receive completion (flushed)"). */
START_TEST(perf_client_interrupted)
{
	char port[8];
	const char *sv[] = { TOOLS "hostrdma-perf", "write_bw", "-p",
			     port_str(port, sizeof(port)), "-D", "30", NULL };
	const char *cv[] = { TOOLS "hostrdma-perf", "write_bw", "-p", port,
			     "-s", "4096", "-D", "30", "127.0.0.1", NULL };
	struct proc s, c;
	int rc;

	start(&s, sv);
	ck_assert(read_until(&s, "waiting for a client"));
	start(&c, cv);
	ck_assert(read_until(&c, "4096 B: 1 s"));
	kill(c.pid, SIGINT);
	rc = finish_within(&c, 20);
	ck_assert_msg(rc == 128 + SIGINT, "client exit %d:\n%s", rc,
		      tail(c.text->str));
	rc = finish_within(&s, 20);
	ck_assert_msg(rc == 1, "server exit %d:\n%s", rc, tail(s.text->str));
	ck_assert_msg(strstr(s.text->str, "the peer went away"),
		      "server did not name the cause:\n%s", tail(s.text->str));
	done(&c);
	done(&s);
}
END_TEST

/* hostrdma-info: ibv_devinfo's fields IT-API carries, -i PORT, and
 * --json parsed back. */
START_TEST(info_ports_and_fields)
{
	const char *json[] = { "hostrdma-info", "--json", "-d", "siw_lo", "-i",
			       "1", NULL };
	const char *text[] = { "hostrdma-info", "-d", "siw_lo", NULL };
	const char *noport[] = { "hostrdma-info", "-d", "siw_lo", "-i", "2",
				 NULL };
	g_autoptr(JsonParser) jp = json_parser_new();
	JsonObject *dev, *sp;
	JsonArray *spigots;
	GString *out;

	ck_assert_int_eq(run(json, &out), 0);
	ck_assert_msg(json_parser_load_from_data(jp, out->str, -1, NULL),
		      "%s", tail(out->str));
	dev = json_array_get_object_element(
		json_object_get_array_member(
			json_node_get_object(json_parser_get_root(jp)),
			"devices"),
		0);
	ck_assert_str_eq(json_object_get_string_member(dev, "name"), "siw_lo");
	ck_assert(strstr(json_object_get_string_member(dev, "vendor"), "siw"));
	spigots = json_object_get_array_member(dev, "spigots");
	ck_assert_uint_eq(json_array_get_length(spigots), 1);
	sp = json_array_get_object_element(spigots, 0);
	ck_assert_int_eq(json_object_get_int_member(sp, "port"), 1);
	ck_assert_str_eq(json_object_get_string_member(sp, "link_layer"),
			 "Ethernet");
	g_string_free(out, TRUE);

	ck_assert_int_eq(run(text, &out), 0);
	ck_assert(strstr(out->str, "link_layer:\t\tEthernet"));
	ck_assert(strstr(out->str, "vendor/firmware:\tsiw"));
	ck_assert(strstr(out->str, "port:\t1"));
	g_string_free(out, TRUE);

	ck_assert_int_eq(run(noport, &out), 1);
	ck_assert(strstr(out->str, "hostrdma-info: siw_lo has no port 2"));
	g_string_free(out, TRUE);
}
END_TEST

/* Refusals of perftest habits IT-API cannot follow, one line each. */
START_TEST(perf_refusals)
{
	static const char *const bad[][5] = {
		{ "write_bw", "-I", "64", NULL },
		{ "write_bw", "--report-both", NULL },
		{ "write_bw", "-a", "--run_infinitely", NULL },
		{ "write_lat", "--run_infinitely", NULL },
		{ "write_bw", "--output=latency", NULL },
		{ "write_bw", "--output=everything", NULL },
		{ "atomic_bw", "-s", "64", NULL },
		{ "write_bw", "-A", "FETCH_AND_ADD", NULL },
		{ "atomic_lat", "-A", "XOR", NULL },
		{ "atomic_bw", "-b", NULL },
	};
	static const char *const want[] = {
		"IT-API has no inline data", "--report-both goes with -b",
		"--run_infinitely runs one size", "--run_infinitely runs one size",
		"--output latency: not a number of write_bw",
		"--output everything: one of",
		"atomic tests move one 8-byte word",
		"-A is for atomic_bw and atomic_lat",
		"-A XOR: FETCH_AND_ADD or CMP_AND_SWAP",
		"atomics go one way: no -b",
	};
	const char *version[] = { "hostrdma-perf", "-V", NULL };
	GString *out;

	for (unsigned int i = 0; i < G_N_ELEMENTS(bad); i++) {
		const char *argv[8] = { "hostrdma-perf" };

		for (unsigned int k = 0; k < 5 && bad[i][k]; k++)
			argv[k + 1] = bad[i][k];
		ck_assert_int_eq(run(argv, &out), 2);
		ck_assert_msg(strstr(out->str, want[i]), "%s", out->str);
		ck_assert_uint_eq(strlen(out->str),
				  strcspn(out->str, "\n") + 1);
		g_string_free(out, TRUE);
	}
	ck_assert_int_eq(run(version, &out), 0);
	ck_assert(g_str_has_prefix(out->str, "hostrdma-perf " PACKAGE_VERSION));
	g_string_free(out, TRUE);
}
END_TEST

#ifdef HAVE_PROV_RXE
/*
 * The man page's `hostrdma-perf write_bw -L -d rxe_lo -a`, as a user
 * without privileges and the default 8 MiB RLIMIT_MEMLOCK: -L pins both
 * ends, and -a stops where both fit instead of failing to pin.
 */
START_TEST(perf_loopback_all_sizes_in_8mib_memlock)
{
	/* root: as nobody (root would lift the limit); a user: as is */
	const char *as_root[] = { "/usr/bin/prlimit", "--memlock=8388608",
				  "/usr/bin/setpriv", "--reuid=65534",
				  "--regid=65534", "--clear-groups",
				  TOOLS "hostrdma-perf", "write_bw", "-L", "-d",
				  "rxe_lo", "-a", "-n", "50", NULL };
	const char *as_user[] = { "/usr/bin/prlimit", "--memlock=8388608",
				  TOOLS "hostrdma-perf", "write_bw", "-L", "-d",
				  "rxe_lo", "-a", "-n", "50", NULL };
	struct proc p;
	GPtrArray *rows;
	int rc;

	if (access(as_root[0], X_OK) ||
	    (geteuid() == 0 && access(as_root[2], X_OK)))
		return;		/* no prlimit or setpriv here */
	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 SIW_PROVIDER_DIR ":" RXE_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	start(&p, geteuid() == 0 ? as_root : as_user);
	rc = finish_within(&p, 120);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	ck_assert_ptr_null(strstr(p.text->str, "cannot pin"));
	ck_assert(strstr(p.text->str, "-a stops at 2097152 bytes"));
	rows = rows_of(p.text->str, "2097152");
	ck_assert_uint_eq(rows->len, 1);
	g_ptr_array_unref(rows);
	done(&p);
}
END_TEST

/* perftest's ib_atomic_bw / ib_atomic_lat over soft-RoCE: -A
 * FETCH_AND_ADD (default) and CMP_AND_SWAP, 8-byte messages; soft-iWARP
 * has no atomics and says so (and -L does not hang on it). */
START_TEST(perf_atomics_rxe)
{
	const char *bw[] = { "hostrdma-perf", "atomic_bw", "-L", "-d", "rxe_lo",
			     "-n", "3000", "--json", NULL };
	const char *lat[] = { "hostrdma-perf", "atomic_lat", "-L", "-d",
			      "rxe_lo", "-A", "CMP_AND_SWAP", "-n", "500",
			      NULL };
	const char *siw[] = { "hostrdma-perf", "atomic_bw", "-L", "-d",
			      "siw_lo", "-n", "100", NULL };
	GPtrArray *j;
	GPtrArray *rows;
	JsonObject *o;
	GString *out;

	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 SIW_PROVIDER_DIR ":" RXE_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	ck_assert_int_eq(run(bw, &out), 0);
	j = json_lines(out->str);
	ck_assert_uint_eq(j->len, 1);
	o = j->pdata[0];
	ck_assert_str_eq(json_object_get_string_member(o, "test"), "atomic_bw");
	ck_assert_int_eq(json_object_get_int_member(o, "msg_size"), 8);
	ck_assert_int_eq(json_object_get_int_member(o, "iterations"), 3000);
	ck_assert(json_object_get_double_member(o, "msg_rate_mpps") > 0);
	ck_assert_str_eq(json_object_get_string_member(o, "transport"),
			 "InfiniBand/RoCE");
	g_ptr_array_unref(j);
	g_string_free(out, TRUE);

	ck_assert_int_eq(run(lat, &out), 0);
	ck_assert(strstr(out->str, "Atomic Latency Test"));
	ck_assert(strstr(out->str, "Atomic Type     : CMP_AND_SWAP"));
	rows = rows_of(out->str, "8");
	ck_assert_uint_eq(rows->len, 1);
	ck_assert_str_eq(((char **)rows->pdata[0])[1], "500");
	ck_assert(g_ascii_strtod(((char **)rows->pdata[0])[2], NULL) > 0);
	g_ptr_array_unref(rows);
	g_string_free(out, TRUE);

	ck_assert_int_eq(run(siw, &out), 1);
	ck_assert(strstr(out->str, "device siw_lo has no atomic operations"));
	g_string_free(out, TRUE);
}
END_TEST

/*
 * Two programs on one host without hostrdma-kald: a hostrdma-perf server
 * on every device holds soft-RoCE's UDP port, and a client given only
 * the address tries soft-RoCE first (it comes first here). That device
 * cannot open in the client; soft-iWARP serves, and the client says
 * nothing about soft-RoCE's port (it did, as a WARNING, on every such
 * run). Named with -d, the device's reason is shown; and when no device
 * can serve, the reason comes with the tool's own message. (Those two
 * first: the server lets the port go once a client connects.)
 */
START_TEST(perf_client_quiet_about_devices_it_skips)
{
	char port[8];
	const char *server[] = { TOOLS "hostrdma-perf", "write_bw", "-p",
				 free_port(port, sizeof(port)), NULL };
	const char *client[] = { "hostrdma-perf", "write_bw", "-n", "50",
				 "-p", port, "127.0.0.1", NULL };
	const char *named[] = { "hostrdma-perf", "write_bw", "-n", "50",
				"-d", "rxe_lo", "-p", port, "127.0.0.1",
				NULL };
	const char *list[] = { "hostrdma-info", "-l", NULL };
	struct proc s;
	GString *out;

	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 RXE_PROVIDER_DIR ":" SIW_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	/* No host service, whatever this host runs */
	g_setenv("HOSTRDMA_KALD_SOCKET", "/nonexistent/kald.sock", TRUE);
	/* The premise: soft-RoCE's loopback device comes first */
	ck_assert_int_eq(run(list, &out), 0);
	ck_assert_msg(g_str_has_prefix(out->str, "rxe_lo "), "%s", out->str);
	g_string_free(out, TRUE);
	start(&s, server);
	ck_assert_msg(read_until(&s, "waiting for a client"),
		      "the server did not listen:\n%s", tail(s.text->str));
	if (strstr(s.text->str, "4791")) {
		/* another program has the port: the client would not meet
		 * the case */
		done(&s);
		g_unsetenv("HOSTRDMA_KALD_SOCKET");
		return;
	}
	ck_assert_int_eq(run(named, &out), 1);
	ck_assert_msg(strstr(out->str, "UDP port 4791") &&
			      strstr(out->str, "hostrdma-kald") &&
			      strstr(out->str, "device rxe_lo is held by "
					       "another process"),
		      "%s", out->str);
	g_string_free(out, TRUE);

	g_setenv("HOSTRDMA_DEVICES", "rxe_lo", TRUE);
	ck_assert_int_eq(run(client, &out), 1);
	ck_assert_msg(strstr(out->str, "UDP port 4791") &&
			      strstr(out->str, "no RDMA device reaches "
					       "127.0.0.1 (1 devices, 1 did "
					       "not open)"),
		      "%s", out->str);
	g_string_free(out, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	ck_assert_int_eq(run(client, &out), 0);
	ck_assert_msg(!strstr(out->str, "WARNING") &&
			      !strstr(out->str, "4791"),
		      "the client spoke of a device it did not use:\n%s",
		      out->str);
	ck_assert_msg(strstr(out->str, "Device         : siw_lo"), "%s",
		      out->str);
	g_string_free(out, TRUE);

	ck_assert_int_eq(finish_within(&s, 20), 0);
	done(&s);
	g_unsetenv("HOSTRDMA_KALD_SOCKET");
}
END_TEST

/* RoCE ports: link layer Ethernet, an MTU, the GIDs. */
START_TEST(info_rxe_gids_mtu)
{
	const char *json[] = { "hostrdma-info", "--json", "-d", "rxe_lo",
			       NULL };
	g_autoptr(JsonParser) jp = json_parser_new();
	JsonObject *sp;
	JsonArray *gids;
	GString *out;
	bool v4 = false;

	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 SIW_PROVIDER_DIR ":" RXE_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	ck_assert_int_eq(run(json, &out), 0);
	ck_assert_msg(json_parser_load_from_data(jp, out->str, -1, NULL),
		      "%s", tail(out->str));
	sp = json_array_get_object_element(
		json_object_get_array_member(
			json_array_get_object_element(
				json_object_get_array_member(
					json_node_get_object(
						json_parser_get_root(jp)),
					"devices"),
				0),
			"spigots"),
		0);
	ck_assert_str_eq(json_object_get_string_member(sp, "link_layer"),
			 "Ethernet");
	ck_assert_int_ge(json_object_get_int_member(sp, "active_mtu"), 256);
	gids = json_object_get_array_member(sp, "gids");
	for (guint i = 0; i < json_array_get_length(gids); i++)
		v4 |= !strcmp(json_array_get_string_element(gids, i),
			      "::ffff:127.0.0.1");
	ck_assert_msg(v4, "%s", out->str);
	g_string_free(out, TRUE);
}
END_TEST
#endif /* HAVE_PROV_RXE */
#endif /* HAVE_PROV_SIW */

/* suite_tools()'s "habits" case. */
void tools_add_habits_case(Suite *s)
{
	TCase *tc = tcase_create("habits");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, bad_numbers_named);
	tcase_add_test(tc, glib_quotes_in_utf8_locale);
	tcase_add_test(tc, man_pages_match_help);
#ifdef HAVE_PROV_SIW
	tcase_add_checked_fixture(tc, env_siw, NULL);
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_add_test(tc, ping_server_sigterm);
	tcase_add_test(tc, ping_client_gone_is_normal_end);
	tcase_add_test(tc, perf_perftest_layout);
	tcase_add_test(tc, perf_perftest_flags);
	tcase_add_test(tc, perf_run_infinitely);
	tcase_add_test(tc, perf_client_interrupted);
	tcase_add_test(tc, perf_refusals);
	tcase_add_test(tc, info_ports_and_fields);
#ifdef HAVE_PROV_RXE
	tcase_add_test(tc, perf_loopback_all_sizes_in_8mib_memlock);
	tcase_add_test(tc, info_rxe_gids_mtu);
	tcase_add_test(tc, perf_atomics_rxe);
	tcase_add_test(tc, perf_client_quiet_about_devices_it_skips);
#endif
#endif
	suite_add_tcase(s, tc);
}
