/*
 * raid.h: the public API of libnbdraid, the core of nbdraid.
 *
 * One opaque `struct raid_array` is an assembled array: its members are open,
 * its geometry is fixed.  The data functions may be called from many threads
 * at once (nbdkit's PARALLEL thread model); each blocks until every member
 * I/O of the request has completed.
 *
 * Every function returns 0 (or a count) on success and -errno on failure.
 * Nothing here prints: errors are reported once, through the log sink
 * (src/log.h), by the code that knows which member and which operation
 * failed.  The nbdkit plugin points that sink at nbdkit_verror.
 */
#ifndef RAID_H
#define RAID_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid_config.h"

struct raid_array;

/*
 * Request flags, the same meaning as nbdkit's:
 *   RAID_FUA        durable on every member it changed before return
 *   RAID_MAY_TRIM   zero: holes are fine
 *   RAID_FAST_ZERO  zero: fail with -ENOTSUP rather than write
 *   RAID_REQ_ONE    extents: one extent is enough
 */
#define RAID_FUA       (1u << 0)
#define RAID_MAY_TRIM  (1u << 1)
#define RAID_FAST_ZERO (1u << 2)
#define RAID_REQ_ONE   (1u << 3)

/* Extent types, numerically the same as NBDKIT_EXTENT_HOLE/ZERO. */
#define RAID_EXTENT_HOLE (1u << 0)
#define RAID_EXTENT_ZERO (1u << 1)

struct raid_info {
	uint64_t size; /* array bytes */
	int level;
	unsigned nr_members;
	uint64_t chunk_bytes;
	uint32_t min_block; /* smallest I/O that needs no read-modify-write */
	uint32_t preferred_block; /* one full stripe (a power of two) */
	uint32_t max_block;
	bool read_only;	       /* some member could only be opened read-only */
	char layout[32];       /* "n2", "left-symmetric", ... or "" */
	uint64_t data_offset;  /* where array data starts on every member */
	uint64_t member_bytes; /* each member's data area, from data_offset */
};

int raid_open(const struct raid_config *cfg, struct raid_array **out);
/*
 * Start the array's background thread (it marks the array clean in its
 * superblocks after writes stop).  Call it where threads may start: in
 * nbdkit, .after_fork.  Without it the array is marked clean at close.
 */
int raid_start(struct raid_array *a);
/* Stop the thread, mark the array clean (flushed first), close members. */
void raid_close(struct raid_array *a);
void raid_get_info(const struct raid_array *a, struct raid_info *info);

int raid_pread(struct raid_array *a, void *buf, uint32_t count, uint64_t offset,
	       uint32_t flags);
int raid_pwrite(struct raid_array *a, const void *buf, uint32_t count,
		uint64_t offset, uint32_t flags);
int raid_flush(struct raid_array *a);
int raid_trim(struct raid_array *a, uint32_t count, uint64_t offset,
	      uint32_t flags);
int raid_zero(struct raid_array *a, uint32_t count, uint64_t offset,
	      uint32_t flags);

/*
 * Report extents from `offset`: calls add() for consecutive ranges, at least
 * one covering `offset`, in ascending order.  type is 0 (data) or
 * RAID_EXTENT_HOLE|RAID_EXTENT_ZERO (no member holds data there).
 */
typedef int (*raid_extent_fn)(void *ctx, uint64_t offset, uint64_t length,
			      uint32_t type);
int raid_extents(struct raid_array *a, uint32_t count, uint64_t offset,
		 uint32_t flags, raid_extent_fn add, void *ctx);

/*
 * Verify redundancy offline, as md's "check": RAID 5, every stripe's
 * parity; RAID 1/10, every chunk's copies are equal; RAID 0 has nothing to
 * check.  Reads only.  A unit is a stripe (RAID 5) or a logical chunk.
 */
#define RAID_CHECK_LIST 16
enum raid_check_unit {
	RAID_CHECK_NONE,   /* no redundancy: nothing checked */
	RAID_CHECK_STRIPE, /* parity: a stripe row of every member */
	RAID_CHECK_CHUNK,  /* copies: a logical chunk's places */
};
struct raid_check_result {
	enum raid_check_unit unit;
	uint64_t units;			 /* stripes or chunks checked */
	uint64_t mismatched;		 /* of those, how many disagree */
	uint64_t first[RAID_CHECK_LIST]; /* the first mismatched units */
};
/* "none", "stripe", "chunk": the unit's name in messages and JSON. */
const char *raid_check_unit_name(enum raid_check_unit unit);

/* Progress of a long pass: units (or bytes) done of total. */
typedef void (*raid_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/*
 * Make redundancy consistent offline, md's "repair": RAID 5 parity
 * rewritten from the data, a mirror's other copies from its first, where
 * they disagree (res counts those units, as md's mismatch_cnt).  Units
 * that are holes on every member are skipped.
 */
int raid_repair(struct raid_array *a, struct raid_check_result *res,
		raid_progress_fn progress, void *ctx);
int raid_check(struct raid_array *a, struct raid_check_result *res);

/*
 * Create an array on its members, as `mdadm --create` does: md v1.x
 * superblocks (docs/metadata.md), redundancy consistent when it returns
 * (docs/nbdraid.md).  Refuses members in use, overlapping, too small, or
 * holding any signature (an md superblock, a filesystem, a partition
 * table ...) unless force.  Progress reports the initial sync, if any.
 */
struct raid_create_spec {
	int level;	      /* 0, 1, 5, 10 */
	const char *layout;   /* NULL: the level's default */
	uint64_t chunk_bytes; /* 0: RAID_DEFAULT_CHUNK (RAID 1: none) */
	const char *name;     /* NULL: "nbdraid" */
	const char *homehost; /* NULL: this host's name */
	uint64_t member_size; /* bytes of each member to use; 0: all */
	unsigned minor;	      /* superblock 1.minor: 2 (default), 1, 0 */
	bool assume_clean;    /* write no parity or copies */
	bool force;	      /* overwrite signatures found on members */
	bool direct;	      /* open members O_DIRECT */
	char *const *members; /* role order */
	unsigned nr_members;
};
struct raid_create_result {
	uint8_t uuid[16];
	char name[33];	       /* set_name as written ("host:name") */
	char layout[32];       /* the layout's name, "" for none */
	uint64_t member_bytes; /* each member's data area in use */
	uint64_t data_offset;  /* where it starts */
	bool synced;	       /* parity or copies were written */
};
int raid_create(const struct raid_create_spec *spec, raid_progress_fn progress,
		void *ctx, struct raid_create_result *out);

/*
 * One member's md superblock in words, as `mdadm --examine` shows it.
 * Units are md's: sectors of 512 bytes, unless the name says bytes.
 */
#define RAID_ROLE_SPARE	   0xffffu
#define RAID_ROLE_FAULTY   0xfffeu
#define RAID_EXAMINE_ROLES 1920
struct raid_examine {
	unsigned minor; /* superblock version 1.minor */
	uint32_t feature_map;
	uint8_t uuid[16];	 /* the array's */
	uint8_t device_uuid[16]; /* this member's */
	char name[33];		 /* "host:name" */
	uint64_t ctime, utime;	 /* seconds since the epoch */
	int level;		 /* md's number: 0, 1, 4, 5, 6, 10, -1 ... */
	uint32_t md_layout;	 /* md's number */
	char layout[64];	 /* its name, "" for none */
	uint64_t chunk_bytes;	 /* 0: none (RAID 1) */
	unsigned raid_disks;
	uint64_t array_bytes;	  /* 0 when nbdraid cannot tell */
	uint64_t used_sectors;	  /* md's size: Used Dev Size */
	uint64_t data_offset;	  /* sectors */
	uint64_t data_sectors;	  /* Avail Dev Size */
	uint64_t super_offset;	  /* sectors */
	uint64_t recovery_offset; /* sectors (feature 0x2) */
	int32_t bitmap_offset;	  /* sectors from the superblock (0x1) */
	int32_t bblog_offset;	  /* sectors from the superblock */
	uint16_t bblog_sectors;
	uint64_t events;
	uint64_t resync_offset; /* UINT64_MAX: clean */
	uint32_t checksum;	/* as stored */
	uint32_t checksum_expected;
	unsigned dev_number;
	uint16_t role; /* < raid_disks, or RAID_ROLE_* */
	unsigned max_dev;
	uint16_t roles[RAID_EXAMINE_ROLES];
};
/*
 * Read path's md superblock.  0; -EBADMSG when its checksum is wrong (ex
 * is filled all the same); -ENOENT when it has none; another -errno, with
 * why saying what.
 */
int raid_examine(const char *path, struct raid_examine *ex, char *why,
		 size_t whylen);

/* Where the bytes of one array offset live: copies of (member, offset). */
struct raid_place {
	unsigned member;
	uint64_t offset;
};
int raid_locate(const struct raid_array *a, uint64_t offset,
		struct raid_place *places, unsigned max);

/*
 * ---- degraded mode, status and control (docs/degraded.md) ----
 *
 * Every role of the array has a state.  A member whose I/O fails (after
 * one retry) becomes faulty, recorded in the superblocks of the others
 * before the request that saw the error is answered, and is never used
 * again; a role with no member is missing.  The array is optimal, degraded
 * (some role out, every byte still readable), rebuilding, or failed (some
 * data unreachable: reads of it and every write answer EIO).
 */
enum raid_member_state {
	RAID_MEMBER_IN_SYNC,
	RAID_MEMBER_FAULTY,
	RAID_MEMBER_MISSING,
	RAID_MEMBER_SPARE,
	RAID_MEMBER_REBUILDING,
};
enum raid_array_state {
	RAID_ARRAY_OPTIMAL,
	RAID_ARRAY_DEGRADED,
	RAID_ARRAY_REBUILDING,
	RAID_ARRAY_FAILED,
};
/* "in_sync", "faulty", ...; "optimal", "degraded", ... (the JSON names). */
const char *raid_member_state_name(enum raid_member_state s);
const char *raid_array_state_name(enum raid_array_state s);

/* Client requests, counted per kind. */
enum raid_req_kind {
	RAID_REQ_READ,
	RAID_REQ_WRITE,
	RAID_REQ_FLUSH,
	RAID_REQ_TRIM,
	RAID_REQ_ZERO,
	RAID_REQ_KINDS,
};
const char *raid_req_kind_name(enum raid_req_kind k); /* "read" ... */

struct raid_member_status {
	unsigned role;
	const char *path; /* NULL: no member was given for the role; the
			     string lives as long as the array is open */
	enum raid_member_state state;
	uint64_t read_errors;	  /* member reads that failed */
	uint64_t write_errors;	  /* writes, flushes, trims, zeros */
	uint64_t corrected_reads; /* sectors rewritten after a read error
				     (md's cnt_corrected_read) */
};
struct raid_req_stats {
	uint64_t requests, bytes, errors;
};
/* Stripe gathering (parity levels; docs/gather.md): what it did. */
struct raid_gather_stats {
	bool enabled;		    /* the array gathers (gather-wait= > 0) */
	uint64_t wait_us, grace_us; /* gather-wait=, gather-grace= */
	uint64_t pieces;	    /* partial-stripe pieces parked */
	uint64_t full;		    /* stripes written whole from them */
	/* Stripes written as parked (partial): nothing more came once
	 * every write in flight was parked; their deadline passed; an
	 * exclusive range request (unaligned write, sync window) waited. */
	uint64_t released_idle, released_timeout, released_forced;
};

/*
 * ---- recovery, resync and scrub (docs/recovery.md) ----
 *
 * One background pass at a time walks the members, as md's md_do_sync:
 * recovery rebuilds a role onto a new member (a spare), resync makes
 * copies or parity consistent after an unclean stop, check counts what
 * disagrees (md's mismatch_cnt), repair rewrites it.
 */
enum raid_sync_kind {
	RAID_SYNC_NONE,
	RAID_SYNC_RECOVERY,
	RAID_SYNC_RESYNC,
	RAID_SYNC_CHECK,
	RAID_SYNC_REPAIR,
};
/* "recovery", "resync", "check", "repair" (the JSON names); NULL: none. */
const char *raid_sync_kind_name(enum raid_sync_kind k);
struct raid_sync_progress {
	enum raid_sync_kind kind; /* RAID_SYNC_NONE: nothing running */
	int member;		  /* the role being rebuilt, or -1 */
	uint64_t done_bytes;	  /* of a member's data area */
	uint64_t total_bytes;	  /* a member's data area */
	uint64_t bytes_per_s;	  /* over the last few seconds */
	uint64_t eta_s;
};
struct raid_check_report {
	enum raid_sync_kind kind; /* check or repair; NONE: none finished */
	uint64_t mismatch_cnt;	  /* sectors, as md's mismatch_cnt */
	uint64_t finished;	  /* when, seconds since the epoch */
};
/* md's speed_limit_min and _max (KiB/s per member), their defaults. */
#define RAID_SYNC_SPEED_MIN 1000
#define RAID_SYNC_SPEED_MAX 200000
/*
 * ---- the write-back cache (docs/cache.md) ----
 *
 * cache=ram holds acknowledged writes in memory and writes them back to
 * the members in the background, full stripes first; FLUSH writes back
 * every dirty byte acknowledged before it and flushes the members.
 * Requests count once, as the client sent them (io[] above), whichever
 * way they went.
 */
struct raid_cache_status {
	enum raid_cache_kind kind; /* RAID_CACHE_NONE: no cache, rest 0 */
	enum raid_cache_mode mode;
	uint64_t size_bytes;  /* cache-size */
	uint64_t used_bytes;  /* data held, dirty or clean */
	uint64_t dirty_bytes; /* not yet written back (or being written) */
	uint64_t writeback_inflight_bytes; /* of those, being written now */
	uint64_t read_hits;	  /* reads served from the cache alone */
	uint64_t read_misses;	  /* reads that went to the members, for some */
	uint64_t writes_cached;	  /* writes answered once in memory */
	uint64_t write_hits;	  /* of those, every block was cached before */
	uint64_t writes_direct;	  /* written to the members before the reply:
				     FUA, unaligned edges, writethrough */
	uint64_t writes_bypassed; /* sequential runs past the cutoff */
	uint64_t written_back_bytes;	/* by write-back, since start */
	uint64_t writeback_bytes_per_s; /* over the last seconds */
	uint64_t writeback_errors;	/* write-backs the members refused */
	uint64_t waits;			/* writes that waited for room */
	uint64_t readahead_bytes;	/* read ahead into the cache (clean) */
	uint64_t readahead_hits;	/* reads that found blocks read ahead */
	/* cache=log: the log (docs/cache.md, "cache=log"). */
	const char *log_path;	  /* valid while the array is open */
	bool log_failed;	  /* it failed: write-through since */
	int log_error;		  /* why (-errno), when it failed */
	uint64_t log_used_bytes;  /* records not yet retired */
	uint64_t log_total_bytes; /* its record area */
	uint64_t log_records;	  /* records appended since start */
	uint64_t log_syncs;	  /* fdatasyncs of the log (group commits) */
	uint64_t log_retires;	  /* checkpoints moved */
	uint64_t log_waits;	  /* writes that waited for log space */
	uint64_t log_replayed;	  /* records replayed at start */
};

struct raid_status {
	enum raid_array_state state;
	int level;
	char layout[32];
	uint64_t size;
	uint64_t chunk_bytes;
	bool has_meta;	  /* md superblocks: uuid, name, events are set */
	uint8_t uuid[16]; /* the array's */
	char name[33];
	uint64_t events;
	bool clean;	     /* marked clean in the superblocks */
	char reason[256];    /* why degraded or failed; "" when optimal */
	unsigned nr_members; /* roles */
	struct raid_member_status members[RAID_MAX_MEMBERS];
	unsigned nr_spares; /* role: their index; state: spare */
	struct raid_member_status spares[RAID_MAX_SPARES];
	struct raid_req_stats io[RAID_REQ_KINDS];
	struct raid_gather_stats gather;
	struct raid_sync_progress progress;
	struct raid_check_report last_check;
	uint64_t speed_min, speed_max; /* KiB/s per member */
	struct raid_cache_status cache;
};
int raid_status(struct raid_array *a, struct raid_status *st);
/* st as one JSON object, without a newline (docs/control.md); free() it. */
char *raid_status_json(const struct raid_status *st);

/* A member by role number ("2") or path: its role, or -ENOENT. */
int raid_member_lookup(struct raid_array *a, const char *spec);
/*
 * mdadm --fail: mark the member faulty, recorded in the superblocks of
 * the others.  0 (also when it already was); -EBUSY when it holds the last
 * copy of some data (md refuses that too); -ENOENT for a missing role.
 */
int raid_fail_member(struct raid_array *a, unsigned role, const char *why);
/*
 * mdadm --remove: a faulty member leaves its role (recorded as removed),
 * its file is closed and released.  -EBUSY while it is in sync.
 */
int raid_remove_member(struct raid_array *a, unsigned role);
/*
 * mdadm --add: path becomes a spare of the array (md superblocks only):
 * opened, claimed, checked against the members (same file, overlap, size:
 * data offset + used size must fit), a spare's superblock written on it
 * unless it carries one of this array as a spare already, then recorded
 * in every member's role table.  If a role has no member (missing, or
 * faulty: that one is removed first, as md) the spare takes it at once
 * and recovery starts.  A member carrying another array's superblock (or
 * a role in this one) only with force.  0, or -errno (logged): -EINVAL
 * raw mode or no redundancy, -EEXIST a superblock in the way, -ENOSPC too
 * small or too many spares, -EBUSY in use.
 */
int raid_add_member(struct raid_array *a, const char *path, bool force);

/*
 * md's sync_action "check" or "repair": start a scrub (0), or -EBUSY while
 * a recovery or resync runs (they come first, as in md), -EALREADY while a
 * scrub does.  raid_sync_stop stops a scrub (md's "idle"; a recovery or
 * resync stops only when the array closes, and resumes at its checkpoint).
 * raid_sync_speed sets md's speed_limit_min/_max in KiB/s per member
 * (-EINVAL unless 0 < min <= max).
 */
int raid_sync_request(struct raid_array *a, enum raid_sync_kind kind);
int raid_sync_stop(struct raid_array *a);
int raid_sync_speed(struct raid_array *a, uint64_t min_kib, uint64_t max_kib);

/*
 * Write back everything the cache holds dirty, then flush the members:
 * returns when no byte is dirty that was acknowledged before the call
 * (`nbdraid --control PATH cache flush`).  -ENOTSUP without a cache.
 */
int raid_cache_flush(struct raid_array *a);

/* Log sink: every message of the core goes through here. */
enum raid_log_level { RAID_LOG_ERROR, RAID_LOG_DEBUG };
typedef void (*raid_log_fn)(enum raid_log_level lvl, const char *fmt,
			    va_list ap);
void raid_set_log(raid_log_fn fn);

#endif
