/* fixture.c: an array over in-memory members for cmocka cases (fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "helpers.h"

int
fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f) {
		return -1;
	}
	t_reset();
	raid_config_init(&f->cfg);
	*state = f;
	return 0;
}

int
fixture_teardown(void **state)
{
	struct fixture *f = *state;

	fixture_close(f);
	free(f);
	return 0;
}

void
fixture_members(struct fixture *f, const struct fixture_spec *spec)
{
	fixture_close(f);
	f->cfg.level = spec->level;
	f->cfg.layout = spec->layout ? strdup(spec->layout) : NULL;
	f->cfg.chunk_bytes = spec->chunk ? spec->chunk : FIXTURE_CHUNK;
	f->cfg.data_offset = spec->data_offset;
	f->cfg.member_size = spec->member_size;
	if (spec->mem_sizes) {
		f->m = mem_members_create_sizes(spec->n, spec->mem_sizes);
	} else {
		f->m = mem_members_create(spec->n, spec->mem_size);
	}
	assert_non_null(f->m);
	f->n = spec->n;
	/* What lies before data-offset (md's superblock) must never change. */
	for (unsigned i = 0; i < f->n; i++) {
		f->data_offsets[i] = spec->data_offsets ? spec->data_offsets[i]
							: spec->data_offset;
		memset(mem_of(&f->m[i])->data, FIXTURE_BEFORE_DATA,
		       f->data_offsets[i]);
	}
}

int
fixture_assemble(struct fixture *f)
{
	raid_close(f->a);
	f->a = NULL;
	return array_create(&f->cfg, f->m, f->n, f->data_offsets, &f->a);
}

int
fixture_open(struct fixture *f, const struct fixture_spec *spec)
{
	fixture_members(f, spec);
	return fixture_assemble(f);
}

void
fixture_close(struct fixture *f)
{
	raid_close(f->a);
	f->a = NULL;
	if (f->m) {
		mem_members_free(f->m, f->n);
	}
	f->m = NULL;
	f->n = 0;
	raid_config_free(&f->cfg);
	raid_config_init(&f->cfg);
}

void
fixture_reset_counts(struct fixture *f)
{
	for (unsigned i = 0; i < f->n; i++) {
		struct mem_member *mm = mem_of(&f->m[i]);

		mm->ops = mm->fua_writes = mm->vectored = mm->segments = 0;
		memset(mm->count, 0, sizeof(mm->count));
	}
}

void
fixture_check_members(struct fixture *f, const uint8_t *model)
{
	struct raid_place p[RAID_MAX_COPIES];

	for (uint64_t off = 0; off < f->a->size; off++) {
		int n = raid_locate(f->a, off, p, RAID_MAX_COPIES);

		assert_true(n >= 1);
		for (int i = 0; i < n; i++) {
			const uint8_t *d = mem_of(&f->m[p[i].member])->data;

			if (!member_alive(&f->a->members[p[i].member])) {
				continue; /* out of the array: stale */
			}
			if (d[p[i].offset] != model[off]) {
				print_error("byte %llu copy %d member %u: "
					    "%u != %u\n",
					    (unsigned long long)off, i,
					    p[i].member, d[p[i].offset],
					    model[off]);
				fail();
			}
		}
	}
}

void
fixture_check_before_data(struct fixture *f)
{
	for (unsigned i = 0; i < f->n; i++) {
		const uint8_t *d = mem_of(&f->m[i])->data;
		uint64_t data_offset = f->data_offsets[i];

		for (uint64_t j = 0; j < data_offset; j++) {
			if (d[j] != FIXTURE_BEFORE_DATA) {
				print_error("member %u byte %llu before "
					    "data-offset %llu changed\n",
					    i, (unsigned long long)j,
					    (unsigned long long)data_offset);
				fail();
			}
		}
	}
}

void
fixture_check_parity(struct fixture *f)
{
	uint64_t rows = f->a->g.member_chunks << f->a->g.chunk_shift;

	for (uint64_t off = 0; off < rows; off++) {
		uint8_t x = 0;

		/* Each member's data area starts at its own data offset. */
		for (unsigned m = 0; m < f->n; m++) {
			x ^= mem_of(&f->m[m])
				     ->data[f->a->g.data_offset[m] + off];
		}
		if (x) {
			print_error("parity wrong at member offset %llu\n",
				    (unsigned long long)off);
			fail();
		}
	}
}
