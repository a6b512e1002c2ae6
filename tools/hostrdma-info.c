/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-info - what ibv_devinfo shows, for hostrdma's devices, from
 * IT-API alone: it_interface_list, it_ia_query, it_get_pathinfo.
 *
 * IT-API has no network interface name, port state beyond online or
 * offline, MTU, GUIDs or resource counts (QPs, CQs, MRs): those are not
 * shown; -v says so. The interface is the part of the device name after
 * the provider's ("siw_eth0" runs on eth0), which is hostrdma's naming.
 */
#define _GNU_SOURCE
#include "tools/tool_util.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "hostrdma-info"

struct opts {
	bool verbose, json, list;
	const char *device;
	const char *const *routes;
	int nroutes;
};

static const char *yes(it_boolean_t b)
{
	return b ? "yes" : "no";
}

static const char *jbool(it_boolean_t b)
{
	return b ? "true" : "false";
}

/* JSON string: device names and addresses need no escapes beyond these. */
static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

static const char *netdev_of(const char *name)
{
	const char *u = strchr(name, '_');

	return u ? u + 1 : "?";
}

static const char *provider_of(const char *name, char *buf, size_t len)
{
	const char *u = strchr(name, '_');

	snprintf(buf, len, "%.*s", u ? (int)(u - name) : (int)strlen(name),
		 name);
	return buf;
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
			const it_ia_info_t *in)
{
	char b[INET6_ADDRSTRLEN + 32];

	printf("device: %s\n", name);
	printf("\tprovider:\t\t%s\n", provider_of(name, b, sizeof(b)));
	printf("\ttransport:\t\t%s\n",
	       tool_transport_name(in->transport_type));
	printf("\tnetwork interface:\t%s\n", netdev_of(name));
	printf("\tIT-API version:\t\t%u.%u\n", in->api_major_version,
	       in->api_minor_version);
	printf("\tsoftware version:\t%u.%u\n", in->sw_major_version,
	       in->sw_minor_version);
	printf("\tservices:\t\t%s\n",
	       services(in->supported_service_types, b, sizeof(b)));
	for (size_t s = 0; s < in->num_spigots; s++) {
		const it_spigot_info_t *sp = &in->spigot_info[s];

		printf("\tspigot %zu (port):\n", sp->spigot_id);
		printf("\t\tstate:\t\t\t%s\n",
		       sp->spigot_online ? "ONLINE (active)" : "OFFLINE");
		printf("\t\tmax RC Send:\t\t%zu bytes\n", sp->max_rc_send_len);
		printf("\t\tmax RC RDMA:\t\t%zu bytes\n", sp->max_rc_rdma_len);
		if (in->supported_service_types & IT_UD_SERVICE)
			printf("\t\tmax UD Send:\t\t%zu bytes\n",
			       sp->max_ud_send_len);
		for (size_t j = 0; j < sp->num_net_addr; j++)
			printf("\t\taddress:\t\t%s\n",
			       tool_addr_str(&sp->net_addr[j], b, sizeof(b)));
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
	printf("\tnot in IT-API (ibv_devinfo has them): MTU, GUIDs, "
	       "port states other than online/offline, resource counts "
	       "(QPs, CQs, MRs, PDs)\n");
}

static void json_device(const struct opts *o, const char *name,
			const it_ia_info_t *in, bool first)
{
	char b[INET6_ADDRSTRLEN + 32];

	printf("%s{\"name\":", first ? "" : ",");
	jstr(name);
	printf(",\"provider\":");
	jstr(provider_of(name, b, sizeof(b)));
	printf(",\"transport\":");
	jstr(tool_transport_name(in->transport_type));
	printf(",\"netdev\":");
	jstr(netdev_of(name));
	printf(",\"api_version\":\"%u.%u\",\"sw_version\":\"%u.%u\",\"services\":",
	       in->api_major_version, in->api_minor_version,
	       in->sw_major_version, in->sw_minor_version);
	jstr(services(in->supported_service_types, b, sizeof(b)));
	printf(",\"spigots\":[");
	for (size_t s = 0; s < in->num_spigots; s++) {
		const it_spigot_info_t *sp = &in->spigot_info[s];

		printf("%s{\"id\":%zu,\"online\":%s,\"max_rc_send_len\":%zu,\"max_rc_rdma_len\":%zu,\"max_ud_send_len\":%zu,\"addresses\":[",
		       s ? "," : "", sp->spigot_id, jbool(sp->spigot_online),
		       sp->max_rc_send_len, sp->max_rc_rdma_len,
		       sp->max_ud_send_len);
		for (size_t j = 0; j < sp->num_net_addr; j++) {
			printf("%s", j ? "," : "");
			jstr(tool_addr_str(&sp->net_addr[j], b, sizeof(b)));
		}
		printf("]}");
	}
	printf("]");
	if (o->verbose) {
		printf(",\"dto_alignment_hint\":%u", in->dto_alignment_hint);
#define X(f) printf(",\"%s\":%zu", #f, in->f);
		PDATA(X)
#undef X
#define X(f) printf(",\"%s\":%s", #f, jbool(in->f));
		CAPS(X)
#undef X
		printf(",\"rmr_types_supported\":%u,\"iobl_types_supported\":%u",
		       (unsigned int)in->rmr_types_supported,
		       (unsigned int)in->iobl_types_supported);
	}
	printf("}");
}

/* Which device reaches @dest, and the path it_get_pathinfo gives. */
static int route(const struct opts *o, const char *dest, bool first)
{
	it_interface_t itf[64];
	size_t n = 64, total;
	it_net_addr_t dst;
	char b1[INET6_ADDRSTRLEN + 32], b2[INET6_ADDRSTRLEN + 32];
	int found = 0;

	if (tool_parse_addr(PROG, dest, &dst))
		return 1;
	it_interface_list(itf, &n, &total);
	if (o->json) {
		printf("%s{\"destination\":", first ? "" : ",");
		jstr(dest);
		printf(",\"paths\":[");
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
			if (o->json) {
				printf("%s{\"device\":", found ? "," : "");
				jstr(itf[i].name);
				printf(",\"local\":");
				jstr(l);
				printf(",\"remote\":");
				jstr(r);
				printf("}");
			} else {
				printf("%-24s via %-12s %s -> %s\n", dest,
				       itf[i].name, l, r);
			}
			found++;
		}
		it_ia_free(ia);
	}
	if (o->json)
		printf("]}");
	else if (!found)
		printf("%-24s no RDMA device reaches it\n", dest);
	return found ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-v] [--json] [-d DEVICE] [-l] [--route ADDRESS]...\n"
		"Shows hostrdma's RDMA devices as IT-API describes them.\n"
		"  -l, --list          device names only\n"
		"  -d, --device=NAME   this device only\n"
		"  -v, --verbose       every capability IT-API reports\n"
		"  -r, --route=ADDR    which device reaches ADDR, and the path\n"
		"      --json          one JSON object\n"
		"  -h, --help          this text\n"
		"See hostrdma-info(1).\n",
		PROG);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "list", no_argument, NULL, 'l' },
		{ "device", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "route", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *routes[32];
	struct opts o = { .routes = routes };
	it_interface_t itf[64];
	size_t n = 64, total, shown = 0;
	int opt, rc = 0;

	while ((opt = getopt_long(argc, argv, "ld:vr:jh", longs, NULL)) !=
	       -1) {
		switch (opt) {
		case 'l': o.list = true; break;
		case 'd': o.device = optarg; break;
		case 'v': o.verbose = true; break;
		case 'r':
			if (o.nroutes < 32)
				routes[o.nroutes++] = optarg;
			break;
		case 'j': o.json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	it_interface_list(itf, &n, &total);
	if (o.json)
		printf("{\"devices\":[");
	for (size_t i = 0; i < n && !o.nroutes; i++) {
		it_ia_handle_t ia;
		it_ia_info_t *in;
		it_status_t st;

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
			fprintf(stderr, "%s: %s: %s\n", PROG, itf[i].name,
				tool_status_name(st));
			rc = 1;
			if (ia)
				it_ia_free(ia);
			continue;
		}
		if (o.json)
			json_device(&o, itf[i].name, in, shown == 0);
		else
			text_device(&o, itf[i].name, in);
		shown++;
		it_ia_info_free(in);
		it_ia_free(ia);
	}
	if (o.json)
		printf("]%s", o.nroutes ? ",\"routes\":[" : "");
	for (int i = 0; i < o.nroutes; i++)
		rc |= route(&o, routes[i], i == 0);
	if (o.json)
		printf("%s}\n", o.nroutes ? "]" : "");
	if (!shown && !o.nroutes) {
		fprintf(stderr, "%s: %s\n", PROG,
			o.device ? "no such device" :
				   "no RDMA devices (see hostrdma(7): "
				   "HOSTRDMA_PROVIDER_PATH, HOSTRDMA_DEVICES)");
		return 1;
	}
	return rc;
}
