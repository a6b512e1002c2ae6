/* SPDX-License-Identifier: MIT */
/*
 * rxe-peer -G: the GSI path cm/ will use, against the kernel. Our QP1
 * sends a PerfMgt Get(ClassPortInfo) MAD (IBA 16.1.3) as a UD datagram to
 * the peer's QP1 with the GSI Q_Key; the kernel's MAD layer has no PerfMgt
 * agent on a RoCE port and answers GetResp with a status, which must come
 * back to our QP1 from source QP 1 with our transaction ID (as the interop
 * kit's probes/roce_gsi_probe.py does with a hand-made packet).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/interop/rxe-peer.h"

#define MAD_BYTES 256
#define TID 0x6873726478650001ull /* "hsrdxe" + 1 */

int rxe_gsi_probe(struct rnicpi_device *dev, uint8_t gid_index,
		  const union rnicpi_gid *dgid)
{
	const struct rnicpi_device_ops *ops = dev->ops;
	struct rnicpi_cq_init_attr ca = { .cqe = 16 };
	struct rnicpi_qp_init_attr qa;
	struct rnicpi_qp_attr a;
	struct rnicpi_ah_attr aa;
	struct rnicpi_pd *pd;
	struct rnicpi_cq *cq;
	struct rnicpi_qp *qp;
	struct rnicpi_ah *ah;
	struct rnicpi_mr *mr;
	uint8_t *buf = calloc(1, 2 * MAD_BYTES + IB_GRH_BYTES);
	uint8_t *mad = buf, *rx = buf + MAD_BYTES;
	struct rnicpi_sge ssge, rsge;
	struct rnicpi_send_wr wr;
	struct rnicpi_recv_wr rw;
	const struct rnicpi_send_wr *sbad;
	const struct rnicpi_recv_wr *rbad;
	struct rnicpi_wc wc;
	struct timespec t0, t1;
	int err, got_recv = 0, rc = 1;

	if ((err = ops->alloc_pd(dev, &pd)) ||
	    (err = ops->create_cq(dev, &ca, &cq)))
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = RNICPI_QPT_GSI;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if ((err = ops->create_qp(pd, &qa, &qp)))
		return 1;
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_INIT;
	a.qkey = IB_GSI_QKEY;
	err = ops->modify_qp(qp, &a, RNICPI_QP_STATE | RNICPI_QP_QKEY);
	a.qp_state = RNICPI_QPS_RTR;
	err = err ? err : ops->modify_qp(qp, &a, RNICPI_QP_STATE);
	a.qp_state = RNICPI_QPS_RTS;
	err = err ? err
		  : ops->modify_qp(qp, &a, RNICPI_QP_STATE | RNICPI_QP_SQ_PSN);
	memset(&aa, 0, sizeof(aa));
	aa.dgid = *dgid;
	aa.sgid_index = gid_index;
	aa.is_global = 1;
	aa.hop_limit = 64;
	aa.port_num = 1;
	err = err ? err : ops->create_ah(pd, &aa, &ah);
	err = err ? err : ops->reg_mr(pd, buf, 2 * MAD_BYTES + IB_GRH_BYTES,
				      (uint64_t)(uintptr_t)buf,
				      RNICPI_ACCESS_LOCAL_WRITE, &mr);
	if (err) {
		fprintf(stderr, "rxe-peer: GSI set-up: %s\n", g_strerror(-err));
		return 1;
	}

	/* MAD header (IBA 13.4.3): base version 1, class PerfMgt (0x04),
	 * class version 1, method Get, TID, attribute ClassPortInfo. */
	mad[0] = 1;
	mad[1] = 0x04;
	mad[2] = 1;
	mad[3] = 0x01;
	ib_put64(mad + 8, TID);
	ib_put16(mad + 16, 0x0001);

	rsge.addr = (uint64_t)(uintptr_t)rx;
	rsge.length = MAD_BYTES + IB_GRH_BYTES;
	rsge.lkey = mr->lkey;
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 2;
	rw.sg_list = &rsge;
	rw.num_sge = 1;
	ssge.addr = (uint64_t)(uintptr_t)mad;
	ssge.length = MAD_BYTES;
	ssge.lkey = mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = RNICPI_WR_SEND;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	wr.sg_list = &ssge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = IB_GSI_QPN;
	wr.wr.ud.remote_qkey = IB_GSI_QKEY;
	if (ops->post_recv(qp, &rw, &rbad) || ops->post_send(qp, &wr, &sbad))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!got_recv) {
		if (ops->poll_cq(cq, 1, &wc) != 1) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 10) {
				fprintf(stderr, "rxe-peer: no MAD answer\n");
				break;
			}
			usleep(100);
			continue;
		}
		if (wc.status != RNICPI_WC_SUCCESS) {
			fprintf(stderr,
				"rxe-peer: GSI WR %" PRIu64 " status %d\n",
				wc.wr_id, wc.status);
			break;
		}
		if (wc.wr_id != 2)
			continue;
		got_recv = 1;
		{
			const uint8_t *m = rx + IB_GRH_BYTES;

			printf("GSI: %u bytes from QP %u: MAD class 0x%02x method "
			       "0x%02x status 0x%04x TID %s\n",
			       wc.byte_len - IB_GRH_BYTES, wc.src_qp, m[1],
			       m[3], ib_get16(m + 4),
			       ib_get64(m + 8) == TID ? "ok" : "MISMATCH");
			rc = !(wc.src_qp == IB_GSI_QPN &&
			       (wc.wc_flags & RNICPI_WC_GRH) && m[1] == 0x04 &&
			       m[3] == 0x81 && ib_get64(m + 8) == TID &&
			       wc.byte_len == MAD_BYTES + IB_GRH_BYTES);
		}
	}
	ops->destroy_qp(qp);
	ops->destroy_ah(ah);
	ops->dereg_mr(mr);
	ops->destroy_cq(cq);
	ops->dealloc_pd(pd);
	free(buf);
	return rc;
}
