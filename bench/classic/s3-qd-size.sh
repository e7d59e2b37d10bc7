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
	confirm_lowest "$medium"
}

# confirm_lowest MEDIUM: the lowest cell of a grid of noisy cells is biased
# low (the minimum of many estimates: one 1.5 s tmpfs run varies by
# +-10 %).  When it is under the goal (0.97), measure that one cell again,
# independently, with longer runs and more repetitions (study
# "qdsize-confirm"); the report shows both and judges on the second.
confirm_lowest() {
	local medium=$1 low pat r
	read -r low pat < <(awk -F, -v m="$medium" '
		$1 == "qdsize" && $2 == m && $26 == 0 { v[$8 SUBSEP $4 SUBSEP $3] = $13; pats[$8]; reps[$3] }
		END {
			for (p in pats) {
				n = 0
				for (r in reps) {
					a = v[p SUBSEP "0x2" SUBSEP r]; b = v[p SUBSEP "1disk" SUBSEP r]
					if (a != "" && b > 0) x[++n] = a / b
				}
				if (!n) continue
				for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j-1] > x[j]; j--) { t = x[j]; x[j] = x[j-1]; x[j-1] = t }
				med = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
				if (best == "" || med < best) { best = med; bp = p }
			}
			if (best != "") print best, bp
		}' "$CSV")
	[ -n "${pat:-}" ] || return 0
	awk -v l="$low" 'BEGIN { exit !(l < 0.97) }' || return 0
	log "qdsize $medium: lowest cell $pat at $low, measured again"
	local save_reps=$REPS save_rt=$RT
	REPS=$([ "$QUICK" = 1 ] && echo 5 || echo 9)
	RT=$([ "$QUICK" = 1 ] && echo 2 || echo 3)
	run_grid qdsize-confirm "$medium" "1disk 0x2" "$pat"
	REPS=$save_reps RT=$save_rt
}
