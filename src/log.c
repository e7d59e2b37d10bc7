/* log.c: the pluggable log sink (see log.h). */
#include <stdio.h>

#include "log.h"

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

void
raid_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sink(RAID_LOG_ERROR, fmt, ap);
	va_end(ap);
}

void
raid_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sink(RAID_LOG_DEBUG, fmt, ap);
	va_end(ap);
}
