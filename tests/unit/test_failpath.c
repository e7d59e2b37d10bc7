/*
 * test_failpath.c: the failure path (src/degraded.c, src/array_state.c)
 * over memory members carrying the superblocks mdadm wrote (tests/data/md),
 * its races made deterministic by a gate (mem_backend.h) that holds a
 * survivor's superblock write while another thread runs.
 *
 * Proves:
 *  - a write, zero, trim or flush that runs while a member's failure is
 *    being recorded (the member already skipped) is not answered before
 *    the record is on the survivors (md's Blocked until FaultRecorded):
 *    RAID 1 and RAID 5 (a degraded write);
 *  - when the record cannot be written at all, those requests answer EIO,
 *    and the array takes no more writes;
 *  - a failure is recorded as two updates of events + 1; a crash at any
 *    superblock write of them (each survivor's write of each update, the
 *    members as they were at that instant) assembles without force, the
 *    failed member out exactly when a survivor records it, every byte
 *    acknowledged before exact on every copy;
 *  - a superblock write that fails on one member fails that member, not
 *    the client's request: the mark of another thread in between (the
 *    stale result that answered EIO), a bitmap that cannot be marked, a
 *    survivor's write of another member's failure (the rest record
 *    both).
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "md_data.h"
#include "mem_backend.h"
#include "superblock.h"
#include "util.h"

#define KiB	 1024u
#define MiB	 (1u << 20)
#define DATA_MAX (12 * MiB) /* the bytes of the array a case writes */
#define HOLD_MS	 10000	    /* a gate is reached within this, or fail */
#define SHOW_MS	 200	    /* time a request that should wait gets to answer */

/* An md array over memory members, in mdadm's order (role order here). */
struct md_array {
	struct md_case c;
	struct raid_config cfg;
	struct raid_member *m;
	unsigned n;
	struct raid_array *a;
	uint64_t len;		 /* bytes of data written: the model's */
	uint8_t *model;		 /* what was acknowledged */
	uint64_t w1_off, w1_len; /* the write that fails the member */
};

static void
md_open(struct md_array *x, const char *name)
{
	unsigned nr;

	memset(x, 0, sizeof(*x));
	md_case_load(name, &x->c);
	raid_config_init(&x->cfg);
	x->n = x->c.members;
	x->m = mem_members_create(x->n, x->c.member_bytes);
	for (unsigned d = 0; d < x->n; d++) {
		uint8_t *at = mem_of(&x->m[d])->data;

		memcpy(at + x->c.sb_sector * RAID_SECTOR_BYTES, x->c.sb[d],
		       MD_SB_BYTES);
		if (x->c.bitmap) {
			memcpy(at + (x->c.sb_sector + x->c.bitmap_offset) *
					       RAID_SECTOR_BYTES,
			       x->c.bm[d], MD_SB_BYTES);
		}
	}
	nr = x->n;
	t_errors[0] = '\0';
	assert_int_equal(array_assemble(&x->cfg, x->m, &nr,
					x->n + MEM_MEMBERS_ROOM, &x->a),
			 0);
	assert_int_equal(nr, x->n);
}

/* Members holding `img` (one member_bytes image per role), assembled. */
static int
md_assemble_image(struct md_array *x, uint8_t *const *img)
{
	unsigned nr = x->n;

	x->m = mem_members_create(x->n, x->c.member_bytes);
	for (unsigned i = 0; i < x->n; i++) {
		memcpy(mem_of(&x->m[i])->data, img[i], x->c.member_bytes);
	}
	t_errors[0] = '\0';
	return array_assemble(&x->cfg, x->m, &nr, x->n + MEM_MEMBERS_ROOM,
			      &x->a);
}

static void
md_close(struct md_array *x)
{
	if (x->a) {
		raid_close(x->a);
	}
	x->a = NULL;
	mem_members_free(x->m, x->n);
	x->m = NULL;
	raid_config_free(&x->cfg);
}

static struct mem_member *
mm_role(struct md_array *x, unsigned role)
{
	return mem_of(&x->a->members[role]);
}

static uint64_t
stripe_bytes(const struct raid_array *a)
{
	return (uint64_t)a->g.stripe_chunks << a->g.chunk_shift;
}

/* Random data over the first x->len bytes, acknowledged: the model. */
static void
write_model(struct md_array *x)
{
	x->len = MIN(DATA_MAX, x->a->size);
	x->model = malloc(x->len);
	t_fill_random(x->model, x->len);
	assert_int_equal(raid_pwrite(x->a, x->model, x->len, 0, 0), 0);
	/* The write that will fail the member: every member's (a stripe). */
	x->w1_off = 0;
	x->w1_len = x->c.members > 2 && x->a->layout->stripe_pieces
			    ? stripe_bytes(x->a)
			    : 64 * KiB;
}

/* A range left out of a check (a request not acknowledged). */
struct span {
	uint64_t off, len;
};

static bool
in_span(struct span s, uint64_t off)
{
	return off >= s.off && off < s.off + s.len;
}

/*
 * Every byte of [0, len) but the spans read back as the model says, and
 * (copies: RAID 1/10) is so on every copy held by a member in the array.
 */
static void
check_data(struct md_array *x, struct span s1, struct span s2, bool copies)
{
	struct raid_place p[RAID_MAX_COPIES];
	uint8_t *buf = malloc(x->len);

	assert_int_equal(raid_pread(x->a, buf, x->len, 0, 0), 0);
	for (uint64_t off = 0; off < x->len; off += 4 * KiB) {
		int n;

		if (in_span(s1, off) || in_span(s2, off)) {
			continue;
		}
		assert_memory_equal(buf + off, x->model + off, 4 * KiB);
		n = copies ? raid_locate(x->a, off, p, RAID_MAX_COPIES) : 0;
		for (int i = 0; i < n; i++) {
			const struct raid_member *m =
				&x->a->members[p[i].member];

			if (!member_alive(m)) {
				continue;
			}
			assert_memory_equal(
				mem_of((struct raid_member *)m)->data +
					p[i].offset,
				x->model + off, 4 * KiB);
		}
	}
	free(buf);
}

/* ---- a request on a thread of its own ----------------------------------- */

enum req_kind { REQ_WRITE, REQ_ZERO, REQ_TRIM, REQ_FLUSH };
static const char *const kind_names[] = { "write", "zero", "trim", "flush" };

struct req_thread {
	pthread_t t;
	struct raid_array *a;
	enum req_kind kind;
	const uint8_t *buf;
	uint64_t off, len;
	struct mem_gate *gate; /* was it open when the request answered? */
	int r;
	unsigned answered;  /* 1 once it returned (atomic) */
	unsigned gate_open; /* the gate's `opened` as it returned */
};

static void *
req_main(void *arg)
{
	struct req_thread *q = arg;

	switch (q->kind) {
	case REQ_WRITE:
		q->r = raid_pwrite(q->a, q->buf, q->len, q->off, 0);
		break;
	case REQ_ZERO:
		q->r = raid_zero(q->a, q->len, q->off, 0);
		break;
	case REQ_TRIM:
		q->r = raid_trim(q->a, q->len, q->off, 0);
		break;
	case REQ_FLUSH:
		q->r = raid_flush(q->a);
		break;
	}
	if (q->gate) {
		q->gate_open =
			__atomic_load_n(&q->gate->opened, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&q->answered, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void
req_start(struct req_thread *q)
{
	assert_int_equal(pthread_create(&q->t, NULL, req_main, q), 0);
}

/* Until fn(arg) holds, polling; false after ms. */
static bool
wait_until(bool (*fn)(void *), void *arg, unsigned ms)
{
	for (unsigned i = 0; i < ms * 10; i++) {
		if (fn(arg)) {
			return true;
		}
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	return fn(arg);
}

static bool
answered(void *arg)
{
	return __atomic_load_n(&((struct req_thread *)arg)->answered,
			       __ATOMIC_SEQ_CST);
}

/* A member's completed requests, all ops. */
static unsigned
done_all(struct mem_member *mm)
{
	unsigned n = 0;

	for (unsigned op = 0; op < ARRAY_SIZE(mm->done); op++) {
		n += __atomic_load_n(&mm->done[op], __ATOMIC_SEQ_CST);
	}
	return n;
}

struct done_past {
	struct mem_member *mm;
	unsigned n;
};

static bool
done_grew(void *arg)
{
	struct done_past *d = arg;

	return done_all(d->mm) > d->n;
}

/*
 * Member role 1 fails its writes; W1 (every member's stripe) finds out
 * and records it; the gate holds survivor role 0's first superblock
 * write of that record.  Returns with W1 held there.
 */
static void
fail_victim_held(struct md_array *x, struct mem_gate *g, struct req_thread *w1)
{
	struct mem_member *victim = mm_role(x, 1);

	mem_gate_init(g, 1u << IO_WRITE, x->c.sb_sector * RAID_SECTOR_BYTES,
		      MD_SB_BYTES, 0);
	mm_role(x, 0)->gate = g;
	victim->bad_ops = 1u << IO_WRITE;
	victim->bad_off = 0;
	victim->bad_len = victim->size;
	t_fill_random(x->model + x->w1_off, x->w1_len);
	*w1 = (struct req_thread){ .a = x->a,
				   .kind = REQ_WRITE,
				   .buf = x->model + x->w1_off,
				   .off = x->w1_off,
				   .len = x->w1_len };
	req_start(w1);
	assert_true(mem_gate_wait(g, 1, HOLD_MS));
	assert_int_equal(atomic_load(&x->a->members[1].state),
			 RAID_MEMBER_FAULTY);
}

/* The gap request: [4M, +2 stripes) (flush: all), its model applied. */
static void
gap_request(struct md_array *x, struct req_thread *q, enum req_kind kind,
	    struct mem_gate *g, uint8_t *buf)
{
	uint64_t unit = MAX(stripe_bytes(x->a), 64 * KiB);

	*q = (struct req_thread){ .a = x->a,
				  .kind = kind,
				  .off = ROUND_UP_ANY(4 * MiB, unit),
				  .len = 2 * unit,
				  .gate = g,
				  .buf = buf };
	assert_true(q->off + q->len <= x->len);
	if (kind == REQ_WRITE) {
		t_fill_random(buf, q->len);
		memcpy(x->model + q->off, buf, q->len);
	} else if (kind != REQ_FLUSH) {
		memset(x->model + q->off, 0, q->len);
	}
}

/*
 * A member fails; while its failure is being recorded (the first
 * survivor's superblock write held), a write, zero, trim or flush on
 * another thread skips it: it must not be answered until the record is
 * on the survivors.  Then both succeed, the record is there (two updates),
 * and every byte reads back, from every copy.
 */
static void
test_failpath_gap_requests_wait_for_record(void **state)
{
	static const char *const cases[] = { "raid1-x2-v1.0", "raid5-ls-x4" };
	static struct md_array x;
	static uint8_t buf[8 * MiB];
	unsigned early = 0; /* requests answered before the record */

	(void)state;
	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		for (enum req_kind kind = REQ_WRITE; kind <= REQ_FLUSH;
		     kind++) {
			struct req_thread w1, q;
			struct done_past past;
			struct mem_gate g;
			struct md_sb before, sb;
			char why[160];
			uint8_t *at;

			md_open(&x, cases[k]);
			write_model(&x);
			at = mm_role(&x, 0)->data +
			     x.c.sb_sector * RAID_SECTOR_BYTES;
			assert_int_equal(md_sb_decode(at, MD_SB_BYTES, &before,
						      why, sizeof(why)),
					 0);
			fail_victim_held(&x, &g, &w1);
			gap_request(&x, &q, kind, &g, buf);
			past = (struct done_past){ mm_role(&x, 0),
						   done_all(mm_role(&x, 0)) };
			req_start(&q);
			/* Its I/O reached the survivor: it skipped role 1. */
			assert_true(wait_until(done_grew, &past, HOLD_MS));
			if (wait_until(answered, &q, SHOW_MS)) {
				print_error("%s, %s: answered (%d) while the "
					    "failure was not recorded\n",
					    cases[k], kind_names[kind], q.r);
				early++;
			}
			mem_gate_open(&g, 0);
			pthread_join(w1.t, NULL);
			pthread_join(q.t, NULL);
			assert_int_equal(w1.r, 0);
			assert_int_equal(q.r, 0);
			early += q.gate_open != 1;
			/* The record: role 1 faulty, two updates on. */
			assert_int_equal(md_sb_decode(at, MD_SB_BYTES, &sb, why,
						      sizeof(why)),
					 0);
			assert_int_equal(sb.dev_roles[1], MD_ROLE_FAULTY);
			assert_int_equal(sb.events, before.events + 2);
			assert_int_equal(g.held, 1);
			check_data(&x, (struct span){ 0 }, (struct span){ 0 },
				   x.a->layout->level != 5);
			mm_role(&x, 0)->gate = NULL;
			md_close(&x);
			mem_gate_destroy(&g);
			free(x.model);
		}
	}
	assert_int_equal(early, 0);
}

/*
 * The record cannot be written at all (RAID 1's only survivor fails its
 * superblock write, and it holds the last copy): the write that failed
 * the member and the one in the gap answer EIO, not success; the array
 * takes no more writes, and its data still reads.
 */
static void
test_failpath_unrecordable_answers_eio(void **state)
{
	static struct md_array x;
	static uint8_t buf[MiB], saved[MiB];
	struct req_thread w1, q;
	struct done_past past;
	struct mem_gate g;

	(void)state;
	md_open(&x, "raid1-x2-v1.0");
	write_model(&x);
	memcpy(saved, x.model + 4 * MiB, sizeof(saved));
	fail_victim_held(&x, &g, &w1);
	gap_request(&x, &q, REQ_WRITE, &g, buf);
	memcpy(x.model + q.off, saved, q.len); /* not to be acknowledged */
	past = (struct done_past){ mm_role(&x, 0), done_all(mm_role(&x, 0)) };
	req_start(&q);
	assert_true(wait_until(done_grew, &past, HOLD_MS));
	if (wait_until(answered, &q, SHOW_MS)) {
		print_error("answered (%d) before the record failed\n", q.r);
		fail();
	}
	mem_gate_open(&g, EIO);
	pthread_join(w1.t, NULL);
	pthread_join(q.t, NULL);
	assert_int_equal(w1.r, -EIO);
	assert_int_equal(q.r, -EIO);
	assert_non_null(
		strstr(t_errors, "could not be recorded in the superblocks"));
	assert_int_equal(raid_pwrite(x.a, buf, 4096, 0, 0), -EIO);
	assert_int_equal(raid_flush(x.a), -EIO);
	/* Reads go on: what was acknowledged before is all there. */
	check_data(&x, (struct span){ x.w1_off, x.w1_len },
		   (struct span){ q.off, q.len }, false);
	mm_role(&x, 0)->gate = NULL;
	md_close(&x);
	mem_gate_destroy(&g);
	free(x.model);
}

/* ---- crash points of a failure record ---------------------------------- */

struct crash_case {
	const char *name;
	bool operator; /* failed by raid_fail_member on a clean array */
};

struct fail_thread {
	pthread_t t;
	struct raid_array *a;
	int r;
};

static void *
fail_main(void *arg)
{
	struct fail_thread *f = arg;

	f->r = raid_fail_member(f->a, 1, NULL);
	return NULL;
}

/*
 * Run the failure of role 1 with survivor `holder`'s superblock write of
 * update `update` (1 or 2) held; copy every member as it is then (a crash
 * there: kill -9 keeps what reached the files); *recorded: a survivor
 * holds update 1 in that copy.
 */
static void
crash_image(struct md_array *x, const struct crash_case *cc, unsigned holder,
	    unsigned update, uint8_t **img, bool *recorded)
{
	uint64_t events0 = 0;
	struct req_thread w1;
	struct fail_thread ft;
	struct mem_gate g;

	md_open(x, cc->name);
	write_model(x);
	if (cc->operator) {
		/* Clean first (the state thread's work, on the test's clock):
		 * a RAID 5 found dirty and degraded would need force. */
		state_tick(x->a, UINT64_MAX / 2);
		assert_false(atomic_load(&x->a->meta->dirty));
	}
	for (unsigned i = 0; i < x->n; i++) {
		events0 = MAX(events0, x->a->meta->members[i].sb.events);
	}
	mem_gate_init(&g, 1u << IO_WRITE, x->c.sb_sector * RAID_SECTOR_BYTES,
		      MD_SB_BYTES, update - 1);
	mm_role(x, holder)->gate = &g;
	if (cc->operator) {
		ft = (struct fail_thread){ .a = x->a };
		assert_int_equal(pthread_create(&ft.t, NULL, fail_main, &ft),
				 0);
		if (!mem_gate_wait(&g, 1, HOLD_MS)) {
			print_error("%s: update %u never reached member %u\n",
				    cc->name, update, holder);
			fail();
		}
	} else {
		struct mem_member *victim = mm_role(x, 1);

		victim->bad_ops = 1u << IO_WRITE;
		victim->bad_off = 0;
		victim->bad_len = victim->size;
		w1 = (struct req_thread){ .a = x->a,
					  .kind = REQ_WRITE,
					  .buf = x->model + x->w1_off,
					  .off = x->w1_off,
					  .len = x->w1_len };
		req_start(&w1);
		if (!mem_gate_wait(&g, 1, HOLD_MS)) {
			print_error("%s: update %u never reached member %u\n",
				    cc->name, update, holder);
			fail();
		}
	}
	*recorded = false;
	for (unsigned i = 0; i < x->n; i++) {
		struct md_sb sb;
		char why[160];

		img[i] = malloc(x->c.member_bytes);
		memcpy(img[i], mm_role(x, i)->data, x->c.member_bytes);
		assert_int_equal(
			md_sb_decode(img[i] +
					     x->c.sb_sector * RAID_SECTOR_BYTES,
				     MD_SB_BYTES, &sb, why, sizeof(why)),
			0);
		if (i != 1 && sb.events > events0) {
			assert_int_equal(sb.dev_roles[1], MD_ROLE_FAULTY);
			*recorded = true;
		}
		/* Never more than one event apart at any instant. */
		assert_true(sb.events <= events0 + 2);
	}
	mem_gate_open(&g, 0);
	if (cc->operator) {
		pthread_join(ft.t, NULL);
		assert_int_equal(ft.r, 0);
	} else {
		pthread_join(w1.t, NULL);
		assert_int_equal(w1.r, 0);
	}
	mm_role(x, holder)->gate = NULL;
	md_close(x);
	mem_gate_destroy(&g);
}

/*
 * A crash at each superblock write of a failure record (each survivor's
 * write of each of the two updates): the members assemble again without
 * force; the failed member is out when a survivor recorded it, back in
 * sync when none did (nothing was answered without it); every byte
 * acknowledged reads back, from every copy.
 */
static void
test_failpath_crash_at_every_record_write(void **state)
{
	static const struct crash_case cases[] = {
		{ "raid1-x2-v1.0", false },
		{ "raid10-n2-x4-v1.1", false },
		{ "raid5-ls-x4", true },
	};
	static struct md_array x;

	(void)state;
	for (unsigned update = 1; update <= 2; update++) {
		for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
			for (unsigned holder = 0; holder < 4; holder++) {
				uint8_t *img[MD_DATA_MAX_MEMBERS];
				bool recorded;
				uint8_t *model;
				uint64_t len;
				int s;

				md_case_load(cases[k].name, &x.c);
				if (holder == 1 || holder >= x.c.members) {
					continue; /* role 1 is the one failing
						   */
				}
				t_reset();
				crash_image(&x, &cases[k], holder, update, img,
					    &recorded);
				model = x.model;
				len = x.len;
				/* Start again from that instant. */
				raid_config_init(&x.cfg);
				x.n = x.c.members;
				if (md_assemble_image(&x, img) != 0) {
					print_error("%s: crash at member %u's "
						    "update %u: %s\n",
						    cases[k].name, holder,
						    update, t_errors);
					fail();
				}
				s = atomic_load(&x.a->members[1].state);
				assert_int_equal(s == RAID_MEMBER_IN_SYNC,
						 !recorded);
				x.model = model;
				x.len = len;
				/* W1 wrote the bytes the model has there. */
				check_data(&x, (struct span){ 0 },
					   (struct span){ 0 },
					   x.a->layout->level != 5);
				md_close(&x);
				for (unsigned i = 0; i < x.c.members; i++) {
					free(img[i]);
				}
				free(model);
			}
		}
	}
}

/* ---- a superblock write error fails the member, not the request --------- */

struct sb_fail {
	struct md_array *x;
	struct mem_member *victim;
};

static bool
victim_tried_twice(void *arg)
{
	struct mem_member *v = arg;

	return __atomic_load_n(&v->ops, __ATOMIC_SEQ_CST) >= 2;
}

/*
 * Two writes mark a clean array active at once, and a member fails its
 * superblock writes.  The first write's mark fails on it; before it can
 * fail the member, another failure of it is recorded and another write
 * marks the array active.  The first write then finds the array active:
 * it must go on (it answered EIO: its failed try's result was kept).
 */
static void
test_failpath_mark_failure_fails_member(void **state)
{
	static struct md_array x;
	static uint8_t buf[64 * KiB];
	struct req_thread b;
	struct mem_member *victim;

	(void)state;
	md_open(&x, "raid1-x2-v1.0");
	write_model(&x);
	state_tick(x.a, UINT64_MAX / 2); /* clean: the next write marks */
	assert_false(atomic_load(&x.a->meta->dirty));
	victim = mm_role(&x, 1);
	victim->ops = 0;
	victim->bad_ops = 1u << IO_WRITE;
	victim->bad_off = x.c.sb_sector * RAID_SECTOR_BYTES;
	victim->bad_len = MD_SB_BYTES;
	/* Failures wait for us: b's stops once its mark failed. */
	pthread_mutex_lock(&x.a->fail_lock);
	t_fill_random(buf, sizeof(buf));
	memcpy(x.model + 64 * KiB, buf, sizeof(buf));
	b = (struct req_thread){ .a = x.a,
				 .kind = REQ_WRITE,
				 .buf = buf,
				 .off = 64 * KiB,
				 .len = sizeof(buf) };
	req_start(&b);
	/* Its superblock write failed, retried once, failed. */
	assert_true(wait_until(victim_tried_twice, victim, HOLD_MS));
	/* Meanwhile: the member's failure recorded, the array marked active
	 * by another write (ours), before b goes on. */
	assert_int_equal(fail_locked(x.a, 1, "test", FAIL_WRITE), 0);
	assert_int_equal(state_write_start(x.a), 0);
	state_write_end(x.a);
	assert_true(atomic_load(&x.a->meta->dirty));
	pthread_mutex_unlock(&x.a->fail_lock);
	pthread_join(b.t, NULL);
	assert_int_equal(b.r, 0);
	check_data(&x, (struct span){ 0 }, (struct span){ 0 }, true);
	md_close(&x);
	free(x.model);
}

/*
 * A member whose bitmap cannot be marked stale (the first write's mark on
 * an array with a bitmap) is failed like one whose superblock write
 * failed; the request goes on without it.
 */
static void
test_failpath_bitmap_failure_fails_member(void **state)
{
	static struct md_array x;
	struct mem_member *victim;
	struct md_sb sb;
	char why[160];

	(void)state;
	md_open(&x, "raid1-x2-bitmap");
	victim = mm_role(&x, 1);
	victim->bad_ops = 1u << IO_WRITE;
	victim->bad_off =
		(x.c.sb_sector + x.c.bitmap_offset) * RAID_SECTOR_BYTES;
	victim->bad_len = MD_SB_BYTES;
	write_model(&x); /* its write must succeed */
	assert_int_equal(atomic_load(&x.a->members[1].state),
			 RAID_MEMBER_FAULTY);
	assert_int_equal(md_sb_decode(mm_role(&x, 0)->data +
					      x.c.sb_sector * RAID_SECTOR_BYTES,
				      MD_SB_BYTES, &sb, why, sizeof(why)),
			 0);
	assert_int_equal(sb.dev_roles[1], MD_ROLE_FAULTY);
	check_data(&x, (struct span){ 0 }, (struct span){ 0 }, true);
	md_close(&x);
	free(x.model);
}

/*
 * RAID 10 n2 x4: member 1 fails its writes, and survivor 2 its superblock
 * writes.  The write that fails member 1 answers success; the record's
 * write that failed on member 2 fails member 2 too (member 3 holds its
 * copies), and what is left, members 0 and 3, records both roles faulty,
 * at the same events, ahead of both failed members; member 2's
 * superblock is as it was.  Every byte reads back, from every copy left;
 * assembled again from the members as they are, without force, both are
 * left out and every byte reads back.
 */
static void
test_failpath_survivor_sb_failure_fails_it(void **state)
{
	static struct md_array x;
	static uint8_t old_sb[MD_SB_BYTES];
	struct mem_member *victim, *survivor;
	struct md_sb sb[4];
	uint8_t *img[4], *model;
	uint64_t sb_off, len;
	char why[160];

	(void)state;
	md_open(&x, "raid10-n2-x4-v1.1");
	write_model(&x);
	sb_off = x.c.sb_sector * RAID_SECTOR_BYTES;
	victim = mm_role(&x, 1);
	survivor = mm_role(&x, 2);
	memcpy(old_sb, survivor->data + sb_off, MD_SB_BYTES);
	victim->bad_ops = 1u << IO_WRITE;
	victim->bad_off = 0;
	victim->bad_len = victim->size;
	survivor->bad_ops = 1u << IO_WRITE;
	survivor->bad_off = sb_off;
	survivor->bad_len = MD_SB_BYTES;
	t_fill_random(x.model + x.w1_off, x.w1_len);
	assert_int_equal(
		raid_pwrite(x.a, x.model + x.w1_off, x.w1_len, x.w1_off, 0), 0);
	assert_int_equal(atomic_load(&x.a->members[0].state),
			 RAID_MEMBER_IN_SYNC);
	assert_int_equal(atomic_load(&x.a->members[1].state),
			 RAID_MEMBER_FAULTY);
	assert_int_equal(atomic_load(&x.a->members[2].state),
			 RAID_MEMBER_FAULTY);
	assert_int_equal(atomic_load(&x.a->members[3].state),
			 RAID_MEMBER_IN_SYNC);
	for (unsigned d = 0; d < 4; d++) {
		assert_int_equal(md_sb_decode(mm_role(&x, d)->data + sb_off,
					      MD_SB_BYTES, &sb[d], why,
					      sizeof(why)),
				 0);
	}
	for (unsigned d = 0; d < 4; d += 3) {
		assert_int_equal(sb[d].dev_roles[sb[1].dev_number],
				 MD_ROLE_FAULTY);
		assert_int_equal(sb[d].dev_roles[sb[2].dev_number],
				 MD_ROLE_FAULTY);
		assert_int_equal(sb[d].events, sb[0].events);
		assert_true(sb[d].events > sb[1].events + 1);
		assert_true(sb[d].events > sb[2].events + 1);
	}
	assert_memory_equal(survivor->data + sb_off, old_sb, MD_SB_BYTES);
	check_data(&x, (struct span){ 0 }, (struct span){ 0 }, true);

	/* Started again from the members as they are now. */
	for (unsigned d = 0; d < 4; d++) {
		img[d] = malloc(x.c.member_bytes);
		memcpy(img[d], mm_role(&x, d)->data, x.c.member_bytes);
	}
	model = x.model;
	len = x.len;
	md_close(&x);
	raid_config_init(&x.cfg);
	x.n = x.c.members;
	assert_int_equal(md_assemble_image(&x, img), 0);
	assert_false(member_alive(&x.a->members[1]));
	assert_false(member_alive(&x.a->members[2]));
	x.model = model;
	x.len = len;
	check_data(&x, (struct span){ 0 }, (struct span){ 0 }, true);
	md_close(&x);
	for (unsigned d = 0; d < 4; d++) {
		free(img[d]);
	}
	free(model);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			test_failpath_gap_requests_wait_for_record, t_setup),
		cmocka_unit_test_setup(test_failpath_unrecordable_answers_eio,
				       t_setup),
		cmocka_unit_test_setup(
			test_failpath_crash_at_every_record_write, t_setup),
		cmocka_unit_test_setup(test_failpath_mark_failure_fails_member,
				       t_setup),
		cmocka_unit_test_setup(
			test_failpath_bitmap_failure_fails_member, t_setup),
		cmocka_unit_test_setup(
			test_failpath_survivor_sb_failure_fails_it, t_setup),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
