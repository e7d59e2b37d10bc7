/*
 * status_json.c: the status object (docs/control.md), built with json-c:
 *
 *   {"state": "degraded", "level": 5, "layout": "left-symmetric",
 *    "size": 100663296, "chunk": 65536, "metadata": "md",
 *    "uuid": "0a1b2c3d:...", "name": "host:data", "events": 12,
 *    "clean": true, "reason": "member 1 (/srv/b.img) failed: ...",
 *    "members": [{"role": 0, "path": "/srv/a.img", "state": "in_sync",
 *                 "read_errors": 0, "write_errors": 0,
 *                 "corrected_reads": 0}, ...,
 *                {"role": null, "path": "/srv/s.img", "state": "spare",
 *                 ...}],
 *    "io": {"read": {"requests": 3, "bytes": 12288, "errors": 0}, ...},
 *    "progress": {"kind": "recovery", "member": 1, "done_bytes": ...,
 *                 "total_bytes": ..., "bytes_per_s": ..., "eta_s": ...},
 *    "last_check": {"kind": "check", "mismatch_cnt": 0,
 *                   "finished": 1700000000},
 *    "speed": {"min": 1000, "max": 200000},
 *    "cache": {"mode": "ram", "write_mode": "writeback", "size": ...,
 *              "used_bytes": ..., "dirty_bytes": ..., "read_hits": ...,
 *              "read_misses": ..., "writes_cached": ..., "write_hits": ...,
 *              "writes_direct": ..., "writes_bypassed": ...,
 *              "written_back_bytes": ..., "writeback_rate": ...,
 *              "writeback_inflight_bytes": ...,
 *              "writeback_errors": ..., "waits": ...,
 *              "readahead_bytes": ..., "readahead_hits": ...,
 *              "log": {"path": "/srv/log", "failed": false, "error": null,
 *                      "used_bytes": ..., "size": ..., "records": ...,
 *                      "syncs": ..., "retires": ..., "waits": ...,
 *                      "replayed": ...}}}
 *
 * In raw mode (no superblocks) uuid, name, events and clean are null; a
 * level without a layout name has layout null; a role with no member has
 * path null; spares come after the roles, role null; progress is null
 * when no pass runs, last_check null before a check or repair finished,
 * cache null without a cache, its log null without cache=log.  Strings
 * from outside (paths, the name, the reason) are UTF-8 whatever their
 * bytes: a byte that is not is written \xNN (text.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "status_json.h"
#include "text.h"
#include "util.h"

/* Add key = val; false (val freed) when val is NULL (out of memory). */
static bool
add(struct json_object *o, const char *key, struct json_object *val)
{
	if (val && json_object_object_add(o, key, val) == 0) {
		return true;
	}
	json_object_put(val);
	return false;
}

/* json-c escapes control characters itself: only bytes not UTF-8. */
struct json_object *
status_json_text(const char *s)
{
	size_t cap = 4 * strlen(s) + 1;
	char *clean = malloc(cap);
	struct json_object *o;

	if (!clean) {
		return NULL;
	}
	o = json_object_new_string(text_clean(clean, cap, s, TEXT_KEEP_CTRL));
	free(clean);
	return o;
}

/* Add key = s, or key = null when s is NULL (or "" and empty_null). */
static bool
add_string(struct json_object *o, const char *key, const char *s,
	   bool empty_null)
{
	if (!s || (empty_null && !*s)) {
		return json_object_object_add(o, key, NULL) == 0;
	}
	return add(o, key, status_json_text(s));
}

static struct json_object *
member_object(const struct raid_member_status *ms)
{
	struct json_object *o = json_object_new_object();
	bool ok = o;

	if (ms->state == RAID_MEMBER_SPARE) {
		ok = ok && json_object_object_add(o, "role", NULL) == 0;
	} else {
		ok = ok && add(o, "role", json_object_new_uint64(ms->role));
	}
	ok = ok && add_string(o, "path", ms->path, false);
	ok = ok &&
	     add(o, "state",
		 json_object_new_string(raid_member_state_name(ms->state)));
	ok = ok &&
	     add(o, "read_errors", json_object_new_uint64(ms->read_errors));
	ok = ok &&
	     add(o, "write_errors", json_object_new_uint64(ms->write_errors));
	ok = ok && add(o, "corrected_reads",
		       json_object_new_uint64(ms->corrected_reads));
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *
members_array(const struct raid_status *st)
{
	struct json_object *list = json_object_new_array();

	for (unsigned i = 0; list && i < st->nr_members + st->nr_spares; i++) {
		struct json_object *m = member_object(
			i < st->nr_members ? &st->members[i]
					   : &st->spares[i - st->nr_members]);

		if (!m || json_object_array_add(list, m) < 0) {
			json_object_put(m);
			json_object_put(list);
			return NULL;
		}
	}
	return list;
}

static struct json_object *
io_object(const struct raid_status *st)
{
	struct json_object *io = json_object_new_object();
	bool ok = io;

	for (unsigned k = 0; ok && k < RAID_REQ_KINDS; k++) {
		struct json_object *o = json_object_new_object();

		ok = o && add(io, raid_req_kind_name(k), o);
		ok = ok && add(o, "requests",
			       json_object_new_uint64(st->io[k].requests));
		ok = ok &&
		     add(o, "bytes", json_object_new_uint64(st->io[k].bytes));
		ok = ok &&
		     add(o, "errors", json_object_new_uint64(st->io[k].errors));
	}
	if (!ok) {
		json_object_put(io);
		return NULL;
	}
	return io;
}

/* What stripe gathering did, or null where the array does not gather. */
static bool
add_gather(struct json_object *o, const struct raid_status *st)
{
	const struct raid_gather_stats *g = &st->gather;
	struct json_object *v;
	bool ok;

	if (!g->enabled) {
		return json_object_object_add(o, "gather", NULL) == 0;
	}
	v = json_object_new_object();
	ok = v && add(o, "gather", v);
	ok = ok && add(v, "wait_us", json_object_new_uint64(g->wait_us));
	ok = ok && add(v, "grace_us", json_object_new_uint64(g->grace_us));
	ok = ok && add(v, "pieces", json_object_new_uint64(g->pieces));
	ok = ok && add(v, "full", json_object_new_uint64(g->full));
	ok = ok &&
	     add(v, "released_idle", json_object_new_uint64(g->released_idle));
	ok = ok && add(v, "released_timeout",
		       json_object_new_uint64(g->released_timeout));
	return ok && add(v, "released_forced",
			 json_object_new_uint64(g->released_forced));
}

/* The pass running, or null. */
static bool
add_progress(struct json_object *o, const struct raid_status *st)
{
	const struct raid_sync_progress *p = &st->progress;
	struct json_object *v;
	bool ok;

	if (p->kind == RAID_SYNC_NONE) {
		return json_object_object_add(o, "progress", NULL) == 0;
	}
	v = json_object_new_object();
	ok = v && add(o, "progress", v);
	ok = ok && add_string(v, "kind", raid_sync_kind_name(p->kind), false);
	if (p->member < 0) {
		ok = ok && json_object_object_add(v, "member", NULL) == 0;
	} else {
		ok = ok && add(v, "member", json_object_new_int(p->member));
	}
	ok = ok && add(v, "done_bytes", json_object_new_uint64(p->done_bytes));
	ok = ok &&
	     add(v, "total_bytes", json_object_new_uint64(p->total_bytes));
	ok = ok &&
	     add(v, "bytes_per_s", json_object_new_uint64(p->bytes_per_s));
	return ok && add(v, "eta_s", json_object_new_uint64(p->eta_s));
}

/* The last check or repair that finished, or null; the speed limits. */
static bool
add_check_speed(struct json_object *o, const struct raid_status *st)
{
	const struct raid_check_report *c = &st->last_check;
	struct json_object *v = NULL;
	bool ok = true;

	if (c->kind == RAID_SYNC_NONE) {
		ok = json_object_object_add(o, "last_check", NULL) == 0;
	} else {
		v = json_object_new_object();
		ok = v && add(o, "last_check", v);
		ok = ok &&
		     add_string(v, "kind", raid_sync_kind_name(c->kind), false);
		ok = ok && add(v, "mismatch_cnt",
			       json_object_new_uint64(c->mismatch_cnt));
		ok = ok &&
		     add(v, "finished", json_object_new_uint64(c->finished));
	}
	v = ok ? json_object_new_object() : NULL;
	ok = v && add(o, "speed", v);
	ok = ok && add(v, "min", json_object_new_uint64(st->speed_min));
	return ok && add(v, "max", json_object_new_uint64(st->speed_max));
}

/* cache=log's log, or null. */
static bool
add_cache_log(struct json_object *o, const struct raid_cache_status *c)
{
	struct json_object *v;
	bool ok;

	if (c->kind != RAID_CACHE_LOG || !c->log_path) {
		return json_object_object_add(o, "log", NULL) == 0;
	}
	v = json_object_new_object();
	ok = v && add(o, "log", v);
	ok = ok && add_string(v, "path", c->log_path, false);
	ok = ok && add(v, "failed", json_object_new_boolean(c->log_failed));
	ok = ok &&
	     add_string(v, "error",
			c->log_failed ? strerror(-c->log_error) : NULL, false);
	ok = ok &&
	     add(v, "used_bytes", json_object_new_uint64(c->log_used_bytes));
	ok = ok && add(v, "size", json_object_new_uint64(c->log_total_bytes));
	ok = ok && add(v, "records", json_object_new_uint64(c->log_records));
	ok = ok && add(v, "syncs", json_object_new_uint64(c->log_syncs));
	ok = ok && add(v, "retires", json_object_new_uint64(c->log_retires));
	ok = ok && add(v, "waits", json_object_new_uint64(c->log_waits));
	return ok &&
	       add(v, "replayed", json_object_new_uint64(c->log_replayed));
}

/* The cache, or null without one (docs/control.md). */
static bool
add_cache(struct json_object *o, const struct raid_status *st)
{
	const struct raid_cache_status *c = &st->cache;
	struct json_object *v;
	bool ok;

	if (c->kind == RAID_CACHE_NONE) {
		return json_object_object_add(o, "cache", NULL) == 0;
	}
	v = json_object_new_object();
	ok = v && add(o, "cache", v);
	ok = ok && add_string(v, "mode",
			      c->kind == RAID_CACHE_RAM ? "ram" : "log", false);
	ok = ok && add_string(v, "write_mode",
			      c->mode == RAID_CACHE_WRITEBACK ? "writeback"
							      : "writethrough",
			      false);
	ok = ok && add(v, "size", json_object_new_uint64(c->size_bytes));
	ok = ok && add(v, "used_bytes", json_object_new_uint64(c->used_bytes));
	ok = ok &&
	     add(v, "dirty_bytes", json_object_new_uint64(c->dirty_bytes));
	ok = ok && add(v, "read_hits", json_object_new_uint64(c->read_hits));
	ok = ok &&
	     add(v, "read_misses", json_object_new_uint64(c->read_misses));
	ok = ok &&
	     add(v, "writes_cached", json_object_new_uint64(c->writes_cached));
	ok = ok && add(v, "write_hits", json_object_new_uint64(c->write_hits));
	ok = ok &&
	     add(v, "writes_direct", json_object_new_uint64(c->writes_direct));
	ok = ok && add(v, "writes_bypassed",
		       json_object_new_uint64(c->writes_bypassed));
	ok = ok && add(v, "written_back_bytes",
		       json_object_new_uint64(c->written_back_bytes));
	ok = ok && add(v, "writeback_rate",
		       json_object_new_uint64(c->writeback_bytes_per_s));
	ok = ok && add(v, "writeback_inflight_bytes",
		       json_object_new_uint64(c->writeback_inflight_bytes));
	ok = ok && add(v, "writeback_errors",
		       json_object_new_uint64(c->writeback_errors));
	ok = ok && add(v, "waits", json_object_new_uint64(c->waits));
	ok = ok && add(v, "readahead_bytes",
		       json_object_new_uint64(c->readahead_bytes));
	ok = ok && add(v, "readahead_hits",
		       json_object_new_uint64(c->readahead_hits));
	return ok && add_cache_log(v, c);
}

/* uuid, name, events, clean: from the superblocks, else null. */
static bool
add_identity(struct json_object *o, const struct raid_status *st)
{
	char uuid[UUID_STR_BYTES];
	bool ok;

	if (!st->has_meta) {
		return add_string(o, "metadata", "none", false) &&
		       add_string(o, "uuid", NULL, false) &&
		       add_string(o, "name", NULL, false) &&
		       add_string(o, "events", NULL, false) &&
		       add_string(o, "clean", NULL, false);
	}
	uuid_format(st->uuid, uuid);
	ok = add(o, "metadata", json_object_new_string("md"));
	ok = ok && add(o, "uuid", json_object_new_string(uuid));
	ok = ok && add(o, "name", status_json_text(st->name));
	ok = ok && add(o, "events", json_object_new_uint64(st->events));
	ok = ok && add(o, "clean", json_object_new_boolean(st->clean));
	return ok;
}

struct json_object *
status_json_object(const struct raid_status *st)
{
	struct json_object *o = json_object_new_object();
	bool ok = o;

	ok = ok &&
	     add(o, "state",
		 json_object_new_string(raid_array_state_name(st->state)));
	ok = ok && add(o, "level", json_object_new_int(st->level));
	ok = ok && add_string(o, "layout", st->layout, true);
	ok = ok && add(o, "size", json_object_new_uint64(st->size));
	ok = ok && add(o, "chunk", json_object_new_uint64(st->chunk_bytes));
	ok = ok && add_identity(o, st);
	ok = ok && add(o, "reason", status_json_text(st->reason));
	ok = ok && add(o, "members", members_array(st));
	ok = ok && add(o, "io", io_object(st));
	ok = ok && add_gather(o, st);
	ok = ok && add_progress(o, st);
	ok = ok && add_check_speed(o, st);
	ok = ok && add_cache(o, st);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

char *
raid_status_json(const struct raid_status *st)
{
	struct json_object *o = status_json_object(st);
	char *s;

	if (!o) {
		return NULL;
	}
	s = strdup(json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}
