/*
 * test_io.c: the real backends (io_uring, psync) over real member files:
 * byte-exact random I/O through raid_open(), buffered and O_DIRECT with
 * deliberately misaligned buffers, offsets and lengths (the bounce and
 * read-modify-write paths); a read past a member's end is an error, not a
 * short success; trim punches holes; zero works where ZERO_RANGE does not
 * (tmpfs).  O_DIRECT parts are skipped where the filesystem refuses it.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "util.h"

#define MEMBER_SIZE (1u << 20)

static char dir[PATH_MAX];

static void
quiet_log(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_ERROR && getenv("VERBOSE")) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

/* n sparse member files in `where`, and a config naming them. */
static void
make_config(struct raid_config *c, const char *where, int level, unsigned n,
	    enum raid_io_mode io, bool direct)
{
	char path[PATH_MAX + 32];

	raid_config_init(c);
	c->level = level;
	c->chunk = 16384;
	c->io = io;
	c->direct = direct;
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/m%u.img", where, i);
		unlink(path);
		assert_int_equal(truncate(path, 0) == 0 || errno == ENOENT, 1);
		close(open(path, O_CREAT | O_WRONLY, 0600));
		assert_int_equal(truncate(path, MEMBER_SIZE), 0);
		assert_int_equal(raid_config_set(c, "member", path), 0);
	}
}

static bool
direct_works(const char *where)
{
	char path[PATH_MAX + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/probe", where);
	fd = open(path, O_CREAT | O_RDWR | O_DIRECT, 0600);
	unlink(path);
	if (fd < 0) {
		return false;
	}
	close(fd);
	return true;
}

/* Random I/O, misaligned on purpose, against a flat model. */
static void
run_random(const char *where, int level, enum raid_io_mode io, bool direct)
{
	struct raid_config c;
	struct raid_array *a;
	uint8_t *model, *raw, *buf;
	uint64_t size;

	make_config(&c, where, level, 3, io, direct);
	assert_int_equal(raid_open(&c, &a), 0);
	size = a->size;
	model = calloc(1, size);
	raw = malloc(size + 64);
	for (unsigned i = 0; i < 400; i++) {
		uint64_t off = t_rand(size), len = 1 + t_rand(MIN(size - off, 100000));
		unsigned op = t_rand(8);

		/* A buffer 1..63 bytes past an aligned address. */
		buf = raw + 1 + t_rand(63);
		if (op < 4) {
			for (uint64_t j = 0; j < len; j++) {
				buf[j] = t_rand(256);
			}
			assert_int_equal(raid_pwrite(a, buf, len, off,
						     op == 0 ? RAID_FUA : 0), 0);
			memcpy(model + off, buf, len);
		} else if (op == 4) {
			assert_int_equal(raid_zero(a, len, off,
						   t_rand(2) ? RAID_MAY_TRIM : 0), 0);
			memset(model + off, 0, len);
		} else if (op == 5) {
			assert_int_equal(raid_flush(a), 0);
		} else {
			assert_int_equal(raid_pread(a, buf, len, off, 0), 0);
			assert_memory_equal(buf, model + off, len);
		}
	}
	assert_int_equal(raid_pread(a, raw, size, 0, 0), 0);
	assert_memory_equal(raw, model, size);
	if (level == 5) {
		struct raid_check_result res;

		assert_int_equal(raid_check(a, &res), 0);
		assert_int_equal(res.mismatched, 0);
		assert_true(res.units > 0);
	}
	raid_close(a);
	raid_config_free(&c);
	free(model);
	free(raw);
}

/* Both backends, buffered, every level, on the test folder's filesystem. */
static void
test_io_buffered_random(void **state)
{
	(void)state;
	for (int io = RAID_IO_URING; io <= RAID_IO_PSYNC; io++) {
		run_random(dir, 0, io, false);
		run_random(dir, 1, io, false);
		run_random(dir, 5, io, false);
		run_random(dir, 10, io, false);
	}
}

/* O_DIRECT members with unaligned client buffers, offsets and lengths. */
static void
test_io_direct_unaligned_random(void **state)
{
	(void)state;
	if (!direct_works(dir)) {
		skip();
	}
	for (int io = RAID_IO_URING; io <= RAID_IO_PSYNC; io++) {
		run_random(dir, 0, io, true);
		run_random(dir, 5, io, true);
		run_random(dir, 10, io, true);
	}
}

/* tmpfs: io=auto picks psync; zero works without ZERO_RANGE. */
static void
test_io_tmpfs_auto_and_zero(void **state)
{
	char shm[] = "/dev/shm/nbdraid-test-io.XXXXXX";

	(void)state;
	if (!mkdtemp(shm)) {
		skip();
	}
	run_random(shm, 1, RAID_IO_AUTO, false);
	run_random(shm, 0, RAID_IO_URING, false);
	for (unsigned i = 0; i < 3; i++) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/m%u.img", shm, i);
		unlink(p);
	}
	rmdir(shm);
}

/*
 * A read that runs off the end of a member fails; it is not short-success.
 * Two requests per batch, so that io_uring (not its inline path for a lone
 * request) does the reading and must continue the short transfer.
 */
static void
test_io_read_past_end_is_error(void **state)
{
	struct raid_member m = { .fd = -1, .path = "short" };
	char path[PATH_MAX + 16], buf[8192], ok[512];
	const struct io_backend *be[2] = { &uring_backend, &psync_backend };

	(void)state;
	snprintf(path, sizeof(path), "%s/short.img", dir);
	m.fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	assert_true(m.fd >= 0);
	assert_int_equal(ftruncate(m.fd, 10000), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct io_req r[2] = {
			{ .m = &m, .op = IO_READ, .buf = ok, .len = 512 },
			{ .m = &m, .op = IO_READ, .buf = buf, .len = 8192,
			  .off = 4096 },
		};

		m.be = be[i];
		assert_int_equal(be[i]->submit_wait(r, 2), -EIO);
		assert_int_equal(r[0].res, 0);
		assert_int_equal(r[1].res, -EIO);
		/* What was there was read, and the rest was asked for. */
		assert_int_equal(r[1].done, 10000 - 4096);
	}
	close(m.fd);
	unlink(path);
}

/* Trim punches holes in the member files: allocated blocks drop. */
static void
test_io_trim_punches_holes(void **state)
{
	struct raid_config c;
	struct raid_array *a;
	static char buf[MEMBER_SIZE];
	struct stat before, after;

	(void)state;
	make_config(&c, dir, 1, 2, RAID_IO_URING, false);
	assert_int_equal(raid_open(&c, &a), 0);
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(raid_pwrite(a, buf, a->size, 0, 0), 0);
	assert_int_equal(raid_flush(a), 0);
	assert_int_equal(stat(c.members[1], &before), 0);
	assert_int_equal(raid_trim(a, a->size / 2, 0, RAID_FUA), 0);
	assert_int_equal(stat(c.members[1], &after), 0);
	if (before.st_blocks == after.st_blocks) {
		print_message("filesystem does not punch holes: skipped\n");
		raid_close(a);
		raid_config_free(&c);
		skip();
	}
	assert_true(after.st_blocks < before.st_blocks);
	assert_int_equal(raid_pread(a, buf, 4096, 0, 0), 0);
	for (unsigned i = 0; i < 4096; i++) {
		assert_int_equal(buf[i], 0);
	}
	raid_close(a);
	raid_config_free(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_io_buffered_random),
		cmocka_unit_test(test_io_direct_unaligned_random),
		cmocka_unit_test(test_io_tmpfs_auto_and_zero),
		cmocka_unit_test(test_io_read_past_end_is_error),
		cmocka_unit_test(test_io_trim_punches_holes),
	};
	const char *base = getenv("NBDRAID_TEST_DIR");
	int r;

	raid_set_log(quiet_log);
	/* /var/tmp: a disk filesystem, where O_DIRECT needs alignment. */
	snprintf(dir, sizeof(dir), "%s/nbdraid-test-io.XXXXXX",
		 base ? base : "/var/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 77;
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	for (unsigned i = 0; i < 3; i++) {
		char p[PATH_MAX + 16];

		snprintf(p, sizeof(p), "%s/m%u.img", dir, i);
		unlink(p);
	}
	rmdir(dir);
	return r;
}
