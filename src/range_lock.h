/*
 * range_lock.h: byte-range locks, shared or exclusive, granted first come
 * first served.
 *
 * A holder locks [lo, hi) of the array, shared (other shared holders of
 * overlapping ranges may hold at once) or exclusive.  A request is granted
 * when no request queued before it overlaps it in a conflicting mode,
 * granted or still waiting: so an exclusive request waits only for the
 * overlapping holders that came before it, and holds back only the
 * overlapping requests that come after it.  Nobody starves, however many
 * shared holders keep coming (a reader-preferring rwlock lets them starve
 * a writer for as long as they overlap in time).
 *
 * Used for O_DIRECT writes: an unaligned write reads, patches and writes
 * back its edge blocks, holding its blocks exclusive; every other write,
 * zero and trim holds its range shared, so the patch never writes back
 * stale bytes over a write that landed in between (a lost update).
 */
#ifndef RAID_RANGE_LOCK_H
#define RAID_RANGE_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* One request, on its holder's stack from lock to unlock. */
struct range_req {
	uint64_t lo, hi;
	bool exclusive;
	bool granted;
	struct range_req *prev, *next;
};

struct range_lock {
	/*
	 * Guards the queue (every request, granted or waiting, in arrival
	 * order) and each request's `granted`.  `changed` is broadcast when a
	 * request leaves, so that waiters look again.
	 */
	pthread_mutex_t mu;
	pthread_cond_t changed;
	struct range_req *head, *tail;
	/*
	 * Optional, set before the lock is used: called without mu held when
	 * an exclusive request has to wait (+1), and once it is granted
	 * after waiting (-1).  Stripe gathering (gather.h) parks writes that
	 * hold their ranges shared, and must not keep such a request (and
	 * everything queued behind it) waiting.
	 */
	void (*excl_wait)(void *ctx, int delta);
	void *excl_ctx;
};

void range_lock_init(struct range_lock *l);
void range_lock_destroy(struct range_lock *l);
/* Lock [lo, hi) (lo < hi), waiting as long as it takes. */
void range_lock(struct range_lock *l, struct range_req *r, uint64_t lo,
		uint64_t hi, bool exclusive);
void range_unlock(struct range_lock *l, struct range_req *r);

#endif
