/*
 * fuzz_control.c: a libFuzzer target for what parses a control client's
 * request line into a command (src/control_req.c, control_parse) and the
 * text checks every outside string goes through (src/text.c); built and
 * run by tests/fuzz/run.sh control.
 *
 * The input is one line as the server hands it to control_parse (without
 * its newline; any bytes, NUL and newline included).  Sanitizers catch
 * what crashes, leaks or reads out of bounds; CHECK() aborts on what is
 * merely wrong:
 *
 *   control_parse  returns 0 or -EINVAL; its message is NUL-terminated
 *                  inside CONTROL_WHY_MAX, valid UTF-8, never empty when
 *                  refused.  A line that is not UTF-8 is refused (JSON
 *                  has non-ASCII only in strings, and those must be
 *                  UTF-8), and so is a line holding a \u0000 escape (a NUL
 *                  in a string or key); both found here by a scan of the
 *                  line's own, not the parser's.  An accepted request has
 *                  a known command and its fields as that command needs
 *                  them: a member (UTF-8, no NUL, not empty; add: an
 *                  absolute path), speeds > 0, a scrub action.
 *   text_clean     any bytes give valid UTF-8 without control characters,
 *                  never past its buffer, for every flag; TEXT_NO_DASH
 *                  never starts with '-'.
 *   utf8_cut       cutting valid UTF-8 anywhere leaves valid UTF-8, at
 *                  most 3 bytes shorter.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_req.h"
#include "text.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#define WHY_GUARD 16   /* sentinel bytes after the message's room */
#define WHY_FILL  0xa5 /* never a byte of a message */

/* Does the line hold the escape \u0000: after an odd run of backslashes? */
static int
has_nul_escape(const uint8_t *p, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\') {
			run++;
			continue;
		}
		if (run % 2 == 1 && p[i] == 'u' && i + 4 < n &&
		    memcmp(p + i + 1, "0000", 4) == 0) {
			return 1;
		}
		run = 0;
	}
	return 0;
}

/* No byte of s (UTF-8) is a control character: C0, DEL or C1. */
static int
no_controls(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f ||
		    (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0)) {
			return 0;
		}
	}
	return 1;
}

static void
fuzz_parse(const uint8_t *data, size_t size)
{
	static struct control_req req;
	static char why[CONTROL_WHY_MAX + WHY_GUARD];
	int r;

	memset(why, WHY_FILL, sizeof(why));
	r = control_parse((const char *)data, size, &req, why);
	CHECK(r == 0 || r == -EINVAL);
	for (size_t i = CONTROL_WHY_MAX; i < sizeof(why); i++) {
		CHECK((uint8_t)why[i] == WHY_FILL);
	}
	if (r < 0) {
		CHECK(memchr(why, '\0', CONTROL_WHY_MAX) != NULL);
		CHECK(why[0] != '\0');
		CHECK(utf8_valid(why, strlen(why)));
		return;
	}
	CHECK(utf8_valid((const char *)data, size));
	CHECK(!has_nul_escape(data, size));
	CHECK(memchr(req.member, '\0', sizeof(req.member)) != NULL);
	CHECK(utf8_valid(req.member, strlen(req.member)));
	switch (req.cmd) {
	case CONTROL_FAIL:
	case CONTROL_REMOVE:
		CHECK(req.member[0] != '\0');
		break;
	case CONTROL_ADD:
		CHECK(req.member[0] == '/');
		break;
	case CONTROL_SPEED:
		CHECK(req.min > 0 && req.max > 0);
		break;
	case CONTROL_SCRUB:
		CHECK(req.scrub == RAID_SYNC_NONE ||
		      req.scrub == RAID_SYNC_CHECK ||
		      req.scrub == RAID_SYNC_REPAIR);
		break;
	case CONTROL_STATUS:
	case CONTROL_CACHE_FLUSH:
		break;
	default:
		CHECK(!"an unknown command accepted");
	}
}

static void
fuzz_text(const uint8_t *data, size_t size)
{
	static const unsigned flags[] = { 0, TEXT_NO_DASH, TEXT_KEEP_CTRL };
	char *s = malloc(size + 1), *out;
	size_t cap = (size_t)(data[0] % 64) + 1; /* small ones cut short */

	CHECK(s);
	memcpy(s, data, size);
	s[size] = '\0';
	out = malloc(cap + WHY_GUARD);
	CHECK(out);
	for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		memset(out, WHY_FILL, cap + WHY_GUARD);
		text_clean(out, cap, s, flags[f]);
		for (size_t i = cap; i < cap + WHY_GUARD; i++) {
			CHECK((uint8_t)out[i] == WHY_FILL);
		}
		CHECK(strlen(out) < cap);
		CHECK(utf8_valid(out, strlen(out)));
		if (flags[f] != TEXT_KEEP_CTRL) {
			CHECK(no_controls(out));
		}
		if (flags[f] == TEXT_NO_DASH) {
			CHECK(out[0] != '-');
		}
	}
	free(out);
	/* Valid UTF-8 cut anywhere stays valid. */
	if (utf8_valid(s, strlen(s))) {
		for (size_t k = 0; k <= strlen(s); k++) {
			size_t c = utf8_cut(s, k);

			CHECK(c <= k && k - c <= 3);
			CHECK(utf8_valid(s, c));
		}
	}
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_parse(data, size);
	if (size) {
		fuzz_text(data, size);
	}
	return 0;
}
