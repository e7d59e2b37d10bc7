/*
 * test_array.c: the core's request path over in-memory members: splitting
 * at chunk boundaries, batching, FUA, flush fan-out, read balancing, error
 * propagation and the refusals of array_create().  Data is checked byte for
 * byte against a flat model of the array, and member bytes against the
 * places raid_locate() names (whose mapping test_layout.c proves against an
 * independent model of md).
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "fixture.h"
#include "helpers.h"
#include "mem_backend.h"
#include "model.h"
#include "util.h"

#define CHUNK FIXTURE_CHUNK

/*
 * Random unaligned writes, trims, zeroes and reads against a flat model,
 * over the array a spec makes; the members' bytes checked where md puts
 * them, and nothing before each member's data offset changed.
 */
static void
random_ops_spec(struct fixture *f, const struct fixture_spec *s)
{
	uint8_t *model, *buf;
	uint64_t size;
	int level = s->level;

	assert_int_equal(fixture_open(f, s), 0);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size);
	for (unsigned i = 0; i < 300; i++) {
		uint64_t off = t_rand(size),
			 len = 1 + t_rand(MIN(size - off, 5 * CHUNK));
		unsigned op = t_rand(10);

		if (op < 5) {
			model_write(f->a, model, buf, len, off,
				    op == 0 ? RAID_FUA : 0);
		} else if (op < 7) {
			model_zero(f->a, model, len, off,
				   op == 5 ? RAID_MAY_TRIM : 0);
		} else if (op == 7 && level != 5) {
			/*
			 * Trim on memory members reads back zero (RAID 5 keeps
			 * partial stripes: test_raid5.c covers its trim).
			 */
			assert_int_equal(raid_trim(f->a, len, off, 0), 0);
			memset(model + off, 0, len);
		} else {
			model_read(f->a, model, buf, len, off);
		}
	}
	model_read(f->a, model, buf, size, 0);
	fixture_check_members(f, model);
	fixture_check_before_data(f);
	free(model);
	free(buf);
}

/* The same, with array data starting data_offset into every member, and
 * member-size= member_size (0: none). */
static void
random_ops_at(struct fixture *f, int level, const char *layout, unsigned n,
	      uint64_t data_offset, uint64_t member_size)
{
	struct fixture_spec s = { .level = level,
				  .layout = layout,
				  .n = n,
				  .mem_size = data_offset + 9 * CHUNK + 100,
				  .data_offset = data_offset,
				  .member_size = member_size };

	random_ops_spec(f, &s);
}

static void
random_ops(struct fixture *f, int level, const char *layout, unsigned n)
{
	random_ops_at(f, level, layout, n, 0, 0);
}

/* data-offset (raw mode, md's Data Offset) shifts every member I/O. */
static void
test_array_data_offset_every_level(void **state)
{
	static const uint64_t offsets[] = { 512, 3 * CHUNK, 1u << 20 };
	struct fixture *f = *state;

	for (unsigned i = 0; i < 3; i++) {
		uint64_t d = offsets[i];

		random_ops_at(f, 0, NULL, 3, d, 0);
		random_ops_at(f, 1, NULL, 2, d, 0);
		random_ops_at(f, 10, "n2", 4, d, 0);
		random_ops_at(f, 10, "f2", 4, d, 0);
		random_ops_at(f, 10, "o2", 3, d, 0);
		random_ops_at(f, 5, "left-symmetric", 4, d, 0);
		random_ops_at(f, 5, "right-asymmetric", 3, d, 0);
	}
}

/*
 * Members whose data starts at different offsets (md allows it: members of
 * different sizes, a reshape): every level places each member's bytes from
 * its own offset, and nothing before it changes.
 */
static void
test_array_data_offsets_per_member(void **state)
{
	static const uint64_t offsets[] = { 0, 1u << 20, 512, 3 * CHUNK, 8192 };
	static const struct {
		int level;
		const char *layout;
		unsigned n;
	} geo[] = { { 0, NULL, 3 },
		    { 1, NULL, 2 },
		    { 10, "n2", 4 },
		    { 10, "f2", 3 },
		    { 5, "left-symmetric", 5 },
		    { 5, "right-asymmetric", 3 } };
	struct fixture *f = *state;

	for (unsigned g = 0; g < sizeof(geo) / sizeof(geo[0]); g++) {
		struct fixture_spec s = { .level = geo[g].level,
					  .layout = geo[g].layout,
					  .n = geo[g].n,
					  .mem_size = (1u << 20) + 9 * CHUNK,
					  .data_offsets = offsets };

		random_ops_spec(f, &s);
		if (geo[g].level == 5) {
			fixture_check_parity(f);
		}
	}
}

/* Every level and layout round-trips random unaligned I/O, md placement. */
static void
test_array_random_ops_every_level(void **state)
{
	struct fixture *f = *state;

	for (unsigned n = 1; n <= 6; n++) {
		random_ops(f, 0, NULL, n);
		random_ops(f, 1, NULL, n);
	}
	for (unsigned n = 2; n <= 6; n++) {
		random_ops(f, 10, "n2", n);
		random_ops(f, 10, "f2", n);
		random_ops(f, 10, "o2", n);
	}
	for (unsigned n = 3; n <= 6; n++) {
		random_ops(f, 10, "n3", n);
		random_ops(f, 10, "f3", n);
		random_ops(f, 10, "o3", n);
	}
}

/*
 * member-size= (md's Used Dev Size) caps every member's data area: whole
 * chunks for striped levels, exactly for mirrors, whose last chunk is then
 * partial; random I/O still round-trips and never passes the area.
 */
static void
test_array_member_size(void **state)
{
	uint64_t ms = 5 * CHUNK + 1536;
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1,
				  .n = 2,
				  .mem_size = 9 * CHUNK,
				  .member_size = ms };

	random_ops_at(f, 1, NULL, 2, 1024, ms);
	random_ops_at(f, 1, NULL, 3, 0, ms);
	random_ops_at(f, 10, "f2", 4, 512, ms);
	random_ops_at(f, 5, "left-symmetric", 3, 0, ms);
	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(f->a->size, 5 * CHUNK + 1536);
	s.level = 0;
	s.n = 3;
	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(f->a->size, 3 * 5 * CHUNK); /* whole chunks, as md */
	s.n = 2;
	s.mem_size = 5 * CHUNK + 1535 + 512;
	s.data_offset = 512;
	assert_int_equal(fixture_open(f, &s), -EINVAL);
	assert_string_equal(
		t_last_error,
		"member 0 (mem0): size 22527 is smaller than data-offset 512 plus member-size 22016");
}

/* RAID 1 rounds its members down to 64 KiB as mdadm does, not to a chunk. */
static void
test_array_raid1_rounds_to_64k(void **state)
{
	uint64_t sizes[2] = { (1u << 20) + (100u << 10), 2u << 20 };
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1,
				  .n = 2,
				  .mem_sizes = sizes,
				  .chunk = 512u << 10 };
	struct raid_info info;

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(f->a->size, (1u << 20) + (64u << 10));
	raid_get_info(f->a, &info);
	assert_int_equal(info.member_bytes, (1u << 20) + (64u << 10));
}

/* Array size follows md: the smallest member, in whole chunks. */
static void
test_array_size_uses_smallest_member(void **state)
{
	uint64_t sizes[3] = { 10 * CHUNK, 7 * CHUNK + 5, 12 * CHUNK };
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 3, .mem_sizes = sizes };

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(f->a->size, 3 * 7 * CHUNK);
	/* The same members, reassembled at other levels. */
	f->cfg.level = 1;
	assert_int_equal(fixture_assemble(f), 0);
	assert_int_equal(f->a->size, 7 * CHUNK);
	f->cfg.level = 10; /* n2 over 3: 7 * 3 / 2 = 10 chunks */
	assert_int_equal(fixture_assemble(f), 0);
	assert_int_equal(f->a->size, 10 * CHUNK);
}

/* A member smaller than one chunk is refused, named, with its size. */
static void
test_array_refuses_member_smaller_than_chunk(void **state)
{
	uint64_t sizes[2] = { 10 * CHUNK, CHUNK - 1 };
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_sizes = sizes };

	assert_int_equal(fixture_open(f, &s), -EINVAL);
	assert_string_equal(
		t_last_error,
		"member 1 (mem1): size 4095 is smaller than one chunk (4096)");
}

/* The same file twice (same identity, whatever the path) is refused. */
static void
test_array_refuses_same_file_twice(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 3, .mem_size = 8 * CHUNK };
	struct raid_member *m;

	fixture_members(f, &s);
	m = f->m;
	m[2].fd = 99; /* identity is only compared for members with an fd */
	m[0].fd = 98;
	m[2].dev = m[0].dev;
	m[2].ino = m[0].ino;
	assert_int_equal(fixture_assemble(f), -EINVAL);
	assert_string_equal(t_last_error,
			    "member 2 (mem2): same file as member 0 (mem0)");
	m[0].fd = m[2].fd = -1;
}

/* A member error reaches the caller as its errno, naming the member. */
static void
test_array_member_error_propagates(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 3, .mem_size = 8 * CHUNK };
	char buf[3 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	mem_of(&f->m[1])->fail_always = true;
	t_last_error[0] = '\0';
	/* Chunk 0 is on member 0: unaffected. */
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 0, 0), 0);
	assert_int_equal(raid_pread(f->a, buf, 3 * CHUNK, 0, 0), -EIO);
	assert_non_null(strstr(t_errors, "member 1 (mem1): read at 0+4096"));
	mem_of(&f->m[1])->fail_errno = ENOSPC;
	assert_int_equal(raid_pwrite(f->a, buf, 2 * CHUNK, 100, 0), -ENOSPC);
	assert_int_equal(raid_flush(f->a), -ENOSPC);
}

/* A failure on one request of a batch does not stop the others. */
static void
test_array_error_reaps_whole_batch(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 4, .mem_size = 8 * CHUNK };
	char buf[4 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	mem_of(&f->m[0])->fail_at = 1;
	mem_of(&f->m[0])->fail_times = 2; /* and its retry */
	memset(buf, 7, sizeof(buf));
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 0, 0), -EIO);
	for (unsigned i = 1; i < 4; i++) {
		assert_int_equal(mem_of(&f->m[i])->count[IO_WRITE], 1);
		assert_int_equal(mem_of(&f->m[i])->data[0], 7);
	}
}

/* FUA is carried by every member write; flush reaches every member once. */
static void
test_array_fua_and_flush_reach_every_member(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 10,
				  .layout = "n2",
				  .n = 4,
				  .mem_size = 8 * CHUNK };
	char buf[8 * CHUNK] = { 1 };

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 0, RAID_FUA), 0);
	assert_int_equal(raid_flush(f->a), 0);
	for (unsigned i = 0; i < 4; i++) {
		struct mem_member *mm = mem_of(&f->m[i]);

		assert_true(mm->count[IO_WRITE] > 0);
		assert_int_equal(mm->fua_writes, mm->count[IO_WRITE]);
		assert_int_equal(mm->count[IO_FLUSH], 1);
	}
}

/* Trim with FUA flushes the members it touched, and only those. */
static void
test_array_trim_fua_flushes_touched_members(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 4, .mem_size = 8 * CHUNK };

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_trim(f->a, 2 * CHUNK, CHUNK, RAID_FUA), 0);
	assert_int_equal(mem_of(&f->m[0])->count[IO_FLUSH], 0);
	assert_int_equal(mem_of(&f->m[1])->count[IO_FLUSH], 1);
	assert_int_equal(mem_of(&f->m[2])->count[IO_FLUSH], 1);
	assert_int_equal(mem_of(&f->m[3])->count[IO_FLUSH], 0);
}

/* One request is one batch: contiguous pieces on a member merge into one. */
static void
test_array_sequential_mirror_read_is_one_member_io(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 2, .mem_size = 32 * CHUNK };
	static char buf[16 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_pread(f->a, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(mem_of(&f->m[0])->count[IO_READ] +
				 mem_of(&f->m[1])->count[IO_READ],
			 1);
	/* A zero over 8 chunks of RAID0 on 2 members: one request each. */
	s = (struct fixture_spec){ .level = 0, .n = 2, .mem_size = 32 * CHUNK };
	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_zero(f->a, 8 * CHUNK, 0, 0), 0);
	assert_int_equal(mem_of(&f->m[0])->count[IO_ZERO], 1);
	assert_int_equal(mem_of(&f->m[1])->count[IO_ZERO], 1);
}

/*
 * RAID 0 at a 4K chunk: a 1M read or write puts a member's chunks 2 (or 4)
 * chunks apart in the client's buffer but back to back on the member, so
 * it is one vectored member I/O per member (it was one per chunk), at
 * chunk-aligned and unaligned offsets, and the bytes are the model's.
 */
static void
test_array_striped_1m_is_one_member_io_each(void **state)
{
	struct fixture *f = *state;
	static const unsigned widths[] = { 2, 4 };
	static uint8_t buf[1u << 20], got[1u << 20];

	for (unsigned w = 0; w < 2; w++) {
		unsigned n = widths[w];
		struct fixture_spec s = { .level = 0,
					  .n = n,
					  .mem_size = (1u << 20) / n * 2 };
		uint8_t *model;
		uint64_t offs[5];

		assert_int_equal(fixture_open(f, &s), 0);
		model = calloc(1, f->a->size);
		offs[0] = 0;
		offs[1] = 100;
		offs[2] = 3 * CHUNK + 7;
		offs[3] = CHUNK;
		offs[4] = f->a->size - sizeof(buf);
		for (unsigned i = 0; i < 5; i++) {
			fixture_reset_counts(f);
			model_write(f->a, model, buf, sizeof(buf), offs[i], 0);
			for (unsigned m = 0; m < n; m++) {
				assert_int_equal(
					mem_of(&f->m[m])->count[IO_WRITE], 1);
				assert_int_equal(mem_of(&f->m[m])->vectored, 1);
			}
			fixture_reset_counts(f);
			model_read(f->a, model, got, sizeof(got), offs[i]);
			for (unsigned m = 0; m < n; m++) {
				assert_int_equal(
					mem_of(&f->m[m])->count[IO_READ], 1);
			}
		}
		fixture_check_members(f, model);
		free(model);
	}
}

/* A failing vectored member I/O fails the request and names its range. */
static void
test_array_vectored_error_propagates(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = 64 * CHUNK };
	static uint8_t buf[64 * CHUNK], got[64 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(buf, sizeof(buf));
	mem_of(&f->m[1])->fail_at = 1;
	mem_of(&f->m[1])->fail_times = 2; /* and its retry */
	t_last_error[0] = '\0';
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 0, 0), -EIO);
	assert_non_null(
		strstr(t_last_error, "member 1 (mem1): write at 0+131072"));
	/* The other member's vectored write completed, all of it. */
	assert_int_equal(mem_of(&f->m[0])->vectored, 1);
	for (unsigned k = 0; k < 64; k += 2) {
		assert_memory_equal(mem_of(&f->m[0])->data + k / 2 * CHUNK,
				    buf + k * CHUNK, CHUNK);
	}
	mem_of(&f->m[0])->fail_always = true;
	assert_int_equal(raid_pread(f->a, got, sizeof(got), 0, 0), -EIO);
	assert_non_null(strstr(t_errors, "member 0 (mem0): read at 0+131072"));
}

/*
 * One readv takes at most IO_MAX_IOV segments: a member share of more
 * chunks than that is several member I/Os, each as full as allowed.
 */
static void
test_array_vector_capped_at_iov_max(void **state)
{
	struct fixture *f = *state;
	uint64_t len = 2ull * (IO_MAX_IOV + 1) * CHUNK;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = len / 2 };
	uint8_t *w = malloc(len), *r = malloc(len);

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(w, len);
	assert_int_equal(raid_pwrite(f->a, w, len, 0, 0), 0);
	fixture_reset_counts(f);
	assert_int_equal(raid_pread(f->a, r, len, 0, 0), 0);
	assert_memory_equal(r, w, len);
	for (unsigned m = 0; m < 2; m++) {
		struct mem_member *mm = mem_of(&f->m[m]);

		/* IO_MAX_IOV chunks in one, the last chunk alone. */
		assert_int_equal(mm->count[IO_READ], 2);
		assert_int_equal(mm->vectored, 1);
		assert_int_equal(mm->segments, IO_MAX_IOV);
	}
	free(w);
	free(r);
}

/*
 * Big requests (up to 60 chunks) on every level: vectored member I/O,
 * mirrors' read balancing and RAID 5's per-stripe pieces stay byte-exact.
 */
static void
random_big_ops(struct fixture *f, int level, const char *layout, unsigned n)
{
	struct fixture_spec s = { .level = level,
				  .layout = layout,
				  .n = n,
				  .mem_size = 96 * CHUNK };
	uint8_t *model, *buf;
	uint64_t size;
	unsigned vectored = 0;

	assert_int_equal(fixture_open(f, &s), 0);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size + 1);
	for (unsigned i = 0; i < 120; i++) {
		uint64_t off = t_rand(size);
		uint64_t len = 1 + t_rand(MIN(size - off, 60 * CHUNK));
		uint8_t *p = buf + t_rand(2);
		unsigned op = t_rand(8);

		if (t_rand(2)) {
			off = ROUND_DOWN(off, CHUNK);
			len = MIN(ROUND_UP(len, CHUNK), size - off);
		}
		if (op < 4) {
			model_write(f->a, model, p, len, off,
				    op == 0 ? RAID_FUA : 0);
		} else if (op == 4) {
			model_zero(f->a, model, len, off, 0);
		} else {
			model_read(f->a, model, p, len, off);
		}
	}
	model_read(f->a, model, buf, size, 0);
	fixture_check_members(f, model);
	for (unsigned i = 0; i < n; i++) {
		vectored += mem_of(&f->m[i])->vectored;
	}
	if (level != 1) {
		assert_true(vectored > 0);
	}
	free(model);
	free(buf);
}

/* Requests of up to 60 chunks are byte-exact on every level and layout. */
static void
test_array_big_requests_every_level(void **state)
{
	struct fixture *f = *state;

	random_big_ops(f, 0, NULL, 2);
	random_big_ops(f, 0, NULL, 3);
	random_big_ops(f, 0, NULL, 4);
	random_big_ops(f, 1, NULL, 2);
	random_big_ops(f, 10, "n2", 4);
	random_big_ops(f, 10, "n2", 3);
	random_big_ops(f, 10, "f2", 4);
	random_big_ops(f, 10, "o2", 3);
	random_big_ops(f, 5, "left-symmetric", 4);
	random_big_ops(f, 5, "right-asymmetric", 3);
}

/*
 * RAID 10 n2 over 4: a read's even chunks live on members 0/1 and its odd
 * chunks on 2/3, back to back on each member.  Each pair's share stays on
 * one copy (rule 1: it merges) and is one vectored member I/O; the other
 * copy of each pair is left free for another request.
 */
static void
test_array_raid10_read_is_one_io_per_pair(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 10,
				  .layout = "n2",
				  .n = 4,
				  .mem_size = 32 * CHUNK };
	static uint8_t w[32 * CHUNK], r[32 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	t_fill_random(w, sizeof(w));
	assert_int_equal(raid_pwrite(f->a, w, sizeof(w), 0, 0), 0);
	fixture_reset_counts(f);
	assert_int_equal(raid_pread(f->a, r, sizeof(r), 0, 0), 0);
	assert_memory_equal(r, w, sizeof(r));
	/* Chunks 0, 2 .. 30 on member 0, 1 .. 31 on member 2: a readv each. */
	assert_int_equal(mem_of(&f->m[0])->count[IO_READ], 1);
	assert_int_equal(mem_of(&f->m[1])->count[IO_READ], 0);
	assert_int_equal(mem_of(&f->m[2])->count[IO_READ], 1);
	assert_int_equal(mem_of(&f->m[3])->count[IO_READ], 0);
	assert_int_equal(mem_of(&f->m[0])->segments, 16);
	assert_int_equal(mem_of(&f->m[2])->segments, 16);
	/* The pair's other copy serves the next read while member 0 is busy. */
	atomic_store(&f->m[0].inflight, 1);
	atomic_store(&f->m[2].inflight, 1);
	fixture_reset_counts(f);
	assert_int_equal(raid_pread(f->a, r, 2 * CHUNK, 0, 0), 0);
	assert_memory_equal(r, w, 2 * CHUNK);
	assert_int_equal(mem_of(&f->m[1])->count[IO_READ], 1);
	assert_int_equal(mem_of(&f->m[3])->count[IO_READ], 1);
}

/* Reads go to the copy with the fewest I/Os in flight. */
static void
test_array_read_balances_to_least_busy_copy(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 3, .mem_size = 8 * CHUNK };
	char buf[CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	atomic_store(&f->m[0].inflight, 5);
	atomic_store(&f->m[1].inflight, 2);
	atomic_store(&f->m[2].inflight, 3);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 0, 0), 0);
	assert_int_equal(mem_of(&f->m[1])->count[IO_READ], 1);
	assert_int_equal(mem_of(&f->m[0])->count[IO_READ], 0);
	/* Completion gives the count back. */
	assert_int_equal(atomic_load(&f->m[1].inflight), 2);
}

static unsigned
reads_of(struct fixture *f, unsigned i)
{
	return mem_of(&f->m[i])->count[IO_READ];
}

/*
 * A sequential stream across requests stays on its member while that
 * member is the only busy one, moves to an idle copy when its member is
 * busy, and a read outside any stream goes to the least busy copy.
 */
static void
test_array_stream_read_runs_on_idle_copy(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 2, .mem_size = 16 * CHUNK };
	char buf[CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	/* Both idle: the first copy, and the stream stays there at QD1. */
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 0, 0), 0);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 0), 2);
	assert_int_equal(reads_of(f, 1), 0);
	/* Its member busy, the other idle: the idle copy starts a run. */
	atomic_store(&f->m[0].inflight, 1);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 2 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 1), 1);
	/* Both busy: the stream continues on member 1, even if busier. */
	atomic_store(&f->m[1].inflight, 3);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 3 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 1), 2);
	assert_int_equal(reads_of(f, 0), 2);
	/* Member 0 drained: the next run goes back to it. */
	atomic_store(&f->m[0].inflight, 0);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 4 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 0), 3);
	/* ... and continues there while member 1 is busy. */
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 5 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 0), 4);
	/* A read outside the stream: the least busy copy. */
	atomic_store(&f->m[0].inflight, 4);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 11 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 1), 3);
	assert_int_equal(reads_of(f, 0), 4);

	/* RAID 10 n2 x4: chunks 0 and 2 are one stream on members 0/1. */
	s = (struct fixture_spec){ .level = 10,
				   .layout = "n2",
				   .n = 4,
				   .mem_size = 16 * CHUNK };
	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 0, 0), 0);
	atomic_store(&f->m[0].inflight, 1);
	assert_int_equal(raid_pread(f->a, buf, CHUNK, 2 * CHUNK, 0), 0);
	assert_int_equal(reads_of(f, 0), 1);
	assert_int_equal(reads_of(f, 1), 1);
	assert_int_equal(reads_of(f, 2) + reads_of(f, 3), 0);
}

/*
 * Trim and zero where one copy's member refuses the fallocate mode the
 * others did: the copies must not diverge (the refuser is zeroed another
 * way), and FUA still flushes the members that changed.
 */
static void
test_array_discard_refused_by_one_copy_keeps_copies_equal(void **state)
{
	struct fixture *f = *state;
	static const struct fixture_spec geo[] = {
		{ .level = 1, .n = 2, .mem_size = 8 * CHUNK },
		{ .level = 10, .layout = "n2", .n = 4, .mem_size = 8 * CHUNK },
		{ .level = 10, .layout = "f2", .n = 3, .mem_size = 8 * CHUNK },
	};
	uint8_t *model = NULL, *buf = NULL;

	for (unsigned g = 0; g < 3; g++) {
		for (unsigned refuser = 0; refuser < geo[g].n; refuser++) {
			uint64_t size;
			int r;

			assert_int_equal(fixture_open(f, &geo[g]), 0);
			size = f->a->size;
			model = realloc(model, size);
			buf = realloc(buf, size);
			for (uint64_t i = 0; i < size; i++) {
				model[i] = t_rand(255) + 1;
			}
			assert_int_equal(raid_pwrite(f->a, model, size, 0, 0),
					 0);
			mem_of(&f->m[refuser])->refuse_ops =
				1u << IO_TRIM | 1u << IO_PUNCH;
			assert_int_equal(
				raid_trim(f->a, 3 * CHUNK, CHUNK, RAID_FUA), 0);
			for (unsigned i = 0; i < geo[g].n; i++) {
				struct mem_member *mm = mem_of(&f->m[i]);

				if (i != refuser && mm->count[IO_TRIM]) {
					assert_true(mm->count[IO_FLUSH] > 0);
				}
			}
			/* Every copy equal: all trimmed to zero, or all kept.
			 */
			assert_int_equal(raid_pread(f->a, buf, size, 0, 0), 0);
			for (uint64_t x = CHUNK; x < 4 * CHUNK; x++) {
				assert_true(buf[x] == 0 || buf[x] == model[x]);
				model[x] = buf[x];
			}
			fixture_check_members(f, model);
			/* Fast zero, the refuser refusing every mode. */
			mem_of(&f->m[refuser])->refuse_ops |= 1u << IO_ZERO;
			/*
			 * The other copies zero without writing, so the
			 * refuser's must be written: undoing theirs is not
			 * possible, and ENOTSUP would leave copies apart.
			 */
			r = raid_zero(f->a, 2 * CHUNK, 5 * CHUNK + 10,
				      RAID_FAST_ZERO);
			assert_int_equal(r, 0);
			memset(model + 5 * CHUNK + 10, 0, 2 * CHUNK);
			fixture_check_members(f, model);
			/* Plain zero: done, one way or another, on every copy.
			 */
			assert_int_equal(
				raid_zero(f->a, CHUNK, 100, RAID_MAY_TRIM), 0);
			memset(model + 100, 0, CHUNK);
			fixture_check_members(f, model);
		}
	}
	free(model);
	free(buf);
}

struct writer {
	struct raid_array *a;
	unsigned idx;
	atomic_bool *stop;
	atomic_uint *done;
	atomic_int *error; /* a write's -errno (cmocka asserts on the main
			      thread only) */
	unsigned max_s;	   /* stop on its own after this many seconds */
};

static void *
aligned_writer(void *arg)
{
	struct writer *w = arg;
	static _Alignas(4096) char buf[64 << 10];
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(w->stop)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= w->max_s) {
			break;
		}
		int r = raid_pwrite(w->a, buf, sizeof(buf),
				    (w->idx % 4) * sizeof(buf), 0);

		if (r < 0) {
			atomic_store(w->error, r);
			break;
		}
		atomic_fetch_add(w->done, 1);
	}
	return NULL;
}

/*
 * O_DIRECT members: an unaligned write (read-patch-write of its edge
 * blocks) is answered while aligned writes from 8 threads keep coming,
 * including ones to the blocks it patches; it must not wait for them to
 * stop.  The writers stop on their own after WRITERS_MAX_S: the unaligned
 * writes must all be done well before.  The writers are stopped before
 * anything is asserted: the teardown closes the array they write to.
 */
static void
test_array_unaligned_write_not_starved(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 2, .mem_size = 64 * CHUNK };
	enum { WRITERS = 8, UNALIGNED = 20, WRITERS_MAX_S = 20 };
	pthread_t t[WRITERS];
	struct writer w[WRITERS];
	atomic_bool stop = false;
	atomic_uint done = 0;
	atomic_int error = 0;
	struct timespec t0, t1;
	char small[100];
	unsigned writes_before, k;
	bool ran = true, late = false;
	int r = 0;

	assert_int_equal(fixture_open(f, &s), 0);
	/* O_DIRECT-like, slow members: reassembled over them. */
	for (unsigned i = 0; i < 2; i++) {
		f->m[i].mem_align = f->m[i].io_align = 512;
		mem_of(&f->m[i])->delay_us = 200;
	}
	assert_int_equal(fixture_assemble(f), 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){ f->a,  i,      &stop,
					&done, &error, WRITERS_MAX_S };
		pthread_create(&t[i], NULL, aligned_writer, &w[i]);
	}
	while (atomic_load(&done) < 4 * WRITERS && !atomic_load(&error)) {
		usleep(1000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(small, 0x5a, sizeof(small));
	for (k = 0; k < UNALIGNED && r == 0 && ran && !late; k++) {
		writes_before = atomic_load(&done);
		r = raid_pwrite(f->a, small, sizeof(small), 1000 + k * 13000,
				0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ran = atomic_load(&done) > writes_before;
		late = t1.tv_sec - t0.tv_sec > WRITERS_MAX_S / 2;
	}
	atomic_store(&stop, true);
	for (unsigned i = 0; i < WRITERS; i++) {
		pthread_join(t[i], NULL);
	}
	assert_int_equal(r, 0);
	assert_int_equal(atomic_load(&error), 0);
	/* The aligned writers were still running meanwhile. */
	assert_true(ran);
	if (late) {
		print_error("%u unaligned writes took over %d s\n", k,
			    WRITERS_MAX_S / 2);
		fail();
	}
}

/* Requests past the end are refused before any member I/O. */
static void
test_array_refuses_out_of_range(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = 8 * CHUNK };
	char buf[16];

	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_pread(f->a, buf, 16, f->a->size - 8, 0), -ENOSPC);
	assert_int_equal(mem_of(&f->m[0])->ops + mem_of(&f->m[1])->ops, 0);
}

/*
 * Members of 4 KiB blocks (O_DIRECT-like): a data offset that is a
 * multiple of md's sectors but not of the blocks (8704) is refused
 * (EINVAL), naming the member and both numbers, before any member I/O;
 * at a multiple of them (8192) the same members are served.
 */
static void
test_array_refuses_unaligned_data_offset(void **state)
{
	static const uint64_t offsets[] = { 8192, 8192 + 512 };
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1,
				  .n = 2,
				  .mem_size = 16 * CHUNK,
				  .data_offsets = offsets };
	uint8_t buf[4096], got[4096];

	fixture_members(f, &s);
	for (unsigned i = 0; i < 2; i++) {
		f->m[i].mem_align = f->m[i].io_align = 4096;
	}
	t_last_error[0] = '\0';
	assert_int_equal(fixture_assemble(f), -EINVAL);
	assert_null(f->a);
	assert_non_null(strstr(t_last_error,
			       "member 1 (mem1): data offset 8704 is not a "
			       "multiple of the members' block size 4096"));
	assert_int_equal(mem_of(&f->m[0])->ops + mem_of(&f->m[1])->ops, 0);
	f->data_offsets[1] = 8192;
	assert_int_equal(fixture_assemble(f), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 4096, 0), 0);
	assert_int_equal(raid_pread(f->a, got, sizeof(got), 4096, 0), 0);
	assert_memory_equal(got, buf, sizeof(buf));
	assert_memory_equal(mem_of(&f->m[1])->data + 8192 + 4096, buf,
			    sizeof(buf));
}

/* nbdraid check on mirrors: copies that differ are counted by chunk. */
static void
test_array_check_counts_differing_copies(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 10,
				  .layout = "f2",
				  .n = 3,
				  .mem_size = 8 * CHUNK };
	struct raid_check_result res;
	struct raid_place p[RAID_MAX_COPIES];
	static char buf[6 * CHUNK];

	assert_int_equal(fixture_open(f, &s), 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(raid_pwrite(f->a, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.unit, RAID_CHECK_CHUNK);
	assert_int_equal(res.units, f->a->g.array_chunks);
	assert_int_equal(res.mismatched, 0);
	/* Damage the far copy of chunk 5. */
	assert_int_equal(raid_locate(f->a, 5 * CHUNK + 9, p, RAID_MAX_COPIES),
			 2);
	mem_of(&f->m[p[1].member])->data[p[1].offset] ^= 1;
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.mismatched, 1);
	assert_int_equal(res.first[0], 5);
	/* Repair: the other copies from the first, as md's repair. */
	assert_int_equal(raid_repair(f->a, &res, NULL, NULL), 0);
	assert_int_equal(res.mismatched, 1);
	assert_int_equal(mem_of(&f->m[p[1].member])->data[p[1].offset], 0x5a);
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.mismatched, 0);
	/* RAID 0 has nothing to check. */
	s = (struct fixture_spec){ .level = 0, .n = 2, .mem_size = 8 * CHUNK };
	assert_int_equal(fixture_open(f, &s), 0);
	assert_int_equal(raid_check(f->a, &res), 0);
	assert_int_equal(res.unit, RAID_CHECK_NONE);
	assert_int_equal(res.units, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_array_random_ops_every_level, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_data_offsets_per_member, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_data_offset_every_level, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_size_uses_smallest_member, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_array_member_size,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_array_raid1_rounds_to_64k,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_refuses_member_smaller_than_chunk,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_refuses_same_file_twice, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_member_error_propagates, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_error_reaps_whole_batch, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_fua_and_flush_reach_every_member,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_trim_fua_flushes_touched_members,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_sequential_mirror_read_is_one_member_io,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_striped_1m_is_one_member_io_each,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_vectored_error_propagates, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_vector_capped_at_iov_max, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_big_requests_every_level, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_raid10_read_is_one_io_per_pair,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_read_balances_to_least_busy_copy,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_stream_read_runs_on_idle_copy, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_refuses_unaligned_data_offset, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_array_refuses_out_of_range,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_check_counts_differing_copies, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_discard_refused_by_one_copy_keeps_copies_equal,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_array_unaligned_write_not_starved, fixture_setup,
			fixture_teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
