/*
 * spare.c: spares, and a spare taking the place of a member that is gone
 * (array.h: spares_start, array_take_spare; raid.h: raid_add_member).
 *
 * DESIGN
 * A spare is a member of the array with md's spare role (0xffff in every
 * role table): its superblock is a copy of the array's freshest one with
 * its own dev_number (the first entry no member or spare uses, md's way),
 * a random device_uuid and its own place (super_offset, data_size; a spare
 * carrying its own superblock keeps its own data offset); it is
 * written with every superblock update, as md writes a spare's.  Spares
 * come from spare= at start (a superblock written on one that has none),
 * from member= (superblocks that say spare) and from the control socket
 * (nbdraid add, mdadm --add).  A member carrying another array's
 * superblock, or a role in this one, is never written without force.
 *
 * Taking a spare (md's remove_and_add_spares): when a role has no usable
 * member (missing; faulty ones are removed first) and a spare exists,
 * under fail_lock the spare's raid_member moves into the role's slot
 * while its state is missing (the data path reads members without a lock
 * and skips those not alive), the role's data offset becomes the spare's
 * own (the geometry's per-role data_offset), its gen moves on (a request
 * that began before never reaches it: batch_pin), `rebuilt` is set to 0,
 * and only then the state becomes rebuilding: writes reach it from then on,
 * reads only below `rebuilt`.  Its superblock gets the role in every table,
 * feature 0x2 with recovery_offset 0, events move on; then the recovery engine
 * is woken (sync_kick).  The engine checkpoints (recovery_offset, events
 * + 1) and, at the end, array_recovery_done makes the member in sync.
 *
 * Lock order: fail_lock, then meta->lock (the spare list changes under
 * both; meta_commit reads it under meta->lock).
 *
 * Paths: the member a spare replaces leaves its path string behind, on
 * the array's list of old paths, freed only when the array closes:
 * status, member lookup and log lines read a member's path without a
 * lock and may hold it (docs/locking.md, "Member paths").  A spare whose
 * path is on that list takes that string back, so the list holds each
 * path at most once however often one file leaves and comes back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "array.h"
#include "log.h"
#include "member_overlap.h"
#include "metadata.h"
#include "sync.h"
#include "util.h"

/* What a member given as a spare carries. */
enum found_sb {
	SB_NONE,      /* no md superblock: one is written */
	SB_OUR_SPARE, /* this array's, as a spare: kept */
	SB_REFUSED,   /* anything else: only with force */
};

/* The dev_numbers members and spares use now. */
static void
devs_used(const struct raid_array *a, bool *used)
{
	const struct raid_meta *meta = a->meta;

	memset(used, 0, MD_MAX_DEV_LIMIT * sizeof(*used));
	for (unsigned r = 0; r < meta->nr; r++) {
		if (meta->members[r].present &&
		    atomic_load(&a->members[r].state) != RAID_MEMBER_MISSING &&
		    meta->members[r].sb.dev_number < MD_MAX_DEV_LIMIT) {
			used[meta->members[r].sb.dev_number] = true;
		}
	}
	for (unsigned i = 0; i < meta->nr_spares; i++) {
		if (meta->spares[i].sb.dev_number < MD_MAX_DEV_LIMIT) {
			used[meta->spares[i].sb.dev_number] = true;
		}
	}
}

/* The first dev_number no member, spare or table entry uses (md's). */
static uint32_t
free_dev(const struct raid_array *a, const struct md_sb *fresh)
{
	static _Thread_local bool used[MD_MAX_DEV_LIMIT];
	uint32_t d;

	devs_used(a, used);
	for (d = 0; d < fresh->max_dev; d++) {
		used[d] |= fresh->dev_roles[d] != MD_ROLE_SPARE;
	}
	for (d = 0; d < MD_MAX_DEV_LIMIT && used[d]; d++) {
	}
	return d;
}

/* Is dev the dev_number of a member or a spare now? */
static bool
dev_taken(const struct raid_array *a, uint32_t dev)
{
	static _Thread_local bool used[MD_MAX_DEV_LIMIT];

	devs_used(a, used);
	return dev >= MD_MAX_DEV_LIMIT || used[dev];
}

/*
 * Where a spare's superblock and data go (sectors): the freshest member's
 * version, the data at data_offset (a new spare's: the freshest member's;
 * a spare that has its own superblock: its own, which it keeps when it
 * takes a role); 1.0 keeps the freshest's room between the data and the
 * superblock at its end.  -ENOSPC (logged) when the data area does not
 * hold the array's used size past its superblock; -EINVAL when it is not
 * aligned to the members' blocks.
 */
static int
spare_place(const struct raid_array *a, const struct raid_member *m,
	    const struct md_sb *fresh, uint64_t data_offset,
	    struct meta_member *mm)
{
	uint64_t sectors = m->size / RAID_SECTOR_BYTES;
	uint64_t at = md_sb_sector(md_sb_minor(fresh->super_offset), m->size);
	uint64_t end = sectors, avail = 0, gap;
	bool at_end = md_sb_minor(fresh->super_offset) == 0;

	if (at != UINT64_MAX && at_end) {
		gap = fresh->super_offset - fresh->data_offset -
		      fresh->data_size;
		end = at > gap ? at - gap : 0;
	}
	if (at != UINT64_MAX && end > data_offset &&
	    (at_end || data_offset >= at + MD_SB_BYTES / RAID_SECTOR_BYTES)) {
		avail = end - data_offset;
	}
	if (at == UINT64_MAX || avail < fresh->size) {
		raid_error(
			"spare %s: %llu bytes is too small: the array needs data offset %llu + used size %llu bytes on it, past its superblock",
			m->path, (unsigned long long)m->size,
			(unsigned long long)data_offset * RAID_SECTOR_BYTES,
			(unsigned long long)fresh->size * RAID_SECTOR_BYTES);
		return -ENOSPC;
	}
	if (!IS_ALIGNED(data_offset * RAID_SECTOR_BYTES, a->discard_align)) {
		raid_error(
			"spare %s: data offset %llu is not a multiple of the members' block size %u",
			m->path,
			(unsigned long long)data_offset * RAID_SECTOR_BYTES,
			a->discard_align);
		return -EINVAL;
	}
	mm->sb.super_offset = mm->sb_sector = at;
	mm->sb.data_size = avail;
	return 0;
}

/* A new spare's superblock: the freshest one, made this member's. */
static int
spare_sb_new(struct raid_array *a, const struct raid_member *m,
	     struct meta_member *mm)
{
	const struct md_sb *fresh = meta_freshest(a->meta);
	uint32_t dev = free_dev(a, fresh);
	struct md_sb *sb = &mm->sb;

	if (dev >= MD_MAX_DEV_LIMIT) {
		raid_error("spare %s: no free entry in the role table",
			   m->path);
		return -ENOSPC;
	}
	memset(mm, 0, sizeof(*mm));
	*sb = *fresh;
	sb->feature_map &=
		~(uint32_t)(MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_BAD_BLOCKS);
	sb->recovery_offset = 0;
	sb->dev_number = dev;
	sb->cnt_corrected_read = 0;
	sb->devflags = 0;
	if (getrandom(sb->device_uuid, sizeof(sb->device_uuid), 0) !=
	    (ssize_t)sizeof(sb->device_uuid)) {
		return -EIO;
	}
	return spare_place(a, m, fresh, fresh->data_offset, mm);
}

/*
 * An array with md's internal bitmap: the spare gets a copy of a live
 * member's bitmap superblock at its own place (nbdraid marks it stale
 * before writing, so the bits never call a chunk clean).
 */
static int
spare_bitmap(struct raid_array *a, struct raid_member *m,
	     const struct meta_member *mm)
{
	int64_t rel = mm->sb.bitmap_offset;
	void *buf = NULL;
	int r = -EIO;

	if (!(mm->sb.feature_map & MD_FEATURE_BITMAP_OFFSET)) {
		return 0;
	}
	if (posix_memalign(&buf, IO_BUF_ALIGN, MD_SB_BYTES) != 0) {
		return -ENOMEM;
	}
	for (unsigned i = 0; i < a->nr_members && r < 0; i++) {
		const struct meta_member *from = &a->meta->members[i];
		struct io_req q = { .m = &a->members[i],
				    .op = IO_READ,
				    .buf = buf,
				    .len = MD_SB_BYTES,
				    .off = (from->sb_sector + rel) *
					   RAID_SECTOR_BYTES };

		if (from->present && member_usable(&a->members[i])) {
			r = a->members[i].be->submit_wait(&q, 1);
		}
	}
	if (r == 0) {
		struct io_req q = { .m = m,
				    .op = IO_WRITE,
				    .flags = IO_FUA,
				    .buf = buf,
				    .len = MD_SB_BYTES,
				    .off = (mm->sb_sector + rel) *
					   RAID_SECTOR_BYTES };

		r = m->be->submit_wait(&q, 1);
	}
	if (r < 0) {
		raid_error("spare %s: copying the array's bitmap: %s", m->path,
			   strerror(-r));
	}
	free(buf);
	return r;
}

/* A UUID as mdadm prints it, for messages. */
static const char *
uuid_text(const uint8_t *u, char *buf)
{
	uuid_format(u, buf);
	return buf;
}

/* What m carries, said when it is refused. */
static enum found_sb
spare_found(struct raid_array *a, struct raid_member *m, struct meta_member *mm,
	    bool force)
{
	const struct md_sb *fresh = meta_freshest(a->meta);
	const char *tail = force ? ": overwritten (force)"
				 : ": not overwritten without force";
	char why[160], u[UUID_STR_BYTES];
	uint16_t role;
	int r = meta_read(m, mm, why, sizeof(why));

	if (r == -ENOENT) {
		return SB_NONE;
	}
	if (r < 0) {
		raid_error("spare %s: a damaged md superblock (%s)%s", m->path,
			   why, tail);
		return SB_REFUSED;
	}
	if (memcmp(mm->sb.set_uuid, fresh->set_uuid, 16) != 0) {
		raid_error(
			"spare %s: carries the superblock of array %s (%s)%s",
			m->path, uuid_text(mm->sb.set_uuid, u), mm->sb.set_name,
			tail);
		return SB_REFUSED;
	}
	role = mm->sb.dev_number < fresh->max_dev
		       ? fresh->dev_roles[mm->sb.dev_number]
		       : MD_ROLE_SPARE;
	if (role != MD_ROLE_SPARE || md_sb_role(&mm->sb) != MD_ROLE_SPARE ||
	    dev_taken(a, mm->sb.dev_number)) {
		raid_error("spare %s: a member of this array (role %#x)%s",
			   m->path, md_sb_role(&mm->sb), tail);
		return SB_REFUSED;
	}
	return spare_place(a, m, fresh, mm->sb.data_offset,
			   &(struct meta_member){ 0 }) < 0
		       ? SB_REFUSED
		       : SB_OUR_SPARE;
}

/* Do the members, the spares and m (or NULL) overlap?  -EINVAL (logged). */
static int
spare_overlap(const struct raid_array *a, const struct raid_member *m)
{
	static _Thread_local struct raid_member
		all[RAID_MAX_MEMBERS + RAID_MAX_SPARES + 1];
	unsigned n = 0;

	for (unsigned i = 0; i < a->nr_members; i++) {
		if (a->members[i].fd >= 0) {
			all[n++] = a->members[i];
		}
	}
	for (unsigned i = 0; i < a->meta->nr_spares; i++) {
		all[n++] = a->spares[i];
	}
	if (m) {
		all[n++] = *m;
	}
	return member_overlap_check(all, n);
}

/* May m serve the array's I/O (its alignment, the array's mode)? */
static int
spare_fits(const struct raid_array *a, struct raid_member *m)
{
	if (m->io_align > a->io_align || m->mem_align > a->mem_align ||
	    m->discard_align > a->discard_align) {
		raid_error(
			"spare %s: needs %u-byte aligned I/O, more than the array's members (%u)",
			m->path, m->io_align, a->io_align);
		return -EINVAL;
	}
	return member_claim(m);
}

/* The array can have spares at all?  (md superblocks, redundancy.) */
static int
spares_allowed(const struct raid_array *a, const char *path)
{
	if (!a->meta) {
		raid_error(
			"spare %s: the array has no md superblocks (raw mode): nowhere to record a spare",
			path);
		return -EINVAL;
	}
	if (!array_redundant(a)) {
		raid_error(
			"spare %s: raid%d has no redundancy: a spare could never be used",
			path, a->layout->level);
		return -EINVAL;
	}
	if (a->read_only) {
		raid_error("spare %s: the array is open read-only", path);
		return -EROFS;
	}
	if (a->meta->nr_spares == RAID_MAX_SPARES) {
		raid_error("spare %s: the array has %d spares already", path,
			   RAID_MAX_SPARES);
		return -ENOSPC;
	}
	return 0;
}

/*
 * Put m (open, claimed, its superblock in mm) on the list and record it
 * in every role table: events move on, its superblock is written with
 * the others'.  fail_lock held.
 */
static int
spare_enlist(struct raid_array *a, struct raid_member *m,
	     struct meta_member *mm)
{
	struct raid_meta *meta = a->meta;
	const struct md_sb *fresh = meta_freshest(meta);
	unsigned i = meta->nr_spares;
	uint64_t bad = 0;
	int r;

	pthread_mutex_lock(&meta->lock);
	mm->present = false;
	mm->sb.max_dev = fresh->max_dev;
	memcpy(mm->sb.dev_roles, fresh->dev_roles,
	       sizeof(mm->sb.dev_roles[0]) * fresh->max_dev);
	m->role = i;
	atomic_store(&m->state, RAID_MEMBER_SPARE);
	a->spares[i] = *m;
	meta->spares[i] = *mm;
	meta->nr_spares++;
	r = meta_set_dev(meta, mm->sb.dev_number, MD_ROLE_SPARE);
	if (r == 0) {
		r = meta_commit(a, 1, &bad);
	}
	if (r == 0) {
		/* commit_spares only says a spare's failure: check it. */
		r = meta_write_one(&a->spares[i], &meta->spares[i]);
	}
	if (r < 0) {
		meta->nr_spares--;
		raid_error("spare %s: recording it in the superblocks: %s",
			   m->path, strerror(-r));
	} else {
		a->spares[i].path = m->path = path_reuse(a, m->path);
	}
	pthread_mutex_unlock(&meta->lock);
	for (unsigned k = 0; k < a->nr_members && bad; k++) {
		if ((bad >> k) & 1) {
			fail_locked(a, k, "superblock write error", FAIL_WRITE);
		}
	}
	return r;
}

/* Open, check and enlist one spare; take a hole with it if `take`. */
static int
spare_add(struct raid_array *a, const char *path, bool force, bool take)
{
	static _Thread_local struct meta_member mm;
	struct raid_member m;
	enum found_sb found = SB_NONE;
	int r = spares_allowed(a, path);

	if (r < 0) {
		return r;
	}
	r = member_open(&m, 0, path, a->open_direct, false, a->open_io);
	if (r < 0) {
		raid_error("spare %s: %s", path, strerror(-r));
		member_close(&m);
		return r;
	}
	pthread_mutex_lock(&a->fail_lock);
	r = spares_allowed(a, path); /* again, now under the lock */
	if (r == 0) {
		r = spare_overlap(a, &m);
	}
	if (r == 0) {
		r = spare_fits(a, &m);
	}
	if (r == 0) {
		found = spare_found(a, &m, &mm, force);
		r = found == SB_REFUSED && !force ? -EEXIST : 0;
	}
	if (r == 0 && found != SB_OUR_SPARE) {
		r = spare_sb_new(a, &m, &mm);
		if (r == 0) {
			r = spare_bitmap(a, &m, &mm);
		}
	}
	if (r == 0) {
		r = spare_enlist(a, &m, &mm);
	}
	pthread_mutex_unlock(&a->fail_lock);
	if (r < 0) {
		member_close(&m);
		return r;
	}
	raid_error("spare %s added (device %u%s)", path, mm.sb.dev_number,
		   found == SB_OUR_SPARE ? ", its superblock kept" : "");
	return take ? MIN(array_take_spare(a), 0) : 0;
}

int
raid_add_member(struct raid_array *a, const char *path, bool force)
{
	return spare_add(a, path, force, true);
}

/* ---- member paths ----------------------------------------------------------
 */

void
path_retire(struct raid_array *a, char *path)
{
	char **v;

	if (!path) {
		return;
	}
	v = realloc(a->old_paths, (a->nr_old_paths + 1) * sizeof(*v));
	if (!v) {
		return; /* kept forever rather than freed early */
	}
	a->old_paths = v;
	a->old_paths[a->nr_old_paths++] = path;
}

char *
path_reuse(struct raid_array *a, char *path)
{
	for (unsigned i = 0; path && i < a->nr_old_paths; i++) {
		char *old = a->old_paths[i];

		if (strcmp(old, path) == 0) {
			a->old_paths[i] = a->old_paths[--a->nr_old_paths];
			free(path);
			return old;
		}
	}
	return path;
}

void
paths_free(struct raid_array *a)
{
	for (unsigned i = 0; i < a->nr_old_paths; i++) {
		free(a->old_paths[i]);
	}
	free(a->old_paths);
	a->old_paths = NULL;
	a->nr_old_paths = 0;
}

/* ---- taking a spare into a role ------------------------------------------ */

/* The first role with no usable member (missing or faulty), or -1. */
static int
spare_hole(const struct raid_array *a)
{
	for (unsigned r = 0; r < a->nr_members; r++) {
		int s = atomic_load(&a->members[r].state);

		if (s == RAID_MEMBER_MISSING || s == RAID_MEMBER_FAULTY) {
			return (int)r;
		}
	}
	return -1;
}

/* Spare 0 into the slot of `role` (missing), state rebuilding last. */
static void
spare_move(struct raid_array *a, unsigned role)
{
	struct raid_member *m = &a->members[role], *s = &a->spares[0];

	path_retire(a, m->path); /* status may still hold it */
	m->path = s->path;
	m->fd = s->fd;
	m->is_blk = s->is_blk;
	m->direct = s->direct;
	m->read_only = s->read_only;
	m->claimed = s->claimed;
	m->size = s->size;
	m->mem_align = s->mem_align;
	m->io_align = s->io_align;
	m->discard_align = s->discard_align;
	m->dev = s->dev;
	m->ino = s->ino;
	m->be = s->be;
	m->priv = s->priv;
	m->role = role;
	m->recent_read_errors = 0;
	atomic_store(&m->read_errors, 0);
	atomic_store(&m->write_errors, 0);
	atomic_store(&m->corrected_reads, 0);
	atomic_store(&m->next_read, UINT64_MAX);
	atomic_store(&m->no_zero_range, atomic_load(&s->no_zero_range));
	atomic_store(&m->no_punch, atomic_load(&s->no_punch));
	atomic_store(&m->no_alloc, atomic_load(&s->no_alloc));
	atomic_store(&m->alloc_ok, atomic_load(&s->alloc_ok));
	atomic_store(&m->no_discard, atomic_load(&s->no_discard));
	atomic_store(&m->rebuilt, 0);
	atomic_fetch_add(&m->gen, 1);
	atomic_store_explicit(&m->state, RAID_MEMBER_REBUILDING,
			      memory_order_release);
}

/* Drop spare i from the lists; meta->lock held. */
static void
spare_unlist(struct raid_array *a, unsigned i)
{
	struct raid_meta *meta = a->meta;

	meta->nr_spares--;
	for (unsigned k = i; k < meta->nr_spares; k++) {
		a->spares[k] = a->spares[k + 1];
		a->spares[k].role = k;
		meta->spares[k] = meta->spares[k + 1];
	}
}

/* fail_lock held: 1 when a spare took a role. */
static int
take_locked(struct raid_array *a)
{
	struct raid_meta *meta = a->meta;
	int role = meta->nr_spares ? spare_hole(a) : -1;
	struct meta_member *mm;
	uint64_t bad = 0;
	int r = 0;

	if (role < 0) {
		return 0;
	}
	if (atomic_load(&a->members[role].state) == RAID_MEMBER_FAULTY) {
		r = remove_locked(a, role);
		if (r < 0) {
			return r;
		}
	}
	pthread_mutex_lock(&meta->lock);
	mm = &meta->members[role];
	*mm = meta->spares[0];
	mm->present = true;
	mm->sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
	mm->sb.recovery_offset = 0;
	meta->role_dev[role] = mm->sb.dev_number;
	/*
	 * The role's data offset is the spare's own from now on (md keeps
	 * one per rdev).  The role is missing: no request issues I/O to it,
	 * and one that decided to before the member left never reaches the
	 * spare (batch_pin: its gen moves on in spare_move).
	 */
	__atomic_store_n(&a->g.data_offset[role],
			 mm->sb.data_offset * RAID_SECTOR_BYTES,
			 __ATOMIC_RELAXED);
	spare_move(a, role);
	spare_unlist(a, 0);
	meta_set_role(meta, role, role);
	r = meta_commit(a, 1, &bad);
	pthread_mutex_unlock(&meta->lock);
	snprintf(a->reason, sizeof(a->reason),
		 "member %u (%s) is being rebuilt", role,
		 a->members[role].path);
	raid_error("member %u: spare %s takes the role: recovery starts", role,
		   a->members[role].path);
	array_log_state(a);
	r = fail_unwritten(a, r, bad);
	return r < 0 ? r : 1;
}

int
array_take_spare(struct raid_array *a)
{
	int r;

	if (!a->meta) {
		return 0;
	}
	pthread_mutex_lock(&a->fail_lock);
	r = take_locked(a);
	pthread_mutex_unlock(&a->fail_lock);
	if (r == 1) {
		sync_kick(a);
	}
	return r;
}

/* ---- the engine's calls ------------------------------------------------ */

/* role's member is being rebuilt?  Else -EINVAL (logged); fail_lock. */
static int
rebuilding(const struct raid_array *a, unsigned role, const char *what)
{
	if (!a->meta || role >= a->nr_members ||
	    atomic_load(&a->members[role].state) != RAID_MEMBER_REBUILDING) {
		raid_error("%s: role %u is not being rebuilt", what, role);
		return -EINVAL;
	}
	return 0;
}

/* Commit under meta->lock, failing members whose write failed (not the
 * caller: the update is on every member left). */
static int
commit_locked(struct raid_array *a)
{
	uint64_t bad = 0;
	int r = meta_commit(a, 1, &bad);

	pthread_mutex_unlock(&a->meta->lock);
	return fail_unwritten(a, r, bad);
}

int
array_checkpoint_recovery(struct raid_array *a, unsigned role,
			  uint64_t rebuilt_bytes)
{
	int r;

	pthread_mutex_lock(&a->fail_lock);
	r = rebuilding(a, role, "recovery checkpoint");
	if (r == 0) {
		pthread_mutex_lock(&a->meta->lock);
		a->meta->members[role].sb.recovery_offset =
			rebuilt_bytes / RAID_SECTOR_BYTES;
		r = commit_locked(a);
	}
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}

int
array_recovery_done(struct raid_array *a, unsigned role)
{
	struct raid_member *m = &a->members[role];
	struct md_sb *sb;
	int r;

	pthread_mutex_lock(&a->fail_lock);
	r = rebuilding(a, role, "recovery done");
	if (r == 0) {
		pthread_mutex_lock(&a->meta->lock);
		sb = &a->meta->members[role].sb;
		sb->feature_map &= ~(uint32_t)MD_FEATURE_RECOVERY_OFFSET;
		sb->recovery_offset = 0;
		atomic_store(&m->rebuilt, a->member_bytes);
		atomic_store(&m->state, RAID_MEMBER_IN_SYNC);
		r = commit_locked(a);
		if (array_state_now(a) == RAID_ARRAY_OPTIMAL) {
			a->reason[0] = '\0';
		}
		array_log_state(a);
		array_event(a, "SpareActive", m->path);
	}
	pthread_mutex_unlock(&a->fail_lock);
	return r;
}

/* ---- start and close ----------------------------------------------------- */

/* The spares assembly found among the members (after the roles in m). */
static int
spares_adopt(struct raid_array *a)
{
	struct raid_member *tail = a->members + a->nr_members;
	int r = 0;

	for (unsigned i = 0; i < a->meta->nr_spares; i++) {
		a->spares[i] = tail[i];
		a->spares[i].role = i;
		atomic_store(&a->spares[i].state, RAID_MEMBER_SPARE);
		tail[i].fd = -1;
		tail[i].path = NULL;
		tail[i].fault = NULL;
	}
	if (a->meta->nr_spares) {
		r = spare_overlap(a, NULL);
	}
	for (unsigned i = 0; i < a->meta->nr_spares && r == 0; i++) {
		r = spare_fits(a, &a->spares[i]);
		if (r == 0) {
			r = spare_place(a, &a->spares[i],
					meta_freshest(a->meta),
					a->meta->spares[i].sb.data_offset,
					&(struct meta_member){ 0 });
		}
	}
	return r;
}

/* Is path a member of the array already (a spare= that took a role)? */
static bool
in_array(const struct raid_array *a, const char *path)
{
	struct stat st;
	dev_t dev;
	ino_t ino;

	if (stat(path, &st) < 0) {
		return false;
	}
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	ino = S_ISBLK(st.st_mode) ? 0 : st.st_ino;
	for (unsigned i = 0; i < a->nr_members; i++) {
		const struct raid_member *m = &a->members[i];

		if (m->path && m->fd >= 0 && m->dev == dev && m->ino == ino) {
			return true;
		}
	}
	return false;
}

int
spares_start(struct raid_array *a, const struct raid_config *cfg)
{
	int r = 0;

	a->open_direct = cfg->direct;
	a->open_io = cfg->io;
	if (a->meta) {
		r = spares_adopt(a);
	}
	for (unsigned i = 0; i < cfg->nr_spares && r == 0; i++) {
		if (!in_array(a, cfg->spares[i])) {
			r = spare_add(a, cfg->spares[i], cfg->force, false);
		}
	}
	if (r == 0) {
		r = MIN(array_take_spare(a), 0);
	}
	return r;
}

void
spares_close(struct raid_array *a)
{
	for (unsigned i = 0; a->meta && i < a->meta->nr_spares; i++) {
		member_close(&a->spares[i]);
	}
}
