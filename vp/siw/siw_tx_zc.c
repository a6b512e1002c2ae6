/* SPDX-License-Identifier: MIT */
/*
 * siw_tx_zc.c - messages sent with MSG_ZEROCOPY (option zcopy_min): the
 * kernel sends from the user's pages and says on the socket's error
 * queue when it no longer needs them; the WR completes (a Read Response
 * lets go of its region) only then.
 */
#include "config.h"

#include <errno.h>
#include <time.h> /* before linux/errqueue.h, which needs timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "vp/siw/siw_tx.h"

void siw_tx_zc_setup(struct siw_qp *qp)
{
	int one = 1;

	qp->zc_enabled = false;
	qp->zc_next = qp->zc_done = 0;
	qp->zc_head = qp->zc_count = 0;
	if (!qp->dev->opts.zcopy_min || qp->fd < 0)
		return;
	if (!qp->zc_pend)
		qp->zc_pend = calloc(SIW_ZC_PENDING, sizeof(*qp->zc_pend));
	if (!qp->zc_pend) {
		siw_qp_info(qp, "zero-copy: no memory; sending with copies");
		return;
	}
	if (setsockopt(qp->fd, SOL_SOCKET, SO_ZEROCOPY, &one,
		       sizeof(one)) < 0) {
		siw_qp_info(qp, "SO_ZEROCOPY: %s; sending with copies",
			    g_strerror(errno));
		return;
	}
	qp->zc_enabled = true;
}

/* Whether zero-copy call id @a comes before @b (serial number
 * arithmetic: the ids wrap, and fewer than 2^31 are ever in flight). */
static inline bool zc_id_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* What a finished zero-copy message was waiting for. */
static void zc_release(struct siw_qp *qp, struct siw_zc_pending *z)
{
	if (z->sq_idx >= 0)
		siw_sq_complete(qp, (uint32_t)z->sq_idx, RNICPI_WC_SUCCESS, 0);
	siw_mr_put(z->mr);
	z->mr = NULL;
}

void siw_tx_zc_flush(struct siw_qp *qp)
{
	while (qp->zc_count) {
		struct siw_zc_pending *z = &qp->zc_pend[qp->zc_head];

		siw_mr_put(z->mr);
		z->mr = NULL;
		qp->zc_head = (qp->zc_head + 1) % SIW_ZC_PENDING;
		qp->zc_count--;
	}
}

void siw_tx_zc_reap(struct siw_qp *qp)
{
	char control[256];

	if (!qp->zc_enabled || qp->fd < 0)
		return;
	for (;;) {
		struct msghdr msg = { .msg_control = control,
				      .msg_controllen = sizeof(control) };
		struct cmsghdr *cm;

		if (recvmsg(qp->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			const struct sock_extended_err *e;

			if (!((cm->cmsg_level == SOL_IP &&
			       cm->cmsg_type == IP_RECVERR) ||
			      (cm->cmsg_level == SOL_IPV6 &&
			       cm->cmsg_type == IPV6_RECVERR)))
				continue;
			e = (const void *)CMSG_DATA(cm);
			if (e->ee_errno || e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			/* TCP releases in order: [ee_info, ee_data] follows
			 * what was reported before. The ids are the kernel's
			 * 32-bit call counter and wrap after 2^32 calls:
			 * compared as serial numbers. */
			if (zc_id_before(qp->zc_done, e->ee_data + 1))
				qp->zc_done = e->ee_data + 1;
		}
	}
	while (qp->zc_count &&
	       zc_id_before(qp->zc_pend[qp->zc_head].last_id, qp->zc_done)) {
		zc_release(qp, &qp->zc_pend[qp->zc_head]);
		qp->zc_head = (qp->zc_head + 1) % SIW_ZC_PENDING;
		qp->zc_count--;
	}
}

void siw_tx_zc_hold(struct siw_qp *qp, int32_t sq_idx, struct siw_mr *mr)
{
	struct siw_zc_pending *z =
		&qp->zc_pend[(qp->zc_head + qp->zc_count) % SIW_ZC_PENDING];

	z->last_id = qp->zc_next - 1;
	z->sq_idx = sq_idx;
	z->mr = mr;
	qp->zc_count++;
	/* Its notification comes as EPOLLERR: the socket must be watched */
	if (!qp->watched)
		siw_qp_poll_update(qp, false);
}

/*
 * The kernel may read the payload's pages long after sendmsg() returned,
 * which is fine for the WR's memory (the WR completes only after the
 * notification) but not for our header and trailer buffers, which the
 * next FPDU rewrites; those go in their own calls, copied, with MSG_MORE
 * to keep segments full. A zero-copy batch is one FPDU, and whatever the
 * pack holds goes out before it.
 */
int siw_tx_zc_send(struct siw_qp *qp)
{
	struct siw_tx *tx = &qp->tx;
	const struct siw_tx_fpdu *f = &tx->fpdu[0];
	struct iovec iov[SIW_MAX_SGE];

	while (tx->zc && tx->fpdu_sent < tx->fpdu_total) {
		uint32_t n = 0, skip = tx->fpdu_sent;
		int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
		bool zc_call = false;
		ssize_t rc;
		int err;

		err = siw_tx_send_pack(qp);
		if (err)
			return err;
		if (skip < f->hdr_len) {
			/* header alone */
			iov[n].iov_base = (uint8_t *)f->hdr + skip;
			iov[n].iov_len = f->hdr_len - skip;
			n++;
			flags |= MSG_MORE;
		} else if (skip - f->hdr_len < f->payload) {
			/* payload alone, zero-copy */
			skip -= f->hdr_len;
			n += siw_tx_gather(tx->src, tx->n_src, f->off + skip,
					   f->payload - skip, iov + n,
					   SIW_MAX_SGE);
			zc_call = true;
			flags |= MSG_ZEROCOPY | MSG_MORE;
		} else {
			skip -= f->hdr_len + f->payload;
			iov[n].iov_base = (uint8_t *)f->trailer + skip;
			iov[n].iov_len = f->trailer_len - skip;
			n++;
		}
		rc = siw_tx_sendmsg(qp, iov, n, flags);
		if (rc == -ENOBUFS && zc_call) {
			/* Out of optmem for notifications: copy instead. */
			tx->zc = false;
			continue;
		}
		if (rc < 0)
			return (int)rc;
		if (zc_call) {
			qp->zc_next++;
			tx->zc_used = true;
		}
		tx->fpdu_sent += (uint32_t)rc;
	}
	return 0;
}
