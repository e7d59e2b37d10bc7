# shellcheck shell=bash
# Study 2, chunk size: RAID 0 over 2 and 4 members at chunks from 4K to
# 1M, over sequential 1M reads, random 4k/16k/64k reads at QD8 and the
# mixed patterns used to model desktops and servers (PassMark's):
#   db  database     90 % random, 90 % read, 2K,  QD128
#   fs  file server 100 % random, 80 % read, 16K, QD128
#   ws  workstation  80 % random, 70 % read, 16K, QD1
# and random 4K writes at QD1.  Every figure is a ratio to one member.
# Sourced by bench/run.

if [ "$QUICK" = 1 ]; then
	S2_CHUNKS_spindle="4K 64K 512K"
	S2_CHUNKS_tmpfs="4K 512K"
else
	S2_CHUNKS_spindle="4K 16K 64K 128K 256K 512K 1M"
	S2_CHUNKS_tmpfs="4K 64K 512K"
fi
S2_PATTERNS="read:1M:8 randread:4k:8 randread:16k:8 randread:64k:8 db:2k:128 fs:16k:128 ws:16k:1 randwrite:4k:1"

study_chunk() {
	local medium=$1 chunks c cfgs="1disk"
	chunks=S2_CHUNKS_$medium
	for c in ${!chunks}; do cfgs="$cfgs 0x2-c$c 0x4-c$c"; done
	run_grid chunk "$medium" "$cfgs" "$S2_PATTERNS"
}
