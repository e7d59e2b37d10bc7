#!/bin/bash
# guest-md.sh: nbdraid's layouts are md's, proven against Linux md itself.
# Runs inside the VM (tests/vm/run.sh boots it); needs root, the md and loop
# modules, mdadm, nbdkit, nbdcopy and /usr/bin/python3 with libnbd.
#
# For every case (level, md layout, members, chunk):
#   md -> nbdraid  mdadm --create over loop devices backed by files, random
#                  data written to /dev/md0 (1 MiB direct writes, then random
#                  512 B..1 MiB writes through the page cache), array stopped.
#                  nbdraid opens the same files in raw mode at the Data
#                  Offset that `mdadm --examine` prints: its size must equal
#                  md's, `nbdraid check` must find md's parity / copies
#                  consistent under nbdraid's placement, and every byte read
#                  through nbdkit must equal what was written to /dev/md0.
#   nbdraid -> md  new random data written through nbdkit (nbdcopy, then
#                  random writes through libnbd), members reassembled by md:
#                  every byte of /dev/md0 must equal it, and md's own
#                  "check" (sync_action) must count 0 mismatches, so the
#                  parity and copies nbdraid wrote are where md wants them.
# Environment: NBDRAID_PLUGIN, NBDRAID_CLI, NBDRAID_SRC (absolute paths).
# Args: optional case names to run (default: all).
set -euo pipefail
HERE=${NBDRAID_SRC:?NBDRAID_SRC not set}/tests/vm # the guest runs a copy of this script
PLUGIN=${NBDRAID_PLUGIN:?NBDRAID_PLUGIN not set}
CLI=${NBDRAID_CLI:?NBDRAID_CLI not set}
PY=/usr/bin/python3
MEMBER_SIZE=${MD_MEMBER_SIZE:-8M}
WORK=/tmp/md-compat

fail() { echo "FAIL: $*"; exit 1; }
up() { echo "[t+$(cut -d' ' -f1 /proc/uptime)s] $*"; }

# Members are MEMBER_SIZE; "+K" cases add K KiB, so the size is not a whole
# number of chunks and md's rounding (Used Dev Size, RAID 10 far stride)
# shows.  Metadata 1.2 keeps its superblock before the data (Data Offset);
# 1.0 keeps it at the end, so nbdraid must be told md's Used Dev Size
# (member-size=) or it would take the superblock's space as data.
#      name          level layout            members chunk(K) extra(K) metadata
CASES="raid0-x4      0     -                 4       64       0        1.2
raid0-x3-512k        0     -                 3       512      0        1.2
raid1-x2             1     -                 2       -        0        1.2
raid5-ls-x4          5     left-symmetric    4       64       0        1.2
raid5-la-x4          5     left-asymmetric   4       64       0        1.2
raid5-rs-x4          5     right-symmetric   4       64       0        1.2
raid5-ra-x4          5     right-asymmetric  4       64       0        1.2
raid5-ls-x3-512k     5     left-symmetric    3       512      0        1.2
raid5-ra-x5          5     right-asymmetric  5       32       0        1.2
raid10-n2-x4         10    n2                4       64       0        1.2
raid10-f2-x4         10    f2                4       64       0        1.2
raid10-o2-x4         10    o2                4       64       0        1.2
raid10-n2-x3         10    n2                3       64       0        1.2
raid10-f2-x3         10    f2                3       64       0        1.2
raid10-o2-x3         10    o2                3       64       0        1.2
raid10-n3-x4         10    n3                4       64       0        1.2
raid1-x2-odd         1     -                 2       -        100      1.2
raid0-x4-odd         0     -                 4       64       100      1.2
raid5-ls-x4-odd      5     left-symmetric    4       64       100      1.2
raid10-n2-x3-odd     10    n2                3       64       100      1.2
raid10-f2-x4-odd     10    f2                4       64       100      1.2
raid10-o2-x3-odd     10    o2                3       64       100      1.2
raid1-x2-v1.0        1     -                 2       -        100      1.0
raid5-ls-x4-v1.0     5     left-symmetric    4       64       0        1.0
raid10-f2-x4-v1.0    10    f2                4       64       100      1.0"

# shellcheck source=md-functions.sh
source "$HERE/md-functions.sh"
mdadm --version 2>&1 | sed 's/^/  /'

# nbdraid's settings for the case, as one word per key.
raid_keys() { # level layout chunkK doff_sectors files...
    local level=$1 layout=$2 chunk=$3 doff=$4; shift 4
    echo "metadata=none" # raw mode: md's superblocks are not read
    echo "level=$level"
    [ "$layout" = - ] || echo "layout=$layout"
    [ "$chunk" = - ] || echo "chunk=${chunk}K"
    echo "data-offset=${doff}s"
    for f in "$@"; do echo "member=$f"; done
}

run_case() { # name level layout members chunk extraK metadata
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 extra=$6 meta=$7
    local dir=$WORK/$name files=() mdargs=() keys=()
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        truncate -s "+${extra}K" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    attach_loops "${files[@]}"

    # ---- md writes
    mdargs=(--create /dev/md0 --run --quiet --metadata="$meta" --level="$level"
            --raid-devices="$n")
    [ "$layout" = - ] || mdargs+=(--layout="$layout")
    [ "$chunk" = - ] || mdargs+=(--chunk="$chunk")
    # Sparse members are all zeros: parity and copies already agree.
    [ "$level" = 0 ] || mdargs+=(--assume-clean)
    mdadm "${mdargs[@]}" "${LOOPS[@]}" </dev/null || fail "$name: mdadm --create"
    local size; size=$(blockdev --getsize64 /dev/md0)
    head -c "$size" /dev/urandom > "$dir/ref.img"
    dd if="$dir/ref.img" of=/dev/md0 bs=1M oflag=direct status=none
    $PY "$HERE/randwrite.py" dev /dev/md0 "$dir/ref.img" 200 1
    cmp -s /dev/md0 "$dir/ref.img" || fail "$name: md does not read back its own data"
    local exam doff used mdlayout
    exam=$(mdadm --examine "${LOOPS[0]}")
    doff=$(awk '/Data Offset :/ {print $4}' <<<"$exam")
    used=$(awk '/Used Dev Size :/ {print $5}' <<<"$exam")
    # 1.0 prints no Used Dev Size when it equals Avail Dev Size.
    [ -n "$used" ] || used=$(awk '/Avail Dev Size :/ {print $5}' <<<"$exam")
    mdlayout=$(awk -F' : ' '/ Layout :/ {print $2}' <<<"$exam")
    # 1.0 prints no Data Offset: its data starts at sector 0.
    [ -n "$doff" ] || [ "$meta" != 1.0 ] || doff=0
    [ -n "$doff" ] || fail "$name: no Data Offset in mdadm --examine"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup

    # ---- md -> nbdraid
    mapfile -t keys < <(raid_keys "$level" "$layout" "$chunk" "$doff" "${files[@]}")
    local ours
    if [ "$meta" = 1.2 ]; then
        # From Data Offset alone nbdraid finds the size mdadm chose.
        ours=$("$CLI" info "${keys[@]}" | awk '/^size:/ {print $2}')
        [ "$ours" = "$size" ] || fail "$name: nbdraid size $ours, md size $size"
    else
        [ -n "$used" ] || fail "$name: no Used Dev Size in mdadm --examine"
    fi
    # md's Used Dev Size, given as member-size=, describes the same array.
    if [ -n "$used" ]; then
        keys+=("member-size=${used}s")
        ours=$("$CLI" info "${keys[@]}" | awk '/^size:/ {print $2}')
        [ "$ours" = "$size" ] ||
            fail "$name: nbdraid size $ours with member-size=${used}s, md size $size"
    fi
    local check=""
    if [ "$level" != 0 ]; then
        check=$("$CLI" check "${keys[@]}") ||
            fail "$name: nbdraid check of md's members: $check"
        check=${check##*: }
    fi
    rm -f "$dir/out.img"
    nbdkit -U - "$PLUGIN" "${keys[@]}" \
        --run "nbdcopy \"\$uri\" '$dir/out.img'" || fail "$name: nbdkit read"
    cmp "$dir/out.img" "$dir/ref.img" || fail "$name: nbdraid reads differ from md's data"
    rm -f "$dir/out.img"

    # ---- nbdraid -> md
    head -c "$size" /dev/urandom > "$dir/ref.img"
    nbdkit -U - "$PLUGIN" "${keys[@]}" \
        --run "nbdcopy '$dir/ref.img' \"\$uri\" &&
               $PY '$HERE/randwrite.py' nbd \"\$uri\" '$dir/ref.img' 200 2" ||
        fail "$name: nbdkit write"
    attach_loops "${files[@]}"
    mdadm --assemble /dev/md0 --run --quiet "${LOOPS[@]}" </dev/null ||
        fail "$name: mdadm --assemble after nbdraid wrote"
    cmp /dev/md0 "$dir/ref.img" || fail "$name: md reads differ from what nbdraid wrote"
    local mism=-
    if [ "$level" != 0 ]; then
        mism=$(md_check)
        [ "$mism" = 0 ] || fail "$name: md check found $mism mismatched sectors in what nbdraid wrote"
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup
    rm -rf "$dir"
    printf '  %-18s %-16s v%s data offset %6s  used %7s  size %9s  nbdraid check: %-26s md check: %s\n' \
        "$name" "${mdlayout:--}" "$meta" "${doff}s" "${used:+${used}s}" "$size" "${check:-n/a}" "$mism mismatches"
}

up "md compatibility: $(grep -c . <<<"$CASES") cases, members $MEMBER_SIZE"
ran=0
while read -r name level layout n chunk extra meta; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
        continue
    fi
    run_case "$name" "$level" "$layout" "$n" "$chunk" "$extra" "$meta"
    ran=$((ran + 1))
done <<<"$CASES"
[ "$ran" -gt 0 ] || fail "no case matched: $*"
up "md compatibility: $ran cases, both directions, byte-exact"
