/* helpers.c: the shared test helpers (helpers.h): seed, filter, log capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"

uint64_t t_rand_state = T_SEED_DEFAULT;
static uint64_t base_seed = T_SEED_DEFAULT;
char t_last_error[T_LAST_ERROR_MAX];
char t_errors[T_ERRORS_MAX];

void
t_fill_random(void *p, uint64_t len)
{
	uint8_t *b = p;

	for (uint64_t i = 0; i < len; i++) {
		b[i] = t_rand(256);
	}
}

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
	t_last_error[0] = '\0';
	t_errors[0] = '\0';
}

int
t_setup(void **state)
{
	(void)state;
	t_reset();
	return 0;
}

void
t_capture_log(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_ERROR) {
		size_t at = strlen(t_errors);

		vsnprintf(t_last_error, sizeof(t_last_error), fmt, ap);
		if (at + strlen(t_last_error) + 2 <= sizeof(t_errors)) {
			strcat(strcat(t_errors, t_last_error), "\n");
		}
	}
}
