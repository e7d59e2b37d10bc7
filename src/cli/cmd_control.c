/*
 * cmd_control.c: the operator's commands, through a running server's
 * control socket (control=PATH; docs/control.md has the protocol):
 *
 *   nbdraid --control PATH status [--json]   the array now, as mdadm
 *                                            --detail shows it, or the
 *                                            status object as JSON
 *   nbdraid --control PATH fail MEMBER       mdadm --fail
 *   nbdraid --control PATH remove MEMBER     mdadm --remove
 *   nbdraid --control PATH add PATH [--force]
 *                                            mdadm --add: a spare (at
 *                                            once rebuilt into a role
 *                                            that has no member)
 *   nbdraid --control PATH speed MIN MAX     md's speed_limit_min/_max,
 *                                            KiB/s per member
 *   nbdraid --control PATH scrub check|repair|stop
 *                                            md's sync_action; returns
 *                                            once the pass shows
 *   nbdraid --control PATH cache flush       write back everything the
 *                                            cache holds, flush the
 *                                            members; returns when done
 *
 * MEMBER is a role number or a member's path (a relative path is taken
 * from the current folder, as nbdkit takes member=).  One request line,
 * one answer line.  Exit status 0 when the server said ok; 1 when it
 * refused (its error printed) or could not be reached.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json.h>

#include "cli.h"

#define ANSWER_MAX	  (4u << 20) /* bytes: far more than any status */
#define ANSWER_TIMEOUT_MS 60000	     /* fail and remove write superblocks */
#define ANSWER_NO_TIMEOUT -1	     /* cache flush: as long as it takes */

/* A connected socket to the server at path, or -1 (said why). */
static int
control_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		cli_fail("%s: path longer than %zu bytes", path,
			 sizeof(sun.sun_path) - 1);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		cli_fail("%s: socket: %s", path, strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		cli_fail("%s: connect: %s (is nbdkit serving with "
			 "control=%s?)",
			 path, strerror(errno), path);
		close(fd);
		return -1;
	}
	return fd;
}

static bool
send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return false;
		}
		s += n;
		len -= n;
	}
	return true;
}

/* Read up to the first newline: the answer line (free it), or NULL. */
static char *
read_line(int fd, const char *path, int timeout_ms)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl = NULL;

	while (buf && !nl) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (len + 1 == cap) {
			char *b =
				cap < ANSWER_MAX ? realloc(buf, cap * 2) : NULL;

			if (!b) {
				cli_fail("%s: answer too long", path);
				break;
			}
			buf = b;
			cap *= 2;
		}
		if (poll(&p, 1, timeout_ms) == 0) {
			cli_fail("%s: no answer within %d s", path,
				 timeout_ms / 1000);
			break;
		}
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			cli_fail("%s: %s", path,
				 n ? strerror(errno)
				   : "the server closed the connection");
			break;
		}
		buf[len + n] = '\0';
		nl = memchr(buf + len, '\n', n);
		len += n;
	}
	if (!nl) {
		free(buf);
		return NULL;
	}
	*nl = '\0';
	return buf;
}

/*
 * Send one request, return the answer when it says ok.  NULL when the
 * server could not be reached or refused (said why).
 */
static struct json_object *
request_wait(const char *path, struct json_object *req, int timeout_ms)
{
	const char *s = json_object_to_json_string_ext(
		req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	struct json_object *ans = NULL, *ok, *err;
	char *line = NULL;
	int fd = control_connect(path);

	if (fd < 0) {
		return NULL;
	}
	if (!send_all(fd, s, strlen(s)) || !send_all(fd, "\n", 1)) {
		cli_fail("%s: send: %s", path, strerror(errno));
	} else {
		line = read_line(fd, path, timeout_ms);
	}
	close(fd);
	if (line && !(ans = json_tokener_parse(line))) {
		cli_fail("%s: the answer is not JSON: %.200s", path, line);
	}
	free(line);
	if (ans && (!json_object_object_get_ex(ans, "ok", &ok) ||
		    !json_object_get_boolean(ok))) {
		cli_fail("%s: %s", path,
			 json_object_object_get_ex(ans, "error", &err)
				 ? json_object_get_string(err)
				 : "the server refused, saying nothing");
		json_object_put(ans);
		ans = NULL;
	}
	return ans;
}

static struct json_object *
request(const char *path, struct json_object *req)
{
	return request_wait(path, req, ANSWER_TIMEOUT_MS);
}

/* ---- status, in words -------------------------------------------------- */

static struct json_object *
get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

/* A field as text: a string as it is, a number or boolean in JSON. */
static const char *
text(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	return v ? json_object_get_string(v) : "-";
}

static uint64_t
number(struct json_object *o, const char *key)
{
	return json_object_get_uint64(get(o, key));
}

/* Active, failed ... as mdadm counts its devices. */
static void
print_counts(struct json_object *members)
{
	size_t n = json_object_array_length(members);
	unsigned in_sync = 0, faulty = 0, spare = 0, missing = 0, working;

	for (size_t i = 0; i < n; i++) {
		const char *s =
			text(json_object_array_get_idx(members, i), "state");

		in_sync += strcmp(s, "in_sync") == 0;
		faulty += strcmp(s, "faulty") == 0;
		missing += strcmp(s, "missing") == 0;
		spare += strcmp(s, "spare") == 0;
	}
	working = n - missing;
	printf("      Raid Devices : %zu\n", n - spare);
	printf("     Total Devices : %u\n", working);
	printf("    Active Devices : %u\n", in_sync);
	printf("   Working Devices : %u\n", working - faulty);
	printf("    Failed Devices : %u\n", faulty);
	printf("   Missing Devices : %u\n", missing);
	printf("     Spare Devices : %u\n\n", spare);
}

static void
print_members(struct json_object *members)
{
	printf("    Role  State       Read errors  Write errors  Corrected"
	       "  Path\n");
	for (size_t i = 0; i < json_object_array_length(members); i++) {
		struct json_object *m = json_object_array_get_idx(members, i);
		struct json_object *path = get(m, "path");

		struct json_object *role = get(m, "role");

		printf("  %6s  %-10s  %11" PRIu64 "  %12" PRIu64 "  %9" PRIu64
		       "  %s\n",
		       role ? json_object_get_string(role) : "-",
		       text(m, "state"), number(m, "read_errors"),
		       number(m, "write_errors"), number(m, "corrected_reads"),
		       path ? json_object_get_string(path) : "(none)");
	}
}

static void
print_io(struct json_object *io)
{
	printf("\n    Requests      Count           Bytes  Errors\n");
	json_object_object_foreach(io, kind, k)
	{
		printf("  %10s  %9" PRIu64 "  %14" PRIu64 "  %6" PRIu64 "\n",
		       kind, number(k, "requests"), number(k, "bytes"),
		       number(k, "errors"));
	}
}

/* md's /proc/mdstat words for a pass: Rebuild, Resync, Check ... */
static const char *
pass_title(const char *kind)
{
	if (strcmp(kind, "recovery") == 0) {
		return "Rebuild";
	}
	if (strcmp(kind, "resync") == 0) {
		return "Resync";
	}
	return strcmp(kind, "check") == 0 ? "Check" : "Repair";
}

/* The pass running, the last check and the speed limits, md-style. */
static void
print_sync(struct json_object *st)
{
	struct json_object *p = get(st, "progress"), *c = get(st, "last_check");
	struct json_object *speed = get(st, "speed");

	if (p) {
		uint64_t total = number(p, "total_bytes");
		uint64_t done = number(p, "done_bytes");

		printf("%*s Status : %" PRIu64 "%% complete", 11,
		       pass_title(text(p, "kind")),
		       total ? done * 100 / total : 0);
		if (get(p, "member")) {
			printf(" (member %s)", text(p, "member"));
		}
		printf(", %" PRIu64 "K/sec, about %" PRIu64 " s left\n",
		       number(p, "bytes_per_s") / 1024, number(p, "eta_s"));
	}
	if (c) {
		printf("        Last Check : %s, mismatch_cnt %" PRIu64
		       ", finished %" PRIu64 "\n",
		       text(c, "kind"), number(c, "mismatch_cnt"),
		       number(c, "finished"));
	}
	if (speed) {
		printf("        Sync Speed : min %" PRIu64 "K/sec, max %" PRIu64
		       "K/sec\n",
		       number(speed, "min"), number(speed, "max"));
	}
}

/* The cache's line, when there is one. */
static void
print_cache(struct json_object *st)
{
	struct json_object *c = get(st, "cache");
	char size[64], dirty[64];

	if (!c) {
		return;
	}
	printf("             Cache : %s %s, %s, %s dirty, read hits %" PRIu64
	       " misses %" PRIu64 ", written back %" PRIu64 " bytes (%" PRIu64
	       "K/sec)\n",
	       text(c, "mode"), text(c, "write_mode"),
	       cli_human(number(c, "size"), size, sizeof(size)),
	       cli_human(number(c, "dirty_bytes"), dirty, sizeof(dirty)),
	       number(c, "read_hits"), number(c, "read_misses"),
	       number(c, "written_back_bytes"),
	       number(c, "writeback_rate") / 1024);
	printf("        Read-ahead : %s read ahead, %" PRIu64
	       " read hits on it\n",
	       cli_human(number(c, "readahead_bytes"), size, sizeof(size)),
	       number(c, "readahead_hits"));
	c = get(c, "log");
	if (!c) {
		return;
	}
	printf("               Log : %s, %s of %s in use, %" PRIu64
	       " records, %" PRIu64 " syncs%s%s\n",
	       text(c, "path"),
	       cli_human(number(c, "used_bytes"), size, sizeof(size)),
	       cli_human(number(c, "size"), dirty, sizeof(dirty)),
	       number(c, "records"), number(c, "syncs"),
	       get(c, "error") ? ", FAILED: " : "",
	       get(c, "error") ? text(c, "error") : "");
}

/* What stripe gathering did (RAID 5), if the array gathers. */
static void
print_gather(struct json_object *st)
{
	struct json_object *g = get(st, "gather");

	if (!g) {
		return;
	}
	printf("  Stripe Gathering : %" PRIu64 " pieces parked, %" PRIu64
	       " stripes whole; partial %" PRIu64 " idle, %" PRIu64
	       " timeout, %" PRIu64 " forced (wait %" PRIu64
	       "us, grace %" PRIu64 "us)\n",
	       number(g, "pieces"), number(g, "full"),
	       number(g, "released_idle"), number(g, "released_timeout"),
	       number(g, "released_forced"), number(g, "wait_us"),
	       number(g, "grace_us"));
}

static void
print_status(const char *path, struct json_object *st)
{
	struct json_object *layout = get(st, "layout");
	const char *reason = text(st, "reason");
	uint64_t chunk = number(st, "chunk");
	char buf[64];

	printf("%s:\n", path);
	printf("        Raid Level : raid%s\n", text(st, "level"));
	if (layout) {
		printf("            Layout : %s\n",
		       json_object_get_string(layout));
	}
	printf("        Array Size : %" PRIu64 " (%s)\n", number(st, "size"),
	       cli_human(number(st, "size"), buf, sizeof(buf)));
	if (chunk) {
		printf("        Chunk Size : %" PRIu64 "K\n", chunk / 1024);
	}
	printf("             State : %s\n", text(st, "state"));
	if (*reason) {
		printf("            Reason : %s\n", reason);
	}
	print_sync(st);
	print_cache(st);
	print_gather(st);
	print_counts(get(st, "members"));
	printf("          Metadata : %s\n", text(st, "metadata"));
	if (get(st, "uuid")) {
		printf("              Name : %s\n", text(st, "name"));
		printf("              UUID : %s\n", text(st, "uuid"));
		printf("            Events : %s\n", text(st, "events"));
		printf("       Superblocks : %s\n",
		       json_object_get_boolean(get(st, "clean")) ? "clean"
								 : "active");
	}
	printf("\n");
	print_members(get(st, "members"));
	print_io(get(st, "io"));
}

/* ---- the commands ------------------------------------------------------ */

static int
control_status(const char *path, int argc, char **argv)
{
	struct json_object *req = json_object_new_object(), *ans;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") != 0) {
			return cli_fail("usage: nbdraid --control PATH status "
					"[--json]");
		}
		json = true;
	}
	json_object_object_add(req, "command",
			       json_object_new_string("status"));
	ans = request(path, req);
	json_object_put(req);
	if (!ans) {
		return 1;
	}
	if (!get(ans, "status")) {
		json_object_put(ans);
		return cli_fail("%s: the answer holds no status", path);
	}
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(
				       get(ans, "status"),
				       JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		print_status(path, get(ans, "status"));
	}
	json_object_put(ans);
	return 0;
}

/* MEMBER as the server knows it: a role, or an absolute path. */
static char *
member_spec(const char *arg)
{
	char *cwd, *abs = NULL;

	if (arg[0] == '/' ||
	    (arg[0] && strspn(arg, "0123456789") == strlen(arg))) {
		return strdup(arg);
	}
	cwd = getcwd(NULL, 0);
	if (cwd && asprintf(&abs, "%s/%s", cwd, arg) < 0) {
		abs = NULL;
	}
	free(cwd);
	return abs;
}

/* fail, remove: one member, then the state the server reports. */
static int
control_member(const char *path, int argc, char **argv)
{
	struct json_object *req, *ans;
	char *spec;

	if (argc != 2) {
		return cli_fail("usage: nbdraid --control PATH %s MEMBER",
				argv[0]);
	}
	spec = member_spec(argv[1]);
	req = json_object_new_object();
	if (!spec || !req) {
		free(spec);
		json_object_put(req);
		return cli_fail("out of memory");
	}
	json_object_object_add(req, "command", json_object_new_string(argv[0]));
	json_object_object_add(req, "member", json_object_new_string(spec));
	free(spec);
	ans = request(path, req);
	json_object_put(req);
	if (!ans) {
		return 1;
	}
	printf("member %s (%s): %s\n", text(ans, "role"), text(ans, "path"),
	       text(ans, "state"));
	json_object_put(ans);
	return 0;
}

/* add PATH [--force]: the server's answer says spare or rebuilding. */
static int
control_add(const char *path, int argc, char **argv)
{
	struct json_object *req, *ans;
	const char *member = NULL;
	bool force = false;
	char *spec;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0) {
			force = true;
		} else if (!member && argv[i][0] != '-') {
			member = argv[i];
		} else {
			member = NULL;
			break;
		}
	}
	if (!member) {
		return cli_fail("usage: nbdraid --control PATH add PATH "
				"[--force]");
	}
	spec = member[0] == '/' ? strdup(member) : member_spec(member);
	req = json_object_new_object();
	if (!spec || !req) {
		free(spec);
		json_object_put(req);
		return cli_fail("out of memory");
	}
	json_object_object_add(req, "command", json_object_new_string("add"));
	json_object_object_add(req, "member", json_object_new_string(spec));
	json_object_object_add(req, "force", json_object_new_boolean(force));
	free(spec);
	ans = request(path, req);
	json_object_put(req);
	if (!ans) {
		return 1;
	}
	if (get(ans, "role")) {
		printf("member %s (%s): %s\n", text(ans, "role"),
		       text(ans, "path"), text(ans, "state"));
	} else {
		printf("%s: spare\n", text(ans, "path"));
	}
	json_object_put(ans);
	return 0;
}

/* A whole number > 0, or 0. */
static uint64_t
kib(const char *s)
{
	char *end;
	unsigned long long n;

	if (!*s || *s == '-') {
		return 0;
	}
	n = strtoull(s, &end, 10);
	return *end ? 0 : n;
}

/* speed MIN MAX (KiB/s) and scrub ACTION: one request each. */
static int
control_sync(const char *path, int argc, char **argv)
{
	bool speed = strcmp(argv[0], "speed") == 0;
	struct json_object *req = json_object_new_object(), *ans, *p;

	if (speed && (argc != 3 || !kib(argv[1]) || !kib(argv[2]))) {
		json_object_put(req);
		return cli_fail("usage: nbdraid --control PATH speed MIN MAX "
				"(KiB/s per member)");
	}
	if (!speed && (argc != 2 ||
		       (strcmp(argv[1], "check") && strcmp(argv[1], "repair") &&
			strcmp(argv[1], "stop")))) {
		json_object_put(req);
		return cli_fail("usage: nbdraid --control PATH scrub "
				"check|repair|stop");
	}
	json_object_object_add(req, "command", json_object_new_string(argv[0]));
	if (speed) {
		json_object_object_add(req, "min",
				       json_object_new_int64(kib(argv[1])));
		json_object_object_add(req, "max",
				       json_object_new_int64(kib(argv[2])));
	} else {
		json_object_object_add(req, "action",
				       json_object_new_string(argv[1]));
	}
	ans = request(path, req);
	json_object_put(req);
	if (!ans) {
		return 1;
	}
	if (speed) {
		printf("speed: min %sK/sec, max %sK/sec\n", text(ans, "min"),
		       text(ans, "max"));
	} else if ((p = get(ans, "progress"))) {
		printf("%s: started, %" PRIu64 " of %" PRIu64 " bytes\n",
		       text(p, "kind"), number(p, "done_bytes"),
		       number(p, "total_bytes"));
	} else if ((p = get(ans, "last_check"))) {
		printf("%s: finished, mismatch_cnt %" PRIu64 "\n",
		       text(p, "kind"), number(p, "mismatch_cnt"));
	} else {
		printf("scrub: stopped\n");
	}
	json_object_put(ans);
	return 0;
}

/* cache flush: the server answers once everything is written back. */
static int
control_cache(const char *path, int argc, char **argv)
{
	struct json_object *req, *ans;

	if (argc != 2 || strcmp(argv[1], "flush") != 0) {
		return cli_fail("usage: nbdraid --control PATH cache flush");
	}
	req = json_object_new_object();
	json_object_object_add(req, "command", json_object_new_string("cache"));
	json_object_object_add(req, "action", json_object_new_string("flush"));
	ans = request_wait(path, req, ANSWER_NO_TIMEOUT);
	json_object_put(req);
	if (!ans) {
		return 1;
	}
	printf("cache: flushed, %s bytes dirty now, %s written back since "
	       "start\n",
	       text(ans, "dirty_bytes"), text(ans, "written_back_bytes"));
	json_object_put(ans);
	return 0;
}

int
cmd_control(const char *path, int argc, char **argv)
{
	if (strcmp(argv[0], "status") == 0) {
		return control_status(path, argc, argv);
	}
	if (strcmp(argv[0], "fail") == 0 || strcmp(argv[0], "remove") == 0) {
		return control_member(path, argc, argv);
	}
	if (strcmp(argv[0], "add") == 0) {
		return control_add(path, argc, argv);
	}
	if (strcmp(argv[0], "speed") == 0 || strcmp(argv[0], "scrub") == 0) {
		return control_sync(path, argc, argv);
	}
	if (strcmp(argv[0], "cache") == 0) {
		return control_cache(path, argc, argv);
	}
	return cli_fail("not a control command (status, fail, remove, add, "
			"speed, scrub, cache)");
}
