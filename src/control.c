/*
 * control.c: control=PATH, the operator's unix socket (control.h; the
 * protocol is in docs/control.md).
 *
 * DESIGN
 * control_open() binds the socket before nbdkit forks, so that a path
 * that cannot be ours fails the server's start: a path that exists and is
 * not a socket, or a socket somebody listens on, is refused and left as it
 * is; a socket nobody listens on (a server killed before it could remove
 * it: connect says ECONNREFUSED) is replaced.  The socket is mode 0600
 * from birth: fchmod on the socket before bind (Linux gives the node that
 * mode, less the umask), never a chmod of the path, which a symlink put
 * there could send elsewhere; the node bound is then checked with lstat.
 *
 * One thread (control_start, after the fork) serves every client with
 * poll(2) over the stop eventfd, the listening socket, two eventfds that
 * say a command thread ended, and the clients, all non-blocking.  A
 * client sends one JSON object per line and gets one answer per line, in
 * order:
 *
 *   {"command":"status"}             {"ok":true,"status":{...}}
 *   {"command":"fail","member":"1"}  {"ok":true,"role":1,"path":...}
 *   {"command":"remove",...}         {"ok":false,"error":"..."}
 *   {"command":"add","member":PATH,"force":false}
 *   {"command":"speed","min":KiB/s,"max":KiB/s}
 *   {"command":"scrub","action":"check"|"repair"|"stop"}
 *   {"command":"cache","action":"flush"}
 *
 * control_parse (control_req.c) turns a line into a command or the error
 * answered (not JSON, not an object, an unknown command, a string that
 * holds a NUL or is not UTF-8, longer than CONTROL_LINE_MAX); the
 * connection goes on after an error.
 *
 * This thread never runs a command that touches the array: it could wait
 * (fail, remove and add write superblocks and take fail_lock, which the
 * core holds across a remove's wait for I/O in flight; scrub waits until
 * its pass shows; status waits for a state change under way).  Each runs
 * on a thread of its own (a job), the asking client's next lines unread
 * until its answer is queued, so answers stay in order and one client's
 * slow command stalls only that client; the thread ends by writing
 * job_fd, and this thread joins it and queues its answer (dropped if the
 * client left meanwhile).  cache flush has a thread of its own too (one
 * at a time, shared by the clients that asked while it ran, see below).
 *
 * Clients: CONTROL_CLIENTS_MAX at once.  When every place is taken, a new
 * connection still gets one: the client quiet the longest (nothing sent or
 * received, no command of its running) is told why and closed, so idle
 * clients, or clients that never finish a line, cannot lock the operator
 * out.  Answers queue per client; a client that does not read them is not
 * read from past CONTROL_OUT_MAX, so it stalls only itself.
 *
 * control_close() sets `stopping` (a scrub waiting to show gives up),
 * wakes the thread through the eventfd, joins it, joins the command
 * threads (each bounded: the core's waits are), closes the clients and
 * removes the socket, if the path is still the socket it bound (same
 * device and inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
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
#include "control_req.h"
#include "log.h"
#include "status_json.h"
#include "text.h"
#include "util.h"

#define CONTROL_OUT_MAX (1 << 20) /* answers queued before reading stops */
#define CONTROL_BACKLOG 16
#define SCRUB_SHOW_MS	5000 /* scrub answers once its pass shows */
#define POLL_FIXED	4    /* stop, listen, flush and job eventfds */

struct client {
	int fd;	     /* -1: a free slot */
	uint64_t id; /* the connection's number: a job's answer finds it */
	char in[CONTROL_LINE_MAX];
	size_t in_len;
	bool skipping; /* in a line too long: drop up to its newline */
	char *out;     /* answers not yet sent: out[out_off..out_len) */
	size_t out_len, out_off;
	uint64_t last_ns; /* last byte received or sent, or accepted */
	bool job;	  /* a command of its runs on a job thread */
	bool flush_wait;  /* waits for a cache flush's answer */
	bool flush_next;  /* ... of the next flush, not the one running */
};

/*
 * A command on a thread of its own.  The thread reads req and writes
 * answer and done; the control thread reads them once done is set, and
 * joins it.  The list and the rest are the control thread's.
 */
struct job {
	struct job *next;
	struct control_server *cs;
	uint64_t client; /* the id of the client that asked */
	struct control_req req;
	pthread_t thread;
	bool threaded; /* a thread to join (else it ran on the caller's) */
	struct json_object *answer;
	atomic_bool done;
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
	atomic_bool stopping; /* control_close began: waits give up */
	struct client clients[CONTROL_CLIENTS_MAX];
	uint64_t next_id;
	int job_fd;	  /* eventfd: a job ended */
	struct job *jobs; /* running, or ended and not yet answered */
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

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

static struct json_object *error_object(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* {"ok":false,"error":...}; outside bytes in it (a path) as \xNN. */
static struct json_object *
error_object(const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[CONTROL_WHY_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg[utf8_cut(msg, strlen(msg))] = '\0';
	if (o &&
	    (json_object_object_add(o, "ok", json_object_new_boolean(false)) <
		     0 ||
	     json_object_object_add(o, "error", status_json_text(msg)) < 0)) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

/* ---- commands (on a job's thread) -------------------------------------- */

static struct json_object *
cmd_status(struct control_server *cs)
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
	return o;
}

/*
 * remove, of the member ref names: only if its role still holds it (a
 * spare that took the role since is never removed in its place; the
 * member is out already then: 0).  *state: the member's state after.
 */
static int
remove_seen(struct raid_array *a, const struct member_ref *ref, int *state)
{
	struct raid_member *m = &a->members[ref->role];
	int r = 0;

	pthread_mutex_lock(&a->fail_lock);
	*state = RAID_MEMBER_MISSING;
	if (atomic_load(&m->gen) == ref->gen) {
		r = remove_locked(a, ref->role);
		*state = atomic_load(&m->state);
	}
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}

/* Why the core refused, in words (the errno alone says little). */
static const char *
refusal(bool fail, int err, int state)
{
	switch (err) {
	case EBUSY:
		if (fail) {
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

/* The member a fail or remove acted on: role, path, device UUID, state. */
static struct json_object *
member_answer(const struct member_ref *ref, int state)
{
	struct json_object *o = ok_object();
	char uuid[UUID_STR_BYTES];

	if (!o) {
		return NULL;
	}
	if (ref->has_uuid) {
		uuid_format(ref->uuid, uuid);
	}
	json_object_object_add(o, "role", json_object_new_int((int)ref->role));
	json_object_object_add(o, "path",
			       ref->path ? status_json_text(ref->path) : NULL);
	json_object_object_add(o, "device_uuid",
			       ref->has_uuid ? json_object_new_string(uuid)
					     : NULL);
	json_object_object_add(
		o, "state",
		json_object_new_string(raid_member_state_name(state)));
	return o;
}

/*
 * fail and remove act on the member the request named, as it was when
 * looked up (member_find): a spare that took its role since is never
 * failed or removed in its place, and the answer names that member.
 */
static struct json_object *
cmd_member(struct control_server *cs, const struct control_req *req)
{
	bool fail = req->cmd == CONTROL_FAIL;
	struct member_ref ref;
	const char *why, *path;
	int r = member_find(cs->a, req->member, &ref);
	int state = RAID_MEMBER_FAULTY;

	if (r < 0) {
		return error_object("member '%s': no such member (a role 0..%u "
				    "or a member's path)",
				    req->member, cs->a->nr_members - 1);
	}
	path = ref.path ? ref.path : "none";
	raid_debug("control: %s member %u (%s)", fail ? "fail" : "remove",
		   ref.role, path);
	if (ref.state == RAID_MEMBER_MISSING) {
		r = -ENOENT;
	} else if (fail) {
		r = array_fail_seen(cs->a, ref.role, ref.gen,
				    "failed by the operator", FAIL_OPERATOR);
	} else {
		r = remove_seen(cs->a, &ref, &state);
	}
	if (r == -EBUSY && fail) {
		raid_error("member %u (%s) holds the last copy of some data: "
			   "not failed",
			   ref.role, path);
	}
	if (r < 0) {
		why = refusal(fail, -r, state);
		return error_object("member %u (%s): %s%s%s", ref.role, path,
				    strerror(-r), why ? ": " : "",
				    why ? why : "");
	}
	return member_answer(&ref, state);
}

/* add: mdadm --add, a spare (or at once into a role with no member). */
static struct json_object *
cmd_add(struct control_server *cs, const struct control_req *req)
{
	struct json_object *o;
	struct member_ref ref;
	int r;

	raid_debug("control: add %s%s", req->member,
		   req->force ? " (force)" : "");
	r = raid_add_member(cs->a, req->member, req->force);
	if (r < 0) {
		return error_object("add %s: %s (the server's log says why)",
				    req->member, strerror(-r));
	}
	r = member_find(cs->a, req->member, &ref);
	o = ok_object();
	if (o) {
		json_object_object_add(
			o, "role",
			r < 0 ? NULL : json_object_new_int((int)ref.role));
		json_object_object_add(o, "path",
				       json_object_new_string(req->member));
		json_object_object_add(
			o, "state",
			json_object_new_string(raid_member_state_name(
				r < 0 ? RAID_MEMBER_SPARE : ref.state)));
	}
	return o;
}

/* speed: md's speed_limit_min and _max, KiB/s per member. */
static struct json_object *
cmd_speed(struct control_server *cs, const struct control_req *req)
{
	struct json_object *o;
	int r = raid_sync_speed(cs->a, req->min, req->max);

	if (r < 0) {
		return error_object(
			"speed %llu %llu: %s%s", (unsigned long long)req->min,
			(unsigned long long)req->max, strerror(-r),
			r == -EINVAL ? ": min must not exceed max" : "");
	}
	o = ok_object();
	if (o) {
		json_object_object_add(o, "min",
				       json_object_new_uint64(req->min));
		json_object_object_add(o, "max",
				       json_object_new_uint64(req->max));
	}
	return o;
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

/*
 * The scrub's progress, once it shows (or the error that it did not, or
 * that the server stops).
 */
static struct json_object *
answer_scrub(struct control_server *cs, enum raid_sync_kind kind, time_t since)
{
	struct raid_status *st = malloc(sizeof(*st));
	struct json_object *o = NULL, *s = NULL, *p = NULL;
	bool shown = false;

	for (unsigned ms = 0;
	     st && ms <= SCRUB_SHOW_MS && !shown && !atomic_load(&cs->stopping);
	     ms += 20) {
		shown = scrub_shows(cs->a, st, kind, since);
		if (!shown) {
			nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		}
	}
	if (st && !shown) {
		free(st);
		return error_object(
			"%s started, but it did not show in the "
			"status within %d s%s",
			raid_sync_kind_name(kind), SCRUB_SHOW_MS / 1000,
			atomic_load(&cs->stopping) ? " (the server stops)"
						   : "");
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
	return o;
}

/* scrub: md's sync_action check, repair, or idle (stop). */
static struct json_object *
cmd_scrub(struct control_server *cs, const struct control_req *req)
{
	const char *action = req->scrub == RAID_SYNC_NONE
				     ? "stop"
				     : raid_sync_kind_name(req->scrub);
	time_t since = time(NULL);
	int r = req->scrub == RAID_SYNC_NONE
			? raid_sync_stop(cs->a)
			: raid_sync_request(cs->a, req->scrub);

	if (r < 0) {
		return error_object("scrub %s: %s%s", action, strerror(-r),
				    r == -EBUSY	     ? ": a recovery or resync "
						       "runs, and it comes first"
				    : r == -EALREADY ? ": a scrub runs already"
						     : "");
	}
	if (req->scrub == RAID_SYNC_NONE) {
		return ok_object();
	}
	return answer_scrub(cs, req->scrub, since);
}

/* A command that touches the array: its answer. */
static struct json_object *
run_command(struct control_server *cs, const struct control_req *req)
{
	switch (req->cmd) {
	case CONTROL_STATUS:
		return cmd_status(cs);
	case CONTROL_FAIL:
	case CONTROL_REMOVE:
		return cmd_member(cs, req);
	case CONTROL_ADD:
		return cmd_add(cs, req);
	case CONTROL_SPEED:
		return cmd_speed(cs, req);
	case CONTROL_SCRUB:
		return cmd_scrub(cs, req);
	default:
		return error_object("internal error: command %d", req->cmd);
	}
}

/* ---- jobs -------------------------------------------------------------- */

static void *
job_main(void *arg)
{
	struct job *j = arg;

	j->answer = run_command(j->cs, &j->req);
	atomic_store(&j->done, true);
	eventfd_write(j->cs->job_fd, 1);
	return NULL;
}

/* Run req for client c on a thread of its own (or here, without one). */
static void
job_start(struct control_server *cs, struct client *c,
	  const struct control_req *req)
{
	struct job *j = calloc(1, sizeof(*j));
	int r;

	if (!j) {
		answer(c, NULL); /* out of memory */
		return;
	}
	j->cs = cs;
	j->client = c->id;
	j->req = *req;
	j->next = cs->jobs;
	cs->jobs = j;
	c->job = true;
	r = pthread_create(&j->thread, NULL, job_main, j);
	if (r == 0) {
		j->threaded = true;
		return;
	}
	raid_debug("control: no thread for a command (%s): run here",
		   strerror(r));
	job_main(j); /* job_done answers */
}

static struct client *
client_by_id(struct control_server *cs, uint64_t id)
{
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		if (cs->clients[i].fd >= 0 && cs->clients[i].id == id) {
			return &cs->clients[i];
		}
	}
	return NULL;
}

static void client_lines(struct control_server *cs, struct client *c);
static bool client_flush(struct client *c);

/* Jobs ended (job_fd): queue their answers, go on with those clients. */
static void
job_done(struct control_server *cs)
{
	struct job **pp = &cs->jobs, *j;
	eventfd_t v;

	eventfd_read(cs->job_fd, &v);
	while ((j = *pp)) {
		struct client *c;

		if (!atomic_load(&j->done)) {
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		if (j->threaded) {
			pthread_join(j->thread, NULL);
		}
		c = client_by_id(cs, j->client);
		if (c) {
			answer(c, j->answer);
			c->job = false;
			c->last_ns = now_ns();
			client_lines(cs, c); /* the lines it sent meanwhile */
			client_flush(c);     /* a broken one shows in poll */
		} else {
			json_object_put(j->answer); /* it left */
		}
		free(j);
	}
}

/* control_close: wait for every job (each ends: the core's waits do). */
static void
jobs_join(struct control_server *cs)
{
	while (cs->jobs) {
		struct job *j = cs->jobs;

		cs->jobs = j->next;
		if (j->threaded) {
			pthread_join(j->thread, NULL);
		}
		json_object_put(j->answer);
		free(j);
	}
}

/* ---- cache flush ------------------------------------------------------- */

/* A cache flush ended with r: its answer. */
static void
answer_flush(struct control_server *cs, struct client *c, int r)
{
	struct raid_cache_status st;
	struct json_object *o;

	if (r < 0) {
		answer(c,
		       error_object("cache flush: %s%s", strerror(-r),
				    r == -ENOTSUP
					    ? ": the array has no cache "
					      "(cache=none)"
					    : " (the server's log says why)"));
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
			c->last_ns = now_ns();
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
cmd_cache(struct control_server *cs, struct client *c)
{
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

/* One request line (without its newline): exactly one answer, in order. */
static void
handle_line(struct control_server *cs, struct client *c, const char *line,
	    size_t len)
{
	static _Thread_local struct control_req req;
	char why[CONTROL_WHY_MAX];

	if (control_parse(line, len, &req, why) < 0) {
		answer(c, error_object("%s", why));
	} else if (req.cmd == CONTROL_CACHE_FLUSH) {
		cmd_cache(cs, c);
	} else {
		job_start(cs, c, &req);
	}
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
		c->last_ns = now_ns();
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return true;
}

/* Waits for a command of its own: its next lines are not read yet. */
static bool
client_busy(const struct client *c)
{
	return c->job || c->flush_wait;
}

/* Answer every complete line in the buffer; keep the partial rest. */
static void
client_lines(struct control_server *cs, struct client *c)
{
	char *start = c->in, *nl;
	size_t left = c->in_len;

	while (!client_busy(c) && (nl = memchr(start, '\n', left))) {
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
			answer(c, error_object("bad request: line longer "
					       "than %d bytes",
					       CONTROL_LINE_MAX - 1));
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
	c->last_ns = now_ns();
	client_lines(cs, c);
	return client_flush(c);
}

/*
 * A place for a new client: a free slot, else the one quiet the longest
 * that waits for nothing of its own (told why, then closed).  NULL when
 * every client waits for a command.
 */
static struct client *
client_slot(struct control_server *cs)
{
	struct client *quiet = NULL;
	struct json_object *o;

	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		struct client *c = &cs->clients[i];

		if (c->fd < 0) {
			return c;
		}
		if (!client_busy(c) &&
		    (!quiet || c->last_ns < quiet->last_ns)) {
			quiet = c;
		}
	}
	if (quiet) {
		o = error_object("closed: %d clients at most, and this one "
				 "was the quietest when another connected",
				 CONTROL_CLIENTS_MAX);
		raid_debug("control: a client closed to make room");
		answer(quiet, o);
		client_flush(quiet); /* as much as the socket takes now */
		client_close(quiet);
	}
	return quiet;
}

static void
accept_client(struct control_server *cs)
{
	struct client *c;
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
	c = client_slot(cs);
	if (!c) {
		close(fd); /* not reached: accept only with a place */
		return;
	}
	c->fd = fd;
	c->id = ++cs->next_id;
	c->last_ns = now_ns();
}

/* ---- the thread -------------------------------------------------------- */

/*
 * The poll set: [0] the stop eventfd, [1] the listening socket (only when
 * a new client can have a place), [2] the flush and [3] the job eventfds,
 * then the clients; who[] maps an entry to its client.  A client waiting
 * for a command of its own is not read from.
 */
static unsigned
poll_set(struct control_server *cs, struct pollfd *p, int *who)
{
	bool room = false;
	unsigned n = POLL_FIXED;

	p[0] = (struct pollfd){ .fd = cs->stop_fd, .events = POLLIN };
	p[2] = (struct pollfd){ .fd = cs->flush_fd, .events = POLLIN };
	p[3] = (struct pollfd){ .fd = cs->job_fd, .events = POLLIN };
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		struct client *c = &cs->clients[i];
		size_t queued = c->out_len - c->out_off;

		if (c->fd < 0 || !client_busy(c)) {
			room = true; /* free, or it can make room */
		}
		if (c->fd < 0) {
			continue;
		}
		p[n] = (struct pollfd){ .fd = c->fd };
		p[n].events =
			(queued < CONTROL_OUT_MAX && !client_busy(c) ? POLLIN
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
	struct pollfd p[POLL_FIXED + CONTROL_CLIENTS_MAX];
	int who[POLL_FIXED + CONTROL_CLIENTS_MAX];

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
		for (unsigned i = POLL_FIXED; i < n; i++) {
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
		if (p[2].revents & POLLIN) {
			flush_done(cs);
		}
		if (p[3].revents & POLLIN) {
			job_done(cs);
		}
		if (p[1].revents & POLLIN) {
			accept_client(cs);
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

/*
 * The listening socket at path, mode 0600 from the start (fchmod before
 * bind: no chmod of a path someone could swap for a symlink); its fd, or
 * -errno (logged).
 */
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
	/* What bind made, not what a symlink put there might point at. */
	what = "lstat";
	if (lstat(path, &st) < 0) {
		goto err_bound;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		raid_error("control socket %s: %s once bound: refusing it",
			   path,
			   !S_ISSOCK(st.st_mode) ? "not a socket any more"
			   : st.st_uid != geteuid()
				   ? "owned by someone else"
				   : "open to others (not mode 0600)");
		close(fd);
		return -EEXIST; /* not ours: left as it is */
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
	cs->listen_fd = cs->stop_fd = cs->flush_fd = cs->job_fd = -1;
	for (unsigned i = 0; i < CONTROL_CLIENTS_MAX; i++) {
		cs->clients[i].fd = -1;
	}
	cs->listen_fd = r = bind_socket(cs, &sun);
	if (r >= 0) {
		cs->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		cs->flush_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		cs->job_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r = cs->stop_fd < 0 || cs->flush_fd < 0 || cs->job_fd < 0
			    ? -errno
			    : 0;
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
	atomic_store(&cs->stopping, true);
	if (cs->running) {
		eventfd_write(cs->stop_fd, 1);
		pthread_join(cs->thread, NULL);
	}
	jobs_join(cs); /* their clients unanswered */
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
	if (cs->job_fd >= 0) {
		close(cs->job_fd);
	}
	free(cs->path);
	free(cs);
}
