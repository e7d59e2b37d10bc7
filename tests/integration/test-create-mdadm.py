#!/usr/bin/python3
"""`nbdraid create` writes the superblocks `mdadm --create` (4.2) writes,
field by field, at the size limits where mdadm's choices change.

tests/data/md/limits/ holds what mdadm 4.2 itself wrote in the VM
(tests/data/md/make-limits.sh: the command's settings and every member's
size in CASE.info, the 4 KiB at each member's superblock in CASE.dN.sb):
members just over 8 GiB and 200 GiB (the bitmap space mdadm reserves is
its choose_bm_space of the used size there, not the member's: the
bad-block log follows it, and 1.0's data size ends before it), members of
different sizes (the data offset comes from the first member's size),
small members (the headroom held back by the chunk, 1.0's smallest
arrays), sizes not whole chunks or 4 KiB (RAID 0's data size, 1.0's
superblock place), for metadata 1.0, 1.1 and 1.2.

For each case: sparse files of the same sizes, `nbdraid create` with the
same level, layout, chunk, metadata, name and homehost (--assume-clean, as
mdadm's were), then every field mdadm chooses compared with mdadm's, on
every member: level, layout, size, chunk, raid_disks, feature map, bitmap
offset, data offset, data size, superblock offset, recovery offset,
dev_number, devflags, the bad-block log (shift, size, offset), max_dev,
the role table, the name.  (UUIDs, times, events, state and checksum are
the run's own.)  Where nbdraid differs on purpose it is said here, and the
test holds it to exactly that:
  - a RAID 0 whose members differ in whole chunks: mdadm records each
    member's data size (and the RAID 0 layout feature), so md would add a
    zone; nbdraid serves one zone, and records the smallest's on all;
  - members over 100 GiB: mdadm 4.2 adds an internal write-intent bitmap
    by default; nbdraid keeps none, and writes what mdadm --bitmap=none
    writes (the same case made with --bitmap=none).
With mdadm installed, `mdadm --examine` of every member nbdraid made says
"Checksum : ... correct".
"""

import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import TempDir, check, run_main  # noqa: E402
from raidtest.mdarray import cli, run  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                    "md", "limits")
HOMEHOST = "nbdraid-test"

# Each case's deliberate differences: {field: value nbdraid writes}, or a
# case whose --bitmap=none twin nbdraid matches exactly.
EXPECTED = {
    # 30920 and 30840 sectors after the data offset, 64K chunks: 241 and
    # 240 whole chunks; nbdraid records the smallest's, 240 chunks.
    "r0-mixed-v1.1": {"feature_map": 0, "data_size": 240 * 128},
}
TWIN = {"r1-200g-v1.2-bitmap": "r1-200g-v1.2"}


def fields(b):
    """The fields mdadm chooses, from a v1.x superblock's bytes."""
    f = {}
    f["magic"], f["major"], f["feature_map"] = struct.unpack_from("<III", b, 0)
    (f["level"], f["layout"], f["size"], f["chunksize"], f["raid_disks"],
     f["bitmap_offset"]) = struct.unpack_from("<iIQIIi", b, 72)
    f["reshape"] = b[100:128]
    (f["data_offset"], f["data_size"], f["super_offset"],
     f["recovery_offset"], f["dev_number"]) = struct.unpack_from(
        "<QQQQI", b, 128)
    (f["devflags"], f["bblog_shift"], f["bblog_size"],
     f["bblog_offset"]) = struct.unpack_from("<BBHi", b, 184)
    f["max_dev"], = struct.unpack_from("<I", b, 220)
    f["roles"] = struct.unpack_from("<%dH" % f["max_dev"], b, 256)
    f["name"] = b[32:64].rstrip(b"\0").decode()
    return f


def load_info(path):
    info = {}
    with open(path) as fh:
        for line in fh:
            k, v = line.split(None, 1)
            info[k] = v.strip()
    return info


def made_by_mdadm(name, i):
    with open(os.path.join(DATA, "%s.d%d.sb" % (name, i)), "rb") as fh:
        return fields(fh.read())


def one_case(d, name, info):
    n = int(info["members"])
    paths = []
    for i in range(n):
        p = os.path.join(d, "%s.d%d.img" % (name, i))
        with open(p, "wb") as fh:
            fh.truncate(int(info["member_bytes.%d" % i]))
        paths.append(p)
    argv = [cli(), "create", "--level", info["level"], "--metadata",
            info["metadata"], "--name", name, "--homehost", HOMEHOST,
            "--assume-clean"]
    if info["layout"] != "-":
        argv += ["--layout", info["layout"]]
    if info["chunk_k"] != "-":
        argv += ["--chunk", info["chunk_k"] + "K"]
    run(argv + paths)
    want = EXPECTED.get(name, {})
    for i in range(n):
        sector = int(info["sb_sector.%d" % i])
        with open(paths[i], "rb") as fh:
            fh.seek(sector * 512)
            ours = fields(fh.read(4096))
        theirs = made_by_mdadm(TWIN.get(name, name), i)
        if name in TWIN:
            theirs["name"] = made_by_mdadm(name, i)["name"]
        for k in theirs:
            expect = want.get(k, theirs[k])
            check(ours[k] == expect,
                  "%s member %d: %s is %s, mdadm 4.2 writes %s%s" % (
                      name, i, k, ours[k], theirs[k],
                      "" if expect == theirs[k] else
                      " (nbdraid's own: %s)" % expect))
        if shutil.which("mdadm"):
            out = subprocess.run(["mdadm", "--examine", paths[i]],
                                 capture_output=True, text=True).stdout
            check("correct" in out, "%s member %d: mdadm --examine:\n%s" % (
                name, i, out))
    for p in paths:
        if os.path.exists(p):
            os.unlink(p)
    print("ok %s: %d members (%s), superblocks as mdadm 4.2's%s" % (
        name, n, ", ".join(info["member_bytes.%d" % i] for i in range(n)),
        "" if name not in EXPECTED and name not in TWIN else
        " but the difference said"), flush=True)


def main():
    cases = sorted(f[:-5] for f in os.listdir(DATA) if f.endswith(".info"))
    check(len(cases) >= 18, "only %d cases in %s" % (len(cases), DATA))
    with TempDir() as d:
        for name in cases:
            one_case(d, name, load_info(os.path.join(DATA, name + ".info")))


run_main(main)
