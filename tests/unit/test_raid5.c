/*
 * test_raid5.c: md's RAID 5 placement for all four parity layouts, and
 * parity generation / single-chunk reconstruction on ISA-L.
 *
 * The placement is checked two ways, neither of them the code's formulas:
 * md's own 4-member pictures written out literally, and a model that fills
 * each stripe the way the layouts are described in words (parity walks left
 * or right one member per stripe; asymmetric data fills the other members
 * left to right, symmetric data starts just after the parity and wraps).
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "array.h"
#include "fixture.h"
#include "helpers.h"
#include "io/bounce.h"
#include "layout.h"
#include "mem_backend.h"
#include "model.h"
#include "parity.h"
#include "util.h"

static const char *const names[4] = {
	"left-asymmetric",
	"right-asymmetric",
	"left-symmetric",
	"right-symmetric",
};

/* md's pictures, 4 members, 4 stripes: data chunk number, or -1 = parity. */
static const int pictures[4][4][4] = {
	{ /* left-asymmetric */
	  { 0, 1, 2, -1 },
	  { 3, 4, -1, 5 },
	  { 6, -1, 7, 8 },
	  { -1, 9, 10, 11 } },
	{ /* right-asymmetric */
	  { -1, 0, 1, 2 },
	  { 3, -1, 4, 5 },
	  { 6, 7, -1, 8 },
	  { 9, 10, 11, -1 } },
	{ /* left-symmetric */
	  { 0, 1, 2, -1 },
	  { 4, 5, -1, 3 },
	  { 8, -1, 6, 7 },
	  { -1, 9, 10, 11 } },
	{ /* right-symmetric */
	  { -1, 0, 1, 2 },
	  { 5, -1, 3, 4 },
	  { 7, 8, -1, 6 },
	  { 9, 10, 11, -1 } },
};

static void
setup_geom(struct raid_geom *g, unsigned n, uint64_t member_chunks,
	   const char *layout)
{
	char err[256];

	memset(g, 0, sizeof(*g));
	g->nr_members = n;
	g->chunk_shift = 12;
	g->member_chunks = member_chunks;
	assert_int_equal(raid5_layout.setup(g, layout, err, sizeof(err)), 0);
}

/* Fill one stripe of the word model: row[m] = data chunk, -1 parity. */
static void
model_stripe(unsigned algo, unsigned n, uint64_t s, long long *row)
{
	bool left = algo == 0 || algo == 2, symmetric = algo >= 2;
	unsigned p = left ? n - 1 - s % n : s % n;
	long long k = (long long)s * (n - 1);

	row[p] = -1;
	if (symmetric) {
		for (unsigned i = 1; i < n; i++) {
			row[(p + i) % n] = k++;
		}
	} else {
		for (unsigned m = 0; m < n; m++) {
			if (m != p) {
				row[m] = k++;
			}
		}
	}
}

/* md's 4-member pictures, literally. */
static void
test_raid5_matches_md_pictures(void **state)
{
	struct raid_geom g;
	struct raid_loc loc;

	(void)state;
	for (unsigned a = 0; a < 4; a++) {
		setup_geom(&g, 4, 4, names[a]);
		for (unsigned s = 0; s < 4; s++) {
			for (unsigned m = 0; m < 4; m++) {
				int want = pictures[a][s][m];

				if (want < 0) {
					assert_int_equal(
						raid5_parity_member(&g, s), m);
					continue;
				}
				assert_int_equal(
					raid5_layout.map(&g, want, &loc), 1);
				assert_int_equal(loc.member, m);
				assert_int_equal(loc.member_chunk, s);
			}
		}
	}
}

/* Every layout, 3..8 members: map and parity agree with the word model. */
static void
test_raid5_map_matches_model(void **state)
{
	long long row[16];
	struct raid_geom g;
	struct raid_loc loc;

	(void)state;
	for (unsigned a = 0; a < 4; a++) {
		for (unsigned n = 3; n <= 8; n++) {
			setup_geom(&g, n, 3 * n + 1, names[a]);
			assert_int_equal(g.array_chunks, (3 * n + 1) * (n - 1));
			for (uint64_t s = 0; s < g.member_chunks; s++) {
				model_stripe(a, n, s, row);
				for (unsigned m = 0; m < n; m++) {
					if (row[m] < 0) {
						assert_int_equal(
							raid5_parity_member(&g,
									    s),
							m);
						continue;
					}
					raid5_layout.map(&g, row[m], &loc);
					if (loc.member != m ||
					    loc.member_chunk != s) {
						print_error(
							"%s n=%u chunk %lld: got (%u,%llu), want (%u,%llu)\n",
							names[a], n, row[m],
							loc.member,
							(unsigned long long)loc
								.member_chunk,
							m,
							(unsigned long long)s);
						fail();
					}
				}
			}
		}
	}
}

/* unmap: every place of a row, parity too, gives its stripe's first chunk;
 * rows past the members' end hold nothing. */
static void
test_raid5_unmap_gives_the_stripe(void **state)
{
	struct raid_geom g;
	uint64_t k;

	(void)state;
	for (unsigned a = 0; a < 4; a++) {
		for (unsigned n = 3; n <= 8; n++) {
			setup_geom(&g, n, 2 * n + 1, names[a]);
			for (uint64_t s = 0; s <= g.member_chunks; s++) {
				for (unsigned m = 0; m < n; m++) {
					bool used = raid5_layout.unmap(&g, m, s,
								       &k);

					assert_int_equal(used,
							 s < g.member_chunks);
					if (used) {
						assert_int_equal(k,
								 s * (n - 1));
					}
				}
			}
		}
	}
}

/* Default layout, aliases, names; refusals. */
static void
test_raid5_setup_names_and_refusals(void **state)
{
	static const char *const aliases[4] = { "la", "ra", "ls", "rs" };
	struct raid_geom g;
	char buf[32], err[256];

	(void)state;
	setup_geom(&g, 3, 4, NULL);
	raid5_layout.layout_name(&g, buf, sizeof(buf));
	assert_string_equal(buf, "left-symmetric");
	for (unsigned a = 0; a < 4; a++) {
		setup_geom(&g, 5, 4, aliases[a]);
		raid5_layout.layout_name(&g, buf, sizeof(buf));
		assert_string_equal(buf, names[a]);
	}
	memset(&g, 0, sizeof(g));
	g.nr_members = 3;
	assert_int_equal(raid5_layout.setup(&g, "n2", err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "raid5 layout 'n2'"));
	g.nr_members = 2;
	assert_int_equal(raid5_layout.setup(&g, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "raid5 needs at least 3 members, have 2");
}

/* The member holding data index j of stripe s. */
static unsigned
data_member_of(const struct raid_geom *g, uint64_t s, unsigned j)
{
	struct raid_loc loc;

	raid5_layout.map(g, s * (g->nr_members - 1) + j, &loc);
	return loc.member;
}

/* Any one member's chunk of a stripe is rebuilt from the others. */
static void
test_raid5_reconstructs_any_member(void **state)
{
	enum { CHUNK = 4096 };
	uint8_t *chunks[8], *out = aligned_alloc(64, CHUNK);
	struct raid_geom g;

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		chunks[i] = aligned_alloc(64, CHUNK);
	}
	for (unsigned a = 0; a < 4; a++) {
		for (unsigned n = 3; n <= 8; n++) {
			setup_geom(&g, n, 2 * n, names[a]);
			for (uint64_t s = 0; s < g.member_chunks; s++) {
				unsigned p = raid5_parity_member(&g, s);
				void *data[8], *others[8];
				unsigned nd = 0;

				/* Data chunks where map() puts them, then P. */
				for (unsigned d = 0; d < n - 1; d++) {
					struct raid_loc loc;

					raid5_layout.map(&g, s * (n - 1) + d,
							 &loc);
					assert_int_not_equal(loc.member, p);
					t_fill_random(chunks[loc.member],
						      CHUNK);
					data[nd++] = chunks[loc.member];
				}
				assert_int_equal(
					parity_xor(chunks[p], data, nd, CHUNK),
					0);
				for (unsigned lost = 0; lost < n; lost++) {
					unsigned no = 0;

					for (unsigned m = 0; m < n; m++) {
						if (m != lost) {
							others[no++] =
								chunks[m];
						}
					}
					assert_int_equal(parity_xor(out, others,
								    no, CHUNK),
							 0);
					assert_memory_equal(out, chunks[lost],
							    CHUNK);
				}
			}
		}
	}
	for (unsigned i = 0; i < 8; i++) {
		free(chunks[i]);
	}
	free(out);
}

/* ---- the data path, over memory members -------------------------------- */

#define MCHUNK FIXTURE_CHUNK

/*
 * md's rule, counted from the write's shape alone: the column is the
 * written range when it stays in one chunk, else whole chunks; RMW reads
 * parity + every touched chunk, RCW every chunk the write does not cover
 * over the whole column; RMW only when strictly fewer.
 */
static void
expected_reads(unsigned n, uint64_t start, uint64_t end, unsigned *reads,
	       unsigned *parity_reads)
{
	unsigned nd = n - 1, touched = 0, full = 0;
	bool one = start / MCHUNK == (end - 1) / MCHUNK;
	bool t[16], fu[16];

	for (unsigned j = 0; j < nd; j++) {
		uint64_t lo = j * MCHUNK, hi = lo + MCHUNK;

		t[j] = start < hi && end > lo;
		fu[j] = one ? t[j] : (start <= lo && end >= hi);
		touched += t[j];
		full += fu[j];
	}
	*parity_reads = 0;
	if (touched + 1 < nd - full) {
		*parity_reads = 1;
		for (unsigned j = 0; j < nd; j++) {
			reads[j] = t[j];
		}
	} else {
		for (unsigned j = 0; j < nd; j++) {
			reads[j] = !fu[j];
		}
	}
}

/* Every partial-write shape of a 3-, 4- and 6-member stripe: md's choice. */
static void
test_raid5_rmw_or_rcw_by_member_reads(void **state)
{
	struct fixture *f = *state;
	enum { G = 1024 }; /* shapes at 1K granularity: 4 per chunk */
	static const unsigned sizes[3] = { 3, 4, 6 };
	uint8_t *buf = malloc(8 * MCHUNK);

	for (unsigned si = 0; si < 3; si++) {
		unsigned n = sizes[si], nd = n - 1;
		uint64_t stripe_bytes = (uint64_t)nd * MCHUNK,
			 base = stripe_bytes;
		struct fixture_spec spec = { .level = 5,
					     .n = n,
					     .mem_size = 4 * MCHUNK };

		assert_int_equal(fixture_open(f, &spec), 0);
		for (uint64_t s = 0; s < stripe_bytes; s += G) {
			for (uint64_t e = s + G; e <= stripe_bytes; e += G) {
				unsigned want[16], pr;
				unsigned p = raid5_parity_member(&f->a->g, 1);

				t_fill_random(buf, e - s);
				fixture_reset_counts(f);
				/* Stripe 1: a stripe with parity off the last
				 * member. */
				assert_int_equal(raid_pwrite(f->a, buf, e - s,
							     base + s, 0),
						 0);
				expected_reads(n, s, e, want, &pr);
				assert_int_equal(
					mem_of(&f->m[p])->count[IO_READ], pr);
				for (unsigned j = 0; j < nd; j++) {
					unsigned m =
						data_member_of(&f->a->g, 1, j);

					if (mem_of(&f->m[m])->count[IO_READ] !=
					    want[j]) {
						print_error(
							"n=%u write [%llu,%llu): data %u read %u times, want %u\n",
							n,
							(unsigned long long)s,
							(unsigned long long)e,
							j,
							mem_of(&f->m[m])->count
								[IO_READ],
							want[j]);
						fail();
					}
				}
				fixture_check_parity(f);
			}
		}
	}
	free(buf);
}

/* Random unaligned writes, zeroes and trims: data and parity exact. */
static void
test_raid5_random_ops(void **state)
{
	struct fixture *f = *state;

	for (unsigned a = 0; a < 4; a++) {
		for (unsigned n = 3; n <= 6; n++) {
			struct fixture_spec s = { .level = 5,
						  .layout = names[a],
						  .n = n,
						  .mem_size = 6 * MCHUNK + 77 };
			uint64_t size;
			uint8_t *model, *buf;

			assert_int_equal(fixture_open(f, &s), 0);
			size = f->a->size;
			assert_int_equal(size, 6 * MCHUNK * (n - 1));
			model = calloc(1, size);
			buf = malloc(size);
			for (unsigned i = 0; i < 200; i++) {
				uint64_t off = t_rand(size);
				uint64_t len = 1 + t_rand(MIN(size - off,
							      3 * MCHUNK * n));
				unsigned op = t_rand(8);

				if (op < 4) {
					model_write(f->a, model, buf, len, off,
						    op == 0 ? RAID_FUA : 0);
				} else if (op < 6) {
					model_zero(f->a, model, len, off,
						   op == 4 ? RAID_MAY_TRIM : 0);
				} else if (op == 6) {
					/* Trim: whole stripes read zero, the
					 * rest is kept. */
					uint64_t sb =
						(uint64_t)(n - 1) * MCHUNK;
					uint64_t lo = ROUND_UP(off, MCHUNK);

					assert_int_equal(
						raid_trim(f->a, len, off, 0),
						0);
					for (uint64_t x =
						     (lo + sb - 1) / sb * sb;
					     x + sb <= off + len; x += sb) {
						memset(model + x, 0, sb);
					}
				} else {
					model_read(f->a, model, buf, len, off);
				}
			}
			model_read(f->a, model, buf, size, 0);
			fixture_check_parity(f);
			free(model);
			free(buf);
		}
	}
}

struct hammer {
	struct raid_array *a;
	unsigned seed;
};

static void *
hammer_thread(void *arg)
{
	struct hammer *h = arg;
	uint64_t st = h->seed * 2654435761u + 1, span = 2 * 3 * MCHUNK;
	uint8_t buf[3 * MCHUNK];

	for (unsigned i = 0; i < 150; i++) {
		uint64_t off = t_rand_next(&st) % span;
		uint64_t len =
			1 + t_rand_next(&st) % MIN(span - off, sizeof(buf));

		memset(buf, (int)(t_rand_next(&st) & 0xff), len);
		if (t_rand_next(&st) % 5 == 0) {
			raid_zero(h->a, len, off, 0);
		} else {
			raid_pwrite(h->a, buf, len, off, 0);
		}
	}
	return NULL;
}

/* Six threads of fn over a RAID 5 of spec s, members slowed (20 us a
 * request, to widen every window); then parity must be exact. */
static void
hammer_run(struct fixture *f, const struct fixture_spec *s, void *(*fn)(void *))
{
	pthread_t t[6];
	struct hammer h[6];

	assert_int_equal(fixture_open(f, s), 0);
	for (unsigned m = 0; m < 4; m++) {
		mem_of(&f->m[m])->delay_us = 20;
	}
	for (unsigned i = 0; i < 6; i++) {
		h[i] = (struct hammer){ f->a, i + 1 };
		pthread_create(&t[i], NULL, fn, &h[i]);
	}
	for (unsigned i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
	}
	fixture_check_parity(f);
}

/*
 * Threads overlapping on the same two stripes, members slowed to widen
 * every window: the stripe lock keeps each read-modify-write whole, so
 * parity is exact afterwards (without it this fails within a few runs).
 */
static void
test_raid5_concurrent_writes_keep_parity(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 4 * MCHUNK };

	hammer_run(f, &s, hammer_thread);
}

/* A full-stripe write reads nothing; FUA reaches data and parity. */
static void
test_raid5_full_stripe_write_reads_nothing(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 4 * MCHUNK };
	uint8_t buf[3 * MCHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(
		raid_pwrite(f->a, buf, sizeof(buf), 3 * MCHUNK, RAID_FUA), 0);
	for (unsigned m = 0; m < 4; m++) {
		assert_int_equal(mem_of(&f->m[m])->count[IO_READ], 0);
		assert_int_equal(mem_of(&f->m[m])->count[IO_WRITE], 1);
		assert_int_equal(mem_of(&f->m[m])->fua_writes, 1);
	}
	fixture_check_parity(f);
}

/*
 * Several whole stripes in one request: queued together and run once, so
 * each member gets one (vectored) write for all of them, nothing is read,
 * and parity is exact; with FUA on every member's write.
 */
static void
test_raid5_whole_stripes_one_write_per_member(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 8 * MCHUNK };
	uint64_t len = 4 * 3 * MCHUNK;
	uint8_t *buf = malloc(len), *back = malloc(len);

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, len);
	assert_int_equal(raid_pwrite(f->a, buf, len, 3 * MCHUNK, RAID_FUA), 0);
	for (unsigned m = 0; m < 4; m++) {
		assert_int_equal(mem_of(&f->m[m])->count[IO_READ], 0);
		assert_int_equal(mem_of(&f->m[m])->count[IO_WRITE], 1);
		assert_int_equal(mem_of(&f->m[m])->fua_writes, 1);
	}
	fixture_check_parity(f);
	assert_int_equal(raid_pread(f->a, back, len, 3 * MCHUNK, 0), 0);
	assert_memory_equal(back, buf, len);
	free(buf);
	free(back);
}

/*
 * A member that fails the write of a request of whole stripes: the stripes
 * queued are let go (no lock left held: the next writes of the same
 * stripes would hang), the member is failed, the request runs again
 * without it and succeeds; the data reads back exact (degraded).
 */
static void
test_raid5_whole_stripes_member_fails(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 8 * MCHUNK };
	uint64_t len = 6 * 3 * MCHUNK;
	uint8_t *buf = malloc(len), *back = malloc(len);

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, len);
	mem_of(&f->m[2])->fail_at = mem_of(&f->m[2])->ops + 1;
	mem_of(&f->m[2])->fail_always = true;
	mem_of(&f->m[2])->fail_errno = EIO;
	assert_int_equal(raid_pwrite(f->a, buf, len, 0, 0), 0);
	/* The same stripes again: their locks were let go. */
	assert_int_equal(raid_pwrite(f->a, buf, len, 0, 0), 0);
	assert_int_equal(raid_pread(f->a, back, len, 0, 0), 0);
	assert_memory_equal(back, buf, len);
	free(buf);
	free(back);
}

static void *
whole_hammer_thread(void *arg)
{
	struct hammer *h = arg;
	uint64_t st = h->seed * 2654435761u + 7, sb = 3 * MCHUNK;
	uint64_t span = 6 * sb;
	uint8_t *buf = malloc(span);

	for (unsigned i = 0; i < 120; i++) {
		uint64_t off, len;

		memset(buf, (int)(t_rand_next(&st) & 0xff), span);
		if (h->seed % 2) { /* whole stripes, 1 to 4 of them */
			off = t_rand_next(&st) % 3 * sb;
			len = (1 + t_rand_next(&st) % 4) * sb;
			len = MIN(len, span - off);
		} else { /* anything */
			off = t_rand_next(&st) % span;
			len = 1 + t_rand_next(&st) % MIN(span - off, 2 * sb);
		}
		raid_pwrite(h->a, buf, len, off, 0);
	}
	free(buf);
	return NULL;
}

/*
 * Writers of several whole stripes (which keep their stripes' locks until
 * their one run, taking all but the first without waiting) beside writers
 * of partial stripes, on the same few stripes, members slowed: no
 * deadlock, and parity exact afterwards.
 */
static void
test_raid5_whole_and_partial_writers_keep_parity(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 8 * MCHUNK };

	hammer_run(f, &s, whole_hammer_thread);
}

/*
 * Zero and trim with FUA are durable on every member they changed before
 * they return: whole stripes (fallocate, then a flush of each member) and
 * part of a stripe (zeros written with FUA, data and parity).
 */
static void
test_raid5_zero_trim_fua_sync_every_member(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 4 * MCHUNK };
	uint64_t sb = 3 * MCHUNK; /* one full stripe of data, 4 members */
	static const struct {
		bool trim;
		uint64_t off, len;
	} cases[] = {
		{ false, 3 * MCHUNK, 6 * MCHUNK }, /* zero, two whole stripes */
		{ true, 3 * MCHUNK, 6 * MCHUNK },  /* trim, two whole stripes */
		{ false, 3 * MCHUNK + 100, 5000 }, /* zero, part of a stripe */
	};

	for (unsigned c = 0; c < 3; c++) {
		assert_int_equal(fixture_open(f, &s), 0);
		fixture_reset_counts(f);
		assert_int_equal(cases[c].trim
					 ? raid_trim(f->a, cases[c].len,
						     cases[c].off, RAID_FUA)
					 : raid_zero(f->a, cases[c].len,
						     cases[c].off, RAID_FUA),
				 0);
		for (unsigned m = 0; m < 4; m++) {
			struct mem_member *mm = mem_of(&f->m[m]);
			unsigned changed =
				mm->count[IO_WRITE] + mm->count[IO_TRIM] +
				mm->count[IO_ZERO] + mm->count[IO_PUNCH];
			bool synced = mm->count[IO_FLUSH] > 0 ||
				      (mm->count[IO_WRITE] &&
				       mm->fua_writes == mm->count[IO_WRITE] &&
				       changed == mm->count[IO_WRITE]);

			if (changed && !synced) {
				print_error(
					"case %u: member %u changed (%u ops) but not synced (flushes %u, FUA writes %u)\n",
					c, m, changed, mm->count[IO_FLUSH],
					mm->fua_writes);
				fail();
			}
			/* Whole stripes: every member holds a row of them. */
			assert_true(cases[c].len % sb || changed > 0);
		}
		fixture_check_parity(f);
	}
}

/*
 * Fast zero that cannot be done without writing (any part of a stripe)
 * fails with ENOTSUP before anything changes, even when it also covers
 * whole stripes that could be zeroed.
 */
static void
test_raid5_fast_zero_partial_stripe_is_enotsup(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 5 * MCHUNK };
	uint64_t sb = 3 * MCHUNK;
	uint8_t *buf = malloc(4 * sb), *got = malloc(4 * sb);
	static const struct {
		uint64_t off, len;
	} cases[] = {
		{ 100, 5000 },	   /* inside one stripe */
		{ 0, 2 * MCHUNK }, /* two of three chunks */
		{ 3 * MCHUNK,
		  3 * MCHUNK + 1 }, /* a whole stripe and one byte */
		{ 3 * MCHUNK - 1, 3 * MCHUNK + 1 }, /* one byte and a stripe */
	};

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, 4 * sb);
	assert_int_equal(raid_pwrite(f->a, buf, 4 * sb, 0, 0), 0);
	for (unsigned c = 0; c < 4; c++) {
		fixture_reset_counts(f);
		assert_int_equal(raid_zero(f->a, cases[c].len, cases[c].off,
					   RAID_FAST_ZERO),
				 -ENOTSUP);
		for (unsigned m = 0; m < 4; m++) {
			struct mem_member *mm = mem_of(&f->m[m]);

			assert_int_equal(mm->count[IO_WRITE] +
						 mm->count[IO_ZERO] +
						 mm->count[IO_PUNCH] +
						 mm->count[IO_TRIM],
					 0);
		}
		assert_int_equal(raid_pread(f->a, got, 4 * sb, 0, 0), 0);
		assert_memory_equal(got, buf, 4 * sb);
	}
	/* Whole stripes are zeroed without a write. */
	assert_int_equal(raid_zero(f->a, 2 * sb, sb, RAID_FAST_ZERO), 0);
	memset(buf + sb, 0, 2 * sb);
	assert_int_equal(raid_pread(f->a, got, 4 * sb, 0, 0), 0);
	assert_memory_equal(got, buf, 4 * sb);
	fixture_check_parity(f);
	free(buf);
	free(got);
}

/*
 * A member that refuses to punch (its filesystem lacks the mode) while the
 * others punch: the stripe must stay consistent (the refuser's row is
 * zeroed another way), and a FUA trim still flushes what was punched.
 */
static void
test_raid5_trim_refused_by_one_member_keeps_parity(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 5 * MCHUNK };
	uint64_t sb = 3 * MCHUNK;
	uint8_t *buf = malloc(4 * sb), *got = malloc(4 * sb);

	for (unsigned refuser = 0; refuser < 4; refuser++) {
		assert_int_equal(fixture_open(f, &s), 0);
		t_fill_random(buf, 4 * sb);
		assert_int_equal(raid_pwrite(f->a, buf, 4 * sb, 0, 0), 0);
		mem_of(&f->m[refuser])->refuse_ops =
			1u << IO_TRIM | 1u << IO_PUNCH;
		fixture_reset_counts(f);
		assert_int_equal(raid_trim(f->a, 2 * sb, sb, RAID_FUA), 0);
		fixture_check_parity(f);
		assert_int_equal(raid_pread(f->a, got, 4 * sb, 0, 0), 0);
		/* Trimmed bytes read old or zero; the rest is untouched. */
		assert_memory_equal(got, buf, sb);
		assert_memory_equal(got + 3 * sb, buf + 3 * sb, sb);
		for (uint64_t x = sb; x < 3 * sb; x++) {
			assert_true(got[x] == buf[x] || got[x] == 0);
		}
		for (unsigned m = 0; m < 4; m++) {
			struct mem_member *mm = mem_of(&f->m[m]);

			if (m != refuser &&
			    mm->count[IO_TRIM] + mm->count[IO_PUNCH]) {
				assert_true(mm->count[IO_FLUSH] > 0);
			}
		}
		/* Zero with the refuser refusing every fallocate mode. */
		mem_of(&f->m[refuser])->refuse_ops |= 1u << IO_ZERO;
		assert_int_equal(raid_zero(f->a, sb, 0, RAID_MAY_TRIM), 0);
		fixture_check_parity(f);
		assert_int_equal(raid_pread(f->a, got, sb, 0, 0), 0);
		memset(buf, 0, sb);
		assert_memory_equal(got, buf, sb);
	}
	free(buf);
	free(got);
}

/*
 * The parity scratch of a large write (a 1M column of 3 data chunks: more
 * than BOUNCE_KEEP) is given back when the write is done, as the O_DIRECT
 * bounce buffer is: idle worker threads keep no large scratch.
 */
static void
test_raid5_parity_scratch_given_back(void **state)
{
	enum { CH = 1 << 20 };
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5,
				  .n = 4,
				  .mem_size = 2 * CH,
				  .chunk = CH };
	uint8_t *buf = malloc(3 * CH);

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, 3 * CH);
	/* Partial: reads old data, so the whole scratch is used. */
	assert_int_equal(raid_pwrite(f->a, buf, 3 * CH - 4096, 4096, 0), 0);
	assert_true(bounce_held(BOUNCE_PARITY) <= BOUNCE_KEEP);
	free(buf);
}

/* nbdraid check: zero mismatches on a good array, exactly the bad stripes. */
static void
test_raid5_check_counts_bad_stripes(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5,
				  .layout = "right-asymmetric",
				  .n = 4,
				  .mem_size = 8 * MCHUNK };
	struct raid_check_result res;
	uint8_t buf[9 * MCHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 1000, 0), 0);
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.unit, RAID_CHECK_STRIPE);
	assert_int_equal(res.units, 8);
	assert_int_equal(res.mismatched, 0);
	/* Flip bytes in stripes 2 (a data chunk) and 6 (on any member). */
	mem_of(&f->m[1])->data[2 * MCHUNK + 17] ^= 1;
	mem_of(&f->m[3])->data[6 * MCHUNK + MCHUNK - 1] ^= 0x80;
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.mismatched, 2);
	assert_int_equal(res.first[0], 2);
	assert_int_equal(res.first[1], 6);
}

/*
 * md's repair: parity rewritten from the data where a stripe disagrees
 * (the damaged data chunk stays as it reads: md cannot tell which is
 * wrong), counted as check counts; a check after it finds nothing.
 */
static void
test_raid5_repair_rewrites_parity(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 8 * MCHUNK };
	struct raid_check_result res;
	uint8_t buf[9 * MCHUNK], got[9 * MCHUNK];
	unsigned p = 0;

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 0, 0), 0);
	/* Stripe 1: damage its parity; stripe 2: a data byte. */
	p = raid5_parity_member(&f->a->g, 1);
	mem_of(&f->m[p])->data[MCHUNK + 5] ^= 0x11;
	p = raid5_parity_member(&f->a->g, 2);
	mem_of(&f->m[(p + 1) % 4])->data[2 * MCHUNK + 7] ^= 0x22;
	buf[2 * 3 * MCHUNK + 7] ^= 0x22; /* data index 0 of stripe 2 */
	fixture_reset_counts(f);
	assert_int_equal(raid_repair(f->a, &res, NULL, NULL), 0);
	assert_int_equal(res.mismatched, 2);
	assert_int_equal(res.first[0], 1);
	assert_int_equal(res.first[1], 2);
	/* Only the two parity chunks were written. */
	for (unsigned m = 0; m < 4; m++) {
		unsigned writes = mem_of(&f->m[m])->count[IO_WRITE];

		assert_int_equal(
			writes,
			(m == raid5_parity_member(&f->a->g, 1)) +
				(m == raid5_parity_member(&f->a->g, 2)));
	}
	fixture_check_parity(f);
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.mismatched, 0);
	assert_int_equal(raid_pread(f->a, got, sizeof(got), 0, 0), 0);
	assert_memory_equal(got, buf, sizeof(got));
}

/* md's numbers for the parity layouts, both ways; md's other two refused. */
static void
test_raid5_md_layout_numbers(void **state)
{
	struct raid_geom g;
	char name[32], err[160];

	(void)state;
	for (unsigned a = 0; a < 4; a++) {
		setup_geom(&g, 4, 4, names[a]);
		assert_int_equal(raid5_layout.md_layout(&g), a);
		assert_int_equal(raid5_layout.md_layout_name(a, name,
							     sizeof(name), err,
							     sizeof(err)),
				 0);
		assert_string_equal(name, names[a]);
	}
	assert_int_equal(raid5_layout.md_layout_name(4, name, sizeof(name), err,
						     sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "parity-first"));
	assert_int_equal(raid5_layout.md_layout_name(5, name, sizeof(name), err,
						     sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "parity-last"));
	assert_int_equal(raid5_layout.md_layout_name(16, name, sizeof(name),
						     err, sizeof(err)),
			 -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_raid5_md_layout_numbers,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_unmap_gives_the_stripe, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_raid5_matches_md_pictures,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_raid5_map_matches_model,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_setup_names_and_refusals, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_reconstructs_any_member, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_rmw_or_rcw_by_member_reads, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_random_ops, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_concurrent_writes_keep_parity, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_full_stripe_write_reads_nothing,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_whole_stripes_one_write_per_member,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_whole_stripes_member_fails, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_whole_and_partial_writers_keep_parity,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_check_counts_bad_stripes, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_repair_rewrites_parity, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_zero_trim_fua_sync_every_member,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_fast_zero_partial_stripe_is_enotsup,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_trim_refused_by_one_member_keeps_parity,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_raid5_parity_scratch_given_back, fixture_setup,
			fixture_teardown),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
