/*
 * sync.c: the background passes, as md's md_do_sync (docs/recovery.md).
 *
 * DESIGN
 * One pass at a time, picked in md's order: recovery (a member is
 * rebuilding), then resync (the array was not shut down cleanly: its
 * superblocks owe one), then a scrub an operator asked for (check or
 * repair).  A pass walks in windows of at most SYNC_WINDOW bytes of a
 * member, each held exclusive in the array's write range lock (so no
 * client write lands in it meanwhile; client writes elsewhere go on, and
 * reach a rebuilding member everywhere), then moves its frontier:
 *
 *   recovery  the rebuilding member's rows in order: each row rebuilt from
 *             the other members (RAID 5: the XOR of the row; mirrors: a
 *             copy of the chunk it holds, found by the layout's unmap),
 *             written, then `rebuilt` moves past it (reads may use the
 *             member below it from then on).  Checkpointed in the
 *             member's recovery_offset every 1/16 of the member and
 *             every SYNC_CHECKPOINT_NS, after a flush of the member; at
 *             the end the member is in sync.
 *   resync    the check's units (stripe rows; a mirror's chunks) from the
 *             superblocks' resync_offset, each made consistent as repair
 *             does (parity from data, copies from the first); checkpointed
 *             in resync_offset (meta->resync_cp) the same way.
 *   check     the same units, counting the 4K pages that disagree (md's
 *   repair    mismatch_cnt, in sectors); repair rewrites them.
 *
 * Two workers share each window, where the process may use two CPUs: the
 * sync thread and its helper (started and stopped with it).  The window's
 * pieces (recovery: 1 MiB slices of its rows; else check units) are
 * claimed one at a time, in order, each worker with its own batch,
 * scratch and pending write; the frontier moves (and a checkpoint may be
 * written) only once both are done.  A worker that gets no CPU leaves the
 * rest to the other: the sync thread takes back a share the helper has
 * not started.  A failure is the one at the earliest piece (a member
 * gone, -ENODEV, after any other), as one worker would have met it.
 *
 * Ranges that are holes on every member read are neither read nor
 * written (recovery punches the target there if it is not a hole).
 * Speed: md's rule.  Below speed_min the pass runs flat out; above it, it
 * sleeps while clients are busy (their requests moved within the last
 * SYNC_BUSY_NS) or while it is faster than speed_max.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "io/batch.h"
#include "layout/parity.h"
#include "log.h"
#include "superblock.h"
#include "sync.h"
#include "util.h"

#define SYNC_WINDOW	   (4u << 20) /* bytes of a member per window */
#define SYNC_SLICE	   (1u << 20) /* bytes read at once per member */
#define SYNC_CHECKPOINT_NS (5ull * 1000000000ull)
#define SYNC_BACKOFF_NS	   (100ull * 1000000ull)  /* md sleeps 500 ms */
#define SYNC_BUSY_NS	   (500ull * 1000000ull)  /* clients busy since */
#define SYNC_RATE_NS	   (3ull * 1000000000ull) /* rate window */

struct pass;

/*
 * The sync thread's helper: a second worker that claims pieces of each
 * window with the sync thread, so that a pass bound by the CPU (a
 * recovery XORing members in memory) uses a second core.  The sync thread
 * offers it each window, works on the window itself, then waits for the
 * helper's share (or takes the offer back if the helper never started).
 */
struct sync_helper {
	pthread_t thread;
	bool running; /* set before the sync thread starts (or a test's pass) */
	bool alternate; /* tests: every other piece, never taken back */
	/* Guards the rest: a share posted, its result, stop.  Never held
	 * across I/O or with another lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* with lock: a share posted, done, or stop */
	bool stop;
	struct pass *job; /* a share offered (its window in the pass) */
	uint64_t u0, u1;
	bool taken; /* ...the helper works on it (else it can be taken back) */
	bool done;  /* ...done: result is its 0 or -errno */
	int result;
	uint64_t pieces; /* pieces done in all (tests: it took part) */
};

struct sync_state {
	pthread_t thread;
	bool running;
	struct sync_helper helper;
	/*
	 * Guards everything below: the requests (stop, want, abort), the
	 * speeds, the progress and the last check's report.  Never held
	 * across I/O or with another lock.
	 */
	pthread_mutex_t lock;
	pthread_cond_t wake;	       /* with lock: the thread's sleep */
	bool stop;		       /* the array is closing */
	bool kicked;		       /* look again for work */
	bool blocked;		       /* recovery failed: wait for a kick */
	enum raid_sync_kind want;      /* a scrub asked for */
	bool abort;		       /* stop the scrub running */
	uint64_t speed_min, speed_max; /* KiB/s */
	uint64_t window;	       /* bytes of a member per window */
	struct raid_sync_progress progress;
	struct raid_check_report last;
	/* The rate: done bytes at the start of the window. */
	uint64_t rate_ns, rate_done;
};

/* ---- the state ----------------------------------------------------- */

const char *
raid_sync_kind_name(enum raid_sync_kind k)
{
	static const char *const names[] = {
		[RAID_SYNC_NONE] = NULL,
		[RAID_SYNC_RECOVERY] = "recovery",
		[RAID_SYNC_RESYNC] = "resync",
		[RAID_SYNC_CHECK] = "check",
		[RAID_SYNC_REPAIR] = "repair",
	};

	return k <= RAID_SYNC_REPAIR ? names[k] : NULL;
}

struct sync_state *
sync_new(void)
{
	struct sync_state *s = calloc(1, sizeof(*s));

	if (!s) {
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_mutex_init(&s->helper.lock, NULL);
	pthread_cond_init(&s->helper.wake, NULL);
	s->speed_min = RAID_SYNC_SPEED_MIN;
	s->speed_max = RAID_SYNC_SPEED_MAX;
	s->window = SYNC_WINDOW;
	s->progress.member = -1;
	return s;
}

void
sync_free(struct sync_state *s)
{
	if (!s) {
		return;
	}
	pthread_cond_destroy(&s->helper.wake);
	pthread_mutex_destroy(&s->helper.lock);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
sync_kick(struct raid_array *a)
{
	struct sync_state *s = a->sync;

	if (!s) {
		return;
	}
	pthread_mutex_lock(&s->lock);
	s->kicked = true;
	s->blocked = false;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

void
sync_status(struct raid_array *a, struct raid_status *st)
{
	struct sync_state *s = a->sync;

	if (!s) {
		st->progress.member = -1;
		return;
	}
	pthread_mutex_lock(&s->lock);
	st->progress = s->progress;
	st->last_check = s->last;
	st->speed_min = s->speed_min;
	st->speed_max = s->speed_max;
	pthread_mutex_unlock(&s->lock);
}

int
raid_sync_speed(struct raid_array *a, uint64_t min_kib, uint64_t max_kib)
{
	struct sync_state *s = a->sync;

	if (!s) {
		return -ENOTSUP;
	}
	if (min_kib == 0 || min_kib > max_kib) {
		raid_error(
			"speed %" PRIu64 " %" PRIu64
			": the minimum must be above 0 and at most the maximum",
			min_kib, max_kib);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	s->speed_min = min_kib;
	s->speed_max = max_kib;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void
sync_set_window(struct raid_array *a, uint64_t bytes)
{
	pthread_mutex_lock(&a->sync->lock);
	a->sync->window = bytes;
	pthread_mutex_unlock(&a->sync->lock);
}

/* The role being rebuilt, or -1. */
static int
rebuilding_role(const struct raid_array *a)
{
	for (unsigned i = 0; i < a->nr_members; i++) {
		if (atomic_load(&a->members[i].state) ==
		    RAID_MEMBER_REBUILDING) {
			return (int)i;
		}
	}
	return -1;
}

static bool
resync_owed(const struct raid_array *a)
{
	bool owed;

	if (!a->meta) {
		return false;
	}
	pthread_mutex_lock(&a->meta->lock);
	owed = a->meta->resync_cp != MD_RESYNC_DONE;
	pthread_mutex_unlock(&a->meta->lock);
	return owed;
}

/* Can a resync or scrub compare anything (redundancy left to check)? */
static bool
can_compare(const struct raid_array *a)
{
	uint64_t lost = array_lost(a);

	if (check_units(a) == 0) {
		return false;
	}
	/* A parity array needs every member; a mirror two copies of all. */
	return a->layout->stripe_pieces ? lost == 0
					: a->layout->enough(&a->g, lost | 0);
}

int
raid_sync_request(struct raid_array *a, enum raid_sync_kind kind)
{
	struct sync_state *s = a->sync;
	int r = 0;

	if (!s || (kind != RAID_SYNC_CHECK && kind != RAID_SYNC_REPAIR)) {
		return -EINVAL;
	}
	if (check_units(a) == 0) {
		raid_error("%s: raid%d has no redundancy to check",
			   raid_sync_kind_name(kind), a->layout->level);
		return -EINVAL;
	}
	if (kind == RAID_SYNC_REPAIR && a->read_only) {
		return -EROFS;
	}
	pthread_mutex_lock(&s->lock);
	if (s->progress.kind == RAID_SYNC_RECOVERY ||
	    s->progress.kind == RAID_SYNC_RESYNC || rebuilding_role(a) >= 0) {
		r = -EBUSY;
	} else if (s->progress.kind != RAID_SYNC_NONE ||
		   s->want != RAID_SYNC_NONE) {
		r = -EALREADY;
	} else if (array_lost(a) && a->layout->stripe_pieces) {
		r = -EBUSY;
	} else {
		s->want = kind;
		s->abort = false;
		s->kicked = true;
		pthread_cond_signal(&s->wake);
	}
	pthread_mutex_unlock(&s->lock);
	if (r == -EBUSY) {
		raid_error("%s: the array is %s: %s first",
			   raid_sync_kind_name(kind),
			   raid_array_state_name(array_state_now(a)),
			   rebuilding_role(a) >= 0 ? "the recovery runs"
						   : "recovery or resync");
	}
	return r;
}

int
raid_sync_stop(struct raid_array *a)
{
	struct sync_state *s = a->sync;
	int r = 0;

	if (!s) {
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	if (s->want != RAID_SYNC_NONE) {
		s->want = RAID_SYNC_NONE;
	} else if (s->progress.kind == RAID_SYNC_CHECK ||
		   s->progress.kind == RAID_SYNC_REPAIR) {
		s->abort = true;
		pthread_cond_signal(&s->wake); /* it may sleep in throttle */
	} else {
		r = -ENOENT; /* no scrub to stop */
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ---- one pass -------------------------------------------------------- */

/*
 * A worker's part of a pass: the sync thread's (w[0]) or its helper's
 * (w[1]), each with its own batch, scratch and pending write, so that the
 * two share nothing but the window they work in.
 */
struct worker {
	struct batch b;
	uint8_t *mem; /* scratch: (members + 1) slices, or a check unit's */
	/* Recovery: the slice rebuilt last, written with the next one's
	 * reads (pend_len 0: none); which of two buffers a mirror reads into.
	 */
	const uint8_t *pend_buf;
	uint64_t pend_off;
	uint32_t pend_len;
	unsigned flip;
	uint64_t pend_piece; /* ...its piece of the window */
	bool pend_queued;    /* ...queued in the batch to run next */
	uint64_t at;	     /* the piece of the window it works on */
	uint64_t mismatch;   /* check, repair: bytes found in this window */
	uint64_t pieces;     /* pieces done in this window */
	uint64_t claims;     /* alternate: pieces claimed in this window */
};

struct pass {
	struct raid_array *a;
	struct sync_state *s;
	enum raid_sync_kind kind;
	int role;	      /* recovery: the member rebuilt */
	uint64_t units;	      /* rows (recovery) or check units */
	uint64_t unit_bytes;  /* bytes of a member per unit: a chunk */
	uint64_t mismatch;    /* bytes */
	uint64_t last_cp_ns;  /* the last checkpoint */
	uint64_t last_cp_u;   /* ...its unit */
	uint64_t io_seen;     /* client requests at the last look */
	uint64_t io_moved_ns; /* when they were last seen to move */
	unsigned last_tenth;  /* progress logged at every 10 % */
	unsigned workers;     /* 2: the helper claims pieces too */
	bool alternate;	      /* the helper's mode (sync_start_helper) */
	struct worker w[2];
	/* The window's first failed piece (UINT64_MAX: none): a worker stops
	 * at a piece after it (the window fails anyway). */
	_Atomic uint64_t failed_piece;
	_Atomic uint64_t next_piece; /* the window's next piece to claim */
};

static uint64_t
client_requests(const struct raid_array *a)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < RAID_REQ_KINDS; k++) {
		n += atomic_load_explicit(&a->io[k].requests,
					  memory_order_relaxed);
	}
	return n;
}

/* Should the pass stop now (closing, or a scrub stopped)? */
static bool
pass_stopped(struct pass *p)
{
	bool stop;

	pthread_mutex_lock(&p->s->lock);
	stop = p->s->stop ||
	       ((p->kind == RAID_SYNC_CHECK || p->kind == RAID_SYNC_REPAIR) &&
		p->s->abort);
	pthread_mutex_unlock(&p->s->lock);
	return stop;
}

/* The array byte range a unit's window covers, for the range lock. */
static void
unit_range(const struct pass *p, uint64_t chunk_no, uint64_t *lo, uint64_t *hi)
{
	const struct raid_array *a = p->a;
	uint64_t span = a->layout->stripe_pieces ? a->write_piece_bytes
						 : a->chunk_bytes;

	*lo = chunk_no * a->chunk_bytes;
	*hi = MIN(*lo + span, a->size);
}

/* Is [off, off+len) of member m a hole? */
static bool
is_hole(struct raid_member *m, uint64_t off, uint64_t len)
{
	return member_hole(m, off, len);
}

/*
 * Run what is queued; a write error of the member being rebuilt fails it
 * (its reads are never queued).  0 or -errno.
 */
static int
rebuild_run(struct pass *p, struct worker *w)
{
	int r = batch_run(&w->b);

	if (r < 0 && w->pend_queued) {
		w->at = w->pend_piece; /* the earlier piece of the two */
	}
	w->pend_queued = false;
	if (r < 0 && ((batch_failed_writes(&w->b) >> p->role) & 1)) {
		array_fail_seen(p->a, (unsigned)p->role, w->b.gen[p->role],
				"write error during recovery", FAIL_WRITE);
	}
	return r;
}

/* Queue the write of the slice rebuilt last, if any. */
static int
queue_pending(struct pass *p, struct worker *w)
{
	struct raid_member *t = &p->a->members[p->role];
	int r = 0;

	if (w->pend_len) {
		r = batch_write(&w->b, t, w->pend_buf, w->pend_len, w->pend_off,
				0);
		w->pend_len = 0;
		w->pend_queued = true;
	}
	return r;
}

/* Write the slice rebuilt last now (the end of a window, a hole). */
static int
drain_pending(struct pass *p, struct worker *w)
{
	int r;

	if (!w->pend_len) {
		return 0;
	}
	r = queue_pending(p, w);
	if (r < 0) {
		batch_reset(&w->b);
		w->pend_queued = false;
		return r;
	}
	return rebuild_run(p, w);
}

/*
 * Rebuild [in, in+len) of row `row` of the member being rebuilt from the
 * others: the XOR of the row (parity levels), or a copy of the chunk it
 * holds.  The rebuilt bytes are written with the worker's next slice's
 * reads (the two overlap where the backend runs a batch's I/O at once:
 * io_uring), or by drain_pending at the end of its share of the window; a
 * mirror's copy is written from the buffer it was read into (two buffers
 * in turn).  0, or -errno (a source that cannot be read: logged).
 */
static int
rebuild_slice(struct pass *p, struct worker *w, uint64_t row, uint64_t chunk_no,
	      uint32_t in, uint32_t len)
{
	struct raid_array *a = p->a;
	struct raid_member *t = &a->members[p->role];
	struct raid_loc tl = { (unsigned)p->role, row }, locs[RAID_MAX_COPIES];
	uint8_t *out = w->mem + (size_t)a->nr_members * SYNC_SLICE;
	struct raid_member *src[RAID_MAX_MEMBERS];
	uint64_t src_off[RAID_MAX_MEMBERS];
	void *bufs[RAID_MAX_MEMBERS];
	unsigned k = 0, n;
	bool holes = true;
	int r = 0;

	if (a->layout->stripe_pieces) {
		n = a->nr_members;
		for (unsigned i = 0; i < n; i++) {
			locs[i] = (struct raid_loc){ i, row };
		}
	} else {
		n = a->layout->map(&a->g, chunk_no, locs);
	}
	for (unsigned i = 0; i < n; i++) {
		struct raid_member *m = &a->members[locs[i].member];

		if (locs[i].member == (unsigned)p->role) {
			continue;
		}
		if (!member_usable(m)) {
			if (a->layout->stripe_pieces) {
				return -EIO; /* two members of a row gone */
			}
			continue;
		}
		src[k] = m;
		src_off[k] = geom_member_offset(&a->g, &locs[i], in);
		holes &= is_hole(m, src_off[k], len);
		k++;
		if (!a->layout->stripe_pieces) {
			break; /* a mirror: one copy is enough */
		}
	}
	if (k == 0) {
		return -EIO;
	}
	if (holes) {
		r = drain_pending(p, w);
		if (r < 0 ||
		    is_hole(t, geom_member_offset(&a->g, &tl, in), len)) {
			return r;
		}
		r = batch_discard(&w->b, t, IO_PUNCH, len,
				  geom_member_offset(&a->g, &tl, in));
		return r < 0 ? r : batch_run_discard(&w->b);
	}
	w->flip ^= 1;
	for (unsigned j = 0; j < k && r == 0; j++) {
		bufs[j] = w->mem +
			  (size_t)(a->layout->stripe_pieces ? j : w->flip) *
				  SYNC_SLICE;
		r = batch_read(&w->b, src[j], bufs[j], len, src_off[j]);
	}
	r = r < 0 ? r : queue_pending(p, w);
	if (r < 0) {
		batch_reset(&w->b);
		w->pend_queued = false;
		return r;
	}
	r = rebuild_run(p, w);
	if (r < 0) {
		return r;
	}
	if (a->layout->stripe_pieces) {
		r = parity_xor(out, bufs, k, len);
		w->pend_buf = out;
	} else {
		w->pend_buf = bufs[0];
	}
	w->pend_off = geom_member_offset(&a->g, &tl, in);
	w->pend_len = r == 0 ? len : 0;
	w->pend_piece = w->at;
	return r;
}

/*
 * Claim the window's next piece (w->at), or with `alternate` (tests) the
 * worker's next of every other one: false once none is worth doing,
 * another worker having failed at an earlier one.
 */
static bool
claim(struct pass *p, struct worker *w)
{
	if (p->alternate) {
		w->at = w->claims++ * 2 + (w == &p->w[1]);
	} else {
		w->at = atomic_fetch_add(&p->next_piece, 1);
	}
	return w->at < atomic_load(&p->failed_piece);
}

/* Worker w failed at its piece: the window's first failure, if earliest. */
static void
note_failure(struct pass *p, struct worker *w)
{
	uint64_t first = atomic_load(&p->failed_piece);

	while (w->at < first &&
	       !atomic_compare_exchange_weak(&p->failed_piece, &first, w->at)) {
	}
}

/*
 * A worker's share of units [u0, u1), the window held exclusive: the
 * pieces it claims, in order, until none is left.  The window's pieces
 * are numbered in order: recovery, the slices of its rows (rows that hold
 * nothing have none); the other passes, its check units.  Claimed one at
 * a time, so that a worker that gets no CPU leaves the rest to the other.
 * 0 or -errno (w->at: the piece it failed at).
 */
static int
share(struct pass *p, struct worker *w, uint64_t u0, uint64_t u1)
{
	struct raid_array *a = p->a;
	uint64_t first = 0; /* the first piece of unit u */
	bool more = claim(p, w);
	int r = 0;

	for (uint64_t u = u0; u < u1 && more && r == 0; u++) {
		uint64_t chunk_no = 0, len = 0, n = 1;

		if (p->kind == RAID_SYNC_RECOVERY) {
			if (!a->layout->unmap(&a->g, (unsigned)p->role, u,
					      &chunk_no)) {
				continue; /* the row holds nothing */
			}
			len = MIN(a->chunk_bytes,
				  a->member_bytes - u * a->chunk_bytes);
			n = DIV_ROUND_UP(len, SYNC_SLICE);
		}
		while (more && r == 0 && w->at < first + n) {
			uint64_t in = (w->at - first) * SYNC_SLICE;

			if (p->kind == RAID_SYNC_RECOVERY) {
				r = rebuild_slice(
					p, w, u, chunk_no, (uint32_t)in,
					(uint32_t)MIN(SYNC_SLICE, len - in));
			} else {
				r = check_unit(a, &w->b, u,
					       p->kind != RAID_SYNC_CHECK,
					       w->mem, &w->mismatch);
				r = r > 0 ? 0 : r;
			}
			w->pieces++;
			more = r == 0 && claim(p, w);
		}
		first += n;
	}
	if (p->kind == RAID_SYNC_RECOVERY) {
		/* The last slice's write, before the window is let go. */
		r = r == 0 ? drain_pending(p, w) : r;
		w->pend_len = 0;
	}
	if (r < 0) {
		note_failure(p, w);
	}
	return r;
}

/* The array range a window of units covers (recovery: by unmap). */
static void
window_range(struct pass *p, uint64_t u0, uint64_t u1, uint64_t *lo,
	     uint64_t *hi)
{
	struct raid_array *a = p->a;

	*lo = UINT64_MAX;
	*hi = 0;
	for (uint64_t u = u0; u < u1; u++) {
		uint64_t c, l, h;

		if (p->kind == RAID_SYNC_RECOVERY) {
			if (!a->layout->unmap(&a->g, (unsigned)p->role, u,
					      &c)) {
				continue;
			}
		} else {
			c = a->layout->stripe_pieces ? u * (a->nr_members - 1)
						     : u;
		}
		unit_range(p, c, &l, &h);
		*lo = MIN(*lo, l);
		*hi = MAX(*hi, h);
	}
}

/* The units done, as md's checkpoints count them: sectors. */
static uint64_t
units_sectors(const struct pass *p, uint64_t u)
{
	uint64_t bytes = u * p->unit_bytes;

	if (p->kind == RAID_SYNC_RECOVERY) {
		bytes = MIN(bytes, p->a->member_bytes);
	}
	return bytes / RAID_SECTOR_BYTES;
}

/* Write the checkpoint of unit u into the superblocks (md: on every
 * member, events + 1), after the data before it is durable. */
static int
checkpoint(struct pass *p, uint64_t u, bool final)
{
	struct raid_array *a = p->a;
	struct raid_meta *meta = a->meta;
	uint64_t bad = 0;
	int r = 0;

	if (!meta) {
		return 0;
	}
	if (p->kind == RAID_SYNC_RECOVERY) {
		r = batch_flush(&p->w[0].b, &a->members[p->role]);
		r = r < 0 ? r : batch_run(&p->w[0].b);
		if (r < 0) {
			return r;
		}
	}
	if (p->kind == RAID_SYNC_RECOVERY) {
		/* The end is array_recovery_done's (recovery_done). */
		r = final ? 0
			  : array_checkpoint_recovery(
				    a, (unsigned)p->role,
				    units_sectors(p, u) * RAID_SECTOR_BYTES);
		p->last_cp_ns = now_ns();
		p->last_cp_u = u;
		return r;
	}
	pthread_mutex_lock(&meta->lock);
	if (p->kind == RAID_SYNC_RESYNC) {
		meta->resync_cp = final ? MD_RESYNC_DONE : units_sectors(p, u);
		/* On disk now only while the array is clean; else the next
		 * clean mark writes it. */
		if (!atomic_load(&meta->dirty)) {
			for (unsigned i = 0; i < meta->nr; i++) {
				meta->members[i].sb.resync_offset =
					meta->resync_cp;
			}
			r = meta_commit(a, 1, &bad);
		}
	}
	pthread_mutex_unlock(&meta->lock);
	/* A member that could not take it is failed, not the pass. */
	for (unsigned i = 0; i < a->nr_members && bad; i++) {
		if (((bad >> i) & 1) &&
		    array_fail(a, i, "superblock write error", FAIL_WRITE) <
			    0) {
			bad = 0;
		}
	}
	r = r < 0 && bad ? 0 : r;
	p->last_cp_ns = now_ns();
	p->last_cp_u = u;
	return r;
}

/* Progress into the status, the log every 10 %, events at 20 % steps. */
static void
note_progress(struct pass *p, uint64_t u)
{
	struct sync_state *s = p->s;
	uint64_t t = now_ns(), done = u * p->unit_bytes;
	uint64_t total = p->units * p->unit_bytes;
	unsigned tenth = (unsigned)(total ? done * 10 / total : 10);

	pthread_mutex_lock(&s->lock);
	if (t - s->rate_ns >= SYNC_RATE_NS) {
		s->progress.bytes_per_s = (done - s->rate_done) *
					  1000000000ull / (t - s->rate_ns);
		s->rate_ns = t;
		s->rate_done = done;
	}
	s->progress.done_bytes = done;
	s->progress.eta_s = s->progress.bytes_per_s
				    ? (total - done) / s->progress.bytes_per_s
				    : 0;
	pthread_mutex_unlock(&s->lock);
	if (p->last_tenth < tenth && tenth < 10) {
		raid_error("%s: %u0%% done (%" PRIu64 " of %" PRIu64 " bytes)",
			   raid_sync_kind_name(p->kind), tenth, done, total);
	}
	while (p->last_tenth < tenth && tenth < 10) {
		p->last_tenth++;
		if (p->kind == RAID_SYNC_RECOVERY && p->last_tenth % 2 == 0 &&
		    p->last_tenth <= 8) {
			char ev[16];

			snprintf(ev, sizeof(ev), "Rebuild%u0", p->last_tenth);
			array_event(p->a, ev, p->a->members[p->role].path);
		}
	}
}

/* md's throttle: sleep while above speed_min and clients are busy, or
 * while above speed_max; not once the pass is to stop (closing, or a
 * scrub stopped: a slow pass may owe many seconds of sleep). */
static void
throttle(struct pass *p, uint64_t start_ns, uint64_t done)
{
	struct sync_state *s = p->s;
	bool scrub = p->kind == RAID_SYNC_CHECK || p->kind == RAID_SYNC_REPAIR;

	for (;;) {
		uint64_t t = now_ns(), el = t - start_ns + 1, io;
		uint64_t kib_s = done / 1024 * 1000000000ull / el;
		bool busy, sleep = false;
		struct timespec until;

		/*
		 * Busy: requests seen within SYNC_BUSY_NS, not only since
		 * the last look: a window that takes the CPU clients need
		 * (2 cores, a memory-bound pass) may see none complete
		 * while it runs, and would take that for idleness.
		 */
		io = client_requests(p->a);
		if (io != p->io_seen) {
			p->io_seen = io;
			p->io_moved_ns = t;
		}
		busy = p->io_moved_ns && t - p->io_moved_ns < SYNC_BUSY_NS;
		pthread_mutex_lock(&s->lock);
		if (!s->stop && !(scrub && s->abort) && kib_s > s->speed_min &&
		    (busy || kib_s > s->speed_max)) {
			sleep = true;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += SYNC_BACKOFF_NS;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&s->wake, &s->lock, &until);
		}
		pthread_mutex_unlock(&s->lock);
		if (!sleep) {
			return;
		}
	}
}

/*
 * The window's error from its two workers': a cause before a consequence
 * (-ENODEV: the member failed meanwhile, maybe by the other worker's
 * write error), then the one at the earlier piece, as one worker going
 * in order would have met it.
 */
static int
window_error(const struct pass *p, int r0, int r1)
{
	if (r0 == 0 || r1 == 0) {
		return r0 ? r0 : r1;
	}
	if ((r0 == -ENODEV) != (r1 == -ENODEV)) {
		return r0 == -ENODEV ? r1 : r0;
	}
	return p->w[1].at < p->w[0].at ? r1 : r0;
}

/* Offer the helper a share of window [u0, u1). */
static void
helper_post(struct pass *p, uint64_t u0, uint64_t u1)
{
	struct sync_helper *h = &p->s->helper;

	pthread_mutex_lock(&h->lock);
	h->job = p;
	h->u0 = u0;
	h->u1 = u1;
	h->taken = false;
	h->done = false;
	pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
}

/*
 * The window's pieces are all claimed: wait for the helper's share, its 0
 * or -errno; or, if it has not started on it yet, take the offer back
 * (not with `alternate`: half the pieces are the helper's).
 */
static int
helper_finish(struct pass *p)
{
	struct sync_helper *h = &p->s->helper;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	if (!h->taken && !p->alternate) {
		h->job = NULL;
	} else {
		while (!h->done) {
			pthread_cond_wait(&h->wake, &h->lock);
		}
		r = h->result;
	}
	h->done = false;
	pthread_mutex_unlock(&h->lock);
	return r;
}

/*
 * Process units [u0, u1) of the pass, the window held exclusive: with the
 * helper, both workers claim its pieces; the window is done when both
 * are.  A failure is the one at the earliest piece, as on one thread.
 */
static int
window(struct pass *p, uint64_t u0, uint64_t u1)
{
	struct raid_array *a = p->a;
	struct range_req lk;
	uint64_t lo, hi;
	int r = 0;

	window_range(p, u0, u1, &lo, &hi);
	if (lo < hi) {
		range_lock(&a->write_lock, &lk, ROUND_DOWN(lo, a->io_align),
			   ROUND_UP(hi, a->io_align), true);
	}
	atomic_store(&p->failed_piece, UINT64_MAX);
	atomic_store(&p->next_piece, 0);
	for (unsigned i = 0; i < 2; i++) {
		p->w[i].pieces = p->w[i].claims = 0;
	}
	if (p->workers > 1) {
		helper_post(p, u0, u1);
	}
	r = share(p, &p->w[0], u0, u1);
	if (p->workers > 1) {
		r = window_error(p, r, helper_finish(p));
	}
	for (unsigned i = 0; i < p->workers; i++) {
		p->mismatch += p->w[i].mismatch;
		p->w[i].mismatch = 0;
	}
	if (r == 0 && p->kind == RAID_SYNC_RECOVERY) {
		/* Readable up to here from now on: after the writes. */
		atomic_store(&a->members[p->role].rebuilt,
			     MIN(u1 * p->unit_bytes, a->member_bytes));
	}
	if (r == 0 && p->kind == RAID_SYNC_RESYNC) {
		/* Copies agree below here: reads balance (md's next_resync;
		 * a mirror's units are the array's chunks). */
		atomic_store(&a->resync_next, u1 * p->unit_bytes);
	}
	if (lo < hi) {
		range_unlock(&a->write_lock, &lk);
	}
	return r;
}

/* Where a pass starts: a rebuilding member's frontier, resync_offset. */
static uint64_t
pass_start(struct pass *p)
{
	struct raid_array *a = p->a;
	uint64_t bytes = 0;

	if (p->kind == RAID_SYNC_RECOVERY) {
		bytes = atomic_load(&a->members[p->role].rebuilt);
	} else if (p->kind == RAID_SYNC_RESYNC) {
		pthread_mutex_lock(&a->meta->lock);
		bytes = a->meta->resync_cp * RAID_SECTOR_BYTES;
		pthread_mutex_unlock(&a->meta->lock);
	}
	return MIN(bytes / p->unit_bytes, p->units);
}

static void
pass_begin(struct pass *p, uint64_t u)
{
	struct sync_state *s = p->s;

	pthread_mutex_lock(&s->lock);
	s->progress = (struct raid_sync_progress){
		.kind = p->kind,
		.member = p->role,
		.done_bytes = u * p->unit_bytes,
		.total_bytes = p->units * p->unit_bytes,
	};
	s->rate_ns = now_ns();
	s->rate_done = u * p->unit_bytes;
	if (p->kind == RAID_SYNC_CHECK || p->kind == RAID_SYNC_REPAIR) {
		s->want = RAID_SYNC_NONE;
	}
	pthread_mutex_unlock(&s->lock);
	p->last_tenth = (unsigned)(p->units ? u * 10 / p->units : 0);
	if (p->kind == RAID_SYNC_RECOVERY) {
		raid_error("recovery of member %d (%s) %s at %" PRIu64
			   " of %" PRIu64 " bytes",
			   p->role, p->a->members[p->role].path,
			   u ? "resumed" : "started", u * p->unit_bytes,
			   p->units * p->unit_bytes);
		array_event(p->a, "RebuildStarted",
			    p->a->members[p->role].path);
	} else {
		raid_error("%s %s at %" PRIu64 " of %" PRIu64 " bytes",
			   raid_sync_kind_name(p->kind),
			   u ? "resumed" : "started", u * p->unit_bytes,
			   p->units * p->unit_bytes);
	}
}

/* The member rebuilt: in sync, recorded, announced. */
static int
recovery_done(struct pass *p)
{
	struct raid_array *a = p->a;
	struct raid_member *m = &a->members[p->role];
	int r = batch_flush(&p->w[0].b, m);

	r = r < 0 ? r : batch_run(&p->w[0].b);
	if (r < 0) {
		return r;
	}
	raid_error("recovery of member %d (%s) finished", p->role, m->path);
	array_event(a, "RebuildFinished", m->path);
	if (a->meta) {
		return array_recovery_done(a, (unsigned)p->role);
	}
	/* Raw mode: no superblock records it. */
	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&m->state) == RAID_MEMBER_REBUILDING) {
		atomic_store(&m->rebuilt, a->member_bytes);
		atomic_store(&m->state, RAID_MEMBER_IN_SYNC);
		a->reason[0] = '\0';
	}
	pthread_mutex_unlock(&a->fail_lock);
	array_log_state(a);
	array_event(a, "SpareActive", m->path);
	return 0;
}

static int
pass_end(struct pass *p, uint64_t u, int r)
{
	struct sync_state *s = p->s;
	bool whole = r == 0 && u >= p->units;
	char count[32];

	if (whole && p->kind == RAID_SYNC_RECOVERY) {
		r = recovery_done(p);
	} else if ((p->kind == RAID_SYNC_RECOVERY && r != -ENODEV) ||
		   p->kind == RAID_SYNC_RESYNC) {
		int c = checkpoint(p, u, whole);

		r = r < 0 ? r : c;
	}
	if (whole && p->kind == RAID_SYNC_RESYNC) {
		atomic_store(&p->a->resync_next, UINT64_MAX);
		raid_error("resync finished");
		state_wake(p->a); /* it may be marked clean now */
		array_event(p->a, "ResyncFinished", NULL);
	}
	pthread_mutex_lock(&s->lock);
	if (whole &&
	    (p->kind == RAID_SYNC_CHECK || p->kind == RAID_SYNC_REPAIR)) {
		s->last = (struct raid_check_report){
			.kind = p->kind,
			.mismatch_cnt = p->mismatch / RAID_SECTOR_BYTES,
			.finished = (uint64_t)time(NULL),
		};
	}
	s->progress = (struct raid_sync_progress){ .member = -1 };
	if (r < 0 && p->kind == RAID_SYNC_RECOVERY) {
		s->blocked = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (whole &&
	    (p->kind == RAID_SYNC_CHECK || p->kind == RAID_SYNC_REPAIR)) {
		raid_error("%s finished: %" PRIu64 " mismatched sectors",
			   raid_sync_kind_name(p->kind),
			   p->mismatch / RAID_SECTOR_BYTES);
		snprintf(count, sizeof(count), "%" PRIu64,
			 p->mismatch / RAID_SECTOR_BYTES);
		array_event(p->a, "CheckFinished", count);
	} else if (!whole) {
		raid_error("%s stopped at %" PRIu64 " of %" PRIu64 " bytes%s%s",
			   raid_sync_kind_name(p->kind), u * p->unit_bytes,
			   p->units * p->unit_bytes, r < 0 ? ": " : "",
			   r < 0 ? strerror(-r) : "");
	}
	return r;
}

/* Is the helper there to share the windows?  In which mode? */
static bool
helper_running(struct sync_state *s, bool *alternate)
{
	bool running;

	pthread_mutex_lock(&s->helper.lock);
	running = s->helper.running && !s->helper.stop;
	*alternate = running && s->helper.alternate;
	pthread_mutex_unlock(&s->helper.lock);
	return running;
}

/* The workers' batches and scratch: the helper's only if it runs. */
static int
workers_init(struct pass *p)
{
	struct raid_array *a = p->a;
	size_t mem = MAX(check_unit_mem(a),
			 (size_t)(a->nr_members + 1) * SYNC_SLICE);

	p->workers = helper_running(p->s, &p->alternate) ? 2 : 1;
	for (unsigned i = 0; i < p->workers; i++) {
		if (posix_memalign((void **)&p->w[i].mem, IO_BUF_ALIGN, mem) !=
		    0) {
			if (i == 0) {
				return -ENOMEM;
			}
			p->workers = 1; /* one worker will do */
			p->alternate = false;
			break;
		}
		batch_init(&p->w[i].b);
	}
	return 0;
}

static void
workers_fini(struct pass *p)
{
	for (unsigned i = 0; i < p->workers; i++) {
		batch_fini(&p->w[i].b);
		free(p->w[i].mem);
	}
}

static int
run_pass(struct raid_array *a, enum raid_sync_kind kind, int role)
{
	struct pass p = { .a = a, .s = a->sync, .kind = kind, .role = role };
	uint64_t per, u, start_ns = now_ns(), done = 0;
	int r = 0;

	p.unit_bytes = a->chunk_bytes;
	p.units = kind == RAID_SYNC_RECOVERY ? a->g.member_chunks
					     : check_units(a);
	if (kind == RAID_SYNC_RECOVERY && a->layout->size_unit) {
		p.units = DIV_ROUND_UP(a->member_bytes, a->chunk_bytes);
	}
	if (workers_init(&p) < 0) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < p.workers; i++) {
		/* A slot a spare takes during the pass is not this pass's: its
		 * I/O there fails (-ENODEV) and the pass stops (batch_pin). */
		batch_pin(&p.w[i].b, a->members, a->nr_members);
	}
	pthread_mutex_lock(&p.s->lock);
	per = MAX(1, p.s->window / p.unit_bytes);
	pthread_mutex_unlock(&p.s->lock);
	u = pass_start(&p);
	if (kind == RAID_SYNC_RESYNC) {
		/* From where it starts (resync_offset, down to a unit). */
		atomic_store(&a->resync_next, u * p.unit_bytes);
	}
	pass_begin(&p, u);
	p.last_cp_ns = now_ns();
	p.last_cp_u = u;
	p.io_seen = client_requests(a);
	while (u < p.units && r == 0 && !pass_stopped(&p)) {
		uint64_t end = MIN(u + per, p.units);

		if (kind == RAID_SYNC_RECOVERY &&
		    atomic_load(&a->members[role].state) !=
			    RAID_MEMBER_REBUILDING) {
			r = -ENODEV; /* failed or removed meanwhile */
			break;
		}
		r = window(&p, u, end);
		if (r < 0) {
			break;
		}
		done += (end - u) * p.unit_bytes;
		u = end;
		note_progress(&p, u);
		if (u < p.units &&
		    ((u - p.last_cp_u) * 16 >= p.units ||
		     now_ns() - p.last_cp_ns >= SYNC_CHECKPOINT_NS) &&
		    (kind == RAID_SYNC_RECOVERY || kind == RAID_SYNC_RESYNC)) {
			r = checkpoint(&p, u, false);
		}
		if (r == 0 && u < p.units) {
			throttle(&p, start_ns, done);
		}
	}
	r = pass_end(&p, u, r);
	workers_fini(&p);
	return r;
}

/* The pass due now, in md's order, or RAID_SYNC_NONE. */
static enum raid_sync_kind
next_pass(struct raid_array *a, int *role)
{
	struct sync_state *s = a->sync;
	enum raid_sync_kind want;
	bool blocked;

	pthread_mutex_lock(&s->lock);
	want = s->want;
	blocked = s->blocked;
	s->kicked = false;
	pthread_mutex_unlock(&s->lock);
	*role = rebuilding_role(a);
	if (*role >= 0) {
		return blocked ? RAID_SYNC_NONE : RAID_SYNC_RECOVERY;
	}
	if (resync_owed(a)) {
		if (can_compare(a) && !a->read_only) {
			return RAID_SYNC_RESYNC;
		}
		/* Nothing to make consistent with (RAID 0, or degraded). */
	}
	if (want != RAID_SYNC_NONE && !can_compare(a)) {
		pthread_mutex_lock(&s->lock);
		s->want = RAID_SYNC_NONE;
		pthread_mutex_unlock(&s->lock);
		raid_error("%s not started: the array is %s",
			   raid_sync_kind_name(want),
			   raid_array_state_name(array_state_now(a)));
		return RAID_SYNC_NONE;
	}
	return want;
}

int
sync_run_due(struct raid_array *a)
{
	enum raid_sync_kind kind;
	int role, r = 0;

	if (!a->sync) {
		return 0;
	}
	while (r == 0 && (kind = next_pass(a, &role)) != RAID_SYNC_NONE) {
		r = run_pass(a, kind, role);
		pthread_mutex_lock(&a->sync->lock);
		if (a->sync->stop) {
			r = r < 0 ? r : -ECANCELED;
		}
		pthread_mutex_unlock(&a->sync->lock);
	}
	return r;
}

/* ---- the thread -------------------------------------------------------- */

static void *
sync_main(void *arg)
{
	struct raid_array *a = arg;
	struct sync_state *s = a->sync;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		pthread_mutex_unlock(&s->lock);
		sync_run_due(a);
		pthread_mutex_lock(&s->lock);
		while (!s->stop && !s->kicked) {
			pthread_cond_wait(&s->wake, &s->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The helper: the shares of the windows posted to it, until stopped. */
static void *
helper_main(void *arg)
{
	struct sync_helper *h = arg;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct pass *p;
		uint64_t u0, u1;
		int r;

		while (!h->stop && !h->job) {
			pthread_cond_wait(&h->wake, &h->lock);
		}
		if (!h->job) {
			break; /* stopped, nothing posted */
		}
		p = h->job;
		u0 = h->u0;
		u1 = h->u1;
		h->taken = true;
		pthread_mutex_unlock(&h->lock);
		r = share(p, &p->w[1], u0, u1);
		pthread_mutex_lock(&h->lock);
		h->pieces += p->w[1].pieces;
		h->job = NULL;
		h->taken = false;
		h->result = r;
		h->done = true;
		pthread_cond_broadcast(&h->wake);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int
sync_start_helper(struct raid_array *a, bool alternate)
{
	struct sync_helper *h;
	int r;

	if (!a->sync || a->sync->helper.running) {
		return 0;
	}
	h = &a->sync->helper;
	h->stop = false;
	h->alternate = alternate;
	r = -pthread_create(&h->thread, NULL, helper_main, h);
	if (r < 0) {
		raid_error("starting the sync thread's helper: %s",
			   strerror(-r));
		return r;
	}
	pthread_mutex_lock(&h->lock);
	h->running = true;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static void
helper_stop(struct sync_state *s)
{
	struct sync_helper *h = &s->helper;

	if (!h->running) {
		return;
	}
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	pthread_mutex_lock(&h->lock);
	h->running = false;
	pthread_mutex_unlock(&h->lock);
}

uint64_t
sync_helper_pieces(struct raid_array *a)
{
	struct sync_helper *h = &a->sync->helper;
	uint64_t n;

	pthread_mutex_lock(&h->lock);
	n = h->pieces;
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* CPUs this process may run on. */
static unsigned
cpus_usable(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		return (unsigned)CPU_COUNT(&set);
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

int
sync_start(struct raid_array *a)
{
	struct sync_state *s = a->sync;
	int r;

	if (!s || s->running) {
		return 0;
	}
	/* A second core for the passes, if there is one; else (or if it
	 * cannot start) the sync thread works alone. */
	if (cpus_usable() > 1 && sync_start_helper(a, false) < 0) {
		raid_error("the background passes run on one thread");
	}
	r = -pthread_create(&s->thread, NULL, sync_main, a);
	if (r < 0) {
		raid_error("starting the array's sync thread: %s",
			   strerror(-r));
		helper_stop(s);
		return r;
	}
	s->running = true;
	return 0;
}

void
sync_stop(struct raid_array *a)
{
	struct sync_state *s = a->sync;

	if (!s) {
		return;
	}
	if (s->running) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
		s->running = false;
	}
	/* After the sync thread: no share is posted any more. */
	helper_stop(s);
}
