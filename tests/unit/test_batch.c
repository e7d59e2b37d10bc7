/*
 * test_batch.c: the batch of one request's member I/O (src/io/batch.c):
 * merging into one buffer or a vectored request, the limits of merging
 * on O_DIRECT members, storage growth while filling, in-flight counts,
 * per-member results, and refused discards completed with zeros.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "helpers.h"
#include "io/batch.h"
#include "mem_backend.h"
#include "util.h"

/*
 * O_DIRECT members need every segment aligned, not only the whole: a
 * piece whose buffer or length is not aligned for the member starts a
 * request of its own instead of becoming a segment (mem_align 8 and
 * io_align 512 here, as statx might say).
 */
static void
test_batch_unaligned_segment_is_not_merged(void **state)
{
	static uint8_t mem[65536] __attribute__((aligned(4096)));
	struct fixture *f = *state;
	struct fixture_spec s = { .n = 1, .mem_size = 65536 };
	struct raid_member *m;
	struct batch b;

	fixture_members(f, &s);
	m = f->m;
	m->mem_align = 8;
	m->io_align = 512;
	batch_init(&b);
	assert_int_equal(batch_read(&b, m, mem, 512, 0), 0);
	/* Buffer not 8-aligned: a request of its own. */
	assert_int_equal(batch_read(&b, m, mem + 1028, 512, 512), 0);
	assert_int_equal(b.nr, 2);
	/* Would vector a misaligned first segment: own request. */
	assert_int_equal(batch_read(&b, m, mem + 4096, 512, 1024), 0);
	assert_int_equal(b.nr, 3);
	/* Length not 512-aligned: own request... */
	assert_int_equal(batch_read(&b, m, mem + 8192, 256, 1536), 0);
	assert_int_equal(b.nr, 4);
	/* ...which still grows in one buffer, as before vectors... */
	assert_int_equal(batch_read(&b, m, mem + 8448, 256, 1792), 0);
	assert_int_equal(b.nr, 4);
	assert_int_equal(b.reqs[3].len, 512);
	/* ...and, aligned now, takes an aligned segment. */
	assert_int_equal(batch_read(&b, m, mem + 12288, 512, 2048), 0);
	assert_int_equal(b.nr, 4);
	assert_int_equal(b.reqs[3].nr_iov, 2);
	/* A segment may not grow by an unaligned length. */
	assert_int_equal(batch_read(&b, m, mem + 12800, 100, 2560), 0);
	assert_int_equal(b.nr, 5);
	/* Aligned: every segment reaches the member as it was queued. */
	batch_reset(&b);
	memset(mem, 0, sizeof(mem));
	t_fill_random(mem_of(m)->data, 65536);
	assert_int_equal(batch_read(&b, m, mem + 4096, 1024, 512), 0);
	assert_int_equal(batch_read(&b, m, mem, 512, 1536), 0);
	assert_int_equal(batch_read(&b, m, mem + 512, 512, 2048), 0);
	assert_int_equal(b.nr, 1);
	assert_int_equal(b.reqs[0].nr_iov, 2);
	assert_int_equal(batch_run(&b), 0);
	assert_memory_equal(mem + 4096, mem_of(m)->data + 512, 1024);
	assert_memory_equal(mem, mem_of(m)->data + 1536, 1024);
	batch_fini(&b);
}

/*
 * Many members' requests and segments interleaved, past every initial
 * capacity (reqs, segments, iovecs all reallocated while filling): each
 * vectored request still gets its own segments, in order.  Reads and
 * writes, checked against the members' bytes.
 */
static void
test_batch_vectors_survive_growth(void **state)
{
	enum { NM = 4, MSIZE = 1 << 20, STEPS = 3000 };
	struct fixture *f = *state;
	struct fixture_spec spec = { .n = NM, .mem_size = MSIZE };
	struct raid_member *m;
	struct batch b;
	uint64_t next[NM];
	static uint8_t mem[STEPS * 512];
	struct {
		unsigned m;
		uint64_t off, len;
		uint8_t *buf;
	} io[STEPS];

	fixture_members(f, &spec);
	m = f->m;
	batch_init(&b);
	for (unsigned op = IO_READ; op <= IO_WRITE; op++) {
		uint8_t *at = mem;
		unsigned nreq_max = 0;

		batch_reset(&b);
		for (unsigned i = 0; i < NM; i++) {
			t_fill_random(mem_of(&m[i])->data, MSIZE);
			next[i] = t_rand(4096); /* ascending: no overlap */
		}
		t_fill_random(mem, sizeof(mem));
		for (unsigned s = 0; s < STEPS; s++) {
			unsigned k = t_rand(NM);
			uint64_t len = 1 + t_rand(300);

			if (t_rand(8) == 0) {
				next[k] += 1 + t_rand(999); /* a new request */
			}
			/* Every other buffer skips a gap: a new segment. */
			at += t_rand(2) * 7;
			io[s].m = k;
			io[s].off = next[k];
			io[s].len = len;
			io[s].buf = at;
			assert_int_equal(op == IO_READ
						 ? batch_read(&b, &m[k], at,
							      len, next[k])
						 : batch_write(&b, &m[k], at,
							       len, next[k], 0),
					 0);
			at += len;
			next[k] += len;
		}
		assert_true(b.nr > 64 && b.nr < STEPS);
		for (unsigned i = 0; i < b.nr; i++) {
			nreq_max = MAX(nreq_max, b.reqs[i].nr_iov);
		}
		assert_true(nreq_max > 2);
		assert_int_equal(batch_run(&b), 0);
		for (unsigned s = 0; s < STEPS; s++) {
			const uint8_t *d =
				mem_of(&m[io[s].m])->data + io[s].off;

			assert_memory_equal(io[s].buf, d, io[s].len);
		}
	}
	batch_fini(&b);
}

/* A batch emptied without running gives back its in-flight counts. */
static void
test_batch_reset_gives_back_inflight(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .n = 2, .mem_size = 8 * 4096 };
	struct raid_member *m;
	struct batch b;
	char buf[4096];

	fixture_members(f, &s);
	m = f->m;
	batch_init(&b);
	assert_int_equal(batch_read(&b, &m[0], buf, 4096, 0), 0);
	assert_int_equal(batch_read(&b, &m[1], buf, 4096, 0), 0);
	assert_int_equal(atomic_load(&m[0].inflight), 1);
	batch_reset(&b);
	assert_int_equal(atomic_load(&m[0].inflight), 0);
	assert_int_equal(atomic_load(&m[1].inflight), 0);
	batch_fini(&b);
}

/*
 * A pinned request (batch_pin) whose slot a spare took after it began (the
 * slot's gen moved on) issues nothing there: the I/O fails with -ENODEV,
 * recorded with the gen pinned, so the decision it made for the member
 * before (where its data starts, what is readable) never reaches the
 * spare, and its failure is no news for the spare.  Other slots run.
 */
static void
test_batch_pinned_skips_a_new_member(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .n = 2, .mem_size = 8 * 4096 };
	struct raid_member *m;
	struct batch b;
	char buf[4096];
	unsigned gen;

	fixture_members(f, &s);
	m = f->m;
	memset(buf, 0x77, sizeof(buf));
	batch_init(&b);
	batch_pin(&b, m, 2);
	gen = atomic_load(&m[1].gen);
	atomic_fetch_add(&m[1].gen, 1); /* spare.c: a spare moved in */
	assert_int_equal(batch_write(&b, &m[0], buf, 4096, 0, 0), 0);
	assert_int_equal(batch_write(&b, &m[1], buf, 4096, 0, 0), 0);
	assert_int_equal(batch_run(&b), -ENODEV);
	assert_int_equal(mem_of(&m[0])->count[IO_WRITE], 1);
	assert_int_equal(mem_of(&m[1])->ops, 0);
	assert_int_equal(batch_member_error(&b, 1), -ENODEV);
	assert_int_equal(b.gen[1], gen);
	assert_int_equal(atomic_load(&m[1].inflight), 0);
	/* A request pinned after the move reaches the new member. */
	batch_fini(&b);
	batch_init(&b);
	batch_pin(&b, m, 2);
	assert_int_equal(batch_write(&b, &m[1], buf, 4096, 0, 0), 0);
	assert_int_equal(batch_run(&b), 0);
	assert_int_equal(mem_of(&m[1])->count[IO_WRITE], 1);
	batch_fini(&b);
}

/*
 * After a run every member I/O holds its own result, and the request
 * knows which member failed with what, which refused a discard mode (not
 * a failure), and which it changed; a later run adds to that, and
 * batch_begin starts a request with none of it.
 */
static void
test_batch_results_per_member(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .n = 3, .mem_size = 8 * 4096 };
	struct raid_member *m;
	struct batch *b;
	char buf[4096] = { 0 };

	fixture_members(f, &s);
	m = f->m;
	mem_of(&m[1])->fail_always = true;
	mem_of(&m[1])->fail_errno = ENOSPC;
	mem_of(&m[2])->refuse_ops = 1u << IO_PUNCH;
	b = batch_begin();
	assert_non_null(b);
	assert_int_equal(batch_read(b, &m[0], buf, 4096, 0), 0);
	assert_int_equal(batch_write(b, &m[1], buf, 4096, 0, 0), 0);
	assert_int_equal(batch_discard(b, &m[2], IO_PUNCH, 4096, 0), 0);
	assert_int_equal(batch_run(b), -ENOSPC);
	assert_int_equal(b->reqs[0].res, 0);
	assert_int_equal(b->reqs[1].res, -ENOSPC);
	assert_int_equal(b->reqs[2].res, -EOPNOTSUPP);
	assert_int_equal(batch_member_error(b, 0), 0);
	assert_int_equal(batch_member_error(b, 1), -ENOSPC);
	assert_int_equal(batch_member_error(b, 2), 0);
	assert_int_equal(batch_refused(b), 1u << 2);
	assert_int_equal(batch_changed(b), 1u << 1 | 1u << 2);
	/* Only refusals: the run says so, the request keeps its failure. */
	assert_int_equal(batch_discard(b, &m[2], IO_PUNCH, 4096, 4096), 0);
	assert_int_equal(batch_run(b), -EOPNOTSUPP);
	assert_int_equal(batch_member_error(b, 1), -ENOSPC);
	/* A new request starts clean. */
	b = batch_begin();
	assert_int_equal(b->failed | b->refused | b->changed, 0);
	assert_int_equal(batch_member_error(b, 1), 0);
}

/*
 * A discard some members refuse and others did is completed on the
 * refusers with zeros (zero range, else writes), so they read zero too;
 * one every member refused changes nothing and says so.
 */
static void
test_batch_run_discard_zeroes_refusers(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .n = 3, .mem_size = 256 << 10 };
	struct raid_member *m;
	struct batch *b;

	fixture_members(f, &s);
	m = f->m;
	for (unsigned i = 0; i < 3; i++) {
		memset(mem_of(&m[i])->data, 0x77, s.mem_size);
	}
	mem_of(&m[1])->refuse_ops = 1u << IO_TRIM;
	mem_of(&m[2])->refuse_ops = 1u << IO_TRIM | 1u << IO_ZERO;
	b = batch_begin();
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(
			batch_discard(b, &m[i], IO_TRIM, 200 << 10, 4096), 0);
	}
	assert_int_equal(batch_run_discard(b), 0);
	for (unsigned i = 0; i < 3; i++) {
		const uint8_t *d = mem_of(&m[i])->data;

		assert_int_equal(d[4095], 0x77);
		for (unsigned x = 4096; x < 4096 + (200 << 10); x++) {
			assert_int_equal(d[x], 0);
		}
		assert_int_equal(d[4096 + (200 << 10)], 0x77);
	}
	assert_int_equal(mem_of(&m[1])->count[IO_ZERO], 1);
	assert_true(mem_of(&m[2])->count[IO_WRITE] >= 1);
	/* Every member refusing: nothing changes, -EOPNOTSUPP. */
	mem_of(&m[0])->refuse_ops = 1u << IO_TRIM;
	memset(mem_of(&m[0])->data, 0x77, s.mem_size);
	b = batch_begin();
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(batch_discard(b, &m[i], IO_TRIM, 4096, 0), 0);
	}
	assert_int_equal(batch_run_discard(b), -EOPNOTSUPP);
	assert_int_equal(mem_of(&m[0])->data[0], 0x77);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_batch_unaligned_segment_is_not_merged,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_batch_vectors_survive_growth, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_batch_pinned_skips_a_new_member, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_batch_reset_gives_back_inflight, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_batch_results_per_member,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_batch_run_discard_zeroes_refusers, fixture_setup,
			fixture_teardown),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
