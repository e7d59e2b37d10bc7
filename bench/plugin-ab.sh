#!/usr/bin/env bash
# shellcheck disable=SC2034 # globals that bench/classic/lib.sh reads
# plugin-ab.sh: two builds of the plugin on the same members, in one run.
#
# Serves one array configuration with build A, then with build B (extra
# plugin words for A only: --a-args), and one member alone (nbdraid level=0
# over member 0: bench/run's baseline), one fio run each per pattern and
# repetition, the three in a rotating order (every order once in 6
# repetitions: a run's position, after an idle or a busy member, does not
# favour one side).  The members are bench/run's: emulated disks
# (`spindle`, bench/classic/fusedisk.c, O_DIRECT) or tmpfs files, and so is
# the machinery (bench/classic/lib.sh).  Prints, per pattern, the median
# over repetitions of the per-repetition ratios A/B, A/one and B/one
# (IOPS), with their range.
#
#   sudo bench/plugin-ab.sh --b-plugin old.so --media spindle \
#        --patterns "write:1M:8 randwrite:4k:1 write:4k:1" --reps 6
#
# Usage: bench/plugin-ab.sh [options]
#   --a-plugin PATH   build A (build/plugin/nbdkit-raid-plugin.so)
#   --b-plugin PATH   build B (required)
#   --a-args STR      extra plugin key=value words for A, e.g. "gather-wait=5ms"
#   --config CFG      bench/run's config syntax (5x4)
#   --media M         spindle or tmpfs (spindle)
#   --patterns LIST   KIND:BS:QD ... (write:1M:8 randwrite:4k:1 write:4k:1)
#   --reps N          repetitions (6)
#   --runtime S       measured seconds per run (2)
#   --ramp S          ramp seconds per run (0.5)
#   --out DIR         results folder (a new /tmp/nbdraid-ab.XXXXXX)
# Needs what bench/run needs; root for the emulated disks.

set -u
export LC_ALL=C

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLASSIC=$ROOT/bench/classic
A_PLUGIN=$ROOT/build/plugin/nbdkit-raid-plugin.so B_PLUGIN='' A_ARGS=''
CFG=5x4 MEDIA=spindle PATS="write:1M:8 randwrite:4k:1 write:4k:1"
REPS=6 RT=2 RAMP=0.5 OUT='' QUICK=1 DEFAULT_CHUNK=512K

usage() { sed -n '3,/^set -u/{/^#/s/^# \{0,1\}//p}' "$0"; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
	case $1 in
	--a-plugin) A_PLUGIN=${2:?}; shift ;;
	--b-plugin) B_PLUGIN=${2:?}; shift ;;
	--a-args) A_ARGS=${2?}; shift ;;
	--config) CFG=${2:?}; shift ;;
	--media) MEDIA=${2:?}; shift ;;
	--patterns) PATS=${2:?}; shift ;;
	--reps) REPS=${2:?}; shift ;;
	--runtime) RT=${2:?}; shift ;;
	--ramp) RAMP=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	-h | --help) usage 0 ;;
	*) echo "plugin-ab.sh: unknown option '$1'" >&2; exit 1 ;;
	esac
	shift
done
[ -f "$A_PLUGIN" ] || { echo "plugin-ab.sh: no build A at $A_PLUGIN" >&2; exit 1; }
[ -f "$B_PLUGIN" ] || { echo "plugin-ab.sh: --b-plugin PATH is required" >&2; exit 1; }
case $MEDIA in spindle | tmpfs) ;; *) echo "plugin-ab.sh: --media spindle or tmpfs" >&2; exit 1 ;; esac
[ -z "$OUT" ] && OUT=$(mktemp -d /tmp/nbdraid-ab.XXXXXX)
PLUGIN_SRC=$A_PLUGIN

# shellcheck source=classic/lib.sh
. "$CLASSIC/lib.sh"
cl_init
cp "$B_PLUGIN" "$RUN/b.so" || die "cannot copy $B_PLUGIN"
A_SO=$PLUGIN B_SO=$RUN/b.so

# start_server with A's extra words while EXTRA is set.
eval "lib_$(declare -f start_server)"
start_server() {
	local name=$1
	shift
	# shellcheck disable=SC2086 # words on purpose
	if [ -n "${EXTRA:-}" ]; then lib_start_server "$name" "$@" $A_ARGS; else lib_start_server "$name" "$@"; fi
}

case $MEDIA in spindle) start_disks ;; tmpfs) make_tmpfs ;; esac
ORDERS=("a b one" "b a one" "one a b" "one b a" "a one b" "b one a")
for rep in $(seq "$REPS"); do
	for pat in $PATS; do
		for side in ${ORDERS[$(((rep - 1) % 6))]}; do
			case $side in
			one) PLUGIN=$A_SO; start_array "$MEDIA" 1disk; run_pattern one "$MEDIA" "$rep" 1disk "$pat" ;;
			a) PLUGIN=$A_SO EXTRA=1; start_array "$MEDIA" "$CFG"; EXTRA=; run_pattern a "$MEDIA" "$rep" "$CFG" "$pat" ;;
			b) PLUGIN=$B_SO; start_array "$MEDIA" "$CFG"; run_pattern b "$MEDIA" "$rep" "$CFG" "$pat" ;;
			esac
			stop_server
		done
	done
done
PLUGIN=$A_SO
/usr/bin/python3 - "$CSV" <<'EOF' | tee "$OUT/ratios.txt"
import csv, statistics as st, sys
d = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["iops"] != "NA":
        d[(r["study"], r["pattern"], r["rep"])] = float(r["iops"])
reps = sorted({k[2] for k in d})
for p in sorted({k[1] for k in d}):
    def ratio(x, y):
        v = [d[(x, p, r)] / d[(y, p, r)] for r in reps if (x, p, r) in d and (y, p, r) in d and d[(y, p, r)] > 0]
        return f"{st.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "-"
    print(f"{p:16s} A/B {ratio('a', 'b')}  A/one {ratio('a', 'one')}  B/one {ratio('b', 'one')}")
EOF
