# shellcheck shell=bash
# Calibration of the emulated disk: does one member deliver what its
# parameters predict?  The same patterns against
#   raw       fio (io_uring, O_DIRECT) on the fusedisk file itself
#   1disk     nbdraid level=0 over that one member, through NBD: the
#             baseline of every study
#   file      nbdkit's file plugin over the same member, through NBD (the
#             other possible baseline)
#   filters   a disk made of nbdkit filters, for comparison: memory +
#             noparallel (serialize=all-requests) + delay + rate, as a file
#             through nbdfuse, fio io_uring O_DIRECT on that file
# into calibration.csv, with the model's prediction.  Sourced by bench/run.

if [ "$QUICK" = 1 ]; then
	CAL_PATTERNS="randread:4k:1 read:64k:8 read:1M:8"
else
	CAL_PATTERNS="randread:4k:1 randread:4k:8 randwrite:4k:1 read:4k:1 read:64k:1 read:64k:8 read:1M:1 read:1M:8 randread:1M:1 write:1M:8"
fi

# cal_run TARGET PATTERN fio-args...: one run into calibration.csv.
cal_run() {
	local tgt=$1 pat=$2 js m
	shift 2
	pattern_parse "$pat"
	js=$OUT/json/calib-$tgt-${pat//:/_}.json
	timeout 120 fio --name=cal "$@" "${FIO_ARGS[@]}" \
		--time_based --runtime="$(ms "$RT")" --ramp_time="$(ms "$RAMP")" \
		--norandommap --randrepeat=0 --iomem_align=4096 \
		--output-format=json --output="$js" >>"$OUT/logs/fio.err" 2>&1
	m=$(fio_metrics "$js")
	[ -n "$m" ] || { log "FAILED: calibration $tgt $pat"; m="NA,NA,NA"; }
	echo "$tgt,$pat,$KIND,$BS,$QD,$m" >>"$CALIB"
	log "calibration $tgt $pat: $(cut -d, -f1,2 <<<"$m" | sed 's/,/ IOPS, /') MB/s"
}

calibrate() {
	local pat mnt pidf fpid
	echo "target,pattern,kind,bs,qd,iops,mbps,lat_us" >"$CALIB"
	for pat in $CAL_PATTERNS; do
		cal_run raw "$pat" --ioengine=io_uring --direct=1 --filename="${DISKS[0]}"
	done
	start_array spindle 1disk
	for pat in $CAL_PATTERNS; do
		cal_run 1disk "$pat" --ioengine=nbd --uri="$URI"
	done
	stop_server
	start_server calib-file file file="${DISKS[0]}"
	for pat in $CAL_PATTERNS; do
		cal_run file "$pat" --ioengine=nbd --uri="$URI"
	done
	stop_server
	# The filter recipe's disk: needs nbdfuse (libnbd-bin).
	if ! command -v nbdfuse >/dev/null; then
		log "nbdfuse not found: calibration without the filter recipe"
		return 0
	fi
	start_server calib-filters --filter=noparallel --filter=delay --filter=rate \
		memory "$DISK_SIZE" serialize=all-requests \
		delay-read="$DISK_ACCESS" delay-write="$DISK_ACCESS" \
		rate=$((DISK_MBPS * 8000000)) burstiness=0.1
	mnt=$RUN/nbdfuse.mnt pidf=$RUN/nbdfuse.pid
	mkdir -p "$mnt"
	timeout 3600 nbdfuse -P "$pidf" "$mnt/disk" --unix "$SOCK" >>"$OUT/logs/nbdfuse.log" 2>&1 &
	WRAPPERS+=($!)
	if wait_file "$pidf" 10; then
		fpid=$(cat "$pidf")
		DISKPIDS+=("$fpid") MOUNTS+=("$mnt")
		for pat in $CAL_PATTERNS; do
			cal_run filters "$pat" --ioengine=io_uring --direct=1 --filename="$mnt/disk"
		done
		umount "$mnt" 2>/dev/null || umount -l "$mnt"
		stop_pid "$fpid" nbdfuse
	else
		log "nbdfuse did not start (see $OUT/logs/nbdfuse.log): no filter-recipe rows"
	fi
	stop_server
}
