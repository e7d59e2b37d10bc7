/*
 * status_json.c: the status object (docs/control.md), built with json-c:
 *
 *   {"state": "degraded", "level": 5, "layout": "left-symmetric",
 *    "size": 100663296, "chunk": 65536, "metadata": "md",
 *    "uuid": "0a1b2c3d:...", "name": "host:data", "events": 12,
 *    "clean": true, "reason": "member 1 (/srv/b.img) failed: ...",
 *    "members": [{"role": 0, "path": "/srv/a.img", "state": "in_sync",
 *                 "read_errors": 0, "write_errors": 0,
 *                 "corrected_reads": 0}, ...],
 *    "io": {"read": {"requests": 3, "bytes": 12288, "errors": 0}, ...}}
 *
 * In raw mode (no superblocks) uuid, name, events and clean are null; a
 * level without a layout name has layout null; a role with no member has
 * path null.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "status_json.h"
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

/* Add key = s, or key = null when s is NULL (or "" and empty_null). */
static bool
add_string(struct json_object *o, const char *key, const char *s,
	   bool empty_null)
{
	if (!s || (empty_null && !*s)) {
		return json_object_object_add(o, key, NULL) == 0;
	}
	return add(o, key, json_object_new_string(s));
}

static struct json_object *
member_object(const struct raid_member_status *ms)
{
	struct json_object *o = json_object_new_object();
	bool ok = o;

	ok = ok && add(o, "role", json_object_new_uint64(ms->role));
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

	for (unsigned i = 0; list && i < st->nr_members; i++) {
		struct json_object *m = member_object(&st->members[i]);

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
	ok = ok && add(o, "name", json_object_new_string(st->name));
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
	ok = ok && add(o, "reason", json_object_new_string(st->reason));
	ok = ok && add(o, "members", members_array(st));
	ok = ok && add(o, "io", io_object(st));
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
