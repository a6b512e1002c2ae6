/* SPDX-License-Identifier: MIT */
/*
 * IT-API endpoints: RC creation rules and limits, query, modify, reset,
 * free; shared receive queues; UD endpoints, address handles, datagrams
 * and the UD service request calls.
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#ifdef HAVE_PROV_RXE
#include "tests/testutil_rxe.h"
#endif
#include "tests/suites.h"

static struct it_fix F;

static void setup(void)
{
	it_setup_testprov();
	it_fix_open(&F);
}

static void setup_siw(void)
{
	it_setup_siw();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

#ifdef HAVE_PROV_RXE
/* rxe_lo in a network namespace of the test's own (UDP port 4791). */
static void setup_rxe(void)
{
	rxe_t_netns_setup();
	it_setup_rxe();
	it_fix_open(&F);
}

static void teardown_rxe(void)
{
	teardown();
	rxe_t_netns_teardown();
}
#endif

static it_status_t rc_create(it_ep_attributes_t *a, it_ep_handle_t *ep)
{
	return it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, IT_EP_NO_FLAG, a, ep);
}

/* ------------------------------------------------------------------ */
/* RC endpoints                                                        */
/* ------------------------------------------------------------------ */

START_TEST(rc_create_errors)
{
	struct it_dev_limits lim, *d = &lim;
	it_ia_info_t *info = NULL;
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;
	bool atomics;

	it_dev_limits(&F, d);
	it_ep_attr_default(&F, &a, 16);
	ck_assert_it(it_ep_rc_create(NULL, F.dto, F.dto, F.msg, 0, &a, &ep),
		     IT_ERR_INVALID_PZ);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, 0, NULL, &ep),
		     IT_ERR_FAULT);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, 0, &a, NULL),
		     IT_ERR_FAULT);
	ck_assert_it(it_ep_rc_create(F.pz, F.msg, F.dto, F.msg, 0, &a, &ep),
		     IT_ERR_INVALID_REQ_EVD);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.req, F.msg, 0, &a, &ep),
		     IT_ERR_INVALID_RECV_EVD);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.req, 0, &a, &ep),
		     IT_ERR_INVALID_CONN_EVD);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, NULL, 0, &a, &ep),
		     IT_ERR_INVALID_CONN_EVD);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg,
				     (it_ep_rc_creation_flags_t)0x10, &a, &ep),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, IT_EP_SRQ, &a,
				     &ep),
		     IT_ERR_INVALID_SRQ);

	a.max_request_dtos = d->max_qp_wr + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_REQ_DTO);
	a.max_request_dtos = 0;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_INVALID_EP_ATTR);
	it_ep_attr_default(&F, &a, 16);
	a.max_recv_dtos = d->max_qp_wr + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_RECV_DTO);
	it_ep_attr_default(&F, &a, 16);
	a.max_send_segments = d->max_sge + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_SSEG);
	it_ep_attr_default(&F, &a, 16);
	a.max_recv_segments = d->max_sge + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_RSEG);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.max_rdma_write_segments = d->max_sge + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_RWSEG);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.max_rdma_read_segments = d->max_sge + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_RRSEG);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.rdma_read_ird = d->max_qp_rd_atom + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_IRD);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.rdma_read_ord = d->max_qp_init_rd_atom + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_RESOURCE_ORD);
	it_ep_attr_default(&F, &a, 16);
	a.max_dto_payload_size = (size_t)d->max_msg_size + 1;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_INVALID_EP_ATTR);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.atomics_enable = IT_TRUE;
	/* Refused where the IA has no atomics (it_ia_query). */
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	atomics = info->atomic_support;
	it_ia_info_free(info);
	if (!atomics)
		ck_assert_it(rc_create(&a, &ep), IT_ERR_INVALID_EP_ATTR);
	it_ep_attr_default(&F, &a, 16);
	a.priv_ops_enable = IT_TRUE;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_PRIV_OPS_UNAVAILABLE);
	it_ep_attr_default(&F, &a, 16);
	a.srv.rc.hard_hi_watermark = 4;
	ck_assert_it(rc_create(&a, &ep), IT_ERR_INVALID_WATERMARK);
	ck_assert_ptr_null(ep);
}
END_TEST

START_TEST(rc_query_free)
{
	struct it_dev_limits lim;
	it_ep_attributes_t a;
	it_ep_handle_t ep = NULL;
	it_ep_param_t p;

	it_ep_attr_default(&F, &a, 16);
	a.max_dto_payload_size = 0;
	ck_assert_it_ok(rc_create(&a, &ep));
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_ALL, &p));
	ck_assert_ptr_eq(p.ia, F.ia);
	ck_assert_ptr_eq(p.pz, F.pz);
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_UNCONNECTED);
	ck_assert_int_eq(p.service_type, IT_RC_SERVICE);
	ck_assert_ptr_eq(p.request_sevd, F.dto);
	ck_assert_ptr_eq(p.recv_sevd, F.dto);
	ck_assert_ptr_eq(p.connect_sevd, F.msg);
	/* What was granted, at least what was asked; 0 payload = the
	 * largest message. */
	ck_assert_uint_ge(p.attr.max_request_dtos, 16);
	ck_assert_uint_ge(p.attr.max_recv_dtos, 16);
	ck_assert_uint_eq(p.attr.max_send_segments, 4);
	it_dev_limits(&F, &lim);
	ck_assert_uint_eq(p.attr.max_dto_payload_size, lim.max_msg_size);
	ck_assert(p.attr.srv.rc.rdma_read_enable);
	ck_assert_ptr_null(p.attr.srv.rc.srq);
	ck_assert_uint_eq(p.attr.srv.rc.hard_hi_watermark,
			  IT_HARD_HI_WATERMARK_DISABLE);
	ck_assert_it(it_ep_query(ep, (it_ep_param_mask_t)0x10000000, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_ep_query(ep, IT_EP_PARAM_ALL, NULL), IT_ERR_FAULT);
	/* The EVDs are busy while the endpoint uses them. */
	ck_assert_it(it_evd_free(F.msg), IT_ERR_EVD_BUSY);
	ck_assert_it(it_evd_free(F.dto), IT_ERR_EVD_BUSY);
	ck_assert_it(it_pz_free(F.pz), IT_ERR_PZ_BUSY);
	ck_assert_it_ok(it_ep_free(ep));
	ck_assert_it(it_ep_free(ep), IT_ERR_INVALID_EP);
	ck_assert_it(it_ep_query(ep, IT_EP_PARAM_ALL, &p), IT_ERR_INVALID_EP);
	ck_assert_it_ok(it_evd_free(F.msg));
	F.msg = NULL;
}
END_TEST

START_TEST(rc_modify)
{
	struct it_dev_limits lim, *d = &lim;
	it_ep_handle_t ep = it_ep_new(&F);
	it_ep_attributes_t a = { 0 };
	it_ep_param_t p;

	it_dev_limits(&F, d);
	/* The device's limits (0 on the test provider, which has no RDMA
	 * Read; 128 on siw). */
	a.srv.rc.rdma_read_ird = d->max_qp_rd_atom;
	a.srv.rc.rdma_read_ord = d->max_qp_init_rd_atom / 2;
	a.srv.rc.rdma_write_enable = IT_FALSE;
	ck_assert_it_ok(it_ep_modify(ep,
				     IT_EP_PARAM_MAX_IRD | IT_EP_PARAM_MAX_ORD |
					     IT_EP_PARAM_RDMA_WR_ENABLE,
				     &a));
	ck_assert_it_ok(it_ep_query(ep, IT_EP_PARAM_ALL, &p));
	ck_assert_uint_eq(p.attr.srv.rc.rdma_read_ird, d->max_qp_rd_atom);
	ck_assert_uint_eq(p.attr.srv.rc.rdma_read_ord,
			  d->max_qp_init_rd_atom / 2);
	ck_assert(!p.attr.srv.rc.rdma_write_enable);
	ck_assert(p.attr.srv.rc.rdma_read_enable);
	a.srv.rc.rdma_read_ird = d->max_qp_rd_atom + 1;
	ck_assert_it(it_ep_modify(ep, IT_EP_PARAM_MAX_IRD, &a),
		     IT_ERR_RESOURCE_IRD);
	ck_assert_it(it_ep_modify(ep, IT_EP_PARAM_MAX_SEND_SEG, &a),
		     IT_ERR_INVALID_MASK);
	/* Queue sizes: where they resize (siw, rxe), 0 is no size; elsewhere
	 * the mask is refused. */
	ck_assert_it(it_ep_modify(ep, IT_EP_PARAM_MAX_REQ_DTO, &a),
		     d->resize_qp ?
			     IT_ERR_INVALID_QUEUE_SIZE :
			     IT_ERR_INVALID_MASK);
	ck_assert_it(it_ep_modify(ep, IT_EP_PARAM_MAX_IRD, NULL), IT_ERR_FAULT);
	ck_assert_it_ok(it_ep_reset(ep));	/* unconnected: nothing to do */
	ck_assert_it_ok(it_ep_free(ep));
}
END_TEST

START_TEST(reset_after_disconnect)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	it_ep_attributes_t at = { 0 };
	it_ep_param_t p;
	it_event_t ev;
	uint32_t qpn;

	it_connect_pair(&F, a, b);
	ck_assert_it(it_ep_reset(a), IT_ERR_INVALID_EP_STATE);
	ck_assert_it(it_ep_modify(a, IT_EP_PARAM_MAX_ORD, &at),
		     IT_ERR_INVALID_EP_STATE);
	qpn = it_ep_qp_num(a);
	ck_assert_it_ok(it_ep_disconnect(a, NULL, 0));
	for (int i = 0; i < 2; i++) {
		it_wait_event(F.msg, &ev);
		ck_assert_event(&ev, IT_CM_MSG_CONN_DISCONNECT_EVENT);
	}
	ck_assert_it_ok(it_ep_query(a, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_NONOPERATIONAL);
	ck_assert_it_ok(it_ep_reset(a));
	ck_assert_it_ok(it_ep_query(a, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_UNCONNECTED);
	/* A fresh QP behind the same handle (where its number is known),
	 * which connects again. */
	if (qpn)
		ck_assert_uint_ne(it_ep_qp_num(a), qpn);
	ck_assert_it_ok(it_ep_reset(b));
	it_connect_pair(&F, a, b);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Shared receive queues                                               */
/* ------------------------------------------------------------------ */

START_TEST(srq_lifecycle_and_data)
{
	struct it_dev_limits lim, *d = &lim;
	it_srq_handle_t srq = NULL;
	it_srq_param_t p;
	it_ep_attributes_t at;
	it_ep_handle_t a, b;
	struct it_buf s, r;
	it_lmr_triplet_t t;
	it_event_t ev;

	it_dev_limits(&F, d);
	ck_assert_it(it_srq_create(F.pz, 2, 0, &srq), IT_ERR_INVALID_SRQ_SIZE);
	ck_assert_it(it_srq_create(F.pz, 2, d->max_srq_wr + 1, &srq),
		     IT_ERR_RESOURCE_RECV_DTO);
	ck_assert_it(it_srq_create(F.pz, d->max_srq_sge + 1, 8, &srq),
		     IT_ERR_RESOURCE_RSEG);
	ck_assert_it(it_srq_create(NULL, 2, 8, &srq), IT_ERR_INVALID_PZ);
	ck_assert_it(it_srq_create(F.pz, 2, 8, NULL), IT_ERR_FAULT);
	ck_assert_it_ok(it_srq_create(F.pz, 2, 8, &srq));
	ck_assert_it_ok(it_srq_query(srq, IT_SRQ_PARAM_ALL, &p));
	ck_assert_ptr_eq(p.pz, F.pz);
	ck_assert_uint_eq(p.max_recv_dtos, 8);
	ck_assert_uint_eq(p.max_recv_segs, 2);
	ck_assert_uint_eq(p.low_watermark, 0);
	p.low_watermark = 2;
	ck_assert_it_ok(it_srq_modify(srq, IT_SRQ_PARAM_LOW_WATERMARK, &p));
	ck_assert_it_ok(it_srq_query(srq, IT_SRQ_PARAM_LOW_WATERMARK, &p));
	ck_assert_uint_eq(p.low_watermark, 2);
	p.low_watermark = 8;
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_LOW_WATERMARK, &p),
		     IT_ERR_INVALID_WATERMARK);
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_SEG, &p),
		     IT_ERR_INVALID_MASK);

	/* Two endpoints; b receives through the SRQ. */
	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(rc_create(&at, &a));
	at.srv.rc.srq = srq;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, IT_EP_SRQ,
					&at, &b));
	ck_assert_it(it_srq_free(srq), IT_ERR_SRQ_BUSY);
	it_testprov_pair(a, b);
	it_buf_new(&F, &s, 64, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 64, IT_PRIV_LOCAL);
	t = it_seg(&r, 0, 32);
	ck_assert_it(it_post_recv(b, &t, 1, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_EP);
	ck_assert_it(it_post_recv(srq, &t, 3, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_NUM_SEGMENTS);
	ck_assert_it_ok(it_post_recv(srq, &t, 1, 101, IT_COMPLETION_FLAG));
	t = it_seg(&r, 32, 32);
	ck_assert_it_ok(it_post_recv(srq, &t, 1, 102, IT_COMPLETION_FLAG));
	memcpy(s.mem, "through the SRQ", 16);
	t = it_seg(&s, 0, 16);
	ck_assert_it_ok(it_post_send(a, &t, 1, 7, 0));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
	ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 101);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 16);
	ck_assert_int_eq(memcmp(r.mem, "through the SRQ", 16), 0);
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_srq_free(srq));
	ck_assert_it(it_srq_free(srq), IT_ERR_INVALID_SRQ);
	it_buf_free(&s);
	it_buf_free(&r);
}
END_TEST

/*
 * srq_resizable: an SRQ of 2 receives takes a third only once it has
 * grown to 4; it cannot shrink below what is posted; the receives posted
 * before and after the resize get the peer's messages in order, byte for
 * byte; shrunk again, it takes no more than its new size.
 */
START_TEST(srq_resize)
{
	struct it_dev_limits lim, *d = &lim;
	it_srq_handle_t srq = NULL;
	it_ia_info_t *info = NULL;
	it_ep_attributes_t at;
	it_ep_handle_t a, b;
	struct it_buf s, r;
	it_lmr_triplet_t t;
	it_srq_param_t p;
	it_event_t ev;
	bool resizable;

	it_dev_limits(&F, d);
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	resizable = info->srq_resizable;
	it_ia_info_free(info);
	ck_assert_it_ok(it_srq_create(F.pz, 1, 2, &srq));
	if (!resizable) {
		/* An IA that does not claim it (a verbs device without
		 * IBV_DEVICE_SRQ_RESIZE) refuses the size. */
		p.max_recv_dtos = 4;
		ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &p),
			     IT_ERR_INVALID_MASK);
		ck_assert_it_ok(it_srq_free(srq));
		return;
	}
	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(rc_create(&at, &a));
	at.srv.rc.srq = srq;
	ck_assert_it_ok(it_ep_rc_create(F.pz, F.dto, F.dto, F.msg, IT_EP_SRQ,
					&at, &b));
	it_connect_pair(&F, a, b);
	it_buf_new(&F, &s, 64, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 256, IT_PRIV_LOCAL);
	for (int i = 0; i < 2; i++) {
		t = it_seg(&r, 32 * (size_t)i, 32);
		ck_assert_it_ok(it_post_recv(srq, &t, 1, 10 + (uint64_t)i,
					     IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	}
	t = it_seg(&r, 64, 32);
	ck_assert_it(it_post_recv(srq, &t, 1, 12, IT_COMPLETION_FLAG),
		     IT_ERR_TOO_MANY_POSTS);
	p.max_recv_dtos = 1;
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &p),
		     IT_ERR_INVALID_QUEUE_SIZE);
	p.max_recv_dtos = (size_t)d->max_srq_wr + 1;
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &p),
		     IT_ERR_RESOURCE_QUEUE_SIZE);
	p.max_recv_dtos = 4;
	p.low_watermark = 1;
	ck_assert_it_ok(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO |
					   IT_SRQ_PARAM_LOW_WATERMARK, &p));
	memset(&p, 0, sizeof(p));
	ck_assert_it_ok(it_srq_query(srq, IT_SRQ_PARAM_ALL, &p));
	ck_assert_uint_eq(p.max_recv_dtos, 4);
	ck_assert_uint_eq(p.low_watermark, 1);
	for (int i = 2; i < 4; i++) {
		t = it_seg(&r, 32 * (size_t)i, 32);
		ck_assert_it_ok(it_post_recv(srq, &t, 1, 10 + (uint64_t)i,
					     IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	}
	t = it_seg(&r, 128, 32);
	ck_assert_it(it_post_recv(srq, &t, 1, 14, IT_COMPLETION_FLAG),
		     IT_ERR_TOO_MANY_POSTS);
	for (int i = 0; i < 4; i++) {
		snprintf((char *)s.mem + 16 * i, 16, "message %d", i);
		t = it_seg(&s, 16 * (size_t)i, 16);
		ck_assert_it_ok(it_post_send(a, &t, 1, 20 + (uint64_t)i, 0));
	}
	for (int i = 0; i < 4; i++) {
		do {
			it_wait_event(F.dto, &ev);
		} while (ev.event_number != IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
		ck_assert_uint_eq(ev.dto_cmpl.cookie, 10 + (uint64_t)i);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 16);
		ck_assert_int_eq(memcmp(r.mem + 32 * i, s.mem + 16 * i, 16),
				 0);
	}
	/* Shrunk to 1 with nothing posted: one receive, not two. */
	p.max_recv_dtos = 1;
	p.low_watermark = 0;
	ck_assert_it_ok(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO |
					   IT_SRQ_PARAM_LOW_WATERMARK, &p));
	t = it_seg(&r, 0, 32);
	ck_assert_it_ok(it_post_recv(srq, &t, 1, 30, IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	ck_assert_it(it_post_recv(srq, &t, 1, 31, IT_COMPLETION_FLAG),
		     IT_ERR_TOO_MANY_POSTS);
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_srq_free(srq));
	it_buf_free(&s);
	it_buf_free(&r);
}
END_TEST

/*
 * ep_work_queues_resizable: an endpoint's queues resize before and after
 * it connects. b's receive queue of 2 takes a third receive only once it
 * has grown to 4, cannot shrink below what is posted; the four messages
 * land in order. a's send queue shrunk to 2 while unconnected, then grown
 * to 8 while connected, carries them.
 */
START_TEST(ep_resize)
{
	struct it_dev_limits lim, *d = &lim;
	it_ia_info_t *info = NULL;
	it_ep_attributes_t at, m = { 0 };
	it_ep_handle_t a, b;
	struct it_buf s, r;
	it_lmr_triplet_t t;
	it_ep_param_t p;
	it_event_t ev;
	int got = 0;
	bool resizable;

	it_dev_limits(&F, d);
	ck_assert_it_ok(it_ia_query(F.ia, &info));
	resizable = info->ep_work_queues_resizable;
	it_ia_info_free(info);
	it_ep_attr_default(&F, &at, 16);
	ck_assert_it_ok(rc_create(&at, &a));
	at.max_recv_dtos = 2;
	ck_assert_it_ok(rc_create(&at, &b));
	if (!resizable) {
		/* An IA that does not claim it (verbs devices: no verbs
		 * call resizes a QP's queues) refuses the sizes, before
		 * and after connecting. */
		m.max_request_dtos = 2;
		ck_assert_it(it_ep_modify(a, IT_EP_PARAM_MAX_REQ_DTO, &m),
			     IT_ERR_INVALID_MASK);
		it_connect_pair(&F, a, b);
		m.max_recv_dtos = 4;
		ck_assert_it(it_ep_modify(b, IT_EP_PARAM_MAX_RECV_DTO, &m),
			     IT_ERR_INVALID_MASK);
		ck_assert_it_ok(it_ep_free(b));
		ck_assert_it_ok(it_ep_free(a));
		return;
	}
	m.max_request_dtos = 2;
	ck_assert_it_ok(it_ep_modify(a, IT_EP_PARAM_MAX_REQ_DTO, &m));
	m.max_request_dtos = (size_t)d->max_qp_wr + 1;
	ck_assert_it(it_ep_modify(a, IT_EP_PARAM_MAX_REQ_DTO, &m),
		     IT_ERR_RESOURCE_REQ_DTO);
	ck_assert_it_ok(it_ep_query(a, IT_EP_PARAM_ALL, &p));
	ck_assert_uint_eq(p.attr.max_request_dtos, 2);
	it_connect_pair(&F, a, b);
	it_buf_new(&F, &s, 64, IT_PRIV_LOCAL);
	it_buf_new(&F, &r, 256, IT_PRIV_LOCAL);
	for (int i = 0; i < 2; i++) {
		t = it_seg(&r, 32 * (size_t)i, 32);
		ck_assert_it_ok(it_post_recv(b, &t, 1, 10 + (uint64_t)i,
					     IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	}
	t = it_seg(&r, 64, 32);
	ck_assert_it(it_post_recv(b, &t, 1, 12, IT_COMPLETION_FLAG),
		     IT_ERR_TOO_MANY_POSTS);
	m.max_recv_dtos = 1;
	ck_assert_it(it_ep_modify(b, IT_EP_PARAM_MAX_RECV_DTO, &m),
		     IT_ERR_INVALID_QUEUE_SIZE);
	m.max_recv_dtos = 4;
	ck_assert_it_ok(it_ep_modify(b, IT_EP_PARAM_MAX_RECV_DTO, &m));
	ck_assert_it_ok(it_ep_query(b, IT_EP_PARAM_MAX_RECV_DTO, &p));
	ck_assert_uint_eq(p.attr.max_recv_dtos, 4);
	for (int i = 2; i < 4; i++) {
		t = it_seg(&r, 32 * (size_t)i, 32);
		ck_assert_it_ok(it_post_recv(b, &t, 1, 10 + (uint64_t)i,
					     IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	}
	t = it_seg(&r, 128, 32);
	ck_assert_it(it_post_recv(b, &t, 1, 14, IT_COMPLETION_FLAG),
		     IT_ERR_TOO_MANY_POSTS);
	/* a's send queue, empty now, grows while connected. */
	m.max_request_dtos = 8;
	ck_assert_it_ok(it_ep_modify(a, IT_EP_PARAM_MAX_REQ_DTO, &m));
	for (int i = 0; i < 4; i++) {
		snprintf((char *)s.mem + 16 * i, 16, "message %d", i);
		t = it_seg(&s, 16 * (size_t)i, 16);
		ck_assert_it_ok(it_post_send(a, &t, 1, 20 + (uint64_t)i,
					     IT_COMPLETION_FLAG |
					     IT_NOTIFY_FLAG));
	}
	while (got < 4) {
		it_wait_event(F.dto, &ev);
		if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
			ck_assert_int_eq(ev.dto_cmpl.dto_status,
					 IT_DTO_SUCCESS);
			continue;
		}
		ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
		ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
		ck_assert_uint_eq(ev.dto_cmpl.cookie, 10 + (uint64_t)got);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 16);
		ck_assert_int_eq(memcmp(r.mem + 32 * got, s.mem + 16 * got,
					16), 0);
		got++;
	}
	ck_assert_it_ok(it_ep_free(b));
	ck_assert_it_ok(it_ep_free(a));
	it_buf_free(&s);
	it_buf_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* UD                                                                  */
/* ------------------------------------------------------------------ */

static void ud_attr(it_ep_attributes_t *a)
{
	memset(a, 0, sizeof(*a));
	a->max_request_dtos = 8;
	a->max_recv_dtos = 8;
	a->max_send_segments = 2;
	a->max_recv_segments = 2;
	a->srv.ud.ep_info.ud_ep_key = 0x11111111;
}

START_TEST(ud_endpoints)
{
	it_ep_attributes_t a;
	it_ep_handle_t ud = NULL, rc = it_ep_new(&F);
	it_ep_param_t p;
	it_path_t path = { 0 };
	it_addr_handle_t ah = NULL;
	it_addr_param_t ap;
	it_dg_remote_ep_addr_t dst = { .type = IT_DG_TYPE_IB_UD };
	struct it_buf b;
	it_lmr_triplet_t t;
	it_event_t ev;
	it_net_addr_t na = { .addr_type = IT_IPV4 };

	ud_attr(&a);
	ck_assert_it(it_ep_ud_create(F.pz, F.dto, F.dto, &a, 1, &ud),
		     IT_ERR_INVALID_SPIGOT);
	ck_assert_it(it_ep_ud_create(F.pz, F.msg, F.dto, &a, 0, &ud),
		     IT_ERR_INVALID_REQ_EVD);
	ck_assert_it(it_ep_ud_create(F.pz, F.dto, F.dto, NULL, 0, &ud),
		     IT_ERR_FAULT);
	ck_assert_it_ok(it_ep_ud_create(F.pz, F.dto, F.dto, &a, 0, &ud));
	ck_assert_it_ok(it_ep_query(ud, IT_EP_PARAM_ALL, &p));
	ck_assert_int_eq(p.service_type, IT_UD_SERVICE);
	ck_assert_int_eq(p.ep_state.ud, IT_EP_STATE_UD_OPERATIONAL);
	ck_assert_uint_eq(p.attr.srv.ud.ep_info.ud_ep_id,
			  it_ep_qp_num(ud));
	ck_assert_uint_eq(p.attr.srv.ud.ep_info.ud_ep_key, 0x11111111);

	/* Address handles from a RoCE path (GIDs are IP addresses). */
	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	it_convert_net_addr(&na, IT_IB_GID, &na);
	path.remote.ib.remote_port_gid = na.addr.gid;
	ck_assert_it(it_address_handle_create(F.pz, &path,
					      (it_ah_flags_t)4, &ah),
		     IT_ERR_INVALID_FLAGS);
	ck_assert_it(it_address_handle_create(F.pz, NULL, 0, &ah),
		     IT_ERR_FAULT);
	path.spigot_id = 3;
	ck_assert_it(it_address_handle_create(F.pz, &path, 0, &ah),
		     IT_ERR_INVALID_SPIGOT);
	path.spigot_id = 0;
	ck_assert_it_ok(it_address_handle_create(F.pz, &path,
						 IT_AH_PATH_COMPLETE, &ah));
	ck_assert_it_ok(it_address_handle_query(ah, IT_ADDR_PARAM_ALL, &ap));
	ck_assert_ptr_eq(ap.pz, F.pz);
	ck_assert_int_eq(memcmp(&ap.path.remote.ib.remote_port_gid,
				&na.addr.gid, 16),
			 0);
	path.remote.ib.hop_limit = 7;
	ap.path = path;
	ck_assert_it_ok(it_address_handle_modify(ah, IT_ADDR_PARAM_PATH, &ap));
	ck_assert_it_ok(it_address_handle_query(ah, IT_ADDR_PARAM_PATH, &ap));
	ck_assert_uint_eq(ap.path.remote.ib.hop_limit, 7);
	ck_assert_it(it_address_handle_modify(ah, IT_ADDR_PARAM_PZ, &ap),
		     IT_ERR_INVALID_MASK);

	/* Datagrams: the right calls on the right endpoints. */
	it_buf_new(&F, &b, 8192, IT_PRIV_LOCAL);
	t = it_seg(&b, 0, 64);
	ck_assert_it(it_post_recv(ud, &t, 1, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_EP_TYPE);
	ck_assert_it(it_post_recvfrom(rc, &t, 1, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_EP_TYPE);
	ck_assert_it(it_post_send(ud, &t, 1, 1, IT_COMPLETION_FLAG),
		     IT_ERR_INVALID_EP_TYPE);
	ck_assert_it(it_post_sendto(rc, &t, 1, 1, IT_COMPLETION_FLAG, &dst),
		     IT_ERR_INVALID_EP_TYPE);
	ck_assert_it_ok(it_post_recvfrom(ud, &t, 1, 1, IT_COMPLETION_FLAG));
	dst.addr.ud.addr = (it_addr_handle_t)&dst;
	ck_assert_it(it_post_sendto(ud, &t, 1, 2, IT_COMPLETION_FLAG, &dst),
		     IT_ERR_INVALID_AH);
	dst.addr.ud.addr = ah;
	dst.addr.ud.ep_info = p.attr.srv.ud.ep_info;
	/* One datagram is one packet of the path MTU (4096 here). */
	t = it_seg(&b, 0, 4097);
	ck_assert_it(it_post_sendto(ud, &t, 1, 2, IT_COMPLETION_FLAG, &dst),
		     IT_ERR_PAYLOAD_SIZE);
	t = it_seg(&b, 0, 100);
	ck_assert_it_ok(it_post_sendto(ud, &t, 1, 3,
				       IT_COMPLETION_FLAG | IT_NOTIFY_FLAG,
				       &dst));
	it_wait_event(F.dto, &ev);
	ck_assert_event(&ev, IT_DTO_SEND_CMPL_EVENT);
	ck_assert_uint_eq(ev.dto_cmpl.cookie, 3);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_it_ok(it_address_handle_free(ah));
	ck_assert_it(it_address_handle_free(ah), IT_ERR_INVALID_AH);
	ck_assert_it_ok(it_ep_free(ud));
	ck_assert_it_ok(it_ep_free(rc));
	it_buf_free(&b);
}
END_TEST

START_TEST(ud_service_requests)
{
	it_conn_qual_t q = { .type = IT_IB_SERVICEID };
	it_path_t path = { 0 };
	it_ud_svc_req_handle_t h = NULL;
	it_ud_svc_req_param_t p;
	it_remote_ep_info_t info = { 0 };

	/* Service ID 0 names nothing. */
	ck_assert_it(it_ud_service_request_handle_create(&q, F.msg, &path,
							  NULL, 0, &h),
		     IT_ERR_INVALID_CONN_QUAL);
	/* The test provider has no GSI QP, so no InfiniBand CM (SIDR). */
	q.conn_qual.serviceid = htobe64(0x42);
	ck_assert_it(it_ud_service_request_handle_create(&q, F.msg, &path,
							  NULL, 0, &h),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(it_ud_service_request_handle_create(&q, F.dto, &path,
							  NULL, 0, &h),
		     IT_ERR_INVALID_EVD_TYPE);
	q.type = (it_conn_qual_type_t)0x40;
	ck_assert_it(it_ud_service_request_handle_create(&q, F.msg, &path,
							  NULL, 0, &h),
		     IT_ERR_INVALID_CONN_QUAL);
	ck_assert_it(it_ud_service_request_handle_create(NULL, F.msg, &path,
							  NULL, 0, &h),
		     IT_ERR_FAULT);
	ck_assert_ptr_null(h);
	ck_assert_it(it_ud_service_request(h), IT_ERR_INVALID_UD_SVC);
	ck_assert_it(it_ud_service_request_handle_query(h, IT_UD_PARAM_ALL,
							 &p),
		     IT_ERR_INVALID_UD_SVC);
	ck_assert_it(it_ud_service_request_handle_free(h),
		     IT_ERR_INVALID_UD_SVC);
	ck_assert_it(it_ud_service_reply(1, (it_ud_svc_req_status_t)9, info,
					 NULL, 0),
		     IT_ERR_INVALID_UD_STATUS);
	ck_assert_it(it_ud_service_reply(1, IT_UD_SVC_EP_INFO_VALID, info,
					 NULL, 0),
		     IT_ERR_INVALID_UD_SVC_REQ_ID);
}
END_TEST

START_TEST(ud_not_on_iwarp)
{
	it_ep_attributes_t a;
	it_ep_handle_t ud = NULL;
	it_path_t path = { 0 };
	it_addr_handle_t ah = NULL;

	ud_attr(&a);
	ck_assert_it(it_ep_ud_create(F.pz, F.dto, F.dto, &a, 0, &ud),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(it_address_handle_create(F.pz, &path, 0, &ah),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_ptr_null(ud);
	ck_assert_ptr_null(ah);
}
END_TEST

Suite *suite_itapi_ep(void)
{
	Suite *s = suite_create("itapi-ep");
	TCase *tc = tcase_create("testprov");
	TCase *siw = tcase_create("siw");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rc_create_errors);
	tcase_add_test(tc, rc_query_free);
	tcase_add_test(tc, rc_modify);
	tcase_add_test(tc, srq_lifecycle_and_data);
	tcase_add_test(tc, ud_endpoints);
	tcase_add_test(tc, ud_service_requests);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(siw, setup_siw, teardown);
	tcase_set_timeout(siw, 60);
	tcase_add_test(siw, rc_create_errors);
	tcase_add_test(siw, rc_modify);
	tcase_add_test(siw, reset_after_disconnect);
	tcase_add_test(siw, srq_resize);
	tcase_add_test(siw, ep_resize);
	tcase_add_test(siw, ud_not_on_iwarp);
	suite_add_tcase(s, siw);

#ifdef HAVE_PROV_RXE
	/* The queues resize on soft-RoCE too (RNICPI_DEV_CAP_RESIZE_QP:
	 * sizes checked here; rxe-loopback test_rc_resize re-lays queues
	 * holding requests). */
	TCase *rxe = tcase_create("rxe");

	tcase_add_checked_fixture(rxe, setup_rxe, teardown_rxe);
	tcase_set_timeout(rxe, 60);
	tcase_add_test(rxe, rc_modify);
	tcase_add_test(rxe, srq_resize);
	tcase_add_test(rxe, ep_resize);
	suite_add_tcase(s, rxe);
#endif
	return s;
}

/*
 * The conformance runner's itapi-ep: the cases of the "siw" and "rxe" test
 * cases on the device under test (it_setup_siw names it there), UD's
 * refusal on an iWARP one. Left out: srq_lifecycle_and_data (its
 * endpoints are paired through the test provider's QP numbers:
 * it_testprov_pair), ud_endpoints and ud_service_requests (the test
 * provider's path MTU and its lack of a GSI QP, asserted; UD over a
 * device: itapi-ud-rxe, the lab's it-verbs-ud).
 */
Suite *suite_itapi_ep_device(bool iwarp)
{
	Suite *s = suite_create("itapi-ep");
	TCase *tc = tcase_create("device");

	tcase_add_checked_fixture(tc, setup_siw, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rc_create_errors);
	tcase_add_test(tc, rc_query_free);
	tcase_add_test(tc, rc_modify);
	tcase_add_test(tc, reset_after_disconnect);
	tcase_add_test(tc, srq_resize);
	tcase_add_test(tc, ep_resize);
	if (iwarp)
		tcase_add_test(tc, ud_not_on_iwarp);
	suite_add_tcase(s, tc);
	return s;
}
