/* SPDX-License-Identifier: MIT */
/* Helpers shared by the Check suites: log capture, forked children. */
#include "config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "tests/testutil.h"

/* ------------------------------------------------------------------ */
/* Log capture                                                         */
/* ------------------------------------------------------------------ */

struct tu_log_entry {
	GLogLevelFlags level;
	char *message;
};

struct tu_log_capture {
	char *domain; /* NULL: all */
	GArray *entries; /* struct tu_log_entry */
};

static GMutex capture_lock;
static GSList *captures; /* active struct tu_log_capture */

/* tu_log_hook_set's: under hook_lock for reading, hook_users counts the
 * threads running it (hook_cond: went to 0). */
static GMutex hook_lock;
static GCond hook_cond;
static tu_log_hook_fn hook_fn;
static void *hook_data;
static unsigned int hook_users;

static void log_entry_clear(gpointer p)
{
	struct tu_log_entry *e = p;

	g_free(e->message);
}

static const char *level_name(GLogLevelFlags level)
{
	if (level & G_LOG_LEVEL_ERROR)
		return "ERROR";
	if (level & G_LOG_LEVEL_CRITICAL)
		return "CRITICAL";
	if (level & G_LOG_LEVEL_WARNING)
		return "WARNING";
	if (level & G_LOG_LEVEL_MESSAGE)
		return "MESSAGE";
	if (level & G_LOG_LEVEL_INFO)
		return "INFO";
	return "DEBUG";
}

static void run_hook(const char *domain, GLogLevelFlags level,
		     const char *message)
{
	tu_log_hook_fn fn;
	void *data;

	g_mutex_lock(&hook_lock);
	fn = hook_fn;
	data = hook_data;
	if (fn)
		hook_users++;
	g_mutex_unlock(&hook_lock);
	if (!fn)
		return;
	fn(domain, level, message ? message : "", data);
	g_mutex_lock(&hook_lock);
	if (--hook_users == 0)
		g_cond_broadcast(&hook_cond);
	g_mutex_unlock(&hook_lock);
}

static GLogWriterOutput capture_writer(GLogLevelFlags level,
				       const GLogField *fields, gsize n_fields,
				       gpointer unused)
{
	const char *domain = NULL, *message = NULL;
	bool captured = false;
	GSList *l;
	gsize i;

	for (i = 0; i < n_fields; i++) {
		if (g_strcmp0(fields[i].key, "GLIB_DOMAIN") == 0)
			domain = fields[i].value;
		else if (g_strcmp0(fields[i].key, "MESSAGE") == 0)
			message = fields[i].value;
	}
	run_hook(domain, level & G_LOG_LEVEL_MASK, message);

	g_mutex_lock(&capture_lock);
	for (l = captures; l; l = l->next) {
		struct tu_log_capture *cap = l->data;
		struct tu_log_entry e;

		if (cap->domain && g_strcmp0(cap->domain, domain) != 0)
			continue;
		e.level = level & G_LOG_LEVEL_MASK;
		e.message = g_strdup(message ? message : "");
		g_array_append_val(cap->entries, e);
		captured = true;
	}
	g_mutex_unlock(&capture_lock);

	/* Fatal levels must still reach the default writer (it aborts). */
	if (captured && !(level & G_LOG_FLAG_FATAL) &&
	    !g_getenv("TU_LOG_ECHO"))
		return G_LOG_WRITER_HANDLED;
	return g_log_writer_default(level, fields, n_fields, NULL);
}

static void capture_install(void)
{
	static gsize installed;

	if (g_once_init_enter(&installed)) {
		g_log_set_writer_func(capture_writer, NULL, NULL);
		g_once_init_leave(&installed, 1);
	}
}

void tu_log_hook_set(tu_log_hook_fn fn, void *data)
{
	capture_install();
	g_mutex_lock(&hook_lock);
	hook_fn = fn;
	hook_data = data;
	while (!fn && hook_users)
		g_cond_wait(&hook_cond, &hook_lock);
	g_mutex_unlock(&hook_lock);
}

struct tu_log_capture *tu_log_capture_begin(const char *domain)
{
	struct tu_log_capture *cap = g_new0(struct tu_log_capture, 1);

	capture_install();
	cap->domain = g_strdup(domain);
	cap->entries = g_array_new(FALSE, FALSE, sizeof(struct tu_log_entry));
	g_array_set_clear_func(cap->entries, log_entry_clear);
	g_mutex_lock(&capture_lock);
	captures = g_slist_prepend(captures, cap);
	g_mutex_unlock(&capture_lock);
	return cap;
}

void tu_log_capture_end(struct tu_log_capture *cap)
{
	if (!cap)
		return;
	g_mutex_lock(&capture_lock);
	captures = g_slist_remove(captures, cap);
	g_mutex_unlock(&capture_lock);
	g_array_unref(cap->entries);
	g_free(cap->domain);
	g_free(cap);
}

unsigned int tu_log_count(struct tu_log_capture *cap, GLogLevelFlags levels,
			  const char *substring)
{
	unsigned int n = 0;
	guint i;

	g_mutex_lock(&capture_lock);
	for (i = 0; i < cap->entries->len; i++) {
		struct tu_log_entry *e =
			&g_array_index(cap->entries, struct tu_log_entry, i);

		if (!(e->level & levels))
			continue;
		if (substring && !strstr(e->message, substring))
			continue;
		n++;
	}
	g_mutex_unlock(&capture_lock);
	return n;
}

char *tu_log_text(struct tu_log_capture *cap)
{
	GString *s = g_string_new(NULL);
	guint i;

	g_mutex_lock(&capture_lock);
	for (i = 0; i < cap->entries->len; i++) {
		struct tu_log_entry *e =
			&g_array_index(cap->entries, struct tu_log_entry, i);

		g_string_append_printf(s, "%s: %s\n", level_name(e->level),
				       e->message);
	}
	g_mutex_unlock(&capture_lock);
	return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------------ */
/* Forked children                                                     */
/* ------------------------------------------------------------------ */

/* In a child: where tu_child_fail() reports. */
static int child_report_fd = -1;

void tu_child_fail(const char *file, int line, const char *fmt, ...)
{
	char buf[2048];
	int n;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "%s:%d: ", file, line);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (child_report_fd >= 0) {
		/* best effort: the exit status fails the test anyway */
		if (write(child_report_fd, buf, strlen(buf)) < 0)
			fputs(buf, stderr);
	} else {
		fprintf(stderr, "%s\n", buf);
	}
	_exit(1);
}

char *tu_wait_status_str(int status)
{
	if (WIFEXITED(status))
		return g_strdup_printf("exited with %d", WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return g_strdup_printf("killed by signal %d (%s)",
				       WTERMSIG(status),
				       strsignal(WTERMSIG(status)));
	return g_strdup_printf("wait status %#x", status);
}

int tu_fork_child(tu_child_fn fn, void *arg, char **msg)
{
	GString *report;
	int fds[2], status = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	/* don't let the child flush the parent's buffered output twice */
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_report_fd = fds[1];
		fn(arg);
		close(fds[1]);
		_exit(0);
	}
	close(fds[1]);
	/* allocated after fork(): the child would leak it at _exit() */
	report = g_string_new(NULL);
	for (;;) {
		char buf[512];
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		g_string_append_len(report, buf, n);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		ck_assert_int_eq(errno, EINTR);
	*msg = g_string_free(report, FALSE);
	return status;
}

void tu_run_child(tu_child_fn fn, void *arg)
{
	g_autofree char *msg = NULL;
	g_autofree char *how = NULL;
	int status = tu_fork_child(fn, arg, &msg);

	how = tu_wait_status_str(status);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %s: %s", how, msg[0] ? msg : "(no message)");
}

/* Whether a TCP socket can bind 127.0.0.1:@port right now. */
static bool tcp_port_free(uint16_t port)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	ck_assert_int_ge(fd, 0);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in.sin_port = htons(port);
	ok = bind(fd, (struct sockaddr *)&in, sizeof(in)) == 0;
	close(fd);
	return ok;
}

uint16_t tu_free_tcp_ports(unsigned int n)
{
	unsigned int lo = 10000, hi = 32768, eph_lo, eph_hi;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	/* Below the ephemeral range when it leaves room, else above it. */
	if (f) {
		if (fscanf(f, "%u %u", &eph_lo, &eph_hi) == 2) {
			if (eph_lo > lo + 4 * n)
				hi = eph_lo;
			else if (eph_hi + 4 * n < 65536)
				lo = eph_hi + 1, hi = 65536;
		}
		fclose(f);
	}
	ck_assert_uint_gt(hi - lo, n);
	for (int tries = 0; tries < 200; tries++) {
		uint16_t base = (uint16_t)g_random_int_range((gint32)lo,
							     (gint32)(hi - n));
		unsigned int i;

		for (i = 0; i < n && tcp_port_free((uint16_t)(base + i)); i++)
			;
		if (i == n)
			return base;
	}
	ck_abort_msg("no %u free consecutive TCP ports in [%u, %u)", n, lo, hi);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pinned pages                                                        */
/* ------------------------------------------------------------------ */

static bool has_flag(const char *vmflags, const char *flag)
{
	g_auto(GStrv) words = g_strsplit_set(vmflags, " \t\n", -1);
	guint i;

	for (i = 0; words[i]; i++)
		if (strcmp(words[i], flag) == 0)
			return true;
	return false;
}

bool tu_under_valgrind(void)
{
	const char *p = g_getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

bool tu_cap_ipc_lock(bool on)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	uint32_t *eff = &data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective;
	bool was;

	ck_assert_int_eq(syscall(SYS_capget, &hdr, data), 0);
	was = *eff & CAP_TO_MASK(CAP_IPC_LOCK);
	if (on)
		*eff |= CAP_TO_MASK(CAP_IPC_LOCK);
	else
		*eff &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	ck_assert_msg(syscall(SYS_capset, &hdr, data) == 0,
		      "capset CAP_IPC_LOCK %s: %s", on ? "on" : "off",
		      g_strerror(errno));
	return was;
}

struct tu_page_state tu_page_state(const void *addr)
{
	struct tu_page_state st = { 0 };
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	uintptr_t a = (uintptr_t)addr;
	unsigned long size_kb = 0, locked_kb = 0;
	bool in = false, lo = false;
	guint i;

	ck_assert(g_file_get_contents("/proc/self/smaps", &text, NULL, NULL));
	lines = g_strsplit(text, "\n", -1);
	for (i = 0; lines[i]; i++) {
		uintptr_t s, e;
		char dash;

		if (sscanf(lines[i], "%" SCNxPTR "%c%" SCNxPTR " ", &s, &dash,
			   &e) == 3 && dash == '-') {
			if (in)
				break; /* VmFlags is the last line of a block */
			in = a >= s && a < e;
			continue;
		}
		if (!in)
			continue;
		st.found = true;
		sscanf(lines[i], "Size: %lu kB", &size_kb);
		sscanf(lines[i], "Locked: %lu kB", &locked_kb);
		if (g_str_has_prefix(lines[i], "VmFlags:")) {
			lo = has_flag(lines[i] + 8, "lo");
			st.dontfork = has_flag(lines[i] + 8, "dc");
		}
	}
	ck_assert_msg(st.found, "no mapping holds %p", addr);
	/* mlock splits mappings at its edges, so a locked page's mapping is
	 * locked and resident as a whole */
	st.locked = lo && locked_kb == size_kb;
	ck_assert_msg(lo || locked_kb == 0, "%p: %lu kB locked but no lo flag",
		      addr, locked_kb);
	return st;
}
