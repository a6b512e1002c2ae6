/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-info - what ibv_devinfo shows, for hostrdma's devices, from
 * IT-API alone: it_interface_list, it_ia_query, it_get_pathinfo.
 *
 * IT-API has no network interface name, port state beyond online or
 * offline, GUIDs or resource counts (QPs, CQs, MRs): those are not
 * shown; -v says so. The interface is the part of the device name after
 * the provider's ("siw_eth0" runs on eth0), which is hostrdma's naming,
 * or for the verbs provider's devices the interface holding its address.
 */
#define _GNU_SOURCE
#include "tools/tool_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "hostrdma-info"

struct opts {
	gboolean verbose, json, list;
	const char *device;
	guint64 port;			/* -i: 0 every port */
	char **routes;
};

static const char *yes(it_boolean_t b)
{
	return b ? "yes" : "no";
}

/* Whether @a (an IP address, or a RoCE GID made from one) is @sa. */
static bool addr_is(const it_net_addr_t *a, const struct sockaddr *sa)
{
	const struct in6_addr *g = &a->addr.gid;

	if (sa->sa_family == AF_INET) {
		const void *v4 = &((const struct sockaddr_in *)sa)->sin_addr;

		if (a->addr_type == IT_IPV4)
			return !memcmp(&a->addr.ipv4, v4, 4);
		return a->addr_type == IT_IB_GID &&
		       IN6_IS_ADDR_V4MAPPED(g) &&
		       !memcmp((const uint8_t *)g + 12, v4, 4);
	}
	if (sa->sa_family == AF_INET6) {
		const void *v6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return (a->addr_type == IT_IPV6 || a->addr_type == IT_IB_GID) &&
		       !memcmp(g, v6, 16);
	}
	return false;
}

/*
 * hostrdma's own providers name their devices PROVIDER_INTERFACE
 * ("siw_eth0"); the verbs provider keeps the kernel's names ("mlx5_0",
 * "bnxt_re0", "siw0"), which may hold a "_" too: what follows it is then
 * no network interface of this host.
 */
static const char *soft_netdev(const char *name)
{
	const char *u = strchr(name, '_');

	return u && if_nametoindex(u + 1) ? u + 1 : NULL;
}

/* The network interface a device runs on: from a soft device's name, or
 * the interface holding a verbs device's first address. */
static const char *netdev_of(const char *name, const it_ia_info_t *in,
			     char *buf, size_t len)
{
	const char *nd = soft_netdev(name);
	struct ifaddrs *ifa, *i;

	if (nd)
		return nd;
	snprintf(buf, len, "?");
	if (getifaddrs(&ifa))
		return buf;
	for (size_t s = 0; s < in->num_spigots; s++) {
		const it_spigot_info_t *sp = &in->spigot_info[s];

		for (size_t j = 0; j < sp->num_net_addr; j++)
			for (i = ifa; i; i = i->ifa_next)
				if (i->ifa_addr &&
				    addr_is(&sp->net_addr[j], i->ifa_addr)) {
					snprintf(buf, len, "%s", i->ifa_name);
					goto out;
				}
	}
out:
	freeifaddrs(ifa);
	return buf;
}

/* The provider: the part before "_" of a soft device's name; a name in
 * the kernel's style comes from the verbs provider. */
static const char *provider_of(const char *name, char *buf, size_t len)
{
	const char *nd = soft_netdev(name);

	if (!nd)
		return "verbs";
	snprintf(buf, len, "%.*s", (int)(nd - 1 - name), name);
	return buf;
}

/*
 * What ibv_devinfo shows that IT-API carries, for one port: the link
 * layer and MTU from a path to the port's own first address (an IB path
 * has an MTU, and a LID unless it runs over Ethernet: RoCE), and the
 * vendor's strings of the device.
 */
struct port_extra {
	const char *link_layer;
	unsigned int mtu;		/* bytes, 0 unknown */
};

static void port_extra(it_ia_handle_t ia, const it_ia_info_t *in,
		       const it_spigot_info_t *sp, struct port_extra *x)
{
	it_path_t path;
	size_t np = 1, total;

	x->mtu = 0;
	if (in->transport_type == IT_IWARP_TCP_TRANSPORT) {
		x->link_layer = "Ethernet";	/* TCP over IP */
		return;
	}
	x->link_layer = "unknown";
	if (in->transport_type != IT_IB_TRANSPORT || !sp->num_net_addr)
		return;
	if (it_get_pathinfo(ia, sp->spigot_id, &sp->net_addr[0], &np, &total,
			    &path) == IT_SUCCESS && np == 1) {
		x->link_layer = path.remote.ib.local_port_lid ? "InfiniBand" :
								"Ethernet";
		if (path.remote.ib.path_mtu >= 1 && path.remote.ib.path_mtu <= 5)
			x->mtu = 256u << (path.remote.ib.path_mtu - 1);
	}
	/* A UD message is one packet: the active MTU. */
	if (!x->mtu && sp->max_ud_send_len)
		x->mtu = (unsigned int)sp->max_ud_send_len;
}

/* The vendor fields of it_ia_info_t as text: iWARP's are the provider
 * and its firmware string, IB's the vendor, part and hardware ids. */
static char *vendor_text(const it_ia_info_t *in)
{
	if (in->transport_type == IT_IWARP_TCP_TRANSPORT)
		return in->vendor.iwarp.valid_vid ?
			       g_strndup((const char *)in->vendor.iwarp.vid,
					 sizeof(in->vendor.iwarp.vid)) :
			       g_strdup("");
	if (in->transport_type == IT_IB_TRANSPORT)
		return g_strdup_printf("vendor_id 0x%04x vendor_part_id %u hw_ver 0x%x",
				       in->vendor.ib.vendor,
				       in->vendor.ib.device,
				       in->vendor.ib.revision);
	return g_strdup("");
}

/* An address as IP: a RoCE GID made from an IPv4 address (::ffff:a.b.c.d)
 * as that address, other GIDs as the IPv6 address they are. */
static const char *ip_str(const it_net_addr_t *a, char *buf, size_t len)
{
	it_net_addr_t v4 = { .addr_type = IT_IPV4 };

	if (a->addr_type == IT_IB_GID &&
	    IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)&a->addr.gid)) {
		memcpy(&v4.addr.ipv4, (const uint8_t *)&a->addr.gid + 12, 4);
		return tool_addr_str(&v4, buf, len);
	}
	return tool_addr_str(a, buf, len);
}

static bool port_wanted(const struct opts *o, const it_spigot_info_t *sp)
{
	return !o->port || sp->spigot_id + 1 == o->port;
}

/* name/value pairs every device shows with -v (IT-API's capabilities). */
#define CAPS(X)                                                            \
	X(ep_work_queues_resizable)                                        \
	X(three_way_handshake_support)                                     \
	X(private_data_support)                                            \
	X(max_message_size_support)                                        \
	X(ird_ord_ia_support)                                              \
	X(ird_ord_suppressible)                                            \
	X(spigot_online_support)                                           \
	X(spigot_offline_support)                                          \
	X(srq_support)                                                     \
	X(hard_hi_watermark_support)                                       \
	X(soft_hi_watermark_support)                                       \
	X(srq_resizable)                                                   \
	X(extended_iwarp_qp_states)                                        \
	X(socket_conversion_support)                                       \
	X(rdma_read_ord_increasable)                                       \
	X(rdma_read_ird_modifiable)                                        \
	X(addr_mode_relative_support)                                      \
	X(rdma_read_requires_remote_write)                                 \
	X(ep_rdma_enables_modifiable)                                      \
	X(rdma_read_local_extensions)                                      \
	X(dto_evd_overflow_detection)                                      \
	X(atomic_support)                                                  \
	X(lmr_link_support)                                                \
	X(direct_lmr_handle_support)                                       \
	X(post_send_unlink_remote_support)                                 \
	X(narrow_rmr_unlink_support)                                       \
	X(wide_rmr_unlink_support)                                         \
	X(unlink_fence_support)

#define PDATA(X)                                                           \
	X(connect_private_data_len)                                        \
	X(accept_private_data_len)                                         \
	X(reject_private_data_len)                                         \
	X(disconnect_private_data_len)                                     \
	X(ud_req_private_data_len)                                         \
	X(ud_rep_private_data_len)

static const char *services(it_transport_service_type_t s, char *buf,
			    size_t len)
{
	snprintf(buf, len, "%s%s%s", s & IT_RC_SERVICE ? "RC" : "",
		 (s & IT_RC_SERVICE) && (s & IT_UD_SERVICE) ? " " : "",
		 s & IT_UD_SERVICE ? "UD" : "");
	return buf;
}

static void text_device(const struct opts *o, const char *name,
			it_ia_handle_t ia, const it_ia_info_t *in)
{
	char b[INET6_ADDRSTRLEN + 32];
	g_autofree char *vendor = vendor_text(in);

	printf("device: %s\n", name);
	printf("\tprovider:\t\t%s\n", provider_of(name, b, sizeof(b)));
	printf("\ttransport:\t\t%s\n",
	       tool_transport_name(in->transport_type));
	printf("\tnetwork interface:\t%s\n",
	       netdev_of(name, in, b, sizeof(b)));
	printf("\tvendor/firmware:\t%s\n", vendor);
	printf("\tIT-API version:\t\t%u.%u\n", in->api_major_version,
	       in->api_minor_version);
	printf("\tsoftware version:\t%u.%u\n", in->sw_major_version,
	       in->sw_minor_version);
	printf("\tservices:\t\t%s\n",
	       services(in->supported_service_types, b, sizeof(b)));
	for (size_t s = 0; s < in->num_spigots; s++) {
		const it_spigot_info_t *sp = &in->spigot_info[s];
		struct port_extra x;

		if (!port_wanted(o, sp))
			continue;
		port_extra(ia, in, sp, &x);
		printf("\tport:\t%zu (spigot %zu)\n", sp->spigot_id + 1,
		       sp->spigot_id);
		printf("\t\tstate:\t\t\t%s\n",
		       sp->spigot_online ? "PORT_ACTIVE (online)" :
					   "PORT_DOWN (offline)");
		printf("\t\tlink_layer:\t\t%s\n", x.link_layer);
		if (x.mtu)
			printf("\t\tactive_mtu:\t\t%u\n", x.mtu);
		else
			printf("\t\tactive_mtu:\t\tnot in IT-API for %s\n",
			       tool_transport_name(in->transport_type));
		printf("\t\tmax RC Send:\t\t%zu bytes\n", sp->max_rc_send_len);
		printf("\t\tmax RC RDMA:\t\t%zu bytes\n", sp->max_rc_rdma_len);
		if (in->supported_service_types & IT_UD_SERVICE)
			printf("\t\tmax UD Send:\t\t%zu bytes\n",
			       sp->max_ud_send_len);
		for (size_t j = 0; j < sp->num_net_addr; j++) {
			const it_net_addr_t *a = &sp->net_addr[j];

			if (a->addr_type == IT_IB_GID)
				printf("\t\tGID[%3zu]:\t\t%s\n", j,
				       tool_addr_str(a, b, sizeof(b)));
			else
				printf("\t\taddress:\t\t%s\n",
				       tool_addr_str(a, b, sizeof(b)));
		}
	}
	if (!o->verbose)
		return;
	printf("\tDTO alignment hint:\t%u\n", in->dto_alignment_hint);
#define X(f) printf("\t%-34s%zu\n", #f ":", in->f);
	PDATA(X)
#undef X
#define X(f) printf("\t%-34s%s\n", #f ":", yes(in->f));
	CAPS(X)
#undef X
	printf("\t%-34s%s%s\n", "rmr_types_supported:",
	       in->rmr_types_supported & IT_RMR_TYPE_NARROW ? "narrow " : "",
	       in->rmr_types_supported & IT_RMR_TYPE_WIDE ? "wide" :
	       in->rmr_types_supported ? "" : "none");
	printf("\t%-34s%#x\n", "iobl_types_supported:",
	       (unsigned int)in->iobl_types_supported);
	printf("\tnot in IT-API (ibv_devinfo has them): GUIDs, LIDs, "
	       "port states other than active/down, resource counts "
	       "(QPs, CQs, MRs, PDs)\n");
}

static void json_member_str(JsonBuilder *b, const char *name, const char *v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_string_value(b, v);
}

static void json_member_int(JsonBuilder *b, const char *name, gint64 v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_int_value(b, v);
}

static void json_member_bool(JsonBuilder *b, const char *name, gboolean v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_boolean_value(b, v);
}

static void json_device(JsonBuilder *jb, const struct opts *o,
			const char *name, it_ia_handle_t ia,
			const it_ia_info_t *in)
{
	char b[INET6_ADDRSTRLEN + 32];
	g_autofree char *vendor = vendor_text(in);
	g_autofree char *api = g_strdup_printf("%u.%u", in->api_major_version,
					       in->api_minor_version);
	g_autofree char *sw = g_strdup_printf("%u.%u", in->sw_major_version,
					      in->sw_minor_version);

	json_builder_begin_object(jb);
	json_member_str(jb, "name", name);
	json_member_str(jb, "provider", provider_of(name, b, sizeof(b)));
	json_member_str(jb, "transport",
			tool_transport_name(in->transport_type));
	json_member_str(jb, "netdev", netdev_of(name, in, b, sizeof(b)));
	json_member_str(jb, "vendor", vendor);
	json_member_str(jb, "api_version", api);
	json_member_str(jb, "sw_version", sw);
	json_member_str(jb, "services",
			services(in->supported_service_types, b, sizeof(b)));
	json_builder_set_member_name(jb, "spigots");
	json_builder_begin_array(jb);
	for (size_t s = 0; s < in->num_spigots; s++) {
		const it_spigot_info_t *sp = &in->spigot_info[s];
		struct port_extra x;

		if (!port_wanted(o, sp))
			continue;
		port_extra(ia, in, sp, &x);
		json_builder_begin_object(jb);
		json_member_int(jb, "id", (gint64)sp->spigot_id);
		json_member_int(jb, "port", (gint64)sp->spigot_id + 1);
		json_member_bool(jb, "online", sp->spigot_online);
		json_member_str(jb, "link_layer", x.link_layer);
		if (x.mtu)
			json_member_int(jb, "active_mtu", x.mtu);
		json_member_int(jb, "max_rc_send_len",
				(gint64)sp->max_rc_send_len);
		json_member_int(jb, "max_rc_rdma_len",
				(gint64)sp->max_rc_rdma_len);
		json_member_int(jb, "max_ud_send_len",
				(gint64)sp->max_ud_send_len);
		json_builder_set_member_name(jb, "addresses");
		json_builder_begin_array(jb);
		for (size_t j = 0; j < sp->num_net_addr; j++)
			json_builder_add_string_value(
				jb, ip_str(&sp->net_addr[j], b, sizeof(b)));
		json_builder_end_array(jb);
		json_builder_set_member_name(jb, "gids");
		json_builder_begin_array(jb);
		for (size_t j = 0; j < sp->num_net_addr; j++)
			if (sp->net_addr[j].addr_type == IT_IB_GID)
				json_builder_add_string_value(
					jb, tool_addr_str(&sp->net_addr[j], b,
							  sizeof(b)));
		json_builder_end_array(jb);
		json_builder_end_object(jb);
	}
	json_builder_end_array(jb);
	if (o->verbose) {
		json_member_int(jb, "dto_alignment_hint",
				in->dto_alignment_hint);
#define X(f) json_member_int(jb, #f, (gint64)in->f);
		PDATA(X)
#undef X
#define X(f) json_member_bool(jb, #f, in->f);
		CAPS(X)
#undef X
		json_member_int(jb, "rmr_types_supported",
				in->rmr_types_supported);
		json_member_int(jb, "iobl_types_supported",
				in->iobl_types_supported);
	}
	json_builder_end_object(jb);
}

/* Which device reaches @dest, and the path it_get_pathinfo gives; in
 * @jb (an array is open there) with --json. */
static int route(const struct opts *o, const char *dest, JsonBuilder *jb)
{
	it_interface_t itf[64];
	size_t n = 64, total;
	it_net_addr_t dst;
	char b1[INET6_ADDRSTRLEN + 32], b2[INET6_ADDRSTRLEN + 32];
	int found = 0;

	if (tool_parse_addr(PROG, dest, &dst))
		return 1;
	it_interface_list(itf, &n, &total);
	if (jb) {
		json_builder_begin_object(jb);
		json_member_str(jb, "destination", dest);
		json_builder_set_member_name(jb, "paths");
		json_builder_begin_array(jb);
	}
	for (size_t i = 0; i < n; i++) {
		it_ia_handle_t ia;
		it_path_t p;
		size_t np = 1;

		if (o->device && strcmp(o->device, itf[i].name))
			continue;
		if (it_ia_create(itf[i].name, 2, 1, &ia) != IT_SUCCESS)
			continue;
		if (it_get_pathinfo(ia, 0, &dst, &np, &total, &p) ==
			    IT_SUCCESS && np == 1) {
			const char *l = "?", *r = "?";

			if (itf[i].transport_type == IT_IWARP_TCP_TRANSPORT) {
				int af = p.remote.iwarp.ip_vers ==
							 IT_IP_VERS_IPV6 ?
						 AF_INET6 :
						 AF_INET;

				l = inet_ntop(af, &p.remote.iwarp.laddr, b1,
					      sizeof(b1));
				r = inet_ntop(af, &p.remote.iwarp.raddr, b2,
					      sizeof(b2));
			} else if (itf[i].transport_type == IT_IB_TRANSPORT) {
				l = inet_ntop(AF_INET6,
					      &p.remote.ib.local_port_gid, b1,
					      sizeof(b1));
				r = inet_ntop(AF_INET6,
					      &p.remote.ib.remote_port_gid, b2,
					      sizeof(b2));
			}
			if (jb) {
				json_builder_begin_object(jb);
				json_member_str(jb, "device", itf[i].name);
				json_member_str(jb, "local", l);
				json_member_str(jb, "remote", r);
				json_builder_end_object(jb);
			} else {
				printf("%-24s via %-12s %s -> %s\n", dest,
				       itf[i].name, l, r);
			}
			found++;
		}
		it_ia_free(ia);
	}
	if (jb) {
		json_builder_end_array(jb);
		json_builder_end_object(jb);
	} else if (!found) {
		printf("%-24s no RDMA device reaches it\n", dest);
	}
	return found ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	g_autofree char *port_arg = NULL;
	const GOptionEntry entries[] = {
		{ "list", 'l', 0, G_OPTION_ARG_NONE, &o.list,
		  "Device names only", NULL },
		{ "device", 'd', 0, G_OPTION_ARG_STRING, &o.device,
		  "This device only", "NAME" },
		{ "ib-port", 'i', 0, G_OPTION_ARG_STRING, &port_arg,
		  "This port (spigot) only, from 1 as ibv_devinfo -i", "PORT" },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &o.verbose,
		  "Every capability IT-API reports", NULL },
		{ "route", 'r', 0, G_OPTION_ARG_STRING_ARRAY, &o.routes,
		  "Which device reaches ADDR, and the path (repeatable)",
		  "ADDR" },
		{ "json", 'j', 0, G_OPTION_ARG_NONE, &o.json,
		  "One JSON object", NULL },
		{ NULL }
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(
		"- hostrdma's RDMA devices as IT-API describes them");
	g_autoptr(JsonBuilder) jb = NULL;
	it_interface_t itf[64];
	size_t n = 64, total, shown = 0;
	int rc = 0, nroutes;

	tool_init(PROG);
	g_option_context_set_description(ctx, "See hostrdma-info(1).\n");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (tool_parse_options(PROG, ctx, &argc, &argv))
		return 2;
	if (argc > 1) {
		fprintf(stderr, "%s: unexpected argument %s\n", PROG, argv[1]);
		return 2;
	}
	if (port_arg && tool_parse_uint(PROG, "-i", port_arg, 1, 255, &o.port))
		return 2;
	nroutes = o.routes ? (int)g_strv_length(o.routes) : 0;
	it_interface_list(itf, &n, &total);
	if (o.json) {
		jb = json_builder_new();
		json_builder_begin_object(jb);
		json_builder_set_member_name(jb, "devices");
		json_builder_begin_array(jb);
	}
	for (size_t i = 0; i < n && !nroutes; i++) {
		it_ia_handle_t ia;
		it_ia_info_t *in;
		it_status_t st;
		bool has_port = false;

		if (o.device && strcmp(o.device, itf[i].name))
			continue;
		if (o.list && !o.json) {
			printf("%-20s %s\n", itf[i].name,
			       tool_transport_name(itf[i].transport_type));
			shown++;
			continue;
		}
		st = it_ia_create(itf[i].name, 2, 1, &ia);
		if (st == IT_SUCCESS)
			st = it_ia_query(ia, &in);
		else
			ia = NULL;
		if (st != IT_SUCCESS) {
			fprintf(stderr, "%s: %s: %s(%s)\n", PROG, itf[i].name,
				st == IT_ERR_RESOURCES ?
					"held by another process " :
					"did not open ",
				tool_status_name(st));
			rc = 1;
			if (ia)
				it_ia_free(ia);
			continue;
		}
		for (size_t s = 0; s < in->num_spigots; s++)
			has_port |= port_wanted(&o, &in->spigot_info[s]);
		if (!has_port) {
			fprintf(stderr, "%s: %s has no port %llu\n", PROG,
				itf[i].name, (unsigned long long)o.port);
			rc = 1;
		} else if (o.json) {
			json_device(jb, &o, itf[i].name, ia, in);
		} else {
			text_device(&o, itf[i].name, ia, in);
		}
		shown += has_port;
		it_ia_info_free(in);
		it_ia_free(ia);
	}
	if (o.json) {
		json_builder_end_array(jb);
		if (nroutes) {
			json_builder_set_member_name(jb, "routes");
			json_builder_begin_array(jb);
		}
	}
	for (int i = 0; i < nroutes; i++)
		rc |= route(&o, o.routes[i], jb);
	if (o.json) {
		g_autoptr(JsonGenerator) g = json_generator_new();
		g_autoptr(JsonNode) root = NULL;
		g_autofree char *text = NULL;

		if (nroutes)
			json_builder_end_array(jb);
		json_builder_end_object(jb);
		root = json_builder_get_root(jb);
		json_generator_set_root(g, root);
		text = json_generator_to_data(g, NULL);
		printf("%s\n", text);
	}
	g_strfreev(o.routes);
	if (!shown && !nroutes) {
		char names[512];

		if (!rc && o.device)
			fprintf(stderr, "%s: there is no device %s "
				"(IT_ERR_INVALID_NAME); the devices here: %s\n",
				PROG, o.device,
				tool_device_names(names, sizeof(names)));
		else if (!rc)
			fprintf(stderr, "%s: no RDMA devices (see hostrdma(7): "
				"HOSTRDMA_PROVIDER_PATH, HOSTRDMA_DEVICES)\n",
				PROG);
		return 1;
	}
	return rc;
}
