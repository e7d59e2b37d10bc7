#!/usr/bin/python3
"""RAID 0, 1 and 10: connections fighting over the same few chunks with
overlapping, unaligned requests never undo a completed request nor make up
a byte, never touch bytes outside the fight, and (mirrors) leave every copy
of every byte holding a value some request could have left there.

For RAID0 (2 and 4 members), RAID1 (2 and 3), RAID10 n2 (2, 3, 4 members),
f2 (2, 3), o2 (2, 3) and one 3-copy layout (n3 on 3 or 4, f3 or o3 on 3,
picked by the seed), chunk 4K..64K, members of about 1 MiB, one larger:
  (a) the whole array is written with random data and a few ranges of the
      fight's region are trimmed (their bytes may read old or zero);
  (b) 6 connections send batches of up to 4 writes(+FUA), reads, trims,
      zeroes (+/-may_trim, FUA, fast) and flushes at random, overlapping,
      unaligned places in 1-3 rows of chunks (the array's last now and
      then), give or take a few unaligned bytes; every read during the
      fight and the read-back after it must return, per byte, a value some
      request could have left there given which requests were answered
      before others were sent (raidtest.contention); bytes outside the
      region must read as before;
  (c) nbdkit stops; in the member files every copy of every byte of the
      region must be such a value, and equal to the read-back or (when the
      copies disagree) to one of them; then
        - if all copies agree, every copy of every array byte is checked
          where md puts it (verify_members);
        - if copies diverge (two racing writes, or a write and a trim or
          zero, reached two copies in different orders: md's raid1/raid10
          allow this too for overlapping writes in flight together), the
          details are printed; with $NBDRAID_COPIES=strict that fails the
          test, by default the region is rewritten with non-overlapping
          requests and copy equality is asserted after that;
  (d) nbdkit again: the rewrite (if needed), a short disjoint random
      workload, the whole array read back, stop, verify_members.
Then io=psync, io=uring (when io_uring works) and direct=true (in /var/tmp,
when O_DIRECT works there) passes.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects geometries;
$NBDRAID_COPIES=strict makes diverged copies after the fight a failure.
"""

import os
import random
import sys
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest import workload  # noqa: E402
from raidtest.common import (  # noqa: E402
    MiB, check, fail, plugin, run_main, run_passes, seed, selected)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server, max_request, stop_clean  # noqa: E402
from raidtest.workload import (  # noqa: E402
    Workload, fill, format_counts, new_array, random_chunk,
    verify_readback)
from raidtest.members import verify_members  # noqa: E402
from raidtest.contention import Contention  # noqa: E402


THREE_COPIES = [("n3", 3), ("n3", 4), ("f3", 3), ("o3", 3)]


def geometries(rng):
    g = [(0, None, 2), (0, None, 4), (1, None, 2), (1, None, 3)] + \
        [(10, "n2", n) for n in (2, 3, 4)] + \
        [(10, "f2", n) for n in (2, 3)] + \
        [(10, "o2", n) for n in (2, 3)]
    lay, n = rng.choice(THREE_COPIES)
    return g + [(10, lay, n)]


def member_sizes(rng, n, chunk):
    return workload.member_sizes(rng, n, chunk, MiB // 2, 5 * MiB // 4)


def row_chunks(geo):
    """How many array chunks one row of member chunks holds."""
    if geo.level == 0:
        return geo.n
    if geo.level == 1:
        return 1
    return max(1, geo.n // (geo.nc * geo.fc))


def contention_region(rng, geo):
    """1-3 rows of chunks (the array's last now and then), give or take a
    few unaligned bytes at either end.  Returns lo, hi, first chunk, chunk
    count."""
    nk = min(geo.chunks, rng.randint(1, 3) * row_chunks(geo))
    k0 = geo.chunks - nk if rng.random() < 0.25 else \
        rng.randrange(geo.chunks - nk + 1)
    lo = max(0, k0 * geo.chunk - rng.choice([0, rng.randint(1, 3000)]))
    hi = min(geo.size, (k0 + nk) * geo.chunk +
             rng.choice([0, rng.randint(1, 3000)]))
    return lo, hi, k0, nk


def pre_trims(rng, h, model, lo, hi):
    """0-2 trims inside [lo, hi): their bytes start the fight undefined."""
    for _ in range(rng.randint(0, 2)):
        n = rng.randint(1, hi - lo)
        off = lo + rng.randint(0, hi - lo - n)
        h.trim(n, off)
        model.trim(off, n)


def rewrite(srv, model, rng, lo, hi, conns=3):
    """Write random data over all of [lo, hi): pieces no two of which
    overlap, several connections at once."""
    hs = [srv.connect() for _ in range(conns)]
    mx = max_request(hs[0])
    cuts = set(rng.sample(range(lo + 1, hi), min(hi - lo - 1,
                                                 rng.randint(3, 12))))
    cuts.update(range(lo + mx, hi, mx))   # no piece larger than allowed
    bounds = [lo] + sorted(cuts) + [hi]
    pend = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        data = pattern(rng, b - a)
        h = hs[i % conns]
        pend.append((h, h.aio_pwrite(nbd.Buffer.from_bytearray(data), a)))
        model.write(a, data)
    for h, cookie in pend:
        while not h.aio_command_completed(cookie):
            h.poll(-1)
    for h in hs:
        h.flush()


class Stats:
    def __init__(self):
        self.runs = 0
        self.mirrors = 0
        self.diverged = []
        self.races = {}


def run_geometry(rng, folder, level, layout, n, stats, extra=(), chunk=None,
                 fight=60):
    chunk = chunk or random_chunk(rng)
    geo = Geometry(level, member_sizes(rng, n, chunk), chunk, layout)
    label = geo.label(extra)
    if not selected(label):
        return
    strict = os.environ.get("NBDRAID_COPIES") == "strict"
    start = time.monotonic()
    paths, params, model = new_array(folder, geo, extra)
    lo, hi, k0, nk = contention_region(rng, geo)
    where = "chunks %d-%d [%d, %d)" % (k0, k0 + nk - 1, lo, hi)

    # (a) random data everywhere, some of the region trimmed; (b) the fight
    with Server(params) as srv:
        h = srv.connect()
        check(h.get_size() == geo.size, "%s: get_size() %d, md says %d" % (
            label, h.get_size(), geo.size))
        fill(h, model, geo.size, rng)
        pre_trims(rng, h, model, lo, hi)
        h.flush()
        srv.close_handles()
        c = Contention(srv, model, geo, rng, lo, hi)
        c.run(fight)
        c.adopt("%s %s" % (label, where))
        stop_clean(srv, label)

    # (c) the copies in the member files
    div = c.check_copies(paths, "%s %s" % (label, where))
    stats.runs += 1
    if len(geo.copies(0)) > 1:
        stats.mirrors += 1
    if div is None:
        verify_members(geo, model, paths, label + " after contention")
    else:
        msg = "%s, contention on %s: copies diverge: %s" % (label, where, div)
        stats.diverged.append(label)
        for k, v in c.races.items():
            stats.races[k] = stats.races.get(k, 0) + v
        if strict:
            fail(msg + " ($NBDRAID_COPIES=strict)")
        print("NOTE: %s; rewriting the region" % msg, flush=True)

    # (d) rewrite if needed, a little more, read back, members
    with Server(params) as srv:
        if div is not None:
            rewrite(srv, model, rng, lo, hi)
            srv.close_handles()
        w = Workload(srv, model, geo, rng)
        w.concurrent_phase(5)
        w.close()
        verify_readback(srv, model, geo, label + " after contention")
        stop_clean(srv, label)
    verify_members(geo, model, paths, label + " at the end")
    for p in paths:
        os.unlink(p)
    print("ok %-58s %5.2fs fight on %s: %s%s" % (
        label, time.monotonic() - start, where,
        format_counts(c.counts),
        " (copies diverged, rewritten)" if div else ""), flush=True)


def main():
    rng = random.Random(seed("test-contention"))
    plugin()
    stats = Stats()

    def run(folder, level, layout, n, extra=()):
        run_geometry(rng, folder, level, layout, n, stats, extra=extra)

    run_passes(run, geometries(rng),
               psync=[(1, None, 2), (10, "f2", 3)],
               uring=[(10, "n2", 3), (1, None, 3)],
               direct=[(1, None, 2), (10, "o2", 3), (0, None, 3)])
    print("%d geometries, %d mirrored; copies diverged after the fight in "
          "%d%s" % (stats.runs, stats.mirrors, len(stats.diverged),
                    ": " + "; ".join(stats.diverged) if stats.diverged
                    else ""), flush=True)
    if stats.races:
        print("races behind diverged copies (sampled bytes): %s" % ", ".join(
            "%s %d" % kv for kv in sorted(stats.races.items())), flush=True)


run_main(main)
