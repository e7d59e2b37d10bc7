/*
 * text.h: bytes from outside (a superblock's name, a member's path, a
 * control client's request) made safe to show: strict UTF-8 checks, and
 * escaping for log lines, program arguments and answers, so that no such
 * byte can end a log line, drive a terminal, pass for an option or make
 * an answer that is not UTF-8.
 */
#ifndef RAID_TEXT_H
#define RAID_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Is s[0..len) UTF-8 as RFC 3629 has it: no overlong form, no surrogate,
 * nothing past U+10FFFF, no sequence cut short?  (NUL counts as valid.)
 */
bool utf8_valid(const char *s, size_t len);

/*
 * The longest prefix of s[0..len) that does not end inside a character
 * (for cutting valid UTF-8 short): len, or less by up to 3 bytes.
 */
size_t utf8_cut(const char *s, size_t len);

/* text_clean's flags. */
#define TEXT_NO_DASH 1u /* a leading '-' too: a program's argument */
#define TEXT_KEEP_CTRL                                                         \
	2u /* only bytes that are not UTF-8 (JSON escapes controls itself) */

/*
 * s made safe to show, into out (cap >= 1 bytes, always NUL-terminated):
 * every byte that is a control character (C0, DEL, and C1 as U+0080..9F)
 * or not part of valid UTF-8 written as \xNN (TEXT_KEEP_CTRL: only the
 * latter), with TEXT_NO_DASH a leading '-' as \x2d too; everything else
 * as it is.  Cut short (at a
 * character) when out is too small.  Returns out.
 */
char *text_clean(char *out, size_t cap, const char *s, unsigned flags);

#endif
