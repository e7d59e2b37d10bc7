/*
 * raid0.c: striping, md's RAID0 over equal-sized members.
 *
 * Logical chunk k lives on member k mod n, at member chunk k div n:
 *
 *            member 0   member 1   member 2
 *   row 0    chunk 0    chunk 1    chunk 2
 *   row 1    chunk 3    chunk 4    chunk 5
 *
 * Members larger than the smallest are used only up to the smallest's size
 * (md would add zones; metadata=none arrays stay uniform).  No redundancy.
 */
#include <errno.h>
#include <stdio.h>

#include "layout.h"

static int
raid0_setup(struct raid_geom *g, const char *layout, char *err, size_t errlen)
{
	if (layout_refused("raid0", layout, err, errlen) < 0) {
		return -EINVAL;
	}
	g->copies = 1;
	g->near_copies = g->far_copies = 1;
	g->far_offset = false;
	g->far_stride = 0;
	g->array_chunks = g->member_chunks * g->nr_members;
	g->stripe_chunks = g->nr_members;
	return 0;
}

/*
 * md's RAID 0 layout (ORIG, ALT_MULTIZONE) only tells how a second zone
 * is placed; nbdraid uses members in one zone (the smallest's size), where
 * every one of them places data alike.  nbdraid writes 1 (ORIG), as mdadm
 * 4.2 does for every RAID 0 it creates.
 */
static uint32_t
raid0_md_layout(const struct raid_geom *g)
{
	(void)g;
	return 1;
}

static int
raid0_md_layout_name(uint32_t md_layout, char *name, size_t len, char *err,
		     size_t errlen)
{
	if (md_layout > 2) {
		snprintf(err, errlen, "md raid0 layout %u is unknown",
			 md_layout);
		return -EINVAL;
	}
	if (len) {
		name[0] = '\0';
	}
	return 0;
}

static bool
raid0_unmap(const struct raid_geom *g, unsigned member, uint64_t member_chunk,
	    uint64_t *chunk_no)
{
	*chunk_no = member_chunk * g->nr_members + member;
	return member_chunk < g->member_chunks;
}

static unsigned
raid0_map(const struct raid_geom *g, uint64_t chunk_no, struct raid_loc *locs)
{
	locs[0].member = chunk_no % g->nr_members;
	locs[0].member_chunk = chunk_no / g->nr_members;
	return 1;
}

/* clang-format off */
const struct raid_layout raid0_layout = {
	.name        = "raid0",
	.level       = 0,
	.min_members = 1,
	.setup       = raid0_setup,
	.map         = raid0_map,
	.unmap       = raid0_unmap,
	.layout_name = layout_no_name,
	.md_layout   = raid0_md_layout,
	.md_layout_name = raid0_md_layout_name,
	.enough      = layout_enough_none,
	.read        = copies_read,
	.write       = copies_write,
};
/* clang-format on */
