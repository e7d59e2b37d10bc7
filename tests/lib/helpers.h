/* helpers.h: small helpers shared by the unit tests. */
#ifndef TEST_HELPERS_H
#define TEST_HELPERS_H

#include <stdint.h>

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

#endif
