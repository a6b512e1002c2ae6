/* SPDX-License-Identifier: MIT */
/*
 * cm_ib.h - what the files of the InfiniBand CM share: the GSI port of
 * each RoCE/IB device (cm_ib_gsi.c: QP1, its buffers, address handles,
 * MAD send and receive) and the connection state machine (cm_ib.c).
 */
#ifndef CM_IB_H
#define CM_IB_H

#include "cm/cm.h"
#include "cm/ib_mad.h"

/* Where a MAD goes (or came from): the peer's GID and our GID index. */
struct ib_dest {
	union rnicpi_gid dgid;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint32_t dest_qpn;	/* 1 for CM MADs */
};

/* What the GRH of a received MAD says. */
struct ib_src {
	struct sockaddr_storage from;	/* the peer (unmapped IPv4) */
	struct sockaddr_storage to;	/* our address it was sent to */
	union rnicpi_gid sgid, dgid;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint32_t src_qp;
};

/* The GSI of one device, made on first use, gone at cm_close. */
struct ib_port;

/* The port of @d (made now if needed; called with the ib lock held).
 * Borrowed: lives until cm_ib_fini. */
int ib_port_get(struct cm *cm, struct ual_device *d, struct ib_port **out);
void ib_port_free(struct ib_port *p);
struct ual_device *ib_port_device(struct ib_port *p);
const char *ib_port_prefix(struct ib_port *p);
uint64_t ib_port_guid(struct ib_port *p);	/* host order */
enum rnicpi_mtu ib_port_mtu(struct ib_port *p);
/* Our GID index for the local address @sa; -EADDRNOTAVAIL if none. */
int ib_port_gid_index(struct ib_port *p, const struct sockaddr *sa);
/* Post @m to @dst (an address handle made for the send, dropped at its
 * completion). */
int ib_port_send(struct ib_port *p, const struct ib_mad *m,
		 const struct ib_dest *dst);

/* A MAD arrived on @p (the manager's thread, no lock held). */
void cm_ib_recv(struct cm *cm, struct ib_port *p, const struct ib_mad *m,
		const struct ib_src *src);

/* GID <-> address: an IPv4-mapped GID becomes AF_INET. */
void ib_gid_to_sockaddr(const union rnicpi_gid *g, struct sockaddr_storage *ss);
void ib_sockaddr_to_gid(const struct sockaddr *sa, union rnicpi_gid *g);

/* cm.c calls these. */
void cm_ib_init(struct cm *cm);
void cm_ib_fini(struct cm *cm);

#endif /* CM_IB_H */
