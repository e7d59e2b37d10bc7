/*
 * range_lock.c: first-come-first-served byte-range locks (range_lock.h).
 *
 * The queue holds every request in arrival order.  A request may be
 * granted when it conflicts with no request ahead of it: both ranges
 * overlap and at least one is exclusive.  Requests ahead that are still
 * waiting count too, which is what makes it fair.  When a request leaves,
 * the waiters are woken to look again (a broadcast: waiters are few, at
 * most one per nbdkit worker thread).
 */
#include "range_lock.h"

void
range_lock_init(struct range_lock *l)
{
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->changed, NULL);
	l->head = l->tail = NULL;
	l->excl_wait = NULL;
	l->excl_ctx = NULL;
}

void
range_lock_destroy(struct range_lock *l)
{
	pthread_cond_destroy(&l->changed);
	pthread_mutex_destroy(&l->mu);
}

static bool
conflict(const struct range_req *a, const struct range_req *b)
{
	return (a->exclusive || b->exclusive) && a->lo < b->hi && b->lo < a->hi;
}

/* May r be granted?  Only requests ahead of it matter. */
static bool
grantable(const struct range_req *r)
{
	for (const struct range_req *p = r->prev; p; p = p->prev) {
		if (conflict(p, r)) {
			return false;
		}
	}
	return true;
}

void
range_lock(struct range_lock *l, struct range_req *r, uint64_t lo, uint64_t hi,
	   bool exclusive)
{
	bool told = false;

	*r = (struct range_req){ .lo = lo, .hi = hi, .exclusive = exclusive };
	pthread_mutex_lock(&l->mu);
	r->prev = l->tail;
	if (l->tail) {
		l->tail->next = r;
	} else {
		l->head = r;
	}
	l->tail = r;
	if (exclusive && l->excl_wait && !grantable(r)) {
		pthread_mutex_unlock(&l->mu);
		l->excl_wait(l->excl_ctx, 1);
		told = true;
		pthread_mutex_lock(&l->mu);
	}
	while (!grantable(r)) {
		pthread_cond_wait(&l->changed, &l->mu);
	}
	r->granted = true;
	pthread_mutex_unlock(&l->mu);
	if (told) {
		l->excl_wait(l->excl_ctx, -1);
	}
}

void
range_unlock(struct range_lock *l, struct range_req *r)
{
	bool waiters;

	pthread_mutex_lock(&l->mu);
	if (r->prev) {
		r->prev->next = r->next;
	} else {
		l->head = r->next;
	}
	if (r->next) {
		r->next->prev = r->prev;
	} else {
		l->tail = r->prev;
	}
	waiters = false;
	for (const struct range_req *p = l->head; p && !waiters; p = p->next) {
		waiters = !p->granted;
	}
	if (waiters) {
		pthread_cond_broadcast(&l->changed);
	}
	pthread_mutex_unlock(&l->mu);
}
