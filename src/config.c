/*
 * config.c: the option table behind nbdkit's key=value parameters, config
 * files and the help text.
 *
 * DESIGN
 * One row per option: key, setter, whether it repeats, help line.  A row's
 * index is also its slot in c->src[], which remembers where the value came
 * from, so a second setting of the same key is refused with both sources
 * named ("command line", "config file /etc/nbdraid/a.conf").  `config=FILE`
 * is not a row: it loads the file, whose keys are set with c->cur =
 * RAID_SRC_FILE.  Sizes and booleans are parsed here, in the forms nbdkit
 * accepts, so the CLI and the tests need no nbdkit.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layout/layout.h"
#include "log.h"
#include "raid_config.h"
#include "util.h"

struct option {
	const char *key;
	int (*set)(struct raid_config *c, const char *value);
	bool repeats;
};

static int
set_level(struct raid_config *c, const char *v)
{
	const char *s = strncasecmp(v, "raid", 4) == 0 ? v + 4 : v;

	if (strcmp(s, "0") == 0 || strcmp(s, "1") == 0 ||
	    strcmp(s, "5") == 0 || strcmp(s, "10") == 0) {
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
	c->chunk = n;
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

	for (unsigned i = 0; i < 3; i++) {
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
	if (strcmp(v, "none") != 0) {
		raid_error("metadata '%s': unknown (supported: none)", v);
		return -EINVAL;
	}
	free(c->metadata);
	c->metadata = strdup(v);
	return c->metadata ? 0 : -ENOMEM;
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

		r = len - 1 < sizeof(num) &&
		    strspn(v, "0123456789") == len - 1 ? 0 : -EINVAL;
		if (r == 0) {
			memcpy(num, v, len - 1);
			num[len - 1] = '\0';
			r = raid_parse_size(num, &n);
		}
		if (r == 0 && n > (uint64_t)INT64_MAX / 512) {
			r = -ERANGE;
		}
		n *= 512;
	} else {
		r = raid_parse_size(v, &n);
	}
	if (r < 0 || n % 512) {
		raid_error("%s '%s': must be a size in bytes (a multiple of 512) or in 512-byte sectors (2048s)",
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

static const struct option options[] = {
	{ "level",    set_level,    false },
	{ "member",   set_member,   true },
	{ "chunk",    set_chunk,    false },
	{ "layout",   set_layout,   false },
	{ "direct",   set_direct,   false },
	{ "io",       set_io,       false },
	{ "metadata", set_metadata, false },
	{ "data-offset", set_data_offset, false },
	{ "member-size", set_member_size, false },
};
#define NR_OPTIONS (sizeof(options) / sizeof(options[0]))

const char raid_config_help[] =
	"level=0|1|5|10          RAID level (required).\n"
	"member=PATH             A member file or block device; repeat, in role order.\n"
	"chunk=SIZE              Chunk (stripe unit), power of two 4K..16M (default 512K).\n"
	"layout=NAME             RAID10: n2 (default), f2, o2, nK, fK, oK (md's copies);\n"
	"                        RAID5: left-symmetric (default), left-asymmetric,\n"
	"                        right-symmetric, right-asymmetric.\n"
	"direct=false|true       Open members with O_DIRECT (default false).\n"
	"io=auto|uring|psync     Member I/O engine (default auto: see docs/design.md).\n"
	"metadata=none           Raw geometry, no superblock (the only mode yet).\n"
	"data-offset=SIZE        Raw mode: array data starts SIZE into every member\n"
	"                        (default 0); 2048s = 2048 sectors, as mdadm --examine\n"
	"                        prints md's Data Offset (docs/md-compat.md).\n"
	"member-size=SIZE        Raw mode: use SIZE of every member from data-offset\n"
	"                        (default: all of the smallest); md's Used Dev Size.\n"
	"config=FILE             Read these keys from FILE (docs/config-file.md).";

void
raid_config_init(struct raid_config *c)
{
	memset(c, 0, sizeof(*c));
	c->level = -1;
	c->chunk = RAID_DEFAULT_CHUNK;
	c->io = RAID_IO_AUTO;
	c->cur = RAID_SRC_CMDLINE;
}

void
raid_config_free(struct raid_config *c)
{
	for (unsigned i = 0; i < c->nr_members; i++) {
		free(c->members[i]);
	}
	free(c->members);
	free(c->layout);
	free(c->metadata);
	free(c->file);
	memset(c, 0, sizeof(*c));
}

static const char *
source_name(const struct raid_config *c, enum raid_config_source s,
	    char *buf, size_t len)
{
	if (s == RAID_SRC_FILE) {
		snprintf(buf, len, "config file %s", c->file ? c->file : "?");
	} else {
		snprintf(buf, len, "command line");
	}
	return buf;
}

/* Refuse a key already set, or members from two sources. */
static int
check_source(struct raid_config *c, unsigned i)
{
	char a[PATH_MAX + 16], b[PATH_MAX + 16];
	enum raid_config_source prev = c->src[i];

	if (prev == RAID_SRC_UNSET || (options[i].repeats && prev == c->cur)) {
		return 0;
	}
	if (options[i].repeats) {
		raid_error("key '%s' given in both the %s and the %s",
			   options[i].key, source_name(c, prev, a, sizeof(a)),
			   source_name(c, c->cur, b, sizeof(b)));
	} else {
		raid_error("key '%s' given twice (%s, %s)", options[i].key,
			   source_name(c, prev, a, sizeof(a)),
			   source_name(c, c->cur, b, sizeof(b)));
	}
	return -EINVAL;
}

int
raid_config_set(struct raid_config *c, const char *key, const char *value)
{
	int r;

	if (strcmp(key, "config") == 0) {
		return raid_config_load(c, value);
	}
	for (unsigned i = 0; i < NR_OPTIONS; i++) {
		if (strcmp(key, options[i].key) != 0) {
			continue;
		}
		r = check_source(c, i);
		if (r == 0) {
			r = options[i].set(c, value);
		}
		if (r == 0) {
			c->src[i] = c->cur;
		}
		return r;
	}
	raid_error("unknown parameter '%s'", key);
	return -EINVAL;
}

static char *
trim(char *s)
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

	if (strcmp(key, "member") == 0 && value[0] != '/') {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
				     value) >= sizeof(path)) {
			raid_error("member '%s': path too long", value);
			return -ENAMETOOLONG;
		}
		value = path;
	}
	return raid_config_set(c, key, value);
}

static int
load_lines(struct raid_config *c, FILE *f, const char *dir)
{
	char line[4096];
	unsigned lineno = 0;
	int r;

	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *hash;

		lineno++;
		hash = strchr(line, '#');
		if (hash) {
			*hash = '\0';
		}
		s = trim(line);
		if (!*s) {
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			raid_error("config file %s line %u: expected key = value",
				   c->file, lineno);
			return -EINVAL;
		}
		*eq = '\0';
		r = set_from_file(c, dir, trim(s), trim(eq + 1));
		if (r < 0) {
			raid_error("config file %s line %u: rejected", c->file,
				   lineno);
			return r;
		}
	}
	return 0;
}

int
raid_config_load(struct raid_config *c, const char *path)
{
	char dir[PATH_MAX], *slash;
	FILE *f;
	int r;

	if (c->file) {
		raid_error("config '%s': only one config file per array (already read %s)",
			   path, c->file);
		return -EINVAL;
	}
	c->file = realpath(path, NULL);
	if (!c->file) {
		r = -errno;
		raid_error("config file %s: %s", path, strerror(errno));
		return r;
	}
	f = fopen(c->file, "re");
	if (!f) {
		r = -errno;
		raid_error("config file %s: %s", c->file, strerror(errno));
		return r;
	}
	snprintf(dir, sizeof(dir), "%s", c->file);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	c->cur = RAID_SRC_FILE;
	r = load_lines(c, f, dir);
	c->cur = RAID_SRC_CMDLINE;
	fclose(f);
	return r;
}

int
raid_config_check(const struct raid_config *c)
{
	const struct raid_layout *l;
	struct raid_geom g = { 0 };
	char err[256];

	if (c->level < 0) {
		raid_error("level= is required (0, 1, 5 or 10)");
		return -EINVAL;
	}
	l = layout_find(c->level);
	if (c->nr_members < l->min_members) {
		raid_error("level %d needs at least %u member%s, have %u",
			   c->level, l->min_members,
			   l->min_members == 1 ? "" : "s", c->nr_members);
		return -EINVAL;
	}
	g.nr_members = c->nr_members;
	g.chunk_shift = log2_u64(c->chunk);
	if (l->setup(&g, c->layout, err, sizeof(err)) < 0) {
		raid_error("%s", err);
		return -EINVAL;
	}
	return 0;
}

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
			if (n > UINT64_MAX / 1024) {
				return -ERANGE;
			}
			n *= 1024;
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
