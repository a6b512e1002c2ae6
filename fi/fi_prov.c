// SPDX-License-Identifier: MIT
/*
 * fi_prov.c - the provider entry point (fi_prov_ini), fi_getinfo and the
 * fabric: one IT-API interface adapter per fabric, named after the device.
 */
#include "config.h"
#include "fi/hfi.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/providers/fi_log.h>

#define HFI_MAX_DEVICES 32

int hfi_status_to_fi(it_status_t st)
{
	switch (st) {
	case IT_SUCCESS:
		return 0;
	case IT_ERR_FAULT:
	case IT_ERR_INVALID_LENGTH:
	case IT_ERR_INVALID_NUM_SEGMENTS:
	case IT_ERR_INVALID_DTO_FLAGS:
	case IT_ERR_INVALID_LMR:
	case IT_ERR_INVALID_PDATA_LENGTH:
	case IT_ERR_INVALID_NETADDR:
	case IT_ERR_INVALID_CONN_QUAL:
	case IT_ERR_INVALID_ADDRESS:
		return -FI_EINVAL;
	case IT_ERR_TOO_MANY_POSTS:
	case IT_ERR_QUEUE_EMPTY:
		return -FI_EAGAIN;
	case IT_ERR_INVALID_EP_STATE:
		return -FI_EOPBADSTATE;
	case IT_ERR_CONN_QUAL_BUSY:
		return -FI_EADDRINUSE;
	case IT_ERR_NO_PERMISSION:
	case IT_ERR_ACCESS:
		return -FI_EACCES;
	case IT_ERR_OP_NOT_SUPPORTED:
		return -FI_ENOSYS;
	case IT_ERR_TIMEOUT_EXPIRED:
		return -FI_ETIMEDOUT;
	case IT_ERR_INTERRUPT:
		return -FI_EINTR;
	case IT_ERR_RESOURCES:
	case IT_ERR_RESOURCE_LMR_LENGTH:
	case IT_ERR_RESOURCE_QUEUE_SIZE:
		return -FI_ENOMEM;
	case IT_ERR_INVALID_CN_EST_ID:
		return -FI_ENOENT;
	default:
		return -FI_EOTHER;
	}
}

size_t hfi_sockaddr_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

/* A socket address as an IT-API network address and a port (network
 * byte order). -FI_EINVAL for a family IT-API does not connect to. */
int hfi_sockaddr_to_net(const struct sockaddr *sa, it_net_addr_t *na,
			uint16_t *port_be)
{
	memset(na, 0, sizeof(*na));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		na->addr_type = IT_IPV4;
		na->addr.ipv4 = in->sin_addr;
		*port_be = in->sin_port;
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		na->addr_type = IT_IPV6;
		na->addr.ipv6 = in6->sin6_addr;
		*port_be = in6->sin6_port;
		return 0;
	}
	return -FI_EINVAL;
}

/* The IA's first address of @family (port 0) in @ss; -FI_ENODATA if the
 * device has none. */
int hfi_ia_address(it_ia_handle_t ia, int family, struct sockaddr_storage *ss)
{
	it_ia_info_t *ii = NULL;
	int ret = -FI_ENODATA;

	if (it_ia_query(ia, &ii) != IT_SUCCESS)
		return -FI_EOTHER;
	for (size_t s = 0; s < ii->num_spigots && ret; s++) {
		it_spigot_info_t *sp = &ii->spigot_info[s];

		for (size_t i = 0; i < sp->num_net_addr && ret; i++) {
			it_net_addr_t *na = &sp->net_addr[i];

			bool v6 = na->addr_type == IT_IPV6 ||
				  na->addr_type == IT_IB_GID;
			bool mapped = v6 &&
				      IN6_IS_ADDR_V4MAPPED(&na->addr.ipv6);

			/* RoCE names its addresses as GIDs: an IPv4 one
			 * is v4-mapped (IBA A17.8). */
			memset(ss, 0, sizeof(*ss));
			if (family == AF_INET && na->addr_type == IT_IPV4) {
				struct sockaddr_in *in = (void *)ss;

				in->sin_family = AF_INET;
				in->sin_addr = na->addr.ipv4;
				ret = 0;
			} else if (family == AF_INET && mapped) {
				struct sockaddr_in *in = (void *)ss;

				in->sin_family = AF_INET;
				memcpy(&in->sin_addr,
				       &na->addr.ipv6.s6_addr[12], 4);
				ret = 0;
			} else if (family == AF_INET6 && v6 && !mapped &&
				   !IN6_IS_ADDR_LINKLOCAL(&na->addr.ipv6)) {
				struct sockaddr_in6 *in6 = (void *)ss;

				in6->sin6_family = AF_INET6;
				in6->sin6_addr = na->addr.ipv6;
				ret = 0;
			}
		}
	}
	it_ia_info_free(ii);
	return ret;
}

/* node/service (getaddrinfo, numeric or not) as one socket address. */
static int resolve(const char *node, const char *service, int family,
		   bool passive, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = family,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;

	if (passive)
		hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(node, service, &hints, &res) != 0)
		return -FI_ENODATA;
	if (res->ai_addrlen > sizeof(*ss) ||
	    (res->ai_family != AF_INET && res->ai_family != AF_INET6)) {
		freeaddrinfo(res);
		return -FI_ENODATA;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static bool addr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)
			       ->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
}

static bool addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)
			       ->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)(const void *)b)
			       ->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr,
		       sizeof(struct in6_addr));
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)sa)
				      ->sin_addr.s_addr) >> 24) ==
		       IN_LOOPBACKNET;
	return IN6_IS_ADDR_LOOPBACK(
		&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port_be)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port_be;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port_be;
}

static uint16_t get_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_port;
	return ((const struct sockaddr_in6 *)(const void *)sa)->sin6_port;
}

/*
 * The memory registration modes: the application must handle local
 * descriptors (FI_MR_LOCAL) and provider keys (FI_MR_PROV_KEY: the key is
 * the LMR's RMR context). Virtual addresses are used when the
 * application takes them, offsets (IT_ADDR_MODE_RELATIVE) otherwise.
 * Returns the mr_mode to report, or -1 when the application cannot work
 * with us.
 */
static int mr_mode_for(uint32_t version, const struct fi_info *hints)
{
	bool old;
	int app;

	if (!hints || !hints->domain_attr)
		return FI_VERSION_LT(version, FI_VERSION(1, 5)) ?
			       FI_MR_BASIC : HFI_MR_OFFERED;
	app = hints->domain_attr->mr_mode;
	old = FI_VERSION_LT(version, FI_VERSION(1, 5)) || app == FI_MR_BASIC;
	if (app == FI_MR_BASIC || (FI_VERSION_LT(version, FI_VERSION(1, 5)) &&
				   app == FI_MR_UNSPEC))
		app = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	else if (app == FI_MR_SCALABLE)
		return -1;
	/* The FI_LOCAL_MR mode bit belongs to the old modes only: from 1.5
	 * on it is FI_MR_LOCAL (fabtests' fi_getinfo_test sets every mode
	 * bit and expects no mr_mode bit it did not ask for). */
	if (old && (hints->mode & FI_LOCAL_MR))
		app |= FI_MR_LOCAL;
	if ((app & HFI_MR_REQUIRED) != HFI_MR_REQUIRED)
		return -1;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return (app & FI_MR_VIRT_ADDR) ? FI_MR_BASIC : FI_MR_SCALABLE;
	if (old)
		return FI_MR_BASIC;	/* asked for by name, answered so */
	return app & HFI_MR_OFFERED;
}

struct addrs {
	bool have_src, have_dst;
	struct sockaddr_storage src, dst;
};

static int hints_addrs(const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct addrs *a)
{
	int family = AF_UNSPEC;
	int ret;

	memset(a, 0, sizeof(*a));
	if (hints && hints->addr_format == FI_SOCKADDR_IN)
		family = AF_INET;
	else if (hints && hints->addr_format == FI_SOCKADDR_IN6)
		family = AF_INET6;
	if (hints && hints->src_addr) {
		if (!hfi_sockaddr_len(hints->src_addr) ||
		    hints->src_addrlen < hfi_sockaddr_len(hints->src_addr))
			return -FI_ENODATA;
		memcpy(&a->src, hints->src_addr,
		       hfi_sockaddr_len(hints->src_addr));
		a->have_src = true;
	}
	if (hints && hints->dest_addr) {
		if (!hfi_sockaddr_len(hints->dest_addr) ||
		    hints->dest_addrlen < hfi_sockaddr_len(hints->dest_addr))
			return -FI_ENODATA;
		memcpy(&a->dst, hints->dest_addr,
		       hfi_sockaddr_len(hints->dest_addr));
		a->have_dst = true;
	}
	if (node || service) {
		bool source = (flags & FI_SOURCE) || !node;
		struct sockaddr_storage ss;

		ret = resolve(node, service ? service : "0", family, source,
			      &ss);
		if (ret)
			return ret;
		if (source) {
			a->src = ss;
			a->have_src = true;
		} else {
			a->dst = ss;
			a->have_dst = true;
		}
	}
	return 0;
}

static bool name_ok(const char *want, const char *name)
{
	return !want || !strcmp(want, name);
}

static bool hints_ok(const struct fi_info *hints)
{
	if (!hints)
		return true;
	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_MSG)
		return false;
	if (hints->caps & ~(HFI_CAPS | FI_SOURCE)) {
		uint64_t no = hints->caps & ~(HFI_CAPS | FI_SOURCE);

		FI_INFO(&hfi_prov, FI_LOG_CORE,
			"caps %s not offered (FI_RMA_EVENT, tagged messages, atomics: not on MSG endpoints; ofi_rxm gives RDM endpoints tagged messages and atomics)\n",
			fi_tostr(&no, FI_TYPE_CAPS));
		return false;
	}
	if (hints->addr_format != FI_FORMAT_UNSPEC &&
	    hints->addr_format != FI_SOCKADDR &&
	    hints->addr_format != FI_SOCKADDR_IN &&
	    hints->addr_format != FI_SOCKADDR_IN6)
		return false;
	if (hints->ep_attr && hints->ep_attr->protocol != FI_PROTO_UNSPEC &&
	    hints->ep_attr->protocol != FI_PROTO_IWARP &&
	    hints->ep_attr->protocol != FI_PROTO_RDMA_CM_IB_RC)
		return false;
	if (hints->domain_attr &&
	    hints->domain_attr->cq_data_size > sizeof(uint32_t)) {
		FI_INFO(&hfi_prov, FI_LOG_CORE,
			"cq_data_size %zu: remote CQ data is the transport's immediate data, 4 bytes\n",
			hints->domain_attr->cq_data_size);
		return false;
	}
	if (hints->domain_attr &&
	    (hints->domain_attr->caps & ~(FI_LOCAL_COMM | FI_REMOTE_COMM))) {
		FI_INFO(&hfi_prov, FI_LOG_CORE,
			"domain caps: no address vectors, shared or not\n");
		return false;
	}
	if ((hints->tx_attr &&
	     (hints->tx_attr->msg_order & ~HFI_MSG_ORDER_HINTS)) ||
	    (hints->rx_attr &&
	     (hints->rx_attr->msg_order & ~HFI_MSG_ORDER_HINTS))) {
		FI_INFO(&hfi_prov, FI_LOG_CORE,
			"msg_order: an RC connection keeps no WAR, SAR or data order\n");
		return false;
	}
	if (hints->tx_attr && hints->tx_attr->inject_size > HFI_INJECT_SIZE)
		return false;
	return true;
}

/* The application takes FI_RX_CQ_DATA: remote CQ data consumes a
 * receive, as immediate data does (IBA 9.4.1). */
static bool takes_rx_cq_data(const struct fi_info *hints)
{
	return !hints || (hints->mode & FI_RX_CQ_DATA) ||
	       (hints->rx_attr && (hints->rx_attr->mode & FI_RX_CQ_DATA));
}

static struct fi_info *make_info(uint32_t version, const char *dev,
				 it_ia_handle_t ia,
				 const struct sockaddr_storage *src,
				 const struct sockaddr_storage *dst,
				 const struct fi_info *hints, int mr_mode)
{
	size_t want_data = hints && hints->domain_attr ?
				   hints->domain_attr->cq_data_size :
				   0;
	size_t dev_data = hostrdma_ia_imm_data_size(ia);
	size_t data = dev_data;
	it_ia_info_t *ii = NULL;
	struct fi_info *fi;
	size_t max_msg = 1u << 30;
	uint64_t caps = HFI_CAPS;

	/* Remote CQ data where the device has immediate data (soft-RoCE,
	 * RNICs through libibverbs; not iWARP) and the application takes
	 * the receive it consumes. */
	if (!takes_rx_cq_data(hints))
		data = 0;
	if (want_data > data) {
		FI_INFO(&hfi_prov, FI_LOG_CORE,
			"%s: cq_data_size %zu: %s\n", dev, want_data,
			dev_data ? "remote CQ data consumes a receive, and the hints' mode has no FI_RX_CQ_DATA" :
				"the device has no immediate data (iWARP)");
		return NULL;
	}
	if (it_ia_query(ia, &ii) != IT_SUCCESS)
		return NULL;
	fi = fi_allocinfo();
	if (!fi) {
		it_ia_info_free(ii);
		return NULL;
	}
	if (ii->num_spigots)
		max_msg = MIN(ii->spigot_info[0].max_rc_send_len,
			      ii->spigot_info[0].max_rc_rdma_len);
	if (hints && (hints->caps & HFI_CAPS))
		caps = hints->caps & HFI_CAPS;
	if (caps & (FI_MSG | FI_RMA))
		caps |= (caps & FI_MSG ? FI_SEND | FI_RECV : 0) |
			(caps & FI_RMA ? FI_READ | FI_WRITE | FI_REMOTE_READ |
						 FI_REMOTE_WRITE :
					 0);
	caps |= FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->caps = caps;
	fi->mode = FI_VERSION_LT(version, FI_VERSION(1, 5)) ||
				   mr_mode == FI_MR_BASIC ?
			   FI_LOCAL_MR :
			   0;
	if (data) {
		fi->mode |= FI_RX_CQ_DATA;
		fi->rx_attr->mode |= FI_RX_CQ_DATA;
	}
	fi->addr_format = src->ss_family == AF_INET ? FI_SOCKADDR_IN :
						     FI_SOCKADDR_IN6;
	fi->src_addrlen = hfi_sockaddr_len((const void *)src);
	fi->src_addr = g_memdup2(src, fi->src_addrlen);
	if (dst) {
		fi->dest_addrlen = hfi_sockaddr_len((const void *)dst);
		fi->dest_addr = g_memdup2(dst, fi->dest_addrlen);
	}
	fi->tx_attr->caps = caps & (FI_MSG | FI_RMA | FI_SEND | FI_READ |
				    FI_WRITE);
	fi->tx_attr->msg_order = HFI_MSG_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = HFI_INJECT_SIZE;
	fi->tx_attr->size = HFI_TX_SIZE;
	fi->tx_attr->iov_limit = HFI_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = 1;
	fi->rx_attr->caps = caps & (FI_MSG | FI_RMA | FI_RECV |
				    FI_REMOTE_READ | FI_REMOTE_WRITE);
	fi->rx_attr->msg_order = HFI_MSG_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->size = HFI_RX_SIZE;
	fi->rx_attr->iov_limit = HFI_IOV_LIMIT;
	fi->ep_attr->type = FI_EP_MSG;
	fi->ep_attr->protocol = ii->transport_type == IT_IB_TRANSPORT ?
					FI_PROTO_RDMA_CM_IB_RC :
					FI_PROTO_IWARP;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = max_msg;
	/* RAW and WAW hold for whole messages; WAR not at all. */
	fi->ep_attr->max_order_raw_size = max_msg;
	fi->ep_attr->max_order_waw_size = max_msg;
	fi->ep_attr->max_order_war_size = 0;
	if (hints && hints->ep_attr &&
	    (hints->ep_attr->max_order_raw_size > max_msg ||
	     hints->ep_attr->max_order_waw_size > max_msg ||
	     hints->ep_attr->max_order_war_size > 0)) {
		it_ia_info_free(ii);
		fi_freeinfo(fi);
		return NULL;
	}
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	fi->domain_attr->name = g_strdup(dev);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	/* We progress on our own; an application that asks for manual
	 * progress (it will read its CQs and EQs to drive it) gets its
	 * model, which our automatic progress satisfies. */
	fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	if (hints && hints->domain_attr &&
	    hints->domain_attr->control_progress == FI_PROGRESS_MANUAL)
		fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	if (hints && hints->domain_attr &&
	    hints->domain_attr->data_progress == FI_PROGRESS_MANUAL)
		fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_DISABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = mr_mode;
	fi->domain_attr->mr_key_size = sizeof(uint32_t);
	fi->domain_attr->cq_data_size = data;
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->cntr_cnt = 256;
	fi->domain_attr->ep_cnt = 1024;
	fi->domain_attr->tx_ctx_cnt = 1024;
	fi->domain_attr->rx_ctx_cnt = 1024;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = 65536;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->name = g_strdup(dev);
	fi->fabric_attr->prov_version = HFI_PROV_VERSION;
	fi->fabric_attr->api_version = HFI_API_VERSION;
	it_ia_info_free(ii);
	return fi;
}

/*
 * The devices that answer @hints, each with the addresses it has, those
 * on loopback last (as libfabric's own IP providers order them): an
 * application that takes the first answer without naming an address,
 * as Open MPI's mtl ofi and ofi_rxm do, then gets a device its peers on
 * other hosts can reach.
 */
static int hfi_getinfo(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info)
{
	static const int families[] = { AF_INET, AF_INET6 };
	it_interface_t itf[HFI_MAX_DEVICES];
	size_t n = HFI_MAX_DEVICES, total;
	struct fi_info *head = NULL, **tail = &head;
	struct fi_info *lo_head = NULL, **lo_tail = &lo_head;
	const char *want_dom = NULL, *want_fab = NULL;
	struct addrs a;
	int mr_mode, ret;

	*info = NULL;
	if (!hints_ok(hints))
		return -FI_ENODATA;
	mr_mode = mr_mode_for(version, hints);
	if (mr_mode < 0)
		return -FI_ENODATA;
	ret = hints_addrs(node, service, flags, hints, &a);
	if (ret)
		return ret;
	if (hints && hints->domain_attr)
		want_dom = hints->domain_attr->name;
	if (hints && hints->fabric_attr)
		want_fab = hints->fabric_attr->name;

	it_interface_list(itf, &n, &total);
	for (size_t i = 0; i < n; i++) {
		it_ia_handle_t ia;

		if (!name_ok(want_dom, itf[i].name) ||
		    !name_ok(want_fab, itf[i].name))
			continue;
		if (it_ia_create(itf[i].name, 2, 1, &ia) != IT_SUCCESS)
			continue;	/* e.g. soft-RoCE's port held elsewhere */
		for (size_t f = 0; f < G_N_ELEMENTS(families); f++) {
			struct sockaddr_storage src;
			it_net_addr_t na;
			it_path_t path;
			size_t np = 1, tp;
			uint16_t port = 0;
			struct fi_info *fi;

			if (hints && ((hints->addr_format == FI_SOCKADDR_IN &&
				       families[f] != AF_INET) ||
				      (hints->addr_format == FI_SOCKADDR_IN6 &&
				       families[f] != AF_INET6)))
				continue;
			if ((a.have_src && a.src.ss_family != families[f]) ||
			    (a.have_dst && a.dst.ss_family != families[f]))
				continue;
			if (hfi_ia_address(ia, families[f], &src))
				continue;
			if (a.have_src) {
				if (!addr_is_any((void *)&a.src) &&
				    !addr_equal((void *)&a.src, (void *)&src))
					continue;
				port = get_port((void *)&a.src);
			}
			set_port(&src, port);
			if (a.have_dst) {
				hfi_sockaddr_to_net((void *)&a.dst, &na,
						    &port);
				if (it_get_pathinfo(ia, 0, &na, &np, &tp,
						    &path) != IT_SUCCESS ||
				    np != 1)
					continue;
			}
			fi = make_info(version, itf[i].name, ia, &src,
				       a.have_dst ? &a.dst : NULL, hints,
				       mr_mode);
			if (!fi)
				continue;
			if (addr_is_loopback((void *)&src)) {
				*lo_tail = fi;
				lo_tail = &fi->next;
			} else {
				*tail = fi;
				tail = &fi->next;
			}
		}
		it_ia_free(ia);
	}
	*tail = lo_head;
	*info = head;
	return head ? 0 : -FI_ENODATA;
}

/* ---- fabric ---------------------------------------------------------- */

static int hfi_fabric_close(struct fid *fid)
{
	struct hfi_fabric *fab = container_of(fid, struct hfi_fabric,
					      fabric_fid.fid);

	if (it_ia_free(fab->ia) != IT_SUCCESS)
		return -FI_EBUSY;
	g_free(fab->name);
	g_free(fab);
	return 0;
}

int hfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int hfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int hfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops hfi_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = hfi_fabric_close,
	.bind = hfi_no_bind,
	.control = hfi_no_control,
	.ops_open = hfi_no_ops_open,
};

static int hfi_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			 struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

/* fi_trywait: 0 when none of @fids has an event, so that the caller may
 * block on their wait fds. */
static int hfi_trywait(struct fid_fabric *fabric, struct fid **fids,
		       int count)
{
	for (int i = 0; i < count; i++) {
		struct pollfd pfd = { .events = POLLIN };

		if (fids[i]->fclass == FI_CLASS_CQ) {
			struct hfi_cq *cq = container_of(fids[i],
							 struct hfi_cq,
							 cq_fid.fid);
			bool stashed;

			g_mutex_lock(&cq->lock);
			stashed = !g_queue_is_empty(&cq->pending);
			g_mutex_unlock(&cq->lock);
			if (stashed)
				return -FI_EAGAIN;
			pfd.fd = cq->fd;
		} else if (fids[i]->fclass == FI_CLASS_EQ) {
			int ret = hfi_eq_idle(container_of(fids[i],
							   struct hfi_eq,
							   eq_fid.fid));

			if (ret)
				return ret;
			continue;
		} else {
			return -FI_EINVAL;
		}
		if (pfd.fd < 0)
			return -FI_EINVAL;
		if (poll(&pfd, 1, 0) > 0)
			return -FI_EAGAIN;
	}
	return 0;
}

static struct fi_ops_fabric hfi_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = hfi_domain_open,
	.passive_ep = hfi_passive_ep,
	.eq_open = hfi_eq_open,
	.wait_open = hfi_wait_open,
	.trywait = hfi_trywait,
};

static int hfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	struct hfi_fabric *fab;
	it_ia_info_t *ii = NULL;

	if (!attr || !attr->name)
		return -FI_EINVAL;
	fab = g_new0(struct hfi_fabric, 1);
	if (it_ia_create(attr->name, 2, 1, &fab->ia) != IT_SUCCESS) {
		g_free(fab);
		return -FI_ENODEV;
	}
	if (it_ia_query(fab->ia, &ii) == IT_SUCCESS) {
		fab->transport = ii->transport_type;
		it_ia_info_free(ii);
	}
	fab->name = g_strdup(attr->name);
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &hfi_fabric_fi_ops;
	fab->fabric_fid.ops = &hfi_fabric_ops;
	*fabric = &fab->fabric_fid;
	return 0;
}

static void hfi_cleanup(void)
{
}

struct fi_provider hfi_prov = {
	.version = HFI_PROV_VERSION,
	.fi_version = HFI_API_VERSION,
	.name = HFI_PROV_NAME,
	.getinfo = hfi_getinfo,
	.fabric = hfi_fabric,
	.cleanup = hfi_cleanup,
};

/* libfabric's loader looks this one symbol up (fi_provider(7)); the
 * prototype keeps -Wmissing-prototypes quiet, FI_EXT_INI exports it. */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	return &hfi_prov;
}
