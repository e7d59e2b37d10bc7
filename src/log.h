/*
 * log.h: the core's only way to say something.  Messages name what failed,
 * on which object, and why ("member 2 (/srv/b.img): pwrite: Input/output
 * error"); they are logged once, where that context is known.  The sink is
 * stderr by default; the plugin points it at nbdkit_verror/nbdkit_vdebug.
 */
#ifndef RAID_LOG_H
#define RAID_LOG_H

#include "raid.h"

void raid_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void raid_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
