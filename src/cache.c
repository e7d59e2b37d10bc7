/*
 * cache.c: the write-back cache (cache.h; docs/cache.md has the rules as
 * tables, docs/locking.md the locks).
 *
 * DESIGN
 * Data is kept in units (a full stripe, or 1 MiB) of 4K blocks.  A unit
 * with anything cached is an entry in a hash keyed by unit number, split
 * into CACHE_SHARDS shards, each with its own mutex, so that threads
 * working on different units do not wait for each other.  An entry has
 * three bitmaps over its blocks and a page (4K of memory from the pool)
 * per valid block, in block order (page[rank of the block among the
 * valid ones]):
 *
 *   valid dirty inflight  the block
 *     0     0     0       is not cached
 *     1     0     0       clean: the device holds these bytes; may be
 *                         evicted (least recently used entries first)
 *     1     1     0       dirty: acknowledged, not on the device yet
 *     1     0     1       being written back: still read from here until
 *                         the device write completed
 *     1     1     1       written again while being written back: dirty
 *                         once that write completed
 *
 * A block is never invalid while dirty or in flight, so a block that is
 * not cached is on the device as the newest acknowledged write left it:
 * a read copies the cached blocks, then reads the rest from the device.
 *
 * Writes of whole blocks are copied in and marked dirty (writeback
 * mode).  Everything else goes to the device before the reply, as a
 * "direct" operation: FUA writes, the unaligned edges of a write whose
 * edge block is not cached, bypassed sequential writes, writethrough
 * mode, trim and zero.  A direct operation pins the entries of its units
 * (one direct operation per unit at a time, none while the unit is being
 * written back, and no write-back starts while it holds them), runs on
 * the device, then brings the cached blocks in line (patch_block has the
 * table) and lets go.
 *
 * Write-back claims a dirty unit (its dirty blocks copied out, dirty ->
 * inflight), writes the runs of claimed blocks of consecutive units in
 * large device writes, and then marks them clean unless written again
 * meanwhile.  Every write that dirties data takes a number (seq); an
 * entry remembers the oldest it holds dirty, so FLUSH writes back what is
 * at or below the number it saw and ignores what came after.  The thread
 * writes full units first and holds a partial one (cache-hold) where a
 * partial unit costs reads (parity), paced by a PI controller on the
 * dirty bytes, at full speed while clients are idle or the cache is
 * nearly full.
 *
 * Reads do not fill the cache, except read-ahead: a sequential reader
 * (cache_readahead.c follows the streams and sizes the windows) gets the
 * next window read from the device into the blocks still not cached,
 * clean, by a worker, under pins as a direct operation holds its units
 * (cache_ra_fill has why that never hides newer data).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cache.h"
#include "cache_int.h"
#include "io/fault.h"
#include "io/io.h"
#include "log.h"
#include "util.h"

/* ---- small helpers ----------------------------------------------------- */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t
cache_now_ns(void)
{
	return now_ns();
}

/* This thread's CPU time (read-ahead tells members as fast as memory). */
static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static bool
bit_test(const uint64_t *w, uint64_t i)
{
	return (w[i / 64] >> (i % 64)) & 1;
}

static void
bit_set(uint64_t *w, uint64_t i)
{
	w[i / 64] |= 1ull << (i % 64);
}

static void
bit_clear(uint64_t *w, uint64_t i)
{
	w[i / 64] &= ~(1ull << (i % 64));
}

static void
abit_set(_Atomic uint64_t *w, uint64_t i)
{
	uint64_t m = 1ull << (i % 64);

	if (!(atomic_load_explicit(&w[i / 64], memory_order_relaxed) & m)) {
		atomic_fetch_or(&w[i / 64], m);
	}
}

static void
abit_clear(_Atomic uint64_t *w, uint64_t i)
{
	uint64_t m = 1ull << (i % 64);

	if (atomic_load_explicit(&w[i / 64], memory_order_relaxed) & m) {
		atomic_fetch_and(&w[i / 64], ~m);
	}
}

static bool
abit_test(_Atomic uint64_t *w, uint64_t i)
{
	return (atomic_load_explicit(&w[i / 64], memory_order_relaxed) >>
		(i % 64)) &
	       1;
}

/* The first set bit at or after i and before end, or end. */
static uint64_t
abit_next(_Atomic uint64_t *w, uint64_t i, uint64_t end)
{
	while (i < end) {
		uint64_t word = atomic_load(&w[i / 64]) >> (i % 64);

		if (word) {
			i += __builtin_ctzll(word);
			return MIN(i, end);
		}
		i = ROUND_DOWN(i, 64) + 64;
	}
	return end;
}

static uint64_t *
valid_bits(const struct cache *c, struct centry *e)
{
	(void)c;
	return e->bits;
}

static uint64_t *
dirty_bits(const struct cache *c, struct centry *e)
{
	return e->bits + c->words;
}

static uint64_t *
infl_bits(const struct cache *c, struct centry *e)
{
	return e->bits + 2 * c->words;
}

/* Blocks read ahead and not read since (counted as hits when read). */
static uint64_t *
ra_bits(const struct cache *c, struct centry *e)
{
	return e->bits + 3 * c->words;
}

/* Blocks of unit u (the last one may have fewer). */
static uint32_t
unit_blocks(const struct cache *c, uint64_t u)
{
	uint64_t left = c->size - u * c->unit;

	return left >= c->unit ? c->unit_blocks
			       : (uint32_t)DIV_ROUND_UP(left, c->block);
}

/* The blocks [*i0, *i1) of unit u that [lo, hi) touches (it must). */
static void
unit_span(const struct cache *c, uint64_t u, uint64_t lo, uint64_t hi,
	  uint32_t *i0, uint32_t *i1)
{
	uint64_t base = u * c->unit;

	*i0 = (uint32_t)((MAX(lo, base) - base) / c->block);
	*i1 = (uint32_t)DIV_ROUND_UP(MIN(hi, base + c->unit) - base, c->block);
}

/* Bytes of block i of unit u (the device's last block may be short). */
static uint32_t
block_len(const struct cache *c, uint64_t u, uint32_t i)
{
	uint64_t at = u * c->unit + (uint64_t)i * c->block;

	return (uint32_t)MIN((uint64_t)c->block, c->size - at);
}

static struct shard *
shard_of(struct cache *c, uint64_t u)
{
	uint64_t h = (u * 0x9e3779b97f4a7c15ull) >> (64 - c->bucket_bits);

	return &c->shards[h % CACHE_SHARDS];
}

static struct centry **
bucket_of(struct cache *c, uint64_t u)
{
	return &c->bucket[(u * 0x9e3779b97f4a7c15ull) >> (64 - c->bucket_bits)];
}

static void
note_client(struct cache *c)
{
	atomic_store_explicit(&c->last_client_ns, now_ns(),
			      memory_order_relaxed);
}

/* A client's request (or a read ahead for one) goes to the members. */
static void
note_members(struct cache *c)
{
	atomic_store_explicit(&c->last_member_ns, now_ns(),
			      memory_order_relaxed);
}

/* ---- done: completions that flushes and pins wait for ------------------ */

static uint64_t
done_mark(struct cache *c)
{
	return atomic_load(&c->done_gen);
}

static void
done_wait(struct cache *c, uint64_t mark)
{
	pthread_mutex_lock(&c->done_lock);
	while (atomic_load(&c->done_gen) == mark) {
		pthread_cond_wait(&c->done_cond, &c->done_lock);
	}
	pthread_mutex_unlock(&c->done_lock);
}

/* As done_wait, for at most ns (done_cond is on CLOCK_MONOTONIC). */
static void
done_wait_for(struct cache *c, uint64_t mark, uint64_t ns)
{
	struct timespec until = mono_deadline(ns);

	pthread_mutex_lock(&c->done_lock);
	if (atomic_load(&c->done_gen) == mark) {
		pthread_cond_timedwait(&c->done_cond, &c->done_lock, &until);
	}
	pthread_mutex_unlock(&c->done_lock);
}

static void
done_signal(struct cache *c)
{
	pthread_mutex_lock(&c->done_lock);
	atomic_fetch_add(&c->done_gen, 1);
	pthread_cond_broadcast(&c->done_cond);
	pthread_mutex_unlock(&c->done_lock);
}

/* ---- the page pool ----------------------------------------------------- */

static uint64_t
pool_room_locked(const struct pool *p)
{
	return p->nr_free + (p->cap - p->nr_pages) - p->reserved;
}

static uint64_t
pool_room(struct cache *c)
{
	uint64_t room;

	pthread_mutex_lock(&c->pool.lock);
	room = pool_room_locked(&c->pool);
	pthread_mutex_unlock(&c->pool.lock);
	return room;
}

/* Promise n pages to the caller, all or none; no waiting. */
static bool
pool_reserve(struct cache *c, uint64_t n)
{
	bool ok;

	pthread_mutex_lock(&c->pool.lock);
	ok = pool_room_locked(&c->pool) >= n;
	if (ok) {
		c->pool.reserved += n;
	}
	pthread_mutex_unlock(&c->pool.lock);
	return ok;
}

/* Give back reservations not used. */
static void
pool_unreserve(struct cache *c, uint64_t n)
{
	if (!n) {
		return;
	}
	pthread_mutex_lock(&c->pool.lock);
	c->pool.reserved -= n;
	pthread_mutex_unlock(&c->pool.lock);
}

/* Add slab (n pages) to the pool; pool.lock held.  false (slab not
 * taken) when out of memory. */
static bool
pool_add_slab(struct pool *p, uint8_t *slab, uint64_t n, uint32_t block)
{
	void **slabs = realloc(p->slabs, (p->nr_slabs + 1) * sizeof(*slabs));

	if (!slabs) {
		return false;
	}
	p->slabs = slabs;
	p->slabs[p->nr_slabs++] = slab;
	for (uint64_t i = 0; i < n; i++) {
		p->free_pages[p->nr_free++] = slab + i * block;
	}
	p->nr_pages += n;
	return true;
}

/* Grow by a slab; pool.lock held.  false when out of memory. */
static bool
pool_grow(struct pool *p, uint32_t block)
{
	uint64_t n = MIN((uint64_t)SLAB_PAGES, p->cap - p->nr_pages);
	uint8_t *slab = n ? malloc(n * block) : NULL;

	if (slab && pool_add_slab(p, slab, n, block)) {
		return true;
	}
	free(slab);
	return false;
}

/*
 * The pool filled to cache-size, slab by slab, each populated before it
 * is added (outside the lock: no one else has it yet).  A client's first
 * writes otherwise pay a page fault per 4K, which in a VM costs as much
 * as the copy: a fresh cache took 1M writes at 145 MB/s, a filled one at
 * 204 MB/s (with nbdkit's own buffers' faults the rest).  The kernel
 * populates a slab (MADV_POPULATE_WRITE, Linux 5.14) 18x faster than
 * touching its pages, so the fill does not compete with the first
 * clients for the CPU.  But populated 4K pages are not yet ready in a VM
 * whose hypervisor maps each guest page on its first write: here a first
 * memset of 128 MiB populated that way took 185 ms, of the same memory
 * populated as transparent huge pages 7 ms (and 4 ms warm).  So a slab
 * is FILL_SLAB_BYTES, aligned to a huge page and advised MADV_HUGEPAGE
 * first (THP "madvise" is Debian's default; where THP is off the advice
 * is ignored and the pages are 4K).  Ends early when stopped or out of
 * memory.
 */
static void *
fill_main(void *arg)
{
	struct cache *c = arg;
	struct pool *p = &c->pool;
	const uint64_t per_slab = MAX(1u, FILL_SLAB_BYTES / c->block);

	while (!atomic_load(&c->fill_stop)) {
		uint64_t n, left = 0;
		uint8_t *slab;
		bool took = false;

		pthread_mutex_lock(&p->lock);
		n = MIN(per_slab, p->cap - p->nr_pages);
		pthread_mutex_unlock(&p->lock);
		if (!n || posix_memalign((void **)&slab, HUGE_PAGE_BYTES,
					 n * c->block)) {
			break;
		}
		(void)madvise(slab, n * c->block, MADV_HUGEPAGE);
		/* Else written, not memset (malloc + memset 0 becomes
		 * calloc, which leaves fresh pages untouched). */
		if (madvise(slab, n * c->block, MADV_POPULATE_WRITE) != 0) {
			for (uint64_t i = 0; i < n * c->block; i += 4096) {
				((volatile uint8_t *)slab)[i] = 0;
			}
		}
		pthread_mutex_lock(&p->lock);
		/* A writer may have grown the pool meanwhile. */
		left = p->cap - p->nr_pages;
		if (left >= n) {
			took = pool_add_slab(p, slab, n, c->block);
		}
		pthread_mutex_unlock(&p->lock);
		if (!took) {
			free(slab);
			if (left < n) {
				continue; /* a smaller last slab */
			}
			break;
		}
	}
	return NULL;
}

/* One reserved page (NULL: out of memory, reservation given back). */
static uint8_t *
pool_get(struct cache *c)
{
	struct pool *p = &c->pool;
	uint8_t *page = NULL;

	pthread_mutex_lock(&p->lock);
	if (!p->nr_free) {
		pool_grow(p, c->block);
	}
	if (p->nr_free) {
		page = p->free_pages[--p->nr_free];
	}
	p->reserved--;
	pthread_mutex_unlock(&p->lock);
	return page;
}

/* Pages back to the pool; room for waiting writers. */
static void
pool_put(struct cache *c, uint8_t **pages, uint64_t n)
{
	struct pool *p = &c->pool;

	pthread_mutex_lock(&p->lock);
	memcpy(p->free_pages + p->nr_free, pages, n * sizeof(*pages));
	p->nr_free += n;
	p->space_gen++;
	pthread_cond_broadcast(&p->space);
	pthread_mutex_unlock(&p->lock);
}

/* Blocks turned clean (evictable): waiting writers look again. */
static void
pool_kick(struct cache *c)
{
	pthread_mutex_lock(&c->pool.lock);
	c->pool.space_gen++;
	pthread_cond_broadcast(&c->pool.space);
	pthread_mutex_unlock(&c->pool.lock);
}

/* Pages dropped under a shard lock, handed back in one go after it. */
struct page_list {
	uint8_t *p[64];
	unsigned n;
};

static void
page_list_add(struct cache *c, struct page_list *l, uint8_t *page)
{
	if (l->n == ARRAY_SIZE(l->p)) {
		pool_put(c, l->p, l->n);
		l->n = 0;
	}
	l->p[l->n++] = page;
}

static void
page_list_flush(struct cache *c, struct page_list *l)
{
	if (l->n) {
		pool_put(c, l->p, l->n);
		l->n = 0;
	}
}

/* ---- entries (the shard's lock held) ----------------------------------- */

static struct centry *
lookup(struct cache *c, uint64_t u)
{
	struct centry *e = *bucket_of(c, u);

	while (e && e->unit != u) {
		e = e->hnext;
	}
	return e;
}

static struct centry *
entry_new(struct cache *c, uint64_t u)
{
	struct centry *e =
		calloc(1, sizeof(*e) + 4 * c->words * sizeof(uint64_t));
	struct centry **b = bucket_of(c, u);

	if (!e) {
		return NULL;
	}
	e->unit = u;
	e->hnext = *b;
	*b = e;
	abit_set(c->present, u);
	return e;
}

static struct centry *
lookup_or_new(struct cache *c, uint64_t u)
{
	struct centry *e = lookup(c, u);

	return e ? e : entry_new(c, u);
}

static void
lru_remove(struct shard *s, struct centry *e)
{
	if (!e->in_lru) {
		return;
	}
	if (e->lprev) {
		e->lprev->lnext = e->lnext;
	} else {
		s->lru_head = e->lnext;
	}
	if (e->lnext) {
		e->lnext->lprev = e->lprev;
	} else {
		s->lru_tail = e->lprev;
	}
	e->lprev = e->lnext = NULL;
	e->in_lru = false;
}

static void
lru_append(struct shard *s, struct centry *e)
{
	e->lprev = s->lru_tail;
	e->lnext = NULL;
	if (s->lru_tail) {
		s->lru_tail->lnext = e;
	} else {
		s->lru_head = e;
	}
	s->lru_tail = e;
	e->in_lru = true;
}

/*
 * After a change: in the LRU (at its recent end when touched) iff it has
 * clean blocks; the unit's unclean bit; freed when nothing holds it.
 */
static void
entry_settle(struct cache *c, struct shard *s, struct centry *e, bool touch)
{
	bool has_clean = e->nr_valid > e->nr_unclean;

	if (e->in_lru && (touch || !has_clean)) {
		lru_remove(s, e);
	}
	if (has_clean && !e->in_lru) {
		lru_append(s, e);
	}
	if (e->nr_unclean) {
		abit_set(c->unclean, e->unit);
	} else {
		abit_clear(c->unclean, e->unit);
		e->dirty_seq = 0;
	}
	if (!e->nr_valid && !e->wb && !e->pin_id) {
		struct centry **p = bucket_of(c, e->unit);

		while (*p != e) {
			p = &(*p)->hnext;
		}
		*p = e->hnext;
		abit_clear(c->present, e->unit);
		free(e->page);
		free(e);
	}
}

/* Index in page[] of valid block i (or where it would go). */
static uint32_t
rank(const struct cache *c, struct centry *e, uint32_t i)
{
	const uint64_t *v = valid_bits(c, e);
	uint32_t r = 0;

	for (uint32_t w = 0; w < i / 64; w++) {
		r += __builtin_popcountll(v[w]);
	}
	if (i % 64) {
		r += __builtin_popcountll(v[i / 64] & ((1ull << (i % 64)) - 1));
	}
	return r;
}

static uint8_t *
page_of(const struct cache *c, struct centry *e, uint32_t i)
{
	return bit_test(valid_bits(c, e), i) ? e->page[rank(c, e, i)] : NULL;
}

/* Room in page[] for n more pages. */
static int
entry_reserve(struct centry *e, uint32_t n)
{
	uint32_t want = e->nr_valid + n, cap = e->cap ? e->cap : 4;
	uint8_t **p;

	if (want <= e->cap) {
		return 0;
	}
	while (cap < want) {
		cap *= 2;
	}
	p = realloc(e->page, cap * sizeof(*p));
	if (!p) {
		return -ENOMEM;
	}
	e->page = p;
	e->cap = cap;
	return 0;
}

/* Block i becomes valid with page (room reserved in page[]). */
static void
page_insert(struct cache *c, struct centry *e, uint32_t i, uint8_t *page)
{
	uint32_t r = rank(c, e, i);

	memmove(e->page + r + 1, e->page + r,
		(e->nr_valid - r) * sizeof(*e->page));
	e->page[r] = page;
	bit_set(valid_bits(c, e), i);
	e->nr_valid++;
	atomic_fetch_add_explicit(&c->nr_valid, 1, memory_order_relaxed);
}

/* Drop block i (valid, not in flight) and its dirt; the page to l. */
static void
page_drop(struct cache *c, struct centry *e, uint32_t i, struct page_list *l)
{
	uint32_t r = rank(c, e, i);

	page_list_add(c, l, e->page[r]);
	memmove(e->page + r, e->page + r + 1,
		(e->nr_valid - r - 1) * sizeof(*e->page));
	bit_clear(valid_bits(c, e), i);
	bit_clear(ra_bits(c, e), i);
	e->nr_valid--;
	atomic_fetch_sub_explicit(&c->nr_valid, 1, memory_order_relaxed);
	if (bit_test(dirty_bits(c, e), i)) {
		bit_clear(dirty_bits(c, e), i);
		e->nr_dirty--;
		e->nr_unclean--;
		atomic_fetch_sub(&c->nr_unclean, 1);
	}
}

/*
 * Block i (valid) now holds data the device does not, written by seq.
 * The entry keeps the oldest seq among its dirty blocks, not the first to
 * arrive: writes to other blocks of the unit reach it out of their order
 * (cache=log: a record appended first may be cached after a newer one),
 * and retire may pass only records older than every dirty block's.
 */
static void
mark_dirty(struct cache *c, struct centry *e, uint32_t i, uint64_t seq)
{
	bit_clear(ra_bits(c, e), i); /* a read now hits the write */
	if (bit_test(dirty_bits(c, e), i)) {
		return;
	}
	bit_set(dirty_bits(c, e), i);
	if (!e->nr_dirty++) {
		e->dirty_seq = seq;
		e->dirty_ns = now_ns();
	} else {
		e->dirty_seq = MIN(e->dirty_seq, seq);
	}
	if (!bit_test(infl_bits(c, e), i)) {
		e->nr_unclean++;
		atomic_fetch_add(&c->nr_unclean, 1);
	}
}

/* Block i (valid, dirty, not in flight) equals the device now. */
static void
mark_clean(struct cache *c, struct centry *e, uint32_t i)
{
	if (!bit_test(dirty_bits(c, e), i)) {
		return;
	}
	bit_clear(dirty_bits(c, e), i);
	e->nr_dirty--;
	e->nr_unclean--;
	atomic_fetch_sub(&c->nr_unclean, 1);
}

/* ---- eviction and room ------------------------------------------------- */

/* Drop the clean blocks of an entry nobody holds. */
static void
evict_entry(struct cache *c, struct shard *s, struct centry *e,
	    struct page_list *l, uint64_t *freed)
{
	uint32_t nb = unit_blocks(c, e->unit);

	for (uint32_t i = 0; i < nb && e->nr_valid > e->nr_unclean; i++) {
		if (bit_test(valid_bits(c, e), i) &&
		    !bit_test(dirty_bits(c, e), i) &&
		    !bit_test(infl_bits(c, e), i)) {
			page_drop(c, e, i, l);
			(*freed)++;
		}
	}
	entry_settle(c, s, e, false);
}

/* Does e hold blocks read ahead and not read yet? */
static bool
has_unread_ra(const struct cache *c, struct centry *e)
{
	for (uint32_t w = 0; w < c->words; w++) {
		if (ra_bits(c, e)[w]) {
			return true;
		}
	}
	return false;
}

/*
 * Evict clean blocks, least recently used entries of each shard first,
 * until `want` pages are free (or nothing clean is left); with keep_ra
 * (read-ahead making room), not from entries holding read-ahead nobody
 * has read yet: the LRU is per shard, and a window just read ahead may
 * be the oldest entry of its shard.
 */
static void
evict_some(struct cache *c, uint64_t want, bool keep_ra)
{
	static atomic_uint start;
	unsigned first = atomic_fetch_add(&start, 1);
	struct page_list l = { .n = 0 };
	uint64_t freed = 0;

	for (unsigned k = 0; k < CACHE_SHARDS && freed < want; k++) {
		struct shard *s = &c->shards[(first + k) % CACHE_SHARDS];
		struct centry *e, *next;

		pthread_mutex_lock(&s->lock);
		for (e = s->lru_head; e && freed < want; e = next) {
			next = e->lnext;
			if (!e->wb && !e->pin_id &&
			    !(keep_ra && has_unread_ra(c, e))) {
				evict_entry(c, s, e, &l, &freed);
			}
		}
		pthread_mutex_unlock(&s->lock);
		page_list_flush(c, &l);
	}
}

static void
evict(struct cache *c, uint64_t want)
{
	evict_some(c, want, false);
}

static bool thread_running(struct cache *c);
static void cache_stop(struct cache *c);
static void wb_kick(struct cache *c);
static int writeback_round(struct cache *c, bool everything, uint8_t *buf,
			   uint64_t *bytes);

/*
 * Make room for n pages (not reserved: the caller tries again).  Evicts
 * clean blocks; when that is not enough, waits for write-back to make
 * some clean (writes back itself when no thread runs).  Never -ENOSPC:
 * only the device's error, when write-back fails.
 */
static int
make_room(struct cache *c, uint64_t n, bool *waited)
{
	for (;;) {
		uint64_t mark, bytes = 0;
		int r;

		pthread_mutex_lock(&c->pool.lock);
		mark = c->pool.space_gen;
		pthread_mutex_unlock(&c->pool.lock);
		if (pool_room(c) >= n) {
			return 0;
		}
		evict(c, n);
		if (pool_room(c) >= n) {
			return 0;
		}
		r = atomic_load(&c->wb_error);
		if (r < 0) {
			return r;
		}
		if (!*waited) {
			*waited = true;
			atomic_fetch_add(&c->st.waits, 1);
		}
		if (!thread_running(c)) {
			r = writeback_round(c, true, NULL, &bytes);
			if (r < 0) {
				return r;
			}
			if (bytes) {
				continue;
			}
		}
		atomic_fetch_add(&c->waiting, 1);
		wb_kick(c);
		pthread_mutex_lock(&c->pool.lock);
		while (c->pool.space_gen == mark &&
		       pool_room_locked(&c->pool) < n) {
			pthread_cond_wait(&c->pool.space, &c->pool.lock);
		}
		pthread_mutex_unlock(&c->pool.lock);
		atomic_fetch_sub(&c->waiting, 1);
	}
}

/* ---- reads ------------------------------------------------------------- */

/*
 * Copy the cached blocks of unit u within [off, end); mark them got.
 * *ra: one of them was read ahead (and is read now, for the first time).
 */
static void
read_unit(struct cache *c, uint64_t u, uint8_t *buf, uint64_t off, uint64_t end,
	  uint64_t *got, uint64_t b0, bool *ra)
{
	struct shard *s = shard_of(c, u);
	uint64_t base = u * c->unit;
	uint32_t i0, i1;
	struct centry *e;

	unit_span(c, u, off, end, &i0, &i1);
	pthread_mutex_lock(&s->lock);
	e = lookup(c, u);
	if (e && e->nr_valid) {
		uint32_t r = rank(c, e, i0);

		for (uint32_t i = i0; i < i1; i++) {
			uint64_t at = base + (uint64_t)i * c->block;
			uint64_t lo = MAX(at, off);
			uint64_t hi = MIN(at + c->block, end);

			if (!bit_test(valid_bits(c, e), i)) {
				continue;
			}
			memcpy(buf + (lo - off), e->page[r++] + (lo - at),
			       hi - lo);
			bit_set(got, at / c->block - b0);
			if (bit_test(ra_bits(c, e), i)) {
				bit_clear(ra_bits(c, e), i);
				*ra = true;
			}
		}
		entry_settle(c, s, e, true);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Copy what the cache holds of [off, end); false when nothing is missing. */
static bool
read_cached(struct cache *c, uint8_t *buf, uint64_t off, uint64_t end,
	    uint64_t *got, bool *ra, uint64_t *lo, uint64_t *hi)
{
	uint64_t b0 = off / c->block, nb = DIV_ROUND_UP(end, c->block) - b0;
	uint64_t i = 0, j = nb;

	for (uint64_t u = off / c->unit; u <= (end - 1) / c->unit; u++) {
		if (abit_test(c->present, u)) {
			read_unit(c, u, buf, off, end, got, b0, ra);
		}
	}
	while (i < nb && bit_test(got, i)) {
		i++;
	}
	while (j > i && bit_test(got, j - 1)) {
		j--;
	}
	*lo = MAX(off, (b0 + i) * c->block);
	*hi = MIN(end, (b0 + j) * c->block);
	return i < j;
}

/* Read the blocks not got from the device, run by run. */
static int
read_missing(struct cache *c, uint8_t *buf, uint64_t off, uint64_t end,
	     const uint64_t *got)
{
	uint64_t b0 = off / c->block, nb = DIV_ROUND_UP(end, c->block) - b0;
	int r = 0;

	for (uint64_t i = 0; i < nb && r == 0;) {
		uint64_t j, lo, hi;

		while (i < nb && bit_test(got, i)) {
			i++;
		}
		if (i == nb) {
			break;
		}
		j = i;
		while (j < nb && !bit_test(got, j)) {
			j++;
		}
		lo = MAX(off, (b0 + i) * c->block);
		hi = MIN(end, (b0 + j) * c->block);
		note_members(c);
		r = c->be.read(c->be.ctx, buf + (lo - off), hi - lo, lo);
		i = j;
	}
	return r;
}

/*
 * The cached blocks from memory, the rest from the device.  A sequential
 * reader's next window is asked for first (read by the worker while this
 * one is answered); blocks missing here that a window queued or being
 * read covers are waited for and taken from the cache.
 */
int
cache_pread(struct cache *c, void *buf, uint64_t count, uint64_t off)
{
	uint64_t end = off + count, b0 = off / c->block;
	uint64_t nb = DIV_ROUND_UP(end, c->block) - b0, lo, hi;
	uint64_t small[128], *got = small;
	struct ra_req run;
	bool missing, ra = false;
	int r = 0;

	if (!count) {
		return 0;
	}
	note_client(c);
	if (nb > 64 * ARRAY_SIZE(small)) {
		got = calloc(DIV_ROUND_UP(nb, 64), sizeof(*got));
		if (!got) {
			return -ENOMEM;
		}
	} else {
		memset(small, 0, DIV_ROUND_UP(nb, 64) * sizeof(*got));
	}
	ra_note(c, off, count, &run);
	missing = read_cached(c, buf, off, end, got, &ra, &lo, &hi);
	if (missing && ra_wait(c, lo, hi)) {
		missing = read_cached(c, buf, off, end, got, &ra, &lo, &hi);
	}
	if (missing) {
		r = read_missing(c, buf, off, end, got);
	}
	atomic_fetch_add_explicit(missing ? &c->st.read_misses
					  : &c->st.read_hits,
				  1, memory_order_relaxed);
	if (ra) {
		atomic_fetch_add_explicit(&c->st.ra_hits, 1,
					  memory_order_relaxed);
	}
	if (got != small) {
		free(got);
	}
	if (run.hi > run.lo) {
		ra_run(c, &run); /* no workers: after the data */
	}
	return r;
}

/* ---- direct operations: on the device before the reply ----------------- */

struct dop_req {
	struct dop_req *prev, *next; /* c->dops, under dop_lock */
	enum dop op;
	const uint8_t *buf; /* the data of a write */
	uint64_t off, end;
	uint64_t id;	   /* pin_id of the entries it holds */
	uint64_t reserved; /* DOP_WT: pages promised for new blocks */
	uint64_t seq;	   /* for blocks it leaves dirty; 0 until needed */
};

/* The direct operations in flight, for fill_gaps (dop_lock). */
static void
dop_enter(struct cache *c, struct dop_req *d)
{
	pthread_mutex_lock(&c->dop_lock);
	DLIST_PUSH(c->dops, d);
	pthread_mutex_unlock(&c->dop_lock);
}

static void
dop_leave(struct cache *c, struct dop_req *d)
{
	pthread_mutex_lock(&c->dop_lock);
	DLIST_UNLINK(c->dops, d);
	pthread_mutex_unlock(&c->dop_lock);
}

/* Does a direct operation in flight touch [lo, hi)? */
static bool
dop_overlaps(struct cache *c, uint64_t lo, uint64_t hi)
{
	bool hit = false;

	pthread_mutex_lock(&c->dop_lock);
	for (struct dop_req *d = c->dops; d && !hit; d = d->next) {
		hit = d->off < hi && lo < d->end;
	}
	pthread_mutex_unlock(&c->dop_lock);
	return hit;
}

/*
 * Pin the entries of the request's units: wait until no write-back or
 * other direct operation holds each, then hold it.  Units without an
 * entry are skipped (nothing cached to keep in line) unless `create`.
 * In unit order, so two of them never wait for each other in a circle.
 */
static int
pin_units(struct cache *c, struct dop_req *d, bool create)
{
	uint64_t u1 = (d->end - 1) / c->unit + 1;

	for (uint64_t u = d->off / c->unit; u < u1; u++) {
		struct shard *s;

		if (!create && (u = abit_next(c->present, u, u1)) == u1) {
			break;
		}
		s = shard_of(c, u);
		for (;;) {
			uint64_t mark = done_mark(c);
			struct centry *e;
			bool held;

			pthread_mutex_lock(&s->lock);
			e = create ? lookup_or_new(c, u) : lookup(c, u);
			if (e && !e->wb && !e->pin_id) {
				e->pin_id = d->id;
			}
			/* Once let go, an entry not ours may be freed. */
			held = !e || e->pin_id == d->id;
			pthread_mutex_unlock(&s->lock);
			if (!e && create) {
				return -ENOMEM;
			}
			if (held) {
				break;
			}
			done_wait(c, mark);
		}
	}
	return 0;
}

static void
unpin_units(struct cache *c, struct dop_req *d)
{
	uint64_t u1 = (d->end - 1) / c->unit + 1;

	for (uint64_t u = d->off / c->unit;
	     (u = abit_next(c->present, u, u1)) < u1; u++) {
		struct shard *s = shard_of(c, u);
		struct centry *e;

		pthread_mutex_lock(&s->lock);
		e = lookup(c, u);
		if (e && e->pin_id == d->id) {
			e->pin_id = 0;
			entry_settle(c, s, e, false);
		}
		pthread_mutex_unlock(&s->lock);
	}
	done_signal(c);
}

/* The request's bytes of [lo, hi) into a page that holds block `at`. */
static void
copy_in(const struct dop_req *d, uint8_t *page, uint64_t at, uint64_t lo,
	uint64_t hi)
{
	if (d->op == DOP_ZERO) {
		memset(page + (lo - at), 0, hi - lo);
	} else {
		memcpy(page + (lo - at), d->buf + (lo - d->off), hi - lo);
	}
}

/* DOP_WT: cache a block the device now holds (when a page is at hand). */
static void
insert_clean(struct cache *c, struct dop_req *d, struct centry *e, uint32_t i,
	     uint64_t at, uint64_t hi)
{
	uint8_t *page;

	if (!d->reserved || entry_reserve(e, 1) < 0) {
		return;
	}
	d->reserved--;
	page = pool_get(c); /* takes one of the reservations */
	if (page) {
		page_insert(c, e, i, page);
		copy_in(d, page, at, at, hi);
	}
}

/*
 * After the device did the request: bring block i of e in line.
 *
 *   op            entry held by the request     entry not held (it came
 *                                               after the pin; concurrent)
 *   trim          drop a clean block; keep dirty and in-flight ones (they
 *                 read as the old data, as trim allows, and are written)
 *   write, zero   whole block: the request's    whole block or clean: drop
 *   (and bypass,  bytes, clean (bypass, zero:   (unless in flight); else
 *   writethrough) drop); part: patched, state   patched, dirty (the device
 *                 kept (device == page there)   may have the other's data)
 *   not cached    writethrough, whole block: cached clean; else nothing
 */
static void
patch_block(struct cache *c, struct dop_req *d, struct centry *e, uint32_t i,
	    struct page_list *l)
{
	uint64_t at = e->unit * c->unit + (uint64_t)i * c->block;
	uint64_t bend = at + block_len(c, e->unit, i);
	uint64_t lo = MAX(at, d->off), hi = MIN(bend, d->end);
	bool full = lo == at && hi == bend, ours = e->pin_id == d->id;
	bool dirty = bit_test(dirty_bits(c, e), i);
	bool infl = bit_test(infl_bits(c, e), i);

	if (!bit_test(valid_bits(c, e), i)) {
		if (d->op == DOP_WT && ours && full) {
			insert_clean(c, d, e, i, at, hi);
		}
		return;
	}
	if (d->op == DOP_TRIM) {
		if (!dirty && !infl) {
			page_drop(c, e, i, l);
		}
		return;
	}
	if (ours && full && (d->op == DOP_BYPASS || d->op == DOP_ZERO)) {
		page_drop(c, e, i, l);
		return;
	}
	if (!ours && !infl && (full || !dirty)) {
		page_drop(c, e, i, l);
		return;
	}
	copy_in(d, page_of(c, e, i), at, lo, hi);
	if (ours && full) {
		mark_clean(c, e, i);
	} else if (!ours) {
		if (!d->seq) {
			d->seq = atomic_fetch_add(&c->seq, 1) + 1;
		}
		mark_dirty(c, e, i, d->seq);
	}
}

static void
patch_units(struct cache *c, struct dop_req *d)
{
	uint64_t u1 = (d->end - 1) / c->unit + 1;
	struct page_list l = { .n = 0 };

	for (uint64_t u = d->off / c->unit;
	     (u = abit_next(c->present, u, u1)) < u1; u++) {
		struct shard *s = shard_of(c, u);
		uint32_t i0, i1;
		struct centry *e;

		unit_span(c, u, d->off, d->end, &i0, &i1);
		pthread_mutex_lock(&s->lock);
		e = lookup(c, u);
		for (uint32_t i = i0; e && i < i1; i++) {
			patch_block(c, d, e, i, &l);
		}
		if (e) {
			entry_settle(c, s, e, false);
		}
		pthread_mutex_unlock(&s->lock);
		page_list_flush(c, &l);
	}
}

/* Writethrough: pages for the whole blocks, if there is room soon. */
static void
dop_reserve(struct cache *c, struct dop_req *d)
{
	uint64_t lo = ROUND_UP(d->off, c->block);
	uint64_t hi = d->end == c->size ? d->end : ROUND_DOWN(d->end, c->block);
	uint64_t n = hi > lo ? DIV_ROUND_UP(hi - lo, c->block) : 0;

	if (!n || n > c->pool.cap / BYPASS_FRACTION) {
		return;
	}
	if (!pool_reserve(c, n)) {
		evict(c, n);
		if (!pool_reserve(c, n)) {
			return;
		}
	}
	d->reserved = n;
}

int
cache_direct(struct cache *c, enum dop op, const void *buf, uint64_t count,
	     uint64_t off, uint32_t flags, uint64_t seq)
{
	struct dop_req d = { .op = op,
			     .buf = buf,
			     .off = off,
			     .end = off + count,
			     .seq = seq };
	int r;

	if (!count) {
		return 0;
	}
	d.id = atomic_fetch_add(&c->op_ids, 1) + 1;
	note_members(c);
	dop_enter(c, &d);
	r = pin_units(c, &d, op == DOP_WT);
	if (r == 0) {
		switch (op) {
		case DOP_TRIM:
			r = c->be.trim(c->be.ctx, count, off, flags);
			break;
		case DOP_ZERO:
			r = c->be.zero(c->be.ctx, count, off, flags);
			break;
		default:
			r = c->be.write(c->be.ctx, buf, count, off,
					flags & RAID_FUA);
			break;
		}
	}
	if (r == 0) {
		if (op == DOP_WT) {
			dop_reserve(c, &d);
		}
		patch_units(c, &d);
		pool_unreserve(c, d.reserved);
	}
	unpin_units(c, &d);
	dop_leave(c, &d);
	return r;
}

/* ---- read-ahead: blocks from the device, cached clean ------------------ */

/*
 * Read-ahead keeps the cache's invariant (a block not cached is on the
 * device as the newest acknowledged write left it) by never letting the
 * bytes it read land on a block that changed since.  It pins each unit
 * of its window as a direct operation does (creating the entry, so that
 * later direct operations find it and wait), reads the device, and
 * copies the bytes, clean, only into blocks still not valid, under the
 * shard lock, before it lets go.  Case by case, why that is safe:
 *
 *   cached write      makes its blocks valid (dirty) under the shard lock:
 *                     before the copy they are skipped; after it, the
 *                     write overwrites the clean page as any.
 *   FUA, bypass,      one that holds a unit first: the unit is skipped.
 *   unaligned edge,   One that comes after the pin waits for it, then
 *   writethrough,     brings the clean blocks in line (patch_block).
 *   trim, zero        One that found the unit without an entry did not
 *                     pin it and may be writing the device under the
 *                     read: it stays in c->dops until it has patched the
 *                     cache, so a window such an operation overlaps,
 *                     seen there after the pins, is given up.  One that
 *                     lists itself after that check reads `present`
 *                     after our entry set it (dop_lock orders the two),
 *                     so it pins, and waits.
 *   write-back        never starts on a pinned unit; a unit being written
 *                     back is skipped (its blocks are cached anyway).
 *   eviction          skips pinned entries, so no block valid at the pin
 *                     turns invalid and then gets older bytes.
 *   cache=log         reads as in RAM mode; its writes, zeros and trims
 *                     reach the cache or the device by the paths above
 *                     (the records add order and durability), a failed
 *                     log drains by write-back, and replay is over
 *                     before the cache serves.
 *
 * Room: pages free, or freed by evicting clean blocks; never while
 * writers wait for room or the cache is PRESSURE_PCT dirty (then it gives
 * up).  A window is at most a sixteenth of the cache (ra_init): the
 * RA_THREADS windows reserved at once leave a writer room (free or clean)
 * in the quarter that is not dirty.
 */

/*
 * Pin unit u for read-ahead if nobody holds it and it lacks blocks in
 * [lo, hi): the span of those blocks into [*first, *last), their count
 * to *need.  false: leave the unit alone.
 */
static bool
ra_pin_unit(struct cache *c, uint64_t id, uint64_t u, uint64_t lo, uint64_t hi,
	    uint64_t *first, uint64_t *last, uint64_t *need)
{
	struct shard *s = shard_of(c, u);
	uint64_t base = u * c->unit;
	uint32_t i0, i1, n = 0, f, l = 0;
	struct centry *e;
	bool pinned = false;

	unit_span(c, u, lo, hi, &i0, &i1);
	f = i1;
	pthread_mutex_lock(&s->lock);
	e = lookup(c, u);
	for (uint32_t i = i0; i < i1 && (!e || (!e->wb && !e->pin_id)); i++) {
		if (!e || !bit_test(valid_bits(c, e), i)) {
			n++;
			f = MIN(f, i);
			l = i + 1;
		}
	}
	if (n && !e) {
		e = entry_new(c, u);
	}
	if (n && e) {
		e->pin_id = id;
		pinned = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (pinned) {
		*first = MIN(*first, base + (uint64_t)f * c->block);
		*last = MAX(*last, MIN(base + (uint64_t)l * c->block, c->size));
		*need += n;
	}
	return pinned;
}

/* Copy [lo, hi) of buf (the device's bytes there) into the blocks of
 * pinned unit u that are still not valid, clean; pages reserved. */
static void
ra_insert_unit(struct cache *c, uint64_t u, const uint8_t *buf, uint64_t lo,
	       uint64_t hi, uint64_t *reserved, uint64_t *bytes)
{
	struct shard *s = shard_of(c, u);
	uint64_t base = u * c->unit;
	uint32_t i0, i1;
	struct centry *e;

	unit_span(c, u, lo, hi, &i0, &i1);
	pthread_mutex_lock(&s->lock);
	e = lookup(c, u); /* pinned: it is there */
	for (uint32_t i = i0; i < i1 && *reserved; i++) {
		uint64_t at = base + (uint64_t)i * c->block;
		uint8_t *page;

		if (bit_test(valid_bits(c, e), i) || entry_reserve(e, 1) < 0) {
			continue;
		}
		(*reserved)--;
		page = pool_get(c); /* takes one of the reservations */
		if (!page) {
			continue;
		}
		page_insert(c, e, i, page);
		memcpy(page, buf + (at - lo), block_len(c, u, i));
		bit_set(ra_bits(c, e), i);
		*bytes += block_len(c, u, i);
	}
	entry_settle(c, s, e, true);
	pthread_mutex_unlock(&s->lock);
}

/* Pages for read-ahead, without making anyone wait (see above). */
static bool
ra_reserve(struct cache *c, uint64_t n)
{
	if (atomic_load(&c->waiting) ||
	    atomic_load(&c->nr_unclean) * 100 >= c->pool.cap * PRESSURE_PCT) {
		return false;
	}
	if (pool_reserve(c, n)) {
		return true;
	}
	evict_some(c, n - MIN(n, pool_room(c)), true);
	return pool_reserve(c, n);
}

/*
 * Read-ahead into units [lo / unit, up to RA_MAX_UNITS of them) of
 * [lo, hi): 1 to go on with the rest of the window, 0 to give it up (no
 * room), or -errno.
 */
static int
ra_fill_units(struct cache *c, uint64_t lo, uint64_t hi, uint8_t *buf,
	      struct ra_done *done)
{
	struct dop_req d = { .off = lo, .end = hi };
	uint64_t u0 = lo / c->unit, u1 = (hi - 1) / c->unit + 1;
	uint64_t first = hi, last = lo, need = 0, pinned = 0;
	int r = 1;

	d.id = atomic_fetch_add(&c->op_ids, 1) + 1;
	for (uint64_t u = u0; u < u1; u++) {
		if (ra_pin_unit(c, d.id, u, lo, hi, &first, &last, &need)) {
			pinned |= 1ull << (u - u0);
		}
	}
	if (!pinned || dop_overlaps(c, first, last)) {
		/* nothing to read here, or a direct operation may be
		 * writing it: go on with the rest */
	} else if (!ra_reserve(c, need)) {
		r = 0;
	} else {
		uint64_t wall = now_ns(), cpu = thread_cpu_ns();

		note_members(c);
		r = c->be.read(c->be.ctx, buf, last - first, first);
		done->cpu_ns += thread_cpu_ns() - cpu;
		done->wall_ns += now_ns() - wall;
		for (uint64_t u = u0; r == 0 && u < u1; u++) {
			if (pinned & (1ull << (u - u0))) {
				ra_insert_unit(c, u, buf, first, last, &need,
					       &done->bytes);
			}
		}
		pool_unreserve(c, need);
		r = r == 0 ? 1 : r;
	}
	unpin_units(c, &d);
	return r;
}

int
cache_ra_fill(struct cache *c, uint64_t lo, uint64_t hi, uint8_t *buf,
	      struct ra_done *done)
{
	int r = 1;

	_Static_assert(RA_MAX_UNITS <= 64, "a unit mask is one word");
	*done = (struct ra_done){ .bytes = 0 };
	lo = ROUND_DOWN(lo, c->block);
	hi = MIN(hi, c->size);
	while (r > 0 && lo < hi) {
		uint64_t end = MIN(hi, (lo / c->unit + RA_MAX_UNITS) * c->unit);

		r = ra_fill_units(c, lo, end, buf, done);
		lo = end;
	}
	return MIN(r, 0);
}

/* ---- cached writes ----------------------------------------------------- */

/* Copy whole blocks [i0, i1) of unit u in, dirty; pages reserved. */
static int
copy_blocks(struct cache *c, struct centry *e, const uint8_t *src, uint32_t i0,
	    uint32_t i1, uint64_t seq, uint32_t need)
{
	int r = 0;

	for (uint32_t i = i0; i < i1; i++) {
		uint8_t *page = page_of(c, e, i);

		if (!page) {
			page = pool_get(c);
			need--;
			if (!page) {
				r = -ENOMEM;
				break;
			}
			page_insert(c, e, i, page);
		}
		memcpy(page, src + (uint64_t)(i - i0) * c->block,
		       block_len(c, e->unit, i));
		mark_dirty(c, e, i, seq);
	}
	pool_unreserve(c, need);
	return r;
}

/* Whole blocks [i0, i1) of unit u, cached dirty; waits for room. */
static int
write_unit(struct cache *c, const uint8_t *src, uint64_t u, uint32_t i0,
	   uint32_t i1, uint64_t seq, bool *hit, bool *waited)
{
	struct shard *s = shard_of(c, u);

	for (;;) {
		uint32_t need = 0;
		struct centry *e;
		bool full = false;
		int r = 0;

		pthread_mutex_lock(&s->lock);
		e = lookup_or_new(c, u);
		for (uint32_t i = i0; e && i < i1; i++) {
			need += !bit_test(valid_bits(c, e), i);
		}
		r = !e ? -ENOMEM : need ? entry_reserve(e, need) : 0;
		if (r == 0 && need && !pool_reserve(c, need)) {
			r = -EAGAIN;
		}
		if (r == 0) {
			*hit &= need == 0;
			r = copy_blocks(c, e, src, i0, i1, seq, need);
			/* A stripe just filled: due now, not at the next poll.
			 */
			full = r == 0 && c->hold_partial && !e->wb &&
			       e->nr_dirty == unit_blocks(c, u);
		}
		if (e) {
			entry_settle(c, s, e, true);
		}
		pthread_mutex_unlock(&s->lock);
		if (full && thread_running(c)) {
			wb_kick(c);
		}
		if (r != -EAGAIN) {
			return r;
		}
		r = make_room(c, need, waited);
		if (r < 0) {
			return r;
		}
	}
}

/*
 * Part of one block: patched in place when the block is cached, else
 * written to the device (its other bytes are there, not here).
 */
static int
write_edge(struct cache *c, const uint8_t *src, uint64_t len, uint64_t off,
	   uint64_t seq, bool *hit)
{
	uint64_t u = off / c->unit;
	uint32_t i = (uint32_t)((off - u * c->unit) / c->block);
	uint64_t at = u * c->unit + (uint64_t)i * c->block;
	struct shard *s = shard_of(c, u);
	struct centry *e;
	uint8_t *page = NULL;

	pthread_mutex_lock(&s->lock);
	e = lookup(c, u);
	if (e) {
		page = page_of(c, e, i);
	}
	if (page) {
		memcpy(page + (off - at), src, len);
		mark_dirty(c, e, i, seq);
		entry_settle(c, s, e, true);
	}
	pthread_mutex_unlock(&s->lock);
	if (page) {
		return 0;
	}
	*hit = false;
	return cache_direct(c, DOP_WRITE, src, len, off, 0, seq);
}

/* A write answered from memory: edges, then whole blocks unit by unit. */
int
cache_write_cached(struct cache *c, const uint8_t *buf, uint64_t count,
		   uint64_t off, uint64_t seq)
{
	uint64_t end = off + count;
	uint64_t head_end = MIN(ROUND_DOWN(off, c->block) + c->block, c->size);
	uint64_t mid = off, tail = end, tb;
	bool hit = true, waited = false;
	int r = 0;

	if (!seq) {
		seq = atomic_fetch_add(&c->seq, 1) + 1;
	}
	if (off % c->block || end < head_end) {
		mid = MIN(end, head_end);
		r = write_edge(c, buf, mid - off, off, seq, &hit);
	}
	tb = ROUND_DOWN(end - 1, c->block);
	if (mid < end && tb >= mid && end < MIN(tb + c->block, c->size)) {
		tail = tb;
	}
	for (uint64_t at = mid; r == 0 && at < tail;) {
		uint64_t u = at / c->unit, base = u * c->unit;
		uint64_t stop = MIN(tail, base + c->unit);
		uint32_t i0 = (uint32_t)((at - base) / c->block);
		uint32_t i1 = (uint32_t)DIV_ROUND_UP(stop - base, c->block);

		r = write_unit(c, buf + (at - off), u, i0, i1, seq, &hit,
			       &waited);
		at = stop;
	}
	if (r == 0 && tail < end) {
		r = write_edge(c, buf + (tail - off), end - tail, tail, seq,
			       &hit);
	}
	atomic_fetch_add_explicit(&c->st.writes_cached, 1,
				  memory_order_relaxed);
	if (hit) {
		atomic_fetch_add_explicit(&c->st.write_hits, 1,
					  memory_order_relaxed);
	}
	return r;
}

/* The bytes this write continues a sequential run with (itself too). */
static uint64_t
stream_run(struct cache *c, uint64_t off, uint64_t len)
{
	uint64_t win = STREAM_WINDOW * len, run;
	struct stream *s = NULL, *old = &c->streams[0];

	pthread_mutex_lock(&c->seq_lock);
	for (unsigned i = 0; i < STREAMS && !s; i++) {
		struct stream *t = &c->streams[i];

		if (t->run && off + win >= t->end && off <= t->end + win) {
			s = t;
		}
		if (t->used < old->used) {
			old = t;
		}
	}
	if (s) {
		s->run += len;
		s->end = MAX(s->end, off + len);
	} else {
		s = old;
		*s = (struct stream){ .end = off + len, .run = len };
	}
	s->used = ++c->stream_clock;
	run = s->run;
	pthread_mutex_unlock(&c->seq_lock);
	return run;
}

/*
 * The part of a write that goes straight to the device: a sequential run
 * past the cutoff, or a write too large for the cache.  Where partial
 * units cost reads, only the whole units (full stripes: no reads either
 * way); their edges are cached, to meet the rest of their stripes.
 */
bool
cache_bypass_range(struct cache *c, uint64_t off, uint64_t count, uint64_t *lo,
		   uint64_t *hi)
{
	bool big = count / c->block > c->pool.cap / BYPASS_FRACTION;

	if (!big &&
	    (!c->seq_cutoff || stream_run(c, off, count) < c->seq_cutoff)) {
		return false;
	}
	*lo = off;
	*hi = off + count;
	if (c->hold_partial) {
		*lo = ROUND_UP_ANY(off, c->unit);
		*hi = ROUND_DOWN_ANY(off + count, c->unit);
	}
	return *hi > *lo;
}

int
cache_pwrite(struct cache *c, const void *buf, uint64_t count, uint64_t off,
	     uint32_t flags)
{
	const uint8_t *p = buf;
	uint64_t lo, hi;
	bool wt;
	int r;

	if (!count) {
		return 0;
	}
	note_client(c);
	r = c->be.writable(c->be.ctx);
	if (r < 0) {
		return r;
	}
	/* cache=log: the record appended first, FUA syncs it. */
	if (c->log && (r = lm_pwrite(c, buf, count, off, flags)) != LM_PASS) {
		return r;
	}
	wt = atomic_load(&c->writethrough);
	if (wt || (flags & RAID_FUA)) {
		atomic_fetch_add(&c->st.writes_direct, 1);
		return cache_direct(c, wt ? DOP_WT : DOP_WRITE, buf, count, off,
				    flags, 0);
	}
	if (!cache_bypass_range(c, off, count, &lo, &hi)) {
		return cache_write_cached(c, p, count, off, 0);
	}
	atomic_fetch_add(&c->st.writes_bypassed, 1);
	r = lo > off ? cache_write_cached(c, p, lo - off, off, 0) : 0;
	if (r == 0) {
		r = cache_direct(c, DOP_BYPASS, p + (lo - off), hi - lo, lo, 0,
				 0);
	}
	if (r == 0 && off + count > hi) {
		r = cache_write_cached(c, p + (hi - off), off + count - hi, hi,
				       0);
	}
	return r;
}

/* Trim or zero (op): on the device before the reply, cache=log's record. */
static int
trim_or_zero(struct cache *c, enum dop op, uint64_t count, uint64_t off,
	     uint32_t flags)
{
	int r;

	note_client(c);
	if (c->log &&
	    (r = lm_trim_or_zero(c, op, count, off, flags)) != LM_PASS) {
		return r;
	}
	return cache_direct(c, op, NULL, count, off, flags, 0);
}

int
cache_trim(struct cache *c, uint64_t count, uint64_t off, uint32_t flags)
{
	return trim_or_zero(c, DOP_TRIM, count, off, flags);
}

int
cache_zero(struct cache *c, uint64_t count, uint64_t off, uint32_t flags)
{
	return trim_or_zero(c, DOP_ZERO, count, off, flags);
}

/* ---- write-back -------------------------------------------------------- */

/*
 * Units of a batch: as many as WB_BATCH_BYTES and a quarter of the cache
 * hold (one at least), a multiple of WB_DEPTH when it holds that many, so
 * that a batch's last round keeps every stripe writer busy.
 */
static unsigned
batch_units(const struct cache *c)
{
	uint64_t bytes =
		MIN(WB_BATCH_BYTES, c->pool.cap * c->block / WB_BATCH_FRACTION);
	unsigned n = (unsigned)MAX(1, bytes / c->unit);

	return n >= WB_DEPTH ? n - n % WB_DEPTH : n;
}

/* A batch buffer: the units' data, their gaps read (RAID 5 only: the
 * other levels write runs, fill_gaps never runs), two masks per unit. */
static size_t
batch_bytes(const struct cache *c)
{
	return batch_units(c) * ((c->hold_partial ? 2 : 1) * c->unit +
				 2 * c->words * sizeof(uint64_t));
}

static void
batch_init(struct cache *c, struct wb_batch *b, uint8_t *buf)
{
	*b = (struct wb_batch){ .max = batch_units(c),
				.buf = buf,
				.seq = UINT64_MAX };
	b->spare = c->hold_partial ? buf + (size_t)b->max * c->unit : NULL;
	b->mask = (uint64_t *)(buf + (size_t)b->max * c->unit *
					     (c->hold_partial ? 2 : 1));
	b->wmask = b->mask + (size_t)b->max * c->words;
}

/*
 * A batch buffer: a free one, a new one while fewer than WB_BUFS exist,
 * else the next one given back (NULL: no memory).  No caller holds one
 * while it waits for something a holder waits for: the thread waits for
 * a third only with its own batches completed, and a drain waits only for
 * write-backs in flight (whose batches have buffers) and direct
 * operations (which take none).
 */
static uint8_t *
buf_get(struct cache *c)
{
	uint8_t *b = NULL;
	bool make = false;

	pthread_mutex_lock(&c->buf_lock);
	while (!c->nr_bufs && c->bufs_made == WB_BUFS) {
		pthread_cond_wait(&c->buf_free, &c->buf_lock);
	}
	if (c->nr_bufs) {
		b = c->bufs[--c->nr_bufs];
	} else {
		make = true;
		c->bufs_made++;
	}
	pthread_mutex_unlock(&c->buf_lock);
	if (make && posix_memalign((void **)&b, IO_BUF_ALIGN, batch_bytes(c))) {
		pthread_mutex_lock(&c->buf_lock);
		c->bufs_made--;
		pthread_cond_signal(&c->buf_free);
		pthread_mutex_unlock(&c->buf_lock);
		b = NULL;
	}
	return b;
}

/* A free batch buffer, or a new one while fewer than WB_BUFS exist;
 * NULL (at once) when all are in use. */
static uint8_t *
buf_try(struct cache *c)
{
	bool free_one;

	pthread_mutex_lock(&c->buf_lock);
	free_one = c->nr_bufs || c->bufs_made < WB_BUFS;
	pthread_mutex_unlock(&c->buf_lock);
	return free_one ? buf_get(c) : NULL;
}

/* Give a batch buffer back (kept until the cache is freed). */
static void
buf_put(struct cache *c, uint8_t *b)
{
	pthread_mutex_lock(&c->buf_lock);
	c->bufs[c->nr_bufs++] = b;
	pthread_cond_signal(&c->buf_free);
	pthread_mutex_unlock(&c->buf_lock);
}

/* Dirty enough to write back now?  (The unit's shard lock held.) */
static bool
wb_eligible(const struct cache *c, const struct centry *e, bool everything,
	    uint64_t now)
{
	if (!e || !e->nr_dirty || e->wb || e->pin_id) {
		return false;
	}
	return everything || !c->hold_partial ||
	       e->nr_dirty == unit_blocks(c, e->unit) ||
	       now - e->dirty_ns >= c->hold_ns;
}

/* Claim e as the batch's next unit: dirty blocks copied out, in flight. */
static void
claim(struct cache *c, struct centry *e, struct wb_batch *b)
{
	unsigned k = b->n++;
	uint64_t *mask = b->mask + (size_t)k * c->words;
	uint8_t *dst = b->buf + (size_t)k * c->unit;
	uint32_t nb = unit_blocks(c, e->unit), r = 0, n = 0;

	if (!k) {
		b->u0 = e->unit;
	}
	memset(mask, 0, c->words * sizeof(*mask));
	for (uint32_t i = 0; i < nb; i++) {
		if (!bit_test(valid_bits(c, e), i)) {
			continue;
		}
		if (bit_test(dirty_bits(c, e), i)) {
			memcpy(dst + (size_t)i * c->block, e->page[r],
			       block_len(c, e->unit, i));
			bit_set(mask, i);
			bit_set(infl_bits(c, e), i);
			bit_clear(dirty_bits(c, e), i);
			n++;
		}
		r++;
	}
	memcpy(b->wmask + (size_t)k * c->words, mask, c->words * sizeof(*mask));
	atomic_fetch_add(&c->nr_infl, n);
	e->nr_dirty = 0;
	e->wb = true;
	e->wb_seq = e->dirty_seq;
	e->dirty_seq = 0;
	b->seq = MIN(b->seq, e->wb_seq);
}

/* Is block g of the batch (unit g / unit_blocks) to be written? */
static bool
batch_claimed(const struct cache *c, const struct wb_batch *b, uint64_t g)
{
	return bit_test(b->wmask + (g / c->unit_blocks) * c->words,
			g % c->unit_blocks);
}

/*
 * Where a partial unit costs reads (RAID 5), the batch's claimed blocks
 * are not written run by run (a read-modify-write each, with its seeks)
 * but as one span, from the first claimed block to the last, the gaps
 * read from the device first: one read and one write for the batch, whole
 * stripes inside it.  A gap's newer data, if a client wrote it meanwhile,
 * is dirty in the cache and written after.  A direct operation that comes
 * now pins the units and waits for the write-back; one that started
 * before the units had an entry did not pin them and may be writing in
 * the span: then the gaps are not read (the list of direct operations in
 * flight says), and the runs are written one by one.
 */
static int
fill_gaps(struct cache *c, struct wb_batch *b)
{
	uint64_t total = (uint64_t)b->n * c->unit_blocks, first = total;
	uint64_t last = 0, base = b->u0 * c->unit, lo, hi;
	bool gap = false;
	int r;

	for (uint64_t g = 0; g < total; g++) {
		if (batch_claimed(c, b, g)) {
			gap |= first < total && g > last + 1;
			first = MIN(first, g);
			last = g;
		}
	}
	if (!gap) {
		return 0;
	}
	lo = base + first * c->block;
	hi = MIN(base + (last + 1) * c->block, c->size);
	if (dop_overlaps(c, lo, hi)) {
		return 0; /* written run by run instead */
	}
	r = c->be.read(c->be.ctx, b->spare, hi - lo, lo);
	for (uint64_t g = first; r == 0 && g <= last; g++) {
		if (!batch_claimed(c, b, g)) {
			memcpy(b->buf + g * c->block,
			       b->spare + (g - first) * c->block, c->block);
			bit_set(b->wmask + (g / c->unit_blocks) * c->words,
				g % c->unit_blocks);
		}
	}
	return r;
}

/* The write-back of unit k of the batch completed (r: how). */
static void
complete_unit(struct cache *c, struct wb_batch *b, unsigned k, int r)
{
	uint64_t u = b->u0 + k, *mask = b->mask + (size_t)k * c->words;
	struct shard *s = shard_of(c, u);
	uint32_t nb = unit_blocks(c, u), had;
	struct centry *e;

	pthread_mutex_lock(&s->lock);
	e = lookup(c, u); /* held by e->wb: it is there */
	had = e->nr_dirty;
	for (uint32_t i = 0; i < nb; i++) {
		if (!bit_test(mask, i)) {
			continue;
		}
		bit_clear(infl_bits(c, e), i);
		atomic_fetch_sub(&c->nr_infl, 1);
		if (bit_test(dirty_bits(c, e), i)) {
			continue; /* written again meanwhile: stays dirty */
		}
		if (r == 0) {
			e->nr_unclean--;
			atomic_fetch_sub(&c->nr_unclean, 1);
		} else {
			bit_set(dirty_bits(c, e), i);
			e->nr_dirty++;
		}
	}
	if (r < 0 && e->nr_dirty) {
		e->dirty_seq = had ? MIN(e->dirty_seq, e->wb_seq) : e->wb_seq;
	}
	e->wb = false;
	entry_settle(c, s, e, false);
	pthread_mutex_unlock(&s->lock);
}

/* ---- the stripe writers ------------------------------------------------- */

/*
 * Take the next piece, write it, count it (io_lock held, let go across).
 * A piece of a batch that failed already is not written: the whole batch
 * is dirty again (complete_unit), and a failing device is not kept busy
 * with the rest of it.
 */
static void
io_take(struct cache *c)
{
	struct wb_piece p = c->io_piece[c->io_next++ % c->io_ring];
	struct io_slot *sl = &c->io_slot[p.slot];
	int r = sl->err;

	pthread_mutex_unlock(&c->io_lock);
	if (r == 0) {
		r = c->be.write(c->be.ctx, p.buf, p.len, p.off, 0);
	}
	pthread_mutex_lock(&c->io_lock);
	if (r < 0 && !sl->err) {
		sl->err = r;
	}
	if (--sl->left == 0) {
		pthread_cond_broadcast(&c->io_done);
	}
}

static void *
io_main(void *arg)
{
	struct cache *c = arg;

	pthread_mutex_lock(&c->io_lock);
	for (;;) {
		while (!c->io_stop && c->io_next >= c->io_avail) {
			pthread_cond_wait(&c->io_more, &c->io_lock);
		}
		if (c->io_stop) {
			break;
		}
		io_take(c);
	}
	pthread_mutex_unlock(&c->io_lock);
	return NULL;
}

/*
 * A slot for a batch's pieces, if the stripe writers run, no one else is
 * staging pieces, and a slot is free; else -1 (the batch is written from
 * its own thread).
 */
static int
io_acquire(struct cache *c)
{
	int slot = -1;

	if (!c->nr_io_threads) {
		return -1;
	}
	pthread_mutex_lock(&c->io_lock);
	for (unsigned i = 0; i < IO_SLOTS && !c->io_building; i++) {
		struct io_slot *sl = &c->io_slot[i];

		if (!sl->busy) {
			*sl = (struct io_slot){ .busy = true };
			c->io_building = true;
			slot = (int)i;
			break;
		}
	}
	pthread_mutex_unlock(&c->io_lock);
	return slot;
}

/* Stage [buf, buf+len) at off, cut at units (stripes); a piece beyond
 * io_cap (io_start's bound says none is) is written here and now.  The
 * slot's owner only (io_building): the writers see none before
 * io_publish, and the ring has room for IO_SLOTS batches. */
static int
io_add(struct cache *c, int slot, const uint8_t *buf, uint64_t len,
       uint64_t off)
{
	struct io_slot *sl = &c->io_slot[slot];
	int r = 0;

	while (len && r == 0) {
		uint64_t n = MIN(len, c->unit - off % c->unit);

		if (sl->n < c->io_cap) {
			c->io_piece[c->io_tail++ % c->io_ring] =
				(struct wb_piece){ .buf = buf,
						   .len = n,
						   .off = off,
						   .slot = (unsigned)slot };
			sl->n++;
		} else {
			r = c->be.write(c->be.ctx, buf, n, off, 0);
		}
		buf += n;
		off += n;
		len -= n;
	}
	return r;
}

/* Hand the staged pieces to the writers, behind those queued before. */
static void
io_publish(struct cache *c, int slot)
{
	pthread_mutex_lock(&c->io_lock);
	c->io_slot[slot].left = c->io_slot[slot].n;
	c->io_avail = c->io_tail;
	c->io_building = false;
	pthread_cond_broadcast(&c->io_more);
	pthread_mutex_unlock(&c->io_lock);
}

/* Wait until the slot's pieces are written; free it.  The first error,
 * or 0. */
static int
io_wait(struct cache *c, int slot)
{
	struct io_slot *sl = &c->io_slot[slot];
	int r;

	pthread_mutex_lock(&c->io_lock);
	while (sl->left) {
		pthread_cond_wait(&c->io_done, &c->io_lock);
	}
	r = sl->err;
	sl->busy = false;
	pthread_mutex_unlock(&c->io_lock);
	return r;
}

/* Start the stripe writers (after fork).  Without them a batch is
 * written from its own thread, one write per run of its blocks. */
static void
io_start(struct cache *c)
{
	/* A batch's pieces: a run per unit at most, or a run per two
	 * blocks where the gaps were not filled. */
	unsigned cap = batch_units(c) * (c->unit_blocks / 2 + 1);

	if (c->nr_io_threads) {
		return;
	}
	if (!c->io_piece) {
		c->io_piece =
			calloc((size_t)cap * IO_SLOTS, sizeof(*c->io_piece));
		if (!c->io_piece) {
			return;
		}
		c->io_cap = cap;
		c->io_ring = cap * IO_SLOTS;
	}
	c->io_stop = false;
	for (unsigned i = 0; i < WB_DEPTH; i++) {
		if (pthread_create(&c->io_threads[i], NULL, io_main, c)) {
			break;
		}
		c->nr_io_threads++;
	}
}

static void
io_stop_all(struct cache *c)
{
	pthread_mutex_lock(&c->io_lock);
	c->io_stop = true;
	pthread_cond_broadcast(&c->io_more);
	pthread_mutex_unlock(&c->io_lock);
	for (unsigned i = 0; i < c->nr_io_threads; i++) {
		pthread_join(c->io_threads[i], NULL);
	}
	c->nr_io_threads = 0;
}

/*
 * Send the batch's claimed blocks on their way, each run of them (across
 * its units) in one device write.  With the stripe writers the runs go to
 * them, cut at units, behind the batch before it if that one is still in
 * flight (b->slot), so that WB_DEPTH units are in flight and every member
 * has its next chunks queued, in order (RAID 5 writes a stripe at a time;
 * on the other levels the next units are queued while the last are
 * written).  Without them (or no slot free) the runs are written here.
 * batch_finish completes it.
 */
static void
batch_submit(struct cache *c, struct wb_batch *b)
{
	uint64_t total = (uint64_t)b->n * c->unit_blocks;
	uint64_t base = b->u0 * c->unit;
	int r = 0;

	b->bytes = 0;
	b->slot = -1;
	if (c->hold_partial) {
		r = fill_gaps(c, b);
	}
	if (r == 0) {
		b->slot = io_acquire(c);
	}
	for (uint64_t g = 0; g < total && r == 0;) {
		uint64_t h = g, lo, hi;

		if (!batch_claimed(c, b, g)) {
			g++;
			continue;
		}
		while (h < total && batch_claimed(c, b, h)) {
			h++;
		}
		lo = base + g * c->block;
		hi = MIN(base + h * c->block, c->size);
		if (b->slot >= 0) {
			r = io_add(c, b->slot, b->buf + g * c->block, hi - lo,
				   lo);
		} else {
			r = c->be.write(c->be.ctx, b->buf + g * c->block,
					hi - lo, lo, 0);
		}
		b->bytes += hi - lo;
		g = h;
	}
	if (b->slot >= 0) {
		io_publish(c, b->slot);
	}
	b->r = r;
}

/* Wait for a submitted batch's writes, then complete every unit.
 * *bytes written. */
static int
batch_finish(struct cache *c, struct wb_batch *b, uint64_t *bytes)
{
	int r = b->r;

	if (b->slot >= 0) {
		int r2 = io_wait(c, b->slot);

		r = r ? r : r2;
		b->slot = -1;
	}
	for (unsigned k = 0; k < b->n; k++) {
		complete_unit(c, b, k, r);
	}
	b->n = 0;
	b->seq = UINT64_MAX;
	if (r == 0) {
		*bytes += b->bytes;
		atomic_fetch_add(&c->st.written_back, b->bytes);
		atomic_store(&c->wb_error, 0);
	} else {
		atomic_fetch_add(&c->st.wb_errors, 1);
		atomic_store(&c->wb_error, r);
	}
	pool_kick(c);
	done_signal(c);
	return r;
}

/* Write the batch back and complete it. */
static int
batch_write(struct cache *c, struct wb_batch *b, uint64_t *bytes)
{
	batch_submit(c, b);
	return batch_finish(c, b, bytes);
}

/*
 * Claim one batch, as the thread writes back: from the cursor, the first
 * unit due (a full one, or a partial one held long enough) and the
 * consecutive units due after it; when there is none and `everything`
 * (idle clients, pressure, a drain), the first dirty one and those after
 * it.  The cursor moves past it.  b->n units (0: none due).
 */
static unsigned
claim_batch(struct cache *c, bool everything, struct wb_batch *b)
{
	uint64_t now = now_ns(), start = atomic_load(&c->cursor);

	start = start < c->nr_units ? start : 0;
	/* Units due first (full stripes, or held long enough), from the
	 * cursor round to it; then, when everything may go, any.  While a
	 * drain waits, any unit in cursor order: one sweep, which ends. */
	for (unsigned pass = atomic_load(&c->draining) ? 2 : 0;
	     pass < (everything ? 4 : 2) && !b->n; pass++) {
		uint64_t u = pass % 2 ? 0 : start;
		uint64_t end = pass % 2 ? start : c->nr_units;
		bool any = pass >= 2;

		while (b->n < b->max &&
		       (u = abit_next(c->unclean, u, end)) < end) {
			struct shard *s = shard_of(c, u);
			bool took = false;
			struct centry *e;

			if (b->n && u != b->u0 + b->n) {
				break;
			}
			pthread_mutex_lock(&s->lock);
			e = lookup(c, u);
			if (wb_eligible(c, e, any, now)) {
				claim(c, e, b);
				took = true;
			}
			pthread_mutex_unlock(&s->lock);
			if (!took && b->n) {
				break;
			}
			u++;
		}
	}
	if (b->n) {
		atomic_store(&c->cursor, b->u0 + b->n);
	}
	return b->n;
}

/* One batch claimed and written back (buf: its buffer, or NULL). */
static int
writeback_round(struct cache *c, bool everything, uint8_t *buf, uint64_t *bytes)
{
	uint8_t *own = NULL;
	struct wb_batch b;
	int r = 0;

	if (!buf) {
		buf = own = buf_get(c);
		if (!buf) {
			return -ENOMEM;
		}
	}
	batch_init(c, &b, buf);
	if (claim_batch(c, everything, &b)) {
		r = batch_write(c, &b, bytes);
	}
	if (own) {
		buf_put(c, own);
	}
	return r;
}

/*
 * The thread's rounds, pipelined: a batch is claimed and queued at the
 * stripe writers while the one before it is still written, and only then
 * is that one waited for and completed.  With one batch at a time every
 * member finished its part, sat idle while the thread completed the batch
 * and copied out the next (3 ms of every 21 with 8 MiB batches over RAID 5
 * x4 on the emulated disks), and then got the next batch's first stripes
 * in whatever order the writers reached it, each out of order one paying
 * an access time.  Two buffers: the batch in flight's, and the next's.
 */
struct wb_pipe {
	uint8_t *buf[2];
	bool pending;	   /* b is in flight */
	struct wb_batch b; /* in one of buf[] */
};

/* The buffer the batch in flight is not in. */
static uint8_t *
pipe_free_buf(const struct wb_pipe *p)
{
	return p->pending && p->b.buf == p->buf[0] ? p->buf[1] : p->buf[0];
}

/* Complete the batch in flight, if any. */
static int
pipe_settle(struct cache *c, struct wb_pipe *p, uint64_t *bytes)
{
	if (!p->pending) {
		return 0;
	}
	p->pending = false;
	return batch_finish(c, &p->b, bytes);
}

static int
pipe_round(struct cache *c, bool everything, struct wb_pipe *p, uint64_t *bytes)
{
	struct wb_batch b;
	int r, r2 = 0;

	batch_init(c, &b, pipe_free_buf(p));
	if (claim_batch(c, everything, &b)) {
		batch_submit(c, &b);
	}
	r = pipe_settle(c, p, bytes);
	if (b.n && b.slot >= 0 && r == 0 && b.r == 0) {
		p->b = b;
		p->pending = true;
	} else if (b.n) {
		r2 = batch_finish(c, &b, bytes);
	}
	return r ? r : r2;
}

/* Is the caller one of the write-back threads? */
static bool
on_wb_thread(struct cache *c)
{
	for (unsigned i = 0; i < c->nr_workers; i++) {
		if (pthread_equal(pthread_self(), c->workers[i].thread)) {
			return true;
		}
	}
	return false;
}

/* Does some unit hold dirty data of a write numbered target or lower, or
 * write it back now? */
static bool
drain_needed(struct cache *c, uint64_t target)
{
	for (uint64_t u = 0;
	     (u = abit_next(c->unclean, u, c->nr_units)) < c->nr_units; u++) {
		struct shard *s = shard_of(c, u);
		struct centry *e;
		bool needs;

		pthread_mutex_lock(&s->lock);
		e = lookup(c, u);
		needs = e && ((e->nr_dirty && e->dirty_seq <= target) ||
			      (e->wb && e->wb_seq <= target));
		pthread_mutex_unlock(&s->lock);
		if (needs) {
			return true;
		}
	}
	return false;
}

/*
 * A drain while the write-back thread runs: the thread writes back, in
 * one sweep from its cursor (`draining` makes it take any unit, at full
 * speed), and the drain waits until nothing it covers is dirty or in
 * flight.  One writer: a second one (the drain writing batches of its
 * own beside the thread's) interleaves two streams on every member, each
 * request paying an access time on a disk.  -EAGAIN when write-back
 * fails or the thread stops: the caller writes back itself (and gets the
 * error).
 */
static int
drain_by_thread(struct cache *c, uint64_t target)
{
	int r = 0;

	atomic_fetch_add(&c->draining, 1);
	wb_kick(c);
	for (;;) {
		uint64_t mark = done_mark(c);

		if (!drain_needed(c, target)) {
			break;
		}
		if (atomic_load(&c->wb_error) < 0 || !thread_running(c)) {
			r = -EAGAIN;
			break;
		}
		done_wait_for(c, mark, POLL_NS);
	}
	atomic_fetch_sub(&c->draining, 1);
	return r;
}

/* A drain's own batch: the cursor moved past it first. */
static int
drain_write(struct cache *c, struct wb_batch *b, uint64_t *bytes)
{
	atomic_store(&c->cursor, b->u0 + b->n);
	return batch_write(c, b, bytes);
}

/*
 * Write back every dirty block of a write numbered target or lower, and
 * wait for write-backs of such blocks already in flight (FLUSH, close,
 * `cache flush`).  Writes that came later are left alone, so a flush
 * ends under any load.  by_thread (FLUSH, `cache flush`): the thread does
 * it when it runs (drain_by_thread).  Else (cache=log making room: the
 * oldest records' data first, wherever it is; close, the thread stopped),
 * or when write-back fails, the drain writes back itself, sweeping from
 * the cursor round to it.
 */
static int
drain(struct cache *c, uint64_t target, bool by_thread)
{
	struct wb_batch b;
	uint64_t bytes = 0;
	uint8_t *buf;
	int r;

	if (by_thread && thread_running(c) && !on_wb_thread(c) &&
	    (r = drain_by_thread(c, target)) != -EAGAIN) {
		return r;
	}
	/* Write-back failing: a drain waiting for another's buffer would
	 * only meet the same error later (16 FLUSHes, one at a time, each
	 * sweeping a failing device, took 50 s); say it now. */
	r = atomic_load(&c->wb_error);
	buf = r < 0 ? buf_try(c) : buf_get(c);
	if (!buf) {
		return r < 0 ? r : -ENOMEM;
	}
	r = 0;
	batch_init(c, &b, buf);
	for (;;) {
		uint64_t mark = done_mark(c), start = atomic_load(&c->cursor);
		bool wait = false, did = false;

		start = start < c->nr_units ? start : 0;
		for (unsigned pass = 0; pass < 2 && r == 0; pass++) {
			uint64_t u = pass ? 0 : start;
			uint64_t end = pass ? start : c->nr_units;

			while (r == 0 &&
			       (u = abit_next(c->unclean, u, end)) < end) {
				struct shard *s = shard_of(c, u);
				bool needs, busy, flush_first = false;
				struct centry *e;

				pthread_mutex_lock(&s->lock);
				e = lookup(c, u);
				needs = e && ((e->nr_dirty &&
					       e->dirty_seq <= target) ||
					      (e->wb && e->wb_seq <= target));
				busy = e && (e->wb || e->pin_id);
				if (needs && !busy) {
					flush_first = b.n && (u != b.u0 + b.n ||
							      b.n == b.max);
					if (!flush_first) {
						claim(c, e, &b);
					}
				}
				wait |= needs && busy;
				pthread_mutex_unlock(&s->lock);
				if (flush_first) {
					r = drain_write(c, &b, &bytes);
					did = true;
					continue; /* u again */
				}
				u++;
			}
			/* A batch never spans the wrap. */
			if (r == 0 && b.n) {
				r = drain_write(c, &b, &bytes);
				did = true;
			}
		}
		if (r < 0 || (!did && !wait)) {
			break;
		}
		if (!did) {
			done_wait(c, mark);
		}
	}
	buf_put(c, buf);
	return r;
}

/*
 * The newest number a dirty block carries now: RAM mode's count of writes,
 * or cache=log's last lsn (its blocks carry their records' lsns).  A drain
 * to it covers every write acknowledged before, none that comes after.
 */
static uint64_t
dirty_mark(struct cache *c)
{
	uint64_t t = atomic_load(&c->seq);

	return c->log ? MAX(t, atomic_load(&c->log_last)) : t;
}

int
cache_flush(struct cache *c)
{
	uint64_t target = dirty_mark(c);
	int r;

	note_client(c);
	/* cache=log: the log synced; the members may lag. */
	if (c->log && (r = lm_flush(c)) != LM_PASS) {
		return r;
	}
	r = drain(c, target, true);
	if (r == 0) {
		r = c->be.flush(c->be.ctx);
	}
	return r;
}

int
cache_writeback_once(struct cache *c, bool everything, uint64_t *bytes)
{
	*bytes = 0;
	return writeback_round(c, everything, NULL, bytes);
}

int
cache_writeback_round(struct cache *c, bool everything, uint8_t *buf,
		      uint64_t *bytes)
{
	return writeback_round(c, everything, buf, bytes);
}

int
cache_drain(struct cache *c, uint64_t target)
{
	return drain(c, target, false);
}

/* What was dirty when it was asked, as FLUSH: writes that come meanwhile
 * are not its business, so it ends under any load. */
int
cache_drain_all(struct cache *c)
{
	int r = drain(c, dirty_mark(c), true);

	if (r == 0) {
		r = c->be.flush(c->be.ctx);
	}
	if (r == 0 && c->log) {
		r = lm_retire_all(c);
	}
	return r;
}

uint64_t
cache_oldest_unclean(struct cache *c)
{
	uint64_t oldest = UINT64_MAX;

	for (uint64_t u = 0;
	     (u = abit_next(c->unclean, u, c->nr_units)) < c->nr_units; u++) {
		struct shard *s = shard_of(c, u);
		struct centry *e;

		pthread_mutex_lock(&s->lock);
		e = lookup(c, u);
		if (e && e->nr_dirty) {
			oldest = MIN(oldest, e->dirty_seq);
		}
		if (e && e->wb) {
			oldest = MIN(oldest, e->wb_seq);
		}
		pthread_mutex_unlock(&s->lock);
	}
	return oldest;
}

uint64_t
cache_dirty_bytes(struct cache *c)
{
	return atomic_load(&c->nr_unclean) * c->block;
}

/* ---- the write-back thread --------------------------------------------- */

static bool
thread_running(struct cache *c)
{
	return __atomic_load_n(&c->running, __ATOMIC_ACQUIRE);
}

bool
cache_thread_running(struct cache *c)
{
	return thread_running(c);
}

static void
wb_kick(struct cache *c)
{
	pthread_mutex_lock(&c->wb_lock);
	c->kick = true;
	pthread_cond_broadcast(&c->wb_wake);
	pthread_mutex_unlock(&c->wb_lock);
}

void
cache_wb_kick(struct cache *c)
{
	wb_kick(c);
}

/* Sleep up to ns, less when kicked or stopped; false once stopped. */
static bool
wb_sleep(struct cache *c, uint64_t ns)
{
	struct timespec until = mono_deadline(ns);
	bool go;

	pthread_mutex_lock(&c->wb_lock);
	if (!c->stop && !c->kick) {
		pthread_cond_timedwait(&c->wb_wake, &c->wb_lock, &until);
	}
	c->kick = false;
	go = !c->stop;
	pthread_mutex_unlock(&c->wb_lock);
	return go;
}

/*
 * bcache's PI controller on the dirty bytes: the rate is the excess over
 * the target (PI_TARGET_PCT of the size) retired in PI_P_TERM_S seconds,
 * plus the integral of the excess over PI_I_TERM_S2, which grows only
 * while the rate is above its floor or the excess shrinks it (no wind-up).
 * Also the measured write-back rate, for status.
 */
static void
update_rate(struct cache *c, uint64_t now)
{
	uint64_t dt = now - c->rate_ns, wb = atomic_load(&c->st.written_back);
	int64_t dirty, target, err, rate;

	if (dt < RATE_UPDATE_NS) {
		return;
	}
	atomic_store(&c->st.wb_rate, (wb - c->rate_bytes) * 1000000000ull / dt);
	c->rate_bytes = wb;
	c->rate_ns = now;
	dirty = (int64_t)(atomic_load(&c->nr_unclean) * c->block);
	target = (int64_t)(c->pool.cap * c->block * PI_TARGET_PCT / 100);
	err = dirty - target;
	if (atomic_load(&c->rate) > PI_MIN_RATE ||
	    (err < 0 && c->integral > 0)) {
		c->integral += err * (int64_t)(dt / 1000000) / 1000;
	}
	rate = err / PI_P_TERM_S + c->integral / PI_I_TERM_S2;
	atomic_store(&c->rate, (uint64_t)MAX(rate, (int64_t)PI_MIN_RATE));
}

/*
 * A write-back worker: WB_THREADS of them, so that the members get the
 * next batch while one is being written; the first also runs the PI
 * controller, and each paces itself at its share of the rate.
 */
static void *
wb_main(void *arg)
{
	struct wb_worker *w = arg;
	struct cache *c = w->c;
	uint64_t next_ns = 0; /* paced: no write-back before then */
	struct wb_pipe pipe = { .pending = false };

	for (unsigned i = 0; i < 2; i++) {
		pipe.buf[i] = buf_get(c);
		while (!pipe.buf[i] && wb_sleep(c, ERROR_BACKOFF_NS)) {
			pipe.buf[i] = buf_get(c);
		}
	}
	for (;;) {
		uint64_t now = now_ns(), bytes = 0, cap = c->pool.cap;
		uint64_t last = atomic_load(&c->last_client_ns);
		uint64_t unclean = atomic_load(&c->nr_unclean);
		bool idle = now - last >= IDLE_NS;
		bool pressure = atomic_load(&c->waiting) ||
				atomic_load(&c->draining) ||
				unclean * 100 >= cap * PRESSURE_PCT ||
				(c->log && lm_pressure(c));
		/* No client I/O on the members lately (every request
		 * answered from the cache): pacing spares nobody, so the
		 * units due go at full speed; partial ones still wait. */
		bool spare = now - atomic_load(&c->last_member_ns) >= IDLE_NS;
		bool fast = idle || pressure || spare;
		int r = 0;

		if (!pipe.buf[0] || !pipe.buf[1]) {
			break; /* stopped before it had memory */
		}
		if (w->idx == 0) {
			update_rate(c, now);
		}
		if (!fast && now < next_ns) {
			/* Nothing left in flight while it sleeps. */
			r = pipe_settle(c, &pipe, &bytes);
			if (!wb_sleep(c, MIN(next_ns - now, POLL_NS))) {
				break;
			}
			if (r == 0 && !bytes) {
				continue;
			}
		} else if (unclean || pipe.pending) {
			r = pipe_round(c, idle || pressure, &pipe, &bytes);
		}
		if (r < 0) {
			raid_debug(
				"cache: write-back failed (%s); trying again in 1 s",
				strerror(-r));
		}
		if (c->log && r == 0 && lm_tick_due(c, NULL)) {
			/* Its drain would wait for the batch in flight. */
			r = pipe_settle(c, &pipe, &bytes);
			if (r == 0) {
				lm_tick(c, bytes);
			}
		}
		if (!bytes && pipe.pending && r == 0) {
			continue; /* the first of a run: the next one now */
		}
		if (r < 0 || !bytes) {
			if (!wb_sleep(c, r < 0 ? ERROR_BACKOFF_NS : POLL_NS)) {
				break;
			}
			continue;
		}
		next_ns = MAX(next_ns, now) +
			  bytes * 1000000000ull * WB_THREADS /
				  MAX(atomic_load(&c->rate), 1);
		pthread_mutex_lock(&c->wb_lock);
		r = c->stop;
		pthread_mutex_unlock(&c->wb_lock);
		if (r) {
			break;
		}
	}
	(void)pipe_settle(c, &pipe, &(uint64_t){ 0 });
	for (unsigned i = 0; i < 2; i++) {
		if (pipe.buf[i]) {
			buf_put(c, pipe.buf[i]);
		}
	}
	return NULL;
}

int
cache_start(struct cache *c)
{
	int r;

	if (!c || c->running) {
		return 0;
	}
	c->stop = false;
	c->rate_ns = now_ns();
	atomic_store(&c->rate, PI_MIN_RATE);
	/* The stripe writers first: the write-back thread submits to them
	 * from its first round (io_acquire reads what io_start sets). */
	io_start(c);
	for (unsigned i = 0; i < WB_THREADS; i++) {
		c->workers[i] = (struct wb_worker){ .c = c, .idx = i };
		r = pthread_create(&c->workers[i].thread, NULL, wb_main,
				   &c->workers[i]);
		if (r) {
			raid_error(
				"cache: cannot start a write-back thread: %s",
				strerror(r));
			c->nr_workers = i;
			__atomic_store_n(&c->running, true, __ATOMIC_RELEASE);
			cache_stop(c);
			return -r;
		}
	}
	c->nr_workers = WB_THREADS;
	atomic_store(&c->fill_stop, false);
	c->fill_running =
		pthread_create(&c->fill_thread, NULL, fill_main, c) == 0;
	__atomic_store_n(&c->running, true, __ATOMIC_RELEASE);
	r = ra_start(c);
	if (r < 0) {
		cache_stop(c);
	}
	return r;
}

static void
cache_stop(struct cache *c)
{
	ra_stop(c);
	if (!c->running) {
		return;
	}
	pthread_mutex_lock(&c->wb_lock);
	c->stop = true;
	pthread_cond_broadcast(&c->wb_wake);
	pthread_mutex_unlock(&c->wb_lock);
	for (unsigned i = 0; i < c->nr_workers; i++) {
		pthread_join(c->workers[i].thread, NULL);
	}
	c->nr_workers = 0;
	io_stop_all(c);
	if (c->fill_running) {
		atomic_store(&c->fill_stop, true);
		pthread_join(c->fill_thread, NULL);
		c->fill_running = false;
	}
	__atomic_store_n(&c->running, false, __ATOMIC_RELEASE);
}

/* ---- extents, status --------------------------------------------------- */

bool
cache_unwritten(struct cache *c, uint64_t off, uint64_t len, uint64_t *run)
{
	uint64_t end = off + len, u = off / c->unit, at;
	uint64_t u1 = (end - 1) / c->unit + 1;
	/* Acquire: a unit seen clean had its write-back on the device
	 * before the bit cleared, so the device's answer after this has it. */
	bool d = (atomic_load_explicit(&c->unclean[u / 64],
				       memory_order_acquire) >>
		  (u % 64)) &
		 1;

	if (!d) {
		u = abit_next(c->unclean, u, u1);
	} else {
		while (u < u1 && abit_test(c->unclean, u)) {
			u++;
		}
	}
	at = MIN(end, u * c->unit);
	*run = MAX(at, off + 1) - off;
	return d;
}

void
cache_status(struct cache *c, struct raid_cache_status *st)
{
	memset(st, 0, sizeof(*st));
	if (!c) {
		return;
	}
	st->kind = c->kind;
	st->mode = c->writethrough ? RAID_CACHE_WRITETHROUGH
				   : RAID_CACHE_WRITEBACK;
	st->size_bytes = c->pool.cap * c->block;
	st->used_bytes = atomic_load(&c->nr_valid) * c->block;
	st->dirty_bytes = atomic_load(&c->nr_unclean) * c->block;
	st->writeback_inflight_bytes = atomic_load(&c->nr_infl) * c->block;
	st->read_hits = atomic_load(&c->st.read_hits);
	st->read_misses = atomic_load(&c->st.read_misses);
	st->writes_cached = atomic_load(&c->st.writes_cached);
	st->write_hits = atomic_load(&c->st.write_hits);
	st->writes_direct = atomic_load(&c->st.writes_direct);
	st->writes_bypassed = atomic_load(&c->st.writes_bypassed);
	st->written_back_bytes = atomic_load(&c->st.written_back);
	st->writeback_bytes_per_s = atomic_load(&c->st.wb_rate);
	st->writeback_errors = atomic_load(&c->st.wb_errors);
	st->waits = atomic_load(&c->st.waits);
	st->readahead_bytes = atomic_load(&c->st.ra_bytes);
	st->readahead_hits = atomic_load(&c->st.ra_hits);
	if (c->log) {
		lm_status(c, st);
	}
}

/* ---- open and close ---------------------------------------------------- */

static void
cache_free(struct cache *c)
{
	for (uint64_t b = 0; c->bucket && b < (1ull << c->bucket_bits); b++) {
		while (c->bucket[b]) {
			struct centry *e = c->bucket[b];

			c->bucket[b] = e->hnext;
			free(e->page);
			free(e);
		}
	}
	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		pthread_mutex_destroy(&c->shards[i].lock);
	}
	for (uint64_t i = 0; i < c->pool.nr_slabs; i++) {
		free(c->pool.slabs[i]);
	}
	free(c->pool.slabs);
	free(c->pool.free_pages);
	pthread_mutex_destroy(&c->pool.lock);
	pthread_cond_destroy(&c->pool.space);
	pthread_mutex_destroy(&c->done_lock);
	pthread_cond_destroy(&c->done_cond);
	pthread_mutex_destroy(&c->seq_lock);
	pthread_mutex_destroy(&c->dop_lock);
	while (c->nr_bufs) {
		free(c->bufs[--c->nr_bufs]);
	}
	pthread_mutex_destroy(&c->buf_lock);
	pthread_cond_destroy(&c->buf_free);
	pthread_mutex_destroy(&c->wb_lock);
	pthread_mutex_destroy(&c->io_lock);
	pthread_cond_destroy(&c->io_more);
	pthread_cond_destroy(&c->io_done);
	free(c->io_piece);
	pthread_cond_destroy(&c->wb_wake);
	ra_destroy(c);
	range_lock_destroy(&c->order);
	pthread_mutex_destroy(&c->log_lock);
	pthread_cond_destroy(&c->log_cond);
	pthread_mutex_destroy(&c->retire_lock);
	free(c->log_path);
	free((void *)c->present);
	free((void *)c->unclean);
	free(c->bucket);

	free(c);
}

static void
cache_init_locks(struct cache *c)
{
	pthread_condattr_t ca;

	for (unsigned i = 0; i < CACHE_SHARDS; i++) {
		pthread_mutex_init(&c->shards[i].lock, NULL);
	}
	pthread_mutex_init(&c->pool.lock, NULL);
	pthread_cond_init(&c->pool.space, NULL);
	pthread_mutex_init(&c->done_lock, NULL);
	pthread_mutex_init(&c->seq_lock, NULL);
	pthread_mutex_init(&c->dop_lock, NULL);
	pthread_mutex_init(&c->buf_lock, NULL);
	pthread_cond_init(&c->buf_free, NULL);
	pthread_mutex_init(&c->wb_lock, NULL);
	pthread_mutex_init(&c->io_lock, NULL);
	pthread_cond_init(&c->io_more, NULL);
	pthread_cond_init(&c->io_done, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wb_wake, &ca);
	pthread_cond_init(&c->done_cond, &ca);
	pthread_cond_init(&c->log_cond, &ca);
	pthread_condattr_destroy(&ca);
	range_lock_init(&c->order);
	pthread_mutex_init(&c->log_lock, NULL);
	pthread_mutex_init(&c->retire_lock, NULL);
}

/* The size in pages: at least 4 units (or the whole device), at most
 * the device.  0 (said why) when too small. */
static uint64_t
cache_pages(const struct cache_geometry *g, uint64_t bytes)
{
	uint64_t dev = DIV_ROUND_UP(g->size, g->block_bytes);
	uint64_t need = MIN(4 * (g->unit_bytes / g->block_bytes), dev);
	uint64_t pages = MIN(bytes / g->block_bytes, dev);

	if (pages < need) {
		raid_error(
			"cache-size %llu is smaller than 4 units of this array (4 x %llu bytes: its full stripes): writes would wait for write-back all the time",
			(unsigned long long)bytes,
			(unsigned long long)g->unit_bytes);
		return 0;
	}
	return pages;
}

int
cache_open(const struct cache_backing *be, const struct cache_geometry *g,
	   const struct cache_settings *s, struct cache **out)
{
	struct cache *c;
	uint64_t pages = cache_pages(g, s->size_bytes), words;

	*out = NULL;
	if (!pages || !(c = calloc(1, sizeof(*c)))) {
		fault_log_free(s->log_fault);
		return pages ? -ENOMEM : -EINVAL;
	}
	c->be = *be;
	c->size = g->size;
	c->unit = g->unit_bytes;
	c->block = g->block_bytes;
	c->unit_blocks = (uint32_t)(g->unit_bytes / g->block_bytes);
	c->words = DIV_ROUND_UP(c->unit_blocks, 64);
	c->nr_units = DIV_ROUND_UP(g->size, g->unit_bytes);
	c->hold_partial = g->hold_partial;
	c->writethrough = s->mode == RAID_CACHE_WRITETHROUGH;
	c->kind = s->kind;
	c->seq_cutoff = s->seq_cutoff;
	c->hold_ns = (uint64_t)s->hold_ms * 1000000ull;
	c->pool.cap = pages;
	cache_init_locks(c);
	ra_init(c, s->readahead);
	c->bucket_bits = 6;
	while ((1ull << c->bucket_bits) < pages / 2) {
		c->bucket_bits++;
	}
	words = DIV_ROUND_UP(c->nr_units, 64);
	c->bucket = calloc(1ull << c->bucket_bits, sizeof(*c->bucket));
	c->present = calloc(words, sizeof(*c->present));
	c->unclean = calloc(words, sizeof(*c->unclean));
	c->pool.free_pages = malloc(pages * sizeof(*c->pool.free_pages));
	if (!c->bucket || !c->present || !c->unclean || !c->pool.free_pages) {
		fault_log_free(s->log_fault);
		cache_free(c);
		return -ENOMEM;
	}
	if (s->kind == RAID_CACHE_LOG) {
		int r = lm_open(c, s);

		if (r < 0) {
			cache_free(c);
			return r;
		}
	}
	*out = c;
	return 0;
}

int
cache_close(struct cache *c)
{
	uint64_t dirty;
	int r;

	if (!c) {
		return 0;
	}
	cache_stop(c);
	r = drain(c, UINT64_MAX, false);
	if (r == 0) {
		r = c->be.flush(c->be.ctx);
	}
	dirty = cache_dirty_bytes(c);
	if (r == 0 && dirty) {
		r = -EIO;
	}
	if (c->log) {
		r = lm_close(c, r); /* says what the log keeps */
	} else if (r < 0) {
		raid_error(
			"cache: %llu bytes could not be written back at close (%s): they are lost",
			(unsigned long long)dirty, strerror(-r));
	}
	cache_free(c);
	return r;
}

void
cache_abandon(struct cache *c)
{
	if (!c) {
		return;
	}
	cache_stop(c);
	if (c->log) {
		lm_abandon(c);
	}
	cache_free(c);
}
