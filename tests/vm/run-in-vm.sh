#!/bin/bash
# Vendored from the project's shared VM tooling, so that a fresh clone runs
# the VM tests on its own; keep it in step with that copy by hand.
# run-in-vm.sh — boot the Debian kernel under qemu with the host root shared
# read-only over 9p (plus a tmpfs overlay so the guest root is writable),
# run a guest script as root inside, print its output, exit with its status.
#
# Usage: run-in-vm.sh [--] GUEST_SCRIPT [ARGS...]
#
# The guest sees the host filesystem (read-only lower layer; writes go to a
# RAM overlay and are lost), so host-installed nbdkit, nbd-client, mdadm,
# fio and anything built under the current directory are usable in the
# guest at the same paths. The guest's /tmp and /run are fresh tmpfs.
# The guest has NO network device at all.
#
# Environment knobs (all optional):
#   VM_ACCEL     auto|tcg|kvm   (auto: kvm only if /dev/kvm works AND the
#                 host cpu has vmx/svm; otherwise tcg)
#   VM_CPUS      guest vCPUs (default: 2)
#   VM_MEM       guest memory (default: 2G)
#   VM_TIMEOUT   seconds before the VM is killed (default: 600)
#   VM_KVER      kernel version under /lib/modules + /boot (default: newest
#                 one that has /boot/vmlinuz-VER)
#   VM_CACHE     where the generated initramfs is cached
#                 (default: /tmp/run-in-vm-cache)
#   VM_SHARE     a host directory mounted READ-WRITE in the guest at the
#                 same path (for results); default: none
#   VM_PASS_ENV  space-separated names of env vars to pass into the guest
#   VM_CPU_MODEL qemu -cpu model (default: max for tcg, host for kvm)
#   VM_MACHINE   qemu -M machine (default: q35)
#   VM_PVH       1 (default): boot an extracted, cached ELF vmlinux via PVH
#                 (much faster under TCG); 0: boot /boot/vmlinuz-* as is
#   VM_KERNEL    explicit kernel image to boot (disables VM_PVH)
#   VM_FAST_BOOT 1 (default): add boot-time-saving kernel parameters; 0: don't
#   VM_APPEND    extra kernel command line parameters
#   VM_KEEP      1: keep the per-run dir (console.log, stage2) for debugging
#   VM_DEBUG     1: show the kernel console (serial) on stderr too
#   VM_OVERLAY   1 (default): writable tmpfs overlay over the 9p root;
#                 0: plain read-only 9p root + tmpfs on /tmp /run /var/tmp /root
#
# Exit status: the guest script's, or 124 on timeout, or 125 when the VM
# died without reporting one (kernel panic, boot failure, ...).
set -euo pipefail

die() { echo "run-in-vm: $*" >&2; exit 125; }

[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || { sed -n '4,34p' "$0" >&2; exit 2; }
SCRIPT=$1; shift
[ -f "$SCRIPT" ] || die "no such script: $SCRIPT"

command -v qemu-system-x86_64 >/dev/null || die "need qemu-system-x86 (apt-get install qemu-system-x86)"
[ -x /bin/busybox ] || die "need busybox-static (apt-get install busybox-static)"
command -v modprobe >/dev/null || die "need kmod"

if [ -z "${VM_KVER:-}" ]; then
    for v in $(ls /lib/modules 2>/dev/null | sort -V -r); do
        [ -f "/boot/vmlinuz-$v" ] && { VM_KVER=$v; break; }
    done
fi
[ -n "${VM_KVER:-}" ] || die "no kernel: apt-get install linux-image-amd64"
KERNEL=${VM_KERNEL:-/boot/vmlinuz-$VM_KVER}
[ -r "$KERNEL" ] || die "cannot read $KERNEL"

CACHE=${VM_CACHE:-/tmp/run-in-vm-cache}
mkdir -p "$CACHE"
INITRD=$CACHE/initramfs-$VM_KVER.cpio

# ---------------------------------------------------------------- initramfs
build_initramfs() {
    local t; t=$(mktemp -d "$CACHE/build.XXXXXX")
    mkdir -p "$t"/{bin,dev,proc,sys,lower,rw,newroot,mods}
    cp /bin/busybox "$t/bin/busybox"
    for a in sh mount umount insmod mkdir poweroff chroot sleep cat echo sync \
             ln ls dmesg hostname stty; do
        ln -s busybox "$t/bin/$a"
    done
    # Only what is needed to reach the 9p root; everything else (nbd, md,
    # loop, ...) is loaded later with the host's modprobe + modules.dep,
    # which the guest sees through the shared root.
    modprobe --show-depends -S "$VM_KVER" -a \
        virtio_pci virtio_mmio 9pnet_virtio 9p overlay virtio_console \
        | awk '$1=="insmod" && !seen[$2]++ {print $2}' > "$t/order.full"
    : > "$t/modules.order"
    while read -r m; do
        cp "$m" "$t/mods/"
        basename "$m" >> "$t/modules.order"
    done < "$t/order.full"
    rm "$t/order.full"
    cat > "$t/init" <<'EOF'
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do
    case "$m" in *.ko.xz|*.ko.zst|*.ko.gz) echo "init: compressed module $m unsupported";; esac
    insmod "/mods/$m" 2>/dev/null || echo "init: insmod $m failed"
done < /modules.order
overlay=1
for w in $(cat /proc/cmdline); do
    case "$w" in vm.overlay=0) overlay=0;; esac
done
msize=262144
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=$msize root /lower; then
    echo "init: cannot mount 9p root"; poweroff -f
fi
if [ $overlay = 1 ]; then
    mount -t tmpfs -o mode=755 rw /rw
    mkdir -p /rw/upper /rw/work
    mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot \
        || { echo "init: overlay failed, using read-only root"; overlay=0; }
fi
if [ $overlay = 0 ]; then
    mount --bind /lower /newroot
    for d in /var/tmp /root /var/lib /var/log /var/cache; do
        [ -d /newroot$d ] && mount -t tmpfs -o mode=755 tmpfs /newroot$d
    done
fi
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm 2>/dev/null
ln -sf /proc/self/fd /newroot/dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mount -t tmpfs -o mode=755 tmpfs /newroot/run
mkdir -p /newroot/run/vm
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=$msize vmio /newroot/run/vm \
    || { echo "init: cannot mount vmio share"; poweroff -f; }
[ -e /sys/kernel/debug ] && mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null
hostname vm
out=/dev/hvc0; [ -e $out ] || out=/dev/console
stty -F $out -onlcr 2>/dev/null
chroot /newroot /bin/sh /run/vm/stage2 <$out >$out 2>&1
echo $? > /newroot/run/vm/exit-status
sync
umount /newroot/run/vm 2>/dev/null
poweroff -f
EOF
    chmod +x "$t/init"
    (cd "$t" && find . | cpio -o -H newc --quiet) > "$t.cpio"
    mv "$t.cpio" "$INITRD"
    rm -rf "$t"
}
if [ ! -s "$INITRD" ] || [ "$INITRD" -ot "$0" ]; then
    build_initramfs
fi

# Booting the uncompressed ELF vmlinux through its PVH entry point skips
# SeaBIOS's real-mode kernel loader and the in-guest xz decompressor, which
# under TCG cost ~3-4 s per boot. Extracted once and cached.
extract_vmlinux() {  # bzImage -> ELF vmlinux (xz, zstd or gzip payload)
    local src=$1 dst=$2 off
    for pair in 'fd377a585a00:xz -dc --single-stream' '28b52ffd:zstd -dcq' '1f8b0800:gzip -dcq'; do
        off=$(python3 - "$src" "${pair%%:*}" <<'PY'
import sys
d=open(sys.argv[1],'rb').read(); print(d.find(bytes.fromhex(sys.argv[2])))
PY
        ) || return 1
        [ "$off" -ge 0 ] || continue
        tail -c +$((off + 1)) "$src" | ${pair#*:} > "$dst.tmp" 2>/dev/null || true
        if [ "$(head -c 4 "$dst.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
            mv "$dst.tmp" "$dst"; return 0
        fi
    done
    rm -f "$dst.tmp"; return 1
}
if [ "${VM_PVH:-1}" = 1 ] && [ -z "${VM_KERNEL:-}" ] && command -v python3 >/dev/null \
   && grep -q '^CONFIG_PVH=y' "/boot/config-$VM_KVER" 2>/dev/null; then
    VMLINUX=$CACHE/vmlinux-$VM_KVER
    if [ ! -s "$VMLINUX" ] || [ "$VMLINUX" -ot "$KERNEL" ]; then
        extract_vmlinux "$KERNEL" "$VMLINUX" || echo "run-in-vm: vmlinux extraction failed; booting bzImage" >&2
    fi
    [ -s "$VMLINUX" ] && KERNEL=$VMLINUX
fi

# ------------------------------------------------------------- per-run dir
RUN=$(mktemp -d /tmp/run-in-vm.XXXXXX)
QPID=
cleanup() {
    [ -n "$QPID" ] && kill "$QPID" 2>/dev/null || true
    if [ "${VM_KEEP:-0}" = 1 ]; then echo "run-in-vm: kept $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$SCRIPT" "$RUN/script"
chmod +x "$RUN/script"
{
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    echo 'export HOME=/root TERM=dumb LANG=C.UTF-8'
    for v in ${VM_PASS_ENV:-}; do
        [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
    done
    if [ -n "${VM_SHARE:-}" ]; then
        printf 'mkdir -p %q 2>/dev/null; mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 vmshare %q || echo "run-in-vm: cannot mount VM_SHARE" >&2\n' \
            "$VM_SHARE" "$VM_SHARE"
    fi
    printf 'cd %q 2>/dev/null || cd /\n' "$PWD"
    printf 'exec /run/vm/script'
    for a in "$@"; do printf ' %q' "$a"; done
    echo
} > "$RUN/stage2"

# ------------------------------------------------------------------ accel
ACCEL=${VM_ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
    ACCEL=tcg
    if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; fi
fi
case "$ACCEL" in
    kvm) ACCEL_ARGS=(-accel kvm -cpu "${VM_CPU_MODEL:-host}") ;;
    tcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu "${VM_CPU_MODEL:-max}") ;;
    *) die "VM_ACCEL must be auto, tcg or kvm" ;;
esac

MACHINE=${VM_MACHINE:-q35}
case "$MACHINE" in microvm*) VB=device ;; *) VB=pci ;; esac
FS_ARGS=(
    -fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
    -device virtio-9p-$VB,fsdev=root,mount_tag=root
    -fsdev "local,id=vmio,path=$RUN,security_model=none"
    -device virtio-9p-$VB,fsdev=vmio,mount_tag=vmio
)
if [ -n "${VM_SHARE:-}" ]; then
    [ -d "$VM_SHARE" ] || die "VM_SHARE is not a directory: $VM_SHARE"
    FS_ARGS+=(-fsdev "local,id=vmshare,path=$VM_SHARE,security_model=none"
              -device virtio-9p-$VB,fsdev=vmshare,mount_tag=vmshare)
fi

APPEND="console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off"
APPEND+=" i8042.noaux i8042.nokbd i8042.nopnp 8250.nr_uarts=1 vm.overlay=${VM_OVERLAY:-1}"
# Boot-time savers under TCG (~0.5-1 s): skip crypto self-tests, the delay
# loop calibration and timer/TSC checks.
[ "${VM_FAST_BOOT:-1}" = 1 ] && APPEND+=" cryptomgr.notests no_timer_check tsc=reliable audit=0 nowatchdog lpj=4000000"
APPEND+=" ${VM_APPEND:-}"

if [ "${VM_DEBUG:-0}" = 1 ]; then SERIAL=(-serial file:/dev/stderr); APPEND=${APPEND/ quiet loglevel=3/}
else SERIAL=(-serial "file:$RUN/console.log"); fi

set +e
timeout --foreground -k 10 "${VM_TIMEOUT:-600}" \
  qemu-system-x86_64 \
    "${ACCEL_ARGS[@]}" -M "$MACHINE" -smp "${VM_CPUS:-2}" -m "${VM_MEM:-2G}" \
    -nodefaults -no-user-config -display none -vga none -nic none -no-reboot \
    "${SERIAL[@]}" -monitor none \
    -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
    "${FS_ARGS[@]}" \
    -device virtio-serial-$VB -chardev stdio,id=out,signal=off -device virtconsole,chardev=out \
    </dev/null
qrc=$?
set -e
if [ -s "$RUN/exit-status" ]; then
    exit "$(cat "$RUN/exit-status")"
fi
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
    echo "run-in-vm: timed out after ${VM_TIMEOUT:-600}s" >&2; exit 124
fi
echo "run-in-vm: VM ended (qemu rc=$qrc) without an exit status; console tail:" >&2
tail -n 30 "$RUN/console.log" >&2 2>/dev/null || true
exit 125
