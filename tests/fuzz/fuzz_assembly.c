/*
 * fuzz_assembly.c: a libFuzzer target for a whole array made from member
 * images: md superblock reading and validation, assembly, array creation
 * and I/O (src/metadata.c, superblock.c, array.c, the layouts), over the
 * memory members of tests/lib (built and run by tests/fuzz/run.sh).
 *
 * The input is 2 to 4 small member images, then a few requests:
 *
 *   byte 0     members: 2 + b % 3
 *   byte 1     bit 0 force=true, bit 1 degraded=ok
 *   per member u16 size (KiB, 16..1024), u16 head, u16 tail (bytes), then
 *              head bytes (placed at the member's start) and tail bytes
 *              (ending at its end: where a 1.0 superblock lives); the
 *              rest of the member is zeros
 *   the rest   requests, 6 bytes each: op, length (log2), offset (u32)
 *
 * Random bytes almost never carry md's checksum: a superblock found at a
 * v1.x place (by its magic) gets its checksum made right first, so the
 * fuzzer reaches validation and assembly, not only the checksum refusal.
 * CHECK() aborts on what is merely wrong, once an array assembled:
 *
 *   - each role's data area (data_offset, the array's member_bytes) lies
 *     inside its member and off its superblock's 4 KiB;
 *   - every member byte outside the metadata its own superblock declares
 *     (superblock, md's bitmap, bad-block log) is zeroed: every read of a
 *     range never written returns zeros (data served from metadata would
 *     not), and every read returns what the model says was written;
 *   - no request fails (the members never do);
 *   - closed (superblocks marked clean) and assembled again over the same
 *     bytes, with the same settings: it assembles, and reads the model.
 *
 * NBDRAID_FUZZ_VERBOSE=1 says what became of each input (why assembly
 * refused it), to replay one: fuzz_assembly INPUT.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "mem_backend.h"
#include "metadata.h"
#include "raid.h"
#include "superblock.h"

#define MAX_MEMBERS  4
#define MAX_REQUESTS 16
#define KIB	     1024u

static char last_error[512];

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
				"%s:%d: CHECK(%s) failed (last error: %s)\n",  \
				__FILE__, __LINE__, #cond, last_error);        \
			abort();                                               \
		}                                                              \
	} while (0)

/* Quiet: only the last error is kept, for CHECK's message. */
static void
sink(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_ERROR) {
		vsnprintf(last_error, sizeof(last_error), fmt, ap);
	}
}

struct input {
	const uint8_t *p;
	size_t left;
};

static unsigned
take(struct input *in, unsigned width)
{
	unsigned v = 0;

	for (unsigned i = 0; i < width && in->left; i++, in->left--) {
		v |= (unsigned)*in->p++ << (8 * i);
	}
	return v;
}

/* md's checksum made right wherever a v1.x superblock's magic is. */
static void
fix_checksums(uint8_t *data, uint64_t size)
{
	for (unsigned minor = 0; minor < 3; minor++) {
		uint64_t s = md_sb_sector(minor, size);
		uint8_t *sb = data + s * RAID_SECTOR_BYTES;
		uint32_t max_dev, csum;

		if (s == UINT64_MAX ||
		    s * RAID_SECTOR_BYTES + MD_SB_BYTES > size ||
		    (sb[0] | sb[1] << 8 | sb[2] << 16 |
		     (uint32_t)sb[3] << 24) != MD_SB_MAGIC) {
			continue;
		}
		max_dev = sb[220] | sb[221] << 8 | sb[222] << 16 |
			  (uint32_t)sb[223] << 24;
		csum = md_sb_csum(sb, max_dev);
		for (unsigned i = 0; i < 4; i++) {
			sb[216 + i] = (uint8_t)(csum >> (8 * i));
		}
	}
}

/* The members, from the input; their number in *n. */
static struct raid_member *
make_members(struct input *in, unsigned *n)
{
	uint64_t sizes[MAX_MEMBERS];
	struct input head[MAX_MEMBERS], tail[MAX_MEMBERS];
	struct raid_member *m;

	*n = 2 + take(in, 1) % 3;
	take(in, 1); /* the flags */
	for (unsigned i = 0; i < *n; i++) {
		unsigned kib = take(in, 2) % 1025;
		size_t h = take(in, 2), t = take(in, 2);

		sizes[i] = (uint64_t)(kib < 16 ? 16 : kib) * KIB;
		h = h < sizes[i] ? h : sizes[i];
		t = t < sizes[i] - h ? t : sizes[i] - h;
		head[i] = (struct input){ in->p, h < in->left ? h : in->left };
		in->p += head[i].left;
		in->left -= head[i].left;
		tail[i] = (struct input){ in->p, t < in->left ? t : in->left };
		in->p += tail[i].left;
		in->left -= tail[i].left;
	}
	m = mem_members_create_sizes(*n, sizes);
	CHECK(m);
	for (unsigned i = 0; i < *n; i++) {
		struct mem_member *mm = mem_of(&m[i]);

		memcpy(mm->data, head[i].p, head[i].left);
		memcpy(mm->data + mm->size - tail[i].left, tail[i].p,
		       tail[i].left);
		fix_checksums(mm->data, mm->size);
	}
	return m;
}

/* An area of a member, in bytes, from a signed sector offset. */
static void
keep(uint8_t *keepmap, uint64_t size, int64_t sector, uint64_t sectors)
{
	int64_t at = sector * (int64_t)RAID_SECTOR_BYTES;
	uint64_t len = sectors * RAID_SECTOR_BYTES;

	for (uint64_t i = 0; i < len; i++) {
		if (at + (int64_t)i >= 0 &&
		    (uint64_t)(at + (int64_t)i) < size) {
			keepmap[at + (int64_t)i] = 1;
		}
	}
}

/*
 * Every byte of member m but its metadata (superblock, md's bitmap, the
 * bad-block log, as sb declares them) zeroed.
 */
static void
zero_data(struct raid_member *m, const struct meta_member *mm)
{
	struct mem_member *mem = mem_of(m);
	const struct md_sb *sb = &mm->sb;
	uint8_t *keepmap = calloc(1, mem->size);
	uint64_t bm = 0;
	char why[160];

	CHECK(keepmap);
	keep(keepmap, mem->size, (int64_t)mm->sb_sector,
	     MD_SB_BYTES / RAID_SECTOR_BYTES);
	if (sb->feature_map & MD_FEATURE_BITMAP_OFFSET) {
		int64_t at = (int64_t)mm->sb_sector + sb->bitmap_offset;

		CHECK(at >= 0 && (uint64_t)at * RAID_SECTOR_BYTES < mem->size);
		if (md_bitmap_sectors(
			    mem->data + at * RAID_SECTOR_BYTES,
			    mem->size - (uint64_t)at * RAID_SECTOR_BYTES,
			    sb->set_uuid, &bm, why, sizeof(why)) < 0) {
			bm = 0;
		}
		keep(keepmap, mem->size, at, bm < 8 ? 8 : bm);
	}
	if (sb->bblog_offset && sb->bblog_size) {
		keep(keepmap, mem->size,
		     (int64_t)mm->sb_sector + sb->bblog_offset, sb->bblog_size);
	}
	for (uint64_t i = 0; i < mem->size; i++) {
		if (!keepmap[i]) {
			mem->data[i] = 0;
		}
	}
	free(keepmap);
}

/* Each role's data area inside its member and off its superblock. */
static void
check_areas(struct raid_array *a)
{
	for (unsigned r = 0; r < a->nr_members; r++) {
		const struct raid_member *m = &a->members[r];
		const struct meta_member *mm = &a->meta->members[r];
		uint64_t start = a->g.data_offset[r], len = a->member_bytes;
		uint64_t sb = mm->sb_sector * RAID_SECTOR_BYTES;

		if (!mm->present || !m->priv) {
			continue;
		}
		CHECK(start <= m->size && len <= m->size - start);
		CHECK(len > 0);
		CHECK(start >= sb + MD_SB_BYTES || start + len <= sb);
	}
}

/*
 * Members m (n of them, their memory in mems) assembled as raid_open does:
 * assembly, then the array owns them and takes its spares.  0 with the
 * array in *a; else the members are closed (m freed).
 */
static int
assemble(const struct raid_config *cfg, struct raid_member *m, unsigned n,
	 struct raid_array **a)
{
	unsigned nr = n;
	int r;

	*a = NULL;
	r = array_assemble(cfg, m, &nr, n + MEM_MEMBERS_ROOM, a);
	if (r < 0) {
		for (unsigned i = 0; i < n; i++) {
			member_close(&m[i]);
		}
		free(m);
		return r;
	}
	(*a)->owns_members = true;
	r = spares_start(*a, cfg);
	if (r < 0) {
		raid_close(*a);
		*a = NULL;
	}
	return r;
}

/* The members' memory (the raid_members are the array's once opened). */
static void
free_mems(struct mem_member **mems, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(mems[i]->data);
		free(mems[i]);
	}
}

/* Fresh members over copies of mems' bytes (a restart opens the files
 * again); their memory in copies. */
static struct raid_member *
copy_members(struct mem_member **mems, unsigned n, struct mem_member **copies)
{
	uint64_t sizes[MAX_MEMBERS];
	struct raid_member *c;

	for (unsigned i = 0; i < n; i++) {
		sizes[i] = mems[i]->size;
	}
	c = mem_members_create_sizes(n, sizes);
	CHECK(c);
	for (unsigned i = 0; i < n; i++) {
		copies[i] = mem_of(&c[i]);
		memcpy(copies[i]->data, mems[i]->data, sizes[i]);
	}
	return c;
}

/* The requests: each checked against the model (the array's bytes). */
static void
run_requests(struct raid_array *a, uint8_t *model, struct input *in)
{
	static uint8_t buf[1 << 17];

	for (unsigned k = 0; k < MAX_REQUESTS && in->left >= 6; k++) {
		unsigned op = take(in, 1) % 4;
		uint64_t len = 1ull << (take(in, 1) % 18);
		uint64_t off = take(in, 4) % a->size;

		len = len < a->size - off ? len : a->size - off;
		switch (op) {
		case 0:
			CHECK(raid_pread(a, buf, len, off, 0) == 0);
			CHECK(memcmp(buf, model + off, len) == 0);
			break;
		case 1:
			for (uint64_t i = 0; i < len; i++) {
				buf[i] = (uint8_t)(k * 37 + i * 7 + (i >> 9));
			}
			CHECK(raid_pwrite(a, buf, len, off,
					  k & 1 ? RAID_FUA : 0) == 0);
			memcpy(model + off, buf, len);
			break;
		case 2:
			CHECK(raid_zero(a, len, off, 0) == 0);
			memset(model + off, 0, len);
			break;
		default:
			CHECK(raid_flush(a) == 0);
			break;
		}
	}
}

/* The whole array reads as the model. */
static void
check_all(struct raid_array *a, const uint8_t *model)
{
	static uint8_t buf[1 << 17];

	for (uint64_t off = 0; off < a->size; off += sizeof(buf)) {
		uint64_t len = a->size - off < sizeof(buf) ? a->size - off
							   : sizeof(buf);

		CHECK(raid_pread(a, buf, len, off, 0) == 0);
		CHECK(memcmp(buf, model + off, len) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_member *mems[MAX_MEMBERS], *again[MAX_MEMBERS];
	struct input in = { data, size };
	struct raid_member *m;
	struct raid_config cfg;
	struct raid_array *a;
	uint8_t *model;
	unsigned n;

	raid_set_log(sink);
	raid_config_init(&cfg);
	cfg.force = size > 1 && (data[1] & 1);
	cfg.degraded_ok = size > 1 && (data[1] & 2);
	m = make_members(&in, &n);
	for (unsigned i = 0; i < n; i++) {
		mems[i] = mem_of(&m[i]);
	}
	if (assemble(&cfg, m, n, &a) < 0) {
		if (getenv("NBDRAID_FUZZ_VERBOSE")) {
			fprintf(stderr, "refused: %s\n", last_error);
		}
		free_mems(mems, n);
		return 0;
	}
	if (getenv("NBDRAID_FUZZ_VERBOSE")) {
		fprintf(stderr, "assembled: raid%d, %u members, %llu bytes\n",
			a->layout->level, a->nr_members,
			(unsigned long long)a->size);
	}
	check_areas(a);
	for (unsigned r = 0; r < a->nr_members; r++) {
		if (a->meta->members[r].present && a->members[r].priv) {
			zero_data(&a->members[r], &a->meta->members[r]);
		}
	}
	model = calloc(1, a->size);
	CHECK(model);
	check_all(a, model);
	run_requests(a, model, &in);
	check_all(a, model);
	raid_close(a);

	/* Again over the bytes left, with the same settings. */
	m = copy_members(mems, n, again);
	CHECK(assemble(&cfg, m, n, &a) == 0);
	check_areas(a);
	check_all(a, model);
	raid_close(a);
	free_mems(again, n);
	free_mems(mems, n);
	free(model);
	return 0;
}
