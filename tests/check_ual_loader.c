/* SPDX-License-Identifier: MIT */
/*
 * ual/: provider loading (modules, refusals, built-ins), ops completion,
 * device selection from the environment and the configuration file,
 * provider options.
 */
#include "config.h"

#include <dlfcn.h>
#include <net/if.h>
#include <stdio.h>
#include <unistd.h>

#include "tests/suites.h"
#include "tests/testutil.h"
#include "tests/testutil_ual.h"
#include "ual/ual_private.h"

const struct rnicpi_provider *rnicpi_builtin_test(void);

static const struct ual_provider *provider(struct ual *u, const char *name)
{
	const GPtrArray *list = ual_provider_list(u);
	guint i;

	for (i = 0; i < list->len; i++)
		if (strcmp(ual_provider_name(list->pdata[i]), name) == 0)
			return list->pdata[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Loader                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_loads_test_provider)
{
	struct ual *u = ut_open();
	const struct ual_provider *p = provider(u, "test");
	struct ual_device *d;
	struct rnicpi_device_attr attr;
	struct rnicpi_port_attr port;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(ual_provider_list(u)->len, 1);
	ck_assert_str_eq(ual_provider_origin(p), TESTPROV_DIR "/testprov.so");
	ck_assert_int_eq(ual_provider_transport(p), RNICPI_TRANSPORT_ROCE);
	ck_assert(strstr(ual_provider_description(p), "test provider"));
	ck_assert_uint_eq(ual_load_errors(u)->len, 0);

	/* The only loopback interface here is lo: one device, test_lo. */
	ck_assert_uint_eq(ut_device_count(u), 1);
	d = ut_device(u, "test_lo");
	ck_assert_str_eq(ual_device_name(d), "test_lo");
	ck_assert_str_eq(ual_device_ifname(d), "lo");
	ck_assert_int_eq(ual_device_ifindex(d), (int)if_nametoindex("lo"));
	ck_assert_ptr_eq(ual_device_provider(d), p);
	ck_assert_int_eq(ual_device_transport(d), RNICPI_TRANSPORT_ROCE);
	ck_assert_ptr_eq(ual_device_rnicpi(d)->core_ctx, d);
	ck_assert_str_eq(ual_device_rnicpi(d)->name, "test_lo");
	ck_assert_ok(ual_device_query(d, &attr));
	ck_assert_uint_eq(attr.max_qp, 64);
	ck_assert_ok(ual_device_query_port(d, 1, &port));
	ck_assert_int_eq(port.state, RNICPI_PORT_ACTIVE);
	ck_assert_errno(ual_device_query_port(d, 2, &port), EINVAL);
	{
		struct ual_device *by_index = ual_device_by_ifindex(
			u, (int)if_nametoindex("lo"), RNICPI_TRANSPORT_ROCE);

		ck_assert_ptr_eq(by_index, d);
		ual_device_put(by_index);
		ck_assert_ptr_null(ual_device_by_ifindex(
			u, (int)if_nametoindex("lo"), RNICPI_TRANSPORT_IWARP));
	}
	ck_assert_ptr_null(ual_device_lookup(u, "test_nosuch"));
	ual_device_put(d);
	ut_close(u);
}
END_TEST

START_TEST(test_open_is_shared)
{
	struct ual *u = ut_open(), *again = ut_open();
	struct ual_device *first = ut_device(u, "test_lo"), *second;

	ck_assert_ptr_eq(again, u);
	ut_close(again);
	/* Still open: the same device. */
	second = ut_device(u, "test_lo");
	ck_assert_ptr_eq(second, first);
	ual_device_put(second);
	ual_device_put(first);
	ut_close(u);
	/* Closed for good: a new open makes a new device. */
	u = ut_open();
	second = ut_device(u, "test_lo");
	ual_device_put(second);
	ut_close(u);
}
END_TEST

START_TEST(test_refusals_are_reported)
{
	g_autofree char *dir = g_dir_make_tmp("ual-notelf-XXXXXX", NULL);
	g_autofree char *notelf = g_build_filename(dir, "notelf.so", NULL);
	g_autofree char *path = NULL;
	g_autofree char *abi_msg = NULL;
	g_autofree char *text = NULL;
	const GPtrArray *errs;
	struct ual *u;

	ck_assert(g_file_set_contents(notelf, "#!/bin/sh\necho not ELF\n", -1,
				      NULL));
	path = g_strdup_printf("%s:%s:%s", TESTPROV_DIR, TESTPROV_BAD_DIR,
			       dir);
	g_setenv(UAL_ENV_PROVIDER_PATH, path, TRUE);
	u = ut_open();
	errs = ual_load_errors(u);
	text = ut_lines_text(errs);

	/* Only the good one registered; every bad one named with its cause. */
	ck_assert_uint_eq(ual_provider_list(u)->len, 1);
	ck_assert_ptr_nonnull(provider(u, "test"));
	ck_assert_msg(errs->len == 6, "6 refusals expected:%s", text);
	abi_msg = g_strdup_printf(
		"was built for RNICPI ABI %u, this hostrdma speaks ABI %u",
		RNICPI_ABI_VERSION + 1, RNICPI_ABI_VERSION);
	ck_assert_msg(ut_lines_contain(errs, "provider 'badabi'",
				       "testprov_badabi.so", abi_msg, NULL),
		      "ABI refusal missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, "testprov_noentry.so",
				       "no entry symbol rnicpi_provider_entry",
				       NULL),
		      "missing entry refusal missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, "provider 'small'",
				       "testprov_small.so", "size", NULL),
		      "size refusal missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, "provider 'nocreate'",
				       "testprov_nocreate.so",
				       "no device_create", NULL),
		      "device_create refusal missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, "provider 'test'",
				       "testprov_dup.so", "already registered",
				       TESTPROV_DIR "/testprov.so", NULL),
		      "duplicate refusal missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, notelf, "not an ELF", NULL),
		      "non-ELF refusal missing:%s", text);
	/* The good provider still works. */
	ck_assert_uint_eq(ut_device_count(u), 1);
	ut_close(u);
	unlink(notelf);
	rmdir(dir);
}
END_TEST

START_TEST(test_missing_directory)
{
	const GPtrArray *errs;
	struct ual *u;

	g_setenv(UAL_ENV_PROVIDER_PATH, "/nonexistent/hostrdma-providers",
		 TRUE);
	u = ut_open();
	errs = ual_load_errors(u);
	/* The directory's error, and what a user needs with "no RDMA
	 * devices": where providers were looked for. */
	ck_assert_uint_eq(errs->len, 2);
	ck_assert(ut_lines_contain(errs, "/nonexistent/hostrdma-providers",
				   NULL));
	ck_assert(ut_lines_contain(errs, "no RDMA provider found: searched /nonexistent/hostrdma-providers (HOSTRDMA_PROVIDER_PATH)",
				   NULL));
	ck_assert_uint_eq(ual_provider_list(u)->len, 0);
	ck_assert_uint_eq(ut_device_count(u), 0);
	ut_close(u);
}
END_TEST

#ifdef HAVE_PROV_SIW
/* Where @name is in ual_device_list's order; -1 when absent. */
static int list_index(struct ual *u, const char *name)
{
	g_autoptr(GPtrArray) devs = ual_device_list(u);

	for (guint i = 0; i < devs->len; i++)
		if (!strcmp(ual_device_name(devs->pdata[i]), name))
			return (int)i;
	return -1;
}

/*
 * The list (it_interface_list's order, the order a client tries) puts a
 * device the kernel drives before the soft ones, whatever the load order:
 * siw loads first here, the test provider second.
 */
START_TEST(test_list_kernel_devices_first)
{
	struct ual *u;
	int siw, test;

	g_setenv(UAL_ENV_PROVIDER_PATH, SIW_PROVIDER_DIR ":" TESTPROV_DIR,
		 TRUE);
	u = ut_open();
	siw = list_index(u, "siw_lo");
	test = list_index(u, "test_lo");
	ck_assert_int_ge(siw, 0);
	ck_assert_int_gt(test, siw);
	ut_close(u);

	g_setenv(UAL_ENV_OPTIONS, "test.kernel_pins=on", TRUE);
	u = ut_open();
	ck_assert_int_eq(list_index(u, "test_lo"), 0);
	ck_assert_int_gt(list_index(u, "siw_lo"), 0);
	ut_close(u);
}
END_TEST
#endif

START_TEST(test_builtin_registration)
{
	static const rnicpi_provider_entry_fn builtins[] = {
		rnicpi_builtin_test,
	};
	const struct ual_provider *p;
	struct ual_device *d;
	struct ual_pd *pd;
	struct ual *u;

	ual_test_set_builtins(builtins, 1);
	u = ut_open();
	p = provider(u, "test");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(ual_provider_origin(p), "built-in");
	/* Built-ins come first: the module of the same name is refused. */
	ck_assert(ut_lines_contain(ual_load_errors(u), "testprov.so",
				   "already registered from built-in", NULL));
	d = ut_device(u, "test_lo");
	ck_assert_ptr_eq(ual_device_provider(d), p);
	ck_assert_ok(ual_pd_alloc(d, &pd));
	ck_assert_ok(ual_pd_free(pd));
	ual_device_put(d);
	ut_close(u);

	/* Cleared: the module again. */
	ual_test_set_builtins(NULL, 0);
	u = ut_open();
	ck_assert_str_eq(ual_provider_origin(provider(u, "test")),
			 TESTPROV_DIR "/testprov.so");
	ut_close(u);
}
END_TEST

/*
 * A provider whose device lacks query_device and query_port is refused at
 * its first device: a WARNING names it and the op, its device is
 * destroyed, no device of it is listed, and later scans skip it.
 */
START_TEST(test_mandatory_ops_refused)
{
	g_autofree char *text = NULL, *logs = NULL;
	struct tu_log_capture *cap = tu_log_capture_begin("hostrdma-ual");
	const char *module = TESTPROV_NOQUERY_DIR "/testprov_noquery.so";
	const GPtrArray *errs;
	struct ual *u;
	void *dl;
	int *live;

	g_setenv(UAL_ENV_PROVIDER_PATH, TESTPROV_NOQUERY_DIR, TRUE);
	u = ut_open();
	errs = ual_load_errors(u);
	text = ut_lines_text(errs);
	logs = tu_log_text(cap);
	ck_assert_msg(ut_lines_contain(errs, "provider 'noquery'", module,
				       "mandatory op query_device", NULL),
		      "refusal missing:%s", text);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_WARNING,
				   "provider 'noquery'") == 1 &&
			      tu_log_count(cap, G_LOG_LEVEL_WARNING,
					   "mandatory op query_device") == 1,
		      "one WARNING expected:\n%s", logs);
	ck_assert_uint_eq(ut_device_count(u), 0);
	ck_assert_ptr_null(ual_device_lookup(u, "noquery_lo"));

	/* Its device was made once and destroyed. */
	dl = dlopen(module, RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(dl);
	live = dlsym(dl, "testprov_noquery_live");
	ck_assert_ptr_nonnull(live);
	ck_assert_int_eq(*live, 0);
	dlclose(dl);
	ut_close(u);
	tu_log_capture_end(cap);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Ops completion                                                      */
/* ------------------------------------------------------------------ */

START_TEST(test_null_op_is_eopnotsupp)
{
	struct rnicpi_ah_attr ah_attr = { .port_num = 1 };
	struct ual *u = ut_open();
	struct ual_device *d = ut_device(u, "test_lo");
	struct ual_pd *pd;
	struct ual_cq *cq;
	struct ual_ah *ah;

	/* resize_cq is NULL in the provider's table. */
	ck_assert_ok(ual_cq_create(d, 4, &cq));
	ck_assert_errno(ual_cq_resize(cq, 8), EOPNOTSUPP);
	ck_assert_uint_eq(ual_cq_size(cq), 4);
	ck_assert_ok(ual_cq_destroy(cq));
	/* create_ah is within the full table: supported. */
	ck_assert_ok(ual_pd_alloc(d, &pd));
	ck_assert_ok(ual_ah_create(pd, &ah_attr, &ah));
	ck_assert_ok(ual_ah_destroy(ah));
	ck_assert_ok(ual_pd_free(pd));
	ual_device_put(d);
	ut_close(u);
}
END_TEST

START_TEST(test_op_past_size_is_eopnotsupp)
{
	struct rnicpi_ah_attr ah_attr = { .port_num = 1 };
	struct ual_device *d;
	struct ual_pd *pd;
	struct ual_ah *ah = NULL;
	struct ual *u;

	/* The provider hands a table whose size ends before create_ah. */
	g_setenv(UAL_ENV_OPTIONS, "test.ops_size=short", TRUE);
	u = ut_open();
	d = ut_device(u, "test_lo");
	ck_assert_ok(ual_pd_alloc(d, &pd));
	ck_assert_errno(ual_ah_create(pd, &ah_attr, &ah), EOPNOTSUPP);
	ck_assert_ptr_null(ah);
	/* Ops before the end still work; the failed create left no child. */
	ck_assert_ok(ual_pd_free(pd));
	ual_device_put(d);
	ut_close(u);
}
END_TEST

START_TEST(test_ops_complete_table)
{
	struct rnicpi_device_ops in = { .size = 0 }, out;

	/* A table of size 0 fills everything, including the void ops. */
	ck_assert(!ual_ops_complete(&out, &in));
	ck_assert_uint_eq(out.size, sizeof(out));
	ck_assert_ptr_nonnull(out.device_destroy);
	ck_assert_ptr_nonnull(out.cm_connect);
	ck_assert_int_eq(out.alloc_pd(NULL, NULL), -EOPNOTSUPP);
	ck_assert_int_eq(out.cm_listen_destroy(NULL), -EOPNOTSUPP);
	out.netdev_event(NULL, NULL, RNICPI_NETDEV_CHANGE); /* no-op */
	out.device_destroy(NULL);			      /* no-op */
}
END_TEST

/* ------------------------------------------------------------------ */
/* Selection and options                                               */
/* ------------------------------------------------------------------ */

static unsigned int devices_with(const char *devices, const char *conf)
{
	g_autofree char *file = conf ? ut_write_file(conf) : NULL;
	unsigned int n;
	struct ual *u;

	if (devices)
		g_setenv(UAL_ENV_DEVICES, devices, TRUE);
	else
		g_unsetenv(UAL_ENV_DEVICES);
	g_setenv(UAL_ENV_CONF, file ? file : "", TRUE);
	u = ut_open();
	n = ut_device_count(u);
	ut_close(u);
	if (file)
		unlink(file);
	return n;
}

START_TEST(test_select_env)
{
	ck_assert_uint_eq(devices_with("test_lo", NULL), 1);
	ck_assert_uint_eq(devices_with("test_*", NULL), 1);
	ck_assert_uint_eq(devices_with("other_*,test_l?", NULL), 1);
	ck_assert_uint_eq(devices_with("other_*", NULL), 0);
	ck_assert_uint_eq(devices_with("test_*,!test_lo", NULL), 0);
	/* Only an exclusion: the default selection minus it. */
	ck_assert_uint_eq(devices_with("!test_lo", NULL), 0);
	ck_assert_uint_eq(devices_with("!other_lo", NULL), 1);
}
END_TEST

START_TEST(test_select_file)
{
	ck_assert_uint_eq(devices_with(NULL, "[devices]\ninclude=test_lo\n"),
			  1);
	ck_assert_uint_eq(devices_with(NULL, "[devices]\ninclude=x_*;y_*\n"),
			  0);
	ck_assert_uint_eq(devices_with(NULL, "[devices]\n"
					     "include=test_*\n"
					     "exclude=test_l*\n"),
			  0);
	/* The environment replaces the file's selection. */
	ck_assert_uint_eq(devices_with("test_lo", "[devices]\n"
						  "exclude=test_lo\n"),
			  1);
}
END_TEST

/* A non-loopback interface of this namespace, which the test provider
 * refuses. */
static char *other_interface(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	char *name = NULL;

	ck_assert_ptr_nonnull(ifs);
	for (i = ifs; i->if_index && !name; i++)
		if (strcmp(i->if_name, "lo") != 0)
			name = g_strdup(i->if_name);
	if_freenameindex(ifs);
	ck_assert_msg(name, "this test needs an interface besides lo");
	return name;
}

START_TEST(test_select_reports_refusals)
{
	g_autofree char *ifname = other_interface();
	g_autofree char *name = g_strdup_printf("test_%s", ifname);
	g_autofree char *sel = g_strdup_printf("%s,test_nosuch,test_*", name);
	g_autoptr(GPtrArray) errs = NULL;
	g_autofree char *text = NULL;
	struct ual *u;

	g_setenv(UAL_ENV_DEVICES, sel, TRUE);
	u = ut_open();
	errs = ual_device_errors(u);
	text = ut_lines_text(errs);
	/* test_* also matched test_lo: created, and no error for the other
	 * interfaces the pattern matched. */
	ck_assert_uint_eq(ut_device_count(u), 1);
	ck_assert_msg(errs->len == 2, "two errors expected:%s", text);
	ck_assert_msg(ut_lines_contain(errs, name, "does not run on interface",
				       ifname, g_strerror(ENODEV), NULL),
		      "provider's reason missing:%s", text);
	ck_assert_msg(ut_lines_contain(errs, "test_nosuch", UAL_ENV_DEVICES,
				       "no provider and interface", NULL),
		      "unmatched name missing:%s", text);
	ut_close(u);
}
END_TEST

START_TEST(test_bad_config_syntax)
{
	g_autofree char *file = ut_write_file("garbage line\n"
					      "[devices]\n"
					      "include=test_lo\n"
					      "colour=blue\n"
					      "[bogus]\n"
					      "x=y\n"
					      "[provider test]\n"
					      "max_qp=7\n");
	g_autoptr(tu_log_capture) cap = tu_log_capture_begin("hostrdma-ual");
	g_autofree char *where1 = g_strdup_printf("%s:1", file);
	g_autofree char *where4 = g_strdup_printf("%s:4", file);
	g_autofree char *text = NULL;
	struct rnicpi_device_attr attr;
	struct ual_device *d;
	struct ual *u;

	g_setenv(UAL_ENV_CONF, file, TRUE);
	g_setenv(UAL_ENV_OPTIONS, "nodot,test.=1", TRUE);
	u = ut_open();
	text = tu_log_text(cap);
	/* Each bad line named with file and line; the rest applies. */
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_WARNING, where1) == 1 &&
			      tu_log_count(cap, G_LOG_LEVEL_WARNING,
					   "'garbage line'") == 1,
		      "line 1 not reported:\n%s", text);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_WARNING, where4) == 1 &&
			      tu_log_count(cap, G_LOG_LEVEL_WARNING,
					   "'colour'") == 1,
		      "line 4 not reported:\n%s", text);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_WARNING, "[bogus]") == 1,
		      "unknown group not reported:\n%s", text);
	ck_assert_msg(tu_log_count(cap, G_LOG_LEVEL_WARNING, "'nodot'") == 1 &&
			      tu_log_count(cap, G_LOG_LEVEL_WARNING,
					   "'test.=1'") == 1,
		      "bad HOSTRDMA_OPTIONS not reported:\n%s", text);
	d = ut_device(u, "test_lo");
	ck_assert_ok(ual_device_query(d, &attr));
	ck_assert_uint_eq(attr.max_qp, 7);
	ual_device_put(d);
	ut_close(u);
	unlink(file);
}
END_TEST

static uint32_t max_qp_with(const char *conf, const char *options)
{
	g_autofree char *file = conf ? ut_write_file(conf) : NULL;
	struct rnicpi_device_attr attr;
	struct ual_device *d;
	struct ual *u;

	g_setenv(UAL_ENV_CONF, file ? file : "", TRUE);
	if (options)
		g_setenv(UAL_ENV_OPTIONS, options, TRUE);
	else
		g_unsetenv(UAL_ENV_OPTIONS);
	u = ut_open();
	d = ut_device(u, "test_lo");
	ck_assert_ok(ual_device_query(d, &attr));
	ual_device_put(d);
	ut_close(u);
	if (file)
		unlink(file);
	return attr.max_qp;
}

START_TEST(test_options_reach_provider)
{
	ck_assert_uint_eq(max_qp_with(NULL, NULL), 64);
	ck_assert_uint_eq(max_qp_with("[provider test]\nmax_qp=3\n", NULL), 3);
	ck_assert_uint_eq(max_qp_with(NULL, "test.max_qp=5"), 5);
	/* The environment overrides the file; other providers' options are
	 * not handed to this one. */
	ck_assert_uint_eq(max_qp_with("[provider test]\nmax_qp=3\n",
				      "other.max_qp=9,test.max_qp=6"),
			  6);
}
END_TEST

START_TEST(test_unknown_option_refused)
{
	g_autoptr(GPtrArray) errs = NULL;
	g_autofree char *text = NULL;
	struct ual *u;

	g_setenv(UAL_ENV_OPTIONS, "test.bogus=1", TRUE);
	u = ut_open();
	errs = ual_device_errors(u);
	text = ut_lines_text(errs);
	ck_assert_uint_eq(ut_device_count(u), 0);
	ck_assert_msg(ut_lines_contain(errs, "test_lo", "provider 'test'",
				       g_strerror(EINVAL), NULL),
		      "refusal not reported:%s", text);
	ut_close(u);
}
END_TEST

Suite *suite_ual_loader(void)
{
	Suite *s = suite_create("ual-loader");
	TCase *tc;

	tc = tcase_create("loader");
	tcase_add_checked_fixture(tc, ut_setup, ut_teardown);
	tcase_add_test(tc, test_loads_test_provider);
	tcase_add_test(tc, test_open_is_shared);
	tcase_add_test(tc, test_refusals_are_reported);
	tcase_add_test(tc, test_missing_directory);
	tcase_add_test(tc, test_builtin_registration);
#ifdef HAVE_PROV_SIW
	tcase_add_test(tc, test_list_kernel_devices_first);
#endif
	tcase_add_test(tc, test_mandatory_ops_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("ops");
	tcase_add_checked_fixture(tc, ut_setup, ut_teardown);
	tcase_add_test(tc, test_null_op_is_eopnotsupp);
	tcase_add_test(tc, test_op_past_size_is_eopnotsupp);
	tcase_add_test(tc, test_ops_complete_table);
	suite_add_tcase(s, tc);

	tc = tcase_create("selection");
	tcase_add_checked_fixture(tc, ut_setup, ut_teardown);
	tcase_add_test(tc, test_select_env);
	tcase_add_test(tc, test_select_file);
	tcase_add_test(tc, test_select_reports_refusals);
	tcase_add_test(tc, test_bad_config_syntax);
	tcase_add_test(tc, test_options_reach_provider);
	tcase_add_test(tc, test_unknown_option_refused);
	suite_add_tcase(s, tc);
	return s;
}
