/* SPDX-License-Identifier: MIT */
/*
 * kald/kald.h - what the parts of hostrdma-kald share: the groups of
 * UDP port 4791 (kald_port.c), QP1's MAD routing (kald_gsi.c), the
 * clients and the start (kald.c), the keeper (kald_keeper.c).
 */
#ifndef HOSTRDMA_KALD_H
#define HOSTRDMA_KALD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <glib.h>

#include "kal/kal.h"
#include "vp/rxe/rxe_icrc.h"

#define ROCE_PORT 4791
#define NSLOTS KAL_HOSTSVC_NSLOTS
#define MAX_CLIENTS 1024
/* One local user may not take every range or every connection from the
 * others (root may). */
#define MAX_SLOTS_PER_UID 64
#define MAX_CLIENTS_PER_UID 128
#define DGRAM_MAX 65536

/* IBA: a MAD on QP1 behind BTH (12 bytes) and DETH (8); the CM class. */
#define BTH_DETH 20
#define MAD_HDR 24
#define MAD_CLASS_CM 0x07
#define MAD_BYTES 256
#define UD_SEND_ONLY 0x64
/* A MAD on QP1 as RoCEv2 carries it: BTH, DETH, MAD, ICRC. */
#define GSI_PKT (BTH_DETH + MAD_BYTES + IB_ICRC_BYTES)
#define REJ_INVALID_SERVICE_ID 8	/* IBA table 109 */
#define SIDR_UNSUPPORTED 1		/* IBA 12.11.2: SID not supported */
enum {
	CM_REQ = 0x10, CM_MRA, CM_REJ, CM_REP, CM_RTU, CM_DREQ, CM_DREP,
	CM_SIDR_REQ, CM_SIDR_REP, CM_LAP, CM_APR,
};

enum slot_state { SLOT_FREE, SLOT_OWNED, SLOT_QUIET };

struct client;

struct group {
	struct sockaddr_storage addr;	/* port ROCE_PORT */
	socklen_t len;
	char name[INET6_ADDRSTRLEN + 16];
	unsigned int n;			/* sockets, in the group's order */
	int fds[NSLOTS];
	guint drain[NSLOTS];		/* watch while no process holds it */
	bool handed[NSLOTS];
	int tx;				/* our answers' socket, or -1 */
	uint16_t tx_port;
};

struct slot {
	enum slot_state state;
	struct client *owner;
	gint64 last;	/* QUIET: release or last stray datagram (us) */
};

struct client {
	int fd;
	pid_t pid;
	uid_t uid;
	unsigned int slot;		/* 0: none yet */
	guint watch;
	GHashTable *fwd;		/* struct group * -> our end (int) */
};

struct kald {
	GMainLoop *loop;
	int listen_fd;
	GPtrArray *groups;
	GPtrArray *clients;
	GHashTable *sids;		/* service ID (uint64 *) -> client */
	struct slot slots[NSLOTS];
	unsigned int quiet_ms;
	uint8_t *buf;
	uint64_t strays, forwarded, unrouted, refused;
	int keep_fd;			/* to our keeper, or -1 */
};

extern struct kald K;

/*
 * The keeper: a child of the daemon that holds a copy of every socket of
 * the groups and of the daemon's end of every forwarding socket, and
 * knows which process holds which range and service ID. When the daemon
 * dies (killed, or stopped for a restart), nothing of a running process
 * closes: the group keeps its sockets in their places (a socket leaving a
 * SO_REUSEPORT group would move the last one into its index and break
 * the steering), QP1's datagrams wait in its socket, and the next daemon
 * takes it all over from the keeper (adopt()) and carries on.
 */
enum keep_kind {
	KEEP_MEMBER = 1,	/* fd: the group's socket at index */
	KEEP_FWD,		/* fd: range index's forwarding socket */
	KEEP_UNFWD,
	KEEP_SID,		/* range index holds sid */
	KEEP_UNSID,
	KEEP_END,
};

struct keep_rec {
	uint32_t magic;
	uint16_t kind;
	uint16_t index;
	int32_t pid;
	uint32_t uid;
	uint64_t sid;
	struct sockaddr_storage addr;	/* the group's */
};

/* kald_port.c: the groups of port 4791 and the QPN ranges */
void addr_name(const struct sockaddr_storage *ss, char *buf, size_t len);
bool same_addr(const struct sockaddr_storage *a,
	       const struct sockaddr_storage *b);
int group_get(const struct sockaddr_storage *ss, struct group **out);
void group_free(struct group *g);
int new_member(struct group *g);
void watch_drain(struct group *g, unsigned int i, bool on);
unsigned int slot_take(struct client *c);
void slot_release(unsigned int i);
gboolean on_tick(gpointer data);

/* kald_gsi.c: QP1 */
gboolean on_gsi(gint fd, GIOCondition cond, gpointer data);

/* kald.c: the clients */
void client_drop(struct client *c, const char *why);

/* kald_keeper.c: the keeper and the adoption of what it kept */
void keep_send(const struct keep_rec *r, int fd);
void keeper_start(const char *kpath);
void keeper_wait_gone(int fd, int ms);
void adopt(const char *kpath);

#endif
