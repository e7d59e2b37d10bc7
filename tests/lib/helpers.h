/*
 * helpers.h: small helpers shared by the unit tests.
 *
 * Every case starts from its own known random state: its cmocka setup
 * (t_setup, or one that calls it) puts the generator back to the base
 * seed, so a case's stream never depends on the cases that ran before it.
 * The base seed is $NBDRAID_SEED, else T_SEED_DEFAULT.  t_init() prints
 * it, so that a failure can be replayed, and takes $NBDRAID_TEST_FILTER
 * as a cmocka test filter (cmocka 1.1 reads no variable of its own for
 * that), so that one case can run alone.
 */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include <stdint.h>

#define T_SEED_DEFAULT 42

/* A deterministic xorshift generator: t_rand(n) is in [0, n); n = 0 gives 0. */
static inline uint64_t
t_rand_next(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

extern uint64_t t_rand_state;

static inline uint64_t
t_rand(uint64_t n)
{
	return n ? t_rand_next(&t_rand_state) % n : 0;
}

/* Once, in main(): the base seed (printed) and the test filter. */
void t_init(void);
/* A case's start: the generator back to the base seed. */
void t_reset(void);
/* cmocka setup for cases without a fixture: t_reset(). */
int t_setup(void **state);

#endif
