/* SPDX-License-Identifier: MIT */
/*
 * Without libFuzzer (configure without --enable-fuzzing): run the target
 * once on each file named on the command line, or on each file in a
 * named directory, so that the corpus and the regression inputs replay
 * in any build (make check-fuzz).
 */
#include "config.h"

#ifndef HOSTRDMA_LIBFUZZER
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "tests/fuzz/fuzz.h"

static int run_file(const char *path)
{
	gchar *data = NULL;
	gsize len = 0;
	GError *err = NULL;

	if (!g_file_get_contents(path, &data, &len, &err)) {
		dprintf(2, "%s\n", err->message);
		g_error_free(err);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	g_free(data);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int runs = 0;
	int failed = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (argv[i][0] == '-')
			continue;	/* libFuzzer's flags: not ours */
		if (stat(argv[i], &st) < 0) {
			dprintf(2, "%s: %s\n", argv[i], g_strerror(errno));
			failed = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i]) < 0;
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d) {
			failed = 1;
			continue;
		}
		while ((e = readdir(d))) {
			gchar *p;

			if (e->d_name[0] == '.')
				continue;
			p = g_build_filename(argv[i], e->d_name, NULL);
			failed |= run_file(p) < 0;
			runs++;
			g_free(p);
		}
		closedir(d);
	}
	/* (on fd 2: a target may have sent stdio's stderr to /dev/null) */
	dprintf(2, "replayed %u inputs\n", runs);
	return failed;
}
#endif
