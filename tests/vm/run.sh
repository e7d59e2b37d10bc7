#!/usr/bin/env bash
# tests/vm/run.sh [PART...]: the tests that need a Linux kernel with the nbd
# and md drivers, which the host has not: boots Debian's kernel under qemu
# (tests/vm/run-in-vm.sh; KVM when it works, else emulation) and runs
# tests/vm/guest-main.sh there.  Parts: fs (nbd-client, ext4, fstrim, the
# kernel's requests), md (md's layouts in raw mode, both directions) and
# mdid (md superblocks: nbdraid create -> md assemble, mdadm --create ->
# nbdraid from the members alone -> md again) and degraded (a member failed
# under nbdraid -> md assembles degraded; mdadm --fail -> nbdraid serves
# degraded -> md again) and recovery (a rebuild onto a spare stopped by
# nbdraid -> md resumes and finishes it; stopped by md -> nbdraid resumes
# and finishes it -> md again); default all five.
# The guest's output streams to stdout, so the CI log keeps it.
#
# Environment: NBDRAID_PLUGIN, NBDRAID_CLI (default: build/ under the
# source tree), VM_TIMEOUT (default 1500 s: a loaded machine runs the VM twice as slowly).  Exit 77 (skipped) only when
# not root or a package is missing; .ci/deps --vm installs them.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
export NBDRAID_SRC=$SRC
export NBDRAID_PLUGIN=${NBDRAID_PLUGIN:-$SRC/build/plugin/nbdkit-raid-plugin.so}
export NBDRAID_CLI=${NBDRAID_CLI:-$SRC/build/src/nbdraid}

# shellcheck source-path=SCRIPTDIR source=../integration/functions.sh
source "$SRC/tests/integration/functions.sh"
requires_root "tests/vm: loop devices and md in the guest"
for c in qemu-system-x86_64 mdadm nbd-client mkfs.ext4 nbdkit nbdcopy; do
    command -v "$c" >/dev/null || skip "tests/vm: no $c: run bash .ci/deps --vm"
done
[ -x /bin/busybox ] || skip "tests/vm: no busybox: run bash .ci/deps --vm"
ls /boot/vmlinuz-* >/dev/null 2>&1 ||
    skip "tests/vm: no kernel in /boot: run bash .ci/deps --vm"
for f in "$NBDRAID_PLUGIN" "$NBDRAID_CLI"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "tests/vm: $f not built" >&2; exit 1; }
    # The guest sees the host's root, but its /tmp and /run are its own:
    # the source tree (with the build in it) is shared into the guest.
    case "$(realpath "$f")" in
        "$SRC"/*) ;;
        *) echo "tests/vm: $f is outside the source tree $SRC, which is all the guest is sure to see" >&2
           exit 1 ;;
    esac
done

accel=${VM_ACCEL:-auto}
if [ "$accel" = auto ]; then # as run-in-vm.sh decides
    accel=tcg
    [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && accel=kvm
fi
echo "tests/vm: booting $(ls /boot/vmlinuz-* | sort -V | tail -1) under $accel, parts: ${*:-fs md mdid degraded recovery}"
VM_SHARE=$SRC VM_PASS_ENV="NBDRAID_SRC NBDRAID_PLUGIN NBDRAID_CLI" \
VM_MEM=${VM_MEM:-3G} VM_TIMEOUT=${VM_TIMEOUT:-1500} \
    exec bash "$SRC/tests/vm/run-in-vm.sh" "$SRC/tests/vm/guest-main.sh" "$@"
