/*
 * test_parity.c: XOR parity on ISA-L (src/layout/parity.c) against a byte
 * loop, for aligned and unaligned buffers of any length.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "helpers.h"
#include "parity.h"

/* parity_xor equals a byte loop: aligned or not, any length. */
static void
test_parity_xor_matches_naive(void **state)
{
	/* aligned_alloc wants a multiple of the alignment (ASan checks). */
	enum { MAXLEN = 9000, BUFLEN = (MAXLEN + 64 + 63) / 64 * 64 };
	uint8_t *src[6], *dst, *want;

	(void)state;
	for (unsigned i = 0; i < 6; i++) {
		src[i] = aligned_alloc(64, BUFLEN);
	}
	dst = aligned_alloc(64, BUFLEN);
	want = malloc(MAXLEN);
	for (unsigned iter = 0; iter < 400; iter++) {
		unsigned n = 1 + t_rand(6);
		size_t len = 1 + t_rand(MAXLEN);
		size_t skew =
			iter % 2 ? t_rand(33) : 0; /* unaligned half the time */
		void *s[6];

		for (unsigned i = 0; i < n; i++) {
			s[i] = src[i] + skew;
			t_fill_random(s[i], len);
		}
		for (size_t b = 0; b < len; b++) {
			uint8_t x = 0;

			for (unsigned i = 0; i < n; i++) {
				x ^= ((uint8_t *)s[i])[b];
			}
			want[b] = x;
		}
		assert_int_equal(parity_xor(dst + skew, s, n, len), 0);
		assert_memory_equal(dst + skew, want, len);
	}
	assert_int_equal(parity_xor(dst, (void **)src, 0, 16), -EINVAL);
	for (unsigned i = 0; i < 6; i++) {
		free(src[i]);
	}
	free(dst);
	free(want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_parity_xor_matches_naive, t_setup),
	};

	t_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
