/* bounce.c: the per-thread aligned buffers (see bounce.h). */
#include <stdlib.h>

#include "bounce.h"
#include "tls.h"

struct bounce {
	void *buf;
	size_t len;
	size_t align;
};

static void
bounce_free(void *p)
{
	struct bounce *set = p;

	for (unsigned i = 0; i < BOUNCE_SLOTS; i++) {
		free(set[i].buf);
	}
	free(set);
}

static struct tls_key bounce_key = TLS_KEY_INIT(bounce_free);
static _Thread_local struct bounce *tl_bounce; /* [BOUNCE_SLOTS] */

void *
bounce_get(enum bounce_slot slot, size_t len, size_t align)
{
	struct bounce *b;

	if (!tl_bounce) {
		struct bounce *set = calloc(BOUNCE_SLOTS, sizeof(*set));

		if (!set || tls_attach(&bounce_key, set) < 0) {
			free(set);
			return NULL;
		}
		tl_bounce = set;
	}
	b = &tl_bounce[slot];
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
bounce_put(enum bounce_slot slot)
{
	struct bounce *b = tl_bounce ? &tl_bounce[slot] : NULL;

	if (b && b->len > BOUNCE_KEEP) {
		free(b->buf);
		b->buf = NULL;
		b->len = 0;
	}
}

size_t
bounce_held(enum bounce_slot slot)
{
	return tl_bounce ? tl_bounce[slot].len : 0;
}
