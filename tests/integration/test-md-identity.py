#!/usr/bin/python3
"""Arrays with an identity: md's own v1.x superblocks, made by
`nbdraid create`, explained by `mdadm --examine`, served from the members
alone in any order.

For every level and layout (RAID 0; RAID 1; RAID 5 in md's four layouts;
RAID 10 n2, f2, o2), and metadata 1.0 and 1.1 besides the default 1.2:
  - nbdraid create over sparse member files;
  - mdadm --examine on every member (mdadm reads plain files): Checksum
    correct, and the level, layout, chunk, role, UUID and state (clean)
    that create printed;
  - nbdkit serves the members given in a shuffled order (no level, no
    layout, no chunk given), random data is written over the whole array,
    nbdkit stops: every member is clean again in mdadm's eyes;
  - nbdkit again, with the members in another order: the whole array
    reads back byte-exact; the member bytes are where an independent model
    of md puts them (from the data offset mdadm reports), and nbdraid check
    finds every copy and parity right.
Then, on one RAID 1 and one RAID 5:
  - a stale member (an old copy of a member file) is left out, naming it,
    and the array refuses to start degraded; force=true takes it back;
  - a member of another array is refused, naming both;
  - create over a file holding ext4 is refused and the file is unchanged
    byte for byte (and over a member of an array: its superblock named);
  - a second nbdkit on the same members is refused while one serves;
  - kill -9 after writes leaves the array active (mdadm: State : active);
    a clean stop leaves it clean.
Needs mdadm (for --examine) and mkfs.ext4; exits 77 (skipped) without.
"""

import hashlib
import os
import random
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raidtest.common import (  # noqa: E402
    KiB, MiB, TempDir, check, fail, file_state, plugin, run_main, seed,
    skip)
from raidtest.geometry import Geometry  # noqa: E402
from raidtest.members import verify_members  # noqa: E402
from raidtest.model import Model  # noqa: E402
from raidtest.server import Server, run_expect_failure  # noqa: E402
from raidtest.workload import fill, verify_readback  # noqa: E402

MEMBER = 24 * MiB
CHUNK = 64 * KiB
# (level, layout, members, metadata); mdadm's name for each layout.
CASES = [
    (0, None, 3, "1.2"),
    (1, None, 2, "1.2"),
    (5, "left-symmetric", 4, "1.2"),
    (5, "left-asymmetric", 3, "1.2"),
    (5, "right-symmetric", 4, "1.2"),
    (5, "right-asymmetric", 5, "1.2"),
    (10, "n2", 4, "1.2"),
    (10, "f2", 3, "1.2"),
    (10, "o2", 3, "1.2"),
    (1, None, 3, "1.0"),
    (5, "left-symmetric", 3, "1.0"),
    (10, "n2", 4, "1.1"),
]
MD_LAYOUT = {"n2": "near=2", "f2": "far=2", "o2": "offset=2"}


def cli():
    p = os.environ.get("NBDRAID_CLI")
    if not p or not os.path.isfile(p):
        skip("NBDRAID_CLI not built")
    return p


def run(argv, ok=True):
    r = subprocess.run(argv, capture_output=True, text=True)
    if ok and r.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout,
                                     r.stderr))
    return r


def examine(path):
    """mdadm --examine of a member file, as {key: value}."""
    out = run(["mdadm", "--examine", path]).stdout
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\s*([A-Za-z ]+?) : (.*)$", out, re.M)}


def create(paths, level, layout, meta, extra=()):
    argv = [cli(), "create", "--level", str(level), "--metadata", meta,
            "--name", "t%d" % level]
    if level != 1:
        argv += ["--chunk", "%dK" % (CHUNK // KiB)]
    if layout:
        argv += ["--layout", layout]
    r = run(argv + list(extra) + paths)
    uuid = re.search(r"UUID ([0-9a-f:]+)", r.stdout).group(1)
    return uuid


def check_examine(paths, uuid, level, layout, state):
    for role, p in enumerate(paths):
        e = examine(p)
        label = "%s (role %d)" % (p, role)
        check(e.get("Checksum", "").endswith("correct"),
              "%s: mdadm: checksum %s" % (label, e.get("Checksum")))
        check(e["Array UUID"] == uuid, "%s: UUID %s, created %s" % (
            label, e["Array UUID"], uuid))
        check(e["Raid Level"] == "raid%d" % level, "%s: level %s" % (
            label, e["Raid Level"]))
        check(e["Device Role"] == "Active device %d" % role,
              "%s: role %s" % (label, e["Device Role"]))
        check(e["State"] == state, "%s: mdadm says State %s, want %s" % (
            label, e["State"], state))
        if layout:
            check(e["Layout"] == MD_LAYOUT.get(layout, layout),
                  "%s: layout %s" % (label, e["Layout"]))
        if level != 1:
            check(e["Chunk Size"] == "%dK" % (CHUNK // KiB),
                  "%s: chunk %s" % (label, e["Chunk Size"]))


def member_slices(folder, paths, level):
    """Each member's data area (from mdadm's Data Offset) as a file of its
    own, for the independent placement model."""
    out = []
    for i, p in enumerate(paths):
        e = examine(p)
        off = int(e.get("Data Offset", "0 sectors").split()[0]) * 512
        used = e.get("Used Dev Size") or e["Avail Dev Size"]
        size = int(used.split()[0]) * 512
        if level == 0:
            size = size // CHUNK * CHUNK
        s = os.path.join(folder, "slice%d" % i)
        with open(p, "rb") as f, open(s, "wb") as g:
            f.seek(off)
            g.write(f.read(size))
        out.append(s)
    return out


def shuffled(rng, paths):
    order = list(paths)
    while len(order) > 1 and order == list(paths):
        rng.shuffle(order)
    return order


def one_case(d, rng, level, layout, n, meta):
    label = "raid%d%s x%d v%s" % (level, " " + layout if layout else "", n,
                                   meta)
    folder = os.path.join(d, label.replace(" ", "_"))
    os.mkdir(folder)
    paths = [os.path.join(folder, "m%d.img" % i) for i in range(n)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(MEMBER)
    uuid = create(paths, level, layout, meta)
    check_examine(paths, uuid, level, layout, "clean")
    with Server(["member=%s" % p for p in shuffled(rng, paths)]) as srv:
        h = srv.connect()
        size = h.get_size()
        model = Model(size)
        fill(h, model, size, rng)
        h.flush()
        check(srv.stop() == 0, "%s: nbdkit did not stop cleanly" % label)
    check_examine(paths, uuid, level, layout, "clean")
    slices = member_slices(folder, paths, level)
    geo = Geometry(level, [os.path.getsize(s) for s in slices],
                   CHUNK if level != 1 else 64 * KiB, layout)
    check(geo.size == size, "%s: md's geometry makes %d bytes, nbdraid "
          "served %d" % (label, geo.size, size))
    with Server(["member=%s" % p for p in shuffled(rng, paths)]) as srv:
        verify_readback(srv, model, geo, label)
        srv.stop()
    verify_members(geo, model, slices, label)
    if level != 0:
        r = run([cli(), "check"] + paths)
        check("0 mismatched" in r.stdout, "%s: nbdraid check: %s" % (
            label, r.stdout))
    shutil.rmtree(folder)
    print("ok %s: created, mdadm -E agrees, served shuffled, byte-exact, "
          "md's placement, clean" % label, flush=True)


def expect_refused(params, why, label):
    rc, err = run_expect_failure(params)
    check(rc != 0 and why in err, "%s: want an error saying '%s', got "
          "exit %d:\n%s" % (label, why, rc, err))
    print("ok %s: refused: %s" % (label, why), flush=True)


def faults(d, rng):
    folder = os.path.join(d, "faults")
    os.mkdir(folder)
    paths = [os.path.join(folder, "r%d.img" % i) for i in range(3)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(MEMBER)
    uuid = create(paths, 1, None, "1.2")
    members = ["member=%s" % p for p in paths]
    # A stale copy: member 2 as it was before two events went by.
    old = os.path.join(folder, "old2.img")
    shutil.copyfile(paths[2], old)
    for _ in range(2):
        with Server(members) as srv:
            srv.connect().pwrite(b"x" * 4096, 0)
            srv.stop()
    stale = members[:2] + ["member=%s" % old]
    rc, err = run_expect_failure(stale)
    check(rc != 0 and "stale" in err and old in err and "degraded" in err,
          "stale member: want it named stale and the array degraded:\n%s"
          % err)
    print("ok a stale member is left out, the array refuses degraded",
          flush=True)
    with Server(stale + ["force=true"]) as srv:
        check(srv.connect().get_size() > 0, "force=true: no export")
        srv.stop()
    print("ok force=true takes the stale member back", flush=True)
    # A member of another array.
    other = [os.path.join(folder, "o%d.img" % i) for i in range(2)]
    for p in other:
        with open(p, "wb") as f:
            f.truncate(MEMBER)
    create(other, 1, None, "1.2")
    expect_refused(members[:2] + ["member=%s" % other[0]], "of array UUID",
                   "a member of another array")
    # Create over ext4, and over an array's member.
    ext4 = os.path.join(folder, "ext4.img")
    with open(ext4, "wb") as f:
        f.truncate(MEMBER)
    run(["mkfs.ext4", "-q", "-F", ext4])
    before = file_state(ext4)
    r = run([cli(), "create", "--level", "1", ext4, other[1]], ok=False)
    check(r.returncode != 0 and "ext4" in r.stderr and ext4 in r.stderr,
          "create over ext4: exit %d\n%s" % (r.returncode, r.stderr))
    check("has an md superblock" in r.stderr and other[1] in r.stderr,
          "create over an array's member: %s" % r.stderr)
    check(file_state(ext4) == before, "create over ext4 changed the file")
    print("ok create refuses ext4 (file unchanged) and an md member",
          flush=True)
    # A second nbdkit on the same members.
    with Server(members) as srv:
        srv.connect()
        expect_refused(members, "in use by another nbdraid",
                       "a second nbdkit")
        r = run([cli(), "create", "--level", "1", "--force"] + paths,
                ok=False)
        check(r.returncode != 0 and "in use" in r.stderr,
              "create over a served member: %s" % r.stderr)
        srv.stop()
    # kill -9 after writes: active; a clean stop: clean.
    srv = Server(members)
    try:
        srv.connect().pwrite(os.urandom(65536), 12345)
        srv.kill9()
    finally:
        srv.__exit__(None, None, None)
    check_examine(paths, uuid, 1, None, "active")
    with Server(members) as srv:
        srv.connect().pwrite(os.urandom(512), 0)
        srv.stop()
    check_examine(paths, uuid, 1, None, "active")
    print("ok kill -9 leaves the array active; found active, it stays "
          "active (md resyncs it)", flush=True)
    # A clean array stopped cleanly after writes is clean.
    fresh = [os.path.join(folder, "c%d.img" % i) for i in range(3)]
    for p in fresh:
        with open(p, "wb") as f:
            f.truncate(MEMBER)
    uuid = create(fresh, 5, "left-symmetric", "1.2")
    with Server(["member=%s" % p for p in fresh]) as srv:
        srv.connect().pwrite(os.urandom(65536), 4096)
        srv.stop()
    check_examine(fresh, uuid, 5, "left-symmetric", "clean")
    print("ok a clean stop after writes leaves the array clean", flush=True)
    # Members holding data (no signature): create writes parity / copies.
    for level, layout, n in ((5, "left-asymmetric", 4), (10, "f2", 3),
                             (1, None, 3)):
        full = [os.path.join(folder, "f%d-%d.img" % (level, i))
                for i in range(n)]
        for p in full:
            with open(p, "wb") as f:
                f.write(os.urandom(MEMBER))
        r = run([cli(), "create", "--level", str(level), "--chunk", "64K"] +
                (["--layout", layout] if layout else []) + full)
        check("parity/copies written" in r.stdout, "raid%d create over "
              "data: %s" % (level, r.stdout))
        r = run([cli(), "check"] + full)
        check("0 mismatched" in r.stdout, "raid%d create over data: check "
              "says %s" % (level, r.stdout))
        check_examine(full, re.search(r"UUID ([0-9a-f:]+)", run(
            [cli(), "examine", "--brief"] + full).stdout.replace(
                "uuid=", "UUID ")).group(1), level, layout, "clean")
    print("ok create over members holding data writes parity and copies: "
          "check finds 0 mismatches", flush=True)


def main():
    rng = random.Random(seed("test-md-identity"))
    plugin()
    cli()
    for tool in ("mdadm", "mkfs.ext4"):
        if shutil.which(tool) is None:
            skip("%s not installed" % tool)
    with TempDir(base="/var/tmp") as d:
        for level, layout, n, meta in CASES:
            one_case(d, rng, level, layout, n, meta)
        faults(d, rng)


run_main(main)
