# shellcheck shell=bash disable=SC2034
# lib.sh: the A/B machinery shared by bench/nbd-vs-file.sh and
# bench/raid-vs-raid.sh, and (at the end) the frame of the one-server
# scripts bench/cache-quick.sh and bench/cache-log-fsync.sh. Sourced, not
# run; see bench/README.md.
#
# The caller sets, before bench_init:
#   PROG          its name, for messages
#   JOBFILE       the fio job file (bench/fio/nbd.fio)
#   REPS RT RAMP RETRIES NOISE PATTERNS OUT
#   NBDKIT_ARGS   (string) and NBDKIT_ARGV (array): options for both servers
# and, before the later steps:
#   A B           the two target names (CSV "target" column, file names)
#   A_FILES B_FILES   the backing files of each side (arrays)
#   SIZES[A] SIZES[B] the export size each side must report (bytes)
#
# The functions work on globals, like the script they were taken out of.

die() { echo "$PROG: $*" >&2; exit 1; }

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

# need_tools TOOL...: die unless every tool is on PATH.
need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || die "$t not found"
	done
}

# bench_init: the results folder, the private socket folder, the traps.
bench_init() {
	local npat
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
	LIFE=$((REPS * npat * 2 * (RETRIES + 1) * (RT + RAMP + 10) + 900 + ${EXTRA_LIFE:-0}))
	T0=$(date +%s)
	WRAPPERS=() SRVPIDS=() SOCKS=() SHMFILES=()
	declare -gA URIS PIDS SIZES
	trap cleanup EXIT
	trap 'exit 130' INT TERM HUP
}

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

# create_backing: every file of A_FILES (FILE_SIZE_A bytes each) and B_FILES
# (FILE_SIZE_B each), then their tmpfs pages allocated in turn, 1/64 of each
# side at a time, so neither side gets all the "early" or "late" physical
# memory: with one side allocated wholly before the other, 1M reads of the
# file created second ran 2-5 % faster here, whatever the server.
# Sets NSEG and INTERLEAVED.
NSEG=64
falloc_seg() { # FILE SEG: allocate segment SEG of NSEG of FILE
	local sz=$(($(stat -c %s "$1"))) seg off len
	seg=$((sz / NSEG / 4096 * 4096))
	[ "$seg" -gt 0 ] || { [ "$2" = 0 ] && fallocate -l "$sz" "$1"; return; }
	off=$(($2 * seg)) len=$seg
	[ "$2" = $((NSEG - 1)) ] && len=$((sz - off))
	fallocate -o "$off" -l "$len" "$1"
}
create_backing() {
	local f k files
	SHMFILES+=("${A_FILES[@]}" "${B_FILES[@]}")
	for f in "${A_FILES[@]}"; do
		truncate -s "$FILE_SIZE_A" "$f" || die "cannot create $f"
	done
	for f in "${B_FILES[@]}"; do
		truncate -s "$FILE_SIZE_B" "$f" || die "cannot create $f"
	done
	INTERLEAVED=yes
	for k in $(seq 0 $((NSEG - 1))); do
		if [ $((k % 2)) = 0 ]; then files=("${A_FILES[@]}" "${B_FILES[@]}"); else files=("${B_FILES[@]}" "${A_FILES[@]}"); fi
		for f in "${files[@]}"; do falloc_seg "$f" "$k" 2>/dev/null || INTERLEAVED="no (fallocate failed)"; done
	done
}

# check_plugin PLUGIN: nbdkit can load it (writes dump-plugin.txt).
check_plugin() {
	nbdkit "$1" --dump-plugin >"$OUT/dump-plugin.txt" 2>&1 ||
		die "nbdkit cannot load $1: $(tail -n 3 "$OUT/dump-plugin.txt")"
}

# check_sizes: each export has the size SIZES[t] says.
check_sizes() {
	local t s
	for t in "$A" "$B"; do
		s=$(timeout 20 nbdinfo --size "${URIS[$t]}") || die "nbdinfo failed on $t"
		[ "$s" = "${SIZES[$t]}" ] || die "export $t is $s bytes, expected ${SIZES[$t]}"
	done
}

# prefill: through each server, every byte written once, 1M sequential, QD8,
# so that no read reads a hole (fio's buffers are not zero).  Sets PREFILL_MBS.
prefill() {
	local t w
	for t in "$A" "$B"; do
		fio_section prefill "${URIS[$t]}" "$OUT/json/prefill-$t.json" ||
			die "prefill of $t failed (see $ERRLOG)"
		w=$(jq -r '.jobs[0].write.io_bytes' "$OUT/json/prefill-$t.json")
		[ "$w" = "${SIZES[$t]}" ] || die "prefill of $t wrote $w bytes, expected ${SIZES[$t]}"
	done
	PREFILL_MBS=$(for t in "$A" "$B"; do
		jq -r --arg t "$t" '"\($t) \(.jobs[0].write.bw_bytes / 1e6 | floor) MB/s"' "$OUT/json/prefill-$t.json"
	done | paste -sd, - | sed 's/,/, /')
}

# machine_facts: sets IDLE_BUSY (CPU busy over 2 s, servers idle) and REV.
machine_facts() {
	local h0 i0 h1 i1
	read -r h0 i0 _ < <(host_stat)
	sleep 2
	read -r h1 i1 _ < <(host_stat)
	IDLE_BUSY=$(awk -v b=$(((h1 - h0) - (i1 - i0))) -v t=$((h1 - h0)) -v n="$NCPU" \
		'BEGIN { printf "%.0f", b / t * n * 100 }')
	REV=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo "no commit")
	[ -n "$(git -C "$HERE/.." status --porcelain 2>/dev/null | head -n 1)" ] && REV="$REV (dirty tree)"
}

# The report's fact lines, before and after the caller's own (plugin, A, B).
facts_head() {
	echo "- date: $(date -u +%FT%TZ)"
	echo "- host: nproc=$NCPU, kernel $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
	echo "- load before the runs: $(cut -d' ' -f1-3 /proc/loadavg); CPU busy over 2 s with the servers idle: $IDLE_BUSY % of $((NCPU * 100)) %"
	echo "- software: $(nbdkit --version | head -n 1), $(fio --version), $(nbdinfo --version 2>/dev/null | head -n 1)"
	echo "- tree: $REV"
}
# facts_tail PREFILL_WHAT: PREFILL_WHAT is "all N bytes" or the like.
facts_tail() {
	echo "- nbdkit options for both: ${NBDKIT_ARGS:-(none: default threads)}; no filters"
	echo "- fio: bench/fio/nbd.fio, ioengine=nbd over a unix socket, ${RT} s + ${RAMP} s ramp, time_based, norandommap, randrepeat=0, iomem_align=4096"
	echo "- $REPS repetitions; per repetition and pattern A and B run back to back, A first on odd repetitions"
	echo "- noise: a run is noisy when other processes used more than $NOISE % of one core during it; a noisy pair is re-run up to $RETRIES times and the quietest attempt is kept"
	echo "- backing pages: A's and B's tmpfs files allocated in turn, 1/$NSEG at a time (fallocate): $INTERLEAVED"
	echo "- prefill: fio 1M sequential write QD8 of $1 through each server (bench/fio/nbd.fio [prefill]): $PREFILL_MBS"
}

# measure: every repetition and pattern, A and B back to back, into the CSV.
measure() {
	local rep pat order
	echo "rep,pattern,target,pos,iops,mbps,lat_us,fio_cpu_pct,srv_cpu_pct,host_busy_pct,steal_pct,other_cpu_pct,fio_rc,attempt,used,noisy" >"$CSV"
	for rep in $(seq "$REPS"); do
		if [ $((rep % 2)) = 1 ]; then order="$A $B"; else order="$B $A"; fi
		for pat in $PATTERNS; do
			run_pair "$rep" "$pat" "$order"
		done
	done
}

# summarise B_COL A_COL RATIO_COL GOAL: the table into $OUT/table.md.
# Medians of the metric per side, and the median and range of the per-rep
# ratios A/B. The metric is IOPS for 4k patterns and MB/s for 1M patterns.
# GOAL is a minimum ratio for the "goal" column, or empty for no such column.
summarise() {
	awk -F, -v A="$A" -v B="$B" -v pats="$PATTERNS" -v bn="$1" -v an="$2" -v rn="$3" -v goal="$4" '
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
	label["rr4k_qd8"] = "4k randread QD8";   label["rw4k_qd8"] = "4k randwrite QD8"
	label["sr1m_qd8"] = "1M read QD8";       label["sw1m_qd8"] = "1M write QD8"
	label["sw1536k_qd8"] = "1.5M write QD8"; label["sw4k_qd1"] = "4k write QD1"
}
NR > 1 {
	if ($1 > reps) reps = $1
	if ($14 > 0 && $3 == A) retried[$2]++
	if ($15 != 1) next
	col = ($2 ~ /^s/) ? 6 : 5  # sequential: MB/s; random: IOPS
	if ($col != "NA") v[$2, $3, $1] = $col
	if ($3 == A && $16 == 1) noisy[$2]++
}
END {
	if (goal != "") {
		printf "| pattern | %s | %s | %s (median of per-rep) | min–max ratio | goal ≥ %s | noisy pairs (re-runs) |\n", bn, an, rn, goal
		print "|---|---:|---:|---:|---:|---|---:|"
	} else {
		printf "| pattern | %s | %s | %s (median of per-rep) | min–max ratio | noisy pairs (re-runs) |\n", bn, an, rn
		print "|---|---:|---:|---:|---:|---:|"
	}
	np = split(pats, P, " ")
	for (k = 1; k <= np; k++) {
		p = P[k]; unit = (p ~ /^s/) ? "MB/s" : "IOPS"
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
		ok = (mr == "NA") ? "no data" : (mr >= goal + 0 ? "ok" : "**below**")
		printf "| %s | %s | %s | %s | %s | ", label[p] != "" ? label[p] : p, fmt(mb, unit), fmt(ma, unit),
			mr == "NA" ? "NA" : sprintf("%.2f", mr),
			nr == 0 ? "NA" : sprintf("%.2f–%.2f", lo, hi) (nr < reps ? sprintf(" (%d of %d reps)", nr, reps) : "")
		if (goal != "") printf "%s | ", ok
		printf "%d/%d (%d) |\n", noisy[p], reps, retried[p]
	}
}' "$CSV" >"$OUT/table.md"
}

# finish: the table into the report and onto stdout.
finish() {
	{
		cat "$OUT/table.md"
		echo
		echo "Raw: $CSV (one row per fio run), fio JSON in $OUT/json/, server logs in $OUT/."
	} >>"$REPORT"
	echo
	cat "$OUT/table.md"
	echo
	echo "report: $REPORT"
}

# --- profiling (bench/raid-vs-raid.sh --profile) --------------------------------
#
# profile_one PATTERN TARGET: one extra fio run of PATTERN against TARGET
# (RT seconds, no ramp), outside the measured repetitions, under
#   perf stat -p <server> -e syscalls:sys_enter_{preadv2,pwritev2,pread64,
#        pwrite64,io_uring_enter,futex},context-switches   (member I/O calls
#        of the server; futex calls and context switches show its waiting)
#   perf record -a -g -e cpu-clock -F 999   (all CPUs; split by pid later)
# and /proc/<server>/io before and after. Files: $OUT/profile/PATTERN-TARGET.*
# Appends one line to $OUT/profile/profile.tsv.
PROFILE_EVENTS="syscalls:sys_enter_preadv2,syscalls:sys_enter_pwritev2,syscalls:sys_enter_pread64,syscalls:sys_enter_pwrite64,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_futex,context-switches"
profile_one() {
	local pat=$1 tgt=$2 pid base p0 p1 t0 t1 r0 w0 r1 w1 h0 i0 h1 i1 rc cls srv host
	pid=${PIDS[$tgt]} base=$OUT/profile/$1-$2
	mkdir -p "$OUT/profile"
	read -r r0 w0 < <(awk '/^rchar/ { r = $2 } /^wchar/ { w = $2 } END { print r, w }' "/proc/$pid/io")
	p0=$(proc_ticks "$pid")
	read -r h0 i0 _ < <(host_stat)
	t0=$(date +%s%N)
	uri=${URIS[$tgt]} RUNTIME=$RT RAMP=0 timeout $((RT + 120)) \
		perf stat -x, -o "$base.syscalls.csv" -e "$PROFILE_EVENTS" -p "$pid" -- \
		perf record -q -a -g -e cpu-clock -F 999 -o "$base.perf.data" -- \
		fio --section="$pat" --output-format=json --output="$base.json" "$JOBFILE" >>"$ERRLOG" 2>&1
	rc=$?
	t1=$(date +%s%N)
	read -r h1 i1 _ < <(host_stat)
	p1=$(proc_ticks "$pid")
	read -r r1 w1 < <(awk '/^rchar/ { r = $2 } /^wchar/ { w = $2 } END { print r, w }' "/proc/$pid/io")
	if [ "$rc" -ne 0 ]; then
		log "profile of $pat on $tgt failed (rc=$rc; see $ERRLOG)"
		return 0
	fi
	timeout 300 perf script -i "$base.perf.data" --pid "$pid" -F comm,tid,ip,sym,dso 2>/dev/null |
		awk -f "$HERE/perf-classify.awk" >"$base.classes.tsv"
	timeout 300 perf report -i "$base.perf.data" --pid "$pid" --stdio --no-children \
		--percentage relative --sort dso,sym -g caller,0.5,callee --percent-limit 0.5 >"$base.report.txt" 2>/dev/null
	# One line: pattern, target, result, server CPU, member reads and writes
	# and io_uring_enter calls per request, member bytes read and written per
	# NBD byte, the class shares, context switches and futex calls per
	# request, other CPU.
	srv=$(awk -v d=$((p1 - p0)) -v hz="$HZ" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", d / hz / (ns / 1e9) * 100 }')
	host=$(awk -v b=$(((h1 - h0) - (i1 - i0))) -v t=$((h1 - h0)) -v n="$NCPU" \
		'BEGIN { if (t > 0) printf "%.0f", b / t * n * 100; else print 0 }')
	cls=$(awk -F'\t' '$1 == "C" { printf "%s=%s;", $4, $3 } $1 == "N" { printf "samples=%s;", $2 }' "$base.classes.tsv")
	jq -r --arg pat "$pat" --arg tgt "$tgt" --arg cls "$cls" \
		--argjson srv "$srv" --argjson host "$host" \
		--argjson dr $((r1 - r0)) --argjson dw $((w1 - w0)) \
		--slurpfile sc <(grep -v '^#' "$base.syscalls.csv" | awk -F, 'NF > 2 { printf "{\"%s\": %s}\n", $3, ($1 ~ /^[0-9]+$/) ? $1 : 0 }' | jq -s add) \
		'.jobs[0] as $j | ($j.read.total_ios + $j.write.total_ios) as $n |
		 ($j.read.io_bytes + $j.write.io_bytes) as $b | $sc[0] as $s |
		 (($s["syscalls:sys_enter_preadv2"] // 0) + ($s["syscalls:sys_enter_pread64"] // 0)) as $mr |
		 (($s["syscalls:sys_enter_pwritev2"] // 0) + ($s["syscalls:sys_enter_pwrite64"] // 0)) as $mw |
		 [ $pat, $tgt,
		   (if $pat | startswith("s") then "\(($j.read.bw_bytes + $j.write.bw_bytes) / 1e6 | round) MB/s"
		    else "\(($j.read.iops + $j.write.iops) / 100 | round / 10)k IOPS" end),
		   $srv,
		   ($mr / $n * 100 | round / 100), ($mw / $n * 100 | round / 100),
		   (($s["syscalls:sys_enter_io_uring_enter"] // 0) / $n * 100 | round / 100),
		   # rchar counts the socket read()s too: take off the NBD write
		   # payload and the 28-byte request headers. wchar: member writes
		   # only (replies go out with sendto, which wchar does not count).
		   (($dr - $j.write.io_bytes - 28 * $n) / $b * 100 | round / 100),
		   ($dw / $b * 100 | round / 100),
		   $cls,
		   (($s["context-switches"] // 0) / $n * 100 | round / 100),
		   (($s["syscalls:sys_enter_futex"] // 0) / $n * 100 | round / 100),
		   # everything but the server and fio (perf itself included)
		   ([$host - $srv - ($j.usr_cpu + $j.sys_cpu), 0] | max | round) ] | @tsv' "$base.json" >>"$OUT/profile/profile.tsv"
	log "profiled $pat on $tgt: $(tail -n 1 "$OUT/profile/profile.tsv" | cut -f3-9 | tr '\t' ' ')"
}

# profile_table: $OUT/profile/profile.tsv as a markdown table on stdout.
profile_table() {
	awk -F'\t' '
	function share(k,   v) { v = cls[k]; return v == "" ? "0" : v }
	{
		delete cls
		isal = loop = 0
		n = split($10, kv, ";")
		for (i = 1; i <= n; i++) if (kv[i] != "") {
			split(kv[i], p, "="); cls[p[1]] = p[2]
			if (p[1] ~ /^parity: ISA-L/) isal += p[2]
			if (p[1] ~ /^parity: plugin/) loop += p[2]
		}
		row[NR] = sprintf("| %s | %s | %s | %s %% | **%.1f %%** (%.1f / %.1f) | %s %% | %s %% | %s %% | %s %% | %s %% | %.1f %% | %s / %s | %s | %s / %s | %s / %s | %s %% | %s |",
			$1, $2, $3, $4, isal + loop, isal, loop,
			share("memcpy/memmove (libc, user space)"),
			share("page faults (first touch of fresh buffers)"),
			share("kernel: member I/O (tmpfs copies)"),
			share("kernel: NBD socket"),
			share("kernel: other (scheduler, futex, syscall entry)"),
			share("plugin: other code") + share("nbdkit core") + share("libc: other (locks, syscall stubs)") + share("other"),
			$5, $6, $7, $8, $9, $11, $12, $13 == "" ? "NA" : $13, share("samples"))
	}
	END {
		print "| pattern | side | result (under perf) | server CPU, % of a core | parity (ISA-L / plugin loop) | memcpy (user) | page faults | kernel: member I/O | kernel: NBD socket | kernel: other | plugin + nbdkit + libc other | member reads / writes per request | io_uring_enter per request | member bytes read / written per NBD byte | server context switches / futex calls per request | other CPU (noise), % of a core | samples |"
		print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= NR; i++) print row[i]
	}' "$OUT/profile/profile.tsv"
}

# --- one server at a time over 4 emulated disks -----------------------------
#
# bench/cache-quick.sh and bench/cache-log-fsync.sh: the caller sets PROG,
# HERE, PLUGIN, DISK_SIZE and the defaults of REPS, RT and OUT, then calls
# cb_args, cb_init, and cb_disks when it needs the disks; cb_serve and
# cb_unserve around each run.  cb_cleanup (the EXIT trap) stops what they
# started, by pid: the server (SRV), then the disks (DISKPIDS) once their
# mounts (MOUNTS) are gone, and removes FILES and RUN.

# cb_args [--NAME VAR]... -- ARGS...: --reps, --runtime, --out and each
# --NAME set REPS, RT, OUT and VAR from the next argument; -h prints the
# script's leading comment.
cb_args() {
	local -A var=([--reps]=REPS [--runtime]=RT [--out]=OUT)
	while [ "$1" != -- ]; do
		var[$1]=$2
		shift 2
	done
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
		*)
			[ -n "${var[$1]:-}" ] || { echo "$PROG: unknown option $1" >&2; exit 1; }
			printf -v "${var[$1]}" '%s' "$2"
			shift
			;;
		esac
		shift
	done
}

# cb_init OUT_NAME RUN_NAME: the checks, OUT (by default a new
# /tmp/nbdraid-OUT_NAME.XXXXXX) with json/ and logs/, RUN (a new
# /tmp/nbdraid-RUN_NAME.XXXXXX: sockets, pid files, mounts, fusedisk), the
# traps, fusedisk built.
cb_init() {
	local t
	T0=$(date +%s)
	[ -f "$PLUGIN" ] || die "no plugin at $PLUGIN"
	for t in nbdkit fio jq cc; do command -v $t >/dev/null || die "needs $t"; done
	OUT=${OUT:-$(mktemp -d "/tmp/nbdraid-$1.XXXXXX")}
	mkdir -p "$OUT/json" "$OUT/logs" || die "cannot create $OUT"
	RUN=$(mktemp -d "/tmp/nbdraid-$2.XXXXXX")
	SRV='' DISKPIDS=() MOUNTS=() FILES=() DISKS=()
	trap cb_cleanup EXIT
	trap 'exit 130' INT TERM
	cc -O2 -Wall -o "$RUN/fusedisk" "$HERE/classic/fusedisk.c" 2>"$OUT/logs/cc.log" ||
		die "cannot build fusedisk"
}

cb_cleanup() {
	local p m
	[ -n "$SRV" ] && kill -9 "$SRV" 2>/dev/null
	# Unmounting makes fusedisk exit on its own.
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m"; done
	for p in "${DISKPIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -f "${FILES[@]}"
	rm -rf "$RUN"
	echo "$PROG: results in $OUT" >&2
}

# cb_disks: 4 emulated disks of DISK_SIZE (bench/classic/fusedisk.c,
# counters in $RUN/dN.stats) mounted in RUN; their files into DISKS.
cb_disks() {
	local i mnt
	for i in 0 1 2 3; do
		mnt=$RUN/d$i
		mkdir -p "$mnt"
		"$RUN/fusedisk" --exit-with-parent --size "$DISK_SIZE" \
			--stats "$RUN/d$i.stats" --pidfile "$RUN/d$i.pid" "$mnt" \
			>>"$OUT/logs/fusedisk.log" 2>&1 &
		for _ in $(seq 50); do [ -s "$RUN/d$i.pid" ] && break; sleep 0.1; done
		[ -s "$RUN/d$i.pid" ] || die "emulated disk $i did not start"
		DISKPIDS+=("$(cat "$RUN/d$i.pid")") MOUNTS+=("$mnt")
		DISKS+=("$mnt/disk")
	done
}

# cb_serve "NAME..." [VAR=VALUE]... -- ARGS...: nbdkit ARGS (128 threads)
# on $RUN/sock, in an environment with VAR=VALUE, its output in
# $OUT/logs/nbdkit-NAME-....log; sets SRV and URI.
cb_serve() {
	local name=$1 log=$OUT/logs/nbdkit-${1// /-}.log env=()
	shift
	while [ "$1" != -- ]; do
		env+=("$1")
		shift
	done
	shift
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
	env "${env[@]}" nbdkit -f --exit-with-parent --threads 128 -U "$RUN/sock" -P "$RUN/pid" \
		"$@" >>"$log" 2>&1 &
	SRV=$!
	for _ in $(seq 300); do [ -S "$RUN/sock" ] && [ -s "$RUN/pid" ] && break; sleep 0.1; done
	[ -S "$RUN/sock" ] || die "server $name did not start: $(tail -3 "$log")"
	URI="nbd+unix:///?socket=$RUN/sock"
}

# cb_unserve SIGNAL: the server sent SIGNAL, given 120 s to end, then
# SIGKILL.  (Quiet: no "Killed" line from bash when it reaps it.)
cb_unserve() {
	{
		kill -"$1" "$SRV"
		for _ in $(seq 1200); do kill -0 "$SRV" || break; sleep 0.1; done
		kill -9 "$SRV"
		wait "$SRV"
	} 2>/dev/null
	SRV=''
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
}

# cb_fio JSON ARGS...: one fio job (ARGS) over NBD at URI, its results in
# JSON, its chatter in $OUT/logs/fio.err.
cb_fio() {
	local js=$1
	shift
	fio --name=x --ioengine=nbd --uri="$URI" "$@" --iomem_align=4096 \
		--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1
}
