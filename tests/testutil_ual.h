/* SPDX-License-Identifier: MIT */
/* Helpers for the ual suites: a hermetic environment around ual_open, the
 * test provider's objects, and an async event recorder. */
#ifndef TESTS_TESTUTIL_UAL_H
#define TESTS_TESTUTIL_UAL_H

#include <glib.h>

#include "ual/ual.h"

/*
 * Fixture: every HOSTRDMA_* variable cleared, HOSTRDMA_CONF empty (no
 * file), HOSTRDMA_PROVIDER_PATH the test provider's directory, no extra
 * built-ins. ual is one context per process, so each test closes what it
 * opened; ut_teardown() checks nothing was left open.
 */
void ut_setup(void);
void ut_teardown(void);

/* ual_open / ual_close asserting success. */
struct ual *ut_open(void);
void ut_close(struct ual *u);
/* The device @name, which must exist (a new reference). */
struct ual_device *ut_device(struct ual *u, const char *name);
/* Number of devices. */
unsigned int ut_device_count(struct ual *u);

/* Some line of @lines contains every one of the NULL-terminated strings. */
bool ut_lines_contain(const GPtrArray *lines, ...) G_GNUC_NULL_TERMINATED;
/* All lines joined, for assertion messages; the caller frees. */
char *ut_lines_text(const GPtrArray *lines);

/* A temporary configuration file with @text; unlink and g_free it. */
char *ut_write_file(const char *text);

/* A QP on @pd with the given CQs (and SRQ), 8 WRs and 2 SGEs each way. */
struct ual_qp *ut_qp(struct ual_pd *pd, struct ual_cq *scq,
		     struct ual_cq *rcq, struct ual_srq *srq);
/* Bring @qp to RTS, "connected" to @dest_qpn (0: none). */
void ut_qp_rts(struct ual_qp *qp, uint32_t dest_qpn);
/* Post one SEND of @len bytes at @addr (lkey of @mr), signalled. */
int ut_post_send(struct ual_qp *qp, uint64_t wr_id, struct ual_mr *mr,
		 void *addr, uint32_t len, unsigned int flags);
int ut_post_recv(struct ual_qp *qp, uint64_t wr_id, struct ual_mr *mr,
		 void *addr, uint32_t len);

/* Records async events; thread-safe; ut_events_wait() blocks until an
 * event of a type arrives (10 s at most, then false). */
struct ut_events {
	GMutex lock;
	GCond cond;
	GArray *events; /* struct ual_async_event (objects not kept) */
};

void ut_events_init(struct ut_events *e);
void ut_events_clear(struct ut_events *e);
void ut_events_cb(const struct ual_async_event *ev, void *user_data);
unsigned int ut_events_count(struct ut_events *e, enum rnicpi_event_type type);
bool ut_events_wait(struct ut_events *e, enum rnicpi_event_type type,
		    unsigned int count);

/* Set interface @ifname up or down in the calling thread's namespace. */
int ut_link_set(const char *ifname, bool up);

#endif
