/*
 * cache_readahead.c: read-ahead for sequential readers (docs/cache.md,
 * "Read-ahead"; the coherence rules are with cache_ra_fill in cache.c).
 *
 * DESIGN
 * Reads are followed in a small table of streams, as writes are for the
 * bypass (stream_run in cache.c) but apart from them.  A read that starts
 * near where a stream's furthest read ended (within STREAM_WINDOW reads
 * of its length: a reader with several requests in flight sends them
 * slightly out of order) and ends past that moves the stream on; one that
 * ends before it is a late request of the stream and changes nothing; any
 * other read starts a stream in the least recently used slot.  After
 * RA_TRIGGER reads in a row a stream is sequential, and the cache keeps
 * read-ahead in front of it, ramping up as Linux's readahead does: the
 * first window is four reads' worth (at least RA_INIT_MIN), each next one
 * twice the last, up to cache-readahead; the next window is asked for
 * once less than a window lies read ahead of the reader.  Windows end on
 * unit boundaries where they can, so that they read whole stripes.
 *
 * RA_THREADS workers (started with the write-back thread, after nbdkit
 * forks) read the queued windows, oldest first, into the cache
 * (cache_ra_fill), so the reader that asked is answered without waiting
 * for them; two, so that the members get a stream's next window while
 * the last is copied in (one worker: 1.9x on emulated disks at QD1 with
 * 1M reads, two: 2.5x; docs/cache.md).  A reader missing blocks that a
 * window queued or being read covers waits for it and takes them from
 * the cache, rather than reading them a second time.  A full queue drops
 * the window (the stream asks again on its next read).  Without the
 * workers (unit tests; before the start) the reader reads the window
 * itself, after its own data.
 *
 * Read-ahead hides the members' latency; where they have none (tmpfs, a
 * warm page cache: a read is a copy, on the CPU from start to end) it
 * only adds copies (0.43x at 1M QD1 on tmpfs).  So each window's read is
 * timed, on the clock and in CPU time: one that ran on the CPU for
 * RA_FAST_PCT of its time or more stops its stream's read-ahead, but for
 * a small window (a probe) per RA_PROBE largest windows read, to time the
 * members again; while the last window timed was fast, a new stream
 * starts with a probe too.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cache_int.h"
#include "io/io.h"
#include "log.h"
#include "util.h"

/*
 * The largest window: cache-readahead in whole blocks, at most a
 * sixteenth of the cache (so that what the workers hold never leaves a
 * writer without room: cache_ra_fill).
 */
void
ra_init(struct cache *c, uint64_t max)
{
	uint64_t cap = c->pool.cap * c->block / RA_FRACTION;

	pthread_mutex_init(&c->ra_lock, NULL);
	pthread_cond_init(&c->ra_wake, NULL);
	pthread_cond_init(&c->ra_done, NULL);
	c->ra_max = ROUND_DOWN(MIN(max, cap), c->block);
	if (max && c->ra_max < max) {
		raid_debug("cache: read-ahead windows of %llu bytes at most "
			   "(a sixteenth of the cache)",
			   (unsigned long long)c->ra_max);
	}
}

void
ra_destroy(struct cache *c)
{
	pthread_mutex_destroy(&c->ra_lock);
	pthread_cond_destroy(&c->ra_wake);
	pthread_cond_destroy(&c->ra_done);
}

/* The stream a read of [off, off+len) belongs to, or a new one. */
static struct rstream *
rstream_of(struct cache *c, uint64_t off, uint64_t len)
{
	uint64_t win = STREAM_WINDOW * len;
	struct rstream *old = &c->rstreams[0];

	for (unsigned i = 0; i < STREAMS; i++) {
		struct rstream *t = &c->rstreams[i];

		if (t->reads && off + win >= t->end && off <= t->end + win) {
			return t;
		}
		if (t->used < old->used) {
			old = t;
		}
	}
	*old = (struct rstream){ .end = off,
				 .gen = ++c->ra_clock,
				 .fast = c->ra_fast }; /* a probe first */
	return old;
}

/*
 * The stream's next window into [*lo, *hi), if it is due.  A fast
 * stream's (its members read as fast as memory) is a probe: the smallest
 * window, to time the members again.
 */
static bool
next_window(struct cache *c, struct rstream *s, uint64_t len, uint64_t *lo,
	    uint64_t *hi)
{
	uint64_t from, size, to;

	if (s->fast) {
		if (s->end < s->probe_at) {
			return false;
		}
		from = MAX(s->end, s->ra_end);
		size = MIN(c->ra_max, RA_INIT_MIN);
		s->probe_at = UINT64_MAX; /* one window, until it is judged */
	} else if (s->ra_end <= s->end) { /* nothing ahead: start (again) */
		s->win = s->win ? s->win
				: MIN(c->ra_max, MAX(RA_INIT_MIN, 4 * len));
		from = s->end;
		size = s->win;
	} else if (s->ra_end - s->end < s->win) {
		s->win = MIN(c->ra_max, 2 * s->win);
		from = s->ra_end;
		size = s->win;
	} else {
		return false;
	}
	to = ROUND_DOWN_ANY(from + size, c->unit);
	if (to <= from) {
		to = ROUND_UP(from + size, c->block);
	}
	to = MIN(to, c->size);
	if (to <= from) {
		return false;
	}
	*lo = from;
	*hi = to;
	return true;
}

/* Queue a window for the workers (ra_lock held); false when full or
 * stopping. */
static bool
ra_queue(struct cache *c, const struct ra_req *run)
{
	for (unsigned k = 0; k < RA_QUEUE && !c->ra_stop; k++) {
		if (!c->ra_q[k].seq) {
			c->ra_q[k] = *run;
			c->ra_q[k].seq = ++c->ra_seq;
			pthread_cond_signal(&c->ra_wake);
			return true;
		}
	}
	return false;
}

/* The oldest window queued and not taken (ra_lock held), or NULL. */
static struct ra_req *
ra_next(struct cache *c)
{
	struct ra_req *next = NULL;

	for (unsigned k = 0; k < RA_QUEUE; k++) {
		struct ra_req *q = &c->ra_q[k];

		if (q->seq && !q->busy && (!next || q->seq < next->seq)) {
			next = q;
		}
	}
	return next;
}

void
ra_note(struct cache *c, uint64_t off, uint64_t len, struct ra_req *run)
{
	struct rstream *s;
	struct rstream had;

	*run = (struct ra_req){ .lo = 0 };
	if (!c->ra_max) {
		return;
	}
	pthread_mutex_lock(&c->ra_lock);
	s = rstream_of(c, off, len);
	if (off + len > s->end) {
		s->end = off + len;
		s->reads++;
	}
	s->used = ++c->ra_clock;
	had = *s;
	if (s->reads >= RA_TRIGGER &&
	    next_window(c, s, len, &run->lo, &run->hi)) {
		s->ra_end = run->hi;
		run->s = s;
		run->gen = s->gen;
		if (atomic_load(&c->ra_running)) {
			if (!ra_queue(c, run)) {
				*s = had; /* asked again next time */
			}
			*run = (struct ra_req){ .lo = 0 };
		}
	}
	pthread_mutex_unlock(&c->ra_lock);
}

/*
 * Tell the window's stream how its device read went: on the CPU most of
 * its time (RA_FAST_PCT), the members are as fast as memory, and reading
 * ahead only adds copies: the stream stops, but for a probe now and then.
 * (Only the read is timed: copying into pages the cache touches for the
 * first time costs page faults, CPU time that says nothing of the
 * members.)
 */
static void
ra_judge(struct cache *c, const struct ra_req *q, const struct ra_done *d)
{
	bool fast = d->cpu_ns * 100 >= d->wall_ns * RA_FAST_PCT;

	pthread_mutex_lock(&c->ra_lock);
	c->ra_fast = fast;
	if (q->s && q->s->gen == q->gen) {
		q->s->fast = fast;
		q->s->probe_at = q->s->end + RA_PROBE * c->ra_max;
	}
	pthread_mutex_unlock(&c->ra_lock);
}

/* Read one window into the cache with buf (room for it). */
static void
ra_read(struct cache *c, const struct ra_req *q, uint8_t *buf)
{
	struct ra_done d;
	int r = cache_ra_fill(c, q->lo, q->hi, buf, &d);

	if (d.bytes) {
		ra_judge(c, q, &d);
	}
	atomic_fetch_add_explicit(&c->st.ra_bytes, d.bytes,
				  memory_order_relaxed);
	if (r < 0) {
		raid_debug("cache: read-ahead of %llu+%llu failed (%s)",
			   (unsigned long long)q->lo,
			   (unsigned long long)(q->hi - q->lo), strerror(-r));
	}
}

/*
 * A window's buffer: a window is at most ra_max, and its first block
 * starts up to a block before it.  Touched once here, so that its page
 * faults are not taken for the members' CPU time (ra_judge).
 */
static uint8_t *
ra_buf(struct cache *c)
{
	void *b = NULL;

	if (posix_memalign(&b, IO_BUF_ALIGN, c->ra_max + 2 * c->block)) {
		return NULL;
	}
	memset(b, 0, c->ra_max + 2 * c->block);
	return b;
}

void
ra_run(struct cache *c, const struct ra_req *run)
{
	uint8_t *buf = ra_buf(c);

	if (buf) {
		ra_read(c, run, buf);
	}
	free(buf);
}

/* Does a window queued or being read touch [lo, hi)?  (ra_lock held.) */
static bool
ra_pending(struct cache *c, uint64_t lo, uint64_t hi)
{
	for (unsigned k = 0; k < RA_QUEUE; k++) {
		const struct ra_req *q = &c->ra_q[k];

		if (q->seq && q->lo < hi && lo < q->hi) {
			return true;
		}
	}
	return false;
}

bool
ra_wait(struct cache *c, uint64_t lo, uint64_t hi)
{
	bool waited = false;

	if (!atomic_load(&c->ra_running)) {
		return false;
	}
	pthread_mutex_lock(&c->ra_lock);
	while (ra_pending(c, lo, hi)) {
		pthread_cond_wait(&c->ra_done, &c->ra_lock);
		waited = true;
	}
	pthread_mutex_unlock(&c->ra_lock);
	return waited;
}

/*
 * A worker: the oldest window queued first, its slot held (for ra_wait)
 * until the window is in the cache.  Two of them, so that the members
 * get the next window while one is copied in (and a stream's windows
 * queue at the members back to back: no seek between them).
 */
static void *
ra_main(void *arg)
{
	struct cache *c = arg;
	uint8_t *buf = ra_buf(c);

	pthread_mutex_lock(&c->ra_lock);
	while (!c->ra_stop) {
		struct ra_req *q = ra_next(c);

		if (!q) {
			pthread_cond_wait(&c->ra_wake, &c->ra_lock);
			continue;
		}
		q->busy = true;
		pthread_mutex_unlock(&c->ra_lock);
		if (buf) {
			ra_read(c, q, buf);
		}
		pthread_mutex_lock(&c->ra_lock);
		*q = (struct ra_req){ .seq = 0 };
		pthread_cond_broadcast(&c->ra_done);
	}
	pthread_mutex_unlock(&c->ra_lock);
	free(buf);
	return NULL;
}

int
ra_start(struct cache *c)
{
	int r = 0;

	if (!c->ra_max || atomic_load(&c->ra_running)) {
		return 0;
	}
	c->ra_stop = false;
	for (c->nr_ra_threads = 0; c->nr_ra_threads < RA_THREADS;
	     c->nr_ra_threads++) {
		r = pthread_create(&c->ra_threads[c->nr_ra_threads], NULL,
				   ra_main, c);
		if (r) {
			raid_error(
				"cache: cannot start a read-ahead thread: %s",
				strerror(r));
			break;
		}
	}
	atomic_store(&c->ra_running, true);
	if (r) {
		ra_stop(c);
	}
	return -r;
}

/* The workers finish the windows they read; those queued are dropped. */
void
ra_stop(struct cache *c)
{
	if (!atomic_load(&c->ra_running)) {
		return;
	}
	pthread_mutex_lock(&c->ra_lock);
	c->ra_stop = true;
	pthread_cond_broadcast(&c->ra_wake);
	pthread_mutex_unlock(&c->ra_lock);
	for (unsigned i = 0; i < c->nr_ra_threads; i++) {
		pthread_join(c->ra_threads[i], NULL);
	}
	c->nr_ra_threads = 0;
	pthread_mutex_lock(&c->ra_lock);
	memset(c->ra_q, 0, sizeof(c->ra_q));
	pthread_cond_broadcast(&c->ra_done);
	pthread_mutex_unlock(&c->ra_lock);
	atomic_store(&c->ra_running, false);
}
