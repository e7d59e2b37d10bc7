#!/usr/bin/python3
"""The advertised block sizes describe the array, and with direct=true
unaligned requests still read back byte-exact (the O_DIRECT bounce path).

  * buffered members: minimum 1; RAID0 preferred = chunk * members when
    that is a power of two, else chunk; every level: preferred a power of
    two in [512, 32M] and >= minimum, maximum >= preferred and a multiple
    of minimum (NBD's rules);
  * direct=true (when O_DIRECT works in /var/tmp): minimum 512 or 4096,
    same preferred; then, ignoring the minimum, 1-byte and odd-sized
    writes and reads at odd offsets, across chunk boundaries, including
    4 connections writing interleaved bytes of the same sectors at once
    (a read-modify-write that is not serialised loses bytes here), and
    random unaligned I/O; all read back exact and the members hold md's
    layout.
"""

import os
import random
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, make_members, o_direct_works, plugin,
    run_main, run_threads, seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server  # noqa: E402
from raidtest.workload import (  # noqa: E402
    Workload, new_array, verify_readback)
from raidtest.members import verify_members  # noqa: E402


def pow2(x):
    return x > 0 and x & (x - 1) == 0


def sizes_of(h):
    return tuple(h.get_block_size(s) for s in (
        nbd.SIZE_MINIMUM, nbd.SIZE_PREFERRED, nbd.SIZE_MAXIMUM))


def check_rules(label, mn, pref, mx):
    check(pow2(mn) and mn <= 64 * KiB, "%s: minimum %d" % (label, mn))
    check(pow2(pref) and 512 <= pref <= 32 * MiB and pref >= mn,
          "%s: preferred %d (minimum %d)" % (label, pref, mn))
    check(mx >= pref and (mx == 0xffffffff or mx % mn == 0),
          "%s: maximum %d (preferred %d, minimum %d)" % (label, mx, pref,
                                                         mn))


def expected_preferred(geo):
    if geo.level == 0:
        full = geo.chunk * geo.n
        if full > 32 * MiB:
            return None  # NBD caps preferred at 32M: only the rules apply
        return full if pow2(full) else geo.chunk
    return None  # RAID1/10: only NBD's rules are asserted


def advertised(d, geo, extra=(), want_min=(1,)):
    label = geo.label(extra)
    paths = make_members(d, geo.sizes)
    with Server(geo.params(paths, extra)) as srv:
        mn, pref, mx = sizes_of(srv.connect())
        srv.stop()
    check_rules(label, mn, pref, mx)
    check(mn in want_min, "%s: minimum %d, want one of %s" % (
        label, mn, want_min))
    exp = expected_preferred(geo)
    if exp is not None:
        check(pref == exp, "%s: preferred %d, want %d" % (label, pref, exp))
    print("ok %-52s min %d preferred %d max %d" % (label, mn, pref, mx))
    for p in paths:
        os.unlink(p)


def interleaved_bytes(srv, model, base, span, conns=4, rounds=3):
    """conns connections write single bytes i*conns+j of [base, base+span)
    at the same time: disjoint bytes, shared sectors."""
    hs = [srv.connect() for _ in range(conns)]

    def worker(j, seed_):
        rng = random.Random(seed_)
        for r in range(rounds):
            for i in range(j, span, conns):
                b = bytes([rng.randrange(1, 256)])
                hs[j].pwrite(b, base + i)
                model.write(base + i, b)
    run_threads(worker, [(random.getrandbits(64),) for _ in range(conns)])


def unaligned_direct(rng, d, geo):
    label = geo.name() + " direct=true unaligned"
    paths, params, model = new_array(d, geo, ["direct=true"])
    c = geo.chunk
    with Server(params) as srv:
        h = srv.connect()
        # Odd writes and reads, and around a chunk boundary.
        for off, n in ((1, 1), (3, 5), (511, 2), (4095, 3), (c - 1, 2),
                       (c - 700, 1400), (2 * c + 17, 3 * c + 1),
                       (geo.size - 1, 1), (geo.size - 513, 513)):
            data = pattern(rng, n)
            h.pwrite(data, off)
            model.write(off, data)
            got = h.pread(n, off)
            check(got == data, "%s: read %d+%d after write differs" % (
                label, off, n))
        for off, n in ((0, 7), (5, 4096), (c - 3, 6), (3 * c + 1, c)):
            bad = model.mismatch(off, h.pread(n, off))
            check(bad is None, "%s: read %d+%d: %s" % (label, off, n, bad))
        # Neighbouring bytes of one sector from 4 connections at once.
        interleaved_bytes(srv, model, 5 * c - 1024 + 7, 2048)
        w = Workload(srv, model, geo, rng)
        w.concurrent_phase(15)
        w.serial_phase(20)
        w.close()
        verify_readback(srv, model, geo, label)
        srv.stop()
    verify_members(geo, model, paths, label)
    print("ok %s" % label)


def main():
    rng = random.Random(seed("test-block-size"))
    plugin()
    geos = [Geometry(0, [MiB] * 4, 64 * KiB),     # full stripe 256K
            Geometry(0, [MiB] * 3, 64 * KiB),     # 192K: not a power of 2
            Geometry(0, [MiB] * 2, 4 * KiB),
            Geometry(0, [MiB], 16 * KiB),
            Geometry(1, [MiB] * 2, 64 * KiB),
            Geometry(10, [MiB] * 3, 64 * KiB, "n2"),
            Geometry(10, [MiB] * 4, 32 * KiB, "f2"),
            Geometry(10, [MiB] * 2, 128 * KiB, "o2"),
            Geometry(0, [16 * MiB] * 2, 16 * MiB),  # 32M stripe
            Geometry(0, [16 * MiB] * 4, 16 * MiB),  # 64M: over NBD's cap
            Geometry(10, [32 * MiB] * 2, 16 * MiB, "f2")]
    with TempDir() as d:
        for geo in geos:
            advertised(d, geo)
    if not o_direct_works("/var/tmp"):
        print("direct=true part skipped: O_DIRECT fails in /var/tmp")
        return
    with TempDir(base="/var/tmp") as d:
        for geo in geos[:2] + geos[4:6] + geos[9:10]:
            advertised(d, geo, ["direct=true"], want_min=(512, 4096))
        unaligned_direct(rng, d, Geometry(0, [2 * MiB] * 3, 64 * KiB))
        unaligned_direct(rng, d, Geometry(10, [2 * MiB + 3000] * 3,
                                          16 * KiB, "f2"))
        unaligned_direct(rng, d, Geometry(1, [MiB, MiB + 4096], 8 * KiB))


run_main(main)
