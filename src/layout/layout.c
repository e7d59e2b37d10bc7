/*
 * layout.c: the table of levels and the data path shared by the levels
 * without parity (0, 1, 10): read one copy, write every copy.
 *
 * Read balancing, for each piece (one chunk's worth of a read):
 *  1. a piece continuing this request's previous piece on some copy's
 *     member stays there: the two merge into one member I/O (one buffer,
 *     or a vectored read when the buffers are apart: RAID 10 n2 over 4
 *     finds a pair's next chunk two chunks on in the client's buffer);
 *  2. a piece continuing the last read issued to some copy's member (an
 *     earlier request: a sequential stream) stays there too (md's
 *     next_seq_sect), unless that member is busy and another copy's member
 *     is idle: then the idle one starts a run of its own here.  A stream
 *     at queue depth > 1 so alternates between copies in runs about as
 *     long as the queue, each member reading contiguously, and a spindle
 *     pays one access per run instead of one per request;
 *  3. any other piece goes to the copy whose member has the fewest I/Os in
 *     flight (SPDK raid1's rule).  Ties go to the first copy.
 */
#include <stddef.h>

#include "array.h"
#include "layout.h"

static const struct raid_layout *const layouts[] = {
	&raid0_layout,
	&raid1_layout,
	&raid10_layout,
	&raid5_layout,
};

const struct raid_layout *
layout_find(int level)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i]->level == level) {
			return layouts[i];
		}
	}
	return NULL;
}

void
layout_no_name(const struct raid_geom *g, char *buf, size_t len)
{
	(void)g;
	if (len) {
		buf[0] = '\0';
	}
}

/* Would the piece at `off` on m merge into the batch's last read of m? */
static bool
continues(const struct raid_batch *b, const struct raid_member *m,
	  uint64_t off, const struct raid_piece *p)
{
	return batch_merges(b, m, IO_READ, 0, p->buf, p->len, off);
}

static unsigned
load_of(struct raid_array *a, const struct raid_loc *l)
{
	return atomic_load_explicit(&a->members[l->member].inflight,
				    memory_order_relaxed);
}

static unsigned
pick_copy(struct raid_array *a, const struct raid_batch *b,
	  const struct raid_loc *locs, unsigned n, const struct raid_piece *p)
{
	unsigned best = 0, best_load = ~0u, stream = n;

	for (unsigned i = 0; i < n; i++) {
		struct raid_member *m = &a->members[locs[i].member];
		uint64_t off = array_member_offset(a, &locs[i], p->in_chunk);
		unsigned load;

		if (continues(b, m, off, p)) {
			return i;
		}
		if (stream == n &&
		    atomic_load_explicit(&m->next_read,
					 memory_order_relaxed) == off) {
			stream = i;
		}
		load = load_of(a, &locs[i]);
		if (load < best_load) {
			best = i;
			best_load = load;
		}
	}
	if (stream < n && (best_load > 0 || load_of(a, &locs[stream]) == 0)) {
		return stream;
	}
	return best;
}

int
layout_read_one(struct raid_array *a, struct raid_batch *b,
		const struct raid_piece *p)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned n = a->layout->map(&a->g, p->chunk_no, locs);
	unsigned i = n > 1 ? pick_copy(a, b, locs, n, p) : 0;
	struct raid_member *m = &a->members[locs[i].member];
	uint64_t off = array_member_offset(a, &locs[i], p->in_chunk);

	if (n > 1) {
		atomic_store_explicit(&m->next_read, off + p->len,
				      memory_order_relaxed);
	}
	return batch_add(b, m, IO_READ, 0, p->buf, p->len, off);
}

int
layout_write_all(struct raid_array *a, struct raid_batch *b,
		 const struct raid_piece *p)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned n = a->layout->map(&a->g, p->chunk_no, locs);
	unsigned flags = (p->flags & RAID_FUA) ? IO_FUA : 0;
	int r;

	for (unsigned i = 0; i < n; i++) {
		r = batch_add(b, &a->members[locs[i].member], p->op, flags,
			      p->buf, p->len,
			      array_member_offset(a, &locs[i], p->in_chunk));
		if (r < 0) {
			return r;
		}
	}
	return 0;
}
