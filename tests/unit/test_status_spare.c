/*
 * test_status_spare.c: a member's path while spares take roles (status.c,
 * spare.c; docs/locking.md, "Member paths").
 *
 * A member's path is read by status, by member lookup (a control command
 * naming a member by path) and by log lines, none of which may hold the
 * array's locks for long; a spare taking a role replaces the path of the
 * member that was there.  Proves: the paths a status returned stay valid
 * (the same bytes) while the array is open, whatever spares did since;
 * status and lookup polled on a thread of their own while, on another,
 * a member fails again and again, a spare takes its role, the member that
 * left is added back as a spare, always see one of the array's files (an
 * exact path), never freed memory (ASan), never a data race (TSan); and
 * at the end the roles and the spare are the ones the cycles left, the
 * data the array held reads back.
 *
 * Real files (on /dev/shm when there is one): spares need md superblocks,
 * and raid_add_member opens a path.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "logtest.h"

#define MiB	     (1u << 20)
#define MEMBER_BYTES (4 * MiB)
#define NFILES	     3
#define CYCLES	     150

static char dir[96];
static char files[NFILES][160];

static int
setup(void **state)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	t_scratch_dir(dir, sizeof(dir), base, "nbdraid-status-spare");
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(files[i], sizeof(files[i]), "%s/m%u.img", dir, i);
		t_mk_file(files[i], MEMBER_BYTES);
	}
	return t_setup(state);
}

static int
teardown(void **state)
{
	(void)state;
	t_scratch_remove(dir);
	return 0;
}

/* A RAID 1 of files 0 and 1, file 2 its spare, open. */
static struct raid_array *
open_mirror(void)
{
	char *members[] = { files[0], files[1] };
	struct raid_create_spec spec = { .level = 1,
					 .name = "paths",
					 .homehost = "test",
					 .minor = 2,
					 .members = members,
					 .nr_members = 2 };
	struct raid_create_result res;
	struct raid_config cfg;
	struct raid_array *a = NULL;

	assert_int_equal(raid_create(&spec, NULL, NULL, &res), 0);
	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	raid_config_set(&cfg, "member", files[0]);
	raid_config_set(&cfg, "member", files[1]);
	raid_config_set(&cfg, "spare", files[2]);
	assert_int_equal(raid_open(&cfg, &a), 0);
	raid_config_free(&cfg);
	return a;
}

/* Which of files[] is path (exactly)?  -1: none. */
static int
which_file(const char *path)
{
	for (unsigned i = 0; path && i < NFILES; i++) {
		if (strcmp(path, files[i]) == 0) {
			return (int)i;
		}
	}
	return -1;
}

/*
 * One cycle: the member in role 1 fails, the spare takes the role (the
 * failed one is removed to make room), and the file that left is added
 * back, as the spare.  `out` is the file that was in role 1.
 */
static void
cycle(struct raid_array *a, int out)
{
	assert_int_equal(raid_fail_member(a, 1, "test"), 0);
	assert_int_equal(atomic_load(&a->members[1].state),
			 RAID_MEMBER_REBUILDING);
	assert_int_equal(raid_add_member(a, files[out], true), 0);
}

/*
 * The paths of a status taken before spares moved stay the array's
 * files, byte for byte, until it closes (a spare taking a role used to
 * free the path the status pointed at: ASan's heap-use-after-free).
 */
static void
test_status_paths_outlive_takeover(void **state)
{
	static struct raid_status before, after;
	struct raid_array *a = open_mirror();
	char *json;

	(void)state;
	assert_int_equal(raid_status(a, &before), 0);
	assert_string_equal(before.members[1].path, files[1]);
	assert_int_equal(before.nr_spares, 1);
	assert_string_equal(before.spares[0].path, files[2]);
	cycle(a, 1); /* file 2 takes role 1, file 1 is the spare */
	cycle(a, 2); /* and back */
	assert_string_equal(before.members[0].path, files[0]);
	assert_string_equal(before.members[1].path, files[1]);
	assert_string_equal(before.spares[0].path, files[2]);
	json = raid_status_json(&before);
	assert_non_null(json);
	assert_non_null(strstr(json, files[1]));
	free(json);
	assert_int_equal(raid_status(a, &after), 0);
	assert_string_equal(after.members[1].path, files[1]);
	assert_int_equal(after.members[1].state, RAID_MEMBER_REBUILDING);
	assert_int_equal(after.nr_spares, 1);
	assert_string_equal(after.spares[0].path, files[2]);
	assert_int_equal(raid_member_lookup(a, files[1]), 1);
	assert_int_equal(raid_member_lookup(a, files[2]), -ENOENT);
	raid_close(a);
}

struct poller {
	struct raid_array *a;
	atomic_bool stop;
	atomic_uint polls;
	unsigned bad; /* statuses with a path that is none of the files */
	char why[512];
};

/* Is every path of st one of the files, and in st's JSON? */
static bool
status_sane(const struct raid_status *st, char *why, size_t len)
{
	char *json = raid_status_json(st);
	bool ok = json != NULL;

	for (unsigned i = 0; ok && i < st->nr_members + st->nr_spares; i++) {
		const struct raid_member_status *ms =
			i < st->nr_members ? &st->members[i]
					   : &st->spares[i - st->nr_members];

		if (!ms->path) {
			continue;
		}
		if (which_file(ms->path) < 0 || !strstr(json, ms->path)) {
			snprintf(why, len, "entry %u: path '%.200s'", i,
				 ms->path);
			ok = false;
		}
	}
	free(json);
	return ok;
}

/* Status and lookups, as fast as they come, until told to stop. */
static void *
poll_main(void *arg)
{
	struct poller *p = arg;
	struct raid_status *st = malloc(sizeof(*st));

	assert(st);
	while (!atomic_load(&p->stop)) {
		int r1, r2;

		raid_status(p->a, st);
		if (!status_sane(st, p->why, sizeof(p->why))) {
			p->bad++;
		}
		r1 = raid_member_lookup(p->a, files[1]);
		r2 = raid_member_lookup(p->a, files[2]);
		if ((r1 != 1 && r1 != -ENOENT) || (r2 != 1 && r2 != -ENOENT)) {
			snprintf(p->why, sizeof(p->why), "lookup: %d %d", r1,
				 r2);
			p->bad++;
		}
		atomic_fetch_add(&p->polls, 1);
	}
	free(st);
	return NULL;
}

/*
 * Status and member lookup on a thread of their own while spares take
 * role 1 over and over: every path they see is one of the files, and the
 * array ends as the cycles left it, its data intact.
 */
static void
test_status_polled_during_takeovers(void **state)
{
	static uint8_t data[256 << 10], back[sizeof(data)];
	struct poller p = { .a = open_mirror() };
	struct raid_status st;
	pthread_t thread;
	int in = 2, out = 1; /* file taking role 1, file leaving it */

	(void)state;
	t_fill_random(data, sizeof(data));
	assert_int_equal(raid_pwrite(p.a, data, sizeof(data), 0, RAID_FUA), 0);
	assert_int_equal(pthread_create(&thread, NULL, poll_main, &p), 0);
	for (unsigned i = 0; i < CYCLES; i++) {
		unsigned seen = atomic_load(&p.polls);
		int t;

		cycle(p.a, out);
		t = in, in = out, out = t;
		/* The poller ran across this cycle: let it poll once more. */
		while (atomic_load(&p.polls) == seen) {
			sched_yield();
		}
	}
	atomic_store(&p.stop, true);
	assert_int_equal(pthread_join(thread, NULL), 0);
	if (p.bad) {
		print_error("%u bad statuses, the last: %s\n", p.bad, p.why);
	}
	assert_int_equal(p.bad, 0);
	assert_true(atomic_load(&p.polls) >= CYCLES);
	assert_int_equal(raid_status(p.a, &st), 0);
	assert_string_equal(st.members[0].path, files[0]);
	assert_string_equal(st.members[1].path, files[out]);
	assert_int_equal(st.members[1].state, RAID_MEMBER_REBUILDING);
	assert_int_equal(st.nr_spares, 1);
	assert_string_equal(st.spares[0].path, files[in]);
	assert_int_equal(raid_pread(p.a, back, sizeof(back), 0, 0), 0);
	assert_memory_equal(back, data, sizeof(data));
	raid_close(p.a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_status_paths_outlive_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_status_polled_during_takeovers, setup, teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
