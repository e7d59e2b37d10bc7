/* tls.c: per-thread objects freed at thread exit (see tls.h). */
#include "tls.h"

int
tls_attach(struct tls_key *k, void *obj)
{
	int r = 0;

	pthread_mutex_lock(&k->lock);
	if (!k->made) {
		r = pthread_key_create(&k->key, k->dtor);
		k->made = r == 0;
	}
	pthread_mutex_unlock(&k->lock);
	return r ? -r : -pthread_setspecific(k->key, obj);
}
