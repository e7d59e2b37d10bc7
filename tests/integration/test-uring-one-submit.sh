#!/usr/bin/env bash
# One client request is one io_uring submission: a 1M read over RAID 0 with
# 64K chunks on 4 members is 16 chunk pieces, 4 per member and back to back
# on each, so 4 member reads (one vectored readv per member), and strace
# must show exactly one io_uring_enter per request, submitting all 4 and
# waiting for all 4 (16 would mean the pieces were not merged).
# Rings are created lazily on nbdkit's worker threads, never on the main
# thread before the fork.  Skipped (77) without the plugin, strace or
# ptrace.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=functions.sh
source "$(dirname "$0")/functions.sh"
requires_plugin
requires_ptrace

make_tmpdir nbdraid-uring
dir=$tmpdir
members=()
for i in 0 1 2 3; do
  truncate -s 8M "$dir/m$i.img"
  members+=("member=$dir/m$i.img")
done
sock=$dir/sock
nbdkit_wrapper=(strace -f -qq -e "trace=io_uring_setup,io_uring_enter"
                -o "$dir/trace")
start_nbdkit "$dir/nbdkit.pid" -U "$sock" "$NBDRAID_PLUGIN" \
  level=0 chunk=64K io=uring "${members[@]}"

# 20 reads of 1M, one after another, from one connection.
# (/usr/bin/python3: the python3 on PATH may lack Debian's nbd module.)
/usr/bin/python3 - "nbd+unix:///?socket=$sock" <<'PY'
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
buf = bytes(range(256)) * 4096
h.pwrite(buf, 0)
for i in range(20):
    want = buf if i % 8 == 0 else bytes(1 << 20)
    assert h.pread(1 << 20, (i % 8) << 20) == want
h.shutdown()
PY
main=$nbdkit_pid
stop_nbdkit || :

# Lines: "PID io_uring_enter(FD, TO_SUBMIT, MIN_COMPLETE, FLAGS, ...) = N"
reads=$(grep -cE 'io_uring_enter\([0-9]+, 4, 4,' "$dir/trace" || true)
partial=$(grep -E 'io_uring_enter\([0-9]+, [0-9]+,' "$dir/trace" |
          grep -vcE 'io_uring_enter\([0-9]+, (4, 4|[0-9]+, [0-9]+, [^)]*\) = -1 EINTR)' || true)
setups=$(grep -E 'io_uring_setup\(' "$dir/trace" | awk '{print $1}')
echo "io_uring_enter submitting and waiting for 4: $reads (want 21: 1 write + 20 reads)"
echo "other io_uring_enter calls: $partial"
echo "io_uring_setup on $(wc -w <<<"$setups") threads, none of them nbdkit's main thread ($main)"
fail=0
[ "$reads" -eq 21 ] || { echo "FAIL: want 21 single-submit requests"; fail=1; }
[ "$partial" -eq 0 ] || { echo "FAIL: requests took more than one io_uring_enter"; fail=1; }
[ -n "$setups" ] || { echo "FAIL: no ring was set up"; fail=1; }
for p in $setups; do
  [ "$p" != "$main" ] || { echo "FAIL: a ring was set up on nbdkit's main thread"; fail=1; }
done
[ $fail -eq 0 ] && echo PASS
exit $fail
