/*
 * test_member_overlap.c: src/member_overlap.c without devices.  First the
 * pure rule on hand-made chains (where two chains meet, whether their
 * ranges there intersect, the reason given); then the whole check against
 * a fake sysfs tree (partitions, loop devices by sysfs loop/, a dm device
 * with slaves, a file's filesystem device) with members that only carry
 * the identity member.c would have found.
 */
#undef NDEBUG
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/loop.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "member_overlap.h"
#include "raid.h"

#define MiB (1024 * 1024ull)
#define ALL OVERLAP_ALL

/* ---- the pure rule ------------------------------------------------------ */

#define BLK(d, how, s, e, name)                                                \
	{                                                                      \
		{ true, (d), 0 }, (how), (s), (e), (name)                      \
	}
#define REG(d, i, how, s, e, name)                                             \
	{                                                                      \
		{ false, (d), (i) }, (how), (s), (e), (name)                   \
	}

/* makedev() as a constant expression: majors below 4096, minors below 256. */
#define DEV(maj, min) ((dev_t)((maj) << 8 | (min)))
#define DISK	      DEV(8, 0)
#define LOOP0	      DEV(7, 0)
#define FSDEV	      DEV(8, 16)

static struct overlap_chain
chain(unsigned n, const struct overlap_hop *hops)
{
	struct overlap_chain c = { .nr_hops = n };

	memcpy(c.hop, hops, n * sizeof(*hops));
	return c;
}

/* A partition [1M, 3M) of /dev/sda. */
static const struct overlap_hop sda1[] = {
	BLK(DEV(8, 1), OVERLAP_SELF, 0, 2 * MiB, "/dev/sda1"),
	BLK(DISK, OVERLAP_PART, 1 * MiB, 3 * MiB, "/dev/sda"),
};
static const struct overlap_hop sda2[] = {
	BLK(DEV(8, 2), OVERLAP_SELF, 0, 4 * MiB, "/dev/sda2"),
	BLK(DISK, OVERLAP_PART, 3 * MiB, 7 * MiB, "/dev/sda"),
};
static const struct overlap_hop sda[] = {
	BLK(DISK, OVERLAP_SELF, 0, 8 * MiB, "/dev/sda"),
};

/* A partition of a disk meets the disk at hop 1: "a partition of it". */
static void
test_member_overlap_partition_and_its_disk(void **state)
{
	struct overlap_chain a = chain(2, sda1), b = chain(1, sda);
	unsigned ha, hb;
	char why[256];

	(void)state;
	assert_true(overlap_meet(&a, &b, &ha, &hb));
	assert_int_equal(ha, 1);
	assert_int_equal(hb, 0);
	overlap_reason(&a, 1, ha, &b, 0, hb, why, sizeof(why));
	assert_string_equal(why, "a partition of it");
	/* The other way round the reason names the earlier member. */
	assert_true(overlap_meet(&b, &a, &ha, &hb));
	overlap_reason(&b, 1, ha, &a, 0, hb, why, sizeof(why));
	assert_string_equal(why, "member 0 is a partition of it");
}

/* Two partitions of one disk meet at the disk, on disjoint ranges. */
static void
test_member_overlap_two_partitions_are_disjoint(void **state)
{
	struct overlap_chain a = chain(2, sda1), b = chain(2, sda2);
	unsigned ha, hb;

	(void)state;
	assert_false(overlap_meet(&a, &b, &ha, &hb));
	assert_int_equal(ha, 1);
	assert_int_equal(hb, 1);
}

/* Ranges are half-open: [1M, 3M) and [3M, 7M) touch but do not overlap. */
static void
test_member_overlap_adjacent_ranges_do_not_overlap(void **state)
{
	const struct overlap_hop l1[] = {
		BLK(DEV(7, 1), OVERLAP_SELF, 0, 2 * MiB, "/dev/loop1"),
		REG(FSDEV, 12, OVERLAP_LOOP, 1 * MiB, 3 * MiB, "/srv/b.img"),
	};
	const struct overlap_hop l2[] = {
		BLK(DEV(7, 2), OVERLAP_SELF, 0, 4 * MiB, "/dev/loop2"),
		REG(FSDEV, 12, OVERLAP_LOOP, 3 * MiB - 1, 7 * MiB,
		    "/srv/b.img"),
	};
	struct overlap_chain a = chain(2, l1), b = chain(2, l2);
	unsigned ha, hb;
	char why[256];

	(void)state;
	/* One byte in common. */
	assert_true(overlap_meet(&a, &b, &ha, &hb));
	overlap_reason(&b, 1, hb, &a, 0, ha, why, sizeof(why));
	assert_string_equal(
		why,
		"both use /srv/b.img: member 1 bytes [3145727, 7340032), member 0 bytes [1048576, 3145728)");
	/* None. */
	b.hop[1].start = 3 * MiB;
	assert_false(overlap_meet(&a, &b, &ha, &hb));
}

/* A file and a block device with st_dev == st_rdev are different nodes. */
static void
test_member_overlap_file_is_not_a_device(void **state)
{
	const struct overlap_hop f[] = {
		REG(DISK, 0, OVERLAP_SELF, 0, 8 * MiB, "/srv/odd.img"),
	};
	struct overlap_chain a = chain(1, f), b = chain(1, sda);
	unsigned ha, hb;

	(void)state;
	assert_false(overlap_meet(&a, &b, &ha, &hb));
}

/*
 * Two files of one filesystem meet at its device, and do not overlap,
 * even when that device is a loop device whose backing file both then
 * reach whole: the first meeting decides.  A partition of that loop
 * device does overlap the files.
 */
static void
test_member_overlap_files_of_one_filesystem(void **state)
{
	const struct overlap_hop x[] = {
		REG(DEV(7, 0), 5, OVERLAP_SELF, 0, 1 * MiB, "/mnt/x.img"),
		BLK(LOOP0, OVERLAP_FS, 0, ALL, "/dev/loop0"),
		REG(FSDEV, 99, OVERLAP_LOOP, 0, ALL, "/srv/fs.img"),
	};
	const struct overlap_hop y[] = {
		REG(DEV(7, 0), 6, OVERLAP_SELF, 0, 1 * MiB, "/mnt/y.img"),
		BLK(LOOP0, OVERLAP_FS, 0, ALL, "/dev/loop0"),
		REG(FSDEV, 99, OVERLAP_LOOP, 0, ALL, "/srv/fs.img"),
	};
	const struct overlap_hop p1[] = {
		BLK(DEV(259, 0), OVERLAP_SELF, 0, 2 * MiB, "/dev/loop0p1"),
		BLK(LOOP0, OVERLAP_PART, 1 * MiB, 3 * MiB, "/dev/loop0"),
		REG(FSDEV, 99, OVERLAP_LOOP, 1 * MiB, 3 * MiB, "/srv/fs.img"),
	};
	const struct overlap_hop img[] = {
		REG(FSDEV, 99, OVERLAP_SELF, 0, 64 * MiB, "/srv/fs.img"),
	};
	struct overlap_chain a = chain(3, x), b = chain(3, y);
	struct overlap_chain c = chain(3, p1), d = chain(1, img);
	unsigned ha, hb;
	char why[256];

	(void)state;
	assert_false(overlap_meet(&a, &b, &ha, &hb));
	assert_int_equal(ha, 1);
	assert_true(overlap_meet(&a, &c, &ha, &hb));
	overlap_reason(&a, 2, ha, &c, 1, hb, why, sizeof(why));
	assert_string_equal(
		why,
		"both use /dev/loop0: member 2 a file in its filesystem, member 1 bytes [1048576, 3145728)");
	assert_true(overlap_meet(&a, &d, &ha, &hb));
	overlap_reason(&a, 1, ha, &d, 0, hb, why, sizeof(why));
	assert_string_equal(
		why, "a file in the filesystem on a loop device backed by it");
}

/* A dm device uses all of its slave; the reason spells out the path. */
static void
test_member_overlap_holder_uses_all_of_its_slave(void **state)
{
	const struct overlap_hop dm[] = {
		BLK(DEV(252, 0), OVERLAP_SELF, 0, 1 * MiB, "/dev/dm-0"),
		BLK(DEV(259, 1), OVERLAP_HOLDER, 0, ALL, "/dev/loop0p2"),
		BLK(LOOP0, OVERLAP_PART, 3 * MiB, ALL, "/dev/loop0"),
	};
	const struct overlap_hop p2[] = {
		BLK(DEV(259, 1), OVERLAP_SELF, 0, 4 * MiB, "/dev/loop0p2"),
		BLK(LOOP0, OVERLAP_PART, 3 * MiB, 7 * MiB, "/dev/loop0"),
	};
	const struct overlap_hop l0[] = {
		BLK(LOOP0, OVERLAP_SELF, 0, 8 * MiB, "/dev/loop0"),
	};
	struct overlap_chain a = chain(3, dm), b = chain(2, p2);
	struct overlap_chain c = chain(1, l0), p = chain(2, sda1);
	unsigned ha, hb;
	char why[256];

	(void)state;
	assert_true(overlap_meet(&b, &a, &ha, &hb));
	overlap_reason(&b, 1, ha, &a, 0, hb, why, sizeof(why));
	assert_string_equal(why,
			    "member 0 is a device-mapper or md device on it");
	assert_true(overlap_meet(&a, &c, &ha, &hb));
	overlap_reason(&a, 1, ha, &c, 0, hb, why, sizeof(why));
	assert_string_equal(
		why, "a device-mapper or md device on a partition of it");
	assert_false(overlap_meet(&a, &p, &ha, &hb)); /* never meet */
}

/* ---- the check over a fake sysfs --------------------------------------- */

static char root[] = "/tmp/nbdraid-test-overlap.XXXXXX";
static struct overlap_env env;
static char sys_root[PATH_MAX], dev_root[PATH_MAX];
static int null_fd = -1;

/* root/rel into path, its folders made. */
static void
tree_path(char *path, size_t len, const char *rel)
{
	char dir[2 * PATH_MAX];

	snprintf(path, len, "%s/%s", root, rel);
	for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(s - path), path);
		mkdir(dir, 0755);
	}
}

/* A file holding text, or a folder (text NULL). */
static void
put(const char *rel, const char *text)
{
	char path[2 * PATH_MAX];
	FILE *f;

	tree_path(path, sizeof(path), rel);
	if (!text) {
		assert_int_equal(mkdir(path, 0755), 0);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* A sparse file of size bytes. */
static void
put_image(const char *rel, uint64_t size)
{
	char path[2 * PATH_MAX];

	tree_path(path, sizeof(path), rel);
	put(rel, "");
	assert_int_equal(truncate(path, size), 0);
}

static void
link_to(const char *rel, const char *target)
{
	char path[2 * PATH_MAX];

	tree_path(path, sizeof(path), rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A block device in the fake sysfs: devices/virtual/block/<where>. */
static void
fake_blk(const char *where, unsigned maj, unsigned min)
{
	char rel[PATH_MAX], text[PATH_MAX];

	snprintf(rel, sizeof(rel), "sys/devices/virtual/block/%s/dev", where);
	snprintf(text, sizeof(text), "%u:%u", maj, min);
	put(rel, text);
	snprintf(rel, sizeof(rel), "sys/dev/block/%u:%u", maj, min);
	snprintf(text, sizeof(text), "../../devices/virtual/block/%s", where);
	link_to(rel, text);
}

static void
fake_partition(const char *where, unsigned maj, unsigned min, unsigned nr,
	       uint64_t start, uint64_t size)
{
	char rel[PATH_MAX], text[32];
	const char *keys[] = { "partition", "start", "size" };
	uint64_t vals[] = { nr, start, size };

	fake_blk(where, maj, min);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(rel, sizeof(rel), "sys/devices/virtual/block/%s/%s",
			 where, keys[i]);
		snprintf(text, sizeof(text), "%llu",
			 (unsigned long long)vals[i]);
		put(rel, text);
	}
}

static void
fake_loop(const char *name, unsigned min, const char *backing, uint64_t offset)
{
	char rel[PATH_MAX], text[PATH_MAX];

	fake_blk(name, 7, min);
	snprintf(rel, sizeof(rel),
		 "sys/devices/virtual/block/%s/loop/backing_file", name);
	snprintf(text, sizeof(text), "%s/%s", root, backing);
	put(rel, text);
	snprintf(rel, sizeof(rel), "sys/devices/virtual/block/%s/loop/offset",
		 name);
	snprintf(text, sizeof(text), "%llu", (unsigned long long)offset);
	put(rel, text);
}

static dev_t root_fs; /* st_dev of the fake tree's own files */

/*
 *   a.img   (8M) backs loop0 (7:0), partitions loop0p1 (259:0) at
 *           [1M, 3M) and loop0p2 (259:1) at [3M, 7M)
 *   b.img   (8M) backs loop1 (7:1) at 1M, loop2 (7:2) at 3M, loop3 (7:3) at 5M
 *   dm-0    252:0 over loop0p2
 *   vdz     the device of the filesystem the tree is on (if it has one)
 */
static int
setup_tree(void **state)
{
	struct stat st;

	(void)state;
	if (!mkdtemp(root)) {
		return -1;
	}
	put_image("a.img", 8 * MiB);
	put_image("b.img", 8 * MiB);
	fake_loop("loop0", 0, "a.img", 0);
	fake_partition("loop0/loop0p1", 259, 0, 1, 2048, 4096);
	fake_partition("loop0/loop0p2", 259, 1, 2, 6144, 8192);
	fake_loop("loop1", 1, "b.img", 1 * MiB);
	fake_loop("loop2", 2, "b.img", 3 * MiB);
	fake_loop("loop3", 3, "b.img", 5 * MiB);
	fake_blk("dm-0", 252, 0);
	put("sys/devices/virtual/block/dm-0/slaves", NULL);
	link_to("sys/devices/virtual/block/dm-0/slaves/loop0p2",
		"../../loop0/loop0p2");
	stat(root, &st);
	root_fs = st.st_dev;
	if (major(root_fs)) {
		fake_blk("vdz", major(root_fs), minor(root_fs));
	}
	snprintf(sys_root, sizeof(sys_root), "%s/sys", root);
	snprintf(dev_root, sizeof(dev_root), "%s/dev", root); /* absent */
	env.sys = sys_root;
	env.dev = dev_root;
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return null_fd < 0 ? -1 : 0;
}

static int
remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path);
}

static int
teardown_tree(void **state)
{
	(void)state;
	close(null_fd);
	return nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A member as member.c opens it; its fd (/dev/null) answers no ioctl. */
static struct raid_member
blk(const char *name, unsigned maj, unsigned min, uint64_t size)
{
	static char paths[8][64];
	static unsigned next;
	struct raid_member m = { .fd = null_fd, .is_blk = true, .size = size };
	char *path = paths[next++ % 8];

	snprintf(path, 64, "/dev/%s", name);
	m.path = path;
	m.dev = makedev(maj, min);
	return m;
}

static struct raid_member
reg(const char *rel)
{
	static char paths[8][PATH_MAX];
	static unsigned next;
	struct raid_member m = { .fd = null_fd };
	char *path = paths[next++ % 8];
	struct stat st;

	snprintf(path, PATH_MAX, "%s/%s", root, rel);
	assert_int_equal(stat(path, &st), 0);
	m.path = path;
	m.dev = st.st_dev;
	m.ino = st.st_ino;
	m.size = st.st_size;
	return m;
}

static int
check2(struct raid_member a, struct raid_member b)
{
	struct raid_member m[2] = { a, b };

	m[0].role = 0;
	m[1].role = 1;
	t_last_error[0] = '\0';
	return member_overlap_check_env(&env, m, 2);
}

static void
expect_refused(struct raid_member a, struct raid_member b, const char *why)
{
	char want[sizeof(t_last_error)];

	assert_int_equal(check2(a, b), -EINVAL);
	snprintf(want, sizeof(want),
		 "member 1 (%s): overlaps member 0 (%s): %s", b.path, a.path,
		 why);
	assert_string_equal(t_last_error, want);
}

/*
 * ioctl(2) as this program sees it: every fd a loop device's status is
 * asked on is counted, and those a child would inherit (no FD_CLOEXEC):
 * an event program spawned meanwhile must get no copy of a member's fd.
 */
static unsigned loop_asks, loop_asks_inherited;

int
ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "ioctl");
	}
	if (req == LOOP_GET_STATUS64) {
		loop_asks++;
		loop_asks_inherited += !(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	}
	return real(fd, req, arg);
}

#define LOOP(n, size) blk("loop" #n, 7, n, size)
#define P1	      blk("loop0p1", 259, 0, 2 * MiB)
#define P2	      blk("loop0p2", 259, 1, 4 * MiB)
#define DM	      blk("dm-0", 252, 0, 4 * MiB)

/* A partition and its disk, either way round; the same device twice. */
static void
test_member_overlap_check_partition(void **state)
{
	(void)state;
	expect_refused(LOOP(0, 8 * MiB), P1, "a partition of it");
	expect_refused(P2, LOOP(0, 8 * MiB), "member 0 is a partition of it");
	assert_int_equal(check2(P1, P1), -EINVAL);
	assert_string_equal(
		t_last_error,
		"member 1 (/dev/loop0p1): same file as member 0 (/dev/loop0p1)");
}

/* Two partitions of one disk are two members. */
static void
test_member_overlap_check_two_partitions_accepted(void **state)
{
	(void)state;
	assert_int_equal(check2(P1, P2), 0);
	assert_string_equal(t_last_error, "");
}

/* A loop device (sysfs loop/) and its backing file; a partition of it. */
static void
test_member_overlap_check_loop_and_backing_file(void **state)
{
	(void)state;
	loop_asks = loop_asks_inherited = 0;
	expect_refused(reg("a.img"), LOOP(0, 8 * MiB),
		       "a loop device backed by it");
	/* Asked on a copy of the member's fd: close-on-exec, as it is. */
	assert_true(loop_asks > 0);
	assert_int_equal(loop_asks_inherited, 0);
	expect_refused(reg("a.img"), P1,
		       "a partition of a loop device backed by it");
	expect_refused(P2, reg("a.img"),
		       "member 0 is a partition of a loop device backed by it");
	assert_int_equal(check2(reg("a.img"), reg("b.img")), 0);
}

/* Loop devices on one file: overlapping offsets refused, disjoint not. */
static void
test_member_overlap_check_loops_on_one_file(void **state)
{
	char why[PATH_MAX + 128];

	(void)state;
	snprintf(
		why, sizeof(why),
		"both use %s/b.img: member 1 bytes [3145728, 7340032), member 0 bytes [1048576, 5242880)",
		root);
	expect_refused(LOOP(1, 4 * MiB), LOOP(2, 4 * MiB), why);
	assert_int_equal(check2(LOOP(1, 4 * MiB), LOOP(3, 2 * MiB)), 0);
	assert_int_equal(check2(LOOP(0, 8 * MiB), LOOP(1, 4 * MiB)), 0);
}

/* A dm device and its slave, and what lies under the slave. */
static void
test_member_overlap_check_holder_and_slaves(void **state)
{
	(void)state;
	expect_refused(DM, P2,
		       "member 0 is a device-mapper or md device on it");
	expect_refused(LOOP(0, 8 * MiB), DM,
		       "a device-mapper or md device on a partition of it");
	expect_refused(
		reg("a.img"), DM,
		"a device-mapper or md device on a partition of a loop device backed by it");
	/* dm-0 sits on loop0p2 only. */
	assert_int_equal(check2(DM, P1), 0);
}

/* A file and the device of its filesystem; two files of one filesystem. */
static void
test_member_overlap_check_file_on_filesystem(void **state)
{
	(void)state;
	if (!major(root_fs)) {
		print_message("%s is on a filesystem without a device\n", root);
		skip();
	}
	expect_refused(blk("vdz", major(root_fs), minor(root_fs), 64 * MiB),
		       reg("a.img"), "a file in the filesystem on it");
	assert_int_equal(check2(reg("b.img"), reg("a.img")), 0);
	assert_int_equal(check2(reg("b.img"), LOOP(0, 8 * MiB)), 0);
}

/* Members without an fd (the memory backend's) are not checked. */
static void
test_member_overlap_check_skips_members_without_fd(void **state)
{
	struct raid_member a = LOOP(0, 8 * MiB), b = P1;

	(void)state;
	b.fd = -1;
	assert_int_equal(check2(a, b), 0);
	assert_int_equal(check2(b, a), 0);
}

int
main(void)
{
	const struct CMUnitTest pure[] = {
		cmocka_unit_test_setup(
			test_member_overlap_partition_and_its_disk, t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_two_partitions_are_disjoint,
			t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_adjacent_ranges_do_not_overlap,
			t_setup),
		cmocka_unit_test_setup(test_member_overlap_file_is_not_a_device,
				       t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_files_of_one_filesystem, t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_holder_uses_all_of_its_slave,
			t_setup),
	};
	const struct CMUnitTest sysfs[] = {
		cmocka_unit_test_setup(test_member_overlap_check_partition,
				       t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_two_partitions_accepted,
			t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_loop_and_backing_file,
			t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_loops_on_one_file, t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_holder_and_slaves, t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_file_on_filesystem, t_setup),
		cmocka_unit_test_setup(
			test_member_overlap_check_skips_members_without_fd,
			t_setup),
	};
	int r;

	t_init();
	raid_set_log(t_capture_log);
	r = cmocka_run_group_tests(pure, NULL, NULL);
	return r | cmocka_run_group_tests(sysfs, setup_tree, teardown_tree);
}
