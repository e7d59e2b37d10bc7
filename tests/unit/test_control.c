/*
 * test_control.c: the operator's side over memory members: the control
 * socket (src/control.c), the status object (src/status_json.c) and the
 * event runner (src/events.c).
 *
 * A client here speaks the protocol by hand: one JSON line out, one JSON
 * line back.  The status it gets must be raid_status's, field by field,
 * counters included; bad requests get ok:false and the connection goes
 * on; clients do not wait for each other; the socket is 0600, a stale one
 * is replaced, anything else at the path is refused and left alone.  An
 * event program (a shell script appending its arguments to a file) sees
 * each event in order, the queue drops when full, and fail and remove go
 * through the core (skipped while the core's are stubs: -ENOSYS).
 */
#undef NDEBUG
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <json.h>

#include "array.h"
#include "control.h"
#include "events.h"
#include "fixture.h"
#include "helpers.h"
#include "text.h"
#include "util.h"

#define MEMBER_BYTES (256u << 10)
#define WAIT_MS	     10000 /* for a thread or a program to get there */

static char tdir[64];	   /* this case's temp folder */
static char sock_path[96]; /* tdir/ctl.sock */

/* ---- setup ------------------------------------------------------------- */

static int
setup(void **state)
{
	snprintf(tdir, sizeof(tdir), "/tmp/nbdraid-ctl.XXXXXX");
	if (!mkdtemp(tdir)) {
		return -1;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/ctl.sock", tdir);
	return fixture_setup(state);
}

static int
teardown(void **state)
{
	char cmd[128];
	int r = fixture_teardown(state);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
	if (system(cmd) != 0) {
		r = -1;
	}
	return r;
}

static const struct fixture_spec raid5 = { .level = 5,
					   .n = 3,
					   .mem_size = MEMBER_BYTES };

/* The fixture's RAID 5 with its control socket serving. */
static struct raid_array *
served(struct fixture *f)
{
	assert_int_equal(fixture_open(f, &raid5), 0);
	assert_int_equal(control_open(f->a, sock_path, &f->a->control), 0);
	assert_int_equal(control_start(f->a->control), 0);
	return f->a;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static bool
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static void
wait_for_file(const char *path)
{
	for (unsigned i = 0; i < WAIT_MS && !exists(path); i += 10) {
		sleep_ms(10);
	}
	assert_true(exists(path));
}

/*
 * bind(2) as this program sees it: with swap_on_bind set, a unix socket's
 * node, once bound, is moved away and a symlink to swap_victim put in its
 * place, as someone able to write the socket's folder could between bind
 * and a chmod of the path.
 */
static bool swap_on_bind;
static char swap_victim[128];

int
bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	const struct sockaddr_un *sun = (const void *)addr;
	char moved[sizeof(sun->sun_path) + 8];
	int r;

	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "bind");
	}
	r = real(fd, addr, len);
	if (r == 0 && swap_on_bind && addr->sa_family == AF_UNIX) {
		snprintf(moved, sizeof(moved), "%s.moved", sun->sun_path);
		assert(rename(sun->sun_path, moved) == 0);
		assert(symlink(swap_victim, sun->sun_path) == 0);
	}
	return r;
}

/* ---- md arrays on files ------------------------------------------------ */

#define MD_FILES 4
#define MD_BYTES (4u << 20)
static char md_files[MD_FILES][128];

/* files tdir/mN.img (holes), and an md array `name` of level on the
 * first n of them; spare: files[spare] given as spare= (-1: none). */
static struct raid_array *
md_open(int level, unsigned n, int spare, const char *name, const char *event)
{
	char *members[MD_FILES];
	struct raid_create_spec spec = { .level = level,
					 .name = name,
					 .homehost = "test",
					 .minor = 2,
					 .members = members,
					 .nr_members = n };
	struct raid_create_result res;
	struct raid_config cfg;
	struct raid_array *a = NULL;

	for (unsigned i = 0; i < MD_FILES; i++) {
		FILE *fp;

		snprintf(md_files[i], sizeof(md_files[i]), "%s/m%u.img", tdir,
			 i);
		fp = fopen(md_files[i], "w");
		assert_non_null(fp);
		assert_int_equal(ftruncate(fileno(fp), MD_BYTES), 0);
		fclose(fp);
		members[i] = md_files[i];
	}
	assert_int_equal(raid_create(&spec, NULL, NULL, &res), 0);
	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	for (unsigned i = 0; i < n; i++) {
		raid_config_set(&cfg, "member", md_files[i]);
	}
	if (spare >= 0) {
		raid_config_set(&cfg, "spare", md_files[spare]);
	}
	if (event) {
		raid_config_set(&cfg, "event", event);
	}
	assert_int_equal(raid_open(&cfg, &a), 0);
	raid_config_free(&cfg);
	return a;
}

/* ---- a client ---------------------------------------------------------- */

struct client {
	int fd;
	char buf[1 << 16];
	size_t len;
};

static void
client_connect(struct client *c)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	c->len = 0;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c->fd >= 0);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)),
			 0);
}

static void
client_send(struct client *c, const char *s, size_t len)
{
	assert_int_equal(send(c->fd, s, len, MSG_NOSIGNAL), (ssize_t)len);
}

/*
 * The next answer line, its raw bytes into line (NUL-terminated), waiting
 * at most ms for it (-1: as long as it takes): false when none came then.
 */
static bool
client_line(struct client *c, char *line, size_t len, int ms)
{
	char *nl;

	while (!(nl = memchr(c->buf, '\n', c->len))) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, ms) == 0) {
			return false;
		}
		assert_true(c->len < sizeof(c->buf) - 1);
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len,
			 0);
		assert_true(n > 0);
		c->len += n;
	}
	assert_true((size_t)(nl - c->buf) < len);
	memcpy(line, c->buf, nl - c->buf);
	line[nl - c->buf] = '\0';
	c->len -= nl + 1 - c->buf;
	memmove(c->buf, nl + 1, c->len);
	return true;
}

/* The next answer line, parsed (json_object_put it). */
static struct json_object *
client_answer(struct client *c)
{
	static char line[1 << 16];
	struct json_object *o;

	assert_true(client_line(c, line, sizeof(line), -1));
	o = json_tokener_parse(line);
	if (!o) {
		print_error("answer is not JSON: %s\n", line);
	}
	assert_non_null(o);
	return o;
}

/* Nothing (not even EOF) waiting to be read from the server. */
static bool
client_quiet(struct client *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	return c->len == 0 && poll(&p, 1, 0) == 0;
}

static void
client_sends(struct client *c, const char *s)
{
	client_send(c, s, strlen(s));
}

static struct json_object *
client_request(struct client *c, const char *line)
{
	client_send(c, line, strlen(line));
	client_send(c, "\n", 1);
	return client_answer(c);
}

static struct json_object *
get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static bool
answer_ok(struct json_object *a)
{
	return json_object_get_boolean(get(a, "ok"));
}

/* An ok:false answer whose error holds `want`; the answer is put. */
static void
assert_refused(struct json_object *a, const char *want)
{
	const char *err;

	assert_false(answer_ok(a));
	err = json_object_get_string(get(a, "error"));
	if (!strstr(err, want)) {
		print_error("error '%s' does not say '%s'\n", err, want);
		fail();
	}
	json_object_put(a);
}

static void
assert_u64(struct json_object *o, const char *key, uint64_t want)
{
	assert_int_equal(json_object_get_uint64(get(o, key)), want);
}

static void
assert_str(struct json_object *o, const char *key, const char *want)
{
	assert_string_equal(json_object_get_string(get(o, key)), want);
}

/* A fresh status through the socket, compared with raid_status's. */
static void
assert_status_matches(struct raid_array *a, struct client *c)
{
	struct json_object *ans = client_request(c, "{\"command\":\"status\"}");
	struct json_object *s, *members;
	struct raid_status st;

	assert_true(answer_ok(ans));
	s = get(ans, "status");
	assert_int_equal(raid_status(a, &st), 0);
	assert_str(s, "state", raid_array_state_name(st.state));
	assert_int_equal(json_object_get_int(get(s, "level")), st.level);
	assert_str(s, "layout", st.layout);
	assert_u64(s, "size", st.size);
	assert_u64(s, "chunk", st.chunk_bytes);
	assert_null(get(s, "uuid")); /* raw: no superblocks */
	assert_null(get(s, "name"));
	assert_null(get(s, "events"));
	assert_null(get(s, "clean"));
	assert_str(s, "reason", st.reason);
	members = get(s, "members");
	assert_int_equal(json_object_array_length(members), st.nr_members);
	for (unsigned i = 0; i < st.nr_members; i++) {
		struct json_object *m = json_object_array_get_idx(members, i);
		const struct raid_member_status *ms = &st.members[i];

		assert_u64(m, "role", ms->role);
		assert_str(m, "path", ms->path);
		assert_str(m, "state", raid_member_state_name(ms->state));
		assert_u64(m, "read_errors", ms->read_errors);
		assert_u64(m, "write_errors", ms->write_errors);
		assert_u64(m, "corrected_reads", ms->corrected_reads);
	}
	for (unsigned k = 0; k < RAID_REQ_KINDS; k++) {
		struct json_object *io =
			get(get(s, "io"), raid_req_kind_name(k));

		assert_u64(io, "requests", st.io[k].requests);
		assert_u64(io, "bytes", st.io[k].bytes);
		assert_u64(io, "errors", st.io[k].errors);
	}
	json_object_put(ans);
}

/* ---- the control socket ------------------------------------------------ */

/* status answers raid_status's fields, and the counters follow the I/O. */
static void
test_control_status_matches_raid_status(void **state)
{
	struct raid_array *a = served(*state);
	static uint8_t buf[3 * FIXTURE_CHUNK];
	struct json_object *ans, *io;
	struct client c;

	client_connect(&c);
	assert_status_matches(a, &c);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(a, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(raid_pwrite(a, buf, 512, 8192, RAID_FUA), 0);
	assert_int_equal(raid_pread(a, buf, 4096, 4096, 0), 0);
	assert_int_equal(raid_flush(a), 0);
	assert_int_equal(raid_pread(a, buf, 4096, a->size, 0), -ENOSPC);
	assert_status_matches(a, &c);

	ans = client_request(&c, "{\"command\":\"status\"}");
	io = get(get(ans, "status"), "io");
	assert_u64(get(io, "write"), "requests", 2);
	assert_u64(get(io, "write"), "bytes", sizeof(buf) + 512);
	assert_u64(get(io, "read"), "requests", 2);
	assert_u64(get(io, "read"), "bytes", 2 * 4096); /* failed ones too */
	assert_u64(get(io, "read"), "errors", 1);
	assert_u64(get(io, "flush"), "requests", 1);
	assert_str(get(ans, "status"), "state", "optimal");
	assert_str(json_object_array_get_idx(get(get(ans, "status"), "members"),
					     2),
		   "path", "mem2");
	json_object_put(ans);
	close(c.fd);
}

/* raid_status_json is the same object, one line. */
static void
test_control_status_json_string(void **state)
{
	struct fixture *f = *state;
	struct raid_status st;
	struct json_object *o;
	char *s;

	assert_int_equal(fixture_open(f, &raid5), 0);
	assert_int_equal(raid_status(f->a, &st), 0);
	s = raid_status_json(&st);
	assert_non_null(s);
	assert_null(strchr(s, '\n'));
	o = json_tokener_parse(s);
	assert_non_null(o);
	assert_str(o, "state", "optimal");
	assert_str(o, "layout", "left-symmetric");
	assert_str(o, "metadata", "none");
	assert_int_equal(json_object_array_length(get(o, "members")), 3);
	json_object_put(o);
	free(s);

	/* md identity: the UUID as mdadm prints it. */
	st.has_meta = true;
	for (unsigned i = 0; i < 16; i++) {
		st.uuid[i] = i * 17;
	}
	snprintf(st.name, sizeof(st.name), "host:data");
	st.events = 7;
	st.clean = true;
	s = raid_status_json(&st);
	o = json_tokener_parse(s);
	assert_str(o, "uuid", "00112233:44556677:8899aabb:ccddeeff");
	assert_str(o, "name", "host:data");
	assert_u64(o, "events", 7);
	assert_true(json_object_get_boolean(get(o, "clean")));
	json_object_put(o);
	free(s);

	/* A name (or path) that is not UTF-8 comes out UTF-8, as \xNN. */
	snprintf(st.name, sizeof(st.name), "a\xff\nb");
	s = raid_status_json(&st);
	assert_true(utf8_valid(s, strlen(s)));
	o = json_tokener_parse(s);
	assert_str(o, "name", "a\\xff\nb");
	json_object_put(o);
	free(s);
}

/* The UTF-8 checks and escaping every outside string goes through. */
static void
test_text_utf8_and_clean(void **state)
{
	static const char *const valid[] = { "",
					     "abc",
					     "\xc3\xa9",
					     "\xe2\x82\xac",
					     "\xf0\x90\x8d\x88",
					     "\xf4\x8f\xbf\xbf" };
	static const char *const invalid[] = {
		"\xff",
		"\xc3",
		"\xc0\xaf", /* overlong / */
		"\xe0\x80\xaf",
		"\xed\xa0\x80",	    /* a surrogate */
		"\xf4\x90\x80\x80", /* past U+10FFFF */
		"\xe2\x82",
		"a\x80"
		"b",
	};
	char out[64];

	(void)state;
	for (unsigned i = 0; i < ARRAY_SIZE(valid); i++) {
		assert_true(utf8_valid(valid[i], strlen(valid[i])));
	}
	for (unsigned i = 0; i < ARRAY_SIZE(invalid); i++) {
		assert_false(utf8_valid(invalid[i], strlen(invalid[i])));
	}
	/* Cutting "a€" anywhere inside the euro sign drops all of it. */
	assert_int_equal(utf8_cut("a\xe2\x82\xac", 4), 4);
	assert_int_equal(utf8_cut("a\xe2\x82\xac", 3), 1);
	assert_int_equal(utf8_cut("a\xe2\x82\xac", 2), 1);
	assert_int_equal(utf8_cut("a\xe2\x82\xac", 1), 1);
	assert_string_equal(text_clean(out, sizeof(out),
				       "-a\nb\xff\xc2\x9b"
				       "\xc3\xa9",
				       TEXT_NO_DASH),
			    "\\x2da\\x0ab\\xff\\xc2\\x9b\xc3\xa9");
	assert_string_equal(text_clean(out, sizeof(out), "-a\tb", 0),
			    "-a\\x09b");
	assert_string_equal(
		text_clean(out, sizeof(out), "a\n\xff", TEXT_KEEP_CTRL),
		"a\n\\xff");
	/* Too small: cut at a character, never inside an escape. */
	assert_string_equal(text_clean(out, 6, "ab\n", 0), "ab");
	assert_string_equal(text_clean(out, 4,
				       "a\xc3\xa9"
				       "b",
				       0),
			    "a\xc3\xa9");
}

/* Every bad request gets ok:false, and the connection goes on. */
static void
test_control_bad_requests_keep_connection(void **state)
{
	struct raid_array *a = served(*state);
	static char longline[6000];
	struct client c;

	client_connect(&c);
	assert_refused(client_request(&c, "garbage"), "bad request");
	assert_refused(client_request(&c, "{\"command\":"), "bad request");
	assert_refused(client_request(&c, "{} {}"), "bad request");
	assert_refused(client_request(&c, "[1,2]"), "want {\"command\"");
	assert_refused(client_request(&c, "{}"), "want {\"command\"");
	assert_refused(client_request(&c, "{\"command\":3}"), "want");
	assert_refused(client_request(&c, ""), "empty line");
	assert_refused(client_request(&c, "{\"command\":\"format\"}"),
		       "unknown command 'format'");
	assert_refused(client_request(&c, "{\"command\":\"fail\"}"),
		       "which member?");
	assert_refused(client_request(&c, "{\"command\":\"fail\","
					  "\"member\":\"9\"}"),
		       "member '9': no such member");
	assert_refused(client_request(&c, "{\"command\":\"remove\","
					  "\"member\":\"/no/such\"}"),
		       "no such member");
	client_send(&c, "{\"command\"\0:1}\n", 15);
	assert_refused(client_answer(&c), "NUL");
	memset(longline, 'x', sizeof(longline));
	client_send(&c, longline, sizeof(longline));
	assert_refused(client_request(&c, "tail of the long line"),
		       "line longer than");
	/* Two requests in one send, then one in two: answered in order. */
	client_sends(&c, "{\"command\":\"nope\"}\n{\"command\":\"status\"}\n");
	assert_refused(client_answer(&c), "unknown command 'nope'");
	json_object_put(client_answer(&c));
	client_sends(&c, "{\"command\":");
	sleep_ms(20);
	client_sends(&c, "\"status\"}\r\n");
	assert_status_matches(a, &c);
	close(c.fd);
}

/*
 * add, speed and scrub refuse what they cannot take, naming it, and the
 * connection goes on; status carries progress, last_check and speed.
 */
static void
test_control_add_speed_scrub_refusals(void **state)
{
	struct raid_array *a = served(*state);
	struct json_object *ans, *st;
	struct client c;

	client_connect(&c);
	assert_refused(client_request(&c, "{\"command\":\"add\"}"),
		       "which member?");
	assert_refused(client_request(&c, "{\"command\":\"add\","
					  "\"member\":\"rel.img\"}"),
		       "ABSOLUTE-PATH");
	/* The fixture has no superblocks: nowhere to record a spare. */
	assert_refused(client_request(&c, "{\"command\":\"add\","
					  "\"member\":\"/no/such.img\"}"),
		       "add /no/such.img:");
	assert_refused(client_request(&c, "{\"command\":\"speed\"}"),
		       "want {\"command\":\"speed\"");
	assert_refused(client_request(&c, "{\"command\":\"speed\","
					  "\"min\":0,\"max\":5}"),
		       "both > 0");
	assert_refused(client_request(&c, "{\"command\":\"speed\","
					  "\"min\":\"1\",\"max\":5}"),
		       "both > 0");
	assert_refused(client_request(&c, "{\"command\":\"speed\","
					  "\"min\":9,\"max\":5}"),
		       "min must not exceed max");
	assert_refused(client_request(&c, "{\"command\":\"scrub\"}"),
		       "\"check\"|\"repair\"|\"stop\"");
	assert_refused(client_request(&c, "{\"command\":\"scrub\","
					  "\"action\":\"idle\"}"),
		       "\"check\"|\"repair\"|\"stop\"");
	ans = client_request(&c, "{\"command\":\"status\"}");
	assert_true(answer_ok(ans));
	st = get(ans, "status");
	assert_null(get(st, "progress"));
	assert_null(get(st, "last_check"));
	assert_non_null(get(get(st, "speed"), "min"));
	assert_non_null(get(get(st, "speed"), "max"));
	json_object_put(ans);
	assert_status_matches(a, &c);
	close(c.fd);
}

/*
 * With cache=ram, status carries the cache's counters (raid_status's) and
 * `cache flush` writes back everything: dirty 0, the members hold it; an
 * array without a cache refuses, saying so.
 */
static void
test_control_cache_status_and_flush(void **state)
{
	struct fixture *f = *state;
	struct raid_array *a = served(f);
	static uint8_t buf[8 * FIXTURE_CHUNK];
	struct json_object *ans, *cj;
	struct raid_status st;
	struct client c;

	client_connect(&c);
	ans = client_request(&c, "{\"command\":\"status\"}");
	assert_null(get(get(ans, "status"), "cache"));
	json_object_put(ans);
	assert_refused(client_request(&c, "{\"command\":\"cache\","
					  "\"action\":\"flush\"}"),
		       "the array has no cache");
	f->cfg.cache = RAID_CACHE_RAM;
	f->cfg.cache_size = 1 << 20;
	assert_int_equal(array_cache_open(a, &f->cfg), 0);
	t_fill_random(buf, sizeof(buf));
	assert_int_equal(raid_pwrite(a, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(raid_pread(a, buf, 4096, 4096, 0), 0);
	ans = client_request(&c, "{\"command\":\"status\"}");
	cj = get(get(ans, "status"), "cache");
	assert_int_equal(raid_status(a, &st), 0);
	assert_str(cj, "mode", "ram");
	assert_str(cj, "write_mode", "writeback");
	assert_u64(cj, "size", st.cache.size_bytes);
	assert_u64(cj, "dirty_bytes", sizeof(buf));
	assert_u64(cj, "used_bytes", sizeof(buf));
	assert_u64(cj, "read_hits", 1);
	assert_u64(cj, "read_misses", 0);
	assert_u64(cj, "writes_cached", 1);
	assert_u64(cj, "written_back_bytes", 0);
	json_object_put(ans);
	assert_refused(client_request(&c, "{\"command\":\"cache\"}"),
		       "\"action\":\"flush\"");
	ans = client_request(&c, "{\"command\":\"cache\","
				 "\"action\":\"flush\"}");
	assert_true(answer_ok(ans));
	assert_u64(ans, "dirty_bytes", 0);
	assert_u64(ans, "written_back_bytes", sizeof(buf));
	json_object_put(ans);
	assert_int_equal(raid_status(a, &st), 0);
	assert_int_equal(st.cache.dirty_bytes, 0);
	/* A sequential reader: its last reads find their data read ahead. */
	for (uint64_t off = 0; off < 4 * sizeof(buf) / 8;
	     off += sizeof(buf) / 8) {
		assert_int_equal(raid_pread(a, buf, sizeof(buf) / 8,
					    sizeof(buf) + off, 0),
				 0);
	}
	ans = client_request(&c, "{\"command\":\"status\"}");
	cj = get(get(ans, "status"), "cache");
	assert_int_equal(raid_status(a, &st), 0);
	assert_true(st.cache.readahead_bytes > 0);
	assert_u64(cj, "readahead_bytes", st.cache.readahead_bytes);
	assert_true(st.cache.readahead_hits > 0);
	assert_u64(cj, "readahead_hits", st.cache.readahead_hits);
	json_object_put(ans);
	close(c.fd);
}

/*
 * Random bytes (newlines among them) from several clients, each closed
 * at a random point, answers unread: the server answers the next client.
 */
static void
test_control_garbage_never_hurts(void **state)
{
	struct raid_array *a = served(*state);
	static uint8_t junk[20000];
	struct client c;

	for (unsigned i = 0; i < 40; i++) {
		size_t len = 1 + t_rand(sizeof(junk));

		t_fill_random(junk, len);
		for (size_t j = 0; j < len; j += 1 + t_rand(300)) {
			junk[j] = t_rand(4) ? junk[j] : '\n';
		}
		client_connect(&c);
		client_send(&c, (const char *)junk, len);
		close(c.fd);
	}
	client_connect(&c);
	assert_status_matches(a, &c);
	close(c.fd);
}

/* A client that stalls mid-line or leaves does not hold up another. */
static void
test_control_clients_do_not_block_each_other(void **state)
{
	struct raid_array *a = served(*state);
	struct client slow, gone, fast;

	client_connect(&slow);
	client_connect(&gone);
	client_sends(&slow, "{\"command\":\"sta");
	client_sends(&gone, "{\"command\":\"status");
	close(gone.fd); /* mid-line */
	client_connect(&fast);
	assert_status_matches(a, &fast);
	client_sends(&slow, "tus\"}\n");
	assert_status_matches(a, &slow);
	assert_status_matches(a, &fast);
	close(slow.fd);
	close(fast.fd);
}

/* Many clients at once, more than the server keeps: all get answers. */
static void
test_control_many_clients(void **state)
{
	struct raid_array *a = served(*state);
	static struct client c[24];

	for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
		client_connect(&c[i]);
	}
	for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
		client_sends(&c[i], "{\"command\":\"status\"}\n");
	}
	/* The first 16 are served now; the rest once those leave. */
	for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
		json_object_put(client_answer(&c[i]));
		close(c[i].fd);
	}
	(void)a;
}

/* The socket is 0600 whatever the umask, and gone after close. */
static void
test_control_socket_mode_and_removal(void **state)
{
	struct fixture *f = *state;
	mode_t old = umask(0);
	struct stat st;

	served(f);
	umask(old);
	assert_int_equal(lstat(sock_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	control_close(f->a->control);
	f->a->control = NULL;
	assert_false(exists(sock_path));
}

/*
 * A symlink put at the path once the socket is bound: the file it points
 * at keeps its mode (the socket's mode is never set through the path),
 * and the socket is refused, the symlink left alone.
 */
static void
test_control_socket_mode_not_through_symlink(void **state)
{
	struct fixture *f = *state;
	struct control_server *cs = NULL;
	struct stat st;
	int fd;

	snprintf(swap_victim, sizeof(swap_victim), "%s/victim", tdir);
	fd = open(swap_victim, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	assert_int_equal(fixture_open(f, &raid5), 0);
	t_reset();
	swap_on_bind = true;
	assert_int_equal(control_open(f->a, sock_path, &cs), -EEXIST);
	swap_on_bind = false;
	assert_null(cs);
	assert_non_null(strstr(t_last_error, "not a socket any more"));
	assert_int_equal(stat(swap_victim, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(lstat(sock_path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

/* A socket nobody listens on (a killed server's) is replaced. */
static void
test_control_stale_socket_replaced(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct client c;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 1), 0);
	close(fd); /* the path stays, nobody listens */
	assert_true(exists(sock_path));
	served(*state);
	client_connect(&c);
	assert_status_matches(((struct fixture *)*state)->a, &c);
	close(c.fd);
}

/* A socket somebody listens on is refused, and still theirs. */
static void
test_control_refuses_socket_in_use(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct control_server *cs = NULL;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct stat before, after;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(stat(sock_path, &before), 0);
	assert_int_equal(fixture_open(f, &raid5), 0);
	t_reset();
	assert_int_equal(control_open(f->a, sock_path, &cs), -EEXIST);
	assert_null(cs);
	assert_non_null(strstr(t_last_error, sock_path));
	assert_non_null(strstr(t_last_error, "in use"));
	assert_int_equal(stat(sock_path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	close(fd);
}

/* A regular file at the path is refused and left as it was. */
static void
test_control_refuses_regular_file(void **state)
{
	struct fixture *f = *state;
	struct control_server *cs = NULL;
	const char text[] = "not a socket\n";
	char back[64] = "";
	FILE *fp = fopen(sock_path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(fixture_open(f, &raid5), 0);
	t_reset();
	assert_int_equal(control_open(f->a, sock_path, &cs), -EEXIST);
	assert_non_null(strstr(t_last_error, sock_path));
	assert_non_null(strstr(t_last_error, "not a socket"));
	fp = fopen(sock_path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(back, sizeof(back), fp));
	fclose(fp);
	assert_string_equal(back, text);
	/* A path too long for a unix socket is refused too, saying so. */
	t_reset();
	assert_int_equal(
		control_open(f->a,
			     "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock",
			     &cs),
		-ENAMETOOLONG);
	assert_non_null(strstr(t_last_error, "longer than"));
}

/* ---- events ------------------------------------------------------------ */

/* A program that appends its arguments, one line per run, to tdir/log. */
static void
write_program(char *prog, size_t len, const char *body)
{
	FILE *fp;

	snprintf(prog, len, "%s/event.sh", tdir);
	fp = fopen(prog, "w");
	assert_non_null(fp);
	fprintf(fp, "#!/bin/sh\n%s\necho \"$@\" >> %s/log\n", body, tdir);
	fclose(fp);
	assert_int_equal(chmod(prog, 0700), 0);
}

/* The log's lines, joined by '|'; the count in *n. */
static void
read_log(char *out, size_t len, unsigned *n)
{
	char path[128], line[4200];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/log", tdir);
	out[0] = '\0';
	*n = 0;
	fp = fopen(path, "r");
	if (!fp) {
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = '\0';
		if ((*n)++ && strlen(out) + 1 < len) {
			strcat(out, "|");
		}
		snprintf(out + strlen(out), len - strlen(out), "%s", line);
	}
	fclose(fp);
}

/* PROGRAM EVENT ARRAY [MEMBER], in the order emitted. */
static void
test_events_program_gets_arguments(void **state)
{
	struct event_runner *er = NULL;
	char prog[128], log[512];
	unsigned n;

	(void)state;
	write_program(prog, sizeof(prog), "");
	assert_int_equal(events_new(prog, "host:data", &er), 0);
	assert_int_equal(events_start(er), 0);
	events_emit(er, "Fail", "/srv/b.img");
	events_emit(er, "DegradedArray", NULL);
	events_emit(er, "MemberRemoved", "/srv/b.img");
	events_free(er);
	read_log(log, sizeof(log), &n);
	assert_string_equal(log, "Fail host:data /srv/b.img|"
				 "DegradedArray host:data|"
				 "MemberRemoved host:data /srv/b.img");
}

/* Events before the thread starts (nbdkit not forked yet) still run. */
static void
test_events_run_at_free_without_thread(void **state)
{
	struct event_runner *er = NULL;
	char prog[128], log[512];
	unsigned n;

	(void)state;
	write_program(prog, sizeof(prog), "");
	assert_int_equal(events_new(prog, "nbdraid", &er), 0);
	events_emit(er, "ArrayFailed", NULL);
	events_free(er);
	read_log(log, sizeof(log), &n);
	assert_string_equal(log, "ArrayFailed nbdraid");
}

/* A program found on PATH (no '/'); one that cannot run is logged. */
static void
test_events_path_lookup_and_missing_program(void **state)
{
	struct event_runner *er = NULL;
	char prog[128], log[512], *old = getenv("PATH"), path[4096];
	unsigned n;

	(void)state;
	write_program(prog, sizeof(prog), "");
	snprintf(path, sizeof(path), "%s:%s", tdir, old ? old : "/usr/bin");
	setenv("PATH", path, 1);
	assert_int_equal(events_new("event.sh", "a", &er), 0);
	events_emit(er, "Fail", "m");
	events_free(er);
	if (old) {
		setenv("PATH", old, 1);
	}
	read_log(log, sizeof(log), &n);
	assert_string_equal(log, "Fail a m");

	t_reset();
	assert_int_equal(events_new("/no/such/program", "a", &er), 0);
	events_emit(er, "Fail", "m");
	events_free(er);
	assert_non_null(strstr(t_last_error, "/no/such/program"));
}

/*
 * A full queue drops (said once) and never blocks the emitter: the
 * program holds the thread until told to go, 64 more wait, the rest drop.
 */
static void
test_events_queue_full_drops(void **state)
{
	struct event_runner *er = NULL;
	char prog[128], started[128], go[128], body[512], log[4096];
	unsigned n, drops = 0;
	FILE *fp;

	(void)state;
	snprintf(started, sizeof(started), "%s/started", tdir);
	snprintf(go, sizeof(go), "%s/go", tdir);
	snprintf(body, sizeof(body),
		 "touch %s; while [ ! -e %s ]; do sleep 0.01; done", started,
		 go);
	write_program(prog, sizeof(prog), body);
	assert_int_equal(events_new(prog, "a", &er), 0);
	assert_int_equal(events_start(er), 0);
	t_reset();
	events_emit(er, "First", NULL);
	wait_for_file(started); /* the thread holds "First" */
	for (unsigned i = 0; i < 64 + 5; i++) {
		events_emit(er, "Next", NULL);
	}
	for (const char *p = t_errors; (p = strstr(p, "dropped")); p++) {
		drops++;
	}
	assert_int_equal(drops, 1);
	fp = fopen(go, "w");
	assert_non_null(fp);
	fclose(fp);
	events_free(er);
	read_log(log, sizeof(log), &n);
	assert_int_equal(n, 1 + 64);
}

/* array_event reaches the program with the array's name. */
static void
test_events_array_event(void **state)
{
	struct fixture *f = *state;
	char prog[128], log[512];
	unsigned n;

	write_program(prog, sizeof(prog), "");
	assert_int_equal(fixture_open(f, &raid5), 0);
	assert_int_equal(events_new(prog, "nbdraid", &f->a->events), 0);
	assert_int_equal(raid_start(f->a), 0);
	array_event(f->a, "DegradedArray", NULL);
	raid_close(f->a);
	f->a = NULL;
	read_log(log, sizeof(log), &n);
	assert_string_equal(log, "DegradedArray nbdraid");
}

/* A program that writes each argument in [], one line per run. */
static void
write_argv_program(char *prog, size_t len)
{
	FILE *fp;

	snprintf(prog, len, "%s/argv.sh", tdir);
	fp = fopen(prog, "w");
	assert_non_null(fp);
	fprintf(fp,
		"#!/bin/sh\nfor a; do printf '[%%s]' \"$a\"; done "
		">> %s/log\necho >> %s/log\n",
		tdir, tdir);
	fclose(fp);
	assert_int_equal(chmod(prog, 0700), 0);
}

/*
 * An array name from a superblock, with a newline and a leading '-',
 * reaches event programs as one argument that is no option (\x0a, \x2d);
 * another array's name read from a spare's superblock, and the spare's
 * path with a newline, reach the log as one line.
 */
static void
test_events_and_logs_clean_outside_names(void **state)
{
	static const char name[] = "-rf:x\ny";
	char prog[128], log[1024], bad[160];
	struct raid_array *a;
	unsigned n;
	int fd;

	(void)state;
	write_argv_program(prog, sizeof(prog));
	a = md_open(1, 2, -1, name, prog);
	assert_int_equal(raid_fail_member(a, 1, "test"), 0); /* event Fail */
	/* A spare (its path with a newline) carrying the superblock of
	 * another array of that name: refused, the log saying whose. */
	snprintf(bad, sizeof(bad), "%s/other\n.img", tdir);
	fd = open(bad, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, MD_BYTES), 0);
	close(fd);
	{
		char *one[] = { bad, md_files[3] };
		struct raid_create_spec spec = { .level = 1,
						 .name = name,
						 .homehost = "test",
						 .minor = 2,
						 .members = one,
						 .nr_members = 2 };
		struct raid_create_result res;

		assert_int_equal(raid_create(&spec, NULL, NULL, &res), 0);
	}
	t_reset();
	assert_int_equal(raid_add_member(a, bad, false), -EEXIST);
	assert_null(strchr(t_last_error, '\n'));
	assert_non_null(strstr(t_last_error, "(-rf:x\\x0ay)"));
	assert_non_null(strstr(t_last_error, "other\\x0a.img"));
	raid_close(a); /* runs the events queued */
	read_log(log, sizeof(log), &n);
	snprintf(bad, sizeof(bad), "[Fail][\\x2drf:x\\x0ay][%s]", md_files[1]);
	if (!strstr(log, bad)) {
		print_error("program saw '%s', not '%s'\n", log, bad);
		fail();
	}
	assert_int_equal(n, 1);
}

/* ---- fail and remove through the socket -------------------------------- */

/*
 * fail answers with the member it failed (path, role, device UUID), not
 * with the spare that took its role since; that member, named by path
 * again, is no member any more; the status shows the spare rebuilding.
 */
static void
test_control_fail_names_the_failed_member(void **state)
{
	struct fixture *f = *state;
	struct raid_examine ex;
	struct json_object *ans, *m;
	char why[160], uuid[UUID_STR_BYTES];
	struct client c;

	f->a = md_open(1, 2, 2, "ctl", NULL);
	assert_int_equal(raid_examine(md_files[1], &ex, why, sizeof(why)), 0);
	uuid_format(ex.device_uuid, uuid);
	assert_int_equal(control_open(f->a, sock_path, &f->a->control), 0);
	assert_int_equal(control_start(f->a->control), 0);
	client_connect(&c);
	ans = client_request(&c, "{\"command\":\"fail\",\"member\":\"1\"}");
	assert_true(answer_ok(ans));
	assert_u64(ans, "role", 1);
	assert_str(ans, "path", md_files[1]);
	assert_str(ans, "device_uuid", uuid);
	assert_str(ans, "state", "faulty");
	json_object_put(ans);

	ans = client_request(&c, "{\"command\":\"status\"}");
	m = json_object_array_get_idx(get(get(ans, "status"), "members"), 1);
	assert_str(m, "path", md_files[2]);
	assert_str(m, "state", "rebuilding");
	json_object_put(ans);
	snprintf(why, sizeof(why), "{\"command\":\"fail\",\"member\":\"%s\"}",
		 md_files[1]);
	assert_refused(client_request(&c, why), "no such member");
	close(c.fd);
}

/* An answer line, raw: UTF-8, and free of the bytes the request had. */
static void
assert_clean_refusal(struct client *c, const char *want)
{
	static char line[1 << 16];
	struct json_object *o;

	assert_true(client_line(c, line, sizeof(line), -1));
	if (!utf8_valid(line, strlen(line))) {
		print_error("answer is not UTF-8: %s\n", line);
		fail();
	}
	o = json_tokener_parse(line);
	assert_non_null(o);
	assert_refused(o, want);
}

/*
 * A NUL (\u0000) in any string or key, or a string that is not UTF-8, is
 * refused by name, before anything runs, and never echoed back raw.
 */
static void
test_control_refuses_nul_and_bad_utf8(void **state)
{
	struct fixture *f = *state;
	static char line[2048];
	struct client c;
	size_t n;

	served(f);
	client_connect(&c);
	client_sends(&c, "{\"command\":\"status\\u0000x\"}\n");
	assert_clean_refusal(&c, "\"command\": a NUL character");
	client_sends(&c,
		     "{\"command\":\"fail\",\"member\":\"mem1\\u0000x\"}\n");
	assert_clean_refusal(&c, "\"member\": a NUL character");
	client_sends(&c, "{\"comm\\u0000x\":1,\"command\":\"status\"}\n");
	assert_clean_refusal(&c, "a NUL character (\\u0000) in a key");
	/* A key given twice: the value json-c drops is checked too. */
	client_sends(&c, "{\"command\":\"fail\",\"member\":\"\xff\","
			 "\"member\":\"1\"}\n");
	assert_clean_refusal(&c, "not valid UTF-8");
	client_sends(&c, "{\"command\":\"fail\",\"member\":\"\\u0000\","
			 "\"member\":\"1\"}\n");
	assert_clean_refusal(&c, "in a value given twice");
	client_sends(
		&c, "{\"command\":\"status\",\"x\":[1,{\"y\":\"\\u0000\"}]}\n");
	assert_clean_refusal(&c, "\"x\": a NUL character");
	/* Not UTF-8: a stray byte, a cut sequence, overlong, surrogate. */
	client_sends(&c, "{\"command\":\"\xff\xfe\"}\n");
	assert_clean_refusal(&c, "\"command\": not valid UTF-8");
	client_sends(&c, "{\"command\":\"fail\",\"member\":\"\xc3(\"}\n");
	assert_clean_refusal(&c, "\"member\": not valid UTF-8");
	client_sends(&c, "{\"command\":\"fail\",\"member\":\"\xc0\xaf\"}\n");
	assert_clean_refusal(&c, "\"member\": not valid UTF-8");
	client_sends(&c,
		     "{\"command\":\"fail\",\"member\":\"\xed\xa0\x80\"}\n");
	assert_clean_refusal(&c, "\"member\": not valid UTF-8");
	client_sends(&c, "{\"\xff\":1,\"command\":\"status\"}\n");
	assert_clean_refusal(&c, "a key is not valid UTF-8");
	/* A long name of two-byte characters: quoted, cut at a character. */
	n = snprintf(line, sizeof(line), "{\"command\":\"");
	for (unsigned i = 0; i < 600; i++) {
		n += snprintf(line + n, sizeof(line) - n, "\xc3\xa9");
	}
	snprintf(line + n, sizeof(line) - n, "\"}\n");
	client_sends(&c, line);
	assert_clean_refusal(&c, "unknown command '\xc3\xa9\xc3\xa9");
	client_sends(
		&c,
		"{\"command\":\"add\",\"member\":\"/x\",\"force\":\"no\"}\n");
	assert_clean_refusal(&c, "\"force\" must be true or false");
	/* Nothing ran: member 1 is in sync, the connection goes on. */
	assert_int_equal(atomic_load(&f->a->members[1].state),
			 RAID_MEMBER_IN_SYNC);
	assert_status_matches(f->a, &c);
	close(c.fd);
}

/*
 * More clients than the server keeps, each quiet after its status (half
 * in the middle of a line): every one is served; the quietest make room,
 * told why; the server still stops at once.
 */
static void
test_control_idle_clients_do_not_lock_out(void **state)
{
	enum { N = CONTROL_CLIENTS_MAX + 36 };
	static struct client c[N];
	static char line[4096];
	struct fixture *f = *state;
	unsigned closed = 0;

	served(f);
	for (unsigned i = 0; i < N; i++) {
		client_connect(&c[i]);
		client_sends(&c[i], "{\"command\":\"status\"}\n");
		if (!client_line(&c[i], line, sizeof(line), 20000)) {
			print_error("client %u: no answer\n", i);
			fail();
		}
		if (i % 2) {
			client_sends(&c[i], "{\"command\":\"sta");
		}
	}
	for (unsigned i = 0; i < N; i++) {
		if (client_quiet(&c[i])) {
			continue;
		}
		assert_clean_refusal(&c[i], "clients at most");
		assert_int_equal(recv(c[i].fd, line, sizeof(line), 0), 0);
		closed++;
	}
	assert_int_equal(closed, N - CONTROL_CLIENTS_MAX);
	for (unsigned i = N - 8; i < N; i++) {
		assert_true(client_quiet(&c[i])); /* the newest kept */
	}
	control_close(f->a->control); /* with clients mid-line */
	f->a->control = NULL;
	for (unsigned i = 0; i < N; i++) {
		close(c[i].fd);
	}
}

/* Member 1's I/O held at a gate until the test opens it. */
static struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	unsigned waiting;
	const struct io_backend *be; /* the member's own */
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

static int
gated_submit(struct io_req *reqs, unsigned nr)
{
	pthread_mutex_lock(&gate.lock);
	gate.waiting++;
	pthread_cond_broadcast(&gate.cond);
	while (!gate.open) {
		pthread_cond_wait(&gate.cond, &gate.lock);
	}
	gate.waiting--;
	pthread_mutex_unlock(&gate.lock);
	return gate.be->submit_wait(reqs, nr);
}

static const struct io_backend gated_backend = { "gated", gated_submit };

static void *
read_member1(void *arg)
{
	static uint8_t buf[FIXTURE_CHUNK];

	/* RAID 5 of 3: the array's second chunk is member 1's first. */
	assert_int_equal(raid_pread(arg, buf, sizeof(buf), FIXTURE_CHUNK, 0),
			 0);
	return NULL;
}

/*
 * A command that waits (remove, for a member's I/O in flight) stalls
 * only its own client: others are answered meanwhile, a new client too;
 * its answer comes once the I/O ends, and says the member was removed.
 */
static void
test_control_slow_command_stalls_only_its_client(void **state)
{
	struct raid_array *a = served(*state);
	struct client slow, other, late;
	struct json_object *ans;
	pthread_t reader;

	gate.open = false;
	gate.be = a->members[1].be;
	a->members[1].be = &gated_backend;
	assert_int_equal(pthread_create(&reader, NULL, read_member1, a), 0);
	pthread_mutex_lock(&gate.lock);
	while (!gate.waiting) {
		pthread_cond_wait(&gate.cond, &gate.lock);
	}
	pthread_mutex_unlock(&gate.lock); /* member 1 has I/O in flight */

	client_connect(&slow);
	client_connect(&other);
	ans = client_request(&slow, "{\"command\":\"fail\",\"member\":1}");
	assert_true(answer_ok(ans));
	json_object_put(ans);
	client_sends(&slow, "{\"command\":\"remove\",\"member\":1}\n"
			    "{\"command\":\"speed\",\"min\":1,\"max\":2}\n");
	ans = client_request(&other, "{\"command\":\"speed\",\"min\":5,"
				     "\"max\":9}");
	assert_true(answer_ok(ans));
	json_object_put(ans);
	client_connect(&late);
	assert_refused(client_request(&late, "{\"command\":\"nope\"}"),
		       "unknown command");
	assert_true(client_quiet(&slow)); /* its remove still waits */

	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	assert_int_equal(pthread_join(reader, NULL), 0);
	ans = client_answer(&slow);
	assert_true(answer_ok(ans));
	assert_u64(ans, "role", 1);
	assert_str(ans, "path", "mem1");
	assert_str(ans, "state", "missing");
	json_object_put(ans);
	ans = client_answer(&slow); /* and its next line, in order */
	assert_u64(ans, "min", 1);
	json_object_put(ans);
	a->members[1].be = gate.be;
	close(slow.fd);
	close(other.fd);
	close(late.fd);
}

/*
 * fail 1: degraded, member 1 faulty, event Fail; fail 2 then refused (the
 * last copy); remove 0 refused (in sync); remove 1: missing.
 */
static void
test_control_fail_and_remove(void **state)
{
	struct fixture *f = *state;
	struct json_object *ans, *s;
	char prog[128], log[512];
	struct raid_array *a;
	struct client c;
	unsigned n;

	/* As raid_open and raid_start do: the runner first, then control. */
	write_program(prog, sizeof(prog), "");
	assert_int_equal(fixture_open(f, &raid5), 0);
	a = f->a;
	assert_int_equal(events_new(prog, "nbdraid", &a->events), 0);
	assert_int_equal(control_open(a, sock_path, &a->control), 0);
	assert_int_equal(raid_start(a), 0);
	client_connect(&c);
	ans = client_request(&c, "{\"command\":\"fail\",\"member\":\"1\"}");
	if (!answer_ok(ans) && strstr(json_object_get_string(get(ans, "error")),
				      "not implemented")) {
		json_object_put(ans);
		close(c.fd);
		skip(); /* the core's raid_fail_member is a stub still */
	}
	assert_true(answer_ok(ans));
	assert_u64(ans, "role", 1);
	assert_str(ans, "path", "mem1");
	assert_str(ans, "state", "faulty");
	json_object_put(ans);

	ans = client_request(&c, "{\"command\":\"status\"}");
	s = get(ans, "status");
	assert_str(s, "state", "degraded");
	assert_str(json_object_array_get_idx(get(s, "members"), 1), "state",
		   "faulty");
	assert_true(strlen(json_object_get_string(get(s, "reason"))) > 0);
	json_object_put(ans);
	assert_status_matches(a, &c);

	assert_refused(client_request(&c, "{\"command\":\"fail\","
					  "\"member\":\"mem2\"}"),
		       "last copy");
	assert_refused(client_request(&c, "{\"command\":\"remove\","
					  "\"member\":0}"),
		       "fail it first");
	ans = client_request(&c, "{\"command\":\"remove\",\"member\":\"1\"}");
	assert_true(answer_ok(ans));
	assert_str(ans, "state", "missing");
	json_object_put(ans);
	ans = client_request(&c, "{\"command\":\"status\"}");
	assert_str(json_object_array_get_idx(get(get(ans, "status"), "members"),
					     1),
		   "state", "missing");
	json_object_put(ans);
	close(c.fd);

	raid_close(f->a); /* runs the events still queued */
	f->a = NULL;
	read_log(log, sizeof(log), &n);
	assert_non_null(strstr(log, "Fail nbdraid mem1"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_control_status_matches_raid_status, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_control_status_json_string,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_bad_requests_keep_connection, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_control_add_speed_scrub_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_garbage_never_hurts, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_clients_do_not_block_each_other, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_control_many_clients,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_socket_mode_and_removal, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_stale_socket_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_socket_mode_not_through_symlink, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_control_refuses_socket_in_use, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_refuses_regular_file, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_events_program_gets_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_events_run_at_free_without_thread, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_events_path_lookup_and_missing_program, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_events_queue_full_drops,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_array_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_events_and_logs_clean_outside_names, setup,
			teardown),
		cmocka_unit_test(test_text_utf8_and_clean),
		cmocka_unit_test_setup_teardown(
			test_control_cache_status_and_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_fail_and_remove,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_fail_names_the_failed_member, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_control_refuses_nul_and_bad_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_control_idle_clients_do_not_lock_out, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_control_slow_command_stalls_only_its_client, setup,
			teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
