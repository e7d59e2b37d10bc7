/*
 * metadata.h: the array's identity and state in md's own v1.x superblocks,
 * one per member (superblock.h has the format).
 *
 * Assembly (meta_assemble) reads every member's superblock, checks that
 * they make one array and how, and returns the geometry, the members in
 * role order and the state kept for writing: what md does at --assemble,
 * with md's rules (MD-style events, the freshest superblock's role table).
 *
 * The state on disk follows md (docs/metadata.md has the table):
 *
 *   state    resync_offset  when
 *   clean    all ones       after create (in sync), after a clean stop,
 *                           200 ms after the last write (flushed first)
 *   active   0              from before the first write after opening or
 *                           after being clean (durable before that write
 *                           is answered) until marked clean again
 *
 * Every change moves events on by one and is written to every member's
 * superblock with FUA before it counts.  An array found active (not shut
 * down cleanly) stays active: it needs the resync md would run, which
 * nbdraid leaves to md (or to a later nbdraid) rather than erase.
 */
#ifndef RAID_METADATA_H
#define RAID_METADATA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "member.h"
#include "raid.h"
#include "raid_config.h"
#include "superblock.h"

/* md's safe_mode_delay: the array is marked clean this long after writes. */
#define META_CLEAN_DELAY_NS (200 * 1000 * 1000ull)

/* One member's superblock as nbdraid keeps it, and where it lives. */
struct meta_member {
	struct md_sb sb;
	uint64_t sb_sector;
	bool present; /* a member holds the role (else sb is not read) */
};

struct raid_meta {
	/*
	 * lock guards the superblocks (here and on disk), events and the
	 * transitions of `dirty`: one update at a time, all members
	 * written before the lock is let go.
	 */
	pthread_mutex_t lock;
	struct meta_member *members; /* role order, nr of them */
	unsigned nr;
	/* Each role's entry in the role tables (md's dev_number), from the
	 * freshest superblock; UINT32_MAX for a role with none. */
	uint32_t role_dev[RAID_MAX_MEMBERS];
	/* At assembly: the roles with no member, and of those the ones the
	 * role tables still count in sync (not recorded failed or removed). */
	uint64_t missing, unrecorded;
	/* At assembly: the roles whose member was being rebuilt (feature
	 * 0x2): taken in as rebuilding, from their recovery offset. */
	uint64_t rebuilding;
	/*
	 * The spares' superblocks (md's role 0xffff), in the order of the
	 * array's spares[] (array.h), nr_spares of them: written with every
	 * update, as md writes a spare's.  The list changes under the array's
	 * fail_lock and this lock; meta_assemble leaves the spares it found
	 * open after the roles in m, in this order.
	 */
	struct meta_member spares[RAID_MAX_SPARES];
	unsigned nr_spares;
	bool bitmap;	   /* md's internal bitmap: marked stale */
	bool bitmap_stale; /* ...already, on every member */
	/*
	 * md's recovery_cp, in sectors (member sectors; RAID 10: array
	 * sectors): the resync owed from there on, MD_RESYNC_DONE when none.
	 * Found in resync_offset (0 after a crash); moved on by the resync
	 * pass; written as resync_offset whenever the array is marked clean,
	 * so a clean mark never erases a resync still owed.  Under lock.
	 */
	uint64_t resync_cp;
	/*
	 * dirty (resync_offset 0 on disk) and writes (write-class requests
	 * in flight) are read without the lock, in a Dekker pair: a writer
	 * counts itself in `writes` then reads `dirty`; the cleaner clears
	 * `dirty` then reads `writes` (both sequentially consistent), so
	 * one of them always sees the other.
	 */
	atomic_bool dirty;
	atomic_uint writes;
	atomic_uint_fast64_t last_write_ns; /* when the last write ended */
};

/* What the superblocks say the array is: settings and data offsets. */
struct meta_geometry {
	int level;
	char layout[32];
	uint64_t chunk_bytes;  /* 0: the level has none (RAID 1) */
	uint64_t member_bytes; /* each member's data area */
	uint64_t data_offset[RAID_MAX_MEMBERS];
};

/*
 * Read the members' superblocks and assemble.  Members that could not be
 * opened are given with state missing.  On success the members are in
 * role order, *nr of them (the array's roles: a role with no member gets
 * one of state missing; a member being rebuilt is in its role, state
 * rebuilding, `rebuilt` its recovery offset (whole chunks of chunk_bytes,
 * or of cfg->chunk_bytes without one); then the spares, open (their
 * superblocks in (*meta)->spares); stale and failed members are left out
 * and closed, after them; m has room for cap), *geo holds the geometry and
 * *meta the state (free it with meta_free).  -ENOENT: no member has an md
 * superblock (raw mode may serve them).  Any other refusal is logged naming the
 * member and the reason.  Settings given in cfg must agree with the
 * superblocks.
 */
int meta_assemble(const struct raid_config *cfg, struct raid_member *m,
		  unsigned *nr, unsigned cap, struct meta_geometry *geo,
		  struct raid_meta **meta);
void meta_free(struct raid_meta *meta);

/*
 * Read one member's superblock (the newest of 1.2, 1.1, 1.0 found at its
 * place) and validate it: 0, -ENOENT (none), -EINVAL/-EBADMSG (a damaged
 * one, why set; with -EBADMSG, a bad checksum, out holds what it says all
 * the same), or -EUCLEAN: whole, but its geometry is not one nbdraid may
 * write by (why names the field and the reason, out holds it): a place
 * outside the member, areas that overlap (superblock, data, md's bitmap,
 * bad-block log), a chunk nbdraid cannot place.  docs/metadata.md.
 */
int meta_read(struct raid_member *m, struct meta_member *out, char *why,
	      size_t whylen);
/* Write sbs[i] to members[i] at sectors[i], all with FUA; 0 or -errno. */
int meta_write(struct raid_member *members, const struct meta_member *mm,
	       unsigned nr);
/* Write one superblock, outside the data path's batch (a spare's). */
int meta_write_one(struct raid_member *m, const struct meta_member *mm);

/*
 * The member paths to open: every member= expanded as a glob (a path with
 * no glob characters stands for itself), and with uuid= or name= only the
 * ones whose md superblock belongs to that array (the rest of the
 * candidates are left alone).  Free with meta_free_paths.
 */
int meta_select(const struct raid_config *cfg, char ***paths, unsigned *n);
void meta_free_paths(char **paths, unsigned n);

/*
 * Set role's entry in the role table of every member's copy (md's
 * dev_roles: MD_ROLE_FAULTY for a failed member, MD_ROLE_SPARE for a
 * removed one); under meta->lock, written by the next commit.
 */
void meta_set_role(struct raid_meta *meta, unsigned role, uint16_t value);
/* The same by dev_number (every copy, spares' too): max_dev grows to
 * hold dev (new entries md's spare value); -ENOSPC past MD_MAX_DEV_LIMIT. */
int meta_set_dev(struct raid_meta *meta, uint32_t dev, uint16_t value);
/* The freshest superblock kept (a failed member's is never updated). */
const struct md_sb *meta_freshest(const struct raid_meta *meta);

/* The identity and state for raid_status (nothing in raw mode); takes
 * meta->lock (a superblock update may be under way). */
void meta_status(struct raid_meta *meta, struct raid_status *st);

/* Nanoseconds on the monotonic clock. */
uint64_t meta_now_ns(void);

#endif
