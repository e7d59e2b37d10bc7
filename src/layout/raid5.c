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
#include <string.h>

#include "layout.h"

enum raid5_algorithm { /* md's numbers (ALGORITHM_* in raid5.h) */
	RAID5_LEFT_ASYMMETRIC = 0,
	RAID5_RIGHT_ASYMMETRIC = 1,
	RAID5_LEFT_SYMMETRIC = 2,
	RAID5_RIGHT_SYMMETRIC = 3,
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
		snprintf(err, errlen,
			 "raid5 layout '%s': must be left-symmetric, left-asymmetric, right-symmetric or right-asymmetric",
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
	locs[0].chunk = stripe;
	return 1;
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

const struct raid_layout raid5_layout = {
	.name        = "raid5",
	.level       = 5,
	.min_members = 3,
	.setup       = raid5_setup,
	.map         = raid5_map,
	.layout_name = raid5_layout_name,
	.read        = layout_read_one,
	.write       = NULL, /* read-modify-write: next */
};
