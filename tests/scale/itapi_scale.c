/* SPDX-License-Identifier: MIT */
/*
 * itapi-scale - many connections to one listener, through IT-API only:
 * a server process (forked before either side opens anything) and this
 * one as the client, over the device's loopback.
 *
 *   itapi-scale [-d DEVICE] [-n CONNECTIONS] [-c CYCLES] [-w WINDOW]
 *               [--json]
 *
 * Phase 1 opens CONNECTIONS connections to one listener, at most WINDOW
 * being set up at a time, and checks each with one Send: an 8-byte
 * message naming the connection, which the server receives into that
 * connection's own slot and compares. It prints the set-up rate and the
 * resident memory each connection added (both processes' growth, so both
 * endpoints). Phase 2 connects and disconnects CYCLES more, WINDOW at a
 * time (it_ep_disconnect, then it_ep_free once the disconnect is
 * through); the server frees its endpoint when it sees the disconnect. Then both
 * processes must be back to the descriptors and threads they had before
 * phase 1; the resident set before and after is printed. Exit status 0
 * when every message arrived intact and nothing leaked, 1 otherwise, 2
 * for a usage error.
 *
 * Two processes because each end of a connection is a descriptor (a TCP
 * socket for soft-iWARP) and RLIMIT_NOFILE caps a process; the program
 * raises the soft limit as far as the hard one. --same-process runs the
 * server as a thread of this process instead (each end with an IA of its
 * own): soft-RoCE needs it when no hostrdma-kald shares UDP port 4791,
 * for then only one process on a host can open a soft-RoCE device.
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_US (60ull * 1000 * 1000)
/* Completions that wake it_evd_wait (IT_NOTIFY_FLAG). */
#define CN ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))
#define MSG 8
#define MAGIC 0x5ca1e00000000000ull

/* A request's private data: which slot, and a marker last, since the IB
 * CM's REQ has no length and a receiver sees only up to the last
 * non-zero byte (index 0 alone would read as no private data). */
struct req_pdata {
	uint32_t idx;
	uint32_t marker;
};
#define REQ_MARKER 0x5ca1ab1eu

static const char *progname = "itapi-scale";
static _Thread_local const char *role = "client";

static void die(const char *what, it_status_t st)
{
	fprintf(stderr, "%s (%s): %s failed: status %d\n", progname, role,
		what, st);
	exit(1);
}

#define CHECK(call)                                                         \
	do {                                                                \
		it_status_t st_ = (call);                                   \
		if (st_ != IT_SUCCESS)                                      \
			die(#call, st_);                                    \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/* A field of /proc/self/status ("Threads", "VmRSS" in kB). */
static long status_field(const char *name)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t len = strlen(name);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

struct usage_fig {
	long fds, threads, rss_kb;
};

static struct usage_fig usage_now(void)
{
	struct usage_fig u = { count_fds(), status_field("Threads"),
			       status_field("VmRSS") };

	return u;
}

/* One line to or from the other process. */
static void put_line(int fd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put_line(int fd, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	if (write(fd, buf, (size_t)n) != n) {
		fprintf(stderr, "%s (%s): the other process is gone\n",
			progname, role);
		exit(1);
	}
}

/* A line from @fd within @timeout_ms (-1: none); false on time-out. */
static bool get_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, timeout_ms) <= 0)
			return false;
		r = read(fd, buf + n, 1);
		if (r <= 0) {
			fprintf(stderr, "%s (%s): the other process is gone\n",
				progname, role);
			exit(1);
		}
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return true;
}

struct side {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto, reqs, msgs;
	it_ep_attributes_t attr;
	it_lmr_handle_t lmr;
	uint8_t *slots;
	size_t n;
};

static void side_open(struct side *s, const char *dev, size_t n,
		      size_t window)
{
	s->n = n;
	s->slots = calloc(n, MSG);
	if (!s->slots) {
		fprintf(stderr, "%s (%s): out of memory\n", progname, role);
		exit(1);
	}
	CHECK(it_ia_create(dev, 2, 1, &s->ia));
	CHECK(it_pz_create(s->ia, &s->pz));
	CHECK(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, 0, n + 16, 0, NULL,
			    &s->dto, NULL));
	CHECK(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, 0,
			    4 * window + 16, 0, NULL, &s->reqs, NULL));
	/* Room for every endpoint's ESTABLISHED and its end: an SEVD that
	 * overflows drops events. */
	CHECK(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, 0,
			    2 * n + 4 * window + 16, 0, NULL, &s->msgs, NULL));
	s->attr.max_request_dtos = s->attr.max_recv_dtos = 2;
	s->attr.max_send_segments = s->attr.max_recv_segments = 1;
	s->attr.max_dto_payload_size = 4096;
	CHECK(it_lmr_create(s->pz, s->slots, NULL, n * MSG,
			    IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			    IT_LMR_FLAG_NONE, 0, &s->lmr, NULL));
}

static it_ep_handle_t ep_new(struct side *s)
{
	it_ep_handle_t ep;

	CHECK(it_ep_rc_create(s->pz, s->dto, s->dto, s->msgs, IT_EP_NO_FLAG,
			      &s->attr, &ep));
	return ep;
}

/* ------------------------------------------------------------------ */
/* The server                                                          */
/* ------------------------------------------------------------------ */

/*
 * Accepts every request (with a receive posted into the slot its private
 * data names, when it asks for one), frees an endpoint when its
 * connection ends, checks the slots once all receives are in, and
 * answers the client's commands: "verify N" (report "verified BAD" once N
 * receives are in), "usage" ("usage FDS THREADS RSS"), "exit".
 */
static int server(const char *dev, size_t n, size_t window, int in, int out)
{
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	it_listen_handle_t listener;
	struct side s = { 0 };
	size_t received = 0, verify_n = 0;
	bool verify_wanted = false;
	struct usage_fig u;
	char line[128];

	role = "server";
	side_open(&s, dev, n, window);
	CHECK(it_listen_create(s.ia, 0, s.reqs, IT_LISTEN_NO_FLAG, &qual,
			       &listener));
	put_line(out, "port %u", ntohs(qual.conn_qual.port));
	for (;;) {
		it_event_t ev;
		size_t nmore;

		while (it_evd_dequeue(s.reqs, &ev) == IT_SUCCESS) {
			struct req_pdata pd = { UINT32_MAX, 0 };
			uint32_t idx;
			it_ep_handle_t b;

			if (ev.event_number != IT_CM_REQ_CONN_REQUEST_EVENT)
				continue;
			if (ev.conn_req.private_data_present)
				memcpy(&pd, ev.conn_req.private_data,
				       sizeof(pd));
			if (pd.marker != REQ_MARKER) {
				fprintf(stderr, "%s (server): a request "
					"without our private data\n",
					progname);
				exit(1);
			}
			idx = pd.idx;
			b = ep_new(&s);
			if (idx < n) {
				it_lmr_triplet_t t = {
					.lmr = s.lmr,
					.addr.abs = s.slots + (size_t)idx * MSG,
					.length = MSG,
				};

				CHECK(it_post_recv(b, &t, 1, idx, CN));
			}
			CHECK(it_ep_accept(b, ev.conn_req.cn_est_id, NULL,
					   0));
		}
		while (it_evd_dequeue(s.dto, &ev) == IT_SUCCESS) {
			if (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT)
				continue;
			if (ev.dto_cmpl.dto_status == IT_DTO_SUCCESS)
				received++;
		}
		if (verify_wanted && received >= verify_n) {
			size_t bad = 0;

			for (size_t i = 0; i < verify_n; i++) {
				uint64_t want = MAGIC | i, got;

				memcpy(&got, s.slots + i * MSG, MSG);
				if (got != want)
					bad++;
			}
			put_line(out, "verified %zu", bad);
			verify_wanted = false;
			received = 0;
		}
		if (it_evd_wait(s.msgs, 1000, &ev, &nmore) == IT_SUCCESS) {
			do {
				if (ev.event_number ==
					    IT_CM_MSG_CONN_DISCONNECT_EVENT ||
				    ev.event_number ==
					    IT_CM_MSG_CONN_BROKEN_EVENT)
					CHECK(it_ep_free(ev.conn.ep));
			} while (it_evd_dequeue(s.msgs, &ev) == IT_SUCCESS);
		}
		if (!get_line(in, line, sizeof(line), 0))
			continue;
		if (!strncmp(line, "verify ", 7)) {
			verify_n = strtoul(line + 7, NULL, 10);
			verify_wanted = true;
		} else if (!strcmp(line, "usage")) {
			u = usage_now();
			put_line(out, "usage %ld %ld %ld", u.fds, u.threads,
				 u.rss_kb);
		} else if (!strcmp(line, "exit")) {
			CHECK(it_ia_free(s.ia));
			free(s.slots);
			return 0;
		}
	}
}

struct server_args {
	const char *dev;
	size_t n, window;
	int in, out;
	int rc;
};

static void *server_thread(void *data)
{
	struct server_args *a = data;

	a->rc = server(a->dev, a->n, a->window, a->in, a->out);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The client                                                          */
/* ------------------------------------------------------------------ */

struct client {
	struct side s;
	it_path_t path;
	it_conn_qual_t qual;
	it_ep_handle_t *a;
	size_t established;
	int to_srv, from_srv;
};

/* Connect c->a[0..k), at most @window being set up at a time, each
 * asking for a receive in its slot when @verify. */
static void connect_some(struct client *c, size_t k, size_t window,
			 bool verify)
{
	size_t next = 0, base = c->established;
	double deadline = now_s() + 120;

	while (c->established - base < k) {
		it_event_t ev;
		size_t nmore;

		while (next < k && next < c->established - base + window) {
			struct req_pdata pd = {
				verify ? (uint32_t)next : UINT32_MAX,
				REQ_MARKER,
			};

			c->a[next] = ep_new(&c->s);
			CHECK(it_ep_connect(c->a[next], &c->path, NULL,
					    &c->qual, IT_CONNECT_FLAG_TWO_WAY,
					    (const unsigned char *)&pd,
					    sizeof(pd)));
			next++;
		}
		if (it_evd_wait(c->s.msgs, 1000, &ev, &nmore) == IT_SUCCESS) {
			do {
				if (ev.event_number ==
				    IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
					c->established++;
					continue;
				}
				fprintf(stderr, "%s: CM event 0x%x while "
					"connecting\n", progname,
					ev.event_number);
				exit(1);
			} while (it_evd_dequeue(c->s.msgs, &ev) ==
				 IT_SUCCESS);
		}
		if (now_s() > deadline) {
			fprintf(stderr, "%s: %zu of %zu connections "
				"established after 120 s\n", progname,
				c->established - base, k);
			exit(1);
		}
	}
}

/* Disconnect c->a[0..k) gracefully (iWARP: FIN; IB: DREQ, retried, and
 * DREP), at most @window under way at a time, wait until each end
 * reports it, and free them; the server frees its ends when it sees the
 * disconnect. */
static void disconnect_some(struct client *c, size_t k, size_t window)
{
	size_t ended = 0, next = 0;
	double deadline = now_s() + 120;

	while (ended < k) {
		it_event_t ev;
		size_t nmore;

		while (next < k && next < ended + window)
			CHECK(it_ep_disconnect(c->a[next++], NULL, 0));

		if (it_evd_wait(c->s.msgs, 1000, &ev, &nmore) == IT_SUCCESS) {
			do {
				if (ev.event_number ==
					    IT_CM_MSG_CONN_DISCONNECT_EVENT ||
				    ev.event_number ==
					    IT_CM_MSG_CONN_BROKEN_EVENT)
					ended++;
			} while (it_evd_dequeue(c->s.msgs, &ev) ==
				 IT_SUCCESS);
		}
		if (now_s() > deadline) {
			fprintf(stderr, "%s: %zu of %zu disconnects done "
				"after 120 s\n", progname, ended, k);
			exit(1);
		}
	}
	for (size_t i = 0; i < k; i++) {
		CHECK(it_ep_free(c->a[i]));
		c->a[i] = NULL;
	}
}

/* Each connection sends its index, at most @window Sends under way at a
 * time; the server checks its slots. */
static size_t send_all(struct client *c, size_t window)
{
	char line[128];
	size_t done = 0, bad = 0, next = 0;

	put_line(c->to_srv, "verify %zu", c->s.n);
	while (done < c->s.n) {
		it_event_t ev;
		size_t nmore;

		for (; next < c->s.n && next < done + window; next++) {
			it_lmr_triplet_t t = {
				.lmr = c->s.lmr,
				.addr.abs = c->s.slots + next * MSG,
				.length = MSG,
			};
			uint64_t v = MAGIC | next;

			memcpy(c->s.slots + next * MSG, &v, MSG);
			CHECK(it_post_send(c->a[next], &t, 1, next, CN));
		}

		CHECK(it_evd_wait(c->s.dto, TIMEOUT_US, &ev, &nmore));
		if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS) {
			fprintf(stderr, "%s: Send %llu: status %d\n", progname,
				(unsigned long long)ev.dto_cmpl.cookie,
				ev.dto_cmpl.dto_status);
			bad++;
		}
		done++;
	}
	if (!get_line(c->from_srv, line, sizeof(line), 60000) ||
	    strncmp(line, "verified ", 9)) {
		fprintf(stderr, "%s: the server did not receive every "
			"message in 60 s\n", progname);
		exit(1);
	}
	return bad + strtoul(line + 9, NULL, 10);
}

static struct usage_fig server_usage(struct client *c)
{
	struct usage_fig u = { -1, -1, -1 };
	char line[128];

	put_line(c->to_srv, "usage");
	if (!get_line(c->from_srv, line, sizeof(line), 30000) ||
	    sscanf(line, "usage %ld %ld %ld", &u.fds, &u.threads,
		   &u.rss_kb) != 3) {
		fprintf(stderr, "%s: no answer from the server\n", progname);
		exit(1);
	}
	return u;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-d DEVICE] [-n CONNECTIONS] [-c CYCLES] "
		"[-w WINDOW] [--same-process] [--json]\n"
		"Opens CONNECTIONS connections from this process to a "
		"listener in a second\none, checks each with one message, "
		"then connects and disconnects CYCLES\nmore; prints the "
		"set-up rate, memory per connection, and descriptors\nand "
		"threads before and after.\n"
		"  -d, --device=NAME   the device (default: the first one)\n"
		"  -n, --connections=N concurrent connections (default 1000)\n"
		"  -c, --cycles=N      connect/disconnect cycles (default 1000)\n"
		"  -w, --window=N      set-ups under way at once (default 64)\n"
		"      --same-process  the server as a thread of this process "
		"(soft-RoCE\n"
		"                      without a hostrdma-kald: then one "
		"process owns UDP 4791)\n"
		"      --json          one JSON object on standard output\n"
		"  -h, --help          this text\n",
		progname);
}

static size_t parse_count(const char *opt, const char *v, size_t max)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || end == v || n > max || v[0] == '-') {
		fprintf(stderr, "%s: %s %s: expected a number 0..%zu\n",
			progname, opt, v, max);
		exit(2);
	}
	return (size_t)n;
}

/* Enough descriptors for @n connection ends and some. */
static bool nofile_for(size_t n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return true;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= n + 256)
		return true;
	fprintf(stderr, "%s: %zu connections need about %zu descriptors in "
		"each process, RLIMIT_NOFILE allows %llu (ulimit -n)\n",
		progname, n, n + 256, (unsigned long long)rl.rlim_cur);
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "connections", required_argument, NULL, 'n' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "same-process", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_args sa = { 0 };
	bool same = false;
	pthread_t srv_thread;
	size_t conns = 1000, cycles = 1000, window = 64, bad, n_itf = 1;
	struct usage_fig c0, c1, c2, s0, s1, s2;
	struct client c = { .qual.type = IT_IANA_PORT };
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	double t0, t_conn, t_cycle = 0, per_conn;
	int to_srv[2], from_srv[2], opt, status;
	const char *dev = NULL;
	it_interface_t itf;
	char line[128];
	unsigned int port;
	bool json = false;
	size_t total;
	pid_t pid;

	while ((opt = getopt_long(argc, argv, "d:n:c:w:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			conns = parse_count("-n", optarg, 1000000);
			break;
		case 'c':
			cycles = parse_count("-c", optarg, 100000000);
			break;
		case 'w':
			window = parse_count("-w", optarg, 100000);
			break;
		case 'j':
			json = true;
			break;
		case 's':
			same = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !conns || !window) {
		usage(stderr);
		return 2;
	}
	/* Soft-RoCE QPs take two descriptors each (--same-process). */
	if (!nofile_for(same ? 4 * conns : conns))
		return 1;
	if (!dev) {
		it_interface_list(&itf, &n_itf, &total);
		if (!n_itf) {
			fprintf(stderr, "%s: no RDMA interface\n", progname);
			return 1;
		}
		dev = itf.name;
	}
	if (pipe(to_srv) || pipe(from_srv)) {
		perror("pipe");
		return 1;
	}
	fflush(stdout);
	if (same) {
		sa = (struct server_args){ dev, conns, window, to_srv[0],
					   from_srv[1], 0 };
		pid = 0;
		if (pthread_create(&srv_thread, NULL, server_thread, &sa)) {
			fprintf(stderr, "%s: cannot start the server thread\n",
				progname);
			return 1;
		}
	} else {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			close(to_srv[1]);
			close(from_srv[0]);
			exit(server(dev, conns, window, to_srv[0],
				    from_srv[1]));
		}
		close(to_srv[0]);
		close(from_srv[1]);
	}
	c.to_srv = to_srv[1];
	c.from_srv = from_srv[0];
	signal(SIGPIPE, SIG_IGN);
	if (!get_line(c.from_srv, line, sizeof(line), 60000) ||
	    sscanf(line, "port %u", &port) != 1) {
		fprintf(stderr, "%s: the server did not start\n", progname);
		if (pid > 0)
			kill(pid, SIGKILL);
		return 1;
	}
	c.qual.conn_qual.port = htons((uint16_t)port);
	c.a = calloc(conns, sizeof(*c.a));
	if (!c.a) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return 1;
	}
	side_open(&c.s, dev, conns, window);
	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	n_itf = 1;
	CHECK(it_get_pathinfo(c.s.ia, 0, &na, &n_itf, &total, &c.path));
	/* One connection first: what the stack sets up once, lazily (GLib's
	 * default main context in the CM thread, route look-ups), is not
	 * counted as growth. */
	connect_some(&c, 1, 1, false);
	disconnect_some(&c, 1, 1);
	nanosleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
	c0 = usage_now();
	s0 = server_usage(&c);
	if (!json)
		printf("%s: device %s, %zu connections, %zu cycles, window "
		       "%zu\n", progname, dev, conns, cycles, window);

	t0 = now_s();
	connect_some(&c, conns, window, true);
	t_conn = now_s() - t0;
	c1 = usage_now();
	s1 = server_usage(&c);
	/* One process: its growth is both ends'. */
	per_conn = (double)(c1.rss_kb - c0.rss_kb +
			    (same ? 0 : s1.rss_kb - s0.rss_kb)) /
		   (double)conns;
	if (!json && same)
		printf("  %zu connections in %.2f s: %.0f per second; %.1f kB "
		       "of resident memory each (both ends, one process)\n",
		       conns, t_conn, conns / t_conn, per_conn);
	else if (!json)
		printf("  %zu connections in %.2f s: %.0f per second; %.1f kB "
		       "of resident memory each (client %.1f, server %.1f)\n",
		       conns, t_conn, conns / t_conn, per_conn,
		       (double)(c1.rss_kb - c0.rss_kb) / (double)conns,
		       (double)(s1.rss_kb - s0.rss_kb) / (double)conns);
	bad = send_all(&c, window);
	if (!json)
		printf("  one message each: %zu of %zu intact\n",
		       conns - (bad < conns ? bad : conns), conns);
	disconnect_some(&c, conns, window);

	if (cycles) {
		size_t done = 0, next_report = cycles / 10;

		t0 = now_s();
		while (done < cycles) {
			size_t k = cycles - done < window ? cycles - done
							  : window;

			if (k > conns)
				k = conns;
			connect_some(&c, k, window, false);
			disconnect_some(&c, k, window);
			done += k;
			if (!json && cycles >= 10000 && done >= next_report) {
				fprintf(stderr, "  %zu of %zu cycles\n", done,
					cycles);
				next_report += cycles / 10;
			}
		}
		t_cycle = now_s() - t0;
	}
	/* Streams of freed endpoints close in the background: give both
	 * processes a few seconds to get back to where they were. */
	for (int i = 0; i < 100; i++) {
		c2 = usage_now();
		s2 = server_usage(&c);
		if (c2.fds == c0.fds && s2.fds == s0.fds &&
		    c2.threads == c0.threads && s2.threads == s0.threads)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	}
	if (json) {
		printf("{\"device\":\"%s\",\"connections\":%zu,"
		       "\"setup_s\":%.3f,\"setup_per_s\":%.1f,"
		       "\"rss_kb_per_connection\":%.2f,\"messages_bad\":%zu,"
		       "\"cycles\":%zu,\"cycle_s\":%.3f,\"cycles_per_s\":%.1f,"
		       "\"client\":{\"fds\":[%ld,%ld],\"threads\":[%ld,%ld],"
		       "\"rss_kb\":[%ld,%ld,%ld]},"
		       "\"server\":{\"fds\":[%ld,%ld],\"threads\":[%ld,%ld],"
		       "\"rss_kb\":[%ld,%ld,%ld]}}\n",
		       dev, conns, t_conn, conns / t_conn, per_conn,
		       bad, cycles, t_cycle,
		       cycles && t_cycle > 0 ? cycles / t_cycle : 0.0,
		       c0.fds, c2.fds, c0.threads, c2.threads, c0.rss_kb,
		       c1.rss_kb, c2.rss_kb, s0.fds, s2.fds, s0.threads,
		       s2.threads, s0.rss_kb, s1.rss_kb, s2.rss_kb);
	} else {
		if (cycles)
			printf("  %zu connect/disconnect cycles in %.2f s: %.0f per "
			       "second\n", cycles, t_cycle, cycles / t_cycle);
		printf("  client: descriptors %ld -> %ld, threads %ld -> %ld, "
		       "resident %ld -> %ld kB (%ld at the peak)\n", c0.fds,
		       c2.fds, c0.threads, c2.threads, c0.rss_kb, c2.rss_kb,
		       c1.rss_kb);
		printf("  server: descriptors %ld -> %ld, threads %ld -> %ld, "
		       "resident %ld -> %ld kB (%ld at the peak)\n", s0.fds,
		       s2.fds, s0.threads, s2.threads, s0.rss_kb, s2.rss_kb,
		       s1.rss_kb);
	}
	put_line(c.to_srv, "exit");
	CHECK(it_ia_free(c.s.ia));
	free(c.s.slots);
	free(c.a);
	if (same) {
		pthread_join(srv_thread, NULL);
		status = sa.rc << 8;
	} else if (waitpid(pid, &status, 0) != pid) {
		status = -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: the server failed\n", progname);
		return 1;
	}
	if (bad || c2.fds != c0.fds || s2.fds != s0.fds ||
	    c2.threads != c0.threads || s2.threads != s0.threads) {
		fprintf(stderr, "%s: FAILED: %zu bad messages; descriptors "
			"or threads not back where they were\n", progname,
			bad);
		return 1;
	}
	return 0;
}
