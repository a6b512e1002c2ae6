/* SPDX-License-Identifier: MIT */
/*
 * kal-steer: one UDP port on 127.0.0.1 shared by a SO_REUSEPORT group,
 * each datagram delivered to the socket whose QPN range holds the BTH's
 * DestQP, and to no other (kal_udp_steer_by_qpn).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kal/kal.h"
#include "tests/suites.h"
#include "tests/testutil.h"

#define NSOCK 4
#define SHIFT 16

static int group_socket(struct sockaddr_in *sin)
{
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one,
				    sizeof(one)), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sin, sizeof(*sin)), 0);
	if (!sin->sin_port) {
		socklen_t l = sizeof(*sin);

		ck_assert_int_eq(getsockname(fd, (struct sockaddr *)sin, &l),
				 0);
	}
	return fd;
}

/* A datagram of @len bytes: a BTH (Send Only, DestQP @qpn) when 12 or
 * more, and @tag after it. */
static void send_bth(int tx, const struct sockaddr_in *to, uint32_t qpn,
		     size_t len, uint8_t tag)
{
	uint8_t b[64] = { 0x04, 0x00, 0xff, 0xff, 0x00 };

	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
	b[12] = tag;
	ck_assert_int_eq(sendto(tx, b, len, 0, (const struct sockaddr *)to,
				sizeof(*to)),
			 (ssize_t)len);
}

/* Which socket of @fds got the next datagram (waits up to 2 s), checking
 * it carries @tag and that no other socket got one. */
static int landed(const int *fds, uint8_t tag, size_t len)
{
	struct pollfd p[NSOCK];
	uint8_t b[64];
	int who = -1;

	for (int i = 0; i < NSOCK; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	ck_assert_int_ge(poll(p, NSOCK, 2000), 1);
	for (int i = 0; i < NSOCK; i++) {
		ssize_t n = recv(fds[i], b, sizeof(b), MSG_DONTWAIT);

		if (n < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			continue;
		}
		ck_assert_msg(who < 0, "datagram in sockets %d and %d", who,
			      i);
		ck_assert_int_eq(n, (ssize_t)len);
		if (len > 12)
			ck_assert_int_eq(b[12], tag);
		who = i;
	}
	return who;
}

START_TEST(test_steer_by_destqp)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fds[NSOCK], tx;
	uint8_t tag = 1;

	for (int i = 0; i < NSOCK; i++)
		fds[i] = group_socket(&sin);
	ck_assert_int_eq(kal_udp_steer_by_qpn(fds[0], SHIFT, NSOCK), 0);
	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(tx, 0);
	/* every range, its first, a middle and its last QPN, twice over
	 * so that a hash that happened to agree once shows */
	for (int round = 0; round < 2; round++) {
		for (uint32_t s = 0; s < NSOCK; s++) {
			static const uint32_t low[] = { 0, 0x123, 0xffff };

			for (unsigned int k = 0; k < 3; k++, tag++) {
				send_bth(tx, &sin, s << SHIFT | low[k], 40,
					 tag);
				ck_assert_int_eq(landed(fds, tag, 40),
						 (int)s);
			}
		}
	}
	/* a range nobody holds, the top QPN, QP 1 (the GSI): index 0 */
	send_bth(tx, &sin, NSOCK << SHIFT, 40, ++tag);
	ck_assert_int_eq(landed(fds, tag, 40), 0);
	send_bth(tx, &sin, 0xffffff, 40, ++tag);
	ck_assert_int_eq(landed(fds, tag, 40), 0);
	send_bth(tx, &sin, 1, 40, ++tag);
	ck_assert_int_eq(landed(fds, tag, 40), 0);
	/* too short for a DestQP: index 0 too, never a hash */
	for (int i = 0; i < 8; i++) {
		send_bth(tx, &sin, 3 << SHIFT, 7, 0);
		ck_assert_int_eq(landed(fds, 0, 7), 0);
	}
	close(tx);
	for (int i = 0; i < NSOCK; i++)
		close(fds[i]);
}
END_TEST

START_TEST(test_steer_bad_arguments)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(kal_udp_steer_by_qpn(fd, 0, 1), -EINVAL);
	ck_assert_int_eq(kal_udp_steer_by_qpn(fd, 24, 1), -EINVAL);
	ck_assert_int_eq(kal_udp_steer_by_qpn(fd, 16, 0), -EINVAL);
	ck_assert_int_eq(kal_udp_steer_by_qpn(fd, 16, 257), -EINVAL);
	close(fd);
}
END_TEST

Suite *suite_kal_steer(void)
{
	Suite *s = suite_create("kal-steer");
	TCase *tc = tcase_create("steer");

	tcase_add_test(tc, test_steer_by_destqp);
	tcase_add_test(tc, test_steer_bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}
