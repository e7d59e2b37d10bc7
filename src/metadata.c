/*
 * metadata.c: assemble an array from its members' md superblocks, and
 * write them back (metadata.h).
 *
 * DESIGN
 * Reading: each member's superblock is looked for where 1.2, 1.1 and 1.0
 * put it; one that decodes, and says it lives where it was found, counts;
 * of several, the newest (ctime), as mdadm chooses.  Superblock I/O goes
 * through the member's backend, like data, so memory members serve the
 * unit tests; writes carry FUA.
 *
 * Assembly, md's rules (md.c analyze_sbs, mdadm Assemble.c):
 *   1. every member has a superblock, or none (then -ENOENT: raw mode);
 *      none is damaged (checksum, padding, version);
 *   2. one array: the same set_uuid, and the same array-wide fields as
 *      the freshest (highest events) active member: level, layout,
 *      chunk, raid_disks, size, ctime ("doesn't match others");
 *   3. feature bits: unknown ones, and known ones nbdraid cannot honour,
 *      refused by name; a member being rebuilt (recovery_offset) takes
 *      its role as rebuilding, from that offset (md resumes there);
 *   4. roles from the freshest superblock's table, indexed by each
 *      member's dev_number; a member more than one event behind is stale
 *      and left out (force=true takes it back, as mdadm --force); spares
 *      are kept as spares; two members claiming one role are refused;
 *   5. a role with no member (failed, removed, stale, not given or not
 *      opened) is missing: array.c decides whether the array may start
 *      degraded (enough members, degraded=ok, dirty and degraded);
 *   6. the geometry (level, layout, chunk, size, data offsets) from the
 *      superblocks; a setting given that contradicts them is refused,
 *      naming both.
 */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/batch.h"
#include "layout/layout.h"
#include "log.h"
#include "metadata.h"
#include "util.h"

#define SB_MINORS 3 /* 1.0, 1.1, 1.2 */

uint64_t
meta_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One superblock-sized I/O at a sector, through the member's backend. */
static int
sb_io(struct raid_member *m, int op, void *buf, uint64_t sector)
{
	struct io_req r = { .m = m,
			    .op = op,
			    .flags = op == IO_WRITE ? IO_FUA : 0,
			    .buf = buf,
			    .len = MD_SB_BYTES,
			    .off = sector * RAID_SECTOR_BYTES };

	return m->be->submit_wait(&r, 1);
}

static void *
sb_buffer(void)
{
	void *buf = NULL;

	if (posix_memalign(&buf, IO_BUF_ALIGN, MD_SB_BYTES) != 0) {
		return NULL;
	}
	return buf;
}

/* The superblock of one minor version, if there is one where it says. */
static int
read_minor(struct raid_member *m, unsigned minor, void *buf,
	   struct meta_member *out, char *why, size_t whylen)
{
	uint64_t sector = md_sb_sector(minor, m->size);
	int r;

	if (sector == UINT64_MAX ||
	    (sector * RAID_SECTOR_BYTES + MD_SB_BYTES) > m->size) {
		return -ENOENT;
	}
	r = sb_io(m, IO_READ, buf, sector);
	if (r < 0) {
		snprintf(why, whylen, "reading the superblock: %s",
			 strerror(-r));
		return r;
	}
	r = md_sb_decode(buf, MD_SB_BYTES, &out->sb, why, whylen);
	if (r == 0 && out->sb.super_offset != sector) {
		/* Another version's, seen from here (1.1 vs 1.2 on small
		 * members): not this one. */
		r = -ENOENT;
	}
	out->sb_sector = sector;
	return r;
}

/* nbdraid's limits where md allows more: a chunk it can place. */
static int
check_chunk(const struct md_sb *sb, char *why, size_t whylen)
{
	uint64_t chunk = (uint64_t)sb->chunksize * RAID_SECTOR_BYTES;

	if (sb->raid_disks == 0) {
		snprintf(why, whylen, "raid_disks 0: an array of no members");
		return -EUCLEAN;
	}
	/* RAID 1 has no chunk (md ignores the field); levels nbdraid does
	 * not serve are refused by assembly, by level. */
	if (sb->level != 0 && sb->level != 5 && sb->level != 10) {
		return 0;
	}
	if (!chunk) {
		snprintf(why, whylen, "chunksize 0: raid%d needs a chunk",
			 sb->level);
	} else if (!is_power_of_2(chunk) && sb->level == 0) {
		snprintf(
			why, whylen,
			"chunksize %u sectors: not a power of two (md places such RAID 0 chunks by division, nbdraid by shifts: not served)",
			sb->chunksize);
	} else if (!is_power_of_2(chunk)) {
		snprintf(why, whylen,
			 "chunksize %u sectors: not a power of two (md "
			 "requires one for raid%d)",
			 sb->chunksize, sb->level);
	} else if (chunk < RAID_MIN_CHUNK || chunk > RAID_MAX_CHUNK) {
		snprintf(
			why, whylen,
			"chunksize %u sectors: nbdraid serves chunks from 4 KiB to 16 MiB",
			sb->chunksize);
	} else {
		return 0;
	}
	return -EUCLEAN;
}

/* The sectors md's bitmap spans, read at its place (feature 0x1). */
static int
bitmap_extent(struct raid_member *m, const struct md_sb *sb, uint64_t *sectors,
	      char *why, size_t whylen)
{
	void *buf = sb_buffer();
	char w[160];
	int r;

	if (!buf) {
		return -ENOMEM;
	}
	r = sb_io(m, IO_READ, buf, sb->super_offset + sb->bitmap_offset);
	if (r < 0) {
		snprintf(why, whylen, "reading the bitmap: %s", strerror(-r));
	} else if ((r = md_bitmap_sectors(buf, MD_SB_BYTES, sb->set_uuid,
					  sectors, w, sizeof(w))) < 0) {
		snprintf(why, whylen, "bitmap_offset %d: %s", sb->bitmap_offset,
			 w);
		r = -EUCLEAN;
	}
	free(buf);
	return r;
}

/*
 * May nbdraid write by this superblock?  Every place it names lies in the
 * member and apart (md_sb_check_geometry, md's bitmap measured where it
 * is), and a chunk nbdraid places.  0, or -EUCLEAN (why set).
 */
static int
validate(struct raid_member *m, const struct md_sb *sb, char *why,
	 size_t whylen)
{
	uint64_t bitmap = 0;
	int r = check_chunk(sb, why, whylen);

	if (r == 0) {
		r = md_sb_check_geometry(sb, m->size, 0, why, whylen);
	}
	if (r == 0 && (sb->feature_map & MD_FEATURE_BITMAP_OFFSET)) {
		r = bitmap_extent(m, sb, &bitmap, why, whylen);
		if (r == 0) {
			r = md_sb_check_geometry(sb, m->size, bitmap, why,
						 whylen);
		}
	}
	return r;
}

int
meta_read(struct raid_member *m, struct meta_member *out, char *why,
	  size_t whylen)
{
	static const unsigned order[SB_MINORS] = { 2, 1, 0 };
	struct meta_member *found = NULL, *try = NULL;
	void *buf = sb_buffer();
	int err = -ENOENT, r;

	try = malloc(sizeof(*try));
	if (!buf || !try) {
		free(buf);
		free(try);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < SB_MINORS; i++) {
		char w[160];

		r = read_minor(m, order[i], buf, try, w, sizeof(w));
		if (r == -ENOENT) {
			continue;
		}
		if (r < 0) {
			if (err == -ENOENT) {
				err = r;
				snprintf(why, whylen, "%s", w);
				*out = *try; /* a damaged one, for examine */
			}
			continue;
		}
		/* Several: the newest, as mdadm guesses the type. */
		if (!found || (try->sb.ctime & MD_TIME_SEC_MASK) >
				      (out->sb.ctime & MD_TIME_SEC_MASK)) {
			*out = *try;
			found = out;
		}
	}
	free(buf);
	free(try);
	return found ? validate(m, &out->sb, why, whylen) : err;
}

int
meta_write(struct raid_member *members, const struct meta_member *mm,
	   unsigned nr)
{
	uint8_t *bufs = NULL;
	struct batch b;
	int r = 0;

	if (posix_memalign((void **)&bufs, IO_BUF_ALIGN,
			   (size_t)nr * MD_SB_BYTES) != 0) {
		return -ENOMEM;
	}
	batch_init(&b);
	for (unsigned i = 0; i < nr && r == 0; i++) {
		uint8_t *buf = bufs + (size_t)i * MD_SB_BYTES;

		md_sb_encode(&mm[i].sb, buf);
		r = batch_write(&b, &members[i], buf, MD_SB_BYTES,
				mm[i].sb_sector * RAID_SECTOR_BYTES, IO_FUA);
	}
	if (r == 0) {
		r = batch_run(&b);
	}
	batch_fini(&b);
	free(bufs);
	return r;
}

int
meta_write_one(struct raid_member *m, const struct meta_member *mm)
{
	void *buf = sb_buffer();
	int r;

	if (!buf) {
		return -ENOMEM;
	}
	md_sb_encode(&mm->sb, buf);
	r = sb_io(m, IO_WRITE, buf, mm->sb_sector);
	free(buf);
	return r;
}

void
meta_free(struct raid_meta *meta)
{
	if (!meta) {
		return;
	}
	pthread_mutex_destroy(&meta->lock);
	free(meta->members);
	free(meta);
}

/* ---- assembly ---------------------------------------------------------- */

/* A UUID as mdadm prints it (4:4:4:4 bytes in hex), for messages. */
static const char *
uuid_str(const uint8_t *u, char *buf)
{
	char *p = buf;

	for (unsigned i = 0; i < 16; i++) {
		p += sprintf(p, "%s%02x", i && i % 4 == 0 ? ":" : "", u[i]);
	}
	return buf;
}

/* What each given member turned out to be. */
enum found_as {
	FOUND_ACTIVE,
	FOUND_SPARE,
	FOUND_STALE,
	FOUND_REBUILDING,
	FOUND_FAILED,  /* the freshest table says faulty */
	FOUND_REMOVED, /* ...says removed, where it thinks itself active */
	FOUND_ABSENT,  /* given, but could not be opened */
};

struct found {
	struct meta_member mm;
	enum found_as as;
	unsigned role;
};

struct assembly {
	const struct raid_config *cfg;
	struct raid_member *m;
	unsigned nr;
	unsigned cap; /* room in m: the array's roles must fit */
	struct found *f;
	unsigned freshest; /* index of the freshest active member */
	const struct raid_layout *layout;
};

/* Read every member; all have a superblock, none, or it is refused. */
static int
read_all(struct assembly *as)
{
	unsigned with = 0, without = 0, first_without = 0;
	char why[160];
	int r;

	for (unsigned i = 0; i < as->nr; i++) {
		if (!member_alive(&as->m[i])) {
			as->f[i].as = FOUND_ABSENT; /* could not be opened */
			continue;
		}
		r = meta_read(&as->m[i], &as->f[i].mm, why, sizeof(why));
		if (r == -ENOENT) {
			if (!without++) {
				first_without = i;
			}
			continue;
		}
		if (r < 0) {
			raid_error("member %s: %s", as->m[i].path, why);
			return r;
		}
		with++;
	}
	if (!with) {
		return -ENOENT;
	}
	if (without) {
		raid_error(
			"member %s: no md superblock, where the other members have one",
			as->m[first_without].path);
		return -EINVAL;
	}
	return 0;
}

/* Feature bits nbdraid cannot honour, refused by name. */
static int
check_features(const struct raid_member *m, const struct md_sb *sb)
{
	uint32_t ok = MD_FEATURE_BITMAP_OFFSET | MD_FEATURE_RECOVERY_OFFSET |
		      MD_FEATURE_RAID0_LAYOUT;
	uint32_t bad = sb->feature_map & ~ok;

	if (!bad) {
		return 0;
	}
	if (bad & ~(uint32_t)MD_FEATURE_ALL) {
		raid_error(
			"member %s: md superblock has feature bits %#x that nbdraid does not know",
			m->path, bad & ~(uint32_t)MD_FEATURE_ALL);
		return -EINVAL;
	}
	raid_error(
		"member %s: md superblock feature '%s' (%#x) is not supported by nbdraid",
		m->path, md_feature_name(bad & -bad), bad & -bad);
	return -EOPNOTSUPP;
}

/* The freshest member that is active in its own superblock. */
static int
find_freshest(struct assembly *as)
{
	bool any = false;

	for (unsigned i = 0; i < as->nr; i++) {
		const struct md_sb *sb = &as->f[i].mm.sb;
		uint16_t role = md_sb_role(sb);

		if (role >= MD_ROLE_MAX || as->f[i].as == FOUND_ABSENT) {
			continue;
		}
		if (!any || sb->events > as->f[as->freshest].mm.sb.events) {
			as->freshest = i;
			any = true;
		}
	}
	if (!any) {
		raid_error(
			"no member is an active member of its array (spares only)");
		return -EINVAL;
	}
	return 0;
}

/* mdadm's compare_super1: the array-wide fields must agree. */
static int
check_same_array(struct assembly *as, unsigned i)
{
	const struct md_sb *a = &as->f[as->freshest].mm.sb,
			   *b = &as->f[i].mm.sb;
	const char *what = NULL;
	char ua[40], ub[40];

	if (memcmp(a->set_uuid, b->set_uuid, 16) != 0) {
		raid_error(
			"member %s: of array UUID %s (%s), but member %s is of array UUID %s (%s)",
			as->m[i].path, uuid_str(b->set_uuid, ub), b->set_name,
			as->m[as->freshest].path, uuid_str(a->set_uuid, ua),
			a->set_name);
		return -EINVAL;
	}
	if (a->level != b->level) {
		what = "level";
	} else if (a->layout != b->layout) {
		what = "layout";
	} else if (a->chunksize != b->chunksize) {
		what = "chunk size";
	} else if (a->raid_disks != b->raid_disks) {
		what = "raid devices";
	} else if (a->size != b->size) {
		what = "used device size";
	} else if ((a->ctime & MD_TIME_SEC_MASK) !=
		   (b->ctime & MD_TIME_SEC_MASK)) {
		what = "creation time";
	}
	if (what) {
		raid_error(
			"member %s: superblock does not match member %s's (%s differs)",
			as->m[i].path, as->m[as->freshest].path, what);
		return -EINVAL;
	}
	return 0;
}

/* What member i is, by the freshest superblock's role table. */
static void
classify(struct assembly *as, unsigned i)
{
	const struct md_sb *fresh = &as->f[as->freshest].mm.sb;
	const struct md_sb *sb = &as->f[i].mm.sb;
	uint16_t role = sb->dev_number < fresh->max_dev
				? fresh->dev_roles[sb->dev_number]
				: MD_ROLE_SPARE;
	struct found *f = &as->f[i];

	if (f->as == FOUND_ABSENT) {
		return;
	}
	f->role = role;
	if (role == MD_ROLE_FAULTY) {
		f->as = FOUND_FAILED;
	} else if (role >= fresh->raid_disks) {
		f->as = md_sb_role(sb) < sb->raid_disks ? FOUND_REMOVED
							: FOUND_SPARE;
	} else if (sb->events + 1 < fresh->events && !as->cfg->force) {
		f->as = FOUND_STALE;
	} else if (sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) {
		f->as = FOUND_REBUILDING;
	} else {
		f->as = FOUND_ACTIVE;
	}
}

/* Roles to members: each role once; say what is left out and why. */
static int
assign_roles(struct assembly *as, int *by_role)
{
	const struct md_sb *fresh = &as->f[as->freshest].mm.sb;
	char u[40];

	for (unsigned r = 0; r < fresh->raid_disks; r++) {
		by_role[r] = -1;
	}
	for (unsigned i = 0; i < as->nr; i++) {
		struct found *f = &as->f[i];

		switch (f->as) {
		case FOUND_ABSENT:
			continue;
		case FOUND_FAILED:
			raid_error(
				"member %s: recorded as failed in the array's superblocks (its events %llu, the array's %llu): left out",
				as->m[i].path,
				(unsigned long long)f->mm.sb.events,
				(unsigned long long)fresh->events);
			continue;
		case FOUND_REMOVED:
			raid_error(
				"member %s: recorded as removed from the array (its events %llu, the array's %llu): left out",
				as->m[i].path,
				(unsigned long long)f->mm.sb.events,
				(unsigned long long)fresh->events);
			continue;
		case FOUND_SPARE:
			raid_debug("member %s: a spare (role %#x)",
				   as->m[i].path, f->role);
			continue;
		case FOUND_STALE:
			raid_error(
				"member %s: stale (events %llu, the array is at %llu): left out (force=true takes it back)",
				as->m[i].path,
				(unsigned long long)f->mm.sb.events,
				(unsigned long long)fresh->events);
			continue;
		case FOUND_REBUILDING:
			raid_error(
				"member %s: role %u was being rebuilt (recovery offset %llu sectors): recovery resumes there",
				as->m[i].path, f->role,
				(unsigned long long)f->mm.sb.recovery_offset);
			break;
		case FOUND_ACTIVE:
			break;
		}
		if (by_role[f->role] >= 0) {
			raid_error(
				"members %s and %s both claim role %u of array %s",
				as->m[by_role[f->role]].path, as->m[i].path,
				f->role, uuid_str(fresh->set_uuid, u));
			return -EINVAL;
		}
		by_role[f->role] = i;
	}
	return 0;
}

/*
 * The roles with no member: *missing, and of those the ones the freshest
 * role table still counts in sync (*unrecorded: a member not given, or not
 * opened; the rest were recorded failed or removed).  Whether the array
 * may start so is the caller's (array.c: start_degraded).
 */
static void
find_missing(struct assembly *as, const int *by_role, uint64_t *missing,
	     uint64_t *unrecorded)
{
	const struct md_sb *fresh = &as->f[as->freshest].mm.sb;

	*missing = *unrecorded = 0;
	for (unsigned r = 0; r < fresh->raid_disks; r++) {
		if (by_role[r] >= 0) {
			continue;
		}
		*missing |= 1ull << r;
		for (uint32_t d = 0; d < fresh->max_dev; d++) {
			if (fresh->dev_roles[d] == r) {
				*unrecorded |= 1ull << r;
			}
		}
	}
}

/* A setting given and the superblocks' value must agree. */
static int
agree(const char *key, bool given, unsigned long long want,
      unsigned long long have, const char *unit)
{
	if (!given || want == have) {
		return 0;
	}
	raid_error("%s=%llu%s given, but the superblocks say %llu%s", key, want,
		   unit, have, unit);
	return -EINVAL;
}

/* Level, layout and chunk from the freshest superblock. */
static int
geometry_kind(struct assembly *as, struct meta_geometry *geo)
{
	const struct md_sb *sb = &as->f[as->freshest].mm.sb;
	const struct raid_config *cfg = as->cfg;
	char err[160];

	as->layout = layout_find(sb->level);
	if (!as->layout) {
		raid_error(
			"md raid%d is not a level nbdraid serves (0, 1, 5, 10)",
			sb->level);
		return -EOPNOTSUPP;
	}
	if (as->layout->md_layout_name(sb->layout, geo->layout,
				       sizeof(geo->layout), err,
				       sizeof(err)) < 0) {
		raid_error("%s", err);
		return -EOPNOTSUPP;
	}
	geo->level = sb->level;
	/* RAID 1 has no chunk: md ignores the field, and so does nbdraid
	 * (validate checked it for the levels that have one). */
	geo->chunk_bytes = as->layout->size_unit ? 0
						 : (uint64_t)sb->chunksize *
							   RAID_SECTOR_BYTES;
	if (cfg->level >= 0 && cfg->level != sb->level) {
		raid_error("level=%d given, but the superblocks say raid%d",
			   cfg->level, sb->level);
		return -EINVAL;
	}
	if (cfg->layout && *cfg->layout &&
	    strcmp(cfg->layout, geo->layout) != 0) {
		raid_error("layout=%s given, but the superblocks say %s",
			   cfg->layout, geo->layout);
		return -EINVAL;
	}
	return agree("chunk",
		     raid_config_is_set(cfg, "chunk") && geo->chunk_bytes,
		     cfg->chunk_bytes, geo->chunk_bytes, "");
}

/*
 * Sizes and offsets, per role.  RAID 0 keeps no size: each member is used
 * as far as its data_size, in chunks; nbdraid serves one zone, so they
 * must all be the same.
 */
static int
geometry_sizes(struct assembly *as, const int *by_role,
	       struct meta_geometry *geo)
{
	const struct md_sb *fresh = &as->f[as->freshest].mm.sb;
	const struct raid_config *cfg = as->cfg;
	int r;

	int first = -1;

	geo->member_bytes = fresh->size * RAID_SECTOR_BYTES;
	for (unsigned role = 0; role < fresh->raid_disks; role++) {
		int i = by_role[role];
		const struct md_sb *sb = &as->f[i < 0 ? 0 : i].mm.sb;
		uint64_t data = sb->data_size * RAID_SECTOR_BYTES;

		if (i < 0) {
			continue; /* missing: placed like the first present */
		}
		if (fresh->level == 0) {
			data = ROUND_DOWN(data, geo->chunk_bytes);
			if (!data) {
				/* 0 would read as "all of the member". */
				raid_error(
					"member %s: data_size %llu sectors: less than one chunk (%llu bytes)",
					as->m[i].path,
					(unsigned long long)sb->data_size,
					(unsigned long long)geo->chunk_bytes);
				return -EUCLEAN;
			}
			if (first >= 0 && data != geo->member_bytes) {
				raid_error(
					"member %s: md raid0 over members of different sizes (more than one zone) is not supported",
					as->m[i].path);
				return -EOPNOTSUPP;
			}
			geo->member_bytes = data;
		} else if (data < geo->member_bytes) {
			raid_error(
				"member %s: data size %llu is smaller than the array's used size %llu",
				as->m[i].path, (unsigned long long)data,
				(unsigned long long)geo->member_bytes);
			return -EINVAL;
		}
		geo->data_offset[role] = sb->data_offset * RAID_SECTOR_BYTES;
		r = agree("data-offset", raid_config_is_set(cfg, "data-offset"),
			  cfg->data_offset, geo->data_offset[role], " bytes");
		if (r < 0) {
			return r;
		}
		first = first < 0 ? (int)role : first;
	}
	if (first < 0) {
		/* Every member a spare, failed, removed or left out: no
		 * role has one (and no data offset to place the rest by). */
		raid_error(
			"no member holds a role of the array (%u roles): the freshest superblock's role table (member %s) names only spares, failed or removed members, or none was given",
			fresh->raid_disks, as->m[as->freshest].path);
		return -EINVAL;
	}
	for (unsigned role = 0; role < fresh->raid_disks; role++) {
		if (by_role[role] < 0) {
			geo->data_offset[role] = geo->data_offset[first];
		}
	}
	return agree("member-size", cfg->member_size != 0, cfg->member_size,
		     geo->member_bytes, " bytes");
}

/* A member being rebuilt: from its recovery offset, in whole chunks. */
static void
resume_rebuild(struct raid_member *m, const struct md_sb *sb, uint64_t chunk,
	       uint64_t member_bytes)
{
	uint64_t at =
		MIN(sb->recovery_offset, member_bytes / RAID_SECTOR_BYTES);

	at = ROUND_DOWN(at * RAID_SECTOR_BYTES, chunk);
	atomic_store(&m->rebuilt, at);
	atomic_store(&m->state, RAID_MEMBER_REBUILDING);
}

/*
 * Put the members in role order, a member of no file in each missing role
 * (state missing); then the spares, open, their superblocks kept; the
 * ones left out go after them, closed (each member stays in the array
 * once, so its owner can free them all).
 */
static int
reorder(struct assembly *as, const int *by_role, unsigned roles,
	struct raid_meta *meta, const struct meta_geometry *geo)
{
	uint64_t chunk =
		geo->chunk_bytes ? geo->chunk_bytes : as->cfg->chunk_bytes;
	unsigned used = 0, tail = roles, total;
	struct raid_member *sorted;

	for (unsigned r = 0; r < roles; r++) {
		used += by_role[r] >= 0;
	}
	total = roles + (as->nr - used);
	if (total > as->cap) {
		raid_error(
			"the array has %u roles: more than nbdraid has room for (%u)",
			roles, as->cap);
		return -EINVAL;
	}
	sorted = calloc(total, sizeof(*sorted));
	if (!sorted) {
		return -ENOMEM;
	}
	for (unsigned r = 0; r < roles; r++) {
		if (by_role[r] < 0) {
			sorted[r].fd = -1;
			atomic_init(&sorted[r].state, RAID_MEMBER_MISSING);
		} else {
			sorted[r] = as->m[by_role[r]];
			meta->members[r] = as->f[by_role[r]].mm;
			meta->members[r].present = true;
		}
		if (by_role[r] >= 0 &&
		    as->f[by_role[r]].as == FOUND_REBUILDING) {
			resume_rebuild(&sorted[r], &meta->members[r].sb, chunk,
				       geo->member_bytes);
			meta->rebuilding |= 1ull << r;
		}
		sorted[r].role = r;
	}
	for (unsigned i = 0; i < as->nr; i++) {
		if (as->f[i].as != FOUND_SPARE) {
			continue;
		}
		if (meta->nr_spares == RAID_MAX_SPARES) {
			raid_error(
				"member %s: a spare, but nbdraid keeps at most %d: left out",
				as->m[i].path, RAID_MAX_SPARES);
			as->f[i].as = FOUND_ABSENT;
			continue;
		}
		meta->spares[meta->nr_spares++] = as->f[i].mm;
		sorted[tail++] = as->m[i];
	}
	for (unsigned i = 0; i < as->nr; i++) {
		bool in = as->f[i].as == FOUND_SPARE;

		for (unsigned r = 0; r < roles; r++) {
			in |= by_role[r] == (int)i;
		}
		if (!in) {
			member_close(&as->m[i]);
			sorted[tail++] = as->m[i];
		}
	}
	memcpy(as->m, sorted, total * sizeof(*sorted));
	free(sorted);
	as->nr = roles;
	return 0;
}

static struct raid_meta *
meta_new(unsigned nr)
{
	struct raid_meta *meta = calloc(1, sizeof(*meta));

	if (!meta) {
		return NULL;
	}
	meta->members = calloc(nr, sizeof(*meta->members));
	if (!meta->members) {
		free(meta);
		return NULL;
	}
	meta->nr = nr;
	pthread_mutex_init(&meta->lock, NULL);
	return meta;
}

/* The checks, in md's order; 0 with the roles in by_role. */
static int
assemble_checks(struct assembly *as, int *by_role, struct meta_geometry *geo)
{
	int r = read_all(as);

	for (unsigned i = 0; i < as->nr && r == 0; i++) {
		if (as->f[i].as != FOUND_ABSENT) {
			r = check_features(&as->m[i], &as->f[i].mm.sb);
		}
	}
	if (r == 0) {
		r = find_freshest(as);
	}
	for (unsigned i = 0; i < as->nr && r == 0; i++) {
		if (as->f[i].as != FOUND_ABSENT) {
			r = check_same_array(as, i);
		}
	}
	/* Named by the member and the field, as every other refusal of a
	 * superblock (it said only "the array has N members"). */
	if (r == 0 && as->f[as->freshest].mm.sb.raid_disks > RAID_MAX_MEMBERS) {
		raid_error(
			"member %s: raid_disks %u: nbdraid serves at most %d members",
			as->m[as->freshest].path,
			as->f[as->freshest].mm.sb.raid_disks, RAID_MAX_MEMBERS);
		r = -EOPNOTSUPP;
	}
	for (unsigned i = 0; i < as->nr && r == 0; i++) {
		classify(as, i);
	}
	if (r == 0) {
		r = geometry_kind(as, geo);
	}
	if (r == 0) {
		r = assign_roles(as, by_role);
	}
	if (r == 0) {
		r = geometry_sizes(as, by_role, geo);
	}
	return r;
}

int
meta_assemble(const struct raid_config *cfg, struct raid_member *m,
	      unsigned *nr, unsigned cap, struct meta_geometry *geo,
	      struct raid_meta **out)
{
	struct assembly as = { .cfg = cfg, .m = m, .nr = *nr, .cap = cap };
	int by_role[RAID_MAX_MEMBERS];
	const struct md_sb *fresh;
	struct raid_meta *meta = NULL;
	int r;

	memset(geo, 0, sizeof(*geo));
	as.f = calloc(*nr, sizeof(*as.f));
	if (!as.f) {
		return -ENOMEM;
	}
	r = assemble_checks(&as, by_role, geo);
	fresh = &as.f[as.freshest].mm.sb;
	if (r == 0 && !(meta = meta_new(fresh->raid_disks))) {
		r = -ENOMEM;
	}
	if (r == 0) {
		meta->bitmap = fresh->feature_map & MD_FEATURE_BITMAP_OFFSET;
		for (unsigned role = 0; role < RAID_MAX_MEMBERS; role++) {
			meta->role_dev[role] = UINT32_MAX;
		}
		for (uint32_t d = 0; d < fresh->max_dev; d++) {
			if (fresh->dev_roles[d] < fresh->raid_disks) {
				meta->role_dev[fresh->dev_roles[d]] = d;
			}
		}
		meta->resync_cp = fresh->resync_offset;
		atomic_init(&meta->dirty, meta->resync_cp != MD_RESYNC_DONE);
		find_missing(&as, by_role, &meta->missing, &meta->unrecorded);
		r = reorder(&as, by_role, fresh->raid_disks, meta, geo);
	}
	if (r < 0) {
		meta_free(meta);
	} else {
		*nr = as.nr;
		*out = meta;
		if (meta->resync_cp != MD_RESYNC_DONE) {
			raid_error(
				"array %s (%s) was not shut down cleanly (resync offset %llu): it is resynced from there",
				uuid_str(fresh->set_uuid, (char[40]){ 0 }),
				fresh->set_name,
				(unsigned long long)fresh->resync_offset);
		}
	}
	free(as.f);
	return r;
}

/* ---- selecting members ------------------------------------------------- */

void
meta_free_paths(char **paths, unsigned n)
{
	for (unsigned i = 0; paths && i < n; i++) {
		free(paths[i]);
	}
	free(paths);
}

static int
add_path(char ***paths, unsigned *n, const char *path)
{
	char **p = realloc(*paths, (*n + 1) * sizeof(*p));

	/* Not deduplicated: the same member twice is refused as such. */
	if (!p) {
		return -ENOMEM;
	}
	*paths = p;
	p[*n] = strdup(path);
	if (!p[*n]) {
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

/* Every member= expanded: a glob's matches, a plain path as it is. */
static int
expand(const struct raid_config *cfg, char ***paths, unsigned *n)
{
	int r = 0;

	for (unsigned i = 0; i < cfg->nr_members && r == 0; i++) {
		glob_t g;
		int gr = glob(cfg->members[i], GLOB_NOMAGIC, NULL, &g);

		if (gr == GLOB_NOSPACE) {
			r = -ENOMEM;
		}
		for (size_t k = 0; gr == 0 && k < g.gl_pathc && r == 0; k++) {
			r = add_path(paths, n, g.gl_pathv[k]);
		}
		if (gr == 0 || gr == GLOB_NOMATCH) {
			globfree(&g);
		}
	}
	return r;
}

/* Does path carry a superblock of the array uuid= / name= names? */
static bool
selected(const struct raid_config *cfg, const char *path)
{
	static _Thread_local struct meta_member mm;
	struct raid_member m;
	const char *colon;
	char why[160];
	bool yes;
	int r;

	if (member_open(&m, 0, path, false, true, RAID_IO_PSYNC) < 0) {
		member_close(&m); /* its path */
		return false;
	}
	/* By identity: one of ours whose geometry is refused is taken, and
	 * refused by assembly, saying why. */
	r = meta_read(&m, &mm, why, sizeof(why));
	yes = r == 0 || r == -EUCLEAN;
	member_close(&m);
	if (yes && cfg->has_uuid) {
		yes = memcmp(mm.sb.set_uuid, cfg->uuid, 16) == 0;
	}
	if (yes && cfg->name) {
		colon = strchr(mm.sb.set_name, ':');
		yes = strcmp(mm.sb.set_name, cfg->name) == 0 ||
		      (!strchr(cfg->name, ':') && colon &&
		       strcmp(colon + 1, cfg->name) == 0);
	}
	return yes;
}

static int meta_select_members(const struct raid_config *cfg, char ***paths,
			       unsigned *n);

/* path's md superblock into *sb: true when it has one. */
static bool
read_sb(const char *path, struct md_sb *sb)
{
	static _Thread_local struct meta_member mm;
	struct raid_member m;
	char why[160];
	bool yes;
	int r;

	if (member_open(&m, 0, path, false, true, RAID_IO_PSYNC) < 0) {
		member_close(&m); /* its path */
		return false;
	}
	r = meta_read(&m, &mm, why, sizeof(why));
	yes = r == 0 || r == -EUCLEAN; /* refused by assembly, saying why */
	member_close(&m);
	if (yes) {
		*sb = mm.sb;
	}
	return yes;
}

/*
 * A spare= that has taken a role since (it was rebuilt into it, or is
 * being rebuilt) is a member now: md assembles every device alike, so a
 * restart with the same settings must find it.  Add the spares whose
 * superblock is of the members' array and names a role of their own.
 */
static int
add_spares_in_roles(const struct raid_config *cfg, char ***paths, unsigned *n)
{
	static _Thread_local struct md_sb ref, sb;
	bool have_ref = false;
	int r = 0;

	for (unsigned i = 0; i < *n && !have_ref; i++) {
		have_ref = read_sb((*paths)[i], &ref);
	}
	for (unsigned i = 0; have_ref && i < cfg->nr_spares && r == 0; i++) {
		if (read_sb(cfg->spares[i], &sb) &&
		    memcmp(sb.set_uuid, ref.set_uuid, 16) == 0 &&
		    md_sb_role(&sb) < sb.raid_disks) {
			r = add_path(paths, n, cfg->spares[i]);
		}
	}
	return r;
}

/*
 * The one limit on members, checked before any is opened: every table
 * sized by members (raid_config.h) holds RAID_MAX_MEMBERS roles and
 * RAID_MAX_SPARES spares; raw mode has no spares.
 */
static int
check_count(const struct raid_config *cfg, unsigned n)
{
	bool raw = cfg->metadata == RAID_META_NONE;
	unsigned max = RAID_MAX_MEMBERS + (raw ? 0 : RAID_MAX_SPARES);

	if (n <= max) {
		return 0;
	}
	if (raw) {
		raid_error(
			"member=%s%s: %u files or devices, more than nbdraid serves (%d members)",
			cfg->members[0], cfg->nr_members > 1 ? " ..." : "", n,
			RAID_MAX_MEMBERS);
	} else {
		raid_error(
			"member=%s%s: %u files or devices, more than nbdraid serves (%d members and %d spares)",
			cfg->members[0], cfg->nr_members > 1 ? " ..." : "", n,
			RAID_MAX_MEMBERS, RAID_MAX_SPARES);
	}
	return -E2BIG;
}

int
meta_select(const struct raid_config *cfg, char ***paths, unsigned *n)
{
	int r = meta_select_members(cfg, paths, n);

	if (r == 0 && cfg->metadata != RAID_META_NONE && cfg->nr_spares) {
		r = add_spares_in_roles(cfg, paths, n);
	}
	if (r == 0) {
		r = check_count(cfg, *n);
	}
	return r;
}

static int
meta_select_members(const struct raid_config *cfg, char ***paths, unsigned *n)
{
	char **all = NULL, u[40];
	unsigned nall = 0;
	int r = expand(cfg, &all, &nall);

	*paths = NULL;
	*n = 0;
	if (r == 0 && !nall) {
		raid_error("no file or device matches member=%s%s",
			   cfg->members[0], cfg->nr_members > 1 ? " ..." : "");
		r = -ENOENT;
	}
	if (r < 0 || (!cfg->has_uuid && !cfg->name)) {
		*paths = all;
		*n = nall;
		return r;
	}
	/* raid_log stays quiet about candidates that are not ours. */
	for (unsigned i = 0; i < nall && r == 0; i++) {
		if (selected(cfg, all[i])) {
			r = add_path(paths, n, all[i]);
		}
	}
	if (r == 0 && !*n) {
		raid_error(
			"no member carries an md superblock of %s%s%s%s (%u candidates looked at)",
			cfg->has_uuid ? "uuid=" : "",
			cfg->has_uuid ? uuid_str(cfg->uuid, u) : "",
			cfg->has_uuid && cfg->name ? " " : "",
			cfg->name ? cfg->name : "", nall);
		r = -ENOENT;
	}
	meta_free_paths(all, nall);
	return r;
}

/* Every superblock copy kept: the roles' (present ones) and the spares'. */
static struct md_sb *
meta_copy(struct raid_meta *meta, unsigned i)
{
	if (i < meta->nr) {
		return meta->members[i].present ? &meta->members[i].sb : NULL;
	}
	return &meta->spares[i - meta->nr].sb;
}

int
meta_set_dev(struct raid_meta *meta, uint32_t dev, uint16_t value)
{
	if (dev >= MD_MAX_DEV_LIMIT) {
		return -ENOSPC;
	}
	for (unsigned i = 0; i < meta->nr + meta->nr_spares; i++) {
		struct md_sb *sb = meta_copy(meta, i);

		if (!sb) {
			continue;
		}
		while (sb->max_dev <= dev) {
			sb->dev_roles[sb->max_dev++] = MD_ROLE_SPARE;
		}
		sb->dev_roles[dev] = value;
	}
	return 0;
}

void
meta_set_role(struct raid_meta *meta, unsigned role, uint16_t value)
{
	uint32_t dev = meta->role_dev[role];

	for (unsigned i = 0; i < meta->nr + meta->nr_spares; i++) {
		struct md_sb *sb = meta_copy(meta, i);

		if (sb && dev < sb->max_dev) {
			sb->dev_roles[dev] = value;
		}
	}
}

const struct md_sb *
meta_freshest(const struct raid_meta *meta)
{
	const struct md_sb *ref = NULL;

	for (unsigned i = 0; meta && i < meta->nr; i++) {
		const struct meta_member *mm = &meta->members[i];

		if (mm->present && (!ref || mm->sb.events > ref->events)) {
			ref = &mm->sb;
		}
	}
	return ref;
}

/* ---- status ------------------------------------------------------------ */

void
meta_status(struct raid_meta *meta, struct raid_status *st)
{
	const struct md_sb *ref;

	if (!meta) {
		return;
	}
	pthread_mutex_lock(&meta->lock);
	ref = meta_freshest(meta);
	if (ref) {
		st->has_meta = true;
		memcpy(st->uuid, ref->set_uuid, sizeof(st->uuid));
		snprintf(st->name, sizeof(st->name), "%.*s",
			 (int)sizeof(ref->set_name), ref->set_name);
		st->events = ref->events;
		st->clean = ref->resync_offset == MD_RESYNC_DONE;
	}
	pthread_mutex_unlock(&meta->lock);
}
