/*
 * member.h: one member of an array (a file or a block device).
 *
 * Member fds are opened once, before any worker thread, and shared: all
 * I/O is positional, so threads need no own fd.  Every role of an array
 * has a raid_member, also a role with no member (state missing, fd -1, be
 * NULL).  `state` (enum raid_member_state) changes at run time: only the
 * data path's error handling and the control calls change it, under the
 * array's degraded lock (array.h); the data path reads it without a lock
 * and issues no new I/O to a member that is not usable (member_usable).
 */
#ifndef RAID_MEMBER_H
#define RAID_MEMBER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "io/io.h"
#include "raid.h"
#include "raid_config.h"

struct fault;

struct raid_member {
	unsigned role;
	/*
	 * The member's path, as given (NULL: none).  Read without a lock
	 * (status, member lookup, log lines on the data path), so: atomic,
	 * and the string it points at is never changed, nor freed while the
	 * array is open, even after a spare took the role (spare.c retires
	 * it; docs/locking.md, "Member paths").  It changes under fail_lock.
	 */
	char *_Atomic path;
	int fd; /* -1 for members without one (tests) */
	bool is_blk;
	bool direct;		/* opened O_DIRECT */
	bool read_only;		/* could only be opened O_RDONLY */
	bool claimed;		/* member_claim took it */
	uint64_t size;		/* bytes */
	unsigned mem_align;	/* O_DIRECT buffer alignment, else 1 */
	unsigned io_align;	/* O_DIRECT offset/length alignment */
	unsigned discard_align; /* trim/zero: io_align, or a block
				   device's logical block, else 1 */
	dev_t dev;		/* identity, to refuse the same file */
	ino_t ino;		/* twice (st_rdev for block devices) */
	const struct io_backend *be;
	void *priv;	     /* the backend's own (memory backend) */
	struct fault *fault; /* fault= rules (io/fault.h), or NULL */

	atomic_int state; /* enum raid_member_state */
	/*
	 * Which member holds this slot: moves on when a spare moves in
	 * (spare.c), so that a failure seen on the member before it (a batch
	 * queued to it, answered after the swap) never fails the spare.
	 */
	atomic_uint gen;
	/*
	 * Rebuilding: bytes of the data area rebuilt so far, from its start
	 * (md's recovery_offset, in bytes; whole chunks until the end): reads
	 * may use the member below it, never above.  Only recovery moves it,
	 * after the bytes are on the member.
	 */
	atomic_uint_fast64_t rebuilt;
	/* For status (and md's cnt_corrected_read, kept in the superblock). */
	atomic_uint_fast64_t read_errors;
	atomic_uint_fast64_t write_errors;
	atomic_uint_fast64_t corrected_reads; /* sectors */
	/* md's read_errors, halved every hour (fail_lock guards both). */
	unsigned recent_read_errors;
	uint64_t last_read_error_ns;

	/* I/Os queued to this member and not yet complete: read balancing. */
	atomic_uint inflight;
	/*
	 * Member offset where the last read balanced to this member ended
	 * (md's next_seq_sect): a read starting here continues a stream.
	 * Starts at UINT64_MAX (no stream).
	 */
	atomic_uint_fast64_t next_read;
	/* Latched when the member's filesystem or device refuses a mode. */
	atomic_bool no_zero_range; /* FALLOC_FL_ZERO_RANGE */
	atomic_bool no_punch;	   /* FALLOC_FL_PUNCH_HOLE */
	atomic_bool no_alloc;	   /* fallocate mode 0 (no extents) */
	atomic_bool alloc_ok;	   /* ...has worked: no need to ask */
	atomic_bool no_discard;	   /* BLKDISCARD */
};

/* May the data path issue I/O to m (reads and writes)? */
static inline bool
member_usable(const struct raid_member *m)
{
	return atomic_load_explicit(&m->state, memory_order_acquire) ==
	       RAID_MEMBER_IN_SYNC;
}

/* Does m take I/O at all (in sync, or being rebuilt)? */
static inline bool
member_alive(const struct raid_member *m)
{
	int s = atomic_load_explicit(&m->state, memory_order_acquire);

	return s == RAID_MEMBER_IN_SYNC || s == RAID_MEMBER_REBUILDING;
}

/*
 * Open path (a regular file or a block device, nothing else: a FIFO or a
 * character device is refused before it is opened, so no open waits)
 * with flags, O_CLOEXEC added; *st is its fstat.  An fd, or -errno:
 * -EINVAL for another type, *st then saying which (else *st is zero).
 */
int member_open_path(const char *path, int flags, struct stat *st);
/* "a FIFO", "a directory" ...: a file type for messages. */
const char *member_type_name(mode_t mode);

int member_open(struct raid_member *m, unsigned role, const char *path,
		bool direct, bool read_only, enum raid_io_mode io);
void member_close(struct raid_member *m);
/* Close m's fd (fd -1), its claim let go at once; the rest of m stays. */
void member_close_fd(struct raid_member *m);
/* A role with no member (state missing); path: the one that would not
 * open, or NULL.  0 or -ENOMEM. */
int member_missing(struct raid_member *m, unsigned role, const char *path);

/*
 * Keep others off the member while it is ours to write: an OFD lock on a
 * file, O_EXCL on a block device.  Two nbdraid never serve or create over
 * one member at once, nor over a device that is mounted or in a running md
 * array.  A member opened only to read is not claimed.  A claim someone
 * holds is tried again for a second (a killed nbdraid's files outlive it
 * while the kernel finishes its I/O).  0, or -EBUSY (logged, naming the
 * member) or another -errno.  Called once the members are known not to
 * overlap (two of ours would refuse each other).
 */
int member_claim(struct raid_member *m);

/*
 * The run of bytes from member offset `off` (at most len) that is all hole
 * or all data.  Members that cannot tell (block devices) report data.
 */
void member_extent(struct raid_member *m, uint64_t off, uint64_t len,
		   bool *hole, uint64_t *run);

/*
 * Is [off, off+len) of the member all hole?  One SEEK_DATA: cheap where
 * member_extent's SEEK_HOLE, from a byte that holds data, walks the file
 * up to its next hole (to its end, when it is all data: tmpfs and others
 * walk it page by page).  Members that cannot tell (block devices): no.
 */
bool member_hole(struct raid_member *m, uint64_t off, uint64_t len);

#endif
