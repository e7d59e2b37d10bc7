/*
 * control_req.h: a control client's request line, parsed into a command
 * (docs/control.md, "The protocol").  Pure: no array, no I/O, no state,
 * so that the fuzz target (tests/fuzz/fuzz_control.c) can feed it any
 * bytes; control.c runs what it returns.
 */
#ifndef RAID_CONTROL_REQ_H
#define RAID_CONTROL_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid.h"

#define CONTROL_LINE_MAX 4096 /* a request, its newline included */
#define CONTROL_WHY_MAX	 512  /* an error answer's message */

enum control_cmd {
	CONTROL_STATUS,
	CONTROL_FAIL,
	CONTROL_REMOVE,
	CONTROL_ADD,
	CONTROL_SPEED,
	CONTROL_SCRUB,
	CONTROL_CACHE_FLUSH,
};

struct control_req {
	enum control_cmd cmd;
	/* fail, remove: a role number or a path; add: an absolute path.
	 * Valid UTF-8 without NUL, as every string of an accepted request. */
	char member[CONTROL_LINE_MAX];
	bool force;		   /* add */
	uint64_t min, max;	   /* speed: KiB/s, both > 0 */
	enum raid_sync_kind scrub; /* check, repair; RAID_SYNC_NONE: stop */
};

/*
 * Parse one request line (without its newline; any bytes).  0 with *req
 * set, or -EINVAL with the reason in why (CONTROL_WHY_MAX bytes: valid
 * UTF-8, naming the field at fault; a string of the request is quoted
 * only once it is known to be valid UTF-8 without NUL).  A request is
 * refused whole when any of its strings or keys, at any depth, holds a
 * NUL (\u0000) or is not valid UTF-8.
 */
int control_parse(const char *line, size_t len, struct control_req *req,
		  char *why);

#endif
