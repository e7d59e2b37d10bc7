/*
 * bounce.h: a per-thread aligned buffer for O_DIRECT members, whose buffer
 * alignment nbdkit's own buffers do not meet.  One buffer per thread, grown
 * as needed; bounce_put() gives back memory after an unusually large
 * request so that 16 idle worker threads do not each keep 64 MiB.
 */
#ifndef RAID_BOUNCE_H
#define RAID_BOUNCE_H

#include <stddef.h>

void *bounce_get(size_t len, size_t align);
void bounce_put(void);

#endif
