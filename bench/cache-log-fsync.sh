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
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
PROG=cache-log-fsync
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
CLI=${NBDRAID_CLI:-$HERE/../build/src/nbdraid}
REPS=3 RT=5 RAMP=1 JOBS="1 4" OUT=
DISK_SIZE=${DISK_SIZE:-256M} CHUNK=${CHUNK:-512K} LOG_SIZE=${LOG_SIZE:-1G}
LOG_DIR=${LOG_DIR:-/dev/shm} CONFIGS=${CONFIGS:-"none ram log"}

cb_args --jobs JOBS -- "$@"
[ -x "$CLI" ] || die "no nbdraid at $CLI"
cb_init clf clf-run
LOG=$LOG_DIR/nbdraid-clf.$$.log
FILES+=("$LOG")
cb_disks
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
	cb_serve "$1" -- "$PLUGIN" "${args[@]}" direct=true control="$RUN/ctl"
}

echo "rep,config,jobs,iops,lat_us,flushes,syncs,log_waits,dirty_bytes" >"$OUT/results.csv"
for rep in $(seq "$REPS"); do
	for jobs in $JOBS; do
		for cfg in $CONFIGS; do
			serve "$cfg"
			js=$OUT/json/$rep-$cfg-$jobs.json
			cb_fio "$js" --rw=randwrite --bs=4k --iodepth=1 --fsync=1 \
				--numjobs="$jobs" --group_reporting --time_based \
				--runtime="$RT" --ramp_time="$RAMP" --norandommap --randrepeat=0
			st=$("$CLI" --control "$RUN/ctl" status --json 2>/dev/null)
			syncs=$(jq -r '.cache.log.syncs // "NA"' <<<"$st")
			waits=$(jq -r '.cache.log.waits // "NA"' <<<"$st")
			dirty=$(jq -r '.cache.dirty_bytes // "NA"' <<<"$st")
			flushes=$(jq -r '.io.flush.requests // "NA"' <<<"$st")
			# SIGTERM: a clean stop writes the cache back and empties
			# the log, so the next configuration starts from the same
			# members.
			cb_unserve TERM
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
