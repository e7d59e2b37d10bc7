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

#include <stdarg.h>
#include <stdint.h>

#include "raid.h"

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

/* len bytes of t_rand(256). */
void t_fill_random(void *p, uint64_t len);

/* Once, in main(): the base seed (printed) and the test filter. */
void t_init(void);
/* A case's start: the base seed, no error captured. */
void t_reset(void);
/* cmocka setup for cases without a fixture: t_reset(). */
int t_setup(void **state);

/*
 * A log sink keeping the last error message in t_last_error, and every
 * error since t_reset() (one per line, as many as fit) in t_errors.
 */
#define T_ERRORS_MAX 8192
extern char t_errors[T_ERRORS_MAX];
#define T_LAST_ERROR_MAX 8192
extern char t_last_error[T_LAST_ERROR_MAX];
void t_capture_log(enum raid_log_level lvl, const char *fmt, va_list ap);

#endif
