/* SPDX-License-Identifier: MIT */
/* What the files of the tools suite share: check_tools.c (the suite and
 * these helpers to run a tool as a process), check_tools_siw.c and
 * check_tools_rxe.c. */
#ifndef TESTS_CHECK_TOOLS_H
#define TESTS_CHECK_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <glib.h>

#define TOOLS TOOLS_DIR "/"

/* A tool running as a child process. */
struct proc {
	pid_t pid;
	int out;		/* its stdout and stderr */
	GString *text;		/* everything it printed so far */
};

/* Start @argv (argv[0] a path) with stdout and stderr into @p->out. */
void start(struct proc *p, const char *const *argv);
/* The end of @text: Check's failure messages have a size limit. */
const char *tail(const char *text);
/* Reads until @want appears in the output (NULL: until the end). */
bool read_until(struct proc *p, const char *want);
/* Reads to the end and reaps; the exit status (or 128 + signal). */
int finish(struct proc *p);
/* finish(), but a tool still running @secs seconds from now is killed
 * and the test fails. */
int finish_within(struct proc *p, int secs);
/* Frees what @p collected. */
void done(struct proc *p);
/* Children to kill if the test fails before it reaps them: start()
 * tracks its own; tools_kill_leftovers is every tcase's teardown. */
void tools_track_pid(pid_t pid);
void tools_untrack_pid(pid_t pid);
void tools_kill_leftovers(void);

#ifdef HAVE_PROV_SIW
#include <json-glib/json-glib.h>

/* What the siw and rxe cases both check (check_tools.c says how). */
char *free_port(char *buf, size_t len);
GPtrArray *json_lines(const char *text);
void assert_bw(JsonObject *o, const char *test, gint64 size,
	       gint64 iters);
void assert_verified(JsonObject *o);
void assert_rounds(const char *text, const char *prefix, int n);
void assert_scale(const char *text, const char *dev, gint64 conns,
		  gint64 cycles);
void assert_demo_transport(const char *text, const char *name);
#endif

#endif
