/* SPDX-License-Identifier: MIT */
/*
 * cm.h - the connection manager's interface, for the layer above (itapi).
 *
 * Transport-neutral connection set-up and tear-down for the QPs of the user
 * access layer: cm/ resolves addresses and routes through kal/, runs the
 * transport's side of the set-up (TCP for iWARP, the InfiniBand CM for
 * RoCE) and drives the provider's connection hooks through ual/; the
 * provider's connection events reach cm/ through ual_set_conn_handler.
 * The objects and the transports behind this interface are in
 * cm_private.h.
 *
 * Errors are 0 / -errno, logged in domain "hostrdma-cm" naming the object.
 */
#ifndef CM_H
#define CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <glib.h>

#include "ual/ual.h"


/*
 * Events are delivered to the cm_event_fn given when the object was
 * made, from cm's thread or a provider thread, with no cm lock held; the
 * callback may call any cm_* function except destroying the object
 * the event is about. After cm_listen_destroy / cm_id_destroy
 * return, their callback is not running and will not run again.
 */
struct cm_listen;	/* a listener on a connection qualifier */
struct cm_id;	/* the connection of one QP */

/* Take / drop a reference on the process's connection manager (its thread
 * runs while one is held). Every other cm_* call needs one:
 * without it they fail with -ENOTCONN (logged). */
int cm_open(struct ual *u);
void cm_close(void);

enum cm_event_type {
	/* Listener: a peer asks to connect. req_id names the request for
	 * cm_accept / cm_reject / cm_handoff; private data,
	 * ird and ord are the peer's. */
	CM_EV_REQUEST = 1,
	/* Connected, the QP is in RTS. Active side: private data is the
	 * peer's reply. */
	CM_EV_ESTABLISHED,
	/* Active side: the peer refused; private data is the peer's. */
	CM_EV_REJECTED,
	/* Active side: no peer answered. status: -ETIMEDOUT (no answer in
	 * time), -ECONNREFUSED (nothing listens), -EHOSTUNREACH /
	 * -ENETUNREACH (no path), -ECONNRESET / -EPROTO (the peer closed or
	 * spoke something else). */
	CM_EV_UNREACHABLE,
	/* An established connection ended in order (either side closed). */
	CM_EV_DISCONNECTED,
	/* An accepted or established connection broke; status says why. */
	CM_EV_BROKEN,
	/* Listener (IB CM): a UD service request (SIDR_REQ). req_id names it
	 * for cm_sidr_reply; private data is the requester's. */
	CM_EV_SIDR_REQUEST,
	/* Requester: the answer (SIDR_REP): status 0 with sidr_status, qpn,
	 * qkey and the replier's private data, or -ETIMEDOUT. */
	CM_EV_SIDR_REPLY,
	/* Active side of a three-way set-up (cm_param.three_way, InfiniBand
	 * CM): the peer accepted; private data, ird and ord are its REP's.
	 * The RTU waits for cm_confirm (ESTABLISHED follows) or cm_refuse;
	 * without either within the set-up time-out, UNREACHABLE. */
	CM_EV_ACCEPT_ARRIVED,
};

const char *cm_event_name(enum cm_event_type type);

struct cm_event {
	enum cm_event_type type;
	int status;			/* 0 or a negative errno */
	uint64_t req_id;		/* REQUEST; else the id's request or 0 */
	const void *private_data;	/* valid during the callback */
	uint32_t private_data_len;
	uint32_t ird, ord;		/* the peer's (REQUEST), else agreed */
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
	struct ual_device *device;	/* borrowed */
	uint8_t port_num;
	uint16_t port;			/* REQUEST: the listener's, host order */
	/* REQUEST on an InfiniBand CM listener: the service ID asked for
	 * (host order); 0 on iWARP. */
	uint64_t service_id;
	/* SIDR_REPLY: the status (IBA table 121: 0 valid, 1 service ID not
	 * supported, 2 rejected, 3 no QP, 4 redirect), the QP and Q_Key. */
	uint8_t sidr_status;
	uint32_t qpn, qkey;
};

typedef void (*cm_event_fn)(const struct cm_event *event,
			    void *user_data);

struct cm_param {
	const void *private_data;
	uint32_t private_data_len;
	uint32_t ird;		/* incoming RDMA Reads we accept at once */
	uint32_t ord;		/* outgoing RDMA Reads we issue at once */
	uint32_t timeout_ms;	/* whole set-up; 0 = the cm default */
	/* iWARP: no IRD/ORD exchange (IT_CONNECT_SUPPRESS_IRD_ORD): MPA
	 * revision 1, without RFC 6581's enhanced header. */
	bool no_ird_ord;
	/* InfiniBand CM (IT_CONNECT_FLAG_THREE_WAY): the active side reports
	 * the REP as ACCEPT_ARRIVED and sends the RTU only on cm_confirm.
	 * cm_connect fails with -EOPNOTSUPP on iWARP (MPA has no such step). */
	bool three_way;
	/* iWARP socket conversion (IT_SC_NO_REQ_REP): the consumer already
	 * exchanged the MPA Request and Reply on the socket; both ends enter
	 * RDMA mode at once (no markers, no CRC, no private data).
	 * -EOPNOTSUPP from a provider without RNICPI_DEV_CAP_IWARP_NO_MPA. */
	bool no_mpa;
};

enum cm_pdata_op {
	CM_PDATA_CONNECT,
	CM_PDATA_ACCEPT,
	CM_PDATA_REJECT,
	CM_PDATA_DISCONNECT,
};

/* Bytes of private data @d's transport carries for @op (0: none). */
uint32_t cm_max_private_data(struct ual_device *d,
			     enum cm_pdata_op op);

/* The default set-up time-out in ms (HOSTRDMA_CM_TIMEOUT_MS or 10000). */
uint32_t cm_default_timeout_ms(void);

/* What reaches a destination. */
struct cm_route {
	struct sockaddr_storage src;	/* source address to use */
	int ifindex;			/* interface the traffic belongs to */
	char ifname[RNICPI_IFNAMSIZ];
	uint32_t mtu;
	/* A device of the asked transport on that interface (new
	 * reference), or NULL when the interface has none. */
	struct ual_device *device;
};

/*
 * Resolve @dst (from @src if not NULL): the source address, the interface
 * (for a local destination, the one that owns the address), and a device
 * of @transport (0 = any) on it. 0 with *@out filled (device may be NULL:
 * the log names the interface that has no RDMA device), or
 * -ENETUNREACH / -EHOSTUNREACH, -EADDRNOTAVAIL (@src is not ours),
 * -EAFNOSUPPORT.
 */
int cm_resolve(const struct sockaddr *dst, const struct sockaddr *src,
	       enum rnicpi_transport transport,
	       struct cm_route *out);

/* The AF_INET/AF_INET6 addresses of the interface @d is bound to, as
 * struct sockaddr_storage (port 0). The caller frees it. */
GArray *cm_device_addrs(struct ual_device *d);

/*
 * Listen on @d's port @port_num for connection qualifier *@port (host
 * order; 0 picks a free one, written back). -EADDRINUSE when another
 * listener has it, -EOPNOTSUPP when @d's transport has no CM here.
 */
int cm_listen(struct ual_device *d, uint8_t port_num, uint16_t *port,
	      cm_event_fn fn, void *user_data,
	      struct cm_listen **out);
/* As cm_listen, for requests from remote port @remote_port (host order,
 * not 0) only: a request from another port is refused as if nobody
 * listened (iWARP: the TCP connection is closed; InfiniBand CM: REJ
 * "invalid service ID"). The port is the TCP source port on iWARP and
 * the source port of rdma_cm's private data header on RoCE. Any remote
 * address. -EINVAL for port 0. */
int cm_listen_from(struct ual_device *d, uint8_t port_num, uint16_t *port,
		   uint16_t remote_port, cm_event_fn fn, void *user_data,
		   struct cm_listen **out);
/*
 * InfiniBand CM (RoCE/IB devices): listen for service ID @service_id
 * (host order) instead of a port. A port listener above is the service ID
 * of that port in rdma_cm's TCP port space (0x0000000001060000 + port),
 * whose REQs carry librdmacm's address header; other service IDs are
 * plain IB CM, all 92 bytes of REQ private data the consumer's.
 * -EOPNOTSUPP on iWARP, -EADDRINUSE when taken.
 */
int cm_listen_service(struct ual_device *d, uint8_t port_num,
		      uint64_t service_id, cm_event_fn fn,
		      void *user_data, struct cm_listen **out);
/* Stop listening (NULL: nothing). Requests already reported stay valid. */
void cm_listen_destroy(struct cm_listen *l);

/*
 * Connect @qp (IDLE/INIT, RC) to @dst's connection qualifier @port (host
 * order), from @src if not NULL (its port, if not 0, is the local port).
 * Returns at once; ESTABLISHED, REJECTED or UNREACHABLE follows.
 * -EMSGSIZE for more private data than the transport carries.
 */
int cm_connect(struct ual_qp *qp, const struct sockaddr *dst,
	       uint16_t port, const struct sockaddr *src,
	       const struct cm_param *param, cm_event_fn fn,
	       void *user_data, struct cm_id **out);

/* Connect @qp to service ID @service_id (host order) at @dst over the
 * InfiniBand CM; as cm_connect otherwise. -EOPNOTSUPP on iWARP. */
int cm_connect_service(struct ual_qp *qp, const struct sockaddr *dst,
		       uint64_t service_id, const struct sockaddr *src,
		       const struct cm_param *param,
		       cm_event_fn fn, void *user_data,
		       struct cm_id **out);

/* Accept request @req_id with @qp; ESTABLISHED or BROKEN follows.
 * -ENOENT for an unknown or already answered request, -EXDEV when @qp is
 * on another device than the request. */
int cm_accept(uint64_t req_id, struct ual_qp *qp,
	      const struct cm_param *param, cm_event_fn fn,
	      void *user_data, struct cm_id **out);
/* Refuse request @req_id, sending @private_data to the peer. -ENOENT;
 * -EMSGSIZE (request kept) past the transport's reject limit. */
int cm_reject(uint64_t req_id, const void *private_data,
	      uint32_t private_data_len);
/* Hand request @req_id to the listener on port @port_num, qualifier
 * @port (or, when @service_id is not 0, InfiniBand service ID
 * @service_id, host order) of the device the request came to, which
 * reports it as a new REQUEST. -ENOENT unknown request, -ERANGE no such
 * port, -ESRCH no such listener. */
int cm_handoff(uint64_t req_id, uint8_t port_num, uint16_t port,
	       uint64_t service_id);

/*
 * Service ID resolution (IB CM SIDR, IBA 12.11): ask @dst which UD QP
 * serves service ID @service_id (0: @port's in rdma_cm's UDP port space,
 * 0x0000000001110000 + port, whose requests carry librdmacm's header),
 * sending @pdata. SIDR_REPLY follows (sent again on the way, at most
 * @timeout_ms in all; 0 = the cm default). -EOPNOTSUPP on iWARP.
 */
struct cm_sidr;
int cm_sidr_request(struct ual_device *d, const struct sockaddr *dst,
		    uint64_t service_id, uint16_t port, const void *pdata,
		    uint32_t len, uint32_t timeout_ms, cm_event_fn fn,
		    void *user_data, struct cm_sidr **out);
/* Forget it (NULL: nothing); its callback is not running and will not
 * run again. */
void cm_sidr_destroy(struct cm_sidr *s);
/* Answer the SIDR_REQUEST @req_id. -ENOENT unknown or answered,
 * -EMSGSIZE past 136 bytes of private data. */
int cm_sidr_reply(uint64_t req_id, uint8_t sidr_status, uint32_t qpn,
		  uint32_t qkey, const void *pdata, uint32_t len);

/* Three-way set-up, after ACCEPT_ARRIVED: send the RTU carrying @len bytes
 * of @pdata (ESTABLISHED follows at both ends), or refuse with a REJ
 * carrying them (the peer sees REJECTED; @id is closed, no event follows).
 * -EINVAL when @id waits for no such answer, -EMSGSIZE past the RTU's or
 * REJ's private data. */
int cm_confirm(struct cm_id *id, const void *pdata, uint32_t len);
int cm_refuse(struct cm_id *id, const void *pdata, uint32_t len);

/* Close the connection: in order (the peer sees DISCONNECTED) or, with
 * @abortive, at once (the peer sees BROKEN). A set-up in progress is
 * abandoned. -ENOTCONN when there is nothing to close. */
int cm_disconnect(struct cm_id *id, bool abortive);
/* An orderly cm_disconnect whose close carries @len bytes of private data
 * to the peer's DISCONNECTED (RoCE: the DREQ's); -EMSGSIZE past the
 * transport's limit (cm_max_private_data, CM_PDATA_DISCONNECT). */
int cm_disconnect_pdata(struct cm_id *id, const void *pdata, uint32_t len);
/* Forget @id (closing abortively what is still open); NULL: nothing.
 * This drops the reference cm_connect / cm_accept / cm_socket_convert
 * gave; the memory goes with the last reference. */
void cm_id_destroy(struct cm_id *id);
/*
 * Take / drop a reference on @id. A caller that uses @id after dropping
 * the lock under which it found it (its owner may cm_id_destroy it on
 * another thread meanwhile) holds one across the use: the memory stays,
 * and calls on a destroyed @id fail (cm_disconnect: -ENOTCONN) without
 * touching what the destroy released. cm_id_ref returns @id;
 * cm_id_unref(NULL) does nothing.
 */
struct cm_id *cm_id_ref(struct cm_id *id);
void cm_id_unref(struct cm_id *id);

/*
 * Turn the connected stream socket @sockfd into @qp's connection (iWARP):
 * the side whose (address, port) is lower starts MPA as initiator, the
 * other answers. Waits until the connection is established (ESTABLISHED is
 * also reported to @fn) or has failed. The caller's @sockfd stays open and
 * its own whatever the result: the provider works on a duplicate.
 * -ETIMEDOUT when the peer did not take part in time, -EPROTO when it
 * spoke something else, -ENOTSOCK / -ENOTCONN / -EOPNOTSUPP for a socket
 * that is not a connected TCP socket or a device without iWARP CM.
 */
int cm_socket_convert(struct ual_qp *qp, int sockfd,
		      const struct cm_param *param,
		      cm_event_fn fn, void *user_data,
		      struct cm_id **out);

#endif /* CM_H */
