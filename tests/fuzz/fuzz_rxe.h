/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rxe.h - the soft-RoCE side of the fuzz targets: one device on lo
 * (in a network namespace of the target's own) whose progress thread is
 * stopped, so that the target's thread hands packets to the receive path
 * and runs the transmit work after them (rxe_net_run_work); per input an
 * RC QP connected to a peer at 127.0.0.2 (QPN FZ_RXE_PEER_QPN) and a UD
 * QP; memory at fixed R_Keys and VAs with guard bytes that must stay
 * untouched.
 *
 * R_Keys (registered in this order): FZ_RKEY_RW (remote write, read and
 * atomics), FZ_RKEY_RO (remote read), FZ_RKEY_PD2 (remote write, another
 * PD), each over FZ_RXE_MEM bytes of its own at VA FZ_VA_RW / FZ_VA_RO /
 * FZ_VA_PD2 (the last two must come out of every input unchanged);
 * FZ_LKEY_LOCAL (local write) at FZ_VA_LOCAL for receives and READ
 * sinks. The values are what rnicpi_key_alloc() hands out first on a
 * fresh table whose secret is FZ_KEY_SECRET (fuzz_siw.h; checked).
 */
#ifndef TESTS_FUZZ_FUZZ_RXE_H
#define TESTS_FUZZ_FUZZ_RXE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnicpi/rnicpi.h"

#ifndef FZ_KEY_SECRET
#define FZ_KEY_SECRET 0xfef0481eull /* as in fuzz_siw.h */
#endif
#define FZ_RKEY_RW 0x131u
#define FZ_RKEY_RO 0x256u
#define FZ_RKEY_PD2 0x37bu
#define FZ_LKEY_LOCAL 0x4a0u
#define FZ_VA_RW 0x100000ull
#define FZ_VA_RO 0x200000ull
#define FZ_VA_PD2 0x300000ull
#define FZ_VA_LOCAL 0x400000ull
#define FZ_RXE_MEM 4096u
#define FZ_RXE_LOCAL 16384u

#define FZ_RXE_PEER_QPN 0x777u
#define FZ_RXE_RQ_PSN 1000u	/* what our responder expects first */
#define FZ_RXE_SQ_PSN 5000u	/* our requests' first PSN */
#define FZ_RXE_QKEY 0x11111111u
#define FZ_RXE_PEER_PORT 4791	/* the peer's UDP source port */

/* Flags for fz_rxe_open. */
#define FZ_RXE_MTU_256 0x1u	/* path MTU 256, else 1024 */
#define FZ_RXE_SRQ 0x2u		/* the RC QP's receives through an SRQ */
#define FZ_RXE_REQUESTS 0x4u	/* a WRITE, READ, two atomics and a SEND
				 * of ours outstanding (the completer's) */
#define FZ_RXE_NO_ATOMIC 0x8u	/* the RC QP grants no remote atomics */

struct fz_rxe {
	struct rnicpi_cq *scq, *rcq;
	struct rnicpi_srq *srq;
	struct rnicpi_qp *qp;		/* RC */
	struct rnicpi_qp *uqp;		/* UD */
};

void fz_rxe_init(void);
void fz_rxe_open(struct fz_rxe *w, unsigned int flags);
void fz_rxe_close(struct fz_rxe *w);

/*
 * One record of an input: how the harness treats the bytes of a packet
 * (or, with a segment size, a UDP GRO run of packets).
 *   ctl bits 0-1  DestQP rewritten: 0 to the RC QP, 1 to the UD QP,
 *                 2-3 left as it is
 *       bit 2     the ICRC computed and written (else as it came)
 *       bit 3     then the RC QP's retransmission timer fires
 *       bits 4-6  the IPv4 ID the peer's kernel used (0, or a value the
 *                 receiver must solve for, annex A17.3.3)
 *       bit 7     from [::2] to [::1] (fz_rxe_deliver only)
 */
#define FZ_RXE_CTL_QP_MASK 0x3u
#define FZ_RXE_CTL_ICRC 0x4u
#define FZ_RXE_CTL_TIMER 0x8u
#define FZ_RXE_CTL_V6 0x80u

/* Aim and seal (per @ctl) the @seg-byte segments of @buf, @len bytes
 * (@seg 0: one packet); segment k's ICRC takes IPv4 ID @id0 + k. */
void fz_rxe_prepare(struct fz_rxe *w, uint8_t ctl, uint8_t *buf,
		    uint32_t len, uint32_t seg, uint16_t id0);
/* The ICRC of a packet from the peer (@len bytes with the ICRC). */
uint32_t fz_rxe_icrc(const uint8_t *pkt, uint32_t len, uint16_t ip_id);

/*
 * A whole input: the open flags (FZ_RXE_*), then records of a ctl byte,
 * a segment size in 16-byte units (0: one packet), a 16-bit length and
 * that many bytes; each handed over by fz_rxe_deliver(), or with
 * @via_socket by fz_rxe_send().
 */
void fz_rxe_run(const uint8_t *data, size_t size, bool via_socket);

/* rxe_rcv_datagram() on @buf as the progress thread would hand it a
 * datagram of @len bytes (@seg: the GRO segment size, 0 none), then the
 * transmit work and, per @ctl, the timer. */
void fz_rxe_deliver(struct fz_rxe *w, uint8_t ctl, uint8_t *buf,
		    uint32_t len, uint32_t seg);
/* Send @buf from the peer's socket to the device's (one datagram, or a
 * UDP GSO run of @seg-byte segments), then read it the way the progress
 * thread does with direct placement on (rxe_rcv_peeked, else a plain
 * receive), then the transmit work and, per @ctl, the timer. */
void fz_rxe_send(struct fz_rxe *w, uint8_t ctl, const uint8_t *buf,
		 uint32_t len, uint32_t seg);

#endif
