/*
 * array_state.c: the array's clean/active state in its superblocks, as md
 * keeps it (metadata.h has the table), and the thread that marks it clean.
 *
 * DESIGN
 * Every write, zero and trim is bracketed by state_write_start/end.  The
 * first one after opening, or after the array was marked clean, marks it
 * active first: resync_offset 0 and events + 1 on every member, written
 * with FUA before that request touches data (md_write_start).  The state
 * thread (started after nbdkit forks: raid_start) marks it clean again
 * once no write has run for META_CLEAN_DELAY_NS (md's safe_mode_delay):
 * it flushes every member, then writes resync_offset all ones and events
 * + 1.  raid_close does the same.  A kill -9 leaves it active, so md (or
 * nbdraid's resync, later) makes parity and copies consistent again.
 *
 * Before the first mark of an md array with an internal bitmap, nbdraid
 * marks the bitmap stale on every member (it keeps no bits: superblock.h).
 *
 * Lock order: meta->lock, then the state thread's lock (a write that marks
 * the array active wakes the thread); the thread never takes meta->lock
 * while it holds its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "cache.h"
#include "control.h"
#include "events.h"
#include "io/batch.h"
#include "log.h"
#include "metadata.h"
#include "sync.h"
#include "util.h"

#define STATE_IDLE_WAIT_NS (META_CLEAN_DELAY_NS) /* recheck while active */

static uint64_t
wall_seconds(void)
{
	return (uint64_t)time(NULL) & MD_TIME_SEC_MASK;
}

/* Is role i written with the array's superblocks? */
static bool
sb_live(const struct raid_array *a, unsigned i)
{
	return a->meta->members[i].present && member_alive(&a->members[i]);
}

/*
 * Mark every member's bitmap stale, once; under meta->lock.  A member
 * whose bitmap could not be read or written is in *bad, as a superblock
 * write error (for the caller to fail); the bitmap is marked only when
 * every live member's is.
 */
static int
bitmap_stale(struct raid_array *a, uint64_t *bad)
{
	struct raid_meta *meta = a->meta;
	uint8_t *buf = NULL;
	int r = 0, err = 0;

	if (!meta->bitmap || meta->bitmap_stale) {
		return 0;
	}
	if (posix_memalign((void **)&buf, IO_BUF_ALIGN, MD_SB_BYTES) != 0) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < meta->nr && r == 0; i++) {
		const struct meta_member *mm = &meta->members[i];
		uint64_t at = (mm->sb_sector + mm->sb.bitmap_offset) *
			      RAID_SECTOR_BYTES;
		struct io_req q = { .m = &a->members[i],
				    .op = IO_READ,
				    .buf = buf,
				    .len = MD_SB_BYTES,
				    .off = at };
		int e;

		if (!sb_live(a, i)) {
			continue;
		}
		e = a->members[i].be->submit_wait(&q, 1);
		if (e == 0 && md_bitmap_mark_stale(buf, MD_SB_BYTES,
						   mm->sb.set_uuid) < 0) {
			raid_error(
				"member %s: no md bitmap of this array at sector %lld from the superblock",
				a->members[i].path,
				(long long)mm->sb.bitmap_offset);
			r = -EINVAL;
			break;
		}
		if (e == 0) {
			q = (struct io_req){ .m = &a->members[i],
					     .op = IO_WRITE,
					     .flags = IO_FUA,
					     .buf = buf,
					     .len = MD_SB_BYTES,
					     .off = at };
			e = a->members[i].be->submit_wait(&q, 1);
		}
		if (e < 0) {
			raid_error("member %s: marking its bitmap stale: %s",
				   a->members[i].path, strerror(-e));
			*bad |= 1ull << i;
			err = e;
		}
	}
	free(buf);
	r = r < 0 ? r : err;
	meta->bitmap_stale = r == 0;
	return r;
}

/*
 * The spares' superblocks follow the members' (md writes a spare's with
 * every update).  One that cannot be written is only said: a spare's
 * superblock behind the array's is still read as a spare.
 */
static void
commit_spares(struct raid_array *a, uint64_t events)
{
	struct raid_meta *meta = a->meta;

	for (unsigned i = 0; i < meta->nr_spares; i++) {
		struct meta_member *mm = &meta->spares[i];
		int r;

		mm->sb.events = events;
		mm->sb.utime = wall_seconds();
		r = meta_write_one(&a->spares[i], mm);
		if (r < 0) {
			raid_error("spare %s: writing its superblock: %s",
				   a->spares[i].path, strerror(-r));
		}
	}
}

int
meta_commit(struct raid_array *a, unsigned step, uint64_t *bad)
{
	struct raid_meta *meta = a->meta;
	uint64_t events = 0;
	uint8_t *bufs = NULL;
	struct batch b;
	int r = 0;

	*bad = 0;
	for (unsigned i = 0; i < meta->nr; i++) {
		if (sb_live(a, i) && meta->members[i].sb.events > events) {
			events = meta->members[i].sb.events;
		}
	}
	events += step;
	if (posix_memalign((void **)&bufs, IO_BUF_ALIGN,
			   (size_t)meta->nr * MD_SB_BYTES) != 0) {
		return -ENOMEM;
	}
	batch_init(&b);
	for (unsigned i = 0; i < meta->nr && r == 0; i++) {
		struct meta_member *mm = &meta->members[i];
		uint64_t fixed = atomic_load(&a->members[i].corrected_reads);
		uint8_t *buf = bufs + (size_t)i * MD_SB_BYTES;

		if (!sb_live(a, i)) {
			continue;
		}
		mm->sb.events = events;
		mm->sb.utime = wall_seconds();
		mm->sb.cnt_corrected_read =
			fixed > UINT32_MAX ? UINT32_MAX : fixed;
		md_sb_encode(&mm->sb, buf);
		r = batch_write(&b, &a->members[i], buf, MD_SB_BYTES,
				mm->sb_sector * RAID_SECTOR_BYTES, IO_FUA);
	}
	if (r == 0) {
		r = batch_run(&b);
		*bad = batch_failed_writes(&b);
	}
	batch_fini(&b);
	free(bufs);
	if (r == 0) {
		commit_spares(a, events);
	}
	return r;
}

/*
 * Write the state to every live member: events + 1; under meta->lock.
 * Members whose superblock could not be written are in *bad.
 */
static int
mark(struct raid_array *a, bool active, uint64_t *bad)
{
	struct raid_meta *meta = a->meta;
	int r;

	*bad = 0;
	r = active ? bitmap_stale(a, bad) : 0;
	for (unsigned i = 0; i < meta->nr && r == 0; i++) {
		meta->members[i].sb.resync_offset =
			active ? 0 : meta->resync_cp;
	}
	if (r == 0) {
		r = meta_commit(a, 1, bad);
	}
	if (r < 0) {
		raid_error("marking the array %s in its superblocks failed: %s",
			   active ? "active" : "clean", strerror(-r));
	}
	return r;
}

/*
 * A member whose superblock write failed is failed like one whose data
 * write failed (md_error from super_written); 0 when every one of them
 * could be, so that the mark can be tried again without them.  gen: each
 * member's gen when its write was issued (under meta->lock, as a spare's
 * move): a spare that took the role since is not failed for it.
 */
static int
fail_bad(struct raid_array *a, uint64_t bad, const unsigned *gen)
{
	for (unsigned i = 0; i < a->nr_members; i++) {
		if (((bad >> i) & 1) &&
		    array_fail_seen(a, i, gen[i], "superblock write error",
				    FAIL_WRITE) < 0) {
			return -EIO;
		}
	}
	return 0;
}

/* Each member's gen, for fail_bad; under meta->lock. */
static void
note_gens(const struct raid_array *a, unsigned *gen)
{
	for (unsigned i = 0; i < a->nr_members; i++) {
		gen[i] = atomic_load(&a->members[i].gen);
	}
}

/*
 * Mark the array active, unless someone else has (a write of theirs got
 * in first); the members whose superblock write failed are failed, and
 * the mark tried again without them, as long as the array can do without
 * them: a superblock write that fails on one member never fails the
 * request, only the member.
 */
int
state_write_start(struct raid_array *a)
{
	struct raid_meta *meta = a->meta;
	unsigned gen[RAID_MAX_MEMBERS];
	uint64_t bad;
	int r = 0;

	if (!meta) {
		return 0;
	}
	atomic_fetch_add(&meta->writes, 1);
	if (atomic_load(&meta->dirty)) {
		return 0;
	}
	for (unsigned tries = 0; tries <= a->nr_members; tries++) {
		/* Each try stands alone: a mark made by another thread
		 * since the last one leaves nothing to do. */
		r = 0;
		bad = 0;
		pthread_mutex_lock(&meta->lock);
		if (!atomic_load(&meta->dirty)) {
			r = mark(a, true, &bad);
			note_gens(a, gen);
			if (r == 0) {
				atomic_store(&meta->dirty, true);
				state_wake(a);
			}
		}
		pthread_mutex_unlock(&meta->lock);
		if (r == 0 || !bad || fail_bad(a, bad, gen) < 0) {
			break;
		}
	}
	if (r < 0) {
		atomic_fetch_sub(&meta->writes, 1);
	}
	return r;
}

void
state_write_end(struct raid_array *a)
{
	struct raid_meta *meta = a->meta;

	if (!meta) {
		return;
	}
	atomic_store(&meta->last_write_ns, meta_now_ns());
	atomic_fetch_sub(&meta->writes, 1);
}

/*
 * fdatasync every live member; the data must be on them before "clean".
 * Members whose flush failed: *bad.
 */
static int
flush_all(struct raid_array *a, uint64_t *bad)
{
	struct batch b;
	int r = 0;

	batch_init(&b);
	for (unsigned i = 0; i < a->nr_members && r == 0; i++) {
		if (member_alive(&a->members[i])) {
			r = batch_flush(&b, &a->members[i]);
		}
	}
	if (r == 0) {
		r = batch_run(&b);
		*bad = batch_failed_writes(&b);
	}
	batch_fini(&b);
	return r;
}

/*
 * Mark clean if nothing has been written since; under meta->lock.  A
 * member whose superblock write failed is in *bad, to be failed by the
 * caller once it let go of meta->lock (then it tries again).
 */
static int
try_clean(struct raid_array *a, uint64_t *bad)
{
	struct raid_meta *meta = a->meta;
	int r;

	atomic_store(&meta->dirty, false);
	if (atomic_load(&meta->writes) > 0) {
		atomic_store(&meta->dirty, true); /* a write got in first */
		return -EBUSY;
	}
	r = flush_all(a, bad);
	/*
	 * A failure marked and not recorded yet: the member may have been
	 * skipped by that flush, and a crash before the record would take
	 * it back in sync under a clean mark.  Clean once it is recorded.
	 */
	if (r == 0 && atomic_load(&a->unrecorded)) {
		r = -EBUSY;
	}
	if (r == 0) {
		r = mark(a, false, bad);
	}
	if (r < 0) {
		atomic_store(&meta->dirty, true);
	}
	return r;
}

/* try_clean under meta->lock, failing the members it could not write. */
static int
clean(struct raid_array *a)
{
	struct raid_meta *meta = a->meta;
	unsigned gen[RAID_MAX_MEMBERS];
	uint64_t bad;
	int r = 0;

	for (unsigned tries = 0; tries <= a->nr_members; tries++) {
		r = 0; /* each try stands alone, as state_write_start's */
		bad = 0;
		pthread_mutex_lock(&meta->lock);
		if (atomic_load(&meta->dirty)) {
			r = try_clean(a, &bad);
			note_gens(a, gen);
		}
		pthread_mutex_unlock(&meta->lock);
		if (r == 0 || !bad || fail_bad(a, bad, gen) < 0) {
			break;
		}
	}
	return r;
}

uint64_t
state_tick(struct raid_array *a, uint64_t now_ns)
{
	struct raid_meta *meta = a->meta;
	uint64_t due;

	if (!meta || !atomic_load(&meta->dirty)) {
		return 0;
	}
	due = atomic_load(&meta->last_write_ns) + META_CLEAN_DELAY_NS;
	if (atomic_load(&meta->writes) > 0 || now_ns < due) {
		return now_ns < due ? due - now_ns : STATE_IDLE_WAIT_NS;
	}
	clean(a);
	return atomic_load(&meta->dirty) ? STATE_IDLE_WAIT_NS : 0;
}

int
state_close(struct raid_array *a)
{
	struct raid_meta *meta = a->meta;

	if (!meta) {
		return 0;
	}
	return clean(a);
}

/* ---- the state thread -------------------------------------------------- */

static void *
state_main(void *arg)
{
	struct raid_array *a = arg;
	struct state_thread *t = &a->state;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		uint64_t wait_ns;
		struct timespec until;

		pthread_mutex_unlock(&t->lock);
		wait_ns = state_tick(a, meta_now_ns());
		pthread_mutex_lock(&t->lock);
		if (t->stop) {
			break;
		}
		if (!wait_ns) {
			/* Clean (or never to be): until a write marks it. */
			pthread_cond_wait(&t->wake, &t->lock);
			continue;
		}
		until = mono_deadline(wait_ns);
		pthread_cond_timedwait(&t->wake, &t->lock, &until);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void
state_wake(struct raid_array *a)
{
	struct state_thread *t = &a->state;

	if (!t->running) {
		return;
	}
	pthread_mutex_lock(&t->lock);
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
}

static int
state_start(struct raid_array *a)
{
	struct state_thread *t = &a->state;
	pthread_condattr_t ca;
	int r;

	if (!a->meta || t->running) {
		return 0;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&t->lock, NULL);
	t->stop = false;
	r = -pthread_create(&t->thread, NULL, state_main, a);
	if (r < 0) {
		raid_error("starting the array's state thread: %s",
			   strerror(-r));
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
		return r;
	}
	t->running = true;
	return 0;
}

/* The array's threads: state, events, control (in that order). */
int
raid_start(struct raid_array *a)
{
	int r = state_start(a);

	if (r == 0 && a->events) {
		r = events_start(a->events);
	}
	if (r == 0) {
		r = sync_start(a);
	}
	if (r == 0) {
		r = cache_start(a->cache);
	}
	if (r == 0 && a->control) {
		r = control_start(a->control);
	}
	return r;
}

void
state_stop(struct raid_array *a)
{
	struct state_thread *t = &a->state;

	if (!t->running) {
		return;
	}
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	t->running = false;
}
