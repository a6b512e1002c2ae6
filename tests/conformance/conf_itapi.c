/* SPDX-License-Identifier: MIT */
/*
 * conf_itapi.c - the helpers of tests/testutil_itapi.h for the
 * conformance runner, on it_api.h alone: the tree's IT-API suites that
 * touch nothing but IT-API (itapi-cm and its socket conversion cases, in
 * check_itapi_cm.c and check_itapi_cm_sockets.c) run against the device
 * named on the command line instead of siw_lo / rxe_lo.
 *
 * The suites' environments (it_setup_siw, it_setup_rxe) only name that
 * device here: the provider path, device list and provider options stay
 * what the user set. "RoCE" (it_env_is_rxe) is any IA whose transport is
 * not iWARP, as the suites branch on the connection manager's kind.
 *
 * A second -d (conf_itapi_init's @peer): each fixture opens a second IA
 * there (it_fix_peer); the cases that make their passive endpoint with
 * it_ep_new_peer connect DEVICE to PEER_DEVICE, the others keep both
 * ends on DEVICE (it_connect_pair looks at which IA the endpoint is on).
 */
#ifndef ITAPI_ENABLE_V21_BINDINGS	/* (the build sets it too) */
#define ITAPI_ENABLE_V21_BINDINGS
#endif
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_ext.h"
#include "tests/conformance/conf_itapi.h"
#include "tests/testutil_itapi.h"
#ifdef HAVE_PROV_RXE
#include "tests/testutil_rxe.h"
#endif

const char *it_dev_name;
static const char *conf_dev, *conf_peer;
static struct in_addr conf_addr;
/* The peer side of the one fixture a case opens (-d given twice). */
static struct it_fix peer_fix;
static struct it_fix *peer_owner;
/* The device's limits as found before the cases run (conf_probe). */
static struct it_dev_limits conf_limits;

/*
 * Limits IT-API does not name, found as an application would: endpoints
 * are created with one attribute raised, and the largest value taken is
 * the limit (the library refuses a value above the device's before the
 * device sees it). Queue depths (and a DTO EVD's) are not searched so: the search would
 * create queues of the device's largest size (a million entries on some),
 * and the cases use them only to be refused one above; a count no device
 * has stands in for them.
 */
enum probe_attr { PROBE_IRD, PROBE_ORD, PROBE_SGE };

static bool probe_create(it_pz_handle_t pz, it_evd_handle_t dto,
			 it_evd_handle_t msg, enum probe_attr what,
			 uint32_t v)
{
	it_ep_attributes_t a;
	it_ep_handle_t ep;

	memset(&a, 0, sizeof(a));
	a.max_request_dtos = a.max_recv_dtos = 4;
	a.max_send_segments = a.max_recv_segments = 1;
	a.srv.rc.rdma_read_enable = a.srv.rc.rdma_write_enable = IT_TRUE;
	a.srv.rc.max_rdma_read_segments = 1;
	a.srv.rc.max_rdma_write_segments = 1;
	a.srv.rc.hard_hi_watermark = IT_HARD_HI_WATERMARK_DISABLE;
	switch (what) {
	case PROBE_IRD: a.srv.rc.rdma_read_ird = v; break;
	case PROBE_ORD: a.srv.rc.rdma_read_ord = v; break;
	case PROBE_SGE: a.max_send_segments = v; break;
	}
	if (it_ep_rc_create(pz, dto, dto, msg, IT_EP_NO_FLAG, &a, &ep) !=
	    IT_SUCCESS)
		return false;
	it_ep_free(ep);
	return true;
}

/* The largest value in [@lo, 65535] that probe_create takes (@lo when
 * none above it). */
static uint32_t probe_max(it_pz_handle_t pz, it_evd_handle_t dto,
			  it_evd_handle_t msg, enum probe_attr what,
			  uint32_t lo)
{
	uint32_t hi = 65536;	/* refused, taken as so */

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (probe_create(pz, dto, msg, what, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void conf_probe(const char *device, struct it_dev_limits *l)
{
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto, msg;
	it_ia_info_t *info = NULL;

	memset(l, 0, sizeof(*l));
	l->max_qp_wr = l->max_srq_wr = l->max_srq_sge = 1u << 30;
	l->max_cqe = 1u << 30;
	if (it_ia_create(device, 2, 1, &ia) != IT_SUCCESS)
		return;
	if (it_ia_query(ia, &info) == IT_SUCCESS) {
		if (info->num_spigots)
			l->max_msg_size = info->spigot_info[0].max_rc_send_len;
		l->resize_qp = info->ep_work_queues_resizable;
		it_ia_info_free(info);
	}
	if (it_pz_create(ia, &pz) == IT_SUCCESS &&
	    it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 64, 0, NULL, &dto,
			  NULL) == IT_SUCCESS &&
	    it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, 0, 64, 0, NULL, &msg,
			  NULL) == IT_SUCCESS) {
		l->max_qp_rd_atom = probe_max(pz, dto, msg, PROBE_IRD, 0);
		l->max_qp_init_rd_atom = probe_max(pz, dto, msg, PROBE_ORD, 0);
		l->max_sge = probe_max(pz, dto, msg, PROBE_SGE, 1);
	}
	it_ia_free(ia);
}

void conf_itapi_init(const char *device, const char *peer,
		     struct in_addr addr)
{
	conf_dev = device;
	conf_peer = peer;
	conf_addr = addr;
	it_dev_name = device;
	/* The suites' time-out cases assume a short set-up bound; the
	 * connection manager's own (not the provider's) unless set. */
	g_setenv("HOSTRDMA_CM_TIMEOUT_MS", "2000", FALSE);
	conf_probe(device, &conf_limits);
}

bool conf_itapi_has_ud(const char *device)
{
	it_ia_handle_t ia;
	it_ia_info_t *info = NULL;
	bool ud = false;

	if (it_ia_create(device, 2, 1, &ia) != IT_SUCCESS)
		return false;
	if (it_ia_query(ia, &info) == IT_SUCCESS) {
		ud = info->supported_service_types & IT_UD_SERVICE;
		it_ia_info_free(info);
	}
	it_ia_free(ia);
	return ud;
}

bool conf_itapi_has_imm(const char *device)
{
	it_ia_handle_t ia;
	bool imm;

	if (it_ia_create(device, 2, 1, &ia) != IT_SUCCESS)
		return false;
	imm = hostrdma_ia_imm_data_size(ia) > 0;
	it_ia_free(ia);
	return imm;
}

bool conf_itapi_has_windows(const char *device)
{
	it_ia_handle_t ia;
	it_ia_info_t *info = NULL;
	bool both = false;

	if (it_ia_create(device, 2, 1, &ia) != IT_SUCCESS)
		return false;
	if (it_ia_query(ia, &info) == IT_SUCCESS) {
		both = (info->rmr_types_supported & IT_RMR_TYPE_NARROW) &&
		       (info->rmr_types_supported & IT_RMR_TYPE_WIDE);
		it_ia_info_free(info);
	}
	it_ia_free(ia);
	return both;
}

/* it_ia_query of @device: @iwarp, @atomics (false when it does not
 * open). */
static void ia_kind(const char *device, bool *iwarp, bool *atomics)
{
	it_ia_handle_t ia;
	it_ia_info_t *info = NULL;

	*iwarp = *atomics = false;
	if (it_ia_create(device, 2, 1, &ia) != IT_SUCCESS)
		return;
	if (it_ia_query(ia, &info) == IT_SUCCESS) {
		*iwarp = info->transport_type == IT_IWARP_TCP_TRANSPORT;
		*atomics = info->atomic_support != IT_FALSE;
		it_ia_info_free(info);
	}
	it_ia_free(ia);
}

bool conf_itapi_is_iwarp(const char *device)
{
	bool iwarp, atomics;

	ia_kind(device, &iwarp, &atomics);
	return iwarp;
}

bool conf_itapi_has_atomics(const char *device)
{
	bool iwarp, atomics;

	ia_kind(device, &iwarp, &atomics);
	return atomics;
}

/* Names as numbers: the library's name tables are not its API. */
const char *itapi_status_name(it_status_t st)
{
	static __thread char buf[4][32];
	static __thread unsigned int n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "status %d", (int)st);
	return b;
}

const char *itapi_event_name(it_event_type_t ev)
{
	static __thread char buf[4][32];
	static __thread unsigned int n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "event 0x%x", (unsigned int)ev);
	return b;
}

void it_setup_siw(void)
{
	it_dev_name = conf_dev;
}

void it_setup_rxe(void)
{
	it_dev_name = conf_dev;
}

void it_setup_testprov(void)
{
	it_dev_name = conf_dev;
}

bool it_env_is_rxe(void)
{
	return !conf_itapi_is_iwarp(it_dev_name);
}

void it_teardown(void)
{
}

static void fix_open_on(struct it_fix *f, const char *device)
{
	memset(f, 0, sizeof(*f));
	ck_assert_msg(it_ia_create(device, 2, 1, &f->ia) == IT_SUCCESS,
		      "it_ia_create(%s) failed", device);
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

/* With a peer device, the case's passive endpoints go to an IA of their
 * own there: @f is DEVICE's side, peer_fix PEER_DEVICE's. */
void it_fix_open(struct it_fix *f)
{
	fix_open_on(f, it_dev_name);
	peer_owner = NULL;
	if (conf_peer) {
		fix_open_on(&peer_fix, conf_peer);
		peer_owner = f;
	}
}

struct it_fix *it_fix_peer(struct it_fix *f)
{
	return f == peer_owner ? &peer_fix : f;
}

it_ep_handle_t it_ep_new_peer(struct it_fix *f)
{
	return it_ep_new(it_fix_peer(f));
}

void it_fix_close(struct it_fix *f)
{
	if (f == peer_owner) {
		if (peer_fix.ia)
			ck_assert_it_ok(it_ia_free(peer_fix.ia));
		memset(&peer_fix, 0, sizeof(peer_fix));
		peer_owner = NULL;
	}
	if (f->ia)
		ck_assert_it_ok(it_ia_free(f->ia));
	memset(f, 0, sizeof(*f));
}

/*
 * The RDMA Read segments an endpoint may take on @f's IA: 4 where the IA
 * takes them, else 1 (the kernel's siw takes one: max_sge_rd). IT-API
 * has no query for it, so an endpoint is tried, as an application would:
 * IT_ERR_RESOURCE_RRSEG says the IA wants fewer.
 */
static size_t read_segments(struct it_fix *f, const it_ep_attributes_t *a)
{
	static __thread size_t known;
	it_ep_attributes_t t = *a;
	it_ep_handle_t ep;
	it_status_t st;

	if (known)
		return known;
	t.srv.rc.max_rdma_read_segments = 4;
	st = it_ep_rc_create(f->pz, f->dto, f->dto, f->msg, IT_EP_NO_FLAG, &t,
			     &ep);
	if (st == IT_SUCCESS) {
		it_ep_free(ep);
		known = 4;
	} else if (st == IT_ERR_RESOURCE_RRSEG) {
		known = 1;
	} else {
		return 4;	/* another failure: the case itself tells */
	}
	return known;
}

void it_ep_attr_default(struct it_fix *f, it_ep_attributes_t *a, size_t dtos)
{
	it_ia_info_t *info = NULL;
	bool reads;

	/* IRD/ORD 4 where the IA has them (it_ia_query), else 0. */
	ck_assert_it_ok(it_ia_query(f->ia, &info));
	reads = info->ird_ord_ia_support;
	it_ia_info_free(info);
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
	a->srv.rc.max_rdma_read_segments = read_segments(f, a);
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

/* The suites' "loopback" is the address given with -a. */
void it_loopback_path(struct it_fix *f, it_path_t *path)
{
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	size_t n = 1, total = 0;

	na.addr.ipv4 = conf_addr;
	ck_assert_it_ok(it_get_pathinfo(f->ia, 0, &na, &n, &total, path));
	ck_assert_uint_eq(n, 1);
}

uint32_t it_loopback_ipv4(void)
{
	return conf_addr.s_addr;
}

bool it_env_ird_ord_suppressible(void)
{
	it_ia_handle_t ia;
	it_ia_info_t *info = NULL;
	bool can = false;

	if (it_ia_create(it_dev_name, 2, 1, &ia) != IT_SUCCESS)
		return false;
	if (it_ia_query(ia, &info) == IT_SUCCESS) {
		can = info->ird_ord_suppressible != IT_FALSE;
		it_ia_info_free(info);
	}
	it_ia_free(ia);
	return can;
}

void it_connect_pair(struct it_fix *f, it_ep_handle_t a, it_ep_handle_t b)
{
	struct it_fix *p = it_fix_peer(f);
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	it_listen_handle_t l;
	it_ep_param_t bp;
	it_event_t ev;
	it_path_t path;
	int got = 0;

	/* A case not written for two sides made @b on @f: both ends there,
	 * as in the tree. */
	ck_assert_it_ok(it_ep_query(b, IT_EP_PARAM_IA, &bp));
	if (bp.ia == f->ia)
		p = f;
	ck_assert_it_ok(it_listen_create(p->ia, 0, p->req, IT_LISTEN_NO_FLAG,
					 &q, &l));
	it_loopback_path(f, &path);
	ck_assert_it_ok(it_ep_connect(a, &path, NULL, &q,
				      IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
	it_wait_event(p->req, &ev);
	ck_assert_event(&ev, IT_CM_REQ_CONN_REQUEST_EVENT);
	ck_assert_it_ok(it_ep_accept(b, ev.conn_req.cn_est_id, NULL, 0));
	/* Each side's event on its own EVD (one EVD without a peer). */
	while (got < 2) {
		it_wait_event(got && p != f ? p->msg : f->msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_ESTABLISHED_EVENT);
		if (p != f)
			ck_assert_ptr_eq(ev.conn.ep, got ? b : a);
		got++;
	}
	ck_assert_it_ok(it_listen_free(l));
}

void it_testprov_pair(it_ep_handle_t a, it_ep_handle_t b)
{
	(void)a;
	(void)b;
	ck_abort_msg("it_testprov_pair reaches into the library; not in the conformance runner");
}

void it_dev_limits(struct it_fix *f, struct it_dev_limits *l)
{
	(void)f;
	*l = conf_limits;
}

uint32_t it_ep_qp_num(it_ep_handle_t ep)
{
	it_ep_param_t p;

	/* A UD endpoint's is its ud_ep_id; an RC one's IT-API does not
	 * show. */
	if (it_ep_query(ep, IT_EP_PARAM_ALL, &p) == IT_SUCCESS &&
	    p.service_type == IT_UD_SERVICE)
		return p.attr.srv.ud.ep_info.ud_ep_id;
	return 0;
}

/* A second waiter is refused while one waits (IT_ERR_WAITER_LIMIT); the
 * cases call this with @evd empty, so the probe takes nothing. */
void it_evd_until_waiting(it_evd_handle_t evd)
{
	it_event_t ev;
	size_t nmore;

	while (it_evd_wait(evd, 0, &ev, &nmore) != IT_ERR_WAITER_LIMIT)
		g_usleep(1000);
}

it_status_t it_evd_post_internal(it_evd_handle_t evd, it_event_type_t type)
{
	(void)evd;
	(void)type;
	ck_abort_msg("it_evd_post_internal reaches into the library; not in the conformance runner");
	return IT_ERR_OP_NOT_SUPPORTED;
}

void it_evd_pump(it_evd_handle_t evd)
{
	(void)evd;
	ck_abort_msg("it_evd_pump reaches into the library; not in the conformance runner");
}

#ifdef HAVE_PROV_RXE
/* The tree's soft-RoCE cases run in a network namespace of their own
 * (UDP port 4791 is one process's); the runner's device is where the
 * user has it. */
void rxe_t_netns_setup(void)
{
}

void rxe_t_netns_teardown(void)
{
}
#endif

void it_buf_new(struct it_fix *f, struct it_buf *b, size_t len,
		it_mem_priv_t privs)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t whole = (len + page - 1) / page * page;
	void *mem = NULL;

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
