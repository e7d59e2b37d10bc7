#!/bin/bash
# make.sh OUT: superblocks written by mdadm itself, as test data for the
# superblock code (tests/unit/test_superblock.c).  Runs in the VM (md and
# loop need a kernel with the md driver):
#
#   bash tests/vm/run-in-vm.sh tests/data/md/make.sh "$PWD/tests/data/md"
#   (with VM_SHARE="$PWD" so the guest can write OUT)
#
# For each case, mdadm --create over loop devices backed by sparse files,
# some writes, mdadm --stop; then for every member: the 4 KiB at the
# superblock's place (1.0: the end, 1.1: sector 0, 1.2: sector 8), with a
# bitmap the 4 KiB at bitmap_offset too, and `mdadm --examine` as text.
# Files: OUT/CASE.dN.sb, OUT/CASE.dN.bitmap, OUT/CASE.dN.examine,
# OUT/CASE.info (member bytes, metadata, superblock and bitmap offsets).
set -euo pipefail
OUT=${1:?usage: make.sh OUT}
WORK=/tmp/md-sb
SIZE=16M

#      name           level layout           members chunk(K) metadata bitmap
CASES="raid5-ls-x4     5     left-symmetric   4       64       1.2      none
raid1-x2-bitmap        1     -                2       -        1.2      internal
raid1-x2-v1.0          1     -                2       -        1.0      none
raid10-n2-x4-v1.1      10    n2               4       64       1.1      none
raid0-x3               0     -                3       128      1.2      none
raid10-f2-x3-bitmap    10    f2               3       64       1.2      internal
raid5-ra-x3-v1.0-bitmap 5    right-asymmetric 3       32       1.0      internal"

# OUT is tests/data/md of the source tree (the guest runs a copy of this
# script, so its own path says nothing).
# shellcheck source=../../vm/md-functions.sh
source "$OUT/../../vm/md-functions.sh"
mkdir -p "$OUT"

# Sector of the superblock of a v1.MINOR member of `bytes` bytes.
sb_sector() { # minor bytes
    case $1 in
    0) echo $(((($2 / 512) - 16) & ~7)) ;;
    1) echo 0 ;;
    2) echo 8 ;;
    esac
}

while read -r name level layout n chunk meta bitmap; do
    dir=$WORK/$name
    rm -rf "$dir"; mkdir -p "$dir"
    files=()
    for ((i = 0; i < n; i++)); do
        truncate -s "$SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    attach_loops "${files[@]}"
    args=(--create /dev/md0 --run --quiet --metadata="$meta" --level="$level"
          --raid-devices="$n" --name="$name" --homehost=nbdraid-test)
    [ "$layout" = - ] || args+=(--layout="$layout")
    [ "$chunk" = - ] || args+=(--chunk="$chunk")
    [ "$bitmap" = none ] || args+=(--bitmap="$bitmap" --bitmap-chunk=1M)
    [ "$level" = 0 ] || args+=(--assume-clean)
    mdadm "${args[@]}" "${LOOPS[@]}" </dev/null
    dd if=/dev/urandom of=/dev/md0 bs=64K count=16 oflag=direct status=none
    sync
    mdadm --stop /dev/md0
    # Examined through the loop devices: mdadm opens O_DIRECT, which the
    # guest's tmpfs refuses.
    for ((i = 0; i < n; i++)); do
        mdadm --examine "${LOOPS[$i]}" >"$OUT/$name.d$i.examine" 2>&1
    done
    cleanup
    minor=${meta#1.}
    bytes=$(stat -c %s "${files[0]}")
    sbs=$(sb_sector "$minor" "$bytes")
    {
        echo "metadata $meta"
        echo "member_bytes $bytes"
        echo "sb_sector $sbs"
    } >"$OUT/$name.info"
    for ((i = 0; i < n; i++)); do
        f=${files[$i]}
        dd if="$f" of="$OUT/$name.d$i.sb" bs=512 skip="$sbs" count=8 status=none
        if [ "$bitmap" != none ]; then
            boff=$(awk '/Internal Bitmap :/ {print $4}' "$OUT/$name.d$i.examine")
            [ -n "$boff" ] || { echo "no bitmap offset in $name.d$i.examine"; exit 1; }
            echo "bitmap_offset $boff" >>"$OUT/$name.info"
            dd if="$f" of="$OUT/$name.d$i.bitmap" bs=512 skip=$((sbs + boff)) \
                count=8 status=none
        fi
    done
    sort -u -o "$OUT/$name.info" "$OUT/$name.info"
    echo "made $name ($meta, $n members)"
done <<<"$CASES"
mdadm --version
