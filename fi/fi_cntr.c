// SPDX-License-Identifier: MIT
/*
 * fi_cntr.c - counters (fi_cntr_open; FI_CNTR_EVENTS_COMP).
 *
 * IT-API reports completions through EVDs, which fi_cq_read drains and
 * counts. A counter's read and wait drain the EVDs of the endpoints bound
 * to it too: a direction without a CQ completes into the endpoint's own
 * EVD (dummy_evd), whose completions are only counted; a CQ's entries
 * are kept for its next fi_cq_read (hfi_cq_stash).
 */
#include "config.h"
#include "fi/hfi.h"

#include <time.h>

#define TO_CNTR(f) container_of(f, struct hfi_cntr, cntr_fid)

void hfi_cntr_count(struct hfi_ep *ep, uint64_t flags, bool ok)
{
	struct hfi_cntr *c = NULL;

	if (ep->closed)
		return;		/* its counters may be gone */
	if (flags & FI_SEND)
		c = ep->send_cntr;
	else if (flags & FI_RECV)
		c = ep->recv_cntr;
	else if (flags & FI_WRITE)
		c = ep->write_cntr;
	else if (flags & FI_READ)
		c = ep->read_cntr;
	if (!c)
		return;
	g_mutex_lock(&c->lock);
	if (ok)
		c->value++;
	else
		c->err++;
	g_mutex_unlock(&c->lock);
}

void hfi_cntr_watch(struct hfi_cntr *c, struct hfi_ep *ep)
{
	g_mutex_lock(&c->lock);
	if (!g_list_find(c->eps, ep))
		c->eps = g_list_prepend(c->eps, ep);
	g_mutex_unlock(&c->lock);
}

void hfi_cntr_forget(struct hfi_ep *ep)
{
	struct hfi_cntr *cs[] = { ep->send_cntr, ep->recv_cntr,
				  ep->write_cntr, ep->read_cntr };

	for (size_t i = 0; i < G_N_ELEMENTS(cs); i++) {
		if (!cs[i])
			continue;
		g_mutex_lock(&cs[i]->lock);
		cs[i]->eps = g_list_remove(cs[i]->eps, ep);
		g_mutex_unlock(&cs[i]->lock);
	}
}

/* Reaps the completions of the directions only counters take. The
 * endpoints stay in the list while we reap: forget waits for the lock. */
static void progress(struct hfi_cntr *c)
{
	GList *l;

	g_mutex_lock(&c->lock);
	l = g_list_copy(c->eps);
	g_mutex_unlock(&c->lock);
	for (GList *i = l; i; i = i->next) {
		struct hfi_ep *ep = i->data;
		it_event_t ev;

		g_mutex_lock(&c->lock);
		if (!g_list_find(c->eps, ep)) {
			g_mutex_unlock(&c->lock);
			continue;
		}
		/* hfi_cntr_count takes c->lock: reap unlocked, one event
		 * at a time, the endpoint held by the list. A CQ's
		 * entries are kept for its fi_cq_read. */
		for (int k = 0; k < 3; k++) {
			struct hfi_cq *cq = k == 0 ? NULL :
					    k == 1 ? ep->tx_cq : ep->rx_cq;
			it_evd_handle_t evd = k == 0 ? ep->dummy_evd :
					      cq ? cq->evd : NULL;

			if (k == 2 && ep->rx_cq == ep->tx_cq)
				break;
			while (evd && g_list_find(c->eps, ep) &&
			       it_evd_dequeue(evd, &ev) == IT_SUCCESS) {
				g_mutex_unlock(&c->lock);
				if (cq)
					hfi_cq_stash(cq, &ev);
				else
					hfi_dto_reap(NULL, &ev, NULL);
				g_mutex_lock(&c->lock);
			}
		}
		g_mutex_unlock(&c->lock);
	}
	g_list_free(l);
}

static uint64_t hfi_cntr_read(struct fid_cntr *f)
{
	struct hfi_cntr *c = TO_CNTR(f);
	uint64_t v;

	progress(c);
	g_mutex_lock(&c->lock);
	v = c->value;
	g_mutex_unlock(&c->lock);
	return v;
}

static uint64_t hfi_cntr_readerr(struct fid_cntr *f)
{
	struct hfi_cntr *c = TO_CNTR(f);
	uint64_t v;

	progress(c);
	g_mutex_lock(&c->lock);
	v = c->err;
	g_mutex_unlock(&c->lock);
	return v;
}

static int cntr_update(struct fid_cntr *f, uint64_t *field, uint64_t v,
		       bool add)
{
	struct hfi_cntr *c = TO_CNTR(f);

	g_mutex_lock(&c->lock);
	*field = add ? *field + v : v;
	g_mutex_unlock(&c->lock);
	return 0;
}

static int hfi_cntr_add(struct fid_cntr *f, uint64_t v)
{
	return cntr_update(f, &TO_CNTR(f)->value, v, true);
}

static int hfi_cntr_set(struct fid_cntr *f, uint64_t v)
{
	return cntr_update(f, &TO_CNTR(f)->value, v, false);
}

static int hfi_cntr_adderr(struct fid_cntr *f, uint64_t v)
{
	return cntr_update(f, &TO_CNTR(f)->err, v, true);
}

static int hfi_cntr_seterr(struct fid_cntr *f, uint64_t v)
{
	return cntr_update(f, &TO_CNTR(f)->err, v, false);
}

/* Until the value reaches @threshold (0), an error is counted meanwhile
 * (-FI_EAVAIL) or @timeout ms pass (-FI_ETIMEDOUT; < 0: no limit). The
 * completions come through EVDs the counter polls, so it polls. */
static int hfi_cntr_wait(struct fid_cntr *f, uint64_t threshold, int timeout)
{
	struct hfi_cntr *c = TO_CNTR(f);
	gint64 end = timeout < 0 ? G_MAXINT64 :
				   g_get_monotonic_time() + timeout * 1000LL;
	uint64_t err0, v, e;

	g_mutex_lock(&c->lock);
	err0 = c->err;
	g_mutex_unlock(&c->lock);
	for (;;) {
		progress(c);
		g_mutex_lock(&c->lock);
		v = c->value;
		e = c->err;
		g_mutex_unlock(&c->lock);
		if (v >= threshold)
			return 0;
		if (e != err0)
			return -FI_EAVAIL;
		if (g_get_monotonic_time() >= end)
			return -FI_ETIMEDOUT;
		g_usleep(20);
	}
}

static int hfi_cntr_close(struct fid *fid)
{
	struct hfi_cntr *c = container_of(fid, struct hfi_cntr, cntr_fid.fid);

	g_mutex_lock(&c->lock);
	if (c->eps) {
		g_mutex_unlock(&c->lock);
		return -FI_EBUSY;	/* an enabled endpoint still counts */
	}
	g_mutex_unlock(&c->lock);
	g_mutex_clear(&c->lock);
	g_free(c);
	return 0;
}

static struct fi_ops hfi_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_cntr_close,
	.bind = hfi_no_bind,
	.control = hfi_no_control,
	.ops_open = hfi_no_ops_open,
};

static struct fi_ops_cntr hfi_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = hfi_cntr_read,
	.readerr = hfi_cntr_readerr,
	.add = hfi_cntr_add,
	.set = hfi_cntr_set,
	.wait = hfi_cntr_wait,
	.adderr = hfi_cntr_adderr,
	.seterr = hfi_cntr_seterr,
};

int hfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context)
{
	struct hfi_domain *dom = container_of(domain, struct hfi_domain,
					      domain_fid);
	struct hfi_cntr *c;

	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
			return -FI_EINVAL;
		if (attr->wait_obj != FI_WAIT_NONE &&
		    attr->wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENOSYS;	/* no wait objects: polled */
	}
	c = g_new0(struct hfi_cntr, 1);
	g_mutex_init(&c->lock);
	c->dom = dom;
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &hfi_cntr_fi_ops;
	c->cntr_fid.ops = &hfi_cntr_ops;
	*cntr = &c->cntr_fid;
	return 0;
}
