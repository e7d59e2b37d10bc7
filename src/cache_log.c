/*
 * cache_log.c: the cache's persistent log (cache_log.h): open, append,
 * sync, retire, replay.  The format, and reading it, in cache_log_disk.c;
 * documented in docs/cache.md "The log format".
 *
 * DESIGN
 *   0       4K      8K                                        log_bytes
 *   | hdr 0 | hdr 1 | rec | data... | rec | rec | data | skip..|
 *                     ^tail (checkpoint)        ^head
 * Two header slots: write number g goes to slot g % 2, so a torn header
 * write leaves the other, older one.  The header holds the checkpoint:
 * tail (where the oldest record not retired is) and tail_prev (the last
 * record retired).  Records form a chain: each holds its own position,
 * its seq and prev (the seq of the record before it); replay starts at
 * tail expecting prev == tail_prev, and each next record must say it
 * follows the one before.  Sequence numbers are never reused, across
 * crashes too: the header leases them (seq_limit: none at or above it
 * was handed out), each open starts at the lease and takes a new one, so
 * after a torn record the next run continues with a gap (md's +10000
 * rule, made exact) and a stale record past the tear can never follow a
 * new one.  A record never straddles the end: a skip record pads to it.
 *
 * INVARIANTS
 *   - space is reused only after the header moving tail past it is
 *     durable (retire writes, syncs, then frees);
 *   - ring[r_tail, r_head) are the records between tail and head, in
 *     seq order; ring[r_tail, r_done) have been written, so `written`
 *     is the seq of ring[r_done - 1] (every record up to it is written);
 *   - one clog_sync fdatasync at a time; durable <= written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_log_int.h"
#include "io/fault.h"
#include "io/io.h"
#include "util.h"

void (*clog_sync_hook)(struct clog *l);
int (*clog_fault_hook)(struct clog *l, bool sync);
uint64_t clog_seq_lease = 1u << 20;

int
clog_open(const char *path, const uint8_t uuid[16], uint64_t array_size,
	  bool create, bool force, struct clog **out, char *why, size_t wl)
{
	struct clog *l = clog_new(path);
	struct clog_hdr h;
	struct scan s;
	uint64_t size, area;
	int r;

	*out = NULL;
	if (!l) {
		return -ENOMEM;
	}
	if ((r = clog_fd_open(l, true, &size, why, wl)) < 0) {
		goto err;
	}
	if (size < CLOG_MIN_BYTES) {
		r = clog_fail(
			why, wl, -EINVAL,
			"%s: too small for a cache log: %llu bytes, at least %u",
			path, (unsigned long long)size, CLOG_MIN_BYTES);
		goto err;
	}
	if ((r = clog_open_header(l, uuid, array_size, create, force, size, why,
				  wl)) < 0) {
		goto err;
	}
	h = l->hdr;
	memcpy(l->log_uuid, h.log_uuid, 16);
	l->array_size = array_size;
	l->start = AREA_START;
	l->end = h.log_bytes;
	area = l->end - l->start;
	l->cap = area / CLOG_BLOCK + 2;
	l->ring = calloc(l->cap, sizeof(*l->ring));
	if (!l->ring) {
		r = -ENOMEM;
		goto err;
	}
	if ((r = clog_scan(l, &h, UINT64_MAX, true, &s, why, wl)) < 0) {
		goto err;
	}
	if (s.data_end > array_size) {
		r = clog_fail(
			why, wl, -EINVAL,
			"%s: holds records up to array byte %llu, but the array is %llu bytes",
			path, (unsigned long long)s.data_end,
			(unsigned long long)array_size);
		goto err;
	}
	l->found = l->r_done = l->r_head;
	l->head = s.end;
	l->used = s.record_bytes;
	l->last_seq = s.last;
	/* Every seq below the lease may have been used: continue past it. */
	l->next_seq = h.seq_limit;
	h.seq_limit += MAX(clog_seq_lease, 2);
	if (h.seq_limit > CLOG_SEQ_MAX) {
		r = clog_fail(why, wl, -EINVAL,
			      "%s: seq_limit %llu: no sequence numbers left "
			      "below 2^62 (a damaged or crafted header)",
			      path, (unsigned long long)l->next_seq);
		goto err;
	}
	h.array_size = array_size;
	if ((r = clog_hdr_write(l, &h)) < 0) {
		r = clog_fail(why, wl, r, "%s: write header: %s", path,
			      strerror(-r));
		goto err;
	}
	l->seq_limit = h.seq_limit;
	l->written = l->durable = l->next_seq - 1;
	*out = l;
	return 0;
err:
	clog_free(l);
	return r;
}

void
clog_set_fault(struct clog *l, struct fault *f)
{
	l->fault = f;
}

void
clog_close(struct clog *l)
{
	clog_free(l);
}

/* ---- append, sync, retire ---- */

uint32_t
clog_max_len(struct clog *l)
{
	/* Half the area: an empty log always has room (cache.md). */
	uint64_t half = ROUND_DOWN((l->end - l->start) / 2, CLOG_BLOCK);

	return (uint32_t)MIN(CLOG_MAX_LEN, half - CLOG_BLOCK);
}

/* Take the next seq (caller holds lock) into a new ring entry. */
static struct clog_ent *
push(struct clog *l, uint32_t type, uint64_t pos, uint64_t size)
{
	struct clog_ent *e = &l->ring[l->r_head++ % l->cap];

	*e = (struct clog_ent){ .seq = l->next_seq++,
				.prev = l->last_seq,
				.pos = pos,
				.size = size,
				.type = type };
	l->last_seq = e->seq;
	return e;
}

/* Sequence numbers about to run past the header's lease: extend it. */
static int
lease_extend(struct clog *l)
{
	struct clog_hdr h;
	int r = 0;

	pthread_mutex_lock(&l->hdr_lock);
	pthread_mutex_lock(&l->lock);
	h = l->hdr;
	h.seq_limit = l->seq_limit + MAX(clog_seq_lease, 2);
	if (l->next_seq + 2 <= l->seq_limit) {
		h.seq_limit = 0; /* another did it */
	} else if (h.seq_limit > CLOG_SEQ_MAX) {
		/* 2^42 opens or records: never, but never a loop either. */
		h.seq_limit = 0;
		r = -EOVERFLOW;
		l->error = l->error ? l->error : r;
	}
	pthread_mutex_unlock(&l->lock);
	if (h.seq_limit) {
		r = clog_hdr_write(l, &h);
		pthread_mutex_lock(&l->lock);
		l->seq_limit = r == 0 ? h.seq_limit : l->seq_limit;
		l->error = r < 0 && !l->error ? r : l->error;
		pthread_mutex_unlock(&l->lock);
	}
	pthread_mutex_unlock(&l->hdr_lock);
	return r;
}

/*
 * Reserve room for a record of size bytes (and a skip before it when it
 * would cross the end): its ring entries in e[0..*n).  Holds lock.
 */
static int
reserve(struct clog *l, uint32_t type, uint64_t size, struct clog_ent **e,
	unsigned *n)
{
	uint64_t pad = l->head + size > l->end ? l->end - l->head : 0;

	if (l->used + pad + size > l->end - l->start) {
		return -ENOSPC;
	}
	*n = 0;
	if (pad) {
		e[(*n)++] = push(l, CLOG_SKIP, l->head, pad);
		l->head = l->start;
	}
	e[(*n)++] = push(l, type, l->head, size);
	l->head += size;
	l->head = l->head == l->end ? l->start : l->head;
	l->used += pad + size;
	return 0;
}

static int
rec_write(struct clog *l, const struct clog_ent *e, uint64_t offset,
	  uint32_t len, const void *data)
{
	uint8_t b[CLOG_BLOCK] __attribute__((aligned(CLOG_BLOCK)));
	struct iovec iov[3] = { { b, CLOG_BLOCK } };
	uint64_t padded = ROUND_UP(len, CLOG_BLOCK);
	void *bounce = NULL;
	int n = 1, r;

	if (e->type == CLOG_SKIP) {
		offset = len = 0;
	}
	clog_rec_encode(b, e, l->log_uuid, offset, len, data);
	if (e->type == CLOG_WRITE && !l->direct) {
		iov[n++] = (struct iovec){ (void *)data, len };
		if (padded > len) {
			iov[n++] = (struct iovec){ (void *)io_zeros,
						   padded - len };
		}
	} else if (e->type == CLOG_WRITE && IS_ALIGNED(data, CLOG_BLOCK) &&
		   padded == len) {
		iov[n++] = (struct iovec){ (void *)data, len };
	} else if (e->type == CLOG_WRITE) {
		if (posix_memalign(&bounce, CLOG_BLOCK, padded)) {
			return -ENOMEM;
		}
		memcpy(bounce, data, len);
		memset((uint8_t *)bounce + len, 0, padded - len);
		iov[n++] = (struct iovec){ bounce, padded };
	}
	r = clog_fault_hook ? clog_fault_hook(l, false) : 0;
	if (r == 0 && l->fault) {
		r = fault_log_decide(l->fault, l->path, true, e->pos,
				     clog_rec_size(e->type, len));
	}
	if (r == 0) {
		r = clog_pwritev_all(l->fd, iov, n, e->pos);
	}
	free(bounce);
	return r;
}

/* Mark entries written; move `written` over every finished one. */
static void
finish(struct clog *l, struct clog_ent **e, unsigned n, int r)
{
	uint64_t before;

	pthread_mutex_lock(&l->lock);
	for (unsigned i = 0; i < n; i++) {
		e[i]->done = true;
	}
	l->error = r < 0 && !l->error ? r : l->error;
	before = l->written;
	while (l->r_done < l->r_head && l->ring[l->r_done % l->cap].done) {
		l->written = l->ring[l->r_done++ % l->cap].seq;
	}
	if (l->written != before || r < 0) {
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
}

int
clog_append(struct clog *l, uint32_t type, uint64_t offset, uint32_t len,
	    const void *data, uint64_t *lsn)
{
	struct clog_ent *e[2];
	unsigned n = 0;
	int r;

	if (type < CLOG_WRITE || type > CLOG_TRIM || !len ||
	    offset > l->array_size || len > l->array_size - offset ||
	    (type == CLOG_WRITE && (!data || len > clog_max_len(l)))) {
		return -EINVAL;
	}
	pthread_mutex_lock(&l->lock);
	while (!(r = l->error) && l->next_seq + 2 > l->seq_limit) {
		pthread_mutex_unlock(&l->lock);
		lease_extend(l);
		pthread_mutex_lock(&l->lock);
	}
	if (r == 0) {
		r = reserve(l, type, clog_rec_size(type, len), e, &n);
	}
	pthread_mutex_unlock(&l->lock);
	if (r < 0) {
		return r;
	}
	for (unsigned i = 0; i < n && r == 0; i++) {
		r = rec_write(l, e[i], offset, len, data);
	}
	*lsn = e[n - 1]->seq;
	__atomic_add_fetch(&l->appends, 1, __ATOMIC_RELAXED);
	finish(l, e, n, r);
	return r;
}

int
clog_sync(struct clog *l, uint64_t lsn)
{
	uint64_t target;
	int r;

	pthread_mutex_lock(&l->lock);
	lsn = lsn == CLOG_ALL ? l->next_seq - 1 : lsn;
	for (;;) {
		if (l->durable >= lsn) {
			r = 0;
			break;
		}
		if ((r = l->error)) {
			break;
		}
		if (lsn >= l->next_seq) {
			r = -EINVAL; /* never appended */
			break;
		}
		if (l->syncing || l->written < lsn) {
			l->waiters++;
			pthread_cond_wait(&l->cond, &l->lock);
			l->waiters--;
			continue;
		}
		/* The leader: one fdatasync for everything written by now. */
		l->syncing = true;
		target = l->written;
		pthread_mutex_unlock(&l->lock);
		if (clog_sync_hook) {
			clog_sync_hook(l);
		}
		r = clog_fault_hook ? clog_fault_hook(l, true) : 0;
		if (r == 0 && l->fault) {
			r = fault_log_decide(l->fault, l->path, false, 0, 0);
		}
		if (r == 0) {
			r = fdatasync(l->fd) < 0 ? -errno : 0;
		}
		pthread_mutex_lock(&l->lock);
		l->syncs++;
		l->syncing = false;
		l->error = r < 0 && !l->error ? r : l->error;
		l->durable = MAX(l->durable, r == 0 ? target : 0);
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

int
clog_retire(struct clog *l, uint64_t lsn)
{
	struct clog_hdr h;
	uint64_t last, w, freed = 0;
	int r = 0;

	pthread_mutex_lock(&l->hdr_lock);
	pthread_mutex_lock(&l->lock);
	/* Written records up to lsn, and skips right after them. */
	for (last = l->r_tail; last < l->r_done; last++) {
		const struct clog_ent *e = &l->ring[last % l->cap];

		if (e->seq > lsn && e->type != CLOG_SKIP) {
			break;
		}
		freed += e->size;
	}
	h = l->hdr;
	if (last > l->r_tail) {
		const struct clog_ent *e = &l->ring[(last - 1) % l->cap];

		h.tail = e->pos + e->size == l->end ? l->start
						    : e->pos + e->size;
		h.tail_prev = e->seq;
	}
	w = l->written;
	pthread_mutex_unlock(&l->lock);
	if (last > l->r_tail) {
		r = clog_hdr_write(l, &h);
	}
	pthread_mutex_lock(&l->lock);
	if (r == 0 && last > l->r_tail) {
		l->r_tail = last;
		l->used -= freed;
		l->durable = MAX(l->durable, w);
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_unlock(&l->hdr_lock);
	return r;
}

int
clog_replay(struct clog *l, int (*fn)(void *ctx, const struct clog_rec *r),
	    void *ctx)
{
	struct clog_hdr h;
	uint64_t first, offset;
	uint32_t len;
	int count = 0, r = 0;

	pthread_mutex_lock(&l->hdr_lock);
	h = l->hdr;
	first = l->r_tail; /* only retire moves it, under hdr_lock */
	pthread_mutex_unlock(&l->hdr_lock);
	for (uint64_t i = first; i < l->found && r >= 0; i++) {
		const struct clog_ent *want = &l->ring[i % l->cap];
		struct clog_ent e;
		struct clog_rec rec;

		r = clog_rec_read(l, &h, want->pos, want->prev, &e, &offset,
				  &len);
		if (r > 0 || (r == 0 && e.seq != want->seq)) {
			r = -EIO; /* it changed since open */
		}
		if (r < 0 || e.type == CLOG_SKIP) {
			continue;
		}
		rec = (struct clog_rec){ .lsn = e.seq,
					 .type = e.type,
					 .len = len,
					 .offset = offset };
		rec.data = e.type == CLOG_WRITE ? (uint8_t *)l->buf + CLOG_BLOCK
						: NULL;
		r = fn(ctx, &rec);
		count++;
	}
	/* The records' buffer (up to CLOG_MAX_LEN) is not kept for the
	 * log's life: the next scan or replay allocates it again. */
	free(l->buf);
	l->buf = NULL;
	l->buf_len = 0;
	return r < 0 ? r : count;
}

void
clog_space(struct clog *l, uint64_t *used, uint64_t *total)
{
	pthread_mutex_lock(&l->lock);
	*used = l->used;
	*total = l->end - l->start;
	pthread_mutex_unlock(&l->lock);
}

void
clog_stats(struct clog *l, struct clog_stats *st)
{
	pthread_mutex_lock(&l->lock);
	*st = (struct clog_stats){
		.appends = __atomic_load_n(&l->appends, __ATOMIC_RELAXED),
		.syncs = l->syncs,
		.header_writes =
			__atomic_load_n(&l->header_writes, __ATOMIC_RELAXED),
		.last_lsn = l->last_seq,
		.durable_lsn = l->durable,
		.sync_waiters = l->waiters,
		.error = l->error,
	};
	pthread_mutex_unlock(&l->lock);
}
