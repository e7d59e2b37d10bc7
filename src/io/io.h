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
 * A read or write carries its memory one of two ways: one buffer (buf,
 * nr_iov == 0: the common case, exactly as before vectors existed), or a
 * list of nr_iov segments (iov) whose lengths add up to len.  The batch
 * (src/io/batch.c) makes a vectored request where pieces continue
 * each other on the member but not in memory: RAID 0 over 2 members puts a
 * member's chunks 2 chunks apart in the client's buffer, and one preadv
 * per member replaces one pread per chunk (Linux md gets the same from
 * the block layer, one request with several bio segments).  nr_iov is at
 * most IO_MAX_IOV, the kernel's limit for one readv/writev.
 *
 * Contract for submit_wait():
 *   - every req gets req->res = 0 or -errno, even when an earlier one failed;
 *     nothing is left in flight when it returns;
 *   - a short read or write is continued for the rest, never reported as
 *     success; a read that hits end of file is -EIO;
 *   - IO_FUA on a write makes that write durable before it completes;
 *   - a vectored request's iov/nr_iov may be advanced past the bytes done
 *     (io_req_advance); the segments are the caller's scratch, not its data;
 *   - returns 0 if all succeeded, else the first failure's -errno.
 */
#ifndef RAID_IO_H
#define RAID_IO_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct raid_member;

enum io_op {
	IO_READ,
	IO_WRITE,
	IO_FLUSH, /* fdatasync the member */
	IO_TRIM,  /* discard: file hole, or BLKDISCARD */
	IO_ZERO,  /* reads back zero, allocation kept (ZERO_RANGE) */
	IO_PUNCH, /* reads back zero, may deallocate; never writes zeros */
};

#define IO_FUA (1u << 0)

/* Segments in one vectored request: what one preadv/readv SQE takes. */
#ifdef IOV_MAX
#define IO_MAX_IOV IOV_MAX
#else
#define IO_MAX_IOV 1024 /* UIO_MAXIOV */
#endif
_Static_assert(IO_MAX_IOV <= UINT16_MAX, "io_req.nr_iov is 16 bits");

/*
 * The alignment of every buffer nbdraid allocates for member I/O (bounce
 * and parity scratch, the zero buffer): raid_open refuses an O_DIRECT
 * member that needs more.
 */
#define IO_BUF_ALIGN 4096u
/*
 * A buffer of zeros for writing zeros (the edges of a zero request, and
 * members whose filesystem cannot zero a range); raid_open refuses members
 * whose block is larger.
 */
#define IO_ZEROS_BYTES (64u << 10)
extern const unsigned char io_zeros[IO_ZEROS_BYTES];

struct io_req {
	struct raid_member *m;
	uint8_t op;	   /* enum io_op */
	uint8_t flags;	   /* IO_FUA */
	uint16_t nr_iov;   /* 0: the data is buf; else iov[0..nr_iov) */
	void *buf;	   /* nr_iov == 0 */
	struct iovec *iov; /* nr_iov > 0: len bytes in all */
	uint64_t len;
	uint64_t off;  /* member byte offset */
	uint64_t done; /* bytes completed (short I/O continuation) */
	int res;       /* 0 or -errno */
	unsigned gen;  /* m->gen when queued (member.h) */
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

/*
 * Count n more bytes of r done; a vectored request that is not finished
 * moves its iov past them, so that iov/nr_iov is always what is left.
 */
static inline void
io_req_advance(struct io_req *r, uint64_t n)
{
	r->done += n;
	if (!r->nr_iov || r->done >= r->len) {
		return;
	}
	while (n >= r->iov[0].iov_len) {
		n -= r->iov[0].iov_len;
		r->iov++;
		r->nr_iov--;
	}
	r->iov[0].iov_base = (char *)r->iov[0].iov_base + n;
	r->iov[0].iov_len -= n;
}

/* Run one request synchronously on an fd-backed member (psync.c). */
int psync_one(struct io_req *r);

#endif
