/*
 * config.c: the option table behind nbdkit's key=value parameters, config
 * files and the help text.
 *
 * DESIGN
 * One row per option: key, setter, whether it repeats, and its help (the
 * usage column and the text).  A row's index is also its slot in the
 * sources' `from[]`, which remembers where the value came from, so a
 * second setting of the same key is refused with both sources named
 * ("command line", "config file /etc/nbdraid/a.conf").  `config=FILE` is
 * not a row: it loads the file, whose keys are set while `now` says
 * SRC_FILE.  Sizes and booleans are parsed here, in the forms nbdkit
 * accepts, so the CLI and the tests need no nbdkit.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "io/fault.h"
#include "layout/layout.h"
#include "log.h"
#include "member.h"
#include "raid_config.h"
#include "util.h"

/* Where a key's value came from; names both sides of a conflict. */
enum source {
	SRC_UNSET = 0,
	SRC_CMDLINE,
	SRC_FILE,
};

#define MAX_OPTIONS 32
/* A config file line, comment and all, is at most this long. */
#define RAID_CONFIG_MAX_LINE (64u << 10)

struct raid_config_sources {
	enum source from[MAX_OPTIONS]; /* per option-table row */
	enum source now;	       /* of the keys being set now */
	char *file;		       /* the config file, once loaded */
};

struct option {
	const char *key;
	int (*set)(struct raid_config *c, const char *value);
	bool repeats;
	const char *usage; /* "level=0|1|5|10" */
	const char *help;  /* what it does; \n between lines */
};

static int
set_level(struct raid_config *c, const char *v)
{
	const char *s = strncasecmp(v, "raid", 4) == 0 ? v + 4 : v;

	if (strcmp(s, "0") == 0 || strcmp(s, "1") == 0 || strcmp(s, "5") == 0 ||
	    strcmp(s, "10") == 0) {
		c->level = atoi(s);
		return 0;
	}
	raid_error("level '%s': must be 0, 1, 5 or 10", v);
	return -EINVAL;
}

static int
set_member(struct raid_config *c, const char *v)
{
	char **m;

	if (c->nr_members == RAID_MAX_MEMBERS) {
		raid_error("member '%s': at most %d members", v,
			   RAID_MAX_MEMBERS);
		return -EINVAL;
	}
	if (!*v) {
		raid_error("member %u: empty path", c->nr_members);
		return -EINVAL;
	}
	m = realloc(c->members, (c->nr_members + 1) * sizeof(*m));
	if (!m) {
		return -ENOMEM;
	}
	c->members = m;
	m[c->nr_members] = strdup(v);
	if (!m[c->nr_members]) {
		return -ENOMEM;
	}
	c->nr_members++;
	return 0;
}

/* spare=PATH: a member kept for a role that loses its own. */
static int
set_spare(struct raid_config *c, const char *v)
{
	char **s;

	if (c->nr_spares == RAID_MAX_SPARES) {
		raid_error("spare '%s': at most %d spares", v, RAID_MAX_SPARES);
		return -EINVAL;
	}
	if (!*v) {
		raid_error("spare %u: empty path", c->nr_spares);
		return -EINVAL;
	}
	s = realloc(c->spares, (c->nr_spares + 1) * sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	c->spares = s;
	s[c->nr_spares] = strdup(v);
	if (!s[c->nr_spares]) {
		return -ENOMEM;
	}
	c->nr_spares++;
	return 0;
}

static int
set_chunk(struct raid_config *c, const char *v)
{
	uint64_t n;

	if (raid_parse_size(v, &n) < 0 || !is_power_of_2(n) ||
	    n < RAID_MIN_CHUNK || n > RAID_MAX_CHUNK) {
		raid_error("chunk '%s': must be a power of two from 4K to 16M",
			   v);
		return -EINVAL;
	}
	c->chunk_bytes = n;
	return 0;
}

static int
set_layout(struct raid_config *c, const char *v)
{
	free(c->layout);
	c->layout = strdup(v);
	return c->layout ? 0 : -ENOMEM;
}

static int
set_direct(struct raid_config *c, const char *v)
{
	if (raid_parse_bool(v, &c->direct) < 0) {
		raid_error("direct '%s': must be true or false", v);
		return -EINVAL;
	}
	return 0;
}

static int
set_io(struct raid_config *c, const char *v)
{
	static const char *const names[] = { "auto", "uring", "psync" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(v, names[i]) == 0) {
			c->io = (enum raid_io_mode)i;
			return 0;
		}
	}
	raid_error("io '%s': must be auto, uring or psync", v);
	return -EINVAL;
}

static int
set_metadata(struct raid_config *c, const char *v)
{
	static const char *const names[] = {
		[RAID_META_AUTO] = "auto",
		[RAID_META_MD] = "md",
		[RAID_META_NONE] = "none",
	};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(v, names[i]) == 0) {
			c->metadata = (enum raid_metadata)i;
			return 0;
		}
	}
	raid_error("metadata '%s': must be auto, md or none", v);
	return -EINVAL;
}

/* 32 hex digits, with ':', '-' or '.' anywhere between (mdadm, blkid). */
static int
set_uuid(struct raid_config *c, const char *v)
{
	unsigned n = 0;

	for (const char *p = v; *p; p++) {
		int x;

		if (*p == ':' || *p == '-' || *p == '.') {
			continue;
		}
		x = isdigit((unsigned char)*p) ? *p - '0'
		    : isxdigit((unsigned char)*p)
			    ? tolower((unsigned char)*p) - 'a' + 10
			    : -1;
		if (x < 0 || n == 32) {
			n = 33;
			break;
		}
		c->uuid[n / 2] =
			n % 2 ? (c->uuid[n / 2] | x) : (uint8_t)(x << 4);
		n++;
	}
	if (n != 32) {
		raid_error(
			"uuid '%s': must be 32 hex digits (as mdadm prints a UUID)",
			v);
		return -EINVAL;
	}
	c->has_uuid = true;
	return 0;
}

static int
set_name(struct raid_config *c, const char *v)
{
	if (!*v || strlen(v) > 32) {
		raid_error("name '%s': must be 1 to 32 characters", v);
		return -EINVAL;
	}
	free(c->name);
	c->name = strdup(v);
	return c->name ? 0 : -ENOMEM;
}

static int
set_force(struct raid_config *c, const char *v)
{
	if (raid_parse_bool(v, &c->force) < 0) {
		raid_error("force '%s': must be true or false", v);
		return -EINVAL;
	}
	return 0;
}

/* degraded=ok: start without a member the superblocks count in sync. */
static int
set_degraded(struct raid_config *c, const char *v)
{
	if (strcmp(v, "ok") == 0) {
		c->degraded_ok = true;
		return 0;
	}
	if (raid_parse_bool(v, &c->degraded_ok) < 0) {
		raid_error("degraded '%s': must be ok (or true), or false", v);
		return -EINVAL;
	}
	return 0;
}

/* A string option: an absolute path or a program, not empty. */
static int
set_string(char **dst, const char *key, const char *v)
{
	if (!*v) {
		raid_error("%s: must not be empty", key);
		return -EINVAL;
	}
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

static int
set_control(struct raid_config *c, const char *v)
{
	return set_string(&c->control, "control", v);
}

static int
set_event(struct raid_config *c, const char *v)
{
	return set_string(&c->event, "event", v);
}

/* fault=ROLE:RULES, kept as given; io/fault.c parses it. */
static int
set_fault(struct raid_config *c, const char *v)
{
	char **f = realloc(c->faults, (c->nr_faults + 1) * sizeof(*f));

	if (!f) {
		return -ENOMEM;
	}
	c->faults = f;
	f[c->nr_faults] = strdup(v);
	if (!f[c->nr_faults]) {
		return -ENOMEM;
	}
	c->nr_faults++;
	return 0;
}

/*
 * A size in bytes with nbdkit's suffixes, or in 512-byte sectors with an
 * "s" suffix, as `mdadm --examine` prints md's offsets and sizes ("Data
 * Offset : 2048 sectors" is 2048s); a whole number of sectors either way.
 */
static int
parse_sectors(const char *key, const char *v, uint64_t *out)
{
	size_t len = strlen(v);
	uint64_t n = 0;
	int r;

	if (len > 1 && (v[len - 1] == 's' || v[len - 1] == 'S')) {
		char num[32];
		bool digits = len - 1 < sizeof(num) &&
			      strspn(v, "0123456789") == len - 1;

		r = digits ? 0 : -EINVAL;
		if (r == 0) {
			memcpy(num, v, len - 1);
			num[len - 1] = '\0';
			r = raid_parse_size(num, &n);
		}
		if (r == 0 && n > (uint64_t)INT64_MAX / RAID_SECTOR_BYTES) {
			r = -ERANGE;
		}
		n *= RAID_SECTOR_BYTES;
	} else {
		r = raid_parse_size(v, &n);
	}
	if (r < 0 || n % RAID_SECTOR_BYTES) {
		raid_error(
			"%s '%s': must be a size in bytes (a multiple of 512) or in 512-byte sectors (2048s)",
			key, v);
		return -EINVAL;
	}
	*out = n;
	return 0;
}

/* Where array data starts on every member (raw mode): md's Data Offset. */
static int
set_data_offset(struct raid_config *c, const char *v)
{
	return parse_sectors("data-offset", v, &c->data_offset);
}

/* How much of each member holds array data: md's Used Dev Size. */
static int
set_member_size(struct raid_config *c, const char *v)
{
	uint64_t n;
	int r = parse_sectors("member-size", v, &n);

	if (r == 0 && n == 0) {
		raid_error("member-size '%s': must not be zero", v);
		r = -EINVAL;
	}
	if (r == 0) {
		c->member_size = n;
	}
	return r;
}

/* cache=none|ram|log: where acknowledged writes wait (docs/cache.md). */
static int
set_cache(struct raid_config *c, const char *v)
{
	if (strcmp(v, "none") == 0) {
		c->cache = RAID_CACHE_NONE;
	} else if (strcmp(v, "ram") == 0) {
		c->cache = RAID_CACHE_RAM;
	} else if (strcmp(v, "log") == 0) {
		c->cache = RAID_CACHE_LOG;
	} else {
		raid_error("cache '%s': must be none, ram or log", v);
		return -EINVAL;
	}
	return 0;
}

static int
set_cache_mode(struct raid_config *c, const char *v)
{
	if (strcmp(v, "writeback") == 0) {
		c->cache_mode = RAID_CACHE_WRITEBACK;
	} else if (strcmp(v, "writethrough") == 0) {
		c->cache_mode = RAID_CACHE_WRITETHROUGH;
	} else {
		raid_error("cache-mode '%s': must be writeback or writethrough",
			   v);
		return -EINVAL;
	}
	return 0;
}

/* The bytes the cache may hold; checked against the array at open. */
static int
set_cache_size(struct raid_config *c, const char *v)
{
	uint64_t n;

	if (raid_parse_size(v, &n) < 0 || n < CACHE_MIN_SIZE) {
		raid_error("cache-size '%s': must be a size of at least 1M", v);
		return -EINVAL;
	}
	c->cache_size = n;
	return 0;
}

static int
set_cache_seq_cutoff(struct raid_config *c, const char *v)
{
	if (raid_parse_size(v, &c->cache_seq_cutoff) < 0) {
		raid_error(
			"cache-seq-cutoff '%s': must be a size (0: never bypass the cache)",
			v);
		return -EINVAL;
	}
	return 0;
}

static int
set_cache_readahead(struct raid_config *c, const char *v)
{
	if (raid_parse_size(v, &c->cache_readahead) < 0) {
		raid_error(
			"cache-readahead '%s': must be a size (0: no read-ahead)",
			v);
		return -EINVAL;
	}
	return 0;
}

/* Milliseconds: "2000", "2000ms" or "2s". */
static int
set_cache_hold(struct raid_config *c, const char *v)
{
	unsigned long long n = 0;
	char *end = NULL;

	if (isdigit((unsigned char)*v)) {
		errno = 0;
		n = strtoull(v, &end, 10);
	}
	if (end && !errno && *end == 's' && !end[1] && n <= UINT32_MAX) {
		n *= 1000;
	} else if (end && !errno && (!*end || strcmp(end, "ms") == 0)) {
		/* milliseconds */
	} else {
		end = NULL;
	}
	if (!end || n > RAID_CACHE_MAX_HOLD_MS) {
		raid_error(
			"cache-hold '%s': must be a time up to 60s (2000, 2000ms or 2s)",
			v);
		return -EINVAL;
	}
	c->cache_hold_ms = (unsigned)n;
	return 0;
}

static int
set_cache_log(struct raid_config *c, const char *v)
{
	return set_string(&c->cache_log, "cache-log", v);
}

/*
 * A duration in microseconds: a whole number with a unit, us, ms or s
 * ("200us", "20ms"), or a bare number of microseconds; at most 10 s.
 */
static int
parse_micros(const char *key, const char *v, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t us;
	} units[] = { { "", 1 },
		      { "us", 1 },
		      { "ms", 1000 },
		      { "s", 1000000 } };
	size_t digits = strspn(v, "0123456789");
	uint64_t n = 0;

	for (unsigned i = 0; digits && digits <= 9 && i < ARRAY_SIZE(units);
	     i++) {
		if (strcmp(v + digits, units[i].unit) == 0) {
			n = strtoull(v, NULL, 10) * units[i].us;
			if (n <= 10000000) {
				*out = n;
				return 0;
			}
		}
	}
	raid_error(
		"%s '%s': must be a duration up to 10s, as 200us, 20ms or 1s (a bare number is microseconds)",
		key, v);
	return -EINVAL;
}

/* gather-wait=: a parked partial stripe's deadline; 0 turns gathering off. */
static int
set_gather_wait(struct raid_config *c, const char *v)
{
	return parse_micros("gather-wait", v, &c->gather_wait_us);
}

/* gather-grace=: how long to wait for the client's next write. */
static int
set_gather_grace(struct raid_config *c, const char *v)
{
	return parse_micros("gather-grace", v, &c->gather_grace_us);
}

static const struct option options[] = {
	{ "level", set_level, false, "level=0|1|5|10",
	  "RAID level (required)." },
	{ "member", set_member, true, "member=PATH",
	  "A member file or block device; repeat.  With md\n"
	  "superblocks any order, and PATH may be a glob\n"
	  "(/dev/sd*) from which uuid= or name= selects." },
	{ "spare", set_spare, true, "spare=PATH",
	  "A spare for the md array; repeat.  It takes the place\n"
	  "of a member that fails (a superblock is written on\n"
	  "it if it has none: docs/degraded.md)." },
	{ "uuid", set_uuid, false, "uuid=UUID",
	  "Serve the members whose md superblocks carry this\n"
	  "array UUID (mdadm's form: 4:4:4:4 hex)." },
	{ "name", set_name, false, "name=NAME",
	  "Serve the members of the md array with this name\n"
	  "(\"host:name\", or the part after ':')." },
	{ "chunk", set_chunk, false, "chunk=SIZE",
	  "Chunk (stripe unit), power of two 4K..16M (default 512K)." },
	{ "layout", set_layout, false, "layout=NAME",
	  "RAID10: n2 (default), f2, o2, nK, fK, oK (md's copies);\n"
	  "RAID5: left-symmetric (default), left-asymmetric,\n"
	  "right-symmetric, right-asymmetric." },
	{ "direct", set_direct, false, "direct=false|true",
	  "Open members with O_DIRECT (default false)." },
	{ "io", set_io, false, "io=auto|uring|psync",
	  "Member I/O engine (default auto: see docs/design.md)." },
	{ "metadata", set_metadata, false, "metadata=auto|md|none",
	  "auto (default): md superblocks when the members carry\n"
	  "them (any member order; docs/metadata.md), else the\n"
	  "settings; md: superblocks required; none: the\n"
	  "settings only, superblocks ignored (mdadm --build)." },
	{ "force", set_force, false, "force=false|true",
	  "Take back members the superblocks call stale, as\n"
	  "mdadm --assemble --force (default false)." },
	{ "degraded", set_degraded, false, "degraded=ok",
	  "Start even when a member the superblocks count in\n"
	  "sync is not given or cannot be opened (mdadm --run)." },
	{ "control", set_control, false, "control=PATH",
	  "A unix socket to see and steer the array:\n"
	  "nbdraid --control PATH status|fail|remove." },
	{ "event", set_event, false, "event=PROGRAM",
	  "Run PROGRAM EVENT ARRAY [MEMBER] on each event\n"
	  "(Fail, MemberRemoved ...: docs/control.md)." },
	{ "fault", set_fault, true, "fault=ROLE:RULES",
	  "Make member ROLE (or cache=log's log: ROLE log) fail\n"
	  "or slow down, for tests and rehearsals; repeat\n"
	  "(docs/nbdkit-raid-plugin.md)." },
	{ "data-offset", set_data_offset, false, "data-offset=SIZE",
	  "Raw: array data starts SIZE into every member\n"
	  "(default 0); 2048s = 2048 sectors, as mdadm --examine\n"
	  "prints md's Data Offset (docs/md-compat.md)." },
	{ "member-size", set_member_size, false, "member-size=SIZE",
	  "Raw: use SIZE of every member from data-offset\n"
	  "(default: all of the smallest); md's Used Dev Size." },
	{ "cache", set_cache, false, "cache=none|ram|log",
	  "A write-back cache in front of the array (default\n"
	  "none): ram holds writes in memory until flushed or\n"
	  "written back; log also keeps them in cache-log, which\n"
	  "FLUSH syncs and a start replays (docs/cache.md)." },
	{ "cache-size", set_cache_size, false, "cache-size=SIZE",
	  "Data the cache holds at most (default 256M)." },
	{ "cache-mode", set_cache_mode, false,
	  "cache-mode=writeback|writethrough",
	  "writeback (default): a write is answered once\n"
	  "cached; writethrough: once on the members." },
	{ "cache-seq-cutoff", set_cache_seq_cutoff, false,
	  "cache-seq-cutoff=SIZE",
	  "Sequential writes past SIZE of a run go straight to\n"
	  "the members (default 4M; 0: never)." },
	{ "cache-readahead", set_cache_readahead, false, "cache-readahead=SIZE",
	  "Sequential readers get up to SIZE read ahead into\n"
	  "the cache (default 8M; 0: no read-ahead)." },
	{ "cache-hold", set_cache_hold, false, "cache-hold=MS",
	  "RAID 5: a partly written stripe waits up to MS for\n"
	  "the rest before write-back (default 2000)." },
	{ "cache-log", set_cache_log, false, "cache-log=PATH",
	  "cache=log: the log file or device.  With another cache (or\n"
	  "none): the log the array had, refused while it holds\n"
	  "records (force=true drops them)." },
	{ "gather-wait", set_gather_wait, false, "gather-wait=TIME",
	  "RAID 5: writes in flight that make whole stripes\n"
	  "between them are written as whole stripes; a partial\n"
	  "stripe waits at most TIME for them (default 20ms;\n"
	  "0: no gathering; docs/gather.md)." },
	{ "gather-grace", set_gather_grace, false, "gather-grace=TIME",
	  "RAID 5: once every write in flight waits for its\n"
	  "stripes, how long they wait for the client's next\n"
	  "request (default 200us)." },
};
#define NR_OPTIONS (sizeof(options) / sizeof(options[0]))
_Static_assert(NR_OPTIONS <= MAX_OPTIONS, "sources.from[] holds every row");

/* config=FILE is no row of the table (it loads one), but has a help line. */
static const struct option config_option = {
	"config",
	NULL,
	false,
	"config=FILE",
	"Read these keys from FILE (docs/config-file.md).",
};

#define HELP_USAGE_WIDTH 24 /* the usage column */
#define HELP_MAX	 8192

/* Append one option's help: usage, then its lines of text aligned. */
static size_t
help_row(char *buf, size_t at, const struct option *o)
{
	const char *t = o->help;
	int col = HELP_USAGE_WIDTH;

	at += snprintf(buf + at, HELP_MAX - at, "%s%-*s", at ? "\n" : "", col,
		       o->usage);
	while (*t && at < HELP_MAX) {
		const char *nl = strchr(t, '\n');
		int n = nl ? (int)(nl - t) : (int)strlen(t);

		at += snprintf(buf + at, HELP_MAX - at, "%.*s", n, t);
		t += n;
		if (*t == '\n') {
			t++;
			at += snprintf(buf + at, HELP_MAX - at, "\n%*s", col,
				       "");
		}
	}
	return MIN(at, HELP_MAX - 1);
}

static char help_text[HELP_MAX];
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

static void
help_build(void)
{
	size_t at = 0;

	for (unsigned i = 0; i < NR_OPTIONS; i++) {
		at = help_row(help_text, at, &options[i]);
	}
	help_row(help_text, at, &config_option);
}

const char *
raid_config_help(void)
{
	pthread_once(&help_once, help_build);
	return help_text;
}

void
raid_config_init(struct raid_config *c)
{
	memset(c, 0, sizeof(*c));
	c->level = -1;
	c->chunk_bytes = RAID_DEFAULT_CHUNK;
	c->io = RAID_IO_AUTO;
	c->cache_size = RAID_CACHE_DEFAULT_SIZE;
	c->cache_seq_cutoff = RAID_CACHE_DEFAULT_CUTOFF;
	c->cache_hold_ms = RAID_CACHE_DEFAULT_HOLD_MS;
	c->cache_readahead = RAID_CACHE_DEFAULT_READAHEAD;
	c->gather_wait_us = RAID_GATHER_WAIT_US;
	c->gather_grace_us = RAID_GATHER_GRACE_US;
}

/* The bookkeeping, made on the first key set. */
static struct raid_config_sources *
sources(struct raid_config *c)
{
	if (!c->sources) {
		c->sources = calloc(1, sizeof(*c->sources));
		if (c->sources) {
			c->sources->now = SRC_CMDLINE;
		}
	}
	return c->sources;
}

void
raid_config_free(struct raid_config *c)
{
	for (unsigned i = 0; i < c->nr_members; i++) {
		free(c->members[i]);
	}
	free(c->members);
	for (unsigned i = 0; i < c->nr_spares; i++) {
		free(c->spares[i]);
	}
	free(c->spares);
	free(c->layout);
	free(c->name);
	free(c->control);
	free(c->event);
	free(c->cache_log);
	for (unsigned i = 0; i < c->nr_faults; i++) {
		free(c->faults[i]);
	}
	free(c->faults);
	if (c->sources) {
		free(c->sources->file);
		free(c->sources);
	}
	memset(c, 0, sizeof(*c));
}

static const char *
source_name(const struct raid_config_sources *src, enum source s, char *buf,
	    size_t len)
{
	if (s == SRC_FILE) {
		snprintf(buf, len, "config file %s",
			 src->file ? src->file : "?");
	} else {
		snprintf(buf, len, "command line");
	}
	return buf;
}

/* Refuse a key already set, or members from two sources. */
static int
check_source(const struct raid_config_sources *src, unsigned i)
{
	char a[PATH_MAX + 16], b[PATH_MAX + 16];
	enum source prev = src->from[i];

	if (prev == SRC_UNSET || (options[i].repeats && prev == src->now)) {
		return 0;
	}
	if (options[i].repeats) {
		raid_error("key '%s' given in both the %s and the %s",
			   options[i].key, source_name(src, prev, a, sizeof(a)),
			   source_name(src, src->now, b, sizeof(b)));
	} else {
		raid_error("key '%s' given twice (%s, %s)", options[i].key,
			   source_name(src, prev, a, sizeof(a)),
			   source_name(src, src->now, b, sizeof(b)));
	}
	return -EINVAL;
}

int
raid_config_set(struct raid_config *c, const char *key, const char *value)
{
	struct raid_config_sources *src = sources(c);
	int r;

	if (!src) {
		return -ENOMEM;
	}
	if (strcmp(key, config_option.key) == 0) {
		return raid_config_load(c, value);
	}
	for (unsigned i = 0; i < NR_OPTIONS; i++) {
		if (strcmp(key, options[i].key) != 0) {
			continue;
		}
		r = check_source(src, i);
		if (r == 0) {
			r = options[i].set(c, value);
		}
		if (r == 0) {
			src->from[i] = src->now;
		}
		return r;
	}
	raid_error("unknown parameter '%s'", key);
	return -EINVAL;
}

/* Cut the white space off both ends of s (in place). */
static char *
strip_spaces(char *s)
{
	char *e;

	while (isspace((unsigned char)*s)) {
		s++;
	}
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1])) {
		*--e = '\0';
	}
	return s;
}

/* A relative member path in a file is relative to the file's folder. */
static int
set_from_file(struct raid_config *c, const char *dir, const char *key,
	      const char *value)
{
	char path[PATH_MAX];

	if ((strcmp(key, "member") == 0 || strcmp(key, "spare") == 0 ||
	     strcmp(key, "cache-log") == 0) &&
	    value[0] != '/' && strcmp(value, RAID_MEMBER_MISSING_NAME) != 0) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, value) >=
		    sizeof(path)) {
			raid_error("%s '%s': path too long", key, value);
			return -ENAMETOOLONG;
		}
		value = path;
	}
	return raid_config_set(c, key, value);
}

/*
 * One line of f into *buf (grown as needed, NUL-terminated, without its
 * newline), *len its length: 1, 0 at the end of the file, -EFBIG past
 * RAID_CONFIG_MAX_LINE, -EIO on a read error.  A NUL byte in the line is
 * kept (and refused by the caller: what follows it would be lost unseen).
 */
static int
read_line(FILE *f, char **buf, size_t *cap, size_t *len)
{
	int ch = EOF;

	*len = 0;
	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (*len >= RAID_CONFIG_MAX_LINE) {
			return -EFBIG;
		}
		if (*len + 1 >= *cap) {
			size_t n = *cap ? *cap * 2 : 256;
			char *p;

			p = realloc(*buf, n);
			if (!p) {
				return -ENOMEM;
			}
			*buf = p;
			*cap = n;
		}
		(*buf)[(*len)++] = (char)ch;
	}
	if (ferror(f)) {
		return -EIO;
	}
	if (ch == EOF && *len == 0) {
		return 0;
	}
	if (!*buf && !(*buf = malloc(*cap = 1))) {
		return -ENOMEM;
	}
	(*buf)[*len] = '\0';
	return 1;
}

/* One line: blank, a comment, or key = value (a comment may follow). */
static int
load_line(struct raid_config *c, char *line, const char *dir, unsigned lineno)
{
	char *s, *eq, *hash;
	int r;

	hash = strchr(line, '#');
	if (hash) {
		*hash = '\0';
	}
	s = strip_spaces(line);
	if (!*s) {
		return 0;
	}
	eq = strchr(s, '=');
	if (!eq) {
		raid_error("config file %s line %u: expected key = value",
			   c->sources->file, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	r = set_from_file(c, dir, strip_spaces(s), strip_spaces(eq + 1));
	if (r < 0) {
		raid_error("config file %s line %u: rejected", c->sources->file,
			   lineno);
	}
	return r;
}

/*
 * Every line, whatever its length up to RAID_CONFIG_MAX_LINE (a comment
 * runs to the end of its line and never becomes a setting); a longer
 * line, or one with a NUL byte, is refused by its number.
 */
static int
load_lines(struct raid_config *c, FILE *f, const char *dir)
{
	char *line = NULL;
	size_t cap = 0, len;
	unsigned lineno = 0;
	int r;

	while ((r = read_line(f, &line, &cap, &len)) > 0) {
		lineno++;
		if (strlen(line) != len) {
			raid_error(
				"config file %s line %u: a NUL byte (not a text file?)",
				c->sources->file, lineno);
			r = -EINVAL;
			break;
		}
		r = load_line(c, line, dir, lineno);
		if (r < 0) {
			break;
		}
	}
	if (r == -EFBIG) {
		raid_error("config file %s line %u: longer than %u bytes",
			   c->sources->file, lineno + 1, RAID_CONFIG_MAX_LINE);
	} else if (r == -EIO) {
		raid_error("config file %s: read error after line %u",
			   c->sources->file, lineno);
	}
	free(line);
	return r;
}

/* The file: a regular file, opened so that no open waits (a FIFO). */
static FILE *
open_config(const char *path)
{
	struct stat st;
	FILE *f;
	int fd;

	fd = member_open_path(path, O_RDONLY, &st);
	if (fd == -EINVAL && st.st_mode) {
		raid_error("config file %s: %s, not a regular file", path,
			   member_type_name(st.st_mode));
		errno = EINVAL;
		return NULL;
	}
	if (fd >= 0 && !S_ISREG(st.st_mode)) {
		raid_error("config file %s: %s, not a regular file", path,
			   member_type_name(st.st_mode));
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if (fd < 0) {
		raid_error("config file %s: %s", path, strerror(-fd));
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		int e = errno;

		raid_error("config file %s: %s", path, strerror(e));
		close(fd);
		errno = e;
	}
	return f;
}

int
raid_config_load(struct raid_config *c, const char *path)
{
	struct raid_config_sources *src = sources(c);
	char dir[PATH_MAX], *slash;
	FILE *f;
	int r;

	if (!src) {
		return -ENOMEM;
	}
	if (src->file) {
		raid_error(
			"config '%s': only one config file per array (already read %s)",
			path, src->file);
		return -EINVAL;
	}
	src->file = realpath(path, NULL);
	if (!src->file) {
		r = -errno;
		raid_error("config file %s: %s", path, strerror(errno));
		return r;
	}
	f = open_config(src->file);
	if (!f) {
		return -errno;
	}
	snprintf(dir, sizeof(dir), "%s", src->file);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	src->now = SRC_FILE;
	r = load_lines(c, f, dir);
	src->now = SRC_CMDLINE;
	fclose(f);
	return r;
}

/*
 * The cache keys only mean something with a cache; cache-log also
 * without cache=log (the log the array had: checked at start).
 */
static int
check_cache(const struct raid_config *c)
{
	static const char *const keys[] = { "cache-size", "cache-mode",
					    "cache-seq-cutoff", "cache-hold",
					    "cache-readahead" };

	for (unsigned i = 0; i < ARRAY_SIZE(keys); i++) {
		if (c->cache == RAID_CACHE_NONE &&
		    raid_config_is_set(c, keys[i])) {
			raid_error("%s= needs cache=ram (or cache=log)",
				   keys[i]);
			return -EINVAL;
		}
	}
	if (c->cache == RAID_CACHE_LOG && !c->cache_log) {
		raid_error("cache=log needs cache-log=PATH (a file or device)");
		return -EINVAL;
	}
	return 0;
}

int
raid_config_check(const struct raid_config *c)
{
	int r;

	if (!c->nr_members) {
		raid_error("member= is required (one per member)");
		return -EINVAL;
	}
	/* A fault= value is refused now; its role once the roles are known. */
	r = fault_check(c->faults, c->nr_faults);
	if (r == 0 && c->nr_spares && c->metadata == RAID_META_NONE) {
		raid_error(
			"spare= needs md superblocks: with metadata=none there is nowhere to record a spare or the role it takes");
		r = -EINVAL;
	}
	if (r == 0) {
		r = check_cache(c);
	}
	if (r == 0 && c->metadata == RAID_META_NONE) {
		r = raid_config_check_raw(c);
	}
	return r;
}

bool
raid_config_is_set(const struct raid_config *c, const char *key)
{
	for (unsigned i = 0; i < NR_OPTIONS; i++) {
		if (strcmp(key, options[i].key) == 0) {
			return c->sources && c->sources->from[i] != SRC_UNSET;
		}
	}
	return false;
}

int
raid_config_check_raw(const struct raid_config *c)
{
	const struct raid_layout *l;
	struct raid_geom g = { 0 };
	char err[256];

	if (c->level < 0) {
		raid_error(
			"level= is required (0, 1, 5 or 10) for members without md superblocks");
		return -EINVAL;
	}
	l = layout_find(c->level);
	if (c->nr_members > RAID_MAX_MEMBERS) {
		raid_error("%u members: nbdraid serves at most %d",
			   c->nr_members, RAID_MAX_MEMBERS);
		return -E2BIG;
	}
	if (c->nr_members < l->min_members) {
		raid_error("level %d needs at least %u member%s, have %u",
			   c->level, l->min_members,
			   l->min_members == 1 ? "" : "s", c->nr_members);
		return -EINVAL;
	}
	g.nr_members = c->nr_members;
	g.chunk_shift = log2_u64(c->chunk_bytes);
	if (l->setup(&g, c->layout, err, sizeof(err)) < 0) {
		raid_error("%s", err);
		return -EINVAL;
	}
	return 0;
}

#define SIZE_SUFFIX_STEP 1024 /* K, M, G ... are powers of 1024 */

int
raid_parse_size(const char *str, uint64_t *out)
{
	static const char suffixes[] = "bkmgtpe";
	unsigned long long n;
	const char *p;
	char *end;

	while (isspace((unsigned char)*str)) {
		str++;
	}
	if (!isdigit((unsigned char)*str)) {
		return -EINVAL;
	}
	errno = 0;
	n = strtoull(str, &end, 10);
	if (errno) {
		return -EINVAL;
	}
	if (*end) {
		p = strchr(suffixes, tolower((unsigned char)*end));
		if (!p || end[1]) {
			return -EINVAL;
		}
		for (long i = 0; i < p - suffixes; i++) {
			if (n > UINT64_MAX / SIZE_SUFFIX_STEP) {
				return -ERANGE;
			}
			n *= SIZE_SUFFIX_STEP;
		}
	}
	if (n > INT64_MAX) {
		return -ERANGE;
	}
	*out = n;
	return 0;
}

int
raid_parse_bool(const char *str, bool *out)
{
	static const char *const yes[] = { "1", "true", "t", "yes", "y", "on" };
	static const char *const no[] = { "0", "false", "f", "no", "n", "off" };

	for (unsigned i = 0; i < 6; i++) {
		if (strcasecmp(str, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(str, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}
