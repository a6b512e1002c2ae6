/* SPDX-License-Identifier: MIT */
/*
 * rnicpi.h - the hostrdma verbs provider interface (RNICPI).
 *
 * A verbs provider is a shared object (or a built-in module) that turns
 * one network interface into an RDMA device. It hands the core one
 * struct rnicpi_provider through its entry point; the core then asks it
 * to create devices on network interfaces and drives each device through
 * struct rnicpi_device_ops. Upward, the provider reports asynchronous
 * events and connection outcomes through struct rnicpi_core_ops.
 *
 * Conventions, for every op below unless its comment says otherwise:
 *  - Return 0 on success or a negative errno. -EOPNOTSUPP means "this
 *    provider does not do that"; the core answers it for any op a provider
 *    leaves NULL, so a provider fills only what it supports.
 *  - Mandatory ops: device_destroy, query_device and query_port of
 *    struct rnicpi_device_ops (and device_create of the provider). The
 *    core checks them on the provider's first device: a table without
 *    one of them gets that device destroyed (when it can be) and the
 *    provider refused, with a warning naming the provider and the op;
 *    none of its devices is ever listed. Every other op is optional.
 *  - Objects are allocated by the provider, which embeds the generic part
 *    (struct rnicpi_pd, ...) in its own structure and returns a pointer to
 *    the generic part; it gets back with container_of(). The generic part's
 *    `core_ctx` belongs to the core: the provider never reads or writes it
 *    except to hand it back in events.
 *  - A create op fills its out pointer only on success. A destroy op
 *    either frees everything and returns 0, or fails and changes nothing;
 *    once it has returned, no upcall names that object any more.
 *    The core never destroys a parent before its children (a PD before its
 *    MRs, a CQ before the QPs using it); providers need not check that.
 *  - Work requests, SGE lists and attribute structures passed in are
 *    owned by the caller and valid only during the call.
 *  - Data-path ops (post_send, post_recv, post_srq_recv, poll_cq,
 *    req_notify_cq) may be called from any thread, concurrently on
 *    different objects and on the same object; the provider serialises.
 *    Control-path ops on one object are serialised by the core.
 *  - Values are in host byte order unless a field says "big-endian".
 *
 * ABI: RNICPI_ABI_VERSION changes whenever an existing structure or
 * enum value changes meaning or layout. Appending an op to
 * struct rnicpi_device_ops does not: the table starts with its size,
 * and the core treats ops past the provider's size as NULL.
 */
#ifndef RNICPI_H
#define RNICPI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this interface. The core refuses a provider built against
 * another version, naming both. */
#define RNICPI_ABI_VERSION 1u

/* Name of the one symbol a provider shared object exports: a function of
 * type rnicpi_provider_entry_fn. */
#define RNICPI_ENTRY_SYMBOL "rnicpi_provider_entry"

#define RNICPI_IFNAMSIZ 16   /* same as the kernel's IFNAMSIZ */
#define RNICPI_DEVNAME_MAX 64 /* "<provider>_<ifname>" and its NUL */
#define RNICPI_MAX_HWADDR 32

struct rnicpi_provider;
struct rnicpi_device;
struct rnicpi_device_ops;
struct rnicpi_core_ops;

/* ------------------------------------------------------------------ */
/* Transports, network interfaces, provider registration               */
/* ------------------------------------------------------------------ */

enum rnicpi_transport {
	RNICPI_TRANSPORT_IWARP = 1, /* RDMAP/DDP/MPA over TCP (RFC 5040-5044) */
	RNICPI_TRANSPORT_ROCE = 2,  /* InfiniBand transport over UDP 4791 */
	RNICPI_TRANSPORT_IB = 3,    /* native InfiniBand link layer */
};

enum rnicpi_netdev_flags {
	RNICPI_NETDEV_UP = 1u << 0,       /* administratively up (IFF_UP) */
	RNICPI_NETDEV_RUNNING = 1u << 1,  /* carrier present (IFF_RUNNING) */
	RNICPI_NETDEV_LOOPBACK = 1u << 2, /* the loopback interface */
};

/*
 * A network interface as the core sees it. Passed to netdev_supported,
 * device_create and netdev_event; the `addrs` array belongs to the core and
 * is valid only during that call (copy what you keep).
 */
struct rnicpi_netdev {
	int ifindex;
	char ifname[RNICPI_IFNAMSIZ];
	uint32_t mtu;		/* IP MTU in bytes */
	unsigned int flags;	/* enum rnicpi_netdev_flags */
	uint8_t hwaddr[RNICPI_MAX_HWADDR];
	uint32_t hwaddr_len;	/* 0 for loopback */
	const struct sockaddr_storage *addrs; /* AF_INET / AF_INET6 addresses */
	size_t n_addrs;
};

enum rnicpi_netdev_event {
	RNICPI_NETDEV_CHANGE = 1, /* flags or MTU changed */
	RNICPI_NETDEV_ADDR_ADD,   /* an address was added */
	RNICPI_NETDEV_ADDR_DEL,   /* an address was removed */
};

/* One configuration setting for a device ("mpa_crc" = "required"). The
 * core reads them from the configuration file and environment; a list is
 * terminated by an entry with key == NULL. */
struct rnicpi_option {
	const char *key;
	const char *value;
};

/*
 * What a provider hands the core. Static storage in the provider; the core
 * keeps the pointer for as long as the provider is loaded.
 */
struct rnicpi_provider {
	/* RNICPI_ABI_VERSION as the provider was compiled. Checked first.
	 * abi_version, size and name keep their place in every ABI version,
	 * so that the core can name the provider it refuses. */
	uint32_t abi_version;
	/* sizeof(struct rnicpi_provider) as the provider was compiled. */
	uint32_t size;
	/* Short lower-case name, also the device-name prefix: "siw", "rxe". */
	const char *name;
	/* One line for humans: "soft-iWARP (RDMAP/DDP/MPA over TCP)". */
	const char *description;
	enum rnicpi_transport transport;

	/*
	 * Can this provider run a device on @nd? 0 if yes; otherwise a
	 * negative errno (-ENODEV wrong link type, -EADDRNOTAVAIL no usable
	 * address ...) the core logs when the user asked for that device by
	 * name. Optional: NULL means every interface.
	 */
	int (*netdev_supported)(const struct rnicpi_netdev *nd);

	/*
	 * Create a device bound to @nd, named @name by the core, with the
	 * settings in @options (NULL or a NULL-terminated list; an unknown key
	 * or bad value is -EINVAL with a log line naming it). @core is the
	 * upcall table the device reports through; it outlives the device.
	 * On success *@out points to the device's generic part, with `ops`
	 * set; the core fills `provider`, `core` and `core_ctx` afterwards.
	 * The device is owned by the core until it calls ops->device_destroy.
	 */
	int (*device_create)(const struct rnicpi_netdev *nd, const char *name,
			     const struct rnicpi_option *options,
			     const struct rnicpi_core_ops *core,
			     struct rnicpi_device **out);

	/*
	 * Optional, and read only when `size` covers it (providers built
	 * before it are still loaded): the name of the device this provider
	 * makes on @nd, for providers whose devices have names of their own
	 * (the kernel's "mlx5_0", "siw0"). Writes a NUL-terminated name of
	 * less than @len bytes to @buf and returns 0, or a negative errno
	 * (-ENODEV: none of its devices is on @nd). NULL: the core names
	 * the device "<name>_<ifname>".
	 */
	int (*device_name)(const struct rnicpi_netdev *nd, char *buf,
			   size_t len);
};

/* The size of a provider descriptor from before device_name. */
#define RNICPI_PROVIDER_SIZE_V1 offsetof(struct rnicpi_provider, device_name)

/* The entry point. Returns the provider's static description, never NULL. */
typedef const struct rnicpi_provider *(*rnicpi_provider_entry_fn)(void);

/*
 * RNICPI_PROVIDER_DEFINE(siw, &siw_provider) in exactly one file of a
 * provider defines its entry point: the exported rnicpi_provider_entry()
 * for a loadable module, or rnicpi_builtin_siw() when the build links the
 * provider into the core (RNICPI_BUILTIN defined).
 */
#ifdef RNICPI_BUILTIN
#define RNICPI_PROVIDER_DEFINE(short_name, provider_ptr)                    \
	const struct rnicpi_provider *rnicpi_builtin_##short_name(void);     \
	const struct rnicpi_provider *rnicpi_builtin_##short_name(void)      \
	{                                                                    \
		return (provider_ptr);                                       \
	}
#else
#define RNICPI_PROVIDER_DEFINE(short_name, provider_ptr)                    \
	__attribute__((visibility("default")))                              \
	const struct rnicpi_provider *rnicpi_provider_entry(void);           \
	__attribute__((visibility("default")))                              \
	const struct rnicpi_provider *rnicpi_provider_entry(void)            \
	{                                                                    \
		return (provider_ptr);                                       \
	}
#endif

/* ------------------------------------------------------------------ */
/* Generic parts of provider objects                                   */
/* ------------------------------------------------------------------ */

struct rnicpi_device {
	const struct rnicpi_device_ops *ops;	    /* set by the provider */
	const struct rnicpi_provider *provider;	    /* set by the core */
	const struct rnicpi_core_ops *core;	    /* set by the core */
	void *core_ctx;				    /* the core's */
	char name[RNICPI_DEVNAME_MAX];		    /* set by the provider from
						       device_create's name */
	int ifindex;				    /* set by the provider */
};

struct rnicpi_pd {
	struct rnicpi_device *device;
	void *core_ctx;
};

struct rnicpi_mr {
	struct rnicpi_pd *pd;
	void *core_ctx;
	uint32_t lkey;	/* local key / STag for SGEs */
	uint32_t rkey;	/* remote key / STag; equal to lkey on iWARP */
};

enum rnicpi_mw_type {
	RNICPI_MW_TYPE_1 = 1, /* bound by a bind WR, PD-wide (IT_RMR_TYPE_WIDE) */
	RNICPI_MW_TYPE_2 = 2, /* bound to one QP (IT_RMR_TYPE_NARROW) */
};

struct rnicpi_mw {
	struct rnicpi_pd *pd;
	void *core_ctx;
	enum rnicpi_mw_type type;
	uint32_t rkey; /* current remote key; changes on every bind */
};

struct rnicpi_cq {
	struct rnicpi_device *device;
	void *core_ctx;
	uint32_t cqe;	/* actual capacity, >= what was asked */
	/*
	 * File descriptor that becomes readable when the CQ was armed with
	 * req_notify_cq and a matching completion arrived; owned by the
	 * provider, -1 if the CQ has none. The core calls ack_cq_event to
	 * consume one readiness before arming again.
	 */
	int notify_fd;
};

struct rnicpi_srq {
	struct rnicpi_pd *pd;
	void *core_ctx;
};

struct rnicpi_ah {
	struct rnicpi_pd *pd;
	void *core_ctx;
};

struct rnicpi_qp {
	struct rnicpi_pd *pd;
	void *core_ctx;
	uint32_t qp_num;	/* QPN; 1 for the GSI QP */
};

/* A connection being set up that has no QP yet (responder side). */
struct rnicpi_conn {
	struct rnicpi_device *device;
	void *core_ctx;
};

/* A UD service request under way (RNICPI_DEV_CAP_NATIVE_SIDR). */
struct rnicpi_sidr {
	struct rnicpi_device *device;
	void *core_ctx;
};

/* A provider-run listener (RNICPI_DEV_CAP_NATIVE_CM only). */
struct rnicpi_listener {
	struct rnicpi_device *device;
	void *core_ctx;
	uint16_t port;	/* the port listened on, host order (cm_listen) */
};

/* ------------------------------------------------------------------ */
/* Device and port attributes                                          */
/* ------------------------------------------------------------------ */

enum rnicpi_device_cap {
	RNICPI_DEV_CAP_RC = 1u << 0,
	RNICPI_DEV_CAP_UD = 1u << 1,
	RNICPI_DEV_CAP_SRQ = 1u << 2,
	RNICPI_DEV_CAP_MW_TYPE_1 = 1u << 3,
	RNICPI_DEV_CAP_MW_TYPE_2 = 1u << 4,
	RNICPI_DEV_CAP_ATOMIC = 1u << 5,      /* cmp&swap and fetch&add */
	RNICPI_DEV_CAP_IMM_DATA = 1u << 6,    /* SEND/WRITE with immediate */
	RNICPI_DEV_CAP_SEND_INV = 1u << 7,    /* SEND with invalidate */
	RNICPI_DEV_CAP_LOCAL_INV = 1u << 8,
	RNICPI_DEV_CAP_ZERO_BASED = 1u << 9,  /* zero-based tagged offsets */
	RNICPI_DEV_CAP_GSI = 1u << 10,	      /* QP1 for CM MADs */
	RNICPI_DEV_CAP_IWARP_CM = 1u << 11,   /* iw_connect / iw_take_request */
	RNICPI_DEV_CAP_NATIVE_CM = 1u << 12,  /* cm_listen / cm_connect */
	RNICPI_DEV_CAP_RESIZE_CQ = 1u << 13,
	/* reg_mr pins the memory itself (the kernel's ib_umem behind
	 * ibv_reg_mr): the core does not pin or mlock it a second time. */
	RNICPI_DEV_CAP_KERNEL_PINS = 1u << 14,
	/* RDMA_READ takes RNICPI_SEND_SINK_MW and RNICPI_SEND_SINK_INV
	 * (IT-API's it_post_rdma_read_to_rmr, IT_UNLINK_LOCAL_SINK).
	 * Optional: without it the core refuses both. */
	RNICPI_DEV_CAP_READ_SINK_MW = 1u << 20,
	/* modify_qp takes RNICPI_QP_CAP: the work queues resize (IT-API's
	 * ep_work_queues_resizable). Optional. */
	RNICPI_DEV_CAP_RESIZE_QP = 1u << 21,
	/* iw_connect takes RNICPI_CONN_NO_MPA (IT-API's IT_SC_NO_REQ_REP). */
	RNICPI_DEV_CAP_IWARP_NO_MPA = 1u << 22,
	/* alloc_mr and RNICPI_WR_REG_MR (fast registration, IT-API's
	 * it_lmr_create_unlinked / it_lmr_link; LOCAL_INV unlinks).
	 * Optional: a provider without it leaves alloc_mr NULL and the
	 * core refuses those calls (IT_ERR_OP_NOT_SUPPORTED,
	 * lmr_link_support false). */
	RNICPI_DEV_CAP_FAST_REG = 1u << 23,
	/* modify_srq takes RNICPI_SRQ_MAX_WR: the SRQ resizes (IT-API's
	 * srq_resizable). Optional: the kernel's siw, cxgb4 and qedr
	 * refuse ibv_modify_srq's IBV_SRQ_MAX_WR. */
	RNICPI_DEV_CAP_RESIZE_SRQ = 1u << 24,
	/* With RNICPI_DEV_CAP_NATIVE_CM and UD: service ID resolution in
	 * the connection manager's UDP port space (rdma_cm's RDMA_PS_UDP,
	 * the IB CM's SIDR on the wire): cm_sidr_request, cm_sidr_destroy,
	 * cm_sidr_reply, and cm_listen answers the same port's SIDR
	 * requests (SIDR_REQUEST). Optional. */
	RNICPI_DEV_CAP_NATIVE_SIDR = 1u << 25,
};

enum rnicpi_atomic_cap {
	RNICPI_ATOMIC_NONE = 0,
	RNICPI_ATOMIC_HCA = 1,	/* atomic with respect to this device */
	RNICPI_ATOMIC_GLOB = 2, /* atomic with respect to the CPUs as well */
};

struct rnicpi_device_attr {
	enum rnicpi_transport transport;
	char fw_ver[64];
	uint64_t node_guid;	  /* big-endian, as IBA writes it */
	uint64_t sys_image_guid;  /* big-endian */
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint64_t max_mr_size;	  /* bytes in one MR */
	uint64_t page_size_cap;	  /* bit mask of supported page sizes */
	uint64_t max_msg_size;	  /* bytes in one message */
	uint32_t max_qp;
	uint32_t max_qp_wr;	  /* WRs on one send or receive queue */
	uint32_t max_sge;	  /* SGEs per send / receive WR */
	uint32_t max_sge_rd;	  /* SGEs per RDMA READ WR */
	uint32_t max_inline_data; /* bytes of inline data per send WR */
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_mw;
	uint32_t max_pd;
	uint32_t max_ah;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_qp_rd_atom;      /* IRD: incoming READ/atomic per QP */
	uint32_t max_qp_init_rd_atom; /* ORD: outgoing READ/atomic per QP */
	uint32_t max_res_rd_atom;     /* incoming READ/atomic, whole device */
	uint32_t max_pkeys;
	uint32_t max_private_data;    /* bytes of connection private data */
	enum rnicpi_atomic_cap atomic_cap;
	uint32_t caps;		      /* enum rnicpi_device_cap */
	uint8_t phys_port_cnt;
};

enum rnicpi_port_state {
	RNICPI_PORT_NOP = 0,
	RNICPI_PORT_DOWN = 1,
	RNICPI_PORT_INIT = 2,
	RNICPI_PORT_ARMED = 3,
	RNICPI_PORT_ACTIVE = 4,
};

/* IBA path MTU codes (IBA 7.7.9). */
enum rnicpi_mtu {
	RNICPI_MTU_256 = 1,
	RNICPI_MTU_512 = 2,
	RNICPI_MTU_1024 = 3,
	RNICPI_MTU_2048 = 4,
	RNICPI_MTU_4096 = 5,
};

enum rnicpi_link_layer {
	RNICPI_LINK_LAYER_ETHERNET = 1,
	RNICPI_LINK_LAYER_INFINIBAND = 2,
};

struct rnicpi_port_attr {
	enum rnicpi_port_state state;
	enum rnicpi_mtu max_mtu;
	enum rnicpi_mtu active_mtu;
	enum rnicpi_link_layer link_layer;
	uint32_t gid_tbl_len;	/* 0 on iWARP */
	uint32_t pkey_tbl_len;
	uint32_t max_msg_sz;
	uint16_t lid;		/* 0 on Ethernet */
	uint64_t speed_mbps;	/* link speed, 0 if unknown */
};

union rnicpi_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix; /* big-endian */
		uint64_t interface_id;	/* big-endian */
	} global;
};

enum rnicpi_gid_type {
	RNICPI_GID_TYPE_IB = 0,
	RNICPI_GID_TYPE_ROCE_V1 = 1,
	RNICPI_GID_TYPE_ROCE_V2 = 2,
};

struct rnicpi_gid_entry {
	union rnicpi_gid gid;
	enum rnicpi_gid_type type;
	int ifindex;
};

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

enum rnicpi_access_flags {
	RNICPI_ACCESS_LOCAL_WRITE = 1u << 0,
	RNICPI_ACCESS_REMOTE_WRITE = 1u << 1,  /* needs LOCAL_WRITE too */
	RNICPI_ACCESS_REMOTE_READ = 1u << 2,
	RNICPI_ACCESS_REMOTE_ATOMIC = 1u << 3, /* needs LOCAL_WRITE too */
	RNICPI_ACCESS_MW_BIND = 1u << 4,
	RNICPI_ACCESS_ZERO_BASED = 1u << 5,    /* tagged offset 0 = first byte */
};

enum rnicpi_rereg_flags {
	RNICPI_REREG_TRANSLATION = 1u << 0, /* new addr / length / iova */
	RNICPI_REREG_PD = 1u << 1,
	RNICPI_REREG_ACCESS = 1u << 2,
};

/* ------------------------------------------------------------------ */
/* Completion queues                                                   */
/* ------------------------------------------------------------------ */

struct rnicpi_cq_init_attr {
	uint32_t cqe;		/* minimum number of entries */
	int comp_vector;	/* hint for the progress thread; may be ignored */
};

/* Same values as IBA 11.6.2 / libibverbs, so a bridge maps one to one. */
enum rnicpi_wc_status {
	RNICPI_WC_SUCCESS = 0,
	RNICPI_WC_LOC_LEN_ERR = 1,
	RNICPI_WC_LOC_QP_OP_ERR = 2,
	RNICPI_WC_LOC_EEC_OP_ERR = 3,
	RNICPI_WC_LOC_PROT_ERR = 4,
	RNICPI_WC_WR_FLUSH_ERR = 5,
	RNICPI_WC_MW_BIND_ERR = 6,
	RNICPI_WC_BAD_RESP_ERR = 7,
	RNICPI_WC_LOC_ACCESS_ERR = 8,
	RNICPI_WC_REM_INV_REQ_ERR = 9,
	RNICPI_WC_REM_ACCESS_ERR = 10,
	RNICPI_WC_REM_OP_ERR = 11,
	RNICPI_WC_RETRY_EXC_ERR = 12,
	RNICPI_WC_RNR_RETRY_EXC_ERR = 13,
	RNICPI_WC_LOC_RDD_VIOL_ERR = 14,
	RNICPI_WC_REM_INV_RD_REQ_ERR = 15,
	RNICPI_WC_REM_ABORT_ERR = 16,
	RNICPI_WC_INV_EECN_ERR = 17,
	RNICPI_WC_INV_EEC_STATE_ERR = 18,
	RNICPI_WC_FATAL_ERR = 19,
	RNICPI_WC_RESP_TIMEOUT_ERR = 20,
	RNICPI_WC_GENERAL_ERR = 21,
};

enum rnicpi_wc_opcode {
	RNICPI_WC_SEND = 0,
	RNICPI_WC_RDMA_WRITE = 1,
	RNICPI_WC_RDMA_READ = 2,
	RNICPI_WC_COMP_SWAP = 3,
	RNICPI_WC_FETCH_ADD = 4,
	RNICPI_WC_BIND_MW = 5,
	RNICPI_WC_LOCAL_INV = 6,
	RNICPI_WC_REG_MR = 8,	/* as the kernel's IB_WC_REG_MR */
	/* receive side: bit 7 set */
	RNICPI_WC_RECV = 1 << 7,
	RNICPI_WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
};

enum rnicpi_wc_flags {
	RNICPI_WC_WITH_IMM = 1u << 0, /* imm_data is valid */
	RNICPI_WC_WITH_INV = 1u << 1, /* invalidated_rkey is valid */
	RNICPI_WC_GRH = 1u << 2,      /* UD: a 40-byte GRH precedes the data */
	RNICPI_WC_SOLICITED = 1u << 3,/* the message asked for a solicited event */
};

/*
 * One completion. For an error completion only wr_id, status, qp_num,
 * opcode (best effort) and vendor_err are meaningful.
 */
struct rnicpi_wc {
	uint64_t wr_id;
	enum rnicpi_wc_status status;
	enum rnicpi_wc_opcode opcode;
	uint32_t vendor_err;	   /* provider detail, e.g. iWARP Terminate code */
	uint32_t byte_len;	   /* bytes received / read / written */
	uint32_t imm_data;	   /* RNICPI_WC_WITH_IMM; host order */
	uint32_t invalidated_rkey; /* RNICPI_WC_WITH_INV */
	uint32_t qp_num;	   /* local QP the WR belonged to */
	uint32_t src_qp;	   /* UD: sender's QPN */
	unsigned int wc_flags;	   /* enum rnicpi_wc_flags */
	uint16_t pkey_index;	   /* UD/GSI */
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* ------------------------------------------------------------------ */
/* Queue pairs                                                         */
/* ------------------------------------------------------------------ */

enum rnicpi_qp_type {
	RNICPI_QPT_RC = 2,
	RNICPI_QPT_UC = 3,
	RNICPI_QPT_UD = 4,
	RNICPI_QPT_GSI = 5, /* QP1: UD with P_Key/Q_Key rules of IBA 13.5 */
};

/*
 * QP states. InfiniBand/RoCE providers use the IBA set (IBA 10.3.1):
 * RESET INIT RTR RTS SQD SQE ERR. iWARP providers use the RDMA verbs set:
 * IDLE RTS CLOSING TERMINATE ERR (RTS and ERR shared). An iWARP QP enters
 * RTS through the connection hooks, not through modify_qp.
 */
enum rnicpi_qp_state {
	RNICPI_QPS_RESET = 0,
	RNICPI_QPS_INIT = 1,
	RNICPI_QPS_RTR = 2,
	RNICPI_QPS_RTS = 3,
	RNICPI_QPS_SQD = 4,
	RNICPI_QPS_SQE = 5,
	RNICPI_QPS_ERR = 6,
	RNICPI_QPS_IDLE = 16,
	RNICPI_QPS_CLOSING = 17,   /* graceful close in progress */
	RNICPI_QPS_TERMINATE = 18, /* Terminate sent or received */
};

struct rnicpi_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* Address vector: where a UD datagram or an RC/UC connection goes. */
struct rnicpi_ah_attr {
	union rnicpi_gid dgid;	 /* RoCE: IPv4-mapped or IPv6 address */
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint16_t dlid;		 /* IB only */
	uint8_t port_num;
	uint8_t is_global;	 /* GRH present; always 1 on RoCE */
	uint8_t dmac[6];	 /* RoCE: next-hop MAC, zeros if unknown */
};

struct rnicpi_qp_init_attr {
	enum rnicpi_qp_type qp_type;
	struct rnicpi_cq *send_cq;
	struct rnicpi_cq *recv_cq;
	struct rnicpi_srq *srq;	 /* NULL: the QP has its own receive queue */
	struct rnicpi_qp_cap cap; /* in: minimum; out: granted */
	int sq_sig_all;		 /* every send WR completes signalled */
	uint8_t port_num;
};

enum rnicpi_qp_attr_mask {
	RNICPI_QP_STATE = 1u << 0,
	RNICPI_QP_CUR_STATE = 1u << 1,
	RNICPI_QP_ACCESS_FLAGS = 1u << 2,
	RNICPI_QP_PKEY_INDEX = 1u << 3,
	RNICPI_QP_PORT = 1u << 4,
	RNICPI_QP_QKEY = 1u << 5,
	RNICPI_QP_AV = 1u << 6,
	RNICPI_QP_PATH_MTU = 1u << 7,
	RNICPI_QP_TIMEOUT = 1u << 8,
	RNICPI_QP_RETRY_CNT = 1u << 9,
	RNICPI_QP_RNR_RETRY = 1u << 10,
	RNICPI_QP_RQ_PSN = 1u << 11,
	RNICPI_QP_MAX_QP_RD_ATOMIC = 1u << 12,	 /* ORD */
	RNICPI_QP_MIN_RNR_TIMER = 1u << 13,
	RNICPI_QP_SQ_PSN = 1u << 14,
	RNICPI_QP_MAX_DEST_RD_ATOMIC = 1u << 15, /* IRD */
	/* With RNICPI_DEV_CAP_RESIZE_QP: resize the send and receive
	 * queues to cap.max_send_wr / cap.max_recv_wr (0 leaves one as it
	 * is); the SGE and inline limits stay. In any state; the WRs
	 * queued stay queued in order. -EINVAL for a size of more than the
	 * device's max_qp_wr or fewer than the WRs queued; -EBUSY when the
	 * provider cannot re-lay a queue now (siw: a send queue with WRs
	 * in it). Granted sizes are in query_qp's cap. */
	RNICPI_QP_CAP = 1u << 16,
	RNICPI_QP_DEST_QPN = 1u << 17,
};

struct rnicpi_qp_attr {
	enum rnicpi_qp_state qp_state;
	enum rnicpi_qp_state cur_qp_state;
	enum rnicpi_mtu path_mtu;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags; /* enum rnicpi_access_flags, REMOTE_* */
	struct rnicpi_qp_cap cap;
	struct rnicpi_ah_attr ah_attr;
	uint16_t pkey_index;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;	    /* ORD */
	uint8_t max_dest_rd_atomic; /* IRD */
	uint8_t min_rnr_timer;	    /* IBA 9.7.5.2.8 encoding */
	uint8_t port_num;
	uint8_t timeout;	    /* 4.096 us * 2^timeout, 0 = infinite */
	uint8_t retry_cnt;
	uint8_t rnr_retry;	    /* 7 = infinite */
};

/* ------------------------------------------------------------------ */
/* Work requests                                                       */
/* ------------------------------------------------------------------ */

struct rnicpi_sge {
	uint64_t addr;	 /* virtual address (or zero-based offset) */
	uint32_t length;
	uint32_t lkey;
};

enum rnicpi_wr_opcode {
	RNICPI_WR_RDMA_WRITE = 0,
	RNICPI_WR_RDMA_WRITE_WITH_IMM = 1,
	RNICPI_WR_SEND = 2,
	RNICPI_WR_SEND_WITH_IMM = 3,
	RNICPI_WR_RDMA_READ = 4,
	RNICPI_WR_ATOMIC_CMP_AND_SWP = 5,
	RNICPI_WR_ATOMIC_FETCH_AND_ADD = 6,
	RNICPI_WR_LOCAL_INV = 7,
	RNICPI_WR_BIND_MW = 8,
	RNICPI_WR_SEND_WITH_INV = 9,
	/* RNICPI_DEV_CAP_FAST_REG: register a region from alloc_mr (see
	 * wr.reg_mr), in send-queue order. */
	RNICPI_WR_REG_MR = 10,
};

enum rnicpi_send_flags {
	RNICPI_SEND_SIGNALED = 1u << 0,	 /* generate a completion */
	RNICPI_SEND_FENCE = 1u << 1,	 /* wait for earlier READs/atomics */
	RNICPI_SEND_SOLICITED = 1u << 2, /* ask for a solicited event */
	RNICPI_SEND_INLINE = 1u << 3,	 /* copy the data at post time */
	RNICPI_SEND_LOCAL_FENCE = 1u << 4, /* wait for all earlier WRs */
	/* More WRs follow at once (IT_COALESCE_WR_FLAG): the provider may
	 * leave this one queued until a post without the flag, to start
	 * them together (one doorbell, fewer system calls). A hint: a
	 * provider that starts every WR at once is right too, and an
	 * unknown flag bit is ignored, never refused. */
	RNICPI_SEND_MORE = 1u << 5,
	/* RDMA_READ only, with RNICPI_DEV_CAP_READ_SINK_MW. The SGEs name
	 * memory windows of this QP's PD as the sink: lkey is a window's
	 * current key, addr an address in the window's space (an offset
	 * for a zero-based window). A window used so needs remote write
	 * (an iWARP Read Response is a tagged write into its STag, RFC
	 * 5040 §4.4), a type 2 one must be bound to this QP; otherwise
	 * the Read completes with RNICPI_WC_LOC_PROT_ERR. */
	RNICPI_SEND_SINK_MW = 1u << 6,
	/* RDMA_READ only, with RNICPI_DEV_CAP_READ_SINK_MW: once the
	 * Read has succeeded, before its completion is reported, every
	 * sink key is invalidated as a LOCAL_INV would (a window is
	 * unbound, of either type; a region's key stops working). A Read
	 * that fails leaves the sinks as they were. */
	RNICPI_SEND_SINK_INV = 1u << 7,
};

struct rnicpi_mw_bind_info {
	struct rnicpi_mr *mr;	   /* region the window opens onto */
	uint64_t addr;		   /* first byte, inside mr */
	uint64_t length;	   /* 0 unbinds the window */
	/* RNICPI_ACCESS_REMOTE_*, and RNICPI_ACCESS_ZERO_BASED for a
	 * zero-based window (IBA 10.6.7.2; iWARP: tagged offsets relative
	 * to the window): the peer's address 0 is the byte at @addr. A
	 * provider with RNICPI_DEV_CAP_ZERO_BASED takes it; one without
	 * fails the bind (RNICPI_WC_MW_BIND_ERR). */
	unsigned int access;
};

struct rnicpi_send_wr {
	const struct rnicpi_send_wr *next;
	uint64_t wr_id;
	const struct rnicpi_sge *sg_list;
	uint32_t num_sge;
	enum rnicpi_wr_opcode opcode;
	unsigned int send_flags;	  /* enum rnicpi_send_flags */
	union {
		/* *_WITH_IMM: a number in host order, which the wire
		 * carries big-endian (IBA 9.3.7; an ibverbs user's
		 * htonl(n) is this n) */
		uint32_t imm_data;
		uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV */
	} ex;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add; /* compare (CMP_AND_SWP) or add */
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct rnicpi_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
		struct {
			struct rnicpi_mw *mw;
			/* The key the window takes: the window's index
			 * with the consumer's key byte, for both types
			 * (IBA 10.6.7.2: the key portion is the consumer's;
			 * for type 1, libibverbs' ibv_inc_rkey). The
			 * consumer hands the key out before the bind runs,
			 * so the provider may not choose another; a byte
			 * equal to the current one fails the bind. */
			uint32_t rkey;
			struct rnicpi_mw_bind_info bind_info;
		} bind_mw;
		/*
		 * REG_MR: give @mr (from alloc_mr, of this QP's PD) the
		 * translation @length bytes at @addr, already pinned by
		 * the core, addressed from @iova (0 with
		 * RNICPI_ACCESS_ZERO_BASED in @access), with @access, and
		 * the key @key: the region's index with the consumer's
		 * key byte (as bind_mw's rkey: the consumer hands it out
		 * before the WR runs). The region's key (lkey and rkey)
		 * is @key once the WR has run, after every WR posted
		 * before it started (the generic part's lkey and rkey
		 * need not follow: the core keeps the key it chose); until
		 * then every access by the old or new key is refused. The
		 * core may deregister @mr before the WR runs: the WR then
		 * fails, it must not touch freed memory. The region must be invalid (new from
		 * alloc_mr, or invalidated by LOCAL_INV, SEND_WITH_INV or
		 * RNICPI_SEND_SINK_INV), @length at most alloc_mr's
		 * @max_len, the key byte not the current one; otherwise
		 * the WR completes with RNICPI_WC_LOC_QP_OP_ERR (the QP
		 * goes to error, as a failed BIND_MW).
		 */
		struct {
			struct rnicpi_mr *mr;
			void *addr;
			uint64_t length;
			uint64_t iova;
			unsigned int access;
			uint32_t key;
		} reg_mr;
	} wr;
};

struct rnicpi_recv_wr {
	const struct rnicpi_recv_wr *next;
	uint64_t wr_id;
	const struct rnicpi_sge *sg_list;
	uint32_t num_sge;
};

/* ------------------------------------------------------------------ */
/* Shared receive queues and address handles                           */
/* ------------------------------------------------------------------ */

struct rnicpi_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit; /* RNICPI_EVENT_SRQ_LIMIT_REACHED below this; 0 off */
};

enum rnicpi_srq_attr_mask {
	RNICPI_SRQ_MAX_WR = 1u << 0, /* resize */
	RNICPI_SRQ_LIMIT = 1u << 1,  /* arm the limit event */
};

/* ------------------------------------------------------------------ */
/* Events reported to the core                                         */
/* ------------------------------------------------------------------ */

enum rnicpi_event_type {
	RNICPI_EVENT_CQ_ERR = 0,
	RNICPI_EVENT_QP_FATAL = 1,	     /* QP went to ERR on its own */
	RNICPI_EVENT_QP_REQ_ERR = 2,	     /* invalid request from the peer */
	RNICPI_EVENT_QP_ACCESS_ERR = 3,	     /* remote access violation */
	RNICPI_EVENT_COMM_EST = 4,
	RNICPI_EVENT_SQ_DRAINED = 5,
	RNICPI_EVENT_PATH_MIG = 6,
	RNICPI_EVENT_PATH_MIG_ERR = 7,
	RNICPI_EVENT_DEVICE_FATAL = 8,
	RNICPI_EVENT_PORT_ACTIVE = 9,
	RNICPI_EVENT_PORT_ERR = 10,
	RNICPI_EVENT_LID_CHANGE = 11,
	RNICPI_EVENT_PKEY_CHANGE = 12,
	RNICPI_EVENT_SM_CHANGE = 13,
	RNICPI_EVENT_SRQ_ERR = 14,
	RNICPI_EVENT_SRQ_LIMIT_REACHED = 15,
	RNICPI_EVENT_QP_LAST_WQE_REACHED = 16,
	RNICPI_EVENT_CLIENT_REREGISTER = 17,
	RNICPI_EVENT_GID_CHANGE = 18,
};

/*
 * An asynchronous event. Which member of `element` is set follows from the
 * type: qp for QP_* / COMM_EST / SQ_DRAINED / PATH_MIG* / QP_LAST_WQE,
 * cq for CQ_ERR, srq for SRQ_*, port_num for PORT_* / LID / PKEY / SM /
 * GID / CLIENT_REREGISTER, nothing for DEVICE_FATAL.
 */
struct rnicpi_async_event {
	enum rnicpi_event_type type;
	union {
		struct rnicpi_qp *qp;
		struct rnicpi_cq *cq;
		struct rnicpi_srq *srq;
		uint8_t port_num;
	} element;
	/* iWARP: the Terminate that caused a QP event (RFC 5040 §7.4):
	 * layer (4 bits), error type (4 bits), error code (8 bits), and
	 * whether we received it (1) or sent it (0). All 0 when none.
	 * InfiniBand: a NAK's reason, see RNICPI_TERM_LAYER_IBA below. */
	uint8_t term_layer;
	uint8_t term_etype;
	uint8_t term_ecode;
	uint8_t term_remote;
	/* Negative errno naming the cause, 0 when the type says it all. */
	int status;
};

/*
 * InfiniBand / RoCE: the same four term_* fields carry a NAK's reason.
 * term_layer is then RNICPI_TERM_LAYER_IBA, a value a Terminate's 4-bit
 * layer can never take; term_etype is the AETH NAK code (IBA 9.7.5.2.8:
 * 1 invalid request, 2 remote access error, 3 remote operational error);
 * term_ecode is an enum rnicpi_iba_cause; term_remote is 1 at the
 * requester that received the NAK, 0 at the responder that sent it.
 *
 * Why no new field: the provider fills this structure and it carries no
 * size, so an appended member would be an ABI break. Reusing the
 * Terminate fields with a layer outside RFC 5040's range is compatible
 * both ways: a provider built before this left them 0 ("no reason"),
 * and a core built before this maps an unknown layer to the coarse
 * event of the type. RNICPI_ABI_VERSION stays 1.
 */
#define RNICPI_TERM_LAYER_IBA 0x10u

enum rnicpi_iba_cause {
	RNICPI_IBA_CAUSE_OTHER = 0,
	/* an opcode out of sequence, or one the QP was not enabled for */
	RNICPI_IBA_CAUSE_OPCODE = 1,
	/* a packet or Write length that disagrees with the MTU or RETH */
	RNICPI_IBA_CAUSE_LENGTH = 2,
	/* a Send longer than the receive WQE it took (at the requester:
	 * an invalid request NAK to a Send or Send with immediate, which
	 * IBA gives for nothing else a conformant requester sends) */
	RNICPI_IBA_CAUSE_RECV_LENGTH = 3,
	/* the R_Key check of a Write, a Read, an atomic */
	RNICPI_IBA_CAUSE_WRITE_ACCESS = 4,
	RNICPI_IBA_CAUSE_READ_ACCESS = 5,
	RNICPI_IBA_CAUSE_ATOMIC_ACCESS = 6,
	/* responder only: a receive WQE failed its own protection check */
	RNICPI_IBA_CAUSE_RECV_PROT = 7,
};

/* ------------------------------------------------------------------ */
/* Connection set-up                                                   */
/* ------------------------------------------------------------------ */

enum rnicpi_conn_flags {
	RNICPI_CONN_MPA_CRC = 1u << 0,	/* iWARP: ask for / require MPA CRC */
	RNICPI_CONN_MPA_REV1 = 1u << 1, /* iWARP: speak MPA revision 1 */
	RNICPI_CONN_P2P = 1u << 2,	/* iWARP: peer-to-peer RTR (RFC 6581) */
	/* iWARP, iw_connect only (RNICPI_DEV_CAP_IWARP_NO_MPA): the stream
	 * is past its MPA Request/Reply, which the consumer exchanged
	 * itself; enter RDMA mode at once, both ends alike: FPDUs without
	 * markers, with CRC only if RNICPI_CONN_MPA_CRC, IRD/ORD as given,
	 * no RTR, no private data. ESTABLISHED (or ERROR) follows. */
	RNICPI_CONN_NO_MPA = 1u << 3,
};

struct rnicpi_conn_param {
	const void *private_data;
	uint32_t private_data_len;
	uint32_t ird;	     /* incoming READs we accept at once */
	uint32_t ord;	     /* outgoing READs we issue at once */
	unsigned int flags;  /* enum rnicpi_conn_flags; 0 = provider defaults */
	uint32_t timeout_ms; /* whole exchange; 0 = provider default */
};

enum rnicpi_conn_event_type {
	/* Responder: a peer's connection request was read. `conn` is set;
	 * private data, ird and ord are the peer's. Answer with conn_accept
	 * or conn_reject. */
	RNICPI_CONN_REQUEST = 1,
	/* The QP is connected and in RTS. On the initiator, private data is
	 * the responder's reply. */
	RNICPI_CONN_ESTABLISHED,
	/* Initiator: the peer refused; private data is the peer's. */
	RNICPI_CONN_REJECTED,
	/* Set-up failed before ESTABLISHED: status says why (-ETIMEDOUT no
	 * answer, -ECONNRESET peer closed, -EPROTO bad frame from the peer,
	 * -ECONNREFUSED ...). `qp` (initiator) or `conn` (responder) is set;
	 * a `conn` is gone after this event. */
	RNICPI_CONN_ERROR,
	/* An established connection ended: status 0 for an orderly close
	 * (ours completed or the peer's), otherwise why it broke. */
	RNICPI_CONN_DISCONNECTED,
	/* RNICPI_DEV_CAP_NATIVE_SIDR, responder: a UD service request on a
	 * listener's port. `conn` and `listener` are set, private data is
	 * the requester's; answer with cm_sidr_reply. */
	RNICPI_CONN_SIDR_REQUEST,
	/* RNICPI_DEV_CAP_NATIVE_SIDR, requester: the answer to `sidr`, the
	 * last event naming it. status 0: sidr_status (IBA table 121: 0
	 * valid, 1 service ID not supported, 2 rejected, 3 no QP,
	 * 4 redirect), and with 0 the qpn and qkey, private data the
	 * replier's; or a negative errno (-ETIMEDOUT no answer,
	 * -EHOSTUNREACH / -ENETUNREACH no path). */
	RNICPI_CONN_SIDR_REPLY,
};

/*
 * A connection event. Private data points into provider memory that is
 * valid only during the upcall.
 */
struct rnicpi_conn_event {
	enum rnicpi_conn_event_type type;
	int status;
	struct rnicpi_qp *qp;
	struct rnicpi_conn *conn;
	struct rnicpi_listener *listener; /* native CM requests */
	const void *private_data;
	uint32_t private_data_len;
	uint32_t ird;	/* the peer's */
	uint32_t ord;	/* the peer's */
	unsigned int flags; /* enum rnicpi_conn_flags as negotiated */
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
	/* RNICPI_CONN_SIDR_REPLY only (a provider that never reports one
	 * may leave these out) */
	struct rnicpi_sidr *sidr;
	uint8_t sidr_status;
	uint32_t qpn;
	uint32_t qkey;
};

/* ------------------------------------------------------------------ */
/* Upcalls: what a provider calls in the core                          */
/* ------------------------------------------------------------------ */

/*
 * Filled by the core, handed to device_create. Upcalls come from any
 * provider thread with no provider lock held, so that the core may call
 * any op of the same device from inside them (except destroying the
 * object the event is about).
 */
struct rnicpi_core_ops {
	uint32_t size; /* sizeof(struct rnicpi_core_ops) as the core built it */
	void (*async_event)(struct rnicpi_device *dev,
			    const struct rnicpi_async_event *event);
	void (*conn_event)(struct rnicpi_device *dev,
			   const struct rnicpi_conn_event *event);

	/* --- optional, at the end: check size and NULL before calling --- */

	/*
	 * The host service (hostrdma-kald(8)) for a port every process of
	 * the host shares, soft-RoCE's UDP 4791: a socket bound to @addr's
	 * address (port 4791) that receives the datagrams whose BTH DestQP
	 * lies in [*@qpn_base, *@qpn_base + *@qpn_count), the range the
	 * device must take its QPNs from, and *@fwd_fd, a SOCK_SEQPACKET
	 * socket on which QP1's datagrams for this process come, each a
	 * struct rnicpi_host_fwd then the UDP payload. Both are the
	 * provider's (close-on-exec, non-blocking). -ENOENT: no host
	 * service, the provider binds the port itself (the embedded mode);
	 * another negative errno: the address cannot be used.
	 */
	int (*host_udp_socket)(struct rnicpi_device *dev,
			       const struct sockaddr *addr, socklen_t addrlen,
			       int *udp_fd, int *fwd_fd, uint32_t *qpn_base,
			       uint32_t *qpn_count);
};

/* What precedes each datagram on host_udp_socket's @fwd_fd. */
struct rnicpi_host_fwd {
	uint32_t magic;		/* RNICPI_HOST_FWD_MAGIC */
	uint32_t len;		/* payload bytes that follow */
	struct sockaddr_storage src;	/* the sender */
};
#define RNICPI_HOST_FWD_MAGIC 0x6b616c64u

/* ------------------------------------------------------------------ */
/* The device ops table                                                */
/* ------------------------------------------------------------------ */

struct rnicpi_device_ops {
	/* sizeof(struct rnicpi_device_ops) as the provider was compiled. */
	uint32_t size;

	/* --- device --- */

	/* MANDATORY. Stop the device's threads, release it. Every object
	 * on it has been destroyed before. Never fails. */
	void (*device_destroy)(struct rnicpi_device *dev);
	/* MANDATORY. Fill @attr. */
	int (*query_device)(struct rnicpi_device *dev,
			    struct rnicpi_device_attr *attr);
	/* MANDATORY. Fill @attr for @port_num (1-based). -EINVAL for a
	 * bad port. */
	int (*query_port)(struct rnicpi_device *dev, uint8_t port_num,
			  struct rnicpi_port_attr *attr);
	/* Entry @index of the port's GID table; -EINVAL past gid_tbl_len,
	 * -ENOENT for an empty slot. */
	int (*query_gid)(struct rnicpi_device *dev, uint8_t port_num,
			 uint32_t index, struct rnicpi_gid_entry *entry);
	/* The interface the device is bound to changed (@nd is its new
	 * state). The provider updates port state and GIDs and reports
	 * PORT_ACTIVE / PORT_ERR / GID_CHANGE through core->async_event. */
	void (*netdev_event)(struct rnicpi_device *dev,
			     const struct rnicpi_netdev *nd,
			     enum rnicpi_netdev_event event);

	/* --- protection domains --- */

	int (*alloc_pd)(struct rnicpi_device *dev, struct rnicpi_pd **out);
	int (*dealloc_pd)(struct rnicpi_pd *pd);

	/* --- memory regions and windows --- */

	/*
	 * Register @length bytes at @addr, already pinned by the core (unless
	 * the device has RNICPI_DEV_CAP_KERNEL_PINS), with
	 * @access (enum rnicpi_access_flags). @iova is the address remote
	 * peers and SGEs use for the first byte (== addr for VA-based, 0 for
	 * zero-based). Fills lkey/rkey; a key's low 8 bits change on every
	 * registration of the same index so stale keys are refused.
	 * -EINVAL for REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE.
	 */
	int (*reg_mr)(struct rnicpi_pd *pd, void *addr, uint64_t length,
		      uint64_t iova, unsigned int access,
		      struct rnicpi_mr **out);
	/* Change what @flags (enum rnicpi_rereg_flags) names; keys change. */
	int (*rereg_mr)(struct rnicpi_mr *mr, unsigned int flags,
			struct rnicpi_pd *pd, void *addr, uint64_t length,
			uint64_t iova, unsigned int access);
	/* -EBUSY while a memory window is bound to it. */
	int (*dereg_mr)(struct rnicpi_mr *mr);
	int (*alloc_mw)(struct rnicpi_pd *pd, enum rnicpi_mw_type type,
			struct rnicpi_mw **out);
	int (*dealloc_mw)(struct rnicpi_mw *mw);

	/* --- completion queues --- */

	int (*create_cq)(struct rnicpi_device *dev,
			 const struct rnicpi_cq_init_attr *attr,
			 struct rnicpi_cq **out);
	/* Resize to at least @cqe; -EINVAL below the entries it holds. */
	int (*resize_cq)(struct rnicpi_cq *cq, uint32_t cqe);
	int (*destroy_cq)(struct rnicpi_cq *cq);
	/* Take up to @n completions, oldest first. Returns how many (0 if
	 * none) or a negative errno. @n 0 (@wc may be NULL): the consumer
	 * has completions in hand and asks for none; a software provider
	 * may use the call to push send queues that wait for room, and
	 * need not look for received data. */
	int (*poll_cq)(struct rnicpi_cq *cq, int n, struct rnicpi_wc *wc);
	/* Arm: make notify_fd readable at the next completion (any, or only
	 * solicited and error ones if @solicited_only). One-shot. */
	int (*req_notify_cq)(struct rnicpi_cq *cq, int solicited_only);
	/* Consume the readiness of notify_fd after it polled readable.
	 * -EAGAIN when there was none. */
	int (*ack_cq_event)(struct rnicpi_cq *cq);

	/* --- shared receive queues --- */

	int (*create_srq)(struct rnicpi_pd *pd, struct rnicpi_srq_attr *attr,
			  struct rnicpi_srq **out); /* attr: in min, out granted */
	int (*modify_srq)(struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr,
			  unsigned int mask); /* enum rnicpi_srq_attr_mask */
	int (*query_srq)(struct rnicpi_srq *srq, struct rnicpi_srq_attr *attr);
	/* -EBUSY while a QP uses it. */
	int (*destroy_srq)(struct rnicpi_srq *srq);
	/* Post a chain; on error *@bad is the first WR not posted. */
	int (*post_srq_recv)(struct rnicpi_srq *srq,
			     const struct rnicpi_recv_wr *wr,
			     const struct rnicpi_recv_wr **bad);

	/* --- queue pairs --- */

	/* Create in RESET (IB) or IDLE (iWARP). @attr->cap is updated with
	 * what was granted. -EINVAL names an over-limit cap in the log. */
	int (*create_qp)(struct rnicpi_pd *pd,
			 struct rnicpi_qp_init_attr *attr,
			 struct rnicpi_qp **out);
	/* Apply the fields @mask (enum rnicpi_qp_attr_mask) names. An
	 * illegal transition is -EINVAL; moving to ERR flushes every posted
	 * WR with RNICPI_WC_WR_FLUSH_ERR. iWARP: RTS->CLOSING is a graceful
	 * close, ->ERR an abortive one. */
	int (*modify_qp)(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
			 unsigned int mask);
	int (*query_qp)(struct rnicpi_qp *qp, struct rnicpi_qp_attr *attr,
			unsigned int mask,
			struct rnicpi_qp_init_attr *init_attr);
	/* Tear down: flushed completions still land on the CQs; the
	 * connection, if any, is closed abortively. */
	int (*destroy_qp)(struct rnicpi_qp *qp);
	/* Post a chain of send WRs. On error nothing from *@bad on is
	 * posted; -EINVAL bad WR, -ENOMEM queue full, -ENOTCONN/-EINVAL
	 * wrong state (IB: before RTS, iWARP: not RTS). */
	int (*post_send)(struct rnicpi_qp *qp, const struct rnicpi_send_wr *wr,
			 const struct rnicpi_send_wr **bad);
	int (*post_recv)(struct rnicpi_qp *qp, const struct rnicpi_recv_wr *wr,
			 const struct rnicpi_recv_wr **bad);

	/* --- address handles (UD, GSI) --- */

	int (*create_ah)(struct rnicpi_pd *pd,
			 const struct rnicpi_ah_attr *attr,
			 struct rnicpi_ah **out);
	int (*destroy_ah)(struct rnicpi_ah *ah);

	/* --- connection set-up, every transport --- */

	/* Responder: accept the request @conn with @qp (IDLE/INIT), sending
	 * our reply with @param. ESTABLISHED (or ERROR) follows for @qp;
	 * @conn is consumed whatever the result. */
	int (*conn_accept)(struct rnicpi_conn *conn, struct rnicpi_qp *qp,
			   const struct rnicpi_conn_param *param);
	/* Responder: refuse @conn with up to max_private_data bytes sent to
	 * the peer; the connection is closed. @conn is consumed.
	 * conn_accept and conn_reject may be called from inside the REQUEST
	 * upcall, before REQUEST came (the stream is then just closed and
	 * nothing more is reported), and until the ERROR upcall for @conn
	 * returns (an undelivered ERROR is then dropped); a core calling
	 * them from another thread serialises that with its ERROR upcall. */
	int (*conn_reject)(struct rnicpi_conn *conn, const void *private_data,
			   uint32_t private_data_len);

	/* --- iWARP (RNICPI_DEV_CAP_IWARP_CM): the core made the TCP
	 *     connection, the provider runs MPA on it --- */

	/* Initiator: take @sockfd, connected, and send the MPA Request with
	 * @param. On 0 the socket is the provider's (closed by it); on error
	 * it stays the caller's. ESTABLISHED, REJECTED or ERROR follows. */
	int (*iw_connect)(struct rnicpi_qp *qp, int sockfd,
			  const struct rnicpi_conn_param *param);
	/* Responder: take @sockfd, just accepted, and read the peer's MPA
	 * Request; REQUEST or ERROR follows for the returned conn, whose
	 * core_ctx the core sets from @core_ctx. Socket ownership as above. */
	int (*iw_take_request)(struct rnicpi_device *dev, int sockfd,
			       void *core_ctx, struct rnicpi_conn **out);

	/* --- provider-run connection manager (RNICPI_DEV_CAP_NATIVE_CM),
	 *     for devices whose connections the hardware or another
	 *     library sets up (a libibverbs bridge through librdmacm) --- */

	/* Listen on @addr (an address of the device's interface; its port
	 * 0 picks a free one, stored in the listener's `port`), for the
	 * connection manager's TCP port space (rdma_cm's RDMA_PS_TCP).
	 * Each peer's request is a REQUEST upcall naming the listener and a
	 * new conn (core_ctx NULL: the core sets it), answered with
	 * conn_accept / conn_reject as on the other transports. */
	int (*cm_listen)(struct rnicpi_device *dev, const struct sockaddr *addr,
			 int backlog, void *core_ctx,
			 struct rnicpi_listener **out);
	/* Stop listening. Requests not yet reported are refused. An upcall
	 * already under way may still name the listener: its memory stays
	 * valid until that upcall returns, so the core may compare it and
	 * read core_ctx, but must check core_ctx against its own tables. */
	int (*cm_listen_destroy)(struct rnicpi_listener *listener);
	/* Initiator: resolve @dst (from @src, or NULL for the route's),
	 * reach it on this device and send the request for @qp (RESET/
	 * INIT/IDLE; the provider moves it) with @param. ESTABLISHED,
	 * REJECTED or ERROR follows for @qp. -EBUSY when @qp already has a
	 * connection. */
	int (*cm_connect)(struct rnicpi_qp *qp, const struct sockaddr *src,
			  const struct sockaddr *dst,
			  const struct rnicpi_conn_param *param);

	/* --- optional, at the end so older tables stay valid --- */

	/* A consumer opens the device (it_ia_create), every time: acquire
	 * what only a user of the device needs and a mere listing must not
	 * take (soft-RoCE binds its UDP port 4791 here, not in
	 * device_create). Idempotent; what it takes is kept until
	 * device_destroy. 0, or a negative errno that fails the open
	 * (-EADDRINUSE: another process holds what the device needs); the
	 * next open tries again. NULL: nothing to do. */
	int (*device_open)(struct rnicpi_device *dev);

	/* RNICPI_DEV_CAP_NATIVE_CM: close @qp's connection (ESTABLISHED, or
	 * being set up). Orderly: the QP stops sending (IB: ERR, iWARP:
	 * CLOSING), the peer is told (DREQ, TCP FIN), DISCONNECTED with
	 * status 0 follows for @qp. @abortive: QP to ERR at once, then as
	 * orderly. -ENOTCONN when @qp has no connection. */
	int (*cm_disconnect)(struct rnicpi_qp *qp, int abortive);

	/* RNICPI_DEV_CAP_FAST_REG: a region for fast registration of up to
	 * @max_len bytes, with keys (lkey == rkey) but no translation: it
	 * is invalid, every access by its key refused, until a REG_MR WR
	 * runs; LOCAL_INV makes it invalid again. Freed by dereg_mr. */
	int (*alloc_mr)(struct rnicpi_pd *pd, uint64_t max_len,
			struct rnicpi_mr **out);

	/* RNICPI_DEV_CAP_NATIVE_SIDR, requester: ask @dst (an address and
	 * the service's port) from @src (NULL: the route's) which UD QP
	 * serves that port of the UDP port space, sending @len bytes of
	 * @pdata (-EMSGSIZE past what the request carries), within
	 * @timeout_ms (0: the provider's default). The request's core_ctx
	 * is @core_ctx from the start; one SIDR_REPLY follows, which may
	 * come before this returns. */
	int (*cm_sidr_request)(struct rnicpi_device *dev,
			       const struct sockaddr *src,
			       const struct sockaddr *dst, const void *pdata,
			       uint32_t len, uint32_t timeout_ms,
			       void *core_ctx, struct rnicpi_sidr **out);
	/* Forget @sidr, answered or not. No upcall names it once this
	 * returns: one under way on another thread is waited out (the
	 * core must not hold what that upcall needs). */
	int (*cm_sidr_destroy)(struct rnicpi_sidr *sidr);
	/* Responder: answer the SIDR_REQUEST @conn: @status 0 with @qpn and
	 * @qkey, or a refusal (a provider that can send only "rejected"
	 * sends that for every other status), with @len bytes of @pdata.
	 * @conn is consumed whatever the result. -EINVAL for an answer the
	 * provider cannot send as asked (the conn is then refused). */
	int (*cm_sidr_reply)(struct rnicpi_conn *conn, uint8_t status,
			     uint32_t qpn, uint32_t qkey, const void *pdata,
			     uint32_t len);

	/* --- scheduling hints (optional) --- */

	/* An application thread is about to sleep in a wait that arms no
	 * CQ of @dev (connection or async events, or a CQ another thread
	 * watches). A provider that lets polling threads do its receive
	 * work (a software one) gives that work back to its own thread
	 * now, as at req_notify_cq; what arrives meanwhile must not wait
	 * for the application's next poll. Any thread, any time; cheap
	 * when there is nothing to give back. */
	void (*consumer_blocks)(struct rnicpi_device *dev);
	/* An application thread is about to sleep until @cq's notify_fd
	 * turns readable; it arms @cq after this call and polls @cq after
	 * it wakes. A provider that lets polling threads do its receive
	 * work may leave that work for some of the CQ's QPs to this
	 * thread: it names up to @max descriptors in @fds, which the
	 * thread watches for POLLIN beside notify_fd, polling @cq whenever
	 * one wakes it, and returns how many (0: its own thread does the
	 * work, as without this op). Called again before each sleep of the
	 * same wait; cq_wait_end when the thread goes back to its
	 * application. One thread at a time per CQ. */
	int (*cq_wait_begin)(struct rnicpi_cq *cq, int *fds, int max);
	/* The thread of cq_wait_begin watches no more: what it was left
	 * goes back to the provider's own thread unless polls keep it. */
	void (*cq_wait_end)(struct rnicpi_cq *cq);
};

#ifdef __cplusplus
}
#endif

#endif /* RNICPI_H */
