/* SPDX-License-Identifier: MIT */
/* What the fuzz targets share; see fuzz.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "tests/fuzz/fuzz.h"

static FILE *fz_err;

void fz_fail(const char *file, int line, const char *what)
{
	fprintf(fz_err ? fz_err : stderr, "%s:%d: check failed: %s\n", file,
		line, what);
	fflush(fz_err ? fz_err : stderr);
	abort();
}

static GLogWriterOutput fz_log_writer(GLogLevelFlags level,
				      const GLogField *fields, gsize n,
				      gpointer data)
{
	if (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
		g_log_writer_standard_streams(level, fields, n, data);
		fz_fail(__FILE__, __LINE__,
			"a GLib critical or error from remote input");
	}
	if (data)
		return g_log_writer_standard_streams(level, fields, n, NULL);
	return G_LOG_WRITER_HANDLED;
}

void fz_log_init(void)
{
	const char *v = getenv("FUZZ_LOG");

	g_log_set_writer_func(fz_log_writer,
			      v && *v && strcmp(v, "0") ? (gpointer)1 : NULL,
			      NULL);
}

void fz_stdio_quiet(void)
{
	FILE *null = fopen("/dev/null", "w");

	if (!null || getenv("FUZZ_LOG"))
		return;
	fz_err = stderr;
	stdout = null;
	stderr = null;
}

void fz_netns_enter(void)
{
	struct ifreq ifr;
	int s;

	if (unshare(CLONE_NEWNET) < 0) {
		fprintf(stderr, "fuzz: no network namespace of our own (%s): "
			"sharing the machine's, UDP port 4791 on lo\n",
			g_strerror(errno));
		return;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	FZ_CHECK(s >= 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	FZ_CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	FZ_CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
	close(s);
}
