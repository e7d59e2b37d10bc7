/*
 * cache_log.h: the write-back cache's persistent log (docs/cache.md, "The
 * log format"): a file or block device bound to one array, holding
 * checksummed records of writes, zeros and trims in sequence order.  It
 * is the battery-backed memory of a RAID card: a write is safe once its
 * record is durable, and the array's members may lag behind.
 *
 * The life of a record:
 *
 *   clog_append  ->  clog_sync  ->  (caller: write it to the array,
 *   written          durable        flush the members)  ->  clog_retire
 *                                                           space reused
 *
 * At start, clog_open finds the records a crash left (the chain from the
 * checkpoint to the first torn or bad one); clog_replay hands them over,
 * in order; the caller writes them to the array, flushes the members and
 * retires them.  A clean stop retires everything: a clean log is empty.
 *
 * Every function returns 0 (or a count) or -errno.  Thread-safe: any
 * number of threads may append, sync and retire at once.
 */
#ifndef RAID_CACHE_LOG_H
#define RAID_CACHE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOG_BLOCK     4096u	   /* every position and size is a multiple */
#define CLOG_MIN_BYTES (1u << 20)  /* the smallest log */
#define CLOG_MAX_LEN   (32u << 20) /* the longest record, in a large log */
#define CLOG_ALL       UINT64_MAX  /* clog_sync, clog_retire: every record */

enum clog_type {
	CLOG_WRITE = 1, /* data follows */
	CLOG_ZERO = 2,	/* the range reads back zeros */
	CLOG_TRIM = 3,	/* the range was trimmed */
};

struct clog_rec {
	uint64_t lsn;	  /* its sequence number */
	uint32_t type;	  /* enum clog_type */
	uint32_t len;	  /* bytes of the array */
	uint64_t offset;  /* array byte offset */
	const void *data; /* CLOG_WRITE: len bytes, valid during the call */
};

struct clog;

/*
 * Open the log at path (an existing file, whose size is the log's, or a
 * block device) for the array with this
 * uuid and size, claiming it (a file: a write OFD lock; a block device:
 * O_EXCL, and I/O is O_DIRECT).  A path holding no log header is formatted
 * when create is true (not over a filesystem or other signature libblkid
 * finds, unless force).  Refused, with the reason in why (naming the
 * path): a log bound to another array (-EEXIST; force formats over it,
 * losing its records), a damaged header (-EINVAL; force formats), a log
 * of this array whose records fall outside a changed array size, a file
 * smaller than CLOG_MIN_BYTES or than its header says (-EINVAL), a path
 * in use (-EBUSY).  The records a crash left are found (clog_replay) and
 * kept.  Opening writes the header once (it reserves sequence numbers).
 */
int clog_open(const char *path, const uint8_t uuid[16], uint64_t array_size,
	      bool create, bool force, struct clog **out, char *why,
	      size_t whylen);

/*
 * Read-only look at the log at path, claiming nothing: the array it is
 * bound to, and whether it holds records not yet retired (an array that
 * starts without this log must refuse unless forced).  -EINVAL (why) when
 * path holds no valid log header.
 */
int clog_peek(const char *path, uint8_t uuid[16], bool *has_records, char *why,
	      size_t whylen);

/*
 * The records clog_open found and not yet retired, in sequence order: fn
 * is called for each (its data valid during the call only); a negative
 * return from fn stops the replay and is returned.  Returns the number of
 * records, or -errno (-EIO when a record no longer reads back as found).
 * The caller then writes them to the array, flushes the members and calls
 * clog_retire(l, CLOG_ALL) (or the last lsn).  One replay at a time; fn
 * may append, but nothing may retire the records before replay returns.
 */
int clog_replay(struct clog *l, int (*fn)(void *ctx, const struct clog_rec *r),
		void *ctx);

/*
 * Append one record (CLOG_WRITE with len bytes of data; CLOG_ZERO and
 * CLOG_TRIM with none) and return its sequence number in *lsn.  Written
 * with one pwritev (an aligned copy only when O_DIRECT needs one), not
 * synced: it survives a crash only after clog_sync(lsn).  Concurrent
 * appenders get distinct places and increasing lsns.  -ENOSPC: no room
 * until records are retired (never for an empty log); -EINVAL: len 0,
 * more than clog_max_len, or a range past the array.  After a failed
 * write every append and sync fails with that error (the log is broken
 * past it: the caller goes write-through).
 */
int clog_append(struct clog *l, uint32_t type, uint64_t offset, uint32_t len,
		const void *data, uint64_t *lsn);

/*
 * Make every record up to lsn durable (CLOG_ALL: every record appended
 * before the call: a FLUSH).  Group commit: one fdatasync at a time;
 * callers arriving while it runs wait, and those it covered return
 * without syncing; the rest share the next one.  Waits for appends of
 * lower lsns still being written.  -EINVAL for an lsn never handed out.
 */
int clog_sync(struct clog *l, uint64_t lsn);

/*
 * Records up to lsn (CLOG_ALL: every record written so far) are on the
 * members and the members are flushed: move the checkpoint past them in
 * the header, durably, and only then let their space be reused.
 */
int clog_retire(struct clog *l, uint64_t lsn);

/* Bytes of the record area in use (appended, not retired) and in all. */
void clog_space(struct clog *l, uint64_t *used, uint64_t *total);

/* The longest record this log takes: min(CLOG_MAX_LEN, about half of it). */
uint32_t clog_max_len(struct clog *l);

/*
 * fault=log: rules applied to every record write, header write and sync
 * from now on (io/fault.h; the log takes them, frees them at close).
 */
struct fault;
void clog_set_fault(struct clog *l, struct fault *f);

/* Close; records not retired stay for the next open to find. */
void clog_close(struct clog *l);

struct clog_stats {
	uint64_t appends;	/* records appended since open */
	uint64_t syncs;		/* fdatasyncs by clog_sync */
	uint64_t header_writes; /* header writes (each with its own sync) */
	uint64_t last_lsn;	/* the last record appended (or found) */
	uint64_t durable_lsn;	/* records up to it are durable */
	unsigned sync_waiters;	/* clog_sync callers waiting now */
	int error;		/* the append or sync error latched, or 0 */
};

void clog_stats(struct clog *l, struct clog_stats *st);

/* What clog_examine reads: the header and the chain of records. */
struct clog_info {
	uint32_t version;
	uint8_t array_uuid[16];
	uint8_t log_uuid[16];
	uint64_t array_size;
	uint64_t log_bytes;
	uint64_t generation;
	unsigned slot; /* the header slot in use, 0 or 1 */
	bool other_slot_valid;
	uint64_t tail;	    /* byte position of the checkpoint */
	uint64_t tail_prev; /* the last record retired */
	uint64_t seq_limit; /* sequence numbers below it are used up */
	uint64_t ctime, utime;
	uint64_t records;      /* writes, zeros and trims not yet retired */
	uint64_t record_bytes; /* of the log they take */
	uint64_t data_bytes;   /* of array data they carry */
	uint64_t first_lsn, last_lsn;
};

/* The header of the log at path and its records (read-only, no claim). */
int clog_examine(const char *path, struct clog_info *info, char *why,
		 size_t whylen);

/*
 * For tests: called by the clog_sync caller that syncs, just before its
 * fdatasync (so a test can hold it there while others arrive).
 */
extern void (*clog_sync_hook)(struct clog *l);
/*
 * For tests: consulted before every record write (sync false) and every
 * fdatasync of clog_sync (sync true); a negative return fails that I/O
 * with it, as the device would.
 */
extern int (*clog_fault_hook)(struct clog *l, bool sync);
/* For tests: sequence numbers reserved per header write (default 2^20). */
extern uint64_t clog_seq_lease;

#endif
