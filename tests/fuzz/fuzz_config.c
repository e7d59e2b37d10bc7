/*
 * fuzz_config.c: a libFuzzer target for the config file parser
 * (src/config.c: raid_config_load and every key's setter behind it; built
 * and run by tests/fuzz/run.sh).
 *
 * The input is a config file, written to a private folder in /dev/shm and
 * loaded with config=.  Sanitizers catch what crashes, leaks or reads out
 * of bounds; CHECK() aborts on what is merely wrong:
 *
 *   - the load returns 0 or -errno; a refusal always logs an error;
 *   - the file sets exactly what its lines say, read by a second,
 *     independent reading here: lines cut at '\n' only, a comment from
 *     '#' to the end of its line (never a setting, however long), white
 *     space trimmed, key and value split at the first '=', relative paths
 *     of member=, spare= and cache-log= taken from the file's folder;
 *     each line set on a second config (raid_config_set, as the command
 *     line would), in order, up to the first refusal.  A line past 64 KiB
 *     or one with a NUL byte is refused by the file (-EFBIG, -EINVAL),
 *     and config= inside a file too.  Both must end with the same return
 *     and the same settings;
 *   - what loads within the limits: at most 64 members and 8 spares, a
 *     chunk a power of two from 4K to 16M, no empty path; then
 *     raid_config_check returns 0 or an error it logged.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raid.h"
#include "raid_config.h"

#define MAX_LINE (64u << 10) /* config.c: RAID_CONFIG_MAX_LINE */

static char last_error[1024];
static unsigned errors;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
				"%s:%d: CHECK(%s) failed (last error: %s)\n",  \
				__FILE__, __LINE__, #cond, last_error);        \
			abort();                                               \
		}                                                              \
	} while (0)

static void
sink(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_ERROR) {
		vsnprintf(last_error, sizeof(last_error), fmt, ap);
		errors++;
	}
}

static char folder[64], file[96];

static void
remove_folder(void)
{
	unlink(file);
	rmdir(folder);
}

/* The private folder, once, and the input written as the file. */
static void
write_file(const uint8_t *data, size_t size)
{
	FILE *f;

	if (!folder[0]) {
		snprintf(folder, sizeof(folder), "/dev/shm/nbdraid-fuzz-%d",
			 (int)getpid());
		CHECK(mkdir(folder, 0700) == 0 || errno == EEXIST);
		snprintf(file, sizeof(file), "%s/a.conf", folder);
		atexit(remove_folder);
	}
	f = fopen(file, "w");
	CHECK(f);
	CHECK(fwrite(data, 1, size, f) == size);
	CHECK(fclose(f) == 0);
}

/* White space off both ends, as config.c's strip_spaces (isspace). */
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

/* One line as the file means it, set on c: 0 or the refusal. */
static int
set_line(struct raid_config *c, char *line)
{
	static char path[8192];
	char *hash = strchr(line, '#'), *eq, *key, *value;

	if (hash) {
		*hash = '\0';
	}
	line = trim(line);
	if (!*line) {
		return 0;
	}
	eq = strchr(line, '=');
	if (!eq) {
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	if (strcmp(key, "config") == 0) {
		return -EINVAL; /* one config file per array */
	}
	if ((strcmp(key, "member") == 0 || strcmp(key, "spare") == 0 ||
	     strcmp(key, "cache-log") == 0) &&
	    value[0] != '/' && strcmp(value, "missing") != 0) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", folder,
				     value) >= 4096) {
			return -ENAMETOOLONG;
		}
		value = path;
	}
	return raid_config_set(c, key, value);
}

/* The second reading: every line in order, to the first refusal. */
static int
read_again(struct raid_config *c, const uint8_t *data, size_t size)
{
	size_t at = 0;
	int r = 0;

	while (at < size && r == 0) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
		char *line;

		if (len > MAX_LINE) {
			return -EFBIG;
		}
		if (memchr(data + at, '\0', len)) {
			return -EINVAL;
		}
		line = malloc(len + 1);
		CHECK(line);
		memcpy(line, data + at, len);
		line[len] = '\0';
		r = set_line(c, line);
		free(line);
		at += len + 1;
	}
	return r;
}

static bool
same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool
same_list(char **a, unsigned na, char **b, unsigned nb)
{
	if (na != nb) {
		return false;
	}
	for (unsigned i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0) {
			return false;
		}
	}
	return true;
}

/* The settings two configs hold: the same? */
static bool
same_config(const struct raid_config *a, const struct raid_config *b)
{
	return a->level == b->level && same_str(a->layout, b->layout) &&
	       a->chunk_bytes == b->chunk_bytes && a->direct == b->direct &&
	       a->io == b->io && a->data_offset == b->data_offset &&
	       a->member_size == b->member_size && a->metadata == b->metadata &&
	       a->force == b->force && a->degraded_ok == b->degraded_ok &&
	       same_str(a->control, b->control) &&
	       same_str(a->event, b->event) &&
	       same_list(a->faults, a->nr_faults, b->faults, b->nr_faults) &&
	       a->has_uuid == b->has_uuid &&
	       memcmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0 &&
	       same_str(a->name, b->name) &&
	       same_list(a->members, a->nr_members, b->members,
			 b->nr_members) &&
	       same_list(a->spares, a->nr_spares, b->spares, b->nr_spares) &&
	       a->cache == b->cache && a->cache_mode == b->cache_mode &&
	       a->cache_size == b->cache_size &&
	       a->cache_seq_cutoff == b->cache_seq_cutoff &&
	       a->cache_hold_ms == b->cache_hold_ms &&
	       a->cache_readahead == b->cache_readahead &&
	       same_str(a->cache_log, b->cache_log) &&
	       a->gather_wait_us == b->gather_wait_us &&
	       a->gather_grace_us == b->gather_grace_us;
}

/* What loaded is within the limits. */
static void
check_limits(const struct raid_config *c)
{
	CHECK(c->nr_members <= RAID_MAX_MEMBERS);
	CHECK(c->nr_spares <= RAID_MAX_SPARES);
	CHECK(c->chunk_bytes >= RAID_MIN_CHUNK &&
	      c->chunk_bytes <= RAID_MAX_CHUNK &&
	      !(c->chunk_bytes & (c->chunk_bytes - 1)));
	for (unsigned i = 0; i < c->nr_members; i++) {
		CHECK(c->members[i][0]);
	}
	for (unsigned i = 0; i < c->nr_spares; i++) {
		CHECK(c->spares[i][0]);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raid_config c, again;
	int r, r2;

	raid_set_log(sink);
	write_file(data, size);
	raid_config_init(&c);
	errors = 0;
	r = raid_config_set(&c, "config", file);
	CHECK(r <= 0);
	CHECK(r == 0 || errors > 0);

	raid_config_init(&again);
	r2 = read_again(&again, data, size);
	if (r != r2 || !same_config(&c, &again)) {
		fprintf(stderr, "the file: %d, line by line: %d\n", r, r2);
		CHECK(!"the file and its lines set the same");
	}
	check_limits(&c);
	if (r == 0) {
		errors = 0;
		r = raid_config_check(&c);
		CHECK(r <= 0);
		CHECK(r == 0 || errors > 0);
	}
	raid_config_free(&c);
	raid_config_free(&again);
	return 0;
}
