#!/usr/bin/python3
"""Hostile member images and paths, through a real nbdkit: each is refused
at once with a message naming the member and the reason, and leaves every
member file byte-identical; what is within the limits is served exactly.

- more members than nbdraid's tables hold (a glob of 65, 73 files; nbdraid
  create of 65): refused; 64 members are served, RAID 1 and 5, byte-exact;
- a FIFO (or a character device, a directory) as member, glob candidate,
  spare, cache log or `nbdraid examine` argument: refused before any open
  could wait; `nbdraid --control add FIFO` is refused at once and SIGTERM
  still stops the server;
- member images whose superblock geometry is hostile (data offset 0, data
  past the member's end, md's bitmap outside the member, a 12K RAID 0
  chunk): refused naming the member and the field, nothing written.
"""

import os
import re
import signal
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, file_state, make_members, run_main)
from raidtest.mdarray import Control, cli, create, run  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402

SB_AT = 4096            # 1.2: the superblock 4 KiB into the member


def refused(label, params, want, files, timeout=10):
    """nbdkit must refuse params within timeout s, an error line matching
    want, every file in files unchanged."""
    before = {p: file_state(p) for p in files}
    t0 = time.monotonic()
    rc, err = run_expect_failure(params, timeout=timeout)
    took = time.monotonic() - t0
    check(rc != 0, "%s: nbdkit exited 0\n%s" % (label, err))
    lines = [ln for ln in err.splitlines()
             if re.search(want, ln) and "error" in ln]
    check(lines, "%s: stderr lacks an error /%s/:\n%s" % (label, want, err))
    for p in files:
        check(file_state(p) == before[p], "%s: %s was modified" % (label, p))
    print("ok %-34s %.1fs: %s" % (label, took, lines[0].strip()[:160]))


def pattern(n, seed):
    """n bytes nobody else writes."""
    return bytes((i * 131 + seed * 7 + (i >> 9)) & 0xff for i in range(n))


def write_read(srv, size, label):
    """Write a pattern at a few offsets, read every byte back."""
    h = srv.connect()
    check(h.get_size() == size, "%s: size %d, want %d" % (
        label, h.get_size(), size))
    data = {}
    for k, off in enumerate((0, size // 3 & ~4095, size - 65536)):
        buf = pattern(65536, k)
        h.pwrite(buf, off)
        data[off] = buf
    h.flush()
    for off, buf in data.items():
        check(h.pread(len(buf), off) == buf, "%s: read back at %d" % (
            label, off))
    return data


# ---- 8: more members than nbdraid's tables hold ---------------------------

def test_member_count(d):
    many = os.path.join(d, "many")
    os.mkdir(many)
    # Zero-padded: the glob's order is the role order.
    paths = [os.path.join(many, "m%02d.img" % i) for i in range(73)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(MiB)
    glob_all = "member=%s/m*.img" % many
    for level in (0, 1, 5, 10):
        refused("73 files, raid%d" % level, ["level=%d" % level, glob_all],
                r"member=.*/m\*\.img: 73 files or devices, more than "
                r"nbdraid serves \(64 members and 8 spares\)", paths)
    for p in paths[65:]:
        os.unlink(p)
    paths = paths[:65]
    for level in (0, 1, 5, 10):
        refused("65 files, raid%d" % level, ["level=%d" % level, glob_all],
                r"65 members: nbdraid serves at most 64", paths)
    refused("65 files, metadata=none", ["level=1", "metadata=none",
                                        glob_all],
            r"65 files or devices, more than nbdraid serves \(64 members\)",
            paths)
    before = {p: file_state(p) for p in paths}
    r = run([cli(), "create", "--level", "1"] + paths, ok=False)
    check(r.returncode != 0 and "65 members: nbdraid serves at most 64"
          in r.stderr, "create of 65: %d %s" % (r.returncode, r.stderr))
    for p in paths:
        check(file_state(p) == before[p], "create of 65 wrote %s" % p)
    print("ok create of 65 refused: %s" % r.stderr.strip())
    # 64: served, and every byte where it belongs.
    os.unlink(paths.pop())
    with Server(["level=1", glob_all]) as srv:
        data = write_read(srv, MiB, "raid1 x64")
        srv.stop()
    for p in paths:
        with open(p, "rb") as f:
            for off, buf in data.items():
                f.seek(off)
                check(f.read(len(buf)) == buf, "raid1 x64: %s at %d" % (
                    p, off))
    print("ok raid1 of 64 members: every copy of every byte written")
    with Server(["level=5", "chunk=4K", glob_all]) as srv:
        write_read(srv, 63 * MiB, "raid5 x64")
        srv.stop()
    print("ok raid5 of 64 members: read back")


# ---- 11: FIFOs and other types ---------------------------------------------

def test_types(d):
    folder = os.path.join(d, "types")
    os.mkdir(folder)
    paths = make_members(folder, [16 * MiB] * 3)
    fifo = os.path.join(folder, "zz.fifo")
    os.mkfifo(fifo)
    sub = os.path.join(folder, "dir")
    os.mkdir(sub)
    M = re.escape
    mem = ["member=%s" % p for p in paths]
    refused("FIFO member", ["level=5"] + mem[:2] + ["member=" + fifo],
            M("member 2 (%s): a FIFO, not a regular file or block device"
              % fifo), paths)
    refused("character device member", ["level=5"] + mem[:2] +
            ["member=/dev/null"],
            M("member 2 (/dev/null): a character device, not a regular "
              "file or block device"), paths)
    refused("directory member", ["level=5"] + mem[:2] + ["member=" + sub],
            M("member 2 (%s): a directory" % sub), paths)
    create(paths, 5, name="typ")
    refused("FIFO spare", mem + ["spare=" + fifo],
            M("(%s): a FIFO, not a regular file or block device" % fifo),
            paths)
    refused("FIFO cache log", mem + ["cache=log", "cache-log=" + fifo],
            M("cache-log %s: a FIFO, not a regular file or block device"
              % fifo), paths)
    t0 = time.monotonic()
    r = subprocess.run([cli(), "examine", fifo], capture_output=True,
                       text=True, timeout=10)
    check(r.returncode != 0 and "a FIFO" in r.stderr,
          "examine FIFO: %d %s" % (r.returncode, r.stderr))
    print("ok examine FIFO %.1fs: %s" % (time.monotonic() - t0,
                                         r.stderr.strip().splitlines()[0]))
    # A glob candidate: left out, said, the array served.
    with Server(["name=typ", "member=%s/*" % folder], timeout=10) as srv:
        check(re.search(M("(%s): a FIFO, not a regular file" % fifo),
                        srv.stderr()),
              "glob: the FIFO is not named:\n%s" % srv.stderr())
        write_read(srv, 2 * (16 * MiB - 1 * MiB), "glob with a FIFO")
        check(srv.stop() == 0, "glob: nbdkit's exit status")
    print("ok glob candidate FIFO: named, left out, array served")
    # `add` of a FIFO through the control socket: refused at once; the
    # control thread free, so SIGTERM stops the server.
    ctl = os.path.join(d, "ctl.sock")
    with Server(mem + ["control=" + ctl], timeout=10) as srv:
        t0 = time.monotonic()
        r = subprocess.run([cli(), "--control", ctl, "add", fifo],
                           capture_output=True, text=True, timeout=10)
        check(r.returncode == 1, "add FIFO: exit %d %s" % (r.returncode,
                                                          r.stderr))
        check("a FIFO, not a regular file" in srv.stderr(),
              "add FIFO: the server does not say why:\n%s" % srv.stderr())
        st = Control(ctl).status()
        check(len(st["members"]) == 3 and
              all(m["path"] != fifo for m in st["members"]),
              "add FIFO: a spare was added: %s" % st["members"])
        print("ok control add FIFO refused in %.1fs" % (
            time.monotonic() - t0))
        t0 = time.monotonic()
        os.kill(srv.proc.pid, signal.SIGTERM)
        try:
            rc = srv.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc is not None, "SIGTERM did not stop the server in 10 s")
        check(rc == 0, "nbdkit exit %s after SIGTERM" % rc)
        print("ok SIGTERM stopped the server in %.1fs" % (
            time.monotonic() - t0))


# ---- 10: hostile superblock geometry ---------------------------------------

def sb_csum(sb):
    """md's checksum of a v1 superblock (calc_sb_1_csum)."""
    max_dev = struct.unpack_from("<I", sb, 220)[0]
    size = 256 + 2 * max_dev
    b = bytearray(sb[:size])
    b[216:220] = b"\0\0\0\0"
    total = sum(struct.unpack_from("<%dI" % (size // 4), b))
    if size % 4:
        total += struct.unpack_from("<H", b, size - 2)[0]
    return ((total & 0xffffffff) + (total >> 32)) & 0xffffffff


def sb_edit(path, fmt, offset, value):
    """Set one field of path's 1.2 superblock, checksum kept right."""
    with open(path, "r+b") as f:
        f.seek(SB_AT)
        sb = bytearray(f.read(4096))
        struct.pack_into(fmt, sb, offset, value)
        struct.pack_into("<I", sb, 216, sb_csum(sb))
        f.seek(SB_AT)
        f.write(sb)


def test_geometry(d):
    folder = os.path.join(d, "geo")
    os.mkdir(folder)
    member_sectors = 16 * MiB // 512
    cases = [
        # label, level, {member: [(fmt, offset, value)]}, message
        ("data_offset 0", 5, {1: [("<Q", 128, 0)]},
         r"member \S+/g1\.img: data_offset 0, data_size \d+: the data area "
         r"\(sectors 0-\d+\) overlaps the superblock \(sectors 8-15"),
        ("data past the end", 5, {2: [("<Q", 136, member_sectors)]},
         r"member \S+/g2\.img: data_offset \d+ \+ data_size %d sectors: "
         r"past the member's end \(%d sectors\)" % (member_sectors,
                                                   member_sectors)),
        ("data_offset wraps", 1, {0: [("<Q", 128, (1 << 64) - 8)]},
         r"member \S+/g0\.img: data_offset 18446744073709551608 .* past "
         r"the member's end"),
        ("bitmap outside the member", 1,
         {0: [("<I", 8, 1), ("<i", 96, 1 << 30)]},
         r"member \S+/g0\.img: bitmap_offset 1073741824: the bitmap "
         r"\(sectors \d+-\d+\) lies outside the member"),
        ("12K RAID 0 chunk", 0, {k: [("<I", 88, 24)] for k in range(3)},
         r"member \S+/g\d\.img: chunksize 24 sectors: not a power of two"),
        ("4 GiB RAID 5 chunk", 5,
         {k: [("<I", 88, 8 << 20)] for k in range(3)},
         r"chunksize 8388608 sectors: nbdraid serves chunks from 4 KiB "
         r"to 16 MiB"),
    ]
    for label, level, edits, want in cases:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        paths = make_members(folder, [16 * MiB] * 3, prefix="g")
        create(paths, level, name="geo")
        for k, fields in edits.items():
            for fmt, offset, value in fields:
                sb_edit(paths[k], fmt, offset, value)
        refused(label, ["member=%s" % p for p in paths], want, paths)


def main():
    with TempDir() as d:
        test_member_count(d)
        test_types(d)
        test_geometry(d)


if __name__ == "__main__":
    run_main(main)
