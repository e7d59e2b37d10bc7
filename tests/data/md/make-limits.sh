#!/bin/bash
# make-limits.sh OUT: superblocks `mdadm --create` (4.2, Debian 12) writes
# at the size limits where its choices change: members just over 8 GiB and
# 200 GiB (the bitmap space it reserves, and the bad-block log placed
# after it), small members (the data offset's headroom held back by the
# chunk), sizes that are not whole chunks or 4 KiB (RAID 0's data size,
# 1.0's superblock place), and members of different sizes (the data
# offset chosen from the first member), for metadata 1.0, 1.1 and 1.2.
# test-create-mdadm.py compares `nbdraid create`'s superblocks with these,
# field by field.  Runs in the VM, once, as make.sh:
#
#   VM_SHARE="$PWD" bash tests/vm/run-in-vm.sh tests/data/md/make-limits.sh \
#       "$PWD/tests/data/md/limits"
#
# No data is written (--assume-clean, no resync): sparse members of any
# size fit the guest's tmpfs.  $ONLY (a regex, passed with
# VM_PASS_ENV=ONLY) makes only the cases it matches.  Files: OUT/CASE.dN.sb (the 4 KiB at the
# superblock), OUT/CASE.dN.examine, OUT/CASE.info (the command's settings
# and every member's size, which the test repeats).
set -euo pipefail
OUT=${1:?usage: make-limits.sh OUT}
WORK=/tmp/md-limits

# name level layout chunk(K) metadata bitmap member-sizes(bytes, comma)
G=$((1 << 30))
M=$((1 << 20))
CASES="r1-8g-v1.2 1 - - 1.2 none $((8 * G + M)),$((8 * G + M))
r1-8g-v1.0 1 - - 1.0 none $((8 * G + M)),$((8 * G + M))
r5-8g-v1.1 5 left-symmetric 512 1.1 none $((8 * G + M)),$((8 * G + M)),$((8 * G + M))
r10-8g4k-v1.0 10 n2 64 1.0 none $((8 * G + 4096)),$((8 * G + 4096))
r1-200g-v1.2 1 - - 1.2 none $((200 * G + 64 * M)),$((200 * G + 64 * M))
r1-200g-v1.0 1 - - 1.0 none $((200 * G + 64 * M)),$((200 * G + 64 * M))
r10-200g-v1.1 10 n2 512 1.1 none $((200 * G + 64 * M)),$((200 * G + 64 * M))
r5-200g130m-v1.2 5 left-symmetric 512 1.2 none $((200 * G + 130 * M)),$((200 * G + 130 * M)),$((200 * G + 130 * M))
r1-200g-v1.2-bitmap 1 - - 1.2 default $((200 * G + 64 * M)),$((200 * G + 64 * M))
r0-odd-v1.2 0 - 64 1.2 none $((16 * M + 100 * 1024)),$((16 * M + 100 * 1024))
r0-odd-v1.0 0 - 64 1.0 none $((16 * M + 100 * 1024 + 512)),$((16 * M + 100 * 1024 + 512))
r0-mixed-v1.1 0 - 64 1.1 none $((16 * M + 100 * 1024)),$((16 * M + 60 * 1024))
r1-mixed-v1.2 1 - - 1.2 none $((2 * G)),$((512 * M))
r5-mixed-v1.2 5 left-symmetric 64 1.2 none $((64 * M)),$((2 * G)),$((64 * M))
r5-small-v1.2 5 left-symmetric 512 1.2 none $((3 * M)),$((3 * M)),$((3 * M))
r10-small-v1.1 10 n2 64 1.1 none $((3 * M / 2)),$((3 * M / 2))
r1-small-v1.0 1 - - 1.0 none $((200 * 1024)),$((200 * 1024))
r1-tiny-v1.0 1 - - 1.0 none $((80 * 1024)),$((80 * 1024))"

# shellcheck source=../../vm/md-functions.sh
source "$OUT/../../../vm/md-functions.sh"
mkdir -p "$OUT"

# Sector of the superblock of a v1.MINOR member of `bytes` bytes.
sb_sector() { # minor bytes
    case $1 in
    0) echo $(((($2 / 512) - 16) & ~7)) ;;
    1) echo 0 ;;
    2) echo 8 ;;
    esac
}

while read -r name level layout chunk meta bitmap sizes; do
    [[ $name =~ ${ONLY:-.} ]] || continue
    dir=$WORK/$name
    rm -rf "$dir"; mkdir -p "$dir"
    IFS=, read -r -a bytes <<<"$sizes"
    n=${#bytes[@]}
    files=()
    for ((i = 0; i < n; i++)); do
        truncate -s "${bytes[$i]}" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    attach_loops "${files[@]}"
    args=(--create /dev/md0 --run --quiet --metadata="$meta" --level="$level"
          --raid-devices="$n" --name="$name" --homehost=nbdraid-test)
    [ "$layout" = - ] || args+=(--layout="$layout")
    [ "$chunk" = - ] || args+=(--chunk="$chunk")
    # mdadm refuses --bitmap with RAID 0 (it never has one).
    [ "$bitmap" = default ] || [ "$level" = 0 ] || args+=(--bitmap="$bitmap")
    [ "$level" = 0 ] || args+=(--assume-clean)
    if ! mdadm "${args[@]}" "${LOOPS[@]}" </dev/null; then
        echo "mdadm refused $name"
        cleanup
        continue
    fi
    mdadm --stop /dev/md0
    for ((i = 0; i < n; i++)); do
        mdadm --examine "${LOOPS[$i]}" >"$OUT/$name.d$i.examine" 2>&1
    done
    cleanup
    minor=${meta#1.}
    {
        echo "level $level"
        echo "layout $layout"
        echo "chunk_k $chunk"
        echo "metadata $meta"
        echo "bitmap $bitmap"
        echo "members $n"
        for ((i = 0; i < n; i++)); do
            echo "member_bytes.$i ${bytes[$i]}"
            echo "sb_sector.$i $(sb_sector "$minor" "${bytes[$i]}")"
        done
    } >"$OUT/$name.info"
    for ((i = 0; i < n; i++)); do
        dd if="${files[$i]}" of="$OUT/$name.d$i.sb" bs=512 \
            skip="$(sb_sector "$minor" "${bytes[$i]}")" count=8 status=none
    done
    rm -rf "$dir"
    echo "made $name ($meta, $n members)"
done <<<"$CASES"
mdadm --version
