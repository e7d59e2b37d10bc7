/*
 * check.c: offline verification of redundancy, md's "check" action, and
 * its "repair".
 *
 * RAID 5: for every stripe, the XOR of all members' rows (data and parity)
 * must be zero.  RAID 1/10: every copy of every logical chunk must be
 * equal.  Rows are read in column slices of at most CHECK_SLICE bytes, all
 * members of a slice in one batch, so memory stays bounded (members x 1M).
 * Check only reads.  Repair rewrites what disagrees, as md does: RAID 5
 * parity from the data, a mirror's other copies from its first.  A unit
 * whose every place is a hole (sparse member files) is consistent
 * without reading: holes read zero everywhere.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "io/batch.h"
#include "layout/parity.h"
#include "log.h"
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

/* One unit (a stripe row, or a chunk's copies): its places and length. */
struct unit {
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned n;
	unsigned fix_from; /* RAID 5: the parity place; mirrors: copy 0 */
	uint64_t len;
};

static void
unit_places(struct raid_array *a, uint64_t u, struct unit *un)
{
	if (a->layout->stripe_pieces) {
		un->n = a->nr_members;
		for (unsigned m = 0; m < un->n; m++) {
			un->locs[m] = (struct raid_loc){ m, u };
		}
		un->fix_from = a->layout->parity_member(&a->g, u);
		un->len = a->chunk_bytes;
		return;
	}
	un->n = a->layout->map(&a->g, u, un->locs);
	un->fix_from = 0;
	/* Online, on a degraded mirror: the copies left. */
	for (unsigned i = 0, k = 0, n = un->n; i < n; i++) {
		if (member_usable(&a->members[un->locs[i].member])) {
			un->locs[k++] = un->locs[i];
		} else {
			un->n--;
		}
	}
	/* A mirror's last chunk may be partial (size_unit). */
	un->len = MIN(a->chunk_bytes, a->size - (u << a->g.chunk_shift));
}

/* Is every place of the unit a hole?  Then it reads zero everywhere. */
static bool
unit_holes(struct raid_array *a, const struct unit *un)
{
	for (unsigned i = 0; i < un->n; i++) {
		struct raid_member *m = &a->members[un->locs[i].member];

		if (!member_hole(m, geom_member_offset(&a->g, &un->locs[i], 0),
				 un->len)) {
			return false;
		}
	}
	return true;
}

/* Does the slice agree?  x: scratch for the XOR. */
static bool
slice_ok(struct raid_array *a, const struct unit *un, uint8_t **bufs,
	 uint8_t *x, uint32_t len)
{
	if (a->layout->stripe_pieces) {
		parity_xor(x, (void *const *)bufs, un->n, len);
		return !x[0] && !memcmp(x, x + 1, len - 1);
	}
	for (unsigned i = 1; i < un->n; i++) {
		if (memcmp(bufs[0], bufs[i], len) != 0) {
			return false;
		}
	}
	return true;
}

#define MISMATCH_PAGE 4096u /* md's RAID 5 counts its stripe pages */

/*
 * Bytes of the slice in the 4K pages that disagree (slice_ok said no; x
 * still holds the XOR of a parity row): md's mismatch_cnt counts them.
 */
static uint64_t
slice_bad_bytes(struct raid_array *a, const struct unit *un, uint8_t **bufs,
		const uint8_t *x, uint32_t len)
{
	uint64_t bad = 0;

	for (uint32_t at = 0; at < len; at += MISMATCH_PAGE) {
		uint32_t n = MIN(MISMATCH_PAGE, len - at);
		bool differs = false;

		if (a->layout->stripe_pieces) {
			differs = x[at] || memcmp(x + at, x + at + 1, n - 1);
		}
		for (unsigned i = 1;
		     !a->layout->stripe_pieces && i < un->n && !differs; i++) {
			differs = memcmp(bufs[0] + at, bufs[i] + at, n) != 0;
		}
		bad += differs ? n : 0;
	}
	return bad;
}

/* Rewrite the slice as md's repair: parity from data, or from copy 0. */
static int
slice_fix(struct raid_array *a, struct batch *b, const struct unit *un,
	  uint8_t **bufs, uint8_t *x, uint32_t in, uint32_t len)
{
	void *data[RAID_MAX_MEMBERS];
	unsigned nd = 0;
	int r = 0;

	if (a->layout->stripe_pieces) {
		for (unsigned i = 0; i < un->n; i++) {
			if (i != un->fix_from) {
				data[nd++] = bufs[i];
			}
		}
		parity_xor(x, data, nd, len);
		r = batch_write(
			b, &a->members[un->locs[un->fix_from].member], x, len,
			geom_member_offset(&a->g, &un->locs[un->fix_from], in),
			0);
	} else {
		for (unsigned i = 1; i < un->n && r == 0; i++) {
			r = batch_write(
				b, &a->members[un->locs[i].member], bufs[0],
				len,
				geom_member_offset(&a->g, &un->locs[i], in), 0);
		}
	}
	r = r < 0 ? r : batch_run(b);
	batch_reset(b);
	return r;
}

/*
 * Check (and repair) unit u: 1 consistent, 0 not (repaired), -errno.
 * bad_bytes (or NULL): add the bytes of the 4K pages that disagree, in
 * every slice (else a check stops at the first).
 */
static int
unit_scrub(struct raid_array *a, struct batch *b, uint64_t u, bool repair,
	   uint8_t **bufs, uint8_t *x, uint64_t *bad_bytes)
{
	struct unit un;
	bool ok = true;
	int r;

	unit_places(a, u, &un);
	if (un.n < 2 || unit_holes(a, &un)) {
		return 1;
	}
	for (uint32_t in = 0; in < un.len; in += CHECK_SLICE) {
		uint32_t len = MIN(CHECK_SLICE, un.len - in);

		r = read_places(a, b, un.locs, un.n, in, len, bufs);
		if (r < 0) {
			return r;
		}
		if (slice_ok(a, &un, bufs, x, len)) {
			continue;
		}
		ok = false;
		if (bad_bytes) {
			*bad_bytes += slice_bad_bytes(a, &un, bufs, x, len);
		}
		if (!repair) {
			if (!bad_bytes) {
				break;
			}
			continue;
		}
		r = slice_fix(a, b, &un, bufs, x, in, len);
		if (r < 0) {
			return r;
		}
	}
	return ok;
}

static int
scrub(struct raid_array *a, struct raid_check_result *res, bool repair,
      raid_progress_fn progress, void *ctx)
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
	if (repair && a->read_only) {
		return -EROFS;
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
		r = unit_scrub(a, &b, u, repair, bufs,
			       mem + (size_t)a->nr_members * slice, NULL);
		if (r < 0) {
			break;
		}
		if (r == 0) {
			note_mismatch(res, u);
		}
		res->units++;
		r = 0;
		if (progress) {
			progress(ctx, u + 1, units);
		}
	}
	batch_fini(&b);
	free(mem);
	return r;
}

int
raid_check(struct raid_array *a, struct raid_check_result *res)
{
	return scrub(a, res, false, NULL, NULL);
}

int
raid_repair(struct raid_array *a, struct raid_check_result *res,
	    raid_progress_fn progress, void *ctx)
{
	return scrub(a, res, true, progress, ctx);
}

uint64_t
check_units(const struct raid_array *a)
{
	if (a->g.copies == 1 && !a->layout->stripe_pieces) {
		return 0;
	}
	return a->layout->stripe_pieces ? a->g.member_chunks
					: a->g.array_chunks;
}

int
check_unit(struct raid_array *a, struct batch *b, uint64_t u, bool repair,
	   uint8_t *mem, uint64_t *bad_bytes)
{
	uint32_t slice = MIN(CHECK_SLICE, a->chunk_bytes);
	uint8_t *bufs[RAID_MAX_MEMBERS];

	for (unsigned i = 0; i < a->nr_members; i++) {
		bufs[i] = mem + (size_t)i * slice;
	}
	return unit_scrub(a, b, u, repair, bufs,
			  mem + (size_t)a->nr_members * slice, bad_bytes);
}

size_t
check_unit_mem(const struct raid_array *a)
{
	return (size_t)(a->nr_members + 1) * MIN(CHECK_SLICE, a->chunk_bytes);
}
