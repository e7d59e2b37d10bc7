/*
 * batch.c: the member I/O of one client request (see batch.h).
 *
 * DESIGN
 * Requests are queued in reqs[], each member's last unrun one remembered
 * in last[role] so that the next I/O continuing it on the member merges:
 *
 *   MERGE_EXTEND   it continues it on the member and in memory (or has no
 *                  memory: flush, trim, zero): the request grows;
 *   MERGE_SEGMENT  it continues it on the member only: one more segment
 *                  of a vectored request (readv/writev);
 *   MERGE_NONE     a request of its own.
 *
 * A request stops growing at IO_MAX_IOV segments or UINT32_MAX bytes, and
 * on O_DIRECT members before a segment whose buffer or length is not
 * aligned for the member (the kernel checks every segment).  Segments are
 * kept as request indices while the batch fills (its arrays may move) and
 * laid out as each request's iovec slice when it runs.
 *
 * Invariants: reqs[0, nr_done) have run and hold their results; reqs
 * [nr_done, nr) are queued and each holds one count in its member's
 * inflight, given back when it completes or is dropped (batch_reset); no
 * request merges into one that has run (last[] forgets them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "log.h"
#include "member.h"
#include "tls.h"
#include "util.h"

static const char *const op_names[] = {
	[IO_READ] = "read", [IO_WRITE] = "write", [IO_FLUSH] = "flush",
	[IO_TRIM] = "trim", [IO_ZERO] = "zero",	  [IO_PUNCH] = "punch hole",
};

#define BATCH_FIRST_CAP 64 /* requests and segments of a new batch */

_Alignas(IO_BUF_ALIGN) const unsigned char io_zeros[IO_ZEROS_BYTES];

/* ---- storage ----------------------------------------------------------- */

static void
forget_last(struct batch *b)
{
	memset(b->last, 0xff, sizeof(b->last));
}

void
batch_init(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	forget_last(b);
}

void
batch_fini(struct batch *b)
{
	batch_reset(b);
	free(b->reqs);
	free(b->segs);
	free(b->iov);
	batch_init(b);
}

static void
batch_free(void *p)
{
	batch_fini(p);
	free(p);
}

static struct tls_key batch_key = TLS_KEY_INIT(batch_free);
static _Thread_local struct batch *tl_batch;

struct batch *
batch_begin(void)
{
	struct batch *b = tl_batch;

	if (!b) {
		b = malloc(sizeof(*b));
		if (!b || tls_attach(&batch_key, b) < 0) {
			free(b);
			return NULL;
		}
		batch_init(b);
		tl_batch = b;
	}
	batch_reset(b);
	b->changed = b->failed = b->refused = 0;
	b->failed_read = b->failed_write = 0;
	b->pinned = 0;
	return b;
}

void
batch_pin(struct batch *b, const struct raid_member *m, unsigned n)
{
	b->pinned = 0;
	for (unsigned i = 0; i < n && i < RAID_MAX_MEMBERS; i++) {
		/* Before the request looks at any member's state. */
		b->pin_gen[i] = atomic_load(&m[i].gen);
		b->pinned |= 1ull << i;
	}
}

/* Give back the in-flight counts of reqs [from, to). */
static void
uncount(struct batch *b, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		atomic_fetch_sub_explicit(&b->reqs[i].m->inflight, 1,
					  memory_order_relaxed);
	}
}

void
batch_reset(struct batch *b)
{
	uncount(b, b->nr_done, b->nr);
	b->nr = b->nr_done = b->last_run = 0;
	b->nr_segs = 0;
	forget_last(b);
}

/* ---- queueing ---------------------------------------------------------- */

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

enum merge { MERGE_NONE, MERGE_EXTEND, MERGE_SEGMENT };

static enum merge
merge_kind(const struct batch *b, const struct raid_member *m, int op,
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

/* Make *arr hold cap elements of size each; 0 or -ENOMEM (*arr kept). */
static int
resize(void *arr, unsigned cap, size_t size)
{
	void *n = realloc(*(void **)arr, (size_t)cap * size);

	if (!n) {
		return -ENOMEM;
	}
	*(void **)arr = n;
	return 0;
}

static unsigned
next_cap(unsigned cap)
{
	return cap ? cap * 2 : BATCH_FIRST_CAP;
}

/* Room for two more segments (and as many iovecs, for batch_run). */
static int
grow_segs(struct batch *b)
{
	unsigned cap = next_cap(b->segs_cap);

	if (b->nr_segs + 2 <= b->segs_cap) {
		return 0;
	}
	if (resize(&b->segs, cap, sizeof(*b->segs)) < 0 ||
	    resize(&b->iov, cap, sizeof(*b->iov)) < 0) {
		return -ENOMEM;
	}
	b->segs_cap = cap;
	return 0;
}

/* Add buf as a segment of member `role`'s last request, vectoring it. */
static int
add_seg(struct batch *b, unsigned role, void *buf, uint64_t len)
{
	unsigned ri = b->last[role];
	struct io_req *r = &b->reqs[ri];

	if (grow_segs(b) < 0) {
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

static int
grow_reqs(struct batch *b)
{
	unsigned cap = next_cap(b->cap);

	if (b->nr < b->cap) {
		return 0;
	}
	if (resize(&b->reqs, cap, sizeof(*b->reqs)) < 0) {
		return -ENOMEM;
	}
	b->cap = cap;
	return 0;
}

static int
queue(struct batch *b, struct raid_member *m, int op, unsigned flags, void *buf,
      uint64_t len, uint64_t off)
{
	enum merge how = merge_kind(b, m, op, flags, buf, len, off);
	struct io_req *r;

	if (op != IO_READ && op != IO_FLUSH) {
		b->changed |= 1ull << m->role;
	}
	if (how == MERGE_SEGMENT) {
		return add_seg(b, m->role, buf, len);
	}
	if (how == MERGE_EXTEND) {
		r = &b->reqs[b->last[m->role]];
		r->len += len;
		if (r->nr_iov) {
			b->segs[b->last_seg[m->role]].len += len;
		}
		return 0;
	}
	if (grow_reqs(b) < 0) {
		return -ENOMEM;
	}
	r = &b->reqs[b->nr];
	*r = (struct io_req){ .m = m,
			      .op = op,
			      .flags = flags,
			      .buf = buf,
			      .len = len,
			      .off = off,
			      .gen = atomic_load(&m->gen) };
	/* Sequentially consistent: raid_remove_member's drain pairs with
	 * this count and skip_dead's check of the state after it. */
	atomic_fetch_add(&m->inflight, 1);
	b->last[m->role] = b->nr++;
	return 0;
}

int
batch_read(struct batch *b, struct raid_member *m, void *buf, uint64_t len,
	   uint64_t off)
{
	return queue(b, m, IO_READ, 0, buf, len, off);
}

int
batch_write(struct batch *b, struct raid_member *m, const void *buf,
	    uint64_t len, uint64_t off, unsigned io_flags)
{
	return queue(b, m, IO_WRITE, io_flags, (void *)buf, len, off);
}

int
batch_discard(struct batch *b, struct raid_member *m, enum io_op op,
	      uint64_t len, uint64_t off)
{
	return queue(b, m, op, 0, NULL, len, off);
}

int
batch_flush(struct batch *b, struct raid_member *m)
{
	return queue(b, m, IO_FLUSH, 0, NULL, 0, 0);
}

uint64_t
batch_read_end(const struct batch *b, const struct raid_member *m)
{
	int last = b->last[m->role];
	const struct io_req *r = last < 0 ? NULL : &b->reqs[last];

	return r && r->op == IO_READ ? r->off + r->len : UINT64_MAX;
}

/* ---- running ----------------------------------------------------------- */

/*
 * Give each unrun vectored request its slice of b->iov, its segments in
 * the order queued (which is member order: each continues the last).  Only
 * now are pointers taken: reqs, segs and iov may move while filling.
 */
static void
build_iov(struct batch *b)
{
	unsigned k = 0;

	if (!b->nr_segs) {
		return;
	}
	for (unsigned i = b->nr_done; i < b->nr; i++) {
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
	b->nr_segs = 0;
}

/* Record reqs [from, nr) in the request's results; log each failure once. */
static void
note_results(struct batch *b, unsigned from)
{
	for (unsigned i = from; i < b->nr; i++) {
		const struct io_req *r = &b->reqs[i];
		unsigned role = r->m->role;
		uint64_t bit = 1ull << role;

		if (r->res == -EOPNOTSUPP) {
			b->refused |= bit;
			continue;
		}
		if (r->res >= 0) {
			continue;
		}
		if (r->op == IO_READ) {
			b->failed_read |= bit;
		} else {
			b->failed_write |= bit;
		}
		if (b->failed & bit) {
			continue;
		}
		b->failed |= bit;
		b->error[role] = r->res;
		b->gen[role] = r->gen;
		if (r->res == -ENODEV) {
			continue; /* not issued: the member failed before */
		}
		raid_error("member %u (%s): %s at %llu+%llu: %s", role,
			   r->m->path, op_names[r->op],
			   (unsigned long long)r->off,
			   (unsigned long long)r->len, strerror(-r->res));
	}
}

/* The first failure of reqs [from, nr), a refusal only if nothing worse. */
static int
first_error(const struct batch *b, unsigned from)
{
	int refused = 0;

	for (unsigned i = from; i < b->nr; i++) {
		int res = b->reqs[i].res;

		if (res == -EOPNOTSUPP) {
			refused = res;
		} else if (res < 0) {
			return res;
		}
	}
	return refused;
}

/*
 * Requests to members no longer alive fail here, never issued; so do those
 * of a pinned request to a slot a spare took after it began (batch_pin):
 * the state is read first, and a spare's gen moves on before its state
 * becomes rebuilding, so seeing the spare alive means seeing its gen.
 */
static void
skip_dead(struct batch *b, unsigned from)
{
	for (unsigned i = from; i < b->nr; i++) {
		struct io_req *r = &b->reqs[i];
		unsigned role = r->m->role;
		int s = atomic_load(
			&r->m->state); /* after the count: queue() */

		r->res = s == RAID_MEMBER_IN_SYNC || s == RAID_MEMBER_REBUILDING
				 ? 1
				 : -ENODEV;
		if (r->res == 1 && role < RAID_MAX_MEMBERS &&
		    ((b->pinned >> role) & 1) &&
		    atomic_load(&r->m->gen) != b->pin_gen[role]) {
			r->res = -ENODEV;
			r->gen = b->pin_gen[role]; /* the member it meant */
		}
	}
}

/* Issue reqs [from, to) that are still to run (res 1), by backend. */
static void
submit(struct batch *b, unsigned from, unsigned to)
{
	unsigned i = from, j;

	while (i < to) {
		const struct io_backend *be = b->reqs[i].m->be;

		if (b->reqs[i].res != 1) {
			i++;
			continue;
		}
		/* Members sharing a backend go down in one call. */
		for (j = i + 1;
		     j < to && b->reqs[j].res == 1 && b->reqs[j].m->be == be;
		     j++) {
		}
		be->submit_wait(&b->reqs[i], j - i);
		i = j;
	}
}

/*
 * One more try for each failure that may be passing (not a refusal, not
 * a member gone): the rest of it, from where it stopped.
 */
static void
retry_failed(struct batch *b, unsigned from)
{
	bool any = false;

	for (unsigned i = from; i < b->nr; i++) {
		struct io_req *r = &b->reqs[i];

		if (r->res < 0 && r->res != -EOPNOTSUPP && r->res != -ENODEV &&
		    member_alive(r->m)) {
			r->res = 1;
			any = true;
		}
	}
	if (any) {
		submit(b, from, b->nr);
	}
}

/* Count each member I/O that failed twice in its member's errors. */
static void
count_errors(const struct batch *b, unsigned from)
{
	for (unsigned i = from; i < b->nr; i++) {
		const struct io_req *r = &b->reqs[i];

		if (r->res >= 0 || r->res == -EOPNOTSUPP || r->res == -ENODEV) {
			continue;
		}
		atomic_fetch_add_explicit(r->op == IO_READ
						  ? &r->m->read_errors
						  : &r->m->write_errors,
					  1, memory_order_relaxed);
	}
}

int
batch_run(struct batch *b)
{
	unsigned from = b->nr_done;

	build_iov(b);
	skip_dead(b, from);
	submit(b, from, b->nr);
	retry_failed(b, from);
	count_errors(b, from);
	uncount(b, from, b->nr);
	b->nr_done = b->nr;
	b->last_run = from;
	forget_last(b);
	note_results(b, from);
	return first_error(b, from);
}

/* ---- refused discards -------------------------------------------------- */

/* Writes of zeros over [off, off+len) of m, from the shared zero buffer. */
static int
queue_zero_writes(struct batch *b, struct raid_member *m, uint64_t len,
		  uint64_t off)
{
	int r = 0;

	while (len && r == 0) {
		uint64_t n = MIN(len, IO_ZEROS_BYTES);

		r = batch_write(b, m, io_zeros, n, off, 0);
		off += n;
		len -= n;
	}
	return r;
}

int
batch_requeue_refused_as_zero(struct batch *b)
{
	unsigned end = b->nr_done, queued = 0;
	int r = 0;

	for (unsigned i = b->last_run; i < end && r == 0; i++) {
		struct io_req q = b->reqs[i];

		if (q.res != -EOPNOTSUPP) {
			continue;
		}
		b->reqs[i].res = 0; /* handled: not seen again */
		if (q.op == IO_TRIM || q.op == IO_PUNCH) {
			r = batch_discard(b, q.m, IO_ZERO, q.len, q.off);
		} else {
			r = queue_zero_writes(b, q.m, q.len, q.off);
		}
		queued++;
	}
	return r < 0 ? r : (int)queued;
}

/* Did the last run's every request refuse?  Then nothing changed. */
static bool
all_refused(const struct batch *b)
{
	for (unsigned i = b->last_run; i < b->nr_done; i++) {
		if (b->reqs[i].res != -EOPNOTSUPP) {
			return false;
		}
	}
	return true;
}

int
batch_run_discard(struct batch *b)
{
	int r = batch_run(b);

	if (r != -EOPNOTSUPP || all_refused(b)) {
		return r;
	}
	/* Trim/punch -> zero range -> writes of zeros: two rounds at most. */
	for (unsigned round = 0; round < 2 && r == -EOPNOTSUPP; round++) {
		int n = batch_requeue_refused_as_zero(b);

		if (n < 0) {
			return n;
		}
		r = batch_run(b);
	}
	return r;
}
