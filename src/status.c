/*
 * status.c: what the array is now, for the control socket, the CLI and
 * the log: its state, each role's member and counters, the requests
 * served (raid.h: struct raid_status; docs/degraded.md).
 *
 * The members, their states and paths, the spares and the reason are read
 * in one hold of fail_lock (they change under it), so a status shows one
 * moment: never a spare both in a role and on the list, never one
 * member's state with another's path.  A path it returns is the member's
 * own string, never freed while the array is open (member.h: path), so
 * the status stays readable after a spare took the role.  The identity
 * (superblocks) is read under meta->lock, the counters without a lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cache.h"
#include "events.h"
#include "gather.h"
#include "log.h"
#include "sync.h"
#include "util.h"

static const char *const member_states[] = {
	[RAID_MEMBER_IN_SYNC] = "in_sync",
	[RAID_MEMBER_FAULTY] = "faulty",
	[RAID_MEMBER_MISSING] = "missing",
	[RAID_MEMBER_SPARE] = "spare",
	[RAID_MEMBER_REBUILDING] = "rebuilding",
};

static const char *const array_states[] = {
	[RAID_ARRAY_OPTIMAL] = "optimal",
	[RAID_ARRAY_DEGRADED] = "degraded",
	[RAID_ARRAY_REBUILDING] = "rebuilding",
	[RAID_ARRAY_FAILED] = "failed",
};

static const char *const req_kinds[] = {
	[RAID_REQ_READ] = "read",   [RAID_REQ_WRITE] = "write",
	[RAID_REQ_FLUSH] = "flush", [RAID_REQ_TRIM] = "trim",
	[RAID_REQ_ZERO] = "zero",
};

const char *
raid_member_state_name(enum raid_member_state s)
{
	return (unsigned)s < ARRAY_SIZE(member_states) ? member_states[s]
						       : "unknown";
}

const char *
raid_array_state_name(enum raid_array_state s)
{
	return (unsigned)s < ARRAY_SIZE(array_states) ? array_states[s]
						      : "unknown";
}

const char *
raid_req_kind_name(enum raid_req_kind k)
{
	return (unsigned)k < ARRAY_SIZE(req_kinds) ? req_kinds[k] : "unknown";
}

uint64_t
array_lost(const struct raid_array *a)
{
	uint64_t lost = 0;

	for (unsigned i = 0; i < a->nr_members; i++) {
		if (!member_usable(&a->members[i])) {
			lost |= 1ull << i;
		}
	}
	return lost;
}

enum raid_array_state
array_state_now(const struct raid_array *a)
{
	uint64_t lost = array_lost(a);
	bool rebuilding = false;

	for (unsigned i = 0; i < a->nr_members; i++) {
		rebuilding |= atomic_load(&a->members[i].state) ==
			      RAID_MEMBER_REBUILDING;
	}
	if (atomic_load(&a->broken) || !a->layout->enough(&a->g, lost)) {
		return RAID_ARRAY_FAILED;
	}
	if (rebuilding) {
		return RAID_ARRAY_REBUILDING;
	}
	return lost ? RAID_ARRAY_DEGRADED : RAID_ARRAY_OPTIMAL;
}

int
raid_status(struct raid_array *a, struct raid_status *st)
{
	memset(st, 0, sizeof(*st));
	st->level = a->layout->level;
	a->layout->layout_name(&a->g, st->layout, sizeof(st->layout));
	st->size = a->size;
	st->chunk_bytes = a->chunk_bytes;
	st->nr_members = a->nr_members;
	sync_status(a, st);
	gather_stats(a->gather, &st->gather);
	for (unsigned k = 0; k < RAID_REQ_KINDS; k++) {
		st->io[k].requests = atomic_load(&a->io[k].requests);
		st->io[k].bytes = atomic_load(&a->io[k].bytes);
		st->io[k].errors = atomic_load(&a->io[k].errors);
	}
	pthread_mutex_lock(&a->fail_lock);
	st->state = array_state_now(a);
	for (unsigned i = 0; i < a->nr_members; i++) {
		struct raid_member *m = &a->members[i];
		struct raid_member_status *ms = &st->members[i];

		ms->role = i;
		ms->state = atomic_load(&m->state);
		ms->path = ms->state == RAID_MEMBER_MISSING ? NULL : m->path;
		ms->read_errors = atomic_load(&m->read_errors);
		ms->write_errors = atomic_load(&m->write_errors);
		ms->corrected_reads = atomic_load(&m->corrected_reads);
	}
	if (st->state != RAID_ARRAY_OPTIMAL) {
		snprintf(st->reason, sizeof(st->reason), "%s", a->reason);
	}
	st->nr_spares = a->meta ? a->meta->nr_spares : 0;
	for (unsigned i = 0; i < st->nr_spares; i++) {
		st->spares[i] = (struct raid_member_status){
			.role = i,
			.path = a->spares[i].path,
			.state = RAID_MEMBER_SPARE,
		};
	}
	pthread_mutex_unlock(&a->fail_lock);
	meta_status(a->meta, st);
	cache_status(a->cache, &st->cache);
	return 0;
}

/* The role spec names (a role number or a path), or -ENOENT; fail_lock. */
static int
find_role(const struct raid_array *a, const char *spec)
{
	char *end;
	unsigned long n;

	if (!spec || !*spec) {
		return -ENOENT;
	}
	if (spec[0] >= '0' && spec[0] <= '9') {
		n = strtoul(spec, &end, 10);
		if (*end == '\0') {
			return n < a->nr_members ? (int)n : -ENOENT;
		}
	}
	for (unsigned i = 0; i < a->nr_members; i++) {
		const char *path = a->members[i].path;

		if (path && strcmp(path, spec) == 0) {
			return (int)i;
		}
	}
	return -ENOENT;
}

int
member_find(struct raid_array *a, const char *spec, struct member_ref *ref)
{
	const struct meta_member *mm;
	int role;

	memset(ref, 0, sizeof(*ref));
	pthread_mutex_lock(&a->fail_lock);
	role = find_role(a, spec);
	if (role >= 0) {
		const struct raid_member *m = &a->members[role];

		ref->role = (unsigned)role;
		ref->gen = atomic_load(&m->gen);
		ref->state = atomic_load(&m->state);
		ref->path = m->path;
	}
	if (role >= 0 && a->meta) {
		pthread_mutex_lock(&a->meta->lock);
		mm = &a->meta->members[role];
		if (mm->present) {
			ref->has_uuid = true;
			memcpy(ref->uuid, mm->sb.device_uuid,
			       sizeof(ref->uuid));
		}
		pthread_mutex_unlock(&a->meta->lock);
	}
	pthread_mutex_unlock(&a->fail_lock);
	return role < 0 ? role : 0;
}

int
raid_member_lookup(struct raid_array *a, const char *spec)
{
	struct member_ref ref;
	int r = member_find(a, spec, &ref);

	return r < 0 ? r : (int)ref.role;
}

void
array_event(struct raid_array *a, const char *event, const char *member)
{
	raid_error("event %s%s%s", event, member ? " " : "",
		   member ? member : "");
	if (a->events) {
		events_emit(a->events, event, member);
	}
}
