/*
 * test_cache.c: the write-back cache (src/cache.c), over arrays of memory
 * members (fixture.h) and over a plain memory device whose writes can be
 * held at a gate, so that a write-back can be caught in flight.  Every
 * check is on data: what reads return against a model, and what the
 * members (or the device) hold, byte for byte.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "cache.h"
#include "fixture.h"
#include "helpers.h"
#include "mem_backend.h"
#include "model.h"
#include "util.h"

#define CHUNK FIXTURE_CHUNK
#define BLK   CACHE_BLOCK

/* ---- an array with a cache --------------------------------------------- */

/* The fixture's array with cache=ram of size bytes in front of it. */
static void
open_cached(struct fixture *f, const struct fixture_spec *spec, uint64_t size,
	    uint64_t cutoff)
{
	assert_int_equal(fixture_open(f, spec), 0);
	f->cfg.cache = RAID_CACHE_RAM;
	f->cfg.cache_size = size;
	f->cfg.cache_seq_cutoff = cutoff;
	assert_int_equal(array_cache_open(f->a, &f->cfg), 0);
	assert_non_null(f->a->cache);
}

static uint64_t
member_ops(struct fixture *f, enum io_op op)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < f->n; i++) {
		n += mem_of(&f->m[i])->count[op];
	}
	return n;
}

static struct raid_cache_status
cstat(struct fixture *f)
{
	struct raid_cache_status st;

	cache_status(f->a->cache, &st);
	return st;
}

/* ---- a memory device with a gate on its writes ------------------------- */

struct gdev {
	uint8_t *data;
	uint64_t size;
	pthread_mutex_t mu; /* guards the rest */
	pthread_cond_t cv;
	bool gate;     /* writes wait while it is closed */
	bool fua_gate; /* FUA writes wait while it is closed */
	bool tz_gate;  /* trims and zeros wait while it is closed */
	unsigned held; /* writes (trims, zeros) waiting at a gate now */
	bool rgate;    /* reads from rgate_from on wait, once copied */
	uint64_t rgate_from;
	unsigned rheld;	      /* reads waiting at rgate now */
	unsigned read_us;     /* every read sleeps this long: a device the
				 reader waits for, as read-ahead wants */
	unsigned fail_writes; /* the next this many writes fail (EIO) */
	unsigned writes, reads, flushes, zeros, trims;
};

static void
gdev_wait_gate(struct gdev *d, bool *gate)
{
	pthread_mutex_lock(&d->mu);
	d->held++;
	pthread_cond_broadcast(&d->cv);
	while (*gate) {
		pthread_cond_wait(&d->cv, &d->mu);
	}
	d->held--;
	pthread_mutex_unlock(&d->mu);
}

/* Reads past rgate_from wait at rgate after they copied: a read-ahead
 * caught between its device read and its insert. */
static int
g_read(void *ctx, void *buf, uint64_t count, uint64_t off)
{
	struct gdev *d = ctx;

	memcpy(buf, d->data + off, count);
	__atomic_fetch_add(&d->reads, 1, __ATOMIC_RELAXED);
	if (d->read_us) {
		usleep(d->read_us);
	}
	pthread_mutex_lock(&d->mu);
	if (d->rgate && off >= d->rgate_from) {
		d->rheld++;
		pthread_cond_broadcast(&d->cv);
		while (d->rgate) {
			pthread_cond_wait(&d->cv, &d->mu);
		}
		d->rheld--;
	}
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static int
g_write(void *ctx, const void *buf, uint64_t count, uint64_t off,
	uint32_t flags)
{
	struct gdev *d = ctx;

	gdev_wait_gate(d, flags & RAID_FUA ? &d->fua_gate : &d->gate);
	pthread_mutex_lock(&d->mu);
	if (d->fail_writes) {
		d->fail_writes--;
		pthread_mutex_unlock(&d->mu);
		return -EIO;
	}
	pthread_mutex_unlock(&d->mu);
	memcpy(d->data + off, buf, count);
	__atomic_fetch_add(&d->writes, 1, __ATOMIC_RELAXED);
	return 0;
}

static int
g_trim(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	struct gdev *d = ctx;

	(void)flags;
	gdev_wait_gate(d, &d->tz_gate);
	memset(d->data + off, 0, count); /* this device trims to zero */
	__atomic_fetch_add(&d->trims, 1, __ATOMIC_RELAXED);
	return 0;
}

static int
g_zero(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	struct gdev *d = ctx;

	(void)flags;
	gdev_wait_gate(d, &d->tz_gate);
	memset(d->data + off, 0, count);
	__atomic_fetch_add(&d->zeros, 1, __ATOMIC_RELAXED);
	return 0;
}

static int
g_flush(void *ctx)
{
	struct gdev *d = ctx;

	__atomic_fetch_add(&d->flushes, 1, __ATOMIC_RELAXED);
	return 0;
}

static int
g_writable(void *ctx)
{
	(void)ctx;
	return 0;
}

static void
gdev_init(struct gdev *d, uint64_t size)
{
	memset(d, 0, sizeof(*d));
	d->data = calloc(1, size);
	assert_non_null(d->data);
	d->size = size;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
}

/* Open or close a gate (a field of d) under the lock its waiters use. */
static void
gdev_set(struct gdev *d, bool *gate, bool closed)
{
	pthread_mutex_lock(&d->mu);
	*gate = closed;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
}

static void
gdev_set_gate(struct gdev *d, bool closed)
{
	gdev_set(d, &d->gate, closed);
}

static void
gdev_set_fua_gate(struct gdev *d, bool closed)
{
	gdev_set(d, &d->fua_gate, closed);
}

/* Wait (as long as it takes) until n writes wait at the gates. */
static void
gdev_wait_held(struct gdev *d, unsigned n)
{
	pthread_mutex_lock(&d->mu);
	while (d->held < n) {
		pthread_cond_wait(&d->cv, &d->mu);
	}
	pthread_mutex_unlock(&d->mu);
}

static void
gdev_free(struct gdev *d)
{
	free(d->data);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
}

/* A cache over d: units of unit bytes, size bytes of cache, read-ahead
 * windows up to ra bytes. */
static struct cache *
gcache_ra(struct gdev *d, uint64_t unit, uint64_t size, bool hold, uint64_t ra)
{
	const struct cache_backing be = {
		.ctx = d,
		.read = g_read,
		.write = g_write,
		.trim = g_trim,
		.zero = g_zero,
		.flush = g_flush,
		.writable = g_writable,
	};
	const struct cache_geometry g = { .size = d->size,
					  .unit_bytes = unit,
					  .block_bytes = BLK,
					  .hold_partial = hold };
	const struct cache_settings s = {
		.kind = RAID_CACHE_RAM,
		.mode = RAID_CACHE_WRITEBACK,
		.size_bytes = size,
		.seq_cutoff = 0,
		.hold_ms = 60000,
		.readahead = ra,
	};
	struct cache *c;

	assert_int_equal(cache_open(&be, &g, &s, &c), 0);
	return c;
}

static struct cache *
gcache(struct gdev *d, uint64_t unit, uint64_t size, bool hold)
{
	return gcache_ra(d, unit, size, hold, 0);
}

struct flusher {
	struct cache *c;
	int r;
};

static void *
flush_thread(void *arg)
{
	struct flusher *fl = arg;

	fl->r = cache_flush(fl->c);
	return NULL;
}

/* The cache closed (all written back), then the device gone. */
static void
gcache_close(struct gdev *d, struct cache *c)
{
	assert_int_equal(cache_close(c), 0);
	gdev_free(d);
}

/* cache_flush(c) on a thread t of its own; fl->r its result once joined. */
static void
flush_start(struct flusher *fl, pthread_t *t, struct cache *c)
{
	*fl = (struct flusher){ c, -1 };
	pthread_create(t, NULL, flush_thread, fl);
}

/* A FUA write of a block on a thread of its own. */
struct fua_job {
	struct cache *c;
	const uint8_t *buf;
	uint64_t off;
	int r;
	atomic_bool done;
};

static void *
fua_thread(void *arg)
{
	struct fua_job *j = arg;

	j->r = cache_pwrite(j->c, j->buf, BLK, j->off, RAID_FUA);
	atomic_store(&j->done, true);
	return NULL;
}

static void
fua_start(struct fua_job *j, pthread_t *t, struct cache *c, const uint8_t *buf,
	  uint64_t off)
{
	*j = (struct fua_job){ .c = c, .buf = buf, .off = off, .r = -1 };
	pthread_create(t, NULL, fua_thread, j);
}

/*
 * A direct (FUA) write of vd at doff and a write-back of the cached
 * writes of vw at each of offs[n], made meanwhile, both held at their
 * gates until both wait there; then the direct write lands first, the
 * write-back after it.
 */
static void
direct_lands_before_writeback(struct gdev *d, struct cache *c,
			      const uint8_t *vd, uint64_t doff,
			      const uint8_t *vw, const uint64_t *offs,
			      unsigned n)
{
	struct fua_job j;
	struct flusher fl;
	pthread_t tj, tf;

	gdev_set_fua_gate(d, true);
	gdev_set_gate(d, true);
	fua_start(&j, &tj, c, vd, doff);
	gdev_wait_held(d, 1);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(cache_pwrite(c, vw, BLK, offs[i], 0), 0);
	}
	flush_start(&fl, &tf, c);
	gdev_wait_held(d, 2);
	gdev_set_fua_gate(d, false); /* the direct write lands first */
	pthread_join(tj, NULL);
	gdev_set_gate(d, false); /* then the write-back */
	pthread_join(tf, NULL);
	assert_int_equal(j.r, 0);
	assert_int_equal(fl.r, 0);
}

/* ---- cases --------------------------------------------------------------- */

struct region_job {
	struct raid_array *a;
	uint64_t lo, hi; /* its own bytes */
	uint8_t *model;	 /* the whole array's; it touches [lo, hi) only */
	uint64_t seed;
};

static void *
write_region(void *arg)
{
	struct region_job *j = arg;
	uint64_t st = j->seed;

	for (uint64_t off = j->lo; off < j->hi; off += BLK) {
		for (unsigned k = 0; k < BLK; k++) {
			j->model[off + k] = (uint8_t)t_rand_next(&st);
		}
		if (raid_pwrite(j->a, j->model + off, BLK, off, 0) != 0) {
			return (void *)1;
		}
	}
	return NULL;
}

static void *
read_region(void *arg)
{
	struct region_job *j = arg;
	uint8_t *buf = malloc(j->hi - j->lo);
	void *bad = NULL;

	if (raid_pread(j->a, buf, j->hi - j->lo, j->lo, 0) != 0 ||
	    memcmp(buf, j->model + j->lo, j->hi - j->lo) != 0) {
		bad = (void *)1;
	}
	free(buf);
	return bad;
}

/*
 * Writes from 4 threads are answered from memory (no member sees a
 * write), read back from the cache from 4 threads (hits, no member
 * read); FLUSH writes them back: dirty 0, every member byte where md
 * puts it, parity right.
 */
static void
test_cache_writes_hit_then_flush_reaches_members(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 64 * CHUNK };
	struct region_job jobs[4];
	pthread_t t[4];
	uint8_t *model;
	uint64_t size;
	void *ret;

	open_cached(f, &s, 1 << 20, 0);
	size = f->a->size;
	model = calloc(1, size);
	fixture_reset_counts(f);
	for (unsigned i = 0; i < 4; i++) {
		jobs[i] =
			(struct region_job){ f->a, size / 4 * i,
					     size / 4 * (i + 1), model, i + 1 };
		pthread_create(&t[i], NULL, write_region, &jobs[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(member_ops(f, IO_WRITE), 0);
	assert_int_equal(cstat(f).dirty_bytes, size);
	for (unsigned i = 0; i < 4; i++) {
		pthread_create(&t[i], NULL, read_region, &jobs[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
	assert_int_equal(member_ops(f, IO_READ), 0);
	assert_int_equal(cstat(f).read_hits, 4);
	assert_int_equal(raid_flush(f->a), 0);
	assert_int_equal(cstat(f).dirty_bytes, 0);
	assert_true(member_ops(f, IO_FLUSH) >= 4);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	free(model);
}

/*
 * FUA: the write's bytes are on the members when it returns (nothing
 * dirty), over blocks that were dirty before, and reads still see them.
 */
static void
test_cache_fua_on_members_at_reply(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 16 * CHUNK };
	uint8_t *model, buf[3 * BLK];
	uint64_t size;

	open_cached(f, &s, 1 << 20, 0);
	size = f->a->size;
	model = calloc(1, size);
	model_write(f->a, model, buf, 2 * BLK, 0, 0); /* dirty */
	assert_int_equal(cstat(f).dirty_bytes, 2 * BLK);
	fixture_reset_counts(f);
	model_write(f->a, model, buf, 3 * BLK - 100, 50, RAID_FUA);
	assert_true(mem_of(&f->m[0])->fua_writes +
			    mem_of(&f->m[1])->fua_writes +
			    mem_of(&f->m[2])->fua_writes +
			    mem_of(&f->m[3])->fua_writes >
		    0);
	/* The FUA'd bytes are on the members now (no flush). */
	for (uint64_t off = 50; off < 3 * BLK - 50; off++) {
		struct raid_place p[RAID_MAX_COPIES];
		int n = raid_locate(f->a, off, p, RAID_MAX_COPIES);

		for (int i = 0; i < n; i++) {
			assert_int_equal(
				mem_of(&f->m[p[i].member])->data[p[i].offset],
				model[off]);
		}
	}
	/* Block 0 was dirty and only part of it was FUA'd: still dirty. */
	assert_int_equal(cstat(f).dirty_bytes, BLK);
	model_read(f->a, model, buf, 3 * BLK, 0);
	assert_int_equal(raid_flush(f->a), 0);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	free(model);
}

/*
 * A write-back caught in flight (the device's write held at a gate): the
 * blocks read from memory, not the device; a write to them meanwhile is
 * kept (dirty after the write-back completed, written by the next flush),
 * an unaligned one too; nothing the flush did not own was lost.
 */
static void
test_cache_read_and_write_during_writeback(void **state)
{
	struct gdev d;
	struct cache *c;
	struct flusher fl;
	pthread_t t;
	uint8_t v1[2 * BLK], v2[BLK], got[2 * BLK], want[2 * BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(v1, sizeof(v1));
	t_fill_random(v2, sizeof(v2));
	assert_int_equal(cache_pwrite(c, v1, 2 * BLK, 8 * BLK, 0), 0);
	gdev_set_gate(&d, true);
	flush_start(&fl, &t, c);
	gdev_wait_held(&d, 1);
	/* In flight: the device still holds zeros, reads see v1. */
	assert_int_equal(cache_pread(c, got, 2 * BLK, 8 * BLK), 0);
	assert_memory_equal(got, v1, 2 * BLK);
	assert_int_equal(d.data[8 * BLK], 0);
	/* Written again while in flight, whole block and part of one. */
	assert_int_equal(cache_pwrite(c, v2, BLK, 9 * BLK, 0), 0);
	assert_int_equal(cache_pwrite(c, v2, 100, 8 * BLK + 7, 0), 0);
	memcpy(want, v1, 2 * BLK);
	memcpy(want + BLK, v2, BLK);
	memcpy(want + 7, v2, 100);
	assert_int_equal(cache_pread(c, got, 2 * BLK, 8 * BLK), 0);
	assert_memory_equal(got, want, 2 * BLK);
	gdev_set_gate(&d, false);
	pthread_join(t, NULL);
	assert_int_equal(fl.r, 0);
	assert_memory_equal(d.data + 8 * BLK, v1, 2 * BLK); /* what it owned */
	assert_int_equal(cache_dirty_bytes(c), 2 * BLK);    /* written again */
	assert_int_equal(cache_pread(c, got, 2 * BLK, 8 * BLK), 0);
	assert_memory_equal(got, want, 2 * BLK);
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(cache_dirty_bytes(c), 0);
	assert_memory_equal(d.data + 8 * BLK, want, 2 * BLK);
	gcache_close(&d, c);
}

/*
 * A direct write (FUA, here) to a unit whose write-back is in flight
 * waits for it, so the older data cannot land after it: the device ends
 * with the FUA'd data.
 */
static void
test_cache_direct_write_waits_for_writeback(void **state)
{
	struct gdev d;
	struct cache *c;
	struct flusher fl;
	struct fua_job j;
	pthread_t t, u;
	uint8_t v1[BLK], v2[BLK], got[BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(v1, sizeof(v1));
	t_fill_random(v2, sizeof(v2));
	assert_int_equal(cache_pwrite(c, v1, BLK, 8 * BLK, 0), 0);
	gdev_set_gate(&d, true);
	flush_start(&fl, &t, c);
	gdev_wait_held(&d, 1);
	fua_start(&j, &u, c, v2, 8 * BLK);
	/* It cannot reach the device before the write-back let go (had it,
	 * it would wait at the gate: a second write held). */
	for (unsigned k = 0; k < 50; k++) {
		usleep(1000);
		assert_false(atomic_load(&j.done));
		assert_int_equal(d.held, 1);
	}
	gdev_set_gate(&d, false);
	pthread_join(t, NULL);
	pthread_join(u, NULL);
	assert_int_equal(fl.r, 0);
	assert_int_equal(j.r, 0);
	assert_memory_equal(d.data + 8 * BLK, v2, BLK);
	assert_int_equal(cache_pread(c, got, BLK, 8 * BLK), 0);
	assert_memory_equal(got, v2, BLK);
	assert_int_equal(cache_dirty_bytes(c), 0);
	gcache_close(&d, c);
}

/*
 * A flush waits for a write-back of acknowledged data that another flush
 * has in flight: it neither returns nor flushes the device before that
 * write completed.
 */
static void
test_cache_flush_waits_for_writeback_in_flight(void **state)
{
	struct gdev d;
	struct cache *c;
	struct flusher a, b;
	pthread_t ta, tb;
	uint8_t v1[BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(v1, sizeof(v1));
	assert_int_equal(cache_pwrite(c, v1, BLK, 8 * BLK, 0), 0);
	gdev_set_gate(&d, true);
	flush_start(&a, &ta, c);
	gdev_wait_held(&d, 1);
	flush_start(&b, &tb, c);
	for (unsigned k = 0; k < 50; k++) {
		usleep(1000);
		pthread_mutex_lock(&d.mu);
		assert_int_equal(__atomic_load_n(&d.flushes, __ATOMIC_RELAXED),
				 0);
		pthread_mutex_unlock(&d.mu);
	}
	gdev_set_gate(&d, false);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.r, 0);
	assert_int_equal(b.r, 0);
	assert_memory_equal(d.data + 8 * BLK, v1, BLK);
	gcache_close(&d, c);
}

/*
 * A direct write to a block with no entry when it started, a cached
 * write creating the entry meanwhile and its write-back landing on the
 * device after the direct write: the cache must not keep a clean copy
 * that differs from the device (it would read one thing, then, once
 * evicted, another).  The direct (FUA) write and the write-back are held
 * at separate gates to force that order.
 */
static void
test_cache_direct_and_late_writeback_coherent(void **state)
{
	const uint64_t at[] = { 8 * BLK };
	struct gdev d;
	struct cache *c;
	uint8_t vd[BLK], vw[BLK], got[BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(vd, sizeof(vd));
	t_fill_random(vw, sizeof(vw));
	direct_lands_before_writeback(&d, c, vd, 8 * BLK, vw, at, 1);
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(cache_pread(c, got, BLK, 8 * BLK), 0);
	assert_memory_equal(d.data + 8 * BLK, got, BLK);
	gcache_close(&d, c);
}

/*
 * RAID 5-like (partial units filled from the device before write-back):
 * a direct (FUA) write to a block of a unit that had no entry yet, in
 * flight while cached writes to blocks on both sides of it are written
 * back: the write-back must not read the gap between them from the
 * device and write it back over the direct write.
 */
static void
test_cache_gap_fill_spares_direct_write_in_flight(void **state)
{
	const uint64_t at[] = { 17 * BLK, 25 * BLK };
	struct gdev d;
	struct cache *c;
	uint8_t vd[BLK], vw[BLK], got[BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 16 * BLK, 64 * BLK, true);
	t_fill_random(vd, sizeof(vd));
	t_fill_random(vw, sizeof(vw));
	direct_lands_before_writeback(&d, c, vd, 21 * BLK, vw, at, 2);
	assert_memory_equal(d.data + 21 * BLK, vd, BLK);
	assert_memory_equal(d.data + 17 * BLK, vw, BLK);
	assert_memory_equal(d.data + 25 * BLK, vw, BLK);
	assert_int_equal(cache_pread(c, got, BLK, 21 * BLK), 0);
	assert_memory_equal(got, vd, BLK);
	gcache_close(&d, c);
}

/*
 * The cache full of dirty data whose write-back cannot complete (held at
 * the gate): a writer waits (counted), it does not fail; once write-back
 * goes on it completes and its data reads back.
 */
struct wjob {
	struct cache *c;
	const uint8_t *buf;
	uint64_t len, off;
	int r;
	atomic_bool done;
};

static void *
wjob_thread(void *arg)
{
	struct wjob *j = arg;

	j->r = cache_pwrite(j->c, j->buf, j->len, j->off, 0);
	atomic_store(&j->done, true);
	return NULL;
}

static void
test_cache_full_writer_waits_not_fails(void **state)
{
	struct gdev d;
	struct cache *c;
	struct wjob j;
	struct raid_cache_status st;
	pthread_t t;
	uint8_t *data = malloc(64 * BLK), got[8 * BLK];

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(data, 64 * BLK);
	for (uint64_t off = 0; off < 16 * BLK; off += 4 * BLK) {
		assert_int_equal(cache_pwrite(c, data + off, 4 * BLK, off, 0),
				 0);
	}
	assert_int_equal(cache_dirty_bytes(c), 16 * BLK);
	gdev_set_gate(&d, true);
	assert_int_equal(cache_start(c), 0);
	j = (struct wjob){ .c = c,
			   .buf = data + 32 * BLK,
			   .len = 4 * BLK,
			   .off = 32 * BLK,
			   .r = -1 };
	pthread_create(&t, NULL, wjob_thread, &j);
	do {
		usleep(1000);
		cache_status(c, &st);
	} while (!st.waits);
	gdev_wait_held(&d, 1);
	assert_false(atomic_load(&j.done)); /* no room until write-back */
	gdev_set_gate(&d, false);
	pthread_join(t, NULL);
	assert_int_equal(j.r, 0);
	assert_int_equal(cache_pread(c, got, 4 * BLK, 32 * BLK), 0);
	assert_memory_equal(got, data + 32 * BLK, 4 * BLK);
	assert_int_equal(cache_close(c), 0);
	assert_memory_equal(d.data, data, 16 * BLK);
	assert_memory_equal(d.data + 32 * BLK, data + 32 * BLK, 4 * BLK);
	gdev_free(&d);
	free(data);
}

/* The cache's status once cond holds, polling for up to 10 s. */
#define STATUS_WHEN(c, st, cond)                                               \
	do {                                                                   \
		for (unsigned w_ = 0; w_ < 10000; w_++) {                      \
			cache_status((c), &(st));                              \
			if (cond) {                                            \
				break;                                         \
			}                                                      \
			usleep(1000);                                          \
		}                                                              \
	} while (0)

/*
 * The write-back thread queues its next batch behind the one the stripe
 * writers are on, so that the members never wait for a batch to end:
 * with the device holding every write, two batches (8 MiB each, 8 units
 * of 1 MiB) are in flight, not one, and not three.  A write-back that
 * fails in the first leaves its blocks dirty (written again later), the
 * second completes, and the device ends up with every byte.
 */
static void
test_cache_next_batch_queued_behind_the_last(void **state)
{
	const uint64_t unit = 1 << 20, n = 24;
	struct raid_cache_status st;
	struct gdev d;
	struct cache *c;
	uint8_t *data = malloc(n * unit);

	(void)state;
	gdev_init(&d, 32 * unit);
	c = gcache(&d, unit, 32 * unit, false);
	t_fill_random(data, n * unit);
	for (uint64_t u = 0; u < n; u++) {
		assert_int_equal(
			cache_pwrite(c, data + u * unit, unit, u * unit, 0), 0);
	}
	gdev_set_gate(&d, true);
	assert_int_equal(cache_start(c), 0);
	gdev_wait_held(&d, 4); /* every stripe writer at the device */
	STATUS_WHEN(c, st, st.writeback_inflight_bytes >= 16 * unit);
	usleep(50000); /* a third batch would be claimed by now */
	cache_status(c, &st);
	assert_int_equal(st.writeback_inflight_bytes, 16 * unit);
	assert_int_equal(st.dirty_bytes, n * unit);
	assert_int_equal(d.writes, 0);

	pthread_mutex_lock(&d.mu);
	d.fail_writes = 1;
	pthread_mutex_unlock(&d.mu);
	gdev_set_gate(&d, false);
	STATUS_WHEN(c, st, st.dirty_bytes == 0);
	assert_int_equal(st.dirty_bytes, 0);
	assert_int_equal(st.writeback_inflight_bytes, 0);
	assert_true(st.writeback_errors >= 1);
	assert_int_equal(st.written_back_bytes, n * unit);
	assert_memory_equal(d.data, data, n * unit);
	gcache_close(&d, c);
	free(data);
}

/*
 * RAID 5 x4: stripes written in 4K pieces are written back as full
 * stripes, read-free (reconstruct-write); a partial stripe, for
 * contrast, reads (so the count can fail).
 */
static void
test_cache_raid5_full_stripes_read_nothing(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 32 * CHUNK };
	uint64_t stripe = 3 * CHUNK;
	uint8_t *model, buf[BLK];

	open_cached(f, &s, 1 << 20, 0);
	model = calloc(1, f->a->size);
	for (uint64_t off = stripe; off < 5 * stripe; off += BLK) {
		model_write(f->a, model, buf, BLK, off, 0);
	}
	fixture_reset_counts(f);
	assert_int_equal(raid_flush(f->a), 0);
	assert_int_equal(member_ops(f, IO_READ), 0);
	assert_true(member_ops(f, IO_WRITE) >= 4);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	/* Blocks 0 and 2 of a stripe, 1 not: one span, the gap read. */
	model_write(f->a, model, buf, BLK, 7 * stripe, 0);
	model_write(f->a, model, buf, BLK, 7 * stripe + 2 * BLK, 0);
	assert_int_equal(raid_flush(f->a), 0);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	/* One block of a stripe: read-modify-write reads. */
	model_write(f->a, model, buf, BLK, 6 * stripe, 0);
	fixture_reset_counts(f);
	assert_int_equal(raid_flush(f->a), 0);
	assert_true(member_ops(f, IO_READ) > 0);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	free(model);
}

/*
 * Zero and trim agree with cached data: zero over dirty blocks (aligned
 * and not) reads zero at once and on the members after a flush; trim
 * over dirty blocks reads the old bytes or zero, and whatever it read
 * stays so after the cache let go of them (flush, then eviction).
 */
static void
test_cache_trim_zero_coherent(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = 512 * CHUNK };
	uint8_t *model, *buf, *first, *fill;
	uint64_t size;

	open_cached(f, &s, 1 << 20, 0);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size);
	first = malloc(size);
	fill = malloc(size);
	model_write(f->a, model, buf, 32 * BLK, 0, 0);
	model_zero(f->a, model, 5 * BLK + 300, BLK + 100, 0);
	model_zero(f->a, model, 2 * BLK, 10 * BLK, RAID_MAY_TRIM);
	model_read(f->a, model, buf, 32 * BLK, 0);
	assert_int_equal(raid_flush(f->a), 0);
	fixture_check_members(f, model);
	/* Trim: dirty blocks, then clean ones. */
	model_write(f->a, model, buf, 8 * BLK, 16 * BLK, 0);
	assert_int_equal(raid_trim(f->a, 12 * BLK, 14 * BLK, 0), 0);
	assert_int_equal(raid_pread(f->a, first, 12 * BLK, 14 * BLK, 0), 0);
	for (uint64_t i = 0; i < 12 * BLK; i++) {
		assert_true(first[i] == model[14 * BLK + i] || first[i] == 0);
	}
	assert_int_equal(raid_flush(f->a), 0);
	/* Push everything out of the cache: 1 MiB of other data, 16K at a
	 * time (a write that large would go around the cache). */
	t_fill_random(fill, 1 << 20);
	for (uint64_t off = 0; off < (1 << 20); off += 4 * BLK) {
		assert_int_equal(raid_pwrite(f->a, fill + off, 4 * BLK,
					     (1 << 20) + off, 0),
				 0);
	}
	assert_true(cstat(f).used_bytes == 1 << 20);
	assert_int_equal(raid_pread(f->a, buf, 12 * BLK, 14 * BLK, 0), 0);
	assert_memory_equal(buf, first, 12 * BLK);
	free(model);
	free(buf);
	free(first);
	free(fill);
}

/*
 * Sequential writes past the cutoff go straight to the members, over
 * blocks the cache held dirty (older data): reads are exact at once and
 * after the cache wrote back; RAID 5 and RAID 0.
 */
static void
bypass_case(struct fixture *f, int level)
{
	struct fixture_spec s = { .level = level,
				  .n = 4,
				  .mem_size = 64 * CHUNK };
	uint8_t *model, *buf;
	uint64_t size;

	open_cached(f, &s, 1 << 20, 8 * BLK);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size);
	/* Dirty blocks, far apart (no sequential run). */
	for (uint64_t off = BLK; off < 96 * BLK; off += 32 * BLK) {
		model_write(f->a, model, buf, BLK, off, 0);
	}
	assert_int_equal(cstat(f).writes_bypassed, 0);
	assert_int_equal(cstat(f).dirty_bytes, 3 * BLK);
	for (uint64_t off = 0; off < 96 * BLK; off += 4 * BLK) {
		model_write(f->a, model, buf, 4 * BLK, off, 0); /* sequential */
		model_read(f->a, model, buf, 8 * BLK, off & ~(8ull * BLK - 1));
	}
	assert_true(cstat(f).writes_bypassed > 0);
	model_read(f->a, model, buf, size, 0);
	assert_int_equal(raid_flush(f->a), 0);
	model_read(f->a, model, buf, size, 0);
	fixture_check_members(f, model);
	if (level == 5) {
		fixture_check_parity(f);
	}
	free(model);
	free(buf);
}

static void
test_cache_bypass_keeps_reads_exact(void **state)
{
	bypass_case(*state, 5);
	bypass_case(*state, 0);
}

/*
 * Close writes everything back: the same members opened again without a
 * cache read every byte written, and unaligned, FUA'd and zeroed ones.
 */
static void
test_cache_close_drains(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 3, .mem_size = 32 * CHUNK };
	uint8_t *model, *buf;
	uint64_t size;

	open_cached(f, &s, 1 << 20, 0);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t off = t_rand(size),
			 len = 1 + t_rand(MIN(size - off, 3 * BLK));
		unsigned op = t_rand(8);

		if (op == 0) {
			model_zero(f->a, model, len, off, 0);
		} else {
			model_write(f->a, model, buf, len, off,
				    op == 1 ? RAID_FUA : 0);
		}
	}
	assert_true(cstat(f).dirty_bytes > 0);
	assert_int_equal(fixture_assemble(f), 0); /* closes, then no cache */
	assert_null(f->a->cache);
	model_read(f->a, model, buf, size, 0);
	fixture_check_members(f, model);
	fixture_check_parity(f);
	free(model);
	free(buf);
}

/*
 * Block status: the units holding unwritten data (dirty or being written
 * back) are data, the others are for the device to answer.
 */
static void
test_cache_extents_report_dirty_as_data(void **state)
{
	struct gdev d;
	struct cache *c;
	uint8_t v[BLK];
	uint64_t run;

	(void)state;
	gdev_init(&d, 64 * BLK);
	c = gcache(&d, 4 * BLK, 16 * BLK, false);
	t_fill_random(v, sizeof(v));
	assert_int_equal(cache_pwrite(c, v, BLK, 9 * BLK, 0), 0);
	assert_false(cache_unwritten(c, 0, 64 * BLK, &run));
	assert_int_equal(run, 8 * BLK);
	assert_true(cache_unwritten(c, 8 * BLK, 56 * BLK, &run));
	assert_int_equal(run, 4 * BLK);
	assert_true(cache_unwritten(c, 10 * BLK, BLK, &run));
	assert_int_equal(run, BLK);
	assert_false(cache_unwritten(c, 12 * BLK, 52 * BLK, &run));
	assert_int_equal(run, 52 * BLK);
	assert_int_equal(cache_flush(c), 0);
	assert_false(cache_unwritten(c, 0, 64 * BLK, &run));
	assert_int_equal(run, 64 * BLK);
	gcache_close(&d, c);
}

/* Writethrough: on the members at the reply, and reads hit. */
static void
test_cache_writethrough(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 1, .n = 2, .mem_size = 64 * CHUNK };
	uint8_t *model, buf[8 * BLK];

	assert_int_equal(fixture_open(f, &s), 0);
	f->cfg.cache = RAID_CACHE_RAM;
	f->cfg.cache_mode = RAID_CACHE_WRITETHROUGH;
	f->cfg.cache_size = 1 << 20;
	assert_int_equal(array_cache_open(f->a, &f->cfg), 0);
	model = calloc(1, f->a->size);
	model_write(f->a, model, buf, 8 * BLK, 4 * BLK, 0);
	model_write(f->a, model, buf, 2 * BLK + 5, 5 * BLK + 3, 0);
	assert_int_equal(cstat(f).dirty_bytes, 0);
	fixture_check_members(f, model);
	fixture_reset_counts(f);
	model_read(f->a, model, buf, 8 * BLK, 4 * BLK);
	assert_int_equal(member_ops(f, IO_READ), 0);
	free(model);
}

/*
 * The write-back thread: once clients stop, it writes everything back by
 * itself (the test waits, as long as it takes, for dirty to reach 0).
 */
static void
test_cache_thread_writes_back(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 4, .mem_size = 32 * CHUNK };
	uint8_t *model, *buf;

	open_cached(f, &s, 1 << 20, 0);
	model = calloc(1, f->a->size);
	buf = malloc(f->a->size);
	assert_int_equal(raid_start(f->a), 0);
	for (unsigned i = 0; i < 100; i++) {
		uint64_t off = t_rand(f->a->size - 3 * BLK);

		model_write(f->a, model, buf, 1 + t_rand(3 * BLK), off, 0);
	}
	while (cstat(f).dirty_bytes) {
		usleep(10000);
	}
	fixture_check_members(f, model);
	fixture_check_parity(f);
	model_read(f->a, model, buf, f->a->size, 0);
	free(model);
	free(buf);
}

/* ---- stress: threads, write-back in flight, a model per thread ---------- */

struct stress {
	struct raid_array *a;
	uint64_t lo, hi;
	uint8_t *model; /* whole array; this thread owns [lo, hi) */
	uint8_t *undef; /* trimmed: old or zero until read */
	uint64_t seed;
	unsigned steps;
	char err[256];
};

static bool
stress_read(struct stress *s, uint64_t off, uint64_t len, uint8_t *buf)
{
	if (raid_pread(s->a, buf, len, off, 0) != 0) {
		snprintf(s->err, sizeof(s->err), "read %llu+%llu failed",
			 (unsigned long long)off, (unsigned long long)len);
		return false;
	}
	for (uint64_t i = 0; i < len; i++) {
		uint64_t x = off + i;

		if (buf[i] != s->model[x] && !(s->undef[x] && buf[i] == 0)) {
			snprintf(s->err, sizeof(s->err),
				 "read %llu+%llu: byte %llu is %u, want %u%s",
				 (unsigned long long)off,
				 (unsigned long long)len, (unsigned long long)x,
				 buf[i], s->model[x],
				 s->undef[x] ? " or 0" : "");
			return false;
		}
		s->model[x] = buf[i];
		s->undef[x] = 0;
	}
	return true;
}

static void *
stress_thread(void *arg)
{
	struct stress *s = arg;
	uint64_t st = s->seed, span = s->hi - s->lo;
	uint8_t *buf = malloc(8 * BLK);

	for (unsigned k = 0; k < s->steps && !s->err[0]; k++) {
		uint64_t len = 1 + t_rand_next(&st) % (6 * BLK);
		uint64_t off, op = t_rand_next(&st) % 20;
		int r = 0;

		if (t_rand_next(&st) % 2) { /* block-aligned, most often */
			len = ROUND_UP(len, BLK);
		}
		len = MIN(len, span);
		off = s->lo + t_rand_next(&st) % (span - len + 1);
		if (op <= 9) {
			for (uint64_t i = 0; i < len; i++) {
				buf[i] = (uint8_t)(t_rand_next(&st) | 1);
			}
			r = raid_pwrite(s->a, buf, len, off,
					op == 9 ? RAID_FUA : 0);
			memcpy(s->model + off, buf, len);
			memset(s->undef + off, 0, len);
		} else if (op < 14) {
			stress_read(s, off, len, buf);
		} else if (op < 15) { /* a sequential run: read-ahead */
			for (; off + len <= s->hi && !s->err[0]; off += len) {
				stress_read(s, off, len, buf);
			}
		} else if (op < 17) {
			r = raid_zero(s->a, len, off,
				      op == 15 ? RAID_MAY_TRIM : 0);
			memset(s->model + off, 0, len);
			memset(s->undef + off, 0, len);
		} else if (op < 18) {
			r = raid_trim(s->a, len, off, 0);
			memset(s->undef + off, 1, len);
		} else {
			r = raid_flush(s->a);
		}
		if (r != 0 && !s->err[0]) {
			snprintf(s->err, sizeof(s->err), "op %llu failed: %d",
				 (unsigned long long)op, r);
		}
	}
	free(buf);
	return NULL;
}

struct churn {
	struct raid_array *a;
	atomic_bool stop;
	int r;
};

/* Keeps write-back in flight: small cache flushes all the time. */
static void *
churn_thread(void *arg)
{
	struct churn *ch = arg;

	while (!atomic_load(&ch->stop) && ch->r == 0) {
		ch->r = raid_flush(ch->a);
	}
	return NULL;
}

static void
stress_case(struct fixture *f, int level, unsigned n, uint64_t cutoff,
	    bool thread)
{
	/* RAID 0's units are 256K: a cache of 4 of them, a larger array. */
	struct fixture_spec s = { .level = level,
				  .n = n,
				  .mem_size = (level ? 24 : 128) * CHUNK };
	uint64_t csize = level ? 64 << 10 : 1 << 20;
	struct stress st[4];
	struct churn ch = { .r = 0 };
	pthread_t t[4], tc;
	uint8_t *model, *undef, *buf;
	uint64_t size;

	open_cached(f, &s, csize, cutoff); /* a fraction of the array */
	size = f->a->size;
	model = calloc(1, size);
	undef = calloc(1, size);
	buf = malloc(size);
	for (unsigned i = 0; i < n; i++) {
		mem_of(&f->m[i])->delay_us = 20;
	}
	if (thread) {
		assert_int_equal(raid_start(f->a), 0);
	}
	ch.a = f->a;
	pthread_create(&tc, NULL, churn_thread, &ch);
	for (unsigned i = 0; i < 4; i++) {
		/* Regions that share blocks, stripes and units. */
		st[i] = (struct stress){ .a = f->a,
					 .lo = i ? size / 4 * i + 6000 : 0,
					 .hi = i < 3 ? size / 4 * (i + 1) + 6000
						     : size,
					 .model = model,
					 .undef = undef,
					 .seed = t_rand(1ull << 62) + 1,
					 .steps = 400 };
		pthread_create(&t[i], NULL, stress_thread, &st[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
	}
	atomic_store(&ch.stop, true);
	pthread_join(tc, NULL);
	for (unsigned i = 0; i < 4; i++) {
		if (st[i].err[0]) {
			print_error("thread %u: %s\n", i, st[i].err);
			fail();
		}
	}
	assert_int_equal(ch.r, 0);
	for (unsigned i = 0; i < n; i++) {
		mem_of(&f->m[i])->delay_us = 0;
	}
	st[0].lo = 0;
	st[0].hi = size;
	assert_true(stress_read(&st[0], 0, size, buf));
	assert_int_equal(raid_flush(f->a), 0);
	assert_int_equal(cstat(f).dirty_bytes, 0);
	fixture_check_members(f, model);
	if (level == 5) {
		fixture_check_parity(f);
	}
	free(model);
	free(undef);
	free(buf);
}

/*
 * 4 threads of random writes (aligned and not, FUA), reads (some in
 * sequential runs to the end of the region: read-ahead), zeros, trims
 * and flushes, each in its own region, while another thread flushes all
 * the time (write-back in flight under every request), members slowed to
 * widen the windows, the cache a fraction of the array (writers wait for
 * room); every read against the model, then the members.
 * RAID 5 (full-stripe units) and RAID 0; with the cutoff low (bypass),
 * and with the write-back thread.
 */
static void
test_cache_stress_against_model(void **state)
{
	stress_case(*state, 5, 4, 0, false);
	stress_case(*state, 0, 3, 0, false);
	stress_case(*state, 5, 3, 2 * BLK, false);
	stress_case(*state, 5, 4, 8 * BLK, true);
}

/* ---- read-ahead ---------------------------------------------------------- */

#define RA_UNIT (16 * BLK)   /* 64K units */
#define RA_STEP (4 * BLK)    /* the readers' requests */
#define RA_MAX	(64 * BLK)   /* windows of 256K at most */
#define RA_SIZE (1024 * BLK) /* a 4M cache (windows of a sixteenth) */

/* Read [off, off+len) in RA_STEP requests, each against the model. */
static void
seq_read_check(struct cache *c, const uint8_t *model, uint64_t off,
	       uint64_t len)
{
	uint8_t buf[RA_STEP];

	for (uint64_t at = off; at < off + len; at += RA_STEP) {
		assert_int_equal(cache_pread(c, buf, RA_STEP, at), 0);
		assert_memory_equal(buf, model + at, RA_STEP);
	}
}

static struct raid_cache_status
gstat(struct cache *c)
{
	struct raid_cache_status st;

	cache_status(c, &st);
	return st;
}

/*
 * A sequential reader on a device it waits for (1 ms a read): from its
 * third request on the next window is read ahead (here by the reader,
 * after its data: no workers), so every later request is served from
 * memory, the device read once per window; the range read again is all
 * hits, byte-exact.  Then with the workers (cache_start): the same, the
 * reader waiting for windows in flight rather than reading their blocks
 * itself.
 */
static void
test_cache_readahead_sequential_hits(void **state)
{
	struct raid_cache_status st;
	struct gdev d;
	struct cache *c;
	uint8_t *buf = malloc(1 << 20);
	unsigned reads;

	(void)state;
	gdev_init(&d, 1024 * BLK);
	d.read_us = 1000;
	t_fill_random(d.data, d.size);
	c = gcache_ra(&d, RA_UNIT, RA_SIZE, false, RA_MAX);
	seq_read_check(c, d.data, 0, 1 << 20);
	st = gstat(c);
	assert_int_equal(st.read_misses, 3);
	assert_int_equal(st.read_hits, 64 - 3);
	assert_int_equal(st.readahead_hits, 64 - 3);
	assert_true(st.readahead_bytes >= (1 << 20) - 3 * RA_STEP);
	/* The device: the 3 misses, then one read per window. */
	assert_true(d.reads - 3 <= st.readahead_bytes / RA_UNIT);
	reads = d.reads;
	assert_int_equal(
		cache_pread(c, buf, (1 << 20) - 3 * RA_STEP, 3 * RA_STEP), 0);
	assert_memory_equal(buf, d.data + 3 * RA_STEP, (1 << 20) - 3 * RA_STEP);
	assert_int_equal(d.reads, reads);
	/* With the worker. */
	assert_int_equal(cache_start(c), 0);
	seq_read_check(c, d.data, 2 << 20, 1 << 20);
	st = gstat(c);
	assert_int_equal(st.read_misses, 3 + 3);
	assert_int_equal(st.readahead_hits, 2 * (64 - 3));
	assert_int_equal(cache_close(c), 0);
	gdev_free(&d);
	free(buf);
}

/* Random reads (no two within reach of a stream): nothing read ahead,
 * each read from the device once. */
static void
test_cache_readahead_not_for_random_reads(void **state)
{
	struct gdev d;
	struct cache *c;
	uint8_t buf[RA_STEP];

	(void)state;
	gdev_init(&d, 4096 * BLK); /* 256 units */
	t_fill_random(d.data, d.size);
	c = gcache_ra(&d, RA_UNIT, RA_SIZE, false, RA_MAX);
	for (uint64_t i = 0; i < 64; i++) {
		uint64_t off = (i * 97 % 256) * RA_UNIT + i % 4 * BLK;

		assert_int_equal(cache_pread(c, buf, RA_STEP, off), 0);
		assert_memory_equal(buf, d.data + off, RA_STEP);
	}
	assert_int_equal(gstat(c).readahead_bytes, 0);
	assert_int_equal(gstat(c).read_misses, 64);
	assert_int_equal(d.reads, 64);
	assert_int_equal(cache_close(c), 0);
	gdev_free(&d);
}

/* cache-readahead=0: a sequential reader reads everything itself. */
static void
test_cache_readahead_off(void **state)
{
	struct gdev d;
	struct cache *c;

	(void)state;
	gdev_init(&d, 1024 * BLK);
	t_fill_random(d.data, d.size);
	c = gcache_ra(&d, RA_UNIT, RA_SIZE, false, 0);
	assert_int_equal(cache_start(c), 0);
	seq_read_check(c, d.data, 0, 1 << 20);
	assert_int_equal(gstat(c).readahead_bytes, 0);
	assert_int_equal(gstat(c).read_misses, 64);
	assert_int_equal(d.reads, 64);
	assert_int_equal(cache_close(c), 0);
	gdev_free(&d);
}

/* A client request, in a thread when it is to wait. */
enum ra_op { RA_WRITE, RA_FUA, RA_BYPASS, RA_TRIM, RA_ZERO };

struct ra_job {
	struct cache *c;
	enum ra_op op;
	const uint8_t *buf;
	uint64_t off, len;
	int r;
	atomic_bool done;
};

/* A bypassed write: more than a quarter of the cache. */
#define RA_BIG (RA_SIZE / 4 + BLK)

static void *
ra_job_thread(void *arg)
{
	struct ra_job *j = arg;

	switch (j->op) {
	case RA_WRITE:
	case RA_BYPASS:
		j->r = cache_pwrite(j->c, j->buf, j->len, j->off, 0);
		break;
	case RA_FUA:
		j->r = cache_pwrite(j->c, j->buf, j->len, j->off, RAID_FUA);
		break;
	case RA_TRIM:
		j->r = cache_trim(j->c, j->len, j->off, 0);
		break;
	case RA_ZERO:
		j->r = cache_zero(j->c, j->len, j->off, 0);
		break;
	}
	atomic_store(&j->done, true);
	return NULL;
}

/* What reads return after the job (this device trims to zero; the
 * blocks trimmed here are never dirty, so the cache drops them). */
static void
ra_job_model(const struct ra_job *j, uint8_t *model)
{
	if (j->op == RA_TRIM || j->op == RA_ZERO) {
		memset(model + j->off, 0, j->len);
	} else {
		memcpy(model + j->off, j->buf, j->len);
	}
}

static struct ra_job
ra_job(struct cache *c, enum ra_op op, const uint8_t *buf, uint64_t off,
       uint64_t len)
{
	return (struct ra_job){ .c = c,
				.op = op,
				.buf = buf,
				.off = off,
				.len = len,
				.r = -1 };
}

struct ra_reader {
	struct cache *c;
	const uint8_t *model;
	uint64_t off;
	atomic_bool done;
};

/* Three requests from off: the third has the next window read ahead. */
static void *
ra_reader_thread(void *arg)
{
	struct ra_reader *rd = arg;

	seq_read_check(rd->c, rd->model, rd->off, 3 * RA_STEP);
	atomic_store(&rd->done, true);
	return NULL;
}

/* Wait (as long as it takes) until a read waits at rgate or rd is done. */
static void
ra_wait_held_or_done(struct gdev *d, struct ra_reader *rd)
{
	for (;;) {
		unsigned held;

		pthread_mutex_lock(&d->mu);
		held = d->rheld;
		pthread_mutex_unlock(&d->mu);
		if (held || atomic_load(&rd->done)) {
			return;
		}
		usleep(500);
	}
}

/*
 * A direct operation (FUA, bypass, trim, zero) that started before the
 * read-ahead pinned its unit (there was no entry: it pinned nothing) and
 * reaches the device after the read-ahead read it: the read-ahead must not
 * cache the older bytes.  The operation waits at its gate until the
 * read-ahead has read the device (or given up); the read-ahead waits,
 * with the older bytes, until the operation completed.
 */
static void
ra_race_before_pin(struct gdev *d, struct cache *c, uint8_t *model, uint64_t r0,
		   enum ra_op op, const uint8_t *data)
{
	bool *gate = op == RA_FUA		      ? &d->fua_gate
		     : op == RA_TRIM || op == RA_ZERO ? &d->tz_gate
						      : &d->gate;
	uint64_t len = op == RA_BYPASS ? RA_BIG : BLK;
	struct ra_job j = ra_job(c, op, data, r0 + 32 * BLK, len);
	struct ra_reader rd = { .c = c, .model = model, .off = r0 };
	pthread_t tj, tr;

	gdev_set(d, gate, true);
	d->rgate_from = r0 + 3 * RA_STEP; /* the window, not the reader */
	gdev_set(d, &d->rgate, true);
	pthread_create(&tj, NULL, ra_job_thread, &j);
	gdev_wait_held(d, 1);
	pthread_create(&tr, NULL, ra_reader_thread, &rd);
	ra_wait_held_or_done(d, &rd);
	gdev_set(d, gate, false);
	pthread_join(tj, NULL);
	gdev_set(d, &d->rgate, false);
	pthread_join(tr, NULL);
	assert_int_equal(j.r, 0);
	ra_job_model(&j, model);
}

/*
 * The read-ahead caught between its device read and its insert (pins
 * held): a cached write goes on (its block keeps the write's data), FUA,
 * bypass, trim and zero wait for the pins, then bring the clean blocks in
 * line.
 */
static void
ra_race_in_flight(struct gdev *d, struct cache *c, uint8_t *model, uint64_t r0,
		  const uint8_t *data)
{
	struct ra_reader rd = { .c = c, .model = model, .off = r0 };
	struct ra_job w = ra_job(c, RA_WRITE, data, r0 + 16 * BLK, BLK);
	struct ra_job j[4] = {
		ra_job(c, RA_FUA, data + BLK, r0 + 20 * BLK, BLK),
		ra_job(c, RA_TRIM, NULL, r0 + 24 * BLK, 2 * BLK),
		ra_job(c, RA_ZERO, NULL, r0 + 28 * BLK + 100, BLK),
		ra_job(c, RA_BYPASS, data + 2 * BLK, r0 + 40 * BLK, RA_BIG),
	};
	pthread_t tr, tj[4];

	d->rgate_from = r0 + 3 * RA_STEP;
	gdev_set(d, &d->rgate, true);
	pthread_create(&tr, NULL, ra_reader_thread, &rd);
	ra_wait_held_or_done(d, &rd);
	assert_false(atomic_load(&rd.done)); /* held, pins taken */
	ra_job_thread(&w);		     /* cached: no wait */
	assert_int_equal(w.r, 0);
	ra_job_model(&w, model);
	for (unsigned k = 0; k < 4; k++) {
		pthread_create(&tj[k], NULL, ra_job_thread, &j[k]);
	}
	usleep(20000);
	for (unsigned k = 0; k < 4; k++) {
		assert_false(atomic_load(&j[k].done)); /* the pins hold them */
	}
	gdev_set(d, &d->rgate, false);
	pthread_join(tr, NULL);
	for (unsigned k = 0; k < 4; k++) {
		pthread_join(tj[k], NULL);
		assert_int_equal(j[k].r, 0);
		ra_job_model(&j[k], model);
	}
}

/* The window read ahead (clean in the cache), then every kind of request
 * over it: reads return the newest data. */
static void
ra_after(struct cache *c, uint8_t *model, uint64_t r0, const uint8_t *data)
{
	struct ra_job j[5] = {
		ra_job(c, RA_WRITE, data, r0 + 16 * BLK, BLK + 10),
		ra_job(c, RA_FUA, data + BLK, r0 + 20 * BLK + 7, BLK),
		ra_job(c, RA_TRIM, NULL, r0 + 24 * BLK, 2 * BLK),
		ra_job(c, RA_ZERO, NULL, r0 + 28 * BLK + 100, BLK),
		ra_job(c, RA_BYPASS, data + 2 * BLK, r0 + 40 * BLK, RA_BIG),
	};
	uint64_t ra = gstat(c).readahead_bytes;

	seq_read_check(c, model, r0, 64 * BLK);
	assert_true(gstat(c).readahead_bytes > ra);
	for (unsigned k = 0; k < 5; k++) {
		ra_job_thread(&j[k]);
		assert_int_equal(j[k].r, 0);
		ra_job_model(&j[k], model);
	}
}

/*
 * Read-ahead never hides newer data: writes (cached, FUA, bypassed),
 * trims and zeros landing in a window before the read-ahead pinned it,
 * while it is between its read and its insert, and after it, each case
 * in a region of its own; then every byte read back is the newest, and
 * after a flush the device holds the same.  (Read back once, at the end:
 * a read of a region would continue its reader's stream.)
 */
static void
test_cache_readahead_never_hides_newer_data(void **state)
{
	const enum ra_op ops[4] = { RA_FUA, RA_BYPASS, RA_TRIM, RA_ZERO };
	struct gdev d;
	struct cache *c;
	uint8_t *model, *buf, *data = malloc(RA_BIG + 2 * BLK);

	(void)state;
	gdev_init(&d, 2048 * BLK); /* 8M: a region of 1M per case */
	d.read_us = 1000;
	t_fill_random(d.data, d.size);
	t_fill_random(data, RA_BIG + 2 * BLK);
	model = malloc(d.size);
	memcpy(model, d.data, d.size);
	c = gcache_ra(&d, RA_UNIT, RA_SIZE, false, RA_MAX);
	for (unsigned k = 0; k < 4; k++) {
		ra_race_before_pin(&d, c, model, (uint64_t)k << 20, ops[k],
				   data);
	}
	ra_race_in_flight(&d, c, model, 4 << 20, data);
	ra_after(c, model, 5 << 20, data);
	buf = malloc(d.size);
	assert_int_equal(cache_pread(c, buf, d.size, 0), 0);
	assert_memory_equal(buf, model, d.size);
	assert_int_equal(cache_flush(c), 0);
	assert_memory_equal(d.data, model, d.size);
	assert_int_equal(cache_close(c), 0);
	gdev_free(&d);
	free(model);
	free(data);
	free(buf);
}

/* Member mm refuses every write (EIO) while on; its other ops work. */
static void
refuse_writes(struct mem_member *mm, bool on)
{
	pthread_mutex_lock(&mm->lock);
	mm->bad_ops = on ? 1u << IO_WRITE : 0;
	mm->bad_off = 0;
	mm->bad_len = on ? mm->size : 0;
	pthread_mutex_unlock(&mm->lock);
}

/*
 * RAID 0 x2 (a member error is the request's), every byte dirty, member 1
 * refusing writes: a FLUSH whose write-back fails answers the error
 * (EIO), with the write-back thread stopped (the FLUSH writes back
 * itself) and running (the FLUSH asks the thread first), and nothing is
 * taken for clean: reads return every byte written.  Once the member
 * takes writes again, a FLUSH says yes, nothing is dirty, and the members
 * hold every byte, flushed.
 */
static void
test_cache_flush_answers_writeback_error(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = 32 * CHUNK };
	struct mem_member *bad;
	uint8_t *model, *buf;
	uint64_t size;

	open_cached(f, &s, 1 << 20, 0);
	size = f->a->size;
	model = calloc(1, size);
	buf = malloc(size);
	bad = mem_of(&f->m[1]);
	for (uint64_t off = 0; off < size; off += 2 * BLK) {
		model_write(f->a, model, buf, 2 * BLK, off, 0);
	}
	assert_int_equal(cstat(f).dirty_bytes, size);
	refuse_writes(bad, true);
	assert_int_equal(raid_flush(f->a), -EIO);
	assert_true(cstat(f).dirty_bytes > 0);
	assert_true(cstat(f).writeback_errors >= 1);
	model_read(f->a, model, buf, size, 0);

	assert_int_equal(raid_start(f->a), 0);
	assert_int_equal(raid_flush(f->a), -EIO);
	assert_int_equal(raid_flush(f->a), -EIO);
	assert_true(cstat(f).dirty_bytes > 0);
	model_read(f->a, model, buf, size, 0);

	refuse_writes(bad, false);
	fixture_reset_counts(f);
	assert_int_equal(raid_flush(f->a), 0);
	assert_int_equal(cstat(f).dirty_bytes, 0);
	assert_int_equal(mem_of(&f->m[0])->count[IO_FLUSH], 1);
	assert_int_equal(bad->count[IO_FLUSH], 1);
	fixture_check_members(f, model);
	free(model);
	free(buf);
}

/* A cache-size too small for the array's stripes is refused, saying so. */
static void
test_cache_refuses_too_small(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5,
				  .n = 4,
				  .chunk = 1 << 20,
				  .mem_size = 16 << 20 };

	assert_int_equal(fixture_open(f, &s), 0);
	f->cfg.cache = RAID_CACHE_RAM;
	f->cfg.cache_size = 8 << 20;
	assert_int_equal(array_cache_open(f->a, &f->cfg), -EINVAL);
	assert_non_null(strstr(t_last_error, "smaller than 4 units"));
	assert_null(f->a->cache);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_cache_writes_hit_then_flush_reaches_members,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_fua_on_members_at_reply, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup(
			test_cache_read_and_write_during_writeback, t_setup),
		cmocka_unit_test_setup(
			test_cache_direct_write_waits_for_writeback, t_setup),
		cmocka_unit_test_setup(
			test_cache_flush_waits_for_writeback_in_flight,
			t_setup),
		cmocka_unit_test_setup(
			test_cache_direct_and_late_writeback_coherent, t_setup),
		cmocka_unit_test_setup(
			test_cache_gap_fill_spares_direct_write_in_flight,
			t_setup),
		cmocka_unit_test_setup(test_cache_full_writer_waits_not_fails,
				       t_setup),
		cmocka_unit_test_setup(
			test_cache_next_batch_queued_behind_the_last, t_setup),
		cmocka_unit_test_setup_teardown(
			test_cache_raid5_full_stripes_read_nothing,
			fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cache_trim_zero_coherent,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_bypass_keeps_reads_exact, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cache_close_drains,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup(test_cache_extents_report_dirty_as_data,
				       t_setup),
		cmocka_unit_test_setup_teardown(test_cache_writethrough,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cache_thread_writes_back,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cache_stress_against_model,
						fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup(test_cache_readahead_sequential_hits,
				       t_setup),
		cmocka_unit_test_setup(
			test_cache_readahead_not_for_random_reads, t_setup),
		cmocka_unit_test_setup(test_cache_readahead_off, t_setup),
		cmocka_unit_test_setup(
			test_cache_readahead_never_hides_newer_data, t_setup),
		cmocka_unit_test_setup_teardown(
			test_cache_flush_answers_writeback_error, fixture_setup,
			fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cache_refuses_too_small,
						fixture_setup,
						fixture_teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
