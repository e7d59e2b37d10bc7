/*
 * mem_backend.h: in-memory members behind struct io_backend, for unit tests
 * without files, root or io_uring.  Each member can be told to fail its
 * n-th request (and some after it: the core retries a failure once), every
 * request, or the requests over a bad range, with a chosen errno, or
 * refuse some ops
 * (EOPNOTSUPP, as a filesystem without punch hole), or hold some at a
 * gate until the test opens it; every request is
 * counted by op (a vectored one once, whatever its segments), and the flags
 * of writes and the iovec segments of vectored requests are recorded.  Like
 * the kernel, a member refuses (EINVAL) a request of more than IO_MAX_IOV
 * segments and, when the test sets its mem_align/io_align, any buffer,
 * segment, offset or length O_DIRECT would refuse.
 */
#ifndef MEM_BACKEND_H
#define MEM_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"
#include "member.h"

/*
 * A gate, for tests of races: the requests of ops (1 << op) overlapping
 * [off, off + len) of a member, after the first `skip` of them, wait at
 * it while it is shut.  The test waits for them (mem_gate_wait), looks at
 * the world while they are held (another thread's requests go on), and
 * opens it: the held ones, and every later one, then pass, or fail with
 * the errno given.
 */
struct mem_gate {
	pthread_mutex_t lock; /* guards the rest; cond: its changes */
	pthread_cond_t cond;
	unsigned ops;
	uint64_t off, len;
	unsigned skip;	 /* matching requests let through first */
	bool shut;	 /* until mem_gate_open */
	int fail_errno;	 /* once open: 0 pass, else fail with it */
	unsigned seen;	 /* matching requests, skipped ones included */
	unsigned held;	 /* requests that waited (or wait) at it */
	unsigned opened; /* 1 once opened (for ordering checks) */
};

void mem_gate_init(struct mem_gate *g, unsigned ops, uint64_t off, uint64_t len,
		   unsigned skip);
/* Until n requests have been held; false after timeout_ms. */
bool mem_gate_wait(struct mem_gate *g, unsigned n, unsigned timeout_ms);
void mem_gate_open(struct mem_gate *g, int fail_errno);
void mem_gate_destroy(struct mem_gate *g);

struct mem_member {
	pthread_mutex_t lock; /* a request's data, moved whole (mem_one) */
	uint8_t *data;
	uint64_t size;
	unsigned ops;	     /* requests seen */
	unsigned count[8];   /* requests seen, by enum io_op */
	unsigned fua_writes; /* writes that carried IO_FUA */
	unsigned vectored;   /* requests that carried an iovec list */
	unsigned segments;   /* iovec segments seen, all requests */
	unsigned fail_at; /* fail the fail_at-th request (1-based); 0 never */
	unsigned fail_times; /* ...and the ones after it: this many (0: 1) */
	bool fail_always;
	/* Bad sectors: requests of ops in bad_ops (1 << op) that overlap
	 * [bad_off, bad_off + bad_len) fail with fail_errno, every time. */
	unsigned bad_ops;
	uint64_t bad_off, bad_len;
	bool bad_heal;	   /* a write over the range heals it (a disk remaps) */
	int fail_errno;	   /* positive errno */
	unsigned delay_us; /* sleep before each request: widen races */
	unsigned refuse_ops;   /* 1 << op: refused with EOPNOTSUPP, as a
				  filesystem refuses an fallocate mode */
	struct mem_gate *gate; /* or NULL */
	unsigned done[8];      /* requests completed, by op (atomics) */
};

extern const struct io_backend mem_backend;

/*
 * n members of `size` bytes each, zero-filled, roles 0..n-1, in an array
 * with room for MEM_MEMBERS_ROOM more (array_assemble's cap: a missing
 * role gets a member of its own there); free frees whatever is in it.
 */
#define MEM_MEMBERS_ROOM RAID_MAX_MEMBERS
struct raid_member *mem_members_create(unsigned n, uint64_t size);
/* Members of different sizes. */
struct raid_member *mem_members_create_sizes(unsigned n, const uint64_t *sizes);
void mem_members_free(struct raid_member *m, unsigned n);
struct mem_member *mem_of(struct raid_member *m);

#endif
