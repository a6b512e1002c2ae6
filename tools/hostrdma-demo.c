/* SPDX-License-Identifier: MIT */
/*
 * hostrdma-demo: show what the stack sees on this machine: providers,
 * the RDMA devices they run on network interfaces, and how destinations
 * resolve to a source address, an interface, a next hop and a device.
 */
#include "config.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <json-glib/json-glib.h>

#include "kal/kal.h"
#include "ual/ual.h"

static gboolean opt_json;
static gboolean opt_verbose;
static gchar **opt_dests;

static const GOptionEntry entries[] = {
	{ "json", 'j', 0, G_OPTION_ARG_NONE, &opt_json,
	  "Print one JSON object instead of tables", NULL },
	{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose,
	  "Also print device limits and provider load errors", NULL },
	{ G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_dests,
	  NULL, "[DESTINATION...]" },
	{ NULL }
};

static const char *transport_name(enum rnicpi_transport t)
{
	switch (t) {
	case RNICPI_TRANSPORT_IWARP:
		return "iWARP";
	case RNICPI_TRANSPORT_ROCE:
		return "RoCEv2";
	case RNICPI_TRANSPORT_IB:
		return "InfiniBand";
	}
	return "unknown";
}

static const char *port_state_name(enum rnicpi_port_state s)
{
	static const char *const names[] = {
		[RNICPI_PORT_NOP] = "NOP",	 [RNICPI_PORT_DOWN] = "DOWN",
		[RNICPI_PORT_INIT] = "INIT",	 [RNICPI_PORT_ARMED] = "ARMED",
		[RNICPI_PORT_ACTIVE] = "ACTIVE",
	};

	if ((unsigned int)s < G_N_ELEMENTS(names) && names[s])
		return names[s];
	return "?";
}

static char *hwaddr_str(const uint8_t *a, uint32_t len)
{
	GString *s = g_string_new(NULL);
	uint32_t i;

	for (i = 0; i < len; i++)
		g_string_append_printf(s, "%s%02x", i ? ":" : "", a[i]);
	return g_string_free(s, FALSE);
}

/* Parse "1.2.3.4" or "::1" (or "fe80::1%eth0") into @ss. */
static int parse_addr(const char *text, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	g_autofree char *copy = g_strdup(text);
	char *scope = strchr(copy, '%');

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, copy, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		return 0;
	}
	if (scope)
		*scope++ = '\0';
	if (inet_pton(AF_INET6, copy, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		if (scope) {
			sin6->sin6_scope_id = if_nametoindex(scope);
			if (!sin6->sin6_scope_id)
				return -ENODEV;
		}
		return 0;
	}
	return -EINVAL;
}

/* JSON numbers from json-glib are signed 64-bit: "unlimited" limits
 * (UINT64_MAX) would print as -1, so values past INT64_MAX go out as
 * doubles. */
static void add_u64(JsonBuilder *b, const char *name, uint64_t value)
{
	json_builder_set_member_name(b, name);
	if (value > (uint64_t)G_MAXINT64)
		json_builder_add_double_value(b, (double)value);
	else
		json_builder_add_int_value(b, (gint64)value);
}

static void add_device(JsonBuilder *b, struct ual_device *d)
{
	struct rnicpi_device_attr attr = { 0 };
	struct rnicpi_port_attr port = { 0 };
	int qerr = ual_device_query(d, &attr);
	int perr = ual_device_query_port(d, 1, &port);

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "name");
	json_builder_add_string_value(b, ual_device_name(d));
	json_builder_set_member_name(b, "provider");
	json_builder_add_string_value(b,
		ual_provider_name(ual_device_provider(d)));
	json_builder_set_member_name(b, "transport");
	json_builder_add_string_value(b,
		transport_name(ual_device_transport(d)));
	json_builder_set_member_name(b, "interface");
	json_builder_add_string_value(b, ual_device_ifname(d));
	json_builder_set_member_name(b, "port_state");
	json_builder_add_string_value(b, perr ? "unknown" :
				      port_state_name(port.state));
	if (!qerr) {
		json_builder_set_member_name(b, "max_qp");
		json_builder_add_int_value(b, attr.max_qp);
		add_u64(b, "max_mr_size", attr.max_mr_size);
		add_u64(b, "max_msg_size", attr.max_msg_size);
		json_builder_set_member_name(b, "max_sge");
		json_builder_add_int_value(b, attr.max_sge);
		json_builder_set_member_name(b, "max_inline_data");
		json_builder_add_int_value(b, attr.max_inline_data);
		json_builder_set_member_name(b, "ird");
		json_builder_add_int_value(b, attr.max_qp_rd_atom);
		json_builder_set_member_name(b, "ord");
		json_builder_add_int_value(b, attr.max_qp_init_rd_atom);
	}
	json_builder_end_object(b);
}

static void print_device(struct ual_device *d)
{
	struct rnicpi_device_attr attr = { 0 };
	struct rnicpi_port_attr port = { 0 };
	int perr = ual_device_query_port(d, 1, &port);

	printf("  %-16s %-8s %-10s %-10s %s\n", ual_device_name(d),
	       ual_provider_name(ual_device_provider(d)),
	       transport_name(ual_device_transport(d)), ual_device_ifname(d),
	       perr ? "unknown" : port_state_name(port.state));
	if (opt_verbose && ual_device_query(d, &attr) == 0)
		printf("  %16s max_qp %u, max_mr_size %" G_GUINT64_FORMAT
		       ", max_msg_size %" G_GUINT64_FORMAT
		       ", max_sge %u, inline %u, IRD %u, ORD %u\n", "",
		       attr.max_qp, attr.max_mr_size, attr.max_msg_size,
		       attr.max_sge, attr.max_inline_data,
		       attr.max_qp_rd_atom, attr.max_qp_init_rd_atom);
}

/* Resolve @text; adds a JSON object to @b (if set) or prints a line. */
static int show_route(struct ual *u, struct kal_nl *nl, const char *text,
		      JsonBuilder *b)
{
	struct sockaddr_storage dst;
	struct kal_route r = { 0 };
	char src[INET6_ADDRSTRLEN], gw[INET6_ADDRSTRLEN];
	g_autofree char *mac = NULL;
	g_autoptr(ual_device) dev = NULL;
	int err;

	err = parse_addr(text, &dst);
	if (err) {
		g_printerr("hostrdma-demo: '%s' is not an IPv4 or IPv6 "
			   "address\n", text);
		return err;
	}
	err = kal_route_resolve(nl, (struct sockaddr *)&dst, NULL, 1000, &r);
	if (err == 0 || err == -ETIMEDOUT)
		dev = ual_device_by_ifindex(u, r.ifindex, 0);
	if (err && err != -ETIMEDOUT) {
		if (b) {
			json_builder_begin_object(b);
			json_builder_set_member_name(b, "destination");
			json_builder_add_string_value(b, text);
			json_builder_set_member_name(b, "error");
			json_builder_add_string_value(b, g_strerror(-err));
			json_builder_end_object(b);
		} else {
			printf("  %-24s %s\n", text, g_strerror(-err));
		}
		return err;
	}
	kal_addr_str((struct sockaddr *)&r.src, src, sizeof(src));
	if (r.gateway.ss_family != AF_UNSPEC)
		kal_addr_str((struct sockaddr *)&r.gateway, gw, sizeof(gw));
	else
		g_strlcpy(gw, r.type == KAL_ROUTE_LOCAL ? "local" : "on-link",
			  sizeof(gw));
	mac = r.nh_hwaddr_len ? hwaddr_str(r.nh_hwaddr, r.nh_hwaddr_len) :
				g_strdup(err ? "unresolved" : "-");
	if (b) {
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "destination");
		json_builder_add_string_value(b, text);
		json_builder_set_member_name(b, "source");
		json_builder_add_string_value(b, src);
		json_builder_set_member_name(b, "interface");
		json_builder_add_string_value(b, r.ifname);
		json_builder_set_member_name(b, "next_hop");
		json_builder_add_string_value(b, gw);
		json_builder_set_member_name(b, "next_hop_mac");
		json_builder_add_string_value(b, mac);
		json_builder_set_member_name(b, "mtu");
		json_builder_add_int_value(b, r.mtu);
		json_builder_set_member_name(b, "device");
		if (dev)
			json_builder_add_string_value(b, ual_device_name(dev));
		else
			json_builder_add_null_value(b);
		json_builder_end_object(b);
	} else {
		printf("  %-24s src %-16s dev %-8s via %-16s mac %-17s mtu %u"
		       " -> %s\n", text, src, r.ifname, gw, mac, r.mtu,
		       dev ? ual_device_name(dev) : "(no RDMA device)");
	}
	return 0;
}

int main(int argc, char **argv)
{
	g_autoptr(GOptionContext) ctx = NULL;
	g_autoptr(GError) error = NULL;
	const GPtrArray *providers;
	g_autoptr(GPtrArray) devices = NULL;
	g_autoptr(JsonBuilder) b = NULL;
	static const char *const default_dests[] = { "127.0.0.1", "::1",
						     NULL };
	const char *const *dests;
	const GPtrArray *load_errors;
	struct kal_nl *nl = NULL;
	struct ual *u = NULL;
	int failures = 0;
	guint i;
	int err;

	ctx = g_option_context_new("- what hostrdma sees on this machine");
	g_option_context_set_summary(ctx,
		"Lists the verbs providers that loaded, the RDMA devices they "
		"run on\nnetwork interfaces, and how each DESTINATION (default: "
		"127.0.0.1 and ::1)\nresolves to a source address, interface, "
		"next hop and RDMA device.");
	g_option_context_set_description(ctx,
		"Environment: HOSTRDMA_PROVIDER_PATH, HOSTRDMA_DEVICES, "
		"HOSTRDMA_CONF,\nHOSTRDMA_OPTIONS (see hostrdma(7)). "
		"G_MESSAGES_DEBUG=all shows debug logs.\n\n"
		"Exit status: 0 if every destination resolved, 1 otherwise, "
		"2 on a usage error.");
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		g_printerr("hostrdma-demo: %s\n", error->message);
		return 2;
	}
	dests = opt_dests ? (const char *const *)opt_dests : default_dests;

	err = ual_open(&u);
	if (err) {
		g_printerr("hostrdma-demo: cannot open the access layer: %s\n",
			   g_strerror(-err));
		return 1;
	}
	err = kal_nl_open(&nl);
	if (err) {
		g_printerr("hostrdma-demo: cannot open netlink: %s\n",
			   g_strerror(-err));
		ual_close(u);
		return 1;
	}
	providers = ual_provider_list(u);
	devices = ual_device_list(u);
	load_errors = ual_load_errors(u);

	if (opt_json) {
		b = json_builder_new();
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "providers");
		json_builder_begin_array(b);
		for (i = 0; i < providers->len; i++) {
			const struct ual_provider *p = providers->pdata[i];

			json_builder_begin_object(b);
			json_builder_set_member_name(b, "name");
			json_builder_add_string_value(b, ual_provider_name(p));
			json_builder_set_member_name(b, "transport");
			json_builder_add_string_value(b,
				transport_name(ual_provider_transport(p)));
			json_builder_set_member_name(b, "origin");
			json_builder_add_string_value(b,
				ual_provider_origin(p));
			json_builder_end_object(b);
		}
		json_builder_end_array(b);
		json_builder_set_member_name(b, "load_errors");
		json_builder_begin_array(b);
		for (i = 0; i < load_errors->len; i++)
			json_builder_add_string_value(b,
				load_errors->pdata[i]);
		json_builder_end_array(b);
		json_builder_set_member_name(b, "devices");
		json_builder_begin_array(b);
		for (i = 0; i < devices->len; i++)
			add_device(b, devices->pdata[i]);
		json_builder_end_array(b);
		json_builder_set_member_name(b, "routes");
		json_builder_begin_array(b);
	} else {
		printf("Providers (%u):\n", providers->len);
		for (i = 0; i < providers->len; i++) {
			const struct ual_provider *p = providers->pdata[i];

			printf("  %-8s %-10s %s  [%s]\n", ual_provider_name(p),
			       transport_name(ual_provider_transport(p)),
			       ual_provider_description(p),
			       ual_provider_origin(p));
		}
		if (load_errors->len && opt_verbose)
			for (i = 0; i < load_errors->len; i++)
				printf("  not loaded: %s\n",
				       (const char *)load_errors->pdata[i]);
		else if (load_errors->len)
			printf("  (%u provider(s) not loaded; -v says why)\n",
			       load_errors->len);
		printf("\nDevices (%u):\n", devices->len);
		for (i = 0; i < devices->len; i++)
			print_device(devices->pdata[i]);
		if (!devices->len)
			printf("  none: no provider accepted an interface "
			       "that is up with an address\n");
		printf("\nRoutes:\n");
	}
	for (i = 0; dests[i]; i++)
		if (show_route(u, nl, dests[i], b) != 0)
			failures++;
	if (b) {
		g_autoptr(JsonGenerator) gen = json_generator_new();
		g_autoptr(JsonNode) root = NULL;
		g_autofree char *text = NULL;

		json_builder_end_array(b);
		json_builder_end_object(b);
		root = json_builder_get_root(b);
		json_generator_set_root(gen, root);
		json_generator_set_pretty(gen, TRUE);
		text = json_generator_to_data(gen, NULL);
		printf("%s\n", text);
	}
	/* The arrays hold device references: drop them before closing. */
	g_clear_pointer(&devices, g_ptr_array_unref);
	kal_nl_close(nl);
	ual_close(u);
	g_strfreev(opt_dests);
	return failures ? 1 : 0;
}
