/* parity.c: XOR parity on ISA-L's xor_gen (see parity.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <isa-l/raid.h>

#include "parity.h"

#define XOR_ALIGN 32

static void
xor_loop(uint8_t *dst, void *const *srcs, unsigned n, size_t off, size_t len)
{
	for (size_t i = off; i < off + len; i++) {
		uint8_t x = 0;

		for (unsigned s = 0; s < n; s++) {
			x ^= ((const uint8_t *)srcs[s])[i];
		}
		dst[i] = x;
	}
}

static int
all_aligned(void *dst, void *const *srcs, unsigned n)
{
	uintptr_t bits = (uintptr_t)dst;

	for (unsigned s = 0; s < n; s++) {
		bits |= (uintptr_t)srcs[s];
	}
	return (bits & (XOR_ALIGN - 1)) == 0;
}

int
parity_xor(void *dst, void *const *srcs, unsigned n, size_t len)
{
	void *v[PARITY_MAX_SOURCES + 1];
	size_t bulk = 0;

	if (n == 0 || n > PARITY_MAX_SOURCES || len > INT_MAX) {
		return -EINVAL;
	}
	if (n == 1) {
		memmove(dst, srcs[0], len);
		return 0;
	}
	if (all_aligned(dst, srcs, n)) {
		bulk = len & ~(size_t)(XOR_ALIGN - 1);
		memcpy(v, srcs, n * sizeof(*v));
		v[n] = dst;
		if (bulk && xor_gen(n + 1, bulk, v) != 0) {
			return -EINVAL;
		}
	}
	xor_loop(dst, srcs, n, bulk, len - bulk);
	return 0;
}
