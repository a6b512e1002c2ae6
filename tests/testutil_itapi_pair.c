/* SPDX-License-Identifier: MIT */
/* The connected endpoint pair of the itapi-keys and itapi-dto-errors
 * suites (testutil_itapi_pair.h). */
#include "config.h"

#include "tests/testutil_itapi_pair.h"
#ifdef HAVE_PROV_RXE
#include "tests/testutil_rxe.h"
#endif

struct it_fix tu_itapi_pair_fix;
it_ep_handle_t tu_itapi_pair_a, tu_itapi_pair_b;

static void pair_open(void)
{
	it_fix_open(&F);
	A = it_ep_new(&F);
	B = it_ep_new(&F);
	it_connect_pair(&F, A, B);
}

void tu_itapi_pair_setup_siw(void)
{
	it_setup_siw();
	pair_open();
}

void tu_itapi_pair_teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

#ifdef HAVE_PROV_RXE
void tu_itapi_pair_setup_rxe(void)
{
	rxe_t_netns_setup();
	it_setup_rxe();
	pair_open();
}

void tu_itapi_pair_teardown_rxe(void)
{
	tu_itapi_pair_teardown();
	rxe_t_netns_teardown();
}
#endif
