/*
 * member.c: open one member, learn its size, alignment and identity, and
 * pick its I/O backend.
 *
 * Alignment: a member opened O_DIRECT needs buffers aligned to
 * stx_dio_mem_align and offsets/lengths aligned to stx_dio_offset_align
 * (statx STATX_DIOALIGN); without that answer, a block device's logical
 * block size (BLKSSZGET), or 4096 for files.  A buffered member needs
 * nothing for reads and writes (1, 1), but a block device trims and zeros
 * in whole logical blocks whether opened O_DIRECT or not (discard_align).
 *
 * Backend (io=auto): io_uring (which runs a lone request inline itself),
 * except on tmpfs, where io_uring has no non-blocking path and hands every
 * request to an io-wq thread: there plain pread/pwrite is the faster path
 * (docs/design.md, docs/benchmarking.md have the numbers).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "io/fault.h"
#include "log.h"
#include "member.h"

/* O_DIRECT alignment when neither statx nor BLKSSZGET says. */
#define DEFAULT_DIO_ALIGN 4096u

static void
member_alignment(struct raid_member *m)
{
	struct statx stx;
	unsigned lbs = RAID_SECTOR_BYTES;

	m->mem_align = m->io_align = 1;
	if (m->is_blk && ioctl(m->fd, BLKSSZGET, &lbs) < 0) {
		lbs = DEFAULT_DIO_ALIGN;
	}
	/* Block devices trim and zero in whole logical blocks, always. */
	m->discard_align = m->is_blk ? lbs : 1;
	if (!m->direct) {
		return;
	}
	m->mem_align = m->io_align = m->is_blk ? lbs : DEFAULT_DIO_ALIGN;
	if (statx(m->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		m->mem_align = stx.stx_dio_mem_align;
		m->io_align = stx.stx_dio_offset_align;
	}
	m->discard_align =
		m->discard_align > m->io_align ? m->discard_align : m->io_align;
}

static const struct io_backend *
member_backend(const struct raid_member *m, enum raid_io_mode io)
{
	struct statfs sfs;

	switch (io) {
	case RAID_IO_URING:
		return &uring_backend;
	case RAID_IO_PSYNC:
		return &psync_backend;
	case RAID_IO_AUTO:
		break;
	}
	if (fstatfs(m->fd, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC) {
		return &psync_backend;
	}
	return &uring_backend;
}

static int
member_size(struct raid_member *m, const struct stat *st)
{
	if (S_ISBLK(st->st_mode)) {
		m->is_blk = true;
		m->dev = st->st_rdev;
		m->ino = 0;
		if (ioctl(m->fd, BLKGETSIZE64, &m->size) < 0) {
			return -errno;
		}
		return 0;
	}
	if (!S_ISREG(st->st_mode)) {
		return -EINVAL;
	}
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->size = st->st_size;
	return 0;
}

const char *
member_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFBLK:
		return "a block device";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFDIR:
		return "a directory";
	case S_IFSOCK:
		return "a socket";
	case S_IFLNK:
		return "a symbolic link";
	}
	return "a file of unknown type";
}

static bool
member_type_ok(mode_t mode)
{
	return S_ISREG(mode) || S_ISBLK(mode);
}

int
member_open_path(const char *path, int flags, struct stat *st)
{
	struct stat before;
	int fd, fl;

	memset(st, 0, sizeof(*st));
	/* A FIFO's or a device's open may wait, or do something: not even
	 * tried.  The open itself never waits (O_NONBLOCK), and what it
	 * opened is checked again (the path may have changed since). */
	if (stat(path, &before) < 0) {
		return -errno;
	}
	if (!member_type_ok(before.st_mode)) {
		*st = before;
		return -EINVAL;
	}
	fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		return -errno;
	}
	if (fstat(fd, st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (!member_type_ok(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	/* io_uring answers EAGAIN on an O_NONBLOCK file: cleared. */
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int
member_open_fd(struct raid_member *m, bool direct, bool read_only,
	       struct stat *st)
{
	int flags = direct ? O_DIRECT : 0;
	int fd;

	fd = member_open_path(m->path, (read_only ? O_RDONLY : O_RDWR) | flags,
			      st);
	m->read_only = read_only && fd >= 0;
	if (fd == -EROFS || fd == -EACCES) {
		fd = member_open_path(m->path, O_RDONLY | flags, st);
		m->read_only = fd >= 0;
	}
	m->fd = fd < 0 ? -1 : fd;
	return fd < 0 ? fd : 0;
}

/*
 * A block device is claimed by opening it again with O_EXCL (which fails
 * with EBUSY while it is mounted, in a running md array or open so by
 * another nbdraid) in place of the first fd.
 */
static int
claim_blk(struct raid_member *m)
{
	int flags = fcntl(m->fd, F_GETFL);
	struct stat st;
	int fd;

	if (flags < 0) {
		return -errno;
	}
	flags &= O_ACCMODE | O_DIRECT;
	fd = member_open_path(m->path, flags | O_EXCL, &st);
	if (fd < 0) {
		return fd == -EINVAL ? -ENODEV : fd;
	}
	if (!S_ISBLK(st.st_mode) || st.st_rdev != m->dev) {
		close(fd); /* the path names another device now */
		return -ENODEV;
	}
	if (dup3(fd, m->fd, O_CLOEXEC) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	return 0;
}

/*
 * A file is locked: a write OFD lock on all of it.  It goes with the last
 * fd, across nbdkit's fork.
 */
static int
lock_file(struct raid_member *m)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	return fcntl(m->fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
}

#define CLAIM_WAIT_MS 1000 /* for a killed holder's files to be let go */
#define CLAIM_POLL_MS 10

static bool
claim_busy(const struct raid_member *m, int r)
{
	return m->is_blk ? r == -EBUSY : r == -EAGAIN || r == -EACCES;
}

/*
 * Take the claim, trying again for up to CLAIM_WAIT_MS while another
 * holds it: an nbdraid killed (kill -9) while its io_uring had member I/O
 * in flight keeps its files, and with them their lock or O_EXCL claim,
 * until the kernel has finished that I/O, a few ms after the process is
 * gone; restarted at once, it would find its members "in use".
 */
static int
claim_wait(struct raid_member *m)
{
	const struct timespec poll = { 0, CLAIM_POLL_MS * 1000000L };
	int r;

	for (unsigned ms = 0;; ms += CLAIM_POLL_MS) {
		r = m->is_blk ? claim_blk(m) : lock_file(m);
		if (!claim_busy(m, r) || ms >= CLAIM_WAIT_MS) {
			break;
		}
		nanosleep(&poll, NULL);
	}
	return r;
}

int
member_claim(struct raid_member *m)
{
	int r;

	/*
	 * Memory members; claimed already; opened only to read (info, check,
	 * examine: like mdadm --examine, they may look at a member in use).
	 */
	if (m->fd < 0 || m->claimed || m->read_only) {
		return 0;
	}
	r = claim_wait(m);
	m->claimed = r == 0;
	if (r == -EBUSY && m->is_blk) {
		raid_error(
			"member %u (%s): in use (mounted, in a running md array, or served by another nbdraid)",
			m->role, m->path);
		return r;
	}
	if (r == -EAGAIN || r == -EACCES) {
		raid_error(
			"member %u (%s): in use by another nbdraid (it holds the file's lock)",
			m->role, m->path);
		return -EBUSY;
	}
	if (r < 0) {
		raid_error("member %u (%s): claim: %s", m->role, m->path,
			   strerror(-r));
	}
	return r;
}

int
member_open(struct raid_member *m, unsigned role, const char *path, bool direct,
	    bool read_only, enum raid_io_mode io)
{
	struct stat st;
	int r;

	memset(m, 0, sizeof(*m));
	m->role = role;
	m->fd = -1;
	m->path = strdup(path);
	if (!m->path) {
		return -ENOMEM;
	}
	r = member_open_fd(m, direct, read_only, &st);
	if (r == -EINVAL && st.st_mode && !member_type_ok(st.st_mode)) {
		raid_error(
			"member %u (%s): %s, not a regular file or block device",
			role, path, member_type_name(st.st_mode));
		return r;
	}
	if (r == -EINVAL && direct) {
		raid_error(
			"member %u (%s): open: O_DIRECT is not supported here (use direct=false)",
			role, path);
		return r;
	}
	if (r < 0) {
		raid_error("member %u (%s): open: %s", role, path,
			   strerror(-r));
		return r;
	}
	m->direct = direct;
	if ((r = member_size(m, &st)) < 0) {
		raid_error("member %u (%s): %s", role, path, strerror(-r));
		return r;
	}
	member_alignment(m);
	m->be = member_backend(m, io);
	raid_debug("member %u (%s): %llu bytes, %s%s, align %u/%u, io %s", role,
		   path, (unsigned long long)m->size,
		   m->is_blk ? "block device" : "file",
		   m->direct ? " O_DIRECT" : "", m->mem_align, m->io_align,
		   m->be->name);
	return 0;
}

int
member_missing(struct raid_member *m, unsigned role, const char *path)
{
	memset(m, 0, sizeof(*m));
	m->role = role;
	m->fd = -1;
	atomic_init(&m->state, RAID_MEMBER_MISSING);
	m->path = path ? strdup(path) : NULL;
	return path && !m->path ? -ENOMEM : 0;
}

/*
 * A file's lock is let go explicitly before its fd is closed: io_uring may
 * hold the open file (a request completed by one of its workers is freed
 * later, on the ring's next use), and with it the lock, long after close;
 * the member would stay "in use" for an nbdraid starting on it next, or a
 * spare= taking it back.  A block device's O_EXCL goes with its last
 * reference: claim_wait waits for it.
 */
void
member_close_fd(struct raid_member *m)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };

	if (m->fd < 0) {
		return;
	}
	if (m->claimed && !m->is_blk) {
		(void)fcntl(m->fd, F_OFD_SETLK, &fl);
	}
	close(m->fd);
	m->fd = -1;
	m->claimed = false;
}

void
member_close(struct raid_member *m)
{
	fault_detach(m);
	member_close_fd(m);
	free(m->path);
	m->path = NULL;
}

bool
member_hole(struct raid_member *m, uint64_t off, uint64_t len)
{
	off_t d;

	if (m->fd < 0 || m->is_blk) {
		return false;
	}
	d = lseek(m->fd, (off_t)off, SEEK_DATA);
	if (d < 0) {
		return errno == ENXIO; /* no data after off: hole to EOF */
	}
	return (uint64_t)d >= off + len;
}

void
member_extent(struct raid_member *m, uint64_t off, uint64_t len, bool *hole,
	      uint64_t *run)
{
	off_t d, h;

	*hole = false;
	*run = len;
	if (m->fd < 0 || m->is_blk) {
		return;
	}
	d = lseek(m->fd, off, SEEK_DATA);
	if (d < 0) {
		*hole = errno == ENXIO; /* no data after off: hole to EOF */
		return;
	}
	if ((uint64_t)d > off) {
		*hole = true;
		*run = (uint64_t)d - off < len ? (uint64_t)d - off : len;
		return;
	}
	h = lseek(m->fd, off, SEEK_HOLE);
	if (h > (off_t)off && (uint64_t)h - off < len) {
		*run = (uint64_t)h - off;
	}
}
