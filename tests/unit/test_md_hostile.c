/*
 * test_md_hostile.c: superblocks whose geometry nbdraid must not write by
 * (src/superblock.c md_sb_check_geometry, src/metadata.c validation).
 *
 * Each case starts from the members mdadm itself made (tests/data/md) on
 * memory members, edits one field of every member's superblock (checksum
 * kept right, as a crafted image would), and assembles: the array must be
 * refused with an error naming the member, the field and the reason, and
 * every member byte must be as it was, no write issued.  Then the cases
 * that must still be served (md's own layouts at their edges, a RAID 1
 * chunk md ignores) read back what they write.
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

#include "array.h"
#include "helpers.h"
#include "md_data.h"
#include "mem_backend.h"
#include "metadata.h"
#include "superblock.h"
#include "util.h"

/* An mdadm case on memory members, in mdadm's order (member d is m[d]). */
struct hostile {
	struct md_case c;
	struct raid_config cfg;
	struct raid_member *m;
	struct mem_member *mm[MD_DATA_MAX_MEMBERS];
	uint8_t *before[MD_DATA_MAX_MEMBERS]; /* each member's bytes */
	unsigned nr;
	struct raid_array *a;
	int r; /* the last h_assemble's */
};

static uint8_t *
sb_at(struct hostile *x, unsigned d)
{
	return x->mm[d]->data + x->c.sb_sector * RAID_SECTOR_BYTES;
}

static void
h_open(struct hostile *x, const char *name)
{
	static struct md_case c; /* 2 x 8 x 12 KiB: not on the stack */

	md_case_load(name, &c);
	x->c = c;
	raid_config_init(&x->cfg);
	x->m = mem_members_create(x->c.members, x->c.member_bytes);
	for (unsigned d = 0; d < x->c.members; d++) {
		x->mm[d] = mem_of(&x->m[d]);
		memcpy(sb_at(x, d), x->c.sb[d], MD_SB_BYTES);
		if (x->c.bitmap) {
			memcpy(sb_at(x, d) +
				       x->c.bitmap_offset * RAID_SECTOR_BYTES,
			       x->c.bm[d], MD_SB_BYTES);
		}
	}
}

static void
h_close(struct hostile *x)
{
	raid_close(x->a);
	x->a = NULL;
	mem_members_free(x->m, x->c.members);
	x->m = NULL;
	for (unsigned d = 0; d < x->c.members; d++) {
		free(x->before[d]);
		x->before[d] = NULL;
	}
	raid_config_free(&x->cfg);
}

/* Every member's superblock edited alike, checksum recomputed. */
static void
h_edit(struct hostile *x, void (*edit)(struct md_sb *sb, void *arg), void *arg)
{
	static struct md_sb sb;
	char why[160];

	for (unsigned d = 0; d < x->c.members; d++) {
		assert_int_equal(md_sb_decode(sb_at(x, d), MD_SB_BYTES, &sb,
					      why, sizeof(why)),
				 0);
		edit(&sb, arg);
		md_sb_encode(&sb, sb_at(x, d));
	}
}

static int
h_assemble(struct hostile *x)
{
	for (unsigned d = 0; d < x->c.members; d++) {
		free(x->before[d]);
		x->before[d] = malloc(x->c.member_bytes);
		assert_non_null(x->before[d]);
		memcpy(x->before[d], x->mm[d]->data, x->c.member_bytes);
		x->mm[d]->count[IO_WRITE] = 0;
	}
	x->nr = x->c.members;
	t_last_error[0] = '\0';
	t_errors[0] = '\0';
	x->r = array_assemble(&x->cfg, x->m, &x->nr,
			      x->c.members + MEM_MEMBERS_ROOM, &x->a);
	return x->r;
}

/*
 * Refused, saying `why` (and the member's name when `member`); not one
 * member byte changed, no write issued.  false (printed) if not.
 */
static bool
h_refused_ok(struct hostile *x, const char *why, bool member)
{
	int r = h_assemble(x);
	bool ok = r != 0 && x->a == NULL && strstr(t_errors, why) &&
		  (!member || strstr(t_errors, "member mem"));

	if (!ok) {
		print_error("%s: assembled %d, errors '%s', want '%s'\n",
			    x->c.name, r, t_errors, why);
	}
	for (unsigned d = 0; d < x->c.members; d++) {
		if (x->mm[d]->count[IO_WRITE] ||
		    memcmp(x->mm[d]->data, x->before[d], x->c.member_bytes)) {
			print_error("%s: member %u written (%u writes)\n",
				    x->c.name, d, x->mm[d]->count[IO_WRITE]);
			ok = false;
		}
	}
	return ok;
}

static void
h_refused(struct hostile *x, const char *why, bool member)
{
	if (!h_refused_ok(x, why, member)) {
		fail();
	}
}

/* ---- edits ----------------------------------------------------------------
 */

struct set64 {
	size_t at; /* offsetof in md_sb */
	uint64_t v;
};

static void
set_u64(struct md_sb *sb, void *arg)
{
	const struct set64 *s = arg;

	memcpy((char *)sb + s->at, &s->v, sizeof(s->v));
}

static void
set_u32(struct md_sb *sb, void *arg)
{
	const struct set64 *s = arg;
	uint32_t v = (uint32_t)s->v;

	memcpy((char *)sb + s->at, &v, sizeof(v));
}

static void
set_u16(struct md_sb *sb, void *arg)
{
	const struct set64 *s = arg;
	uint16_t v = (uint16_t)s->v;

	memcpy((char *)sb + s->at, &v, sizeof(v));
}

static void
or_features(struct md_sb *sb, void *arg)
{
	sb->feature_map |= *(const uint32_t *)arg;
}

/* Every role table entry a role past raid_disks: spares, every one. */
static void
roles_all_spare(struct md_sb *sb, void *arg)
{
	(void)arg;
	for (uint32_t d = 0; d < sb->max_dev; d++) {
		if (sb->dev_roles[d] < MD_ROLE_MAX) {
			sb->dev_roles[d] = (uint16_t)(sb->raid_disks + 10);
		}
	}
}

#define U64(field, value)                                                      \
	set_u64, &(struct set64)                                               \
	{                                                                      \
		offsetof(struct md_sb, field), (uint64_t)(value)               \
	}
#define U32(field, value)                                                      \
	set_u32, &(struct set64)                                               \
	{                                                                      \
		offsetof(struct md_sb, field), (uint64_t)(value)               \
	}
#define U16(field, value)                                                      \
	set_u16, &(struct set64)                                               \
	{                                                                      \
		offsetof(struct md_sb, field), (uint64_t)(value)               \
	}

/* One refusal: a case, an edit of every member, the words expected. */
struct refusal {
	const char *name;
	void (*edit)(struct md_sb *sb, void *arg);
	void *arg;
	const char *why;
};

/*
 * Every field md's super_1_load, mdadm's load_super1 or nbdraid's own
 * writes depend on, made wrong one at a time.  The 1.2 members are 32768
 * sectors: superblock at 8, bitmap (raid1-x2-bitmap) at 16, bad-block
 * log at 16 (raid0-x3: 8) from the superblock, data from 2048; the 1.0
 * ones have the superblock at 32752, the log at -8, the bitmap at -16.
 */
static void
test_hostile_geometry_refused(void **state)
{
	static struct hostile x;
	uint32_t layout_bit = MD_FEATURE_RAID0_LAYOUT;
	const struct refusal cases[] = {
		/* Client writes would erase the superblock. */
		{ "raid5-ls-x4", U64(data_offset, 0),
		  "data_offset 0, data_size 30720: the data area (sectors "
		  "0-30719) overlaps the superblock (sectors 8-15, "
		  "super_offset 8)" },
		{ "raid10-n2-x4-v1.1", U64(data_offset, 4),
		  "the data area (sectors 4-30723) overlaps the superblock "
		  "(sectors 0-7" },
		/* A data offset that wraps, or lies past the end. */
		{ "raid5-ls-x4", U64(data_offset, UINT64_MAX - 100),
		  "data_offset 18446744073709551515 + data_size 30720 "
		  "sectors: past the member's end (32768 sectors)" },
		{ "raid1-x2-bitmap", U64(data_offset, 1ull << 55),
		  "past the member's end (32768 sectors)" },
		/* data_offset + data_size (+ size) past the member's end. */
		{ "raid5-ls-x4", U64(data_size, 30721),
		  "data_offset 2048 + data_size 30721 sectors: past the "
		  "member's end (32768 sectors)" },
		{ "raid5-ls-x4", U64(size, 30722),
		  "size 30722 sectors: more than data_size (30720 sectors)" },
		{ "raid1-x2-v1.0", U64(data_size, 32745),
		  "the data area (sectors 0-32744) overlaps the bad-block "
		  "log (sectors 32744-32751, bblog_offset -8, bblog_size 8)" },
		{ "raid1-x2-v1.0", U64(data_size, 32760),
		  "the data area (sectors 0-32759) overlaps the superblock "
		  "(sectors 32752-32759" },
		/* The data area over the bitmap, the bad-block log. */
		{ "raid1-x2-bitmap", U64(data_offset, 20),
		  "data_offset 20, data_size 30720: the data area (sectors "
		  "20-30739) overlaps the bitmap (sectors 16-23, "
		  "bitmap_offset 8)" },
		{ "raid5-ls-x4", U64(data_offset, 30),
		  "the data area (sectors 30-30749) overlaps the bad-block "
		  "log (sectors 24-31" },
		{ "raid5-ra-x3-v1.0-bitmap", U64(data_size, 32740),
		  "the data area (sectors 0-32739) overlaps the bitmap "
		  "(sectors 32736-32743, bitmap_offset -16)" },
		/* md's bitmap outside the member, or over its superblock. */
		{ "raid1-x2-bitmap", U32(bitmap_offset, 0x7fffffff),
		  "bitmap_offset 2147483647: the bitmap (sectors "
		  "2147483655-2147483662) lies outside the member (sectors "
		  "0-32767)" },
		{ "raid1-x2-bitmap", U32(bitmap_offset, (uint32_t)-9),
		  "bitmap_offset -9: the bitmap (sectors -1-6) lies outside" },
		{ "raid1-x2-bitmap", U32(bitmap_offset, 2),
		  "bitmap_offset 2: the bitmap (sectors 10-17) overlaps the "
		  "superblock (sectors 8-15" },
		{ "raid1-x2-bitmap", U32(bitmap_offset, 24),
		  "bitmap_offset 24: no md bitmap of this array there" },
		/* The bad-block log outside the member, or over others. */
		{ "raid5-ls-x4", U32(bblog_offset, (uint32_t)-100),
		  "bblog_offset -100, bblog_size 8: the bad-block log (sectors "
		  "-92--85) lies outside the member" },
		{ "raid1-x2-v1.0", U32(bblog_offset, 16),
		  "bblog_offset 16, bblog_size 8: the bad-block log (sectors "
		  "32768-32775) lies outside the member (sectors 0-32767)" },
		{ "raid5-ls-x4", U32(bblog_offset, 4),
		  "bblog_offset 4, bblog_size 8: the bad-block log (sectors "
		  "12-19) overlaps the superblock (sectors 8-15" },
		{ "raid1-x2-bitmap", U32(bblog_offset, 4 + 8),
		  "bblog_offset 12, bblog_size 8: the bad-block log (sectors "
		  "20-27) overlaps the bitmap (sectors 16-23" },
		{ "raid5-ls-x4", U16(bblog_size, 4096),
		  "the data area (sectors 2048-32767) overlaps the bad-block "
		  "log (sectors 24-4119, bblog_offset 16, bblog_size 4096)" },
		/* Sizes. */
		{ "raid5-ls-x4", U64(data_size, 9),
		  "data_size 9 sectors: less than md's 10" },
		{ "raid5-ls-x4", U64(size, 0),
		  "size 0: a raid5 array holding nothing" },
		/* Chunks nbdraid cannot place (it places by shifts). */
		{ "raid0-x3", U32(chunksize, 24),
		  "chunksize 24 sectors: not a power of two (md places such "
		  "RAID 0 chunks by division, nbdraid by shifts: not served)" },
		{ "raid5-ls-x4", U32(chunksize, 96),
		  "chunksize 96 sectors: not a power of two (md requires one "
		  "for raid5)" },
		{ "raid10-n2-x4-v1.1", U32(chunksize, 8388608),
		  "chunksize 8388608 sectors: nbdraid serves chunks from 4 KiB "
		  "to 16 MiB" },
		{ "raid5-ls-x4", U32(chunksize, 4),
		  "chunksize 4 sectors: nbdraid serves chunks from 4 KiB" },
		{ "raid0-x3", U32(chunksize, 0),
		  "chunksize 0: raid0 needs a chunk" },
		{ "raid0-x3", U64(data_size, 200),
		  "data_size 200 sectors: less than one chunk" },
		/* Counts and features. */
		{ "raid5-ls-x4", U32(raid_disks, 0),
		  "raid_disks 0: an array of no members" },
		{ "raid5-ls-x4", or_features, &layout_bit,
		  "feature_map: RAID 0 layout (0x1000) on a raid5 array (md "
		  "refuses it)" },
	};

	unsigned failed = 0;

	(void)state;
	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		h_open(&x, cases[k].name);
		h_edit(&x, cases[k].edit, cases[k].arg);
		failed += !h_refused_ok(&x, cases[k].why, true);
		h_close(&x);
	}
	assert_int_equal(failed, 0);
}

/*
 * A role table naming only spares (every entry past raid_disks): no
 * member holds a role.  Refused as such, with nothing read from before
 * the table of data offsets (the first present role's was index -1).
 */
static void
test_hostile_roles_only_spares(void **state)
{
	static struct hostile x;

	(void)state;
	h_open(&x, "raid5-ls-x4");
	h_edit(&x, roles_all_spare, NULL);
	h_refused(&x, "no member holds a role of the array (4 roles)", false);
	h_close(&x);
}

/*
 * raid_disks 65, one more role than nbdraid serves (RAID_MAX_MEMBERS),
 * in every member's superblock: refused by assembly (EOPNOTSUPP), naming
 * the freshest member and the field, before any write.
 */
static void
test_hostile_too_many_roles(void **state)
{
	static struct hostile x;

	(void)state;
	h_open(&x, "raid5-ls-x4");
	h_edit(&x, U32(raid_disks, RAID_MAX_MEMBERS + 1));
	h_refused(&x,
		  "member mem0: raid_disks 65: nbdraid serves at most 64 "
		  "members",
		  true);
	assert_int_equal(x.r, -EOPNOTSUPP);
	h_close(&x);
}

/* One spare's superblock bad: the whole array is refused, naming it. */
static void
test_hostile_one_member(void **state)
{
	static struct hostile x;
	static struct md_sb sb;
	char why[160];

	(void)state;
	h_open(&x, "raid10-n2-x4-v1.1");
	assert_int_equal(
		md_sb_decode(sb_at(&x, 2), MD_SB_BYTES, &sb, why, sizeof(why)),
		0);
	sb.data_offset = 0;
	md_sb_encode(&sb, sb_at(&x, 2));
	h_refused(&x, "member mem2: data_offset 0, data_size 30720", true);
	h_close(&x);
}

/*
 * What md lays out at the edges is served: the 1.0 areas packed back to
 * back, and a RAID 1 chunk md ignores (a nonsense one, 24 sectors: the
 * RAID 1 array is served and reads back what it writes, on every copy).
 */
static void
test_hostile_edges_served(void **state)
{
	static struct hostile x;
	static const char *const packed[] = { "raid5-ra-x3-v1.0-bitmap",
					      "raid1-x2-v1.0" };
	uint8_t buf[8192], got[8192];

	(void)state;
	for (unsigned k = 0; k < ARRAY_SIZE(packed); k++) {
		h_open(&x, packed[k]);
		assert_int_equal(h_assemble(&x), 0);
		h_close(&x);
	}
	h_open(&x, "raid1-x2-bitmap");
	h_edit(&x, U32(chunksize, 24));
	assert_int_equal(h_assemble(&x), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(x.a, buf, sizeof(buf), 12288, 0), 0);
	assert_int_equal(raid_pread(x.a, got, sizeof(got), 12288, 0), 0);
	assert_memory_equal(got, buf, sizeof(buf));
	for (unsigned d = 0; d < x.c.members; d++) {
		assert_memory_equal(x.mm[d]->data + 2048 * 512 + 12288, buf,
				    sizeof(buf));
	}
	h_close(&x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_hostile_geometry_refused, t_setup),
		cmocka_unit_test_setup(test_hostile_roles_only_spares, t_setup),
		cmocka_unit_test_setup(test_hostile_too_many_roles, t_setup),
		cmocka_unit_test_setup(test_hostile_one_member, t_setup),
		cmocka_unit_test_setup(test_hostile_edges_served, t_setup),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
