/*
 * superblock.h: Linux md's v1.x superblock, decoded and encoded field by
 * field (little-endian on disk, host order here), never as a struct dump.
 *
 * On disk: a 256-byte fixed part, then max_dev little-endian u16 roles,
 * at a place that depends on the minor version (md_sb_sector).  The
 * checksum covers exactly those 256 + 2 * max_dev bytes.  docs/metadata.md
 * has every field: what nbdraid writes, reads and refuses.
 *
 * Pure: no I/O, no allocation, no logging; the decoder takes any bytes
 * (it is fuzzed: tests/fuzz) and says what is wrong in `why`.
 */
#ifndef RAID_SUPERBLOCK_H
#define RAID_SUPERBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD_SB_MAGIC	 0xa92b4efcu
#define MD_SB_BYTES	 4096u /* what md and mdadm read and write */
#define MD_SB_FIXED	 256u  /* the fixed part, before the roles */
#define MD_MAX_DEV_LIMIT 1920u /* roles that fit in MD_SB_BYTES */

/* Role table entries: a slot number below MD_ROLE_MAX, or one of these. */
#define MD_ROLE_MAX	0xff00u
#define MD_ROLE_JOURNAL 0xfffdu
#define MD_ROLE_FAULTY	0xfffeu
#define MD_ROLE_SPARE	0xffffu /* also: an unused entry, a removed member */

/* feature_map bits (md_p.h). */
enum md_feature {
	MD_FEATURE_BITMAP_OFFSET = 0x1,
	MD_FEATURE_RECOVERY_OFFSET = 0x2,
	MD_FEATURE_RESHAPE_ACTIVE = 0x4,
	MD_FEATURE_BAD_BLOCKS = 0x8,
	MD_FEATURE_REPLACEMENT = 0x10,
	MD_FEATURE_RESHAPE_BACKWARDS = 0x20,
	MD_FEATURE_NEW_OFFSET = 0x40,
	MD_FEATURE_RECOVERY_BITMAP = 0x80,
	MD_FEATURE_CLUSTERED = 0x100,
	MD_FEATURE_JOURNAL = 0x200,
	MD_FEATURE_PPL = 0x400,
	MD_FEATURE_MULTIPLE_PPLS = 0x800,
	MD_FEATURE_RAID0_LAYOUT = 0x1000,
	MD_FEATURE_ALL = 0x1fff,
};

/* resync_offset when the array is clean (in sync everywhere). */
#define MD_RESYNC_DONE UINT64_MAX

/* ctime/utime: low 40 bits seconds, high 24 bits microseconds. */
#define MD_TIME_SEC_MASK ((1ull << 40) - 1)

/* Every field of a v1 superblock, in host order.  Units as on disk. */
struct md_sb {
	uint32_t feature_map;
	uint8_t set_uuid[16];
	char set_name[33];     /* 32 bytes on disk, NUL-padded */
	uint64_t ctime;	       /* MD_TIME_SEC_MASK: seconds */
	int32_t level;	       /* -1 linear, 0, 1, 4, 5, 6, 10 ... */
	uint32_t layout;       /* per level (md_layout in layout.h) */
	uint64_t size;	       /* sectors of each member in use */
	uint32_t chunksize;    /* sectors; RAID 1: 0 */
	uint32_t raid_disks;   /* roles in the array */
	int32_t bitmap_offset; /* sectors from the superblock (0x1) */
	uint32_t new_level;    /* reshape fields (0x4): kept as read */
	uint64_t reshape_position;
	int32_t delta_disks;
	uint32_t new_layout;
	uint32_t new_chunk;
	int32_t new_offset;
	uint64_t data_offset;	  /* sectors: where data starts */
	uint64_t data_size;	  /* sectors usable for data */
	uint64_t super_offset;	  /* sectors: this superblock's place */
	uint64_t recovery_offset; /* sectors rebuilt, from data_offset (0x2) */
	uint32_t dev_number;	  /* this member's entry in dev_roles */
	uint32_t cnt_corrected_read;
	uint8_t device_uuid[16];
	uint8_t devflags; /* 1 write-mostly, 2 failfast */
	uint8_t bblog_shift;
	uint16_t bblog_size;  /* sectors */
	int32_t bblog_offset; /* sectors from the superblock */
	uint64_t utime;
	uint64_t events;
	uint64_t resync_offset; /* MD_RESYNC_DONE: clean */
	uint32_t sb_csum;	/* as read; encode computes it */
	uint32_t max_dev;	/* entries in dev_roles */
	uint16_t dev_roles[MD_MAX_DEV_LIMIT];
};

/*
 * Decode a superblock from buf (len >= MD_SB_BYTES, as read at its
 * place).  0; -ENOENT, no md superblock here (wrong magic); -EINVAL, a
 * damaged or unsupported one (major version, padding, max_dev), or
 * -EBADMSG, a bad checksum: why says which, in words.  Feature bits are
 * not judged here (md_sb_refused_features).
 */
int md_sb_decode(const void *buf, size_t len, struct md_sb *sb, char *why,
		 size_t whylen);

/*
 * Is sb's geometry whole on a member of dev_bytes (md's super_1_load and
 * mdadm's load_super1 rules, and the room nbdraid writes in)?  The
 * superblock's 4 KiB (what nbdraid writes), the data area (data_offset,
 * data_size), md's bitmap (feature 0x1: bitmap_sectors of it, at least
 * the 4 KiB nbdraid writes there) and the bad-block log (bblog_offset and
 * bblog_size, when both are set) must each lie inside the member and
 * overlap none of the others; data_size at least md's 10 sectors; the
 * used size (size, levels above 0) inside data_size and not 0; feature
 * 0x1000 only at RAID 0.  0, or -EUCLEAN with why naming the field and
 * the reason.  Pure, like the decoder (fuzzed).
 */
int md_sb_check_geometry(const struct md_sb *sb, uint64_t dev_bytes,
			 uint64_t bitmap_sectors, char *why, size_t whylen);

/* Encode into buf (MD_SB_BYTES, zeroed past the roles), checksum set. */
void md_sb_encode(const struct md_sb *sb, void *buf);

/*
 * md's checksum of an encoded superblock (its sb_csum field counts 0),
 * over MD_SB_BYTES at most: max_dev counts as MD_MAX_DEV_LIMIT past it.
 */
uint32_t md_sb_csum(const void *buf, uint32_t max_dev);

/*
 * Where a v1.minor superblock lives on a member of dev_bytes bytes, in
 * sectors: 1.0 near the end, 1.1 at 0, 1.2 at 4 KiB.  UINT64_MAX when the
 * member is too small to hold one.
 */
uint64_t md_sb_sector(unsigned minor, uint64_t dev_bytes);
/* The minor version a superblock at super_offset sectors is (as mdadm). */
unsigned md_sb_minor(uint64_t super_offset);

/*
 * md's internal write-intent bitmap: its 256-byte superblock heads the
 * bitmap, at the md superblock's place plus bitmap_offset sectors.
 * nbdraid does not keep the bits; before its first write it marks the
 * bitmap stale, so md resyncs the whole array after an unclean shutdown
 * (and nothing after a clean one) and no bit ever calls a written chunk
 * clean.  Mark buf (the bitmap's first bytes, len >= 256) stale: 0, or
 * -ENOENT when it is not a bitmap of the array with this uuid.
 */
#define MD_BITMAP_MAGIC 0x6d746962u /* "bitm" */
#define MD_BITMAP_STALE 0x2u	    /* state bit: out of date */
int md_bitmap_mark_stale(void *buf, size_t len, const uint8_t *set_uuid);
/*
 * The sectors md's bitmap in buf (len >= 256) spans: its 256-byte
 * superblock and a bit per bitmap chunk of sync_size, rounded up to a
 * sector.  0; -ENOENT, not a bitmap of the array set_uuid; -EUCLEAN, one
 * md would not load (its chunksize not a power of two of at least 512
 * bytes): why says which.
 */
int md_bitmap_sectors(const void *buf, size_t len, const uint8_t *set_uuid,
		      uint64_t *sectors, char *why, size_t whylen);
/* Is the bitmap in buf marked stale?  (tests, examine) */
bool md_bitmap_is_stale(const void *buf, size_t len);

/* Names of the feature bits nbdraid cannot honour, in md's words. */
const char *md_feature_name(uint32_t bit);

/* The role of the member this superblock belongs to (its own entry). */
static inline uint16_t
md_sb_role(const struct md_sb *sb)
{
	return sb->dev_number < sb->max_dev ? sb->dev_roles[sb->dev_number]
					    : MD_ROLE_SPARE;
}

#endif
