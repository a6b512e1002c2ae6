/* SPDX-License-Identifier: MIT */
/*
 * check-all: runs every Check suite of hostrdma.
 *
 *   tests/check-all               all suites
 *   tests/check-all SUITE...      only the named suites ("kal-netlink")
 *   CK_RUN_CASE=name              only one test case (Check's own variable)
 *   CK_FORK=no                    run in-process (for valgrind)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/suites.h"

static const struct {
	Suite *(*fn)(void);
	const char *name;
} suites[] = {
#define X(fn, name) { fn, name },
	HOSTRDMA_SUITES(X)
#undef X
};

static int wanted(const char *name, int argc, char **argv)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	SRunner *runner = NULL;
	size_t i;
	int failed;

	/* A host's hostrdma-kald is none of the suites' business: each
	 * test that wants one starts its own on a socket of its own
	 * (check_kald.c); every other runs soft-RoCE embedded. */
	setenv("HOSTRDMA_KALD_SOCKET", "", 1);
	for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		Suite *s;

		if (!wanted(suites[i].name, argc, argv))
			continue;
		s = suites[i].fn();
		if (!runner)
			runner = srunner_create(s);
		else
			srunner_add_suite(runner, s);
	}
	if (!runner) {
		fprintf(stderr, "check-all: no suite matches the arguments\n");
		return EXIT_FAILURE;
	}
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
