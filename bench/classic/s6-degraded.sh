# shellcheck shell=bash
# Study 6, degraded arrays: RAID 5 over 4 and RAID 1 over 2, each with
# every member and with one member missing, in the same run; the figure is
# degraded / optimal.  The degraded array is the same array started with
# its last role given as member=missing (raw mode): nbdraid then reads
# around that role and writes without it by the same code as after a
# member failed (a failed member and a missing one are both "not usable" to
# the data path).  Sourced by bench/run.
#
# What to expect, member I/Os per client request:
#   RAID 5 x4, a read of a chunk on the missing member reads the same bytes
#     of the 3 others and XORs them (under the stripe lock): 1 of 4 data
#     chunks, so 1.5 member reads per 4k read where optimal reads 1, on 3
#     members instead of 4.
#   RAID 5 x4, a 4k write: to the missing member's chunk, reconstruct-write
#     of parity alone (2 reads, 1 write); to a stripe whose parity is
#     missing, the data alone (0 reads, 1 write); else read-modify-write (2
#     and 2): 1.5 reads and 1.5 writes on average, against 2 and 2.
#   RAID 1 x2: every read on the one copy left (no balancing), every write
#     to one copy instead of two.

S6_CONFIGS="5x4 5x4-m3 1x2 1x2-m1"
if [ "$QUICK" = 1 ]; then
	S6_PATTERNS="read:1M:8 write:1M:8 randread:4k:8 randwrite:4k:8"
else
	S6_PATTERNS="read:1M:8 write:1M:8 randread:4k:1 randread:4k:8 randwrite:4k:1 randwrite:4k:8"
fi

study_degraded() {
	local medium=$1 cfg pat
	# Each degraded array runs next to its optimal twin: configs in this
	# order, reversed on even repetitions, so each pair is back to back
	# and alternates which goes first.
	run_grid degraded "$medium" "$S6_CONFIGS" "$S6_PATTERNS"
	[ "$medium" = tmpfs ] && return 0
	# Member I/Os per client request, counted exactly (emulated disks).
	for cfg in $S6_CONFIGS; do
		start_array "$medium" "$cfg"
		for pat in read:1M:8 write:1M:8 randread:4k:8 randwrite:4k:8; do
			count_pattern degraded "$medium" "$cfg" "$pat" "$(count_n "$pat")"
		done
		stop_server
	done
}
