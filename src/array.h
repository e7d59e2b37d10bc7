/*
 * array.h: the full struct raid_array.
 *
 * Locks (docs/locking.md lists them all):
 *   write_lock   byte ranges of the array.  Every write, zero and trim
 *                holds its range shared; an unaligned write to O_DIRECT
 *                members (it reads, patches and rewrites its edge blocks)
 *                holds its blocks exclusive, so no other write lands in
 *                them in between (a lost update); a read error's repair
 *                holds its range exclusive, so no write lands between
 *                reading the good bytes and rewriting them.  First come,
 *                first served (range_lock.h).  Other reads take nothing.
 *   stripe_locks RAID 5: a stripe's data and parity (stripe_lock.h).
 *   gather       parity levels: the parked partial-stripe pieces of
 *                writes in flight (gather.h), a leaf lock taken inside a
 *                write's range; never held across I/O.
 *   fail_lock    member state changes (member.h: state), `broken`,
 *                `reason` and the spares; taken by the data path only
 *                when a member I/O has failed, and by the control calls.
 *                Before meta->lock (the spares change under both).  Held
 *                by a failure from marking the member faulty until the
 *                record is durable: a request that must not be answered
 *                before (failures_recorded) waits for it, holding no
 *                other lock of the array's.
 * Everything else in the array is fixed after raid_open(); per-request
 * state (the batch, the bounce buffers, the io_uring ring) is per thread.
 */
#ifndef RAID_ARRAY_H
#define RAID_ARRAY_H

#include "io/io.h"
#include "layout/layout.h"
#include "member.h"
#include "metadata.h"
#include "raid.h"
#include "range_lock.h"
#include "stripe_lock.h"

/* The thread that marks the array clean (array_state.c). */
struct state_thread {
	pthread_t thread;
	pthread_mutex_t lock; /* guards stop; with wake, the thread's sleep */
	pthread_cond_t wake;
	bool stop;
	bool running;
};

struct raid_array {
	const struct raid_layout *layout;
	struct raid_geom g; /* chunk_shift, data_offset, copies ... */
	struct raid_member *members;
	unsigned nr_members;
	uint64_t size; /* array bytes */
	uint64_t chunk_bytes;
	uint64_t member_bytes;	    /* each member's data area */
	uint64_t write_piece_bytes; /* writes are cut at these boundaries */
	unsigned mem_align;	    /* O_DIRECT buffer alignment, max */
	unsigned io_align;	    /* O_DIRECT offset/length alignment, max */
	/*
	 * Trim and zero reach members in multiples of this: io_align, or a
	 * block device's logical block even when opened buffered (BLKDISCARD,
	 * BLKZEROOUT and fallocate on a block device need whole blocks).
	 */
	unsigned discard_align;
	bool read_only;
	bool has_blk;		      /* some member is a block device */
	bool owns_members;	      /* raid_close() closes them */
	struct range_lock write_lock; /* see above */
	struct stripe_locks stripe_locks;
	struct gather *gather;	/* stripe gathering, or NULL (gather.h) */
	struct raid_meta *meta; /* md superblocks; NULL in raw mode */
	struct state_thread state;

	pthread_mutex_t fail_lock; /* see above */
	/*
	 * Set when a member I/O error could not be absorbed (the member held
	 * the last copy of some data): md's MD_BROKEN.  Writes answer EIO
	 * from then on; reads are served where the data is still reachable.
	 */
	atomic_bool broken;
	/*
	 * Member failures marked (state faulty) and not yet durable in the
	 * survivors' superblocks (md's rdev Blocked until FaultRecorded):
	 * changed under fail_lock, read by every write-class request and
	 * flush before it answers (failures_recorded).  Stays raised when
	 * a failure could not be recorded (the array is then broken).
	 */
	atomic_uint unrecorded;
	char reason[256]; /* why the array is degraded or failed */
	/*
	 * md's next_resync, in array bytes: while a resync is owed (the
	 * superblocks' resync_offset not all ones), a read of a range that
	 * ends at or past it goes to the first in-sync copy, the one the
	 * resync copies from (md's read_balance: choose_first), so a block
	 * whose copies differ reads one value until the resync keeps it.
	 * Below it the copies agree and reads balance.  UINT64_MAX when no
	 * resync is owed.  Moved by assembly and the resync (sync.c).
	 */
	atomic_uint_fast64_t resync_next;
	/* Client requests per kind (raid.h: struct raid_status). */
	struct {
		atomic_uint_fast64_t requests, bytes, errors;
	} io[RAID_REQ_KINDS];
	/*
	 * Spares (state spare), meta->nr_spares of them, their superblocks
	 * in meta->spares (md superblocks only); the data path never sees
	 * them.  A spare moves into a role's slot in members[] (spare.c).
	 */
	struct raid_member spares[RAID_MAX_SPARES];
	/*
	 * The paths of members a spare replaced: kept until the array closes,
	 * as readers without a lock may hold them (member.h: path); a path
	 * added again takes its string back from here.  fail_lock.
	 */
	char **old_paths;
	unsigned nr_old_paths;
	bool open_direct; /* how members are opened: cfg->direct, cfg->io */
	enum raid_io_mode open_io;
	struct event_runner *events;	/* event=PROGRAM, or NULL */
	struct control_server *control; /* control=PATH, or NULL */
	struct sync_state *sync;	/* recovery, resync, scrub (sync.h) */
	struct cache *cache;		/* cache=ram|log (cache.h), or NULL */
};

/*
 * The array's own requests, below the cache: what raid_pread ... do
 * without one, and what the cache calls for misses and write-back.  They
 * count no client request (raid_* do, once).  Writes, trims and zeros
 * run between state_write_start and _end; array_writable says whether a
 * write may be taken now (-EROFS, -EIO once the array failed).
 */
int array_pread(struct raid_array *a, void *buf, uint64_t count,
		uint64_t offset);
int array_pwrite(struct raid_array *a, const void *buf, uint64_t count,
		 uint64_t offset, uint32_t flags);
int array_trim(struct raid_array *a, uint64_t count, uint64_t offset,
	       uint32_t flags);
int array_zero(struct raid_array *a, uint64_t count, uint64_t offset,
	       uint32_t flags);
int array_flush(struct raid_array *a);
int array_writable(struct raid_array *a);

/*
 * cache= (array_cache.c): put a cache in front of the array, its units a
 * full stripe (parity) or 1 MiB; said in the log.  0 without one.  The
 * write-back thread starts in raid_start.
 */
int array_cache_open(struct raid_array *a, const struct raid_config *cfg);

/*
 * Report an event (mdadm --monitor's names: "Fail", "DegradedArray" ...)
 * to the log and to event=PROGRAM; never blocks.  member: a path or NULL.
 */
void array_event(struct raid_array *a, const char *event, const char *member);

/*
 * Write the superblocks of the live members (members whose role is in
 * sync or being rebuilt), events + step, each with FUA; under meta->lock.
 * *bad: the members whose write failed (for the caller to fail, after it
 * let go of meta->lock).  0, or the first failure's -errno.
 */
int meta_commit(struct raid_array *a, unsigned step, uint64_t *bad);

/*
 * A member's I/O failed (or an operator says so): mark it faulty, record
 * that in the superblocks of the others (durable before this returns) and
 * report it.  0 when the member is out now (or was already).  When it
 * holds the last copy of some data it stays in: -EBUSY for an operator,
 * else -EIO; after a write error the array then fails (md's MD_BROKEN:
 * copies or parity can no longer be kept consistent, so no write is taken
 * from then on), if it had redundancy at all.  Takes fail_lock.
 */
enum fail_cause { FAIL_READ, FAIL_WRITE, FAIL_OPERATOR };
int array_fail(struct raid_array *a, unsigned role, const char *why,
	       enum fail_cause cause);

/*
 * Spares (spare.c).  spares_start: at raid_open, after assembly: the
 * spares found among the members kept (a->spares), then every spare= made
 * one (spare_add), then a spare taken into a hole if there is one.
 * array_take_spare: if a role has no usable member (missing, or faulty:
 * removed first, as md's remove_and_add_spares) and there is a spare, it
 * takes the role, state rebuilding from 0, recorded in the superblocks
 * (role, recovery offset 0); then the recovery engine is woken
 * (sync_kick).  1 taken, 0 nothing to do, -errno.  Takes fail_lock.
 * array_recovery_done / array_checkpoint_recovery: the engine's calls
 * (raid.h has none: they are the core's).
 */
int spares_start(struct raid_array *a, const struct raid_config *cfg);
void spares_close(struct raid_array *a);
int array_take_spare(struct raid_array *a);
/*
 * The rebuild of role reached the end: the member is in sync, its
 * recovery offset dropped from its superblock, events move on on every
 * member; "array optimal [UU..]" logged and event SpareActive.  0 or
 * -errno (-EINVAL when role is not rebuilding).  Takes fail_lock.
 */
int array_recovery_done(struct raid_array *a, unsigned role);
/*
 * Checkpoint: role's superblock says rebuilt_bytes (whole sectors) are
 * rebuilt (md's recovery_offset), written with every member's, events +1.
 * The engine moves m->rebuilt itself.  0 or -errno.  Takes fail_lock.
 */
int array_checkpoint_recovery(struct raid_array *a, unsigned role,
			      uint64_t rebuilt_bytes);
/*
 * array_fail for an I/O result: only if role still holds the member the
 * I/O went to (gen: member.h, the batch's gen[role]); a failure seen on a
 * member a spare has replaced since is no news (0).
 */
int array_fail_seen(struct raid_array *a, unsigned role, unsigned gen,
		    const char *why, enum fail_cause cause);
/*
 * Before a write-class request or a flush answers success: 0 once every
 * member failure marked so far is durable in the superblocks (waiting, if
 * one is being recorded, for fail_lock: the caller must hold no lock of
 * the array's, nor I/O in flight); -EIO when one could not be recorded.
 * A request that skipped a member (or could have) is answered only then.
 */
int failures_recorded(struct raid_array *a);
/*
 * Member paths (spare.c): path_retire keeps the path of a member a spare
 * replaced until the array closes; path_reuse gives back the retired
 * string equal to a spare's new path (freeing the new one, which no one
 * has seen), so that adding one file again and again keeps one string;
 * paths_free at close.  fail_lock held, but for paths_free.
 */
void path_retire(struct raid_array *a, char *path);
char *path_reuse(struct raid_array *a, char *path);
void paths_free(struct raid_array *a);

/*
 * A member named by role number ("2") or path, as it is now: all read in
 * one hold of fail_lock, so the fields are of one member.  path lives as
 * long as the array (member.h); uuid is its superblock's device UUID
 * (has_uuid false in raw mode or for a role with no superblock).  gen
 * tells whether the role still holds that member later (member.h: gen).
 */
struct member_ref {
	unsigned role;
	unsigned gen;
	int state; /* enum raid_member_state */
	const char *path;
	bool has_uuid;
	uint8_t uuid[16];
};
/* 0, or -ENOENT (no such role or path). */
int member_find(struct raid_array *a, const char *spec, struct member_ref *ref);
/* Remove a faulty member from its role (raid_remove_member); fail_lock. */
int remove_locked(struct raid_array *a, unsigned role);
/*
 * After meta_commit's r and *bad (meta->lock let go, fail_lock held):
 * fail each member whose superblock write failed, the update then being
 * on every member left (their failure's record wrote it again).  0 when
 * every one of them could be failed (a superblock write error fails the
 * member, not what wrote it), -EIO when one holds the last copy of some
 * data; r as it was when nothing failed on a member (ENOMEM).
 */
int fail_unwritten(struct raid_array *a, int r, uint64_t bad);
/* Fail role (array_fail's work); fail_lock held. */
int fail_locked(struct raid_array *a, unsigned role, const char *why,
		enum fail_cause cause);

/* The array's state to the log, md's way: "degraded [U_UU]: why". */
void array_log_state(struct raid_array *a);

/* Has the array redundancy at all (can it lose any one member)? */
bool array_redundant(const struct raid_array *a);

/* optimal, degraded, rebuilding or failed, from the members' states. */
enum raid_array_state array_state_now(const struct raid_array *a);

/* The members not usable now (bit per role): faulty, missing ... */
uint64_t array_lost(const struct raid_array *a);

/*
 * The clean/active state in the superblocks (array_state.c; no-ops in raw
 * mode).  Every write-class request runs between start (which may mark the
 * array active first: 0 or -errno) and end.  state_tick marks it clean
 * when due and says in how many ns to look again (0: not while clean);
 * the state thread calls it, tests may call it with their own clock.
 */
int state_write_start(struct raid_array *a);
void state_write_end(struct raid_array *a);
uint64_t state_tick(struct raid_array *a, uint64_t now_ns);
void state_wake(struct raid_array *a);
void state_stop(struct raid_array *a);
/* Mark clean at close (after flushing), unless it must stay active. */
int state_close(struct raid_array *a);

/*
 * Assemble an array over members already open (or, those that would not
 * open, of state missing: member_missing), in the order given: from their
 * md superblocks (then in role order, *nr the array's roles, a missing
 * member in each role no member holds, and after them the members left
 * out, closed: m has room for cap), or from the settings (raw).  Then
 * whether it may start degraded (docs/degraded.md).  raid_open's work
 * after opening the members; tests give it memory members.
 */
int array_assemble(const struct raid_config *cfg, struct raid_member *m,
		   unsigned *nr, unsigned cap, struct raid_array **out);

/*
 * Assemble an array over members already open, in role order (tests use
 * memory members).  data_offsets: each member's data offset in bytes, or
 * NULL for cfg->data_offset on every member.
 */
int array_create(const struct raid_config *cfg, struct raid_member *members,
		 unsigned nr, const uint64_t *data_offsets,
		 struct raid_array **out);

#endif
