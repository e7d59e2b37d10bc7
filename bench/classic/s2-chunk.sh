# shellcheck shell=bash
# Study 2, chunk size: RAID 0 over 2 and 4 members at chunks from 4K to
# 1M, over sequential 1M reads, random 4k/16k/64k reads at QD8 and the
# mixed patterns used to model desktops and servers (PassMark's):
#   db  database     90 % random, 90 % read, 4K,  QD128 (PassMark: 2K)
#   fs  file server 100 % random, 80 % read, 16K, QD128
#   ws  workstation  80 % random, 70 % read, 16K, QD1
# and random 4K writes at QD1.  Every figure is a ratio to one member.
# The database pattern uses 4K, not PassMark's 2K: over O_DIRECT members
# nbdraid advertises a 4K minimum block size, and libnbd (fio's nbd engine)
# refuses smaller requests with EINVAL.
# Sourced by bench/run.

S2_WIDTHS_spindle="2 4" S2_WIDTHS_tmpfs="2 4"
if [ "$QUICK" = 1 ]; then
	# quick: one width per medium (the full run has both)
	S2_CHUNKS_spindle="4K 64K 512K" S2_WIDTHS_spindle="4"
	S2_CHUNKS_tmpfs="4K 512K" S2_WIDTHS_tmpfs="4"
else
	S2_CHUNKS_spindle="4K 16K 64K 128K 256K 512K 1M"
	S2_CHUNKS_tmpfs="4K 64K 512K"
fi
S2_PATTERNS="read:1M:8 randread:4k:8 randread:16k:8 randread:64k:8 db:4k:128 fs:16k:128 ws:16k:1 randwrite:4k:1"

study_chunk() {
	local medium=$1 chunks widths c n cfgs="1disk"
	chunks=S2_CHUNKS_$medium widths=S2_WIDTHS_$medium
	for c in ${!chunks}; do
		for n in ${!widths}; do cfgs="$cfgs 0x$n-c$c"; done
	done
	run_grid chunk "$medium" "$cfgs" "$S2_PATTERNS"
}
