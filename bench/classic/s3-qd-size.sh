# shellcheck shell=bash
# Study 3, queue depth x transfer size: one member against RAID 0 over 2
# (default chunk), random reads at every queue depth and transfer size of
# the grid: the map of where striping pays.  Tweakers.net (2004) found one
# drive faster than a 2-drive RAID 0 at one outstanding I/O for transfers
# up to 32K, and the array ahead everywhere at eight.  Sourced by bench/run.

if [ "$QUICK" = 1 ]; then
	S3_QDS_spindle="1 4 16" S3_BSS_spindle="4k 64k 1M"
	S3_QDS_tmpfs="1 16" S3_BSS_tmpfs="4k 1M"
else
	S3_QDS_spindle="1 2 4 8 16 32" S3_BSS_spindle="4k 16k 64k 256k 1M"
	S3_QDS_tmpfs="1 4 32" S3_BSS_tmpfs="4k 64k 1M"
fi

study_qdsize() {
	local medium=$1 qds bss q b pats=""
	qds=S3_QDS_$medium bss=S3_BSS_$medium
	for b in ${!bss}; do
		for q in ${!qds}; do pats="$pats randread:$b:$q"; done
	done
	run_grid qdsize "$medium" "1disk 0x2" "$pats"
}
