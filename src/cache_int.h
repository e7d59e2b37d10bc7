/*
 * cache_int.h: what cache.c (the RAM cache) and cache_logmode.c (cache=log:
 * the persistent log behind it) share.  Not for other users: cache.h is
 * the interface.
 */
#ifndef RAID_CACHE_INT_H
#define RAID_CACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "range_lock.h"

#define CACHE_SHARDS	64
#define SLAB_PAGES	256	     /* pages allocated at once */
#define HUGE_PAGE_BYTES (2u << 20)   /* x86_64's transparent huge page */
#define FILL_SLAB_BYTES (16u << 20)  /* the fill thread's slab */
#define WB_BATCH_BYTES	(8ull << 20) /* a write-back's units, at most */
/*
 * Write-back workers.  Two measured worse on emulated disks (1M sequential
 * writes, RAID 5 x4: 0.7x, every member request paying an access time):
 * two batches in flight interleave two streams on every member.
 */
#define WB_THREADS 1
/*
 * Units (stripes) of one batch in flight at once: RAID 5 writes a stripe
 * at a time (each under its lock, its member writes run before the next
 * stripe's), and on every level the members should have the next writes
 * queued while the last complete: WB_DEPTH stripe writers each take the
 * next unit, so every member has the next few of its chunks queued, in
 * order: one stream per member.  The batch's thread only queues them (and
 * the next batch behind them: IO_SLOTS).
 */
#define WB_DEPTH 4
/*
 * Batch buffers, at most: the thread's two (IO_SLOTS) and one for a drain
 * writing back by itself (cache=log making room, a failed log's drain,
 * close, a FLUSH while write-back fails, a writer without the thread);
 * a drain finding all in use waits for one.  A batch is at most
 * WB_BATCH_BYTES and a quarter of the cache: with its gap buffer (RAID
 * 5), the three cost at most 1.5 x cache-size (docs/cache.md, "Memory").
 */
#define WB_BUFS		  (IO_SLOTS + 1)
#define WB_BATCH_FRACTION 4
#define IO_SLOTS	  2		/* batches in flight at once */
#define IDLE_NS		  200000000ull	/* clients quiet this long: idle */
#define POLL_NS		  100000000ull	/* the thread looks this often */
#define RATE_UPDATE_NS	  1000000000ull /* the PI controller's period */
#define PI_TARGET_PCT	  10		/* dirty bytes aimed at, of the size */
#define PI_P_TERM_S	  40		/* P: the excess over this many s */
#define PI_I_TERM_S2	  10000		/* I: the integral over this */
#define PI_MIN_RATE	  (64ull << 10) /* bytes/s at least */
#define PRESSURE_PCT	  75		/* dirty above this: full speed */
#define ERROR_BACKOFF_NS  1000000000ull /* after a failed write-back */
#define STREAMS		  16		/* sequential streams remembered */
#define STREAM_WINDOW	  16		/* requests of reordering tolerated */
#define BYPASS_FRACTION	  4		/* bigger than size/this: bypass */

/* Read-ahead (cache_readahead.c). */
#define RA_QUEUE     8		  /* windows queued, at most */
#define RA_THREADS   2		  /* workers */
#define RA_FRACTION  16		  /* a window: at most the cache / this */
#define RA_TRIGGER   3		  /* reads in a row that make a stream */
#define RA_INIT_MIN  (1ull << 20) /* the first window, at least */
#define RA_MAX_UNITS 64		  /* units pinned by one read-ahead */
/*
 * A window read on the CPU this much of its time (members as fast as
 * memory: tmpfs, a warm page cache) had no wait to hide: its stream reads
 * ahead no more but one small window (a probe) per RA_PROBE largest
 * windows it reads, to time the members again.
 */
#define RA_FAST_PCT 50
#define RA_PROBE    32

/* ---- structures -------------------------------------------------------- */

struct centry {
	struct centry *hnext;	      /* the bucket's chain */
	struct centry *lprev, *lnext; /* the shard's LRU, when in_lru */
	uint64_t unit;
	uint64_t dirty_seq; /* oldest write among the dirty blocks; 0 none */
	uint64_t wb_seq;    /* dirty_seq of what is being written back */
	uint64_t dirty_ns;  /* when it last went from clean to dirty */
	uint64_t pin_id;    /* the direct operation holding it; 0 none */
	uint32_t nr_valid, nr_dirty;
	uint32_t nr_unclean; /* dirty or in flight */
	uint32_t cap;	     /* slots in page[] */
	bool wb;	     /* a write-back holds its in-flight blocks */
	bool in_lru;	     /* it has clean blocks (evictable ones) */
	uint8_t **page;	     /* a page per valid block, in block order */
	uint64_t bits[];     /* valid, dirty, inflight, read ahead (and not
				read since): c->words each */
};

/*
 * lock guards the shard's buckets, every field of its entries, the bytes
 * of their pages, and its LRU (entries with clean blocks, least recently
 * used first).  Never two shard locks at once; pool.lock and done_lock
 * may be taken inside.
 */
struct shard {
	pthread_mutex_t lock;
	struct centry *lru_head, *lru_tail;
} __attribute__((aligned(64)));

/*
 * lock guards the free pages, the counts, the reservations and space_gen;
 * with `space`, the writers waiting for room.  A leaf.
 */
struct pool {
	pthread_mutex_t lock;
	pthread_cond_t space;
	uint8_t **free_pages;
	uint64_t nr_free;
	uint64_t nr_pages;  /* allocated so far, <= cap */
	uint64_t cap;	    /* cache-size in pages */
	uint64_t reserved;  /* promised to writers, not taken yet */
	uint64_t space_gen; /* moves when pages free or blocks turn clean */
	void **slabs;
	uint64_t nr_slabs;
};

/* A sequential stream: where it ended, how many bytes it ran. */
struct stream {
	uint64_t end, run;
	uint64_t used; /* LRU stamp */
};

/* A sequential reader (cache_readahead.c). */
struct rstream {
	uint64_t end;	   /* where its furthest read ended */
	uint64_t reads;	   /* reads that moved end forward, in a row */
	uint64_t ra_end;   /* read-ahead asked for up to here */
	uint64_t win;	   /* its window now */
	uint64_t used;	   /* LRU stamp */
	uint64_t gen;	   /* this stream in this slot (a new one: new gen) */
	bool fast;	   /* its last window was read on the CPU: no more */
	uint64_t probe_at; /* fast: the next window once end is past this */
};

/* A read-ahead window: queued, being read, or a free slot. */
struct ra_req {
	uint64_t lo, hi;
	uint64_t seq;	   /* queued in this order; 0: a free slot */
	bool busy;	   /* a worker reads it */
	struct rstream *s; /* its stream, told how the read went ... */
	uint64_t gen;	   /* ... if it is still that stream */
};

struct dop_req;

struct cache {
	struct cache_backing be;
	uint64_t size; /* the device's bytes */
	uint64_t unit; /* bytes of a unit */
	uint64_t nr_units;
	uint32_t block;	      /* bytes of a block */
	uint32_t unit_blocks; /* blocks of a (not the last) unit */
	uint32_t words;	      /* 64-bit words of an entry's bitmap */
	bool hold_partial;
	atomic_bool writethrough; /* also set when a log fails */
	enum raid_cache_kind kind;
	uint64_t seq_cutoff;
	uint64_t hold_ns;

	struct shard shards[CACHE_SHARDS];
	struct centry **bucket;
	unsigned bucket_bits;
	struct pool pool;
	/* Per unit, set and cleared under the unit's shard lock. */
	_Atomic uint64_t *present; /* an entry exists */
	_Atomic uint64_t *unclean; /* it has dirty or in-flight blocks */

	atomic_uint_fast64_t seq;	 /* writes that dirtied data */
	atomic_uint_fast64_t op_ids;	 /* direct operations, numbered */
	atomic_uint_fast64_t nr_unclean; /* blocks dirty or in flight */
	atomic_uint_fast64_t nr_infl;	 /* of those, in flight (claimed) */
	atomic_uint_fast64_t nr_valid;	 /* blocks cached */
	atomic_uint_fast64_t last_client_ns;
	atomic_uint_fast64_t last_member_ns; /* a client's I/O on the members */
	atomic_int wb_error;  /* the last write-back's -errno, 0 once one
				 succeeds again */
	atomic_uint waiting;  /* writers waiting for room */
	atomic_uint draining; /* drains (FLUSH, close) running */

	/*
	 * done_gen moves (under done_lock, broadcast on done_cond) when a
	 * write-back completes or a direct operation lets go of its units:
	 * what flushes and pins wait for.  A leaf.
	 */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cond;
	atomic_uint_fast64_t done_gen;

	/*
	 * dop_lock guards the list of direct operations between their start
	 * and their end (dops), which a write-back checks before it reads a
	 * span's gaps from the device: an operation that found the unit
	 * without an entry (and so did not pin it) may be writing there.
	 * A leaf.
	 */
	pthread_mutex_t dop_lock;
	struct dop_req *dops;

	/* seq_lock guards streams[] and stream_clock.  A leaf. */
	pthread_mutex_t seq_lock;
	struct stream streams[STREAMS];
	uint64_t stream_clock;

	/*
	 * buf_lock guards bufs[] (batch buffers not in use), nr_bufs and
	 * bufs_made (allocated, at most WB_BUFS); with buf_free, callers
	 * waiting for one.  A leaf.
	 */
	pthread_mutex_t buf_lock;
	pthread_cond_t buf_free;
	uint8_t *bufs[WB_BUFS];
	unsigned nr_bufs, bufs_made;

	/*
	 * wb_lock guards stop and kick; with wb_wake, the thread's sleep.
	 * Everything else of the thread's is its own.  A leaf.
	 */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_wake;
	bool stop, kick, running;
	struct wb_worker {
		struct cache *c;
		unsigned idx;
		pthread_t thread;
	} workers[WB_THREADS];
	unsigned nr_workers;
	atomic_uint_fast64_t cursor; /* the unit write-back looks at first */

	/*
	 * The stripe writers (WB_DEPTH threads) and their queue, a ring of
	 * io_ring pieces: io_piece[io_next .. io_avail) (mod io_ring) may be
	 * taken, io_next next; a batch's owner stages its pieces at
	 * [io_avail, io_tail) without the lock (io_building: one owner at a
	 * time) until io_publish.  Up to IO_SLOTS batches are in flight, a
	 * slot each (io_slot[]: pieces not finished, the first error,
	 * busy), so that the thread queues its next batch while the members
	 * still write the last: no member waits for a batch to end.
	 * io_lock guards all of it and io_stop; io_more wakes the writers,
	 * io_done the owners.  A leaf.
	 */
	pthread_mutex_t io_lock;
	pthread_cond_t io_more, io_done;
	struct wb_piece {
		const uint8_t *buf;
		uint64_t len, off;
		unsigned slot;
	} * io_piece;
	struct io_slot {
		unsigned n, left; /* staged; published and not finished */
		int err;
		bool busy;
	} io_slot[IO_SLOTS];
	unsigned io_cap;  /* pieces of one batch, at most */
	unsigned io_ring; /* IO_SLOTS * io_cap */
	uint64_t io_next, io_avail, io_tail;
	bool io_building, io_stop;
	pthread_t io_threads[WB_DEPTH];
	unsigned nr_io_threads;

	/* The pool's memory, allocated and touched after start (a card's
	 * memory is there before the first write: no page faults on the
	 * client's path).  fill_stop: read by the thread, set by stop. */
	pthread_t fill_thread;
	bool fill_running;
	atomic_bool fill_stop;

	atomic_uint_fast64_t rate; /* bytes/s the PI controller allows */
	int64_t integral;	   /* its I term's sum, byte-seconds */
	uint64_t rate_ns;	   /* when the rate was last computed */
	uint64_t rate_bytes;	   /* written_back at that moment */

	/*
	 * Read-ahead (cache_readahead.c; docs/cache.md, "Read-ahead").
	 * ra_lock guards the read streams, ra_clock, the windows (ra_q:
	 * slots, queued in ra_seq order, a slot held until its window is in
	 * the cache) and ra_stop; with ra_wake, the workers' sleep; with
	 * ra_done, readers waiting for a window queued or being read.  A
	 * leaf.  ra_running: the workers run (set by ra_start and ra_stop).
	 */
	uint64_t ra_max; /* cache-readahead: the largest window; 0 off */
	pthread_mutex_t ra_lock;
	pthread_cond_t ra_wake, ra_done;
	struct rstream rstreams[STREAMS];
	uint64_t ra_clock;
	bool ra_fast; /* the last window judged was fast: new streams too */
	struct ra_req ra_q[RA_QUEUE];
	uint64_t ra_seq;
	bool ra_stop;
	atomic_bool ra_running;
	pthread_t ra_threads[RA_THREADS];
	unsigned nr_ra_threads;

	struct {
		atomic_uint_fast64_t read_hits, read_misses, writes_cached,
			write_hits, writes_direct, writes_bypassed,
			written_back, wb_rate, wb_errors, waits, ra_bytes,
			ra_hits;
	} st;

	/*
	 * cache=log (cache_logmode.c; docs/cache.md, "cache=log"): the
	 * persistent log, NULL in RAM mode.  cache.c calls lm_* where the
	 * log plugs in.
	 */
	struct clog *log;
	char *log_path;
	atomic_int log_state; /* enum lm_state */
	/*
	 * order: byte ranges (in whole blocks) of the log mode's writes,
	 * zeros and trims, held exclusive from before a record is appended
	 * until the cache (or the device) holds what it says: so records of
	 * overlapping requests are in the order their data lands in the
	 * cache, and replay leaves what reads returned.
	 */
	struct range_lock order;
	/*
	 * log_lock guards pend (the requests between taking their place in
	 * the log and bringing the cache in line with their record: what
	 * retire must not pass), log_state's changes, retire_gen and
	 * log_error; with log_cond, writers waiting for log space or for a
	 * failed log's drain, and a failing log waiting for pend to empty.
	 * A leaf.
	 */
	pthread_mutex_t log_lock;
	pthread_cond_t log_cond;
	struct lm_pend *pend;
	uint64_t retire_gen; /* moves after every retire (or its failure) */
	int log_error;	     /* the error that switched the log off */
	atomic_uint_fast64_t log_last; /* the highest lsn appended */
	atomic_uint log_waiters;       /* writers waiting for log space */
	/*
	 * retire_lock: one retire at a time (it flushes the device, then
	 * writes the log's header); guards retired and retire_error.  Held
	 * across that I/O; log_lock and shard locks are taken inside it,
	 * one at a time, never the other way round.
	 */
	pthread_mutex_t retire_lock;
	uint64_t retired;	 /* records up to this lsn are retired */
	atomic_int retire_error; /* the last retire's, 0 once one succeeds */
	int fail_r;		 /* how a failed log's drain went (log_lock) */
	atomic_uint_fast64_t retire_ns; /* when the last retire ran */
	struct {
		atomic_uint_fast64_t waits, replayed, retires;
	} lst;
};

/* cache=log's state. */
enum lm_state {
	LM_ON,	    /* every write, zero and trim gets a record */
	LM_FAILING, /* the log failed: draining; requests wait */
	LM_BROKEN,  /* the log failed and the drain too: what it held is not
		       yet on the flushed device; every write, zero, trim and
		       FLUSH drains again first, and fails while that fails */
	LM_OFF,	    /* write-through, the log empty (failed or asked) */
};

/* A write-back in progress: consecutive units u0 .. u0+n-1 claimed. */
struct wb_batch {
	uint64_t u0;
	unsigned n, max;
	uint8_t *buf;	 /* max units of data, aligned */
	uint8_t *spare;	 /* as much again: gaps read from the device */
	uint64_t *mask;	 /* the blocks claimed, words per unit */
	uint64_t *wmask; /* the blocks to write: claimed, and gaps filled */
	uint64_t seq;	 /* the oldest write among them */
	uint64_t bytes;	 /* submitted: the bytes it writes */
	int slot;	 /* submitted: its io_slot, or -1 (written already) */
	int r;		 /* submitted: the first error so far */
};

/* ---- cache.c's internals that cache_logmode.c uses ---- */

uint64_t cache_now_ns(void);
bool cache_thread_running(struct cache *c);
void cache_wb_kick(struct cache *c);
int cache_writeback_round(struct cache *c, bool everything, uint8_t *buf,
			  uint64_t *bytes);
/* Write back every dirty block of a write numbered target or lower. */
int cache_drain(struct cache *c, uint64_t target);
/* The oldest seq dirty or in flight anywhere (UINT64_MAX: none). */
uint64_t cache_oldest_unclean(struct cache *c);

enum dop {
	DOP_WRITE,  /* FUA, or an edge block not cached: copies follow */
	DOP_WT,	    /* writethrough: the blocks it covers get cached too */
	DOP_BYPASS, /* sequential past the cutoff: copies dropped */
	DOP_ZERO,
	DOP_TRIM,
};

/*
 * A request on the device before the reply, the cache brought in line;
 * blocks it leaves dirty take seq (0: a new number).
 */
int cache_direct(struct cache *c, enum dop op, const void *buf, uint64_t count,
		 uint64_t off, uint32_t flags, uint64_t seq);
/* A write answered from memory, its dirty blocks numbered seq (0: new). */
int cache_write_cached(struct cache *c, const uint8_t *buf, uint64_t count,
		       uint64_t off, uint64_t seq);
/* The part of a write that goes straight to the device, if any. */
bool cache_bypass_range(struct cache *c, uint64_t off, uint64_t count,
			uint64_t *lo, uint64_t *hi);

/* What a read-ahead did: bytes inserted, its device reads' times. */
struct ra_done {
	uint64_t bytes;
	uint64_t cpu_ns, wall_ns; /* this thread's CPU time; the clock */
};

/*
 * Read-ahead: [lo, hi) read from the device into the blocks still not
 * cached there, clean, under pins (cache.c has why that is coherent);
 * gives up (0) where units are busy, a direct operation is in flight or
 * there is no room without evicting dirty data.  buf: hi - lo bytes.
 */
int cache_ra_fill(struct cache *c, uint64_t lo, uint64_t hi, uint8_t *buf,
		  struct ra_done *done);

/* ---- cache_readahead.c ---- */

void ra_init(struct cache *c, uint64_t max);
void ra_destroy(struct cache *c);
int ra_start(struct cache *c);
void ra_stop(struct cache *c);
/*
 * A read of [off, off+len) arrives: follow its stream and queue the next
 * window when it is sequential.  Without the workers, the window to read
 * ahead now (after the reply's data) in *run (lo == hi: none).
 */
void ra_note(struct cache *c, uint64_t off, uint64_t len, struct ra_req *run);
/* Read the window now (no workers). */
void ra_run(struct cache *c, const struct ra_req *run);
/* Wait until no window queued or being read touches [lo, hi); true if
 * it waited (the caller looks in the cache again). */
bool ra_wait(struct cache *c, uint64_t lo, uint64_t hi);

/* ---- cache_logmode.c ---- */

/* Open the log, replay it onto the device, flush, retire (before use). */
int lm_open(struct cache *c, const struct cache_settings *s);
/* At close, after the drain and the device flush (r: how they went). */
int lm_close(struct cache *c, int r);
/* Drop the log as a crash would (tests): its records stay. */
void lm_abandon(struct cache *c);
/*
 * The request in log mode: 0 or -errno when done, LM_PASS when the
 * cache is to do it as without a log (write-through: the log is off).
 */
#define LM_PASS 1
int lm_pwrite(struct cache *c, const void *buf, uint64_t count, uint64_t off,
	      uint32_t flags);
/* op: DOP_TRIM or DOP_ZERO. */
int lm_trim_or_zero(struct cache *c, enum dop op, uint64_t count, uint64_t off,
		    uint32_t flags);
int lm_flush(struct cache *c);
/* The write-back thread, after a round: retire what is due (lm_tick_due
 * says if anything is, and whether the log is short of space: then
 * lm_tick drains, which waits for every write-back in flight). */
bool lm_tick_due(struct cache *c, bool *short_of_space);
void lm_tick(struct cache *c, uint64_t bytes);
/* Write back at full speed for the log (it fills, or writers wait)? */
bool lm_pressure(struct cache *c);
/* Everything written back and flushed (`cache flush`): retire all. */
int lm_retire_all(struct cache *c);
void lm_status(struct cache *c, struct raid_cache_status *st);

#endif
