/*
 * test_config.c: the option table: sizes and booleans parsed as nbdkit
 * parses them, every refusal with its message, config files (relative
 * member paths, comments) and conflicts between the command line and a file.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "raid.h"
#include "raid_config.h"

/* Sizes take nbdkit's suffixes, powers of 1024. */
static void
test_config_parse_size(void **state)
{
	uint64_t n;

	(void)state;
	assert_int_equal(raid_parse_size("4096", &n), 0);
	assert_int_equal(n, 4096);
	assert_int_equal(raid_parse_size("64K", &n), 0);
	assert_int_equal(n, 65536);
	assert_int_equal(raid_parse_size("64k", &n), 0);
	assert_int_equal(n, 65536);
	assert_int_equal(raid_parse_size("1M", &n), 0);
	assert_int_equal(n, 1 << 20);
	assert_int_equal(raid_parse_size("2G", &n), 0);
	assert_int_equal(n, 2ull << 30);
	assert_int_equal(raid_parse_size("7b", &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(raid_parse_size("", &n), -EINVAL);
	assert_int_equal(raid_parse_size("K", &n), -EINVAL);
	assert_int_equal(raid_parse_size("-1", &n), -EINVAL);
	assert_int_equal(raid_parse_size("1X", &n), -EINVAL);
	assert_int_equal(raid_parse_size("1MM", &n), -EINVAL);
	assert_int_equal(raid_parse_size("99999999999E", &n), -ERANGE);
}

/* Booleans take nbdkit's spellings. */
static void
test_config_parse_bool(void **state)
{
	bool b;

	(void)state;
	assert_int_equal(raid_parse_bool("true", &b), 0);
	assert_true(b);
	assert_int_equal(raid_parse_bool("ON", &b), 0);
	assert_true(b);
	assert_int_equal(raid_parse_bool("0", &b), 0);
	assert_false(b);
	assert_int_equal(raid_parse_bool("maybe", &b), -EINVAL);
}

/* Chunks are powers of two from 4K to 16M; anything else says so. */
static void
test_config_chunk_bounds(void **state)
{
	static const char *const bad[] = { "3000", "2K", "32M", "48K", "x" };
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(c.chunk_bytes, RAID_DEFAULT_CHUNK);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(raid_config_set(&c, "chunk", bad[i]), -EINVAL);
		assert_non_null(strstr(
			t_last_error, "must be a power of two from 4K to 16M"));
		assert_non_null(strstr(t_last_error, bad[i]));
	}
	assert_int_equal(raid_config_set(&c, "chunk", "16M"), 0);
	assert_int_equal(c.chunk_bytes, 16u << 20);
	raid_config_free(&c);
}

/* data-offset takes bytes or md's 512-byte sectors, in whole sectors. */
static void
test_config_data_offset(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(c.data_offset, 0);
	assert_int_equal(raid_config_set(&c, "data-offset", "2048s"), 0);
	assert_int_equal(c.data_offset, 1u << 20);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "data-offset", "264192"), 0);
	assert_int_equal(c.data_offset, 516 * 512);
	assert_int_equal(raid_config_set(&c, "data-offset", "1M"), -EINVAL);
	assert_string_equal(
		t_last_error,
		"key 'data-offset' given twice (command line, command line)");
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "data-offset", "1000"), -EINVAL);
	assert_string_equal(
		t_last_error,
		"data-offset '1000': must be a size in bytes (a multiple of 512) or in 512-byte sectors (2048s)");
	assert_int_equal(raid_config_set(&c, "data-offset", "s"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "data-offset", "-8s"), -EINVAL);
	assert_int_equal(
		raid_config_set(&c, "data-offset", "99999999999999999999s"),
		-EINVAL);
	assert_int_equal(raid_config_set(&c, "data-offset", "1Ms"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "data-offset", "4K"), 0);
	assert_int_equal(c.data_offset, 4096);
	raid_config_free(&c);
}

/* member-size takes the same forms, and is never zero. */
static void
test_config_member_size(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member-size", "30848s"), 0);
	assert_int_equal(c.member_size, 30848ull * 512);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member-size", "0"), -EINVAL);
	assert_string_equal(t_last_error, "member-size '0': must not be zero");
	assert_int_equal(raid_config_set(&c, "member-size", "513"), -EINVAL);
	assert_string_equal(
		t_last_error,
		"member-size '513': must be a size in bytes (a multiple of 512) or in 512-byte sectors (2048s)");
	raid_config_free(&c);
}

/* gather-wait= and gather-grace= take durations; defaults; bounds. */
static void
test_config_gather_durations(void **state)
{
	static const struct {
		const char *v;
		uint64_t us; /* UINT64_MAX: refused */
	} cases[] = {
		{ "0", 0 },
		{ "250", 250 },
		{ "250us", 250 },
		{ "20ms", 20000 },
		{ "1s", 1000000 },
		{ "10s", 10000000 },
		{ "11s", UINT64_MAX },
		{ "", UINT64_MAX },
		{ "ms", UINT64_MAX },
		{ "-1", UINT64_MAX },
		{ "2.5ms", UINT64_MAX },
		{ "5m", UINT64_MAX },
	};
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(c.gather_wait_us, RAID_GATHER_WAIT_US);
	assert_int_equal(c.gather_grace_us, RAID_GATHER_GRACE_US);
	raid_config_free(&c);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		raid_config_init(&c);
		c.gather_wait_us = c.gather_grace_us = 7;
		if (cases[i].us == UINT64_MAX) {
			assert_int_equal(
				raid_config_set(&c, "gather-wait", cases[i].v),
				-EINVAL);
			assert_non_null(strstr(t_last_error, "gather-wait '"));
			assert_non_null(strstr(t_last_error, "up to 10s"));
			assert_int_equal(c.gather_wait_us, 7);
		} else {
			assert_int_equal(
				raid_config_set(&c, "gather-wait", cases[i].v),
				0);
			assert_int_equal(
				raid_config_set(&c, "gather-grace", cases[i].v),
				0);
			assert_int_equal(c.gather_wait_us, cases[i].us);
			assert_int_equal(c.gather_grace_us, cases[i].us);
		}
		raid_config_free(&c);
	}
}

/* Unknown keys, bad levels and values are refused by name. */
static void
test_config_refuses_unknown_and_bad_values(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "stripe", "64K"), -EINVAL);
	assert_string_equal(t_last_error, "unknown parameter 'stripe'");
	assert_int_equal(raid_config_set(&c, "level", "6"), -EINVAL);
	assert_string_equal(t_last_error, "level '6': must be 0, 1, 5 or 10");
	assert_int_equal(raid_config_set(&c, "direct", "perhaps"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "io", "aio"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "metadata", "1.2"), -EINVAL);
	assert_string_equal(t_last_error,
			    "metadata '1.2': must be auto, md or none");
	assert_int_equal(raid_config_set(&c, "force", "maybe"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "level", "raid10"), 0);
	assert_int_equal(c.level, 10);
	raid_config_free(&c);
}

/* uuid= in mdadm's form or blkid's, name= up to 32 characters. */
static void
test_config_uuid_and_name(void **state)
{
	static const uint8_t want[16] = { 0x11, 0x80, 0x39, 0x49, 0x50, 0x8f,
					  0xd7, 0x52, 0xd4, 0xb0, 0x52, 0xe1,
					  0x95, 0xef, 0xaa, 0x0d };
	static const char *const good[] = {
		"11803949:508fd752:d4b052e1:95efaa0d",
		"11803949-508f-d752-d4b0-52e195efaa0d",
		"11803949508FD752D4B052E195EFAA0D",
	};
	static const char *const bad[] = {
		"11803949:508fd752:d4b052e1:95efaa0",
		"x1803949:508fd752:d4b052e1:95efaa0d",
		"11803949:508fd752:d4b052e1:95efaa0d00",
		"",
	};
	struct raid_config c;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		raid_config_init(&c);
		assert_int_equal(raid_config_set(&c, "uuid", good[i]), 0);
		assert_true(c.has_uuid);
		assert_memory_equal(c.uuid, want, 16);
		raid_config_free(&c);
	}
	for (unsigned i = 0; i < 4; i++) {
		raid_config_init(&c);
		assert_int_equal(raid_config_set(&c, "uuid", bad[i]), -EINVAL);
		assert_non_null(strstr(t_last_error, "32 hex digits"));
		raid_config_free(&c);
	}
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "name", "host:data"), 0);
	assert_string_equal(c.name, "host:data");
	assert_int_equal(raid_config_set(&c, "force", "yes"), 0);
	assert_true(c.force);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "name",
					 "123456789012345678901234567890123"),
			 -EINVAL);
	raid_config_free(&c);
}

/* A key given twice is refused, never silently overridden. */
static void
test_config_refuses_key_twice(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "chunk", "64K"), 0);
	assert_int_equal(raid_config_set(&c, "chunk", "64K"), -EINVAL);
	assert_string_equal(
		t_last_error,
		"key 'chunk' given twice (command line, command line)");
	assert_int_equal(raid_config_set(&c, "member", "/a"), 0);
	assert_int_equal(raid_config_set(&c, "member", "/b"), 0);
	assert_int_equal(c.nr_members, 2);
	raid_config_free(&c);
}

/*
 * The checks that need the whole config: members always; without
 * superblocks (raw), level, member count and layout.  With metadata=auto
 * the level may come from the superblocks, so only raw mode needs it.
 */
static void
test_config_check(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_non_null(strstr(t_last_error, "member= is required"));
	assert_int_equal(raid_config_set(&c, "member", "/a"), 0);
	assert_int_equal(raid_config_check(&c), 0);
	assert_int_equal(raid_config_check_raw(&c), -EINVAL);
	assert_non_null(strstr(t_last_error, "level= is required"));
	assert_int_equal(raid_config_set(&c, "metadata", "none"), 0);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_non_null(strstr(t_last_error, "level= is required"));
	raid_config_free(&c);
	raid_config_init(&c);
	raid_config_set(&c, "level", "10");
	raid_config_set(&c, "member", "/a");
	assert_int_equal(raid_config_check_raw(&c), -EINVAL);
	assert_string_equal(t_last_error,
			    "level 10 needs at least 2 members, have 1");
	raid_config_set(&c, "member", "/b");
	raid_config_set(&c, "layout", "f3");
	assert_int_equal(raid_config_check_raw(&c), -EINVAL);
	assert_string_equal(
		t_last_error,
		"raid10 layout 'f3': 3 copies need at least 3 members, have 2");
	raid_config_free(&c);
	raid_config_init(&c);
	raid_config_set(&c, "level", "0");
	raid_config_set(&c, "member", "/a");
	raid_config_set(&c, "layout", "n2");
	assert_int_equal(raid_config_check_raw(&c), -EINVAL);
	assert_string_equal(t_last_error, "raid0 takes no layout (got 'n2')");
	raid_config_free(&c);
}

static char *
write_file(const char *dir, const char *name, const char *text)
{
	char *path;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* A config file: comments, spaces, members relative to the file's folder. */
static void
test_config_file_loads(void **state)
{
	char dir[] = "/tmp/nbdraid-test-config.XXXXXX";
	struct raid_config c;
	char *path, expect[PATH_MAX + 16];

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = write_file(dir, "a.conf",
			  "# an array\n"
			  "level = 10   # mirrored stripes\n"
			  "  layout=f2\n"
			  "\n"
			  "chunk = 64K\n"
			  "member = m0.img\n"
			  "member = /abs/m1.img\n");
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", path), 0);
	assert_int_equal(c.level, 10);
	assert_string_equal(c.layout, "f2");
	assert_int_equal(c.chunk_bytes, 65536);
	assert_int_equal(c.nr_members, 2);
	snprintf(expect, sizeof(expect), "%s/m0.img", dir);
	assert_string_equal(c.members[0], expect);
	assert_string_equal(c.members[1], "/abs/m1.img");
	/* The file's keys may not be given again on the command line. */
	assert_int_equal(raid_config_set(&c, "chunk", "128K"), -EINVAL);
	assert_non_null(
		strstr(t_last_error, "key 'chunk' given twice (config file "));
	assert_non_null(strstr(t_last_error, "a.conf, command line)"));
	assert_int_equal(raid_config_set(&c, "member", "/x"), -EINVAL);
	assert_non_null(strstr(t_last_error,
			       "key 'member' given in both the config file"));
	raid_config_free(&c);
	unlink(path);
	free(path);
	rmdir(dir);
}

/* Command-line keys first, then a file setting the same key: refused. */
static void
test_config_file_conflicts_with_command_line(void **state)
{
	char dir[] = "/tmp/nbdraid-test-config.XXXXXX";
	struct raid_config c;
	char *path, *bad;

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = write_file(dir, "b.conf", "level = 1\nmember = m0.img\n");
	bad = write_file(dir, "c.conf", "level = 1\njunk line\n");
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "level", "0"), 0);
	assert_int_equal(raid_config_set(&c, "config", path), -EINVAL);
	assert_non_null(strstr(t_last_error, "b.conf line 1: rejected"));
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", bad), -EINVAL);
	assert_non_null(
		strstr(t_last_error, "c.conf line 2: expected key = value"));
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", "/nonexistent.conf"),
			 -ENOENT);
	assert_string_equal(
		t_last_error,
		"config file /nonexistent.conf: No such file or directory");
	raid_config_free(&c);
	unlink(path);
	unlink(bad);
	free(path);
	free(bad);
	rmdir(dir);
}

/* A file: head, fill_len bytes of fill, then tail. */
static char *
write_long_file(const char *dir, const char *name, const char *head, char fill,
		size_t fill_len, const char *tail)
{
	char *text = malloc(strlen(head) + fill_len + strlen(tail) + 1);
	char *path;

	assert_non_null(text);
	strcpy(text, head);
	memset(text + strlen(head), fill, fill_len);
	strcpy(text + strlen(head) + fill_len, tail);
	path = write_file(dir, name, text);
	free(text);
	return path;
}

/*
 * Lines of any length: a comment longer than any buffer stays a comment
 * (its tail, which looks like a setting, sets nothing), a long value is
 * taken whole; a line past the limit, a NUL byte or a file that is not a
 * regular file (a FIFO: its open would wait for a writer) are refused by
 * name, file and line.
 */
static void
test_config_file_long_lines(void **state)
{
	char dir[] = "/tmp/nbdraid-test-config.XXXXXX";
	struct raid_config c;
	char *path, *fifo, want[PATH_MAX + 64];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* The tail of the comment starts past every power of two up to
	 * 64K: a reader cutting the line anywhere there sees a setting. */
	path = write_long_file(dir, "long.conf", "level = 1\n#", 'x', 4094,
			       "member = /tail4k.img member=/x\n");
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", path), 0);
	assert_int_equal(c.level, 1);
	assert_int_equal(c.nr_members, 0);
	raid_config_free(&c);
	unlink(path);
	free(path);
	for (size_t at = 1000; at < 70000; at = at * 2 + 7) {
		path = write_long_file(dir, "long.conf", "#", 'y', at,
				       "member = /tail.img\nmember = /m.img\n");
		raid_config_init(&c);
		assert_int_equal(raid_config_set(&c, "config", path), 0);
		assert_int_equal(c.nr_members, 1);
		assert_string_equal(c.members[0], "/m.img");
		raid_config_free(&c);
		unlink(path);
		free(path);
	}
	/* A long value, whole. */
	path = write_long_file(dir, "value.conf", "event = /", 'v', 9000, "\n");
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", path), 0);
	assert_int_equal(strlen(c.event), 9001);
	assert_int_equal(c.event[9000], 'v');
	raid_config_free(&c);
	unlink(path);
	free(path);
	/* Past the limit: refused, by line. */
	path = write_long_file(dir, "huge.conf", "level = 1\n\n#", 'z',
			       70 << 10, "\n");
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", path), -EFBIG);
	snprintf(want, sizeof(want),
		 "config file %s line 3: longer than 65536 bytes", path);
	assert_string_equal(t_last_error, want);
	raid_config_free(&c);
	unlink(path);
	free(path);
	/* A NUL byte: what follows it would be lost unseen. */
	assert_true(asprintf(&path, "%s/nul.conf", dir) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite("level = 1\nmember = /a.img\0member = /b.img\n", 1, 42, f);
	fclose(f);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", path), -EINVAL);
	snprintf(want, sizeof(want),
		 "config file %s line 2: a NUL byte (not a text file?)", path);
	assert_string_equal(t_last_error, want);
	raid_config_free(&c);
	unlink(path);
	free(path);
	/* A FIFO: refused at once, never opened (no writer ever comes). */
	assert_true(asprintf(&fifo, "%s/fifo.conf", dir) > 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "config", fifo), -EINVAL);
	snprintf(want, sizeof(want),
		 "config file %s: a FIFO, not a regular file", fifo);
	assert_string_equal(t_last_error, want);
	raid_config_free(&c);
	unlink(fifo);
	free(fifo);
	rmdir(dir);
}

/* Lines of help that start with key (a usage column). */
static unsigned
help_lines_starting(const char *help, const char *key)
{
	unsigned n = 0;

	for (const char *l = help; l; l = strchr(l, '\n')) {
		l += *l == '\n';
		n += strncmp(l, key, strlen(key)) == 0;
	}
	return n;
}

/*
 * The cache keys: cache=none|ram|log, sizes and times in their forms,
 * clear refusals; the others need a cache, cache=log needs cache-log
 * (which is taken without cache=log too: the log the array had).
 */
static void
test_config_cache_keys(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(c.cache, RAID_CACHE_NONE);
	assert_int_equal(c.cache_size, 256ull << 20);
	assert_int_equal(c.cache_mode, RAID_CACHE_WRITEBACK);
	assert_int_equal(raid_config_set(&c, "cache", "disk"), -EINVAL);
	assert_string_equal(t_last_error,
			    "cache 'disk': must be none, ram or log");
	assert_int_equal(raid_config_set(&c, "cache-size", "512K"), -EINVAL);
	assert_string_equal(t_last_error,
			    "cache-size '512K': must be a size of at least 1M");
	assert_int_equal(raid_config_set(&c, "cache-mode", "back"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "cache-hold", "61s"), -EINVAL);
	assert_int_equal(raid_config_set(&c, "cache-hold", "5 s"), -EINVAL);
	assert_non_null(strstr(t_last_error, "cache-hold '5 s'"));
	assert_int_equal(raid_config_set(&c, "member", "/a"), 0);
	assert_int_equal(raid_config_set(&c, "cache-size", "1G"), 0);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_string_equal(t_last_error,
			    "cache-size= needs cache=ram (or cache=log)");
	assert_int_equal(raid_config_set(&c, "cache", "ram"), 0);
	assert_int_equal(raid_config_check(&c), 0);
	assert_int_equal(raid_config_set(&c, "cache-mode", "writethrough"), 0);
	assert_int_equal(raid_config_set(&c, "cache-hold", "1500ms"), 0);
	assert_int_equal(raid_config_set(&c, "cache-seq-cutoff", "0"), 0);
	assert_int_equal(c.cache_readahead, RAID_CACHE_DEFAULT_READAHEAD);
	assert_int_equal(raid_config_set(&c, "cache-readahead", "x"), -EINVAL);
	assert_non_null(strstr(t_last_error, "cache-readahead 'x'"));
	assert_int_equal(raid_config_set(&c, "cache-readahead", "2M"), 0);
	assert_int_equal(c.cache_readahead, 2ull << 20);
	assert_int_equal(c.cache, RAID_CACHE_RAM);
	assert_int_equal(c.cache_size, 1ull << 30);
	assert_int_equal(c.cache_mode, RAID_CACHE_WRITETHROUGH);
	assert_int_equal(c.cache_hold_ms, 1500);
	assert_int_equal(c.cache_seq_cutoff, 0);
	assert_int_equal(raid_config_set(&c, "cache-log", "/x/log"), 0);
	assert_int_equal(raid_config_check(&c), 0);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member", "/a"), 0);
	assert_int_equal(raid_config_set(&c, "cache", "log"), 0);
	assert_int_equal(c.cache, RAID_CACHE_LOG);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_string_equal(
		t_last_error,
		"cache=log needs cache-log=PATH (a file or device)");
	assert_int_equal(raid_config_set(&c, "cache-log", "/x/log"), 0);
	assert_int_equal(raid_config_check(&c), 0);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "cache-hold", "2s"), 0);
	assert_int_equal(c.cache_hold_ms, 2000);
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member", "/a"), 0);
	assert_int_equal(raid_config_set(&c, "cache-readahead", "0"), 0);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_string_equal(t_last_error,
			    "cache-readahead= needs cache=ram (or cache=log)");
	raid_config_free(&c);
}

/* The help text comes from the option table: every key, once, known. */
static void
test_config_help_lists_every_key(void **state)
{
	static const char *const keys[] = {
		"level=",
		"member=",
		"chunk=",
		"layout=",
		"direct=",
		"io=",
		"metadata=",
		"data-offset=",
		"member-size=",
		"force=",
		"config=",
		"uuid=",
		"name=",
		"degraded=",
		"control=",
		"event=",
		"fault=",
		"spare=",
		"cache=",
		"cache-size=",
		"cache-mode=",
		"cache-seq-cutoff=",
		"cache-hold=",
		"cache-log=",
		"cache-readahead=",
		"gather-wait=",
		"gather-grace=",
	};
	const char *help = raid_config_help();
	unsigned usage_lines = 0;
	struct raid_config c;

	(void)state;
	for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_int_equal(help_lines_starting(help, keys[i]), 1);
	}
	/* No other usage lines: each names a key the parser knows. */
	raid_config_init(&c);
	for (const char *l = help; l; l = strchr(l, '\n')) {
		char key[32];
		size_t n;

		l += *l == '\n';
		n = strcspn(l, "=");
		if (*l == ' ' || n >= sizeof(key)) {
			continue;
		}
		usage_lines++;
		memcpy(key, l, n);
		key[n] = '\0';
		t_last_error[0] = '\0';
		if (strcmp(key, "config") != 0) {
			raid_config_set(&c, key, "?");
			assert_null(strstr(t_last_error, "unknown parameter"));
		}
	}
	assert_int_equal(usage_lines, sizeof(keys) / sizeof(keys[0]));
	raid_config_free(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_config_parse_size, t_setup),
		cmocka_unit_test_setup(test_config_parse_bool, t_setup),
		cmocka_unit_test_setup(test_config_chunk_bounds, t_setup),
		cmocka_unit_test_setup(test_config_data_offset, t_setup),
		cmocka_unit_test_setup(test_config_member_size, t_setup),
		cmocka_unit_test_setup(test_config_gather_durations, t_setup),
		cmocka_unit_test_setup(
			test_config_refuses_unknown_and_bad_values, t_setup),
		cmocka_unit_test_setup(test_config_refuses_key_twice, t_setup),
		cmocka_unit_test_setup(test_config_check, t_setup),
		cmocka_unit_test_setup(test_config_file_loads, t_setup),
		cmocka_unit_test_setup(
			test_config_file_conflicts_with_command_line, t_setup),
		cmocka_unit_test_setup(test_config_file_long_lines, t_setup),
		cmocka_unit_test_setup(test_config_cache_keys, t_setup),
		cmocka_unit_test_setup(test_config_help_lists_every_key,
				       t_setup),
		cmocka_unit_test_setup(test_config_uuid_and_name, t_setup),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
