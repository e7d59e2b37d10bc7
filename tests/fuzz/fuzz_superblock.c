/*
 * fuzz_superblock.c: a libFuzzer target for md's on-disk superblock code
 * in src/superblock.c (built and run by tests/fuzz/run.sh).
 *
 * Every input goes to every entry of targets[], one function per decoder
 * (and encoder, checksum): a new decoder (the bitmap superblock) is one
 * more function and one more line in the table.  Sanitizers catch what crashes
 * or reads out of bounds; CHECK() aborts on what is merely wrong:
 *
 *   md_sb_decode  refuses with -ENOENT, -EINVAL or -EBADMSG and a
 *                 NUL-terminated why inside whylen (never past it), or
 *                 decodes to a superblock whose role table fits, whose
 *                 set_name is a string, whose own role is its entry, and
 *                 that encodes and decodes back to itself (sb_csum aside,
 *                 which encode computes).  Short inputs never decode.
 *   md_sb_encode  any struct md_sb (the input's bytes) stays within its
 *                 4096 bytes; with a role table md can hold it decodes to
 *                 the same fields, and round-trips from there.
 *   md_sb_csum    any max_dev up to MD_MAX_DEV_LIMIT over 4096 bytes: md's
 *                 sum (md.c calc_sb_1_csum), written out again below,
 *                 blind to its own field and to the bytes past the roles;
 *                 past the limit, the same as at the limit.
 *   md_sb_check_geometry  any struct md_sb on a member of up to 65535
 *                 sectors: refused with -EUCLEAN and a why, or accepted
 *                 only if, painted sector by sector, the superblock's 8,
 *                 the data area, md's bitmap and the bad-block log each
 *                 lie inside the member and no sector is painted twice
 *                 (an oracle apart from the code's interval arithmetic),
 *                 with md's sizes (data_size >= 10; 0 < size <= data_size
 *                 above RAID 0; feature 0x1000 only at RAID 0).
 *   md_bitmap_sectors  any 4096 bytes: -ENOENT, -EUCLEAN with a why, or
 *                 the bitmap's sectors: its header and one bit a chunk.
 *
 * Random bytes almost never carry a right checksum, so the decoder is also
 * given the input with its checksum made right: the fuzzer then reaches
 * the role table and the round trip, not only the refusals.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "superblock.h"

/* The entry of targets[] running, for CHECK's message. */
static const char *fuzzing;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n",       \
				__FILE__, __LINE__, fuzzing, #cond);           \
			abort();                                               \
		}                                                              \
	} while (0)

#define OFF_SB_CSUM	 216
#define OFF_MAX_DEV	 220
#define WHY_BYTES	 160
#define MD_SB_NAME_BYTES 32
#define WHY_GUARD	 16   /* sentinel bytes after whylen */
#define WHY_FILL	 0xa5 /* never a byte of a message */

static uint32_t
le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++) {
		p[i] = v >> (8 * i);
	}
}

/* The input as the decoder reads it at its place: cut or zero-padded. */
static void
pad(uint8_t *buf, const uint8_t *data, size_t size)
{
	size_t n = size < MD_SB_BYTES ? size : MD_SB_BYTES;

	memcpy(buf, data, n);
	memset(buf + n, 0, MD_SB_BYTES - n);
}

/* A decoded superblock obeys what the header promises of one. */
static void
check_sb(const struct md_sb *sb)
{
	uint64_t sector;
	unsigned minor;

	CHECK(sb->max_dev <= MD_MAX_DEV_LIMIT);
	CHECK(memchr(sb->set_name, '\0', sizeof(sb->set_name)) != NULL);
	if (sb->dev_number < sb->max_dev) {
		CHECK(md_sb_role(sb) == sb->dev_roles[sb->dev_number]);
	} else {
		CHECK(md_sb_role(sb) == MD_ROLE_SPARE);
	}
	/* Unused entries past max_dev stay zero. */
	for (uint32_t i = sb->max_dev; i < MD_MAX_DEV_LIMIT; i++) {
		CHECK(sb->dev_roles[i] == 0);
	}
	/* Every feature bit has a name, if only "unknown feature". */
	for (unsigned b = 0; b < 32; b++) {
		if (sb->feature_map & (1u << b)) {
			CHECK(md_feature_name(1u << b) != NULL);
		}
	}
	minor = md_sb_minor(sb->super_offset);
	CHECK(minor <= 2);
	/* The member this superblock would lie on: any size, even wrapped. */
	sector = md_sb_sector(minor, sb->super_offset * 512 + MD_SB_BYTES);
	CHECK(sector == UINT64_MAX || sector % 8 == 0);
	for (unsigned m = 0; m < 4; m++) {
		sector = md_sb_sector(m, sb->data_size * 512);
		CHECK(m <= 2 || sector == UINT64_MAX);
	}
}

/* Encode the decoded superblock, decode that: the same superblock. */
static void
check_round_trip(const struct md_sb *sb)
{
	static uint8_t enc[MD_SB_BYTES], enc2[MD_SB_BYTES];
	static struct md_sb again, want;
	char why[WHY_BYTES];
	int rc;

	md_sb_encode(sb, enc);
	CHECK(le32(enc + OFF_SB_CSUM) == md_sb_csum(enc, sb->max_dev));
	memset(&again, 0xee, sizeof(again));
	rc = md_sb_decode(enc, sizeof(enc), &again, why, sizeof(why));
	if (rc != 0) {
		fprintf(stderr, "re-encoded superblock refused: %s\n", why);
	}
	CHECK(rc == 0);
	memcpy(&want, sb, sizeof(want));
	want.sb_csum = le32(enc + OFF_SB_CSUM);
	CHECK(again.sb_csum == want.sb_csum);
	CHECK(memcmp(&again, &want, sizeof(want)) == 0);
	/* And the encoding is a fixed point from then on. */
	md_sb_encode(&again, enc2);
	CHECK(memcmp(enc, enc2, sizeof(enc)) == 0);
}

/*
 * One md_sb_decode call with a why of whylen bytes: a refusal in words
 * that fit, nothing written past whylen, a decoded superblock checked.
 * Returns what md_sb_decode returned.
 */
static int
decode_one(const uint8_t *buf, size_t len, size_t whylen, struct md_sb *sb)
{
	char why[WHY_BYTES + WHY_GUARD];
	int rc;

	memset(why, WHY_FILL, sizeof(why));
	memset(sb, 0xee, sizeof(*sb));
	rc = md_sb_decode(buf, len, sb, why, whylen);
	for (size_t i = whylen; i < sizeof(why); i++) {
		CHECK((uint8_t)why[i] == WHY_FILL);
	}
	if (rc != 0) {
		CHECK(rc == -ENOENT || rc == -EINVAL || rc == -EBADMSG);
		if (whylen > 0) {
			CHECK(memchr(why, '\0', whylen) != NULL);
		}
		if (whylen > 1) {
			CHECK(why[0] != '\0');
		}
		return rc;
	}
	CHECK(len >= MD_SB_BYTES);
	check_sb(sb);
	check_round_trip(sb);
	return rc;
}

/* md_sb_decode: the input as is, padded, and with its checksum right. */
static void
fuzz_md_sb_decode(const uint8_t *data, size_t size)
{
	static uint8_t buf[MD_SB_BYTES];
	static struct md_sb sb_real, sb_pad;
	int rc_real, rc_pad;

	/* The real length, and a why of any size, truncation included. */
	rc_real = decode_one(data, size, size % (WHY_BYTES + 1), &sb_real);
	if (size < MD_SB_BYTES) {
		CHECK(rc_real == -ENOENT);
	}
	pad(buf, data, size);
	rc_pad = decode_one(buf, sizeof(buf), WHY_BYTES, &sb_pad);
	if (size >= MD_SB_BYTES) {
		/* Only the first MD_SB_BYTES count. */
		CHECK(rc_real == rc_pad);
		CHECK(rc_pad != 0 ||
		      memcmp(&sb_real, &sb_pad, sizeof(sb_pad)) == 0);
	}
	if (le32(buf + OFF_MAX_DEV) <= MD_MAX_DEV_LIMIT) {
		put_le32(buf + OFF_SB_CSUM,
			 md_sb_csum(buf, le32(buf + OFF_MAX_DEV)));
		rc_pad = decode_one(buf, sizeof(buf), WHY_BYTES, &sb_pad);
		CHECK(rc_pad != -EBADMSG);
	}
}

/*
 * md_sb_encode: any struct md_sb (the input's bytes) encodes within its
 * MD_SB_BYTES; one with a role table md can hold decodes again, to the
 * same fields (a name ends at its NUL), and round-trips from there.  One
 * with more roles is written as it is, and refused.
 */
static void
fuzz_md_sb_encode(const uint8_t *data, size_t size)
{
	static uint8_t buf[MD_SB_BYTES];
	static struct md_sb sb, got;
	char why[WHY_BYTES];

	memset(&sb, 0, sizeof(sb));
	memcpy(&sb, data, size < sizeof(sb) ? size : sizeof(sb));
	md_sb_encode(&sb, buf);
	if (sb.max_dev > MD_MAX_DEV_LIMIT) {
		/* Written as it is, and refused. */
		CHECK(le32(buf + OFF_MAX_DEV) == sb.max_dev);
		CHECK(md_sb_decode(buf, sizeof(buf), &got, why, sizeof(why)) ==
		      -EINVAL);
		return;
	}
	CHECK(md_sb_decode(buf, sizeof(buf), &got, why, sizeof(why)) == 0);
	CHECK(got.max_dev == sb.max_dev && got.level == sb.level &&
	      got.dev_number == sb.dev_number && got.events == sb.events);
	CHECK(strncmp(got.set_name, sb.set_name, MD_SB_NAME_BYTES) == 0);
	CHECK(memcmp(got.dev_roles, sb.dev_roles, 2 * (size_t)sb.max_dev) == 0);
	check_sb(&got);
	check_round_trip(&got);
}

/* md's checksum, spelled as md.c calc_sb_1_csum spells it. */
static uint32_t
csum_reference(const uint8_t *buf, uint32_t max_dev)
{
	static uint8_t sb[MD_SB_BYTES];
	int size = 256 + max_dev * 2;
	const uint8_t *p = sb;
	uint64_t newcsum = 0;

	memcpy(sb, buf, sizeof(sb));
	put_le32(sb + OFF_SB_CSUM, 0);
	for (; size >= 4; size -= 4, p += 4) {
		newcsum += le32(p);
	}
	if (size == 2) {
		newcsum += p[0] | p[1] << 8;
	}
	return (newcsum & 0xffffffff) + (newcsum >> 32);
}

/*
 * md_sb_csum: max_dev from the input's first two bytes, the rest (padded)
 * as the superblock; then its own field and the bytes past the roles
 * changed, which must not change the sum.
 */
static void
fuzz_md_sb_csum(const uint8_t *data, size_t size)
{
	static uint8_t buf[MD_SB_BYTES];
	uint32_t max_dev, covered, sum;

	if (size < 2) {
		return;
	}
	max_dev = (data[0] | data[1] << 8) % (MD_MAX_DEV_LIMIT + 1);
	pad(buf, data + 2, size - 2);
	sum = md_sb_csum(buf, max_dev);
	CHECK(sum == csum_reference(buf, max_dev));
	covered = MD_SB_FIXED + 2 * max_dev;
	put_le32(buf + OFF_SB_CSUM, ~le32(buf + OFF_SB_CSUM));
	memset(buf + covered, 0x5a, MD_SB_BYTES - covered);
	CHECK(md_sb_csum(buf, max_dev) == sum);
	/* Past the limit: summed as the limit, never past MD_SB_BYTES. */
	sum = md_sb_csum(buf, MD_MAX_DEV_LIMIT);
	CHECK(md_sb_csum(buf, MD_MAX_DEV_LIMIT + 1 + max_dev) == sum);
	CHECK(md_sb_csum(buf, ~max_dev) == sum);
}

/* Paint [start, start + len) sectors of a member of dev: false if any
 * lies outside it or is painted already. */
static bool
paint(uint8_t *painted, uint64_t dev, int64_t start, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++) {
		int64_t s = start + (int64_t)i;

		if (s < 0 || (uint64_t)s >= dev || painted[s]) {
			return false;
		}
		painted[s] = 1;
	}
	return true;
}

/*
 * md_sb_check_geometry: the member's sectors from the input's first two
 * bytes, the bitmap's from the third, the rest as a struct md_sb; what
 * it accepts, painted sector by sector.
 */
static void
fuzz_md_sb_check_geometry(const uint8_t *data, size_t size)
{
	static uint8_t painted[65536];
	static struct md_sb sb;
	char why[WHY_BYTES];
	uint64_t dev, bm;
	int r;

	if (size < 3) {
		return;
	}
	dev = data[0] | data[1] << 8;
	bm = data[2];
	memset(&sb, 0, sizeof(sb));
	memcpy(&sb, data + 3, size - 3 < sizeof(sb) ? size - 3 : sizeof(sb));
	why[0] = '\0';
	r = md_sb_check_geometry(&sb, dev * 512 + data[0] % 512, bm, why,
				 sizeof(why));
	if (r < 0) {
		CHECK(r == -EUCLEAN);
		CHECK(why[0] && memchr(why, '\0', sizeof(why)));
		return;
	}
	CHECK(r == 0);
	CHECK(sb.data_size >= 10);
	CHECK(sb.level <= 0 || (sb.size && sb.size <= sb.data_size));
	CHECK(!(sb.feature_map & MD_FEATURE_RAID0_LAYOUT) || sb.level == 0);
	memset(painted, 0, dev);
	CHECK(paint(painted, dev, (int64_t)sb.super_offset, 8));
	CHECK(sb.data_offset < dev && sb.data_size <= dev);
	CHECK(paint(painted, dev, (int64_t)sb.data_offset, sb.data_size));
	if (sb.feature_map & MD_FEATURE_BITMAP_OFFSET) {
		CHECK(paint(painted, dev,
			    (int64_t)sb.super_offset + sb.bitmap_offset,
			    bm > 8 ? bm : 8));
	}
	if (sb.bblog_offset && sb.bblog_size) {
		CHECK(paint(painted, dev,
			    (int64_t)sb.super_offset + sb.bblog_offset,
			    sb.bblog_size));
	}
}

/* md_bitmap_sectors: any bytes as a bitmap superblock's page. */
static void
fuzz_md_bitmap_sectors(const uint8_t *data, size_t size)
{
	static uint8_t buf[MD_SB_BYTES];
	uint64_t sectors = 0;
	char why[WHY_BYTES];
	int r;

	pad(buf, data, size);
	why[0] = '\0';
	r = md_bitmap_sectors(buf, sizeof(buf), NULL, &sectors, why,
			      sizeof(why));
	if (r < 0) {
		CHECK(r == -ENOENT || r == -EUCLEAN);
		CHECK(why[0] && memchr(why, '\0', sizeof(why)));
		return;
	}
	CHECK(r == 0 && sectors >= 1);
}

/* Every decoder this target knows; each sees every input. */
static const struct {
	const char *name;
	void (*fn)(const uint8_t *data, size_t size);
} targets[] = {
	{ "md_sb_decode", fuzz_md_sb_decode },
	{ "md_sb_encode", fuzz_md_sb_encode },
	{ "md_sb_csum", fuzz_md_sb_csum },
	{ "md_sb_check_geometry", fuzz_md_sb_check_geometry },
	{ "md_bitmap_sectors", fuzz_md_bitmap_sectors },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		fuzzing = targets[i].name;
		targets[i].fn(data, size);
	}
	return 0;
}
