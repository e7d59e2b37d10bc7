#!/bin/bash
# guest-main.sh: what tests/vm/run.sh runs inside the VM.  Runs each part
# (guest-fs.sh: the kernel NBD client with ext4; guest-md.sh: md's layouts
# both ways; guest-mdid.sh: md superblocks both ways; guest-degraded.sh:
# degraded arrays both ways; guest-recovery.sh: a recovery onto a spare
# stopped by one and finished by the other, both ways) even if an earlier
# one failed, so one CI log shows them all; exits non-zero if any part
# failed.
# Environment: NBDRAID_SRC, NBDRAID_PLUGIN, NBDRAID_CLI; args: parts.
set -uo pipefail
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(fs md mdid degraded recovery)
echo "guest: $(uname -r), $(nproc) vCPU, $(free -m | awk '/Mem:/{print $2}') MiB"
[ -f "$NBDRAID_SRC/tests/vm/guest-main.sh" ] ||
    { echo "FAIL: the source tree $NBDRAID_SRC is not visible in the guest"; exit 1; }
failed=()
for p in "${parts[@]}"; do
    echo "==== $p: tests/vm/guest-$p.sh"
    start=$(cut -d' ' -f1 /proc/uptime)
    if bash "$NBDRAID_SRC/tests/vm/guest-$p.sh"; then
        r=passed
    else
        r="FAILED (exit $?)"
        failed+=("$p")
    fi
    end=$(cut -d' ' -f1 /proc/uptime)
    echo "==== $p: $r in $(echo "$end - $start" | bc) s"
done
[ ${#failed[@]} -eq 0 ] || { echo "FAILED parts: ${failed[*]}"; exit 1; }
echo "all parts passed: ${parts[*]}"
