/*
 * test_uring.c: a ring that fails does not take the server down.
 *
 * io_uring_submit_and_wait is wrapped at link time (-Wl,--wrap, the one
 * call the backend cannot route through a seam) to fail with EFAULT on a
 * chosen call: before anything was submitted (the batch's first call), and
 * with requests in flight (a batch larger than the ring, failing on its
 * second call).  Every request must still complete, byte-exact, through
 * pread/pwrite; the thread's next batch gets a new ring.  Skipped (77)
 * where io_uring does not work.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "io/io.h"
#include "member.h"
#include "raid.h"

#define NREQ	  100 /* more than the ring's 64 entries */
#define REQ_BYTES 4096u

static unsigned calls, fail_call;
static int real_error; /* the last error of the real call, or 0 */

int __real_io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr);

int
__wrap_io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	int r;

	if (++calls == fail_call) {
		return -EFAULT;
	}
	r = __real_io_uring_submit_and_wait(ring, wait_nr);
	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
		real_error = r;
	}
	return r;
}

static void
quiet_log(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	(void)lvl;
	if (getenv("VERBOSE")) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

struct fixture {
	char path[PATH_MAX];
	struct raid_member m;
	uint8_t *data, *got;
	struct io_req reqs[NREQ];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int fd;

	t_reset();
	snprintf(f->path, sizeof(f->path), "/var/tmp/nbdraid-uring-XXXXXX");
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, NREQ * REQ_BYTES), 0);
	close(fd);
	assert_int_equal(
		member_open(&f->m, 0, f->path, false, false, RAID_IO_URING), 0);
	f->data = malloc(NREQ * REQ_BYTES);
	f->got = malloc(NREQ * REQ_BYTES);
	t_fill_random(f->data, NREQ * REQ_BYTES);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	member_close(&f->m);
	unlink(f->path);
	free(f->data);
	free(f->got);
	free(f);
	return 0;
}

/* One batch of NREQ requests of op over the whole member. */
static int
run_batch(struct fixture *f, int op, uint8_t *buf)
{
	for (unsigned i = 0; i < NREQ; i++) {
		f->reqs[i] = (struct io_req){ .m = &f->m,
					      .op = op,
					      .buf = buf + i * REQ_BYTES,
					      .len = REQ_BYTES,
					      .off = (uint64_t)i * REQ_BYTES };
	}
	return uring_backend.submit_wait(f->reqs, NREQ);
}

static void
write_then_read(struct fixture *f, unsigned fail_on)
{
	calls = 0;
	fail_call = fail_on;
	assert_int_equal(run_batch(f, IO_WRITE, f->data), 0);
	for (unsigned i = 0; i < NREQ; i++) {
		assert_int_equal(f->reqs[i].res, 0);
	}
	/* The next batch works on a new ring. */
	fail_call = 0;
	memset(f->got, 0, NREQ * REQ_BYTES);
	assert_int_equal(run_batch(f, IO_READ, f->got), 0);
	assert_memory_equal(f->got, f->data, NREQ * REQ_BYTES);
	assert_true(calls > fail_on);
}

/* The ring fails before it took anything: all through pread/pwrite. */
static void
test_uring_fails_before_submitting(void **state)
{
	write_then_read(*state, 1);
}

/* The ring fails with 64 requests in flight: reaped, the rest finished. */
static void
test_uring_fails_with_requests_in_flight(void **state)
{
	write_then_read(*state, 2);
}

/*
 * A ring made before a fork (nbdkit --run forks after the plugin did its
 * start's I/O: superblocks, cache=log's replay) is the parent's: the
 * child's batches must not submit to it (a SINGLE_ISSUER ring refuses
 * another task with EEXIST, which dropped the ring with an error line
 * every time: issue 25 #20), and the parent's ring goes on working.
 */
static void
test_uring_ring_not_used_across_fork(void **state)
{
	struct fixture *f = *state;
	int status = -1;
	pid_t pid;

	calls = fail_call = 0;
	assert_int_equal(run_batch(f, IO_WRITE, f->data), 0);
	assert_true(calls > 0); /* this thread has a ring now */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		real_error = 0;
		memset(f->got, 0, NREQ * REQ_BYTES);
		if (run_batch(f, IO_READ, f->got) != 0 ||
		    memcmp(f->got, f->data, NREQ * REQ_BYTES) != 0) {
			_exit(2);
		}
		if (real_error) {
			fprintf(stderr, "child: io_uring_submit_and_wait: %s\n",
				strerror(-real_error));
			_exit(3);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	real_error = 0;
	memset(f->got, 0, NREQ * REQ_BYTES);
	assert_int_equal(run_batch(f, IO_READ, f->got), 0);
	assert_memory_equal(f->got, f->data, NREQ * REQ_BYTES);
	assert_int_equal(real_error, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_uring_fails_before_submitting, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_uring_fails_with_requests_in_flight, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_uring_ring_not_used_across_fork, setup, teardown),
	};
	struct io_uring ring;

	if (io_uring_queue_init(8, &ring, 0) < 0) {
		printf("SKIP: io_uring does not work here\n");
		return 77;
	}
	io_uring_queue_exit(&ring);
	t_init();
	raid_set_log(quiet_log);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
