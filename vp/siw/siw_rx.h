/* SPDX-License-Identifier: MIT */
/*
 * siw_rx.h - what the receive state machine (siw_rx.c) and the header
 * checks (siw_rx_hdr.c) share; nothing outside the receive side uses it.
 */
#ifndef SIW_RX_H
#define SIW_RX_H

#include "vp/siw/siw.h"

/* A step's answer when the socket has no more bytes for now: the state
 * stays as it is. */
#define SIW_RX_WAIT (-1)

/* A step of the receive state machine: the next state, or SIW_RX_WAIT. */
typedef int (*siw_rx_step_fn)(struct siw_qp *qp);

/* Terminate and stop reading FPDUs: the state to go on with. */
static inline int rx_fail(struct siw_qp *qp, uint8_t layer, uint8_t etype,
			      uint8_t ecode, enum rnicpi_event_type event)
{
	/* RFC 5040 §4.8: DDP and RDMAP errors carry the offending headers
	 * back; an MPA (LLP) error says nothing about them. */
	siw_qp_terminate(qp, layer, etype, ecode, layer != TERM_LAYER_LLP,
			 event);
	return SIW_RX_DISCARD;
}

/* Complete the receive WR of the Send in progress with @status (and,
 * on success, what the Send carried), then let go of its regions. */
void siw_rx_complete_rqe(struct siw_qp *qp, enum rnicpi_wc_status status,
			 bool with_inv, uint32_t inv_stag, bool solicited);

/* The FPDU's header is read whole (rx->hdr, hdr_len): check it, set up
 * the payload's lengths, CRC and target. The next state: PAYLOAD,
 * TRAILER, or DISCARD after a Terminate (siw_rx_hdr.c). */
int siw_rx_check_hdr(struct siw_qp *qp);

#endif /* SIW_RX_H */
