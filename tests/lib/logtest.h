/*
 * logtest.h: what the cache log's unit tests share (test_cache_log.c,
 * test_cache_logmode.c): a scratch folder per case, removed with all it
 * holds; files of a given size; two array UUIDs.
 */
#ifndef TEST_LOGTEST_H
#define TEST_LOGTEST_H

#include <stddef.h>
#include <stdint.h>

/* a1 a2 .. af a0 and b1 b2 .. bf b0: two arrays' logs. */
extern const uint8_t t_uuid_a[16], t_uuid_b[16];

/* A new folder BASE/NAME.XXXXXX, its path into dir (len bytes). */
void t_scratch_dir(char *dir, size_t len, const char *base, const char *name);
/* The files in dir, then dir itself. */
void t_scratch_remove(const char *dir);
/* path: size bytes (a hole), made or cut to that. */
void t_mk_file(const char *path, uint64_t size);

#endif
