/* helpers.c: state of the shared test helpers (helpers.h). */
#include "helpers.h"

uint64_t t_rand_state = 42;
