#!/usr/bin/env bash
# Build nbdraid with warnings as errors and run every test: unit,
# integration, then the kernel tests in a VM (tests/vm), whose guest output
# is streamed (-V) so the CI log keeps it.  Installs missing packages first
# when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps --vm
cmake -S . -B build -DNBDRAID_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure --timeout 600 -LE vm "$@"
ctest --output-on-failure --timeout 1200 -L vm -V "$@"
