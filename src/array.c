/*
 * array.c: assemble an array and run its requests.
 *
 * DESIGN
 * raid_open() opens every member (member.c), refuses what md would refuse
 * (same file twice, a member smaller than a chunk, a geometry the level
 * rejects) and fixes the geometry: member chunks = smallest member / chunk.
 *
 * A request is cut at chunk boundaries; each piece is handed to the level's
 * read or write op (layout/), which appends member I/O to this thread's
 * batch; the batch then goes to the members' backend in one call, which
 * returns when all of it has completed.  So one client request is one
 * io_uring submit, whatever its size, and the level code never does I/O.
 *
 * The batch merges a member I/O into that member's last request when it
 * continues it on the member (same op and flags, next offset).  In memory
 * it may not: RAID 0 over n members puts a member's next chunk n chunks
 * further on in the client's buffer.  Then the request becomes vectored,
 * one segment per buffer (preadv/readv), as md's block layer makes one
 * request of several bio segments; a 1M read at a 4K chunk is one member
 * I/O per member, not 128.  A request stops growing at IO_MAX_IOV segments
 * or UINT32_MAX bytes, or where a segment would break O_DIRECT alignment
 * (each segment's buffer and length, not only the whole).  Segments are
 * kept as indices while the batch fills (its arrays may move) and laid out
 * as each request's iovec slice when it runs.
 *
 * O_DIRECT members need aligned buffers, offsets and lengths.  nbdkit's
 * buffers are not aligned, so such requests go through a per-thread
 * aligned bounce buffer (io/bounce.c); an unaligned write reads and patches
 * its edge blocks under rmw_lock (array.h).  Buffered members take the
 * client's buffer as it is.
 *
 * Trim and zero with FUA: fallocate has no FUA, so the touched members are
 * flushed after the fallocates complete (a second batch).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "io/bounce.h"
#include "log.h"
#include "member_overlap.h"
#include "tls.h"
#include "util.h"

static const char *const op_names[] = {
	[IO_READ] = "read", [IO_WRITE] = "write", [IO_FLUSH] = "flush",
	[IO_TRIM] = "trim", [IO_ZERO] = "zero",   [IO_PUNCH] = "punch hole",
};

/* ---- the per-thread batch ---------------------------------------------- */

void
batch_fini(struct raid_batch *b)
{
	free(b->reqs);
	free(b->segs);
	free(b->iov);
	b->reqs = NULL;
	b->segs = NULL;
	b->iov = NULL;
	b->nr = b->cap = b->nr_segs = b->segs_cap = 0;
}

static void
batch_free(void *p)
{
	batch_fini(p);
	free(p);
}

static struct tls_key batch_key = TLS_KEY_INIT(batch_free);
static _Thread_local struct raid_batch *tl_batch;

static struct raid_batch *
batch_get(void)
{
	struct raid_batch *b = tl_batch;

	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || tls_attach(&batch_key, b) < 0) {
			free(b);
			return NULL;
		}
		tl_batch = b;
	}
	batch_reset(b);
	return b;
}

void
batch_reset(struct raid_batch *b)
{
	b->nr = 0;
	b->nr_segs = 0;
	memset(b->last, 0xff, sizeof(b->last));
}

/*
 * How a member I/O joins the member's last request:
 *   MERGE_EXTEND   it continues it on the member and in memory (or has no
 *                  memory: flush, trim, zero): the request grows;
 *   MERGE_SEGMENT  it continues it on the member only: one more segment;
 *   MERGE_NONE     a request of its own.
 */
enum merge { MERGE_NONE, MERGE_EXTEND, MERGE_SEGMENT };

/*
 * O_DIRECT checks every segment's buffer and length, not only the whole
 * request's (buffered members align to 1: always true).
 */
static bool
seg_aligned(const struct raid_member *m, const void *buf, uint64_t len)
{
	return IS_ALIGNED((uintptr_t)buf, m->mem_align) &&
	       IS_ALIGNED(len, m->io_align);
}

static enum merge
merge_kind(const struct raid_batch *b, const struct raid_member *m, int op,
	   unsigned flags, const void *buf, uint64_t len, uint64_t off)
{
	int last = b->last[m->role];
	const struct io_req *r;
	const struct batch_seg *tail;

	if (last < 0) {
		return MERGE_NONE;
	}
	r = &b->reqs[last];
	if (r->op != op || r->flags != flags || r->off + r->len != off ||
	    r->len + len > UINT32_MAX) {
		return MERGE_NONE;
	}
	if (!buf) {
		return MERGE_EXTEND;
	}
	if (!r->nr_iov) {
		if ((const char *)r->buf + r->len == (const char *)buf) {
			return MERGE_EXTEND;
		}
		if (!seg_aligned(m, r->buf, r->len)) {
			return MERGE_NONE; /* it would become a segment too */
		}
		return seg_aligned(m, buf, len) ? MERGE_SEGMENT : MERGE_NONE;
	}
	tail = &b->segs[b->last_seg[m->role]];
	if ((const char *)tail->buf + tail->len == (const char *)buf) {
		/* The last segment grows: it must stay aligned. */
		return IS_ALIGNED(len, m->io_align) ? MERGE_EXTEND : MERGE_NONE;
	}
	if (r->nr_iov == IO_MAX_IOV || !seg_aligned(m, buf, len)) {
		return MERGE_NONE;
	}
	return MERGE_SEGMENT;
}

bool
batch_merges(const struct raid_batch *b, const struct raid_member *m,
	     int op, unsigned flags, const void *buf, uint64_t len,
	     uint64_t off)
{
	return merge_kind(b, m, op, flags, buf, len, off) != MERGE_NONE;
}

/* Room for two more segments (and as many iovecs, for batch_run). */
static int
batch_grow_segs(struct raid_batch *b)
{
	unsigned cap = b->segs_cap ? b->segs_cap * 2 : 64;
	struct batch_seg *s;
	struct iovec *v;

	if (b->nr_segs + 2 <= b->segs_cap) {
		return 0;
	}
	s = realloc(b->segs, cap * sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	b->segs = s;
	v = realloc(b->iov, cap * sizeof(*v));
	if (!v) {
		return -ENOMEM;
	}
	b->iov = v;
	b->segs_cap = cap;
	return 0;
}

/* Add buf as a segment of member `role`'s last request, vectoring it. */
static int
batch_add_seg(struct raid_batch *b, unsigned role, void *buf, uint64_t len)
{
	unsigned ri = b->last[role];
	struct io_req *r = &b->reqs[ri];

	if (batch_grow_segs(b) < 0) {
		return -ENOMEM;
	}
	if (!r->nr_iov) {
		/* Its one buffer becomes its first segment. */
		b->segs[b->nr_segs++] =
			(struct batch_seg){ r->buf, r->len, ri };
		r->buf = NULL;
		r->nr_iov = 1;
	}
	b->last_seg[role] = b->nr_segs;
	b->segs[b->nr_segs++] = (struct batch_seg){ buf, len, ri };
	r->nr_iov++;
	r->len += len;
	return 0;
}

int
batch_add(struct raid_batch *b, struct raid_member *m, int op,
	  unsigned flags, void *buf, uint64_t len, uint64_t off)
{
	enum merge how = merge_kind(b, m, op, flags, buf, len, off);
	struct io_req *r;

	if (how == MERGE_SEGMENT) {
		return batch_add_seg(b, m->role, buf, len);
	}
	if (how == MERGE_EXTEND) {
		r = &b->reqs[b->last[m->role]];
		r->len += len;
		if (r->nr_iov) {
			b->segs[b->last_seg[m->role]].len += len;
		}
		return 0;
	}
	if (b->nr == b->cap) {
		unsigned cap = b->cap ? b->cap * 2 : 64;
		struct io_req *n = realloc(b->reqs, cap * sizeof(*n));

		if (!n) {
			return -ENOMEM;
		}
		b->reqs = n;
		b->cap = cap;
	}
	r = &b->reqs[b->nr];
	*r = (struct io_req){ .m = m, .op = op, .flags = flags, .buf = buf,
			      .len = len, .off = off };
	atomic_fetch_add_explicit(&m->inflight, 1, memory_order_relaxed);
	b->last[m->role] = b->nr++;
	return 0;
}

/*
 * Give each vectored request its slice of b->iov, its segments in the
 * order queued (which is member order: each continues the last).  Only
 * now are pointers taken: reqs, segs and iov may move while filling.
 */
static void
batch_build_iov(struct raid_batch *b)
{
	unsigned k = 0;

	if (!b->nr_segs) {
		return;
	}
	for (unsigned i = 0; i < b->nr; i++) {
		struct io_req *r = &b->reqs[i];

		if (r->nr_iov) {
			r->iov = b->iov + k;
			k += r->nr_iov;
			r->nr_iov = 0; /* counted again as filled below */
		}
	}
	for (unsigned i = 0; i < b->nr_segs; i++) {
		const struct batch_seg *sg = &b->segs[i];
		struct io_req *r = &b->reqs[sg->req];

		r->iov[r->nr_iov++] = (struct iovec){ sg->buf, sg->len };
	}
	b->nr_segs = 0; /* laid out: a second run must not do it again */
}

static void
batch_report(const struct raid_batch *b)
{
	bool said[RAID_MAX_MEMBERS] = { false };

	for (unsigned i = 0; i < b->nr; i++) {
		const struct io_req *r = &b->reqs[i];

		if (r->res >= 0 || said[r->m->role]) {
			continue;
		}
		said[r->m->role] = true;
		raid_error("member %u (%s): %s at %llu+%llu: %s", r->m->role,
			   r->m->path, op_names[r->op],
			   (unsigned long long)r->off,
			   (unsigned long long)r->len, strerror(-r->res));
	}
}

/* Run the batch: members sharing a backend go down in one call. */
int
batch_run(struct raid_batch *b)
{
	const struct io_backend *be;
	unsigned i = 0, j;
	int r, first = 0;

	batch_build_iov(b);
	while (i < b->nr) {
		be = b->reqs[i].m->be;
		for (j = i + 1; j < b->nr && b->reqs[j].m->be == be; j++) {
		}
		r = be->submit_wait(&b->reqs[i], j - i);
		if (r < 0 && first == 0) {
			first = r;
		}
		i = j;
	}
	for (i = 0; i < b->nr; i++) {
		atomic_fetch_sub_explicit(&b->reqs[i].m->inflight, 1,
					  memory_order_relaxed);
	}
	/* fallocate modes a member lacks are the caller's to handle. */
	if (first < 0 && first != -EOPNOTSUPP) {
		batch_report(b);
	}
	return first;
}

/* ---- the data path ----------------------------------------------------- */

/*
 * Cut [off, off+count) at chunk (parity levels: stripe) boundaries into the
 * level's ops; run the batch they fill.
 */
static int
array_rw(struct raid_array *a, int op, uint32_t flags, void *buf,
	 uint64_t count, uint64_t off)
{
	struct raid_batch *b = batch_get();
	uint64_t mask = a->chunk - 1;
	int r;

	if (!b) {
		return -ENOMEM;
	}
	while (count) {
		struct raid_piece p = {
			.chunk_no = off >> a->g.chunk_shift,
			.in_chunk = off & mask,
			.len = MIN(count, a->piece_bytes - off % a->piece_bytes),
			.buf = buf,
			.op = op,
			.flags = flags,
		};

		r = op == IO_READ ? a->layout->read(a, b, &p)
				  : a->layout->write(a, b, &p);
		if (r < 0) {
			return r;
		}
		off += p.len;
		count -= p.len;
		buf = buf ? (char *)buf + p.len : NULL;
	}
	return batch_run(b);
}

static int
check_range(const struct raid_array *a, uint64_t count, uint64_t off)
{
	if (off > a->size || count > a->size - off) {
		raid_error("request %llu+%llu is beyond the end of the array (%llu)",
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
	r = array_rw(a, IO_READ, 0, bb, hi - lo, lo);
	if (r == 0) {
		memcpy(buf, bb + (off - lo), count);
	}
	bounce_put(BOUNCE_IO);
	return r;
}

int
raid_pread(struct raid_array *a, void *buf, uint32_t count, uint64_t offset,
	   uint32_t flags)
{
	int r = check_range(a, count, offset);

	(void)flags;
	if (r < 0) {
		return r;
	}
	if (a->io_align == 1 || aligned_io(a, buf, count, offset)) {
		return array_rw(a, IO_READ, 0, buf, count, offset);
	}
	return read_bounced(a, buf, count, offset);
}

/* Read the partial edge blocks of [off, off+count), patch, write it all. */
static int
write_rmw(struct raid_array *a, const void *buf, uint64_t count,
	  uint64_t off, uint32_t flags)
{
	uint32_t al = a->io_align;
	uint64_t lo = ROUND_DOWN(off, al), hi = ROUND_UP(off + count, al);
	char *bb = bounce_get(BOUNCE_IO, hi - lo, a->mem_align);
	int r = 0;

	if (!bb) {
		return -ENOMEM;
	}
	if (off != lo) {
		r = array_rw(a, IO_READ, 0, bb, al, lo);
	}
	if (r == 0 && off + count != hi && (hi - al != lo || off == lo)) {
		r = array_rw(a, IO_READ, 0, bb + (hi - al - lo), al, hi - al);
	}
	if (r == 0) {
		memcpy(bb + (off - lo), buf, count);
		r = array_rw(a, IO_WRITE, flags, bb, hi - lo, lo);
	}
	bounce_put(BOUNCE_IO);
	return r;
}

/* Writes to O_DIRECT members: aligned ones share rmw_lock, others own it. */
static int
write_direct(struct raid_array *a, const void *buf, uint64_t count,
	     uint64_t off, uint32_t flags)
{
	char *bb;
	int r;

	if (!IS_ALIGNED(off | count, a->io_align)) {
		pthread_rwlock_wrlock(&a->rmw_lock);
		r = write_rmw(a, buf, count, off, flags);
		pthread_rwlock_unlock(&a->rmw_lock);
		return r;
	}
	pthread_rwlock_rdlock(&a->rmw_lock);
	if (IS_ALIGNED((uintptr_t)buf, a->mem_align)) {
		r = array_rw(a, IO_WRITE, flags, (void *)buf, count, off);
	} else if ((bb = bounce_get(BOUNCE_IO, count, a->mem_align)) != NULL) {
		memcpy(bb, buf, count);
		r = array_rw(a, IO_WRITE, flags, bb, count, off);
		bounce_put(BOUNCE_IO);
	} else {
		r = -ENOMEM;
	}
	pthread_rwlock_unlock(&a->rmw_lock);
	return r;
}

int
raid_pwrite(struct raid_array *a, const void *buf, uint32_t count,
	    uint64_t offset, uint32_t flags)
{
	int r = check_range(a, count, offset);

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	if (a->io_align == 1) {
		return array_rw(a, IO_WRITE, flags, (void *)buf, count, offset);
	}
	return write_direct(a, buf, count, offset, flags);
}

/* fdatasync every member (writable ones: the others hold nothing new). */
static int
flush_members(struct raid_array *a, const bool *which)
{
	struct raid_batch *b = batch_get();
	int r;

	if (!b) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < a->nr_members; i++) {
		if (a->members[i].read_only || (which && !which[i])) {
			continue;
		}
		r = batch_add(b, &a->members[i], IO_FLUSH, 0, NULL, 0, 0);
		if (r < 0) {
			return r;
		}
	}
	return batch_run(b);
}

int
raid_flush(struct raid_array *a)
{
	return flush_members(a, NULL);
}

/*
 * Trim and zero: fallocate-class ops on every copy, then FUA as a flush.
 * On O_DIRECT arrays they change member blocks like a write, so they hold
 * rmw_lock for reading: an unaligned write's read-patch-write of the same
 * block must not straddle them (it would write the old bytes back).
 */
static int
array_discard(struct raid_array *a, int op, uint32_t flags, uint64_t count,
	      uint64_t off)
{
	bool touched[RAID_MAX_MEMBERS] = { false };
	struct raid_batch *b;
	int r;

	if (a->io_align > 1) {
		pthread_rwlock_rdlock(&a->rmw_lock);
	}
	r = array_rw(a, op, 0, NULL, count, off);
	if (a->io_align > 1) {
		pthread_rwlock_unlock(&a->rmw_lock);
	}
	if (r < 0 || !(flags & RAID_FUA)) {
		return r;
	}
	b = tl_batch; /* still holds the requests just run */
	for (unsigned i = 0; i < b->nr; i++) {
		touched[b->reqs[i].m->role] = true;
	}
	return flush_members(a, touched);
}

int
raid_trim(struct raid_array *a, uint32_t count, uint64_t offset,
	  uint32_t flags)
{
	uint64_t lo = ROUND_UP(offset, a->io_align);
	uint64_t hi = ROUND_DOWN(offset + count, a->io_align);
	int r = check_range(a, count, offset);

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	/* Trim is advisory: drop unaligned edges, ignore what members lack. */
	if (hi <= lo) {
		return (flags & RAID_FUA) ? raid_flush(a) : 0;
	}
	r = array_discard(a, IO_TRIM, flags, hi - lo, lo);
	return r == -EOPNOTSUPP ? 0 : r;
}

/* Zero the unaligned edges of a range on O_DIRECT members by writing. */
static int
zero_edges(struct raid_array *a, uint64_t count, uint64_t off,
	   uint32_t flags, uint64_t *lo, uint64_t *hi)
{
	static const char zeros[65536];
	int r = 0;

	*lo = MIN(ROUND_UP(off, a->io_align), off + count);
	*hi = MAX(ROUND_DOWN(off + count, a->io_align), *lo);
	if (*lo > off) {
		r = write_direct(a, zeros, *lo - off, off, flags);
	}
	if (r == 0 && off + count > *hi) {
		r = write_direct(a, zeros, off + count - *hi, *hi, flags);
	}
	return r;
}

int
raid_zero(struct raid_array *a, uint32_t count, uint64_t offset,
	  uint32_t flags)
{
	uint64_t lo = offset, hi = offset + count;
	int r = check_range(a, count, offset);
	/*
	 * A hole is zero and never costs a write: use it when the client
	 * allows, and for fast zero on block devices, where ZERO_RANGE may
	 * fall back to writing zeros but PUNCH_HOLE may not.
	 */
	int op = (flags & RAID_MAY_TRIM) ||
			 ((flags & RAID_FAST_ZERO) && a->has_blk)
		 ? IO_PUNCH
		 : IO_ZERO;

	if (r < 0) {
		return r;
	}
	if (a->read_only) {
		return -EROFS;
	}
	if (a->io_align > 1) {
		if (flags & RAID_FAST_ZERO &&
		    !IS_ALIGNED(offset | count, a->io_align)) {
			return -ENOTSUP;
		}
		r = zero_edges(a, count, offset, flags, &lo, &hi);
		if (r < 0 || hi == lo) {
			return r;
		}
	}
	r = array_discard(a, op, flags, hi - lo, lo);
	if (r == -EOPNOTSUPP && op == IO_PUNCH && !(flags & RAID_FAST_ZERO)) {
		r = array_discard(a, IO_ZERO, flags, hi - lo, lo);
	}
	return r == -EOPNOTSUPP ? -ENOTSUP : r;
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
	uint32_t in = off & (a->chunk - 1);
	unsigned n = a->layout->map(&a->g, chunk_no, locs);

	*hole = true;
	*run = len;
	for (unsigned i = 0; i < n; i++) {
		bool h;
		uint64_t r;

		member_extent(&a->members[locs[i].member],
			      array_member_offset(a, &locs[i], in), *run, &h,
			      &r);
		*hole &= h;
		*run = MIN(*run, r);
	}
}

int
raid_extents(struct raid_array *a, uint32_t count, uint64_t offset,
	     uint32_t flags, raid_extent_fn add, void *ctx)
{
	uint64_t end = offset + count;
	int r = check_range(a, count, offset);

	for (unsigned i = 0; r == 0 && offset < end && i < EXTENT_MAX_PIECES;
	     i++) {
		uint64_t len = MIN(end - offset,
				   a->chunk - (offset & (a->chunk - 1)));
		uint64_t run;
		bool hole;

		piece_extent(a, offset, len, &hole, &run);
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
		places[i].offset = array_member_offset(
			a, &locs[i], offset & (a->chunk - 1));
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
	uint64_t avail = UINT64_MAX, unit;

	for (unsigned i = 0; i < a->nr_members; i++) {
		const struct raid_member *m = &a->members[i];
		uint64_t need = a->data_offset + MAX(member_size, a->chunk);
		char what[96];
		int n = 0;

		if (m->size >= need) {
			avail = MIN(avail, m->size - a->data_offset);
			continue;
		}
		if (a->data_offset || member_size) {
			n = snprintf(what, sizeof(what), "data-offset %llu plus ",
				     (unsigned long long)a->data_offset);
		}
		if (member_size) {
			snprintf(what + n, sizeof(what) - n, "member-size %llu",
				 (unsigned long long)member_size);
		} else {
			snprintf(what + n, sizeof(what) - n, "one chunk (%llu)",
				 (unsigned long long)a->chunk);
		}
		raid_error("member %u (%s): size %llu is smaller than %s", i,
			   m->path, (unsigned long long)m->size, what);
		return -EINVAL;
	}
	if (member_size) {
		avail = member_size;
	}
	if (!a->layout->size_unit) {
		unit = a->chunk;
	} else {
		unit = member_size ? 512 : MIN(a->layout->size_unit, a->chunk);
		unit = MAX(unit, a->io_align);
	}
	a->member_bytes = avail / unit * unit;
	if (a->member_bytes < a->chunk) {
		raid_error("member-size %llu is smaller than one chunk (%llu)",
			   (unsigned long long)avail,
			   (unsigned long long)a->chunk);
		return -EINVAL;
	}
	a->g.member_chunks = DIV_ROUND_UP(a->member_bytes, a->chunk);
	for (unsigned i = 0; i < a->nr_members; i++) {
		uint64_t used = a->data_offset + a->member_bytes;

		if (a->members[i].size > used) {
			raid_debug("member %u (%s): %llu bytes past %llu unused",
				   i, a->members[i].path,
				   (unsigned long long)(a->members[i].size - used),
				   (unsigned long long)used);
		}
	}
	return 0;
}

static int
array_alignment(struct raid_array *a)
{
	a->mem_align = a->io_align = 1;
	for (unsigned i = 0; i < a->nr_members; i++) {
		a->mem_align = MAX(a->mem_align, a->members[i].mem_align);
		a->io_align = MAX(a->io_align, a->members[i].io_align);
		a->read_only |= a->members[i].read_only;
		a->has_blk |= a->members[i].is_blk;
	}
	if (!is_power_of_2(a->io_align) || a->io_align > a->chunk) {
		raid_error("O_DIRECT alignment %u does not divide the chunk (%llu)",
			   a->io_align, (unsigned long long)a->chunk);
		return -EINVAL;
	}
	if (!IS_ALIGNED(a->data_offset, a->io_align)) {
		raid_error("data-offset %llu is not a multiple of the members' O_DIRECT alignment %u",
			   (unsigned long long)a->data_offset, a->io_align);
		return -EINVAL;
	}
	return 0;
}

int
array_create(const struct raid_config *cfg, struct raid_member *members,
	     unsigned nr, struct raid_array **out)
{
	struct raid_array *a;
	char err[256];
	int r;

	a = calloc(1, sizeof(*a));
	if (!a) {
		return -ENOMEM;
	}
	a->layout = layout_find(cfg->level);
	a->members = members;
	a->nr_members = nr;
	a->chunk = cfg->chunk;
	a->data_offset = cfg->data_offset;
	a->g.nr_members = nr;
	a->g.chunk_shift = log2_u64(cfg->chunk);
	pthread_rwlock_init(&a->rmw_lock, NULL);
	stripe_locks_init(&a->stripe_locks);
	for (unsigned i = 0; i < nr; i++) {
		atomic_init(&members[i].next_read, UINT64_MAX);
	}
	r = a->layout ? 0 : -EINVAL;
	if (r == 0) {
		r = member_overlap_check(members, nr);
	}
	if (r == 0) {
		r = array_alignment(a);
	}
	if (r == 0) {
		r = member_area(a, cfg->member_size);
	}
	if (r == 0 && (r = a->layout->setup(&a->g, cfg->layout, err,
					    sizeof(err))) < 0) {
		raid_error("%s", err);
	}
	if (r < 0) {
		pthread_rwlock_destroy(&a->rmw_lock);
		stripe_locks_destroy(&a->stripe_locks);
		free(a);
		return r;
	}
	a->size = a->layout->size_unit ? a->member_bytes
				       : a->g.array_chunks << a->g.chunk_shift;
	a->piece_bytes = a->layout->stripe_pieces
				 ? a->g.stripe_chunks << a->g.chunk_shift
				 : a->chunk;
	a->balance = a->g.copies > 1;
	*out = a;
	return 0;
}

int
raid_open(const struct raid_config *cfg, struct raid_array **out)
{
	struct raid_member *m;
	unsigned i = 0;
	int r;

	r = raid_config_check(cfg);
	if (r < 0) {
		return r;
	}
	m = calloc(cfg->nr_members, sizeof(*m));
	if (!m) {
		return -ENOMEM;
	}
	for (; i < cfg->nr_members; i++) {
		r = member_open(&m[i], i, cfg->members[i], cfg->direct,
				cfg->read_only, cfg->io);
		if (r < 0) {
			i++; /* close this one too */
			goto err;
		}
	}
	r = array_create(cfg, m, cfg->nr_members, out);
	if (r == 0) {
		(*out)->owns_members = true;
		return 0;
	}
err:
	while (i--) {
		member_close(&m[i]);
	}
	free(m);
	return r;
}

void
raid_close(struct raid_array *a)
{
	if (!a) {
		return;
	}
	if (a->owns_members) {
		for (unsigned i = 0; i < a->nr_members; i++) {
			member_close(&a->members[i]);
		}
		free(a->members);
	}
	pthread_rwlock_destroy(&a->rmw_lock);
	stripe_locks_destroy(&a->stripe_locks);
	free(a);
}

void
raid_get_info(const struct raid_array *a, struct raid_info *info)
{
	uint64_t stripe = a->g.stripe_chunks << a->g.chunk_shift;

	memset(info, 0, sizeof(*info));
	info->size = a->size;
	info->level = a->layout->level;
	info->nr_members = a->nr_members;
	info->chunk = a->chunk;
	info->min_block = a->io_align;
	/* NBD wants a power of two from 512 to 32M for the preferred size. */
	info->preferred_block = is_power_of_2(stripe) ? stripe : a->chunk;
	info->preferred_block = MIN(info->preferred_block, 32u << 20);
	info->preferred_block = MAX(info->preferred_block, 512u);
	info->max_block = 32u << 20;
	info->read_only = a->read_only;
	info->data_offset = a->data_offset;
	info->member_bytes = a->member_bytes;
	a->layout->layout_name(&a->g, info->layout, sizeof(info->layout));
}
