/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cm_mad: the CM MAD codec of cm/ib_mad.c (IBA 13.4.3 header,
 * 12.6 REQ/REP/RTU/REJ/MRA/DREQ/DREP, 12.11 SIDR_REQ/SIDR_REP) and
 * librdmacm's private data header, on any 256 bytes: every decoder runs,
 * and what it decoded, encoded and decoded again, must come out the same
 * (a field the encoder writes where the decoder does not read it, or
 * with another mask, shows here). The rdma_cm header: what decodes must
 * encode and decode to the same addresses.
 *
 * Input: one MAD (padded with zeros to 256 bytes).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "cm/ib_mad.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* decode(encode(decode(m))) == decode(m) for one message type. */
#define ROUND_TRIP(type, dec, enc, attr)                                    \
	do {                                                                \
		struct type a, b;                                           \
		struct ib_mad out;                                          \
                                                                            \
		memset(&a, 0, sizeof(a));                                   \
		memset(&b, 0, sizeof(b));                                   \
		dec(m, &a);                                                 \
		ib_mad_cm_init(&out, attr, h.tid);                          \
		enc(&out, &a);                                              \
		dec(&out, &b);                                              \
		FZ_CHECK(memcmp(&a, &b, sizeof(a)) == 0);                   \
	} while (0)

static void cma_round_trip(const uint8_t *pdata, uint16_t port)
{
	struct sockaddr_storage src, dst, src2, dst2;
	uint8_t hdr[IB_CMA_HDR_BYTES];
	const char *why = NULL;

	if (ib_cma_hdr_decode(pdata, port, &src, &dst, &why)) {
		FZ_CHECK(why);
		return;
	}
	FZ_CHECK(ib_cma_hdr_encode(hdr, (struct sockaddr *)&src,
				   (struct sockaddr *)&dst) == 0);
	FZ_CHECK(ib_cma_hdr_decode(hdr, port, &src2, &dst2, &why) == 0);
	FZ_CHECK(memcmp(&src, &src2, sizeof(src)) == 0);
	FZ_CHECK(memcmp(&dst, &dst2, sizeof(dst)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ib_mad buf, *m = &buf;
	struct ib_mad_hdr h;
	struct ib_cm_req req;
	struct ib_cm_sidr_req sreq;
	uint8_t code;

	memset(m, 0, sizeof(*m));
	memcpy(m->b, data, size < IB_MAD_BYTES ? size : IB_MAD_BYTES);
	ib_mad_hdr_decode(m, &h);
	(void)ib_cm_attr_name(h.attr_id);
	ROUND_TRIP(ib_cm_req, ib_cm_req_decode, ib_cm_req_encode,
		   IB_CM_ATTR_REQ);
	ROUND_TRIP(ib_cm_rep, ib_cm_rep_decode, ib_cm_rep_encode,
		   IB_CM_ATTR_REP);
	ROUND_TRIP(ib_cm_mra, ib_cm_mra_decode, ib_cm_mra_encode,
		   IB_CM_ATTR_MRA);
	ROUND_TRIP(ib_cm_rej, ib_cm_rej_decode, ib_cm_rej_encode,
		   IB_CM_ATTR_REJ);
	ROUND_TRIP(ib_cm_ids, ib_cm_ids_decode, ib_cm_ids_encode,
		   IB_CM_ATTR_RTU);
	ROUND_TRIP(ib_cm_dreq, ib_cm_dreq_decode, ib_cm_dreq_encode,
		   IB_CM_ATTR_DREQ);
	ROUND_TRIP(ib_cm_sidr_req, ib_cm_sidr_req_decode,
		   ib_cm_sidr_req_encode, IB_CM_ATTR_SIDR_REQ);
	ROUND_TRIP(ib_cm_sidr_rep, ib_cm_sidr_rep_decode,
		   ib_cm_sidr_rep_encode, IB_CM_ATTR_SIDR_REP);
	/* The rdma_cm header where a REQ or SIDR_REQ carries it. */
	ib_cm_req_decode(m, &req);
	if (ib_cma_ps_of(req.service_id))
		cma_round_trip(req.private_data, (uint16_t)req.service_id);
	ib_cm_sidr_req_decode(m, &sreq);
	cma_round_trip(sreq.private_data, (uint16_t)sreq.service_id);
	/* Time-out codes: the code of a code's time is that code or less. */
	code = m->b[IB_CM_D(43)] >> 3;
	FZ_CHECK(ib_cm_timeout_code(ib_cm_timeout_ms(code)) <= code);
	return 0;
}
