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
    MiB, plugin, run_main, run_passes, seed, selected)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.workload import (  # noqa: E402
    format_counts, new_array, random_chunk, random_pass)
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
    chunk = chunk or random_chunk(rng)
    geo = Geometry(level, member_sizes(rng, n, chunk), chunk, layout)
    label = geo.label(extra)
    if not selected(label):
        return
    start = time.monotonic()
    paths, params, model = new_array(folder, geo, extra)
    w = random_pass(params, model, geo, rng, label, steps)
    verify_members(geo, model, paths, label)
    for p in paths:
        os.unlink(p)
    print("ok %-50s %5.2fs %s" % (label, time.monotonic() - start,
                                  format_counts(w.counts)), flush=True)


def main():
    rng = random.Random(seed("test-model-random"))
    plugin()

    def run(folder, level, layout, n, extra=()):
        run_geometry(rng, folder, level, layout, n, extra=extra)

    run_passes(run, GEOMETRIES,
               psync=[(0, None, 3), (10, "f2", 3)],
               uring=[(10, "n2", 3), (0, None, 4)],
               direct=[(0, None, 3), (10, "o2", 3), (1, None, 2)])


run_main(main)
