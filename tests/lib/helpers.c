/* helpers.c: the shared test helpers (helpers.h): seed and filter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "helpers.h"

uint64_t t_rand_state = T_SEED_DEFAULT;
static uint64_t base_seed = T_SEED_DEFAULT;

/* xorshift stays at 0 from 0: a seed must be a nonzero number. */
void
t_init(void)
{
	const char *seed = getenv("NBDRAID_SEED");
	const char *filter = getenv("NBDRAID_TEST_FILTER");
	char *end;

	if (seed && *seed) {
		base_seed = strtoull(seed, &end, 0);
		if (*end || !base_seed) {
			fprintf(stderr,
				"NBDRAID_SEED=%s: not a nonzero number\n",
				seed);
			exit(1);
		}
	}
	printf("seed %llu (rerun with NBDRAID_SEED=%llu)\n",
	       (unsigned long long)base_seed, (unsigned long long)base_seed);
	fflush(stdout);
	if (filter && *filter) {
		cmocka_set_test_filter(filter);
	}
	t_reset();
}

void
t_reset(void)
{
	t_rand_state = base_seed;
}

int
t_setup(void **state)
{
	(void)state;
	t_reset();
	return 0;
}
