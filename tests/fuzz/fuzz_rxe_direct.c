/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rxe_direct: the same packets as fuzz_rxe_rcv, sent from the
 * peer's UDP socket (a GSO send for a run) and read the way the progress
 * thread reads them with direct placement on: rxe_rcv_peeked(), which
 * parses the headers it peeked at, asks the responder or completer where
 * the payload goes (rxe_resp_place, rxe_comp_place and their _run
 * forms), reads it there and checks the ICRC after it landed.
 *
 * Input: fz_rxe_run()'s records (fuzz_rxe.h), IPv4 only.
 */
#include "config.h"

#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_rxe.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_rxe_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_rxe_run(data, size, true);
	return 0;
}
