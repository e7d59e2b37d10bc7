/*
 * parity.h: XOR parity, pure (no I/O), on ISA-L.
 *
 * parity_xor() is both RAID 5 parity generation (P = D0 ^ D1 ^ ... ) and
 * reconstruction (any one chunk of a stripe = XOR of all the others, parity
 * included).  ISA-L's xor_gen wants 32-byte aligned pointers; the bulk of a
 * range goes through it and a tail under 32 bytes through a plain loop.
 * Unaligned pointers (a client's buffer) take a word-at-a-time loop.
 */
#ifndef RAID_PARITY_H
#define RAID_PARITY_H

#include <stddef.h>

#define PARITY_MAX_SOURCES 64

/* dst = srcs[0] ^ srcs[1] ^ ... ^ srcs[n-1] over len bytes; 1 <= n <= 64. */
int parity_xor(void *dst, void *const *srcs, unsigned n, size_t len);

#endif
