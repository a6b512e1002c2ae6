/* SPDX-License-Identifier: MIT */
/*
 * it_util.h - what the IT-API interop programs (it-rping, it-udaddy)
 * share: address parsing, waiting for one event, finding the IA that
 * reaches or owns an address. Every failure exits the program with a
 * message that starts with its name.
 */
#ifndef TESTS_INTEROP_IT_UTIL_H
#define TESTS_INTEROP_IT_UTIL_H

#include "it_api.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Set by each program's main(): its name, -v, and -d (NULL: any IA). */
extern const char *it_prog;
extern int it_verbose;
extern const char *it_only_ia;

#define IT_TRY(call)                                                        \
	do {                                                                \
		it_status_t st_ = (call);                                   \
		if (st_ != IT_SUCCESS) {                                    \
			fprintf(stderr, "%s: %s: status %d\n", it_prog,     \
				#call, st_);                                \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* An IPv4 or IPv6 address into @na; false if @addr is neither. */
bool it_parse_addr(const char *addr, it_net_addr_t *na);

/* @ev must be @type (and a successful DTO); anything else ends the
 * program. */
void it_expect_ev(const it_event_t *ev, it_event_type_t type);

/* The next event on @evd within @timeout_us, as it_expect_ev() checks
 * it. */
void it_wait_ev(it_evd_handle_t evd, it_event_type_t type, it_event_t *ev,
		uint64_t timeout_us);

/* The IA (of -d, or the first) with a path to @na, its path in @path;
 * NULL if none. */
it_ia_handle_t it_ia_reaching(const it_net_addr_t *na, it_path_t *path);

/* The IA one of whose spigots owns @want (its IP address, or for RoCE
 * the GID made of it); NULL if none. */
it_ia_handle_t it_ia_owning(const it_net_addr_t *want);

#endif
