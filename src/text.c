/*
 * text.c: UTF-8 checks and escaping of outside bytes (text.h).
 *
 * DESIGN
 * One decoder, utf8_next, says how long the valid character at s is (0
 * when the byte there starts none); the checks and the escaping walk with
 * it, so they agree on what is valid.  Escapes are \xNN of the raw bytes:
 * lossless, ASCII, and one line whatever came in.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

/* Bytes of the valid UTF-8 character at s (1..4, s has len >= 1), or 0. */
static size_t
utf8_next(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	uint32_t cp;
	size_t n;

	if (c < 0x80) {
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, cp = c & 0x07;
	} else {
		return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5.. */
	}
	if (len < n) {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		return 0; /* overlong, past U+10FFFF, or a surrogate */
	}
	return n;
}

bool
utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	while (len) {
		size_t n = utf8_next(p, len);

		if (!n) {
			return false;
		}
		p += n;
		len -= n;
	}
	return true;
}

size_t
utf8_cut(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t start = len;

	/* Back to the start of the last character (at most 3 bytes back). */
	while (start > 0 && len - start < 4 && (p[start - 1] & 0xc0) == 0x80) {
		start--;
	}
	if (start == 0 || len - start >= 4) {
		return len; /* no lead byte there: not ours to mend */
	}
	start--; /* the lead byte */
	return utf8_next(p + start, len - start) == len - start ? len : start;
}

/* Is the valid character at p (n bytes) one to escape: a control? */
static bool
is_control(const unsigned char *p, size_t n)
{
	if (n == 1) {
		return p[0] < 0x20 || p[0] == 0x7f;
	}
	return n == 2 && p[0] == 0xc2 && p[1] < 0xa0; /* U+0080..U+009F */
}

char *
text_clean(char *out, size_t cap, const char *s, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;

	while (len) {
		size_t n = utf8_next(p, len), esc;
		bool escape = !n ||
			      (is_control(p, n) && !(flags & TEXT_KEEP_CTRL)) ||
			      (p == (const unsigned char *)s && *p == '-' &&
			       (flags & TEXT_NO_DASH));

		n = n ? n : 1;
		esc = escape ? 4 * n : n;
		if (o + esc >= cap) {
			break;
		}
		for (size_t i = 0; i < n; i++) {
			if (escape) {
				snprintf(out + o, 5, "\\x%02x", p[i]);
				o += 4;
			} else {
				out[o++] = (char)p[i];
			}
		}
		p += n;
		len -= n;
	}
	if (cap) {
		out[o] = '\0';
	}
	return out;
}
