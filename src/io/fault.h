/*
 * fault.h: fault injection per member (fault=ROLE:RULES), for tests and
 * rehearsals of failures (docs/nbdkit-raid-plugin.md, "Fault injection").
 *
 * Each fault= value is one rule for one role: comma-separated settings
 * that all must hold for an I/O to be hit (ops, range, after, trigger,
 * rate, count), and what a hit does (latency, errno, or error=none; touch
 * creates a file to say it happened).  A
 * member with rules gets the fault backend in place of its own, which it
 * keeps (struct fault); members without rules are left alone.
 *
 * Lifetime: fault_attach once the array is assembled, before any I/O
 * thread; fault_detach at member_close.  Rules never change in between.
 */
#ifndef RAID_FAULT_H
#define RAID_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io.h"

struct raid_member;

#define FAULT_OPS_READ	(1u << 0)
#define FAULT_OPS_WRITE (1u << 1) /* write, flush, trim, zero, punch */

#define FAULT_ROLE_LOG	     (~0u) /* fault=log:RULES: cache=log's log */
#define FAULT_DEFAULT_SEED   1
#define FAULT_MAX_LATENCY_NS (3600ull * 1000000000ull)

struct fault_rule {
	char *spec;	/* the fault= value as given, for messages */
	unsigned role;	/* the member's role */
	unsigned ops;	/* FAULT_OPS_* it matches */
	uint64_t after; /* bytes of matching I/O seen before any hit */
	uint64_t range_off;
	uint64_t range_len; /* 0: anywhere */
	char *trigger;	    /* hit only while this path exists; or NULL */
	char *touch;	    /* created at each hit; or NULL */
	uint64_t count;	    /* hit at most this many I/Os; 0: no limit */
	double rate;	    /* probability that a matching I/O is hit */
	uint64_t rate_cut;  /* rate < 1: a draw below this hits */
	uint64_t seed;
	uint64_t latency_ns; /* a hit waits this long */
	int err;	     /* a hit fails with -err; 0: error=none */

	/* Run time, from fault_attach on. */
	atomic_uint_fast64_t seen; /* bytes of ops/range matching I/O */
	atomic_uint_fast64_t rng;  /* xorshift64* state (rate < 1) */
	atomic_uint_fast64_t hits; /* I/Os hit */
};

/* A member's rules, in the order given, and its own backend. */
struct fault {
	const struct io_backend *be;
	unsigned nr_rules;
	struct fault_rule rules[];
};

extern const struct io_backend fault_backend;

/*
 * Parse one fault= value into *out (its strings allocated: fault_rule_fini
 * frees them).  0, or -EINVAL with err holding the whole message, e.g.
 * "fault '1:rate=2': rate must be from 0 to 1" (or -ENOMEM).
 */
int fault_parse(const char *spec, struct fault_rule *out, char *err,
		size_t errlen);
void fault_rule_fini(struct fault_rule *r);

/* Parse every value, logging the first refusal (raid_config_check). */
int fault_check(char *const *specs, unsigned nspecs);

/*
 * Give members m[0..nr) (role order) the rules of specs: a role >= nr is
 * refused (logged), a role with no member (be NULL, or missing) skipped.
 * 0 or -errno; on error no member is changed.
 */
int fault_attach(struct raid_member *m, unsigned nr, char *const *specs,
		 unsigned nspecs);
/* Put back the member's own backend and free its rules (if it has any). */
void fault_detach(struct raid_member *m);

/* I/Os of the member hit by its rules so far. */
uint64_t fault_hits(const struct raid_member *m);

/*
 * fault=log:RULES: the rules for cache=log's log (docs/cache.md, "Fault
 * points"), NULL when there are none (or no memory: -errno in *err).  The
 * log's writes are writes at their byte position in it (records, header
 * slots), its fdatasyncs flushes (no range).
 */
struct fault *fault_log_rules(char *const *specs, unsigned nspecs, int *err);
/*
 * Decide one I/O of the log at path (write: a write of len bytes at off;
 * else a sync): its latency slept here, 0 or its -errno.  The first hit of
 * each rule is said in the error log (a test waits for it there).
 */
int fault_log_decide(struct fault *f, const char *path, bool write,
		     uint64_t off, uint64_t len);
void fault_log_free(struct fault *f);

#endif
