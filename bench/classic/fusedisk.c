/*
 * fusedisk.c: an emulated disk, presented as a regular file through FUSE,
 * for bench/run (the classic RAID studies).  nbdraid opens the file as a
 * member; every read and write of it is served by a model of a disk with a
 * fixed access time and a fixed bandwidth.
 *
 *   fusedisk [--size SIZE] [--access TIME] [--mbps N] [--slots N]
 *            [--seq 0|1] [--populate] [--stats FILE] [--pidfile FILE]
 *            MOUNTPOINT
 *
 * mounts a FUSE file system on the directory MOUNTPOINT holding one file,
 * MOUNTPOINT/disk, of SIZE bytes, writes the pid file once the mount is up,
 * and serves until MOUNTPOINT is unmounted (umount MOUNTPOINT) or it gets
 * SIGTERM/SIGINT (it then unmounts itself).  Needs root (mount(2)).
 *
 * The model.  The disk has `slots` heads (1 = a spindle: one request at a
 * time; more = an SSD-like device serving several at once).  A request
 * occupies one head for
 *
 *     position + length / bandwidth
 *
 * where position is the access time (seek + rotation), except when the
 * request starts at or a little after where that head's previous request
 * ended: the head then only passes over the gap at the bandwidth, so
 * position = min(access, gap / bandwidth).  A sequential stream runs at the
 * full bandwidth whatever its request size, as on a real disk, and a random
 * request pays the access time.  Reads and writes cost the same (no cache).
 * With --seq 0 every request pays the access time, as with nbdkit's delay
 * filter.
 *
 * Requests wait in one queue, in arrival order.  A head that becomes free
 * takes the queued request with the least positioning time, the oldest
 * among equals (a disk's command queue, NCQ, does the like); a request
 * older than 20 access times is taken first, so none starves.  With a
 * constant access time this gains nothing for random requests (a real
 * disk's seeks get shorter with a deeper queue); it keeps a sequential
 * stream that reaches the disk slightly out of order (several client
 * threads) free of seeks.
 *
 * Time is computed, not measured: a request starts when its head became
 * free (or when it arrived, if the head was idle) and ends a service time
 * later; a late wake-up of this process delays the reply but not the
 * schedule.  One thread serves everything: it reads requests from
 * /dev/fuse as they come, and a timerfd wakes it at the next completion.
 *
 * --populate backs the whole disk with memory before it mounts, as
 * transparent huge pages, so that no write pays a page fault: in a VM
 * whose hypervisor backs guest memory on first use, a first write to
 * fresh anonymous memory cost about 1.5 ms per MiB here, time the one
 * thread spends in memcpy instead of reading the next requests (the
 * first repetition of a write study ran slower than the next ones).
 * Without it the memory is taken as written (sparse).
 *
 * Why not nbdfuse over nbdkit with the delay, rate and noparallel filters,
 * a disk made of stock parts?  nbdfuse runs FUSE requests on a pool of
 * threads that reorders them on their way to the server (a sequential 1M
 * stream at QD8 paid a seek on 25-30 % of its requests), or,
 * single-threaded (-s), idles the disk for a round trip after every
 * request (89 % busy for 1M reads at QD8); the delay filter
 * charges its delay on sequential requests too; and the NBD hop costs CPU.
 * Why not libfuse 3.14 (Debian 12)?  Its low-level API could carry this
 * loop (fuse_session_fd, deferred fuse_reply_*, max_write), but it cannot
 * set FOPEN_PARALLEL_DIRECT_WRITES in the open reply (fuse_file_info has
 * no such bit before 3.15): without it the kernel holds the inode lock
 * across each direct write, so writes reach the disk one at a time and a
 * QD8 write stream never queues at the disk.  The protocol is small
 * enough to speak directly (linux/fuse.h): INIT, LOOKUP, GETATTR, OPEN,
 * READ, WRITE, FSYNC, FLUSH, RELEASE and a few no-ops.  FOPEN_DIRECT_IO:
 * no page cache, whatever flags the member is opened with.
 *
 * --stats FILE: ST_N little-endian uint64 counters (the enum below): the
 * request counts as requests complete, seeks, busy and wait time when a
 * head takes a request; the benchmark reads them before and after each run
 * (member I/Os per client request, busy time, seeks).
 *
 * --exit-with-parent: unmount and exit when the process that started
 * fusedisk dies (bench/run killed without its cleanup).
 *
 * Build: cc -O2 -o fusedisk fusedisk.c   (linux/fuse.h from linux-libc-dev)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef FOPEN_PARALLEL_DIRECT_WRITES
#define FOPEN_PARALLEL_DIRECT_WRITES (1 << 6)
#endif

#define MAX_SLOTS 64
#define MAX_WRITE (1024 * 1024)		  /* largest FUSE request */
#define BUF_SIZE  (MAX_WRITE + 64 * 1024) /* header + write payload */
#define ROOT_INO  1
#define DISK_INO  2

/* The counters in --stats FILE, in this order. */
enum {
	ST_READS,   /* read requests served */
	ST_WRITES,  /* write requests served */
	ST_RBYTES,  /* bytes read */
	ST_WBYTES,  /* bytes written */
	ST_SEEKS,   /* requests that paid the full access time */
	ST_BUSY_NS, /* sum of service times, all heads */
	ST_WAIT_NS, /* sum of time queued before service */
	ST_FLUSHES, /* flush and fsync requests (free: no cache) */
	ST_N
};

static uint64_t size = 1ULL << 30;
static int64_t access_ns = 5000000;
static double bytes_per_ns = 0.1; /* 100 MB/s */
static unsigned slots = 1;
static int seq = 1;
static int populate; /* --populate: back the disk with memory at start */
static const char *stats_path, *pidfile, *mountpoint;

static char *data;
static uint64_t *stats;
static int fuse_fd = -1, timer_fd = -1;
static volatile sig_atomic_t stop;

struct req {
	uint64_t unique; /* FUSE request id */
	uint64_t off;
	uint32_t len;
	int is_write;
	int64_t arrive;
	struct req *next;
};

static struct req *queue_head, **queue_tail = &queue_head;
static struct head {
	struct req *cur; /* being served, or NULL */
	int64_t end;	 /* when cur completes */
	int64_t free_at; /* when the head became (becomes) free */
	int64_t pos;	 /* byte after its last request, -1 = unknown */
} heads[MAX_SLOTS];

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fusedisk: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	if (mountpoint && fuse_fd >= 0) {
		umount2(mountpoint, MNT_DETACH);
	}
	exit(1);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "5ms", "200us", "1.5ms", "2000000ns", "0.005s", or a bare number of ms. */
static int64_t
parse_time(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0) {
		die("'%s': not a time (e.g. 5ms, 200us)", s);
	}
	if (!strcmp(end, "ms") || !*end) {
		v *= 1e6;
	} else if (!strcmp(end, "us")) {
		v *= 1e3;
	} else if (!strcmp(end, "s")) {
		v *= 1e9;
	} else if (strcmp(end, "ns")) {
		die("'%s': not a time (e.g. 5ms, 200us)", s);
	}
	return (int64_t)v;
}

/* SIZE with an optional K/M/G suffix (powers of 1024). */
static uint64_t
parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s) {
		die("'%s': not a size", s);
	}
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	case 't':
	case 'T':
		v <<= 40;
		end++;
		break;
	}
	if (*end || v == 0 || v % 4096) {
		die("'%s': not a size (a positive multiple of 4K)", s);
	}
	return v;
}

/* --- replies -------------------------------------------------------------- */

static void
reply_iov(uint64_t unique, int error, struct iovec *iov, int n)
{
	struct fuse_out_header oh = { .error = error, .unique = unique };
	struct iovec v[3];
	ssize_t len = sizeof(oh);

	v[0].iov_base = &oh;
	v[0].iov_len = sizeof(oh);
	for (int i = 0; i < n; i++) {
		v[i + 1] = iov[i];
		len += iov[i].iov_len;
	}
	oh.len = len;
	/* ENOENT: the request was interrupted (its caller is gone). */
	if (writev(fuse_fd, v, n + 1) != len && errno != ENOENT) {
		if (errno == ENODEV) {
			stop = 1;
		} else {
			fprintf(stderr, "fusedisk: reply: %m\n");
		}
	}
}

static void
reply(uint64_t unique, int error, const void *arg, size_t len)
{
	struct iovec v = { (void *)arg, len };

	reply_iov(unique, error, &v, len ? 1 : 0);
}

static void
fill_attr(uint64_t ino, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->nlink = ino == ROOT_INO ? 2 : 1;
	a->blksize = 4096;
	if (ino == ROOT_INO) {
		a->mode = S_IFDIR | 0755;
	} else {
		a->mode = S_IFREG | 0644;
		a->size = size;
		a->blocks = size / 512;
	}
}

/* --- the disk model ------------------------------------------------------- */

/* Positioning time of a request at off, the head's last request ending at pos.
 */
static int64_t
position(int64_t pos, uint64_t off)
{
	int64_t pass;

	if (!seq || pos < 0 || (int64_t)off < pos) {
		return access_ns;
	}
	pass = (int64_t)((off - pos) / bytes_per_ns);
	return pass < access_ns ? pass : access_ns;
}

/* Give every idle head the cheapest queued request. */
static void
dispatch(void)
{
	int64_t now = now_ns(), cost, best_cost, start, svc;
	struct req **pp, **best, *r;
	struct head *h;

	for (unsigned i = 0; i < slots && queue_head; i++) {
		h = &heads[i];
		if (h->cur) {
			continue;
		}
		best = &queue_head;
		best_cost = position(h->pos, queue_head->off);
		if (now - queue_head->arrive < 20 * access_ns) {
			for (pp = &queue_head->next; *pp; pp = &(*pp)->next) {
				cost = position(h->pos, (*pp)->off);
				if (cost < best_cost) {
					best = pp;
					best_cost = cost;
				}
			}
		}
		r = *best;
		*best = r->next;
		if (!*best) {
			queue_tail = best;
		}
		start = h->free_at > r->arrive ? h->free_at : r->arrive;
		svc = best_cost + (int64_t)(r->len / bytes_per_ns);
		h->cur = r;
		h->end = start + svc;
		h->pos = r->off + r->len;
		stats[ST_SEEKS] += best_cost == access_ns;
		stats[ST_BUSY_NS] += svc;
		stats[ST_WAIT_NS] += start - r->arrive;
	}
}

/* Reply to every request whose service has ended; arm the timer. */
static void
complete(void)
{
	int64_t now = now_ns(), next = 0;
	struct itimerspec its = { 0 };
	struct head *h;
	struct req *r;

	for (unsigned i = 0; i < slots; i++) {
		h = &heads[i];
		if (!h->cur || h->end > now) {
			continue;
		}
		r = h->cur;
		if (r->is_write) {
			struct fuse_write_out wo = { .size = r->len };

			reply(r->unique, 0, &wo, sizeof(wo));
			stats[ST_WRITES]++;
			stats[ST_WBYTES] += r->len;
		} else {
			reply(r->unique, 0, data + r->off, r->len);
			stats[ST_READS]++;
			stats[ST_RBYTES] += r->len;
		}
		free(r);
		h->cur = NULL;
		h->free_at = h->end;
	}
	dispatch();
	for (unsigned i = 0; i < slots; i++) {
		if (heads[i].cur && (!next || heads[i].end < next)) {
			next = heads[i].end;
		}
	}
	if (next) {
		its.it_value.tv_sec = next / 1000000000LL;
		its.it_value.tv_nsec = next % 1000000000LL;
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) {
			its.it_value.tv_nsec = 1;
		}
	}
	timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void
enqueue(uint64_t unique, uint64_t off, uint32_t len, int is_write)
{
	struct req *r = malloc(sizeof(*r));

	if (!r) {
		reply(unique, -ENOMEM, NULL, 0);
		return;
	}
	*r = (struct req){ .unique = unique,
			   .off = off,
			   .len = len,
			   .is_write = is_write,
			   .arrive = now_ns() };
	*queue_tail = r;
	queue_tail = &r->next;
}

/* --- FUSE requests -------------------------------------------------------- */

static void
do_init(const struct fuse_in_header *ih, const struct fuse_init_in *in)
{
	struct fuse_init_out out = { 0 };

	if (in->major != FUSE_KERNEL_VERSION) {
		die("kernel FUSE protocol %u.%u, need %u.x", in->major,
		    in->minor, FUSE_KERNEL_VERSION);
	}
	out.major = FUSE_KERNEL_VERSION;
	out.minor = in->minor < FUSE_KERNEL_MINOR_VERSION
			    ? in->minor
			    : FUSE_KERNEL_MINOR_VERSION;
	out.max_readahead = in->max_readahead;
	out.flags =
		(FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_ASYNC_DIO) & in->flags;
	out.max_background = 256; /* above bench/run's deepest queue */
	out.congestion_threshold = 192;
	out.max_write = MAX_WRITE;
	out.time_gran = 1;
	out.max_pages = MAX_WRITE / 4096;
	reply(ih->unique, 0, &out, sizeof(out));
}

static void
do_readdir(const struct fuse_in_header *ih, const struct fuse_read_in *in)
{
	static const struct {
		uint64_t ino;
		const char *name;
		uint32_t type;
	} ents[] = {
		{ ROOT_INO, ".", S_IFDIR >> 12 },
		{ ROOT_INO, "..", S_IFDIR >> 12 },
		{ DISK_INO, "disk", S_IFREG >> 12 },
	};
	char buf[512];
	size_t len = 0;

	for (uint64_t i = in->offset; i < 3; i++) {
		struct fuse_dirent *d = (struct fuse_dirent *)(buf + len);
		size_t nl = strlen(ents[i].name), sz;

		d->namelen = nl;
		sz = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + nl);
		if (len + sz > in->size) {
			break;
		}
		d->ino = ents[i].ino;
		d->off = i + 1;
		d->type = ents[i].type;
		memcpy(d->name, ents[i].name, nl);
		memset(d->name + nl, 0, sz - FUSE_NAME_OFFSET - nl);
		len += sz;
	}
	reply(ih->unique, 0, buf, len);
}

static void
handle(const char *buf, size_t n)
{
	const struct fuse_in_header *ih = (const void *)buf;
	const void *arg = buf + sizeof(*ih);

	if (n < sizeof(*ih)) {
		fprintf(stderr, "fusedisk: short request (%zu bytes)\n", n);
		return;
	}
	if (ih->len != n) {
		fprintf(stderr,
			"fusedisk: request %u says %u bytes, read %zu\n",
			ih->opcode, ih->len, n);
		reply(ih->unique, -EIO, NULL,
		      0); /* never leave a caller hanging */
		return;
	}
	switch (ih->opcode) {
	case FUSE_INIT:
		do_init(ih, arg);
		break;
	case FUSE_LOOKUP:
		if (ih->nodeid == ROOT_INO && !strcmp(arg, "disk")) {
			struct fuse_entry_out e = { .nodeid = DISK_INO,
						    .generation = 1,
						    .entry_valid = 3600,
						    .attr_valid = 3600 };

			fill_attr(DISK_INO, &e.attr);
			reply(ih->unique, 0, &e, sizeof(e));
		} else {
			reply(ih->unique, -ENOENT, NULL, 0);
		}
		break;
	case FUSE_GETATTR:
	case FUSE_SETATTR: { /* the size is fixed: a setattr changes nothing */
		struct fuse_attr_out a = { .attr_valid = 3600 };

		fill_attr(ih->nodeid, &a.attr);
		reply(ih->unique, 0, &a, sizeof(a));
		break;
	}
	case FUSE_OPEN: {
		struct fuse_open_out o = {
			.open_flags =
				FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES
		};

		reply(ih->unique, 0, &o, sizeof(o));
		break;
	}
	case FUSE_OPENDIR: {
		struct fuse_open_out o = { 0 };

		reply(ih->unique, 0, &o, sizeof(o));
		break;
	}
	case FUSE_READDIR:
		do_readdir(ih, arg);
		break;
	case FUSE_READ: {
		const struct fuse_read_in *in = arg;

		if (in->offset >= size) {
			reply(ih->unique, 0, NULL, 0);
		} else {
			uint32_t len = in->size;

			if (in->offset + len > size) {
				len = size - in->offset;
			}
			enqueue(ih->unique, in->offset, len, 0);
		}
		break;
	}
	case FUSE_WRITE: {
		const struct fuse_write_in *in = arg;

		if (in->offset + in->size > size) {
			reply(ih->unique, -ENOSPC, NULL, 0);
		} else {
			memcpy(data + in->offset, (const char *)(in + 1),
			       in->size);
			enqueue(ih->unique, in->offset, in->size, 1);
		}
		break;
	}
	case FUSE_FLUSH:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
		stats[ST_FLUSHES]++;
		/* fall through */
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
	case FUSE_ACCESS:
		reply(ih->unique, 0, NULL, 0);
		break;
	case FUSE_STATFS: {
		struct fuse_statfs_out s = {
			.st = { .bsize = 4096, .frsize = 4096, .namelen = 255 }
		};

		reply(ih->unique, 0, &s, sizeof(s));
		break;
	}
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break; /* no reply */
	case FUSE_DESTROY:
		reply(ih->unique, 0, NULL, 0);
		stop = 1;
		break;
	default: /* xattrs, fallocate, lseek, locks...: not supported */
		reply(ih->unique, -ENOSYS, NULL, 0);
		break;
	}
}

/* --- main ------------------------------------------------------------------
 */

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: fusedisk [--size SIZE] [--access TIME] [--mbps N] [--slots N]\n"
		"                [--seq 0|1] [--populate] [--stats FILE] [--pidfile FILE]\n"
		"                [--exit-with-parent] MOUNTPOINT\n"
		"  an emulated disk as the file MOUNTPOINT/disk (see the source)\n"
		"  defaults: --size 1G --access 5ms --mbps 100 --slots 1 --seq 1\n");
	exit(rc);
}

int
main(int argc, char **argv)
{
	static char buf[BUF_SIZE] __attribute__((aligned(4096)));
	char opts[256];
	struct sigaction sa = { .sa_handler = on_signal };
	struct pollfd pfd[2];
	size_t slen = ST_N * sizeof(uint64_t);
	sigset_t stop_sigs, wait_mask;
	pid_t parent = getppid();
	bool with_parent = false;
	ssize_t n;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(0);
		} else if (a[0] != '-') {
			if (mountpoint) {
				usage(1);
			}
			mountpoint = a;
			continue;
		} else if (!strcmp(a, "--exit-with-parent")) {
			with_parent = true;
			continue;
		} else if (!strcmp(a, "--populate")) {
			populate = 1;
			continue;
		}
		if (!v) {
			usage(1);
		}
		if (!strcmp(a, "--size")) {
			size = parse_size(v);
		} else if (!strcmp(a, "--access")) {
			access_ns = parse_time(v);
		} else if (!strcmp(a, "--mbps")) {
			double m = strtod(v, NULL);

			if (m <= 0) {
				die("--mbps %s: not a positive number", v);
			}
			bytes_per_ns = m * 1e6 / 1e9;
		} else if (!strcmp(a, "--slots")) {
			slots = atoi(v);
			if (slots < 1 || slots > MAX_SLOTS) {
				die("--slots %s: must be 1..%d", v, MAX_SLOTS);
			}
		} else if (!strcmp(a, "--seq")) {
			seq = atoi(v) != 0;
		} else if (!strcmp(a, "--stats")) {
			stats_path = v;
		} else if (!strcmp(a, "--pidfile")) {
			pidfile = v;
		} else {
			usage(1);
		}
		i++;
	}
	if (!mountpoint) {
		usage(1);
	}

	data = mmap(NULL, size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (data == MAP_FAILED) {
		die("mmap %" PRIu64 " bytes: %m", size);
	}
	if (populate) {
		(void)madvise(data, size, MADV_HUGEPAGE);
		if (madvise(data, size, MADV_POPULATE_WRITE) != 0) {
			for (uint64_t o = 0; o < size; o += 4096) {
				((volatile char *)data)[o] = 0;
			}
		}
	}
	if (stats_path) {
		int fd = open(stats_path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, slen) < 0) {
			die("%s: %m", stats_path);
		}
		stats = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			     0);
		close(fd);
	} else {
		stats = mmap(NULL, slen, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (stats == MAP_FAILED) {
		die("stats: mmap: %m");
	}
	for (unsigned s = 0; s < MAX_SLOTS; s++) {
		heads[s].pos = -1;
	}

	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fuse_fd < 0) {
		die("/dev/fuse: %m");
	}
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 fuse_fd);
	if (mount("fusedisk", mountpoint, "fuse.fusedisk", MS_NOSUID | MS_NODEV,
		  opts) < 0) {
		int e = errno;

		close(fuse_fd);
		fuse_fd = -1;
		errno = e;
		die("mount %s: %m (root needed)", mountpoint);
	}
	timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (timer_fd < 0) {
		die("timerfd_create: %m");
	}
	/* Signals stay blocked except inside ppoll: one that arrives between
	 * the test of `stop` and the wait cannot be missed. */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_sigs, &wait_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (with_parent) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent) {
			stop = 1; /* it died before prctl */
		}
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
			die("%s: %m", pidfile);
		}
	}

	pfd[0] = (struct pollfd){ .fd = fuse_fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = timer_fd, .events = POLLIN };
	while (!stop) {
		if (ppoll(pfd, 2, NULL, &wait_mask) < 0) {
			if (errno == EINTR) {
				continue;
			}
			die("poll: %m");
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t ticks;

			if (read(timer_fd, &ticks, sizeof(ticks)) < 0 &&
			    errno != EAGAIN) {
				die("timerfd: %m");
			}
		}
		if (pfd[0].revents & (POLLERR | POLLHUP)) {
			break; /* unmounted */
		}
		/* Take every request that is waiting, so that the heads
		 * choose among all of them. */
		for (;;) {
			n = read(fuse_fd, buf, sizeof(buf));
			if (n < 0) {
				if (errno == EINTR || errno == ENOENT) {
					continue; /* ENOENT: interrupted request
						   */
				}
				if (errno == EAGAIN) {
					break;
				}
				if (errno == ENODEV) {
					stop = 1; /* unmounted */
					break;
				}
				die("read /dev/fuse: %m");
			}
			handle(buf, n);
		}
		complete();
	}
	if (pidfile) {
		unlink(pidfile);
	}
	umount2(mountpoint, MNT_DETACH);
	return 0;
}
