/* stripe_lock.c: the stripe lock table (see stripe_lock.h). */
#include "stripe_lock.h"

void
stripe_locks_init(struct stripe_locks *l)
{
	for (unsigned i = 0; i < STRIPE_LOCKS; i++) {
		pthread_mutex_init(&l->m[i], NULL);
	}
}

void
stripe_locks_destroy(struct stripe_locks *l)
{
	for (unsigned i = 0; i < STRIPE_LOCKS; i++) {
		pthread_mutex_destroy(&l->m[i]);
	}
}

void
stripe_lock(struct stripe_locks *l, uint64_t stripe)
{
	pthread_mutex_lock(&l->m[stripe & (STRIPE_LOCKS - 1)]);
}

bool
stripe_trylock(struct stripe_locks *l, uint64_t stripe)
{
	return pthread_mutex_trylock(&l->m[stripe & (STRIPE_LOCKS - 1)]) == 0;
}

void
stripe_unlock(struct stripe_locks *l, uint64_t stripe)
{
	pthread_mutex_unlock(&l->m[stripe & (STRIPE_LOCKS - 1)]);
}
