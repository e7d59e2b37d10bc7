/*
 * bounce.h: per-thread aligned buffers.  BOUNCE_IO carries a client's data
 * to and from O_DIRECT members, whose buffer alignment nbdkit's own buffers
 * do not meet; BOUNCE_PARITY is RAID 5's scratch for old data and parity
 * (md's per-CPU "scribble"); BOUNCE_GATHER holds a stripe that stripe
 * gathering (gather.c) builds from parked pieces, while the request's own
 * data may be in BOUNCE_IO.  All can be in use at once by one request.
 * Each is grown as needed (parity scratch is at most members + 3 column
 * slices of 1 MiB); bounce_put() gives back a slot's memory after an
 * unusually large request so that 16 idle worker threads do not each keep
 * 64 MiB.
 */
#ifndef RAID_BOUNCE_H
#define RAID_BOUNCE_H

#include <stddef.h>

enum bounce_slot {
	BOUNCE_IO,
	BOUNCE_PARITY,
	BOUNCE_GATHER,	/* a gathered stripe, built from parked pieces */
	BOUNCE_STRIPES, /* RAID 5: parity of the whole stripes a request
			   queued for one run (raid5.c, "Whole stripes") */
	BOUNCE_SLOTS,
};

void *bounce_get(enum bounce_slot slot, size_t len, size_t align);
/* Done with the slot for this request: give it back if it grew large. */
void bounce_put(enum bounce_slot slot);
/* Bytes the calling thread keeps in a slot between requests. */
size_t bounce_held(enum bounce_slot slot);

#define BOUNCE_KEEP (4u << 20) /* kept at most, per slot, between requests */

#endif
