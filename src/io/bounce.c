/* bounce.c: the per-thread aligned bounce buffer (see bounce.h). */
#include <pthread.h>
#include <stdlib.h>

#include "bounce.h"

#define BOUNCE_KEEP (4u << 20) /* keep at most this much between requests */

struct bounce {
	void *buf;
	size_t len;
	size_t align;
};

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static _Thread_local struct bounce *tl_bounce;

static void
bounce_free(void *p)
{
	struct bounce *b = p;

	free(b->buf);
	free(b);
}

static void
bounce_key_init(void)
{
	pthread_key_create(&bounce_key, bounce_free);
}

void *
bounce_get(size_t len, size_t align)
{
	struct bounce *b = tl_bounce;

	if (!b) {
		pthread_once(&bounce_once, bounce_key_init);
		b = calloc(1, sizeof(*b));
		if (!b) {
			return NULL;
		}
		pthread_setspecific(bounce_key, b);
		tl_bounce = b;
	}
	if (align < sizeof(void *)) {
		align = sizeof(void *);
	}
	if (b->len < len || b->align < align) {
		free(b->buf);
		b->buf = NULL;
		b->len = 0;
		if (posix_memalign(&b->buf, align, len) != 0) {
			b->buf = NULL;
			return NULL;
		}
		b->len = len;
		b->align = align;
	}
	return b->buf;
}

void
bounce_put(void)
{
	struct bounce *b = tl_bounce;

	if (b && b->len > BOUNCE_KEEP) {
		free(b->buf);
		b->buf = NULL;
		b->len = 0;
	}
}
