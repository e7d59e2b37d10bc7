/*
 * raid1.c: mirroring.  Every member holds the whole array at the same
 * offset; chunk k is member chunk k on every member.
 *
 * The chunk only sets the unit of read balancing: a read is cut at chunk
 * boundaries and each piece goes to the copy with the least outstanding I/O,
 * staying on the previous piece's member while the read is sequential
 * (copies.c), as md keeps a sequential reader on one disk.  Writes go to
 * every member.  The array is as large as the smallest member's data area
 * rounded down to 64 KiB (what mdadm --create records as Used Dev Size),
 * not to a chunk: the last chunk may be partial.
 */
#include <errno.h>
#include <stdio.h>

#include "layout.h"

static int
raid1_setup(struct raid_geom *g, const char *layout, char *err, size_t errlen)
{
	if (layout_refused("raid1", layout, err, errlen) < 0) {
		return -EINVAL;
	}
	g->copies = g->nr_members;
	g->near_copies = g->nr_members;
	g->far_copies = 1;
	g->far_offset = false;
	g->far_stride = 0;
	g->array_chunks = g->member_chunks;
	g->stripe_chunks = 1;
	return 0;
}

static bool
raid1_unmap(const struct raid_geom *g, unsigned member, uint64_t member_chunk,
	    uint64_t *chunk_no)
{
	(void)member;
	*chunk_no = member_chunk;
	return member_chunk < g->array_chunks;
}

static unsigned
raid1_map(const struct raid_geom *g, uint64_t chunk_no, struct raid_loc *locs)
{
	for (unsigned i = 0; i < g->nr_members; i++) {
		locs[i].member = i;
		locs[i].member_chunk = chunk_no;
	}
	return g->nr_members;
}

/* Every member is a copy: one is enough. */
static bool
raid1_enough(const struct raid_geom *g, uint64_t lost)
{
	uint64_t all =
		g->nr_members == 64 ? ~0ull : (1ull << g->nr_members) - 1;

	return (lost & all) != all;
}

/* clang-format off */
const struct raid_layout raid1_layout = {
	.name        = "raid1",
	.level       = 1,
	.min_members = 1,
	.size_unit   = 64u << 10, /* mdadm rounds RAID 1 members to 64K */
	.setup       = raid1_setup,
	.map         = raid1_map,
	.unmap       = raid1_unmap,
	.layout_name = layout_no_name,
	.md_layout   = layout_md_none,
	.md_layout_name = layout_md_name_none,
	.enough      = raid1_enough,
	.read        = copies_read,
	.write       = copies_write,
};
/* clang-format on */
