/* SPDX-License-Identifier: MIT */
/*
 * IT-API interfaces, IAs, PZs, paths, handles and utilities; the status
 * and DTO mapping tables.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itapi/itapi_priv.h"
#include "tests/testutil_itapi.h"
#include "tests/testutil_ual.h"
#include "tests/suites.h"

/* ------------------------------------------------------------------ */
/* Interfaces and IAs                                                  */
/* ------------------------------------------------------------------ */

START_TEST(interface_list)
{
	it_interface_t ifs[4];
	size_t n = 4, total = 99;

	it_interface_list(ifs, &n, &total);
	ck_assert_uint_eq(total, 1);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ifs[0].name, it_dev_name);
	ck_assert_uint_eq(ifs[0].major_version, 2);
	ck_assert_uint_eq(ifs[0].minor_version, 1);
	ck_assert_int_eq(ifs[0].transport_type,
			 strcmp(it_dev_name, "siw_lo") ?
				 IT_IB_TRANSPORT :
				 IT_IWARP_TCP_TRANSPORT);
	/* No room: only the total. */
	n = 0;
	total = 0;
	it_interface_list(NULL, &n, &total);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(total, 1);
}
END_TEST

START_TEST(ia_create_errors)
{
	it_ia_handle_t ia = NULL;

	ck_assert_it(it_ia_create(NULL, 2, 1, &ia), IT_ERR_INVALID_NAME);
	ck_assert_it(it_ia_create("", 2, 1, &ia), IT_ERR_INVALID_NAME);
	ck_assert_it(it_ia_create("nosuch_dev", 2, 1, &ia),
		     IT_ERR_INVALID_NAME);
	ck_assert_it(it_ia_create(it_dev_name, 3, 0, &ia),
		     IT_ERR_INVALID_MAJOR_VERSION);
	ck_assert_it(it_ia_create(it_dev_name, 0, 0, &ia),
		     IT_ERR_INVALID_MAJOR_VERSION);
	ck_assert_it(it_ia_create(it_dev_name, 2, 2, &ia),
		     IT_ERR_INVALID_MINOR_VERSION);
	ck_assert_it(it_ia_create(it_dev_name, 1, 1, &ia),
		     IT_ERR_INVALID_MINOR_VERSION);
	ck_assert_it(it_ia_create(it_dev_name, 2, 1, NULL), IT_ERR_FAULT);
	ck_assert_ptr_null(ia);
	/* 1.0 and 2.0 are contained in 2.1. */
	ck_assert_it_ok(it_ia_create(it_dev_name, 1, 0, &ia));
	ck_assert_it_ok(it_ia_free(ia));
	ck_assert_it_ok(it_ia_create(it_dev_name, 2, 0, &ia));
	ck_assert_it_ok(it_ia_free(ia));
	/* A freed handle is refused, not dereferenced. */
	ck_assert_it(it_ia_free(ia), IT_ERR_INVALID_IA);
}
END_TEST

START_TEST(ia_free_takes_children)
{
	struct it_fix f;
	it_ep_handle_t ep;
	struct it_buf b;
	it_handle_type_enum_t t;
	it_lmr_handle_t lmr;

	it_fix_open(&f);
	ep = it_ep_new(&f);
	it_buf_new(&f, &b, 4096, IT_PRIV_ALL & ~IT_PRIV_ATOMIC);
	lmr = b.lmr;
	ck_assert_it_ok(it_get_handle_type(ep, &t));
	ck_assert_int_eq(t, IT_HANDLE_TYPE_EP);
	ck_assert_it_ok(it_ia_free(f.ia));
	/* Every child went with the IA. */
	ck_assert_it(it_get_handle_type(ep, &t), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_get_handle_type(lmr, &t), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_get_handle_type(f.dto, &t), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_pz_free(f.pz), IT_ERR_INVALID_PZ);
	free(b.mem);
}
END_TEST

START_TEST(ia_query_siw)
{
	struct it_fix f;
	it_ia_info_t *info = NULL;
	bool lo = false;

	it_fix_open(&f);
	ck_assert_it(it_ia_query(f.ia, NULL), IT_ERR_FAULT);
	ck_assert_it(it_ia_query((it_ia_handle_t)&f, &info), IT_ERR_INVALID_IA);
	ck_assert_it_ok(it_ia_query(f.ia, &info));
	ck_assert_str_eq(info->ia_name, "siw_lo");
	ck_assert_uint_eq(info->api_major_version, 2);
	ck_assert_uint_eq(info->api_minor_version, 1);
	ck_assert_int_eq(info->transport_type, IT_IWARP_TCP_TRANSPORT);
	ck_assert_int_eq(info->supported_service_types, IT_RC_SERVICE);
	ck_assert(info->vendor.iwarp.valid_vid);
	ck_assert(strstr((char *)info->vendor.iwarp.vid, "siw"));
	/* MPA carries private data on connect, accept and reject; an iWARP
	 * close (TCP FIN) none. */
	ck_assert_uint_eq(info->connect_private_data_len, IT_MAX_PRIV_DATA);
	ck_assert_uint_eq(info->accept_private_data_len, IT_MAX_PRIV_DATA);
	ck_assert_uint_eq(info->reject_private_data_len, IT_MAX_PRIV_DATA);
	ck_assert_uint_eq(info->disconnect_private_data_len, 0);
	ck_assert(info->private_data_support);
	ck_assert(!info->three_way_handshake_support);
	/* siw has SRQs: EP high watermarks count receives taken from one. */
	ck_assert(info->soft_hi_watermark_support);
	ck_assert(info->hard_hi_watermark_support);
	ck_assert(info->socket_conversion_support);
	ck_assert(info->srq_support);
	ck_assert(!info->atomic_support);
	ck_assert(info->rdma_read_requires_remote_write);
	ck_assert(info->addr_mode_relative_support);
	/* Memory windows of both types (vp/siw/siw_mw.c). */
	ck_assert_int_eq(info->rmr_types_supported,
			 IT_RMR_TYPE_NARROW | IT_RMR_TYPE_WIDE);
	ck_assert(info->narrow_rmr_unlink_support);
	ck_assert(info->wide_rmr_unlink_support);
	/* it_post_rdma_read_to_rmr, IT_UNLINK_LOCAL_SINK. */
	ck_assert(info->rdma_read_local_extensions);
	/* it_lmr_link / it_lmr_unlink (RNICPI_DEV_CAP_FAST_REG). */
	ck_assert(info->lmr_link_support);
	ck_assert(info->ep_work_queues_resizable);
	ck_assert(info->srq_resizable);
	ck_assert(info->post_send_unlink_remote_support);
	ck_assert(info->dto_evd_overflow_detection);
	ck_assert_ptr_eq(info->affiliated_err_evd, f.aff);
	ck_assert_ptr_null(info->unaffiliated_err_evd);
	ck_assert_uint_eq(info->num_spigots, 1);
	ck_assert_uint_eq(info->spigot_info[0].spigot_id, 0);
	ck_assert(info->spigot_info[0].spigot_online);
	ck_assert_uint_gt(info->spigot_info[0].max_rc_send_len, 0);
	ck_assert_uint_eq(info->spigot_info[0].max_ud_send_len, 0);
	ck_assert_int_eq(info->spigot_info[0].passive_side_conn_qual,
			 IT_IANA_PORT | IT_IANA_LR_PORT);
	ck_assert(info->spigot_info[0].active_side_conn_qual & IT_IANA_PORT);
	for (size_t i = 0; i < info->spigot_info[0].num_net_addr; i++) {
		it_net_addr_t *a = &info->spigot_info[0].net_addr[i];

		if (a->addr_type == IT_IPV4 &&
		    a->addr.ipv4.s_addr == htonl(INADDR_LOOPBACK))
			lo = true;
	}
	ck_assert_msg(lo, "127.0.0.1 is not among the spigot's addresses");
	it_ia_info_free(info);
	it_ia_info_free(NULL);
	it_fix_close(&f);
}
END_TEST

START_TEST(ia_query_testprov)
{
	struct it_fix f;
	it_ia_info_t *info = NULL;

	it_fix_open(&f);
	ck_assert_it_ok(it_ia_query(f.ia, &info));
	ck_assert_str_eq(info->ia_name, "test_lo");
	ck_assert_int_eq(info->transport_type, IT_IB_TRANSPORT);
	ck_assert_int_eq(info->supported_service_types,
			 IT_RC_SERVICE | IT_UD_SERVICE);
	ck_assert_int_eq(info->rmr_types_supported, IT_RMR_TYPE_WIDE);
	ck_assert(!info->socket_conversion_support);
	ck_assert(!info->rdma_read_requires_remote_write);
	/* No fast registration (RNICPI_DEV_CAP_FAST_REG): no LMR links. */
	ck_assert(!info->lmr_link_support);
	/* tp_modify_srq does not resize (no RNICPI_DEV_CAP_RESIZE_SRQ). */
	ck_assert(!info->srq_resizable);
	/* No connection manager for this transport yet. */
	ck_assert_uint_eq(info->connect_private_data_len, 0);
	ck_assert(!info->private_data_support);
	ck_assert_uint_eq(info->spigot_info[0].max_ud_send_len, 4096);
	ck_assert_int_eq(info->spigot_info[0].passive_side_conn_qual,
			 IT_IB_SERVICEID);
	it_ia_info_free(info);
	it_fix_close(&f);
}
END_TEST

/*
 * A device whose SRQs do not resize (RNICPI_DEV_CAP_RESIZE_SRQ absent: the
 * test provider, and verbs devices, the kernel's siw refusing
 * IBV_SRQ_MAX_WR) says so in
 * srq_resizable, and it_srq_modify refuses the size with
 * IT_ERR_INVALID_MASK and leaves it alone, while the low watermark still
 * changes.
 */
START_TEST(srq_fixed_size_testprov)
{
	it_srq_handle_t srq = NULL;
	it_ia_info_t *info = NULL;
	it_srq_param_t p;
	struct it_fix f;

	it_fix_open(&f);
	ck_assert_it_ok(it_ia_query(f.ia, &info));
	ck_assert(info->srq_support);
	ck_assert(!info->srq_resizable);
	it_ia_info_free(info);
	ck_assert_it_ok(it_srq_create(f.pz, 1, 4, &srq));
	memset(&p, 0, sizeof(p));
	p.max_recv_dtos = 8;
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO, &p),
		     IT_ERR_INVALID_MASK);
	p.low_watermark = 2;
	ck_assert_it(it_srq_modify(srq, IT_SRQ_PARAM_MAX_RECV_DTO |
					   IT_SRQ_PARAM_LOW_WATERMARK, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it_ok(it_srq_modify(srq, IT_SRQ_PARAM_LOW_WATERMARK, &p));
	memset(&p, 0, sizeof(p));
	ck_assert_it_ok(it_srq_query(srq, IT_SRQ_PARAM_ALL, &p));
	ck_assert_uint_eq(p.max_recv_dtos, 4);
	ck_assert_uint_eq(p.low_watermark, 2);
	ck_assert_it_ok(it_srq_free(srq));
	it_fix_close(&f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* PZs                                                                 */
/* ------------------------------------------------------------------ */

START_TEST(pz_lifecycle)
{
	it_ia_handle_t ia;
	it_pz_handle_t pz = NULL;
	it_pz_param_t p;
	struct it_fix f;
	struct it_buf b;

	ck_assert_it_ok(it_ia_create(it_dev_name, 2, 1, &ia));
	ck_assert_it(it_pz_create(NULL, &pz), IT_ERR_INVALID_IA);
	ck_assert_it(it_pz_create(ia, NULL), IT_ERR_FAULT);
	ck_assert_it_ok(it_pz_create(ia, &pz));
	ck_assert_it_ok(it_pz_query(pz, IT_PZ_PARAM_IA, &p));
	ck_assert_ptr_eq(p.ia, ia);
	ck_assert_it(it_pz_query(pz, (it_pz_param_mask_t)0x80, &p),
		     IT_ERR_INVALID_MASK);
	ck_assert_it(it_pz_query(pz, IT_PZ_PARAM_ALL, NULL), IT_ERR_FAULT);
	/* Busy while an LMR lives in it. */
	f.ia = ia;
	f.pz = pz;
	it_buf_new(&f, &b, 100, IT_PRIV_LOCAL);
	ck_assert_it(it_pz_free(pz), IT_ERR_PZ_BUSY);
	it_buf_free(&b);
	ck_assert_it_ok(it_pz_free(pz));
	ck_assert_it(it_pz_free(pz), IT_ERR_INVALID_PZ);
	ck_assert_it(it_pz_query(pz, IT_PZ_PARAM_IA, &p), IT_ERR_INVALID_PZ);
	ck_assert_it_ok(it_ia_free(ia));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

START_TEST(pathinfo_siw)
{
	struct it_fix f;
	it_net_addr_t na = { .addr_type = IT_IPV4 };
	it_path_t paths[2];
	size_t n, total;

	it_fix_open(&f);
	na.addr.ipv4.s_addr = htonl(INADDR_LOOPBACK);
	n = 2;
	ck_assert_it_ok(it_get_pathinfo(f.ia, 0, &na, &n, &total, paths));
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(total, 1);
	ck_assert_uint_eq(paths[0].spigot_id, 0);
	ck_assert_int_eq(paths[0].remote.iwarp.ip_vers, IT_IP_VERS_IPV4);
	ck_assert_uint_eq(paths[0].remote.iwarp.raddr.ipv4.s_addr,
			  htonl(INADDR_LOOPBACK));
	ck_assert_uint_eq(paths[0].remote.iwarp.laddr.ipv4.s_addr,
			  htonl(INADDR_LOOPBACK));
	ck_assert_uint_eq(paths[0].timeout, 2000u * 1000);
	/* Only the count. */
	n = 0;
	ck_assert_it_ok(it_get_pathinfo(f.ia, 0, &na, &n, &total, NULL));
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(total, 1);
	/* TEST-NET-3 is not behind lo: no path from this IA. */
	inet_pton(AF_INET, "203.0.113.7", &na.addr.ipv4);
	n = 2;
	ck_assert_it_ok(it_get_pathinfo(f.ia, 0, &na, &n, &total, paths));
	ck_assert_uint_eq(total, 0);
	ck_assert_uint_eq(n, 0);
	/* Errors. */
	ck_assert_it(it_get_pathinfo(f.ia, 1, &na, &n, &total, paths),
		     IT_ERR_INVALID_SPIGOT);
	ck_assert_it(it_get_pathinfo(f.ia, 0, NULL, &n, &total, paths),
		     IT_ERR_FAULT);
	n = 1;
	ck_assert_it(it_get_pathinfo(f.ia, 0, &na, &n, &total, NULL),
		     IT_ERR_FAULT);
	na.addr_type = IT_VIA_HOSTADDR;
	ck_assert_it(it_get_pathinfo(f.ia, 0, &na, &n, &total, paths),
		     IT_ERR_INVALID_NETADDR);
	ck_assert_it(it_get_pathinfo(NULL, 0, &na, &n, &total, paths),
		     IT_ERR_INVALID_IA);
	it_fix_close(&f);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Handles and utilities                                               */
/* ------------------------------------------------------------------ */

START_TEST(handles)
{
	struct it_fix f;
	it_handle_type_enum_t t;
	it_context_t c = { .index = 0 }, got;
	int local;

	it_fix_open(&f);
	ck_assert_it_ok(it_get_handle_type(f.ia, &t));
	ck_assert_int_eq(t, IT_HANDLE_TYPE_IA);
	ck_assert_it_ok(it_get_handle_type(f.pz, &t));
	ck_assert_int_eq(t, IT_HANDLE_TYPE_PZ);
	ck_assert_it_ok(it_get_handle_type(f.dto, &t));
	ck_assert_int_eq(t, IT_HANDLE_TYPE_EVD);
	ck_assert_it(it_get_handle_type(f.ia, NULL), IT_ERR_FAULT);
	ck_assert_it(it_get_handle_type(NULL, &t), IT_ERR_INVALID_HANDLE);
	/* Made up: never dereferenced. */
	ck_assert_it(it_get_handle_type(&local, &t), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_get_handle_type((it_handle_t)(uintptr_t)0x10, &t),
		     IT_ERR_INVALID_HANDLE);

	ck_assert_it_ok(it_get_consumer_context(f.pz, &got));
	ck_assert_ptr_null(got.ptr);
	c.ptr = &local;
	ck_assert_it_ok(it_set_consumer_context(f.pz, c));
	ck_assert_it_ok(it_get_consumer_context(f.pz, &got));
	ck_assert_ptr_eq(got.ptr, &local);
	/* Each handle has its own. */
	ck_assert_it_ok(it_get_consumer_context(f.dto, &got));
	ck_assert_ptr_null(got.ptr);
	ck_assert_it(it_set_consumer_context(&local, c), IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_get_consumer_context(&local, &got),
		     IT_ERR_INVALID_HANDLE);
	ck_assert_it(it_get_consumer_context(f.pz, NULL), IT_ERR_FAULT);
	it_fix_close(&f);
}
END_TEST

START_TEST(convert_net_addr)
{
	it_net_addr_t s = { .addr_type = IT_IPV4 }, d;
	static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					    0, 0, 0xff, 0xff, 192, 0, 2, 9 };

	inet_pton(AF_INET, "192.0.2.9", &s.addr.ipv4);
	ck_assert_it_ok(it_convert_net_addr(&s, IT_IPV6, &d));
	ck_assert_int_eq(d.addr_type, IT_IPV6);
	ck_assert_int_eq(memcmp(d.addr.ipv6.s6_addr, mapped, 16), 0);
	ck_assert_it_ok(it_convert_net_addr(&s, IT_IB_GID, &d));
	ck_assert_int_eq(d.addr_type, IT_IB_GID);
	ck_assert_int_eq(memcmp(d.addr.gid.s6_addr, mapped, 16), 0);
	/* And back. */
	ck_assert_it_ok(it_convert_net_addr(&d, IT_IPV4, &s));
	ck_assert_int_eq(s.addr_type, IT_IPV4);
	ck_assert_uint_eq(s.addr.ipv4.s_addr, htonl(0xc0000209));
	/* A real IPv6 address has no IPv4 form. */
	d.addr_type = IT_IPV6;
	inet_pton(AF_INET6, "2001:db8::1", &d.addr.ipv6);
	ck_assert_it(it_convert_net_addr(&d, IT_IPV4, &s),
		     IT_ERR_INVALID_CONVERSION);
	ck_assert_it(it_convert_net_addr(&d, IT_VIA_HOSTADDR, &s),
		     IT_ERR_INVALID_CONVERSION);
	ck_assert_it_ok(it_convert_net_addr(&d, IT_IB_GID, &s));
	ck_assert_int_eq(memcmp(&s.addr.gid, &d.addr.ipv6, 16), 0);
	d.addr_type = (it_net_addr_type_t)9;
	ck_assert_it(it_convert_net_addr(&d, IT_IPV4, &s),
		     IT_ERR_INVALID_NETADDR);
	ck_assert_it(it_convert_net_addr(NULL, IT_IPV4, &s), IT_ERR_FAULT);
}
END_TEST

START_TEST(byte_order)
{
	uint64_t v = 0x0102030405060708ull, n = it_hton64(v);
	const uint8_t *b = (const uint8_t *)&n;

	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(b[i], i + 1);
	ck_assert_uint_eq(it_ntoh64(n), v);
	ck_assert_uint_eq(it_make_rdma_addr_absolute(&n), (uintptr_t)&n);
	ck_assert_uint_eq(it_make_rdma_addr_relative(4096), 4096);
}
END_TEST

START_TEST(status_tables)
{
	/* Context decides: the same errno, different objects. */
	ck_assert_it(itapi_status(-EBUSY, ITAPI_CTX_PZ), IT_ERR_PZ_BUSY);
	ck_assert_it(itapi_status(-EBUSY, ITAPI_CTX_LMR), IT_ERR_LMR_BUSY);
	ck_assert_it(itapi_status(-EBUSY, ITAPI_CTX_EVD), IT_ERR_EVD_BUSY);
	ck_assert_it(itapi_status(-EBUSY, ITAPI_CTX_SRQ), IT_ERR_SRQ_BUSY);
	ck_assert_it(itapi_status(-ENOMEM, ITAPI_CTX_POST),
		     IT_ERR_TOO_MANY_POSTS);
	ck_assert_it(itapi_status(-ENOMEM, ITAPI_CTX_ANY), IT_ERR_RESOURCES);
	ck_assert_it(itapi_status(-ENOENT, ITAPI_CTX_CONN),
		     IT_ERR_INVALID_CN_EST_ID);
	ck_assert_it(itapi_status(-EADDRINUSE, ITAPI_CTX_LISTEN),
		     IT_ERR_CONN_QUAL_BUSY);
	ck_assert_it(itapi_status(-EMSGSIZE, ITAPI_CTX_CONN),
		     IT_ERR_INVALID_PDATA_LENGTH);
	ck_assert_it(itapi_status(-ETIMEDOUT, ITAPI_CTX_CONVERT),
		     IT_ERR_TIMEOUT_EXPIRED);
	ck_assert_it(itapi_status(-EPROTO, ITAPI_CTX_CONVERT),
		     IT_ERR_INVALID_CONVERSION);
	ck_assert_it(itapi_status(-EOPNOTSUPP, ITAPI_CTX_SRQ),
		     IT_ERR_SRQ_NOT_SUPPORTED);
	ck_assert_it(itapi_status(-EOPNOTSUPP, ITAPI_CTX_EP),
		     IT_ERR_OP_NOT_SUPPORTED);
	ck_assert_it(itapi_status(-EINTR, ITAPI_CTX_EVD), IT_ERR_INTERRUPT);
	ck_assert_it(itapi_status(0, ITAPI_CTX_EP), IT_SUCCESS);
	/* Positive errno is read the same way; unknown ones abort. */
	ck_assert_it(itapi_status(EFAULT, ITAPI_CTX_ANY), IT_ERR_FAULT);
	ck_assert_it(itapi_status(-ENOTTY, ITAPI_CTX_ANY), IT_ERR_ABORT);

	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_SUCCESS), IT_DTO_SUCCESS);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_WR_FLUSH_ERR),
			 IT_DTO_ERR_FLUSHED);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_REM_ACCESS_ERR),
			 IT_DTO_ERR_REMOTE_ACCESS);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_LOC_PROT_ERR),
			 IT_DTO_ERR_LOCAL_PROTECTION);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_LOC_LEN_ERR),
			 IT_DTO_ERR_LOCAL_LENGTH);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_RNR_RETRY_EXC_ERR),
			 IT_DTO_ERR_RECEIVER_NOT_READY);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_MW_BIND_ERR),
			 IT_RMR_OPERATION_FAILED);
	ck_assert_int_eq(itapi_dto_status(RNICPI_WC_BAD_RESP_ERR),
			 IT_DTO_ERR_BAD_RESPONSE);
	ck_assert_int_eq(itapi_dto_status((enum rnicpi_wc_status)77),
			 IT_DTO_ERR_TRANSPORT);
	ck_assert_str_eq(itapi_status_name(IT_ERR_WAITER_LIMIT),
			 "IT_ERR_WAITER_LIMIT");
	ck_assert_int_eq(IT_ERR_WAITER_LIMIT, 106);
	ck_assert_int_eq(IT_ERR_INVALID_PDATA_LENGTH, 54);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Unaffiliated async events: the spigot going down and up              */
/* ------------------------------------------------------------------ */

static bool wait_unaff(it_evd_handle_t evd, it_event_t *ev)
{
	size_t nmore;

	return it_evd_wait(evd, IT_WAIT_US, ev, &nmore) == IT_SUCCESS;
}

/*
 * Milliseconds since the last call, for the child's messages: when this
 * fails, its message says which step and how long each step took, so a
 * slow kernel is told apart from an event that never came.
 */
static gint64 step_ms(gint64 *mark)
{
	gint64 now = g_get_monotonic_time(), ms = (now - *mark) / 1000;

	*mark = now;
	if (ms >= 1000)
		fprintf(stderr, "spigot_events: a step took %" G_GINT64_FORMAT
			" ms\n", ms);
	return ms;
}

static void spigot_child(void *arg)
{
	it_ia_handle_t ia = NULL;
	it_evd_handle_t unaff = NULL;
	it_ia_info_t *info = NULL;
	gint64 mark = g_get_monotonic_time(), setup, down, ms;
	it_event_t ev;
	bool got;

	(void)arg;
	tu_child_assert(unshare(CLONE_NEWNET) == 0, "unshare: %s",
			g_strerror(errno));
	/* A new namespace's lo is down; up it gets 127.0.0.1 and ::1. */
	tu_child_assert_ok(ut_link_set("lo", true));
	tu_child_assert(it_ia_create("test_lo", 2, 1, &ia) == IT_SUCCESS,
			"no test_lo in the new namespace");
	tu_child_assert(it_evd_create(ia, IT_ASYNC_UNAFF_EVENT_STREAM, 0, 16,
				      0, NULL, &unaff, NULL) == IT_SUCCESS,
			"unaffiliated EVD");
	setup = step_ms(&mark);
	tu_child_assert_ok(ut_link_set("lo", false));
	down = step_ms(&mark);
	got = wait_unaff(unaff, &ev);
	ms = step_ms(&mark);
	tu_child_assert(got,
			"no event %" G_GINT64_FORMAT " ms after lo went down "
			"(namespace and IA took %" G_GINT64_FORMAT " ms, "
			"lo down %" G_GINT64_FORMAT " ms)",
			ms, setup, down);
	tu_child_assert(ev.event_number == IT_ASYNC_UNAFF_SPIGOT_OFFLINE,
			"event 0x%x", ev.event_number);
	tu_child_assert(ev.unaff_async.ia == ia && ev.unaff_async.evd == unaff &&
				ev.unaff_async.spigot_id == 0,
			"event fields");
	tu_child_assert(it_ia_query(ia, &info) == IT_SUCCESS, "query");
	tu_child_assert(!info->spigot_info[0].spigot_online, "still online");
	tu_child_assert(info->unaffiliated_err_evd == unaff, "the EVD");
	it_ia_info_free(info);
	tu_child_assert_ok(ut_link_set("lo", true));
	step_ms(&mark);
	/* Other events (addresses) may come first. */
	do {
		got = wait_unaff(unaff, &ev);
		ms = step_ms(&mark);
		tu_child_assert(got,
				"no event %" G_GINT64_FORMAT
				" ms after lo came up", ms);
	} while (ev.event_number != IT_ASYNC_UNAFF_SPIGOT_ONLINE);
	tu_child_assert(it_ia_query(ia, &info) == IT_SUCCESS, "query");
	tu_child_assert(info->spigot_info[0].spigot_online, "not online");
	it_ia_info_free(info);
	tu_child_assert(it_ia_free(ia) == IT_SUCCESS, "it_ia_free");
}

START_TEST(spigot_events)
{
	tu_run_child(spigot_child, NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* fork()                                                              */
/* ------------------------------------------------------------------ */

/* One Send from @a to @b of @n bytes, checked on arrival. */
static void send_and_check(struct it_fix *f, it_ep_handle_t a,
			   it_ep_handle_t b, struct it_buf *src,
			   struct it_buf *dst, unsigned char seed)
{
	const it_dto_flags_t cn = IT_COMPLETION_FLAG | IT_NOTIFY_FLAG;
	it_lmr_triplet_t t = it_seg(dst, 0, 256);
	it_event_t ev;
	int got = 0;

	memset(dst->mem, 0, 256);
	for (size_t i = 0; i < 256; i++)
		src->mem[i] = (unsigned char)(seed + i);
	ck_assert_it_ok(it_post_recv(b, &t, 1, 2, cn));
	t = it_seg(src, 0, 256);
	ck_assert_it_ok(it_post_send(a, &t, 1, 1, cn));
	while (got < 2) {
		it_wait_event(f->dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		got++;
	}
	ck_assert_int_eq(memcmp(dst->mem, src->mem, 256), 0);
}

/*
 * fork() as rdma-core users know it (ibv_fork_init): the child can open an
 * IA of its own and do RDMA; what it inherited is the parent's, refused
 * in the child (as handles that are not live: IT_ERR_INVALID_EP,
 * IT_ERR_INVALID_IA, ...) and freed without touching
 * anything of the parent's. Before, the child's new IA was the parent's
 * (served by threads the child does not have: its connect timed out), and
 * its it_ia_free on the inherited IA took the parent's sockets out of
 * their shared epoll set, set SO_LINGER on them and crashed joining a
 * thread that does not exist: the parent's receives stopped.
 *
 * The child reports by exit status only (no Check assertion there); the
 * test is skipped with CK_FORK=no, where a failed assertion in the child
 * would carry on with the runner.
 */
START_TEST(fork_child_has_its_own_ia)
{
	struct it_fix f;
	struct it_buf src, dst;
	it_ep_handle_t a, b;
	int status;
	pid_t pid;

	if (g_strcmp0(g_getenv("CK_FORK"), "no") == 0)
		return;
	it_fix_open(&f);
	a = it_ep_new(&f);
	b = it_ep_new(&f);
	it_connect_pair(&f, a, b);
	it_buf_new(&f, &src, 4096, IT_PRIV_LOCAL);
	it_buf_new(&f, &dst, 4096, IT_PRIV_LOCAL);
	send_and_check(&f, a, b, &src, &dst, 1);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct it_fix c;
		struct it_buf cs, cd;
		it_ep_handle_t ca, cb;
		it_lmr_triplet_t t = { 0 };

		/* Inherited handles: refused, nothing touched. */
		if (it_post_send(a, &t, 0, 9, IT_COMPLETION_FLAG) !=
		    IT_ERR_INVALID_EP)
			_exit(10);
		if (it_ep_free(b) != IT_ERR_INVALID_EP)
			_exit(11);
		if (it_ia_free(f.ia) != IT_ERR_INVALID_IA)
			_exit(12);
		/* An IA of the child's own, a connection and a Send. */
		it_fix_open(&c);
		ca = it_ep_new(&c);
		cb = it_ep_new(&c);
		it_connect_pair(&c, ca, cb);
		it_buf_new(&c, &cs, 4096, IT_PRIV_LOCAL);
		it_buf_new(&c, &cd, 4096, IT_PRIV_LOCAL);
		send_and_check(&c, ca, cb, &cs, &cd, 7);
		it_buf_free(&cs);
		it_buf_free(&cd);
		it_fix_close(&c);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child: %s %d", WIFEXITED(status) ? "exit" : "signal",
		      WIFEXITED(status) ? WEXITSTATUS(status)
					: WTERMSIG(status));
	/* The parent's connection is untouched and still carries data. */
	send_and_check(&f, a, b, &src, &dst, 3);
	it_buf_free(&src);
	it_buf_free(&dst);
	it_fix_close(&f);
}
END_TEST

/* Bit @sig of the SigBlk mask in @status (/proc/.../status text). */
static bool sig_blocked(const char *status, int sig)
{
	const char *at = strstr(status, "SigBlk:");
	unsigned long long mask;

	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(sscanf(at, "SigBlk: %llx", &mask), 1);
	return mask & (1ull << (sig - 1));
}

/*
 * The library's own threads (the device's progress engine, the connection
 * manager, the netlink monitor) start with every signal blocked: a SIGINT
 * or SIGTERM for the application must reach one of its threads, never
 * land in ours and be lost (hostrdma-ping -s ignored SIGTERM one run in
 * six). The test's own thread blocks nothing, so the mask is not
 * inherited from it.
 */
START_TEST(library_threads_block_signals)
{
	struct it_fix f;
	it_listen_handle_t l;
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	GDir *dir;
	const char *tid;
	unsigned int ours = 0;
	sigset_t none;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	it_fix_open(&f);
	/* the connection manager starts with the first listener */
	ck_assert_it_ok(it_listen_create(f.ia, 0, f.req, IT_LISTEN_NO_FLAG,
					 &q, &l));
	dir = g_dir_open("/proc/self/task", 0, NULL);
	ck_assert_ptr_nonnull(dir);
	while ((tid = g_dir_read_name(dir))) {
		g_autofree char *path = g_strdup_printf(
			"/proc/self/task/%s/status", tid);
		g_autofree char *text = NULL;

		if (atoi(tid) == (int)gettid())
			continue;
		ck_assert(g_file_get_contents(path, &text, NULL, NULL));
		/* GLib's own helper threads are not ours to judge */
		if (strstr(text, "Name:\tgmain") || strstr(text, "Name:\tpool"))
			continue;
		ck_assert_msg(sig_blocked(text, SIGINT) &&
				      sig_blocked(text, SIGTERM),
			      "thread %s takes SIGINT or SIGTERM:\n%s", tid,
			      text);
		ours++;
	}
	g_dir_close(dir);
	/* at least the engine and the connection manager */
	ck_assert_uint_ge(ours, 2);
	ck_assert_it_ok(it_listen_free(l));
	it_fix_close(&f);
}
END_TEST

Suite *suite_itapi_ia(void)
{
	Suite *s = suite_create("itapi-ia");
	TCase *tc = tcase_create("testprov");
	TCase *siw = tcase_create("siw");
	TCase *pure = tcase_create("pure");
	TCase *spigot = tcase_create("spigot");

	tcase_add_checked_fixture(tc, it_setup_testprov, it_teardown);
	tcase_add_test(tc, interface_list);
	tcase_add_test(tc, ia_create_errors);
	tcase_add_test(tc, ia_free_takes_children);
	tcase_add_test(tc, ia_query_testprov);
	tcase_add_test(tc, srq_fixed_size_testprov);
	tcase_add_test(tc, pz_lifecycle);
	tcase_add_test(tc, handles);
	suite_add_tcase(s, tc);

	/* Like ual-events' link cases: namespace set-up and link changes
	 * wait on the kernel (its rtnl lock, a namespace being torn down
	 * elsewhere), far beyond Check's 4 s default on a busy host. Each
	 * event is waited for IT_WAIT_US; the case outlasts those waits so
	 * that a lost event fails by name rather than as a timeout. */
	tcase_add_checked_fixture(spigot, it_setup_testprov, it_teardown);
	tcase_set_timeout(spigot, 60);
	tcase_add_test(spigot, spigot_events);
	suite_add_tcase(s, spigot);

	tcase_add_checked_fixture(siw, it_setup_siw, it_teardown);
	tcase_set_timeout(siw, 30);
	tcase_add_test(siw, interface_list);
	tcase_add_test(siw, ia_query_siw);
	tcase_add_test(siw, pathinfo_siw);
	tcase_add_test(siw, fork_child_has_its_own_ia);
	tcase_add_test(siw, library_threads_block_signals);
	suite_add_tcase(s, siw);

	tcase_add_test(pure, convert_net_addr);
	tcase_add_test(pure, byte_order);
	tcase_add_test(pure, status_tables);
	suite_add_tcase(s, pure);
	return s;
}
