/* parity.c: XOR parity on ISA-L's xor_gen (see parity.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <isa-l/raid.h>

#include "parity.h"

#define XOR_ALIGN 32

/*
 * Any alignment: 8 bytes at a time through memcpy loads and stores, which
 * the compiler turns into plain (vectorised) unaligned moves, then bytes.
 */
static void
xor_loop(uint8_t *dst, void *const *srcs, unsigned n, size_t off, size_t len)
{
	size_t end = off + len;

	for (; off + 8 <= end; off += 8) {
		uint64_t x, w;

		memcpy(&x, (const uint8_t *)srcs[0] + off, 8);
		for (unsigned s = 1; s < n; s++) {
			memcpy(&w, (const uint8_t *)srcs[s] + off, 8);
			x ^= w;
		}
		memcpy(dst + off, &x, 8);
	}
	for (size_t i = off; i < end; i++) {
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
