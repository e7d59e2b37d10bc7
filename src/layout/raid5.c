/*
 * raid5.c: md's RAID 5 placement: n members, n - 1 data chunks and one
 * parity chunk per stripe (row), the parity rotating by md's algorithms.
 *
 * For logical chunk k: stripe s = k div (n-1), data index d = k mod (n-1).
 * md's raid5_compute_sector():
 *
 *   algorithm         parity member p            data member of index d
 *   left-asymmetric   (n-1) - s mod n            d, or d + 1 when d >= p
 *   right-asymmetric  s mod n                    d, or d + 1 when d >= p
 *   left-symmetric    (n-1) - s mod n            (p + 1 + d) mod n
 *   right-symmetric   s mod n                    (p + 1 + d) mod n
 *
 * left-symmetric (md's default) over 4 members:
 *
 *   stripe   m0   m1   m2   m3
 *   0        D0   D1   D2   P
 *   1        D4   D5   P    D3
 *   2        D8   P    D6   D7
 *   3        P    D9   D10  D11
 *
 * The chunk of stripe s lives at member chunk s on every member.  Array
 * chunks = (n - 1) x member chunks.  Names are md's (mdadm --layout), long
 * or short: left-symmetric / ls ...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "io/batch.h"
#include "io/bounce.h"
#include "layout.h"
#include "parity.h"
#include "util.h"

/* md's numbers (ALGORITHM_* in md's raid5.h). */
enum raid5_algorithm {
	RAID5_LEFT_ASYMMETRIC = 0,
	RAID5_RIGHT_ASYMMETRIC = 1,
	RAID5_LEFT_SYMMETRIC = 2,
	RAID5_RIGHT_SYMMETRIC = 3,
	RAID5_PARITY_0 = 4, /* md only: parity on the first member */
	RAID5_PARITY_N = 5, /* md only: parity on the last member */
};

static const struct {
	const char *name, *alias;
	enum raid5_algorithm algo;
} algorithms[] = {
	{ "left-asymmetric", "la", RAID5_LEFT_ASYMMETRIC },
	{ "right-asymmetric", "ra", RAID5_RIGHT_ASYMMETRIC },
	{ "left-symmetric", "ls", RAID5_LEFT_SYMMETRIC },
	{ "right-symmetric", "rs", RAID5_RIGHT_SYMMETRIC },
};
#define NR_ALGORITHMS (sizeof(algorithms) / sizeof(algorithms[0]))

static int
raid5_setup(struct raid_geom *g, const char *layout, char *err, size_t errlen)
{
	const char *s = (layout && *layout) ? layout : "left-symmetric";
	unsigned i;

	for (i = 0; i < NR_ALGORITHMS; i++) {
		if (strcmp(s, algorithms[i].name) == 0 ||
		    strcmp(s, algorithms[i].alias) == 0) {
			break;
		}
	}
	if (i == NR_ALGORITHMS) {
		snprintf(
			err, errlen,
			"raid5 layout '%s': must be left-symmetric (ls), left-asymmetric (la), right-symmetric (rs) or right-asymmetric (ra)",
			s);
		return -EINVAL;
	}
	if (g->nr_members < 3) {
		snprintf(err, errlen, "raid5 needs at least 3 members, have %u",
			 g->nr_members);
		return -EINVAL;
	}
	g->parity_algo = algorithms[i].algo;
	g->copies = 1;
	g->near_copies = g->far_copies = 1;
	g->far_offset = false;
	g->far_stride = 0;
	g->array_chunks = g->member_chunks * (g->nr_members - 1);
	g->stripe_chunks = g->nr_members - 1;
	return 0;
}

unsigned
raid5_parity_member(const struct raid_geom *g, uint64_t stripe)
{
	unsigned n = g->nr_members;
	unsigned rot = stripe % n;

	switch (g->parity_algo) {
	case RAID5_LEFT_ASYMMETRIC:
	case RAID5_LEFT_SYMMETRIC:
		return n - 1 - rot;
	default:
		return rot;
	}
}

static unsigned
raid5_map(const struct raid_geom *g, uint64_t chunk_no, struct raid_loc *locs)
{
	unsigned data = g->nr_members - 1;
	uint64_t stripe = chunk_no / data;
	unsigned d = chunk_no % data;
	unsigned p = raid5_parity_member(g, stripe);

	if (g->parity_algo == RAID5_LEFT_SYMMETRIC ||
	    g->parity_algo == RAID5_RIGHT_SYMMETRIC) {
		d = (p + 1 + d) % g->nr_members;
	} else if (d >= p) {
		d++;
	}
	locs[0].member = d;
	locs[0].member_chunk = stripe;
	return 1;
}

static bool
raid5_unmap(const struct raid_geom *g, unsigned member, uint64_t member_chunk,
	    uint64_t *chunk_no)
{
	(void)member;
	*chunk_no = member_chunk * (g->nr_members - 1);
	return member_chunk < g->member_chunks;
}

static void
raid5_layout_name(const struct raid_geom *g, char *buf, size_t len)
{
	for (unsigned i = 0; i < NR_ALGORITHMS; i++) {
		if (algorithms[i].algo == g->parity_algo) {
			snprintf(buf, len, "%s", algorithms[i].name);
			return;
		}
	}
	layout_no_name(g, buf, len);
}

/* ---- the data path ----------------------------------------------------
 *
 * Reads are cut at chunk boundaries by the core; a piece whose data member
 * can be read is read from it (copies_read).  Else (the member is faulty,
 * missing, or its read failed in this request) it is reconstructed under
 * the stripe lock: the same bytes of every other member, parity included,
 * XORed into the client's buffer, column slice by column slice.
 *
 * Writes, trims and zeros come one piece per stripe.  A write locks the
 * stripe, then works column slice by column slice (at most RAID5_SLICE
 * bytes of the chunk column, so scratch memory stays bounded with 16M
 * chunks).  For data index j, w_j = the part of the slice the write
 * covers; a member "readable" may be read (piece_can_read), "live" may be
 * written.  The plan, in md's order of preference:
 *
 *   parity member not live    DATA: write the live touched data members,
 *                             read nothing (the stripe has no parity now)
 *   read-modify-write         parity and every touched D_j readable: read
 *                             P and old D_j over w_j; P ^= old D_j ^ new
 *   reconstruct-write         every D_j the write does not wholly cover
 *                             readable: read those; P = XOR of the column
 *   (md's rule when both work: read-modify-write only when it needs
 *   strictly fewer member reads; a full-stripe write reads nothing)
 *   reconstruct-then-write    one D_x not readable, parity and every other
 *                             D_j readable: read them all, old D_x = P ^
 *                             the others, then as reconstruct-write
 *   otherwise                 EIO: the stripe lost two members
 *
 * then writes the new data to live members and parity (with FUA when
 * asked) in one batch and unlocks.  A data member that is not live is not
 * written: parity carries its new bytes.  A repair (piece->only) writes the
 * data it is given to those members only, parity untouched.
 *
 * Trim and zero of whole stripes go to every live member, parity included
 * (all zero is consistent; a member that refuses the mode is zeroed
 * another way: batch_run_discard); zero of part of a stripe is a write of
 * zeros; trim of part of a stripe does nothing (trim is advisory, and
 * punching data without parity would break the stripe).  FUA on trim and
 * zero is the core's: it flushes every member the request changed.
 */

#define RAID5_SLICE (1u << 20)

/* One slice of one stripe: the column [a, b) of every chunk. */
struct slice {
	uint64_t stripe;
	uint32_t a, b;
	uint32_t ws[RAID_MAX_MEMBERS], we[RAID_MAX_MEMBERS]; /* w_j, [ws, we) */
	const uint8_t *src[RAID_MAX_MEMBERS]; /* new bytes at ws[j] */
};

enum plan { PLAN_RMW, PLAN_RCW, PLAN_RECON, PLAN_DATA, PLAN_REPAIR };

/* The role holding data index j of a stripe. */
static unsigned
data_role(const struct raid_array *a, uint64_t stripe, unsigned j)
{
	struct raid_loc loc;

	raid5_map(&a->g, stripe * (a->nr_members - 1) + j, &loc);
	return loc.member;
}

/* Member byte offset of `in` bytes into role's chunk of a stripe. */
static uint64_t
stripe_offset(const struct raid_array *a, unsigned role, uint64_t stripe,
	      uint32_t in)
{
	struct raid_loc row = { role, stripe };

	return geom_member_offset(&a->g, &row, in);
}

static bool
touched(const struct slice *sl, unsigned j)
{
	return sl->we[j] > sl->ws[j];
}

static bool
full(const struct slice *sl, unsigned j)
{
	return sl->ws[j] == sl->a && sl->we[j] == sl->b;
}

/* md's choice when both work: read-modify-write if strictly fewer reads. */
static bool
rmw_cheaper(const struct raid_array *a, const struct slice *sl)
{
	unsigned nd = a->nr_members - 1, rmw = 1, rcw = 0;

	for (unsigned j = 0; j < nd; j++) {
		rmw += touched(sl, j);
		rcw += !full(sl, j);
	}
	return rmw < rcw;
}

/* The plan for a slice (see above), or -EIO; *x: the unreadable D_x. */
static int
slice_plan(const struct raid_array *a, const struct raid_piece *p,
	   const struct slice *sl, unsigned *x)
{
	unsigned nd = a->nr_members - 1,
		 pm = raid5_parity_member(&a->g, sl->stripe);
	bool rmw = piece_can_read(a, p, pm, sl->stripe), rcw = true;
	unsigned unreadable = 0;

	if (p->only) {
		return PLAN_REPAIR;
	}
	for (unsigned j = 0; j < nd; j++) {
		unsigned role = data_role(a, sl->stripe, j);
		bool readable = piece_can_read(a, p, role, sl->stripe);

		if (!piece_can_write(a, p, pm) && touched(sl, j) &&
		    !piece_can_write(a, p, role)) {
			return -EIO; /* data and parity both gone */
		}
		rmw &= readable || !touched(sl, j);
		rcw &= readable || full(sl, j);
		if (!readable) {
			unreadable++;
			*x = j;
		}
	}
	if (!piece_can_write(a, p, pm)) {
		return PLAN_DATA;
	}
	if (rmw && rcw) {
		return rmw_cheaper(a, sl) ? PLAN_RMW : PLAN_RCW;
	}
	if (rmw || rcw) {
		return rmw ? PLAN_RMW : PLAN_RCW;
	}
	if (unreadable == 1 && piece_can_read(a, p, pm, sl->stripe)) {
		return PLAN_RECON;
	}
	return -EIO;
}

/* Queue the reads a slice's plan needs; bufs are slice-sized. */
static int
slice_reads(struct raid_array *a, struct batch *b, const struct slice *sl,
	    int plan, unsigned x, uint8_t **bufs, uint8_t *pbuf)
{
	unsigned nd = a->nr_members - 1;
	unsigned pm = raid5_parity_member(&a->g, sl->stripe);
	uint32_t len = sl->b - sl->a;
	int r = 0;

	if (plan == PLAN_RMW || plan == PLAN_RECON) {
		r = batch_read(b, &a->members[pm], pbuf, len,
			       stripe_offset(a, pm, sl->stripe, sl->a));
	}
	for (unsigned j = 0; j < nd && r == 0; j++) {
		unsigned role = data_role(a, sl->stripe, j);
		struct raid_member *m = &a->members[role];

		if (plan == PLAN_RMW && touched(sl, j)) {
			r = batch_read(
				b, m, bufs[j] + (sl->ws[j] - sl->a),
				sl->we[j] - sl->ws[j],
				stripe_offset(a, role, sl->stripe, sl->ws[j]));
		} else if ((plan == PLAN_RCW && !full(sl, j)) ||
			   (plan == PLAN_RECON && j != x)) {
			r = batch_read(
				b, m, bufs[j], len,
				stripe_offset(a, role, sl->stripe, sl->a));
		}
	}
	return r;
}

/*
 * New parity into pbuf; bufs hold old data (rmw) or the column (rcw).  A
 * chunk the write covers over the whole slice is XORed straight from the
 * client's buffer, not copied first.  Reconstruct-then-write first makes
 * old D_x from parity and the others.
 */
static int
slice_parity(struct raid_array *a, const struct slice *sl, int plan, unsigned x,
	     uint8_t **bufs, uint8_t *pbuf, uint8_t *tmp)
{
	unsigned nd = a->nr_members - 1;
	uint32_t len = sl->b - sl->a;
	void *col[RAID_MAX_MEMBERS];
	bool rmw = plan == PLAN_RMW;
	int r = 0;

	if (plan == PLAN_RECON) {
		unsigned k = 0;

		col[k++] = pbuf;
		for (unsigned j = 0; j < nd; j++) {
			if (j != x) {
				col[k++] = bufs[j];
			}
		}
		r = parity_xor(bufs[x], col, k, len);
	}
	for (unsigned j = 0; j < nd && r == 0; j++) {
		uint32_t o = sl->ws[j] - sl->a, n = sl->we[j] - sl->ws[j];

		col[j] = bufs[j];
		if (n == 0) {
			continue;
		}
		if (rmw) {
			void *v[3] = { pbuf + o, bufs[j] + o,
				       (void *)sl->src[j] };

			r = parity_xor(tmp, v, 3, n);
			memcpy(pbuf + o, tmp, n);
		} else if (n == len) {
			col[j] = (void *)sl->src[j];
		} else {
			memcpy(bufs[j] + o, sl->src[j], n);
		}
	}
	if (!rmw && r == 0) {
		r = parity_xor(pbuf, col, nd, len);
	}
	return r;
}

/* Queue the slice's new data (to live members) and parity. */
static int
slice_writes(struct raid_array *a, struct batch *b, const struct raid_piece *p,
	     const struct slice *sl, int plan, const uint8_t *pbuf)
{
	unsigned nd = a->nr_members - 1;
	unsigned pm = raid5_parity_member(&a->g, sl->stripe);
	unsigned fua = (p->flags & RAID_FUA) ? IO_FUA : 0;
	int r = 0;

	for (unsigned j = 0; j < nd && r == 0; j++) {
		unsigned role = data_role(a, sl->stripe, j);

		if (touched(sl, j) && piece_can_write(a, p, role)) {
			r = batch_write(
				b, &a->members[role], sl->src[j],
				sl->we[j] - sl->ws[j],
				stripe_offset(a, role, sl->stripe, sl->ws[j]),
				fua);
		}
	}
	if (r == 0 && plan != PLAN_DATA && plan != PLAN_REPAIR) {
		r = batch_write(b, &a->members[pm], pbuf, sl->b - sl->a,
				stripe_offset(a, pm, sl->stripe, sl->a), fua);
	}
	return r;
}

/* Read what the slice needs, compute parity, write data and parity. */
static int
raid5_write_slice(struct raid_array *a, struct batch *b,
		  const struct raid_piece *p, const struct slice *sl)
{
	unsigned nd = a->nr_members - 1, x = 0;
	uint32_t len = sl->b - sl->a;
	int plan = slice_plan(a, p, sl, &x);
	uint8_t *bufs[RAID_MAX_MEMBERS], *pbuf, *tmp, *s;
	int r = 0;

	if (plan < 0) {
		return plan;
	}
	s = bounce_get(BOUNCE_PARITY, (size_t)(nd + 3) * len, IO_BUF_ALIGN);
	if (!s) {
		return -ENOMEM;
	}
	for (unsigned j = 0; j < nd; j++) {
		bufs[j] = s + (size_t)j * len;
	}
	pbuf = s + (size_t)nd * len;
	tmp = pbuf + len; /* two slices: new data, then the XOR */
	if (plan != PLAN_DATA && plan != PLAN_REPAIR) {
		r = slice_reads(a, b, sl, plan, x, bufs, pbuf);
		if (r == 0) {
			r = batch_run(b);
		}
		if (r == 0) {
			r = slice_parity(a, sl, plan, x, bufs, pbuf, tmp);
		}
	}
	if (r == 0) {
		r = slice_writes(a, b, p, sl, plan, pbuf);
	}
	if (r == 0) {
		r = batch_run(b);
	}
	batch_reset(b);
	return r;
}

/* The slice [a0, a0+alen) of the piece's stripe, with the piece's bytes. */
static void
slice_init(const struct raid_array *a, const struct raid_piece *p, uint32_t a0,
	   uint32_t alen, const uint8_t *zeros, struct slice *sl)
{
	unsigned nd = a->nr_members - 1;
	uint64_t first =
		p->chunk_no % nd; /* data index where the piece starts */
	uint64_t start = first * a->chunk_bytes + p->in_chunk;
	uint64_t end = start + p->len;

	sl->stripe = p->chunk_no / nd;
	sl->a = a0;
	sl->b = a0 + alen;
	for (unsigned j = 0; j < nd; j++) {
		uint64_t lo = MAX(start, (uint64_t)j * a->chunk_bytes + sl->a);
		uint64_t hi = MIN(end, (uint64_t)j * a->chunk_bytes + sl->b);

		if (lo >= hi) {
			sl->ws[j] = sl->we[j] = sl->a;
			sl->src[j] = NULL;
			continue;
		}
		sl->ws[j] = lo - (uint64_t)j * a->chunk_bytes;
		sl->we[j] = hi - (uint64_t)j * a->chunk_bytes;
		sl->src[j] =
			zeros ? zeros : (const uint8_t *)p->buf + (lo - start);
	}
}

/*
 * Whole stripes.  A request that writes several whole stripes (the core
 * says so with RAID_PIECE_DEFER) does not run a batch per stripe: each
 * stripe's parity goes into this thread's BOUNCE_STRIPES, its data and
 * parity writes are queued, and its lock is kept; the core's one run then
 * sends every member its part of all of them, which the batch merges into
 * one vectored write per member, in order (a stripe per batch left every
 * member idle between stripes, and several writers' stripes reached a
 * disk out of order, each paying a seek).  write_end lets the locks go.
 * Only when every member is written (nothing to read, no member missing)
 * and at most RAID5_DEFER_BYTES of parity, RAID5_DEFER_MAX stripes, are
 * kept; past that, or when a stripe's lock is not free (stripe_trylock:
 * this thread never waits while it holds one), what is queued runs first.
 */
#define RAID5_DEFER_BYTES (4u << 20)
#define RAID5_DEFER_MAX	  32

static _Thread_local struct {
	uint64_t stripe[RAID5_DEFER_MAX]; /* locked, writes queued */
	unsigned n;
} tl_defer;

/* Stripes one request may keep queued (0: none, chunks too large). */
static unsigned
defer_cap(const struct raid_array *a)
{
	return MIN(RAID5_DEFER_MAX, RAID5_DEFER_BYTES / a->chunk_bytes);
}

/* Let go of the stripes kept (their writes ran or were dropped). */
static void
raid5_write_end(struct raid_array *a, struct batch *b)
{
	(void)b;
	while (tl_defer.n) {
		stripe_unlock(&a->stripe_locks, tl_defer.stripe[--tl_defer.n]);
	}
}

/* Run what is queued, then let go of the stripes kept. */
static int
defer_run(struct raid_array *a, struct batch *b)
{
	int r;

	if (!tl_defer.n) {
		return 0;
	}
	r = batch_run(b);
	raid5_write_end(a, b);
	return r;
}

/*
 * Take the stripe's lock, waiting for it: the stripes this thread keeps
 * are run and let go first (it never waits while holding one).
 */
static int
lock_stripe(struct raid_array *a, struct batch *b, uint64_t stripe)
{
	int r = defer_run(a, b);

	if (r == 0) {
		stripe_lock(&a->stripe_locks, stripe);
	}
	return r;
}

/* May the piece be queued and kept (see above)? */
static bool
deferrable(const struct raid_array *a, const struct raid_piece *p,
	   const uint8_t *zeros)
{
	unsigned nd = a->nr_members - 1;

	if (!(p->flags & RAID_PIECE_DEFER) || zeros || p->only || p->in_chunk ||
	    p->chunk_no % nd || p->len != a->write_piece_bytes ||
	    defer_cap(a) < 2) {
		return false;
	}
	for (unsigned m = 0; m < a->nr_members; m++) {
		if (!piece_can_write(a, p, m)) {
			return false;
		}
	}
	return true;
}

/* Queue a whole stripe's data and parity, its lock kept. */
static int
raid5_write_whole(struct raid_array *a, struct batch *b,
		  const struct raid_piece *p)
{
	unsigned nd = a->nr_members - 1, k;
	uint64_t stripe = p->chunk_no / nd;
	unsigned pm = raid5_parity_member(&a->g, stripe);
	unsigned fua = (p->flags & RAID_FUA) ? IO_FUA : 0;
	uint32_t len = a->chunk_bytes;
	void *col[RAID_MAX_MEMBERS];
	uint8_t *arena, *pbuf;
	int r = 0;

	/* Kept with the others if there is room and it is free now. */
	if (!tl_defer.n || tl_defer.n == defer_cap(a) ||
	    !stripe_trylock(&a->stripe_locks, stripe)) {
		r = lock_stripe(a, b, stripe);
		if (r < 0) {
			return r;
		}
	}
	k = tl_defer.n;
	tl_defer.stripe[tl_defer.n++] = stripe;
	arena = bounce_get(BOUNCE_STRIPES, (size_t)defer_cap(a) * len,
			   IO_BUF_ALIGN);
	if (!arena) {
		return -ENOMEM; /* the core drops the batch, write_end unlocks
				 */
	}
	pbuf = arena + (size_t)k * len;
	for (unsigned j = 0; j < nd; j++) {
		col[j] = (uint8_t *)p->buf + (size_t)j * len;
	}
	r = parity_xor(pbuf, col, nd, len);
	for (unsigned j = 0; j < nd && r == 0; j++) {
		unsigned role = data_role(a, stripe, j);

		r = batch_write(b, &a->members[role], col[j], len,
				stripe_offset(a, role, stripe, 0), fua);
	}
	if (r == 0) {
		r = batch_write(b, &a->members[pm], pbuf, len,
				stripe_offset(a, pm, stripe, 0), fua);
	}
	return r;
}

/*
 * Write (or write zeros over) a piece: lock the stripe, slice by slice.
 * zeros, if given, is a buffer of zeros of at least the piece's length.
 */
static int
raid5_write_piece(struct raid_array *a, struct batch *b,
		  const struct raid_piece *p, const uint8_t *zeros)
{
	uint64_t stripe = p->chunk_no / (a->nr_members - 1);
	/* The column the piece touches: all of it once it spans chunks. */
	uint32_t lo = p->in_chunk, hi = p->in_chunk + p->len;
	int r = 0;

	if (deferrable(a, p, zeros)) {
		return raid5_write_whole(a, b, p);
	}
	if (hi > a->chunk_bytes) {
		lo = 0;
		hi = a->chunk_bytes;
	}
	r = lock_stripe(a, b, stripe);
	if (r < 0) {
		return r;
	}
	for (uint32_t x = lo; x < hi && r == 0; x += RAID5_SLICE) {
		struct slice sl;

		slice_init(a, p, x, MIN(RAID5_SLICE, hi - x), zeros, &sl);
		r = raid5_write_slice(a, b, p, &sl);
	}
	stripe_unlock(&a->stripe_locks, stripe);
	bounce_put(BOUNCE_PARITY);
	return r;
}

/* Trim or zero a whole stripe: every live member's row, parity included. */
static int
raid5_discard_stripe(struct raid_array *a, struct batch *b,
		     const struct raid_piece *p)
{
	uint64_t stripe = p->chunk_no / (a->nr_members - 1);
	int r = lock_stripe(a, b, stripe);

	if (r < 0) {
		return r;
	}
	for (unsigned m = 0; m < a->nr_members && r == 0; m++) {
		if (piece_can_write(a, p, m)) {
			r = batch_discard(b, &a->members[m], p->op,
					  a->chunk_bytes,
					  stripe_offset(a, m, stripe, 0));
		}
	}
	if (r == 0) {
		r = batch_run_discard(b);
	}
	stripe_unlock(&a->stripe_locks, stripe);
	batch_reset(b);
	return r;
}

/* Zero part of a stripe: write zeros, data and parity. */
static int
raid5_zero_part(struct raid_array *a, struct batch *b,
		const struct raid_piece *p)
{
	uint8_t *zeros;
	int r;

	if (p->flags & RAID_FAST_ZERO) {
		return -ENOTSUP; /* only whole stripes zero without writing */
	}
	/* Aligned: O_DIRECT members take it as it is. */
	if (posix_memalign((void **)&zeros, IO_BUF_ALIGN, p->len) != 0) {
		return -ENOMEM;
	}
	memset(zeros, 0, p->len);
	r = raid5_write_piece(a, b, p, zeros);
	free(zeros);
	return r;
}

static int
raid5_write(struct raid_array *a, struct batch *b, const struct raid_piece *p)
{
	bool whole = p->in_chunk == 0 &&
		     p->chunk_no % (a->nr_members - 1) == 0 &&
		     p->len == a->write_piece_bytes;

	switch (p->op) {
	case IO_WRITE:
		return raid5_write_piece(a, b, p, NULL);
	case IO_TRIM:
		/* Block devices may discard to garbage: parity would break. */
		return whole && !a->has_blk ? raid5_discard_stripe(a, b, p) : 0;
	default: /* IO_ZERO, IO_PUNCH */
		return whole ? raid5_discard_stripe(a, b, p)
			     : raid5_zero_part(a, b, p);
	}
}

/*
 * A piece whose data member cannot be read: the XOR of the same bytes of
 * every other member, under the stripe lock (a write between the reads
 * would tear data from parity).  Runs the batch (with whatever the request
 * queued before), slice by slice.
 */
static int
raid5_reconstruct(struct raid_array *a, struct batch *b,
		  const struct raid_piece *p, unsigned role)
{
	unsigned n = a->nr_members;
	uint64_t stripe = p->chunk_no / (n - 1);
	int r = 0;

	for (unsigned i = 0; i < n; i++) {
		if (i != role && !piece_can_read(a, p, i, stripe)) {
			return -EIO; /* two members of the stripe gone */
		}
	}
	r = lock_stripe(a, b, stripe);
	if (r < 0) {
		return r;
	}
	for (uint32_t done = 0; done < p->len && r == 0;) {
		uint32_t len = MIN(RAID5_SLICE, p->len - done);
		uint8_t *s = bounce_get(BOUNCE_PARITY, (size_t)(n - 1) * len,
					IO_BUF_ALIGN);
		void *srcs[RAID_MAX_MEMBERS];
		unsigned k = 0;

		if (!s) {
			r = -ENOMEM;
			break;
		}
		for (unsigned i = 0; i < n && r == 0; i++) {
			if (i == role) {
				continue;
			}
			srcs[k] = s + (size_t)k * len;
			r = batch_read(b, &a->members[i], srcs[k], len,
				       stripe_offset(a, i, stripe,
						     p->in_chunk + done));
			k++;
		}
		if (r == 0) {
			r = batch_run(b);
		}
		if (r == 0) {
			r = parity_xor((uint8_t *)p->buf + done, srcs, k, len);
		}
		done += len;
	}
	stripe_unlock(&a->stripe_locks, stripe);
	bounce_put(BOUNCE_PARITY);
	return r;
}

static int
raid5_read(struct raid_array *a, struct batch *b, const struct raid_piece *p)
{
	struct raid_loc loc;

	raid5_map(&a->g, p->chunk_no, &loc);
	if (p->only || piece_can_read(a, p, loc.member, loc.member_chunk)) {
		return copies_read(a, b, p);
	}
	return raid5_reconstruct(a, b, p, loc.member);
}

/* Parity rebuilds one member, any one. */
static bool
raid5_enough(const struct raid_geom *g, uint64_t lost)
{
	(void)g;
	return (lost & (lost - 1)) == 0;
}

/* clang-format off */
static uint32_t
raid5_md_layout(const struct raid_geom *g)
{
	return g->parity_algo; /* md's own numbers */
}

static int
raid5_md_layout_name(uint32_t md_layout, char *name, size_t len, char *err,
		     size_t errlen)
{
	for (unsigned i = 0; i < NR_ALGORITHMS; i++) {
		if (algorithms[i].algo == md_layout) {
			snprintf(name, len, "%s", algorithms[i].name);
			return 0;
		}
	}
	if (md_layout == RAID5_PARITY_0 || md_layout == RAID5_PARITY_N) {
		snprintf(err, errlen, "md raid5 layout %s is not one nbdraid places",
			 md_layout == RAID5_PARITY_0 ? "parity-first"
						     : "parity-last");
	} else {
		snprintf(err, errlen, "md raid5 layout %u is unknown", md_layout);
	}
	return -EINVAL;
}

const struct raid_layout raid5_layout = {
	.name          = "raid5",
	.level         = 5,
	.min_members   = 3,
	.stripe_pieces = true,
	.setup         = raid5_setup,
	.map           = raid5_map,
	.unmap         = raid5_unmap,
	.layout_name   = raid5_layout_name,
	.md_layout     = raid5_md_layout,
	.md_layout_name = raid5_md_layout_name,
	.parity_member = raid5_parity_member,
	.enough        = raid5_enough,
	.read          = raid5_read,
	.write         = raid5_write,
	.write_end     = raid5_write_end,
};
/* clang-format on */
