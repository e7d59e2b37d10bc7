/*
 * test_cache_logmode.c: cache=log (src/cache_logmode.c): the RAM cache with
 * the persistent log behind it, over a memory device with a volatile
 * write cache of its own (what it holds since its last flush is lost in a
 * crash, as a disk's), and over arrays of memory members (fixture.h).
 *
 * A crash is cache_abandon (the cache's memory and its write-back gone,
 * the log's records kept, as kill -9 leaves them) and the device losing
 * what it was not told to flush; the next open replays the log.  A model
 * keeps, per byte, the value guaranteed (FLUSH, FUA) and the values
 * written since: after a crash every byte must be one of those, and
 * every read before it the newest acknowledged value.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <endian.h>

#include "array.h"
#include "cache.h"
#include "cache_int.h" /* lm_retire_all: a retire as the thread does it */
#include "cache_log.h"
#include "fixture.h"
#include "helpers.h"
#include "logtest.h"
#include "util.h"

#define BLK   CACHE_BLOCK
#define KiB   1024u
#define MiB   (1024u * 1024u)
#define NCAND 6 /* values remembered per byte since its guarantee */

/* ---- a memory device with a volatile write cache ----------------------- */

struct vdev {
	uint8_t *data;	 /* what reads see */
	uint8_t *stable; /* what survives a crash: data at the last flush */
	uint64_t size;
	/* A request's data moves under it, as a flush's copy (a disk: a read
	 * beside a write of the same bytes gets old or new, not a race). */
	pthread_rwlock_t lock;
	atomic_uint writes, flushes, zeros, trims;
	atomic_int flush_error; /* flushes fail with it while set */
	atomic_int write_error; /* writes fail with it while set */
	unsigned delay_us;
};

static void
vdev_init(struct vdev *d, uint64_t size)
{
	memset(d, 0, sizeof(*d));
	d->data = calloc(1, size);
	d->stable = calloc(1, size);
	assert_non_null(d->data);
	assert_non_null(d->stable);
	d->size = size;
	pthread_rwlock_init(&d->lock, NULL);
}

static void
vdev_free(struct vdev *d)
{
	free(d->data);
	free(d->stable);
	pthread_rwlock_destroy(&d->lock);
}

/* What a crash leaves: the device as of its last flush. */
static void
vdev_crash(struct vdev *d)
{
	memcpy(d->data, d->stable, d->size);
}

static int
v_read(void *ctx, void *buf, uint64_t count, uint64_t off)
{
	struct vdev *d = ctx;

	pthread_rwlock_wrlock(&d->lock);
	memcpy(buf, d->data + off, count);
	pthread_rwlock_unlock(&d->lock);
	return 0;
}

static int
v_write(void *ctx, const void *buf, uint64_t count, uint64_t off,
	uint32_t flags)
{
	struct vdev *d = ctx;
	int r = atomic_load(&d->write_error);

	if (r) {
		return r;
	}
	if (d->delay_us) {
		usleep(d->delay_us);
	}
	pthread_rwlock_wrlock(&d->lock);
	memcpy(d->data + off, buf, count);
	if (flags & RAID_FUA) {
		memcpy(d->stable + off, buf, count);
	}
	pthread_rwlock_unlock(&d->lock);
	atomic_fetch_add(&d->writes, 1);
	return 0;
}

static int
v_zero(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	struct vdev *d = ctx;

	pthread_rwlock_wrlock(&d->lock);
	memset(d->data + off, 0, count);
	if (flags & RAID_FUA) {
		memset(d->stable + off, 0, count);
	}
	pthread_rwlock_unlock(&d->lock);
	atomic_fetch_add(&d->zeros, 1);
	return 0;
}

static int
v_trim(void *ctx, uint64_t count, uint64_t off, uint32_t flags)
{
	atomic_fetch_add(&((struct vdev *)ctx)->trims, 1);
	return v_zero(ctx, count, off, flags); /* it trims to zeros */
}

static int
v_flush(void *ctx)
{
	struct vdev *d = ctx;
	int r = atomic_load(&d->flush_error);

	if (r) {
		return r;
	}
	pthread_rwlock_wrlock(&d->lock);
	memcpy(d->stable, d->data, d->size);
	pthread_rwlock_unlock(&d->lock);
	atomic_fetch_add(&d->flushes, 1);
	return 0;
}

static int
v_writable(void *ctx)
{
	(void)ctx;
	return 0;
}

/* ---- the fixture: a folder for the log, the device --------------------- */

struct lfx {
	char dir[64];
	char path[96]; /* the log */
	struct vdev d;
	uint64_t unit;
	uint64_t csize; /* cache-size */
	bool hold;
	enum raid_cache_mode mode;
	const uint8_t *uuid;
};

/* A blank log of log_bytes, the device zeroed. */
static void
fresh(struct lfx *f, uint64_t log_bytes)
{
	t_mk_file(f->path, log_bytes);
	memset(f->d.data, 0, f->d.size);
	memset(f->d.stable, 0, f->d.size);
}

static int
setup(void **state)
{
	struct lfx *f = calloc(1, sizeof(*f));
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	t_reset();
	assert_non_null(f);
	t_scratch_dir(f->dir, sizeof(f->dir), base, "nbdraid-lm");
	snprintf(f->path, sizeof(f->path), "%s/log", f->dir);
	f->unit = 64 * KiB;
	f->csize = 1 * MiB;
	f->hold = true;
	f->uuid = t_uuid_a;
	f->mode = RAID_CACHE_WRITEBACK;
	vdev_init(&f->d, 4 * MiB);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct lfx *f = *state;
	t_scratch_remove(f->dir);
	vdev_free(&f->d);
	free(f);
	clog_fault_hook = NULL;
	return 0;
}

/* cache_open over the device with the log; r its result. */
static int
try_open(struct lfx *f, struct cache **c)
{
	const struct cache_backing be = {
		.ctx = &f->d,
		.read = v_read,
		.write = v_write,
		.trim = v_trim,
		.zero = v_zero,
		.flush = v_flush,
		.writable = v_writable,
	};
	const struct cache_geometry g = { .size = f->d.size,
					  .unit_bytes = f->unit,
					  .block_bytes = BLK,
					  .hold_partial = f->hold };
	struct cache_settings s = {
		.kind = RAID_CACHE_LOG,
		.mode = f->mode,
		.size_bytes = f->csize,
		.seq_cutoff = 0,
		.hold_ms = 20,
		.log_path = f->path,
	};

	memcpy(s.log_uuid, f->uuid, 16);
	return cache_open(&be, &g, &s, c);
}

static struct cache *
lopen(struct lfx *f)
{
	struct cache *c = NULL;

	assert_int_equal(try_open(f, &c), 0);
	assert_non_null(c);
	return c;
}

static struct raid_cache_status
cst(struct cache *c)
{
	struct raid_cache_status st;

	cache_status(c, &st);
	return st;
}

/* Records the log holds (not retired), read from the file. */
static uint64_t
log_records(struct lfx *f)
{
	struct clog_info info;
	char why[256];

	assert_int_equal(clog_examine(f->path, &info, why, sizeof(why)), 0);
	return info.records;
}

/* ---- the model --------------------------------------------------------- */

struct model {
	uint64_t size;
	uint8_t *cur;	/* the newest acknowledged: what reads return */
	uint8_t *g;	/* guaranteed to survive a crash (or newer) */
	uint8_t *cand;	/* NCAND per byte: values written since g */
	uint8_t *nc;	/* how many; NCAND + 1: too many to keep */
	uint8_t *undef; /* trimmed since: any value */
};

/*
 * The model's byte loops are the test's bookkeeping, not the cache's
 * work: left out of ThreadSanitizer's instrumentation (TSan made each of
 * their bytes a checked access: the crash rounds ran 40 times slower).
 * The cache's own accesses, and its copies of the callers' buffers, are
 * checked as ever.
 */
#define MODEL_UNCHECKED __attribute__((no_sanitize("thread")))

static void
model_init(struct model *m, uint64_t size)
{
	m->size = size;
	m->cur = calloc(1, size);
	m->g = calloc(1, size);
	m->cand = calloc(NCAND, size);
	m->nc = calloc(1, size);
	m->undef = calloc(1, size);
	assert_true(m->cur && m->g && m->cand && m->nc && m->undef);
}

static void
model_free(struct model *m)
{
	free(m->cur);
	free(m->g);
	free(m->cand);
	free(m->nc);
	free(m->undef);
}

/* A write (buf NULL: zeros) acknowledged; durable when FUA. */
MODEL_UNCHECKED static void
model_write(struct model *m, uint64_t off, uint64_t len, const uint8_t *buf,
	    bool durable)
{
	for (uint64_t x = off; x < off + len; x++) {
		uint8_t v = buf ? buf[x - off] : 0;

		m->cur[x] = v;
		m->undef[x] = 0;
		if (durable) {
			m->g[x] = v;
			m->nc[x] = 0;
		} else if (m->nc[x] < NCAND) {
			m->cand[x * NCAND + m->nc[x]++] = v;
		} else {
			m->nc[x] = NCAND + 1;
		}
	}
}

MODEL_UNCHECKED static void
model_trim(struct model *m, uint64_t off, uint64_t len)
{
	memset(m->undef + off, 1, len);
}

/* A FLUSH of [lo, hi) answered: what was acknowledged there is durable. */
MODEL_UNCHECKED static void
model_flush(struct model *m, uint64_t lo, uint64_t hi)
{
	for (uint64_t x = lo; x < hi; x++) {
		if (!m->undef[x]) {
			m->g[x] = m->cur[x];
			m->nc[x] = 0;
		}
	}
}

/* Reads return the newest acknowledged bytes. */
MODEL_UNCHECKED static bool
model_read_ok(const struct model *m, const uint8_t *buf, uint64_t off,
	      uint64_t len, uint64_t *bad)
{
	for (uint64_t x = off; x < off + len; x++) {
		if (!m->undef[x] && buf[x - off] != m->cur[x]) {
			*bad = x;
			return false;
		}
	}
	return true;
}

/* After a crash: each byte in [lo, hi) is its guarantee or written since;
 * then what is there is the new baseline. */
MODEL_UNCHECKED static void
model_after_crash(struct model *m, const uint8_t *got, uint64_t lo, uint64_t hi)
{
	for (uint64_t x = lo; x < hi; x++) {
		bool ok = m->undef[x] || got[x] == m->g[x] || m->nc[x] > NCAND;

		for (unsigned k = 0; !ok && k < m->nc[x]; k++) {
			ok = got[x] == m->cand[x * NCAND + k];
		}
		if (!ok) {
			print_error(
				"byte %llu after the crash: %u; guaranteed %u, newest %u, %u written since\n",
				(unsigned long long)x, got[x], m->g[x],
				m->cur[x], m->nc[x]);
			fail();
		}
		m->cur[x] = m->g[x] = got[x];
		m->nc[x] = m->undef[x] = 0;
	}
}

/* ---- a random workload -------------------------------------------------- */

struct job {
	struct cache *c;
	struct model *m;
	uint64_t lo, hi; /* its bytes */
	uint64_t seed;
	unsigned steps;
	unsigned max_blocks; /* longest write */
	bool trims;
	char err[160];
};

/* buf[0, len) random, no byte zero. */
MODEL_UNCHECKED static void
fill_nonzero(uint8_t *buf, uint64_t len, uint64_t *st)
{
	for (uint64_t i = 0; i < len; i++) {
		buf[i] = (uint8_t)(t_rand_next(st) | 1);
	}
}

static void *
job_run(void *arg)
{
	struct job *j = arg;
	uint64_t st = j->seed, span = j->hi - j->lo;
	uint64_t maxlen = (uint64_t)j->max_blocks * BLK;
	uint8_t *buf = malloc(maxlen);
	int r = 0;

	for (unsigned k = 0; k < j->steps && !j->err[0]; k++) {
		uint64_t op = t_rand_next(&st) % 32, len, off, bad;

		len = 1 + t_rand_next(&st) %
				  (t_rand_next(&st) % 8 ? 6 * BLK : maxlen);
		if (t_rand_next(&st) % 4) {
			len = ROUND_UP(len, BLK); /* aligned, most often */
		}
		len = MIN(len, MIN(span, maxlen));
		off = j->lo + t_rand_next(&st) % (span - len + 1);
		if (t_rand_next(&st) % 2) {
			off = MAX(j->lo, ROUND_DOWN(off, BLK));
		}
		if (op < 18) {
			bool fua = op < 3;

			fill_nonzero(buf, len, &st);
			r = cache_pwrite(j->c, buf, len, off,
					 fua ? RAID_FUA : 0);
			if (r == 0) {
				model_write(j->m, off, len, buf, fua);
			}
		} else if (op < 25) {
			r = cache_pread(j->c, buf, len, off);
			if (r == 0 &&
			    !model_read_ok(j->m, buf, off, len, &bad)) {
				snprintf(
					j->err, sizeof(j->err),
					"read [%llu, +%llu): byte %llu is %u, want %u",
					(unsigned long long)off,
					(unsigned long long)len,
					(unsigned long long)bad, buf[bad - off],
					j->m->cur[bad]);
			}
		} else if (op < 27) {
			r = cache_zero(j->c, len, off,
				       op == 25 ? RAID_MAY_TRIM : RAID_FUA);
			if (r == 0) {
				model_write(j->m, off, len, NULL, op == 26);
			}
		} else if (op < 28 && j->trims) {
			r = cache_trim(j->c, len, off, 0);
			if (r == 0) {
				model_trim(j->m, off, len);
			}
		} else if (op < 31) {
			r = cache_flush(j->c);
			if (r == 0) {
				model_flush(j->m, j->lo, j->hi);
			}
		}
		if (r != 0) {
			snprintf(j->err, sizeof(j->err), "op %llu: %s",
				 (unsigned long long)op, strerror(-r));
		}
	}
	free(buf);
	return NULL;
}

/* n jobs at once, in regions that share blocks and units. */
static void
run_jobs(struct cache *c, struct model *m, unsigned n, unsigned steps,
	 unsigned max_blocks, bool trims)
{
	struct job j[8];
	pthread_t t[8];

	for (unsigned i = 0; i < n; i++) {
		j[i] = (struct job){
			.c = c,
			.m = m,
			.lo = i ? m->size / n * i + 3000 : 0,
			.hi = i < n - 1 ? m->size / n * (i + 1) + 3000
					: m->size,
			.seed = t_rand(1ull << 62) + 1,
			.steps = steps,
			.max_blocks = max_blocks,
			.trims = trims,
		};
		pthread_create(&t[i], NULL, job_run, &j[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
	}
	for (unsigned i = 0; i < n; i++) {
		if (j[i].err[0]) {
			print_error("job %u: %s\n", i, j[i].err);
			fail();
		}
	}
}

/* Crash, reopen (replay), check every byte against the model. */
static struct cache *
crash_and_check(struct lfx *f, struct cache *c, struct model *m)
{
	uint8_t *got = malloc(m->size);

	cache_abandon(c);
	vdev_crash(&f->d);
	c = lopen(f);
	assert_int_equal(log_records(f), 0); /* replayed, retired */
	assert_int_equal(cache_pread(c, got, m->size, 0), 0);
	model_after_crash(m, got, 0, m->size);
	free(got);
	return c;
}

/* ---- cases ------------------------------------------------------------- */

/*
 * Random writes (aligned and not, FUA, some longer than the log's
 * longest record), reads, zeros, trims and flushes from 4 threads, the
 * write-back thread running (with a 1 MiB log: it fills, writers wait,
 * the thread retires), then a crash: every byte guaranteed before it
 * (flushed, FUA) reads back, the others as one of the values written
 * since; 4 rounds, then a clean close: the log is empty and the device
 * alone holds every byte.  Without the thread too (writers waiting for
 * log space write back and retire themselves), and with whole-stripe
 * units held partly dirty (hold) and not.
 */
static void
crash_rounds(struct lfx *f, uint64_t log_bytes, bool thread, unsigned n)
{
	struct model m;
	struct cache *c;
	uint8_t *got = malloc(f->d.size);
	struct raid_cache_status st;

	fresh(f, log_bytes);
	model_init(&m, f->d.size);
	c = lopen(f);
	for (unsigned round = 0; round < 4; round++) {
		if (thread) {
			assert_int_equal(cache_start(c), 0);
		}
		run_jobs(c, &m, n, 300, 160, true);
		st = cst(c);
		assert_int_equal(st.kind, RAID_CACHE_LOG);
		assert_true(st.log_records > 0);
		assert_false(st.log_failed);
		c = crash_and_check(f, c, &m);
	}
	run_jobs(c, &m, n, 300, 160, false);
	st = cst(c);
	assert_int_equal(cache_close(c), 0);
	assert_int_equal(log_records(f), 0);
	/* The device alone, as after a clean stop: everything. */
	assert_true(
		model_read_ok(&m, f->d.stable, 0, f->d.size, &(uint64_t){ 0 }));
	free(got);
	model_free(&m);
}

static void
test_logmode_crash_keeps_flushed_and_fua(void **state)
{
	struct lfx *f = *state;

	crash_rounds(f, 64 * MiB, true, 4);
	crash_rounds(f, 1 * MiB, true, 4);
	crash_rounds(f, 1 * MiB, false, 1);
	f->hold = false;
	f->unit = 256 * KiB;
	crash_rounds(f, 2 * MiB, true, 3);
}

/*
 * A log of 1 MiB and writes of 4K with FUA, 4 threads, no write-back
 * thread: the log fills again and again; writers wait (counted) and make
 * room themselves: write back, flush the device, retire.  Nothing fails.
 * The device loses what it was not told to flush: had a retire not
 * flushed it first, the crash would lose FUA data whose records were
 * retired.  Every retire came after a device flush.
 */
struct fua_job {
	struct cache *c;
	uint8_t *model;
	uint64_t lo, n; /* its blocks */
	uint64_t seed;
	int r;
};

static void *
fua_run(void *arg)
{
	struct fua_job *j = arg;
	uint64_t st = j->seed;
	uint8_t buf[BLK];

	for (unsigned k = 0; k < 600 && j->r == 0; k++) {
		uint64_t b = j->lo + t_rand_next(&st) % j->n;

		for (unsigned i = 0; i < BLK; i++) {
			buf[i] = (uint8_t)t_rand_next(&st);
		}
		j->r = cache_pwrite(j->c, buf, BLK, b * BLK, RAID_FUA);
		memcpy(j->model + b * BLK, buf, BLK);
	}
	return NULL;
}

static void
test_logmode_log_full_writers_wait(void **state)
{
	struct lfx *f = *state;
	uint64_t nb = f->d.size / BLK;
	uint8_t *model = calloc(1, f->d.size), *got = malloc(f->d.size);
	struct fua_job j[4];
	pthread_t t[4];
	struct raid_cache_status st;
	struct cache *c;

	t_mk_file(f->path, 1 * MiB);
	f->csize = 4 * MiB;
	c = lopen(f);
	for (unsigned i = 0; i < 4; i++) {
		j[i] = (struct fua_job){ .c = c,
					 .model = model,
					 .lo = nb / 4 * i,
					 .n = nb / 4,
					 .seed = t_rand(1ull << 62) + 1 };
		pthread_create(&t[i], NULL, fua_run, &j[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(j[i].r, 0);
	}
	st = cst(c);
	assert_true(st.log_waits > 0);
	assert_true(st.log_retires > 0);
	assert_true(atomic_load(&f->d.flushes) >= st.log_retires);
	assert_int_equal(cache_pread(c, got, f->d.size, 0), 0);
	assert_memory_equal(got, model, f->d.size);
	/* Every write was FUA: after a crash, every block exact. */
	cache_abandon(c);
	vdev_crash(&f->d);
	c = lopen(f);
	assert_int_equal(cache_pread(c, got, f->d.size, 0), 0);
	assert_memory_equal(got, model, f->d.size);
	assert_int_equal(cache_close(c), 0);
	free(model);
	free(got);
}

/*
 * Records are retired only once their data is on the device and a device
 * flush succeeded: write-back alone retires nothing; a failed flush
 * retires nothing; the next good one retires all.  A crash at each step
 * loses nothing flushed.
 */
static void
test_logmode_retire_only_after_device_flush(void **state)
{
	struct lfx *f = *state;
	uint8_t a[3 * BLK], got[3 * BLK];
	uint64_t bytes, all = 0;
	unsigned flushes;
	struct cache *c;

	t_mk_file(f->path, 4 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(cache_pwrite(c, a + i * BLK, BLK,
					      (uint64_t)(7 * i + 1) * f->unit,
					      0),
				 0);
	}
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(log_records(f), 3);
	flushes = atomic_load(&f->d.flushes);
	do {
		assert_int_equal(cache_writeback_once(c, true, &bytes), 0);
		all += bytes;
	} while (bytes);
	assert_int_equal(all, 3 * BLK);
	assert_int_equal(atomic_load(&f->d.flushes), flushes);
	assert_int_equal(log_records(f), 3); /* on the device, not flushed */
	atomic_store(&f->d.flush_error, -EIO);
	assert_int_equal(cache_drain_all(c), -EIO);
	assert_int_equal(log_records(f), 3);
	/* A crash now: the device lost the write-back; the log has it. */
	cache_abandon(c);
	vdev_crash(&f->d);
	atomic_store(&f->d.flush_error, 0);
	c = lopen(f);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(cache_pread(c, got + i * BLK, BLK,
					     (uint64_t)(7 * i + 1) * f->unit),
				 0);
	}
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(log_records(f), 0);
	/* Again, and this time the flush works: retired after it. */
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(cache_pwrite(c, a + i * BLK, BLK,
					      (uint64_t)(5 * i + 2) * f->unit,
					      RAID_FUA),
				 0);
	}
	assert_int_equal(log_records(f), 3);
	flushes = atomic_load(&f->d.flushes);
	assert_int_equal(cache_drain_all(c), 0);
	assert_true(atomic_load(&f->d.flushes) > flushes);
	assert_int_equal(log_records(f), 0);
	cache_abandon(c);
	vdev_crash(&f->d);
	for (unsigned i = 0; i < 3; i++) {
		assert_memory_equal(f->d.data + (5 * i + 2) * f->unit,
				    a + i * BLK, BLK);
	}
}

/* The first record write waits in it until released (then it is off). */
enum { HOLD_OFF, HOLD_ARMED, HOLD_WAITING, HOLD_RELEASED };
static atomic_int hold_state;

static int
hold_first_record(struct clog *l, bool sync)
{
	int armed = HOLD_ARMED;

	(void)l;
	if (sync || !atomic_compare_exchange_strong(&hold_state, &armed,
						    HOLD_WAITING)) {
		return 0;
	}
	while (atomic_load(&hold_state) == HOLD_WAITING) {
		usleep(1000);
	}
	return 0;
}

struct late_write {
	struct cache *c;
	const uint8_t *buf;
	int r;
};

static void *
late_write_run(void *arg)
{
	struct late_write *w = arg;

	w->r = cache_pwrite(w->c, w->buf, BLK, 0, 0);
	return NULL;
}

/*
 * Records reach the cache out of their order: A takes its place in the
 * log (the lower lsn), B (another block of the same unit) takes the next,
 * and B's data is in the cache before A's.  Both flushed.  A retire now
 * may not pass A's record: its data is in the cache only.  After a crash
 * both blocks read back (A's lost, had the unit kept B's number as its
 * oldest).
 */
static void
test_logmode_retire_keeps_record_cached_late(void **state)
{
	struct lfx *f = *state;
	uint8_t a[BLK], b[BLK], got[2 * BLK];
	struct late_write w;
	struct cache *c;
	pthread_t t;

	t_mk_file(f->path, 4 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	t_fill_random(b, sizeof(b));
	w = (struct late_write){ .c = c, .buf = a };
	atomic_store(&hold_state, HOLD_ARMED);
	clog_fault_hook = hold_first_record;
	pthread_create(&t, NULL, late_write_run, &w);
	while (atomic_load(&hold_state) != HOLD_WAITING) {
		usleep(1000);
	}
	assert_int_equal(cache_pwrite(c, b, BLK, BLK, 0), 0);
	atomic_store(&hold_state, HOLD_RELEASED);
	pthread_join(t, NULL);
	clog_fault_hook = NULL;
	assert_int_equal(w.r, 0);
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(lm_retire_all(c), 0);
	assert_int_equal(log_records(f), 2); /* both only in the cache */
	cache_abandon(c);
	vdev_crash(&f->d);
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 2);
	assert_int_equal(cache_pread(c, got, sizeof(got), 0), 0);
	assert_memory_equal(got, a, BLK);
	assert_memory_equal(got + BLK, b, BLK);
	assert_int_equal(cache_close(c), 0);
}

/* Position of the record with the highest seq in the log file. */
static uint64_t
last_record(const char *path, uint64_t *len)
{
	int fd = open(path, O_RDONLY);
	uint8_t b[BLK];
	uint64_t best = 0, seq = 0;
	off_t size = lseek(fd, 0, SEEK_END);

	assert_true(fd >= 0);
	for (off_t pos = 2 * BLK; pos < size; pos += BLK) {
		uint64_t s, p;
		uint32_t magic;

		assert_int_equal(pread(fd, b, BLK, pos), BLK);
		memcpy(&magic, b, 4);
		memcpy(&s, b + 16, 8);
		memcpy(&p, b + 32, 8);
		if (le32toh(magic) == 0x4345524eu &&
		    le64toh(p) == (uint64_t)pos && le64toh(s) > seq) {
			uint32_t l;

			memcpy(&l, b + 12, 4);
			seq = le64toh(s);
			best = (uint64_t)pos;
			*len = le32toh(l);
		}
	}
	close(fd);
	return best;
}

/*
 * The last record torn (a byte of its data damaged, as a crash in the
 * middle of its write leaves it): replay stops before it.  Its write was
 * never flushed: it reads as the data before it, exactly (applied, it
 * would have put the damaged byte there); everything flushed before it
 * reads back exact.
 */
static void
test_logmode_torn_last_record_ignored(void **state)
{
	struct lfx *f = *state;
	uint8_t a[8 * BLK], b[8 * BLK], got[8 * BLK];
	uint64_t pos, len = 0;
	struct cache *c;
	int fd;
	uint8_t x;

	t_mk_file(f->path, 4 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	t_fill_random(b, sizeof(b));
	assert_int_equal(cache_pwrite(c, a, sizeof(a), 3 * BLK, 0), 0);
	assert_int_equal(cache_pwrite(c, a, 5 * BLK, 40 * BLK, 0), 0);
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(cache_pwrite(c, b, sizeof(b), 5 * BLK, 0), 0);
	pos = last_record(f->path, &len);
	assert_int_equal(len, sizeof(b));
	fd = open(f->path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &x, 1, (off_t)(pos + BLK + 5000)), 1);
	x ^= 0x5a;
	assert_int_equal(pwrite(fd, &x, 1, (off_t)(pos + BLK + 5000)), 1);
	close(fd);
	cache_abandon(c);
	vdev_crash(&f->d);
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 2);
	assert_int_equal(cache_pread(c, got, sizeof(got), 3 * BLK), 0);
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(cache_pread(c, got, 5 * BLK, 40 * BLK), 0);
	assert_memory_equal(got, a, 5 * BLK);
	assert_int_equal(cache_pread(c, got, 2 * BLK, 11 * BLK), 0);
	assert_true(memcmp(got, b + 6 * BLK, 2 * BLK) != 0);
	assert_int_equal(cache_close(c), 0);
}

/* Fail the log's record writes (or syncs) from the n-th on. */
static atomic_int fault_after;
static atomic_bool fault_sync;

static int
fault(struct clog *l, bool sync)
{
	(void)l;
	if (sync != atomic_load(&fault_sync)) {
		return 0;
	}
	return atomic_fetch_sub(&fault_after, 1) <= 0 ? -EIO : 0;
}

/*
 * The log fails (a record write, then, in another run, a sync) while 4
 * threads write, read, zero and flush: no request fails; the cache says
 * write-through and why; reads stay exact; the log is left empty (so a
 * later start replays nothing stale); after a crash every byte flushed
 * or FUA before or after the failure is there, from the device alone.
 */
static void
failing_log(struct lfx *f, bool sync)
{
	struct model m;
	struct cache *c;
	struct raid_cache_status st;

	fresh(f, 8 * MiB);
	model_init(&m, f->d.size);
	c = lopen(f);
	assert_int_equal(cache_start(c), 0);
	run_jobs(c, &m, 4, 100, 16, false);
	atomic_store(&fault_sync, sync);
	atomic_store(&fault_after, 20);
	clog_fault_hook = fault;
	run_jobs(c, &m, 4, 300, 16, false);
	st = cst(c);
	assert_true(st.log_failed);
	assert_int_equal(st.log_error, -EIO);
	assert_int_equal(st.mode, RAID_CACHE_WRITETHROUGH);
	assert_non_null(strstr(t_errors, "failed (Input/output error)"));
	assert_non_null(strstr(t_errors, "write-through"));
	assert_int_equal(log_records(f), 0);
	cache_abandon(c);
	clog_fault_hook = NULL;
	vdev_crash(&f->d);
	/* The device alone holds every guarantee. */
	model_after_crash(&m, f->d.data, 0, f->d.size);
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 0);
	assert_int_equal(cache_close(c), 0);
	model_free(&m);
}

static void
test_logmode_failing_log_goes_writethrough(void **state)
{
	failing_log(*state, false);
	failing_log(*state, true);
}

/* Every record write fails with EIO (a log device gone). */
static int
log_gone(struct clog *l, bool sync)
{
	(void)l;
	(void)sync;
	return -EIO;
}

/*
 * The log fails and the device fails too, so the drain that should put
 * everything acknowledged on the device cannot (issue 25 #19): as long
 * as that lasts, every FLUSH fails (it said yes before: the cache went
 * write-through anyway, and a FLUSH drained nothing: its mark was RAM
 * mode's count, not the log's lsns), writes (FUA ones too), zeros and
 * trims fail rather than reach the device without a record over records
 * not retired (none of them reaches it), reads go on, and
 * the log keeps its records: a crash now replays what was flushed.  Once
 * the device works again, the next FLUSH drains, flushes, empties the
 * log and says yes; from then on write-through, and after a crash the
 * device alone holds every byte acknowledged.
 */
static void
failed_log_and_device(struct lfx *f, atomic_int *device_error)
{
	static const uint8_t zeros[BLK];
	uint8_t a[4 * BLK], b[BLK], got[4 * BLK];
	struct raid_cache_status st;
	struct cache *c;
	unsigned trims, zeroed;

	t_reset();
	fresh(f, 4 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	t_fill_random(b, sizeof(b));
	/* a: acknowledged and flushed (the log synced), in the cache. */
	assert_int_equal(cache_pwrite(c, a, sizeof(a), 10 * BLK, 0), 0);
	assert_int_equal(cache_flush(c), 0);
	/* a again at another place: acknowledged, its record not synced. */
	assert_int_equal(cache_pwrite(c, a, sizeof(a), 100 * BLK, 0), 0);
	atomic_store(device_error, -EIO);
	clog_fault_hook = log_gone;
	assert_int_equal(cache_pwrite(c, b, BLK, 0, 0), -EIO);
	st = cst(c);
	assert_true(st.log_failed);
	trims = atomic_load(&f->d.trims);
	zeroed = atomic_load(&f->d.zeros);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cache_flush(c), -EIO);
		assert_int_equal(cache_pwrite(c, b, BLK, 50 * BLK, 0), -EIO);
		assert_int_equal(cache_zero(c, BLK, 60 * BLK, 0), -EIO);
		assert_int_equal(cache_pwrite(c, b, BLK, 70 * BLK, RAID_FUA),
				 -EIO);
		assert_int_equal(cache_trim(c, BLK, 10 * BLK, 0), -EIO);
		assert_int_equal(cache_trim(c, BLK, 11 * BLK, RAID_FUA), -EIO);
	}
	assert_non_null(strstr(t_errors, "could not be written back"));
	/* None reached the device (its flushes failing, writes land). */
	assert_int_equal(atomic_load(&f->d.trims), trims);
	assert_int_equal(atomic_load(&f->d.zeros), zeroed);
	assert_memory_equal(f->d.data + 70 * BLK, zeros, BLK);
	/* Reads: the newest acknowledged bytes, the trimmed ones too. */
	assert_int_equal(cache_pread(c, got, sizeof(got), 100 * BLK), 0);
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(cache_pread(c, got, sizeof(got), 10 * BLK), 0);
	assert_memory_equal(got, a, sizeof(a));
	assert_true(log_records(f) >= 2);

	/* The device back: the next FLUSH drains, flushes, empties. */
	atomic_store(device_error, 0);
	assert_int_equal(cache_flush(c), 0);
	assert_int_equal(log_records(f), 0);
	assert_int_equal(cst(c).mode, RAID_CACHE_WRITETHROUGH);
	assert_non_null(strstr(t_errors, "emptied: write-through"));
	assert_memory_equal(f->d.stable + 10 * BLK, a, sizeof(a));
	assert_memory_equal(f->d.stable + 100 * BLK, a, sizeof(a));
	assert_int_equal(cache_pwrite(c, b, BLK, 50 * BLK, 0), 0);
	assert_int_equal(cache_flush(c), 0);
	cache_abandon(c);
	clog_fault_hook = NULL;
	vdev_crash(&f->d);
	assert_memory_equal(f->d.data + 50 * BLK, b, BLK);
	assert_memory_equal(f->d.data + 100 * BLK, a, sizeof(a));
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 0);
	assert_int_equal(cache_close(c), 0);
}

/* The device's writes fail; then its flushes (the writes land). */
static void
test_logmode_failed_log_and_device(void **state)
{
	struct lfx *f = *state;

	failed_log_and_device(f, &f->d.write_error);
	failed_log_and_device(f, &f->d.flush_error);
}

/*
 * As above, but the crash comes while the log and the device still fail:
 * the log kept its records (nothing was written through over them), so
 * the next start replays what was flushed before the failure.
 */
static void
test_logmode_failed_log_and_device_crash(void **state)
{
	struct lfx *f = *state;
	uint8_t a[4 * BLK], b[BLK], got[4 * BLK];
	struct cache *c;

	t_mk_file(f->path, 4 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	t_fill_random(b, sizeof(b));
	assert_int_equal(cache_pwrite(c, a, sizeof(a), 10 * BLK, RAID_FUA), 0);
	atomic_store(&f->d.write_error, -EIO);
	clog_fault_hook = log_gone;
	assert_int_equal(cache_pwrite(c, b, BLK, 11 * BLK, 0), -EIO);
	assert_int_equal(cache_flush(c), -EIO);
	assert_int_equal(cache_pwrite(c, b, BLK, 12 * BLK, 0), -EIO);
	cache_abandon(c);
	clog_fault_hook = NULL;
	atomic_store(&f->d.write_error, 0);
	vdev_crash(&f->d);
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 1);
	assert_int_equal(cache_pread(c, got, sizeof(got), 10 * BLK), 0);
	assert_memory_equal(got, a, sizeof(a));
	assert_int_equal(cache_close(c), 0);
}

/* Another array's log is refused, naming the path; its records kept. */
static void
test_logmode_other_arrays_log_refused(void **state)
{
	struct lfx *f = *state;
	uint8_t a[BLK];
	struct cache *c;

	t_mk_file(f->path, 2 * MiB);
	c = lopen(f);
	t_fill_random(a, sizeof(a));
	assert_int_equal(cache_pwrite(c, a, BLK, 0, RAID_FUA), 0);
	cache_abandon(c);
	f->uuid = t_uuid_b;
	assert_int_equal(try_open(f, &c), -EEXIST);
	assert_null(c);
	assert_non_null(strstr(t_last_error, f->path));
	assert_int_equal(log_records(f), 1);
	f->uuid = t_uuid_a;
	c = lopen(f);
	assert_int_equal(cst(c).log_replayed, 1);
	assert_int_equal(cache_close(c), 0);
}

/*
 * Arrays: cache=log needs md superblocks (the UUID it binds to); a log
 * holding records named with cache-log= and another cache (or none) is
 * refused unless force=true, which drops them.
 */
static void
test_logmode_array_rules(void **state)
{
	struct lfx *f = *state;
	struct fixture_spec spec = { .level = 5, .n = 3, .mem_size = 1 * MiB };
	void *fs = NULL;
	struct fixture *fx;
	struct clog *l;
	uint64_t lsn;
	uint8_t a[BLK] = { 1 };
	char why[256];

	t_mk_file(f->path, 2 * MiB);
	assert_int_equal(fixture_setup(&fs), 0);
	fx = fs;
	assert_int_equal(fixture_open(fx, &spec), 0);
	fx->cfg.cache = RAID_CACHE_LOG;
	fx->cfg.cache_log = strdup(f->path); /* the teardown frees it */
	assert_int_equal(array_cache_open(fx->a, &fx->cfg), -EINVAL);
	assert_non_null(strstr(t_last_error, "needs md superblocks"));
	assert_null(fx->a->cache);
	/* A log with a record, as a crash leaves it. */
	assert_int_equal(clog_open(f->path, t_uuid_a, fx->a->size, true, false,
				   &l, why, sizeof(why)),
			 0);
	assert_int_equal(clog_append(l, CLOG_WRITE, 0, BLK, a, &lsn), 0);
	assert_int_equal(clog_sync(l, lsn), 0);
	clog_close(l);
	fx->cfg.cache = RAID_CACHE_RAM;
	fx->cfg.cache_size = 1 * MiB;
	assert_int_equal(array_cache_open(fx->a, &fx->cfg), -EBUSY);
	assert_non_null(strstr(t_last_error, "holds writes"));
	assert_non_null(strstr(t_last_error, f->path));
	assert_int_equal(log_records(f), 1);
	fx->cfg.cache = RAID_CACHE_NONE;
	assert_int_equal(array_cache_open(fx->a, &fx->cfg), -EBUSY);
	fx->cfg.force = true;
	assert_int_equal(array_cache_open(fx->a, &fx->cfg), 0);
	assert_non_null(strstr(t_last_error, "dropped"));
	assert_int_equal(log_records(f), 0);
	fx->cfg.force = false;
	assert_int_equal(array_cache_open(fx->a, &fx->cfg), 0);
	fixture_teardown(&fs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_logmode_crash_keeps_flushed_and_fua, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_log_full_writers_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_retire_only_after_device_flush, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_retire_keeps_record_cached_late, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_torn_last_record_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_failing_log_goes_writethrough, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_failed_log_and_device, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_failed_log_and_device_crash, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_logmode_other_arrays_log_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logmode_array_rules, setup,
						teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
