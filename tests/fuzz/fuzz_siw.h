/* SPDX-License-Identifier: MIT */
/*
 * fuzz_siw.h - the soft-iWARP side of the fuzz targets: devices whose
 * progress thread is stopped, so that the target's own thread runs every
 * pass of it (siw_dev_progress), one input at a time; a QP per input on a
 * socketpair whose other end the target writes; memory at fixed STags
 * and tagged offsets, so that an input names them the same way in every
 * run, with guard bytes that must stay untouched.
 *
 * STags (registered in this order on every device): FZ_STAG_RW (remote
 * write and read), FZ_STAG_RO (remote read only), FZ_STAG_PD2 (remote
 * write, another PD), each over FZ_MEM_LEN bytes of its own at TO
 * FZ_TO_RW / FZ_TO_RO / FZ_TO_PD2 (the last two must come out of every
 * input unchanged); FZ_STAG_LOCAL, local write only, at
 * FZ_TO_LOCAL, where receives and READ sinks go. The values are what
 * rnicpi_key_alloc() hands out first on a fresh table whose secret is
 * FZ_KEY_SECRET (checked): key bytes are keyed by a random secret per
 * table, which the harness replaces so that inputs name the same STags
 * in every run.
 */
#ifndef TESTS_FUZZ_FUZZ_SIW_H
#define TESTS_FUZZ_FUZZ_SIW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rnicpi/rnicpi.h"
#include "vp/siw/iwarp.h"

/* A key table secret (found by search) under which a fresh table hands
 * out 0x131, 0x256, 0x37b, 0x4a0 first, the STags the seeds were made
 * with before key bytes were drawn from a secret. */
#define FZ_KEY_SECRET 0xfef0481eull
#define FZ_STAG_RW 0x131u
#define FZ_STAG_RO 0x256u
#define FZ_STAG_PD2 0x37bu
#define FZ_STAG_LOCAL 0x4a0u
#define FZ_TO_RW 0x100000ull
#define FZ_TO_RO 0x200000ull
#define FZ_TO_PD2 0x300000ull
#define FZ_TO_LOCAL 0x400000ull
#define FZ_MEM_LEN 4096u
#define FZ_LOCAL_LEN 16384u
#define FZ_GUARD 64u

/* Where the harness's own WRs go in the local region. */
#define FZ_READ_SINK_OFF 8192u	/* an RDMA Read of FZ_READ_LEN bytes */
#define FZ_READ_LEN 1024u
#define FZ_READ_RSTAG 0x1234u	/* its source at the peer */
#define FZ_READ_RTO 0x9000ull
#define FZ_SEND_SRC_OFF 12288u
#define FZ_SEND_LEN 100u

/* Device option sets: what the MPA negotiation and the stream depend
 * on. */
enum fz_siw_profile {
	FZ_SIW_PLAIN,		/* defaults (CRC when the peer asks) */
	FZ_SIW_CRC,		/* mpa_crc=on: CRC on every stream */
	FZ_SIW_STRICT,		/* mpa_crc_strict: a peer asking for CRC is
				 * refused */
	FZ_SIW_REQUIRED,	/* mpa_crc=required */
	FZ_SIW_REV1,		/* mpa_rev=1 */
	FZ_SIW_P2P_WRITE,	/* p2p=write, ird/ord 4 */
	FZ_SIW_P2P_READ,	/* p2p=read */
	FZ_SIW_SMALL,		/* large_fpdu off, max_fpdu 256 */
	FZ_SIW_NPROFILES
};

/* One input's world on a device of @profile. */
struct fz_siw {
	struct rnicpi_device *dev;
	const struct rnicpi_device_ops *ops;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *scq, *rcq;
	struct rnicpi_srq *srq;
	struct rnicpi_qp *qp;
	struct rnicpi_conn *conn;	/* responder: the peer's request */
	int peer;			/* the fuzzer's end of the stream */
	bool crc;			/* the stream carries MPA CRCs */
	bool established;
	bool requested;			/* a REQUEST came for conn */
	unsigned int errors;		/* CONN_ERROR / REJECTED events */
	/* Responder: answer a REQUEST as soon as it came, as a core would
	 * (fz_siw_answer with these). */
	bool auto_answer, accept;
	uint32_t ird, ord, pd_len;
};

/* Flags for fz_siw_open. */
#define FZ_SIW_SRQ 0x1u		/* receives through an SRQ */

void fz_siw_init(void);
/* PD, CQs, the QP (and SRQ) on the device of @profile; memory reset. */
void fz_siw_open(struct fz_siw *w, enum fz_siw_profile profile,
		 unsigned int flags);
/* Run the progress passes until nothing happens; what the QP wrote to
 * the peer is read and dropped. */
void fz_siw_progress(struct fz_siw *w);
/* Write @len bytes to the stream (progress runs while it is full). */
void fz_siw_write(struct fz_siw *w, const void *buf, size_t len);
/* Write @len bytes in pieces of sizes drawn from @seed (0: whole),
 * progress between the pieces. */
void fz_siw_write_cut(struct fz_siw *w, const uint8_t *buf, size_t len,
		      uint8_t seed);
/* Responder: the socket goes to iw_take_request; the peer writes next. */
void fz_siw_take_request(struct fz_siw *w);
/* Responder: answer the REQUEST (accept with @ird/@ord and @pd_len bytes
 * of private data, or reject with them). */
void fz_siw_answer(struct fz_siw *w, bool accept, uint32_t ird,
		   uint32_t ord, uint32_t pd_len);
/* Initiator: iw_connect with @flags (RNICPI_CONN_*) and @ird/@ord; the
 * Request is read and dropped from the peer's end. */
void fz_siw_connect(struct fz_siw *w, unsigned int flags, uint32_t ird,
		    uint32_t ord);
/* Post the receives (4096, 500 + 500, 256 and 64 bytes, in that order),
 * and with @sends an RDMA Read of
 * FZ_READ_LEN bytes from FZ_READ_RSTAG and a Send. */
void fz_siw_post(struct fz_siw *w, bool sends);
/* EOF from the peer, then everything torn down; the guard bytes around
 * every region are checked. */
void fz_siw_close(struct fz_siw *w);

/* An MPA Request or Reply from the peer (RFC 5044 §7.1): @flags, revision
 * 2 with IRD/ORD @ird, @ord (p2p with the RTR bits @rtr when non-zero),
 * or revision 1 when !@v2. Returns its length in @out (>= 24 bytes). */
size_t fz_mpa_frame(uint8_t *out, bool request, bool v2, uint8_t flags,
		    uint16_t ird, uint16_t ord, uint16_t rtr);

/* FPDUs in @buf (@len bytes), one after the other: each one's MPA CRC is
 * set to the right value, as far as whole FPDUs go. */
void fz_fpdu_fix_crc(uint8_t *buf, size_t len);

#endif
