/*
 * superblock.c: md's v1.x superblock (superblock.h), field by field.
 *
 * DESIGN
 * One table names every numeric field: its byte offset on disk, its width
 * and its place in struct md_sb.  Decode and encode walk the same table,
 * so a field cannot be read from one offset and written to another; the
 * byte arrays (set_uuid, set_name, device_uuid), the padding and the role
 * table are handled beside it.  The offsets are md's (md_p.h), pinned by
 * the table itself and by mdadm's own superblocks in tests/data/md.
 *
 *   0 magic  4 major  8 feature_map  12 pad0  16 set_uuid  32 set_name
 *   64 ctime  72 level  76 layout  80 size  88 chunksize  92 raid_disks
 *   96 bitmap_offset  100 new_level  104 reshape_position  112 delta_disks
 *   116 new_layout  120 new_chunk  124 new_offset  128 data_offset
 *   136 data_size  144 super_offset  152 recovery_offset  160 dev_number
 *   164 cnt_corrected_read  168 device_uuid  184 devflags  185 bblog_shift
 *   186 bblog_size  188 bblog_offset  192 utime  200 events
 *   208 resync_offset  216 sb_csum  220 max_dev  224 pad3[32]  256 roles
 *
 * Checksum (md.c calc_sb_1_csum): the sum of the little-endian u32 words
 * of the first 256 + 2 * max_dev bytes (a trailing u16 when max_dev is
 * odd) with sb_csum taken as 0, in 64 bits, folded once to 32.  A
 * max_dev past MD_MAX_DEV_LIMIT (refused by decode, written as it is by
 * encode) is summed as MD_MAX_DEV_LIMIT: the sum stays in MD_SB_BYTES.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "superblock.h"

#define OFF_MAGIC	   0
#define OFF_MAJOR	   4
#define OFF_PAD0	   12
#define OFF_SET_UUID	   16
#define OFF_SET_NAME	   32
#define OFF_DEVICE_UUID	   168
#define OFF_SB_CSUM	   216
#define OFF_PAD3	   224
#define PAD3_BYTES	   32
#define SET_NAME_BYTES	   32
#define UUID_BYTES	   16
#define SB_MAJOR_VERSION   1
#define SB_MIN_SECTORS_1_0 16 /* 1.0: at least 8 KiB from the end */

static uint64_t
get_le(const uint8_t *p, unsigned width)
{
	uint64_t v = 0;

	for (unsigned i = width; i-- > 0;) {
		v = v << 8 | p[i];
	}
	return v;
}

static void
put_le(uint8_t *p, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++) {
		p[i] = v >> (8 * i);
	}
}

/* The numeric fields: disk offset, width in bytes, place in md_sb. */
#define FIELD(off, width, name)                                                \
	{                                                                      \
		off, width, offsetof(struct md_sb, name),                      \
			sizeof(((struct md_sb *)0)->name)                      \
	}
static const struct field {
	uint16_t off;
	uint8_t width;
	uint16_t at;
	uint8_t host_width;
} fields[] = {
	FIELD(8, 4, feature_map),     FIELD(64, 8, ctime),
	FIELD(72, 4, level),	      FIELD(76, 4, layout),
	FIELD(80, 8, size),	      FIELD(88, 4, chunksize),
	FIELD(92, 4, raid_disks),     FIELD(96, 4, bitmap_offset),
	FIELD(100, 4, new_level),     FIELD(104, 8, reshape_position),
	FIELD(112, 4, delta_disks),   FIELD(116, 4, new_layout),
	FIELD(120, 4, new_chunk),     FIELD(124, 4, new_offset),
	FIELD(128, 8, data_offset),   FIELD(136, 8, data_size),
	FIELD(144, 8, super_offset),  FIELD(152, 8, recovery_offset),
	FIELD(160, 4, dev_number),    FIELD(164, 4, cnt_corrected_read),
	FIELD(184, 1, devflags),      FIELD(185, 1, bblog_shift),
	FIELD(186, 2, bblog_size),    FIELD(188, 4, bblog_offset),
	FIELD(192, 8, utime),	      FIELD(200, 8, events),
	FIELD(208, 8, resync_offset), FIELD(216, 4, sb_csum),
	FIELD(220, 4, max_dev),
};
#undef FIELD
#define NR_FIELDS (sizeof(fields) / sizeof(fields[0]))

static void
field_get(const struct field *f, const uint8_t *buf, struct md_sb *sb)
{
	uint64_t v = get_le(buf + f->off, f->width);
	char *to = (char *)sb + f->at;

	/* Signed fields keep their sign: the width on disk is the host's. */
	switch (f->host_width) {
	case 1:
		*(uint8_t *)to = v;
		break;
	case 2:
		*(uint16_t *)to = v;
		break;
	case 4:
		*(uint32_t *)to = v;
		break;
	default:
		*(uint64_t *)to = v;
		break;
	}
}

static void
field_put(const struct field *f, const struct md_sb *sb, uint8_t *buf)
{
	const char *from = (const char *)sb + f->at;
	uint64_t v;

	switch (f->host_width) {
	case 1:
		v = *(const uint8_t *)from;
		break;
	case 2:
		v = *(const uint16_t *)from;
		break;
	case 4:
		v = *(const uint32_t *)from;
		break;
	default:
		v = *(const uint64_t *)from;
		break;
	}
	put_le(buf + f->off, f->width, v);
}

uint32_t
md_sb_csum(const void *buf, uint32_t max_dev)
{
	const uint8_t *p = buf;
	uint64_t sum = 0;
	uint32_t size, i;

	/* Roles past the limit would lie past MD_SB_BYTES: never read. */
	if (max_dev > MD_MAX_DEV_LIMIT) {
		max_dev = MD_MAX_DEV_LIMIT;
	}
	size = MD_SB_FIXED + 2 * max_dev;
	for (i = 0; i + 4 <= size; i += 4) {
		sum += i == OFF_SB_CSUM ? 0 : get_le(p + i, 4);
	}
	if (size - i == 2) {
		sum += get_le(p + i, 2);
	}
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i]) {
			return false;
		}
	}
	return true;
}

static int __attribute__((format(printf, 4, 5)))
refuse(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return err;
}

int
md_sb_decode(const void *buf, size_t len, struct md_sb *sb, char *why,
	     size_t whylen)
{
	const uint8_t *p = buf;
	uint32_t major, csum;

	if (len < MD_SB_BYTES || get_le(p + OFF_MAGIC, 4) != MD_SB_MAGIC) {
		return refuse(why, whylen, -ENOENT, "no md superblock");
	}
	major = get_le(p + OFF_MAJOR, 4);
	if (major != SB_MAJOR_VERSION) {
		return refuse(
			why, whylen, -EINVAL,
			"md superblock major version %u (only 1 is known)",
			major);
	}
	memset(sb, 0, sizeof(*sb));
	for (size_t i = 0; i < NR_FIELDS; i++) {
		field_get(&fields[i], p, sb);
	}
	if (sb->max_dev > MD_MAX_DEV_LIMIT) {
		return refuse(why, whylen, -EINVAL,
			      "md superblock max_dev %u is more than %u",
			      sb->max_dev, MD_MAX_DEV_LIMIT);
	}
	if (get_le(p + OFF_PAD0, 4) || !all_zero(p + OFF_PAD3, PAD3_BYTES)) {
		return refuse(
			why, whylen, -EINVAL,
			"md superblock padding is not zero (a newer feature?)");
	}
	memcpy(sb->set_uuid, p + OFF_SET_UUID, UUID_BYTES);
	/*
	 * NUL-padded: the name ends at its first NUL, and what follows is
	 * not kept (encode writes NULs there), so a decoded superblock
	 * encodes and decodes back to itself.
	 */
	memcpy(sb->set_name, p + OFF_SET_NAME,
	       strnlen((const char *)p + OFF_SET_NAME, SET_NAME_BYTES));
	memcpy(sb->device_uuid, p + OFF_DEVICE_UUID, UUID_BYTES);
	for (uint32_t i = 0; i < sb->max_dev; i++) {
		sb->dev_roles[i] = get_le(p + MD_SB_FIXED + 2 * i, 2);
	}
	/* Every field is filled first: examine shows a damaged one too. */
	csum = md_sb_csum(p, sb->max_dev);
	if (csum != sb->sb_csum) {
		return refuse(why, whylen, -EBADMSG,
			      "md superblock checksum %08x, expected %08x",
			      sb->sb_csum, csum);
	}
	return 0;
}

void
md_sb_encode(const struct md_sb *sb, void *buf)
{
	uint8_t *p = buf;

	memset(p, 0, MD_SB_BYTES);
	put_le(p + OFF_MAGIC, 4, MD_SB_MAGIC);
	put_le(p + OFF_MAJOR, 4, SB_MAJOR_VERSION);
	for (size_t i = 0; i < NR_FIELDS; i++) {
		field_put(&fields[i], sb, p);
	}
	memcpy(p + OFF_SET_UUID, sb->set_uuid, UUID_BYTES);
	/* NUL-padded, not necessarily NUL-terminated (32 characters fit). */
	memcpy(p + OFF_SET_NAME, sb->set_name,
	       strnlen(sb->set_name, SET_NAME_BYTES));
	memcpy(p + OFF_DEVICE_UUID, sb->device_uuid, UUID_BYTES);
	for (uint32_t i = 0; i < sb->max_dev && i < MD_MAX_DEV_LIMIT; i++) {
		put_le(p + MD_SB_FIXED + 2 * i, 2, sb->dev_roles[i]);
	}
	put_le(p + OFF_SB_CSUM, 4, md_sb_csum(p, sb->max_dev));
}

/* ---- geometry ------------------------------------------------------------ */

#define SB_SECTORS	 (MD_SB_BYTES / 512) /* what nbdraid writes */
#define MD_MIN_DATA_SIZE 10		     /* md's super_1_load */

/* One area of a member, in sectors: [start, start + len), and the
 * superblock fields that place it (for messages). */
struct area {
	const char *name;
	uint64_t start, len;
	char fields[80];
};

static bool
areas_overlap(const struct area *a, const struct area *b)
{
	return a->len && b->len && a->start < b->start + b->len &&
	       b->start < a->start + a->len;
}

/* An area at a signed offset from the superblock: false if before 0. */
static bool
area_at(struct area *a, const char *name, uint64_t sb, int32_t off,
	uint64_t len)
{
	a->name = name;
	a->len = len;
	if (off < 0 && (uint64_t) - (int64_t)off > sb) {
		return false;
	}
	a->start = sb + (int64_t)off;
	return true;
}

static bool
area_inside(const struct area *a, uint64_t dev)
{
	return a->start <= dev && a->len <= dev - a->start;
}

/* The areas pairwise: none may overlap another (the later one is the
 * subject: the data area, placed last, before md's own areas). */
static int
check_overlaps(const struct area *areas, unsigned n, char *why, size_t whylen)
{
	for (unsigned k = 1; k < n; k++) {
		for (unsigned i = 0; i < k; i++) {
			const struct area *a = &areas[k], *b = &areas[i];

			if (!areas_overlap(a, b)) {
				continue;
			}
			return refuse(
				why, whylen, -EUCLEAN,
				"%s: %s (sectors %llu-%llu) overlaps %s (sectors %llu-%llu, %s)",
				a->fields, a->name,
				(unsigned long long)a->start,
				(unsigned long long)(a->start + a->len - 1),
				b->name, (unsigned long long)b->start,
				(unsigned long long)(b->start + b->len - 1),
				b->fields);
		}
	}
	return 0;
}

/* The sizes: data_size, and the used size inside it. */
static int
check_sizes(const struct md_sb *sb, uint64_t dev, char *why, size_t whylen)
{
	if (sb->data_size < MD_MIN_DATA_SIZE) {
		return refuse(why, whylen, -EUCLEAN,
			      "data_size %llu sectors: less than md's %u",
			      (unsigned long long)sb->data_size,
			      MD_MIN_DATA_SIZE);
	}
	if (sb->data_offset > dev || sb->data_size > dev - sb->data_offset) {
		return refuse(
			why, whylen, -EUCLEAN,
			"data_offset %llu + data_size %llu sectors: past the member's end (%llu sectors)",
			(unsigned long long)sb->data_offset,
			(unsigned long long)sb->data_size,
			(unsigned long long)dev);
	}
	if (sb->level > 0 && sb->size == 0) {
		return refuse(why, whylen, -EUCLEAN,
			      "size 0: a raid%d array holding nothing",
			      sb->level);
	}
	if (sb->level > 0 && sb->size > sb->data_size) {
		return refuse(
			why, whylen, -EUCLEAN,
			"size %llu sectors: more than data_size (%llu sectors)",
			(unsigned long long)sb->size,
			(unsigned long long)sb->data_size);
	}
	if ((sb->feature_map & MD_FEATURE_RAID0_LAYOUT) && sb->level != 0) {
		return refuse(
			why, whylen, -EUCLEAN,
			"feature_map: RAID 0 layout (0x1000) on a raid%d array (md refuses it)",
			sb->level);
	}
	return 0;
}

/* An area at off sectors from the superblock, not inside the member. */
static int
outside(const struct area *a, const struct md_sb *sb, int32_t off, uint64_t dev,
	char *why, size_t whylen)
{
	int64_t start = (int64_t)sb->super_offset + off;

	return refuse(
		why, whylen, -EUCLEAN,
		"%s: %s (sectors %lld-%lld) lies outside the member (sectors 0-%llu)",
		a->fields, a->name, (long long)start,
		(long long)(start + (int64_t)a->len - 1),
		(unsigned long long)dev - 1);
}

/* md's bitmap and bad-block log, when there: inside the member. */
static int
meta_areas(const struct md_sb *sb, uint64_t dev, uint64_t bitmap_sectors,
	   struct area *a, unsigned *n, char *why, size_t whylen)
{
	if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET) {
		uint64_t len = bitmap_sectors > SB_SECTORS ? bitmap_sectors
							   : SB_SECTORS;
		struct area *b = &a[(*n)++];

		snprintf(b->fields, sizeof(b->fields), "bitmap_offset %d",
			 sb->bitmap_offset);
		if (!area_at(b, "the bitmap", sb->super_offset,
			     sb->bitmap_offset, len) ||
		    !area_inside(b, dev)) {
			return outside(b, sb, sb->bitmap_offset, dev, why,
				       whylen);
		}
	}
	if (sb->bblog_offset && sb->bblog_size) {
		struct area *b = &a[(*n)++];

		snprintf(b->fields, sizeof(b->fields),
			 "bblog_offset %d, bblog_size %u", sb->bblog_offset,
			 sb->bblog_size);
		if (!area_at(b, "the bad-block log", sb->super_offset,
			     sb->bblog_offset, sb->bblog_size) ||
		    !area_inside(b, dev)) {
			return outside(b, sb, sb->bblog_offset, dev, why,
				       whylen);
		}
	}
	return 0;
}

int
md_sb_check_geometry(const struct md_sb *sb, uint64_t dev_bytes,
		     uint64_t bitmap_sectors, char *why, size_t whylen)
{
	uint64_t dev = dev_bytes / 512;
	struct area a[4] = { 0 };
	unsigned n = 1;
	int r;

	a[0] = (struct area){ .name = "the superblock",
			      .start = sb->super_offset,
			      .len = SB_SECTORS };
	snprintf(a[0].fields, sizeof(a[0].fields), "super_offset %llu",
		 (unsigned long long)sb->super_offset);
	if (!area_inside(&a[0], dev)) {
		return refuse(
			why, whylen, -EUCLEAN,
			"%s: the superblock's 4 KiB run past the member's end (%llu sectors)",
			a[0].fields, (unsigned long long)dev);
	}
	r = check_sizes(sb, dev, why, whylen);
	if (r < 0) {
		return r;
	}
	r = meta_areas(sb, dev, bitmap_sectors, a, &n, why, whylen);
	if (r < 0) {
		return r;
	}
	a[n] = (struct area){ .name = "the data area",
			      .start = sb->data_offset,
			      .len = sb->data_size };
	snprintf(a[n].fields, sizeof(a[n].fields),
		 "data_offset %llu, data_size %llu",
		 (unsigned long long)sb->data_offset,
		 (unsigned long long)sb->data_size);
	return check_overlaps(a, n + 1, why, whylen);
}

/* The bitmap superblock (md_p.h struct bitmap_super): what nbdraid uses. */
#define BM_OFF_MAGIC   0
#define BM_OFF_VERSION 4
#define BM_OFF_UUID    8
#define BM_OFF_STATE   48
#define BM_HEADER      256
#define BM_VERSION_MIN 3
#define BM_VERSION_MAX 5

static bool
is_bitmap(const uint8_t *p, size_t len, const uint8_t *set_uuid)
{
	uint32_t version;

	if (len < BM_HEADER || get_le(p + BM_OFF_MAGIC, 4) != MD_BITMAP_MAGIC) {
		return false;
	}
	version = get_le(p + BM_OFF_VERSION, 4);
	return version >= BM_VERSION_MIN && version <= BM_VERSION_MAX &&
	       (!set_uuid ||
		memcmp(p + BM_OFF_UUID, set_uuid, UUID_BYTES) == 0);
}

int
md_bitmap_mark_stale(void *buf, size_t len, const uint8_t *set_uuid)
{
	uint8_t *p = buf;

	if (!is_bitmap(p, len, set_uuid)) {
		return -ENOENT;
	}
	put_le(p + BM_OFF_STATE, 4,
	       get_le(p + BM_OFF_STATE, 4) | MD_BITMAP_STALE);
	return 0;
}

#define BM_OFF_SYNC_SIZE 40
#define BM_OFF_CHUNKSIZE 52

int
md_bitmap_sectors(const void *buf, size_t len, const uint8_t *set_uuid,
		  uint64_t *sectors, char *why, size_t whylen)
{
	const uint8_t *p = buf;
	uint64_t sync, chunk, bits;

	if (!is_bitmap(p, len, set_uuid)) {
		return refuse(why, whylen, -ENOENT,
			      "no md bitmap of this array there");
	}
	sync = get_le(p + BM_OFF_SYNC_SIZE, 8);
	chunk = get_le(p + BM_OFF_CHUNKSIZE, 4);
	if (!chunk || (chunk & (chunk - 1)) || chunk < 512) {
		return refuse(
			why, whylen, -EUCLEAN,
			"md bitmap chunksize %llu: not a power of two of at least 512 bytes (md does not load it)",
			(unsigned long long)chunk);
	}
	bits = sync / (chunk / 512) + (sync % (chunk / 512) != 0);
	*sectors = (BM_HEADER + bits / 8 + (bits % 8 != 0) + 511) / 512;
	return 0;
}

bool
md_bitmap_is_stale(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	return is_bitmap(p, len, NULL) &&
	       (get_le(p + BM_OFF_STATE, 4) & MD_BITMAP_STALE);
}

uint64_t
md_sb_sector(unsigned minor, uint64_t dev_bytes)
{
	uint64_t sectors = dev_bytes / 512;

	switch (minor) {
	case 0:
		if (sectors < SB_MIN_SECTORS_1_0 + MD_SB_BYTES / 512) {
			return UINT64_MAX;
		}
		return (sectors - SB_MIN_SECTORS_1_0) & ~7ull;
	case 1:
		return 0;
	case 2:
		return 8;
	}
	return UINT64_MAX;
}

unsigned
md_sb_minor(uint64_t super_offset)
{
	if (super_offset <= 4) {
		return 1;
	}
	return super_offset <= 8 ? 2 : 0;
}

const char *
md_feature_name(uint32_t bit)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ MD_FEATURE_BITMAP_OFFSET, "internal write-intent bitmap" },
		{ MD_FEATURE_RECOVERY_OFFSET, "recovery in progress" },
		{ MD_FEATURE_RESHAPE_ACTIVE, "reshape in progress" },
		{ MD_FEATURE_BAD_BLOCKS, "bad block list" },
		{ MD_FEATURE_REPLACEMENT, "replacement in progress" },
		{ MD_FEATURE_RESHAPE_BACKWARDS, "backwards reshape" },
		{ MD_FEATURE_NEW_OFFSET, "reshape to a new data offset" },
		{ MD_FEATURE_RECOVERY_BITMAP, "bitmap-guided recovery" },
		{ MD_FEATURE_CLUSTERED, "md-cluster" },
		{ MD_FEATURE_JOURNAL, "write journal" },
		{ MD_FEATURE_PPL, "partial parity log" },
		{ MD_FEATURE_MULTIPLE_PPLS, "multiple partial parity logs" },
		{ MD_FEATURE_RAID0_LAYOUT, "RAID 0 zone layout" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].bit == bit) {
			return names[i].name;
		}
	}
	return "unknown feature";
}
