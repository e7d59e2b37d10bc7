/*
 * test_cache_extents.c: block status through the write-back cache
 * (raid_extents with cache=ram; issue 25 #17).
 *
 * Memory members answer SEEK_DATA through files of their own (each
 * member's fd is a sparse file the test keeps as the member's map of
 * what it holds), and lseek is wrapped at link time (-Wl,--wrap=lseek,
 * tests/CMakeLists.txt) so that a case can run a write-back exactly
 * between a member's answer and what follows it in raid_extents: the
 * moment a race needs microseconds to hit with a real server.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "cache.h"
#include "fixture.h"
#include "helpers.h"
#include "logtest.h"

#define BLK   4096u
#define KiB   1024u
#define MiB   (1024u * 1024u)
#define CHUNK (64 * KiB)

off_t __real_lseek(int fd, off_t off, int whence);
off_t __wrap_lseek(int fd, off_t off, int whence);

/* Run once, after a SEEK_DATA on seek_fd from the chunk that holds
 * seek_at (then disarmed): the members asked about that piece. */
static void (*after_seek)(void *ctx);
static void *after_seek_ctx;
static int seek_fd = -1;
static off_t seek_at;

off_t
__wrap_lseek(int fd, off_t off, int whence)
{
	off_t r = __real_lseek(fd, off, whence);
	void (*fn)(void *) = after_seek;

	if (whence == SEEK_DATA && fn && fd == seek_fd && off <= seek_at &&
	    seek_at - off < CHUNK) {
		int e = errno;

		after_seek = NULL;
		fn(after_seek_ctx);
		errno = e;
	}
	return r;
}

struct xfx {
	char dir[64];
	struct fixture *fx;
	void *fs;
	int fds[4];
	unsigned n;
};

/* Member i's map: 4K of data at off in its file, as it now holds. */
static void
map_data(struct xfx *x, unsigned member, uint64_t off)
{
	uint8_t b[BLK];

	memset(b, 0x5a, sizeof(b));
	assert_int_equal(pwrite(x->fds[member], b, BLK, (off_t)off), BLK);
}

/* An array of n memory members, its members' maps sparse files, and
 * cache=ram over it (no write-back thread: the case runs write-back). */
static void
open_cached(struct xfx *x, int level, unsigned n)
{
	struct fixture_spec spec = { .level = level,
				     .n = n,
				     .mem_size = 4 * MiB,
				     .chunk = CHUNK };
	struct raid_array *a;

	t_reset();
	t_scratch_dir(x->dir, sizeof(x->dir), "/tmp", "nbdraid-cext");
	assert_int_equal(fixture_setup(&x->fs), 0);
	x->fx = x->fs;
	assert_int_equal(fixture_open(x->fx, &spec), 0);
	a = x->fx->a;
	x->n = n;
	for (unsigned i = 0; i < n; i++) {
		char p[96];

		snprintf(p, sizeof(p), "%s/map%u", x->dir, i);
		x->fds[i] = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(x->fds[i] >= 0);
		assert_int_equal(ftruncate(x->fds[i], 4 * MiB), 0);
		a->members[i].fd = x->fds[i];
	}
	x->fx->cfg.cache = RAID_CACHE_RAM;
	x->fx->cfg.cache_size = 1 * MiB;
	assert_int_equal(array_cache_open(a, &x->fx->cfg), 0);
	assert_non_null(a->cache);
}

static void
close_cached(struct xfx *x)
{
	for (unsigned i = 0; i < x->n; i++) {
		x->fx->a->members[i].fd = -1;
		close(x->fds[i]);
	}
	fixture_teardown(&x->fs);
	t_scratch_remove(x->dir);
}

struct ext {
	uint64_t off[64], len[64];
	uint32_t type[64];
	unsigned n;
};

static int
add_ext(void *ctx, uint64_t off, uint64_t len, uint32_t type)
{
	struct ext *e = ctx;

	if (e->n < 64) {
		e->off[e->n] = off;
		e->len[e->n] = len;
		e->type[e->n] = type;
		e->n++;
	}
	return 0;
}

/* The flags block status gives byte x. */
static uint32_t
type_at(const struct ext *e, uint64_t x)
{
	for (unsigned i = 0; i < e->n; i++) {
		if (e->off[i] <= x && x < e->off[i] + e->len[i]) {
			return e->type[i];
		}
	}
	fail_msg("byte %llu not answered", (unsigned long long)x);
	return 0;
}

/* What the write-back does between a member's answer and the rest. */
struct wb_now {
	struct xfx *x;
	uint64_t at; /* the block written */
	uint64_t bytes;
};

static void
write_back_now(void *ctx)
{
	struct wb_now *w = ctx;
	struct raid_array *a = w->x->fx->a;
	struct raid_place pl[4];
	int n;

	assert_int_equal(cache_writeback_once(a->cache, true, &w->bytes), 0);
	n = raid_locate(a, w->at, pl, 4);
	for (int i = 0; i < n; i++) {
		map_data(w->x, pl[i].member, pl[i].offset - pl[i].offset % BLK);
	}
}

/*
 * A write acknowledged (dirty in the cache), then block status over it,
 * and the write-back completing right after the members were asked
 * (SEEK_DATA: a hole, then) and before anything else: the block must be
 * data.  Before, the members were asked first and the cache after, and
 * the answer was HOLE|ZERO over the acknowledged write.  Then, with the
 * block written back, the members' own answer: data; and a block never
 * written stays a hole.  RAID 0 and RAID 1.
 */
static void
test_cache_extents_writeback_between(void **state)
{
	const struct {
		int level;
		unsigned n;
	} arrays[] = { { 0, 2 }, { 1, 2 } };

	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		struct xfx x = { .n = 0 };
		struct raid_array *a;
		struct wb_now w;
		struct ext e = { .n = 0 };
		struct raid_place pl[4];
		uint8_t v[BLK];

		open_cached(&x, arrays[k].level, arrays[k].n);
		a = x.fx->a;
		t_fill_random(v, sizeof(v));
		w = (struct wb_now){ .x = &x, .at = 300 * KiB };
		assert_int_equal(raid_pwrite(a, v, BLK, w.at, 0), 0);
		assert_int_equal(raid_locate(a, w.at, pl, 4), 1 + (k == 1));
		seek_fd = x.fds[pl[0].member];
		seek_at = (off_t)pl[0].offset;
		after_seek = write_back_now;
		after_seek_ctx = &w;
		assert_int_equal(raid_extents(a, 1 * MiB, 0, 0, add_ext, &e),
				 0);
		if (after_seek) {
			/* The cache answered first: write back now. */
			after_seek = NULL;
			write_back_now(&w);
		}
		assert_int_equal(w.bytes, BLK);
		assert_int_equal(type_at(&e, w.at) &
					 (RAID_EXTENT_HOLE | RAID_EXTENT_ZERO),
				 0);
		assert_int_equal(type_at(&e, 0),
				 RAID_EXTENT_HOLE | RAID_EXTENT_ZERO);
		/* Written back: the members say data, the rest a hole. */
		e.n = 0;
		assert_int_equal(raid_extents(a, 1 * MiB, 0, 0, add_ext, &e),
				 0);
		assert_int_equal(type_at(&e, w.at) & RAID_EXTENT_HOLE, 0);
		assert_int_equal(type_at(&e, 900 * KiB),
				 RAID_EXTENT_HOLE | RAID_EXTENT_ZERO);
		close_cached(&x);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_extents_writeback_between),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
