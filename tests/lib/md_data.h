/*
 * md_data.h: the superblocks mdadm itself wrote (tests/data/md, made by
 * its make.sh in the VM), for the unit tests: each case's members' 4 KiB
 * superblock (and bitmap page), where they live, and what mdadm --examine
 * printed.  NBDRAID_TEST_DATA (set by CMake) names tests/data.
 */
#ifndef TEST_MD_DATA_H
#define TEST_MD_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD_DATA_MAX_MEMBERS 8

struct md_case {
	const char *name;
	unsigned members;
	uint64_t member_bytes; /* the member files mdadm wrote to */
	uint64_t sb_sector;    /* where the superblock is, on each */
	bool bitmap;	       /* a bitmap page too */
	int64_t bitmap_offset; /* sectors from the superblock */
	uint8_t sb[MD_DATA_MAX_MEMBERS][4096];
	uint8_t bm[MD_DATA_MAX_MEMBERS][4096];
	char examine[MD_DATA_MAX_MEMBERS][8192]; /* mdadm --examine */
};

/* The cases make.sh made, by name. */
extern const char *const md_case_names[];
extern const unsigned md_case_count;

/* Load a case (fails the test if a file is missing). */
void md_case_load(const char *name, struct md_case *c);

/* The value mdadm --examine printed for key ("Raid Level"), or NULL. */
const char *md_examine(const char *text, const char *key, char *val,
		       size_t len);

#endif
