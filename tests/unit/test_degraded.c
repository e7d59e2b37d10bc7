/*
 * test_degraded.c: members failing under I/O, over in-memory members.
 *
 * Every redundant level and layout runs random writes, zeros and reads
 * against a flat model while one member starts failing: no request fails,
 * every read is byte-exact (another copy, or RAID 5 reconstruction), the
 * member is faulty and gets no more I/O.  Then a second member fails: a
 * read answers EIO exactly where no copy is left and the model's bytes
 * everywhere else, never wrong bytes; writes then answer EIO (md's
 * MD_BROKEN).  A read error on a healthy array is repaired (rewritten from
 * the redundancy, read back) and counted; a member whose rewrite fails is
 * failed.  RAID 5's reads before a write go around a member whose read
 * failed.  The operator's fail and remove, and raw mode's member=missing.
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

#include "array.h"
#include "fixture.h"
#include "helpers.h"
#include "mem_backend.h"
#include "model.h"
#include "util.h"

#define CHUNK FIXTURE_CHUNK

struct level_case {
	int level;
	const char *layout;
	unsigned n;
};

/* Every redundant layout the data path has, at a few member counts. */
static const struct level_case redundant[] = {
	{ 1, NULL, 2 },
	{ 1, NULL, 3 },
	{ 5, "left-symmetric", 3 },
	{ 5, "left-symmetric", 5 },
	{ 5, "right-symmetric", 4 },
	{ 5, "left-asymmetric", 3 },
	{ 5, "right-asymmetric", 5 },
	{ 10, "n2", 4 },
	{ 10, "n2", 3 },
	{ 10, "f2", 4 },
	{ 10, "o2", 4 },
	{ 10, "f2", 5 },
	{ 10, "n3", 4 },
};

static void
open_case(struct fixture *f, const struct level_case *c, uint64_t chunks)
{
	struct fixture_spec s = { .level = c->level,
				  .layout = c->layout,
				  .n = c->n,
				  .mem_size = chunks * CHUNK };

	assert_int_equal(fixture_open(f, &s), 0);
}

/* One random request against the model; every one must succeed. */
static void
random_op(struct fixture *f, uint8_t *model, uint8_t *buf)
{
	uint64_t size = f->a->size;
	uint64_t off = t_rand(size),
		 len = 1 + t_rand(MIN(size - off, 5 * CHUNK));
	unsigned op = t_rand(10);

	if (op < 4) {
		model_write(f->a, model, buf, len, off, op == 0 ? RAID_FUA : 0);
	} else if (op == 4) {
		model_zero(f->a, model, len, off, RAID_MAY_TRIM);
	} else if (op == 5) {
		assert_int_equal(raid_flush(f->a), 0);
	} else {
		model_read(f->a, model, buf, len, off);
	}
}

static void
expect_state(struct raid_array *a, enum raid_array_state want)
{
	struct raid_status st;

	assert_int_equal(raid_status(a, &st), 0);
	if (st.state != want) {
		print_error("array %s, want %s (%s)\n",
			    raid_array_state_name(st.state),
			    raid_array_state_name(want), st.reason);
		fail();
	}
}

static enum raid_member_state
member_state(struct raid_array *a, unsigned role)
{
	return atomic_load(&a->members[role].state);
}

/*
 * Random I/O while member `victim` starts failing every request: the
 * first I/O that reaches it fails it, nothing else notices.
 */
static void
fail_one_under_io(struct fixture *f, const struct level_case *c,
		  unsigned victim, uint8_t *model, uint8_t *buf)
{
	unsigned ops_after;

	for (unsigned i = 0; i < 80; i++) {
		random_op(f, model, buf);
	}
	mem_of(&f->m[victim])->fail_always = true;
	for (unsigned i = 0; i < 120; i++) {
		random_op(f, model, buf);
	}
	model_read(f->a, model, buf, f->a->size, 0);
	assert_int_equal(member_state(f->a, victim), RAID_MEMBER_FAULTY);
	expect_state(f->a, RAID_ARRAY_DEGRADED);
	assert_non_null(strstr(f->a->reason, "member"));
	/* No I/O reaches a faulty member any more. */
	ops_after = mem_of(&f->m[victim])->ops;
	for (unsigned i = 0; i < 40; i++) {
		random_op(f, model, buf);
	}
	assert_int_equal(mem_of(&f->m[victim])->ops, ops_after);
	fixture_check_members(f, model);
	(void)c;
}

/* Can the array still produce the byte at off with `lost` gone? */
static bool
reachable(struct raid_array *a, uint64_t off, uint64_t lost)
{
	struct raid_place p[RAID_MAX_COPIES];
	int n = raid_locate(a, off, p, RAID_MAX_COPIES);

	if (a->layout->parity_member) {
		/* RAID 5: its data member, or all the others. */
		return !((lost >> p[0].member) & 1) ||
		       __builtin_popcountll(lost) <= 1;
	}
	for (int i = 0; i < n; i++) {
		if (!((lost >> p[i].member) & 1)) {
			return true;
		}
	}
	return false;
}

/*
 * With the members in `lost` out, member `fatal` fails where the level
 * cannot bear it: each chunk reads as the model or answers EIO, exactly
 * where no copy is left; the member is not failed, and a write to it
 * fails the array (md's MD_BROKEN): no write is taken after.
 */
static void
fail_fatal(struct fixture *f, uint64_t lost, unsigned fatal,
	   const uint8_t *model, uint8_t *buf)
{
	unsigned eio = 0;

	lost |= 1ull << fatal;
	mem_of(&f->m[fatal])->fail_always = true;
	for (uint64_t off = 0; off < f->a->size; off += CHUNK) {
		uint64_t len = MIN(CHUNK, f->a->size - off);
		int r = raid_pread(f->a, buf, len, off, 0);

		if (reachable(f->a, off, lost)) {
			assert_int_equal(r, 0);
			assert_memory_equal(buf, model + off, len);
		} else {
			assert_int_equal(r, -EIO);
			eio++;
		}
	}
	assert_true(eio > 0);
	assert_int_equal(member_state(f->a, fatal), RAID_MEMBER_IN_SYNC);
	memset(buf, 1, f->a->size);
	assert_int_equal(raid_pwrite(f->a, buf, f->a->size, 0, 0), -EIO);
	expect_state(f->a, RAID_ARRAY_FAILED);
	assert_int_equal(raid_pwrite(f->a, buf, 512, 0, 0), -EIO);
}

/*
 * After the first failure: fail more members under I/O while the level
 * bears it (a 3-way mirror, n3), then the one it cannot bear.
 */
static void
fail_until_fatal(struct fixture *f, unsigned first, uint8_t *model,
		 uint8_t *buf)
{
	uint64_t lost = 1ull << first;

	for (;;) {
		unsigned next = f->a->nr_members;

		for (unsigned i = 0; i < f->a->nr_members; i++) {
			if ((lost >> i) & 1) {
				continue;
			}
			if (!f->a->layout->enough(&f->a->g,
						  lost | (1ull << i))) {
				fail_fatal(f, lost, i, model, buf);
				return;
			}
			next = next < f->a->nr_members ? next : i;
		}
		assert_true(next < f->a->nr_members);
		mem_of(&f->m[next])->fail_always = true;
		for (unsigned i = 0; i < 60; i++) {
			random_op(f, model, buf);
		}
		assert_int_equal(member_state(f->a, next), RAID_MEMBER_FAULTY);
		model_read(f->a, model, buf, f->a->size, 0);
		lost |= 1ull << next;
	}
}

static void
test_degraded_member_fails_under_io(void **state)
{
	struct fixture *f = *state;

	for (unsigned k = 0; k < ARRAY_SIZE(redundant); k++) {
		const struct level_case *c = &redundant[k];

		for (unsigned victim = 0; victim < c->n; victim++) {
			uint8_t *model, *buf;

			t_reset();
			open_case(f, c, 12);
			model = calloc(1, f->a->size);
			buf = malloc(f->a->size);
			fail_one_under_io(f, c, victim, model, buf);
			fail_until_fatal(f, victim, model, buf);
			free(model);
			free(buf);
		}
	}
}

/* Reads and writes of every shape on a degraded array, failed by fiat. */
static void
test_degraded_every_shape(void **state)
{
	struct fixture *f = *state;

	for (unsigned k = 0; k < ARRAY_SIZE(redundant); k++) {
		const struct level_case *c = &redundant[k];
		unsigned victim = k % c->n;
		uint8_t *model, *buf;

		t_reset();
		open_case(f, c, 12);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		for (unsigned i = 0; i < 40; i++) {
			random_op(f, model, buf);
		}
		assert_int_equal(raid_fail_member(f->a, victim, "test"), 0);
		fixture_reset_counts(f);
		/* Every offset and length class: a byte, unaligned, chunk
		 * edges, whole stripes, everything. */
		for (uint64_t off = 0; off < f->a->size; off += 1531) {
			uint64_t len = 1 + (off * 7) % (3 * CHUNK);

			len = MIN(len, f->a->size - off);
			if ((off / 1531) % 2) {
				model_write(f->a, model, buf, len, off, 0);
			}
			model_read(f->a, model, buf, len, off);
		}
		model_read(f->a, model, buf, f->a->size, 0);
		assert_int_equal(mem_of(&f->m[victim])->ops, 0);
		fixture_check_members(f, model);
		free(model);
		free(buf);
	}
}

/*
 * A read error on one sector of a healthy array: the read is served from
 * the redundancy, the sector rewritten (the member's disk heals it, as a
 * disk remaps a sector on write) and counted; the array stays optimal.
 */
static void
test_degraded_read_error_repaired(void **state)
{
	struct fixture *f = *state;

	for (unsigned k = 0; k < ARRAY_SIZE(redundant); k++) {
		const struct level_case *c = &redundant[k];
		struct raid_place p[RAID_MAX_COPIES];
		uint64_t off = 5 * CHUNK + 1000;
		uint8_t *model, *buf;
		struct mem_member *mm;
		struct raid_status st;

		t_reset();
		open_case(f, c, 12);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		raid_locate(f->a, off, p, RAID_MAX_COPIES);
		mm = mem_of(&f->m[p[0].member]);
		mm->bad_ops = 1u << IO_READ;
		mm->bad_off = p[0].offset - p[0].offset % 512;
		mm->bad_len = 512;
		mm->bad_heal = true;
		/* Every copy of it is read until the bad one is hit. */
		for (unsigned i = 0; i < 8 && mm->bad_ops; i++) {
			model_read(f->a, model, buf, 4096, off - 1000);
		}
		if (mm->bad_ops) {
			print_error("case %u: not rewritten; errors: %s\n", k,
				    t_errors);
		}
		assert_int_equal(mm->bad_ops, 0); /* rewritten */
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
		assert_int_equal(st.members[p[0].member].read_errors, 1);
		assert_int_equal(st.members[p[0].member].corrected_reads,
				 4096 / 512);
		assert_non_null(strstr(t_errors, "corrected"));
		model_read(f->a, model, buf, f->a->size, 0);
		fixture_check_members(f, model);
		free(model);
		free(buf);
	}
}

/* A member whose rewrite fails too is failed; the data stays exact. */
static void
test_degraded_read_error_rewrite_fails(void **state)
{
	struct fixture *f = *state;

	for (unsigned k = 0; k < ARRAY_SIZE(redundant); k++) {
		const struct level_case *c = &redundant[k];
		struct raid_place p[RAID_MAX_COPIES];
		uint64_t off = 3 * CHUNK;
		uint8_t *model, *buf;
		struct mem_member *mm;

		t_reset();
		open_case(f, c, 12);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		raid_locate(f->a, off, p, RAID_MAX_COPIES);
		mm = mem_of(&f->m[p[0].member]);
		mm->bad_ops = (1u << IO_READ) | (1u << IO_WRITE);
		mm->bad_off = p[0].offset;
		mm->bad_len = 512;
		for (unsigned i = 0; i < 8; i++) {
			model_read(f->a, model, buf, CHUNK, off);
		}
		assert_int_equal(member_state(f->a, p[0].member),
				 RAID_MEMBER_FAULTY);
		expect_state(f->a, RAID_ARRAY_DEGRADED);
		model_read(f->a, model, buf, f->a->size, 0);
		free(model);
		free(buf);
	}
}

/*
 * RAID 5 reads before it writes: a read error there is read around
 * (reconstruct-write, or reconstruct-then-write), the write lands, and the
 * member is repaired afterwards.
 */
static void
test_degraded_raid5_preread_error(void **state)
{
	struct fixture *f = *state;
	static const struct level_case c = { 5, NULL, 4 };
	unsigned hits = 0;

	for (unsigned role = 0; role < c.n; role++) {
		for (unsigned shape = 0; shape < 3; shape++) {
			uint8_t *model, *buf;
			struct mem_member *mm;
			struct raid_status st;
			/* A small write (rmw), most of a stripe (rcw), part of
			 * one chunk whose member cannot be read. */
			static const uint64_t lens[] = { 700, 2 * CHUNK + 100,
							 CHUNK / 2 };

			t_reset();
			open_case(f, &c, 12);
			model = calloc(1, f->a->size);
			buf = malloc(f->a->size);
			model_write(f->a, model, buf, f->a->size, 0, 0);
			mm = mem_of(&f->m[role]);
			mm->bad_ops = 1u << IO_READ;
			mm->bad_off = 0; /* stripe 0, every member */
			mm->bad_len = CHUNK;
			mm->bad_heal = true;
			model_write(f->a, model, buf, lens[shape], 100 * shape,
				    0);
			assert_int_equal(raid_status(f->a, &st), 0);
			assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
			if (st.members[role].read_errors) {
				/* Read around, then rewritten. */
				assert_int_equal(mm->bad_ops, 0);
				hits++;
			}
			model_read(f->a, model, buf, f->a->size, 0);
			fixture_check_members(f, model);
			fixture_check_parity(f);
			free(model);
			free(buf);
		}
	}
	assert_true(hits >= c.n); /* each member's read failed somewhere */
}

/* mdadm --fail and --remove, by the control calls. */
static void
test_degraded_operator_fail_remove(void **state)
{
	struct fixture *f = *state;
	static const struct level_case c = { 1, NULL, 2 };
	struct raid_status st;
	uint8_t *model, *buf;

	open_case(f, &c, 8);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	model_write(f->a, model, buf, f->a->size, 0, 0);
	assert_int_equal(raid_member_lookup(f->a, "1"), 1);
	assert_int_equal(raid_member_lookup(f->a, "mem1"), 1);
	assert_int_equal(raid_member_lookup(f->a, "2"), -ENOENT);
	assert_int_equal(raid_member_lookup(f->a, "nope"), -ENOENT);
	assert_int_equal(raid_remove_member(f->a, 1), -EBUSY); /* in sync */
	assert_int_equal(raid_fail_member(f->a, 1, NULL), 0);
	assert_int_equal(raid_fail_member(f->a, 1, NULL), 0);	   /* already */
	assert_int_equal(raid_fail_member(f->a, 0, NULL), -EBUSY); /* last */
	assert_non_null(strstr(t_last_error, "holds the last copy"));
	expect_state(f->a, RAID_ARRAY_DEGRADED); /* not failed by that */
	model_write(f->a, model, buf, 5000, 3000, 0);
	assert_int_equal(raid_remove_member(f->a, 1), 0);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.members[1].state, RAID_MEMBER_MISSING);
	assert_null(st.members[1].path);
	assert_int_equal(raid_remove_member(f->a, 1), -ENOENT);
	assert_int_equal(raid_fail_member(f->a, 1, NULL), -ENOENT);
	model_read(f->a, model, buf, f->a->size, 0);
	free(model);
	free(buf);
}

/* Status counts requests by kind, and errors. */
static void
test_degraded_status_counts(void **state)
{
	struct fixture *f = *state;
	static const struct level_case c = { 0, NULL, 2 };
	struct raid_status st;
	uint8_t buf[8192];

	open_case(f, &c, 8);
	assert_int_equal(raid_pwrite(f->a, buf, 8192, 0, 0), 0);
	assert_int_equal(raid_pread(f->a, buf, 4096, 0, 0), 0);
	assert_int_equal(raid_pread(f->a, buf, 100, 9, 0), 0);
	assert_int_equal(raid_flush(f->a), 0);
	assert_int_equal(raid_zero(f->a, 4096, 0, 0), 0);
	mem_of(&f->m[1])->fail_always = true;
	/* RAID 0 has nothing to read around: EIO, counted. */
	assert_int_equal(raid_pread(f->a, buf, 8192, 0, 0), -EIO);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.io[RAID_REQ_READ].requests, 3);
	assert_int_equal(st.io[RAID_REQ_READ].bytes, 4096 + 100 + 8192);
	assert_int_equal(st.io[RAID_REQ_READ].errors, 1);
	assert_int_equal(st.io[RAID_REQ_WRITE].requests, 1);
	assert_int_equal(st.io[RAID_REQ_FLUSH].requests, 1);
	assert_int_equal(st.io[RAID_REQ_ZERO].requests, 1);
	assert_int_equal(st.io[RAID_REQ_ZERO].bytes, 4096);
	assert_int_equal(st.members[1].read_errors, 1);
	/* A read error on RAID 0 fails nothing: the array has no copies. */
	assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
	assert_int_equal(st.members[1].state, RAID_MEMBER_IN_SYNC);
}

/* A failure that a retry gets past is no failure. */
static void
test_degraded_retry_once(void **state)
{
	struct fixture *f = *state;
	static const struct level_case c = { 1, NULL, 2 };
	uint8_t *model, *buf;

	open_case(f, &c, 8);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	mem_of(&f->m[0])->fail_at = 1;
	mem_of(&f->m[1])->fail_at = 1;
	model_write(f->a, model, buf, 3 * CHUNK, 0, 0);
	assert_int_equal(mem_of(&f->m[0])->count[IO_WRITE], 2);
	expect_state(f->a, RAID_ARRAY_OPTIMAL);
	assert_int_equal(atomic_load(&f->a->members[0].write_errors), 0);
	model_read(f->a, model, buf, f->a->size, 0);
	free(model);
	free(buf);
}

/* Raw mode: member=missing starts a redundant array degraded. */
static void
test_degraded_raw_missing(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 3, .mem_size = 8 * CHUNK };
	char *names[3] = { "mem0", RAID_MEMBER_MISSING_NAME, "mem2" };
	uint8_t *model, *buf;
	unsigned nr = 3;

	fixture_members(f, &s);
	free(mem_of(&f->m[1])->data);
	free(mem_of(&f->m[1]));
	member_close(&f->m[1]);
	assert_int_equal(member_missing(&f->m[1], 1, NULL), 0);
	f->cfg.members = names;
	f->cfg.nr_members = 3;
	assert_int_equal(
		array_assemble(&f->cfg, f->m, &nr, 3 + MEM_MEMBERS_ROOM, &f->a),
		0);
	f->cfg.members = NULL;
	f->cfg.nr_members = 0;
	expect_state(f->a, RAID_ARRAY_DEGRADED);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	for (unsigned i = 0; i < 100; i++) {
		random_op(f, model, buf);
	}
	model_read(f->a, model, buf, f->a->size, 0);
	free(model);
	free(buf);
	/* RAID 0 cannot. */
	raid_close(f->a);
	f->a = NULL;
	f->cfg.level = 0;
	f->cfg.members = names;
	f->cfg.nr_members = 3;
	nr = 3;
	assert_int_equal(
		array_assemble(&f->cfg, f->m, &nr, 3 + MEM_MEMBERS_ROOM, &f->a),
		-EINVAL);
	f->cfg.members = NULL;
	f->cfg.nr_members = 0;
	assert_non_null(strstr(t_last_error, "raid0 cannot run without"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_degraded_member_fails_under_io, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_degraded_every_shape,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_degraded_read_error_repaired, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_degraded_read_error_rewrite_fails, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_degraded_raid5_preread_error, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_degraded_operator_fail_remove, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_degraded_status_counts,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_degraded_retry_once,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_degraded_raw_missing,
						fixture_setup,
						fixture_teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
