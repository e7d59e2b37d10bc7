/*
 * member.h: one member of an array (a file or a block device).
 *
 * Member states arrive with superblocks; today a member is open or the
 * array is not assembled.  Member fds are opened once, before any worker
 * thread, and shared: all I/O is positional, so threads need no own fd.
 */
#ifndef RAID_MEMBER_H
#define RAID_MEMBER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/io.h"
#include "raid_config.h"

struct raid_member {
	unsigned role;
	char *path;
	int fd;                      /* -1 for members without one (tests) */
	bool is_blk;
	bool direct;                 /* opened O_DIRECT */
	bool read_only;              /* could only be opened O_RDONLY */
	uint64_t size;               /* bytes */
	unsigned mem_align;          /* O_DIRECT buffer alignment, else 1 */
	unsigned io_align;           /* O_DIRECT offset/length alignment */
	dev_t dev;                   /* identity, to refuse the same file */
	ino_t ino;                   /* twice (st_rdev for block devices) */
	const struct io_backend *be;
	void *priv;                  /* the backend's own (memory backend) */

	/* I/Os queued to this member and not yet complete: read balancing. */
	atomic_uint inflight;
	/*
	 * Member offset where the last read balanced to this member ended
	 * (md's next_seq_sect): a read starting here continues a stream.
	 * Starts at UINT64_MAX (no stream).
	 */
	atomic_uint_fast64_t next_read;
	/* Latched when the member's filesystem refuses an fallocate mode. */
	atomic_bool no_zero_range;
	atomic_bool no_punch;
};

int member_open(struct raid_member *m, unsigned role, const char *path,
		bool direct, bool read_only, enum raid_io_mode io);
void member_close(struct raid_member *m);

/*
 * The run of bytes from member offset `off` (at most len) that is all hole
 * or all data.  Members that cannot tell (block devices) report data.
 */
void member_extent(struct raid_member *m, uint64_t off, uint64_t len,
		   bool *hole, uint64_t *run);

#endif
