/* SPDX-License-Identifier: MIT */
/*
 * Soft-RoCE's network layer inside the provider: what rxe_net.c (receive
 * sockets, the progress thread), rxe_tx.c (transmit) and rxe_poll_rx.c
 * (option poll_rx: an application thread that polls reads the receive
 * sockets itself) share. Nothing outside these files includes it.
 */
#ifndef HOSTRDMA_VP_RXE_RXE_NET_H
#define HOSTRDMA_VP_RXE_RXE_NET_H

#include "vp/rxe/rxe.h"

struct rx_batch;

/* rxe_net.c */

/* Socket buffers of 8 MiB for @fd (SO_RCVBUFFORCE/SO_RCVBUF or the send
 * pair): forced where allowed, else what net.core's limit allows. */
void rxe_net_set_bufsize(int fd, int opt_force, int opt);

/* Read @rounds recvmmsg() batches at most from GID @gid_index's receive
 * socket into @b and hand each packet on (rx_lock held). */
void rxe_net_rx_drain(struct rxe_dev *dev, int gid_index,
		      struct rx_batch *b, uint32_t *seed, int rounds);
/* Send the ACKs the device's QPs have queued. */
void rxe_net_flush_acks(struct rxe_dev *dev);
/* One burst of transmit work for each QP that asked; whether some is
 * left. */
bool rxe_net_run_pending(struct rxe_dev *dev);

/* rxe_poll_rx.c */

/* At rxe_net_start(): the park timer. */
void rxe_poll_rx_init(struct rxe_dev *dev);
/* The progress thread read the sockets and found less than a batch
 * (rx_lock held): leave them to a consumer that polls. */
void rxe_poll_rx_park_maybe(struct rxe_dev *dev);

#endif
