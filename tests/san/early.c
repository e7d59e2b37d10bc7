/*
 * early.c: preloaded with the sanitizer runtime into nbdkit by the sanitizer
 * builds' tests (tests/CMakeLists.txt), linked -z initfirst so that its
 * constructor runs before any other library's: its malloc initializes the
 * runtime now.  Else the runtime initializes on the first malloc it sees,
 * which is p11-kit's (nbdkit -> gnutls -> p11-kit), inside newlocale()
 * while glibc's locale lock is held for writing; its init then takes that
 * lock to read (dlerror -> dcgettext) and leaves it corrupt, and the next
 * newlocale (json-c parsing a control command) waits forever.
 */
#include <stdlib.h>

__attribute__((constructor)) static void
san_early(void)
{
	void *volatile p = malloc(1); /* volatile: not optimized away */

	free(p);
}
