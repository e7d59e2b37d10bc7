#!/bin/bash
# guest-recovery.sh: a recovery onto a spare interrupted by one and finished
# by the other, both ways, against Linux md.  Runs inside the VM
# (tests/vm/run.sh boots it); needs root, the md and loop modules, mdadm,
# nbdkit, nbdcopy and /usr/bin/python3.
#
#   nbdraid interrupts -> md finishes   `nbdraid create` over member files;
#       nbdkit serves them with control=; random data written through NBD
#       (nbdcopy); the recovery slowed (`nbdraid --control speed`); a member
#       failed (`--control fail`) and a spare rebuilt in its role, added
#       with `--control add` or given at the start with spare=; nbdkit
#       stopped while the recovery is under way: cleanly (SIGTERM: the
#       checkpoint is written at the stop) or with kill -9 (the last
#       periodic checkpoint counts).  mdadm --examine of the spare:
#       "Recovery Offset : N sectors", 0 < N < the member's (after a clean
#       stop, no less than what status said was done).  `mdadm --assemble`
#       of the array's members (the failed one left out), without --run
#       (md starts it auto-read-only: `mdadm --readwrite` starts the
#       recovery), md's speed limit near 0 at first: md's recovery starts
#       at N (sync_completed), not 0; then at full speed md finishes it
#       (mdadm --wait), the array is clean and not degraded, every byte of
#       /dev/md0 equals what nbdraid wrote, and md's check counts 0
#       mismatches.
#   md interrupts -> nbdraid finishes   `mdadm --create` (metadata 1.2),
#       random data written to /dev/md0, `mdadm --fail` and `--remove` one
#       member, md's sync_speed_max set to 2000 KiB/s, `mdadm --add` of a
#       fresh member; `mdadm --stop` while md's recovery is under way:
#       mdadm --examine of the new member says "Recovery Offset : N
#       sectors", 0 < N.  nbdkit serves the array's members (no
#       degraded=ok, no settings): its log says the recovery of that role
#       resumed at N sectors rounded down to a chunk (> 0), it finishes
#       (status optimal), every byte read through NBD equals md's, the
#       member's superblock no longer has a recovery offset, and the
#       offline `nbdraid check` counts 0 mismatches.  md assembles the
#       members again: clean, not degraded, no recovery (after
#       --readwrite too), same bytes, md's check counts 0 mismatches.
# Every step prints what md and nbdraid did; a check that does not hold
# prints "FAIL: CASE: ..." (with nbdkit's log and md's messages) and exits 1.
# Environment: NBDRAID_PLUGIN, NBDRAID_CLI, NBDRAID_SRC (absolute paths).
# Args: optional case names to run (default: all).
set -Eeuo pipefail
HERE=${NBDRAID_SRC:?NBDRAID_SRC not set}/tests/vm
PLUGIN=${NBDRAID_PLUGIN:?NBDRAID_PLUGIN not set}
CLI=${NBDRAID_CLI:?NBDRAID_CLI not set}
PY=/usr/bin/python3
# 32 MiB members rebuilt at 2000 KiB/s: ~16 s, stopped a quarter of the way
# or more (nbdraid moves in 4 MiB windows: 8 of them).
MEMBER_SIZE=${MD_MEMBER_SIZE:-32M}
SPEED_MIN=1000 SPEED_MAX=2000 # KiB/s per member, while it is to be stopped
NB_SPEED_MAX=1000 # nbdraid's: the status polls are slow under emulation
WORK=/tmp/md-recovery
# A clean stop of nbdkit, or a start, should take well under a second; a
# loaded machine runs the VM at half speed or worse.  md's recovery of a
# member at full speed, and its check, take seconds.
WAIT_S=120

up() { echo "[t+$(cut -d' ' -f1 /proc/uptime)s] $*"; }
# The steps of a case, as they start (a step that hangs shows).
step() { up "    $*"; }

# shellcheck source=md-functions.sh
source "$HERE/md-functions.sh"

# md's speed limits (KiB/s), restored at exit.
RAID_SYS=/proc/sys/dev/raid
SPEED0_MIN=$(cat $RAID_SYS/speed_limit_min)
SPEED0_MAX=$(cat $RAID_SYS/speed_limit_max)
md_speed() { # min max: md's global limits
    echo "$1" > $RAID_SYS/speed_limit_min
    echo "$2" > $RAID_SYS/speed_limit_max
}

NBDKIT_PID="" NBDKIT_LOG=""
# fail MSG: the FAIL line, then nbdkit's log and md's messages, exit 1.  In
# a command substitution, only the FAIL line (to stderr, not captured); the
# ERR trap then fails the main shell at the line that ran it.
fail() {
    trap - ERR
    if [ "$BASH_SUBSHELL" -gt 0 ]; then
        echo "FAIL: $*" >&2
        exit 1
    fi
    echo "FAIL: $*"
    if [ -n "$NBDKIT_LOG" ] && [ -s "$NBDKIT_LOG" ]; then
        echo "--- nbdkit's log ($NBDKIT_LOG), last 20 lines:"
        tail -n 20 "$NBDKIT_LOG"
    fi
    echo "--- /proc/mdstat:"
    cat /proc/mdstat
    echo "--- dmesg (md), last 15 lines:"
    dmesg | grep -E 'md[0-9]*: |md/' | tail -n 15
    exit 1
}
stop_all() {
    if [ -n "$NBDKIT_PID" ] && kill -0 "$NBDKIT_PID" 2>/dev/null; then
        kill "$NBDKIT_PID"
        wait "$NBDKIT_PID" || true
    fi
    cleanup
    md_speed "$SPEED0_MIN" "$SPEED0_MAX"
}
trap stop_all EXIT
trap 'fail "line $LINENO: \`$BASH_COMMAND\` exited $?"' ERR

# md's pr_debug lines (md_do_sync's "resuming recovery of md0 from
# checkpoint"), where the kernel has dynamic debug: best effort.
for c in /proc/dynamic_debug/control /sys/kernel/debug/dynamic_debug/control; do
    if [ -w "$c" ] && echo 'module md_mod format "resuming" +p' > "$c" 2>/dev/null; then
        break
    fi
done

# ---- nbdkit serving in the background, steered through its control socket

SOCK=$WORK/nbd.sock CTL=$WORK/ctl.sock
URI="nbd+unix:///?socket=$SOCK"

serve() { # name keys...: nbdkit on $SOCK with control=$CTL, until unserve
    local name=$1; shift
    NBDKIT_LOG=$WORK/$name.nbdkit.log
    rm -f "$SOCK" "$CTL"
    nbdkit -f -U "$SOCK" "$PLUGIN" "$@" control="$CTL" 2>"$NBDKIT_LOG" &
    NBDKIT_PID=$!
    local i
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        [ -S "$SOCK" ] && [ -S "$CTL" ] && return 0
        kill -0 "$NBDKIT_PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "$name: nbdkit did not start serving $*"
}

unserve() { # name [term|kill]: stop nbdkit; a clean stop must exit 0
    local name=$1 how=${2:-term} rc=0
    if [ "$how" = kill ]; then
        kill -9 "$NBDKIT_PID"
        { wait "$NBDKIT_PID"; } 2>/dev/null || rc=$? # no "Killed" line
        NBDKIT_PID=""
        [ "$rc" = 137 ] || fail "$name: nbdkit exited $rc at kill -9"
        return 0
    fi
    kill "$NBDKIT_PID"
    wait "$NBDKIT_PID" || rc=$?
    NBDKIT_PID=""
    [ "$rc" = 0 ] || fail "$name: nbdkit exited $rc at a clean stop"
    [ ! -e "$CTL" ] || fail "$name: the control socket is left after a clean stop"
}

# A field of `nbdraid --control status --json` (as JSON), or with none,
# "STATE MEMBER-STATE..." (role order, spares last).
status_field() { # [field [subfield]]
    "$CLI" --control "$CTL" status --json | $PY -c '
import json, sys
s = json.load(sys.stdin)
for k in sys.argv[1:]:
    s = s[int(k) if isinstance(s, list) else k] if s is not None else None
if len(sys.argv) > 1:
    print(json.dumps(s))
else:
    print(s["state"], " ".join(m["state"] for m in s["members"]))' "$@"
}

# Every byte through NBD equals ref.
nbd_reads() { # name ref
    rm -f "$WORK/out.img"
    nbdcopy "$URI" "$WORK/out.img" || fail "$1: nbdcopy from nbdkit"
    cmp "$WORK/out.img" "$2" || fail "$1: nbdraid reads differ from $2"
    rm -f "$WORK/out.img"
}

now() { cut -d' ' -f1 /proc/uptime; }

# "N" of a member's "Recovery Offset : N sectors", or "none".
recovery_offset() { # dev
    local v
    v=$(md_examine_field 'Recovery Offset' "$1")
    v=${v%% *}
    echo "${v:-none}"
}

# md's recovery on /dev/md0: "DONE TOTAL" from sync_completed (member
# sectors), or "" while there is none (none, delayed).
md_sync_completed() {
    local v
    v=$(cat /sys/block/md0/md/sync_completed 2>/dev/null || true)
    if [[ "$v" =~ ^([0-9]+)\ /\ ([0-9]+)$ ]]; then
        echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
    fi
}

# Wait until md has no pass running and no role missing; fail otherwise.
md_settled() { # name
    local i
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        if [ "$(cat /sys/block/md0/md/sync_action)" = idle ] &&
            [ "$(cat /sys/block/md0/md/degraded)" = 0 ]; then
            return 0
        fi
        sleep 0.1
    done
    fail "$1: md did not finish: sync_action $(cat /sys/block/md0/md/sync_action), degraded $(cat /sys/block/md0/md/degraded)"
}

# ---- the cases

# add: `nbdraid --control add` after the fail; spare: spare= at the start,
# which takes the failed role by itself.  stop: term (SIGTERM), kill (-9).
#  name               level layout           members chunk(K) spare stop role
NBCASES="nb-raid5-ls-x4    5  left-symmetric   4       64      add   term 1
nb-raid1-x2                1  -                2       -       spare term 0
nb-raid5-ls-x4-kill        5  left-symmetric   4       64      add   kill 2"
#  name               level layout           members chunk(K) role
MDCASES="md-raid5-ls-x4    5  left-symmetric   4       64      1
md-raid1-x2                1  -                2       -       1"

nbdraid_interrupts() { # name level layout n chunk spare stop role
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 how=$6 stop=$7 role=$8
    local dir=$WORK/$name files=() keys=() args=() arr=() size spare
    local i state done_b total_b off first out kern mism ro t0; t0=$(now)
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
        keys+=("member=$dir/d$i.img")
    done
    spare=$dir/spare.img
    truncate -s "$MEMBER_SIZE" "$spare"
    args=(--level "$level" --name "$name")
    [ "$layout" = - ] || args+=(--layout "$layout")
    [ "$chunk" = - ] || args+=(--chunk "${chunk}K")
    "$CLI" create "${args[@]}" "${files[@]}" >/dev/null || fail "$name: nbdraid create"
    [ "$how" != spare ] || keys+=("spare=$spare")

    serve "$name" "${keys[@]}"
    step "$name: nbdkit serves RAID $level x$n; writing the data"
    size=$(nbdinfo --size "$URI")
    head -c "$size" /dev/urandom > "$dir/ref.img"
    nbdcopy "$dir/ref.img" "$URI" || fail "$name: nbdcopy to nbdkit"
    "$CLI" --control "$CTL" speed "$SPEED_MIN" "$NB_SPEED_MAX" >/dev/null ||
        fail "$name: nbdraid --control speed"
    "$CLI" --control "$CTL" fail "$role" >/dev/null ||
        fail "$name: nbdraid --control fail $role"
    if [ "$how" = add ]; then
        "$CLI" --control "$CTL" add "$spare" >/dev/null ||
            fail "$name: nbdraid --control add $spare"
    fi
    step "$name: role $role failed, the spare ($how) rebuilt in it"
    # The spare rebuilt in the role; stop a quarter of the way or more.
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        read -r state done_b total_b < <("$CLI" --control "$CTL" status --json |
            $PY -c '
import json, sys
s = json.load(sys.stdin)
p = s["progress"] if s["progress"] and s["progress"]["kind"] == "recovery" else {}
print(s["state"], p.get("done_bytes", 0), p.get("total_bytes", 0))')
        [ "$state" != optimal ] || break
        [ "$total_b" = 0 ] || [ $((done_b * 4)) -lt "$total_b" ] || break
        sleep 0.1
    done
    [ "$done_b" -lt "$total_b" ] ||
        fail "$name: the recovery ended before it could be stopped ($done_b of $total_b bytes)"
    [ "$(status_field members "$role" path)" = "\"$spare\"" ] ||
        fail "$name: role $role is $(status_field members "$role"), not the spare"
    step "$name: stopping nbdkit ($stop) at $done_b of $total_b bytes"
    unserve "$name" "$stop"
    if [ "$stop" = term ]; then
        grep -q "recovery stopped at [0-9]* of $total_b bytes" "$NBDKIT_LOG" ||
            fail "$name: nbdkit's log does not say where the recovery stopped"
    fi

    # md's view of the spare: being rebuilt, from its checkpoint.
    for ((i = 0; i < n; i++)); do
        if [ "$i" = "$role" ]; then arr+=("$spare"); else arr+=("${files[$i]}"); fi
    done
    attach_loops "${arr[@]}"
    off=$(recovery_offset "${LOOPS[$role]}")
    mdadm --examine "${LOOPS[$role]}" >"$dir/examine.txt" 2>&1 || true
    [[ "$off" =~ ^[0-9]+$ ]] ||
        fail "$name: mdadm --examine of the spare has no Recovery Offset: $(cat "$dir/examine.txt")"
    ((off > 0 && off * 512 < total_b)) ||
        fail "$name: the spare's Recovery Offset is $off sectors, of a $total_b-byte member"
    # SIGTERM: the stop writes the frontier status showed (or one window on);
    # kill -9: the last periodic checkpoint, no further than that.
    if [ "$stop" = term ]; then
        [ $((off * 512)) -ge "$done_b" ] ||
            fail "$name: Recovery Offset $off sectors, behind the $done_b bytes done at the stop"
    fi

    step "$name: Recovery Offset $off sectors; mdadm --assemble"
    # md resumes from it: slowed to a crawl at first, to see where it starts.
    md_speed 1 1
    dmesg -C
    out=$(mdadm --assemble -v /dev/md0 "${LOOPS[@]}" 2>&1 </dev/null) ||
        fail "$name: mdadm --assemble (without --run) refused the array: $out"
    # md may start it auto-read-only: no recovery before the first write.
    ro=$(cat /sys/block/md0/md/array_state)
    mdadm --readwrite /dev/md0 || fail "$name: mdadm --readwrite"
    first=""
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        first=$(md_sync_completed)
        [ -z "$first" ] || break
        sleep 0.1
    done
    [ -n "$first" ] || fail "$name: md started no recovery: $(cat /proc/mdstat)"
    [ "$(cat /sys/block/md0/md/sync_action)" = recover ] ||
        fail "$name: md's sync_action is $(cat /sys/block/md0/md/sync_action), not recover"
    [ "${first% *}" = "$off" ] ||
        fail "$name: md's recovery started at ${first% *} sectors (sync_completed $first), not at the Recovery Offset $off"
    step "$name: md's recovery starts at ${first/ / \/ }; md at full speed"
    md_speed "$SPEED0_MIN" "$SPEED0_MAX"
    mdadm --wait /dev/md0 >/dev/null 2>&1 || true
    md_settled "$name"
    step "$name: md finished the recovery; md's check"
    mism=$(md_check)
    [ "$mism" = 0 ] || fail "$name: md check found $mism mismatched sectors"
    cmp /dev/md0 "$dir/ref.img" || fail "$name: md reads differ from what nbdraid wrote"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    [ "$(recovery_offset "${LOOPS[$role]}")" = none ] ||
        fail "$name: the rebuilt member still has a Recovery Offset after md's recovery"
    cleanup
    out=$({ grep -E 'has been started' <<<"$out" || true; } | sed 's/^mdadm: //')
    kern=$(dmesg | { grep -E 'recovery|resuming' || true; } | sed 's/^\[[ 0-9.]*\] //' |
        paste -sd'|' - | sed 's/|/; /g')
    rm -rf "$dir"
    printf '  %-20s nbdraid: %s, role %s rebuilt onto a spare (%s), stopped by %s at %s of %s bytes; Recovery Offset: %s sectors\n' \
        "$name" "RAID $level x$n" "$role" "$how" "$stop" "$done_b" "$total_b" "$off"
    printf '  %-20s md: %s; %s until mdadm --readwrite; the recovery starts at sync_completed %s; kernel: %s; finished: clean, same bytes, check %s mismatches [%.1f s]\n' \
        "" "$out" "$ro" "${first/ / \/ }" "$kern" "$mism" "$(echo "$(now) - $t0" | bc)"
}

md_interrupts() { # name level layout n chunk role
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 role=$6
    local dir=$WORK/$name files=() keys=() args=() arr=() size fresh
    local i c stopped off at want total_b unit mism line out t0; t0=$(now)
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
    done
    fresh=$dir/new.img
    truncate -s "$MEMBER_SIZE" "$fresh"
    attach_loops "${files[@]}" "$fresh"
    args=(--create /dev/md0 --run --quiet --metadata=1.2 --level="$level"
          --raid-devices="$n" --assume-clean)
    [ "$layout" = - ] || args+=(--layout="$layout")
    [ "$chunk" = - ] || args+=(--chunk="$chunk")
    mdadm "${args[@]}" "${LOOPS[@]:0:n}" </dev/null || fail "$name: mdadm --create"
    size=$(blockdev --getsize64 /dev/md0)
    head -c "$size" /dev/urandom > "$dir/ref.img"
    dd if="$dir/ref.img" of=/dev/md0 bs=1M oflag=direct status=none
    mdadm --quiet /dev/md0 --fail "${LOOPS[$role]}" || fail "$name: mdadm --fail"
    out=$(mdadm /dev/md0 --remove "${LOOPS[$role]}" 2>&1) ||
        fail "$name: mdadm --remove: $out"
    echo 1 > /sys/block/md0/md/sync_speed_min
    echo "$SPEED_MAX" > /sys/block/md0/md/sync_speed_max
    step "$name: md wrote the data; role $role failed and removed, a new member added"
    mdadm --quiet /dev/md0 --add "${LOOPS[$n]}" || fail "$name: mdadm --add"
    c=""
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        c=$(md_sync_completed)
        if [ -n "$c" ] && [ $((${c% *} * 4)) -ge "${c#* }" ]; then break; fi
        sleep 0.1
    done
    stopped=$c
    [ -n "$c" ] || fail "$name: md's recovery onto the new member did not get under way"
    [ "$(cat /sys/block/md0/md/sync_action)" = recover ] ||
        fail "$name: md's sync_action is $(cat /sys/block/md0/md/sync_action), not recover"
    line=$(grep -o 'recovery = [^ ]*' /proc/mdstat || true)
    step "$name: mdadm --stop at sync_completed $c"
    mdadm --stop /dev/md0 >/dev/null 2>&1 || fail "$name: mdadm --stop"
    off=$(recovery_offset "${LOOPS[$n]}")
    [[ "$off" =~ ^[0-9]+$ && "$off" != 0 ]] ||
        fail "$name: md left the new member's Recovery Offset at '$off' (sync_completed was $c)"
    cleanup

    # nbdraid resumes it: the array's members, no settings.
    for ((i = 0; i < n; i++)); do
        if [ "$i" = "$role" ]; then arr+=("$fresh"); else arr+=("${files[$i]}"); fi
        keys=("member=${arr[$i]}" "${keys[@]}") # in reverse: any order
    done
    step "$name: Recovery Offset $off sectors; nbdkit serves the members"
    serve "$name" "${keys[@]}"
    unit=$(status_field chunk)
    want=$((off * 512 / unit * unit))
    at=""
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        at=$(sed -n "s/.*recovery of member $role ([^)]*) \(resumed\|started\) at \([0-9]*\) of \([0-9]*\) bytes.*/\1 \2 \3/p" "$NBDKIT_LOG")
        [ -z "$at" ] || break
        sleep 0.1
    done
    [ -n "$at" ] || fail "$name: nbdkit's log says no recovery of member $role"
    read -r _ at total_b <<<"$at"
    step "$name: nbdraid's recovery began at $at of $total_b bytes"
    [[ "$at" != 0 && "$at" == "$want" ]] ||
        fail "$name: nbdraid's recovery began at $at bytes; md's Recovery Offset $off sectors, to the $unit-byte unit: $want"
    for ((i = SECONDS + WAIT_S; SECONDS < i; )); do
        [ "$(status_field state)" != '"optimal"' ] || break
        sleep 0.1
    done
    [ "$(status_field)" = "optimal$(printf ' in_sync%.0s' "${arr[@]}")" ] ||
        fail "$name: not optimal after the recovery: $(status_field)"
    grep -q "recovery of member $role ([^)]*) finished" "$NBDKIT_LOG" ||
        fail "$name: nbdkit's log does not say the recovery finished"
    step "$name: nbdraid resumed at $at bytes and finished; reading back, nbdraid check"
    nbd_reads "$name" "$dir/ref.img"
    unserve "$name"
    mism=$("$CLI" check --json "${arr[@]}" | $PY -c '
import json, sys
print(json.load(sys.stdin)["mismatched"])') || fail "$name: nbdraid check"
    [ "$mism" = 0 ] || fail "$name: nbdraid check counts $mism mismatched units"

    step "$name: md assembles it again"
    # md again: clean, nothing to recover, same bytes.
    attach_loops "${arr[@]}"
    [ "$(recovery_offset "${LOOPS[$role]}")" = none ] ||
        fail "$name: the rebuilt member still has a Recovery Offset after nbdraid's recovery"
    out=$(mdadm --assemble /dev/md0 "${LOOPS[@]}" 2>&1 </dev/null) ||
        fail "$name: mdadm --assemble (without --run) refused the array: $out"
    [ "$(cat /sys/block/md0/md/degraded)" = 0 ] ||
        fail "$name: md counts $(cat /sys/block/md0/md/degraded) devices missing"
    # Out of auto-read-only: a recovery md thought due would start now.
    mdadm --readwrite /dev/md0 || fail "$name: mdadm --readwrite"
    sleep 1
    [ "$(cat /sys/block/md0/md/sync_action)" = idle ] ||
        fail "$name: md runs $(cat /sys/block/md0/md/sync_action) after nbdraid's recovery: $(cat /proc/mdstat)"
    cmp /dev/md0 "$dir/ref.img" || fail "$name: md reads differ from $dir/ref.img"
    c=$(md_check)
    [ "$c" = 0 ] || fail "$name: md check found $c mismatched sectors"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup
    rm -rf "$dir"
    printf '  %-20s md: %s, role %s rebuilt onto a new member at %s KiB/s, stopped at sync_completed %s (%s); Recovery Offset: %s sectors\n' \
        "$name" "RAID $level x$n" "$role" "$SPEED_MAX" "${stopped/ / \/ }" "${line:-?}" "$off"
    printf '  %-20s nbdraid: resumed at %s of %s bytes, optimal, same bytes, nbdraid check 0; md again: clean, idle, check %s [%.1f s]\n' \
        "" "$at" "$total_b" "$c" "$(echo "$(now) - $t0" | bc)"
}

up "recovery interrupted: nbdraid stops -> md finishes; mdadm --stop -> nbdraid finishes; members $MEMBER_SIZE"
rm -rf "$WORK"; mkdir -p "$WORK"
ran=0
while read -r name level layout n chunk how stop role; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    nbdraid_interrupts "$name" "$level" "$layout" "$n" "$chunk" "$how" "$stop" "$role"
    ran=$((ran + 1))
done <<<"$NBCASES"
while read -r name level layout n chunk role; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    md_interrupts "$name" "$level" "$layout" "$n" "$chunk" "$role"
    ran=$((ran + 1))
done <<<"$MDCASES"
[ "$ran" -gt 0 ] || fail "no case matched: $*"
up "recovery interrupted: $ran cases, both directions, byte-exact"
