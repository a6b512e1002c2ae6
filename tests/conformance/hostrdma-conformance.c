/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-conformance - IT-API conformance checks for any named device,
 * for provider authors (docs/PROVIDERS.md, hostrdma-conformance(1)).
 * An IT-API application: it_api.h and libhostrdma only. Check (libcheck)
 * runs the cases, one process each, and writes the TAP report (and JUnit
 * style XML with --junit FILE).
 *
 *   hostrdma-conformance -d DEVICE [-d PEER_DEVICE] [-a ADDRESS]
 *
 * Connection cases connect DEVICE to a listener on PEER_DEVICE (DEVICE
 * again when not given) at ADDRESS (IPv4, default 127.0.0.1). Then the
 * tree's IT-API suites that use nothing but IT-API run on DEVICE through
 * ADDRESS (conf_itapi.c): itapi-cm on an iWARP device, itapi-cm-rxe on
 * any other, itapi-atomic-rxe on one with atomics, itapi-ud-rxe's on
 * one with UD, and the cases of
 * itapi-ep, itapi-post, itapi-evd and itapi-mem that use IT-API alone
 * (suite_itapi_*_device: each names the cases it leaves out and why)
 * (--own-only skips them). With a second -d, every case's fixture also opens an IA on
 * PEER_DEVICE, and the cases written for two sides (it_ep_new_peer:
 * connect, private data, reject, disconnect, many connections) put
 * their passive endpoint there;
 * the others keep both ends on DEVICE.
 */
#ifndef ITAPI_ENABLE_V21_BINDINGS	/* (the build sets it too) */
#define ITAPI_ENABLE_V21_BINDINGS
#endif
#include <it_api.h>

#include <arpa/inet.h>
#include <check.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/conformance/conf_itapi.h"
#include "tests/suites.h"

#define TIMEOUT_US (10ull * 1000 * 1000)
#define FLAGS ((it_dto_flags_t)(IT_COMPLETION_FLAG | IT_NOTIFY_FLAG))

static const char *dev_name, *peer_name;
static struct in_addr peer_addr;

#define ck_it(call)                                                         \
	do {                                                                \
		it_status_t st_ = (call);                                   \
		ck_assert_msg(st_ == IT_SUCCESS, "%s: status %d", #call,    \
			      (int)st_);                                    \
	} while (0)

static void wait_for(it_evd_handle_t evd, it_event_type_t type,
		     it_event_t *ev)
{
	size_t nmore;

	ck_it(it_evd_wait(evd, TIMEOUT_US, ev, &nmore));
	ck_assert_msg(ev->event_number == type,
		      "event 0x%x, expected 0x%x", ev->event_number, type);
}

/* ------------------------------------------------------------------ */
/* The interface adapter                                               */
/* ------------------------------------------------------------------ */

START_TEST(test_interface_listed)
{
	it_interface_t itf[64];
	size_t n = 64, total, i;
	bool found = false;

	it_interface_list(itf, &n, &total);
	for (i = 0; i < n; i++)
		found |= strcmp(itf[i].name, dev_name) == 0;
	ck_assert_msg(found, "%s not in it_interface_list", dev_name);
}
END_TEST

START_TEST(test_ia_create_query)
{
	it_ia_handle_t ia;
	it_ia_info_t *info = NULL;

	ck_it(it_ia_create(dev_name, 2, 1, &ia));
	ck_it(it_ia_query(ia, &info));
	ck_assert_ptr_nonnull(info);
	it_ia_info_free(info);
	ck_it(it_ia_free(ia));
}
END_TEST

START_TEST(test_pz_lmr)
{
	static char buf[8192];
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_lmr_handle_t a, b;
	it_rmr_context_t ka, kb;

	ck_it(it_ia_create(dev_name, 2, 1, &ia));
	ck_it(it_pz_create(ia, &pz));
	ck_it(it_lmr_create(pz, buf, NULL, 4096, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			    0, &a, &ka));
	ck_it(it_lmr_create(pz, buf + 4096, NULL, 4096, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			    0, &b, &kb));
	ck_assert_msg(ka != kb, "two regions share the key 0x%llx",
		      (unsigned long long)ka);
	ck_it(it_lmr_free(b));
	ck_it(it_lmr_free(a));
	ck_it(it_pz_free(pz));
	ck_it(it_ia_free(ia));
}
END_TEST

START_TEST(test_evd_empty)
{
	it_ia_handle_t ia;
	it_evd_handle_t evd;
	it_event_t ev;

	ck_it(it_ia_create(dev_name, 2, 1, &ia));
	ck_it(it_evd_create(ia, IT_DTO_EVENT_STREAM, 0, 16, 0, NULL, &evd,
			    NULL));
	ck_assert_int_eq(it_evd_dequeue(evd, &ev), IT_ERR_QUEUE_EMPTY);
	ck_it(it_evd_free(evd));
	ck_it(it_ia_free(ia));
}
END_TEST

/* ------------------------------------------------------------------ */
/* A reliable connection: DEVICE to PEER_DEVICE                        */
/* ------------------------------------------------------------------ */

struct side {
	it_ia_handle_t ia;
	it_pz_handle_t pz;
	it_evd_handle_t dto, req, msg;
	it_ep_handle_t ep;
};

static void side_open(struct side *s, const char *name)
{
	it_ep_attributes_t attr;

	memset(s, 0, sizeof(*s));
	ck_it(it_ia_create(name, 2, 1, &s->ia));
	ck_it(it_pz_create(s->ia, &s->pz));
	ck_it(it_evd_create(s->ia, IT_DTO_EVENT_STREAM, 0, 64, 0, NULL,
			    &s->dto, NULL));
	ck_it(it_evd_create(s->ia, IT_CM_REQ_EVENT_STREAM, 0, 8, 0, NULL,
			    &s->req, NULL));
	ck_it(it_evd_create(s->ia, IT_CM_MSG_EVENT_STREAM, 0, 8, 0, NULL,
			    &s->msg, NULL));
	memset(&attr, 0, sizeof(attr));
	attr.max_request_dtos = attr.max_recv_dtos = 8;
	attr.max_send_segments = attr.max_recv_segments = 1;
	attr.srv.rc.rdma_read_enable = attr.srv.rc.rdma_write_enable = IT_TRUE;
	attr.srv.rc.max_rdma_read_segments = 1;
	attr.srv.rc.max_rdma_write_segments = 1;
	attr.srv.rc.rdma_read_ird = attr.srv.rc.rdma_read_ord = 4;
	ck_it(it_ep_rc_create(s->pz, s->dto, s->dto, s->msg, IT_EP_NO_FLAG,
			      &attr, &s->ep));
}

/* Connect @c (DEVICE) to @s (PEER_DEVICE). */
static void connect_pair(struct side *c, struct side *s)
{
	it_net_addr_t dst = { .addr_type = IT_IPV4 };
	it_conn_qual_t qual = { .type = IT_IANA_PORT };
	it_listen_handle_t listener;
	it_path_t path;
	it_event_t ev;
	size_t np = 1, total;

	side_open(c, dev_name);
	side_open(s, peer_name);
	ck_it(it_listen_create(s->ia, 0, s->req, IT_LISTEN_NO_FLAG, &qual,
			       &listener));
	dst.addr.ipv4 = peer_addr;
	ck_it(it_get_pathinfo(c->ia, 0, &dst, &np, &total, &path));
	ck_assert_uint_eq(np, 1);
	ck_it(it_ep_connect(c->ep, &path, NULL, &qual,
			    IT_CONNECT_FLAG_TWO_WAY, NULL, 0));
	wait_for(s->req, IT_CM_REQ_CONN_REQUEST_EVENT, &ev);
	ck_it(it_ep_accept(s->ep, ev.conn_req.cn_est_id, NULL, 0));
	wait_for(s->msg, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
	wait_for(c->msg, IT_CM_MSG_CONN_ESTABLISHED_EVENT, &ev);
}

START_TEST(test_rc_connect_disconnect)
{
	struct side c, s;
	it_event_t ev;

	connect_pair(&c, &s);
	ck_it(it_ep_disconnect(c.ep, NULL, 0));
	wait_for(c.msg, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	wait_for(s.msg, IT_CM_MSG_CONN_DISCONNECT_EVENT, &ev);
	ck_it(it_ia_free(c.ia));
	ck_it(it_ia_free(s.ia));
}
END_TEST

START_TEST(test_rc_send_write_read)
{
	static char in[256], out[256], target[4096], src[4096], back[4096];
	it_lmr_handle_t lin, lout, ltarget, lsrc, lback;
	it_rmr_context_t rkey;
	it_lmr_triplet_t seg;
	struct side c, s;
	it_event_t ev;
	size_t i;

	connect_pair(&c, &s);
	/* SEND: c to s. */
	ck_it(it_lmr_create(s.pz, in, NULL, sizeof(in), IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &lin, NULL));
	seg.lmr = lin;
	seg.addr.abs = in;
	seg.length = sizeof(in);
	ck_it(it_post_recv(s.ep, &seg, 1, 1, FLAGS));
	snprintf(out, sizeof(out), "conformance %s -> %s", dev_name,
		 peer_name);
	ck_it(it_lmr_create(c.pz, out, NULL, sizeof(out),
			    IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			    IT_LMR_FLAG_NONE, 0, &lout, NULL));
	seg.lmr = lout;
	seg.addr.abs = out;
	seg.length = strlen(out) + 1;
	ck_it(it_post_send(c.ep, &seg, 1, 2, FLAGS));
	wait_for(c.dto, IT_DTO_SEND_CMPL_EVENT, &ev);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	wait_for(s.dto, IT_DTO_RC_RECV_CMPL_EVENT, &ev);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert_uint_eq(ev.dto_cmpl.transferred_length, strlen(out) + 1);
	ck_assert_str_eq(in, out);

	/* RDMA Write into s's buffer, RDMA Read it back. */
	ck_it(it_lmr_create(s.pz, target, NULL, sizeof(target),
			    IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE, IT_LMR_FLAG_NONE,
			    0, &ltarget, &rkey));
	for (i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 31 + 7);
	ck_it(it_lmr_create(c.pz, src, NULL, sizeof(src),
			    IT_ADDR_MODE_ABSOLUTE, IT_PRIV_LOCAL,
			    IT_LMR_FLAG_NONE, 0, &lsrc, NULL));
	seg.lmr = lsrc;
	seg.addr.abs = src;
	seg.length = sizeof(src);
	ck_it(it_post_rdma_write(c.ep, &seg, 1, 3, FLAGS,
				 it_make_rdma_addr_absolute(target), rkey));
	wait_for(c.dto, IT_DTO_RDMA_WRITE_CMPL_EVENT, &ev);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_it(it_lmr_create(c.pz, back, NULL, sizeof(back),
			    IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL | IT_PRIV_REMOTE_WRITE,
			    IT_LMR_FLAG_NONE, 0, &lback, NULL));
	seg.lmr = lback;
	seg.addr.abs = back;
	ck_it(it_post_rdma_read(c.ep, &seg, 1, 4, FLAGS,
				it_make_rdma_addr_absolute(target), rkey));
	wait_for(c.dto, IT_DTO_RDMA_READ_CMPL_EVENT, &ev);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	ck_assert(memcmp(target, src, sizeof(src)) == 0);
	ck_assert(memcmp(back, src, sizeof(src)) == 0);
	ck_it(it_ia_free(c.ia));
	ck_it(it_ia_free(s.ia));
}
END_TEST

/* A window of type @type onto bytes 1024..2047 of @target on @s, a region
 * with local rights only (its own key opens nothing to the peer); false
 * when the IA does not name the type in rmr_types_supported, after
 * checking that it_rmr_create refuses it. */
static bool rmr_open(struct side *s, it_rmr_type_t type, unsigned char *target,
		     size_t len, it_rmr_handle_t *rmr, it_rmr_context_t *ctx)
{
	it_lmr_handle_t l;
	it_rmr_context_t k;
	it_ia_info_t *info;
	it_rmr_type_t have;
	it_event_t ev;

	ck_it(it_ia_query(s->ia, &info));
	have = info->rmr_types_supported;
	it_ia_info_free(info);
	if (!(have & type)) {
		ck_assert_msg(it_rmr_create20(s->pz, type, rmr) != IT_SUCCESS,
			      "RMR type %d not supported, yet created",
			      (int)type);
		return false;
	}
	memset(target, 0, len);
	ck_it(it_lmr_create(s->pz, target, NULL, len, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &l, &k));
	ck_it(it_rmr_create20(s->pz, type, rmr));
	ck_it(it_rmr_link(*rmr, l, target + 1024, 1024, IT_ADDR_MODE_ABSOLUTE,
			  IT_PRIV_REMOTE_WRITE, s->ep, 10, FLAGS, ctx));
	wait_for(s->dto, IT_RMR_LINK_CMPL_EVENT, &ev);
	ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
	return true;
}

/* @c's RDMA Write of @n bytes (@fill) at @dst through @ctx; its
 * completion status. */
static it_dto_status_t rmr_write(struct side *c, unsigned char *dst,
				 size_t n, int fill, it_rmr_context_t ctx,
				 unsigned char *src)
{
	it_lmr_handle_t l;
	it_lmr_triplet_t seg;
	it_event_t ev;
	size_t nmore;

	memset(src, fill, n);
	ck_it(it_lmr_create(c->pz, src, NULL, n, IT_ADDR_MODE_ABSOLUTE,
			    IT_PRIV_LOCAL, IT_LMR_FLAG_NONE, 0, &l, NULL));
	seg.lmr = l;
	seg.addr.abs = src;
	seg.length = n;
	ck_it(it_post_rdma_write(c->ep, &seg, 1, 11, FLAGS,
				 it_make_rdma_addr_absolute(dst), ctx));
	ck_it(it_evd_wait(c->dto, TIMEOUT_US, &ev, &nmore));
	ck_assert_int_eq(ev.event_number, IT_DTO_RDMA_WRITE_CMPL_EVENT);
	/* An iWARP responder reports a refusal on its side (a
	 * Terminate), after the Write completed here: time to land. */
	usleep(200 * 1000);
	return ev.dto_cmpl.dto_status;
}

/*
 * Memory windows of each type it_ia_query's rmr_types_supported names:
 * it_rmr_create, it_rmr_link from PEER_DEVICE's side onto part of a
 * region the peer has no key to; DEVICE's RDMA Write through the window
 * lands there and nowhere else; unlinked, the same Write is refused and
 * changes nothing (an error completion on RoCE and InfiniBand). A type
 * the IA does not name: it_rmr_create refuses it.
 */
START_TEST(test_rmr_window)
{
	static unsigned char target[4096], before[4096], src[256];
	const it_rmr_type_t types[] = { IT_RMR_TYPE_NARROW, IT_RMR_TYPE_WIDE };
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;
	struct side c, s;
	it_dto_status_t st;
	it_event_t ev;

	for (int t = 0; t < 2; t++) {
		connect_pair(&c, &s);
		if (rmr_open(&s, types[t], target, sizeof(target), &rmr,
			     &ctx)) {
			st = rmr_write(&c, target + 1500, 200, 0x31 + t, ctx,
				       src);
			ck_assert_int_eq(st, IT_DTO_SUCCESS);
			for (size_t i = 0; i < sizeof(target); i++)
				ck_assert_msg(target[i] ==
						      (i >= 1500 && i < 1700 ?
							       0x31 + t :
							       0),
					      "type %d: byte %zu is 0x%02x",
					      (int)types[t], i, target[i]);
			ck_it(it_rmr_unlink(rmr, s.ep, 20, FLAGS));
			wait_for(s.dto, IT_RMR_LINK_CMPL_EVENT, &ev);
			ck_assert_int_eq(ev.dto_cmpl.dto_status,
					 IT_DTO_SUCCESS);
			memcpy(before, target, sizeof(target));
			st = rmr_write(&c, target + 1500, 200, 0xee, ctx, src);
			if (!conf_itapi_is_iwarp(dev_name))
				ck_assert_msg(st != IT_DTO_SUCCESS,
					      "type %d: a Write through an unlinked window completed",
					      (int)types[t]);
			ck_assert_msg(memcmp(target, before,
					     sizeof(target)) == 0,
				      "type %d: a Write through an unlinked window landed",
				      (int)types[t]);
		}
		ck_it(it_ia_free(c.ia));
		ck_it(it_ia_free(s.ia));
	}
}
END_TEST

/*
 * The window's bounds: a Write of 64 bytes from 2000, 16 past the end of
 * a window on 1024..2047, is refused and changes nothing, although the
 * region under the window has those bytes.
 */
START_TEST(test_rmr_window_bounds)
{
	static unsigned char target[4096], before[4096], src[256];
	const it_rmr_type_t types[] = { IT_RMR_TYPE_NARROW, IT_RMR_TYPE_WIDE };
	it_rmr_context_t ctx;
	it_rmr_handle_t rmr;
	struct side c, s;
	it_dto_status_t st;

	for (int t = 0; t < 2; t++) {
		connect_pair(&c, &s);
		if (rmr_open(&s, types[t], target, sizeof(target), &rmr,
			     &ctx)) {
			memcpy(before, target, sizeof(target));
			st = rmr_write(&c, target + 2000, 64, 0xee, ctx, src);
			ck_assert_msg(memcmp(target, before,
					     sizeof(target)) == 0,
				      "type %d: a Write past the window's end landed (completion status %d)",
				      (int)types[t], (int)st);
			if (!conf_itapi_is_iwarp(dev_name))
				ck_assert_msg(st != IT_DTO_SUCCESS,
					      "type %d: a Write past the window's end completed, nothing landed",
					      (int)types[t]);
		}
		ck_it(it_ia_free(c.ia));
		ck_it(it_ia_free(s.ia));
	}
}
END_TEST

static Suite *conformance_suite(void)
{
	Suite *s = suite_create("conformance");
	TCase *tc = tcase_create("ia");

	tcase_add_test(tc, test_interface_listed);
	tcase_add_test(tc, test_ia_create_query);
	tcase_add_test(tc, test_pz_lmr);
	tcase_add_test(tc, test_evd_empty);
	suite_add_tcase(s, tc);
	tc = tcase_create("rc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_rc_connect_disconnect);
	tcase_add_test(tc, test_rc_send_write_read);
	tcase_add_test(tc, test_rmr_window);
	tcase_add_test(tc, test_rmr_window_bounds);
	suite_add_tcase(s, tc);
	return s;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s -d DEVICE [-d PEER_DEVICE] [-a ADDRESS] [--junit FILE]\n"
		"IT-API conformance checks of DEVICE; TAP on standard output.\n"
		"  -d, --device NAME   device under test; a second -d names the peer\n"
		"  -a, --address IPV4  the peer device's address (default 127.0.0.1)\n"
		"      --junit FILE    also write the results as XML to FILE\n"
		"      --own-only      only the runner's own checks, not the tree's\n"
		"                      IT-API suites (itapi-cm or itapi-cm-rxe by\n"
		"                      transport, itapi-atomic-rxe with atomics,\n"
		"                      itapi-ud-rxe with UD, itapi-ep, itapi-post,\n"
		"                      itapi-evd, itapi-mem)\n"
		"Exit status: 0 all passed, 1 a check failed, 2 usage.\n",
		prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "address", required_argument, NULL, 'a' },
		{ "junit", required_argument, NULL, 'j' },
		{ "own-only", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *addr = "127.0.0.1", *junit = NULL;
	bool own_only = false, two;
	SRunner *sr;
	int c, failed;

	while ((c = getopt_long(argc, argv, "d:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!dev_name)
				dev_name = optarg;
			else if (!peer_name)
				peer_name = optarg;
			else {
				usage(stderr, argv[0]);
				return 2;
			}
			break;
		case 'a': addr = optarg; break;
		case 'j': junit = optarg; break;
		case 'o': own_only = true; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (!dev_name || optind != argc ||
	    inet_pton(AF_INET, addr, &peer_addr) != 1) {
		usage(stderr, argv[0]);
		return 2;
	}
	two = peer_name != NULL;
	if (!peer_name)
		peer_name = dev_name;
	sr = srunner_create(conformance_suite());
	if (!own_only) {
		conf_itapi_init(dev_name, two ? peer_name : NULL, peer_addr);
		bool iwarp = conf_itapi_is_iwarp(dev_name);

		srunner_add_suite(sr, iwarp ? suite_itapi_cm() :
					      suite_itapi_cm_rxe());
		if (conf_itapi_has_atomics(dev_name))
			srunner_add_suite(sr, suite_itapi_atomic());
		srunner_add_suite(sr, suite_itapi_ep_device(iwarp));
		srunner_add_suite(sr, suite_itapi_post_device());
		srunner_add_suite(sr, suite_itapi_evd_device());
		srunner_add_suite(sr, suite_itapi_mem_device(
					      conf_itapi_has_windows(dev_name)));
		if (conf_itapi_has_ud(dev_name))
			srunner_add_suite(sr, suite_itapi_ud_rxe_device());
		srunner_add_suite(sr, suite_itapi_imm_device(
					      conf_itapi_has_imm(dev_name)));
	}
	srunner_set_tap(sr, "-");
	if (junit)
		srunner_set_xml(sr, junit);
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
