#!/bin/bash
# guest-fs.sh: guest script (runs inside the VM of tests/vm/run-in-vm.sh, as
# root) proving that the Linux kernel NBD client works with nbdraid under a
# real filesystem.  Exit 0 only if every check passed; otherwise a
# "FAIL: ..." line says what failed, with diagnostics after it.
#
#   host$ VM_PASS_ENV=NBDRAID_PLUGIN \
#         NBDRAID_PLUGIN=$PWD/build/plugin/nbdkit-raid-plugin.so VM_MEM=3G \
#         tests/vm/run-in-vm.sh tests/vm/guest-fs.sh
#   guest# NBDRAID_PLUGIN=/path/nbdkit-raid-plugin.so bash tests/vm/guest-fs.sh
#
# Environment: NBDRAID_PLUGIN (required), NBDRAID_CLI (optional, the
# nbdraid CLI for the offline parity/mirror check; default: found next to
# the plugin's build tree), GFS_WORK (work dir, default /tmp/gfs).
#
# For each array (chunk=64K, 128M sparse member files; RAID 0 x4, RAID 1 x2,
# RAID 5 x4 left-symmetric, RAID 10 n2 x4 on tmpfs, and RAID 10 n2 x4 whose
# members live on ext4 on a loop device, served with direct=true io=uring):
#   1. nbdkit serves it on a unix socket with the log filter recording
#      every request the kernel sends;
#   2. netlink-mode nbd-client (2 connections); raw block device checks
#      (O_DIRECT pattern, sub-4K writes, one maximum-size request, BLKZEROOUT),
#      compared byte for byte with a model file; offline parity/mirror check;
#   3. mkfs.ext4 (with discard), a tree of files with known sha256, umount,
#      fsck -fn clean, remount, verify every file;
#   4. delete the big files, fstrim: the members' allocated bytes must drop;
#      the remaining files still verify;
#   5. umount, detach, stop nbdkit, offline check, new nbdkit on the same
#      members, ioctl-mode nbd-client, fsck -fn, mount, verify again;
# and finally 6. a per-array summary of the kernel's requests from the log
# filter files, with assertions on what must have been sent.
set -Eeuo pipefail

PLUGIN=${NBDRAID_PLUGIN:-}
W=${GFS_WORK:-/tmp/gfs}
PY=/usr/bin/python3               # Debian's python (the guest may have another)
CHUNK=64K
MEMBER_SIZE=$((128 << 20))
MiB=$((1 << 20))
T0=$(date +%s%N)

# ------------------------------------------------------------------ helpers
log() {
    local ms=$((($(date +%s%N) - T0) / 1000000))
    printf '[t+%d.%ds] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}
CUR=""                            # the array under test, for messages
NBDKIT_PID="" NBDKIT_ERR="" SOCK="" DEV="" MNT="" LOOP="" LOWER_MNT=""

# fail MSG: print the FAIL line, then what helps to diagnose it, and exit 1.
# Called in a subshell (a command substitution), it also makes the main
# shell exit (SIGUSR1) once the current command returns.
fail() {
    trap - ERR
    set +e
    if [ "$BASH_SUBSHELL" -gt 0 ]; then
        echo "FAIL: ${CUR:+[$CUR] }$*" >&2; kill -USR1 $$; exit 1
    fi
    echo "FAIL: ${CUR:+[$CUR] }$*"
    if [ -n "$NBDKIT_ERR" ] && [ -s "$NBDKIT_ERR" ]; then
        echo "--- nbdkit stderr ($NBDKIT_ERR), last 20 lines:"
        tail -n 20 "$NBDKIT_ERR"
    fi
    echo "--- dmesg (nbd, block, fs messages), last 15 lines:"
    dmesg | grep -iE 'nbd|ext4|loop|block|error|fail|i/o' | tail -n 15
    exit 1
}
trap 'fail "line $LINENO: \`$BASH_COMMAND\` exited $?"' ERR
trap 'trap - ERR; exit 1' USR1

# Leave the guest as we found it (another guest script may run after us).
cleanup() {
    trap - ERR
    set +e
    [ -n "$MNT" ] && mountpoint -q "$MNT" && umount "$MNT"
    [ -n "$DEV" ] && [ -e "/sys/block/$DEV/pid" ] && nbd-client -d "/dev/$DEV" >/dev/null 2>&1
    if [ -n "$NBDKIT_PID" ] && kill -0 "$NBDKIT_PID" 2>/dev/null; then
        kill "$NBDKIT_PID"; wait "$NBDKIT_PID"
    fi
    [ -n "$LOWER_MNT" ] && mountpoint -q "$LOWER_MNT" && umount "$LOWER_MNT"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    rm -rf "$W/members" "$W/lower.img" "$W/model" "$W"/*.bin
}
trap cleanup EXIT

# Total allocated bytes (st_blocks * 512) of the given files.
allocated() { stat -c '%b %B' "$@" | awk '{s += $1 * $2} END {printf "%d\n", s}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

# A free nbd device: exists, not connected, size 0.
pick_nbd() {
    local d
    for d in /sys/block/nbd*; do
        [ -e "$d/size" ] || continue
        [ -e "$d/pid" ] && continue
        [ "$(cat "$d/size")" = 0 ] || continue
        echo "${d##*/}"; return 0
    done
    return 1
}

# start_nbdkit TAG PLUGIN-ARGS...: serve the array with the log filter;
# returns once nbdkit has written its pidfile (socket ready).
start_nbdkit() {
    local tag=$1; shift
    SOCK=$W/$CUR.sock
    local pidf=$W/$CUR.pid
    NBDKIT_ERR=$W/logs/$CUR-$tag.stderr
    # nbdkit 1.32 leaves its socket behind when killed.
    rm -f "$SOCK" "$pidf"
    nbdkit -f -U "$SOCK" -P "$pidf" --filter=log "$PLUGIN" "$@" \
        logfile="$W/logs/$CUR-$tag.log" >"$NBDKIT_ERR" 2>&1 &
    NBDKIT_PID=$!
    local i
    for i in $(seq 300); do
        [ -s "$pidf" ] && [ -S "$SOCK" ] && break
        if ! kill -0 "$NBDKIT_PID" 2>/dev/null; then
            local rc=0; wait "$NBDKIT_PID" || rc=$?
            NBDKIT_PID=""
            fail "nbdkit refused to start (exit $rc): $(tr '\n' ' ' <"$NBDKIT_ERR")"
        fi
        sleep 0.1
    done
    [ -S "$SOCK" ] || fail "nbdkit did not create $SOCK within 30 s"
    [ "$(cat "$pidf")" = "$NBDKIT_PID" ] || fail "pidfile says $(cat "$pidf"), expected $NBDKIT_PID"
}

# stop_nbdkit: SIGTERM, nbdkit must exit 0 and have logged no error.
stop_nbdkit() {
    kill "$NBDKIT_PID"
    local rc=0; wait "$NBDKIT_PID" || rc=$?
    NBDKIT_PID=""
    [ $rc = 0 ] || fail "nbdkit exited $rc on SIGTERM"
    rm -f "$SOCK"
    if grep -qi error "$NBDKIT_ERR"; then fail "nbdkit logged errors"; fi
}

# attach netlink|ioctl: connect a free /dev/nbdX to $SOCK; sets DEV.
attach() {
    local mode=$1 out=$W/nbd-client.out
    DEV=$(pick_nbd) || fail "no free /dev/nbdX"
    local args=(-u "$SOCK" "/dev/$DEV" -N x)
    # Netlink: 2 connections (nbdraid advertises multi-conn).
    if [ "$mode" = netlink ]; then args+=(-C 2); else args+=(-nonetlink); fi
    nbd-client "${args[@]}" >"$out" 2>&1 || fail "nbd-client ${args[*]}: $(tr '\n' ' ' <"$out")"
    local i
    for i in $(seq 100); do
        [ "$(cat "/sys/block/$DEV/size")" != 0 ] && break
        sleep 0.1
    done
    nbd-client -c "/dev/$DEV" >/dev/null || fail "nbd-client -c /dev/$DEV: not connected"
    [ "$(cat "/sys/block/$DEV/size")" != 0 ] || fail "/dev/$DEV has size 0 after attach"
}

# detach: disconnect and wait until the kernel has let the device go.
detach() {
    nbd-client -d "/dev/$DEV" >/dev/null 2>&1 || fail "nbd-client -d /dev/$DEV"
    local i
    for i in $(seq 200); do
        [ ! -e "/sys/block/$DEV/pid" ] && [ "$(cat "/sys/block/$DEV/size")" = 0 ] && break
        sleep 0.1
    done
    [ ! -e "/sys/block/$DEV/pid" ] || fail "/dev/$DEV still connected 20 s after nbd-client -d"
    DEV=""
}

# offline_check: nbdraid's own parity / mirror consistency check over the
# member files (nbdkit idle or stopped).  RAID 0 has nothing to check.
offline_check() {
    [ -n "$CLI" ] && [ "$LEVEL" != 0 ] || return 0
    local out rc=0
    out=$("$CLI" check --json "${RAID_ARGS[@]}" 2>&1) || rc=$?
    case "$out" in
        *'"mismatched": 0'*) [ $rc = 0 ] || fail "nbdraid check exited $rc: $out"
                             log "  offline check (nbdraid check): $(sed -n 's/.*"unit": "\([a-z]*\)".*"checked": \([0-9]*\).*"mismatched": \([0-9]*\).*/\2 \1s checked, \3 mismatched/p' <<<"$out")";;
        *) fail "nbdraid check: $out";;
    esac
}

# dev_write SRC OFFSET BS: write file SRC to the device at byte OFFSET with
# O_DIRECT in blocks of BS, and the same bytes into the model file.
dev_write() {
    local src=$1 off=$2 bs=$3
    dd if="$src" of="/dev/$DEV" bs="$bs" seek="$off" oflag=direct,seek_bytes conv=notrunc status=none
    dd if="$src" of="$W/model" bs=1M seek="$off" oflag=seek_bytes conv=notrunc status=none
}

# compare_range WHAT OFFSET LENGTH: the device's bytes there (read with
# O_DIRECT, so from the server, not the page cache) == the model's.
compare_range() {
    local what=$1 off=$2 len=$3 out rc=0
    out=$(cmp <(dd if="/dev/$DEV" bs=4M skip="$off" count="$len" iflag=direct,skip_bytes,count_bytes status=none) \
              <(dd if="$W/model" bs=4M skip="$off" count="$len" iflag=skip_bytes,count_bytes status=none) 2>&1) || rc=$?
    if [ $rc != 0 ]; then
        local byte at; byte=$(sed -n 's/.*differ: byte \([0-9]*\).*/\1/p' <<<"$out")
        if [ -n "$byte" ]; then
            at=$((off + byte - 1))
            out="first difference at device offset $at"
            [ -n "$CLI" ] && out+=" (nbdraid map $at: $("$CLI" map $at "${RAID_ARGS[@]}" 2>&1 | tr '\n' ' '))"
        fi
        fail "$what: device differs from the model in $len@$off: $out"
    fi
}

# ----------------------------------------------------- step 2: raw device
# Proves: O_DIRECT writes of whole MiBs, sub-4K writes at odd sector offsets
# (one across a chunk boundary, one inside a never-written area), one write
# as large as the queue allows (at an offset that is not stripe aligned), a
# write ending exactly at the end of the device, and BLKZEROOUT all land
# exactly where they should and nowhere near: the first 48 MiB (every write
# but the last, with never-written gaps between them) and the last 4 MiB
# are read back with O_DIRECT and compared byte for byte with a model file.
# (Not the whole device: reading 0.5 GiB through the VM's nbd costs too much
# under TCG; fsck and nbdraid's offline check cover the rest.)
raw_checks() {
    local size; size=$(blockdev --getsize64 "/dev/$DEV")
    [ "$size" = "$EXPECT_SIZE" ] || fail "device size $size, expected $EXPECT_SIZE"
    rm -f "$W/model"; truncate -s "$size" "$W/model"    # fresh members read as zeros

    head -c $((8 * MiB)) /dev/urandom >"$W/pat.bin"
    dev_write "$W/pat.bin" 0 1M

    # 7 sectors at sector 125: bytes 64000..67583, across the first 64K chunk end.
    head -c 3584 /dev/urandom >"$W/sub1.bin"
    dev_write "$W/sub1.bin" $((125 * 512)) 512
    # 5 sectors at an odd sector in an area never written (neighbours stay 0).
    head -c 2560 /dev/urandom >"$W/sub2.bin"
    dev_write "$W/sub2.bin" $((9 * MiB + 3 * 512)) 512

    # Largest request: max_sectors_kb up to max_hw_sectors_kb, then one
    # 32 MiB O_DIRECT write at 12M+68K (not chunk or stripe aligned).
    local q=/sys/block/$DEV/queue hw
    hw=$(cat "$q/max_hw_sectors_kb")
    echo "$hw" >"$q/max_sectors_kb"
    [ "$(cat "$q/max_sectors_kb")" = "$hw" ] || fail "cannot raise max_sectors_kb to $hw"
    local big=$((32 * MiB)); [ $((hw * 1024)) -lt $big ] && big=$((hw * 1024))
    head -c $big /dev/urandom >"$W/big.bin"
    dev_write "$W/big.bin" $((12 * MiB + 69632)) $big

    # 1 MiB + 7 sectors ending exactly at the end of the device.
    head -c $((MiB + 3584)) /dev/urandom >"$W/end.bin"
    dev_write "$W/end.bin" $((size - MiB - 3584)) 1M

    # BLKZEROOUT over an unaligned range inside the random pattern.
    local zoff=$((3 * MiB + 3584)) zlen=$((4 * MiB + 4608))
    blkdiscard -z -o $zoff -l $zlen "/dev/$DEV"
    head -c $zlen /dev/zero | dd of="$W/model" bs=1M seek=$zoff oflag=seek_bytes conv=notrunc status=none

    blockdev --flushbufs "/dev/$DEV"
    compare_range "raw phase" 0 $((48 * MiB))
    compare_range "raw phase" $((size - 4 * MiB)) $((4 * MiB))
    check_no_stray_data "$size"
    WZ_MAX=$(cat "$q/write_zeroes_max_bytes")
    log "  raw: first 48M + last 4M of $(mib "$size") MiB == model (8M pattern, 2 sub-4K writes, one $((big / MiB))M write with max_sectors_kb=$hw, a write at the very end, BLKZEROOUT $zlen@$zoff)"
    rm -f "$W"/*.bin "$W/model"
}

# check_no_stray_data SIZE: between the two compared windows nothing may
# have been written.  Reading it all would be slow, so ask the server which
# ranges hold data (NBD block status over a second connection: SEEK_DATA on
# the members): every allocated extent must lie in [0, 48M) or in the last
# 4 MiB, and some must lie in [0, 8M) (the check is not vacuous).
check_no_stray_data() {
    local size=$1 map out
    map=$(nbdinfo --map "nbd+unix:///?socket=$SOCK") || fail "nbdinfo --map: $map"
    out=$(awk -v lo=$((48 * MiB)) -v hi=$((size - 4 * MiB)) -v p=$((8 * MiB)) '
        $3 % 2 == 0 { if ($1 < hi && $1 + $2 > lo) stray = stray " " $2 "@" $1
                      if ($1 < p) early = 1 }
        END { if (stray != "") print "data outside the written windows:" stray
              else if (!early) print "no data reported in [0, 8M) where the pattern is" }' <<<"$map")
    [ -z "$out" ] || fail "block status: $out"
}

# -------------------------------------------- step 3: ext4 + file tree
# Proves: mkfs (discard + inode tables + journal), a tree of files with
# fsyncs (journal commits: flush + FUA), unmount, a clean full fsck and a
# remount that reads back every file with the right sha256.
fs_checks() {
    local out
    out=$(mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "/dev/$DEV" 2>&1) ||
        fail "mkfs.ext4: $out"
    log "  mkfs.ext4 done ($(dumpe2fs -h "/dev/$DEV" 2>/dev/null | awk '/^Block size:/ {print $3}')-byte blocks); members hold $(mib "$(allocated "${MEMBERS[@]}")") MiB"
    MNT=$W/mnt; mkdir -p "$MNT"
    mount "/dev/$DEV" "$MNT"
    "$PY" "$TREE" write "$MNT" "$W/$CUR.manifest" --seed "$SEED" | sed 's/^/  /'
    umount "$MNT"
    fsck_clean "after writing the tree"
    mount "/dev/$DEV" "$MNT"
    out=$("$PY" "$TREE" verify "$MNT" "$W/$CUR.manifest" --state full) || fail "after remount: $out"
    log "  remount: $out"
}

fsck_clean() {
    local out rc=0
    out=$(fsck.ext4 -fn "/dev/$DEV" 2>&1) || rc=$?
    [ $rc = 0 ] || { echo "$out" | tail -n 20; fail "fsck.ext4 -fn $1: exit $rc"; }
    log "  fsck.ext4 -fn clean ($1): $(tail -n 1 <<<"$out")"
}

# ---------------------------------------------------- step 4: fstrim
# Proves: trim reaches the members and frees their space: after deleting the
# big files, fstrim must drop the members' allocation by at least 3/4 of
# (big files' size x the level's storage factor); the rest still verifies.
trim_checks() {
    local f bigb before after out need
    bigb=$("$PY" "$TREE" big-bytes "$W/$CUR.manifest")
    for f in $("$PY" "$TREE" big "$W/$CUR.manifest"); do rm "$MNT/$f"; done
    sync
    before=$(allocated "${MEMBERS[@]}")
    out=$(fstrim -v "$MNT")
    sync
    after=$(allocated "${MEMBERS[@]}")
    need=$((bigb * FACTOR_NUM * 3 / (FACTOR_DEN * 4)))
    log "  fstrim: ${out#*: }; members $(mib "$before") -> $(mib "$after") MiB (deleted $(mib "$bigb") MiB x $FACTOR_NUM/$FACTOR_DEN, need a drop >= $(mib "$need") MiB)"
    [ $((before - after)) -ge "$need" ] ||
        fail "fstrim freed only $(mib $((before - after))) MiB of the members, expected >= $(mib "$need") MiB"
    out=$("$PY" "$TREE" verify "$MNT" "$W/$CUR.manifest" --state small) || fail "after fstrim: $out"
    log "  after fstrim: $out"
}

# ----------------------------------- step 5: restart, ioctl-mode client
# Proves: the data is on the members, not in any server state: a fresh
# nbdkit, attached with the ioctl (non-netlink) interface, gives a clean
# fsck and the same files.
restart_checks() {
    umount "$MNT"
    detach
    stop_nbdkit
    offline_check
    start_nbdkit b "${RAID_ARGS[@]}"
    attach ioctl
    log "  restarted nbdkit, attached /dev/$DEV (ioctl mode)"
    fsck_clean "after restart"
    mount "/dev/$DEV" "$MNT"
    local out
    out=$("$PY" "$TREE" verify "$MNT" "$W/$CUR.manifest" --state small) || fail "after restart: $out"
    log "  after restart: $out"
    umount "$MNT"
    detach
    stop_nbdkit
}

# For the direct=true io=uring array: show that the members really are open
# O_DIRECT and that nbdkit has io_uring instances.
check_direct_uring() {
    local fd tgt flags ndirect=0 nring=0
    for fd in /proc/"$NBDKIT_PID"/fd/*; do
        tgt=$(readlink "$fd" 2>/dev/null) || continue
        case "$tgt" in
            "$MEMBER_DIR"/*)
                flags=$(awk '/^flags:/ {print $2}' "/proc/$NBDKIT_PID/fdinfo/${fd##*/}")
                [ $((8#$flags & 8#40000)) != 0 ] || fail "member fd $tgt opened without O_DIRECT (flags $flags)"
                ndirect=$((ndirect + 1));;
            *io_uring*) nring=$((nring + 1));;
        esac
    done
    [ $ndirect -ge ${#MEMBERS[@]} ] || fail "only $ndirect member fds with O_DIRECT"
    [ $nring -ge 1 ] || fail "nbdkit has no io_uring instance (io=uring)"
    log "  nbdkit has $ndirect O_DIRECT member fds and $nring io_uring fds"
}

# ------------------------------------------------------- one array, end to end
# run_array NAME LEVEL NMEMBERS MEMBER_DIR FACTOR_NUM FACTOR_DEN [KEY=VALUE...]
run_array() {
    CUR=$1 LEVEL=$2; local level=$2 n=$3; MEMBER_DIR=$4; FACTOR_NUM=$5 FACTOR_DEN=$6
    shift 6
    SEED=$((SEED + 1))
    local i
    MEMBERS=()
    RAID_ARGS=(level="$level" chunk="$CHUNK")
    for i in $(seq 0 $((n - 1))); do
        MEMBERS+=("$MEMBER_DIR/$CUR-m$i.img")
        truncate -s $MEMBER_SIZE "$MEMBER_DIR/$CUR-m$i.img"
        RAID_ARGS+=(member="$MEMBER_DIR/$CUR-m$i.img")
    done
    RAID_ARGS+=("$@")
    case $level in
        0) EXPECT_SIZE=$((n * MEMBER_SIZE));;
        1) EXPECT_SIZE=$MEMBER_SIZE;;
        5) EXPECT_SIZE=$(((n - 1) * MEMBER_SIZE));;
        10) EXPECT_SIZE=$((n * MEMBER_SIZE / 2));;
    esac
    log "== $CUR: level=$level, $n x $((MEMBER_SIZE / MiB))M members in $MEMBER_DIR, chunk=$CHUNK${*:+ $*}"
    start_nbdkit a "${RAID_ARGS[@]}"
    attach netlink
    log "  nbdkit pid $NBDKIT_PID, /dev/$DEV attached (netlink, 2 connections)"
    local q=/sys/block/$DEV/queue
    log "  queue: max_hw_sectors_kb=$(cat $q/max_hw_sectors_kb) max_sectors_kb=$(cat $q/max_sectors_kb) discard_max_bytes=$(cat $q/discard_max_bytes) write_zeroes_max_bytes=$(cat $q/write_zeroes_max_bytes) fua=$(cat $q/fua) write_cache='$(cat $q/write_cache)'"
    raw_checks
    [ "$CUR" = "$DIRECT_ARRAY" ] && check_direct_uring
    offline_check
    fs_checks
    trim_checks
    restart_checks
    rm -f "${MEMBERS[@]}"
    ARRAYS_DONE+=("$CUR")
    log "== $CUR: OK"
    CUR=""
}

# Members of the last array: ext4 on a loop device on a tmpfs file.
setup_lower_ext4() {
    truncate -s 768M "$W/lower.img"
    LOOP=$(losetup -f --show "$W/lower.img")
    mkfs.ext4 -F -q "$LOOP"
    LOWER_MNT=$W/lower; mkdir -p "$LOWER_MNT"
    mount "$LOOP" "$LOWER_MNT"
    log "ext4 on $LOOP mounted at $LOWER_MNT for the direct=true io=uring members"
}

# ---------------------------------------------- step 6: what the kernel sent
# Parse the log filter files (nbdkit 1.32 format, one line per request and
# one per reply:
#   <date> <time> connection=N Write id=5 offset=0x0 count=0x1000 fua=0 ...
#   <date> <time> connection=N ...Write id=5 return=0        [or return=-1 error=EIO]
# Zero lines carry trim=/fua=/fast=, Trim lines fua=, Flush has no range.)
summarize_requests() {
    "$PY" - "$W/logs" "$WZ_MAX" "${ARRAYS_DONE[@]}" <<'PY'
import glob, os, re, sys
logdir, wz_max = sys.argv[1], int(sys.argv[2])
arrays = sys.argv[3:]
CONNECT = re.compile(r'connection=(\d+) Connect export=(\S+)')
ENTER = re.compile(r'connection=(\d+) (Read|Write|Flush|Trim|Zero|Extents|Cache) id=(\d+)(.*) \.\.\.$')
LEAVE = re.compile(r'connection=(\d+) \.\.\.(\w+) id=(\d+) .*\breturn=(-?\d+)(.*)$')
def human(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}K"
    return str(n)
tot = {}
fails = []
for a in arrays:
    st = {}           # op -> [count, min, max]
    flags = {}        # e.g. "Write fua=1" -> count
    errors, pending, conns, other = [], {}, set(), {}
    paths = sorted(glob.glob(os.path.join(logdir, f"{a}-[ab].log")))
    if not paths:
        fails.append(f"{a}: no log filter file")
    for path in paths:
        run = os.path.basename(path)
        kernel = set()   # nbd-client connects with export name "x"
        for line in open(path):
            m = CONNECT.search(line)
            if m:
                if m.group(2) == "x":
                    kernel.add(m.group(1))
                continue
            m = ENTER.search(line)
            if m and m.group(1) not in kernel:       # nbdinfo --map
                other[m.group(2)] = other.get(m.group(2), 0) + 1
                pending[(run, m.group(1), m.group(3))] = line.strip()
                continue
            if m:
                conn, op, rid, rest = m.groups()
                conns.add((run, conn))
                kv = dict(re.findall(r'(\w+)=(\S+)', rest))
                n = int(kv.get("count", "0"), 16)
                s = st.setdefault(op, [0, None, 0])
                s[0] += 1
                if "count" in kv:
                    s[1] = n if s[1] is None else min(s[1], n)
                    s[2] = max(s[2], n)
                for f in ("fua", "trim", "fast"):
                    if kv.get(f) == "1" or (op == "Zero" and f == "trim"):
                        k = f"{op} {f}={kv.get(f)}"
                        flags[k] = flags.get(k, 0) + 1
                pending[(run, conn, rid)] = line.strip()
                continue
            m = LEAVE.search(line)
            if m:
                conn, op, rid, ret, rest = m.groups()
                pending.pop((run, conn, rid), None)
                if ret != "0":
                    errors.append(line.strip())
    nreq = sum(v[0] for v in st.values())
    print(f"{a}: the kernel sent {nreq} requests on {len(conns)} connections ({len(paths)} nbdkit runs)"
          + (f"; not counted: nbdinfo --map's " + ", ".join(f"{k} {v}" for k, v in sorted(other.items()))
             if other else ""))
    for op in ("Read", "Write", "Flush", "Trim", "Zero", "Extents", "Cache"):
        c, lo, hi = st.get(op, [0, None, 0])
        t = tot.setdefault(op, [0, None, 0])
        t[0] += c
        if lo is not None:
            t[1] = lo if t[1] is None else min(t[1], lo)
            t[2] = max(t[2], hi)
        if c == 0 and op in ("Extents", "Cache"):
            continue
        extra = ", ".join(f"{k.split(' ')[1]}: {v}" for k, v in sorted(flags.items())
                          if k.startswith(op + " "))
        size = f"  size {human(lo)}..{human(hi)}" if lo is not None else ""
        print(f"  {op:<7} {c:>6}{size}{'  (' + extra + ')' if extra else ''}")
    for k, v in flags.items():
        tot[k] = tot.get(k, 0) + v
    if errors:
        fails.append(f"{a}: {len(errors)} request(s) failed, e.g. {errors[0]}")
    # Every array ran the same workload: each must have seen these.
    for what, n in (("Flush", st.get("Flush", [0])[0]), ("FUA Write", flags.get("Write fua=1", 0)),
                    ("Trim", st.get("Trim", [0])[0])):
        if n == 0:
            fails.append(f"{a}: the kernel sent no {what}")
    if st.get("Write", [0, 0, 0])[2] <= 1 << 20:
        fails.append(f"{a}: largest Write {st.get('Write', [0, 0, 0])[2]} bytes, expected > 1 MiB")
    if pending:
        fails.append(f"{a}: {len(pending)} request(s) never answered, e.g. {next(iter(pending.values()))}")

print("all arrays: " + ", ".join(f"{op} {tot.get(op, [0])[0]}" for op in
                                 ("Read", "Write", "Flush", "Trim", "Zero")) +
      f"; Write fua=1 {tot.get('Write fua=1', 0)}; max Write {human(tot.get('Write', [0, 0, 0])[2])}")
if tot.get("Flush", [0])[0] == 0:
    fails.append("the kernel never sent Flush")
if tot.get("Write fua=1", 0) == 0:
    fails.append("the kernel never sent a FUA write")
if tot.get("Trim", [0])[0] == 0:
    fails.append("the kernel never sent Trim")
if tot.get("Write", [0, 0, 0])[2] <= 1 << 20:
    fails.append(f"largest Write was {tot.get('Write', [0, 0, 0])[2]} bytes, expected > 1 MiB")
if wz_max > 0:
    if tot.get("Zero", [0])[0] == 0:
        fails.append(f"the kernel advertises write_zeroes_max_bytes={wz_max} but never sent Zero")
else:
    print("NOTE: this kernel's nbd driver has no WRITE_ZEROES (write_zeroes_max_bytes=0): "
          "BLKZEROOUT and mkfs zeroing arrive as ordinary Writes of zeros, so Zero "
          f"cannot occur (seen: {tot.get('Zero', [0])[0]})")
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
PY
}

# ===================================================================== main
[ -n "$PLUGIN" ] && [ -f "$PLUGIN" ] || fail "NBDRAID_PLUGIN must name the plugin .so (got '${PLUGIN}')"
TREE=""
for t in "${GFS_TREE_PY:-}" "${NBDRAID_SRC:+$NBDRAID_SRC/tests/vm/tree.py}" \
         "$(dirname "$0")/tree.py" "$PWD/tests/vm/tree.py" \
         "$(dirname "$PLUGIN")/../../tests/vm/tree.py"; do
    [ -n "$t" ] && [ -f "$t" ] && { TREE=$t; break; }
done
[ -n "$TREE" ] || fail "cannot find tests/vm/tree.py (set GFS_TREE_PY)"
CLI=${NBDRAID_CLI:-$(dirname "$PLUGIN")/../src/nbdraid}
[ -x "$CLI" ] || { echo "note: no nbdraid CLI at $CLI: offline parity/mirror checks skipped"; CLI=""; }

log "guest $(uname -r), $(nproc) vCPU, $(free -m | awk '/Mem:/{print $2}') MiB; $(nbdkit --version); nbd-client $(nbd-client -V 2>&1 | awk '/nbd-client/{print $NF; exit}')"
log "plugin $PLUGIN"
rm -rf "$W"; mkdir -p "$W/logs" "$W/members"
[ -d /sys/module/nbd ] || modprobe nbd nbds_max=8 max_part=0
modprobe loop
modprobe ext4
pick_nbd >/dev/null || fail "no free nbd device"

SEED=1000 ARRAYS_DONE=() WZ_MAX=0
DIRECT_ARRAY=raid10-ext4-direct
run_array raid0  0  4 "$W/members" 1 1
run_array raid1  1  2 "$W/members" 2 1
run_array raid5  5  4 "$W/members" 4 3 layout=left-symmetric
run_array raid10 10 4 "$W/members" 2 1 layout=n2
setup_lower_ext4
run_array $DIRECT_ARRAY 10 4 "$LOWER_MNT" 2 1 layout=n2 direct=true io=uring
umount "$LOWER_MNT"; LOWER_MNT=""
losetup -d "$LOOP"; LOOP=""

log "== kernel requests per array (from the log filter)"
summarize_requests || fail "request summary assertions (see above)"
log "ALL OK: ${#ARRAYS_DONE[@]} arrays (${ARRAYS_DONE[*]}) passed raw, ext4, fstrim and restart checks"
