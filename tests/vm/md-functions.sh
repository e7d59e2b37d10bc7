# shellcheck shell=bash
# md-functions.sh: what the guest scripts that drive Linux md share
# (guest-md.sh, guest-mdid.sh, guest-degraded.sh, guest-recovery.sh,
# tests/data/md/make.sh).
# Sourced in the VM, as root: loads the md and loop modules, keeps the loop
# devices it attaches in LOOPS, and stops /dev/md0 and detaches them at
# exit.

modprobe loop
for m in raid0 raid1 raid10 raid456; do modprobe "$m"; done

LOOPS=()
cleanup() {
    mdadm --stop /dev/md0 >/dev/null 2>&1 || true
    for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
    LOOPS=()
}
trap cleanup EXIT

attach_loops() { # files...: one loop device each, in LOOPS
    LOOPS=()
    for f in "$@"; do LOOPS+=("$(losetup -f --show "$f")"); done
}

# Run md's check on /dev/md0 to the end; print its mismatch_cnt.
md_check() {
    local sys=/sys/block/md0/md
    echo check > $sys/sync_action
    sleep 0.2
    while [ "$(cat $sys/sync_action)" != idle ]; do sleep 0.2; done
    cat $sys/mismatch_cnt
}

# One field of `mdadm --examine DEV` (a member; a loop device, since mdadm
# opens O_DIRECT, which the guest's tmpfs refuses), e.g. Events.
md_examine_field() { # field dev
    mdadm --examine "$2" | sed -n "s/^ *$1 : //p" | head -n 1
}

# One field of `mdadm --detail /dev/md0`, e.g. State.
md_detail_field() { # field
    mdadm --detail /dev/md0 | sed -n "s/^ *$1 : //p" | head -n 1
}
