/* SPDX-License-Identifier: MIT */
/* Helpers for the ual suites. */
#include "config.h"

#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "tests/testutil_ual.h"
#include "ual/ual_private.h"

static const char *const env_vars[] = {
	UAL_ENV_PROVIDER_PATH, UAL_ENV_DEVICES, UAL_ENV_CONF, UAL_ENV_OPTIONS,
};

void ut_setup(void)
{
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(env_vars); i++)
		g_unsetenv(env_vars[i]);
	g_setenv(UAL_ENV_CONF, "", TRUE);
	g_setenv(UAL_ENV_PROVIDER_PATH, TESTPROV_DIR, TRUE);
	ual_test_set_builtins(NULL, 0);
}

void ut_teardown(void)
{
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(env_vars); i++)
		g_unsetenv(env_vars[i]);
	ual_test_reset_builtins();
}

struct ual *ut_open(void)
{
	struct ual *u = NULL;

	ck_assert_ok(ual_open(&u));
	ck_assert_ptr_nonnull(u);
	return u;
}

void ut_close(struct ual *u)
{
	ck_assert_ok(ual_close(u));
}

struct ual_device *ut_device(struct ual *u, const char *name)
{
	struct ual_device *d = ual_device_lookup(u, name);

	ck_assert_msg(d, "no device %s", name);
	return d;
}

unsigned int ut_device_count(struct ual *u)
{
	g_autoptr(GPtrArray) list = ual_device_list(u);

	return list->len;
}

bool ut_lines_contain(const GPtrArray *lines, ...)
{
	guint i;

	for (i = 0; i < lines->len; i++) {
		const char *line = lines->pdata[i];
		const char *s;
		bool all = true;
		va_list ap;

		va_start(ap, lines);
		while ((s = va_arg(ap, const char *)))
			if (!strstr(line, s))
				all = false;
		va_end(ap);
		if (all)
			return true;
	}
	return false;
}

char *ut_lines_text(const GPtrArray *lines)
{
	GString *s = g_string_new(NULL);
	guint i;

	for (i = 0; i < lines->len; i++)
		g_string_append_printf(s, "\n  %s",
				       (const char *)lines->pdata[i]);
	return g_string_free(s, FALSE);
}

char *ut_write_file(const char *text)
{
	g_autoptr(GError) error = NULL;
	char *path = NULL;
	int fd;

	fd = g_file_open_tmp("ual-test-XXXXXX.conf", &path, &error);
	ck_assert_msg(fd >= 0, "%s", error ? error->message : "?");
	close(fd);
	ck_assert(g_file_set_contents(path, text, -1, NULL));
	return path;
}

struct ual_qp *ut_qp(struct ual_pd *pd, struct ual_cq *scq,
		     struct ual_cq *rcq, struct ual_srq *srq)
{
	struct ual_qp_init_attr attr = {
		.qp_type = RNICPI_QPT_RC,
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = srq ? 0 : 8,
			 .max_send_sge = 2, .max_recv_sge = srq ? 0 : 2 },
	};
	struct ual_qp *qp = NULL;

	ck_assert_ok(ual_qp_create(pd, &attr, &qp));
	return qp;
}

void ut_qp_rts(struct ual_qp *qp, uint32_t dest_qpn)
{
	static const enum rnicpi_qp_state steps[] = {
		RNICPI_QPS_INIT, RNICPI_QPS_RTR, RNICPI_QPS_RTS,
	};
	struct rnicpi_qp_attr attr = { .dest_qp_num = dest_qpn };
	size_t i;

	for (i = 0; i < G_N_ELEMENTS(steps); i++) {
		attr.qp_state = steps[i];
		ck_assert_ok(ual_qp_modify(qp, &attr,
					   RNICPI_QP_STATE |
						   (steps[i] == RNICPI_QPS_RTR ?
							    RNICPI_QP_DEST_QPN :
							    0)));
	}
}

int ut_post_send(struct ual_qp *qp, uint64_t wr_id, struct ual_mr *mr,
		 void *addr, uint32_t len, unsigned int flags)
{
	struct rnicpi_sge sge = {
		.addr = ual_mr_iova(mr) + ((char *)addr - (char *)ual_mr_addr(mr)),
		.length = len,
		.lkey = ual_mr_lkey(mr),
	};
	struct rnicpi_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = RNICPI_WR_SEND,
		.send_flags = RNICPI_SEND_SIGNALED | flags,
	};
	const struct rnicpi_send_wr *bad = NULL;

	return ual_qp_post_send(qp, &wr, &bad);
}

int ut_post_recv(struct ual_qp *qp, uint64_t wr_id, struct ual_mr *mr,
		 void *addr, uint32_t len)
{
	struct rnicpi_sge sge = {
		.addr = ual_mr_iova(mr) + ((char *)addr - (char *)ual_mr_addr(mr)),
		.length = len,
		.lkey = ual_mr_lkey(mr),
	};
	struct rnicpi_recv_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
	};
	const struct rnicpi_recv_wr *bad = NULL;

	return ual_qp_post_recv(qp, &wr, &bad);
}

void ut_events_init(struct ut_events *e)
{
	g_mutex_init(&e->lock);
	g_cond_init(&e->cond);
	e->events = g_array_new(FALSE, TRUE, sizeof(struct ual_async_event));
}

void ut_events_clear(struct ut_events *e)
{
	g_array_unref(e->events);
	g_cond_clear(&e->cond);
	g_mutex_clear(&e->lock);
}

void ut_events_cb(const struct ual_async_event *ev, void *user_data)
{
	struct ut_events *e = user_data;

	g_mutex_lock(&e->lock);
	g_array_append_val(e->events, *ev);
	g_cond_broadcast(&e->cond);
	g_mutex_unlock(&e->lock);
}

/* Under e->lock. */
static unsigned int count_locked(struct ut_events *e,
				 enum rnicpi_event_type type)
{
	unsigned int n = 0;
	guint i;

	for (i = 0; i < e->events->len; i++)
		if (g_array_index(e->events, struct ual_async_event, i).type ==
		    type)
			n++;
	return n;
}

unsigned int ut_events_count(struct ut_events *e, enum rnicpi_event_type type)
{
	unsigned int n;

	g_mutex_lock(&e->lock);
	n = count_locked(e, type);
	g_mutex_unlock(&e->lock);
	return n;
}

bool ut_events_wait(struct ut_events *e, enum rnicpi_event_type type,
		    unsigned int count)
{
	gint64 deadline = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
	bool ok = true;

	g_mutex_lock(&e->lock);
	while (count_locked(e, type) < count && ok)
		ok = g_cond_wait_until(&e->cond, &e->lock, deadline);
	ok = count_locked(e, type) >= count;
	g_mutex_unlock(&e->lock);
	return ok;
}

int ut_link_set(const char *ifname, bool up)
{
	struct ifreq ifr = { 0 };
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	g_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	if (up)
		ifr.ifr_flags |= IFF_UP;
	else
		ifr.ifr_flags &= ~IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
out:
	close(fd);
	return err;
}
