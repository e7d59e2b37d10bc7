#!/usr/bin/env bash
# The C sources follow .clang-format: clang-format --dry-run -Werror over
# every .c and .h the project writes (src, include, plugin, tests, bench).
# Formatting differs between clang-format releases, so the check runs with
# the one .clang-format was written for (Debian 12's, 14); another major
# version skips (77) rather than fail on its own opinions.
set -euo pipefail
cd "$(dirname "$0")/.."
want=14
command -v clang-format >/dev/null || { echo "FAIL: clang-format is not installed (.ci/deps installs it)"; exit 1; }
have=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$have" != "$want" ]; then
    echo "SKIP: clang-format $have, .clang-format is written for $want"
    exit 77
fi
mapfile -t files < <(find src include plugin tests bench -name '*.[ch]' |
                     sort)
clang-format --dry-run -Werror "${files[@]}"
echo "PASS: ${#files[@]} files formatted as .clang-format says"
