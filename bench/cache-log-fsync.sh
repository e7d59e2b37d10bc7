#!/bin/bash
# bench/cache-log-fsync.sh: a database's write + fsync over the array, with
# cache=log (the log on tmpfs: a battery-backed card's memory) against
# cache=none and cache=ram, RAID 5 x4 (md superblocks, nbdraid create) on
# emulated disks (bench/classic/fusedisk.c: 5 ms access, 100 MB/s, one
# request at a time, direct=true).  fio's nbd engine, 4K random writes, a
# FLUSH after every write (--fsync=1), QD1 per job, JOBS jobs (each its
# own connection).  Every repetition runs the configurations back to back
# (a fresh server each, killed after its run); the figures are same-run
# ratios to cache=none, medians over the repetitions.
#
# Usage: bench/cache-log-fsync.sh [--reps N] [--runtime S] [--jobs "1 4"]
#                                 [--out DIR]
# Environment: PLUGIN, NBDRAID_CLI, DISK_SIZE (256M per member), CHUNK
# (512K), LOG_SIZE (1G), LOG_DIR (/dev/shm), CONFIGS ("none ram log").
# Needs root (FUSE), nbdkit, fio (nbd engine), jq, cc.  It stops only the
# processes it started, by pid, and unmounts its mounts.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PROG=cache-log-fsync
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
CLI=${NBDRAID_CLI:-$HERE/../build/src/nbdraid}
REPS=3 RT=5 RAMP=1 JOBS="1 4" OUT=
DISK_SIZE=${DISK_SIZE:-256M} CHUNK=${CHUNK:-512K} LOG_SIZE=${LOG_SIZE:-1G}
LOG_DIR=${LOG_DIR:-/dev/shm} CONFIGS=${CONFIGS:-"none ram log"}

while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--runtime) RT=$2; shift ;;
	--jobs) JOBS=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,19p' "$0"; exit 0 ;;
	*) echo "$PROG: unknown option $1" >&2; exit 1 ;;
	esac
	shift
done
die() { echo "$PROG: $*" >&2; exit 1; }
log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
T0=$(date +%s)
[ -f "$PLUGIN" ] || die "no plugin at $PLUGIN"
[ -x "$CLI" ] || die "no nbdraid at $CLI"
for t in nbdkit fio jq cc; do command -v $t >/dev/null || die "needs $t"; done
OUT=${OUT:-$(mktemp -d /tmp/nbdraid-clf.XXXXXX)}
mkdir -p "$OUT/json" "$OUT/logs" || die "cannot create $OUT"
RUN=$(mktemp -d /tmp/nbdraid-clf-run.XXXXXX)
LOG=$LOG_DIR/nbdraid-clf.$$.log
PIDS=() MOUNTS=() DISKS=()

cleanup() {
	local p m
	[ -n "${SRV:-}" ] && kill -9 "$SRV" 2>/dev/null
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -f "$LOG"
	rm -rf "$RUN"
	echo "$PROG: results in $OUT" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -o "$RUN/fusedisk" "$HERE/classic/fusedisk.c" 2>"$OUT/logs/cc.log" ||
	die "cannot build fusedisk"
for i in 0 1 2 3; do
	mnt=$RUN/d$i
	mkdir -p "$mnt"
	"$RUN/fusedisk" --size "$DISK_SIZE" --pidfile "$RUN/d$i.pid" "$mnt" \
		>>"$OUT/logs/fusedisk.log" 2>&1 &
	for _ in $(seq 50); do [ -s "$RUN/d$i.pid" ] && break; sleep 0.1; done
	[ -s "$RUN/d$i.pid" ] || die "emulated disk $i did not start"
	PIDS+=("$(cat "$RUN/d$i.pid")") MOUNTS+=("$mnt")
	DISKS+=("$mnt/disk")
done
"$CLI" create --level 5 --chunk "$CHUNK" --assume-clean "${DISKS[@]}" \
	>"$OUT/logs/create.log" 2>&1 || die "nbdraid create failed: $(cat "$OUT/logs/create.log")"
fallocate -l "$LOG_SIZE" "$LOG" 2>/dev/null || truncate -s "$LOG_SIZE" "$LOG" ||
	die "cannot make the log $LOG"

# serve CONFIG: one server over the array; URI, SRV.
serve() {
	local m args=()
	for m in "${DISKS[@]}"; do args+=("member=$m"); done
	case $1 in
	ram) args+=(cache=ram) ;;
	log) args+=(cache=log cache-log="$LOG") ;;
	esac
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
	nbdkit -f --exit-with-parent --threads 128 -U "$RUN/sock" -P "$RUN/pid" \
		"$PLUGIN" "${args[@]}" direct=true control="$RUN/ctl" \
		>>"$OUT/logs/nbdkit-$1.log" 2>&1 &
	SRV=$!
	for _ in $(seq 300); do [ -S "$RUN/sock" ] && [ -s "$RUN/pid" ] && break; sleep 0.1; done
	[ -S "$RUN/sock" ] || die "server $1 did not start: $(tail -3 "$OUT/logs/nbdkit-$1.log")"
	URI="nbd+unix:///?socket=$RUN/sock"
}

# unserve: SIGTERM (a clean stop writes the cache back and empties the
# log, so the next configuration starts from the same members) with a
# deadline, then SIGKILL.
unserve() {
	kill "$SRV" 2>/dev/null
	for _ in $(seq 1200); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
}

echo "rep,config,jobs,iops,lat_us,flushes,syncs,log_waits,dirty_bytes" >"$OUT/results.csv"
for rep in $(seq "$REPS"); do
	for jobs in $JOBS; do
		for cfg in $CONFIGS; do
			serve "$cfg"
			js=$OUT/json/$rep-$cfg-$jobs.json
			fio --name=x --ioengine=nbd --uri="$URI" --rw=randwrite --bs=4k \
				--iodepth=1 --fsync=1 --numjobs="$jobs" --group_reporting \
				--time_based --runtime="$RT" --ramp_time="$RAMP" \
				--norandommap --randrepeat=0 --iomem_align=4096 \
				--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1
			st=$("$CLI" --control "$RUN/ctl" status --json 2>/dev/null)
			syncs=$(jq -r '.cache.log.syncs // "NA"' <<<"$st")
			waits=$(jq -r '.cache.log.waits // "NA"' <<<"$st")
			dirty=$(jq -r '.cache.dirty_bytes // "NA"' <<<"$st")
			flushes=$(jq -r '.io.flush.requests // "NA"' <<<"$st")
			unserve
			iops=$(jq -r '.jobs[0].write.iops' "$js")
			lat=$(jq -r '.jobs[0].write.clat_ns.mean / 1000' "$js")
			echo "$rep,$cfg,$jobs,$iops,$lat,$flushes,$syncs,$waits,$dirty" >>"$OUT/results.csv"
			log "rep $rep jobs $jobs $cfg: $(printf '%.0f' "$iops") writes+flushes/s, write latency $(printf '%.0f' "$lat") us, log syncs $syncs, dirty $dirty"
		done
	done
done

/usr/bin/python3 - "$OUT/results.csv" <<'EOF' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
v = {(r["rep"], r["config"], r["jobs"]): float(r["iops"] or 0) for r in rows}
cfgs = list(dict.fromkeys(r["config"] for r in rows))
reps = sorted({r["rep"] for r in rows})
print("| jobs | " + " | ".join("%s writes/s" % c for c in cfgs) + " | " +
      " | ".join("%s / none" % c for c in cfgs if c != "none") + " |")
print("| --- " * (1 + 2 * len(cfgs) - 1) + "|")
for j in dict.fromkeys(r["jobs"] for r in rows):
    med = ["%.0f" % statistics.median(v[(r, c, j)] for r in reps) for c in cfgs]
    rat = ["%.1f" % statistics.median(v[(r, c, j)] / max(v[(r, "none", j)], 1e-9)
                                     for r in reps)
           for c in cfgs if c != "none"]
    print("| %s | %s | %s |" % (j, " | ".join(med), " | ".join(rat)))
EOF
