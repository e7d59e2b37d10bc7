/*
 * array_cache.c: the array as the cache's backing device, and the
 * geometry the cache gets from it (cache.h, docs/cache.md).
 *
 * The unit is a full data stripe on parity levels, so that a unit written
 * back whole is one reconstruct-write (md's full-stripe write: no reads),
 * and a partly dirty one is held back a while for the rest to come; a
 * stripe larger than CACHE_UNIT_MAX is not held (its chunk is the unit).
 * RAID 0, 1 and 10 cost nothing extra for a partial write: units of
 * 256 KiB (or the chunk, when larger), written back as soon as the pacing
 * allows; consecutive ones are merged into one write all the same.
 * The cache's block is 4K, or the members' O_DIRECT block when larger.
 *
 * cache=log: the log is bound to the array's UUID from its md superblocks
 * (raw arrays have none: cache=log is refused there), must not share
 * bytes with a member, and is replayed before the array serves.  An array
 * started with another cache (or none) and cache-log=PATH naming the log
 * it had is refused while that log holds records, unless force=true
 * (which drops them).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "cache.h"
#include "cache_log.h"
#include "io/fault.h"
#include "log.h"
#include "member_overlap.h"
#include "superblock.h"
#include "util.h"

static int
be_read(void *ctx, void *buf, uint64_t count, uint64_t off)
{
	return array_pread(ctx, buf, count, off);
}

static int
be_write(void *ctx, const void *buf, uint64_t count, uint64_t off,
	 uint32_t flags)
{
	return array_pwrite(ctx, buf, count, off, flags);
}

static int
be_trim(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	return array_trim(ctx, count, off, flags);
}

static int
be_zero(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	return array_zero(ctx, count, off, flags);
}

static int
be_flush(void *ctx)
{
	return array_flush(ctx);
}

static int
be_writable(void *ctx)
{
	return array_writable(ctx);
}

static void
cache_geometry(const struct raid_array *a, struct cache_geometry *g)
{
	uint64_t stripe = a->write_piece_bytes;

	g->size = a->size;
	g->block_bytes = MAX(CACHE_BLOCK, a->io_align);
	g->hold_partial = a->layout->stripe_pieces && stripe <= CACHE_UNIT_MAX;
	if (g->hold_partial) {
		g->unit_bytes = stripe;
	} else {
		g->unit_bytes = MAX(a->chunk_bytes, CACHE_UNIT_PLAIN);
	}
}

/* The array's UUID (md's set_uuid); false in raw mode. */
static bool
array_uuid(const struct raid_array *a, uint8_t uuid[16])
{
	const struct md_sb *sb = a->meta ? meta_freshest(a->meta) : NULL;

	if (sb) {
		memcpy(uuid, sb->set_uuid, 16);
	}
	return sb != NULL;
}

/*
 * The log at path shares no bytes with a member or a spare (the same
 * file, a partition of a member's disk ...): member_overlap's rules, the
 * log as one more member.  -EINVAL (said) when it does.
 */
static int
log_overlap(const struct raid_array *a, const char *path)
{
	unsigned nsp = a->meta ? a->meta->nr_spares : 0, n = 0;
	struct raid_member *all = calloc(a->nr_members + nsp + 1, sizeof(*all));
	struct raid_member *lm;
	struct stat st;
	int r = 0;

	if (!all) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < a->nr_members; i++) {
		if (a->members[i].fd >= 0) {
			all[n++] = a->members[i];
		}
	}
	for (unsigned i = 0; i < nsp; i++) {
		all[n++] = a->spares[i];
	}
	lm = &all[n++];
	lm->path = (char *)path;
	lm->fd = member_open_path(path, O_RDONLY, &st);
	if (lm->fd == -EINVAL && st.st_mode) {
		r = -EINVAL;
		raid_error(
			"cache-log %s: %s, not a regular file or block device",
			path, member_type_name(st.st_mode));
	} else if (lm->fd < 0) {
		r = lm->fd;
		raid_error("cache-log %s: %s", path, strerror(-r));
	} else if (S_ISBLK(st.st_mode)) {
		lm->is_blk = true;
		lm->dev = st.st_rdev;
		if (ioctl(lm->fd, BLKGETSIZE64, &lm->size) < 0) {
			lm->size = 0;
		}
	} else {
		lm->dev = st.st_dev;
		lm->ino = st.st_ino;
		lm->size = (uint64_t)st.st_size;
	}
	if (r == 0 && member_overlap_check(all, n) < 0) {
		raid_error(
			"cache-log %s: shares bytes with a member of the array (member %u above is the log): refused",
			path, n - 1);
		r = -EINVAL;
	}
	if (lm->fd >= 0) {
		close(lm->fd);
	}
	free(all);
	return r;
}

/*
 * cache-log=PATH without cache=log: the log the array had.  Refused
 * while it holds records of this array (they were never written to the
 * members), unless force=true: then they are retired unread (lost).
 */
static int
log_left_behind(const struct raid_array *a, const struct raid_config *cfg)
{
	const char *path = cfg->cache_log;
	uint8_t uuid[16], mine[16];
	char why[512], u1[40], u2[40];
	struct clog *l;
	bool has;
	int r = clog_peek(path, uuid, &has, why, sizeof(why));

	if (r < 0) {
		raid_error("cache-log: %s", why);
		return r;
	}
	if (array_uuid(a, mine) && memcmp(uuid, mine, 16) != 0) {
		uuid_format(uuid, u1);
		uuid_format(mine, u2);
		raid_error(
			"cache-log %s: the log of array %s, not of this one (%s)",
			path, u1, u2);
		return -EINVAL;
	}
	if (!has) {
		return 0;
	}
	if (!cfg->force) {
		raid_error(
			"cache-log %s holds writes this array has not written to its members (it stopped without a clean close with cache=log): start it with cache=log cache-log=%s to replay them, or with force=true to start without them (they are lost)",
			path, path);
		return -EBUSY;
	}
	r = clog_open(path, uuid, a->size, false, false, &l, why, sizeof(why));
	if (r == 0) {
		r = clog_retire(l, CLOG_ALL);
		clog_close(l);
	} else {
		raid_error("cache-log: %s", why);
	}
	if (r == 0) {
		raid_error(
			"cache-log %s: force=true: its records were dropped, not replayed; writes acknowledged before the crash may be lost",
			path);
	}
	return r;
}

/* cache=log over read-only members: no cache, unless records wait. */
static int
log_read_only(const struct raid_config *cfg)
{
	uint8_t uuid[16];
	char why[512];
	bool has = false;

	if (cfg->cache == RAID_CACHE_LOG &&
	    clog_peek(cfg->cache_log, uuid, &has, why, sizeof(why)) == 0 &&
	    has) {
		raid_error(
			"cache-log %s holds records, but the members are read-only: they cannot be replayed",
			cfg->cache_log);
		return -EROFS;
	}
	raid_error("cache=%s: the members are read-only: no cache",
		   cfg->cache == RAID_CACHE_RAM ? "ram" : "log");
	return 0;
}

/* "256 MiB", "1536 KiB": for the start line. */
static const char *
human(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ull << 30) && n % (1ull << 30) == 0) {
		snprintf(buf, len, "%llu GiB", (unsigned long long)(n >> 30));
	} else if (n >= (1ull << 20) && n % (1ull << 20) == 0) {
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
	} else {
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
	}
	return buf;
}

int
array_cache_open(struct raid_array *a, const struct raid_config *cfg)
{
	const struct cache_backing be = {
		.ctx = a,
		.read = be_read,
		.write = be_write,
		.trim = be_trim,
		.zero = be_zero,
		.flush = be_flush,
		.writable = be_writable,
	};
	struct cache_settings s = {
		.kind = cfg->cache,
		.mode = cfg->cache_mode,
		.size_bytes = cfg->cache_size,
		.seq_cutoff = cfg->cache_seq_cutoff,
		.hold_ms = cfg->cache_hold_ms,
		.readahead = cfg->cache_readahead,
		.log_path = cfg->cache_log,
		.log_force = cfg->force,
	};
	struct cache_geometry g;
	struct raid_cache_status st;
	char size[32], unit[32], cut[32], rasz[32], ra[48], hold[64];
	char where[PATH_MAX + 32];
	int r;

	s.log_fault = fault_log_rules(cfg->faults, cfg->nr_faults, &r);
	if (r < 0) {
		return r;
	}
	if (s.log_fault && cfg->cache != RAID_CACHE_LOG) {
		raid_error("fault '%s': ROLE log needs cache=log",
			   s.log_fault->rules[0].spec);
		fault_log_free(s.log_fault);
		return -EINVAL;
	}
	if (s.log_fault && a->read_only) {
		fault_log_free(s.log_fault); /* refused below */
		s.log_fault = NULL;
	}
	if (cfg->cache != RAID_CACHE_LOG && cfg->cache_log &&
	    (r = log_left_behind(a, cfg)) < 0) {
		return r;
	}
	if (cfg->cache == RAID_CACHE_NONE) {
		return 0;
	}
	if (a->read_only) {
		return log_read_only(cfg);
	}
	if (cfg->cache == RAID_CACHE_LOG) {
		if (!array_uuid(a, s.log_uuid)) {
			fault_log_free(s.log_fault);
			raid_error(
				"cache=log needs md superblocks: the log is bound to the array's UUID, and metadata=none has none (create the array with nbdraid create or mdadm)");
			return -EINVAL;
		}
		r = log_overlap(a, cfg->cache_log);
		if (r < 0) {
			fault_log_free(s.log_fault);
			return r;
		}
	}
	cache_geometry(a, &g);
	r = cache_open(&be, &g, &s, &a->cache);
	if (r < 0) {
		return r;
	}
	cache_status(a->cache, &st);
	if (g.hold_partial) {
		snprintf(hold, sizeof(hold),
			 "full stripes, a partial one held up to %u ms",
			 cfg->cache_hold_ms);
	} else {
		snprintf(hold, sizeof(hold), "no stripe held");
	}
	where[0] = '\0';
	if (cfg->cache == RAID_CACHE_LOG &&
	    st.log_total_bytes < 2 * st.size_bytes) {
		raid_error(
			"cache-log %s: %s of records hold fewer 4K writes than the cache holds blocks (each takes 8K of log): the log, not cache-size, will bound the data waiting for write-back; a log of twice cache-size or more lets the cache fill",
			cfg->cache_log,
			human(st.log_total_bytes, cut, sizeof(cut)));
	}
	if (cfg->cache == RAID_CACHE_LOG) {
		snprintf(where, sizeof(where), " with the log %s (%s)",
			 cfg->cache_log,
			 human(st.log_total_bytes, cut, sizeof(cut)));
	}
	snprintf(ra, sizeof(ra), "up to %s",
		 human(MIN(cfg->cache_readahead, st.size_bytes / 16), rasz,
		       sizeof(rasz)));
	raid_error(
		"cache: %s in RAM%s, %s, in units of %s (%s); sequential runs past %s go to the members; read-ahead %s",
		st.mode == RAID_CACHE_WRITEBACK ? "write-back"
						: "write-through",
		where, human(st.size_bytes, size, sizeof(size)),
		human(g.unit_bytes, unit, sizeof(unit)), hold,
		cfg->cache_seq_cutoff
			? human(cfg->cache_seq_cutoff, cut, sizeof(cut))
			: "(never)",
		cfg->cache_readahead ? ra : "off");
	return 0;
}
