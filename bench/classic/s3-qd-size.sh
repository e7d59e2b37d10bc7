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
	confirm_low "$medium"
}

# confirm_low MEDIUM: the lowest cells of a grid of noisy cells are biased
# low (the minimum of many estimates: one 1.5 s tmpfs run varies by
# +-10 %).  Every cell under the goal (0.97) is measured again,
# independently, with longer runs and more repetitions (study
# "qdsize-confirm"); the report shows both and judges the goal on the
# worst of the re-measured cells and the cells not re-measured.
confirm_low() {
	local medium=$1 pats save_reps=$REPS save_rt=$RT
	pats=$(awk -F, -v m="$medium" '
		$1 == "qdsize" && $2 == m && $26 == 0 && $13 != "NA" { v[$8 SUBSEP $4 SUBSEP $3] = $13; pats[$8]; reps[$3] }
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
				if (med < 0.97) printf "%s ", p
			}
		}' "$CSV")
	[ -n "$pats" ] || return 0
	log "qdsize $medium: cells under 0.97, measured again: $pats"
	REPS=$([ "$QUICK" = 1 ] && echo 5 || echo 9)
	RT=$([ "$QUICK" = 1 ] && echo 2 || echo 3)
	run_grid qdsize-confirm "$medium" "1disk 0x2" "$pats"
	REPS=$save_reps RT=$save_rt
}
