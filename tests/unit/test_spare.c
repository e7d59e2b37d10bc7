/*
 * test_spare.c: spares (src/spare.c) over real files: an array made by
 * raid_create, opened by raid_open with spare= or given one by
 * raid_add_member; every superblock read back with raid_examine.
 *
 * Proves: a spare's superblock is md's (role 0xffff, the array's UUID,
 * its own dev_number in every role table, the events of the others); a
 * member carrying another array's superblock, one too small, and spares
 * in raw mode are refused; a spare takes a missing or failed role as
 * rebuilding with md's fields (role, feature 0x2, recovery_offset 0);
 * the engine's checkpoint and end write what md writes; a restart
 * resumes at the checkpoint; status and JSON list spares.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "io/batch.h"
#include "superblock.h"
#include "sync.h"
#include "util.h"

#define MiB	     (1u << 20)
#define MEMBER_BYTES (32 * MiB)
#define MAX_FILES    11
#define DEV_NONE     UINT32_MAX

static char dir[64];
static bool open_degraded; /* open_array gives degraded=ok */
static char files[MAX_FILES][96];

/* files[i]: a sparse file of `bytes` in a fresh folder. */
static void
make_file(unsigned i, uint64_t bytes)
{
	int fd;

	snprintf(files[i], sizeof(files[i]), "%s/m%u.img", dir, i);
	fd = open(files[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, bytes), 0);
	close(fd);
}

static int
setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/nbdraid-spare-XXXXXX");
	assert_non_null(mkdtemp(dir));
	for (unsigned i = 0; i < MAX_FILES; i++) {
		make_file(i, MEMBER_BYTES);
	}
	return t_setup(state);
}

static int
teardown(void **state)
{
	(void)state;
	for (unsigned i = 0; i < MAX_FILES; i++) {
		unlink(files[i]);
	}
	rmdir(dir);
	return 0;
}

/* An md array of `level` on files[first .. first + n). */
static void
create(int level, unsigned first, unsigned n)
{
	char *members[MAX_FILES];
	struct raid_create_spec spec = { .level = level,
					 .chunk_bytes = 64 << 10,
					 .name = "spare",
					 .homehost = "test",
					 .minor = 2,
					 .members = members,
					 .nr_members = n };
	struct raid_create_result res;

	for (unsigned i = 0; i < n; i++) {
		members[i] = files[first + i];
	}
	assert_int_equal(raid_create(&spec, NULL, NULL, &res), 0);
}

/* Open files[0 .. n) (+ spare=files[s] unless s < 0); r is raid_open's. */
static int
open_array(unsigned n, int s, bool force, struct raid_array **a)
{
	struct raid_config cfg;
	int r;

	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	for (unsigned i = 0; i < n; i++) {
		raid_config_set(&cfg, "member", files[i]);
	}
	if (s >= 0) {
		raid_config_set(&cfg, "spare", files[s]);
	}
	if (force) {
		raid_config_set(&cfg, "force", "true");
	}
	if (open_degraded) {
		raid_config_set(&cfg, "degraded", "ok");
	}
	t_errors[0] = '\0';
	r = raid_open(&cfg, a);
	raid_config_free(&cfg);
	return r;
}

static void
examine(unsigned i, struct raid_examine *ex)
{
	char why[160];

	assert_int_equal(raid_examine(files[i], ex, why, sizeof(why)), 0);
}

/* A blank file given as spare= gets md's spare superblock. */
static void
test_spare_written_on_blank_member(void **state)
{
	struct raid_examine m0, sp;
	struct raid_status st;
	struct raid_array *a;
	char *json;

	(void)state;
	create(5, 0, 3);
	assert_int_equal(open_array(3, 3, false, &a), 0);
	examine(0, &m0);
	examine(3, &sp);
	assert_memory_equal(sp.uuid, m0.uuid, 16);
	assert_memory_not_equal(sp.device_uuid, m0.device_uuid, 16);
	assert_int_equal(sp.role, RAID_ROLE_SPARE);
	assert_int_equal(sp.dev_number, 3); /* first entry unused */
	assert_int_equal(m0.roles[3], RAID_ROLE_SPARE);
	assert_int_equal(sp.events, m0.events);
	assert_int_equal(sp.data_offset, m0.data_offset);
	assert_int_equal(sp.used_sectors, m0.used_sectors);
	assert_int_equal(sp.super_offset, m0.super_offset);
	assert_int_equal(sp.feature_map & 0x2, 0);
	raid_status(a, &st);
	assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
	assert_int_equal(st.nr_spares, 1);
	assert_int_equal(st.spares[0].state, RAID_MEMBER_SPARE);
	assert_string_equal(st.spares[0].path, files[3]);
	json = raid_status_json(&st);
	assert_non_null(strstr(json, "{\"role\":null,\"path\":\""));
	assert_non_null(strstr(json, "\"state\":\"spare\""));
	free(json);
	raid_close(a);
	/* Again: its superblock is kept; as member= it is a spare too. */
	assert_int_equal(open_array(3, 3, false, &a), 0);
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, 1);
	raid_close(a);
	assert_int_equal(open_array(4, -1, false, &a), 0);
	raid_status(a, &st);
	assert_int_equal(st.nr_members, 3);
	assert_int_equal(st.nr_spares, 1);
	assert_string_equal(st.spares[0].path, files[3]);
	raid_close(a);
}

/* Another array's superblock, too small, raw mode: refused, named. */
static void
test_spare_refusals(void **state)
{
	struct raid_config cfg;
	struct raid_array *a;

	(void)state;
	create(1, 0, 2);
	create(1, 4, 2); /* another array on files 4 and 5 */
	assert_true(open_array(2, 4, false, &a) < 0);
	assert_non_null(strstr(t_errors, "carries the superblock of array"));
	assert_non_null(strstr(t_errors, "not overwritten without force"));
	assert_int_equal(open_array(2, 4, true, &a), 0); /* force */
	raid_close(a);
	make_file(6, 4 * MiB);
	assert_true(open_array(2, 6, false, &a) < 0);
	assert_non_null(strstr(t_errors, "too small"));
	make_file(6, MEMBER_BYTES);
	/*
	 * A member of this array in a role, given as spare=, is that member
	 * (md assembles every device alike): a spare that was rebuilt into a
	 * role is found there at the next start with the same settings.
	 * add of such a member is refused: it is no spare.
	 */
	{
		struct raid_status st;

		assert_int_equal(open_array(1, 1, false, &a), 0);
		assert_int_equal(raid_status(a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
		assert_int_equal(st.nr_spares, 0);
		raid_close(a);
		open_degraded = true;
		assert_int_equal(open_array(1, -1, false, &a), 0);
		open_degraded = false;
		assert_true(raid_add_member(a, files[1], false) < 0);
		assert_non_null(
			strstr(t_errors, "a member of this array (role 0x1)"));
		raid_close(a);
	}
	/* Raw mode: nowhere to record a spare. */
	raid_config_init(&cfg);
	raid_config_set(&cfg, "metadata", "none");
	raid_config_set(&cfg, "level", "1");
	raid_config_set(&cfg, "member", files[6]);
	raid_config_set(&cfg, "member", files[7]);
	raid_config_set(&cfg, "spare", files[3]);
	assert_int_equal(raid_config_check(&cfg), -EINVAL);
	assert_non_null(strstr(t_last_error, "spare= needs md superblocks"));
	raid_config_free(&cfg);
	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	raid_config_set(&cfg, "level", "1");
	raid_config_set(&cfg, "member", files[6]);
	raid_config_set(&cfg, "member", files[7]);
	raid_config_set(&cfg, "spare", files[3]);
	assert_true(raid_open(&cfg, &a) < 0);
	assert_non_null(strstr(t_errors, "raw mode"));
	raid_config_free(&cfg);
}

/*
 * raid_add_member into a failed role: the faulty member is removed, the
 * new one takes the role as rebuilding with md's fields; a checkpoint and
 * the end write what md writes; a restart resumes at the checkpoint.
 */
static void
test_spare_add_takes_failed_role(void **state)
{
	struct raid_examine m0, nw, old;
	struct raid_member *m;
	struct raid_array *a;

	(void)state;
	create(5, 0, 3);
	assert_int_equal(open_array(3, -1, false, &a), 0);
	assert_int_equal(raid_fail_member(a, 1, "test"), 0);
	assert_int_equal(raid_add_member(a, files[3], false), 0);
	m = &a->members[1];
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_REBUILDING);
	assert_string_equal(m->path, files[3]);
	assert_int_equal(atomic_load(&m->rebuilt), 0);
	assert_int_equal(a->meta->nr_spares, 0);
	examine(0, &m0);
	examine(3, &nw);
	examine(1, &old);
	assert_int_equal(nw.role, 1);
	assert_int_equal(nw.dev_number, 3);
	assert_true(nw.feature_map & 0x2);
	assert_int_equal(nw.recovery_offset, 0);
	assert_int_equal(nw.events, m0.events);
	assert_int_equal(m0.roles[3], 1);
	assert_int_equal(m0.roles[old.dev_number], RAID_ROLE_SPARE);
	assert_int_equal(array_state_now(a), RAID_ARRAY_REBUILDING);
	/* The engine's checkpoint, then a restart resumes there. */
	assert_int_equal(array_checkpoint_recovery(a, 1, 2 * MiB), 0);
	examine(3, &nw);
	assert_int_equal(nw.recovery_offset, 2 * MiB / 512);
	examine(0, &m0);
	assert_int_equal(nw.events, m0.events);
	raid_close(a);
	memcpy(files[7], files[1], sizeof(files[7]));
	memcpy(files[1], files[3], sizeof(files[1]));
	assert_int_equal(open_array(3, -1, false, &a), 0);
	m = &a->members[1];
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_REBUILDING);
	assert_int_equal(atomic_load(&m->rebuilt), 2 * MiB);
	/* The end: in sync, feature 0x2 gone, optimal. */
	assert_int_equal(array_recovery_done(a, 1), 0);
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_IN_SYNC);
	assert_int_equal(array_state_now(a), RAID_ARRAY_OPTIMAL);
	assert_non_null(strstr(t_errors, "event SpareActive"));
	examine(1, &nw);
	assert_int_equal(nw.feature_map & 0x2, 0);
	assert_int_equal(nw.role, 1);
	assert_int_equal(array_recovery_done(a, 1), -EINVAL);
	raid_close(a);
	memcpy(files[1], files[7], sizeof(files[1]));
	snprintf(files[7], sizeof(files[7]), "%s/m7.img", dir);
}

/* A member failing with a spare present: the spare takes its role. */
static void
test_spare_taken_when_member_fails(void **state)
{
	struct raid_status st;
	struct raid_array *a;

	(void)state;
	create(1, 0, 2);
	assert_int_equal(open_array(2, 3, false, &a), 0);
	assert_int_equal(raid_fail_member(a, 0, "test"), 0);
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, 0);
	assert_int_equal(st.members[0].state, RAID_MEMBER_REBUILDING);
	assert_string_equal(st.members[0].path, files[3]);
	assert_int_equal(st.state, RAID_ARRAY_REBUILDING);
	assert_non_null(strstr(t_errors, "event MemberRemoved"));
	raid_close(a);
}

/*
 * A failure seen on a member that a spare has replaced since (a batch
 * queued to it, answered after the swap) must not fail the spare: the
 * bench caught a client write failing the spare that had just taken the
 * slot of the member it had found faulty.
 */
static void
test_stale_failure_spares_the_spare(void **state)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct raid_member *m;
	struct raid_array *a;
	struct batch *b;
	unsigned gen;

	(void)state;
	create(1, 0, 2);
	assert_int_equal(open_array(2, -1, false, &a), 0);
	m = &a->members[0];
	assert_int_equal(raid_fail_member(a, 0, "test"), 0);
	gen = atomic_load(&m->gen);
	/* A write queued to the faulty member: not issued, -ENODEV. */
	b = batch_begin();
	assert_non_null(b);
	assert_int_equal(batch_write(b, m, buf, sizeof(buf), 1 << 20, 0), 0);
	assert_int_equal(batch_run(b), -ENODEV);
	assert_true((batch_failed_writes(b) >> 0) & 1);
	assert_int_equal(b->gen[0], gen);
	/* Meanwhile a spare takes the slot: another member holds it now. */
	assert_int_equal(raid_add_member(a, files[3], false), 0);
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_REBUILDING);
	assert_int_equal(atomic_load(&m->gen), gen + 1);
	/* The stale failure is no news: the spare stays... */
	assert_int_equal(array_fail_seen(a, 0, b->gen[0], "write error (test)",
					 FAIL_WRITE),
			 0);
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_REBUILDING);
	assert_string_equal(m->path, files[3]);
	/* ...and a failure seen on the spare itself fails it. */
	assert_int_equal(array_fail_seen(a, 0, gen + 1, "write error (test)",
					 FAIL_WRITE),
			 0);
	assert_int_equal(atomic_load(&m->state), RAID_MEMBER_FAULTY);
	raid_close(a);
}

/*
 * A member closed while another reference to its open file lives on (as
 * io_uring keeps one when a worker completed its last request, until the
 * ring is next used) is free at once: its lock goes with raid_close, not
 * with that reference.  The flake of test_spare_taken_when_member_fails:
 * raid_create's io_uring kept a member's lock, and the next open found
 * it "in use by another nbdraid" (1 run in 300).
 */
static void
test_closed_member_is_free_at_once(void **state)
{
	struct raid_array *a;
	int held;

	(void)state;
	create(1, 0, 2);
	assert_int_equal(open_array(2, -1, false, &a), 0);
	held = dup(a->members[0].fd); /* the ring's reference, as it were */
	assert_true(held >= 0);
	raid_close(a);
	assert_int_equal(open_array(2, -1, false, &a), 0);
	raid_close(a);
	close(held);
}

/* A degraded array started with a spare takes it at once. */
static void
test_spare_taken_at_start_when_degraded(void **state)
{
	struct raid_config cfg;
	struct raid_array *a;

	(void)state;
	create(5, 0, 3);
	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	raid_config_set(&cfg, "member", files[0]);
	raid_config_set(&cfg, "member", files[2]);
	raid_config_set(&cfg, "degraded", "ok");
	raid_config_set(&cfg, "spare", files[3]);
	assert_int_equal(raid_open(&cfg, &a), 0);
	assert_int_equal(atomic_load(&a->members[1].state),
			 RAID_MEMBER_REBUILDING);
	assert_string_equal(a->members[1].path, files[3]);
	raid_close(a);
	raid_config_free(&cfg);
}

/* Move member i's (1.2) superblock's data offset to `sectors`; its size
 * kept within the data area that leaves (as in a superblock of before the
 * array grew). */
static void
move_data_offset(unsigned i, uint64_t sectors)
{
	static uint8_t buf[4096];
	struct md_sb sb;
	char why[160];
	int fd = open(files[i], O_RDWR);
	off_t size = lseek(fd, 0, SEEK_END);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 8 * 512), sizeof(buf));
	assert_int_equal(md_sb_decode(buf, sizeof(buf), &sb, why, sizeof(why)),
			 0);
	sb.data_offset = sectors;
	sb.data_size = (uint64_t)size / 512 - sectors;
	sb.size = MIN(sb.size, sb.data_size);
	md_sb_encode(&sb, buf);
	assert_int_equal(pwrite(fd, buf, sizeof(buf), 8 * 512), sizeof(buf));
	close(fd);
}

/* The bytes of files[i] at [off, off + len). */
static void
read_file(unsigned i, void *buf, uint64_t len, uint64_t off)
{
	int fd = open(files[i], O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/*
 * A spare whose own superblock puts its data elsewhere than the member it
 * replaces (md-made arrays' members may differ: md keeps a data offset per
 * device): once it takes the role, the role's data offset is the spare's
 * own, so the recovery and every write after it land where its superblock
 * says, and the array reads back byte-exact, now, from the spare's file
 * at its own offset, and after a restart without the failed member.
 */
static void
test_spare_keeps_its_data_offset(void **state)
{
	static uint8_t model[MEMBER_BYTES], got[MEMBER_BYTES];
	struct raid_examine ex, sp;
	struct raid_array *a;
	uint64_t size, more = 5 * MiB;
	char cmd[256], line[256];
	bool agrees = false;
	FILE *out;

	(void)state;
	create(1, 0, 2);
	make_file(2, MEMBER_BYTES + 2 * MiB); /* room for the later offset */
	assert_int_equal(open_array(2, 2, false, &a), 0);
	raid_close(a);
	examine(0, &ex);
	assert_int_equal(ex.data_offset, 2048);
	move_data_offset(2, 4096);
	/* Its own superblock, kept: a spare of this array already. */
	assert_int_equal(open_array(2, 2, false, &a), 0);
	assert_non_null(strstr(t_errors, "its superblock kept"));
	size = a->size;
	t_fill_random(model, size);
	assert_int_equal(raid_pwrite(a, model, size, 0, 0), 0);
	assert_int_equal(raid_fail_member(a, 1, "test"), 0);
	assert_string_equal(a->members[1].path, files[2]);
	assert_int_equal(a->g.data_offset[1], 4096 * 512);
	assert_int_equal(sync_run_due(a), 0);
	assert_int_equal(atomic_load(&a->members[1].state),
			 RAID_MEMBER_IN_SYNC);
	t_fill_random(model + more, MiB);
	assert_int_equal(raid_pwrite(a, model + more, MiB, more, 0), 0);
	assert_int_equal(raid_pread(a, got, size, 0, 0), 0);
	assert_memory_equal(got, model, size);
	assert_int_equal(raid_flush(a), 0);
	raid_close(a);
	/* The spare's own file, at its own data offset. */
	read_file(2, got, size, 4096 * 512);
	assert_memory_equal(got, model, size);
	examine(2, &sp);
	assert_int_equal(sp.data_offset, 4096);
	assert_int_equal(sp.role, 1);
	/* mdadm reads it the same way, where it is installed. */
	snprintf(cmd, sizeof(cmd), "mdadm --examine %s 2>/dev/null", files[2]);
	out = popen(cmd, "r");
	while (out && fgets(line, sizeof(line), out)) {
		agrees |= strstr(line, "Data Offset : 4096 sectors") != NULL;
	}
	if (out && pclose(out) == 0) {
		assert_true(agrees);
	}
	/* A restart without the failed member reads the same bytes. */
	memcpy(files[1], files[2], sizeof(files[1]));
	assert_int_equal(open_array(2, -1, false, &a), 0);
	assert_int_equal(raid_pread(a, got, size, 0, 0), 0);
	assert_memory_equal(got, model, size);
	raid_close(a);
	snprintf(files[1], sizeof(files[1]), "%s/m1.img", dir);
}

/* The first `len` bytes of files[i], hashed (FNV-1a). */
static uint64_t
file_hash(unsigned i, uint64_t len)
{
	static uint8_t buf[1 * MiB];
	uint64_t h = 14695981039346656037ull;

	assert_true(len <= sizeof(buf));
	read_file(i, buf, len, 0);
	for (uint64_t k = 0; k < len; k++) {
		h = (h ^ buf[k]) * 1099511628211ull;
	}
	return h;
}

/* RAID 1 on files 0 and 1, member= or spare= each of files[2 .. end). */
static int
open_with_spares(unsigned first, unsigned end, bool as_member,
		 struct raid_array **a)
{
	struct raid_config cfg;
	int r;

	raid_config_init(&cfg);
	raid_config_set(&cfg, "io", "psync");
	raid_config_set(&cfg, "member", files[0]);
	raid_config_set(&cfg, "member", files[1]);
	for (unsigned i = first; i < end; i++) {
		raid_config_set(&cfg, as_member ? "member" : "spare", files[i]);
	}
	t_errors[0] = '\0';
	r = raid_open(&cfg, a);
	raid_config_free(&cfg);
	return r;
}

/*
 * Spares past RAID_MAX_SPARES (8): add of a ninth is refused (ENOSPC,
 * "8 spares already") and nothing is written to it; nine spares of the
 * array found among member= are eight kept, the ninth left out, named,
 * not written.
 */
static void
test_spare_limit(void **state)
{
	struct raid_status st;
	struct raid_array *a;
	uint64_t h;

	(void)state;
	create(1, 0, 2);
	assert_int_equal(open_with_spares(2, 10, false, &a), 0);
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, RAID_MAX_SPARES);
	h = file_hash(10, MiB);
	assert_int_equal(raid_add_member(a, files[10], false), -ENOSPC);
	assert_non_null(strstr(t_errors, files[10]));
	assert_non_null(strstr(t_errors, "the array has 8 spares already"));
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, RAID_MAX_SPARES);
	raid_close(a);
	assert_int_equal(file_hash(10, MiB), h);

	/* A ninth spare superblock of this array: files[10] enlisted while
	 * files[2] was not given (its table entry stays a spare's). */
	assert_int_equal(open_with_spares(3, 11, false, &a), 0);
	raid_close(a);
	examine(10, &(struct raid_examine){ 0 });
	h = file_hash(10, MiB);
	assert_int_equal(open_with_spares(2, 11, true, &a), 0);
	assert_non_null(strstr(t_errors, files[10]));
	assert_non_null(strstr(
		t_errors, "a spare, but nbdraid keeps at most 8: left out"));
	raid_status(a, &st);
	assert_int_equal(st.nr_members, 2);
	assert_int_equal(st.nr_spares, RAID_MAX_SPARES);
	for (unsigned k = 0; k < st.nr_spares; k++) {
		assert_string_equal(st.spares[k].path, files[2 + k]);
	}
	raid_close(a);
	assert_int_equal(file_hash(10, MiB), h);
}

/*
 * A spare of this array whose own superblock's data area cannot hold the
 * array's used size (a superblock of before the array grew: its data
 * further in, its own size within what is left) is refused by name, and
 * nothing is written to it: given to add (EEXIST, not overwritten
 * without force), and found among member= (EINVAL: its size is not the
 * array's; the array not opened).
 * With members of 4 KiB blocks, a spare whose own data offset is not a
 * multiple of them is refused (EEXIST) by name; at the array's block size
 * the same spare is added, its superblock kept.
 */
static void
test_spare_own_data_area_refused(void **state)
{
	struct raid_status st;
	struct raid_array *a;
	char want[512];
	uint32_t align;
	uint64_t h;

	(void)state;
	create(1, 0, 2);
	make_file(3, MEMBER_BYTES + 2 * MiB);
	assert_int_equal(open_array(2, 2, false, &a), 0);
	raid_close(a);
	assert_int_equal(open_array(2, 3, false, &a), 0);
	raid_close(a);
	move_data_offset(2, 8192);
	snprintf(want, sizeof(want),
		 "spare %s: 33554432 bytes is too small: the array needs data "
		 "offset 4194304 + used size ",
		 files[2]);
	h = file_hash(2, MiB);
	assert_int_equal(open_array(2, -1, false, &a), 0);
	assert_int_equal(raid_add_member(a, files[2], false), -EEXIST);
	assert_non_null(strstr(t_errors, want));
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, 0);
	raid_close(a);
	assert_int_equal(file_hash(2, MiB), h);
	/* Among member=, its size is not the array's: refused as such. */
	assert_int_equal(open_array(3, -1, false, &a), -EINVAL);
	snprintf(want, sizeof(want),
		 "member %s: superblock does not match member %s's (used "
		 "device size differs)",
		 files[2], files[0]);
	assert_non_null(strstr(t_errors, want));
	assert_int_equal(file_hash(2, MiB), h);

	/* Its data at sector 2049: a multiple of 512 bytes, not of 4096. */
	move_data_offset(3, 2049);
	h = file_hash(3, MiB);
	assert_int_equal(open_array(2, -1, false, &a), 0);
	align = a->discard_align;
	a->discard_align = 4096; /* what members of 4 KiB blocks make it */
	assert_int_equal(raid_add_member(a, files[3], false), -EEXIST);
	snprintf(want, sizeof(want),
		 "spare %s: data offset 1049088 is not a multiple of the "
		 "members' block size 4096",
		 files[3]);
	assert_non_null(strstr(t_errors, want));
	assert_int_equal(file_hash(3, MiB), h);
	a->discard_align = align;
	assert_int_equal(raid_add_member(a, files[3], false), 0);
	assert_non_null(strstr(t_errors, "its superblock kept"));
	raid_status(a, &st);
	assert_int_equal(st.nr_spares, 1);
	raid_close(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_spare_written_on_blank_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spare_refusals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_spare_add_takes_failed_role, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_spare_taken_when_member_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_spare_taken_at_start_when_degraded, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_stale_failure_spares_the_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_closed_member_is_free_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_spare_keeps_its_data_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spare_limit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_spare_own_data_area_refused, setup, teardown),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
