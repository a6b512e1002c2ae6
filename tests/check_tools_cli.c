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

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

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
		{ "hostrdma-perf", "write_bw", "-q", "17", NULL },
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
	int rc, n;

	/* -P: one server for both clients; it stops on SIGTERM. */
	start(&s, sargv);
	ck_assert(read_until(&s, "waiting for a client"));
	start(&c, cargv);
	ck_assert(read_until(&c, "ping data: rdma-ping-20: "));
	kill(c.pid, SIGKILL);
	ck_assert_int_eq(finish_within(&c, 10), 128 + SIGKILL);
	done(&c);
	ck_assert(read_until(&s, "the client left after"));

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
	ck_assert(read_until(&s, "rounds of up to 64 bytes"));
	ck_assert_int_eq(rounds_said(strstr(s.text->str, "the client left"),
				     "hostrdma-ping: server: "),
			 n);
	kill(s.pid, SIGTERM);
	rc = finish_within(&s, 10);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s.text->str));
	done(&c);
	done(&s);
}
END_TEST
#endif /* HAVE_PROV_SIW */

/* suite_tools()'s "habits" case. */
void tools_add_habits_case(Suite *s)
{
	TCase *tc = tcase_create("habits");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, bad_numbers_named);
	tcase_add_test(tc, glib_quotes_in_utf8_locale);
#ifdef HAVE_PROV_SIW
	tcase_add_checked_fixture(tc, env_siw, NULL);
	tcase_add_test(tc, ping_server_sigterm);
	tcase_add_test(tc, ping_client_gone_is_normal_end);
#endif
	suite_add_tcase(s, tc);
}
