#!/usr/bin/env bash
# Build tests/fuzz/fuzz_superblock.c with clang's libFuzzer, ASan and UBSan
# (src/superblock.c compiled straight in: the CMake library is gcc's) and
# fuzz for NBDRAID_FUZZ_SECONDS (default 60) from a copy of
# tests/fuzz/corpus/superblock in a temporary directory: the source tree
# is never written.  Fails on any crash, leak, UBSan report or CHECK;
# then the temporary directory (binary, crashing input) is kept and its
# path printed.  Skips (77) without clang or its fuzzer runtime (Debian:
# clang, libclang-rt-14-dev).  Extra arguments go to libFuzzer:
#   NBDRAID_FUZZ_SECONDS=600 tests/fuzz/run.sh -use_value_profile=1
# NBDRAID_FUZZ_COVERAGE=1 adds llvm-cov's line and branch coverage of
# src/superblock.c by the corpus the run ended with (not in CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${NBDRAID_FUZZ_SECONDS:-60}
[[ $secs =~ ^[0-9]+$ ]] || { echo "FAIL: NBDRAID_FUZZ_SECONDS=$secs"; exit 1; }

cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "SKIP: $cc is not installed"; exit 77; }

tmp=$(mktemp -d /tmp/nbdraid-fuzz.XXXXXX)
keep=0
trap '[ $keep = 1 ] || rm -rf "$tmp"' EXIT

san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined
     -fno-omit-frame-pointer)
# A libFuzzer that links at all, or the runtime is missing: skip.
echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' \
	>"$tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer "${san[@]}" "$tmp/probe.c" -o "$tmp/probe" \
	2>"$tmp/probe.err"
then
	sed 's/^/  /' "$tmp/probe.err" | head -5
	echo "SKIP: $cc cannot link libFuzzer with ASan/UBSan" \
	     "(Debian: apt-get install libclang-rt-14-dev)"
	exit 77
fi

# Coverage is counted in the decoders only (fuzzer-no-link), not in the
# target's own checks: "cov: N" is then edges of src/superblock.c.
cflags=("${san[@]}" -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc
	-Wall -Wextra -Wshadow -Wvla -Werror)
"$cc" "${cflags[@]}" -fsanitize=fuzzer-no-link -c src/superblock.c \
	-o "$tmp/superblock.o"
"$cc" "${cflags[@]}" -c tests/fuzz/fuzz_superblock.c -o "$tmp/fuzz.o"
"$cc" -fsanitize=fuzzer "${san[@]}" "$tmp/superblock.o" "$tmp/fuzz.o" \
	-o "$tmp/fuzz_superblock"

mkdir "$tmp/corpus" "$tmp/artifacts"
cp tests/fuzz/corpus/superblock/* "$tmp/corpus/"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One process on one core (no -jobs, -workers).  libFuzzer's own error exit
# code is 77, which ctest would call a skip.
set +e
"$tmp/fuzz_superblock" -max_total_time="$secs" -max_len=4160 -timeout=10 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$tmp/artifacts/" "$@" "$tmp/corpus" \
	>"$tmp/fuzz.log" 2>&1
rc=$?
set -e

last=$(grep -E '^#[0-9]+' "$tmp/fuzz.log" | tail -1)
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/fuzz.log")
if [ $rc != 0 ]; then
	keep=1
	tail -60 "$tmp/fuzz.log"
	echo "FAIL: the fuzzer exited $rc after: $last"
	echo "  kept: $tmp (fuzz.log, artifacts/, the binary)"
	for a in "$tmp"/artifacts/*; do
		[ -e "$a" ] && echo "  replay: $tmp/fuzz_superblock $a"
	done
	exit 1
fi
edges=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' \
	"$tmp/fuzz.log")
echo "$last"
echo "PASS: fuzz_superblock: ${runs:-?} runs in $secs s;" \
     "$(grep -o 'cov: [0-9]*' <<<"$last" | cut -d' ' -f2) edges of" \
     "src/superblock.c covered (of ${edges:-?} instrumented, the" \
     "sanitizers' report branches among them);" \
     "$(grep -o 'ft: [0-9]*' <<<"$last" | cut -d' ' -f2) features;" \
     "corpus $(grep -o 'corp: [0-9/]*[KM]*b' <<<"$last" | cut -d' ' -f2)"

if [ "${NBDRAID_FUZZ_COVERAGE:-0}" = 1 ]; then
	command -v llvm-cov >/dev/null ||
		{ echo "no llvm-cov (Debian: llvm): no coverage report"; exit 0; }
	"$cc" -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping \
		-g -O0 -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc \
		src/superblock.c tests/fuzz/fuzz_superblock.c -o "$tmp/cov"
	LLVM_PROFILE_FILE="$tmp/cov.profraw" "$tmp/cov" -runs=0 \
		"$tmp/corpus" >/dev/null 2>&1
	llvm-profdata merge -o "$tmp/cov.profdata" "$tmp/cov.profraw"
	llvm-cov report "$tmp/cov" -instr-profile="$tmp/cov.profdata" \
		src/superblock.c
fi
