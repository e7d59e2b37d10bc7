/*
 * cache_log_int.h: what cache_log.c (append, sync, retire, open) and
 * cache_log_disk.c (the on-disk format: encode, decode, read, scan) share.
 * Not for other users: cache_log.h is the interface.
 */
#ifndef RAID_CACHE_LOG_INT_H
#define RAID_CACHE_LOG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cache_log.h"

#define LOG_MAGIC   0x474c524eu /* "NRLG" */
#define REC_MAGIC   0x4345524eu /* "NREC" */
#define LOG_VERSION 1
#define HDR_BYTES   128 /* encoded; the rest of its block is zeros */
#define AREA_START  (2 * CLOG_BLOCK)
#define CLOG_SKIP   4 /* a record padding the area to its end */
/*
 * Bounds a header's numbers never reach (checked at open, so that the
 * arithmetic on them never wraps): sequence numbers (each open leases
 * 2^20, a record takes one), header generations (one per write), and
 * byte sizes.
 */
#define CLOG_SEQ_MAX   (1ull << 62)
#define CLOG_GEN_MAX   (1ull << 62)
#define CLOG_MAX_BYTES (1ull << 62)

struct clog_hdr {
	uint8_t array_uuid[16], log_uuid[16];
	uint64_t array_size, log_bytes, gen, tail, tail_prev, seq_limit;
	uint64_t ctime, utime;
};

struct clog_ent {
	uint64_t seq, prev, pos, size;
	uint32_t type;
	bool done; /* written (or failed: then error is set) */
};

struct clog {
	char *path;
	int fd;
	bool direct;	     /* block device: O_DIRECT */
	uint64_t start, end; /* the record area */
	void *buf;	     /* scan and replay: one record (aligned) */
	size_t buf_len;
	uint64_t found;	     /* ring[0, found): the records open found */
	uint64_t array_size; /* constant after open, like log_uuid */
	uint8_t log_uuid[16];
	struct fault *fault; /* fault=log's rules, or NULL; set once */

	/* Guards hdr and header writes: one at a time (retire, lease). */
	pthread_mutex_t hdr_lock;
	struct clog_hdr hdr; /* as last written */

	/* Guards everything below; never held across I/O; after hdr_lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* written or durable moved, a sync ended */
	uint64_t head, used; /* next record's position; bytes tail..head */
	uint64_t next_seq, last_seq, seq_limit;
	struct clog_ent *ring; /* cap entries, indexed by absolute count */
	uint64_t cap, r_tail, r_done, r_head;
	uint64_t written, durable; /* seqs */
	bool syncing;
	unsigned waiters;
	int error;
	uint64_t appends, syncs, header_writes;
};

struct scan {
	uint64_t records, record_bytes, data_bytes, end;
	uint64_t first, last_rec; /* writes, zeros and trims */
	uint64_t last;		  /* the last record (a skip too) */
	uint64_t data_end;	  /* the highest array byte a record touches */
};

int clog_fail(char *why, size_t whylen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int clog_pwritev_all(int fd, struct iovec *iov, int n, uint64_t off);

struct clog *clog_new(const char *path);
void clog_free(struct clog *l);
/* Open l->path: rw claims it (OFD lock, O_EXCL); *size in whole blocks. */
int clog_fd_open(struct clog *l, bool rw, uint64_t *size, char *why, size_t wl);
/* Read the header: keep it, format, or refuse (docs/cache.md). */
int clog_open_header(struct clog *l, const uint8_t uuid[16],
		     uint64_t array_size, bool create, bool force,
		     uint64_t size, char *why, size_t wl);
/* Write h as the next header generation, durably; h becomes l->hdr. */
int clog_hdr_write(struct clog *l, struct clog_hdr *h);

uint64_t clog_rec_size(uint32_t type, uint32_t len);
/* A record header block (b: CLOG_BLOCK bytes) for e, its crc over data. */
void clog_rec_encode(uint8_t *b, const struct clog_ent *e,
		     const uint8_t *log_uuid, uint64_t offset, uint32_t len,
		     const void *data);
/*
 * Read and check the record at pos, which must follow prev: 0 with *e
 * (and its data at l->buf + CLOG_BLOCK) when it does, 1 when it is not
 * one (the end of the chain), -errno on an I/O error.
 */
int clog_rec_read(struct clog *l, const struct clog_hdr *h, uint64_t pos,
		  uint64_t prev, struct clog_ent *e, uint64_t *offset,
		  uint32_t *len);
/*
 * Walk the chain from h's checkpoint, at most max records (skips not
 * counted); with ring, keep every entry in l->ring.  -errno (said in why)
 * on an I/O error.
 */
int clog_scan(struct clog *l, const struct clog_hdr *h, uint64_t max, bool ring,
	      struct scan *s, char *why, size_t wl);

#endif
