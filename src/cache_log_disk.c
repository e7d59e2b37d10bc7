/*
 * cache_log_disk.c: the cache log's on-disk format (docs/cache.md, "The
 * log format"): the header and record encodings, field by field from the
 * offsets below; reading and checking records and walking their chain;
 * formatting; and the read-only looks (clog_peek, clog_examine).
 *
 * Every number is little-endian.  The crc is CRC-32C (ISA-L crc32_iscsi,
 * seeded with all ones, the result inverted: the standard CRC-32C) over
 * the 128 header bytes with the crc field zero, then a write's data.
 */
#include <blkid/blkid.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_log_int.h"
#include "io/fault.h"
#include "member.h"
#include "util.h"

/* Header fields (docs/cache.md); 112..127 reserved, zero. */
#define H_MAGIC	     0
#define H_CRC	     4
#define H_VERSION    8
#define H_BLOCK	     12
#define H_ARRAY_UUID 16
#define H_LOG_UUID   32
#define H_ARRAY_SIZE 48
#define H_LOG_BYTES  56
#define H_GEN	     64
#define H_TAIL	     72
#define H_TAIL_PREV  80
#define H_SEQ_LIMIT  88
#define H_CTIME	     96
#define H_UTIME	     104
#define H_RESERVED   112
/* Record header fields; 64..127 reserved, zero. */
#define R_MAGIC	   0
#define R_CRC	   4
#define R_TYPE	   8
#define R_LEN	   12
#define R_SEQ	   16
#define R_PREV	   24
#define R_POS	   32
#define R_OFFSET   40
#define R_LOG_UUID 48
#define R_RESERVED 64

/* ---- encoding ---- */

static void
put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i]) {
			return false;
		}
	}
	return true;
}

/* CRC-32C (ISA-L crc32_iscsi: seed all ones, result inverted) over the
 * 128 header bytes with the crc field as zero, then data. */
static uint32_t
crc_of(const uint8_t *hdr, const void *data, uint32_t len)
{
	uint8_t tmp[HDR_BYTES];
	uint32_t crc;

	memcpy(tmp, hdr, HDR_BYTES);
	put32(tmp + 4, 0);
	crc = crc32_iscsi(tmp, HDR_BYTES, ~0u);
	if (len) {
		crc = crc32_iscsi((unsigned char *)data, (int)len, crc);
	}
	return ~crc;
}

static void
hdr_encode(const struct clog_hdr *h, uint8_t *b)
{
	memset(b, 0, CLOG_BLOCK);
	put32(b + H_MAGIC, LOG_MAGIC);
	put32(b + H_VERSION, LOG_VERSION);
	put32(b + H_BLOCK, CLOG_BLOCK);
	memcpy(b + H_ARRAY_UUID, h->array_uuid, 16);
	memcpy(b + H_LOG_UUID, h->log_uuid, 16);
	put64(b + H_ARRAY_SIZE, h->array_size);
	put64(b + H_LOG_BYTES, h->log_bytes);
	put64(b + H_GEN, h->gen);
	put64(b + H_TAIL, h->tail);
	put64(b + H_TAIL_PREV, h->tail_prev);
	put64(b + H_SEQ_LIMIT, h->seq_limit);
	put64(b + H_CTIME, h->ctime);
	put64(b + H_UTIME, h->utime);
	put32(b + H_CRC, crc_of(b, NULL, 0));
}

/* A field of slot `slot` out of range: -EINVAL, why naming both. */
static int
hdr_bad(char *why, size_t wl, unsigned slot, const char *field, uint64_t v,
	const char *reason)
{
	return clog_fail(why, wl, -EINVAL, "header slot %u: %s %llu: %s", slot,
			 field, (unsigned long long)v, reason);
}

/*
 * Every field of a header whose checksum is good, against the format and
 * each other (docs/cache.md, "The header"): a slot with a good checksum
 * was written whole, so a bad field is damage or a crafted file, never a
 * torn write.  0 or -EINVAL (why: the slot, the field, the reason).
 */
static int
hdr_check(const uint8_t *b, const struct clog_hdr *h, unsigned slot, char *why,
	  size_t wl)
{
	if (get32(b + H_VERSION) != LOG_VERSION) {
		return hdr_bad(why, wl, slot, "version", get32(b + H_VERSION),
			       "not 1 (a newer nbdraid?)");
	}
	if (get32(b + H_BLOCK) != CLOG_BLOCK) {
		return hdr_bad(why, wl, slot, "block", get32(b + H_BLOCK),
			       "not 4096");
	}
	if (!all_zero(b + H_RESERVED, HDR_BYTES - H_RESERVED)) {
		return clog_fail(why, wl, -EINVAL,
				 "header slot %u: reserved bytes 112..127 "
				 "not zero (a newer nbdraid?)",
				 slot);
	}
	if (h->gen > CLOG_GEN_MAX || h->gen % 2 != slot) {
		return hdr_bad(why, wl, slot, "generation", h->gen,
			       h->gen > CLOG_GEN_MAX
				       ? "past 2^62 (one per header write)"
				       : "written to the other slot "
					 "(generation g goes to slot g % 2)");
	}
	if (h->log_bytes < CLOG_MIN_BYTES || h->log_bytes > CLOG_MAX_BYTES ||
	    !IS_ALIGNED(h->log_bytes, CLOG_BLOCK)) {
		return hdr_bad(why, wl, slot, "log_bytes", h->log_bytes,
			       "not a multiple of 4096 from 1 MiB to 2^62");
	}
	if (!h->array_size || h->array_size > CLOG_MAX_BYTES) {
		return hdr_bad(why, wl, slot, "array_size", h->array_size,
			       "not from 1 to 2^62");
	}
	if (h->tail < AREA_START || h->tail >= h->log_bytes ||
	    !IS_ALIGNED(h->tail, CLOG_BLOCK)) {
		return hdr_bad(why, wl, slot, "tail", h->tail,
			       "outside the record area, or not a multiple "
			       "of 4096");
	}
	if (!h->seq_limit || h->seq_limit > CLOG_SEQ_MAX) {
		return hdr_bad(why, wl, slot, "seq_limit", h->seq_limit,
			       "not from 1 to 2^62 (each open leases 2^20: no "
			       "log gets near it)");
	}
	if (h->tail_prev >= h->seq_limit) {
		return hdr_bad(why, wl, slot, "tail_prev", h->tail_prev,
			       "not below seq_limit");
	}
	return 0;
}

/*
 * 0, -ENOENT (no magic: no header), 1 (a bad checksum: torn, bad says),
 * -EINVAL (a good checksum over a bad field: why says).
 */
static int
hdr_decode(const uint8_t *b, unsigned slot, struct clog_hdr *h,
	   const char **bad, char *why, size_t wl)
{
	if (get32(b + H_MAGIC) != LOG_MAGIC) {
		return -ENOENT;
	}
	if (get32(b + H_CRC) != crc_of(b, NULL, 0)) {
		*bad = "bad checksum";
		return 1;
	}
	memcpy(h->array_uuid, b + H_ARRAY_UUID, 16);
	memcpy(h->log_uuid, b + H_LOG_UUID, 16);
	h->array_size = get64(b + H_ARRAY_SIZE);
	h->log_bytes = get64(b + H_LOG_BYTES);
	h->gen = get64(b + H_GEN);
	h->tail = get64(b + H_TAIL);
	h->tail_prev = get64(b + H_TAIL_PREV);
	h->seq_limit = get64(b + H_SEQ_LIMIT);
	h->ctime = get64(b + H_CTIME);
	h->utime = get64(b + H_UTIME);
	return hdr_check(b, h, slot, why, wl);
}

/*
 * Two valid slots are two consecutive writes of one log: the same log,
 * array and size, generations one apart.  0 or -EINVAL (why).
 */
static int
hdr_pair_check(const struct clog_hdr *s, char *why, size_t wl)
{
	const char *what = NULL;

	if (memcmp(s[0].log_uuid, s[1].log_uuid, 16) != 0) {
		what = "log_uuid";
	} else if (memcmp(s[0].array_uuid, s[1].array_uuid, 16) != 0) {
		what = "array_uuid";
	} else if (s[0].log_bytes != s[1].log_bytes) {
		what = "log_bytes";
	} else if (s[0].gen + 1 != s[1].gen && s[1].gen + 1 != s[0].gen) {
		what = "generation";
	}
	if (!what) {
		return 0;
	}
	return clog_fail(why, wl, -EINVAL,
			 "header slots 0 and 1 differ in %s (generations "
			 "%llu and %llu): not two writes of one log",
			 what, (unsigned long long)s[0].gen,
			 (unsigned long long)s[1].gen);
}

void
clog_rec_encode(uint8_t *b, const struct clog_ent *e, const uint8_t *log_uuid,
		uint64_t offset, uint32_t len, const void *data)
{
	memset(b, 0, CLOG_BLOCK);
	put32(b + R_MAGIC, REC_MAGIC);
	put32(b + R_TYPE, e->type);
	put32(b + R_LEN, len);
	put64(b + R_SEQ, e->seq);
	put64(b + R_PREV, e->prev);
	put64(b + R_POS, e->pos);
	put64(b + R_OFFSET, offset);
	memcpy(b + R_LOG_UUID, log_uuid, 16);
	put32(b + R_CRC, crc_of(b, data, e->type == CLOG_WRITE ? len : 0));
}

uint64_t
clog_rec_size(uint32_t type, uint32_t len)
{
	return CLOG_BLOCK +
	       (type == CLOG_WRITE ? ROUND_UP(len, CLOG_BLOCK) : 0);
}

/* ---- I/O ---- */

int
clog_fail(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int
pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return n < 0 ? -errno : -EIO;
		}
		done += n;
	}
	return 0;
}

/* Write all of iov (at most 3 segments) at off; iov is consumed. */
int
clog_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, (off_t)off);

		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			return w < 0 ? -errno : -EIO;
		}
		off += w;
		while (n > 0 && (size_t)w >= iov[0].iov_len) {
			w -= iov[0].iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov[0].iov_base = (char *)iov[0].iov_base + w;
			iov[0].iov_len -= w;
		}
	}
	return 0;
}

/* Open path: rw claims it (OFD lock, O_EXCL); *size in whole blocks. */
int
clog_fd_open(struct clog *l, bool rw, uint64_t *size, char *why, size_t wl)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	unsigned lbs = 512;
	int fd;

	/* Only a file or a block device, opened so that nothing waits (a
	 * FIFO is refused before any open: member_open_path). */
	if (stat(l->path, &st) < 0) {
		return clog_fail(why, wl, -errno, "%s: %s", l->path,
				 strerror(errno));
	}
	l->direct = S_ISBLK(st.st_mode);
	fd = member_open_path(l->path,
			      l->direct ? (rw ? O_RDWR | O_EXCL : O_RDONLY) |
						  O_DIRECT
					: (rw ? O_RDWR : O_RDONLY),
			      &st);
	l->fd = fd < 0 ? -1 : fd;
	if (fd == -EBUSY && l->direct) {
		return clog_fail(
			why, wl, -EBUSY,
			"%s: in use (mounted, in an md array, or another nbdraid's log)",
			l->path);
	}
	if (fd == -EINVAL && st.st_mode) {
		return clog_fail(why, wl, -EINVAL,
				 "%s: %s, not a file or a block device",
				 l->path, member_type_name(st.st_mode));
	}
	if (fd < 0) {
		return clog_fail(why, wl, fd, "%s: open: %s", l->path,
				 strerror(-fd));
	}
	if (S_ISBLK(st.st_mode) != l->direct) {
		return clog_fail(why, wl, -EAGAIN, "%s: changed while opened",
				 l->path);
	}
	if (rw && !l->direct && fcntl(l->fd, F_OFD_SETLK, &fl) < 0) {
		int e = errno;

		if (e != EAGAIN && e != EACCES) {
			return clog_fail(why, wl, -e, "%s: lock: %s", l->path,
					 strerror(e));
		}
		return clog_fail(
			why, wl, -EBUSY,
			"%s: in use by another nbdraid (it holds the file's lock)",
			l->path);
	}
	*size = st.st_size;
	if (l->direct && (ioctl(l->fd, BLKGETSIZE64, size) < 0 ||
			  ioctl(l->fd, BLKSSZGET, &lbs) < 0)) {
		return clog_fail(why, wl, -errno, "%s: size: %s", l->path,
				 strerror(errno));
	}
	if (lbs > CLOG_BLOCK) {
		return clog_fail(why, wl, -EINVAL,
				 "%s: logical blocks of %u bytes (at most %u)",
				 l->path, lbs, CLOG_BLOCK);
	}
	*size = ROUND_DOWN(*size, CLOG_BLOCK);
	return 0;
}

/* l->buf holds at least len bytes (aligned for O_DIRECT), keeping its
 * contents. */
static int
buf_reserve(struct clog *l, size_t len)
{
	void *p;

	if (len <= l->buf_len) {
		return 0;
	}
	if (posix_memalign(&p, CLOG_BLOCK, len)) {
		return -ENOMEM;
	}
	if (l->buf) {
		memcpy(p, l->buf, l->buf_len); /* a record header read */
	}
	free(l->buf);
	l->buf = p;
	l->buf_len = len;
	return 0;
}

/*
 * The newer valid header slot: 0, -ENOENT (neither slot has the magic),
 * -EINVAL (why: the magic, but no valid slot; or a slot with a good
 * checksum and a bad field, or two that do not belong together), or an
 * I/O error.  A slot with a bad checksum is a torn write: the other one
 * is used.
 */
static int
hdr_read(struct clog *l, struct clog_hdr *h, unsigned *slot, bool *both,
	 char *why, size_t wl)
{
	struct clog_hdr s[2];
	const char *bad = "bad checksum";
	char msg[256];
	int r, rs[2];

	if ((r = buf_reserve(l, 2 * CLOG_BLOCK)) < 0 ||
	    (r = pread_all(l->fd, l->buf, 2 * CLOG_BLOCK, 0)) < 0) {
		return clog_fail(why, wl, r, "%s: read header: %s", l->path,
				 strerror(-r));
	}
	for (unsigned i = 0; i < 2; i++) {
		rs[i] = hdr_decode((uint8_t *)l->buf + i * CLOG_BLOCK, i, &s[i],
				   &bad, msg, sizeof(msg));
		if (rs[i] == -EINVAL) {
			return clog_fail(why, wl, -EINVAL,
					 "%s: damaged cache log header: %s",
					 l->path, msg);
		}
	}
	if (rs[0] == -ENOENT && rs[1] == -ENOENT) {
		return clog_fail(why, wl, -ENOENT,
				 "%s: not an nbdraid cache log (no log header)",
				 l->path);
	}
	if (rs[0] != 0 && rs[1] != 0) {
		return clog_fail(
			why, wl, -EINVAL,
			"%s: damaged cache log header (both copies: %s)",
			l->path, bad);
	}
	if (rs[0] == 0 && rs[1] == 0 && hdr_pair_check(s, msg, sizeof(msg))) {
		return clog_fail(why, wl, -EINVAL,
				 "%s: damaged cache log header: %s", l->path,
				 msg);
	}
	*slot = rs[0] != 0 || (rs[1] == 0 && s[1].gen > s[0].gen);
	*both = rs[0] == 0 && rs[1] == 0;
	*h = s[*slot];
	return 0;
}

/* Write h as the next header generation, durably; h becomes l->hdr. */
int
clog_hdr_write(struct clog *l, struct clog_hdr *h)
{
	uint8_t b[CLOG_BLOCK] __attribute__((aligned(CLOG_BLOCK)));
	struct iovec iov = { b, CLOG_BLOCK };
	int r;

	if (l->hdr.gen >= CLOG_GEN_MAX) {
		return -EOVERFLOW; /* never written: unreadable past it */
	}
	h->gen = l->hdr.gen + 1;
	h->utime = time(NULL);
	hdr_encode(h, b);
	r = l->fault ? fault_log_decide(l->fault, l->path, true,
					(h->gen % 2) * CLOG_BLOCK, CLOG_BLOCK)
		     : 0;
	if (r == 0) {
		r = clog_pwritev_all(l->fd, &iov, 1, (h->gen % 2) * CLOG_BLOCK);
	}
	if (r == 0 && l->fault) {
		r = fault_log_decide(l->fault, l->path, false, 0, 0);
	}
	if (r == 0 && fdatasync(l->fd) < 0) {
		r = -errno;
	}
	__atomic_add_fetch(&l->header_writes, 1, __ATOMIC_RELAXED);
	if (r == 0) {
		l->hdr = *h;
	}
	return r;
}

/* ---- the chain of records ---- */

/*
 * Read and check the record at pos, which must follow prev: 0 with *e
 * (and its data at l->buf + CLOG_BLOCK) when it does, 1 when it is not
 * one (the end of the chain), -errno on an I/O error.
 */
int
clog_rec_read(struct clog *l, const struct clog_hdr *h, uint64_t pos,
	      uint64_t prev, struct clog_ent *e, uint64_t *offset,
	      uint32_t *len)
{
	const uint8_t *b;
	uint64_t room = h->log_bytes - pos;
	int r;

	if ((r = buf_reserve(l, CLOG_BLOCK)) < 0 ||
	    (r = pread_all(l->fd, l->buf, CLOG_BLOCK, pos)) < 0) {
		return r;
	}
	b = l->buf;
	e->type = get32(b + R_TYPE);
	*len = get32(b + R_LEN);
	*offset = get64(b + R_OFFSET);
	e->seq = get64(b + R_SEQ);
	e->prev = get64(b + R_PREV);
	e->pos = pos;
	if (get32(b + R_MAGIC) != REC_MAGIC || get64(b + R_POS) != pos ||
	    memcmp(b + R_LOG_UUID, h->log_uuid, 16) != 0 || e->prev != prev ||
	    e->seq <= prev || e->seq >= h->seq_limit ||
	    !all_zero(b + R_RESERVED, HDR_BYTES - R_RESERVED)) {
		return 1;
	}
	if (e->type == CLOG_SKIP) {
		e->size = room;
		return *len || *offset ? 1 : 0;
	}
	e->size = clog_rec_size(e->type, *len);
	if (e->type < CLOG_WRITE || e->type > CLOG_TRIM || !*len ||
	    (e->type == CLOG_WRITE && *len > CLOG_MAX_LEN) || e->size > room ||
	    *offset > h->array_size || *len > h->array_size - *offset) {
		return 1;
	}
	if (e->type == CLOG_WRITE) {
		if ((r = buf_reserve(l, e->size)) < 0 ||
		    (r = pread_all(l->fd, (uint8_t *)l->buf + CLOG_BLOCK,
				   e->size - CLOG_BLOCK, pos + CLOG_BLOCK)) <
			    0) {
			return r;
		}
		b = l->buf;
	}
	return get32(b + R_CRC) == crc_of(b, b + CLOG_BLOCK,
					  e->type == CLOG_WRITE ? *len : 0)
		       ? 0
		       : 1;
}

/*
 * Walk the chain from the checkpoint, at most max records (skips not
 * counted); with ring, keep every entry there (l->ring, l->cap).  An I/O
 * error is said in why.
 */
int
clog_scan(struct clog *l, const struct clog_hdr *h, uint64_t max, bool ring,
	  struct scan *s, char *why, size_t wl)
{
	uint64_t pos = h->tail, prev = h->tail_prev,
		 area = h->log_bytes - AREA_START;
	struct clog_ent e;
	uint64_t offset;
	uint32_t len;
	int r = 0;

	memset(s, 0, sizeof(*s));
	s->last = prev;
	while (s->records < max && s->record_bytes < area) {
		r = clog_rec_read(l, h, pos, prev, &e, &offset, &len);
		if (r != 0 || s->record_bytes + e.size > area) {
			break;
		}
		if (ring) {
			l->ring[l->r_head++] = e;
		}
		s->record_bytes += e.size;
		if (e.type != CLOG_SKIP) {
			s->first = s->records++ ? s->first : e.seq;
			s->last_rec = e.seq;
			s->data_bytes += e.type == CLOG_WRITE ? len : 0;
			s->data_end = MAX(s->data_end, offset + len);
		}
		prev = s->last = e.seq;
		pos += e.size;
		pos = pos == h->log_bytes ? AREA_START : pos;
	}
	s->end = pos;
	return r < 0 ? clog_fail(why, wl, r, "%s: read records: %s", l->path,
				 strerror(-r))
		     : 0;
}

/* ---- open ---- */

void
clog_free(struct clog *l)
{
	if (!l) {
		return;
	}
	if (l->fd >= 0) {
		close(l->fd);
	}
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->hdr_lock);
	fault_log_free(l->fault);
	free(l->ring);
	free(l->buf);
	free(l->path);
	free(l);
}

struct clog *
clog_new(const char *path)
{
	struct clog *l = calloc(1, sizeof(*l));

	if (!l || !(l->path = strdup(path))) {
		free(l);
		return NULL;
	}
	l->fd = -1;
	pthread_mutex_init(&l->hdr_lock, NULL);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	return l;
}

/* What libblkid finds at path ("" for nothing). */
static void
probe_signature(const char *path, char *what, size_t len)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	const char *type = NULL;

	what[0] = '\0';
	if (!pr) {
		return;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	if (blkid_do_safeprobe(pr) == 0 &&
	    (blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0 ||
	     blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0)) {
		snprintf(what, len, "%s", type);
	}
	blkid_free_probe(pr);
}

/* A new, empty log: both header slots written (generations 0 and 1). */
static int
format(struct clog *l, const uint8_t uuid[16], uint64_t array_size,
       uint64_t size)
{
	uint8_t *b;
	struct iovec iov;
	int r;

	memset(&l->hdr, 0, sizeof(l->hdr));
	memcpy(l->hdr.array_uuid, uuid, 16);
	if (getrandom(l->hdr.log_uuid, 16, 0) != 16) {
		return -errno;
	}
	l->hdr.array_size = array_size;
	l->hdr.log_bytes = size;
	l->hdr.tail = AREA_START;
	l->hdr.seq_limit = 1;
	l->hdr.ctime = l->hdr.utime = time(NULL);
	if ((r = buf_reserve(l, 2 * CLOG_BLOCK)) < 0) {
		return r;
	}
	b = l->buf;
	hdr_encode(&l->hdr, b);
	l->hdr.gen = 1;
	hdr_encode(&l->hdr, b + CLOG_BLOCK);
	iov = (struct iovec){ b, 2 * CLOG_BLOCK };
	r = clog_pwritev_all(l->fd, &iov, 1, 0);
	if (r == 0 && fdatasync(l->fd) < 0) {
		r = -errno;
	}
	return r;
}

static int
other_array(const struct clog *l, const uint8_t uuid[16], const char *hint,
	    char *why, size_t wl)
{
	char want[UUID_STR_BYTES + 1], have[UUID_STR_BYTES + 1];

	uuid_format(l->hdr.array_uuid, have);
	uuid_format(uuid, want);
	return clog_fail(
		why, wl, -EEXIST,
		"%s: the cache log of another array (UUID %s), not of this one (%s)%s",
		l->path, have, want, hint);
}

/* Header found or not: format, refuse, or keep it (table in cache.md). */
int
clog_open_header(struct clog *l, const uint8_t uuid[16], uint64_t array_size,
		 bool create, bool force, uint64_t size, char *why, size_t wl)
{
	char sig[64], damaged[256];
	unsigned slot;
	bool both;
	int r = hdr_read(l, &l->hdr, &slot, &both, why, wl);

	if (r == 0 && memcmp(l->hdr.array_uuid, uuid, 16) == 0) {
		if (l->hdr.log_bytes > size) {
			return clog_fail(
				why, wl, -EINVAL,
				"%s: the log header says %llu bytes, but it has %llu",
				l->path, (unsigned long long)l->hdr.log_bytes,
				(unsigned long long)size);
		}
		return 0;
	}
	if (r < 0 && r != -ENOENT && r != -EINVAL) {
		return r; /* I/O error */
	}
	if (r == 0 && (!create || !force)) {
		return other_array(
			l, uuid,
			create ? "; force=true formats it anew, losing its records"
			       : "",
			why, wl);
	}
	if (r == -ENOENT && !create) {
		return -EINVAL;
	}
	if (r == -EINVAL && (!create || !force)) {
		snprintf(damaged, sizeof(damaged), "%s", why);
		return clog_fail(why, wl, r, "%s%s", damaged,
				 create ? " (force=true formats it anew)" : "");
	}
	probe_signature(l->path, sig, sizeof(sig));
	if (r == -ENOENT && sig[0] && !force) {
		return clog_fail(
			why, wl, -EEXIST,
			"%s: holds %s (found by libblkid), not a cache log: force=true formats over it",
			l->path, sig);
	}
	r = format(l, uuid, array_size, size);
	return r < 0 ? clog_fail(why, wl, r, "%s: format: %s", l->path,
				 strerror(-r))
		     : 0;
}

/* ---- read-only looks ---- */

static int
inspect(const char *path, struct clog_info *info, uint64_t max, char *why,
	size_t wl)
{
	struct clog *l = clog_new(path);
	struct clog_hdr h;
	struct scan s;
	uint64_t size;
	bool both;
	int r;

	memset(info, 0, sizeof(*info));
	if (!l) {
		return -ENOMEM;
	}
	if ((r = clog_fd_open(l, false, &size, why, wl)) < 0 ||
	    (r = hdr_read(l, &h, &info->slot, &both, why, wl)) < 0) {
		r = r == -ENOENT ? -EINVAL : r;
		goto out;
	}
	if (h.log_bytes > size) {
		r = clog_fail(
			why, wl, -EINVAL,
			"%s: the log header says %llu bytes, but it has %llu",
			path, (unsigned long long)h.log_bytes,
			(unsigned long long)size);
		goto out;
	}
	if ((r = clog_scan(l, &h, max, false, &s, why, wl)) < 0) {
		goto out;
	}
	info->version = LOG_VERSION;
	memcpy(info->array_uuid, h.array_uuid, 16);
	memcpy(info->log_uuid, h.log_uuid, 16);
	info->array_size = h.array_size;
	info->log_bytes = h.log_bytes;
	info->generation = h.gen;
	info->other_slot_valid = both;
	info->tail = h.tail;
	info->tail_prev = h.tail_prev;
	info->seq_limit = h.seq_limit;
	info->ctime = h.ctime;
	info->utime = h.utime;
	info->records = s.records;
	info->record_bytes = s.record_bytes;
	info->data_bytes = s.data_bytes;
	info->first_lsn = s.first;
	info->last_lsn = s.last_rec;
out:
	clog_free(l);
	return r;
}

int
clog_examine(const char *path, struct clog_info *info, char *why, size_t wl)
{
	return inspect(path, info, UINT64_MAX, why, wl);
}

int
clog_peek(const char *path, uint8_t uuid[16], bool *has_records, char *why,
	  size_t wl)
{
	struct clog_info info;
	int r = inspect(path, &info, 1, why, wl);

	if (r == 0) {
		memcpy(uuid, info.array_uuid, 16);
		*has_records = info.records > 0;
	}
	return r;
}
