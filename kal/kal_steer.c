/* SPDX-License-Identifier: MIT */
/*
 * kal_steer.c - one UDP port, many processes: datagrams steered within a
 * SO_REUSEPORT group by the destination QP of their InfiniBand transport
 * header (IBA 9.2: BTH bytes 5..7), for soft-RoCE's UDP port 4791 shared
 * by every process on a host.
 *
 * The kernel runs a reuseport classic BPF program with the packet's data
 * starting at the UDP payload (the UDP header pulled off) and takes the
 * value it returns as an index into the group's sockets; an index past
 * the last would make the kernel fall back to a hash over all of them,
 * which would hand a process datagrams meant for another, so the program
 * answers 0 for those itself.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <linux/filter.h>
#include <sys/socket.h>

#include "kal/kal.h"

/* BTH: opcode, flags, P_Key (2), a reserved byte, DestQP (3 bytes). A
 * 32-bit load at 4 takes the reserved byte and DestQP, network order. */
#define BTH_RSVD_DESTQP_OFF 4
#define DESTQP_MASK 0xffffffu

int kal_udp_steer_by_qpn(int fd, unsigned int qpn_shift, unsigned int nsocks)
{
	struct sock_filter code[] = {
		/* A = reserved byte and DestQP; a short datagram ends the
		 * program here, returning 0 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BTH_RSVD_DESTQP_OFF),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, DESTQP_MASK),
		BPF_STMT(BPF_ALU | BPF_RSH | BPF_K, qpn_shift),
		/* a range no socket holds: index 0 */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, nsocks, 1, 0),
		BPF_STMT(BPF_RET | BPF_A, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog;

	if (qpn_shift < 1 || qpn_shift > 23 || nsocks < 1 ||
	    nsocks > (1u << (24 - qpn_shift))) {
		g_warning("steering by QPN: shift %u with %u sockets is out of range",
			  qpn_shift, nsocks);
		return -EINVAL;
	}
	/* The struct has padding after len: zeroed, as the kernel gets it
	 * all (valgrind: uninitialised bytes in a system call). */
	memset(&prog, 0, sizeof(prog));
	prog.len = G_N_ELEMENTS(code);
	prog.filter = code;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
		       sizeof(prog)) < 0) {
		int err = errno;

		g_warning("steering by QPN on socket %d: SO_ATTACH_REUSEPORT_CBPF: %s",
			  fd, g_strerror(err));
		return -err;
	}
	return 0;
}
