/* model.c: requests that keep a flat model of the array (model.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"
#include "model.h"

void
model_write(struct raid_array *a, uint8_t *model, uint8_t *buf, uint64_t len,
	    uint64_t off, unsigned flags)
{
	t_fill_random(buf, len);
	assert_int_equal(raid_pwrite(a, buf, len, off, flags), 0);
	memcpy(model + off, buf, len);
}

void
model_zero(struct raid_array *a, uint8_t *model, uint64_t len, uint64_t off,
	   unsigned flags)
{
	assert_int_equal(raid_zero(a, len, off, flags), 0);
	memset(model + off, 0, len);
}

void
model_read(struct raid_array *a, const uint8_t *model, uint8_t *buf,
	   uint64_t len, uint64_t off)
{
	assert_int_equal(raid_pread(a, buf, len, off, 0), 0);
	assert_memory_equal(buf, model + off, len);
}
