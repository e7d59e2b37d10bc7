/*
 * cache_logmode.c: cache=log, the RAM cache (cache.c) with the persistent
 * log (cache_log.c) behind it: a RAID card's battery-backed cache.
 * docs/cache.md, "cache=log", has the rules as tables.
 *
 * DESIGN
 * Every write, zero and trim is a record in the log before it is answered:
 *
 *   write        its record (the data) appended, then the data taken by
 *                the cache as in RAM mode (dirty, written back later; a
 *                bypassed piece written to the device); FUA: then the log
 *                synced up to the record
 *   zero, trim   run on the device as in RAM mode, then their record
 *                appended (a refused fast zero appends none)
 *   FLUSH        the log synced (group commit); the device may lag
 *
 * Replay re-applies every record not retired, in order.  So:
 *   - records of overlapping requests must be in the order their data
 *     reaches the cache: `order` holds a request's blocks from before its
 *     record is appended until the cache (or the device) holds its data;
 *   - a record is retired only when what it wrote is on the flushed
 *     device: retire takes the highest lsn L such that no block dirty or
 *     in flight in the cache carries a number <= L and no request between
 *     taking its place in the log and updating the cache (pend) can get
 *     one, then flushes the device, then clog_retire(L).  A dirty block's
 *     number is the lsn of the record that dirtied it (an entry keeps its
 *     oldest, cache.c), and a request in pend holds a floor no lower than
 *     the lsns it will get;
 *   - nothing reaches the device without a record while an older record
 *     may be replayed over it: when the log fails, requests wait while
 *     the cache drains, the device is flushed and the log retired to
 *     empty; then the cache is write-through (as cache-mode=writethrough)
 *     and appends nothing.  If that drain fails (the device fails too),
 *     acknowledged data may be in neither a working log nor on the
 *     device: every write, zero, trim and FLUSH drains again first, and
 *     fails with the drain's error while it fails (LM_BROKEN), so no
 *     FLUSH says yes then and nothing unlogged passes a record.
 *
 * A request holds retire back (its floor) only from just before it
 * appends a record until the cache holds the record's data: not while it
 * waits for log space, so requests waiting for space never hold each
 * other's records in the log.  A write longer than the log's longest
 * record is appended in pieces, each taken by the cache before the next
 * is appended.  A full log (-ENOSPC) makes the writer wait for write-back
 * and retire (the thread runs at full speed while someone waits), never
 * an error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_int.h"
#include "cache_log.h"
#include "io/fault.h"
#include "log.h"
#include "util.h"

#define RETIRE_NS     1000000000ull /* retire at least this often */
#define SPACE_WAIT_NS 100000000ull  /* a writer waiting looks again */
#define LOG_FULL_PCT  50	    /* used above this: retire each round */
#define ZERO_REC_MAX  ((uint32_t)0xfffff000u) /* a zero or trim record */

/*
 * A request of the log mode, from its start to its end.  While it appends
 * a record and until the cache holds what the record says, its floor is
 * at most the record's lsn (log_last + 1 when it started appending);
 * otherwise (waiting for space, between records) UINT64_MAX: it holds
 * nothing back.
 */
struct lm_pend {
	struct lm_pend *prev, *next;
	uint64_t floor;
};

/* ---- pend: what retire must not pass ----------------------------------- */

/* Enter pend; false (nothing entered) when the log is not on. */
static bool
pend_enter(struct cache *c, struct lm_pend *p)
{
	bool on;

	pthread_mutex_lock(&c->log_lock);
	on = atomic_load(&c->log_state) == LM_ON;
	if (on) {
		p->floor = UINT64_MAX;
		DLIST_PUSH(c->pend, p);
	}
	pthread_mutex_unlock(&c->log_lock);
	return on;
}

/* About to append: records from now on may be its own.  The floor. */
static uint64_t
pend_hold(struct cache *c, struct lm_pend *p)
{
	pthread_mutex_lock(&c->log_lock);
	p->floor = atomic_load(&c->log_last) + 1;
	pthread_mutex_unlock(&c->log_lock);
	return p->floor;
}

/* Its records so far are the cache's (or none is coming for now). */
static void
pend_release(struct cache *c, struct lm_pend *p)
{
	pthread_mutex_lock(&c->log_lock);
	p->floor = UINT64_MAX;
	pthread_mutex_unlock(&c->log_lock);
}

static void
pend_leave(struct cache *c, struct lm_pend *p)
{
	pthread_mutex_lock(&c->log_lock);
	DLIST_UNLINK(c->pend, p);
	if (!c->pend && atomic_load(&c->log_state) == LM_FAILING) {
		pthread_cond_broadcast(&c->log_cond);
	}
	pthread_mutex_unlock(&c->log_lock);
}

/* c->log_last = max(c->log_last, lsn). */
static void
note_lsn(struct cache *c, uint64_t lsn)
{
	uint64_t cur = atomic_load(&c->log_last);

	while (cur < lsn &&
	       !atomic_compare_exchange_weak(&c->log_last, &cur, lsn)) {
	}
}

/* Wait on log_cond (log_lock held) at most ns. */
static void
log_wait(struct cache *c, uint64_t ns)
{
	struct timespec until = mono_deadline(ns);

	pthread_cond_timedwait(&c->log_cond, &c->log_lock, &until);
}

/* ---- retire ------------------------------------------------------------ */

/*
 * Flush the device, then retire the records up to upto (CLOG_ALL: every
 * one: nothing may be dirty or pending).  retire_lock held.
 */
static int
retire_upto(struct cache *c, uint64_t upto)
{
	int r = c->be.flush(c->be.ctx);

	if (r == 0) {
		r = clog_retire(c->log, upto);
		atomic_store(&c->retire_error, r);
	}
	if (r == 0) {
		c->retired =
			upto == CLOG_ALL ? atomic_load(&c->log_last) : upto;
		atomic_fetch_add(&c->lst.retires, 1);
	}
	pthread_mutex_lock(&c->log_lock);
	c->retire_gen++;
	pthread_cond_broadcast(&c->log_cond);
	pthread_mutex_unlock(&c->log_lock);
	return r;
}

/*
 * Retire what is on the device: every record below the oldest number
 * dirty or in flight in the cache and below every pending request's
 * floor.  0 (also when there was nothing to retire) or -errno.
 */
static int
lm_retire(struct cache *c)
{
	uint64_t floor = UINT64_MAX, last, oldest, upto;
	int r = 0;

	pthread_mutex_lock(&c->retire_lock);
	pthread_mutex_lock(&c->log_lock);
	for (struct lm_pend *p = c->pend; p; p = p->next) {
		floor = MIN(floor, p->floor);
	}
	last = atomic_load(&c->log_last);
	pthread_mutex_unlock(&c->log_lock);
	/* After the snapshot: a block dirtied by a request that left pend
	 * before it is in the cache now (or written back since). */
	oldest = cache_oldest_unclean(c);
	upto = MIN(last, MIN(floor, oldest) - 1);
	if (upto > c->retired) {
		r = retire_upto(c, upto);
	}
	atomic_store(&c->retire_ns, cache_now_ns());
	pthread_mutex_unlock(&c->retire_lock);
	return r;
}

int
lm_retire_all(struct cache *c)
{
	return atomic_load(&c->log_state) == LM_ON ? lm_retire(c) : 0;
}

/*
 * The log is short of space: write back what the older half of the
 * records still dirty in the cache dirtied (the oldest first, wherever
 * it is, rather than in the cursor's order), then retire.
 */
static int
make_space(struct cache *c)
{
	uint64_t last = atomic_load(&c->log_last);
	uint64_t oldest = cache_oldest_unclean(c);
	int r = 0;

	if (oldest <= last) {
		r = cache_drain(c, oldest + (last - oldest) / 2);
	}
	return r < 0 ? r : lm_retire(c);
}

/* ---- failure: write-through, the log emptied --------------------------- */

/*
 * The log failed (err), or failed before and its drain too (LM_BROKEN,
 * err 0): drain the cache, flush the device, retire every record, then
 * write-through (LM_OFF); if any of that fails, LM_BROKEN, and the next
 * request tries again.  Requests wait meanwhile (lm_route); one drains,
 * the others take its result.  Returns how the drain went: 0 when the
 * device holds everything acknowledged and the log is empty.
 */
static int
lm_fail(struct cache *c, int err)
{
	bool first;
	int st, r;

	pthread_mutex_lock(&c->log_lock);
	st = atomic_load(&c->log_state);
	if (st == LM_FAILING || st == LM_OFF) {
		while (atomic_load(&c->log_state) == LM_FAILING) {
			log_wait(c, SPACE_WAIT_NS);
		}
		r = atomic_load(&c->log_state) == LM_OFF ? 0 : c->fail_r;
		pthread_mutex_unlock(&c->log_lock);
		return r;
	}
	first = st == LM_ON;
	if (first) {
		c->log_error = err;
	}
	atomic_store(&c->log_state, LM_FAILING);
	pthread_cond_broadcast(&c->log_cond); /* space waiters */
	while (c->pend) {
		log_wait(c, SPACE_WAIT_NS);
	}
	pthread_mutex_unlock(&c->log_lock);
	if (first) {
		raid_error(
			"cache: the log %s failed (%s): the cache is write-through from now on; writing back what it holds",
			c->log_path, strerror(-err));
	}
	atomic_store(&c->writethrough, true);
	r = cache_drain(c, UINT64_MAX);
	pthread_mutex_lock(&c->retire_lock);
	if (r == 0) {
		r = retire_upto(c, CLOG_ALL);
	}
	pthread_mutex_unlock(&c->retire_lock);
	if (r < 0 && first) {
		raid_error(
			"cache: after the log %s failed, the cache could not be written back and the log emptied (%s): writes, zeros, trims and FLUSHes fail until that succeeds (each tries again); reads go on",
			c->log_path, strerror(-r));
	} else if (r < 0) {
		raid_debug("cache: the log %s: written back and emptied not "
			   "yet: %s",
			   c->log_path, strerror(-r));
	} else {
		raid_error(
			"cache: written back, members flushed, the log %s emptied: write-through",
			c->log_path);
	}
	pthread_mutex_lock(&c->log_lock);
	c->fail_r = r;
	atomic_store(&c->log_state, r < 0 ? LM_BROKEN : LM_OFF);
	pthread_cond_broadcast(&c->log_cond);
	pthread_mutex_unlock(&c->log_lock);
	return r;
}

/*
 * Where a request goes, once a failed log's drain (if one runs) is over:
 * 0 the log is on; LM_PASS the cache does it write-through (the log is
 * off and empty); -errno the log failed and what it held is neither in a
 * working log nor on the flushed device (LM_BROKEN: drained again now,
 * and still so).  Nothing may then reach the device unlogged (an older
 * record would be replayed over it) nor a FLUSH say yes.
 */
static int
lm_route(struct cache *c)
{
	int st = atomic_load(&c->log_state), r;

	if (st == LM_FAILING) {
		pthread_mutex_lock(&c->log_lock);
		while ((st = atomic_load(&c->log_state)) == LM_FAILING) {
			log_wait(c, SPACE_WAIT_NS);
		}
		pthread_mutex_unlock(&c->log_lock);
	}
	if (st == LM_ON) {
		return 0;
	}
	if (st == LM_OFF) {
		return LM_PASS;
	}
	r = lm_fail(c, 0);
	return r < 0 ? r : LM_PASS;
}

/* ---- append ------------------------------------------------------------ */

/*
 * The log is full: wait until a retire moved the checkpoint since gen.
 * Without the thread, write back and retire here.  -errno when the log
 * failed (or cannot be retired) meanwhile.
 */
static int
wait_space(struct cache *c, uint64_t gen)
{
	int r = 0;

	if (!cache_thread_running(c) && (r = make_space(c)) < 0) {
		return r;
	}
	atomic_fetch_add(&c->log_waiters, 1);
	cache_wb_kick(c);
	pthread_mutex_lock(&c->log_lock);
	if (c->retire_gen == gen && atomic_load(&c->log_state) == LM_ON) {
		log_wait(c, SPACE_WAIT_NS);
	}
	if (atomic_load(&c->log_state) != LM_ON) {
		r = c->log_error ? c->log_error : -EIO;
	}
	pthread_mutex_unlock(&c->log_lock);
	atomic_fetch_sub(&c->log_waiters, 1);
	if (r == 0) {
		r = atomic_load(&c->retire_error);
	}
	return r;
}

/*
 * Append one record for p, waiting for space as long as it takes (holding
 * nothing back meanwhile).  p holds its floor after it: the caller
 * releases it once the cache holds what the record says.
 */
static int
lm_append(struct cache *c, struct lm_pend *p, uint32_t type, uint64_t off,
	  uint32_t len, const void *data, uint64_t *lsn)
{
	bool waited = false;

	for (;;) {
		uint64_t gen;
		int r;

		pend_hold(c, p);
		pthread_mutex_lock(&c->log_lock);
		gen = c->retire_gen;
		pthread_mutex_unlock(&c->log_lock);
		r = clog_append(c->log, type, off, len, data, lsn);
		if (r == 0) {
			note_lsn(c, *lsn);
			return 0;
		}
		if (r != -ENOSPC) {
			return r;
		}
		pend_release(c, p);
		if (!waited) {
			waited = true;
			atomic_fetch_add(&c->lst.waits, 1);
		}
		r = wait_space(c, gen);
		if (r < 0) {
			return r;
		}
	}
}

/* A FUA request's records made durable; on a log error, what the drain
 * to the device made of it. */
static int
sync_fua(struct cache *c, uint64_t lsn)
{
	int r = clog_sync(c->log, lsn);

	return r < 0 ? lm_fail(c, r) : 0;
}

/* ---- requests ---------------------------------------------------------- */

/*
 * A request's start: the order lock over its blocks [off, end), then its
 * place in pend: 0.  When the log is not on, nothing held and lm_route's
 * answer: LM_PASS (the cache does it as without a log) or -errno.
 */
static int
request_start(struct cache *c, struct range_req *rr, struct lm_pend *pd,
	      uint64_t off, uint64_t end)
{
	range_lock(&c->order, rr, ROUND_DOWN(off, c->block),
		   ROUND_UP(end, c->block), true);
	if (!pend_enter(c, pd)) {
		int r;

		range_unlock(&c->order, rr);
		r = lm_route(c); /* not LM_ON: never 0 */
		return r ? r : LM_PASS;
	}
	return 0;
}

static void
request_end(struct cache *c, struct range_req *rr, struct lm_pend *pd)
{
	pend_leave(c, pd);
	range_unlock(&c->order, rr);
}

int
lm_pwrite(struct cache *c, const void *buf, uint64_t count, uint64_t off,
	  uint32_t flags)
{
	const uint8_t *p = buf;
	uint64_t end = off + count, lo = 0, hi = 0, lsn = 0, max;
	struct range_req rr;
	struct lm_pend pd;
	bool bypass;
	int r = lm_route(c), lr = 0;

	if (r) {
		return r;
	}
	max = ROUND_DOWN(clog_max_len(c->log), c->block);
	if ((r = request_start(c, &rr, &pd, off, end))) {
		return r;
	}
	bypass = cache_bypass_range(c, off, count, &lo, &hi);
	for (uint64_t at = off; at < end && r == 0;) {
		uint64_t stop = MIN(end, ROUND_DOWN(at, c->block) + max);
		bool direct = bypass && at >= lo && at < hi;

		if (bypass) {
			stop = MIN(stop, at < lo ? lo : at < hi ? hi : end);
		}
		lr = lm_append(c, &pd, CLOG_WRITE, at, (uint32_t)(stop - at),
			       p + (at - off), &lsn);
		if (lr < 0) {
			break;
		}
		if (direct) {
			r = cache_direct(c, DOP_BYPASS, p + (at - off),
					 stop - at, at, 0, lsn);
		} else {
			r = cache_write_cached(c, p + (at - off), stop - at, at,
					       lsn);
		}
		pend_release(c, &pd);
		at = stop;
	}
	request_end(c, &rr, &pd);
	if (bypass) {
		atomic_fetch_add(&c->st.writes_bypassed, 1);
	}
	if (lr < 0) {
		/* The cache writes it through, once the log is emptied. */
		lr = lm_fail(c, lr);
		return lr < 0 ? lr : LM_PASS;
	}
	if (r == 0 && (flags & RAID_FUA)) {
		r = sync_fua(c, lsn);
	}
	return r;
}

/* Zero or trim: on the device (the cache in line), then its records. */
int
lm_trim_or_zero(struct cache *c, enum dop op, uint64_t count, uint64_t off,
		uint32_t flags)
{
	uint32_t type = op == DOP_ZERO ? CLOG_ZERO : CLOG_TRIM;
	uint64_t end = off + count, lsn = 0;
	struct range_req rr;
	struct lm_pend pd;
	int r, lr = 0;

	if (!count) {
		return 0;
	}
	if ((r = lm_route(c)) || (r = request_start(c, &rr, &pd, off, end))) {
		return r;
	}
	/*
	 * Blocks it would leave dirty carry its floor, no higher than its
	 * records' lsns (none does: a block it patches without holding its
	 * entry is one written meanwhile, which `order` rules out).
	 */
	r = cache_direct(c, op, NULL, count, off, flags, pend_hold(c, &pd));
	for (uint64_t at = off; r == 0 && lr == 0 && at < end;) {
		uint32_t len = (uint32_t)MIN(end - at, (uint64_t)ZERO_REC_MAX);

		lr = lm_append(c, &pd, type, at, len, NULL, &lsn);
		at += len;
	}
	request_end(c, &rr, &pd);
	if (lr < 0) {
		/* On the device; the log emptied behind it (or not: said). */
		return lm_fail(c, lr);
	}
	if (r == 0 && (flags & RAID_FUA)) {
		r = sync_fua(c, lsn);
	}
	return r;
}

int
lm_flush(struct cache *c)
{
	int r = lm_route(c);

	if (r) {
		return r;
	}
	r = clog_sync(c->log, CLOG_ALL);
	if (r < 0) {
		r = lm_fail(c, r);
		return r < 0 ? r : LM_PASS;
	}
	return 0;
}

/* ---- the write-back thread --------------------------------------------- */

bool
lm_pressure(struct cache *c)
{
	uint64_t used, total;

	if (atomic_load(&c->log_waiters)) {
		return true;
	}
	clog_space(c->log, &used, &total);
	return used * 100 >= total * LOG_FULL_PCT;
}

bool
lm_tick_due(struct cache *c, bool *short_of_space)
{
	uint64_t used, total, now = cache_now_ns();
	bool shortage;

	if (atomic_load(&c->log_state) != LM_ON) {
		return false;
	}
	clog_space(c->log, &used, &total);
	shortage = atomic_load(&c->log_waiters) ||
		   used * 100 >= total * LOG_FULL_PCT;
	if (short_of_space) {
		*short_of_space = shortage;
	}
	return used &&
	       (shortage || now - atomic_load(&c->retire_ns) >= RETIRE_NS);
}

void
lm_tick(struct cache *c, uint64_t bytes)
{
	bool short_of_space = false;
	int r;

	(void)bytes;
	if (!lm_tick_due(c, &short_of_space)) {
		return;
	}
	r = short_of_space ? make_space(c) : lm_retire(c);
	if (r < 0) {
		raid_debug("cache: retiring records of the log %s failed: %s",
			   c->log_path, strerror(-r));
	}
}

/* ---- open, close, status ----------------------------------------------- */

struct replay {
	struct cache *c;
	uint64_t bytes[4]; /* by record type */
	uint64_t lsn;
	uint32_t type;
};

static const char *
rec_name(uint32_t type)
{
	return type == CLOG_WRITE  ? "write"
	       : type == CLOG_ZERO ? "zero"
				   : "trim";
}

/* One record onto the device, as the request it records. */
static int
replay_one(void *ctx, const struct clog_rec *rec)
{
	struct replay *rp = ctx;
	struct cache *c = rp->c;

	rp->lsn = rec->lsn;
	rp->type = rec->type;
	rp->bytes[rec->type % 4] += rec->len;
	switch (rec->type) {
	case CLOG_WRITE:
		return c->be.write(c->be.ctx, rec->data, rec->len, rec->offset,
				   0);
	case CLOG_ZERO:
		return c->be.zero(c->be.ctx, rec->len, rec->offset, 0);
	default:
		return c->be.trim(c->be.ctx, rec->len, rec->offset, 0);
	}
}

/* The records a crash left, onto the device, flushed, retired. */
static int
replay(struct cache *c)
{
	struct replay rp = { .c = c };
	int n = clog_replay(c->log, replay_one, &rp), r;

	if (n < 0) {
		raid_error(
			"cache-log %s: replaying record %llu (%s): %s; the log keeps its records",
			c->log_path, (unsigned long long)rp.lsn,
			rec_name(rp.type), strerror(-n));
		return n;
	}
	r = c->be.flush(c->be.ctx);
	if (r == 0) {
		r = clog_retire(c->log, CLOG_ALL);
	}
	if (r < 0) {
		raid_error("cache-log %s: after replaying %d records: %s",
			   c->log_path, n, strerror(-r));
		return r;
	}
	atomic_store(&c->lst.replayed, (uint64_t)n);
	if (n) {
		raid_error(
			"cache: replayed %d records of the log %s onto the members (%llu bytes written, %llu zeroed, %llu trimmed), flushed, retired",
			n, c->log_path,
			(unsigned long long)rp.bytes[CLOG_WRITE],
			(unsigned long long)rp.bytes[CLOG_ZERO],
			(unsigned long long)rp.bytes[CLOG_TRIM]);
	}
	return 0;
}

int
lm_open(struct cache *c, const struct cache_settings *s)
{
	char why[512];
	int r;

	c->log_path = strdup(s->log_path);
	r = c->log_path ? clog_open(s->log_path, s->log_uuid, c->size, true,
				    s->log_force, &c->log, why, sizeof(why))
			: -ENOMEM;
	if (r < 0) {
		fault_log_free(s->log_fault);
		if (c->log_path) {
			raid_error("cache-log: %s", why);
		}
		return r;
	}
	clog_set_fault(c->log, s->log_fault);
	r = replay(c);
	if (r < 0) {
		clog_close(c->log);
		c->log = NULL;
		return r;
	}
	atomic_store(&c->log_state,
		     s->mode == RAID_CACHE_WRITETHROUGH ? LM_OFF : LM_ON);
	atomic_store(&c->retire_ns, cache_now_ns());
	return 0;
}

int
lm_close(struct cache *c, int r)
{
	uint64_t used, total;

	if (r == 0) {
		/* Nothing dirty, nothing pending: every record is retired. */
		pthread_mutex_lock(&c->retire_lock);
		r = retire_upto(c, CLOG_ALL);
		pthread_mutex_unlock(&c->retire_lock);
	}
	clog_space(c->log, &used, &total);
	if (r < 0) {
		raid_error(
			"cache: at close: %s; the log %s keeps %llu bytes of records: the next start with it replays them",
			strerror(-r), c->log_path, (unsigned long long)used);
	}
	clog_close(c->log);
	c->log = NULL;
	return r;
}

void
lm_abandon(struct cache *c)
{
	clog_close(c->log);
	c->log = NULL;
}

void
lm_status(struct cache *c, struct raid_cache_status *st)
{
	struct clog_stats cs;

	if (!c->log) {
		return;
	}
	clog_stats(c->log, &cs);
	clog_space(c->log, &st->log_used_bytes, &st->log_total_bytes);
	st->log_path = c->log_path;
	st->log_records = cs.appends;
	st->log_syncs = cs.syncs;
	st->log_retires = atomic_load(&c->lst.retires);
	st->log_waits = atomic_load(&c->lst.waits);
	st->log_replayed = atomic_load(&c->lst.replayed);
	pthread_mutex_lock(&c->log_lock);
	st->log_error = c->log_error;
	pthread_mutex_unlock(&c->log_lock);
	st->log_failed = st->log_error != 0;
}
