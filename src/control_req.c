/*
 * control_req.c: a control request line into a command (control_req.h).
 *
 * DESIGN
 * A line is one JSON object (json-c's tokener, blanks around it allowed),
 * then checked whole before any field is looked at: every key and string
 * at any depth must be valid UTF-8 (text.h: strict, RFC 3629) and hold no
 * NUL.  json-c keeps a string's "\u0000" (its length says so) but cuts a
 * key at one, and drops the first value of a key given twice (and
 * comments) unseen, so the line itself is checked last: an escape \u0000,
 * or bytes that are not UTF-8, that no value read accounts for refuse it.  Only
 * then are the command and its fields read, each of the type it must have; an
 * error names the field and quotes nothing that was not checked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json.h>

#include "control_req.h"
#include "text.h"

#define QUOTE_MAX 64 /* bytes of a key or name quoted in an error */

static void fail_why(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* why = "bad request: " fmt ..., cut at a character. */
static void
fail_why(char *why, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(why, CONTROL_WHY_MAX, fmt, ap);
	va_end(ap);
	n = strlen(why);
	why[utf8_cut(why, n)] = '\0';
}

/* A checked key or name to quote, cut at a character past QUOTE_MAX. */
static const char *
clip(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s) < QUOTE_MAX ? strlen(s) : QUOTE_MAX;

	n = utf8_cut(s, n);
	snprintf(buf, len, "%.*s%s", (int)n, s, n < strlen(s) ? "..." : "");
	return buf;
}

/* Escapes \u0000 in the line (a backslash that is itself escaped is not). */
static unsigned
nul_escapes(const char *line, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i + 1 < len; i++) {
		if (line[i] != '\\') {
			continue;
		}
		if (line[i + 1] == 'u' && i + 5 < len &&
		    strncmp(line + i + 2, "0000", 4) == 0) {
			n++;
		}
		i++; /* the escaped character is not an escape */
	}
	return n;
}

struct check {
	char *why;
};

static bool check_value(struct check *ck, struct json_object *v,
			const char *field);

/* Every key and value of o; field names the top-level key for errors. */
static bool
check_object(struct check *ck, struct json_object *o, const char *field)
{
	char q[QUOTE_MAX + 8];

	json_object_object_foreach(o, key, v)
	{
		const char *name = field;

		if (!utf8_valid(key, strlen(key))) {
			fail_why(ck->why,
				 "bad request: a key is not valid UTF-8");
			return false;
		}
		if (!name) {
			snprintf(q, sizeof(q), "\"%s\"",
				 clip(key, (char[QUOTE_MAX + 4]){ 0 },
				      QUOTE_MAX + 4));
			name = q;
		}
		if (!check_value(ck, v, name)) {
			return false;
		}
	}
	return true;
}

/* v, a value of the request: its strings UTF-8 without NUL. */
static bool
check_value(struct check *ck, struct json_object *v, const char *field)
{
	const char *s;
	size_t len;

	switch (json_object_get_type(v)) {
	case json_type_string:
		s = json_object_get_string(v);
		len = (size_t)json_object_get_string_len(v);
		if (memchr(s, '\0', len)) {
			fail_why(ck->why,
				 "bad request: %s: a NUL character (\\u0000) "
				 "in a string",
				 field ? field : "a value");
			return false;
		}
		if (!utf8_valid(s, len)) {
			fail_why(ck->why, "bad request: %s: not valid UTF-8",
				 field ? field : "a value");
			return false;
		}
		return true;
	case json_type_object:
		return check_object(ck, v, field);
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			if (!check_value(ck, json_object_array_get_idx(v, i),
					 field)) {
				return false;
			}
		}
		return true;
	default:
		return true;
	}
}

/* One JSON value, blanks around it allowed; NULL with why set if not. */
static struct json_object *
parse_json(const char *line, size_t len, char *why)
{
	struct json_tokener *tok;
	struct json_object *req;
	size_t end;

	while (len && strchr(" \t\r", line[len - 1])) {
		len--;
	}
	if (!len) {
		fail_why(why, "bad request: empty line");
		return NULL;
	}
	if (memchr(line, '\0', len)) {
		fail_why(why, "bad request: a NUL byte in the line");
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		fail_why(why, "bad request: out of memory");
		return NULL;
	}
	req = json_tokener_parse_ex(tok, line, (int)len);
	end = req ? json_tokener_get_parse_end(tok) : 0;
	while (end < len && (line[end] == ' ' || line[end] == '\t')) {
		end++; /* bounded: the line has no NUL after it */
	}
	if (!req) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		fail_why(why, "bad request: %s",
			 e == json_tokener_continue
				 ? "unexpected end of line"
				 : json_tokener_error_desc(e));
	} else if (end < len) {
		fail_why(why, "bad request: more than one JSON value");
		json_object_put(req);
		req = NULL;
	}
	json_tokener_free(tok);
	return req;
}

/* Every string and key UTF-8 without NUL?  Else why says which not. */
static bool
checked(struct json_object *req, const char *line, size_t len, char *why)
{
	struct check ck = { .why = why };

	if (!check_value(&ck, req, NULL)) {
		return false;
	}
	/*
	 * What the values read do not account for: a key's NUL (json-c
	 * cuts the key there), and whatever json-c read and dropped (the
	 * value of a key given twice, a comment).
	 */
	if (nul_escapes(line, len)) {
		fail_why(why, "bad request: a NUL character (\\u0000) in a "
			      "key, or in a value given twice");
		return false;
	}
	if (!utf8_valid(line, len)) {
		fail_why(why, "bad request: not valid UTF-8 (in a comment, or "
			      "a value given twice)");
		return false;
	}
	return true;
}

static struct json_object *
field(struct json_object *req, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(req, key, &v);
	return v;
}

/* "member": a role number or a path (fail, remove). */
static int
parse_member(struct json_object *req, struct control_req *r, const char *name,
	     char *why)
{
	struct json_object *m = field(req, "member");

	if (!m ||
	    !(json_object_is_type(m, json_type_string) ||
	      json_object_is_type(m, json_type_int)) ||
	    !*json_object_get_string(m)) {
		fail_why(why,
			 "which member? {\"command\":\"%s\","
			 "\"member\":ROLE or PATH}",
			 name);
		return -EINVAL;
	}
	snprintf(r->member, sizeof(r->member), "%s", json_object_get_string(m));
	return 0;
}

/* add: "member" an absolute path, "force" a boolean if given. */
static int
parse_add(struct json_object *req, struct control_req *r, char *why)
{
	struct json_object *m = field(req, "member"), *f = field(req, "force");

	if (!m || !json_object_is_type(m, json_type_string) ||
	    json_object_get_string(m)[0] != '/') {
		fail_why(why, "which member? {\"command\":\"add\","
			      "\"member\":ABSOLUTE-PATH}");
		return -EINVAL;
	}
	if (f && !json_object_is_type(f, json_type_boolean)) {
		fail_why(why, "add: \"force\" must be true or false");
		return -EINVAL;
	}
	snprintf(r->member, sizeof(r->member), "%s", json_object_get_string(m));
	r->force = f && json_object_get_boolean(f);
	return 0;
}

/* A number field > 0; false when it is not one. */
static bool
kib(struct json_object *req, const char *key, uint64_t *out)
{
	struct json_object *v = field(req, key);

	if (!v || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) <= 0) {
		return false;
	}
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

/* "action", a string, or "" when there is none. */
static const char *
action(struct json_object *req)
{
	struct json_object *v = field(req, "action");

	return v && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : "";
}

/* The command's own fields. */
static int
parse_fields(struct json_object *req, const char *name, struct control_req *r,
	     char *why)
{
	const char *act = action(req);

	switch (r->cmd) {
	case CONTROL_FAIL:
	case CONTROL_REMOVE:
		return parse_member(req, r, name, why);
	case CONTROL_ADD:
		return parse_add(req, r, why);
	case CONTROL_SPEED:
		if (!kib(req, "min", &r->min) || !kib(req, "max", &r->max)) {
			fail_why(why, "speed: want {\"command\":\"speed\","
				      "\"min\":KiB/s,\"max\":KiB/s}, both > 0");
			return -EINVAL;
		}
		return 0;
	case CONTROL_SCRUB:
		r->scrub = strcmp(act, "check") == 0	? RAID_SYNC_CHECK
			   : strcmp(act, "repair") == 0 ? RAID_SYNC_REPAIR
							: RAID_SYNC_NONE;
		if (r->scrub == RAID_SYNC_NONE && strcmp(act, "stop") != 0) {
			fail_why(why,
				 "scrub: want {\"command\":\"scrub\","
				 "\"action\":\"check\"|\"repair\"|\"stop\"}");
			return -EINVAL;
		}
		return 0;
	case CONTROL_CACHE_FLUSH:
		if (strcmp(act, "flush") != 0) {
			fail_why(why, "cache: want {\"command\":\"cache\","
				      "\"action\":\"flush\"}");
			return -EINVAL;
		}
		return 0;
	default:
		return 0;
	}
}

static const struct {
	const char *name;
	enum control_cmd cmd;
} commands[] = {
	{ "status", CONTROL_STATUS },	  { "fail", CONTROL_FAIL },
	{ "remove", CONTROL_REMOVE },	  { "add", CONTROL_ADD },
	{ "speed", CONTROL_SPEED },	  { "scrub", CONTROL_SCRUB },
	{ "cache", CONTROL_CACHE_FLUSH },
};

int
control_parse(const char *line, size_t len, struct control_req *r, char *why)
{
	struct json_object *req = parse_json(line, len, why), *cmd;
	const char *name;
	char q[QUOTE_MAX + 4];
	int rc = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (!req || !checked(req, line, len, why)) {
		json_object_put(req);
		return -EINVAL;
	}
	cmd = json_object_is_type(req, json_type_object) ? field(req, "command")
							 : NULL;
	if (!cmd || !json_object_is_type(cmd, json_type_string)) {
		fail_why(why, "bad request: want {\"command\":\"status\"|"
			      "\"fail\"|\"remove\"|\"add\"|\"speed\"|"
			      "\"scrub\"|\"cache\", ...}");
		json_object_put(req);
		return -EINVAL;
	}
	name = json_object_get_string(cmd);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name) == 0) {
			r->cmd = commands[i].cmd;
			rc = parse_fields(req, name, r, why);
			json_object_put(req);
			return rc;
		}
	}
	fail_why(why,
		 "unknown command '%s' (status, fail, remove, add, speed, "
		 "scrub, cache)",
		 clip(name, q, sizeof(q)));
	json_object_put(req);
	return rc;
}
