/* SPDX-License-Identifier: MIT */
/*
 * it_util.c - see it_util.h.
 */
#include "config.h"

#include "tests/interop/it_util.h"

#include <arpa/inet.h>
#include <string.h>

const char *it_prog = "it-interop";
int it_verbose;
const char *it_only_ia;

bool it_parse_addr(const char *addr, it_net_addr_t *na)
{
	memset(na, 0, sizeof(*na));
	if (inet_pton(AF_INET, addr, &na->addr.ipv4) == 1) {
		na->addr_type = IT_IPV4;
		return true;
	}
	if (inet_pton(AF_INET6, addr, &na->addr.ipv6) == 1) {
		na->addr_type = IT_IPV6;
		return true;
	}
	return false;
}

void it_expect_ev(const it_event_t *ev, it_event_type_t type)
{
	if (ev->event_number != type ||
	    ((type & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM &&
	     ev->dto_cmpl.dto_status != IT_DTO_SUCCESS)) {
		fprintf(stderr, "%s: event 0x%x (DTO status %d), expected 0x%x\n",
			it_prog, ev->event_number, ev->dto_cmpl.dto_status,
			type);
		exit(1);
	}
}

void it_wait_ev(it_evd_handle_t evd, it_event_type_t type, it_event_t *ev,
		uint64_t timeout_us)
{
	size_t nmore;

	IT_TRY(it_evd_wait(evd, timeout_us, ev, &nmore));
	it_expect_ev(ev, type);
}

it_ia_handle_t it_ia_reaching(const it_net_addr_t *na, it_path_t *path)
{
	it_interface_t itf[16];
	size_t n = 16, total, np;
	it_ia_handle_t ia = NULL;

	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n && !ia; i++) {
		if (it_only_ia && strcmp(itf[i].name, it_only_ia))
			continue;
		if (it_ia_create(itf[i].name, 2, 1, &ia) != IT_SUCCESS)
			continue;
		np = 1;
		if (it_get_pathinfo(ia, 0, na, &np, &total, path) !=
			    IT_SUCCESS ||
		    np != 1) {
			it_ia_free(ia);
			ia = NULL;
		} else if (it_verbose) {
			printf("using interface %s\n", itf[i].name);
		}
	}
	return ia;
}

/* Does one of @ia's spigot addresses name @want (or its GID @g)? */
static bool ia_has(it_ia_handle_t ia, const it_net_addr_t *want,
		   const it_net_addr_t *g)
{
	it_ia_info_t *info;
	bool mine = false;

	if (it_ia_query(ia, &info) != IT_SUCCESS)
		return false;
	for (size_t j = 0; j < info->spigot_info[0].num_net_addr; j++) {
		const it_net_addr_t *a = &info->spigot_info[0].net_addr[j];

		if (a->addr_type == IT_IPV4 && want->addr_type == IT_IPV4 &&
		    a->addr.ipv4.s_addr == want->addr.ipv4.s_addr)
			mine = true;
		if (a->addr_type == IT_IPV6 && want->addr_type == IT_IPV6 &&
		    !memcmp(&a->addr.ipv6, &want->addr.ipv6, 16))
			mine = true;
		/* RoCE spigots name their GIDs. */
		if (a->addr_type == IT_IB_GID && g &&
		    !memcmp(&a->addr.gid, &g->addr.gid, 16))
			mine = true;
	}
	it_ia_info_free(info);
	return mine;
}

it_ia_handle_t it_ia_owning(const it_net_addr_t *want)
{
	it_interface_t itf[16];
	size_t n = 16, total;
	it_net_addr_t g;
	bool have_gid =
		it_convert_net_addr(want, IT_IB_GID, &g) == IT_SUCCESS;

	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n; i++) {
		it_ia_handle_t ia;

		if (it_only_ia && strcmp(itf[i].name, it_only_ia))
			continue;
		if (it_ia_create(itf[i].name, 2, 1, &ia) != IT_SUCCESS)
			continue;
		if (ia_has(ia, want, have_gid ? &g : NULL))
			return ia;
		it_ia_free(ia);
	}
	return NULL;
}
