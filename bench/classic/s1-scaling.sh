# shellcheck shell=bash
# Study 1, member scaling: RAID 0 over 1, 2, 3 and 4 members, against one
# member (the ideal is N x) -- Maximum PC's 2004 question, "how much do
# 2, 3, 4 drives buy?" (they measured 2.02x, 2.40x, 2.28x, a shared PCI
# bus the limit).  Sourced by bench/run.

S1_CONFIGS="1disk 0x2 0x3 0x4"
S1_PATTERNS="read:1M:8 write:1M:8 randread:4k:1 randread:4k:8"

study_scaling() {
	run_grid scaling "$1" "$S1_CONFIGS" "$S1_PATTERNS"
}
