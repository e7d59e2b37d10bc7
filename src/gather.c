/*
 * gather.c: stripe gathering (gather.h, docs/gather.md).
 *
 * DESIGN
 * A write request is cut at stripe boundaries: at most a partial head and
 * a partial tail, whole stripes between.  Whole stripes are written at
 * once.  A partial piece parks in the table when its stripe already has
 * parked pieces, or when the writes the client may have in flight could
 * fill the rest of it: the most write requests seen in flight at once
 * lately (the client's window) times their mean length.  Pieces, stripe
 * entries and the request's wait state live on the parked request's stack:
 * a stripe entry is the one its first piece's request made, and no
 * request returns before every piece of the stripes it is in is written,
 * so nothing is freed under anyone.
 *
 *   event                                   what happens to the stripe
 *   a piece makes the coverage whole        that request takes it out and
 *                                           writes it whole (full)
 *   an exclusive range request waits        the next waiter that looks
 *                                           writes it as parked (forced)
 *   its deadline (gather-wait) passed       the same (timeout)
 *   every write in flight is parked, and    the same (idle)
 *   as many as the client's window, or
 *   for gather-grace already
 *
 * The request that takes a stripe out writes it through the core's write
 * path (direct(): retries without a member that fails, array_fail) with
 * FUA if any of its pieces' requests asked FUA, then, under the mutex,
 * gives every piece that write's result and wakes their requests.
 *
 * Whether a stripe can be filled is a guess, and a wrong guess costs a
 * wait: `credit` counts down on stripes written partial (idle, timeout)
 * and up on stripes gathered whole; at zero, only one new stripe in
 * GATHER_PROBE parks, until gathering pays again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gather.h"
#include "io/bounce.h"
#include "util.h"

#define GATHER_HASH	   64 /* buckets: stripes parked at once */
#define GATHER_PEAK_NS	   (100ull * 1000000ull) /* the window's memory */
#define GATHER_CREDIT_MAX  16
#define GATHER_CREDIT_FULL 1  /* credit won by a stripe gathered whole */
#define GATHER_CREDIT_MISS 2  /* lost by one written partial */
#define GATHER_PROBE	   8  /* at no credit, one new stripe in this many */
#define GATHER_DIRECT	   16 /* partial stripes written straight, kept */
#define GATHER_GAP_MAX	   10 /* a gap counts up to this many graces */
#define GATHER_ENDS	   16 /* ends of the last write requests, kept */

struct gather_req;

/* One parked piece of a request: [off, off+len) of the array. */
struct gather_piece {
	struct gather_req *req;
	struct gather_stripe *st; /* the stripe it is parked in */
	uint64_t off, len;
	const uint8_t *buf;
	int result; /* of the write that carried it (the writer's) */
	bool done;  /* written; st no longer to be touched */
	struct gather_piece *next; /* the stripe's pieces, by offset */
};

/* A stripe with parked pieces. */
struct gather_stripe {
	uint64_t no;
	uint64_t deadline_ns;
	uint64_t covered; /* bytes of the stripe its pieces cover */
	bool attached;	  /* in the table (else being written) */
	bool force;	  /* an exclusive range request waits */
	struct gather_piece *pieces;
	struct gather_stripe *hnext;
};

/* A request with parked pieces (its head and its tail). */
struct gather_req {
	pthread_cond_t cond; /* with g->mu: its pieces were written */
	unsigned pending;    /* pieces parked, not yet written */
	int result;	     /* the first error of those writes */
	uint32_t flags;
	uint64_t changed, repair;
	struct gather_piece piece[2];
	struct gather_stripe stripe[2]; /* entries it made */
	struct gather_req *prev, *next; /* g->waiters */
};

enum gather_why { WHY_NONE, WHY_FORCED, WHY_TIMEOUT, WHY_IDLE };

struct gather {
	uint64_t stripe_bytes;
	unsigned mem_align;
	/*
	 * Guards everything below: the table, every parked piece, stripe and
	 * request state (the parts on other requests' stacks too), the
	 * counts of writes in flight and the statistics.  A leaf: nothing
	 * else is locked while it is held, and it is never held across I/O.
	 */
	pthread_mutex_t mu;
	pthread_condattr_t cattr; /* requests' conds: CLOCK_MONOTONIC */
	uint64_t wait_ns, grace_ns;
	bool always;
	struct gather_stripe *hash[GATHER_HASH];
	unsigned stripes;	       /* in the table */
	struct gather_req *waiters;    /* requests in the wait loop */
	struct gather_flight *flights; /* write requests in flight */
	unsigned writers;	       /* how many (and test holds) */
	unsigned parked;	       /* of those, waiting for their pieces */
	unsigned excl;		       /* exclusive range requests waiting */
	bool idle;		       /* writers == parked > 0 */
	uint64_t idle_since;
	unsigned peak_cur, peak_prev; /* writers at once, this period, last */
	uint64_t peak_start;
	uint64_t avg_len;	      /* of write requests, a moving mean */
	uint64_t last_enter, avg_gap; /* between write requests' arrivals */
	/* The last stripes written partial straight away, not parked: a
	 * piece arriving late for one of them must not start it again. */
	uint64_t direct[GATHER_DIRECT];
	unsigned direct_at;
	/* Where the last write requests to arrive end: a request starting
	 * at one of them continues a stream. */
	uint64_t ends[GATHER_ENDS];
	unsigned ends_at;
	int credit;
	unsigned probe;
	struct raid_gather_stats stats;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct gather *
gather_new(uint64_t stripe_bytes, unsigned mem_align, uint64_t wait_ns,
	   uint64_t grace_ns)
{
	struct gather *g;

	if (wait_ns == 0) {
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		return NULL;
	}
	pthread_mutex_init(&g->mu, NULL);
	pthread_condattr_init(&g->cattr);
	pthread_condattr_setclock(&g->cattr, CLOCK_MONOTONIC);
	g->stripe_bytes = stripe_bytes;
	g->mem_align = mem_align;
	g->wait_ns = wait_ns;
	g->grace_ns = grace_ns;
	g->credit = GATHER_CREDIT_MAX;
	return g;
}

void
gather_free(struct gather *g)
{
	if (!g) {
		return;
	}
	pthread_condattr_destroy(&g->cattr);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

/* ---- the counts (mu held) ------------------------------------------ */

static void
wake_waiters(struct gather *g)
{
	for (struct gather_req *q = g->waiters; q; q = q->next) {
		pthread_cond_signal(&q->cond);
	}
}

/* Every write in flight parked: start the grace, let the waiters look. */
static void
update_idle(struct gather *g)
{
	bool idle = g->parked > 0 && g->parked == g->writers;

	if (idle && !g->idle) {
		g->idle_since = now_ns();
		wake_waiters(g);
	}
	g->idle = idle;
}

/* The most write requests in flight at once lately. */
static unsigned
window(const struct gather *g)
{
	return MAX(MAX(g->peak_cur, g->peak_prev), 1u);
}

/* The calling thread's write request in flight (gather_enter). */
static _Thread_local struct gather_flight *tl_flight;

void
gather_enter(struct gather *g, struct gather_flight *f, uint64_t off,
	     uint64_t count, bool gathers)
{
	uint64_t t = now_ns(), sb = g->stripe_bytes;
	bool whole = off % sb == 0 && (off + count) % sb == 0;

	*f = (struct gather_flight){ .lo = off,
				     .hi = off + count,
				     .decided = !gathers || whole };
	tl_flight = f;
	pthread_mutex_lock(&g->mu);
	DLIST_PUSH(g->flights, f);
	g->writers++;
	if (t - g->peak_start > GATHER_PEAK_NS) {
		g->peak_prev = g->peak_cur;
		g->peak_cur = 0;
		g->peak_start = t;
	}
	g->peak_cur = MAX(g->peak_cur, g->writers);
	g->avg_len =
		g->avg_len ? g->avg_len - g->avg_len / 8 + count / 8 : count;
	if (g->last_enter) {
		uint64_t gap =
			MIN(t - g->last_enter, GATHER_GAP_MAX * g->grace_ns);

		g->avg_gap = g->avg_gap - g->avg_gap / 8 + gap / 8;
	}
	g->last_enter = t;
	g->ends[g->ends_at++ % GATHER_ENDS] = off + count;
	/* A client one request at a time: nothing to join, nobody to fill. */
	f->decided |= window(g) == 1 && !g->stripes && !g->always;
	update_idle(g);
	pthread_mutex_unlock(&g->mu);
}

void
gather_leave(struct gather *g, struct gather_flight *f)
{
	tl_flight = NULL;
	pthread_mutex_lock(&g->mu);
	DLIST_UNLINK(g->flights, f);
	g->writers--;
	update_idle(g);
	pthread_mutex_unlock(&g->mu);
}

void
gather_hold(struct gather *g, int delta)
{
	pthread_mutex_lock(&g->mu);
	g->writers += delta;
	update_idle(g);
	pthread_mutex_unlock(&g->mu);
}

void
gather_tune(struct gather *g, uint64_t wait_ns, uint64_t grace_ns, bool always)
{
	pthread_mutex_lock(&g->mu);
	g->wait_ns = wait_ns;
	g->grace_ns = grace_ns;
	g->always = always;
	wake_waiters(g);
	pthread_mutex_unlock(&g->mu);
}

void
gather_exclusive_wait(void *ctx, int delta)
{
	struct gather *g = ctx;

	pthread_mutex_lock(&g->mu);
	g->excl += delta;
	if (delta > 0) {
		for (unsigned i = 0; i < GATHER_HASH; i++) {
			for (struct gather_stripe *s = g->hash[i]; s;
			     s = s->hnext) {
				s->force = true;
			}
		}
		wake_waiters(g);
	}
	pthread_mutex_unlock(&g->mu);
}

void
gather_stats(struct gather *g, struct raid_gather_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!g) {
		return;
	}
	pthread_mutex_lock(&g->mu);
	*st = g->stats;
	st->enabled = true;
	st->wait_us = g->wait_ns / 1000;
	st->grace_us = g->grace_ns / 1000;
	pthread_mutex_unlock(&g->mu);
}

/* ---- the table (mu held) ------------------------------------------- */

static struct gather_stripe **
bucket(struct gather *g, uint64_t no)
{
	return &g->hash[no % GATHER_HASH];
}

static struct gather_stripe *
lookup(struct gather *g, uint64_t no)
{
	struct gather_stripe *s = *bucket(g, no);

	while (s && s->no != no) {
		s = s->hnext;
	}
	return s;
}

static void
detach(struct gather *g, struct gather_stripe *s)
{
	struct gather_stripe **pp = bucket(g, s->no);

	while (*pp != s) {
		pp = &(*pp)->hnext;
	}
	*pp = s->hnext;
	s->attached = false;
	g->stripes--;
}

/* Bytes of the stripe its pieces (sorted by offset) cover. */
static uint64_t
coverage(const struct gather_stripe *s)
{
	uint64_t covered = 0, end = 0;

	for (const struct gather_piece *p = s->pieces; p; p = p->next) {
		uint64_t lo = MAX(p->off, end), hi = p->off + p->len;

		if (hi > lo) {
			covered += hi - lo;
		}
		end = MAX(end, hi);
	}
	return covered;
}

/* Is [lo, hi) covered by write requests in flight not yet decided? */
static bool
arriving(const struct gather *g, const struct gather_flight *self, uint64_t lo,
	 uint64_t hi)
{
	while (lo < hi) {
		const struct gather_flight *f = g->flights;

		while (f &&
		       (f == self || f->decided || f->lo > lo || f->hi <= lo)) {
			f = f->next;
		}
		if (!f) {
			return false;
		}
		lo = f->hi;
	}
	return true;
}

/* Does a write request starting at off continue one that came lately? */
static bool
continues(const struct gather *g, uint64_t off)
{
	for (unsigned i = 0; i < GATHER_ENDS; i++) {
		if (g->ends[i] == off) {
			return true;
		}
	}
	return false;
}

/*
 * May the piece [off, off+len) of request self park in a stripe that has
 * none parked?  Not when a request in flight already wrote into the
 * stripe (or is writing it) without parking: it cannot become whole.  Yes
 * when requests in flight that have not decided yet cover the rest of it.
 * Else only at the head of a stream: the piece starts the stripe, its
 * request continues an earlier one, the writes the client may have in
 * flight could fill the rest, and parking pays (credit).
 */
static bool
may_start(struct gather *g, const struct gather_flight *self, uint64_t len,
	  uint64_t off)
{
	uint64_t lo = ROUND_DOWN_ANY(off, g->stripe_bytes);
	uint64_t hi = lo + g->stripe_bytes, missing = g->stripe_bytes - len;

	if (g->always) {
		return true;
	}
	for (const struct gather_flight *f = g->flights; f; f = f->next) {
		if (f != self && f->decided && f->lo < hi && lo < f->hi) {
			return false;
		}
	}
	for (unsigned i = 0; i < GATHER_DIRECT; i++) {
		if (g->direct[i] == lo / g->stripe_bytes + 1) {
			return false; /* written partial lately */
		}
	}
	if (arriving(g, self, lo, off) && arriving(g, self, off + len, hi)) {
		return true;
	}
	if (off != lo || !self || !continues(g, self->lo) ||
	    missing > (uint64_t)(window(g) - 1) * g->avg_len) {
		return false; /* nothing in flight can fill it */
	}
	return g->credit > 0 || ++g->probe % GATHER_PROBE == 0;
}

/* A partial stripe was written straight away (mu held). */
static void
note_direct(struct gather *g, uint64_t off)
{
	g->direct[g->direct_at++ % GATHER_DIRECT] = off / g->stripe_bytes + 1;
}

/*
 * Park piece k of req, [off, off+len) of buf, if it may; *full: the
 * stripe it completed, taken out of the table for req to write.
 */
static bool
park(struct gather *g, struct gather_req *req, unsigned k, const void *buf,
     uint64_t len, uint64_t off, struct gather_stripe **full)
{
	uint64_t no = off / g->stripe_bytes;
	struct gather_stripe *s = lookup(g, no);
	struct gather_piece *p = &req->piece[k], **pp;

	if (g->excl) {
		return false; /* it might hold an exclusive request back */
	}
	if (!s) {
		if (!may_start(g, tl_flight, len, off)) {
			return false;
		}
		s = &req->stripe[k];
		*s = (struct gather_stripe){
			.no = no,
			.deadline_ns = now_ns() + g->wait_ns,
			.attached = true,
			.hnext = *bucket(g, no),
		};
		*bucket(g, no) = s;
		g->stripes++;
	}
	if (!req->pending) {
		/* Before anyone can see it: the writer of s signals it. */
		pthread_cond_init(&req->cond, &g->cattr);
	}
	*p = (struct gather_piece){ .req = req,
				    .st = s,
				    .off = off,
				    .len = len,
				    .buf = buf };
	for (pp = &s->pieces; *pp && (*pp)->off <= off; pp = &(*pp)->next) {
	}
	p->next = *pp;
	*pp = p;
	s->covered = coverage(s);
	req->pending++;
	g->stats.pieces++;
	if (s->covered == g->stripe_bytes) {
		detach(g, s);
		*full = s;
	}
	return true;
}

/* ---- writing a stripe taken out ------------------------------------ */

/* The stripe's pieces written: their results to their requests. */
static void
complete(struct gather_stripe *s, uint64_t changed, uint64_t repair)
{
	for (struct gather_piece *p = s->pieces, *next; p; p = next) {
		struct gather_req *q = p->req;

		next = p->next; /* p may go once q is woken and mu let go */
		p->done = true;
		q->pending--;
		if (p->result < 0 && q->result == 0) {
			q->result = p->result;
		}
		q->changed |= changed;
		q->repair |= repair;
		pthread_cond_signal(&q->cond);
	}
}

static uint32_t
stripe_flags(const struct gather_stripe *s)
{
	uint32_t flags = 0;

	for (const struct gather_piece *p = s->pieces; p; p = p->next) {
		flags |= p->req->flags & RAID_FUA;
	}
	return flags;
}

/*
 * Write the pieces of s from `first` up to the end of the run of pieces
 * that overlap or touch it (one member of a bounce copy when there are
 * several), each piece's result in it; the piece after the run.
 */
static struct gather_piece *
write_run(struct gather *g, struct raid_array *a, gather_write_fn direct,
	  uint32_t flags, struct gather_piece *first, uint64_t *changed,
	  uint64_t *repair)
{
	uint64_t lo = first->off, hi = first->off + first->len;
	struct gather_piece *p = first->next, *q;
	const uint8_t *buf = first->buf;
	uint8_t *bb = NULL;
	int r;

	for (; p && p->off <= hi; p = p->next) {
		hi = MAX(hi, p->off + p->len);
	}
	if (first->next != p) {
		bb = bounce_get(BOUNCE_GATHER, hi - lo, g->mem_align);
		for (q = first; bb && q != p; q = q->next) {
			memcpy(bb + (q->off - lo), q->buf, q->len);
		}
		buf = bb;
	}
	r = buf ? direct(a, flags, buf, hi - lo, lo, changed, repair) : -ENOMEM;
	for (q = first; q != p; q = q->next) {
		q->result = r;
	}
	return p;
}

/* Write a stripe taken out of the table, whole or as parked; answer. */
static void
write_stripe(struct gather *g, struct raid_array *a, gather_write_fn direct,
	     struct gather_stripe *s)
{
	uint32_t flags = stripe_flags(s);
	uint64_t changed = 0, repair = 0;

	for (struct gather_piece *p = s->pieces; p;) {
		p = write_run(g, a, direct, flags, p, &changed, &repair);
	}
	bounce_put(BOUNCE_GATHER);
	pthread_mutex_lock(&g->mu);
	complete(s, changed, repair);
	pthread_mutex_unlock(&g->mu);
}

/* ---- a request ------------------------------------------------------ */

/*
 * How long parked stripes wait for the client's next request once every
 * write in flight is parked: gather-grace, or twice the recent gap between
 * write requests if longer (a large request takes a while to arrive), up
 * to the deadline.
 */
static uint64_t
grace(const struct gather *g)
{
	return MIN(MAX(g->grace_ns, 2 * g->avg_gap), g->wait_ns);
}

/* Is one of req's stripes due to be written as parked?  *wake: when. */
static struct gather_stripe *
due(struct gather *g, struct gather_req *req, uint64_t now, int *why,
    uint64_t *wake)
{
	*wake = UINT64_MAX;
	for (unsigned k = 0; k < 2; k++) {
		struct gather_piece *p = &req->piece[k];
		struct gather_stripe *s = p->st;
		uint64_t grace_end = g->idle_since + grace(g);

		if (!s || p->done || !s->attached) {
			continue;
		}
		*why = s->force		       ? WHY_FORCED
		       : now >= s->deadline_ns ? WHY_TIMEOUT
		       : g->idle && (g->parked >= window(g) || now >= grace_end)
			       ? WHY_IDLE
			       : WHY_NONE;
		if (*why != WHY_NONE) {
			return s;
		}
		*wake = MIN(*wake, s->deadline_ns);
		if (g->idle) {
			*wake = MIN(*wake, grace_end);
		}
	}
	return NULL;
}

static void
count_release(struct gather *g, int why)
{
	if (why == WHY_FORCED) {
		g->stats.released_forced++;
		return;
	}
	if (why == WHY_TIMEOUT) {
		g->stats.released_timeout++;
	} else {
		g->stats.released_idle++;
	}
	g->credit = MAX(g->credit - GATHER_CREDIT_MISS, 0);
}

static void
count_full(struct gather *g)
{
	g->stats.full++;
	g->credit = MIN(g->credit + GATHER_CREDIT_FULL, GATHER_CREDIT_MAX);
}

static void
timed_wait(struct gather *g, struct gather_req *req, uint64_t wake)
{
	struct timespec ts;

	if (wake == UINT64_MAX) {
		pthread_cond_wait(&req->cond, &g->mu);
		return;
	}
	ts.tv_sec = (time_t)(wake / 1000000000ull);
	ts.tv_nsec = (long)(wake % 1000000000ull);
	pthread_cond_timedwait(&req->cond, &g->mu, &ts);
}

/* Wait until req's pieces are written, writing its due stripes (mu held). */
static void
wait_pieces(struct gather *g, struct raid_array *a, gather_write_fn direct,
	    struct gather_req *req)
{
	if (!req->pending) {
		return; /* written already (stripes it completed) */
	}
	DLIST_PUSH(g->waiters, req);
	g->parked++;
	update_idle(g);
	while (req->pending) {
		uint64_t wake;
		int why = WHY_NONE;
		struct gather_stripe *s = due(g, req, now_ns(), &why, &wake);

		if (!s) {
			timed_wait(g, req, wake);
			continue;
		}
		detach(g, s);
		count_release(g, why);
		g->parked--; /* writing: in flight, not parked */
		update_idle(g);
		pthread_mutex_unlock(&g->mu);
		write_stripe(g, a, direct, s);
		pthread_mutex_lock(&g->mu);
		g->parked++;
		update_idle(g);
	}
	DLIST_UNLINK(g->waiters, req);
	g->parked--;
	update_idle(g);
}

int
gather_write(struct gather *g, struct raid_array *a, gather_write_fn direct,
	     uint32_t flags, const void *buf, uint64_t count, uint64_t off,
	     uint64_t *changed, uint64_t *repair)
{
	uint64_t sb = g->stripe_bytes, end = off + count;
	uint64_t head_end = MIN(end, ROUND_DOWN_ANY(off, sb) + sb);
	uint64_t tail = MAX(ROUND_DOWN_ANY(end, sb), head_end);
	const uint8_t *b = buf;
	struct gather_stripe *full[2] = { NULL, NULL };
	struct gather_req req;
	bool parked[2] = { false, false };
	uint64_t lo = off, hi = end;
	int r = 0;

	/* Whole stripes only, or a request that came alone (gather_enter). */
	if ((off % sb == 0 && end % sb == 0) ||
	    (tl_flight && tl_flight->decided)) {
		return direct(a, flags, buf, count, off, changed, repair);
	}
	memset(&req, 0, sizeof(req));
	req.flags = flags;
	pthread_mutex_lock(&g->mu);
	if (tl_flight) {
		tl_flight->decided = true;
	}
	if (head_end - off < sb) {
		parked[0] = park(g, &req, 0, b, head_end - off, off, &full[0]);
	}
	if (tail < end) {
		parked[1] = park(g, &req, 1, b + (tail - off), end - tail, tail,
				 &full[1]);
	}
	for (unsigned k = 0; k < 2; k++) {
		if (full[k]) {
			count_full(g);
		}
	}
	if (head_end - off < sb && !parked[0]) {
		note_direct(g, off);
	}
	if (tail < end && !parked[1]) {
		note_direct(g, tail);
	}
	pthread_mutex_unlock(&g->mu);
	if (!parked[0] && !parked[1]) {
		return direct(a, flags, buf, count, off, changed, repair);
	}
	/* Stripes it completed first: their other requests wait for them. */
	for (unsigned k = 0; k < 2; k++) {
		if (full[k]) {
			write_stripe(g, a, direct, full[k]);
		}
	}
	/* What did not park: the whole stripes between, and a piece. */
	lo = parked[0] ? head_end : off;
	hi = parked[1] ? tail : end;
	if (lo < hi) {
		r = direct(a, flags, b + (lo - off), hi - lo, lo, changed,
			   repair);
	}
	pthread_mutex_lock(&g->mu);
	wait_pieces(g, a, direct, &req);
	pthread_mutex_unlock(&g->mu);
	pthread_cond_destroy(&req.cond);
	*changed |= req.changed;
	*repair |= req.repair;
	return r < 0 ? r : req.result;
}
