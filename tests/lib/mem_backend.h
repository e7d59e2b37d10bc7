/*
 * mem_backend.h: in-memory members behind struct io_backend, for unit tests
 * without files, root or io_uring.  Each member can be told to fail its
 * n-th request (and some after it: the core retries a failure once), every
 * request, or the requests over a bad range, with a chosen errno, or
 * refuse some ops
 * (EOPNOTSUPP, as a filesystem without punch hole); every request is
 * counted by op (a vectored one once, whatever its segments), and the flags
 * of writes and the iovec segments of vectored requests are recorded.  Like
 * the kernel, a member refuses (EINVAL) a request of more than IO_MAX_IOV
 * segments and, when the test sets its mem_align/io_align, any buffer,
 * segment, offset or length O_DIRECT would refuse.
 */
#ifndef MEM_BACKEND_H
#define MEM_BACKEND_H

#include <pthread.h>
#include <stdint.h>

#include "io/io.h"
#include "member.h"

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
	unsigned refuse_ops; /* 1 << op: refused with EOPNOTSUPP, as a
				filesystem refuses an fallocate mode */
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
