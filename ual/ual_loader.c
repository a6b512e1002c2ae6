/* SPDX-License-Identifier: MIT */
/*
 * ual_loader.c - provider registry: built-in providers and loadable
 * modules, checked before anything of theirs is called.
 *
 * Built-ins register first (configure's --enable-<name>=builtin list,
 * then those a test set), then every "*.so" of each directory of
 * HOSTRDMA_PROVIDER_PATH (colon-separated) or else of the installed
 * provider directory, in name order. A provider that fails a check is
 * refused: a warning and one line in ual_load_errors() name the file and
 * the cause. When two providers have the same name the first one wins.
 * A provider whose first device lacks a mandatory op (rnicpi.h) is
 * refused the same way, from ual_device.c, before that device is listed.
 */
#define G_LOG_DOMAIN "hostrdma-ual"

#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ual/ual_private.h"

/* configure's built-ins: rnicpi_builtin_<name>() from RNICPI_PROVIDER_DEFINE
 * compiled with RNICPI_BUILTIN. */
#define UAL_DECLARE_BUILTIN(name)                                           \
	const struct rnicpi_provider *rnicpi_builtin_##name(void);
HOSTRDMA_BUILTIN_PROVIDERS(UAL_DECLARE_BUILTIN)
#undef UAL_DECLARE_BUILTIN

#define UAL_BUILTIN_ENTRY(name) rnicpi_builtin_##name,
static const rnicpi_provider_entry_fn configured_builtins[] = {
	HOSTRDMA_BUILTIN_PROVIDERS(UAL_BUILTIN_ENTRY) NULL
};
#undef UAL_BUILTIN_ENTRY

static GMutex test_builtins_lock;
/* rnicpi_provider_entry_fn; NULL: configure's built-ins apply. */
static GArray *test_builtins;

void ual_test_set_builtins(const rnicpi_provider_entry_fn *entries, size_t n)
{
	g_mutex_lock(&test_builtins_lock);
	if (test_builtins)
		g_array_unref(test_builtins);
	test_builtins = g_array_sized_new(FALSE, FALSE, sizeof(*entries), n);
	if (n)
		g_array_append_vals(test_builtins, entries, n);
	g_mutex_unlock(&test_builtins_lock);
}

void ual_test_reset_builtins(void)
{
	g_mutex_lock(&test_builtins_lock);
	if (test_builtins)
		g_array_unref(test_builtins);
	test_builtins = NULL;
	g_mutex_unlock(&test_builtins_lock);
}

struct ual_provider *ual_provider_get(struct ual_provider *p)
{
	g_atomic_int_inc(&p->ref);
	return p;
}

void ual_provider_put(struct ual_provider *p)
{
	if (!p || !g_atomic_int_dec_and_test(&p->ref))
		return;
	g_debug("provider '%s' from %s released", p->rp->name, p->origin);
	if (p->dl)
		dlclose(p->dl);
	g_free(p->origin);
	g_free(p);
}

const char *ual_provider_name(const struct ual_provider *p)
{
	return p->rp->name;
}

const char *ual_provider_description(const struct ual_provider *p)
{
	return p->rp->description ? p->rp->description : "";
}

enum rnicpi_transport ual_provider_transport(const struct ual_provider *p)
{
	return p->rp->transport;
}

const char *ual_provider_origin(const struct ual_provider *p)
{
	return p->origin;
}

static void G_GNUC_PRINTF(2, 3) load_error(struct ual *u, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_warning("%s", msg);
	g_ptr_array_add(u->load_errors, msg);
}

/* A name becomes a device-name prefix: short, lower case, no separator. */
static bool provider_name_ok(const char *name)
{
	size_t len = strlen(name), i;

	/* "<name>_<ifname>" must fit whatever the interface is called. */
	if (len == 0 || len + 1 + (RNICPI_IFNAMSIZ - 1) >= RNICPI_DEVNAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!g_ascii_islower(name[i]) && !g_ascii_isdigit(name[i]))
			return false;
	return true;
}

static const struct ual_provider *find_provider(struct ual *u,
						const char *name)
{
	guint i;

	for (i = 0; i < u->providers->len; i++) {
		const struct ual_provider *p = u->providers->pdata[i];

		if (strcmp(p->rp->name, name) == 0)
			return p;
	}
	return NULL;
}

/*
 * Check @rp (from @origin) and register it. The fields are read in the
 * order that keeps a foreign ABI from being misread: abi_version and size
 * first (rnicpi.h keeps them, and name, in place across versions).
 * Returns 0 (registered; @dl is the provider's) or -EINVAL / -EEXIST.
 */
static int register_provider(struct ual *u, const struct rnicpi_provider *rp,
			     void *dl, const char *origin)
{
	const size_t name_end = offsetof(struct rnicpi_provider, name) +
				sizeof(rp->name);
	const struct ual_provider *other;
	const char *name;
	struct ual_provider *p;

	if (!rp) {
		load_error(u, "provider in %s: its entry point returned NULL",
			   origin);
		return -EINVAL;
	}
	name = rp->size >= name_end && rp->name ? rp->name : "?";
	if (rp->abi_version != RNICPI_ABI_VERSION) {
		load_error(u,
			   "provider '%s' in %s was built for RNICPI ABI %u, this hostrdma speaks ABI %u",
			   name, origin, rp->abi_version, RNICPI_ABI_VERSION);
		return -EINVAL;
	}
	if (rp->size < RNICPI_PROVIDER_SIZE_V1) {
		load_error(u,
			   "provider '%s' in %s: descriptor size %u is smaller than the %zu bytes of RNICPI ABI %u",
			   name, origin, rp->size, RNICPI_PROVIDER_SIZE_V1,
			   RNICPI_ABI_VERSION);
		return -EINVAL;
	}
	if (!rp->name) {
		load_error(u, "provider in %s has no name", origin);
		return -EINVAL;
	}
	if (!provider_name_ok(rp->name)) {
		load_error(u,
			   "provider '%s' in %s: a name must be 1 to %d lower-case letters or digits",
			   rp->name, origin,
			   RNICPI_DEVNAME_MAX - RNICPI_IFNAMSIZ - 1);
		return -EINVAL;
	}
	if (!rp->device_create) {
		load_error(u, "provider '%s' in %s has no device_create",
			   rp->name, origin);
		return -EINVAL;
	}
	if (rp->transport < RNICPI_TRANSPORT_IWARP ||
	    rp->transport > RNICPI_TRANSPORT_IB) {
		load_error(u, "provider '%s' in %s: unknown transport %d",
			   rp->name, origin, (int)rp->transport);
		return -EINVAL;
	}
	other = find_provider(u, rp->name);
	if (other) {
		load_error(u,
			   "provider '%s' in %s: a provider of that name is already registered from %s; ignored",
			   rp->name, origin, other->origin);
		return -EEXIST;
	}

	p = g_new0(struct ual_provider, 1);
	p->ref = 1;
	p->rp = rp;
	p->dl = dl;
	p->origin = g_strdup(origin);
	g_ptr_array_add(u->providers, p);
	g_debug("provider '%s' (%s) registered from %s", rp->name,
		ual_provider_description(p), origin);
	return 0;
}

/*
 * The mandatory device ops (rnicpi.h, "Mandatory ops"). The ops table
 * exists only once device_create has made a device, so this check runs
 * on the provider's first device, before the device is listed anywhere.
 */
bool ual_provider_check_ops(struct ual *u, struct ual_provider *p,
			    const struct rnicpi_device_ops *ops)
{
	const char *missing = NULL;

	/* A slot counts only when the provider's table reaches it. */
#define UAL_HAS_OP(name)                                                    \
	(offsetof(struct rnicpi_device_ops, name) + sizeof(ops->name) <=    \
		 ops->size && ops->name)
	if (!UAL_HAS_OP(device_destroy))
		missing = "device_destroy";
	else if (!UAL_HAS_OP(query_device))
		missing = "query_device";
	else if (!UAL_HAS_OP(query_port))
		missing = "query_port";
#undef UAL_HAS_OP
	if (!missing)
		return true;
	p->refused = true;
	load_error(u,
		   "provider '%s' in %s lacks the mandatory op %s; refused, no device of it is created",
		   p->rp->name, p->origin, missing);
	return false;
}

/* The first bytes of an ELF file (ELF spec, e_ident[EI_MAG0..3]). */
static bool file_is_elf(const char *path, int *err)
{
	unsigned char magic[4];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = errno;
		return false;
	}
	n = read(fd, magic, sizeof(magic));
	*err = n < 0 ? errno : 0;
	close(fd);
	return n == sizeof(magic) && memcmp(magic, "\177ELF", 4) == 0;
}

static void load_module(struct ual *u, const char *path)
{
	rnicpi_provider_entry_fn entry;
	void *dl, *sym;
	int err;

	if (!file_is_elf(path, &err)) {
		if (err)
			load_error(u, "provider module %s: cannot read it: %s",
				   path, g_strerror(err));
		else
			load_error(u,
				   "provider module %s: not an ELF shared object",
				   path);
		return;
	}
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		load_error(u, "provider module %s: cannot load it: %s", path,
			   dlerror());
		return;
	}
	dlerror();
	sym = dlsym(dl, RNICPI_ENTRY_SYMBOL);
	if (!sym) {
		load_error(u,
			   "provider module %s: no entry symbol %s (not a hostrdma provider?)",
			   path, RNICPI_ENTRY_SYMBOL);
		dlclose(dl);
		return;
	}
	/* POSIX dlsym: a data pointer that converts to the function. */
	*(void **)&entry = sym;
	if (register_provider(u, entry(), dl, path))
		dlclose(dl);
}

static gint compare_strings(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_dir(struct ual *u, const char *dir, bool from_env)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) error = NULL;
	const char *name;
	GDir *d;
	guint i;

	d = g_dir_open(dir, 0, &error);
	if (!d) {
		/* The installed directory may well not exist; a directory
		 * the user named should. */
		if (from_env)
			load_error(u, "provider directory %s: %s", dir,
				   error->message);
		else
			g_debug("provider directory %s: %s", dir,
				error->message);
		return;
	}
	while ((name = g_dir_read_name(d)))
		if (g_str_has_suffix(name, ".so"))
			g_ptr_array_add(names, g_strdup(name));
	g_dir_close(d);
	g_ptr_array_sort(names, compare_strings);
	for (i = 0; i < names->len; i++) {
		g_autofree char *path =
			g_build_filename(dir, names->pdata[i], NULL);

		load_module(u, path);
	}
}

void ual_load_providers(struct ual *u)
{
	const char *path = g_getenv(UAL_ENV_PROVIDER_PATH);
	size_t i;

	g_mutex_lock(&test_builtins_lock);
	if (test_builtins) {
		for (i = 0; i < test_builtins->len; i++)
			register_provider(u,
				g_array_index(test_builtins,
					      rnicpi_provider_entry_fn, i)(),
				NULL, "built-in");
	} else {
		for (i = 0; configured_builtins[i]; i++)
			register_provider(u, configured_builtins[i](), NULL,
					  "built-in");
	}
	g_mutex_unlock(&test_builtins_lock);

	if (path) {
		g_auto(GStrv) dirs = g_strsplit(path, ":", -1);
		char **dir;

		for (dir = dirs; *dir; dir++)
			if (**dir)
				load_dir(u, *dir, true);
	} else {
		load_dir(u, HOSTRDMA_PROVIDER_DIR, false);
	}
	/* Said, not logged: a user sees "no RDMA devices" and needs to
	 * know where providers were looked for. */
	if (u->providers->len == 0)
		load_error(u, "no RDMA provider found: searched %s (%s)",
			   path ? path : HOSTRDMA_PROVIDER_DIR,
			   path ? "HOSTRDMA_PROVIDER_PATH" :
				  "the installed provider directory; HOSTRDMA_PROVIDER_PATH names others");
}
