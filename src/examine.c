/*
 * examine.c: one member's md superblock in words (raid_examine), for
 * `nbdraid examine` and anyone who asks.  Reads only, takes no lock (md's
 * --examine works on a member in use too).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "layout/layout.h"
#include "member.h"
#include "metadata.h"
#include "raid.h"
#include "util.h"

/* The array's size, from the level's own geometry; 0 if not ours. */
static uint64_t
array_bytes(const struct md_sb *sb)
{
	const struct raid_layout *l = layout_find(sb->level);
	uint64_t chunk = (uint64_t)sb->chunksize * RAID_SECTOR_BYTES;
	uint64_t used = sb->size * RAID_SECTOR_BYTES;
	struct raid_geom g = { .nr_members = sb->raid_disks };
	char name[64], err[160];

	if (!l || l->md_layout_name(sb->layout, name, sizeof(name), err,
				    sizeof(err)) < 0) {
		return 0;
	}
	if (l->size_unit) {
		return used; /* mirrors: one member's */
	}
	if (!is_power_of_2(chunk) || sb->raid_disks > RAID_MAX_MEMBERS) {
		return 0;
	}
	if (sb->level == 0) { /* md keeps no size: each member's data */
		used = sb->data_size * RAID_SECTOR_BYTES;
	}
	g.chunk_shift = log2_u64(chunk);
	g.member_chunks = used / chunk;
	if (l->setup(&g, name, err, sizeof(err)) < 0) {
		return 0;
	}
	return g.array_chunks << g.chunk_shift;
}

static void
layout_words(const struct md_sb *sb, char *buf, size_t len)
{
	const struct raid_layout *l = layout_find(sb->level);
	char err[160];

	if (!l ||
	    l->md_layout_name(sb->layout, buf, len, err, sizeof(err)) < 0) {
		snprintf(buf, len, "md layout %u", sb->layout);
	}
}

static void
fill(const struct meta_member *mm, struct raid_examine *ex)
{
	const struct md_sb *sb = &mm->sb;
	uint8_t raw[MD_SB_BYTES];

	memset(ex, 0, sizeof(*ex));
	ex->minor = md_sb_minor(sb->super_offset);
	ex->feature_map = sb->feature_map;
	memcpy(ex->uuid, sb->set_uuid, sizeof(ex->uuid));
	memcpy(ex->device_uuid, sb->device_uuid, sizeof(ex->device_uuid));
	memcpy(ex->name, sb->set_name, sizeof(ex->name));
	ex->ctime = sb->ctime & MD_TIME_SEC_MASK;
	ex->utime = sb->utime & MD_TIME_SEC_MASK;
	ex->level = sb->level;
	ex->md_layout = sb->layout;
	layout_words(sb, ex->layout, sizeof(ex->layout));
	ex->chunk_bytes = (uint64_t)sb->chunksize * RAID_SECTOR_BYTES;
	ex->raid_disks = sb->raid_disks;
	ex->array_bytes = array_bytes(sb);
	ex->used_sectors = sb->size;
	ex->data_offset = sb->data_offset;
	ex->data_sectors = sb->data_size;
	ex->super_offset = sb->super_offset;
	ex->recovery_offset = sb->recovery_offset;
	ex->bitmap_offset = sb->bitmap_offset;
	ex->bblog_offset = sb->bblog_offset;
	ex->bblog_sectors = sb->bblog_size;
	ex->events = sb->events;
	ex->resync_offset = sb->resync_offset;
	ex->checksum = sb->sb_csum;
	md_sb_encode(sb, raw); /* to learn the checksum it should have */
	ex->checksum_expected = md_sb_csum(raw, sb->max_dev);
	ex->dev_number = sb->dev_number;
	ex->role = md_sb_role(sb);
	ex->max_dev = sb->max_dev;
	memcpy(ex->roles, sb->dev_roles, sb->max_dev * sizeof(ex->roles[0]));
}

int
raid_examine(const char *path, struct raid_examine *ex, char *why,
	     size_t whylen)
{
	static _Thread_local struct meta_member mm;
	struct raid_member m;
	int r;

	r = member_open(&m, 0, path, false, true, RAID_IO_PSYNC);
	if (r < 0) {
		snprintf(why, whylen, "cannot open it (%s)", strerror(-r));
		member_close(&m); /* its path */
		return r;
	}
	r = meta_read(&m, &mm, why, whylen);
	if (r == 0 || r == -EBADMSG || r == -EUCLEAN) {
		fill(&mm, ex);
	} else if (r == -ENOENT) {
		snprintf(why, whylen, "no md superblock");
	}
	member_close(&m);
	return r;
}
