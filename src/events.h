/*
 * events.h: event=PROGRAM, run for each event of the array, off the data
 * path, as mdadm --monitor --program runs its program: with the event name
 * (mdadm's where one exists: Fail, DegradedArray ...), the array (its
 * name, or UUID), and the member's path when the event concerns one
 * (docs/control.md lists the events).
 *
 * Emitting never blocks: events go to a bounded queue that one thread
 * drains, running the program for each in turn and waiting for it.
 */
#ifndef RAID_EVENTS_H
#define RAID_EVENTS_H

struct event_runner;

/* A runner for program (its thread not started); 0 or -errno. */
int events_new(const char *program, const char *array,
	       struct event_runner **out);
/* Start the thread (after nbdkit forks); events queued before are kept. */
int events_start(struct event_runner *er);
/* Queue one event; a full queue drops it (logged).  member may be NULL. */
void events_emit(struct event_runner *er, const char *event,
		 const char *member);
/* Run what is still queued, stop the thread, free (NULL: nothing). */
void events_free(struct event_runner *er);

#endif
