/*
 * test_layout.c: RAID 0/1/10 placement against an independent grid model.
 *
 * The model fills an explicit grid[member][member chunk] the way md's
 * documentation draws its layouts (md(4), the header of md's raid10.c),
 * by walking cells, never with src/layout's formulas:
 *
 *   raid0   logical chunks 0, 1, 2 ... row by row, left to right
 *   raid1   row r of every member holds chunk r
 *   n<k>    walk the cells row-major; each chunk takes k consecutive cells,
 *           wrapping onto the next row when k does not divide the members
 *   f<k>    k regions of `stride` rows (stride from md's calc_sectors());
 *           region 0 is raid0 of every chunk, region f is region 0 moved
 *           right by f members
 *   o<k>    groups of k rows; row j of a group is row 0 moved right by j
 *
 * A chunk's places are recorded in md's slot order: the near copy, then its
 * far copies.  Hand-drawn pictures from md's documentation pin the model.
 *
 * For 1..8 members, 0..13 chunks per member and several chunk sizes: setup()
 * sizes the array as md does, map() gives exactly the model's places, no
 * cell holds two chunks, bad layouts are refused; and with 1..8 byte chunks
 * every byte range of up to three stripes, cut at chunk boundaries, lands
 * byte for byte where the model says.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"
#include "layout.h"

#define MAX_N	   8  /* members tried: 1 .. MAX_N */
#define TEST_ROWS  13 /* member chunks tried: 0 .. TEST_ROWS */
#define MAX_ROWS   16
#define MAX_CHUNKS (MAX_N * MAX_ROWS)
#define MAX_SHIFT  3 /* byte test: chunks of 1 .. 8 bytes */
#define NO_CHUNK   (-1)

/* One layout= setting of one level, and what md makes of it. */
struct lcase {
	const struct raid_layout *layout;
	const char *str;  /* layout= string; NULL: the default */
	char kind;	  /* '0', '1', 'n' near, 'f' far, 'o' offset */
	unsigned k;	  /* copies in the string (raid1: members) */
	const char *name; /* what layout_name() prints */
};

static const struct lcase cases[] = {
	{ &raid0_layout, NULL, '0', 1, "" },
	{ &raid0_layout, "", '0', 1, "" },
	{ &raid1_layout, NULL, '1', 0, "" },
	{ &raid1_layout, "", '1', 0, "" },
	{ &raid10_layout, NULL, 'n', 2, "n2" },
	{ &raid10_layout, "", 'n', 2, "n2" },
	{ &raid10_layout, "n2", 'n', 2, "n2" },
	{ &raid10_layout, "n3", 'n', 3, "n3" },
	{ &raid10_layout, "n4", 'n', 4, "n4" },
	{ &raid10_layout, "f2", 'f', 2, "f2" },
	{ &raid10_layout, "f3", 'f', 3, "f3" },
	{ &raid10_layout, "f4", 'f', 4, "f4" },
	{ &raid10_layout, "o2", 'o', 2, "o2" },
	{ &raid10_layout, "o3", 'o', 3, "o3" },
	{ &raid10_layout, "o4", 'o', 4, "o4" },
};

#define NR_CASES (sizeof(cases) / sizeof(cases[0]))

/* The grid model: who holds each cell, and each chunk's places in order. */
struct model {
	unsigned n;
	unsigned rows;
	int grid[MAX_N][MAX_ROWS];
	unsigned nr_chunks;
	unsigned nr_places[MAX_CHUNKS];
	struct raid_loc place[MAX_CHUNKS][MAX_N];
};

/* One geometry under test. */
struct tcase {
	const struct lcase *lc;
	unsigned n;
	unsigned rows;
	unsigned shift;
	struct raid_geom g;
	struct model m;
};

static struct tcase tc; /* the geometry under test */
static char where[192]; /* the geometry, printed on any failure */

static void __attribute__((format(printf, 2, 3)))
check_true(bool ok, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!ok) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		print_error("%s: %s\n", where, msg);
	}
	assert_true(ok);
}

static void __attribute__((format(printf, 3, 4)))
check_eq(uint64_t got, uint64_t want, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (got != want) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		print_error("%s: %s: got %" PRIu64 ", want %" PRIu64 "\n",
			    where, msg, got, want);
	}
	assert_int_equal(got, want);
}

static unsigned
lcase_copies(const struct lcase *lc, unsigned n)
{
	return lc->kind == '1' ? n : lc->k;
}

/* Does the layout exist on n members (md refuses copies > members)? */
static bool
lcase_fits(const struct lcase *lc, unsigned n)
{
	return n >= lc->layout->min_members && lcase_copies(lc, n) <= n;
}

/* md's array size: raid0 n * M, raid1 M, raid10 (M / fc) * n / nc. */
static uint64_t
md_array_chunks(const struct lcase *lc, unsigned n, uint64_t rows)
{
	unsigned nc = lc->kind == 'n' ? lc->k : 1;
	unsigned fc = lc->kind == 'f' || lc->kind == 'o' ? lc->k : 1;

	switch (lc->kind) {
	case '0':
		return rows * n;
	case '1':
		return rows;
	default:
		return rows / fc * n / nc;
	}
}

/* ---- The grid model ---------------------------------------------------- */

static void
model_put(struct model *m, unsigned chunk, unsigned member, unsigned row)
{
	check_true(member < m->n && row < m->rows && chunk < MAX_CHUNKS,
		   "model puts chunk %u outside the grid (member %u, row %u)",
		   chunk, member, row);
	check_true(m->grid[member][row] == NO_CHUNK,
		   "model puts chunk %u on member %u row %u, taken by %d",
		   chunk, member, row, m->grid[member][row]);
	check_true(m->nr_places[chunk] < MAX_N, "model: chunk %u: too many",
		   chunk);
	m->grid[member][row] = (int)chunk;
	m->place[chunk][m->nr_places[chunk]++] =
		(struct raid_loc){ .member = member, .member_chunk = row };
	if (chunk >= m->nr_chunks) {
		m->nr_chunks = chunk + 1;
	}
}

/* RAID0: row by row, left to right. */
static void
model_raid0(struct model *m)
{
	unsigned chunk = 0;

	for (unsigned r = 0; r < m->rows; r++) {
		for (unsigned d = 0; d < m->n; d++) {
			model_put(m, chunk++, d, r);
		}
	}
}

/* RAID1: row r of every member is chunk r. */
static void
model_raid1(struct model *m)
{
	for (unsigned r = 0; r < m->rows; r++) {
		for (unsigned d = 0; d < m->n; d++) {
			model_put(m, r, d, r);
		}
	}
}

/* Near: nc consecutive cells per chunk, while a whole chunk still fits. */
static void
model_near(struct model *m, unsigned nc)
{
	unsigned free_cells = m->n * m->rows;
	unsigned d = 0, r = 0;

	for (unsigned chunk = 0; free_cells >= nc; chunk++) {
		for (unsigned j = 0; j < nc; j++) {
			model_put(m, chunk, d, r);
			free_cells--;
			if (++d == m->n) {
				d = 0;
				r++;
			}
		}
	}
}

/* Far: region 0 is raid0; region f is region 0 moved right by f members. */
static void
model_far(struct model *m, unsigned fc)
{
	/* md's calc_sectors(): array chunks, used chunks, stride. */
	unsigned array_chunks = m->rows / fc * m->n;
	unsigned used = (array_chunks * fc + m->n - 1) / m->n;
	unsigned stride = used / fc;
	unsigned chunk = 0;

	for (unsigned r = 0; r < stride; r++) {
		for (unsigned d = 0; d < m->n && chunk < array_chunks; d++) {
			model_put(m, chunk++, d, r);
		}
	}
	for (unsigned f = 1; f < fc; f++) {
		for (unsigned r = 0; r < stride; r++) {
			for (unsigned d = 0; d < m->n; d++) {
				int c = m->grid[d][r];

				if (c != NO_CHUNK) {
					model_put(m, c, (d + f) % m->n,
						  f * stride + r);
				}
			}
		}
	}
}

/* Offset: groups of fc rows; row j is the group's row 0 moved right by j. */
static void
model_offset(struct model *m, unsigned fc)
{
	unsigned chunk = 0;

	for (unsigned top = 0; top + fc <= m->rows; top += fc) {
		for (unsigned j = 0; j < fc; j++) {
			for (unsigned d = 0; d < m->n; d++) {
				model_put(m, chunk + d, (d + j) % m->n,
					  top + j);
			}
		}
		chunk += m->n;
	}
}

static void
model_build(struct model *m, const struct lcase *lc, unsigned n, unsigned rows)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->rows = rows;
	for (unsigned d = 0; d < MAX_N; d++) {
		for (unsigned r = 0; r < MAX_ROWS; r++) {
			m->grid[d][r] = NO_CHUNK;
		}
	}
	switch (lc->kind) {
	case '0':
		model_raid0(m);
		break;
	case '1':
		model_raid1(m);
		break;
	case 'n':
		model_near(m, lc->k);
		break;
	case 'f':
		model_far(m, lc->k);
		break;
	case 'o':
		model_offset(m, lc->k);
		break;
	}
}

/* ---- Geometries -------------------------------------------------------- */

static void
describe(const struct lcase *lc, unsigned n, uint64_t rows, unsigned shift)
{
	snprintf(where, sizeof(where),
		 "%s layout=%s members=%u member_chunks=%" PRIu64
		 " chunk_shift=%u",
		 lc->layout->name, lc->str ? lc->str : "(null)", n, rows,
		 shift);
}

/* Run setup() for one geometry and build its model. */
static void
open_case(struct tcase *t, const struct lcase *lc, unsigned n, unsigned rows,
	  unsigned shift)
{
	char err[256] = "";
	int r;

	describe(lc, n, rows, shift);
	t->lc = lc;
	t->n = n;
	t->rows = rows;
	t->shift = shift;
	memset(&t->g, 0, sizeof(t->g));
	t->g.nr_members = n;
	t->g.chunk_shift = shift;
	t->g.member_chunks = rows;
	r = lc->layout->setup(&t->g, lc->str, err, sizeof(err));
	check_eq((uint64_t)(int64_t)r, 0, "setup() refused: %s", err);
	model_build(&t->m, lc, n, rows);
}

typedef void (*case_fn)(const struct tcase *t);

/* Call fn for every layout, member count that fits, size and shift. */
static void
each_geometry(case_fn fn, const unsigned *rows, unsigned nr_rows,
	      const unsigned *shifts, unsigned nr_shifts)
{
	for (unsigned i = 0; i < NR_CASES; i++) {
		for (unsigned n = 1; n <= MAX_N; n++) {
			if (!lcase_fits(&cases[i], n)) {
				continue;
			}
			for (unsigned r = 0; r < nr_rows; r++) {
				for (unsigned s = 0; s < nr_shifts; s++) {
					open_case(&tc, &cases[i], n, rows[r],
						  shifts[s]);
					fn(&tc);
				}
			}
		}
	}
}

static const unsigned map_shifts[] = { 12, 16, 19 };

/* Every member size 0 .. TEST_ROWS, with the map's chunk shifts. */
static void
each_map_geometry(case_fn fn)
{
	unsigned rows[TEST_ROWS + 1];

	for (unsigned r = 0; r <= TEST_ROWS; r++) {
		rows[r] = r;
	}
	each_geometry(fn, rows, TEST_ROWS + 1, map_shifts,
		      sizeof(map_shifts) / sizeof(map_shifts[0]));
}

/* The grid map() draws: each chunk's places written into its cells. */
static void
code_grid(const struct tcase *t, int grid[MAX_N][MAX_ROWS])
{
	struct raid_loc locs[RAID_MAX_COPIES];

	for (unsigned d = 0; d < MAX_N; d++) {
		for (unsigned r = 0; r < MAX_ROWS; r++) {
			grid[d][r] = NO_CHUNK;
		}
	}
	for (uint64_t k = 0; k < t->g.array_chunks; k++) {
		unsigned nr = t->lc->layout->map(&t->g, k, locs);

		for (unsigned c = 0; c < nr; c++) {
			unsigned d = locs[c].member;
			uint64_t r = locs[c].member_chunk;

			check_true(d < t->n && r < t->rows,
				   "chunk %" PRIu64 " copy %u at member %u "
				   "chunk %" PRIu64 ": outside the members",
				   k, c, d, r);
			check_true(grid[d][r] == NO_CHUNK,
				   "chunk %" PRIu64 " copy %u at member %u "
				   "chunk %" PRIu64 ", already chunk %d's",
				   k, c, d, r, grid[d][r]);
			grid[d][r] = (int)k;
		}
	}
}

/* ---- (a) sizes --------------------------------------------------------- */

static void
check_sizes(const struct tcase *t)
{
	uint64_t want = md_array_chunks(t->lc, t->n, t->rows);
	char name[16] = "?";

	check_eq(t->g.array_chunks, want, "array_chunks");
	check_eq(t->m.nr_chunks, want, "model's chunks vs md's size");
	check_eq(t->g.copies, lcase_copies(t->lc, t->n), "copies");
	check_eq(t->g.nr_members, t->n, "setup() changed nr_members");
	check_eq(t->g.member_chunks, t->rows, "setup() changed member_chunks");
	check_eq(t->g.chunk_shift, t->shift, "setup() changed chunk_shift");
	t->lc->layout->layout_name(&t->g, name, sizeof(name));
	check_true(strcmp(name, t->lc->name) == 0,
		   "layout_name '%s', want '%s'", name, t->lc->name);
}

/* setup() sizes every array as md does and keeps the given geometry. */
static void
test_layout_setup_sizes_like_md(void **state)
{
	(void)state;
	each_map_geometry(check_sizes);
}

/* ---- (b) map() against the model --------------------------------------- */

static int
loc_cmp(const struct raid_loc *a, const struct raid_loc *b)
{
	if (a->member != b->member) {
		return a->member < b->member ? -1 : 1;
	}
	if (a->member_chunk != b->member_chunk) {
		return a->member_chunk < b->member_chunk ? -1 : 1;
	}
	return 0;
}

static void
loc_sort(struct raid_loc *v, unsigned nr)
{
	for (unsigned i = 1; i < nr; i++) {
		struct raid_loc x = v[i];
		unsigned j = i;

		for (; j > 0 && loc_cmp(&v[j - 1], &x) > 0; j--) {
			v[j] = v[j - 1];
		}
		v[j] = x;
	}
}

/* map() of chunk k: the model's places, as a set and in slot order. */
static void
check_chunk(const struct tcase *t, uint64_t k)
{
	struct raid_loc locs[RAID_MAX_COPIES + 1], got[MAX_N], want[MAX_N];
	unsigned nr, copies = lcase_copies(t->lc, t->n);

	for (unsigned i = 0; i <= RAID_MAX_COPIES; i++) {
		locs[i] = (struct raid_loc){ .member = 999,
					     .member_chunk = ~0ull };
	}
	nr = t->lc->layout->map(&t->g, k, locs);
	check_eq(nr, copies, "chunk %" PRIu64 ": places", k);
	check_eq(t->m.nr_places[k], copies, "chunk %" PRIu64 ": model", k);
	check_eq(locs[nr].member, 999, "chunk %" PRIu64 ": wrote past", k);
	for (unsigned c = 0; c < nr; c++) {
		check_true(locs[c].member < t->n &&
				   locs[c].member_chunk < t->rows,
			   "chunk %" PRIu64
			   " copy %u at member %u chunk %" PRIu64 ": outside",
			   k, c, locs[c].member, locs[c].member_chunk);
		for (unsigned e = 0; e < c; e++) {
			check_true(locs[e].member != locs[c].member,
				   "chunk %" PRIu64 ": copies %u and %u both "
				   "on member %u",
				   k, e, c, locs[c].member);
		}
		got[c] = locs[c];
		want[c] = t->m.place[k][c];
	}
	loc_sort(got, nr);
	loc_sort(want, nr);
	for (unsigned c = 0; c < nr; c++) {
		check_true(loc_cmp(&got[c], &want[c]) == 0,
			   "chunk %" PRIu64 ": places differ from the model "
			   "(sorted #%u: member %u chunk %" PRIu64 ", want "
			   "member %u chunk %" PRIu64 ")",
			   k, c, got[c].member, got[c].member_chunk,
			   want[c].member, want[c].member_chunk);
	}
	for (unsigned c = 0; c < nr; c++) {
		check_true(loc_cmp(&locs[c], &t->m.place[k][c]) == 0,
			   "chunk %" PRIu64 " slot %u: member %u chunk %" PRIu64
			   ", md's order wants member %u chunk %" PRIu64,
			   k, c, locs[c].member, locs[c].member_chunk,
			   t->m.place[k][c].member,
			   t->m.place[k][c].member_chunk);
	}
}

static void
check_map(const struct tcase *t)
{
	check_eq(t->g.array_chunks, t->m.nr_chunks, "array_chunks vs model");
	for (uint64_t k = 0; k < t->g.array_chunks; k++) {
		check_chunk(t, k);
	}
}

/* map() puts every chunk exactly where md's grid does, in md's slot order. */
static void
test_layout_map_matches_md_grid(void **state)
{
	(void)state;
	each_map_geometry(check_map);
}

/* ---- (c) injectivity --------------------------------------------------- */

static void
check_injective(const struct tcase *t)
{
	int grid[MAX_N][MAX_ROWS];
	uint64_t used = 0;

	code_grid(t, grid); /* fails on a cell written twice */
	for (unsigned d = 0; d < t->n; d++) {
		for (unsigned r = 0; r < t->rows; r++) {
			check_eq((uint64_t)(int64_t)grid[d][r],
				 (uint64_t)(int64_t)t->m.grid[d][r],
				 "member %u chunk %u holds", d, r);
			used += grid[d][r] != NO_CHUNK;
		}
	}
	check_eq(used, t->g.array_chunks * t->g.copies, "cells in use");
}

/* No member chunk holds two logical chunks, and unused cells stay unused. */
static void
test_layout_map_never_shares_a_cell(void **state)
{
	(void)state;
	each_map_geometry(check_injective);
}

/* ---- (d) the inverse ---------------------------------------------------- */

static void
check_unmap(const struct tcase *t)
{
	for (unsigned d = 0; d < t->n; d++) {
		for (unsigned r = 0; r < t->rows; r++) {
			uint64_t k = ~0ull;
			bool used = t->lc->layout->unmap(&t->g, d, r, &k);

			if (t->m.grid[d][r] == NO_CHUNK) {
				check_true(!used,
					   "member %u chunk %u holds nothing, "
					   "unmap says chunk %" PRIu64,
					   d, r, k);
			} else {
				check_true(used,
					   "member %u chunk %u holds chunk %d, "
					   "unmap says nothing",
					   d, r, t->m.grid[d][r]);
				check_eq(k, (uint64_t)t->m.grid[d][r],
					 "member %u chunk %u: unmap", d, r);
			}
		}
	}
}

/* unmap() finds, for every cell of md's grid, the chunk held there. */
static void
test_layout_unmap_inverts_map(void **state)
{
	(void)state;
	each_map_geometry(check_unmap);
}

/* ---- md's own pictures ------------------------------------------------- */

struct picture {
	struct lcase lc;
	unsigned n;
	unsigned rows;
	int cell[6][4]; /* [row][member], as md draws them */
};

static const struct picture pictures[] = {
	/* md(4) and the md wiki: n2 on 2, 3 and 4 drives. */
	{ { &raid10_layout, "n2", 'n', 2, "n2" },
	  2,
	  4,
	  { { 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 3 } } },
	{ { &raid10_layout, "n2", 'n', 2, "n2" },
	  3,
	  4,
	  { { 0, 0, 1 }, { 1, 2, 2 }, { 3, 3, 4 }, { 4, 5, 5 } } },
	{ { &raid10_layout, "n2", 'n', 2, "n2" },
	  4,
	  2,
	  { { 0, 0, 1, 1 }, { 2, 2, 3, 3 } } },
	/* f2 on 2 and 3 drives: the second half shifted by one device. */
	{ { &raid10_layout, "f2", 'f', 2, "f2" },
	  2,
	  6,
	  { { 0, 1 }, { 2, 3 }, { 4, 5 }, { 1, 0 }, { 3, 2 }, { 5, 4 } } },
	{ { &raid10_layout, "f2", 'f', 2, "f2" },
	  3,
	  6,
	  { { 0, 1, 2 },
	    { 3, 4, 5 },
	    { 6, 7, 8 },
	    { 2, 0, 1 },
	    { 5, 3, 4 },
	    { 8, 6, 7 } } },
	/* Neil Brown's o2 patch: "A B C D / D A B C / E F G H / H E F G". */
	{ { &raid10_layout, "o2", 'o', 2, "o2" },
	  4,
	  4,
	  { { 0, 1, 2, 3 }, { 3, 0, 1, 2 }, { 4, 5, 6, 7 }, { 7, 4, 5, 6 } } },
	/* Worked by hand from calc_sectors(): leftover rows stay unused. */
	{ { &raid10_layout, "n2", 'n', 2, "n2" },
	  3,
	  3,
	  { { 0, 0, 1 }, { 1, 2, 2 }, { 3, 3, NO_CHUNK } } },
	{ { &raid10_layout, "f2", 'f', 2, "f2" },
	  3,
	  5,
	  { { 0, 1, 2 },
	    { 3, 4, 5 },
	    { 2, 0, 1 },
	    { 5, 3, 4 },
	    { NO_CHUNK, NO_CHUNK, NO_CHUNK } } },
	{ { &raid10_layout, "o3", 'o', 3, "o3" },
	  3,
	  4,
	  { { 0, 1, 2 },
	    { 2, 0, 1 },
	    { 1, 2, 0 },
	    { NO_CHUNK, NO_CHUNK, NO_CHUNK } } },
	{ { &raid0_layout, NULL, '0', 1, "" },
	  3,
	  2,
	  { { 0, 1, 2 }, { 3, 4, 5 } } },
	{ { &raid1_layout, NULL, '1', 0, "" },
	  2,
	  3,
	  { { 0, 0 }, { 1, 1 }, { 2, 2 } } },
};

/* The model and map() both draw md's documented pictures exactly. */
static void
test_layout_model_draws_md_pictures(void **state)
{
	int grid[MAX_N][MAX_ROWS];

	(void)state;
	for (size_t i = 0; i < sizeof(pictures) / sizeof(pictures[0]); i++) {
		const struct picture *p = &pictures[i];

		open_case(&tc, &p->lc, p->n, p->rows, 16);
		code_grid(&tc, grid);
		for (unsigned r = 0; r < p->rows; r++) {
			for (unsigned d = 0; d < p->n; d++) {
				int want = p->cell[r][d];

				check_eq((uint64_t)(int64_t)tc.m.grid[d][r],
					 (uint64_t)(int64_t)want,
					 "picture %zu: model, member %u row %u",
					 i, d, r);
				check_eq((uint64_t)(int64_t)grid[d][r],
					 (uint64_t)(int64_t)want,
					 "picture %zu: map(), member %u row %u",
					 i, d, r);
			}
		}
	}
}

/* ---- (d) bad layouts --------------------------------------------------- */

static void
check_refused(const struct raid_layout *l, unsigned n, const char *str)
{
	struct raid_geom g = {
		.nr_members = n,
		.chunk_shift = 16,
		.member_chunks = 10,
	};
	char err[256] = "";
	int r;

	snprintf(where, sizeof(where), "%s layout=%s members=%u", l->name,
		 str ? str : "(null)", n);
	r = l->setup(&g, str, err, sizeof(err));
	check_eq((uint64_t)(int64_t)r, (uint64_t)(int64_t)-EINVAL,
		 "setup() accepted a bad layout");
	check_true(err[0] != '\0', "setup() refused without a reason");
}

/* setup() refuses foreign, malformed and oversized layouts with -EINVAL. */
static void
test_layout_setup_rejects_bad_layouts(void **state)
{
	static const char *const any[] = {
		"n2", "f2", "o2", "x2", "0", " ", "default",
	};
	static const char *const malformed[] = {
		"x2",  "n1",
		"n",   "n2x",
		"f1",  "o1",
		"f",   "o",
		"n0",  "2",
		"N2",  "n2f2",
		"n65", "n99999999999999999999999",
	};
	static const char kinds[] = "nfo";
	char str[16];

	(void)state;
	for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++) {
		for (unsigned n = 1; n <= MAX_N; n++) {
			check_refused(&raid0_layout, n, any[i]);
			check_refused(&raid1_layout, n, any[i]);
		}
	}
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		for (unsigned n = 2; n <= MAX_N; n++) {
			check_refused(&raid10_layout, n, malformed[i]);
		}
	}
	/* More copies than members: the default n2 on one member, too. */
	check_refused(&raid10_layout, 1, NULL);
	check_refused(&raid10_layout, 1, "");
	for (unsigned n = 1; n <= MAX_N; n++) {
		for (unsigned k = n + 1; k <= MAX_N + 1; k++) {
			for (unsigned j = 0; j < 3; j++) {
				snprintf(str, sizeof(str), "%c%u", kinds[j], k);
				check_refused(&raid10_layout, n, str);
			}
		}
	}
}

/* ---- Bytes ------------------------------------------------------------- */

/* Cut [off, off + len) at chunk boundaries, as the core does. */
static unsigned
split_range(uint64_t off, uint64_t len, unsigned shift, struct raid_piece *p,
	    unsigned max)
{
	uint64_t chunk = (uint64_t)1 << shift;
	unsigned nr = 0;

	while (len > 0) {
		uint64_t in = off & (chunk - 1);
		uint64_t n = len < chunk - in ? len : chunk - in;

		check_true(nr < max, "split: more than %u pieces", max);
		p[nr++] = (struct raid_piece){
			.chunk_no = off >> shift,
			.in_chunk = (uint32_t)in,
			.len = (uint32_t)n,
		};
		off += n;
		len -= n;
	}
	return nr;
}

#define MAX_PIECES (3 * MAX_N + 2)

static unsigned stamp[MAX_N][MAX_ROWS << MAX_SHIFT];
static unsigned stamp_gen;

/* One byte of one copy: where map() put it vs where the model does. */
static void
check_byte(const struct tcase *t, uint64_t b, unsigned c,
	   const struct raid_loc *loc, uint64_t mbyte)
{
	const struct raid_loc *want = &t->m.place[b >> t->shift][c];
	uint64_t want_byte = (want->member_chunk << t->shift) |
			     (b & (((uint64_t)1 << t->shift) - 1));

	if (loc->member != want->member || mbyte != want_byte) {
		check_true(false,
			   "array byte %" PRIu64 " copy %u: member %u "
			   "byte %" PRIu64 ", model: member %u byte %" PRIu64,
			   b, c, loc->member, mbyte, want->member, want_byte);
	}
	if (stamp[loc->member][mbyte] == stamp_gen) {
		check_true(false,
			   "array byte %" PRIu64 " copy %u: member %u "
			   "byte %" PRIu64 " already used by this range",
			   b, c, loc->member, mbyte);
	}
	stamp[loc->member][mbyte] = stamp_gen;
}

/* Split [off, off + len), map every piece, check every byte and copy. */
static void
check_range(const struct tcase *t, uint64_t off, uint64_t len)
{
	struct raid_piece p[MAX_PIECES];
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned nr = split_range(off, len, t->shift, p, MAX_PIECES);
	uint64_t b = off;

	stamp_gen++;
	for (unsigned i = 0; i < nr; i++) {
		unsigned copies =
			t->lc->layout->map(&t->g, p[i].chunk_no, locs);

		check_eq(copies, t->g.copies, "chunk %" PRIu64 ": places",
			 p[i].chunk_no);
		if (p[i].in_chunk + p[i].len > (1u << t->shift) ||
		    ((p[i].chunk_no << t->shift) | p[i].in_chunk) != b) {
			check_true(false,
				   "split [%" PRIu64 ", +%" PRIu64
				   "): bad piece %u",
				   off, len, i);
		}
		for (uint32_t x = 0; x < p[i].len; x++, b++) {
			for (unsigned c = 0; c < copies; c++) {
				uint64_t mbyte =
					(locs[c].member_chunk << t->shift) +
					p[i].in_chunk + x;

				check_byte(t, b, c, &locs[c], mbyte);
			}
		}
	}
	check_eq(b, off + len, "split [%" PRIu64 ", +%" PRIu64 ") covers", off,
		 len);
}

/* Every byte range within the first three stripes (n chunks each). */
static void
check_bytes(const struct tcase *t)
{
	uint64_t chunks =
		t->g.array_chunks < 3 * t->n ? t->g.array_chunks : 3 * t->n;
	uint64_t bytes = chunks << t->shift;

	check_eq(t->g.array_chunks, t->m.nr_chunks, "array_chunks vs model");
	for (uint64_t off = 0; off < bytes; off++) {
		for (uint64_t len = 1; off + len <= bytes; len++) {
			check_range(t, off, len);
		}
	}
}

/* Every byte of every small range lands, per copy, where the model says. */
static void
test_layout_bytes_match_grid_model(void **state)
{
	static const unsigned rows[] = { 7, 10 };
	static const unsigned shifts[] = { 0, 1, 2, 3 };

	(void)state;
	each_geometry(check_bytes, rows, 2, shifts, 4);
}

/* ---- Large members ----------------------------------------------------- */

/* The first and last 32 chunks of a huge geometry: in bounds, apart. */
static void
check_large(const struct lcase *lc, unsigned n, uint64_t rows)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	struct raid_geom g = {
		.nr_members = n,
		.chunk_shift = 19,
		.member_chunks = rows,
	};
	uint64_t want = md_array_chunks(lc, n, rows);
	char err[256] = "";
	int r;

	describe(lc, n, rows, 19);
	r = lc->layout->setup(&g, lc->str, err, sizeof(err));
	check_eq((uint64_t)(int64_t)r, 0, "setup() refused: %s", err);
	check_eq(g.array_chunks, want, "array_chunks");
	for (uint64_t j = 0; j < 64; j++) {
		uint64_t k = j < 32 ? j : want - 64 + j;
		unsigned nr = lc->layout->map(&g, k, locs);

		check_eq(nr, lcase_copies(lc, n), "chunk %" PRIu64 ": places",
			 k);
		for (unsigned c = 0; c < nr; c++) {
			check_true(locs[c].member < n &&
					   locs[c].member_chunk < rows,
				   "chunk %" PRIu64 " copy %u at member %u "
				   "chunk %" PRIu64 ": outside",
				   k, c, locs[c].member, locs[c].member_chunk);
			for (unsigned e = 0; e < c; e++) {
				check_true(locs[e].member != locs[c].member,
					   "chunk %" PRIu64 ": copies %u and "
					   "%u share a member",
					   k, e, c);
			}
		}
	}
}

/* A 2^40-chunk member sizes like md; its end chunks stay in bounds. */
static void
test_layout_map_large_members_in_bounds(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NR_CASES; i++) {
		for (unsigned n = 1; n <= MAX_N; n++) {
			if (lcase_fits(&cases[i], n)) {
				check_large(&cases[i], n,
					    ((uint64_t)1 << 40) + 5);
			}
		}
	}
}

/*
 * md's layout numbers (the superblock's `layout` field), both ways: mdadm's
 * encodings of nN (0x100 + N), fN ((N << 8) + 1) and oN (0x10000 +
 * (N << 8) + 1), 1 for RAID 0 (md's original zone layout, as mdadm 4.2
 * writes), 0 for RAID 1; every name back from its number; and
 * the numbers nbdraid does not place refused with a reason.
 */
static void
test_layout_md_numbers(void **state)
{
	static const struct {
		const struct raid_layout *l;
		const char *name;
		uint32_t md;
	} known[] = {
		{ &raid0_layout, "", 1 },
		{ &raid1_layout, "", 0 },
		{ &raid10_layout, "n2", 0x102 },
		{ &raid10_layout, "n3", 0x103 },
		{ &raid10_layout, "f2", 0x201 },
		{ &raid10_layout, "f3", 0x301 },
		{ &raid10_layout, "o2", 0x10201 },
		{ &raid10_layout, "o3", 0x10301 },
	};
	static const uint32_t refused[] = {
		0x202,	 /* near 2 and far 2 */
		0x101,	 /* one copy */
		0x10102, /* offset without far copies */
		0x20201, /* far sets of disks / far copies (mode 1) */
		0x40201, /* mode 2 */
		0x0,	 /* no copies */
	};
	char name[32], err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct raid_geom g = { .nr_members = 4,
				       .chunk_shift = 12,
				       .member_chunks = 8 };

		assert_int_equal(
			known[i].l->setup(&g, known[i].name, err, sizeof(err)),
			0);
		assert_int_equal(known[i].l->md_layout(&g), known[i].md);
		assert_int_equal(known[i].l->md_layout_name(known[i].md, name,
							    sizeof(name), err,
							    sizeof(err)),
				 0);
		assert_string_equal(name, known[i].name);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		assert_int_equal(raid10_layout.md_layout_name(refused[i], name,
							      sizeof(name), err,
							      sizeof(err)),
				 -EINVAL);
		assert_true(strlen(err) > 0);
	}
	assert_int_equal(raid1_layout.md_layout_name(2, name, sizeof(name), err,
						     sizeof(err)),
			 -EINVAL);
	assert_int_equal(raid0_layout.md_layout_name(3, name, sizeof(name), err,
						     sizeof(err)),
			 -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_layout_model_draws_md_pictures,
				       t_setup),
		cmocka_unit_test_setup(test_layout_setup_sizes_like_md,
				       t_setup),
		cmocka_unit_test_setup(test_layout_map_matches_md_grid,
				       t_setup),
		cmocka_unit_test_setup(test_layout_map_never_shares_a_cell,
				       t_setup),
		cmocka_unit_test_setup(test_layout_unmap_inverts_map, t_setup),
		cmocka_unit_test_setup(test_layout_setup_rejects_bad_layouts,
				       t_setup),
		cmocka_unit_test_setup(test_layout_bytes_match_grid_model,
				       t_setup),
		cmocka_unit_test_setup(test_layout_map_large_members_in_bounds,
				       t_setup),
		cmocka_unit_test_setup(test_layout_md_numbers, t_setup),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
