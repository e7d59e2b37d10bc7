#!/usr/bin/env bash
# nbd-vs-file.sh: the cost of the RAID layer, measured through NBD.
#
# Runs fio's nbd engine against
#   A  nbdkit + nbdkit-raid-plugin.so, level=0 over MEMBERS tmpfs files
#   B  nbdkit's file plugin over one tmpfs file of the same total size
# with the same nbdkit options, in one run. For every repetition and pattern,
# A and B run back to back (A first on odd repetitions, B first on even ones),
# so drift on this shared machine hits both sides alike. The figure to quote
# is the ratio A/B; see bench/README.md.
#
# Usage: bench/nbd-vs-file.sh [options]
#   --reps N           repetitions (5)
#   --runtime S        measured seconds per fio run (5)
#   --ramp S           ramp seconds per fio run, not counted (1)
#   --out DIR          results folder (default: a new /tmp/nbdraid-bench.XXXXXX)
#   --size SIZE        array size = file size (1G); env SIZE
#   --chunk SIZE       RAID0 chunk (512K); env CHUNK
#   --members N        RAID0 members (4); env MEMBERS
#   --raid-args STR    extra plugin key=value words, e.g. "io=psync"; env RAID_ARGS
#   --nbdkit-args STR  extra nbdkit options for BOTH servers, e.g. "--threads 2";
#                      env NBDKIT_ARGS
#   --plugin PATH      the plugin (build/plugin/nbdkit-raid-plugin.so); env PLUGIN
#   --patterns LIST    a subset, e.g. "rr4k_qd1 sw1m_qd8" (all six)
#   --noise PCT        a run is noisy when other processes used more than PCT %
#                      of one core during it (25); env NOISE
#   --retries N        re-run a noisy A/B pair up to N times, keep the quietest (2)
#   --file-vs-file     self-test: A is the file plugin too (expect ratios ~1.0)
#   env BENCH_DIR      folder of the backing files (/dev/shm); e.g. /var/tmp for ext4
#
# Needs nbdkit, fio (nbd engine), nbdinfo, jq, awk, timeout. No root.

set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
JOBFILE=$HERE/fio/nbd.fio
ALL_PATTERNS="rr4k_qd1 rr4k_qd32 rw4k_qd1 rw4k_qd32 sr1m_qd8 sw1m_qd8"

REPS=5 RT=5 RAMP=1 OUT= SELFTEST=0 RETRIES=2
NOISE=${NOISE:-25}
SIZE=${SIZE:-1G}
CHUNK=${CHUNK:-512K}
MEMBERS=${MEMBERS:-4}
RAID_ARGS=${RAID_ARGS:-}
NBDKIT_ARGS=${NBDKIT_ARGS:-}
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
PATTERNS=$ALL_PATTERNS

die() { echo "nbd-vs-file: $*" >&2; exit 1; }
usage() { sed -n '2,/^# Needs/s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=${2:?}; shift ;;
	--runtime) RT=${2:?}; shift ;;
	--ramp) RAMP=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	--size) SIZE=${2:?}; shift ;;
	--chunk) CHUNK=${2:?}; shift ;;
	--members) MEMBERS=${2:?}; shift ;;
	--raid-args) RAID_ARGS=${2?}; shift ;;
	--nbdkit-args) NBDKIT_ARGS=${2?}; shift ;;
	--plugin) PLUGIN=${2:?}; shift ;;
	--patterns) PATTERNS=${2:?}; shift ;;
	--noise) NOISE=${2:?}; shift ;;
	--retries) RETRIES=${2:?}; shift ;;
	--file-vs-file | --self-test) SELFTEST=1 ;;
	-h | --help) usage 0 ;;
	*) echo "nbd-vs-file: unknown option '$1'" >&2; usage 1 >&2 ;;
	esac
	shift
done

# SIZE with an optional K/M/G/T suffix (powers of 1024) -> bytes.
to_bytes() {
	local v=$1 n m=1
	case $v in
	*[kK]) m=1024 ;;
	*[mM]) m=$((1024 ** 2)) ;;
	*[gG]) m=$((1024 ** 3)) ;;
	*[tT]) m=$((1024 ** 4)) ;;
	esac
	n=${v%[kKmMgGtT]}
	case $n in '' | *[!0-9]*) return 1 ;; esac
	echo $((n * m))
}

for v in REPS RT RAMP MEMBERS NOISE RETRIES; do
	case ${!v} in '' | *[!0-9]*) die "$v '${!v}': not a number" ;; esac
done
[ "$REPS" -ge 1 ] && [ "$RT" -ge 1 ] && [ "$MEMBERS" -ge 1 ] ||
	die "reps, runtime and members must be at least 1"
for p in $PATTERNS; do
	case " $ALL_PATTERNS " in *" $p "*) ;; *) die "unknown pattern '$p' (known: $ALL_PATTERNS)" ;; esac
done
SIZE_B=$(to_bytes "$SIZE") || die "size '$SIZE': not a size"
CHUNK_B=$(to_bytes "$CHUNK") || die "chunk '$CHUNK': not a size"
if [ "$SELFTEST" = 0 ]; then
	[ $((SIZE_B % (MEMBERS * CHUNK_B))) -eq 0 ] ||
		die "size $SIZE is not a multiple of $MEMBERS members x chunk $CHUNK"
	[ -f "$PLUGIN" ] || die "plugin not found: $PLUGIN (build it, or pass --plugin / --file-vs-file)"
	PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
fi
for t in nbdkit fio nbdinfo jq awk timeout; do
	command -v "$t" >/dev/null || die "$t not found"
done
read -ra RAID_ARGV <<<"$RAID_ARGS"
read -ra NBDKIT_ARGV <<<"$NBDKIT_ARGS"

if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/nbdraid-bench.XXXXXX) || die "mktemp failed"
else
	mkdir -p "$OUT" || die "cannot create $OUT"
	OUT=$(cd "$OUT" && pwd)
fi
mkdir -p "$OUT/json"
# Sockets and pid files live in a short private folder (sun_path is 108 bytes).
RUN=$(mktemp -d /tmp/nbdraid-sock.XXXXXX) || die "mktemp failed"
SHM=${BENCH_DIR:-/dev/shm}/nbdraid-bench.$$
CSV=$OUT/results.csv
REPORT=$OUT/report.md
ERRLOG=$OUT/fio.err
NCPU=$(nproc)
HZ=$(getconf CLK_TCK)
npat=$(wc -w <<<"$PATTERNS")
# Hard upper bound for each server's life: the whole run plus a margin.
LIFE=$((REPS * npat * 2 * (RETRIES + 1) * (RT + RAMP + 10) + 900))
T0=$(date +%s)

WRAPPERS=() SRVPIDS=() SOCKS=() SHMFILES=()

log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

# Kill one process we started, if it is still the one we think (its comm).
stop_pid() {
	local p=$1 comm=$2 i
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] || return 0
	kill "$p" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$p" 2>/dev/null
}

cleanup() {
	local p
	for p in "${SRVPIDS[@]}"; do stop_pid "$p" nbdkit; done
	for p in "${WRAPPERS[@]}"; do stop_pid "$p" timeout; done
	rm -f "${SOCKS[@]}" "${SHMFILES[@]}"
	rm -rf "$RUN"
	echo "results in $OUT" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# start_server NAME nbdkit-args...  -> sets URI and SRVPID
start_server() {
	local name=$1 sock=$RUN/$1.sock pidf=$RUN/$1.pid i
	shift
	rm -f "$sock" "$pidf" # nbdkit 1.32 leaves stale sockets behind
	SOCKS+=("$sock")
	echo "nbdkit -f --exit-with-parent -U $sock -P $pidf ${NBDKIT_ARGV[*]} $*" >"$OUT/server-$name.cmd"
	timeout "$LIFE" nbdkit -f --exit-with-parent -U "$sock" -P "$pidf" \
		"${NBDKIT_ARGV[@]}" "$@" >>"$OUT/nbdkit-$name.log" 2>&1 &
	WRAPPERS+=($!)
	for i in $(seq 150); do
		[ -s "$pidf" ] && break
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$pidf" ] || {
		tail -n 20 "$OUT/nbdkit-$name.log" >&2
		die "server $name did not start (log: $OUT/nbdkit-$name.log)"
	}
	SRVPID=$(cat "$pidf")
	SRVPIDS+=("$SRVPID")
	URI="nbd+unix:///?socket=$sock"
}

proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# total, idle(+iowait), steal jiffies of the whole machine
host_stat() { awk '/^cpu /{ t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $5 + $6, $9; exit }' /proc/stat; }

# fio_section SECTION URI JSON  (fio's own stdout chatter goes to fio.err)
fio_section() {
	uri=$2 RUNTIME=$RT RAMP=$RAMP timeout $((RT + RAMP + 60)) \
		fio --section="$1" --output-format=json --output="$3" "$JOBFILE" >>"$ERRLOG" 2>&1
}

# run_one REP PATTERN TARGET POS JSON: one measured fio run.
# Sets ROW (CSV fields from pos to fio_rc) and OTHER: the CPU used by
# everything except fio's job thread and this server, in % of one core.
run_one() {
	local rep=$1 pat=$2 tgt=$3 pos=$4 js=$5 uri pid p0 p1 t0 t1 h0 i0 s0 h1 i1 s1 m rc srv host st
	uri=${URIS[$tgt]} pid=${PIDS[$tgt]}
	p0=$(proc_ticks "$pid")
	read -r h0 i0 s0 < <(host_stat)
	t0=$(date +%s%N)
	fio_section "$pat" "$uri" "$js"
	rc=$?
	t1=$(date +%s%N)
	read -r h1 i1 s1 < <(host_stat)
	p1=$(proc_ticks "$pid")
	m=$(jq -r '.jobs[0] | select(.error == 0) |
		[ .read.iops + .write.iops,
		  (.read.bw_bytes + .write.bw_bytes) / 1e6,
		  (if .read.io_bytes > 0 then .read.lat_ns.mean else .write.lat_ns.mean end) / 1000,
		  .usr_cpu + .sys_cpu ]
		| map(. * 10 | round / 10) | join(",")' "$js" 2>/dev/null)
	if [ "$rc" -ne 0 ] || [ -z "$m" ]; then
		log "FAILED: $tgt $pat rep $rep (fio rc=$rc; see $ERRLOG)"
		m="NA,NA,NA,NA"
	fi
	srv=$(awk -v d=$((p1 - p0)) -v hz="$HZ" -v ns=$((t1 - t0)) \
		'BEGIN { printf "%.0f", d / hz / (ns / 1e9) * 100 }')
	host=$(awk -v b=$(((h1 - h0) - (i1 - i0))) -v t=$((h1 - h0)) -v n="$NCPU" \
		'BEGIN { if (t > 0) printf "%.0f", b / t * n * 100; else print "NA" }')
	st=$(awk -v s=$((s1 - s0)) -v t=$((h1 - h0)) -v n="$NCPU" \
		'BEGIN { if (t > 0) printf "%.0f", s / t * n * 100; else print "NA" }')
	OTHER=$(awk -v h="$host" -v s="$srv" -v f="$(cut -d, -f4 <<<"$m")" \
		'BEGIN { o = h - s - f; if (h == "NA" || f == "NA") o = 0; printf "%.0f", o < 0 ? 0 : o }')
	ROW="$pos,$m,$srv,$host,$st,$OTHER,$rc"
	log "rep $rep $pat $tgt: $(cut -d, -f1,2 <<<"$m" | sed 's/,/ IOPS, /') MB/s (other CPU $OTHER %)"
	kill -0 "$pid" 2>/dev/null || {
		tail -n 20 "$OUT/nbdkit-$tgt.log" >&2
		die "server $tgt (pid $pid) died (log: $OUT/nbdkit-$tgt.log)"
	}
}

# run_pair REP PATTERN ORDER: A and B back to back; a noisy pair is re-run up
# to RETRIES times. Every attempt goes to the CSV; used=1 marks the quietest.
run_pair() {
	local rep=$1 pat=$2 order=$3 att t pos js maxo best= bestn= rows=() noisy=() i
	for att in $(seq 0 "$RETRIES"); do
		maxo=0 pos=1
		for t in $order; do
			js=$OUT/json/r$rep-$pat-$t.json
			[ "$att" -gt 0 ] && js=$OUT/json/r$rep-$pat-$t-retry$att.json
			run_one "$rep" "$pat" "$t" "$pos" "$js"
			rows+=("$att|$rep,$pat,$t,$ROW")
			[ "$OTHER" -gt "$maxo" ] && maxo=$OTHER
			pos=2
		done
		noisy[att]=$((maxo > NOISE))
		if [ -z "$best" ] || [ "$maxo" -lt "$bestn" ]; then best=$att bestn=$maxo; fi
		[ "$maxo" -le "$NOISE" ] && break
		[ "$att" -lt "$RETRIES" ] && log "noisy pair (other CPU up to $maxo % of a core), re-running"
	done
	for i in "${rows[@]}"; do
		att=${i%%|*}
		echo "${i#*|},$att,$((att == best)),${noisy[att]}" >>"$CSV"
	done
}

# --- set up the two exports -------------------------------------------------

declare -A URIS PIDS
# The backing files: A_FILES (the member files, or one file in the self-test)
# and B's one file, each SIZE in total.
if [ "$SELFTEST" = 1 ]; then
	A=fileA B=file
	A_FILES=("$SHM.a.img")
	A_DESC="file plugin over 1 tmpfs file ($SIZE) [self-test]"
else
	A=raid B=file
	A_FILES=()
	for i in $(seq 0 $((MEMBERS - 1))); do A_FILES+=("$SHM.m$i.img"); done
	A_DESC="nbdraid level=0 chunk=$CHUNK, $MEMBERS members in ${BENCH_DIR:-/dev/shm} of $((SIZE_B / MEMBERS / 1048576)) MiB${RAID_ARGS:+, $RAID_ARGS}"
fi
SHMFILES+=("${A_FILES[@]}" "$SHM.file.img")
for f in "${A_FILES[@]}"; do
	truncate -s $((SIZE_B / ${#A_FILES[@]})) "$f" || die "cannot create $f"
done
truncate -s "$SIZE_B" "$SHM.file.img" || die "cannot create $SHM.file.img"

# Allocate A's and B's tmpfs pages in turn, 1/64 of each side at a time, so
# neither side gets all the "early" or "late" physical memory: with one side
# allocated wholly before the other, 1M reads of the file created second ran
# 2-5 % faster here, whatever the server.
NSEG=64
falloc_seg() { # FILE SEG: allocate segment SEG of NSEG of FILE
	local sz=$(($(stat -c %s "$1"))) seg off len
	seg=$((sz / NSEG / 4096 * 4096))
	[ "$seg" -gt 0 ] || { [ "$2" = 0 ] && fallocate -l "$sz" "$1"; return; }
	off=$(($2 * seg)) len=$seg
	[ "$2" = $((NSEG - 1)) ] && len=$((sz - off))
	fallocate -o "$off" -l "$len" "$1"
}
INTERLEAVED=yes
for k in $(seq 0 $((NSEG - 1))); do
	if [ $((k % 2)) = 0 ]; then files=("${A_FILES[@]}" "$SHM.file.img"); else files=("$SHM.file.img" "${A_FILES[@]}"); fi
	for f in "${files[@]}"; do falloc_seg "$f" "$k" 2>/dev/null || INTERLEAVED="no (fallocate failed)"; done
done

if [ "$SELFTEST" = 1 ]; then
	start_server "$A" file file="${A_FILES[0]}"
else
	nbdkit "$PLUGIN" --dump-plugin >"$OUT/dump-plugin.txt" 2>&1 ||
		die "nbdkit cannot load $PLUGIN: $(tail -n 3 "$OUT/dump-plugin.txt")"
	start_server "$A" "$PLUGIN" level=0 chunk="$CHUNK" "${A_FILES[@]/#/member=}" "${RAID_ARGV[@]}"
fi
URIS[$A]=$URI PIDS[$A]=$SRVPID
start_server "$B" file file="$SHM.file.img"
URIS[$B]=$URI PIDS[$B]=$SRVPID

for t in "$A" "$B"; do
	s=$(timeout 20 nbdinfo --size "${URIS[$t]}") || die "nbdinfo failed on $t"
	[ "$s" = "$SIZE_B" ] || die "export $t is $s bytes, expected $SIZE_B"
done

# Prefill through each server: every byte written once, 1M sequential, QD8,
# so that no read below reads a hole (fio's buffers are not zero).
for t in "$A" "$B"; do
	fio_section prefill "${URIS[$t]}" "$OUT/json/prefill-$t.json" ||
		die "prefill of $t failed (see $ERRLOG)"
	w=$(jq -r '.jobs[0].write.io_bytes' "$OUT/json/prefill-$t.json")
	[ "$w" = "$SIZE_B" ] || die "prefill of $t wrote $w bytes, expected $SIZE_B"
done
PREFILL_MBS=$(for t in "$A" "$B"; do
	jq -r --arg t "$t" '"\($t) \(.jobs[0].write.bw_bytes / 1e6 | floor) MB/s"' "$OUT/json/prefill-$t.json"
done | paste -sd, - | sed 's/,/, /')

# --- machine facts -------------------------------------------------------------

read -r h0 i0 _ < <(host_stat)
sleep 2
read -r h1 i1 _ < <(host_stat)
IDLE_BUSY=$(awk -v b=$(((h1 - h0) - (i1 - i0))) -v t=$((h1 - h0)) -v n="$NCPU" \
	'BEGIN { printf "%.0f", b / t * n * 100 }')
REV=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo "no commit")
[ -n "$(git -C "$HERE/.." status --porcelain 2>/dev/null | head -n 1)" ] && REV="$REV (dirty tree)"
{
	echo "# nbd-vs-file: nbdraid vs nbdkit file, fio nbd engine"
	echo
	echo "- date: $(date -u +%FT%TZ)"
	echo "- host: nproc=$NCPU, kernel $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
	echo "- load before the runs: $(cut -d' ' -f1-3 /proc/loadavg); CPU busy over 2 s with the servers idle: $IDLE_BUSY % of $((NCPU * 100)) %"
	echo "- software: $(nbdkit --version | head -n 1), $(fio --version), $(nbdinfo --version 2>/dev/null | head -n 1)"
	echo "- tree: $REV"
	if [ "$SELFTEST" = 0 ]; then
		echo "- plugin: $PLUGIN ($(stat -c %y "$PLUGIN" | cut -d. -f1), sha256 $(sha256sum "$PLUGIN" | cut -c1-12))"
	fi
	echo "- A ($A): $A_DESC"
	echo "- B ($B): file plugin over 1 file in ${BENCH_DIR:-/dev/shm} ($SIZE)"
	echo "- nbdkit options for both: ${NBDKIT_ARGS:-(none: default threads)}; no filters"
	echo "- fio: bench/fio/nbd.fio, ioengine=nbd over a unix socket, ${RT} s + ${RAMP} s ramp, time_based, norandommap, randrepeat=0, iomem_align=4096"
	echo "- $REPS repetitions; per repetition and pattern A and B run back to back, A first on odd repetitions"
	echo "- noise: a run is noisy when other processes used more than $NOISE % of one core during it; a noisy pair is re-run up to $RETRIES times and the quietest attempt is kept"
	echo "- backing pages: A's and B's tmpfs files allocated in turn, 1/$NSEG at a time (fallocate): $INTERLEAVED"
	echo "- prefill: fio 1M sequential write QD8 of all $SIZE_B bytes through each server (bench/fio/nbd.fio [prefill]): $PREFILL_MBS"
	echo
} >"$REPORT"
cat "$REPORT"

# --- measure -------------------------------------------------------------------

echo "rep,pattern,target,pos,iops,mbps,lat_us,fio_cpu_pct,srv_cpu_pct,host_busy_pct,steal_pct,other_cpu_pct,fio_rc,attempt,used,noisy" >"$CSV"
for rep in $(seq "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then order="$A $B"; else order="$B $A"; fi
	for pat in $PATTERNS; do
		run_pair "$rep" "$pat" "$order"
	done
done

# --- summarise -----------------------------------------------------------------

# Medians of the metric per side, and the median and range of the per-rep
# ratios A/B. The metric is IOPS for 4k patterns and MB/s for 1M patterns.
awk -F, -v A="$A" -v B="$B" -v pats="$PATTERNS" -v selftest="$SELFTEST" '
function sortn(a, n,   i, j, v) {
	for (i = 2; i <= n; i++) {
		v = a[i]
		for (j = i - 1; j >= 1 && a[j] > v; j--)
			a[j + 1] = a[j]
		a[j + 1] = v
	}
}
function median(a, n) {
	if (n == 0) return "NA"
	sortn(a, n)
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v, unit) {
	if (v == "NA") return "NA"
	if (unit == "IOPS") return sprintf("%.1fk IOPS", v / 1000)
	return sprintf("%.0f MB/s", v)
}
BEGIN {
	label["rr4k_qd1"] = "4k randread QD1";   label["rr4k_qd32"] = "4k randread QD32"
	label["rw4k_qd1"] = "4k randwrite QD1";  label["rw4k_qd32"] = "4k randwrite QD32"
	label["sr1m_qd8"] = "1M read QD8";       label["sw1m_qd8"] = "1M write QD8"
}
NR > 1 {
	if ($1 > reps) reps = $1
	if ($14 > 0 && $3 == A) retried[$2]++
	if ($15 != 1) next
	col = ($2 ~ /1m/) ? 6 : 5
	if ($col != "NA") v[$2, $3, $1] = $col
	if ($3 == A && $16 == 1) noisy[$2]++
}
END {
	an = selftest ? "file A (median)" : "nbdraid (median)"
	rn = selftest ? "ratio A/B" : "ratio nbdraid/file"
	printf "| pattern | file (median) | %s | %s (median of per-rep) | min–max ratio | goal ≥ 0.9 | noisy pairs (re-runs) |\n", an, rn
	print "|---|---:|---:|---:|---:|---|---:|"
	np = split(pats, P, " ")
	for (k = 1; k <= np; k++) {
		p = P[k]; unit = (p ~ /1m/) ? "MB/s" : "IOPS"
		na = nb = nr = 0; lo = hi = ""
		for (r = 1; r <= reps; r++) {
			if ((p, A, r) in v) xa[++na] = v[p, A, r]
			if ((p, B, r) in v) xb[++nb] = v[p, B, r]
			if ((p, A, r) in v && (p, B, r) in v && v[p, B, r] > 0) {
				q = v[p, A, r] / v[p, B, r]
				xr[++nr] = q
				if (lo == "" || q < lo) lo = q
				if (hi == "" || q > hi) hi = q
			}
		}
		ma = median(xa, na); mb = median(xb, nb); mr = median(xr, nr)
		ok = (mr == "NA") ? "no data" : (mr >= 0.9 ? "ok" : "**below**")
		printf "| %s | %s | %s | %s | %s | %s | %d/%d (%d) |\n", label[p], fmt(mb, unit), fmt(ma, unit),
			mr == "NA" ? "NA" : sprintf("%.2f", mr),
			nr == 0 ? "NA" : sprintf("%.2f–%.2f", lo, hi) (nr < reps ? sprintf(" (%d of %d reps)", nr, reps) : ""),
			ok, noisy[p], reps, retried[p]
	}
}' "$CSV" >"$OUT/table.md"

{
	cat "$OUT/table.md"
	echo
	echo "Raw: $CSV (one row per fio run), fio JSON in $OUT/json/, server logs in $OUT/."
} >>"$REPORT"
echo
cat "$OUT/table.md"
echo
echo "report: $REPORT"
