"""Contention: connections fighting over the same few chunks or stripes.

Overlapping, unaligned requests from many connections at once, where the
final bytes are unknown: every byte read (during the fight and after it)
must be one some request could have left there, given send/reply order.
For mirrors check_copies does the same for every copy in the member files
and reports copies that diverge.
"""

import bisect
import itertools
import random
import threading

import nbd

from .common import MiB, fail, run_threads
from .members import copy_images, read_member
from .model import first_mismatch, pattern
from .server import aio_result, aio_send, aio_wait, max_request
from .workload import rand_len


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
    random (overlapping, unaligned) places in [lo, hi): a few stripes
    or chunks.

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
        self.maxreq = max_request(self.handles[0])
        self.fast_zero = self.handles[0].can_fast_zero()
        self.pre = bytes(model.data[lo:hi])
        self.pre_undef = bytes(model.undef[lo:hi])
        self.tick = itertools.count()   # next() is atomic under the GIL
        self.ops = []                   # Op: write, zero, trim
        self.reads = []                 # Op with the bytes read as data
        self.lock = threading.Lock()
        self.counts = {}
        self.races = {}                 # check_copies: how copies diverged

    def pick(self, rng):
        size = self.hi - self.lo
        n = rand_len(rng, self.geo.chunk, min(size, self.maxreq))
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
        kind, off, n, _ = op
        data = pattern(rng, n) if kind == "write" else None
        rec = Op(kind, off, n, bytes(data) if data else None, next(self.tick))
        cookie, buf = aio_send(h, op, data)
        if buf is not None:
            rec.data = buf
        return cookie, rec

    def batch(self, h, rng, idx):
        ops = [self.pick(rng) for _ in range(rng.randint(1, self.depth))]
        inflight = [(op,) + self.issue(h, rng, op) for op in ops]
        aio_wait(h)
        done = next(self.tick)
        for op, cookie, rec in inflight:
            rec.d = done
            kind = aio_result(h, cookie, op, "connection %d: " % idx)
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
        for _ in range(steps):
            self.batch(h, rng, idx)
        h.flush()

    def run(self, steps):
        run_threads(self.thread_main,
                    [(steps, self.rng.getrandbits(64))
                     for _ in range(self.conns)])
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
            return ("byte %d (%s) is 0x%02x, which no request could "
                    "have left there: before the fight 0x%02x%s; requests "
                    "it may see: %s; all requests over the byte: %s" % (
                        x, self.geo.where(x), sub[i],
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
        step = max_request(h, MiB)
        got = bytearray()
        for off in range(0, geo.size, step):
            got += h.pread(min(step, geo.size - off), off)
        self.srv.close_handles()
        for a, b in ((0, lo), (hi, geo.size)):
            bad = model.mismatch(a, got[a:b]) if a < b else None
            if bad:
                fail("%s: contention on [%d, %d) changed bytes outside it:"
                       " %s" % (label, lo, hi, bad))
            model.resolve(a, got[a:b])
        bad = self.unexplained(lo, bytes(got[lo:hi]))
        if bad:
            fail("%s: after contention on [%d, %d), read-back: %s" % (
                label, lo, hi, bad))
        model.write(lo, got[lo:hi])
        for r in self.reads:
            bad = self.unexplained(r.off, r.data, r.i, r.d)
            if bad:
                fail("%s: contention on [%d, %d): %r returned: %s" % (
                    label, lo, hi, r, bad))

    def attribute(self, x, v):
        """The requests over array byte x that may have left its final value
        and would leave v there (zero for zeroes and trims), with "old"
        first if the byte from before the fight may have stayed and is v
        (or zero, when trimmed)."""
        seg = self.segs[bisect.bisect_right(self.starts, x) - 1]
        live, old = self.candidates(seg, INF, INF)
        who = [op for op in sorted(live, key=lambda op: op.i)
               if (op.data[x - op.off] == v if op.kind == "write"
                   else v == 0)]
        p = x - self.lo
        if old and (self.pre[p] == v or (v == 0 and self.pre_undef[p])):
            who.insert(0, "old")
        return who

    def who(self, x, v):
        w = ["%s" % op for op in self.attribute(x, v)]
        if len(w) > 5:
            w = w[:1] + ["..."] + w[-4:]
        return ", ".join(w) or "nothing"

    def race(self, x, vals):
        """How the copies of byte x came to hold the different values vals:
        the kinds of two requests leaving different values that were in
        flight together ("write+zero"), else the kinds that explain them
        and "(not in flight together)"."""
        per = {v: self.attribute(x, v) for v in set(vals)}
        vs = sorted(per)
        for i, va in enumerate(vs):
            for vb in vs[i + 1:]:
                for A in per[va]:
                    for B in per[vb]:
                        if A != "old" and B != "old" and \
                                A.i < B.d and B.i < A.d:
                            return "+".join(sorted((A.kind, B.kind)))
        return "/".join(sorted({"old" if o == "old" else o.kind
                                for v in vs for o in per[v]})) + \
            " (not in flight together)"

    def check_copies(self, paths, label):
        """Mirrors, once the fight is over and flushed: read every copy of
        [lo, hi) from the member files.  Every copy of every byte must
        itself be a value some request could have left there, and the
        read-back (the model, after adopt) must be one of the copies.
        Returns None if all copies of every byte are identical, else a
        description of how they diverge (which bytes, which copies, which
        requests left each value)."""
        geo, lo, hi = self.geo, self.lo, self.hi
        mem = [read_member(p) for p in paths]
        imgs = copy_images(geo, mem, lo, hi)
        seen = self.model.data[lo:hi]
        for j, img in enumerate(imgs):
            bad = self.unexplained(lo, bytes(img))
            if bad:
                fail("%s: after contention on [%d, %d), copy %d in the "
                     "member files: %s" % (label, lo, hi, j, bad))
        if len(imgs) < 2 or all(img == imgs[0] for img in imgs[1:]):
            if imgs[0] != seen:
                bad = first_mismatch(imgs[0], self.model.data,
                                     self.model.undef, lo)
                fail("%s: after contention on [%d, %d), the member files "
                     "differ from the read-back: %s" % (
                         label, lo, hi, bad))
            return None
        differ = bytearray(hi - lo)
        for img in imgs[1:]:
            or_into(differ, 0, eq_mask(img, imgs[0]).translate(EQ))
        ok = bytearray(hi - lo)
        for img in imgs:
            or_into(ok, 0, eq_mask(img, seen))
        if ok.count(1) != len(ok):
            x = lo + ok.index(0)
            fail("%s: read-back byte %d (%s) is 0x%02x, but the copies hold "
                 "%s" % (label, x, geo.where(x), seen[x - lo],
                         [img[x - lo] for img in imgs]))
        ndiff = differ.count(1)
        chunks = sorted({(lo + i) // geo.chunk
                         for i in range(len(differ)) if differ[i]})
        runs, i = [], differ.index(1)
        while i >= 0 and len(runs) < 3:
            e = differ.find(0, i)
            e = len(differ) if e < 0 else e
            runs.append((lo + i, e - i))
            i = differ.find(1, e)
        at = [i for i, b in enumerate(differ) if b]
        races = {}
        for i in at[::max(1, len(at) // 64)][:64]:
            r = self.race(lo + i, [img[i] for img in imgs])
            races[r] = races.get(r, 0) + 1
        self.races = races
        x = runs[0][0]
        vals = [img[x - lo] for img in imgs]
        return ("%d bytes in %d chunks (%s) differ between copies; races "
                "(%d sampled bytes): %s; first runs %s; byte %d (%s): copies "
                "hold %s, read-back 0x%02x; %s" % (
                    ndiff, len(chunks), chunks[:10] + (["..."] if len(
                        chunks) > 10 else []),
                    sum(races.values()), ", ".join(
                        "%s %d" % kv for kv in sorted(races.items())),
                    ", ".join("[%d, +%d)" % r for r in runs), x,
                    geo.where(x), " ".join("0x%02x" % v for v in vals),
                    seen[x - lo], "; ".join(
                        "0x%02x left by %s" % (v, self.who(x, v))
                        for v in sorted(set(vals)))))
