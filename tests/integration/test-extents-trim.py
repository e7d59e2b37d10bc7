#!/usr/bin/python3
"""Trim and zero(may_trim) of whole chunks punch holes in the members, and
block status (base:allocation) reports them.

For RAID0, RAID1 and RAID10 (n2, f2, o2):
  * a fresh array (sparse members) reads as one hole;
  * after writing the whole array, no byte is reported as a hole, and the
    members' allocated blocks (st_blocks) cover every copy;
  * after trim / zero(may_trim) / fast zero of whole-chunk ranges, those
    ranges are reported as holes and read as zero, written ranges around
    them are still data with their bytes, and st_blocks drops by (nearly)
    the bytes punched on every copy;
  * a chunk punched (behind nbdkit) in one copy only is still data;
  * a zero without may_trim reads as zero; an unaligned trim leaves the
    bytes outside it alone.
"""

import ctypes
import errno
import os
import random
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, plugin, run_main, seed)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.server import Server, nbd_errno  # noqa: E402
from raidtest.workload import fill, new_array, verify_readback  # noqa: E402
from raidtest.members import verify_members  # noqa: E402


def extents(h, offset, length):
    """[(offset, length, flags)] covering [offset, offset+length)."""
    out = []
    end = offset + length
    pos = offset
    while pos < end:
        got = []

        def cb(ctx, off, entries, err):
            if ctx == nbd.CONTEXT_BASE_ALLOCATION:
                got.append((off, list(entries)))
            return 0
        h.block_status(end - pos, pos, cb)
        check(got, "block_status at %d returned no base:allocation" % pos)
        off, entries = got[0]
        check(off == pos, "block_status answered for %d, asked %d" % (
            off, pos))
        check(entries, "block_status at %d: no extents" % pos)
        for i in range(0, len(entries), 2):
            n, flags = entries[i], entries[i + 1]
            check(n > 0, "zero-length extent at %d" % pos)
            n = min(n, end - pos)
            out.append((pos, n, flags))
            pos += n
            if pos >= end:
                break
    return out


def assert_state(h, offset, length, hole, what):
    for off, n, flags in extents(h, offset, length):
        is_hole = bool(flags & nbd.STATE_HOLE)
        check(is_hole == hole, "%s: extent %d+%d has flags 0x%x, want %s" % (
            what, off, n, flags, "a hole" if hole else "data"))


def punch(path, offset, length):
    """fallocate(PUNCH_HOLE|KEEP_SIZE) on a member file, behind nbdkit."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDWR)
    try:
        r = libc.fallocate(fd, 3, ctypes.c_long(offset), ctypes.c_long(length))
        check(r == 0, "fallocate(PUNCH_HOLE) %s: errno %d" % (
            path, ctypes.get_errno()))
    finally:
        os.close(fd)


def blocks(paths):
    return sum(os.stat(p).st_blocks for p in paths)


def run(rng, d, geo):
    label = geo.name()
    c = geo.chunk
    paths, params, model = new_array(d, geo)
    copies = len(geo.copies(0))
    with Server(params) as srv:
        h = srv.connect(meta_base=True)
        check(h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION),
              "%s: base:allocation not offered" % label)
        assert_state(h, 0, geo.size, True, label + " fresh array")

        fill(h, model, geo.size, rng)
        h.flush()
        full = blocks(paths)
        check(full * 512 >= geo.size * copies,
              "%s: members allocate %d bytes for %d bytes x %d copies" % (
                    label, full * 512, geo.size, copies))
        assert_state(h, 0, geo.size, False, label + " written array")

        # Whole-chunk ranges: (first chunk, chunk count, operation).
        nch = geo.chunks
        plan = [(1, 3, "trim"), (7, 1, "zero"), (10, 2, "fast"),
                (nch - 2, 2, "trim"), (13, 5, "trim")]
        punched = 0
        for first, count, op in plan:
            off, n = first * c, count * c
            if op == "trim":
                h.trim(n, off)
            elif op == "zero":
                h.zero(n, off)  # may_trim is the default
            elif h.can_fast_zero():
                try:
                    h.zero(n, off, flags=nbd.CMD_FLAG_FAST_ZERO)
                except nbd.Error as e:
                    check(nbd_errno(e) == errno.ENOTSUP,
                          "%s: fast zero: %s" % (label, e))
                    print("   fast zero refused (ENOTSUP), trimming")
                    h.trim(n, off)
            else:
                h.zero(n, off, flags=nbd.CMD_FLAG_FUA)
            model.zero(off, n)
            punched += n * copies
        h.flush()
        for first, count, op in plan:
            off, n = first * c, count * c
            assert_state(h, off, n, True, "%s %s chunks %d..%d" % (
                label, op, first, first + count - 1))
            got = h.pread(n, off)
            check(got.count(0) == n, "%s: %s chunks %d..%d do not read "
                  "as zero" % (label, op, first, first + count - 1))
        for first, count in ((0, 1), (4, 3), (8, 2), (12, 1), (18, 2)):
            assert_state(h, first * c, count * c, False,
                         "%s untouched chunks %d..%d" % (
                             label, first, first + count - 1))
        after = blocks(paths)
        freed = (full - after) * 512
        check(freed >= punched * 0.9,
              "%s: st_blocks dropped by %d bytes, punched %d" % (
                    label, freed, punched))

        if copies > 1:
            # A hole in one copy only: another member still holds the data.
            k = 19
            m, mc = geo.copies(k)[0]
            punch(paths[m], mc * c, c)
            assert_state(h, k * c, c, False,
                         "%s chunk %d punched on member %d only" % (
                             label, k, m))
            h.pwrite(model.data[k * c:(k + 1) * c], k * c)  # heal the copy

        # zero without may_trim, and an unaligned trim inside written data.
        off = 20 * c + 333
        h.zero(c + 1000, off, flags=nbd.CMD_FLAG_NO_HOLE)
        model.zero(off, c + 1000)
        off2 = 23 * c + 5
        h.trim(2 * c, off2)
        model.trim(off2, 2 * c)
        verify_readback(srv, model, geo, label)
        print("ok %-45s freed %d of %d punched bytes" % (label, freed,
                                                         punched))
        srv.stop()
    verify_members(geo, model, paths, label)
    for p in paths:
        os.unlink(p)


def main():
    rng = random.Random(seed("test-extents-trim"))
    plugin()
    size = 2 * MiB + 64 * KiB
    with TempDir() as d:
        for level, layout, n, chunk in ((0, None, 3, 64 * KiB),
                                        (0, None, 2, 16 * KiB),
                                        (1, None, 2, 64 * KiB),
                                        (10, "n2", 3, 64 * KiB),
                                        (10, "f2", 2, 32 * KiB),
                                        (10, "o2", 3, 64 * KiB)):
            sizes = [size] * n
            sizes[-1] += 3 * chunk
            run(rng, d, Geometry(level, sizes, chunk, layout))


run_main(main)
