/*
 * member_overlap.c: refuse members that share bytes.
 *
 * md refuses the same device twice.  The same bytes can also arrive
 * through two different devices (a partition and its disk, a loop device
 * and its backing file), and RAID would then write them through two roles.
 * So each member is resolved, hop by hop, into a chain down to what holds
 * its bytes:
 *
 *   this hop      next hop                           its bytes there
 *   partition     its disk (sysfs ../dev)            + start * 512 (sysfs)
 *   loop device   its backing file or device         + lo_offset
 *                 (LOOP_GET_STATUS64, else sysfs loop/)
 *   dm/md device  each of its slaves: a chain each   all of it (conservative)
 *   file          the device of its filesystem       all of it
 *                 (st_dev)
 *   other         (a whole disk; a file on tmpfs or btrfs): the chain ends
 *
 * A block device is known by its dev_t, a file by st_dev and st_ino.  Two
 * chains meet at their first common node; from there on both resolve the
 * same way, so they overlap when their ranges on that node intersect.
 * Two different files meeting at the device of their filesystem do not.
 *
 * Resolution is best effort: what cannot be read ends the chain (with a
 * debug line), so an overlap can be missed but not invented, except that
 * a dm/md device is taken to use all of every slave.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "member_overlap.h"
#include "util.h"

#define LOOP_MAJOR 7

/* ---- the pure part: do two chains meet, and why ----------------------- */

static bool
node_eq(const struct overlap_node *a, const struct overlap_node *b)
{
	return a->blk == b->blk && a->dev == b->dev &&
	       (a->blk || a->ino == b->ino);
}

static bool
hops_intersect(const struct overlap_hop *a, const struct overlap_hop *b)
{
	/* Two files of one filesystem: were they one file, they met there. */
	if (a->how == OVERLAP_FS && b->how == OVERLAP_FS) {
		return false;
	}
	return a->start < b->end && b->start < a->end;
}

bool
overlap_meet(const struct overlap_chain *a, const struct overlap_chain *b,
	     unsigned *ha, unsigned *hb)
{
	for (unsigned i = 0; i < a->nr_hops; i++) {
		for (unsigned j = 0; j < b->nr_hops; j++) {
			if (!node_eq(&a->hop[i].node, &b->hop[j].node)) {
				continue;
			}
			*ha = i;
			*hb = j;
			return hops_intersect(&a->hop[i], &b->hop[j]);
		}
	}
	return false;
}

/* hop k's how: what hop k-1 is to hop k. */
static const char *const how_text[] = {
	[OVERLAP_SELF] = "",
	[OVERLAP_PART] = "a partition of ",
	[OVERLAP_LOOP] = "a loop device backed by ",
	[OVERLAP_HOLDER] = "a device-mapper or md device on ",
	[OVERLAP_FS] = "a file in the filesystem on ",
};

/* Append to buf[*at...]; truncates, always terminated. */
static void
append(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len) {
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	*at = n < 0 ? len : MIN(*at + n, len);
}

/* "a partition of a loop device backed by it": hop 0 as seen from hop k. */
static void
describe(char *buf, size_t len, size_t *at, const struct overlap_chain *c,
	 unsigned k)
{
	for (unsigned i = 1; i <= k; i++) {
		append(buf, len, at, "%s", how_text[c->hop[i].how]);
	}
	append(buf, len, at, "it");
}

static void
describe_use(char *buf, size_t len, size_t *at, unsigned role,
	     const struct overlap_hop *h)
{
	if (h->how == OVERLAP_FS) {
		append(buf, len, at, "member %u a file in its filesystem",
		       role);
	} else if (h->end == OVERLAP_ALL) {
		append(buf, len, at, "member %u all of it", role);
	} else {
		append(buf, len, at, "member %u bytes [%llu, %llu)", role,
		       (unsigned long long)h->start,
		       (unsigned long long)h->end);
	}
}

void
overlap_reason(const struct overlap_chain *a, unsigned ra, unsigned ha,
	       const struct overlap_chain *b, unsigned rb, unsigned hb,
	       char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	if (hb == 0) {
		describe(buf, len, &at, a, ha);
	} else if (ha == 0) {
		append(buf, len, &at, "member %u is ", rb);
		describe(buf, len, &at, b, hb);
	} else {
		append(buf, len, &at, "both use %s: ", a->hop[ha].name);
		describe_use(buf, len, &at, ra, &a->hop[ha]);
		append(buf, len, &at, ", ");
		describe_use(buf, len, &at, rb, &b->hop[hb]);
	}
}

/* ---- resolving a member into chains ------------------------------------ */

struct resolver {
	const struct overlap_env *env;
	const struct raid_member *m;
	struct overlap_set *set;
	struct overlap_chain chain; /* the chain being built */
};

static int resolve(struct resolver *r);

static const char *
intern(struct resolver *r, const char *s)
{
	struct overlap_set *set = r->set;
	char **names;

	names = realloc(set->names, (set->nr_names + 1) * sizeof(*names));
	if (!names) {
		return NULL;
	}
	set->names = names;
	names[set->nr_names] = strdup(s);
	return names[set->nr_names] ? names[set->nr_names++] : NULL;
}

/* <sys>/dev/block/MAJ:MIN/rel into buf. */
static int
sys_path(const struct resolver *r, char *buf, size_t len, dev_t dev,
	 const char *rel)
{
	int n = snprintf(buf, len, "%s/dev/block/%u:%u/%s", r->env->sys,
			 major(dev), minor(dev), rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool
sys_has(const struct resolver *r, dev_t dev, const char *rel)
{
	char path[PATH_MAX];

	return sys_path(r, path, sizeof(path), dev, rel) == 0 &&
	       access(path, F_OK) == 0;
}

/* The first line of a sysfs file, without its newline. */
static int
sys_text(const struct resolver *r, dev_t dev, const char *rel, char *buf,
	 size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, err;

	err = sys_path(r, path, sizeof(path), dev, rel);
	if (err < 0) {
		return err;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0) {
		return -err;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int
sys_u64(const struct resolver *r, dev_t dev, const char *rel, uint64_t *v)
{
	char text[32], *end;
	int err = sys_text(r, dev, rel, text, sizeof(text));

	if (err < 0) {
		return err;
	}
	errno = 0;
	*v = strtoull(text, &end, 10);
	return errno || end == text || *end ? -EINVAL : 0;
}

/* A "MAJ:MIN" file (sysfs dev). */
static int
sys_devt(const struct resolver *r, dev_t dev, const char *rel, dev_t *out)
{
	char text[32];
	unsigned maj, min;
	int err = sys_text(r, dev, rel, text, sizeof(text));

	if (err < 0) {
		return err;
	}
	if (sscanf(text, "%u:%u", &maj, &min) != 2) {
		return -EINVAL;
	}
	*out = makedev(maj, min);
	return 0;
}

/* The kernel's name of a block device (loop0p1), from its sysfs link. */
static int
kernel_name(const struct resolver *r, dev_t dev, char *buf, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *base;
	ssize_t n;
	int err = sys_path(r, path, sizeof(path), dev, "");

	if (err < 0) {
		return err;
	}
	path[strlen(path) - 1] = '\0'; /* the link, not its target */
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0) {
		return n < 0 ? -errno : -EINVAL;
	}
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	return snprintf(buf, len, "%s", base) < (int)len ? 0 : -ENAMETOOLONG;
}

/* "/dev/loop0p1" for messages, or "block device 259:0". */
static const char *
blk_name(struct resolver *r, dev_t dev)
{
	char kname[NAME_MAX + 1], name[NAME_MAX + 32];

	if (kernel_name(r, dev, kname, sizeof(kname)) == 0) {
		snprintf(name, sizeof(name), "/dev/%s", kname);
	} else {
		snprintf(name, sizeof(name), "block device %u:%u", major(dev),
			 minor(dev));
	}
	return intern(r, name);
}

static void
chain_debug(const struct resolver *r, const struct overlap_chain *c)
{
	char text[1024];
	size_t at = 0;

	for (unsigned i = 1; i < c->nr_hops; i++) {
		const struct overlap_hop *h = &c->hop[i];

		append(text, sizeof(text), &at, "%s%s%s",
		       i > 1 ? ", which is " : "", how_text[h->how], h->name);
		if (h->end != OVERLAP_ALL) {
			append(text, sizeof(text), &at, " at [%llu, %llu)",
			       (unsigned long long)h->start,
			       (unsigned long long)h->end);
		}
	}
	if (at) {
		raid_debug("member %u (%s): %s", r->m->role, r->m->path, text);
	}
}

/* The chain ends here: keep a copy. */
static int
chain_done(struct resolver *r)
{
	struct overlap_set *set = r->set;
	struct overlap_chain *chains;

	chains = realloc(set->chains, (set->nr_chains + 1) * sizeof(*chains));
	if (!chains) {
		return -ENOMEM;
	}
	set->chains = chains;
	chains[set->nr_chains++] = r->chain;
	chain_debug(r, &r->chain);
	return 0;
}

/* Append hop h, resolve on from it, and take it off again. */
static int
descend(struct resolver *r, const struct overlap_hop *h)
{
	struct overlap_chain *c = &r->chain;
	int err;

	for (unsigned i = 0; i < c->nr_hops; i++) {
		if (node_eq(&c->hop[i].node, &h->node)) {
			raid_debug("member %u (%s): %s loops back on itself",
				   r->m->role, r->m->path, h->name);
			return chain_done(r);
		}
	}
	if (c->nr_hops == OVERLAP_MAX_HOPS) {
		raid_debug(
			"member %u (%s): overlap check stops after %d hops, at %s",
			r->m->role, r->m->path, OVERLAP_MAX_HOPS, h->name);
		return chain_done(r);
	}
	c->hop[c->nr_hops++] = *h;
	err = resolve(r);
	c->nr_hops--;
	return err;
}

/* The next hop's range: the last one's, shifted by off (all stays all). */
static void
shift_range(struct overlap_hop *h, const struct overlap_hop *last, uint64_t off)
{
	h->start = last->start + off;
	h->end = last->end == OVERLAP_ALL ? OVERLAP_ALL : last->end + off;
}

/* A file: the block device under its filesystem, if it has one. */
static int
resolve_file(struct resolver *r, const struct overlap_hop *last)
{
	struct overlap_hop h = {
		.node = { .blk = true, .dev = last->node.dev },
		.how = OVERLAP_FS,
		.start = 0,
		.end = OVERLAP_ALL,
	};

	/* tmpfs, btrfs, overlayfs ...: an anonymous st_dev, no device. */
	if (major(h.node.dev) == 0 || !sys_has(r, h.node.dev, "dev")) {
		return chain_done(r);
	}
	h.name = blk_name(r, h.node.dev);
	return h.name ? descend(r, &h) : -ENOMEM;
}

static int
resolve_partition(struct resolver *r, const struct overlap_hop *last)
{
	struct overlap_hop h = { .node = { .blk = true }, .how = OVERLAP_PART };
	uint64_t start;

	if (sys_u64(r, last->node.dev, "start", &start) < 0 ||
	    sys_devt(r, last->node.dev, "../dev", &h.node.dev) < 0) {
		raid_debug(
			"member %u (%s): %s: cannot read its start and disk in sysfs",
			r->m->role, r->m->path, last->name);
		return chain_done(r);
	}
	shift_range(&h, last, start * RAID_SECTOR_BYTES);
	h.name = blk_name(r, h.node.dev);
	return h.name ? descend(r, &h) : -ENOMEM;
}

/*
 * A loop device's backing file or device and offset, by LOOP_GET_STATUS64
 * on the member's own fd or on the device node.  lo_device and lo_rdevice
 * are the kernel's huge_encode_dev(), which is glibc's dev_t encoding for
 * any major below 4096 (all of them).
 */
static int
loop_status(struct resolver *r, const struct overlap_hop *last,
	    struct overlap_hop *h, uint64_t *offset, char *name, size_t len)
{
	struct loop_info64 li;
	char kname[NAME_MAX + 1], path[PATH_MAX];
	int fd, err;

	if (r->chain.nr_hops == 1) {
		/* CLOEXEC: an event program spawned meanwhile gets no copy. */
		fd = fcntl(r->m->fd, F_DUPFD_CLOEXEC, 0);
	} else if (kernel_name(r, last->node.dev, kname, sizeof(kname)) == 0 &&
		   snprintf(path, sizeof(path), "%s/%s", r->env->dev, kname) <
			   (int)sizeof(path)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
	} else {
		return -ENOENT;
	}
	if (fd < 0) {
		return -errno;
	}
	err = ioctl(fd, LOOP_GET_STATUS64, &li) < 0 ? -errno : 0;
	close(fd);
	if (err < 0) {
		return err;
	}
	h->node.blk = li.lo_rdevice != 0;
	h->node.dev = h->node.blk ? (dev_t)li.lo_rdevice : (dev_t)li.lo_device;
	h->node.ino = h->node.blk ? 0 : (ino_t)li.lo_inode;
	*offset = li.lo_offset;
	if (sys_text(r, last->node.dev, "loop/backing_file", name, len) < 0) {
		snprintf(name, len, "%.*s", LO_NAME_SIZE,
			 (char *)li.lo_file_name);
	}
	return 0;
}

/* The same from sysfs loop/ (no device node to open: containers, tests). */
static int
loop_sysfs(struct resolver *r, const struct overlap_hop *last,
	   struct overlap_hop *h, uint64_t *offset, char *name, size_t len)
{
	struct stat st;
	int err;

	err = sys_text(r, last->node.dev, "loop/backing_file", name, len);
	if (err == 0) {
		err = sys_u64(r, last->node.dev, "loop/offset", offset);
	}
	if (err == 0 && stat(name, &st) < 0) {
		err = -errno;
	}
	if (err < 0) {
		return err;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		return -EINVAL;
	}
	h->node.blk = S_ISBLK(st.st_mode);
	h->node.dev = h->node.blk ? st.st_rdev : st.st_dev;
	h->node.ino = h->node.blk ? 0 : st.st_ino;
	return 0;
}

static int
resolve_loop(struct resolver *r, const struct overlap_hop *last)
{
	struct overlap_hop h = { .how = OVERLAP_LOOP };
	char name[PATH_MAX];
	uint64_t offset = 0;
	int err;

	err = loop_status(r, last, &h, &offset, name, sizeof(name));
	if (err == -ENXIO) {
		return chain_done(r); /* no backing file: not bound */
	}
	if (err < 0) {
		err = loop_sysfs(r, last, &h, &offset, name, sizeof(name));
	}
	if (err < 0) {
		raid_debug(
			"member %u (%s): %s: cannot tell what backs the loop device: %s",
			r->m->role, r->m->path, last->name, strerror(-err));
		return chain_done(r);
	}
	shift_range(&h, last, offset);
	h.name = intern(r, name);
	return h.name ? descend(r, &h) : -ENOMEM;
}

/* A dm or md device: each slave, all of it; none: a whole disk, the end. */
static int
resolve_slaves(struct resolver *r, const struct overlap_hop *last)
{
	char path[PATH_MAX], rel[NAME_MAX + 16];
	struct dirent *e;
	unsigned nr = 0;
	DIR *d;
	int err = 0;

	if (sys_path(r, path, sizeof(path), last->node.dev, "slaves") < 0 ||
	    !(d = opendir(path))) {
		return chain_done(r);
	}
	while (err == 0 && (e = readdir(d))) {
		struct overlap_hop h = {
			.node = { .blk = true },
			.how = OVERLAP_HOLDER,
			.start = 0,
			.end = OVERLAP_ALL,
		};

		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(rel, sizeof(rel), "slaves/%s/dev", e->d_name);
		if (sys_devt(r, last->node.dev, rel, &h.node.dev) < 0) {
			raid_debug("member %u (%s): %s: cannot read slave %s",
				   r->m->role, r->m->path, last->name,
				   e->d_name);
			continue;
		}
		h.name = blk_name(r, h.node.dev);
		err = h.name ? descend(r, &h) : -ENOMEM;
		nr++;
	}
	closedir(d);
	return err < 0 || nr ? err : chain_done(r);
}

static int
resolve_blk(struct resolver *r, const struct overlap_hop *last)
{
	if (sys_has(r, last->node.dev, "partition")) {
		return resolve_partition(r, last);
	}
	if (major(last->node.dev) == LOOP_MAJOR ||
	    sys_has(r, last->node.dev, "loop")) {
		return resolve_loop(r, last);
	}
	return resolve_slaves(r, last);
}

/* Resolve on from the chain's last hop. */
static int
resolve(struct resolver *r)
{
	struct overlap_hop last = r->chain.hop[r->chain.nr_hops - 1];

	return last.node.blk ? resolve_blk(r, &last) : resolve_file(r, &last);
}

int
overlap_resolve(const struct overlap_env *env, const struct raid_member *m,
		struct overlap_set *set)
{
	struct resolver r = { .env = env, .m = m, .set = set };
	int err;

	memset(set, 0, sizeof(*set));
	r.chain.nr_hops = 1;
	r.chain.hop[0] = (struct overlap_hop){
		.node = { .blk = m->is_blk,
			  .dev = m->dev,
			  .ino = m->is_blk ? 0 : m->ino },
		.how = OVERLAP_SELF,
		.start = 0,
		.end = m->size,
		.name = m->path,
	};
	err = resolve(&r);
	if (err < 0) {
		overlap_set_free(set);
	}
	return err;
}

void
overlap_set_free(struct overlap_set *set)
{
	for (unsigned i = 0; i < set->nr_names; i++) {
		free(set->names[i]);
	}
	free(set->names);
	free(set->chains);
	memset(set, 0, sizeof(*set));
}

/* ---- the check ---------------------------------------------------------- */

static int
check_pair(const struct raid_member *m, const struct overlap_set *sets,
	   unsigned i, unsigned j)
{
	char why[PATH_MAX + 128];
	unsigned ha, hb;

	for (unsigned a = 0; a < sets[i].nr_chains; a++) {
		for (unsigned b = 0; b < sets[j].nr_chains; b++) {
			if (!overlap_meet(&sets[i].chains[a],
					  &sets[j].chains[b], &ha, &hb)) {
				continue;
			}
			if (ha == 0 && hb == 0) {
				raid_error(
					"member %u (%s): same file as member %u (%s)",
					i, m[i].path, j, m[j].path);
				return -EINVAL;
			}
			overlap_reason(&sets[i].chains[a], i, ha,
				       &sets[j].chains[b], j, hb, why,
				       sizeof(why));
			raid_error(
				"member %u (%s): overlaps member %u (%s): %s",
				i, m[i].path, j, m[j].path, why);
			return -EINVAL;
		}
	}
	return 0;
}

int
member_overlap_check_env(const struct overlap_env *env,
			 const struct raid_member *m, unsigned nr)
{
	struct overlap_set *sets;
	int err = 0;

	sets = calloc(nr, sizeof(*sets));
	if (!sets) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nr && err == 0; i++) {
		if (m[i].fd >= 0) {
			err = overlap_resolve(env, &m[i], &sets[i]);
		}
	}
	for (unsigned i = 0; i < nr && err == 0; i++) {
		for (unsigned j = 0; j < i && err == 0; j++) {
			err = check_pair(m, sets, i, j);
		}
	}
	for (unsigned i = 0; i < nr; i++) {
		overlap_set_free(&sets[i]);
	}
	free(sets);
	return err;
}

int
member_overlap_check(const struct raid_member *m, unsigned nr)
{
	static const struct overlap_env env = { .sys = "/sys", .dev = "/dev" };

	return member_overlap_check_env(&env, m, nr);
}
