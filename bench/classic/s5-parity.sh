# shellcheck shell=bash
# Study 5, RAID 5 and RAID 10 against RAID 0 on the same 4 members (and
# against one member): small random writes (RAID 5 reads old data and
# parity and writes both: 4 member I/Os where RAID 0 does 1), full-stripe
# sequential writes (3 data chunks + parity: no reads), sequential reads,
# random reads.  Degraded reads need a degraded mode, which nbdraid does not
# have yet: the report says so.  Sourced by bench/run.

S5_CONFIGS="1disk 0x4 5x4 10x4"
# 1536k = 3 x 512K: one whole RAID 5 stripe over 4 members at the default
# chunk (the script checks that the chunk is 512K).
S5_PATTERNS="randwrite:4k:1 randwrite:4k:8 write:1536k:8 write:1M:8 read:1M:8 randread:4k:8"

study_parity() {
	local medium=$1 cfg pat
	[ "$DEFAULT_CHUNK" = 512K ] || log "warning: write:1536k:8 is a full RAID 5 stripe only at chunk 512K"
	# One emulated member cannot take a 1.5M request whole: FUSE carries
	# at most 1M (256 pages) per request, and the second piece waits
	# behind other requests.  Its sequential write bandwidth is measured
	# with 1M requests (write:1M:8), which the report uses as the 1.5M
	# baseline.
	local skip=""
	[ "$medium" = spindle ] && skip="write:1536k:8"
	run_grid parity "$medium" "$S5_CONFIGS" "$S5_PATTERNS" "$skip"
	[ "$medium" = tmpfs ] && return 0
	for cfg in 0x4 5x4 10x4; do
		start_array "$medium" "$cfg"
		for pat in $S5_PATTERNS; do
			count_pattern parity "$medium" "$cfg" "$pat" "$(count_n "$pat")"
		done
		stop_server
	done
}
