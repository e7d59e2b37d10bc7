/*
 * batch.h: the member I/O of one client request.
 *
 * A level turns its piece of a request into member I/O by appending to the
 * request's batch through the named calls below; the core (or the level,
 * when it must read before it writes) runs the batch, and every member I/O
 * then carries its own result.  The batch alone owns:
 *
 *   merging      an I/O that continues its member's last queued one on the
 *                member (same op and flags) joins it: one buffer grows, or
 *                the request becomes vectored (readv/writev), as md's block
 *                layer makes one request of several bio segments;
 *   in-flight    each queued member I/O counts in its member's `inflight`
 *                (read balancing) from the moment it is queued until it
 *                completes, or until batch_reset() drops it unrun;
 *   results      per member I/O after it ran, and per member for the whole
 *                request (batch_member_error): which member failed, with
 *                what, so a level can retry another copy or reconstruct;
 *                batch_changed(): the members a request changed, for FUA.
 *
 * A request's life: batch_begin() (the thread's batch, empty, no results),
 * appends, batch_run() (any number of times: each runs what was queued
 * since the last), batch_reset() to drop what was queued and not run.
 */
#ifndef RAID_BATCH_H
#define RAID_BATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "io.h"
#include "raid_config.h"

struct raid_member;

/*
 * One buffer of a vectored request while the batch fills: its owner is an
 * index (reqs may move when it grows); batch_run() lays each vectored
 * request's segments, in the order queued, out as its slice of iov.
 */
struct batch_seg {
	void *buf;
	uint64_t len;
	unsigned req; /* index in reqs */
};

struct batch {
	struct io_req *reqs;
	unsigned nr, cap;
	unsigned nr_done;	/* reqs[0, nr_done) have run */
	unsigned last_run;	/* ...and [last_run, nr_done) ran last */
	struct batch_seg *segs; /* segments of the vectored reqs */
	struct iovec *iov;	/* as many as segs can hold */
	unsigned nr_segs, segs_cap;
	int last[RAID_MAX_MEMBERS]; /* each member's last unrun req, or -1 */
	int last_seg[RAID_MAX_MEMBERS]; /* its last segment, if vectored */

	/* The request so far (batch_begin clears them; runs add to them). */
	uint64_t changed;	     /* bit per member written or discarded */
	uint64_t failed;	     /* bit per member with a failed I/O */
	uint64_t failed_read;	     /* ...of those, a failed read */
	uint64_t failed_write;	     /* ...a failed write, flush, trim, zero */
	uint64_t refused;	     /* bit per member that refused a discard
					mode (EOPNOTSUPP: not a failure) */
	int error[RAID_MAX_MEMBERS]; /* a failed member's first -errno */
	unsigned gen[RAID_MAX_MEMBERS]; /* ...and which member it was (gen) */
	/* batch_pin: the members' gen when the request began (bit per role
	 * in `pinned`); batch_begin clears it. */
	uint64_t pinned;
	unsigned pin_gen[RAID_MAX_MEMBERS];
};

/* The calling thread's batch, emptied, for a new request (NULL: ENOMEM). */
struct batch *batch_begin(void);
/*
 * Tie the request to the members in m[0..n) (role order) as they are now:
 * an I/O it queues to a role whose slot a spare has taken since (its gen
 * moved on: spare.c) is not issued, and fails with -ENODEV, recorded with
 * the gen pinned (a failure of the member before, no news).  A request
 * decides where its I/O goes (the member's state, its data offset) before
 * it queues it: one that decided while the slot held the member before
 * never reaches the spare, at an offset or a frontier that was not the
 * spare's.  Requests that issue no such decision (a flush) need no pin.
 */
void batch_pin(struct batch *b, const struct raid_member *m, unsigned n);

/* A batch of one's own (offline tools); batch_fini frees its storage. */
void batch_init(struct batch *b);
void batch_fini(struct batch *b);

/* Append member I/O; 0 or -ENOMEM.  Offsets are member bytes. */
int batch_read(struct batch *b, struct raid_member *m, void *buf, uint64_t len,
	       uint64_t off);
int batch_write(struct batch *b, struct raid_member *m, const void *buf,
		uint64_t len, uint64_t off, unsigned io_flags);
/* IO_TRIM, IO_ZERO or IO_PUNCH of a member range. */
int batch_discard(struct batch *b, struct raid_member *m, enum io_op op,
		  uint64_t len, uint64_t off);
int batch_flush(struct batch *b, struct raid_member *m);

/*
 * Where m's last read queued in this batch (and not run yet) ends on the
 * member, or UINT64_MAX: a piece starting there continues it.
 */
uint64_t batch_read_end(const struct batch *b, const struct raid_member *m);

/*
 * Run what was queued since the last run; returns when all of it has
 * completed: 0, the first failure's -errno, or -EOPNOTSUPP when the only
 * failures were refusals (a filesystem lacking an fallocate mode: for the
 * caller to handle, never logged).  A member I/O that fails is retried
 * once (the backends already retry EINTR and EAGAIN); if it fails again it
 * counts in the member's read_errors or write_errors and is logged once
 * per member and request, naming the member, the op and the range.  I/O
 * queued to a member that is no longer alive (member.h) is not issued: it
 * fails with -ENODEV, neither logged nor counted (the member failed
 * already).
 */
int batch_run(struct batch *b);

/*
 * Run queued trims, zeros and punches so that the copies (or a stripe's
 * members) never disagree: when some members refuse the mode and others
 * did it, the refusers' ranges are zeroed another way (ZERO_RANGE, then
 * writes of zeros).  -EOPNOTSUPP only when every request was refused, so
 * nothing changed; else 0 or the first failure.
 */
int batch_run_discard(struct batch *b);
/* Drop what was queued and not run (giving back its in-flight counts). */
void batch_reset(struct batch *b);

/*
 * Did the member fail in this request?  Its first -errno, or 0.  A refused
 * discard mode (EOPNOTSUPP) is not a failure: see batch_refused().
 */
static inline int
batch_member_error(const struct batch *b, unsigned role)
{
	return (b->failed >> role) & 1 ? b->error[role] : 0;
}

/* Members whose reads (writes, flushes, trims, zeros) failed: bit per role. */
static inline uint64_t
batch_failed_reads(const struct batch *b)
{
	return b->failed_read;
}

static inline uint64_t
batch_failed_writes(const struct batch *b)
{
	return b->failed_write;
}

/* Members that refused a discard mode in this request (bit per role). */
static inline uint64_t
batch_refused(const struct batch *b)
{
	return b->refused;
}

/* Members written, trimmed or zeroed in this request (bit per role). */
static inline uint64_t
batch_changed(const struct batch *b)
{
	return b->changed;
}

/*
 * For each discard of the last run that its member refused (EOPNOTSUPP),
 * queue what makes that range read zero on the member anyway: ZERO_RANGE
 * where the refused op was a trim or punch, else writes of zeros.  Returns
 * how many were queued, or -ENOMEM.  batch_run_discard() uses it.
 */
int batch_requeue_refused_as_zero(struct batch *b);

#endif
