/*
 * io.h: the one seam under all member I/O.
 *
 * A client request becomes a batch of `struct io_req`, one per member range.
 * The backend of the members runs the whole batch and returns when every
 * request has completed: io_uring submits them all at once and reaps every
 * completion (uring.c); psync runs pread/pwrite loops inline (psync.c); the
 * unit tests' memory backend fails, shortens or corrupts on demand
 * (tests/lib/mem_backend.c).
 *
 * Contract for submit_wait():
 *   - every req gets req->res = 0 or -errno, even when an earlier one failed;
 *     nothing is left in flight when it returns;
 *   - a short read or write is continued for the rest, never reported as
 *     success; a read that hits end of file is -EIO;
 *   - IO_FUA on a write makes that write durable before it completes;
 *   - returns 0 if all succeeded, else the first failure's -errno.
 */
#ifndef RAID_IO_H
#define RAID_IO_H

#include <stdbool.h>
#include <stdint.h>

struct raid_member;

enum io_op {
	IO_READ,
	IO_WRITE,
	IO_FLUSH,   /* fdatasync the member */
	IO_TRIM,    /* discard: file hole, or BLKDISCARD */
	IO_ZERO,    /* reads back zero, allocation kept (ZERO_RANGE) */
	IO_PUNCH,   /* reads back zero, may deallocate; never writes zeros */
};

#define IO_FUA (1u << 0)

struct io_req {
	struct raid_member *m;
	uint8_t op;             /* enum io_op */
	uint8_t flags;          /* IO_FUA */
	void *buf;
	uint64_t len;
	uint64_t off;           /* member byte offset */
	uint64_t done;          /* bytes completed (short I/O continuation) */
	int res;                /* 0 or -errno */
};

struct io_backend {
	const char *name;
	int (*submit_wait)(struct io_req *reqs, unsigned nr);
};

extern const struct io_backend uring_backend;
extern const struct io_backend psync_backend;

/* The first failed request's -errno, or 0. */
static inline int
io_first_error(const struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		if (reqs[i].res < 0) {
			return reqs[i].res;
		}
	}
	return 0;
}

/* Run one request synchronously on an fd-backed member (psync.c). */
int psync_one(struct io_req *r);

#endif
