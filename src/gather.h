/*
 * gather.h: stripe gathering for the parity levels (docs/gather.md).
 *
 * A write that covers part of a stripe costs reads (read-modify-write or
 * reconstruct-write); a write of the whole stripe reads nothing.  Writes in
 * flight at the same time often make up whole stripes between them (a
 * sequential stream at any queue depth whose requests are not multiples of
 * the stripe), so, as md's stripe cache does, the partial-stripe pieces of
 * aligned writes park in a table keyed by stripe; when the parked pieces
 * cover a stripe, the request whose piece completed it writes the stripe
 * whole and answers the others.  Nothing is acknowledged early: a request
 * returns once each of its pieces is written, with the result of the write
 * that carried it.  A parked stripe that nothing can fill is written as
 * parked (its pieces merged where contiguous) when every write in flight
 * is parked and the client sent nothing more for a grace period, at once
 * when the client's window is full, at a deadline, or as soon as an
 * exclusive range lock waits (a parked request holds its range shared).
 *
 * The core calls gather_enter/gather_leave around every write request of an
 * array that gathers (array_write_any), and gather_write instead of writing
 * an aligned write's pieces directly.
 */
#ifndef RAID_GATHER_H
#define RAID_GATHER_H

#include <stdbool.h>
#include <stdint.h>

#include "raid.h"

struct raid_array;
struct gather;

/*
 * Write [off, off+count) of buf to the members now, retrying around a
 * member that fails (array.c's write_pieces for IO_WRITE).  *changed,
 * *repair as write_pieces.
 */
typedef int (*gather_write_fn)(struct raid_array *a, uint32_t flags,
			       const void *buf, uint64_t count, uint64_t off,
			       uint64_t *changed, uint64_t *repair);

/*
 * A table for stripes of stripe_bytes; buffers it builds are aligned to
 * mem_align.  wait_ns: the deadline of a parked stripe (0: no gathering,
 * then the array has no table); grace_ns: how long a parked stripe waits
 * for the client's next request once every write in flight is parked.
 */
struct gather *gather_new(uint64_t stripe_bytes, unsigned mem_align,
			  uint64_t wait_ns, uint64_t grace_ns);
void gather_free(struct gather *g);

/*
 * A write request in flight, on its caller's stack from gather_enter to
 * gather_leave (the table's fields; mu guards them).
 */
struct gather_flight {
	uint64_t lo, hi; /* its range */
	bool decided;	 /* its pieces parked or went straight on */
	struct gather_flight *prev, *next;
};

/*
 * Around every write request of the array, [off, off+count): `gathers`
 * when it may park pieces (an aligned write), else it counts only as in
 * flight.  One at a time per thread.
 */
void gather_enter(struct gather *g, struct gather_flight *f, uint64_t off,
		  uint64_t count, bool gathers);
void gather_leave(struct gather *g, struct gather_flight *f);

/*
 * An aligned write, its range held shared in write_lock: whole stripes
 * written through direct() at once, partial ones parked when something may
 * fill them (else written through direct() too); returns when every piece
 * is written.  0, or the first error of the writes that carried its pieces.
 */
int gather_write(struct gather *g, struct raid_array *a, gather_write_fn direct,
		 uint32_t flags, const void *buf, uint64_t count, uint64_t off,
		 uint64_t *changed, uint64_t *repair);

/*
 * write_lock's hook (range_lock.h): an exclusive request waits (+1) or was
 * granted after waiting (-1).  While one waits, every parked stripe is
 * written at once and nothing parks.  ctx is the struct gather.
 */
void gather_exclusive_wait(void *ctx, int delta);

/* What gathering did, for status. */
void gather_stats(struct gather *g, struct raid_gather_stats *st);

/*
 * Tests: set the deadline and the grace, and `always` parks every partial
 * piece (no guess of whether it can be filled); gather_hold counts (+1) or
 * uncounts (-1) a write in flight that never parks, so that parked stripes
 * are not written for want of anything else in flight.
 */
void gather_tune(struct gather *g, uint64_t wait_ns, uint64_t grace_ns,
		 bool always);
void gather_hold(struct gather *g, int delta);

#endif
