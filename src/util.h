/* util.h: tiny arithmetic helpers; each states its precondition. */
#ifndef RAID_UTIL_H
#define RAID_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* align must be a power of two. */
#define IS_ALIGNED(x, align) ((((uint64_t)(x)) & ((align)-1)) == 0)
#define ROUND_DOWN(x, align) (((uint64_t)(x)) & ~((uint64_t)(align)-1))
#define ROUND_UP(x, align)   ROUND_DOWN((uint64_t)(x) + (align)-1, align)
#define DIV_ROUND_UP(x, d)   ((((uint64_t)(x)) + (d)-1) / (d))
/* Any multiple (a RAID 5 stripe of 3 chunks is not a power of two). */
#define ROUND_DOWN_ANY(x, m) ((((uint64_t)(x)) / (m)) * (m))
#define ROUND_UP_ANY(x, m)   (DIV_ROUND_UP(x, m) * (m))
#define ARRAY_SIZE(a)	     (sizeof(a) / sizeof((a)[0]))

static inline bool
is_power_of_2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* x must be a power of two. */
static inline unsigned
log2_u64(uint64_t x)
{
	return 63 - __builtin_clzll(x);
}

#endif
