# shellcheck shell=bash
# Study 4, RAID 1: 2 and 3 copies against one member; reads and writes,
# sequential and random.  The folklore: a mirror reads faster (either copy
# can serve a read) and writes no faster than one disk (every copy is
# written).  Sourced by bench/run.

S4_CONFIGS="1disk 1x2 1x3"
if [ "$QUICK" = 1 ]; then
	S4_PATTERNS="randread:4k:1 randread:4k:2 randread:4k:8 read:1M:8 randwrite:4k:1 randwrite:4k:8 write:1M:8"
else
	S4_PATTERNS="randread:4k:1 randread:4k:2 randread:4k:8 read:1M:1 read:1M:8 read:1M:16 randwrite:4k:1 randwrite:4k:8 write:1M:8"
fi

study_raid1() {
	local medium=$1 cfg pat
	run_grid raid1 "$medium" "$S4_CONFIGS" "$S4_PATTERNS"
	# Member I/Os per client request, counted exactly (emulated disks).
	[ "$medium" = tmpfs ] && return 0
	for cfg in 1x2 1x3; do
		start_array "$medium" "$cfg"
		for pat in randread:4k:8 read:1M:8 randwrite:4k:8 write:1M:8; do
			count_pattern raid1 "$medium" "$cfg" "$pat" "$(count_n "$pat")"
		done
		stop_server
	done
}

