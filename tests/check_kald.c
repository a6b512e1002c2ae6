/* SPDX-License-Identifier: MIT */
/*
 * Suite kald: the host service, hostrdma-kald, started with --foreground
 * on a socket of the test's own. Steering by QPN range through the
 * sockets it hands out, QP1's CM MADs routed by service ID and by the
 * range in a communication ID, a garbage-sending client disconnected
 * while the others carry on, a killed process's range drained and reused
 * only after it went quiet (IPv4 and IPv6), two pairs of hostrdma-ping
 * processes on rxe_lo at once through it, the daemon killed and started
 * again under traffic, running processes (tests/itapi-peer shells) making
 * new connections across a restart, and without it today's embedded
 * behaviour with its one clear message.
 *
 * The daemon binds UDP 4791 on 127.0.0.1 and ::1: run under the test
 * lock like every soft-RoCE suite.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "it_api.h"
#include "kal/kal.h"
#include "tests/check_tools.h"
#include "tests/suites.h"
#include "tests/testutil_rxe.h"
#include "vp/rxe/rxe.h"

#if defined(HAVE_PROV_SIW) && defined(HAVE_PROV_RXE)

#define QUIET_MS 300

struct kald_run {
	pid_t pid;
	char *dir;
	char *sock;
	char *log;
};

/* A daemon on @k's socket (again, after kald_start), logging to @k->log. */
static void kald_spawn(struct kald_run *k)
{
	char quiet[16];
	int i;

	snprintf(quiet, sizeof(quiet), "%d", QUIET_MS);
	k->pid = fork();
	ck_assert_int_ge(k->pid, 0);
	if (k->pid == 0) {
		int fd = open(k->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 2);
		setenv("G_MESSAGES_DEBUG", "hostrdma-kald", 1);
		execl(KALD_PROG, KALD_PROG, "--foreground", "--socket",
		      k->sock, "--quiet-ms", quiet, (char *)NULL);
		_exit(127);
	}
	tools_track_pid(k->pid);
	for (i = 0; i < 500; i++) {
		struct kal_hostsvc *hs;

		if (kal_hostsvc_connect(k->sock, &hs) == 0) {
			kal_hostsvc_close(hs);
			break;
		}
		g_usleep(10000);
	}
	ck_assert_msg(i < 500, "hostrdma-kald did not come up");
}

static void kald_start(struct kald_run *k)
{
	k->dir = g_dir_make_tmp("kald-XXXXXX", NULL);
	ck_assert_ptr_nonnull(k->dir);
	k->sock = g_build_filename(k->dir, "kald.sock", NULL);
	k->log = g_build_filename(k->dir, "kald.log", NULL);
	kald_spawn(k);
}

static char *kald_log(struct kald_run *k)
{
	char *text = NULL;

	g_file_get_contents(k->log, &text, NULL, NULL);
	return text ? text : g_strdup("");
}

static void kald_stop(struct kald_run *k)
{
	int status;

	kill(k->pid, SIGTERM);
	ck_assert_int_eq(waitpid(k->pid, &status, 0), k->pid);
	tools_untrack_pid(k->pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		g_autofree char *log = kald_log(k);

		ck_abort_msg("hostrdma-kald ended with status 0x%x:\n%s",
			     status, tail(log));
	}
	unlink(k->log);
	{
		/* Its keeper, with no process left to keep, is gone or
		 * going: what it leaves is ours to clear. */
		g_autofree char *keep = g_strconcat(k->sock, ".keep", NULL);

		unlink(keep);
	}
	unlink(k->sock);
	rmdir(k->dir);
	g_free(k->dir);
	g_free(k->sock);
	g_free(k->log);
}

/* The daemon dies (SIGKILL); its keeper stays. */
static void kald_kill(struct kald_run *k)
{
	int status;

	kill(k->pid, SIGKILL);
	ck_assert_int_eq(waitpid(k->pid, &status, 0), k->pid);
	tools_untrack_pid(k->pid);
}

static struct kal_hostsvc *client(struct kald_run *k)
{
	struct kal_hostsvc *hs = NULL;

	ck_assert_int_eq(kal_hostsvc_connect(k->sock, &hs), 0);
	return hs;
}

struct share {
	int udp, fwd;
	uint32_t base, count;
};

static void take(struct kal_hostsvc *hs, int family, struct share *s)
{
	struct sockaddr_storage ss = { .ss_family = family };
	socklen_t len;

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
		len = sizeof(struct sockaddr_in6);
	}
	ck_assert_int_eq(kal_hostsvc_udp(hs, (struct sockaddr *)&ss, len,
					 &s->udp, &s->fwd, &s->base,
					 &s->count), 0);
	ck_assert_uint_eq(s->count, 1u << KAL_HOSTSVC_QPN_SHIFT);
	ck_assert_uint_eq(s->base % s->count, 0);
	ck_assert_uint_gt(s->base, 0);
}

static void share_close(struct share *s)
{
	close(s->udp);
	close(s->fwd);
}

/* A RoCEv2-looking datagram to QP @qpn on loopback:4791: a BTH (UD
 * SEND_ONLY) and @tag after it. */
static void send_to_qp(int family, uint32_t qpn, uint32_t tag)
{
	uint8_t p[32] = { 0x64, 0, 0xff, 0xff };
	struct sockaddr_storage ss = { .ss_family = family };
	socklen_t len;
	int fd = socket(family, SOCK_DGRAM, 0);

	ck_assert_int_ge(fd, 0);
	p[5] = (uint8_t)(qpn >> 16);
	p[6] = (uint8_t)(qpn >> 8);
	p[7] = (uint8_t)qpn;
	memcpy(p + 12, &tag, 4);
	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
		((struct sockaddr_in *)&ss)->sin_port = htons(4791);
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_addr = in6addr_loopback;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(4791);
		len = sizeof(struct sockaddr_in6);
	}
	ck_assert_int_eq(sendto(fd, p, sizeof(p), 0, (struct sockaddr *)&ss,
				len), (ssize_t)sizeof(p));
	close(fd);
}

/* The next datagram on @fd within @ms: its tag, or 0 for none. */
static uint32_t recv_tag(int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint8_t p[64];
	uint32_t tag;
	ssize_t n;

	if (poll(&pf, 1, ms) != 1)
		return 0;
	n = recv(fd, p, sizeof(p), MSG_DONTWAIT);
	ck_assert_int_eq(n, 32);
	memcpy(&tag, p + 12, 4);
	return tag;
}

/* Two clients, two ranges: every range's first, middle and last QPN
 * lands in its owner's socket and nowhere else, over IPv4 and IPv6; QPNs
 * nobody holds reach nobody. */
START_TEST(kald_steer_ranges)
{
	struct kald_run k;
	struct kal_hostsvc *hs[2];
	struct share s4[2], s6[2];
	uint32_t tag = 1;
	int i, j, f;

	kald_start(&k);
	for (i = 0; i < 2; i++) {
		hs[i] = client(&k);
		take(hs[i], AF_INET, &s4[i]);
		take(hs[i], AF_INET6, &s6[i]);
		ck_assert_uint_eq(s6[i].base, s4[i].base);
	}
	ck_assert_uint_ne(s4[0].base, s4[1].base);
	for (f = 0; f < 2; f++) {
		struct share *s = f ? s6 : s4;
		int family = f ? AF_INET6 : AF_INET;

		for (i = 0; i < 2; i++) {
			uint32_t q[3] = { s[i].base,
					  s[i].base + s[i].count / 2,
					  s[i].base + s[i].count - 1 };

			for (j = 0; j < 3; j++, tag++) {
				send_to_qp(family, q[j], tag);
				ck_assert_uint_eq(recv_tag(s[i].udp, 2000),
						  tag);
				ck_assert_uint_eq(recv_tag(s[!i].udp, 50), 0);
			}
		}
		/* QP1 (not a MAD), and a range past the group's sockets. */
		send_to_qp(family, 1, tag++);
		send_to_qp(family, 0xfe0001, tag++);
		for (i = 0; i < 2; i++) {
			ck_assert_uint_eq(recv_tag(s[i].udp, 100), 0);
			ck_assert_uint_eq(recv_tag(s[i].fwd, 10), 0);
		}
	}
	for (i = 0; i < 2; i++) {
		share_close(&s4[i]);
		share_close(&s6[i]);
		kal_hostsvc_close(hs[i]);
	}
	kald_stop(&k);
}
END_TEST

/*
 * A second daemon on another control socket (bench/run's beside the
 * host's) must not join the first one's group on 127.0.0.1:4791: its
 * client is refused with EADDRINUSE and its log says why, and every
 * datagram for the first daemon's client still reaches that client. Once
 * the first daemon has stopped, its keeper is gone too and the second
 * takes the port at once.
 */
START_TEST(kald_second_daemon)
{
	struct kald_run k1, k2;
	struct kal_hostsvc *hs1, *hs2;
	struct sockaddr_in lo = { .sin_family = AF_INET };
	struct share s1, s2;
	g_autofree char *log = NULL;
	uint32_t tag;

	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	kald_start(&k1);
	hs1 = client(&k1);
	take(hs1, AF_INET, &s1);
	kald_start(&k2);
	hs2 = client(&k2);
	ck_assert_int_eq(kal_hostsvc_udp(hs2, (struct sockaddr *)&lo,
					 sizeof(lo), &s2.udp, &s2.fwd,
					 &s2.base, &s2.count),
			 -EADDRINUSE);
	log = kald_log(&k2);
	ck_assert_msg(strstr(log, "127.0.0.1:4791: soft-RoCE's port is held "
				  "already, not joined"),
		      "second daemon's log:\n%s", tail(log));
	for (tag = 1; tag <= 32; tag++) {
		send_to_qp(AF_INET, s1.base + tag, tag);
		ck_assert_uint_eq(recv_tag(s1.udp, 2000), tag);
	}
	share_close(&s1);
	kal_hostsvc_close(hs1);
	/* Nothing left to keep: the first daemon's keeper has let go of
	 * the port by the time the daemon has exited. */
	kald_stop(&k1);
	ck_assert_int_eq(kal_hostsvc_udp(hs2, (struct sockaddr *)&lo,
					 sizeof(lo), &s2.udp, &s2.fwd,
					 &s2.base, &s2.count), 0);
	send_to_qp(AF_INET, s2.base, 7);
	ck_assert_uint_eq(recv_tag(s2.udp, 2000), 7);
	share_close(&s2);
	kal_hostsvc_close(hs2);
	kald_stop(&k2);
}
END_TEST

/* A CM MAD to QP1 on 127.0.0.1: BTH, DETH, the MAD header with @attr,
 * then @id1 at payload offset 0 (8 bytes) and @id2 at 8 (8 bytes). */
static size_t cm_mad(uint8_t *p, uint16_t attr, uint64_t w0, uint64_t w1)
{
	uint8_t *mad = p + 20, *data = mad + 24;
	int i;

	memset(p, 0, 20 + 256 + 4);
	p[0] = 0x64;
	p[7] = 1;			/* DestQP 1 */
	mad[0] = 1;
	mad[1] = 0x07;			/* CM class */
	mad[2] = 2;
	mad[3] = 0x03;			/* Send */
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	for (i = 0; i < 8; i++) {
		data[i] = (uint8_t)(w0 >> (56 - 8 * i));
		data[8 + i] = (uint8_t)(w1 >> (56 - 8 * i));
	}
	return 20 + 256 + 4;
}

/* The next forwarded datagram on @fwd: its length (0: none), checked
 * against @want, with the sender's port @sport. */
static size_t recv_fwd(int fwd, const uint8_t *want, size_t len,
		       uint16_t sport, int ms)
{
	struct pollfd pf = { .fd = fwd, .events = POLLIN };
	uint8_t buf[sizeof(struct kal_hostsvc_fwd) + 512];
	struct kal_hostsvc_fwd h;
	ssize_t n;

	if (poll(&pf, 1, ms) != 1)
		return 0;
	n = recv(fwd, buf, sizeof(buf), MSG_DONTWAIT);
	ck_assert_int_eq(n, (ssize_t)(sizeof(h) + len));
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.magic, KAL_HOSTSVC_MAGIC);
	ck_assert_uint_eq(h.len, len);
	ck_assert_int_eq(h.src.ss_family, AF_INET);
	ck_assert_uint_eq(ntohs(((struct sockaddr_in *)&h.src)->sin_port),
			  sport);
	ck_assert_mem_eq(buf + sizeof(h), want, len);
	return len;
}

/* REQ by service ID to the listener's process, REP and DREQ by the range
 * in their remote comm ID, SIDR_REP by its request ID; a service ID is
 * one process's; unknown ones reach nobody. */
START_TEST(kald_cm_routing)
{
	const uint64_t sid = 0x0000000001060000ull | 7474;
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in to = me;
	socklen_t sl = sizeof(me);
	struct kald_run k;
	struct kal_hostsvc *a, *b;
	struct share sa, sb;
	uint8_t mad[300];
	size_t len;
	int fd;

	kald_start(&k);
	a = client(&k);
	b = client(&k);
	take(a, AF_INET, &sa);
	take(b, AF_INET, &sb);
	ck_assert_int_eq(kal_hostsvc_listen(a, sid, true), 0);
	ck_assert_int_eq(kal_hostsvc_listen(a, sid, true), 0);
	ck_assert_int_eq(kal_hostsvc_listen(b, sid, true), -EADDRINUSE);
	ck_assert_int_eq(kal_hostsvc_listen(b, sid, false), -ENOENT);

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&me, &sl), 0);
	to.sin_port = htons(4791);

	/* REQ: local comm ID 0x1234, service ID at payload offset 8. */
	len = cm_mad(mad, 0x10, 0x1234ull << 32, sid);
	ck_assert_int_eq(sendto(fd, mad, len, 0, (struct sockaddr *)&to,
				sizeof(to)), (ssize_t)len);
	ck_assert_uint_eq(recv_fwd(sa.fwd, mad, len, ntohs(me.sin_port),
				   2000), len);
	ck_assert_uint_eq(recv_fwd(sb.fwd, mad, len, 0, 50), 0);

	/* REP and DREQ to b's comm ID, SIDR_REP to a's request ID. */
	len = cm_mad(mad, 0x13, 0x99ull << 32 | (sb.base >> 16) << 24 | 5, 0);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd(sb.fwd, mad, len, ntohs(me.sin_port),
				   2000), len);
	ck_assert_uint_eq(recv_fwd(sa.fwd, mad, len, 0, 50), 0);
	len = cm_mad(mad, 0x15, 0x99ull << 32 | (sb.base >> 16) << 24 | 5, 0);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd(sb.fwd, mad, len, ntohs(me.sin_port),
				   2000), len);
	len = cm_mad(mad, 0x18, (uint64_t)((sa.base >> 16) << 24 | 9) << 32,
		     0);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd(sa.fwd, mad, len, ntohs(me.sin_port),
				   2000), len);

	/* Nobody's: a REQ for another service ID, a REP to range 0x7f. */
	len = cm_mad(mad, 0x10, 0x1234ull << 32, sid + 1);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	len = cm_mad(mad, 0x13, 0x99ull << 32 | 0x7fu << 24, 0);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd(sa.fwd, mad, len, 0, 100), 0);
	ck_assert_uint_eq(recv_fwd(sb.fwd, mad, len, 0, 10), 0);

	/* a lets go of the service ID: b may take it. */
	ck_assert_int_eq(kal_hostsvc_listen(a, sid, false), 0);
	ck_assert_int_eq(kal_hostsvc_listen(b, sid, true), 0);
	close(fd);
	share_close(&sa);
	share_close(&sb);
	kal_hostsvc_close(a);
	kal_hostsvc_close(b);
	kald_stop(&k);
}
END_TEST

/* A process cannot replace the group's steering program through the
 * socket it was handed (the daemon locked it: EPERM), and steering stays
 * as it was. */
START_TEST(kald_steer_locked)
{
	struct sock_filter f[] = { { BPF_RET | BPF_K, 0, 0, 0 } };
	struct sock_fprog prog;
	struct kald_run k;
	struct kal_hostsvc *hs[2];
	struct share sh[2];
	int i, one = 0;

	memset(&prog, 0, sizeof(prog));	/* its padding too (valgrind) */
	prog.len = 1;
	prog.filter = f;
	kald_start(&k);
	for (i = 0; i < 2; i++) {
		hs[i] = client(&k);
		take(hs[i], AF_INET, &sh[i]);
	}
	/* "Everything to socket 0": refused on either process's socket. */
	for (i = 0; i < 2; i++) {
		errno = 0;
		ck_assert_int_eq(setsockopt(sh[i].udp, SOL_SOCKET,
					    SO_ATTACH_REUSEPORT_CBPF, &prog,
					    sizeof(prog)), -1);
		ck_assert_int_eq(errno, EPERM);
		/* Nor can it unlock its socket. */
		ck_assert_int_eq(setsockopt(sh[i].udp, SOL_SOCKET,
					    SO_LOCK_FILTER, &one,
					    sizeof(one)), -1);
	}
	for (i = 0; i < 2; i++) {
		send_to_qp(AF_INET, sh[i].base + 3, 200 + i);
		ck_assert_uint_eq(recv_tag(sh[i].udp, 2000), 200 + i);
		ck_assert_uint_eq(recv_tag(sh[1 - i].udp, 50), 0);
	}
	for (i = 0; i < 2; i++) {
		share_close(&sh[i]);
		kal_hostsvc_close(hs[i]);
	}
	kald_stop(&k);
}
END_TEST

/* A forwarded MAD on @fwd within @ms into @out (280 bytes): 0 for none,
 * else its length; *@src where it came from. */
static size_t recv_fwd_any(int fwd, uint8_t *out, struct sockaddr_storage *src,
			   int ms)
{
	struct pollfd pf = { .fd = fwd, .events = POLLIN };
	uint8_t buf[sizeof(struct kal_hostsvc_fwd) + 512];
	struct kal_hostsvc_fwd h;
	ssize_t n;

	if (poll(&pf, 1, ms) != 1)
		return 0;
	n = recv(fwd, buf, sizeof(buf), MSG_DONTWAIT);
	ck_assert_int_ge(n, (ssize_t)sizeof(h));
	memcpy(&h, buf, sizeof(h));
	ck_assert_uint_eq(h.len, (size_t)n - sizeof(h));
	ck_assert_uint_le(h.len, 280);
	memcpy(out, buf + sizeof(h), h.len);
	*src = h.src;
	return h.len;
}

/* The ICRC of a 280-byte QP1 datagram from @from to 127.0.0.1:4791 (IPv4
 * ID 0, DF: what an unconnected IP_PMTUDISC_DO socket sends). */
static uint32_t icrc_to_lo(const uint8_t *p, const struct sockaddr_in *from)
{
	struct rxe_icrc_addr a = { .family = AF_INET, .dport = 4791,
				   .df = true };

	a.sport = ntohs(from->sin_port);
	memcpy(a.saddr, &from->sin_addr, 4);
	memcpy(a.daddr, &(uint32_t){ htonl(INADDR_LOOPBACK) }, 4);
	return rxe_icrc_packet(&a, p, 276);
}

/* A REQ for a service ID nobody holds gets a REJ "invalid service ID"
 * from the daemon (IBA 12.6.7, reason 8) to the requester's comm ID, with
 * the REQ's TID and a good ICRC; a SIDR_REQ gets a SIDR_REP "service ID
 * not supported". A REQ with a bad ICRC, or for a held service ID, gets
 * no such answer. */
START_TEST(kald_refuse_unheld)
{
	const uint64_t sid = 0x0000000001060000ull | 7475;
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in to = me;
	struct sockaddr_storage src;
	socklen_t sl = sizeof(me);
	struct kald_run k;
	struct kal_hostsvc *a;
	struct share sa;
	uint8_t mad[300], got[300];
	uint32_t comm;
	size_t len;
	int fd, v = IP_PMTUDISC_DO;
	g_autofree char *log = NULL;

	kald_start(&k);
	a = client(&k);
	take(a, AF_INET, &sa);
	comm = (sa.base >> 16) << 24 | 5;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v,
				    sizeof(v)), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&me, &sl), 0);
	to.sin_port = htons(4791);

	/* A REQ from a's comm ID for nobody's service ID, TID 0x77.. */
	len = cm_mad(mad, 0x10, (uint64_t)comm << 32, sid);
	mad[19] = 1;			/* DETH source QP 1 */
	memcpy(mad + 20 + 8, "\x77\x66\x55\x44\x33\x22\x11\x00", 8);
	rxe_icrc_put(mad + 276, icrc_to_lo(mad, &me));
	ck_assert_int_eq(sendto(fd, mad, len, 0, (struct sockaddr *)&to,
				sizeof(to)), (ssize_t)len);
	ck_assert_uint_eq(recv_fwd_any(sa.fwd, got, &src, 2000), 280);
	ck_assert_int_eq(src.ss_family, AF_INET);
	ck_assert_uint_eq(got[0], 0x64);		/* UD Send Only */
	ck_assert_uint_eq(got[7], 1);			/* to QP1 */
	ck_assert_uint_eq(ib_get32(got + 12), 0x80010000u); /* GSI Q_Key */
	ck_assert_uint_eq(ib_get24(got + 17), 1);	/* from QP1 */
	ck_assert_uint_eq(got[21], 0x07);		/* CM class */
	ck_assert_uint_eq(ib_get16(got + 20 + 16), 0x12); /* REJ */
	ck_assert_mem_eq(got + 20 + 8, mad + 20 + 8, 8);	/* TID */
	ck_assert_uint_eq(ib_get32(got + 44), 0);	/* local comm ID */
	ck_assert_uint_eq(ib_get32(got + 48), comm);	/* remote: ours */
	ck_assert_uint_eq(got[52] >> 6, 0);		/* REJected: REQ */
	ck_assert_uint_eq(ib_get16(got + 54), 8);	/* invalid SID */
	ck_assert_uint_eq(rxe_icrc_get(got + 276),
			  icrc_to_lo(got, (struct sockaddr_in *)&src));

	/* SIDR_REQ: request ID in a's range. */
	len = cm_mad(mad, 0x17, (uint64_t)(comm + 1) << 32, sid);
	mad[19] = 1;
	rxe_icrc_put(mad + 276, icrc_to_lo(mad, &me));
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd_any(sa.fwd, got, &src, 2000), 280);
	ck_assert_uint_eq(ib_get16(got + 20 + 16), 0x18); /* SIDR_REP */
	ck_assert_uint_eq(ib_get32(got + 44), comm + 1);
	ck_assert_uint_eq(got[48], 1);			/* unsupported */
	ck_assert_uint_eq(ib_get64(got + 56), sid);
	ck_assert_uint_eq(rxe_icrc_get(got + 276),
			  icrc_to_lo(got, (struct sockaddr_in *)&src));

	/* A bad ICRC: no answer. A held service ID: the REQ goes to its
	 * holder, and nothing else comes. */
	len = cm_mad(mad, 0x10, (uint64_t)comm << 32, sid);
	mad[19] = 1;
	rxe_icrc_put(mad + 276, icrc_to_lo(mad, &me) ^ 1);
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd_any(sa.fwd, got, &src, 200), 0);
	ck_assert_int_eq(kal_hostsvc_listen(a, sid, true), 0);
	rxe_icrc_put(mad + 276, icrc_to_lo(mad, &me));
	sendto(fd, mad, len, 0, (struct sockaddr *)&to, sizeof(to));
	ck_assert_uint_eq(recv_fwd_any(sa.fwd, got, &src, 2000), 280);
	ck_assert_uint_eq(ib_get16(got + 20 + 16), 0x10);
	ck_assert_uint_eq(recv_fwd_any(sa.fwd, got, &src, 200), 0);

	close(fd);
	share_close(&sa);
	kal_hostsvc_close(a);
	log = kald_log(&k);
	ck_assert_msg(strstr(log, "REJ invalid service ID sent"), "%s",
		      tail(log));
	kald_stop(&k);
}
END_TEST

/* Garbage on the control socket: that client is cut off and the log says
 * why; the daemon and a client already there carry on. */
START_TEST(kald_garbage_client)
{
	static const char *const junk[] = { "garbage!", "" };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct kald_run k;
	struct kal_hostsvc *a;
	struct kal_hostsvc_msg m;
	struct share sa, sb;
	g_autofree char *log = NULL;
	unsigned int i;
	char c;

	kald_start(&k);
	a = client(&k);
	take(a, AF_INET, &sa);
	g_strlcpy(sun.sun_path, k.sock, sizeof(sun.sun_path));
	for (i = 0; i < 3; i++) {
		struct pollfd pf = { .events = POLLIN };
		int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

		ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun,
					 sizeof(sun)), 0);
		if (i < 2) {
			ck_assert_int_ge(send(fd, junk[i], strlen(junk[i]) + 1,
					      0), 1);
		} else {
			/* The right size, a wrong magic. */
			memset(&m, 0xa5, sizeof(m));
			ck_assert_int_eq(send(fd, &m, sizeof(m), 0),
					 (ssize_t)sizeof(m));
		}
		pf.fd = fd;
		ck_assert_int_eq(poll(&pf, 1, 3000), 1);
		ck_assert_int_eq(recv(fd, &c, 1, 0), 0);	/* closed */
		close(fd);
	}
	/* a still has its range and a new client gets another. */
	send_to_qp(AF_INET, sa.base + 3, 77);
	ck_assert_uint_eq(recv_tag(sa.udp, 2000), 77);
	{
		struct kal_hostsvc *b = client(&k);

		take(b, AF_INET, &sb);
		ck_assert_uint_ne(sb.base, sa.base);
		share_close(&sb);
		kal_hostsvc_close(b);
	}
	log = kald_log(&k);
	ck_assert_msg(strstr(log, "malformed request (9 bytes); "
			     "disconnected"), "%s", tail(log));
	share_close(&sa);
	kal_hostsvc_close(a);
	kald_stop(&k);
}
END_TEST

/* A process killed with its range: the datagrams still coming for it are
 * the daemon's to drop; the range goes to nobody until it has been quiet
 * QUIET_MS, then to the next process, which sees none of the old ones. */
START_TEST(kald_killed_range_reused)
{
	/* IPv4, then the same over IPv6. */
	int family = _i ? AF_INET6 : AF_INET;
	struct kald_run k;
	struct share s, sc, sd;
	struct kal_hostsvc *c, *d;
	uint32_t base;
	int pfd[2], status;
	pid_t pid;

	kald_start(&k);
	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sockaddr_storage ss = { .ss_family = family };
		struct kal_hostsvc *hs;

		close(pfd[0]);
		if (family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_addr.s_addr =
				htonl(INADDR_LOOPBACK);
		else
			((struct sockaddr_in6 *)&ss)->sin6_addr =
				in6addr_loopback;
		if (kal_hostsvc_connect(k.sock, &hs) ||
		    kal_hostsvc_udp(hs, (struct sockaddr *)&ss,
				    family == AF_INET
				    ? sizeof(struct sockaddr_in)
				    : sizeof(struct sockaddr_in6), &s.udp,
				    &s.fwd, &s.base, &s.count))
			_exit(1);
		if (write(pfd[1], &s.base, 4) != 4)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &base, 4), 4);
	close(pfd[0]);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* In flight to the dead process's QPs. */
	send_to_qp(family, base + 1, 101);
	send_to_qp(family, base + 2, 102);
	g_usleep(50000);
	/* Not quiet yet: the next process gets another range. */
	c = client(&k);
	take(c, family, &sc);
	ck_assert_uint_ne(sc.base, base);
	send_to_qp(family, base + 3, 103);
	ck_assert_uint_eq(recv_tag(sc.udp, 100), 0);
	g_usleep((QUIET_MS + 200) * 1000);
	/* Quiet: reused, and nothing of the dead process's comes to it. */
	d = client(&k);
	take(d, family, &sd);
	ck_assert_uint_eq(sd.base, base);
	ck_assert_uint_eq(recv_tag(sd.udp, 100), 0);
	send_to_qp(family, base + 1, 104);
	ck_assert_uint_eq(recv_tag(sd.udp, 2000), 104);
	ck_assert_uint_eq(recv_tag(sc.udp, 50), 0);
	share_close(&sc);
	share_close(&sd);
	kal_hostsvc_close(c);
	kal_hostsvc_close(d);
	kald_stop(&k);
}
END_TEST

/* Reads @p's output until @want, for at most @secs; on failure the
 * daemon's log (when there is one) comes with the tool's output. */
static void wait_for(struct proc *p, const char *want, int secs,
		     struct kald_run *k)
{
	gint64 end = g_get_monotonic_time() + (gint64)secs * G_USEC_PER_SEC;
	char buf[4096];

	while (!strstr(p->text->str, want)) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		gint64 left = (end - g_get_monotonic_time()) / 1000;
		ssize_t r = -1;

		if (left > 0 && poll(&pfd, 1, (int)left) == 1)
			r = read(p->out, buf, sizeof(buf));
		if (r <= 0) {
			g_autofree char *log = k ? kald_log(k) : g_strdup("");

			kill(p->pid, SIGKILL);
			ck_abort_msg("no \"%s\" in %d s:\n%s\ndaemon:\n%s",
				     want, secs, tail(p->text->str),
				     tail(log));
		}
		g_string_append_len(p->text, buf, r);
	}
}

/* The host service op as ual implements it, over the connection the
 * test names: one connection, one "process". */
static struct kal_hostsvc *t_hs;

static int t_host_udp(struct rnicpi_device *dev, const struct sockaddr *addr,
		      socklen_t len, int *udp_fd, int *fwd_fd,
		      uint32_t *base, uint32_t *count)
{
	(void)dev;
	if (!t_hs)
		return -ENOENT;
	return kal_hostsvc_udp(t_hs, addr, len, udp_fd, fwd_fd, base, count);
}

static struct rnicpi_core_ops t_core;

static void t_dev(struct rxe_t_dev *t, const char *v4)
{
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;

	memset(t, 0, sizeof(*t));
	rxe_t_lo_netdev(&nd, addrs);
	if (v4) {
		inet_pton(AF_INET, v4,
			  &((struct sockaddr_in *)&addrs[0])->sin_addr);
		nd.n_addrs = 1;
	}
	ck_assert_int_eq(rxe_provider.device_create(&nd, "rxe_lo", NULL,
						    &t_core, &t->dev), 0);
	t->ops = t->dev->ops;
	t->dev->provider = &rxe_provider;
}

/* The provider through the op: each "process" opens rxe_lo, its QPs take
 * numbers from its own range only. Without the op's daemon (-ENOENT) it
 * binds the port itself. An address nothing can bind fails the open
 * every time (it used to leave the device "opened" with no socket, so a
 * second open returned 0). */
START_TEST(kald_rxe_provider)
{
	struct kald_run k;
	struct kal_hostsvc *hs[2];
	struct rxe_t_dev t[2];
	struct rxe_t_side q[2][3];
	struct share s;
	int i, j;

	t_core = rxe_t_core_ops;
	t_core.size = sizeof(t_core);
	t_core.host_udp_socket = t_host_udp;

	/* 192.0.2.1 is nobody's (TEST-NET-1): -EADDRNOTAVAIL, twice. */
	t_hs = NULL;
	t_dev(&t[0], "192.0.2.1");
	ck_assert_int_eq(t[0].ops->device_open(t[0].dev), -EADDRNOTAVAIL);
	ck_assert_int_eq(t[0].ops->device_open(t[0].dev), -EADDRNOTAVAIL);
	t[0].ops->device_destroy(t[0].dev);

	kald_start(&k);
	for (i = 0; i < 2; i++) {
		hs[i] = t_hs = client(&k);
		t_dev(&t[i], NULL);
		ck_assert_int_eq(t[i].ops->device_open(t[i].dev), 0);
		ck_assert_int_eq(t[i].ops->device_open(t[i].dev), 0);
		ck_assert_int_eq(t[i].ops->alloc_pd(t[i].dev, &t[i].pd), 0);
	}
	/* Ranges: 1 and 2 (a third connection would get 3). */
	for (i = 0; i < 2; i++)
		for (j = 0; j < 3; j++) {
			uint32_t qpn;

			ck_assert_int_eq(rxe_t_side_create(&t[i], &q[i][j],
							   RNICPI_QPT_RC,
							   NULL), 0);
			qpn = q[i][j].qp->qp_num;
			ck_assert_uint_eq(qpn >> KAL_HOSTSVC_QPN_SHIFT,
					  (uint32_t)i + 1);
		}
	/* And the sockets are the group's: a datagram to a QPN of range 1
	 * never reaches a socket of range 3. */
	{
		struct kal_hostsvc *c = client(&k);

		take(c, AF_INET, &s);
		ck_assert_uint_eq(s.base >> KAL_HOSTSVC_QPN_SHIFT, 3);
		send_to_qp(AF_INET, q[0][0].qp->qp_num, 5);
		ck_assert_uint_eq(recv_tag(s.udp, 100), 0);
		send_to_qp(AF_INET, s.base + 9, 6);
		ck_assert_uint_eq(recv_tag(s.udp, 2000), 6);
		share_close(&s);
		kal_hostsvc_close(c);
	}
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 3; j++)
			rxe_t_side_destroy(&t[i], &q[i][j]);
		rxe_t_dev_close(&t[i]);
		kal_hostsvc_close(hs[i]);
	}
	t_hs = NULL;
	kald_stop(&k);
}
END_TEST

/* What env_rxe_lo set, unset (suites run in one process with
 * CK_FORK=no). */
static void env_clear(void)
{
	g_unsetenv("HOSTRDMA_DEVICES");
	/* Empty, as check-all sets it: never a host's daemon. */
	g_setenv(KAL_HOSTSVC_ENV, "", TRUE);
}

/* The command line: --help, a bad option or value (2), a second daemon
 * on a socket one answers on (1, the first one unharmed). */
START_TEST(kald_cli)
{
	const char *help[] = { KALD_PROG, "--help", NULL };
	const char *bad[] = { KALD_PROG, "--bogus", NULL };
	const char *badq[] = { KALD_PROG, "--quiet-ms", "x", NULL };
	struct kald_run k;
	struct kal_hostsvc *hs;
	struct share sa;
	struct proc p;
	int rc;

	start(&p, help);
	ck_assert_int_eq(finish_within(&p, 10), 0);
	ck_assert(strstr(p.text->str, "--foreground"));
	ck_assert(strstr(p.text->str, "--socket PATH"));
	ck_assert(strstr(p.text->str, KAL_HOSTSVC_ENV));
	done(&p);
	start(&p, bad);
	ck_assert_int_eq(finish_within(&p, 10), 2);
	done(&p);
	start(&p, badq);
	ck_assert_int_eq(finish_within(&p, 10), 2);
	ck_assert(strstr(p.text->str, "--quiet-ms: bad value"));
	done(&p);

	kald_start(&k);
	{
		const char *again[] = { KALD_PROG, "--foreground", "--socket",
					k.sock, NULL };

		start(&p, again);
		rc = finish_within(&p, 10);
		ck_assert_msg(rc == 1 && strstr(p.text->str,
						"already answers"),
			      "exit %d:\n%s", rc, tail(p.text->str));
		done(&p);
	}
	hs = client(&k);
	take(hs, AF_INET, &sa);
	share_close(&sa);
	kal_hostsvc_close(hs);
	kald_stop(&k);
}
END_TEST

/* A user other than root: 64 ranges, 128 connections at most. The child
 * runs as nobody and writes which step failed (0: none) to a pipe: under
 * valgrind its exit status is valgrind's, whose leak check in the child
 * counts what only the parent's threads pointed at as lost. */
START_TEST(kald_per_user_caps)
{
	struct kald_run k;
	int status, fds[2];
	uint8_t step = 0xff;
	pid_t pid;

	if (geteuid() != 0)
		return;	/* cannot become another user */
	kald_start(&k);
	ck_assert_int_eq(chmod(k.dir, 0755), 0);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct kal_hostsvc *hs[129];
		struct share s;
		int i;

#define CHILD_EXIT(n)                                                      \
	do {                                                                \
		uint8_t b_ = (n);                                           \
		(void)!write(fds[1], &b_, 1);                               \
		_exit(n);                                                   \
	} while (0)
		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			CHILD_EXIT(10);
		for (i = 0; i < 128; i++)
			if (kal_hostsvc_connect(k.sock, &hs[i]))
				CHILD_EXIT(11);
		for (i = 0; i < 64; i++) {
			struct sockaddr_in a = {
				.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
			};

			if (kal_hostsvc_udp(hs[i], (struct sockaddr *)&a,
					    sizeof(a), &s.udp, &s.fwd, &s.base,
					    &s.count))
				CHILD_EXIT(12);
			close(s.udp);
			close(s.fwd);
			if (i == 63 &&
			    kal_hostsvc_udp(hs[64], (struct sockaddr *)&a,
					    sizeof(a), &s.udp, &s.fwd, &s.base,
					    &s.count) != -ENOSPC)
				CHILD_EXIT(13);
		}
		/* The 129th connection is accepted and closed at once. */
		if (kal_hostsvc_connect(k.sock, &hs[128]) == 0 &&
		    kal_hostsvc_listen(hs[128], 1, true) != -EPIPE)
			CHILD_EXIT(14);
		CHILD_EXIT(0);
#undef CHILD_EXIT
	}
	close(fds[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(read(fds[0], &step, 1) == 1 && step == 0,
		      "child: step %u failed (status 0x%x)", step, status);
	close(fds[0]);
	{
		g_autofree char *log = kald_log(&k);

		ck_assert_msg(strstr(log, "the user holds 64 QPN ranges"),
			      "%s", tail(log));
		ck_assert_msg(strstr(log, "the user has 128 connections"),
			      "%s", tail(log));
	}
	kald_stop(&k);
}
END_TEST

static void env_rxe_lo(const char *sock)
{
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH", RXE_PROVIDER_DIR, TRUE);
	g_setenv("HOSTRDMA_DEVICES", "rxe_lo", TRUE);
	g_unsetenv("HOSTRDMA_OPTIONS");
	g_setenv(KAL_HOSTSVC_ENV, sock, TRUE);
}

/* Two servers and their two clients, four processes on rxe_lo at once
 * through the daemon (one pair over IPv4, one over IPv6), every round's
 * bytes checked by the client (-V); the CM's MADs went through the
 * daemon. A third server on the first one's port is refused; a third
 * pair's client (over IPv4) and a fourth's (over IPv6) are killed
 * mid-transfer while the others run, and they finish; afterwards a new
 * pair on the freed ranges gets every byte. */
START_TEST(kald_ping_two_pairs)
{
	struct kald_run k;
	static const char *const addr[2] = { "127.0.0.1", "::1" };
	struct proc s[2], c[2], victim[4];
	char port[2][8], vport[8];
	g_autofree char *log = NULL;
	int i, rc;

	kald_start(&k);
	env_rxe_lo(k.sock);
	for (i = 0; i < 2; i++) {
		const char *sargv[] = { TOOLS "hostrdma-ping", "-s", "-a",
					addr[i], "-p",
					free_port(port[i], sizeof(port[i])),
					"-C", "50", "-S", "4000", "-d", NULL };

		/* -d: a server given -a says it listens only then. */
		start(&s[i], sargv);
		wait_for(&s[i], "waiting for a client", 20, &k);
	}
	/* A third server on the first one's port (its service ID): the
	 * daemon refuses it. */
	{
		const char *targv[] = { TOOLS "hostrdma-ping", "-s", "-a",
					"127.0.0.1", "-p", port[0], "-C", "1",
					NULL };
		struct proc t;

		start(&t, targv);
		rc = finish_within(&t, 30);
		ck_assert_msg(rc == 1 && strstr(t.text->str, "is in use"),
			      "exit %d:\n%s", rc, tail(t.text->str));
		done(&t);
	}
	/* A third pair, its client killed mid-transfer, and a fourth, the
	 * same over IPv6. */
	for (i = 0; i < 2; i++) {
		const char *vs[] = { TOOLS "hostrdma-ping", "-s", "-a",
				     addr[i], "-p",
				     free_port(vport, sizeof(vport)), "-S",
				     "4000", "-d", NULL };
		const char *vc[] = { TOOLS "hostrdma-ping", "-c", "-a",
				     addr[i], "-p", vport, "-S", "4000",
				     "-v", NULL };

		start(&victim[2 * i], vs);
		wait_for(&victim[2 * i], "waiting for a client", 20, &k);
		start(&victim[2 * i + 1], vc);
		wait_for(&victim[2 * i + 1], "ping data: ", 20, &k);
	}
	for (i = 0; i < 2; i++) {
		const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a",
					addr[i], "-p", port[i], "-C", "50",
					"-S", "4000", "-V", NULL };

		start(&c[i], cargv);
	}
	g_usleep(100000);
	for (i = 0; i < 2; i++) {
		kill(victim[2 * i + 1].pid, SIGKILL);
		finish_within(&victim[2 * i + 1], 10);
	}
	for (i = 0; i < 2; i++) {
		rc = finish_within(&c[i], 60);
		ck_assert_msg(rc == 0, "client %d exit %d:\n%s", i, rc,
			      tail(c[i].text->str));
		ck_assert_msg(strstr(c[i].text->str,
				     "50 rounds of 4000 bytes, validated"),
			      "%s", tail(c[i].text->str));
		rc = finish_within(&s[i], 30);
		ck_assert_msg(rc == 0, "server %d exit %d:\n%s", i, rc,
			      tail(s[i].text->str));
		ck_assert_ptr_null(strstr(s[i].text->str, "owns soft-RoCE"));
		done(&c[i]);
		done(&s[i]);
	}
	/* The killed client's server ends on SIGINT (or on its own when
	 * its retries ran out), whatever its status. */
	for (i = 0; i < 2; i++) {
		kill(victim[2 * i].pid, SIGINT);
		finish_within(&victim[2 * i], 60);
		done(&victim[2 * i]);
		done(&victim[2 * i + 1]);
	}
	/* Later, with every range quiet again, a new pair (its processes
	 * take the freed ranges, the lowest first) gets every byte. */
	g_usleep((QUIET_MS + 300) * 1000);
	{
		const char *ns[] = { TOOLS "hostrdma-ping", "-s", "-a",
				     "127.0.0.1", "-p",
				     free_port(vport, sizeof(vport)), "-C",
				     "20", "-S", "4000", "-d", NULL };
		const char *nc[] = { TOOLS "hostrdma-ping", "-c", "-a",
				     "127.0.0.1", "-p", vport, "-C", "20",
				     "-S", "4000", "-V", NULL };

		start(&s[0], ns);
		wait_for(&s[0], "waiting for a client", 20, &k);
		start(&c[0], nc);
		rc = finish_within(&c[0], 60);
		ck_assert_msg(rc == 0 && strstr(c[0].text->str,
						"20 rounds of 4000 bytes, "
						"validated"),
			      "exit %d:\n%s", rc, tail(c[0].text->str));
		rc = finish_within(&s[0], 30);
		ck_assert_msg(rc == 0, "exit %d:\n%s", rc,
			      tail(s[0].text->str));
		done(&c[0]);
		done(&s[0]);
	}
	log = kald_log(&k);
	/* Eight processes at once, each its range. */
	ck_assert_msg(strstr(log, "QPN range 8 "), "%s", tail(log));
	ck_assert_msg(strstr(log, "QPN range 1 is free again"), "%s",
		      tail(log));
	ck_assert_msg(strstr(log, "is pid"), "%s", tail(log));
	env_clear();
	kald_stop(&k);
}
END_TEST

/* The daemon killed (SIGKILL) while a pair transfers through it, then
 * started again on the same socket: the pair's data path never noticed
 * (every byte of every round checked, -V); a server started during the
 * outage waits for the daemon, saying so, and gets a client once it is
 * back; the new daemon took the running processes over from the old
 * one's keeper. */
START_TEST(kald_restart_under_traffic)
{
	struct kald_run k;
	char port[8], port2[8];
	const char *sargv[] = { TOOLS "hostrdma-ping", "-s", "-a", "127.0.0.1",
				"-p", free_port(port, sizeof(port)), "-C",
				"4000", "-S", "4000", "-d", NULL };
	const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a", "127.0.0.1",
				"-p", port, "-C", "4000", "-S", "4000", "-V",
				NULL };
	const char *s2argv[] = { TOOLS "hostrdma-ping", "-s", "-a", "::1",
				 "-p", free_port(port2, sizeof(port2)), "-C",
				 "20", "-S", "4000", "-d", NULL };
	const char *c2argv[] = { TOOLS "hostrdma-ping", "-c", "-a", "::1",
				 "-p", port2, "-C", "20", "-S", "4000", "-V",
				 NULL };
	g_autofree char *log1 = NULL, *log2 = NULL, *first = NULL;
	struct proc s, c, s2, c2;
	int rc, status;

	kald_start(&k);
	env_rxe_lo(k.sock);
	g_setenv("HOSTRDMA_KALD_WAIT_MS", "20000", TRUE);
	start(&s, sargv);
	/* Its -d lines (two a round) wait in the pipe while the test
	 * watches the others: room for all of them. */
	(void)fcntl(s.out, F_SETPIPE_SZ, 1 << 20);
	wait_for(&s, "waiting for a client", 20, &k);
	start(&c, cargv);
	/* Under traffic: the rounds have begun and are far from done. */
	g_usleep(300000);
	ck_assert_int_eq(waitpid(c.pid, &status, WNOHANG), 0);
	kald_kill(&k);
	/* A new server while the daemon is away: it waits, and says why. */
	start(&s2, s2argv);
	wait_for(&s2, "does not answer", 20, &k);
	ck_assert_ptr_null(strstr(s2.text->str, "waiting for a client"));
	log1 = kald_log(&k);
	ck_assert_msg(strstr(log1, "keeper: the daemon is gone"), "%s",
		      tail(log1));
	first = k.log;
	k.log = g_strconcat(first, ".2", NULL);
	kald_spawn(&k);
	wait_for(&s2, "waiting for a client", 20, &k);
	rc = finish_within(&c, 60);
	if (rc != 0 || !strstr(c.text->str,
			       "4000 rounds of 4000 bytes, validated")) {
		finish_within(&s, 5);
		log2 = kald_log(&k);
		fprintf(stderr, "server:\n%s\ndaemons:\n%s\n%s\n",
			tail(s.text->str), tail(log1), tail(log2));
		ck_abort_msg("exit %d:\n%s", rc, tail(c.text->str));
	}
	rc = finish_within(&s, 30);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(s.text->str));
	ck_assert_ptr_null(strstr(s.text->str, "may be lost"));
	/* A new connection through the new daemon. */
	start(&c2, c2argv);
	rc = finish_within(&c2, 60);
	ck_assert_msg(rc == 0 && strstr(c2.text->str,
					"20 rounds of 4000 bytes, validated"),
		      "exit %d:\n%s", rc, tail(c2.text->str));
	rc = finish_within(&s2, 30);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(s2.text->str));
	log2 = kald_log(&k);
	ck_assert_msg(strstr(log2, "took over from the previous daemon: 2 "
			     "addresses, 2 processes"), "%s", tail(log2));
	done(&c);
	done(&s);
	done(&c2);
	done(&s2);
	g_unsetenv("HOSTRDMA_KALD_WAIT_MS");
	env_clear();
	unlink(first);
	kald_stop(&k);
}
END_TEST

/* A tests/itapi-peer shell: a long-lived IT-API process on rxe_lo the
 * test drives one command a line (itapi-peer.c, role_shell). */
struct shell {
	struct proc p;
	int in;		/* its stdin */
	size_t mark;	/* where the last command's answer begins */
};

static void shell_start(struct shell *sh, struct kald_run *k)
{
	int out[2], in[2];

	sh->p.text = g_string_new(NULL);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	sh->p.pid = fork();
	ck_assert_int_ge(sh->p.pid, 0);
	if (sh->p.pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(out[1], STDERR_FILENO);
		execl(ITAPI_PEER, ITAPI_PEER, "shell", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(in[0]);
	sh->p.out = out[0];
	sh->in = in[1];
	sh->mark = 0;
	tools_track_pid(sh->p.pid);
	wait_for(&sh->p, "SHELL", 30, k);
}

/* Waits up to @secs for @want in what @sh said since its last command;
 * an "ERROR" or "FAIL" there fails the test unless @want is one. */
static const char *shell_wait(struct shell *sh, const char *want, int secs,
			      struct kald_run *k)
{
	gint64 end = g_get_monotonic_time() + (gint64)secs * G_USEC_PER_SEC;
	bool bad_ok = !strncmp(want, "ERROR", 5) || !strncmp(want, "FAIL", 4);
	char buf[4096];

	for (;;) {
		const char *since = sh->p.text->str + sh->mark;
		const char *hit = strstr(since, want);
		struct pollfd pfd = { .fd = sh->p.out, .events = POLLIN };
		gint64 left;
		ssize_t r = -1;

		if (hit)
			return hit;
		if (!bad_ok && (strstr(since, "ERROR") || strstr(since, "FAIL")))
			break;
		left = (end - g_get_monotonic_time()) / 1000;
		if (left > 0 && poll(&pfd, 1, (int)left) == 1)
			r = read(sh->p.out, buf, sizeof(buf));
		if (r <= 0)
			break;
		g_string_append_len(sh->p.text, buf, r);
	}
	{
		g_autofree char *log = k ? kald_log(k) : g_strdup("");

		ck_abort_msg("no \"%s\" in %d s:\n%s\ndaemon:\n%s", want, secs,
			     tail(sh->p.text->str), tail(log));
	}
	return NULL;
}

/* Reads what @sh said so far, without waiting. */
static void shell_drain(struct shell *sh)
{
	struct pollfd pfd = { .fd = sh->p.out, .events = POLLIN };
	char buf[4096];
	ssize_t r;

	while (poll(&pfd, 1, 0) == 1 &&
	       (r = read(sh->p.out, buf, sizeof(buf))) > 0)
		g_string_append_len(sh->p.text, buf, r);
}

/* Sends @cmd; with @want, waits for it (see shell_wait). */
static const char *shell_do(struct shell *sh, const char *cmd,
			    const char *want, int secs, struct kald_run *k)
{
	size_t n = strlen(cmd);

	sh->mark = sh->p.text->len;
	ck_assert_int_eq(write(sh->in, cmd, n), (ssize_t)n);
	ck_assert_int_eq(write(sh->in, "\n", 1), 1);
	return want ? shell_wait(sh, want, secs, k) : NULL;
}

/* The port a shell's "listen" answered. */
static void shell_listen(struct shell *sh, char *port, size_t len,
			 struct kald_run *k)
{
	const char *l = shell_do(sh, "listen", "LISTENING ", 30, k);
	unsigned int v = 0;

	/* The whole line is there once its newline is. */
	shell_wait(sh, "\n", 10, k);
	ck_assert_int_eq(sscanf(l, "LISTENING %u", &v), 1);
	snprintf(port, len, "%u", v);
}

static void shell_check(struct shell *sh, int conn, int seed,
			struct kald_run *k)
{
	char cmd[32], want[32];

	snprintf(cmd, sizeof(cmd), "check %d %d", conn, seed);
	snprintf(want, sizeof(want), "CHECKED %d\n", conn);
	shell_do(sh, cmd, want, 60, k);
}

/* @from connects to @to's listener at @addr:@port, its connection
 * number @n at both ends, and both see it made. */
static void shell_connect(struct shell *from, struct shell *to,
			  const char *addr, const char *port, int n,
			  struct kald_run *k)
{
	char cmd[64], want[32];

	shell_do(to, "accept", NULL, 0, k);
	snprintf(cmd, sizeof(cmd), "connect %s %s", addr, port);
	snprintf(want, sizeof(want), "CONNECTING %d", n);
	shell_do(from, cmd, want, 30, k);
	snprintf(cmd, sizeof(cmd), "wait %d", n);
	snprintf(want, sizeof(want), "CONNECTED %d", n);
	shell_do(from, cmd, want, 60, k);
	snprintf(want, sizeof(want), "ACCEPTED %d", n);
	shell_wait(to, want, 60, k);
}

/* A daemon (waiting 60 s for a restart), shells P and Q on it, Q
 * listening at @qport, P's connection 0 to it made and checked. */
static void shells_connected(struct kald_run *k, struct shell *P,
			     struct shell *Q, char *qport, size_t len)
{
	kald_start(k);
	env_rxe_lo(k->sock);
	g_setenv("HOSTRDMA_KALD_WAIT_MS", "60000", TRUE);
	shell_start(P, k);
	shell_start(Q, k);
	shell_listen(Q, qport, len, k);
	shell_connect(P, Q, "127.0.0.1", qport, 0, k);
	shell_check(P, 0, 1, k);
}

static int shell_quit(struct shell *sh)
{
	int rc;

	shell_do(sh, "quit", NULL, 0, NULL);
	close(sh->in);
	rc = finish_within(&sh->p, 60);
	return rc;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Two running processes P and Q (itapi-peer shells) with a connection
 * each way, made through the daemon. The daemon is killed (SIGKILL):
 * their connections keep carrying data (RDMA Write, then Read back,
 * each way). P opens a new connection to Q's listener (it_ep_connect
 * returns; its REQ waits, unanswered, in QP1's socket: the connection
 * is not made while no daemon routes the CM's MADs) and asks for a new
 * listener (it waits for the daemon, saying so once). A new daemon
 * started: the listener is made, the waiting connection completes
 * (the CM's retries and the REQ that waited reach Q), Q connects to
 * P's new listener, every connection old and new carries checked
 * data. */
START_TEST(kald_restart_running_process)
{
	struct kald_run k;
	struct shell P, Q;
	char qport[8], pport[8], pport2[8], cmd[64];
	g_autofree char *log1 = NULL, *log2 = NULL, *first = NULL;

	kald_start(&k);
	env_rxe_lo(k.sock);
	g_setenv("HOSTRDMA_KALD_WAIT_MS", "60000", TRUE);
	shell_start(&P, &k);
	shell_start(&Q, &k);
	shell_listen(&Q, qport, sizeof(qport), &k);
	shell_listen(&P, pport, sizeof(pport), &k);
	/* P -> Q (P's 0, Q's 0), Q -> P over IPv6 (Q's 1, P's 1). */
	shell_connect(&P, &Q, "127.0.0.1", qport, 0, &k);
	shell_connect(&Q, &P, "::1", pport, 1, &k);
	shell_check(&P, 0, 1, &k);
	shell_check(&P, 1, 2, &k);
	shell_check(&Q, 0, 3, &k);
	shell_check(&Q, 1, 4, &k);

	kald_kill(&k);
	/* The data path does not need the daemon. */
	shell_check(&P, 0, 5, &k);
	shell_check(&P, 1, 6, &k);
	shell_check(&Q, 0, 7, &k);
	shell_check(&Q, 1, 8, &k);
	/* A new connection from P to Q's listener: the call returns, the
	 * connection waits. */
	shell_do(&Q, "accept", NULL, 0, &k);
	snprintf(cmd, sizeof(cmd), "connect 127.0.0.1 %s", qport);
	shell_do(&P, cmd, "CONNECTING 2", 30, &k);
	/* A new listener in P: it waits for the daemon, saying so. */
	shell_do(&P, "listen", "does not answer", 30, &k);
	/* The REQ (and its retries) cannot reach Q while nobody routes
	 * QP1: still no request there, no listener in P. */
	g_usleep(1000000);
	shell_drain(&P);
	shell_drain(&Q);
	ck_assert_ptr_null(strstr(Q.p.text->str, "ACCEPTED 2"));
	ck_assert_ptr_null(strstr(P.p.text->str + P.mark, "LISTENING"));
	log1 = kald_log(&k);
	first = k.log;
	k.log = g_strconcat(first, ".2", NULL);
	kald_spawn(&k);
	/* Back: the listener is made, the waiting connection completes. */
	shell_wait(&P, "LISTENING ", 60, &k);
	shell_wait(&P, "\n", 10, &k);
	ck_assert_int_eq(sscanf(strstr(P.p.text->str + P.mark, "LISTENING "),
				"LISTENING %7s", pport2), 1);
	shell_wait(&Q, "ACCEPTED 2", 60, &k);
	shell_do(&P, "wait 2", "CONNECTED 2", 60, &k);
	shell_check(&P, 2, 10, &k);
	shell_check(&Q, 2, 11, &k);
	/* P as the passive side of a new connection, on the listener it
	 * asked for during the outage. */
	shell_connect(&Q, &P, "127.0.0.1", pport2, 3, &k);
	shell_check(&P, 3, 12, &k);
	shell_check(&Q, 3, 13, &k);
	/* The old connections, still. */
	shell_check(&P, 0, 14, &k);
	shell_check(&P, 1, 15, &k);
	shell_check(&Q, 0, 16, &k);
	shell_check(&Q, 1, 17, &k);
	/* P said once that the daemon did not answer, and that it was
	 * back with its range. */
	ck_assert_msg(count(P.p.text->str, "does not answer") == 1, "%s",
		      tail(P.p.text->str));
	ck_assert_msg(strstr(P.p.text->str, "hostrdma-kald is back"), "%s",
		      tail(P.p.text->str));
	ck_assert_ptr_null(strstr(P.p.text->str, "may be lost"));
	ck_assert_ptr_null(strstr(Q.p.text->str, "may be lost"));
	log2 = kald_log(&k);
	ck_assert_msg(strstr(log2, "took over from the previous daemon") &&
		      strstr(log2, " 2 processes"), "%s", tail(log2));
	ck_assert_int_eq(shell_quit(&P), 0);
	ck_assert_int_eq(shell_quit(&Q), 0);
	done(&P.p);
	done(&Q.p);
	g_unsetenv("HOSTRDMA_KALD_WAIT_MS");
	env_clear();
	unlink(first);
	kald_stop(&k);
}
END_TEST

/* A listen that waits for a restarting daemon waits alone: the
 * process's connection manager goes on meanwhile (here, a disconnect of
 * an established connection returns). It used to wait with the
 * manager's lock held, for as long as HOSTRDMA_KALD_WAIT_MS. */
START_TEST(kald_restart_listen_waits_alone)
{
	struct kald_run k;
	struct shell P, Q;
	char qport[8];
	g_autofree char *first = NULL;

	shells_connected(&k, &P, &Q, qport, sizeof(qport));

	kald_kill(&k);
	shell_do(&P, "listen&", "does not answer", 30, &k);
	/* The listen waits for the daemon; the disconnect does not. */
	shell_do(&P, "disconnect 0", "DISCONNECTING 0", 5, &k);
	shell_drain(&P);
	ck_assert_ptr_null(strstr(P.p.text->str, "LISTENING"));
	first = k.log;
	k.log = g_strconcat(first, ".2", NULL);
	kald_spawn(&k);
	shell_wait(&P, "LISTENING ", 60, &k);
	ck_assert_int_eq(shell_quit(&P), 0);
	ck_assert_int_eq(shell_quit(&Q), 0);
	done(&P.p);
	done(&Q.p);
	g_unsetenv("HOSTRDMA_KALD_WAIT_MS");
	env_clear();
	unlink(first);
	kald_stop(&k);
}
END_TEST

/* The daemon's keeper, from its log ("keeper: pid N at ..."). */
static pid_t kald_keeper_pid(struct kald_run *k)
{
	g_autofree char *log = kald_log(k);
	const char *at = strstr(log, "keeper: pid ");
	int pid = 0;

	ck_assert_msg(at && sscanf(at, "keeper: pid %d", &pid) == 1 &&
		      pid > 1, "%s", tail(log));
	return (pid_t)pid;
}

/* The daemon and its keeper both killed under two running processes:
 * each says that the host service and its keeper are gone and that it
 * must be restarted; the next operation that needs the daemon (a new
 * listener, a new connection) fails at once with that error, with no
 * wait for a daemon (HOSTRDMA_KALD_WAIT_MS is a minute here) and no
 * crash: the processes answer on and end normally. */
START_TEST(kald_keeper_killed)
{
	struct kald_run k;
	struct shell P, Q;
	char qport[8], cmd[64], want[64];
	g_autofree char *keep = NULL;
	pid_t keeper;

	shells_connected(&k, &P, &Q, qport, sizeof(qport));

	keeper = kald_keeper_pid(&k);
	kald_kill(&k);
	ck_assert_int_eq(kill(keeper, SIGKILL), 0);
	/* Each process's device notices (its QP1 forwarding sockets hang
	 * up) and says so. */
	shell_wait(&P, "and its keeper went away", 60, &k);
	shell_wait(&Q, "and its keeper went away", 60, &k);
	/* The next operation needing the daemon: a clear error, at once. */
	snprintf(want, sizeof(want), "ERROR listen %d\n",
		 IT_ERR_IA_CATASTROPHE);
	shell_do(&P, "listen", want, 30, &k);
	ck_assert_msg(strstr(P.p.text->str, "hostrdma-kald and its keeper "
			     "are both gone") &&
		      strstr(P.p.text->str, "restart it"), "%s",
		      tail(P.p.text->str));
	ck_assert_ptr_null(strstr(P.p.text->str, "does not answer"));
	shell_do(&Q, "listen", want, 30, &k);
	snprintf(want, sizeof(want), "ERROR connect %d\n",
		 IT_ERR_IA_CATASTROPHE);
	snprintf(cmd, sizeof(cmd), "connect 127.0.0.1 %s", qport);
	shell_do(&P, cmd, want, 30, &k);
	ck_assert_msg(strstr(Q.p.text->str, "are both gone"), "%s",
		      tail(Q.p.text->str));
	/* Said once per process. */
	ck_assert_int_eq(count(P.p.text->str, "are both gone"), 1);
	ck_assert_int_eq(shell_quit(&P), 0);
	ck_assert_int_eq(shell_quit(&Q), 0);
	ck_assert_ptr_nonnull(strstr(P.p.text->str, "BYE"));
	done(&P.p);
	done(&Q.p);
	g_unsetenv("HOSTRDMA_KALD_WAIT_MS");
	env_clear();
	keep = g_strconcat(k.sock, ".keep", NULL);
	unlink(keep);
	unlink(k.sock);
	unlink(k.log);
	rmdir(k.dir);
	g_free(k.dir);
	g_free(k.sock);
	g_free(k.log);
}
END_TEST

struct late_close {
	int fd;
	unsigned int after_ms;
};

static gpointer close_later(gpointer data)
{
	struct late_close *l = data;

	g_usleep((gulong)l->after_ms * 1000);
	close(l->fd);
	return NULL;
}

/* How a process tells that the daemon and its keeper are both gone:
 * every forwarding socket hung up. Their peers close one after another
 * as the keeper exits (a CI run once asked in between and waited a
 * minute for a daemon that could not come): a mix waits for the rest;
 * none hung up answers at once; a mix that stays answers no once the
 * time is up. */
START_TEST(kald_fds_hung_up)
{
	int a[2], b[2], fds[2];
	struct late_close l;
	GThread *t;
	gint64 t0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, b), 0);
	fds[0] = a[0];
	fds[1] = b[0];
	ck_assert(!kal_fds_hung_up(fds, 0, 1000));
	t0 = g_get_monotonic_time();
	ck_assert(!kal_fds_hung_up(fds, 2, 5000));
	ck_assert_int_lt(g_get_monotonic_time() - t0, G_USEC_PER_SEC);
	/* One peer gone, the other for good: no, after the time given. */
	close(a[1]);
	t0 = g_get_monotonic_time();
	ck_assert(!kal_fds_hung_up(fds, 2, 300));
	ck_assert_int_ge(g_get_monotonic_time() - t0, 300 * 1000);
	/* The other one goes 200 ms later: yes. */
	l.fd = b[1];
	l.after_ms = 200;
	t = g_thread_new("close-later", close_later, &l);
	ck_assert(kal_fds_hung_up(fds, 2, 10000));
	g_thread_join(t);
	ck_assert(kal_fds_hung_up(fds, 2, 0));
	ck_assert(kal_fds_hung_up(fds, 1, 0));
	close(a[0]);
	close(b[0]);
}
END_TEST

/* A client of a port nobody listens on, through the daemon: refused at
 * once (the daemon's REJ "invalid service ID"), not after the CM's ~10 s
 * of retries, and the tool says so. */
START_TEST(kald_ping_refused)
{
	struct kald_run k;
	char port[8];
	const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a", "127.0.0.1",
				"-p", free_port(port, sizeof(port)), "-C",
				"1", NULL };
	struct proc p;
	gint64 t0;
	int rc;

	kald_start(&k);
	env_rxe_lo(k.sock);
	t0 = g_get_monotonic_time();
	start(&p, cargv);
	rc = finish_within(&p, 30);
	t0 = g_get_monotonic_time() - t0;
	ck_assert_msg(rc != 0 && strstr(p.text->str, "connection refused"),
		      "exit %d:\n%s", rc, tail(p.text->str));
	ck_assert_msg(t0 < 3 * G_USEC_PER_SEC, "refused after %" G_GINT64_FORMAT
		      " ms", t0 / 1000);
	done(&p);
	env_clear();
	kald_stop(&k);
}
END_TEST

/* No daemon (the socket names nothing): one process binds the port
 * itself as before; a second one is told once how to share it. */
START_TEST(kald_none_embedded)
{
	g_autofree char *dir = g_dir_make_tmp("kald-XXXXXX", NULL);
	g_autofree char *sock = g_build_filename(dir, "none.sock", NULL);
	char port[8], port2[8];
	const char *lo[] = { TOOLS "hostrdma-ping", "-L", "-p",
			     free_port(port, sizeof(port)), "-C", "5", "-V",
			     NULL };
	const char *sargv[] = { TOOLS "hostrdma-ping", "-s", "-a", "127.0.0.1",
				"-p", free_port(port2, sizeof(port2)), "-C",
				"1", "-d", NULL };
	const char *cargv[] = { TOOLS "hostrdma-ping", "-c", "-a", "127.0.0.1",
				"-p", port2, "-C", "1", NULL };
	struct proc p, s;
	int rc;

	env_rxe_lo(sock);
	start(&p, lo);
	rc = finish_within(&p, 60);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, tail(p.text->str));
	done(&p);

	start(&s, sargv);
	wait_for(&s, "waiting for a client", 20, NULL);
	start(&p, cargv);
	rc = finish_within(&p, 60);
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(p.text->str, "owns soft-RoCE's UDP port 4791. "
			     "To share it among processes, start the host "
			     "service (hostrdma-kald"), "%s",
		      tail(p.text->str));
	kill(s.pid, SIGINT);
	finish_within(&s, 30);
	done(&p);
	done(&s);
	env_clear();
	rmdir(dir);
}
END_TEST

Suite *suite_kald(void)
{
	Suite *s = suite_create("kald");
	TCase *tc = tcase_create("kald");
	TCase *tt = tcase_create("kald-tools");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, NULL, tools_kill_leftovers);
	tcase_add_test(tc, kald_steer_ranges);
	tcase_add_test(tc, kald_steer_locked);
	tcase_add_test(tc, kald_second_daemon);
	tcase_add_test(tc, kald_cm_routing);
	tcase_add_test(tc, kald_refuse_unheld);
	tcase_add_test(tc, kald_garbage_client);
	tcase_add_loop_test(tc, kald_killed_range_reused, 0, 2);
	tcase_add_test(tc, kald_rxe_provider);
	tcase_add_test(tc, kald_per_user_caps);
	tcase_add_test(tc, kald_cli);
	tcase_add_test(tc, kald_fds_hung_up);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tt, 120);
	tcase_add_checked_fixture(tt, NULL, tools_kill_leftovers);
	tcase_add_test(tt, kald_ping_two_pairs);
	tcase_add_test(tt, kald_none_embedded);
	tcase_add_test(tt, kald_ping_refused);
	tcase_add_test(tt, kald_restart_under_traffic);
	tcase_add_test(tt, kald_restart_running_process);
	tcase_add_test(tt, kald_restart_listen_waits_alone);
	tcase_add_test(tt, kald_keeper_killed);
	suite_add_tcase(s, tt);
	return s;
}

#endif
