#!/usr/bin/env bash
# Test: members that share bytes through different devices are refused at
# start (nbdkit exits non-zero, stderr names both members and the reason,
# no member byte changes): a partition and its disk, a loop device and its
# backing file, two loop devices on overlapping ranges of one file, a
# partition of a loop device and the loop's backing file, a file and the
# loop device its filesystem is on, and (where device-mapper works) a dm
# device and its slave.  Members that do not overlap still serve: two
# partitions of one disk, two loop devices on disjoint ranges of one file,
# loop devices on different files, two files of one filesystem (a pattern
# written reads back, and sits at each member's place in the backing file).
# Needs root and working loop devices; exits 77 (skipped) otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=functions.sh
source "$here/functions.sh"
requires_plugin
requires_root "for losetup"
requires_program losetup

make_tmpdir nbdraid-overlap
dir=$(realpath "$tmpdir")   # sysfs names backing files by their real path
loops=()
mounted=
dm=
# Run last-first at exit: the mount and the dm device before their loops.
cleanup() {
    if [ -n "$mounted" ]; then
        umount "$mounted" || :
    fi
    if [ -n "$dm" ]; then
        dmsetup remove "$dm" || :
    fi
    for l in "${loops[@]}"; do
        losetup -d "$l" || :
    done
}
cleanup_fn cleanup

# attach VAR ARGS...: losetup ARGS, the device into VAR, remembered for
# cleanup (not in a $(...) subshell, which would forget it).
attach() {
    local var=$1 l
    shift
    if ! l=$(losetup -f --show "$@" 2>&1); then
        skip "losetup $* failed: $l"
    fi
    loops+=("$l")
    printf -v "$var" %s "$l"
}

# disk.img: an MBR with p1 at [1M, 5M) and p2 at [5M, 9M).
truncate -s 16M "$dir/disk.img"
/usr/bin/python3 - "$dir/disk.img" <<'EOF'
import struct, sys
mbr = bytearray(512)
for i, (start, n) in enumerate([(2048, 8192), (10240, 8192)]):
    mbr[446 + 16 * i:462 + 16 * i] = struct.pack(
        "<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start, n)
mbr[510:512] = b"\x55\xaa"
with open(sys.argv[1], "r+b") as f:
    f.write(mbr)
EOF
truncate -s 8M "$dir/a.img"
truncate -s 16M "$dir/b.img"

attach disk -P "$dir/disk.img"
# Kernels without the msdos parser: partx reads the table, adds by BLKPG.
for _ in $(seq 20); do
    [ -b "${disk}p2" ] && break
    sleep 0.1
done
if [ ! -b "${disk}p2" ]; then
    partx -a "$disk" || :
fi
for _ in $(seq 20); do
    [ -b "${disk}p2" ] && break
    sleep 0.1
done
if [ ! -b "${disk}p2" ]; then
    skip "no partitions on $disk (losetup -P, partx -a)"
fi
attach la "$dir/a.img"
attach lb1 --offset 0 --sizelimit 8M "$dir/b.img"
attach lb2 --offset 4M --sizelimit 8M "$dir/b.img"
attach lb3 --offset 8M --sizelimit 8M "$dir/b.img"

# A filesystem on a loop device, with two files in it.  Initialised in
# full (no lazy init thread writing later), so that its device's bytes
# only change when someone writes.
fs=
truncate -s 32M "$dir/fs.img"
if command -v mkfs.ext4 >/dev/null; then
    attach fs "$dir/fs.img"
    mkdir "$dir/mnt"
    if mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$fs" &&
       mount -o noatime "$fs" "$dir/mnt"; then
        mounted=$dir/mnt
        truncate -s 4M "$dir/mnt/x.img" "$dir/mnt/y.img"
        sync -f "$dir/mnt"
    else
        echo "note: no filesystem case (mkfs.ext4 or mount failed)"
        fs=
    fi
fi

# A device-mapper device over the whole of a.img's loop device.
name=nbdraid-overlap-$$
if command -v dmsetup >/dev/null && dmsetup version >/dev/null 2>&1 &&
   dmsetup create --noudevsync "$name" \
       --table "0 $(blockdev --getsz "$la") linear $la 0" 2>/dev/null; then
    dm=$name
    dmsetup mknodes "$name" || :
else
    echo "note: no device-mapper case (no dm driver or dmsetup)"
fi

echo "disk $disk (${disk}p1 ${disk}p2), a.img $la, b.img $lb1 $lb2 $lb3," \
     "fs ${fs:-none}, dm ${dm:-none}"

/usr/bin/python3 - "$here" "$dir" "$disk" "$la" "$lb1" "$lb2" "$lb3" \
    "${fs:-}" "${dm:+/dev/mapper/$dm}" <<'EOF'
import hashlib, os, random, subprocess, sys
sys.path.insert(0, sys.argv[1])
from raidtest.common import MiB, check, plugin, run_main, seed
from raidtest.model import pattern
from raidtest.server import Server, run_expect_failure

folder, disk, la, lb1, lb2, lb3, fs, dm = sys.argv[2:10]
p1, p2 = disk + "p1", disk + "p2"
img = {n: os.path.join(folder, n) for n in
       ("disk.img", "a.img", "b.img", "fs.img")}
x_img = os.path.join(folder, "mnt", "x.img")
y_img = os.path.join(folder, "mnt", "y.img")


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(MiB), b""):
            h.update(b)
    return h.hexdigest()


def refused(label, members, why, also=(), freeze=None):
    """nbdkit level=1 over members must exit non-zero with
    'member 1 (B): overlaps member 0 (A): why' (or why as a whole line
    when it starts with 'member'), and change no byte of any member or
    backing file.  freeze: a mounted filesystem among them, frozen
    meanwhile (fsfreeze), so that only nbdkit could change its device
    (the filesystem itself writes when anyone syncs it, say a test
    beside this one: a fresh clone's CI saw the device change once)."""
    files = list(members) + list(also)
    if freeze:
        subprocess.run(["fsfreeze", "-f", freeze], check=True)
    try:
        before = {p: digest(p) for p in files}
        rc, err = run_expect_failure(
            ["level=1"] + ["member=%s" % m for m in members])
        after = {p: digest(p) for p in files}
    finally:
        if freeze:
            subprocess.run(["fsfreeze", "-u", freeze], check=True)
    check(rc != 0, "%s: nbdkit exited 0" % label)
    want = why if why.startswith("member ") else (
        "member 1 (%s): overlaps member 0 (%s): %s" % (
            members[1], members[0], why))
    lines = [ln for ln in err.splitlines() if want in ln]
    check(lines and "error" in lines[0],
            "%s: stderr lacks the error %r:\n%s" % (label, want, err))
    for p in files:
        check(after[p] == before[p], "%s: %s changed" % (label, p))
    print("ok refused %-34s %s" % (label, lines[0].strip()), flush=True)


def served(label, members, places, rng):
    """nbdkit level=1 over members starts, a pattern written reads back,
    and each (file, offset) in places holds it after (RAID 1: every
    member holds the array from its start)."""
    with Server(["level=1"] + ["member=%s" % m for m in members]) as srv:
        h = srv.connect()
        size = h.get_size()
        data = pattern(rng, size)
        h.pwrite(data, 0)
        h.flush()
        check(h.pread(size, 0) == data, "%s: read back differs" % label)
        rc = srv.stop()
        check(rc == 0, "%s: nbdkit exited %d" % (label, rc))
    for path, off in places:
        with open(path, "rb") as f:
            f.seek(off)
            check(f.read(size) == data,
                    "%s: %s at %d does not hold the data" % (label, path,
                                                             off))
    print("ok served  %-34s %d bytes" % (label, size), flush=True)


def main():
    plugin()
    rng = random.Random(seed("test-blockdev-overlap"))
    d, a, b = img["disk.img"], img["a.img"], img["b.img"]

    refused("partition and its disk", [disk, p1], "a partition of it", [d])
    refused("disk after its partition", [p2, disk],
            "member 0 is a partition of it", [d])
    refused("loop device and its file", [a, la],
            "a loop device backed by it")
    refused("file after its loop device", [la, a],
            "member 0 is a loop device backed by it")
    refused("loops on overlapping ranges", [lb1, lb2],
            "both use %s: member 1 bytes [4194304, 12582912), "
            "member 0 bytes [0, 8388608)" % b, [b])
    refused("loops on overlapping ranges 2", [lb3, lb2],
            "both use %s: member 1 bytes [4194304, 12582912), "
            "member 0 bytes [8388608, 16777216)" % b, [b])
    refused("partition of a loop and its file", [d, p1],
            "a partition of a loop device backed by it")
    refused("same loop device twice", [la, la],
            "member 1 (%s): same file as member 0 (%s)" % (la, la), [a])
    if fs:
        mnt = os.path.join(folder, "mnt")
        refused("file and its filesystem's device", [fs, x_img],
                "a file in the filesystem on it", [img["fs.img"]], mnt)
        refused("file in a filesystem on a file", [img["fs.img"], x_img],
                "a file in the filesystem on a loop device backed by it",
                freeze=mnt)
    if dm:
        refused("dm device and its slave", [dm, la],
                "member 0 is a device-mapper or md device on it", [a])
        refused("dm device and its slave's file", [a, dm],
                "a device-mapper or md device on a loop device backed by "
                "it")

    served("two partitions of one disk", [p1, p2],
           [(d, 1 * MiB), (d, 5 * MiB)], rng)
    served("loops on disjoint ranges", [lb1, lb3],
           [(b, 0), (b, 8 * MiB)], rng)
    served("loops on different files", [la, lb3],
           [(a, 0), (b, 8 * MiB)], rng)
    if fs:
        served("two files of one filesystem", [x_img, y_img],
               [(x_img, 0), (y_img, 0)], rng)


run_main(main)
EOF
