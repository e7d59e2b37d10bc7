/*
 * clog_bench.c: how fast the cache log (src/cache_log.c) takes 4 KiB
 * records made durable one by one: records/s for one thread appending and
 * syncing after every record, against 8 threads doing the same (their
 * syncs shared by group commit), and 8 threads appending without syncing
 * (the ceiling).  Bench only: nothing is asserted.
 *
 *   build/bench/clog-bench DIR [SECONDS] [RUNS] [sparse|written]
 *
 * Each run formats a 64 MiB log in DIR and runs SECONDS (default 2); a
 * full log is retired whole and the append tried again.  The log file is
 * sparse (ftruncate), or written with zeros and synced first (`written`:
 * then a record's fdatasync writes no metadata on ext4).  Prints the
 * median of RUNS (default 3) per mode, and fdatasyncs per record.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache_log.h"

#define LOG_BYTES (64u << 20)
#define REC	  4096u

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
static bool written; /* the log file written with zeros first */

struct run {
	struct clog *l;
	double seconds;
	bool sync;
	atomic_bool stop;
	atomic_ullong records;
};

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *
worker(void *arg)
{
	struct run *r = arg;
	uint8_t *buf = aligned_alloc(4096, REC);
	uint64_t lsn, off = 0;

	memset(buf, 0x5a, REC);
	while (!atomic_load(&r->stop)) {
		int e = clog_append(r->l, CLOG_WRITE, off, REC, buf, &lsn);

		if (e == -ENOSPC) {
			clog_retire(r->l, CLOG_ALL);
			continue;
		}
		if (e < 0 || (r->sync && clog_sync(r->l, lsn) < 0)) {
			fprintf(stderr, "clog-bench: %s\n", strerror(-e));
			exit(1);
		}
		off = (off + REC) % (1u << 30);
		atomic_fetch_add(&r->records, 1);
	}
	free(buf);
	return NULL;
}

/* One run: records/s, and fdatasyncs per record in *per. */
static double
one_run(const char *path, unsigned threads, bool sync, double seconds,
	double *per)
{
	struct run r = { .seconds = seconds, .sync = sync };
	pthread_t th[64];
	struct clog_stats st;
	char why[512];
	double t0, t1;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || ftruncate(fd, LOG_BYTES) < 0) {
		perror(path);
		exit(1);
	}
	for (uint32_t off = 0; written && off < LOG_BYTES; off += 1u << 20) {
		static const uint8_t zeros[1u << 20];

		if (pwrite(fd, zeros, sizeof(zeros), off) != sizeof(zeros)) {
			perror(path);
			exit(1);
		}
	}
	if (fsync(fd) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
	if (clog_open(path, uuid, 1u << 30, true, false, &r.l, why,
		      sizeof(why)) < 0) {
		fprintf(stderr, "clog-bench: %s\n", why);
		exit(1);
	}
	t0 = now();
	for (unsigned i = 0; i < threads; i++) {
		pthread_create(&th[i], NULL, worker, &r);
	}
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&r.stop, true);
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
	}
	t1 = now();
	clog_stats(r.l, &st);
	*per = (double)st.syncs / (double)atomic_load(&r.records);
	clog_close(r.l);
	unlink(path);
	return atomic_load(&r.records) / (t1 - t0);
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		unsigned threads;
		bool sync;
	} modes[] = {
		{ "1 thread, sync every record", 1, true },
		{ "8 threads, sync every record (group commit)", 8, true },
		{ "8 threads, no sync (ceiling)", 8, false },
	};
	double seconds = argc > 2 ? atof(argv[2]) : 2;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	char path[4096];

	written = argc > 4 && strcmp(argv[4], "written") == 0;
	if (argc < 2 || runs < 1 || runs > 15) {
		fprintf(stderr, "usage: clog-bench DIR [SECONDS] [RUNS] "
				"[sparse|written]\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/clog-bench.log", argv[1]);
	printf("%s: 4 KiB records, %.1f s per run, median of %d, log file %s\n",
	       argv[1], seconds, runs, written ? "written" : "sparse");
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double rate[15], per[15], p = 0;

		for (int i = 0; i < runs; i++) {
			rate[i] = one_run(path, modes[m].threads, modes[m].sync,
					  seconds, &per[i]);
			p += per[i] / runs;
		}
		qsort(rate, runs, sizeof(rate[0]), cmp);
		printf("  %-46s %10.0f records/s  (%.3f fdatasyncs/record; runs %.0f .. %.0f)\n",
		       modes[m].name, rate[runs / 2], p, rate[0],
		       rate[runs - 1]);
	}
	return 0;
}
