#!/usr/bin/python3
"""RAID5: random I/O over concurrent connections matches a byte model, the
member files hold every data byte where md would put it, and every stripe's
parity is the XOR of its data, also after connections fight over the same
stripes.

For each layout (left/right, symmetric/asymmetric, named in full, by alias
or left to the default) on 3, 4 and 6 members (and 5 for left-symmetric),
chunk 4K..64K, members of a few MiB with one larger than the rest:
  (a) the random workload of test-model-random.py: 4 connections at once,
      each in its own unaligned regions (which share stripes with the other
      connections' regions), pread/pwrite(+FUA)/flush/trim/zero(+/-may_trim,
      fast), then one connection anywhere, then the whole array read back
      byte-exact; nbdkit stops and the member files are checked: every data
      byte where the md model says it lives, parity (XOR of all members is
      zero on every stripe row in use), nothing written outside the map;
  (b) nbdkit again on the same members: 6 connections hammer the same 1-3
      stripes with overlapping, unaligned writes, trims and zeroes (and
      reads, flushes) all at once.  The final bytes of racing writes are
      unknown, so after a flush the array is read and becomes the model;
      what is checked is that bytes outside those stripes did not change,
      and that every byte inside (and every byte each read returned during
      the fight) is one some request could have left there, given which
      requests were answered before others were sent (see Contention);
      then a short disjoint workload, read-back, stop, and
  (c) the member files again: data where md puts it, parity on every row.
Then direct=true (ext4 in /var/tmp, when O_DIRECT works), io=uring (when
io_uring works) and io=psync passes.

If $NBDRAID_CLI has a `check` command, it must report 0 mismatched stripes
(exit 0) after every workload, and exactly K (exit non-zero) after K
distinct stripes were corrupted in the member files; otherwise that part is
skipped with a message.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects geometries.
"""

import bisect
import errno
import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbdraid_test as t  # noqa: E402

KiB = t.KiB
MiB = t.MiB

LAYOUTS = ["left-symmetric", "left-asymmetric", "right-symmetric",
           "right-asymmetric"]
GEOMETRIES = [(lay, n) for lay in LAYOUTS for n in (3, 4, 6)] + \
    [("left-symmetric", 5)]

EQ = bytes([1] + [0] * 255)    # translate: 1 where the byte is 0, else 0
INF = float("inf")


def eq_mask(a, b):
    """1 where a[i] == b[i], else 0 (a and b the same length)."""
    n = len(a)
    x = int.from_bytes(a, "little") ^ int.from_bytes(b, "little")
    return x.to_bytes(n, "little").translate(EQ)


def or_into(mask, start, other):
    """mask[start:start+len(other)] |= other (0/1 byte masks)."""
    e = start + len(other)
    v = int.from_bytes(mask[start:e], "little") | \
        int.from_bytes(other, "little")
    mask[start:e] = v.to_bytes(len(other), "little")


def and_mask(a, b):
    return (int.from_bytes(a, "little") & int.from_bytes(b, "little")) \
        .to_bytes(len(a), "little")


def member_sizes(rng, n, chunk):
    """n sizes of a few MiB, not whole chunks; one member is larger."""
    base = rng.randint(2 * MiB // chunk, 3 * MiB // chunk) * chunk + \
        rng.randrange(1, chunk)
    sizes = [base] * n
    sizes[rng.randrange(n)] += rng.randint(1, 3) * chunk + \
        rng.randrange(1, chunk)
    return sizes


def spelling(rng, layout):
    """How the test names the layout: in full, by alias, or (for the
    default) not at all."""
    choices = [layout, t.RAID5_LAYOUTS[layout]]
    if layout == "left-symmetric":
        choices.append(None)
    return rng.choice(choices)


# ---------------------------------------------------------------------------
# Contention: many connections on the same few stripes


class Op:
    """One request of the fight: kind, array range, a write's bytes, and its
    place in time: i (a tick taken just before it was sent) and d (a tick
    taken once its reply was in)."""
    __slots__ = ("kind", "off", "n", "data", "i", "d")

    def __init__(self, kind, off, n, data, i):
        self.kind, self.off, self.n, self.data, self.i = kind, off, n, data, i
        self.d = None

    def __repr__(self):
        return "%s %d+%d sent@%d done@%d" % (self.kind, self.off, self.n,
                                             self.i, self.d)


class Contention:
    """conns connections, each sending batches of up to depth requests at
    random (overlapping, unaligned) places in [lo, hi): a few stripes.

    Every write, zero and trim is recorded with its bytes and when it was
    sent and answered (ticks of one counter), so a byte read back, during
    the fight or after it, can be checked against the values requests could
    have left there:
      * a write's byte, or zero for a zero, unless a write or zero over the
        byte was sent after it had been answered (and, for a read, answered
        before the read was sent): that one came later for sure;
      * zero for a trim, under the same rule; a trim replaces nothing (the
        trimmed bytes may keep their old value);
      * for a read, only requests sent before the read was answered;
      * the byte from before the fight, unless a write or zero over it was
        answered (for a read: before the read was sent); zero too if the
        model had it as trimmed.
    This is "no completed request is undone, and no byte comes from
    nowhere": md's (and any cache-less server's) guarantee, without knowing
    how racing requests were ordered."""

    WZ = ("write", "zero")

    def __init__(self, srv, model, geo, rng, lo, hi, conns=6, depth=4):
        self.srv, self.model, self.geo, self.rng = srv, model, geo, rng
        self.lo, self.hi = lo, hi
        self.conns, self.depth = conns, depth
        self.handles = [srv.connect() for _ in range(conns)]
        self.maxreq = t.max_request(self.handles[0])
        self.fast_zero = self.handles[0].can_fast_zero()
        self.pre = bytes(model.data[lo:hi])
        self.pre_undef = bytes(model.undef[lo:hi])
        self.tick = itertools.count()   # next() is atomic under the GIL
        self.ops = []                   # Op: write, zero, trim
        self.reads = []                 # Op with the bytes read as data
        self.lock = threading.Lock()
        self.errors = []
        self.counts = {}

    def pick(self, rng):
        size = self.hi - self.lo
        n = t.rand_len(rng, self.geo.chunk, min(size, self.maxreq))
        off = self.lo + rng.randint(0, size - n)
        r = rng.random()
        if r < 0.38:
            return ("write", off, n, 0)
        if r < 0.48:
            return ("write", off, n, nbd.CMD_FLAG_FUA)
        if r < 0.66:
            return ("read", off, n, 0)
        if r < 0.78:
            return ("trim", off, n, rng.choice([0, nbd.CMD_FLAG_FUA]))
        if r < 0.95:
            flags = [0, nbd.CMD_FLAG_NO_HOLE, nbd.CMD_FLAG_FUA]
            if self.fast_zero:
                flags.append(nbd.CMD_FLAG_FAST_ZERO)
            return ("zero", off, n, rng.choice(flags))
        return ("flush", 0, 0, 0)

    def issue(self, h, rng, op):
        """Send op; returns (cookie, its Op record)."""
        kind, off, n, flags = op
        data = t.pattern(rng, n) if kind == "write" else None
        rec = Op(kind, off, n, bytes(data) if data else None, next(self.tick))
        if kind == "write":
            return h.aio_pwrite(nbd.Buffer.from_bytearray(data), off,
                                flags=flags), rec
        if kind == "read":
            rec.data = nbd.Buffer(n)
            return h.aio_pread(rec.data, off), rec
        if kind == "trim":
            return h.aio_trim(n, off, flags=flags), rec
        if kind == "zero":
            return h.aio_zero(n, off, flags=flags), rec
        return h.aio_flush(), rec

    def batch(self, h, rng, idx):
        ops = [self.pick(rng) for _ in range(rng.randint(1, self.depth))]
        inflight = [(op,) + self.issue(h, rng, op) for op in ops]
        while h.aio_in_flight() > 0:
            h.poll(-1)
        done = next(self.tick)
        for op, cookie, rec in inflight:
            kind, off, n, flags = op
            rec.d = done
            try:
                h.aio_command_completed(cookie)
            except nbd.Error as e:
                if kind == "zero" and flags & nbd.CMD_FLAG_FAST_ZERO and \
                        t.nbd_errno(e) == errno.ENOTSUP:
                    kind = "fast-zero-unsupported"   # must change nothing
                else:
                    t.fail("connection %d: %s %d+%d flags=0x%x failed: %s" % (
                        idx, kind, off, n, flags, e))
            with self.lock:
                if kind == "read":
                    rec.data = bytes(rec.data.to_bytearray())
                    self.reads.append(rec)
                elif kind in ("write", "zero", "trim"):
                    self.ops.append(rec)
                self.counts[kind] = self.counts.get(kind, 0) + 1

    def thread_main(self, idx, steps, seed_):
        rng = random.Random(seed_)
        h = self.handles[idx]
        try:
            for _ in range(steps):
                self.batch(h, rng, idx)
            h.flush()
        except BaseException as e:  # report in the main thread
            self.errors.append("connection %d: %s" % (idx, e))

    def run(self, steps):
        threads = [threading.Thread(target=self.thread_main,
                                    args=(i, steps, self.rng.getrandbits(64)))
                   for i in range(self.conns)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if self.errors:
            t.fail("; ".join(self.errors))
        self.srv.close_handles()
        self.segment()

    def segment(self):
        """Cut [lo, hi) where requests start and end; for each piece, the
        requests over it: writes and zeroes by answer tick with the running
        maximum of their send ticks, and all of them by answer tick."""
        cuts = {self.lo, self.hi}
        for op in self.ops:
            cuts.update((op.off, op.off + op.n))
        cuts = sorted(cuts)
        self.starts = cuts[:-1]
        self.segs = []
        for a, b in zip(cuts, cuts[1:]):
            over = sorted((op for op in self.ops
                           if op.off <= a and b <= op.off + op.n),
                          key=lambda op: op.d)
            wz = [op for op in over if op.kind in self.WZ]
            runmax, m = [], -1
            for op in wz:
                m = max(m, op.i)
                runmax.append(m)
            self.segs.append((a, b, [op.d for op in wz], runmax,
                              [op.d for op in over], over))

    def candidates(self, seg, sent, done):
        """The requests whose effect a read sent at tick `sent` and answered
        at `done` may see on this piece, and whether the old byte may."""
        a, b, wz_d, runmax, all_d, over = seg
        k = bisect.bisect_left(wz_d, sent)      # answered before the read
        last = runmax[k - 1] if k else -1       # latest of those sent
        live = [op for op in over[bisect.bisect_right(all_d, last):]
                if op.i < done]
        return live, k == 0

    def unexplained(self, off, got, sent=INF, done=INF):
        """None if every byte of got (read at array offset off, inside
        [lo, hi), sent and answered at those ticks; after the fight by
        default) is one the requests could have left there, else a
        description of the first that is not."""
        base, end = off, off + len(got)
        j = bisect.bisect_right(self.starts, off) - 1
        while off < end:
            seg = self.segs[j]
            a, b = off, min(seg[1], end)
            j, off = j + 1, b
            sub = bytes(got[a - base:b - base])
            live, old = self.candidates(seg, sent, done)
            wants = []
            if old:
                wants.append(self.pre[a - self.lo:b - self.lo])
            for op in live:
                if op.kind == "write":
                    wants.append(op.data[a - op.off:b - op.off])
            zero_ok = any(op.kind != "write" for op in live)
            if any(sub == w for w in wants) or \
                    (zero_ok and sub.count(0) == len(sub)):
                continue
            ok = bytearray(b - a)
            for w in wants:
                or_into(ok, 0, eq_mask(sub, w))
            zeros = sub.translate(EQ)
            if zero_ok:
                or_into(ok, 0, zeros)
            if old:
                or_into(ok, 0, and_mask(zeros,
                                        self.pre_undef[a - self.lo:
                                                       b - self.lo]))
            if ok.count(1) == len(ok):
                continue
            i = ok.index(0)
            x = a + i
            return ("byte %d (stripe %d) is 0x%02x, which no request could "
                    "have left there: before the fight 0x%02x%s; requests "
                    "it may see: %s; all requests over the byte: %s" % (
                        x, x // ((self.geo.n - 1) * self.geo.chunk), sub[i],
                        self.pre[x - self.lo],
                        " (may see it)" if old else " (overwritten)",
                        self.describe(live, x) or "none",
                        self.describe(seg[5], x)))
        return None

    @staticmethod
    def describe(ops, x):
        """The last 12 requests of ops (by send tick), a write's byte at x."""
        s = ", ".join("%s%s" % (
            op, " byte 0x%02x" % op.data[x - op.off] if op.kind == "write"
            else "") for op in sorted(ops, key=lambda op: op.i)[-12:])
        return ("... " if len(ops) > 12 else "") + s

    def adopt(self, label):
        """Read the whole array: outside [lo, hi) it must match the model;
        inside, every byte must be explained, and becomes the model.  Then
        check what every read returned during the fight."""
        model, geo, lo, hi = self.model, self.geo, self.lo, self.hi
        h = self.srv.connect()
        step = t.max_request(h, MiB)
        got = bytearray()
        for off in range(0, geo.size, step):
            got += h.pread(min(step, geo.size - off), off)
        self.srv.close_handles()
        for a, b in ((0, lo), (hi, geo.size)):
            bad = model.mismatch(a, got[a:b]) if a < b else None
            if bad:
                t.fail("%s: contention on [%d, %d) changed bytes outside it:"
                       " %s" % (label, lo, hi, bad))
            model.resolve(a, got[a:b])
        bad = self.unexplained(lo, bytes(got[lo:hi]))
        if bad:
            t.fail("%s: after contention on [%d, %d), read-back: %s" % (
                label, lo, hi, bad))
        model.write(lo, got[lo:hi])
        for r in self.reads:
            bad = self.unexplained(r.off, r.data, r.i, r.d)
            if bad:
                t.fail("%s: contention on [%d, %d): %r returned: %s" % (
                    label, lo, hi, r, bad))


def contention_region(rng, geo):
    """1-3 whole stripes (the last ones now and then), give or take a few
    unaligned bytes at either end."""
    ns = min(geo.stripes, rng.randint(1, 3))
    s0 = geo.stripes - ns if rng.random() < 0.25 else \
        rng.randrange(geo.stripes - ns + 1)
    lo = geo.stripe_span(s0)[0]
    hi = geo.stripe_span(s0 + ns - 1)[1]
    lo = max(0, lo - rng.choice([0, rng.randint(1, 3000)]))
    hi = min(geo.size, hi + rng.choice([0, rng.randint(1, 3000)]))
    return lo, hi, s0, ns


# ---------------------------------------------------------------------------
# The CLI's check command


class Cli:
    """`$NBDRAID_CLI check`, when there is one."""

    def __init__(self):
        self.path = os.environ.get("NBDRAID_CLI")
        self.ok = None     # unknown until first used
        self.runs = 0

    def available(self, geo, paths):
        if self.ok is None:
            if not self.path or not os.access(self.path, os.X_OK):
                self.ok = False
                why = "$NBDRAID_CLI is not set or not executable"
            else:
                rc, out = self.run(geo, paths, count=False)
                self.ok = not re.search(r"unknown command", out, re.I)
                why = "%s check: %s" % (self.path, out.strip()[:200])
            if not self.ok:
                print("cli check skipped: %s" % why, flush=True)
        return self.ok

    def run(self, geo, paths, json_=False, count=True):
        argv = [self.path, "check"] + (["--json"] if json_ else []) + \
            geo.params() + ["member=%s" % p for p in paths]
        p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        if count:
            self.runs += 1
        if json_:
            return p.returncode, (out, err)
        return p.returncode, out + err

    @staticmethod
    def parse_text(out):
        """The number of mismatched stripes in check's text output: the
        number next to the word mismatch(ed/es) ("3 mismatched",
        "mismatches: 3"), or the output's only number."""
        nums = set()
        for m in re.finditer(r"(\d+)[ \t]+(?:stripes?[ \t]+)?mismatch|"
                             r"mismatch\w*(?:[ \t]+stripes)?[ \t]*[:=]?"
                             r"[ \t]*(\d+)", out, re.I):
            nums.add(int(m.group(1) or m.group(2)))
        if len(nums) == 1:
            return nums.pop()
        if not nums:
            found = re.findall(r"\b\d+\b", out)
            if len(found) == 1:
                return int(found[0])
        return None

    @staticmethod
    def parse_json(text):
        """check --json: (the mismatched-stripe count, the stripe numbers it
        lists).  The count is the integer under a key naming mismatches
        ("mismatched": 3), else the length of a list there; the stripes are
        the integers in such lists (or their "stripe" fields)."""
        counts, lists = [], []

        def walk(v):
            if isinstance(v, dict):
                for k, x in v.items():
                    named = re.search(r"mismatch", k, re.I)
                    if named and isinstance(x, int) and \
                            not isinstance(x, bool):
                        counts.append(x)
                    elif named and isinstance(x, list):
                        lists.append(x)
                    else:
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(json.loads(text))
        listed = set()
        for ls in lists:
            for x in ls:
                if isinstance(x, dict):
                    x = x.get("stripe")
                if isinstance(x, int):
                    listed.add(x)
        if not counts:
            counts = [len(ls) for ls in lists]
        return (counts[0] if len(set(counts)) == 1 else None), listed

    def expect(self, geo, paths, want, label, stripes=()):
        """check must report want mismatched stripes, text and --json, and
        exit 0 exactly when want == 0; stripes --json lists must be among
        the given ones."""
        rc, out = self.run(geo, paths)
        n = self.parse_text(out)
        t.check(n is not None, "%s: cannot find the mismatch count in `%s "
                "check` output (exit %d):\n%s" % (label, self.path, rc, out))
        t.check(n == want, "%s: `check` reports %d mismatched stripes, want "
                "%d (exit %d):\n%s" % (label, n, want, rc, out))
        t.check((rc == 0) == (want == 0), "%s: `check` exits %d with %d "
                "mismatched stripes:\n%s" % (label, rc, want, out))
        rc, (out, err) = self.run(geo, paths, json_=True)
        try:
            n, listed = self.parse_json(out)
        except ValueError as e:
            t.fail("%s: `check --json` is not JSON (%s), exit %d:\n%s%s" % (
                label, e, rc, out, err))
        t.check(n == want, "%s: `check --json` reports %r mismatched stripes,"
                " want %d (exit %d):\n%s%s" % (label, n, want, rc, out, err))
        t.check((rc == 0) == (want == 0), "%s: `check --json` exits %d with "
                "%d mismatched stripes:\n%s" % (label, rc, want, out))
        t.check(listed <= set(stripes), "%s: `check --json` lists stripes "
                "%s, but only %s are bad:\n%s" % (
                    label, sorted(listed - set(stripes)), list(stripes), out))


def corrupt_stripes(rng, geo, paths, k):
    """Flip bytes of k distinct stripes in the member files (1-3 bytes each,
    on any members, data or parity, never two that cancel out), and some
    bytes past the last stripe, which belong to no stripe.  Returns the
    stripes."""
    stripes = rng.sample(range(geo.stripes), k)
    c = geo.chunk
    fds = [open(p, "r+b") for p in paths]
    try:
        def flip(m, off):
            f = fds[m]
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ rng.randrange(1, 256)]))
        for st in stripes:
            offs = rng.sample(range(c), rng.randint(1, 3))
            for within in offs:
                flip(rng.randrange(geo.n), st * c + within)
        for m in rng.sample(range(geo.n), 2):
            end = geo.stripes * c
            if geo.sizes[m] > end:
                flip(m, rng.randrange(end, geo.sizes[m]))
    finally:
        for f in fds:
            f.close()
    return sorted(stripes)


# ---------------------------------------------------------------------------


def run_geometry(rng, folder, layout, n, cli, extra=(), chunk=None,
                 steps=(30, 50), fight=20, corrupt=False):
    chunk = chunk or rng.choice([4, 8, 16, 32, 64]) * KiB
    geo = t.Geometry(5, member_sizes(rng, n, chunk), chunk,
                     spelling(rng, layout))
    label = geo.name() + (" layout=%s" % geo.layout if geo.layout else
                          " (default layout)") + \
        (" " + " ".join(extra) if extra else "")
    only = os.environ.get("NBDRAID_ONLY")
    if only and not re.search(only, label):
        return
    start = time.monotonic()
    paths = t.make_members(folder, geo.sizes)
    params = geo.params() + ["member=%s" % p for p in paths] + list(extra)
    model = t.Model(geo.size)

    # (a) disjoint random workload, read back, members and parity
    with t.Server(params) as srv:
        h = srv.connect()
        t.check(h.get_size() == geo.size, "%s: get_size() %d, md says %d" % (
            label, h.get_size(), geo.size))
        t.check_flags(h)
        w = t.Workload(srv, model, geo, rng)
        w.concurrent_phase(steps[0])
        w.serial_phase(steps[1])
        if rng.random() < 0.3:
            w.whole_array_ops()
        w.concurrent_phase(steps[0] // 2)
        w.close()
        t.verify_readback(srv, model, geo, label)
        rc = srv.stop()
        t.check(rc == 0, "%s: nbdkit exited %d on SIGTERM\n%s" % (
            label, rc, srv.stderr()))
    t.verify_members(geo, model, paths, label + " after (a)")
    if cli.available(geo, paths):
        cli.expect(geo, paths, 0, label + " after (a)")

    # (b) contention on the same few stripes, then a little more
    lo, hi, s0, ns = contention_region(rng, geo)
    with t.Server(params) as srv:
        c = Contention(srv, model, geo, rng, lo, hi)
        c.run(fight)
        c.adopt(label + " stripes %d-%d" % (s0, s0 + ns - 1))
        w2 = t.Workload(srv, model, geo, rng)
        w2.concurrent_phase(steps[0] // 3)
        w2.close()
        t.verify_readback(srv, model, geo, label + " after (b)")
        rc = srv.stop()
        t.check(rc == 0, "%s: nbdkit exited %d on SIGTERM\n%s" % (
            label, rc, srv.stderr()))
    # (c) the members again
    t.verify_members(geo, model, paths, label + " after (b)")
    if cli.available(geo, paths):
        cli.expect(geo, paths, 0, label + " after (b)")
        if corrupt:
            k = rng.randint(1, min(5, geo.stripes))
            bad = corrupt_stripes(rng, geo, paths, k)
            mem = [t.read_member(p) for p in paths]
            t.check([b[0] for b in t.parity_mismatches(geo, mem)] == bad,
                    "corrupt_stripes broke stripes other than %s" % bad)
            cli.expect(geo, paths, k, label + " with stripes %s corrupted" %
                       bad, bad)
    for p in paths:
        os.unlink(p)
    counts = dict(w.counts)
    for k, v in w2.counts.items():
        counts[k] = counts.get(k, 0) + v
    print("ok %-62s %5.2fs %s | fight on stripes %d-%d [%d, %d): %s" % (
        label, time.monotonic() - start,
        " ".join("%s=%d" % kv for kv in sorted(counts.items())),
        s0, s0 + ns - 1, lo, hi,
        " ".join("%s=%d" % kv for kv in sorted(c.counts.items()))),
        flush=True)


def main():
    rng = random.Random(t.seed("test-raid5-random"))
    t.plugin()
    cli = Cli()
    with t.TempDir() as d:
        for layout, n in GEOMETRIES:
            run_geometry(rng, d, layout, n, cli, corrupt=n in (4, 5))
        run_geometry(rng, d, "left-asymmetric", 4, cli, extra=["io=psync"])
        run_geometry(rng, d, "right-symmetric", 3, cli, extra=["io=psync"])
        if t.io_uring_works():
            run_geometry(rng, d, "left-symmetric", 4, cli,
                         extra=["io=uring"])
            run_geometry(rng, d, "right-asymmetric", 6, cli,
                         extra=["io=uring"])
        else:
            print("io=uring pass skipped: io_uring_setup fails here")
    if t.o_direct_works("/var/tmp"):
        with t.TempDir(base="/var/tmp") as d:
            run_geometry(rng, d, "left-symmetric", 3, cli,
                         extra=["direct=true"])
            run_geometry(rng, d, "right-asymmetric", 5, cli,
                         extra=["direct=true"])
    else:
        print("direct=true pass skipped: O_DIRECT fails in /var/tmp")
    if cli.ok:
        print("cli check: %d runs" % cli.runs)


t.run_main(main)
