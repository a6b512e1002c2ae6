/* SPDX-License-Identifier: MIT */
/*
 * rxe-loopback: a soft-RoCE device on lo, two QPs talking over 127.0.0.1
 * or ::1 through the provider's ops: SEND, WRITE (with immediate) and READ
 * from 0 B to 16 MiB with guard bytes around every target, every path
 * MTU, the QP state machine and flushing, RNR, many WQEs in flight, SQ
 * drain, SRQ. This file: the device, ports, descriptors and the QP state
 * machine; the RC traffic is in check_rxe_loopback_rc.c, polling
 * consumers that read the receive side (option poll_rx) in
 * check_rxe_poll_rx.c. Memory (keys, atomics, invalidation, windows) is
 * in rxe-memory, datagrams in rxe-ud.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testutil_rxe.h"
#include "tests/suites.h"
#include "tests/testutil.h"

START_TEST(test_device_queries)
{
	struct rxe_t_dev t;
	struct rnicpi_device_attr da;
	struct rnicpi_port_attr pa;
	struct rnicpi_gid_entry ge;
	union rnicpi_gid want;
	static const struct rnicpi_option bad[] = {
		{ "max_unacked", "0" }, { NULL, NULL },
	};
	static const struct rnicpi_option unknown[] = {
		{ "no_such_thing", "1" }, { NULL, NULL },
	};
	static const struct rnicpi_option bad_direct[] = {
		{ "direct", "3" }, { NULL, NULL },
	};
	static const struct rnicpi_option bad_poll[] = {
		{ "busy_poll_us", "1000001" }, { NULL, NULL },
	};
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	struct rnicpi_device *d;

	rxe_t_lo_netdev(&nd, addrs);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", bad,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", unknown,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", bad_direct,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_errno(rxe_provider.device_create(&nd, "rxe_lo", bad_poll,
						   &rxe_t_core_ops, &d),
			EINVAL);
	ck_assert_ok(rxe_provider.netdev_supported(&nd));
	nd.n_addrs = 0;
	ck_assert_errno(rxe_provider.netdev_supported(&nd), EADDRNOTAVAIL);

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_str_eq(t.dev->name, "rxe_lo");
	ck_assert_ok(t.ops->query_device(t.dev, &da));
	ck_assert_int_eq(da.transport, RNICPI_TRANSPORT_ROCE);
	ck_assert(da.caps & RNICPI_DEV_CAP_GSI);
	ck_assert(da.caps & RNICPI_DEV_CAP_ATOMIC);
	ck_assert_ok(t.ops->query_port(t.dev, 1, &pa));
	ck_assert_int_eq(pa.state, RNICPI_PORT_ACTIVE);
	ck_assert_int_eq(pa.active_mtu, RNICPI_MTU_4096);
	ck_assert_int_eq(pa.link_layer, RNICPI_LINK_LAYER_ETHERNET);
	ck_assert_errno(t.ops->query_port(t.dev, 2, &pa), EINVAL);

	ck_assert_ok(t.ops->query_gid(t.dev, 1, 0, &ge));
	rxe_t_gid_v4(&want, "127.0.0.1");
	ck_assert_mem_eq(ge.gid.raw, want.raw, 16);
	ck_assert_int_eq(ge.type, RNICPI_GID_TYPE_ROCE_V2);
	ck_assert_ok(t.ops->query_gid(t.dev, 1, 1, &ge));
	rxe_t_gid_v6(&want, "::1");
	ck_assert_mem_eq(ge.gid.raw, want.raw, 16);
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 2, &ge), ENOENT);
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 99, &ge), EINVAL);

	/* Interface events: MTU and carrier change the port, addresses
	 * the GID table; each raises its event. */
	rxe_t_lo_netdev(&nd, addrs);
	nd.mtu = 1500;
	nd.flags &= ~RNICPI_NETDEV_RUNNING;
	nd.n_addrs = 1;
	t.ops->netdev_event(t.dev, &nd, RNICPI_NETDEV_CHANGE);
	ck_assert_ok(t.ops->query_port(t.dev, 1, &pa));
	ck_assert_int_eq(pa.state, RNICPI_PORT_DOWN);
	ck_assert_int_eq(pa.active_mtu, RNICPI_MTU_1024);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_PORT_ERR, NULL));
	ck_assert(rxe_t_has_event(RNICPI_EVENT_GID_CHANGE, NULL));
	ck_assert_errno(t.ops->query_gid(t.dev, 1, 1, &ge), ENOENT);
	rxe_t_events_reset();
	rxe_t_lo_netdev(&nd, addrs);
	t.ops->netdev_event(t.dev, &nd, RNICPI_NETDEV_ADDR_ADD);
	ck_assert(rxe_t_has_event(RNICPI_EVENT_PORT_ACTIVE, NULL));
	ck_assert_ok(t.ops->query_gid(t.dev, 1, 1, &ge));
	rxe_t_dev_close(&t);
}
END_TEST

/* RoCEv2 has one UDP port: when another process (or the kernel's
 * rdma_rxe) holds it on every address of the interface, creating the
 * device (what a listing does) still works and binds nothing, but opening
 * it is refused with EADDRINUSE, not a vague "no address"; once the port
 * is free again the same device opens. */
START_TEST(test_port_taken)
{
	struct sockaddr_storage addrs[2];
	struct rnicpi_netdev nd;
	struct rnicpi_device *d = NULL;
	struct rxe_t_dev t;
	int fd[2];

	rxe_t_lo_netdev(&nd, addrs);
	for (int i = 0; i < 2; i++) {
		int fam = addrs[i].ss_family;
		struct sockaddr_storage a = addrs[i];
		socklen_t len;

		if (fam == AF_INET) {
			((struct sockaddr_in *)&a)->sin_port = htons(4791);
			len = sizeof(struct sockaddr_in);
		} else {
			((struct sockaddr_in6 *)&a)->sin6_port = htons(4791);
			len = sizeof(struct sockaddr_in6);
		}
		fd[i] = socket(fam, SOCK_DGRAM, 0);
		ck_assert_int_ge(fd[i], 0);
		ck_assert_int_eq(bind(fd[i], (struct sockaddr *)&a, len), 0);
	}
	ck_assert_ok(rxe_provider.device_create(&nd, "rxe_lo", NULL,
						&rxe_t_core_ops, &d));
	ck_assert_ptr_nonnull(d);
	ck_assert_errno(d->ops->device_open(d), EADDRINUSE);
	ck_assert_errno(d->ops->device_open(d), EADDRINUSE);
	close(fd[0]);
	close(fd[1]);
	ck_assert_ok(d->ops->device_open(d));
	ck_assert_ok(d->ops->device_open(d));	/* idempotent */
	d->ops->device_destroy(d);
	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	rxe_t_dev_close(&t);
}
END_TEST

/*
 * A QP's transport timer takes no descriptor: it lives on the progress
 * engine's timer heap (once a timerfd of its own, which could run out:
 * such a QP never retried a lost packet, seen with 8000 connections in
 * one process under a 20 000-descriptor limit). So out of descriptors,
 * create_qp still makes a QP with its timer. Fillers use every
 * descriptor below a lowered RLIMIT_NOFILE; the limit is restored after.
 */
START_TEST(test_qp_out_of_descriptors)
{
	struct rxe_t_dev t;
	struct rxe_t_side s;
	struct rnicpi_qp_init_attr qa = { .qp_type = RNICPI_QPT_RC };
	struct rnicpi_qp *extra = NULL;
	struct rlimit old, low;
	int fillers[64], n = 0, fd;

	if (tu_under_valgrind())
		return; /* see tu_under_valgrind() */
	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &s, RNICPI_QPT_RC, NULL));
	qa.send_cq = s.scq;
	qa.recv_cq = s.rcq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.port_num = 1;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	close(fd);
	low = old;
	low.rlim_cur = (rlim_t)fd + 8;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < (int)G_N_ELEMENTS(fillers) &&
	       (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		fillers[n++] = fd;
	ck_assert_int_eq(errno, EMFILE);
	ck_assert_ok(t.ops->create_qp(t.pd, &qa, &extra));
	ck_assert_ok(t.ops->destroy_qp(extra));
	extra = NULL;
	while (n)
		close(fillers[--n]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_ok(t.ops->create_qp(t.pd, &qa, &extra));
	ck_assert_ok(t.ops->destroy_qp(extra));
	rxe_t_side_destroy(&t, &s);
	rxe_t_dev_close(&t);
}
END_TEST

START_TEST(test_qp_state_machine)
{
	struct rxe_t_dev t;
	struct rxe_t_side s;
	struct rnicpi_qp_attr a;
	struct rnicpi_send_wr wr;
	struct rnicpi_recv_wr rwr;
	const struct rnicpi_send_wr *bad;
	const struct rnicpi_recv_wr *rbad;
	struct rnicpi_wc wc;
	struct rnicpi_qp_init_attr ia;
	union rnicpi_gid gid;

	ck_assert_ok(rxe_t_dev_open(&t, NULL));
	ck_assert_ok(rxe_t_side_create(&t, &s, RNICPI_QPT_RC, NULL));
	ck_assert_uint_ge(s.qp->qp_num, 2);

	memset(&a, 0, sizeof(a));
	memset(&wr, 0, sizeof(wr));
	/* Posting before RTS is refused. */
	wr.opcode = RNICPI_WR_SEND;
	ck_assert_errno(t.ops->post_send(s.qp, &wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	/* RESET -> RTR skips INIT (IBA 10.3.1). */
	a.qp_state = RNICPI_QPS_RTR;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE), EINVAL);
	/* RESET -> INIT needs P_Key index, port and access. */
	a.qp_state = RNICPI_QPS_INIT;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX), EINVAL);
	/* ... and cannot set the SQ PSN. */
	a.port_num = 1;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
					 RNICPI_QP_ACCESS_FLAGS |
					 RNICPI_QP_SQ_PSN), EINVAL);
	a.port_num = 2;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
					 RNICPI_QP_ACCESS_FLAGS), EINVAL);
	a.port_num = 1;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
				      RNICPI_QP_PKEY_INDEX | RNICPI_QP_PORT |
				      RNICPI_QP_ACCESS_FLAGS));
	ck_assert_ok(t.ops->query_qp(s.qp, &a, 0, &ia));
	ck_assert_int_eq(a.qp_state, RNICPI_QPS_INIT);
	ck_assert_int_eq(ia.qp_type, RNICPI_QPT_RC);
	ck_assert_uint_ge(ia.cap.max_send_wr, 256);

	/* INIT -> RTR without the AV. */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNICPI_QPS_RTR;
	a.path_mtu = RNICPI_MTU_1024;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_PATH_MTU), EINVAL);
	/* An AV with an empty source GID slot. */
	rxe_t_gid_v4(&gid, "127.0.0.1");
	a.ah_attr.dgid = gid;
	a.ah_attr.sgid_index = 5;
	ck_assert_errno(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE |
					 RNICPI_QP_AV | RNICPI_QP_PATH_MTU |
					 RNICPI_QP_DEST_QPN | RNICPI_QP_RQ_PSN |
					 RNICPI_QP_MAX_DEST_RD_ATOMIC |
					 RNICPI_QP_MIN_RNR_TIMER), EINVAL);

	/* Receives posted in INIT are flushed by ERR. */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 77;
	ck_assert_ok(t.ops->post_recv(s.qp, &rwr, &rbad));
	a.qp_state = RNICPI_QPS_ERR;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE));
	ck_assert_int_eq(t.ops->poll_cq(s.rcq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	/* In ERR, posts complete at once with flush errors. */
	wr.wr_id = 78;
	wr.send_flags = RNICPI_SEND_SIGNALED;
	ck_assert_ok(t.ops->post_send(s.qp, &wr, &bad));
	ck_assert_int_eq(t.ops->poll_cq(s.scq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_int_eq(wc.status, RNICPI_WC_WR_FLUSH_ERR);
	/* ERR -> RESET -> INIT again. */
	a.qp_state = RNICPI_QPS_RESET;
	ck_assert_ok(t.ops->modify_qp(s.qp, &a, RNICPI_QP_STATE));
	rxe_t_side_destroy(&t, &s);
	rxe_t_dev_close(&t);
}
END_TEST

Suite *suite_rxe_loopback(void)
{
	Suite *s = suite_create("rxe-loopback");
	TCase *tc = tcase_create("objects");

	tcase_add_checked_fixture(tc, rxe_t_netns_setup, rxe_t_netns_teardown);
	tcase_add_test(tc, test_device_queries);
	tcase_add_test(tc, test_port_taken);
	tcase_add_test(tc, test_qp_state_machine);
	tcase_add_test(tc, test_qp_out_of_descriptors);
	suite_add_tcase(s, tc);
	rxe_loopback_add_rc_cases(s); /* check_rxe_loopback_rc.c */
	rxe_loopback_add_poll_rx_cases(s); /* check_rxe_poll_rx.c */
	return s;
}
