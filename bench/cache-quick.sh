#!/bin/bash
# bench/cache-quick.sh: a quick look at the write-back cache (docs/cache.md):
# RAID 5 x4 with cache=ram against the same array with cache=none and with
# nbdkit's own cache filter in front (nbdkit --filter=cache raid ...), on
# emulated disks (bench/classic/fusedisk.c: 5 ms access, 100 MB/s, one
# request at a time) and on tmpfs.  Patterns: 4K random write QD1 and QD8,
# 1M sequential write QD8 (timed runs), and writeall: 1M sequential writes
# QD8 over the whole array once, then a flush, timed by the wall clock (what
# a cache defers to the flush counts).  Every repetition runs the three configurations
# back to back (a fresh server each, killed after its run: the cache's
# dirty data is not waited for), and the figures are same-run ratios to
# cache=none, medians over the repetitions.  The full study is bench/run's
# study 8 (bench/run --studies cache).
#
# Usage: bench/cache-quick.sh [--reps N] [--runtime S] [--media "spindle tmpfs"]
#                             [--out DIR]
# Environment: PLUGIN (build/plugin/nbdkit-raid-plugin.so), NBDRAID_CLI
# (build/src/nbdraid), DISK_SIZE (256M per member), CHUNK (512K),
# CACHE_ARGS (extra cache= settings for cache=ram), CONFIGS, PATTERNS.
# Needs root (FUSE), nbdkit, fio (nbd engine), jq, cc.  It stops only the
# processes it started, by pid, and unmounts its mounts.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"
PROG=cache-quick
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
CLI=${NBDRAID_CLI:-$HERE/../build/src/nbdraid}
REPS=3 RT=5 RAMP=1 MEDIA="spindle tmpfs" OUT=
DISK_SIZE=${DISK_SIZE:-256M} CHUNK=${CHUNK:-512K} CACHE_ARGS=${CACHE_ARGS:-}
CONFIGS=${CONFIGS:-"none ram filter"}
PATTERNS=${PATTERNS:-"randwrite:4k:1 randwrite:4k:8 write:1m:8 writeall:1m:8"}

cb_args --media MEDIA -- "$@"
cb_init cache cq
SHM=/dev/shm/nbdraid-cq.$$

# members MEDIUM: MEMBERS (paths) and XARGS (direct=true on disks).
TMPFS=()
members() {
	local i
	if [ "$1" = spindle ] && [ ${#DISKS[@]} = 0 ]; then
		cb_disks
	fi
	if [ "$1" = tmpfs ] && [ ${#TMPFS[@]} = 0 ]; then
		for i in 0 1 2 3; do
			dd if=/dev/zero of="$SHM.m$i" bs=1M count=$(($(numfmt --from=iec "$DISK_SIZE") >> 20)) \
				status=none || die "cannot write $SHM.m$i"
			FILES+=("$SHM.m$i") TMPFS+=("$SHM.m$i")
		done
	fi
	if [ "$1" = spindle ]; then MEMBERS=("${DISKS[@]}") XARGS=(direct=true); else
		MEMBERS=("${TMPFS[@]}") XARGS=(); fi
}

# stats: the emulated disks' counters summed (reads writes rbytes wbytes
# seeks busy_ns wait_ns flushes), zeros on tmpfs.
stats() {
	if [ ${#DISKS[@]} = 0 ] || [ "$medium" != spindle ]; then echo 0 0 0 0 0 0 0 0; return; fi
	od -An -v -t u8 -w64 "$RUN"/d?.stats | awk '{ for (i = 1; i <= 8; i++) a[i] += $i }
		END { for (i = 1; i <= 8; i++) printf "%.0f ", a[i]; print "" }'
}

# serve MEDIUM CONFIG: one server; URI, SRV.
serve() {
	local m args=() env=() pre=()
	members "$1"
	for m in "${MEMBERS[@]}"; do args+=("member=$m"); done
	case $2 in
	ram) args+=(cache=ram control="$RUN/ctl" $CACHE_ARGS) ;;
	filter) pre=(--filter=cache) env=(TMPDIR=/dev/shm) ;;
	esac
	cb_serve "$1 $2" "${env[@]}" -- "${pre[@]}" "$PLUGIN" level=5 chunk="$CHUNK" \
		"${args[@]}" "${XARGS[@]}"
}

echo "medium,rep,config,pattern,mbps,iops,dirty_bytes,waits,m_reads,m_writes,m_seeks,m_busy_pct" >"$OUT/results.csv"
for medium in $MEDIA; do
	for rep in $(seq "$REPS"); do
		for pat in $PATTERNS; do
			IFS=: read -r kind bs qd <<<"$pat"
			for cfg in $CONFIGS; do
				serve "$medium" "$cfg"
				js=$OUT/json/$medium-$rep-$cfg-${pat//:/_}.json
				read -r -a s0 < <(stats)
				t0=$(date +%s%N)
				if [ "$kind" = writeall ]; then
					cb_fio "$js" --rw=write --bs="$bs" --iodepth="$qd" --end_fsync=1
				else
					cb_fio "$js" --rw="$kind" --bs="$bs" --iodepth="$qd" --time_based \
						--runtime="$RT" --ramp_time="$RAMP" --norandommap --randrepeat=0
				fi
				t1=$(date +%s%N)
				read -r -a s1 < <(stats)
				dm=$(awk -v a="${s0[*]}" -v b="${s1[*]}" -v ns=$((t1 - t0)) 'BEGIN { split(a, x); split(b, y)
					printf "%d,%d,%d,%.0f", y[1]-x[1], y[2]-x[2], y[5]-x[5], (y[6]-x[6]) / (4 * ns) * 100 }')
				dirty=NA waits=NA
				if [ "$cfg" = ram ]; then
					st=$("$CLI" --control "$RUN/ctl" status --json 2>/dev/null)
					dirty=$(jq -r '.cache.dirty_bytes' <<<"$st")
					waits=$(jq -r '.cache.waits' <<<"$st")
				fi
				cb_unserve "${STOP_SIGNAL:-9}"
				m=$(jq -r '.jobs[0].write.bw_bytes' "$js" 2>/dev/null)
				if [ "$kind" = writeall ]; then # bytes over the wall clock
					m=$(jq -r '.jobs[0].write.io_bytes' "$js" | awk -v ns=$((t1 - t0)) '{ printf "%.0f", $1 / (ns / 1e9) }')
				fi
				b=$(numfmt --from=iec "${bs^^}")
				echo "$medium,$rep,$cfg,$pat,$(awk -v m="$m" 'BEGIN { printf "%.1f", m / 1e6 }'),$(awk -v m="$m" -v b="$b" 'BEGIN { printf "%.0f", m / b }'),$dirty,$waits,$dm" >>"$OUT/results.csv"
				log "$medium rep $rep $pat $cfg: $(awk -v m="$m" 'BEGIN { printf "%.1f", m / 1e6 }') MB/s (dirty $dirty; member reads,writes,seeks,busy% $dm)"
			done
		done
	done
done

# Medians of the same-run ratios.
/usr/bin/python3 - "$OUT/results.csv" <<'EOF' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
v = {(r["medium"], r["rep"], r["config"], r["pattern"]): float(r["mbps"] or 0)
     for r in rows}
media = sorted({r["medium"] for r in rows}, reverse=True)
pats = list(dict.fromkeys(r["pattern"] for r in rows))
print("| medium | pattern | none MB/s | ram MB/s | filter MB/s | ram / none | filter / none | ram / filter |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for m in media:
    for p in pats:
        reps = sorted({r["rep"] for r in rows if r["medium"] == m and r["pattern"] == p})
        def med(c):
            if (m, reps[0], c, p) not in v:
                return "-"
            return "%.1f" % statistics.median(v[(m, r, c, p)] for r in reps)
        def ratio(a, b):
            if (m, reps[0], a, p) not in v or (m, reps[0], b, p) not in v:
                return "-"
            return "%.2f" % statistics.median(
                v[(m, r, a, p)] / max(v[(m, r, b, p)], 1e-9) for r in reps)
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m, p, med("none"), med("ram"), med("filter"),
            ratio("ram", "none"), ratio("filter", "none"),
            ratio("ram", "filter")))
EOF
