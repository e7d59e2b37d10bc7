#!/usr/bin/env bash
# Build nbdraid with warnings as errors and run every test: unit,
# integration, style and the fuzz targets (tests/fuzz, 20 s each); then,
# side by side, the kernel tests in a VM (tests/vm), whose guest output is
# streamed (-V) so the CI log keeps it, and the sanitizer runs
# (tests/san.sh address: ASan and UBSan over the unit and integration
# tests; tests/san.sh thread: TSan over the concurrency tests), whose
# output is printed whole when they end.  The VM spends most of its time
# in emulation and the sanitizer runs most of theirs in their own builds
# and tests that wait: together they take little longer than the VM
# alone, and every one of them has its time limit for a loaded machine.
# Fails if any of them fails.  Installs missing packages first when run
# as root.  Arguments go to every ctest (e.g. -R NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps --vm
cmake -S . -B build -DNBDRAID_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
(cd build && ctest --output-on-failure --timeout 600 -j"$(nproc)" -LE vm "$@")

san_log=build/sanitizers.log
(
	rc=0
	bash tests/san.sh address "$@" || rc=1
	bash tests/san.sh thread "$@" || rc=1
	exit $rc
) >"$san_log" 2>&1 &
san=$!
trap 'kill $san 2>/dev/null || true' INT TERM

vm_rc=0
(cd build && ctest --output-on-failure --timeout 1600 -L vm -V "$@") ||
	vm_rc=$?
san_rc=0
wait $san || san_rc=$?
echo "==== the sanitizer runs (tests/san.sh address, thread): $san_log"
cat "$san_log"
[ $vm_rc = 0 ] || echo "FAIL: the VM tests (tests/vm)"
[ $san_rc = 0 ] || echo "FAIL: the sanitizer runs (tests/san.sh)"
[ $vm_rc = 0 ] && [ $san_rc = 0 ]
