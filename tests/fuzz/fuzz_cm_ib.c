/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cm_ib: the InfiniBand CM's MADs as a hostile peer sends them to
 * our QP1 (IBA chapter 12: REQ, REP, RTU, REJ, MRA, DREQ, DREP,
 * SIDR_REQ, SIDR_REP; the librdmacm header in a REQ's private data),
 * through the connection manager's state machine: cm_ib_recv() and the
 * ib_recv_*() handlers of cm/, on the manager's own thread, with the
 * whole stack under it (IT-API over soft-RoCE on lo, in a network
 * namespace of the target's own) so that what a MAD sets off (a REQUEST
 * event, a QP brought to RTS, a REJ or DREP sent back) happens for real.
 *
 * The process listens on port 7174 (rdma_cm's TCP port space, service ID
 * 0x1061c06) and on service ID 0x1234abcd, both for connections and
 * SIDR. Each input comes from a peer address of its own (127.0.x.y), so
 * that the connections an input leaves in TIMEWAIT do not answer for the
 * next one.
 *
 * Input: cfg, then records of a rctl byte and a 256-byte MAD (a short
 * last one is padded with zeros).
 *   cfg bit 0  connect first (REQ_SENT, to the peer, port 7174)
 *       bit 1  a connection request from the peer is accepted ...
 *       bit 2  ... or, with bit 1 clear, left unanswered (else rejected)
 *       bit 3  disconnect what is connected before the end
 *       bit 4  a SIDR request of ours to the peer first
 *       bit 5  a SIDR request from the peer is answered with a QPN
 *   rctl bit 0  the harness writes the comm ID we gave the connection
 *               into the MAD's remote comm ID (SIDR_REP: its request ID)
 *        bit 1  ... of the passive connection (else the active one)
 *        bit 2  the MAD comes from a QP other than QP1
 */
#include "config.h"

#include <arpa/inet.h>
#include <string.h>

#define ITAPI_ENABLE_V21_BINDINGS
#include "it_api.h"

#include "cm/cm_ib.h"
#include "tests/fuzz/fuzz.h"

#define PORT 7174
#define SID 0x1234abcdull
#define MAX_RECORDS 8

static struct {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto, req, msg, aff;
	it_listen_handle_t l_port, l_sid;
	struct cm *cm;
	struct ib_port *port;
	unsigned int n;			/* inputs so far */
} F;

/* One input's state. */
struct world {
	uint8_t cfg;
	struct in_addr peer;
	union rnicpi_gid peer_gid, our_gid;
	it_ep_handle_t active, passive;
	it_ud_svc_req_handle_t sidr;
	it_cn_est_identifier_t pending[8];
	unsigned int n_pending;
};

#define CHECK_IT(expr) FZ_CHECK((expr) == IT_SUCCESS)

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

static it_ep_handle_t ep_new(void)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;

	memset(&a, 0, sizeof(a));
	a.max_dto_payload_size = 1u << 20;
	a.max_request_dtos = a.max_recv_dtos = 8;
	a.max_send_segments = a.max_recv_segments = 2;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 2;
	a.srv.rc.max_rdma_write_segments = 2;
	a.srv.rc.rdma_read_ird = a.srv.rc.rdma_read_ord = 4;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	CHECK_IT(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, IT_EP_NO_FLAG, &a,
				 &ep));
	return ep;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	GHashTableIter it;
	gpointer key, val;

	(void)argc;
	(void)argv;
	fz_log_init();
	fz_netns_enter();
	g_setenv("HOSTRDMA_CONF", "", TRUE);
	g_setenv("HOSTRDMA_PROVIDER_PATH", FZ_RXE_PROVIDER_DIR, TRUE);
	g_setenv("HOSTRDMA_DEVICES", "rxe_lo", TRUE);
	g_unsetenv("HOSTRDMA_OPTIONS");
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", TRUE);
	CHECK_IT(it_ia_create("rxe_lo", 2, 1, &F.ia));
	CHECK_IT(it_pz_create(F.ia, &F.pz));
	CHECK_IT(it_evd_create(F.ia, IT_DTO_EVENT_STREAM, 0, 256, 0, NULL,
			       &F.dto, NULL));
	CHECK_IT(it_evd_create(F.ia, IT_CM_REQ_EVENT_STREAM, 0, 256, 0, NULL,
			       &F.req, NULL));
	CHECK_IT(it_evd_create(F.ia, IT_CM_MSG_EVENT_STREAM, 0, 256, 0, NULL,
			       &F.msg, NULL));
	CHECK_IT(it_evd_create(F.ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 256, 0,
			       NULL, &F.aff, NULL));
	q.conn_qual.port = htons(PORT);
	CHECK_IT(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT, &q,
				  &F.l_port));
	q.type = IT_IB_SERVICEID;
	q.conn_qual.serviceid = htobe64(SID);
	CHECK_IT(it_listen_create(F.ia, 0, F.req, IT_LISTEN_CONN_QUAL_INPUT, &q,
				  &F.l_sid));
	F.cm = cm_get();
	FZ_CHECK(F.cm && ib_of(F.cm));
	g_mutex_lock(&ib_of(F.cm)->lock);
	g_hash_table_iter_init(&it, ib_of(F.cm)->ports);
	FZ_CHECK(g_hash_table_iter_next(&it, &key, &val));
	F.port = val;
	g_mutex_unlock(&ib_of(F.cm)->lock);
	fz_stdio_quiet();
	return 0;
}

/* ------------------------------------------------------------------ */
/* The manager's thread                                                */
/* ------------------------------------------------------------------ */

struct call {
	const struct ib_mad *m;
	const struct ib_src *src;
	GMutex lock;
	GCond cond;
	bool done;
};

static gboolean run_call(gpointer data)
{
	struct call *c = data;

	if (c->m)
		cm_ib_recv(F.cm, F.port, c->m, c->src);
	g_mutex_lock(&c->lock);
	c->done = true;
	g_cond_signal(&c->cond);
	g_mutex_unlock(&c->lock);
	return G_SOURCE_REMOVE;
}

/* cm_ib_recv() as the GSI's CQ handler calls it, on the manager's
 * thread; @m NULL: only wait until that thread got this far. */
static void on_cm_thread(const struct ib_mad *m, const struct ib_src *src)
{
	struct call c = { .m = m, .src = src };
	GSource *s = g_idle_source_new();

	g_mutex_init(&c.lock);
	g_cond_init(&c.cond);
	g_source_set_callback(s, run_call, &c, NULL);
	g_source_attach(s, F.cm->ctx);
	g_source_unref(s);
	g_mutex_lock(&c.lock);
	while (!c.done)
		g_cond_wait(&c.cond, &c.lock);
	g_mutex_unlock(&c.lock);
	g_mutex_clear(&c.lock);
	g_cond_clear(&c.cond);
}

/* ------------------------------------------------------------------ */
/* What the consumer does                                              */
/* ------------------------------------------------------------------ */

static void consume(struct world *w)
{
	it_event_t ev;

	while (it_evd_dequeue(F.req, &ev) == IT_SUCCESS) {
		if (ev.event_number == IT_CM_REQ_CONN_REQUEST_EVENT) {
			it_cn_est_identifier_t id = ev.conn_req.cn_est_id;

			if ((w->cfg & 0x02) && !w->passive) {
				w->passive = ep_new();
				if (it_ep_accept(w->passive, id,
						 (const unsigned char *)"ok",
						 2) != IT_SUCCESS)
					it_reject(id, NULL, 0);
			} else if ((w->cfg & 0x04) && w->n_pending < 8) {
				w->pending[w->n_pending++] = id;
			} else {
				it_reject(id, (const unsigned char *)"no", 2);
			}
		} else if (ev.event_number ==
			   IT_CM_REQ_UD_SERVICE_REQUEST_EVENT) {
			it_remote_ep_info_t info = { .ud_ep_id = 0x99,
						     .ud_ep_key = 0x11111111 };

			it_ud_service_reply(ev.ud_svc_request.ud_svc_req_id,
					    (w->cfg & 0x20)
						    ? IT_UD_SVC_EP_INFO_VALID
						    : IT_UD_SVC_REQ_REJECTED,
					    info, (const unsigned char *)"ud",
					    2);
		}
	}
	while (it_evd_dequeue(F.msg, &ev) == IT_SUCCESS)
		;
	while (it_evd_dequeue(F.aff, &ev) == IT_SUCCESS)
		;
	while (it_evd_dequeue(F.dto, &ev) == IT_SUCCESS)
		;
}

static bool path_to_peer(struct world *w, it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4 = w->peer;
	return it_get_pathinfo(F.ia, 0, &na, &n, &total, path) ==
		       IT_SUCCESS &&
	       n == 1;
}

static void start(struct world *w)
{
	it_path_t path;

	if (!(w->cfg & 0x11) || !path_to_peer(w, &path))
		return;
	if (w->cfg & 0x01) {
		it_conn_qual_t q = { .type = IT_IANA_PORT };

		q.conn_qual.port = htons(PORT);
		w->active = ep_new();
		it_ep_connect(w->active, &path, NULL, &q,
			      IT_CONNECT_FLAG_TWO_WAY,
			      (const unsigned char *)"fuzz", 4);
	}
	if (w->cfg & 0x10) {
		it_conn_qual_t q = { .type = IT_IB_SERVICEID };

		q.conn_qual.serviceid = htobe64(SID);
		if (it_ud_service_request_handle_create(
			    &q, F.msg, &path, (const unsigned char *)"who", 3,
			    &w->sidr) == IT_SUCCESS)
			it_ud_service_request(w->sidr);
	}
	on_cm_thread(NULL, NULL);
	consume(w);
}

/* The comm ID we gave this input's active (or passive) connection, or
 * the request ID of its SIDR request; 0 if none. */
static uint32_t our_id(struct world *w, bool passive, bool sidr)
{
	struct ib_state *st = ib_of(F.cm);
	GHashTableIter it;
	gpointer key, val;
	uint32_t id = 0;

	g_mutex_lock(&st->lock);
	if (sidr) {
		g_hash_table_iter_init(&it, st->sidr_out);
		while (!id && g_hash_table_iter_next(&it, &key, &val))
			id = GPOINTER_TO_UINT(key);
	} else {
		g_hash_table_iter_init(&it, st->conns);
		while (g_hash_table_iter_next(&it, &key, &val)) {
			struct ib_conn *c = val;

			if (c->active != !passive ||
			    memcmp(c->dest.dgid.raw, w->peer_gid.raw, 16))
				continue;
			id = c->local_id;
		}
	}
	g_mutex_unlock(&st->lock);
	return id;
}

static void record(struct world *w, uint8_t rctl, const uint8_t *bytes,
		   size_t len)
{
	struct ib_mad m;
	struct ib_src src;

	memset(&m, 0, sizeof(m));
	memcpy(m.b, bytes, len);
	if (rctl & 0x01) {
		bool sidr = ib_mad_get16(&m, IB_MAD_OFF_ATTR_ID) ==
			    IB_CM_ATTR_SIDR_REP;
		uint32_t id = our_id(w, rctl & 0x02, sidr);

		if (id)
			ib_mad_put32(&m, sidr ? IB_CM_D(0) : IB_CM_D(4), id);
	}
	memset(&src, 0, sizeof(src));
	src.sgid = w->peer_gid;
	src.dgid = w->our_gid;
	ib_gid_to_sockaddr(&src.sgid, &src.from);
	ib_gid_to_sockaddr(&src.dgid, &src.to);
	src.hop_limit = 64;
	src.src_qp = (rctl & 0x04) ? 0x42 : IB_GSI_QPN_CM;
	on_cm_thread(&m, &src);
	consume(w);
}

static void finish(struct world *w)
{
	if (w->cfg & 0x08) {
		if (w->active)
			it_ep_disconnect(w->active, NULL, 0);
		if (w->passive)
			it_ep_disconnect(w->passive, NULL, 0);
		on_cm_thread(NULL, NULL);
		consume(w);
	}
	for (unsigned int i = 0; i < w->n_pending; i++)
		it_reject(w->pending[i], NULL, 0);
	if (w->sidr)
		it_ud_service_request_handle_free(w->sidr);
	if (w->active)
		CHECK_IT(it_ep_free(w->active));
	if (w->passive)
		CHECK_IT(it_ep_free(w->passive));
	on_cm_thread(NULL, NULL);
	consume(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	struct world w;
	unsigned int n = F.n++, records = 0;

	memset(&w, 0, sizeof(w));
	w.cfg = fz_u8(&in);
	w.peer.s_addr = htonl(0x7f000000u | ((n / 250) % 250 + 1) << 8 |
			      (n % 250 + 2));
	w.peer_gid.raw[10] = w.peer_gid.raw[11] = 0xff;
	memcpy(&w.peer_gid.raw[12], &w.peer, 4);
	w.our_gid.raw[10] = w.our_gid.raw[11] = 0xff;
	w.our_gid.raw[12] = 127;
	w.our_gid.raw[15] = 1;
	start(&w);
	while (in.n && records++ < MAX_RECORDS) {
		uint8_t rctl = fz_u8(&in);
		size_t len;
		const uint8_t *mad = fz_take(&in, IB_MAD_BYTES, &len);

		record(&w, rctl, mad, len);
	}
	finish(&w);
	return 0;
}
