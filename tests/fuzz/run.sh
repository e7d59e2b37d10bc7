#!/usr/bin/env bash
# run.sh [TARGET|all] [LIBFUZZER-ARG...]: build the libFuzzer targets of
# tests/fuzz (every fuzz_<name>.c; CMake NBDRAID_FUZZ: clang, libFuzzer,
# ASan, UBSan over the whole core library) and fuzz TARGET (a name such as
# superblock, or all of them one after the other) for NBDRAID_FUZZ_SECONDS
# each (default 60) from a copy of tests/fuzz/corpus/<name>/ in a
# temporary directory: the source tree is never written.  Fails on any
# crash, leak, UBSan report, timeout or CHECK; then the temporary directory
# (log, crashing input) is kept and its path printed, with the command that
# replays the input.  Skips (77) without clang or its fuzzer runtime
# (Debian: clang, libclang-rt-14-dev).  tests/fuzz/fuzz_<name>.args, if
# there, holds the target's own libFuzzer arguments (-max_len ...).
#
#   bash tests/fuzz/run.sh                     every target, 60 s each
#   NBDRAID_FUZZ_SECONDS=3600 bash tests/fuzz/run.sh assembly -jobs=2
#
# NBDRAID_FUZZ_BUILD=DIR keeps the build there (the test suite's is
# build/fuzz-build: one build for every target); without it a temporary
# one.  NBDRAID_FUZZ_COVERAGE=1 adds llvm-cov's line and branch coverage of
# the core by the corpus the run ended with (not in CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
secs=${NBDRAID_FUZZ_SECONDS:-60}
[[ $secs =~ ^[0-9]+$ ]] || { echo "FAIL: NBDRAID_FUZZ_SECONDS=$secs"; exit 1; }
target=${1:-all}
[ $# -gt 0 ] && shift

cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "SKIP: $cc is not installed"; exit 77; }

tmp=$(mktemp -d /tmp/nbdraid-fuzz.XXXXXX)
keep=0
trap '[ $keep = 1 ] || rm -rf "$tmp"' EXIT

# A libFuzzer that links at all, or the runtime is missing: skip.
echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' \
	>"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" \
	-o "$tmp/probe" 2>"$tmp/probe.err"
then
	sed 's/^/  /' "$tmp/probe.err" | head -5
	echo "SKIP: $cc cannot link libFuzzer with ASan/UBSan" \
	     "(Debian: apt-get install libclang-rt-14-dev)"
	exit 77
fi

if [ "$target" = all ]; then
	targets=()
	for f in tests/fuzz/fuzz_*.c; do
		n=${f##*/fuzz_}
		targets+=("${n%.c}")
	done
else
	[ -f "tests/fuzz/fuzz_$target.c" ] ||
		{ echo "FAIL: no target tests/fuzz/fuzz_$target.c"; exit 1; }
	targets=("$target")
fi

# Configure and build (one at a time in a shared build directory).
bdir=${NBDRAID_FUZZ_BUILD:-$tmp/build}
mkdir -p "$bdir"
exec 9>"$bdir/.lock"
flock 9
if [ ! -f "$bdir/CMakeCache.txt" ]; then
	CC=$cc cmake -S "$src" -B "$bdir" -DNBDRAID_FUZZ=ON \
		-DNBDRAID_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>"$tmp/cmake.log" 2>&1 ||
		{ cat "$tmp/cmake.log"; echo "FAIL: cmake (fuzz build)"; exit 1; }
fi
if ! cmake --build "$bdir" -j"$(nproc)" --target \
	"${targets[@]/#/fuzz_}" >"$tmp/build.log" 2>&1
then
	tail -40 "$tmp/build.log"
	echo "FAIL: building ${targets[*]/#/fuzz_}"
	exit 1
fi
flock -u 9

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
fail=0
for t in "${targets[@]}"; do
	bin=$bdir/tests/fuzz/fuzz_$t
	dir=$tmp/$t
	mkdir -p "$dir/corpus" "$dir/artifacts"
	[ -d "tests/fuzz/corpus/$t" ] && cp -r "tests/fuzz/corpus/$t/." "$dir/corpus/"
	args=()
	if [ -f "tests/fuzz/fuzz_$t.args" ]; then
		read -r -a args <"tests/fuzz/fuzz_$t.args"
	fi
	# One process on one core (no -jobs, -workers unless asked).
	# libFuzzer's own error exit code is 77, which ctest would call a skip.
	set +e
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
		-artifact_prefix="$dir/artifacts/" "${args[@]}" "$@" \
		"$dir/corpus" >"$dir/fuzz.log" 2>&1
	rc=$?
	set -e
	last=$(grep -E '^#[0-9]+' "$dir/fuzz.log" | tail -1 || :)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log")
	if [ $rc != 0 ]; then
		keep=1
		fail=1
		tail -60 "$dir/fuzz.log"
		echo "FAIL: fuzz_$t exited $rc after: $last"
		echo "  kept: $dir (fuzz.log, artifacts/)"
		for a in "$dir"/artifacts/*; do
			[ -e "$a" ] && echo "  replay: $bin $a"
		done
		continue
	fi
	echo "PASS: fuzz_$t: ${runs:-?} runs in $secs s;" \
	     "$(grep -o 'cov: [0-9]*' <<<"$last" | cut -d' ' -f2) edges" \
	     "covered; $(grep -o 'ft: [0-9]*' <<<"$last" | cut -d' ' -f2)" \
	     "features; corpus $(grep -o 'corp: [0-9/]*[KM]*b' <<<"$last" |
		cut -d' ' -f2)"
done
[ $fail = 0 ] || exit 1

if [ "${NBDRAID_FUZZ_COVERAGE:-0}" = 1 ]; then
	command -v llvm-cov >/dev/null ||
		{ echo "no llvm-cov (Debian: llvm): no coverage report"; exit 0; }
	CC=$cc cmake -S "$src" -B "$tmp/cov" -DNBDRAID_FUZZ=ON \
		-DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
		-DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >/dev/null
	cmake --build "$tmp/cov" -j"$(nproc)" \
		--target "${targets[@]/#/fuzz_}" >/dev/null
	for t in "${targets[@]}"; do
		LLVM_PROFILE_FILE="$tmp/$t.profraw" \
			"$tmp/cov/tests/fuzz/fuzz_$t" -runs=0 "$tmp/$t/corpus" \
			>/dev/null 2>&1
		llvm-profdata merge -o "$tmp/$t.profdata" "$tmp/$t.profraw"
		echo "== fuzz_$t"
		llvm-cov report "$tmp/cov/tests/fuzz/fuzz_$t" \
			-instr-profile="$tmp/$t.profdata" src
	done
fi
