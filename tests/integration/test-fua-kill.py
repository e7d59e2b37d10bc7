#!/usr/bin/python3
"""A write acknowledged with FUA, or followed by an acknowledged flush, is
in the member files when nbdkit is killed with SIGKILL right after.

The member files are read directly and every copy is checked with the md
placement model, so nothing the plugin might hold in its own memory (a
cache, a queue, a deferred write) counts.  (Surviving power loss also needs
the page cache written back; fdatasync on FUA/flush is what does that, and
no test short of a VM can pull the plug; this one proves the data left the
process before the reply.)  Cases per geometry:
  * pwrite with FUA, several unaligned requests crossing chunk boundaries;
  * pwrite without FUA, then flush;
  * zero with FUA over written data (no trim) and trim with FUA + flush;
  * the same with direct=true when O_DIRECT works in /var/tmp.
"""

import os
import random
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, o_direct_works, plugin, run_main, seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import pattern  # noqa: E402
from raidtest.server import Server  # noqa: E402
from raidtest.workload import new_array  # noqa: E402
from raidtest.members import verify_members  # noqa: E402


def writes(rng, geo, count):
    """count unaligned, non-overlapping (offset, length) in the array,
    each crossing at least one chunk boundary."""
    out = []
    slot = geo.size // count
    for i in range(count):
        n = rng.randint(geo.chunk + 1, min(slot - 1, 5 * geo.chunk))
        out.append((i * slot + rng.randint(0, slot - n), n))
    return out


def crash_case(rng, d, geo, mode, extra):
    label = "%s %s %s" % (geo.name(), mode, " ".join(extra))
    paths, params, model = new_array(d, geo, extra)
    with Server(params) as srv:
        h = srv.connect()
        if mode in ("zero-fua", "trim-flush"):
            # Lay down data first and make it durable, then the tested op.
            for off, n in writes(rng, geo, 3) + [(0, geo.size)]:
                data = pattern(rng, n)
                h.pwrite(data, off)
                model.write(off, data)
            h.flush()
        for off, n in writes(rng, geo, 6):
            if mode == "write-fua":
                data = pattern(rng, n)
                h.pwrite(data, off, flags=nbd.CMD_FLAG_FUA)
                model.write(off, data)
            elif mode == "write-flush":
                data = pattern(rng, n)
                h.pwrite(data, off)
                model.write(off, data)
            elif mode == "zero-fua":
                h.zero(n, off, flags=nbd.CMD_FLAG_FUA | nbd.CMD_FLAG_NO_HOLE)
                model.zero(off, n)
            elif mode == "trim-flush":
                h.trim(n, off, flags=nbd.CMD_FLAG_FUA)
                model.trim(off, n)
        if mode in ("write-flush", "trim-flush"):
            h.flush()
        srv.kill9()
    verify_members(geo, model, paths, label)
    for p in paths:
        os.unlink(p)
    print("ok %s" % label, flush=True)


def main():
    rng = random.Random(seed("test-fua-kill"))
    plugin()
    geos = [Geometry(0, [MiB + 5000, MiB + 70000], 16 * KiB),
            Geometry(1, [MiB, MiB + 4096], 64 * KiB),
            Geometry(10, [MiB] * 3, 32 * KiB, "n2"),
            Geometry(10, [MiB + 12345] * 3, 8 * KiB, "f2"),
            Geometry(10, [MiB] * 2, 64 * KiB, "o2")]
    modes = ["write-fua", "write-flush", "zero-fua", "trim-flush"]
    with TempDir() as d:
        for geo in geos:
            for mode in modes:
                crash_case(rng, d, geo, mode, [])
    if o_direct_works("/var/tmp"):
        with TempDir(base="/var/tmp") as d:
            for geo in geos[::2]:
                for mode in modes[:2]:
                    crash_case(rng, d, geo, mode, ["direct=true"])
    else:
        print("direct=true cases skipped: O_DIRECT fails in /var/tmp")


run_main(main)
