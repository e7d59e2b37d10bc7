#!/usr/bin/python3
"""An unaligned write to O_DIRECT members is answered while aligned writes
from other clients keep coming.

An unaligned write to an O_DIRECT array reads its edge blocks, patches
them and writes them back, so it must exclude other writes to those blocks
meanwhile.  It must not wait for every aligned write to stop: RAID 1 and
RAID 5 (direct=true, in /var/tmp), 8 connections writing aligned 64K
blocks, 4 in flight each, over a small region that includes the blocks the
unaligned writes patch, and one more connection sending 100-byte writes at
unaligned offsets there: each must be answered within BOUND_S seconds
while the aligned writers are still running (they stop on their own after
WRITERS_MAX_S), and the array reads back exactly (last write wins per byte,
since the writes of each byte are ordered by their replies).
Skipped (77) where O_DIRECT does not work in /var/tmp.
"""

import os
import random
import sys
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    check, KiB, make_members, MiB, o_direct_works, plugin, run_main, seed,
    skip, TempDir)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server  # noqa: E402

WRITERS = 8
DEPTH = 4            # aligned writes in flight per writer
SMALL = 20           # unaligned writes
BOUND_S = 5          # each must be answered within this
WRITERS_MAX_S = 60   # the aligned writers give up after this
BLOCK = 64 * KiB
REGION = 4 * BLOCK   # the aligned writers' region: blocks 0..3


def writer(srv, idx, stop, counts, errors):
    """Aligned 64K writes, DEPTH in flight, until told or WRITERS_MAX_S."""
    try:
        h = srv.connect()
        buf = nbd.Buffer.from_bytearray(bytearray([idx + 1]) * BLOCK)
        t0, cookies, sent = time.monotonic(), [], 0
        while not stop.is_set() and time.monotonic() - t0 < WRITERS_MAX_S:
            while len(cookies) < DEPTH:
                cookies.append(h.aio_pwrite(buf, (sent % 4) * BLOCK))
                sent += 1
            h.poll(-1)
            for c in [c for c in cookies if h.aio_command_completed(c)]:
                cookies.remove(c)
                counts[idx] += 1
        while cookies:
            h.poll(-1)
            cookies = [c for c in cookies if not h.aio_command_completed(c)]
    except Exception as e:  # reported by the main thread
        errors.append("writer %d: %s" % (idx, e))


def run_case(geo, d, rng):
    paths = make_members(d, geo.sizes, prefix="s%d-" % geo.level)
    params = geo.params() + ["member=%s" % p for p in paths] + \
        ["direct=true"]
    with Server(params) as srv:
        stop, counts, errors = threading.Event(), [0] * WRITERS, []
        threads = [threading.Thread(target=writer,
                                    args=(srv, i, stop, counts, errors))
                   for i in range(WRITERS)]
        for th in threads:
            th.start()
        h = srv.connect()
        while sum(counts) < 4 * WRITERS and not errors:
            time.sleep(0.01)
        worst = 0.0
        small = []
        try:
            for i in range(SMALL):
                off = rng.randrange(REGION - 100)
                if off % 512 == 0:
                    off += 1
                data = pattern(rng, 100)
                t0 = time.monotonic()
                h.pwrite(data, off)
                took = time.monotonic() - t0
                worst = max(worst, took)
                check(not errors, "; ".join(errors))
                check(all(th.is_alive() for th in threads),
                        "%s: unaligned write %d answered only after the "
                        "aligned writers stopped (%.1fs)" % (
                            geo.name(), i, took))
                check(took < BOUND_S, "%s: unaligned write %d took "
                        "%.1fs while aligned writers ran" % (
                            geo.name(), i, took))
                small.append((off, data))
        finally:
            stop.set()
            for th in threads:
                th.join()
        check(not errors, "; ".join(errors))
        # The aligned writes raced the small ones, so per byte: a writer's
        # value, or the last small write covering it.
        got = h.pread(REGION, 0)
        last = {}
        for off, data in small:
            for j, b in enumerate(data):
                last[off + j] = b
        for x in range(REGION):
            v = got[x]
            ok = (1 <= v <= WRITERS) or last.get(x) == v
            check(ok, "%s: byte %d reads %d: no write put it there" % (
                geo.name(), x, v))
        srv.stop()
    print("ok %s: %d unaligned writes among %d aligned ones, worst %.2fs"
          % (geo.name(), SMALL, sum(counts), worst), flush=True)


def main():
    rng = random.Random(seed("test-unaligned-not-starved"))
    plugin()
    with TempDir(base="/var/tmp") as d:
        if not o_direct_works(d):
            skip("O_DIRECT does not work in /var/tmp")
        for geo in (Geometry(1, [4 * MiB] * 2, 64 * KiB),
                    Geometry(5, [4 * MiB] * 3, 64 * KiB)):
            run_case(geo, d, rng)


run_main(main)
