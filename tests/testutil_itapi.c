/* SPDX-License-Identifier: MIT */
/* Helpers for the IT-API suites. */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#include "ual/ual.h"

const char *it_dev_name = "siw_lo";

static const char *const env_vars[] = {
	UAL_ENV_PROVIDER_PATH, UAL_ENV_DEVICES, UAL_ENV_CONF, UAL_ENV_OPTIONS,
	"HOSTRDMA_CM_TIMEOUT_MS",
};

static void env_clear(void)
{
	for (size_t i = 0; i < G_N_ELEMENTS(env_vars); i++)
		g_unsetenv(env_vars[i]);
}

void it_setup_siw(void)
{
	env_clear();
	g_setenv(UAL_ENV_CONF, "", TRUE);
	g_setenv(UAL_ENV_PROVIDER_PATH, SIW_PROVIDER_DIR, TRUE);
	g_setenv(UAL_ENV_DEVICES, "siw_lo", TRUE);
	/* Short set-up time-outs keep the time-out cases quick; the
	 * provider's is below the manager's, as in production. */
	g_setenv(UAL_ENV_OPTIONS, "siw.mpa_timeout_ms=1500", TRUE);
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", TRUE);
	it_dev_name = "siw_lo";
}

void it_setup_rxe(void)
{
	env_clear();
	g_setenv(UAL_ENV_CONF, "", TRUE);
	g_setenv(UAL_ENV_PROVIDER_PATH, RXE_PROVIDER_DIR, TRUE);
	g_setenv(UAL_ENV_DEVICES, "rxe_lo", TRUE);
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", TRUE);
	it_dev_name = "rxe_lo";
}

bool it_env_is_rxe(void)
{
	return strcmp(it_dev_name, "rxe_lo") == 0;
}

void it_setup_testprov(void)
{
	env_clear();
	g_setenv(UAL_ENV_CONF, "", TRUE);
	g_setenv(UAL_ENV_PROVIDER_PATH, TESTPROV_DIR, TRUE);
	g_setenv(UAL_ENV_DEVICES, "test_lo", TRUE);
	it_dev_name = "test_lo";
}

void it_teardown(void)
{
	env_clear();
}

void it_fix_open(struct it_fix *f)
{
	memset(f, 0, sizeof(*f));
	ck_assert_it_ok(it_ia_create(it_dev_name, 2, 1, &f->ia));
	ck_assert_it_ok(it_pz_create(f->ia, &f->pz));
	ck_assert_it_ok(it_evd_create(f->ia, IT_DTO_EVENT_STREAM, 0, 256, 0,
				      NULL, &f->dto, NULL));
	ck_assert_it_ok(it_evd_create(f->ia, IT_CM_REQ_EVENT_STREAM, 0, 64, 0,
				      NULL, &f->req, NULL));
	ck_assert_it_ok(it_evd_create(f->ia, IT_CM_MSG_EVENT_STREAM, 0, 64, 0,
				      NULL, &f->msg, NULL));
	ck_assert_it_ok(it_evd_create(f->ia, IT_ASYNC_AFF_EVENT_STREAM, 0, 64,
				      0, NULL, &f->aff, NULL));
}

void it_fix_close(struct it_fix *f)
{
	/* it_ia_free takes down whatever the test left. */
	if (f->ia)
		ck_assert_it_ok(it_ia_free(f->ia));
	memset(f, 0, sizeof(*f));
}

void it_ep_attr_default(struct it_fix *f, it_ep_attributes_t *a, size_t dtos)
{
	struct itapi_ia *ia = (struct itapi_ia *)f->ia;
	bool reads = ia->attr.max_qp_rd_atom > 0;

	memset(a, 0, sizeof(*a));
	a->max_dto_payload_size = 1u << 20;
	a->max_request_dtos = dtos;
	a->max_recv_dtos = dtos;
	a->max_send_segments = 4;
	a->max_recv_segments = 4;
	a->srv.rc.rdma_read_enable = IT_TRUE;
	a->srv.rc.rdma_write_enable = IT_TRUE;
	a->srv.rc.max_rdma_read_segments = 4;
	a->srv.rc.max_rdma_write_segments = 4;
	a->srv.rc.rdma_read_ird = reads ? 4 : 0;
	a->srv.rc.rdma_read_ord = reads ? 4 : 0;
	a->srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
}

it_ep_handle_t it_ep_new(struct it_fix *f)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;

	it_ep_attr_default(f, &a, 32);
	ck_assert_it_ok(it_ep_rc_create(f->pz, f->dto, f->dto, f->msg,
					IT_EP_NO_FLAG, &a, &ep));
	return ep;
}

struct it_fix *it_fix_peer(struct it_fix *f)
{
	return f;
}

it_ep_handle_t it_ep_new_peer(struct it_fix *f)
{
	return it_ep_new(it_fix_peer(f));
}

bool it_wait_event_for(it_evd_handle_t evd, uint64_t us, it_event_t *ev)
{
	size_t nmore;
	it_status_t st = it_evd_wait(evd, us, ev, &nmore);

	if (st == IT_ERR_TIMEOUT_EXPIRED)
		return false;
	ck_assert_msg(st == IT_SUCCESS, "it_evd_wait: %s",
		      itapi_status_name(st));
	return true;
}

void it_wait_event(it_evd_handle_t evd, it_event_t *ev)
{
	ck_assert_msg(it_wait_event_for(evd, IT_WAIT_US, ev),
		      "no event within %llu us", IT_WAIT_US);
}

void it_loopback_path(struct it_fix *f, it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_it_ok(it_get_pathinfo(f->ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(total, 1);
	ck_assert_uint_eq(n, 1);
}

uint32_t it_loopback_ipv4(void)
{
	return htonl(INADDR_LOOPBACK);
}

bool it_env_ird_ord_suppressible(void)
{
	return !it_env_is_rxe();
}

void it_connect_pair(struct it_fix *f, it_ep_handle_t a, it_ep_handle_t b)
{
	struct it_fix *p = it_fix_peer(f);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	it_event_t ev;
	it_path_t path;
	int got = 0;

	ck_assert_it_ok(it_listen_create(p->ia, 0, p->req, IT_LISTEN_NO_FLAG,
					 &q, &l));
	it_loopback_path(f, &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
	it_wait_event(p->req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	/* One EVD for both sides here, the tree's suites' fixture. */
	while (got < 2) {
		it_wait_event(f->msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
		ck_assert(ev.conn.ep == a || ev.conn.ep == b);
		got++;
	}
	ck_assert_it_ok(it_listen_free(l));
}

void it_testprov_pair(it_ep_handle_t a, it_ep_handle_t b)
{
	struct itapi_ep *ea = (struct itapi_ep *)a, *eb = (struct itapi_ep *)b;
	static const enum rnicpi_qp_state steps[] = {
		RNICPI_QPS_INIT, RNICPI_QPS_RTR, RNICPI_QPS_RTS,
	};

	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
		struct rnicpi_qp_attr qa = { .qp_state = steps[i] };
		unsigned int mask = RNICPI_QP_STATE;

		if (steps[i] == RNICPI_QPS_RTR)
			mask |= RNICPI_QP_DEST_QPN;
		qa.dest_qp_num = eb->qp_num;
		ck_assert_ok(ual_qp_modify(ea->qp, &qa, mask));
		qa.dest_qp_num = ea->qp_num;
		ck_assert_ok(ual_qp_modify(eb->qp, &qa, mask));
	}
	ea->state.rc = IT_EP_STATE_CONNECTED;
	eb->state.rc = IT_EP_STATE_CONNECTED;
}

void it_dev_limits(struct it_fix *f, struct it_dev_limits *l)
{
	const struct rnicpi_device_attr *d = &((struct itapi_ia *)f->ia)->attr;

	l->max_msg_size = d->max_msg_size;
	l->max_qp_wr = d->max_qp_wr;
	l->max_sge = d->max_sge;
	l->max_qp_rd_atom = d->max_qp_rd_atom;
	l->max_qp_init_rd_atom = d->max_qp_init_rd_atom;
	l->max_srq_wr = d->max_srq_wr;
	l->max_srq_sge = d->max_srq_sge;
	l->max_cqe = d->max_cqe;
	l->resize_qp = d->caps & RNICPI_DEV_CAP_RESIZE_QP;
}

uint32_t it_ep_qp_num(it_ep_handle_t ep)
{
	return ((struct itapi_ep *)ep)->qp_num;
}

void it_evd_until_waiting(it_evd_handle_t evd)
{
	struct itapi_evd *e = (struct itapi_evd *)evd;

	for (;;) {
		int n;

		g_mutex_lock(&e->lock);
		n = e->waiters;
		g_mutex_unlock(&e->lock);
		if (n)
			return;
		g_usleep(1000);
	}
}

it_status_t it_evd_post_internal(it_evd_handle_t evd, it_event_type_t type)
{
	it_event_t ev = { 0 };

	ev.event_number = type;
	return itapi_evd_post((struct itapi_evd *)evd, &ev, true);
}

void it_evd_pump(it_evd_handle_t evd)
{
	itapi_evd_pump((struct itapi_evd *)evd);
}

void it_buf_new(struct it_fix *f, struct it_buf *b, size_t len,
		it_mem_priv_t privs)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t whole = (len + page - 1) / page * page;
	void *mem = NULL;

	/* Whole pages of its own: registration marks the pages it covers
	 * MADV_DONTFORK, and a fork()ed child (itapi-mp starts peers so)
	 * would fault on anything else living on them. */
	memset(b, 0, sizeof(*b));
	ck_assert_int_eq(posix_memalign(&mem, page, whole ? whole : page), 0);
	b->mem = memset(mem, 0, whole ? whole : page);
	b->len = len;
	ck_assert_it_ok(it_lmr_create21(f->pz, b->mem, NULL, len,
					IT_ADDR_MODE_ABSOLUTE, privs,
					IT_LMR_FLAG_NONE, 0, &b->lmr,
					&b->rkey));
}

void it_buf_free(struct it_buf *b)
{
	if (b->lmr)
		ck_assert_it_ok(it_lmr_free(b->lmr));
	free(b->mem);
	memset(b, 0, sizeof(*b));
}

it_lmr_triplet_t it_seg(struct it_buf *b, size_t off, size_t len)
{
	it_lmr_triplet_t t = { .lmr = b->lmr, .length = len };

	t.addr.abs = b->mem + off;
	return t;
}
