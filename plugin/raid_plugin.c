/*
 * raid_plugin.c: nbdkit glue for libnbdraid, in the manner of nbdkit's
 * plugins/file.  The callbacks translate and nothing more: key=value to
 * raid_config_set(), requests to raid_pread() ..., -errno to nbdkit_error()
 * plus nbdkit_set_error().  Every connection shares the one array, so a
 * flush on any connection covers the writes of all of them: multi-conn is
 * honest.  No thread and no io_uring ring is created before nbdkit forks:
 * rings are made lazily on each worker thread (src/io/uring.c).
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nbdkit-plugin.h>

#include "raid.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* -D raid.requests=1: log every request. */
NBDKIT_DLL_PUBLIC int raid_debug_requests = 0;

static struct raid_config config;
static struct raid_array *array;
static struct raid_info info;

static void
nbdraid_log(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_ERROR) {
		nbdkit_verror(fmt, ap);
	} else {
		nbdkit_vdebug(fmt, ap);
	}
}

static struct nbdkit_plugin plugin;

/*
 * The help text comes from the option table at run time.  nbdkit copies
 * the plugin table when it registers the module, before .load, so it is
 * filled in when the module is loaded.
 */
__attribute__((constructor)) static void
nbdraid_help_init(void)
{
	plugin.config_help = raid_config_help();
}

static void
nbdraid_load(void)
{
	raid_set_log(nbdraid_log);
	raid_config_init(&config);
}

static void
nbdraid_unload(void)
{
	raid_close(array);
	raid_config_free(&config);
}

static int
nbdraid_config(const char *key, const char *value)
{
	char *abs = NULL;
	int r;

	/* nbdkit changes directory after config: resolve paths now. */
	if ((strcmp(key, "member") == 0 &&
	     strcmp(value, RAID_MEMBER_MISSING_NAME) != 0) ||
	    strcmp(key, "spare") == 0 || strcmp(key, "config") == 0 ||
	    strcmp(key, "control") == 0 || strcmp(key, "cache-log") == 0 ||
	    (strcmp(key, "event") == 0 && strchr(value, '/'))) {
		abs = nbdkit_absolute_path(value);
		if (!abs) {
			return -1;
		}
		value = abs;
	}
	r = raid_config_set(&config, key, value);
	free(abs);
	return r < 0 ? -1 : 0;
}

static int
nbdraid_config_complete(void)
{
	return raid_config_check(&config) < 0 ? -1 : 0;
}

static int
nbdraid_get_ready(void)
{
	if (raid_open(&config, &array) < 0) {
		return -1;
	}
	raid_get_info(array, &info);
	nbdkit_debug("raid%d: %u members, chunk %llu, layout '%s', %llu bytes",
		     info.level, info.nr_members,
		     (unsigned long long)info.chunk_bytes, info.layout,
		     (unsigned long long)info.size);
	return 0;
}

/* Threads may start now: the one that marks the array clean. */
static int
nbdraid_after_fork(void)
{
	return raid_start(array) < 0 ? -1 : 0;
}

static void *
nbdraid_open(int readonly)
{
	(void)readonly;
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
nbdraid_get_size(void *handle)
{
	(void)handle;
	return info.size;
}

static int
nbdraid_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
		   uint32_t *maximum)
{
	(void)handle;
	*minimum = info.min_block;
	*preferred = info.preferred_block;
	*maximum = info.max_block;
	return 0;
}

static int
nbdraid_can_write(void *handle)
{
	(void)handle;
	return !info.read_only;
}

static int
nbdraid_can_multi_conn(void *handle)
{
	(void)handle;
	return 1;
}

static int
nbdraid_can_fua(void *handle)
{
	(void)handle;
	return NBDKIT_FUA_NATIVE;
}

static int
nbdraid_can_fast_zero(void *handle)
{
	(void)handle;
	return 1;
}

static int
nbdraid_can_extents(void *handle)
{
	(void)handle;
	return 1;
}

/* Convert a core result: -errno to an nbdkit error, once, here. */
static int
result(int r, const char *what, uint32_t count, uint64_t offset)
{
	if (r >= 0) {
		return 0;
	}
	if (r != -ENOTSUP && r != -EOPNOTSUPP) {
		nbdkit_error("%s %u bytes at %llu: %s", what, count,
			     (unsigned long long)offset, strerror(-r));
	}
	nbdkit_set_error(-r);
	return -1;
}

static uint32_t
core_flags(uint32_t flags)
{
	return ((flags & NBDKIT_FLAG_FUA) ? RAID_FUA : 0) |
	       ((flags & NBDKIT_FLAG_MAY_TRIM) ? RAID_MAY_TRIM : 0) |
	       ((flags & NBDKIT_FLAG_FAST_ZERO) ? RAID_FAST_ZERO : 0) |
	       ((flags & NBDKIT_FLAG_REQ_ONE) ? RAID_REQ_ONE : 0);
}

static int
nbdraid_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
	      uint32_t flags)
{
	(void)handle;
	(void)flags;
	if (raid_debug_requests) {
		nbdkit_debug("pread %u at %llu", count,
			     (unsigned long long)offset);
	}
	return result(raid_pread(array, buf, count, offset, 0), "pread", count,
		      offset);
}

static int
nbdraid_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
	       uint32_t flags)
{
	(void)handle;
	if (raid_debug_requests) {
		nbdkit_debug("pwrite %u at %llu flags %#x", count,
			     (unsigned long long)offset, flags);
	}
	return result(raid_pwrite(array, buf, count, offset, core_flags(flags)),
		      "pwrite", count, offset);
}

static int
nbdraid_flush(void *handle, uint32_t flags)
{
	(void)handle;
	(void)flags;
	return result(raid_flush(array), "flush", 0, 0);
}

static int
nbdraid_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)handle;
	return result(raid_trim(array, count, offset, core_flags(flags)),
		      "trim", count, offset);
}

static int
nbdraid_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)handle;
	return result(raid_zero(array, count, offset, core_flags(flags)),
		      "zero", count, offset);
}

static int
add_extent(void *ctx, uint64_t offset, uint64_t length, uint32_t type)
{
	return nbdkit_add_extent(ctx, offset, length, type) < 0 ? -EIO : 0;
}

static int
nbdraid_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
		struct nbdkit_extents *extents)
{
	(void)handle;
	return result(raid_extents(array, count, offset, core_flags(flags),
				   add_extent, extents),
		      "extents", count, offset);
}

/* clang-format off */
static struct nbdkit_plugin plugin = {
	.name               = "raid",
	.longname           = "nbdraid: software RAID 0/1/5/10 over files and block devices",
	.version            = "0.1",
	.load               = nbdraid_load,
	.unload             = nbdraid_unload,
	.config             = nbdraid_config,
	.config_complete    = nbdraid_config_complete,
	.config_help        = NULL, /* nbdraid_help_init */
	.magic_config_key   = NULL,
	.get_ready          = nbdraid_get_ready,
	.after_fork         = nbdraid_after_fork,
	.open               = nbdraid_open,
	.get_size           = nbdraid_get_size,
	.block_size         = nbdraid_block_size,
	.can_write          = nbdraid_can_write,
	.can_multi_conn     = nbdraid_can_multi_conn,
	.can_fua            = nbdraid_can_fua,
	.can_fast_zero      = nbdraid_can_fast_zero,
	.can_extents        = nbdraid_can_extents,
	.pread              = nbdraid_pread,
	.pwrite             = nbdraid_pwrite,
	.flush              = nbdraid_flush,
	.trim               = nbdraid_trim,
	.zero               = nbdraid_zero,
	.extents            = nbdraid_extents,
	.errno_is_preserved = 0,
};
/* clang-format on */

NBDKIT_REGISTER_PLUGIN(plugin)
