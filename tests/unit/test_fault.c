/*
 * test_fault.c: fault= rules (src/io/fault.c): the parser, every value it
 * takes and every refusal with its message; then each condition proven
 * on data over memory members (ops, rate with a seed, after, range edges,
 * trigger, touch, count, latency as a lower bound, errno, error=none),
 * several rules on one member, members without rules left alone, vectored
 * results copied back as the member's own backend left them, threads sharing a
 * rule's counters, an array whose member 1 fails a range, a RAID 5 whose
 * bad sector heals after count= hits (repaired and counted), and raid_open
 * refusing a role the array does not have.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "array.h"
#include "fixture.h"
#include "helpers.h"
#include "io/batch.h"
#include "io/fault.h"
#include "mem_backend.h"
#include "util.h"

#define MEM_SIZE (64u << 10)
#define POISON	 0xee

/* ---- helpers ----------------------------------------------------------- */

static void
attach(struct fixture *f, char *const *specs, unsigned n)
{
	assert_int_equal(fault_attach(f->m, f->n, specs, n), 0);
}

static void
detach_all(struct fixture *f)
{
	for (unsigned i = 0; i < f->n; i++) {
		fault_detach(&f->m[i]);
	}
}

/* n memory members of MEM_SIZE, member i filled with i + 1. */
static void
members(struct fixture *f, unsigned n)
{
	struct fixture_spec s = { .n = n, .mem_size = MEM_SIZE };

	fixture_members(f, &s);
	for (unsigned i = 0; i < n; i++) {
		memset(mem_of(&f->m[i])->data, i + 1, MEM_SIZE);
	}
}

/* One request through the member's backend: its res. */
static int
io(struct raid_member *m, int op, void *buf, uint64_t len, uint64_t off)
{
	struct io_req r = { .m = m,
			    .op = op,
			    .buf = buf,
			    .len = len,
			    .off = off };
	int ret = m->be->submit_wait(&r, 1);

	assert_int_equal(ret, r.res);
	assert_true(r.res < 0 ? r.done == 0 : r.done == len);
	return r.res;
}

/* A read of len at off: its res; the buffer untouched when it failed. */
static int
read_at(struct raid_member *m, uint64_t len, uint64_t off)
{
	uint8_t buf[8192];
	int r;

	assert_true(len <= sizeof(buf));
	memset(buf, POISON, sizeof(buf));
	r = io(m, IO_READ, buf, len, off);
	for (uint64_t i = 0; i < len; i++) {
		assert_int_equal(buf[i],
				 r < 0 ? POISON : mem_of(m)->data[off + i]);
	}
	return r;
}

/* A write of len bytes of `byte` at off: its res, checked on the member. */
static int
write_at(struct raid_member *m, uint8_t byte, uint64_t len, uint64_t off)
{
	uint8_t buf[8192], before[8192];
	int r;

	assert_true(len <= sizeof(buf));
	memset(buf, byte, len);
	memcpy(before, mem_of(m)->data + off, len);
	r = io(m, IO_WRITE, buf, len, off);
	assert_memory_equal(mem_of(m)->data + off, r < 0 ? before : buf, len);
	return r;
}

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}

/* The fixture's teardown, the members' rules freed first. */
static int
fault_teardown(void **state)
{
	struct fixture *f = *state;

	detach_all(f);
	return fixture_teardown(state);
}

/* ---- parsing ----------------------------------------------------------- */

static void
parse_ok(const char *spec, struct fault_rule *r)
{
	char err[512] = "";

	if (fault_parse(spec, r, err, sizeof(err)) != 0) {
		print_error("'%s': %s\n", spec, err);
		fail();
	}
}

/* The documented examples and every setting, with its value as parsed. */
static void
test_fault_parse_accepts(void **state)
{
	struct fault_rule r;

	(void)state;
	parse_ok("2:ops=read,range=1M+4k", &r);
	assert_int_equal(r.role, 2);
	assert_int_equal(r.ops, FAULT_OPS_READ);
	assert_int_equal(r.range_off, 1u << 20);
	assert_int_equal(r.range_len, 4096);
	assert_int_equal(r.err, EIO);
	assert_true(r.rate == 1.0);
	assert_null(r.trigger);
	fault_rule_fini(&r);
	parse_ok("0:after=64M", &r);
	assert_int_equal(r.after, 64u << 20);
	assert_int_equal(r.ops, FAULT_OPS_READ | FAULT_OPS_WRITE);
	fault_rule_fini(&r);
	parse_ok("1:trigger=/run/nbdraid-fail-1", &r);
	assert_string_equal(r.trigger, "/run/nbdraid-fail-1");
	fault_rule_fini(&r);
	parse_ok("3:latency=20ms,error=none", &r);
	assert_int_equal(r.latency_ns, 20000000);
	assert_int_equal(r.err, 0);
	fault_rule_fini(&r);
	parse_ok("1:rate=0.01,seed=7", &r);
	assert_true(r.rate == 0.01 && r.seed == 7);
	fault_rule_fini(&r);
	parse_ok("63:ops=write,errno=enospc,latency=500us", &r);
	assert_int_equal(r.role, 63);
	assert_int_equal(r.ops, FAULT_OPS_WRITE);
	assert_int_equal(r.err, ENOSPC);
	assert_int_equal(r.latency_ns, 500000);
	fault_rule_fini(&r);
	parse_ok("0:ops=rw,rate=0,latency=7ns,errno=ETIMEDOUT", &r);
	assert_int_equal(r.latency_ns, 7);
	assert_int_equal(r.err, ETIMEDOUT);
	fault_rule_fini(&r);
	parse_ok("2:ops=read,range=1M+4k,count=2", &r);
	assert_int_equal(r.count, 2);
	fault_rule_fini(&r);
	parse_ok("0:latency=3600s,errno=EROFS,range=0+1", &r);
	assert_int_equal(r.latency_ns, 3600ull * 1000000000ull);
	fault_rule_fini(&r);
	/* No rules: every I/O of the member fails with EIO. */
	parse_ok("1", &r);
	assert_int_equal(r.role, 1);
	assert_int_equal(r.err, EIO);
	fault_rule_fini(&r);
	parse_ok("1:", &r);
	fault_rule_fini(&r);
}

/* Every errno name the grammar lists. */
static void
test_fault_parse_errno_names(void **state)
{
	static const struct {
		const char *name;
		int err;
	} names[] = {
		{ "EIO", EIO },
		{ "ENOSPC", ENOSPC },
		{ "ENODEV", ENODEV },
		{ "ENXIO", ENXIO },
		{ "ETIMEDOUT", ETIMEDOUT },
		{ "EROFS", EROFS },
		{ "EDQUOT", EDQUOT },
		{ "EBUSY", EBUSY },
		{ "ENOMEM", ENOMEM },
		{ "EOPNOTSUPP", EOPNOTSUPP },
	};
	char spec[64];
	struct fault_rule r;

	(void)state;
	for (unsigned i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(spec, sizeof(spec), "0:errno=%s", names[i].name);
		parse_ok(spec, &r);
		assert_int_equal(r.err, names[i].err);
		fault_rule_fini(&r);
	}
}

/* Each refusal names the key, the value and the reason. */
static void
test_fault_parse_refuses(void **state)
{
	static const struct {
		const char *spec, *msg;
	} bad[] = {
		{ "1:rate=2", "fault '1:rate=2': rate must be from 0 to 1" },
		{ "1:rate=-0.1",
		  "fault '1:rate=-0.1': rate must be from 0 to 1" },
		{ "1:rate=", "fault '1:rate=': rate must be from 0 to 1" },
		{ "1:rate=nan",
		  "fault '1:rate=nan': rate must be from 0 to 1" },
		{ "1:rate=0.5x",
		  "fault '1:rate=0.5x': rate must be from 0 to 1" },
		{ "x:ops=read",
		  "fault 'x:ops=read': ROLE must be a member's role from 0 to 63, or log (cache=log's log), then :RULES" },
		{ "64:ops=read",
		  "fault '64:ops=read': ROLE must be a member's role from 0 to 63, or log (cache=log's log), then :RULES" },
		{ "",
		  "fault '': ROLE must be a member's role from 0 to 63, or log (cache=log's log), then :RULES" },
		{ "1ops=read",
		  "fault '1ops=read': ROLE must be a member's role from 0 to 63, or log (cache=log's log), then :RULES" },
		{ "1:ops=readwrite",
		  "fault '1:ops=readwrite': ops must be read, write or rw" },
		{ "1:after=lots",
		  "fault '1:after=lots': after must be a size (64M)" },
		{ "1:range=1M",
		  "fault '1:range=1M': range must be OFFSET+LENGTH (1M+4k), LENGTH not 0" },
		{ "1:range=1M+0",
		  "fault '1:range=1M+0': range must be OFFSET+LENGTH (1M+4k), LENGTH not 0" },
		{ "1:range=+4k",
		  "fault '1:range=+4k': range must be OFFSET+LENGTH (1M+4k), LENGTH not 0" },
		{ "1:trigger=run/x",
		  "fault '1:trigger=run/x': trigger must be an absolute path" },
		{ "1:touch=run/x",
		  "fault '1:touch=run/x': touch must be an absolute path" },
		{ "1:latency=10",
		  "fault '1:latency=10': latency must be a whole number and a unit (500us, 20ms, 1s), at most 3600s" },
		{ "1:latency=3601s",
		  "fault '1:latency=3601s': latency must be a whole number and a unit (500us, 20ms, 1s), at most 3600s" },
		{ "1:latency=1.5ms",
		  "fault '1:latency=1.5ms': latency must be a whole number and a unit (500us, 20ms, 1s), at most 3600s" },
		{ "1:errno=EPERM",
		  "fault '1:errno=EPERM': errno must be EIO, ENOSPC, ENODEV, ENXIO, ETIMEDOUT, EROFS, EDQUOT, EBUSY, ENOMEM or EOPNOTSUPP" },
		{ "1:error=EIO",
		  "fault '1:error=EIO': error must be none (errno= says which error)" },
		{ "1:seed=-1",
		  "fault '1:seed=-1': seed must be a whole number" },
		{ "1:seed=99999999999999999999",
		  "fault '1:seed=99999999999999999999': seed must be a whole number" },
		{ "1:count=0",
		  "fault '1:count=0': count must be a whole number from 1" },
		{ "1:count=-1",
		  "fault '1:count=-1': count must be a whole number from 1" },
		{ "1:count=2x",
		  "fault '1:count=2x': count must be a whole number from 1" },
		{ "1:count=",
		  "fault '1:count=': count must be a whole number from 1" },
		{ "1:speed=3",
		  "fault '1:speed=3': unknown setting 'speed' (ops, rate, after, range, trigger, count, latency, errno, error, seed, touch)" },
		{ "1:read",
		  "fault '1:read': setting 'read' must be NAME=VALUE" },
		{ "1:ops=read,,rate=1",
		  "fault '1:ops=read,,rate=1': empty setting (two commas, or one at an end)" },
		{ "1:ops=read,",
		  "fault '1:ops=read,': empty setting (two commas, or one at an end)" },
		{ "1:rate=0.1,rate=0.2",
		  "fault '1:rate=0.1,rate=0.2': rate given twice" },
		{ "1:latency=1ms,error=none,errno=EIO",
		  "fault '1:latency=1ms,error=none,errno=EIO': errno= and error=none contradict each other" },
		{ "1:error=none",
		  "fault '1:error=none': error=none without latency= does nothing" },
	};
	char err[512];
	struct fault_rule r;

	(void)state;
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = '\0';
		assert_int_equal(fault_parse(bad[i].spec, &r, err, sizeof(err)),
				 -EINVAL);
		assert_string_equal(err, bad[i].msg);
	}
}

/* raid_config_check refuses a bad fault= before anything opens. */
static void
test_fault_config_check_refuses(void **state)
{
	struct raid_config c;

	(void)state;
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member", "/nonexistent/a"), 0);
	assert_int_equal(raid_config_set(&c, "fault", "0:ops=read"), 0);
	assert_int_equal(raid_config_set(&c, "fault", "1:rate=2"), 0);
	assert_int_equal(raid_config_check(&c), -EINVAL);
	assert_string_equal(t_last_error,
			    "fault '1:rate=2': rate must be from 0 to 1");
	raid_config_free(&c);
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "member", "/nonexistent/a"), 0);
	assert_int_equal(raid_config_set(&c, "fault", "0:ops=read"), 0);
	assert_int_equal(raid_config_set(&c, "fault", "0:after=1M"), 0);
	assert_int_equal(raid_config_check(&c), 0);
	raid_config_free(&c);
}

/* ---- conditions, on data ----------------------------------------------- */

/* ops=read fails reads only; ops=write everything but reads. */
static void
test_fault_ops_filter(void **state)
{
	struct fixture *f = *state;
	char *rd[] = { "0:ops=read" }, *wr[] = { "0:ops=write" };
	struct raid_member *m;

	members(f, 1);
	m = f->m;
	attach(f, rd, 1);
	assert_ptr_equal(m->be, &fault_backend);
	assert_int_equal(read_at(m, 512, 0), -EIO);
	assert_int_equal(write_at(m, 0x11, 512, 0), 0);
	assert_int_equal(io(m, IO_FLUSH, NULL, 0, 0), 0);
	assert_int_equal(io(m, IO_TRIM, NULL, 512, 512), 0);
	assert_int_equal(io(m, IO_ZERO, NULL, 512, 1024), 0);
	assert_int_equal(io(m, IO_PUNCH, NULL, 512, 1536), 0);
	assert_int_equal(mem_of(m)->data[1024], 0);
	assert_int_equal(mem_of(m)->count[IO_READ], 0); /* never issued */
	assert_int_equal(fault_hits(m), 1);
	detach_all(f);
	assert_ptr_equal(m->be, &mem_backend);
	assert_null(m->fault);

	attach(f, wr, 1);
	fixture_reset_counts(f);
	memset(mem_of(m)->data, 0x22, MEM_SIZE);
	assert_int_equal(read_at(m, 512, 0), 0);
	assert_int_equal(write_at(m, 0x33, 512, 0), -EIO);
	assert_int_equal(io(m, IO_FLUSH, NULL, 0, 0), -EIO);
	assert_int_equal(io(m, IO_TRIM, NULL, 512, 512), -EIO);
	assert_int_equal(io(m, IO_ZERO, NULL, 512, 1024), -EIO);
	assert_int_equal(io(m, IO_PUNCH, NULL, 512, 1536), -EIO);
	assert_int_equal(mem_of(m)->data[512], 0x22);
	assert_int_equal(mem_of(m)->data[1024], 0x22);
	assert_int_equal(mem_of(m)->ops, 1); /* the read */
	assert_int_equal(fault_hits(m), 5);
}

/* Failures among n reads of member 0; which ones in *pattern. */
static unsigned
count_failures(struct raid_member *m, unsigned n, uint8_t *pattern)
{
	uint8_t buf[512];
	unsigned failed = 0;

	for (unsigned i = 0; i < n; i++) {
		int r = io(m, IO_READ, buf, sizeof(buf), 0);

		pattern[i] = r < 0;
		failed += r < 0;
		if (r < 0) {
			assert_int_equal(r, -EIO);
		}
	}
	return failed;
}

/*
 * rate=0.25 fails a quarter of 10000 reads (within 5 standard deviations,
 * 217), the same ones again with the same seed, others with another seed;
 * rate=0 fails none, rate=1 all.
 */
static void
test_fault_rate_seeded(void **state)
{
	enum { N = 10000 };
	static uint8_t a[N], b[N], c[N];
	struct fixture *f = *state;
	char *q7[] = { "0:rate=0.25,seed=7" }, *q8[] = { "0:rate=0.25,seed=8" };
	char *none[] = { "0:rate=0" }, *all[] = { "0:rate=1" };
	unsigned n;

	members(f, 1);
	attach(f, q7, 1);
	n = count_failures(f->m, N, a);
	assert_in_range(n, N / 4 - 217, N / 4 + 217);
	assert_int_equal(fault_hits(f->m), n);
	attach(f, q7, 1); /* replaces the rules: the stream starts again */
	assert_int_equal(count_failures(f->m, N, b), n);
	assert_memory_equal(a, b, N);
	attach(f, q8, 1);
	n = count_failures(f->m, N, c);
	assert_in_range(n, N / 4 - 217, N / 4 + 217);
	assert_memory_not_equal(a, c, N);
	attach(f, none, 1);
	assert_int_equal(count_failures(f->m, N, c), 0);
	attach(f, all, 1);
	assert_int_equal(count_failures(f->m, 100, c), 100);
}

/*
 * after=6k,ops=write: the bytes are counted before each decision, so the
 * write that crosses 6K still passes and every write after it fails;
 * reads (not counted by an ops=write rule) pass throughout.
 */
static void
test_fault_after_bytes(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "0:after=6k,ops=write" };
	struct raid_member *m;

	members(f, 1);
	m = f->m;
	attach(f, spec, 1);
	assert_int_equal(read_at(m, 8192, 0), 0);
	assert_int_equal(write_at(m, 0x41, 4096, 0), 0); /* seen 0 */
	assert_int_equal(read_at(m, 8192, 0), 0);
	assert_int_equal(write_at(m, 0x42, 4096, 4096), 0); /* seen 4K */
	assert_int_equal(write_at(m, 0x43, 1, 8192), -EIO); /* seen 8K */
	assert_int_equal(write_at(m, 0x44, 4096, 0), -EIO);
	assert_int_equal(read_at(m, 8192, 0), 0);
	assert_int_equal(mem_of(m)->data[0], 0x41);
	assert_int_equal(mem_of(m)->data[4096], 0x42);
	assert_int_equal(fault_hits(m), 2);
}

/* range=8k+4k: a byte before or after passes, the first or last fails. */
static void
test_fault_range_edges(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "0:range=8k+4k" };
	struct raid_member *m;

	members(f, 1);
	m = f->m;
	attach(f, spec, 1);
	assert_int_equal(read_at(m, 4096, 4096), 0);  /* ends at 8K */
	assert_int_equal(read_at(m, 1, 8191), 0);     /* one byte before */
	assert_int_equal(read_at(m, 2, 8191), -EIO);  /* and the first */
	assert_int_equal(read_at(m, 1, 8192), -EIO);  /* the first */
	assert_int_equal(read_at(m, 1, 12287), -EIO); /* the last */
	assert_int_equal(read_at(m, 2, 12287), -EIO);
	assert_int_equal(read_at(m, 1, 12288), 0);	/* one byte after */
	assert_int_equal(read_at(m, 8192, 12288), 0);	/* all after */
	assert_int_equal(read_at(m, 8192, 6144), -EIO); /* across it */
	assert_int_equal(write_at(m, 0x55, 1, 12288), 0);
	assert_int_equal(write_at(m, 0x55, 1, 12287), -EIO);
	/* A flush has no range: never hit by a range rule. */
	assert_int_equal(io(m, IO_FLUSH, NULL, 0, 0), 0);
	assert_int_equal(fault_hits(m), 6);
}

/* trigger=PATH: fails while the file exists, from one I/O to the next. */
static void
test_fault_trigger_file(void **state)
{
	struct fixture *f = *state;
	char path[64], spec[96], *specs[] = { spec };
	struct raid_member *m;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_fault-%d.trigger", getpid());
	snprintf(spec, sizeof(spec), "0:ops=read,trigger=%s", path);
	unlink(path);
	members(f, 1);
	m = f->m;
	attach(f, specs, 1);
	assert_int_equal(read_at(m, 512, 0), 0);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(read_at(m, 512, 0), -EIO);
	assert_int_equal(read_at(m, 512, 4096), -EIO);
	assert_int_equal(write_at(m, 0x66, 512, 0), 0); /* ops=read */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(read_at(m, 512, 0), 0);
	assert_int_equal(fault_hits(m), 2);
}

/*
 * touch=PATH: the file appears at the rule's first hit, not before (the
 * I/Os it passes); with range= and after= it marks "the Nth superblock
 * write" (4K at 4K: 1.2's), error=none with a latency holding it.
 */
static void
test_fault_touch_file(void **state)
{
	struct fixture *f = *state;
	char path[64], spec[160], *specs[] = { spec };
	struct raid_member *m;

	snprintf(path, sizeof(path), "/tmp/test_fault-%d.touch", getpid());
	snprintf(spec, sizeof(spec),
		 "0:ops=write,range=4k+4k,after=8k,count=1,latency=1ms,"
		 "error=none,touch=%s",
		 path);
	unlink(path);
	members(f, 1);
	m = f->m;
	attach(f, specs, 1);
	assert_int_equal(write_at(m, 0x11, 4096, 4096), 0);  /* the 1st */
	assert_int_equal(write_at(m, 0x12, 4096, 16384), 0); /* elsewhere */
	assert_int_equal(write_at(m, 0x13, 4096, 4096), 0);  /* the 2nd */
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(fault_hits(m), 0);
	assert_int_equal(write_at(m, 0x14, 4096, 4096), 0); /* the 3rd */
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(fault_hits(m), 1);
	assert_int_equal(mem_of(m)->data[4096], 0x14); /* error=none */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(write_at(m, 0x15, 4096, 4096), 0); /* count=1 */
	assert_int_equal(access(path, F_OK), -1);
}

/*
 * count=2: the rule hits two I/Os, then none (a sector that fails, and
 * fails its retry, then works); I/Os the other conditions pass (writes of
 * an ops=read rule, reads while the trigger is absent) are not counted.
 */
static void
test_fault_count_hits(void **state)
{
	struct fixture *f = *state;
	char path[64], spec[96], *specs[] = { spec };
	struct raid_member *m;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_fault-%d.count", getpid());
	snprintf(spec, sizeof(spec), "0:ops=read,trigger=%s,count=2", path);
	unlink(path);
	members(f, 1);
	m = f->m;
	attach(f, specs, 1);
	assert_int_equal(read_at(m, 512, 0), 0); /* no trigger: not counted */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(write_at(m, 0x77, 512, 0), 0); /* ops=read */
	assert_int_equal(read_at(m, 512, 0), -EIO);
	assert_int_equal(read_at(m, 512, 4096), -EIO);
	assert_int_equal(read_at(m, 512, 0), 0);
	assert_int_equal(read_at(m, 8192, 0), 0);
	assert_int_equal(fault_hits(m), 2);
	assert_int_equal(unlink(path), 0);
}

/*
 * latency= delays, at least by the setting (no upper bound is asserted:
 * a loaded machine may take longer); error=none passes the data; rules
 * that both hit add up; a call sleeps once for all its reqs (the most any
 * of them must wait), not once per req.
 */
static void
test_fault_latency_lower_bound(void **state)
{
	struct fixture *f = *state;
	char *one[] = { "0:latency=20ms,error=none" };
	char *two[] = { "0:latency=10ms,error=none",
			"0:latency=15ms,error=none,ops=read" };
	char *fails[] = { "0:latency=5ms,errno=ETIMEDOUT" };
	uint8_t buf[3][512];
	struct io_req r[3];
	uint64_t t;

	members(f, 1);
	attach(f, one, 1);
	t = now_ns();
	assert_int_equal(read_at(f->m, 512, 0), 0);
	assert_true(now_ns() - t >= 20000000);
	t = now_ns();
	assert_int_equal(write_at(f->m, 0x77, 512, 0), 0);
	assert_true(now_ns() - t >= 20000000);
	/* Three reqs in one call: the call waits (at least) 20ms. */
	for (unsigned i = 0; i < 3; i++) {
		r[i] = (struct io_req){ .m = f->m,
					.op = IO_READ,
					.buf = buf[i],
					.len = 512,
					.off = i * 512 };
	}
	t = now_ns();
	assert_int_equal(f->m->be->submit_wait(r, 3), 0);
	assert_true(now_ns() - t >= 20000000);
	assert_int_equal(fault_hits(f->m), 5);

	attach(f, two, 2);
	t = now_ns();
	assert_int_equal(read_at(f->m, 512, 0), 0);
	assert_true(now_ns() - t >= 25000000);
	t = now_ns();
	assert_int_equal(write_at(f->m, 0x78, 512, 0), 0);
	assert_true(now_ns() - t >= 10000000);

	/* A hit that fails waits first: a timeout. */
	attach(f, fails, 1);
	t = now_ns();
	assert_int_equal(read_at(f->m, 512, 0), -ETIMEDOUT);
	assert_true(now_ns() - t >= 5000000);
}

/* errno= picks the error; the default is EIO. */
static void
test_fault_errno_chosen(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "0:errno=ENOSPC,ops=write", "1:errno=EROFS" };

	members(f, 2);
	attach(f, spec, 2);
	assert_int_equal(write_at(&f->m[0], 1, 512, 0), -ENOSPC);
	assert_int_equal(read_at(&f->m[0], 512, 0), 0);
	assert_int_equal(read_at(&f->m[1], 512, 0), -EROFS);
	assert_int_equal(io(&f->m[1], IO_FLUSH, NULL, 0, 0), -EROFS);
}

/*
 * Several rules on one member: each is checked, the first that fails
 * decides the errno, a delay-only rule never fails.
 */
static void
test_fault_several_rules(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "0:ops=write,errno=EROFS", "0:range=0+4k,errno=ENOSPC",
			 "0:latency=1ms,error=none,range=16k+4k" };

	members(f, 1);
	attach(f, spec, 3);
	assert_int_equal(f->m->fault->nr_rules, 3);
	assert_int_equal(write_at(f->m, 1, 512, 0), -EROFS);
	assert_int_equal(read_at(f->m, 512, 0), -ENOSPC);
	assert_int_equal(read_at(f->m, 512, 8192), 0);
	assert_int_equal(write_at(f->m, 1, 512, 8192), -EROFS);
	assert_int_equal(read_at(f->m, 512, 16384), 0);
	assert_int_equal(f->m->fault->rules[0].hits, 2);
	assert_int_equal(f->m->fault->rules[1].hits, 2);
	assert_int_equal(f->m->fault->rules[2].hits, 1);
}

/* A member without rules keeps its own backend: nothing of it changes. */
static void
test_fault_member_without_rules_untouched(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "1:ops=read" };
	uint8_t buf[3][512];
	struct batch *b;

	members(f, 3);
	attach(f, spec, 1);
	assert_ptr_equal(f->m[0].be, &mem_backend);
	assert_null(f->m[0].fault);
	assert_ptr_equal(f->m[1].be, &fault_backend);
	assert_ptr_equal(f->m[2].be, &mem_backend);
	assert_int_equal(read_at(&f->m[0], 512, 0), 0);
	assert_int_equal(read_at(&f->m[1], 512, 0), -EIO);
	assert_int_equal(read_at(&f->m[2], 512, 0), 0);
	/* Through a batch: members with and without rules, one request. */
	b = batch_begin();
	assert_non_null(b);
	assert_int_equal(batch_read(b, &f->m[0], buf[0], 512, 0), 0);
	assert_int_equal(batch_read(b, &f->m[1], buf[1], 512, 0), 0);
	assert_int_equal(batch_read(b, &f->m[2], buf[2], 512, 0), 0);
	assert_int_equal(batch_run(b), -EIO);
	assert_int_equal(b->reqs[0].res, 0);
	assert_int_equal(b->reqs[1].res, -EIO);
	assert_int_equal(b->reqs[2].res, 0);
	assert_int_equal(buf[0][0], 1);
	assert_int_equal(buf[2][0], 3);
	assert_int_equal(mem_of(&f->m[0])->ops, 2);
	assert_int_equal(mem_of(&f->m[1])->ops, 0);
	assert_int_equal(mem_of(&f->m[2])->ops, 2);
}

/*
 * A backend that moves a vectored request the way a short transfer does:
 * 700 bytes at a time through io_req_advance (so iov/nr_iov move), over
 * the memory member's bytes.
 */
static int
short_submit_wait(struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		struct io_req *r = &reqs[i];
		uint8_t *data = mem_of(r->m)->data + r->off;

		r->res = 0;
		while (r->done < r->len) {
			struct iovec one = { (char *)r->buf + r->done,
					     r->len - r->done };
			struct iovec *v = r->nr_iov ? r->iov : &one;
			uint64_t n =
				MIN(MIN(700, v->iov_len), r->len - r->done);

			if (r->op == IO_READ) {
				memcpy(v->iov_base, data + r->done, n);
			} else {
				memcpy(data + r->done, v->iov_base, n);
			}
			io_req_advance(r, n);
		}
	}
	return 0;
}

static const struct io_backend short_backend = {
	.name = "short",
	.submit_wait = short_submit_wait,
};

/* reqs: vectored reads of member m at off 0 and 8K, three segments each. */
static void
vectored_reqs(struct raid_member *m, struct io_req *r, struct iovec *iov,
	      uint8_t (*buf)[1000])
{
	for (unsigned k = 0; k < 2; k++) {
		for (unsigned s = 0; s < 3; s++) {
			iov[k * 3 + s] = (struct iovec){ buf[k * 3 + s], 1000 };
		}
		r[k] = (struct io_req){ .m = m,
					.op = IO_READ,
					.nr_iov = 3,
					.iov = &iov[k * 3],
					.len = 3000,
					.off = k * 8192 };
	}
}

/*
 * Vectored reqs that pass come back exactly as the member's own backend
 * leaves them (res, done, iov and nr_iov moved by io_req_advance), also
 * when a failing req of the same call forces the copied path; a failed
 * one keeps its segments and done 0; members with different own backends
 * in one call each get theirs.
 */
static void
test_fault_vectored_results_copied_back(void **state)
{
	struct fixture *f = *state;
	char *spec[] = { "0:range=8k+1", "1:range=0+1" };
	struct io_req want[2], got[6];
	struct iovec iov_w[6], iov_g[18];
	uint8_t bw[6][1000], bg[18][1000];

	members(f, 2);
	t_fill_random(mem_of(&f->m[0])->data, MEM_SIZE);
	t_fill_random(mem_of(&f->m[1])->data, MEM_SIZE);
	f->m[0].be = &short_backend;
	vectored_reqs(&f->m[0], want, iov_w, bw);
	assert_int_equal(short_submit_wait(want, 2), 0);
	assert_int_equal(want[0].done, 3000);

	attach(f, spec, 2);
	assert_ptr_equal(f->m[0].fault->be, &short_backend);
	/* Member 0 (short), member 1 (mem), member 0 again: one call. */
	vectored_reqs(&f->m[0], &got[0], &iov_g[0], &bg[0]);
	vectored_reqs(&f->m[1], &got[2], &iov_g[6], &bg[6]);
	vectored_reqs(&f->m[0], &got[4], &iov_g[12], &bg[12]);
	memset(bg, POISON, sizeof(bg));
	assert_int_equal(fault_backend.submit_wait(got, 6), -EIO);
	for (unsigned k = 0; k < 6; k += 4) {
		/* Member 0 at 0 passes as short_backend left it... */
		assert_int_equal(got[k].res, 0);
		assert_int_equal(got[k].done, want[0].done);
		assert_int_equal(got[k].nr_iov, want[0].nr_iov);
		assert_int_equal(got[k].iov - &iov_g[3 * k],
				 want[0].iov - &iov_w[0]);
		assert_memory_equal(bg[3 * k], bw[0], 3000);
		/* ...at 8K fails: its first byte is in the range. */
		assert_int_equal(got[k + 1].res, -EIO);
		assert_int_equal(got[k + 1].done, 0);
		assert_int_equal(got[k + 1].nr_iov, 3);
		assert_ptr_equal(got[k + 1].iov, &iov_g[3 * k + 3]);
		assert_int_equal(bg[3 * k + 3][0], POISON);
	}
	/* Member 1 at 0 fails, at 8K passes through mem_backend. */
	assert_int_equal(got[2].res, -EIO);
	assert_int_equal(got[3].res, 0);
	assert_int_equal(got[3].done, 3000);
	assert_memory_equal(bg[9], mem_of(&f->m[1])->data + 8192, 1000);
	assert_memory_equal(bg[11], mem_of(&f->m[1])->data + 10192, 1000);
	detach_all(f);
	assert_ptr_equal(f->m[0].be, &short_backend);
	f->m[0].be = &mem_backend;
}

/*
 * RAID 0 over 2 memory members, chunk 4K, member 1's member bytes
 * [8K, 12K) bad for reads: array reads touching its chunk (array offset
 * 20K: chunk 5, member 1's third chunk) fail with EIO, every other read
 * is byte-exact, and writes there pass.
 */
static void
test_fault_array_raid0_bad_range(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 0, .n = 2, .mem_size = MEM_SIZE };
	char *spec[] = { "1:ops=read,range=8k+4k" };
	static uint8_t model[2 * MEM_SIZE], buf[2 * MEM_SIZE];
	uint64_t size;

	assert_int_equal(fixture_open(f, &s), 0);
	size = f->a->size;
	t_fill_random(model, size);
	assert_int_equal(raid_pwrite(f->a, model, size, 0, 0), 0);
	attach(f, spec, 1);
	assert_int_equal(raid_pread(f->a, buf, 20480, 0, 0), 0);
	assert_memory_equal(buf, model, 20480);
	assert_int_equal(raid_pread(f->a, buf, size - 24576, 24576, 0), 0);
	assert_memory_equal(buf, model + 24576, size - 24576);
	assert_int_equal(raid_pread(f->a, buf, 1, 20480, 0), -EIO);
	assert_int_equal(raid_pread(f->a, buf, 1, 24575, 0), -EIO);
	assert_int_equal(raid_pread(f->a, buf, 2, 20479, 0), -EIO);
	assert_int_equal(raid_pread(f->a, buf, size, 0, 0), -EIO);
	assert_int_equal(raid_pwrite(f->a, model, 4096, 20480, 0), 0);
	detach_all(f);
}

/*
 * RAID 5 over 3 memory members: a sector of the member holding array
 * offset 9K fails twice (the read and its retry, count=2), then works: the
 * read is served from parity, the sector rewritten and read back, counted
 * as a corrected read; the array stays optimal and reads it directly from
 * then on.
 */
static void
test_fault_array_raid5_count_heals(void **state)
{
	struct fixture *f = *state;
	struct fixture_spec s = { .level = 5, .n = 3, .mem_size = MEM_SIZE };
	static uint8_t model[2 * MEM_SIZE], buf[2 * MEM_SIZE];
	char spec[96], *specs[] = { spec };
	struct raid_place p;
	struct raid_status st;
	uint64_t size;

	assert_int_equal(fixture_open(f, &s), 0);
	size = f->a->size;
	t_fill_random(model, size);
	assert_int_equal(raid_pwrite(f->a, model, size, 0, 0), 0);
	assert_int_equal(raid_locate(f->a, 9216, &p, 1), 1);
	snprintf(spec, sizeof(spec), "%u:ops=read,range=%llu+512,count=2",
		 p.member, (unsigned long long)p.offset);
	attach(f, specs, 1);
	assert_int_equal(raid_pread(f->a, buf, 4096, 8192, 0), 0);
	assert_memory_equal(buf, model + 8192, 4096);
	assert_int_equal(fault_hits(&f->m[p.member]), 2);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.state, RAID_ARRAY_OPTIMAL);
	assert_int_equal(st.members[p.member].state, RAID_MEMBER_IN_SYNC);
	assert_int_equal(st.members[p.member].read_errors, 1);
	assert_int_equal(st.members[p.member].corrected_reads, 4096 / 512);
	assert_int_equal(raid_pread(f->a, buf, size, 0, 0), 0);
	assert_memory_equal(buf, model, size);
	assert_int_equal(raid_status(f->a, &st), 0);
	assert_int_equal(st.members[p.member].read_errors, 1);
	detach_all(f);
}

/* A backend that completes every req at once, touching nothing else. */
static int
null_submit_wait(struct io_req *reqs, unsigned nr)
{
	for (unsigned i = 0; i < nr; i++) {
		reqs[i].done = reqs[i].len;
		reqs[i].res = 0;
	}
	return 0;
}

static const struct io_backend null_backend = {
	.name = "null",
	.submit_wait = null_submit_wait,
};

#define THREADS	     4
#define THREAD_READS 2500

struct reader {
	pthread_t t;
	struct raid_member *m;
	unsigned failed;
};

static void *
reader_main(void *p)
{
	struct reader *rd = p;
	struct io_req r;

	for (unsigned i = 0; i < THREAD_READS; i++) {
		r = (struct io_req){ .m = rd->m,
				     .op = IO_READ,
				     .len = 512,
				     .off = 0 };
		rd->m->be->submit_wait(&r, 1);
		rd->failed += r.res < 0;
	}
	return NULL;
}

/* Failures among THREADS threads reading at once. */
static unsigned
threads_failed(struct raid_member *m)
{
	struct reader rd[THREADS];
	unsigned failed = 0;

	for (unsigned i = 0; i < THREADS; i++) {
		rd[i] = (struct reader){ .m = m };
		assert_int_equal(
			pthread_create(&rd[i].t, NULL, reader_main, &rd[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(rd[i].t, NULL);
		failed += rd[i].failed;
	}
	return failed;
}

/*
 * Threads share a rule's counters without losing any: after=1M over
 * 512-byte reads lets exactly 2048 pass, however the threads interleave;
 * rate=0.25 hits a quarter (5 sigma) and every hit is counted once;
 * count=100 hits exactly 100.
 */
static void
test_fault_threads_share_counters(void **state)
{
	enum { N = THREADS * THREAD_READS };
	struct fixture *f = *state;
	char *after[] = { "0:after=1M" }, *rate[] = { "0:rate=0.25,seed=3" };
	char *count[] = { "0:count=100" };
	unsigned n;

	members(f, 1);
	f->m->be = &null_backend;
	attach(f, after, 1);
	assert_int_equal(threads_failed(f->m), N - 2048);
	assert_int_equal(f->m->fault->rules[0].seen, (uint64_t)N * 512);
	attach(f, rate, 1);
	n = threads_failed(f->m);
	assert_in_range(n, N / 4 - 217, N / 4 + 217);
	assert_int_equal(fault_hits(f->m), n);
	attach(f, count, 1);
	assert_int_equal(threads_failed(f->m), 100);
	assert_int_equal(fault_hits(f->m), 100);
	detach_all(f);
	assert_ptr_equal(f->m->be, &null_backend);
	f->m->be = &mem_backend;
}

/* raid_open: a role the array lacks is refused; the rules are attached. */
static void
test_fault_open_roles(void **state)
{
	char dir[] = "/tmp/test_fault-XXXXXX", path[2][64];
	struct raid_config c;
	struct raid_array *a = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (unsigned i = 0; i < 2; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/m%u.img", dir, i);
		close(open(path[i], O_CREAT | O_WRONLY, 0600));
		assert_int_equal(truncate(path[i], 1 << 20), 0);
	}
	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "level", "0"), 0);
	assert_int_equal(raid_config_set(&c, "chunk", "64k"), 0);
	assert_int_equal(raid_config_set(&c, "member", path[0]), 0);
	assert_int_equal(raid_config_set(&c, "member", path[1]), 0);
	assert_int_equal(raid_config_set(&c, "fault", "1:ops=read"), 0);
	assert_int_equal(raid_config_set(&c, "fault", "2:ops=read"), 0);
	assert_int_equal(raid_open(&c, &a), -EINVAL);
	assert_string_equal(
		t_last_error,
		"fault '2:ops=read': no role 2: the array has 2 members (roles 0 to 1)");
	raid_config_free(&c);

	raid_config_init(&c);
	assert_int_equal(raid_config_set(&c, "level", "0"), 0);
	assert_int_equal(raid_config_set(&c, "chunk", "64k"), 0);
	assert_int_equal(raid_config_set(&c, "member", path[0]), 0);
	assert_int_equal(raid_config_set(&c, "member", path[1]), 0);
	assert_int_equal(raid_config_set(&c, "fault", "1:ops=read"), 0);
	assert_int_equal(raid_open(&c, &a), 0);
	assert_null(a->members[0].fault);
	assert_non_null(a->members[1].fault);
	{
		uint8_t buf[4096];

		assert_int_equal(raid_pread(a, buf, 4096, 0, 0), 0);
		assert_int_equal(raid_pread(a, buf, 4096, 65536, 0), -EIO);
	}
	raid_close(a);
	raid_config_free(&c);
	for (unsigned i = 0; i < 2; i++) {
		unlink(path[i]);
	}
	rmdir(dir);
}

/*
 * fault=log:RULES: rules for cache=log's log, not a member's (members are
 * left alone, no role is refused); a write in range hits, a sync (no
 * range) only a rule without one; the first hit is said in the error log;
 * cache=ram with such a rule is refused at start.
 */
static void
test_fault_log_role(void **state)
{
	struct fixture *f = *state;
	char *specs[] = { "log:ops=write,range=8192+8192,errno=EIO",
			  "log:ops=write,after=16k,errno=EROFS" };
	struct fault_rule r;
	struct fault *lf;
	char err[256];
	int e;

	assert_int_equal(fault_parse("log", &r, err, sizeof(err)), 0);
	assert_int_equal(r.role, FAULT_ROLE_LOG);
	fault_rule_fini(&r);
	assert_int_equal(fault_parse("logs:ops=read", &r, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "or log"));
	members(f, 2);
	attach(f, specs, 2);
	assert_null(f->m[0].fault);
	assert_null(f->m[1].fault);
	lf = fault_log_rules(specs, 2, &e);
	assert_int_equal(e, 0);
	assert_non_null(lf);
	assert_int_equal(fault_log_decide(lf, "/l", true, 0, 8192), 0);
	assert_int_equal(fault_log_decide(lf, "/l", false, 0, 0), 0);
	assert_int_equal(fault_log_decide(lf, "/l", true, 16384, 8192), 0);
	assert_int_equal(fault_log_decide(lf, "/l", true, 12288, 4096), -EIO);
	assert_non_null(strstr(t_errors, "cache-log /l: fault "
					 "'log:ops=write,range=8192+8192"));
	assert_non_null(
		strstr(t_last_error, "first hit (write at 12288+4096)"));
	assert_int_equal(fault_log_decide(lf, "/l", true, 1 << 20, 4096),
			 -EROFS);
	assert_int_equal(fault_log_decide(lf, "/l", false, 0, 0), -EROFS);
	fault_log_free(lf);
	assert_null(fault_log_rules(specs, 0, &e));
	detach_all(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fault_parse_accepts, t_setup),
		cmocka_unit_test_setup_teardown(test_fault_log_role,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup(test_fault_parse_errno_names, t_setup),
		cmocka_unit_test_setup(test_fault_parse_refuses, t_setup),
		cmocka_unit_test_setup(test_fault_config_check_refuses,
				       t_setup),
		cmocka_unit_test_setup_teardown(test_fault_ops_filter,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_rate_seeded,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_after_bytes,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_range_edges,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_trigger_file,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_touch_file,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_count_hits,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_latency_lower_bound,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_errno_chosen,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(test_fault_several_rules,
						fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(
			test_fault_member_without_rules_untouched,
			fixture_setup, fault_teardown),
		cmocka_unit_test_setup_teardown(
			test_fault_vectored_results_copied_back, fixture_setup,
			fault_teardown),
		cmocka_unit_test_setup_teardown(
			test_fault_array_raid0_bad_range, fixture_setup,
			fault_teardown),
		cmocka_unit_test_setup_teardown(
			test_fault_array_raid5_count_heals, fixture_setup,
			fault_teardown),
		cmocka_unit_test_setup_teardown(
			test_fault_threads_share_counters, fixture_setup,
			fault_teardown),
		cmocka_unit_test_setup(test_fault_open_roles, t_setup),
	};

	t_init();
	raid_set_log(t_capture_log); /* member errors are expected here */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
