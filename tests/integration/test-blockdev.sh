#!/usr/bin/env bash
# Test: block-device members with direct=true.  RAID0 and RAID10 (n2, f2)
# over three loop devices (sparse backing files, one larger): random
# unaligned I/O from several connections reads back byte-exact, every copy
# sits on the devices where md would put it, and trim / zero(may_trim) on
# the devices work: they read back as zero (zero) or zero-or-old (trim)
# and the backing files' allocated blocks drop.
# Needs root and working loop devices; exits 77 (skipped) otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=functions.sh
source "$here/functions.sh"
requires_plugin
requires_root "for losetup"
requires_program losetup

make_tmpdir nbdraid-blk
dir=$tmpdir
loops=()
sizes=(8388608 8388608 8585216)     # 8M, 8M, 8M + 192K
for i in 0 1 2; do
    truncate -s "${sizes[$i]}" "$dir/b$i.img"
    if ! l=$(losetup -f --show "$dir/b$i.img" 2>&1); then
        skip "losetup failed: $l"
    fi
    loops+=("$l")
    cleanup_fn losetup -d "$l"
done
echo "loop devices: ${loops[*]}"

/usr/bin/python3 - "$here" "$dir" "${loops[@]}" <<'EOF'
import fcntl, os, random, struct, sys
import nbd
sys.path.insert(0, sys.argv[1])
from raidtest.common import KiB, check, run_main, seed
from raidtest.geometry import Geometry
from raidtest.model import Model
from raidtest.server import Server, check_array, stop_clean
from raidtest.workload import Workload, fill, verify_readback
from raidtest.members import verify_members

folder, loops = sys.argv[2], sys.argv[3:]
backing = [os.path.join(folder, "b%d.img" % i) for i in range(len(loops))]
BLKDISCARD, BLKGETSIZE64, BLKFLSBUF = 0x1277, 0x80081272, 0x1261


def dev_size(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8)
        return struct.unpack("Q", buf)[0]
    finally:
        os.close(fd)


def wipe(path):
    """Discard the whole loop device (punches its backing file) and drop
    any cached pages, so it reads as zero."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.ioctl(fd, BLKDISCARD, struct.pack("QQ", 0, dev_size(path)))
        fcntl.ioctl(fd, BLKFLSBUF, 0)
    finally:
        os.close(fd)


def flushbufs():
    for l in loops:
        fd = os.open(l, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, BLKFLSBUF, 0)
        finally:
            os.close(fd)


def blocks():
    return sum(os.stat(p).st_blocks for p in backing)


def run(rng, level, layout, chunk):
    sizes = [dev_size(l) for l in loops]
    geo = Geometry(level, sizes, chunk, layout)
    label = geo.name() + " direct=true"
    for l in loops:
        wipe(l)
    model = Model(geo.size)
    params = geo.params(loops, ["direct=true"])
    with Server(params) as srv:
        h = srv.connect()
        check_array(h, geo, label)
        mn = h.get_block_size(nbd.SIZE_MINIMUM)
        check(mn in (1, 512, 4096), "%s: minimum block %d" % (label, mn))
        w = Workload(srv, model, geo, rng)
        w.concurrent_phase(20)
        w.serial_phase(30)

        # Trim on the devices: fill, then punch whole chunks.
        fill(h, model, geo.size, rng)
        h.flush()
        full = blocks()
        copies = len(geo.copies(0))
        t0, n0 = 3 * chunk, 16 * chunk         # trim
        t1, n1 = 40 * chunk, 8 * chunk         # zero, may_trim
        h.trim(n0, t0)
        model.trim(t0, n0)
        h.zero(n1, t1)
        model.zero(t1, n1)
        h.flush()
        got = h.pread(n1, t1)
        check(got.count(0) == n1, "%s: zeroed range reads non-zero" % label)
        freed = (full - blocks()) * 512
        check(freed >= 0.9 * (n0 + n1) * copies,
                "%s: backing files freed %d bytes, trim+zero punched %d" % (
                    label, freed, (n0 + n1) * copies))
        w.serial_phase(10)
        w.close()
        verify_readback(srv, model, geo, label)
        stop_clean(srv, label)
    flushbufs()
    verify_members(geo, model, loops, label)
    print("ok %s, trim freed %d bytes" % (label, freed), flush=True)


def main():
    rng = random.Random(seed("test-blockdev"))
    run(rng, 0, None, 64 * KiB)
    run(rng, 10, "n2", 32 * KiB)
    run(rng, 10, "f2", 64 * KiB)


run_main(main)
EOF
