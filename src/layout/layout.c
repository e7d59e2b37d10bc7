/*
 * layout.c: the table of levels.  Explicit, not filled by constructors: a
 * static library drops a file whose only reference is its constructor.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "layout.h"

static const struct raid_layout *const layouts[] = {
	&raid0_layout,
	&raid1_layout,
	&raid10_layout,
	&raid5_layout,
};

const struct raid_layout *
layout_find(int level)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i]->level == level) {
			return layouts[i];
		}
	}
	return NULL;
}

int
layout_refused(const char *level, const char *layout, char *err, size_t errlen)
{
	if (layout && *layout) {
		snprintf(err, errlen, "%s takes no layout (got '%s')", level,
			 layout);
		return -EINVAL;
	}
	return 0;
}

uint32_t
layout_md_none(const struct raid_geom *g)
{
	(void)g;
	return 0;
}

int
layout_md_name_none(uint32_t md_layout, char *name, size_t len, char *err,
		    size_t errlen)
{
	if (md_layout != 0) {
		snprintf(err, errlen, "md layout %u where the level has none",
			 md_layout);
		return -EINVAL;
	}
	if (len) {
		name[0] = '\0';
	}
	return 0;
}

void
layout_no_name(const struct raid_geom *g, char *buf, size_t len)
{
	(void)g;
	if (len) {
		buf[0] = '\0';
	}
}

bool
layout_enough_none(const struct raid_geom *g, uint64_t lost)
{
	(void)g;
	return lost == 0;
}
