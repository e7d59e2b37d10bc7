# shellcheck shell=bash
# bench/classic/lib.sh: the machinery of bench/run (the classic RAID
# studies): emulated disks, tmpfs members, nbdraid servers, fio runs and the
# raw CSV.  Sourced by bench/run; see bench/classic/README.md.
#
# Globals the caller sets before cl_init: OUT (results folder), QUICK (0/1),
# REPS, RT, RAMP (seconds, may be fractional), PLUGIN_SRC, MEDIA.
#
# Every process started here is recorded by pid and stopped by pid in
# cl_cleanup (the EXIT trap), FUSE mounts are unmounted, and the sockets
# nbdkit 1.32 leaves behind are removed.

# bench/lib.sh gives to_bytes, need_tools, proc_ticks, host_stat.  Its die,
# log and cleanup are redefined below.
# shellcheck source=../lib.sh
. "$CLASSIC/../lib.sh"

die() { echo "bench/run: $*" >&2; exit 1; }
log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

# The emulated disk: a spindle.  Stated in the report.
DISK_ACCESS=${DISK_ACCESS:-5ms}  # access time of a non-sequential request
DISK_MBPS=${DISK_MBPS:-100}      # bandwidth, MB/s (10^6 bytes/s)
DISK_SLOTS=${DISK_SLOTS:-1}      # requests served at once
DISK_SIZE=${DISK_SIZE:-1G}       # per member (all of it backed by memory)
TMPFS_SIZE=${TMPFS_SIZE:-512M}   # per tmpfs member
NMEMBERS=4                       # the pool: every study uses members 0..N-1
# nbdkit serves at most --threads requests of a connection at once (the
# plugin is PARALLEL and synchronous): at the default 16, fio's QD32 and
# QD128 would reach the array as QD16.  Above the deepest queue used.
NBDKIT_THREADS=${NBDKIT_THREADS:-128}

# cl_init: folders, the private plugin copy, fusedisk built, traps.
cl_init() {
	T0=$(date +%s)
	mkdir -p "$OUT/json" "$OUT/logs" || die "cannot create $OUT"
	OUT=$(cd "$OUT" && pwd)
	# Sockets, pid files and mount points: a short private folder
	# (sun_path is 108 bytes).
	RUN=$(mktemp -d /tmp/nbdraid-classic.XXXXXX) || die "mktemp failed"
	SHM=/dev/shm/nbdraid-classic.$$
	# Members left by a run that was killed outright (SIGKILL: no
	# cleanup): named by its pid, removed once that pid is gone.
	local f p
	for f in /dev/shm/nbdraid-classic.*.m*.img; do
		[ -e "$f" ] || continue
		p=${f#/dev/shm/nbdraid-classic.}
		p=${p%%.*}
		kill -0 "$p" 2>/dev/null || rm -f "$f"
	done
	CSV=$OUT/results.csv
	COUNTS=$OUT/counts.csv
	CALIB=$OUT/calibration.csv
	NCPU=$(nproc)
	HZ=$(getconf CLK_TCK)
	SRVPIDS=() WRAPPERS=() DISKPIDS=() MOUNTS=() SHMFILES=() LOADPIDS=()
	trap cl_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	# One private copy of the plugin: a rebuild in the tree during the
	# run changes nothing.
	PLUGIN=$RUN/nbdkit-raid-plugin.so
	cp "$PLUGIN_SRC" "$PLUGIN" || die "cannot copy $PLUGIN_SRC"
	nbdkit "$PLUGIN" --dump-plugin >"$OUT/logs/dump-plugin.txt" 2>&1 ||
		die "nbdkit cannot load $PLUGIN_SRC: $(tail -n 3 "$OUT/logs/dump-plugin.txt")"
	FUSEDISK=$RUN/fusedisk
	cc -O2 -Wall -o "$FUSEDISK" "$CLASSIC/fusedisk.c" 2>"$OUT/logs/fusedisk-build.log" ||
		die "cannot build fusedisk (see $OUT/logs/fusedisk-build.log)"
	echo "study,medium,rep,config,level,members,chunk,pattern,kind,bs,qd,iops,mbps,lat_us,m_reads,m_writes,m_rbytes,m_wbytes,m_seeks,m_busy_s,wall_s,runtime_s,ramp_s,srv_cpu,host_cpu,fio_rc" >"$CSV"
	echo "study,medium,config,pattern,client_ios,client_reads,client_writes,m_reads,m_writes,m_rbytes,m_wbytes" >"$COUNTS"
}

cl_cleanup() {
	local p m
	trap - EXIT
	for p in "${LOADPIDS[@]}"; do stop_pid "$p" fio; done
	for p in "${SRVPIDS[@]}"; do stop_pid "$p" nbdkit; done
	# Unmounting makes fusedisk (and nbdfuse) exit on their own.
	for m in "${MOUNTS[@]}"; do
		mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; }
	done
	for p in "${DISKPIDS[@]}"; do stop_pid "$p" fusedisk; stop_pid "$p" nbdfuse; done
	for p in "${WRAPPERS[@]}"; do stop_pid "$p" timeout; done
	rm -f "${SHMFILES[@]}"
	rm -rf --one-file-system "$RUN"
	[ -n "${OUT:-}" ] && echo "bench/run: results in $OUT" >&2
}

# wait_file FILE SECONDS: until FILE exists and is not empty.
wait_file() {
	local i
	for i in $(seq $(($2 * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- members -------------------------------------------------------------------

# start_disks: the pool of emulated disks, DISKS[0..3] (files) and
# DSTATS[0..3] (their counters).  Lives for the whole run.
start_disks() {
	local i mnt pidf
	DISKS=() DSTATS=()
	for i in $(seq 0 $((NMEMBERS - 1))); do
		mnt=$RUN/d$i.mnt pidf=$RUN/d$i.pid
		mkdir -p "$mnt"
		# --exit-with-parent: if bench/run dies without its cleanup, the
		# disks unmount themselves (no wrapper between: we are the parent).
		# --populate: backed by memory before the runs, so that no
		# write pays a first-touch page fault (fusedisk.c).
		"$FUSEDISK" --exit-with-parent --populate --size "$DISK_SIZE" --access "$DISK_ACCESS" \
			--mbps "$DISK_MBPS" --slots "$DISK_SLOTS" --stats "$RUN/d$i.stats" \
			--pidfile "$pidf" "$mnt" >>"$OUT/logs/fusedisk-$i.log" 2>&1 &
		wait_file "$pidf" 60 || die "emulated disk $i did not start (log: $OUT/logs/fusedisk-$i.log)"
		DISKPIDS+=("$(cat "$pidf")")
		MOUNTS+=("$mnt")
		DISKS+=("$mnt/disk") DSTATS+=("$RUN/d$i.stats")
	done
	log "emulated disks up: ${DISKS[*]}"
}

# make_tmpfs: TMPFS[0..3], tmpfs files written once in full, so reads copy
# pages rather than read holes, and writes overwrite: a first write into a
# page that fallocate only reserved ran at half speed here (1M writes to
# RAID 0 over 4 fresh members: 0.49x of one written member).
make_tmpfs() {
	local i f
	TMPFS=()
	for i in $(seq 0 $((NMEMBERS - 1))); do
		f=$SHM.m$i.img
		SHMFILES+=("$f")
		dd if=/dev/zero of="$f" bs=1M count=$(($(to_bytes "$TMPFS_SIZE") / 1048576)) \
			status=none 2>>"$OUT/logs/dd.log" || die "cannot create $f (tmpfs full?)"
		TMPFS+=("$f")
	done
}

# --- servers -------------------------------------------------------------------

# start_server NAME nbdkit-args...: sets URI, SRVPID, SOCK.
start_server() {
	local name=$1 pidf i
	shift
	SOCK=$RUN/$name.sock pidf=$RUN/$name.pid
	rm -f "$SOCK" "$pidf" # nbdkit 1.32 leaves its socket behind
	echo "nbdkit -f --exit-with-parent --threads $NBDKIT_THREADS -U $SOCK $*" >>"$OUT/logs/servers.txt"
	# No timeout wrapper: nbdkit's parent is this shell, so
	# --exit-with-parent ends it if bench/run dies without cleaning up.
	nbdkit -f --exit-with-parent --threads "$NBDKIT_THREADS" -U "$SOCK" -P "$pidf" "$@" \
		>>"$OUT/logs/nbdkit-$name.log" 2>&1 &
	SRVPID=$!
	SRVPIDS+=("$SRVPID")
	for i in $(seq 100); do
		[ -s "$pidf" ] && [ -S "$SOCK" ] && break
		kill -0 "$!" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$pidf" ] && [ "$(cat "$pidf")" = "$SRVPID" ] || {
		tail -n 20 "$OUT/logs/nbdkit-$name.log" >&2
		die "server $name did not start (log: $OUT/logs/nbdkit-$name.log)"
	}
	URI="nbd+unix:///?socket=$SOCK"
}

# stop_server: stop and reap the server, and forget its pid (pids wrap
# quickly over a full run: a stale pid must never be signalled at exit).
stop_server() {
	local p keep=()
	stop_pid "$SRVPID" nbdkit
	wait "$SRVPID" 2>/dev/null
	for p in "${SRVPIDS[@]}"; do [ "$p" != "$SRVPID" ] && keep+=("$p"); done
	SRVPIDS=("${keep[@]}")
	rm -f "$SOCK" "$RUN/$(basename "$SOCK" .sock).pid"
}

# config_parse CONFIG: "1disk" (nbdraid level=0 over one member, the
# baseline) or "L x N [-cCHUNK] [-mROLE] [-CCACHE]" as "0x4-c64K", "5x4",
# "1x2", "5x4-m3" (RAID 5 over 4 with role 3 given as member=missing: the
# array runs degraded from the start), "5x4-Cram" (study 8: cache=ram; also
# log, and filter: nbdkit's cache filter in front).  Sets LEVEL, NMEM,
# CHUNK, MISSING (a role, or empty), CACHE (none, ram, log, filter).
config_parse() {
	local c=$1 part
	CHUNK=$DEFAULT_CHUNK MISSING='' CACHE=none
	case $c in
	1disk) LEVEL=0 NMEM=1 ;;
	*x*)
		LEVEL=${c%%x*}
		c=${c#*x}
		NMEM=${c%%-*}
		c=${c#"$NMEM"}
		while [ -n "$c" ]; do
			c=${c#-}
			part=${c%%-*}
			c=${c#"$part"}
			case $part in
			c?*) CHUNK=${part#c} ;;
			m[0-9]*) MISSING=${part#m} ;;
			Cram | Clog | Cfilter) CACHE=${part#C} ;;
			*) die "bad config '$1'" ;;
			esac
		done
		;;
	*) die "bad config '$1'" ;;
	esac
	case $NMEM$MISSING in *[!0-9]*) die "bad config '$1'" ;; esac
	[ -z "$MISSING" ] || [ "$MISSING" -lt "$NMEM" ] || die "bad config '$1': no role $MISSING"
}

# start_array MEDIUM CONFIG: an nbdraid server over the first members of
# the medium's pool; a MISSING role gets member=missing (raw mode: the
# array starts degraded, and reads around and writes without that role
# exactly as after the member failed), and its disk is not counted.  Sets
# URI, SRVPID, ARRAY_STATS (stats files).
start_array() {
	local medium=$1 i members=() args=()
	config_parse "$2"
	ARRAY_STATS=()
	for i in $(seq 0 $((NMEM - 1))); do
		if [ "$i" = "$MISSING" ]; then
			members+=(member=missing)
		elif [ "$medium" = tmpfs ]; then
			members+=("member=${TMPFS[i]}")
		else
			members+=("member=${DISKS[i]}")
			ARRAY_STATS+=("${DSTATS[i]}")
		fi
	done
	# Emulated disks: O_DIRECT, as for real disks, and because nbdkit's
	# buffers are not page aligned: a 1M unaligned request spans 257
	# pages, more than FUSE takes in one request (256), and would reach
	# the disk as two.  The bounce buffers of direct=true are aligned.
	[ "$medium" != tmpfs ] && args+=(direct=true)
	start_server "$medium-$2" "$PLUGIN" level="$LEVEL" chunk="$CHUNK" "${members[@]}" "${args[@]}"
}

# --- fio -----------------------------------------------------------------------

# pattern_parse PATTERN: "KIND:BS:QD", KIND one of read write randread
# randwrite, or the mixed desktop/server patterns (PassMark's):
#   db  database     90 % random, 90 % read, 2K,  QD128 (bench/run: 4K)
#   fs  file server 100 % random, 80 % read, 16K, QD128
#   ws  workstation  80 % random, 70 % read, 16K, QD1
# (db, fs, ws take their BS and QD from the pattern string too), and for
# study 8: fsync, random writes with a FLUSH after each (a database's
# fsync); writeflush and copy are fixed amounts, run by s8-cache.sh.
# Sets FIO_ARGS, KIND, BS, QD.
pattern_parse() {
	IFS=: read -r KIND BS QD <<<"$1"
	[ -n "$KIND" ] && [ -n "$BS" ] && [ -n "$QD" ] || die "bad pattern '$1' (want KIND:BS:QD)"
	FIO_ARGS=(--bs="$BS" --iodepth="$QD")
	case $KIND in
	read | write | randread | randwrite) FIO_ARGS+=(--rw="$KIND") ;;
	db) FIO_ARGS+=(--rw=randrw --rwmixread=90 --percentage_random=90) ;;
	fs) FIO_ARGS+=(--rw=randrw --rwmixread=80) ;;
	ws) FIO_ARGS+=(--rw=randrw --rwmixread=70 --percentage_random=80) ;;
	fsync) FIO_ARGS+=(--rw=randwrite --fsync=1) ;;
	writeflush | copy) ;;
	*) die "bad pattern kind '$KIND' in '$1'" ;;
	esac
}

# stats_sum FILE...: the 8 counters of fusedisk, summed over the files.
stats_sum() {
	[ $# -eq 0 ] && { echo "0 0 0 0 0 0 0 0"; return; }
	od -An -v -t u8 -w64 "$@" | awk '{ for (i = 1; i <= 8; i++) a[i] += $i }
		END { for (i = 1; i <= 8; i++) printf "%.0f ", a[i]; print "" }'
}

# fio_metrics JSON: "IOPS,MB/s,latency µs" of one fio run, or nothing.
# IOPS is bytes / BS, not fio's own iops, which leaves out the I/Os in
# flight when the ramp ends (up to QD of them: 4 % of a 1 s QD8 run on a
# 5 ms disk), while its byte count includes them.  Latency: the mean
# completion latency over reads and writes.
fio_metrics() {
	jq -r --argjson bs "$(to_bytes "$BS")" '.jobs[0] | select(.error == 0) |
		[ (.read.bw_bytes + .write.bw_bytes) / $bs,
		  (.read.bw_bytes + .write.bw_bytes) / 1e6,
		  ((.read.lat_ns.mean * .read.total_ios + .write.lat_ns.mean * .write.total_ios)
		   / ([.read.total_ios + .write.total_ios, 1] | max) / 1000) ]
		| map(. * 100 | round / 100) | join(",")' "$1" 2>/dev/null
}

# run_pattern STUDY MEDIUM REP CONFIG PATTERN: one measured fio run against
# the array that start_array started; one row into results.csv.
run_pattern() {
	local study=$1 medium=$2 rep=$3 cfg=$4 pat=$5 js ramp s0 s1 p0 p1 h0 i0 h1 i1 t0 t1 rc m d srv host
	pattern_parse "$pat"
	js=$OUT/json/$study-$medium-r$rep-$cfg-${pat//:/_}.json
	ramp=$RAMP
	# A deep queue on a 5 ms disk takes QD x 5 ms to fill: ramp at least 1 s.
	[ "$QD" -ge 32 ] && [ "$medium" != tmpfs ] && ramp=$(awk -v r="$RAMP" 'BEGIN { print (r < 1 ? 1 : r) }')
	# A study may ask for more (RAMP_MIN: study 8 on tmpfs, fresh servers).
	[ -n "${RAMP_MIN:-}" ] && ramp=$(awk -v r="$ramp" -v m="$RAMP_MIN" 'BEGIN { print (r < m ? m : r) }')
	read -r -a s0 < <(stats_sum "${ARRAY_STATS[@]}")
	p0=$(proc_ticks "$SRVPID")
	read -r h0 i0 _ < <(host_stat)
	t0=$(date +%s%N)
	timeout "$(awk -v a="$RT" -v b="$ramp" 'BEGIN { printf "%d", a + b + 60 }')" \
		fio --name="${pat//:/_}" --ioengine=nbd --uri="$URI" "${FIO_ARGS[@]}" \
		--time_based --runtime="$(ms "$RT")" --ramp_time="$(ms "$ramp")" \
		--norandommap --randrepeat=0 --iomem_align=4096 \
		--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1
	rc=$?
	t1=$(date +%s%N)
	read -r h1 i1 _ < <(host_stat)
	p1=$(proc_ticks "$SRVPID")
	read -r -a s1 < <(stats_sum "${ARRAY_STATS[@]}")
	m=$(fio_metrics "$js")
	if [ "$rc" -ne 0 ] || [ -z "$m" ]; then
		log "FAILED: $study $medium $cfg $pat rep $rep (fio rc=$rc; see $OUT/logs/fio.err)"
		m="NA,NA,NA"
	fi
	d=$(awk -v a="${s0[*]}" -v b="${s1[*]}" 'BEGIN { split(a, x); split(b, y)
		printf "%d,%d,%d,%d,%d,%.3f", y[1]-x[1], y[2]-x[2], y[3]-x[3], y[4]-x[4], y[5]-x[5], (y[6]-x[6]) / 1e9 }')
	srv=$(awk -v d=$((p1 - p0)) -v hz="$HZ" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", d / hz / (ns / 1e9) * 100 }')
	host=$(awk -v b=$(((h1 - h0) - (i1 - i0))) -v t=$((h1 - h0)) -v n="$NCPU" \
		'BEGIN { if (t > 0) printf "%.0f", b / t * n * 100; else print "NA" }')
	echo "$study,$medium,$rep,$cfg,$LEVEL,$NMEM,$CHUNK,$pat,$KIND,$BS,$QD,$m,$d,$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.2f", n / 1e9 }'),$RT,$ramp,$srv,$host,$rc" >>"$CSV"
	log "$study $medium rep $rep $cfg $pat: $(cut -d, -f1,2 <<<"$m" | sed 's/,/ IOPS, /') MB/s"
	kill -0 "$SRVPID" 2>/dev/null || {
		tail -n 20 "$OUT/logs/nbdkit-$medium-$cfg.log" >&2
		die "server $cfg (pid $SRVPID) died"
	}
}

# count_pattern STUDY MEDIUM CONFIG PATTERN N: a run of exactly N client
# I/Os (no ramp) on emulated disks; the member I/Os it caused, exactly,
# into counts.csv.
count_pattern() {
	local study=$1 medium=$2 cfg=$3 pat=$4 n=$5 js s0 s1 c
	pattern_parse "$pat"
	js=$OUT/json/count-$study-$medium-$cfg-${pat//:/_}.json
	read -r -a s0 < <(stats_sum "${ARRAY_STATS[@]}")
	timeout 300 fio --name=count --ioengine=nbd --uri="$URI" "${FIO_ARGS[@]}" \
		--number_ios="$n" --norandommap --randrepeat=0 --iomem_align=4096 \
		--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1 ||
		{ log "FAILED: count run $cfg $pat"; return 0; }
	read -r -a s1 < <(stats_sum "${ARRAY_STATS[@]}")
	c=$(jq -r '.jobs[0] | "\(.read.total_ios + .write.total_ios),\(.read.total_ios),\(.write.total_ios)"' "$js")
	echo "$study,$medium,$cfg,$pat,$c,$((s1[0] - s0[0])),$((s1[1] - s0[1])),$((s1[2] - s0[2])),$((s1[3] - s0[3]))" >>"$COUNTS"
}

# count_n PATTERN: how many client I/Os a count run makes (a few seconds
# on the emulated disks).
count_n() {
	case $1 in *:4k:* | *:2k:* | *:16k:*) echo 256 ;; *) echo 48 ;; esac
}

# ms SECONDS: fio time value in milliseconds (fractional seconds allowed).
ms() { awk -v s="$1" 'BEGIN { printf "%dms", s * 1000 }'; }

# start_configs MEDIUM "CONFIGS": the configurations a grid measures.
# use_config CONFIG serves one of them, stopping the one served before:
# one server at a time, because the configurations share the members and
# nbdraid claims its members (an OFD write lock on each file), so a second
# server on the same files is refused.  It points URI, SRVPID, SOCK,
# ARRAY_STATS, LEVEL, NMEM, CHUNK and MISSING at the one served;
# stop_configs stops it.  A server starts in a fraction of a second, in no
# measured time (every run has its ramp).
start_configs() {
	CFG_MEDIUM=$1 CFG_ON=
}
use_config() {
	[ "$CFG_ON" = "$1" ] && return 0
	stop_configs
	start_array "$CFG_MEDIUM" "$1"
	CFG_ON=$1
}
stop_configs() {
	if [ -n "${CFG_ON:-}" ]; then stop_server; fi
	CFG_ON=
}

# run_grid STUDY MEDIUM "CONFIGS" "PATTERNS" ["NOT FOR 1disk"]: every
# repetition, every pattern, every config back to back (in reverse order on
# even repetitions, so drift hits all alike): each ratio compares runs a few
# seconds apart.  The baseline (1disk) is one of the configs: every ratio
# is to a baseline measured in the same repetition.  Patterns in the fifth
# argument are not run on the baseline (the report compares them with
# another of its patterns).
run_grid() {
	local study=$1 medium=$2 cfgs=$3 pats=$4 skip=" ${5:-} " rep cfg pat order
	start_configs "$medium" "$cfgs"
	for rep in $(seq "$REPS"); do
		order=$cfgs
		[ $((rep % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$cfgs" | tac | tr '\n' ' ')
		for pat in $pats; do
			for cfg in $order; do
				[ "$cfg" = 1disk ] && [[ $skip == *" $pat "* ]] && continue
				use_config "$cfg"
				run_pattern "$study" "$medium" "$rep" "$cfg" "$pat"
			done
		done
	done
	stop_configs
}
