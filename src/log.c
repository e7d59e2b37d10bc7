/*
 * log.c: the pluggable log sink (see log.h).
 *
 * Every message is formatted here first and made one clean line
 * (text_clean: control characters and bytes that are not UTF-8 as \xNN)
 * before the sink sees it: messages carry outside bytes (a superblock's
 * array name, member paths, a control client's request), none of which
 * may end a log line early, forge another, or drive a terminal.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "text.h"

#define LOG_LINE_MAX 1024 /* formatted on the stack up to this */

static void
stderr_sink(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_DEBUG) {
		return;
	}
	fputs("nbdraid: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Set once at startup, before any thread exists. */
static raid_log_fn sink = stderr_sink;

void
raid_set_log(raid_log_fn fn)
{
	sink = fn ? fn : stderr_sink;
}

/* The sink, given its arguments as ... */
static void
sink_args(enum raid_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sink(lvl, fmt, ap);
	va_end(ap);
}

/* fmt formatted, cleaned, to the sink. */
static void
log_clean(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX], clean[4 * LOG_LINE_MAX], *big = NULL;
	char *text = line, *out = clean;
	size_t cap = sizeof(clean);
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n >= (int)sizeof(line) &&
	    (big = malloc((size_t)n + 1 + 4 * ((size_t)n + 1)))) {
		vsnprintf(big, (size_t)n + 1, fmt, again);
		text = big;
		out = big + n + 1;
		cap = 4 * ((size_t)n + 1);
	}
	va_end(again);
	if (n < 0) {
		return;
	}
	text_clean(out, cap, text, 0);
	sink_args(lvl, "%s", out);
	free(big);
}

void
raid_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_clean(RAID_LOG_ERROR, fmt, ap);
	va_end(ap);
}

void
raid_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_clean(RAID_LOG_DEBUG, fmt, ap);
	va_end(ap);
}
