/* SPDX-License-Identifier: MIT */
/*
 * it_server - a complete IT-API server: listens on one port on every
 * device (or the one named), accepts one client with a buffer advertised
 * in the private data (the client writes and reads it with RDMA), answers
 * one message in upper case, waits for the client to disconnect. Says on
 * stderr which device the client came on.
 *
 *   it_server [PORT [INTERFACE]]     PORT 0 (default) picks a free one
 *
 * Build: cc it_server.c $(pkg-config --cflags --libs hostrdma)
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_US (30ull * 1000 * 1000)
#define FLAGS ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

#define CHECK(call)                                                         \
	do {                                                                \
		it_status_t st_ = (call);                                   \
		if (st_ != IT_SUCCESS) {                                    \
			fprintf(stderr, "%s failed: status %d\n", #call,    \
				st_);                                       \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* What the client learns about our buffer, in network byte order. */
struct advert {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static void wait_for(it_evd_handle_t evd, it_event_type_t type,
		     it_event_t *ev)
{
	size_t nmore;

	CHECK(it_evd_wait(evd, TIMEOUT_US, ev, &nmore));
	if (ev->event_number != type) {
		fprintf(stderr, "got event 0x%x, expected 0x%x\n",
			ev->event_number, type);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	it_interface_t itf[16];
	size_t n = 16, total, nl = 0, i, c = 0;
	struct pollfd pfd[16];
	it_ia_handle_t ia, all[16];
	const char *name[16];
	it_pz_handle_t pz;
	it_evd_handle_t dto, reqs[16], msgs;
	it_ep_attributes_t attr;
	it_ep_handle_t ep;
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	it_listen_handle_t listener;
	static char msg[64], data[4096];
	it_lmr_handle_t msg_lmr, data_lmr;
	it_rmr_context_t data_rkey;
	it_lmr_triplet_t seg;
	struct advert ad;
	it_status_t st, last = IT_SUCCESS;
	it_event_t ev;
	size_t len;

	qual.conn_qual.port = htons((uint16_t)(argc > 1 ? atoi(argv[1]) : 0));
	/* Listen on the named interface (a device, e.g. siw_eth0), or on
	 * every one that opens, on one port: clients try them in turn. */
	it_interface_list(itf, &n, &total);
	if (argc > 2) {
		snprintf(itf[0].name, sizeof(itf[0].name), "%s", argv[2]);
		n = 1;
	}
	/* iWARP devices first: when the port is picked, TCP picks it, so it
	 * is free for every iWARP device; RoCE's port space is its own. */
	for (i = 0; i < 2 * n; i++) {
		bool iwarp = itf[i % n].transport_type ==
			     IT_IWARP_TCP_TRANSPORT;

		if (argc <= 2 && iwarp != (i < n))
			continue;
		if (argc > 2 && i >= n)
			break;
		st = it_ia_create(itf[i % n].name, 2, 1, &all[nl]);
		if (st != IT_SUCCESS) {
			last = st;	/* e.g. soft-RoCE held elsewhere */
			continue;
		}
		st = it_evd_create(all[nl], IT_CM_REQ_EVENT_STREAM,
				   IT_EVD_CREATE_FD, 8, 0, NULL, &reqs[nl],
				   &pfd[nl].fd);
		if (st == IT_SUCCESS)
			st = it_listen_create(all[nl], 0, reqs[nl],
					      qual.conn_qual.port ?
						      IT_LISTEN_CONN_QUAL_INPUT :
						      IT_LISTEN_NO_FLAG,
					      &qual, &listener);
		if (st != IT_SUCCESS) {
			last = st;
			it_ia_free(all[nl]);
			continue;
		}
		name[nl] = itf[i % n].name;
		pfd[nl++].events = POLLIN;
	}
	if (nl == 0) {
		if (last == IT_ERR_CONN_QUAL_BUSY)
			fprintf(stderr, "port %u is in use\n",
				ntohs(qual.conn_qual.port));
		else if (last == IT_ERR_INVALID_NAME)
			fprintf(stderr, "no interface %s (hostrdma-info -l "
				"lists them)\n", itf[0].name);
		else
			fprintf(stderr, "no RDMA interface could listen "
				"(it_status_t %d)\n", (int)last);
		return 1;
	}
	printf("listening on port %u\n", ntohs(qual.conn_qual.port));
	fflush(stdout);

	/* The first request decides the device; the others are closed. */
	while (poll(pfd, nl, -1) < 1)
		;
	while (!(pfd[c].revents & POLLIN))
		c++;
	for (i = 0; i < nl; i++)
		if (i != c)
			CHECK(it_ia_free(all[i]));
	ia = all[c];
	CHECK(it_pz_create(ia, &pz));
	CHECK(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, &dto,
			    NULL));
	CHECK(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL, &msgs,
			    NULL));

	memset(&attr, 0, sizeof(attr));
	attr.max_request_dtos = attr.max_recv_dtos = 8;
	attr.max_send_segments = attr.max_recv_segments = 1;
	attr.srv.rc.rdma_read_enable = attr.srv.rc.rdma_write_enable = IT_TRUE;
	attr.srv.rc.rdma_read_ird = attr.srv.rc.rdma_read_ord = 4;
	CHECK(it_ep_rc_create(pz, dto, dto, msgs, IT_EP_NO_FLAG, &attr, &ep));

	/* Memory: a message buffer, and one the client reaches remotely. */
	CHECK(it_lmr_create(pz, msg, NULL, sizeof(msg), IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &msg_lmr,
			    NULL));
	CHECK(it_lmr_create(pz, data, NULL, sizeof(data),
			    IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			    0, &data_lmr, &data_rkey));
	seg.lmr = msg_lmr;
	seg.addr.abs = msg;
	seg.length = sizeof(msg);
	CHECK(it_post_recv(ep, &seg, 1, 1, FLAGS));

	wait_for(reqs[c], IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
	fprintf(stderr, "client on %s\n", name[c]);
	ad.addr = it_hton64((uintptr_t)data);
	ad.rkey = htonl((uint32_t)data_rkey);
	ad.len = htonl(sizeof(data));
	CHECK(it_ep_accept(ep, ev.conn_req.cn_est_id,
			   (const unsigned char *)&ad, sizeof(ad)));
	wait_for(msgs, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);

	/* One message in, the same in upper case out. */
	wait_for(dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	len = ev.dto_cmpl.transferred_length;
	if (ev.dto_cmpl.dto_status != IT_DTO_SUCCESS || len >= sizeof(msg)) {
		fprintf(stderr, "bad message\n");
		return 1;
	}
	msg[len] = 0;
	printf("client said: %s\n", msg);
	fflush(stdout);
	for (size_t j = 0; j < len; j++)
		msg[j] = (char)toupper((unsigned char)msg[j]);
	seg.length = len;
	CHECK(it_post_send(ep, &seg, 1, 2, FLAGS));
	wait_for(dto, IT_DTO_SEND_CMPL_EVENT, &ev);

	/* The client writes and reads our buffer, then disconnects. */
	wait_for(msgs, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	printf("disconnected\n");
	CHECK(it_ia_free(ia));	/* frees everything made on it */
	return 0;
}
