/*
 * member_overlap.h: refuse members that share bytes (the same file twice,
 * a partition and its disk, a loop device and its backing file ...).
 *
 * Each member is resolved into chains of hops, from the member down to
 * what holds its bytes; two members overlap when two of their chains meet
 * at a node with intersecting byte ranges (member_overlap.c has the
 * rules).  The chain types and overlap_meet()/overlap_reason() are pure,
 * for the unit tests; overlap_env lets them resolve against a fake sysfs.
 */
#ifndef RAID_MEMBER_OVERLAP_H
#define RAID_MEMBER_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "member.h"

/* How the previous hop sits on this one. */
enum overlap_how {
	OVERLAP_SELF,	/* hop 0: the member itself */
	OVERLAP_PART,	/* a partition of this disk */
	OVERLAP_LOOP,	/* a loop device backed by this file or device */
	OVERLAP_HOLDER, /* a device-mapper or md device built on this one */
	OVERLAP_FS,	/* a file in the filesystem on this device */
};

/* A block device by its dev_t, a file by its st_dev and st_ino. */
struct overlap_node {
	bool blk;
	dev_t dev;
	ino_t ino;
};

#define OVERLAP_ALL UINT64_MAX /* end of a range: all of the node */

struct overlap_hop {
	struct overlap_node node;
	enum overlap_how how;
	uint64_t start, end; /* the bytes of the node used, [start, end) */
	const char *name;    /* for messages: a path */
};

#define OVERLAP_MAX_HOPS 16

struct overlap_chain {
	unsigned nr_hops;
	struct overlap_hop hop[OVERLAP_MAX_HOPS];
};

/* One member's chains (a device over n slaves has n), and their names. */
struct overlap_set {
	unsigned nr_chains;
	struct overlap_chain *chains;
	unsigned nr_names;
	char **names;
};

/* Where sysfs and device nodes are ("/sys", "/dev"; a fake tree in tests). */
struct overlap_env {
	const char *sys;
	const char *dev;
};

/*
 * Whether chains a and b share bytes: they meet at a node (*ha, *hb are
 * the hops there) and their ranges on it intersect.
 */
bool overlap_meet(const struct overlap_chain *a, const struct overlap_chain *b,
		  unsigned *ha, unsigned *hb);

/*
 * Why chain a (member ra) overlaps chain b (member rb), met at hops ha and
 * hb, not both 0: "a partition of it", "member 0 is a loop device backed
 * by it", "both use /srv/a.img: member 1 bytes [0, 4096), member 0 ...".
 */
void overlap_reason(const struct overlap_chain *a, unsigned ra, unsigned ha,
		    const struct overlap_chain *b, unsigned rb, unsigned hb,
		    char *buf, size_t len);

int overlap_resolve(const struct overlap_env *env, const struct raid_member *m,
		    struct overlap_set *set);
void overlap_set_free(struct overlap_set *set);

/*
 * 0, or -EINVAL after raid_error() naming both members and the reason;
 * members without an fd (tests) are not checked.
 */
int member_overlap_check_env(const struct overlap_env *env,
			     const struct raid_member *m, unsigned nr);
int member_overlap_check(const struct raid_member *m, unsigned nr);

#endif
