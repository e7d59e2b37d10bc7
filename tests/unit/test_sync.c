/*
 * test_sync.c: the background passes (src/sync.c) over memory members.
 *
 * Recovery: a member fails, a blank one takes its role (as a spare taken
 * into the hole does) and is rebuilt while the test writes and reads at
 * random, every read checked against the model; then every member holds
 * exactly what the layout places there (fixture_check_members walks
 * raid_locate, an independent model) and RAID 5 rows XOR to zero.
 * Check and repair: planted corruptions are counted in sectors, repaired,
 * and a second check finds none.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "array.h"
#include "fixture.h"
#include "helpers.h"
#include "mem_backend.h"
#include "model.h"
#include "sync.h"
#include "util.h"

#define CHUNK FIXTURE_CHUNK

struct level_case {
	int level;
	const char *layout;
	unsigned n;
};

static const struct level_case redundant[] = {
	{ 1, NULL, 2 },
	{ 1, NULL, 3 },
	{ 5, "left-symmetric", 3 },
	{ 5, "right-symmetric", 4 },
	{ 5, "left-asymmetric", 5 },
	{ 5, "right-asymmetric", 4 },
	{ 10, "n2", 4 },
	{ 10, "n2", 3 },
	{ 10, "f2", 4 },
	{ 10, "o2", 3 },
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

/*
 * A blank member takes role `role` (what taking a spare into the hole
 * does, without superblocks): zeroed, rebuilt from nothing.
 */
static void
blank_rebuilding(struct fixture *f, unsigned role)
{
	struct raid_member *m = &f->a->members[role];
	struct mem_member *mm = mem_of(m);

	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_FAULTY);
	memset(mm->data, 0x5c, mm->size); /* not zero: the rebuild writes */
	atomic_store(&m->rebuilt, 0);
	atomic_store(&m->state, RAID_MEMBER_REBUILDING);
}

static void *
run_sync(void *arg)
{
	struct raid_array *a = arg;

	return (void *)(intptr_t)sync_run_due(a);
}

/* Random writes and checked reads until the pass ends; how many ran
 * while it did. */
static unsigned
load_until(struct fixture *f, uint8_t *model, uint8_t *buf, pthread_t thread)
{
	uint64_t size = f->a->size;
	unsigned ops = 0, during = 0;
	void *ret;

	for (;;) {
		struct raid_status st;
		uint64_t off = t_rand(size),
			 len = 1 + t_rand(MIN(size - off, 3 * CHUNK));

		if (t_rand(2)) {
			model_write(f->a, model, buf, len, off, 0);
		} else {
			model_read(f->a, model, buf, len, off);
		}
		ops++;
		assert_int_equal(raid_status(f->a, &st), 0);
		during += st.progress.kind == RAID_SYNC_RECOVERY;
		if (st.progress.kind == RAID_SYNC_NONE && ops > 50) {
			break;
		}
	}
	pthread_join(thread, &ret);
	assert_int_equal((intptr_t)ret, 0);
	return during;
}

/* Every layout: a member rebuilt under random client I/O. */
static void
test_sync_recovery_under_load(void **state)
{
	struct fixture *f = *state;
	unsigned during = 0;

	for (unsigned k = 0; k < ARRAY_SIZE(redundant); k++) {
		const struct level_case *c = &redundant[k];
		unsigned role = k % c->n;
		struct raid_status st;
		uint8_t *model, *buf;
		pthread_t thread;

		open_case(f, c, 96);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		assert_int_equal(raid_fail_member(f->a, role, NULL), 0);
		model_write(f->a, model, buf, f->a->size / 3, CHUNK / 2, 0);
		blank_rebuilding(f, role);
		/* Slow enough that the load overlaps it; every other case
		 * with the helper (three rows a window: it may claim some). */
		assert_int_equal(raid_sync_speed(f->a, 2000, 2000), 0);
		sync_set_window(f->a, k % 2 ? 3 * CHUNK : CHUNK);
		if (k % 2) {
			assert_int_equal(sync_start_helper(f->a, false), 0);
		}
		assert_int_equal(pthread_create(&thread, NULL, run_sync, f->a),
				 0);
		during += load_until(f, model, buf, thread);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
		assert_int_equal(st.members[role].state, RAID_MEMBER_IN_SYNC);
		model_read(f->a, model, buf, f->a->size, 0);
		fixture_check_members(f, model);
		if (c->level == 5) {
			fixture_check_parity(f);
		}
		free(model);
		free(buf);
	}
	assert_true(during > 100 * ARRAY_SIZE(redundant));
}

/*
 * A recovery by two workers, the sync thread and its helper
 * (sync_start_helper), on every level: windows of an odd number of rows,
 * rows of several slices (a 2 MiB chunk: 1 MiB slices, so the two workers
 * split one row), a short last row (RAID 1's member-size in sectors).
 * Each case twice: the helper taking every other piece (so it surely
 * does its part), then the two claiming pieces as they come.  The rebuilt
 * member holds exactly what the layout places there.
 */
struct helper_case {
	int level;
	const char *layout;
	unsigned n;
	uint64_t chunk;	      /* 0: CHUNK */
	uint64_t rows;	      /* whole rows of the members */
	uint64_t tail;	      /* RAID 1: bytes of a short last row */
	uint64_t window_rows; /* 0: the default window (4 MiB) */
};

static const struct helper_case helper_cases[] = {
	{ 1, NULL, 2, 0, 13, 1536, 3 },
	{ 1, NULL, 3, 2u << 20, 2, (1u << 20) + (256u << 10), 1 },
	{ 1, NULL, 2, 0, 40, 512, 0 },
	{ 5, "left-symmetric", 4, 0, 15, 0, 3 },
	{ 5, "right-asymmetric", 3, 2u << 20, 3, 0, 1 },
	{ 5, "left-asymmetric", 5, 0, 21, 0, 5 },
	{ 5, "right-symmetric", 3, 0, 64, 0, 0 },
	{ 10, "n2", 3, 0, 17, 0, 3 },
	{ 10, "f2", 4, 0, 16, 0, 5 },
	{ 10, "o2", 3, 0, 15, 0, 7 },
	{ 10, "n2", 4, 2u << 20, 3, 0, 1 },
};

static void
open_helper_case(struct fixture *f, const struct helper_case *c, bool alternate)
{
	uint64_t chunk = c->chunk ? c->chunk : CHUNK;
	struct fixture_spec s = {
		.level = c->level,
		.layout = c->layout,
		.n = c->n,
		.chunk = chunk,
		.mem_size = (c->rows + 1) * chunk,
		.member_size = c->tail ? c->rows * chunk + c->tail : 0,
	};

	assert_int_equal(fixture_open(f, &s), 0);
	if (c->window_rows) {
		sync_set_window(f->a, c->window_rows * chunk);
	}
	assert_int_equal(sync_start_helper(f->a, alternate), 0);
}

static void
test_sync_recovery_helper(void **state)
{
	struct fixture *f = *state;

	for (unsigned k = 0; k < 2 * ARRAY_SIZE(helper_cases); k++) {
		const struct helper_case *c =
			&helper_cases[k % ARRAY_SIZE(helper_cases)];
		bool alternate = k < ARRAY_SIZE(helper_cases);
		unsigned role = (k + 1) % c->n;
		struct raid_status st;
		uint8_t *model, *buf;

		open_helper_case(f, c, alternate);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		assert_int_equal(raid_fail_member(f->a, role, NULL), 0);
		model_write(f->a, model, buf, f->a->size / 3, f->a->size / 4,
			    0);
		blank_rebuilding(f, role);
		assert_int_equal(sync_run_due(f->a), 0);
		assert_true(!alternate || sync_helper_pieces(f->a) > 0);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
		assert_int_equal(st.members[role].state, RAID_MEMBER_IN_SYNC);
		fixture_check_members(f, model);
		if (c->level == 5) {
			fixture_check_parity(f);
		}
		model_read(f->a, model, buf, f->a->size, 0);
		free(model);
		free(buf);
	}
}

/*
 * An error in the helper's half of a window (every other piece: the
 * helper's are the odd ones): a write error on the member
 * being rebuilt fails it, a source's read error stops the pass (the
 * source stays); either way the frontier stays before the window and no
 * later row is written.
 */
static void
test_sync_helper_errors(void **state)
{
	struct fixture *f = *state;
	static const struct helper_case r5 = { 5, "left-symmetric", 3, 0, 24, 0,
					       4 };
	static const struct helper_case r1 = { 1, NULL, 2, 0, 24, 0, 4 };
	const struct helper_case *cases[] = { &r5, &r1, &r5 };

	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		const struct helper_case *c = cases[k];
		bool target = k < 2;
		unsigned role = c->n - 1, src = 0;
		struct raid_member *t;
		struct mem_member *bad;
		struct raid_status st;
		uint8_t *model, *buf;

		open_helper_case(f, c, true);
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		assert_int_equal(raid_fail_member(f->a, role, NULL), 0);
		blank_rebuilding(f, role);
		t = &f->a->members[role];
		/* Row 9: piece 1 of the third window (rows 8-11), the
		 * helper's. */
		bad = mem_of(target ? t : &f->a->members[src]);
		bad->bad_ops = 1u << (target ? IO_WRITE : IO_READ);
		bad->bad_off = 9 * CHUNK + 512;
		bad->bad_len = 512;
		bad->fail_errno = EIO;
		assert_int_equal(sync_run_due(f->a), -EIO);
		assert_true(sync_helper_pieces(f->a) > 0);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.progress.kind, RAID_SYNC_NONE);
		assert_int_equal(st.members[role].state,
				 target ? RAID_MEMBER_FAULTY
					: RAID_MEMBER_REBUILDING);
		assert_int_equal(st.members[src].state, RAID_MEMBER_IN_SYNC);
		assert_int_equal(atomic_load(&t->rebuilt), 8 * CHUNK);
		/* Rows 12 on were never written: still the blank's bytes. */
		for (uint64_t i = 12 * CHUNK; i < c->rows * CHUNK; i++) {
			assert_int_equal(mem_of(t)->data[i], 0x5c);
		}
		/* Reads are right all the same (degraded, or around the
		 * frontier), the bad sector gone. */
		bad->bad_ops = 0;
		model_read(f->a, model, buf, f->a->size, 0);
		free(model);
		free(buf);
	}
}

/* Reads use the rebuilding member below its frontier, never above. */
static void
test_sync_frontier(void **state)
{
	struct fixture *f = *state;
	static const struct level_case c = { 1, NULL, 2 };
	struct mem_member *mm;
	uint8_t *model, *buf;

	open_case(f, &c, 16);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	model_write(f->a, model, buf, f->a->size, 0, 0);
	assert_int_equal(raid_fail_member(f->a, 1, NULL), 0);
	blank_rebuilding(f, 1);
	mm = mem_of(&f->a->members[1]);
	/* Above the frontier (0): every read goes to member 0. */
	fixture_reset_counts(f);
	for (unsigned i = 0; i < 16; i++) {
		model_read(f->a, model, buf, CHUNK, i * CHUNK);
	}
	assert_int_equal(mm->count[IO_READ], 0);
	/* Member 1 holds the first 8 chunks: reads may balance to it. */
	memcpy(mm->data, model, 8 * CHUNK);
	atomic_store(&f->a->members[1].rebuilt, 8 * CHUNK);
	fixture_reset_counts(f);
	for (unsigned i = 0; i < 64; i++) {
		uint64_t off = t_rand(8 * CHUNK - 512);

		model_read(f->a, model, buf, 512, off);
	}
	for (unsigned i = 0; i < 64; i++) {
		uint64_t off = 8 * CHUNK + t_rand(8 * CHUNK - 512);
		unsigned before = mm->count[IO_READ];

		model_read(f->a, model, buf, 512, off);
		assert_int_equal(mm->count[IO_READ], before);
	}
	free(model);
	free(buf);
}

/* Check counts planted corruptions in sectors, repair fixes them; with
 * the helper too (each worker counts its own units). */
static void
test_sync_check_repair(void **state)
{
	struct fixture *f = *state;
	static const struct level_case cases[] = {
		{ 5, "left-symmetric", 4 },
		{ 1, NULL, 3 },
		{ 10, "f2", 4 },
	};

	for (unsigned k = 0; k < 2 * ARRAY_SIZE(cases); k++) {
		const struct level_case *c = &cases[k % ARRAY_SIZE(cases)];
		bool helper = k >= ARRAY_SIZE(cases);
		struct raid_status st;
		uint8_t *model, *buf;
		struct raid_loc locs[RAID_MAX_COPIES];
		uint64_t chunk_no = 5;

		open_case(f, c, 32);
		if (helper) {
			assert_int_equal(sync_start_helper(f->a, true), 0);
		}
		model = calloc(1, f->a->size);
		buf = malloc(f->a->size);
		model_write(f->a, model, buf, f->a->size, 0, 0);
		/* The redundancy of chunk 5 is damaged: RAID 5 its
		 * parity, mirrors its last copy (repair keeps the first). */
		f->a->layout->map(&f->a->g, chunk_no, locs);
		if (c->level == 5) {
			locs[0].member = raid5_parity_member(
				&f->a->g, locs[0].member_chunk);
		} else {
			locs[0] = locs[f->a->g.copies - 1];
		}
		mem_of(&f->a->members[locs[0].member])
			->data[geom_member_offset(&f->a->g, &locs[0], 100)] ^=
			0xff;
		assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), 0);
		assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK),
				 -EALREADY);
		assert_int_equal(sync_run_due(f->a), 0);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.last_check.kind, RAID_SYNC_CHECK);
		assert_int_equal(st.last_check.mismatch_cnt,
				 CHUNK / RAID_SECTOR_BYTES);
		assert_int_equal(st.progress.kind, RAID_SYNC_NONE);
		assert_int_equal(raid_sync_request(f->a, RAID_SYNC_REPAIR), 0);
		assert_int_equal(sync_run_due(f->a), 0);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.last_check.kind, RAID_SYNC_REPAIR);
		assert_int_equal(st.last_check.mismatch_cnt,
				 CHUNK / RAID_SECTOR_BYTES);
		assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), 0);
		assert_int_equal(sync_run_due(f->a), 0);
		assert_int_equal(raid_status(f->a, &st), 0);
		assert_int_equal(st.last_check.mismatch_cnt, 0);
		assert_true(!helper || sync_helper_pieces(f->a) > 0);
		model_read(f->a, model, buf, f->a->size, 0);
		fixture_check_members(f, model);
		if (c->level == 5) {
			fixture_check_parity(f);
		}
		free(model);
		free(buf);
	}
}

/* A scrub slowed to a crawl stops at once when asked, not after the
 * sleep its speed limit owes (md's throttle, cut short). */
static void
test_sync_stop_slow_scrub(void **state)
{
	struct fixture *f = *state;
	static const struct level_case r5 = { 5, "left-symmetric", 3 };
	struct raid_status st;
	struct timespec t0, t1;
	pthread_t thread;
	uint8_t *model, *buf;
	void *ret;

	open_case(f, &r5, 32);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	model_write(f->a, model, buf, f->a->size, 0, 0);
	/* 64 KiB windows at 1 KiB/s: the first window owes a minute. */
	assert_int_equal(raid_sync_speed(f->a, 1, 1), 0);
	sync_set_window(f->a, 16 * CHUNK);
	assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), 0);
	assert_int_equal(pthread_create(&thread, NULL, run_sync, f->a), 0);
	do {
		assert_int_equal(raid_status(f->a, &st), 0);
	} while (st.progress.kind != RAID_SYNC_CHECK ||
		 st.progress.done_bytes == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(raid_sync_stop(f->a), 0);
	pthread_join(thread, &ret);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal((intptr_t)ret, 0);
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.progress.kind, RAID_SYNC_NONE);
	assert_int_equal(st.last_check.kind, RAID_SYNC_NONE); /* not whole */
	assert_int_equal(raid_sync_stop(f->a), -ENOENT);
	free(model);
	free(buf);
}

/* Scrubs are refused where md refuses them. */
static void
test_sync_refusals(void **state)
{
	struct fixture *f = *state;
	static const struct level_case r0 = { 0, NULL, 2 }, r5 = { 5, NULL, 3 };

	open_case(f, &r0, 8);
	assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), -EINVAL);
	assert_int_equal(raid_sync_stop(f->a), -ENOENT);
	open_case(f, &r5, 8);
	assert_int_equal(raid_sync_speed(f->a, 0, 10), -EINVAL);
	assert_int_equal(raid_sync_speed(f->a, 20, 10), -EINVAL);
	assert_int_equal(raid_fail_member(f->a, 1, NULL), 0);
	assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), -EBUSY);
	blank_rebuilding(f, 1);
	assert_int_equal(raid_sync_request(f->a, RAID_SYNC_REPAIR), -EBUSY);
}

/* A client's requests every millisecond for 300 ms, then none. */
static void *
clients_then_quiet(void *arg)
{
	struct raid_array *a = arg;

	for (unsigned i = 0; i < 300; i++) {
		atomic_fetch_add(&a->io[RAID_REQ_READ].requests, 1);
		nanosleep(&(struct timespec){ 0, 1000000L }, NULL);
	}
	return NULL;
}

static uint64_t
ms_between(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)(b->tv_sec - a->tv_sec) * 1000 +
	       (b->tv_nsec - a->tv_nsec) / 1000000;
}

/*
 * md's throttle: clients are busy for a while (500 ms) after the last
 * request seen, not only when one came since the last look, which a
 * window that takes their CPU can prevent.  A pass above its minimum
 * speed sleeps while they send, goes on sleeping until they have been
 * quiet that long, then runs flat out.
 */
static void
test_sync_busy_outlasts_window(void **state)
{
	struct fixture *f = *state;
	static const struct level_case r1 = { 1, NULL, 2 };
	struct timespec quiet, end;
	pthread_t clients, thread;
	struct raid_status st;
	uint8_t *model, *buf;
	void *ret;

	/* Flat out, the check takes several milliseconds: it sees the
	 * clients' requests move, and sleeps. */
	open_case(f, &r1, 4096);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	model_write(f->a, model, buf, f->a->size, 0, 0);
	assert_int_equal(raid_sync_speed(f->a, 1, 1000000000), 0);
	sync_set_window(f->a, CHUNK);
	assert_int_equal(
		pthread_create(&clients, NULL, clients_then_quiet, f->a), 0);
	nanosleep(&(struct timespec){ 0, 20 * 1000000L }, NULL);
	assert_int_equal(raid_sync_request(f->a, RAID_SYNC_CHECK), 0);
	assert_int_equal(pthread_create(&thread, NULL, run_sync, f->a), 0);
	pthread_join(clients, NULL);
	clock_gettime(CLOCK_MONOTONIC, &quiet);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.progress.kind, RAID_SYNC_CHECK); /* throttled */
	pthread_join(thread, &ret);
	clock_gettime(CLOCK_MONOTONIC, &end);
	assert_int_equal((intptr_t)ret, 0);
	/* Busy until 500 ms after the last request it saw (the last came
	 * a millisecond before quiet): not flat out within 400 ms of it. */
	assert_true(ms_between(&quiet, &end) >= 400);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.last_check.kind, RAID_SYNC_CHECK);
	assert_int_equal(st.last_check.mismatch_cnt, 0);
	free(model);
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sync_recovery_under_load,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sync_recovery_helper,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sync_helper_errors,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_sync_frontier, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sync_check_repair,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sync_stop_slow_scrub,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_sync_refusals, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_sync_busy_outlasts_window,
						fixture_setup,
						fixture_teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
