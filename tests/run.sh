#!/usr/bin/env bash
# Build nbdraid with warnings as errors and run every test (unit and
# integration).  Installs missing build packages first when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps
cmake -S . -B build -DNBDRAID_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure --timeout 600 "$@"
