/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rxe_rcv: RoCEv2 packets (IBA chapter 9: BTH and every extension
 * header, RETH, AETH, AtomicETH, AtomicAckETH, DETH, ImmDt, IETH; annex
 * A17: the ICRC) and UDP GRO runs of them, as the soft-RoCE progress
 * thread hands a datagram it read: rxe_rcv_datagram(), rxe_rcv() with
 * its header checks (rxe_recv.c), then the responder (rxe_resp.c), the
 * completer (rxe_comp.c) or the UD receive, and the ACKs, NAKs, READ
 * responses they send.
 *
 * Input: fz_rxe_run()'s records (fuzz_rxe.h). The harness aims each
 * packet at the RC or UD QP and computes its ICRC when the record asks,
 * so that the fuzzer spends its time past the ICRC check; records that
 * do not ask exercise the ICRC and its IPv4 ID solver.
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
	fz_rxe_run(data, size, false);
	return 0;
}
