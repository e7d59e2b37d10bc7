/*
 * test_superblock.c: md's v1 superblock (src/superblock.c) against mdadm.
 *
 * tests/data/md holds superblocks that mdadm 4.2 itself wrote (metadata
 * 1.0, 1.1 and 1.2; RAID 0, 1, 5, 10; with and without a bitmap; made by
 * tests/data/md/make.sh in the VM) and what `mdadm --examine` printed for
 * each.  Every one must decode with its checksum correct, every field
 * must say what mdadm said, and encoding the decoded superblock must give
 * back mdadm's bytes exactly.  Then: round trips of every field with
 * values of every width, the checksum with an odd max_dev, each refusal.
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

#include "helpers.h"
#include "md_data.h"
#include "superblock.h"

static unsigned long long
examine_num(const char *text, const char *key)
{
	char val[128];

	assert_non_null(md_examine(text, key, val, sizeof(val)));
	return strtoull(val, NULL, 0);
}

/* A UUID as mdadm prints it: 4 groups of 4 bytes in hex, ':' between. */
static void
uuid_text(const uint8_t *u, char *buf)
{
	for (unsigned i = 0; i < 16; i++) {
		buf += sprintf(buf, "%s%02x", i && i % 4 == 0 ? ":" : "", u[i]);
	}
}

static const char *
level_text(int32_t level)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "raid%d", level);
	return buf;
}

/* Every field mdadm printed, against the decoded superblock. */
static void
check_against_examine(const struct md_sb *sb, const char *text)
{
	char val[128], uuid[40];

	assert_non_null(md_examine(text, "Version", val, sizeof(val)));
	assert_int_equal(val[2] - '0', md_sb_minor(sb->super_offset));
	assert_int_equal(examine_num(text, "Feature Map"), sb->feature_map);
	uuid_text(sb->set_uuid, uuid);
	assert_string_equal(md_examine(text, "Array UUID", val, sizeof(val)),
			    uuid);
	uuid_text(sb->device_uuid, uuid);
	assert_string_equal(md_examine(text, "Device UUID", val, sizeof(val)),
			    uuid);
	/* mdadm may add "  (local to host ...)". */
	md_examine(text, "Name", val, sizeof(val));
	val[strcspn(val, " ")] = '\0';
	assert_string_equal(val, sb->set_name);
	assert_string_equal(md_examine(text, "Raid Level", val, sizeof(val)),
			    level_text(sb->level));
	assert_int_equal(examine_num(text, "Raid Devices"), sb->raid_disks);
	assert_int_equal(examine_num(text, "Avail Dev Size"), sb->data_size);
	if (md_examine(text, "Used Dev Size", val, sizeof(val))) {
		assert_int_equal(strtoull(val, NULL, 10), sb->size);
	} else if (sb->level == 0) {
		assert_int_equal(sb->size, 0); /* RAID 0 uses data_size */
	} else {
		assert_int_equal(sb->size, sb->data_size);
	}
	if (md_examine(text, "Data Offset", val, sizeof(val))) {
		assert_int_equal(strtoull(val, NULL, 10), sb->data_offset);
	} else {
		assert_int_equal(sb->data_offset, 0); /* 1.0 */
	}
	assert_int_equal(examine_num(text, "Super Offset"), sb->super_offset);
	assert_string_equal(md_examine(text, "State", val, sizeof(val)),
			    sb->resync_offset == MD_RESYNC_DONE ? "clean"
								: "active");
	assert_int_equal(examine_num(text, "Events"), sb->events);
	if (md_examine(text, "Chunk Size", val, sizeof(val))) {
		assert_int_equal(strtoull(val, NULL, 10) * 2, sb->chunksize);
	} else {
		assert_int_equal(sb->chunksize, 0); /* RAID 1 */
	}
	if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET) {
		assert_int_equal(strtoll(md_examine(text, "Internal Bitmap",
						    val, sizeof(val)),
					 NULL, 10),
				 sb->bitmap_offset);
	}
	md_examine(text, "Checksum", val, sizeof(val));
	assert_int_equal(strtoul(val, NULL, 16), sb->sb_csum);
	assert_non_null(strstr(val, "correct"));
	md_examine(text, "Device Role", val, sizeof(val));
	snprintf(uuid, sizeof(uuid), "Active device %u", md_sb_role(sb));
	assert_string_equal(val, uuid);
}

/* mdadm's superblocks decode to what mdadm -E says, and encode back. */
static void
test_superblock_matches_mdadm(void **state)
{
	static uint8_t again[MD_SB_BYTES];
	static struct md_case c;
	static struct md_sb sb;
	char why[160];

	(void)state;
	for (unsigned k = 0; k < md_case_count; k++) {
		md_case_load(md_case_names[k], &c);
		for (unsigned d = 0; d < c.members; d++) {
			if (md_sb_decode(c.sb[d], MD_SB_BYTES, &sb, why,
					 sizeof(why)) != 0) {
				print_error("%s member %u: %s\n", c.name, d,
					    why);
				fail();
			}
			check_against_examine(&sb, c.examine[d]);
			assert_int_equal(md_sb_role(&sb), d);
			assert_int_equal(sb.super_offset, c.sb_sector);
			md_sb_encode(&sb, again);
			assert_memory_equal(again, c.sb[d],
					    MD_SB_FIXED + 2 * sb.max_dev);
		}
	}
}

/* Distinct values in every field, of every width, survive a round trip. */
static void
test_superblock_round_trip_every_field(void **state)
{
	static struct md_sb a, b;
	static uint8_t buf[MD_SB_BYTES];
	char why[160];

	(void)state;
	for (unsigned iter = 0; iter < 200; iter++) {
		memset(&a, 0, sizeof(a));
		a.feature_map = t_rand(1u << 13);
		t_fill_random(a.set_uuid, sizeof(a.set_uuid));
		snprintf(a.set_name, sizeof(a.set_name), "host%u:name%llu",
			 iter, (unsigned long long)t_rand(1000000));
		a.ctime = t_rand(UINT64_MAX);
		a.level = (int32_t)t_rand(UINT32_MAX);
		a.layout = t_rand(UINT32_MAX);
		a.size = t_rand(UINT64_MAX);
		a.chunksize = t_rand(UINT32_MAX);
		a.raid_disks = t_rand(UINT32_MAX);
		a.bitmap_offset = -(int32_t)t_rand(1u << 30);
		a.new_level = t_rand(UINT32_MAX);
		a.reshape_position = t_rand(UINT64_MAX);
		a.delta_disks = -(int32_t)t_rand(100);
		a.new_layout = t_rand(UINT32_MAX);
		a.new_chunk = t_rand(UINT32_MAX);
		a.new_offset = -(int32_t)t_rand(1u << 30);
		a.data_offset = t_rand(UINT64_MAX);
		a.data_size = t_rand(UINT64_MAX);
		a.super_offset = t_rand(UINT64_MAX);
		a.recovery_offset = t_rand(UINT64_MAX);
		a.dev_number = t_rand(UINT32_MAX);
		a.cnt_corrected_read = t_rand(UINT32_MAX);
		t_fill_random(a.device_uuid, sizeof(a.device_uuid));
		a.devflags = t_rand(256);
		a.bblog_shift = t_rand(256);
		a.bblog_size = t_rand(65536);
		a.bblog_offset = -(int32_t)t_rand(1u << 30);
		a.utime = t_rand(UINT64_MAX);
		a.events = t_rand(UINT64_MAX);
		a.resync_offset = t_rand(UINT64_MAX);
		a.max_dev = 1 + t_rand(MD_MAX_DEV_LIMIT);
		for (uint32_t i = 0; i < a.max_dev; i++) {
			a.dev_roles[i] = t_rand(65536);
		}
		md_sb_encode(&a, buf);
		assert_int_equal(
			md_sb_decode(buf, sizeof(buf), &b, why, sizeof(why)),
			0);
		a.sb_csum = b.sb_csum; /* computed by encode */
		assert_int_equal(b.sb_csum, md_sb_csum(buf, a.max_dev));
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

/*
 * The checksum counts exactly 256 + 2 * max_dev bytes: a trailing half
 * word when max_dev is odd, nothing past it (mdadm leaves 0xff there).
 */
static void
test_superblock_checksum_covers_roles_only(void **state)
{
	static struct md_sb a, b;
	static uint8_t buf[MD_SB_BYTES];
	char why[160];

	(void)state;
	for (uint32_t max_dev = 127; max_dev <= 130; max_dev++) {
		memset(&a, 0, sizeof(a));
		a.max_dev = max_dev;
		a.events = 7;
		for (uint32_t i = 0; i < max_dev; i++) {
			a.dev_roles[i] = MD_ROLE_SPARE;
		}
		a.dev_roles[max_dev - 1] = 3;
		md_sb_encode(&a, buf);
		/* Bytes after the roles do not count. */
		memset(buf + MD_SB_FIXED + 2 * max_dev, 0xff,
		       MD_SB_BYTES - MD_SB_FIXED - 2 * max_dev);
		assert_int_equal(
			md_sb_decode(buf, sizeof(buf), &b, why, sizeof(why)),
			0);
		/* The last role does. */
		buf[MD_SB_FIXED + 2 * (max_dev - 1)] ^= 1;
		assert_int_equal(
			md_sb_decode(buf, sizeof(buf), &b, why, sizeof(why)),
			-EBADMSG);
		assert_non_null(strstr(why, "checksum"));
	}
}

/* Each refusal, with its reason. */
static void
test_superblock_refusals(void **state)
{
	static struct md_sb a, b;
	static uint8_t good[MD_SB_BYTES], buf[MD_SB_BYTES];
	static const struct {
		unsigned off;
		uint8_t value;
		int err;
		const char *why;
	} cases[] = {
		{ 0, 0x00, -ENOENT, "no md superblock" },
		{ 4, 2, -EINVAL, "major version 2" },
		{ 12, 1, -EINVAL, "padding" },
		{ 224 + 31, 1, -EINVAL, "padding" },
		{ 221, 0x10, -EINVAL, "max_dev 4224" },
		{ 80, 0x55, -EBADMSG, "checksum" },
	};
	char why[160];

	(void)state;
	memset(&a, 0, sizeof(a));
	a.max_dev = 128;
	md_sb_encode(&a, good);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		memcpy(buf, good, sizeof(buf));
		buf[cases[c].off] = cases[c].value;
		why[0] = '\0';
		assert_int_equal(
			md_sb_decode(buf, sizeof(buf), &b, why, sizeof(why)),
			cases[c].err);
		if (!strstr(why, cases[c].why)) {
			print_error("case %zu: '%s' does not say '%s'\n", c,
				    why, cases[c].why);
			fail();
		}
	}
	/* Too short to be one. */
	assert_int_equal(
		md_sb_decode(good, MD_SB_BYTES - 1, &b, why, sizeof(why)),
		-ENOENT);
}

/*
 * The set name ends at its first NUL: bytes after it on disk are not
 * kept, so the decoded superblock encodes and decodes back to itself
 * (found by tests/fuzz: they were kept, and encode wrote NULs instead).
 */
static void
test_superblock_name_ends_at_nul(void **state)
{
	static struct md_sb a, b, c;
	static uint8_t buf[MD_SB_BYTES];
	char why[160];
	uint32_t csum;
	size_t n;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.max_dev = 128;
	strcpy(a.set_name, "host:md0");
	md_sb_encode(&a, buf);
	/* Bytes after the NUL, and the checksum made right again. */
	n = strlen(a.set_name) + 1;
	memset(buf + 32 + n, 'x', 32 - n);
	csum = md_sb_csum(buf, a.max_dev);
	for (unsigned i = 0; i < 4; i++) {
		buf[216 + i] = csum >> (8 * i);
	}
	assert_int_equal(md_sb_decode(buf, sizeof(buf), &b, why, sizeof(why)),
			 0);
	assert_string_equal(b.set_name, "host:md0");
	for (size_t i = strlen(b.set_name); i < sizeof(b.set_name); i++) {
		assert_int_equal(b.set_name[i], '\0');
	}
	md_sb_encode(&b, buf);
	assert_int_equal(md_sb_decode(buf, sizeof(buf), &c, why, sizeof(why)),
			 0);
	b.sb_csum = c.sb_csum;
	assert_memory_equal(&b, &c, sizeof(b));
}

/*
 * A max_dev past what 4096 bytes hold is encoded as it is (decode then
 * refuses it) without reading past the buffer for the checksum (found by
 * tests/fuzz: encode summed 256 + 2 * max_dev bytes of its 4096).
 */
static void
test_superblock_encode_max_dev_past_limit(void **state)
{
	static const uint32_t max_devs[] = { MD_MAX_DEV_LIMIT + 1, 1u << 30 };
	static struct md_sb a, b;
	char why[160];

	(void)state;
	for (size_t i = 0; i < sizeof(max_devs) / sizeof(max_devs[0]); i++) {
		/* Exactly MD_SB_BYTES on the heap: ASan sees one byte more. */
		uint8_t *buf = malloc(MD_SB_BYTES);

		assert_non_null(buf);
		memset(&a, 0, sizeof(a));
		a.max_dev = max_devs[i];
		md_sb_encode(&a, buf);
		assert_int_equal(buf[220] | buf[221] << 8 | buf[222] << 16 |
					 (uint32_t)buf[223] << 24,
				 max_devs[i]);
		assert_int_equal(md_sb_csum(buf, max_devs[i]),
				 md_sb_csum(buf, MD_MAX_DEV_LIMIT));
		assert_int_equal(
			md_sb_decode(buf, MD_SB_BYTES, &b, why, sizeof(why)),
			-EINVAL);
		assert_non_null(strstr(why, "max_dev"));
		free(buf);
	}
}

/* Where each minor version lives, as md places it. */
static void
test_superblock_places(void **state)
{
	(void)state;
	assert_int_equal(md_sb_sector(2, 16 << 20), 8);
	assert_int_equal(md_sb_sector(1, 16 << 20), 0);
	/* 1.0: (sectors - 16) rounded down to 8: 32752 for 16 MiB. */
	assert_int_equal(md_sb_sector(0, 16 << 20), 32752);
	assert_int_equal(md_sb_sector(0, (16 << 20) + 3 * 512), 32752);
	assert_int_equal(md_sb_sector(0, 4096), UINT64_MAX);
	assert_int_equal(md_sb_minor(8), 2);
	assert_int_equal(md_sb_minor(0), 1);
	assert_int_equal(md_sb_minor(32752), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_superblock_matches_mdadm, t_setup),
		cmocka_unit_test_setup(test_superblock_round_trip_every_field,
				       t_setup),
		cmocka_unit_test_setup(
			test_superblock_checksum_covers_roles_only, t_setup),
		cmocka_unit_test_setup(test_superblock_refusals, t_setup),
		cmocka_unit_test_setup(test_superblock_name_ends_at_nul,
				       t_setup),
		cmocka_unit_test_setup(
			test_superblock_encode_max_dev_past_limit, t_setup),
		cmocka_unit_test_setup(test_superblock_places, t_setup),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
