#!/usr/bin/python3
"""Zero on member files whose filesystem can punch holes but can neither
zero a range nor allocate one (ext2, or ext4 files without extents):
a fast zero that must not leave holes fails with ENOTSUP and changes
nothing (one that may trim punches); a zero that must not
leave holes (NO_HOLE) ends allocated and reading zero; a zero that may
trim reads zero.

The filesystem is an ext2 image on a loop device, mounted in a private
folder.  RAID 1 over two members and RAID 0 over three, filled with a
random pattern; after each request the array is read back against the
model and the member files are compared with their state before a fast
zero (sha256: not one byte, nor the allocation, may change).
Needs root, loop devices and mkfs.ext2; exits 77 (skipped) otherwise.
"""

import errno
import os
import random
import shutil
import subprocess
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    check, fail, file_state, KiB, make_members, MiB, plugin, run_main, seed,
    skip, TempDir)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.members import verify_members  # noqa: E402
from raidtest.model import Model  # noqa: E402
from raidtest.server import nbd_errno, Server  # noqa: E402
from raidtest.workload import fill, verify_readback  # noqa: E402

SIZE = 2 * MiB


def allocated(path):
    return os.stat(path).st_blocks * 512


def run_case(geo, folder, rng):
    paths = make_members(folder, geo.sizes, prefix="x%d-" % geo.level)
    params = geo.params() + ["member=%s" % p for p in paths]
    with Server(params) as srv:
        h = srv.connect()
        size = h.get_size()
        model = Model(size)
        fill(h, model, size, rng)
        h.flush()
        before = [file_state(p)[0] for p in paths]
        for off, n in ((1000, 5000), (64 * KiB, 128 * KiB), (0, size)):
            try:
                h.zero(n, off, flags=nbd.CMD_FLAG_FAST_ZERO |
                       nbd.CMD_FLAG_NO_HOLE)
                fail("%s: fast zero %d at %d succeeded where the members "
                       "can neither zero nor allocate a range" % (
                           geo.name(), n, off))
            except nbd.Error as e:
                check(nbd_errno(e) in (errno.ENOTSUP, errno.EOPNOTSUPP),
                        "%s: fast zero: %s" % (geo.name(), e))
            h.flush()
            after = [file_state(p)[0] for p in paths]
            check(after == before, "%s: fast zero %d at %d failed with "
                    "ENOTSUP but changed member files" % (geo.name(), n, off))
        verify_readback(srv, model, geo, geo.name() + " after fast zero")
        # NO_HOLE: nbdkit falls back to writing zeros; allocated after.
        h.zero(256 * KiB, 128 * KiB, flags=nbd.CMD_FLAG_NO_HOLE)
        model.zero(128 * KiB, 256 * KiB)
        # May trim: a punched hole reads zero.
        h.zero(100 * KiB, 700 * KiB + 3)
        model.zero(700 * KiB + 3, 100 * KiB)
        h.flush()
        verify_readback(srv, model, geo, geo.name() + " after zero")
        srv.stop()
    for p in paths:
        check(allocated(p) >= 256 * KiB, "%s: %s: only %d bytes "
                "allocated after a NO_HOLE zero" % (geo.name(), p,
                                                     allocated(p)))
    verify_members(geo, model, paths, geo.name())
    print("ok %s" % geo.name(), flush=True)


def main():
    rng = random.Random(seed("test-zero-without-extents"))
    plugin()
    if os.geteuid() != 0:
        skip("needs root to mount a loop device")
    if shutil.which("mkfs.ext2") is None:
        skip("mkfs.ext2 not installed")
    with TempDir(base="/var/tmp") as d:
        img, mnt = os.path.join(d, "ext2.img"), os.path.join(d, "mnt")
        os.mkdir(mnt)
        with open(img, "wb") as f:
            f.truncate(64 * MiB)
        subprocess.run(["mkfs.ext2", "-q", "-F", img], check=True)
        r = subprocess.run(["mount", "-o", "loop", img, mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            skip("cannot mount ext2 on a loop device: %s" % r.stderr)
        try:
            for geo in (Geometry(1, [SIZE] * 2, 64 * KiB),
                        Geometry(0, [SIZE] * 3, 64 * KiB)):
                run_case(geo, mnt, rng)
        finally:
            subprocess.run(["umount", mnt])


run_main(main)
