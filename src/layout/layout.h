/*
 * layout.h: one ops table per RAID level, and the geometry they map with.
 *
 * The core (src/array.c) cuts every read at chunk boundaries and every
 * write, trim and zero at chunk boundaries too, or at stripe boundaries for
 * levels with parity (stripe_pieces), so a level only ever sees one
 * `struct raid_piece`.  The level's pure map() turns the logical chunk
 * number into the (member, member chunk) places that hold it, as md places
 * them:
 *
 *   RAID0   chunk k on member k mod n, member chunk k div n
 *   RAID1   every member holds chunk k at member chunk k
 *   RAID10  md's near / far / offset copies (raid10.c has the tables)
 *   RAID5   data chunk k of stripe k div (n-1), parity rotating (raid5.c)
 *
 * and geom_member_offset() turns a place into a member byte offset, the
 * same way for every level.  map() and setup() are pure (no I/O, no locks)
 * and exhaustively unit-tested against an independent model
 * (tests/unit/test_layout.c, test_raid5.c).  read/write append member I/O
 * to the request's batch (src/io/batch.h); the core runs the batch once.
 * The core never switches on the level: it calls these pointers.
 */
#ifndef RAID_LAYOUT_H
#define RAID_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid_config.h"

#define RAID_MAX_COPIES RAID_MAX_MEMBERS

struct raid_array;
struct batch;

/* The geometry of an array.  The core fills the inputs; setup() the rest. */
struct raid_geom {
	/* Inputs */
	unsigned nr_members;
	unsigned chunk_shift;	/* chunk = 1 << chunk_shift bytes */
	uint64_t member_chunks; /* chunks of each member's data area */
	/* Bytes: where each member's data area starts (md allows them to
	 * differ, as after a reshape or on members of different sizes). */
	uint64_t data_offset[RAID_MAX_MEMBERS];

	/* RAID10 (md's struct geom): copies = near_copies * far_copies */
	unsigned near_copies;
	unsigned far_copies;
	bool far_offset;     /* "o": far copies in the next row */
	uint64_t far_stride; /* member chunks between far copies */

	/* RAID5: md's parity algorithm (enum raid5_algorithm, raid5.c) */
	unsigned parity_algo;

	/* Results */
	unsigned copies;	/* places per logical chunk */
	uint64_t array_chunks;	/* logical chunks in the array */
	uint64_t stripe_chunks; /* logical chunks in one full stripe */
};

/* One place that holds a logical chunk: member role, chunk on that member. */
struct raid_loc {
	unsigned member;
	uint64_t member_chunk;
};

/*
 * The member byte offset of `in_chunk` bytes into the chunk at l.  A
 * role's data offset changes when a spare takes the role (spare.c, while
 * the role takes no I/O): read atomically, as it is written.
 */
static inline uint64_t
geom_member_offset(const struct raid_geom *g, const struct raid_loc *l,
		   uint64_t in_chunk)
{
	return __atomic_load_n(&g->data_offset[l->member], __ATOMIC_RELAXED) +
	       (l->member_chunk << g->chunk_shift) + in_chunk;
}

/* A request cut to one logical chunk (stripe_pieces: to one stripe). */
struct raid_piece {
	uint64_t chunk_no; /* logical chunk where the piece starts */
	uint32_t in_chunk; /* byte offset inside that chunk */
	uint32_t len;	   /* bytes, up to the end of the chunk/stripe */
	void *buf;	   /* NULL for trim/zero */
	int op;		   /* enum io_op (src/io/io.h) */
	uint32_t flags;	   /* RAID_FUA on writes; RAID_FAST_ZERO;
			      RAID_PIECE_DEFER */
	/*
	 * Members whose reads failed in this request: not to be read again
	 * (their data comes from the other copies, or parity), though still
	 * written.  Members not alive (member.h) are never read or written.
	 */
	uint64_t avoid;
	/*
	 * Repair (0: none): the I/O of this piece that lands on these members
	 * only, none elsewhere.  A write then carries bytes the array already
	 * holds (RAID 5 writes data without touching parity); a read reads
	 * those members' places, if the piece has one there.
	 */
	uint64_t only;
};

/*
 * A write piece's flag, set by the core (never by a client): the core
 * runs this request's batch once after its last piece and then calls the
 * level's write_end, so a piece may leave its writes queued while it
 * holds what they need (RAID 5: a whole stripe's lock and parity).
 */
#define RAID_PIECE_DEFER (1u << 16)

/*
 * May the piece read member role at member chunk `member_chunk` (in sync,
 * or rebuilt past that chunk; not avoided)?
 */
bool piece_can_read(const struct raid_array *a, const struct raid_piece *p,
		    unsigned role, uint64_t member_chunk);
/* May the piece write member role (alive; in `only` when repairing)? */
bool piece_can_write(const struct raid_array *a, const struct raid_piece *p,
		     unsigned role);

struct raid_layout {
	const char *name; /* "raid0" */
	int level;	  /* 0, 1, 5, 10 */
	unsigned min_members;
	/*
	 * Writes, trims and zeros come in pieces of a whole stripe instead of
	 * one chunk (parity levels: the write op sees everything it changes in
	 * the stripe at once).  Such a level zeros only whole stripes without
	 * writing: the core refuses a fast zero of anything less.
	 */
	bool stripe_pieces;
	/*
	 * 0: members are used in whole chunks (md's RAID 0/5/10).  Else the
	 * array is one member's data area (mirrors), whose size is rounded
	 * down to size_unit (RAID 1: 64 KiB, as mdadm rounds it) or to the
	 * chunk if smaller, or taken exactly from member-size=.
	 */
	uint32_t size_unit;

	/*
	 * Validate and fill g from nr_members, chunk_shift, member_chunks and
	 * the layout= string (NULL: the level's default).  Returns 0, or
	 * -EINVAL with a reason in err.
	 */
	int (*setup)(struct raid_geom *g, const char *layout, char *err,
		     size_t errlen);
	/* Logical chunk -> its copies; returns g->copies.  Pure. */
	unsigned (*map)(const struct raid_geom *g, uint64_t chunk_no,
			struct raid_loc *locs);
	/*
	 * The inverse, for recovery and resync, which walk a member in
	 * order: the logical chunk whose copy member chunk `member_chunk` of
	 * `member` holds (parity levels: the first chunk of the stripe that
	 * row belongs to, data or parity).  false for a place that holds
	 * nothing (md's unused rows at the end of RAID 10).  Pure.
	 */
	bool (*unmap)(const struct raid_geom *g, unsigned member,
		      uint64_t member_chunk, uint64_t *chunk_no);
	/* Name of the layout in g, as md writes it ("n2"), or "". */
	void (*layout_name)(const struct raid_geom *g, char *buf, size_t len);
	/*
	 * md's number for the layout in g: its superblock's `layout` field
	 * (0 where the level has no choice).  And back: the layout= name for
	 * md's number, or -EINVAL with the reason in err when nbdraid does
	 * not place data that way.
	 */
	uint32_t (*md_layout)(const struct raid_geom *g);
	int (*md_layout_name)(uint32_t md_layout, char *name, size_t len,
			      char *err, size_t errlen);
	/*
	 * Can the array still produce every byte with the members in `lost`
	 * (bit per role) gone?  md's enough(): RAID 0 none, RAID 1 all but
	 * one, RAID 5 one, RAID 10 one of every group of copies.  Pure.
	 */
	bool (*enough)(const struct raid_geom *g, uint64_t lost);
	/*
	 * Parity levels (stripe_pieces): the member holding the parity of a
	 * stripe (a member chunk row).  NULL for the others.
	 */
	unsigned (*parity_member)(const struct raid_geom *g, uint64_t stripe);

	/*
	 * Data path: append the piece's member I/O to the batch, which the
	 * core runs once for the whole request.  A write that must read
	 * before it writes (RAID 5) may run the batch itself (batch_run) and
	 * must leave nothing queued that it does not want run.  read gets
	 * one chunk's piece; write gets IO_WRITE, IO_TRIM, IO_ZERO or
	 * IO_PUNCH pieces.
	 */
	int (*read)(struct raid_array *a, struct batch *b,
		    const struct raid_piece *p);
	int (*write)(struct raid_array *a, struct batch *b,
		     const struct raid_piece *p);
	/*
	 * After the core ran (or dropped) a request's batch whose pieces had
	 * RAID_PIECE_DEFER: let go of what write held across the run.  NULL
	 * where write never holds anything past its return.
	 */
	void (*write_end)(struct raid_array *a, struct batch *b);
};

extern const struct raid_layout raid0_layout;
extern const struct raid_layout raid1_layout;
extern const struct raid_layout raid10_layout;
extern const struct raid_layout raid5_layout;
/* The member holding the parity of `stripe` (a member chunk row). */
unsigned raid5_parity_member(const struct raid_geom *g, uint64_t stripe);

/* The explicit table of levels (no constructors: see docs/design.md). */
const struct raid_layout *layout_find(int level);

/* enough() of the levels with one copy and no parity: nothing lost. */
bool layout_enough_none(const struct raid_geom *g, uint64_t lost);

/* For levels that have no layout choice: layout_name gives "", and setup
 * refuses any layout= but none (-EINVAL, with the reason in err). */
void layout_no_name(const struct raid_geom *g, char *buf, size_t len);
int layout_refused(const char *level, const char *layout, char *err,
		   size_t errlen);
/* md_layout and md_layout_name for levels whose md layout is 0: RAID 1. */
uint32_t layout_md_none(const struct raid_geom *g);
int layout_md_name_none(uint32_t md_layout, char *name, size_t len, char *err,
			size_t errlen);

/*
 * The data path of the levels without parity (0, 1, 10), in copies.c:
 * read one copy of the piece (the copy choice is there; -EIO when no copy
 * can be read)...
 */
int copies_read(struct raid_array *a, struct batch *b,
		const struct raid_piece *p);
/* ...and write (or trim, or zero) every copy on a live member. */
int copies_write(struct raid_array *a, struct batch *b,
		 const struct raid_piece *p);

#endif
