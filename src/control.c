/*
 * control.c: control=PATH, the operator's unix socket (control.h; the
 * protocol is in docs/control.md).
 *
 * DESIGN
 * control_open() binds the socket before nbdkit forks, so that a path
 * that cannot be ours fails the server's start: a path that exists and is
 * not a socket, or a socket somebody listens on, is refused and left as it
 * is; a socket nobody listens on (a server killed before it could remove
 * it: connect says ECONNREFUSED) is replaced.  The socket is mode 0600:
 * only its owner (and root) may steer the array.
 *
 * One thread (control_start, after the fork) serves every client with
 * poll(2) over the stop eventfd, the listening socket and the clients, all
 * non-blocking.  A client sends one JSON object per line and gets one
 * answer per line, in order:
 *
 *   {"command":"status"}             {"ok":true,"status":{...}}
 *   {"command":"fail","member":"1"}  {"ok":true,"role":1,"path":...}
 *   {"command":"remove",...}         {"ok":false,"error":"..."}
 *   {"command":"add","member":PATH,"force":false}
 *   {"command":"speed","min":KiB/s,"max":KiB/s}
 *   {"command":"scrub","action":"check"|"repair"|"stop"}
 *   {"command":"cache","action":"flush"}
 *
 * A bad line (not JSON, not an object, an unknown command, longer than
 * CONTROL_LINE_MAX) gets an error answer and the connection goes on.
 * Answers queue per client; a client that does not read them is not read
 * from past CONTROL_OUT_MAX, so it stalls only itself.  Requests run on
 * this thread one at a time: status is a few atomic loads, fail, remove
 * and add write superblocks, scrub waits (SCRUB_SHOW_MS at most) until
 * its pass shows in the status, so no client waits long behind another.
 * cache flush can take minutes (a large cache over slow members): it runs
 * on a thread of its own, and the clients that asked wait for its answer
 * (their next lines are not read before it, so answers stay in order)
 * while the others are served.  A client that asks while a flush runs
 * waits for another one, started when that one ends: a flush covers the
 * writes acknowledged before it was asked for.
 *
 * control_close() wakes the thread through the eventfd, joins it, closes
 * the clients and removes the socket, if the path is still the socket it
 * bound (same device and inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json.h>

#include "array.h"
#include "cache.h"
#include "control.h"
#include "log.h"
#include "status_json.h"

#define CONTROL_LINE_MAX    4096      /* a request, its newline included */
#define CONTROL_CLIENTS_MAX 16	      /* more wait in the listen backlog */
#define CONTROL_OUT_MAX	    (1 << 20) /* answers queued before reading stops */
#define CONTROL_BACKLOG	    16
#define SCRUB_SHOW_MS	    5000 /* scrub answers once its pass shows */

struct client {
	int fd; /* -1: a free slot */
	char in[CONTROL_LINE_MAX];
	size_t in_len;
	bool skipping; /* in a line too long: drop up to its newline */
	char *out;     /* answers not yet sent: out[out_off..out_len) */
	size_t out_len, out_off;
	bool flush_wait; /* waits for a cache flush's answer */
	bool flush_next; /* ... of the next flush, not the one running */
};

/* Only the thread touches the clients; the rest is fixed once open. */
struct control_server {
	struct raid_array *a;
	char *path;
	dev_t dev; /* the socket bound at path */
	ino_t ino;
	int listen_fd;
	int stop_fd; /* eventfd: control_close wakes the thread */
	pthread_t thread;
	bool running;
	struct client clients[CONTROL_CLIENTS_MAX];
	/* cache flush: flush_fd, an eventfd the flush thread writes when it
	 * ends, after flush_result (the thread's only write: the control
	 * thread reads it after pthread_join).  The rest is the control
	 * thread's. */
	int flush_fd;
	pthread_t flush_thread;
	bool flush_running; /* a flush thread, not joined yet */
	bool flush_again;   /* a client waits for the next flush */
	int flush_result;
};

/* ---- answers ----------------------------------------------------------- */

/* Queue one answer (a line) for the client; the object is put. */
static void
answer(struct client *c, struct json_object *o)
{
	const char *s = o ? json_object_to_json_string_ext(
				    o, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE)
			  : "{\"ok\":false,\"error\":\"out of memory\"}";
	size_t len = strlen(s);
	char *out = realloc(c->out, c->out_len + len + 1);

	if (out) {
		memcpy(out + c->out_len, s, len);
		out[c->out_len + len] = '\n';
		c->out = out;
		c->out_len += len + 1;
	}
	json_object_put(o);
}

static struct json_object *
ok_object(void)
{
	struct json_object *o = json_object_new_object();

	if (o && json_object_object_add(o, "ok",
					json_object_new_boolean(true)) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static void answer_error(struct client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
answer_error(struct client *c, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o && (json_object_object_add(o, "ok",
					 json_object_new_boolean(false)) < 0 ||
		  json_object_object_add(o, "error",
					 json_object_new_string(msg)) < 0)) {
		json_object_put(o);
		o = NULL;
	}
	answer(c, o);
}

/* ---- commands ---------------------------------------------------------- */

static void
cmd_status(struct control_server *cs, struct client *c)
{
	struct raid_status *st = malloc(sizeof(*st));
	struct json_object *o = ok_object(), *s = NULL;

	if (st && o && raid_status(cs->a, st) == 0) {
		s = status_json_object(st);
	}
	free(st);
	if (!s || json_object_object_add(o, "status", s) < 0) {
		json_object_put(s);
		json_object_put(o);
		o = NULL;
	}
	answer(c, o);
}

/* Why the core refused, in words (the errno alone says little). */
static const char *
refusal(const char *cmd, int err, const struct raid_member *m)
{
	int state = atomic_load(&m->state);

	switch (err) {
	case EBUSY:
		if (strcmp(cmd, "fail") == 0) {
			return "it holds the last copy of some data";
		}
		return state == RAID_MEMBER_IN_SYNC ||
				       state == RAID_MEMBER_REBUILDING
			       ? "it is still in the array: fail it first"
			       : "its I/O is still in flight";
	case ENOENT:
		return "no member holds that role";
	default:
		return NULL;
	}
}

/* "member": "2" or a path (a number is taken as a role too). */
static int
request_member(struct control_server *cs, struct client *c, const char *cmd,
	       struct json_object *req)
{
	struct json_object *m;
	const char *spec;
	int role;

	if (!json_object_object_get_ex(req, "member", &m) ||
	    !(json_object_is_type(m, json_type_string) ||
	      json_object_is_type(m, json_type_int))) {
		answer_error(c,
			     "which member? {\"command\":\"%s\","
			     "\"member\":ROLE or PATH}",
			     cmd);
		return -EINVAL;
	}
	spec = json_object_get_string(m);
	role = raid_member_lookup(cs->a, spec);
	if (role < 0) {
		answer_error(c,
			     "member '%s': no such member (a role 0..%u or a "
			     "member's path)",
			     spec, cs->a->nr_members - 1);
	}
	return role;
}

/* fail and remove: the core's call, then the member as it is now. */
static void
cmd_member(struct control_server *cs, struct client *c, const char *cmd,
	   struct json_object *req)
{
	int role = request_member(cs, c, cmd, req);
	const struct raid_member *m;
	struct json_object *o;
	const char *why;
	int r;

	if (role < 0) {
		return;
	}
	m = &cs->a->members[role];
	raid_debug("control: %s member %d (%s)", cmd, role,
		   m->path ? m->path : "none");
	if (strcmp(cmd, "fail") == 0) {
		r = raid_fail_member(cs->a, role, "failed by the operator");
	} else {
		r = raid_remove_member(cs->a, role);
	}
	if (r < 0) {
		why = refusal(cmd, -r, m);
		answer_error(c, "member %d (%s): %s%s%s", role,
			     m->path ? m->path : "none", strerror(-r),
			     why ? ": " : "", why ? why : "");
		return;
	}
	o = ok_object();
	if (o) {
		json_object_object_add(o, "role", json_object_new_int(role));
		json_object_object_add(o, "path",
				       m->path ? json_object_new_string(m->path)
					       : NULL);
		json_object_object_add(
			o, "state",
			json_object_new_string(raid_member_state_name(
				atomic_load(&m->state))));
	}
	answer(c, o);
}

/* The member an add took in: its role and state, or a spare. */
static void
answer_added(struct control_server *cs, struct client *c, const char *path)
{
	int role = raid_member_lookup(cs->a, path);
	struct json_object *o = ok_object();
	int state = role < 0 ? RAID_MEMBER_SPARE
			     : atomic_load(&cs->a->members[role].state);

	if (o) {
		json_object_object_add(
			o, "role", role < 0 ? NULL : json_object_new_int(role));
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(
			o, "state",
			json_object_new_string(raid_member_state_name(state)));
	}
	answer(c, o);
}

/* add: mdadm --add, a spare (or at once into a role with no member). */
static void
cmd_add(struct control_server *cs, struct client *c, struct json_object *req)
{
	struct json_object *m, *f;
	bool force = false;
	const char *path;
	int r;

	if (!json_object_object_get_ex(req, "member", &m) ||
	    !json_object_is_type(m, json_type_string) ||
	    json_object_get_string(m)[0] != '/') {
		answer_error(c, "which member? {\"command\":\"add\","
				"\"member\":ABSOLUTE-PATH}");
		return;
	}
	if (json_object_object_get_ex(req, "force", &f)) {
		force = json_object_get_boolean(f);
	}
	path = json_object_get_string(m);
	raid_debug("control: add %s%s", path, force ? " (force)" : "");
	r = raid_add_member(cs->a, path, force);
	if (r < 0) {
		answer_error(c, "add %s: %s (the server's log says why)", path,
			     strerror(-r));
		return;
	}
	answer_added(cs, c, path);
}

/* A number field of the request, > 0; false when it is not one. */
static bool
request_kib(struct json_object *req, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(req, key, &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) <= 0) {
		return false;
	}
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

/* speed: md's speed_limit_min and _max, KiB/s per member. */
static void
cmd_speed(struct control_server *cs, struct client *c, struct json_object *req)
{
	struct json_object *o;
	uint64_t min, max;
	int r;

	if (!request_kib(req, "min", &min) || !request_kib(req, "max", &max)) {
		answer_error(c, "speed: want {\"command\":\"speed\","
				"\"min\":KiB/s,\"max\":KiB/s}, both > 0");
		return;
	}
	r = raid_sync_speed(cs->a, min, max);
	if (r < 0) {
		answer_error(c, "speed %llu %llu: %s%s",
			     (unsigned long long)min, (unsigned long long)max,
			     strerror(-r),
			     r == -EINVAL ? ": min must not exceed max" : "");
		return;
	}
	o = ok_object();
	if (o) {
		json_object_object_add(o, "min", json_object_new_uint64(min));
		json_object_object_add(o, "max", json_object_new_uint64(max));
	}
	answer(c, o);
}

/* Has a scrub of kind shown: running, or finished since `since`? */
static bool
scrub_shows(struct raid_array *a, struct raid_status *st,
	    enum raid_sync_kind kind, time_t since)
{
	raid_status(a, st);
	return st->progress.kind == kind ||
	       (st->last_check.kind == kind &&
		st->last_check.finished >= (uint64_t)since);
}

/* The scrub's progress, once it shows (or the error that it did not). */
static void
answer_scrub(struct control_server *cs, struct client *c,
	     enum raid_sync_kind kind, time_t since)
{
	struct raid_status *st = malloc(sizeof(*st));
	struct json_object *o = NULL, *s = NULL, *p = NULL;
	bool shown = false;

	for (unsigned ms = 0; st && ms <= SCRUB_SHOW_MS && !shown; ms += 20) {
		shown = scrub_shows(cs->a, st, kind, since);
		if (!shown) {
			nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		}
	}
	if (st && !shown) {
		answer_error(c,
			     "%s started, but it did not show in the status "
			     "within %d s",
			     raid_sync_kind_name(kind), SCRUB_SHOW_MS / 1000);
		free(st);
		return;
	}
	s = st ? status_json_object(st) : NULL;
	o = s ? ok_object() : NULL;
	if (o && json_object_object_get_ex(s, "progress", &p)) {
		json_object_object_add(o, "progress", json_object_get(p));
	}
	if (o && json_object_object_get_ex(s, "last_check", &p)) {
		json_object_object_add(o, "last_check", json_object_get(p));
	}
	json_object_put(s);
	free(st);
	answer(c, o);
}

/* scrub: md's sync_action check, repair, or idle (stop). */
static void
cmd_scrub(struct control_server *cs, struct client *c, struct json_object *req)
{
	struct json_object *v;
	enum raid_sync_kind kind = RAID_SYNC_NONE;
	const char *action = "";
	time_t since = time(NULL);
	int r;

	if (json_object_object_get_ex(req, "action", &v) &&
	    json_object_is_type(v, json_type_string)) {
		action = json_object_get_string(v);
	}
	if (strcmp(action, "check") == 0) {
		kind = RAID_SYNC_CHECK;
	} else if (strcmp(action, "repair") == 0) {
		kind = RAID_SYNC_REPAIR;
	} else if (strcmp(action, "stop") != 0) {
		answer_error(c, "scrub: want {\"command\":\"scrub\","
				"\"action\":\"check\"|\"repair\"|\"stop\"}");
		return;
	}
	r = kind == RAID_SYNC_NONE ? raid_sync_stop(cs->a)
				   : raid_sync_request(cs->a, kind);
	if (r < 0) {
		answer_error(c, "scrub %s: %s%s", action, strerror(-r),
			     r == -EBUSY ? ": a recovery or resync runs, and "
					   "it comes first"
			     : r == -EALREADY ? ": a scrub runs already"
					      : "");
		return;
	}
	if (kind == RAID_SYNC_NONE) {
		answer(c, ok_object());
		return;
	}
	answer_scrub(cs, c, kind, since);
}

/* A cache flush ended with r: its answer. */
static void
answer_flush(struct control_server *cs, struct client *c, int r)
{
	struct raid_cache_status st;
	struct json_object *o;

	if (r < 0) {
		answer_error(c, "cache flush: %s%s", strerror(-r),
			     r == -ENOTSUP ? ": the array has no cache "
					     "(cache=none)"
					   : " (the server's log says why)");
		return;
	}
	cache_status(cs->a->cache, &st);
	o = ok_object();
	if (o) {
		json_object_object_add(o, "dirty_bytes",
				       json_object_new_uint64(st.dirty_bytes));
		json_object_object_add(
			o, "written_back_bytes",
			json_object_new_uint64(st.written_back_bytes));
	}
	answer(c, o);
}

static void *
flush_main(void *arg)
{
	struct control_server *cs = arg;

	cs->flush_result = raid_cache_flush(cs->a);
	eventfd_write(cs->flush_fd, 1);
	return NULL;
}

/* Start a flush for the clients waiting; without a thread, flush here. */
static void
flush_start(struct control_server *cs)
{
	int r;

	raid_debug("control: cache flush");
	r = pthread_create(&cs->flush_thread, NULL, flush_main, cs);
	if (r == 0) {
		cs->flush_running = true;
		return;
	}
	raid_debug("control: cache flush: no thread (%s): flushing inline",
		   strerror(r));
	cs->flush_result = raid_cache_flush(cs->a);
	eventfd_write(cs->flush_fd, 1); /* flush_done answers */
}

static void client_lines(struct control_server *cs, struct client *c);
static bool client_flush(struct client *c);

/*
 * The flush ended (flush_fd): answer its clients and go on with the lines
 * they sent after; start the next flush for those who asked meanwhile.
 */
static void
flush_done(struct control_server *cs)
{
	eventfd_t v;
	bool answered[CONTROL_CLIENTS_MAX] = { false }, again;

	if (eventfd_read(cs->flush_fd, &v) < 0) {
		return; /* spurious */
	}
	if (cs->flush_running) {
		pthread_join(cs->flush_thread, NULL);
		cs->flush_running = false;
	}
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		struct client *c = &cs->clients[i];

		if (c->fd >= 0 && c->flush_wait && !c->flush_next) {
			answer_flush(cs, c, cs->flush_result);
			c->flush_wait = false;
			answered[i] = true;
		}
		c->flush_next = false; /* the next flush is theirs */
	}
	again = cs->flush_again;
	cs->flush_again = false;
	if (again) {
		flush_start(cs);
	}
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		struct client *c = &cs->clients[i];

		if (answered[i]) {
			client_lines(cs, c); /* may ask for a flush again */
			client_flush(c);     /* a broken one shows in poll */
		}
	}
}

/* cache flush: write back everything dirty and flush the members. */
static void
cmd_cache(struct control_server *cs, struct client *c, struct json_object *req)
{
	struct json_object *v;
	const char *action = "";

	if (json_object_object_get_ex(req, "action", &v) &&
	    json_object_is_type(v, json_type_string)) {
		action = json_object_get_string(v);
	}
	if (strcmp(action, "flush") != 0) {
		answer_error(c, "cache: want {\"command\":\"cache\","
				"\"action\":\"flush\"}");
		return;
	}
	if (!cs->a->cache) {
		answer_flush(cs, c, -ENOTSUP);
		return;
	}
	c->flush_wait = true;
	if (cs->flush_running) {
		c->flush_next = true;
		cs->flush_again = true;
		return;
	}
	flush_start(cs);
}

/*
 * Parse a request line: one JSON value, blanks around it allowed.  NULL
 * with *why set when it is not.
 */
static struct json_object *
parse_line(const char *line, size_t len, const char **why)
{
	struct json_tokener *tok;
	struct json_object *req;
	size_t end;

	while (len && strchr(" \t\r", line[len - 1])) {
		len--;
	}
	if (!len) {
		*why = "empty line";
		return NULL;
	}
	if (memchr(line, '\0', len)) {
		*why = "a NUL byte in the line";
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		*why = "out of memory";
		return NULL;
	}
	req = json_tokener_parse_ex(tok, line, (int)len);
	end = req ? json_tokener_get_parse_end(tok) : 0;
	end += req ? strspn(line + end, " \t") : 0;
	if (!req) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		*why = e == json_tokener_continue ? "unexpected end of line"
						  : json_tokener_error_desc(e);
	} else if (end < len) {
		*why = "more than one JSON value";
		json_object_put(req);
		req = NULL;
	}
	json_tokener_free(tok);
	return req;
}

/* One request line (without its newline): exactly one answer. */
static void
handle_line(struct control_server *cs, struct client *c, const char *line,
	    size_t len)
{
	struct json_object *req, *cmd;
	const char *why = NULL, *name;

	req = parse_line(line, len, &why);
	if (!req) {
		answer_error(c, "bad request: %s", why);
		return;
	}
	if (!json_object_is_type(req, json_type_object) ||
	    !json_object_object_get_ex(req, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_string)) {
		answer_error(c, "bad request: want {\"command\":\"status\"|"
				"\"fail\"|\"remove\"|\"add\"|\"speed\"|"
				"\"scrub\"|\"cache\", ...}");
		json_object_put(req);
		return;
	}
	name = json_object_get_string(cmd);
	if (strcmp(name, "status") == 0) {
		cmd_status(cs, c);
	} else if (strcmp(name, "fail") == 0 || strcmp(name, "remove") == 0) {
		cmd_member(cs, c, name, req);
	} else if (strcmp(name, "add") == 0) {
		cmd_add(cs, c, req);
	} else if (strcmp(name, "speed") == 0) {
		cmd_speed(cs, c, req);
	} else if (strcmp(name, "scrub") == 0) {
		cmd_scrub(cs, c, req);
	} else if (strcmp(name, "cache") == 0) {
		cmd_cache(cs, c, req);
	} else {
		answer_error(c,
			     "unknown command '%s' (status, fail, remove, add, "
			     "speed, scrub, cache)",
			     name);
	}
	json_object_put(req);
}

/* ---- clients ----------------------------------------------------------- */

static void
client_close(struct client *c)
{
	if (c->fd >= 0) {
		close(c->fd);
	}
	free(c->out);
	*c = (struct client){ .fd = -1 };
}

/* Send what is queued; false when the client is gone. */
static bool
client_flush(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return true;
		}
		if (n < 0) {
			return false;
		}
		c->out_off += n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return true;
}

/* Answer every complete line in the buffer; keep the partial rest. */
static void
client_lines(struct control_server *cs, struct client *c)
{
	char *start = c->in, *nl;
	size_t left = c->in_len;

	/* A client waiting for a flush's answer: its next lines after it. */
	while (!c->flush_wait && (nl = memchr(start, '\n', left))) {
		if (!c->skipping) {
			handle_line(cs, c, start, nl - start);
		}
		c->skipping = false;
		left -= nl + 1 - start;
		start = nl + 1;
	}
	if (left == sizeof(c->in)) {
		/* A full buffer and no newline: too long to be a request. */
		if (!c->skipping) {
			answer_error(c,
				     "bad request: line longer than %d bytes",
				     CONTROL_LINE_MAX - 1);
		}
		c->skipping = true;
		left = 0;
	}
	memmove(c->in, start, left);
	c->in_len = left;
}

/* Read what the client sent and answer it; false when it is gone. */
static bool
client_read(struct control_server *cs, struct client *c)
{
	ssize_t n =
		recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);

	if (n < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		return true;
	}
	if (n <= 0) {
		return false; /* closed (a partial line is dropped) or broken */
	}
	c->in_len += n;
	client_lines(cs, c);
	return client_flush(c);
}

static void
accept_client(struct control_server *cs)
{
	int fd = accept4(cs->listen_fd, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNABORTED) {
			raid_error("control socket %s: accept: %s", cs->path,
				   strerror(errno));
		}
		return;
	}
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		if (cs->clients[i].fd < 0) {
			cs->clients[i].fd = fd;
			return;
		}
	}
	close(fd); /* not reached: accept only with a free slot */
}

/* ---- the thread -------------------------------------------------------- */

/*
 * The poll set: [0] the stop eventfd, [1] the listening socket (only with
 * a free slot), [2] the flush eventfd, then the clients; who[] maps an
 * entry to its client.  A client waiting for a flush is not read from.
 */
static unsigned
poll_set(struct control_server *cs, struct pollfd *p, int *who)
{
	bool room = false;
	unsigned n = 3;

	p[0] = (struct pollfd){ .fd = cs->stop_fd, .events = POLLIN };
	p[2] = (struct pollfd){ .fd = cs->flush_fd, .events = POLLIN };
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		struct client *c = &cs->clients[i];
		size_t queued = c->out_len - c->out_off;

		if (c->fd < 0) {
			room = true;
			continue;
		}
		p[n] = (struct pollfd){ .fd = c->fd };
		p[n].events =
			(queued < CONTROL_OUT_MAX && !c->flush_wait ? POLLIN
								    : 0) |
			(queued ? POLLOUT : 0);
		who[n++] = i;
	}
	p[1] = (struct pollfd){ .fd = room ? cs->listen_fd : -1,
				.events = POLLIN };
	return n;
}

static void *
control_main(void *arg)
{
	struct control_server *cs = arg;
	struct pollfd p[3 + CONTROL_CLIENTS_MAX];
	int who[3 + CONTROL_CLIENTS_MAX];

	for (;;) {
		unsigned n = poll_set(cs, p, who);

		if (poll(p, n, -1) < 0) {
			if (errno == EINTR) {
				continue;
			}
			raid_error("control socket %s: poll: %s", cs->path,
				   strerror(errno));
			break;
		}
		if (p[0].revents) {
			break; /* control_close */
		}
		for (unsigned i = 3; i < n; i++) {
			struct client *c = &cs->clients[who[i]];
			bool alive = true;

			if (p[i].revents & POLLOUT) {
				alive = client_flush(c);
			}
			if (alive && (p[i].revents & (POLLIN | POLLHUP |
						      POLLERR | POLLNVAL))) {
				alive = client_read(cs, c);
			}
			if (!alive) {
				client_close(c);
			}
		}
		if (p[1].revents & POLLIN) {
			accept_client(cs);
		}
		if (p[2].revents & POLLIN) {
			flush_done(cs);
		}
	}
	return NULL;
}

/* ---- open, start, close ------------------------------------------------ */

/*
 * Is path free for our socket?  0 when nothing is there or a stale socket
 * was removed; -EEXIST (logged) when it holds anything else.
 */
static int
clear_path(const char *path, const struct sockaddr_un *sun)
{
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT) {
			return 0;
		}
		r = -errno;
		raid_error("control socket %s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISSOCK(st.st_mode)) {
		raid_error("control socket %s: exists and is not a socket: "
			   "refusing to replace it",
			   path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		raid_error("control socket %s: socket: %s", path, strerror(-r));
		return r;
	}
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) < 0 ? -errno
									: 0;
	close(fd);
	if (r == -ECONNREFUSED) {
		raid_debug(
			"control socket %s: stale (nobody listens): replaced",
			path);
		if (unlink(path) < 0 && errno != ENOENT) {
			r = -errno;
			raid_error("control socket %s: unlink: %s", path,
				   strerror(-r));
			return r;
		}
		return 0;
	}
	if (r == 0 || r == -EAGAIN || r == -EINPROGRESS) {
		raid_error(
			"control socket %s: in use: a server is listening on "
			"it",
			path);
		return -EEXIST;
	}
	raid_error("control socket %s: exists, and connecting to it says: %s",
		   path, strerror(-r));
	return -EEXIST;
}

/* The listening socket at path, mode 0600; its fd, or -errno (logged). */
static int
bind_socket(struct control_server *cs, const struct sockaddr_un *sun)
{
	const char *path = cs->path;
	const char *what = "socket";
	struct stat st;
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		goto err;
	}
	what = "fchmod";
	if (fchmod(fd, 0600) < 0) {
		goto err;
	}
	what = "bind";
	if (bind(fd, (const struct sockaddr *)sun, sizeof(*sun)) < 0) {
		goto err;
	}
	what = "chmod";
	if (chmod(path, 0600) < 0 || stat(path, &st) < 0) {
		goto err_bound;
	}
	cs->dev = st.st_dev;
	cs->ino = st.st_ino;
	what = "listen";
	if (listen(fd, CONTROL_BACKLOG) < 0) {
		goto err_bound;
	}
	return fd;

err_bound:
	r = -errno;
	unlink(path);
	errno = -r;
err:
	r = -errno;
	raid_error("control socket %s: %s: %s", path, what, strerror(-r));
	if (fd >= 0) {
		close(fd);
	}
	return r;
}

int
control_open(struct raid_array *a, const char *path,
	     struct control_server **out)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct control_server *cs;
	int r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		raid_error("control socket %s: path longer than %zu bytes",
			   path, sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	r = clear_path(path, &sun);
	if (r < 0) {
		return r;
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs || !(cs->path = strdup(path))) {
		free(cs);
		return -ENOMEM;
	}
	cs->a = a;
	cs->listen_fd = cs->stop_fd = cs->flush_fd = -1;
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		cs->clients[i].fd = -1;
	}
	cs->listen_fd = r = bind_socket(cs, &sun);
	if (r >= 0) {
		cs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		cs->flush_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r = cs->stop_fd < 0 || cs->flush_fd < 0 ? -errno : 0;
		if (r < 0) {
			raid_error("control socket %s: eventfd: %s", path,
				   strerror(-r));
		}
	}
	if (r < 0) {
		control_close(cs);
		return r;
	}
	*out = cs;
	return 0;
}

int
control_start(struct control_server *cs)
{
	int r;

	if (cs->running) {
		return 0;
	}
	r = -pthread_create(&cs->thread, NULL, control_main, cs);
	if (r < 0) {
		raid_error("control socket %s: starting its thread: %s",
			   cs->path, strerror(-r));
		return r;
	}
	cs->running = true;
	return 0;
}

void
control_close(struct control_server *cs)
{
	struct stat st;

	if (!cs) {
		return;
	}
	if (cs->running) {
		eventfd_write(cs->stop_fd, 1);
		pthread_join(cs->thread, NULL);
	}
	if (cs->flush_running) {
		pthread_join(cs->flush_thread,
			     NULL); /* its clients unanswered */
	}
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		client_close(&cs->clients[i]);
	}
	if (cs->listen_fd >= 0) {
		close(cs->listen_fd);
		/* Remove it only if the path is still the socket we bound. */
		if (stat(cs->path, &st) == 0 && st.st_dev == cs->dev &&
		    st.st_ino == cs->ino) {
			unlink(cs->path);
		}
	}
	if (cs->stop_fd >= 0) {
		close(cs->stop_fd);
	}
	if (cs->flush_fd >= 0) {
		close(cs->flush_fd);
	}
	free(cs->path);
	free(cs);
}
