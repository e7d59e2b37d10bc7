/* bounce.c: the per-thread aligned bounce buffer (see bounce.h). */
#include <stdlib.h>

#include "bounce.h"
#include "tls.h"

#define BOUNCE_KEEP (4u << 20) /* keep at most this much between requests */

struct bounce {
	void *buf;
	size_t len;
	size_t align;
};

static void
bounce_free(void *p)
{
	struct bounce *b = p;

	free(b->buf);
	free(b);
}

static struct tls_key bounce_key = TLS_KEY_INIT(bounce_free);
static _Thread_local struct bounce *tl_bounce;

void *
bounce_get(size_t len, size_t align)
{
	struct bounce *b = tl_bounce;

	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || tls_attach(&bounce_key, b) < 0) {
			free(b);
			return NULL;
		}
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
