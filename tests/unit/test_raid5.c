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

#include "helpers.h"
#include "layout.h"
#include "parity.h"

static const char *const names[4] = {
	"left-asymmetric", "right-asymmetric", "left-symmetric",
	"right-symmetric",
};

/* md's pictures, 4 members, 4 stripes: data chunk number, or -1 = parity. */
static const int pictures[4][4][4] = {
	{ /* left-asymmetric */
	  { 0, 1, 2, -1 }, { 3, 4, -1, 5 }, { 6, -1, 7, 8 }, { -1, 9, 10, 11 } },
	{ /* right-asymmetric */
	  { -1, 0, 1, 2 }, { 3, -1, 4, 5 }, { 6, 7, -1, 8 }, { 9, 10, 11, -1 } },
	{ /* left-symmetric */
	  { 0, 1, 2, -1 }, { 4, 5, -1, 3 }, { 8, -1, 6, 7 }, { -1, 9, 10, 11 } },
	{ /* right-symmetric */
	  { -1, 0, 1, 2 }, { 5, -1, 3, 4 }, { 7, 8, -1, 6 }, { 9, 10, 11, -1 } },
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
					assert_int_equal(raid5_parity_member(&g, s), m);
					continue;
				}
				assert_int_equal(raid5_layout.map(&g, want, &loc), 1);
				assert_int_equal(loc.member, m);
				assert_int_equal(loc.chunk, s);
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
						assert_int_equal(raid5_parity_member(&g, s), m);
						continue;
					}
					raid5_layout.map(&g, row[m], &loc);
					if (loc.member != m || loc.chunk != s) {
						print_error("%s n=%u chunk %lld: got (%u,%llu), want (%u,%llu)\n",
							    names[a], n, row[m], loc.member,
							    (unsigned long long)loc.chunk, m,
							    (unsigned long long)s);
						fail();
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
	assert_int_equal(raid5_layout.setup(&g, "n2", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid5 layout 'n2'"));
	g.nr_members = 2;
	assert_int_equal(raid5_layout.setup(&g, NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "raid5 needs at least 3 members, have 2");
}

static void
fill_random(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		p[i] = t_rand(256);
	}
}

/* parity_xor equals a byte loop: aligned or not, any length. */
static void
test_raid5_parity_xor_matches_naive(void **state)
{
	enum { MAXLEN = 9000 };
	uint8_t *src[6], *dst, *want;

	(void)state;
	for (unsigned i = 0; i < 6; i++) {
		src[i] = aligned_alloc(64, MAXLEN + 64);
	}
	dst = aligned_alloc(64, MAXLEN + 64);
	want = malloc(MAXLEN);
	for (unsigned iter = 0; iter < 400; iter++) {
		unsigned n = 1 + t_rand(6);
		size_t len = 1 + t_rand(MAXLEN);
		size_t skew = iter % 2 ? t_rand(33) : 0; /* unaligned half the time */
		void *s[6];

		for (unsigned i = 0; i < n; i++) {
			s[i] = src[i] + skew;
			fill_random(s[i], len);
		}
		for (size_t b = 0; b < len; b++) {
			uint8_t x = 0;

			for (unsigned i = 0; i < n; i++) {
				x ^= ((uint8_t *)s[i])[b];
			}
			want[b] = x;
		}
		assert_int_equal(parity_xor(dst + skew, s, n, len), 0);
		assert_memory_equal(dst + skew, want, len);
	}
	assert_int_equal(parity_xor(dst, (void **)src, 0, 16), -EINVAL);
	for (unsigned i = 0; i < 6; i++) {
		free(src[i]);
	}
	free(dst);
	free(want);
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

					raid5_layout.map(&g, s * (n - 1) + d, &loc);
					assert_int_not_equal(loc.member, p);
					fill_random(chunks[loc.member], CHUNK);
					data[nd++] = chunks[loc.member];
				}
				assert_int_equal(parity_xor(chunks[p], data, nd, CHUNK), 0);
				for (unsigned lost = 0; lost < n; lost++) {
					unsigned no = 0;

					for (unsigned m = 0; m < n; m++) {
						if (m != lost) {
							others[no++] = chunks[m];
						}
					}
					assert_int_equal(parity_xor(out, others, no, CHUNK), 0);
					assert_memory_equal(out, chunks[lost], CHUNK);
				}
			}
		}
	}
	for (unsigned i = 0; i < 8; i++) {
		free(chunks[i]);
	}
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raid5_matches_md_pictures),
		cmocka_unit_test(test_raid5_map_matches_model),
		cmocka_unit_test(test_raid5_setup_names_and_refusals),
		cmocka_unit_test(test_raid5_parity_xor_matches_naive),
		cmocka_unit_test(test_raid5_reconstructs_any_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
