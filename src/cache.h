/*
 * cache.h: the write-back cache in front of the array (docs/cache.md).
 *
 * The cache knows nothing about RAID.  It is given a struct cache_backing
 * (read, write, trim, zero, flush of the device behind it, as an nbdkit
 * filter is given `next`) and a geometry: the device's size, the unit it
 * keeps dirty data in (a full stripe for parity levels, so that a full
 * unit is written back as one reconstruct-write) and whether a partly
 * dirty unit costs reads to write back (then it is held back a while, for
 * the rest of the stripe to come).  array.c calls cache_* for the public
 * raid_* functions when cache= is set; the backing calls the array's own
 * uncached functions.
 *
 * Every function returns 0 or -errno.  Many threads may call the data
 * functions at once (one cache for all connections).
 *
 * cache=log puts the persistent log (src/cache_log.c) behind the RAM
 * cache (src/cache_logmode.c): every write, zero and trim is a record
 * first, FLUSH syncs the log, write-back retires records once their data
 * is on the flushed device (docs/cache.md, "cache=log").
 */
#ifndef RAID_CACHE_H
#define RAID_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "raid.h"

#define CACHE_MIN_SIZE	 (1ull << 20)	/* cache-size= at least */
#define CACHE_BLOCK	 4096u		/* dirty bits and pages per 4K */
#define CACHE_UNIT_MAX	 (16ull << 20)	/* a larger stripe is not held */
#define CACHE_UNIT_PLAIN (256ull << 10) /* RAID 0/1/10: the unit, at least */

struct cache;
struct fault;

struct cache_backing {
	void *ctx;
	int (*read)(void *ctx, void *buf, uint64_t count, uint64_t off);
	/* flags: RAID_FUA */
	int (*write)(void *ctx, const void *buf, uint64_t count, uint64_t off,
		     uint32_t flags);
	/* flags: RAID_FUA, RAID_MAY_TRIM, RAID_FAST_ZERO */
	int (*trim)(void *ctx, uint64_t count, uint64_t off, uint32_t flags);
	int (*zero)(void *ctx, uint64_t count, uint64_t off, uint32_t flags);
	int (*flush)(void *ctx);
	/* May a write be taken now?  0, or -errno (the device failed). */
	int (*writable)(void *ctx);
};

struct cache_geometry {
	uint64_t size;	      /* bytes of the device */
	uint64_t unit_bytes;  /* a multiple of block_bytes */
	uint32_t block_bytes; /* CACHE_BLOCK or the device's larger block */
	bool hold_partial;    /* a partial unit costs reads: wait for more */
};

struct cache_settings {
	enum raid_cache_kind kind; /* RAM or LOG */
	enum raid_cache_mode mode;
	uint64_t size_bytes;
	uint64_t seq_cutoff; /* 0: never bypass */
	unsigned hold_ms;
	uint64_t readahead;	 /* the largest read-ahead window; 0: none */
	const char *log_path;	 /* cache=log */
	uint8_t log_uuid[16];	 /* the array the log is bound to */
	bool log_force;		 /* format over another array's log */
	struct fault *log_fault; /* fault=log: rules (the cache takes them) */
};

/*
 * A cache over be (copied).  Refuses a size that cannot hold 4 units
 * (it would thrash), or more than the device holds (clamped, said in the
 * debug log).  No thread yet: cache_start.  cache=log: the log is opened
 * (formatted when blank), the records a crash left written to the device
 * in order, the device flushed and the records retired, before it
 * returns; refusals name the log and the reason.
 */
int cache_open(const struct cache_backing *be, const struct cache_geometry *g,
	       const struct cache_settings *s, struct cache **out);
/* The write-back thread (after nbdkit forks).  Without it, write-back
 * happens only on flush, close, and when a writer needs room. */
int cache_start(struct cache *c);
/*
 * Stop the thread, write back everything and flush the device, free.
 * -errno when some dirty data could not be written back (logged: it is
 * lost; cache=log: it stays in the log, replayed at the next start).
 * cache=log: the log retired to empty, closed.  NULL is fine.
 */
int cache_close(struct cache *c);
/* Tests: free as kill -9 would leave it: nothing written back, the log's
 * records kept for the next open to replay. */
void cache_abandon(struct cache *c);

/* The device's requests, through the cache; ranges already checked. */
int cache_pread(struct cache *c, void *buf, uint64_t count, uint64_t off);
int cache_pwrite(struct cache *c, const void *buf, uint64_t count, uint64_t off,
		 uint32_t flags);
int cache_trim(struct cache *c, uint64_t count, uint64_t off, uint32_t flags);
int cache_zero(struct cache *c, uint64_t count, uint64_t off, uint32_t flags);
/* NBD FLUSH: every write acknowledged before it written back, then the
 * device flushed. */
int cache_flush(struct cache *c);

/*
 * Block status (NBD_CMD_BLOCK_STATUS) over the cache: from off (len > 0),
 * *run bytes all in units holding data not yet on the device (true: data,
 * whatever the device says), or all in units holding none (false: the
 * device's answer stands, if it is asked after this call).  Asked before
 * the device, so that one view answers: a unit holding nothing unwritten
 * now has every acknowledged write on the device already; asked after, a
 * write-back finishing in between made a hole of acknowledged data.
 */
bool cache_unwritten(struct cache *c, uint64_t off, uint64_t len,
		     uint64_t *run);

void cache_status(struct cache *c, struct raid_cache_status *st);

/* Write back everything dirty when it is called (as cache_flush: writes
 * that come meanwhile wait for the next), flush the device, and
 * (cache=log) retire what that put on it: `nbdraid --control PATH cache
 * flush`. */
int cache_drain_all(struct cache *c);

/* Bytes dirty now (written back not yet, or being written). */
uint64_t cache_dirty_bytes(struct cache *c);

/* Tests: run the write-back once as the thread would (no pacing), 0 or
 * -errno; *bytes written back. */
int cache_writeback_once(struct cache *c, bool everything, uint64_t *bytes);

#endif
