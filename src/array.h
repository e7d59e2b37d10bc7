/*
 * array.h: the full struct raid_array and the per-request batch.
 *
 * Locks (docs/locking.md lists them all):
 *   rmw_lock  only when some member is O_DIRECT (io_align > 1).  An
 *             unaligned write reads, patches and rewrites its edge blocks;
 *             it holds rmw_lock for writing so that no other write, zero
 *             or trim can land in those blocks in between (a lost update).
 *             Every other write, zero and trim holds it for reading.
 *             Reads take nothing.
 * Everything else in the array is fixed after raid_open(); per-request
 * state (the batch, the bounce buffer, the io_uring ring) is per thread.
 */
#ifndef RAID_ARRAY_H
#define RAID_ARRAY_H

#include <pthread.h>

#include "io/io.h"
#include "layout/layout.h"
#include "member.h"
#include "raid.h"
#include "stripe_lock.h"

struct raid_array {
	const struct raid_layout *layout;
	struct raid_geom g;
	struct raid_member *members;
	unsigned nr_members;
	uint64_t size;          /* bytes */
	uint64_t chunk;         /* bytes */
	uint64_t data_offset;   /* bytes, on every member */
	uint64_t member_bytes;  /* each member's data area, from data_offset */
	unsigned mem_align;     /* max over members */
	unsigned io_align;      /* max over members */
	bool balance;           /* copies > 1: count in-flight I/O per member */
	bool read_only;
	bool has_blk;           /* some member is a block device */
	bool owns_members;      /* raid_close() closes them */
	uint64_t piece_bytes;   /* the core cuts requests at these boundaries */
	pthread_rwlock_t rmw_lock; /* see above */
	struct stripe_locks stripe_locks; /* RAID 5 (stripe_lock.h) */
};

/*
 * One buffer of a vectored request while the batch is filled: the owner is
 * an index (reqs may move when it grows); batch_run() turns each vectored
 * request's segments, in the order queued, into its slice of iov.
 */
struct batch_seg {
	void *buf;
	uint64_t len;
	unsigned req;               /* index in reqs */
};

/* The member I/O of one request; one per thread, reused. */
struct raid_batch {
	struct io_req *reqs;
	unsigned nr, cap;
	struct batch_seg *segs;     /* segments of the vectored reqs */
	struct iovec *iov;          /* as many as segs can hold: run() fills */
	unsigned nr_segs, segs_cap;
	int last[RAID_MAX_MEMBERS]; /* index of each member's last req, -1 */
	int last_seg[RAID_MAX_MEMBERS]; /* its last segment, if vectored */
};

/*
 * Queue one member I/O, merging it into that member's previous request when
 * it continues it on the member (same op and flags, next member offset):
 * its buffer extends the request when it also continues it in memory, or
 * becomes one more segment of a vectored request (readv/writev) when not.
 * Limits: IO_MAX_IOV segments and UINT32_MAX bytes per request, and every
 * segment of an O_DIRECT member aligned as the member needs; past them, a
 * new request.
 */
int batch_add(struct raid_batch *b, struct raid_member *m, int op,
	      unsigned flags, void *buf, uint64_t len, uint64_t off);
/*
 * Would batch_add() merge this into m's last request (extending it, or as
 * one more segment)?
 */
bool batch_merges(const struct raid_batch *b, const struct raid_member *m,
		  int op, unsigned flags, const void *buf, uint64_t len,
		  uint64_t off);
/* Free a batch's storage (one not from the thread's: raid_check). */
void batch_fini(struct raid_batch *b);

/* Run the batch: returns when all of it has completed (0 or -errno). */
int batch_run(struct raid_batch *b);
/* Empty the batch for reuse by the same request. */
void batch_reset(struct raid_batch *b);

/* The member offset of a place, plus the piece's offset in the chunk. */
static inline uint64_t
array_member_offset(const struct raid_array *a, const struct raid_loc *l,
		    uint32_t in_chunk)
{
	return a->data_offset + (l->chunk << a->g.chunk_shift) + in_chunk;
}

/* Assemble an array over members already open (tests use memory members). */
int array_create(const struct raid_config *cfg, struct raid_member *members,
		 unsigned nr, struct raid_array **out);

#endif
