/*
 * fault.c: fault= rules and the backend that applies them (see fault.h).
 *
 * DESIGN
 * fault_attach swaps a member's backend for fault_backend and keeps the
 * original in its struct fault.  batch_run hands fault_backend the reqs of
 * every member that has rules (consecutive reqs of one backend go down in
 * one call), and submit_wait:
 *
 *   1. decides each req: every rule of its member is checked, in order;
 *      a rule hits when all its conditions hold:
 *        ops      the req's kind (read; or write, flush, trim, zero, punch)
 *        range    the req overlaps it (a flush has no range: never)
 *        after    the rule had seen that many bytes of ops/range matching
 *                 I/O before this req (counted whether hit or not)
 *        trigger  the path exists now (access(2), per req)
 *        rate     a draw of the rule's own PRNG is below it
 *        count    the rule has hit fewer I/Os than that so far
 *      The first hitting rule with an error decides the req's -errno; the
 *      latencies of all hitting rules add up; a hitting rule with touch=
 *      creates its file then (a test waits for it to know the I/O is
 *      reached, e.g. held by a long latency, before it kills nbdkit);
 *   2. sleeps once, the largest latency of the call's reqs (a call's reqs
 *      run in parallel on the member backends: a slow member delays the
 *      call once, not once per req), before issuing anything;
 *   3. hands the reqs that pass to their members' own backends: in place
 *      when none failed and all share one backend, else copied into this
 *      thread's scratch, grouped by backend, and copied back whole (res,
 *      done, and iov/nr_iov, which io_req_advance may move).
 *
 * Invariants: a failed req was never issued and has done == 0; when
 * submit_wait returns every req has its res (io.h).  Rules are fixed once
 * attached; their counters and PRNG are atomics, so threads share them
 * without a lock.  The data path allocates only when this thread's scratch
 * must grow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "log.h"
#include "member.h"
#include "tls.h"
#include "util.h"

#define NS_PER_SEC	  1000000000ull
#define TWO_POW_64	  18446744073709551616.0 /* rate * 2^64: the cut of draws */
#define SCRATCH_FIRST_CAP 64

/* ---- parsing ----------------------------------------------------------- */

static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EIO", EIO },
	{ "ENOSPC", ENOSPC },
	{ "ENODEV", ENODEV },
	{ "ENXIO", ENXIO },
	{ "ETIMEDOUT", ETIMEDOUT },
	{ "EROFS", EROFS },
	{ "EDQUOT", EDQUOT },
	{ "EBUSY", EBUSY },
	{ "ENOMEM", ENOMEM },
	{ "EOPNOTSUPP", EOPNOTSUPP },
};

static int
parse_ops(struct fault_rule *r, const char *v)
{
	if (strcmp(v, "read") == 0) {
		r->ops = FAULT_OPS_READ;
	} else if (strcmp(v, "write") == 0) {
		r->ops = FAULT_OPS_WRITE;
	} else if (strcmp(v, "rw") == 0) {
		r->ops = FAULT_OPS_READ | FAULT_OPS_WRITE;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int
parse_rate(struct fault_rule *r, const char *v)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(v, &end);
	if (!*v || *end || errno || !(p >= 0.0 && p <= 1.0)) {
		return -EINVAL;
	}
	r->rate = p;
	r->rate_cut = p < 1.0 ? (uint64_t)(p * TWO_POW_64) : UINT64_MAX;
	return 0;
}

static int
parse_after(struct fault_rule *r, const char *v)
{
	return raid_parse_size(v, &r->after) < 0 ? -EINVAL : 0;
}

/* OFFSET+LENGTH, both sizes; LENGTH not zero. */
static int
parse_range(struct fault_rule *r, const char *v)
{
	const char *plus = strchr(v, '+');
	char off[64];

	if (!plus || (size_t)(plus - v) >= sizeof(off)) {
		return -EINVAL;
	}
	memcpy(off, v, plus - v);
	off[plus - v] = '\0';
	if (raid_parse_size(off, &r->range_off) < 0 ||
	    raid_parse_size(plus + 1, &r->range_len) < 0 || !r->range_len) {
		return -EINVAL;
	}
	return 0;
}

/* A whole number from 1: the most I/Os the rule hits. */
static int
parse_count(struct fault_rule *r, const char *v)
{
	unsigned long long n;
	char *end;

	if (*v < '0' || *v > '9') {
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	if (*end || errno || n == 0) {
		return -EINVAL;
	}
	r->count = n;
	return 0;
}

static int
parse_trigger(struct fault_rule *r, const char *v)
{
	if (v[0] != '/') {
		return -EINVAL;
	}
	r->trigger = strdup(v);
	return r->trigger ? 0 : -ENOMEM;
}

/* A whole number and its unit: ns, us, ms or s; at most an hour. */
static int
parse_latency(struct fault_rule *r, const char *v)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = { { "ns", 1 },
		      { "us", 1000 },
		      { "ms", 1000000 },
		      { "s", NS_PER_SEC } };
	unsigned long long n;
	char *end;

	if (*v < '0' || *v > '9') {
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	for (unsigned i = 0; i < ARRAY_SIZE(units) && !errno; i++) {
		if (strcmp(end, units[i].unit) == 0 &&
		    n <= FAULT_MAX_LATENCY_NS / units[i].ns) {
			r->latency_ns = n * units[i].ns;
			return 0;
		}
	}
	return -EINVAL;
}

static int
parse_touch(struct fault_rule *r, const char *v)
{
	if (v[0] != '/') {
		return -EINVAL;
	}
	r->touch = strdup(v);
	return r->touch ? 0 : -ENOMEM;
}

static int
parse_errno(struct fault_rule *r, const char *v)
{
	for (unsigned i = 0; i < ARRAY_SIZE(errnos); i++) {
		if (strcasecmp(v, errnos[i].name) == 0) {
			r->err = errnos[i].err;
			return 0;
		}
	}
	return -EINVAL;
}

static int
parse_error(struct fault_rule *r, const char *v)
{
	if (strcmp(v, "none") != 0) {
		return -EINVAL;
	}
	r->err = 0;
	return 0;
}

static int
parse_seed(struct fault_rule *r, const char *v)
{
	unsigned long long n;
	char *end;

	if (*v < '0' || *v > '9') {
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(v, &end, 10);
	if (*end || errno) {
		return -EINVAL;
	}
	r->seed = n;
	return 0;
}

/* The settings of a rule; a bit each in `given`. */
enum {
	K_OPS,
	K_RATE,
	K_AFTER,
	K_RANGE,
	K_TRIGGER,
	K_COUNT,
	K_LATENCY,
	K_ERRNO,
	K_ERROR,
	K_SEED,
	K_TOUCH,
};

static const struct {
	const char *name;
	int (*parse)(struct fault_rule *r, const char *v);
	const char *must; /* the reason when parse refuses */
} keys[] = {
	[K_OPS] = { "ops", parse_ops, "ops must be read, write or rw" },
	[K_RATE] = { "rate", parse_rate, "rate must be from 0 to 1" },
	[K_AFTER] = { "after", parse_after, "after must be a size (64M)" },
	[K_RANGE] = { "range", parse_range,
		      "range must be OFFSET+LENGTH (1M+4k), LENGTH not 0" },
	[K_TRIGGER] = { "trigger", parse_trigger,
			"trigger must be an absolute path" },
	[K_COUNT] = { "count", parse_count,
		      "count must be a whole number from 1" },
	[K_LATENCY] = { "latency", parse_latency,
			"latency must be a whole number and a unit (500us, 20ms, 1s), at most 3600s" },
	[K_ERRNO] = { "errno", parse_errno,
		      "errno must be EIO, ENOSPC, ENODEV, ENXIO, ETIMEDOUT, EROFS, EDQUOT, EBUSY, ENOMEM or EOPNOTSUPP" },
	[K_ERROR] = { "error", parse_error,
		      "error must be none (errno= says which error)" },
	[K_SEED] = { "seed", parse_seed, "seed must be a whole number" },
	[K_TOUCH] = { "touch", parse_touch, "touch must be an absolute path" },
};

/* splitmix64: any seed, 0 too, gives a well-mixed non-zero state. */
static uint64_t
seed_state(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

static void
rule_defaults(struct fault_rule *r)
{
	memset(r, 0, sizeof(*r));
	r->ops = FAULT_OPS_READ | FAULT_OPS_WRITE;
	r->rate = 1.0;
	r->rate_cut = UINT64_MAX;
	r->seed = FAULT_DEFAULT_SEED;
	r->err = EIO;
	atomic_init(&r->seen, 0);
	atomic_init(&r->rng, 0);
	atomic_init(&r->hits, 0);
}

/* One NAME=VALUE setting: its reason in *why when refused. */
static int
parse_item(struct fault_rule *r, char *item, unsigned *given, const char **why,
	   char *buf, size_t buflen)
{
	char *eq = strchr(item, '=');

	if (!*item) {
		*why = "empty setting (two commas, or one at an end)";
		return -EINVAL;
	}
	if (!eq) {
		snprintf(buf, buflen, "setting '%s' must be NAME=VALUE", item);
		*why = buf;
		return -EINVAL;
	}
	*eq = '\0';
	for (unsigned k = 0; k < ARRAY_SIZE(keys); k++) {
		int ret;

		if (strcmp(item, keys[k].name) != 0) {
			continue;
		}
		if (*given & (1u << k)) {
			snprintf(buf, buflen, "%s given twice", item);
			*why = buf;
			return -EINVAL;
		}
		*given |= 1u << k;
		ret = keys[k].parse(r, eq + 1);
		*why = ret == -ENOMEM ? "out of memory" : keys[k].must;
		return ret;
	}
	snprintf(
		buf, buflen,
		"unknown setting '%s' (ops, rate, after, range, trigger, count, latency, errno, error, seed, touch)",
		item);
	*why = buf;
	return -EINVAL;
}

/* ROLE before the colon (or the whole value): a member number, or "log". */
static int
parse_role(struct fault_rule *r, const char *spec, const char **rest)
{
	size_t n = strspn(spec, "0123456789");

	if (strncmp(spec, "log", 3) == 0 && (spec[3] == ':' || !spec[3])) {
		r->role = FAULT_ROLE_LOG;
		*rest = spec[3] == ':' ? spec + 4 : spec + 3;
		return 0;
	}
	if (n == 0 || n > 3 || (spec[n] != ':' && spec[n] != '\0')) {
		return -EINVAL;
	}
	r->role = (unsigned)strtoul(spec, NULL, 10);
	*rest = spec[n] == ':' ? spec + n + 1 : spec + n;
	return r->role < RAID_MAX_MEMBERS ? 0 : -EINVAL;
}

/* The settings after ROLE (none: every I/O fails), then them together. */
static int
parse_items(struct fault_rule *r, char *list, const char **why, char *buf,
	    size_t buflen)
{
	char *rest = *list ? list : NULL, *item;
	unsigned given = 0;
	int ret = 0;

	while (ret == 0 && (item = strsep(&rest, ",")) != NULL) {
		ret = parse_item(r, item, &given, why, buf, buflen);
	}
	if (ret < 0) {
		return ret;
	}
	if ((given & (1u << K_ERROR)) && (given & (1u << K_ERRNO))) {
		*why = "errno= and error=none contradict each other";
		return -EINVAL;
	}
	if ((given & (1u << K_ERROR)) && !r->latency_ns) {
		*why = "error=none without latency= does nothing";
		return -EINVAL;
	}
	return 0;
}

int
fault_parse(const char *spec, struct fault_rule *out, char *err, size_t errlen)
{
	const char *why = NULL, *rest;
	char buf[160], *list = NULL;
	int r;

	rule_defaults(out);
	r = parse_role(out, spec, &rest);
	if (r < 0) {
		why = "ROLE must be a member's role from 0 to 63, or log (cache=log's log), then :RULES";
	} else {
		list = strdup(rest);
		out->spec = strdup(spec);
		r = list && out->spec ? 0 : -ENOMEM;
		why = "out of memory";
	}
	if (r == 0) {
		r = parse_items(out, list, &why, buf, sizeof(buf));
	}
	free(list);
	if (r < 0) {
		snprintf(err, errlen, "fault '%s': %s", spec, why);
		fault_rule_fini(out);
		return r;
	}
	atomic_init(&out->rng, seed_state(out->seed));
	return 0;
}

void
fault_rule_fini(struct fault_rule *r)
{
	free(r->spec);
	free(r->trigger);
	free(r->touch);
	r->spec = r->trigger = r->touch = NULL;
}

int
fault_check(char *const *specs, unsigned nspecs)
{
	char err[512];

	for (unsigned i = 0; i < nspecs; i++) {
		struct fault_rule r;
		int ret = fault_parse(specs[i], &r, err, sizeof(err));

		if (ret < 0) {
			raid_error("%s", err);
			return ret;
		}
		fault_rule_fini(&r);
	}
	return 0;
}

/* ---- attaching --------------------------------------------------------- */

static bool
member_absent(const struct raid_member *m)
{
	return !m->be || atomic_load(&m->state) == RAID_MEMBER_MISSING;
}

/* Rules per role; a role the array lacks is refused (logged). */
static int
count_rules(unsigned nr, char *const *specs, unsigned nspecs, unsigned *count)
{
	char err[512];

	memset(count, 0, nr * sizeof(*count));
	for (unsigned i = 0; i < nspecs; i++) {
		struct fault_rule r;
		int ret = fault_parse(specs[i], &r, err, sizeof(err));

		if (ret < 0) {
			raid_error("%s", err);
			return ret;
		}
		fault_rule_fini(&r);
		if (r.role == FAULT_ROLE_LOG) {
			continue; /* the cache's log: fault_log_rules */
		}
		if (r.role >= nr) {
			raid_error(
				"fault '%s': no role %u: the array has %u member%s (roles 0 to %u)",
				specs[i], r.role, nr, nr == 1 ? "" : "s",
				nr - 1);
			return -EINVAL;
		}
		count[r.role]++;
	}
	return 0;
}

static void
fault_free(struct fault *f)
{
	for (unsigned i = 0; f && i < f->nr_rules; i++) {
		fault_rule_fini(&f->rules[i]);
	}
	free(f);
}

/* The n rules of `role` from specs (checked by count_rules already). */
static struct fault *
fault_build(unsigned role, unsigned n, char *const *specs, unsigned nspecs)
{
	struct fault *f = calloc(1, sizeof(*f) + n * sizeof(f->rules[0]));
	char err[512];

	for (unsigned i = 0; f && i < nspecs && f->nr_rules < n; i++) {
		struct fault_rule *r = &f->rules[f->nr_rules];

		if (fault_parse(specs[i], r, err, sizeof(err)) < 0) {
			break; /* ENOMEM: it parsed in count_rules */
		}
		if (r->role == role) {
			f->nr_rules++;
		} else {
			fault_rule_fini(r);
		}
	}
	if (f && f->nr_rules < n) {
		fault_free(f);
		return NULL;
	}
	return f;
}

int
fault_attach(struct raid_member *m, unsigned nr, char *const *specs,
	     unsigned nspecs)
{
	unsigned count[RAID_MAX_MEMBERS];
	struct fault *built[RAID_MAX_MEMBERS] = { 0 };
	int r;

	nr = MIN(nr, RAID_MAX_MEMBERS);
	r = count_rules(nr, specs, nspecs, count);
	for (unsigned i = 0; i < nr && r == 0; i++) {
		if (!count[i] || member_absent(&m[i])) {
			continue;
		}
		built[i] = fault_build(i, count[i], specs, nspecs);
		r = built[i] ? 0 : -ENOMEM;
	}
	for (unsigned i = 0; i < nr; i++) {
		if (r < 0 || !built[i]) {
			fault_free(built[i]);
			continue;
		}
		fault_detach(&m[i]);
		built[i]->be = m[i].be;
		m[i].fault = built[i];
		m[i].be = &fault_backend;
		for (unsigned k = 0; k < built[i]->nr_rules; k++) {
			raid_debug("member %u (%s): fault '%s'", i, m[i].path,
				   built[i]->rules[k].spec);
		}
	}
	return r;
}

void
fault_detach(struct raid_member *m)
{
	struct fault *f = m->fault;

	if (!f) {
		return;
	}
	m->be = f->be;
	m->fault = NULL;
	fault_free(f);
}

uint64_t
fault_hits(const struct raid_member *m)
{
	uint64_t n = 0;

	for (unsigned i = 0; m->fault && i < m->fault->nr_rules; i++) {
		n += atomic_load(&m->fault->rules[i].hits);
	}
	return n;
}

/* ---- deciding ---------------------------------------------------------- */

static const char *const op_names[] = {
	[IO_READ] = "read", [IO_WRITE] = "write", [IO_FLUSH] = "flush",
	[IO_TRIM] = "trim", [IO_ZERO] = "zero",	  [IO_PUNCH] = "punch hole",
};

/* xorshift64*, one step, shared by the threads through a CAS. */
static uint64_t
rule_draw(struct fault_rule *r)
{
	uint64_t old = atomic_load_explicit(&r->rng, memory_order_relaxed);
	uint64_t x;

	do {
		x = old;
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
	} while (!atomic_compare_exchange_weak_explicit(
		&r->rng, &old, x, memory_order_relaxed, memory_order_relaxed));
	return x * 0x2545f4914f6cdd1dull;
}

static bool
overlaps(const struct fault_rule *r, uint64_t off, uint64_t len)
{
	return len && off < r->range_off + r->range_len &&
	       off + len > r->range_off;
}

/*
 * Count a hit, unless the rule has had its count= of them (a CAS: threads
 * racing for the last one, one gets it); *before: the hits before it.
 */
static bool
take_hit(struct fault_rule *r, uint64_t *before)
{
	uint_fast64_t n = atomic_load_explicit(&r->hits, memory_order_relaxed);

	do {
		if (r->count && n >= r->count) {
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&r->hits, &n, n + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	*before = n;
	return true;
}

/* Say that r hit: create its touch= file (before the hit's latency). */
static void
touch(const struct fault_rule *r)
{
	int fd = open(r->touch, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		raid_error("fault '%s': creating %s: %s", r->spec, r->touch,
			   strerror(errno));
		return;
	}
	close(fd);
}

/* Does rule r hit an I/O of this kind at [off, off+len) (len 0: a flush)?
 * Conditions cheapest first; see DESIGN.  *before: its hits before. */
static bool
rule_match(struct fault_rule *r, unsigned kind, uint64_t off, uint64_t len,
	   uint64_t *before)
{
	if (!(r->ops & kind) || (r->range_len && !overlaps(r, off, len))) {
		return false;
	}
	if (r->after &&
	    atomic_fetch_add_explicit(&r->seen, len, memory_order_relaxed) <
		    r->after) {
		return false;
	}
	if (r->trigger && access(r->trigger, F_OK) != 0) {
		return false;
	}
	if (r->rate < 1.0 && rule_draw(r) >= r->rate_cut) {
		return false;
	}
	return take_hit(r, before);
}

/* Does rule r hit req q? */
static bool
rule_hits(struct fault_rule *r, const struct io_req *q)
{
	uint64_t len = q->len - q->done, off = q->off + q->done, before;
	unsigned kind = q->op == IO_READ ? FAULT_OPS_READ : FAULT_OPS_WRITE;

	if (!rule_match(r, kind, off, len, &before)) {
		return false;
	}
	if (before == 0) {
		raid_debug(
			"member %u (%s): fault '%s': first hit (%s at %llu+%llu)",
			q->m->role, q->m->path, r->spec, op_names[q->op],
			(unsigned long long)off, (unsigned long long)len);
	}
	if (r->touch) {
		touch(r);
	}
	return true;
}

/* 0 or the req's injected -errno; *delay_ns: its latencies, added. */
static int
req_decide(struct fault *f, const struct io_req *q, uint64_t *delay_ns)
{
	int err = 0;

	*delay_ns = 0;
	for (unsigned i = 0; i < f->nr_rules; i++) {
		struct fault_rule *r = &f->rules[i];

		if (!rule_hits(r, q)) {
			continue;
		}
		*delay_ns += r->latency_ns;
		if (!err) {
			err = r->err;
		}
	}
	return -err;
}

/* Sleep at least ns (an absolute monotonic deadline: signals cut none). */
static void
sleep_ns(uint64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	ns += t.tv_nsec;
	t.tv_sec += ns / NS_PER_SEC;
	t.tv_nsec = ns % NS_PER_SEC;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) ==
	       EINTR) {
	}
}

/* ---- the cache's log ---------------------------------------------------- */

struct fault *
fault_log_rules(char *const *specs, unsigned nspecs, int *err)
{
	struct fault *f;
	unsigned n = 0;
	char msg[512];

	*err = 0;
	for (unsigned i = 0; i < nspecs; i++) {
		struct fault_rule r;

		if (fault_parse(specs[i], &r, msg, sizeof(msg)) == 0) {
			n += r.role == FAULT_ROLE_LOG;
			fault_rule_fini(&r);
		}
	}
	if (!n) {
		return NULL;
	}
	f = fault_build(FAULT_ROLE_LOG, n, specs, nspecs);
	*err = f ? 0 : -ENOMEM;
	for (unsigned k = 0; f && k < f->nr_rules; k++) {
		raid_debug("cache-log: fault '%s'", f->rules[k].spec);
	}
	return f;
}

int
fault_log_decide(struct fault *f, const char *path, bool write, uint64_t off,
		 uint64_t len)
{
	uint64_t delay = 0, before;
	int err = 0;

	for (unsigned i = 0; f && i < f->nr_rules; i++) {
		struct fault_rule *r = &f->rules[i];

		if (!rule_match(r, FAULT_OPS_WRITE, off, write ? len : 0,
				&before)) {
			continue;
		}
		if (before == 0) {
			raid_error(
				"cache-log %s: fault '%s': first hit (%s at %llu+%llu)",
				path, r->spec, write ? "write" : "sync",
				(unsigned long long)off,
				(unsigned long long)len);
		}
		if (r->touch) {
			touch(r);
		}
		delay += r->latency_ns;
		err = err ? err : r->err;
	}
	if (delay) {
		sleep_ns(delay);
	}
	return -err;
}

void
fault_log_free(struct fault *f)
{
	fault_free(f);
}

/* ---- passing through --------------------------------------------------- */

/* This thread's copies of the reqs that pass, and where each came from. */
struct scratch {
	struct io_req *reqs;
	unsigned *idx;
	unsigned cap;
};

static void
scratch_free(void *p)
{
	struct scratch *s = p;

	free(s->reqs);
	free(s->idx);
	free(s);
}

static struct tls_key scratch_key = TLS_KEY_INIT(scratch_free);
static _Thread_local struct scratch *tl_scratch;

/* Make *arr hold cap elements of size each; 0 or -ENOMEM (*arr kept). */
static int
resize(void *arr, unsigned cap, size_t size)
{
	void *n = realloc(*(void **)arr, (size_t)cap * size);

	if (!n) {
		return -ENOMEM;
	}
	*(void **)arr = n;
	return 0;
}

/* This thread's scratch for nr reqs, or NULL (out of memory). */
static struct scratch *
scratch_get(unsigned nr)
{
	struct scratch *s = tl_scratch;
	unsigned cap;

	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || tls_attach(&scratch_key, s) < 0) {
			free(s);
			return NULL;
		}
		tl_scratch = s;
	}
	if (nr <= s->cap) {
		return s;
	}
	for (cap = MAX(s->cap, SCRATCH_FIRST_CAP); cap < nr; cap *= 2) {
	}
	if (resize(&s->reqs, cap, sizeof(*s->reqs)) < 0 ||
	    resize(&s->idx, cap, sizeof(*s->idx)) < 0) {
		return NULL;
	}
	s->cap = cap;
	return s;
}

static const struct io_backend *
own_backend(const struct io_req *q)
{
	return q->m->fault->be;
}

static bool
all_failed(const struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		if (reqs[i].res == 0) {
			return false;
		}
	}
	return true;
}

/* Run the reqs that passed (res 0) through their members' backends. */
static void
pass_copied(struct io_req *reqs, unsigned nr)
{
	struct scratch *s = NULL;
	unsigned n = 0;

	if (!all_failed(reqs, nr)) {
		s = scratch_get(nr);
	}
	for (unsigned i = 0; i < nr; i++) {
		if (reqs[i].res < 0) {
			continue;
		}
		if (!s) {
			reqs[i].res = -ENOMEM;
			continue;
		}
		s->idx[n] = i;
		s->reqs[n++] = reqs[i];
	}
	for (unsigned i = 0, j; i < n; i = j) {
		const struct io_backend *be = own_backend(&s->reqs[i]);

		for (j = i + 1; j < n && own_backend(&s->reqs[j]) == be; j++) {
		}
		be->submit_wait(&s->reqs[i], j - i);
	}
	for (unsigned k = 0; k < n; k++) {
		reqs[s->idx[k]] = s->reqs[k];
	}
}

static int
fault_submit_wait(struct io_req *reqs, unsigned nr)
{
	const struct io_backend *be = nr ? own_backend(&reqs[0]) : NULL;
	uint64_t delay = 0;
	bool in_place = true;

	for (unsigned i = 0; i < nr; i++) {
		uint64_t d;

		reqs[i].res = req_decide(reqs[i].m->fault, &reqs[i], &d);
		delay = MAX(delay, d);
		in_place &= reqs[i].res == 0 && own_backend(&reqs[i]) == be;
	}
	if (delay) {
		sleep_ns(delay);
	}
	if (in_place && nr) {
		return be->submit_wait(reqs, nr);
	}
	pass_copied(reqs, nr);
	return io_first_error(reqs, nr);
}

/* clang-format off */
const struct io_backend fault_backend = {
	.name        = "fault",
	.submit_wait = fault_submit_wait,
};
/* clang-format on */
