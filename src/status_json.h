/*
 * status_json.h: struct raid_status as json-c objects, for the control
 * socket (which sends it inside its answer) and raid_status_json() (raid.h).
 * docs/control.md describes the object field by field.
 */
#ifndef RAID_STATUS_JSON_H
#define RAID_STATUS_JSON_H

#include <json.h>

#include "raid.h"

/* A new object (json_object_put() it), or NULL when out of memory. */
struct json_object *status_json_object(const struct raid_status *st);

/*
 * A JSON string of s, bytes from outside (a path, a name): any byte that
 * is not UTF-8 as \xNN, so that an answer is UTF-8 whatever s holds.
 * NULL when out of memory.
 */
struct json_object *status_json_text(const char *s);

#endif
