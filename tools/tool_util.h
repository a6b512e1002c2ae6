/* SPDX-License-Identifier: MIT */
/*
 * tool_util.h - what the hostrdma tools share. The tools are IT-API
 * programs: this header and tool_util.c use it_api.h only.
 */
#ifndef HOSTRDMA_TOOL_UTIL_H
#define HOSTRDMA_TOOL_UTIL_H

#ifndef ITAPI_ENABLE_V21_BINDINGS
#define ITAPI_ENABLE_V21_BINDINGS
#endif
#include "it_api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>
#include <signal.h>

/* Events the tools wait for, in microseconds. */
#define TOOL_WAIT_US (30ull * 1000 * 1000)

/* The status's name ("IT_ERR_OP_NOT_SUPPORTED"), or "status N". */
const char *tool_status_name(it_status_t st);
/* "siw_lo, rxe_lo" in @buf: the devices there are ("none"). */
const char *tool_device_names(char *buf, size_t len);
const char *tool_dto_status_name(it_dto_status_t st);
const char *tool_event_name(it_event_type_t ev);
const char *tool_transport_name(it_transport_type_t t);

/* Prints "PROG: WHAT: STATUS" to stderr; returns -1 for st != success. */
int tool_check(const char *prog, const char *what, it_status_t st);

/* An IPv4 or IPv6 literal (or a name getaddrinfo knows) to an IT-API
 * network address. 0, or -1 with a message on stderr. */
int tool_parse_addr(const char *prog, const char *text, it_net_addr_t *out);
/* The address as text, in @buf of @len bytes. */
const char *tool_addr_str(const it_net_addr_t *a, char *buf, size_t len);

/*
 * The IA to use: @device when given (the interface name), otherwise the
 * first IA with a path to @dst (it_get_pathinfo), the path in @path.
 * NULL with a message on stderr when none.
 */
it_ia_handle_t tool_ia_for_dest(const char *prog, const char *device,
				const it_net_addr_t *dst, it_path_t *path);
/*
 * A client's device selection (docs/DEVICES.md). Without @device every
 * device it_interface_list names (the order hostrdma-info -l shows) that
 * opens and has a path to the destination is tried in turn until one
 * connects: a device that does not open (soft-RoCE's port held by another
 * process), a refusal and an unreachable destination move on at once, a
 * time-out after the wait. A rejection by the server itself ends the
 * search. With @device only that device is tried. @verbose: says which
 * device each try uses.
 *
 *	tool_sel_init(&s, ...);
 *	while ((ia = tool_sel_next(&s, &path))) {
 *		set up on ia, it_ep_connect, wait (st, ev);
 *		rc = tool_sel_outcome(&s, st, &ev);
 *		if (rc <= 0)
 *			break;		(0 connected, -1 give up)
 *		it_ia_free(ia);
 *	}
 */
struct tool_sel {
	const char *prog;
	const char *device;
	it_net_addr_t dst;
	uint16_t port;
	bool verbose;
	size_t next, n, tried;
	size_t unopened;	/* devices whose it_ia_create failed */
	const char *current;
	it_interface_t itf[64];
};

void tool_sel_init(struct tool_sel *s, const char *prog, const char *device,
		   const it_net_addr_t *dst, uint16_t port, bool verbose);
/* The next device's IA and its path to the destination; NULL with a
 * message when there is none left. */
it_ia_handle_t tool_sel_next(struct tool_sel *s, it_path_t *path);
/* What a wait for IT_CM_MSG_CONN_ESTABLISHED_EVENT returned (@st, and @ev
 * when it succeeded): 0 connected, 1 this device did not connect (said
 * why; try the next), -1 give up (said why). */
int tool_sel_outcome(struct tool_sel *s, it_status_t st,
		     const it_event_t *ev);
/* The sentence for a connection that did not come up (@st, @ev as above),
 * e.g. "connection refused: nobody listens on port 30050 at 10.0.0.2". */
const char *tool_conn_failure(const it_net_addr_t *dst, uint16_t port,
			      it_status_t st, const it_event_t *ev,
			      char *buf, size_t len);

/* The IA named @device, or the IA one of whose spigots holds @addr. */
it_ia_handle_t tool_ia_owning(const char *prog, const char *device,
			      const it_net_addr_t *addr);

/*
 * A server's listener on @port: on the IA named @device, or else on every
 * IA that can listen (each software transport, each interface) and, with
 * @bind, holds that address; it keeps the one the first connection
 * request arrives on (its IA, connection request EVD of @req_depth
 * events, and listener; the others are freed). @ready(@arg) is called
 * once listening, before the wait. 0, or -1 with a message, or 1 when a
 * signal with a handler (SIGINT, SIGTERM) interrupted the wait for the
 * first request (nothing printed, nothing left open).
 */
int tool_listen(const char *prog, const char *device, const char *bind,
		uint16_t port, size_t req_depth, bool quiet,
		void (*ready)(void *arg), void *arg, it_ia_handle_t *ia,
		it_evd_handle_t *req, it_listen_handle_t *listen);

/*
 * Waits up to @timeout_us for one event on @evd and checks it is @type
 * (and, for a DTO, successful). 0, or -1 with a message naming what came.
 */
int tool_wait_event(const char *prog, it_evd_handle_t evd,
		    it_event_type_t type, uint64_t timeout_us, it_event_t *ev);
/* The checks of tool_wait_event on what a wait of the caller's own
 * returned (@st, and @ev when it succeeded). */
int tool_check_event(const char *prog, it_event_type_t type, it_status_t st,
		     const it_event_t *ev);

/* Raises RLIMIT_MEMLOCK as far as allowed (root: unlimited): registered
 * memory is pinned, and the default 8 MiB is less than one 8 MiB run. */
void tool_raise_memlock(void);

/* What registrations may pin now, in bytes: RLIMIT_MEMLOCK's soft limit,
 * or UINT64_MAX when it is unlimited or this thread holds CAP_IPC_LOCK
 * (hostrdma lets it pass the limit, as the kernel's RDMA stack does). */
uint64_t tool_memlock_limit(void);

/*
 * The start of every tool's main: the user's locale (GLib's messages and
 * their quotes) but C's numbers, and the program name GLib's messages
 * use.
 */
void tool_init(const char *prog);

/*
 * Parses the command line with @ctx (whose description should name the
 * man page). On an error prints "PROG: MESSAGE" and a hint to --help on
 * stderr and returns -1: the tools then exit 2. --help exits 0 in GLib.
 */
int tool_parse_options(const char *prog, GOptionContext *ctx, int *argc,
		       char ***argv);

/*
 * @text as a whole decimal number from @lo to @hi
 * (g_ascii_string_to_unsigned); -1 with "PROG: OPT TEXT: why" on stderr
 * when it is not, naming the value.
 */
int tool_parse_uint(const char *prog, const char *opt, const char *text,
		    guint64 lo, guint64 hi, guint64 *out);

/*
 * SIGINT and SIGTERM set *@flag and interrupt the calling thread's
 * waits (poll, it_evd_wait: IT_ERR_INTERRUPT). The library's own threads
 * (its connection manager, a provider's progress engine) do not block
 * signals, so the kernel may deliver one there: the handler then sends
 * it on to the thread that called this.
 */
void tool_catch_stop_signals(volatile sig_atomic_t *flag);

/* Monotonic time in nanoseconds. */
uint64_t tool_now_ns(void);

#endif
