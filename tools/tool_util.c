/* SPDX-License-Identifier: MIT */
/*
 * tool_util.c - names, addresses, IA selection and event waits for the
 * hostrdma tools, on IT-API only.
 */
#define _GNU_SOURCE
#include "tools/tool_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* tool_catch_stop_signals' flag, and the thread it interrupts. */
static volatile sig_atomic_t *stop_flag;
static pid_t stop_tid;

/* it_status_t in the standard's order (it_api.h numbers them from 0). */
static const char *const status_names[] = {
	[IT_SUCCESS] = "IT_SUCCESS",
	[IT_ERR_ABORT] = "IT_ERR_ABORT",
	[IT_ERR_ACCESS] = "IT_ERR_ACCESS",
	[IT_ERR_ADDRESS] = "IT_ERR_ADDRESS",
	[IT_ERR_AEVD_NOT_ALLOWED] = "IT_ERR_AEVD_NOT_ALLOWED",
	[IT_ERR_ASYNC_AFF_EVD_EXISTS] = "IT_ERR_ASYNC_AFF_EVD_EXISTS",
	[IT_ERR_ASYNC_UNAFF_EVD_EXISTS] = "IT_ERR_ASYNC_UNAFF_EVD_EXISTS",
	[IT_ERR_CALLBACK_EXISTS] = "IT_ERR_CALLBACK_EXISTS",
	[IT_ERR_CANNOT_RESET] = "IT_ERR_CANNOT_RESET",
	[IT_ERR_CONN_QUAL_BUSY] = "IT_ERR_CONN_QUAL_BUSY",
	[IT_ERR_EP_BUSY] = "IT_ERR_EP_BUSY",
	[IT_ERR_EP_TIMEWAIT] = "IT_ERR_EP_TIMEWAIT",
	[IT_ERR_EVD_BUSY] = "IT_ERR_EVD_BUSY",
	[IT_ERR_EVD_WAIT] = "IT_ERR_EVD_WAIT",
	[IT_ERR_EVD_QUEUE_FULL] = "IT_ERR_EVD_QUEUE_FULL",
	[IT_ERR_FAULT] = "IT_ERR_FAULT",
	[IT_ERR_HARD_HI_WATERMARK] = "IT_ERR_HARD_HI_WATERMARK",
	[IT_ERR_IA_CATASTROPHE] = "IT_ERR_IA_CATASTROPHE",
	[IT_ERR_INTERRUPT] = "IT_ERR_INTERRUPT",
	[IT_ERR_INVALID_ADDR_MODE] = "IT_ERR_INVALID_ADDR_MODE",
	[IT_ERR_INVALID_ADDRESS] = "IT_ERR_INVALID_ADDRESS",
	[IT_ERR_INVALID_AEVD] = "IT_ERR_INVALID_AEVD",
	[IT_ERR_INVALID_AH] = "IT_ERR_INVALID_AH",
	[IT_ERR_INVALID_ATIMEOUT] = "IT_ERR_INVALID_ATIMEOUT",
	[IT_ERR_INVALID_ATOMIC_OP] = "IT_ERR_INVALID_ATOMIC_OP",
	[IT_ERR_INVALID_CM_RETRY] = "IT_ERR_INVALID_CM_RETRY",
	[IT_ERR_INVALID_CN_EST_FLAGS] = "IT_ERR_INVALID_CN_EST_FLAGS",
	[IT_ERR_INVALID_CN_EST_ID] = "IT_ERR_INVALID_CN_EST_ID",
	[IT_ERR_INVALID_CONN_EVD] = "IT_ERR_INVALID_CONN_EVD",
	[IT_ERR_INVALID_CONN_QUAL] = "IT_ERR_INVALID_CONN_QUAL",
	[IT_ERR_INVALID_CONVERSION] = "IT_ERR_INVALID_CONVERSION",
	[IT_ERR_INVALID_DTO_FLAGS] = "IT_ERR_INVALID_DTO_FLAGS",
	[IT_ERR_INVALID_EP] = "IT_ERR_INVALID_EP",
	[IT_ERR_INVALID_EP_ATTR] = "IT_ERR_INVALID_EP_ATTR",
	[IT_ERR_INVALID_EP_KEY] = "IT_ERR_INVALID_EP_KEY",
	[IT_ERR_INVALID_EP_STATE] = "IT_ERR_INVALID_EP_STATE",
	[IT_ERR_INVALID_EP_TYPE] = "IT_ERR_INVALID_EP_TYPE",
	[IT_ERR_INVALID_EVD] = "IT_ERR_INVALID_EVD",
	[IT_ERR_INVALID_EVD_STATE] = "IT_ERR_INVALID_EVD_STATE",
	[IT_ERR_INVALID_EVD_TYPE] = "IT_ERR_INVALID_EVD_TYPE",
	[IT_ERR_INVALID_FLAGS] = "IT_ERR_INVALID_FLAGS",
	[IT_ERR_INVALID_HANDLE] = "IT_ERR_INVALID_HANDLE",
	[IT_ERR_INVALID_IA] = "IT_ERR_INVALID_IA",
	[IT_ERR_INVALID_IOBL] = "IT_ERR_INVALID_IOBL",
	[IT_ERR_INVALID_LENGTH] = "IT_ERR_INVALID_LENGTH",
	[IT_ERR_INVALID_LISTEN] = "IT_ERR_INVALID_LISTEN",
	[IT_ERR_INVALID_LMR] = "IT_ERR_INVALID_LMR",
	[IT_ERR_INVALID_LTIMEOUT] = "IT_ERR_INVALID_LTIMEOUT",
	[IT_ERR_INVALID_MAJOR_VERSION] = "IT_ERR_INVALID_MAJOR_VERSION",
	[IT_ERR_INVALID_MASK] = "IT_ERR_INVALID_MASK",
	[IT_ERR_INVALID_MINOR_VERSION] = "IT_ERR_INVALID_MINOR_VERSION",
	[IT_ERR_INVALID_NAME] = "IT_ERR_INVALID_NAME",
	[IT_ERR_INVALID_NETADDR] = "IT_ERR_INVALID_NETADDR",
	[IT_ERR_INVALID_NUM_SEGMENTS] = "IT_ERR_INVALID_NUM_SEGMENTS",
	[IT_ERR_INVALID_PDATA_LENGTH] = "IT_ERR_INVALID_PDATA_LENGTH",
	[IT_ERR_INVALID_PRIVS] = "IT_ERR_INVALID_PRIVS",
	[IT_ERR_INVALID_PZ] = "IT_ERR_INVALID_PZ",
	[IT_ERR_INVALID_QUEUE_SIZE] = "IT_ERR_INVALID_QUEUE_SIZE",
	[IT_ERR_INVALID_RECV_DTO] = "IT_ERR_INVALID_RECV_DTO",
	[IT_ERR_INVALID_RECV_EVD] = "IT_ERR_INVALID_RECV_EVD",
	[IT_ERR_INVALID_RECV_EVD_STATE] = "IT_ERR_INVALID_RECV_EVD_STATE",
	[IT_ERR_INVALID_REQ_EVD] = "IT_ERR_INVALID_REQ_EVD",
	[IT_ERR_INVALID_REQ_EVD_STATE] = "IT_ERR_INVALID_REQ_EVD_STATE",
	[IT_ERR_INVALID_RETRY] = "IT_ERR_INVALID_RETRY",
	[IT_ERR_INVALID_RMR] = "IT_ERR_INVALID_RMR",
	[IT_ERR_INVALID_RNR_RETRY] = "IT_ERR_INVALID_RNR_RETRY",
	[IT_ERR_INVALID_RMR_TYPE] = "IT_ERR_INVALID_RMR_TYPE",
	[IT_ERR_INVALID_RTIMEOUT] = "IT_ERR_INVALID_RTIMEOUT",
	[IT_ERR_INVALID_SOFT_EVD] = "IT_ERR_INVALID_SOFT_EVD",
	[IT_ERR_INVALID_SOURCE_PATH] = "IT_ERR_INVALID_SOURCE_PATH",
	[IT_ERR_INVALID_SPIGOT] = "IT_ERR_INVALID_SPIGOT",
	[IT_ERR_INVALID_SRQ] = "IT_ERR_INVALID_SRQ",
	[IT_ERR_INVALID_SRQ_SIZE] = "IT_ERR_INVALID_SRQ_SIZE",
	[IT_ERR_INVALID_THRESHOLD] = "IT_ERR_INVALID_THRESHOLD",
	[IT_ERR_INVALID_UD_STATUS] = "IT_ERR_INVALID_UD_STATUS",
	[IT_ERR_INVALID_UD_SVC] = "IT_ERR_INVALID_UD_SVC",
	[IT_ERR_INVALID_UD_SVC_REQ_ID] = "IT_ERR_INVALID_UD_SVC_REQ_ID",
	[IT_ERR_INVALID_WATERMARK] = "IT_ERR_INVALID_WATERMARK",
	[IT_ERR_LMR_BUSY] = "IT_ERR_LMR_BUSY",
	[IT_ERR_MISMATCH_FD] = "IT_ERR_MISMATCH_FD",
	[IT_ERR_NO_CONTEXT] = "IT_ERR_NO_CONTEXT",
	[IT_ERR_NO_PERMISSION] = "IT_ERR_NO_PERMISSION",
	[IT_ERR_OP_NOT_SUPPORTED] = "IT_ERR_OP_NOT_SUPPORTED",
	[IT_ERR_PAYLOAD_SIZE] = "IT_ERR_PAYLOAD_SIZE",
	[IT_ERR_PDATA_NOT_SUPPORTED] = "IT_ERR_PDATA_NOT_SUPPORTED",
	[IT_ERR_PRIV_OPS_UNAVAILABLE] = "IT_ERR_PRIV_OPS_UNAVAILABLE",
	[IT_ERR_PZ_BUSY] = "IT_ERR_PZ_BUSY",
	[IT_ERR_QUEUE_EMPTY] = "IT_ERR_QUEUE_EMPTY",
	[IT_ERR_RANGE] = "IT_ERR_RANGE",
	[IT_ERR_RESOURCES] = "IT_ERR_RESOURCES",
	[IT_ERR_RESOURCE_IRD] = "IT_ERR_RESOURCE_IRD",
	[IT_ERR_RESOURCE_LMR_LENGTH] = "IT_ERR_RESOURCE_LMR_LENGTH",
	[IT_ERR_RESOURCE_ORD] = "IT_ERR_RESOURCE_ORD",
	[IT_ERR_RESOURCE_QUEUE_SIZE] = "IT_ERR_RESOURCE_QUEUE_SIZE",
	[IT_ERR_RESOURCE_RECV_DTO] = "IT_ERR_RESOURCE_RECV_DTO",
	[IT_ERR_RESOURCE_REQ_DTO] = "IT_ERR_RESOURCE_REQ_DTO",
	[IT_ERR_RESOURCE_RRSEG] = "IT_ERR_RESOURCE_RRSEG",
	[IT_ERR_RESOURCE_RSEG] = "IT_ERR_RESOURCE_RSEG",
	[IT_ERR_RESOURCE_RWSEG] = "IT_ERR_RESOURCE_RWSEG",
	[IT_ERR_RESOURCE_SSEG] = "IT_ERR_RESOURCE_SSEG",
	[IT_ERR_SOFT_HI_WATERMARK] = "IT_ERR_SOFT_HI_WATERMARK",
	[IT_ERR_SRQ_BUSY] = "IT_ERR_SRQ_BUSY",
	[IT_ERR_SRQ_LOW_WATERMARK] = "IT_ERR_SRQ_LOW_WATERMARK",
	[IT_ERR_SRQ_NOT_SUPPORTED] = "IT_ERR_SRQ_NOT_SUPPORTED",
	[IT_ERR_TIMEOUT_EXPIRED] = "IT_ERR_TIMEOUT_EXPIRED",
	[IT_ERR_TOO_MANY_POSTS] = "IT_ERR_TOO_MANY_POSTS",
	[IT_ERR_WAITER_LIMIT] = "IT_ERR_WAITER_LIMIT",
};

const char *tool_status_name(it_status_t st)
{
	static __thread char buf[32];

	if ((unsigned int)st < ARRAY_SIZE(status_names) && status_names[st])
		return status_names[st];
	snprintf(buf, sizeof(buf), "status %d", (int)st);
	return buf;
}

const char *tool_dto_status_name(it_dto_status_t st)
{
	static const char *const names[] = {
		[IT_DTO_SUCCESS] = "success",
		[IT_DTO_ERR_LOCAL_LENGTH] = "local length error",
		[IT_DTO_ERR_LOCAL_EP] = "local EP error",
		[IT_DTO_ERR_LOCAL_PROTECTION] = "local protection error",
		[IT_DTO_ERR_FLUSHED] = "flushed",
		[IT_RMR_OPERATION_FAILED] = "RMR operation failed",
		[IT_DTO_ERR_BAD_RESPONSE] = "bad response",
		[IT_DTO_ERR_REMOTE_ACCESS] = "remote access error",
		[IT_DTO_ERR_REMOTE_RESPONDER] = "remote responder error",
		[IT_DTO_ERR_TRANSPORT] = "transport error",
		[IT_DTO_ERR_RECEIVER_NOT_READY] = "receiver not ready",
		[IT_DTO_ERR_PARTIAL_PACKET] = "partial packet",
		[IT_DTO_ERR_LOCAL_MM_OPERATION] = "local MM operation error",
	};

	if ((unsigned int)st < ARRAY_SIZE(names) && names[st])
		return names[st];
	return "unknown DTO status";
}

const char *tool_event_name(it_event_type_t ev)
{
	switch (ev) {
	case IT_DTO_SEND_CMPL_EVENT: return "Send completion";
	case IT_DTO_RC_RECV_CMPL_EVENT: return "receive completion";
	case IT_DTO_RDMA_WRITE_CMPL_EVENT: return "RDMA Write completion";
	case IT_DTO_RDMA_READ_CMPL_EVENT: return "RDMA Read completion";
	case IT_CM_REQ_CONN_REQUEST_EVENT: return "connection request";
	case IT_CM_MSG_CONN_ACCEPT_ARRIVAL_EVENT: return "accept arrival";
	case IT_CM_MSG_CONN_ESTABLISHED_EVENT: return "connection established";
	case IT_CM_MSG_CONN_DISCONNECT_EVENT: return "disconnect";
	case IT_CM_MSG_CONN_PEER_REJECT_EVENT: return "rejected by the peer";
	case IT_CM_MSG_CONN_NONPEER_REJECT_EVENT:
		return "rejected (not by the peer: nobody listens, or no route)";
	case IT_CM_MSG_CONN_BROKEN_EVENT: return "connection broken";
	default: return "event";
	}
}

const char *tool_transport_name(it_transport_type_t t)
{
	switch (t) {
	case IT_IB_TRANSPORT: return "InfiniBand/RoCE";
	case IT_VIA_IP_TRANSPORT: return "VIA/IP";
	case IT_VIA_FC_TRANSPORT: return "VIA/FC";
	case IT_IWARP_TCP_TRANSPORT: return "iWARP";
	case IT_VENDOR_TRANSPORT: return "vendor";
	}
	return "unknown";
}

int tool_check(const char *prog, const char *what, it_status_t st)
{
	if (st == IT_SUCCESS)
		return 0;
	fprintf(stderr, "%s: %s: %s\n", prog, what, tool_status_name(st));
	return -1;
}

int tool_parse_addr(const char *prog, const char *text, it_net_addr_t *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int rc;

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, &out->addr.ipv4) == 1) {
		out->addr_type = IT_IPV4;
		return 0;
	}
	if (inet_pton(AF_INET6, text, &out->addr.ipv6) == 1) {
		out->addr_type = IT_IPV6;
		return 0;
	}
	rc = getaddrinfo(text, NULL, &hints, &res);
	if (rc) {
		fprintf(stderr, "%s: address %s: %s\n", prog, text,
			gai_strerror(rc));
		return -1;
	}
	if (res->ai_family == AF_INET) {
		out->addr_type = IT_IPV4;
		out->addr.ipv4 =
			((struct sockaddr_in *)res->ai_addr)->sin_addr;
	} else {
		out->addr_type = IT_IPV6;
		out->addr.ipv6 =
			((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
	}
	freeaddrinfo(res);
	return 0;
}

const char *tool_addr_str(const it_net_addr_t *a, char *buf, size_t len)
{
	switch (a->addr_type) {
	case IT_IPV4:
		return inet_ntop(AF_INET, &a->addr.ipv4, buf, (socklen_t)len);
	case IT_IPV6:
		return inet_ntop(AF_INET6, &a->addr.ipv6, buf, (socklen_t)len);
	case IT_IB_GID:
		return inet_ntop(AF_INET6, &a->addr.gid, buf, (socklen_t)len);
	default:
		snprintf(buf, len, "(address type %d)", (int)a->addr_type);
		return buf;
	}
}

const char *tool_device_names(char *buf, size_t len)
{
	it_interface_t itf[64];
	size_t n = ARRAY_SIZE(itf), total, used = 0;

	it_interface_list(itf, &n, &total);
	buf[0] = 0;
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i ? ", " : "", itf[i].name);
	if (!n)
		snprintf(buf, len, "none");
	return buf;
}

/*
 * What a provider logs while a tool opens the devices one after another
 * to find one for an address (soft-RoCE: "another process on this host
 * owns soft-RoCE's UDP port 4791", when a server of ours runs on the same
 * host without hostrdma-kald) is noise when another device serves, and
 * the reason when none does. While a candidate opens, what that thread
 * logs is held (open_candidate): shown at once if the device opened (it
 * is about the device in use), kept if it did not, and what was kept is
 * shown with the tool's own message when no device served (flush_held)
 * or at once when asked to say each try (-v). Nothing is held under
 * G_DEBUG=fatal-warnings (GLib's default writer makes a warning fatal:
 * it must get there). A tool given the device (-d) sees it all as it
 * comes.
 */
static GMutex held_lock;
static bool hold_none;		/* G_DEBUG=fatal-warnings: hold nothing */
static GThread *holding;	/* the thread whose messages are held */
static GString *held_now;	/* the candidate opening */
static GString *held;		/* candidates that did not open */

static GLogWriterOutput tool_log_writer(GLogLevelFlags level,
					const GLogField *fields, gsize n,
					gpointer data)
{
	bool hold;

	g_mutex_lock(&held_lock);
	hold = holding == g_thread_self() && !hold_none &&
	       !(level & G_LOG_FLAG_FATAL) &&
	       (level & (G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE));
	if (hold) {
		g_autofree char *line =
			g_log_writer_format_fields(level, fields, n, FALSE);

		if (!held_now)
			held_now = g_string_new(NULL);
		g_string_append_printf(held_now, "%s\n", line);
	}
	g_mutex_unlock(&held_lock);
	return hold ? G_LOG_WRITER_HANDLED :
		      g_log_writer_default(level, fields, n, data);
}

/* it_ia_create of a candidate device, its provider's messages held. */
static it_status_t open_candidate(const char *name, it_ia_handle_t *ia)
{
	it_status_t st;

	g_mutex_lock(&held_lock);
	holding = g_thread_self();
	g_mutex_unlock(&held_lock);
	st = it_ia_create(name, 2, 1, ia);
	g_mutex_lock(&held_lock);
	holding = NULL;
	if (held_now && held_now->len) {
		if (st == IT_SUCCESS) {
			fputs(held_now->str, stderr);
		} else {
			if (!held)
				held = g_string_new(NULL);
			g_string_append(held, held_now->str);
		}
		g_string_truncate(held_now, 0);
	}
	g_mutex_unlock(&held_lock);
	return st;
}

/* What the candidates that did not open said, once. */
static void flush_held(void)
{
	g_mutex_lock(&held_lock);
	if (held && held->len) {
		fputs(held->str, stderr);
		g_string_truncate(held, 0);
	}
	g_mutex_unlock(&held_lock);
}

static it_ia_handle_t open_named(const char *prog, const char *name)
{
	char names[512];
	it_ia_handle_t ia;
	it_status_t st = it_ia_create(name, 2, 1, &ia);

	if (st == IT_ERR_INVALID_NAME)
		fprintf(stderr, "%s: there is no device %s (%s); the devices here: %s\n",
			prog, name, tool_status_name(st),
			tool_device_names(names, sizeof(names)));
	else if (st == IT_ERR_RESOURCES)
		fprintf(stderr, "%s: device %s is held by another process (%s)\n",
			prog, name, tool_status_name(st));
	else if (st != IT_SUCCESS)
		fprintf(stderr, "%s: device %s did not open (%s)\n", prog,
			name, tool_status_name(st));
	return st == IT_SUCCESS ? ia : NULL;
}

const char *tool_conn_failure(const it_net_addr_t *dst, uint16_t port,
			      it_status_t st, const it_event_t *ev,
			      char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN + 16];

	tool_addr_str(dst, a, sizeof(a));
	if (st == IT_ERR_TIMEOUT_EXPIRED)
		snprintf(buf, len, "no answer from %s port %u within %llu s (%s)",
			 a, port, TOOL_WAIT_US / 1000000, tool_status_name(st));
	else if (st != IT_SUCCESS)
		snprintf(buf, len, "waiting for the connection to %s port %u: %s",
			 a, port, tool_status_name(st));
	else if (ev->event_number == IT_CM_MSG_CONN_PEER_REJECT_EVENT)
		snprintf(buf, len, "the server at %s port %u rejected the connection (IT_CM_MSG_CONN_PEER_REJECT_EVENT)",
			 a, port);
	else if (ev->event_number != IT_CM_MSG_CONN_NONPEER_REJECT_EVENT)
		snprintf(buf, len, "expected a connection established, got a %s (0x%x)",
			 tool_event_name(ev->event_number),
			 (unsigned int)ev->event_number);
	else if (ev->conn.reject_reason_code == IT_CN_REJ_TIMEOUT)
		snprintf(buf, len, "connection to %s port %u timed out: no answer (IT_CN_REJ_TIMEOUT)",
			 a, port);
	else if (ev->conn.reject_reason_code == IT_CN_REJ_BAD_PATH)
		snprintf(buf, len, "%s is unreachable: no route or host down (IT_CN_REJ_BAD_PATH)",
			 a);
	else
		snprintf(buf, len, "connection refused: nobody listens on port %u at %s (IT_CM_MSG_CONN_NONPEER_REJECT_EVENT)",
			 port, a);
	return buf;
}

void tool_sel_init(struct tool_sel *s, const char *prog, const char *device,
		   const it_net_addr_t *dst, uint16_t port, bool verbose)
{
	size_t total;

	memset(s, 0, sizeof(*s));
	/* What an earlier selection's candidates said is not about this */
	g_mutex_lock(&held_lock);
	if (held)
		g_string_truncate(held, 0);
	g_mutex_unlock(&held_lock);
	s->prog = prog;
	s->device = device;
	s->dst = *dst;
	s->port = port;
	s->verbose = verbose;
	if (!device) {
		s->n = ARRAY_SIZE(s->itf);
		it_interface_list(s->itf, &s->n, &total);
	}
}

static bool path_to(it_ia_handle_t ia, const it_net_addr_t *dst,
		    it_path_t *path)
{
	size_t np = 1, total;

	return it_get_pathinfo(ia, 0, dst, &np, &total, path) == IT_SUCCESS &&
	       np == 1;
}

it_ia_handle_t tool_sel_next(struct tool_sel *s, it_path_t *path)
{
	char text[INET6_ADDRSTRLEN + 16];
	it_ia_handle_t ia;

	tool_addr_str(&s->dst, text, sizeof(text));
	if (s->device) {
		if (s->next++)
			goto none;
		ia = tool_ia_for_dest(s->prog, s->device, &s->dst, path);
		s->current = s->device;
		s->tried += ia != NULL;
		return ia;
	}
	while (s->next < s->n) {
		const char *name = s->itf[s->next++].name;
		it_status_t st = open_candidate(name, &ia);

		if (st != IT_SUCCESS) {
			s->unopened++;
			/* -v (ping's -d): the device's own reason too */
			if (s->verbose)
				flush_held();
			if (s->verbose)
				fprintf(stderr, "%s: %s: did not open (%s), next device\n",
					s->prog, name, tool_status_name(st));
			continue;
		}
		if (!path_to(ia, &s->dst, path)) {
			it_ia_free(ia);
			continue;
		}
		s->current = name;
		s->tried++;
		if (s->verbose)
			fprintf(stderr, "%s: trying %s to reach %s\n", s->prog,
				name, text);
		return ia;
	}
none:
	if (s->device)
		return NULL;	/* said by tool_ia_for_dest or the outcome */
	flush_held();
	if (!s->n)
		fprintf(stderr, "%s: no RDMA devices here (hostrdma-info -l lists them)\n",
			s->prog);
	else if (!s->tried && s->unopened)
		fprintf(stderr, "%s: no RDMA device reaches %s (%zu devices, "
			"%zu did not open)\n", s->prog, text, s->n,
			s->unopened);
	else if (!s->tried)
		fprintf(stderr, "%s: no RDMA device reaches %s (%zu devices)\n",
			s->prog, text, s->n);
	else if (s->tried > 1)
		fprintf(stderr, "%s: none of the %zu devices with a path to %s connected\n",
			s->prog, s->tried, text);
	return NULL;
}

int tool_sel_outcome(struct tool_sel *s, it_status_t st,
		     const it_event_t *ev)
{
	char why[256];

	if (st == IT_SUCCESS &&
	    ev->event_number == IT_CM_MSG_CONN_ESTABLISHED_EVENT) {
		if (s->verbose)
			fprintf(stderr, "%s: connected over %s\n", s->prog,
				s->current);
		return 0;
	}
	tool_conn_failure(&s->dst, s->port, st, ev, why, sizeof(why));
	fprintf(stderr, "%s: %s: %s\n", s->prog, s->current, why);
	if (st == IT_ERR_TIMEOUT_EXPIRED ||
	    (st == IT_SUCCESS &&
	     ev->event_number == IT_CM_MSG_CONN_NONPEER_REJECT_EVENT))
		return 1;
	return -1;
}

it_ia_handle_t tool_ia_for_dest(const char *prog, const char *device,
				const it_net_addr_t *dst, it_path_t *path)
{
	it_interface_t itf[64];
	size_t n = ARRAY_SIZE(itf), total, np;
	char text[INET6_ADDRSTRLEN + 16];
	it_ia_handle_t ia;
	it_status_t st;

	if (device) {
		ia = open_named(prog, device);
		if (!ia)
			return NULL;
		np = 1;
		st = it_get_pathinfo(ia, 0, dst, &np, &total, path);
		if (st == IT_SUCCESS && np == 1)
			return ia;
		fprintf(stderr, "%s: device %s has no path to %s (%s)\n",
			prog, device, tool_addr_str(dst, text, sizeof(text)),
			st == IT_SUCCESS ? "no route through its interface" :
					   tool_status_name(st));
		it_ia_free(ia);
		return NULL;
	}
	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n; i++) {
		if (open_candidate(itf[i].name, &ia) != IT_SUCCESS)
			continue;
		np = 1;
		if (it_get_pathinfo(ia, 0, dst, &np, &total, path) ==
			    IT_SUCCESS && np == 1)
			return ia;
		it_ia_free(ia);
	}
	flush_held();
	fprintf(stderr, "%s: no RDMA device reaches %s (%zu devices)\n", prog,
		tool_addr_str(dst, text, sizeof(text)), n);
	return NULL;
}

/* @a equals @b; a RoCE GID stands for the IP address it maps (an
 * IPv4-mapped GID for the IPv4 address, any other for the IPv6 one). */
static bool addr_equal(const it_net_addr_t *a, const it_net_addr_t *b)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t *a16 = a->addr_type == IT_IPV4 ? NULL :
			     a->addr_type == IT_IB_GID ? a->addr.gid.s6_addr :
							 a->addr.ipv6.s6_addr;
	const uint8_t *b16 = b->addr_type == IT_IPV4 ? NULL :
			     b->addr_type == IT_IB_GID ? b->addr.gid.s6_addr :
							 b->addr.ipv6.s6_addr;

	if (!a16 && !b16)
		return a->addr.ipv4.s_addr == b->addr.ipv4.s_addr;
	if (a16 && b16)
		return !memcmp(a16, b16, 16);
	if (!a16)
		return !memcmp(b16, v4map, 12) &&
		       !memcmp(b16 + 12, &a->addr.ipv4, 4);
	return !memcmp(a16, v4map, 12) && !memcmp(a16 + 12, &b->addr.ipv4, 4);
}

/* One of @ia's spigots holds @addr. */
static bool ia_holds(it_ia_handle_t ia, const it_net_addr_t *addr)
{
	it_ia_info_t *info;
	bool mine = false;

	if (it_ia_query(ia, &info) != IT_SUCCESS)
		return false;
	for (size_t s = 0; s < info->num_spigots; s++) {
		it_spigot_info_t *sp = &info->spigot_info[s];

		for (size_t j = 0; j < sp->num_net_addr; j++)
			mine |= addr_equal(&sp->net_addr[j], addr);
	}
	it_ia_info_free(info);
	return mine;
}

it_ia_handle_t tool_ia_owning(const char *prog, const char *device,
			      const it_net_addr_t *addr)
{
	it_interface_t itf[64];
	size_t n = ARRAY_SIZE(itf), total;
	char text[INET6_ADDRSTRLEN + 16];

	if (device)
		return open_named(prog, device);
	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n; i++) {
		it_ia_handle_t ia;

		if (open_candidate(itf[i].name, &ia) != IT_SUCCESS)
			continue;
		if (ia_holds(ia, addr))
			return ia;
		it_ia_free(ia);
	}
	flush_held();
	fprintf(stderr, "%s: no RDMA device holds the address %s\n", prog,
		tool_addr_str(addr, text, sizeof(text)));
	return NULL;
}

int tool_listen(const char *prog, const char *device, const char *bind,
		uint16_t port, size_t req_depth, bool quiet,
		void (*ready)(void *arg), void *arg, it_ia_handle_t *ia,
		it_evd_handle_t *req, it_listen_handle_t *listen)
{
	it_conn_qual_t q = { .type = IT_IANA_PORT };
	struct {
		it_ia_handle_t ia;
		it_evd_handle_t req;
		it_listen_handle_t l;
		char name[IT_INTERFACE_NAME_SIZE];
	} cand[32];
	it_interface_t itf[32];
	size_t n = ARRAY_SIZE(itf), total, nc = 0, busy = 0;
	struct pollfd pfd[32];
	char busy_on[256] = "";
	int chosen = -1;

	it_net_addr_t a = { 0 };
	char text[INET6_ADDRSTRLEN + 16];
	it_status_t st;

	q.conn_qual.port = htons(port);
	if (bind && tool_parse_addr(prog, bind, &a))
		return -1;
	if (device) {
		*ia = tool_ia_owning(prog, device, &a);
		if (!*ia)
			return -1;
		if (tool_check(prog, "it_evd_create",
			       it_evd_create(*ia, IT_CM_REQ_EVENT_STREAM, 0,
					     req_depth, 0, NULL, req, NULL)))
			return -1;
		st = it_listen_create(*ia, 0, *req, IT_LISTEN_CONN_QUAL_INPUT,
				      &q, listen);
		if (st == IT_ERR_CONN_QUAL_BUSY) {
			fprintf(stderr, "%s: port %u is in use on %s (%s)\n",
				prog, port, device, tool_status_name(st));
			return -1;
		}
		if (tool_check(prog, "it_listen_create", st))
			return -1;
		if (!quiet)
			fprintf(stderr, "%s: waiting for a client on port %u\n",
				prog, port);
		if (ready)
			ready(arg);
		return 0;
	}
	/* Every device (with @bind: every one holding that address). */
	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n && nc < ARRAY_SIZE(cand); i++) {
		int fd = -1;

		if (it_ia_create(itf[i].name, 2, 1, &cand[nc].ia) !=
		    IT_SUCCESS)
			continue;	/* e.g. soft-RoCE held elsewhere */
		if (bind && !ia_holds(cand[nc].ia, &a)) {
			it_ia_free(cand[nc].ia);
			continue;
		}
		st = it_evd_create(cand[nc].ia, IT_CM_REQ_EVENT_STREAM,
				   IT_EVD_CREATE_FD, req_depth, 0, NULL,
				   &cand[nc].req, &fd);
		if (st == IT_SUCCESS)
			st = it_listen_create(cand[nc].ia, 0, cand[nc].req,
					      IT_LISTEN_CONN_QUAL_INPUT, &q,
					      &cand[nc].l);
		if (st != IT_SUCCESS) {
			if (st == IT_ERR_CONN_QUAL_BUSY) {
				size_t k = strlen(busy_on);

				snprintf(busy_on + k, sizeof(busy_on) - k,
					 "%s%s", busy ? ", " : "",
					 itf[i].name);
				busy++;
			}
			it_ia_free(cand[nc].ia);
			continue;
		}
		snprintf(cand[nc].name, sizeof(cand[nc].name), "%s",
			 itf[i].name);
		pfd[nc].fd = fd;
		pfd[nc].events = POLLIN;
		nc++;
	}
	if (!nc && busy) {
		fprintf(stderr, "%s: port %u is in use (IT_ERR_CONN_QUAL_BUSY)\n",
			prog, port);
		return -1;
	}
	/* Some devices only: the server runs, and says where it does not. */
	if (nc && busy)
		fprintf(stderr, "%s: port %u is in use on %s; listening on the "
			"other devices\n", prog, port, busy_on);
	if (!nc) {
		fprintf(stderr, "%s: no RDMA device could listen on port %u%s%s\n",
			prog, port, bind ? " at " : "",
			bind ? tool_addr_str(&a, text, sizeof(text)) : "");
		return -1;
	}
	if (!quiet)
		fprintf(stderr, "%s: waiting for a client on port %u (%zu devices)\n",
			prog, port, nc);
	if (ready)
		ready(arg);
	while (chosen < 0) {
		/* With tool_catch_stop_signals, a signal that came just
		 * before poll began shows in the flag: look every 100 ms. */
		int k = poll(pfd, nc, stop_flag ? 100 : -1);

		if (k < 0 || (stop_flag && *stop_flag)) {
			if (k < 0 && errno != EINTR)
				continue;
			/* A signal the tool handles (SIGINT, SIGTERM): it
			 * asks to stop, as it_evd_wait's IT_ERR_INTERRUPT
			 * does on the single-device path. */
			for (size_t i = 0; i < nc; i++)
				it_ia_free(cand[i].ia);
			return 1;
		}
		for (size_t i = 0; i < nc && chosen < 0; i++)
			if (pfd[i].revents & POLLIN)
				chosen = (int)i;
	}
	for (size_t i = 0; i < nc; i++)
		if ((int)i != chosen)
			it_ia_free(cand[i].ia);
	*ia = cand[chosen].ia;
	*req = cand[chosen].req;
	*listen = cand[chosen].l;
	if (!quiet)
		fprintf(stderr, "%s: connection request on %s\n", prog,
			cand[chosen].name);
	return 0;
}

int tool_wait_event(const char *prog, it_evd_handle_t evd,
		    it_event_type_t type, uint64_t timeout_us, it_event_t *ev)
{
	size_t nmore;
	it_status_t st = it_evd_wait(evd, timeout_us, ev, &nmore);

	return tool_check_event(prog, type, st, ev);
}

int tool_check_event(const char *prog, it_event_type_t type, it_status_t st,
		     const it_event_t *ev)
{
	if (st != IT_SUCCESS) {
		fprintf(stderr, "%s: waiting for a %s: %s\n", prog,
			tool_event_name(type), tool_status_name(st));
		return -1;
	}
	if (ev->event_number != type) {
		fprintf(stderr, "%s: expected a %s, got a %s (0x%x)\n", prog,
			tool_event_name(type), tool_event_name(ev->event_number),
			(unsigned int)ev->event_number);
		return -1;
	}
	if ((type & IT_EVENT_STREAM_MASK) == IT_DTO_EVENT_STREAM &&
	    ev->dto_cmpl.dto_status != IT_DTO_SUCCESS) {
		fprintf(stderr, "%s: %s failed: %s\n", prog,
			tool_event_name(type),
			tool_dto_status_name(ev->dto_cmpl.dto_status));
		return -1;
	}
	return 0;
}

uint64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tool_raise_memlock(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return;
	/* Root may lift the hard limit too (CAP_SYS_RESOURCE). */
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) == 0)
		return;
	getrlimit(RLIMIT_MEMLOCK, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_MEMLOCK, &rl);
}

uint64_t tool_memlock_limit(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct cap[_LINUX_CAPABILITY_U32S_3];
	struct rlimit rl;

	if (syscall(SYS_capget, &hdr, cap) == 0 &&
	    (cap[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
	     CAP_TO_MASK(CAP_IPC_LOCK)))
		return UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return rl.rlim_cur;
}

static void on_stop_signal(int sig)
{
	int saved = errno;

	*stop_flag = 1;
	if ((pid_t)syscall(SYS_gettid) != stop_tid)
		syscall(SYS_tgkill, getpid(), stop_tid, sig);
	errno = saved;
}

void tool_catch_stop_signals(volatile sig_atomic_t *flag)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	stop_flag = flag;
	stop_tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void tool_init(const char *prog)
{
	const char *dbg = g_getenv("G_DEBUG");

	/* Once per process, before anything logs (GLib's rule) */
	hold_none = dbg && strstr(dbg, "fatal-warnings");
	g_log_set_writer_func(tool_log_writer, NULL, NULL);
	setlocale(LC_ALL, "");
	/* Numbers stay C's ("1234.56"): scripts read the tables as they
	 * read perftest's and rping's, which never set a locale. */
	setlocale(LC_NUMERIC, "C");
	g_set_prgname(prog);
}

int tool_parse_options(const char *prog, GOptionContext *ctx, int *argc,
		       char ***argv)
{
	g_autoptr(GError) err = NULL;

	if (g_option_context_parse(ctx, argc, argv, &err))
		return 0;
	fprintf(stderr, "%s: %s\nTry `%s --help'.\n", prog, err->message,
		prog);
	return -1;
}

int tool_parse_uint(const char *prog, const char *opt, const char *text,
		    guint64 lo, guint64 hi, guint64 *out)
{
	g_autoptr(GError) err = NULL;

	/* Base 10 only, as perftest and rping read their numbers; no sign,
	 * no suffix, nothing after the digits. */
	if (g_ascii_string_to_unsigned(text, 10, lo, hi, out, &err))
		return 0;
	fprintf(stderr, "%s: %s %s: %s\n", prog, opt, text, err->message);
	return -1;
}
