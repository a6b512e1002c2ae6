/* SPDX-License-Identifier: MIT */
/*
 * IT-API connections in one process over siw on lo: listen, connect,
 * accept, reject with private data, private data limits, disconnect,
 * time-outs, hand-off, many connections, socket conversion.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/itapi_testutil.h"
#include "tests/suites.h"

static struct it_fix F;

static void setup(void)
{
	it_setup_siw();
	it_fix_open(&F);
}

static void teardown(void)
{
	it_fix_close(&F);
	it_teardown();
}

G_GNUC_UNUSED static it_listen_handle_t listen_any(it_conn_qual_t *q)
{
	it_listen_handle_t l;

	memset(q, 0, sizeof(*q));
	q->type = IT_IANA_PORT;
	ck_assert_it_ok(it_listen_create(F.ia, 0, F.req, IT_LISTEN_NO_FLAG, q,
					 &l));
	ck_assert_uint_ne(ntohs(q->conn_qual.port), 0);
	return l;
}

/* A free TCP port on lo (bound then released). */
G_GNUC_UNUSED static uint16_t free_port(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (void *)&in, sizeof(in)), 0);
	ck_assert_int_eq(getsockname(fd, (void *)&in, &len), 0);
	close(fd);
	return ntohs(in.sin_port);
}

START_TEST(connect_accept_send)
{
	it_ep_handle_t a = it_ep_new(&F), b = it_ep_new(&F);
	struct it_buf sa, rb;
	it_lmr_triplet_t s, r;
	it_ep_param_t p;
	it_event_t ev;
	int sends = 0, recvs = 0;

	it_buf_new(&F, &sa, 4096, IT_PRIV_LOCAL);
	it_buf_new(&F, &rb, 4096, IT_PRIV_LOCAL);
	memset(rb.mem, 0xee, rb.len);
	r = it_seg(&rb, 16, 1024);
	ck_assert_it_ok(it_post_recv(b, &r, 1, 77, IT_COMPLETION_FLAG |
							IT_NOTIFY_FLAG));
	it_connect_pair(&F, a, b);
	ck_assert_it_ok(it_ep_query(a, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_CONNECTED);
	ck_assert_it_ok(it_ep_query(b, IT_EP_PARAM_STATE, &p));
	ck_assert_int_eq(p.ep_state.rc, IT_EP_STATE_CONNECTED);

	for (size_t i = 0; i < 100; i++)
		sa.mem[i] = (unsigned char)(i * 7 + 1);
	s = it_seg(&sa, 0, 100);
	ck_assert_it_ok(it_post_send(a, &s, 1, 55,
				     IT_COMPLETION_FLAG | IT_NOTIFY_FLAG));
	while (sends + recvs < 2) {
		it_wait_event(F.dto, &ev);
		ck_assert_int_eq(ev.dto_cmpl.dto_status, IT_DTO_SUCCESS);
		if (ev.event_number == IT_DTO_SEND_CMPL_EVENT) {
			ck_assert_ptr_eq(ev.dto_cmpl.ep, a);
			ck_assert_uint_eq(ev.dto_cmpl.cookie, 55);
			sends++;
		} else {
			ck_assert_event(&ev, IT_DTO_RC_RECV_CMPL_EVENT);
			ck_assert_ptr_eq(ev.dto_cmpl.ep, b);
			ck_assert_uint_eq(ev.dto_cmpl.cookie, 77);
			ck_assert_uint_eq(ev.dto_cmpl.transferred_length, 100);
			recvs++;
		}
	}
	/* The bytes landed at offset 16 and nowhere else. */
	ck_assert_int_eq(memcmp(rb.mem + 16, sa.mem, 100), 0);
	for (size_t i = 0; i < rb.len; i++)
		if (i < 16 || i >= 116)
			ck_assert_uint_eq(rb.mem[i], 0xee);
	ck_assert_it_ok(it_ep_free(a));
	ck_assert_it_ok(it_ep_free(b));
	it_buf_free(&sa);
	it_buf_free(&rb);
}
END_TEST

Suite *suite_itapi_cm(void)
{
	Suite *s = suite_create("itapi-cm");
	TCase *tc = tcase_create("siw-lo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, connect_accept_send);
	suite_add_tcase(s, tc);
	return s;
}
