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
 */
#include <errno.h>
#include <stdio.h>

#include "array.h"
#include "cache.h"
#include "log.h"
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
	const struct cache_settings s = {
		.kind = cfg->cache,
		.mode = cfg->cache_mode,
		.size_bytes = cfg->cache_size,
		.seq_cutoff = cfg->cache_seq_cutoff,
		.hold_ms = cfg->cache_hold_ms,
		.log_path = cfg->cache_log,
	};
	struct cache_geometry g;
	struct raid_cache_status st;
	char size[32], unit[32], cut[32], hold[64];
	int r;

	if (cfg->cache == RAID_CACHE_NONE) {
		return 0;
	}
	if (a->read_only) {
		raid_error("cache=%s: the members are read-only: no cache",
			   cfg->cache == RAID_CACHE_RAM ? "ram" : "log");
		return 0;
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
	raid_error(
		"cache: %s in RAM, %s, in units of %s (%s); sequential runs past %s go to the members",
		st.mode == RAID_CACHE_WRITEBACK ? "write-back"
						: "write-through",
		human(st.size_bytes, size, sizeof(size)),
		human(g.unit_bytes, unit, sizeof(unit)), hold,
		cfg->cache_seq_cutoff
			? human(cfg->cache_seq_cutoff, cut, sizeof(cut))
			: "(never)");
	return 0;
}
