/*
 * test_io.c: the real backends (io_uring, psync) over real member files:
 * byte-exact random I/O through raid_open(), buffered and O_DIRECT with
 * deliberately misaligned buffers, offsets and lengths (the bounce and
 * read-modify-write paths); a read past a member's end is an error, not a
 * short success; trim punches holes; zero works where ZERO_RANGE does not
 * (tmpfs); a member whose lock another holds is waited for a moment.
 * O_DIRECT parts are skipped where the filesystem refuses it.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "model.h"
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

/* n sparse member files of `size` bytes in `where`, and a config. */
static void
make_config_sized(struct raid_config *c, const char *where, int level,
		  unsigned n, enum raid_io_mode io, bool direct, uint64_t chunk,
		  uint64_t size)
{
	char path[PATH_MAX + 32];

	raid_config_init(c);
	c->level = level;
	c->chunk_bytes = chunk;
	c->io = io;
	c->direct = direct;
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/m%u.img", where, i);
		unlink(path);
		assert_int_equal(truncate(path, 0) == 0 || errno == ENOENT, 1);
		close(open(path, O_CREAT | O_WRONLY, 0600));
		assert_int_equal(truncate(path, size), 0);
		assert_int_equal(raid_config_set(c, "member", path), 0);
	}
}

static void
make_config(struct raid_config *c, const char *where, int level, unsigned n,
	    enum raid_io_mode io, bool direct)
{
	make_config_sized(c, where, level, n, io, direct, 16384, MEMBER_SIZE);
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
		uint64_t off = t_rand(size),
			 len = 1 + t_rand(MIN(size - off, 100000));
		unsigned op = t_rand(8);

		/* A buffer 1..63 bytes past an aligned address. */
		buf = raw + 1 + t_rand(63);
		if (op < 4) {
			model_write(a, model, buf, len, off,
				    op == 0 ? RAID_FUA : 0);
		} else if (op == 4) {
			model_zero(a, model, len, off,
				   t_rand(2) ? RAID_MAY_TRIM : 0);
		} else if (op == 5) {
			assert_int_equal(raid_flush(a), 0);
		} else {
			model_read(a, model, buf, len, off);
		}
	}
	model_read(a, model, raw, size, 0);
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
			{ .m = &m,
			  .op = IO_READ,
			  .buf = buf,
			  .len = 8192,
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

static void
fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 9));
	}
}

/* A member file of `size` bytes holding fill(.., 1). */
static void
open_member(struct raid_member *m, const char *name, size_t size)
{
	char path[PATH_MAX + 16];
	uint8_t *data = malloc(size);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	m->fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	assert_true(m->fd >= 0);
	unlink(path);
	fill(data, size, 1);
	assert_int_equal(pwrite(m->fd, data, size, 0), (ssize_t)size);
	free(data);
}

/*
 * Vectored requests on both backends: segments scattered over memory, in
 * any order, write and read back byte for byte; two requests per batch so
 * that io_uring (not its inline path) runs them.
 */
static void
test_io_vectored_write_read(void **state)
{
	static const struct {
		size_t at, len;
	} segs[4] = {
		{ 9000, 4096 },
		{ 0, 1000 },
		{ 20000, 3 },
		{ 5000, 3901 },
	};
	const struct io_backend *be[2] = { &uring_backend, &psync_backend };
	struct raid_member m = { .fd = -1, .path = "vec" };
	uint8_t src[32768], dst[32768], want[9000], other[512];
	size_t total = 9000;

	(void)state;
	open_member(&m, "vec.img", 65536);
	fill(src, sizeof(src), 2);
	for (unsigned i = 0, at = 0; i < 4; i++) {
		memcpy(want + at, src + segs[i].at, segs[i].len);
		at += segs[i].len;
	}
	for (unsigned b = 0; b < 2; b++) {
		struct iovec wv[4], rv[4];
		struct io_req r[2];

		m.be = be[b];
		for (unsigned i = 0; i < 4; i++) {
			wv[i] = (struct iovec){ src + segs[i].at, segs[i].len };
			/* Read back into other places, in reverse order. */
			rv[3 - i] =
				(struct iovec){ dst + segs[i].at, segs[i].len };
		}
		r[0] = (struct io_req){ .m = &m,
					.op = IO_WRITE,
					.flags = IO_FUA,
					.iov = wv,
					.nr_iov = 4,
					.len = total,
					.off = 1000 + b };
		r[1] = (struct io_req){ .m = &m,
					.op = IO_READ,
					.buf = other,
					.len = 512,
					.off = 40000 };
		assert_int_equal(be[b]->submit_wait(r, 2), 0);
		assert_int_equal(r[0].done, total);
		memset(dst, 0xee, sizeof(dst));
		r[0] = (struct io_req){ .m = &m,
					.op = IO_READ,
					.iov = rv,
					.nr_iov = 4,
					.len = total,
					.off = 1000 + b };
		r[1].done = 0;
		assert_int_equal(be[b]->submit_wait(r, 2), 0);
		/* Segment k of the read holds the next bytes written. */
		for (unsigned k = 0, at = 0; k < 4; k++) {
			size_t n = segs[3 - k].len;

			assert_memory_equal(dst + segs[3 - k].at, want + at, n);
			at += n;
		}
		assert_int_equal(dst[1000], 0xee); /* between segments */
	}
	close(m.fd);
}

/*
 * A vectored request resumed in the middle of a segment (what a short
 * transfer leaves: io_req_advance) reads or writes only what is left, at
 * the right place in memory and on the member: both backends.
 */
static void
test_io_vectored_resume_mid_segment(void **state)
{
	const struct io_backend *be[2] = { &uring_backend, &psync_backend };
	struct raid_member m = { .fd = -1, .path = "resume" };
	uint8_t file[16384], buf[3][4096], other[512];

	(void)state;
	open_member(&m, "resume.img", sizeof(file));
	fill(file, sizeof(file), 1);
	for (unsigned b = 0; b < 2; b++) {
		struct iovec v[3];
		struct io_req r[2];

		m.be = be[b];
		memset(buf, 0xee, sizeof(buf));
		for (unsigned i = 0; i < 3; i++) {
			v[i] = (struct iovec){ buf[i], 4096 };
		}
		r[0] = (struct io_req){ .m = &m,
					.op = IO_READ,
					.iov = v,
					.nr_iov = 3,
					.len = 3 * 4096,
					.off = 100 };
		r[1] = (struct io_req){ .m = &m,
					.op = IO_READ,
					.buf = other,
					.len = 512 };
		/* The first 5000 bytes came in an earlier, short transfer. */
		io_req_advance(&r[0], 5000);
		assert_int_equal(r[0].nr_iov, 2);
		assert_ptr_equal(r[0].iov[0].iov_base, &buf[1][5000 - 4096]);
		assert_int_equal(r[0].iov[0].iov_len, 2 * 4096 - 5000);
		assert_int_equal(be[b]->submit_wait(r, 2), 0);
		assert_int_equal(r[0].done, 3 * 4096);
		assert_int_equal(buf[0][4095], 0xee);
		assert_int_equal(buf[1][5000 - 4096 - 1], 0xee);
		assert_memory_equal(&buf[1][5000 - 4096], file + 100 + 5000,
				    2 * 4096 - 5000);
		assert_memory_equal(buf[2], file + 100 + 2 * 4096, 4096);
	}
	close(m.fd);
}

/*
 * A vectored read that runs off the end of a member, in the middle of a
 * segment: what was there is read, the rest is asked for again from the
 * right segment, and the end of file is -EIO, not short success.
 */
static void
test_io_vectored_read_past_end_is_error(void **state)
{
	const struct io_backend *be[2] = { &uring_backend, &psync_backend };
	struct raid_member m = { .fd = -1, .path = "vshort" };
	uint8_t file[10000], buf[3][4096], other[512];

	(void)state;
	open_member(&m, "vshort.img", sizeof(file));
	fill(file, sizeof(file), 1);
	for (unsigned b = 0; b < 2; b++) {
		/* Out of order in memory: the end falls in buf[0]. */
		struct iovec v[3] = { { buf[2], 4096 },
				      { buf[1], 4096 },
				      { buf[0], 4096 } };
		struct io_req r[2] = {
			{ .m = &m, .op = IO_READ, .buf = other, .len = 512 },
			{ .m = &m,
			  .op = IO_READ,
			  .iov = v,
			  .nr_iov = 3,
			  .len = 3 * 4096 },
		};

		m.be = be[b];
		memset(buf, 0xee, sizeof(buf));
		assert_int_equal(be[b]->submit_wait(r, 2), -EIO);
		assert_int_equal(r[0].res, 0);
		assert_int_equal(r[1].res, -EIO);
		assert_int_equal(r[1].done, 10000);
		assert_memory_equal(buf[2], file, 4096);
		assert_memory_equal(buf[1], file + 4096, 4096);
		assert_memory_equal(buf[0], file + 8192, 10000 - 8192);
		assert_int_equal(buf[0][10000 - 8192], 0xee);
	}
	close(m.fd);
}

/*
 * RAID 0 x2 at chunk 4K through raid_open(): a request whose member share
 * is more than IO_MAX_IOV chunks is split into several vectored requests
 * (one readv takes no more), and round-trips byte for byte on both
 * backends, buffered and O_DIRECT (an aligned buffer: no bounce, so the
 * vectors reach the members as they are).
 */
static void
test_io_vectored_over_iov_max(void **state)
{
	size_t len = 2 * (IO_MAX_IOV + 37) * 4096ul;
	uint8_t *w = NULL, *r = NULL;
	bool direct_ok = direct_works(dir);

	(void)state;
	assert_int_equal(posix_memalign((void **)&w, 4096, len), 0);
	assert_int_equal(posix_memalign((void **)&r, 4096, len + 4096), 0);
	fill(w, len, 3);
	for (int io = RAID_IO_URING; io <= RAID_IO_PSYNC; io++) {
		for (int direct = 0; direct <= (int)direct_ok; direct++) {
			struct raid_config c;
			struct raid_array *a;
			uint64_t off = direct ? 8192 : 1234;

			make_config_sized(&c, dir, 0, 2, io, direct, 4096,
					  len / 2 + 65536);
			assert_int_equal(raid_open(&c, &a), 0);
			assert_int_equal(raid_pwrite(a, w, len, off, 0), 0);
			memset(r, 0, len);
			assert_int_equal(raid_pread(a, r, len, off, 0), 0);
			assert_memory_equal(r, w, len);
			/* Unaligned buffer: the bounce path, same bytes. */
			assert_int_equal(
				raid_pread(a, r + 1, len - 4096, off + 4096, 0),
				0);
			assert_memory_equal(r + 1, w + 4096, len - 4096);
			raid_close(a);
			raid_config_free(&c);
		}
	}
	free(w);
	free(r);
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

/* Another open file description holding a write OFD lock on path. */
static int
hold_lock(const char *path)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	return fd;
}

static void *
let_go_later(void *p)
{
	nanosleep(&(struct timespec){ 0, 150 * 1000000L }, NULL);
	close(*(int *)p);
	return NULL;
}

static uint64_t
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * A member file whose lock another holds: an nbdraid killed with io_uring
 * I/O in flight keeps its files (and their locks) until the kernel has
 * finished that I/O, so a claim is tried again for a second.  A holder
 * that lets go within it: the array opens; one that stays: refused,
 * naming the member, after the wait.
 */
static void
test_io_claim_waits_for_holder(void **state)
{
	char path[PATH_MAX + 32];
	struct raid_config c;
	struct raid_array *a = NULL;
	struct timespec t0;
	pthread_t th;
	int fd;

	(void)state;
	make_config(&c, dir, 1, 2, RAID_IO_PSYNC, false);
	snprintf(path, sizeof(path), "%s/m1.img", dir);
	fd = hold_lock(path);
	assert_int_equal(pthread_create(&th, NULL, let_go_later, &fd), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(raid_open(&c, &a), 0);
	assert_true(ms_since(&t0) >= 100);
	pthread_join(th, NULL);
	raid_close(a);

	fd = hold_lock(path);
	raid_set_log(t_capture_log);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(raid_open(&c, &a), -EBUSY);
	assert_true(ms_since(&t0) >= 1000);
	raid_set_log(quiet_log);
	assert_non_null(strstr(t_last_error, "in use by another nbdraid"));
	assert_non_null(strstr(t_last_error, path));
	close(fd);
	raid_config_free(&c);
}

/*
 * member_hole (one SEEK_DATA) against the layout of a file written in two
 * places, and against member_extent on the same ranges: holes before,
 * between and after the data, ranges that end one byte into data, a file
 * all data.
 */
static void
check_member_hole(const char *where)
{
	const uint64_t K = 65536, M = 1 << 20;
	static char buf[1 << 16];
	char path[PATH_MAX + 32];
	struct raid_member m = { .fd = -1 };
	const struct {
		uint64_t off, len;
		bool hole;
	} cases[] = {
		{ 0, M, true },		    /* before the first data */
		{ 0, M + 1, false },	    /* ...one byte into it */
		{ M, 4096, false },	    /* data */
		{ M + K / 2, K, false },    /* starts in data */
		{ M + K, 2 * M - K, true }, /* between */
		{ M + K, 2 * M - K + 1, false },
		{ 3 * M + K, M - K, true }, /* after the last data: to EOF */
		{ 3 * M + K, 8 * M, true }, /* ...and past it */
	};

	snprintf(path, sizeof(path), "%s/hole.img", where);
	m.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(m.fd >= 0);
	assert_int_equal(ftruncate(m.fd, 4 * M), 0);
	if (lseek(m.fd, 0, SEEK_DATA) == 0) { /* no holes reported here */
		close(m.fd);
		unlink(path);
		return;
	}
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(pwrite(m.fd, buf, K, M), (ssize_t)K);
	assert_int_equal(pwrite(m.fd, buf, K, 3 * M), (ssize_t)K);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t run;
		bool hole;

		member_extent(&m, cases[i].off, cases[i].len, &hole, &run);
		assert_int_equal(member_hole(&m, cases[i].off, cases[i].len),
				 cases[i].hole);
		assert_int_equal(hole && run >= cases[i].len, cases[i].hole);
	}
	for (uint64_t off = 0; off < 4 * M; off += K) { /* all data now */
		assert_int_equal(pwrite(m.fd, buf, K, off), (ssize_t)K);
	}
	assert_false(member_hole(&m, 0, 4 * M));
	assert_false(member_hole(&m, 2 * M, 4096));
	m.is_blk = true; /* a block device cannot tell: data */
	assert_false(member_hole(&m, 5 * M, M));
	close(m.fd);
	unlink(path);
}

static void
test_io_member_hole(void **state)
{
	char shm[] = "/dev/shm/nbdraid-test-io.XXXXXX";

	(void)state;
	check_member_hole(dir);
	if (mkdtemp(shm)) {
		check_member_hole(shm);
		rmdir(shm);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_io_buffered_random, t_setup),
		cmocka_unit_test_setup(test_io_direct_unaligned_random,
				       t_setup),
		cmocka_unit_test_setup(test_io_tmpfs_auto_and_zero, t_setup),
		cmocka_unit_test_setup(test_io_read_past_end_is_error, t_setup),
		cmocka_unit_test_setup(test_io_vectored_write_read, t_setup),
		cmocka_unit_test_setup(test_io_vectored_resume_mid_segment,
				       t_setup),
		cmocka_unit_test_setup(test_io_vectored_read_past_end_is_error,
				       t_setup),
		cmocka_unit_test_setup(test_io_vectored_over_iov_max, t_setup),
		cmocka_unit_test_setup(test_io_trim_punches_holes, t_setup),
		cmocka_unit_test_setup(test_io_claim_waits_for_holder, t_setup),
		cmocka_unit_test_setup(test_io_member_hole, t_setup),
	};
	const char *base = getenv("NBDRAID_TEST_DIR");
	int r;

	t_init();
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
