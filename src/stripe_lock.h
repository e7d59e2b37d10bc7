/*
 * stripe_lock.h: a fixed table of mutexes hashed by stripe number, as md's
 * hash_locks.  A RAID 5 write holds its stripe's lock from the first read
 * of old data or parity until the new data and parity are written, so two
 * writes to one stripe never interleave their read-modify-write.  Writes to
 * different stripes take different locks (or, rarely, share a hash slot and
 * wait).  A thread blocks on a stripe lock only while it holds none: a
 * request that queues several whole stripes for one run (raid5.c,
 * "Whole stripes") holds their locks until it ran, but takes each lock
 * after its first with stripe_trylock, and when that fails runs and lets
 * go of what it holds before it waits.  So no thread waits while holding
 * a stripe lock: no ordering to argue.
 */
#ifndef RAID_STRIPE_LOCK_H
#define RAID_STRIPE_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define STRIPE_LOCKS 256 /* power of two */

struct stripe_locks {
	/* m[s % STRIPE_LOCKS] guards the data and parity of stripe s. */
	pthread_mutex_t m[STRIPE_LOCKS];
};

void stripe_locks_init(struct stripe_locks *l);
void stripe_locks_destroy(struct stripe_locks *l);
void stripe_lock(struct stripe_locks *l, uint64_t stripe);
/* The lock if free now (true), else false; never waits.  false too when
 * this thread holds the stripe's slot already (another stripe of it). */
bool stripe_trylock(struct stripe_locks *l, uint64_t stripe);
void stripe_unlock(struct stripe_locks *l, uint64_t stripe);

#endif
