/*
 * check.c: offline verification of redundancy, md's "check" action.
 *
 * RAID 5: for every stripe, the XOR of all members' rows (data and parity)
 * must be zero.  RAID 1/10: every copy of every logical chunk must be
 * equal.  Rows are read in column slices of at most CHECK_SLICE bytes, all
 * members of a slice in one batch, so memory stays bounded (members x 1M).
 * The array is only read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "io/batch.h"
#include "layout/parity.h"
#include "util.h"

#define CHECK_SLICE (1u << 20)

static void
note_mismatch(struct raid_check_result *res, uint64_t unit)
{
	if (res->mismatched < RAID_CHECK_LIST) {
		res->first[res->mismatched] = unit;
	}
	res->mismatched++;
}

const char *
raid_check_unit_name(enum raid_check_unit unit)
{
	static const char *const names[] = {
		[RAID_CHECK_NONE] = "none",
		[RAID_CHECK_STRIPE] = "stripe",
		[RAID_CHECK_CHUNK] = "chunk",
	};

	return names[unit];
}

/* Read the same slice of n places into bufs[0..n-1]. */
static int
read_places(struct raid_array *a, struct batch *b, const struct raid_loc *locs,
	    unsigned n, uint32_t in, uint32_t len, uint8_t **bufs)
{
	int r = 0;

	for (unsigned i = 0; i < n && r == 0; i++) {
		r = batch_read(b, &a->members[locs[i].member], bufs[i], len,
			       geom_member_offset(&a->g, &locs[i], in));
	}
	r = r < 0 ? r : batch_run(b);
	batch_reset(b);
	return r;
}

/* Is unit u (a stripe row, or a chunk's copies) consistent? 1, 0, -errno. */
static int
unit_ok(struct raid_array *a, struct batch *b, uint64_t u, uint8_t **bufs,
	uint8_t *x)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	/* A mirror's last chunk may be partial (size_unit). */
	uint64_t end = a->layout->stripe_pieces
			       ? a->chunk_bytes
			       : MIN(a->chunk_bytes,
				     a->size - (u << a->g.chunk_shift));
	unsigned n;
	int r;

	if (a->layout->stripe_pieces) {
		n = a->nr_members;
		for (unsigned m = 0; m < n; m++) {
			locs[m] = (struct raid_loc){ m, u };
		}
	} else {
		n = a->layout->map(&a->g, u, locs);
	}
	for (uint32_t in = 0; in < end; in += CHECK_SLICE) {
		uint32_t len = MIN(CHECK_SLICE, end - in);

		r = read_places(a, b, locs, n, in, len, bufs);
		if (r < 0) {
			return r;
		}
		if (a->layout->stripe_pieces) {
			r = parity_xor(x, (void *const *)bufs, n, len);
			if (r < 0) {
				return r;
			}
			if (x[0] || memcmp(x, x + 1, len - 1) != 0) {
				return 0;
			}
			continue;
		}
		for (unsigned i = 1; i < n; i++) {
			if (memcmp(bufs[0], bufs[i], len) != 0) {
				return 0;
			}
		}
	}
	return 1;
}

int
raid_check(struct raid_array *a, struct raid_check_result *res)
{
	uint32_t slice = MIN(CHECK_SLICE, a->chunk_bytes);
	uint64_t units;
	uint8_t *mem, *bufs[RAID_MAX_MEMBERS];
	struct batch b;
	int r = 0;

	memset(res, 0, sizeof(*res));
	if (a->g.copies == 1 && !a->layout->stripe_pieces) {
		res->unit = RAID_CHECK_NONE;
		return 0;
	}
	res->unit =
		a->layout->stripe_pieces ? RAID_CHECK_STRIPE : RAID_CHECK_CHUNK;
	units = a->layout->stripe_pieces ? a->g.member_chunks
					 : a->g.array_chunks;
	if (posix_memalign((void **)&mem, IO_BUF_ALIGN,
			   (size_t)(a->nr_members + 1) * slice) != 0) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < a->nr_members; i++) {
		bufs[i] = mem + (size_t)i * slice;
	}
	batch_init(&b);
	for (uint64_t u = 0; u < units; u++) {
		r = unit_ok(a, &b, u, bufs,
			    mem + (size_t)a->nr_members * slice);
		if (r < 0) {
			break;
		}
		if (r == 0) {
			note_mismatch(res, u);
		}
		res->units++;
		r = 0;
	}
	batch_fini(&b);
	free(mem);
	return r;
}
