/*
 * array.c: assemble an array and run its requests.
 *
 * DESIGN
 * raid_open() opens every member (member.c), refuses what md would refuse
 * (same file twice, a member smaller than a chunk, a geometry the level
 * rejects) and fixes the geometry: member chunks = smallest member / chunk.
 *
 * A request is cut into pieces: reads at chunk boundaries, writes, trims
 * and zeros at chunk boundaries too, or at stripe boundaries for parity
 * levels.  Each piece goes to the level's read or write op (layout/),
 * which appends member I/O to the request's batch (io/batch.h); the batch
 * then goes to the members' backend in one call, which returns when all of
 * it has completed.  So one client request is one io_uring submit,
 * whatever its size, and the level code does no I/O of its own (RAID 5,
 * which must read before it writes, runs the batch itself).
 *
 * O_DIRECT members need aligned buffers, offsets and lengths.  nbdkit's
 * buffers are not aligned, so such requests go through a per-thread
 * aligned bounce buffer (io/bounce.c); an unaligned write reads and patches
 * its edge blocks holding them exclusive in write_lock (array.h).
 * Buffered members take the client's buffer as it is.
 *
 * Trim and zero reach the members in whole discard_align units: trim drops
 * the unaligned edges (it is advisory), zero writes them.  A member whose
 * filesystem refuses the fallocate mode that the others did is zeroed
 * another way, so copies and stripes never disagree (batch_run_discard).
 * With FUA, the members the request changed are flushed after it
 * completed (fallocate has no FUA).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cache.h"
#include "control.h"
#include "events.h"
#include "gather.h"
#include "io/batch.h"
#include "io/bounce.h"
#include "io/fault.h"
#include "log.h"
#include "member_overlap.h"
#include "sync.h"
#include "util.h"

/* NBD block size limits (the protocol's, for NBD_INFO_BLOCK_SIZE). */
#define NBD_MAX_BLOCK	  (32u << 20)
#define NBD_MIN_PREFERRED 512u

/* ---- the data path ----------------------------------------------------- */

/* How a request's pieces go (raid_piece: avoid, only). */
struct req_mode {
	uint64_t avoid; /* members whose reads failed in this request */
	uint64_t only;	/* repair: I/O to these members only */
};

/*
 * Cut [off, off+count) into pieces of at most `piece` bytes, aligned to
 * it, and hand them to the level's read or write op: the request's batch
 * fills.  On error, what was queued and not run is dropped.
 */
static int
array_pieces(struct raid_array *a, struct batch *b, int op, uint32_t flags,
	     struct req_mode mode, void *buf, uint64_t count, uint64_t off,
	     uint64_t piece)
{
	uint64_t mask = a->chunk_bytes - 1;
	int r = 0;

	while (count && r == 0) {
		struct raid_piece p = {
			.chunk_no = off >> a->g.chunk_shift,
			.in_chunk = off & mask,
			.len = MIN(count, piece - off % piece),
			.buf = buf,
			.op = op,
			.flags = flags,
			.avoid = mode.avoid,
			.only = mode.only,
		};

		r = op == IO_READ ? a->layout->read(a, b, &p)
				  : a->layout->write(a, b, &p);
		off += p.len;
		count -= p.len;
		buf = buf ? (char *)buf + p.len : NULL;
	}
	if (r < 0) {
		batch_reset(b);
	}
	return r;
}

static void
role_list(uint64_t roles, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < RAID_MAX_MEMBERS && at < len; i++) {
		if ((roles >> i) & 1) {
			at += snprintf(buf + at, len - at, "%s%u",
				       at ? ", " : "", i);
		}
	}
}

/* One pass of a read; *failed: the members whose reads failed. */
static int
read_once(struct raid_array *a, struct req_mode mode, void *buf, uint64_t count,
	  uint64_t off, uint64_t *failed)
{
	struct batch *b = batch_begin();
	int r;

	*failed = 0;
	if (!b) {
		return -ENOMEM;
	}
	batch_pin(b, a->members, a->nr_members);
	r = array_pieces(a, b, IO_READ, 0, mode, buf, count, off,
			 a->chunk_bytes);
	if (r == 0) {
		r = batch_run(b);
	}
	*failed = batch_failed_reads(b);
	return r;
}

/* md's max_corr_read_errors: a member corrected more often is failed. */
#define MAX_CORRECTED_READ_ERRORS 20
#define READ_ERROR_DECAY_NS	  (3600ull * 1000000000ull) /* halves */

/* Count one corrected read error; has the member had too many? */
static bool
too_many_read_errors(struct raid_array *a, struct raid_member *m)
{
	uint64_t now = meta_now_ns(), hours;
	bool over;

	pthread_mutex_lock(&a->fail_lock);
	hours = m->last_read_error_ns
			? (now - m->last_read_error_ns) / READ_ERROR_DECAY_NS
			: 0;
	m->recent_read_errors =
		hours >= 32 ? 0 : m->recent_read_errors >> hours;
	m->last_read_error_ns = now;
	over = ++m->recent_read_errors > MAX_CORRECTED_READ_ERRORS;
	pthread_mutex_unlock(&a->fail_lock);
	return over;
}

/*
 * Write buf back to member `role` alone (its places in [off, off+count)),
 * read it back and compare: md's fix_read_error.  0 when the member now
 * holds and returns the right bytes.
 */
static int
rewrite_member(struct raid_array *a, const void *buf, uint64_t count,
	       uint64_t off, unsigned role)
{
	struct req_mode mode = { .only = 1ull << role };
	struct batch *b = batch_begin();
	uint64_t failed;
	void *back = NULL;
	int r;

	if (!b) {
		return -ENOMEM;
	}
	batch_pin(b, a->members, a->nr_members);
	r = array_pieces(a, b, IO_WRITE, 0, mode, (void *)buf, count, off,
			 a->write_piece_bytes);
	if (r == 0) {
		r = batch_run(b);
	}
	if (r == 0 && !((batch_changed(b) >> role) & 1)) {
		r = -ENODATA; /* the range holds nothing of the member */
	}
	if (r == 0 && posix_memalign(&back, IO_BUF_ALIGN, count) != 0) {
		return -ENOMEM;
	}
	if (r == 0) {
		memcpy(back, buf, count); /* bytes elsewhere stay equal */
		r = read_once(a, mode, back, count, off, &failed);
	}
	if (r == 0 && memcmp(back, buf, count) != 0) {
		r = -EIO;
	}
	free(back);
	return r;
}

/*
 * The data came back from the redundancy: rewrite it to each member in
 * `members` whose read failed (while it is in sync), as md does.
 */
static void
repair_members(struct raid_array *a, const void *buf, uint64_t count,
	       uint64_t off, uint64_t members)
{
	for (unsigned i = 0; i < a->nr_members; i++) {
		struct raid_member *m = &a->members[i];
		char why[160];
		int r;

		if (!((members >> i) & 1) || !member_usable(m)) {
			continue;
		}
		r = rewrite_member(a, buf, count, off, i);
		if (r == 0) {
			atomic_fetch_add(
				&m->corrected_reads,
				DIV_ROUND_UP(count, RAID_SECTOR_BYTES));
			raid_error(
				"member %u (%s): read error at array offset %llu+%llu corrected: rewritten from the redundancy",
				i, m->path, (unsigned long long)off,
				(unsigned long long)count);
			if (too_many_read_errors(a, m)) {
				array_fail(a, i,
					   "more than 20 corrected read errors",
					   FAIL_READ);
			}
			continue;
		}
		if (r == -ENODATA) {
			raid_error(
				"member %u (%s): read error near array offset %llu+%llu left: the range holds none of its bytes",
				i, m->path, (unsigned long long)off,
				(unsigned long long)count);
			continue;
		}
		snprintf(why, sizeof(why),
			 "read error, and rewriting it failed (%s)",
			 strerror(-r));
		array_fail(a, i, why, FAIL_WRITE);
	}
}

/*
 * A read failed on the members in `failed`: read again around them (other
 * copies, or parity), holding the range exclusive (unless the caller does)
 * so that no write lands between reading the good bytes and rewriting
 * them; then repair the members.  -EIO when no copy is left to read.
 */
static int
read_recover(struct raid_array *a, void *buf, uint64_t count, uint64_t off,
	     uint64_t failed, bool locked)
{
	struct req_mode mode = { .avoid = failed };
	struct range_req lk;
	uint64_t more;
	char roles[160];
	int r;

	if (!locked) {
		range_lock(&a->write_lock, &lk, ROUND_DOWN(off, a->io_align),
			   ROUND_UP(off + count, a->io_align), true);
	}
	for (;;) {
		r = read_once(a, mode, buf, count, off, &more);
		if (r == 0 || !(more & ~mode.avoid)) {
			break;
		}
		mode.avoid |= more;
	}
	if (r == 0) {
		repair_members(a, buf, count, off, mode.avoid);
	} else {
		role_list(mode.avoid, roles, sizeof(roles));
		raid_error(
			"read of %llu bytes at %llu: unreadable on member(s) %s and no other copy left",
			(unsigned long long)count, (unsigned long long)off,
			roles);
	}
	if (!locked) {
		range_unlock(&a->write_lock, &lk);
	}
	return r;
}

/*
 * Read [off, off+count) into buf (aligned for the members, as the request
 * is).  locked: the caller holds the range exclusive (a write's edges).
 */
static int
array_read(struct raid_array *a, void *buf, uint64_t count, uint64_t off,
	   bool locked)
{
	uint64_t failed;
	int r = read_once(a, (struct req_mode){ 0 }, buf, count, off, &failed);

	if (r == 0 || !failed) {
		return r;
	}
	return read_recover(a, buf, count, off, failed, locked);
}

/*
 * Run a write-class request's pieces (a write, trim, zero or punch) until
 * it succeeds on the members left: a member whose write fails is failed
 * (array_fail) and the request runs again without it (writes are
 * idempotent); a member whose read failed (RAID 5 reads before it writes)
 * is read around, and added to *repair for the caller to fix once it let
 * go of its lock.  *changed: the members written.
 */
static int
write_pieces(struct raid_array *a, int op, uint32_t flags, const void *buf,
	     uint64_t count, uint64_t off, uint64_t *changed, uint64_t *repair)
{
	struct req_mode mode = { 0 };
	/* The level may keep a write's pieces queued for the one run. */
	uint32_t defer =
		op == IO_WRITE && a->layout->write_end ? RAID_PIECE_DEFER : 0;
	int r = -EIO;

	for (unsigned tries = 0; tries <= a->nr_members; tries++) {
		struct batch *b = batch_begin();
		uint64_t wf, rf;

		if (!b) {
			return -ENOMEM;
		}
		batch_pin(b, a->members, a->nr_members);
		r = array_pieces(a, b, op, flags | defer, mode, (void *)buf,
				 count, off, a->write_piece_bytes);
		if (r == 0) {
			r = op == IO_WRITE ? batch_run(b)
					   : batch_run_discard(b);
		}
		if (defer) {
			a->layout->write_end(a, b); /* ran, or dropped */
		}
		*changed |= batch_changed(b);
		wf = batch_failed_writes(b);
		rf = batch_failed_reads(b) & ~mode.avoid;
		if (r == 0 || (!wf && !rf)) {
			return r;
		}
		for (unsigned i = 0; i < a->nr_members; i++) {
			char why[96];
			int err = b->error[i];

			if (!((wf >> i) & 1)) {
				continue;
			}
			snprintf(why, sizeof(why), "write error (%s)",
				 strerror(-err));
			if (array_fail_seen(a, i, b->gen[i], why, FAIL_WRITE) <
			    0) {
				return err;
			}
		}
		mode.avoid |= rf;
		*repair |= rf;
	}
	return r;
}

static int
check_range(const struct raid_array *a, uint64_t count, uint64_t off)
{
	if (off > a->size || count > a->size - off) {
		raid_error(
			"request %llu+%llu is beyond the end of the array (%llu)",
			(unsigned long long)off, (unsigned long long)count,
			(unsigned long long)a->size);
		return -ENOSPC;
	}
	return 0;
}

static bool
aligned_io(const struct raid_array *a, const void *buf, uint64_t count,
	   uint64_t off)
{
	return IS_ALIGNED(off | count, a->io_align) &&
	       IS_ALIGNED((uintptr_t)buf, a->mem_align);
}

/* Read the aligned span around [off, off+count) into a bounce buffer. */
static int
read_bounced(struct raid_array *a, void *buf, uint64_t count, uint64_t off)
{
	uint64_t lo = ROUND_DOWN(off, a->io_align);
	uint64_t hi = ROUND_UP(off + count, a->io_align);
	char *bb = bounce_get(BOUNCE_IO, hi - lo, a->mem_align);
	int r;

	if (!bb) {
		return -ENOMEM;
	}
	r = array_read(a, bb, hi - lo, lo, false);
	if (r == 0) {
		memcpy(buf, bb + (off - lo), count);
	}
	bounce_put(BOUNCE_IO);
	return r;
}

/* Count a client request and its result, for status. */
static int
counted(struct raid_array *a, enum raid_req_kind k, uint64_t bytes, int r)
{
	atomic_fetch_add_explicit(&a->io[k].requests, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&a->io[k].bytes, bytes, memory_order_relaxed);
	if (r < 0) {
		atomic_fetch_add_explicit(&a->io[k].errors, 1,
					  memory_order_relaxed);
	}
	return r;
}

int
array_pread(struct raid_array *a, void *buf, uint64_t count, uint64_t offset)
{
	int r = check_range(a, count, offset);

	if (r == 0) {
		r = a->io_align == 1 || aligned_io(a, buf, count, offset)
			    ? array_read(a, buf, count, offset, false)
			    : read_bounced(a, buf, count, offset);
	}
	return r;
}

/*
 * The public data functions: through the cache when there is one (it
 * calls the array_* functions for write-back and misses), else straight
 * to them; each client request counted once, here.
 */
int
raid_pread(struct raid_array *a, void *buf, uint32_t count, uint64_t offset,
	   uint32_t flags)
{
	int r = check_range(a, count, offset);

	(void)flags;
	if (r == 0) {
		r = a->cache ? cache_pread(a->cache, buf, count, offset)
			     : array_pread(a, buf, count, offset);
	}
	return counted(a, RAID_REQ_READ, count, r);
}

/* Read the partial edge blocks of [off, off+count), patch, write it all. */
static int
write_rmw(struct raid_array *a, const void *buf, uint64_t count, uint64_t off,
	  uint32_t flags, uint64_t *changed, uint64_t *repair)
{
	uint32_t al = a->io_align;
	uint64_t lo = ROUND_DOWN(off, al), hi = ROUND_UP(off + count, al);
	char *bb = bounce_get(BOUNCE_IO, hi - lo, a->mem_align);
	int r = 0;

	if (!bb) {
		return -ENOMEM;
	}
	if (off != lo) {
		r = array_read(a, bb, al, lo, true);
	}
	if (r == 0 && off + count != hi && (hi - al != lo || off == lo)) {
		r = array_read(a, bb + (hi - al - lo), al, hi - al, true);
	}
	if (r == 0) {
		memcpy(bb + (off - lo), buf, count);
		r = write_pieces(a, IO_WRITE, flags, bb, hi - lo, lo, changed,
				 repair);
	}
	bounce_put(BOUNCE_IO);
	return r;
}

/* Write buf to [off, off+count) now: stripe gathering's way through. */
static int
write_direct(struct raid_array *a, uint32_t flags, const void *buf,
	     uint64_t count, uint64_t off, uint64_t *changed, uint64_t *repair)
{
	return write_pieces(a, IO_WRITE, flags, buf, count, off, changed,
			    repair);
}

/*
 * An aligned write's data (buffer aligned for the members): where the
 * array gathers stripes, its partial stripes may wait for the writes in
 * flight beside it to make them whole (gather.h).
 */
static int
write_data(struct raid_array *a, const void *buf, uint64_t count, uint64_t off,
	   uint32_t flags, uint64_t *changed, uint64_t *repair)
{
	if (a->gather) {
		return gather_write(a->gather, a, write_direct, flags, buf,
				    count, off, changed, repair);
	}
	return write_pieces(a, IO_WRITE, flags, buf, count, off, changed,
			    repair);
}

/* An aligned write, bounced if O_DIRECT members need a better buffer. */
static int
write_aligned(struct raid_array *a, const void *buf, uint64_t count,
	      uint64_t off, uint32_t flags, uint64_t *changed, uint64_t *repair)
{
	char *bb;
	int r;

	if (IS_ALIGNED((uintptr_t)buf, a->mem_align)) {
		return write_data(a, buf, count, off, flags, changed, repair);
	}
	bb = bounce_get(BOUNCE_IO, count, a->mem_align);
	if (!bb) {
		return -ENOMEM;
	}
	memcpy(bb, buf, count);
	r = write_data(a, bb, count, off, flags, changed, repair);
	bounce_put(BOUNCE_IO);
	return r;
}

/*
 * A member's read failed while a write read around it: once the write's
 * lock is let go, read the stripes it touched around that member (holding
 * them exclusive) and rewrite the member there, as a read would.
 */
static void
repair_after_write(struct raid_array *a, uint64_t count, uint64_t off,
		   uint64_t members)
{
	uint64_t unit = a->write_piece_bytes;
	uint64_t lo = ROUND_DOWN_ANY(off, unit);
	uint64_t hi = MIN(ROUND_UP_ANY(off + count, unit), a->size);
	void *buf = NULL;

	if (posix_memalign(&buf, IO_BUF_ALIGN, hi - lo) != 0) {
		return; /* the member stays as it is: a read finds it again */
	}
	read_recover(a, buf, hi - lo, lo, members, false);
	free(buf);
}

/*
 * A write of any shape, any buffer.  It holds its range in write_lock:
 * shared, or exclusive for the read-patch-write of an unaligned write to
 * O_DIRECT members, so that no other write lands in its edge blocks in
 * between, nor a read error's repair rewrites old bytes over it.  Stripe
 * gathering counts it in flight throughout.
 */
static int
array_write_any(struct raid_array *a, const void *buf, uint64_t count,
		uint64_t off, uint32_t flags)
{
	bool rmw = !IS_ALIGNED(off | count, a->io_align);
	uint64_t changed = 0, repair = 0;
	struct gather_flight fl;
	struct range_req lk;
	int r;

	if (a->gather) {
		gather_enter(a->gather, &fl, off, count, !rmw);
	}
	range_lock(&a->write_lock, &lk, ROUND_DOWN(off, a->io_align),
		   ROUND_UP(off + count, a->io_align), rmw);
	r = rmw ? write_rmw(a, buf, count, off, flags, &changed, &repair)
		: write_aligned(a, buf, count, off, flags, &changed, &repair);
	range_unlock(&a->write_lock, &lk);
	if (a->gather) {
		gather_leave(a->gather, &fl);
	}
	if (repair) {
		repair_after_write(a, count, off, repair);
	}
	return r;
}

static int
pwrite_checked(struct raid_array *a, const void *buf, uint64_t count,
	       uint64_t offset, uint32_t flags)
{
	int r = check_range(a, count, offset);

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	return array_write_any(a, buf, count, offset, flags & RAID_FUA);
}

/*
 * fdatasync the live members in `which` (bit per role), all at once.  A
 * member whose flush fails is failed; the flush fails only when it cannot
 * be (RAID 0, or the last copy of some data).
 */
static int
flush_members(struct raid_array *a, uint64_t which)
{
	struct batch *b = batch_begin();
	uint64_t wf;
	int r = 0;

	if (!b) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < a->nr_members && r == 0; i++) {
		struct raid_member *m = &a->members[i];

		if (!m->read_only && member_alive(m) && ((which >> i) & 1)) {
			r = batch_flush(b, m);
		}
	}
	if (r < 0) {
		batch_reset(b);
		return r;
	}
	r = batch_run(b);
	wf = batch_failed_writes(b);
	for (unsigned i = 0; i < a->nr_members && r < 0; i++) {
		int err = b->error[i];

		if (((wf >> i) & 1) &&
		    array_fail_seen(a, i, b->gen[i], "flush error",
				    FAIL_WRITE) < 0) {
			return err;
		}
	}
	return 0;
}

int
array_flush(struct raid_array *a)
{
	int r = flush_members(a, ~0ull);

	/* A member skipped as failed: only once that is recorded. */
	return r < 0 ? r : failures_recorded(a);
}

int
raid_flush(struct raid_array *a)
{
	int r = a->cache ? cache_flush(a->cache) : array_flush(a);

	return counted(a, RAID_REQ_FLUSH, 0, r);
}

int
raid_cache_flush(struct raid_array *a)
{
	if (!a->cache) {
		return -ENOTSUP;
	}
	return cache_drain_all(a->cache);
}

/*
 * Trim or zero [off, off+count), whole discard_align units: every copy,
 * the refusers of a mode zeroed another way, then FUA as a flush of the
 * members it changed.  They change member blocks like a write, so they
 * hold their range shared: an unaligned write's read-patch-write of the
 * same block must not straddle them (it would write the old bytes back).
 */
static int
array_discard(struct raid_array *a, int op, uint32_t flags, uint64_t count,
	      uint64_t off)
{
	uint64_t changed = 0, repair = 0;
	struct range_req lk;
	int r;

	range_lock(&a->write_lock, &lk, off, off + count, false);
	r = write_pieces(a, op, flags & RAID_FAST_ZERO, NULL, count, off,
			 &changed, &repair);
	range_unlock(&a->write_lock, &lk);
	if (r < 0 || !(flags & RAID_FUA)) {
		return r;
	}
	return flush_members(a, changed);
}

/* Has some member's filesystem or device refused trim before? */
static bool
trim_refused(const struct raid_array *a)
{
	for (unsigned i = 0; i < a->nr_members; i++) {
		const struct raid_member *m = &a->members[i];

		if (atomic_load_explicit(m->is_blk ? &m->no_discard
						   : &m->no_punch,
					 memory_order_relaxed)) {
			return true;
		}
	}
	return false;
}

static int
trim_checked(struct raid_array *a, uint64_t count, uint64_t offset,
	     uint32_t flags)
{
	uint64_t lo = ROUND_UP(offset, a->discard_align);
	uint64_t hi = ROUND_DOWN(offset + count, a->discard_align);
	int r = check_range(a, count, offset);

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	/*
	 * Trim is advisory: drop unaligned edges, and trim nothing once a
	 * member has refused (md too offers discard only when every member
	 * has it), rather than zero that member's range by writing.
	 */
	if (hi <= lo || trim_refused(a)) {
		return 0;
	}
	r = array_discard(a, IO_TRIM, flags & RAID_FUA, hi - lo, lo);
	return r == -EOPNOTSUPP ? 0 : r;
}

/* Can a fast zero of [off, off+count) be done without writing data? */
static bool
zero_without_writes(const struct raid_array *a, uint64_t count, uint64_t off)
{
	uint64_t stripe = a->g.stripe_chunks << a->g.chunk_shift;

	if (!IS_ALIGNED(off | count, a->discard_align)) {
		return false;
	}
	return !a->layout->stripe_pieces ||
	       (off % stripe == 0 && count % stripe == 0);
}

/* Zero the unaligned edges of a range by writing zeros. */
static int
zero_edges(struct raid_array *a, uint64_t count, uint64_t off, uint32_t flags,
	   uint64_t *lo, uint64_t *hi)
{
	int r = 0;

	*lo = MIN(ROUND_UP(off, a->discard_align), off + count);
	*hi = MAX(ROUND_DOWN(off + count, a->discard_align), *lo);
	/* raid_open checked that an edge fits in io_zeros. */
	if (*lo > off) {
		r = array_write_any(a, io_zeros, *lo - off, off, flags);
	}
	if (r == 0 && off + count > *hi) {
		r = array_write_any(a, io_zeros, off + count - *hi, *hi, flags);
	}
	return r;
}

static int
zero_checked(struct raid_array *a, uint64_t count, uint64_t offset,
	     uint32_t flags)
{
	bool fast = flags & RAID_FAST_ZERO;
	uint64_t lo, hi;
	int r = check_range(a, count, offset);
	/*
	 * A hole is zero and never costs a write: use it when the client
	 * allows, and for fast zero on block devices, where ZERO_RANGE may
	 * fall back to writing zeros but PUNCH_HOLE may not.
	 */
	bool punch = (flags & RAID_MAY_TRIM) || (fast && a->has_blk);
	int op = punch ? IO_PUNCH : IO_ZERO;

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	if (fast && !zero_without_writes(a, count, offset)) {
		return -ENOTSUP;
	}
	r = zero_edges(a, count, offset, flags & RAID_FUA, &lo, &hi);
	if (r < 0 || hi == lo) {
		return r;
	}
	r = array_discard(a, op, flags, hi - lo, lo);
	if (r == -EOPNOTSUPP && punch && !fast) {
		r = array_discard(a, IO_ZERO, flags, hi - lo, lo);
	}
	return r == -EOPNOTSUPP ? -ENOTSUP : r;
}

/*
 * The write-class requests, between state_write_start and _end: the first
 * after the array was clean marks it active in its superblocks first.  A
 * failed array (array.h: broken) takes none.  Each answers success only
 * once every member failure it may have seen (a member it skipped) is
 * durable in the superblocks (failures_recorded; docs/degraded.md).
 */
static int
write_start(struct raid_array *a)
{
	if (atomic_load(&a->broken)) {
		return -EIO;
	}
	return state_write_start(a);
}

int
array_pwrite(struct raid_array *a, const void *buf, uint64_t count,
	     uint64_t offset, uint32_t flags)
{
	int r = write_start(a);

	if (r == 0) {
		r = pwrite_checked(a, buf, count, offset, flags);
		state_write_end(a);
	}
	return r < 0 ? r : failures_recorded(a);
}

int
array_trim(struct raid_array *a, uint64_t count, uint64_t offset,
	   uint32_t flags)
{
	int r = write_start(a);

	if (r == 0) {
		r = trim_checked(a, count, offset, flags);
		state_write_end(a);
	}
	return r < 0 ? r : failures_recorded(a);
}

int
array_zero(struct raid_array *a, uint64_t count, uint64_t offset,
	   uint32_t flags)
{
	int r = write_start(a);

	if (r == 0) {
		r = zero_checked(a, count, offset, flags);
		state_write_end(a);
	}
	return r < 0 ? r : failures_recorded(a);
}

int
array_writable(struct raid_array *a)
{
	if (a->read_only) {
		return -EROFS;
	}
	return atomic_load(&a->broken) ? -EIO : 0;
}

int
raid_pwrite(struct raid_array *a, const void *buf, uint32_t count,
	    uint64_t offset, uint32_t flags)
{
	int r = check_range(a, count, offset);

	if (r == 0) {
		r = a->cache ? cache_pwrite(a->cache, buf, count, offset, flags)
			     : array_pwrite(a, buf, count, offset, flags);
	}
	return counted(a, RAID_REQ_WRITE, count, r);
}

/* Trim or zero (k): through the cache when there is one. */
static int
trim_or_zero(struct raid_array *a, enum raid_req_kind k, uint32_t count,
	     uint64_t offset, uint32_t flags)
{
	int r = check_range(a, count, offset);
	bool zero = k == RAID_REQ_ZERO;

	if (r == 0 && a->cache) {
		r = zero ? cache_zero(a->cache, count, offset, flags)
			 : cache_trim(a->cache, count, offset, flags);
	} else if (r == 0) {
		r = zero ? array_zero(a, count, offset, flags)
			 : array_trim(a, count, offset, flags);
	}
	return counted(a, k, count, r);
}

int
raid_trim(struct raid_array *a, uint32_t count, uint64_t offset, uint32_t flags)
{
	return trim_or_zero(a, RAID_REQ_TRIM, count, offset, flags);
}

int
raid_zero(struct raid_array *a, uint32_t count, uint64_t offset, uint32_t flags)
{
	return trim_or_zero(a, RAID_REQ_ZERO, count, offset, flags);
}

/* ---- extents ----------------------------------------------------------- */

#define EXTENT_MAX_PIECES 1024 /* bound the lseeks of one call */

/* The leading run of a piece that is hole on every copy, or data. */
static void
piece_extent(struct raid_array *a, uint64_t off, uint64_t len, bool *hole,
	     uint64_t *run)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	uint64_t chunk_no = off >> a->g.chunk_shift;
	uint32_t in = off & (a->chunk_bytes - 1);
	unsigned n = a->layout->map(&a->g, chunk_no, locs);

	unsigned looked = 0;

	*hole = true;
	*run = len;
	for (unsigned i = 0; i < n; i++) {
		bool h;
		uint64_t r;

		/* A member out of the array says nothing (nor is read). */
		if (!member_usable(&a->members[locs[i].member])) {
			continue;
		}
		looked++;
		member_extent(&a->members[locs[i].member],
			      geom_member_offset(&a->g, &locs[i], in), *run, &h,
			      &r);
		*hole &= h;
		*run = MIN(*run, r);
	}
	*hole &= looked > 0; /* RAID 5 rebuilds it: data, as far as known */
}

/*
 * Pieces of at most a chunk, each asked of the members (SEEK_DATA), less
 * what the cache holds unwritten.  The cache is looked at first, for each
 * piece: its units holding unwritten data are data without asking the
 * members; the members are asked only about units holding none, whose
 * acknowledged writes are then on them already.  (Asking the members
 * first, a write-back completing before the cache was looked at answered
 * a hole over acknowledged data.)
 */
int
raid_extents(struct raid_array *a, uint32_t count, uint64_t offset,
	     uint32_t flags, raid_extent_fn add, void *ctx)
{
	uint64_t end = offset + count;
	int r = check_range(a, count, offset);

	for (unsigned i = 0; r == 0 && offset < end && i < EXTENT_MAX_PIECES;
	     i++) {
		uint64_t len =
			MIN(end - offset,
			    a->chunk_bytes - (offset & (a->chunk_bytes - 1)));
		uint64_t run;
		bool hole;

		if (a->cache && cache_unwritten(a->cache, offset, len, &run)) {
			hole = false;
		} else {
			piece_extent(a, offset, a->cache ? run : len, &hole,
				     &run);
		}
		r = add(ctx, offset, run,
			hole ? RAID_EXTENT_HOLE | RAID_EXTENT_ZERO : 0);
		offset += run;
		if (flags & RAID_REQ_ONE) {
			break;
		}
	}
	return r;
}

int
raid_locate(const struct raid_array *a, uint64_t offset,
	    struct raid_place *places, unsigned max)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	unsigned n;

	if (offset >= a->size) {
		return -ERANGE;
	}
	n = a->layout->map(&a->g, offset >> a->g.chunk_shift, locs);
	for (unsigned i = 0; i < n && i < max; i++) {
		places[i].member = locs[i].member;
		places[i].offset = geom_member_offset(
			&a->g, &locs[i], offset & (a->chunk_bytes - 1));
	}
	return n;
}

/* ---- assembly ---------------------------------------------------------- */

/*
 * The member data area: from data_offset, member-size= bytes or what the
 * smallest member holds, rounded down to whole chunks (or to the layout's
 * size_unit for mirrors, and the members' O_DIRECT alignment).  Every
 * member must hold one chunk; member_chunks counts a partial last chunk.
 */
static int
member_area(struct raid_array *a, uint64_t member_size)
{
	uint64_t avail = UINT64_MAX, unit, chunk = a->chunk_bytes;

	for (unsigned i = 0; i < a->nr_members; i++) {
		const struct raid_member *m = &a->members[i];
		uint64_t data_offset = a->g.data_offset[i];
		uint64_t need = data_offset + MAX(member_size, chunk);
		char what[96];
		int n = 0;

		if (!member_alive(m)) {
			continue; /* missing */
		}
		if (m->size >= need) {
			avail = MIN(avail, m->size - data_offset);
			continue;
		}
		if (data_offset || member_size) {
			n = snprintf(what, sizeof(what),
				     "data-offset %llu plus ",
				     (unsigned long long)data_offset);
		}
		if (member_size) {
			snprintf(what + n, sizeof(what) - n, "member-size %llu",
				 (unsigned long long)member_size);
		} else {
			snprintf(what + n, sizeof(what) - n, "one chunk (%llu)",
				 (unsigned long long)chunk);
		}
		raid_error("member %u (%s): size %llu is smaller than %s", i,
			   m->path, (unsigned long long)m->size, what);
		return -EINVAL;
	}
	if (avail == UINT64_MAX) {
		raid_error("no member could be opened");
		return -EINVAL;
	}
	if (member_size) {
		avail = member_size;
	}
	if (!a->layout->size_unit) {
		unit = chunk;
	} else {
		unit = member_size ? RAID_SECTOR_BYTES
				   : MIN(a->layout->size_unit, chunk);
		unit = MAX(unit, a->io_align);
	}
	a->member_bytes = avail / unit * unit;
	if (a->member_bytes < chunk) {
		raid_error("member-size %llu is smaller than one chunk (%llu)",
			   (unsigned long long)avail,
			   (unsigned long long)chunk);
		return -EINVAL;
	}
	a->g.member_chunks = DIV_ROUND_UP(a->member_bytes, chunk);
	for (unsigned i = 0; i < a->nr_members; i++) {
		uint64_t used = a->g.data_offset[i] + a->member_bytes;

		if (member_alive(&a->members[i]) && a->members[i].size > used) {
			raid_debug(
				"member %u (%s): %llu bytes past %llu unused",
				i, a->members[i].path,
				(unsigned long long)(a->members[i].size - used),
				(unsigned long long)used);
		}
	}
	return 0;
}

/*
 * The members' alignment needs, the largest of each.  The data offset and
 * the chunk must keep member I/O aligned, and the zero buffer must serve
 * every member (its alignment, and an unaligned edge of a zero request).
 */
static int
array_alignment(struct raid_array *a)
{
	a->mem_align = a->io_align = a->discard_align = 1;
	for (unsigned i = 0; i < a->nr_members; i++) {
		const struct raid_member *m = &a->members[i];

		if (!member_alive(m)) {
			continue;
		}

		a->mem_align = MAX(a->mem_align, m->mem_align);
		a->io_align = MAX(a->io_align, m->io_align);
		a->discard_align = MAX(a->discard_align, m->discard_align);
		a->read_only |= m->read_only;
		a->has_blk |= m->is_blk;
	}
	a->discard_align = MAX(a->discard_align, a->io_align);
	if (!is_power_of_2(a->io_align) || !is_power_of_2(a->discard_align) ||
	    a->discard_align > a->chunk_bytes) {
		raid_error(
			"member block size %u does not divide the chunk (%llu)",
			a->discard_align, (unsigned long long)a->chunk_bytes);
		return -EINVAL;
	}
	if (a->mem_align > IO_BUF_ALIGN || a->discard_align > IO_ZEROS_BYTES) {
		raid_error(
			"member alignment %u/%u is more than nbdraid supports (%u/%u)",
			a->mem_align, a->discard_align, IO_BUF_ALIGN,
			IO_ZEROS_BYTES);
		return -EINVAL;
	}
	for (unsigned i = 0; i < a->nr_members; i++) {
		uint64_t data_offset = a->g.data_offset[i];

		if (!IS_ALIGNED(data_offset, a->discard_align)) {
			raid_error(
				"member %u (%s): data offset %llu is not a multiple of the members' block size %u",
				i, a->members[i].path,
				(unsigned long long)data_offset,
				a->discard_align);
			return -EINVAL;
		}
	}
	return 0;
}

static void
array_free(struct raid_array *a)
{
	sync_free(a->sync);
	gather_free(a->gather);
	range_lock_destroy(&a->write_lock);
	stripe_locks_destroy(&a->stripe_locks);
	pthread_mutex_destroy(&a->fail_lock);
	paths_free(a); /* no one reads a member's path any more */
	free(a);
}

/* Geometry from the config and the members; 0 or -EINVAL (logged). */
static int
array_geometry(struct raid_array *a, const struct raid_config *cfg,
	       const uint64_t *data_offsets)
{
	char err[256];
	int r;

	a->chunk_bytes = cfg->chunk_bytes;
	a->g.nr_members = a->nr_members;
	a->g.chunk_shift = log2_u64(cfg->chunk_bytes);
	for (unsigned i = 0; i < a->nr_members; i++) {
		a->g.data_offset[i] =
			data_offsets ? data_offsets[i] : cfg->data_offset;
	}
	r = a->layout ? 0 : -EINVAL;
	if (r == 0) {
		r = member_overlap_check(a->members, a->nr_members);
	}
	for (unsigned i = 0; i < a->nr_members && r == 0; i++) {
		if (member_alive(&a->members[i])) {
			r = member_claim(&a->members[i]);
		}
	}
	if (r == 0) {
		r = array_alignment(a);
	}
	if (r == 0) {
		r = member_area(a, cfg->member_size);
	}
	if (r == 0 &&
	    (r = a->layout->setup(&a->g, cfg->layout, err, sizeof(err))) < 0) {
		raid_error("%s", err);
	}
	return r;
}

/*
 * Parity levels gather the partial stripes of writes in flight (gather.h)
 * unless gather-wait=0; parked writes must not hold an exclusive range
 * request back, so write_lock tells the table when one waits.
 */
static int
array_gather(struct raid_array *a, const struct raid_config *cfg)
{
	if (!a->layout->stripe_pieces || cfg->gather_wait_us == 0) {
		return 0;
	}
	a->gather = gather_new(a->write_piece_bytes, a->mem_align,
			       cfg->gather_wait_us * 1000,
			       cfg->gather_grace_us * 1000);
	if (!a->gather) {
		return -ENOMEM;
	}
	a->write_lock.excl_wait = gather_exclusive_wait;
	a->write_lock.excl_ctx = a->gather;
	return 0;
}

int
array_create(const struct raid_config *cfg, struct raid_member *members,
	     unsigned nr, const uint64_t *data_offsets, struct raid_array **out)
{
	struct raid_array *a;
	int r;

	/* The tables sized by members (raid_config.h): never past them. */
	if (nr > RAID_MAX_MEMBERS) {
		raid_error("%u members: nbdraid serves at most %d", nr,
			   RAID_MAX_MEMBERS);
		return -E2BIG;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		return -ENOMEM;
	}
	a->layout = layout_find(cfg->level);
	a->members = members;
	a->nr_members = nr;
	range_lock_init(&a->write_lock);
	stripe_locks_init(&a->stripe_locks);
	pthread_mutex_init(&a->fail_lock, NULL);
	a->sync = sync_new();
	if (!a->sync) {
		array_free(a);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nr; i++) {
		atomic_init(&members[i].next_read, UINT64_MAX);
	}
	atomic_init(&a->resync_next, UINT64_MAX);
	r = array_geometry(a, cfg, data_offsets);
	if (r < 0) {
		array_free(a);
		return r;
	}
	a->size = a->layout->size_unit ? a->member_bytes
				       : a->g.array_chunks << a->g.chunk_shift;
	a->write_piece_bytes = a->layout->stripe_pieces
				       ? a->g.stripe_chunks << a->g.chunk_shift
				       : a->chunk_bytes;
	r = array_gather(a, cfg);
	if (r < 0) {
		array_free(a);
		return r;
	}
	*out = a;
	return 0;
}

/* "0, 2": the roles in a mask, for messages. */
static const char *
roles_str(uint64_t roles, char *buf, size_t len)
{
	role_list(roles, buf, len);
	return buf;
}

/*
 * md's rule for a parity array found dirty (not shut down cleanly) with a
 * role not in sync, missing or being rebuilt (raid5_run: md counts every
 * device that is not In_sync as degraded, recovery_offset or not): it
 * does not start ("cannot start dirty degraded array"), since a write cut
 * short by the crash may have reached data and not parity, and what is
 * rebuilt or read from that parity would be wrong without anything saying
 * so.  force=true starts it, marked clean, as mdadm --assemble --force.
 */
static int
start_dirty(struct raid_array *a, const struct raid_config *cfg,
	    uint64_t missing, uint64_t rebuilding)
{
	uint64_t out = missing | rebuilding;
	char list[160], why[320];
	int n = 0;

	if (!out || !a->meta || a->meta->resync_cp == MD_RESYNC_DONE ||
	    !a->layout->parity_member) {
		return 0;
	}
	if (missing) {
		n = snprintf(why, sizeof(why), "role%s %s missing",
			     missing & (missing - 1) ? "s" : "",
			     roles_str(missing, list, sizeof(list)));
	}
	if (rebuilding) {
		snprintf(why + n, sizeof(why) - n, "%srole%s %s being rebuilt",
			 n ? ", " : "",
			 rebuilding & (rebuilding - 1) ? "s" : "",
			 roles_str(rebuilding, list, sizeof(list)));
	}
	if (!cfg->force) {
		raid_error(
			"the array is degraded (%s) and was not shut down cleanly: its parity may not match its data, and the data of a member not in sync, rebuilt from it, cannot be trusted (md: cannot start dirty degraded array); force=true starts it anyway",
			why);
		return -EINVAL;
	}
	raid_error(
		"force=true: starting a dirty degraded array (%s); parity that did not match its data gives wrong bytes for a member not in sync there",
		why);
	a->meta->resync_cp =
		MD_RESYNC_DONE; /* marked clean, as mdadm --force */
	return 0;
}

/*
 * May the array start with the roles in `missing` out, and `rebuilding`
 * being rebuilt?  Only if it can produce every byte without the missing
 * ones; a role the superblocks still count in sync (`unrecorded`: its
 * member may just be late) only with degraded=ok, as mdadm wants --run; a
 * parity array that is both dirty and degraded only with force=true
 * (start_dirty).
 */
static int
start_degraded(struct raid_array *a, const struct raid_config *cfg,
	       uint64_t missing, uint64_t unrecorded, uint64_t rebuilding)
{
	char list[160];
	int r;

	if (!missing) {
		return start_dirty(a, cfg, 0, rebuilding);
	}
	if (!a->layout->enough(&a->g, missing)) {
		raid_error(
			"%u of %u members missing (role%s %s): raid%d cannot run without them",
			(unsigned)__builtin_popcountll(missing), a->nr_members,
			missing & (missing - 1) ? "s" : "",
			roles_str(missing, list, sizeof(list)),
			a->layout->level);
		return -EINVAL;
	}
	if (unrecorded && !cfg->degraded_ok) {
		raid_error(
			"role%s %s: %s, and no member for it was given or could be opened; degraded=ok starts without it (mdadm --run)",
			unrecorded & (unrecorded - 1) ? "s" : "",
			roles_str(unrecorded, list, sizeof(list)),
			a->meta ? "the superblocks count a member in sync there"
				: "a member was named for it");
		return -EINVAL;
	}
	r = start_dirty(a, cfg, missing, rebuilding);
	if (r < 0) {
		return r;
	}
	for (unsigned i = 0; a->meta && i < a->nr_members; i++) {
		if ((unrecorded >> i) & 1) {
			/* Written with the next superblock update, as md. */
			meta_set_role(a->meta, i, MD_ROLE_SPARE);
		}
	}
	snprintf(a->reason, sizeof(a->reason), "started without role%s %s",
		 missing & (missing - 1) ? "s" : "",
		 roles_str(missing, list, sizeof(list)));
	raid_error("array degraded: %s", a->reason);
	array_event(a, "DegradedArray", NULL);
	return 0;
}

/*
 * The members' superblocks, if they carry them: the array they make, its
 * members in role order.  1: no superblocks, serve the settings (raw).
 */
static int
open_md(const struct raid_config *cfg, struct raid_member *m, unsigned *nr,
	unsigned cap, struct raid_array **out)
{
	struct meta_geometry geo;
	struct raid_config eff;
	struct raid_meta *meta = NULL;
	int r;

	if (cfg->metadata == RAID_META_NONE) {
		return 1;
	}
	r = meta_assemble(cfg, m, nr, cap, &geo, &meta);
	if (r == -ENOENT && cfg->metadata == RAID_META_AUTO) {
		return 1;
	}
	if (r == -ENOENT) {
		raid_error("metadata=md: no member carries an md superblock");
		return -EINVAL;
	}
	if (r < 0) {
		return r;
	}
	/* The settings the superblocks make; the rest as given. */
	eff = *cfg;
	eff.level = geo.level;
	eff.layout = geo.layout;
	eff.chunk_bytes = geo.chunk_bytes ? geo.chunk_bytes : cfg->chunk_bytes;
	eff.member_size = geo.member_bytes;
	eff.nr_members = *nr;
	*out = NULL;
	r = array_create(&eff, m, *nr, geo.data_offset, out);
	if (r == 0) {
		(*out)->meta = meta;
		r = start_degraded(*out, cfg, meta->missing, meta->unrecorded,
				   meta->rebuilding);
	}
	if (r == 0 && meta->resync_cp != MD_RESYNC_DONE) {
		/* RAID 1 and 10: array sectors, as md (RAID 5 reads one place)
		 */
		atomic_store(
			&(*out)->resync_next,
			MIN(meta->resync_cp, UINT64_MAX / RAID_SECTOR_BYTES) *
				RAID_SECTOR_BYTES);
	}
	if (r == 0 && !(*out)->layout->enough(&(*out)->g, array_lost(*out))) {
		raid_error(
			"a member being rebuilt holds data no other member has: the array cannot run");
		r = -EINVAL;
	}
	if (r < 0) {
		for (unsigned i = 0; i < meta->nr_spares; i++) {
			member_close(&m[*nr + i]); /* the spares found */
		}
		meta_free(meta);
		if (*out) {
			array_free(*out);
			*out = NULL;
		}
	}
	return r;
}

/* Raw mode: the roles whose member is missing (member=missing, or not
 * opened), and of those the ones that were named. */
static void
raw_missing(const struct raid_config *cfg, const struct raid_member *m,
	    unsigned nr, uint64_t *missing, uint64_t *named)
{
	*missing = *named = 0;
	for (unsigned i = 0; i < nr; i++) {
		if (!member_alive(&m[i])) {
			*missing |= 1ull << i;
			if (strcmp(cfg->members[i], RAID_MEMBER_MISSING_NAME)) {
				*named |= 1ull << i;
			}
		}
	}
}

int
array_assemble(const struct raid_config *cfg, struct raid_member *m,
	       unsigned *nr, unsigned cap, struct raid_array **out)
{
	int r = open_md(cfg, m, nr, cap, out);
	struct raid_config raw = *cfg;
	uint64_t missing, named;

	if (r != 1) {
		return r;
	}
	raw.nr_members = *nr; /* the members given, however given */
	r = raid_config_check_raw(&raw);
	if (r == 0) {
		r = array_create(&raw, m, *nr, NULL, out);
	}
	if (r == 0 && cfg->members) {
		raw_missing(cfg, m, *nr, &missing, &named);
		r = start_degraded(*out, cfg, missing, named, 0);
		if (r < 0) {
			array_free(*out);
			*out = NULL;
		}
	}
	return r;
}

/*
 * The operator's side, once the array is assembled: event=PROGRAM's runner
 * (ARRAY is the md name, else the UUID, else "nbdraid") and control=PATH's
 * socket, bound now so that a path we cannot have fails nbdkit's start.
 * Their threads start in raid_start().  An array that started degraded
 * reported DegradedArray before the runner existed: the runner is given
 * it now, as mdadm's monitor reports an array it finds degraded.
 */
static int
open_services(struct raid_array *a, const struct raid_config *cfg)
{
	struct raid_status *st = NULL;
	char name[64] = "nbdraid";
	int r = 0;

	if (cfg->event) {
		st = malloc(sizeof(*st));
		if (!st) {
			return -ENOMEM;
		}
		raid_status(a, st);
		if (st->has_meta && st->name[0]) {
			snprintf(name, sizeof(name), "%s", st->name);
		} else if (st->has_meta) {
			uuid_format(st->uuid, name);
		}
		r = events_new(cfg->event, name, &a->events);
		if (r == 0 && st->state == RAID_ARRAY_DEGRADED) {
			events_emit(a->events, "DegradedArray", NULL);
		}
		free(st);
	}
	if (r == 0 && cfg->control) {
		r = control_open(a, cfg->control, &a->control);
	}
	return r;
}

int
raid_open(const struct raid_config *cfg, struct raid_array **out)
{
	struct raid_config sel = *cfg;
	unsigned i = 0, nr = 0, cap = 0;
	struct raid_member *m = NULL;
	char **paths = NULL;
	int r;

	r = raid_config_check(cfg);
	if (r == 0) {
		r = meta_select(cfg, &paths, &nr);
	}
	if (r == 0) {
		cap = nr + RAID_MAX_MEMBERS; /* missing roles get a member */
		m = calloc(cap, sizeof(*m));
		r = m ? 0 : -ENOMEM;
	}
	for (; r == 0 && i < nr; i++) {
		if (strcmp(paths[i], RAID_MEMBER_MISSING_NAME) == 0) {
			r = member_missing(&m[i], i, NULL);
			continue;
		}
		r = member_open(&m[i], i, paths[i], cfg->direct, cfg->read_only,
				cfg->io);
		if (r == -ENOMEM) {
			i++; /* close this one too */
		} else if (r < 0) {
			/* Assembly decides whether the array can do without. */
			member_close(&m[i]);
			r = member_missing(&m[i], i, paths[i]);
		}
	}
	sel.members = paths;
	sel.nr_members = nr;
	if (r == 0) {
		r = array_assemble(&sel, m, &nr, cap, out);
		i = nr; /* assembly closed the members it left out */
	}
	if (r == 0) {
		/* fault= rules, by role: known only now (superblocks). */
		(*out)->owns_members = true;
		r = fault_attach((*out)->members, (*out)->nr_members,
				 cfg->faults, cfg->nr_faults);
		if (r == 0) {
			r = spares_start(*out, cfg);
		}
		if (r == 0) {
			r = array_cache_open(*out, cfg);
		}
		if (r < 0) {
			raid_close(*out);
			*out = NULL;
		}
	} else {
		while (i--) {
			member_close(&m[i]);
		}
		free(m);
	}
	meta_free_paths(paths, sel.nr_members);
	if (r == 0 && (r = open_services(*out, cfg)) < 0) {
		raid_close(*out);
		*out = NULL;
	}
	return r;
}

void
raid_close(struct raid_array *a)
{
	if (!a) {
		return;
	}
	control_close(a->control); /* no fail or remove from here on */
	/* Everything cached written back and flushed before the array is
	 * marked clean: the members alone hold it. */
	cache_close(a->cache);
	a->cache = NULL;
	sync_stop(a); /* a pass keeps its checkpoint */
	state_stop(a);
	state_close(a);
	if (a->owns_members) {
		spares_close(a);
		for (unsigned i = 0; i < a->nr_members; i++) {
			member_close(&a->members[i]);
		}
		free(a->members);
	}
	meta_free(a->meta);
	events_free(a->events); /* runs what is still queued */
	array_free(a);
}

void
raid_get_info(const struct raid_array *a, struct raid_info *info)
{
	uint64_t stripe = a->g.stripe_chunks << a->g.chunk_shift;

	memset(info, 0, sizeof(*info));
	info->size = a->size;
	info->level = a->layout->level;
	info->nr_members = a->nr_members;
	info->chunk_bytes = a->chunk_bytes;
	info->min_block = a->io_align;
	/* NBD wants a power of two from 512 to 32M for the preferred size. */
	info->preferred_block = is_power_of_2(stripe) ? stripe : a->chunk_bytes;
	info->preferred_block = MIN(info->preferred_block, NBD_MAX_BLOCK);
	info->preferred_block = MAX(info->preferred_block, NBD_MIN_PREFERRED);
	info->max_block = NBD_MAX_BLOCK;
	info->read_only = a->read_only;
	info->data_offset = __atomic_load_n(&a->g.data_offset[0],
					    __ATOMIC_RELAXED); /* spare.c */
	info->member_bytes = a->member_bytes;
	a->layout->layout_name(&a->g, info->layout, sizeof(info->layout));
}
