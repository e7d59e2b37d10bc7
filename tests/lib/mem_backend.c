/* mem_backend.c: in-memory fault-injecting members (see mem_backend.h). */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mem_backend.h"

struct mem_member *
mem_of(struct raid_member *m)
{
	return m->priv;
}

/* Copy a request's data to (read) or from (write) member offset r->off. */
static void
mem_copy(struct mem_member *mm, struct io_req *r)
{
	struct iovec one = { r->buf, r->len };
	const struct iovec *iov = r->nr_iov ? r->iov : &one;
	unsigned cnt = r->nr_iov ? r->nr_iov : 1;
	uint64_t at = r->off;

	for (unsigned i = 0; i < cnt; i++) {
		if (r->op == IO_READ) {
			memcpy(iov[i].iov_base, mm->data + at, iov[i].iov_len);
		} else {
			memcpy(mm->data + at, iov[i].iov_base, iov[i].iov_len);
		}
		at += iov[i].iov_len;
	}
	assert(at == r->off + r->len);
}

/*
 * What the kernel refuses with EINVAL: more segments than one readv takes,
 * and, on a member that asks for O_DIRECT alignment (mem_align/io_align
 * set by the test), an offset, length, buffer or segment not aligned.
 */
static bool
mem_refuses(const struct io_req *r)
{
	struct iovec one = { r->buf, r->len };
	const struct iovec *iov = r->nr_iov ? r->iov : &one;
	unsigned cnt = r->nr_iov ? r->nr_iov : 1;
	uint64_t ma = r->m->mem_align, ia = r->m->io_align;

	if (r->op != IO_READ && r->op != IO_WRITE) {
		return false;
	}
	if (r->nr_iov > IO_MAX_IOV || (r->off | r->len) % ia) {
		return true;
	}
	for (unsigned i = 0; i < cnt; i++) {
		if ((uintptr_t)iov[i].iov_base % ma || iov[i].iov_len % ia) {
			return true;
		}
	}
	return false;
}

void
mem_gate_init(struct mem_gate *g, unsigned ops, uint64_t off, uint64_t len,
	      unsigned skip)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->ops = ops;
	g->off = off;
	g->len = len;
	g->skip = skip;
	g->shut = true;
}

bool
mem_gate_wait(struct mem_gate *g, unsigned n, unsigned timeout_ms)
{
	struct timespec until;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&g->lock);
	while (g->held < n && ok) {
		ok = pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0 ||
		     g->held >= n;
	}
	pthread_mutex_unlock(&g->lock);
	return ok;
}

void
mem_gate_open(struct mem_gate *g, int fail_errno)
{
	pthread_mutex_lock(&g->lock);
	g->fail_errno = fail_errno;
	g->shut = false;
	__atomic_store_n(&g->opened, 1, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

void
mem_gate_destroy(struct mem_gate *g)
{
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
}

/* Hold r at m's gate if it matches; 0, or the errno it fails with. */
static int
gate_pass(struct mem_gate *g, const struct io_req *r)
{
	int err = 0;

	if (!g || !(g->ops & (1u << r->op)) || r->off >= g->off + g->len ||
	    g->off >= r->off + r->len) {
		return 0;
	}
	pthread_mutex_lock(&g->lock);
	if (g->seen++ >= g->skip) {
		if (g->shut) {
			g->held++;
			pthread_cond_broadcast(&g->cond);
		}
		while (g->shut) {
			pthread_cond_wait(&g->cond, &g->lock);
		}
		err = g->fail_errno;
	}
	pthread_mutex_unlock(&g->lock);
	return err;
}

static int
mem_one_locked(struct io_req *r, unsigned ops)
{
	struct mem_member *mm = mem_of(r->m);

	if (mm->fail_always ||
	    (mm->fail_at && ops >= mm->fail_at &&
	     ops < mm->fail_at + (mm->fail_times ? mm->fail_times : 1))) {
		return -mm->fail_errno;
	}
	if (r->off < mm->bad_off + mm->bad_len &&
	    mm->bad_off < r->off + r->len) {
		if (mm->bad_ops & (1u << r->op)) {
			return -mm->fail_errno;
		}
		if (mm->bad_heal && r->op == IO_WRITE) {
			mm->bad_ops = 0; /* the disk remapped the sector */
		}
	}
	if (mm->refuse_ops & (1u << r->op)) {
		return -EOPNOTSUPP;
	}
	if (mem_refuses(r)) {
		return -EINVAL;
	}
	if (r->op != IO_FLUSH &&
	    (r->off > mm->size || r->len > mm->size - r->off)) {
		return -EIO;
	}
	switch (r->op) {
	case IO_READ:
		mem_copy(mm, r);
		break;
	case IO_WRITE:
		mem_copy(mm, r);
		__atomic_fetch_add(&mm->fua_writes, !!(r->flags & IO_FUA),
				   __ATOMIC_RELAXED);
		break;
	case IO_TRIM:
	case IO_ZERO:
	case IO_PUNCH:
		memset(mm->data + r->off, 0, r->len);
		break;
	}
	r->done = r->len;
	__atomic_fetch_add(&mm->done[r->op], 1, __ATOMIC_SEQ_CST);
	return 0;
}

/*
 * One request, its data moved under the member's lock: a request is
 * atomic on a memory member (a disk gives old, new or a mix of sectors to
 * a read beside a write of the same bytes, never a data race in the
 * program: ThreadSanitizer checks the core, not this model of a disk).
 */
static int
mem_one(struct io_req *r)
{
	struct mem_member *mm = mem_of(r->m);
	unsigned ops;
	int gate_err, res;

	if (mm->delay_us) {
		usleep(mm->delay_us);
	}
	gate_err = gate_pass(mm->gate, r);
	if (gate_err) {
		return -gate_err;
	}
	/* Counted atomically: threads writing one member at once (stripe
	 * gathering's writers, the concurrency cases) lose no count. */
	ops = __atomic_add_fetch(&mm->ops, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mm->count[r->op], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mm->vectored, r->nr_iov > 0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mm->segments, r->nr_iov, __ATOMIC_RELAXED);
	pthread_mutex_lock(&mm->lock);
	res = mem_one_locked(r, ops);
	pthread_mutex_unlock(&mm->lock);
	return res;
}

static int
mem_submit_wait(struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		reqs[i].res = mem_one(&reqs[i]);
	}
	return io_first_error(reqs, nr);
}

const struct io_backend mem_backend = {
	.name = "mem",
	.submit_wait = mem_submit_wait,
};

struct raid_member *
mem_members_create_sizes(unsigned n, const uint64_t *sizes)
{
	struct raid_member *m = calloc(n + MEM_MEMBERS_ROOM, sizeof(*m));

	for (unsigned i = 0; m && i < n; i++) {
		struct mem_member *mm = calloc(1, sizeof(*mm));

		mm->size = sizes[i];
		mm->data = calloc(1, sizes[i]);
		mm->fail_errno = EIO;
		pthread_mutex_init(&mm->lock, NULL);
		m[i].role = i;
		m[i].fd = -1;
		m[i].path = malloc(32);
		snprintf(m[i].path, 32, "mem%u", i);
		m[i].size = sizes[i];
		m[i].mem_align = m[i].io_align = m[i].discard_align = 1;
		m[i].be = &mem_backend;
		m[i].priv = mm;
		m[i].ino = i + 1; /* distinct identities */
	}
	return m;
}

struct raid_member *
mem_members_create(unsigned n, uint64_t size)
{
	uint64_t sizes[RAID_MAX_MEMBERS];

	for (unsigned i = 0; i < n; i++) {
		sizes[i] = size;
	}
	return mem_members_create_sizes(n, sizes);
}

void
mem_members_free(struct raid_member *m, unsigned n)
{
	/* Assembly may have moved members into the room after n. */
	for (unsigned i = 0; m && i < n + MEM_MEMBERS_ROOM; i++) {
		struct mem_member *mm = m[i].priv;

		if (mm) {
			free(mm->data);
			free(mm);
		}
		free(m[i].path);
	}
	free(m);
}
