/*
 * events.c: event=PROGRAM, as mdadm --monitor --program runs its program
 * (events.h; docs/control.md lists the events).
 *
 * DESIGN
 * The core reports an event from wherever it notices one, the data path
 * included, often holding the array's fail_lock: the emitter must never
 * wait for a program.  events_emit() copies the event into a bounded ring
 * (EVENTS_MAX) under `lock` and signals; one thread pops an event, lets go
 * of the lock, runs
 *
 *     PROGRAM EVENT ARRAY [MEMBER]
 *
 * (posix_spawnp when PROGRAM has no '/', as execlp would find it; stdin
 * /dev/null, stdout and stderr nbdkit's; signals at their defaults), waits
 * for it, and takes the next.  Events run one at a time, in the order
 * emitted.  A full ring drops the event: logged once per run of drops,
 * with the count when the ring has room again.
 *
 * ARRAY and MEMBER come from outside (a superblock's name, a member's
 * path): each reaches the program cleaned (text.h: control characters
 * and bytes that are not UTF-8 as \xNN, a leading '-' as \x2d), so that
 * it is one printable argument and never an option.
 *
 * Before events_start() (nbdkit forks after raid_open) events only queue;
 * events_free() runs whatever is queued, on its thread or, when it never
 * started, on the caller's, then stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "events.h"
#include "log.h"
#include "text.h"

#define EVENTS_MAX	 64 /* queued and not yet run */
#define EVENT_NAME_MAX	 32
#define EVENT_MEMBER_MAX 4096
#define EVENT_ARRAY_MAX	 (4 * 32 + 1) /* md's name, each byte escaped */

extern char **environ;

struct event {
	char name[EVENT_NAME_MAX];
	char member[EVENT_MEMBER_MAX]; /* "" for none */
};

struct event_runner {
	char *program;
	char array[EVENT_ARRAY_MAX];
	pthread_t thread;
	bool running; /* the thread was started (set and read by the owner) */
	/*
	 * lock guards the ring (q, head, count), stop and dropped; with
	 * wake, the thread's sleep.  Never held while a program runs.
	 */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct event *q; /* EVENTS_MAX of them; head is the oldest */
	unsigned head, count;
	bool stop;
	unsigned long dropped; /* in the current run of drops */
};

/* Run one event's program and wait for it; what happened goes to the log. */
static void
run_program(struct event_runner *er, const struct event *ev)
{
	char *argv[] = { er->program, (char *)ev->name, er->array,
			 ev->member[0] ? (char *)ev->member : NULL, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	pid_t pid;
	int r, status;

	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE); /* nbdkit ignores it */
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGQUIT);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
						POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (strchr(er->program, '/')) {
		r = posix_spawn(&pid, er->program, &fa, &attr, argv, environ);
	} else {
		r = posix_spawnp(&pid, er->program, &fa, &attr, argv, environ);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0) {
		raid_error("event %s: %s: %s", ev->name, er->program,
			   strerror(r));
		return;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			raid_error("event %s: %s: waitpid: %s", ev->name,
				   er->program, strerror(errno));
			return;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		raid_error("event %s: %s: could not be run (exit 127)",
			   ev->name, er->program);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		raid_debug("event %s: %s exited with %d", ev->name, er->program,
			   WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		raid_error("event %s: %s: killed by signal %d", ev->name,
			   er->program, WTERMSIG(status));
	}
}

/* Take the oldest event; under lock.  false when the ring is empty. */
static bool
pop(struct event_runner *er, struct event *ev)
{
	if (!er->count) {
		return false;
	}
	*ev = er->q[er->head];
	er->head = (er->head + 1) % EVENTS_MAX;
	er->count--;
	return true;
}

/* Run events until the ring is empty and, when `until_stop`, stopped. */
static void
drain(struct event_runner *er, bool until_stop)
{
	struct event ev;

	pthread_mutex_lock(&er->lock);
	for (;;) {
		if (pop(er, &ev)) {
			pthread_mutex_unlock(&er->lock);
			run_program(er, &ev);
			pthread_mutex_lock(&er->lock);
		} else if (until_stop && !er->stop) {
			pthread_cond_wait(&er->wake, &er->lock);
		} else {
			break;
		}
	}
	pthread_mutex_unlock(&er->lock);
}

static void *
events_main(void *arg)
{
	drain(arg, true);
	return NULL;
}

int
events_new(const char *program, const char *array, struct event_runner **out)
{
	struct event_runner *er = calloc(1, sizeof(*er));

	if (!er) {
		return -ENOMEM;
	}
	er->program = strdup(program);
	er->q = calloc(EVENTS_MAX, sizeof(*er->q));
	if (!er->program || !er->q) {
		free(er->program);
		free(er->q);
		free(er);
		return -ENOMEM;
	}
	text_clean(er->array, sizeof(er->array), array, TEXT_NO_DASH);
	pthread_mutex_init(&er->lock, NULL);
	pthread_cond_init(&er->wake, NULL);
	*out = er;
	return 0;
}

int
events_start(struct event_runner *er)
{
	int r;

	if (er->running) {
		return 0;
	}
	r = -pthread_create(&er->thread, NULL, events_main, er);
	if (r < 0) {
		raid_error("starting the event thread: %s", strerror(-r));
		return r;
	}
	er->running = true;
	return 0;
}

void
events_emit(struct event_runner *er, const char *event, const char *member)
{
	unsigned long dropped = 0;
	bool first_drop = false;

	pthread_mutex_lock(&er->lock);
	if (er->count == EVENTS_MAX) {
		first_drop = er->dropped++ == 0;
	} else {
		struct event *ev = &er->q[(er->head + er->count) % EVENTS_MAX];

		snprintf(ev->name, sizeof(ev->name), "%s", event);
		text_clean(ev->member, sizeof(ev->member), member ? member : "",
			   TEXT_NO_DASH);
		er->count++;
		dropped = er->dropped;
		er->dropped = 0;
		pthread_cond_signal(&er->wake);
	}
	pthread_mutex_unlock(&er->lock);
	if (first_drop) {
		raid_error("event %s: %d events are waiting for %s: dropped",
			   event, EVENTS_MAX, er->program);
	}
	if (dropped) {
		raid_error("events: %lu were dropped while the queue was full",
			   dropped);
	}
}

void
events_free(struct event_runner *er)
{
	if (!er) {
		return;
	}
	if (er->running) {
		pthread_mutex_lock(&er->lock);
		er->stop = true;
		pthread_cond_signal(&er->wake);
		pthread_mutex_unlock(&er->lock);
		pthread_join(er->thread, NULL);
	} else {
		drain(er, false);
	}
	pthread_cond_destroy(&er->wake);
	pthread_mutex_destroy(&er->lock);
	free(er->q);
	free(er->program);
	free(er);
}
