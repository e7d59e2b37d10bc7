/*
 * uring.c: the io_uring backend: one ring per thread, one submit per batch.
 *
 * DESIGN
 * Each nbdkit worker thread gets its own ring, created lazily on its first
 * I/O and freed by a pthread key destructor when the thread exits, so no
 * ring is shared and no lock is taken (liburing's SQ tail is unlocked:
 * SINGLE_ISSUER).  A ring made before a fork (I/O at start: the superblocks,
 * cache=log's replay and flush) is not the child's to submit to (a
 * SINGLE_ISSUER ring refuses any other task: EEXIST), so the child forgets
 * the forking thread's ring (pthread_atfork) and makes its own; nbdkit
 * --run forks after the plugin opened the array.  A batch queues an
 * SQE per request (user_data = the io_req), submits, and reaps until every
 * request is done; a batch larger than the ring is fed in as slots free up.
 * A short read or write is requeued for the rest (a vectored one from the
 * segment where it stopped: io_req_advance).  What io_uring cannot do
 * (BLKDISCARD; fallocate modes a filesystem refuses) runs through psync.c,
 * and so does a batch of one request, which has nothing to overlap with.
 *
 * A ring that fails (io_uring_enter refusing with anything but a transient
 * EINTR/EAGAIN/EBUSY) is dropped from its thread: what it still has in
 * flight is reaped, and every request it did not finish is finished
 * through psync.c; the thread's next batch makes a new ring.  One bad ring
 * costs a log line, not the server.
 *
 * Invariant: when submit_wait() returns, this ring has nothing in flight.
 */
#include <errno.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "log.h"
#include "member.h"
#include "tls.h"

#define RING_DEPTH   64
#define REQ_PENDING  1	  /* io_req.res of a request not finished yet */
#define REAP_TRIES   100  /* a failed ring: waits for what it has in flight, */
#define REAP_WAIT_US 1000 /* ...this long apart */

static void
ring_free(void *p)
{
	io_uring_queue_exit(p);
	free(p);
}

static struct tls_key ring_key = TLS_KEY_INIT(ring_free);
static _Thread_local struct io_uring *tl_ring;

/* Forget this thread's ring: the next batch makes a new one. */
static void
ring_drop(void)
{
	tl_ring = NULL;
	tls_attach(&ring_key, NULL);
}

/*
 * In the child of a fork, only the forking thread runs on: its ring (the
 * parent's: its memory a copy, its submitter the parent's task) is closed
 * here, and the next batch makes the child's own.  No lock (another
 * thread of the parent may have held one at the fork): this thread's
 * tls_attach made the key before it set tl_ring.
 */
static void
ring_after_fork_child(void)
{
	struct io_uring *ring = tl_ring;

	if (ring) {
		tl_ring = NULL;
		pthread_setspecific(ring_key.key, NULL);
		ring_free(ring);
	}
}

static void
ring_atfork_once(void)
{
	pthread_atfork(NULL, NULL, ring_after_fork_child);
}

/* This thread's ring; the newest setup flags first, as older kernels refuse. */
static struct io_uring *
ring_get(int *err)
{
	static const unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	struct io_uring *ring;

	static pthread_once_t atfork = PTHREAD_ONCE_INIT;

	if (tl_ring) {
		return tl_ring;
	}
	pthread_once(&atfork, ring_atfork_once);
	ring = calloc(1, sizeof(*ring));
	if (!ring) {
		*err = -ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < 3; i++) {
		struct io_uring_params p = { .flags = tries[i] };

		*err = io_uring_queue_init_params(RING_DEPTH, ring, &p);
		if (*err != -EINVAL) {
			break;
		}
	}
	if (*err < 0) {
		free(ring);
		return NULL;
	}
	*err = tls_attach(&ring_key, ring);
	if (*err < 0) {
		ring_free(ring);
		return NULL;
	}
	tl_ring = ring;
	return ring;
}

/* Requests io_uring cannot express, run inline. */
static bool
needs_sync(const struct io_req *r)
{
	return r->op == IO_TRIM && r->m->is_blk;
}

static void
prep(struct io_uring_sqe *sqe, struct io_req *r)
{
	int fd = r->m->fd;

	switch (r->op) {
	case IO_READ:
		if (r->nr_iov) {
			io_uring_prep_readv(sqe, fd, r->iov, r->nr_iov,
					    r->off + r->done);
		} else {
			io_uring_prep_read(sqe, fd, (char *)r->buf + r->done,
					   r->len - r->done, r->off + r->done);
		}
		break;
	case IO_WRITE:
		if (r->nr_iov) {
			io_uring_prep_writev(sqe, fd, r->iov, r->nr_iov,
					     r->off + r->done);
		} else {
			io_uring_prep_write(sqe, fd, (char *)r->buf + r->done,
					    r->len - r->done, r->off + r->done);
		}
		if (r->flags & IO_FUA) {
			sqe->rw_flags = RWF_DSYNC;
		}
		break;
	case IO_FLUSH:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case IO_TRIM:
	case IO_PUNCH:
		io_uring_prep_fallocate(
			sqe, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			r->off, r->len);
		break;
	case IO_ZERO:
		io_uring_prep_fallocate(
			sqe, fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			r->off, r->len);
		break;
	}
	io_uring_sqe_set_data(sqe, r);
}

/*
 * Account one completion: true when the request is finished (res set),
 * false when it must be queued again (res stays REQ_PENDING).
 */
static bool
complete(struct io_req *r, int res)
{
	if (res == -EINTR || res == -EAGAIN) {
		return false;
	}
	if (res < 0) {
		/* A mode this filesystem lacks: psync knows the fallbacks. */
		bool fallback = (r->op == IO_ZERO || r->op == IO_PUNCH ||
				 r->op == IO_TRIM) &&
				res == -EOPNOTSUPP;

		r->res = fallback ? psync_one(r) : res;
		return true;
	}
	if (r->op != IO_READ && r->op != IO_WRITE) {
		r->res = 0;
		return true;
	}
	if (res == 0) {
		r->res = -EIO; /* end of member */
		return true;
	}
	io_req_advance(r, res);
	if (r->done < r->len) {
		return false;
	}
	r->res = 0;
	return true;
}

/* Reap what has completed; requeue short transfers.  Returns reqs done. */
static unsigned
reap(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0, finished = 0;

	io_uring_for_each_cqe(ring, head, cqe)
	{
		struct io_req *r = io_uring_cqe_get_data(cqe);

		seen++;
		if (complete(r, cqe->res)) {
			finished++;
		} else {
			/* A slot is free: this request's own, just reaped. */
			prep(io_uring_get_sqe(ring), r);
		}
	}
	io_uring_cq_advance(ring, seen);
	return finished;
}

/*
 * The ring failed with err: reap what the kernel has in flight (inflight
 * prepared, of which the last io_uring_sq_ready() never reached it), drop
 * the ring, and finish every unfinished request through psync.  A request
 * still in the kernel after REAP_TRIES waits cannot be finished or retried
 * safely: it fails with EIO and its ring is leaked, never reused.
 */
static void
ring_failed(struct io_uring *ring, struct io_req *reqs, unsigned nr,
	    unsigned inflight, int err)
{
	unsigned in_kernel = inflight - io_uring_sq_ready(ring);
	struct io_uring_cqe *cqe;

	raid_error(
		"io_uring_submit_and_wait: %s: this thread's ring is dropped; its requests finish through pread/pwrite",
		strerror(-err));
	ring_drop();
	for (unsigned tries = 0; in_kernel && tries < REAP_TRIES; tries++) {
		if (io_uring_wait_cqe(ring, &cqe) < 0) {
			usleep(REAP_WAIT_US);
			continue;
		}
		complete(io_uring_cqe_get_data(cqe), cqe->res);
		io_uring_cqe_seen(ring, cqe);
		in_kernel--;
	}
	if (in_kernel) {
		raid_error("io_uring: %u requests lost in a failed ring",
			   in_kernel);
	}
	for (unsigned i = 0; i < nr; i++) {
		if (reqs[i].res == REQ_PENDING) {
			reqs[i].res = in_kernel ? -EIO : psync_one(&reqs[i]);
		}
	}
	if (!in_kernel) {
		ring_free(ring);
	}
}

static int
uring_submit_wait(struct io_req *reqs, unsigned nr)
{
	unsigned next = 0, inflight = 0;
	struct io_uring *ring;
	int err = 0;

	/*
	 * A lone request has nothing to overlap with: pread/pwrite on this
	 * thread completes it with one syscall and no io-wq hop (buffered
	 * writes on ext4 go through io-wq: docs/benchmarking.md).
	 */
	if (nr == 1) {
		return psync_backend.submit_wait(reqs, nr);
	}
	ring = ring_get(&err);
	if (!ring) {
		raid_debug("io_uring_queue_init: %d: using psync", err);
		return psync_backend.submit_wait(reqs, nr);
	}
	for (unsigned i = 0; i < nr; i++) {
		reqs[i].res = REQ_PENDING;
	}
	while (next < nr || inflight) {
		for (; next < nr && inflight < RING_DEPTH; next++) {
			if (needs_sync(&reqs[next])) {
				reqs[next].res = psync_one(&reqs[next]);
				continue;
			}
			prep(io_uring_get_sqe(ring), &reqs[next]);
			inflight++;
		}
		if (!inflight) {
			break;
		}
		/*
		 * One syscall submits the batch and waits for all of it; a
		 * batch larger than the ring waits for a slot to refill.
		 */
		err = io_uring_submit_and_wait(ring, next < nr ? 1 : inflight);
		if (err < 0 && err != -EINTR && err != -EAGAIN &&
		    err != -EBUSY) {
			ring_failed(ring, reqs, nr, inflight, err);
			break;
		}
		inflight -= reap(ring);
	}
	return io_first_error(reqs, nr);
}

/* clang-format off */
const struct io_backend uring_backend = {
	.name        = "uring",
	.submit_wait = uring_submit_wait,
};
/* clang-format on */
