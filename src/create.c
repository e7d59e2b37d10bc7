/*
 * create.c: make a new array on its members: md v1.x superblocks as
 * `mdadm --create` writes them, then redundancy made consistent.
 *
 * DESIGN
 * 1. Open and claim every member (a member in use by a running array or
 *    another nbdraid is refused), refuse the same bytes twice
 *    (member_overlap), and refuse members that hold anything: an md
 *    superblock (named, with its array) or any signature libblkid knows
 *    (filesystems, partition tables, other RAID metadata).  --force
 *    overrides only these signature checks.
 * 2. Geometry as mdadm 4.2 makes it (super1.c: validate_geometry1,
 *    write_init_super1; Create.c), checked field by field against
 *    superblocks mdadm wrote at the size limits (tests/data/md/limits,
 *    test-create-mdadm.py):
 *      superblock  1.2: sector 8, 1.1: 0, 1.0: end - 16 sectors, 4K down
 *      bitmap space mdadm's choose_bm_space(sectors): 0 below 128 sectors,
 *                  8, 128 above 8 GiB (+ 8 sectors), 256 from 200 GiB
 *                  (+ 128 sectors): room md may use for a bitmap later
 *      data offset 1.1/1.2: 24 + bitmap space + headroom sectors, rounded
 *                  up to 1 MiB, all from the FIRST member's size (mdadm's
 *                  validate_geometry1 sets it for the array from the first
 *                  device); headroom 128 MiB halved while it is more than
 *                  1/1024 of the member and, with a chunk, while half of
 *                  it is at least two chunks; 1.0: 0
 *      size        the smallest member's room (1.1/1.2: after the data
 *                  offset; 1.0: before the superblock, its bitmap space
 *                  and the log), or --size, rounded down to the chunk
 *                  (RAID 1: to 64 KiB); RAID 0 records none (0)
 *      data_size   1.1/1.2: the member after the data offset; 1.0: up to
 *                  the bitmap space of the used size and the log before
 *                  the superblock.  RAID 0: the same, unless the members
 *                  differ in whole chunks: then the smallest's on every
 *                  member, so md sees one zone as nbdraid serves (mdadm
 *                  would record each member's and md add a zone)
 *      bad-block log 8 sectors after the bitmap space of the used size
 *                  (write_init_super1: choose_bm_space(size), not the
 *                  member's), if it fits before the data, else just before
 *                  the data; 1.0: just before the superblock; empty
 *      name        "homehost:name" when shorter than 32 bytes, else name
 *      layout      RAID 0: 1 (md's RAID0_ORIG_LAYOUT, as mdadm 4.2)
 *      roles       member i is role i; max_dev 128; events 0
 *    No write-intent bitmap: mdadm 4.2 adds one by default to members over
 *    100 GiB; nbdraid keeps none, as mdadm --bitmap=none.
 * 3. Consistent when create returns: a redundant array whose members'
 *    data areas are all holes needs no write (parity of zeros is zero);
 *    otherwise the superblocks are written marked not in sync
 *    (resync_offset 0), parity or copies are written (raid_repair, with
 *    progress), and only then the superblocks say in sync.  --assume-clean
 *    skips that, as mdadm's.
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "layout/layout.h"
#include "log.h"
#include "member_overlap.h"
#include "metadata.h"
#include "util.h"

#define MAX_DEV_DEFAULT	  128	    /* roles in a new superblock, as mdadm */
#define HEADROOM_MAX	  262144ull /* sectors: 128 MiB */
#define DATA_OFFSET_ALIGN 2048ull   /* sectors: 1 MiB */
#define SB_RESERVED	  24ull	    /* sectors before the bitmap space */
#define BBLOG_SECTORS	  8
#define RAID1_SIZE_UNIT	  (64u << 10)
#define DEFAULT_NAME	  "nbdraid"

/* mdadm's choose_bm_space: room reserved for a bitmap md may add. */
static uint64_t
bitmap_space(uint64_t sectors)
{
	if (sectors < 128) {
		return 0;
	}
	if (sectors - 128 >= 200ull << 21) { /* 200 GiB */
		return 256;
	}
	return sectors - 8 > 8ull << 21 ? 128 : 8; /* 8 GiB */
}

/* mdadm's data offset for 1.1 and 1.2 members, sectors. */
static uint64_t
data_offset_1x(uint64_t dev_sectors, uint64_t chunk_sectors)
{
	uint64_t headroom = HEADROOM_MAX;

	while ((headroom << 10) > dev_sectors &&
	       (!chunk_sectors || headroom / 2 >= chunk_sectors * 2)) {
		headroom /= 2;
	}
	return ROUND_UP(SB_RESERVED + bitmap_space(dev_sectors) + headroom,
			DATA_OFFSET_ALIGN);
}

struct plan {
	const struct raid_create_spec *spec;
	const struct raid_layout *layout;
	struct raid_geom g; /* for the layout's md number */
	unsigned minor;
	uint64_t chunk_sectors; /* 0 for RAID 1 */
	uint64_t data_offset;	/* sectors, every member */
	uint64_t size;		/* sectors of each member in use */
	uint64_t sb_sector[RAID_MAX_MEMBERS];
	uint64_t room[RAID_MAX_MEMBERS];	/* for data, before rounding */
	uint64_t data_size[RAID_MAX_MEMBERS];	/* as recorded */
	int32_t bblog_offset[RAID_MAX_MEMBERS]; /* 0: no log */
	uint8_t set_uuid[16];
	char set_name[33];
	uint64_t now;
};

/*
 * Where each member's superblock and data go, and how much room each
 * offers (sectors): mdadm's validate_geometry1, the data offset from the
 * first member.
 */
static int
plan_sizes(struct plan *p, struct raid_member *m, unsigned n)
{
	p->data_offset = 0;
	if (p->minor != 0) {
		p->data_offset = data_offset_1x(m[0].size / RAID_SECTOR_BYTES,
						p->chunk_sectors);
	}
	p->size = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		uint64_t sectors = m[i].size / RAID_SECTOR_BYTES;
		uint64_t end = sectors, over;

		p->sb_sector[i] = md_sb_sector(p->minor, m[i].size);
		if (p->minor == 0) {
			/* 1.0: superblock, log and bitmap space at the end. */
			over = 16 + BBLOG_SECTORS + bitmap_space(sectors);
			end = ROUND_DOWN(sectors, 8);
			end = end > over ? end - over : 0;
		}
		p->room[i] = end > p->data_offset ? end - p->data_offset : 0;
		p->size = MIN(p->size, p->room[i]);
	}
	return 0;
}

/*
 * Each member's data_size and bad-block log, once the used size is known
 * (mdadm's write_init_super1): the bitmap space is the used size's.
 */
static void
plan_data_sizes(struct plan *p, struct raid_member *m, unsigned n)
{
	uint64_t used = p->spec->level == 0 ? 0 : p->size;
	uint64_t bm = bitmap_space(used), chunks = UINT64_MAX;
	bool zones = false;

	for (unsigned i = 0; i < n; i++) {
		uint64_t sectors = m[i].size / RAID_SECTOR_BYTES;
		uint64_t room = bm + BBLOG_SECTORS, sb = p->sb_sector[i];

		p->bblog_offset[i] = 0;
		if (p->minor == 0) {
			if (sb < used + room) {
				room = sb - used;
			}
			p->data_size[i] = sb - room;
			p->bblog_offset[i] = -BBLOG_SECTORS;
		} else {
			p->data_size[i] = sectors - p->data_offset;
			if (p->data_offset >= sb + 8 + bm + BBLOG_SECTORS) {
				p->bblog_offset[i] = (int32_t)(8 + bm);
			} else if (p->data_offset >= sb + 16) {
				p->bblog_offset[i] =
					(int32_t)(p->data_offset -
						  BBLOG_SECTORS - sb);
			}
		}
		if (p->chunk_sectors && p->spec->level == 0) {
			uint64_t c = p->data_size[i] / p->chunk_sectors;

			zones |= chunks != UINT64_MAX && c != chunks;
			chunks = MIN(chunks, c);
		}
	}
	/* RAID 0 of members with different whole chunks, or --size: the
	 * one zone nbdraid serves. */
	zones |= p->spec->level == 0 && p->spec->member_size;
	for (unsigned i = 0; zones && i < n; i++) {
		p->data_size[i] = p->size;
	}
}

/* The used size: --size, rounded as mdadm rounds it per level. */
static int
plan_used(struct plan *p, struct raid_member *m, unsigned n)
{
	uint64_t unit = p->chunk_sectors ? p->chunk_sectors
					 : RAID1_SIZE_UNIT / RAID_SECTOR_BYTES;
	uint64_t want = p->spec->member_size / RAID_SECTOR_BYTES;

	if (want && want > p->size) {
		raid_error(
			"--size %llu is more than the smallest member offers (%llu)",
			(unsigned long long)p->spec->member_size,
			(unsigned long long)p->size * RAID_SECTOR_BYTES);
		return -EINVAL;
	}
	p->size = ROUND_DOWN(want ? want : p->size, unit);
	if (p->size < unit) {
		for (unsigned i = 0; i < n; i++) {
			if (p->room[i] < unit) {
				raid_error(
					"member %u (%s): size %llu is too small: the data offset (%llu) and one chunk (%llu) need more",
					i, m[i].path,
					(unsigned long long)m[i].size,
					(unsigned long long)p->data_offset *
						RAID_SECTOR_BYTES,
					(unsigned long long)unit *
						RAID_SECTOR_BYTES);
				return -EINVAL;
			}
		}
		return -EINVAL;
	}
	return 0;
}

/* "host:name" as mdadm writes it, or the name alone when it won't fit. */
static void
plan_name(struct plan *p)
{
	const char *name = p->spec->name ? p->spec->name : DEFAULT_NAME;
	char host[64] = "", both[160];

	if (p->spec->homehost) {
		snprintf(host, sizeof(host), "%s", p->spec->homehost);
	} else if (gethostname(host, sizeof(host) - 1) < 0) {
		host[0] = '\0';
	}
	snprintf(both, sizeof(both), "%s:%s", host, name);
	/* mdadm: only when it fits md's 32 bytes with a NUL to spare. */
	if (!strchr(name, ':') && host[0] &&
	    strlen(both) < sizeof(p->set_name) - 1) {
		memcpy(p->set_name, both, strlen(both) + 1);
	} else {
		snprintf(p->set_name, sizeof(p->set_name), "%.32s", name);
	}
}

static int
random_bytes(uint8_t *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -EIO;
}

/* Member i's superblock, as mdadm writes a new one. */
static int
plan_sb(const struct plan *p, unsigned i, unsigned n, struct meta_member *mm)
{
	struct md_sb *sb = &mm->sb;
	int r;

	memset(mm, 0, sizeof(*mm));
	memcpy(sb->set_uuid, p->set_uuid, sizeof(sb->set_uuid));
	memcpy(sb->set_name, p->set_name, sizeof(sb->set_name));
	sb->ctime = sb->utime = p->now;
	sb->level = p->spec->level;
	sb->layout = p->layout->md_layout(&p->g);
	sb->size = p->spec->level == 0 ? 0 : p->size;
	sb->chunksize = p->chunk_sectors;
	sb->raid_disks = n;
	sb->data_offset = p->data_offset;
	sb->data_size = p->data_size[i];
	sb->super_offset = p->sb_sector[i];
	sb->dev_number = i;
	sb->bblog_offset = p->bblog_offset[i];
	sb->bblog_size = sb->bblog_offset ? BBLOG_SECTORS : 0;
	sb->events = 0;
	sb->resync_offset = MD_RESYNC_DONE;
	sb->max_dev = MAX_DEV_DEFAULT;
	for (unsigned k = 0; k < sb->max_dev; k++) {
		sb->dev_roles[k] = k < n ? k : MD_ROLE_SPARE;
	}
	r = random_bytes(sb->device_uuid, sizeof(sb->device_uuid));
	mm->sb_sector = p->sb_sector[i];
	return r;
}

/* What libblkid finds on a member: a filesystem, a partition table ... */
static int
probe_signature(const struct raid_member *m, char *what, size_t len)
{
	blkid_probe pr = blkid_new_probe_from_filename(m->path);
	const char *type = NULL;
	int r;

	if (!pr) {
		return -errno ? -errno : -EIO;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	r = blkid_do_safeprobe(pr);
	if (r == 0 &&
	    (blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0 ||
	     blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0)) {
		snprintf(what, len, "%s", type);
	} else if (r == -2) {
		snprintf(what, len, "several signatures (ambiguous)");
	} else {
		what[0] = '\0';
	}
	blkid_free_probe(pr);
	return 0;
}

/* Refuse members holding an md superblock or any other signature. */
static int
check_signatures(struct raid_member *m, unsigned n, bool force)
{
	static struct meta_member found;
	char what[160], why[160];
	int bad = 0;

	for (unsigned i = 0; i < n; i++) {
		int r = meta_read(&m[i], &found, why, sizeof(why));

		if (r == 0 || r == -EUCLEAN) {
			raid_error(
				"member %u (%s): has an md superblock: role %u of array %s%s",
				i, m[i].path, md_sb_role(&found.sb),
				found.sb.set_name,
				force ? " (overwritten: --force)"
				      : " (--force overwrites it)");
			bad++;
			continue;
		}
		if (probe_signature(&m[i], what, sizeof(what)) == 0 &&
		    what[0]) {
			raid_error(
				"member %u (%s): holds %s (found by libblkid)%s",
				i, m[i].path, what,
				force ? " (overwritten: --force)"
				      : " (--force overwrites it)");
			bad++;
		}
	}
	return bad && !force ? -EEXIST : 0;
}

/* Are the members' data areas all holes?  Then copies and parity agree. */
static bool
all_holes(struct raid_member *m, unsigned n, const struct plan *p)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = p->data_offset * RAID_SECTOR_BYTES;
		uint64_t len = p->size * RAID_SECTOR_BYTES, run;
		bool hole;

		member_extent(&m[i], off, len, &hole, &run);
		if (!hole || run < len) {
			return false;
		}
	}
	return true;
}

static int
plan_geometry(struct plan *p, unsigned n)
{
	const struct raid_create_spec *s = p->spec;
	uint64_t chunk = s->chunk_bytes ? s->chunk_bytes : RAID_DEFAULT_CHUNK;
	char err[256];

	p->layout = layout_find(s->level);
	if (!p->layout) {
		raid_error("level %d: must be 0, 1, 5 or 10", s->level);
		return -EINVAL;
	}
	if (!is_power_of_2(chunk) || chunk < RAID_MIN_CHUNK ||
	    chunk > RAID_MAX_CHUNK) {
		raid_error("chunk %llu: must be a power of two from 4K to 16M",
			   (unsigned long long)chunk);
		return -EINVAL;
	}
	p->g.nr_members = n;
	p->g.chunk_shift = log2_u64(chunk);
	p->g.member_chunks = 1;
	if (n < p->layout->min_members ||
	    p->layout->setup(&p->g, s->layout, err, sizeof(err)) < 0) {
		raid_error("%s", n < p->layout->min_members
					 ? "too few members for the level"
					 : err);
		return -EINVAL;
	}
	/* md keeps no chunk for RAID 1. */
	p->chunk_sectors = p->layout->size_unit ? 0 : chunk / RAID_SECTOR_BYTES;
	p->minor = s->minor;
	if (p->minor > 2) {
		raid_error("metadata 1.%u: must be 1.0, 1.1 or 1.2", p->minor);
		return -EINVAL;
	}
	p->now = (uint64_t)time(NULL) & MD_TIME_SEC_MASK;
	plan_name(p);
	return random_bytes(p->set_uuid, sizeof(p->set_uuid));
}

/* Write the superblocks, in sync or not. */
static int
write_sbs(struct raid_member *m, unsigned n, const struct plan *p, bool in_sync)
{
	struct meta_member *mm = calloc(n, sizeof(*mm));
	int r = mm ? 0 : -ENOMEM;

	for (unsigned i = 0; i < n && r == 0; i++) {
		r = plan_sb(p, i, n, &mm[i]);
		mm[i].sb.resync_offset = in_sync ? MD_RESYNC_DONE : 0;
	}
	if (r == 0) {
		r = meta_write(m, mm, n);
	}
	free(mm);
	return r;
}

/* Make parity or copies consistent over the new array's data areas. */
static int
sync_data(struct raid_member *m, unsigned n, const struct plan *p,
	  raid_progress_fn progress, void *ctx)
{
	struct raid_config cfg;
	struct raid_check_result res;
	struct raid_array *a = NULL;
	int r;

	raid_config_init(&cfg);
	cfg.level = p->spec->level;
	cfg.layout = (char *)p->spec->layout;
	cfg.chunk_bytes = p->chunk_sectors
				  ? p->chunk_sectors * RAID_SECTOR_BYTES
				  : RAID_DEFAULT_CHUNK;
	cfg.data_offset = p->data_offset * RAID_SECTOR_BYTES;
	cfg.member_size = p->size * RAID_SECTOR_BYTES;
	r = array_create(&cfg, m, n, NULL, &a);
	if (r == 0) {
		r = raid_repair(a, &res, progress, ctx);
		if (r == 0) {
			r = raid_flush(a);
		}
		raid_close(a);
	}
	return r;
}

int
raid_create(const struct raid_create_spec *spec, raid_progress_fn progress,
	    void *ctx, struct raid_create_result *out)
{
	unsigned n = spec->nr_members, i = 0;
	struct raid_member *m;
	struct plan p = { .spec = spec };
	bool redundant, in_sync;
	int r;

	if (n > RAID_MAX_MEMBERS) {
		raid_error("%u members: nbdraid serves at most %d", n,
			   RAID_MAX_MEMBERS);
		return -E2BIG;
	}
	m = calloc(n ? n : 1, sizeof(*m));
	r = m ? 0 : -ENOMEM;

	for (; i < n && r == 0; i++) {
		r = member_open(&m[i], i, spec->members[i], spec->direct, false,
				RAID_IO_AUTO);
		if (r < 0) {
			i++; /* close it too */
		}
	}
	if (r == 0) {
		r = plan_geometry(&p, n);
	}
	if (r == 0) {
		r = member_overlap_check(m, n);
	}
	for (unsigned k = 0; k < n && r == 0; k++) {
		r = member_claim(&m[k]);
	}
	if (r == 0) {
		r = check_signatures(m, n, spec->force);
	}
	if (r == 0) {
		r = plan_sizes(&p, m, n);
	}
	if (r == 0) {
		r = plan_used(&p, m, n);
	}
	if (r == 0) {
		plan_data_sizes(&p, m, n);
	}
	redundant = spec->level != 0;
	in_sync = !redundant || spec->assume_clean ||
		  (r == 0 && all_holes(m, n, &p));
	if (r == 0) {
		r = write_sbs(m, n, &p, in_sync);
	}
	if (r == 0 && !in_sync) {
		r = sync_data(m, n, &p, progress, ctx);
		if (r == 0) {
			r = write_sbs(m, n, &p, true);
		}
	}
	if (r == 0 && out) {
		memset(out, 0, sizeof(*out));
		memcpy(out->uuid, p.set_uuid, sizeof(out->uuid));
		snprintf(out->name, sizeof(out->name), "%s", p.set_name);
		p.layout->layout_name(&p.g, out->layout, sizeof(out->layout));
		out->member_bytes = p.size * RAID_SECTOR_BYTES;
		out->data_offset = p.data_offset * RAID_SECTOR_BYTES;
		out->synced = !in_sync;
	}
	while (i--) {
		member_close(&m[i]);
	}
	free(m);
	return r;
}
