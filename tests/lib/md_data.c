/* md_data.c: mdadm's own superblocks as test data (md_data.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "md_data.h"

#ifndef NBDRAID_TEST_DATA
#error "NBDRAID_TEST_DATA (the source tree's tests/data) is set by CMake"
#endif
#define MD_DATA NBDRAID_TEST_DATA "/md"

const char *const md_case_names[] = {
	"raid5-ls-x4",
	"raid1-x2-bitmap",
	"raid1-x2-v1.0",
	"raid10-n2-x4-v1.1",
	"raid0-x3",
	"raid10-f2-x3-bitmap",
	"raid5-ra-x3-v1.0-bitmap",
};
const unsigned md_case_count = sizeof(md_case_names) / sizeof(md_case_names[0]);

static size_t
slurp(const char *path, void *buf, size_t len, bool required)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		if (required) {
			print_error("%s: cannot open\n", path);
			fail();
		}
		return 0;
	}
	n = fread(buf, 1, len, f);
	fclose(f);
	return n;
}

const char *
md_examine(const char *text, const char *key, char *val, size_t len)
{
	char pat[64];
	const char *at = text;
	size_t n;

	snprintf(pat, sizeof(pat), "%s : ", key);
	/* The key starts its line, after the spaces that right-align it. */
	while ((at = strstr(at, pat)) && at > text && at[-1] != ' ' &&
	       at[-1] != '\n') {
		at++;
	}
	if (!at) {
		return NULL;
	}
	at += strlen(pat);
	n = strcspn(at, "\n");
	snprintf(val, len, "%.*s", (int)n, at);
	return val;
}

/* The .info file: "key value" lines. */
static void
load_info(const char *name, struct md_case *c)
{
	char path[512], text[1024], *line, *save = NULL;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.info", MD_DATA, name);
	n = slurp(path, text, sizeof(text) - 1, true);
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char key[32];
		long long v;

		if (sscanf(line, "%31s %lld", key, &v) != 2) {
			continue;
		}
		if (strcmp(key, "member_bytes") == 0) {
			c->member_bytes = v;
		} else if (strcmp(key, "sb_sector") == 0) {
			c->sb_sector = v;
		} else if (strcmp(key, "bitmap_offset") == 0) {
			c->bitmap = true;
			c->bitmap_offset = v;
		}
	}
}

void
md_case_load(const char *name, struct md_case *c)
{
	char path[512];

	memset(c, 0, sizeof(*c));
	c->name = name;
	load_info(name, c);
	for (unsigned d = 0; d < MD_DATA_MAX_MEMBERS; d++) {
		size_t n;

		snprintf(path, sizeof(path), "%s/%s.d%u.sb", MD_DATA, name, d);
		if (!slurp(path, c->sb[d], sizeof(c->sb[d]), false)) {
			break;
		}
		c->members = d + 1;
		snprintf(path, sizeof(path), "%s/%s.d%u.examine", MD_DATA, name,
			 d);
		n = slurp(path, c->examine[d], sizeof(c->examine[d]) - 1, true);
		c->examine[d][n] = '\0';
		if (c->bitmap) {
			snprintf(path, sizeof(path), "%s/%s.d%u.bitmap",
				 MD_DATA, name, d);
			slurp(path, c->bm[d], sizeof(c->bm[d]), true);
		}
	}
	assert_true(c->members > 0 && c->member_bytes > 0);
}
