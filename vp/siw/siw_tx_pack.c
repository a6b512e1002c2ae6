/* SPDX-License-Identifier: MIT */
/*
 * siw_tx_pack.c - the pack (option tx_pack): small whole messages queued
 * back to back are copied, FPDU by FPDU, into one buffer that goes out
 * with one sendmsg(), ahead of whatever follows them on the stream; a
 * copy costs less than a system call each.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "vp/siw/siw_tx.h"

/* @n more bytes of the pack are on the stream. */
void siw_tx_pack_sent(struct siw_tx *tx, uint32_t n)
{
	tx->pack_sent += n;
	if (tx->pack_sent == tx->pack_len)
		tx->pack_len = tx->pack_sent = 0;
}

/* Write what the pack still holds, alone: 0 once it is all out, -EAGAIN,
 * or -errno for a broken stream. */
int siw_tx_send_pack(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	while (tx->pack_sent < tx->pack_len) {
		ssize_t rc = send(qp->fd, tx->pack + tx->pack_sent,
				  tx->pack_len - tx->pack_sent,
				  MSG_DONTWAIT | MSG_NOSIGNAL);

		if (rc < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -EAGAIN;
			return -errno;
		}
		qp->tx_calls++;
		siw_tx_pack_sent(tx, (uint32_t)rc);
	}
	return 0;
}

/* Whether another message waits to go out behind the one in tx. */
static bool tx_more_waiting(struct siw_qp *qp)
{
	if (qp->tx.kind == SIW_TX_RRESP)
		return qp->irq_count > 1 || qp->sq_unstarted;
	return qp->irq_count || qp->sq_unstarted;
}

/* The message just built goes into the pack: it is small (option
 * tx_pack), whole in its one FPDU, not sent with MSG_ZEROCOPY, fits, and
 * either more messages wait behind it or the pack has started already. */
bool siw_tx_pack_wanted(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;

	if ((tx->kind != SIW_TX_SQ && tx->kind != SIW_TX_RRESP) || tx->zc ||
	    !qp->dev->opts.tx_pack || tx->msg_len > qp->dev->opts.tx_pack ||
	    tx->msg_off ||
	    tx->n_fpdu != 1 || tx->batch_payload != tx->msg_len ||
	    tx->fpdu_sent || tx->pack_len + tx->fpdu_total > SIW_TX_PACK)
		return false;
	if (!tx->pack_len && !tx_more_waiting(qp))
		return false;
	if (!tx->pack)
		tx->pack = malloc(SIW_TX_PACK);
	return tx->pack != NULL;
}

/* Copy the message's one FPDU into the pack: its bytes are ours now, as
 * they would be the socket's, and the message is as good as on the
 * stream. 0, or -EFAULT when its source region is gone. */
int siw_tx_pack_message(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	const struct siw_tx_fpdu *f = &tx->fpdu[0];
	uint8_t *p = tx->pack + tx->pack_len;
	struct iovec iov[SIW_MAX_SGE];
	struct siw_mr *const *mrs;
	uint32_t i, n, n_mr = siw_tx_src_mrs(qp, &mrs);

	memcpy(p, f->hdr, f->hdr_len);
	p += f->hdr_len;
	if (!siw_mrs_access_begin(mrs, n_mr))
		return siw_tx_dead_mr(qp);
	n = siw_tx_gather(tx->src, tx->n_src, 0, f->payload, iov, SIW_MAX_SGE);
	for (i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	siw_mrs_access_end(mrs, n_mr);
	memcpy(p, f->trailer, f->trailer_len);
	tx->pack_len += tx->fpdu_total;
	tx->msg_off = tx->msg_len;
	return 0;
}
