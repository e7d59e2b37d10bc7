/*
 * control.h: control=PATH, a unix socket through which an operator sees and
 * steers the running array (nbdraid --control PATH status | fail | remove;
 * docs/control.md has the protocol: one JSON object per line each way).
 */
#ifndef RAID_CONTROL_H
#define RAID_CONTROL_H

struct raid_array;
struct control_server;

/* Clients served at once; a new one past them takes the quietest's place. */
#define CONTROL_CLIENTS_MAX 64

/*
 * Bind the socket at path, mode 0600 (set on the socket before bind, never
 * by a chmod of the path), without starting its thread.  Refused (logged,
 * -EEXIST) when path exists and is not a stale socket (one nobody listens
 * on, which is replaced), or when what is at path once bound is not that
 * socket.
 */
int control_open(struct raid_array *a, const char *path,
		 struct control_server **out);
/* Serve from a thread of its own (after nbdkit forks). */
int control_start(struct control_server *cs);
/* Stop serving, remove the socket, free (NULL: nothing). */
void control_close(struct control_server *cs);

#endif
