/*
 * degraded.c: members failing and leaving the array (docs/degraded.md has
 * the states and every transition).
 *
 * DESIGN
 * A member I/O that fails twice (batch.c retries once) reaches the core's
 * request code, which calls array_fail(): under fail_lock, the member is
 * failed only if the array can do without it (the level's enough()); its
 * state becomes faulty (the data path stops issuing I/O to it from that
 * moment: batch_run checks every request's member), then its entry in the
 * role table of every other member's superblock becomes md's faulty role,
 * written with FUA in two updates of events + 1 each, as md writes them
 * (the failure, then the member leaving the personality: see record()),
 * before array_fail returns, so before the request that saw the error is
 * answered.  A member whose superblock write fails then is failed the
 * same way.
 *
 * Between the state store and the record landing, other requests skip the
 * member: none of them may be answered before the record is durable, or a
 * kill -9 brings the member back in sync without what they wrote (md
 * blocks them: rdev Blocked, md_wait_for_blocked_rdev).  `unrecorded`
 * counts the failures marked and not yet recorded: raised before the
 * state store, lowered once record() is durable, both under fail_lock.
 * Every write-class request and every flush calls failures_recorded()
 * before it answers success: one atomic load, and while a failure is
 * being recorded, a wait for fail_lock (the recorder holds it throughout,
 * so once it is ours every failure the request may have seen is on disk).
 * A failure that could not be recorded at all leaves the count raised and
 * the array failed (`broken`: writes refused): those requests, and every
 * flush after, answer EIO, never a success that a restart would undo.
 *
 * When the member holds the last copy of some data it is not failed (md
 * does the same with a mirror's last device): the request gets EIO, and
 * after a write error a redundant array stops taking writes (md's
 * MD_BROKEN), since its copies or parity could no longer be kept
 * consistent.  Reads go on where the data is reachable.
 *
 * A failure, once recorded, lets a spare take the role (spare.c:
 * array_take_spare, as md starts recovery onto a spare by itself).
 *
 * Removal (mdadm --remove) takes a faulty member out of its role: the
 * role becomes missing, its table entry md's removed (spare) value, and
 * its file is closed once no I/O of its is in flight: the store of the new
 * state and the load of `inflight` pair with batch_run's count-then-check,
 * so either batch_run sees the member gone or removal sees its I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "util.h"

#define REMOVE_WAIT_MS 10000 /* for a faulty member's last I/O to end */

bool
array_redundant(const struct raid_array *a)
{
	return a->layout->enough(&a->g, 1);
}

/* md's [UU_U]: U in sync, _ anything else. */
static void
state_map(const struct raid_array *a, char *buf)
{
	unsigned i;

	for (i = 0; i < a->nr_members; i++) {
		buf[i] =
			atomic_load(&a->members[i].state) == RAID_MEMBER_IN_SYNC
				? 'U'
				: '_';
	}
	buf[i] = '\0';
}

void
array_log_state(struct raid_array *a)
{
	enum raid_array_state s = array_state_now(a);
	char map[RAID_MAX_MEMBERS + 1];

	state_map(a, map);
	raid_error("array %s [%s]%s%s", raid_array_state_name(s), map,
		   s != RAID_ARRAY_OPTIMAL ? ": " : "",
		   s != RAID_ARRAY_OPTIMAL ? a->reason : "");
}

/*
 * Record role's new table entry in the others' superblocks; fail_lock.
 * A failure is two updates, events + 1 each, as md writes it: md_error's
 * (the role faulty), then remove_and_add_spares' (the member out of the
 * personality; the role stays faulty).  A crash at any point leaves the
 * survivors at most one event apart, which md, mdadm and nbdraid all
 * assemble; a survivor that got the first one marks the member faulty,
 * and a member one event behind takes its role from the freshest
 * superblock (md's super_1_validate, metadata.c classify): it stays out.
 * After both, the failed member's own superblock, never written again, is
 * two events behind: stale by the events alone.
 */
static int
record(struct raid_array *a, unsigned role, uint16_t value)
{
	unsigned updates = value == MD_ROLE_FAULTY ? 2 : 1;
	uint64_t bad = 0;
	int r = 0;

	if (!a->meta) {
		return 0;
	}
	pthread_mutex_lock(&a->meta->lock);
	meta_set_role(a->meta, role, value);
	for (unsigned u = 0; u < updates && r == 0; u++) {
		r = meta_commit(a, 1, &bad);
	}
	pthread_mutex_unlock(&a->meta->lock);
	if (r < 0 && !bad) {
		raid_error("recording member %u's state in the superblocks: %s",
			   role, strerror(-r));
		return r;
	}
	/* Those that could not take it fail too: what is left records it. */
	return fail_unwritten(a, r, bad);
}

int
fail_unwritten(struct raid_array *a, int r, uint64_t bad)
{
	for (unsigned i = 0; i < a->nr_members && r < 0 && bad; i++) {
		if (((bad >> i) & 1) &&
		    fail_locked(a, i, "superblock write error", FAIL_WRITE) <
			    0) {
			return -EIO;
		}
	}
	return bad ? 0 : r;
}

/* No more writes: their copies or parity could not be kept consistent. */
static void
set_broken(struct raid_array *a, unsigned role, const char *why)
{
	if (atomic_exchange(&a->broken, true)) {
		return;
	}
	snprintf(
		a->reason, sizeof(a->reason),
		"member %u (%s): %s, and it holds the last copy of some data: writes are refused",
		role, a->members[role].path, why);
	array_log_state(a);
	array_event(a, "ArrayFailed", a->members[role].path);
}

/*
 * role's failure could not be recorded: a restart would take it back in
 * sync, without what was written since.  No write may be answered from
 * now on (`unrecorded` stays raised: failures_recorded says EIO).
 */
static void
unrecordable(struct raid_array *a, unsigned role)
{
	raid_error(
		"member %u (%s): its failure could not be recorded in the superblocks: writes are refused",
		role, a->members[role].path);
	if (atomic_exchange(&a->broken, true)) {
		return; /* failed already, and said why */
	}
	snprintf(
		a->reason, sizeof(a->reason),
		"member %u (%s) failed, and no superblock could record it: writes are refused",
		role, a->members[role].path);
	array_event(a, "ArrayFailed", a->members[role].path);
}

int
failures_recorded(struct raid_array *a)
{
	int r;

	if (atomic_load(&a->unrecorded) == 0) {
		return 0;
	}
	/* The recorder holds fail_lock from the raise to the lowering. */
	pthread_mutex_lock(&a->fail_lock);
	r = atomic_load(&a->unrecorded) ? -EIO : 0;
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}

int
fail_locked(struct raid_array *a, unsigned role, const char *why,
	    enum fail_cause cause)
{
	struct raid_member *m = &a->members[role];
	uint64_t lost = array_lost(a);
	int r;

	if (!member_alive(m)) {
		return 0;
	}
	if (!a->layout->enough(&a->g, lost | (1ull << role))) {
		if (cause == FAIL_OPERATOR) {
			return -EBUSY;
		}
		if (cause == FAIL_WRITE && array_redundant(a)) {
			set_broken(a, role, why);
		}
		return -EIO;
	}
	atomic_fetch_add(&a->unrecorded, 1); /* before the store: DESIGN */
	atomic_store(&m->state, RAID_MEMBER_FAULTY);
	if (!atomic_load(&a->broken)) {
		snprintf(a->reason, sizeof(a->reason),
			 "member %u (%s) is faulty: %s", role, m->path, why);
	}
	r = record(a, role, MD_ROLE_FAULTY);
	if (r == 0) {
		atomic_fetch_sub(&a->unrecorded, 1);
	} else {
		unrecordable(a, role);
	}
	array_log_state(a);
	if (!a->meta) {
		raid_error(
			"no superblocks record this failure: leave member %u (%s) out when starting the array again (member=missing)",
			role, m->path);
	}
	array_event(a, "Fail", m->path);
	return r;
}

int
array_fail(struct raid_array *a, unsigned role, const char *why,
	   enum fail_cause cause)
{
	int r;

	pthread_mutex_lock(&a->fail_lock);
	r = fail_locked(a, role, why, cause);
	pthread_mutex_unlock(&a->fail_lock);
	if (r == 0) {
		array_take_spare(a); /* md starts recovery onto a spare */
	}
	return r;
}

int
array_fail_seen(struct raid_array *a, unsigned role, unsigned gen,
		const char *why, enum fail_cause cause)
{
	int r = 0;

	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&a->members[role].gen) == gen) {
		r = fail_locked(a, role, why, cause);
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (r == 0) {
		array_take_spare(a); /* md starts recovery onto a spare */
	}
	return r;
}

int
raid_fail_member(struct raid_array *a, unsigned role, const char *why)
{
	int r;

	if (role >= a->nr_members) {
		return -ENOENT;
	}
	pthread_mutex_lock(&a->fail_lock);
	if (atomic_load(&a->members[role].state) == RAID_MEMBER_MISSING) {
		r = -ENOENT;
	} else {
		r = fail_locked(a, role, why ? why : "failed by the operator",
				FAIL_OPERATOR);
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (r == -EBUSY) {
		raid_error(
			"member %u (%s) holds the last copy of some data: not failed",
			role, a->members[role].path);
	}
	if (r == 0) {
		array_take_spare(a);
	}
	return r;
}

/* Wait until none of m's I/O is in flight; -EBUSY after REMOVE_WAIT_MS. */
static int
drain(struct raid_member *m)
{
	for (unsigned ms = 0; atomic_load(&m->inflight) > 0; ms++) {
		if (ms == REMOVE_WAIT_MS) {
			return -EBUSY;
		}
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return 0;
}

int
remove_locked(struct raid_array *a, unsigned role)
{
	struct raid_member *m = &a->members[role];
	int s = atomic_load(&m->state), r = 0;

	if (s == RAID_MEMBER_MISSING) {
		return -ENOENT;
	}
	if (s == RAID_MEMBER_IN_SYNC || s == RAID_MEMBER_REBUILDING) {
		raid_error("member %u (%s) is %s: fail it first (nbdraid fail)",
			   role, m->path, raid_member_state_name(s));
		return -EBUSY;
	}
	atomic_store(&m->state, RAID_MEMBER_MISSING);
	r = drain(m);
	if (r < 0) {
		atomic_store(&m->state, s);
		raid_error("member %u (%s): I/O still in flight", role,
			   m->path);
		return r;
	}
	r = record(a, role, MD_ROLE_SPARE);
	member_close_fd(m); /* and with it, the claim */
	snprintf(a->reason, sizeof(a->reason), "member %u (%s) was removed",
		 role, m->path);
	array_log_state(a);
	array_event(a, "MemberRemoved", m->path);
	return r;
}

int
raid_remove_member(struct raid_array *a, unsigned role)
{
	int r;

	if (role >= a->nr_members) {
		return -ENOENT;
	}
	pthread_mutex_lock(&a->fail_lock);
	r = remove_locked(a, role);
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}
