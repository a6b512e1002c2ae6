/* SPDX-License-Identifier: MIT */
/*
 * hostrdma/it_ext.h - hostrdma's extensions to IT-API 2.1.
 *
 * Immediate data. IT-API 2.1 has none; InfiniBand and RoCE carry 32 bits
 * of it with a Send or an RDMA Write (IBA 9.4.1, the ImmDt header), and
 * the peer learns them from the completion of the receive the message
 * consumes. An RDMA Write with immediate data places its payload at the
 * RDMA address as any Write does and consumes one posted receive without
 * touching its buffers. iWARP (RFC 5040) has no immediate data: an IA of
 * an iWARP device says so (hostrdma_ia_imm_data_size() is 0) and refuses
 * the posts below with IT_ERR_OP_NOT_SUPPORTED.
 *
 * The value is a host-order number; on the wire it is big-endian, so a
 * verbs peer that posts htonl(n) delivers n, and n posted here arrives
 * there as htonl(n).
 *
 * Everything here is described in it_ext(3). The functions are exported
 * by libhostrdma; HOSTRDMA_IT_EXT tells a program at build time that they
 * exist.
 */
#ifndef HOSTRDMA_IT_EXT_H
#define HOSTRDMA_IT_EXT_H

#include <it_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HOSTRDMA_IT_EXT 1

/* Bytes of immediate data the IA's device carries: 4, or 0 (none). */
size_t hostrdma_ia_imm_data_size(it_ia_handle_t ia_handle);

/* it_post_send with immediate data (reliable connected endpoints). */
it_status_t hostrdma_post_send_imm(it_ep_handle_t ep_handle,
				   const it_lmr_triplet_t *local_segments,
				   size_t num_segments, it_dto_cookie_t cookie,
				   it_dto_flags_t dto_flags,
				   uint32_t imm_data);

/* it_post_sendto with immediate data: a datagram (UD endpoints). */
it_status_t hostrdma_post_sendto_imm(
	it_ep_handle_t ep_handle, const it_lmr_triplet_t *local_segments,
	size_t num_segments, it_dto_cookie_t cookie, it_dto_flags_t dto_flags,
	const it_dg_remote_ep_addr_t *remote_ep_addr, uint32_t imm_data);

/* it_post_rdma_write with immediate data: the Write consumes one receive
 * posted at the peer, whose completion carries @imm_data. */
it_status_t hostrdma_post_rdma_write_imm(it_ep_handle_t ep_handle,
					 const it_lmr_triplet_t *local_segments,
					 size_t num_segments,
					 it_dto_cookie_t cookie,
					 it_dto_flags_t dto_flags,
					 it_rdma_addr_t rdma_addr,
					 it_rmr_context_t rmr_context,
					 uint32_t imm_data);

/* What a receive completion carried. */
typedef enum {
	HOSTRDMA_IMM_NONE = 0,	 /* no immediate data */
	HOSTRDMA_IMM_SEND = 1,	 /* a Send: its payload is in the receive's
				  * buffers (transferred_length bytes) */
	HOSTRDMA_IMM_RDMA_WRITE = 2 /* an RDMA Write: transferred_length
				     * bytes were placed at the RDMA
				     * address; the receive's buffers are
				     * untouched */
} hostrdma_imm_kind_t;

/*
 * The immediate data of a successful IT_DTO_RC_RECV_CMPL_EVENT or
 * IT_DTO_UD_RECV_CMPL_EVENT dequeued from an EVD: stores it in *imm_data
 * (when not NULL) and says which kind of message brought it (a datagram
 * is a Send). Any other event, or a receive without immediate data, gives
 * HOSTRDMA_IMM_NONE.
 */
hostrdma_imm_kind_t hostrdma_event_imm_data(const it_event_t *event,
					    uint32_t *imm_data);

#ifdef __cplusplus
}
#endif

#endif /* HOSTRDMA_IT_EXT_H */
