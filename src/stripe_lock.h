/*
 * stripe_lock.h: a fixed table of mutexes hashed by stripe number, as md's
 * hash_locks.  A RAID 5 write holds its stripe's lock from the first read
 * of old data or parity until the new data and parity are written, so two
 * writes to one stripe never interleave their read-modify-write.  Writes to
 * different stripes take different locks (or, rarely, share a hash slot and
 * wait).  One stripe lock at a time, never nested: no ordering to argue.
 */
#ifndef RAID_STRIPE_LOCK_H
#define RAID_STRIPE_LOCK_H

#include <pthread.h>
#include <stdint.h>

#define STRIPE_LOCKS 256 /* power of two */

struct stripe_locks {
	/* m[s % STRIPE_LOCKS] guards the data and parity of stripe s. */
	pthread_mutex_t m[STRIPE_LOCKS];
};

void stripe_locks_init(struct stripe_locks *l);
void stripe_locks_destroy(struct stripe_locks *l);
void stripe_lock(struct stripe_locks *l, uint64_t stripe);
void stripe_unlock(struct stripe_locks *l, uint64_t stripe);

#endif
