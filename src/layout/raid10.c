/*
 * raid10.c: md's RAID10, with near, far and offset copies.
 *
 * The layout string is md's: a letter and a copy count, "n2" by default.
 * The mapping follows md's __raid10_find_phys() with far_set_size = members
 * (the layout mdadm creates).  Logical chunk k, with n members, nc near
 * copies, fc far copies:
 *
 *   c = k * nc;  dev = c mod n;  row = c div n;  (offset: row *= fc)
 *   near copy j (0 <= j < nc): member (dev + j), wrapping to the next row;
 *   far copy f of each near copy: member + f*nc (mod n), row + f*stride.
 *
 * stride is one row for "o" (offset) layouts; for "f" (far) layouts it is
 * the member chunks in use divided by fc, so each far copy lives in its own
 * region of every member.  n2 over 3 members, f2 over 3, o2 over 3:
 *
 *   n2   m0 m1 m2     f2   m0 m1 m2     o2   m0 m1 m2
 *   r0   0  0  1      r0   0  1  2      r0   0  1  2
 *   r1   1  2  2      r1   3  4  5      r1   2  0  1
 *   r2   3  3  4      ..                r2   3  4  5
 *                     s+0  2  0  1      r3   5  3  4
 *                     s+1  5  3  4
 *
 * Copies need not divide the member count (md allows 2 copies on 3 or 5
 * members).  Array chunks = (member chunks / fc) * n / nc, as md's
 * raid10_size().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "layout.h"

/* Parse "n2" / "f3" / "o2" into g; NULL or "" means n2. */
static int
raid10_parse(struct raid_geom *g, const char *layout, char *err, size_t errlen)
{
	const char *s = (layout && *layout) ? layout : "n2";
	char *end;
	unsigned long k;

	if (s[0] != 'n' && s[0] != 'f' && s[0] != 'o') {
		snprintf(
			err, errlen,
			"raid10 layout '%s': must be n<copies>, f<copies> or o<copies>",
			s);
		return -EINVAL;
	}
	errno = 0;
	k = strtoul(s + 1, &end, 10);
	if (errno || end == s + 1 || *end || k < 2 || k > RAID_MAX_COPIES) {
		snprintf(
			err, errlen,
			"raid10 layout '%s': copies must be a number from 2 to %d",
			s, RAID_MAX_COPIES);
		return -EINVAL;
	}
	g->near_copies = s[0] == 'n' ? k : 1;
	g->far_copies = s[0] == 'n' ? 1 : k;
	g->far_offset = s[0] == 'o';
	return 0;
}

static int
raid10_setup(struct raid_geom *g, const char *layout, char *err, size_t errlen)
{
	uint64_t used;
	int r = raid10_parse(g, layout, err, errlen);

	if (r < 0) {
		return r;
	}
	g->copies = g->near_copies * g->far_copies;
	if (g->copies > g->nr_members) {
		snprintf(
			err, errlen,
			"raid10 layout '%s': %u copies need at least %u members, have %u",
			layout && *layout ? layout : "n2", g->copies, g->copies,
			g->nr_members);
		return -EINVAL;
	}
	g->array_chunks = (g->member_chunks / g->far_copies) * g->nr_members /
			  g->near_copies;
	/* md's calc_sectors(): chunks used per member, rounded up. */
	used = (g->array_chunks * g->copies + g->nr_members - 1) /
	       g->nr_members;
	g->far_stride = g->far_offset ? 1 : used / g->far_copies;
	g->stripe_chunks = g->nr_members / g->near_copies;
	if (g->stripe_chunks == 0) {
		g->stripe_chunks = 1;
	}
	return 0;
}

/* md's raid10_find_virt(), in chunks. */
static bool
raid10_unmap(const struct raid_geom *g, unsigned member, uint64_t member_chunk,
	     uint64_t *chunk_no)
{
	long dev = member, n = g->nr_members, near = g->near_copies;
	uint64_t row = member_chunk;

	if (g->far_offset) {
		dev -= (long)(row % g->far_copies) * near;
		row /= g->far_copies;
	} else {
		for (unsigned f = 0; row >= g->far_stride; f++) {
			if (f + 1 == g->far_copies) {
				return false; /* past the last far copy */
			}
			row -= g->far_stride;
			dev -= near;
		}
	}
	dev = ((dev % n) + n) % n;
	*chunk_no = (row * n + (uint64_t)dev) / near;
	return *chunk_no < g->array_chunks;
}

static unsigned
raid10_map(const struct raid_geom *g, uint64_t chunk_no, struct raid_loc *locs)
{
	uint64_t c = chunk_no * g->near_copies;
	uint64_t row = c / g->nr_members;
	unsigned dev = c % g->nr_members;
	unsigned slot = 0;

	if (g->far_offset) {
		row *= g->far_copies;
	}
	for (unsigned j = 0; j < g->near_copies; j++) {
		unsigned d = dev;
		uint64_t s = row;

		locs[slot++] = (struct raid_loc){ d, s };
		for (unsigned f = 1; f < g->far_copies; f++) {
			d = (d + g->near_copies) % g->nr_members;
			s += g->far_stride;
			locs[slot++] = (struct raid_loc){ d, s };
		}
		if (++dev == g->nr_members) {
			dev = 0;
			row++;
		}
	}
	return slot;
}

static void
raid10_layout_name(const struct raid_geom *g, char *buf, size_t len)
{
	if (g->far_copies == 1) {
		snprintf(buf, len, "n%u", g->near_copies);
	} else {
		snprintf(buf, len, "%c%u", g->far_offset ? 'o' : 'f',
			 g->far_copies);
	}
}

/* clang-format off */
/*
 * md's RAID 10 layout number (raid10.c setup_geo): near copies in bits
 * 0-7, far copies in bits 8-15, bit 16 the offset layout, bits 17-18 the
 * far-set mode (nbdraid places far copies across all members: mode 0).
 */
#define MD_R10_NEAR(l)	 ((l) & 0xff)
#define MD_R10_FAR(l)	 (((l) >> 8) & 0xff)
#define MD_R10_OFFSET	 0x10000u
#define MD_R10_FAR_SET(l) ((l) >> 17)

static uint32_t
raid10_md_layout(const struct raid_geom *g)
{
	return g->near_copies | g->far_copies << 8 |
	       (g->far_offset ? MD_R10_OFFSET : 0);
}

static int
raid10_md_layout_name(uint32_t l, char *name, size_t len, char *err,
		      size_t errlen)
{
	unsigned near = MD_R10_NEAR(l), far = MD_R10_FAR(l);
	bool offset = l & MD_R10_OFFSET;

	if (MD_R10_FAR_SET(l)) {
		snprintf(err, errlen,
			 "md raid10 layout %#x: far copies in sets of members (mode %u) are not placed by nbdraid",
			 l, MD_R10_FAR_SET(l));
		return -EINVAL;
	}
	if (near < 1 || far < 1 || near * far < 2 || (near > 1 && far > 1) ||
	    (offset && far < 2)) {
		snprintf(err, errlen,
			 "md raid10 layout %#x (near %u, far %u%s) is not one of nN, fN, oN",
			 l, near, far, offset ? ", offset" : "");
		return -EINVAL;
	}
	if (far == 1) {
		snprintf(name, len, "n%u", near);
	} else {
		snprintf(name, len, "%c%u", offset ? 'o' : 'f', far);
	}
	return 0;
}

/*
 * md's _enough(): every run of `copies` consecutive members, starting at
 * each multiple of the near copies, keeps one.  The near copies of a
 * chunk are consecutive members and each far copy is shifted by the near
 * count, so a chunk's places are always one such run.
 */
static bool
raid10_enough(const struct raid_geom *g, uint64_t lost)
{
	unsigned n = g->nr_members, first = 0;

	do {
		unsigned alive = 0, m = first;

		for (unsigned c = 0; c < g->copies; c++) {
			alive += !((lost >> m) & 1);
			m = (m + 1) % n;
		}
		if (!alive) {
			return false;
		}
		first = (first + g->near_copies) % n;
	} while (first != 0);
	return true;
}

const struct raid_layout raid10_layout = {
	.name        = "raid10",
	.level       = 10,
	.min_members = 2,
	.setup       = raid10_setup,
	.map         = raid10_map,
	.unmap       = raid10_unmap,
	.layout_name = raid10_layout_name,
	.md_layout   = raid10_md_layout,
	.md_layout_name = raid10_md_layout_name,
	.enough      = raid10_enough,
	.read        = copies_read,
	.write       = copies_write,
};
/* clang-format on */
