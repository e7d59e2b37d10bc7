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
PROG=nbd-vs-file
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"

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
need_tools nbdkit fio nbdinfo jq awk timeout
read -ra RAID_ARGV <<<"$RAID_ARGS"
read -ra NBDKIT_ARGV <<<"$NBDKIT_ARGS"

bench_init

# --- set up the two exports -------------------------------------------------

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
B_FILES=("$SHM.file.img")
FILE_SIZE_A=$((SIZE_B / ${#A_FILES[@]})) FILE_SIZE_B=$SIZE_B
create_backing

if [ "$SELFTEST" = 1 ]; then
	start_server "$A" file file="${A_FILES[0]}"
else
	check_plugin "$PLUGIN"
	start_server "$A" "$PLUGIN" level=0 chunk="$CHUNK" "${A_FILES[@]/#/member=}" "${RAID_ARGV[@]}"
fi
URIS[$A]=$URI PIDS[$A]=$SRVPID
start_server "$B" file file="${B_FILES[0]}"
URIS[$B]=$URI PIDS[$B]=$SRVPID
SIZES[$A]=$SIZE_B SIZES[$B]=$SIZE_B

check_sizes
prefill

# --- machine facts -------------------------------------------------------------

machine_facts
{
	echo "# nbd-vs-file: nbdraid vs nbdkit file, fio nbd engine"
	echo
	facts_head
	if [ "$SELFTEST" = 0 ]; then
		echo "- plugin: $PLUGIN ($(stat -c %y "$PLUGIN" | cut -d. -f1), sha256 $(sha256sum "$PLUGIN" | cut -c1-12))"
	fi
	echo "- A ($A): $A_DESC"
	echo "- B ($B): file plugin over 1 file in ${BENCH_DIR:-/dev/shm} ($SIZE)"
	facts_tail "all $SIZE_B bytes"
	echo
} >"$REPORT"
cat "$REPORT"

# --- measure and summarise ---------------------------------------------------------

measure
if [ "$SELFTEST" = 1 ]; then
	summarise "file (median)" "file A (median)" "ratio A/B" 0.9
else
	summarise "file (median)" "nbdraid (median)" "ratio nbdraid/file" 0.9
fi
finish
