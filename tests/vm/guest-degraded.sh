#!/bin/bash
# guest-degraded.sh: degraded arrays with md's identity, both ways, against
# Linux md.  Runs inside the VM (tests/vm/run.sh boots it); needs root, the
# md and loop modules, mdadm, nbdkit, nbdcopy and /usr/bin/python3 with
# libnbd.
#
#   nbdraid degrades -> md assembles   `nbdraid create` over member files;
#       nbdkit serves them with control=; random data written through NBD
#       (nbdcopy); one member fails: `nbdraid --control fail` (and, for
#       one case, `remove`), or fault injection (fault=ROLE:trigger=: the
#       member's I/O fails and the array fails it); `status --json` says
#       degraded, that role faulty (missing after remove); random writes
#       while degraded, read back through NBD; nbdkit stopped cleanly; the
#       failed member's file unchanged since it failed.  mdadm --examine:
#       the failed member's Events are more than one behind the others'
#       (stale by the events alone, as md leaves a member it failed; one
#       behind is md's and mdadm's margin for a member that merely missed
#       the last update), also when it failed on a clean array stopped at
#       once (fail-idle), and the others' Array State has '.' for its
#       role.  `mdadm --assemble` of every member, the failed one included,
#       without --run: md starts the array degraded (mdadm counts one
#       device missing, the failed one not taken back) and every byte of
#       /dev/md0 equals what nbdraid wrote.
#   md degrades -> nbdraid serves   `mdadm --create` (metadata 1.2), random
#       data written to /dev/md0, `mdadm --fail` one member (and, for one
#       case, `--remove`), random writes while degraded, `mdadm --stop`;
#       the same checks of the failed member's superblock.  nbdkit serves
#       every member, the failed one included (no settings, no degraded=ok:
#       the superblocks record the failure): nbdraid leaves it out and never
#       writes it, `status --json` says degraded with that role missing,
#       and every byte read through NBD equals md's.  Then nbdkit serves
#       the members without the failed one (again without degraded=ok) and
#       writes new random data while degraded; md assembles every member
#       again, degraded, with nbdraid's bytes.
# Every step prints what md and nbdraid did; a check that does not hold
# prints "FAIL: CASE: ..." (with nbdkit's log) and exits 1.
# Environment: NBDRAID_PLUGIN, NBDRAID_CLI, NBDRAID_SRC (absolute paths).
# Args: optional case names to run (default: all).
set -Eeuo pipefail
HERE=${NBDRAID_SRC:?NBDRAID_SRC not set}/tests/vm
PLUGIN=${NBDRAID_PLUGIN:?NBDRAID_PLUGIN not set}
CLI=${NBDRAID_CLI:?NBDRAID_CLI not set}
PY=/usr/bin/python3
MEMBER_SIZE=${MD_MEMBER_SIZE:-8M}
WRITES=100 # random writes (512 B to 1 MiB) while degraded
WORK=/tmp/md-degraded
# A clean stop of nbdkit, or a start, should take well under a second; a
# loaded machine runs the VM at half speed or worse.
WAIT_S=60

up() { echo "[t+$(cut -d' ' -f1 /proc/uptime)s] $*"; }

# shellcheck source=md-functions.sh
source "$HERE/md-functions.sh"

NBDKIT_PID="" NBDKIT_LOG="" STALE="" SAID=""
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
    echo "--- dmesg (md), last 10 lines:"
    dmesg | grep -E 'md[0-9]*: |md/' | tail -n 10
    exit 1
}
stop_all() {
    if [ -n "$NBDKIT_PID" ] && kill -0 "$NBDKIT_PID" 2>/dev/null; then
        kill "$NBDKIT_PID"
        wait "$NBDKIT_PID" || true
    fi
    cleanup
}
trap stop_all EXIT
trap 'fail "line $LINENO: \`$BASH_COMMAND\` exited $?"' ERR

# ---- nbdkit serving in the background, steered through its control socket

SOCK=$WORK/nbd.sock CTL=$WORK/ctl.sock
URI="nbd+unix:///?socket=$SOCK"

serve() { # name keys...: nbdkit on $SOCK with control=$CTL, until unserve
    local name=$1; shift
    NBDKIT_LOG=$WORK/$name.nbdkit.log
    rm -f "$SOCK"
    nbdkit -f -U "$SOCK" "$PLUGIN" "$@" control="$CTL" 2>"$NBDKIT_LOG" &
    NBDKIT_PID=$!
    local i
    for ((i = 0; i < WAIT_S * 10; i++)); do
        [ -S "$SOCK" ] && [ -S "$CTL" ] && return 0
        kill -0 "$NBDKIT_PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "$name: nbdkit did not start serving $*"
}

unserve() { # name: stop nbdkit cleanly (SIGTERM), which must exit 0
    local name=$1 rc=0
    kill "$NBDKIT_PID"
    wait "$NBDKIT_PID" || rc=$?
    NBDKIT_PID=""
    [ "$rc" = 0 ] || fail "$name: nbdkit exited $rc at a clean stop"
    [ ! -e "$CTL" ] || fail "$name: the control socket is left after a clean stop"
}

# "STATE MEMBER-STATE..." (role order) from `nbdraid --control status --json`,
# or with an argument, that field of it.
status_summary() { # [field]
    "$CLI" --control "$CTL" status --json | $PY -c '
import json, sys
s = json.load(sys.stdin)
if len(sys.argv) > 1:
    print(json.dumps(s[sys.argv[1]]))
else:
    print(s["state"], " ".join(m["state"] for m in s["members"]))' "$@"
}

# Wait until the superblocks say clean (200 ms after the last write).
wait_clean() { # name
    local i
    for ((i = 0; i < WAIT_S * 10; i++)); do
        [ "$(status_summary clean)" = true ] && return 0
        sleep 0.1
    done
    fail "$1: the array was not marked clean ${WAIT_S} s after the last write"
}

# What status must say: degraded, every role in_sync but ROLE (STATE).
expect_status() { # name n role state
    local name=$1 n=$2 role=$3 state=$4 want=degraded have i
    for ((i = 0; i < n; i++)); do
        if [ "$i" = "$role" ]; then want+=" $state"; else want+=" in_sync"; fi
    done
    have=$(status_summary) || fail "$name: nbdraid --control status --json"
    [ "$have" = "$want" ] || fail "$name: status says '$have', want '$want'"
}

# Every byte through NBD equals ref.
nbd_reads() { # name ref
    rm -f "$WORK/out.img"
    nbdcopy "$URI" "$WORK/out.img" || fail "$1: nbdcopy from nbdkit"
    cmp "$WORK/out.img" "$2" || fail "$1: nbdraid reads differ from $2"
    rm -f "$WORK/out.img"
}

# The sha256 of a file; seconds since boot.
sha() { sha256sum "$1" | cut -d' ' -f1; }
now() { cut -d' ' -f1 /proc/uptime; }

# ---- md's side

# md assembles every member, the failed one included, without --run; the
# array must start degraded without ROLE's member and read back as ref.
# SAID: what mdadm -v and the kernel said about that member, and the start.
md_assembles_degraded() { # name ref role files...
    local name=$1 ref=$2 role=$3 out dev state kern mdstate; shift 3
    attach_loops "$@"
    dev=${LOOPS[$role]#/dev/}
    dmesg -C
    out=$(mdadm --assemble -v /dev/md0 "${LOOPS[@]}" 2>&1 </dev/null) ||
        fail "$name: mdadm --assemble (without --run) refused the array: $out"
    [ -e /sys/block/md0/md/array_state ] ||
        fail "$name: mdadm --assemble did not make /dev/md0: $out"
    state=$(cat /sys/block/md0/md/array_state)
    case "$state" in clean | active | active-idle | readonly | read-auto) ;;
    *) fail "$name: md0 is $state after mdadm --assemble: $out" ;;
    esac
    # mdadm counts it missing too, as for an array md degraded itself.
    grep -q "started with $(($# - 1)) drives\? (out of $#)" <<<"$out" ||
        fail "$name: mdadm does not count the array degraded: $out"
    [ "$(cat /sys/block/md0/md/degraded)" = 1 ] ||
        fail "$name: md counts $(cat /sys/block/md0/md/degraded) devices missing, want 1"
    state=$(md_detail_field State)
    [[ "$state" == *degraded* ]] || fail "$name: mdadm --detail says State: $state"
    # Not taken back: md has no device for it, or only a spare/faulty one.
    mdstate=none
    if [ -e "/sys/block/md0/md/dev-$dev" ]; then
        mdstate=$(cat "/sys/block/md0/md/dev-$dev/state")
        [[ "$mdstate" != *in_sync* ]] ||
            fail "$name: md took the failed member $dev back: $mdstate"
    fi
    cmp /dev/md0 "$ref" || fail "$name: md reads differ from $ref"
    mdadm --stop /dev/md0 >/dev/null 2>&1
    cleanup
    out=$(grep -E "${dev}([^0-9]|$)|has been started" <<<"$out" |
        grep -v 'is identified as' | sed 's/^mdadm: //' | paste -sd'|' - |
        sed 's/|/; /g')
    kern=$(dmesg | { grep -E "${dev}([^0-9]|$)" || true; } |
        sed 's/^\[[ 0-9.]*\] //' | paste -sd'|' - | sed 's/|/; /g')
    SAID="mdadm: $out; kernel: ${kern:-nothing about $dev}; md's dev-$dev: $mdstate; State: ${state% }"
}

# The failed member's superblock is stale: Events more than one behind a
# working member's, and a working member's Array State has '.' at its role.
# STALE: "events F < W, array state S".
md_sees_stale() { # name role other files...
    local name=$1 role=$2 other=$3 fev wev astate; shift 3
    attach_loops "$@"
    fev=$(md_examine_field Events "${LOOPS[$role]}")
    wev=$(md_examine_field Events "${LOOPS[$other]}")
    astate=$(md_examine_field 'Array State' "${LOOPS[$other]}")
    cleanup
    [[ "$fev" =~ ^[0-9]+$ && "$wev" =~ ^[0-9]+$ ]] ||
        fail "$name: mdadm --examine: Events '$fev' and '$wev'"
    [ $((fev + 1)) -lt "$wev" ] ||
        fail "$name: the failed member's events $fev, the others' $wev: not stale by the events alone"
    astate=${astate%% *}
    [ "${astate:$role:1}" = . ] ||
        fail "$name: a working member's Array State is $astate: role $role is not '.'"
    STALE="events $fev < $wev, array state $astate"
}

# ---- the cases

# how: fail (nbdraid --control fail), remove (fail, then remove), fault
# (fault=ROLE:trigger=: its I/O fails and the array fails it), fail-idle
# (fail a member of a clean array and stop, no writes: the fewest
# superblock updates after the failure).
#  name            level layout           members chunk(K) how     role
NBCASES="nb-raid5-ls-x4  5  left-symmetric    4      64      fail      1
nb-raid1-x2              1  -                 2      -       fault     0
nb-raid10-n2-x4          10 n2                4      64      remove    2
nb-raid5-la-x3           5  left-asymmetric   3      64      fail-idle 2"
#  name            level layout           members chunk(K) how     role
# how: fail (mdadm --fail), remove (--fail, then --remove), fail-idle
# (--fail a clean array and stop it, no writes).
MDCASES="md-raid5-ls-x4  5  left-symmetric    4      64      remove    1
md-raid1-x2              1  -                 2      -       fail      0
md-raid5-la-x3           5  left-asymmetric   3      64      fail-idle 2"

nbdraid_degrades() { # name level layout n chunk how role
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 how=$6 role=$7
    local dir=$WORK/$name files=() args=() keys=() size trigger fstate sum0
    local writes="no writes"
    local t0; t0=$(now)
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
        keys=("member=$dir/d$i.img" "${keys[@]}") # in reverse: any order
    done
    args=(--level "$level" --name "$name")
    [ "$layout" = - ] || args+=(--layout "$layout")
    [ "$chunk" = - ] || args+=(--chunk "${chunk}K")
    "$CLI" create "${args[@]}" "${files[@]}" >/dev/null || fail "$name: nbdraid create"
    trigger=$dir/fail-$role
    [ "$how" != fault ] || keys+=("fault=$role:trigger=$trigger")

    serve "$name" "${keys[@]}"
    [ "$(status_summary)" = "optimal$(printf ' in_sync%.0s' "${files[@]}")" ] ||
        fail "$name: not optimal at start: $(status_summary)"
    size=$(nbdinfo --size "$URI")
    head -c "$size" /dev/urandom > "$dir/ref.img"
    nbdcopy "$dir/ref.img" "$URI" || fail "$name: nbdcopy to nbdkit"
    fstate=faulty
    [ "$how" != fail-idle ] || wait_clean "$name"
    case "$how" in
    fail | remove | fail-idle)
        "$CLI" --control "$CTL" fail "$role" >/dev/null ||
            fail "$name: nbdraid --control fail $role"
        if [ "$how" = remove ]; then
            "$CLI" --control "$CTL" remove "$role" >/dev/null ||
                fail "$name: nbdraid --control remove $role"
            fstate=missing
        fi
        ;;
    fault) touch "$trigger" ;; # the member's I/O fails from now on
    esac
    sum0=$(sha "${files[$role]}")
    # Written while degraded (with fault=, the first write fails the member).
    if [ "$how" != fail-idle ]; then
        $PY "$HERE/randwrite.py" nbd "$URI" "$dir/ref.img" "$WRITES" 1 ||
            fail "$name: random writes while degraded"
        writes="$WRITES writes"
    fi
    expect_status "$name" "$n" "$role" "$fstate"
    nbd_reads "$name" "$dir/ref.img"
    unserve "$name"
    rm -f "$trigger"
    [ "$(sha "${files[$role]}")" = "$sum0" ] ||
        fail "$name: the failed member's file changed after it failed"

    md_sees_stale "$name" "$role" "$(((role + 1) % n))" "${files[@]}"
    md_assembles_degraded "$name" "$dir/ref.img" "$role" "${files[@]}"
    rm -rf "$dir"
    printf '  %-16s nbdraid %s role %s: %s, untouched since; %s; %s\n' \
        "$name" "$how" "$role" "$fstate" "$writes" "$STALE"
    printf '  %-16s md assembles it (no --run): %s; same bytes [%.1f s]\n' \
        "" "$SAID" "$(echo "$(now) - $t0" | bc)"
}

md_degrades() { # name level layout n chunk how role
    local name=$1 level=$2 layout=$3 n=$4 chunk=$5 how=$6 role=$7
    local dir=$WORK/$name files=() args=() keys=() rest=() size
    local left sum0 out writes="no writes" t0; t0=$(now)
    rm -rf "$dir"; mkdir -p "$dir"
    for ((i = 0; i < n; i++)); do
        truncate -s "$MEMBER_SIZE" "$dir/d$i.img"
        files+=("$dir/d$i.img")
        keys=("member=$dir/d$i.img" "${keys[@]}")
        [ "$i" = "$role" ] || rest=("member=$dir/d$i.img" "${rest[@]}")
    done
    attach_loops "${files[@]}"
    args=(--create /dev/md0 --run --quiet --metadata=1.2 --level="$level"
          --raid-devices="$n" --assume-clean)
    [ "$layout" = - ] || args+=(--layout="$layout")
    [ "$chunk" = - ] || args+=(--chunk="$chunk")
    mdadm "${args[@]}" "${LOOPS[@]}" </dev/null || fail "$name: mdadm --create"
    size=$(blockdev --getsize64 /dev/md0)
    head -c "$size" /dev/urandom > "$dir/ref.img"
    dd if="$dir/ref.img" of=/dev/md0 bs=1M oflag=direct status=none
    if [ "$how" = fail-idle ]; then # md marks it clean 200 ms after a write
        for ((i = 0; i < WAIT_S * 10; i++)); do
            [ "$(cat /sys/block/md0/md/array_state)" != clean ] || break
            sleep 0.1
        done
    fi
    mdadm --quiet /dev/md0 --fail "${LOOPS[$role]}" || fail "$name: mdadm --fail"
    if [ "$how" = remove ]; then
        out=$(mdadm /dev/md0 --remove "${LOOPS[$role]}" 2>&1) ||
            fail "$name: mdadm --remove: $out"
    fi
    if [ "$how" != fail-idle ]; then
        $PY "$HERE/randwrite.py" dev /dev/md0 "$dir/ref.img" "$WRITES" 2 ||
            fail "$name: random writes to md while degraded"
        writes="$WRITES writes"
    fi
    cmp /dev/md0 "$dir/ref.img" || fail "$name: md does not read back its own data"
    mdadm --stop /dev/md0 >/dev/null 2>&1 || fail "$name: mdadm --stop"
    cleanup
    md_sees_stale "$name" "$role" "$(((role + 1) % n))" "${files[@]}"
    sum0=$(sha "${files[$role]}")

    # Every member, the failed one included: nbdraid leaves it out.
    serve "$name" "${keys[@]}"
    expect_status "$name" "$n" "$role" missing
    nbd_reads "$name" "$dir/ref.img"
    unserve "$name"
    left=$(grep -Eo 'recorded as [a-z]+( [a-z]+)*' "$NBDKIT_LOG" | head -n 1) ||
        fail "$name: nbdkit did not say why it left the failed member out"

    # Without the failed member: nbdraid's bytes, degraded.
    serve "$name" "${rest[@]}"
    expect_status "$name" "$n" "$role" missing
    $PY "$HERE/randwrite.py" nbd "$URI" "$dir/ref.img" "$WRITES" 3 ||
        fail "$name: random writes through nbdraid while degraded"
    nbd_reads "$name" "$dir/ref.img"
    unserve "$name"

    [ "$(sha "${files[$role]}")" = "$sum0" ] ||
        fail "$name: nbdraid changed the failed member's file"

    md_assembles_degraded "$name" "$dir/ref.img" "$role" "${files[@]}"
    rm -rf "$dir"
    printf '  %-16s mdadm %s role %s: %s; %s\n' "$name" "$how" "$role" "$writes" "$STALE"
    printf '  %-16s nbdraid, given every member: "%s", left out, untouched; degraded, same bytes; without it: degraded, %s writes\n' \
        "" "$left" "$WRITES"
    printf '  %-16s md assembles it again (no --run): %s; same bytes [%.1f s]\n' \
        "" "$SAID" "$(echo "$(now) - $t0" | bc)"
}

up "degraded arrays: nbdraid fails a member -> md assembles; mdadm --fail -> nbdraid serves; members $MEMBER_SIZE"
rm -rf "$WORK"; mkdir -p "$WORK"
ran=0
while read -r name level layout n chunk how role; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    nbdraid_degrades "$name" "$level" "$layout" "$n" "$chunk" "$how" "$role"
    ran=$((ran + 1))
done <<<"$NBCASES"
while read -r name level layout n chunk how role; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    md_degrades "$name" "$level" "$layout" "$n" "$chunk" "$how" "$role"
    ran=$((ran + 1))
done <<<"$MDCASES"
[ "$ran" -gt 0 ] || fail "no case matched: $*"
up "degraded arrays: $ran cases, both directions, byte-exact"
