#!/usr/bin/python3
"""Block-device members opened buffered (direct=false) take zero and trim
at any byte offset and length, as the export's minimum block size of 1
promises: BLKZEROOUT, BLKDISCARD and fallocate on a block device need
whole logical blocks, so the unaligned edges are written (zero) or left
alone (trim), never refused with EINVAL.

RAID 0, 1, 10 and 5 over three or four loop devices (512-byte logical
blocks, and 4096-byte ones where losetup can set them), each filled with a
random pattern: zero (plain, may_trim, fast), trim, with and without FUA, at
offsets and lengths that are not multiples of 512 (100 bytes at 1000, a
range across a chunk boundary, a range of whole blocks with a ragged end),
then the whole array is read back against the model (trimmed bytes may read
old or zero; fast zero may fail with ENOTSUP and then changes nothing).
Needs root and loop devices; exits 77 (skipped) otherwise.
"""

import errno
import os
import random
import subprocess
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    check, KiB, make_members, MiB, plugin, run_main, seed, skip, TempDir)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.model import Model  # noqa: E402
from raidtest.server import nbd_errno, Server  # noqa: E402
from raidtest.workload import fill, verify_readback  # noqa: E402

SIZE = 4 * MiB


def losetup(path, block_size):
    cmd = ["losetup", "-f", "--show"]
    if block_size != 512:
        cmd += ["-b", str(block_size)]
    r = subprocess.run(cmd + [path], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return r.stdout.strip()


def requests(chunk):
    """(what, offset, length, nbd flags) of the unaligned discards."""
    return [
        ("zero", 1000, 100, nbd.CMD_FLAG_NO_HOLE),
        ("zero may_trim", 5000, 100, 0),
        ("trim", 9000, 100, 0),
        ("zero fua", 13000, 1000, nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FUA),
        ("zero across chunks", chunk - 3001, 2 * chunk + 7, 0),
        ("trim across chunks", 3 * chunk - 1001, 2 * chunk + 5,
         nbd.CMD_FLAG_FUA),
        ("zero ragged end", 8 * chunk, chunk + 511, nbd.CMD_FLAG_NO_HOLE),
        ("fast zero", 11 * chunk + 77, 3000, nbd.CMD_FLAG_FAST_ZERO),
        ("fast zero aligned", 12 * chunk, chunk, nbd.CMD_FLAG_FAST_ZERO),
    ]


def run_case(geo, devs, rng):
    params = geo.params() + ["member=%s" % d for d in devs[:geo.n]] + \
        ["direct=false"]
    with Server(params) as srv:
        h = srv.connect()
        size = h.get_size()
        model = Model(size)
        fill(h, model, size, rng)
        for what, off, n, flags in requests(geo.chunk):
            try:
                if what.startswith("trim"):
                    h.trim(n, off, flags=flags)
                    model.trim(off, n)
                else:
                    h.zero(n, off, flags=flags)
                    model.zero(off, n)
            except nbd.Error as e:
                err = nbd_errno(e)
                check(what.startswith("fast") and
                        err in (errno.ENOTSUP, errno.EOPNOTSUPP),
                        "%s: %s %d at %d failed: %s" % (geo.name(), what, n,
                                                         off, e))
            got = h.pread(min(n + 2000, size - off + 1000), off - 1000)
            bad = model.mismatch(off - 1000, got)
            check(bad is None, "%s: after %s %d at %d: %s" % (
                geo.name(), what, n, off, bad))
            model.resolve(off - 1000, got)
        verify_readback(srv, model, geo, geo.name())
        srv.stop()
    print("ok %s" % geo.name(), flush=True)


def main():
    rng = random.Random(seed("test-blockdev-unaligned-discard"))
    plugin()
    if os.geteuid() != 0:
        skip("needs root for losetup")
    loops = []
    with TempDir(base="/var/tmp") as d:
        try:
            for bs in (512, 4096):
                files = make_members(d, [SIZE] * 4, prefix="b%d-" % bs)
                devs = [losetup(f, bs) for f in files]
                loops += [x for x in devs if x]
                if None in devs:
                    if bs == 512:
                        skip("losetup failed")
                    print("losetup -b 4096 refused: 512-byte blocks only")
                    break
                print("loop devices (%d-byte blocks): %s" % (bs, devs))
                for geo in (Geometry(0, [SIZE] * 3, 64 * KiB),
                            Geometry(1, [SIZE] * 2, 64 * KiB),
                            Geometry(10, [SIZE] * 3, 64 * KiB, "n2"),
                            Geometry(5, [SIZE] * 4, 64 * KiB)):
                    run_case(geo, devs, rng)
        finally:
            for x in loops:
                subprocess.run(["losetup", "-d", x])


run_main(main)
