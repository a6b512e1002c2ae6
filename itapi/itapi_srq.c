/* SPDX-License-Identifier: MIT */
/*
 * itapi_srq.c - shared receive queues (it_srq_create, _free, _query,
 * _modify): one provider SRQ each, whose receives any endpoint made on
 * it takes; the endpoints' low watermarks are itapi_ep.c's.
 */
#define G_LOG_DOMAIN "hostrdma-itapi"

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "itapi/itapi_priv.h"

it_status_t it_srq_create(it_pz_handle_t pz_handle, size_t max_recv_segments,
			  size_t max_recv_dtos, it_srq_handle_t *srq_handle)
{
	struct itapi_pz *pz = ITAPI_LOOKUP(pz_handle, struct itapi_pz,
					   IT_HANDLE_TYPE_PZ);
	struct rnicpi_srq_attr sa = { 0 };
	const struct rnicpi_device_attr *d;
	struct itapi_srq *srq;
	struct ual_srq *usrq;
	it_status_t st;
	int err;

	if (!pz)
		return IT_FAIL0(IT_ERR_INVALID_PZ, "PZ handle %p is not live",
				(void *)pz_handle);
	if (!srq_handle)
		return IT_FAIL(&pz->obj, IT_ERR_FAULT, "srq_handle is NULL");
	st = itapi_ia_check(pz->obj.ia);
	if (st)
		return IT_FAIL(&pz->obj, st, "the device failed");
	d = &pz->obj.ia->attr;
	if (!(d->caps & RNICPI_DEV_CAP_SRQ))
		return IT_FAIL(&pz->obj, IT_ERR_SRQ_NOT_SUPPORTED,
			       "the provider has no shared receive queues");
	if (max_recv_dtos == 0)
		return IT_FAIL(&pz->obj, IT_ERR_INVALID_SRQ_SIZE,
			       "max_recv_dtos is 0");
	if (max_recv_dtos > d->max_srq_wr)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RECV_DTO,
			       "max_recv_dtos %zu over %u", max_recv_dtos,
			       d->max_srq_wr);
	if (max_recv_segments > d->max_srq_sge)
		return IT_FAIL(&pz->obj, IT_ERR_RESOURCE_RSEG,
			       "max_recv_segments %zu over %u",
			       max_recv_segments, d->max_srq_sge);
	sa.max_wr = (uint32_t)max_recv_dtos;
	sa.max_sge = (uint32_t)MAX(max_recv_segments, (size_t)1);
	err = ual_srq_create(pz->pd, &sa, &usrq);
	if (err)
		return IT_FAIL_ERRNO(&pz->obj, err, ITAPI_CTX_SRQ,
				     "create_srq: %s", g_strerror(-err));
	srq = g_new0(struct itapi_srq, 1);
	itapi_obj_init(&srq->obj, IT_HANDLE_TYPE_SRQ, pz->obj.ia, NULL);
	srq->pz = pz;
	srq->srq = usrq;
	srq->max_recv_dtos = sa.max_wr;
	srq->max_recv_segs = max_recv_segments;
	g_mutex_init(&srq->lock);
	srq->n_slots = sa.max_wr;
	srq->slots = g_new0(struct itapi_srq_slot, srq->n_slots);
	for (uint32_t i = 0; i < srq->n_slots; i++)
		srq->slots[i].next_free = i + 2 <= srq->n_slots ? i + 2 : 0;
	srq->free_head = srq->n_slots ? 1 : 0;
	itapi_ia_add_child(pz->obj.ia, &srq->obj);
	*srq_handle = (it_srq_handle_t)srq;
	return IT_SUCCESS;
}

void itapi_srq_destroy(struct itapi_srq *srq)
{
	int err = ual_srq_destroy(srq->srq);

	if (err)
		g_warning("%s destroy_srq: %s", srq->obj.prefix,
			  g_strerror(-err));
	itapi_ia_del_child(srq->obj.ia, &srq->obj);
	g_mutex_clear(&srq->lock);
	g_free(srq->slots);
	g_free(srq);
}

it_status_t it_srq_free(it_srq_handle_t srq_handle)
{
	struct itapi_srq *srq = ITAPI_LOOKUP(srq_handle, struct itapi_srq,
					     IT_HANDLE_TYPE_SRQ);
	guint users;
	int err;

	if (!srq)
		return IT_FAIL0(IT_ERR_INVALID_SRQ, "SRQ handle %p is not live",
				(void *)srq_handle);
	g_mutex_lock(&srq->obj.ia->lock);
	users = srq->users;
	g_mutex_unlock(&srq->obj.ia->lock);
	if (users)
		return IT_FAIL(&srq->obj, IT_ERR_SRQ_BUSY,
			       "%u endpoints use it", users);
	err = ual_srq_destroy(srq->srq);
	if (err)
		return IT_FAIL_ERRNO(&srq->obj, err, ITAPI_CTX_SRQ,
				     "destroy_srq: %s", g_strerror(-err));
	itapi_ia_del_child(srq->obj.ia, &srq->obj);
	g_mutex_clear(&srq->lock);
	g_free(srq->slots);
	g_free(srq);
	return IT_SUCCESS;
}

#define SRQ_PARAM_ALL_BITS 0x3fu

it_status_t it_srq_query(it_srq_handle_t srq_handle, it_srq_param_mask_t mask,
			 it_srq_param_t *params)
{
	struct itapi_srq *srq = ITAPI_LOOKUP(srq_handle, struct itapi_srq,
					     IT_HANDLE_TYPE_SRQ);
	bool all = mask & IT_SRQ_PARAM_ALL;

	if (!srq)
		return IT_FAIL0(IT_ERR_INVALID_SRQ, "SRQ handle %p is not live",
				(void *)srq_handle);
	if ((unsigned int)mask & ~SRQ_PARAM_ALL_BITS)
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x has unknown bits", (unsigned int)mask);
	if (!params)
		return IT_FAIL(&srq->obj, IT_ERR_FAULT, "params is NULL");
	if (all || (mask & IT_SRQ_PARAM_IA))
		params->ia = (it_ia_handle_t)srq->obj.ia;
	if (all || (mask & IT_SRQ_PARAM_PZ))
		params->pz = (it_pz_handle_t)srq->pz;
	if (all || (mask & IT_SRQ_PARAM_MAX_RECV_DTO))
		params->max_recv_dtos = srq->max_recv_dtos;
	if (all || (mask & IT_SRQ_PARAM_MAX_RECV_SEG))
		params->max_recv_segs = srq->max_recv_segs;
	if (all || (mask & IT_SRQ_PARAM_LOW_WATERMARK))
		params->low_watermark = srq->low_watermark;
	return IT_SUCCESS;
}

it_status_t it_srq_modify(it_srq_handle_t srq_handle, it_srq_param_mask_t mask,
			  const it_srq_param_t *params)
{
	struct itapi_srq *srq = ITAPI_LOOKUP(srq_handle, struct itapi_srq,
					     IT_HANDLE_TYPE_SRQ);
	const struct rnicpi_device_attr *d;
	struct rnicpi_srq_attr sa = { 0 };
	unsigned int rmask = 0;
	size_t size, lwm;
	int err;

	if (!srq)
		return IT_FAIL0(IT_ERR_INVALID_SRQ, "SRQ handle %p is not live",
				(void *)srq_handle);
	if (!params)
		return IT_FAIL(&srq->obj, IT_ERR_FAULT, "params is NULL");
	/* The size (RNICPI_SRQ_MAX_WR: srq_resizable) and the low
	 * watermark change; the rest is fixed at creation. */
	if (!mask || ((unsigned int)mask & ~(unsigned int)
		      (IT_SRQ_PARAM_LOW_WATERMARK | IT_SRQ_PARAM_MAX_RECV_DTO)))
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_MASK,
			       "mask 0x%x: only the size and the low watermark change",
			       (unsigned int)mask);
	d = &srq->obj.ia->attr;
	if ((mask & IT_SRQ_PARAM_MAX_RECV_DTO) &&
	    !(d->caps & RNICPI_DEV_CAP_RESIZE_SRQ))
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_MASK,
			       "IT_SRQ_PARAM_MAX_RECV_DTO: the device's SRQs do not resize (srq_resizable is false)");
	g_mutex_lock(&srq->lock);
	size = mask & IT_SRQ_PARAM_MAX_RECV_DTO ? params->max_recv_dtos :
						  srq->max_recv_dtos;
	lwm = mask & IT_SRQ_PARAM_LOW_WATERMARK ? params->low_watermark :
						  srq->low_watermark;
	if (size == 0 || size < srq->n_posted) {
		g_mutex_unlock(&srq->lock);
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_QUEUE_SIZE,
			       "%zu receives, %u are posted", size,
			       srq->n_posted);
	}
	if (size > d->max_srq_wr) {
		g_mutex_unlock(&srq->lock);
		return IT_FAIL(&srq->obj, IT_ERR_RESOURCE_QUEUE_SIZE,
			       "%zu receives, the device takes %u", size,
			       d->max_srq_wr);
	}
	if (lwm >= size) {
		g_mutex_unlock(&srq->lock);
		return IT_FAIL(&srq->obj, IT_ERR_INVALID_WATERMARK,
			       "low watermark %zu not below the %zu receives",
			       lwm, size);
	}
	if (mask & IT_SRQ_PARAM_MAX_RECV_DTO) {
		sa.max_wr = (uint32_t)size;
		rmask |= RNICPI_SRQ_MAX_WR;
	}
	if (mask & IT_SRQ_PARAM_LOW_WATERMARK) {
		sa.srq_limit = (uint32_t)lwm;
		rmask |= RNICPI_SRQ_LIMIT;
	}
	/* Under the lock: no receive is posted meanwhile. */
	err = ual_srq_modify(srq->srq, &sa, rmask);
	if (err) {
		g_mutex_unlock(&srq->lock);
		return IT_FAIL_ERRNO(&srq->obj, err, ITAPI_CTX_SRQ,
				     "modify_srq size %zu limit %zu: %s", size,
				     lwm, g_strerror(-err));
	}
	/* More slots when it grew; never fewer (a completion names its
	 * slot by index), the count of posted ones is the bound. */
	if (size > srq->n_slots) {
		uint32_t old = srq->n_slots;

		srq->slots = g_renew(struct itapi_srq_slot, srq->slots, size);
		memset(srq->slots + old, 0,
		       (size - old) * sizeof(*srq->slots));
		for (uint32_t i = old; i < size; i++)
			srq->slots[i].next_free =
				i + 2 <= size ? i + 2 : srq->free_head;
		srq->free_head = old + 1;
		srq->n_slots = (uint32_t)size;
	}
	srq->max_recv_dtos = size;
	g_mutex_unlock(&srq->lock);
	srq->low_watermark = lwm;
	return IT_SUCCESS;
}
