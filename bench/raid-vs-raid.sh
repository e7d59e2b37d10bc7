#!/usr/bin/env bash
# raid-vs-raid.sh: one nbdraid array against another, measured through NBD.
#
# Runs fio's nbd engine against two nbdkit-raid-plugin arrays, A and B, each
# over its own tmpfs member files, all members of the same size, with the
# same nbdkit options, in one run. The machinery is bench/nbd-vs-file.sh's
# (bench/lib.sh): prefill, A and B back to back per repetition and pattern
# (A first on odd repetitions), noisy pairs re-run. The figure to quote is
# the ratio A/B; see bench/README.md.
#
#   bench/raid-vs-raid.sh --a 5x4 --b 0x3 --patterns "sw1m_qd8 sr1m_qd8"
#   bench/raid-vs-raid.sh --a 5x4 --b 0x4 --patterns "rw4k_qd8 rr4k_qd8"
#
# Usage: bench/raid-vs-raid.sh [options]
#   --a LxN            side A: RAID level L over N members (5x4)
#   --b LxN            side B (0x3)
#   --a-args STR       extra plugin key=value words for A only, e.g. "layout=ra"
#   --b-args STR       the same for B
#   --raid-args STR    extra plugin key=value words for both, e.g. "io=psync";
#                      env RAID_ARGS
#   --member-size SIZE size of every member file (256M); env MEMBER_SIZE
#   --chunk SIZE       chunk of both arrays (512K); env CHUNK
#   --reps N           repetitions (5)
#   --runtime S        measured seconds per fio run (5)
#   --ramp S           ramp seconds per fio run, not counted (1)
#   --out DIR          results folder (default: a new /tmp/nbdraid-bench.XXXXXX)
#   --nbdkit-args STR  extra nbdkit options for BOTH servers; env NBDKIT_ARGS
#   --plugin PATH      the plugin (build/plugin/nbdkit-raid-plugin.so); env PLUGIN
#   --b-plugin PATH    side B's plugin (default: --plugin): one build against
#                      another, e.g. --a 5x4 --b 5x4 --b-plugin old.so
#   --patterns LIST    fio sections of bench/fio/nbd.fio
#                      ("sw1m_qd8 sr1m_qd8 rw4k_qd8 rr4k_qd8")
#   --noise PCT        a run is noisy when other processes used more than PCT %
#                      of one core during it (25); env NOISE
#   --retries N        re-run a noisy A/B pair up to N times, keep the quietest (2)
#   --profile LIST     after the measurement, one more run of each of these
#                      patterns per side under perf (where the server's CPU
#                      goes: parity, memcpy, ...; member I/O calls per
#                      request). Needs perf. E.g. "sw1m_qd8 rw4k_qd8"
#   env BENCH_DIR      folder of the member files (/dev/shm)
#
# Needs nbdkit, fio (nbd engine), nbdinfo, jq, awk, timeout; perf for
# --profile. No root for the measurement; --profile needs perf events
# (root, or kernel.perf_event_paranoid <= -1 for the syscall counts).

set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
JOBFILE=$HERE/fio/nbd.fio
ALL_PATTERNS="rr4k_qd1 rr4k_qd4 rr4k_qd8 rr4k_qd32 rw4k_qd1 rw4k_qd8 rw4k_qd32 sr1m_qd8 sw1m_qd8 sw1536k_qd8 sw4k_qd1"

REPS=5 RT=5 RAMP=1 OUT='' RETRIES=2
NOISE=${NOISE:-25}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
CHUNK=${CHUNK:-512K}
RAID_ARGS=${RAID_ARGS:-}
NBDKIT_ARGS=${NBDKIT_ARGS:-}
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
PLUGIN_B=
PATTERNS="sw1m_qd8 sr1m_qd8 rw4k_qd8 rr4k_qd8"
SPEC_A=5x4 SPEC_B=0x3 A_ARGS='' B_ARGS='' PROFILE=''
PROG=raid-vs-raid
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"

usage() { sed -n '2,/^# Needs/s/^# \{0,1\}//p' "$0"; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
	case $1 in
	--a) SPEC_A=${2:?}; shift ;;
	--b) SPEC_B=${2:?}; shift ;;
	--a-args) A_ARGS=${2?}; shift ;;
	--b-args) B_ARGS=${2?}; shift ;;
	--raid-args) RAID_ARGS=${2?}; shift ;;
	--member-size) MEMBER_SIZE=${2:?}; shift ;;
	--chunk) CHUNK=${2:?}; shift ;;
	--reps) REPS=${2:?}; shift ;;
	--runtime) RT=${2:?}; shift ;;
	--ramp) RAMP=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	--nbdkit-args) NBDKIT_ARGS=${2?}; shift ;;
	--plugin) PLUGIN=${2:?}; shift ;;
	--b-plugin) PLUGIN_B=${2:?}; shift ;;
	--patterns) PATTERNS=${2:?}; shift ;;
	--noise) NOISE=${2:?}; shift ;;
	--retries) RETRIES=${2:?}; shift ;;
	--profile) PROFILE=${2?}; shift ;;
	-h | --help) usage 0 ;;
	*) echo "raid-vs-raid: unknown option '$1'" >&2; usage 1 >&2 ;;
	esac
	shift
done

for v in REPS RT RAMP NOISE RETRIES; do
	case ${!v} in '' | *[!0-9]*) die "$v '${!v}': not a number" ;; esac
done
if [ "$REPS" -lt 1 ] || [ "$RT" -lt 1 ]; then die "reps and runtime must be at least 1"; fi
for p in $PATTERNS $PROFILE; do
	case " $ALL_PATTERNS " in *" $p "*) ;; *) die "unknown pattern '$p' (known: $ALL_PATTERNS)" ;; esac
done
MEMBER_B=$(to_bytes "$MEMBER_SIZE") || die "member size '$MEMBER_SIZE': not a size"
CHUNK_B=$(to_bytes "$CHUNK") || die "chunk '$CHUNK': not a size"
if [ "$CHUNK_B" -eq 0 ] || [ $((MEMBER_B % CHUNK_B)) -ne 0 ]; then
	die "member size $MEMBER_SIZE is not a multiple of chunk $CHUNK"
fi

# parse_spec LxN -> LEVEL, NMEM; CAP: the array size md gives it (docs/
# nbdkit-raid-plugin.md), or empty for RAID 10 (the layout decides; nbdinfo's
# figure is used).
parse_spec() {
	case $1 in
	[0-9]*x[0-9]*) LEVEL=${1%%x*} NMEM=${1#*x} ;;
	*) die "array '$1': expected LEVELxMEMBERS, e.g. 5x4" ;;
	esac
	case $LEVEL$NMEM in *[!0-9]*) die "array '$1': expected LEVELxMEMBERS, e.g. 5x4" ;; esac
	case $LEVEL in
	0) [ "$NMEM" -ge 1 ] || die "RAID 0 needs a member"; CAP=$((NMEM * MEMBER_B)) ;;
	1) [ "$NMEM" -ge 1 ] || die "RAID 1 needs a member"; CAP=$MEMBER_B ;;
	5) [ "$NMEM" -ge 3 ] || die "RAID 5 needs 3 members or more"; CAP=$(((NMEM - 1) * MEMBER_B)) ;;
	10) [ "$NMEM" -ge 2 ] || die "RAID 10 needs 2 members or more"; CAP='' ;;
	*) die "array '$1': level $LEVEL is not one of 0, 1, 5, 10" ;;
	esac
}
parse_spec "$SPEC_A"; LEVEL_A=$LEVEL NMEM_A=$NMEM CAP_A=$CAP
parse_spec "$SPEC_B"; LEVEL_B=$LEVEL NMEM_B=$NMEM CAP_B=$CAP

[ -f "$PLUGIN" ] || die "plugin not found: $PLUGIN (build it, or pass --plugin)"
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/$(basename "$PLUGIN")
PLUGIN_B=${PLUGIN_B:-$PLUGIN}
[ -f "$PLUGIN_B" ] || die "plugin not found: $PLUGIN_B (--b-plugin)"
PLUGIN_B=$(cd "$(dirname "$PLUGIN_B")" && pwd)/$(basename "$PLUGIN_B")
need_tools nbdkit fio nbdinfo jq awk timeout
[ -z "$PROFILE" ] || need_tools perf
read -ra RAID_ARGV <<<"$RAID_ARGS"
read -ra A_ARGV <<<"$A_ARGS"
read -ra B_ARGV <<<"$B_ARGS"
read -ra NBDKIT_ARGV <<<"$NBDKIT_ARGS"

EXTRA_LIFE=$(($(wc -w <<<"$PROFILE") * 2 * (RT + 400)))
bench_init

# The servers load private copies of the plugin, so a rebuild during the
# run (other sessions build in the same tree) cannot change either side.
# plugin_copy SRC DST: copy, and the facts line naming it.
plugin_copy() {
	cp "$1" "$2" || die "cannot copy $1"
	echo "$1 ($(stat -c %y "$1" | cut -d. -f1), sha256 $(sha256sum "$2" | cut -c1-12)), loaded from a private copy"
}
PLUGIN_COPY=$RUN/nbdkit-raid-plugin.so
PLUGIN_FACTS=$(plugin_copy "$PLUGIN" "$PLUGIN_COPY")
PLUGIN_COPY_B=$PLUGIN_COPY
if [ "$PLUGIN_B" != "$PLUGIN" ]; then
	PLUGIN_COPY_B=$RUN/nbdkit-raid-plugin-b.so
	PLUGIN_FACTS="A: $PLUGIN_FACTS; B: $(plugin_copy "$PLUGIN_B" "$PLUGIN_COPY_B")"
fi

# --- set up the two exports -------------------------------------------------

A=r${LEVEL_A}x$NMEM_A B=r${LEVEL_B}x$NMEM_B
[ "$A" = "$B" ] && A=${A}a B=${B}b
A_FILES=() B_FILES=()
for i in $(seq 0 $((NMEM_A - 1))); do A_FILES+=("$SHM.a.m$i.img"); done
for i in $(seq 0 $((NMEM_B - 1))); do B_FILES+=("$SHM.b.m$i.img"); done
FILE_SIZE_A=$MEMBER_B FILE_SIZE_B=$MEMBER_B
create_backing

# raid_server NAME LEVEL FILES... : start the plugin over FILES.
raid_server() {
	local name=$1 level=$2 chunk=(chunk="$CHUNK") extra plugin=$PLUGIN_COPY
	shift 2
	[ "$level" = 1 ] && chunk=()
	if [ "$name" = "$A" ]; then
		extra=("${A_ARGV[@]}")
	else
		extra=("${B_ARGV[@]}") plugin=$PLUGIN_COPY_B
	fi
	start_server "$name" "$plugin" level="$level" "${chunk[@]}" "${@/#/member=}" \
		"${RAID_ARGV[@]}" "${extra[@]}"
}

check_plugin "$PLUGIN_COPY"
[ "$PLUGIN_COPY_B" = "$PLUGIN_COPY" ] || check_plugin "$PLUGIN_COPY_B"
raid_server "$A" "$LEVEL_A" "${A_FILES[@]}"
URIS[$A]=$URI PIDS[$A]=$SRVPID
raid_server "$B" "$LEVEL_B" "${B_FILES[@]}"
URIS[$B]=$URI PIDS[$B]=$SRVPID

for t in "$A" "$B"; do
	s=$(timeout 20 nbdinfo --size "${URIS[$t]}") || die "nbdinfo failed on $t"
	SIZES[$t]=$s
done
[ -z "$CAP_A" ] || [ "${SIZES[$A]}" = "$CAP_A" ] || die "export $A is ${SIZES[$A]} bytes, expected $CAP_A"
[ -z "$CAP_B" ] || [ "${SIZES[$B]}" = "$CAP_B" ] || die "export $B is ${SIZES[$B]} bytes, expected $CAP_B"

prefill

# --- machine facts -------------------------------------------------------------

mib() { echo "$(($1 / 1048576)) MiB"; }
desc() { # LEVEL NMEM TARGET ARGS
	echo "nbdraid level=$1${4:+ $4}$([ "$1" = 1 ] || echo " chunk=$CHUNK"), $2 members of $(mib "$MEMBER_B") in ${BENCH_DIR:-/dev/shm}, export $(mib "${SIZES[$3]}")${RAID_ARGS:+; both: $RAID_ARGS}"
}
machine_facts
{
	echo "# raid-vs-raid: nbdraid RAID $LEVEL_A x $NMEM_A (A) vs RAID $LEVEL_B x $NMEM_B (B), fio nbd engine"
	echo
	facts_head
	echo "- plugin: $PLUGIN_FACTS"
	echo "- A ($A): $(desc "$LEVEL_A" "$NMEM_A" "$A" "$A_ARGS")"
	echo "- B ($B): $(desc "$LEVEL_B" "$NMEM_B" "$B" "$B_ARGS")"
	facts_tail "each whole export ($A ${SIZES[$A]} bytes, $B ${SIZES[$B]} bytes)"
	echo
} >"$REPORT"
cat "$REPORT"

# --- measure and summarise ---------------------------------------------------------

measure
summarise "$B (median)" "$A (median)" "ratio $A/$B" ""
finish

# --- profile (optional) -------------------------------------------------------------

if [ -n "$PROFILE" ]; then
	for pat in $PROFILE; do
		for t in "$A" "$B"; do profile_one "$pat" "$t"; done
	done
	if [ -s "$OUT/profile/profile.tsv" ]; then
		{
			echo
			echo "## Where the server's CPU goes (--profile)"
			echo
			echo "One more run per pattern and side, ${RT} s, no ramp, outside the repetitions above, under"
			echo "\`perf record -a -g -e cpu-clock -F 999\` and \`perf stat -p <server> -e syscalls:...\`."
			echo "Shares are of the server's (nbdkit process, all threads) samples; classes in bench/perf-classify.awk."
			echo "Member reads/writes per request count preadv2/pwritev2 (+ pread64/pwrite64) calls, so they are exact"
			echo "with psync member I/O (io=auto on tmpfs); io_uring_enter per request shows when io_uring was used."
			echo "Member bytes come from /proc/<server>/io (rchar minus the NBD socket reads; wchar)."
			echo
			profile_table
			echo
			echo "Per side: $OUT/profile/<pattern>-<side>.{classes.tsv,report.txt,perf.data,syscalls.csv,json}"
		} >"$OUT/profile.md"
		cat "$OUT/profile.md" >>"$REPORT"
		cat "$OUT/profile.md"
	fi
fi
