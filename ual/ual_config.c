/* SPDX-License-Identifier: MIT */
/*
 * ual_config.c - device selection and provider options, from the
 * configuration file and the environment.
 *
 * The file (HOSTRDMA_CONF, else $(sysconfdir)/hostrdma/hostrdma.conf; an
 * empty HOSTRDMA_CONF means none; absent is fine) is a GKeyFile:
 *
 *	[devices]
 *	include=siw_lo;rxe_*	names or glob patterns (GPatternSpec);
 *				"!pattern" excludes
 *	exclude=rxe_docker*	patterns never selected
 *
 *	[provider siw]
 *	mpa_crc=required	handed to siw's device_create as options
 *
 * HOSTRDMA_DEVICES ("siw_lo,rxe_*,!rxe_veth*") replaces the file's
 * [devices] section; HOSTRDMA_OPTIONS ("siw.mpa_crc=required,rxe.x=y")
 * adds options and overrides the file's. Without an include list the
 * default selection applies (see ual_device.c). Whatever cannot be parsed
 * is skipped with a warning naming file, line and text; it never stops
 * the rest from loading.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <errno.h>
#include <string.h>

#include "ual/ual_private.h"

#define PROVIDER_GROUP_PREFIX "provider "

static void option_free(gpointer p)
{
	struct ual_option *o = p;

	g_free(o->key);
	g_free(o->value);
	g_free(o);
}

static void set_option(struct ual_config *c, const char *provider,
		       const char *key, const char *value)
{
	GPtrArray *list = g_hash_table_lookup(c->options, provider);
	struct ual_option *o;
	guint i;

	if (!list) {
		list = g_ptr_array_new_with_free_func(option_free);
		g_hash_table_insert(c->options, g_strdup(provider), list);
	}
	for (i = 0; i < list->len; i++) {
		o = list->pdata[i];
		if (strcmp(o->key, key) == 0) {
			g_free(o->value);
			o->value = g_strdup(value);
			return;
		}
	}
	o = g_new0(struct ual_option, 1);
	o->key = g_strdup(key);
	o->value = g_strdup(value);
	g_ptr_array_add(list, o);
}

static void clear_selection(struct ual_config *c)
{
	g_ptr_array_set_size(c->include, 0);
	g_ptr_array_set_size(c->include_text, 0);
	g_ptr_array_set_size(c->exclude, 0);
	c->explicit_include = false;
}

/* Add the patterns of @text, separated by ',' or ';'; "!p" excludes.
 * @where names the source for warnings ("file:3" or an env variable). */
static void add_patterns(struct ual_config *c, const char *text,
			 bool exclude_all, const char *where)
{
	g_auto(GStrv) items = g_strsplit_set(text, ",;", -1);
	char **item;

	for (item = items; *item; item++) {
		char *p = g_strstrip(*item);
		bool exclude = exclude_all;

		if (!*p)
			continue;
		if (*p == '!') {
			exclude = true;
			p = g_strstrip(p + 1);
		}
		if (!*p || strlen(p) >= RNICPI_DEVNAME_MAX) {
			g_warning("%s: bad device pattern '%s' in '%s'; ignored",
				  where, *item, text);
			continue;
		}
		if (exclude) {
			g_ptr_array_add(c->exclude, g_pattern_spec_new(p));
		} else {
			g_ptr_array_add(c->include, g_pattern_spec_new(p));
			g_ptr_array_add(c->include_text, g_strdup(p));
			c->explicit_include = true;
		}
	}
}

/*
 * GKeyFile stops at the first line it does not understand and reports no
 * line number, so go through the lines first: a line that is neither
 * blank, comment, [group] nor key=value (inside a group) is reported and
 * turned into a comment. Records the line of every key ("group\nkey").
 */
static char *prefilter(const char *file, const char *text, GHashTable *lines)
{
	g_auto(GStrv) raw = g_strsplit(text, "\n", -1);
	g_autofree char *group = NULL;
	GString *out = g_string_new(NULL);
	unsigned int n;

	for (n = 0; raw[n]; n++) {
		const char *line = raw[n];
		g_autofree char *s = g_strstrip(g_strdup(line));
		const char *eq = strchr(s, '=');
		bool ok = true;

		if (!*s || *s == '#') {
			/* blank or comment */
		} else if (*s == '[') {
			size_t len = strlen(s);

			if (len < 3 || s[len - 1] != ']' ||
			    strpbrk(s + 1, "[") ||
			    memchr(s + 1, ']', len - 2)) {
				g_warning("%s:%u: bad group header '%s'; ignored with its keys",
					  file, n + 1, s);
				/* Keys below go to a group nobody reads. */
				g_free(group);
				group = g_strdup("\001bad");
				g_string_append_printf(out, "[\001bad%u]\n",
						       n + 1);
				continue;
			}
			g_free(group);
			group = g_strndup(s + 1, len - 2);
			g_hash_table_insert(lines,
					    g_strdup_printf("%s\n", group),
					    GUINT_TO_POINTER(n + 1));
		} else if (!eq || eq == s) {
			g_warning("%s:%u: not a [group], key=value or # comment: '%s'; ignored",
				  file, n + 1, s);
			ok = false;
		} else if (!group) {
			g_warning("%s:%u: '%s' comes before any [group]; ignored",
				  file, n + 1, s);
			ok = false;
		} else {
			g_autofree char *key = g_strstrip(g_strndup(s, eq - s));

			g_hash_table_insert(lines,
					    g_strdup_printf("%s\n%s", group, key),
					    GUINT_TO_POINTER(n + 1));
		}
		g_string_append(out, ok ? line : "#");
		g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}

static unsigned int line_of(GHashTable *lines, const char *group,
			    const char *key)
{
	g_autofree char *k = g_strdup_printf("%s\n%s", group, key);

	return GPOINTER_TO_UINT(g_hash_table_lookup(lines, k));
}

static void load_devices_group(struct ual_config *c, GKeyFile *kf,
			       const char *file, GHashTable *lines)
{
	g_auto(GStrv) keys = g_key_file_get_keys(kf, "devices", NULL, NULL);
	char **key;

	for (key = keys; key && *key; key++) {
		unsigned int line = line_of(lines, "devices", *key);
		g_autofree char *where = g_strdup_printf("%s:%u", file, line);
		g_autofree char *value = NULL;
		g_autoptr(GError) error = NULL;

		value = g_key_file_get_string(kf, "devices", *key, &error);
		if (!value) {
			g_warning("%s: [devices] %s: %s; ignored", where, *key,
				  error->message);
			continue;
		}
		if (strcmp(*key, "include") == 0)
			add_patterns(c, value, false, where);
		else if (strcmp(*key, "exclude") == 0)
			add_patterns(c, value, true, where);
		else
			g_warning("%s: unknown key '%s' in [devices] (include, exclude); ignored",
				  where, *key);
	}
}

static void load_provider_group(struct ual_config *c, GKeyFile *kf,
				const char *file, const char *group,
				GHashTable *lines)
{
	const char *provider = group + strlen(PROVIDER_GROUP_PREFIX);
	g_auto(GStrv) keys = NULL;
	char **key;

	if (!*provider || strchr(provider, ' ')) {
		g_warning("%s:%u: group [%s] does not name one provider; ignored",
			  file, line_of(lines, group, ""), group);
		return;
	}
	keys = g_key_file_get_keys(kf, group, NULL, NULL);
	for (key = keys; key && *key; key++) {
		g_autofree char *value = NULL;
		g_autoptr(GError) error = NULL;

		value = g_key_file_get_string(kf, group, *key, &error);
		if (!value) {
			g_warning("%s:%u: [%s] %s: %s; ignored", file,
				  line_of(lines, group, *key), group, *key,
				  error->message);
			continue;
		}
		set_option(c, provider, *key, value);
	}
}

static void load_file(struct ual_config *c, const char *file, bool named)
{
	g_autoptr(GHashTable) lines = NULL;
	g_autoptr(GKeyFile) kf = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;
	g_autofree char *clean = NULL;
	g_auto(GStrv) groups = NULL;
	char **group;

	if (!g_file_get_contents(file, &text, NULL, &error)) {
		if (named || !g_error_matches(error, G_FILE_ERROR,
					      G_FILE_ERROR_NOENT))
			g_warning("configuration %s: %s; using defaults", file,
				  error->message);
		else
			g_debug("no configuration file %s", file);
		return;
	}
	lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	clean = prefilter(file, text, lines);
	kf = g_key_file_new();
	if (!g_key_file_load_from_data(kf, clean, (gsize)-1, G_KEY_FILE_NONE,
				       &error)) {
		g_warning("configuration %s: %s; file ignored", file,
			  error->message);
		return;
	}
	groups = g_key_file_get_groups(kf, NULL);
	for (group = groups; *group; group++) {
		if (**group == '\001')
			continue; /* already reported by prefilter() */
		if (strcmp(*group, "devices") == 0) {
			load_devices_group(c, kf, file, lines);
			g_free(c->devices_origin);
			c->devices_origin = g_strdup(file);
		} else if (g_str_has_prefix(*group, PROVIDER_GROUP_PREFIX)) {
			load_provider_group(c, kf, file, *group, lines);
		} else {
			g_warning("%s: unknown group [%s] ([devices], [provider NAME]); ignored",
				  file, *group);
		}
	}
}

static void load_env_options(struct ual_config *c, const char *text)
{
	g_auto(GStrv) items = g_strsplit(text, ",", -1);
	char **item;

	for (item = items; *item; item++) {
		char *s = g_strstrip(*item);
		char *dot, *eq;

		if (!*s)
			continue;
		dot = strchr(s, '.');
		eq = strchr(s, '=');
		if (!dot || !eq || dot == s || eq < dot || eq == dot + 1) {
			g_warning("%s: '%s' is not provider.key=value; ignored",
				  UAL_ENV_OPTIONS, s);
			continue;
		}
		*dot = '\0';
		*eq = '\0';
		set_option(c, s, g_strstrip(dot + 1), eq + 1);
	}
}

struct ual_config *ual_config_load(void)
{
	struct ual_config *c = g_new0(struct ual_config, 1);
	const char *file = g_getenv(UAL_ENV_CONF);
	const char *env;

	c->include = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_pattern_spec_free);
	c->include_text = g_ptr_array_new_with_free_func(g_free);
	c->exclude = g_ptr_array_new_with_free_func(
		(GDestroyNotify)g_pattern_spec_free);
	c->options = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
					   (GDestroyNotify)g_ptr_array_unref);

	if (file) {
		if (*file)
			load_file(c, file, true);
	} else {
		load_file(c, HOSTRDMA_CONF_FILE, false);
	}
	env = g_getenv(UAL_ENV_DEVICES);
	if (env && *env) {
		clear_selection(c);
		add_patterns(c, env, false, UAL_ENV_DEVICES);
		g_free(c->devices_origin);
		c->devices_origin = g_strdup(UAL_ENV_DEVICES);
	}
	env = g_getenv(UAL_ENV_OPTIONS);
	if (env)
		load_env_options(c, env);
	return c;
}

void ual_config_free(struct ual_config *c)
{
	if (!c)
		return;
	g_ptr_array_unref(c->include);
	g_ptr_array_unref(c->include_text);
	g_ptr_array_unref(c->exclude);
	g_hash_table_unref(c->options);
	g_free(c->devices_origin);
	g_free(c);
}

static bool any_match(const GPtrArray *patterns, const char *name)
{
	guint i;

	for (i = 0; i < patterns->len; i++)
		if (g_pattern_spec_match_string(patterns->pdata[i], name))
			return true;
	return false;
}

bool ual_config_excluded(const struct ual_config *c, const char *name)
{
	return any_match(c->exclude, name);
}

bool ual_config_included(const struct ual_config *c, const char *name)
{
	return any_match(c->include, name) && !ual_config_excluded(c, name);
}

bool ual_config_named(const struct ual_config *c, const char *name)
{
	guint i;

	for (i = 0; i < c->include_text->len; i++)
		if (strcmp(c->include_text->pdata[i], name) == 0)
			return true;
	return false;
}

struct rnicpi_option *ual_config_options(const struct ual_config *c,
					 const char *provider)
{
	GPtrArray *list = g_hash_table_lookup(c->options, provider);
	struct rnicpi_option *opts;
	guint i;

	if (!list || list->len == 0)
		return NULL;
	opts = g_new0(struct rnicpi_option, list->len + 1);
	for (i = 0; i < list->len; i++) {
		const struct ual_option *o = list->pdata[i];

		opts[i].key = o->key;
		opts[i].value = o->value;
	}
	return opts;
}
