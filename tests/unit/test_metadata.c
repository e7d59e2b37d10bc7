/*
 * test_metadata.c: assembly from md superblocks (src/metadata.c) and the
 * clean/active state in them (src/array_state.c), over memory members.
 *
 * The members carry the superblocks mdadm itself wrote (tests/data/md),
 * at the places mdadm put them, given in a shuffled order: the array must
 * come out as md sees it (size, level, layout, the member in each role),
 * read and write byte-exact, and carry md's state across writes, the
 * clean delay and close.  Then every refusal, each naming the member and
 * the reason, made by editing those superblocks as a fault would.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "array.h"
#include "helpers.h"
#include "md_data.h"
#include "mem_backend.h"
#include "metadata.h"
#include "superblock.h"
#include "sync.h"
#include "util.h"

#define MiB (1u << 20)

/* An md array over memory members: the superblocks of a case, shuffled. */
struct md_array {
	struct md_case c;
	struct raid_config cfg;
	struct raid_member *m;
	unsigned n;			     /* members made */
	unsigned omit;			     /* the last ones made, not given */
	unsigned nr;			     /* members the array kept */
	unsigned given[MD_DATA_MAX_MEMBERS]; /* position of mdadm's member d */
	/* mdadm's member d's memory (assembly reorders x->m by role). */
	struct mem_member *mm[MD_DATA_MAX_MEMBERS];
	/* The members not given, out of x->m (assembly may use those slots
	 * as its own), freed by md_close. */
	struct raid_member omitted[MD_DATA_MAX_MEMBERS];
	unsigned nr_omitted;
	struct raid_array *a;
};

/* The bytes at a sector of mdadm's member d. */
static uint8_t *
at_sector(struct md_array *x, unsigned d, int64_t sector)
{
	return x->mm[d]->data + sector * RAID_SECTOR_BYTES;
}

/* Members of the case's size, each holding mdadm's member d's blocks. */
static void
md_members(struct md_array *x, const char *name)
{
	md_case_load(name, &x->c);
	raid_config_init(&x->cfg);
	x->n = x->c.members;
	x->m = mem_members_create(x->n, x->c.member_bytes);
	for (unsigned d = 0; d < x->n; d++) {
		x->given[d] = (d + 1) % x->n; /* a shuffle: roles rotated */
	}
	for (unsigned d = 0; d < x->n; d++) {
		x->mm[d] = mem_of(&x->m[x->given[d]]);
		memcpy(at_sector(x, d, x->c.sb_sector), x->c.sb[d],
		       MD_SB_BYTES);
		if (x->c.bitmap) {
			memcpy(at_sector(x, d,
					 x->c.sb_sector + x->c.bitmap_offset),
			       x->c.bm[d], MD_SB_BYTES);
		}
	}
}

static int
md_assemble(struct md_array *x)
{
	x->nr = x->n - x->omit;
	for (unsigned i = x->nr; i < x->n; i++) {
		if (x->m[i].priv) {
			x->omitted[x->nr_omitted++] = x->m[i];
			memset(&x->m[i], 0, sizeof(x->m[i]));
		}
	}
	t_last_error[0] = '\0';
	t_errors[0] = '\0';
	return array_assemble(&x->cfg, x->m, &x->nr, x->n + MEM_MEMBERS_ROOM,
			      &x->a);
}

static void
md_close(struct md_array *x)
{
	raid_close(x->a);
	x->a = NULL;
	mem_members_free(x->m, x->n);
	x->m = NULL;
	for (unsigned i = 0; i < x->nr_omitted; i++) {
		free(mem_of(&x->omitted[i])->data);
		free(mem_of(&x->omitted[i]));
		free(x->omitted[i].path);
	}
	x->nr_omitted = 0;
	raid_config_free(&x->cfg);
}

/*
 * A restart: the array closed, fresh members holding the same bytes (as
 * nbdkit opens the files again), given in the same order.
 */
static void
md_restart(struct md_array *x)
{
	struct raid_member *m = mem_members_create(x->n, x->c.member_bytes);

	raid_close(x->a);
	x->a = NULL;
	for (unsigned d = 0; d < x->n; d++) {
		struct mem_member *mm = mem_of(&m[x->given[d]]);

		memcpy(mm->data, x->mm[d]->data, x->c.member_bytes);
		x->mm[d] = mm;
	}
	mem_members_free(x->m, x->n);
	x->m = m;
}

/* The superblock of mdadm's member d, decoded from where it is now. */
static void
sb_now(struct md_array *x, unsigned d, struct md_sb *sb)
{
	char why[160];

	assert_int_equal(md_sb_decode(at_sector(x, d, x->c.sb_sector),
				      MD_SB_BYTES, sb, why, sizeof(why)),
			 0);
}

/* Edit member d's superblock as a fault would, checksum kept right. */
static void
sb_edit(struct md_array *x, unsigned d, void (*edit)(struct md_sb *sb))
{
	static struct md_sb sb;

	sb_now(x, d, &sb);
	edit(&sb);
	md_sb_encode(&sb, at_sector(x, d, x->c.sb_sector));
}

/* What mdadm says the array's size is (RAID 0: it prints none). */
static uint64_t
md_array_bytes(const struct md_case *c)
{
	char val[128];
	struct md_sb sb;

	if (md_examine(c->examine[0], "Array Size", val, sizeof(val))) {
		return strtoull(val, NULL, 10) * 1024;
	}
	assert_int_equal(
		md_sb_decode(c->sb[0], MD_SB_BYTES, &sb, val, sizeof(val)), 0);
	return c->members * ((sb.data_size / sb.chunksize) * sb.chunksize) *
	       RAID_SECTOR_BYTES;
}

/*
 * Every array mdadm made assembles from its members in any order: md's
 * size, level and layout, and each role on the member mdadm gave it; it
 * reads back what it writes.
 */
static void
test_metadata_assembles_mdadm_arrays(void **state)
{
	static struct md_array x;
	uint8_t *buf = malloc(MiB), *got = malloc(MiB);

	(void)state;
	for (unsigned k = 0; k < md_case_count; k++) {
		struct raid_info info;
		char val[128];

		md_members(&x, md_case_names[k]);
		if (md_assemble(&x) != 0) {
			print_error("%s: %s\n", x.c.name, t_last_error);
			fail();
		}
		raid_get_info(x.a, &info);
		assert_int_equal(info.size, md_array_bytes(&x.c));
		md_examine(x.c.examine[0], "Raid Level", val, sizeof(val));
		assert_int_equal(info.level, atoi(val + 4));
		if (md_examine(x.c.examine[0], "Layout", val, sizeof(val)) &&
		    info.level == 5) {
			assert_string_equal(info.layout, val);
		}
		assert_int_equal(x.nr, x.c.members);
		for (unsigned d = 0; d < x.n; d++) {
			/* Role d is the memory member that got d's blocks. */
			assert_ptr_equal(x.a->members[d].priv, x.mm[d]);
		}
		t_fill_random(buf, MiB);
		assert_int_equal(raid_pwrite(x.a, buf, MiB, 4096 + 17, 0), 0);
		assert_int_equal(raid_pread(x.a, got, MiB, 4096 + 17, 0), 0);
		assert_memory_equal(got, buf, MiB);
		md_close(&x);
	}
	free(buf);
	free(got);
}

/*
 * md's state: the first write marks every superblock active (resync
 * offset 0, events + 1, written with FUA) before it returns; 200 ms after
 * the last write the members are flushed and marked clean (events + 1);
 * a write then marks active again; close marks clean.
 */
static void
test_metadata_active_then_clean(void **state)
{
	static struct md_array x;
	struct md_sb sb;
	uint64_t events0, t;
	char buf[4096] = { 1 };

	(void)state;
	md_members(&x, "raid5-ls-x4");
	assert_int_equal(md_assemble(&x), 0);
	sb_now(&x, 0, &sb);
	events0 = sb.events;
	assert_int_equal(sb.resync_offset, MD_RESYNC_DONE);
	assert_int_equal(raid_pwrite(x.a, buf, sizeof(buf), 0, 0), 0);
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		assert_int_equal(sb.resync_offset, 0);
		assert_int_equal(sb.events, events0 + 1);
		assert_true(x.mm[d]->fua_writes >= 1);
	}
	/* Not before the delay, nor while a write is in flight. */
	t = atomic_load(&x.a->meta->last_write_ns);
	assert_true(state_tick(x.a, t + META_CLEAN_DELAY_NS / 2) > 0);
	atomic_fetch_add(&x.a->meta->writes, 1);
	assert_true(state_tick(x.a, t + 2 * META_CLEAN_DELAY_NS) > 0);
	atomic_fetch_sub(&x.a->meta->writes, 1);
	sb_now(&x, 0, &sb);
	assert_int_equal(sb.resync_offset, 0);
	for (unsigned d = 0; d < x.n; d++) {
		x.mm[d]->count[IO_FLUSH] = 0;
	}
	assert_int_equal(state_tick(x.a, t + META_CLEAN_DELAY_NS), 0);
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		assert_int_equal(sb.resync_offset, MD_RESYNC_DONE);
		assert_int_equal(sb.events, events0 + 2);
		assert_true(x.mm[d]->count[IO_FLUSH] >= 1);
	}
	/* Active again for the next write; clean again at close. */
	assert_int_equal(raid_zero(x.a, 100, 5000, 0), 0);
	sb_now(&x, 1, &sb);
	assert_int_equal(sb.resync_offset, 0);
	assert_int_equal(sb.events, events0 + 3);
	raid_close(x.a);
	x.a = NULL;
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		assert_int_equal(sb.resync_offset, MD_RESYNC_DONE);
		assert_int_equal(sb.events, events0 + 4);
	}
	md_close(&x);
}

static void
make_active(struct md_sb *sb)
{
	sb->resync_offset = 0;
}

/*
 * An array found active (not shut down cleanly) stays active: it needs
 * md's resync, which marking it clean would erase.
 */
static void
test_metadata_found_active_stays_active(void **state)
{
	static struct md_array x;
	struct md_sb sb;
	char buf[512] = { 7 };

	(void)state;
	md_members(&x, "raid1-x2-v1.0");
	for (unsigned d = 0; d < x.n; d++) {
		sb_edit(&x, d, make_active);
	}
	assert_int_equal(md_assemble(&x), 0);
	assert_non_null(strstr(t_errors, "not shut down cleanly"));
	assert_int_equal(raid_pwrite(x.a, buf, sizeof(buf), 0, 0), 0);
	assert_int_equal(state_tick(x.a, UINT64_MAX / 2), 0);
	raid_close(x.a);
	x.a = NULL;
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		assert_int_equal(sb.resync_offset, 0);
	}
	md_close(&x);
}

/*
 * An md bitmap is marked stale on every member before the first write, so
 * md resyncs everything after an unclean stop and no bit calls a written
 * chunk clean.
 */
static void
test_metadata_bitmap_marked_stale(void **state)
{
	static const char *const cases[] = { "raid1-x2-bitmap",
					     "raid10-f2-x3-bitmap",
					     "raid5-ra-x3-v1.0-bitmap" };
	static struct md_array x;
	char buf[512] = { 3 };

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		md_members(&x, cases[k]);
		assert_int_equal(md_assemble(&x), 0);
		for (unsigned d = 0; d < x.n; d++) {
			assert_false(md_bitmap_is_stale(
				at_sector(&x, d,
					  x.c.sb_sector + x.c.bitmap_offset),
				MD_SB_BYTES));
		}
		assert_int_equal(raid_pwrite(x.a, buf, sizeof(buf), 512, 0), 0);
		for (unsigned d = 0; d < x.n; d++) {
			assert_true(md_bitmap_is_stale(
				at_sector(&x, d,
					  x.c.sb_sector + x.c.bitmap_offset),
				MD_SB_BYTES));
		}
		md_close(&x);
	}
}

/* ---- refusals ---------------------------------------------------------- */

/* Assembly is refused with an error that says `why`. */
static void
expect_refused(struct md_array *x, const char *why)
{
	int r = md_assemble(x);

	if (r == 0 || !strstr(t_errors, why)) {
		print_error("%s: assembled %d, errors '%s', want '%s'\n",
			    x->c.name, r, t_errors, why);
		fail();
	}
	assert_null(x->a);
}

static void
bump_events(struct md_sb *sb)
{
	sb->events += 5;
}

static void
feature_unknown(struct md_sb *sb)
{
	sb->feature_map |= 0x4000;
}

static void
feature_ppl(struct md_sb *sb)
{
	sb->feature_map |= MD_FEATURE_PPL;
}

static void
other_uuid(struct md_sb *sb)
{
	sb->set_uuid[5] ^= 0xff;
}

static void
other_chunk(struct md_sb *sb)
{
	sb->chunksize *= 2;
}

static void
role_of_member0(struct md_sb *sb)
{
	sb->dev_number = 0;
}

static void
member3_faulty(struct md_sb *sb)
{
	sb->dev_roles[3] = MD_ROLE_FAULTY;
	sb->events += 1;
}

static void
recovering(struct md_sb *sb)
{
	sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
	sb->recovery_offset = 2048;
}

static void
recovering_unaligned(struct md_sb *sb)
{
	sb->feature_map |= MD_FEATURE_RECOVERY_OFFSET;
	sb->recovery_offset = 3000; /* 1.46 MiB: not a whole chunk */
}

/*
 * A member found being rebuilt (feature 0x2, current events) takes its
 * role as rebuilding, its frontier the recovery offset in whole chunks:
 * recovery resumes there, as md's does; the array reads and writes.
 */
static void
test_metadata_rebuilding_member_resumes(void **state)
{
	static struct md_array x;
	static const struct {
		const char *name;
		void (*edit)(struct md_sb *sb);
		uint64_t sectors;
	} cases[] = { { "raid1-x2-bitmap", recovering, 2048 },
		      { "raid5-ls-x4", recovering_unaligned, 3000 },
		      { "raid10-n2-x4-v1.1", recovering_unaligned, 3000 } };
	char buf[4096], got[4096];

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		struct raid_member *m;

		md_members(&x, cases[k].name);
		sb_edit(&x, 1, cases[k].edit);
		assert_int_equal(md_assemble(&x), 0);
		assert_non_null(strstr(t_errors, "recovery resumes there"));
		m = &x.a->members[1];
		assert_ptr_equal(m->priv, x.mm[1]);
		assert_int_equal(atomic_load(&m->state),
				 RAID_MEMBER_REBUILDING);
		assert_int_equal(
			atomic_load(&m->rebuilt),
			ROUND_DOWN(cases[k].sectors * RAID_SECTOR_BYTES,
				   x.a->chunk_bytes));
		assert_int_equal(atomic_load(&m->rebuilt) % x.a->chunk_bytes,
				 0);
		assert_int_equal(array_state_now(x.a), RAID_ARRAY_REBUILDING);
		t_fill_random(buf, sizeof(buf));
		assert_int_equal(raid_pwrite(x.a, buf, sizeof(buf), 8192, 0),
				 0);
		assert_int_equal(raid_pread(x.a, got, sizeof(got), 8192, 0), 0);
		assert_memory_equal(got, buf, sizeof(buf));
		md_close(&x);
	}
}

/* Each refusal names the member and the reason. */
static void
test_metadata_refusals(void **state)
{
	static struct md_array x;

	(void)state;
	/* A bad checksum. */
	md_members(&x, "raid5-ls-x4");
	at_sector(&x, 1, x.c.sb_sector)[40] ^= 1;
	expect_refused(&x, "checksum");
	md_close(&x);
	/* Members of another array. */
	md_members(&x, "raid5-ls-x4");
	sb_edit(&x, 2, other_uuid);
	expect_refused(&x, "of array UUID");
	md_close(&x);
	/* The same array, but a field differs. */
	md_members(&x, "raid5-ls-x4");
	sb_edit(&x, 3, other_chunk);
	expect_refused(&x, "chunk size differs");
	md_close(&x);
	/* Two members claim one role. */
	md_members(&x, "raid5-ls-x4");
	sb_edit(&x, 2, role_of_member0);
	expect_refused(&x, "both claim role 0");
	md_close(&x);
	/* Feature bits: unknown, and known but not honoured. */
	md_members(&x, "raid5-ls-x4");
	sb_edit(&x, 0, feature_unknown);
	expect_refused(&x, "feature bits 0x4000");
	md_close(&x);
	md_members(&x, "raid5-ls-x4");
	sb_edit(&x, 1, feature_ppl);
	expect_refused(&x, "'partial parity log'");
	md_close(&x);
	/*
	 * A member left behind: stale, so the array is degraded, in a role
	 * the superblocks still count in sync: only with degraded=ok.
	 */
	md_members(&x, "raid5-ls-x4");
	for (unsigned d = 0; d < 3; d++) {
		sb_edit(&x, d, bump_events);
	}
	expect_refused(&x, "role 3: the superblocks count a member in sync "
			   "there, and no member for it was given or could be "
			   "opened; degraded=ok starts without it");
	assert_non_null(strstr(t_errors, "stale (events 2"));
	md_close(&x);
	/* One missing. */
	md_members(&x, "raid10-n2-x4-v1.1");
	x.omit = 1; /* the last made (mdadm's member 2, given[2] = 3) */
	expect_refused(&x, "role 2: the superblocks count a member in sync");
	x.omit = 0;
	md_close(&x);
	/* Two missing from a RAID 5: not even with degraded=ok. */
	md_members(&x, "raid5-ls-x4");
	x.omit = 2; /* mdadm's members 1 and 2 (given[1] = 2, given[2] = 3) */
	x.cfg.degraded_ok = true;
	expect_refused(&x, "2 of 4 members missing (roles 1, 2): raid5 "
			   "cannot run without them");
	x.omit = 0;
	md_close(&x);
	/* Some members with a superblock, one without. */
	md_members(&x, "raid5-ls-x4");
	memset(at_sector(&x, 2, x.c.sb_sector), 0, MD_SB_BYTES);
	expect_refused(&x, "no md superblock, where the other members");
	md_close(&x);
}

/*
 * Superblocks that record a member as failed start degraded by themselves
 * (no degraded=ok: mdadm starts such an array without --run); the failed
 * member, given all the same, is left out and never written.
 */
static void
test_metadata_recorded_failure_starts_degraded(void **state)
{
	static struct md_array x;
	static uint8_t model[1 << 20], buf[1 << 20];
	struct raid_status st;
	struct md_sb before, after;

	(void)state;
	md_members(&x, "raid10-n2-x4-v1.1");
	for (unsigned d = 0; d < 3; d++) {
		sb_edit(&x, d, member3_faulty);
	}
	sb_now(&x, 3, &before);
	assert_int_equal(md_assemble(&x), 0);
	assert_non_null(strstr(t_errors, "recorded as failed in the array's "
					 "superblocks"));
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
	assert_int_equal(st.members[3].state, RAID_MEMBER_MISSING);
	assert_null(st.members[3].path);
	for (unsigned r = 0; r < 3; r++) {
		assert_int_equal(st.members[r].state, RAID_MEMBER_IN_SYNC);
	}
	t_fill_random(model, sizeof(model));
	assert_int_equal(raid_pwrite(x.a, model, sizeof(model), 0, 0), 0);
	assert_int_equal(raid_pread(x.a, buf, sizeof(buf), 0, 0), 0);
	assert_memory_equal(buf, model, sizeof(model));
	raid_close(x.a);
	x.a = NULL;
	sb_now(&x, 3, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	md_close(&x);
}

/* mdadm's member d's role in the array (its own superblock says). */
static unsigned
role_of(struct md_array *x, unsigned d, struct md_sb *sb)
{
	sb_now(x, d, sb);
	return sb->dev_roles[sb->dev_number];
}

/*
 * A member whose I/O fails is failed in the superblocks of every survivor
 * (its dev_roles entry faulty, events on) before the request that saw the
 * error is answered, and never touched again: its own superblock keeps
 * the array as it was, so a restart with every member given leaves it out,
 * as md does, and the data stays exact.
 */
static void
test_metadata_failure_recorded(void **state)
{
	static const char *const cases[] = { "raid5-ls-x4", "raid1-x2-v1.0",
					     "raid10-n2-x4-v1.1",
					     "raid5-ra-x3-v1.0-bitmap" };
	static struct md_array x;
	static uint8_t model[1 << 20], buf[1 << 20];

	(void)state;
	for (unsigned k = 0; k < ARRAY_SIZE(cases); k++) {
		const unsigned victim = 1; /* mdadm's member 1 */
		struct md_sb vsb, before[MD_DATA_MAX_MEMBERS], sb;
		struct raid_status st;
		unsigned role, ops;
		uint64_t len;

		md_members(&x, cases[k]);
		assert_int_equal(md_assemble(&x), 0);
		len = MIN(sizeof(model), x.a->size);
		t_fill_random(model, len);
		assert_int_equal(raid_pwrite(x.a, model, len, 0, 0), 0);
		role = role_of(&x, victim, &vsb);
		for (unsigned d = 0; d < x.n; d++) {
			sb_now(&x, d, &before[d]);
		}
		/* The member dies; the next write finds out. */
		x.mm[victim]->fail_always = true;
		x.mm[victim]->fail_errno = EIO;
		t_fill_random(model, len);
		assert_int_equal(raid_pwrite(x.a, model, len, 0, 0), 0);
		ops = x.mm[victim]->ops;
		for (unsigned d = 0; d < x.n; d++) {
			if (d == victim) {
				continue;
			}
			sb_now(&x, d, &sb); /* as the request is answered */
			assert_int_equal(sb.dev_roles[vsb.dev_number],
					 MD_ROLE_FAULTY);
			assert_true(sb.events > before[d].events);
		}
		assert_non_null(strstr(t_errors, "array degraded"));
		assert_int_equal(raid_status(x.a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
		assert_int_equal(st.members[role].state, RAID_MEMBER_FAULTY);
		/* It comes back to life: nothing is sent to it any more. */
		x.mm[victim]->fail_always = false;
		assert_int_equal(raid_pread(x.a, buf, len, 0, 0), 0);
		assert_memory_equal(buf, model, len);
		assert_int_equal(raid_flush(x.a), 0);
		raid_close(x.a);
		x.a = NULL;
		assert_int_equal(x.mm[victim]->ops, ops);
		sb_now(&x, victim, &sb);
		assert_memory_equal(&sb, &vsb, sizeof(sb));
		/* Every member given again: the failed one stays out. */
		md_restart(&x);
		assert_int_equal(md_assemble(&x), 0);
		assert_non_null(strstr(t_errors, "recorded as failed"));
		assert_int_equal(raid_status(x.a, &st), 0);
		assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
		assert_int_not_equal(st.members[role].state,
				     RAID_MEMBER_IN_SYNC);
		assert_int_equal(raid_pread(x.a, buf, len, 0, 0), 0);
		assert_memory_equal(buf, model, len);
		raid_close(x.a);
		x.a = NULL;
		sb_now(&x, victim, &sb);
		assert_memory_equal(&sb, &vsb, sizeof(sb));
		md_close(&x);
	}
}

/*
 * A parity array found dirty and degraded does not start (md: "cannot
 * start dirty degraded array") unless force=true; a dirty mirror does,
 * since any copy is as good as another.  A role merely not given needs
 * degraded=ok as well.
 */
static unsigned faulty_dev; /* a dev_number, for dev_faulty */

static void
dev_faulty(struct md_sb *sb)
{
	sb->dev_roles[faulty_dev] = MD_ROLE_FAULTY;
	sb->events += 1;
}

/* mdadm's member 3 failed in the others' superblocks; all found dirty. */
static void
dirty_member3_failed(struct md_array *x)
{
	struct md_sb sb;

	sb_now(x, 3, &sb);
	faulty_dev = sb.dev_number;
	for (unsigned d = 0; d < x->n; d++) {
		sb_edit(x, d, make_active);
		if (d != 3) {
			sb_edit(x, d, dev_faulty);
		}
	}
}

/* A dirty RAID 5 whose last member made is not given. */
static void
dirty_raid5_without_one(struct md_array *x)
{
	md_members(x, "raid5-ls-x4");
	for (unsigned d = 0; d < x->n; d++) {
		sb_edit(x, d, make_active);
	}
	x->omit = 1;
}

static void
test_metadata_dirty_degraded(void **state)
{
	static struct md_array x;
	static uint8_t buf[64 * 1024];
	struct raid_status st;

	(void)state;
	/* Recorded failure, dirty. */
	md_members(&x, "raid5-ls-x4");
	dirty_member3_failed(&x);
	expect_refused(&x, "cannot start dirty degraded array");
	md_close(&x);
	md_members(&x, "raid5-ls-x4");
	dirty_member3_failed(&x);
	x.cfg.force = true;
	assert_int_equal(md_assemble(&x), 0);
	assert_non_null(strstr(t_errors, "force=true: starting a dirty "
					 "degraded array"));
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
	assert_int_equal(raid_pread(x.a, buf, sizeof(buf), 0, 0), 0);
	md_close(&x);
	/* A member not given, dirty: degraded=ok is not enough... */
	md_members(&x, "raid5-ls-x4");
	for (unsigned d = 0; d < x.n; d++) {
		sb_edit(&x, d, make_active);
	}
	x.omit = 1;
	expect_refused(&x, "degraded=ok starts without it");
	x.omit = 0;
	md_close(&x); /* a refused assembly may have reordered them */
	dirty_raid5_without_one(&x);
	x.cfg.degraded_ok = true;
	expect_refused(&x, "cannot start dirty degraded array");
	x.omit = 0;
	md_close(&x);
	/* ...force=true as well. */
	dirty_raid5_without_one(&x);
	x.cfg.degraded_ok = true;
	x.cfg.force = true;
	assert_int_equal(md_assemble(&x), 0);
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
	x.omit = 0;
	md_close(&x);
	/* A dirty mirror missing a member: degraded=ok alone. */
	md_members(&x, "raid1-x2-v1.0");
	for (unsigned d = 0; d < x.n; d++) {
		sb_edit(&x, d, make_active);
	}
	x.omit = 1;
	x.cfg.degraded_ok = true;
	assert_int_equal(md_assemble(&x), 0);
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_DEGRADED);
	x.omit = 0;
	md_close(&x);
}

/*
 * A dirty RAID 5 with a member being rebuilt is degraded too, as md counts
 * it (raid5_run: a device not In_sync, recovery_offset or not): the
 * recovery would rebuild it from parity that may not match the data, so
 * it does not start without force=true, naming the role, and nothing is
 * written; force=true starts it, marked clean (mdadm --assemble --force).
 * A dirty mirror with a member being rebuilt starts: any copy will do.
 */
static void
dirty_rebuilding(struct md_array *x, const char *name)
{
	md_members(x, name);
	for (unsigned d = 0; d < x->n; d++) {
		sb_edit(x, d, make_active);
	}
	sb_edit(x, 1, recovering_unaligned);
}

static void
test_metadata_dirty_rebuilding(void **state)
{
	static struct md_array x;
	static uint8_t *before[MD_DATA_MAX_MEMBERS];
	struct raid_status st;

	(void)state;
	dirty_rebuilding(&x, "raid5-ls-x4");
	for (unsigned d = 0; d < x.n; d++) {
		before[d] = malloc(x.c.member_bytes);
		assert_non_null(before[d]);
		memcpy(before[d], x.mm[d]->data, x.c.member_bytes);
	}
	expect_refused(&x, "cannot start dirty degraded array");
	assert_non_null(strstr(t_errors, "role 1 being rebuilt"));
	for (unsigned d = 0; d < x.n; d++) {
		assert_memory_equal(x.mm[d]->data, before[d], x.c.member_bytes);
		free(before[d]);
	}
	md_close(&x);
	/* force=true: it starts, marked clean, the member still rebuilding. */
	dirty_rebuilding(&x, "raid5-ls-x4");
	x.cfg.force = true;
	assert_int_equal(md_assemble(&x), 0);
	assert_non_null(strstr(t_errors,
			       "force=true: starting a dirty "
			       "degraded array (role 1 being rebuilt)"));
	assert_int_equal(x.a->meta->resync_cp, MD_RESYNC_DONE);
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_REBUILDING);
	assert_int_equal(st.members[1].state, RAID_MEMBER_REBUILDING);
	md_close(&x);
	/* A mirror: no parity, no refusal. */
	dirty_rebuilding(&x, "raid10-n2-x4-v1.1");
	assert_int_equal(md_assemble(&x), 0);
	assert_int_equal(raid_status(x.a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_REBUILDING);
	md_close(&x);
}

/*
 * A member failed on a clean array, with no write after: its own
 * superblock, never written again, ends more than one event behind the
 * others (md's two updates: the failure, then the member leaving the
 * personality), so md and mdadm see it stale by the events alone, not as
 * a member that merely missed the last update.  Removal is one update.
 */
static void
test_metadata_failed_member_two_events_behind(void **state)
{
	static struct md_array x;
	struct md_sb sb, failed;
	uint64_t events0;
	unsigned df = 0;

	(void)state;
	md_members(&x, "raid5-ls-x4");
	assert_int_equal(md_assemble(&x), 0);
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		if (md_sb_role(&sb) == 1) {
			df = d;
		}
	}
	sb_now(&x, df, &failed);
	events0 = failed.events;
	assert_int_equal(raid_fail_member(x.a, 1, NULL), 0);
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		if (d == df) {
			assert_memory_equal(&sb, &failed, sizeof(sb));
			continue;
		}
		assert_int_equal(sb.events, events0 + 2);
		assert_int_equal(sb.dev_roles[failed.dev_number],
				 MD_ROLE_FAULTY);
		assert_int_equal(sb.resync_offset, MD_RESYNC_DONE);
	}
	assert_int_equal(raid_remove_member(x.a, 1), 0);
	raid_close(x.a);
	x.a = NULL;
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		if (d == df) {
			assert_memory_equal(&sb, &failed, sizeof(sb));
			continue;
		}
		assert_int_equal(sb.events, events0 + 3);
		assert_int_equal(sb.dev_roles[failed.dev_number],
				 MD_ROLE_SPARE);
	}
	md_close(&x);
}

static uint64_t resync_at; /* sectors, for resync_from */

static void
resync_from(struct md_sb *sb)
{
	sb->resync_offset = resync_at;
}

/* Garbage in the parity of stripe row s. */
static void
spoil_parity(struct md_array *x, uint64_t s)
{
	struct raid_loc l = { raid5_parity_member(&x->a->g, s), s };

	mem_of(&x->a->members[l.member])
		->data[geom_member_offset(&x->a->g, &l, 77)] ^= 0x3c;
}

/*
 * An array found dirty is resynced from its resync_offset (md's
 * recovery_cp), not before it; at the end it is owed nothing and a clean
 * stop writes resync_offset all ones.
 */
static void
test_metadata_resync_from_checkpoint(void **state)
{
	static struct md_array x;
	struct raid_check_result res;
	struct md_sb sb;
	uint64_t rows;

	(void)state;
	md_members(&x, "raid5-ls-x4");
	resync_at = 0;
	for (unsigned d = 0; d < x.n; d++) {
		sb_edit(&x, d, make_active);
	}
	assert_int_equal(md_assemble(&x), 0);
	rows = x.a->g.member_chunks;
	assert_true(rows > 8);
	spoil_parity(&x, 1);
	spoil_parity(&x, rows - 1);
	assert_int_equal(raid_check(x.a, &res), 0);
	assert_int_equal(res.mismatched, 2);
	assert_int_equal(sync_run_due(x.a), 0);
	assert_non_null(strstr(t_errors, "resync finished"));
	assert_int_equal(raid_check(x.a, &res), 0);
	assert_int_equal(res.mismatched, 0);
	raid_close(x.a);
	x.a = NULL;
	for (unsigned d = 0; d < x.n; d++) {
		sb_now(&x, d, &sb);
		assert_int_equal(sb.resync_offset, MD_RESYNC_DONE);
	}
	md_close(&x);
	/* From a checkpoint: what is before it is taken as in sync. */
	md_members(&x, "raid5-ls-x4");
	assert_int_equal(md_assemble(&x), 0);
	rows = x.a->g.member_chunks;
	resync_at = rows / 2 * x.a->chunk_bytes / RAID_SECTOR_BYTES;
	raid_close(x.a);
	x.a = NULL;
	for (unsigned d = 0; d < x.n; d++) {
		sb_edit(&x, d, resync_from);
	}
	md_restart(&x);
	assert_int_equal(md_assemble(&x), 0);
	spoil_parity(&x, 1);
	spoil_parity(&x, rows - 1);
	assert_int_equal(sync_run_due(x.a), 0);
	assert_non_null(strstr(t_errors, "resync resumed at"));
	assert_int_equal(raid_check(x.a, &res), 0);
	assert_int_equal(res.mismatched, 1);
	assert_int_equal(res.first[0], 1);
	md_close(&x);
}

/* Fill copy k of the 4 KiB at array offset off with byte v, directly. */
static void
plant_copy(struct raid_array *a, uint64_t off, unsigned k, uint8_t v,
	   unsigned *member)
{
	struct raid_loc locs[RAID_MAX_COPIES];
	uint64_t chunk = off >> a->g.chunk_shift;

	assert_true(a->layout->map(&a->g, chunk, locs) > k);
	memset(mem_of(&a->members[locs[k].member])->data +
		       geom_member_offset(&a->g, &locs[k],
					  off & (a->chunk_bytes - 1)),
	       v, 4096);
	*member = locs[k].member;
}

/*
 * Reads of a mirror owed a resync, as md's read_balance (choose_first):
 * a block whose two copies differ (the array found dirty) reads the first
 * copy every time, though the other copy's member is idle and the first's
 * busy, until the resync makes the second equal to it; the resync keeps
 * that value.  Below the resync's frontier (resync_offset) reads balance.
 */
static void
test_metadata_resync_reads_first_copy(void **state)
{
	static const char *const cases[] = { "raid1-x2-v1.0",
					     "raid10-n2-x4-v1.1" };
	static struct md_array x;
	uint8_t want[4096], buf[4096];
	unsigned first, second, reads;

	(void)state;
	memset(want, 0x5a, sizeof(want));
	for (unsigned c = 0; c < 2; c++) {
		struct raid_array *a;
		uint64_t off;

		md_members(&x, cases[c]);
		for (unsigned d = 0; d < x.n; d++) {
			sb_edit(&x, d, make_active);
		}
		assert_int_equal(md_assemble(&x), 0);
		a = x.a;
		off = 3 * a->chunk_bytes + 8192;
		plant_copy(a, off, 0, 0x5a, &first);
		plant_copy(a, off, 1, 0xa5, &second);
		/* The first copy's member busy, the second's idle. */
		atomic_store(&a->members[first].inflight, 1);
		for (unsigned i = 0; i < 100; i++) {
			assert_int_equal(
				raid_pread(a, buf, sizeof(buf), off, 0), 0);
			assert_memory_equal(buf, want, sizeof(buf));
		}
		atomic_store(&a->members[first].inflight, 0);
		/* The resync keeps the value the reads gave. */
		assert_int_equal(sync_run_due(a), 0);
		assert_non_null(strstr(t_errors, "resync finished"));
		atomic_store(&a->members[first].inflight, 1);
		reads = mem_of(&a->members[second])->count[IO_READ];
		for (unsigned i = 0; i < 20; i++) {
			assert_int_equal(
				raid_pread(a, buf, sizeof(buf), off, 0), 0);
			assert_memory_equal(buf, want, sizeof(buf));
		}
		/* Owed nothing now: they balance to the idle copy. */
		assert_int_equal(mem_of(&a->members[second])->count[IO_READ],
				 reads + 20);
		atomic_store(&a->members[first].inflight, 0);
		md_close(&x);
		/* Below the resync's frontier, reads balance. */
		md_members(&x, cases[c]);
		resync_at = 8 * x.c.member_bytes / 16 / RAID_SECTOR_BYTES;
		for (unsigned d = 0; d < x.n; d++) {
			sb_edit(&x, d, resync_from);
		}
		assert_int_equal(md_assemble(&x), 0);
		a = x.a;
		off = 3 * a->chunk_bytes + 8192;
		assert_true(off + 4096 < resync_at * RAID_SECTOR_BYTES);
		plant_copy(a, off, 0, 0x5a, &first);
		atomic_store(&a->members[first].inflight, 1);
		reads = mem_of(&a->members[second])->count[IO_READ];
		assert_int_equal(raid_pread(a, buf, sizeof(buf), off, 0), 0);
		assert_int_equal(mem_of(&a->members[second])->count[IO_READ],
				 reads + 1);
		atomic_store(&a->members[first].inflight, 0);
		md_close(&x);
	}
}

/* force=true takes a stale member back, as mdadm --assemble --force. */
static void
test_metadata_force_takes_stale_back(void **state)
{
	static struct md_array x;

	(void)state;
	md_members(&x, "raid5-ls-x4");
	for (unsigned d = 0; d < 3; d++) {
		sb_edit(&x, d, bump_events);
	}
	x.cfg.force = true;
	assert_int_equal(md_assemble(&x), 0);
	assert_int_equal(x.nr, 4);
	md_close(&x);
}

/* Settings given must agree with the superblocks; equal ones are fine. */
static void
test_metadata_settings_must_agree(void **state)
{
	static const struct {
		const char *key, *value, *why;
	} cases[] = {
		{ "level", "1",
		  "level=1 given, but the superblocks say raid5" },
		{ "layout", "ra", "layout=ra given" },
		{ "chunk", "128K", "chunk=131072 given" },
		{ "data-offset", "1024s", "data-offset=524288 bytes given" },
		{ "member-size", "8M", "member-size=8388608 bytes given" },
	};
	static struct md_array x;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		md_members(&x, "raid5-ls-x4");
		assert_int_equal(
			raid_config_set(&x.cfg, cases[i].key, cases[i].value),
			0);
		expect_refused(&x, cases[i].why);
		md_close(&x);
	}
	md_members(&x, "raid5-ls-x4");
	assert_int_equal(raid_config_set(&x.cfg, "level", "5"), 0);
	assert_int_equal(raid_config_set(&x.cfg, "layout", "left-symmetric"),
			 0);
	assert_int_equal(raid_config_set(&x.cfg, "chunk", "64K"), 0);
	assert_int_equal(raid_config_set(&x.cfg, "data-offset", "2048s"), 0);
	assert_int_equal(md_assemble(&x), 0);
	md_close(&x);
	/* metadata=none ignores superblocks; metadata=md requires them. */
	md_members(&x, "raid5-ls-x4");
	assert_int_equal(raid_config_set(&x.cfg, "metadata", "none"), 0);
	assert_int_equal(raid_config_set(&x.cfg, "level", "0"), 0);
	assert_int_equal(md_assemble(&x), 0);
	assert_null(x.a->meta);
	md_close(&x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_metadata_assembles_mdadm_arrays,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_active_then_clean,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_found_active_stays_active,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_failure_recorded, t_setup),
		cmocka_unit_test_setup(test_metadata_resync_from_checkpoint,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_dirty_degraded, t_setup),
		cmocka_unit_test_setup(test_metadata_dirty_rebuilding, t_setup),
		cmocka_unit_test_setup(test_metadata_resync_reads_first_copy,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_bitmap_marked_stale,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_refusals, t_setup),
		cmocka_unit_test_setup(test_metadata_rebuilding_member_resumes,
				       t_setup),
		cmocka_unit_test_setup(
			test_metadata_recorded_failure_starts_degraded,
			t_setup),
		cmocka_unit_test_setup(
			test_metadata_failed_member_two_events_behind, t_setup),
		cmocka_unit_test_setup(test_metadata_force_takes_stale_back,
				       t_setup),
		cmocka_unit_test_setup(test_metadata_settings_must_agree,
				       t_setup),
	};

	t_init();
	raid_set_log(t_capture_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
