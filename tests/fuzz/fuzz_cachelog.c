/*
 * fuzz_cachelog.c: a libFuzzer target for the cache log's replay of
 * outside bytes (src/cache_log.c, src/cache_log_disk.c; docs/cache.md,
 * "The log format"): a log file is whatever an attacker or a damaged disk
 * left at the path.
 *
 * The input is the log file's first bytes (the rest, up to 1 MiB, zeros),
 * in a memfd.  Each input runs twice: as it is, and with its checksums
 * made right (both header slots, and every block from 8192 on that starts
 * with a record's magic, over the data its len gives), so that the fuzzer
 * reaches the header checks, the chain and the replay, not only the
 * checksum refusals.  Sanitizers catch what crashes, leaks or reads out
 * of bounds; libFuzzer's -timeout what hangs (a header that made the
 * first append loop for ever did); CHECK() aborts on what is wrong:
 *
 *   refusals    every refusal of clog_examine, clog_peek and clog_open has
 *               a NUL-terminated why that names the path, and leaves the
 *               file as it was (nothing written before the checks);
 *   agreement   open (with the header's own array UUID and size) succeeds
 *               only if examine does, and replays exactly examine's
 *               records: lsns increasing from its first to its last, each
 *               a write, zero or trim inside the array, a write with data;
 *   use         after open, a 4K write appended, synced (or -ENOSPC: the
 *               log is full) and the log closed without a retire: opened
 *               again, it replays the same records and then the new one,
 *               byte for byte; a retire of everything leaves none.
 *
 * Run: bash tests/fuzz/run.sh cachelog (NBDRAID_FUZZ_SECONDS=3600 for an
 * hour; libFuzzer's arguments in fuzz_cachelog.args).
 *
 * Seeds: tests/fuzz/corpus/cachelog/ (make-cachelog-corpus.py).
 */
#include <errno.h>
#include <fcntl.h>
#include <isa-l/crc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cache_log.h"
#include "log.h"

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#define BLK	  4096u
#define LOG_BYTES (1u << 20)
#define AREA	  8192u
#define LOG_MAGIC 0x474c524eu
#define REC_MAGIC 0x4345524eu
#define MAX_RECS  (LOG_BYTES / BLK)

static uint8_t img[LOG_BYTES];
static uint8_t after[LOG_BYTES];
static int fd = -1;
static char path[64];

static uint32_t
le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		p[i] = (uint8_t)(v >> (8 * i));
	}
}

/* The format's CRC-32C over 128 header bytes (crc field 0), then data. */
static void
fix_crc(uint8_t *h, const uint8_t *data, uint32_t len)
{
	uint32_t crc;

	put32(h + 4, 0);
	crc = crc32_iscsi(h, 128, ~0u);
	if (len) {
		crc = crc32_iscsi((unsigned char *)data, (int)len, crc);
	}
	put32(h + 4, ~crc);
}

/* Both header slots and every record-looking block: checksums right. */
static void
fix_checksums(uint8_t *b)
{
	for (unsigned s = 0; s < 2; s++) {
		if (le32(b + s * BLK) == LOG_MAGIC) {
			fix_crc(b + s * BLK, NULL, 0);
		}
	}
	for (uint32_t pos = AREA; pos < LOG_BYTES; pos += BLK) {
		uint8_t *h = b + pos;
		uint32_t type = le32(h + 8), len = le32(h + 12);

		if (le32(h) != REC_MAGIC) {
			continue;
		}
		if (type == 1 && len <= LOG_BYTES - pos - BLK) {
			fix_crc(h, h + BLK, len);
		} else {
			fix_crc(h, NULL, 0);
		}
	}
}

static void
quiet(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	(void)lvl;
	(void)fmt;
	(void)ap;
}

static void
load(const uint8_t *b)
{
	CHECK(pwrite(fd, b, LOG_BYTES, 0) == (ssize_t)LOG_BYTES);
}

/* The file as it is now equals b (a refusal wrote nothing). */
static bool
unchanged(const uint8_t *b)
{
	CHECK(pread(fd, after, LOG_BYTES, 0) == (ssize_t)LOG_BYTES);
	return memcmp(after, b, LOG_BYTES) == 0;
}

static void
check_why(const char *why, size_t len)
{
	CHECK(memchr(why, '\0', len) != NULL);
	CHECK(strstr(why, path) != NULL);
}

struct seen {
	uint64_t n, first, last, array_size;
	uint64_t lsn[MAX_RECS + 2];
	const uint8_t *want_data; /* the appended record's, checked last */
	uint64_t want_lsn;
	bool bad;
};

static int
on_rec(void *ctx, const struct clog_rec *r)
{
	struct seen *s = ctx;

	CHECK(s->n < MAX_RECS + 2);
	CHECK(r->type >= CLOG_WRITE && r->type <= CLOG_TRIM);
	CHECK(r->len > 0 && r->offset <= s->array_size &&
	      r->len <= s->array_size - r->offset);
	CHECK((r->type == CLOG_WRITE) == (r->data != NULL));
	CHECK(s->n == 0 || r->lsn > s->lsn[s->n - 1]);
	if (r->type == CLOG_WRITE && r->len) {
		volatile uint8_t x = ((const uint8_t *)r->data)[r->len - 1];

		(void)x; /* readable to its end */
	}
	if (s->want_data && r->lsn == s->want_lsn) {
		CHECK(r->type == CLOG_WRITE && r->len == BLK);
		CHECK(memcmp(r->data, s->want_data, BLK) == 0);
	}
	s->lsn[s->n++] = r->lsn;
	return 0;
}

/* Open as the array the header names; replay into s.  0 or -errno. */
static int
open_replay(const struct clog_info *info, struct clog **l, struct seen *s)
{
	char why[512];
	int r;

	memset(why, 0xa5, sizeof(why));
	r = clog_open(path, info->array_uuid, info->array_size, false, false, l,
		      why, sizeof(why));
	if (r < 0) {
		check_why(why, sizeof(why));
		CHECK(*l == NULL);
		return r;
	}
	s->array_size = info->array_size;
	r = clog_replay(*l, on_rec, s);
	CHECK(r >= 0);
	CHECK((uint64_t)r == s->n);
	return 0;
}

static void
run(const uint8_t *b)
{
	struct clog_info info, info2;
	struct seen s = { 0 }, s2 = { 0 };
	struct clog *l = NULL;
	uint8_t uuid[16], data[BLK];
	char why[512];
	bool has;
	int re, r;

	load(b);
	memset(why, 0xa5, sizeof(why));
	re = clog_examine(path, &info, why, sizeof(why));
	if (re < 0) {
		check_why(why, sizeof(why));
	}
	memset(why, 0xa5, sizeof(why));
	r = clog_peek(path, uuid, &has, why, sizeof(why));
	CHECK((r < 0) == (re < 0));
	if (r < 0) {
		check_why(why, sizeof(why));
		CHECK(unchanged(b));
		return;
	}
	CHECK(memcmp(uuid, info.array_uuid, 16) == 0);
	CHECK(has == (info.records > 0));
	CHECK(unchanged(b));
	if (open_replay(&info, &l, &s) < 0) {
		CHECK(unchanged(b));
		return;
	}
	/* Open succeeded: the records examine found, in order. */
	CHECK(s.n == info.records);
	CHECK(!s.n ||
	      (s.lsn[0] == info.first_lsn && s.lsn[s.n - 1] == info.last_lsn));
	/* Use it: one more record, synced, then a crash (no retire). */
	for (unsigned i = 0; i < BLK; i++) {
		data[i] = (uint8_t)(i * 7 + s.n);
	}
	if (info.array_size >= BLK) {
		uint64_t lsn = 0;

		r = clog_append(l, CLOG_WRITE, 0, BLK, data, &lsn);
		CHECK(r == 0 || r == -ENOSPC);
		if (r == 0) {
			CHECK(clog_sync(l, lsn) == 0);
			CHECK(s.n == 0 || lsn > s.lsn[s.n - 1]);
			s2.want_data = data;
			s2.want_lsn = lsn;
		}
	}
	clog_close(l);
	l = NULL;
	CHECK(clog_examine(path, &info2, why, sizeof(why)) == 0);
	if (open_replay(&info2, &l, &s2) < 0) {
		/* Only when the next lease, or header write, would pass
		 * 2^62. */
		CHECK(info2.seq_limit > (1ull << 62) - (1u << 20) ||
		      info2.generation >= 1ull << 62);
		return;
	}
	CHECK(s2.n == s.n + (s2.want_data != NULL));
	CHECK(memcmp(s2.lsn, s.lsn, s.n * sizeof(s.lsn[0])) == 0);
	if (s2.want_data) {
		CHECK(s2.lsn[s2.n - 1] == s2.want_lsn);
	}
	/* Retired: nothing left (unless the header is at its last
	 * generation: then it is not written, and still reads). */
	r = clog_retire(l, CLOG_ALL);
	clog_close(l);
	CHECK(r == 0 || (r == -EOVERFLOW && info2.generation >= 1ull << 62));
	CHECK(clog_examine(path, &info2, why, sizeof(why)) == 0);
	CHECK(r < 0 || info2.records == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size < LOG_BYTES ? size : LOG_BYTES;

	if (fd < 0) {
		raid_set_log(quiet);
		fd = memfd_create("fuzz-cachelog", MFD_CLOEXEC);
		CHECK(fd >= 0);
		CHECK(ftruncate(fd, LOG_BYTES) == 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	memset(img, 0, sizeof(img));
	memcpy(img, data, n);
	run(img);
	fix_checksums(img);
	run(img);
	return 0;
}
