/* SPDX-License-Identifier: MIT */
/*
 * tools, over soft-RoCE: hostrdma-perf and hostrdma-ping on rxe_lo, a short
 * itapi-scale pass, ping stopped by SIGINT and a client that fails, and
 * the demo over both transports. The suite and the process helpers are in
 * check_tools.c.
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
#include "tests/testutil_ns.h"
#include "tools/perf_priv.h"
#include "tools/ping_wire.h"

#if defined(HAVE_PROV_SIW) && defined(HAVE_PROV_RXE)

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

/*
 * atomic_bw / atomic_lat, both atomic types, several QPs for the
 * bandwidth test: with --verify the server's target words must add up to
 * the client's count (each atomic done once, Compare-and-Swap finding
 * the value it expects every time). soft-iWARP has no atomics: refused,
 * naming the device.
 */
START_TEST(perf_atomics_rxe)
{
	static const char *const tests[] = { "atomic_bw", "atomic_lat" };
	static const char *const types[] = { "FETCH_AND_ADD",
					     "CMP_AND_SWAP" };
	char port[8];
	const char *siw[] = { TOOLS "hostrdma-perf", "atomic_bw", "-L", "-d",
			      "siw_lo", "-p", free_port(port, sizeof(port)),
			      NULL };
	struct proc p;
	int rc;

	for (unsigned int i = 0; i < 4; i++) {
		bool bw = i < 2;
		const char *argv[] = { TOOLS "hostrdma-perf", tests[!bw], "-L",
				       "-d", "rxe_lo", "-p",
				       free_port(port, sizeof(port)), "-A",
				       types[i % 2], "-n", "300", "-q",
				       bw ? "3" : "1", "--verify", "--json",
				       NULL };
		GPtrArray *j;

		rc = run_rxe(&p, argv);
		ck_assert_msg(rc == 0, "%s -A %s: exit %d:\n%s", tests[!bw],
			      types[i % 2], rc, tail(p.text->str));
		j = json_lines(p.text->str);
		ck_assert_uint_eq(j->len, 1);
		ck_assert_str_eq(json_object_get_string_member(j->pdata[0],
							       "test"),
				 tests[!bw]);
		ck_assert_int_eq(json_object_get_int_member(j->pdata[0],
							    "msg_size"),
				 8);
		ck_assert_int_eq(json_object_get_int_member(j->pdata[0],
							    "iterations"),
				 bw ? 900 : 300);
		assert_verified(j->pdata[0]);
		if (!bw)
			ck_assert(json_object_get_double_member(
					  j->pdata[0], "lat_us_min") > 0);
		g_ptr_array_unref(j);
		done(&p);
	}
	rc = run_rxe(&p, siw);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(p.text->str,
			     "device siw_lo has no atomic operations"),
		      "%s", tail(p.text->str));
	done(&p);
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
	ck_assert_msg(strstr(p.text->str, "rxe_lo: connection to 127.0.0.1 port ") &&
			      strstr(p.text->str, "timed out: no answer (IT_CN_REJ_TIMEOUT)"),
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

/*
 * Device selection, as a user meets it: no HOSTRDMA_DEVICES, both
 * providers in the order an installed prefix loads them (rxe before siw),
 * each end a process of its own. Only one process can hold soft-RoCE's
 * UDP port, so the second one's rxe_lo does not open and it moves on.
 */
static void env_setup_installed(void)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH",
		 RXE_PROVIDER_DIR ":" SIW_PROVIDER_DIR, TRUE);
	g_unsetenv("HOSTRDMA_DEVICES");
	g_unsetenv("HOSTRDMA_OPTIONS");
	g_unsetenv("HOSTRDMA_CM_TIMEOUT_MS");
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

#define ASSERT_HAS(p, what)                                                 \
	ck_assert_msg(strstr((p)->text->str, (what)), "no \"%s\" in:\n%s",  \
		      (what), tail((p)->text->str))

/* A ping server started with @sargs (after -s -p PORT -C 2) and a client
 * given only 127.0.0.1, with -d; both must end well. */
static void select_pair(const char *const *sargs, struct proc *s,
			struct proc *c)
{
	char port[8];
	const char *sargv[12] = { TOOLS "hostrdma-ping", "-s", "-p",
				  free_port(port, sizeof(port)), "-C", "2" };
	const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a", "127.0.0.1",
				"-p", port, "-C", "2", "-d", NULL };
	int i, rc;

	for (i = 0; sargs[i]; i++)
		sargv[6 + i] = sargs[i];
	start(s, sargv);
	ck_assert_msg(read_until(s, "waiting for a client"), "%s",
		      tail(s->text->str));
	start(c, cargv);
	rc = finish_within(c, 60);
	ck_assert_msg(rc == 0, "client exit %d:\n%s", rc, tail(c->text->str));
	rc = finish_within(s, 30);
	ck_assert_msg(rc == 0, "server exit %d:\n%s", rc, tail(s->text->str));
}

/* Server on every device (it holds rxe_lo's port), client given only the
 * address: its rxe_lo does not open, said once in plain words, and siw_lo
 * connects. */
START_TEST(select_server_everywhere)
{
	const char *sargs[] = { "-d", NULL };
	struct proc s, c;

	select_pair(sargs, &s, &c);
	ASSERT_HAS(&s, "(4 devices)");
	ASSERT_HAS(&c, "rxe_lo: did not open (IT_ERR_RESOURCES)");
	ck_assert_int_eq(count(c.text->str, "owns soft-RoCE's UDP port 4791"),
			 1);
	ASSERT_HAS(&c, "connected over siw_lo");
	ck_assert_ptr_null(strstr(c.text->str, "Address already in use"));
	done(&s);
	done(&c);
}
END_TEST

/* Server on soft-iWARP only: the client's rxe_lo opens (nobody holds the
 * port), is refused at once, and siw_lo connects. */
START_TEST(select_server_siw_only)
{
	const char *sargs[] = { "-D", "siw_lo", "-d", NULL };
	struct proc s, c;

	select_pair(sargs, &s, &c);
	ASSERT_HAS(&c, "trying rxe_lo");
	ASSERT_HAS(&c, "rxe_lo: connection refused: nobody listens on port");
	ASSERT_HAS(&c, "connected over siw_lo");
	done(&s);
	done(&c);
}
END_TEST

/* -s -a 127.0.0.1 listens on every device holding the address, the
 * soft-RoCE one included (its GID is the IPv4-mapped address). */
START_TEST(select_server_address_rxe)
{
	const char *sargs[] = { "-a", "127.0.0.1", "-d", NULL };
	struct proc s, c;

	select_pair(sargs, &s, &c);
	ASSERT_HAS(&s, "(2 devices)");
	ASSERT_HAS(&c, "connected over siw_lo");
	done(&s);
	done(&c);
}
END_TEST

/* Listing binds nothing: hostrdma-info -l while another process holds
 * UDP 4791 lists rxe_lo without a word about the port. */
START_TEST(select_list_while_port_held)
{
	char port[8];
	const char *sargv[] = { TOOLS "hostrdma-ping", "-s", "-p",
				free_port(port, sizeof(port)), "-d", NULL };
	const char *largv[] = { TOOLS "hostrdma-info", "-l", NULL };
	struct proc s, l;
	int rc;

	start(&s, sargv);
	ck_assert_msg(read_until(&s, "waiting for a client"), "%s",
		      tail(s.text->str));
	start(&l, largv);
	rc = finish_within(&l, 30);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(l.text->str));
	ASSERT_HAS(&l, "rxe_lo");
	ASSERT_HAS(&l, "siw_lo");
	ck_assert_msg(!strstr(l.text->str, "4791") &&
			      !strstr(l.text->str, "in use") &&
			      !strstr(l.text->str, "WARNING"),
		      "%s", tail(l.text->str));
	kill(s.pid, SIGKILL);	/* the server waits on, -C 0 */
	finish_within(&s, 30);
	done(&s);
	done(&l);
}
END_TEST

/* Messages: an unknown device lists those there are; nobody listening is
 * a refusal, not a time-out. */
START_TEST(select_messages)
{
	char port[8];
	const char *bad[] = { TOOLS "hostrdma-ping", "-c", "-a", "127.0.0.1",
			      "-p", free_port(port, sizeof(port)), "-D",
			      "mlx5_0", NULL };
	const char *nobody[] = { TOOLS "hostrdma-ping", "-c", "-a",
				 "127.0.0.1", "-p", port, "-D", "siw_lo",
				 NULL };
	const char *info[] = { TOOLS "hostrdma-info", "-d", "mlx5_0", NULL };
	struct proc p;

	start(&p, bad);
	ck_assert_int_eq(finish_within(&p, 30), 1);
	ASSERT_HAS(&p, "there is no device mlx5_0 (IT_ERR_INVALID_NAME); the devices here: ");
	ASSERT_HAS(&p, "siw_lo");
	done(&p);
	start(&p, nobody);
	ck_assert_int_eq(finish_within(&p, 30), 1);
	ASSERT_HAS(&p, "connection refused: nobody listens on port");
	ck_assert_ptr_null(strstr(p.text->str, "timed out"));
	done(&p);
	start(&p, info);
	ck_assert_int_eq(finish_within(&p, 30), 1);
	ASSERT_HAS(&p, "there is no device mlx5_0 (IT_ERR_INVALID_NAME); the devices here: ");
	ASSERT_HAS(&p, "siw_lo");
	done(&p);
}
END_TEST

/* A server on every device whose port another server holds on one of
 * them says so, and listens on the others. */
START_TEST(select_port_busy_on_one_device)
{
	char port[8];
	const char *first[] = { TOOLS "hostrdma-ping", "-s", "-p",
				free_port(port, sizeof(port)), "-D", "siw_lo",
				"-d", NULL };
	const char *second[] = { TOOLS "hostrdma-ping", "-s", "-p", port,
				 "-d", NULL };
	g_autofree char *want = g_strdup_printf("port %s is in use on siw_lo",
						port);
	struct proc a, b;

	start(&a, first);
	ck_assert_msg(read_until(&a, "waiting for a client"), "%s",
		      tail(a.text->str));
	start(&b, second);
	ck_assert_msg(read_until(&b, "waiting for a client"), "%s",
		      tail(b.text->str));
	ASSERT_HAS(&b, want);
	ASSERT_HAS(&b, "; listening on the other devices");
	kill(a.pid, SIGKILL);
	kill(b.pid, SIGKILL);
	finish_within(&a, 30);
	finish_within(&b, 30);
	done(&a);
	done(&b);
}
END_TEST

/* Runs hostrdma-ping -c -a @addr -p @port in the child's namespace; its
 * exit status in *@rc; returns what it printed on stderr. */
static char *ping_in_ns(const char *addr, const char *port, int *rc)
{
	const char *argv[] = { TOOLS "hostrdma-ping", "-c", "-a", addr, "-p",
			       port, "-C", "1", NULL };
	g_autofree char *out = NULL;
	char *err = NULL;
	g_autoptr(GError) e = NULL;
	int st;

	tu_child_assert(g_spawn_sync(NULL, (char **)argv, NULL,
				     G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
				     &st, &e),
			"spawn: %s", e ? e->message : "?");
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return err;
}

static void child_unreachable(void *unused)
{
	g_autofree char *gone = NULL, *nobody = NULL;
	struct tu_ns ns;
	char port[8];
	int rc;

	/* RoCE's CM waits for silence: 2 s, not the default 10. */
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", TRUE);
	tu_ns_setup(&ns, "hru0", "hrup0");
	tu_child_assert(!tu_ns_addr_add(ns.sk, ns.ifindex, "10.79.0.1/24"),
			"address");
	tu_child_assert(!tu_ns_addr_add(ns.peer_sk, ns.peer_ifindex,
					"10.79.0.2/24"),
			"peer address");
	free_port(port, sizeof(port));
	/* Nobody answers ARP for .9: soft-iWARP's SYN comes back
	 * EHOSTUNREACH; soft-RoCE's REQ gets no answer at all. */
	gone = ping_in_ns("10.79.0.9", port, &rc);
	tu_child_assert(rc == 1, "rc %d: %s", rc, gone);
	tu_child_assert(strstr(gone, "siw_hru0: 10.79.0.9 is unreachable: no route or host down (IT_CN_REJ_BAD_PATH)"),
			"no unreachable message: %s", gone);
	tu_child_assert(strstr(gone, "rxe_hru0: connection to 10.79.0.9 port"),
			"rxe not tried: %s", gone);
	tu_child_assert(strstr(gone, "timed out: no answer (IT_CN_REJ_TIMEOUT)"),
			"no time-out message: %s", gone);
	/* The peer's address answers, nobody listens: TCP refuses at once.
	 * Nothing there runs RoCE: its ICMP port unreachable does not reach
	 * the IB CM (as with the kernel's rxe and rdma_cm), a time-out. */
	nobody = ping_in_ns("10.79.0.2", port, &rc);
	tu_child_assert(rc == 1, "rc %d: %s", rc, nobody);
	tu_child_assert(strstr(nobody, "siw_hru0: connection refused: nobody listens on port"),
			"siw: %s", nobody);
	tu_child_assert(!strstr(nobody, "unreachable"),
			"refusal read as unreachable: %s", nobody);
	tu_ns_teardown(&ns);
}

/* The three ways a connection fails read differently, without -D: a
 * host that does not answer (unreachable on iWARP, whose TCP learns it;
 * a time-out on RoCE, whose CM only sees silence) and a refusal. */
START_TEST(select_unreachable)
{
	tu_run_child(child_unreachable, NULL);
}
END_TEST

/* suite_tools()'s "select" case. */
void tools_add_select_case(Suite *s)
{
	TCase *tc = tcase_create("select");

	tcase_add_checked_fixture(tc, env_setup_installed, NULL);
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, select_server_everywhere);
	tcase_add_test(tc, select_server_siw_only);
	tcase_add_test(tc, select_server_address_rxe);
	tcase_add_test(tc, select_list_while_port_held);
	tcase_add_test(tc, select_messages);
	tcase_add_test(tc, select_port_busy_on_one_device);
	tcase_add_test(tc, select_unreachable);
	suite_add_tcase(s, tc);
}

/* suite_tools()'s "rxe" case. */
void tools_add_rxe_case(Suite *s)
{
	TCase *tc = tcase_create("rxe");

	tcase_add_checked_fixture(tc, env_setup_both, NULL);
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, perf_loopback_rxe);
	tcase_add_test(tc, perf_atomics_rxe);
	tcase_add_test(tc, ping_loopback_rxe);
	tcase_add_test(tc, scale_short_rxe);
	tcase_add_test(tc, ping_loopback_sigint);
	tcase_add_test(tc, ping_loopback_client_fails);
	tcase_add_test(tc, demo_both_transports);
	suite_add_tcase(s, tc);
}
#endif
