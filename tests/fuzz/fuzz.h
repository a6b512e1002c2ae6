/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the fuzz targets of tests/fuzz share: the libFuzzer entry
 * points, a reader that takes the harness's choices from the front of an
 * input, quiet logging, the private network namespace the soft-RoCE
 * targets run in, and the check that aborts (a crash to libFuzzer) when
 * the code under test broke a promise.
 *
 * Each target feeds remote bytes to a real parser entry point of the
 * stack (docs/FUZZING.md lists them). Built with --enable-fuzzing they
 * link libFuzzer; otherwise fuzz_main.c replays files through them.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report on the real stderr (even after fz_stdio_quiet()) and abort. */
void fz_fail(const char *file, int line, const char *what)
	__attribute__((noreturn));

/* A promise of the code under test, or of the harness, broke. */
#define FZ_CHECK(cond)                                                      \
	do {                                                                \
		if (!(cond))                                                \
			fz_fail(__FILE__, __LINE__, #cond);                 \
	} while (0)

/* The unread rest of an input. */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	return (uint16_t)(fz_u8(in) << 8 | fz_u8(in));
}

/* Up to @max bytes from the front; *@len how many. */
static inline const uint8_t *fz_take(struct fz_in *in, size_t max,
				     size_t *len)
{
	const uint8_t *p = in->p;

	*len = in->n < max ? in->n : max;
	in->p += *len;
	in->n -= *len;
	return p;
}

/*
 * GLib messages: dropped (a hostile peer makes the stack log a line per
 * packet, which would be most of the run time), except criticals and
 * errors, which mean a g_return_if_fail() or worse was reached from
 * remote input: those abort. FUZZ_LOG=1 in the environment lets every
 * message through to stderr, for reading what an input does.
 */
void fz_log_init(void);

/*
 * Move this process into a network namespace of its own with lo up, so
 * that UDP port 4791 on 127.0.0.1 is ours and what the stack sends goes
 * nowhere else. Without the right (no CAP_SYS_ADMIN) the machine's own
 * namespace is used, with a line on stderr saying so.
 */
void fz_netns_enter(void);

/* stdout and stdio's stderr to /dev/null, for code that prints a line per
 * refused message (the sanitizers write to fd 2 themselves). */
void fz_stdio_quiet(void);

#endif
