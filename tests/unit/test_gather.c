/*
 * test_gather.c: stripe gathering (src/gather.c) over in-memory members.
 *
 * Threads writing the pieces of a stripe at once make one full-stripe
 * write between them (no member read, one write per member), each thread
 * answered only once its bytes are written; a partial stripe nothing fills
 * is written as parked, when every write in flight is parked or at its
 * deadline; an exclusive range request waiting has parked stripes written
 * at once; FUA from any participant reaches every member; a member failing
 * under a gathered write is failed and the write goes on without it, and
 * when the array cannot bear it every participant gets the error.  Bytes
 * are checked against a model, parity row by row.
 *
 * To make the gathering deterministic, the cases park every partial piece
 * (gather_tune: always) and, where a stripe must wait for all its pieces,
 * count one write in flight that never parks (gather_hold), with a
 * deadline of an hour: a stripe that did not gather hangs the case until
 * ctest's timeout fails it.
 */
#undef NDEBUG
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "fixture.h"
#include "gather.h"
#include "helpers.h"
#include "mem_backend.h"
#include "model.h"
#include "range_lock.h"
#include "util.h"

#define CHUNK  FIXTURE_CHUNK
#define STRIPE (3 * CHUNK) /* RAID 5 over 4 members */
#define HOUR   (3600ull * 1000000000ull)

/* One client write on a thread of its own. */
struct writer {
	struct raid_array *a;
	const uint8_t *buf;
	uint64_t off, len;
	uint32_t flags;
	int result;
	pthread_t t;
};

static void *
writer_run(void *arg)
{
	struct writer *w = arg;

	w->result = raid_pwrite(w->a, w->buf, w->len, w->off, w->flags);
	return NULL;
}

/* Run writes [off, len) of model's bytes at once; wait for all. */
static void
write_at_once(struct fixture *f, const uint8_t *model, struct writer *w,
	      unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		w[i].a = f->a;
		w[i].buf = model + w[i].off;
		assert_int_equal(
			pthread_create(&w[i].t, NULL, writer_run, &w[i]), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
	}
}

static void
open_raid5(struct fixture *f, unsigned stripes)
{
	struct fixture_spec s = { .level = 5,
				  .n = 4,
				  .mem_size = stripes * CHUNK };

	assert_int_equal(fixture_open(f, &s), 0);
	assert_non_null(f->a->gather);
	assert_int_equal(f->a->size, stripes * STRIPE);
}

static struct raid_gather_stats
stats(struct fixture *f)
{
	struct raid_gather_stats st;

	gather_stats(f->a->gather, &st);
	return st;
}

/* The whole array reads back as the model... */
static void
read_model(struct fixture *f, const uint8_t *model)
{
	uint8_t *buf = malloc(f->a->size);

	assert_non_null(buf);
	model_read(f->a, model, buf, f->a->size, 0);
	free(buf);
}

/* ...and parity is exact on every row. */
static void
check_model(struct fixture *f, const uint8_t *model)
{
	read_model(f, model);
	fixture_check_parity(f);
}

static void
expect_member_io(struct fixture *f, unsigned reads, unsigned writes)
{
	for (unsigned m = 0; m < 4; m++) {
		assert_int_equal(mem_of(&f->m[m])->count[IO_READ], reads);
		assert_int_equal(mem_of(&f->m[m])->count[IO_WRITE], writes);
	}
}

/*
 * Five writes at once, none a whole stripe, cover stripes 1 and 2 (one of
 * them spans both): two full-stripe writes, nothing read.
 */
static void
test_gather_pieces_make_full_stripes(void **state)
{
	struct fixture *f = *state;
	uint64_t s1 = STRIPE, s2 = 2 * STRIPE;
	struct writer w[] = {
		{ .off = s1, .len = 5000 },
		{ .off = s1 + 5000, .len = 4000 },
		{ .off = s1 + 9000, .len = STRIPE - 9000 + 4000 },
		{ .off = s2 + 4000, .len = 6000 },
		{ .off = s2 + 10000, .len = STRIPE - 10000 },
	};
	uint8_t *model = calloc(1, 4 * STRIPE);

	open_raid5(f, 4);
	t_fill_random(model + s1, 2 * STRIPE);
	gather_tune(f->a->gather, HOUR, HOUR, true);
	gather_hold(f->a->gather, 1);
	fixture_reset_counts(f);
	write_at_once(f, model, w, ARRAY_SIZE(w));
	gather_hold(f->a->gather, -1);
	for (unsigned i = 0; i < ARRAY_SIZE(w); i++) {
		assert_int_equal(w[i].result, 0);
	}
	expect_member_io(f, 0, 2);
	assert_int_equal(stats(f).pieces, 6);
	assert_int_equal(stats(f).full, 2);
	assert_int_equal(stats(f).released_idle + stats(f).released_timeout +
				 stats(f).released_forced,
			 0);
	check_model(f, model);
	free(model);
}

/*
 * A lone partial write: parked, then written as it is once it is the only
 * write in flight (idle, at once: the client's window is full), or at its
 * deadline while another write is in flight.  Bytes exact either way.
 */
static void
test_gather_lone_piece_is_released(void **state)
{
	struct fixture *f = *state;
	uint8_t *model = calloc(1, 4 * STRIPE), *buf = malloc(2 * STRIPE);

	open_raid5(f, 4);
	gather_tune(f->a->gather, HOUR, HOUR, true);
	model_write(f->a, model, buf, 5000, STRIPE + 100, 0);
	assert_int_equal(stats(f).pieces, 1);
	assert_int_equal(stats(f).released_idle, 1);
	assert_int_equal(stats(f).full, 0);
	check_model(f, model);

	gather_tune(f->a->gather, 1000000, HOUR, true); /* 1 ms */
	gather_hold(f->a->gather, 1);
	model_write(f->a, model, buf, 5000, 2 * STRIPE + 7000, 0);
	gather_hold(f->a->gather, -1);
	assert_int_equal(stats(f).pieces, 2);
	assert_int_equal(stats(f).released_timeout, 1);
	check_model(f, model);

	/*
	 * A whole stripe between two partial ends: both ends parked, written
	 * when it is the only write in flight (the hold above made the
	 * client's window 2 for a while: the grace, 0 here, decides).
	 */
	gather_tune(f->a->gather, HOUR, 0, true);
	model_write(f->a, model, buf, STRIPE + 8000, STRIPE - 4000, 0);
	assert_int_equal(stats(f).pieces, 4);
	assert_int_equal(stats(f).released_idle, 3);
	check_model(f, model);
	free(buf);
	free(model);
}

/* Without the test's tuning, a lone writer parks nothing. */
static void
test_gather_lone_writer_parks_nothing(void **state)
{
	struct fixture *f = *state;
	uint8_t *model = calloc(1, 4 * STRIPE), *buf = malloc(STRIPE);

	open_raid5(f, 4);
	for (uint64_t off = 0; off + 4000 <= 4 * STRIPE; off += 4000) {
		model_write(f->a, model, buf, 4000, off, 0);
	}
	assert_int_equal(stats(f).pieces, 0);
	check_model(f, model);
	free(buf);
	free(model);
}

/*
 * A participant with FUA makes the gathered stripe's writes FUA on every
 * member (data and parity): its bytes are durable wherever they went.
 */
static void
test_gather_fua_participant(void **state)
{
	struct fixture *f = *state;
	uint8_t *model = calloc(1, 4 * STRIPE);

	open_raid5(f, 4);
	t_fill_random(model, 4 * STRIPE);
	gather_tune(f->a->gather, HOUR, HOUR, true);
	for (unsigned fua = 0; fua < 2; fua++) {
		struct writer w[] = {
			{ .off = STRIPE, .len = CHUNK },
			{ .off = STRIPE + CHUNK,
			  .len = CHUNK,
			  .flags = fua ? RAID_FUA : 0 },
			{ .off = STRIPE + 2 * CHUNK, .len = CHUNK },
		};

		fixture_reset_counts(f);
		gather_hold(f->a->gather, 1);
		write_at_once(f, model, w, ARRAY_SIZE(w));
		gather_hold(f->a->gather, -1);
		expect_member_io(f, 0, 1);
		for (unsigned m = 0; m < 4; m++) {
			assert_int_equal(mem_of(&f->m[m])->fua_writes, fua);
		}
	}
	memset(model + 2 * STRIPE, 0, 2 * STRIPE);
	memset(model, 0, STRIPE);
	check_model(f, model);
	free(model);
}

/*
 * A member fails under a gathered write: it is failed, the stripe is
 * written on the others, every participant succeeds; the array, degraded,
 * still gathers, and reads back the model.  Then a second member fails: no
 * copy is left, and every participant of the stripe gets the error.
 */
static void
test_gather_member_fails(void **state)
{
	struct fixture *f = *state;
	uint8_t *model = calloc(1, 4 * STRIPE);
	struct raid_status st;

	open_raid5(f, 4);
	gather_tune(f->a->gather, HOUR, HOUR, true);
	for (unsigned round = 0; round < 3; round++) {
		uint64_t s = (1 + round % 2) * STRIPE;
		struct writer w[] = {
			{ .off = s, .len = 5000 },
			{ .off = s + 5000, .len = STRIPE - 5000 },
		};

		fixture_reset_counts(f);
		t_fill_random(model + s, STRIPE);
		if (round == 0) {
			mem_of(&f->m[2])->fail_errno = EIO;
			mem_of(&f->m[2])->fail_always = true;
		}
		if (round == 2) {
			mem_of(&f->m[0])->fail_errno = EIO;
			mem_of(&f->m[0])->fail_always = true;
		}
		gather_hold(f->a->gather, 1);
		write_at_once(f, model, w, ARRAY_SIZE(w));
		gather_hold(f->a->gather, -1);
		for (unsigned i = 0; i < ARRAY_SIZE(w); i++) {
			assert_int_equal(w[i].result, round < 2 ? 0 : -EIO);
		}
		assert_int_equal(stats(f).full, round + 1);
		raid_status(f->a, &st);
		assert_int_equal(st.members[2].state, RAID_MEMBER_FAULTY);
		if (round < 2) {
			assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
			for (unsigned m = 0; m < 4; m++) {
				assert_int_equal(
					mem_of(&f->m[m])->count[IO_READ], 0);
			}
			mem_of(&f->m[2])->fail_always = false;
			read_model(f, model); /* m2 is out: stale rows */
		}
	}
	raid_status(f->a, &st);
	assert_int_equal(st.state, RAID_ARRAY_FAILED);
	free(model);
}

/*
 * An exclusive range request (an unaligned write's patch, a sync window)
 * over a parked write's range is not kept waiting for the stripe to fill:
 * the parked stripe is written at once, then the exclusive request runs.
 */
static void
test_gather_exclusive_waiter_releases(void **state)
{
	struct fixture *f = *state;
	uint8_t *model = calloc(1, 4 * STRIPE);
	struct writer w = { .off = STRIPE + 3000, .len = 5000 };
	struct range_req lk;

	open_raid5(f, 4);
	t_fill_random(model + w.off, w.len);
	gather_tune(f->a->gather, HOUR, HOUR, true);
	gather_hold(f->a->gather, 1);
	w.a = f->a;
	w.buf = model + w.off;
	assert_int_equal(pthread_create(&w.t, NULL, writer_run, &w), 0);
	while (stats(f).pieces == 0) {
		usleep(1000);
	}
	range_lock(&f->a->write_lock, &lk, STRIPE, 2 * STRIPE, true);
	range_unlock(&f->a->write_lock, &lk);
	pthread_join(w.t, NULL);
	assert_int_equal(w.result, 0);
	assert_int_equal(stats(f).released_forced, 1);
	/* While one waits, nothing parks: not tested here (a race). */
	gather_hold(f->a->gather, -1);
	check_model(f, model);
	free(model);
}

/* A stream of writes at queue depth 4, as the heuristics decide. */
struct stream {
	struct raid_array *a;
	const uint8_t *model;
	uint64_t size, len;
	atomic_uint_fast64_t next;
};

static void *
stream_run(void *arg)
{
	struct stream *s = arg;

	for (;;) {
		uint64_t i = atomic_fetch_add(&s->next, 1);
		uint64_t off = i * s->len, len;

		if (off >= s->size) {
			return NULL;
		}
		len = MIN(s->len, s->size - off);
		assert_int_equal(raid_pwrite(s->a, s->model + off, len, off,
					     i % 7 == 0 ? RAID_FUA : 0),
				 0);
	}
}

/*
 * Sequential writes of 5000 bytes from 4 threads, twice over (the second
 * pass overwrites), then 3 passes of 2.5 stripes: whatever parks and
 * whatever is released, the array holds the model and parity is exact.
 */
static void
test_gather_stream_keeps_data(void **state)
{
	struct fixture *f = *state;
	uint64_t size = 32 * STRIPE;
	uint8_t *model = malloc(size);
	static const uint64_t lens[] = { 5000, 5000, STRIPE * 5 / 2,
					 STRIPE * 5 / 2, STRIPE * 5 / 2 };

	open_raid5(f, 32);
	for (unsigned pass = 0; pass < ARRAY_SIZE(lens); pass++) {
		struct stream s = { .a = f->a,
				    .model = model,
				    .size = size,
				    .len = lens[pass] };
		pthread_t t[4];

		t_fill_random(model, size);
		atomic_init(&s.next, 0);
		for (unsigned i = 0; i < 4; i++) {
			pthread_create(&t[i], NULL, stream_run, &s);
		}
		for (unsigned i = 0; i < 4; i++) {
			pthread_join(t[i], NULL);
		}
		check_model(f, model);
	}
	free(model);
}

/* RAID 1 and 10 do not gather; gather-wait=0 turns it off for RAID 5. */
static void
test_gather_only_parity_levels(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s1 = { .level = 1, .n = 2, .mem_size = 8 * CHUNK };
	struct fixture_spec s10 = { .level = 10,
				    .n = 4,
				    .mem_size = 8 * CHUNK };
	struct fixture_spec s5 = { .level = 5, .n = 4, .mem_size = 8 * CHUNK };
	struct raid_status st;

	assert_int_equal(fixture_open(f, &s1), 0);
	assert_null(f->a->gather);
	raid_status(f->a, &st);
	assert_false(st.gather.enabled);
	assert_int_equal(fixture_open(f, &s10), 0);
	assert_null(f->a->gather);
	fixture_members(f, &s5);
	f->cfg.gather_wait_us = 0;
	assert_int_equal(fixture_assemble(f), 0);
	assert_null(f->a->gather);
	f->cfg.gather_wait_us = 300;
	f->cfg.gather_grace_us = 40;
	assert_int_equal(fixture_assemble(f), 0);
	raid_status(f->a, &st);
	assert_true(st.gather.enabled);
	assert_int_equal(st.gather.wait_us, 300);
	assert_int_equal(st.gather.grace_us, 40);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_gather_pieces_make_full_stripes, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_gather_lone_piece_is_released, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_gather_lone_writer_parks_nothing, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_gather_fua_participant,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_gather_member_fails,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_gather_exclusive_waiter_releases, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_gather_stream_keeps_data,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_gather_only_parity_levels,
						fixture_setup,
						fixture_teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
