/* SPDX-License-Identifier: MIT */
/*
 * siw_tx.h - what the transmit side's files share: the state machine
 * and message selection (siw_tx.c), FPDU building and copied sends
 * (siw_tx_fpdu.c), MSG_ZEROCOPY (siw_tx_zc.c) and the pack of small
 * messages (siw_tx_pack.c). All of it runs under qp->lock.
 */
#ifndef SIW_TX_H
#define SIW_TX_H

#include <sys/types.h>

#include "vp/siw/siw.h"

/* siw_tx_fpdu.c */

/* Fill up to @max iovecs with @len bytes of the source at @off; their
 * count. */
uint32_t siw_tx_gather(const struct iovec *src, uint32_t n_src, uint64_t off,
		       uint32_t len, struct iovec *out, uint32_t max);
/* The regions the message's bytes come from, in *@mrs (not new
 * references), and their count. */
uint32_t siw_tx_src_mrs(struct siw_qp *qp, struct siw_mr *const **mrs);
/* Say that a source region went away mid-message: -EFAULT. */
int siw_tx_dead_mr(struct siw_qp *qp);
/* Build the next FPDUs of the message in tx: 0 or -EFAULT. */
int siw_tx_build_batch(struct siw_qp *qp);
/* One sendmsg() bracketed by the regions' access: bytes, or -errno
 * (-EAGAIN when the socket is full). */
ssize_t siw_tx_sendmsg(struct siw_qp *qp, struct iovec *iov, uint32_t n,
		       int flags);
/* Write the rest of the batch with copies, the pack leading: 0 when all
 * of it is out, -EAGAIN, or -errno for a broken stream. */
int siw_tx_send_copied(struct siw_qp *qp);

/* siw_tx_zc.c */

/* Write the rest of a zero-copy message's one FPDU: 0 when it is out or
 * when tx->zc was dropped (the rest then goes with copies), -EAGAIN, or
 * -errno for a broken stream. */
int siw_tx_zc_send(struct siw_qp *qp);
/* The message just finished went (partly) with MSG_ZEROCOPY: SQ slot
 * @sq_idx (-1 none) completes, and the reference @mr (may be NULL) is
 * dropped, once the kernel reports its last call done. */
void siw_tx_zc_hold(struct siw_qp *qp, int32_t sq_idx, struct siw_mr *mr);

/* siw_tx_pack.c */

/* @n more bytes of the pack are on the stream. */
void siw_tx_pack_sent(struct siw_tx *tx, uint32_t n);
/* Write what the pack still holds, alone: 0 once it is all out,
 * -EAGAIN, or -errno for a broken stream. */
int siw_tx_send_pack(struct siw_qp *qp);
/* Whether the message just built goes into the pack. */
bool siw_tx_pack_wanted(struct siw_qp *qp);
/* Copy its one FPDU there: 0, or -EFAULT when its source region is
 * gone. The message is then done as if it were on the stream. */
int siw_tx_pack_message(struct siw_qp *qp);

#endif /* SIW_TX_H */
