#!/usr/bin/env bash
# san.sh address|thread [CTEST-ARG...]: build nbdraid with the sanitizers in
# build-san-MODE and run the tests again under them: `address` (ASan,
# UBSan, LeakSanitizer) the unit and integration tests, `thread` (TSan) the
# concurrency tests (label concurrency, tests/CMakeLists.txt).  Every
# process writes its reports to build-san-MODE/san-logs/ (nbdkit too: the
# integration tests start it with the runtime preloaded); any report there
# after the run fails it, printed whole.  tests/run.sh runs both.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: tests/san.sh address|thread [ctest args]}
shift
case $mode in
address) labels='unit|integration' ;;
thread) labels='concurrency' ;;
*) echo "san.sh: mode $mode: address or thread" >&2; exit 2 ;;
esac
bdir=build-san-$mode
cmake -S . -B "$bdir" -DNBDRAID_WERROR=ON -DNBDRAID_SANITIZE="$mode" \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$bdir" -j"$(nproc)" >/dev/null
rm -rf "$bdir/san-logs"
mkdir -p "$bdir/san-logs"
rc=0
(cd "$bdir" && ctest --output-on-failure --timeout 900 -L "$labels" "$@") ||
	rc=$?
reports=$(find "$bdir/san-logs" -type f -size +0 | sort)
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "==== $f"
		head -80 "$f"
	done
	echo "FAIL: sanitizer ($mode) reports: $(wc -l <<<"$reports")"
	exit 1
fi
[ $rc = 0 ] || exit $rc
echo "PASS: sanitizer ($mode): no reports"
