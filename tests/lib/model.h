/*
 * model.h: a flat model of an array's bytes, for random-I/O tests.
 *
 * model[] holds what the array's bytes should be.  Each helper does one
 * request on the array, asserts that it succeeded and keeps the model in
 * step (model_read compares instead); the caller chooses the requests.
 */
#ifndef TEST_MODEL_H
#define TEST_MODEL_H

#include <stdint.h>

#include "raid.h"

/* len bytes of t_rand(256) into buf, written at off. */
void model_write(struct raid_array *a, uint8_t *model, uint8_t *buf,
		 uint64_t len, uint64_t off, unsigned flags);
void model_zero(struct raid_array *a, uint8_t *model, uint64_t len,
		uint64_t off, unsigned flags);
/* Read [off, off + len) into buf: the model's bytes. */
void model_read(struct raid_array *a, const uint8_t *model, uint8_t *buf,
		uint64_t len, uint64_t off);

#endif
