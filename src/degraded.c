/*
 * degraded.c: member failure and removal (docs/degraded.md).
 */
#include <errno.h>

#include "array.h"

int
raid_fail_member(struct raid_array *a, unsigned role, const char *why)
{
	(void)a;
	(void)role;
	(void)why;
	return -ENOSYS; /* work in progress: issue 13 */
}

int
raid_remove_member(struct raid_array *a, unsigned role)
{
	(void)a;
	(void)role;
	return -ENOSYS; /* work in progress: issue 13 */
}
