/* SPDX-License-Identifier: MIT */
/*
 * ib_mad.h - the InfiniBand communication management MADs (IBA 13.4.3
 * MAD header, 12.6 CM messages, 12.11 SIDR) and the private data header
 * librdmacm / the Linux kernel's rdma_cm put in front of the consumer's
 * bytes.
 *
 * A MAD is 256 bytes, big-endian, with a 24-byte common header; the CM
 * message fields follow at offset 24. Fields are read and written
 * through the accessors below (byte offsets and masks as in IBA tables
 * 106-120, "Byte[Bit]" with bit 0 the most significant); decode turns a
 * message into host-order values without judging them, encode writes one
 * from them, reserved bits zero. The state machine (cm_ib.c) checks every
 * value before it uses it.
 */
#ifndef CM_IB_MAD_H
#define CM_IB_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#define IB_MAD_BYTES 256u
#define IB_MAD_HDR_BYTES 24u
#define IB_MAD_DATA_BYTES (IB_MAD_BYTES - IB_MAD_HDR_BYTES)
#define IB_GRH_BYTES_CM 40u	/* in front of every UD receive */

#define IB_MAD_BASE_VERSION 1
#define IB_MGMT_CLASS_CM 0x07
#define IB_CM_CLASS_VERSION 2
#define IB_MGMT_METHOD_SEND 0x03
#define IB_GSI_QPN_CM 1u
#define IB_GSI_QKEY_CM 0x80010000u	/* IBA 13.5.3.2 */
#define IB_PKEY_DEFAULT 0xffffu
#define IB_LID_PERMISSIVE 0xffffu	/* what RoCE CM messages carry */

/* Attribute IDs of the CM class (IBA table 103). */
enum ib_cm_attr {
	IB_CM_ATTR_CLASSPORTINFO = 0x0001,
	IB_CM_ATTR_REQ = 0x0010,
	IB_CM_ATTR_MRA = 0x0011,
	IB_CM_ATTR_REJ = 0x0012,
	IB_CM_ATTR_REP = 0x0013,
	IB_CM_ATTR_RTU = 0x0014,
	IB_CM_ATTR_DREQ = 0x0015,
	IB_CM_ATTR_DREP = 0x0016,
	IB_CM_ATTR_SIDR_REQ = 0x0017,
	IB_CM_ATTR_SIDR_REP = 0x0018,
	IB_CM_ATTR_LAP = 0x0019,
	IB_CM_ATTR_APR = 0x001a,
};

const char *ib_cm_attr_name(uint16_t attr);

/* Private data room of each message (IBA 12.6). */
#define IB_CM_REQ_PDATA 92u
#define IB_CM_MRA_PDATA 222u
#define IB_CM_REJ_PDATA 148u
#define IB_CM_REP_PDATA 196u
#define IB_CM_RTU_PDATA 224u
#define IB_CM_DREQ_PDATA 220u
#define IB_CM_DREP_PDATA 224u
#define IB_CM_SIDR_REQ_PDATA 216u
#define IB_CM_SIDR_REP_PDATA 136u
#define IB_CM_REJ_ARI 72u

/* REJ reasons (IBA table 109) this CM sends or tells apart. */
enum ib_cm_rej_reason {
	IB_CM_REJ_NO_QP = 1,
	IB_CM_REJ_NO_RESOURCES = 3,
	IB_CM_REJ_TIMEOUT = 4,
	IB_CM_REJ_UNSUPPORTED_REQ = 5,
	IB_CM_REJ_INVALID_COMM_ID = 6,
	IB_CM_REJ_INVALID_COMM_INSTANCE = 7,
	IB_CM_REJ_INVALID_SERVICE_ID = 8,
	IB_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	IB_CM_REJ_STALE_CONN = 10,
	IB_CM_REJ_INVALID_GID = 12,
	IB_CM_REJ_INVALID_MTU = 26,
	IB_CM_REJ_INSUFFICIENT_RESP_RES = 27,
	IB_CM_REJ_CONSUMER_DEFINED = 28,
	IB_CM_REJ_INVALID_RNR_RETRY = 29,
	IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	IB_CM_REJ_INVALID_CLASS_VERSION = 31,
};

/* Which message a REJ / MRA answers (IBA 12.6.6, 12.6.7). */
enum ib_cm_msg_answered {
	IB_CM_MSG_REQ = 0,
	IB_CM_MSG_REP = 1,
	IB_CM_MSG_OTHER = 2,	/* REJ: no message; MRA: LAP */
};

/* SIDR_REP status (IBA table 121). */
enum ib_sidr_status {
	IB_SIDR_SUCCESS = 0,
	IB_SIDR_UNSUPPORTED = 1,	/* service ID not supported */
	IB_SIDR_REJECT = 2,
	IB_SIDR_NO_QP = 3,
	IB_SIDR_REDIRECT = 4,
	IB_SIDR_UNSUPPORTED_VERSION = 5,
};

struct ib_mad {
	uint8_t b[IB_MAD_BYTES];
};
_Static_assert(sizeof(struct ib_mad) == 256, "a MAD is 256 bytes");

/* ------------------------------------------------------------------ */
/* Big-endian accessors at a byte offset of the MAD                    */
/* ------------------------------------------------------------------ */

static inline uint8_t ib_mad_get8(const struct ib_mad *m, size_t off)
{
	return m->b[off];
}

static inline uint16_t ib_mad_get16(const struct ib_mad *m, size_t off)
{
	return (uint16_t)(m->b[off] << 8 | m->b[off + 1]);
}

static inline uint32_t ib_mad_get24(const struct ib_mad *m, size_t off)
{
	return (uint32_t)m->b[off] << 16 | (uint32_t)m->b[off + 1] << 8 |
	       m->b[off + 2];
}

static inline uint32_t ib_mad_get32(const struct ib_mad *m, size_t off)
{
	return (uint32_t)m->b[off] << 24 | ib_mad_get24(m, off + 1);
}

static inline uint64_t ib_mad_get64(const struct ib_mad *m, size_t off)
{
	return (uint64_t)ib_mad_get32(m, off) << 32 | ib_mad_get32(m, off + 4);
}

static inline void ib_mad_put8(struct ib_mad *m, size_t off, uint8_t v)
{
	m->b[off] = v;
}

static inline void ib_mad_put16(struct ib_mad *m, size_t off, uint16_t v)
{
	m->b[off] = (uint8_t)(v >> 8);
	m->b[off + 1] = (uint8_t)v;
}

static inline void ib_mad_put24(struct ib_mad *m, size_t off, uint32_t v)
{
	m->b[off] = (uint8_t)(v >> 16);
	m->b[off + 1] = (uint8_t)(v >> 8);
	m->b[off + 2] = (uint8_t)v;
}

static inline void ib_mad_put32(struct ib_mad *m, size_t off, uint32_t v)
{
	m->b[off] = (uint8_t)(v >> 24);
	ib_mad_put24(m, off + 1, v);
}

static inline void ib_mad_put64(struct ib_mad *m, size_t off, uint64_t v)
{
	ib_mad_put32(m, off, (uint32_t)(v >> 32));
	ib_mad_put32(m, off + 4, (uint32_t)v);
}

/* Bits @hi..@lo (7 = most significant) of byte @off. */
static inline uint8_t ib_mad_bits(const struct ib_mad *m, size_t off,
				  unsigned int hi, unsigned int lo)
{
	return (uint8_t)((m->b[off] >> lo) & ((1u << (hi - lo + 1)) - 1));
}

static inline void ib_mad_set_bits(struct ib_mad *m, size_t off,
				   unsigned int hi, unsigned int lo,
				   unsigned int v)
{
	uint8_t mask = (uint8_t)(((1u << (hi - lo + 1)) - 1) << lo);

	m->b[off] = (uint8_t)((m->b[off] & ~mask) | ((v << lo) & mask));
}

/* ------------------------------------------------------------------ */
/* The common MAD header (IBA 13.4.3)                                  */
/* ------------------------------------------------------------------ */

#define IB_MAD_OFF_BASE_VERSION 0
#define IB_MAD_OFF_CLASS 1
#define IB_MAD_OFF_CLASS_VERSION 2
#define IB_MAD_OFF_METHOD 3
#define IB_MAD_OFF_STATUS 4
#define IB_MAD_OFF_CLASS_SPECIFIC 6
#define IB_MAD_OFF_TID 8
#define IB_MAD_OFF_ATTR_ID 16
#define IB_MAD_OFF_ATTR_MOD 20

struct ib_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

void ib_mad_hdr_decode(const struct ib_mad *m, struct ib_mad_hdr *h);
/* A CM Send MAD with @attr and @tid; the rest of @m is zeroed. */
void ib_mad_cm_init(struct ib_mad *m, uint16_t attr, uint64_t tid);

/* ------------------------------------------------------------------ */
/* CM messages (offsets from the start of the MAD)                     */
/* ------------------------------------------------------------------ */

#define IB_CM_D(off) (IB_MAD_HDR_BYTES + (off))

/* One path of a REQ (IBA 12.6.5, primary at 52, alternate at 96). */
struct ib_cm_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label;		/* 20 bits */
	uint8_t packet_rate;		/* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;			/* 4 bits */
	uint8_t subnet_local;		/* 1 bit */
	uint8_t local_ack_timeout;	/* 5 bits */
};

struct ib_cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;		/* as on the wire (big-endian value) */
	uint32_t local_qkey;
	uint32_t local_qpn;		/* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_response_timeout;	/* 5 bits */
	uint8_t transport_service_type;		/* 2 bits: 0 RC, 1 UC, 3 RD */
	uint8_t end_to_end_flow_control;
	uint32_t starting_psn;			/* 24 bits */
	uint8_t local_cm_response_timeout;	/* 5 bits */
	uint8_t retry_count;			/* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;			/* 4 bits, IBA MTU code */
	uint8_t rdc_exists;
	uint8_t rnr_retry_count;		/* 3 bits */
	uint8_t max_cm_retries;			/* 4 bits */
	uint8_t srq;
	uint8_t extended_transport_type;	/* 3 bits */
	struct ib_cm_path primary;
	struct ib_cm_path alternate;
	uint8_t private_data[IB_CM_REQ_PDATA];
};

struct ib_cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;		/* 24 bits */
	uint32_t local_eecn;
	uint32_t starting_psn;		/* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;	/* 5 bits */
	uint8_t failover_accepted;	/* 2 bits */
	uint8_t end_to_end_flow_control;
	uint8_t rnr_retry_count;	/* 3 bits */
	uint8_t srq;
	uint32_t vendor_id;		/* 24 bits, in three bytes */
	uint64_t local_ca_guid;
	uint8_t private_data[IB_CM_REP_PDATA];
};

/* RTU, DREP: two comm IDs and private data. */
struct ib_cm_ids {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
};

struct ib_cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;		/* enum ib_cm_msg_answered */
	uint8_t service_timeout;	/* 5 bits */
	uint8_t private_data[IB_CM_MRA_PDATA];
};

struct ib_cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected;	/* enum ib_cm_msg_answered */
	uint8_t ari_length;		/* 7 bits */
	uint16_t reason;
	uint8_t ari[IB_CM_REJ_ARI];
	uint8_t private_data[IB_CM_REJ_PDATA];
};

struct ib_cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;		/* 24 bits */
	uint8_t private_data[IB_CM_DREQ_PDATA];
};

struct ib_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[IB_CM_SIDR_REQ_PDATA];
};

struct ib_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t info_length;
	uint32_t qpn;			/* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[IB_CM_REJ_ARI];
	uint8_t private_data[IB_CM_SIDR_REP_PDATA];
};

void ib_cm_req_decode(const struct ib_mad *m, struct ib_cm_req *r);
void ib_cm_req_encode(struct ib_mad *m, const struct ib_cm_req *r);
void ib_cm_rep_decode(const struct ib_mad *m, struct ib_cm_rep *r);
void ib_cm_rep_encode(struct ib_mad *m, const struct ib_cm_rep *r);
void ib_cm_mra_decode(const struct ib_mad *m, struct ib_cm_mra *r);
void ib_cm_mra_encode(struct ib_mad *m, const struct ib_cm_mra *r);
void ib_cm_rej_decode(const struct ib_mad *m, struct ib_cm_rej *r);
void ib_cm_rej_encode(struct ib_mad *m, const struct ib_cm_rej *r);
void ib_cm_dreq_decode(const struct ib_mad *m, struct ib_cm_dreq *r);
void ib_cm_dreq_encode(struct ib_mad *m, const struct ib_cm_dreq *r);
/* RTU and DREP: comm IDs; private data at IB_CM_D(8), @pdata_room bytes. */
void ib_cm_ids_decode(const struct ib_mad *m, struct ib_cm_ids *r);
void ib_cm_ids_encode(struct ib_mad *m, const struct ib_cm_ids *r);
void ib_cm_sidr_req_decode(const struct ib_mad *m, struct ib_cm_sidr_req *r);
void ib_cm_sidr_req_encode(struct ib_mad *m, const struct ib_cm_sidr_req *r);
void ib_cm_sidr_rep_decode(const struct ib_mad *m, struct ib_cm_sidr_rep *r);
void ib_cm_sidr_rep_encode(struct ib_mad *m, const struct ib_cm_sidr_rep *r);

/* Where each message's private data starts, and its room. */
#define IB_CM_REQ_PDATA_OFF IB_CM_D(140)
#define IB_CM_MRA_PDATA_OFF IB_CM_D(10)
#define IB_CM_REJ_PDATA_OFF IB_CM_D(84)
#define IB_CM_REP_PDATA_OFF IB_CM_D(36)
#define IB_CM_RTU_PDATA_OFF IB_CM_D(8)
#define IB_CM_DREQ_PDATA_OFF IB_CM_D(12)
#define IB_CM_DREP_PDATA_OFF IB_CM_D(8)
#define IB_CM_SIDR_REQ_PDATA_OFF IB_CM_D(16)
#define IB_CM_SIDR_REP_PDATA_OFF IB_CM_D(96)
_Static_assert(IB_CM_REQ_PDATA_OFF + IB_CM_REQ_PDATA == IB_MAD_BYTES, "REQ");
_Static_assert(IB_CM_MRA_PDATA_OFF + IB_CM_MRA_PDATA == IB_MAD_BYTES, "MRA");
_Static_assert(IB_CM_REJ_PDATA_OFF + IB_CM_REJ_PDATA == IB_MAD_BYTES, "REJ");
_Static_assert(IB_CM_REP_PDATA_OFF + IB_CM_REP_PDATA == IB_MAD_BYTES, "REP");
_Static_assert(IB_CM_RTU_PDATA_OFF + IB_CM_RTU_PDATA == IB_MAD_BYTES, "RTU");
_Static_assert(IB_CM_DREQ_PDATA_OFF + IB_CM_DREQ_PDATA == IB_MAD_BYTES,
	       "DREQ");
_Static_assert(IB_CM_SIDR_REQ_PDATA_OFF + IB_CM_SIDR_REQ_PDATA ==
		       IB_MAD_BYTES, "SIDR_REQ");
_Static_assert(IB_CM_SIDR_REP_PDATA_OFF + IB_CM_SIDR_REP_PDATA ==
		       IB_MAD_BYTES, "SIDR_REP");

/* 4.096 us * 2^@code in ms, rounded up; the encoding of CM response
 * timeouts, ACK timeouts and MRA service timeouts (IBA 12.6.5). */
uint32_t ib_cm_timeout_ms(uint8_t code);
/* The smallest code whose time is at least @ms (at most 31). */
uint8_t ib_cm_timeout_code(uint32_t ms);

/* ------------------------------------------------------------------ */
/* librdmacm's private data header (rdma_cm over the IB CM)            */
/* ------------------------------------------------------------------ */

/*
 * rdma_cm (librdmacm, the Linux kernel's drivers/infiniband/core/cma.c)
 * puts a 36-byte header in front of the consumer's REQ private data when
 * the service ID is in one of its port spaces: version byte 0, the IP
 * version in the high nibble of the next byte, the active side's source
 * port (big-endian), then the source and destination IP addresses in 16
 * bytes each (an IPv4 address in the last 4, the rest zero). The
 * destination port is the service ID's low 16 bits.
 */
#define IB_CMA_HDR_BYTES 36u
#define IB_CMA_VERSION 0x00
#define IB_RDMA_PS_TCP 0x0106u
#define IB_RDMA_PS_UDP 0x0111u
#define IB_RDMA_PS_IB 0x013fu
#define IB_CMA_PDATA (IB_CM_REQ_PDATA - IB_CMA_HDR_BYTES)	/* 56 */
#define IB_CMA_SIDR_PDATA (IB_CM_SIDR_REQ_PDATA - IB_CMA_HDR_BYTES)
_Static_assert(IB_CMA_PDATA == 56, "rdma_cm leaves 56 bytes in a REQ");

/* Service ID of port @port in rdma_cm port space @ps (IBA A3.2.2). */
static inline uint64_t ib_cma_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/* The port space of @sid, or 0 when it is not one of rdma_cm's. */
static inline uint16_t ib_cma_ps_of(uint64_t sid)
{
	uint16_t ps = (uint16_t)(sid >> 16);

	if (sid >> 32)
		return 0;
	return ps == IB_RDMA_PS_TCP || ps == IB_RDMA_PS_UDP ||
			       ps == IB_RDMA_PS_IB ?
		       ps :
		       0;
}

/* Write the header for @src -> @dst (AF_INET or AF_INET6, same family,
 * ports in the sockaddrs) into @out. -EAFNOSUPPORT otherwise. */
int ib_cma_hdr_encode(uint8_t out[IB_CMA_HDR_BYTES],
		      const struct sockaddr *src, const struct sockaddr *dst);
/* Read it: @src gets the active side's address and port, @dst its
 * destination address with port @dst_port. -EPROTO (with *why set) for a
 * version or IP version we do not know. */
int ib_cma_hdr_decode(const uint8_t in[IB_CMA_HDR_BYTES], uint16_t dst_port,
		      struct sockaddr_storage *src,
		      struct sockaddr_storage *dst, const char **why);

#endif /* CM_IB_MAD_H */
