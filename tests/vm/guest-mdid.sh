#!/bin/bash
# guest-mdid.sh: arrays with md's identity, both ways, against Linux md.
# Runs inside the VM (tests/vm/run.sh boots it); needs root, the md and
# loop modules, mdadm, nbdkit, nbdcopy and /usr/bin/python3 with libnbd.
#
#   nbdraid -> md  for every level and layout (and metadata 1.0, 1.1):
#                  `nbdraid create` over member files, random data written
#                  through nbdkit serving the members alone (shuffled),
#                  nbdkit stopped; `mdadm --assemble` runs the array from
#                  the superblocks nbdraid wrote: every byte of /dev/md0
#                  equals what nbdraid wrote, and md's check counts 0
#                  mismatches.
#   md -> nbdraid  for metadata 1.2, 1.0 and 1.1, with and without an
#                  internal bitmap: `mdadm --create`, random data written
#                  to /dev/md0, stopped; nbdkit serves the member files
#                  alone (no settings, shuffled): every byte equals md's;
#                  nbdraid writes new data and stops; md assembles again:
#                  every byte equals what nbdraid wrote, md's check counts 0
#                  mismatches (with a bitmap, nbdraid has marked it stale:
#                  md must not call a written chunk clean).
# Environment: NBDRAID_PLUGIN, NBDRAID_CLI, NBDRAID_SRC (absolute paths).
# Args: optional case names to run (default: all).
set -euo pipefail
HERE=${NBDRAID_SRC:?NBDRAID_SRC not set}/tests/vm
PLUGIN=${NBDRAID_PLUGIN:?NBDRAID_PLUGIN not set}
CLI=${NBDRAID_CLI:?NBDRAID_CLI not set}
PY=/usr/bin/python3
MEMBER_SIZE=${MD_MEMBER_SIZE:-12M}
WORK=/tmp/md-identity

fail() { echo "FAIL: $*"; exit 1; }
up() { echo "[t+$(cut -d' ' -f1 /proc/uptime)s] $*"; }

#  name                 level layout            members chunk(K) metadata bitmap
CREATE="nb-raid0-x3     0     -                 3       64       1.2      -
nb-raid1-x2             1     -                 2       -        1.2      -
nb-raid5-ls-x4          5     left-symmetric    4       64       1.2      -
nb-raid5-la-x3          5     left-asymmetric   3       64       1.2      -
nb-raid5-rs-x4          5     right-symmetric   4       32       1.2      -
nb-raid5-ra-x5          5     right-asymmetric  5       64       1.2      -
nb-raid10-n2-x4         10    n2                4       64       1.2      -
nb-raid10-f2-x3         10    f2                3       64       1.2      -
nb-raid10-o2-x3         10    o2                3       64       1.2      -
nb-raid1-x3-v1.0        1     -                 3       -        1.0      -
nb-raid5-ls-x3-v1.1     5     left-symmetric    3       64       1.1      -"
MDCREATE="md-raid5-ls-x4        5     left-symmetric    4       64       1.2      -
md-raid1-x2-bitmap      1     -                 2       -        1.2      internal
md-raid10-f2-x3-bitmap  10    f2                3       64       1.2      internal
md-raid5-ra-x3-v1.0     5     right-asymmetric  3       32       1.0      -
md-raid1-x2-v1.0-bitmap 1     -                 2       -        1.0      internal
md-raid10-n2-x4-v1.1    10    n2                4       64       1.1      -
md-raid5-ls-x4-v1.1-bitmap 5  left-symmetric    4       64       1.1      internal"

# shellcheck source=md-functions.sh
source "$HERE/md-functions.sh"

members_shuffled() { # files... -> member=... in a rotated order
    local n=$# first=$1
    shift
    for f in "$@"; do echo "member=$f"; done
    echo "member=$first"
}

# md runs the array nbdraid's superblocks describe; its data is ref.img.
md_agrees() { # name ref files...
    local name=$1 ref=$2; shift 2
    attach_loops "$@"
    mdadm --assemble /dev/md0 --run --quiet "${LOOPS[@]}" </dev/null ||
        fail "$name: mdadm --assemble refused the array"
    cmp /dev/md0 "$ref" || fail "$name: md reads differ from what nbdraid wrote"
    local mism=-
    if [ "$(cat /sys/block/md0/md/level)" != raid0 ]; then
        mism=$(md_check)
        [ "$mism" = 0 ] || fail "$name: md check found $mism mismatched sectors"
    fi
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup
    echo "$mism"
}

# Random data through nbdkit over the members alone; ref.img holds it.
nbdraid_writes() { # name ref files...
    local name=$1 ref=$2 size keys; shift 2
    mapfile -t keys < <(members_shuffled "$@")
    size=$(nbdkit -U - "$PLUGIN" "${keys[@]}" --run 'nbdinfo --size "$uri"') ||
        fail "$name: nbdkit did not serve the members alone"
    head -c "$size" /dev/urandom > "$ref"
    nbdkit -U - "$PLUGIN" "${keys[@]}" \
        --run "nbdcopy '$ref' \"\$uri\" &&
               $PY '$HERE/randwrite.py' nbd \"\$uri\" '$ref' 100 3" ||
        fail "$name: nbdkit write"
    echo "$size"
}

nbdraid_to_md() { # name level layout n chunk meta bitmap
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 meta=$6
    local dir=$WORK/$name files=() args=() size mism
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    args=(--level "$level" --metadata "$meta" --name "$name")
    [ "$layout" = - ] || args+=(--layout "$layout")
    [ "$chunk" = - ] || args+=(--chunk "${chunk}K")
    "$CLI" create "${args[@]}" "${files[@]}" >/dev/null ||
        fail "$name: nbdraid create"
    size=$(nbdraid_writes "$name" "$dir/ref.img" "${files[@]}")
    mism=$(md_agrees "$name" "$dir/ref.img" "${files[@]}")
    rm -rf "$dir"
    printf '  %-26s v%s size %9s  md assembles it, same bytes, md check: %s mismatches\n' \
        "$name" "$meta" "$size" "$mism"
}

md_to_nbdraid() { # name level layout n chunk meta bitmap
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 meta=$6 bitmap=$7
    local dir=$WORK/$name files=() args=() keys=() size mism state
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    attach_loops "${files[@]}"
    args=(--create /dev/md0 --run --quiet --metadata="$meta" --level="$level"
          --raid-devices="$n" --assume-clean)
    [ "$layout" = - ] || args+=(--layout="$layout")
    [ "$chunk" = - ] || args+=(--chunk="$chunk")
    [ "$bitmap" = - ] || args+=(--bitmap="$bitmap")
    mdadm "${args[@]}" "${LOOPS[@]}" </dev/null || fail "$name: mdadm --create"
    size=$(blockdev --getsize64 /dev/md0)
    head -c "$size" /dev/urandom > "$dir/ref.img"
    dd if="$dir/ref.img" of=/dev/md0 bs=1M oflag=direct status=none
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup
    # md -> nbdraid: the members alone, shuffled.
    mapfile -t keys < <(members_shuffled "${files[@]}")
    rm -f "$dir/out.img"
    nbdkit -U - "$PLUGIN" "${keys[@]}" \
        --run "nbdcopy \"\$uri\" '$dir/out.img'" ||
        fail "$name: nbdkit did not serve md's members alone"
    cmp "$dir/out.img" "$dir/ref.img" || fail "$name: nbdraid reads differ from md's data"
    rm -f "$dir/out.img"
    # nbdraid -> md: new data, then md again.
    size=$(nbdraid_writes "$name" "$dir/ref.img" "${files[@]}")
    # Examined through a loop device: mdadm opens O_DIRECT, which the
    # guest's tmpfs refuses.
    attach_loops "${files[@]}"
    state=$(mdadm --examine "${LOOPS[0]}" | awk -F' : ' '/^ *State :/ {print $2}')
    cleanup
    [ "$state" = clean ] || fail "$name: after nbdraid stopped, mdadm says State: $state"
    mism=$(md_agrees "$name" "$dir/ref.img" "${files[@]}")
    rm -rf "$dir"
    printf '  %-26s v%s %-9s size %9s  served alone, same bytes; md again: same bytes, md check: %s mismatches\n' \
        "$name" "$meta" "bitmap=${bitmap}" "$size" "$mism"
}

up "md identity: nbdraid create -> md assemble; mdadm --create -> nbdraid, members $MEMBER_SIZE"
ran=0
while read -r name level layout n chunk meta bitmap; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    nbdraid_to_md "$name" "$level" "$layout" "$n" "$chunk" "$meta" "$bitmap"
    ran=$((ran + 1))
done <<<"$CREATE"
while read -r name level layout n chunk meta bitmap; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    md_to_nbdraid "$name" "$level" "$layout" "$n" "$chunk" "$meta" "$bitmap"
    ran=$((ran + 1))
done <<<"$MDCREATE"
[ "$ran" -gt 0 ] || fail "no case matched: $*"
up "md identity: $ran cases, both directions, byte-exact, 0 mismatches"
