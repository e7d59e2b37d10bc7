/* util.h: tiny helpers (arithmetic, lists); each states its precondition. */
#ifndef RAID_UTIL_H
#define RAID_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

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

/*
 * A doubly linked list of structs with prev and next fields, headed by a
 * pointer to the first (NULL: empty).  Push e in front, or unlink it.
 * The caller holds whatever guards the list.
 */
#define DLIST_PUSH(head, e)                                                    \
	do {                                                                   \
		(e)->prev = NULL;                                              \
		(e)->next = (head);                                            \
		if (head) {                                                    \
			(head)->prev = (e);                                    \
		}                                                              \
		(head) = (e);                                                  \
	} while (0)
#define DLIST_UNLINK(head, e)                                                  \
	do {                                                                   \
		if ((e)->prev) {                                               \
			(e)->prev->next = (e)->next;                           \
		} else {                                                       \
			(head) = (e)->next;                                    \
		}                                                              \
		if ((e)->next) {                                               \
			(e)->next->prev = (e)->prev;                           \
		}                                                              \
	} while (0)

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

/* CLOCK_MONOTONIC ns from now: a deadline for pthread_cond_timedwait on a
 * condition variable set to that clock. */
static inline struct timespec
mono_deadline(uint64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ns / 1000000000ull;
	t.tv_nsec += ns % 1000000000ull;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* A UUID as mdadm prints it, 4:4:4:4 bytes in hex; buf of UUID_STR_BYTES. */
#define UUID_STR_BYTES 36
static inline void
uuid_format(const uint8_t *uuid, char *buf)
{
	for (unsigned i = 0; i < 16; i++) {
		buf += sprintf(buf, "%s%02x", i && i % 4 == 0 ? ":" : "",
			       uuid[i]);
	}
}

#endif
