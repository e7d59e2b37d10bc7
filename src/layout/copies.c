/*
 * copies.c: the data path of the levels without parity (0, 1, 10), and
 * RAID 5's reads: read one copy of a chunk's piece, write every copy.
 *
 * Copy choice, for each piece of a read (one chunk's worth):
 *  1. a piece continuing this request's previous read on some copy's
 *     member stays there: the two become one member I/O (one buffer, or a
 *     vectored read when the buffers are apart: RAID 10 n2 over 4 finds a
 *     pair's next chunk two chunks on in the client's buffer);
 *  2. a piece continuing the last read issued to some copy's member (an
 *     earlier request: a sequential stream) stays there too (md's
 *     next_seq_sect), unless that member is busy and another copy's member
 *     is idle: then the idle one starts a run of its own here.  A stream
 *     at queue depth > 1 so alternates between copies in runs about as
 *     long as the queue, each member reading contiguously, and a spindle
 *     pays one access per run instead of one per request;
 *  3. any other piece goes to the copy whose member has the fewest I/Os in
 *     flight (SPDK raid1's rule).  Ties go to the first copy.
 * Except while a resync is owed: a piece ending at or past the resync's
 * frontier (a->resync_next) reads the first copy in sync, the one the
 * resync copies from (md's read_balance choose_first), so a block whose
 * copies differ after a crash reads one value, the one the resync keeps.
 *
 * Only copies the piece may read count (piece_can_read: a faulty or
 * missing member, or one whose read failed in this request, is passed
 * over); with none left the piece fails with EIO.  Writes go to every copy
 * on a live member, and fail with EIO when there is none.
 */
#include <errno.h>

#include "array.h"
#include "io/batch.h"
#include "layout.h"

bool
piece_can_read(const struct raid_array *a, const struct raid_piece *p,
	       unsigned role, uint64_t member_chunk)
{
	const struct raid_member *m = &a->members[role];
	uint64_t bit = 1ull << role;

	if ((p->avoid & bit) || (p->only && !(p->only & bit))) {
		return false;
	}
	switch (atomic_load_explicit(&m->state, memory_order_acquire)) {
	case RAID_MEMBER_IN_SYNC:
		return true;
	case RAID_MEMBER_REBUILDING:
		return (member_chunk + 1) << a->g.chunk_shift <=
		       atomic_load_explicit(&m->rebuilt, memory_order_acquire);
	default:
		return false;
	}
}

bool
piece_can_write(const struct raid_array *a, const struct raid_piece *p,
		unsigned role)
{
	return member_alive(&a->members[role]) &&
	       (!p->only || (p->only & (1ull << role)));
}

static unsigned
load_of(const struct raid_member *m)
{
	return atomic_load_explicit(&m->inflight, memory_order_relaxed);
}

/* The copy to read among the n readable ones in locs. */
static unsigned
pick_copy(struct raid_array *a, const struct batch *b,
	  const struct raid_loc *locs, unsigned n, const struct raid_piece *p)
{
	unsigned best = 0, best_load = ~0u, stream = n;

	for (unsigned i = 0; i < n; i++) {
		struct raid_member *m = &a->members[locs[i].member];
		uint64_t off = geom_member_offset(&a->g, &locs[i], p->in_chunk);
		unsigned load;

		if (batch_read_end(b, m) == off) {
			return i;
		}
		if (stream == n &&
		    atomic_load_explicit(&m->next_read, memory_order_relaxed) ==
			    off) {
			stream = i;
		}
		load = load_of(m);
		if (load < best_load) {
			best = i;
			best_load = load;
		}
	}
	if (stream < n &&
	    (best_load > 0 || load_of(&a->members[locs[stream].member]) == 0)) {
		return stream;
	}
	return best;
}

/*
 * md's choose_first: while a resync is owed, a piece ending at or past
 * its frontier (resync_next) reads the first copy in sync, the one the
 * resync copies from (check.c: repair's first); n if none is in sync.
 */
static unsigned
first_copy(struct raid_array *a, const struct raid_loc *locs, unsigned n,
	   const struct raid_piece *p)
{
	uint64_t end = (p->chunk_no << a->g.chunk_shift) + p->in_chunk + p->len;

	if (end < atomic_load_explicit(&a->resync_next, memory_order_acquire)) {
		return n;
	}
	for (unsigned i = 0; i < n; i++) {
		if (member_usable(&a->members[locs[i].member])) {
			return i;
		}
	}
	return n;
}

/* Keep the places of locs the piece may use; how many are left. */
static unsigned
keep_places(const struct raid_array *a, const struct raid_piece *p,
	    struct raid_loc *locs, unsigned n, bool reading)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned role = locs[i].member;

		if (reading ? piece_can_read(a, p, role, locs[i].member_chunk)
			    : piece_can_write(a, p, role)) {
			locs[k++] = locs[i];
		}
	}
	return k;
}

int
copies_read(struct raid_array *a, struct batch *b, const struct raid_piece *p)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned all = a->layout->map(&a->g, p->chunk_no, locs);
	unsigned n = keep_places(a, p, locs, all, true);
	unsigned i;
	struct raid_member *m;
	uint64_t off;

	if (n == 0) {
		return p->only ? 0 : -EIO; /* repair: no place there */
	}
	i = n > 1 ? first_copy(a, locs, n, p) : 0;
	if (i == n) {
		i = pick_copy(a, b, locs, n, p);
	}
	m = &a->members[locs[i].member];
	off = geom_member_offset(&a->g, &locs[i], p->in_chunk);
	if (all > 1) {
		atomic_store_explicit(&m->next_read, off + p->len,
				      memory_order_relaxed);
	}
	return batch_read(b, m, p->buf, p->len, off);
}

int
copies_write(struct raid_array *a, struct batch *b, const struct raid_piece *p)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned all = a->layout->map(&a->g, p->chunk_no, locs);
	unsigned n = keep_places(a, p, locs, all, false);
	unsigned fua = (p->flags & RAID_FUA) ? IO_FUA : 0;
	int r = 0;

	if (n == 0) {
		return p->only ? 0 : -EIO;
	}
	for (unsigned i = 0; i < n && r == 0; i++) {
		struct raid_member *m = &a->members[locs[i].member];
		uint64_t off = geom_member_offset(&a->g, &locs[i], p->in_chunk);

		r = p->op == IO_WRITE
			    ? batch_write(b, m, p->buf, p->len, off, fua)
			    : batch_discard(b, m, p->op, p->len, off);
	}
	return r;
}
