/*
 * fixture.h: the unit tests' array over in-memory members (mem_backend.h).
 *
 * A case registered with cmocka_unit_test_setup_teardown(test,
 * fixture_setup, fixture_teardown) finds a struct fixture in *state, its
 * random stream at the base seed (helpers.h).  fixture_open() makes the
 * config and the members a struct fixture_spec describes and assembles an
 * array over them; opening again first closes what was open, and the
 * teardown closes whatever the case left open, failed assert or not.
 * fixture_members() and fixture_assemble() are the two halves of
 * fixture_open(), for a case that changes the members or the config in
 * between (and fixture_assemble() again reassembles over the same
 * members).  The bytes before data-offset hold FIXTURE_BEFORE_DATA, which
 * fixture_check_before_data() proves untouched.
 */
#ifndef TEST_FIXTURE_H
#define TEST_FIXTURE_H

#include <stdint.h>

#include "array.h"
#include "mem_backend.h"

#define FIXTURE_CHUNK	    4096u /* the chunk when the spec gives none */
#define FIXTURE_BEFORE_DATA 0xa5  /* every member byte before data-offset */

struct fixture_spec {
	int level;		      /* 0, 1, 5 or 10 */
	const char *layout;	      /* layout=; NULL: the level's default */
	unsigned n;		      /* members */
	uint64_t mem_size;	      /* bytes of every memory member, */
	const uint64_t *mem_sizes;    /* or of each (n of them) when set */
	uint64_t chunk;		      /* 0: FIXTURE_CHUNK */
	uint64_t data_offset;	      /* data-offset= */
	const uint64_t *data_offsets; /* or each member's (as md allows) */
	uint64_t member_size; /* member-size=; 0: what the members hold */
};

struct fixture {
	struct raid_config cfg;
	uint64_t data_offsets[RAID_MAX_MEMBERS]; /* each member's */
	struct raid_member *m; /* n memory members; NULL when none */
	unsigned n;
	struct raid_array *a; /* NULL when none is open (or it was refused) */
};

int fixture_setup(void **state);
int fixture_teardown(void **state);

/* fixture_members() then fixture_assemble(): 0 or array_create's -errno. */
int fixture_open(struct fixture *f, const struct fixture_spec *spec);
/* Close what was open; the spec's config and members, no array yet. */
void fixture_members(struct fixture *f, const struct fixture_spec *spec);
/* Close the array if one is open; a new one over f->cfg and f->m. */
int fixture_assemble(struct fixture *f);
/* The array, the members and the config, whichever are there. */
void fixture_close(struct fixture *f);

/* Zero every member's request counters (ops, count[], FUA, vectors). */
void fixture_reset_counts(struct fixture *f);
/* Every copy of every array byte holds model's byte (raid_locate), on
 * every member still in the array. */
void fixture_check_members(struct fixture *f, const uint8_t *model);
/* No member byte before data-offset changed. */
void fixture_check_before_data(struct fixture *f);
/* RAID 5: every row of the members' data areas XORs to zero. */
void fixture_check_parity(struct fixture *f);

#endif
