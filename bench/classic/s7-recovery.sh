# shellcheck shell=bash
# Study 7, recovery: how fast does an array heal, and what does healing
# cost its clients?  RAID 1 x2 and RAID 5 x4 with md superblocks (`nbdraid
# create`), a spare given as spare=; member N-1 is failed through the
# control socket (the spare takes its role at once) and the time from the
# fail request to the array optimal again is measured by polling status
# over one control connection (bench/classic/recovery-timer.py).  Every
# figure is a ratio to something measured in the same repetition:
#
#   full     recovery of a member full of data (every byte written through
#            the array, fio's random buffers), idle clients, speed limits
#            far above what the pass can do (min = max = R7_FAST KiB/s): the
#            limit is not what is measured.  Ratio: the member's data bytes
#            per second rebuilt, over dd's bytes per second copying one
#            member file (`dd bs=1M`, plain, buffered as nbdraid's tmpfs
#            members are, onto a file written beforehand as the spare is;
#            emulated disks: iflag=direct oflag=direct onto another
#            emulated disk), run back to back with it
#   sparse   the same for an array whose export was written in row pieces at
#            random places, 10 % of it (the rest never written): recovery
#            time over the full member's (tmpfs only: the emulated disk has
#            no holes)
#   load     a client load (fio, nbd engine) running; the client's requests
#            per second during the recovery over those of R7_WIN seconds
#            before the fail and after the end (the server's own counters),
#            and the recovery time under load over the idle one; with md's
#            default limits (1000 / 200000 KiB/s: md throttles a pass to
#            the minimum while clients are busy) the pass is timed for
#            R7_CAP seconds only, its rate reported, then let finish fast
#
# The arrays are rebuilt over and over: after each recovery the failed
# member's file is wiped (r7_wipe: tmpfs, written with zeros; an emulated
# disk: its first 4 MiB zeroed) and becomes the next spare.  Sourced by bench/run.

R7_CONFIGS=${R7_CONFIGS:-"1x2 5x4"}
R7_FAST=100000000          # KiB/s per member: 100 GB/s, never reached
R7_DEFAULT="1000 200000"   # md's speed_limit_min and speed_limit_max
if [ "$QUICK" = 1 ]; then
	: "${R7_TMPFS_SIZE:=256M}" "${R7_DISK_SIZE:=64M}" "${R7_WIN:=1}" "${R7_CAP:=3}"
	: "${R7_LOADS=randwrite:4k:8}"
else
	: "${R7_TMPFS_SIZE:=1G}" "${R7_DISK_SIZE:=256M}" "${R7_WIN:=2}" "${R7_CAP:=8}"
	: "${R7_LOADS=randread:4k:8 randwrite:4k:8}"
fi
R7_SPARSE_PCT=10
# tmpfs spares and dd's target: "written" (zeros written beforehand: no
# memory allocated while timed; a sparse recovery punches the holes it
# keeps) or "blank" (new sparse files, as `truncate -s` makes a spare:
# recovery and dd allocate the pages they write, nothing is punched).
: "${R7_SPARE:=written}"
# Environment: R7_CONFIGS, R7_TMPFS_SIZE, R7_DISK_SIZE, R7_WIN, R7_CAP,
# R7_LOADS (above; empty: no load runs), R7_SPARE, R7_ARGS (more plugin settings), NBDRAID (the CLI).

R7_CSV_HEAD="medium,rep,config,case,load,speed_min,speed_max,bytes,seconds,done_bytes,total_bytes,finished,total_seconds,before_iops,during_iops,after_iops,before_mbps,during_mbps,after_mbps,srv_cpu,host_cpu,during_seconds,data_pct,rows_pct"

# r7_init: the CLI (a private copy, as the plugin), the CSV.
r7_init() {
	[ -n "${R7_CLI:-}" ] && return 0
	local src=${NBDRAID:-$(dirname "$PLUGIN_SRC")/../src/nbdraid}
	[ -x "$src" ] || die "nbdraid CLI not found at $src (NBDRAID=PATH)"
	R7_CLI=$RUN/nbdraid
	cp "$src" "$R7_CLI" || die "cannot copy $src"
	R7_CSV=$OUT/recovery-runs.csv
	[ -s "$R7_CSV" ] || echo "$R7_CSV_HEAD" >"$R7_CSV"
}

# --- members -----------------------------------------------------------------

# r7_disks N SIZE: N emulated disks of SIZE of this study's own (the pool
# has 4; RAID 5 x4 needs a spare and a dd target more).  Sets R7_DISKS.
r7_disks() {
	local i mnt pidf
	R7_DISKS=() R7_DSTATS=()
	for i in $(seq 0 $(($1 - 1))); do
		mnt=$RUN/r7d$i.mnt pidf=$RUN/r7d$i.pid
		mkdir -p "$mnt"
		"$FUSEDISK" --exit-with-parent --size "$2" --access "$DISK_ACCESS" \
			--mbps "$DISK_MBPS" --slots "$DISK_SLOTS" --stats "$RUN/r7d$i.stats" \
			--pidfile "$pidf" "$mnt" >>"$OUT/logs/fusedisk-r7-$i.log" 2>&1 &
		wait_file "$pidf" 10 || die "emulated disk r7-$i did not start"
		DISKPIDS+=("$(cat "$pidf")")
		MOUNTS+=("$mnt")
		R7_DISKS+=("$mnt/disk") R7_DSTATS+=("$RUN/r7d$i.stats")
	done
}
r7_disks_stop() {
	local i mnt
	for i in "${!R7_DISKS[@]}"; do
		mnt=$(dirname "${R7_DISKS[i]}")
		mountpoint -q "$mnt" && { umount "$mnt" 2>/dev/null || umount -l "$mnt"; }
	done
	R7_DISKS=()
}

# r7_wipe MEDIUM FILE: a blank member.  tmpfs: a file written with zeros,
# so that nothing timed allocates memory (a recovery onto fresh tmpfs pages
# took 1-4x the time of one onto written pages on this VM, and a sparse
# one 0.14-1.7 s where onto written pages it took 0.08, varying run to run
# with the hypervisor's handing out of memory; a disk allocates nothing
# either); a sparse recovery then punches the holes it keeps.  An emulated
# disk: its first 4 MiB (superblock) zeroed.
r7_wipe() {
	if [ "$1" != tmpfs ]; then
		dd if=/dev/zero of="$2" bs=1M count=4 oflag=direct conv=notrunc status=none ||
			die "cannot wipe $2"
	elif [ "$R7_SPARE" = blank ]; then
		rm -f "$2" && truncate -s "$R7_SIZE" "$2" || die "cannot create $2"
	else
		dd if=/dev/zero of="$2" bs=1M count=$(($(to_bytes "$R7_SIZE") / 1048576)) \
			conv=notrunc status=none || die "cannot write $2"
	fi
}

# r7_make MEDIUM CONFIG KIND (full|sparse): N members and a spare, wiped,
# `nbdraid create`d (metadata 1.2, chunk 512K), served once and filled:
# full, every byte of the export (fio, full stripes, random buffers);
# sparse, R7_SPARSE_PCT % of it in pieces of a row (RAID 1: 1M; RAID 5: a
# full stripe) at random places (no piece twice).  Sets R7_M (members, role order), R7_S (the spare), R7_LEVEL,
# R7_N, R7_EXPORT, R7_DATA (member data bytes), R7_OFF (data offset).
r7_make() {
	local medium=$1 cfg=$2 kind=$3 i f files=() bs n js
	R7_LEVEL=${cfg%x*} R7_N=${cfg#*x}
	for i in $(seq 0 "$R7_N"); do
		if [ "$medium" = tmpfs ]; then
			f=$SHM.r7-$cfg-$kind-$i.img
			SHMFILES+=("$f")
		else
			f=${R7_DISKS[i]}
		fi
		if [ "$medium" = tmpfs ] && [ "$i" -lt "$R7_N" ]; then
			rm -f "$f" # holes: create writes nothing; the fill writes all
			truncate -s "$R7_SIZE" "$f" || die "cannot create $f"
		else
			r7_wipe "$medium" "$f"
		fi
		files+=("$f")
	done
	R7_M=("${files[@]:0:R7_N}") R7_S=${files[R7_N]}
	# Emulated disks are not holes: --assume-clean, and the fill writes
	# whole stripes, which makes every stripe consistent.
	local opts=()
	[ "$medium" = tmpfs ] || opts+=(--assume-clean)
	"$R7_CLI" create --level "$R7_LEVEL" --name "r7-$cfg" "${opts[@]}" "${R7_M[@]}" \
		>>"$OUT/logs/r7-create.log" 2>&1 || die "nbdraid create $cfg failed (see $OUT/logs/r7-create.log)"
	read -r R7_DATA R7_OFF < <("$R7_CLI" examine --json "${R7_M[0]}" |
		jq -r '.[0] | "\(.used_dev_sectors * 512) \(.data_offset_sectors * 512)"')
	r7_serve "$medium" "$cfg"
	R7_EXPORT=$("$R7_CLI" --control "$R7_CTL" status --json | jq .size)
	bs=1M
	[ "$R7_LEVEL" = 5 ] && bs=$((512 * (R7_N - 1)))k
	js=$OUT/json/r7-fill-$medium-$cfg-$kind.json
	if [ "$kind" = full ]; then
		timeout 900 fio --name=fill --ioengine=nbd --uri="$URI" --rw=write --bs="$bs" --iodepth=8 \
			--size="$R7_EXPORT" --refill_buffers --iomem_align=4096 \
			--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1 || die "fill of $cfg failed"
	else
		# Pieces of a whole row (RAID 1: 1M; RAID 5: a full stripe, fio
		# aligns them to their size), so that each member holds data in
		# R7_SPARSE_PCT % of its rows, as the whole array does: 1M pieces
		# of a RAID 5 x4 (stripe 1.5M) leave data in 18 % of the rows.
		n=$((R7_EXPORT * R7_SPARSE_PCT / 100 / $(to_bytes "$bs")))
		timeout 900 fio --name=fill --ioengine=nbd --uri="$URI" --rw=randwrite --bs="$bs" --iodepth=8 \
			--size="$R7_EXPORT" --number_ios="$n" --randrepeat=0 --refill_buffers --iomem_align=4096 \
			--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1 || die "fill of $cfg failed"
	fi
	log "recovery $medium $cfg $kind: filled ($(jq -r '.jobs[0].write.io_bytes' "$js") bytes of $R7_EXPORT)"
	stop_server
}

# r7_serve MEDIUM CONFIG: the array of R7_M with the spare R7_S, a control
# socket R7_CTL.  Sets URI, SRVPID, SOCK.
r7_serve() {
	local members=() m args=()
	for m in "${R7_M[@]}"; do members+=("member=$m"); done
	[ "$1" = tmpfs ] || args+=(direct=true)
	# R7_ARGS: more plugin settings, e.g. "io=uring" (an experiment).
	# shellcheck disable=SC2206
	args+=(${R7_ARGS:-})
	R7_CTL=$RUN/r7.ctl
	rm -f "$R7_CTL"
	start_server "r7-$1-$2" "$PLUGIN" "${members[@]}" "spare=$R7_S" control="$R7_CTL" "${args[@]}"
	for _ in $(seq 50); do [ -S "$R7_CTL" ] && break; sleep 0.1; done
}

# r7_rotate MEDIUM: the failed member (role N-1) wiped becomes the
# spare; the spare holds the role now.
r7_rotate() {
	local old=${R7_M[R7_N - 1]}
	R7_M[R7_N - 1]=$R7_S
	R7_S=$old
	r7_wipe "$1" "$R7_S"
}

# r7_data_pct: the share of the failed member's data area that holds data
# (tmpfs: allocated), and of its rows (chunks) that hold data on some other
# member: the rows a sparse-aware recovery must read.  "PCT,ROWS_PCT".
r7_data_pct() {
	/usr/bin/python3 - "$R7_OFF" "$R7_DATA" "${R7_M[@]}" <<-'EOF'
		import os, sys
		OFF, data, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
		CH = 512 << 10  # the chunk, and RAID 1's recovery unit
		def extents(p):
		    fd, out, pos = os.open(p, os.O_RDONLY), [], OFF
		    try:
		        while pos < OFF + data:
		            try:
		                s = os.lseek(fd, pos, os.SEEK_DATA)
		            except OSError:
		                break
		            e = os.lseek(fd, s, os.SEEK_HOLE)
		            out.append((max(s, OFF) - OFF, min(e, OFF + data) - OFF))
		            pos = e
		    finally:
		        os.close(fd)
		    return [x for x in out if x[1] > x[0]]
		def rows(ext):
		    r = set()
		    for s, e in ext:
		        r.update(range(s // CH, (e - 1) // CH + 1))
		    return r
		failed = extents(files[-1])
		others = set().union(*(rows(extents(f)) for f in files[:-1]))
		n = -(-data // CH)
		print("%.1f,%.1f" % (100 * sum(e - s for s, e in failed) / data, 100 * len(others) / n))
	EOF
}

# --- one measurement -----------------------------------------------------------

# r7_row MEDIUM REP CONFIG CASE LOAD SMIN SMAX BYTES JSON [DATA_PCT ROWS_PCT]:
# a line of recovery-runs.csv from recovery-timer.py's JSON (or, for dd,
# JSON {"seconds": S}).
r7_row() {
	jq -r --arg pre "$1,$2,$3,$4,$5,$6,$7,$8" --arg tail "${10:-},${11:-}" '
		def n: if . == null then "" else tostring end;
		[$pre, (.seconds | n), (.done_bytes | n), (.total_bytes | n), (.finished | n),
		 (.total_seconds | n), (.before.iops | n), (.during.iops | n), (.after.iops | n),
		 (.before.mbps | n), (.during.mbps | n), (.after.mbps | n),
		 (.during.srv_cpu | n), (.during.host_cpu | n), (.during.seconds | n), $tail]
		| join(",")' "$9" >>"$R7_CSV"
}

# r7_recover MEDIUM REP CONFIG CASE LOAD SMIN SMAX [timer options]: serve,
# fail role N-1, time the recovery (under LOAD, a pattern, or "idle"),
# stop, rotate; one CSV row.
r7_recover() {
	local medium=$1 rep=$2 cfg=$3 kase=$4 load=$5 smin=$6 smax=$7 js lpid='' pcts=","
	shift 7
	js=$OUT/json/r7-$medium-r$rep-$cfg-$kase-${load//:/_}-$smin.json
	[ "$kase" = sparse ] && pcts=$(r7_data_pct)
	r7_serve "$medium" "$cfg"
	if [ "$load" != idle ]; then
		pattern_parse "$load"
		fio --name=load --ioengine=nbd --uri="$URI" "${FIO_ARGS[@]}" --time_based --runtime=900 \
			--norandommap --randrepeat=0 --iomem_align=4096 \
			--output-format=json --output="${js%.json}-fio.json" >>"$OUT/logs/fio.err" 2>&1 &
		lpid=$!
		LOADPIDS+=("$lpid")
		sleep 1 # fio connects, the load settles
	fi
	timeout 1800 /usr/bin/python3 "$CLASSIC/recovery-timer.py" "$R7_CTL" $((R7_N - 1)) \
		--speed "$smin" "$smax" --pid "$SRVPID" "$@" >"$js" 2>>"$OUT/logs/r7-timer.err" ||
		die "recovery $cfg $kase $load failed (see $OUT/logs/r7-timer.err, $OUT/logs/nbdkit-r7-$medium-$cfg.log)"
	if [ -n "$lpid" ]; then
		stop_pid "$lpid" fio
		wait "$lpid" 2>/dev/null
		LOADPIDS=()
	fi
	stop_server
	r7_rotate "$medium"
	r7_row "$medium" "$rep" "$cfg" "$kase" "$load" "$smin" "$smax" "$R7_DATA" "$js" "${pcts%,*}" "${pcts#*,}"
	log "recovery $medium rep $rep $cfg $kase $load speed $smin/$smax: $(jq -r '
		if .finished then "\(.seconds) s" else "\(.done_bytes) bytes in \(.during.seconds) s" end
		+ (if .during.iops and .before then ", client \(.before.iops) -> \(.during.iops) -> \(.after.iops) IOPS" else "" end)' "$js")"
}

# r7_dd MEDIUM REP CONFIG: one member copied by dd (1M blocks) onto a file
# of its size written beforehand (tmpfs: no memory allocated in the timed
# copy, as for the recovery's spare) or onto another emulated disk; one
# CSV row.
r7_dd() {
	local medium=$1 rep=$2 cfg=$3 src=${R7_M[0]} dst t0 t1 bytes js flags=()
	js=$OUT/json/r7-$medium-r$rep-$cfg-dd.json
	if [ "$medium" = tmpfs ]; then
		dst=$SHM.r7-dd.img
		bytes=$(stat -c %s "$src")
		if [ "$R7_SPARE" = blank ]; then
			SHMFILES+=("$dst")
			rm -f "$dst" && truncate -s "$bytes" "$dst" || die "cannot create $dst"
		elif [ "$(stat -c %s "$dst" 2>/dev/null)" != "$bytes" ]; then
			SHMFILES+=("$dst")
			rm -f "$dst"
			dd if=/dev/zero of="$dst" bs=1M count=$((bytes / 1048576)) status=none ||
				die "cannot write $dst"
		fi
	else
		dst=${R7_DISKS[R7_N + 1]}
		flags=(iflag=direct oflag=direct)
		bytes=$(to_bytes "$R7_SIZE")
	fi
	t0=$(date +%s%N)
	dd if="$src" of="$dst" bs=1M count=$((bytes / 1048576)) "${flags[@]}" conv=notrunc status=none ||
		die "dd of $src failed"
	t1=$(date +%s%N)
	echo "{\"seconds\": $(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.4f", n / 1e9 }')}" >"$js"
	r7_row "$medium" "$rep" "$cfg" dd "" "" "" "$bytes" "$js"
	log "recovery $medium rep $rep $cfg dd: $(jq .seconds "$js") s"
}

# --- the study -------------------------------------------------------------------

study_recovery() {
	local medium=$1 cfg rep load k kinds=full ndisks=0
	local -A M S
	r7_init
	if [ "$medium" = tmpfs ]; then
		R7_SIZE=$R7_TMPFS_SIZE
		kinds="full sparse"
	else
		R7_SIZE=$R7_DISK_SIZE
		for cfg in $R7_CONFIGS; do ndisks=$((ndisks > ${cfg#*x} + 2 ? ndisks : ${cfg#*x} + 2)); done
		r7_disks "$ndisks" "$R7_SIZE"
	fi
	for cfg in $R7_CONFIGS; do
		# Two arrays: full and (tmpfs) sparse: their members M[kind]
		# (role order) and spares S[kind].
		M=() S=()
		for k in $kinds; do
			r7_make "$medium" "$cfg" "$k"
			M[$k]="${R7_M[*]}" S[$k]=$R7_S
		done
		for rep in $(seq "$REPS"); do
			# dd, the full recovery and the sparse one back to back, the
			# order reversed on even repetitions.
			local order="dd full sparse"
			[ $((rep % 2)) = 0 ] && order="sparse full dd"
			for k in $order; do
				case $k in
				dd)
					read -r -a R7_M <<<"${M[full]}"
					r7_dd "$medium" "$rep" "$cfg"
					;;
				full | sparse)
					[[ " $kinds " == *" $k "* ]] || continue
					read -r -a R7_M <<<"${M[$k]}"
					R7_S=${S[$k]}
					r7_recover "$medium" "$rep" "$cfg" "$k" idle "$R7_FAST" "$R7_FAST"
					M[$k]="${R7_M[*]}" S[$k]=$R7_S
					;;
				esac
			done
			read -r -a R7_M <<<"${M[full]}"
			R7_S=${S[full]}
			for load in $R7_LOADS; do
				# md's default limits: timed for R7_CAP s, then let finish
				# fast (under the load still); a high minimum: flat out.
				# shellcheck disable=SC2086
				r7_recover "$medium" "$rep" "$cfg" load "$load" $R7_DEFAULT \
					--before "$R7_WIN" --cap "$R7_CAP" --finish "$R7_FAST" "$R7_FAST" --after "$R7_WIN"
				r7_recover "$medium" "$rep" "$cfg" load "$load" "$R7_FAST" "$R7_FAST" \
					--before "$R7_WIN" --after "$R7_WIN"
			done
			M[full]="${R7_M[*]}" S[full]=$R7_S
		done
		# The rebuilt arrays are consistent (not timed).
		if [ "$medium" = tmpfs ]; then
			for k in $kinds; do
				read -r -a R7_M <<<"${M[$k]}"
				"$R7_CLI" check "${R7_M[@]}" >>"$OUT/logs/r7-check.log" 2>&1 ||
					die "nbdraid check of the rebuilt $cfg $k array failed (see $OUT/logs/r7-check.log)"
				log "recovery $medium $cfg $k: nbdraid check: consistent"
				rm -f "${R7_M[@]}" "${S[$k]}"
			done
		fi
	done
	if [ "$medium" = tmpfs ]; then rm -f "$SHM.r7-dd.img"; else r7_disks_stop; fi
}
