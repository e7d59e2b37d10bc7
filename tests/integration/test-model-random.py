#!/usr/bin/python3
"""Random I/O over 4 concurrent connections matches a byte model, and the
member files hold every byte exactly where md would put it.

For each geometry (RAID0 on 1-5 members, RAID1 on 2-3, RAID10 n2/n3/f2/o2/
f3/o3), with small chunks and one member larger than the rest:
  * can_multi_conn/fua/flush/trim/zero are true, get_size() is md's size;
  * random unaligned pread/pwrite(+FUA)/flush/trim/zero(+/-may_trim, fast)
    from 4 connections at once (disjoint regions) and then from one
    connection anywhere, every read checked against the model;
  * a fresh connection reads the whole array back byte-exact;
  * after nbdkit stops, every copy of every array byte is in the member
    files where the independent md model says, and nothing else was written.
Then the same for direct=true (when O_DIRECT works in /var/tmp), io=uring
(when io_uring works) and io=psync.

$NBDRAID_SEED replays a run; $NBDRAID_ONLY (a regex) selects geometries.
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest import workload  # noqa: E402
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, io_uring_works, make_members, o_direct_works,
    plugin, run_main, seed, selected)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import Model  # noqa: E402
from raidtest.server import Server, stop_clean  # noqa: E402
from raidtest.workload import random_pass  # noqa: E402
from raidtest.members import verify_members  # noqa: E402


GEOMETRIES = [(0, None, n) for n in (1, 2, 3, 4, 5)] + \
    [(1, None, n) for n in (2, 3)] + \
    [(10, "n2", n) for n in (2, 3, 4, 5)] + \
    [(10, "n3", n) for n in (3, 4)] + \
    [(10, "f2", n) for n in (2, 3, 4)] + \
    [(10, "o2", n) for n in (2, 3)] + \
    [(10, "f3", 3), (10, "o3", 3)]


def member_sizes(rng, n, chunk):
    return workload.member_sizes(rng, n, chunk, 3 * MiB // 2, 3 * MiB)


def run_geometry(rng, folder, level, layout, n, extra=(), chunk=None,
                 steps=(40, 70)):
    chunk = chunk or rng.choice([4, 8, 16, 32, 64]) * KiB
    geo = Geometry(level, member_sizes(rng, n, chunk), chunk, layout)
    label = geo.name() + (" " + " ".join(extra) if extra else "")
    if not selected(label):
        return
    start = time.monotonic()
    paths = make_members(folder, geo.sizes)
    params = geo.params() + ["member=%s" % p for p in paths] + list(extra)
    model = Model(geo.size)
    with Server(params) as srv:
        w = random_pass(srv, model, geo, rng, label, steps)
        stop_clean(srv, label)
    verify_members(geo, model, paths, label)
    for p in paths:
        os.unlink(p)
    print("ok %-50s %5.2fs %s" % (label, time.monotonic() - start,
                                  " ".join("%s=%d" % kv for kv in
                                           sorted(w.counts.items()))),
          flush=True)


def main():
    rng = random.Random(seed("test-model-random"))
    plugin()
    with TempDir() as d:
        for level, layout, n in GEOMETRIES:
            run_geometry(rng, d, level, layout, n)
        run_geometry(rng, d, 0, None, 3, extra=["io=psync"])
        run_geometry(rng, d, 10, "f2", 3, extra=["io=psync"])
        if io_uring_works():
            run_geometry(rng, d, 10, "n2", 3, extra=["io=uring"])
            run_geometry(rng, d, 0, None, 4, extra=["io=uring"])
        else:
            print("io=uring pass skipped: io_uring_setup fails here")
    if o_direct_works("/var/tmp"):
        with TempDir(base="/var/tmp") as d:
            run_geometry(rng, d, 0, None, 3, extra=["direct=true"])
            run_geometry(rng, d, 10, "o2", 3, extra=["direct=true"])
            run_geometry(rng, d, 1, None, 2, extra=["direct=true"])
    else:
        print("direct=true pass skipped: O_DIRECT fails in /var/tmp")


run_main(main)
