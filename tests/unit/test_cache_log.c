/*
 * test_cache_log.c: the cache's persistent log (src/cache_log.c).
 *
 * A model keeps every record appended and not yet retired (lsn, type,
 * range, a copy of the data); after a close (the log is never retired on
 * close: a close is a crash as far as the log knows) the next open must
 * replay exactly the model's records, byte for byte, in order.  Damage is
 * done to the file itself at the places docs/cache.md gives: a fresh log's
 * records start at 8 KiB, a 4 KiB write takes 8 KiB (its header block and
 * its data).
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <isa-l/crc.h>

#include "cache_log.h"
#include "helpers.h"
#include "logtest.h"

#define KiB	    1024u
#define MiB	    (1024u * 1024u)
#define ARRAY_BYTES (256ull * MiB)
#define REC0	    (8 * KiB) /* the first record of a fresh log */
#define REC4K	    (8 * KiB) /* a 4 KiB write's header and data */

struct fx {
	char dir[64];
	char path[96]; /* the log */
	char why[512];
	int loop_fd; /* a loop device attached by the case, or -1 */
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	t_reset();
	assert_non_null(f);
	t_scratch_dir(f->dir, sizeof(f->dir), "/tmp", "nbdraid-clog");
	snprintf(f->path, sizeof(f->path), "%s/log", f->dir);
	f->loop_fd = -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	if (f->loop_fd >= 0) {
		ioctl(f->loop_fd, LOOP_CLR_FD, 0);
		close(f->loop_fd);
	}
	t_scratch_remove(f->dir);
	free(f);
	clog_sync_hook = NULL;
	clog_seq_lease = 1u << 20;
	return 0;
}

/* Flip a byte of the file (damage). */
static void
flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x5a;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

/* Zero len bytes of the file at off (a write that never landed). */
static void
zero(const char *path, uint64_t off, size_t len)
{
	int fd = open(path, O_RDWR);
	uint8_t *z = calloc(1, len);

	assert_true(fd >= 0 && z);
	assert_int_equal(pwrite(fd, z, len, (off_t)off), (ssize_t)len);
	free(z);
	close(fd);
}

/* clog_open of the fixture's log, its message in f->why. */
static int
try_open(struct fx *f, const uint8_t *uuid, uint64_t array_bytes, bool create,
	 bool force, struct clog **l)
{
	return clog_open(f->path, uuid, array_bytes, create, force, l, f->why,
			 sizeof(f->why));
}

static struct clog *
open_log(struct fx *f, bool create)
{
	struct clog *l = NULL;
	int r = try_open(f, t_uuid_a, ARRAY_BYTES, create, false, &l);

	if (r) {
		fprintf(stderr, "clog_open: %d: %s\n", r, f->why);
	}
	assert_int_equal(r, 0);
	return l;
}

static struct clog *
new_log(struct fx *f, uint64_t size)
{
	t_mk_file(f->path, size);
	return open_log(f, true);
}

/* ---- the model ---- */

struct mrec {
	uint64_t lsn, offset;
	uint32_t type, len;
	uint8_t *data;
};

struct model {
	struct mrec *r;
	size_t n, cap, first; /* r[first, n): not retired */
};

static void
m_add(struct model *m, uint64_t lsn, uint32_t type, uint64_t offset,
      uint32_t len, const void *data)
{
	struct mrec *r;

	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->r = realloc(m->r, m->cap * sizeof(*m->r));
		assert_non_null(m->r);
	}
	r = &m->r[m->n++];
	*r = (struct mrec){ lsn, offset, type, len, NULL };
	if (data) {
		r->data = malloc(len);
		assert_non_null(r->data);
		memcpy(r->data, data, len);
	}
	if (m->n > 1) {
		assert_true(lsn > m->r[m->n - 2].lsn);
	}
}

static void
m_retire(struct model *m, uint64_t lsn)
{
	while (m->first < m->n && m->r[m->first].lsn <= lsn) {
		free(m->r[m->first].data);
		m->r[m->first++].data = NULL;
	}
}

/* Drop the model's records from n on (they did not survive). */
static void
m_truncate(struct model *m, size_t n)
{
	while (m->n > n) {
		free(m->r[--m->n].data);
	}
}

static void
m_free(struct model *m)
{
	m_retire(m, UINT64_MAX);
	free(m->r);
}

static uint64_t
m_last(const struct model *m)
{
	return m->n ? m->r[m->n - 1].lsn : 0;
}

/* Append a record, random unless told: in the model too. */
static int
m_append(struct clog *l, struct model *m, uint32_t type, uint64_t offset,
	 uint32_t len)
{
	uint8_t *data = NULL;
	uint64_t lsn = 0;
	int r;

	if (type == CLOG_WRITE) {
		data = malloc(len);
		assert_non_null(data);
		t_fill_random(data, len);
	}
	r = clog_append(l, type, offset, len, data, &lsn);
	if (r == 0) {
		m_add(m, lsn, type, offset, len, data);
	}
	free(data);
	return r;
}

static int
m_append_random(struct clog *l, struct model *m, uint32_t maxlen)
{
	uint32_t type = t_rand(10) < 8 ? CLOG_WRITE : CLOG_ZERO + t_rand(2);
	uint32_t len = 1 + t_rand(maxlen);

	return m_append(l, m, type, t_rand(ARRAY_BYTES - len + 1), len);
}

struct replay_check {
	const struct model *m;
	size_t i;
};

static int
check_fn(void *ctx, const struct clog_rec *r)
{
	struct replay_check *c = ctx;
	const struct mrec *w;

	assert_true(c->m->first + c->i < c->m->n);
	w = &c->m->r[c->m->first + c->i++];
	assert_int_equal(r->lsn, w->lsn);
	assert_int_equal(r->type, w->type);
	assert_int_equal(r->offset, w->offset);
	assert_int_equal(r->len, w->len);
	if (w->type == CLOG_WRITE) {
		assert_memory_equal(r->data, w->data, w->len);
	} else {
		assert_null(r->data);
	}
	return 0;
}

/* The log replays exactly the model's records not retired. */
static void
replay_expect(struct clog *l, const struct model *m)
{
	struct replay_check c = { m, 0 };

	assert_int_equal(clog_replay(l, check_fn, &c), m->n - m->first);
	assert_int_equal(c.i, m->n - m->first);
}

static int
examine(struct fx *f, struct clog_info *info)
{
	return clog_examine(f->path, info, f->why, sizeof(f->why));
}

/* Close (a crash: nothing retired) and open again. */
static struct clog *
reopen(struct fx *f, struct clog *l)
{
	clog_close(l);
	return open_log(f, false);
}

/* ---- cases ---- */

/* Appended records (writes of any length, zeros, trims) replay exactly. */
static void
test_cache_log_round_trip(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 16 * MiB);
	struct model m = { 0 };
	struct clog_info info;
	uint64_t data = 0;

	replay_expect(l, &m);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(m_append_random(l, &m, 20000), 0);
		if (t_rand(8) == 0) {
			assert_int_equal(clog_sync(l, m_last(&m)), 0);
		}
	}
	/* Exactly 4 KiB, aligned and not, one byte; the array's last byte. */
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), 0);
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 4097, 4096), 0);
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 12345, 1), 0);
	assert_int_equal(m_append(l, &m, CLOG_TRIM, ARRAY_BYTES - 1, 1), 0);
	assert_int_equal(clog_sync(l, m_last(&m)), 0);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);

	assert_int_equal(examine(f, &info), 0);
	for (size_t i = 0; i < m.n; i++) {
		data += m.r[i].type == CLOG_WRITE ? m.r[i].len : 0;
	}
	assert_int_equal(info.records, m.n);
	assert_int_equal(info.data_bytes, data);
	assert_int_equal(info.first_lsn, m.r[0].lsn);
	assert_int_equal(info.last_lsn, m_last(&m));
	assert_memory_equal(info.array_uuid, t_uuid_a, 16);
	m_free(&m);
}

/* Bad requests: refused, nothing written. */
static void
test_cache_log_append_refuses(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 2 * MiB);
	struct model m = { 0 };
	uint8_t buf[16] = { 0 };
	uint64_t lsn;

	assert_int_equal(clog_append(l, CLOG_WRITE, 0, 0, buf, &lsn), -EINVAL);
	assert_int_equal(clog_append(l, 9, 0, 1, buf, &lsn), -EINVAL);
	assert_int_equal(clog_append(l, CLOG_WRITE, 0, 1, NULL, &lsn), -EINVAL);
	assert_int_equal(
		clog_append(l, CLOG_WRITE, ARRAY_BYTES - 8, 16, buf, &lsn),
		-EINVAL);
	assert_int_equal(
		clog_append(l, CLOG_WRITE, 0, clog_max_len(l) + 1, buf, &lsn),
		-EINVAL);
	/* A zero or trim carries no data: any length within the array. */
	assert_int_equal(m_append(l, &m, CLOG_ZERO, 0, 64 * MiB), 0);
	/* A sequence number never handed out. */
	assert_int_equal(clog_sync(l, m_last(&m) + 1000), -EINVAL);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);
	m_free(&m);
}

#define THREADS	   4
#define PER_THREAD 150

struct appender {
	struct clog *l;
	pthread_barrier_t *go;
	unsigned id;
	uint64_t lsn[PER_THREAD];
};

/* Thread t's record i: its own offset, a length and bytes from (t, i). */
static uint32_t
thr_len(unsigned t, unsigned i)
{
	return 1 + (t * 7919 + i * 104729) % 12000;
}

static uint64_t
thr_off(unsigned t, unsigned i)
{
	return (uint64_t)(t * PER_THREAD + i) * 16 * KiB;
}

static void
thr_fill(uint8_t *p, unsigned t, unsigned i, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++) {
		p[k] = (uint8_t)(t * 31 + i * 7 + k * 13);
	}
}

static void *
appender(void *arg)
{
	struct appender *a = arg;
	uint8_t *buf = malloc(12000);

	pthread_barrier_wait(a->go);
	for (unsigned i = 0; i < PER_THREAD; i++) {
		uint32_t len = thr_len(a->id, i);

		thr_fill(buf, a->id, i, len);
		if (clog_append(a->l, CLOG_WRITE, thr_off(a->id, i), len, buf,
				&a->lsn[i]) != 0) {
			a->lsn[i] = 0;
		}
		if (i % 10 == 9 && clog_sync(a->l, a->lsn[i]) != 0) {
			a->lsn[i] = 0;
		}
	}
	free(buf);
	return NULL;
}

struct concurrent_check {
	struct appender *a;
	uint64_t last;
	unsigned count;
	bool seen[THREADS][PER_THREAD];
};

static int
concurrent_fn(void *ctx, const struct clog_rec *r)
{
	struct concurrent_check *c = ctx;
	uint64_t slot = r->offset / (16 * KiB);
	unsigned t = slot / PER_THREAD, i = slot % PER_THREAD;
	uint8_t want[12000];

	assert_true(r->lsn > c->last);
	c->last = r->lsn;
	assert_true(t < THREADS);
	assert_false(c->seen[t][i]);
	c->seen[t][i] = true;
	assert_int_equal(r->offset, thr_off(t, i));
	assert_int_equal(r->len, thr_len(t, i));
	assert_int_equal(r->lsn, c->a[t].lsn[i]);
	thr_fill(want, t, i, r->len);
	assert_memory_equal(r->data, want, r->len);
	c->count++;
	return 0;
}

/* Threads appending at once: every record replays once, in lsn order. */
static void
test_cache_log_concurrent_appenders(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 32 * MiB);
	struct appender a[THREADS];
	pthread_t th[THREADS];
	pthread_barrier_t go;
	struct concurrent_check *c = calloc(1, sizeof(*c));
	uint64_t max = 0;

	pthread_barrier_init(&go, NULL, THREADS);
	for (unsigned t = 0; t < THREADS; t++) {
		a[t] = (struct appender){ .l = l, .go = &go, .id = t };
		assert_int_equal(pthread_create(&th[t], NULL, appender, &a[t]),
				 0);
	}
	for (unsigned t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		for (unsigned i = 0; i < PER_THREAD; i++) {
			assert_true(a[t].lsn[i] != 0);
			max = a[t].lsn[i] > max ? a[t].lsn[i] : max;
		}
	}
	pthread_barrier_destroy(&go);
	assert_int_equal(clog_sync(l, max), 0);
	l = reopen(f, l);
	c->a = a;
	assert_int_equal(clog_replay(l, concurrent_fn, c),
			 THREADS * PER_THREAD);
	assert_int_equal(c->count, THREADS * PER_THREAD);
	clog_close(l);
	free(c);
}

/* 10 writes of 4 KiB into a fresh log, synced; then the log is closed. */
static void
ten_writes(struct fx *f, struct model *m)
{
	struct clog *l = new_log(f, 4 * MiB);

	for (int i = 0; i < 10; i++) {
		assert_int_equal(m_append(l, m, CLOG_WRITE, i * 8192, 4096), 0);
	}
	assert_int_equal(clog_sync(l, m_last(m)), 0);
	clog_close(l);
}

/* The log, damaged: an open replays the model's first n records only. */
static void
replays_first(struct fx *f, struct model *m, size_t n)
{
	struct clog *l;

	m_truncate(m, n);
	l = open_log(f, false);
	replay_expect(l, m);
	clog_close(l);
	m_free(m);
}

/* A torn last record (data never landed, or a byte wrong): ignored. */
static void
test_cache_log_torn_last_record(void **state)
{
	struct fx *f = *state;
	struct model m = { 0 };
	struct clog *l;

	ten_writes(f, &m);
	/* The last record's data block, as if its write was cut short. */
	zero(f->path, REC0 + 9 * REC4K + 4096 + 2048, 2048);
	m_truncate(&m, 9);
	l = open_log(f, false);
	replay_expect(l, &m);
	/* New records continue after the torn one, past a sequence gap. */
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 7, 5000), 0);
	assert_int_equal(m_append(l, &m, CLOG_TRIM, 8 * MiB, MiB), 0);
	assert_true(m.r[9].lsn > m.r[8].lsn + 1);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);
	m_free(&m);

	/* A wrong byte in the last record's header. */
	memset(&m, 0, sizeof(m));
	ten_writes(f, &m);
	flip(f->path, REC0 + 9 * REC4K + 40);
	replays_first(f, &m, 9);
}

/* A bad record in the middle ends the replay there. */
static void
test_cache_log_corrupt_middle_stops(void **state)
{
	struct fx *f = *state;
	struct model m = { 0 };

	ten_writes(f, &m);
	flip(f->path, REC0 + 4 * REC4K + 4096 + 100); /* record 5's data */
	replays_first(f, &m, 4);
}

/* Many laps round a small log with retires; each reopen replays exactly
 * the records not retired, never a stale one from an earlier lap. */
static void
test_cache_log_wrap_laps(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 1 * MiB);
	struct model m = { 0 };
	uint64_t used, total, appended = 0, lsn;
	unsigned reopens = 0;

	clog_space(l, &used, &total);
	assert_int_equal(used, 0);
	assert_int_equal(total, 1 * MiB - 8 * KiB);
	for (int i = 0; i < 3000; i++) {
		int r;

		while ((r = m_append_random(l, &m, 40000)) == -ENOSPC) {
			/* Retire the older half (or all) of what is there. */
			size_t n = m.n - m.first, keep = t_rand(2) ? 0 : n / 2;

			assert_true(n > 0); /* an empty log takes any record */
			lsn = m.r[m.n - 1 - keep].lsn;
			assert_int_equal(clog_retire(l, lsn), 0);
			m_retire(&m, lsn);
		}
		assert_int_equal(r, 0);
		appended +=
			m.r[m.n - 1].type == CLOG_WRITE
				? 4096 + (m.r[m.n - 1].len + 4095) / 4096 * 4096
				: 4096;
		if (i % 250 == 249) {
			l = reopen(f, l);
			replay_expect(l, &m);
			reopens++;
		}
	}
	assert_true(appended / total >= 20); /* laps */
	assert_int_equal(reopens, 12);
	assert_int_equal(clog_retire(l, CLOG_ALL), 0);
	m_retire(&m, UINT64_MAX);
	clog_space(l, &used, &total);
	assert_int_equal(used, 0);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);
	m_free(&m);
}

/* Stale records after the head (a torn first record left them there),
 * with leases of 4 sequence numbers: the next run's records follow the
 * checkpoint, never them, over two crashes in a row. */
static void
test_cache_log_stale_after_head(void **state)
{
	struct fx *f = *state;
	struct model m = { 0 }, old = { 0 };
	struct clog *l;
	uint64_t b1;

	clog_seq_lease = 4;
	ten_writes(f, &old);
	flip(f->path, REC0 + 4096 + 1); /* the first record: torn */
	l = open_log(f, false);
	replay_expect(l, &m); /* nothing: the 9 valid ones are stale */
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), 0);
	assert_true(m.r[0].lsn > m_last(&old));
	l = reopen(f, l);
	replay_expect(l, &m); /* exactly the new one */
	clog_close(l);

	/* Torn again, at the same place: the records after it are stale. */
	flip(f->path, REC0 + 4096 + 1);
	l = open_log(f, false);
	b1 = m.r[0].lsn;
	m_free(&m);
	memset(&m, 0, sizeof(m));
	replay_expect(l, &m);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(m_append(l, &m, CLOG_WRITE, i * 4096, 4096),
				 0);
	}
	assert_true(m.r[0].lsn > b1);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);
	m_free(&m);
	m_free(&old);
}

/* A full log says -ENOSPC; retiring gives the space back. */
static void
test_cache_log_enospc_and_retire(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 1 * MiB);
	struct model m = { 0 };
	uint64_t used, total;
	int n = 0;

	/* (1 MiB - 8 KiB) / 8 KiB = 127 records of 4 KiB. */
	while (m_append(l, &m, CLOG_WRITE, n * 4096ull, 4096) == 0) {
		n++;
	}
	assert_int_equal(n, 127);
	assert_int_equal(m_append(l, &m, CLOG_ZERO, 0, 1), -ENOSPC);
	clog_space(l, &used, &total);
	assert_int_equal(used, total);
	assert_int_equal(clog_retire(l, m.r[9].lsn), 0);
	m_retire(&m, m.r[9].lsn);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(m_append(l, &m, CLOG_WRITE, i * 4096ull, 4096),
				 0);
	}
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), -ENOSPC);
	/* Full across the wrap, after a reopen too. */
	l = reopen(f, l);
	replay_expect(l, &m);
	assert_int_equal(m_append(l, &m, CLOG_TRIM, 0, 4096), -ENOSPC);
	assert_int_equal(clog_retire(l, CLOG_ALL), 0);
	m_retire(&m, UINT64_MAX);
	clog_space(l, &used, &total);
	assert_int_equal(used, 0);
	clog_close(l);
	m_free(&m);
}

/* An empty log takes the longest record wherever its head is. */
static void
test_cache_log_empty_takes_max_len(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 1 * MiB);
	struct model m = { 0 };
	uint32_t max = clog_max_len(l);

	assert_true(max >= 256 * KiB);
	for (int i = 0; i < 60; i++) {
		uint32_t small = 1 + t_rand(64 * KiB);

		assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, small), 0);
		assert_int_equal(clog_retire(l, CLOG_ALL), 0);
		m_retire(&m, UINT64_MAX);
		assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, max), 0);
		assert_int_equal(clog_retire(l, CLOG_ALL), 0);
		m_retire(&m, UINT64_MAX);
	}
	clog_close(l);
	m_free(&m);
}

/* Another array's log, not a log, too small, in use: refused, why says. */
static void
test_cache_log_refusals(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 2 * MiB), *l2 = NULL;
	struct model m = { 0 };
	uint8_t uuid[16];
	bool has;

	/* In use: a second open of the same log. */
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, false, &l2),
			 -EBUSY);
	assert_non_null(strstr(f->why, f->path));
	assert_non_null(strstr(f->why, "in use"));
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 100), 0);
	clog_close(l);

	assert_int_equal(clog_peek(f->path, uuid, &has, f->why, sizeof(f->why)),
			 0);
	assert_memory_equal(uuid, t_uuid_a, 16);
	assert_true(has);
	/* Another array: refused, create or not; force formats it. */
	for (int create = 0; create < 2; create++) {
		assert_int_equal(
			try_open(f, t_uuid_b, ARRAY_BYTES, create, false, &l),
			-EEXIST);
		assert_non_null(strstr(f->why, f->path));
		assert_non_null(strstr(f->why, "another array"));
		assert_non_null(strstr(f->why, "a1a2a3a4:a5a6a7a8"));
	}
	assert_non_null(strstr(f->why, "force=true"));
	assert_int_equal(try_open(f, t_uuid_b, ARRAY_BYTES, false, true, &l),
			 -EEXIST);
	assert_int_equal(try_open(f, t_uuid_b, ARRAY_BYTES, true, true, &l), 0);
	replay_expect(l, &(struct model){ 0 });
	clog_close(l);
	assert_int_equal(clog_peek(f->path, uuid, &has, f->why, sizeof(f->why)),
			 0);
	assert_memory_equal(uuid, t_uuid_b, 16);
	assert_false(has);

	/* Records past a smaller array: refused. */
	m_free(&m);
	memset(&m, 0, sizeof(m));
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, true, &l), 0);
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 200 * MiB, 100), 0);
	clog_close(l);
	assert_int_equal(try_open(f, t_uuid_a, 100 * MiB, false, false, &l),
			 -EINVAL);
	assert_non_null(strstr(f->why, "array byte 209715300"));
	m_free(&m);

	/* Not a log; too small. */
	t_mk_file(f->path, 2 * MiB);
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, false, false, &l),
			 -EINVAL);
	assert_non_null(strstr(f->why, "not an nbdraid cache log"));
	assert_int_equal(clog_peek(f->path, uuid, &has, f->why, sizeof(f->why)),
			 -EINVAL);
	t_mk_file(f->path, 512 * KiB);
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, false, &l),
			 -EINVAL);
	assert_non_null(strstr(f->why, "too small"));
	assert_non_null(strstr(f->why, f->path));
}

/* A filesystem on the path: not formatted over unless forced. */
static void
test_cache_log_refuses_filesystem(void **state)
{
	struct fx *f = *state;
	struct clog *l = NULL;
	char cmd[256];

	t_mk_file(f->path, 2 * MiB);
	snprintf(cmd, sizeof(cmd), "mkswap %s >/dev/null 2>&1", f->path);
	if (system(cmd) != 0) {
		skip();
	}
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, false, &l),
			 -EEXIST);
	assert_non_null(strstr(f->why, "holds swap"));
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, true, &l), 0);
	clog_close(l);
}

/* Where the next record goes in a log of `end` bytes (docs/cache.md:
 * contiguous from 8 KiB; one that would cross the end starts at 8 KiB). */
static uint64_t
place(uint64_t *head, uint64_t end, const struct mrec *r)
{
	uint64_t size = r->type == CLOG_WRITE
				? 4096 + (r->len + 4095) / 4096 * 4096
				: 4096;
	uint64_t pos = *head + size > end ? REC0 : *head;

	*head = pos + size == end ? REC0 : pos + size;
	return pos;
}

static void
copy_file(const char *from, const char *to)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
	assert_int_equal(system(cmd), 0);
}

/* Damage one byte or one 512-byte sector anywhere in a record the crc
 * covers, at any place round the circle: replay ends just before it. */
static void
test_cache_log_damage_anywhere(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 1 * MiB), *c;
	struct model m = { 0 };
	uint64_t *pos = NULL, head = REC0;
	char copy[96], saved[96];

	snprintf(copy, sizeof(copy), "%s/copy", f->dir);
	for (int round = 0; round < 60; round++) {
		size_t n, j;
		uint64_t at;
		struct model before;

		for (int k = 1 + t_rand(6); k > 0; k--) {
			while (m_append_random(l, &m, 30000) == -ENOSPC) {
				uint64_t lsn =
					m.r[m.first + t_rand(m.n - m.first)]
						.lsn;

				assert_int_equal(clog_retire(l, lsn), 0);
				m_retire(&m, lsn);
			}
			pos = realloc(pos, m.n * sizeof(*pos));
			pos[m.n - 1] = place(&head, 1 * MiB, &m.r[m.n - 1]);
		}
		n = m.n - m.first;
		j = m.first + t_rand(n);
		copy_file(f->path, copy);
		/* In the header's 128 bytes, or in the data's len bytes. */
		if (m.r[j].type != CLOG_WRITE || t_rand(2)) {
			at = pos[j] + t_rand(128);
		} else {
			at = pos[j] + 4096 + t_rand(m.r[j].len);
		}
		if (t_rand(2)) {
			flip(copy, at);
		} else {
			zero(copy, at & ~511ull, 512);
		}
		before = m;
		before.n = j;
		snprintf(saved, sizeof(saved), "%s", f->path);
		snprintf(f->path, sizeof(f->path), "%s", copy);
		c = open_log(f, false);
		replay_expect(c, &before);
		clog_close(c);
		snprintf(f->path, sizeof(f->path), "%s", saved);
	}
	clog_close(l);
	free(pos);
	m_free(&m);
}

/* A torn write of the newer header slot: the other one's checkpoint is
 * used, and the records after it replay. */
static void
test_cache_log_header_slot_torn(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 2 * MiB);
	struct model m = { 0 }, from1 = { 0 };
	struct clog_info info;

	for (int i = 0; i < 6; i++) {
		assert_int_equal(m_append(l, &m, CLOG_WRITE, i * 4096, 4096),
				 0);
	}
	assert_int_equal(clog_retire(l, m.r[1].lsn), 0);
	assert_int_equal(clog_retire(l, m.r[3].lsn), 0);
	clog_close(l);
	assert_int_equal(examine(f, &info), 0);
	assert_true(info.other_slot_valid);
	assert_int_equal(info.records, 2);
	assert_int_equal(info.tail, REC0 + 4 * REC4K);

	/* Half of the newer slot's header never landed. */
	zero(f->path, info.slot * 4096 + 64, 64);
	from1 = m;
	m_retire(&from1, m.r[1].lsn);
	l = open_log(f, false);
	replay_expect(l, &from1);
	clog_close(l);
	assert_int_equal(examine(f, &info), 0);
	assert_int_equal(info.records, 4);

	/* Both slots damaged: refused, and formatted only when forced. */
	flip(f->path, 100);
	flip(f->path, 4096 + 100);
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, false, &l),
			 -EINVAL);
	assert_non_null(strstr(f->why, "damaged"));
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, true, &l), 0);
	replay_expect(l, &(struct model){ 0 });
	clog_close(l);
	m_free(&from1);
}

/* ---- crafted headers (issue 25 #12) ---- */

/* The whole file, to prove a refusal wrote nothing. */
static uint8_t *
slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	b = malloc(st.st_size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, st.st_size, 0), st.st_size);
	close(fd);
	*len = st.st_size;
	return b;
}

/* Set a field (w bytes, little-endian) of header slot `slot` and give the
 * slot a good checksum again: a header as nbdraid would have written it,
 * but with that value. */
static void
craft(const char *path, unsigned slot, unsigned at, unsigned w, uint64_t v)
{
	uint8_t h[128];
	uint32_t crc;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, 128, slot * 4096), 128);
	for (unsigned i = 0; i < w; i++) {
		h[at + i] = (uint8_t)(v >> (8 * i));
	}
	memset(h + 4, 0, 4);
	crc = ~crc32_iscsi(h, 128, ~0u);
	for (unsigned i = 0; i < 4; i++) {
		h[4 + i] = (uint8_t)(crc >> (8 * i));
	}
	assert_int_equal(pwrite(fd, h, 128, slot * 4096), 128);
	close(fd);
}

/* Open killed by SIGALRM if it hangs (the bug: a header write forever). */
static void
on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "clog_open or an append hung\n");
	_exit(3);
}

struct crafted {
	const char *field; /* in the message */
	unsigned slot, at, w;
	uint64_t v;
};

/*
 * Every header field out of range, or the two slots not two writes of one
 * log, each with a good checksum: refused at once by open (create or
 * not), peek and examine, naming the path and the field; the file not
 * changed by a byte.  (Before: a slot with such a field was skipped for
 * the other one, or taken: a seq_limit near 2^64 made the first append
 * rewrite the header forever, a generation near 2^64 wrapped to 0 and an
 * older checkpoint won at the next open.)
 */
static void
test_cache_log_crafted_header_refused(void **state)
{
	struct fx *f = *state;
	/* After format (generations 0, 1) and one open: slot 0 holds
	 * generation 2, the newer; slot 1 generation 1. */
	const struct crafted cases[] = {
		{ "seq_limit", 0, 88, 8, UINT64_MAX - 5 },
		{ "seq_limit", 0, 88, 8, (1ull << 62) + 1 },
		{ "seq_limit", 0, 88, 8, 0 },
		{ "seq_limit", 1, 88, 8, UINT64_MAX },
		{ "generation", 0, 64, 8, UINT64_MAX - 1 },
		{ "generation", 0, 64, 8, 3 },
		{ "generation", 1, 64, 8, 7 },
		{ "log_bytes", 0, 56, 8, 1ull << 63 },
		{ "log_bytes", 0, 56, 8, 2 * MiB + 512 },
		{ "log_bytes", 0, 56, 8, 512 * KiB },
		{ "log_bytes", 1, 56, 8, 1 * MiB },
		{ "array_size", 0, 48, 8, 0 },
		{ "array_size", 0, 48, 8, UINT64_MAX },
		{ "tail", 0, 72, 8, 4096 },
		{ "tail", 0, 72, 8, 2 * MiB },
		{ "tail", 0, 72, 8, 3 * 4096 + 512 },
		{ "tail", 0, 72, 8, UINT64_MAX - 4095 },
		{ "tail_prev", 0, 80, 8, UINT64_MAX },
		{ "version", 0, 8, 4, 2 },
		{ "block", 0, 12, 4, 512 },
		{ "reserved", 0, 120, 1, 1 },
		{ "log_uuid", 1, 32, 1, 0xee },
		{ "array_uuid", 1, 16, 1, 0xee },
	};
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct model one = { 0 };
	char saved[96];
	struct clog *l;

	snprintf(saved, sizeof(saved), "%s/good", f->dir);
	l = new_log(f, 2 * MiB);
	assert_int_equal(m_append(l, &one, CLOG_WRITE, 0, 4096), 0);
	clog_close(l);
	m_free(&one);
	copy_file(f->path, saved);
	sigaction(SIGALRM, &sa, &old);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct crafted *c = &cases[i];
		size_t n0, n1;
		uint8_t *before, *after, uuid[16];
		struct clog_info info;
		bool has;

		copy_file(saved, f->path);
		craft(f->path, c->slot, c->at, c->w, c->v);
		before = slurp(f->path, &n0);
		alarm(10);
		for (int create = 0; create < 2; create++) {
			l = NULL;
			assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES,
						  create, false, &l),
					 -EINVAL);
			assert_null(l);
			if (!strstr(f->why, c->field) ||
			    !strstr(f->why, f->path)) {
				fail_msg("case %zu (%s): %s", i, c->field,
					 f->why);
			}
		}
		assert_int_equal(
			clog_peek(f->path, uuid, &has, f->why, sizeof(f->why)),
			-EINVAL);
		assert_int_equal(examine(f, &info), -EINVAL);
		assert_non_null(strstr(f->why, c->field));
		alarm(0);
		after = slurp(f->path, &n1);
		assert_int_equal(n0, n1);
		assert_memory_equal(before, after, n0);
		free(before);
		free(after);
	}
	sigaction(SIGALRM, &old, NULL);
	/* force=true formats over it, as over any damaged header. */
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, true, true, &l), 0);
	replay_expect(l, &(struct model){ 0 });
	clog_close(l);
}

/* The largest seq_limit a header may hold still opens, appends and syncs
 * at once; the one past it is refused. */
static void
test_cache_log_seq_limit_edge(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 2 * MiB);
	struct model m = { 0 };

	clog_close(l);
	craft(f->path, 0, 88, 8, (1ull << 62) - (2u << 20) - 2);
	craft(f->path, 0, 80, 8, 0);
	alarm(10);
	l = open_log(f, false);
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), 0);
	assert_int_equal(clog_sync(l, m_last(&m)), 0);
	clog_close(l);
	l = open_log(f, false); /* leases up to 2^62 - 2 */
	replay_expect(l, &m);
	clog_close(l);
	/* The next would lease past 2^62: the next is refused, unchanged. */
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, false, false, &l),
			 -EINVAL);
	assert_non_null(strstr(f->why, "seq_limit"));
	alarm(0);
	m_free(&m);
}

/* A generation at the bound opens; the header is never written past it
 * (the fuzzer's find: one write more made a log no open would read). */
static void
test_cache_log_generation_edge(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 2 * MiB);
	struct model m = { 0 };
	struct clog_info info;

	clog_close(l);
	craft(f->path, 0, 64, 8, (1ull << 62) - 2);
	craft(f->path, 1, 64, 8, (1ull << 62) - 3);
	l = open_log(f, false); /* writes 2^62 - 1 */
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), 0);
	assert_int_equal(clog_retire(l, CLOG_ALL), 0); /* writes 2^62 */
	m_retire(&m, UINT64_MAX);
	assert_int_equal(m_append(l, &m, CLOG_WRITE, 0, 4096), 0);
	assert_int_equal(clog_retire(l, CLOG_ALL), -EOVERFLOW);
	clog_close(l);
	assert_int_equal(examine(f, &info), 0);
	assert_int_equal(info.generation, 1ull << 62);
	assert_int_equal(info.records, 1);
	assert_int_equal(try_open(f, t_uuid_a, ARRAY_BYTES, false, false, &l),
			 -EOVERFLOW);
	assert_non_null(strstr(f->why, f->path));
	m_free(&m);
}

#define SYNCERS 6

/* The leader waits for every other syncer to be waiting on it. */
static void
hold_leader(struct clog *l)
{
	struct clog_stats st;
	const struct timespec ms = { 0, 1000000 };

	for (;;) {
		clog_stats(l, &st);
		if (st.sync_waiters == SYNCERS - 1) {
			return;
		}
		nanosleep(&ms, NULL);
	}
}

struct syncer {
	struct clog *l;
	uint64_t lsn;
	int r;
};

static void *
syncer(void *arg)
{
	struct syncer *s = arg;

	s->r = clog_sync(s->l, s->lsn);
	return NULL;
}

/* Syncs arriving while one runs share it: N callers, one fdatasync. */
static void
test_cache_log_group_commit(void **state)
{
	struct fx *f = *state;
	struct clog *l = new_log(f, 4 * MiB);
	struct model m = { 0 };
	struct syncer s[SYNCERS];
	pthread_t th[SYNCERS];
	struct clog_stats st;

	for (int i = 0; i < SYNCERS; i++) {
		assert_int_equal(m_append(l, &m, CLOG_WRITE, i * 4096, 4096),
				 0);
	}
	clog_sync_hook = hold_leader;
	for (int i = 0; i < SYNCERS; i++) {
		s[i] = (struct syncer){ l, m.r[i].lsn, 1 };
		pthread_create(&th[i], NULL, syncer, &s[i]);
	}
	for (int i = 0; i < SYNCERS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(s[i].r, 0);
	}
	clog_sync_hook = NULL;
	clog_stats(l, &st);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(st.durable_lsn, m_last(&m));

	/* Durable already: no sync.  One sync per record synced alone. */
	assert_int_equal(clog_sync(l, m.r[2].lsn), 0);
	assert_int_equal(clog_sync(l, CLOG_ALL), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(m_append(l, &m, CLOG_ZERO, 0, 4096), 0);
		assert_int_equal(clog_sync(l, i == 2 ? CLOG_ALL : m_last(&m)),
				 0);
	}
	clog_stats(l, &st);
	assert_int_equal(st.syncs, 4);
	assert_int_equal(st.durable_lsn, m_last(&m));
	clog_close(l);
	m_free(&m);
}

/* A block device (a loop device): O_DIRECT, O_EXCL, buffers and lengths
 * not aligned, replayed exactly.  Needs root; skipped otherwise. */
static void
test_cache_log_block_device(void **state)
{
	struct fx *f = *state;
	char backing[128], dev[32];
	struct clog *l = NULL, *l2 = NULL;
	struct model m = { 0 };
	struct loop_info64 info = { .lo_flags = LO_FLAGS_AUTOCLEAR };
	uint8_t *buf = malloc(3 * 4096 + 1);
	int ctl, nr, bfd, lfd = -1;

	snprintf(backing, sizeof(backing), "%s/backing", f->dir);
	t_mk_file(backing, 3 * MiB);
	ctl = open("/dev/loop-control", O_RDWR);
	nr = ctl >= 0 ? ioctl(ctl, LOOP_CTL_GET_FREE) : -1;
	bfd = open(backing, O_RDWR);
	snprintf(dev, sizeof(dev), "/dev/loop%d", nr);
	if (nr >= 0) {
		lfd = open(dev, O_RDWR);
	}
	if (lfd < 0 || ioctl(lfd, LOOP_SET_FD, bfd) < 0) {
		if (lfd >= 0) {
			close(lfd);
		}
		close(bfd);
		if (ctl >= 0) {
			close(ctl);
		}
		free(buf);
		skip();
	}
	f->loop_fd = lfd;
	/* Gone with its last close, should the test die. */
	ioctl(lfd, LOOP_SET_STATUS64, &info);
	close(bfd);
	close(ctl);
	snprintf(f->path, sizeof(f->path), "%s", dev);
	l = open_log(f, true);
	assert_int_equal(clog_open(dev, t_uuid_a, ARRAY_BYTES, true, false, &l2,
				   f->why, sizeof(f->why)),
			 -EBUSY);
	for (int i = 0; i < 40; i++) {
		uint32_t len = 1 + t_rand(3 * 4096);
		uint64_t lsn;
		uint8_t *p = buf + (i % 2); /* aligned or not */

		t_fill_random(p, len);
		if (i % 4 == 0) {
			len = 4096;
		}
		assert_int_equal(
			clog_append(l, CLOG_WRITE, i * 65536ull, len, p, &lsn),
			0);
		m_add(&m, lsn, CLOG_WRITE, i * 65536ull, len, p);
	}
	assert_int_equal(clog_sync(l, m_last(&m)), 0);
	l = reopen(f, l);
	replay_expect(l, &m);
	clog_close(l);
	snprintf(f->path, sizeof(f->path), "%s/log", f->dir);
	free(buf);
	m_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cache_log_round_trip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_append_refuses,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_concurrent_appenders, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_torn_last_record,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_corrupt_middle_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_wrap_laps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_stale_after_head,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_enospc_and_retire, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_empty_takes_max_len, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_refusals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_refuses_filesystem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_damage_anywhere,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_header_slot_torn,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_group_commit,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_cache_log_crafted_header_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_seq_limit_edge,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_generation_edge,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_log_block_device,
						setup, teardown),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
