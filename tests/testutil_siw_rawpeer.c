/* SPDX-License-Identifier: MIT */
/* A raw iWARP peer that lies; see testutil_siw_rawpeer.h. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <glib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testutil_siw_rawpeer.h"
#include "tests/testutil.h"
#include "vp/siw/siw.h"

void raw_send_bytes(struct rawpeer *r, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(r->fd, p, len, MSG_NOSIGNAL);

		ck_assert_int_gt(n, 0);
		p += n;
		len -= (size_t)n;
	}
}

/* Read exactly @len bytes: 0, -ETIMEDOUT or -ECONNRESET. */
static int read_exact(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) != 1)
			return -ETIMEDOUT;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int raw_connect(struct rawpeer *r, struct h_side *s, uint8_t rev,
		uint8_t flags, const struct mpa_v2_data *v2, bool accept)
{
	struct rnicpi_conn_param cp = { 0 };
	struct mpa_rr req;
	int cfd, sfd, rc;
	uint16_t pd;

	memset(r, 0, sizeof(*r));
	h_tcp_pair(&cfd, &sfd);
	r->fd = cfd;
	mpa_rr_init(&req, true, rev, flags,
		    (flags & MPA_FLAG_ENHANCED) ? sizeof(*v2) : 0);
	raw_send_bytes(r, &req, sizeof(req));
	if (flags & MPA_FLAG_ENHANCED)
		raw_send_bytes(r, v2, sizeof(*v2));
	rc = s->d->ops->iw_take_request(s->d->dev, sfd, NULL, &r->conn);
	ck_assert_int_eq(rc, 0);
	if (accept) {
		if (!h_wait_conn(s->d, RNICPI_CONN_REQUEST, r->conn, NULL,
				 H_WAIT_MS))
			return -ETIMEDOUT;
		rc = s->d->ops->conn_accept(r->conn, s->qp, &cp);
		if (rc)
			return rc;
	}
	rc = read_exact(cfd, &r->reply, sizeof(r->reply), H_WAIT_MS);
	if (rc)
		return rc;
	pd = mpa_rr_pd_len(&r->reply);
	ck_assert_uint_le(pd, sizeof(r->reply_v2));
	if (pd) {
		rc = read_exact(cfd, &r->reply_v2, pd, H_WAIT_MS);
		if (rc)
			return rc;
	}
	r->crc = r->reply.flags & MPA_FLAG_CRC;
	return 0;
}

int raw_accept(struct rawpeer *r, struct h_side *s)
{
	return raw_accept_ird(r, s, 4);
}

static int accept_with(struct rawpeer *r, struct h_side *s, uint16_t ird,
		       bool large)
{
	struct rnicpi_conn_param cp = { .ird = 4, .ord = 4 };
	struct mpa_rr req, rep;
	struct mpa_v2_data v2;
	uint8_t pd[MPA_MAX_PRIVATE_DATA];
	int cfd, sfd, rc;

	memset(r, 0, sizeof(*r));
	h_tcp_pair(&cfd, &sfd);
	r->fd = sfd;
	ck_assert_ok(s->d->ops->iw_connect(s->qp, cfd, &cp));
	rc = read_exact(sfd, &req, sizeof(req), H_WAIT_MS);
	if (rc)
		return rc;
	ck_assert(mpa_rr_is_request(&req));
	ck_assert_uint_le(mpa_rr_pd_len(&req), sizeof(pd));
	rc = read_exact(sfd, pd, mpa_rr_pd_len(&req), H_WAIT_MS);
	if (rc)
		return rc;
	r->crc = req.flags & MPA_FLAG_CRC;
	if (large)
		ck_assert(req.flags & MPA_FLAG_LARGE_FPDU);
	mpa_rr_init(&rep, false, MPA_REV2,
		    MPA_FLAG_ENHANCED | (req.flags & MPA_FLAG_CRC) |
			    (large ? MPA_FLAG_LARGE_FPDU | MPA_FLAG_HOSTRDMA
				   : 0),
		    sizeof(v2));
	mpa_v2_set(&v2, ird, 4, false, 0);
	raw_send_bytes(r, &rep, sizeof(rep));
	raw_send_bytes(r, &v2, sizeof(v2));
	if (!h_wait_conn(s->d, RNICPI_CONN_ESTABLISHED, s->qp, NULL,
			 H_WAIT_MS))
		return -ETIMEDOUT;
	return 0;
}

int raw_accept_ird(struct rawpeer *r, struct h_side *s, uint16_t ird)
{
	return accept_with(r, s, ird, false);
}

int raw_accept_large(struct rawpeer *r, struct h_side *s)
{
	return accept_with(r, s, 4, true);
}

size_t raw_build_fpdu(struct rawpeer *r, uint8_t *out, void *hdr,
		      size_t hdr_len, const void *payload, size_t len,
		      uint16_t mpa_len, bool bad_crc)
{
	uint8_t trailer[8] = { 0 };
	uint32_t ulpdu = (uint32_t)(hdr_len - MPA_HDR_SIZE + len);
	uint32_t pad = mpa_pad_len(ulpdu), crc;

	iwarp_set_mpa_len(hdr, mpa_len ? mpa_len : (uint16_t)ulpdu);
	crc = siw_crc32c(0, hdr, hdr_len);
	crc = siw_crc32c(crc, payload, len);
	crc = siw_crc32c(crc, trailer, pad);
	if (bad_crc)
		crc ^= 0x00010000;
	if (r->crc || bad_crc)
		mpa_crc_put(trailer + pad, crc);
	memcpy(out, hdr, hdr_len);
	if (len)
		memcpy(out + hdr_len, payload, len);
	memcpy(out + hdr_len + len, trailer, pad + MPA_CRC_SIZE);
	return hdr_len + len + pad + MPA_CRC_SIZE;
}

void raw_send_fpdu(struct rawpeer *r, void *hdr, size_t hdr_len,
		   const void *payload, size_t len, uint16_t mpa_len,
		   bool bad_crc)
{
	uint8_t *buf = g_malloc(hdr_len + len + 8);

	raw_send_bytes(r, buf, raw_build_fpdu(r, buf, hdr, hdr_len, payload,
					      len, mpa_len, bad_crc));
	g_free(buf);
}

int raw_recv_fpdu(struct rawpeer *r, uint8_t *buf, size_t max,
		  int timeout_ms)
{
	uint8_t trailer[8];
	uint16_t ulpdu;
	uint32_t pad;
	int rc;

	rc = read_exact(r->fd, buf, 2, timeout_ms);
	if (rc)
		return rc;
	ulpdu = (uint16_t)(buf[0] << 8 | buf[1]);
	ck_assert_uint_le((size_t)ulpdu + 2, max);
	rc = read_exact(r->fd, buf + 2, ulpdu, timeout_ms);
	if (rc)
		return rc;
	pad = mpa_pad_len(ulpdu);
	rc = read_exact(r->fd, trailer, pad + MPA_CRC_SIZE, timeout_ms);
	if (rc)
		return rc;
	if (r->crc) {
		uint32_t crc = siw_crc32c(0, buf, (size_t)ulpdu + 2);

		crc = siw_crc32c(crc, trailer, pad);
		if (crc != mpa_crc_get(trailer + pad))
			return -EBADMSG;
	}
	return ulpdu;
}

bool raw_wait_close(struct rawpeer *r, int timeout_ms)
{
	uint8_t buf[4096];

	for (;;) {
		struct pollfd pf = { .fd = r->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) != 1)
			return false;
		n = recv(r->fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return true;
	}
}

void raw_close(struct rawpeer *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
