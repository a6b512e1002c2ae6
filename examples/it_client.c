/* SPDX-License-Identifier: MIT */
/*
 * it_client - a complete IT-API client: tries each device (interface)
 * with a path to the server until one connects, sends a message and reads
 * the answer, writes the server's advertised buffer with RDMA and reads it
 * back, disconnects. Says on stderr which device it used.
 *
 *   it_client SERVER-IPv4 PORT
 *
 * Build: cc it_client.c $(pkg-config --cflags --libs hostrdma)
 */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include <arpa/inet.h>
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
	if (ev->event_number != type ||
	    ((type & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM &&
	     ev->dto_cmpl.dto_status != IT_DTO_SUCCESS)) {
		fprintf(stderr, "got event 0x%x (status %d), expected 0x%x\n",
			ev->event_number, ev->dto_cmpl.dto_status, type);
		exit(1);
	}
}

static it_pz_handle_t pz;
static it_evd_handle_t dto, msgs;
static it_ep_handle_t ep;
static char reply[64];

/* On @ia: PZ, EVDs, EP, a receive posted, it_ep_connect. */
static void start_connect(it_ia_handle_t ia, it_path_t *path,
			  it_conn_qual_t *qual)
{
	it_ep_attributes_t attr;
	it_lmr_handle_t lmr;
	it_lmr_triplet_t seg;

	CHECK(it_pz_create(ia, &pz));
	CHECK(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, &dto,
			    NULL));
	CHECK(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL, &msgs,
			    NULL));
	memset(&attr, 0, sizeof(attr));
	attr.max_request_dtos = attr.max_recv_dtos = 8;
	attr.max_send_segments = attr.max_recv_segments = 1;
	attr.srv.rc.max_rdma_read_segments = 1;
	attr.srv.rc.max_rdma_write_segments = 1;
	attr.srv.rc.rdma_read_ird = attr.srv.rc.rdma_read_ord = 4;
	CHECK(it_ep_rc_create(pz, dto, dto, msgs, IT_EP_NO_FLAG, &attr, &ep));
	/* Every buffer gets its own LMR. The target of an RDMA Read needs
	 * remote write on iWARP (rdma_read_requires_remote_write). */
	CHECK(it_lmr_create(pz, reply, NULL, sizeof(reply),
			    IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			    IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	seg.lmr = lmr;
	seg.addr.abs = reply;
	seg.length = sizeof(reply);
	CHECK(it_post_recv(ep, &seg, 1, 1, FLAGS));
	CHECK(it_ep_connect(ep, path, NULL, qual, IT_CONNECT_FLAG_TWO_WAY,
			    NULL, 0));
}

int main(int argc, char **argv)
{
	it_net_addr_t dst = { .addr_type = IT_IPV4 };
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	it_interface_t itf[16];
	size_t n = 16, total, np, i, nmore;
	it_path_t path;
	it_ia_handle_t ia;
	static char msg[64], out[4096], back[4096];
	it_lmr_handle_t lmr;
	it_lmr_triplet_t seg;
	struct advert ad;
	it_event_t ev;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &dst.addr.ipv4) != 1) {
		fprintf(stderr, "usage: %s SERVER-IPv4 PORT\n", argv[0]);
		return 2;
	}
	qual.conn_qual.port = htons((uint16_t)atoi(argv[2]));
	/* Each device with a path to the server, in it_interface_list's
	 * order, until one connects; a refusal moves on to the next. */
	it_interface_list(itf, &n, &total);
	for (i = 0; i < n; i++) {
		if (it_ia_create(itf[i].name, 2, 1, &ia) != IT_SUCCESS)
			continue;	/* e.g. soft-RoCE held elsewhere */
		np = 1;
		if (it_get_pathinfo(ia, 0, &dst, &np, &total, &path) ==
			    IT_SUCCESS && np == 1) {
			start_connect(ia, &path, &qual);
			CHECK(it_evd_wait(msgs, TIMEOUT_US, &ev, &nmore));
			if (ev.event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT)
				break;
			if (ev.event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT) {
				fprintf(stderr, "%s: rejected (event 0x%x)\n",
					itf[i].name, ev.event_number);
				return 1;
			}
		}
		it_ia_free(ia);	/* frees everything made on it */
	}
	if (i == n) {
		fprintf(stderr, "no RDMA device connected to %s port %s\n",
			argv[1], argv[2]);
		return 1;
	}
	memcpy(&ad, ev.conn.private_data, sizeof(ad));
	printf("connected to %s\n", argv[1]);
	fprintf(stderr, "over %s\n", itf[i].name);

	/* A message and its answer. */
	snprintf(msg, sizeof(msg), "hello from the client");
	CHECK(it_lmr_create(pz, msg, NULL, sizeof(msg), IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	seg.lmr = lmr;
	seg.addr.abs = msg;
	seg.length = strlen(msg);
	CHECK(it_post_send(ep, &seg, 1, 2, FLAGS));
	wait_for(dto, IT_DTO_SEND_CMPL_EVENT, &ev);
	wait_for(dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	reply[ev.dto_cmpl.transferred_length % sizeof(reply)] = 0;
	printf("server says: %s\n", reply);

	/* RDMA: write a pattern into the server's buffer, read it back. */
	for (size_t j = 0; j < sizeof(out); j++)
		out[j] = (char)(j * 31 + 7);
	CHECK(it_lmr_create(pz, out, NULL, sizeof(out), IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	seg.lmr = lmr;
	seg.addr.abs = out;
	seg.length = sizeof(out);
	CHECK(it_post_rdma_write(ep, &seg, 1, 3, FLAGS, it_ntoh64(ad.addr),
				 ntohl(ad.rkey)));
	wait_for(dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, &ev);
	CHECK(it_lmr_create(pz, back, NULL, sizeof(back),
			    IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE,
			    IT_LMR_FLAG_NONE, 0, &lmr, NULL));
	seg.lmr = lmr;
	seg.addr.abs = back;
	CHECK(it_post_rdma_read(ep, &seg, 1, 4, FLAGS, it_ntoh64(ad.addr),
				ntohl(ad.rkey)));
	wait_for(dto, IT_DTO_RDMA_READ_CMPL_EVENT, &ev);
	if (memcmp(out, back, sizeof(out)) != 0) {
		fprintf(stderr, "RDMA read back differs\n");
		return 1;
	}
	printf("RDMA write and read checked\n");
	fflush(stdout);

	CHECK(it_ep_disconnect(ep, NULL, 0));
	wait_for(msgs, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	CHECK(it_ia_free(ia));	/* frees everything made on it */
	return 0;
}
