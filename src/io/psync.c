/*
 * psync.c: the reference backend: pread/pwrite loops, fdatasync, fallocate
 * and the block-device ioctls, one request after another on the calling
 * thread (a vectored request is one preadv2/pwritev2).  It is the fastest path
 * where the kernel would only punt an io_uring request to a worker thread
 * anyway (tmpfs), and the fallback the uring backend uses for what io_uring
 * cannot do (BLKDISCARD, fallocate modes a filesystem refuses).
 *
 * Zeroing, in order of preference (each refusal is latched per member):
 *   ZERO_RANGE             zero and keep the allocation (blkdev: zeroout)
 *   PUNCH_HOLE + allocate  files whose filesystem lacks ZERO_RANGE (tmpfs);
 *                          only once allocating is known to work (asked
 *                          first, before anything changed: ext2 and ext4
 *                          files without extents punch but cannot
 *                          allocate, and a zero must neither leave a hole
 *                          where the client forbade one nor report
 *                          failure after changing data)
 *   -EOPNOTSUPP            nothing changed; the caller decides (another
 *                          member's mode, or nbdkit writing zeros)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io.h"
#include "member.h"

/* One buffer or a vectored request's segments: the same loop. */
static int
psync_rw(struct io_req *r)
{
	while (r->done < r->len) {
		struct iovec one = { (char *)r->buf + r->done,
				     r->len - r->done };
		const struct iovec *iov = r->nr_iov ? r->iov : &one;
		int cnt = r->nr_iov ? r->nr_iov : 1;
		ssize_t n;

		if (r->op == IO_READ) {
			n = preadv2(r->m->fd, iov, cnt, r->off + r->done, 0);
		} else {
			n = pwritev2(r->m->fd, iov, cnt, r->off + r->done,
				     (r->flags & IO_FUA) ? RWF_DSYNC : 0);
		}
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		if (n == 0) {
			return -EIO; /* end of member: it shrank under us */
		}
		io_req_advance(r, n);
	}
	return 0;
}

static int
falloc(struct io_req *r, int mode)
{
	return fallocate(r->m->fd, mode, r->off, r->len) < 0 ? -errno : 0;
}

static bool
unsupported(int r)
{
	return r == -EOPNOTSUPP || r == -ENOSYS || r == -ENOTTY;
}

/*
 * Does fallocate mode 0 work on this member?  Asked with the range itself:
 * allocating changes no byte of it.  Both answers are latched.
 */
static int
can_alloc(struct io_req *r)
{
	struct raid_member *m = r->m;
	int ret;

	if (atomic_load(&m->alloc_ok)) {
		return 0;
	}
	if (atomic_load(&m->no_alloc)) {
		return -EOPNOTSUPP;
	}
	ret = falloc(r, FALLOC_FL_KEEP_SIZE);
	if (unsupported(ret)) {
		atomic_store(&m->no_alloc, true);
		return -EOPNOTSUPP;
	}
	if (ret == 0) {
		atomic_store(&m->alloc_ok, true);
	}
	return ret;
}

static int
psync_zero(struct io_req *r)
{
	struct raid_member *m = r->m;
	int ret;

	if (!atomic_load(&m->no_zero_range)) {
		ret = falloc(r, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE);
		if (!unsupported(ret)) {
			return ret;
		}
		atomic_store(&m->no_zero_range, true);
	}
	if (m->is_blk || atomic_load(&m->no_punch)) {
		return -EOPNOTSUPP;
	}
	ret = can_alloc(r);
	if (ret < 0) {
		return ret;
	}
	ret = falloc(r, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
	if (unsupported(ret)) {
		atomic_store(&m->no_punch, true);
		return -EOPNOTSUPP;
	}
	return ret < 0 ? ret : falloc(r, FALLOC_FL_KEEP_SIZE);
}

static int
psync_punch(struct io_req *r)
{
	int ret;

	if (atomic_load(&r->m->no_punch)) {
		return -EOPNOTSUPP;
	}
	ret = falloc(r, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
	if (unsupported(ret)) {
		atomic_store(&r->m->no_punch, true);
		return -EOPNOTSUPP;
	}
	return ret;
}

static int
psync_trim(struct io_req *r)
{
	uint64_t range[2] = { r->off, r->len };

	int ret;

	if (!r->m->is_blk) {
		return psync_punch(r);
	}
	if (atomic_load(&r->m->no_discard)) {
		return -EOPNOTSUPP;
	}
	ret = ioctl(r->m->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	if (unsupported(ret)) {
		atomic_store(&r->m->no_discard, true);
		return -EOPNOTSUPP;
	}
	return ret;
}

int
psync_one(struct io_req *r)
{
	switch (r->op) {
	case IO_READ:
	case IO_WRITE:
		return psync_rw(r);
	case IO_FLUSH:
		return fdatasync(r->m->fd) < 0 ? -errno : 0;
	case IO_TRIM:
		return psync_trim(r);
	case IO_ZERO:
		return psync_zero(r);
	case IO_PUNCH:
		return psync_punch(r);
	}
	return -EINVAL;
}

static int
psync_submit_wait(struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		reqs[i].res = psync_one(&reqs[i]);
	}
	return io_first_error(reqs, nr);
}

/* clang-format off */
const struct io_backend psync_backend = {
	.name        = "psync",
	.submit_wait = psync_submit_wait,
};
/* clang-format on */
