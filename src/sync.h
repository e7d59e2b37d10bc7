/*
 * sync.h: the array's background passes, md's md_do_sync: recovery of a
 * rebuilding member, resync after an unclean stop, check and repair
 * (docs/recovery.md).  One pass at a time, on a thread of its own started
 * with the array's other threads (after nbdkit forks).
 */
#ifndef RAID_SYNC_H
#define RAID_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid.h"

struct raid_array;
struct batch;

/* The state of the passes; array_assemble makes it, raid_close frees it. */
struct sync_state *sync_new(void);
void sync_free(struct sync_state *s);
/* Start the thread (raid_start); stop it (raid_close, before the members
 * close: a pass stops at its next window, its checkpoint kept). */
int sync_start(struct raid_array *a);
void sync_stop(struct raid_array *a);
/*
 * Start only the sync thread's helper, a second worker that claims the
 * pieces of each window with it (sync_start starts it when the process
 * may use two CPUs or more); tests then run passes on their own thread
 * with sync_run_due.  `alternate` (tests): the two take every other piece
 * (the helper the odd ones) and the sync thread always waits for the
 * helper's, so that which worker does which piece is fixed.  sync_stop
 * stops it.  0 or -errno.
 */
int sync_start_helper(struct raid_array *a, bool alternate);
/* Pieces (recovery: slices of rows; else check units) the helper did. */
uint64_t sync_helper_pieces(struct raid_array *a);
/* Something changed (a member rebuilding, a scrub asked for): look. */
void sync_kick(struct raid_array *a);
/*
 * Run the passes due now, on the calling thread, until none is left or
 * one fails; tests call it without the thread.  0 or the failed pass's
 * -errno.
 */
int sync_run_due(struct raid_array *a);
/* Bytes of a member per window (default 4 MiB); tests make it small. */
void sync_set_window(struct raid_array *a, uint64_t bytes);
/* Fill st's progress, last_check and speeds. */
void sync_status(struct raid_array *a, struct raid_status *st);

/* check.c, for the online passes: the units of a check (stripe rows or
 * chunks), one unit checked or repaired, and the scratch that needs. */
uint64_t check_units(const struct raid_array *a);
int check_unit(struct raid_array *a, struct batch *b, uint64_t u, bool repair,
	       uint8_t *mem, uint64_t *bad_bytes);
size_t check_unit_mem(const struct raid_array *a);

#endif
