/* logtest.c: the cache log tests' scratch files and UUIDs (logtest.h). */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "logtest.h"

const uint8_t t_uuid_a[16] = { 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8,
			       0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xa0 };
const uint8_t t_uuid_b[16] = { 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8,
			       0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf, 0xb0 };

void
t_scratch_dir(char *dir, size_t len, const char *base, const char *name)
{
	snprintf(dir, len, "%s/%s.XXXXXX", base, name);
	assert_non_null(mkdtemp(dir));
}

void
t_scratch_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[400];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	}
	if (d) {
		closedir(d);
	}
	rmdir(dir);
}

void
t_mk_file(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}
