/*
 * tls.h: per-thread objects freed when their thread exits.
 *
 * A module keeps its object in a _Thread_local pointer (the fast path) and
 * attaches it once per thread to a tls_key, whose destructor frees it when
 * the thread exits: nbdkit worker threads come and go with connections.
 */
#ifndef RAID_TLS_H
#define RAID_TLS_H

#include <pthread.h>
#include <stdbool.h>

struct tls_key {
	pthread_mutex_t lock; /* guards `made` and the creation of `key` */
	bool made;
	pthread_key_t key;
	void (*dtor)(void *);
};

#define TLS_KEY_INIT(dtor)                                                     \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER, false, 0, dtor                      \
	}

/* Have k->dtor(obj) run when the calling thread exits.  0 or -errno. */
int tls_attach(struct tls_key *k, void *obj);

#endif
