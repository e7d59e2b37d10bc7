"""Random I/O over several connections at once, checked against a Model.

Workload sends random pread/pwrite/flush/trim/zero from several
connections, each in its own regions so no two requests in flight overlap,
and checks every read as it completes.  random_pass is the whole pass the
random tests share (its own nbdkit; size and flags, concurrent and serial
phases, read-back, clean stop); fill and verify_readback write and read the
whole array; Background runs the concurrent phase in a thread of its own
until stopped, while the caller does something to the array (fails a
member ...).  For the random tests: random_chunk and member_sizes (sizes
that are not whole chunks), and new_array (sparse members, plugin
parameters and an empty Model).
"""

import random
import threading

import nbd

from .common import KiB, MiB, check, fail, make_members, run_threads
from .model import Model, pattern
from .server import (Server, aio_result, aio_send, aio_wait, check_array,
                     max_request, stop_clean)


def fill(h, model, size, rng):
    """Write random data over the whole export through h, in requests as
    large as the server allows, and mirror it in model."""
    step = max_request(h, MiB)
    for off in range(0, size, step):
        data = pattern(rng, min(step, size - off))
        h.pwrite(data, off)
        model.write(off, data)


def split_regions(rng, size, count):
    """count contiguous, unaligned regions covering [0, size)."""
    cuts = sorted(rng.sample(range(1, size), count - 1))
    bounds = [0] + cuts + [size]
    return [(bounds[i], bounds[i + 1]) for i in range(count)]


def rand_len(rng, chunk, limit):
    """Request length: tiny, sub-chunk, a few chunks, or many chunks."""
    r = rng.random()
    if r < 0.25:
        n = rng.randint(1, 600)
    elif r < 0.55:
        n = rng.randint(1, 2 * chunk)
    elif r < 0.85:
        n = rng.randint(chunk, 6 * chunk + 511)
    else:
        n = rng.randint(4 * chunk, 24 * chunk)
    return max(1, min(n, limit))


class Workload:
    """Random I/O on a Server against a Model.

    Phase A (concurrent): each of `conns` connections runs in its own
    thread and owns every conns-th of 2*conns unaligned regions; it sends
    batches of up to `depth` non-overlapping aio requests inside its own
    regions, so no two in-flight requests overlap and the model stays exact.
    Phase B (serial): one connection sends requests anywhere, across region
    and array boundaries.  Reads are checked as they complete.
    """

    def __init__(self, srv, model, geo, rng, conns=4, depth=4, fast_zero=True):
        self.srv, self.model, self.geo = srv, model, geo
        self.rng = rng
        self.conns = conns
        self.depth = depth
        self.handles = [srv.connect() for _ in range(conns)]
        self.maxreq = max_request(self.handles[0])
        self.fast_zero = fast_zero and self.handles[0].can_fast_zero()
        self.counts = {}
        self.count_lock = threading.Lock()

    # One request: returns (kind, offset, length, extra); issue/complete
    # are split so a batch can be in flight together.
    def pick(self, rng, lo, hi):
        size = hi - lo
        n = rand_len(rng, self.geo.chunk, min(size, self.maxreq))
        off = lo + rng.randint(0, size - n)
        r = rng.random()
        if r < 0.35:
            return ("write", off, n, 0)
        if r < 0.45:
            return ("write", off, n, nbd.CMD_FLAG_FUA)
        if r < 0.70:
            return ("read", off, n, 0)
        if r < 0.78:
            return ("trim", off, n, rng.choice([0, nbd.CMD_FLAG_FUA]))
        if r < 0.86:
            return ("zero", off, n, 0)                    # may_trim
        if r < 0.92:
            return ("zero", off, n, nbd.CMD_FLAG_NO_HOLE)  # no trim
        if r < 0.96 and self.fast_zero:
            return ("zero", off, n, nbd.CMD_FLAG_FAST_ZERO)
        return ("flush", 0, 0, 0)

    def issue(self, h, rng, op):
        data = pattern(rng, op[2]) if op[0] == "write" else None
        cookie, buf = aio_send(h, op, data)
        return cookie, data if buf is None else buf

    def complete(self, h, op, cookie, extra):
        kind = aio_result(h, cookie, op)
        _, off, n, _ = op
        m = self.model
        if kind == "write":
            m.write(off, extra)
        elif kind == "read":
            got = extra.to_bytearray()
            bad = m.mismatch(off, got)
            if bad:
                fail("read %d+%d: %s" % (off, n, bad))
            m.resolve(off, got)
        elif kind == "trim":
            m.trim(off, n)
        elif kind == "zero":
            m.zero(off, n)
        return kind

    def batch(self, h, rng, ops):
        inflight = [(op,) + self.issue(h, rng, op) for op in ops]
        aio_wait(h)
        done = [self.complete(h, op, cookie, extra)
                for op, cookie, extra in inflight]
        with self.count_lock:
            for k in done:
                self.counts[k] = self.counts.get(k, 0) + 1

    def disjoint_ops(self, rng, lo, hi):
        """Up to depth ops on disjoint sub-ranges of [lo, hi)."""
        k = rng.randint(1, self.depth)
        if hi - lo < 2 * k:
            k = 1
        cuts = sorted(rng.sample(range(lo + 1, hi), k - 1)) if k > 1 else []
        bounds = [lo] + cuts + [hi]
        return [self.pick(rng, bounds[i], bounds[i + 1]) for i in range(k)]

    def thread_main(self, idx, regions, steps, seed_):
        rng = random.Random(seed_)
        h = self.handles[idx]
        for _ in range(steps):
            lo, hi = rng.choice(regions)
            self.batch(h, rng, self.disjoint_ops(rng, lo, hi))

    def thread_until(self, idx, regions, stop, seed_):
        rng = random.Random(seed_)
        h = self.handles[idx]
        try:
            while not stop.is_set():
                lo, hi = rng.choice(regions)
                self.batch(h, rng, self.disjoint_ops(rng, lo, hi))
        except BaseException:
            stop.set()      # one connection failed: the others stop too
            raise

    def concurrent_until(self, stop):
        """Phase A until stop (a threading.Event) is set, or until a
        connection fails (which sets it)."""
        regions = split_regions(self.rng, self.geo.size, 2 * self.conns)
        run_threads(self.thread_until,
                    [(regions[i::self.conns], stop, self.rng.getrandbits(64))
                     for i in range(self.conns)])

    def snapshot(self):
        """The request counts so far, by kind."""
        with self.count_lock:
            return dict(self.counts)

    def concurrent_phase(self, steps):
        regions = split_regions(self.rng, self.geo.size, 2 * self.conns)
        run_threads(self.thread_main,
                    [(regions[i::self.conns], steps, self.rng.getrandbits(64))
                     for i in range(self.conns)])

    def serial_phase(self, steps):
        h, rng, size = self.handles[0], self.rng, self.geo.size
        for _ in range(steps):
            r = rng.random()
            if r < 0.1:   # touch the last bytes of the array
                n = rng.randint(1, min(size, 3 * self.geo.chunk))
                op = (rng.choice(["write", "read", "zero"]), size - n, n, 0)
            else:
                op = self.pick(rng, 0, size)
            self.batch(h, rng, [op])

    def whole_array_ops(self):
        """Zero and trim spanning the whole array in one request."""
        h, size = self.handles[0], self.geo.size
        if size <= 0xffffffff:
            self.batch(h, self.rng, [("zero", 0, size, nbd.CMD_FLAG_NO_HOLE)])
            self.batch(h, self.rng, [("write", 1, min(size - 1,
                                                      self.maxreq), 0)])

    def close(self):
        for h in self.handles:
            try:
                h.flush()
            except nbd.Error as e:
                fail("final flush: %s" % e)


class Background:
    """A Workload's concurrent phase running in a thread of its own while
    the caller does something to the array (fails a member ...):

        bg = Background(w).start()
        bg.wait(1.0)        # load for a second; fails if the load failed
        ...
        bg.stop()           # stop it; raises what failed in it
    """

    def __init__(self, w):
        self.w = w
        self.stop_event = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._main)

    def _main(self):
        try:
            self.w.concurrent_until(self.stop_event)
        except BaseException as e:  # reported by wait() and stop()
            self.error = e

    def start(self):
        self.thread.start()
        return self

    def check(self):
        """Raise what failed in the load, or fail if it ended early."""
        if self.thread.is_alive():
            return
        if self.error is not None:
            raise self.error
        if not self.stop_event.is_set():
            fail("the load ended by itself")

    def wait(self, seconds):
        """Let the load run for seconds (less if it fails: then raise)."""
        self.thread.join(seconds)
        self.check()

    def stop(self):
        self.stop_event.set()
        self.thread.join()
        if self.error is not None:
            raise self.error


def random_chunk(rng):
    """A chunk size for a random geometry: 4K to 64K."""
    return rng.choice([4, 8, 16, 32, 64]) * KiB


def member_sizes(rng, n, chunk, lo, hi):
    """n member sizes of lo..hi bytes, not whole chunks (odd chunk counts
    matter: md's far stride rounds); one member is larger than the rest."""
    base = rng.randint(lo // chunk, hi // chunk) * chunk + \
        rng.randrange(1, chunk)
    sizes = [base] * n
    if n > 1:
        sizes[rng.randrange(n)] += rng.randint(1, 3) * chunk + \
            rng.randrange(1, chunk)
    return sizes


def random_pass(params, model, geo, rng, label, steps):
    """The disjoint random workload on a new nbdkit serving params: size and
    flags, concurrent and serial phases (sometimes whole-array ops), then a
    byte-exact read-back; nbdkit must then stop cleanly (exit 0 on
    SIGTERM).  Returns the Workload (its counts)."""
    with Server(params) as srv:
        check_array(srv.connect(), geo, label)
        w = Workload(srv, model, geo, rng)
        w.concurrent_phase(steps[0])
        w.serial_phase(steps[1])
        if rng.random() < 0.3:
            w.whole_array_ops()
        w.concurrent_phase(steps[0] // 2)
        w.close()
        verify_readback(srv, model, geo, label)
        stop_clean(srv, label)
    return w


def verify_readback(srv, model, geo, label=""):
    """Read the whole array from a fresh connection and compare."""
    h = srv.connect()
    check(h.get_size() == geo.size, "%s: size %d, md says %d" % (
        label, h.get_size(), geo.size))
    step = max_request(h, MiB)
    for off in range(0, geo.size, step):
        got = h.pread(min(step, geo.size - off), off)
        bad = model.mismatch(off, got)
        if bad:
            fail("%s: read-back: %s" % (label, bad))
        model.resolve(off, got)


def new_array(folder, geo, extra=()):
    """Sparse member files for geo in folder: returns their paths, the
    plugin parameters over them (then extra), and a Model of the array
    (all zero, as the members are)."""
    paths = make_members(folder, geo.sizes)
    return paths, geo.params(paths, extra), Model(geo.size)


def format_counts(counts):
    """Request counts by kind ({"read": 3, ...}) as "read=3 ...", sorted."""
    return " ".join("%s=%d" % kv for kv in sorted(counts.items()))
