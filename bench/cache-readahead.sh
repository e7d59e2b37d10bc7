#!/bin/bash
# bench/cache-readahead.sh: the write-back cache's read-ahead (docs/cache.md,
# "Read-ahead"): a sequential reader at QD1 over RAID 5 x4 with cache=ram,
# cache-readahead=0 (off) against the default, on tmpfs members and on
# emulated disks (bench/classic/fusedisk.c: 5 ms access, 100 MB/s, one
# request at a time, direct=true).  Every repetition runs both
# configurations back to back, a fresh server each; the figures are
# same-run ratios (default / off), medians over the repetitions.
#
# Usage: bench/cache-readahead.sh [--reps N] [--runtime S]
#                                 [--media "tmpfs spindle"] [--out DIR]
# Environment: PLUGIN (build/plugin/nbdkit-raid-plugin.so), NBDRAID_CLI
# (build/src/nbdraid), DISK_SIZE (256M per member), CHUNK (512K),
# PATTERNS ("read:1m:1 read:64k:1").  Needs nbdkit, fio (nbd engine), jq;
# root and cc for the emulated disks.  It stops only the processes it
# started, by pid, and unmounts its mounts.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PROG=cache-readahead
PLUGIN=${PLUGIN:-$HERE/../build/plugin/nbdkit-raid-plugin.so}
CLI=${NBDRAID_CLI:-$HERE/../build/src/nbdraid}
REPS=3 RT=5 MEDIA="tmpfs spindle" OUT=
DISK_SIZE=${DISK_SIZE:-256M} CHUNK=${CHUNK:-512K}
PATTERNS=${PATTERNS:-"read:1m:1 read:64k:1"}
CONFIGS="off on"

while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--runtime) RT=$2; shift ;;
	--media) MEDIA=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "$PROG: unknown option $1" >&2; exit 1 ;;
	esac
	shift
done
die() { echo "$PROG: $*" >&2; exit 1; }
log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }
T0=$(date +%s)
[ -f "$PLUGIN" ] || die "no plugin at $PLUGIN"
for t in nbdkit fio jq; do command -v $t >/dev/null || die "needs $t"; done
OUT=${OUT:-$(mktemp -d /tmp/nbdraid-ra.XXXXXX)}
mkdir -p "$OUT/json" "$OUT/logs" || die "cannot create $OUT"
RUN=$(mktemp -d /tmp/nbdraid-rar.XXXXXX)
SHM=/dev/shm/nbdraid-ra.$$
PIDS=() MOUNTS=() FILES=() SRV=

cleanup() {
	local p m
	[ -n "$SRV" ] && kill -9 "$SRV" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	rm -f "${FILES[@]}"
	rm -rf "$RUN"
	echo "$PROG: results in $OUT" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# members MEDIUM: MEMBERS (paths) and XARGS (direct=true on disks).
DISKS=() TMPFS=()
members() {
	local i mnt
	if [ "$1" = spindle ] && [ ${#DISKS[@]} = 0 ]; then
		cc -O2 -Wall -o "$RUN/fusedisk" "$HERE/classic/fusedisk.c" \
			2>"$OUT/logs/cc.log" || die "cannot build fusedisk"
		for i in 0 1 2 3; do
			mnt=$RUN/d$i
			mkdir -p "$mnt"
			"$RUN/fusedisk" --exit-with-parent --size "$DISK_SIZE" \
				--pidfile "$RUN/d$i.pid" "$mnt" >>"$OUT/logs/fusedisk.log" 2>&1 &
			for _ in $(seq 50); do [ -s "$RUN/d$i.pid" ] && break; sleep 0.1; done
			[ -s "$RUN/d$i.pid" ] || die "emulated disk $i did not start"
			PIDS+=("$(cat "$RUN/d$i.pid")") MOUNTS+=("$mnt")
			DISKS+=("$mnt/disk")
		done
	fi
	if [ "$1" = tmpfs ] && [ ${#TMPFS[@]} = 0 ]; then
		for i in 0 1 2 3; do
			FILES+=("$SHM.m$i")
			head -c "$(numfmt --from=iec "$DISK_SIZE")" /dev/urandom >"$SHM.m$i" ||
				die "cannot write $SHM.m$i"
			TMPFS+=("$SHM.m$i")
		done
	fi
	if [ "$1" = spindle ]; then MEMBERS=("${DISKS[@]}") XARGS=(direct=true); else
		MEMBERS=("${TMPFS[@]}") XARGS=(); fi
}

# serve MEDIUM CONFIG: one server; URI, SRV.
serve() {
	local m args=()
	members "$1"
	for m in "${MEMBERS[@]}"; do args+=("member=$m"); done
	[ "$2" = off ] && args+=(cache-readahead=0)
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
	nbdkit -f --exit-with-parent -U "$RUN/sock" -P "$RUN/pid" "$PLUGIN" \
		level=5 metadata=none chunk="$CHUNK" cache=ram control="$RUN/ctl" \
		"${args[@]}" "${XARGS[@]}" >>"$OUT/logs/nbdkit-$1-$2.log" 2>&1 &
	SRV=$!
	for _ in $(seq 100); do [ -S "$RUN/sock" ] && [ -s "$RUN/pid" ] && break; sleep 0.1; done
	[ -S "$RUN/sock" ] || die "server $1 $2 did not start: $(tail -3 "$OUT/logs/nbdkit-$1-$2.log")"
	URI="nbd+unix:///?socket=$RUN/sock"
}

unserve() {
	kill -9 "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=
	rm -f "$RUN/sock" "$RUN/pid" "$RUN/ctl"
}

echo "medium,rep,config,pattern,mbps,read_hits,read_misses,readahead_bytes,readahead_hits" >"$OUT/results.csv"
for medium in $MEDIA; do
	for rep in $(seq "$REPS"); do
		for pat in $PATTERNS; do
			IFS=: read -r kind bs qd <<<"$pat"
			for cfg in $CONFIGS; do
				serve "$medium" "$cfg"
				js=$OUT/json/$medium-$rep-$cfg-${pat//:/_}.json
				fio --name=x --ioengine=nbd --uri="$URI" --rw="$kind" --bs="$bs" \
					--iodepth="$qd" --time_based --runtime="$RT" \
					--iomem_align=4096 --output-format=json --output="$js" \
					>>"$OUT/logs/fio.err" 2>&1
				st=$("$CLI" --control "$RUN/ctl" status --json 2>/dev/null)
				cs=$(jq -r '.cache | "\(.read_hits),\(.read_misses),\(.readahead_bytes),\(.readahead_hits)"' <<<"$st")
				unserve
				m=$(jq -r '.jobs[0].read.bw_bytes' "$js" 2>/dev/null)
				m=$(awk -v m="$m" 'BEGIN { printf "%.1f", m / 1e6 }')
				echo "$medium,$rep,$cfg,$pat,$m,$cs" >>"$OUT/results.csv"
				log "$medium rep $rep $pat read-ahead $cfg: $m MB/s (hits,misses,ra bytes,ra hits $cs)"
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
print("| medium | pattern | off MB/s | on MB/s | on / off |")
print("| --- | --- | ---: | ---: | ---: |")
for m in dict.fromkeys(r["medium"] for r in rows):
    for p in dict.fromkeys(r["pattern"] for r in rows):
        reps = sorted({r["rep"] for r in rows if r["medium"] == m and r["pattern"] == p})
        med = lambda c: statistics.median(v[(m, r, c, p)] for r in reps)
        ratio = statistics.median(v[(m, r, "on", p)] / max(v[(m, r, "off", p)], 1e-9)
                                  for r in reps)
        print("| %s | %s | %.1f | %.1f | %.2f |" % (m, p, med("off"), med("on"), ratio))
EOF
